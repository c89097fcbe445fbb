// ndf_ecc_fused.cuh -- the pieces of the fused exact-ECC kernels (templates/ecc.cu's
// ndf_ecc_pack / ndf_ecc_brick, templates/ecc_rows.cu's ndf_ecc_rows): the call's device header,
// the prefix sums of the last block of an image, the grid barrier of a cooperative launch and the
// partials' reduction with the thresholds over [min, max] (ndf_ecc_fused_thresholds).
// docs/adr/0009-euler-characteristic-curves.md.
#pragma once

typedef unsigned long long ndf_u64;

// ---- the device header of one exact call (new path, runtime/ecc_cuda.c) --------------------------
// Zeroed before the call.  nan_key: ~(least C-order index of a NaN), 0 when
// none (atomicMax keeps the least index).  bad: [min, max] is not finite.
// lo, inv_step, uniform: the binner of thresholds the scan derived on the
// device.  ticket: the scan's blocks.  The host reads nan_key and bad once,
// at the end; the curves are written only when both are 0.
struct ndf_ecc_hdr {
  double lo, inv_step, mn, mx;
  unsigned long long nan_key;
  int uniform, bad;
  unsigned ticket, pad;
};

// The record of a failed deferred check (runtime/internal.h: ndf__drec; in the context's mapped
// header block): the first kernel since the host's last report that finds a NaN / infinite input
// (ord == 0 then) writes the key and flag, then its ordinal.
struct ndf_ecc_drec {
  unsigned long long nan_key;
  int bad;
  unsigned ord;
};

__device__ __forceinline__ bool ndf_ecc_hdr_ok(const ndf_ecc_hdr *h) {
  return __ldcg(&h->nan_key) == 0ull && __ldcg(&h->bad) == 0;
}

// Prefix sum of one image's histogram (hist, sorted thresholds) written to
// out[perm[k] * ostep]; a whole block calls it.  hist is read through L2
// (it was filled by other blocks' atomics).
__device__ void ndf_ecc_prefix(const long long *hist, const long long *perm, long long *out, ndf_i64 T,
                               ndf_i64 ostep) {
  __shared__ long long wsum[8];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  long long carry = 0;
  for (ndf_i64 k0 = 0; k0 < T; k0 += 256) {
    const ndf_i64 k = k0 + threadIdx.x;
    long long v = k < T ? __ldcg(hist + k) : 0;
    for (int o = 1; o < 32; o <<= 1) {
      const long long u = __shfl_up_sync(0xffffffffu, v, o);
      if (lane >= o) v += u;
    }
    if (lane == 31) wsum[warp] = v;
    __syncthreads();
    long long before = carry, total = carry;
    for (int w = 0; w < 8; w++) {
      if (w < warp) before += wsum[w];
      total += wsum[w];
    }
    if (k < T) out[__ldcg(perm + k) * ostep] = before + v;
    carry = total;
    __syncthreads();
  }
}

// The same with the permutation of the thresholds over [min, max] that the
// fused kernel derives (ndf_ecc_pack_range): sorted position k holds
// threshold k < m ? k : k == m ? T - 1 : k - 1.
__device__ void ndf_ecc_prefix_m(const long long *hist, ndf_i64 m, long long *out, ndf_i64 T, ndf_i64 ostep) {
  __shared__ long long wsum[8];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  long long carry = 0;
  for (ndf_i64 k0 = 0; k0 < T; k0 += 256) {
    const ndf_i64 k = k0 + threadIdx.x;
    long long v = k < T ? __ldcg(hist + k) : 0;
    for (int o = 1; o < 32; o <<= 1) {
      const long long u = __shfl_up_sync(0xffffffffu, v, o);
      if (lane >= o) v += u;
    }
    if (lane == 31) wsum[warp] = v;
    __syncthreads();
    long long before = carry, total = carry;
    for (int w = 0; w < 8; w++) {
      if (w < warp) before += wsum[w];
      total += wsum[w];
    }
    if (k < T) out[(k < m ? k : k == m ? T - 1 : k - 1) * ostep] = before + v;
    carry = total;
    __syncthreads();
  }
}

// A grid-wide barrier of a cooperative launch (every block resident).  *w is
// a persistent word that is 0 or 0x80000000 between launches (runtime/
// ecc_cuda.c keeps one per context): block 0 adds 0x80000000 - (n - 1), the
// others 1, so the top bit flips exactly when all n blocks have arrived and
// the low bits come back to 0; each block waits for the flip.  No reset and
// no memset before the launch.
__device__ void ndf_ecc_grid_sync(unsigned *w) {
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned n = gridDim.x;
    const unsigned add = blockIdx.x == 0 ? 0x80000000u - (n - 1u) : 1u;
    __threadfence();
    const unsigned old = atomicAdd(w, add);
    unsigned cur;
    do {
      asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(cur) : "l"(w) : "memory");
    } while (((old ^ cur) & 0x80000000u) == 0u);
    __threadfence();
  }
  __syncthreads();
}

