# run14g: speed-of-light diagnostics of strip3's march, on HEAD (block columns; timing only, the curves are wrong):
# run14g-diag.patch with NDF_ECC3_DIAG 5 (the float4 loads of every plane read plane z & 1: L1 / L2 hits, same
# instructions) and 6 (no loads: hashed values in [0, 1) from registers, ~4 instructions a value) against HEAD
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/t/build.log 2>&1 || { tail -30 $R/t/build.log; exit 1; }
for d in 5 6; do
  ( mkdir -p /tmp/d$d && tar --exclude=./build-gpu -cf - . | tar -xf - -C /tmp/d$d && cd /tmp/d$d && patch -s -p1 < .gpu/run14g-diag.patch && sed -i "s/^#define NDF_ECC3_DIAG 0/#define NDF_ECC3_DIAG $d/" templates/ecc.cu && grep -c "define NDF_ECC3_DIAG $d" templates/ecc.cu && cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > /tmp/d$d.log 2>&1 || tail -5 /tmp/d$d.log ) &
done
wait
el built
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
pr() { tag=$1; shift; echo "== $tag" >> $R/prof.txt; env NDF_ECC2_PROF=1 "$@" --no-check --reps 20 2>&1 >/dev/null | grep "ndf prof" | tail -1 >> $R/prof.txt; }
for s in ecc_float32_512x512x512 ecc_float32_256x256x256; do
  for i in 1 2; do
    for d in 0 5 6; do
      X=build-gpu/bench/ndf_bench; [ $d = 0 ] || X=/tmp/d$d/build-gpu/bench/ndf_bench
      bj env DIAG=$d timeout 60 $X --only $s --no-check --reps 200 --deferred-errors
    done
  done
  for d in 0 5 6; do
    X=build-gpu/bench/ndf_bench; [ $d = 0 ] || X=/tmp/d$d/build-gpu/bench/ndf_bench
    pr "$s diag$d" timeout 60 $X --only $s --deferred-errors
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
        tag=' '.join(re.findall(r'DIAG=\w+', d['name'])); continue
    print('%-8s %-36s %9s'%(tag, d['name'][:36], d.get('warm_ms')))
PY
cat $R/prof.txt
cd $OUT && tar czf r14g.tgz r && rm -rf r
