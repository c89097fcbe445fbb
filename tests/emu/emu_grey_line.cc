/* emu_grey_line.cc -- host emulation of the register line passes
 * (templates/grey_linew.cu: last axis, warp shuffles; grey_linev.cu: other
 * axes, streamed van Herk), compiled from the template source itself
 * (tests/emu/emu_grey_line.sh sets the slots and points grey_linev's dynamic
 * shared memory at a host buffer), launched with the parameter blocks and
 * grids of runtime/grey_cuda.c (run_linew, run_linev: chunks of 256 outputs;
 * segments of L outputs, 32..128 threads per block) on random shapes (1-3
 * axes, padded strides in and out), origins (offsets lo beyond the element
 * too), extents, cval and inputs of ties (-0.0, 0.0, +-1, NaN).  Compared bit
 * for bit with the definition: the left-to-right fold of ndf_pick over the
 * window of the extended line (what the O(K) pass, grey_line and the CPU
 * compute).  Threads are fibers (tests/emu/cuda_host_shim.h); a warp shuffle
 * is two rounds of the scheduler (publish, then read the source lane).
 * Usage: emu seed ncases; exit 1 on any mismatch. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>
#include "cuda_host_shim.h"

#include "emu_warp.h"

#include EMU_LINEW_FILE
#include EMU_LINEV_FILE
#define RO_W RO

typedef NDF_SLOT_T E;
static ndf_linew_params g_pw;
static ndf_linev_params g_pv;
static void body_w(void) { ndf_grey_linew(g_pw); }
static void body_v(void) { ndf_grey_linev(g_pv); }

static uint64_t rs;
static uint64_t rnd(void) { rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17; return rs; }
static long ri(long lo, long hi) { return lo + (long)(rnd() % (uint64_t)(hi - lo + 1)); }

/* The fields put_line_axes writes (runtime/grey_cuda.c), into either struct. */
template <typename P> static int64_t fill_axes(P &p, const int64_t *sh, const int64_t *is, const int64_t *os, int nd, int a) {
  p.n = sh[a];
  p.istr = is[a];
  p.ostr = os[a];
  p.nother = nd - 1;
  int64_t nl = 1;
  for (int d = 0, i = 0; i < NDF_MAX_NDIM; d++) {
    if (d == a) continue;
    p.oshape[i] = d < nd ? sh[d] : 0;
    p.oistr[i] = d < nd ? is[d] : 0;
    p.oostr[i] = d < nd ? os[d] : 0;
    if (d < nd) nl *= sh[d];
    i++;
  }
  p.nlines = nl;
  return nl;
}

