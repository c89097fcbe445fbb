# run14f (tree with block columns): NDF_ECC3_W=8 (ndf_ecc_strip3n, 3 blocks/SM; block columns apply where
# 8-column tiles come in eights) against W=16, 512^3 / 256^3 / T-cons / 128^3; strip3 tests under W=8
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/t/build.log 2>&1 || { tail -30 $R/t/build.log; exit 1; }
el built
T=build-gpu/tests
( timeout 200 env NDF_ECC3_W=8 NDF_TEST_CASES=40 NDF_TEST_SEED=88 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc > $R/t/t-s3w8.txt 2>&1; echo "rc=$?" >> $R/t/t-s3w8.txt ) &
B=build-gpu/bench/ndf_bench
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
for s in ecc_float32_512x512x512 ecc_float32_256x256x256 ecc_tcons ecc_float32_128x128x128; do
  bj env NDF_ECC3_W=8 timeout 60 $B --only $s --check-max-mb 600 --reps 20 --deferred-errors
  for i in 1 2; do
    bj timeout 60 $B --only $s --no-check --reps 200 --deferred-errors
    bj env NDF_ECC3_W=8 timeout 60 $B --only $s --no-check --reps 200 --deferred-errors
  done
done
wait
el bench
grep -E '^\[  (PASSED|FAILED)|^rc=' $R/t/t-s3w8.txt
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys,re
tag=''
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    if d['name'].startswith('##'):
        tag=' '.join(re.findall(r'NDF_\w+=\w+', d['name'])) or 'cur'; continue
    print('%-16s %-36s %9s %s'%(tag, d['name'][:36], d.get('warm_ms'), d.get('check')))
PY
env NDF_ECC2_PROF=1 NDF_ECC3_W=8 timeout 60 $B --only ecc_float32_512x512x512 --deferred-errors --no-check --reps 20 2>&1 >/dev/null | grep "ndf prof" | tail -1 | tee $R/prof.txt
cd $OUT && tar czf r14f.tgz r && rm -rf r
