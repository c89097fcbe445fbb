# run7e: early batch -- each helper branch built from its snapshot (.gpu/src-<name>), GPU tests (+memcheck) of its new
# kernel, bench new vs old path, Nsight source counters of the new kernel
source .gpu/env.sh
R=$OUT/r; mkdir -p $R
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
for n in ecc3r ecc2 rank; do
  ( cd .gpu/src-$n && cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/build-$n.log 2>&1 ) || { echo "BUILD FAIL $n"; tail -20 $R/build-$n.log; }
done
el built
export NDF_TEST_CASES=3
# tests in parallel (different processes on one GPU)
( cd .gpu/src-ecc3r && NDF_TEST_FILTER='test_gpu_rows' timeout 150 build-gpu/tests/test_gpu_ecc > $R/t-ecc3r.txt 2>&1; echo "rc=$?" >> $R/t-ecc3r.txt ) &
( cd .gpu/src-ecc2 && NDF_TEST_FILTER='test_gpu_strip2' timeout 150 build-gpu/tests/test_gpu_ecc > $R/t-ecc2.txt 2>&1; echo "rc=$?" >> $R/t-ecc2.txt ) &
( cd .gpu/src-rank && NDF_TEST_FILTER='test_gpu_rank_tile2_pipe' timeout 150 build-gpu/tests/test_gpu_rank > $R/t-rank.txt 2>&1; echo "rc=$?" >> $R/t-rank.txt ) &
wait
el tests
for f in $R/t-*.txt $R/mc-*.txt; do echo "== $f"; grep -E "PASSED|FAILED|ERROR SUMMARY|rc=|failed|seed" $f | head -8; done
# benches, one at a time (with the CPU check where the input is small enough)
bb() { nm=$1; shift; ( cd .gpu/src-$nm && env "$@" ) >> $R/bench-$nm.json 2>> $R/bench-$nm.log; }
E3="build-gpu/bench/ndf_bench --reps 20 --check-max-mb 70 --op ecc --size 256"
for v in 1 0; do for sh in 128,128,128 256,256,256 512,512,512; do bb ecc3r NDF_ECC_ROWS=$v $E3 --dtype float32 --shape $sh; done
  bb ecc3r NDF_ECC_ROWS=$v $E3 --dtype uint8 --shape 256,256,256; done
el bench ecc3r
for v in new old; do for sh in 16,16 1024,1024 8192,8192; do bb ecc2 NDF_ECC_2D=$v $E3 --dtype float32 --shape $sh; done
  bb ecc2 NDF_ECC_2D=$v $E3 --dtype float32 --shape 64,256,256 --batch-dims 1; bb ecc2 NDF_ECC_2D=$v $E3 --dtype uint8 --shape 1024,1024; done
el bench ecc2
M="build-gpu/bench/ndf_bench --reps 20 --op median --shape 1024,1024"
for p in 4 3 1; do bb rank NDF_RANK_TILE2_PIPE=$p $M --dtype float32 --size 31; bb rank NDF_RANK_TILE2_PIPE=$p $M --dtype uint8 --size 31; done
bb rank X=1 $M --dtype float32 --size 3
( cd .gpu/src-rank && timeout 120 build-gpu/bench/ndf_bench --only median >> $R/bench-rank.json 2>> $R/bench-rank.log )
el bench rank
python3 - $R <<'PY'
import json,sys,glob
for f in sorted(glob.glob(sys.argv[1]+'/bench-*.json')):
    print('==', f.split('/')[-1])
    for l in open(f):
        try: d=json.loads(l)
        except: continue
        print('  %-44s %9s %s'%(d['name'], d.get('warm_ms'), d.get('check')))
PY
# Nsight source counters of the new kernels
src() { nm=$1; name=$2; k=$3; shift 3; ( cd .gpu/src-$nm && timeout 100 ncu --clock-control none --target-processes application-only -k "regex:$k" -s 3 -c 1 \
  --section SourceCounters --section WarpStateStats --section InstructionStats --section SpeedOfLight --section Occupancy --import-source yes -o $R/$name -f \
  build-gpu/bench/ndf_bench --no-check --reps 3 "$@" > $R/$name.log 2>&1
  ncu -i $R/$name.ncu-rep --page source --csv --print-source sass > $R/$name-src.csv 2>/dev/null
  ncu -i $R/$name.ncu-rep --page details > $R/$name-details.txt 2>/dev/null; rm -f $R/$name.ncu-rep ); el "ncu $name"; }
NDF_NVRTC_LINEINFO=1 src ecc3r rows256 ndf_ecc_rows --op ecc --dtype float32 --shape 256,256,256 --size 256
NDF_NVRTC_LINEINFO=1 src ecc2 strip8k ndf_ecc_strip2 --op ecc --dtype float32 --shape 8192,8192 --size 256
NDF_NVRTC_LINEINFO=1 src ecc2 strip1k ndf_ecc_strip2 --op ecc --dtype float32 --shape 1024,1024 --size 256
NDF_NVRTC_LINEINFO=1 src rank r31 ndf_rank_tile2 --op median --dtype float32 --shape 1024,1024 --size 31
cd $OUT && tar czf r7e.tgz r && rm -rf r
