# run8b: the Nsight source counters of run8a again (run8a's $OUT had too many files to come back), tarred
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/p
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake --build build-gpu > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
B=build-gpu/bench/ndf_bench
src() { name=$1; k=$2; shift 2; timeout 120 ncu --clock-control none --target-processes application-only -k "regex:$k" -s 3 -c 1 \
  --section SourceCounters --section WarpStateStats --section InstructionStats --section Occupancy --section LaunchStats --section SpeedOfLight --import-source yes -o $R/p/$name -f \
  $B --no-check --reps 3 "$@" > $R/p/$name.log 2>&1; el "$name rc=$?"
  ncu -i $R/p/$name.ncu-rep --page source --csv --print-source sass > $R/p/$name-src.csv 2>/dev/null
  ncu -i $R/p/$name.ncu-rep --page details > $R/p/$name-details.txt 2>/dev/null; rm -f $R/p/$name.ncu-rep; }
export NDF_NVRTC_LINEINFO=1 NDF_CACHE_DIR=/tmp/ndfc8
src rows3 ndf_ecc_rows --op ecc --dtype uint8 --shape 256,256,256 --size 256
export NDF_ECC_ROWS=1; src rows3f ndf_ecc_rows --op ecc --dtype float32 --shape 512,512,512 --size 256 ; unset NDF_ECC_ROWS
src pack3 ndf_ecc_pack --op ecc --dtype float32 --shape 256,256,256 --size 256
src r31 ndf_rank_tile2 --op median --dtype float32 --shape 1024,1024 --size 31
src strip1k ndf_ecc_strip2 --op ecc --dtype float32 --shape 1024,1024 --size 256
src strip64 ndf_ecc_strip2 --op ecc --dtype float32 --shape 64,256,256 --batch-dims 1 --size 256
ls -la $R/p
cd $OUT && tar czf r8b.tgz r && rm -rf r
