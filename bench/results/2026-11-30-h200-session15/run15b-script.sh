# run15b: strip3s' phase 1 three ways (ndf_ecc3_params.p1; NDF_ECC3_P1=tma default on sm_90: bulk copies through
# mbarriers, cp: the per-warp cp.async rings of run15a, ldg: the loads of ndf_ecc_strip3), four staged buffers:
# tests (each phase 1), memcheck / racecheck / synccheck, A/B against NDF_ECC3_STG=0, profile phases, ptxas /
# SASS spill places of strip3s.  On the GPU machine (carry .gpu): bash bench/results/2026-11-30-h200-session15/run15b-script.sh
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/t/build.log 2>&1 || { tail -30 $R/t/build.log; exit 1; }
el built
T=build-gpu/tests
run() { out=$1; lim=$2; shift 2; ( timeout $lim "$@" > $R/t/$out.txt 2>&1; echo "rc=$?" >> $R/t/$out.txt ) & }
run t-s3 200 env NDF_TEST_CASES=80 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc
run t-s3b 200 env NDF_TEST_CASES=60 NDF_TEST_SEED=1415 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc
run t-s3cp 200 env NDF_ECC3_P1=cp NDF_TEST_CASES=40 NDF_TEST_SEED=1416 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc
run t-s3ldg 200 env NDF_ECC3_P1=ldg NDF_TEST_CASES=40 NDF_TEST_SEED=1417 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc
run t-ecc 200 env NDF_TEST_CASES=3 $T/test_gpu_ecc
run mc-s3 200 env NDF_TEST_CASES=4 NDF_TEST_SEED=78 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool memcheck $T/test_gpu_ecc
run mc-s3cp 200 env NDF_ECC3_P1=cp NDF_TEST_CASES=4 NDF_TEST_SEED=81 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool memcheck $T/test_gpu_ecc
run rc-s3 200 env NDF_TEST_CASES=2 NDF_TEST_SEED=79 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool racecheck $T/test_gpu_ecc
run sc-s3 200 env NDF_TEST_CASES=2 NDF_TEST_SEED=80 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool synccheck $T/test_gpu_ecc
wait
el tests
for f in $R/t/t-*.txt $R/t/mc-*.txt $R/t/rc-*.txt $R/t/sc-*.txt; do echo "== $(basename $f) $(grep -cE '^\[       OK' $f) ok; $(grep -E '^\[  (PASSED|FAILED)|ERROR SUMMARY|RACECHECK SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|differ|seed|rror|azard" $f | grep -v "SUMMARY" | head -4; done | tee $R/summary.txt
B=build-gpu/bench/ndf_bench
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
for s in ecc_float32_512x512x512 ecc_float32_256x256x256 ecc_tcons ecc_float32_128x128x128; do
  bj timeout 60 $B --only $s --check-max-mb 600 --reps 20 --deferred-errors
  for i in 1 2; do
    bj timeout 60 $B --only $s --no-check --reps 200 --deferred-errors
    bj env NDF_ECC3_P1=cp timeout 60 $B --only $s --no-check --reps 200 --deferred-errors
    bj env NDF_ECC3_P1=ldg timeout 60 $B --only $s --no-check --reps 200 --deferred-errors
    bj env NDF_ECC3_STG=0 timeout 60 $B --only $s --no-check --reps 200 --deferred-errors
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
        tag=' '.join(re.findall(r'NDF_\w+=\w+', d['name'])) or 'cur'; continue
    print('%-16s %-36s %9s %s %s'%(tag, d['name'][:36], d.get('warm_ms'), d.get('check'), 'deferred' if d.get('deferred_errors') else 'waiting'))
PY
pr() { tag=$1; shift; echo "== $tag" >> $R/prof.txt; env NDF_ECC2_PROF=1 "$@" --no-check --reps 20 2>&1 >/dev/null | grep "ndf prof" | tail -1 >> $R/prof.txt; }
for s in 512x512x512 256x256x256; do
  pr "$s tma" timeout 60 $B --only ecc_float32_$s --deferred-errors
  pr "$s cp" env NDF_ECC3_P1=cp timeout 60 $B --only ecc_float32_$s --deferred-errors
  pr "$s ldg" env NDF_ECC3_P1=ldg timeout 60 $B --only ecc_float32_$s --deferred-errors
  pr "$s nostg" env NDF_ECC3_STG=0 timeout 60 $B --only ecc_float32_$s --deferred-errors
done
cat $R/prof.txt
# where strip3s spills (local loads / stores in its SASS, with the surrounding lines)
nvcc -cubin -arch=sm_90 -O3 -std=c++17 '-DNDF_SLOT(x)=NDF_SLOT_##x' -DNDF_SLOT_TIN=float -DNDF_SLOT_V=float -DNDF_SLOT_NSP=3 -DNDF_SLOT_CONS=0 -DNDF_SLOT_SOFT=0 -I templates -I build-gpu/generated templates/ecc.cu -o /tmp/s3.cubin 2>&1 | tail -2
cuobjdump -sass -fun ndf_ecc_strip3s /tmp/s3.cubin > $R/strip3s.sass 2>&1; echo "sass lines $(wc -l < $R/strip3s.sass), LDL $(grep -c LDL $R/strip3s.sass), STL $(grep -c STL $R/strip3s.sass)"
gzip -9 $R/strip3s.sass
el done
cd $OUT && tar czf s15b.tgz r && rm -rf r
