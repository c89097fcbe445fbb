#!/bin/sh
# emu_grey_rt.sh BUILD_DIR [SEEDS] [CASES] -- runtime-level host check of the
# register line passes: runtime/grey_cuda.c (BUILD_DIR/libndforge_internal.a)
# dispatches box erosions/dilations whose launches (parameter bytes, grid,
# block, shared memory) run on the host-emulated grey_linew / grey_linev
# templates; compared bit for bit with the CPU backend (emu_grey_rt_stubs.c).
set -eu
B=${1:?build dir}; SEEDS=${2:-2}; CASES=${3:-6}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cp "$ROOT/templates/grey_linew.cu" "$W/grey_linew.cu"
sed -e 's/extern __shared__ ndf_i64 ndf_linev_smem\[\];/ndf_i64 *ndf_linev_smem = emu_dyn_smem;/' \
  "$ROOT/templates/grey_linev.cu" > "$W/grey_linev.cu"
grep -q 'emu_dyn_smem' "$W/grey_linev.cu" || { echo "patch of grey_linev.cu failed"; exit 2; }
fail=0; n=0
# configs: T OP MODE K (K: the last axis' extent; T: float, double, short, uchar)
CONFIGS=${CONFIGS:-"float 1 0 63  float 0 1 15  float 1 2 31  float 0 3 9  float 1 4 64  double 0 0 40  short 1 1 8  uchar 0 2 100"}
echo "$CONFIGS" | tr -s ' \n' '\n\n' | sed '/^ *$/d' | paste -d' ' - - - - > "$W/configs"
while read -r T OP MODE K; do
  case "$T" in uchar) T="unsigned char";; esac
  [ -n "$T" ] || continue
  D="-DNDF_SLOT_OP=$OP -DNDF_SLOT_MODE=$MODE -DNDF_SLOT_K=$K"
  g++ -std=c++17 -O1 -w -fno-strict-aliasing -c -I"$ROOT/tests/emu" -I"$ROOT/templates" "-DNDF_SLOT_T=$T" $D \
    -DEMU_LINEW_FILE="\"$W/grey_linew.cu\"" -DEMU_LINEV_FILE="\"$W/grey_linev.cu\"" "$ROOT/tests/emu/emu_grey_rt.cc" -o "$W/k.o"
  cc -std=c11 -O1 -w -c -I"$ROOT/include" -I"$ROOT/runtime" -I"$B/generated" -DEMU_TNAME="\"$T\"" $D \
    "$ROOT/tests/emu/emu_grey_rt_stubs.c" -o "$W/s.o"
  g++ "$W/s.o" "$W/k.o" "$B/libndforge_internal.a" -Wl,--allow-multiple-definition -fopenmp -ldl -lm -lpthread -o "$W/emu"
  for s in $(seq 1 "$SEEDS"); do
    n=$((n + 1))
    "$W/emu" "$s" "$CASES" || fail=$((fail + 1))
  done
done < "$W/configs"
echo "grey_cuda.c + grey_linew/grey_linev: $n runs, $fail with mismatches"
[ "$fail" = 0 ]
