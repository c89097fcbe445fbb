# run19c: (1) compute-sanitizer racecheck and memcheck of a given range's batch end (merged from s18-batch-end)
# through the CLI on batches of 2-D (strip2t) and 3-D (strip3) float32 images over a range, GPU output against
# the CPU's; (2) where uint8 / uint16 3-D ECC stands: 256^3 T=256 [min, max] by the default (ndf_ecc_rows) and
# by NDF_ECC_3D=strip3 (unstaged; the march's element loads and, for uint8 over [0, 255], thresholds on
# integers that the FFMA binner never certifies), with the strip kernels' profile.
# On the GPU machine (carry .gpu): bash bench/results/2026-12-02-h200-session19/run19c-script.sh
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > /tmp/build.log 2>&1 || tail -20 /tmp/build.log
el built
N=build-gpu/tools/ndforge; D=/tmp/cli; mkdir -p $D
python3 - $D <<'PY'
import numpy as np, sys
d = sys.argv[1]; r = np.random.default_rng(1931)
np.save(d + '/b2.npy', r.uniform(-1, 1, (8, 96, 96)).astype(np.float32))
np.save(d + '/b3.npy', r.uniform(-1, 1, (4, 40, 40, 40)).astype(np.float32))
PY
for b in b2 b3; do
  for cons in V T; do
    $N ecc $D/$b.npy $D/$b-$cons-cpu.npy --range -0.75,0.9 --batch-dims 1 --construction $cons --device cpu
    $N ecc $D/$b.npy $D/$b-$cons-gpu.npy --range -0.75,0.9 --batch-dims 1 --construction $cons --device cuda
  done
  ( timeout 200 compute-sanitizer --tool racecheck $N ecc $D/$b.npy $D/$b-rc.npy --range -0.75,0.9 --batch-dims 1 --device cuda > $R/t/rc-$b.txt 2>&1; echo "rc=$?" >> $R/t/rc-$b.txt ) &
  ( timeout 200 compute-sanitizer --tool memcheck $N ecc $D/$b.npy $D/$b-mc.npy --range -0.75,0.9 --batch-dims 1 --device cuda > $R/t/mc-$b.txt 2>&1; echo "rc=$?" >> $R/t/mc-$b.txt ) &
done
wait
python3 - $D <<'PY' | tee $R/cli-compare.txt
import numpy as np, sys
d = sys.argv[1]
for b in ('b2', 'b3'):
    for c in ('V-cpu', 'V-gpu', 'T-cpu', 'T-gpu', 'rc', 'mc'):
        pass
    for cons in 'VT':
        a = np.load(f'{d}/{b}-{cons}-cpu.npy'); g = np.load(f'{d}/{b}-{cons}-gpu.npy')
        print(b, cons, a.shape, 'equal' if np.array_equal(a, g) else 'DIFFER', 'chi range', a.min(), a.max())
    for s in ('rc', 'mc'):
        g = np.load(f'{d}/{b}-{s}.npy'); a = np.load(f'{d}/{b}-V-cpu.npy')
        print(b, s, 'equal' if np.array_equal(a, g) else 'DIFFER')
PY
el cli
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
pr() { tag=$1; shift; echo "== $tag" >> $R/prof.txt; env NDF_ECC2_PROF=1 "$@" --no-check --reps 20 2>&1 >/dev/null | grep "ndf prof" | tail -1 >> $R/prof.txt; }
for s in ecc_uint8_256x256x256 ecc_uint16_256x256x256; do
  bj timeout 100 build-gpu/bench/ndf_bench --only $s --check-max-mb 600 --reps 10
  bj timeout 60 build-gpu/bench/ndf_bench --only $s --no-check --reps 200 --deferred-errors
  bj timeout 100 env NDF_ECC_3D=strip3 build-gpu/bench/ndf_bench --only $s --check-max-mb 600 --reps 10
  bj timeout 60 env NDF_ECC_3D=strip3 build-gpu/bench/ndf_bench --only $s --no-check --reps 200 --deferred-errors
  pr "$s strip3" env NDF_ECC_3D=strip3 build-gpu/bench/ndf_bench --only $s
  pr "$s strip3 W8" env NDF_ECC_3D=strip3 NDF_ECC3_W=8 build-gpu/bench/ndf_bench --only $s
done
pr "float32 256^3" build-gpu/bench/ndf_bench --only ecc_float32_256x256x256_T
el bench
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys
tag=''
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    if d['name'].startswith('##'):
        tag=('strip3' if 'strip3' in d['name'] else 'default'); continue
    print('%-8s %-36s %9s %-6s %s'%(tag, d['name'][:36], d.get('warm_ms'), d.get('check'), d.get('kernels')))
PY
cat $R/prof.txt
for f in $R/t/*.txt; do echo "== $(basename $f) $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^rc=' $f | tr '\n' ' ')"; done | tee $R/summary.txt
cd $OUT && tar czf r19c.tgz r && rm -rf r
