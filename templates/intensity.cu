// intensity.cu -- histograms, percentiles, windows and normalizations, and
// histogram equalization (runtime/ops/intensity/intensity_cuda.c drives them).
//
// Scanning kernels (one parameter struct, ndf_ity_scan_params) walk the
// images in chunks of NDF_ITY_CHUNK elements: work item w is chunk
// w % cpi of image w / cpi, so a block stays on one image for consecutive
// items and flushes what it gathered (block-local histograms, partial
// statistics) only when its image changes or it is done:
//   ndf_ity_stats    per image: the least and greatest value (order keys:
//                    st[0] = ~min key, st[1] = max key), NaN count st[2],
//                    count st[3] and sum st[4] of the (masked) values
//                    (pass 0), or the sum of squared deviations from the
//                    mean st[5] (pass 1)
//   ndf_ity_radix    one pass of the radix select: pass 0 histograms the top
//                    digit (up to 11 bits) of every value's order key (and
//                    counts NaN); later passes histogram the next digit of the
//                    values whose key agrees with a target's prefix so far
//   ndf_ity_hist     histogram counts or weighted sums per image: the bin by
//                    binary search in the image's edges (mode 0) or the
//                    integer value minus the image's minimum (mode 1)
//   ndf_ity_apply    the elementwise result (OP: 0 clip, 1 window, 2 z-score,
//                    3 interpolated cdf of a float image, 4 cdf of an integer
//                    image) into the output's dtype and strides
// Small kernels (ndf_ity_small_params), one thread per image / bin (select: a warp a target):
//   ndf_ity_select   picks each target's next key digit from its histogram (one
//                    warp per target; a later pass's select clears the bins it read)
//   ndf_ity_lerp     NumPy's linear quantile from the two selected values
//   ndf_ity_finish   per-image (lo, hi) = (min, max) (mode 0) or (mean, std) (mode 1)
//   ndf_ity_edges    equal-width bin edges per image (np.linspace in float64,
//                    rounded to float32 for float32 data); status[0] when a
//                    detected range is not finite
//   ndf_ity_density  float64 histogram: counts or weighted sums, / width / total
//   ndf_ity_cdf      equalization tables: bin centres xp and the cdf fp
//   ndf_ity_store    float64 results into the output's dtype and strides
//   ndf_ity_store_count  int64 counts into the output's strides
//
// Every formula that NumPy defines operation by operation is evaluated with
// explicitly rounded operations (__dadd_rn, ...), so no contraction into
// fused multiply-adds changes a bit: the CPU backend computes the same.
// Keys order values as unsigned integers: floats by sign-magnitude flip
// (-0.0 below +0.0, NaN beyond the infinities), signed integers by their
// flipped sign bit.
#include "ndf_common.cuh"

typedef NDF_SLOT(T) T;     // the data's element type
typedef NDF_SLOT(OUT) OUT; // the output's element type (apply, store)
typedef NDF_SLOT(W) W;     // weights' or mask's element type
#define OP NDF_SLOT(OP)    // ndf_ity_apply's formula

typedef unsigned long long ndf_u64;

#define NDF_ITY_CHUNK 4096
#define NDF_ITY_SMEM_BINS 8192 // block-local histograms up to this many bins
#define NDF_ITY_TARGETS 16     // targets per radix launch

