// ecc_soft_emu.cpp -- runs ndf_ecc_soft2 (templates/ecc_soft.cu) on the host: one std::thread per
// CUDA thread, blocks in turn, real barriers, warp shuffles and ballots through per-warp barriers,
// ex2.approx / rcp.approx as correctly rounded float functions (so it checks the formulation, the
// indexing and the reductions, not the approximations' last bits).  The (c, f) input is the 2-D
// V-construction's c(v) of random images (ties broken by index); the reference is the soft curve
// and its gradients summed in double, cross-checked against the CPU backend's forward.
// Slots and the plan come from runtime/ecc_cuda.c's soft2_make_plan (compiled in by the script).
// tools/emu/ecc_soft_emu.sh.
#include <algorithm>
#include <atomic>
#include <barrier>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>
extern "C" {
#include "ndforge.h"
}
#define __device__
#define __host__
#define __forceinline__ inline
#define __global__
#define __launch_bounds__(...)
#define __shared__ static
typedef long long ndf_i64;
struct emu_dim { unsigned x; };
thread_local unsigned tl_tid, tl_bid;
#define threadIdx (emu_dim{tl_tid})
#define blockIdx (emu_dim{tl_bid})
static unsigned g_grid = 1;
#define gridDim (emu_dim{g_grid})
struct float2 { float x, y; };
struct float4 { float x, y, z, w; };
static inline float4 make_float4(float a, float b, float c, float d) { return float4{a, b, c, d}; }
template <class T> static inline T __ldcs(const T *p) { return *p; }
static inline float2 make_float2(float a, float b) { return float2{a, b}; }
static std::mutex g_amu;
static std::barrier<> *g_bar;
static std::barrier<> *g_wbar[8];
static double g_wslot[8][32];
static inline void __syncthreads() { g_bar->arrive_and_wait(); }
template <class T> static inline T __ldcg(const T *p) { return *p; }
template <class T> static inline T __shfl_xor_sync(unsigned, T v, int o) {
  const unsigned w = tl_tid / 32, l = tl_tid % 32;
  g_wslot[w][l] = (double)v;
  g_wbar[w]->arrive_and_wait();
  const T r = (T)g_wslot[w][l ^ (unsigned)o];
  g_wbar[w]->arrive_and_wait();
  return r;
}
static inline unsigned __ballot_sync(unsigned, bool p) {
  const unsigned w = tl_tid / 32, l = tl_tid % 32;
  g_wslot[w][l] = p ? 1 : 0;
  g_wbar[w]->arrive_and_wait();
  unsigned b = 0;
  for (int i = 0; i < 32; i++) b |= (g_wslot[w][i] != 0 ? 1u : 0u) << i;
  g_wbar[w]->arrive_and_wait();
  return b;
}
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static inline unsigned long long atomicMax(unsigned long long *p, unsigned long long v) {
  std::lock_guard<std::mutex> g(g_amu);
  const unsigned long long o = *p;
  if (v > o) *p = v;
  return o;
}
static inline double atomicAdd(double *p, double v) {
  std::lock_guard<std::mutex> g(g_amu);
  const double o = *p;
  *p = o + v;
  return o;
}
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
static inline float emu_ex2(float x) { // ex2.approx.ftz
  const float y = (float)std::exp2((double)x);
  return y < FLT_MIN ? 0.0f : y;
}
static inline float emu_rcp(float x) { return 1.0f / x; }
#define NDF_SLOT(x) EMU_##x
#include KERN_INC

extern "C" int emu_soft2_plan(const double *t, int64_t T, double lambda, int force_direct, int *lg, int *tchunks,
                              int *prod, int64_t *nslots, float *kh, float *kl, void **slots);

static uint64_t sd = 12345;
static uint64_t rnd() { return sd = sd * 6364136223846793005ULL + 1442695040888963407ULL, sd >> 11; }
static double urand() { return (double)rnd() * 0x1p-53; }
static int64_t irand(int64_t a, int64_t b) { return a + (int64_t)(rnd() % (uint64_t)(b - a + 1)); }

static double sig(double z) { return 1.0 / (1.0 + std::exp(-z)); }
static double worse(double a, double b) { return b != b || a != a ? INFINITY : std::max(a, b); } // NaN counts

