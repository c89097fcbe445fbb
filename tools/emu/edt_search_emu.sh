#!/usr/bin/env bash
# edt_search_emu.sh BUILD_DIR [cases] -- runs the CUDA edt search kernels
# (templates/distance_edt.cu: ndf_edt_sfirst, ndf_edt_smid, ndf_edt_srows,
# ndf_edt_sdmid, ndf_edt_sdmidt, ndf_edt_sdrows) on
# the host, one std::thread per CUDA thread (tools/emu/edt_search_emu_k.cpp),
# with random block shapes, and compares distances and indices with the CPU
# backend of BUILD_DIR/libndforge.so bit for bit (exits 0 when all agree).
# It cannot find races or check the host's plan (runtime/distance_cuda.c).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../.." && pwd)
build=$1; shift
args=("$@")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
python3 - "$root/templates/distance_edt.cu" "$tmp/kern.inc" <<'PY'
import sys
s = open(sys.argv[1]).read()
head = s[:s.index('// ---- axes other than the last: one thread per line')]
first = s[s.index('// ---- the first pass on an axis other than the last'):s.index('// ---- the last axis: a warp per 32 rows')]
tail = s[s.index('// ---- the search path'):]
k = head + first + tail
k = k.replace('__device__ __forceinline__', 'static inline').replace('__device__ double ndf_nobg', 'static double ndf_nobg').replace('__device__ int ndf_senv', 'static int ndf_senv')
k = k.replace('extern __shared__ __align__(16) unsigned char ndf_wsmem[];', 'unsigned char *ndf_wsmem = emu_dyn;')
k = k.replace('__shared__ ', 'static ')
k = k.replace('extern "C" __global__', 'static')
open(sys.argv[2], 'w').write(k)
PY
objs=()
for spec in "sfirst 1 0 ndf_edt_sfirst" "smid 0 0 ndf_edt_smid" "srows 0 1 ndf_edt_srows"; do
  set -- $spec
  for idx in 0 1; do
    g++ -std=c++20 -O1 -w -pthread -c -I"$root/templates" -DKERN_INC="\"$tmp/kern.inc\"" -DEMU_NAME="$1$idx" \
      -DEMU_FIRST="$2" -DEMU_LAST="$3" -DEMU_HAS_DIST="$3" -DEMU_HAS_IDX="$idx" -DEMU_DOUT=double -DKERNEL="$4" \
      -DEMU_WT="unsigned int" -o "$tmp/$1$idx.o" "$here/edt_search_emu_k.cpp"
    objs+=("$tmp/$1$idx.o")
  done
done
# the distances-only kernels (HAS_IDX 0): ndf_edt_sdmid, ndf_edt_sdmidt, ndf_edt_sdrows
for spec in "sdmid 0 0 ndf_edt_sdmid" "sdmidt 0 0 ndf_edt_sdmidt" "sdrows 0 1 ndf_edt_sdrows"; do
  set -- $spec
  g++ -std=c++20 -O1 -w -pthread -c -I"$root/templates" -DKERN_INC="\"$tmp/kern.inc\"" -DEMU_NAME="$1" \
    -DEMU_FIRST="$2" -DEMU_LAST="$3" -DEMU_HAS_DIST="$3" -DEMU_HAS_IDX=0 -DEMU_DOUT=double -DKERNEL="$4" \
    -DEMU_WT="unsigned int" -o "$tmp/$1.o" "$here/edt_search_emu_k.cpp"
  objs+=("$tmp/$1.o")
done
# the envelope kernels' first pass (W double): ndf_edt_bfirst against ndf_edt_first
for spec in "bfirst ndf_edt_bfirst" "ofirst ndf_edt_first"; do
  set -- $spec
  g++ -std=c++20 -O1 -w -pthread -c -I"$root/templates" -DKERN_INC="\"$tmp/kern.inc\"" -DEMU_NAME="$1" \
    -DEMU_FIRST=1 -DEMU_LAST=0 -DEMU_HAS_DIST=0 -DEMU_HAS_IDX=0 -DEMU_DOUT=double -DKERNEL="$2" \
    -DEMU_WT=double -o "$tmp/$1.o" "$here/edt_search_emu_k.cpp"
  objs+=("$tmp/$1.o")
done
g++ -std=c++20 -O1 -Wall -pthread -I"$root/include" -o "$tmp/emu" "$here/edt_search_emu.cpp" "${objs[@]}" \
  -L"$build" -lndforge -Wl,-rpath,"$build"
"$tmp/emu" "${args[@]}"
