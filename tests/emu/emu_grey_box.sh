#!/bin/sh
# emu_grey_box.sh BUILD_DIR [SEEDS] [CASES] -- host emulation of the fused box
# kernels (templates/grey_boxd.cu; grey_box.cu with CLASSIC=1) against the CPU
# backend of BUILD_DIR/libndforge.so, for every extent 1..7 per axis sampled
# over types, ops and modes (see emu_grey_box.cc).  ARCH=900 (default)
# emulates the cp.async path, ARCH=700 the register-prefetch path.
set -eu
B=${1:?build dir}; SEEDS=${2:-3}; CASES=${3:-12}; ARCH=${ARCH:-900}; CLASSIC=${CLASSIC:-0}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
for f in grey_boxd grey_box; do
  sed -e 's/unsigned s = (unsigned)__cvta_generic_to_shared(dst);/*dst = *src; unsigned s = 0; (void)s;/' \
      -e 's/asm volatile(/NDF_EMU_ASM(/' "$ROOT/templates/$f.cu" > "$W/$f.cu"
  grep -q '\*dst = \*src' "$W/$f.cu" || { echo "patch of $f.cu failed"; exit 2; }
done
fail=0; n=0
# configs: T OP MODE KZ KY KX (RY for grey_boxd; ZC for grey_box)
CONFIGS=${CONFIGS:-"
float 0 0 3 1 7  float 1 0 3 1 7  float 0 0 7 7 7  float 1 1 5 5 5  float 0 2 1 7 2  double 1 1 1 7 2
float 1 3 2 4 6  float 0 4 6 2 3  float 1 4 4 3 1  float 0 1 7 6 5  float 1 2 2 2 2  short 0 0 3 5 4
float 0 3 1 1 7  float 1 0 7 1 1  float 0 1 1 6 1  double 0 4 3 3 3 uchar 1 2 2 3 7 float 1 1 6 7 3"}
echo "$CONFIGS" | tr -s ' \n' '\n\n' | sed '/^ *$/d' | paste -d' ' - - - - - - > "$W/configs"
while read -r T OP MODE KZ KY KX; do
  case "$T" in uchar) T="unsigned char";; esac
  [ -n "$T" ] || continue
  for s in $(seq 1 "$SEEDS"); do
    RY=$(( (s * 3 + KZ + KX) % 8 + 1 ))
    TS=$(case "$T" in double) echo 8;; float|int|"unsigned int") echo 4;; short|"unsigned short") echo 2;; *) echo 1;; esac)
    if [ "$CLASSIC" = 1 ]; then K=grey_box; X="-DEMU_CLASSIC -DNDF_SLOT_TY=8 -DNDF_SLOT_VX=4 -DNDF_SLOT_ZC=$([ $((s % 2)) = 0 ] && echo 32 || echo 4)"
    else K=grey_boxd; X="-DNDF_SLOT_RY=$RY"; fi
    g++ -std=c++17 -O1 -w -fno-strict-aliasing -D__CUDA_ARCH__="$ARCH" -I"$ROOT/include" -I"$ROOT/tests/emu" -I"$ROOT/templates" \
      "-DNDF_SLOT_T=$T" -DEMU_TNAME="\"$T\"" -DNDF_SLOT_OP="$OP" -DNDF_SLOT_MODE="$MODE" -DNDF_SLOT_KZ="$KZ" -DNDF_SLOT_KY="$KY" \
      -DNDF_SLOT_KX="$KX" -DNDF_SLOT_TSIZE="$TS" $X -DEMU_KERNEL_FILE="\"$W/$K.cu\"" \
      "$ROOT/tests/emu/emu_grey_box.cc" -o "$W/emu" -L"$B" -lndforge -Wl,-rpath,"$B"
    n=$((n + 1))
    "$W/emu" "$s" "$CASES" || fail=$((fail + 1))
  done
done < "$W/configs"
echo "$K: $n runs, $fail with mismatches"
[ "$fail" = 0 ]
