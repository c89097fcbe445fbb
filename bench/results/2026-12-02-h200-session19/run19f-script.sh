# run19f: 2-D uint8 / uint16 vector rows (this tree, N) against the tree before (M = 74df42e6da545c05d44e92d98f6eab99211a5f51: element loads; the
# integer binner in both).  float32 2-D as a check (identical code).  Tests: test_gpu_strip2, memcheck, racecheck.
# On the GPU machine (carry .gpu): bash bench/results/2026-12-02-h200-session19/run19f-script.sh
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
H=bench/results/2026-12-02-h200-session19
mkdir -p /tmp/M && tar --exclude=./build-gpu -cf - . | tar -xf - -C /tmp/M && (cd /tmp/M && patch -s -p1 < $H/to-prev-f.patch) || echo "tree M failed"
bld() { (cd $1 && cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > /tmp/build-$2.log 2>&1 || tail -20 /tmp/build-$2.log); }
bld . N & bld /tmp/M M & wait
el built
T=build-gpu/tests
run() { out=$1; lim=$2; shift 2; ( s=$(date +%s); timeout $lim "$@" > $R/t/$out.txt 2>&1; echo "rc=$? $(( $(date +%s) - s ))s" >> $R/t/$out.txt ) & }
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
pr() { tag=$1; shift; echo "== $tag" >> $R/prof.txt; env NDF_ECC2_PROF=1 "$@" --no-check --reps 20 2>&1 >/dev/null | grep "ndf prof" | tail -1 >> $R/prof.txt; }
for s in ecc_uint8_1024x1024 ecc_uint16_8192x8192 ecc_float32_1024x1024 ecc_float32_8192x8192_T; do
  bj timeout 100 build-gpu/bench/ndf_bench --only $s --check-max-mb 600 --reps 10
  for i in 1 2; do for X in /tmp/M .; do bj timeout 60 $X/build-gpu/bench/ndf_bench --only $s --no-check --reps 200 --deferred-errors; done; done
done
pr "uint16 8192^2 N" build-gpu/bench/ndf_bench --only ecc_uint16_8192x8192
pr "uint16 8192^2 M" /tmp/M/build-gpu/bench/ndf_bench --only ecc_uint16_8192x8192
pr "uint8 1024^2 N" build-gpu/bench/ndf_bench --only ecc_uint8_1024x1024
el bench
run t-s2 200 env NDF_TEST_CASES=80 NDF_TEST_SEED=1961 NDF_TEST_FILTER=test_gpu_strip2 $T/test_gpu_ecc
run mc-s2 200 env NDF_TEST_CASES=4 NDF_TEST_SEED=1962 NDF_TEST_FILTER=test_gpu_strip2 compute-sanitizer --tool memcheck $T/test_gpu_ecc
run rc-s2 200 env NDF_TEST_CASES=2 NDF_TEST_SEED=1963 NDF_TEST_FILTER=test_gpu_strip2 compute-sanitizer --tool racecheck $T/test_gpu_ecc
run t-ex 200 env NDF_TEST_SEED=1964 NDF_TEST_FILTER=test_gpu_exact_random $T/test_gpu_ecc
wait
el tests
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys
tag=''
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    if d['name'].startswith('##'):
        tag='M' if '/tmp/M' in d['name'] else 'N'; continue
    print('%-3s %-36s %9s %-8s %s'%(tag, d['name'][:36], d.get('warm_ms'), d.get('check'), d.get('kernels')))
PY
cat $R/prof.txt
for f in $R/t/*.txt; do echo "== $(basename $f) $(grep -cE '\[       OK' $f) ok; $(grep -E '\[  (PASSED|FAILED)|ERROR SUMMARY|RACECHECK SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|differ|seed|rror" $f | grep -v SUMMARY | head -4; done | tee $R/summary.txt
cd $OUT && tar czf r19f.tgz r && rm -rf r