// ---- order keys ---------------------------------------------------------------------------------
__device__ __forceinline__ ndf_u64 ity_key(unsigned char v) { return v; }
__device__ __forceinline__ ndf_u64 ity_key(signed char v) { return (unsigned char)v ^ 0x80u; }
__device__ __forceinline__ ndf_u64 ity_key(unsigned short v) { return v; }
__device__ __forceinline__ ndf_u64 ity_key(short v) { return (unsigned short)v ^ 0x8000u; }
__device__ __forceinline__ ndf_u64 ity_key(unsigned int v) { return v; }
__device__ __forceinline__ ndf_u64 ity_key(int v) { return (unsigned)v ^ 0x80000000u; }
__device__ __forceinline__ ndf_u64 ity_key(long long v) { return (ndf_u64)v ^ (1ull << 63); }
__device__ __forceinline__ ndf_u64 ity_key(unsigned long long v) { return v; }
__device__ __forceinline__ ndf_u64 ity_key(float v) {
  const unsigned u = __float_as_uint(v);
  return (u & 0x80000000u) ? (ndf_u64)(~u) : (ndf_u64)(u | 0x80000000u);
}
__device__ __forceinline__ ndf_u64 ity_key(double v) {
  const ndf_u64 u = (ndf_u64)__double_as_longlong(v);
  return (u >> 63) ? ~u : (u | (1ull << 63));
}
// The value of a key, as double (exact for every type up to 32 bits; 64-bit
// integers round to nearest, as NumPy's float64 arithmetic on them does).
__device__ __forceinline__ double ity_unkey(ndf_u64 k, unsigned char) { return (double)(unsigned char)k; }
__device__ __forceinline__ double ity_unkey(ndf_u64 k, signed char) { return (double)(signed char)(unsigned char)(k ^ 0x80u); }
__device__ __forceinline__ double ity_unkey(ndf_u64 k, unsigned short) { return (double)(unsigned short)k; }
__device__ __forceinline__ double ity_unkey(ndf_u64 k, short) { return (double)(short)(unsigned short)(k ^ 0x8000u); }
__device__ __forceinline__ double ity_unkey(ndf_u64 k, unsigned int) { return (double)(unsigned int)k; }
__device__ __forceinline__ double ity_unkey(ndf_u64 k, int) { return (double)(int)(unsigned)(k ^ 0x80000000u); }
__device__ __forceinline__ double ity_unkey(ndf_u64 k, long long) { return (double)(long long)(k ^ (1ull << 63)); }
__device__ __forceinline__ double ity_unkey(ndf_u64 k, unsigned long long) { return (double)k; }
__device__ __forceinline__ double ity_unkey(ndf_u64 k, float) {
  unsigned u = (unsigned)k;
  u = (u & 0x80000000u) ? (u & 0x7fffffffu) : ~u;
  return (double)__uint_as_float(u);
}
__device__ __forceinline__ double ity_unkey(ndf_u64 k, double) {
  const ndf_u64 u = (k >> 63) ? (k & ~(1ull << 63)) : ~k;
  return __longlong_as_double((long long)u);
}
#define NDF_ITY_KEYBITS ((int)(8 * sizeof(T)))
#define NDF_ITY_F32 (sizeof(T) == 4 && (T)0.5 != (T)0)

// The element offset of element j of image b (C order within the image).  Not inlined: the strided
// path calls it in loops unrolled 16 times, and sixteen inlined copies of its 64-bit divisions made
// NVRTC take seconds over ndf_ity_apply and ndf_ity_radix (the contiguous path never calls it).
// The scanning kernels take their parameters __grid_constant__, so that the shape and stride
// arrays it reads stay in parameter space: without it every thread copied them to local memory at
// entry, the contiguous path too.
__device__ __noinline__ ndf_i64 ity_off(ndf_i64 b, ndf_i64 j, int nb, int ndim, const ndf_i64 *shape,
                                           const ndf_i64 *str) {
  ndf_i64 off = 0;
  for (int d = ndim - 1; d >= nb; d--) {
    const ndf_i64 k = j / shape[d];
    off += (j - k * shape[d]) * str[d];
    j = k;
  }
  for (int d = nb - 1; d >= 0; d--) {
    const ndf_i64 k = b / shape[d];
    off += (b - k * shape[d]) * str[d];
    b = k;
  }
  return off;
}

