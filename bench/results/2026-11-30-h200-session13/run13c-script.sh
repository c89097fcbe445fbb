# run13c: PIPE 10 with border loads out of line and column-count first windows: bench (PIPE 6 / 10 / 10+UNROLL 3), quick test, ncu summary
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/t/build.log 2>&1 || { tail -30 $R/t/build.log; exit 1; }
B=build-gpu/bench/ndf_bench
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
bj env NDF_RANK_TILE2_PIPE=10 timeout 120 $B --only median_f32_1024x1024_s31 --reps 10
for i in 1 2; do
  bj env NDF_RANK_TILE2_PIPE=6 timeout 60 $B --only median_f32_1024x1024_s31 --no-check --reps 300
  bj env NDF_RANK_TILE2_PIPE=10 timeout 60 $B --only median_f32_1024x1024_s31 --no-check --reps 300
  bj env NDF_RANK_TILE2_PIPE=10 NDF_RANK_TILE2_UNROLL=3 timeout 60 $B --only median_f32_1024x1024_s31 --no-check --reps 300
done
el bench
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys,re
tag=''
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    if d['name'].startswith('##'):
        tag=' '.join(re.findall(r'NDF_RANK_\w+=\d+', d['name'])) or 'def'; continue
    print('%-44s %-32s %9s %s'%(tag, d['name'][:32], d.get('warm_ms'), d.get('check')))
PY
T=build-gpu/tests
timeout 200 env NDF_TEST_CASES=6 NDF_TEST_TILE2_ONLY=10 NDF_TEST_FILTER=test_gpu_rank_tile2_pipe $T/test_gpu_rank > $R/t/t-p10.txt 2>&1; echo "rc=$?" >> $R/t/t-p10.txt
grep -E '^\[  (PASSED|FAILED)|^rc=|mismatch|differ' $R/t/t-p10.txt | head -5
for U in 1 3; do
  env NDF_RANK_TILE2_PIPE=10 NDF_RANK_TILE2_UNROLL=$U timeout 120 ncu --clock-control none -k ndf_rank_tile2 -c 1 --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats --section InstructionStats --section SourceCounters -o $R/p10u$U $B --only median_f32_1024x1024_s31 --no-check --reps 1 > /dev/null 2>&1
  ncu -i $R/p10u$U.ncu-rep --page source --csv --print-source sass > $R/p10u$U-source.csv 2>&1
  ncu -i $R/p10u$U.ncu-rep --page details --print-details all > $R/p10u$U-details.txt 2>&1; rm -f $R/p10u$U.ncu-rep
done
grep -E "Duration|Issued Warp Per|Active Warps Per Scheduler|Warp Cycles Per Issued|Executed Instructions  |Stall (No Instruction|Wait|Short|Long|Math|MIO|Not Selected)" $R/p10u*-details.txt
el done
cd $OUT && tar czf r13c.tgz r && rm -rf r
