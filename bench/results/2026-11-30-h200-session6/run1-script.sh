# run6a: build, Nsight of the unmet workloads (new kernels), bench of the unmet families with the CPU check
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/p
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
el built
B=build-gpu/bench/ndf_bench
p() { name=$1; shift; timeout 50 bash bench/profile.sh "$@" > $R/p/prof-$name.txt 2>&1; el "$name rc=$?"; }
NDF_PROFILE_COUNT=8 p edt3d 'edt' --op edt --dtype uint8 --shape 256,256,256 --size 1
NDF_PROFILE_COUNT=4 p edtsi 'edt' --op edt --dtype uint8 --shape 1024,1024 --size 1 --param 1
NDF_PROFILE_COUNT=2 p rank31 'rank' --op median --dtype float32 --shape 1024,1024 --size 31
NDF_PROFILE_COUNT=2 p rank3 'rank' --op median --dtype float32 --shape 1024,1024 --size 3
NDF_PROFILE_COUNT=2 p ecc2d 'ecc' --op ecc --dtype float32 --shape 1024,1024 --size 256
NDF_PROFILE_COUNT=2 p eccb 'ecc' --op ecc --dtype float32 --shape 64,256,256 --size 256 --batch-dims 1
NDF_PROFILE_COUNT=2 p ecc3d 'ecc' --op ecc --dtype float32 --shape 256,256,256 --size 256
NDF_PROFILE_COUNT=2 p ecc8k 'ecc' --op ecc --dtype float32 --shape 8192,8192 --size 256
for o in edt median ecc; do timeout 60 $B --only $o --check-max-mb 70 >> $R/bench.json 2>> $R/bench.log; el "bench $o rc=$?"; done
python3 - $R/bench.json <<'PY'
import json,sys
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    print('%-46s %9s %s'%(d['name'], d.get('warm_ms'), d.get('check')))
PY
for f in $R/p/*.txt; do echo "== $f"; grep -E "^  ndf_|Duration|Achieved Occupancy|DRAM Throughput|Registers Per" $f | head -40; done > $R/prof-summary.txt
cd $OUT && tar czf r6a.tgz r && rm -rf r
