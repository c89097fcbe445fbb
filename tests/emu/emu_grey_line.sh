#!/bin/sh
# emu_grey_line.sh [SEEDS] [CASES] -- host emulation of the register line
# passes (templates/grey_linew.cu, grey_linev.cu) against the left-to-right
# fold of the window, bit for bit, over types, ops, modes and extents (see
# emu_grey_line.cc).  Needs only g++.
set -eu
SEEDS=${1:-2}; CASES=${2:-12}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cp "$ROOT/templates/grey_linew.cu" "$W/grey_linew.cu"
sed -e 's/extern __shared__ ndf_i64 ndf_linev_smem\[\];/ndf_i64 *ndf_linev_smem = emu_dyn_smem;/' \
  "$ROOT/templates/grey_linev.cu" > "$W/grey_linev.cu"
grep -q 'emu_dyn_smem' "$W/grey_linev.cu" || { echo "patch of grey_linev.cu failed"; exit 2; }
fail=0; n=0
# configs: T OP MODE K
CONFIGS=${CONFIGS:-"
float 1 0 63  float 0 0 63  float 1 1 63  float 0 2 31  float 1 3 15  float 0 4 8  float 1 0 2
float 0 1 32  float 1 2 33  float 0 3 64  float 1 4 65  float 0 0 127 float 1 1 200 float 0 0 257
double 1 1 40 double 0 4 100 short 0 0 9 uchar 1 2 17 int 0 3 70 uint 1 4 5"}
echo "$CONFIGS" | tr -s ' \n' '\n\n' | sed '/^ *$/d' | paste -d' ' - - - - > "$W/configs"
while read -r T OP MODE K; do
  case "$T" in uchar) T="unsigned char";; uint) T="unsigned int";; esac
  [ -n "$T" ] || continue
  g++ -std=c++17 -O1 -w -fno-strict-aliasing -I"$ROOT/tests/emu" -I"$ROOT/templates" \
    "-DNDF_SLOT_T=$T" -DEMU_TNAME="\"$T\"" -DNDF_SLOT_OP="$OP" -DNDF_SLOT_MODE="$MODE" -DNDF_SLOT_K="$K" \
    -DEMU_LINEW_FILE="\"$W/grey_linew.cu\"" -DEMU_LINEV_FILE="\"$W/grey_linev.cu\"" \
    "$ROOT/tests/emu/emu_grey_line.cc" -o "$W/emu"
  for s in $(seq 1 "$SEEDS"); do
    n=$((n + 1))
    "$W/emu" "$s" "$CASES" || fail=$((fail + 1))
  done
done < "$W/configs"
echo "grey_linew/grey_linev: $n runs, $fail with mismatches"
[ "$fail" = 0 ]
