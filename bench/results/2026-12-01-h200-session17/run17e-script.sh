# run17e: run17d's full ECC GPU test ran past its 170 s limit in test_gpu_benchmark_shapes (racecheck in
# parallel); the two tests it did not finish, alone, and staged against unstaged at 256^3 (the size rule).
# On the GPU machine, on s17-p1 (carry .gpu): bash bench/results/2026-12-01-h200-session17/run17e-script.sh
source .gpu/env.sh
R=$OUT/r; mkdir -p $R
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
el built
for t in test_gpu_benchmark_shapes test_gpu_soft_timing; do
  ( s=$(date +%s); timeout 150 env NDF_TEST_SEED=1731 NDF_TEST_FILTER=$t build-gpu/tests/test_gpu_ecc > $R/$t.txt 2>&1; echo "rc=$? $(( $(date +%s) - s ))s" >> $R/$t.txt ) &
done
wait
el tests
for f in $R/test_*.txt; do echo "== $(basename $f): $(grep -E '^\[  (PASSED|FAILED)|^rc=' $f | tr '\n' ' ')"; grep -E "ms \(CPU|FAILED|seed" $f | head -8; done | tee $R/summary.txt
for i in 1 2; do for stg in 0 1; do echo "STG=$stg $(NDF_ECC3_STG=$stg timeout 60 build-gpu/bench/ndf_bench --only ecc_float32_256x256x256 --no-check --reps 200 --deferred-errors 2>/dev/null | grep -o '"warm_ms": [0-9.]*')"; done; done | tee $R/stg.txt
el done
cd $OUT && tar czf r17e.tgz r && rm -rf r
