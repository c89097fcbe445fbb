# run13b: Nsight source counters (SASS) of rank_tile2 PIPE 10 and PIPE 6 at 31x31 1024^2 float32
source .gpu/env.sh
R=$OUT/r; mkdir -p $R
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
B=build-gpu/bench/ndf_bench
for P in 10 6; do
  env NDF_RANK_TILE2_PIPE=$P timeout 200 ncu --clock-control none -k ndf_rank_tile2 -c 1 --section SourceCounters --section WarpStateStats --section InstructionStats -o $R/p$P $B --only median_f32_1024x1024_s31 --no-check --reps 1 > $R/ncu-run-p$P.txt 2>&1; tail -2 $R/ncu-run-p$P.txt
  ncu -i $R/p$P.ncu-rep --page source --csv --print-source sass > $R/p$P-source.csv 2>&1; wc -l $R/p$P-source.csv
  ncu -i $R/p$P.ncu-rep --page details --print-details all > $R/p$P-details.txt 2>&1
  rm -f $R/p$P.ncu-rep
done
el ncu
cd $OUT && tar czf r13b.tgz r && rm -rf r
