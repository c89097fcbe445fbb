// sinkhorn_cluster.cu -- the batched Sinkhorn persistent kernel for 2-D grid
// L^p costs of at most 32 x 32 bins, one histogram pair per thread-block
// CLUSTER of CL blocks (sm_90; runtime/sinkhorn_cuda.c picks CL so that
// n * CL fills the SMs, and uses templates/sinkhorn_grid2.cu, one block per
// pair, when n is large or clusters are unavailable).  The iteration, its
// checks, early exit, breakdown rule and outputs are those of
// sinkhorn_grid2.cu and of the CPU backend (runtime/sinkhorn.c).
//
// The grid is N0 x N1 (compile-time), row-major.  Block `rank` of a cluster
// owns R = ceil(N0 / CL) consecutive rows; its thread (warp w, lane c) owns
// the element (rank * R + w, c) for the whole solve (a, b and the pass
// results stay in its registers).  K = K0 (x) K1 is applied as
//   pass A (axis 1, local): t[u][c] = sum_v in[u][v] K1[v][c]  (u = own row)
//   pass B (axis 0):        out[r][c] = sum_u K0[r][u] t[u][c]
// Pass A reads only the thread's own row of `in`, written by its own warp,
// so it needs no block barrier (a __syncwarp).  Its result is pushed into
// every block's copy of t (stores to distributed shared memory, coalesced
// along c); one cluster barrier (arrive.release / wait.acquire) later, pass B
// reads t locally.  t is double-buffered by application, so an application
// costs exactly one cluster barrier and no block barrier: a block can only
// overwrite a t buffer after every block has passed the following barrier,
// i.e. finished reading it.  Float: K1's column c lives in registers, K0's
// row r in shared memory (one broadcast 4-wide load per 4 terms).
//
// Cluster-uniform decisions: breakdown flags are set in every block (remote
// stores) and read after the next cluster barrier (two flags, as in
// sinkhorn_grid2.cu: the row one is read after the column application, the
// column one after the next row or check application); the check's error is
// summed from per-warp partials pushed to every block, in a fixed order, so
// every block takes the same early-exit decision.
//
// Log domain: log2 units and two-pass log-sum-exp, as sinkhorn_grid2.cu.
//
// ASYNC = 1 (CL > 1 and CL dividing N0, so every warp owns a row): no cluster
// barrier in the loop.  On sm_90 barrier.cluster.arrive's release (the
// default, needed to publish the distributed stores) compiles to
// MEMBAR.ALL.GPU, and fence.acq_rel.cluster to the same: ~0.9 us per
// barrier measured.  Instead pass A's results travel as st.async stores that
// complete bytes on an mbarrier of the receiving block (one per t buffer);
// a block waits (try_wait.parity, acquire at cluster scope: no membar) until
// all N0 rows of the application (and, scaling form, one breakdown word per
// row) have arrived, then re-arms that mbarrier (arrive.expect_tx, one
// thread) for the buffer's next use.  Why one mbarrier per buffer is safe
// without any other synchronization: block q sends application j + 2 into
// buffer j % 2 only after receiving every row of application j + 1, and each
// warp of a block sends its row of j + 1 only after its pass B of j (the
// last read of buffer j % 2) -- so phase j of a block's mbarrier has been
// observed by all its threads before any byte of phase j + 2 can arrive, and
// nothing is overwritten while being read.  Breakdown flags travel with the
// rows (the warp's vote, one word per row), so every block reads the same
// flags after the same wait; the check's error partials travel likewise on
// a third mbarrier.  A block's shared memory is only written by st.async
// counted on its own mbarriers, which it waits for before it exits.
#include "ndf_common.cuh"

