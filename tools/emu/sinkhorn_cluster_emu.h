// sinkhorn_cluster_emu.h -- host stand-ins for the CUDA features templates/sinkhorn_cluster.cu uses
// (see sinkhorn_cluster_emu.cpp).

#include <barrier>
#include <thread>
#include <vector>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <cstdint>
#include <memory>
using std::fma; using std::fmax; using std::log; using std::exp2; using std::log2; using std::fabs;
struct float4 { float x, y, z, w; };
struct double2 { double x, y; };
struct emu_dim { unsigned x; };
thread_local int tl_tid, tl_bid;
#define threadIdx (emu_dim{(unsigned)tl_tid})
#define blockIdx (emu_dim{(unsigned)tl_bid})
#define __device__
#define __forceinline__ inline
#define __global__
#define __launch_bounds__(x)
#define __cluster_dims__(...)
#define __align__(n) alignas(n)
struct emu_state {
  int CLn, NTn;
  std::vector<char *> smem; // per block of the cluster
  std::unique_ptr<std::barrier<>> cbar;
  std::vector<std::unique_ptr<std::barrier<>>> bbar, wbar;
  std::vector<double> shfl; // per warp 32 slots
  int cluster;
};
emu_state *EM;
static inline int emu_rank() { return tl_bid % EM->CLn; }
static inline int emu_warp() { return emu_rank() * (EM->NTn / 32) + tl_tid / 32; }
static inline void __syncthreads() { EM->bbar[emu_rank()]->arrive_and_wait(); }
static inline void __syncwarp() { EM->wbar[emu_warp()]->arrive_and_wait(); }
template <class V> static inline V emu_shfl(V v, int src) {
  int w = emu_warp(), l = tl_tid & 31;
  __syncwarp();
  EM->shfl[w * 32 + l] = (double)v;
  __syncwarp();
  V r = src >= 0 && src < 32 ? (V)EM->shfl[w * 32 + src] : v;
  __syncwarp();
  return r;
}
template <class V> static inline V __shfl_down_sync(unsigned, V v, int o) { int l = tl_tid & 31; return emu_shfl(v, l + o < 32 ? l + o : -1); }
template <class V> static inline V __shfl_sync(unsigned, V v, int s) { return emu_shfl(v, s); }
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static inline double __longlong_as_double(long long i) { double f; memcpy(&f, &i, 8); return f; }
static inline unsigned c_rank() { return (unsigned)emu_rank(); }
static inline unsigned c_cluster_id() { return (unsigned)(tl_bid / EM->CLn); }
static inline unsigned c_mapa(unsigned sa, unsigned rank) { return (rank << 24) | sa; }
template <class V> static inline void c_st(unsigned addr, V v) { memcpy(EM->smem[addr >> 24] + (addr & 0xffffff), &v, sizeof v); }
static inline void c_sync() { EM->cbar->arrive_and_wait(); }
static inline unsigned c_sa(const void *p) { return (unsigned)((const char *)p - EM->smem[emu_rank()]); }
static inline float c_exp2(float v) { return exp2f(v); }
static inline unsigned c_nrank() { return (unsigned)EM->CLn; }
