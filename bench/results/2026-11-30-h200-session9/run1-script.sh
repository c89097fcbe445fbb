# run9a: main 1a934f1 + branches s8-rank2 (a932c70) and s8-ecc3b (b5cd05b) from snapshots: build, bench first (quiet GPU), then branch tests + sanitizers
source .gpu/env.sh
R=$OUT/r; mkdir -p $R
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
( cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/build-main.log 2>&1 || echo "BUILD FAIL main" ) &
for n in rank2 ecc3b; do
  ( cd .gpu/src-$n && cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/build-$n.log 2>&1 || echo "BUILD FAIL $n" ) &
done
wait
el built
bb() { nm=$1; shift; echo "{\"name\": \"## $(echo $* | grep -o 'NDF_[A-Z0-9_]*=[0-9a-z]*' | tr '\n' ' ')\"}" >> $R/bench-$nm.json; ( if [ $nm != main ]; then cd .gpu/src-$nm; fi; env "$@" ) >> $R/bench-$nm.json 2>> $R/bench-$nm.log; }
B=build-gpu/bench/ndf_bench
bb main X=1 $B --no-check --only ecc_float32_8192
bb main NDF_ECC2_BIN=table $B --no-check --only ecc_float32_8192
bb main NDF_ECC2_FENCE=sc $B --no-check --only ecc_float32_8192
bb main NDF_ECC2_MC=4 NDF_ECC2_FENCE=sc NDF_ECC2_BIN=table $B --no-check --only ecc_float32_8192
bb main X=1 $B --only ecc_float32_1024 --check-max-mb 70
bb main X=1 $B --only ecc_float32_64x256 --check-max-mb 70
el bench-main
bb rank2 X=1 $B --only median_f32_1024x1024_s3
for P in 6 9; do bb rank2 NDF_RANK_TILE2_PIPE=$P $B --only 1024x1024_s31; done
bb rank2 NDF_RANK_TILE2_PIPE=9 NDF_RANK_TILE2_UNROLL=3 $B --only f32_1024x1024_s31
bb rank2 NDF_RANK_TILE2_PIPE=9 NDF_RANK_TILE_S=32 $B --only f32_1024x1024_s31
el bench-rank2
for m in 10 11; do bb ecc3b NDF_ECC_ROWS=$m $B --only float32_256x256x256 --check-max-mb 100; done
bb ecc3b NDF_ECC_ROWS=12 $B --only uint8_256 --check-max-mb 100
for m in 7 10 14 9 11 15; do for w in float32_256x256x256 float32_512x512x512; do bb ecc3b NDF_ECC_ROWS=$m $B --no-check --only $w; done; done
for m in 1 12; do bb ecc3b NDF_ECC_ROWS=$m $B --no-check --only uint8_256; done
el bench-ecc3b
python3 - $R <<'PY'
import json,sys,glob
for f in sorted(glob.glob(sys.argv[1]+'/bench-*.json')):
    print('==', f.split('/')[-1])
    for l in open(f):
        try: d=json.loads(l)
        except: continue
        print('  %-44s %9s %s'%(d['name'], d.get('warm_ms'), d.get('check')))
PY
run() { out=$1; d=$2; lim=$3; shift 3; ( if [ $d != main ]; then cd .gpu/src-$d; fi; timeout $lim "$@" > $R/$out.txt 2>&1; echo "rc=$?" >> $R/$out.txt ) & }
run t-p9 rank2 200 env NDF_TEST_CASES=6 NDF_TEST_TILE2_ONLY=9 NDF_TEST_FILTER=test_gpu_rank_tile2_pipe build-gpu/tests/test_gpu_rank
run t-rank rank2 200 env NDF_TEST_CASES=2 build-gpu/tests/test_gpu_rank
run mc-p9 rank2 200 env NDF_TEST_CASES=1 NDF_TEST_TILE2_ONLY=9 NDF_TEST_FILTER=test_gpu_rank_tile2_pipe compute-sanitizer --tool memcheck build-gpu/tests/test_gpu_rank
run rc-p9 rank2 200 env NDF_TEST_CASES=1 NDF_TEST_TILE2_ONLY=9 NDF_TEST_FILTER=test_gpu_rank_tile2_pipe compute-sanitizer --tool racecheck build-gpu/tests/test_gpu_rank
run t-rows ecc3b 200 env NDF_TEST_CASES=6 NDF_TEST_FILTER=test_gpu_rows build-gpu/tests/test_gpu_ecc
run mc-rows ecc3b 200 env NDF_TEST_CASES=1 NDF_TEST_FILTER=test_gpu_rows compute-sanitizer --tool memcheck build-gpu/tests/test_gpu_ecc
run t-ecc main 200 env NDF_TEST_CASES=2 build-gpu/tests/test_gpu_ecc
run mc-fused main 200 env NDF_TEST_CASES=1 NDF_TEST_FILTER=test_gpu_strip2 compute-sanitizer --tool memcheck build-gpu/tests/test_gpu_ecc
run mc-brick main 200 env NDF_TEST_CASES=1 NDF_TEST_FILTER=test_gpu_brick compute-sanitizer --tool memcheck build-gpu/tests/test_gpu_ecc
wait
el tests
for f in $R/t-*.txt $R/mc-*.txt $R/rc-*.txt; do echo "== $(basename $f) $(grep -cE '^\[       OK' $f) ok; $(grep -E '^\[  (PASSED|FAILED)|ERROR SUMMARY|RACECHECK SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|mismatch|expected|seed|rror" $f | grep -v "ERROR SUMMARY" | head -4; done
cd $OUT && tar czf r9a.tgz r && rm -rf r
