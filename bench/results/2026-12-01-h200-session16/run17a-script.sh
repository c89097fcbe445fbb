# run17a (PREPARED in session 16, NOT RUN; branch s16-ecc-rare): the binner's uncertified guesses corrected by passes
# against the threshold pairs (one pass for certified thresholds; shared-window pair loads) instead of 17 unrolled
# calls of ndf_ecc2_walk, and the certificate as the lane's least / greatest d (two FMNMX a voxel) instead of two
# compares and a bit a voxel.  Bound (run16g: walks and certificate left out): 512^3 0.440 -> 0.382, 256^3 0.078 ->
# 0.074 (staged 0.072), 8192^2 0.178 -> 0.144.  ptxas (nvcc, sm_90): ndf_ecc_strip3 12840 -> 10688 instructions,
# strip3s 18992 -> 15128 (spills 64/232 -> 40/100 bytes), strip3n spills 8/12 -> 0.  The ECC GPU tests (strip3,
# strip2, deferred, the bin knob's uncertified path), memcheck, every issue-8 workload A/B against main (s17a.patch
# reversed), profiles.  On the GPU machine, on the branch (carry .gpu):
# bash bench/results/2026-12-01-h200-session16/run17a-script.sh
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
P=bench/results/2026-12-01-h200-session16/s17a.patch
mkdir -p /tmp/alt && tar --exclude=./build-gpu -cf - . | tar -xf - -C /tmp/alt && (cd /tmp/alt && patch -s -p1 -R < $P) || echo "alt tree failed"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/t/build.log 2>&1 || { tail -30 $R/t/build.log; exit 1; }
(cd /tmp/alt && cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > /tmp/alt-build.log 2>&1) || tail -5 /tmp/alt-build.log
el built
T=build-gpu/tests
run() { out=$1; lim=$2; shift 2; ( timeout $lim "$@" > $R/t/$out.txt 2>&1; echo "rc=$?" >> $R/t/$out.txt ) & }
run t-ecc 220 env NDF_TEST_SEED=1701 $T/test_gpu_ecc
run t-s3 200 env NDF_TEST_CASES=80 NDF_TEST_SEED=1702 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc
run t-s3g 200 env NDF_ECC3_STG=1 NDF_TEST_CASES=40 NDF_TEST_SEED=1703 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc
run t-s2 200 env NDF_TEST_CASES=60 NDF_TEST_SEED=1704 NDF_TEST_FILTER=test_gpu_strip2 $T/test_gpu_ecc
run t-def 200 env NDF_TEST_CASES=40 NDF_TEST_SEED=1705 NDF_TEST_FILTER=test_gpu_deferred $T/test_gpu_ecc
run mc-s3 200 env NDF_ECC3_STG=1 NDF_TEST_CASES=4 NDF_TEST_SEED=1706 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool memcheck $T/test_gpu_ecc
run mc-s2 200 env NDF_TEST_CASES=3 NDF_TEST_SEED=1707 NDF_TEST_FILTER=test_gpu_strip2 compute-sanitizer --tool memcheck $T/test_gpu_ecc
wait
el tests
for f in $R/t/t-*.txt $R/t/mc-*.txt; do echo "== $(basename $f) $(grep -cE '^\[       OK' $f) ok; $(grep -E '^\[  (PASSED|FAILED)|ERROR SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|differ|seed|rror" $f | grep -v "SUMMARY" | head -4; done | tee $R/summary.txt
B=build-gpu/bench/ndf_bench; A=/tmp/alt/build-gpu/bench/ndf_bench
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
for s in ecc_float32_512x512x512 ecc_float32_256x256x256 ecc_tcons ecc_float32_128x128x128 ecc_float32_8192x8192 ecc_float32_1024x1024 ecc_float32_64x256x256_b1; do
  bj timeout 60 $B --only $s --check-max-mb 600 --reps 10 --deferred-errors
  for i in 1 2; do for X in $A $B; do bj timeout 60 $X --only $s --no-check --reps 200 --deferred-errors; done; done
  bj timeout 60 $B --only $s --no-check --reps 200
done
for i in 1 2; do for X in $A $B; do bj env NDF_ECC3_STG=1 timeout 60 $X --only ecc_float32_256x256x256 --no-check --reps 200 --deferred-errors; bj env NDF_ECC3_STG=0 timeout 60 $X --only ecc_float32_512x512x512 --no-check --reps 100 --deferred-errors; done; done
el bench
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys,re
tag=''
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    if d['name'].startswith('##'):
        tag=('OLD ' if '/tmp/alt' in d['name'] else 'new ')+('waiting ' if 'deferred' not in d['name'] else '')+' '.join(x.replace('NDF_ECC3_','') for x in re.findall(r'NDF_\w+=\w+', d['name'])); continue
    print('%-16s %-36s %9s %s'%(tag, d['name'][:36], d.get('warm_ms'), d.get('check')))
PY
pr() { tag=$1; shift; echo "== $tag" >> $R/prof.txt; env NDF_ECC2_PROF=1 "$@" --no-check --reps 20 2>&1 >/dev/null | grep "ndf prof" | tail -1 >> $R/prof.txt; }
for X in $A $B; do for s in 512x512x512 256x256x256; do pr "$s $X" timeout 60 $X --only ecc_float32_$s --deferred-errors; done; pr "256 stg1 $X" env NDF_ECC3_STG=1 timeout 60 $X --only ecc_float32_256x256x256 --deferred-errors; done
cat $R/prof.txt
el done
cd $OUT && tar czf r17a.tgz r && rm -rf r
