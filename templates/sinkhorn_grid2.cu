// sinkhorn_grid2.cu -- the batched Sinkhorn persistent kernel specialized for
// 2-D grid L^p costs of at most 32 x 32 bins (runtime/sinkhorn_cuda.c picks
// it; templates/sinkhorn.cu serves every other grid).  One 256-thread block
// owns one histogram pair for all iterations; the iteration, its checks,
// early exit, breakdown rule and outputs are those of sinkhorn.cu and of the
// CPU backend (runtime/sinkhorn.c).
//
// The grid is N0 x N1 (compile-time), row-major (axis 1 contiguous).  The
// separable operator K = K0 (x) K1 is applied as two dense 32-term passes
// through shared memory; the per-axis kernels are stored as full matrices
// Ks[u][t] (rows padded to a multiple of 4), read as one 4-wide vector per
// term that every lane of a warp shares (a broadcast):
//   pass A (axis 1): tmp[o][t] = sum_u in[o][u] K1[u][t]   lane = o, warp = t/4
//   pass B (axis 0): out[r][c] = sum_u K0[u][r] tmp[u][c]  lane = c, warp = r/4
// Rows of the state are padded to an odd length LD, so that both passes'
// lane-strided reads and writes hit 32 different banks.  A thread owns the 4
// pass-B outputs of its (warp, lane) for the whole solve, so the
// elementwise update x = a / (K y) is pass B's epilogue on registers (a, b
// never leave registers), and a half-iteration costs two barriers.  The
// check's row product K y is the next iteration's: it is kept, not redone.
//
// Log domain: values are kept in log2 units (x2 = x / ln 2, L2 = L / ln 2),
// and each output is a two-pass log-sum-exp: its exact maximum m over the
// terms, then one exp2 per term of (term - m) (the hardware's ex2 for float),
// so nothing under- or overflows whatever eps is; -inf terms give 0, an
// output whose terms are all -inf is -inf.
#include "ndf_common.cuh"

typedef NDF_SLOT(T) T;
#define LOGD NDF_SLOT(LOGD)
#define N0 NDF_SLOT(N0)
#define N1 NDF_SLOT(N1)
#define NTHREADS 256
#define NWARPS (NTHREADS / 32)
#define NDF_SK_MAXSP 8
#define N0R ((N0 + 3) / 4 * 4)
#define N1R ((N1 + 3) / 4 * 4)
#define LD (N1 | 1)
#define SZ (N0 * LD)
#define SZ4 ((SZ + 3) / 4 * 4)
// log-domain term loops: partly unrolled (a full unroll of 32 exp2 costs
// registers, and double exp2 is long code)
static constexpr int LOG_UNROLL = sizeof(T) == 4 ? 8 : 1;

static_assert(N0 >= 1 && N0 <= 32 && N1 >= 1 && N1 <= 32, "sinkhorn_grid2: at most 32 x 32");

// The parameter block of templates/sinkhorn.cu (the host fills both alike).
NDF_PARAMS(ndf_sk_params)

#define LN2 0.6931471805599453
#define LOG2E 1.4426950408889634

__device__ __forceinline__ float g2_inf(float) { return __int_as_float(0x7f800000); }
__device__ __forceinline__ double g2_inf(double) { return __longlong_as_double(0x7ff0000000000000LL); }
__device__ __forceinline__ float g2_exp2(float v) { // MUFU.EX2 (ex2(-inf) = 0)
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v));
  return r;
}
__device__ __forceinline__ double g2_exp2(double v) { return exp2(v); }
__device__ __forceinline__ float g2_log2(float v) { return log2f(v); }
__device__ __forceinline__ double g2_log2(double v) { return log2(v); }
__device__ __forceinline__ bool g2_finite(T v) { return v - v == (T)0; }

// 4 consecutive values at a 4-aligned shared address (one vector load).
__device__ __forceinline__ void ld4(const float *p, float v[4]) {
  const float4 q = *reinterpret_cast<const float4 *>(p);
  v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
}
__device__ __forceinline__ void ld4(const double *p, double v[4]) {
  const double2 q0 = reinterpret_cast<const double2 *>(p)[0], q1 = reinterpret_cast<const double2 *>(p)[1];
  v[0] = q0.x, v[1] = q0.y, v[2] = q1.x, v[3] = q1.y;
}

