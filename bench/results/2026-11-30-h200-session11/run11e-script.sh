# run11e: the final tree: every GPU test, sanitizers; A/B of r11b's set-up / tail loads (a copy of the
# tree with that change reverted, built beside it) and of NDF_ECC2_MC in deferred mode; the ECC bench
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
mkdir -p /tmp/alt && tar --exclude=./build-gpu -cf - . | tar -xf - -C /tmp/alt && (cd /tmp/alt && patch -s -p1 -R < .gpu/r11b-ecc.patch) || echo "alt tree failed"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/t/build.log 2>&1 || { tail -30 $R/t/build.log; exit 1; }
(cd /tmp/alt && cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > /tmp/alt-build.log 2>&1) || tail -5 /tmp/alt-build.log
el built
T=build-gpu/tests
run() { out=$1; lim=$2; shift 2; ( timeout $lim "$@" > $R/t/$out.txt 2>&1; echo "rc=$?" >> $R/t/$out.txt ) & }
for t in grey rank distance distance_bf binary ect sinkhorn; do run t-$t 330 env NDF_TEST_CASES=3 $T/test_gpu_$t; done
run t-ecc 330 env NDF_TEST_CASES=3 $T/test_gpu_ecc
run t-klog 330 $T/test_kernel_log
run mc-def 330 env NDF_TEST_CASES=1 NDF_TEST_SEED=53 NDF_TEST_FILTER=test_gpu_deferred compute-sanitizer --tool memcheck $T/test_gpu_ecc
run rc-s2 330 env NDF_TEST_CASES=1 NDF_TEST_SEED=59 NDF_TEST_FILTER=test_gpu_strip2 compute-sanitizer --tool racecheck $T/test_gpu_ecc
run mc-s3 330 env NDF_TEST_CASES=1 NDF_TEST_SEED=61 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool memcheck $T/test_gpu_ecc
wait
el tests
for f in $R/t/t-*.txt $R/t/mc-*.txt $R/t/rc-*.txt; do echo "== $(basename $f) $(grep -cE '^\[       OK' $f) ok; $(grep -E '^\[  (PASSED|FAILED)|ERROR SUMMARY|RACECHECK SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|differ|seed|rror|hazard" $f | grep -v "ERROR SUMMARY\|expected to\|warning only" | head -4; done | tee $R/summary.txt
B=build-gpu/bench/ndf_bench; A=/tmp/alt/build-gpu/bench/ndf_bench
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
for s in ecc_float32_1024x1024 ecc_float32_64x256x256_b1; do
  bj timeout 60 $B --only $s --check-max-mb 300 --reps 300
  bj timeout 60 $B --only $s --check-max-mb 300 --reps 300 --deferred-errors
  for i in 1 2; do
    bj timeout 60 $A --only $s --no-check --reps 300 --deferred-errors
    bj timeout 60 $B --only $s --no-check --reps 300 --deferred-errors
  done
  bj timeout 60 $A --only $s --no-check --reps 300
  bj timeout 60 $B --only $s --no-check --reps 300
done
for m in 4 6; do bj env NDF_ECC2_MC=$m timeout 60 $B --only ecc_float32_1024x1024 --no-check --reps 300 --deferred-errors; done
for m in 4 16; do bj env NDF_ECC2_MC=$m timeout 60 $B --only ecc_float32_64x256x256_b1 --no-check --reps 300 --deferred-errors; done
for s in ecc_float32_8192x8192 ecc_float32_128x128x128 ecc_float32_256x256x256 ecc_tcons ecc_float32_512x512x512; do
  bj timeout 60 $B --only $s --check-max-mb 300 --reps 200 --deferred-errors
  bj timeout 60 $A --only $s --no-check --reps 200 --deferred-errors
  bj timeout 60 $B --only $s --no-check --reps 200
done
bj timeout 60 $B --op ecc --dtype uint8 --shape 64x256x256 --batch-dims 1 --size 256 --reps 300
bj timeout 60 $B --only soft_ecc --no-check
el bench
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys
tag=''
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    if d['name'].startswith('##'):
        w=d['name'].split(); tag=('ALT ' if '/tmp/alt' in d['name'] else 'cur ')+' '.join(x for x in w if x.startswith('NDF_')); continue
    print('%-22s %-36s %9s %s %s %s'%(tag, d['name'][:36], d.get('warm_ms'), d.get('check'), d.get('warm_timing','')[:24], 'deferred' if d.get('deferred_errors') else ''))
PY
cd $OUT && tar czf r11e.tgz r && rm -rf r
