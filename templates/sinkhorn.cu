// sinkhorn.cu -- batched Sinkhorn (runtime/sinkhorn_cuda.c): one thread
// block owns one histogram pair for all iterations (a persistent kernel).
// The iteration, its checks and its outputs are those of the CPU backend
// (runtime/sinkhorn.c; the quantities are defined in ndforge.h):
//   row update     x = a / (K y)            (log: x = log a - LSE(y + L))
//   column update  y = b / (K^T x)          (log: y = log b - LSE(x + L^T))
//   check          every check_every iterations and at max_iter: the L1
//                  error of the row marginals; the pair stops when err <= tol.
// State (x, y, log a / a, log b / b, three temporaries) lives in shared
// memory when it fits (use_smem), else in a global workspace per pair; the
// layout is padded (one empty slot every 32 elements, P(i)) so that the
// separable passes read shared memory without bank conflicts.
//
// KIND 0 dense: K (or L) is read from global memory, coalesced: the row
//        update reads MT (MT[j*d + i] = M[i][j]), the column update M.
// KIND 1 grid L^p: exp(-C/eps) = K_1 x ... x K_D, applied axis by axis; the
//        1-D kernels are Toeplitz, so one vector m_k[|t - u|] per axis
//        (shared memory).  A thread computes R consecutive outputs of a line
//        with the R kernel values it needs in registers (a sliding window:
//        one new value per input), i.e. 2 shared loads per R FMAs.
// KIND 2 grid euclidean: C_ij = tab[sum_k |x_k - y_k| stride_k] computed from
//        the coordinates on the fly (tables of d values), never d x d.
// Transport cost <P, C> after the loop: grid L^p per axis k with m_k
// replaced by the weighted kernel w_k = K_k o c_k (log: L_k + log c_k);
// dense / euclidean as sum_ij P_ij C_ij directly.
//
// Scaling form: a breakdown (K y not > 0, or a scaling not finite) sets
// fail = the iteration (>= 1) and stops the pair, as the CPU backend does.
#include "ndf_common.cuh"

typedef NDF_SLOT(T) T;
#define KIND NDF_SLOT(KIND)
#define LOGD NDF_SLOT(LOGD)
#define NSP NDF_SLOT(NSP)
#define R 4
#ifndef NTHREADS
#define NTHREADS 256
#endif
#define NWARPS ((NTHREADS + 31) / 32)
#define NDF_SK_MAXSP 8

NDF_PARAMS(ndf_sk_params)

__device__ __forceinline__ ndf_i64 P(ndf_i64 i) { return i + (i >> 5); }

__device__ __forceinline__ float sk_inf(float) { return __int_as_float(0x7f800000); }
__device__ __forceinline__ double sk_inf(double) { return __longlong_as_double(0x7ff0000000000000LL); }
__device__ __forceinline__ float sk_exp(float v) { return __expf(v); }
__device__ __forceinline__ double sk_exp(double v) { return exp(v); }
__device__ __forceinline__ float sk_log(float v) { return __logf(v); }
__device__ __forceinline__ double sk_log(double v) { return log(v); }
__device__ __forceinline__ bool sk_finite(T v) { return v - v == (T)0; }

// Online log-sum-exp: one exp per term; -inf terms are skipped (no NaN).
__device__ __forceinline__ void lse_add(T &m, T &s, T e) {
  if (e == -sk_inf(e)) return;
  const T dlt = e - m;
  const T ex = sk_exp(dlt > (T)0 ? -dlt : dlt);
  if (dlt > (T)0) {
    s = s * ex + (T)1;
    m = e;
  } else {
    s += ex;
  }
}
__device__ __forceinline__ T lse_end(T m, T s) { return m == -sk_inf(m) ? m : m + sk_log(s); }

// Block-wide sum in double; every thread gets the result.
__device__ double block_sum(double v, double *red) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  const int w = threadIdx.x >> 5, l = threadIdx.x & 31;
  __syncthreads();
  if (l == 0) red[w] = v;
  __syncthreads();
  double t = 0.0;
  for (int i = 0; i < NWARPS; i++) t += red[i];
  return t;
}

#if KIND == 1
// One axis of the separable operator: out = M_k in along axis k (vector mv).
__device__ void axis_pass(const ndf_sk_params &p, int k, const T *mv, bool logd, const T *in, T *out) {
  // 32-bit indices: d <= 2^24 (ndf_sinkhorn_create); the decomposition of an
  // item costs four integer divisions, once per pass.
  const int nk = (int)p.shape[k], st = (int)p.stride[k];
  const int outer = (int)(p.d / ((ndf_i64)nk * st)), nc = (nk + R - 1) / R;
  const int items = nc * outer * st;
  for (int it = threadIdx.x; it < items; it += NTHREADS) {
    const int r = it % st, q = it / st, o = q % outer, c = q / outer;
    const int base = o * nk * st + r, t0 = c * R;
    T w[R], acc[R], s[R];
#pragma unroll
    for (int j = 0; j < R; j++) {
      w[j] = mv[t0 + j];
      acc[j] = logd ? -sk_inf((T)0) : (T)0;
      s[j] = (T)0;
    }
    int idx = base;
#pragma unroll 4
    for (int u = 0; u < nk; u++, idx += st) {
      const T xv = in[idx + (idx >> 5)];
      if (logd) {
#pragma unroll
        for (int j = 0; j < R; j++) lse_add(acc[j], s[j], xv + w[j]);
      } else {
#pragma unroll
        for (int j = 0; j < R; j++) acc[j] = fma(w[j], xv, acc[j]);
      }
#pragma unroll
      for (int j = R - 1; j > 0; j--) w[j] = w[j - 1];
      const int dl = t0 - u - 1;
      w[0] = mv[dl < 0 ? -dl : dl];
    }
#pragma unroll
    for (int j = 0; j < R; j++)
      if (t0 + j < nk) out[P(base + (t0 + j) * st)] = logd ? lse_end(acc[j], s[j]) : acc[j];
  }
}
#endif

