// sinkhorn_dense.cu -- batched Sinkhorn for a dense d x d cost
// (runtime/sinkhorn_cuda.c): one kernel per half-iteration for all pairs,
// replayed from a CUDA graph (one graph = check_every iterations + a check).
// Same iteration, checks and outputs as templates/sinkhorn.cu and the CPU
// backend; the difference is the mapping: a block computes NB pairs x 8
// outputs, a warp one output row against the NB pairs' vectors staged in
// shared memory, so K is read once per group of NB pairs per half-iteration
// (not once per pair).  Kernels read per-pair `done` flags and the "all
// done" word and return at once when there is nothing left to do, so a
// replay after convergence costs only launch overhead.
//
// One entry point, the phase is a parameter:
//   0 init       ha/hb (log a / a), y = 0 / 1, counters and flags
//   1 row        x = ha / (K y)       (log: ha - LSE(y + L)); counts the iteration
//   2 column     y = hb / (K^T x);    commits the count
//   3 check      part[k][block] = sum of |(K y) x - a| over the block's rows
//   4 finish     err = sum of part (in block order), done = err <= tol,
//                the all-done word (one block)
//   5 cost       part[k][block] = sum of P_ij C_ij over the block's rows
//   6 total      tc = sum of part (one block)
//   7 log        scaling form: x, y = log x, log y (the outputs are f/eps, g/eps)
// The sums go through `part` in a fixed order (no atomics), so a solve is
// reproducible bit for bit, graph replay or plain launches.
// Counters: `it` is written only in phase 2 and `itn` (= it + 1) only in
// phase 1, so the breakdown iteration each reads is stable within a kernel.
#include "ndf_common.cuh"

typedef NDF_SLOT(T) T;
#define LOGD NDF_SLOT(LOGD)
#define NB 8       // pairs per block
#define ROWS 8     // outputs per block (one per warp)
#define NTHREADS (32 * ROWS)
#define CH (32768 / (NB * (int)sizeof(T))) // inputs per pair staged at a time (32 KiB)

NDF_PARAMS(ndf_skd_params)

__device__ __forceinline__ float skd_inf(float) { return __int_as_float(0x7f800000); }
__device__ __forceinline__ double skd_inf(double) { return __longlong_as_double(0x7ff0000000000000LL); }
__device__ __forceinline__ float skd_exp(float v) { return __expf(v); }
__device__ __forceinline__ double skd_exp(double v) { return exp(v); }
__device__ __forceinline__ float skd_log(float v) { return __logf(v); }
__device__ __forceinline__ double skd_log(double v) { return log(v); }

// Online log-sum-exp state (m, s): sum = s exp(m); -inf terms skipped.
__device__ __forceinline__ void lse_add(T &m, T &s, T e) {
  if (e == -skd_inf(e)) return;
  const T dl = e - m;
  const T ex = skd_exp(dl > (T)0 ? -dl : dl);
  if (dl > (T)0) {
    s = s * ex + (T)1;
    m = e;
  } else {
    s += ex;
  }
}
__device__ __forceinline__ void lse_merge(T &m, T &s, T m2, T s2) {
  if (m2 == -skd_inf(m2)) return;
  if (m == -skd_inf(m)) {
    m = m2;
    s = s2;
    return;
  }
  if (m2 > m) {
    s = s * skd_exp(m - m2) + s2;
    m = m2;
  } else {
    s += s2 * skd_exp(m2 - m);
  }
}

