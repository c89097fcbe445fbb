# run6e: final. Phase 1 (parallel): GPU ctest + sanitizers of kernels changed after run 4. Phase 2 (quiet GPU): bench of #5/#7/#8 families, new vs old.
source .gpu/env.sh
R=$OUT/r; mkdir -p $R
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
el built
B=build-gpu/bench/ndf_bench; T=build-gpu/tests
san() { local tool=$1 name=$2 f=$3 to=${4:-200}; NDF_TEST_CASES=${SC:-2} NDF_TEST_FILTER="$f" timeout $to compute-sanitizer --tool $tool $T/$name > "$R/$tool-$name-$f.log" 2>&1; echo "$tool $name $f rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$R/$tool-$name-$f.log" | tail -1)"; }
{
san memcheck test_gpu_ecc 'test_gpu_brick' & san memcheck test_gpu_ecc 'test_gpu_pack_edges*' &
san memcheck test_gpu_distance 'test_gpu_edt_paths' & san racecheck test_gpu_distance 'test_gpu_edt_wenvp' &
san memcheck test_gpu_rank 'test_gpu_rank_tile2_pipe' & san memcheck test_gpu_grey 'test_gpu_table_churn' &
wait; } > $R/san.txt 2>&1 &
SP=$!
NDF_TEST_CASES=3 timeout ${P1:-230} ctest --test-dir build-gpu -L gpu -j8 --output-on-failure > $R/ctest.log 2>&1; el "ctest rc=$?"
wait $SP; el sanitizers; cat $R/san.txt
grep -E "Test +#|tests passed|FAILED|Failed" $R/ctest.log | tail -10
grep -B8 -E "\[  FAILED  \]|Assertion" $R/ctest.log | head -30
b() { local tag=$1; shift; timeout 80 env "$@" > $R/bench-$tag.json 2> $R/bench-$tag.log; el "bench $tag rc=$?"; }
b edt $B --no-check --only dt_
b med $B --no-check --only median_
b ecc $B --no-check --only ecc_
b ecc-alt ${ECC_ALT:-NDF_ECC_BRICK=2} $B --no-check --only ecc_float
b edt-alt ${EDT_ALT:-NDF_EDT_SMID=old} $B --no-check --only edt_u8_
python3 - $R <<'PY'
import json,sys,glob,os
for f in sorted(glob.glob(sys.argv[1]+'/bench-*.json')):
    tag=os.path.basename(f)[6:-5]
    for l in open(f):
        try: d=json.loads(l)
        except: continue
        print('%-8s %-44s %9s'%(tag, d['name'], d.get('warm_ms')))
PY
cd $OUT && tar czf r6e.tgz r && rm -rf r