// dst = K src (row: the row update's operator; the grid kernels are symmetric).
// weighted >= 0 (grid L^p): axis `weighted` uses its weighted vector.
__device__ void apply(const ndf_sk_params &p, const T *src, T *dst, bool row, int weighted, T *w1, T *w2,
                      const T *axs) {
#if KIND == 1
  (void)row;
  const T *cur = src;
  for (int k = 0; k < NSP; k++) {
    T *out = (k == NSP - 1) ? dst : ((k % 2 == 0) ? w1 : w2);
    const T *mv = axs + p.axoff[k] + (k == weighted ? p.wofs : 0);
    __syncthreads();
    axis_pass(p, k, mv, LOGD, cur, out);
    cur = out;
  }
  __syncthreads();
#elif KIND == 0
  (void)weighted, (void)w1, (void)w2, (void)axs;
  const T *mat = row ? p.MT : p.M;
  const ndf_i64 d = p.d;
  __syncthreads();
  for (ndf_i64 i = threadIdx.x; i < d; i += NTHREADS) {
    T m = LOGD ? -sk_inf((T)0) : (T)0, s = (T)0;
    for (ndf_i64 j = 0; j < d; j++) {
      const T kv = mat[j * d + i], xv = src[P(j)];
      if (LOGD) lse_add(m, s, xv + kv);
      else m = fma(kv, xv, m);
    }
    dst[P(i)] = LOGD ? lse_end(m, s) : m;
  }
  __syncthreads();
#else
  (void)row, (void)weighted, (void)w1, (void)w2, (void)axs;
  const ndf_i64 d = p.d;
  __syncthreads();
  for (ndf_i64 i = threadIdx.x; i < d; i += NTHREADS) {
    ndf_i64 ci[NSP], cj[NSP];
    ndf_i64 r = i;
#pragma unroll
    for (int k = NSP - 1; k >= 0; k--) {
      ci[k] = r % p.shape[k];
      r /= p.shape[k];
      cj[k] = 0;
    }
    T m = LOGD ? -sk_inf((T)0) : (T)0, s = (T)0;
    for (ndf_i64 j = 0; j < d; j++) {
      ndf_i64 off = 0;
#pragma unroll
      for (int k = 0; k < NSP; k++) off += (ci[k] > cj[k] ? ci[k] - cj[k] : cj[k] - ci[k]) * p.stride[k];
      const T kv = p.tabm[off], xv = src[P(j)];
      if (LOGD) lse_add(m, s, xv + kv);
      else m = fma(kv, xv, m);
#pragma unroll
      for (int k = NSP - 1; k >= 0; k--) { // next j in raster order
        if (++cj[k] < p.shape[k]) break;
        cj[k] = 0;
      }
    }
    dst[P(i)] = LOGD ? lse_end(m, s) : m;
  }
  __syncthreads();
#endif
}

// Half an iteration's elementwise step: x = h / t (log: h - t); 1 = breakdown.
__device__ bool update(const ndf_sk_params &p, const T *h, const T *t, T *x, int *bad) {
  for (ndf_i64 i = threadIdx.x; i < p.d; i += NTHREADS) {
    const ndf_i64 q = P(i);
    const T hv = h[q], tv = t[q];
    if (LOGD) {
      x[q] = hv == -sk_inf(hv) ? hv : hv - tv;
    } else if (hv == (T)0) {
      x[q] = (T)0;
    } else {
      const T v = hv / tv;
      x[q] = v;
      if (!(tv > (T)0) || !sk_finite(v)) atomicExch(bad, 1); // an atomic: no shared-memory race
    }
  }
  __syncthreads();
  return *bad != 0;
}

