# run16c: the binner's rare walk in one rolled loop (no calls inside the march's loop body): SASS loop sizes
# (nvcc + cuobjdump, this tree against the tree before, s16c.patch reversed), the ECC GPU tests, strip3 under
# memcheck, the benchmark A/B (before / now) at 512^3, 256^3 (unstaged and NDF_ECC3_STG=1), T-cons, 128^3 and
# the 2-D workloads, march profiles at 256^3.  On the GPU machine (carry .gpu):
# bash bench/results/2026-12-01-h200-session16/run16c-script.sh
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
P=bench/results/2026-12-01-h200-session16/s16c.patch
mkdir -p /tmp/alt && tar --exclude=./build-gpu -cf - . | tar -xf - -C /tmp/alt && (cd /tmp/alt && patch -s -p1 -R < $P) || echo "alt tree failed"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/t/build.log 2>&1 || { tail -30 $R/t/build.log; exit 1; }
(cd /tmp/alt && cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > /tmp/alt-build.log 2>&1) || tail -5 /tmp/alt-build.log
el built
T=build-gpu/tests
run() { out=$1; lim=$2; shift 2; ( timeout $lim "$@" > $R/t/$out.txt 2>&1; echo "rc=$?" >> $R/t/$out.txt ) & }
run t-s3 200 env NDF_TEST_CASES=80 NDF_TEST_SEED=1631 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc
run t-ecc 200 env NDF_TEST_CASES=3 NDF_TEST_SEED=1632 $T/test_gpu_ecc
run t-s2 200 env NDF_TEST_CASES=40 NDF_TEST_SEED=1633 NDF_TEST_FILTER=test_gpu_strip2 $T/test_gpu_ecc
run mc-s3 200 env NDF_ECC3_STG=1 NDF_TEST_CASES=4 NDF_TEST_SEED=1634 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool memcheck $T/test_gpu_ecc
# SASS: the march loops (backward branches around ATOMS) of both trees
sass() { tag=$1 src=$2; for k in 3 2; do /usr/local/cuda/bin/nvcc -cubin -arch=sm_90 -O3 -std=c++17 '-DNDF_SLOT(x)=NDF_SLOT_##x' -DNDF_SLOT_TIN=float -DNDF_SLOT_V=float -DNDF_SLOT_NSP=$k -DNDF_SLOT_CONS=0 -DNDF_SLOT_SOFT=0 -I $src/templates -I build-gpu/generated $src/templates/ecc.cu -o /tmp/$tag$k.cubin && cuobjdump -sass /tmp/$tag$k.cubin > $R/t/sass-$tag$k.txt; done; }
sass new . & sass old /tmp/alt & 
wait
el tests
python3 - $R/t/sass-old3.txt $R/t/sass-new3.txt $R/t/sass-old2.txt $R/t/sass-new2.txt <<'PY' | tee $R/sass-loops.txt
import re,sys
for f in sys.argv[1:]:
    fn=None; ins={}
    for l in open(f):
        m=re.match(r'\s*Function : (\w+)',l)
        if m: fn=m.group(1); ins[fn]=[]; continue
        m=re.match(r'\s*/\*([0-9a-f]{4,})\*/\s+(.*?);',l)
        if m and fn: ins[fn].append((int(m.group(1),16),m.group(2)))
    for fn,L in ins.items():
        if not L or len(L)<100: continue
        loops=[]
        for a,s in L:
            m=re.search(r'BRA\s+(?:\S+\s+)?`?\(?\.?L?_?x?_?(0x[0-9a-f]+)',s)
            if m:
                t=int(m.group(1),16)
                if t<a:
                    body=[x for x in L if t<=x[0]<=a]
                    na=sum('ATOMS' in x[1] or 'RED' in x[1] and 'shared' in x[1] for x in body)
                    if na>=30: loops.append((a-t)//16+1)
        print(f.split('/')[-1], fn, 'instr', len(L), 'march loop bodies (instr):', sorted(set(loops)))
PY
for f in $R/t/t-*.txt $R/t/mc-*.txt; do echo "== $(basename $f) $(grep -cE '^\[       OK' $f) ok; $(grep -E '^\[  (PASSED|FAILED)|ERROR SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|differ|seed|rror" $f | grep -v "SUMMARY" | head -4; done | tee $R/summary.txt
B=build-gpu/bench/ndf_bench; A=/tmp/alt/build-gpu/bench/ndf_bench
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
for s in ecc_float32_512x512x512 ecc_float32_256x256x256 ecc_tcons ecc_float32_128x128x128; do
  bj timeout 60 $B --only $s --check-max-mb 600 --reps 20 --deferred-errors
  for i in 1 2; do
    bj timeout 60 $A --only $s --no-check --reps 200 --deferred-errors
    bj timeout 60 $B --only $s --no-check --reps 200 --deferred-errors
  done
done
for i in 1 2; do for X in $A $B; do bj env NDF_ECC3_STG=1 timeout 60 $X --only ecc_float32_256x256x256 --no-check --reps 200 --deferred-errors; done; done
for s in ecc_float32_8192x8192 ecc_float32_64x256x256_b1 ecc_float32_1024x1024; do
  bj timeout 60 $B --only $s --check-max-mb 300 --reps 20 --deferred-errors
  for X in $A $B; do bj timeout 60 $X --only $s --no-check --reps 300 --deferred-errors; done
done
el bench
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys,re
tag=''
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    if d['name'].startswith('##'):
        tag=('OLD ' if '/tmp/alt' in d['name'] else 'new ')+' '.join(x.replace('NDF_ECC3_','') for x in re.findall(r'NDF_\w+=\w+', d['name'])); continue
    print('%-12s %-36s %9s %s'%(tag, d['name'][:36], d.get('warm_ms'), d.get('check')))
PY
pr() { tag=$1; shift; echo "== $tag" >> $R/prof.txt; env NDF_ECC2_PROF=1 "$@" --no-check --reps 20 2>&1 >/dev/null | grep "ndf prof" | tail -1 >> $R/prof.txt; }
for g in 0 1; do for X in $A $B; do pr "256 stg$g $X" env NDF_ECC3_STG=$g timeout 60 $X --only ecc_float32_256x256x256 --deferred-errors; done; done
pr "512 new" timeout 60 $B --only ecc_float32_512x512x512 --deferred-errors
cat $R/prof.txt
el done
cd $OUT && tar czf r16c.tgz r && rm -rf r
