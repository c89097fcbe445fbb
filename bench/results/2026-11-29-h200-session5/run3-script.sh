# run5: final. Phase 1 (parallel, correctness): GPU ctest + memcheck/racecheck of the new kernels. Phase 2 (quiet GPU): bench.
source .gpu/env.sh
R=$OUT/r; mkdir -p $R
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
git log --oneline -1 > $R/commit.txt 2>/dev/null
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/build.log 2>&1 || { tail -30 $R/build.log; }
el built
B=build-gpu/bench/ndf_bench; T=build-gpu/tests; P1=${P1:-220}
san() { local tool=$1 name=$2 f=$3; NDF_TEST_CASES=1 NDF_TEST_FILTER="$f" timeout $P1 compute-sanitizer --tool $tool $T/$name > "$R/$tool-$name-$f.log" 2>&1; echo "$tool $name $f rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$R/$tool-$name-$f.log" | tail -1)"; }
{
san memcheck test_gpu_sinkhorn 'test_*' & san memcheck test_gpu_ecc 'test_gpu_*' & san memcheck test_gpu_distance 'test_gpu_*' &
san memcheck test_gpu_grey 'test_gpu_line_doubling' & san memcheck test_gpu_rank 'test_gpu_rank_tile' & san memcheck test_gpu_ect 'test_*' &
san racecheck test_gpu_rank 'test_gpu_rank_benchmark_shapes' & san racecheck test_gpu_ecc 'test_gpu_soft_random' & san racecheck test_gpu_distance 'test_gpu_edt_paths' &
wait; } > $R/san.txt 2>&1 &
SP=$!
NDF_TEST_CASES=4 timeout $P1 ctest --test-dir build-gpu -L gpu -j8 --output-on-failure > $R/ctest.log 2>&1; el "ctest rc=$?"
wait $SP; el sanitizers; cat $R/san.txt
grep -E "Test +#|tests passed|FAILED|Failed" $R/ctest.log | tail -10
grep -B5 -E "\[  FAILED  \]|Assertion" $R/ctest.log | head -30
timeout $(( 440 - ($(date +%s) - t0) )) $B --no-check > $R/bench.json 2> $R/bench.log; el "bench rc=$?"
python3 - $R/bench.json <<'PY'
import json,sys
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    print('%-46s %9s'%(d['name'], d.get('warm_ms')))
PY
cd $OUT && tar czf all5.tgz r && rm -rf r
