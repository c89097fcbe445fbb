# run18f: branch s18-ecc-range2d -- 2-D ECC over a given range without phase 1 (ndf_ecc_strip2t's RNG
# specialization, as strip3's).  Bench: the 2-D _range workloads (N) against s18-ecc-range (M: the paths before
# for a 2-D range), the 2-D [min, max] workloads A/B (RNG 0: same code expected), 256^3 range (N); tests: the full
# ECC GPU test, strip2 (a third of the float32 cases over a range), deferred, memcheck / racecheck of strip2, NaN.
# On the GPU machine, on s18-ecc-range2d (carry .gpu): bash bench/results/2026-12-01-h200-session18/run18f-script.sh
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
H=bench/results/2026-12-01-h200-session18
mkdir -p /tmp/M && tar --exclude=./build-gpu -cf - . | tar -xf - -C /tmp/M && (cd /tmp/M && patch -s -p1 < $H/to-s18.patch) || echo "tree M failed"
bld() { (cd $1 && cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > /tmp/build-$2.log 2>&1 || tail -20 /tmp/build-$2.log); }
bld . N & bld /tmp/M M & wait
el built
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
V="/tmp/M ."
for s in ecc_range_float32_1024x1024 ecc_range_float32_8192x8192 ecc_range_float32_64x256x256_b1; do
  bj timeout 60 build-gpu/bench/ndf_bench --only $s --check-max-mb 600 --reps 10 --deferred-errors
  for i in 1 2; do for X in $V; do bj timeout 60 $X/build-gpu/bench/ndf_bench --only $s --no-check --reps 300 --deferred-errors; done; done
  bj timeout 60 build-gpu/bench/ndf_bench --only $s --no-check --reps 300
done
for s in ecc_float32_1024x1024 ecc_float32_8192x8192 ecc_float32_64x256x256_b1; do
  for X in $V; do bj timeout 60 $X/build-gpu/bench/ndf_bench --only $s --no-check --reps 300 --deferred-errors; done
done
bj timeout 60 build-gpu/bench/ndf_bench --only ecc_range_float32_256x256x256 --no-check --reps 200 --deferred-errors
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
pr() { tag=$1; shift; echo "== $tag" >> $R/prof.txt; env NDF_ECC2_PROF=1 "$@" --no-check --reps 20 2>&1 >/dev/null | grep "ndf prof" | tail -1 >> $R/prof.txt; }
for s in ecc_range_float32_1024x1024 ecc_float32_1024x1024 ecc_range_float32_8192x8192; do pr "$s" timeout 60 build-gpu/bench/ndf_bench --only $s --deferred-errors; done
cat $R/prof.txt
el prof
T=build-gpu/tests
run() { out=$1; lim=$2; shift 2; ( s=$(date +%s); timeout $lim "$@" > $R/t/$out.txt 2>&1; echo "rc=$? $(( $(date +%s) - s ))s" >> $R/t/$out.txt ) & }
run t-ecc 190 env NDF_TEST_SEED=1861 $T/test_gpu_ecc
run t-s2 170 env NDF_TEST_CASES=60 NDF_TEST_SEED=1862 NDF_TEST_FILTER=test_gpu_strip2 $T/test_gpu_ecc
run t-def 170 env NDF_TEST_CASES=40 NDF_TEST_SEED=1865 NDF_TEST_FILTER=test_gpu_deferred $T/test_gpu_ecc
run mc-s2 170 env NDF_TEST_CASES=4 NDF_TEST_SEED=1866 NDF_TEST_FILTER=test_gpu_strip2 compute-sanitizer --tool memcheck $T/test_gpu_ecc
run rc-s2 170 env NDF_TEST_CASES=2 NDF_TEST_SEED=1867 NDF_TEST_FILTER=test_gpu_strip2 compute-sanitizer --tool racecheck $T/test_gpu_ecc
run mc-nan 170 env NDF_TEST_FILTER=test_gpu_nan_rejected compute-sanitizer --tool memcheck $T/test_gpu_ecc
wait
el tests
for f in $R/t/*.txt; do echo "== $(basename $f) $(grep -cE '^\[       OK' $f) ok; $(grep -E '^\[  (PASSED|FAILED)|ERROR SUMMARY|RACECHECK SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|differ|seed|rror" $f | grep -v "SUMMARY" | head -4; done | tee $R/summary.txt
el done
cd $OUT && tar czf r18f.tgz r && rm -rf r
