# run16a (prepared in session 15, run in session 16 with the unstaged kernel added at both sizes): speed-of-light diagnostics of the staged march (timing only, the curves
# are wrong): run16a-diag.patch with NDF_ECC3_DIAG 1 (the S, t and t2 sequences' 51 shared adds a step summed in a
# register: the upper bound of routing a voxel's coefficients to one add), 2 (all 68 so: the staging and barriers
# alone), 3 (no block barrier in s_deliver: races, the barriers' cost) against main, at 512^3 (staged by default)
# and 256^3 (NDF_ECC3_STG=1), march times from NDF_ECC2_PROF.  On the GPU machine (carry .gpu):
# bash bench/results/2026-12-01-h200-session16/run16a-script.sh
source .gpu/env.sh
R=$OUT/r; mkdir -p $R/t
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
P=bench/results/2026-11-30-h200-session15/run16a-diag.patch
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > $R/t/build.log 2>&1 || { tail -30 $R/t/build.log; exit 1; }
for d in 1 2 3; do
  ( mkdir -p /tmp/d$d && tar --exclude=./build-gpu -cf - . | tar -xf - -C /tmp/d$d && cd /tmp/d$d && patch -s -p1 < $P && sed -i "s/^#define NDF_ECC3_DIAG 0/#define NDF_ECC3_DIAG $d/" templates/ecc.cu && grep -c "define NDF_ECC3_DIAG $d" templates/ecc.cu && cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu > /tmp/d$d.log 2>&1 || tail -5 /tmp/d$d.log ) &
done
wait
el built
bj() { echo "{\"name\": \"## $*\"}" >> $R/bench.json; "$@" >> $R/bench.json 2>> $R/bench.log; }
pr() { tag=$1; shift; echo "== $tag" >> $R/prof.txt; env NDF_ECC2_PROF=1 "$@" --no-check --reps 20 2>&1 >/dev/null | grep "ndf prof" | tail -1 >> $R/prof.txt; }
for s in ecc_float32_512x512x512 ecc_float32_256x256x256; do
  for i in 1 2; do for g in 1 0; do [ $g = 0 ] && [ $s = ecc_float32_512x512x512 ] && continue
    for d in 0 1 2 3; do
      X=build-gpu/bench/ndf_bench; [ $d = 0 ] || X=/tmp/d$d/build-gpu/bench/ndf_bench
      bj env DIAG=$d STG=$g NDF_ECC3_STG=$g timeout 60 $X --only $s --no-check --reps 200 --deferred-errors
    done
  done; done
  for g in 1 0; do for d in 0 1 2 3; do
    X=build-gpu/bench/ndf_bench; [ $d = 0 ] || X=/tmp/d$d/build-gpu/bench/ndf_bench
    pr "$s stg$g diag$d" env NDF_ECC3_STG=$g timeout 60 $X --only $s --deferred-errors
  done; done
done
el bench
python3 - $R/bench.json <<'PY' | tee $R/bench-summary.txt
import json,sys,re
tag=''
for l in open(sys.argv[1]):
    try: d=json.loads(l)
    except: continue
    if d['name'].startswith('##'):
        tag=' '.join(re.findall(r'(?:DIAG|STG)=\w+', d['name'])); continue
    print('%-8s %-36s %9s'%(tag, d['name'][:36], d.get('warm_ms')))
PY
cat $R/prof.txt
cd $OUT && tar czf r16a.tgz r && rm -rf r
