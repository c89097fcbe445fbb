# run16g (timing only, wrong curves where a guess is off): the binner's walks and certificate tests left out
# (run16g-diag.patch, NDF_ECC3_DIAG 4; ptxas: ndf_ecc_strip3 12840 -> 8528 instructions, strip3s 18992 -> 11904 and
# its spills 64/232 -> 8/8 bytes) against main: the bound of a compact rare path (r16b: the staged march's stalls
# 21% instruction fetch, 20% barrier).  On the GPU machine (carry .gpu): bash bench/results/2026-12-01-h200-session16/run16g-script.sh
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/t/build.log 2>&1 &
( d=/tmp/d4; mkdir -p $d && tar --exclude=./build-gpu -cf - . | tar -xf - -C $d && cd $d && patch -s -p1 < bench/results/2026-12-01-h200-session16/run16g-diag.patch && sed -i "s/^#define NDF_ECC3_DIAG 0 /#define NDF_ECC3_DIAG 4 /" templates/ecc.cu && grep -c "define NDF_ECC3_DIAG 4" templates/ecc.cu && cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > /tmp/d4.log 2>&1 || tail -5 /tmp/d4.log ) &
wait
el built
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
A=build-gpu/bench/ndf_bench; D=/tmp/d4/build-gpu/bench/ndf_bench
for i in 1 2; do for X in $A $D; do
  bj env NDF_ECC3_STG=0 timeout 60 $X --only ecc_float32_256x256x256 --no-check --reps 300 --deferred-errors
  bj env NDF_ECC3_STG=1 timeout 60 $X --only ecc_float32_256x256x256 --no-check --reps 300 --deferred-errors
done; done
for X in $A $D; do for g in 1 0; do bj env NDF_ECC3_STG=$g timeout 60 $X --only ecc_float32_512x512x512 --no-check --reps 100 --deferred-errors; done; done
for X in $A $D; do bj timeout 60 $X --only ecc_float32_128x128x128 --no-check --reps 300 --deferred-errors; bj timeout 60 $X --only ecc_float32_8192x8192 --no-check --reps 100 --deferred-errors; done
el bench
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys,re
tag=''
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    if d['name'].startswith('##'):
        tag=('DIAG4 ' if '/tmp/d4' in d['name'] else 'main  ')+' '.join(re.findall(r'NDF_ECC3_STG=\w+', d['name'])); continue
    print('%-24s %-36s %9s'%(tag, d['name'][:36], d.get('warm_ms')))
PY
pr() { tag=$1; shift; echo "== $tag" >> $R/prof.txt; env NDF_ECC2_PROF=1 "$@" --no-check --reps 20 2>&1 >/dev/null | grep "ndf prof" | tail -1 >> $R/prof.txt; }
for X in $A $D; do for g in 0 1; do pr "256 stg$g $X" env NDF_ECC3_STG=$g timeout 60 $X --only ecc_float32_256x256x256 --deferred-errors; done; pr "512 $X" timeout 60 $X --only ecc_float32_512x512x512 --deferred-errors; done
cat $R/prof.txt
el done
cd $OUT && tar czf r16g.tgz r && rm -rf r
