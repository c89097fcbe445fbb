# run10b: ndf_ecc_strip2t v2 (strip2 tasks, telescoped; opt-in NDF_ECC_2D=tele), strip2 refactored: tests + sanitizers, 2-D bench, ncu
# test_gpu_ecc at 2 cases, the 2-D bench (strip2 vs tele, MC sweep), 3-D sanity, ncu of strip2t at 64x256^2
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/t/build.log 2>&1 || { tail -30 $R/t/build.log; exit 1; }
el built
T=build-gpu/tests
run() { out=$1; lim=$2; shift 2; ( timeout $lim "$@" > $R/t/$out.txt 2>&1; echo "rc=$?" >> $R/t/$out.txt ) & }
run t-s2 240 env NDF_TEST_CASES=120 NDF_TEST_FILTER=test_gpu_strip2 $T/test_gpu_ecc
run t-s3 240 env NDF_TEST_CASES=60 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc
run t-ecc 240 env NDF_TEST_CASES=2 $T/test_gpu_ecc
run mc-s2t 240 env NDF_ECC_2D=tele NDF_TEST_CASES=1 NDF_TEST_SEED=7 NDF_TEST_FILTER=test_gpu_strip2 compute-sanitizer --tool memcheck $T/test_gpu_ecc
run mc-s2 240 env NDF_TEST_CASES=1 NDF_TEST_SEED=17 NDF_TEST_FILTER=test_gpu_strip2 compute-sanitizer --tool memcheck $T/test_gpu_ecc
run rc-s2t 240 env NDF_ECC_2D=tele NDF_TEST_CASES=1 NDF_TEST_SEED=8 NDF_TEST_FILTER=test_gpu_strip2 compute-sanitizer --tool racecheck $T/test_gpu_ecc
run sc-s2t 240 env NDF_ECC_2D=tele NDF_TEST_CASES=1 NDF_TEST_SEED=9 NDF_TEST_FILTER=test_gpu_strip2 compute-sanitizer --tool synccheck $T/test_gpu_ecc
wait
el tests
for f in $R/t/t-*.txt $R/t/mc-*.txt $R/t/rc-*.txt $R/t/sc-*.txt; do echo "== $(basename $f) $(grep -cE '^\[       OK' $f) ok; $(grep -E '^\[  (PASSED|FAILED)|ERROR SUMMARY|RACECHECK SUMMARY|SYNCCHECK SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|differ|expected|seed|rror" $f | grep -v "ERROR SUMMARY" | head -4; done | tee $R/summary.txt
B=build-gpu/bench/ndf_bench
bj() { echo "{\"name\": \"## $(echo $* | grep -o 'NDF_[A-Z0-9_]*=[0-9a-z]*' | tr '\n' ' ')\"}" >> $R/bench.json; env "$@" >> $R/bench.json 2>> $R/bench.log; }
for s in ecc_float32_1024x1024 ecc_float32_64x256x256_b1 ecc_float32_8192x8192; do
  bj X=1 timeout 60 $B --only $s --check-max-mb 300
  bj NDF_ECC_2D=tele timeout 60 $B --only $s --check-max-mb 300
  for mc in 2 4 16 32; do bj NDF_ECC_2D=tele NDF_ECC2_MC=$mc timeout 60 $B --no-check --only $s; done
  bj NDF_ECC_2D=tele NDF_ECC2_BIN=table timeout 60 $B --no-check --only $s
  bj X=2 timeout 60 $B --no-check --only $s
done
bj X=1 timeout 60 $B --only ecc_float32_256x256x256 --check-max-mb 100
el bench
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    print('%-46s %9s %s %s'%(d['name'], d.get('warm_ms'), d.get('check'), d.get('kernels','')))
PY
src() { name=$1; shift; timeout 100 ncu --clock-control none --target-processes application-only -k "regex:ndf_ecc_strip2" -s 3 -c 1 \
  --section SourceCounters --section WarpStateStats --section InstructionStats --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --import-source yes -o $R/$name -f \
  $B --no-check --reps 3 "$@" > $R/$name.log 2>&1
  ncu -i $R/$name.ncu-rep --page source --csv --print-source sass > $R/$name-src.csv 2>/dev/null
  ncu -i $R/$name.ncu-rep --page details > $R/$name-details.txt 2>/dev/null; rm -f $R/$name.ncu-rep; el "ncu $name"; }
export NDF_NVRTC_LINEINFO=1 NDF_CACHE_DIR=/tmp/ndfc10b
NDF_ECC_2D=tele src s2t-b64 --only ecc_float32_64x256x256_b1
grep -E "Duration|Executed Ipc|Issue Slots Busy|Registers Per|Achieved Occupancy|Executed Instructions  |Theoretical Occ|L1/TEX Hit|Mem.*Throughput|Local" $R/s2t-b64-details.txt | head -20
cd $OUT && tar czf r10b.tgz r && rm -rf r