int main(int argc, char **argv) {
  rs = 0x9E3779B97F4A7C15ull ^ (uint64_t)atoll(argc > 1 ? argv[1] : "1");
  const long ncases = argc > 2 ? atol(argv[2]) : 20;
  const int isf = (E)0.5 != 0;
  long bad_cases = 0;
  for (long c = 0; c < ncases; c++) {
    const int nd = (int)ri(1, 3), last = ri(0, 2) != 0 || nd == 1;
    const int a = last ? nd - 1 : (int)ri(0, nd - 2);
    const int K = last ? KK : (ri(0, 2) ? KK : (int)ri(2, 140));
    int64_t sh[3], is[3], os[3];
    for (int d = 0; d < nd; d++)
      sh[d] = ri(0, 4) == 0 ? ri(1, 3) : d == a ? ri(1, 700) : d == nd - 1 ? ri(1, 70) : ri(1, 6);
    int64_t ni = 1, no = 1;
    for (int d = nd - 1; d >= 0; d--) { /* padded C order */
      is[d] = ni;
      os[d] = no;
      ni *= sh[d] + (d == nd - 1 ? 0 : ri(0, 2));
      no *= sh[d] + (d == nd - 1 ? 0 : ri(0, 1));
    }
    if (ri(0, 3) == 0) { /* strided last axis */
      for (int d = 0; d < nd; d++) is[d] *= 2;
      ni *= 2;
    }
    const int lo = ri(0, 4) == 0 ? (int)ri(-K - 5, 5) : (int)ri(-(K - 1), 0);
    double cval;
    switch (ri(0, 4)) { case 0: cval = NAN; break; case 1: cval = -0.0; break; case 2: cval = 0.0; break; case 3: cval = 1; break; default: cval = (double)ri(-3, 3); }
    if (!isf && cval != cval) cval = 2;
    if (!isf && (E)-1 > 0 && cval < 0) cval = 3;
    std::vector<E> in((size_t)ni), out((size_t)no), ref((size_t)no);
    const int ties = ri(0, 9) < 6;
    for (int64_t i = 0; i < ni; i++) {
      double v;
      if (ties) { /* mostly -0.0 and 0.0 (the windows are long: few other values, else they decide) */
        static const double fv[] = {-0.0, 0.0, 1.0, -1.0, NAN};
        v = fv[ri(0, 199) < 196 ? ri(0, 1) : ri(2, 4)];
      }
      else v = (double)ri(-100, 100) / 4;
      if (!isf) v = v != v ? 2 : (E)-1 > 0 && v < 0 ? 3 : v;
      in[(size_t)i] = (E)v;
    }
    const E sentinel = (E)7;
    for (int64_t i = 0; i < no; i++) out[(size_t)i] = ref[(size_t)i] = sentinel;
    /* reference: the left-to-right fold over every line */
    const E cv = (E)cval;
    int64_t total = 1;
    for (int d = 0; d < nd; d++) total *= sh[d];
    for (int64_t f = 0; f < total; f++) {
      int64_t r = f, io = 0, oo = 0, x = 0;
      for (int d = nd - 1; d >= 0; d--) {
        int64_t cd = r % sh[d];
        r /= sh[d];
        if (d == a) x = cd;
        else { io += cd * is[d]; oo += cd * os[d]; }
      }
      E acc = cv;
      for (int k = 0; k < K; k++) {
        int64_t m = ndf_map(x + lo + k, sh[a], MODE);
        E v = m < 0 ? cv : in[(size_t)(io + m * is[a])];
        acc = k == 0 ? v : ndf_pick<OP, E>(acc, v);
      }
      ref[(size_t)(oo + x * os[a])] = acc;
    }
    const char *which;
    unsigned grid, bx;
    if (last && K == KK) {
      which = "linew";
      memset(&g_pw, 0, sizeof g_pw);
      g_pw.in = in.data();
      g_pw.out = out.data();
      int64_t nl = fill_axes(g_pw, sh, is, os, nd, a);
      g_pw.nchunk = (sh[a] + 32 * RO_W - 1) / (32 * RO_W);
      g_pw.lo = lo;
      g_pw.cval = cval;
      int64_t warps = nl * g_pw.nchunk, blocks = (warps + 7) / 8;
      grid = (unsigned)(blocks < 3 ? blocks : ri(1, 3)); /* grid-stride loops as when capped */
      bx = 256;
      emu_launch_loose(grid, bx, body_w);
    } else {
      which = "linev";
      memset(&g_pv, 0, sizeof g_pv);
      g_pv.in = in.data();
      g_pv.out = out.data();
      int64_t nl = fill_axes(g_pv, sh, is, os, nd, a);
      int nt = 128;
      while ((int64_t)K * nt * (int64_t)sizeof(E) > 49152) nt -= 32;
      if (ri(0, 1)) nt = 32 * (int)ri(1, nt / 32);
      int64_t L = ri(0, 2) ? ri(1, sh[a]) : (sh[a] >= K ? K : sh[a]);
      g_pv.nseg = (sh[a] + L - 1) / L;
      g_pv.K = K;
      g_pv.lo = lo;
      g_pv.L = (int)L;
      g_pv.cval = cval;
      int64_t blocks = (nl * g_pv.nseg + nt - 1) / nt;
      grid = (unsigned)(blocks < 4 ? blocks : ri(1, 4));
      bx = (unsigned)nt;
      emu_launch_loose(grid, bx, body_v);
    }
    int64_t nbad = 0, first = -1;
    for (int64_t i = 0; i < no; i++)
      if (memcmp(&out[(size_t)i], &ref[(size_t)i], sizeof(E)) != 0 && nbad++ == 0) first = i;
    if (nbad) {
      bad_cases++;
      printf("%s T=%s OP=%d MODE=%d K=%d lo=%d cval=%g axis %d of shape", which, EMU_TNAME, OP, MODE, K, lo, cval, a);
      for (int d = 0; d < nd; d++) printf(" %lld", (long long)sh[d]);
      printf(" grid %u x %u: %lld of %lld differ (first at %lld: %g vs %g)%s\n", grid, bx, (long long)nbad, (long long)no,
             (long long)first, (double)out[(size_t)first], (double)ref[(size_t)first], ties ? " (ties)" : "");
    }
  }
  printf("T=%s OP=%d MODE=%d K=%d: %ld cases, %ld with mismatches\n", EMU_TNAME, OP, MODE, KK, ncases, bad_cases);
  return bad_cases != 0;
}
