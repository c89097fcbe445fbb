# run9d: main (strip3 v3: every task on float4 loads, T <= 320): bench (ECC shapes CPU-checked; W 8 / 16), test_gpu_ecc, sanitizers of strip3
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/t/build.log 2>&1 || { tail -30 $R/t/build.log; exit 1; }
el built
B=build-gpu/bench/ndf_bench
bj() { echo "{\"name\": \"## $(echo $* | grep -o 'NDF_[A-Z0-9_]*=[0-9a-z]*' | tr '\n' ' ')\"}" >> $R/bench.json; env "$@" >> $R/bench.json 2>> $R/bench.log; }
bj X=1 timeout 200 $B --only ecc_ --check-max-mb 100
el bench-ecc
bj NDF_ECC3_W=16 timeout 60 $B --only ecc_float32_256x256x256 --check-max-mb 100
bj NDF_ECC3_W=16 timeout 60 $B --only ecc_tcons --check-max-mb 100
bj NDF_ECC3_W=16 timeout 60 $B --no-check --only ecc_float32_512x512x512
bj NDF_ECC3_W=16 timeout 60 $B --no-check --only ecc_float32_128x128x128
bj NDF_ECC3_W=8 NDF_ECC3_MC=2 timeout 60 $B --no-check --only ecc_float32_256x256x256
bj NDF_ECC3_W=16 NDF_ECC3_MC=2 timeout 60 $B --no-check --only ecc_float32_256x256x256
bj NDF_ECC3_W=16 NDF_ECC3_MC=8 timeout 60 $B --no-check --only ecc_float32_512x512x512
bj NDF_ECC3_W=8 NDF_ECC3_MC=8 timeout 60 $B --no-check --only ecc_float32_512x512x512
el bench
python3 - $R/bench.json <<'PY'
import json,sys
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    print('%-46s %9s %s %s'%(d['name'], d.get('warm_ms'), d.get('check'), d.get('kernels','')))
PY
T=build-gpu/tests
run() { out=$1; lim=$2; shift 2; ( timeout $lim "$@" > $R/t/$out.txt 2>&1; echo "rc=$?" >> $R/t/$out.txt ) & }
run t-s3 250 env NDF_TEST_CASES=120 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc
run t-ecc 250 env NDF_TEST_CASES=2 $T/test_gpu_ecc
run mc-s3 250 env NDF_TEST_CASES=1 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool memcheck $T/test_gpu_ecc
run rc-s3 250 env NDF_TEST_CASES=1 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool racecheck $T/test_gpu_ecc
run sc-s3 250 env NDF_TEST_CASES=1 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool synccheck $T/test_gpu_ecc
run mc-nan 250 env NDF_TEST_CASES=1 NDF_TEST_FILTER=test_gpu_nan_rejected compute-sanitizer --tool memcheck $T/test_gpu_ecc
run t-klog 60 $T/test_kernel_log
wait
el tests
for f in $R/t/t-*.txt $R/t/mc-*.txt $R/t/rc-*.txt $R/t/sc-*.txt; do echo "== $(basename $f) $(grep -cE '^\[       OK' $f) ok; $(grep -E '^\[  (PASSED|FAILED)|ERROR SUMMARY|RACECHECK SUMMARY|SYNCCHECK SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|differ|expected|seed|rror" $f | grep -v "ERROR SUMMARY" | head -4; done | tee $R/summary.txt
cd $OUT && tar czf r9d.tgz r && rm -rf r
