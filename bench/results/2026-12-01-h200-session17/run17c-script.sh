# run17c: the branch s16-ecc-rare (binner passes, merged as s17-merge) with a tighter certificate D = T 2^-22 +
# 5 (|a| + |b|) ga 2^-24 + 2^-21 (was T 2^-20 + (|a| + |b|) ga 2^-21 + 2^-22: 2.66x larger at T = 256 over
# [-1000, 1000); tools/emu/ecc_cert_check.cpp: no wrong certified bin), A/B against main's kernel (M), main's
# kernel with the new D (MD) and the branch with the old D (B); this tree is B+D.  The ECC GPU tests on B+D
# (strip3 with the test's many-images cases made small: run17b), memcheck; every issue-8 workload; profiles.
# On the GPU machine, on s17-merge (carry .gpu): bash bench/results/2026-12-01-h200-session17/run17c-script.sh
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
H=bench/results/2026-12-01-h200-session17
for v in M MD B; do mkdir -p /tmp/$v && tar --exclude=./build-gpu -cf - . | tar -xf - -C /tmp/$v && (cd /tmp/$v && patch -s -p1 < $H/to-$v.patch) || echo "tree $v failed"; done
bld() { (cd $1 && cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > /tmp/build-$2.log 2>&1 || tail -20 /tmp/build-$2.log); }
bld . BD & bld /tmp/M M & bld /tmp/MD MD & bld /tmp/B B & wait
el built
T=build-gpu/tests
run() { out=$1; lim=$2; shift 2; ( s=$(date +%s); timeout $lim "$@" > $R/t/$out.txt 2>&1; echo "rc=$? $(( $(date +%s) - s ))s" >> $R/t/$out.txt ) & }
run t-ecc 220 env NDF_TEST_SEED=1711 $T/test_gpu_ecc
run t-s3 200 env NDF_TEST_CASES=80 NDF_TEST_SEED=1702 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc
run t-s3b 200 env NDF_TEST_CASES=80 NDF_TEST_SEED=1712 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc
run t-s3g 200 env NDF_ECC3_STG=1 NDF_TEST_CASES=40 NDF_TEST_SEED=1713 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc
run t-s2 200 env NDF_TEST_CASES=60 NDF_TEST_SEED=1714 NDF_TEST_FILTER=test_gpu_strip2 $T/test_gpu_ecc
run t-def 200 env NDF_TEST_CASES=40 NDF_TEST_SEED=1715 NDF_TEST_FILTER=test_gpu_deferred $T/test_gpu_ecc
run mc-s3 200 env NDF_TEST_CASES=4 NDF_TEST_SEED=1716 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool memcheck $T/test_gpu_ecc
run mc-s2 200 env NDF_TEST_CASES=3 NDF_TEST_SEED=1717 NDF_TEST_FILTER=test_gpu_strip2 compute-sanitizer --tool memcheck $T/test_gpu_ecc
wait
el tests
for f in $R/t/t-*.txt $R/t/mc-*.txt; do echo "== $(basename $f) $(grep -cE '^\[       OK' $f) ok; $(grep -E '^\[  (PASSED|FAILED)|ERROR SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|differ|seed|rror" $f | grep -v "SUMMARY" | head -4; done | tee $R/summary.txt
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
V="/tmp/M /tmp/MD /tmp/B ."
for s in ecc_float32_512x512x512 ecc_float32_256x256x256 ecc_tcons ecc_float32_128x128x128 ecc_float32_8192x8192 ecc_float32_1024x1024 ecc_float32_64x256x256_b1; do
  bj timeout 60 build-gpu/bench/ndf_bench --only $s --check-max-mb 600 --reps 10 --deferred-errors
  for i in 1 2; do for X in $V; do bj timeout 60 $X/build-gpu/bench/ndf_bench --only $s --no-check --reps 200 --deferred-errors; done; done
  bj timeout 60 build-gpu/bench/ndf_bench --only $s --no-check --reps 200
done
for i in 1 2; do for X in /tmp/M .; do bj env NDF_ECC3_STG=1 timeout 60 $X/build-gpu/bench/ndf_bench --only ecc_float32_256x256x256 --no-check --reps 200 --deferred-errors; done; done
el bench
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys,re
tag=''
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    if d['name'].startswith('##'):
        m=re.search(r'/tmp/(\w+)/', d['name']); v=m.group(1) if m else 'BD'
        tag=v+(' waiting' if 'deferred' not in d['name'] else '')+' '+' '.join(x.replace('NDF_ECC3_','') for x in re.findall(r'NDF_\w+=\w+', d['name'])); continue
    print('%-14s %-36s %9s %s'%(tag, d['name'][:36], d.get('warm_ms'), d.get('check')))
PY
pr() { tag=$1; shift; echo "== $tag" >> $R/prof.txt; env NDF_ECC2_PROF=1 "$@" --no-check --reps 20 2>&1 >/dev/null | grep "ndf prof" | tail -1 >> $R/prof.txt; }
for X in /tmp/M /tmp/B .; do for s in 512x512x512 256x256x256; do pr "$s $X" timeout 60 $X/build-gpu/bench/ndf_bench --only ecc_float32_$s --deferred-errors; done; done
cat $R/prof.txt
el done
cd $OUT && tar czf r17c.tgz r && rm -rf r
