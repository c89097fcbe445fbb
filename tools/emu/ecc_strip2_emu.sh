#!/usr/bin/env bash
# ecc_strip2_emu.sh BUILD_DIR TIN CONS [cases [seed]] -- ndf_ecc_strip2 (2-D) on the host against the CPU
# backend of BUILD_DIR/libndforge.so, e.g.
#   tools/emu/ecc_strip2_emu.sh /tmp/build float 0 40
#   tools/emu/ecc_strip2_emu.sh /tmp/build "unsigned short" 1 40
#   EMU_NSP=3 tools/emu/ecc_strip2_emu.sh /tmp/build float 0 40   (ndf_ecc_strip3, 3-D)
#   EMU_TELE=1 tools/emu/ecc_strip2_emu.sh /tmp/build float 1 40  (ndf_ecc_strip2t, 2-D telescoped)
#   EMU_ASAN=1 ...: under AddressSanitizer + UBSan (the tables and histograms bounds-checked)
# (exits 0 when every curve, header and untouched output agrees; one std::thread per CUDA thread).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../.." && pwd)
build=$1 tin=$2 cons=$3; shift 3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
python3 "$here/ecc_strip2_emu_splice.py" "$root" "$tmp/kern.inc"
san=""; [ "${EMU_ASAN:-0}" = 1 ] && san="-fsanitize=address,undefined -fno-omit-frame-pointer -g" && export ASAN_OPTIONS=detect_leaks=0
g++ -std=c++20 -O1 -w -pthread $san -I"$root/include" -I"$root/templates" -I"$root/runtime" -DKERN_INC="\"$tmp/kern.inc\"" \
  -DEMU_TIN="$tin" -DEMU_CONS="$cons" -DEMU_NSP="${EMU_NSP:-2}" -DEMU_TELE="${EMU_TELE:-0}" \
  -o "$tmp/emu" "$here/ecc_strip2_emu.cpp" -L"$build" -lndforge -Wl,-rpath,"$build"
"$tmp/emu" "$@"
