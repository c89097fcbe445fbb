#!/usr/bin/env bash
# ecc_rows_emu.sh BUILD_DIR TIN V CONS PF [cases [seed]] -- ndf_ecc_rows (templates/ecc_rows.cu) on the
# host against the CPU backend of BUILD_DIR/libndforge.so, e.g.
#   tools/emu/ecc_rows_emu.sh /tmp/build float float 0 1 40
#   tools/emu/ecc_rows_emu.sh /tmp/build "unsigned char" float 1 0 20
# Whole cooperative grids (every block's 256 threads at once, a real grid barrier); exits 0
# when every curve (and the header of NaN / inf inputs) agrees.  Also runs the bit-trick
# checks (ecc_rows_emu.cpp: bits).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../.." && pwd)
build=$1 tin=$2 v=$3 cons=$4 pf=$5; shift 5
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
python3 "$here/ecc_rows_emu_splice.py" "$root" "$tmp/kern.inc"
g++ -std=c++20 -O2 -w -pthread -I"$root/include" -I"$root/templates" -DKERN_INC="\"$tmp/kern.inc\"" \
  -DEMU_TIN="$tin" -DEMU_V="$v" -DEMU_CONS="$cons" -DEMU_PF="$pf" \
  -o "$tmp/emu" "$here/ecc_rows_emu.cpp" -L"$build" -lndforge -Wl,-rpath,"$build"
"$tmp/emu" "$@"
