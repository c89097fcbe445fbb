// ecc_brick_emu.cpp -- runs ndf_ecc_brick (templates/ecc.cu) on the host: one std::thread per CUDA
// thread, the whole cooperative grid at once, real barriers; shared memory and atomics emulated
// (copied from ecc_pack_emu.cpp).  Compares the curves the kernel writes (the images' last blocks)
// with the CPU backend's on random inputs (V/T and 2-D/3-D by the build flags; shapes not multiples
// of the brick, 1-long axes, ties, constant images, batches, strided inputs, resident and streaming
// bricks, random bricks per block), and the header for NaN / inf inputs (nothing written).
// It cannot find races.  tools/emu/ecc_brick_emu.sh.
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
static size_t g_dyn_words = 1 << 17; // dynamic shared memory per block: 1 MiB (EMU_RT: the launch's)
struct emu_block {
  std::vector<double> dyn = std::vector<double>(g_dyn_words);
  float f[4], g[2];
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
static inline void __threadfence_system() {}
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


#ifdef EMU_RT
// tools/emu/ecc_brick_rt.sh: runtime/ecc_cuda.c's cooperative launch runs here (the parameter bytes
// as the kernel's struct, the grid, the dynamic shared memory of the launch, exactly sized)
extern "C" int emu_brick(unsigned grid, unsigned dyn, const void *params) {
  ndf_ecc_brick_params p;
  memcpy(&p, params, sizeof p);
  g_grid = grid;
  g_dyn_words = (dyn + 7) / 8;
  std::vector<emu_block> blks(grid);
  std::barrier<> gb((ptrdiff_t)grid * 256);
  g_gridbar = &gb;
  std::vector<std::thread> th2;
  for (unsigned b = 0; b < grid; b++)
    for (unsigned t = 0; t < 256; t++)
      th2.emplace_back([&, t, b] { tl_tid = t; tl_bid = b; tl_blk = &blks[b]; ndf_ecc_brick(p); });
  for (auto &t : th2) t.join();
  return 0;
}
extern "C" size_t emu_brick_params_size(void) { return sizeof(ndf_ecc_brick_params); }
#else
static uint64_t sd = 777;
static uint64_t rnd() { return sd = sd * 6364136223846793005ULL + 1442695040888963407ULL, sd >> 11; }
static double urand() { return (double)rnd() * 0x1p-53; }
static int64_t irand(int64_t a, int64_t b) { return a + (int64_t)(rnd() % (uint64_t)(b - a + 1)); }

int main(int argc, char **argv) {
  const int cases = argc > 1 ? atoi(argv[1]) : 20;
  if (argc > 2) sd = (uint64_t)atoll(argv[2]);
  ndf_ctx *ctx; ndf_ctx_options o; ndf_ctx_options_init(&o); o.backend = NDF_BACKEND_CPU;
  if (ndf_ctx_create(&ctx, &o) != NDF_OK) return 2;
  int bad = 0, nres = 0, nbadin = 0;
  const int KW = NSP == 3 ? 32 : 64, KY = NSP == 3 ? 8 : 1, KZ = NSP == 3 ? 8 : 16;
  for (int cs = 0; cs < cases; cs++) {
    const int nb = (int)irand(0, 1), vkind = (int)irand(0, 2);
    int64_t T = std::vector<int64_t>{2, 3, 37, 256, 510}[irand(0, 4)];
    int64_t sh[4]; int nd = 0;
    const bool tiny = nb && irand(0, 3) == 0; // many tiny images: a block's bricks span images
    if (nb) sh[nd++] = tiny ? irand(5, 40) : irand(1, 3);
    for (int d = 0; d < NSP; d++) sh[nd++] = tiny ? irand(1, 6) : urand() < 0.2 ? irand(1, 3) : irand(1, NSP == 2 ? 300 : 40);
    if (NSP == 3 && sh[nd - 3] * sh[nd - 2] * sh[nd - 1] > 30000) sh[nd - 3] = std::max<int64_t>(1, 30000 / (sh[nd - 2] * sh[nd - 1]));
    int64_t n = 1; for (int d = 0; d < nd; d++) n *= sh[d];
    // strided input: every other element of a wider last axis (sometimes)
    const int64_t xs = irand(0, 3) == 0 ? 2 : 1;
    std::vector<TIN> buf((size_t)(n * xs) + 1);
    TIN *img = buf.data() + (irand(0, 3) == 0 ? 1 : 0); // sometimes not 8-byte aligned
    const int top = (int)irand(1, 6);
    for (int64_t i = 0; i < n; i++) {
      const TIN v = vkind == 0 ? (TIN)irand(0, top) : vkind == 2 ? (TIN)3 : (TIN)(urand() * 200);
      img[i * xs] = v;
    }
    int64_t strides[4];
    { int64_t s2 = xs; for (int d = nd - 1; d >= 0; d--) { strides[d] = s2; s2 *= sh[d]; } }
    ndf_dtype dt = sizeof(TIN) == 8 ? NDF_FLOAT64 : sizeof(TIN) == 4 ? NDF_FLOAT32 : sizeof(TIN) == 2 ? NDF_UINT16 : NDF_UINT8;
    const int64_t nimg = nb ? sh[0] : 1;
    // NaN / inf sometimes (floating inputs)
    int64_t nan_at = -1;
    bool has_inf = false;
    if (std::is_floating_point<TIN>::value && irand(0, 5) == 0) {
      const int kind = (int)irand(0, 2); // NaN, inf, both
      for (int r = (int)irand(1, 3); r > 0; r--) {
        const int64_t at = irand(0, n - 1);
        if (kind != 1) img[at * xs] = (TIN)NAN; else img[at * xs] = (TIN)(irand(0, 1) ? INFINITY : -INFINITY);
        if (kind == 2 && r == 1) img[irand(0, n - 1) * xs] = (TIN)INFINITY;
      }
      for (int64_t i = 0; i < n; i++) {
        if (img[i * xs] != img[i * xs] && nan_at < 0) nan_at = i;
        if (std::isinf((double)img[i * xs])) has_inf = true;
      }
      if (nan_at >= 0) has_inf = false;
    }
    std::vector<long long> ref((size_t)(nimg * T), 0);
    if (nan_at < 0 && !has_inf) {
      std::vector<TIN> dense((size_t)n);
      for (int64_t i = 0; i < n; i++) dense[(size_t)i] = img[i * xs];
      ndf_array in, cur;
      ndf_array_init(&in, dense.data(), NDF_DEVICE_CPU, dt, nd, sh);
      int64_t osh[2] = {nimg, T};
      ndf_array_init(&cur, ref.data(), NDF_DEVICE_CPU, NDF_INT64, nb ? 2 : 1, nb ? osh : &T);
      ndf_ecc_options eo; ndf_ecc_options_init(&eo);
      eo.construction = CONS ? NDF_ECC_T : NDF_ECC_V; eo.batch_dims = nb; eo.nthresholds = T;
      if (ndf_euler_characteristic_curve(ctx, &in, &cur, &eo) != NDF_OK) { printf("CPU: %s\n", ndf_errmsg(ctx)); return 2; }
    }
    // the plan as runtime/ecc_cuda.c's brick_planner, with random bricks per block
    const int64_t nz = sh[nb], ny = NSP == 3 ? sh[nb + 1] : 1, nx = sh[nd - 1];
    ndf_ecc_brick_params p; memset(&p, 0, sizeof p);
    p.nbz = (nz + KZ - 1) / KZ; p.nby = (ny + KY - 1) / KY; p.nbx = (nx + 2 * KW - 1) / (2 * KW);
    p.nbricks = nimg * p.nbz * p.nby * p.nbx;
    const int64_t minper = (p.nbricks + 11) / 12; // at most 12 blocks
    p.per = irand(minper, std::max<int64_t>(minper, std::min<int64_t>(p.nbricks, minper + 3)));
    p.resident = (int)irand(0, 1) && p.per * 2 * (NSP == 3 ? 3400 : 1188) * (int64_t)sizeof(V) + 24 * T + 64 + 4 * 3400 < (1 << 20);
    const unsigned grid = (unsigned)((p.nbricks + p.per - 1) / p.per);
    std::vector<ndf_u64> hist((size_t)(nimg * T), 0x1234567ull);
    std::vector<unsigned> cnt((size_t)nimg, 0xdeadbeefu);
    std::vector<long long> outv((size_t)(nimg * T * 2), 0x5a5a5a5aLL); // strided output: every other element
    std::vector<double> part((size_t)grid * 3, -7.5);
    ndf_ecc_hdr hd; memset(&hd, 0x77, sizeof hd);
    unsigned gbar = irand(0, 1) ? 0x80000000u : 0u;
    p.in = img; p.hist = hist.data(); p.cnt = cnt.data(); p.out = outv.data(); p.hdr = &hd; p.gbar = &gbar;
    p.part = part.data(); p.T = T; p.nimg = nimg; p.ostep = 2;
    p.nz = nz; p.ny = ny; p.nx = nx; p.sz = strides[nb]; p.sy = NSP == 3 ? strides[nb + 1] : 0; p.sx = strides[nd - 1];
    p.nb = nb; p.bshape[0] = nimg; p.bstr[0] = strides[0]; p.oshape[0] = nimg; p.ostr[0] = 2 * T;
    g_grid = grid;
    {
      std::vector<emu_block> blks(grid);
      std::barrier<> gb((ptrdiff_t)grid * 256);
      g_gridbar = &gb;
      std::vector<std::thread> th2;
      for (unsigned b = 0; b < grid; b++)
        for (unsigned t = 0; t < 256; t++)
          th2.emplace_back([&, t, b] { tl_tid = t; tl_bid = b; tl_blk = &blks[b]; ndf_ecc_brick(p); });
      for (auto &t : th2) t.join();
    }
    nres += p.resident;
    char desc[200];
    snprintf(desc, sizeof desc, "case %d shape %lld %lld %lld %lld (nb %d) T %lld vkind %d xs %lld per %lld resident %d grid %u",
             cs, (long long)sh[0], (long long)sh[1], (long long)(nd > 2 ? sh[2] : 0), (long long)(nd > 3 ? sh[3] : 0),
             nb, (long long)T, vkind, (long long)xs, (long long)p.per, p.resident, grid);
    if ((gbar & 0x7fffffffu) != 0) { bad++; printf("MISMATCH %s: barrier word %x\n", desc, gbar); }
    if (nan_at >= 0 || has_inf) {
      const bool ok = hd.nan_key == (nan_at >= 0 ? ~(ndf_u64)nan_at : 0ull) && (nan_at >= 0 || hd.bad == 1) &&
                      std::all_of(outv.begin(), outv.end(), [](long long v) { return v == 0x5a5a5a5aLL; });
      if (!ok) {
        bad++;
        printf("MISMATCH %s (NaN at %lld, inf %d): key %llx bad %d\n", desc, (long long)nan_at, (int)has_inf,
               (unsigned long long)hd.nan_key, hd.bad);
      }
      nbadin++;
      continue;
    }
    if (hd.nan_key != 0 || hd.bad != 0) { bad++; printf("MISMATCH %s: header key %llx bad %d\n", desc, (unsigned long long)hd.nan_key, hd.bad); }
    for (int64_t im = 0; im < nimg; im++)
      for (int64_t k = 0; k < T; k++) {
        if (outv[(size_t)(2 * (im * T + k) + 1)] != 0x5a5a5a5aLL) { bad++; printf("MISMATCH %s: gap written\n", desc); im = nimg; break; }
        if (outv[(size_t)(2 * (im * T + k))] != ref[(size_t)(im * T + k)]) {
          bad++;
          printf("MISMATCH %s image %lld k %lld: %lld vs %lld\n", desc, (long long)im, (long long)k,
                 outv[(size_t)(2 * (im * T + k))], ref[(size_t)(im * T + k)]);
          im = nimg;
          break;
        }
      }
  }
  printf("NSP %d CONS %d: %d cases (%d resident, %d with NaN/inf), %d mismatches\n", NSP, CONS, cases, nres, nbadin, bad);
  return bad != 0;
}
#endif
