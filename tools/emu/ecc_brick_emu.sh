#!/usr/bin/env bash
# ecc_brick_emu.sh BUILD_DIR TIN V NSP CONS [cases [seed]] -- ndf_ecc_brick on the host against the CPU
# backend of BUILD_DIR/libndforge.so, e.g.
#   tools/emu/ecc_brick_emu.sh /tmp/build float float 3 0 12
#   tools/emu/ecc_brick_emu.sh /tmp/build "unsigned char" float 2 1 12
# (exits 0 when every curve agrees; slow: 256 threads per block).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../.." && pwd)
build=$1 tin=$2 v=$3 nsp=$4 cons=$5; shift 5
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
python3 "$here/ecc_brick_emu_splice.py" "$root" "$tmp/kern.inc"
g++ -std=c++20 -O1 -w -pthread -I"$root/include" -I"$root/templates" -DKERN_INC="\"$tmp/kern.inc\"" \
  -DEMU_TIN="$tin" -DEMU_V="$v" -DEMU_NSP="$nsp" -DEMU_CONS="$cons" \
  -o "$tmp/emu" "$here/ecc_brick_emu.cpp" -L"$build" -lndforge -Wl,-rpath,"$build"
"$tmp/emu" "$@"
