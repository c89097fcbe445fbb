# run8c: early batch -- helper branches ecc3 (ade7cb9) and rank (c68b0b9) from snapshots: tests+sanitizers of the new modes, bench sweeps, Nsight of the new modes
source .gpu/env.sh
R=$OUT/r; mkdir -p $R
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
for n in ecc3 rank; do
  ( cd .gpu/src-$n && cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/build-$n.log 2>&1 ) || { echo "BUILD FAIL $n"; tail -20 $R/build-$n.log; }
done
el built
run() { out=$1; d=$2; lim=$3; shift 3; ( cd .gpu/src-$d && timeout $lim "$@" > $R/$out.txt 2>&1; echo "rc=$?" >> $R/$out.txt ) & }
run t-rows ecc3 230 env NDF_TEST_CASES=8 NDF_TEST_FILTER=test_gpu_rows build-gpu/tests/test_gpu_ecc
run t-nan ecc3 230 env NDF_TEST_CASES=3 NDF_TEST_FILTER=test_gpu_nan_rejected build-gpu/tests/test_gpu_ecc
run mc-rows ecc3 230 env NDF_TEST_CASES=2 NDF_TEST_FILTER=test_gpu_rows compute-sanitizer --tool memcheck build-gpu/tests/test_gpu_ecc
run rc-rows ecc3 230 env NDF_TEST_CASES=1 NDF_TEST_FILTER=test_gpu_rows compute-sanitizer --tool racecheck build-gpu/tests/test_gpu_ecc
run sc-rows ecc3 230 env NDF_TEST_CASES=1 NDF_TEST_FILTER=test_gpu_rows compute-sanitizer --tool synccheck build-gpu/tests/test_gpu_ecc
run t-rank rank 230 env NDF_TEST_CASES=3 build-gpu/tests/test_gpu_rank
run mc-rank rank 230 env NDF_TEST_CASES=1 NDF_TEST_FILTER=test_gpu_rank_tile2_pipe compute-sanitizer --tool memcheck build-gpu/tests/test_gpu_rank
run rc-rank rank 230 env NDF_TEST_CASES=1 NDF_TEST_FILTER=test_gpu_rank_tile2_pipe compute-sanitizer --tool racecheck build-gpu/tests/test_gpu_rank
wait
el tests
for f in $R/t-*.txt $R/mc-*.txt $R/rc-*.txt $R/sc-*.txt; do echo "== $(basename $f) $(grep -cE '^\[       OK' $f) ok; $(grep -E '^\[  (PASSED|FAILED)|ERROR SUMMARY|RACECHECK SUMMARY|SYNCCHECK SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|mismatch|seed|rror" $f | head -4; done
bb() { nm=$1; shift; echo "{\"name\": \"## $(echo $* | grep -o 'NDF_[A-Z0-9_]*=[0-9a-z]*' | tr '\n' ' ')\"}" >> $R/bench-$nm.json; ( cd .gpu/src-$nm && env "$@" ) >> $R/bench-$nm.json 2>> $R/bench-$nm.log; }
B=build-gpu/bench/ndf_bench
bb ecc3 NDF_ECC_ROWS=5 $B --only 256x256x256 --check-max-mb 100
bb ecc3 NDF_ECC_ROWS=6 $B --only float32_256x256x256 --check-max-mb 100
for m in 0 1 5 6 7 8; do for w in float32_256x256x256 float32_512x512x512; do bb ecc3 NDF_ECC_ROWS=$m $B --no-check --only $w; done; done
for m in 1 5 7; do bb ecc3 NDF_ECC_ROWS=$m $B --no-check --only float32_128x128x128; done
for m in 1 5 8; do bb ecc3 NDF_ECC_ROWS=$m $B --no-check --only uint8_256; done
for mc in 8 16; do bb ecc3 NDF_ECC_MINMC=$mc NDF_ECC_ROWS=5 $B --no-check --only float32_256x256x256; done
el bench-ecc3
bb rank X=1 $B --only median_f32_1024x1024_s
bb rank X=1 $B --only median_u8_1024x1024_s31
for P in 5 6 7; do bb rank NDF_RANK_TILE2_PIPE=$P $B --only 1024x1024_s31; done
bb rank NDF_RANK_TILE2_UNROLL=3 $B --only f32_1024x1024_s31
bb rank NDF_RANK_TILE2_PIPE=5 NDF_RANK_TILE2_UNROLL=3 $B --only f32_1024x1024_s31
bb rank NDF_RANK_TILE2_PIPE=7 NDF_RANK_TILE2_UNROLL=3 $B --only f32_1024x1024_s31
bb rank NDF_RANK_TILE2_PIPE=7 NDF_RANK_TILE_S=32 $B --only f32_1024x1024_s31
bb rank NDF_RANK_TILE2_PIPE=7 NDF_RANK_TILE2_UNROLL=3 NDF_RANK_TILE_S=32 $B --only f32_1024x1024_s31
el bench-rank
python3 - $R <<'PY'
import json,sys,glob
for f in sorted(glob.glob(sys.argv[1]+'/bench-*.json')):
    print('==', f.split('/')[-1])
    for l in open(f):
        try: d=json.loads(l)
        except: continue
        print('  %-44s %9s %s %s'%(d['name'], d.get('warm_ms'), d.get('check'), d.get('env','')))
PY
src() { nm=$1; name=$2; k=$3; shift 3; ( cd .gpu/src-$nm && timeout 100 ncu --clock-control none --target-processes application-only -k "regex:$k" -s 3 -c 1 \
  --section SourceCounters --section WarpStateStats --section InstructionStats --section SpeedOfLight --section Occupancy --section LaunchStats --import-source yes -o $R/$name -f \
  build-gpu/bench/ndf_bench --no-check --reps 3 "$@" > $R/$name.log 2>&1
  ncu -i $R/$name.ncu-rep --page source --csv --print-source sass > $R/$name-src.csv 2>/dev/null
  ncu -i $R/$name.ncu-rep --page details > $R/$name-details.txt 2>/dev/null; rm -f $R/$name.ncu-rep ); el "ncu $name"; }
export NDF_NVRTC_LINEINFO=1 NDF_CACHE_DIR=/tmp/ndfc8c
export NDF_ECC_ROWS=5; src ecc3 rows5f ndf_ecc_rows --op ecc --dtype float32 --shape 512,512,512 --size 256; unset NDF_ECC_ROWS
export NDF_RANK_TILE2_PIPE=7 NDF_RANK_TILE2_UNROLL=3; src rank r31p7 ndf_rank_tile2 --op median --dtype float32 --shape 1024,1024 --size 31; unset NDF_RANK_TILE2_PIPE NDF_RANK_TILE2_UNROLL
cd $OUT && tar czf r8c.tgz r && rm -rf r
