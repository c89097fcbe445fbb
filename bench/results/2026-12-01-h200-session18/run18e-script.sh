# run18e: the size rule for the range kernels staged from 2^24 voxels (run18d) -- the defaults at 256^3 / 512^3
# (staged now), 128^3 staged or not (below the rule; not measured before), waiting; strip3 tests with
# NDF_ECC3_STG=1 (the staged range kernel).  On the GPU machine, on s18-ecc-range (carry .gpu):
# bash bench/results/2026-12-01-h200-session18/run18e-script.sh
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > /tmp/build.log 2>&1 || tail -20 /tmp/build.log
el built
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
B=build-gpu/bench/ndf_bench
for s in ecc_range_float32_256x256x256 ecc_tcons_range ecc_range_float32_512x512x512; do
  bj timeout 60 $B --only $s --check-max-mb 600 --reps 10 --deferred-errors
  for i in 1 2; do bj timeout 60 $B --only $s --no-check --reps 200 --deferred-errors; done
  bj timeout 60 $B --only $s --no-check --reps 200
done
for i in 1 2; do for g in 0 1; do bj env NDF_ECC3_STG=$g timeout 60 $B --only ecc_range_float32_128x128x128 --no-check --reps 200 --deferred-errors; done; done
el bench
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys,re
tag=''
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    if d['name'].startswith('##'): tag=' '.join(re.findall(r'NDF_\w+=\w+', d['name'])) + (' waiting' if 'deferred' not in d['name'] else ''); continue
    print('%-16s %-40s %9s %s'%(tag, d['name'][:40], d.get('warm_ms'), d.get('check')))
PY
pr() { tag=$1; shift; echo "== $tag" >> $R/prof.txt; env NDF_ECC2_PROF=1 "$@" --no-check --reps 20 2>&1 >/dev/null | grep "ndf prof" | tail -1 >> $R/prof.txt; }
pr "256 range default" timeout 60 $B --only ecc_range_float32_256x256x256 --deferred-errors
cat $R/prof.txt
T=build-gpu/tests
( timeout 120 env NDF_ECC3_STG=1 NDF_TEST_CASES=40 NDF_TEST_SEED=1831 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc > $R/t/t-s3g.txt 2>&1; echo "rc=$?" >> $R/t/t-s3g.txt ) &
( timeout 120 env NDF_TEST_FILTER=test_gpu_benchmark_shapes $T/test_gpu_ecc > $R/t/t-bs.txt 2>&1; echo "rc=$?" >> $R/t/t-bs.txt ) &
wait
for f in $R/t/*.txt; do echo "== $(basename $f) $(grep -E '^\[  (PASSED|FAILED)|^rc=' $f | tr '\n' ' ')"; done
el done
cd $OUT && tar czf r18e.tgz r && rm -rf r
