# run9c: main (strip3 v2: strip3n W=8 default, folded addresses, cheaper bins): bench, tests, sanitizers, ncu
# then test_gpu_ecc (strip3 and the rest), memcheck / racecheck of strip3, ncu of strip3 at 256^3 and 512^3
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/t/build.log 2>&1 || { tail -30 $R/t/build.log; exit 1; }
el built
B=build-gpu/bench/ndf_bench
bj() { echo "{\"name\": \"## $(echo $* | grep -o 'NDF_[A-Z0-9_]*=[0-9a-z]*' | tr '\n' ' ')\"}" >> $R/bench.json; env "$@" >> $R/bench.json 2>> $R/bench.log; }
bj X=1 timeout 200 $B --only ecc_ --check-max-mb 100
el bench-ecc
bj NDF_ECC_3D=old timeout 60 $B --no-check --only ecc_float32_256x256x256
bj NDF_ECC_3D=old timeout 60 $B --no-check --only ecc_float32_512x512x512
bj NDF_ECC_3D=old timeout 60 $B --no-check --only ecc_uint8_256
bj NDF_ECC_3D=old timeout 60 $B --no-check --only ecc_tcons
for w in 8 16; do for mc in 2 4 8 16; do bj NDF_ECC3_W=$w NDF_ECC3_MC=$mc timeout 60 $B --no-check --only ecc_float32_256x256x256; done; done
bj NDF_ECC3_W=16 timeout 60 $B --no-check --only ecc_float32_512x512x512
bj NDF_ECC3_W=16 timeout 60 $B --no-check --only ecc_tcons
bj NDF_ECC2_BIN=table timeout 60 $B --no-check --only ecc_float32_256x256x256
bj NDF_ECC_3D=strip3 timeout 60 $B --only ecc_uint8_256 --check-max-mb 100
el bench
python3 - $R/bench.json <<'PY'
import json,sys
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    print('%-46s %9s %s %s'%(d['name'], d.get('warm_ms'), d.get('check'), d.get('kernels','')))
PY
T=build-gpu/tests
run() { out=$1; lim=$2; shift 2; ( timeout $lim "$@" > $R/t/$out.txt 2>&1; echo "rc=$?" >> $R/t/$out.txt ) & }
run t-s3 280 env NDF_TEST_CASES=100 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc
run t-ecc 280 env NDF_TEST_CASES=2 $T/test_gpu_ecc
run mc-s3 230 env NDF_TEST_CASES=1 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool memcheck $T/test_gpu_ecc
run rc-s3 230 env NDF_TEST_CASES=1 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool racecheck $T/test_gpu_ecc
run sc-s3 230 env NDF_TEST_CASES=1 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool synccheck $T/test_gpu_ecc
run mc-s2 230 env NDF_TEST_CASES=1 NDF_TEST_FILTER=test_gpu_strip2 compute-sanitizer --tool memcheck $T/test_gpu_ecc
wait
el tests
for f in $R/t/t-*.txt $R/t/mc-*.txt $R/t/rc-*.txt $R/t/sc-*.txt; do echo "== $(basename $f) $(grep -cE '^\[       OK' $f) ok; $(grep -E '^\[  (PASSED|FAILED)|ERROR SUMMARY|RACECHECK SUMMARY|SYNCCHECK SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|differ|expected|seed|rror" $f | grep -v "ERROR SUMMARY" | head -4; done | tee $R/summary.txt
src() { name=$1; shift; timeout 100 ncu --clock-control none --target-processes application-only -k "regex:ndf_ecc_strip3" -s 3 -c 1 \
  --section SourceCounters --section WarpStateStats --section InstructionStats --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --import-source yes -o $R/$name -f \
  $B --no-check --reps 3 "$@" > $R/$name.log 2>&1
  ncu -i $R/$name.ncu-rep --page source --csv --print-source sass > $R/$name-src.csv 2>/dev/null
  ncu -i $R/$name.ncu-rep --page details > $R/$name-details.txt 2>/dev/null; rm -f $R/$name.ncu-rep; el "ncu $name"; }
export NDF_NVRTC_LINEINFO=1 NDF_CACHE_DIR=/tmp/ndfc9b
src s3f256 --op ecc --dtype float32 --shape 256,256,256 --size 256
src s3f512 --op ecc --dtype float32 --shape 512,512,512 --size 256
for f in $R/s3f256-details.txt $R/s3f512-details.txt; do grep -E "Duration|Executed Ipc|Issue Slots Busy|Registers Per|Achieved Occupancy|Executed Instructions  |Theoretical Occ|L1/TEX Hit|Mem.*Throughput|Local" $f | head -20; done
cd $OUT && tar czf r9c.tgz r && rm -rf r
