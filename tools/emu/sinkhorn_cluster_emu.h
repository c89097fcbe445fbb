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
#include <mutex>
#include <condition_variable>
#include <map>
#include <chrono>
#include <cstdlib>
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
static inline void c_sync_relaxed() { EM->cbar->arrive_and_wait(); }
static inline unsigned c_sa(const void *p) { return (unsigned)((const char *)p - EM->smem[emu_rank()]); }
static inline float c_exp2(float v) { return exp2f(v); }
static inline unsigned c_nrank() { return (unsigned)EM->CLn; }

// ASYNC (st.async + mbarrier): one lock for every mbarrier of the cluster.
// An mbarrier: phase, pending arrivals (R + 1 per phase: one per warp and the
// arming one), tx-count (signed: bytes may arrive before the phase's
// expect_tx).  st.async must target another block (the kernel stores its own
// rows plainly).  A wait that finds the barrier
// two or more phases past the one it waited for (a parity wait would then
// spin for ever on the GPU) aborts, as does a wait longer than 60 s.
struct emu_mb { long phase = 0, pending = 0, count = 0, tx = 0; };
struct emu_mbs {
  std::mutex m;
  std::condition_variable cv;
  std::map<unsigned, emu_mb> mb;              // by cluster address
  std::map<std::pair<int, unsigned>, long> seen; // (thread, barrier) -> phases seen completed
} emu_mbx;
static inline int emu_gtid() { return emu_rank() * EM->NTn + tl_tid; }
static inline void emu_mb_done(emu_mb &b) {
  if (b.pending == 0 && b.tx == 0) { b.phase++; b.pending = b.count; emu_mbx.cv.notify_all(); }
}
static inline unsigned emu_local(unsigned sa) { return ((unsigned)emu_rank() << 24) | sa; }
static inline void mb_init(unsigned sa) { // (before the cluster barrier that precedes every use)
  std::lock_guard<std::mutex> g(emu_mbx.m);
  const unsigned key = emu_local(sa);
  emu_mb b;
  b.count = b.pending = EM->NTn / 32 + 1;
  emu_mbx.mb[key] = b;
  for (auto it = emu_mbx.seen.begin(); it != emu_mbx.seen.end();) it = it->first.second == key ? emu_mbx.seen.erase(it) : std::next(it);
}
static inline void mb_init_fence() {}
static inline void mb_arm(unsigned sa, unsigned tx) {
  std::lock_guard<std::mutex> g(emu_mbx.m);
  emu_mb &b = emu_mbx.mb.at(emu_local(sa));
  if (b.pending <= 0) { fprintf(stderr, "emu: arrival beyond the count\n"); abort(); }
  b.tx += tx; b.pending--; emu_mb_done(b);
}
static inline void mb_arrive(unsigned sa) { mb_arm(sa, 0); }
template <class V> static inline void c_st_async(unsigned addr, V v, unsigned mb) {
  std::lock_guard<std::mutex> g(emu_mbx.m);
  if ((addr >> 24) != (mb >> 24)) { fprintf(stderr, "emu: st.async into one block, mbarrier of another\n"); abort(); }
  if ((int)(addr >> 24) == emu_rank()) { fprintf(stderr, "emu: st.async into the executing block\n"); abort(); }
  memcpy(EM->smem[addr >> 24] + (addr & 0xffffff), &v, sizeof v);
  emu_mb &b = emu_mbx.mb.at(mb);
  b.tx -= (long)sizeof v; emu_mb_done(b);
}
static inline void mb_wait(unsigned sa, unsigned par) {
  std::unique_lock<std::mutex> g(emu_mbx.m);
  const unsigned key = emu_local(sa);
  auto t0 = std::chrono::steady_clock::now();
  long &seen = emu_mbx.seen[{emu_gtid(), key}];
  if (emu_mbx.mb.at(key).phase - seen >= 2) { fprintf(stderr, "emu: mbarrier two phases past this thread's last wait\n"); abort(); }
  if ((seen & 1) != (long)par) { fprintf(stderr, "emu: parity %u waited for, phase %ld expected\n", par, seen); abort(); }
  while ((unsigned)(emu_mbx.mb.at(key).phase & 1) == par) {
    emu_mbx.cv.wait_for(g, std::chrono::seconds(1));
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(60)) { fprintf(stderr, "emu: mbarrier wait: deadlock\n"); abort(); }
  }
  const long ph = emu_mbx.mb.at(key).phase;
  if (ph - seen != 1) { fprintf(stderr, "emu: mbarrier wait saw phase %ld after %ld (a phase missed)\n", ph, seen); abort(); }
  seen = ph;
}
static inline bool __any_sync(unsigned, bool v) {
  int w = emu_warp(), l = tl_tid & 31;
  __syncwarp();
  EM->shfl[w * 32 + l] = v ? 1.0 : 0.0;
  __syncwarp();
  bool r = false;
  for (int i = 0; i < 32; i++) r = r || EM->shfl[w * 32 + i] != 0.0;
  __syncwarp();
  return r;
}
