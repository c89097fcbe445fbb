# run19b: branch s18-batch-end -- run19a's full ECC GPU test stopped at its 220 s limit in test_gpu_rows (the 11th
# of 19; the [min, max] rows path, no changed code; 10 passed): the full test again with a 450 s limit and a
# time stamp on every line, beside small sanitizer runs (synccheck never run before; the waits of the new batch
# end) and the unforced 128^3 range call (the 2^21 staging rule) checked against the CPU.
# On the GPU machine, on s18-batch-end (carry .gpu): bash bench/results/2026-12-02-h200-session19/run19b-script.sh
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > /tmp/build.log 2>&1 || tail -20 /tmp/build.log
el built
T=build-gpu/tests
( s=$(date +%s); timeout 450 env NDF_TEST_SEED=1911 stdbuf -oL $T/test_gpu_ecc 2>&1 | while IFS= read -r l; do echo "[$(( $(date +%s) - s ))s] $l"; done > $R/t/t-ecc.txt; echo "rc=${PIPESTATUS[0]} $(( $(date +%s) - s ))s" >> $R/t/t-ecc.txt ) &
run() { out=$1; lim=$2; shift 2; ( s=$(date +%s); timeout $lim "$@" > $R/t/$out.txt 2>&1; echo "rc=$? $(( $(date +%s) - s ))s" >> $R/t/$out.txt ) & }
run sc-s2 200 env NDF_TEST_CASES=4 NDF_TEST_SEED=1912 NDF_TEST_FILTER=test_gpu_strip2 compute-sanitizer --tool synccheck $T/test_gpu_ecc
run sc-s3 200 env NDF_TEST_CASES=3 NDF_TEST_SEED=1913 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool synccheck $T/test_gpu_ecc
run rc-s2 200 env NDF_TEST_CASES=3 NDF_TEST_SEED=1914 NDF_TEST_FILTER=test_gpu_strip2 compute-sanitizer --tool racecheck $T/test_gpu_ecc
run b128 120 build-gpu/bench/ndf_bench --only ecc_range_float32_128x128x128 --check-max-mb 600 --reps 50 --deferred-errors
wait
el tests
for f in $R/t/*.txt; do echo "== $(basename $f) $(grep -cE '\[       OK' $f) ok; $(grep -E '\[  (PASSED|FAILED)|ERROR SUMMARY|RACECHECK SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|differ|seed|rror|warm_ms" $f | grep -v "SUMMARY" | head -4; done | tee $R/summary.txt
grep -E "RUN|OK|rc=" $R/t/t-ecc.txt | tail -40
cd $OUT && tar czf r19b.tgz r && rm -rf r
