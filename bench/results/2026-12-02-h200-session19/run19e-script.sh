# run19e: (1) strip3's linear phase 1 for uint8 / uint16 in C order (this tree, N) against the tree before it (M =
# 2a2b9caf5b74c90b01223efc1743404df55f9e34: the units' vector rows, run19d phase 1 10.8 us at uint8 256^3, 68 at 512^3); both take strip3 by
# default for uint8 / uint16 now.  (2) The full ECC GPU test alone (uint8 / uint16 3-D cases of every test on
# strip3 now), memcheck and racecheck of strip3 cases beside it.
# On the GPU machine (carry .gpu): bash bench/results/2026-12-02-h200-session19/run19e-script.sh
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
H=bench/results/2026-12-02-h200-session19
mkdir -p /tmp/M && tar --exclude=./build-gpu -cf - . | tar -xf - -C /tmp/M && (cd /tmp/M && patch -s -p1 < $H/to-prev-e.patch) || echo "tree M failed"
bld() { (cd $1 && cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > /tmp/build-$2.log 2>&1 || tail -20 /tmp/build-$2.log); }
bld . N & bld /tmp/M M & wait
el built
T=build-gpu/tests
run() { out=$1; lim=$2; shift 2; ( s=$(date +%s); timeout $lim "$@" > $R/t/$out.txt 2>&1; echo "rc=$? $(( $(date +%s) - s ))s" >> $R/t/$out.txt ) & }
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
pr() { tag=$1; shift; echo "== $tag" >> $R/prof.txt; env NDF_ECC2_PROF=1 "$@" --no-check --reps 20 2>&1 >/dev/null | grep "ndf prof" | tail -1 >> $R/prof.txt; }
for s in ecc_uint8_256x256x256 ecc_uint16_256x256x256 ecc_uint8_512x512x512; do
  bj timeout 100 build-gpu/bench/ndf_bench --only $s --check-max-mb 600 --reps 10
  for i in 1 2; do for X in /tmp/M .; do bj timeout 60 $X/build-gpu/bench/ndf_bench --only $s --no-check --reps 200; done; done
  pr "$s N" build-gpu/bench/ndf_bench --only $s
  pr "$s M" /tmp/M/build-gpu/bench/ndf_bench --only $s
done
el bench
( s=$(date +%s); timeout 400 env NDF_TEST_SEED=1951 stdbuf -oL $T/test_gpu_ecc 2>&1 | while IFS= read -r l; do echo "[$(( $(date +%s) - s ))s] $l"; done > $R/t/t-ecc.txt; echo "rc=${PIPESTATUS[0]} $(( $(date +%s) - s ))s" >> $R/t/t-ecc.txt ) &
run mc-s3 300 env NDF_TEST_CASES=6 NDF_TEST_SEED=1952 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool memcheck $T/test_gpu_ecc
run rc-s3 300 env NDF_TEST_CASES=2 NDF_TEST_SEED=1953 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool racecheck $T/test_gpu_ecc
wait
el tests
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys
tag=''
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    if d['name'].startswith('##'):
        tag='M' if '/tmp/M' in d['name'] else 'N'; continue
    print('%-3s %-36s %9s %-8s %s'%(tag, d['name'][:36], d.get('warm_ms'), d.get('check'), d.get('kernels')))
PY
cat $R/prof.txt
for f in $R/t/*.txt; do echo "== $(basename $f) $(grep -cE '\[       OK' $f) ok; $(grep -E '\[  (PASSED|FAILED)|ERROR SUMMARY|RACECHECK SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|differ|seed|rror" $f | grep -v SUMMARY | head -4; done | tee $R/summary.txt
cd $OUT && tar czf r19e.tgz r && rm -rf r
