# run4: mid-session batch of the six helper branches (int5)
source .gpu/env.sh
R=$OUT/r; mkdir -p $R
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/build.log 2>&1 || { tail -30 $R/build.log; }
el built
B=build-gpu/bench/ndf_bench; T=build-gpu/tests
timeout 150 $T/test_gpu_sinkhorn > $R/sink-test.log 2>&1; el "sinkhorn test rc=$?"; grep -E "PASSED|FAILED|cluster" $R/sink-test.log | tail -4
bn() { local tag=$1; shift; echo "== $tag" >> $R/bench.txt; timeout 60 env "$@" >> $R/bench.txt 2>&1; }
{
bn sink-new $B --no-check --only sinkhorn_ --human
bn sink-barrier NDF_SINKHORN_CLSYNC=barrier $B --no-check --only sinkhorn_f32_16x --human
bn ecc-new $B --no-check --only ecc_ --human
bn ecc-fuse0 NDF_ECC_FUSE=0 $B --no-check --only ecc_float32_ --human
bn soft-new $B --no-check --only soft_ecc --human
bn soft-unfused NDF_SOFT_ECC=unfused $B --no-check --only soft_ecc --human
bn soft-old NDF_SOFT_ECC=old $B --no-check --only soft_ecc --human
bn rank-new $B --no-check --only median_ --human
bn rank-old NDF_RANK_TILE=1 $B --no-check --only median_f32_1024x1024_s31 --human
bn edt-new $B --no-check --only edt_ --human
bn edt-old NDF_EDT_SEARCH=0 NDF_EDT_SERIAL=old $B --no-check --only edt_ --human
bn edt-cap16 NDF_EDT_SCAP=16 $B --no-check --only edt_u8_256 --human
bn edt-cap32 NDF_EDT_SCAP=32 $B --no-check --only edt_u8_256 --human
for s in 3 7 15 31 63; do for L in regs lined; do bn "grey s$s $L" NDF_GREY_LINE=$L $B --no-check --op dilation --dtype float32 --shape 2048,2048 --size $s --human; done; done
for l in 32 128 256; do bn "grey L=$l" NDF_GREY_LINEV_L=$l $B --no-check --op dilation --dtype float32 --shape 2048,2048 --size 63 --human; done
bn grey-3d15 $B --no-check --op erosion --dtype float32 --shape 256,256,256 --size 15 --human
bn grey-3d15-lined NDF_GREY_LINE=lined $B --no-check --op erosion --dtype float32 --shape 256,256,256 --size 15 --human
}
el benched
grep -vE '^\{' $R/bench.txt | grep -E "==|ms|rror" | cut -c1-150
NDF_TEST_CASES=6 timeout 280 ctest --test-dir build-gpu -L gpu -j8 --output-on-failure > $R/ctest.log 2>&1; el "ctest rc=$?"
grep -E "Test +#|tests passed|FAILED|Failed" $R/ctest.log | tail -12
grep -B5 -E "\[  FAILED  \]|Assertion|mismatch" $R/ctest.log | head -40
cd $OUT && tar czf all4.tgz r && rm -rf r
