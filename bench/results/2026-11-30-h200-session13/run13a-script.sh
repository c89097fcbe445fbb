# run13a: rank_tile2 PIPE 10 (pivots, 8 blocks per SM) against PIPE 6: bench, tests, memcheck, racecheck, Nsight
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/t/build.log 2>&1 || { tail -30 $R/t/build.log; exit 1; }
el built
B=build-gpu/bench/ndf_bench
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
bj env NDF_RANK_TILE2_PIPE=10 timeout 120 $B --only median_f32_1024x1024_s31 --reps 20
bj timeout 60 $B --only median_f32_1024x1024_s3 --no-check
for i in 1 2; do
  bj env NDF_RANK_TILE2_PIPE=6 timeout 60 $B --only median_f32_1024x1024_s31 --no-check --reps 300
  bj env NDF_RANK_TILE2_PIPE=10 timeout 60 $B --only median_f32_1024x1024_s31 --no-check --reps 300
done
bj timeout 60 $B --only median_f32_1024x1024_s3 --no-check
el bench
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys,re
tag=''
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    if d['name'].startswith('##'):
        m=re.search(r'PIPE=(\d+)', d['name']); tag=('P'+m.group(1)) if m else 'def'; continue
    print('%-4s %-36s %9s %s'%(tag, d['name'][:36], d.get('warm_ms'), d.get('check')))
PY
T=build-gpu/tests
run() { out=$1; lim=$2; shift 2; ( timeout $lim "$@" > $R/t/$out.txt 2>&1; echo "rc=$?" >> $R/t/$out.txt ) & }
run t-p10 240 env NDF_TEST_CASES=6 NDF_TEST_TILE2_ONLY=10 NDF_TEST_FILTER=test_gpu_rank_tile2_pipe $T/test_gpu_rank
run t-rank 240 env NDF_TEST_CASES=2 $T/test_gpu_rank
run mc-p10 240 env NDF_TEST_CASES=1 NDF_TEST_SEED=5 NDF_TEST_TILE2_ONLY=10 NDF_TEST_FILTER=test_gpu_rank_tile2_pipe compute-sanitizer --tool memcheck $T/test_gpu_rank
run rc-p10 240 env NDF_TEST_CASES=1 NDF_TEST_SEED=6 NDF_TEST_TILE2_ONLY=10 NDF_TEST_FILTER=test_gpu_rank_tile2_pipe compute-sanitizer --tool racecheck $T/test_gpu_rank
wait
el tests
for f in $R/t/t-*.txt $R/t/mc-*.txt $R/t/rc-*.txt; do echo "== $(basename $f) $(grep -cE '^\[       OK' $f) ok; $(grep -E '^\[  (PASSED|FAILED)|ERROR SUMMARY|RACECHECK SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|mismatch|differ|expected|seed|rror" $f | grep -v "ERROR SUMMARY" | head -4; done | tee $R/summary.txt
for P in 6 10; do
  env NDF_RANK_TILE2_PIPE=$P timeout 120 ncu --clock-control none -k ndf_rank_tile2 -c 1 --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats $B --only median_f32_1024x1024_s31 --no-check --reps 1 > $R/ncu-p$P.txt 2>&1
done
grep -E "Duration|Registers Per|Shared Memory Config|Dynamic Shared|Achieved Occupancy|Theoretical Occupancy|Block Limit|Issued Warp Per|No Eligible|Active Warps Per|Warp Cycles Per Issued|Waves Per SM|Grid Size" $R/ncu-p*.txt > $R/ncu-summary.txt
el ncu
cd $OUT && tar czf r13a.tgz r && rm -rf r
