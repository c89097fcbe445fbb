#!/usr/bin/env bash
# edt_wrows_emu.sh BUILD_DIR [cases [seed] | bench] -- runs the CUDA edt envelope path
# for non-integer sampling (templates/distance_edt.cu: ndf_edt_bfirst,
# ndf_edt_lines, ndf_edt_wrows with the warp-built envelope ndf_wenvp) on the
# host, one std::thread per CUDA thread with emulated warps
# (tools/emu/edt_wrows_emu_k.cpp), and compares distances and indices with the
# CPU backend of BUILD_DIR/libndforge.so bit for bit (exits 0 when all agree).
# It cannot find races or check the host's plan (runtime/distance_cuda.c).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../.." && pwd)
build=$1; shift
args=("$@")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
python3 - "$root/templates/distance_edt.cu" "$tmp/kern.inc" <<'PY'
import sys
k = open(sys.argv[1]).read()
k = k.replace('__device__ __forceinline__', 'static inline').replace('__device__ double ndf_nobg', 'static double ndf_nobg')
k = k.replace('__device__ int ', 'static int ')
k = k.replace('extern __shared__ __align__(16) unsigned char ndf_wsmem[];', 'unsigned char *ndf_wsmem = emu_dyn;')
k = k.replace('__shared__ ', 'static ')
k = k.replace('extern "C" __global__', 'static')
open(sys.argv[2], 'w').write(k)
PY
objs=()
build_one() { # name first last dist idx dout kernel
  g++ -std=c++20 -O1 -w -pthread -c -I"$root/templates" -I"$here" -DKERN_INC="\"$tmp/kern.inc\"" -DEMU_NAME="$1" \
    -DEMU_FIRST="$2" -DEMU_LAST="$3" -DEMU_HAS_DIST="$4" -DEMU_HAS_IDX="$5" -DEMU_DOUT="$6" -DKERNEL="$7" \
    -DEMU_WT=double -o "$tmp/$1.o" "$here/edt_wrows_emu_k.cpp" &
  objs+=("$tmp/$1.o")
}
build_one bfirst 1 0 0 0 double ndf_edt_bfirst
build_one lines 0 0 0 0 double ndf_edt_lines
wait
build_one wrows_d0 0 1 1 0 double ndf_edt_wrows
build_one wrows_d1 0 1 1 1 double ndf_edt_wrows
wait
build_one wrows_f0 0 1 1 0 float ndf_edt_wrows
build_one wrows_f1 0 1 1 1 float ndf_edt_wrows
wait
build_one wrows_x1 0 1 0 1 double ndf_edt_wrows
wait
g++ -std=c++20 -O1 -Wall -pthread -I"$root/include" -I"$here" -o "$tmp/emu" "$here/edt_wrows_emu.cpp" "${objs[@]}" \
  -L"$build" -lndforge -Wl,-rpath,"$build"
"$tmp/emu" "${args[@]}"
