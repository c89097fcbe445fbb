#include "emu_pre.h"
static inline int atomicCAS(int *a, int cmp, int v) { int o = *a; if (o == cmp) *a = v; return o; }
#include "ccl.inc"
// random 3-D / 2-D image; propagation of x inside mask via symmetric taps incl. 0 (cross or full), border.
int main(int argc, char **argv) {
  const int nsp = NSPV;
  int seed = atoi(argv[1]); srand(seed);
  long long shape[8];
  for (int d = 0; d < nsp; d++) { int ch[] = {1, 2, 5, 9, 31, 33, 64, 70}; shape[d] = ch[rand() % 8]; }
  const int full = rand() % 2, border = rand() % 2, withmask = rand() % 4 != 0, withx = rand() % 2, dens = 2 + rand() % 5;
  // taps: all offsets in {-1,0,1}^nsp, cross (|t|_1 <= 1) or full
  int taps[6561 * 8], toff[6561], n = 0, linkx = 0;
  long long str[8]; str[nsp - 1] = 1; for (int d = nsp - 2; d >= 0; d--) str[d] = str[d + 1] * shape[d + 1];
  int tot = 1; for (int d = 0; d < nsp; d++) tot *= 3;
  for (int k = 0; k < tot; k++) {
    int t[8], r = k, l1 = 0; for (int d = nsp - 1; d >= 0; d--) { t[d] = r % 3 - 1; r /= 3; l1 += abs(t[d]); }
    if (!full && l1 > 1) continue;
    long long off = 0; for (int d = 0; d < nsp; d++) { taps[n * nsp + d] = t[d]; off += t[d] * str[d]; }
    toff[n] = (int)off; int xm1 = t[nsp - 1] == -1; for (int d = 0; d < nsp - 1; d++) xm1 &= t[d] == 0; linkx |= xm1; n++;
  }
  const long long nx = shape[nsp - 1], nw = (nx + 31) / 32; long long nrows = 1; for (int d = 0; d < nsp - 1; d++) nrows *= shape[d];
  const long long nvox = nrows * nx, nwords = nrows * nw;
  unsigned char *m = (unsigned char *)malloc(nvox), *x = (unsigned char *)malloc(nvox);
  // blobs-ish: runs
  for (long long i = 0; i < nvox; i++) { m[i] = withmask ? (rand() % 10 < dens + 3) : 1; x[i] = withx && rand() % 60 == 0; }
  unsigned *xw = (unsigned *)calloc(nwords, 4), *mw = (unsigned *)calloc(nwords, 4), *dw = (unsigned *)calloc(nwords, 4);
  for (long long r = 0; r < nrows; r++) for (long long i = 0; i < nx; i++) {
    if (x[r * nx + i]) xw[r * nw + i / 32] |= 1u << (i % 32);
    if (m[r * nx + i]) mw[r * nw + i / 32] |= 1u << (i % 32);
  }
  int *parent = (int *)malloc(nvox * 4); unsigned char *lit = (unsigned char *)calloc(nvox, 1);
  ndf_ccl_params p; memset(&p, 0, sizeof p);
  p.x = withx ? xw : 0; p.mask = withmask ? mw : 0; p.dst = dw; p.parent = parent; p.lit = lit;
  for (int d = 0; d < nsp; d++) p.sshape[d] = shape[d];
  p.nx = nx; p.nw = nw; p.nrows = nrows; p.border = border; p.ntaps = n; p.linkx = linkx; p.taps = taps; p.toff = toff;
  blockDim.x = 1; gridDim.x = (unsigned)(nwords * 32);
  long long unions = 0;
  for (int ph = 0; ph < 4; ph++) { p.phase = ph; for (unsigned b = 0; b < gridDim.x; b++) { blockIdx.x = b; ndf_ccl(p); } }
  // result from parent/lit
  // reference: BFS flood from seeds (x voxels in mask... propagation semantics: result = x | (mask & reachable-from-lit))
  unsigned char *ref = (unsigned char *)calloc(nvox, 1); long long *q = (long long *)malloc(nvox * 8); long long qh = 0, qt = 0;
  for (long long v = 0; v < nvox; v++) {
    if (!m[v]) continue;
    long long c[8], r = v; for (int d = nsp - 1; d >= 0; d--) { c[d] = r % shape[d]; r /= shape[d]; }
    int l = x[v];
    for (int k = 0; k < n && !l; k++) {
      int ok = 1; for (int d = 0; d < nsp; d++) { long long y = c[d] + taps[k * nsp + d]; ok &= y >= 0 && y < shape[d]; }
      l = ok ? x[v + toff[k]] : border;
    }
    if (l) { ref[v] = 1; q[qt++] = v; }
  }
  while (qh < qt) {
    long long v = q[qh++]; long long c[8], r = v; for (int d = nsp - 1; d >= 0; d--) { c[d] = r % shape[d]; r /= shape[d]; }
    for (int k = 0; k < n; k++) {
      int ok = 1; for (int d = 0; d < nsp; d++) { long long y = c[d] + taps[k * nsp + d]; ok &= y >= 0 && y < shape[d]; }
      if (!ok) continue; long long u = v + toff[k];
      if (m[u] && !ref[u]) { ref[u] = 1; q[qt++] = u; }
    }
  }
  long long bad = 0;
  for (long long v = 0; v < nvox; v++) {
    int got = x[v] || (m[v] && lit[parent[v]]);
    bad += got != (x[v] || ref[v]);
    if (m[v]) { long long rt = parent[v]; bad += parent[rt] != rt; }
  }
  printf("%s seed %d nsp %d shape %lldx..x%lld full %d border %d mask %d x %d linkx %d: %lld wrong\n", bad ? "FAIL" : "ok", seed, nsp, shape[0], nx, full, border, withmask, withx, linkx, bad);
  return bad != 0;
}
