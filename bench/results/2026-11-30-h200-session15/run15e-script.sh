# run15e: the final form (the split phase 1 the staged kernel's default, staged from 2^26 voxels): the ECC GPU
# tests, strip3 under memcheck, the benchmark at 512^3 / 256^3 / T-cons / 128^3 (default against NDF_ECC3_STG=0).
# On the GPU machine (carry .gpu): bash bench/results/2026-11-30-h200-session15/run15e-script.sh
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/t/build.log 2>&1 || { tail -30 $R/t/build.log; exit 1; }
el built
T=build-gpu/tests
run() { out=$1; lim=$2; shift 2; ( timeout $lim "$@" > $R/t/$out.txt 2>&1; echo "rc=$?" >> $R/t/$out.txt ) & }
run t-s3 200 env NDF_TEST_CASES=80 NDF_TEST_SEED=1515 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc
run t-ecc 200 env NDF_TEST_CASES=3 NDF_TEST_SEED=1516 $T/test_gpu_ecc
run mc-s3 200 env NDF_ECC3_STG=1 NDF_TEST_CASES=4 NDF_TEST_SEED=1517 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool memcheck $T/test_gpu_ecc
wait
el tests
for f in $R/t/t-*.txt $R/t/mc-*.txt; do echo "== $(basename $f) $(grep -cE '^\[       OK' $f) ok; $(grep -E '^\[  (PASSED|FAILED)|ERROR SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|differ|seed|rror" $f | grep -v "SUMMARY" | head -4; done | tee $R/summary.txt
B=build-gpu/bench/ndf_bench
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
for s in ecc_float32_512x512x512 ecc_float32_256x256x256 ecc_tcons ecc_float32_128x128x128; do
  bj timeout 60 $B --only $s --check-max-mb 600 --reps 20 --deferred-errors
  for i in 1 2; do
    bj timeout 60 $B --only $s --no-check --reps 200 --deferred-errors
    bj env NDF_ECC3_STG=0 timeout 60 $B --only $s --no-check --reps 200 --deferred-errors
  done
  bj timeout 60 $B --only $s --no-check --reps 200
done
el bench
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys,re
tag=''
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    if d['name'].startswith('##'):
        tag=' '.join(x.replace('NDF_ECC3_','') for x in re.findall(r'NDF_\w+=\w+', d['name'])) or 'default'; continue
    print('%-16s %-36s %9s %s %s'%(tag, d['name'][:36], d.get('warm_ms'), d.get('check'), 'deferred' if d.get('deferred_errors') else 'waiting'))
PY
el done
cd $OUT && tar czf s15e.tgz r && rm -rf r
