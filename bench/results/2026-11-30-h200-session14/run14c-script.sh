# run14c (tree 953d7ae): NDF_ECC3_W=8 (ndf_ecc_strip3n, 3 blocks/SM) against the default W=16 at 512^3 / 256^3 /
# 128^3 / T-construction; NDF_ECC2_PROF_DUMP per-block SM, stamps and strip3 warps' march ends; memcheck of the dump path
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/t/build.log 2>&1 || { tail -30 $R/t/build.log; exit 1; }
el built
B=build-gpu/bench/ndf_bench
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
for s in ecc_float32_512x512x512 ecc_float32_256x256x256 ecc_tcons ecc_float32_128x128x128; do
  bj env NDF_ECC3_W=8 timeout 60 $B --only $s --check-max-mb 600 --reps 20 --deferred-errors
  for i in 1 2; do
    bj timeout 60 $B --only $s --no-check --reps 200 --deferred-errors
    bj env NDF_ECC3_W=8 timeout 60 $B --only $s --no-check --reps 200 --deferred-errors
  done
done
el bench
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys,re
tag=''
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    if d['name'].startswith('##'):
        tag=' '.join(re.findall(r'NDF_\w+=\w+', d['name'])) or 'cur'; continue
    print('%-14s %-36s %9s %s'%(tag, d['name'][:36], d.get('warm_ms'), d.get('check')))
PY
pr() { tag=$1; shift; echo "== $tag" >> $R/prof.txt; env NDF_ECC2_PROF=1 NDF_ECC2_PROF_DUMP=$R/dump-${tag// /_}.txt "$@" --no-check --reps 3 2>&1 >/dev/null | grep "ndf prof" | tail -1 >> $R/prof.txt; }
for s in 512x512x512 256x256x256; do
  pr "$s W16" timeout 60 $B --only ecc_float32_$s --deferred-errors
  pr "$s W16 again" timeout 60 $B --only ecc_float32_$s --deferred-errors
  pr "$s W8" env NDF_ECC3_W=8 timeout 60 $B --only ecc_float32_$s --deferred-errors
done
cat $R/prof.txt
timeout 200 env NDF_ECC2_PROF=1 NDF_ECC2_PROF_DUMP=/tmp/d.txt NDF_TEST_CASES=1 NDF_TEST_SEED=9 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool memcheck build-gpu/tests/test_gpu_ecc > $R/t/mc-prof.txt 2>&1; echo "rc=$?" >> $R/t/mc-prof.txt; grep -E "ERROR SUMMARY|PASSED|FAILED|rc=" $R/t/mc-prof.txt
el done
cd $OUT && tar czf r14c.tgz r && rm -rf r
