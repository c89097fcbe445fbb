# run18c: s18-ecc-range with the given range as its own specialization (slot RNG; run18b had its binner pass in
# every kernel: [min, max] 2-3% slower).  Bench: every issue-8 [min, max] workload against main's kernel and
# runtime (M: expected level now), the _range workloads again, profiles (range 512^3 staged: stamps fixed);
# tests: the full ECC GPU test, strip3 (a third of the float32 cases over a range) default and staged, deferred,
# memcheck of strip3 and of the NaN cases, racecheck of strip3, test_nvrtc (the RNG family compiles).
# On the GPU machine, on s18-ecc-range (carry .gpu): bash bench/results/2026-12-01-h200-session18/run18c-script.sh
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
H=bench/results/2026-12-01-h200-session18
mkdir -p /tmp/M && tar --exclude=./build-gpu -cf - . | tar -xf - -C /tmp/M && (cd /tmp/M && patch -s -p1 < $H/to-main-c.patch) || echo "tree M failed"
bld() { (cd $1 && cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > /tmp/build-$2.log 2>&1 || tail -20 /tmp/build-$2.log); }
bld . N & bld /tmp/M M & wait
el built
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
V="/tmp/M ."
for s in ecc_float32_512x512x512 ecc_float32_256x256x256 ecc_tcons_float32 ecc_float32_128x128x128 ecc_float32_8192x8192 ecc_float32_1024x1024 ecc_float32_64x256x256_b1; do
  for i in 1 2; do for X in $V; do bj timeout 60 $X/build-gpu/bench/ndf_bench --only $s --no-check --reps 200 --deferred-errors; done; done
done
el bench-minmax
for s in ecc_range_float32_256x256x256 ecc_tcons_range ecc_range_float32_512x512x512 ecc_range_float32_128x128x128; do
  bj timeout 60 build-gpu/bench/ndf_bench --only $s --check-max-mb 600 --reps 10 --deferred-errors
  for i in 1 2; do bj timeout 60 build-gpu/bench/ndf_bench --only $s --no-check --reps 200 --deferred-errors; done
  bj timeout 60 build-gpu/bench/ndf_bench --only $s --no-check --reps 200
done
el bench-range
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
for s in ecc_range_float32_256x256x256 ecc_range_float32_512x512x512 ecc_float32_512x512x512; do pr "$s" timeout 60 build-gpu/bench/ndf_bench --only $s --deferred-errors; done
cat $R/prof.txt
el prof
T=build-gpu/tests
run() { out=$1; lim=$2; shift 2; ( s=$(date +%s); timeout $lim "$@" > $R/t/$out.txt 2>&1; echo "rc=$? $(( $(date +%s) - s ))s" >> $R/t/$out.txt ) & }
run t-ecc 200 env NDF_TEST_SEED=1821 $T/test_gpu_ecc
run t-s3 170 env NDF_TEST_CASES=80 NDF_TEST_SEED=1822 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc
run t-s3g 170 env NDF_ECC3_STG=1 NDF_TEST_CASES=40 NDF_TEST_SEED=1823 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc
run t-def 170 env NDF_TEST_CASES=40 NDF_TEST_SEED=1825 NDF_TEST_FILTER=test_gpu_deferred $T/test_gpu_ecc
run mc-s3 170 env NDF_TEST_CASES=8 NDF_TEST_SEED=1826 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool memcheck $T/test_gpu_ecc
run mc-s3g 170 env NDF_ECC3_STG=1 NDF_TEST_CASES=6 NDF_TEST_SEED=1828 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool memcheck $T/test_gpu_ecc
run rc-s3 170 env NDF_TEST_CASES=4 NDF_TEST_SEED=1827 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool racecheck $T/test_gpu_ecc
run mc-nan 170 env NDF_TEST_FILTER=test_gpu_nan_rejected compute-sanitizer --tool memcheck $T/test_gpu_ecc
wait
el tests
for f in $R/t/*.txt; do echo "== $(basename $f) $(grep -cE '^\[       OK' $f) ok; $(grep -E '^\[  (PASSED|FAILED)|ERROR SUMMARY|RACECHECK SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|differ|seed|rror" $f | grep -v "SUMMARY" | head -4; done | tee $R/summary.txt
el done
cd $OUT && tar czf r18c.tgz r && rm -rf r
