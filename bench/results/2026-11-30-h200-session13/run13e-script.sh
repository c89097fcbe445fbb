# run13e: PIPE 10 (walk 8 ranks at a time; the default where it applies): bench A/B against PIPE 6 over shapes, all median workloads, GPU tests, memcheck, racecheck, ncu summary
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/t/build.log 2>&1 || { tail -30 $R/t/build.log; exit 1; }
el built
B=build-gpu/bench/ndf_bench
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
bj timeout 60 $B --only median_f32_1024x1024_s3 --no-check --reps 300
bj timeout 120 $B --only median_f32_1024x1024_s31 --reps 20
for i in 1 2; do
  bj env NDF_RANK_TILE2_PIPE=6 timeout 60 $B --only median_f32_1024x1024_s31 --no-check --reps 300
  bj timeout 60 $B --only median_f32_1024x1024_s31 --no-check --reps 300
done
bj timeout 60 $B --op median_filter --dtype float32 --shape 1024x1024 --size 31 --reps 20
for sh in 2048x2048 512x512 4x1024x1024; do
  bd=0; [ $sh = 4x1024x1024 ] && bd=1
  bj env NDF_RANK_TILE2_PIPE=6 timeout 60 $B --op median_filter --dtype float32 --shape $sh --size 31 --batch-dims $bd --no-check --reps 100
  bj env NDF_RANK_TILE2_PIPE=10 timeout 60 $B --op median_filter --dtype float32 --shape $sh --size 31 --batch-dims $bd --no-check --reps 100
done
for sz in 33 25 21; do
  bj env NDF_RANK_TILE2_PIPE=6 timeout 60 $B --op median_filter --dtype float32 --shape 1024x1024 --size $sz --no-check --reps 100
  bj env NDF_RANK_TILE2_PIPE=10 timeout 60 $B --op median_filter --dtype float32 --shape 1024x1024 --size $sz --no-check --reps 100
done
bj env NDF_RANK_TILE2_PIPE=10 NDF_RANK_TILE_S=40 timeout 60 $B --op median_filter --dtype float32 --shape 1024x1024 --size 25 --no-check --reps 100
bj env NDF_RANK_TILE2_PIPE=10 NDF_RANK_TILE_S=44 timeout 60 $B --op median_filter --dtype float32 --shape 1024x1024 --size 21 --no-check --reps 100
bj env NDF_RANK_TILE2_PIPE=10 NDF_RANK_TILE_S=44 timeout 60 $B --op median_filter --dtype float32 --shape 1024x1024 --size 21 --reps 5
bj timeout 100 $B --only median --no-check --reps 100
bj timeout 60 $B --only median_f32_1024x1024_s3 --no-check --reps 300
el bench
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys,re
tag=''
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    if d['name'].startswith('##'):
        tag=' '.join(re.findall(r'NDF_RANK_\w+=\d+', d['name'])) or 'def'; continue
    print('%-40s %-36s %9s %s %s'%(tag, d['name'][:36], d.get('warm_ms'), d.get('check'), d.get('kernels','')[:60]))
PY
T=build-gpu/tests
run() { out=$1; lim=$2; shift 2; ( timeout $lim "$@" > $R/t/$out.txt 2>&1; echo "rc=$?" >> $R/t/$out.txt ) & }
run t-rank 400 env NDF_TEST_CASES=2 $T/test_gpu_rank
run t-tile2 400 env NDF_TEST_CASES=6 NDF_TEST_FILTER=test_gpu_rank_tile2_pipe $T/test_gpu_rank
run t-p10 400 env NDF_TEST_CASES=6 NDF_TEST_SEED=31 NDF_TEST_TILE2_ONLY=10 NDF_TEST_FILTER=test_gpu_rank_tile2_pipe $T/test_gpu_rank
run t-klog 200 $T/test_kernel_log
run mc-p10 400 env NDF_TEST_CASES=1 NDF_TEST_SEED=7 NDF_TEST_TILE2_ONLY=10 NDF_TEST_FILTER=test_gpu_rank_tile2_pipe compute-sanitizer --tool memcheck $T/test_gpu_rank
run rc-p10 400 env NDF_TEST_CASES=1 NDF_TEST_SEED=8 NDF_TEST_TILE2_ONLY=10 NDF_TEST_FILTER=test_gpu_rank_tile2_pipe compute-sanitizer --tool racecheck $T/test_gpu_rank
run sc-p10 400 env NDF_TEST_CASES=1 NDF_TEST_SEED=9 NDF_TEST_TILE2_ONLY=10 NDF_TEST_FILTER=test_gpu_rank_tile2_pipe compute-sanitizer --tool synccheck $T/test_gpu_rank
wait
el tests
for f in $R/t/t-*.txt $R/t/mc-*.txt $R/t/rc-*.txt $R/t/sc-*.txt; do echo "== $(basename $f) $(grep -cE '^\[       OK' $f) ok; $(grep -E '^\[  (PASSED|FAILED)|ERROR SUMMARY|RACECHECK SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|mismatch|differ|expected|seed|rror" $f | grep -v "ERROR SUMMARY" | head -4; done | tee $R/summary.txt
env NDF_RANK_TILE2_PIPE=10 timeout 120 ncu --clock-control none -k ndf_rank_tile2 -c 1 --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats --section InstructionStats $B --only median_f32_1024x1024_s31 --no-check --reps 1 > $R/ncu-p10.txt 2>&1
grep -E "Duration|Issued Warp Per Scheduler  |Active Warps Per Scheduler  |Warp Cycles Per Issued|Executed Instructions  |Registers Per|Dynamic Shared|Block Limit (Reg|Shared)" $R/ncu-p10.txt
el done
cd $OUT && tar czf r13e.tgz r && rm -rf r
