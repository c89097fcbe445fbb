# run13g: the final choice rule (PIPE 10 where the window holds >= 1/10 of the tile): bench over window sizes, PIPE 10 tests
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/t/build.log 2>&1 || { tail -30 $R/t/build.log; exit 1; }
B=build-gpu/bench/ndf_bench
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
T=build-gpu/tests
( timeout 150 env NDF_TEST_CASES=6 NDF_TEST_SEED=51 NDF_TEST_TILE2_ONLY=10 NDF_TEST_FILTER=test_gpu_rank_tile2_pipe $T/test_gpu_rank > $R/t/t-p10.txt 2>&1; echo "rc=$?" >> $R/t/t-p10.txt ) &
bj timeout 60 $B --only median_f32_1024x1024_s3 --no-check --reps 300
for sz in 11 15 17 19 21; do bj timeout 60 $B --op median_filter --dtype float32 --shape 1024x1024 --size $sz --no-check --reps 100; done
bj timeout 60 $B --only median_f32_1024x1024_s31 --reps 300 --check-max-mb 5
bj timeout 60 $B --only median_f32_1024x1024_s31 --no-check --reps 300
bj timeout 60 $B --only median_f32_1024x1024_s3 --no-check --reps 300
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys,re
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    if d['name'].startswith('##'): continue
    print('%-36s %9s %s %s'%(d['name'][:36], d.get('warm_ms'), d.get('check'), d.get('kernels','')[:70]))
PY
wait
grep -E '^\[  (PASSED|FAILED)|^rc=|mismatch|differ' $R/t/t-p10.txt | head -5
el done
cd $OUT && tar czf r13g.tgz r && rm -rf r
