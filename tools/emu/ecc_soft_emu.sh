#!/usr/bin/env bash
# ecc_soft_emu.sh BUILD_DIR PROD|direct [cases [FUSED [CONS]]] -- ndf_ecc_soft2 (templates/ecc_soft.cu) on the host
# against a double-precision reference (checked against the CPU backend of BUILD_DIR/libndforge.so),
# with runtime/ecc_cuda.c's threshold plan, e.g.
#   tools/emu/ecc_soft_emu.sh /tmp/build 1 12      # the product form where the plan allows it
#   tools/emu/ecc_soft_emu.sh /tmp/build direct 12 # one exp per (voxel, threshold) throughout
#   tools/emu/ecc_soft_emu.sh /tmp/build 1 12 1 1  # FUSED (c(v) from the input), T-construction
# EMU_CXXFLAGS="-fsanitize=address,undefined" adds flags.
# (exits 0 when every case agrees to 2e-6 (PROD) or 2e-5 (direct) of the sum of |terms|; slow).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../.." && pwd)
build=$1 which=$2; shift 2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
python3 - "$root" "$tmp" <<'PY'
import sys
root, tmp = sys.argv[1], sys.argv[2]
k = open(root + '/templates/ecc_soft.cu').read()
for a, b in [('asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));', 'y = emu_ex2(x);'),
             ('asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));', 'y = emu_rcp(x);'),
             ('#include "ndf_common.cuh"', '#define NDF_MAX_NDIM 12')]:
    assert a in k, a
    k = k.replace(a, b)
open(tmp + '/kern.inc', 'w').write(k)
c = open(root + '/runtime/ecc_cuda.c').read()
a = c.index('#define SOFT2_KT'); b = c.index('ndf_status ndf__soft_ecc_cuda(')
ta = c.index('typedef struct tsort'); tb = c.index('ndf_status ndf__ecc_cuda(')  # the plan sorts with cmp_tsort
open(tmp + '/plan.c', 'w').write('''#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
''' + c[ta:tb] + c[a:b] + '''
int emu_soft2_plan(const double *t, int64_t T, double lambda, int force_direct, int *lg, int *tchunks, int *prod,
                   int64_t *nslots, float *kh, float *kl, void **slots) {
  soft2_plan pl;
  if (soft2_make_plan(t, T, lambda, force_direct, &pl)) return 1;
  *lg = pl.lg, *tchunks = pl.tchunks, *prod = pl.prod, *nslots = pl.nslots, *kh = pl.kh, *kl = pl.kl;
  *slots = pl.slots;
  return 0;
}
''')
PY
prod=1 direct=0
if [ "$which" = direct ]; then prod=0 direct=1; fi
gcc -std=c11 -O1 -c -o "$tmp/plan.o" "$tmp/plan.c"
g++ -std=c++20 -O1 -w -pthread -ffp-contract=off ${EMU_CXXFLAGS:-} -I"$root/include" -DKERN_INC="\"$tmp/kern.inc\"" -DEMU_PROD=$prod -DEMU_FUSED="${3:-0}" -DEMU_CONS="${4:-0}" \
  -I"$root/templates" -I"$build/generated" \
  -o "$tmp/emu" "$here/ecc_soft_emu.cpp" "$tmp/plan.o" -L"$build" -lndforge -Wl,-rpath,"$build"
"$tmp/emu" "${1:-12}" "$direct"
