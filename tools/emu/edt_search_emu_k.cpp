// edt_search_emu_k.cpp -- one search kernel of templates/distance_edt.cu
// compiled for the host (tools/emu/edt_search_emu.sh builds this file three
// times: EMU_FIRST/EMU_LAST select ndf_edt_sfirst, ndf_edt_smid or
// ndf_edt_srows); emu_pass_<EMU_NAME> runs it with one std::thread per CUDA
// thread, blocks in turn, real barriers, shared memory as static storage.
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>
#define __device__
#define __forceinline__ inline
#define __global__
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define NDF_SLOT(x) NDF_SLOT_##x
#define NDF_SLOT_TIN unsigned char
#define NDF_SLOT_DOUT EMU_DOUT
#define NDF_SLOT_WT EMU_WT
#define NDF_SLOT_FIRST EMU_FIRST
#define NDF_SLOT_LAST EMU_LAST
#define NDF_SLOT_HAS_DIST EMU_HAS_DIST
#define NDF_SLOT_HAS_IDX EMU_HAS_IDX
#define NDF_MAX_NDIM 12
struct emu_dim3 { unsigned x, y; };
static thread_local emu_dim3 threadIdx, blockIdx;
static emu_dim3 blockDim, gridDim;
static std::barrier<> *g_bar;
alignas(16) static unsigned char emu_dyn[65536];
static inline void __syncthreads() { g_bar->arrive_and_wait(); }
static std::atomic<int> g_or{0};
static inline int __syncthreads_or(int v) {
  if (v) g_or = 1;
  g_bar->arrive_and_wait();
  const int r = g_or;
  g_bar->arrive_and_wait();
  if (threadIdx.x == 0 && threadIdx.y == 0) g_or = 0;
  g_bar->arrive_and_wait();
  return r;
}
static inline int __ffs(unsigned x) { return __builtin_ffs((int)x); }
static inline int __clz(unsigned x) { return x ? __builtin_clz(x) : 32; }
static inline unsigned __viaddmin_u32(unsigned a, unsigned b, unsigned c) { // min(a + b, c), wrapping add
  const unsigned s = a + b;
  return s < c ? s : c;
}
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
#include KERN_INC

#define EMU_CAT2(a, b) a##b
#define EMU_CAT(a, b) EMU_CAT2(a, b)
extern "C" void EMU_CAT(emu_pass_, EMU_NAME)(const void *in, const int *sfeat, const void *sw, int *dfeat,
                                             void *dw, void *dist, int *idx, int64_t nlines, int64_t n,
                                             int64_t inner, double s, int nd, int nb, int axis, int64_t npix,
                                             const int64_t *shape, const int64_t *istr, const int64_t *dstr,
                                             const int64_t *xstr, int64_t xk, const double *samp, int64_t slw,
                                             int scap, unsigned grid, unsigned bx, unsigned by) {
  ndf_edt_params p;
  memset(&p, 0, sizeof p);
  p.in = (const TIN *)in;
  p.sfeat = sfeat;
  p.sw = (const WT *)sw;
  p.dfeat = dfeat;
  p.dw = (WT *)dw;
  p.dist = (DOUT *)dist;
  p.idx = idx;
  p.nlines = nlines;
  p.n = n;
  p.inner = inner;
  p.s = s;
  p.nd = nd;
  p.nb = nb;
  p.axis = axis;
  p.npix = npix;
  for (int a = 0; a < NDF_MAX_NDIM; a++) {
    p.shape[a] = shape[a];
    p.istr[a] = istr[a];
    p.dstr[a] = dstr[a];
    p.xstr[a] = xstr[a];
    p.samp[a] = samp[a];
  }
  p.xk = xk;
  p.slw = slw;
  p.scap = scap;
  gridDim = {grid, 1};
  blockDim = {bx, by};
  memset(emu_dyn, 0xa5, sizeof emu_dyn); // stale shared memory
  for (unsigned b = 0; b < grid; b++) {
    std::barrier<> bar((std::ptrdiff_t)(bx * by));
    g_bar = &bar;
    std::vector<std::thread> th;
    for (unsigned ty = 0; ty < by; ty++)
      for (unsigned tx = 0; tx < bx; tx++)
        th.emplace_back([=, &p] {
          threadIdx = {tx, ty};
          blockIdx = {b, 0};
          KERNEL(p);
        });
    for (auto &t : th) t.join();
  }
}
