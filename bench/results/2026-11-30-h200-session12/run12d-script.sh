# run12c: strip3 equal shares + phase 1 over plane-major units stepped without divisions, the binner's
# mask, planes outside read clamped; the 2-D fine plan the default; A/B against HEAD (r12d-ecc.patch
# reversed); the shared-add throughput microbenchmark; Nsight source counters of strip3 at 256^3
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
mkdir -p /tmp/alt && tar --exclude=./build-gpu -cf - . | tar -xf - -C /tmp/alt && (cd /tmp/alt && patch -s -p1 -R < .gpu/r12d-ecc.patch) || echo "alt tree failed"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/t/build.log 2>&1 || { tail -30 $R/t/build.log; exit 1; }
(cd /tmp/alt && cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > /tmp/alt-build.log 2>&1) || tail -5 /tmp/alt-build.log
el built
for c in .gpu/cubin/*.cubin; do cuobjdump -sass $c > $R/$(basename $c .cubin).sass 2>&1; done
T=build-gpu/tests
run() { out=$1; lim=$2; shift 2; ( timeout $lim "$@" > $R/t/$out.txt 2>&1; echo "rc=$?" >> $R/t/$out.txt ) & }
run t-s3 240 env NDF_TEST_CASES=80 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc
run t-nan 200 env NDF_TEST_FILTER=test_gpu_nan_rejected $T/test_gpu_ecc
run t-def 200 env NDF_TEST_CASES=40 NDF_TEST_FILTER=test_gpu_deferred $T/test_gpu_ecc
run t-ecc 240 env NDF_TEST_CASES=3 $T/test_gpu_ecc
run t-s2 240 env NDF_TEST_CASES=40 NDF_TEST_FILTER=test_gpu_strip2 $T/test_gpu_ecc
run mc-s3 240 env NDF_TEST_CASES=2 NDF_TEST_SEED=74 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool memcheck $T/test_gpu_ecc
wait
el tests
for f in $R/t/t-*.txt $R/t/mc-*.txt; do echo "== $(basename $f) $(grep -cE '^\[       OK' $f) ok; $(grep -E '^\[  (PASSED|FAILED)|ERROR SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|differ|seed|rror" $f | grep -v "ERROR SUMMARY" | head -4; done | tee $R/summary.txt
B=build-gpu/bench/ndf_bench; A=/tmp/alt/build-gpu/bench/ndf_bench
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
for s in ecc_float32_256x256x256 ecc_tcons ecc_float32_512x512x512 ecc_float32_128x128x128; do
  bj timeout 60 $B --only $s --check-max-mb 300 --reps 200 --deferred-errors
  for i in 1 2; do
    bj timeout 60 $A --only $s --no-check --reps 200 --deferred-errors
    bj timeout 60 $B --only $s --no-check --reps 200 --deferred-errors
  done
  bj timeout 60 $B --only $s --no-check --reps 200
done
for s in ecc_float32_8192x8192 ecc_float32_64x256x256_b1 ecc_float32_1024x1024; do bj timeout 60 $B --only $s --no-check --reps 300 --deferred-errors; done
el bench
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys
tag=''
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    if d['name'].startswith('##'):
        tag='ALT' if '/tmp/alt' in d['name'] else 'crs' if 'coarse' in d['name'] else 'cur'; continue
    print('%-4s %-36s %9s %s %s %s'%(tag, d['name'][:36], d.get('warm_ms'), d.get('check'), d.get('warm_timing','')[:24], 'deferred' if d.get('deferred_errors') else ''))
PY
pr() { tag=$1; shift; echo "== $tag" >> $R/prof.txt; env NDF_ECC2_PROF=1 "$@" --no-check --reps 20 2>&1 >/dev/null | grep "ndf prof" | tail -2 >> $R/prof.txt; }
pr "256^3 cur" timeout 60 $B --only ecc_float32_256x256x256 --deferred-errors
pr "512^3 cur" timeout 60 $B --only ecc_float32_512x512x512 --deferred-errors
cat $R/prof.txt
el prof
timeout 200 ncu --clock-control none --kernel-name ndf_ecc_strip3 --launch-skip 5 --launch-count 1 --section SourceCounters --section WarpStateStats --section InstructionStats --section MemoryWorkloadAnalysis_Tables -o $R/s3 $B --only ecc_float32_256x256x256 --no-check --reps 10 > $R/ncu-run.txt 2>&1; tail -3 $R/ncu-run.txt
ncu -i $R/s3.ncu-rep --page source --csv --print-source sass > $R/s3-source.csv 2>&1; wc -l $R/s3-source.csv
ncu -i $R/s3.ncu-rep --page details --print-details all > $R/s3-details.txt 2>&1; wc -l $R/s3-details.txt
el ncu
cd $OUT && tar czf r12d.tgz r && rm -rf r
