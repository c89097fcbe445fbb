#!/usr/bin/env bash
# edt_search_check.sh BUILD_DIR [cases] -- the search path of the CUDA edt
# (templates/distance_edt.cu: ndf_edt_sfirst, ndf_edt_smid, ndf_edt_srows)
# emulated on the host, line by line with the kernels' ndf_ssearch spliced in,
# against the CPU backend of BUILD_DIR/libndforge.so: distances and indices bit
# for bit (exits 0 when every case agrees).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../.." && pwd)
build=$1; shift
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
python3 - "$root/templates/distance_edt.cu" "$tmp/search.inc" <<'PY'
import sys
s = open(sys.argv[1]).read()
a = s.index('#define NDF_WNONE'); b = s.index('#if FIRST && !LAST', a)
open(sys.argv[2], 'w').write(s[a:b].replace('__device__ int ndf_senv', 'static int ndf_senv'))
PY
g++ -std=c++17 -O2 -Wall -Wno-unknown-pragmas -I"$root/include" -DSEARCH_INC="\"$tmp/search.inc\"" -o "$tmp/chk" \
  "$here/edt_search_check.cpp" -L"$build" -lndforge -Wl,-rpath,"$build"
"$tmp/chk" "$@"
