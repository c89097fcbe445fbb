# run13f: PIPE 10 with the rows cap as the default: bench A/B over window sizes, all median workloads, GPU tests, memcheck of the default's cases
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/t/build.log 2>&1 || { tail -30 $R/t/build.log; exit 1; }
el built
B=build-gpu/bench/ndf_bench
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
bj timeout 60 $B --only median_f32_1024x1024_s3 --no-check --reps 300
bj timeout 60 $B --only median_f32_1024x1024_s31 --no-check --reps 300
for sz in 11 15 21 25; do
  bj env NDF_RANK_TILE2_PIPE=6 timeout 60 $B --op median_filter --dtype float32 --shape 1024x1024 --size $sz --no-check --reps 100
  bj timeout 60 $B --op median_filter --dtype float32 --shape 1024x1024 --size $sz --reps 100 --check-max-mb 5
done
bj env NDF_RANK_TILE2_PIPE=6 timeout 60 $B --op rank_filter --param 10 --dtype int32 --shape 1024x1024 --size 21 --no-check --reps 100
bj timeout 60 $B --op rank_filter --param 10 --dtype int32 --shape 1024x1024 --size 21 --reps 100
bj timeout 100 $B --only median --no-check --reps 100
bj timeout 60 $B --only median_f32_1024x1024_s3 --no-check --reps 300
bj timeout 60 $B --only median_f32_1024x1024_s31 --no-check --reps 300
el bench
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys,re
tag=''
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    if d['name'].startswith('##'):
        tag=' '.join(re.findall(r'NDF_RANK_\w+=\d+', d['name'])) or 'def'; continue
    print('%-24s %-36s %9s %s %s'%(tag, d['name'][:36], d.get('warm_ms'), d.get('check'), d.get('kernels','')[:70]))
PY
T=build-gpu/tests
run() { out=$1; lim=$2; shift 2; ( timeout $lim "$@" > $R/t/$out.txt 2>&1; echo "rc=$?" >> $R/t/$out.txt ) & }
run t-rank 400 env NDF_TEST_CASES=2 NDF_TEST_SEED=41 $T/test_gpu_rank
run t-tile2 400 env NDF_TEST_CASES=6 NDF_TEST_SEED=42 NDF_TEST_FILTER=test_gpu_rank_tile2_pipe $T/test_gpu_rank
run mc-tile2 400 env NDF_TEST_CASES=1 NDF_TEST_SEED=43 NDF_TEST_FILTER=test_gpu_rank_tile2_pipe compute-sanitizer --tool memcheck $T/test_gpu_rank
run rc-tile2 400 env NDF_TEST_CASES=1 NDF_TEST_SEED=44 NDF_TEST_FILTER=test_gpu_rank_tile2_pipe compute-sanitizer --tool racecheck $T/test_gpu_rank
wait
el tests
for f in $R/t/t-*.txt $R/t/mc-*.txt $R/t/rc-*.txt; do echo "== $(basename $f) $(grep -cE '^\[       OK' $f) ok; $(grep -E '^\[  (PASSED|FAILED)|ERROR SUMMARY|RACECHECK SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|mismatch|differ|expected|seed|rror" $f | grep -v "ERROR SUMMARY" | head -4; done | tee $R/summary.txt
cd $OUT && tar czf r13f.tgz r && rm -rf r
