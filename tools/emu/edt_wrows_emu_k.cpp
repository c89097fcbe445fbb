// edt_wrows_emu_k.cpp -- templates/distance_edt.cu compiled for the host with
// emulated warps (tools/emu/edt_wrows_emu.sh builds it once per slot set and
// kernel: KERNEL names it).  emu_pass_<EMU_NAME> runs one launch: blocks in
// turn, one std::thread per CUDA thread, __syncthreads on a block barrier,
// __syncwarp / __shfl*_sync / __ballot_sync on a barrier per warp (every lane
// of a warp must reach them together, as the kernels' full masks require),
// shared memory as static storage, dynamic shared memory filled with junk.
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>
#include "edt_wrows_emu.h"
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
struct emu_warp {
  std::barrier<> *bar;
  uint64_t slot[32];
};
static emu_warp g_warp[32];
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
static inline void __syncwarp(unsigned = 0xffffffffu) { g_warp[threadIdx.y].bar->arrive_and_wait(); }
template <class T> static inline T emu_shfl(T v, int src) {
  emu_warp &w = g_warp[threadIdx.y];
  static_assert(sizeof(T) <= 8, "shuffle of more than 8 bytes");
  std::memcpy(&w.slot[threadIdx.x], &v, sizeof(T));
  w.bar->arrive_and_wait();
  T r;
  std::memcpy(&r, &w.slot[src], sizeof(T));
  w.bar->arrive_and_wait();
  return r;
}
template <class T> static inline T __shfl_sync(unsigned, T v, int src) { return emu_shfl(v, src & 31); }
template <class T> static inline T __shfl_up_sync(unsigned, T v, unsigned d) {
  const int src = (int)threadIdx.x - (int)d;
  return emu_shfl(v, src < 0 ? (int)threadIdx.x : src);
}
template <class T> static inline T __shfl_down_sync(unsigned, T v, unsigned d) {
  const int src = (int)threadIdx.x + (int)d;
  return emu_shfl(v, src > 31 ? (int)threadIdx.x : src);
}
template <class T> static inline T __shfl_xor_sync(unsigned, T v, int o) { return emu_shfl(v, (int)(threadIdx.x ^ o) & 31); }
static inline unsigned __ballot_sync(unsigned, int pred) {
  emu_warp &w = g_warp[threadIdx.y];
  w.slot[threadIdx.x] = pred != 0;
  w.bar->arrive_and_wait();
  unsigned r = 0;
  for (int k = 0; k < 32; k++) r |= (w.slot[k] ? 1u : 0u) << k;
  w.bar->arrive_and_wait();
  return r;
}
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __ffs(unsigned x) { return __builtin_ffs((int)x); }
static inline int __clz(unsigned x) { return x ? __builtin_clz(x) : 32; }
// used by the search kernels of the same template (not emulated here); defined so it compiles
static inline unsigned __viaddmin_u32(unsigned a, unsigned b, unsigned c) { return a + b < c ? a + b : c; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
#include KERN_INC

#define EMU_CAT2(a, b) a##b
#define EMU_CAT(a, b) EMU_CAT2(a, b)
extern "C" void EMU_CAT(emu_pass_, EMU_NAME)(const emu_args *a) {
  ndf_edt_params p;
  memset(&p, 0, sizeof p);
  p.in = (const TIN *)a->in;
  p.sfeat = a->sfeat;
  p.sw = (const WT *)a->sw;
  p.dfeat = a->dfeat;
  p.dw = (WT *)a->dw;
  p.stack = (ndf_site *)a->stack;
  p.dist = (DOUT *)a->dist;
  p.idx = a->idx;
  p.nlines = a->nlines;
  p.n = a->n;
  p.inner = a->inner;
  p.s = a->s;
  p.nd = a->nd;
  p.nb = a->nb;
  p.axis = a->axis;
  p.npix = a->npix;
  for (int k = 0; k < NDF_MAX_NDIM; k++) {
    p.shape[k] = a->shape[k];
    p.istr[k] = a->istr[k];
    p.dstr[k] = a->dstr[k];
    p.xstr[k] = a->xstr[k];
    p.samp[k] = a->samp[k];
  }
  p.xk = a->xk;
  p.wseg = a->wseg;
  p.wstride = a->wstride;
  p.wexact = a->wexact;
  p.wbytes = a->wbytes;
  p.wtree = a->wtree;
  p.wfast = a->wfast;
  gridDim = {a->grid, 1};
  blockDim = {a->bx, a->by};
  memset(emu_dyn, 0xa5, sizeof emu_dyn); // stale shared memory
  for (unsigned b = 0; b < a->grid; b++) {
    std::barrier<> bar((std::ptrdiff_t)(a->bx * a->by));
    g_bar = &bar;
    std::vector<std::barrier<> *> wb;
    for (unsigned y = 0; y < a->by; y++) {
      wb.push_back(new std::barrier<>((std::ptrdiff_t)a->bx)); // bx = 32 where warps are used
      g_warp[y].bar = wb.back();
    }
    std::vector<std::thread> th;
    for (unsigned ty = 0; ty < a->by; ty++)
      for (unsigned tx = 0; tx < a->bx; tx++)
        th.emplace_back([=, &p] {
          threadIdx = {tx, ty};
          blockIdx = {b, 0};
          KERNEL(p);
        });
    for (auto &t : th) t.join();
    for (auto *w : wb) delete w;
  }
}
