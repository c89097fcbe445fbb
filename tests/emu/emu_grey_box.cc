/* emu_grey_box.cc -- host emulation of the fused box kernels (grey_boxd, or
 * grey_box with -DEMU_CLASSIC), compiled from the template source itself
 * (tests/emu/emu_grey_box.sh patches only the cp.async asm into plain copies
 * and sets the slots), launched as the runtime launches it (grey_cuda.c
 * run_boxd / run_box), on random inputs of ties (-0.0, 0.0, +-1, NaN) with
 * random shapes, origins, cval, batch axes and 1-4 spatial axes (a 4th axis
 * by a first-wins line pass after the fused one, the runtime's order).
 * Compared bit for bit (NaN: position only) with the CPU backend
 * (libndforge, ndf_grey_erosion/dilation), and counted against the old CPU
 * order (passes first axis first: the first of equal extrema with X most
 * significant).  Usage: emu seed ncases; exit 1 on any mismatch with the CPU. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>
extern "C" {
#include "ndforge.h"
}
#include "cuda_host_shim.h"
#include EMU_KERNEL_FILE

typedef NDF_SLOT_T E;
#ifdef EMU_CLASSIC
typedef ndf_box_params P;
#define KERNEL ndf_grey_box
#else
typedef ndf_boxd_params P;
#define KERNEL ndf_grey_boxd
#endif
static P g_p;
static void body(void) { KERNEL(g_p); }

static uint64_t rs;
static uint64_t rnd(void) { rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17; return rs; }
static long ri(long lo, long hi) { return lo + (long)(rnd() % (uint64_t)(hi - lo + 1)); }

static int is_nan(E v) { return v != v; }
static int same(E a, E b) { return (is_nan(a) && is_nan(b)) || memcmp(&a, &b, sizeof a) == 0; }
static E pick(E a, E b) { return ndf_pick<OP, E>(a, b); }

int main(int argc, char **argv) {
  rs = 0x9E3779B97F4A7C15ull ^ (uint64_t)atoll(argc > 1 ? argv[1] : "1");
  const long ncases = argc > 2 ? atol(argv[2]) : 50;
  ndf_ctx_options co;
  ndf_ctx_options_init(&co);
  co.backend = NDF_BACKEND_CPU;
  co.cpu_threads = 1;
  ndf_ctx *ctx;
  if (ndf_ctx_create(&ctx, &co) != NDF_OK) return 2;
  const int K3[3] = {KZ, KY, KX};
  const int isf = (E)0.5 != 0;
  long bad_total = 0, old_total = 0, zero_outputs = 0;
  for (long c = 0; c < ncases; c++) {
    int minsp = KZ > 1 ? 3 : KY > 1 ? 2 : 1;
    int nsp = (int)ri(minsp, 4), nb = (int)ri(0, 1), nd = nb + nsp;
    int64_t sh[8], es[4], org[4];
    for (int d = 0; d < nd; d++) sh[d] = d < nb ? ri(1, 3) : ri(1, 3) == 1 ? ri(1, 3) : ri(1, d == nd - 1 ? 300 : 24);
    int64_t n = 1;
    for (int d = 0; d < nd; d++) n *= sh[d];
    for (int d = 0; d < nsp; d++) {
      int i3 = d - (nsp - 3); /* index among Z, Y, X */
      es[d] = i3 >= 0 ? K3[i3] : ri(1, 4);
      /* scipy's valid origins; dilation: -o - (even) must be valid for the reflected element */
      int64_t lo = -(es[d] / 2), hi = (es[d] - 1) / 2;
      if (OP == 1) { int64_t ev = es[d] % 2 == 0; lo = -((es[d] - 1) / 2) - ev; hi = es[d] / 2 - ev; }
      org[d] = ri(0, 3) ? ri(lo, hi) : 0;
    }
    double cval;
    switch (ri(0, 4)) { case 0: cval = NAN; break; case 1: cval = -0.0; break; case 2: cval = 0.0; break; case 3: cval = 1; break; default: cval = (double)ri(-3, 3); }
    if (!isf && cval != cval) cval = 2;
    if (!isf && (E)-1 > 0 && cval < 0) cval = 3;
    std::vector<E> in((size_t)n), ref((size_t)n), out((size_t)n), tmp((size_t)n);
    const int ties = ri(0, 9) < 8;
    for (int64_t i = 0; i < n; i++) {
      double v;
      if (ties) { static const double fv[] = {-0.0, 0.0, -0.0, 0.0, 1.0, -1.0, NAN}; v = fv[ri(0, ri(0, 1) ? 6 : 5)]; }
      else v = (double)ri(-100, 100) / 4;
      if (!isf) v = v != v ? 2 : (E)-1 > 0 && v < 0 ? 3 : v;
      in[(size_t)i] = (E)v;
    }
    /* the CPU backend */
    ndf_array ain, aout;
    ndf_dtype dt = sizeof(E) == 8 ? NDF_FLOAT64 : isf ? NDF_FLOAT32 : (E)-1 > 0 ? (sizeof(E) == 1 ? NDF_UINT8 : sizeof(E) == 2 ? NDF_UINT16 : NDF_UINT32)
                                                                     : (sizeof(E) == 1 ? NDF_INT8 : sizeof(E) == 2 ? NDF_INT16 : NDF_INT32);
    ndf_array_init(&ain, in.data(), NDF_DEVICE_CPU, dt, nd, sh);
    ndf_array_init(&aout, ref.data(), NDF_DEVICE_CPU, dt, nd, sh);
    ndf_grey_options o;
    ndf_grey_options_init(&o);
    o.mode = (ndf_mode)MODE;
    o.cval = cval;
    o.batch_dims = nb;
    o.nsize = nsp;
    o.norigin = nsp;
    for (int d = 0; d < nsp; d++) { o.size[d] = es[d]; o.origin[d] = org[d]; }
    ndf_status st = OP == 0 ? ndf_grey_erosion(ctx, &ain, &aout, &o) : ndf_grey_dilation(ctx, &ain, &aout, &o);
    if (st != NDF_OK) { fprintf(stderr, "CPU: %s\n", ndf_errmsg(ctx)); return 2; }
    /* first tap offset per spatial axis, as grey.c: lo = -(s/2 + o'), o' = -o - even for dilation; 0 for size 1 */
    int64_t lo[4];
    for (int d = 0; d < nsp; d++)
      lo[d] = es[d] == 1 ? 0 : -(es[d] / 2 + (OP == 1 ? -org[d] - (es[d] % 2 == 0) : org[d]));
    /* launch as run_boxd / run_box: Z, Y, X = the last three axes of the array */
    int64_t cs[8];
    { int64_t s = 1; for (int d = nd - 1; d >= 0; d--) { cs[d] = s; s *= sh[d]; } }
    P p;
    memset(&p, 0, sizeof p);
    p.in = in.data();
    p.out = out.data();
    int64_t ext[3], is[3];
    for (int i = 0; i < 3; i++) { int d = nd - 3 + i; ext[i] = d >= 0 ? sh[d] : 1; is[i] = d >= 0 ? cs[d] : 0; }
    p.nz = ext[0]; p.ny = ext[1]; p.nx = ext[2];
    p.isz = p.osz = is[0]; p.isy = p.osy = is[1]; p.isx = p.osx = is[2];
    int lo3[3];
    for (int i = 0; i < 3; i++) { int d = nsp - 3 + i; lo3[i] = d >= 0 ? (int)lo[d] : 0; }
    p.lz = lo3[0]; p.ly = lo3[1]; p.lx = lo3[2];
    int nbo = nd < 3 ? 0 : nd - 3;
    p.nb = nbo;
    int64_t nouter = 1;
    for (int d = 0; d < nbo; d++) { p.bshape[d] = sh[d]; p.bistr[d] = p.bostr[d] = cs[d]; nouter *= sh[d]; }
    p.cval = cval;
