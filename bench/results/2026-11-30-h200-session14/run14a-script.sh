# session 14 call a: session 13's strip3 dynamic-tail script (patch applied to the tree) + tools/atoms_tput.cu
# bench/results/2026-11-30-h200-session13/s13-ecc3-tail.patch first): A/B against main (the patch reversed), strip3
# tests with the tail forced, memcheck.  Run on the GPU machine (carry .gpu): bash bench/results/2026-11-30-h200-session13/s13-ecc3-tail-script.sh
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
mkdir -p /tmp/alt && tar --exclude=./build-gpu -cf - . | tar -xf - -C /tmp/alt && (cd /tmp/alt && patch -s -p1 -R < bench/results/2026-11-30-h200-session13/s13-ecc3-tail.patch) || echo "alt tree failed"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/t/build.log 2>&1 || { tail -30 $R/t/build.log; exit 1; }
(cd /tmp/alt && cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > /tmp/alt-build.log 2>&1) || tail -5 /tmp/alt-build.log
el built
T=build-gpu/tests
run() { out=$1; lim=$2; shift 2; ( timeout $lim "$@" > $R/t/$out.txt 2>&1; echo "rc=$?" >> $R/t/$out.txt ) & }
run t-s3tail 150 env NDF_ECC3_TAIL=30 NDF_TEST_CASES=40 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc
run t-s3tc1 150 env NDF_ECC3_TAIL=60 NDF_ECC3_TAILC=1 NDF_TEST_CASES=30 NDF_TEST_SEED=77 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc
run t-def 150 env NDF_ECC3_TAIL=30 NDF_TEST_CASES=20 NDF_TEST_FILTER=test_gpu_deferred $T/test_gpu_ecc
run mc-s3 150 env NDF_ECC3_TAIL=30 NDF_TEST_CASES=1 NDF_TEST_SEED=76 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool memcheck $T/test_gpu_ecc
wait
el tests
for f in $R/t/t-*.txt $R/t/mc-*.txt; do echo "== $(basename $f) $(grep -cE '^\[       OK' $f) ok; $(grep -E '^\[  (PASSED|FAILED)|ERROR SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|differ|seed|rror" $f | grep -v "ERROR SUMMARY" | head -4; done | tee $R/summary.txt
B=build-gpu/bench/ndf_bench; A=/tmp/alt/build-gpu/bench/ndf_bench
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
bj timeout 60 $B --only ecc_float32_512x512x512 --check-max-mb 600 --reps 20 --deferred-errors
for i in 1 2; do
  for tl in 15 25 0; do bj env NDF_ECC3_TAIL=$tl timeout 60 $B --only ecc_float32_512x512x512 --no-check --reps 200 --deferred-errors; done
  bj env NDF_ECC3_TAIL=25 NDF_ECC3_TAILC=8 timeout 60 $B --only ecc_float32_512x512x512 --no-check --reps 200 --deferred-errors
  bj timeout 60 $A --only ecc_float32_512x512x512 --no-check --reps 200 --deferred-errors
  bj timeout 60 $B --only ecc_float32_256x256x256 --no-check --reps 200 --deferred-errors
  bj timeout 60 $A --only ecc_float32_256x256x256 --no-check --reps 200 --deferred-errors
done
el bench
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys,re
tag=''
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    if d['name'].startswith('##'):
        n=d['name']; tag='ALT' if '/tmp/alt' in n else (' '.join(re.findall(r'NDF_ECC3_\w+=\d+', n)) or 'cur'); continue
    print('%-36s %-32s %9s %s'%(tag, d['name'][:32], d.get('warm_ms'), d.get('check')))
PY
pr() { tag=$1; shift; echo "== $tag" >> $R/prof.txt; env NDF_ECC2_PROF=1 "$@" --no-check --reps 20 2>&1 >/dev/null | grep "ndf prof" | tail -1 >> $R/prof.txt; }
pr "512^3 tail15" timeout 60 $B --only ecc_float32_512x512x512 --deferred-errors
pr "512^3 main" timeout 60 $A --only ecc_float32_512x512x512 --deferred-errors
cat $R/prof.txt
nvcc -O3 -arch=sm_90 -o /tmp/at tools/atoms_tput.cu && /tmp/at | tee $R/atoms.txt
cd $OUT && tar czf s14a.tgz r && rm -rf r
