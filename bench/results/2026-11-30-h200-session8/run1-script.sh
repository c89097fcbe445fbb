# run8a (session 8, first call): main 7253b51 -- every GPU suite, memcheck of the fused launches (fused_launch), bench with CPU checks of all shapes, MC sweep, Nsight source counters of rows 256^3 and rank tile2 s31
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/p
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
el built
T=build-gpu/tests
run() { out=$1; lim=$2; shift 2; ( timeout $lim "$@" > $R/$out.txt 2>&1; echo "rc=$?" >> $R/$out.txt ) & }
for s in grey binary sinkhorn distance distance_bf ect rank; do run t-$s 280 $T/test_gpu_$s; done
run t-ecc 280 env NDF_TEST_CASES=3 $T/test_gpu_ecc
run mc-rows 200 env NDF_TEST_CASES=1 NDF_TEST_FILTER='test_gpu_rows' compute-sanitizer --tool memcheck $T/test_gpu_ecc
run mc-strip 200 env NDF_TEST_CASES=1 NDF_TEST_FILTER='test_gpu_strip2' compute-sanitizer --tool memcheck $T/test_gpu_ecc
run mc-brick 200 env NDF_TEST_CASES=1 NDF_TEST_FILTER='test_gpu_pack_edges*' compute-sanitizer --tool memcheck $T/test_gpu_ecc
run mc-nan 200 env NDF_TEST_CASES=1 NDF_TEST_FILTER='test_gpu_nan_rejected' compute-sanitizer --tool memcheck $T/test_gpu_ecc
wait
el tests
for f in $R/t-*.txt $R/mc-*.txt; do echo "== $(basename $f) $(grep -cE '^\[       OK' $f) ok; $(grep -E '^\[  (PASSED|FAILED)|ERROR SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|mismatch|seed" $f | head -3; done
B=build-gpu/bench/ndf_bench
bj() { env "$@" >> $R/bench.json 2>> $R/bench.log; }
bj X=1 $B --only ecc --check-max-mb 600
el bench-ecc
for mc in 2 8 16 32; do for w in ecc_float32_1024 ecc_float32_8192 ecc_float32_64x256; do bj NDF_ECC2_MC=$mc $B --only $w --no-check; done; done
el mc
bj X=1 $B --only median_f32_1024x1024_s
bj X=1 $B --only median_u8_1024x1024_s31
el bench
src() { name=$1; k=$2; shift 2; timeout 120 ncu --clock-control none --target-processes application-only -k "regex:$k" -s 3 -c 1 \
  --section SourceCounters --section WarpStateStats --section InstructionStats --section Occupancy --section LaunchStats --import-source yes -o $R/p/$name -f \
  $B --no-check --reps 3 "$@" > $R/p/$name.log 2>&1; el "$name rc=$?"
  ncu -i $R/p/$name.ncu-rep --page source --csv --print-source sass > $R/p/$name-src.csv 2>/dev/null
  ncu -i $R/p/$name.ncu-rep --page details > $R/p/$name-details.txt 2>/dev/null; rm -f $R/p/$name.ncu-rep; }
export NDF_NVRTC_LINEINFO=1 NDF_CACHE_DIR=/tmp/ndfc8
src rows3 ndf_ecc_rows --op ecc --dtype uint8 --shape 256,256,256 --size 256
src pack3 ndf_ecc_pack --op ecc --dtype float32 --shape 256,256,256 --size 256
src r31 ndf_rank_tile2 --op median --dtype float32 --shape 1024,1024 --size 31
src strip1k ndf_ecc_strip2 --op ecc --dtype float32 --shape 1024,1024 --size 256
python3 - $R/bench.json <<'PY'
import json,sys
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    print('%-46s %9s %s'%(d['name'], d.get('warm_ms'), d.get('check')))
PY
el done
