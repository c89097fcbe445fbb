# run6d: mid-session batch on int6 (main + s6-ecc + s6-rank + s6-edtsi + s6-edt3)
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/p
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
el built
B=build-gpu/bench/ndf_bench; T=build-gpu/tests
san() { local tool=$1 name=$2 f=$3 to=${4:-200}; NDF_TEST_CASES=${SC:-4} NDF_TEST_FILTER="$f" timeout $to compute-sanitizer --tool $tool $T/$name > "$R/$tool-$name-$f.log" 2>&1; echo "$tool $name $f rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$R/$tool-$name-$f.log" | tail -1)"; }
{
san memcheck test_gpu_ecc 'test_gpu_brick' & san racecheck test_gpu_ecc 'test_gpu_brick' &
SC=2 san memcheck test_gpu_ecc 'test_gpu_nan_rejected' &
san memcheck test_gpu_distance 'test_gpu_edt_wenvp' & san racecheck test_gpu_distance 'test_gpu_edt_wenvp' &
san memcheck test_gpu_distance 'test_gpu_edt_paths' & san racecheck test_gpu_distance 'test_gpu_edt_paths' &
san memcheck test_gpu_rank 'test_gpu_rank_tile2_pipe' & san racecheck test_gpu_rank 'test_gpu_rank_tile2_pipe' &
wait; } > $R/san.txt 2>&1 &
SP=$!
NDF_TEST_CASES=4 timeout 210 ctest --test-dir build-gpu -L gpu -E grey -j8 --output-on-failure > $R/ctest.log 2>&1; el "ctest rc=$?"
wait $SP; el sanitizers; cat $R/san.txt
grep -E "Test +#|tests passed|FAILED|Failed" $R/ctest.log | tail -10
grep -B8 -E "\[  FAILED  \]|Assertion" $R/ctest.log | head -40
b() { local tag=$1; shift; timeout 90 env "$@" > $R/bench-$tag.json 2> $R/bench-$tag.log; el "bench $tag rc=$?"; }
b ecc $B --check-max-mb 20 --only ecc_
b ecc-b0 NDF_ECC_BRICK=0 NDF_ECC_MAPHDR=0 $B --no-check --only ecc_
b ecc-b1 NDF_ECC_BRICK=1 $B --no-check --only ecc_
b med $B --check-max-mb 20 --only 1024x1024_s
b med-p0 NDF_RANK_TILE2_PIPE=0 $B --no-check --only _s31
b med-p1 NDF_RANK_TILE2_PIPE=1 $B --no-check --only _s31
b edt $B --check-max-mb 20 --only edt_
b edt-old NDF_EDT_SERIAL=old NDF_EDT_SMID=old NDF_EDT_SROWS=old $B --no-check --only edt_
python3 - $R <<'PY'
import json,sys,glob,os
for f in sorted(glob.glob(sys.argv[1]+'/bench-*.json')):
    tag=os.path.basename(f)[6:-5]
    for l in open(f):
        try: d=json.loads(l)
        except: continue
        print('%-8s %-44s %9s %s'%(tag, d['name'], d.get('warm_ms'), d.get('check')))
PY
p() { name=$1; shift; timeout 40 bash bench/profile.sh "$@" > $R/p/prof-$name.txt 2>&1; el "prof $name rc=$?"; }
NDF_PROFILE_COUNT=1 p ecc2d ndf_ecc_brick --op ecc --dtype float32 --shape 1024,1024 --size 256
NDF_PROFILE_COUNT=1 p ecc3d ndf_ecc_brick --op ecc --dtype float32 --shape 256,256,256 --size 256
NDF_PROFILE_COUNT=1 p rank31 ndf_rank_tile2 --op median --dtype float32 --shape 1024,1024 --size 31
NDF_PROFILE_COUNT=2 p edtsi 'ndf_edt_(bfirst|wrows)' --op edt --dtype uint8 --shape 1024,1024 --size 1 --param 1
NDF_PROFILE_COUNT=3 p edt3d 'ndf_edt' --op edt --dtype uint8 --shape 256,256,256 --size 1
cd $OUT && tar czf r6d.tgz r && rm -rf r
