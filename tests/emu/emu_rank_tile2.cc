/* emu_rank_tile2.cc -- host emulation of the second sorted-tile rank kernel
 * (templates/rank_tile2.cu), compiled from the template source itself
 * (tests/emu/emu_rank_tile2.sh sets the slots and gives the dynamic shared
 * memory a static home), launched as runtime/rank_cuda.c run_tile launches
 * it, on random inputs (ties, -0.0/0.0, +-inf, NaN), shapes with 0-2 outer
 * axes, origins and cval.  Compared bit for bit (NaN: position only) with the
 * CPU backend (libndforge: ndf_median/rank/percentile_filter).
 * Usage: emu seed ncases; exit 1 on any mismatch. */
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
static unsigned int atomicXor(unsigned int *a, unsigned int v) { unsigned int o = *a; *a = o ^ v; return o; }
static unsigned int atomicAdd(unsigned int *a, unsigned int v) { unsigned int o = *a; *a = o + v; return o; }
static unsigned int atomicOr(unsigned int *a, unsigned int v) { unsigned int o = *a; *a = o | v; return o; }
/* PIPE 4: every thread of the block reaches each __syncwarp and shuffle
 * equally often, so a block barrier (stronger) stands in for both. */
static void __syncwarp(void) { __syncthreads(); }
static int emu_shfl_slot[64];
static int __shfl_xor_sync(unsigned int, int v, int m) {
  emu_shfl_slot[threadIdx.x] = v;
  __syncthreads();
  const int r = emu_shfl_slot[threadIdx.x ^ m];
  __syncthreads();
  return r;
}
static int __popc(unsigned int v) { return __builtin_popcount(v); }
static unsigned int __funnelshift_l(unsigned int lo, unsigned int hi, unsigned int s) {
  unsigned long long x = ((unsigned long long)hi << 32 | lo) << (s & 31);
  return (unsigned int)(x >> 32);
}
static unsigned int __byte_perm(unsigned int x, unsigned int y, unsigned int s) {
  const unsigned long long v = (unsigned long long)y << 32 | x;
  unsigned int r = 0;
  for (int i = 0; i < 4; i++) r |= (unsigned int)(v >> (8 * ((s >> (4 * i)) & 7)) & 0xff) << (8 * i);
  return r;
}
struct uint4 { unsigned int x, y, z, w; };
struct uint2 { unsigned int x, y; };
static int __ffs(unsigned int v) { return __builtin_ffs((int)v); }
static int __clz(unsigned int v) { return v ? __builtin_clz(v) : 32; }
static uint4 make_uint4(unsigned int x, unsigned int y, unsigned int z, unsigned int w) { return uint4{x, y, z, w}; }
static float __uint_as_float(unsigned int u) { float f; memcpy(&f, &u, 4); return f; }
static unsigned int __float_as_uint(float f) { unsigned int u; memcpy(&u, &f, 4); return u; }
static float __int_as_float(int u) { float f; memcpy(&f, &u, 4); return f; }
static unsigned char emu_smem[64 * 1024] __attribute__((aligned(16)));
#include EMU_KERNEL_FILE

typedef NDF_SLOT_T E;
static ndf_tile_params g_p;
static void body(void) { ndf_rank_tile2(g_p); }

static uint64_t rs;
static uint64_t rnd(void) { rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17; return rs; }
static long ri(long lo, long hi) { return lo + (long)(rnd() % (uint64_t)(hi - lo + 1)); }
static int is_nan(E v) { return v != v; }
/* -0.0 and 0.0 are one key: which of the two a tie returns is not specified (ADR 0005). */
static int same(E a, E b) { return (is_nan(a) && is_nan(b)) || memcmp(&a, &b, sizeof a) == 0 || (a == 0 && b == 0); }