// out[j] = sum_u in[u * is] K[u * KR + j] (scaling) or LSE2_u(in[u * is] + K[u * KR + j]) (log2 units).
template <int NU, int KR>
__device__ __forceinline__ void pass4(const T *in, int is, const T *K, T out[4]) {
  if (!LOGD) {
#pragma unroll
    for (int j = 0; j < 4; j++) out[j] = (T)0;
#pragma unroll
    for (int u = 0; u < NU; u++) {
      T kv[4];
      ld4(K + u * KR, kv);
      const T xv = in[u * is];
#pragma unroll
      for (int j = 0; j < 4; j++) out[j] = fma(kv[j], xv, out[j]);
    }
  } else {
    T m[4], s[4];
#pragma unroll
    for (int j = 0; j < 4; j++) m[j] = -g2_inf((T)0), s[j] = (T)0;
#pragma unroll LOG_UNROLL
    for (int u = 0; u < NU; u++) {
      T kv[4];
      ld4(K + u * KR, kv);
      const T xv = in[u * is];
#pragma unroll
      for (int j = 0; j < 4; j++) m[j] = fmax(m[j], xv + kv[j]); // -inf terms never win; NaN-free
    }
#pragma unroll LOG_UNROLL
    for (int u = 0; u < NU; u++) {
      T kv[4];
      ld4(K + u * KR, kv);
      const T xv = in[u * is];
#pragma unroll
      for (int j = 0; j < 4; j++) s[j] += g2_exp2((xv + kv[j]) - m[j]); // -inf term: exp2(-inf) = 0
    }
#pragma unroll
    for (int j = 0; j < 4; j++) out[j] = m[j] == -g2_inf((T)0) ? m[j] : m[j] + g2_log2(s[j]);
  }
}

// Block-wide sum in double; every thread gets the result.
__device__ double g2_block_sum(double v, double *red) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  const int w = threadIdx.x >> 5, l = threadIdx.x & 31;
  __syncthreads();
  if (l == 0) red[w] = v;
  __syncthreads();
  double t = 0.0;
#pragma unroll
  for (int i = 0; i < NWARPS; i++) t += red[i];
  return t;
}

// Builds K0s, K1s from the axis vectors (weighted: axis `weighted` uses w_k).
__device__ void build_k(const ndf_sk_params &p, T *K0s, T *K1s, int weighted) {
  const T *m0 = p.ax + p.axoff[0] + (weighted == 0 ? p.wofs : 0);
  const T *m1 = p.ax + p.axoff[1] + (weighted == 1 ? p.wofs : 0);
  // the vectors hold deltas 0 .. n_k + 3, enough for the padded columns
  for (int e = threadIdx.x; e < N0 * N0R; e += NTHREADS) {
    const int u = e / N0R, t = e % N0R, dl = u > t ? u - t : t - u;
    K0s[e] = LOGD ? (T)((double)m0[dl] * LOG2E) : m0[dl];
  }
  for (int e = threadIdx.x; e < N1 * N1R; e += NTHREADS) {
    const int u = e / N1R, t = e % N1R, dl = u > t ? u - t : t - u;
    K1s[e] = LOGD ? (T)((double)m1[dl] * LOG2E) : m1[dl];
  }
}

// tv = K src for this thread's 4 owned elements (rows r0.., column lane);
// two barriers: before pass A (src ready) and before pass B (tmp ready).
__device__ __forceinline__ void apply(const T *src, T *tmp, const T *K0s, const T *K1s, T tv[4]) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  __syncthreads();
  if (lane < N0 && 4 * w < N1) { // pass A: row lane, columns 4w..4w+3
    T o[4];
    pass4<N1, N1R>(src + lane * LD, 1, K1s + 4 * w, o);
#pragma unroll
    for (int j = 0; j < 4; j++)
      if (4 * w + j < N1) tmp[lane * LD + 4 * w + j] = o[j];
  }
  __syncthreads();
  if (lane < N1 && 4 * w < N0) pass4<N0, N0R>(tmp + lane, LD, K0s + 4 * w, tv); // pass B
}

