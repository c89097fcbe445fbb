# run11c: NDF_ECC2_NC=1 (the input read through ld.global.nc: do phase 1's rows survive the grid
# barrier's L1 invalidation for the march?) A/B in the same run; tests with and without it
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/t/build.log 2>&1 || { tail -30 $R/t/build.log; exit 1; }
el built
T=build-gpu/tests
run() { out=$1; lim=$2; shift 2; ( timeout $lim "$@" > $R/t/$out.txt 2>&1; echo "rc=$?" >> $R/t/$out.txt ) & }
run t-s2 240 env NDF_TEST_CASES=50 NDF_TEST_FILTER=test_gpu_strip2 $T/test_gpu_ecc
run t-s3 240 env NDF_TEST_CASES=40 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc
run t-s2nc 240 env NDF_ECC2_NC=1 NDF_TEST_CASES=50 NDF_TEST_FILTER=test_gpu_strip2 $T/test_gpu_ecc
run t-s3nc 240 env NDF_ECC2_NC=1 NDF_TEST_CASES=40 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc
run t-defnc 240 env NDF_ECC2_NC=1 NDF_TEST_CASES=30 NDF_TEST_FILTER=test_gpu_deferred $T/test_gpu_ecc
wait
el tests
for f in $R/t/t-*.txt; do echo "== $(basename $f) $(grep -cE '^\[       OK' $f) ok; $(grep -E '^\[  (PASSED|FAILED)|ERROR SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|differ|expected|seed|rror|message" $f | grep -v "ERROR SUMMARY" | head -6; done | tee $R/summary.txt
B=build-gpu/bench/ndf_bench
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
for s in ecc_float32_1024x1024 ecc_float32_64x256x256_b1 ecc_float32_8192x8192 ecc_float32_128x128x128 ecc_float32_256x256x256; do
  bj timeout 60 $B --only $s --check-max-mb 100 --reps 300 --deferred-errors
  bj env NDF_ECC2_NC=1 timeout 60 $B --only $s --check-max-mb 100 --reps 300 --deferred-errors
  bj timeout 60 $B --only $s --no-check --reps 300 --deferred-errors
  bj env NDF_ECC2_NC=1 timeout 60 $B --only $s --no-check --reps 300 --deferred-errors
done
el bench
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    print('%-40s %9s %s %s %s'%(d['name'][:40] if not d['name'].startswith('##') else d['name'][3:40], d.get('warm_ms'), d.get('check'), d.get('warm_timing',''), d.get('deferred_errors','')))
PY
pr() { tag=$1; shift; echo "== $tag" >> $R/prof.txt; env NDF_ECC2_PROF=1 "$@" --no-check --reps 20 2>&1 >/dev/null | grep "ndf prof" | tail -2 >> $R/prof.txt; }
pr "1024" timeout 60 $B --only ecc_float32_1024x1024 --deferred-errors
pr "1024 nc" env NDF_ECC2_NC=1 timeout 60 $B --only ecc_float32_1024x1024 --deferred-errors
pr "b64" timeout 60 $B --only ecc_float32_64x256x256_b1 --deferred-errors
pr "b64 nc" env NDF_ECC2_NC=1 timeout 60 $B --only ecc_float32_64x256x256_b1 --deferred-errors
pr "128^3" timeout 60 $B --only ecc_float32_128x128x128 --deferred-errors
pr "128^3 nc" env NDF_ECC2_NC=1 timeout 60 $B --only ecc_float32_128x128x128 --deferred-errors
cat $R/prof.txt
el prof
cd $OUT && tar czf r11c.tgz r && rm -rf r
