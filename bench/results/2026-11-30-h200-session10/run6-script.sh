# run10f: host time to the launch without the profiler's allocation (NDF_ECC2_PROF), 1024^2 and 64 x 256^2
source .gpu/env.sh
t0=$(date +%s)
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DNDF_BUILD_TESTS=OFF >/dev/null && cmake --build build-gpu --target ndf_bench > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - t0 )) s"
B=build-gpu/bench/ndf_bench
for s in ecc_float32_1024x1024 ecc_float32_64x256x256_b1; do
  echo "== $s"; NDF_ECC2_PROF=1 timeout 60 $B --only $s --no-check --reps 40 2>&1 >/dev/null | grep "ndf prof" | tail -4
done
echo "== uint8 64x256x256"; NDF_ECC2_PROF=1 timeout 60 $B --op ecc --dtype uint8 --shape 64x256x256 --batch-dims 1 --size 256 --no-check --reps 40 2>&1 >/dev/null | grep "ndf prof" | tail -3