extern "C" __global__ void __launch_bounds__(NTHREADS) ndf_sinkhorn(const ndf_sk_params p) {
  extern __shared__ __align__(16) unsigned char ndf_sk_smem[];
  __shared__ double red[NWARPS];
  __shared__ int bad;
  const ndf_i64 k = blockIdx.x, d = p.d, dp = p.dp;
  if (k >= p.n) return;
  T *base = p.use_smem ? (T *)ndf_sk_smem : p.ws + k * 7 * dp;
  T *x = base, *y = base + dp, *t = base + 2 * dp, *w1 = base + 3 * dp, *w2 = base + 4 * dp;
  T *ha = base + 5 * dp, *hb = base + 6 * dp;
  const T *axs = p.ax;
#if KIND == 1
  if (p.use_smem) { // the axis vectors follow the state
    T *sv = base + 7 * dp;
    for (ndf_i64 i = threadIdx.x; i < p.axlen; i += NTHREADS) sv[i] = p.ax[i];
    axs = sv;
  }
#endif
  const T *a = p.a + k * d, *b = p.b + k * d;
  for (ndf_i64 i = threadIdx.x; i < d; i += NTHREADS) {
    const T av = a[i], bv = b[i];
    ha[P(i)] = LOGD ? (av > (T)0 ? sk_log(av) : -sk_inf(av)) : av;
    hb[P(i)] = LOGD ? (bv > (T)0 ? sk_log(bv) : -sk_inf(bv)) : bv;
    y[P(i)] = LOGD ? (T)0 : (T)1;
  }
  if (threadIdx.x == 0) bad = 0;
  __syncthreads();
  double err = sk_inf(0.0);
  int it = 0, failed = 0;
  while (it < p.max_iter) {
    apply(p, y, t, true, -1, w1, w2, axs);
    if (update(p, ha, t, x, &bad)) { failed = it + 1; break; }
    apply(p, x, t, false, -1, w1, w2, axs);
    if (update(p, hb, t, y, &bad)) { failed = it + 1; break; }
    it++;
    if (it % p.check_every == 0 || it == p.max_iter) {
      apply(p, y, t, true, -1, w1, w2, axs);
      double e = 0.0;
      for (ndf_i64 i = threadIdx.x; i < d; i += NTHREADS) {
        const T xv = x[P(i)], tv = t[P(i)], av = ha[P(i)];
        double rr, want;
        if (LOGD) {
          rr = xv == -sk_inf(xv) ? 0.0 : (double)sk_exp(xv + tv);
          want = av == -sk_inf(av) ? 0.0 : (double)a[i];
        } else {
          rr = (double)(xv * tv);
          want = (double)av;
        }
        e += fabs(rr - want);
      }
      err = block_sum(e, red);
      if (p.tol > 0.0 && err <= p.tol) break;
    }
  }
  __syncthreads();
  for (ndf_i64 i = threadIdx.x; i < d; i += NTHREADS) { // out: f/eps, g/eps (log 0 = -inf at zero bins)
    p.x[k * d + i] = LOGD ? x[P(i)] : sk_log(x[P(i)]);
    p.y[k * d + i] = LOGD ? y[P(i)] : sk_log(y[P(i)]);
  }
  if (threadIdx.x == 0) {
    p.iters[k] = it;
    p.err[k] = err;
    p.fail[k] = failed;
  }
  if (failed) return; // block-uniform
  // <P, C>
  double acc = 0.0;
#if KIND == 1
  for (int ax = 0; ax < NSP; ax++) {
    apply(p, y, t, true, ax, w1, w2, axs);
    for (ndf_i64 i = threadIdx.x; i < d; i += NTHREADS) {
      const T xv = x[P(i)], tv = t[P(i)];
      if (LOGD) {
        if (xv > -sk_inf(xv) && tv > -sk_inf(tv)) acc += (double)sk_exp(xv + tv);
      } else {
        acc += (double)xv * (double)tv;
      }
    }
  }
#else
  __syncthreads();
  for (ndf_i64 i = threadIdx.x; i < d; i += NTHREADS) {
    const T xv = x[P(i)];
    if (LOGD ? xv == -sk_inf(xv) : xv == (T)0) continue;
#if KIND == 2
    ndf_i64 ci[NSP], cj[NSP];
    ndf_i64 r = i;
#pragma unroll
    for (int q = NSP - 1; q >= 0; q--) {
      ci[q] = r % p.shape[q];
      r /= p.shape[q];
      cj[q] = 0;
    }
#endif
    for (ndf_i64 j = 0; j < d; j++) {
      T kv, cv;
#if KIND == 0
      kv = p.MT[j * d + i];
      cv = p.CT[j * d + i];
#else
      ndf_i64 off = 0;
#pragma unroll
      for (int q = 0; q < NSP; q++) off += (ci[q] > cj[q] ? ci[q] - cj[q] : cj[q] - ci[q]) * p.stride[q];
      kv = p.tabm[off];
      cv = p.tab[off];
#pragma unroll
      for (int q = NSP - 1; q >= 0; q--) {
        if (++cj[q] < p.shape[q]) break;
        cj[q] = 0;
      }
#endif
      const T yv = y[P(j)];
      if (LOGD) {
        if (yv > -sk_inf(yv)) acc += (double)sk_exp(xv + yv + kv) * (double)cv;
      } else {
        acc += (double)(xv * kv * yv) * (double)cv;
      }
    }
  }
#endif
  acc = block_sum(acc, red);
  if (threadIdx.x == 0) p.tc[k] = acc;
}