// ---- phase 1 and 2 of a fused launch (thresholds over [min, max]) -------------------------------
// Phase 1 end: the block's min / max (every thread passes its own; NaN operands
// ignored) and NaN flag go to part[3 * block] = (min, max as double, ~least
// C-order NaN index or 0 as an int64).  When some thread saw a NaN every thread
// calls reread(key), which atomicMax-es ~index of its own least NaN voxel into
// the shared key (a rare path).  A whole block calls it.
template <typename V, class F>
__device__ void ndf_ecc_fused_partial(double *part, V lo, V hi, bool nan, F reread) {
  __shared__ double r_lo[8], r_hi[8];
  __shared__ unsigned long long r_key;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  for (int o = 16; o > 0; o >>= 1) {
    lo = fmin(lo, __shfl_xor_sync(0xffffffffu, lo, o));
    hi = fmax(hi, __shfl_xor_sync(0xffffffffu, hi, o));
  }
  if (tid == 0) r_key = 0ull;
  if (lane == 0) {
    r_lo[warp] = (double)lo;
    r_hi[warp] = (double)hi;
  }
  if (__syncthreads_or(nan)) {
    reread(&r_key);
    __syncthreads();
  }
  if (tid == 0) {
    double a = r_lo[0], b = r_hi[0];
    for (int w = 1; w < (int)(blockDim.x >> 5); w++) {
      a = fmin(a, r_lo[w]);
      b = fmax(b, r_hi[w]);
    }
    part[3 * blockIdx.x] = a;
    part[3 * blockIdx.x + 1] = b;
    ((ndf_u64 *)part)[3 * blockIdx.x + 2] = r_key;
  }
}

// Phase 2 (after the grid barrier): every block reduces the partials (the same
// values in each), block 0 writes the header (NaN key, not-finite flag).
// Returns false on NaN or an infinite [min, max]: the caller returns at once,
// nothing is written.  Else the T sorted thresholds over [a, b] (as
// ndf_ecc_scan_finish) go to dyn[1..T] with dyn[0] = -inf, dyn[T + 1] = +inf
// (double) and, when tsf != NULL, to tsf likewise rounded down to float;
// thread 0 sets *s_lo, *s_inv, *s_uni (the evenly spaced binner) and *s_m (the
// count of t_k <= b, k < T - 1: ndf_ecc_prefix_m's permutation).  256 threads.
__device__ bool ndf_ecc_fused_thresholds(const double *part, ndf_ecc_hdr *hdr, int T, double *dyn, float *tsf,
                                         float *s_lo, float *s_inv, int *s_uni, int *s_m) {
  __shared__ double q_lo[8], q_hi[8];
  __shared__ unsigned long long q_key;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  double a = 1.0 / 0.0, b = -1.0 / 0.0;
  unsigned long long key = 0;
  for (unsigned k = tid; k < gridDim.x; k += 256) {
    a = fmin(a, __ldcg(part + 3 * k));
    b = fmax(b, __ldcg(part + 3 * k + 1));
    key = max(key, __ldcg((const ndf_u64 *)part + 3 * k + 2));
  }
  for (int o = 16; o > 0; o >>= 1) {
    a = fmin(a, __shfl_xor_sync(0xffffffffu, a, o));
    b = fmax(b, __shfl_xor_sync(0xffffffffu, b, o));
    key = max(key, __shfl_xor_sync(0xffffffffu, key, o));
  }
  if (tid == 0) q_key = 0ull;
  __syncthreads();
  if (lane == 0) {
    q_lo[warp] = a;
    q_hi[warp] = b;
    atomicMax(&q_key, key);
  }
  __syncthreads();
  a = q_lo[0];
  b = q_hi[0];
  for (int w = 1; w < 8; w++) {
    a = fmin(a, q_lo[w]);
    b = fmax(b, q_hi[w]);
  }
  key = q_key;
  const int bad = !(isfinite(a) && isfinite(b));
  if (blockIdx.x == 0 && tid == 0) {
    hdr->mn = a;
    hdr->mx = b;
    hdr->nan_key = key;
    hdr->bad = bad;
  }
  if (key != 0ull || bad) return false;
  const double span = __dsub_rn(b, a), den = (double)(T - 1);
  int m = 0;
  for (int k0 = 0; k0 < T - 1; k0 += 256) {
    const int k = k0 + tid;
    m += __syncthreads_count(k < T - 1 && __dadd_rn(a, __ddiv_rn(__dmul_rn(span, (double)k), den)) <= b);
  }
  for (int k = tid; k < T - 1; k += 256) {
    const double t = __dadd_rn(a, __ddiv_rn(__dmul_rn(span, (double)k), den));
    const int pos = k < m ? k : k + 1;
    dyn[pos + 1] = t;
    if (tsf) tsf[pos + 1] = __double2float_rd(t);
  }
  if (tid == 0) {
    dyn[m + 1] = b;
    dyn[0] = -1.0 / 0.0;
    dyn[T + 1] = 1.0 / 0.0;
    if (tsf) {
      tsf[m + 1] = __double2float_rd(b);
      tsf[0] = -1.0f / 0.0f;
      tsf[T + 1] = 1.0f / 0.0f;
    }
    const double t0 = m == 0 ? b : __dadd_rn(a, __ddiv_rn(__dmul_rn(span, 0.0), den));
    const double tl = m == T - 1 ? b : __dadd_rn(a, __ddiv_rn(__dmul_rn(span, (double)(T - 2)), den));
    *s_lo = (float)t0;
    *s_inv = (float)(tl > t0 ? __ddiv_rn(den, __dsub_rn(tl, t0)) : 0.0);
    *s_uni = tl > t0 ? 1 : 0;
    *s_m = m;
  }
  return true;
}
