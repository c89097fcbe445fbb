# run7c: what one small ECC call costs on the GPU: kernel durations (ncu) and the API/GPU timeline (nsys if present)
source .gpu/env.sh
R=$OUT/r; mkdir -p $R
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
B=build-gpu/bench/ndf_bench
which nsys ncu > $R/tools.txt 2>&1
for dt in uint8 float32; do for sh in 16,16 1024,1024; do
  timeout 60 ncu --clock-control none --target-processes application-only -s 6 -c 6 --section SpeedOfLight --section LaunchStats \
    $B --no-check --reps 3 --op ecc --dtype $dt --shape $sh --size 256 > $R/ncu-$dt-$sh.txt 2>&1
  grep -E "^  [a-z_]+ \(|Duration|Grid Size|Registers Per|Dynamic Shared" $R/ncu-$dt-$sh.txt | head -40 > $R/sum-$dt-$sh.txt
done; done
if which nsys >/dev/null 2>&1; then
  for dt in uint8 float32; do
    timeout 90 nsys profile -t cuda --stats=false -o $R/ns-$dt -f true $B --no-check --reps 20 --op ecc --dtype $dt --shape 16,16 --size 256 > /dev/null 2>&1
    timeout 60 nsys stats -r cuda_gpu_trace,cuda_api_trace -f csv -o $R/st-$dt $R/ns-$dt.nsys-rep > /dev/null 2>&1
    rm -f $R/ns-$dt.nsys-rep $R/ns-$dt.sqlite
  done
fi
ls -la $R
cd $OUT && tar czf r7c.tgz r && rm -rf r