#ifdef EMU_CLASSIC
    const int64_t xt = 32 * NDF_SLOT_VX, ty = NDF_SLOT_TY, zc = NDF_SLOT_ZC;
    const unsigned bx = 32, by = NDF_SLOT_TY;
#else
    const int64_t xt = 128, ty = 2 * NDF_SLOT_RY;
    int64_t zc = ri(1, ext[0] > 0 ? ext[0] : 1); /* any chunking (the runtime spreads Z over one wave) */
    p.zc = zc;
    const unsigned bx = 128, by = 2;
#endif
    p.ntx = (ext[2] + xt - 1) / xt; p.nty = (ext[1] + ty - 1) / ty; p.ntz = (ext[0] + zc - 1) / zc; p.nouter = nouter;
    const int64_t nblk = p.ntx * p.nty * p.ntz * p.nouter;
    g_p = p;
    emu_launch((unsigned)(nblk < 3 ? nblk : ri(1, 3)), bx, by, body); /* grid-stride over blocks */
    /* a 4th spatial axis: one first-wins line pass after the fused pass (the runtime's order) */
    if (nsp == 4 && es[0] > 1) {
      const int a = nb; /* array axis */
      int64_t inner = cs[a], len = sh[a], outer = n / (inner * len);
      for (int64_t q = 0; q < outer; q++)
        for (int64_t i = 0; i < len; i++)
          for (int64_t j = 0; j < inner; j++) {
            E m = 0;
            for (int64_t k = 0; k < es[0]; k++) {
              int64_t mi = ndf_map(i + lo[0] + k, len, MODE);
              E v = mi < 0 ? (E)cval : out[(size_t)((q * len + mi) * inner + j)];
              m = k == 0 ? v : pick(m, v);
            }
            tmp[(size_t)((q * len + i) * inner + j)] = m;
          }
      out = tmp;
    }
    /* old CPU order: passes first axis first -> first of equal extrema, X most significant */
    long bad = 0, old = 0;
    char first[512] = "";
    for (int64_t i = 0; i < n; i++) {
      if (!same(ref[(size_t)i], out[(size_t)i]) && bad++ == 0)
        snprintf(first, sizeof first, "flat %lld: cpu %g (%s) emu %g (%s)", (long long)i, (double)ref[(size_t)i],
                 signbit((double)ref[(size_t)i]) ? "-" : "+", (double)out[(size_t)i], signbit((double)out[(size_t)i]) ? "-" : "+");
      if (isf && out[(size_t)i] == 0) zero_outputs++;
    }
    {
      /* old order by brute force: fold the window, X outermost ... first axis innermost */
      int64_t cc[8];
      for (int64_t i = 0; i < n; i++) {
        int64_t r = i;
        for (int d = nd - 1; d >= 0; d--) { cc[d] = r % sh[d]; r /= sh[d]; }
        int64_t cnt = 1;
        for (int d = 0; d < nsp; d++) cnt *= es[d];
        E m = 0;
        for (int64_t t = 0; t < cnt; t++) {
          int64_t rr = t, off = 0; int outside = 0;
          for (int d = 0; d < nsp; d++) { /* axis 0 fastest: X most significant */
            int64_t k = rr % es[d]; rr /= es[d];
            int64_t mi = ndf_map(cc[nb + d] + lo[d] + k, sh[nb + d], MODE);
            if (mi < 0) outside = 1; else off += mi * cs[nb + d];
          }
          for (int d = 0; d < nb; d++) off += cc[d] * cs[d];
          E v = outside ? (E)cval : in[(size_t)off];
          m = t == 0 ? v : pick(m, v);
        }
        old += !same(m, out[(size_t)i]);
      }
    }
    bad_total += bad;
    old_total += old;
    if (bad) {
      printf("MISMATCH vs CPU in %ld elements: nb=%d shape=", bad, nb);
      for (int d = 0; d < nd; d++) printf("%s%lld", d ? "x" : "", (long long)sh[d]);
      printf(" size=");
      for (int d = 0; d < nsp; d++) printf("%s%lld", d ? "x" : "", (long long)es[d]);
      printf(" origin=");
      for (int d = 0; d < nsp; d++) printf("%s%lld", d ? "," : "", (long long)org[d]);
      printf(" cval=%g: %s\n", cval, first);
    }
  }
  printf("T=%s OP=%d MODE=%d K=%dx%dx%d: %ld cases, %ld mismatches vs CPU, %ld vs the old CPU order, %ld zero outputs\n",
         EMU_TNAME, OP, MODE, KZ, KY, KX, ncases, bad_total, old_total, zero_outputs);
  ndf_ctx_destroy(ctx);
  return bad_total ? 1 : 0;
}
