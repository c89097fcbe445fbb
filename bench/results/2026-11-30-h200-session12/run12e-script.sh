# run12e: variants of strip3 on this tree (49ea908): v1 = one march step per loop iteration (half the
# loop's code, 34 moves a step), v2 = phase 1 with 4 units' loads in flight (2 before), v12 = both
source .gpu/env.sh
R=$OUT/r; mkdir -p $R
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
mk() { mkdir -p /tmp/$1 && tar --exclude=./build-gpu -cf - . | tar -xf - -C /tmp/$1 && (cd /tmp/$1 && shift && for p in "$@"; do patch -s templates/ecc.cu < .gpu/$p.patch || echo "patch $p failed"; done); }
mk v1 v1; mk v2 v2; mk v12 v1 v2
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
for v in v1 v2 v12; do (cd /tmp/$v && cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > /tmp/$v-build.log 2>&1 || tail -5 /tmp/$v-build.log) & done; wait
el built
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
B=build-gpu/bench/ndf_bench
for v in cur v1 v2 v12; do b=$B; [ $v = cur ] || b=/tmp/$v/$B; bj timeout 60 $b --only ecc_float32_256x256x256 --check-max-mb 300 --reps 100 --deferred-errors; done
for i in 1 2; do for s in ecc_float32_512x512x512 ecc_float32_256x256x256 ecc_tcons; do for v in cur v1 v2 v12; do b=$B; [ $v = cur ] || b=/tmp/$v/$B; bj timeout 60 $b --only $s --no-check --reps 200 --deferred-errors; done; done; done
el bench
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys
tag=''
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    if d['name'].startswith('##'):
        n=d['name']; tag=next((v for v in ('v12','v1','v2') if '/tmp/%s/'%v in n), 'cur'); continue
    print('%-4s %-36s %9s %s %s'%(tag, d['name'][:36], d.get('warm_ms'), d.get('check'), 'deferred' if d.get('deferred_errors') else ''))
PY
pr() { tag=$1; shift; echo "== $tag" >> $R/prof.txt; env NDF_ECC2_PROF=1 "$@" --no-check --reps 20 2>&1 >/dev/null | grep "ndf prof" | tail -1 >> $R/prof.txt; }
for v in cur v1 v2 v12; do b=$B; [ $v = cur ] || b=/tmp/$v/$B; pr "512^3 $v" timeout 60 $b --only ecc_float32_512x512x512 --deferred-errors; pr "256^3 $v" timeout 60 $b --only ecc_float32_256x256x256 --deferred-errors; done
cat $R/prof.txt
el prof
cd $OUT && tar czf r12e.tgz r && rm -rf r
