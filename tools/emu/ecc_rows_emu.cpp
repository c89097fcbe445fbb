// ecc_rows_emu.cpp -- runs ndf_ecc_rows (templates/ecc_rows.cu) on the host: one std::thread per CUDA
// thread, every block of the cooperative grid at once, real block / warp / grid barriers, shared
// memory and atomics emulated.  First the bit tricks alone (guarded compares, carry-save sums, the
// nibble transpose), then whole launches against the CPU backend's curve on random inputs: batches,
// odd sizes (several tiles along x and y, 1-long axes), ties (few distinct values), strided and
// misaligned inputs (the scalar load path), strided outputs, poisoned histogram / tickets / header /
// partials, NaN and inf inputs (header checked, output untouched).  tools/emu/ecc_rows_emu.sh.
#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <type_traits>
#include <vector>
#include <sys/mman.h>
extern "C" {
#include "ndforge.h"
}
#define __device__
#define __host__
#define __forceinline__ inline
#define __global__
#define __noinline__
#define __launch_bounds__(a, b)
typedef long long ndf_i64;
typedef unsigned long long ndf_u64;
#define NDF_MAX_NDIM 12
#define NDF_HD static inline
struct emu_dim { unsigned x; };
struct float2 { float x, y; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
static inline float2 make_float2(float x, float y) { return float2{x, y}; }
static inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }
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
#define blockDim (emu_dim{256})
struct emu_block {
  alignas(16) unsigned rpl[4 * 2516]; // 4 * NDF_RPL (static_assert below)
  int shist[256];
  alignas(16) char dyn[65536];
  float f[4];
  int i[2];
  bool last;
  double r_lo[8], r_hi[8], q_lo[8], q_hi[8];
  unsigned long long r_key, q_key;
  std::atomic<int> cnt{0};
  std::barrier<> bar{256};
  std::barrier<> *wbar[8];
  uint64_t wsl[8][32];
  emu_block() {
    for (auto &w : wbar) w = new std::barrier<>(32);
    memset(rpl, 0xa5, sizeof rpl); // poisoned shared memory
    memset(shist, 0x5a, sizeof shist);
    memset(dyn, 0xa5, sizeof dyn);
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
static inline bool __any_sync(unsigned, bool p) {
  emu_block &b = *tl_blk;
  const unsigned w = tl_tid / 32, l = tl_tid % 32;
  b.wsl[w][l] = p;
  b.wbar[w]->arrive_and_wait();
  bool r = false;
  for (int i = 0; i < 32; i++) r |= b.wsl[w][i] != 0;
  b.wbar[w]->arrive_and_wait();
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
using std::fmaf;
using std::isfinite;
// the fused tail: thread 0 does the prefix sums in order
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
static void ndf_ecc_grid_sync(unsigned *w) {
  g_gridbar->arrive_and_wait();
  if (tl_tid == 0 && tl_bid == 0) *w ^= 0x80000000u; // as the real barrier leaves it
  g_gridbar->arrive_and_wait();
}
// per-voxel c of the last launch (debugging: EMU_DEBUG=1), [img][z][y][x]
static std::vector<int> g_c;
static int64_t g_dims[3];
#define EMU_HOOK(im, zz, yy, xx, cc, s8)                                                                    \
  do {                                                                                                 \
    if (!g_c.empty() && yy < g_dims[1] && (ndf_i64)(xx) < g_dims[2])                                   \
      g_c[(size_t)((((ndf_i64)(im) * g_dims[0] + (zz)) * g_dims[1] + (yy)) * g_dims[2] + (xx))] = (cc); \
  } while (0)
#define NDF_ROWS_RED_DEFINED
static inline void ndf_rows_red(int *h, unsigned off, int c) {
  if (c != 0) atomicAdd(h + off / 4, c);
}
// cp.async: the copies land at the wait (a read before it sees the previous contents)
#define NDF_ROWS_CPASYNC_DEFINED
thread_local std::vector<std::pair<void *, const void *>> tl_cp;
static inline void ndf_rows_cp16(void *dst, const void *src) { tl_cp.emplace_back(dst, src); }
static inline void ndf_rows_cp_commit() {}
static inline void ndf_rows_cp_wait() {
  for (auto &c : tl_cp) memcpy(c.first, c.second, 16);
  tl_cp.clear();
}
#define NDF_ECC_CEILF std::ceil
#include "ndf_ecc_pack.cuh"
typedef EMU_TIN TIN;
typedef EMU_V V;
#define CONS EMU_CONS
#define PFS EMU_PF
#define PF (PFS & 1)
#define RED_ALL ((PFS >> 1) & 1)
#include KERN_INC
static_assert(sizeof(((emu_block *)0)->rpl) == 4 * NDF_RPL * sizeof(unsigned), "emu_block::rpl");

static uint64_t sd = 777;
static uint64_t rnd() { return sd = sd * 6364136223846793005ULL + 1442695040888963407ULL, sd >> 11; }
static double urand() { return (double)rnd() * 0x1p-53; }
static int64_t irand(int64_t a, int64_t b) { return a + (int64_t)(rnd() % (uint64_t)(b - a + 1)); }

// the bit tricks alone, exhaustively where the domain allows
static int bits() {
  int bad = 0;
  // guarded compares: every (a, b) pair in each half of each word j, the other half random
  for (int j = 0; j < 8; j++) {
    const unsigned G = (0x100u << j) * 0x10001u;
    for (unsigned a = 0; a < 256; a++)
      for (unsigned b = 0; b < 256; b++)
        for (int h = 0; h < 2; h++)
          for (int one = 0; one < 2; one++) {
            const unsigned ao = (unsigned)irand(0, 255), bo = (unsigned)irand(0, 255);
            const unsigned wa = h ? (a << 16) | ao : a | (ao << 16), wb = h ? (b << 16) | bo : b | (bo << 16);
            const unsigned d = ((wa | G) - wb - (one ? 0x10001u : 0u)) & G;
            const bool got = (d >> (8 + j + 16 * h)) & 1, other = (d >> (8 + j + 16 * (1 - h))) & 1;
            const bool want = one ? a > b : a >= b, wother = one ? ao > bo : ao >= bo;
            if (got != want || other != wother) bad++;
          }
  }
  // transpose: bit i of byte k -> bit k of nibble i
  for (int t = 0; t < 200000; t++) {
    const unsigned x = (unsigned)rnd(), y = ndf_rows_transpose(x);
    for (int k = 0; k < 4; k++)
      for (int i = 0; i < 8; i++)
        if (((x >> (8 * k + i)) & 1) != ((y >> (4 * i + k)) & 1)) { bad++; t = 1 << 30; k = 4; break; }
  }
  // carry-save sum: every count 0..26 at every bit position, random orders
  for (int t = 0; t < 200000; t++) {
    unsigned x[26], o[4];
    for (auto &v : x) v = (unsigned)rnd();
    ndf_rows_csa(x, o);
    for (int p = 0; p < 32; p++) {
      int c = 3;
      for (auto v : x) c += (v >> p) & 1;
      const int got = (int)(((o[0] >> p) & 1) | (((o[1] >> p) & 1) << 1) | (((o[2] >> p) & 1) << 2) | (((o[3] >> p) & 1) << 3));
      if (got != (c & 15)) { bad++; break; }
    }
  }
  // the streamed sum (8 + 9 + 9 terms) likewise
  for (int t = 0; t < 200000; t++) {
    unsigned x[8], ta[9], tb[9], o[4];
    for (auto &v : x) v = (unsigned)rnd();
    for (auto &v : ta) v = (unsigned)rnd();
    for (auto &v : tb) v = (unsigned)rnd();
    if (t & 1) { for (auto &v : x) v |= (unsigned)rnd(); for (auto &v : ta) v |= (unsigned)rnd(); } // more ones
    ndf_rows_acc A = ndf_rows_acc_centre(x);
    ndf_rows_acc_first(A, ta);
    ndf_rows_acc_last(A, tb, o);
    for (int p = 0; p < 32; p++) {
      int c = 3;
      for (auto v : x) c += (v >> p) & 1;
      for (auto v : ta) c += (v >> p) & 1;
      for (auto v : tb) c += (v >> p) & 1;
      const int got = (int)(((o[0] >> p) & 1) | (((o[1] >> p) & 1) << 1) | (((o[2] >> p) & 1) << 2) | (((o[3] >> p) & 1) << 3));
      if (got != (c & 15)) { bad++; break; }
    }
  }
  // the swizzle: a quarter warp's 16-byte reads of one logical half hit 8 distinct bank groups
  for (int s = 0; s < 8; s++)
    for (int r0 = 0; r0 + 8 <= 34; r0++)
      for (int w = 0; w < 8; w += 4) {
        unsigned used = 0;
        for (int r = r0; r < r0 + 8; r++) used |= 1u << ((ndf_rows_at(s, r, w) % 32) / 4);
        if (used != 0xffu) bad++;
      }
  printf("bits: %d bad\n", bad);
  return bad;
}

int main(int argc, char **argv) {
  const int cases = argc > 1 ? atoi(argv[1]) : 20;
  if (argc > 2) sd = (uint64_t)atoll(argv[2]);
  int bad = bits();
  ndf_ctx *ctx; ndf_ctx_options o; ndf_ctx_options_init(&o); o.backend = NDF_BACKEND_CPU;
  if (ndf_ctx_create(&ctx, &o) != NDF_OK) return 2;
  int nbadin = 0, nstrided = 0;
  for (int cs = 0; cs < cases; cs++) {
    const int nb = argc > 6 ? 0 : (int)irand(0, 1), vkind = (int)irand(0, 2);
    int64_t T = std::vector<int64_t>{2, 3, 37, 255, 256}[irand(0, 4)];
    int64_t sh[4]; int nd = 0;
    if (nb) sh[nd++] = irand(1, 3);
    int64_t nz = urand() < 0.15 ? irand(1, 2) : irand(1, 24);
    int64_t ny = urand() < 0.15 ? irand(1, 2) : irand(1, 70);
    int64_t nx = urand() < 0.15 ? irand(1, 2) : urand() < 0.3 ? irand(120, 300) : irand(1, 40);
    sh[nd++] = nz; sh[nd++] = ny; sh[nd++] = nx;
    if (argc > 6) { // a fixed shape (debugging): cases seed nz ny nx T
      nd = 0; sh[nd++] = atoll(argv[3]); sh[nd++] = atoll(argv[4]); sh[nd++] = atoll(argv[5]); T = atoll(argv[6]);
      nz = sh[0]; ny = sh[1]; nx = sh[2];
    }
    const int64_t nimg = nb ? sh[0] : 1, npix = nz * ny * nx, n = nimg * npix;
    // layout: C-contiguous, or strided along x / y, or a misaligned base
    const int lay = (int)irand(0, 3);
    const int64_t ex = lay == 1 ? 2 : 1, ey = lay == 2 ? 3 : 0, off = lay == 3 ? 1 : 0;
    int64_t st[4];
    st[nd - 1] = ex;
    st[nd - 2] = nx * ex + ey;
    st[nd - 3] = st[nd - 2] * ny;
    if (nb) st[0] = st[1] * nz;
    // the input ends (within 16 bytes) at an inaccessible page: a read past it faults
    int64_t last = 1;
    for (int d = 0; d < nd; d++) last += (sh[d] - 1) * st[d];
    const size_t pg = 4096, need = (size_t)(last + off) * sizeof(TIN) + 16, npg = (need + pg - 1) / pg;
    char *map = (char *)mmap(nullptr, (npg + 2) * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) return 2;
    mprotect(map, pg, PROT_NONE);
    mprotect(map + (npg + 1) * pg, pg, PROT_NONE);
    char *endp = map + (npg + 1) * pg;
    TIN *base = (TIN *)(((uintptr_t)(endp - (size_t)last * sizeof(TIN)) & ~(uintptr_t)15) ) ;
    if (off) base = (TIN *)((char *)base - 16) + off; // misaligned by one element
    struct unmap_t { char *m; size_t n; ~unmap_t() { munmap(m, n); } } unmap_{map, (npg + 2) * pg};
    if (lay) nstrided++;
    const int top = (int)irand(1, 6);
    std::vector<TIN> img((size_t)n);
    for (auto &v : img) v = vkind == 0 ? (TIN)irand(0, top) : vkind == 1 ? (TIN)(urand() * 200) : (TIN)irand(0, 255);
    // NaN / inf sometimes (float inputs)
    int64_t nan_at = -1;
    bool has_inf = false;
    if (std::is_floating_point<TIN>::value && irand(0, 5) == 0) {
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
      if (nan_at >= 0) has_inf = false;
    }
    for (int64_t i = 0; i < n; i++) {
      int64_t r = i, pos = 0;
      for (int d = nd - 1; d >= 0; d--) { pos += (r % sh[d]) * st[d]; r /= sh[d]; }
      base[pos] = img[(size_t)i];
    }
    // the CPU reference (contiguous copy)
    std::vector<long long> ref((size_t)(nimg * T), 0);
    ndf_array in, cur;
    ndf_dtype dt = sizeof(TIN) == 8 ? NDF_FLOAT64 : sizeof(TIN) == 4 ? NDF_FLOAT32 : sizeof(TIN) == 2 ? NDF_UINT16 : NDF_UINT8;
    ndf_array_init(&in, img.data(), NDF_DEVICE_CPU, dt, nd, sh);
    int64_t osh[2] = {nimg, T};
    ndf_array_init(&cur, ref.data(), NDF_DEVICE_CPU, NDF_INT64, nb ? 2 : 1, nb ? osh : &T);
    ndf_ecc_options eo; ndf_ecc_options_init(&eo);
    eo.construction = CONS ? NDF_ECC_T : NDF_ECC_V; eo.batch_dims = nb; eo.nthresholds = T;
    const bool bad_in = nan_at >= 0 || has_inf;
    if (!bad_in && ndf_euler_characteristic_curve(ctx, &in, &cur, &eo) != NDF_OK) { printf("CPU: %s\n", ndf_errmsg(ctx)); return 2; }
    // geometry as runtime/ecc_cuda.c (rows_geometry), with a random chunk length (at most 24 blocks)
    ndf_ecc_rows_params p; memset(&p, 0, sizeof p);
    p.ntx = (nx + 127) / 128;
    p.ptiles = p.ntx * ((ny + 31) / 32);
    const int64_t per = nimg * p.ptiles;
    if (per > 24) { cs--; continue; }
    const int64_t nch = std::max<int64_t>(1, std::min<int64_t>(nz, 24 / per));
    p.mc = irand((nz + nch - 1) / nch, nz); p.nchunks = (nz + p.mc - 1) / p.mc;
    p.in = base; p.T = T; p.nimg = nimg; p.nz = nz; p.ny = ny; p.nx = nx;
    p.sz = st[nd - 3]; p.sy = st[nd - 2]; p.sx = st[nd - 1];
    p.nb = nb; p.bshape[0] = nimg; p.bstr[0] = nb ? st[0] : 0;
    std::vector<ndf_u64> hist((size_t)(nimg * T), 0x1234567ull);
    std::vector<unsigned> cnt((size_t)nimg, 0xdeadbeefu);
    const int64_t ostep = irand(1, 2);
    std::vector<long long> outv((size_t)(nimg * T * ostep), 0x5a5a5a5aLL);
    ndf_ecc_hdr hd; memset(&hd, 0x77, sizeof hd);
    unsigned gbar = irand(0, 1) ? 0x80000000u : 0u;
    p.hist = hist.data(); p.cnt = cnt.data(); p.hdr = &hd; p.gbar = &gbar; p.out = outv.data(); p.ostep = ostep;
    p.oshape[0] = nimg; p.ostr[0] = T * ostep;
    const bool dbg = getenv("EMU_DEBUG") != nullptr;
    if (dbg) { g_c.assign((size_t)n, 0); g_dims[0] = nz; g_dims[1] = ny; g_dims[2] = nx; } else g_c.clear();
    g_grid = (unsigned)(per * p.nchunks);
    std::vector<double> part((size_t)g_grid * 3, -7.5);
    p.part = part.data();
    {
      std::vector<emu_block> blks(g_grid);
      std::barrier<> gb((ptrdiff_t)g_grid * 256);
      g_gridbar = &gb;
      std::vector<std::thread> th;
      for (unsigned b = 0; b < g_grid; b++)
        for (unsigned t = 0; t < 256; t++)
          th.emplace_back([&, t, b] { tl_tid = t; tl_bid = b; tl_blk = &blks[b]; ndf_ecc_rows(p); });
      for (auto &t : th) t.join();
    }
    if (bad_in) {
      const bool ok = hd.nan_key == (nan_at >= 0 ? ~(ndf_u64)nan_at : 0ull) && (nan_at >= 0 || hd.bad == 1) &&
                      std::all_of(outv.begin(), outv.end(), [](long long v) { return v == 0x5a5a5a5aLL; });
      if (!ok) {
        bad++;
        printf("MISMATCH case %d (NaN at %lld, inf %d): key %llx bad %d\n", cs, (long long)nan_at, (int)has_inf,
               (unsigned long long)hd.nan_key, hd.bad);
      }
      nbadin++;
      continue;
    }
    bool ok = hd.nan_key == 0 && hd.bad == 0;
    for (int64_t im = 0; im < nimg && ok; im++)
      for (int64_t k = 0; k < T; k++)
        if (outv[(size_t)((im * T + k) * ostep)] != ref[(size_t)(im * T + k)]) {
          printf("  image %lld k %lld: %lld vs %lld\n", (long long)im, (long long)k, outv[(size_t)((im * T + k) * ostep)],
                 ref[(size_t)(im * T + k)]);
          ok = false;
          break;
        }
    if (!ok && dbg) {
      // c per voxel in the bin domain (bins of the CPU's thresholds), owner rule on (bin, index)
      std::vector<double> th((size_t)T);
      ndf_ecc_thresholds(ctx, &in, &eo, th.data(), T);
      std::sort(th.begin(), th.end());
      auto binof = [&](double f) { int k = 0; while (k < T && !(f <= th[(size_t)k])) k++; return k; };
      int shown = 0;
      for (int64_t im = 0; im < nimg; im++)
        for (int64_t z = 0; z < nz; z++)
          for (int64_t yy = 0; yy < ny; yy++)
            for (int64_t xx = 0; xx < nx; xx++) {
              auto at = [&](int64_t a, int64_t b, int64_t c2) -> int {
                if (a < 0 || a >= nz || b < 0 || b >= ny || c2 < 0 || c2 >= nx) return -1;
                return binof((double)img[(size_t)(((im * nz + a) * ny + b) * nx + c2)]);
              };
              const int bv = at(z, yy, xx);
              auto wins = [&](int dz, int dy, int dx) -> bool {
                const int bn = at(z + dz, yy + dy, xx + dx);
                const bool after = dz > 0 || (dz == 0 && (dy > 0 || (dy == 0 && dx > 0)));
                if (bn < 0) return CONS == 1;
                if (CONS == 0) return after ? bv > bn : bv >= bn;
                return after ? bv <= bn : bv < bn;
              };
              int c = 1;
              for (int dz = -1; dz <= 1; dz++)
                for (int dy = -1; dy <= 1; dy++)
                  for (int dx = -1; dx <= 1; dx++) {
                    const int k2 = (dz != 0) + (dy != 0) + (dx != 0);
                    if (!k2) continue;
                    bool own = true;
                    for (int a = 0; a <= (dz != 0); a++)
                      for (int b = 0; b <= (dy != 0); b++)
                        for (int e = 0; e <= (dx != 0); e++)
                          if (a || b || e) own = own && wins(a * dz, b * dy, e * dx);
                    if (own) c += (k2 & 1) ? -1 : 1;
                  }
              if (CONS == 1) c = -c;
              const int got = g_c[(size_t)(((im * nz + z) * ny + yy) * nx + xx)];
              if (got != c && shown < 10 && nz == 1) {
                for (int dy = -1; dy <= 1; dy++) {
                  printf("    row %lld:", (long long)(yy + dy));
                  for (int dx = -2; dx <= 2; dx++) printf(" %d", at(z, yy + dy, xx + dx));
                  printf("\n");
                }
              }
              if (got != c && shown++ < 10)
                printf("  voxel (%lld %lld %lld %lld) bin %d: c %d vs %d\n", (long long)im, (long long)z, (long long)yy,
                       (long long)xx, bv, got, c);
            }
    }
    if (!ok && dbg) {
      double mn = INFINITY, mx = -INFINITY;
      for (auto v : img) { mn = std::min(mn, (double)v); mx = std::max(mx, (double)v); }
      printf("  header mn %g mx %g (true %g %g); hist", hd.mn, hd.mx, mn, mx);
      for (int64_t k = 0; k < std::min<int64_t>(T, 8); k++) printf(" %lld", (long long)hist[(size_t)k]);
      printf("\n");
    }
    if (!ok) {
      bad++;
      printf("MISMATCH case %d T %lld vkind %d layout %d mc %lld grid %u shape", cs, (long long)T, vkind, lay,
             (long long)p.mc, g_grid);
      for (int d = 0; d < nd; d++) printf(" %lld", (long long)sh[d]);
      printf("\n");
    }
  }
  printf("rows CONS %d PF %d: %d cases (%d strided/misaligned, %d NaN/inf), %d mismatches\n", CONS, PFS, cases, nstrided,
         nbadin, bad);
  return bad != 0;
}
