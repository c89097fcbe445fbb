#!/bin/sh
# emu_rank_tile2.sh BUILD_DIR [SEEDS] [CASES] -- host emulation of the second
# sorted-tile rank kernel (templates/rank_tile2.cu) against the CPU backend of
# BUILD_DIR/libndforge.so, over configurations of type, window, rows per
# block, mode, rank kind and NaN policy (see emu_rank_tile2.cc).  PIPE=0..8 or 10
# in the environment picks the template's slot PIPE (ADR 0005; default 1);
# EMU_BOUNDS=1 checks shared-memory accesses against the runtime's size (ASan);
# SORTU1=2 (or 3) builds the odd seeds' kernel with slot SORTU 2 (3) instead of 1.
set -eu
B=${1:?build dir}; SEEDS=${2:-2}; CASES=${3:-6}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
# EMU_BOUNDS=1: the block's shared memory ends where the runtime's allocation
# (tile2_smem in runtime/rank_cuda.c: area 0, the padded sorted keys, the
# ranks) ends, at the end of the static array, and AddressSanitizer reports any
# access past it.
if [ "${EMU_BOUNDS:-0}" = 1 ]; then
  SMEM='emu_smem + sizeof emu_smem - ((AREA0 + SBUF_WORDS) * 4 + ((R * 2 + 15) \& ~15))'
  XFLAGS="-g -fsanitize=address"
  export ASAN_OPTIONS=detect_leaks=0
else
  SMEM=emu_smem XFLAGS=
fi
sed -e "s/extern __shared__ __align__(16) unsigned char ndf_smem\[\];/unsigned char *ndf_smem = $SMEM;/" \
  "$ROOT/templates/rank_tile2.cu" > "$W/k.cu"
grep -q 'ndf_smem = emu_smem' "$W/k.cu" || { echo "patch of rank_tile2.cu failed"; exit 2; }
fail=0; n=0
# configs: T KIND TBITS KY KX S MODE RKIND RPARAM NAN_OMIT (S 0: the most rows a tile of 4096 takes)
CONFIGS=${CONFIGS:-"
float 2 32 31 31 0 0 0 0 0
float 2 32 31 31 34 1 0 0 1
float 2 32 31 33 0 2 0 0 1
float 2 32 31 33 34 0 1 500 0
float 2 32 49 33 0 1 0 0 1
float 2 32 31 31 16 3 2 90 1
float 2 32 9 9 0 3 1 40 0
float 2 32 5 12 0 4 2 37.5 1
float 2 32 1 9 0 2 2 100 0
float 2 32 17 1 0 0 1 3 1
float 2 32 4 6 0 1 0 0 0
float 2 32 45 20 0 2 0 0 0
int 1 32 7 8 0 2 1 0 0
uchar 0 8 31 31 0 0 0 0 0
short 1 16 6 7 0 3 2 -10 0
uint 0 32 12 12 0 4 1 143 0
schar 1 8 3 4 0 1 2 50 0
ushort 0 16 10 10 0 2 0 0 0
float 2 32 2 40 0 1 1 5 1
float 2 32 24 31 0 4 2 -20 1
float 2 32 20 20 6 3 0 0 0
uchar 0 8 45 20 0 4 1 300 0
short 1 16 31 33 0 1 2 25 0"}
echo "$CONFIGS" | sed '/^ *$/d' > "$W/configs"
while read -r T KIND TBITS KY KX S MODE RKIND RPARAM NOMIT; do
  case "$T" in uchar) T="unsigned char";; schar) T="signed char";; uint) T="unsigned int";; ushort) T="unsigned short";; esac
  [ -n "$T" ] || continue
  NT=$((KY * KX))
  SMAX=$(( (4096 / (31 + KX) - (KY - 1)) / 2 * 2 ))
  while [ "$SMAX" -gt 16 ] && [ $(( (SMAX + KY - 1) * (31 + KX) )) -gt 3968 ]; do SMAX=$((SMAX - 2)); done
  [ "$S" = 0 ] || [ "$S" -gt "$SMAX" ] && S=$SMAX
  # PIPE 10 only where runtime/rank_cuda.c's tile2_finish / tile2_pipe_for take it (else 6), with
  # the rows per block capped so that a tile has at most 64 rows.
  PC=${PIPE:-1}
  if [ "$PC" = 10 ]; then
    S10=$S
    [ $((S + KY - 1)) -gt 64 ] && [ $(( (65 - KY) / 2 * 2 )) -ge 16 ] && S10=$(( (65 - KY) / 2 * 2 ))
    TH10=$((S10 + KY - 1))
    if [ "$TBITS" = 32 ] && [ "$TH10" -le 64 ] && [ $((31 + KX)) -le 64 ] && [ $((TH10 * (31 + KX))) -le 3968 ] &&
      [ $((10 * KY * KX)) -ge $((TH10 * (31 + KX))) ]; then S=$S10; else PC=6; fi
  fi
  [ "$RKIND" = 2 ] && case "$RPARAM" in -*) RPARAM=$(echo "$RPARAM + 100" | bc);; esac
  g++ -std=c++17 -O1 $XFLAGS -w -fno-strict-aliasing -I"$ROOT/include" -I"$ROOT/tests/emu" -I"$ROOT/templates" \
    "-DNDF_SLOT_T=$T" -DEMU_TNAME="\"$T\"" -DNDF_SLOT_KIND="$KIND" -DNDF_SLOT_TBITS="$TBITS" -DNDF_SLOT_MODE="$MODE" \
    -DNDF_SLOT_NAN_OMIT="$NOMIT" -DNDF_SLOT_N="$NT" -DNDF_SLOT_RKIND="$RKIND" -DNDF_SLOT_RPARAM="$RPARAM" \
    -DNDF_SLOT_KY="$KY" -DNDF_SLOT_KX="$KX" -DNDF_SLOT_S="$S" -DEMU_KERNEL_FILE="\"$W/k.cu\"" \
    -DNDF_SLOT_SORTU=0 -DNDF_SLOT_PIPE="$PC" "$ROOT/tests/emu/emu_rank_tile2.cc" -o "$W/emu0" -L"$B" -lndforge -Wl,-rpath,"$B"
  g++ -std=c++17 -O1 $XFLAGS -w -fno-strict-aliasing -I"$ROOT/include" -I"$ROOT/tests/emu" -I"$ROOT/templates" \
    "-DNDF_SLOT_T=$T" -DEMU_TNAME="\"$T\"" -DNDF_SLOT_KIND="$KIND" -DNDF_SLOT_TBITS="$TBITS" -DNDF_SLOT_MODE="$MODE" \
    -DNDF_SLOT_NAN_OMIT="$NOMIT" -DNDF_SLOT_N="$NT" -DNDF_SLOT_RKIND="$RKIND" -DNDF_SLOT_RPARAM="$RPARAM" \
    -DNDF_SLOT_KY="$KY" -DNDF_SLOT_KX="$KX" -DNDF_SLOT_S="$S" -DEMU_KERNEL_FILE="\"$W/k.cu\"" \
    -DNDF_SLOT_SORTU="${SORTU1:-1}" -DNDF_SLOT_PIPE="$PC" "$ROOT/tests/emu/emu_rank_tile2.cc" -o "$W/emu1" -L"$B" -lndforge -Wl,-rpath,"$B"
  for s in $(seq 1 "$SEEDS"); do
    n=$((n + 1))
    "$W/emu$((s % 2))" "$s" "$CASES" || fail=$((fail + 1))   # odd seeds: unrolled sort
  done
done < "$W/configs"
echo "rank_tile2: $n runs, $fail with mismatches"
[ "$fail" = 0 ]
