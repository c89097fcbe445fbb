#!/usr/bin/env bash
# run.sh -- host emulation of the packed binary kernels, for checking changes
# without a GPU (development aid, not part of the test suite):
#   templates/binary_fstep.cu with code from runtime/binary_cuda.c:fstep_code,
#     against a per-voxel erosion/dilation (random shapes, structures with
#     large origins, border 0/1, masks, ndim 1-4);
#   templates/binary_ccl.cu phases 0-3 (init, unite, compress, spread),
#     against a breadth-first propagation (cross/full 3^n structures,
#     border 0/1, with and without mask and seed);
#   templates/binary_flood.cu (emu_flood.cpp: threads, barriers, shuffles),
#     against a per-voxel fixed-point iteration.
# Each "thread" runs alone (blockDim 1), so races and the final ballot phase
# are not emulated.  Usage: tools/binary_emu/run.sh BUILD_DIR [cases]
set -euo pipefail
B=$(cd "$1" && pwd); N=${2:-40}
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../.." && pwd); T=$root/templates
w=$(mktemp -d); trap 'rm -rf "$w"' EXIT; cd "$w"
cp "$here"/* .
gcc -O1 -std=c11 -D_GNU_SOURCE -I"$root/include" -I"$root/runtime" -I"$B" -I"$B/generated" gen.c -o gen \
  "$B/libndforge_internal.a" -ldl -lm -lpthread -fopenmp
sed -e 's|^\(\s*\)NDF_SLOT(TAPS)|#include "taps.inc"|' -e "s|#include \"binary_common.cuh\"|#include \"$T/binary_common.cuh\"|" \
  -e 's|extern "C" ||' "$T/binary_fstep.cu" > kern.inc
sed -e "s|#include \"binary_common.cuh\"|#include \"$T/binary_common.cuh\"|" -e 's|extern "C" ||' "$T/binary_ccl.cu" > ccl.inc
fails=0
for i in $(seq 1 "$N"); do
  nsp=$(( (i % 4) + 1 )); op=$(( i % 2 ))
  /usr/bin/python3 mkcase.py "$i" "$nsp" > case.txt
  ./gen "$nsp" "$op" > taps.inc
  g++ -O1 -w -DNDF_SLOT_OP=$op -DNDF_SLOT_CYCLE=0 -DNDF_SLOT_NRA=$((nsp - 1)) -DNSPV=$nsp -DOPV=$op emu.cpp -o emu
  ./emu || fails=$((fails + 1))
done
for nsp in 1 2 3 4; do
  g++ -O1 -w -DNDF_SLOT_NSP=$nsp -DNSPV=$nsp emu_ccl.cpp -o emuc
  for s in $(seq 1 $((N / 2))); do ./emuc "$s" || fails=$((fails + 1)); done
done
# templates/binary_flood.cu: every CUDA thread a std::thread (slow: a few seeds)
sed -e "s|#include \"binary_common.cuh\"|#include \"$T/binary_common.cuh\"|" -e 's|extern "C" ||' "$T/binary_flood.cu" > flood.inc
for c in 6 26; do for k in 1 2; do
  g++ -O1 -w -std=c++20 -pthread -DNDF_SLOT_CONN=$c -DNDF_SLOT_K=$k -I. -I"$T" emu_flood.cpp -o emuf
  for s in $(seq 1 $((N / 8 + 1))); do ./emuf "$s" >/dev/null || { ./emuf "$s"; fails=$((fails + 1)); }; done
done; done
echo "binary_emu: $fails failed"
[ "$fails" -eq 0 ]
