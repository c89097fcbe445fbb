# run10c: ndf_ecc_strip2t the 2-D default (T <= 320), NDF_ECC2_PROF stamps: tests + memcheck, the bench
# (default vs NDF_ECC_2D=strip2, MC sweep, uint8), per-phase block times of strip2t / strip2 / strip3
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/t/build.log 2>&1 || { tail -30 $R/t/build.log; exit 1; }
el built
T=build-gpu/tests
run() { out=$1; lim=$2; shift 2; ( timeout $lim "$@" > $R/t/$out.txt 2>&1; echo "rc=$?" >> $R/t/$out.txt ) & }
run t-s2 240 env NDF_TEST_CASES=120 NDF_TEST_FILTER=test_gpu_strip2 $T/test_gpu_ecc
run t-ecc 240 env NDF_TEST_CASES=2 $T/test_gpu_ecc
run mc-s2 240 env NDF_TEST_CASES=1 NDF_TEST_SEED=27 NDF_TEST_FILTER=test_gpu_strip2 compute-sanitizer --tool memcheck $T/test_gpu_ecc
run mc-s3 240 env NDF_TEST_CASES=1 NDF_TEST_SEED=28 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool memcheck $T/test_gpu_ecc
wait
el tests
for f in $R/t/t-*.txt $R/t/mc-*.txt; do echo "== $(basename $f) $(grep -cE '^\[       OK' $f) ok; $(grep -E '^\[  (PASSED|FAILED)|ERROR SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|differ|expected|seed|rror" $f | grep -v "ERROR SUMMARY" | head -4; done | tee $R/summary.txt
B=build-gpu/bench/ndf_bench
bj() { echo "{\"name\": \"## $(echo $* | grep -o 'NDF_[A-Z0-9_]*=[0-9a-z]*' | tr '\n' ' ')\"}" >> $R/bench.json; env "$@" >> $R/bench.json 2>> $R/bench.log; }
for s in ecc_float32_1024x1024 ecc_float32_64x256x256_b1 ecc_float32_8192x8192; do
  bj X=1 timeout 60 $B --only $s --check-max-mb 300 --reps 300
  bj NDF_ECC_2D=strip2 timeout 60 $B --only $s --no-check --reps 300
  bj X=2 timeout 60 $B --only $s --no-check --reps 300
  bj NDF_ECC_2D=strip2 timeout 60 $B --only $s --no-check --reps 300
done
for mc in 2 4 16; do for s in ecc_float32_1024x1024 ecc_float32_64x256x256_b1 ecc_float32_8192x8192; do bj NDF_ECC2_MC=$mc timeout 60 $B --only $s --no-check --reps 300; done; done
bj X=1 timeout 60 $B --op ecc --dtype uint8 --shape 64x256x256 --batch-dims 1 --size 256 --reps 300
bj NDF_ECC_2D=strip2 timeout 60 $B --op ecc --dtype uint8 --shape 64x256x256 --batch-dims 1 --size 256 --no-check --reps 300
bj X=1 timeout 60 $B --only ecc_float32_256x256x256 --no-check --reps 300
el bench
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    print('%-46s %9s %s %s %s'%(d['name'], d.get('warm_ms'), d.get('host_us'), d.get('check'), d.get('kernels','')))
PY
pr() { tag=$1; shift; echo "== $tag" >> $R/prof.txt; env NDF_ECC2_PROF=1 "$@" --no-check --reps 20 2>&1 >/dev/null | grep "ndf prof" | tail -3 >> $R/prof.txt; }
for s in ecc_float32_1024x1024 ecc_float32_64x256x256_b1 ecc_float32_8192x8192; do
  pr "$s tele" timeout 60 $B --only $s
  pr "$s strip2" env NDF_ECC_2D=strip2 timeout 60 $B --only $s
done
pr "256^3 strip3" timeout 60 $B --only ecc_float32_256x256x256
pr "512^3 strip3" timeout 60 $B --only ecc_float32_512x512x512
pr "128^3 strip3" timeout 60 $B --only ecc_float32_128x128x128
cat $R/prof.txt
el prof
cd $OUT && tar czf r10c.tgz r && rm -rf r