typedef NDF_SLOT(T) T;
#define LOGD NDF_SLOT(LOGD)
#define N0 NDF_SLOT(N0)
#define N1 NDF_SLOT(N1)
#define CL NDF_SLOT(CL)
#define ASYNC NDF_SLOT(ASYNC)
#define R ((N0 + CL - 1) / CL)
#define NT (R * 32)
#define NDF_SK_MAXSP 8
#define N0R ((N0 + 3) / 4 * 4)
#define N1R ((N1 + 3) / 4 * 4)
#define NRED (CL * R)
// float: K1's column in registers; double: read from shared memory
#define KREG (sizeof(T) == 4 && CL > 1)

static_assert(N0 >= 1 && N0 <= 32 && N1 >= 1 && N1 <= 32, "sinkhorn_cluster: at most 32 x 32");
static_assert(CL >= 1 && CL <= 16, "sinkhorn_cluster: clusters of 1 to 16 blocks");
static_assert(!ASYNC || (CL > 1 && N0 % CL == 0), "sinkhorn_cluster: ASYNC needs clusters whose blocks own R rows each");
// bytes an application delivers to a block from the other blocks: their
// rows of N1 values, and a breakdown word per row (scaling form); the
// block's own R rows are plain shared stores, published by one mbarrier
// arrival per warp
#define TXB ((unsigned)((CL - 1) * R * (N1 * sizeof(T) + (LOGD ? 0 : 4))))
#define TXR ((unsigned)((CL - 1) * R * sizeof(double))) // the same for the check's partial sums

// The parameter block of templates/sinkhorn.cu (the host fills both alike).
NDF_PARAMS(ndf_sk_params)

#define LN2 0.6931471805599453
#define LOG2E 1.4426950408889634

__device__ __forceinline__ float c_inf(float) { return __int_as_float(0x7f800000); }
__device__ __forceinline__ double c_inf(double) { return __longlong_as_double(0x7ff0000000000000LL); }
__device__ __forceinline__ float c_exp2(float v) { // MUFU.EX2 (ex2(-inf) = 0)
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v));
  return r;
}
__device__ __forceinline__ double c_exp2(double v) { return exp2(v); }
__device__ __forceinline__ float c_log2(float v) { return log2f(v); }
__device__ __forceinline__ double c_log2(double v) { return log2(v); }
__device__ __forceinline__ bool c_finite(T v) { return v - v == (T)0; }

