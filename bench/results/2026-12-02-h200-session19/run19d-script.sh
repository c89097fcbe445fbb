# run19d: uint8 / uint16 ECC on the telescoped kernels -- the exact integer binner (1b18296; strip3 and strip2t) and
# strip3's vector loads for them (5844d12) -- against the tree before (M = 6103694: the FFMA guess, never certified
# on integer thresholds, and element loads; run19c: uint8 256^3 by strip3 0.212 ms, phase 1 71 us, march 102), and
# against the default 3-D path (ndf_ecc_rows, 0.120).  3-D by NDF_ECC_3D=strip3 (still opt-in), 2-D by default
# (strip2t).  Tests: test_gpu_strip3 (uint8 / uint16 cases run strip3) and test_gpu_strip2, memcheck / racecheck.
# On the GPU machine (carry .gpu): bash bench/results/2026-12-02-h200-session19/run19d-script.sh
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
H=bench/results/2026-12-02-h200-session19
mkdir -p /tmp/M && tar --exclude=./build-gpu -cf - . | tar -xf - -C /tmp/M && (cd /tmp/M && patch -s -p1 < $H/to-6103694.patch) || echo "tree M failed"
bld() { (cd $1 && cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > /tmp/build-$2.log 2>&1 || tail -20 /tmp/build-$2.log); }
bld . N & bld /tmp/M M & wait
el built
T=build-gpu/tests
run() { out=$1; lim=$2; shift 2; ( s=$(date +%s); timeout $lim "$@" > $R/t/$out.txt 2>&1; echo "rc=$? $(( $(date +%s) - s ))s" >> $R/t/$out.txt ) & }
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
pr() { tag=$1; shift; echo "== $tag" >> $R/prof.txt; env NDF_ECC2_PROF=1 "$@" --no-check --reps 20 2>&1 >/dev/null | grep "ndf prof" | tail -1 >> $R/prof.txt; }
S3="env NDF_ECC_3D=strip3"
for s in ecc_uint8_256x256x256 ecc_uint16_256x256x256 ecc_uint8_512x512x512; do
  bj timeout 100 $S3 build-gpu/bench/ndf_bench --only $s --check-max-mb 600 --reps 10
  for X in /tmp/M .; do bj timeout 60 $S3 $X/build-gpu/bench/ndf_bench --only $s --no-check --reps 200; done
  bj timeout 60 $S3 NDF_ECC3_W=8 build-gpu/bench/ndf_bench --only $s --no-check --reps 200
  bj timeout 60 build-gpu/bench/ndf_bench --only $s --no-check --reps 200
  pr "$s strip3" $S3 build-gpu/bench/ndf_bench --only $s
  pr "$s strip3 W8" $S3 NDF_ECC3_W=8 build-gpu/bench/ndf_bench --only $s
done
for s in ecc_uint8_1024x1024 ecc_uint16_8192x8192 ecc_float32_256x256x256_T ecc_float32_1024x1024; do
  bj timeout 100 build-gpu/bench/ndf_bench --only $s --check-max-mb 600 --reps 10
  for X in /tmp/M .; do bj timeout 60 $X/build-gpu/bench/ndf_bench --only $s --no-check --reps 200 --deferred-errors; done
done
pr "uint8 1024^2" build-gpu/bench/ndf_bench --only ecc_uint8_1024x1024
el bench
run t-s3 200 env NDF_TEST_CASES=100 NDF_TEST_SEED=1941 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc
run t-s2 200 env NDF_TEST_CASES=80 NDF_TEST_SEED=1942 NDF_TEST_FILTER=test_gpu_strip2 $T/test_gpu_ecc
run mc-s3 200 env NDF_TEST_CASES=6 NDF_TEST_SEED=1943 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool memcheck $T/test_gpu_ecc
run rc-s3 200 env NDF_TEST_CASES=2 NDF_TEST_SEED=1944 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool racecheck $T/test_gpu_ecc
wait
el tests
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys,re
tag=''
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    if d['name'].startswith('##'):
        n=d['name']; tag=('M ' if '/tmp/M' in n else 'N ')+('W8 ' if 'W=8' in n else '')+('s3' if 'strip3' in n else 'def'); continue
    print('%-10s %-36s %9s %-8s %s'%(tag, d['name'][:36], d.get('warm_ms'), d.get('check'), d.get('kernels')))
PY
cat $R/prof.txt
for f in $R/t/*.txt; do echo "== $(basename $f) $(grep -cE '\[       OK' $f) ok; $(grep -E '\[  (PASSED|FAILED)|ERROR SUMMARY|RACECHECK SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|differ|seed|rror" $f | grep -v SUMMARY | head -4; done | tee $R/summary.txt
cd $OUT && tar czf r19d.tgz r && rm -rf r
