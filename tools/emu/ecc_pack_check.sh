#!/usr/bin/env bash
# ecc_pack_check.sh BUILD_DIR [cases] -- the packed bin formulation of
# ndf_ecc_pack (templates/ndf_ecc_pack.cuh) on the host against the CPU
# backend of BUILD_DIR/libndforge.so (exits 0 when every curve agrees).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../.." && pwd)
build=$1; shift
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
g++ -std=c++17 -O2 -Wall -Wno-unknown-pragmas -I"$root/include" -o "$tmp/chk" "$here/ecc_pack_check.cpp" \
  -L"$build" -lndforge -Wl,-rpath,"$build"
"$tmp/chk" "$@"
