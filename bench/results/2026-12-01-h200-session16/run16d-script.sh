# run16d: coalesced fast loads in ndf_ecc_strip3 / strip3n (TR: 4 float4 loads of 8 rows each instead of one row a
# lane, then each lane's row through the warp's shared buffers): the ECC GPU tests, strip3 under memcheck and
# racecheck, SASS spill sites (nvcc + cuobjdump), the benchmark A/B against the tree before (s16d.patch reversed),
# march profiles.  On the GPU machine (carry .gpu): bash bench/results/2026-12-01-h200-session16/run16d-script.sh
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
P=bench/results/2026-12-01-h200-session16/s16d.patch
mkdir -p /tmp/alt && tar --exclude=./build-gpu -cf - . | tar -xf - -C /tmp/alt && (cd /tmp/alt && patch -s -p1 -R < $P) || echo "alt tree failed"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/t/build.log 2>&1 || { tail -30 $R/t/build.log; exit 1; }
(cd /tmp/alt && cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > /tmp/alt-build.log 2>&1) || tail -5 /tmp/alt-build.log
el built
T=build-gpu/tests
run() { out=$1; lim=$2; shift 2; ( timeout $lim "$@" > $R/t/$out.txt 2>&1; echo "rc=$?" >> $R/t/$out.txt ) & }
run t-s3 200 env NDF_TEST_CASES=80 NDF_TEST_SEED=1641 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc
run t-s3w8 200 env NDF_ECC3_W=8 NDF_TEST_CASES=40 NDF_TEST_SEED=1645 NDF_TEST_FILTER=test_gpu_strip3 $T/test_gpu_ecc
run t-ecc 200 env NDF_TEST_CASES=3 NDF_TEST_SEED=1642 $T/test_gpu_ecc
run mc-s3 200 env NDF_TEST_CASES=4 NDF_TEST_SEED=1643 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool memcheck $T/test_gpu_ecc
run rc-s3 200 env NDF_TEST_CASES=2 NDF_TEST_SEED=1644 NDF_TEST_FILTER=test_gpu_strip3 compute-sanitizer --tool racecheck $T/test_gpu_ecc
/usr/local/cuda/bin/nvcc -cubin -arch=sm_90 -O3 -std=c++17 '-DNDF_SLOT(x)=NDF_SLOT_##x' -DNDF_SLOT_TIN=float -DNDF_SLOT_V=float -DNDF_SLOT_NSP=3 -DNDF_SLOT_CONS=0 -DNDF_SLOT_SOFT=0 -I templates -I build-gpu/generated templates/ecc.cu -o /tmp/new3.cubin && cuobjdump -sass /tmp/new3.cubin > /tmp/sass-new3.txt
python3 - /tmp/sass-new3.txt <<'PY' | tee $R/sass-spills.txt
import re,sys
fn=None; L={}
for l in open(sys.argv[1]):
    m=re.match(r'\s*Function : (\w+)',l)
    if m: fn=m.group(1); L[fn]=[]; continue
    m=re.match(r'\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;',l)
    if m and fn: L[fn].append(m.group(2))
for fn in ('ndf_ecc_strip3','ndf_ecc_strip3n'):
    I=L[fn]; loops=[]
    for i,s in enumerate(I):
        mm=re.search(r'BRA\s.*0x([0-9a-f]+)',s)
        if mm:
            t=int(mm.group(1),16)//16
            if t<i and i-t>100:
                na=sum('ATOMS' in x for x in I[t:i+1])
                if 60<=na<=140: loops.append((t,i))
    loc=[(i,s) for i,s in enumerate(I) if re.search(r'\b(STL|LDL)',s)]
    print(fn,'instr',len(I),'march loops',loops)
    for i,s in loc: print('  %6d %s %s'%(i,'IN-LOOP' if any(a<=i<=b for a,b in loops) else '       ',s))
PY
wait
el tests
for f in $R/t/t-*.txt $R/t/mc-*.txt $R/t/rc-*.txt; do echo "== $(basename $f) $(grep -cE '^\[       OK' $f) ok; $(grep -E '^\[  (PASSED|FAILED)|ERROR SUMMARY|RACECHECK SUMMARY|^rc=' $f | tr '\n' ' ')"; grep -E "FAILED|differ|seed|rror|azard" $f | grep -v "SUMMARY" | head -4; done | tee $R/summary.txt
B=build-gpu/bench/ndf_bench; A=/tmp/alt/build-gpu/bench/ndf_bench
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
for s in ecc_float32_256x256x256 ecc_tcons ecc_float32_128x128x128; do
  bj timeout 60 $B --only $s --check-max-mb 600 --reps 20 --deferred-errors
  for i in 1 2; do for X in $A $B; do bj timeout 60 $X --only $s --no-check --reps 200 --deferred-errors; done; done
done
bj env NDF_ECC3_STG=0 timeout 60 $B --only ecc_float32_512x512x512 --check-max-mb 600 --reps 10 --deferred-errors
for i in 1 2; do for X in $A $B; do bj env NDF_ECC3_STG=0 timeout 60 $X --only ecc_float32_512x512x512 --no-check --reps 200 --deferred-errors; done; done
for X in $A $B; do bj timeout 60 $X --only ecc_float32_512x512x512 --no-check --reps 200 --deferred-errors; done
for i in 1 2; do for X in $A $B; do bj env NDF_ECC3_W=8 timeout 60 $X --only ecc_float32_128x128x128 --no-check --reps 200 --deferred-errors; done; done
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
for X in $A $B; do pr "256 $X" timeout 60 $X --only ecc_float32_256x256x256 --deferred-errors; pr "512 stg0 $X" env NDF_ECC3_STG=0 timeout 60 $X --only ecc_float32_512x512x512 --deferred-errors; done
cat $R/prof.txt
el done
cd $OUT && tar czf r16d.tgz r && rm -rf r
