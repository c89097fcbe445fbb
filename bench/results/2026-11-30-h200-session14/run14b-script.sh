# run14b: the binner by one FFMA.SAT and one round-up FFMA (ndf_ecc3_binner; strip3 and strip2t); A/B
# against HEAD (.gpu/r14b-ecc.patch reversed = git diff of the change); tests, memcheck, prof, Nsight at 256^3
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
mkdir -p /tmp/alt && tar --exclude=./build-gpu -cf - . | tar -xf - -C /tmp/alt && (cd /tmp/alt && patch -s -p1 -R < .gpu/r14b-ecc.patch) || echo "alt tree failed"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/t/build.log 2>&1 || { tail -30 $R/t/build.log; exit 1; }
(cd /tmp/alt && cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > /tmp/alt-build.log 2>&1) || tail -5 /tmp/alt-build.log
el built
T=build-gpu/tests
run() { out=$1; lim=$2; shift 2; ( timeout $lim "$@" > $R/t/$out.txt 2>&1; echo "rc=$?" >> $R/t/$out.txt ) & }
run t-s3 240 env NDF_TEST_CASES=80 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc
run t-def 200 env NDF_TEST_CASES=40 NDF_TEST_FILTER=test_gpu_deferred $T/test_gpu_ecc
run t-ecc 240 env NDF_TEST_CASES=3 $T/test_gpu_ecc
run t-s2 240 env NDF_TEST_CASES=40 NDF_TEST_FILTER=test_gpu_strip2 $T/test_gpu_ecc
run mc-s3 240 env NDF_TEST_CASES=2 NDF_TEST_SEED=75 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool memcheck $T/test_gpu_ecc
run mc-s2 240 env NDF_TEST_CASES=2 NDF_TEST_SEED=75 NDF_TEST_FILTER=test_gpu_strip2 compute-sanitizer --tool memcheck $T/test_gpu_ecc
wait
el tests
for f in $R/t/t-*.txt $R/t/mc-*.txt; do echo "== $(basename $f) $(grep -cE '^\[       OK' $f) ok; $(grep -E '^\[  (PASSED|FAILED)|ERROR SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|differ|seed|rror" $f | grep -v "ERROR SUMMARY" | head -4; done | tee $R/summary.txt
B=build-gpu/bench/ndf_bench; A=/tmp/alt/build-gpu/bench/ndf_bench
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
for s in ecc_float32_512x512x512 ecc_float32_256x256x256; do
  bj timeout 60 $B --only $s --check-max-mb 600 --reps 20 --deferred-errors
  for i in 1 2 3; do
    bj timeout 60 $A --only $s --no-check --reps 200 --deferred-errors
    bj timeout 60 $B --only $s --no-check --reps 200 --deferred-errors
  done
done
for s in ecc_tcons ecc_float32_128x128x128 ecc_float32_8192x8192 ecc_float32_64x256x256_b1 ecc_float32_1024x1024; do
  bj timeout 60 $B --only $s --check-max-mb 300 --reps 20 --deferred-errors
  for i in 1 2; do
    bj timeout 60 $A --only $s --no-check --reps 300 --deferred-errors
    bj timeout 60 $B --only $s --no-check --reps 300 --deferred-errors
  done
done
el bench
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys
tag=''
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    if d['name'].startswith('##'):
        tag='ALT' if '/tmp/alt' in d['name'] else 'cur'; continue
    print('%-4s %-36s %9s %s %s'%(tag, d['name'][:36], d.get('warm_ms'), d.get('check'), 'deferred' if d.get('deferred_errors') else ''))
PY
pr() { tag=$1; shift; echo "== $tag" >> $R/prof.txt; env NDF_ECC2_PROF=1 "$@" --no-check --reps 20 2>&1 >/dev/null | grep "ndf prof" | tail -1 >> $R/prof.txt; }
for s in 512x512x512 256x256x256; do pr "$s cur" timeout 60 $B --only ecc_float32_$s --deferred-errors; pr "$s alt" timeout 60 $A --only ecc_float32_$s --deferred-errors; done
cat $R/prof.txt
el prof
timeout 200 ncu --clock-control none --kernel-name ndf_ecc_strip3 --launch-skip 5 --launch-count 1 --section SourceCounters --section WarpStateStats --section InstructionStats -o $R/s3 $B --only ecc_float32_256x256x256 --no-check --reps 10 > $R/ncu-run.txt 2>&1; tail -3 $R/ncu-run.txt
ncu -i $R/s3.ncu-rep --page source --csv --print-source sass > $R/s3-source.csv 2>&1; wc -l $R/s3-source.csv
ncu -i $R/s3.ncu-rep --page details --print-details all > $R/s3-details.txt 2>&1; wc -l $R/s3-details.txt
rm -f $R/s3.ncu-rep
el ncu
cd $OUT && tar czf r14b.tgz r && rm -rf r
