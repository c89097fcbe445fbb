# run7b: fixed cost of one ECC call (tiny inputs), float (syncs for the NaN check) vs uint8 (no sync)
source .gpu/env.sh
R=$OUT/r; mkdir -p $R
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
B=build-gpu/bench/ndf_bench
for dt in float32 uint8; do for sh in 16,16 64,64 256,256 1024,1024 8,8,8 64,256,256; do
  bd=0; [ $sh = 64,256,256 ] && bd=1
  $B --no-check --reps 50 --op ecc --dtype $dt --shape $sh --size 256 --batch-dims $bd >> $R/bench.json 2>/dev/null
done; done
$B --no-check --reps 50 --op median --dtype float32 --shape 16,16 --size 3 >> $R/bench.json 2>/dev/null
$B --no-check --reps 50 --op edt --dtype uint8 --shape 16,16 --size 1 >> $R/bench.json 2>/dev/null
python3 - $R/bench.json <<'PY'
import json,sys
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    print('%-46s warm %9s host_us %s'%(d['name'], d.get('warm_ms'), d.get('host_us')))
PY
