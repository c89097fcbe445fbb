# run18a (PREPARED in session 17, NOT RUN): compute-sanitizer on ndf_ecc_strip2t at 3 blocks per SM (landed in
# session 17 after run17f's tests and benchmark; device time ran out before memcheck), plus the full ECC GPU
# test alone.  On the GPU machine, on main (carry .gpu): bash bench/results/2026-12-01-h200-session17/run18a-script.sh
source .gpu/env.sh
R=$OUT/r; mkdir -p $R
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
T=build-gpu/tests
( timeout 200 env NDF_TEST_CASES=4 NDF_TEST_SEED=1801 NDF_TEST_FILTER=test_gpu_strip2 compute-sanitizer --tool memcheck $T/test_gpu_ecc > $R/mc-s2.txt 2>&1; echo "rc=$?" >> $R/mc-s2.txt ) &
( timeout 200 env NDF_TEST_CASES=2 NDF_TEST_SEED=1802 NDF_TEST_FILTER=test_gpu_strip2 compute-sanitizer --tool racecheck $T/test_gpu_ecc > $R/rc-s2.txt 2>&1; echo "rc=$?" >> $R/rc-s2.txt ) &
( timeout 250 env NDF_TEST_SEED=1803 $T/test_gpu_ecc > $R/t-ecc.txt 2>&1; echo "rc=$?" >> $R/t-ecc.txt ) &
wait
for f in $R/*.txt; do echo "== $(basename $f) $(grep -E '^\[  (PASSED|FAILED)|ERROR SUMMARY|RACECHECK SUMMARY|^rc=' $f | tr '\n' ' ')"; done
cd $OUT && tar czf r18a.tgz r && rm -rf r