// One matrix-vector product for the block's NB pairs and ROWS rows: acc[q]
// (log: (m[q], s[q])) of row i = i0 + warp, summed over j, in every lane.
// mat[i * d + j] weighs input j for output i; src is the (n, d) input.
__device__ void matvec(const ndf_skd_params &p, const T *mat, const T *src, ndf_i64 p0, int np, const int *act,
                       T *stage, T *acc, T *ssum) {
  const ndf_i64 d = p.d;
  const int w = threadIdx.x >> 5, l = threadIdx.x & 31;
  const ndf_i64 i = (ndf_i64)blockIdx.x * ROWS + w;
  for (int q = 0; q < NB; q++) {
    acc[q] = LOGD ? -skd_inf((T)0) : (T)0;
    ssum[q] = (T)0;
  }
  for (ndf_i64 j0 = 0; j0 < d; j0 += CH) { // stage CH inputs of each pair
    const ndf_i64 nj = d - j0 < CH ? d - j0 : CH;
    __syncthreads();
    for (int e = threadIdx.x; e < NB * CH; e += NTHREADS) {
      const int q = e / CH;
      const ndf_i64 j = e % CH;
      stage[e] = (q < np && j < nj) ? src[(p0 + q) * d + j0 + j] : (T)0;
    }
    __syncthreads();
    if (i < d)
      for (ndf_i64 j = l; j < nj; j += 32) {
        const T kv = mat[i * d + j0 + j];
#pragma unroll
        for (int q = 0; q < NB; q++) {
          if (!act[q]) continue;
          const T xv = stage[q * CH + j];
          if (LOGD) lse_add(acc[q], ssum[q], xv + kv);
          else acc[q] = fma(kv, xv, acc[q]);
        }
      }
  }
#pragma unroll
  for (int q = 0; q < NB; q++)
    for (int o = 16; o > 0; o >>= 1) {
      const T m2 = __shfl_xor_sync(0xffffffffu, acc[q], o), s2 = __shfl_xor_sync(0xffffffffu, ssum[q], o);
      if (LOGD) lse_merge(acc[q], ssum[q], m2, s2);
      else acc[q] += m2;
    }
}