extern "C" __global__ void __launch_bounds__(NTHREADS) ndf_sinkhorn_grid2(const ndf_sk_params p) {
  // 16-byte aligned each: K0s, K1s rows are read as 4-wide vectors
  __shared__ __align__(16) T xs[SZ4];
  __shared__ __align__(16) T ys[SZ4];
  __shared__ __align__(16) T ts[SZ4];
  __shared__ __align__(16) T K0s[N0 * N0R];
  __shared__ __align__(16) T K1s[N1 * N1R];
  __shared__ double red[NWARPS];
  __shared__ int bad_r, bad_c; // breakdown in the row / column update (two flags: see the loop)
  const ndf_i64 k = blockIdx.x;
  if (k >= p.n) return;
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const bool own = lane < N1 && 4 * w < N0; // this thread owns elements (4w + j, lane)
  const T *a = p.a + k * (N0 * N1), *b = p.b + k * (N0 * N1);
  T ha[4], hb[4], xr[4], tv[4];
  bool valid[4];
#pragma unroll
  for (int j = 0; j < 4; j++) {
    const int r = 4 * w + j;
    valid[j] = own && r < N0;
    const int i = r * N1 + lane;
    const T av = valid[j] ? a[i] : (T)1, bv = valid[j] ? b[i] : (T)1;
    ha[j] = LOGD ? (av > (T)0 ? g2_log2(av) : -g2_inf(av)) : av;
    hb[j] = LOGD ? (bv > (T)0 ? g2_log2(bv) : -g2_inf(bv)) : bv;
    xr[j] = LOGD ? (T)0 : (T)1;
    tv[j] = (T)0;
  }
  for (int e = threadIdx.x; e < SZ4; e += NTHREADS) xs[e] = ys[e] = LOGD ? (T)0 : (T)1;
  build_k(p, K0s, K1s, -1);
  if (threadIdx.x == 0) bad_r = bad_c = 0;
  double err = g2_inf(0.0);
  int it = 0, failed = 0;
  bool have_t = false; // tv holds K y for the current y (from a check)
  while (it < p.max_iter) {
    // row update x = a / (K y)
    if (!have_t) apply(ys, ts, K0s, K1s, tv);
    have_t = false;
#pragma unroll
    for (int j = 0; j < 4; j++) {
      if (!valid[j]) continue;
      T v;
      if (LOGD) {
        v = ha[j] == -g2_inf(ha[j]) ? ha[j] : ha[j] - tv[j];
      } else if (ha[j] == (T)0) {
        v = (T)0;
      } else {
        v = ha[j] / tv[j];
        if (!(tv[j] > (T)0) || !g2_finite(v)) bad_r = 1; // all writers store 1; read after a barrier
      }
      xr[j] = v;
      xs[(4 * w + j) * LD + lane] = v;
    }
    // column update y = b / (K^T x) (the grid kernel is symmetric)
    apply(xs, ts, K0s, K1s, tv);
    // bad_r was written before apply's barriers: block-uniform.  (One flag
    // would not do: a thread could set it in the next row update while
    // another still reads it after this column update.)
    if (bad_r) { failed = it + 1; break; }
#pragma unroll
    for (int j = 0; j < 4; j++) {
      if (!valid[j]) continue;
      T v;
      if (LOGD) {
        v = hb[j] == -g2_inf(hb[j]) ? hb[j] : hb[j] - tv[j];
      } else if (hb[j] == (T)0) {
        v = (T)0;
      } else {
        v = hb[j] / tv[j];
        if (!(tv[j] > (T)0) || !g2_finite(v)) bad_c = 1;
      }
      ys[(4 * w + j) * LD + lane] = v;
    }
    __syncthreads();
    if (bad_c) { failed = it + 1; break; }
    it++;
    if (it % p.check_every == 0 || it == p.max_iter) {
      apply(ys, ts, K0s, K1s, tv);
      have_t = true;
      double e = 0.0;
#pragma unroll
      for (int j = 0; j < 4; j++) {
        if (!valid[j]) continue;
        double rr, want;
        if (LOGD) {
          rr = xr[j] == -g2_inf(xr[j]) ? 0.0 : (double)g2_exp2(xr[j] + tv[j]);
          want = ha[j] == -g2_inf(ha[j]) ? 0.0 : (double)a[(4 * w + j) * N1 + lane];
        } else {
          rr = (double)(xr[j] * tv[j]);
          want = (double)ha[j];
        }
        e += fabs(rr - want);
      }
      err = g2_block_sum(e, red);
      if (p.tol > 0.0 && err <= p.tol) break;
    }
  }
  __syncthreads();
  // out: f/eps, g/eps in natural-log units (log 0 = -inf at zero bins)
  T *px = p.x + k * (N0 * N1), *py = p.y + k * (N0 * N1);
#pragma unroll
  for (int j = 0; j < 4; j++) {
    if (!valid[j]) continue;
    const int r = 4 * w + j, i = r * N1 + lane;
    const T xv = xs[r * LD + lane], yv = ys[r * LD + lane];
    px[i] = LOGD ? (T)((double)xv * LN2) : log(xv);
    py[i] = LOGD ? (T)((double)yv * LN2) : log(yv);
  }
  if (threadIdx.x == 0) {
    p.iters[k] = it;
    p.err[k] = err;
    p.fail[k] = failed;
  }
  if (failed) return; // block-uniform
  // <P, C> = sum_k <x, (K with axis k weighted by its cost) y>
  double acc = 0.0;
#pragma unroll 1
  for (int axk = 0; axk < 2; axk++) {
    __syncthreads(); // the previous pass B has read K0s, K1s
    build_k(p, K0s, K1s, axk);
    apply(ys, ts, K0s, K1s, tv);
#pragma unroll
    for (int j = 0; j < 4; j++) {
      if (!valid[j]) continue;
      const T xv = xs[(4 * w + j) * LD + lane];
      if (LOGD) {
        if (xv > -g2_inf(xv) && tv[j] > -g2_inf(tv[j])) acc += (double)g2_exp2(xv + tv[j]);
      } else {
        acc += (double)xv * (double)tv[j];
      }
    }
  }
  acc = g2_block_sum(acc, red);
  if (threadIdx.x == 0) p.tc[k] = acc;
}
