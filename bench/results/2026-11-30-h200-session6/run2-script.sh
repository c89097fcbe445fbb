# run6b: GPU tests + memcheck of the host-refactored paths + racecheck of st.async Sinkhorn cluster and fused ECC
source .gpu/env.sh
R=$OUT/r; mkdir -p $R
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake --build build-gpu > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
T=build-gpu/tests
san() { local tool=$1 name=$2 f=$3 to=${4:-240}; NDF_TEST_CASES=1 NDF_TEST_FILTER="$f" timeout $to compute-sanitizer --tool $tool $T/$name > "$R/$tool-$name-$f.log" 2>&1; echo "$tool $name $f rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$R/$tool-$name-$f.log" | tail -1)"; }
{
san memcheck test_gpu_ecc 'test_gpu_*' & san memcheck test_gpu_ect 'test_*' & san memcheck test_gpu_distance_bf 'test_*' &
san memcheck test_gpu_distance 'test_gpu_*' & san memcheck test_gpu_grey 'test_gpu_line_doubling' &
san racecheck test_gpu_sinkhorn 'test_cluster*' 400 & san racecheck test_gpu_ecc 'test_gpu_pack_edges' 300 &
wait; } > $R/san.txt 2>&1 &
SP=$!
NDF_TEST_CASES=3 timeout 400 ctest --test-dir build-gpu -L gpu -j8 --output-on-failure > $R/ctest.log 2>&1; el "ctest rc=$?"
wait $SP; el sanitizers; cat $R/san.txt
grep -E "Test +#|tests passed|FAILED|Failed" $R/ctest.log | tail -12
grep -B5 -E "\[  FAILED  \]|Assertion" $R/ctest.log | head -30
cd $OUT && tar czf r6b.tgz r && rm -rf r
