# run7d: timeline (globaltimer at phase marks, printed at the end) of ndf_ecc_pack, block 0, last block, the curve writer
# NOTE: run with a temporary (uncommitted) instrumentation of templates/ecc.cu ndf_ecc_pack: thread 0 of every block read
# %globaltimer into tl_[0..7] at: kernel start (0), before/after ndf_ecc_grid_sync (1, 2), before the shist zeroing
# (3: thresholds and tables done), before the march loop (4), after it (5), at the per-image ticket after the
# histogram flush and fence (6), after the last block's prefix (7); one printf per block at the kernel end
# (block 0, the last block, and the block that wrote a curve). Times in the run4-tl-* files are ns.
source .gpu/env.sh
R=$OUT/r; mkdir -p $R
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
B=build-gpu/bench/ndf_bench
export NDF_CACHE_DIR=/tmp/ndfc7e
for dt in uint8 float32; do for sh in 16,16 1024,1024 256,256,256; do
  $B --no-check --reps 3 --op ecc --dtype $dt --shape $sh --size 256 > $R/tl-$dt-${sh//,/x}.txt 2>&1
done; done
python3 - $R <<'PY'
import sys,os,glob
for f in sorted(glob.glob(sys.argv[1]+'/tl-*.txt')):
    L=[l.split() for l in open(f) if l.startswith('TL ')]
    print(f.split('/')[-1], len(L), 'us from block 0 start: phases 1 pre-gridsync, 2 post, 3 thresholds, 4 march start, 5 march end, 6 ticket, 7 curve done')
    # launches: block 0 lines start groups
    runs=[]; cur=[]
    for t in L:
        if t[1]=='0' and cur: runs.append(cur); cur=[]
        cur.append(t)
    runs.append(cur)
    for r in runs[-2:]:
        b0=[t for t in r if t[1]=='0']
        if not b0: continue
        t0=int(b0[0][2])
        for t in r:
            print('   b%-4s'%t[1], ' '.join('%7.2f'%((int(x)-t0)/1000) if x!='0' else '      -' for x in t[2:]))
PY
