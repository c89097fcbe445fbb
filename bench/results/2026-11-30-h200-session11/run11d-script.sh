# run11d: NDF_ECC2_PF=K (the march prefetches K rows / planes ahead into L1) A/B in the same run,
# deferred checks; tests with it on
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/t/build.log 2>&1 || { tail -30 $R/t/build.log; exit 1; }
el built
T=build-gpu/tests
run() { out=$1; lim=$2; shift 2; ( timeout $lim "$@" > $R/t/$out.txt 2>&1; echo "rc=$?" >> $R/t/$out.txt ) & }
run t-s2pf 240 env NDF_ECC2_PF=6 NDF_TEST_CASES=50 NDF_TEST_FILTER=test_gpu_strip2 $T/test_gpu_ecc
run t-s3pf 240 env NDF_ECC2_PF=3 NDF_TEST_CASES=40 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc
run mc-s2pf 240 env NDF_ECC2_PF=6 NDF_TEST_CASES=1 NDF_TEST_SEED=47 NDF_TEST_FILTER=test_gpu_strip2 compute-sanitizer --tool memcheck $T/test_gpu_ecc
run mc-s3pf 240 env NDF_ECC2_PF=3 NDF_TEST_CASES=1 NDF_TEST_SEED=49 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool memcheck $T/test_gpu_ecc
wait
el tests
for f in $R/t/t-*.txt $R/t/mc-*.txt; do echo "== $(basename $f) $(grep -cE '^\[       OK' $f) ok; $(grep -E '^\[  (PASSED|FAILED)|ERROR SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|differ|expected|seed|rror|message" $f | grep -v "ERROR SUMMARY" | head -6; done | tee $R/summary.txt
B=build-gpu/bench/ndf_bench
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
for s in ecc_float32_1024x1024 ecc_float32_64x256x256_b1 ecc_float32_8192x8192; do
  bj env NDF_ECC2_PF=0 timeout 60 $B --only $s --check-max-mb 100 --reps 300 --deferred-errors
  for k in 4 8 16 0; do bj env NDF_ECC2_PF=$k timeout 60 $B --only $s --no-check --reps 300 --deferred-errors; done
done
for s in ecc_float32_128x128x128 ecc_float32_256x256x256; do
  bj env NDF_ECC2_PF=2 timeout 60 $B --only $s --check-max-mb 100 --reps 200 --deferred-errors
  for k in 0 1 2 4 0; do bj env NDF_ECC2_PF=$k timeout 60 $B --only $s --no-check --reps 200 --deferred-errors; done
done
el bench
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys
tag=''
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    if d['name'].startswith('##'): tag=d['name'].split()[2]; continue
    print('%-14s %-34s %9s %s %s'%(tag, d['name'][:34], d.get('warm_ms'), d.get('check'), d.get('warm_timing','')[:20]))
PY
pr() { tag=$1; shift; echo "== $tag" >> $R/prof.txt; env NDF_ECC2_PROF=1 "$@" --no-check --reps 20 2>&1 >/dev/null | grep "ndf prof" | tail -2 >> $R/prof.txt; }
pr "1024 pf0" env NDF_ECC2_PF=0 timeout 60 $B --only ecc_float32_1024x1024 --deferred-errors
pr "1024 pf8" env NDF_ECC2_PF=8 timeout 60 $B --only ecc_float32_1024x1024 --deferred-errors
pr "256^3 pf0" env NDF_ECC2_PF=0 timeout 60 $B --only ecc_float32_256x256x256 --deferred-errors
pr "256^3 pf2" env NDF_ECC2_PF=2 timeout 60 $B --only ecc_float32_256x256x256 --deferred-errors
cat $R/prof.txt
el prof
cd $OUT && tar czf r11d.tgz r && rm -rf r
