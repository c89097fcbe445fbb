# run17f: ndf_ecc_strip2t at 3 blocks per SM (__launch_bounds__(256, 3): 80 registers, no spills; at 4: 64
# registers, spills 14/60 bytes) against 4 (this tree); the grid follows the occupancy query.  2-D workloads
# A/B, the strip2 tests on the variant.  On the GPU machine (carry .gpu):
# bash bench/results/2026-12-01-h200-session17/run17f-script.sh
source .gpu/env.sh
R=$OUT/r; mkdir -p $R
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
P=bench/results/2026-12-01-h200-session17/s17f-minb3.patch
mkdir -p /tmp/m3 && tar --exclude=./build-gpu -cf - . | tar -xf - -C /tmp/m3 && (cd /tmp/m3 && patch -s -p1 < $P) || echo "m3 tree failed"
bld() { (cd $1 && cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > /tmp/build-$2.log 2>&1 || tail -20 /tmp/build-$2.log); }
bld . base & bld /tmp/m3 m3 & wait
el built
( timeout 100 env NDF_TEST_CASES=60 NDF_TEST_SEED=1741 NDF_TEST_FILTER=test_gpu_strip2 /tmp/m3/build-gpu/tests/test_gpu_ecc > $R/t-s2-m3.txt 2>&1; echo "rc=$?" >> $R/t-s2-m3.txt )
el tests
grep -E '^\[  (PASSED|FAILED)|^rc=|seed' $R/t-s2-m3.txt
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
A=build-gpu/bench/ndf_bench; B=/tmp/m3/build-gpu/bench/ndf_bench
for s in ecc_float32_1024x1024 ecc_float32_8192x8192 ecc_float32_64x256x256_b1; do
  bj timeout 60 $B --only $s --check-max-mb 600 --reps 10 --deferred-errors
  for i in 1 2; do for X in $A $B; do bj timeout 60 $X --only $s --no-check --reps 200 --deferred-errors; done; done
done
el bench
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys
tag=''
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    if d['name'].startswith('##'): tag='MINB3' if '/tmp/m3' in d['name'] else 'MINB4'; continue
    print('%-8s %-36s %9s %s'%(tag, d['name'][:36], d.get('warm_ms'), d.get('check')))
PY
cd $OUT && tar czf r17f.tgz r && rm -rf r
