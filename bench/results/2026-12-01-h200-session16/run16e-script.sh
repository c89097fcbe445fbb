# run16e: main as it stands (56cea38 + this session's records; no kernel change this session): the ECC GPU tests,
# strip3 (staged) under memcheck, every issue-8 workload (3-D, 2-D, soft) deferred and waiting, profiles at 256^3
# and 512^3.  On the GPU machine (carry .gpu): bash bench/results/2026-12-01-h200-session16/run16e-script.sh
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/t/build.log 2>&1 || { tail -30 $R/t/build.log; exit 1; }
el built
T=build-gpu/tests
run() { out=$1; lim=$2; shift 2; ( timeout $lim "$@" > $R/t/$out.txt 2>&1; echo "rc=$?" >> $R/t/$out.txt ) & }
run t-ecc 220 env NDF_TEST_SEED=1651 $T/test_gpu_ecc
run t-s3 200 env NDF_TEST_CASES=80 NDF_TEST_SEED=1652 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc
run t-s2 200 env NDF_TEST_CASES=40 NDF_TEST_SEED=1653 NDF_TEST_FILTER=test_gpu_strip2 $T/test_gpu_ecc
run mc-s3 200 env NDF_ECC3_STG=1 NDF_TEST_CASES=4 NDF_TEST_SEED=1654 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool memcheck $T/test_gpu_ecc
wait
el tests
for f in $R/t/t-*.txt $R/t/mc-*.txt; do echo "== $(basename $f) $(grep -cE '^\[       OK' $f) ok; $(grep -E '^\[  (PASSED|FAILED)|ERROR SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|differ|seed|rror" $f | grep -v "SUMMARY" | head -4; done | tee $R/summary.txt
B=build-gpu/bench/ndf_bench
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
for s in ecc_float32_512x512x512 ecc_float32_256x256x256 ecc_tcons ecc_float32_128x128x128 ecc_float32_8192x8192 ecc_float32_1024x1024 ecc_float32_64x256x256_b1 soft_ecc_float32_64x256x256; do
  bj timeout 60 $B --only $s --check-max-mb 600 --reps 20 --deferred-errors
  for i in 1 2; do bj timeout 60 $B --only $s --no-check --reps 300 --deferred-errors; done
  bj timeout 60 $B --only $s --no-check --reps 300
done
el bench
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys,re
mode=''
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    if d['name'].startswith('##'):
        mode='deferred' if 'deferred' in d['name'] else 'waiting'; continue
    print('%-9s %-40s %9s %s'%(mode, d['name'][:40], d.get('warm_ms'), d.get('check')))
PY
pr() { tag=$1; shift; echo "== $tag" >> $R/prof.txt; env NDF_ECC2_PROF=1 "$@" --no-check --reps 20 2>&1 >/dev/null | grep "ndf prof" | tail -1 >> $R/prof.txt; }
for s in 512x512x512 256x256x256; do pr $s timeout 60 $B --only ecc_float32_$s --deferred-errors; done
cat $R/prof.txt
el done
cd $OUT && tar czf r16e.tgz r && rm -rf r
