# run8d: FINAL -- the merged tree: every GPU suite (NDF_TEST_CASES=2) with the kernel-log assertions, the kernel log's
# negative control, memcheck/racecheck of the changed kernels, then the bench (defaults + the old paths by knob)
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/t/build.log 2>&1 || { tail -30 $R/t/build.log; exit 1; }
el built
T=build-gpu/tests
export NDF_TEST_CASES=2
run() { out=$1; lim=$2; shift 2; ( timeout $lim "$@" > $R/t/$out.txt 2>&1; echo "rc=$?" >> $R/t/$out.txt ) & }
run t-klog 60 $T/test_kernel_log
for s in grey binary sinkhorn distance distance_bf ect rank ecc; do run t-$s 175 $T/test_gpu_$s; done
run neg-klog 120 env NDF_RANK_TILE=0 NDF_TEST_CASES=6 NDF_TEST_FILTER=test_gpu_rank_every_dtype_and_mode $T/test_gpu_rank
run mc-rows 175 env NDF_TEST_CASES=1 NDF_TEST_FILTER=test_gpu_rows compute-sanitizer --tool memcheck $T/test_gpu_ecc
run mc-strip 175 env NDF_TEST_CASES=1 NDF_TEST_FILTER=test_gpu_strip2 compute-sanitizer --tool memcheck $T/test_gpu_ecc
run rc-strip 175 env NDF_TEST_CASES=1 NDF_TEST_FILTER=test_gpu_strip2 compute-sanitizer --tool racecheck $T/test_gpu_ecc
run mc-rank 175 env NDF_TEST_CASES=1 NDF_TEST_FILTER=test_gpu_rank_tile2_pipe compute-sanitizer --tool memcheck $T/test_gpu_rank
run rc-rank 175 env NDF_TEST_CASES=1 NDF_TEST_FILTER=test_gpu_rank_tile2_pipe compute-sanitizer --tool racecheck $T/test_gpu_rank
wait
el tests
for f in $R/t/t-*.txt $R/t/neg-*.txt $R/t/mc-*.txt $R/t/rc-*.txt; do echo "== $(basename $f) $(grep -cE '^\[       OK' $f) ok; $(grep -E '^\[  (PASSED|FAILED)|ERROR SUMMARY|RACECHECK SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|mismatch|expected|seed|rror" $f | grep -v "ERROR SUMMARY" | head -4; done | tee $R/summary.txt
(cd $R && tar czf tests.tgz t && rm -rf t)
B=build-gpu/bench/ndf_bench
bj() { echo "{\"name\": \"## $(echo $* | grep -o 'NDF_[A-Z0-9_]*=[0-9a-z]*' | tr '\n' ' ')\"}" >> $R/bench.json; env "$@" >> $R/bench.json 2>> $R/bench.log; }
bj X=1 $B --only ecc --check-max-mb 70
el bench-ecc
bj NDF_ECC_ROWS=0 $B --no-check --only float32_256x256x256
bj NDF_ECC_ROWS=0 $B --no-check --only float32_512x512x512
bj NDF_ECC2_MC=4 NDF_ECC2_FENCE=sc NDF_ECC2_BIN=table $B --no-check --only ecc_float32_1024
bj NDF_ECC2_MC=4 NDF_ECC2_FENCE=sc NDF_ECC2_BIN=table $B --no-check --only ecc_float32_64x256
bj X=1 $B --only median_f32_1024x1024_s
bj X=1 $B --only median_u8_1024x1024_s31
bj NDF_RANK_TILE2_PIPE=3 $B --no-check --only 1024x1024_s31
bj NDF_RANK_TILE2_PIPE=8 $B --only f32_1024x1024_s31
bj NDF_RANK_TILE_S=32 $B --no-check --only f32_1024x1024_s31
bj NDF_ECC_ROWS=9 $B --no-check --only float32_512x512x512
bj NDF_ECC2_BIN=table $B --no-check --only ecc_float32_1024
bj NDF_ECC2_FENCE=sc $B --no-check --only ecc_float32_1024
el bench
python3 - $R/bench.json <<'PY'
import json,sys
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    print('%-46s %9s %s'%(d['name'], d.get('warm_ms'), d.get('check')))
PY
