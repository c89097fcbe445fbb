# run16b: Nsight Compute of the 3-D march at 256^3, unstaged (ndf_ecc_strip3, NDF_ECC3_STG=0, the default there)
# and staged (ndf_ecc_strip3s, NDF_ECC3_STG=1): why the staged planes gain nothing at 256^3 (source counters,
# warp states, L1 wavefronts).  On the GPU machine (carry .gpu): bash bench/results/2026-12-01-h200-session16/run16b-script.sh
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/t/build.log 2>&1 || { tail -30 $R/t/build.log; exit 1; }
el built
B=build-gpu/bench/ndf_bench
export NDF_NVRTC_LINEINFO=1 NDF_CACHE_DIR=/tmp/ndfc16b
prof() { name=$1; k=$2; shift 2
  timeout 150 env "$@" ncu --clock-control none --kernel-name $k --launch-skip 5 --launch-count 1 --section SourceCounters --section WarpStateStats \
    --section InstructionStats --section SchedulerStats --section MemoryWorkloadAnalysis_Tables --section SpeedOfLight -o $R/$name \
    $B --only ecc_float32_256x256x256 --no-check --reps 10 > $R/$name-run.txt 2>&1; tail -2 $R/$name-run.txt
  ncu -i $R/$name.ncu-rep --page source --csv --print-source sass > $R/$name-source.csv 2>&1
  ncu -i $R/$name.ncu-rep --page details --print-details all > $R/$name-details.txt 2>&1
  rm -f $R/$name.ncu-rep; el "ncu $name"; }
prof s3 ndf_ecc_strip3 NDF_ECC3_STG=0
prof s3s ndf_ecc_strip3s NDF_ECC3_STG=1
for n in s3 s3s; do echo "== $n"; grep -E "Duration|Executed Ipc A|Issue Slots Busy|Registers Per|Achieved Occupancy|Executed Instructions  |No Eligible|Stall|L1/TEX Hit|Wavefronts|Local" $R/$n-details.txt | head -60; done > $R/summary.txt
gzip -9 $R/*-source.csv
cd $OUT && tar czf r16b.tgz r && rm -rf r