extern "C" __global__ void __launch_bounds__(NTHREADS) ndf_sinkhorn_dense(const ndf_skd_params p) {
  __shared__ T stage[NB * CH];
  __shared__ int act[NB];
  __shared__ double red[NB * ROWS];
  const ndf_i64 n = p.n, d = p.d;
  if (p.phase == 0) {
    for (ndf_i64 e = (ndf_i64)blockIdx.x * NTHREADS + threadIdx.x; e < n * d; e += (ndf_i64)gridDim.x * NTHREADS) {
      const T av = p.a[e], bv = p.b[e];
      p.ha[e] = LOGD ? (av > (T)0 ? skd_log(av) : -skd_inf(av)) : av;
      p.hb[e] = LOGD ? (bv > (T)0 ? skd_log(bv) : -skd_inf(bv)) : bv;
      p.y[e] = LOGD ? (T)0 : (T)1;
      p.x[e] = (T)0;
      if (e < n) {
        p.it[e] = 0;
        p.itn[e] = 0;
        p.fail[e] = 0;
        p.done[e] = 0;
        p.err[e] = skd_inf(0.0);
        p.tc[e] = 0.0;
      }
      if (e == 0) *p.alldone = 0;
    }
    return;
  }
  if (p.phase == 7) {
    if (!LOGD)
      for (ndf_i64 e = (ndf_i64)blockIdx.x * NTHREADS + threadIdx.x; e < n * d; e += (ndf_i64)gridDim.x * NTHREADS) {
        p.x[e] = skd_log(p.x[e]); // log 0 = -inf at zero bins
        p.y[e] = skd_log(p.y[e]);
      }
    return;
  }
  if (p.phase == 4 || p.phase == 6) { // one block
    __shared__ int alive;
    if (threadIdx.x == 0) alive = 0;
    __syncthreads();
    for (ndf_i64 k = threadIdx.x; k < n; k += NTHREADS) {
      if (p.phase == 6 ? p.fail[k] != 0 : p.done[k] != 0) continue;
      double e = 0.0;
      for (ndf_i64 bl = 0; bl < p.nblk; bl++) e += p.part[k * p.nblk + bl];
      if (p.phase == 6) {
        p.tc[k] = e;
        continue;
      }
      p.err[k] = e;
      if (p.tol > 0.0 && e <= p.tol) p.done[k] = 1;
      else atomicExch(&alive, 1); // an atomic: no shared-memory race
    }
    __syncthreads();
    if (p.phase == 4 && threadIdx.x == 0) *p.alldone = !alive;
    return;
  }
  if (p.phase != 5 && *p.alldone) return;
  const ndf_i64 p0 = (ndf_i64)blockIdx.y * NB;
  const int np = n - p0 < NB ? (int)(n - p0) : NB;
  if (threadIdx.x < NB) act[threadIdx.x] = threadIdx.x < np && (p.phase == 5 ? !p.fail[p0 + threadIdx.x] : !p.done[p0 + threadIdx.x]);
  __syncthreads();
  int any = 0;
  for (int q = 0; q < NB; q++) any |= act[q];
  if (!any) return; // block-uniform
  const int w = threadIdx.x >> 5, l = threadIdx.x & 31;
  const ndf_i64 i = (ndf_i64)blockIdx.x * ROWS + w;
  T acc[NB], ssum[NB];
  if (p.phase == 5) { // <P, C>: sum_j P_ij C_ij for row i, all active pairs (rows of P are x_i K_ij y_j)
    double tsum[NB];
    for (int q = 0; q < NB; q++) tsum[q] = 0.0;
    for (ndf_i64 j0 = 0; j0 < d; j0 += CH) {
      const ndf_i64 nj = d - j0 < CH ? d - j0 : CH;
      __syncthreads();
      for (int e = threadIdx.x; e < NB * CH; e += NTHREADS) {
        const int q = e / CH;
        const ndf_i64 j = e % CH;
        stage[e] = (q < np && j < nj) ? p.y[(p0 + q) * d + j0 + j] : (T)0;
      }
      __syncthreads();
      if (i < d)
        for (ndf_i64 j = l; j < nj; j += 32) {
          const T kv = p.M[i * d + j0 + j], cv = p.C[i * d + j0 + j];
          for (int q = 0; q < NB; q++) {
            if (!act[q]) continue;
            const T xv = p.x[(p0 + q) * d + i], yv = stage[q * CH + j];
            if (LOGD) {
              if (xv > -skd_inf(xv) && yv > -skd_inf(yv)) tsum[q] += (double)skd_exp(xv + yv + kv) * (double)cv;
            } else {
              tsum[q] += (double)(xv * kv * yv) * (double)cv;
            }
          }
        }
    }
    for (int q = 0; q < NB; q++) {
      for (int o = 16; o > 0; o >>= 1) tsum[q] += __shfl_xor_sync(0xffffffffu, tsum[q], o);
      if (l == 0) red[q * ROWS + w] = (i < d && act[q]) ? tsum[q] : 0.0;
    }
    __syncthreads();
    if (threadIdx.x < np) {
      double t = 0.0;
      for (int r = 0; r < ROWS; r++) t += red[threadIdx.x * ROWS + r];
      p.part[(p0 + threadIdx.x) * p.nblk + blockIdx.x] = t;
    }
    return;
  }
  // phases 1 (row), 3 (check): K y; phase 2 (column): K^T x
  const bool col = p.phase == 2;
  matvec(p, col ? p.MT : p.M, col ? p.x : p.y, p0, np, act, stage, acc, ssum);
  if (p.phase == 3) {
    if (l == 0)
      for (int q = 0; q < NB; q++) {
        double rr = 0.0;
        if (q < np && act[q] && i < d) {
          const ndf_i64 e = (p0 + q) * d + i;
          const T tv = LOGD ? (acc[q] == -skd_inf(acc[q]) ? acc[q] : acc[q] + skd_log(ssum[q])) : acc[q];
          const T xv = p.x[e];
          double r, want;
          if (LOGD) {
            r = xv == -skd_inf(xv) ? 0.0 : (double)skd_exp(xv + tv);
            want = p.ha[e] == -skd_inf(xv) ? 0.0 : (double)p.a[e];
          } else {
            r = (double)(xv * tv);
            want = (double)p.ha[e];
          }
          rr = fabs(r - want);
        }
        red[q * ROWS + w] = rr;
      }
    __syncthreads();
    if (threadIdx.x < np && act[threadIdx.x]) {
      double t = 0.0;
      for (int r = 0; r < ROWS; r++) t += red[threadIdx.x * ROWS + r];
      p.part[(p0 + threadIdx.x) * p.nblk + blockIdx.x] = t;
    }
    return;
  }
  if (l != 0 || i >= d) return;
  for (int q = 0; q < np; q++) {
    if (!act[q]) continue;
    const ndf_i64 k = p0 + q, e = k * d + i;
    const T tv = LOGD ? (acc[q] == -skd_inf(acc[q]) ? acc[q] : acc[q] + skd_log(ssum[q])) : acc[q];
    const T hv = col ? p.hb[e] : p.ha[e];
    T v;
    bool bad = false;
    if (LOGD) {
      v = hv == -skd_inf(hv) ? hv : hv - tv;
    } else if (hv == (T)0) {
      v = (T)0;
    } else {
      v = hv / tv;
      bad = !(tv > (T)0) || !(v - v == (T)0);
    }
    (col ? p.y : p.x)[e] = v;
    if (bad) { // the pair stops; the solve fails (the host reports the first pair)
      atomicCAS(&p.fail[k], 0, col ? p.itn[k] : p.it[k] + 1);
      p.done[k] = 1;
    }
    if (i == 0) { // the iteration count of an active pair
      if (col) p.it[k] = p.itn[k];
      else p.itn[k] = p.it[k] + 1;
    }
  }
}
