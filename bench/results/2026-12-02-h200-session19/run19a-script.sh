# run19a (PREPARED in session 18, NOT RUN): branch s18-batch-end -- a given range's batch end without the
# one-block copy (the images' last blocks wait for each other on the call's ticket, then each writes its own
# curve; run18f: 64 x 256^2 over a range 0.0424 ms against 0.0231 over [min, max]).  Bench against main (M);
# tests: the full ECC GPU test alone first, then strip2 / strip3 / deferred / NaN with memcheck and racecheck.
# On the GPU machine, on s18-batch-end (carry .gpu): bash bench/results/2026-12-02-h200-session19/run19a-script.sh
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
H=bench/results/2026-12-02-h200-session19
mkdir -p /tmp/M && tar --exclude=./build-gpu -cf - . | tar -xf - -C /tmp/M && (cd /tmp/M && patch -s -p1 < $H/to-main.patch) || echo "tree M failed"
bld() { (cd $1 && cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > /tmp/build-$2.log 2>&1 || tail -20 /tmp/build-$2.log); }
bld . N & bld /tmp/M M & wait
el built
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
V="/tmp/M ."
for s in ecc_range_float32_64x256x256_b1 ecc_range_float32_1024x1024 ecc_range_float32_256x256x256 ecc_float32_64x256x256_b1; do
  bj timeout 60 build-gpu/bench/ndf_bench --only $s --check-max-mb 600 --reps 10 --deferred-errors
  for i in 1 2; do for X in $V; do bj timeout 60 $X/build-gpu/bench/ndf_bench --only $s --no-check --reps 300 --deferred-errors; done; done
  bj timeout 60 build-gpu/bench/ndf_bench --only $s --no-check --reps 300
done
el bench
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys,re
tag=''
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    if d['name'].startswith('##'):
        m=re.search(r'/tmp/(\w+)/', d['name']); v=m.group(1) if m else 'N'
        tag=v+(' waiting' if 'deferred' not in d['name'] else ''); continue
    print('%-10s %-40s %9s %s'%(tag, d['name'][:40], d.get('warm_ms'), d.get('check')))
PY
T=build-gpu/tests
( timeout 220 env NDF_TEST_SEED=1901 $T/test_gpu_ecc > $R/t/t-ecc.txt 2>&1; echo "rc=$?" >> $R/t/t-ecc.txt )
el t-ecc
run() { out=$1; lim=$2; shift 2; ( s=$(date +%s); timeout $lim "$@" > $R/t/$out.txt 2>&1; echo "rc=$? $(( $(date +%s) - s ))s" >> $R/t/$out.txt ) & }
run t-s2 150 env NDF_TEST_CASES=60 NDF_TEST_SEED=1902 NDF_TEST_FILTER=test_gpu_strip2 $T/test_gpu_ecc
run t-s3 150 env NDF_TEST_CASES=60 NDF_TEST_SEED=1903 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc
run mc-s2 150 env NDF_TEST_CASES=4 NDF_TEST_SEED=1904 NDF_TEST_FILTER=test_gpu_strip2 compute-sanitizer --tool memcheck $T/test_gpu_ecc
run rc-s3 150 env NDF_TEST_CASES=3 NDF_TEST_SEED=1905 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool racecheck $T/test_gpu_ecc
run mc-nan 150 env NDF_TEST_FILTER=test_gpu_nan_rejected compute-sanitizer --tool memcheck $T/test_gpu_ecc
wait
el tests
for f in $R/t/*.txt; do echo "== $(basename $f) $(grep -cE '^\[       OK' $f) ok; $(grep -E '^\[  (PASSED|FAILED)|ERROR SUMMARY|RACECHECK SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|differ|seed|rror" $f | grep -v "SUMMARY" | head -4; done | tee $R/summary.txt
el done
cd $OUT && tar czf r19a.tgz r && rm -rf r