int main(int argc, char **argv) {
  rs = 0x9E3779B97F4A7C15ull ^ (uint64_t)atoll(argc > 1 ? argv[1] : "1");
  const long ncases = argc > 2 ? atol(argv[2]) : 10;
  ndf_ctx_options co;
  ndf_ctx_options_init(&co);
  co.backend = NDF_BACKEND_CPU;
  co.cpu_threads = 1;
  ndf_ctx *ctx;
  if (ndf_ctx_create(&ctx, &co) != NDF_OK) return 2;
  const int isf = (E)0.5 != 0;
  const ndf_dtype dt = isf ? NDF_FLOAT32 : (E)-1 > 0 ? (sizeof(E) == 1 ? NDF_UINT8 : sizeof(E) == 2 ? NDF_UINT16 : NDF_UINT32)
                                                     : (sizeof(E) == 1 ? NDF_INT8 : sizeof(E) == 2 ? NDF_INT16 : NDF_INT32);
  long bad_total = 0;
  for (long c = 0; c < ncases; c++) {
    const int nb = (int)ri(0, 2), nd = nb + 2;
    int64_t sh[4];
    for (int d = 0; d < nb; d++) sh[d] = ri(1, 2);
    sh[nb] = ri(0, 3) ? ri(1, 3 * S) : ri(1, 5);        /* ny: one to several strips */
    sh[nb + 1] = ri(0, 3) ? ri(1, 100) : ri(1, 6);      /* nx: one to four column blocks */
    if (ri(0, 3) == 0) {                                /* tiles inside the array too (no boundary mapping) */
      sh[nb] = ri(2 * S + KY, 3 * S + 2 * KY);
      sh[nb + 1] = ri(64 + 2 * KX, 128 + 2 * KX);
    }
    int64_t n = 1;
    for (int d = 0; d < nd; d++) n *= sh[d];
    const int64_t es[2] = {KY, KX};
    int64_t org[2];
    for (int d = 0; d < 2; d++) org[d] = ri(0, 2) ? ri(-(es[d] / 2), (es[d] - 1) / 2) : 0;
    double cval;
    switch (ri(0, 4)) { case 0: cval = NAN; break; case 1: cval = -0.0; break; case 2: cval = INFINITY; break; case 3: cval = 1; break; default: cval = (double)ri(-3, 3); }
    if (!isf && cval != cval) cval = 2;
    if (!isf && cval == INFINITY) cval = 7;
    if (!isf && (E)-1 > 0 && cval < 0) cval = 3;
    std::vector<E> in((size_t)n), ref((size_t)n), out((size_t)n);
    const int ties = (int)ri(0, 2);     /* 0: spread values, 1: few values, 2: many NaN */
    for (int64_t i = 0; i < n; i++) {
      double v;
      if (ties == 1) { static const double fv[] = {-0.0, 0.0, 1.0, -1.0, 2.5, -INFINITY, INFINITY, NAN}; v = fv[ri(0, ri(0, 9) ? 6 : 7)]; }
      else if (ties == 2 && ri(0, 4) == 0) v = NAN;
      else v = (double)ri(-100000, 100000) / 64;
      if (!isf) v = v != v ? 2 : isinf(v) ? (v > 0 ? 100 : 0) : (E)-1 > 0 && v < 0 ? -v : v;
      in[(size_t)i] = (E)v;
    }
    const int nt = KY * KX;
#if RKIND == 1
    const int64_t rank = RPARAM;
#endif
    ndf_array ain, aout;
    ndf_array_init(&ain, in.data(), NDF_DEVICE_CPU, dt, nd, sh);
    ndf_array_init(&aout, ref.data(), NDF_DEVICE_CPU, dt, nd, sh);
    ndf_rank_options o;
    ndf_rank_options_init(&o);
    o.mode = (ndf_mode)MODE;
    o.cval = cval;
    o.batch_dims = nb;
    o.nsize = 2;
    o.norigin = 2;
    o.nan_policy = NAN_OMIT ? NDF_RANK_NAN_OMIT : NDF_RANK_NAN_PROPAGATE;
    for (int d = 0; d < 2; d++) { o.size[d] = es[d]; o.origin[d] = org[d]; }
#if RKIND == 0
    ndf_status st = ndf_median_filter(ctx, &ain, &aout, &o);
#elif RKIND == 1
    ndf_status st = ndf_rank_filter(ctx, &ain, &aout, rank, &o);
#else
    ndf_status st = ndf_percentile_filter(ctx, &ain, &aout, RPARAM, &o);
#endif
    (void)nt;
    if (st != NDF_OK) { fprintf(stderr, "CPU: %s\n", ndf_errmsg(ctx)); return 2; }
    int64_t cs[4];
    { int64_t s = 1; for (int d = nd - 1; d >= 0; d--) { cs[d] = s; s *= sh[d]; } }
    ndf_tile_params p;
    memset(&p, 0, sizeof p);
    p.in = in.data();
    p.out = out.data();
    p.ny = sh[nb]; p.nx = sh[nb + 1];
    p.iys = p.oys = cs[nb]; p.ixs = p.oxs = cs[nb + 1];
    p.nlead = nb;
    int64_t nouter = 1;
    for (int d = 0; d < nb; d++) { p.lshape[d] = sh[d]; p.listr[d] = p.lostr[d] = cs[d]; nouter *= sh[d]; }
    p.ylo = es[0] == 1 ? 0 : (int)-(es[0] / 2 + org[0]);
    p.xlo = es[1] == 1 ? 0 : (int)-(es[1] / 2 + org[1]);
    p.nstrips = (p.ny + S - 1) / S; p.nxb = (p.nx + 31) / 32; p.nouter = nouter;
    /* cval as the runtime passes it: converted to T first */
    p.cval = (double)(E)cval;
    const int64_t nblk = p.nstrips * p.nxb * p.nouter;
    g_p = p;
    emu_launch((unsigned)(nblk < 3 ? nblk : ri(1, 3)), 64, 1, body);
    long bad = 0;
    for (int64_t i = 0; i < n; i++)
      if (!same(out[(size_t)i], ref[(size_t)i])) {
        if (bad < 5) fprintf(stderr, "case %ld (shape %lldx%lld nb %d org %lld,%lld cval %g ties %d) at %lld: got %g want %g\n", c,
                             (long long)sh[nb], (long long)sh[nb + 1], nb, (long long)org[0], (long long)org[1], cval, ties,
                             (long long)i, (double)out[(size_t)i], (double)ref[(size_t)i]);
        bad++;
      }
    bad_total += bad;
  }
  ndf_ctx_destroy(ctx);
  printf("rank_tile2 emu T=%s KY=%d KX=%d S=%d SORTU=%d MODE=%d RKIND=%d NAN_OMIT=%d: %ld cases, %ld mismatches\n", EMU_TNAME, KY, KX,
         S, SORTU, MODE, RKIND, NAN_OMIT, ncases, bad_total);
  return bad_total ? 1 : 0;
}
