# run18d: the range kernels staged (ndf_ecc_strip3s, the default from 2^26 voxels) or not, at 512^3 and 256^3
# (run18c: the staged march over a range 252 us median against 223 over [min, max]).  On the GPU machine, on
# s18-ecc-range (carry .gpu): bash bench/results/2026-12-01-h200-session18/run18d-script.sh
source .gpu/env.sh
R=$OUT/r; mkdir -p $R
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > /tmp/build.log 2>&1 || tail -20 /tmp/build.log
el built
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
B=build-gpu/bench/ndf_bench
for s in ecc_range_float32_512x512x512 ecc_range_float32_256x256x256 ecc_float32_512x512x512; do
  for i in 1 2; do for g in 0 1; do bj env NDF_ECC3_STG=$g timeout 60 $B --only $s --no-check --reps 200 --deferred-errors; done; done
done
el bench
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys,re
tag=''
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    if d['name'].startswith('##'): tag=' '.join(re.findall(r'NDF_\w+=\w+', d['name'])); continue
    print('%-16s %-40s %9s'%(tag, d['name'][:40], d.get('warm_ms')))
PY
pr() { tag=$1; shift; echo "== $tag" >> $R/prof.txt; env NDF_ECC2_PROF=1 "$@" --no-check --reps 20 2>&1 >/dev/null | grep "ndf prof" | tail -1 >> $R/prof.txt; }
for g in 0 1; do pr "512 range STG=$g" env NDF_ECC3_STG=$g timeout 60 $B --only ecc_range_float32_512x512x512 --deferred-errors; done
cat $R/prof.txt
el done
cd $OUT && tar czf r18d.tgz r && rm -rf r
