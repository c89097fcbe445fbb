# run11b: the set-up's partial loads and the tail's copy loads all in flight (strip2 / strip2t / strip3);
# tests + memcheck; ECC bench default vs --deferred-errors; per-phase times; launch floor by parameter bytes
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/t/build.log 2>&1 || { tail -30 $R/t/build.log; exit 1; }
nvcc -O2 -arch=sm_90 -o /tmp/ll tools/launch_latency.cu > $R/t/ll-build.log 2>&1
el built
T=build-gpu/tests
run() { out=$1; lim=$2; shift 2; ( timeout $lim "$@" > $R/t/$out.txt 2>&1; echo "rc=$?" >> $R/t/$out.txt ) & }
run t-def 240 env NDF_TEST_CASES=60 NDF_TEST_FILTER=test_gpu_deferred $T/test_gpu_ecc
run t-s2 240 env NDF_TEST_CASES=80 NDF_TEST_FILTER=test_gpu_strip2 $T/test_gpu_ecc
run t-s3 240 env NDF_TEST_CASES=50 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc
run t-ecc 240 env NDF_TEST_CASES=2 $T/test_gpu_ecc
run mc-s2 240 env NDF_TEST_CASES=1 NDF_TEST_SEED=41 NDF_TEST_FILTER=test_gpu_strip2 compute-sanitizer --tool memcheck $T/test_gpu_ecc
run mc-s3 240 env NDF_TEST_CASES=1 NDF_TEST_SEED=43 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool memcheck $T/test_gpu_ecc
wait
el tests
for f in $R/t/t-*.txt $R/t/mc-*.txt; do echo "== $(basename $f) $(grep -cE '^\[       OK' $f) ok; $(grep -E '^\[  (PASSED|FAILED)|ERROR SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|differ|expected|seed|rror|message" $f | grep -v "ERROR SUMMARY" | head -6; done | tee $R/summary.txt
/tmp/ll > $R/launch-latency.txt 2>&1; cat $R/launch-latency.txt
el ll
B=build-gpu/bench/ndf_bench
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
for s in ecc_float32_1024x1024 ecc_float32_64x256x256_b1; do
  bj timeout 60 $B --only $s --check-max-mb 300 --reps 300
  bj timeout 60 $B --only $s --check-max-mb 300 --reps 300 --deferred-errors
  bj timeout 60 $B --only $s --no-check --reps 300 --deferred-errors
done
bj timeout 60 $B --only ecc_float32_8192x8192 --check-max-mb 300 --reps 300 --deferred-errors
bj timeout 60 $B --only ecc_float32_8192x8192 --no-check --reps 300
bj timeout 60 $B --op ecc --dtype uint8 --shape 64x256x256 --batch-dims 1 --size 256 --reps 300
for s in ecc_float32_128x128x128 ecc_float32_256x256x256 ecc_tcons ecc_float32_512x512x512; do
  bj timeout 60 $B --only $s --no-check --reps 200
  bj timeout 60 $B --only $s --check-max-mb 100 --reps 200 --deferred-errors
done
el bench
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    print('%-40s %9s %s %s %s %s'%(d['name'][:40], d.get('warm_ms'), d.get('host_us'), d.get('check'), d.get('warm_timing',''), d.get('deferred_errors','')))
PY
pr() { tag=$1; shift; echo "== $tag" >> $R/prof.txt; env NDF_ECC2_PROF=1 "$@" --no-check --reps 20 2>&1 >/dev/null | grep "ndf prof" | tail -2 >> $R/prof.txt; }
pr "1024" timeout 60 $B --only ecc_float32_1024x1024 --deferred-errors
pr "b64" timeout 60 $B --only ecc_float32_64x256x256_b1 --deferred-errors
pr "256^3" timeout 60 $B --only ecc_float32_256x256x256 --deferred-errors
cat $R/prof.txt
el prof
cd $OUT && tar czf r11b.tgz r && rm -rf r
