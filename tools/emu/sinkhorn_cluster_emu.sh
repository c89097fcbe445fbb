#!/usr/bin/env bash
# sinkhorn_cluster_emu.sh BUILD_DIR T LOGD N0 N1 CL -- n P iters check_every eps tol zero_fraction
# Emulates templates/sinkhorn_cluster.cu on the host for one specialization and
# compares with the CPU backend of BUILD_DIR/libndforge.so, e.g.
#   tools/emu/sinkhorn_cluster_emu.sh /tmp/build double 1 10 10 4 -- 4 2 3000 5 0.05 1e-9 0
# (P: 1 or 2, the grid cost's exponent; exits 0 when every pair agrees).
# ASYNC=1 in the environment emulates the kernel's st.async/mbarrier variant
# (slot ASYNC; needs CL > 1 dividing N0).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../.." && pwd)
build=$1 T=$2 LOGD=$3 N0=$4 N1=$5 CL=$6; shift 7
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
python3 - "$root" "$tmp/kern.inc" <<'PY'
import sys
root, out = sys.argv[1], sys.argv[2]
s = open(root + '/templates/sinkhorn_cluster.cu').read()
a = s.index('// ---- cluster primitives'); b = s.index('// 4 consecutive values')
s = s[:a] + s[b:]  # the PTX primitives: sinkhorn_cluster_emu.h stands in
a = s.index('__device__ __forceinline__ float c_exp2(float v)'); b = s.index('}\n', a) + 2
s = s[:a] + s[b:]
s = s.replace('__shared__ c_smem S;', 'c_smem &S = *(c_smem *)EM->smem[emu_rank()];')
s = s.replace('#include "ndf_common.cuh"', '#include "' + root + '/templates/ndf_common.cuh"')
open(out, 'w').write(s)
PY
g++ -std=c++20 -O1 -w -pthread -I"$root/include" -I"$here" -DKERN_INC="\"$tmp/kern.inc\"" -DNDF_SLOT_T="$T" \
  -DNDF_SLOT_LOGD="$LOGD" -DNDF_SLOT_N0="$N0" -DNDF_SLOT_N1="$N1" -DNDF_SLOT_CL="$CL" -DNDF_SLOT_ASYNC="${ASYNC:-0}" \
  -o "$tmp/emu" "$here/sinkhorn_cluster_emu.cpp" -L"$build" -lndforge -Wl,-rpath,"$build"
"$tmp/emu" "$@"
