# run11g: the final tree (ndf_ecc_strip2t's least rows per task 4 by default): test_gpu_ecc, strip2,
# deferred, memcheck; the 2-D bench (default; MC 2 / 3 / 8 beside it)
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/t/build.log 2>&1 || { tail -30 $R/t/build.log; exit 1; }
el built
T=build-gpu/tests
run() { out=$1; lim=$2; shift 2; ( timeout $lim "$@" > $R/t/$out.txt 2>&1; echo "rc=$?" >> $R/t/$out.txt ) & }
run t-ecc 200 env NDF_TEST_CASES=3 $T/test_gpu_ecc
run t-s2 200 env NDF_TEST_CASES=80 NDF_TEST_FILTER=test_gpu_strip2 $T/test_gpu_ecc
run t-def 200 env NDF_TEST_CASES=60 NDF_TEST_FILTER=test_gpu_deferred $T/test_gpu_ecc
run mc-s2 200 env NDF_TEST_CASES=1 NDF_TEST_SEED=67 NDF_TEST_FILTER=test_gpu_strip2 compute-sanitizer --tool memcheck $T/test_gpu_ecc
wait
el tests
for f in $R/t/t-*.txt $R/t/mc-*.txt; do echo "== $(basename $f) $(grep -cE '^\[       OK' $f) ok; $(grep -E '^\[  (PASSED|FAILED)|ERROR SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|differ|seed|rror" $f | grep -v "ERROR SUMMARY" | head -4; done | tee $R/summary.txt
B=build-gpu/bench/ndf_bench
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
bj timeout 60 $B --only ecc_float32_1024x1024 --check-max-mb 300 --reps 300 --deferred-errors
for i in 1 2; do bj timeout 60 $B --only ecc_float32_1024x1024 --no-check --reps 300 --deferred-errors; done
for m in 2 3 8; do bj env NDF_ECC2_MC=$m timeout 60 $B --only ecc_float32_1024x1024 --no-check --reps 300 --deferred-errors; done
bj timeout 60 $B --only ecc_float32_1024x1024 --check-max-mb 300 --reps 300
bj timeout 60 $B --only ecc_float32_64x256x256_b1 --check-max-mb 300 --reps 300 --deferred-errors
bj timeout 60 $B --only ecc_float32_64x256x256_b1 --no-check --reps 300
bj timeout 60 $B --only ecc_float32_8192x8192 --check-max-mb 300 --reps 300 --deferred-errors
bj timeout 60 $B --op ecc --dtype float32 --shape 512x512 --size 256 --check-max-mb 300 --reps 300 --deferred-errors
bj timeout 60 $B --op ecc --dtype uint8 --shape 1024x1024 --size 256 --check-max-mb 300 --reps 300
el bench
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys
tag=''
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    if d['name'].startswith('##'):
        w=d['name'].split(); tag=' '.join(x for x in w if x.startswith('NDF_')); continue
    print('%-16s %-36s %9s %s %s %s'%(tag, d['name'][:36], d.get('warm_ms'), d.get('check'), d.get('warm_timing','')[:24], 'deferred' if d.get('deferred_errors') else ''))
PY
cd $OUT && tar czf r11g.tgz r && rm -rf r
