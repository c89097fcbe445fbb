# run16f: the unstaged fast march prefetching plane z + PF's row (prefetch.global.L1 / .L2, two per row: its line and
# the voxel x + 16's) -- the march's long-scoreboard stalls (r16b: 21% of ndf_ecc_strip3's samples at 256^3).
# Variants by NDF_ECC3_PF / NDF_ECC3_PFL in templates/ecc.cu: 0 (main), 3 L1, 4 L1, 6 L2.  Timing only (a prefetch
# does not change results).  On the GPU machine (carry .gpu): bash bench/results/2026-12-01-h200-session16/run16f-script.sh
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/t/build.log 2>&1 || { tail -30 $R/t/build.log; exit 1; }
for v in 3_1 4_1 6_2; do
  ( d=/tmp/pf$v; mkdir -p $d && tar --exclude=./build-gpu -cf - . | tar -xf - -C $d && cd $d && sed -i "s/^#define NDF_ECC3_PF 0 /#define NDF_ECC3_PF ${v%_*} /; s/^#define NDF_ECC3_PFL 1 /#define NDF_ECC3_PFL ${v#*_} /" templates/ecc.cu && grep -E "^#define NDF_ECC3_PFL? " templates/ecc.cu | tr '\n' ' ' && cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > /tmp/pf$v.log 2>&1 || tail -5 /tmp/pf$v.log ) &
done
wait
el built
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
X() { [ $1 = 0 ] && echo build-gpu/bench/ndf_bench || echo /tmp/pf$1/build-gpu/bench/ndf_bench; }
for v in 0 3_1 4_1 6_2; do bj env V=$v timeout 60 $(X $v) --only ecc_float32_256x256x256 --check-max-mb 600 --reps 10 --deferred-errors; done
for i in 1 2; do for v in 0 3_1 4_1 6_2; do
  bj env V=$v timeout 60 $(X $v) --only ecc_float32_256x256x256 --no-check --reps 300 --deferred-errors
done; done
for s in ecc_tcons ecc_float32_128x128x128; do for v in 0 3_1 4_1 6_2; do bj env V=$v timeout 60 $(X $v) --only $s --no-check --reps 300 --deferred-errors; done; done
for v in 0 3_1 4_1 6_2; do bj env V=$v NDF_ECC3_STG=0 timeout 60 $(X $v) --only ecc_float32_512x512x512 --no-check --reps 100 --deferred-errors; done
el bench
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys,re
tag=''
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    if d['name'].startswith('##'):
        tag=' '.join(re.findall(r'(?:V|NDF_ECC3_STG)=\w+', d['name'])); continue
    print('%-22s %-36s %9s %s'%(tag, d['name'][:36], d.get('warm_ms'), d.get('check')))
PY
pr() { tag=$1; shift; echo "== $tag" >> $R/prof.txt; env NDF_ECC2_PROF=1 "$@" --no-check --reps 20 2>&1 >/dev/null | grep "ndf prof" | tail -1 >> $R/prof.txt; }
for v in 0 3_1 4_1 6_2; do pr "256 V=$v" timeout 60 $(X $v) --only ecc_float32_256x256x256 --deferred-errors; done
cat $R/prof.txt
el done
cd $OUT && tar czf r16f.tgz r && rm -rf r
