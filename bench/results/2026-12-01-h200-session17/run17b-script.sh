# run17b: run17a's t-s3 (NDF_TEST_SEED=1702, strip3 cases, no setting) ran past 200 s on the branch s16-ecc-rare
# (main with seed 1652 passed in run16e).  Which case, and does main's kernel (s17a.patch reversed) hang there too?
# Each case printed as it runs (NDF_TEST_VERBOSE).  On the GPU machine, on s17-merge (carry .gpu):
# bash bench/results/2026-12-01-h200-session17/run17b-script.sh
source .gpu/env.sh
R=$OUT/r; mkdir -p $R
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
P=bench/results/2026-12-01-h200-session16/s17a.patch
mkdir -p /tmp/alt && tar --exclude=./build-gpu -cf - . | tar -xf - -C /tmp/alt && (cd /tmp/alt && patch -s -p1 -R < $P) || echo "alt tree failed"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
(cd /tmp/alt && cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > /tmp/alt-build.log 2>&1) || tail -5 /tmp/alt-build.log
el built
tr() { out=$1; lim=$2; shift 2; ( s=$(date +%s); timeout $lim "$@" > $R/$out.txt 2>&1; echo "rc=$? $(( $(date +%s) - s ))s" >> $R/$out.txt ) & }
tr new-1702 170 env NDF_TEST_VERBOSE=1 NDF_TEST_CASES=80 NDF_TEST_SEED=1702 NDF_TEST_FILTER=test_gpu_strip3 build-gpu/tests/test_gpu_ecc
tr old-1702 170 env NDF_TEST_VERBOSE=1 NDF_TEST_CASES=80 NDF_TEST_SEED=1702 NDF_TEST_FILTER=test_gpu_strip3 /tmp/alt/build-gpu/tests/test_gpu_ecc
tr new-1652 170 env NDF_TEST_VERBOSE=1 NDF_TEST_CASES=80 NDF_TEST_SEED=1652 NDF_TEST_FILTER=test_gpu_strip3 build-gpu/tests/test_gpu_ecc
wait
el tests
for f in $R/*-1*.txt; do echo "== $(basename $f): $(grep -c '^case' $f) cases, $(tail -1 $f)"; tail -3 $f | cut -c1-300; done
cd $OUT && tar czf r17b.tgz r && rm -rf r
