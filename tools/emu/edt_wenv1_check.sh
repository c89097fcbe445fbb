#!/usr/bin/env bash
# edt_wenv1_check.sh [rows] -- ndf_wenv1 (templates/distance_edt.cu: lane 0's
# envelope in ndf_edt_wrows without exact arithmetic) against scipy's build
# loop written with the template's own ndf_hidden (the lanes' precomputed tests
# ndf_wenv1_pre run for all 32 lanes), on random rows of W =
# (k s0)^2 (the first pass's values) and sites without a feature, for
# non-integer samplings: the stacks must be identical (exits 0 when so).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
python3 - "$root/templates/distance_edt.cu" "$tmp/k.inc" <<'PY'
import sys
s = open(sys.argv[1]).read()
a = s.index('struct ndf_site {'); b = s.index('struct ndf_edt_params {')
site = s[a:b]
a = s.index('__device__ __forceinline__ double ndf_mul'); b = s.index('// The query\'s distance')
ar = s[a:b]
a = s.index('__device__ __forceinline__ void ndf_wenv1_pre('); b = s.index('#endif', a)
w1 = s[a:b]
k = site + ar + w1
k = k.replace('__device__ __forceinline__', 'static inline').replace('__device__ int', 'static int')
open(sys.argv[2], 'w').write(k)
PY
cat > "$tmp/chk.cpp" <<'CPP'
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
typedef long long ndf_i64;
struct { unsigned x; } threadIdx = {0};
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline void __syncwarp() {}
static inline int __shfl_sync(unsigned, int v, int) { return v; }
#include KINC
static uint64_t rs = 0x2545f4914f6cdd1dull;
static uint64_t rnd() { rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17; return rs; }
int main(int argc, char **argv) {
  const int rows = argc > 1 ? atoi(argv[1]) : 20000;
  static const double sv[] = {0.7, 1.3, 1.1, 0.35, 3.14159, 0.1, 2.5};
  int bad = 0;
  for (int r = 0; r < rows && bad < 5; r++) {
    const int n = 1 + (int)(rnd() % 300), kmax = 1 + (int)(rnd() % 40);
    const double s0 = sv[rnd() % 7], s1 = sv[rnd() % 7];
    const int pnone = (int)(rnd() % 4);
    std::vector<ndf_site> row(n), A, B(n);
    for (int x = 0; x < n; x++) {
      const int k = (int)(rnd() % (kmax + 1));
      const double t = (double)k * s0;
      row[x].w = 0.0 + t * t;
      row[x].v = x;
      row[x].f = (int)(rnd() % 8) < pnone ? -1 : x;
    }
    // scipy's loop with the template's ndf_hidden
    for (int x = 0; x < n; x++) {
      if (row[x].f < 0) continue;
      while (A.size() >= 2 && ndf_hidden(A[A.size() - 2].v, A[A.size() - 2].w, A.back().v, A.back().w, x, row[x].w, s1))
        A.pop_back();
      A.push_back(row[x]);
    }
    B = row;
    std::vector<unsigned char> T((size_t)n, 0xee);
    for (int lane = 1; lane < 32; lane++) ndf_wenv1_pre(B.data(), T.data(), n, s1, lane); // lane 0's part: inside
    const int G = ndf_wenv1(B.data(), T.data(), n, s1);
    bool same = G == (int)A.size();
    for (int i = 0; same && i < G; i++) same = A[i].v == B[i].v && A[i].f == B[i].f && A[i].w == B[i].w;
    if (!same) {
      printf("row %d: n %d s %g %g: stack %d vs %zu\n", r, n, s0, s1, G, A.size());
      bad++;
    }
  }
  printf("%s: %d rows\n", bad ? "FAILED" : "ok", rows);
  return bad ? 1 : 0;
}
CPP
g++ -std=c++17 -O2 -ffp-contract=off -Wall -DKINC="\"$tmp/k.inc\"" -o "$tmp/chk" "$tmp/chk.cpp"
"$tmp/chk" "$@"