// ---- cluster primitives (PTX ISA 7.8, sm_90) ----
#if CL > 1
__device__ __forceinline__ unsigned c_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ unsigned c_nrank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ unsigned c_cluster_id() {
  unsigned r;
  asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r));
  return r;
}
// the address of shared-memory word `sa` (this block's) in block `rank`'s window
__device__ __forceinline__ unsigned c_mapa(unsigned sa, unsigned rank) {
  unsigned r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(sa), "r"(rank));
  return r;
}
__device__ __forceinline__ void c_st(unsigned addr, float v) {
  asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(addr), "f"(v) : "memory");
}
__device__ __forceinline__ void c_st(unsigned addr, double v) {
  asm volatile("st.shared::cluster.f64 [%0], %1;" ::"r"(addr), "d"(v) : "memory");
}
__device__ __forceinline__ void c_st(unsigned addr, int v) {
  asm volatile("st.shared::cluster.u32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}
// every thread of every block of the cluster; orders the shared (local and
// distributed) memory accesses before it against those after it
__device__ __forceinline__ void c_sync() {
  asm volatile("barrier.cluster.arrive;\n\tbarrier.cluster.wait;" ::: "memory");
}
// ASYNC: no block exits before every block is done (its stores to the
// others were all counted by their waits already; this only keeps every
// block's shared memory alive until the cluster's last access; no membar)
__device__ __forceinline__ void c_sync_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed;\n\tbarrier.cluster.wait;" ::: "memory");
}
// ASYNC: a store into block `addr`'s shared memory that completes sizeof(v)
// bytes on the mbarrier at `mb` (the same block's)
__device__ __forceinline__ void c_st_async(unsigned addr, float v, unsigned mb) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(addr),
               "r"(__float_as_uint(v)), "r"(mb)
               : "memory");
}
__device__ __forceinline__ void c_st_async(unsigned addr, double v, unsigned mb) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b64 [%0], %1, [%2];" ::"r"(addr),
               "l"(__double_as_longlong(v)), "r"(mb)
               : "memory");
}
__device__ __forceinline__ void c_st_async(unsigned addr, int v, unsigned mb) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(addr), "r"(v), "r"(mb)
               : "memory");
}
// mbarrier (this block's, 32-bit shared address) expecting R + 1 arrivals
// per phase: one per warp (its own rows) and the arming one
__device__ __forceinline__ void mb_init(unsigned mb) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(mb), "r"(R + 1) : "memory");
}
// a plain arrival (release at CTA scope: the warp's earlier shared stores)
__device__ __forceinline__ void mb_arrive(unsigned mb) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(mb) : "memory");
}
// the inits visible to the cluster (before the barrier that precedes any st.async)
__device__ __forceinline__ void mb_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
// the arming arrival of the current phase, which then also waits for tx bytes
// (release at CTA scope: no membar; nothing of this thread needs publishing)
__device__ __forceinline__ void mb_arm(unsigned mb, unsigned tx) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(mb), "r"(tx) : "memory");
}
// until the phase of parity `par` has completed; acquire at cluster scope
// (the st.async stores of other blocks are then visible)
__device__ __forceinline__ void mb_wait(unsigned mb, unsigned par) {
  asm volatile("{\n\t.reg .pred p;\n"
               "NDF_MBW:\n\t"
               "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%0], %1;\n\t"
               "@!p bra NDF_MBW;\n\t}" ::"r"(mb),
               "r"(par)
               : "memory");
}
#else // CL = 1: one block per pair, plain shared memory and block barriers (any sm)
__device__ __forceinline__ unsigned c_rank() { return 0; }
__device__ __forceinline__ unsigned c_nrank() { return 1; }
__device__ __forceinline__ unsigned c_cluster_id() { return blockIdx.x; }
__device__ __forceinline__ unsigned c_mapa(unsigned sa, unsigned) { return sa; }
__device__ __forceinline__ void c_st(unsigned addr, float v) {
  asm volatile("st.shared.f32 [%0], %1;" ::"r"(addr), "f"(v) : "memory");
}
__device__ __forceinline__ void c_st(unsigned addr, double v) {
  asm volatile("st.shared.f64 [%0], %1;" ::"r"(addr), "d"(v) : "memory");
}
__device__ __forceinline__ void c_st(unsigned addr, int v) {
  asm volatile("st.shared.u32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ void c_sync() { __syncthreads(); }
// (ASYNC needs clusters: never called)
__device__ __forceinline__ void c_sync_relaxed() {}
template <class V> __device__ __forceinline__ void c_st_async(unsigned, V, unsigned) {}
__device__ __forceinline__ void mb_init(unsigned) {}
__device__ __forceinline__ void mb_arrive(unsigned) {}
__device__ __forceinline__ void mb_init_fence() {}
__device__ __forceinline__ void mb_arm(unsigned, unsigned) {}
__device__ __forceinline__ void mb_wait(unsigned, unsigned) {}
#endif
__device__ __forceinline__ unsigned c_sa(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

// 4 consecutive values at a 4-aligned shared address (one vector load).
__device__ __forceinline__ void ld4(const float *p, float v[4]) {
  const float4 q = *reinterpret_cast<const float4 *>(p);
  v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
}
__device__ __forceinline__ void ld4(const double *p, double v[4]) {
  const double2 q0 = reinterpret_cast<const double2 *>(p)[0], q1 = reinterpret_cast<const double2 *>(p)[1];
  v[0] = q0.x, v[1] = q0.y, v[2] = q1.x, v[3] = q1.y;
}

// sum_i a[i] * b[i] (scaling) or LSE2_i(a[i] + b[i]) (log2 units), i < NI.
template <int NI> __device__ __forceinline__ T combine(const T *av, const T *bv) {
  if (!LOGD) {
    T s[4] = {(T)0, (T)0, (T)0, (T)0}; // 4 chains: latency, not issue, bounds one warp per scheduler
#pragma unroll
    for (int i = 0; i < NI; i++) s[i & 3] = fma(av[i], bv[i], s[i & 3]);
    return (s[0] + s[1]) + (s[2] + s[3]);
  } else {
    T m = -c_inf((T)0);
#pragma unroll
    for (int i = 0; i < NI; i++) m = fmax(m, av[i] + bv[i]); // -inf terms never win; NaN-free
    if (m == -c_inf((T)0)) return m;
    T s[4] = {(T)0, (T)0, (T)0, (T)0};
#pragma unroll
    for (int i = 0; i < NI; i++) s[i & 3] += c_exp2((av[i] + bv[i]) - m); // -inf term: 0
    return m + c_log2((s[0] + s[1]) + (s[2] + s[3]));
  }
}

struct c_smem {
  __align__(16) T xs[R][N1R];    // own rows of x (pass A input of the column update)
  __align__(16) T ys[R][N1R];    // own rows of y
  __align__(16) T K0s[R][N0R];   // own rows of K0 (or its weighted version)
  __align__(16) T K1s[KREG ? 1 : N1][32]; // double: K1 (K1s[v][c])
  __align__(16) T t[2][N0][32];  // pass A results of all rows, double-buffered; written by every block
  double red[NRED];              // per-warp partial sums, written by every block
  int bad_r, bad_c;              // breakdown in the row / column update, written by every block
  unsigned long long mb[3];      // ASYNC: mbarriers of t[0], t[1] and red
  int fl[2][N0];                 // ASYNC: breakdown word of each row of t[0], t[1]
};

// Loads this thread's kernel data: K0's own rows into shared memory (lanes
// across u), K1's column c into k1c (float) or K1s (double).  `weighted` =
// the axis whose cost-weighted vector is used (-1: none).
__device__ __forceinline__ void load_k(const ndf_sk_params &p, c_smem &S, T k1c[N1], int row0, int weighted) {
  const T *m0 = p.ax + p.axoff[0] + (weighted == 0 ? p.wofs : 0);
  const T *m1 = p.ax + p.axoff[1] + (weighted == 1 ? p.wofs : 0);
  const int w = threadIdx.x >> 5, c = threadIdx.x & 31, r = row0 + w;
  // the vectors hold deltas 0 .. n_k + 3
  for (int u = c; u < N0R; u += 32) {
    const int dl = r > u ? r - u : u - r;
    S.K0s[w][u] = (r < N0 && u < N0) ? (LOGD ? (T)((double)m0[dl] * LOG2E) : m0[dl]) : (T)0;
  }
#pragma unroll
  for (int v = 0; v < N1; v++) {
    const int dl = v > c ? v - c : c - v;
    const T kv = c < N1 ? (LOGD ? (T)((double)m1[dl] * LOG2E) : m1[dl]) : (T)0;
    if (KREG) k1c[v] = kv;
    else if (w == 0) S.K1s[KREG ? 0 : v][c] = kv; // published by the caller's barrier
  }
}

// tv = (K in) at this thread's element; one cluster barrier.  `in` = own
// rows (written by this warp only); buf alternates between applications.
__device__ __forceinline__ T apply(c_smem &S, const T (*in)[N1R], const T k1c[N1], const unsigned rt[CL], int buf,
                                   bool rowok, bool ok, int row) {
  const int w = threadIdx.x >> 5, c = threadIdx.x & 31;
  __syncwarp();
  if (rowok && c < N1) { // pass A: own row `row`, column c
    T iv[N1], kv[N1];
#pragma unroll
    for (int v4 = 0; v4 < N1; v4 += 4) {
      T q[4];
      ld4(&in[w][v4], q);
#pragma unroll
      for (int j = 0; j < 4; j++)
        if (v4 + j < N1) iv[v4 + j] = q[j];
    }
#pragma unroll
    for (int v = 0; v < N1; v++) kv[v] = KREG ? k1c[v] : S.K1s[KREG ? 0 : v][c];
    const T o = combine<N1>(iv, kv);
    const unsigned off = (unsigned)(((buf * N0 + row) * 32 + c) * sizeof(T));
#pragma unroll
    for (int q = 0; q < CL; q++) c_st(rt[q] + off, o);
  }
  c_sync();
  T res = (T)0;
  if (ok) { // pass B: element (row, c)
    T tv[N0], kv[N0];
#pragma unroll
    for (int u = 0; u < N0; u++) tv[u] = S.t[buf][u][c];
#pragma unroll
    for (int u4 = 0; u4 < N0; u4 += 4) {
      T q[4];
      ld4(&S.K0s[w][u4], q);
#pragma unroll
      for (int j = 0; j < 4; j++)
        if (u4 + j < N0) kv[u4 + j] = q[j];
    }
    res = combine<N0>(kv, tv);
  }
  return res;
}

// ASYNC: tv = (K in) at this thread's element, as apply(), with st.async
// and this block's mbarrier of buffer `buf` instead of the cluster barrier.
// `bad`: this thread's breakdown in the update that produced `in` (scaling
// form); returns through `flagged` whether any row of any block had one (the
// same answer in every block).  ph: the parity of each mbarrier's current
// phase (bit buf).  ro: the bases of S in the other blocks (ranks rank + 1,
// rank + 2, ... mod CL).
__device__ __forceinline__ T apply_async(c_smem &S, const T (*in)[N1R], const T k1c[N1], const unsigned ro[CL], int buf,
                                         unsigned &ph, bool ok, int row, bool bad, bool &flagged) {
  const int w = threadIdx.x >> 5, c = threadIdx.x & 31;
  const unsigned mbo = (unsigned)((char *)&S.mb[buf] - (char *)&S);
  __syncwarp();
  const bool wbad = !LOGD && __any_sync(0xffffffffu, bad); // every warp owns a row (N0 % CL == 0)
  if (ok) { // pass A: own row `row`, column c
    T iv[N1], kv[N1];
#pragma unroll
    for (int v4 = 0; v4 < N1; v4 += 4) {
      T q[4];
      ld4(&in[w][v4], q);
#pragma unroll
      for (int j = 0; j < 4; j++)
        if (v4 + j < N1) iv[v4 + j] = q[j];
    }
#pragma unroll
    for (int v = 0; v < N1; v++) kv[v] = KREG ? k1c[v] : S.K1s[KREG ? 0 : v][c];
    const T o = combine<N1>(iv, kv);
    const unsigned off = (unsigned)((char *)&S.t[buf][row][c] - (char *)&S);
#pragma unroll
    for (int q = 0; q < CL - 1; q++) c_st_async(ro[q] + off, o, ro[q] + mbo);
    S.t[buf][row][c] = o;
  }
  if (!LOGD && c == 0) {
    const unsigned off = (unsigned)((char *)&S.fl[buf][row] - (char *)&S);
#pragma unroll
    for (int q = 0; q < CL - 1; q++) c_st_async(ro[q] + off, (int)wbad, ro[q] + mbo);
    S.fl[buf][row] = (int)wbad;
  }
  const unsigned mb = c_sa(&S.mb[buf]);
  __syncwarp();
  if (c == 0) mb_arrive(mb); // this warp's row (local stores)
  mb_wait(mb, (ph >> buf) & 1u); // every row of this application is here
  ph ^= 1u << buf;
  if (threadIdx.x == 0) mb_arm(mb, TXB); // the buffer's next use (two applications on)
  flagged = false;
  if (!LOGD) {
    const volatile int *fl = S.fl[buf];
    flagged = __any_sync(0xffffffffu, c < N0 && fl[c] != 0);
  }
  T res = (T)0;
  if (ok) { // pass B: element (row, c)
    T tv[N0], kv[N0];
#pragma unroll
    for (int u = 0; u < N0; u++) tv[u] = S.t[buf][u][c];
#pragma unroll
    for (int u4 = 0; u4 < N0; u4 += 4) {
      T q[4];
      ld4(&S.K0s[w][u4], q);
#pragma unroll
      for (int j = 0; j < 4; j++)
        if (u4 + j < N0) kv[u4 + j] = q[j];
    }
    res = combine<N0>(kv, tv);
  }
  return res;
}

// ASYNC: c_sum with st.async and the third mbarrier (bit 2 of ph).  A
// block's next c_sum stores arrive only after a full application that
// follows this block's reads of red.
__device__ __forceinline__ double c_sum_async(c_smem &S, double v, const unsigned rt[CL], unsigned rank, unsigned &ph) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  const int w = threadIdx.x >> 5, l = threadIdx.x & 31;
  v = __shfl_sync(0xffffffffu, v, 0);
  const unsigned mbo = (unsigned)((char *)&S.mb[2] - (char *)&S);
  if (l < CL && l != (int)rank) { // lane q sends the warp's sum to block q
    const unsigned off = (unsigned)((char *)&S.red[rank * R + w] - (char *)&S);
    unsigned dst = 0, dmb = 0;
#pragma unroll
    for (int q = 0; q < CL; q++)
      if (q == l) dst = rt[q] + off, dmb = rt[q] + mbo;
    c_st_async(dst, v, dmb);
  }
  if (l == 0) S.red[rank * R + w] = v;
  const unsigned mb = c_sa(&S.mb[2]);
  __syncwarp();
  if (l == 0) mb_arrive(mb);
  mb_wait(mb, (ph >> 2) & 1u);
  ph ^= 4u;
  if (threadIdx.x == 0) mb_arm(mb, TXR);
  double t = 0.0;
#pragma unroll
  for (int i = 0; i < NRED; i++) t += S.red[i];
  return t;
}

// Cluster-wide sum in double of one value per thread (fixed order: every
// block gets the same bits).  One cluster barrier.
__device__ __forceinline__ double c_sum(c_smem &S, double v, const unsigned rt[CL], unsigned rank) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  const int w = threadIdx.x >> 5, l = threadIdx.x & 31;
  v = __shfl_sync(0xffffffffu, v, 0);
  if (l < CL) { // lane q sends the warp's sum to block q
    const unsigned off = (unsigned)((char *)&S.red[rank * R + w] - (char *)&S);
    unsigned dst = 0;
#pragma unroll
    for (int q = 0; q < CL; q++)
      if (q == l) dst = rt[q] + off;
    c_st(dst, v);
  }
  c_sync();
  double t = 0.0;
#pragma unroll
  for (int i = 0; i < NRED; i++) t += S.red[i];
  return t;
}

#if CL > 1
#define NDF_SK_CLUSTER_ATTR __cluster_dims__(CL, 1, 1)
#else
#define NDF_SK_CLUSTER_ATTR
#endif
extern "C" __global__ void NDF_SK_CLUSTER_ATTR __launch_bounds__(NT) ndf_sinkhorn_cluster(const ndf_sk_params p) {
  __shared__ c_smem S;
  if (c_nrank() != CL) { // launched without the cluster dimensions: tell the host (it falls back), touch nothing
    if (blockIdx.x == 0 && threadIdx.x == 0) p.fail[0] = -1;
    return;
  }
  const unsigned rank = c_rank();
  const ndf_i64 k = c_cluster_id();
  const int w = threadIdx.x >> 5, c = threadIdx.x & 31;
  const int row = (int)rank * R + w;
  const bool rowok = row < N0, ok = rowok && c < N1; // this thread owns element (row, c)
  // rt[q]: the base of S in block q (S is the only shared variable: offsets from it)
  unsigned rt[CL];
  const unsigned base = c_sa(&S);
#pragma unroll
  for (int q = 0; q < CL; q++) rt[q] = c_mapa(base, (unsigned)q);
  const unsigned toff = (unsigned)((char *)&S.t[0][0][0] - (char *)&S);
  unsigned rtt[CL];
#pragma unroll
  for (int q = 0; q < CL; q++) rtt[q] = rt[q] + toff;
  const unsigned br_off = (unsigned)((char *)&S.bad_r - (char *)&S), bc_off = (unsigned)((char *)&S.bad_c - (char *)&S);
  unsigned ro[CL]; // ASYNC: the other blocks, nearest rank first
#pragma unroll
  for (int q = 0; q < CL; q++) ro[q] = c_mapa(base, (rank + 1 + (unsigned)q) % CL);

  const T *a = p.a + k * (N0 * N1), *b = p.b + k * (N0 * N1);
  const int i0 = row * N1 + c;
  const T av = ok ? a[i0] : (T)1, bv = ok ? b[i0] : (T)1;
  const T ha = LOGD ? (av > (T)0 ? c_log2(av) : -c_inf(av)) : av;
  const T hb = LOGD ? (bv > (T)0 ? c_log2(bv) : -c_inf(bv)) : bv;
  T xr = LOGD ? (T)0 : (T)1, tv = (T)0;
  if (c < N1R) S.xs[w][c] = S.ys[w][c] = LOGD ? (T)0 : (T)1;
  T k1c[N1];
  load_k(p, S, k1c, (int)rank * R, -1);
  if (threadIdx.x == 0) S.bad_r = S.bad_c = 0;
  unsigned ph = 0; // ASYNC: parities of the mbarriers' current phases (t[0], t[1], red)
  if (ASYNC && threadIdx.x == 0) {
    for (int i = 0; i < 3; i++) mb_init(c_sa(&S.mb[i]));
    mb_init_fence();
    mb_arm(c_sa(&S.mb[0]), TXB);
    mb_arm(c_sa(&S.mb[1]), TXB);
    mb_arm(c_sa(&S.mb[2]), TXR);
  }
  c_sync(); // every block's shared memory is initialized before anyone writes into it

  double err = c_inf(0.0);
  int it = 0, failed = 0, buf = 0;
  bool have_t = false; // tv holds K y for the current y (from a check)
  volatile int *bad_r = &S.bad_r, *bad_c = &S.bad_c;
  bool pend_c = false, flagged = false; // ASYNC: this thread's column-update breakdown (sent with the next K y)
  while (it < p.max_iter) {
    // row update x = a / (K y)
    if (!have_t) {
      if (ASYNC) tv = apply_async(S, S.ys, k1c, ro, buf, ph, ok, row, pend_c, flagged);
      else tv = apply(S, S.ys, k1c, rtt, buf, rowok, ok, row);
      buf ^= 1;
      if (ASYNC ? flagged : *bad_c) { failed = it; break; } // the previous column update (read after a cluster barrier)
    }
    have_t = false;
    bool bad = false; // ASYNC: this thread's row-update breakdown
    if (ok) {
      T v;
      if (LOGD) {
        v = ha == -c_inf(ha) ? ha : ha - tv;
      } else if (ha == (T)0) {
        v = (T)0;
      } else {
        v = ha / tv;
        if (!(tv > (T)0) || !c_finite(v)) {
          if (ASYNC) bad = true;
          else
#pragma unroll
            for (int q = 0; q < CL; q++) c_st(rt[q] + br_off, 1);
        }
      }
      xr = v;
      S.xs[w][c] = v;
    }
    // column update y = b / (K^T x) (the grid kernel is symmetric)
    if (ASYNC) tv = apply_async(S, S.xs, k1c, ro, buf, ph, ok, row, bad, flagged);
    else tv = apply(S, S.xs, k1c, rtt, buf, rowok, ok, row);
    buf ^= 1;
    if (ASYNC ? flagged : *bad_r) { failed = it + 1; break; } // set before this application's barrier: cluster-uniform
    pend_c = false;
    if (ok) {
      T v;
      if (LOGD) {
        v = hb == -c_inf(hb) ? hb : hb - tv;
      } else if (hb == (T)0) {
        v = (T)0;
      } else {
        v = hb / tv;
        if (!(tv > (T)0) || !c_finite(v)) {
          if (ASYNC) pend_c = true;
          else
#pragma unroll
            for (int q = 0; q < CL; q++) c_st(rt[q] + bc_off, 1);
        }
      }
      S.ys[w][c] = v;
    }
    it++;
    // tol = 0: only the last check counts (its error is the one reported; a
    // check's K y is the next row update's, so skipping one changes no value
    // and no breakdown iteration: a column breakdown is read after the next
    // K y either way, at the same it)
    if ((it % p.check_every == 0 && p.tol > 0.0) || it == p.max_iter) {
      if (ASYNC) tv = apply_async(S, S.ys, k1c, ro, buf, ph, ok, row, pend_c, flagged);
      else tv = apply(S, S.ys, k1c, rtt, buf, rowok, ok, row);
      buf ^= 1;
      have_t = true;
      if (ASYNC ? flagged : *bad_c) { failed = it; break; }
      double e = 0.0;
      if (ok) {
        double rr, want;
        if (LOGD) {
          rr = xr == -c_inf(xr) ? 0.0 : (double)c_exp2(xr + tv);
          want = ha == -c_inf(ha) ? 0.0 : (double)av;
        } else {
          rr = (double)(xr * tv);
          want = (double)ha;
        }
        e = fabs(rr - want);
      }
      err = ASYNC ? c_sum_async(S, e, rt, rank, ph) : c_sum(S, e, rt, rank);
      if (p.tol > 0.0 && err <= p.tol) break;
    }
  }
  // (the loop ends cluster-uniformly; a failure reads the column flag only
  // after the barrier that follows its stores)
  if (failed && it == failed) it = failed - 1; // iterations completed (unused on failure)
  // out: f/eps, g/eps in natural-log units (log 0 = -inf at zero bins)
  T *px = p.x + k * (N0 * N1), *py = p.y + k * (N0 * N1);
  if (ok) {
    const T xv = S.xs[w][c], yv = S.ys[w][c];
    px[i0] = LOGD ? (T)((double)xv * LN2) : log(xv);
    py[i0] = LOGD ? (T)((double)yv * LN2) : log(yv);
  }
  if (rank == 0 && threadIdx.x == 0) {
    p.iters[k] = it;
    p.err[k] = err;
    p.fail[k] = failed;
  }
  if (failed) { // cluster-uniform; no shared access of another block follows the last barrier
    if (ASYNC) c_sync_relaxed();
    return;
  }
  // <P, C> = sum_k <x, (K with axis k weighted by its cost) y>
  double acc = 0.0;
#pragma unroll 1
  for (int axk = 0; axk < 2; axk++) {
    __syncthreads(); // every warp of this block has finished its pass B (K0s)
    load_k(p, S, k1c, (int)rank * R, axk);
    if (!KREG) __syncthreads(); // K1s (read in pass A, before apply's barrier)
    if (ASYNC) tv = apply_async(S, S.ys, k1c, ro, buf, ph, ok, row, false, flagged); // K0s: own warp's row
    else tv = apply(S, S.ys, k1c, rtt, buf, rowok, ok, row); // its barrier also publishes K0s
    buf ^= 1;
    if (ok) {
      const T xv = S.xs[w][c];
      if (LOGD) {
        if (xv > -c_inf(xv) && tv > -c_inf(tv)) acc += (double)c_exp2(xv + tv);
      } else {
        acc += (double)xv * (double)tv;
      }
    }
  }
  acc = ASYNC ? c_sum_async(S, acc, rt, rank, ph) : c_sum(S, acc, rt, rank);
  if (rank == 0 && threadIdx.x == 0) p.tc[k] = acc;
  if (ASYNC) c_sync_relaxed();
}
