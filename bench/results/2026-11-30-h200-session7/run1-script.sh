# run7a: build; SASS + per-instruction Nsight counters of ecc pack (3-D, 2-D) and rank tile2 (size 31, unrolled/rolled); bench of rank31 unroll 0/1 and ecc
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/sass $R/p
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
el built
B=build-gpu/bench/ndf_bench
export NDF_NVRTC_LINEINFO=1
export NDF_CACHE_DIR=/tmp/ndfc7; rm -rf $NDF_CACHE_DIR; mkdir -p $NDF_CACHE_DIR
# populate the cache with exactly the kernels of interest
$B --no-check --reps 3 --op ecc --dtype float32 --shape 256,256,256 --size 256 > $R/b-ecc3.json 2>/dev/null
$B --no-check --reps 3 --op ecc --dtype float32 --shape 1024,1024 --size 256 > $R/b-ecc2.json 2>/dev/null
$B --no-check --reps 3 --op median --dtype float32 --shape 1024,1024 --size 31 > $R/b-r31.json 2>/dev/null
NDF_RANK_TILE2_UNROLL=0 $B --no-check --reps 3 --op median --dtype float32 --shape 1024,1024 --size 31 > $R/b-r31u0.json 2>/dev/null
el populated
python3 - $NDF_CACHE_DIR $R/sass <<'PY'
import os,sys,struct,subprocess,re,collections
d,o=sys.argv[1],sys.argv[2]
for f in sorted(os.listdir(d)):
    if not f.endswith('.ndfk'): continue
    b=open(os.path.join(d,f),'rb').read()
    kl=struct.unpack('<I',b[12:16])[0]; key=b[32:32+kl].decode(errors='replace'); p=b[32+kl:]
    if p[:1]!=b'C': continue
    cb=os.path.join(o,f[:-5]+'.cubin'); open(cb,'wb').write(p[1:])
    s=subprocess.run(['cuobjdump','-sass',cb],capture_output=True,text=True).stdout
    open(cb[:-6]+'.sass','w').write(key[:3000]+'\n----\n'+s)
    os.remove(cb)
    funcs=re.findall(r'Function : (\S+)',s)
    ops=collections.Counter(m.group(1).split('.')[0] for m in re.finditer(r'/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)',s))
    print(f, len(s), funcs[:6], sum(ops.values()), ops.most_common(14))
PY
el sass
# per-instruction executed counts + stall samples (source page, SASS) of one launch each
src() { name=$1; k=$2; shift 2; timeout 120 ncu --clock-control none --target-processes application-only -k "regex:$k" -s 3 -c 1 \
  --section SourceCounters --section WarpStateStats --section InstructionStats --import-source yes -o $R/p/$name -f \
  $B --no-check --reps 3 "$@" > $R/p/$name.log 2>&1; el "$name rc=$?"
  ncu -i $R/p/$name.ncu-rep --page source --csv --print-source sass > $R/p/$name-src.csv 2>/dev/null
  ncu -i $R/p/$name.ncu-rep --page details > $R/p/$name-details.txt 2>/dev/null; rm -f $R/p/$name.ncu-rep; }
src ecc3 ndf_ecc_pack --op ecc --dtype float32 --shape 256,256,256 --size 256
src ecc2 ndf_ecc_pack --op ecc --dtype float32 --shape 1024,1024 --size 256
src r31 ndf_rank_tile2 --op median --dtype float32 --shape 1024,1024 --size 31
NDF_RANK_TILE2_UNROLL=0 src r31u0 ndf_rank_tile2 --op median --dtype float32 --shape 1024,1024 --size 31
# warm timings: rank31 default vs rolled, u8; ecc defaults
for u in 1 0; do for dt in float32 uint8; do NDF_RANK_TILE2_UNROLL=$u $B --no-check --reps 20 --op median --dtype $dt --shape 1024,1024 --size 31 >> $R/bench.json 2>/dev/null; done; done
NDF_RANK_TILE2_UNROLL=0 $B --no-check --reps 20 --op median --dtype float32 --shape 1024,1024 --size 3 >> $R/bench.json 2>/dev/null
$B --no-check --reps 20 --op median --dtype float32 --shape 1024,1024 --size 3 >> $R/bench.json 2>/dev/null
timeout 100 $B --only ecc --no-check >> $R/bench.json 2>/dev/null
el bench
python3 - $R/bench.json <<'PY'
import json,sys
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    print('%-46s %9s'%(d['name'], d.get('warm_ms')))
PY
cd $OUT && tar czf r7a.tgz r && rm -rf r
