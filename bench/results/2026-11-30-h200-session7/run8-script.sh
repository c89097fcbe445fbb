# run7g: FINAL -- the merged tree: GPU tests + memcheck + racecheck of the changed kernels (in parallel), then the bench
source .gpu/env.sh
R=$OUT/r; mkdir -p $R
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
el built
T=build-gpu/tests
export NDF_TEST_CASES=3
run() { out=$1; lim=$2; shift 2; ( timeout $lim "$@" > $R/$out.txt 2>&1; echo "rc=$?" >> $R/$out.txt ) & }
run t-ecc-rows 170 env NDF_TEST_FILTER='test_gpu_rows' $T/test_gpu_ecc
run t-ecc-strip 170 env NDF_TEST_FILTER='test_gpu_strip2' $T/test_gpu_ecc
run t-ecc-nan 170 env NDF_TEST_FILTER='test_gpu_nan_rejected' $T/test_gpu_ecc
run t-ecc-exact 170 env NDF_TEST_FILTER='test_gpu_exact_random' $T/test_gpu_ecc
run t-ecc-pack 170 env NDF_TEST_FILTER='test_gpu_pack_edges*' $T/test_gpu_ecc
run t-rank 170 $T/test_gpu_rank
run mc-ecc 170 env NDF_TEST_CASES=1 NDF_TEST_FILTER='test_gpu_rows' compute-sanitizer --tool memcheck $T/test_gpu_ecc
run mc-ecc2 170 env NDF_TEST_CASES=1 NDF_TEST_FILTER='test_gpu_strip2' compute-sanitizer --tool memcheck $T/test_gpu_ecc
run mc-rank 170 env NDF_TEST_CASES=1 NDF_TEST_FILTER='test_gpu_rank_tile2_pipe' compute-sanitizer --tool memcheck $T/test_gpu_rank
run rc-ecc 170 env NDF_TEST_CASES=1 NDF_TEST_FILTER='test_gpu_rows' compute-sanitizer --tool racecheck $T/test_gpu_ecc
run rc-ecc2 170 env NDF_TEST_CASES=1 NDF_TEST_FILTER='test_gpu_strip2' compute-sanitizer --tool racecheck $T/test_gpu_ecc
run rc-rank 170 env NDF_TEST_CASES=1 NDF_TEST_FILTER='test_gpu_rank_tile2_pipe' compute-sanitizer --tool racecheck $T/test_gpu_rank
wait
el tests
for f in $R/t-*.txt $R/mc-*.txt $R/rc-*.txt; do echo "== $(basename $f) $(grep -E '^\[  (PASSED|FAILED)|ERROR SUMMARY|RACECHECK SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|mismatch|seed" $f | head -3; done
B=build-gpu/bench/ndf_bench
bj() { env "$@" >> $R/bench.json 2>> $R/bench.log; }
bj X=1 $B --only ecc --check-max-mb 70
el bench-ecc
bj NDF_ECC_ROWS=0 NDF_ECC_2D=old $B --only ecc_float --no-check
bj NDF_ECC_ROWS=1 $B --only ecc_float32_128 --no-check
bj NDF_ECC_ROWS=1 $B --only ecc_float32_256 --no-check
bj NDF_ECC_ROWS=1 $B --only ecc_float32_512 --no-check
bj NDF_ECC_ROWS=0 $B --only ecc_uint8 --no-check
bj NDF_ECC2_HB=0 $B --only ecc_float32_1024 --no-check
bj NDF_ECC2_MC=8 $B --only ecc_float32_1024 --no-check
bj NDF_ECC2_MC=16 $B --only ecc_float32_64x256 --no-check
bj X=1 $B --only median_f32_1024x1024_s
bj X=1 $B --only median_u8_1024x1024_s31
bj NDF_RANK_TILE2_PIPE=1 $B --only 1024x1024_s31 --no-check
bj NDF_RANK_TILE2_UNROLL=2 $B --only 1024x1024_s31 --no-check
el bench
python3 - $R/bench.json <<'PY'
import json,sys
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    print('%-46s %9s %s'%(d['name'], d.get('warm_ms'), d.get('check')))
PY
cd $OUT && tar czf r7g.tgz r && rm -rf r
