# run17d: ndf_ecc_strip3s without a phase 1 of its own (always the split: ndf_ecc_strip3 first, as the default
# was); the bulk-copy (NDF_ECC3_P1=tma) and in-kernel-load (=ldg) opt-ins and the mbarrier helpers removed.
# ptxas (nvcc sm_90): strip3s 15128 -> 11816 instructions, spills 40/100 -> 24/44 bytes; strip3 unchanged.
# Tests (strip3 with its staged settings, staged strip3 forced, all ECC GPU tests), memcheck + racecheck of
# the staged kernel, 512^3 and staged 256^3 A/B against the tree before (s17d.patch reversed), profiles.
# On the GPU machine (carry .gpu): bash bench/results/2026-12-01-h200-session17/run17d-script.sh
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
P=bench/results/2026-12-01-h200-session17/s17d.patch
mkdir -p /tmp/alt && tar --exclude=./build-gpu -cf - . | tar -xf - -C /tmp/alt && (cd /tmp/alt && patch -s -p1 -R < $P) || echo "alt tree failed"
bld() { (cd $1 && cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > /tmp/build-$2.log 2>&1 || tail -20 /tmp/build-$2.log); }
bld . new & bld /tmp/alt alt & wait
el built
T=build-gpu/tests
run() { out=$1; lim=$2; shift 2; ( s=$(date +%s); timeout $lim "$@" > $R/t/$out.txt 2>&1; echo "rc=$? $(( $(date +%s) - s ))s" >> $R/t/$out.txt ) & }
run t-ecc 170 env NDF_TEST_SEED=1721 $T/test_gpu_ecc
run t-s3 150 env NDF_TEST_CASES=80 NDF_TEST_SEED=1722 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc
run t-s3g 150 env NDF_ECC3_STG=1 NDF_TEST_CASES=60 NDF_TEST_SEED=1723 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc
run mc-s3g 150 env NDF_ECC3_STG=1 NDF_TEST_CASES=4 NDF_TEST_SEED=1724 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool memcheck $T/test_gpu_ecc
run rc-s3g 150 env NDF_ECC3_STG=1 NDF_TEST_CASES=2 NDF_TEST_SEED=1725 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool racecheck $T/test_gpu_ecc
wait
el tests
for f in $R/t/*.txt; do echo "== $(basename $f) $(grep -cE '^\[       OK' $f) ok; $(grep -E '^\[  (PASSED|FAILED)|ERROR SUMMARY|RACECHECK SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|differ|seed|rror|hazard" $f | grep -v "SUMMARY" | head -4; done | tee $R/summary.txt
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
B=build-gpu/bench/ndf_bench; A=/tmp/alt/build-gpu/bench/ndf_bench
bj timeout 60 $B --only ecc_float32_512x512x512 --check-max-mb 600 --reps 10 --deferred-errors
for i in 1 2 3; do for X in $A $B; do bj timeout 60 $X --only ecc_float32_512x512x512 --no-check --reps 200 --deferred-errors; done; done
for i in 1 2; do for X in $A $B; do bj env NDF_ECC3_STG=1 timeout 60 $X --only ecc_float32_256x256x256 --no-check --reps 200 --deferred-errors; bj timeout 60 $X --only ecc_tcons --no-check --reps 200 --deferred-errors; done; done
bj timeout 60 $B --only ecc_float32_512x512x512 --no-check --reps 100
el bench
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys,re
tag=''
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    if d['name'].startswith('##'):
        tag=('OLD ' if '/tmp/alt' in d['name'] else 'new ')+('waiting ' if 'deferred' not in d['name'] else '')+' '.join(x.replace('NDF_ECC3_','') for x in re.findall(r'NDF_\w+=\w+', d['name'])); continue
    print('%-16s %-36s %9s %s'%(tag, d['name'][:36], d.get('warm_ms'), d.get('check')))
PY
pr() { tag=$1; shift; echo "== $tag" >> $R/prof.txt; env NDF_ECC2_PROF=1 "$@" --no-check --reps 20 2>&1 >/dev/null | grep "ndf prof" | tail -1 >> $R/prof.txt; }
for X in $A $B; do pr "512 $X" timeout 60 $X --only ecc_float32_512x512x512 --deferred-errors; done
cat $R/prof.txt
el done
cd $OUT && tar czf r17d.tgz r && rm -rf r
