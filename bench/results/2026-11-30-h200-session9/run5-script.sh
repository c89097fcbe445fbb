# run9e: main (strip3 v4: guesses clamped below, W=16 default): test_gpu_strip3 + memcheck, the 3-D bench
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/t/build.log 2>&1 || { tail -30 $R/t/build.log; exit 1; }
el built
T=build-gpu/tests
run() { out=$1; lim=$2; shift 2; ( timeout $lim "$@" > $R/t/$out.txt 2>&1; echo "rc=$?" >> $R/t/$out.txt ) & }
run t-s3 150 env NDF_TEST_CASES=120 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc
run mc-s3 150 env NDF_TEST_CASES=1 NDF_TEST_SEED=99 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool memcheck $T/test_gpu_ecc
run t-bshapes 150 env NDF_TEST_CASES=6 NDF_TEST_FILTER=test_gpu_benchmark_shapes $T/test_gpu_ecc
wait
el tests
for f in $R/t/t-*.txt $R/t/mc-*.txt; do echo "== $(basename $f) $(grep -cE '^\[       OK' $f) ok; $(grep -E '^\[  (PASSED|FAILED)|ERROR SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|differ|expected|seed|rror" $f | grep -v "ERROR SUMMARY" | head -4; done | tee $R/summary.txt
B=build-gpu/bench/ndf_bench
bj() { echo "{\"name\": \"## $(echo $* | grep -o 'NDF_[A-Z0-9_]*=[0-9a-z]*' | tr '\n' ' ')\"}" >> $R/bench.json; env "$@" >> $R/bench.json 2>> $R/bench.log; }
bj X=1 timeout 60 $B --only ecc_float32_256x256x256 --check-max-mb 100
bj X=1 timeout 60 $B --only ecc_tcons --check-max-mb 100
bj X=1 timeout 60 $B --no-check --only ecc_float32_512x512x512
bj X=1 timeout 60 $B --only ecc_float32_128x128x128
el bench
python3 - $R/bench.json <<'PY'
import json,sys
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    print('%-46s %9s %s %s'%(d['name'], d.get('warm_ms'), d.get('check'), d.get('kernels','')))
PY
cd $OUT && tar czf r9e.tgz r && rm -rf r
