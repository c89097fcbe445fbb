# run12f: strip3's dynamic tail (NDF_ECC3_TAIL percent of the units in chunks after the equal shares;
# default 15 where a share has >= 64 units); A/B against 49ea908 (r12f-ecc.patch reversed) and TAIL=0;
# strip3 tests with the tail forced (NDF_ECC3_TAIL=30), memcheck; the SASS's spills
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
mkdir -p /tmp/alt && tar --exclude=./build-gpu -cf - . | tar -xf - -C /tmp/alt && (cd /tmp/alt && patch -s -p1 -R < .gpu/r12f-ecc.patch) || echo "alt tree failed"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/t/build.log 2>&1 || { tail -30 $R/t/build.log; exit 1; }
(cd /tmp/alt && cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > /tmp/alt-build.log 2>&1) || tail -5 /tmp/alt-build.log
cuobjdump -sass .gpu/cubin/f3-c0.cubin | awk '/Function : /{f=($3=="ndf_ecc_strip3")} f' > /tmp/f3.sass; grep -c "STL\|LDL" /tmp/f3.sass > $R/spills.txt; grep -n "STL\|LDL\|ATOMS.ADD" /tmp/f3.sass | awk -F: '{print $1, ($0 ~ /ATOMS/ ? "A" : "S")}' > $R/spill-lines.txt
el built
T=build-gpu/tests
run() { out=$1; lim=$2; shift 2; ( timeout $lim "$@" > $R/t/$out.txt 2>&1; echo "rc=$?" >> $R/t/$out.txt ) & }
run t-s3tail 150 env NDF_ECC3_TAIL=30 NDF_TEST_CASES=40 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc
run t-s3 150 env NDF_TEST_CASES=30 NDF_TEST_SEED=75 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc
run t-def 150 env NDF_ECC3_TAIL=30 NDF_TEST_CASES=20 NDF_TEST_FILTER=test_gpu_deferred $T/test_gpu_ecc
run t-s2 150 env NDF_TEST_CASES=10 NDF_TEST_FILTER=test_gpu_strip2 $T/test_gpu_ecc
run mc-s3 150 env NDF_ECC3_TAIL=30 NDF_TEST_CASES=1 NDF_TEST_SEED=76 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool memcheck $T/test_gpu_ecc
wait
el tests
for f in $R/t/t-*.txt $R/t/mc-*.txt; do echo "== $(basename $f) $(grep -cE '^\[       OK' $f) ok; $(grep -E '^\[  (PASSED|FAILED)|ERROR SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|differ|seed|rror" $f | grep -v "ERROR SUMMARY" | head -4; done | tee $R/summary.txt
B=build-gpu/bench/ndf_bench; A=/tmp/alt/build-gpu/bench/ndf_bench
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
bj timeout 60 $B --only ecc_float32_512x512x512 --check-max-mb 600 --reps 20 --deferred-errors
for i in 1 2; do
  bj timeout 60 $B --only ecc_float32_512x512x512 --no-check --reps 200 --deferred-errors
  bj env NDF_ECC3_TAIL=0 timeout 60 $B --only ecc_float32_512x512x512 --no-check --reps 200 --deferred-errors
  bj timeout 60 $A --only ecc_float32_512x512x512 --no-check --reps 200 --deferred-errors
  bj env NDF_ECC3_TAIL=8 timeout 60 $B --only ecc_float32_512x512x512 --no-check --reps 200 --deferred-errors
  bj timeout 60 $B --only ecc_float32_256x256x256 --no-check --reps 200 --deferred-errors
  bj env NDF_ECC3_TAIL=15 timeout 60 $B --only ecc_float32_256x256x256 --no-check --reps 200 --deferred-errors
  bj timeout 60 $A --only ecc_float32_256x256x256 --no-check --reps 200 --deferred-errors
done
bj timeout 60 $B --only ecc_float32_512x512x512 --no-check --reps 200
el bench
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys,re
tag=''
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    if d['name'].startswith('##'):
        n=d['name']; m=re.search(r'NDF_ECC3_TAIL=(\d+)', n); tag='ALT' if '/tmp/alt' in n else ('tail'+m.group(1)) if m else 'cur'; continue
    print('%-6s %-36s %9s %s %s'%(tag, d['name'][:36], d.get('warm_ms'), d.get('check'), 'deferred' if d.get('deferred_errors') else 'waiting'))
PY
pr() { tag=$1; shift; echo "== $tag" >> $R/prof.txt; env NDF_ECC2_PROF=1 "$@" --no-check --reps 20 2>&1 >/dev/null | grep "ndf prof" | tail -1 >> $R/prof.txt; }
pr "512^3 cur" timeout 60 $B --only ecc_float32_512x512x512 --deferred-errors
pr "512^3 tail0" env NDF_ECC3_TAIL=0 timeout 60 $B --only ecc_float32_512x512x512 --deferred-errors
cat $R/prof.txt $R/spills.txt
el prof
cd $OUT && tar czf r12f.tgz r && rm -rf r
