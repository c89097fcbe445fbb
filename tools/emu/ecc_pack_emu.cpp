// ecc_pack_emu.cpp -- runs ndf_ecc_pack (templates/ecc.cu) on the host: one std::thread per CUDA thread,
// blocks in turn, real barriers; shared memory and atomics emulated.  Compares the per-image
// histogram's prefix sums with the CPU backend's curve on random inputs (V/T, 2-D/3-D by the build
// flags, odd and 1-long axes, ties, batches, the three threshold sources, random chunk lengths).
// It cannot find races or check the last-block curve and NaN tails.  tools/emu/ecc_pack_emu.sh.
#include <algorithm>
#include <atomic>
#include <barrier>
#include <memory>
#include <type_traits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
extern "C" {
#include "ndforge.h"
}
#define __device__
#define __host__
#define __forceinline__ inline
#define __global__
#define __launch_bounds__(a, b)
#define NDF_HD static inline
typedef long long ndf_i64;
typedef unsigned long long ndf_u64;
#define NDF_MAX_NDIM 12
struct emu_dim { unsigned x; };
struct float2 { float x, y; };
static inline float2 make_float2(float x, float y) { return float2{x, y}; }
#define __noinline__
// cvt.rpi.s32.f32: NaN gives 0, out of range saturates
static inline int __float2int_ru(float x) {
  if (x != x) return 0;
  const double c = std::ceil((double)x);
  return c >= 2147483647.0 ? 2147483647 : c <= -2147483648.0 ? (-2147483647 - 1) : (int)c;
}
thread_local unsigned tl_tid, tl_bid;
static unsigned g_grid;
#define threadIdx (emu_dim{tl_tid})
#define blockIdx (emu_dim{tl_bid})
#define gridDim (emu_dim{g_grid})
struct emu_block {
  alignas(16) unsigned qpl[8192];
  alignas(16) char dyn[65536];
  float f[2], g[2];
  int i[3];
  bool last;
  double r_lo[8], r_hi[8];
  unsigned long long r_key;
  std::atomic<int> cnt{0};
  std::barrier<> bar{256};
  std::barrier<> *wbar[8];
  uint64_t wsl[8][32];
  long long pre[1024];
  emu_block() { for (auto &w : wbar) w = new std::barrier<>(32); }
  ~emu_block() { for (auto &w : wbar) delete w; }
};
thread_local emu_block *tl_blk;
static std::barrier<> *g_gridbar; // fused runs: every thread of every block
static inline emu_block &EMB() { return *tl_blk; }
static inline void __syncthreads() { tl_blk->bar.arrive_and_wait(); }
static inline int __syncthreads_count(int pred) {
  emu_block &b = *tl_blk;
  b.bar.arrive_and_wait();
  if (pred) b.cnt.fetch_add(1);
  b.bar.arrive_and_wait();
  const int r = b.cnt.load();
  b.bar.arrive_and_wait();
  if (tl_tid == 0) b.cnt.store(0);
  b.bar.arrive_and_wait();
  return r;
}
static inline int __syncthreads_or(int pred) { return __syncthreads_count(pred) != 0; }
template <class T> static inline T __shfl_xor_sync(unsigned, T v, int o) {
  emu_block &b = *tl_blk;
  const unsigned w = tl_tid / 32, l = tl_tid % 32;
  uint64_t bits = 0;
  memcpy(&bits, &v, sizeof v);
  b.wsl[w][l] = bits;
  b.wbar[w]->arrive_and_wait();
  bits = b.wsl[w][l ^ (unsigned)o];
  b.wbar[w]->arrive_and_wait();
  T r;
  memcpy(&r, &bits, sizeof r);
  return r;
}
static inline void __threadfence() {}
template <class T> static inline T __ldcg(const T *p) { return *p; }
static inline int atomicAdd(int *p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
static inline unsigned atomicAdd(unsigned *p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
static inline ndf_u64 atomicAdd(ndf_u64 *p, ndf_u64 v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
static inline ndf_u64 atomicMax(ndf_u64 *p, ndf_u64 v) {
  ndf_u64 o = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (o < v && !__atomic_compare_exchange_n(p, &o, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
  return o;
}
static inline float __double2float_rd(double t) { float f = (float)t; if ((double)f > t) f = std::nextafter(f, -INFINITY); return f; }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __ddiv_rn(double a, double b) { return a / b; }
static inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const uint64_t v = (uint64_t)x | ((uint64_t)y << 32);
  unsigned r = 0;
  for (int i = 0; i < 4; i++) r |= (unsigned)((v >> (8 * ((s >> (4 * i)) & 7))) & 0xff) << (8 * i);
  return r;
}
using std::min;
using std::max;
using std::fmin;
using std::fmax;
using std::fma;
using std::isfinite;
static void ndf_ecc_prefix(const long long *, const long long *, long long *, ndf_i64, ndf_i64) { abort(); }
// the fused tail: thread 0 of the block does the prefix sums in order
static void ndf_ecc_prefix_m(const long long *hist, ndf_i64 m, long long *out, ndf_i64 T, ndf_i64 ostep) {
  __syncthreads();
  if (tl_tid == 0) {
    long long acc = 0;
    for (ndf_i64 k = 0; k < T; k++) {
      acc += hist[k];
      out[(k < m ? k : k == m ? T - 1 : k - 1) * ostep] = acc;
    }
  }
  __syncthreads();
}
static void ndf_ecc_grid_sync(unsigned *) { g_gridbar->arrive_and_wait(); }
#define NDF_ECC_CEILF std::ceil
#include "ndf_ecc_pack.cuh"
typedef EMU_TIN TIN;
typedef EMU_V V;
#define NSP EMU_NSP
#define CONS EMU_CONS
#define SOFT 0
#include KERN_INC

static uint64_t sd = 777;
static uint64_t rnd() { return sd = sd * 6364136223846793005ULL + 1442695040888963407ULL, sd >> 11; }
static double urand() { return (double)rnd() * 0x1p-53; }
static int64_t irand(int64_t a, int64_t b) { return a + (int64_t)(rnd() % (uint64_t)(b - a + 1)); }

int main(int argc, char **argv) {
  const int cases = argc > 1 ? atoi(argv[1]) : 20;
  ndf_ctx *ctx; ndf_ctx_options o; ndf_ctx_options_init(&o); o.backend = NDF_BACKEND_CPU;
  if (ndf_ctx_create(&ctx, &o) != NDF_OK) return 2;
  int bad = 0, nfused = 0, nbadin = 0;
  for (int cs = 0; cs < cases; cs++) {
    const int nb = (int)irand(0, 1), tkind = (int)irand(0, 2), vkind = (int)irand(0, 1);
    int64_t T = std::vector<int64_t>{1, 2, 37, 256, 510}[irand(0, 4)];
    if (tkind && T < 2) T = 2;
    int64_t sh[4]; int nd = 0;
    if (nb) sh[nd++] = irand(1, 2);
    for (int d = 0; d < NSP; d++) sh[nd++] = urand() < 0.15 ? irand(1, 2) : irand(1, NSP == 2 ? 600 : 70);
    if (NSP == 3 && sh[nd - 3] * sh[nd - 2] * sh[nd - 1] > 60000) sh[nd - 3] = std::max<int64_t>(1, 60000 / (sh[nd - 2] * sh[nd - 1]));
    int64_t n = 1; for (int d = 0; d < nd; d++) n *= sh[d];
    std::vector<TIN> img((size_t)n);
    const int top = (int)irand(1, 6);
    for (auto &v : img) v = vkind == 0 ? (TIN)irand(0, top) : (TIN)(urand() * 200);
    std::vector<double> vals((size_t)T);
    for (auto &v : vals) v = vkind == 1 ? urand() * 220 - 10 : (double)irand(-1, top + 1) + (urand() < 0.3 ? 0.5 : 0);
    ndf_array in, cur, va;
    ndf_dtype dt = sizeof(TIN) == 8 ? NDF_FLOAT64 : sizeof(TIN) == 4 ? NDF_FLOAT32 : sizeof(TIN) == 2 ? NDF_UINT16 : NDF_UINT8;
    ndf_array_init(&in, img.data(), NDF_DEVICE_CPU, dt, nd, sh);
    const int64_t nimg = nb ? sh[0] : 1;
    int64_t osh[2] = {nimg, T};
    std::vector<long long> ref((size_t)(nimg * T));
    ndf_array_init(&cur, ref.data(), NDF_DEVICE_CPU, NDF_INT64, nb ? 2 : 1, nb ? osh : &T);
    ndf_array_init(&va, vals.data(), NDF_DEVICE_CPU, NDF_FLOAT64, 1, &T);
    ndf_ecc_options eo; ndf_ecc_options_init(&eo);
    eo.construction = CONS ? NDF_ECC_T : NDF_ECC_V; eo.batch_dims = nb; eo.nthresholds = T;
    if (tkind == 0) eo.values = &va;
    if (tkind == 2) { eo.has_range = 1; eo.range_lo = vkind ? 5 : 0; eo.range_hi = vkind ? 150 : top - 0.5; }
    if (ndf_euler_characteristic_curve(ctx, &in, &cur, &eo) != NDF_OK) { printf("CPU: %s\n", ndf_errmsg(ctx)); return 2; }
    std::vector<double> th((size_t)T);
    if (ndf_ecc_thresholds(ctx, &in, &eo, th.data(), T) != NDF_OK) return 2;
    std::vector<std::pair<double, int64_t>> srt((size_t)T);
    for (int64_t k = 0; k < T; k++) srt[(size_t)k] = {th[(size_t)k], k};
    std::sort(srt.begin(), srt.end());
    std::vector<double> ts((size_t)T);
    for (int64_t k = 0; k < T; k++) ts[(size_t)k] = srt[(size_t)k].first;
    const int uni = tkind != 0 && ts[(size_t)T - 1] > ts[0];
    // geometry as runtime/ecc_cuda.c (newp 2), with a few chunk lengths
    const int64_t nz = sh[nb], ny = NSP == 3 ? sh[nb + 1] : 1, nx = sh[nd - 1];
    ndf_ecc_params p; memset(&p, 0, sizeof p);
    std::vector<ndf_u64> hist((size_t)(nimg * T), 0);
    ndf_ecc_hdr hd; memset(&hd, 0, sizeof hd);
    p.in = img.data(); p.hist = hist.data(); p.ts = ts.data(); p.T = T; p.nimg = nimg;
    p.uniform = uni; p.lo = uni ? ts[0] : 0; p.inv_step = uni ? (double)(T - 1) / (ts[(size_t)T - 1] - ts[0]) : 0;
    p.ntx = NSP == 3 ? (nx + 63) / 64 : (nx + 511) / 512;
    p.ptiles = p.ntx * (NSP == 3 ? (ny + 7) / 8 : 1);
    p.mc = irand(1, std::max<int64_t>(1, nz)); p.nchunks = (nz + p.mc - 1) / p.mc;
    p.nz = nz; p.ny = ny; p.nx = nx; p.sx = 1; p.sy = nx; p.sz = nx * ny;
    p.nb = nb; p.bshape[0] = nimg; p.bstr[0] = nz * ny * nx; p.smem_ts = 1;
    p.hdr = &hd; p.check_nan = 0; p.cnt = nullptr;
    // fused (thresholds over [min, max]): the whole grid at once (at most 16 blocks), poisoned
    // histogram, tickets, header and partials (the kernel zeroes / writes what it uses), the
    // curve written by the images' last blocks; NaN / inf inputs sometimes
    const bool fused = tkind == 1 && nimg * p.ptiles <= 16 && irand(0, 2) != 0;
    std::vector<unsigned> cnt((size_t)nimg, 0xdeadbeefu);
    std::vector<long long> outv((size_t)(nimg * T), 0x5a5a5a5aLL);
    std::vector<double> part;
    unsigned gbar = irand(0, 1) ? 0x80000000u : 0u;
    int64_t nan_at = -1;
    bool has_inf = false;
    if (fused) {
      const int64_t nch = std::max<int64_t>(1, std::min<int64_t>(nz, 16 / (nimg * p.ptiles)));
      p.mc = irand((nz + nch - 1) / nch, nz); p.nchunks = (nz + p.mc - 1) / p.mc;
      p.fused = 1; p.cnt = cnt.data(); p.out = outv.data(); p.ostep = 1;
      p.oshape[0] = nimg; p.ostr[0] = T; p.gbar = &gbar;
      for (auto &h : hist) h = 0x1234567ull;
      memset(&hd, 0x77, sizeof hd);
      if (std::is_floating_point<TIN>::value && irand(0, 4) == 0) {
        const int kind = (int)irand(0, 2); // NaN, inf, both
        for (int r = (int)irand(1, 3); r > 0; r--) {
          const int64_t at = irand(0, n - 1);
          if (kind != 1) img[(size_t)at] = (TIN)NAN; else img[(size_t)at] = (TIN)(irand(0, 1) ? INFINITY : -INFINITY);
          if (kind == 2 && r == 1) img[(size_t)irand(0, n - 1)] = (TIN)INFINITY;
        }
        for (int64_t i = 0; i < n; i++) {
          if (img[(size_t)i] != img[(size_t)i] && nan_at < 0) nan_at = i;
          if (std::isinf((double)img[(size_t)i])) has_inf = true;
        }
        if (nan_at >= 0) has_inf = false; // the NaN error comes first
      }
    }
    g_grid = (unsigned)(nimg * p.ptiles * p.nchunks);
    if (fused) {
      part.assign((size_t)g_grid * 3, -7.5);
      p.part = part.data();
      std::vector<emu_block> blks(g_grid);
      std::barrier<> gb((ptrdiff_t)g_grid * 256);
      g_gridbar = &gb;
      std::vector<std::thread> th2;
      for (unsigned b = 0; b < g_grid; b++)
        for (unsigned t = 0; t < 256; t++)
          th2.emplace_back([&, t, b] { tl_tid = t; tl_bid = b; tl_blk = &blks[b]; ndf_ecc_pack(p); });
      for (auto &t : th2) t.join();
      if (nan_at >= 0 || has_inf) {
        const bool ok = hd.nan_key == (nan_at >= 0 ? ~(ndf_u64)nan_at : 0ull) && (nan_at >= 0 || hd.bad == 1) &&
                        std::all_of(outv.begin(), outv.end(), [](long long v) { return v == 0x5a5a5a5aLL; });
        if (!ok) {
          bad++;
          printf("MISMATCH (fused, NaN at %lld, inf %d): key %llx bad %d\n", (long long)nan_at, (int)has_inf,
                 (unsigned long long)hd.nan_key, hd.bad);
        }
        nbadin++;
        continue;
      }
      if (hd.nan_key != 0 || hd.bad != 0 || (gbar & 0x7fffffffu) != 0) {
        bad++;
        printf("MISMATCH (fused): header key %llx bad %d barrier word %x\n", (unsigned long long)hd.nan_key, hd.bad, gbar);
      }
      for (int64_t im = 0; im < nimg; im++)
        for (int64_t k = 0; k < T; k++)
          if (outv[(size_t)(im * T + k)] != ref[(size_t)(im * T + k)]) {
            bad++;
            printf("MISMATCH (fused) case %d T %lld mc %lld image %lld k %lld: %lld vs %lld\n", cs, (long long)T,
                   (long long)p.mc, (long long)im, (long long)k, outv[(size_t)(im * T + k)], ref[(size_t)(im * T + k)]);
            im = nimg;
            break;
          }
      nfused++;
      continue;
    }
    for (unsigned b = 0; b < g_grid; b++) {
      auto blk = std::make_unique<emu_block>();
      std::vector<std::thread> th2;
      for (unsigned t = 0; t < 256; t++)
        th2.emplace_back([&, t, b] { tl_tid = t; tl_bid = b; tl_blk = blk.get(); ndf_ecc_pack(p); });
      for (auto &t : th2) t.join();
    }
    for (int64_t im = 0; im < nimg; im++) {
      long long acc = 0; int ok = 1;
      for (int64_t k = 0; k < T; k++) {
        acc += (long long)hist[(size_t)(im * T + k)];
        if (ref[(size_t)(im * T + srt[(size_t)k].second)] != acc) ok = 0;
      }
      if (!ok) {
        bad++;
        printf("MISMATCH case %d tkind %d vkind %d T %lld mc %lld shape", cs, tkind, vkind, (long long)T, (long long)p.mc);
        for (int d = 0; d < nd; d++) printf(" %lld", (long long)sh[d]);
        printf(" image %lld\n", (long long)im);
      }
    }
  }
  printf("NSP %d CONS %d: %d cases (%d fused, %d fused with NaN/inf), %d mismatches\n", NSP, CONS, cases, nfused, nbadin, bad);
  return bad != 0;
}
