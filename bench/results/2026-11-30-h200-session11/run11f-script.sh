# run11f: NDF_ECC2_MC (the least rows per 2-D warp task) 4 against the default 8, alternated, deferred
# and waiting, at 1024^2 and other small 2-D shapes; test_gpu_strip2 / deferred with MC 4
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/t/build.log 2>&1 || { tail -30 $R/t/build.log; exit 1; }
el built
T=build-gpu/tests
run() { out=$1; lim=$2; shift 2; ( timeout $lim "$@" > $R/t/$out.txt 2>&1; echo "rc=$?" >> $R/t/$out.txt ) & }
run t-s2mc4 200 env NDF_ECC2_MC=4 NDF_TEST_CASES=60 NDF_TEST_FILTER=test_gpu_strip2 $T/test_gpu_ecc
run t-defmc4 200 env NDF_ECC2_MC=4 NDF_TEST_CASES=30 NDF_TEST_FILTER=test_gpu_deferred $T/test_gpu_ecc
wait
el tests
for f in $R/t/t-*.txt; do echo "== $(basename $f) $(grep -cE '^\[       OK' $f) ok; $(grep -E '^\[  (PASSED|FAILED)|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|differ|seed|rror" $f | head -4; done | tee $R/summary.txt
B=build-gpu/bench/ndf_bench
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
for i in 1 2 3; do for m in 8 4; do
  bj env NDF_ECC2_MC=$m timeout 60 $B --only ecc_float32_1024x1024 --no-check --reps 300 --deferred-errors
done; done
for m in 8 4; do bj env NDF_ECC2_MC=$m timeout 60 $B --only ecc_float32_1024x1024 --no-check --reps 300; done
for sh in 512x512 2048x2048 4096x4096 16x256x256 4x512x512; do
  bd=0; case $sh in *x*x*) bd=1;; esac
  for m in 8 4; do bj env NDF_ECC2_MC=$m timeout 60 $B --op ecc --dtype float32 --shape $sh --batch-dims $bd --size 256 --no-check --reps 300 --deferred-errors; done
done
for m in 8 4; do bj env NDF_ECC2_MC=$m timeout 60 $B --op ecc --dtype uint8 --shape 1024x1024 --size 256 --no-check --reps 300; done
el bench
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys
tag=''
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    if d['name'].startswith('##'):
        w=d['name'].split(); tag=' '.join(x for x in w if x.startswith('NDF_')); continue
    print('%-16s %-36s %9s %s %s'%(tag, d['name'][:36], d.get('warm_ms'), d.get('warm_timing','')[:24], 'deferred' if d.get('deferred_errors') else ''))
PY
cd $OUT && tar czf r11f.tgz r && rm -rf r
