source .gpu/env.sh
R=$OUT/r; mkdir -p $R/src
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
el built
gcc -O1 -Iinclude .gpu/repro_taps.c -Lbuild-gpu -lndforge -Wl,-rpath,$PWD/build-gpu -o /tmp/rt && (timeout 100 /tmp/rt > $R/repro.txt 2>&1; echo "repro rc=$?" >> $R/repro.txt) &
(NDF_TEST_SEED=5506311715 NDF_TEST_CASES=3 NDF_TEST_FILTER='test_gpu_algorithms' timeout 170 build-gpu/tests/test_gpu_grey > $R/grey-seed.log 2>&1; echo "grey seed rc=$?") &
(NDF_TEST_FILTER='test_gpu_table_churn' timeout 170 build-gpu/tests/test_gpu_grey > $R/grey-churn.log 2>&1; echo "grey churn rc=$?") &
(NDF_NVRTC_LINEINFO=1 NDF_DUMP_SOURCE=$R/src NDF_TEST_CASES=1 NDF_TEST_FILTER='test_cluster' timeout 160 compute-sanitizer --tool racecheck --print-limit 200 build-gpu/tests/test_gpu_sinkhorn > $R/race-sink.log 2>&1; echo "race rc=$?") &
wait; el done
cat $R/repro.txt; tail -3 $R/grey-seed.log $R/grey-churn.log; grep -c "Race reported" $R/race-sink.log
cd $OUT && tar czf r6c.tgz r && rm -rf r