int main(int argc, char **argv) {
  const int cases = argc > 1 ? atoi(argv[1]) : 12;
  const int force_direct = argc > 2 ? atoi(argv[2]) : 0;
  ndf_ctx *ctx;
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  o.backend = NDF_BACKEND_CPU;
  if (ndf_ctx_create(&ctx, &o) != NDF_OK) return 2;
  int bad = 0, nprod = 0;
  for (int cs = 0; cs < cases; cs++) {
    const int64_t nimg = irand(1, 3), wide = urand() < 0.3, nx = wide ? irand(200, 700) : irand(1, 90);
    const int64_t ny = wide ? irand(1, 12) : irand(1, 70), npix = ny * nx;
    const int64_t T = urand() < 0.15 ? irand(65, 150) : irand(1, 64);
    const int tkind = (int)irand(0, 2);
    const double lambda = tkind == 0 ? 0.05 + urand() * 0.5 : tkind == 1 ? 0.3 + urand() * 3 : 1 + urand() * 40;
    // 0: values on a grid of 8 levels (ties), 1: continuous, 2: continuous with a few huge magnitudes
    const int vkind = (int)irand(0, 2);
    std::vector<float> img((size_t)(nimg * npix));
    for (auto &v : img)
      v = vkind == 0 ? (float)irand(0, 7) * 1.5f - 3
          : vkind == 2 && urand() < 0.05 ? (float)((urand() < 0.5 ? -1 : 1) * std::exp2(urand() * 100))
                                          : (float)(urand() * 40 - 20);
    std::vector<double> t((size_t)T);
    for (auto &v : t) v = tkind == 0 ? urand() * 60 - 30 : urand() * 16 - 8;
    if (urand() < 0.5) std::sort(t.begin(), t.end());
    // c(v), 2-D: V (owner = greatest (value, index)): 1 - owned edges + owned squares; T (owner = least,
    // a border face has no other top cell): 1 - owned edges + owned vertices
    std::vector<signed char> cb((size_t)(nimg * npix));
    for (int64_t im = 0; im < nimg; im++)
      for (int64_t y = 0; y < ny; y++)
        for (int64_t x = 0; x < nx; x++) {
          const float *f = &img[(size_t)(im * npix)];
          const int64_t i = y * nx + x;
          auto win = [&](int dy, int dx) {
            const int64_t yy = y + dy, xx = x + dx;
            if (yy < 0 || yy >= ny || xx < 0 || xx >= nx) return EMU_CONS == 1;
            const int64_t j = yy * nx + xx;
            if (EMU_CONS == 1) return f[i] < f[j] || (f[i] == f[j] && i < j);
            return f[i] > f[j] || (f[i] == f[j] && i > j);
          };
          int c = 1;
          c -= win(0, 1) + win(0, -1) + win(1, 0) + win(-1, 0);
          for (int sy = -1; sy <= 1; sy += 2)
            for (int sx = -1; sx <= 1; sx += 2) c += win(sy, 0) && win(0, sx) && win(sy, sx);
          cb[(size_t)(im * npix + i)] = (signed char)c;
        }
    // reference in double
    std::vector<double> go((size_t)(nimg * T)), chi((size_t)(nimg * T), 0), chia((size_t)(nimg * T), 0),
        gtr((size_t)T, 0), gta((size_t)T, 0), gir((size_t)(nimg * npix), 0), gia((size_t)(nimg * npix), 0);
    // absolute bounds the error may take beyond the relative one: the clamp changes terms below 2^-62
    std::vector<double> chib((size_t)(nimg * T), 0), gtb((size_t)T, 0), gib((size_t)(nimg * npix), 0);
    for (auto &v : go) v = urand() * 2 - 1;
    for (int64_t im = 0; im < nimg; im++)
      for (int64_t v = 0; v < npix; v++) {
        const double f = img[(size_t)(im * npix + v)], c = cb[(size_t)(im * npix + v)];
        for (int64_t k = 0; k < T; k++) {
          const double z = lambda * (t[(size_t)k] - f), s = sig(z), ez = std::exp(-std::fabs(z));
          const double q = ez / ((1 + ez) * (1 + ez)), g = go[(size_t)(im * T + k)]; // s (1 - s), no cancellation
          chi[(size_t)(im * T + k)] += c * s;
          chia[(size_t)(im * T + k)] += std::fabs(c) * s;
          chib[(size_t)(im * T + k)] += std::fabs(c) * 0x1p-60; // the clamp's bound per term
          gtr[(size_t)k] += lambda * g * c * q;
          gta[(size_t)k] += std::fabs(lambda * g * c) * q;
          gtb[(size_t)k] += std::fabs(lambda * g * c) * 0x1p-60;
          gir[(size_t)(im * npix + v)] += -lambda * c * g * q;
          gia[(size_t)(im * npix + v)] += std::fabs(lambda * c * g) * q;
          gib[(size_t)(im * npix + v)] += std::fabs(lambda * c * g) * 0x1p-60;
        }
      }
    // the CPU backend's forward agrees with the reference (so c(v) here is the library's)
    {
      int64_t sh[3] = {nimg, ny, nx}, osh[2] = {nimg, T};
      ndf_array in, th, out;
      std::vector<double> cpu((size_t)(nimg * T));
      ndf_array_init(&in, img.data(), NDF_DEVICE_CPU, NDF_FLOAT32, 3, sh);
      ndf_array_init(&th, t.data(), NDF_DEVICE_CPU, NDF_FLOAT64, 1, &T);
      ndf_array_init(&out, cpu.data(), NDF_DEVICE_CPU, NDF_FLOAT64, 2, osh);
      ndf_soft_ecc_options so;
      ndf_soft_ecc_options_init(&so);
      so.batch_dims = 1;
      so.lambda = lambda;
      so.construction = EMU_CONS ? NDF_ECC_T : NDF_ECC_V;
      if (ndf_soft_ecc_forward(ctx, &in, &th, &out, &so) != NDF_OK) return 2;
      for (size_t i = 0; i < cpu.size(); i++)
        if (std::fabs(cpu[i] - chi[i]) > 1e-9 * (chia[i] + 1)) {
          printf("case %d: reference c(v) differs from the CPU backend (%g vs %g)\n", cs, cpu[i], chi[i]);
          return 2;
        }
    }
    int lg, tch, prod;
    int64_t nslots;
    float kh, kl;
    void *slots;
    if (emu_soft2_plan(t.data(), T, lambda, force_direct, &lg, &tch, &prod, &nslots, &kh, &kl, &slots)) return 2;
    if (prod != EMU_PROD) { // this binary holds one instance of the kernel
      free(slots);
      printf("--- case %d: plan %s, skipped (T %lld, lambda %.3g)\n", cs, prod ? "PROD" : "direct", (long long)T, lambda);
      continue;
    }
    nprod += prod;
    const int64_t nchunk = (npix + NDF_S2_CH - 1) / NDF_S2_CH;
    std::vector<double> acc((size_t)(nimg * T), 0), gt((size_t)T, 0);
    // grad_input with a padded layout (strides in elements): [img][y][x] with row pitch nx + 3
    const int64_t pitch = nx + 3;
    std::vector<float> gin((size_t)(nimg * ny * pitch), 777.0f);
    const int which = (int)irand(0, 3) % 3; // backward: 0 both gradients, 1 grad_input only, 2 grad_thresholds only
    for (int mode = 0; mode < 2; mode++) {
      ndf_ecc_soft2_params p;
      memset(&p, 0, sizeof p);
      p.cbuf = cb.data();
      p.fbuf = img.data();
      p.slots = (const ndf_ecc_soft2_slot *)slots;
      p.centre = (const float *)((const ndf_ecc_soft2_slot *)slots + nslots);
      p.g = go.data();
      p.acc = mode == 0 ? acc.data() : nullptr;
      p.gt = mode == 1 && which != 1 ? gt.data() : nullptr;
      p.gin = mode == 1 && which != 2 ? gin.data() : nullptr;
      p.lambda = lambda;
      p.kh = kh;
      p.kl = kl;
      p.nimg = nimg, p.npix = npix, p.T = T, p.nchunk = nchunk, p.gstep = 1;
      p.ny = 1, p.nx = nx, p.gsz = pitch, p.gsy = 0, p.gsx = 1;
      p.nb = 1, p.mode = mode, p.lg = lg, p.tchunks = tch;
      p.bshape[0] = nimg, p.gostr[0] = T, p.gistr[0] = ny * pitch;
      p.hdr = nullptr;
      static ndf_ecc_soft2_hdr hd;
      memset(&hd, 0, sizeof hd);
      if (EMU_FUSED) { // c and f from the image itself
        p.cbuf = nullptr, p.fbuf = nullptr, p.hdr = &hd;
        p.in = img.data(), p.nrow = ny, p.isy = nx, p.isx = 1, p.ibstr[0] = npix;
      }
      const unsigned grid = (unsigned)(nimg * nchunk);
      for (unsigned b = 0; b < grid; b++) {
        std::barrier<> bar(256);
        std::vector<std::barrier<> *> wb;
        for (int w = 0; w < 8; w++) g_wbar[w] = new std::barrier<>(32);
        g_bar = &bar;
        std::vector<std::thread> th;
        for (unsigned tt = 0; tt < 256; tt++) th.emplace_back([&, tt, b] { tl_tid = tt; tl_bid = b; ndf_ecc_soft2(p); });
        for (auto &x : th) x.join();
        for (int w = 0; w < 8; w++) delete g_wbar[w];
      }
    }
    free(slots);
    double e1 = 0, e2 = 0, e3 = 0;
    int gaps = 0;
    for (size_t i = 0; i < acc.size(); i++) {
      const double r1 = std::max(0.0, std::fabs(acc[i] - chi[i]) - chib[i]) / (chia[i] + 1e-300);
      if (r1 > 1e-6 && getenv("EMU_VERBOSE"))
        printf("  chi[%zu] (t %.9g): got %.12g want %.12g sum|terms| %.3g\n", i, t[i % (size_t)T], acc[i], chi[i], chia[i]);
      e1 = worse(e1, r1);
    }
    if (which == 1)
      for (int64_t k = 0; k < T; k++) gaps += gt[(size_t)k] != 0;
    if (which != 1)
    for (int64_t k = 0; k < T; k++) e2 = worse(e2, std::max(0.0, std::fabs(gt[(size_t)k] - gtr[(size_t)k]) - gtb[(size_t)k]) / (gta[(size_t)k] + 1e-300));
    for (int64_t im = 0; im < nimg; im++)
      for (int64_t y = 0; y < ny; y++) {
        for (int64_t x = 0; x < nx; x++) {
          const size_t i = (size_t)(im * npix + y * nx + x);
          const double got = gin[(size_t)((im * ny + y) * pitch + x)];
          if (which == 2) {
            gaps += got != 777.0f;
            continue;
          }
          const double r3 = std::max(0.0, std::fabs(got - gir[i]) - gib[i]) / (gia[i] + 1e-300);
          if (r3 > e3 && getenv("EMU_VERBOSE"))
            printf("  dL/df img %lld (%lld, %lld) c %d f %g: got %.9g want %.9g sum|terms| %.3g\n", (long long)im,
                   (long long)y, (long long)x, cb[i], img[i], got, gir[i], gia[i]);
          e3 = worse(e3, r3);
        }
        for (int64_t x = nx; x < pitch; x++) gaps += gin[(size_t)((im * ny + y) * pitch + x)] != 777.0f;
      }
    // zero-sum terms (all terms 0): the relative error is 0/0 -> nan is not > tol; absolute 0 needed
    // PROD: a few 1e-7 per term; direct (ndf_ecc_soft's float arithmetic): (2 + |kappa (f - t)|) 1e-7
    const double tol = EMU_PROD ? 2e-6 : 2e-5;
    const int ok = e1 <= tol && e2 <= tol && e3 <= tol && !gaps;
    printf("%s case %d: %lld x %lld x %lld T %lld lambda %.3g %s grads %d lg %d chunks %d: rel err chi %.2e dL/dt %.2e dL/df %.2e%s\n",
           ok ? "ok " : "BAD", cs, (long long)nimg, (long long)ny, (long long)nx, (long long)T, lambda,
           prod ? "PROD" : "direct", which, lg, tch, e1, e2, e3, gaps ? " (gaps written)" : "");
    bad += !ok;
  }
  printf("%d cases (%d PROD), %d bad\n", cases, nprod, bad);
  // ndf_ecc_soft2_nan (no barriers: threads run one after another): the least NaN index, or none
  int nbad = 0;
  for (int tr = 0; tr < 300; tr++) {
    const int64_t n = irand(1, 70000), off = irand(0, 3);
    std::vector<float> buf((size_t)(n + 4), 1.0f);
    float *a = buf.data() + off; // misaligned for off != 0
    int64_t want = -1;
    const int k = (int)irand(0, 3);
    for (int j = 0; j < k; j++) {
      const int64_t i = urand() < 0.3 ? n - 1 - irand(0, std::min<int64_t>(n - 1, 5)) : irand(0, n - 1);
      a[i] = NAN;
      if (want < 0 || i < want) want = i;
    }
    ndf_ecc_soft2_hdr hd;
    memset(&hd, 0, sizeof hd);
    ndf_ecc_soft2_nan_params q = {a, n, &hd};
    g_grid = (unsigned)irand(1, 20);
    for (unsigned b = 0; b < g_grid; b++)
      for (unsigned t = 0; t < 256; t++) {
        tl_tid = t, tl_bid = b;
        ndf_ecc_soft2_nan(q);
      }
    const int64_t got = hd.nan_key ? (int64_t)~hd.nan_key : -1;
    if (got != want) {
      nbad++;
      printf("NaN pass: n %lld offset %lld grid %u: got %lld want %lld\n", (long long)n, (long long)off, g_grid,
             (long long)got, (long long)want);
    }
  }
  printf("NaN pass: 300 trials, %d bad\n", nbad);
  bad += nbad;
  ndf_ctx_destroy(ctx);
  return bad != 0;
}