// ---- warp reductions ------------------------------------------------------------------------------
__device__ __forceinline__ ndf_u64 ity_wmax(ndf_u64 v) {
  for (int o = 16; o > 0; o >>= 1) {
    const ndf_u64 u = __shfl_down_sync(0xffffffffu, v, o);
    v = u > v ? u : v;
  }
  return v;
}
__device__ __forceinline__ ndf_u64 ity_wsum(ndf_u64 v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ double ity_wsumd(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

// The block's sum of v (lane 0 of each warp, then the 8 warps in order: the same order on every
// run and every device); every thread of the block must call it.  red: 8 doubles of shared memory.
__device__ __forceinline__ double ity_bsumv(double v, double *red) {
  v = ity_wsumd(v);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  double r = red[0];
  for (int i = 1; i < (int)(blockDim.x >> 5); i++) r = __dadd_rn(r, red[i]);
  __syncthreads();
  return r;
}
// The block's sum of a[0..n-1] in a fixed order (thread t: a[t], a[t + 256], ...).
__device__ __forceinline__ double ity_bsum(const double *a, ndf_i64 n, double *red) {
  double v = 0;
  for (ndf_i64 i = threadIdx.x; i < n; i += blockDim.x) v = __dadd_rn(v, a[i]);
  return ity_bsumv(v, red);
}

NDF_PARAMS(ndf_ity_scan_params)

__device__ __forceinline__ ndf_i64 ity_xoff(const ndf_ity_scan_params &p, ndf_i64 b, ndf_i64 j) {
  return p.contig ? b * p.m + j : ity_off(b, j, p.nb, p.ndim, p.shape, p.xstr);
}
__device__ __forceinline__ ndf_i64 ity_woff(const ndf_ity_scan_params &p, ndf_i64 b, ndf_i64 j) {
  return p.contig ? b * p.m + j : ity_off(b, j, p.nb, p.ndim, p.shape, p.wstr);
}
// This thread's values of a chunk (element j0 + it * 256 + threadIdx.x of image b, it = 0..15),
// all loads issued before any is used, so that a thread keeps 16 in flight.
__device__ __forceinline__ void ity_load_chunk(const ndf_ity_scan_params &p, ndf_i64 b, ndf_i64 j0,
                                               T (&xs)[NDF_ITY_CHUNK / 256]) {
  if (p.contig && j0 + NDF_ITY_CHUNK <= p.m) {
    const T *x = p.x + b * p.m + j0 + threadIdx.x;
#pragma unroll
    for (int it = 0; it < NDF_ITY_CHUNK / 256; it++) xs[it] = x[it * 256];
  } else {
#pragma unroll
    for (int it = 0; it < NDF_ITY_CHUNK / 256; it++) {
      const ndf_i64 j = j0 + it * 256 + threadIdx.x;
      xs[it] = j < p.m ? p.x[ity_xoff(p, b, j)] : (T)0;
    }
  }
}
__device__ __forceinline__ bool ity_in_mask(const ndf_ity_scan_params &p, ndf_i64 b, ndf_i64 j) {
  return p.wmode != 2 || p.w[ity_woff(p, b, j)] != (W)0;
}

// ---- statistics -------------------------------------------------------------------------------------
#if NDF_KERNEL(ndf_ity_stats)
extern "C" __global__ void __launch_bounds__(256) ndf_ity_stats(const __grid_constant__ ndf_ity_scan_params p) {
  __shared__ double red[8];
  const ndf_i64 items = p.nimg * p.cpi;
  ndf_i64 cur = -2; // no image yet (b = -1 ends the walk)
  ndf_u64 nmin = 0, kmax = 0, nan = 0, cnt = 0;
  double sum = 0;
  double mean = 0;
  for (ndf_i64 w = blockIdx.x;; w += gridDim.x) {
    const ndf_i64 b = w < items ? w / p.cpi : -1;
    if (b != cur) {
      if (cur >= 0) { // flush the partial statistics of image cur
        ndf_u64 *st = p.st + cur * 8;
        nmin = ity_wmax(nmin);
        kmax = ity_wmax(kmax);
        nan = ity_wsum(nan);
        cnt = ity_wsum(cnt);
        if (!p.part) sum = ity_wsumd(sum);
        if ((threadIdx.x & 31) == 0) {
          if (p.pass == 0) {
            if (cnt) {
              atomicMax(st + 0, nmin);
              atomicMax(st + 1, kmax);
              atomicAdd(st + 3, cnt);
            }
            if (nan) atomicAdd(st + 2, nan);
            if (!p.part) atomicAdd((double *)(st + 4), sum);
          } else if (!p.part) {
            atomicAdd((double *)(st + 5), sum);
          }
        }
      }
      if (b < 0) break;
      cur = b;
      nmin = kmax = nan = cnt = 0;
      sum = 0;
      if (p.pass == 1) {
        const ndf_u64 *st = p.st + b * 8;
        const double s0 = p.part ? ity_bsum(p.part + b * p.cpi, p.cpi, red) : __longlong_as_double((long long)st[4]);
        mean = __ddiv_rn(s0, (double)st[3]);
      }
    }
    const ndf_i64 j0 = (w - b * p.cpi) * NDF_ITY_CHUNK;
    for (int it = 0; it < NDF_ITY_CHUNK / 256; it++) {
      const ndf_i64 j = j0 + it * 256 + threadIdx.x;
      if (j >= p.m || !ity_in_mask(p, b, j)) continue;
      const T x = p.x[ity_xoff(p, b, j)];
      if (p.pass == 0) {
        if (x != x) {
          nan++;
        } else {
          const ndf_u64 k = ity_key(x);
          nmin = ~k > nmin ? ~k : nmin;
          kmax = k > kmax ? k : kmax;
        }
        cnt++;
        sum = __dadd_rn(sum, (double)x);
      } else {
        const double d = __dsub_rn((double)x, mean);
        sum = __dadd_rn(sum, __dmul_rn(d, d));
      }
    }
    if (p.part) { // this chunk's sum, in a fixed order
      const double t = ity_bsumv(sum, red);
      if (threadIdx.x == 0) p.part[p.pass * items + w] = t;
      sum = 0;
    }
  }
}
#endif

// ---- radix select -------------------------------------------------------------------------------------
// A pass counts one digit of nbins = 2^bits values (8 <= bits <= 11) at shift.  Dynamic shared
// memory: nbins counters per target of the launch (one set in pass 0).  hist0 and hist keep
// tstride counters per image / target (the call's widest digit).
#if NDF_KERNEL(ndf_ity_radix)
extern "C" __global__ void __launch_bounds__(256) ndf_ity_radix(const __grid_constant__ ndf_ity_scan_params p) {
  extern __shared__ unsigned ity_sh[];
  __shared__ ndf_u64 pf[NDF_ITY_TARGETS];
  const int nt = p.pass == 0 ? 1 : p.t1 - p.t0;
  const int nbins = (int)p.nbins, bits = __ffs(nbins) - 1;
  const ndf_i64 items = p.nimg * p.cpi;
  for (int i = threadIdx.x; i < nt * nbins; i += 256) ity_sh[i] = 0;
  ndf_i64 cur = -2; // no image yet (b = -1 ends the walk)
  ndf_u64 nan = 0;
  for (ndf_i64 w = blockIdx.x;; w += gridDim.x) {
    const ndf_i64 b = w < items ? w / p.cpi : -1;
    if (b != cur) {
      __syncthreads();
      if (cur >= 0) {
        for (int i = threadIdx.x; i < nt * nbins; i += 256) {
          const unsigned c = ity_sh[i];
          if (c) {
            const int t = i >> bits, d = i & (nbins - 1);
            if (p.pass == 0) atomicAdd(p.hist0 + cur * p.tstride + d, (ndf_u64)c);
            else atomicAdd(p.hist + (cur * p.ntpi + p.t0 + t) * p.tstride + d, (ndf_u64)c);
            ity_sh[i] = 0;
          }
        }
        if (p.pass == 0) {
          nan = ity_wsum(nan);
          if ((threadIdx.x & 31) == 0 && nan) atomicAdd(p.st + cur * 8 + 2, nan);
          nan = 0;
        }
      }
      if (b < 0) break;
      cur = b;
      if (p.pass > 0 && threadIdx.x < nt) pf[threadIdx.x] = p.prefix[b * p.ntpi + p.t0 + threadIdx.x];
      __syncthreads();
    }
    const ndf_i64 j0 = (w - b * p.cpi) * NDF_ITY_CHUNK;
    T xs[NDF_ITY_CHUNK / 256];
    ity_load_chunk(p, b, j0, xs);
#pragma unroll
    for (int it = 0; it < NDF_ITY_CHUNK / 256; it++) {
      const ndf_i64 j = j0 + it * 256 + threadIdx.x;
      if (j >= p.m) continue;
      const T x = xs[it];
      const ndf_u64 k = ity_key(x);
      const unsigned digit = (unsigned)(k >> p.shift) & (unsigned)(nbins - 1);
      if (p.pass == 0) {
        if (x != x) nan++;
        atomicAdd(ity_sh + digit, 1u);
      } else { // the digits above this one (shift + bits < 64 after pass 0)
        const ndf_u64 hi = k >> (p.shift + bits);
        for (int t = 0; t < nt; t++)
          if ((pf[t] >> (p.shift + bits)) == hi) atomicAdd(ity_sh + (t << bits) + digit, 1u);
      }
    }
  }
}
#endif

// ---- histogram ----------------------------------------------------------------------------------------
// The bin of x among e[0..n] (the largest i < n with e[i] <= x; x == e[n] in bin n - 1), -1 outside or NaN.
__device__ __forceinline__ ndf_i64 ity_bin(double x, const double *e, ndf_i64 n) {
  if (!(x >= e[0] && x <= e[n])) return -1;
  ndf_i64 lo = 0, hi = n;
  while (hi - lo > 1) {
    const ndf_i64 mid = lo + (hi - lo) / 2;
    if (e[mid] <= x) lo = mid;
    else hi = mid;
  }
  return lo;
}

// Dynamic shared memory: nbins counters when the block counts locally (p.local).
#if NDF_KERNEL(ndf_ity_hist)
extern "C" __global__ void __launch_bounds__(256) ndf_ity_hist(const __grid_constant__ ndf_ity_scan_params p) {
  extern __shared__ unsigned ity_sh[];
  const ndf_i64 items = p.nimg * p.cpi, n = p.nbins;
  if (p.local)
    for (int i = threadIdx.x; i < n; i += 256) ity_sh[i] = 0;
  ndf_i64 cur = -2; // no image yet (b = -1 ends the walk)
  double lo = 0;
  for (ndf_i64 w = blockIdx.x;; w += gridDim.x) {
    const ndf_i64 b = w < items ? w / p.cpi : -1;
    if (b != cur) {
      if (p.local) {
        __syncthreads();
        if (cur >= 0)
          for (int i = threadIdx.x; i < n; i += 256) {
            const unsigned c = ity_sh[i];
            if (c) {
              atomicAdd(p.hist + cur * n + i, (ndf_u64)c);
              ity_sh[i] = 0;
            }
          }
        __syncthreads();
      }
      if (b < 0) break;
      cur = b;
      if (p.mode == 1) lo = ity_unkey(~p.st[b * 8], (T)0);
    }
    const double *e = p.tab + b * p.tstride;
    const ndf_i64 j0 = (w - b * p.cpi) * NDF_ITY_CHUNK;
    for (int it = 0; it < NDF_ITY_CHUNK / 256; it++) {
      const ndf_i64 j = j0 + it * 256 + threadIdx.x;
      if (j >= p.m || !ity_in_mask(p, b, j)) continue;
      const double x = (double)p.x[ity_xoff(p, b, j)];
      const ndf_i64 k = p.mode == 1 ? (ndf_i64)(x - lo) : ity_bin(x, e, n);
      if (k < 0) continue;
      if (p.wmode == 1) atomicAdd(p.hsum + b * n + k, (double)p.w[ity_woff(p, b, j)]);
      else if (p.local) atomicAdd(ity_sh + k, 1u);
      else atomicAdd(p.hist + b * n + k, 1ull);
    }
  }
}
#endif

// ---- the elementwise pass -------------------------------------------------------------------------------
// np.interp(x, xp, fp) with NumPy's rules (n >= 1).
__device__ __forceinline__ double ity_interp(double x, const double *xp, const double *fp, ndf_i64 n) {
  if (x != x) return x;
  if (x < xp[0]) return fp[0];
  if (x > xp[n - 1]) return fp[n - 1];
  ndf_i64 lo = 0, hi = n;
  while (hi - lo > 1) {
    const ndf_i64 mid = lo + (hi - lo) / 2;
    if (xp[mid] <= x) lo = mid;
    else hi = mid;
  }
  if (lo == n - 1 || xp[lo] == x) return fp[lo];
  const double slope = __ddiv_rn(__dsub_rn(fp[lo + 1], fp[lo]), __dsub_rn(xp[lo + 1], xp[lo]));
  double r = __dadd_rn(__dmul_rn(slope, __dsub_rn(x, xp[lo])), fp[lo]);
  if (r != r) {
    r = __dadd_rn(__dmul_rn(slope, __dsub_rn(x, xp[lo + 1])), fp[lo + 1]);
    if (r != r && fp[lo] == fp[lo + 1]) r = fp[lo];
  }
  return r;
}

#if NDF_KERNEL(ndf_ity_apply)
// clip of a 64-bit integer into its own dtype, compared and stored as integers (through double a value
// beyond 2^53 would come back rounded); lo and hi as in the CPU backend's clip_s64 / clip_u64: integers
// in the dtype's range, whose maximum as a double is 2^63 (2^64).  Other types: unused.
template <typename X> __device__ __forceinline__ X ity_clip64(X x, double, double) { return x; }
__device__ __forceinline__ long long ity_clip64(long long x, double lo, double hi) {
  if (lo >= 9223372036854775808.0) return 0x7fffffffffffffffll;
  if (x < (long long)lo) return (long long)lo;
  return hi < 9223372036854775808.0 && x > (long long)hi ? (long long)hi : x;
}
__device__ __forceinline__ unsigned long long ity_clip64(unsigned long long x, double lo, double hi) {
  if (lo >= 18446744073709551616.0) return 0xffffffffffffffffull;
  if (x < (unsigned long long)lo) return (unsigned long long)lo;
  return hi < 18446744073709551616.0 && x > (unsigned long long)hi ? (unsigned long long)hi : x;
}
template <typename X, typename Y> struct ity_same { static const bool v = false; };
template <typename X> struct ity_same<X, X> { static const bool v = true; };

extern "C" __global__ void __launch_bounds__(256) ndf_ity_apply(const __grid_constant__ ndf_ity_scan_params p) {
  const ndf_i64 items = p.nimg * p.cpi;
  for (ndf_i64 w = blockIdx.x; w < items; w += gridDim.x) {
    const ndf_i64 b = w / p.cpi, j0 = (w - b * p.cpi) * NDF_ITY_CHUNK;
    double lo = p.c0, hi = p.c1;
    if (p.prm) {
      lo = p.prm[2 * b];
      hi = p.prm[2 * b + 1];
    }
#if OP == 4
    const ndf_u64 *st = p.st + b * 8;
    const bool none = st[3] == 0;
    lo = ity_unkey(~st[0], (T)0);
    hi = ity_unkey(st[1], (T)0);
#endif
    T xs[NDF_ITY_CHUNK / 256];
    ity_load_chunk(p, b, j0, xs);
#pragma unroll
    for (int it = 0; it < NDF_ITY_CHUNK / 256; it++) {
      const ndf_i64 j = j0 + it * 256 + threadIdx.x;
      if (j >= p.m) continue;
      const double x = (double)xs[it];
      double r;
#if OP == 0
      if (ity_same<T, OUT>::v && sizeof(T) == 8 && (T)0.5 == (T)0) {
        const ndf_i64 o = p.contig ? b * p.m + j : ity_off(b, j, p.nb, p.ndim, p.shape, p.ostr);
        p.out[o] = (OUT)ity_clip64(xs[it], lo, hi);
        continue;
      }
      r = x < lo ? lo : x > hi ? hi : x;
#elif OP == 1
      const double c = x < lo ? lo : x > hi ? hi : x;
      r = hi == lo ? (x != x ? x : p.a) : __dadd_rn(__dmul_rn(__ddiv_rn(__dsub_rn(c, lo), __dsub_rn(hi, lo)), __dsub_rn(p.b, p.a)), p.a);
#elif OP == 2
      r = __ddiv_rn(__dsub_rn(x, lo), hi);
#elif OP == 3
      r = ity_interp(x, p.tab + b * p.tstride, p.tab2 + b * p.tstride, p.nbins);
#else
      if (none) {
        r = __longlong_as_double(0x7ff8000000000000ll);
      } else {
        const double y = x < lo ? lo : x > hi ? hi : x;
        r = p.tab2[b * p.tstride + (ndf_i64)(y - lo)];
      }
#endif
      const ndf_i64 o = p.contig ? b * p.m + j : ity_off(b, j, p.nb, p.ndim, p.shape, p.ostr);
      p.out[o] = (OUT)r;
    }
  }
}
#endif

// ---- small kernels ----------------------------------------------------------------------------------------
NDF_PARAMS(ndf_ity_small_params)

__device__ __forceinline__ ndf_i64 ity_tid() { return (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x; }

// One warp per target over the pass's nbins = 2^bits bins: lane l holds bins l * per ..
// l * per + per - 1; the warp's prefix sums find the lane of the bin that holds the rank,
// and that lane the bin (the first d with rank < the count of bins 0..d; none: the last
// bin and every count).
#if NDF_KERNEL(ndf_ity_select)
extern "C" __global__ void __launch_bounds__(256) ndf_ity_select(const ndf_ity_small_params p) {
  const ndf_i64 idx = ity_tid() / 32;
  const int lane = threadIdx.x & 31;
  if (idx >= p.n) return; // whole warps: idx is the same on every lane
  const ndf_i64 b = idx / p.ntpi, t = idx - b * p.ntpi;
  const int nbins = (int)p.nbins, per = nbins / 32;
  ndf_u64 r, pre;
  const ndf_u64 *h;
  if (p.pass == 0) {
    r = p.rk0[t];
    pre = 0;
    h = p.hist0 + b * p.tstride;
  } else {
    r = p.rank[idx];
    pre = p.prefix[idx];
    h = p.hist + idx * p.tstride;
  }
  h += lane * per;
  ndf_u64 own = 0;
  for (int i = 0; i < per; i++) own += h[i];
  ndf_u64 incl = own;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) { // inclusive scan of the lanes' sums
    const ndf_u64 v = __shfl_up_sync(0xffffffffu, incl, o);
    if (lane >= o) incl += v;
  }
  const ndf_u64 total = __shfl_sync(0xffffffffu, incl, 31);
  const unsigned hit = __ballot_sync(0xffffffffu, r < incl);
  const int L = hit ? __ffs(hit) - 1 : -1;
  if (lane == L) {
    ndf_u64 cum = incl - own;
    int sel = lane * per + per - 1;
    for (int i = 0; i < per; i++) {
      const ndf_u64 c = h[i];
      if (r < cum + c) {
        sel = lane * per + i;
        break;
      }
      cum += c;
    }
    p.rank[idx] = r - cum;
    p.prefix[idx] = pre | ((ndf_u64)sel << p.shift);
  } else if (L < 0 && lane == 0) {
    p.rank[idx] = r - total;
    p.prefix[idx] = pre | ((ndf_u64)(nbins - 1) << p.shift);
  }
  __syncwarp();
  if (p.pass > 0) { // the next pass counts into the same bins
    ndf_u64 *hw = p.hist + idx * p.tstride + lane * per;
    for (int i = 0; i < per; i++) hw[i] = 0;
  }
}
#endif

#if NDF_KERNEL(ndf_ity_lerp)
extern "C" __global__ void __launch_bounds__(256) ndf_ity_lerp(const ndf_ity_small_params p) {
  const ndf_i64 idx = ity_tid();
  if (idx >= p.n) return;
  const ndf_i64 b = idx / p.nq, k = idx - b * p.nq;
  const ndf_i64 ia = b * p.ntpi + 2 * k;
  const double a = ity_unkey(p.prefix[ia], (T)0), bb = ity_unkey(p.prefix[ia + 1], (T)0), t = p.gam[k];
  double r;
  if (p.st[b * 8 + 2]) {
    r = __longlong_as_double(0x7ff8000000000000ll);
  } else {
    const double diff = NDF_ITY_F32 ? (double)__fsub_rn((float)bb, (float)a) : __dsub_rn(bb, a);
    r = t >= 0.5 ? __dsub_rn(bb, __dmul_rn(diff, __dsub_rn(1.0, t))) : __dadd_rn(a, __dmul_rn(diff, t));
  }
  p.res[idx] = r;
}
#endif

#if NDF_KERNEL(ndf_ity_finish)
extern "C" __global__ void __launch_bounds__(256) ndf_ity_finish(const ndf_ity_small_params p) {
  if (p.mode == 1 && p.part) { // a block per image: the chunk sums of both passes, in a fixed order
    __shared__ double red[8];
    const ndf_i64 items = p.n * p.cpi;
    for (ndf_i64 b = blockIdx.x; b < p.n; b += gridDim.x) {
      const double s0 = ity_bsum(p.part + b * p.cpi, p.cpi, red);
      const double s1 = ity_bsum(p.part + items + b * p.cpi, p.cpi, red);
      if (threadIdx.x == 0) {
        const double cnt = (double)p.st[b * 8 + 3];
        double hi = __dsqrt_rn(__ddiv_rn(s1, cnt));
        if (hi == 0) hi = 1;
        p.res[2 * b] = __ddiv_rn(s0, cnt);
        p.res[2 * b + 1] = hi;
      }
    }
    return;
  }
  const ndf_i64 b = ity_tid();
  if (b >= p.n) return;
  const ndf_u64 *st = p.st + b * 8;
  double lo, hi;
  if (p.mode == 0) {
    if (st[2] || !st[3]) {
      lo = hi = __longlong_as_double(0x7ff8000000000000ll);
    } else {
      lo = ity_unkey(~st[0], (T)0);
      hi = ity_unkey(st[1], (T)0);
    }
  } else {
    const double cnt = (double)st[3];
    lo = __ddiv_rn(__longlong_as_double((long long)st[4]), cnt);
    hi = __dsqrt_rn(__ddiv_rn(__longlong_as_double((long long)st[5]), cnt));
    if (hi == 0) hi = 1;
  }
  p.res[2 * b] = lo;
  p.res[2 * b + 1] = hi;
}
#endif

#if NDF_KERNEL(ndf_ity_edges)
extern "C" __global__ void __launch_bounds__(256) ndf_ity_edges(const ndf_ity_small_params p) {
  const ndf_i64 idx = ity_tid(), n = p.nbins;
  if (idx >= p.n) return;
  const ndf_i64 b = idx / (n + 1), i = idx - b * (n + 1);
  double first = p.c0, last = p.c1;
  if (!p.has_range) {
    const ndf_u64 *st = p.st + b * 8;
    if (!st[3]) {
      first = 0;
      last = 1;
    } else {
      first = ity_unkey(~st[0], (T)0);
      last = ity_unkey(st[1], (T)0);
      if (st[2] || isinf(first) || isinf(last)) {
        p.status[0] = 1;
        return;
      }
    }
  }
  if (first == last) {
    first = __dsub_rn(first, 0.5);
    last = __dadd_rn(last, 0.5);
  }
  double y;
  if (i == n) {
    y = last;
  } else {
    const double div = (double)n, delta = __dsub_rn(last, first), step = __ddiv_rn(delta, div);
    y = step == 0 ? __dmul_rn(__ddiv_rn((double)i, div), delta) : __dmul_rn((double)i, step);
    y = __dadd_rn(y, first);
  }
  p.edges[idx] = NDF_ITY_F32 ? (double)__double2float_rn(y) : y;
}
#endif

// One block of 256 threads per image: the histogram as float64 (counts or weighted sums), divided by
// each bin's width (in the bin type) and the image's total when p.density.
#if NDF_KERNEL(ndf_ity_density)
extern "C" __global__ void __launch_bounds__(256) ndf_ity_density(const ndf_ity_small_params p) {
  __shared__ double part[256];
  const ndf_i64 n = p.nbins;
  for (ndf_i64 b = blockIdx.x; b < p.n; b += gridDim.x) {
    double total = 0;
    for (ndf_i64 k = threadIdx.x; k < n; k += 256) total += p.weighted ? p.hsum[b * n + k] : (double)p.hist[b * n + k];
    part[threadIdx.x] = total;
    __syncthreads();
    for (int s = 128; s > 0; s >>= 1) {
      if (threadIdx.x < s) part[threadIdx.x] = __dadd_rn(part[threadIdx.x], part[threadIdx.x + s]);
      __syncthreads();
    }
    total = part[0];
    const double *e = p.edges + b * p.tstride;
    for (ndf_i64 k = threadIdx.x; k < n; k += 256) {
      double h = p.weighted ? p.hsum[b * n + k] : (double)p.hist[b * n + k];
      if (p.density) {
        const double width = p.f32 ? (double)__fsub_rn((float)e[k + 1], (float)e[k]) : __dsub_rn(e[k + 1], e[k]);
        h = __ddiv_rn(__ddiv_rn(h, width), total);
      }
      p.res[b * n + k] = h;
    }
    __syncthreads();
  }
}
#endif

// One thread per image: the cdf of its counts (rounded to float32 for float32 data) and, for
// equal bins (mode 0), the bin centres in the bin type.
#if NDF_KERNEL(ndf_ity_cdf)
extern "C" __global__ void __launch_bounds__(256) ndf_ity_cdf(const ndf_ity_small_params p) {
  const ndf_i64 b = ity_tid(), n = p.nbins;
  if (b >= p.n) return;
  const ndf_u64 *h = p.hist + b * p.tstride;
  ndf_u64 tot = 0, cum = 0;
  for (ndf_i64 k = 0; k < n; k++) tot += h[k];
  for (ndf_i64 k = 0; k < n; k++) {
    cum += h[k];
    double c = __ddiv_rn((double)cum, (double)tot);
    if (p.f32) c = (double)__double2float_rn(c);
    p.fp[b * p.tstride + k] = c;
    if (p.mode == 0) {
      const double *e = p.edges + b * (n + 1);
      p.xp[b * p.tstride + k] = p.f32 ? (double)__fdiv_rn(__fadd_rn((float)e[k], (float)e[k + 1]), 2.0f)
                                      : __ddiv_rn(__dadd_rn(e[k], e[k + 1]), 2.0);
    }
  }
}
#endif

// Element i (C order over oshape) of the results: src[(i / len) * sstride + i % len].
__device__ __forceinline__ ndf_i64 ity_store_off(const ndf_ity_small_params &p, ndf_i64 i) {
  ndf_i64 off = 0;
  NDF_FOR_COORDS(i, p.ondim, p.oshape, d, c, off += c * p.ostr[d];)
  return off;
}

#if NDF_KERNEL(ndf_ity_store)
extern "C" __global__ void __launch_bounds__(256) ndf_ity_store(const ndf_ity_small_params p) {
  const ndf_i64 i = ity_tid();
  if (i >= p.n) return;
  const ndf_i64 b = i / p.len;
  ((OUT *)p.dst)[ity_store_off(p, i)] = (OUT)p.res[b * p.sstride + (i - b * p.len)];
}
#endif

#if NDF_KERNEL(ndf_ity_store_count)
extern "C" __global__ void __launch_bounds__(256) ndf_ity_store_count(const ndf_ity_small_params p) {
  const ndf_i64 i = ity_tid();
  if (i >= p.n) return;
  const ndf_i64 b = i / p.len;
  ((long long *)p.dst)[ity_store_off(p, i)] = (long long)p.hist[b * p.sstride + (i - b * p.len)];
}
#endif
