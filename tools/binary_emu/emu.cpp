#include "emu_pre.h"
#include "kern.inc"
// reference: per voxel
int main(int argc, char **argv) {
  const int nsp = NSPV, nra = nsp - 1;
  long long shape[8]; long long nrows = 1;
  FILE *f = fopen("case.txt", "r");
  for (int d = 0; d < nsp; d++) { if (fscanf(f, "%lld", &shape[d]) != 1) return 2; }
  int border, withmask; if (fscanf(f, "%d %d", &border, &withmask) != 2) return 2;
  int n; if (fscanf(f, "%d", &n) != 1) return 2;
  int taps[4096 * 8];
  for (int k = 0; k < n * nsp; k++) if (fscanf(f, "%d", &taps[k]) != 1) return 2;
  fclose(f);
  const long long nx = shape[nsp - 1], nw = (nx + 31) / 32;
  for (int d = 0; d < nra; d++) nrows *= shape[d];
  long long nvox = nrows * nx, nwords = nrows * nw;
  unsigned char *img = (unsigned char *)malloc(nvox), *msk = (unsigned char *)malloc(nvox);
  srand(7);
  for (long long i = 0; i < nvox; i++) { img[i] = rand() % 5 != 0; msk[i] = rand() % 3 != 0; }
  unsigned *src = (unsigned *)calloc(nwords, 4), *dst = (unsigned *)calloc(nwords, 4), *mw = (unsigned *)calloc(nwords, 4);
  for (long long r = 0; r < nrows; r++) for (long long x = 0; x < nx; x++) {
    if (img[r * nx + x]) src[r * nw + x / 32] |= 1u << (x % 32);
    if (msk[r * nx + x]) mw[r * nw + x / 32] |= 1u << (x % 32);
  }
  ndf_bstep_params p; memset(&p, 0, sizeof p);
  p.src = src; p.dst = dst; p.mask = withmask ? mw : 0; p.nra = nra;
  for (int d = 0; d < nra; d++) { p.rshape[d] = shape[d]; long long s = 1; for (int e = d + 1; e < nra; e++) s *= shape[e]; p.rstride[d] = s; }
  p.nx = nx; p.nw = nw; p.nrows = nrows; p.tail = nx % 32 ? (1u << (nx % 32)) - 1 : 0xffffffffu; p.border = border ? ~0u : 0u;
  blockDim.x = 1; gridDim.x = (unsigned)nwords;
  for (unsigned b = 0; b < nwords; b++) { blockIdx.x = b; threadIdx.x = 0; ndf_bin_fstep(p); }
  long long bad = 0;
  for (long long r = 0; r < nrows; r++) {
    long long c[8]; long long rr = r; for (int d = nra - 1; d >= 0; d--) { c[d] = rr % shape[d]; rr /= shape[d]; }
    for (long long x = 0; x < nx; x++) {
      int acc = OPV == 0 ? 1 : 0;
      for (int k = 0; k < n; k++) {
        int in = 1; long long off = 0;
        for (int d = 0; d < nra; d++) { long long y = c[d] + taps[k * nsp + d]; in &= y >= 0 && y < shape[d]; off += taps[k * nsp + d] * p.rstride[d]; }
        long long xx = x + taps[k * nsp + nra]; in &= xx >= 0 && xx < nx;
        int v = in ? img[(r + off) * nx + xx] : border;
        acc = OPV == 0 ? (acc & v) : (acc | v);
      }
      int want = (withmask && !msk[r * nx + x]) ? img[r * nx + x] : acc;
      int got = (dst[r * nw + x / 32] >> (x % 32)) & 1;
      bad += want != got;
    }
  }
  unsigned tailbad = 0;
  for (long long r = 0; r < nrows; r++) tailbad |= dst[r * nw + nw - 1] & ~p.tail;
  printf("%s nsp %d n %d border %d mask %d: %lld wrong, tail %s\n", bad || tailbad ? "FAIL" : "ok", nsp, n, border, withmask, bad, tailbad ? "dirty" : "clean");
  return bad || tailbad;
}
