// ecc_strip2_emu.cpp -- runs ndf_ecc_strip2 (templates/ecc.cu, 2-D; EMU_TELE=1: ndf_ecc_strip2t; EMU_NSP=3:
// ndf_ecc_strip3, 3-D) on the host: one std::thread per CUDA
// thread, the whole cooperative grid at once (a real grid barrier), per-block shared memory, warp
// shuffles and votes through per-warp barriers.  Poisoned histogram copies, tickets, header and
// partials (the kernel zeroes / writes what it uses); the curve written by each image's last block
// is compared with the CPU backend's on random inputs: ties, few distinct values, wide ranges far
// from 0 (first guesses off: the walk), constant images, odd and 1-long axes, batches, padded,
// misaligned and strided rows (element loads), strided outputs, T from 2 to 510, and the plan of
// runtime/ecc_cuda.c (strip_chunks_make / strip_units_make of runtime/ecc_plan.h, the plans below) under small block caps.  NaN / inf inputs:
// the header's key / flag and the untouched output.  tools/emu/ecc_strip2_emu.sh.
#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <thread>
#include <type_traits>
#include <vector>
extern "C" {
#include "ndforge.h"
}
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __global__
#define __launch_bounds__(a, b)
#define __align__(n) alignas(n)
#define NDF_HD static inline
typedef long long ndf_i64;
typedef unsigned long long ndf_u64;
#define NDF_MAX_NDIM 12
struct emu_dim { unsigned x; };
struct float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
struct alignas(8) uint2 { unsigned x, y; };
static inline float2 make_float2(float x, float y) { return float2{x, y}; }
static inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
static inline int __float_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }
static inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
static inline float __fadd_ru(float a, float b) { float r = a + b; if ((double)r < (double)a + (double)b) r = std::nextafter(r, INFINITY); return r; }
static inline int __float2int_ru(float x) {
  if (x != x) return 0;
  const double c = std::ceil((double)x);
  return c >= 2147483647.0 ? 2147483647 : c <= -2147483648.0 ? (-2147483647 - 1) : (int)c;
}
static inline int __float2int_rz(float x) {
  if (x != x) return 0;
  return x >= 2147483647.0f ? 2147483647 : x <= -2147483648.0f ? (-2147483647 - 1) : (int)x;
}
// fmaf rounded up: the round-to-nearest result, moved up when the exact a b + c lies above it (its sign
// from one double fma: c - r is exact in double for the kernels' operands)
static inline float __fmaf_ru(float a, float b, float c) {
  float r = std::fmaf(a, b, c);
  if (std::fma((double)a, (double)b, (double)c - (double)r) > 0.0) r = std::nextafter(r, INFINITY);
  return r;
}
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rd(float a, float b) { float r = a - b; if ((double)r > (double)a - (double)b) r = std::nextafter(r, -INFINITY); return r; }
static inline float __double2float_ru(double t) { float f = (float)t; if ((double)f < t) f = std::nextafter(f, INFINITY); return f; }
thread_local unsigned tl_tid, tl_bid;
static unsigned g_grid;
#define threadIdx (emu_dim{tl_tid})
#define blockIdx (emu_dim{tl_bid})
#define gridDim (emu_dim{g_grid})
struct emu_block {
  // the tables and histograms on the heap, each its own allocation: an index outside them is a
  // heap-buffer-overflow under EMU_ASAN=1 (inside one struct it would read a neighbour silently)
  std::unique_ptr<int[]> shist_{new int[512 + 32]}, h3_{new int[511 * 32 + 4 * 32 * 132]}; // + strip3's staged planes
  std::unique_ptr<float[]> tsf_{new float[512]};
  std::unique_ptr<float2[]> tpair_{new float2[512]};
  int *shist = shist_.get(), *h3 = h3_.get();
  float *tsf = tsf_.get();
  float2 *tpair = tpair_.get();
  float s_ga, s_gb, s_dl, s_dh;
  int s_m;
  float r_lo[8], r_hi[8];
  unsigned long long r_key;
  bool s_last;
  long long wsum[8];
  std::atomic<int> cnt{0};
  std::barrier<> bar{256};
  std::barrier<> *wbar[8];
  uint64_t wsl[8][32];
  int wvote[8];
  emu_block() {
    for (auto &w : wbar) w = new std::barrier<>(32);
    // poison
    for (int i = 0; i < 512 + 32; i++) shist[i] = 0x5eed;
    for (int i = 0; i < 511 * 32 + 4 * 32 * 132; i++) h3[i] = 0x3eed; // staged buffers too: a plane read before its copies
    for (int i = 0; i < 512; i++) tsf[i] = 12345.0f, tpair[i] = float2{7.0f, -7.0f};
    r_key = 0x77;
  }
  ~emu_block() { for (auto &w : wbar) delete w; }
};
thread_local emu_block *tl_blk;
static std::barrier<> *g_gridbar;
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
// a warp exchange: every lane publishes v, then reads lane src's
template <class T> static inline T warp_get(T v, int src) {
  emu_block &b = *tl_blk;
  const unsigned w = tl_tid / 32, l = tl_tid % 32;
  uint64_t bits = 0;
  memcpy(&bits, &v, sizeof v);
  b.wsl[w][l] = bits;
  b.wbar[w]->arrive_and_wait();
  bits = b.wsl[w][src];
  b.wbar[w]->arrive_and_wait();
  T r;
  memcpy(&r, &bits, sizeof r);
  return r;
}
template <class T> static inline T __shfl_xor_sync(unsigned, T v, int o) { return warp_get(v, (int)(tl_tid % 32) ^ o); }
template <class T> static inline T __shfl_up_sync(unsigned, T v, int d) {
  const int l = (int)(tl_tid % 32);
  return warp_get(v, l >= d ? l - d : l);
}
template <class T> static inline T __shfl_down_sync(unsigned, T v, int d) {
  const int l = (int)(tl_tid % 32);
  return warp_get(v, l + d < 32 ? l + d : l);
}
static inline int __all_sync(unsigned, int pred) {
  int all = 1;
  for (int l = 0; l < 32; l++) all &= warp_get(pred ? 1 : 0, l);
  return all;
}
static inline int __any_sync(unsigned, int pred) {
  int any = 0;
  for (int l = 0; l < 32; l++) {
    const int v = warp_get(pred ? 1 : 0, l);
    any |= v;
  }
  return any;
}
static inline void __threadfence() {}
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static inline void __threadfence_system() {}
template <class T> static inline T __ldcg(const T *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
static inline float2 __ldcg(const float2 *p) { uint64_t b = __atomic_load_n((const uint64_t *)p, __ATOMIC_RELAXED); float2 f; memcpy(&f, &b, 8); return f; }
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
static inline size_t __cvta_generic_to_shared(const void *) { return 0; }
using std::ceil;
using std::fmaf;
using std::fmax;
using std::fmin;
using std::isfinite;
using std::max;
using std::min;
static void ndf_ecc_grid_sync(unsigned *) { g_gridbar->arrive_and_wait(); }
// the helpers of templates/ecc.cu (NDF_ECC2_HELPERS_BEGIN .. END), without inline PTX
static inline float2 ndf_ecc3_ldpair(unsigned a) { return tl_blk->tpair[a / 8]; } // (shared-window addresses from 0)
static inline void ndf_ecc3_st(unsigned a, unsigned v) { __atomic_store_n((unsigned *)((char *)tl_blk->tpair + a), v, __ATOMIC_RELAXED); }
static inline void ndf_ecc3_red(unsigned a, int c) { __atomic_fetch_add((int *)((char *)tl_blk->h3 + a), c, __ATOMIC_RELAXED); }
// cp.async: EMU_CPLATE=1 defers each thread's copies to its wait that completes their group (a read
// before the right wait sees stale or poisoned shared memory); else copied at once
struct emu_cp { float *s; const float *g; int n; };
thread_local std::vector<std::vector<emu_cp>> tl_cpg; // the thread's committed groups, oldest first
thread_local std::vector<emu_cp> tl_cpo;              // its open group
static const bool g_cplate = getenv("EMU_CPLATE") && atoi(getenv("EMU_CPLATE")) == 1;
static inline void emu_cp_do(float *s, const float *g, int n) {
  if (g_cplate) tl_cpo.push_back(emu_cp{s, g, n});
  else memcpy(s, g, (size_t)n);
}
static inline void ndf_ecc3_cp16(float *s, const float *g) { emu_cp_do(s, g, 16); }
static inline void ndf_ecc3_cp4(float *s, const float *g) { emu_cp_do(s, g, 4); }
static inline void ndf_ecc3_cp_commit() { tl_cpg.push_back(std::move(tl_cpo)), tl_cpo.clear(); }
template <int N> static inline void ndf_ecc3_cp_wait() {
  while (tl_cpg.size() > (size_t)N) {
    for (const emu_cp &c : tl_cpg.front()) memcpy(c.s, c.g, (size_t)c.n);
    tl_cpg.erase(tl_cpg.begin());
  }
}
static inline float ndf_ecc3_fmasat(float a, float b, float c) {
  const float r = std::fmaf(a, b, c);
  return r != r ? 0.0f : std::fmin(std::fmax(r, 0.0f), 1.0f);
}
static inline void ndf_ecc2_stamp(unsigned long long *prof, int i) {
  if (prof && tl_tid == 0) prof[tl_bid * 8 + i] = (unsigned long long)std::chrono::steady_clock::now().time_since_epoch().count();
}
static inline void ndf_ecc2_wstamp(unsigned long long *) {}
static inline float ndf_ecc2_fminnan(float a, float b) { return (a != a || b != b) ? NAN : std::fmin(a, b); }
static inline unsigned ndf_ecc2_ticket(unsigned *p, int) { return __atomic_fetch_add(p, 1u, __ATOMIC_ACQ_REL); }
static void ndf_ecc2_grid_sync(unsigned *w, int) { ndf_ecc_grid_sync(w); }
// the barrier's halves (the given range's calls) on the word itself, as the kernel's protocol: block 0 adds
// 2^31 - (n - 1), the others 1; the top bit flips once all have arrived
static unsigned ndf_ecc2_arrive(unsigned *w) {
  return __atomic_fetch_add(w, tl_bid == 0 ? 0x80000000u - (g_grid - 1u) : 1u, __ATOMIC_ACQ_REL);
}
static void ndf_ecc2_await(unsigned *w, unsigned old) {
  while (((old ^ __atomic_load_n(w, __ATOMIC_ACQUIRE)) & 0x80000000u) == 0u) std::this_thread::yield();
}
static void ndf_ecc2_wait_count(unsigned *w, unsigned n) {
  while (__atomic_load_n(w, __ATOMIC_ACQUIRE) < n) std::this_thread::yield();
}
template <bool B> struct ndf_ecc2_bool { static constexpr bool value = B; };
static void ndf_ecc2_prefix(const long long *hist, int nc, ndf_i64 m, long long *out, ndf_i64 T, ndf_i64 ostep) {
  __syncthreads();
  if (tl_tid == 0) {
    long long acc = 0;
    for (ndf_i64 k = 0; k < T; k++) {
      for (int c = 0; c < nc; c++) acc += hist[c * T + k];
      out[(k < m ? k : k == m ? T - 1 : k - 1) * ostep] = acc;
    }
  }
  __syncthreads();
}
#include "ndf_ecc_pack.cuh"
typedef EMU_TIN TIN;
typedef float V;
#ifndef EMU_NSP
#define EMU_NSP 2
#endif
#ifndef EMU_TELE
#define EMU_TELE 0
#endif
#define NSP EMU_NSP
#define CONS EMU_CONS
#define SOFT 0
static int g_rng; // the RNG slot as a variable: each case draws it (a given range) or not
#define RNG g_rng
constexpr bool NDF_ECC_IB = sizeof(TIN) < 4; // (the template's, before its splice point)
#include KERN_INC

// the whole cooperative grid at once: one std::thread per CUDA thread running kern() (a real grid barrier)
template <class K> static void run_grid(unsigned grid, K kern) {
  g_grid = grid;
  std::vector<emu_block> blks(grid);
  std::barrier<> gb((ptrdiff_t)grid * 256);
  g_gridbar = &gb;
  std::vector<std::thread> th;
  for (unsigned b = 0; b < grid; b++)
    for (unsigned t = 0; t < 256; t++)
      th.emplace_back([&, t, b] {
        tl_tid = t, tl_bid = b, tl_blk = &blks[b];
        kern();
        for (const auto &g : tl_cpg) // a copy never waited for: the kernel ended with it in flight
          if (!g.empty()) fprintf(stderr, "block %u thread %u: cp.async copies in flight at the end\n", b, t), abort();
      });
  for (auto &t : th) t.join();
}

#ifdef EMU_RT
// tools/emu/ecc_strip2_rt.sh: runtime/ecc_cuda.c's cooperative launch runs here (the parameter bytes as
// the kernel's struct, the grid)
extern "C" int emu_strip2(unsigned grid, const void *params) {
  ndf_ecc2_params p;
  memcpy(&p, params, sizeof p);
  run_grid(grid, [&] { ndf_ecc_strip2(p); });
  return 0;
}
// the same for ndf_ecc_strip3 (w 16) / ndf_ecc_strip3n (w 8) (EMU_NSP=3)
extern "C" int emu_strip3(unsigned grid, const void *params, int w, int rng) {
  ndf_ecc3_params p;
  memcpy(&p, params, sizeof p);
  g_rng = rng; // the RNG specialization (a given range)
  run_grid(grid, [&] { if (w == 8) ndf_ecc_strip3n(p); else ndf_ecc_strip3(p); });
  g_rng = 0;
  return 0;
}
// the same for ndf_ecc_strip2t (EMU_NSP=2; the 2-D default for T <= 320)
extern "C" int emu_strip2t(unsigned grid, const void *params, int rng) {
  ndf_ecc2_params p;
  memcpy(&p, params, sizeof p);
  g_rng = rng; // the RNG specialization (a given range)
  run_grid(grid, [&] { ndf_ecc_strip2t(p); });
  g_rng = 0;
  return 0;
}
#else
// runtime/ecc_cuda.c's plans on the shared planner (runtime/ecc_plan.h; keep plan_make in step with
// strip2_plan_make / strip3_plan_make)
#include "ecc_plan.h"
// strip2 (strip2t: cons = CONS): strips of 128 columns, chunks of rows; strip3: tiles of w columns x 31 rows,
// equal shares of the (tile, plane) units (T: planes and rows from -1)
struct strip_plan { int64_t nstrip, ntx, nty, mc, tpi, bpi, nblocks; int ncopy; };
static int plan_make(int kind, int64_t nz, int64_t ny, int64_t nx, int64_t nimg, int cons, int64_t cap, int64_t minmc, int w,
                     int fine, strip_plan *pl) {
  if (nz <= 0 || ny <= 0 || nx <= 0 || nimg <= 0 || nz > 0x7fffff00 || ny > 0x7fffff00 || nx > 0x7fffff00) return 0;
  strip_chunks ch;
  memset(pl, 0, sizeof *pl);
  if (kind == 2) { // strip2t: cons rows before row 0 (T: from -1)
    pl->nstrip = (nx + 127) / 128;
    if (!strip_chunks_make(pl->nstrip, nz + cons, 1, minmc, nimg, cap, fine, &ch)) return 0;
  } else {
    pl->ntx = (nx + w - 1) / w;
    pl->nty = (ny + cons + 30) / 31;
    if (!strip_units_make(pl->ntx * pl->nty, nz + cons, minmc, nimg, cap, &ch)) return 0;
  }
  pl->mc = ch.mc, pl->tpi = ch.tpi, pl->bpi = ch.bpi, pl->nblocks = ch.nblocks, pl->ncopy = ch.ncopy;
  return 1;
}

static uint64_t sd = 777;
static uint64_t rnd() { return sd = sd * 6364136223846793005ULL + 1442695040888963407ULL, sd >> 11; }
static double urand() { return (double)rnd() * 0x1p-53; }
static int64_t irand(int64_t a, int64_t b) { return a + (int64_t)(rnd() % (uint64_t)(b - a + 1)); }

int main(int argc, char **argv) {
  const int cases = argc > 1 ? atoi(argv[1]) : 20;
  if (argc > 2) sd = strtoull(argv[2], nullptr, 10);
  ndf_ctx *ctx; ndf_ctx_options o; ndf_ctx_options_init(&o); o.backend = NDF_BACKEND_CPU;
  if (ndf_ctx_create(&ctx, &o) != NDF_OK) return 2;
  const bool isf = std::is_floating_point<TIN>::value;
  int bad = 0, nnan = 0, nskip = 0, nslow = 0, nbcol = 0, nstg = 0, ngiven = 0;
  for (int cs = 0; cs < cases; cs++) {
    const int nb = (int)irand(0, 1), vkind = (int)irand(0, 4); // 4: a constant image (the guess scale ga = 0)
    // 320: first guesses below 0 for values ~1e6 in a range of 2.5 (the vkind 2 images; session 9 GPU bug)
    const int64_t T = std::vector<int64_t>{2, 3, 37, 256, 256, 319, 320, 510}[irand(0, 7)];
    // layout: contiguous (float4 rows when nx % 4 == 0), padded rows, misaligned base, x stride 2, reversed
    // rows / columns.  2-D: nz x nx (ny = 1, sy = 0: the rows are the first axis)
    // EMU_STG=1: strip3's staged planes in every case (widths 128 / 256, contiguous, 16 columns per lane)
    const bool fstg = getenv("EMU_STG") && atoi(getenv("EMU_STG")) == 1;
    const int lay = fstg ? 0 : (int)irand(0, 5);
#if EMU_NSP == 3
    const int64_t nimg = nb ? irand(1, 2) : 1;
    auto ax = [&](int64_t hi) { return urand() < 0.2 ? irand(1, 3) : irand(1, hi); };
    const int64_t nz = ax(12), ny = urand() < 0.3 ? irand(28, 66) : ax(20);
    // 64 / 128 / 256: 8 or 16 tiles across (block columns) at 8 or 16 columns per lane
    // (staged: a row of 4224 now and then, two pieces for the bulk copies of phase 1)
    const int64_t nx = fstg ? (urand() < 0.15 ? 4224 : 128 * irand(1, 2)) : urand() < 0.25 ? 64 * irand(1, 2) * irand(1, 2) : urand() < 0.5 ? 4 * irand(1, 12) : ax(50);
    int64_t sx = lay == 3 ? 2 : 1, sy = lay == 1 ? nx * sx + 4 * irand(0, 3) + (irand(0, 1) ? 0 : 1) : nx * sx;
    int64_t sz = ny * sy + (lay == 1 ? 4 * irand(0, 2) : 0);
#else
    const int64_t nimg = nb ? irand(1, 3) : 1, ny = 1;
    const int64_t nz = urand() < 0.15 ? irand(1, 3) : irand(1, 90);
    const int64_t nx = urand() < 0.15 ? irand(1, 5) : urand() < 0.5 ? 4 * irand(1, 100) : irand(1, 420);
    int64_t sx = lay == 3 ? 2 : 1, sy = 0, sz = lay == 1 ? nx * sx + 4 * irand(0, 3) + (irand(0, 1) ? 0 : 1) : nx * sx;
#endif
    const int64_t simg = nz * sz + (irand(0, 1) ? 0 : 4);
    int64_t off = lay == 2 ? irand(1, 3) : 0;
    std::vector<TIN> store((size_t)(off + nimg * simg + 8));
    int64_t &sr = EMU_NSP == 3 ? sy : sz; // the row stride
    const int64_t nr = EMU_NSP == 3 ? ny : nz;
    if (lay == 4) sr = -sr, off = (nr - 1) * -sr; // rows reversed (row 0 last in memory)
    if (lay == 5) sx = -1, off = nx - 1;          // columns reversed
    TIN *img = store.data() + off;
    const int64_t nvox = nimg * nz * ny * nx;
    std::vector<TIN> dense((size_t)nvox);
    const int top = (int)irand(1, 6);
    const double big = isf ? 1e6 : 0;
    auto at = [&](int64_t i) -> TIN & {
      const int64_t x = i % nx, y = (i / nx) % ny, z = (i / (nx * ny)) % nz, im = i / (nx * ny * nz);
      return img[im * simg + z * sz + y * sy + x * sx];
    };
    for (int64_t i = 0; i < nvox; i++) {
      TIN v;
      if (vkind == 0) v = (TIN)irand(0, top);
      else if (vkind == 1) v = (TIN)(urand() * 200);
      else if (vkind == 2) v = isf ? (TIN)(big + irand(0, 40) * 0.0625) : (TIN)irand(200, 255);
      else if (vkind == 3) v = (TIN)(isf ? urand() * 2000 - 1000 : irand(0, sizeof(TIN) == 2 && top > 3 ? 65535 : 250));
      else v = (TIN)7;
      if (urand() < 0.02 && vkind != 2 && vkind != 4) v = (TIN)3;
      dense[(size_t)i] = v;
    }
    // integers: now and then a unique least and greatest value at random voxels (so that [min, max] misses any
    // voxel a phase 1 skips: its vector tails, its loads in flight)
    if (!isf && vkind == 1 && irand(0, 1) == 0) {
      for (auto &v : dense) v = (TIN)(1 + (int)v % 199);
      dense[(size_t)irand(0, nvox - 1)] = (TIN)0;
      dense[(size_t)irand(0, nvox - 1)] = (TIN)(sizeof(TIN) == 1 ? 255 : 65535);
    }
    int64_t nan_at = -1;
    bool has_inf = false;
    if (isf && irand(0, 5) == 0) {
      const int kind = (int)irand(0, 2);
      for (int r = (int)irand(1, 3); r > 0; r--) {
        dense[(size_t)irand(0, nvox - 1)] = kind != 1 ? (TIN)NAN : (TIN)(irand(0, 1) ? INFINITY : -INFINITY);
        if (kind == 2 && r == 1) dense[(size_t)irand(0, nvox - 1)] = (TIN)INFINITY;
      }
      for (int64_t i = 0; i < nvox; i++) {
        if (dense[(size_t)i] != dense[(size_t)i] && nan_at < 0) nan_at = i;
        if (std::isinf((double)dense[(size_t)i])) has_inf = true;
      }
      if (nan_at >= 0) has_inf = false;
    }
    for (int64_t i = 0; i < nvox; i++) at(i) = dense[(size_t)i];
    ndf_array in, cur;
    int64_t sh[4], nd = 0;
    if (nb) sh[nd++] = nimg;
    sh[nd++] = nz;
    if (EMU_NSP == 3) sh[nd++] = ny;
    sh[nd++] = nx;
    ndf_dtype dt = sizeof(TIN) == 4 ? NDF_FLOAT32 : sizeof(TIN) == 2 ? NDF_UINT16 : NDF_UINT8;
    ndf_array_init(&in, dense.data(), NDF_DEVICE_CPU, dt, (int)nd, sh);
    std::vector<long long> ref((size_t)(nimg * T));
    int64_t osh[2] = {nimg, T};
    ndf_array_init(&cur, ref.data(), NDF_DEVICE_CPU, NDF_INT64, nb ? 2 : 1, nb ? osh : &T);
    ndf_ecc_options eo; ndf_ecc_options_init(&eo);
    eo.construction = CONS ? NDF_ECC_T : NDF_ECC_V; eo.batch_dims = nb; eo.nthresholds = T;
    // strip3 / strip2t (float): a given range in a third of the cases (session 18: no phase 1; infinite values allowed) --
    // around the data's, inside it, past it, or narrow and far from 0 (uncertified guesses)
    const bool given = (EMU_NSP == 3 || EMU_TELE) && isf && irand(0, 2) == 0; // strip3, strip2t
    if (given) {
      double mn = INFINITY, mx = -INFINITY;
      for (int64_t i = 0; i < nvox; i++)
        if (std::isfinite((double)dense[(size_t)i])) mn = std::min(mn, (double)dense[(size_t)i]), mx = std::max(mx, (double)dense[(size_t)i]);
      if (!(mn <= mx)) mn = 0, mx = 1;
      const double w = mx > mn ? mx - mn : 1.0;
      const int rk = (int)irand(0, 3);
      eo.has_range = 1;
      eo.range_lo = rk == 0 ? mn : rk == 1 ? mn + w * urand() * 0.5 : rk == 2 ? mn - w * urand() : 1e6 + urand();
      eo.range_hi = rk == 0 ? mx : rk == 3 ? eo.range_lo + 0.3 * urand() + 1e-3 : eo.range_lo + w * (0.1 + urand());
    }
    const bool cpu_ok = nan_at < 0 && (given || !has_inf);
    if (cpu_ok && ndf_euler_characteristic_curve(ctx, &in, &cur, &eo) != NDF_OK) { printf("CPU: %s\n", ndf_errmsg(ctx)); return 2; }
    // the plan under a small cap (all blocks run at once here); an extra block writes the header
    // (runtime default) or block 0 does
    const int hdrblk = given ? 0 : (int)irand(0, 1); // (a given range: the call's last block writes it)
    strip_plan pl;
#if EMU_NSP == 3
    const int64_t cap = irand(1, 6), minmc = irand(1, 6);
    const int w8 = fstg ? 0 : (int)irand(0, 1); // ndf_ecc_strip3n (8 columns per lane) or ndf_ecc_strip3 (16)
    if (!plan_make(3, nz, ny, nx, nimg, CONS, cap - hdrblk, minmc, w8 ? 8 : 16, (int)irand(0, 1), &pl)) { nskip++; continue; }
    ndf_ecc3_params p; memset(&p, 0, sizeof p);
    p.ny = ny; p.sy = sy; p.ntx = pl.ntx; p.nty = pl.nty;
    p.bcol = pl.ntx % 8 == 0 && irand(0, 3) != 0; // block columns (the runtime's default where they apply)
    if (p.bcol && !w8 && nx % 128 == 0 && (fstg || irand(0, 3) != 0)) p.bcol = 2; // staged planes
    p.p1 = p.bcol == 2 && !given ? 2 : 1; // the staged kernel's phase 1: ndf_ecc_strip3's grid first (the split)
    p.rlo = eo.range_lo, p.rhi = eo.range_hi;
    nstg += p.bcol == 2;
    nbcol += p.bcol != 0;
#else
    const int64_t cap = irand(1, 12), minmc = irand(1, 6);
    if (!plan_make(2, nz, 1, nx, nimg, EMU_TELE ? CONS : 0, cap - hdrblk, minmc, 128, (int)irand(0, 1), &pl)) { nskip++; continue; }
    ndf_ecc2_params p; memset(&p, 0, sizeof p);
    p.nstrip = pl.nstrip; p.mc = pl.mc;
    p.rlo = eo.range_lo, p.rhi = eo.range_hi;
#endif
    const int64_t ostep = irand(1, 2);
    std::vector<ndf_u64> hist((size_t)(nimg * pl.ncopy * T), 0x1234567ull);
    std::vector<unsigned> cnt((size_t)nimg + 1, 0xdeadbeefu); // the images' tickets and the call's (a given range)
    std::vector<long long> outv((size_t)(nimg * T * ostep), 0x5a5a5a5aLL);
    // partials, 24 bytes a block (a given range: the call's NaN key in the first 8)
    std::vector<double> part((size_t)(pl.nblocks + hdrblk) * 3, -7.5);
    ndf_ecc_hdr hd; memset(&hd, 0x77, sizeof hd);
    unsigned seqw = 0xabcd, gbar = irand(0, 1) ? 0x80000000u : 0u;
    p.in = img; p.hist = hist.data(); p.cnt = cnt.data(); p.out = outv.data(); p.hdr = &hd; p.gbar = &gbar;
    p.part = part.data(); p.seqp = irand(0, 1) ? &seqw : nullptr; p.T = T; p.nimg = nimg; p.ostep = ostep;
    p.nz = nz; p.nx = nx; p.sz = sz; p.sx = sx; p.tpi = pl.tpi; p.bpi = pl.bpi;
    p.nb = nb; p.ncopy = pl.ncopy; p.seq = 4242; p.hdrblk = hdrblk; p.fence = (int)irand(0, 1); p.bin = irand(0, 3) == 0;
    p.bshape[0] = nimg; p.bstr[0] = simg; p.oshape[0] = nimg; p.ostr[0] = T * ostep;
#if EMU_NSP == 3
    ngiven += given;
    g_rng = given; // the RNG specialization (the split's phase 1 too: never with a given range)
    if (p.p1 == 2 && !w8) run_grid((unsigned)(pl.nblocks + hdrblk), [&] { ndf_ecc_strip3(p); }); // the split's phase 1
    run_grid((unsigned)(pl.nblocks + hdrblk), [&] { if (w8) ndf_ecc_strip3n(p); else if (p.bcol == 2) ndf_ecc_strip3s(p); else ndf_ecc_strip3(p); });
#elif EMU_TELE
    ngiven += given;
    g_rng = given; // the RNG specialization
    run_grid((unsigned)(pl.nblocks + hdrblk), [&] { ndf_ecc_strip2t(p); });
    g_rng = 0;
#else
    run_grid((unsigned)(pl.nblocks + hdrblk), [&] { ndf_ecc_strip2(p); });
#endif
    if (p.seqp && seqw != 4242) { bad++; printf("MISMATCH case %d: sequence word %x\n", cs, seqw); }
    if ((gbar & 0x7fffffffu) != 0) { bad++; printf("MISMATCH case %d: barrier word %x\n", cs, gbar); }
    if (!cpu_ok) {
      const bool ok = hd.nan_key == (nan_at >= 0 ? ~(ndf_u64)nan_at : 0ull) && (nan_at >= 0 || hd.bad == 1) &&
                      std::all_of(outv.begin(), outv.end(), [](long long v) { return v == 0x5a5a5a5aLL; });
      if (!ok) {
        bad++;
        printf("MISMATCH case %d (NaN at %lld, inf %d): key %llx bad %d\n", cs, (long long)nan_at, (int)has_inf,
               (unsigned long long)hd.nan_key, hd.bad);
      }
      nnan++;
      continue;
    }
    if (hd.nan_key != 0 || hd.bad != 0) { bad++; printf("MISMATCH case %d: header key %llx bad %d\n", cs, (unsigned long long)hd.nan_key, hd.bad); }
    for (int64_t im = 0; im < nimg; im++)
      for (int64_t k = 0; k < T; k++) {
        const long long got = outv[(size_t)((im * T + k) * ostep)];
        if (got != ref[(size_t)(im * T + k)]) {
          bad++;
          printf("MISMATCH case %d vkind %d lay %d T %lld shape %lldx%lldx%lldx%lld plan mc %lld bpi %lld nc %d image %lld k %lld: %lld vs %lld\n",
                 cs, vkind, lay, (long long)T, (long long)nimg, (long long)nz, (long long)ny, (long long)nx, (long long)pl.mc,
                 (long long)pl.bpi, pl.ncopy, (long long)im, (long long)k, got, ref[(size_t)(im * T + k)]);
          im = nimg;
          break;
        }
      }
    if (vkind == 2) nslow++;
    if (getenv("EMU_VERBOSE")) {
      printf("case %d: %lldx%lldx%lldx%lld T %lld lay %d blocks %lld\n", cs, (long long)nimg, (long long)nz, (long long)ny,
             (long long)nx, (long long)T, lay, (long long)pl.nblocks);
      fflush(stdout);
    }
  }
  printf("strip%d%s TIN %s CONS %d: %d cases (%d NaN/inf, %d wide-range, %d without a plan, %d block columns, %d staged, %d given ranges), %d mismatches\n",
         EMU_NSP, EMU_TELE ? "t" : "", sizeof(TIN) == 4 ? "float" : sizeof(TIN) == 2 ? "uint16" : "uint8", CONS, cases, nnan, nslow, nskip,
         nbcol, nstg, ngiven, bad);
  return bad != 0;
}
#endif
