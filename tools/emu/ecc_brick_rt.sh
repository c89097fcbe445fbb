#!/bin/sh
# ecc_brick_rt.sh BUILD_DIR [SEED] [CASES] -- runtime-level host check of the brick kernel:
# runtime/ecc_cuda.c (BUILD_DIR/libndforge_internal.a) plans and launches ndf_ecc_brick, whose
# launch (parameter bytes, grid, dynamic shared memory, exactly sized) runs on the host-emulated
# kernel (ecc_brick_emu.cpp, EMU_RT; ASan on) for every (dtype, NSP, CONS) family; curves bit for
# bit against the CPU backend, NaN / inf errors and the untouched output, the mapped header
# (NDF_ECC_MAPHDR=0: the copy).  Runs with NDF_ECC_BRICK=2 (resident when it fits) and =1.
# ONLY=float (or double, uchar, ushort) limits the dtypes.
set -eu
B=${1:?build dir}; SEED=${2:-1}; CASES=${3:-8}
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../.." && pwd)
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
python3 "$here/ecc_brick_emu_splice.py" "$root" "$W/kern.inc"
fail=0
for cfg in "float float NDF_FLOAT32" "double double NDF_FLOAT64" "uchar float NDF_UINT8" "ushort float NDF_UINT16"; do
  set -- $cfg
  [ -z "${ONLY:-}" ] || [ "$ONLY" = "$1" ] || continue
  v=$2 dt=$3
  case "$1" in uchar) tin="unsigned char";; ushort) tin="unsigned short";; *) tin=$1;; esac
  for nsp in 2 3; do for cons in 0 1; do
    cc -std=c11 -O1 -w -c -I"$root/include" -I"$root/runtime" -I"$B/generated" -DEMU_DT=$dt -DEMU_NSP=$nsp \
      -DEMU_CONS=$cons "$here/ecc_brick_rt_stubs.c" -o "$W/s.o"
    g++ -std=c++20 -O1 -g -w -pthread -fsanitize=address -DEMU_RT -I"$root/include" -I"$root/templates" \
      -DKERN_INC="\"$W/kern.inc\"" -DEMU_TIN="$tin" -DEMU_V="$v" -DEMU_NSP=$nsp -DEMU_CONS=$cons \
      -c "$here/ecc_brick_emu.cpp" -o "$W/k.o"
    g++ -fsanitize=address "$W/s.o" "$W/k.o" "$B/libndforge_internal.a" -Wl,--allow-multiple-definition -fopenmp -ldl -lm -lpthread -o "$W/emu"
    echo "== $tin NSP $nsp CONS $cons"
    NDF_ECC_BRICK=2 "$W/emu" "$SEED" "$CASES" || fail=1
    NDF_ECC_BRICK=1 NDF_ECC_MAPHDR=0 "$W/emu" "$((SEED + 100))" "$CASES" || fail=1
  done; done
done
exit $fail
