// interp.cu -- scipy.ndimage's spline interpolation: the B-spline prefilter
// and the geometric transforms (zoom, shift, affine_transform, rotate,
// map_coordinates), in float64 with scipy's order of operations, so that
// the GPU gives the CPU backend's values (runtime/ops/interp/interp_cpu.c).
//
//   ndf_interp_load    a float64 contiguous copy of every image, padded by
//                      npad samples per spatial side (edge values, or the
//                      pad value for grid-constant), for the prefilter.
//   ndf_interp_spline_tile  one prefilter pass along one axis of that copy,
//                      in place: a thread per line (Unser's recursive filter
//                      with scipy's boundary initialization of INIT), C lines
//                      a block staged in shared memory with coalesced loads
//                      and stores;
//   ndf_interp_spline  the same pass in global memory, for lines too long for
//                      the tile.
//   ndf_interp_store   the copy into the output's dtype and strides with C's
//                      cast (the spline filters' output rule; int_copy:
//                      NumPy's casts of a copy, runtime/ops/interp/interp.h).
//   ndf_interp_eval    per output point (NDF_IP_R a thread): its input
//                      coordinate (KIND: affine, a coordinates array; also
//                      zoom/shift), then the sum over the (ORDER + 1)^NSP taps
//                      of the spline of ORDER in MODE, stored rounded as scipy
//                      rounds (a bool output, OFLOAT 2: C's cast, as scipy
//                      stores its npy_bool).  ORDER, MODE and NSP are
//                      compile-time, so the order-1 (trilinear) and order-3
//                      paths are fully unrolled loops over 8 and 64 taps.
//                      Points whose taps all lie inside the source (the
//                      interior) take their taps from one base offset and
//                      their weights from a floor without conversions; the
//                      others map each tap by MODE.  IDX32 compiles the index arithmetic in 32
//                      bits where the host has checked every offset fits.
//   ndf_interp_ztab    zoom/shift: each axis's taps and weights, once per
//                      output coordinate of that axis (eval's per-axis code);
//   ndf_interp_zoom    zoom/shift: eval's sum with the taps and weights of
//                      every axis read from ndf_interp_ztab's tables.
#include "ndf_common.cuh"

typedef NDF_SLOT(T) T;       /* source element: the input's, or double for the coefficients */
typedef NDF_SLOT(OUT) OUT;   /* output element */
typedef NDF_SLOT(CT) CT;     /* coordinates element (KIND 2) */
#define NSP NDF_SLOT(NSP)     /* spatial axes of the input */
#define ORDER NDF_SLOT(ORDER) /* spline order 0..5 */
#define MODE NDF_SLOT(MODE)   /* ndf_interp_mode */
#define KIND NDF_SLOT(KIND)   /* 0 zoom/shift, 1 affine, 2 coordinates */
#define INIT NDF_SLOT(INIT)   /* prefilter boundary: 0 mirror, 1 reflect, 2 wrap */
#define OFLOAT NDF_SLOT(OFLOAT) /* 1 when OUT is float or double; 2 a bool (OUT unsigned char) */
#define IDX32 NDF_SLOT(IDX32)   /* eval, ztab, zoom: 1 when every element offset they form fits int32 */

#if IDX32
typedef int ndf_ix; // element offsets and output coordinates
#else
typedef ndf_i64 ndf_ix;
#endif

// Products are rounded on their own (__dmul_rn, never contracted into a fused
// multiply-add), so that every operation rounds as on the CPU; division and
// square roots round to nearest by default.
#define MUL(a, b) __dmul_rn((a), (b))

#define M_CONSTANT 0
#define M_GRID_CONSTANT 1
#define M_NEAREST 2
#define M_REFLECT 3
#define M_MIRROR 4
#define M_WRAP 5
#define M_GRID_WRAP 6

/* ---- conversions ------------------------------------------------------------------------------ */

// x86-64's conversion of a double to a 64-bit integer (NaN and out of range: the minimum).
__device__ __forceinline__ ndf_i64 ndf_ip_i64(double v) {
  return (v >= -9223372036854775808.0 && v < 9223372036854775808.0) ? (ndf_i64)v : (ndf_i64)0x8000000000000000ull;
}
// ... and to uint64: below 2^63 (and NaN) as to int64, below 2^64 by the offset 2^63, 0 beyond.
__device__ __forceinline__ unsigned long long ndf_ip_u64(double v) {
  if (!(v >= 9223372036854775808.0)) return (unsigned long long)ndf_ip_i64(v);
  if (v < 18446744073709551616.0) return (unsigned long long)(ndf_i64)(v - 9223372036854775808.0) ^ 0x8000000000000000ull;
  return 0ull;
}
__device__ __forceinline__ int ndf_ip_i32(double v) {
  return (v > -2147483649.0 && v < 2147483648.0) ? (int)v : (int)0x80000000u;
}

// v stored as OUT with C's cast (as x86-64 does it: through int32 for the narrow types, so a bool
// gets the low byte of the truncated value, as scipy's npy_bool store).
__device__ __forceinline__ OUT ndf_ip_cast(double v) {
#if OFLOAT == 1
  return (OUT)v;
#else
  if (sizeof(OUT) == 8 && (OUT)-1 > 0) return (OUT)ndf_ip_u64(v);
  if (sizeof(OUT) == 8) return (OUT)ndf_ip_i64(v);
  if (sizeof(OUT) == 4 && (OUT)-1 > 0) return (OUT)ndf_ip_i64(v);
  return (OUT)ndf_ip_i32(v);
#endif
}

// scipy's interpolation output rule: integers rounded half away from zero and clamped; a bool
// neither (C's cast).
__device__ __forceinline__ OUT ndf_ip_round(double v) {
#if OFLOAT == 1
  return (OUT)v;
#elif OFLOAT == 2
  return ndf_ip_cast(v);
#else
  const bool uns = (OUT)-1 > 0;
  double lo, hi;
  if (uns) {
    lo = 0;
    hi = sizeof(OUT) == 1 ? 255.0 : sizeof(OUT) == 2 ? 65535.0 : sizeof(OUT) == 4 ? 4294967295.0 : 18446744073709551615.0;
  } else {
    lo = sizeof(OUT) == 1 ? -128.0 : sizeof(OUT) == 2 ? -32768.0 : sizeof(OUT) == 4 ? -2147483648.0 : -9223372036854775808.0;
    hi = sizeof(OUT) == 1 ? 127.0 : sizeof(OUT) == 2 ? 32767.0 : sizeof(OUT) == 4 ? 2147483647.0 : 9223372036854775808.0;
  }
  // 64-bit: beyond the extreme as a double (2^63, 2^64) the integer extreme; the extreme itself converts
  if (uns) {
    v = v > 0 ? v + 0.5 : 0;
    if (sizeof(OUT) == 8 && v > hi) return (OUT)0xffffffffffffffffull;
    if (v > hi) v = hi;
  } else {
    v = v > 0 ? v + 0.5 : v - 0.5;
    if (sizeof(OUT) == 8 && v > hi) return (OUT)0x7fffffffffffffffll;
    if (v > hi) v = hi;
    if (v < lo) v = lo;
  }
  return ndf_ip_cast(v);
#endif
}

/* ---- the prefilter ---------------------------------------------------------------------------- */

NDF_PARAMS(ndf_interp_load_params)

#if NDF_KERNEL(ndf_interp_load)
extern "C" __global__ void __launch_bounds__(256) ndf_interp_load(const ndf_interp_load_params p) {
  for (ndf_i64 i = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x; i < p.total; i += (ndf_i64)gridDim.x * blockDim.x) {
    ndf_i64 r = i, off = 0;
    bool outside = false;
    for (int d = p.nsp - 1; d >= 0; d--) {
      ndf_i64 q;
      if (p.idx32) q = (unsigned)r / (unsigned)p.pshape[d]; // every index fits 32 bits
      else q = r / p.pshape[d];
      ndf_i64 x = r - q * p.pshape[d] - p.npad;
      r = q;
      const ndf_i64 n = p.shape[p.nb + d];
      if (x < 0 || x >= n) {
        outside = true;
        x = x < 0 ? 0 : n - 1;
      }
      off += x * p.strides[p.nb + d];
    }
    for (int d = p.nb - 1; d >= 0; d--) {
      const ndf_i64 q = p.idx32 ? (ndf_i64)((unsigned)r / (unsigned)p.shape[d]) : r / p.shape[d];
      off += (r - q * p.shape[d]) * p.strides[d];
      r = q;
    }
    p.buf[i] = (outside && p.pad_const) ? p.pad : (double)p.in[off];
  }
}
#endif

NDF_PARAMS(ndf_interp_spline_params)

// The line of n > 1 coefficients at c[0], c[s], ..., filtered in place for
// each pole.  The running sums and the recursions' previous value live in
// registers (the values the memory would hold, in the same operations), and
// the loops that write the line load NDF_IP_U samples before they store
// them (s >= 1: a store never reaches a sample still to be loaded).
#define NDF_IP_U 4
__device__ __forceinline__ void ndf_ip_spline_line(double *c, const ndf_i64 n, const ndf_i64 s,
                                                   const ndf_interp_spline_params &p) {
  const int U = NDF_IP_U;
  double gain = 1.0;
  for (int k = 0; k < p.npoles; k++) gain = MUL(gain, MUL(1.0 - p.poles[k], 1.0 - 1.0 / p.poles[k]));
  {
    ndf_i64 i = 0;
    for (; i + U <= n; i += U) {
      double v[U];
#pragma unroll
      for (int q = 0; q < U; q++) v[q] = c[(i + q) * s];
#pragma unroll
      for (int q = 0; q < U; q++) c[(i + q) * s] = MUL(v[q], gain);
    }
    for (; i < n; i++) c[i * s] = MUL(c[i * s], gain);
  }
  for (int k = 0; k < p.npoles; k++) {
    const double z = p.poles[k];
    double acc;
#if INIT == 0
    {  // mirror (period 2n - 2); zn = z^(n-1) from the host's pow, as the CPU's
      const double zn1 = p.zn[k];
      double zi = z;
      acc = c[0] + MUL(zn1, c[(n - 1) * s]);
      for (ndf_i64 i = 1; i < n - 1; i++) {
        acc += MUL(zi, c[i * s] + MUL(zn1, c[(n - 1 - i) * s]));
        zi = MUL(zi, z);
      }
      acc /= 1 - MUL(zn1, zn1);
    }
#elif INIT == 1
    {  // reflect (period 2n); zn = z^n; the sum over the samples as they are, scipy 1.18's order
      const double zn = p.zn[k], c0 = c[0];
      double zi = z;
      acc = c0 + MUL(zn, c[(n - 1) * s]);
      for (ndf_i64 i = 1; i < n; i++) {
        acc += MUL(zi, c[i * s] + MUL(zn, c[(n - 1 - i) * s]));
        zi = MUL(zi, z);
      }
      acc = c0 + MUL(acc, z) / (1 - MUL(zn, zn));
    }
#else
    {  // wrap (period n)
      double zi = z;
      acc = c[0];
      for (ndf_i64 i = 1; i < n; i++) {
        acc += MUL(zi, c[(n - i) * s]);
        zi = MUL(zi, z);
      }
      acc /= 1 - zi;
    }
#endif
    c[0] = acc;
    {
      ndf_i64 i = 1;
      for (; i + U <= n; i += U) {
        double v[U];
#pragma unroll
        for (int q = 0; q < U; q++) v[q] = c[(i + q) * s];
#pragma unroll
        for (int q = 0; q < U; q++) {
          acc = v[q] + MUL(z, acc);
          v[q] = acc;
        }
#pragma unroll
        for (int q = 0; q < U; q++) c[(i + q) * s] = v[q];
      }
      for (; i < n; i++) {
        acc = c[i * s] + MUL(z, acc);
        c[i * s] = acc;
      }
    }
#if INIT == 0
    acc = MUL(MUL(z, c[(n - 2) * s]) + acc, z) / (MUL(z, z) - 1);
#elif INIT == 1
    acc = MUL(acc, z / (z - 1));
#else
    {
      double zi = z;
      for (ndf_i64 i = 0; i < n - 1; i++) {
        acc += MUL(zi, c[i * s]);
        zi = MUL(zi, z);
      }
      acc = MUL(acc, z / (zi - 1));
    }
#endif
    c[(n - 1) * s] = acc;
    {
      ndf_i64 i = n - 2;
      for (; i - U + 1 >= 0; i -= U) {
        double v[U];
#pragma unroll
        for (int q = 0; q < U; q++) v[q] = c[(i - q) * s];
#pragma unroll
        for (int q = 0; q < U; q++) {
          acc = MUL(z, acc - v[q]);
          v[q] = acc;
        }
#pragma unroll
        for (int q = 0; q < U; q++) c[(i - q) * s] = v[q];
      }
      for (; i >= 0; i--) {
        acc = MUL(z, acc - c[i * s]);
        c[i * s] = acc;
      }
    }
  }
}

// A thread per line, in global memory (lines too long for ndf_interp_spline_tile).
#if NDF_KERNEL(ndf_interp_spline)
extern "C" __global__ void __launch_bounds__(128) ndf_interp_spline(const ndf_interp_spline_params p) {
  const ndf_i64 line = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x;
  if (line >= p.lines) return;
  const ndf_i64 n = p.n, s = p.inner, o = line / s, in = line - o * s;
  if (n <= 1) return;
  ndf_ip_spline_line(p.buf + o * n * s + in, n, s, p);
}
#endif

// A block of C = blockDim.x threads filters C lines staged in shared memory
// (sample i of column t at i (C + 1) + t), loaded and stored back with
// coalesced accesses: for the last axis (inner 1) the C lines are
// consecutive and consecutive threads move consecutive samples of one line;
// otherwise the lines are C neighbours along the axes after the axis (one
// outer index o), and consecutive threads move consecutive lines.  Thread t
// then runs the recursive filter of column t, in the same operations as
// ndf_interp_spline.
#if NDF_KERNEL(ndf_interp_spline_tile)
#define NDF_IP_NB 8 // staging loads in flight per thread
extern "C" __global__ void __launch_bounds__(32) ndf_interp_spline_tile(const ndf_interp_spline_params p) {
  extern __shared__ double ndf_ip_smem[];
  const int C = blockDim.x, t = threadIdx.x, P = C + 1;
  const ndf_i64 n = p.n, inner = p.inner;
  const bool last = inner == 1;
  const ndf_i64 tpo = last ? 1 : (inner + C - 1) / C; // tiles per outer index
  const ndf_i64 ntiles = last ? (p.lines + C - 1) / C : p.lines / inner * tpo;
  for (ndf_i64 tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
    ndf_i64 base, ncl;
    if (last) {
      base = tile * C * n;
      ncl = p.lines - tile * C;
    } else {
      const ndf_i64 o = tile / tpo, in0 = (tile - o * tpo) * C;
      base = o * n * inner + in0;
      ncl = inner - in0;
    }
    const int ncols = (int)(ncl < C ? ncl : C), nn = (int)n;
    // element (i, col) of the tile is buf[base + col n + i] (last) or buf[base + i inner + col]
    for (int i0 = t; i0 < nn * ncols; i0 += NDF_IP_NB * C) {
      double v[NDF_IP_NB];
      int at[NDF_IP_NB];
#pragma unroll
      for (int q = 0; q < NDF_IP_NB; q++) {
        const int k = i0 + q * C;
        at[q] = -1;
        if (k < nn * ncols) {
          if (last) {
            const int col = k / nn, i = k - col * nn;
            v[q] = p.buf[base + k];
            at[q] = i * P + col;
          } else {
            const int i = k / ncols, col = k - i * ncols;
            v[q] = p.buf[base + i * inner + col];
            at[q] = i * P + col;
          }
        }
      }
#pragma unroll
      for (int q = 0; q < NDF_IP_NB; q++)
        if (at[q] >= 0) ndf_ip_smem[at[q]] = v[q];
    }
    __syncthreads();
    if (t < ncols) ndf_ip_spline_line(ndf_ip_smem + t, n, P, p);
    __syncthreads();
    for (int k = t; k < nn * ncols; k += C) {
      if (last) {
        const int col = k / nn, i = k - col * nn;
        p.buf[base + k] = ndf_ip_smem[i * P + col];
      } else {
        const int i = k / ncols, col = k - i * ncols;
        p.buf[base + i * inner + col] = ndf_ip_smem[i * P + col];
      }
    }
    __syncthreads();
  }
}
#endif

NDF_PARAMS(ndf_interp_store_params)

#if NDF_KERNEL(ndf_interp_store)
extern "C" __global__ void __launch_bounds__(256) ndf_interp_store(const ndf_interp_store_params p) {
  for (ndf_i64 i = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x; i < p.total; i += (ndf_i64)gridDim.x * blockDim.x) {
    ndf_i64 r = i, off = 0;
    for (int d = p.ndim - 1; d >= 0; d--) {
      const ndf_i64 q = p.idx32 ? (ndf_i64)((unsigned)r / (unsigned)p.shape[d]) : r / p.shape[d];
      off += (r - q * p.shape[d]) * p.ostr[d];
      r = q;
    }
    const double v = p.buf[i];
#if OFLOAT == 1
    p.out[off] = (OUT)v;
#elif OFLOAT == 2
    // a bool: C's cast, or v != 0 where a copy casts as NumPy does (int_copy 2)
    p.out[off] = p.int_copy == 2 ? (OUT)(v != 0) : ndf_ip_cast(v);
#else
    // an integer copied into an integer dtype keeps its low bits (NumPy's casts wrap around)
    p.out[off] = p.int_copy && !(sizeof(OUT) == 8 && (OUT)-1 > 0) ? (OUT)ndf_ip_i64(v) : ndf_ip_cast(v);
#endif
  }
}
#endif

/* ---- the transforms --------------------------------------------------------------------------- */

// Maps a coordinate outside [0, n-1] back for mode m, in scipy's double arithmetic; -1 for constant
// outside.  |x| < 2^52.
__device__ __forceinline__ double ndf_ip_map(double x, ndf_i64 n, int m) {
  if (x < 0) {
    switch (m) {
      case M_MIRROR:
        if (n <= 1) return 0;
        {
          const ndf_i64 pp = 2 * n - 2;
          x += MUL((double)pp, (double)(ndf_i64)(-x / pp));
          return x <= 1 - n ? x + pp : -x;
        }
      case M_REFLECT:
        if (n <= 1) return 0;
        {
          const ndf_i64 pp = 2 * n;
          if (x < -pp) x += MUL((double)pp, (double)(ndf_i64)(-x / pp));
          if (x < -n) return x + pp;
          return (x > -1e-15 ? 1e-15 : -x) - 1;
        }
      case M_WRAP:
        if (n <= 1) return 0;
        return x + MUL((double)(n - 1), (double)((ndf_i64)(-x / (n - 1)) + 1));
      case M_GRID_WRAP:
        if (n <= 1) return 0;
        return x + MUL((double)n, (double)((ndf_i64)((-1 - x) / n) + 1));
      case M_NEAREST: return 0;
      case M_CONSTANT: return -1;
      default: return x;
    }
  }
  if (x > n - 1) {
    switch (m) {
      case M_MIRROR:
        if (n <= 1) return 0;
        {
          const ndf_i64 pp = 2 * n - 2;
          x -= MUL((double)pp, (double)(ndf_i64)(x / pp));
          return x >= n ? pp - x : x;
        }
      case M_REFLECT:
        if (n <= 1) return 0;
        {
          const ndf_i64 pp = 2 * n;
          x -= MUL((double)pp, (double)(ndf_i64)(x / pp));
          return x >= n ? pp - x - 1 : x;
        }
      case M_WRAP:
        if (n <= 1) return 0;
        return x - MUL((double)(n - 1), (double)(ndf_i64)(x / (n - 1)));
      case M_GRID_WRAP:
        if (n <= 1) return 0;
        return x - MUL((double)n, (double)(ndf_i64)(x / n));
      case M_NEAREST: return (double)(n - 1);
      case M_CONSTANT: return -1;
      default: return x;
    }
  }
  return x;
}

// The ORDER + 1 weights (scipy's formulas; the last one is 1 minus the others) of a coordinate
// x whose start tap is floor(x) (odd ORDER) or floor(x + 0.5) (even), from x minus that floor.
__device__ __forceinline__ void ndf_ip_weights_frac(double x, double *w) {
  const double z = 1.0 - x;
  double y, t;
#if ORDER == 1
  w[0] = 1.0 - x;
#elif ORDER == 2
  w[1] = 0.75 - MUL(x, x);
  y = 0.5 - x;
  w[0] = MUL(MUL(0.5, y), y);
#elif ORDER == 3
  w[1] = (MUL(MUL(MUL(x, x), x - 2.0), 3.0) + 4.0) / 6.0;
  w[2] = (MUL(MUL(MUL(z, z), z - 2.0), 3.0) + 4.0) / 6.0;
  w[0] = MUL(MUL(z, z), z) / 6.0;
#elif ORDER == 4
  t = MUL(x, x);
  w[2] = MUL(t, MUL(t, 0.25) - 0.625) + 115.0 / 192.0;
  y = 1.0 + x;
  w[1] = MUL(y, MUL(y, MUL(y, 5.0 - y) / 6.0 - 1.25) + 5.0 / 24.0) + 55.0 / 96.0;
  y = z;
  w[3] = MUL(y, MUL(y, MUL(y, 5.0 - y) / 6.0 - 1.25) + 5.0 / 24.0) + 55.0 / 96.0;
  y = 0.5 - x;
  t = MUL(y, y);
  w[0] = MUL(t, t) / 24.0;
#elif ORDER == 5
  t = MUL(x, x);
  w[2] = MUL(t, MUL(t, 0.25 - x / 12.0) - 0.5) + 0.55;
  t = MUL(z, z);
  w[3] = MUL(t, MUL(t, 0.25 - z / 12.0) - 0.5) + 0.55;
  y = x + 1.0;
  w[1] = MUL(y, MUL(y, MUL(y, MUL(y, y / 24.0 - 0.375) + 1.25) - 1.75) + 0.625) + 0.425;
  y = z + 1.0;
  w[4] = MUL(y, MUL(y, MUL(y, MUL(y, y / 24.0 - 0.375) + 1.25) - 1.75) + 0.625) + 0.425;
  y = 1.0 - x;
  t = MUL(y, y);
  w[0] = MUL(MUL(y, t), t) / 120.0;
#endif
#if ORDER > 0
  w[ORDER] = 1.0;
#pragma unroll
  for (int i = 0; i < ORDER; i++) w[ORDER] -= w[i];
#endif
  (void)z; (void)y; (void)t;
}

__device__ __forceinline__ void ndf_ip_weights(double x, double *w) {
  ndf_ip_weights_frac(x - floor((ORDER & 1) ? x : x + 0.5), w);
}

// floor(f) for 0 <= f < 2^31 (IDX32) or 2^51 without a conversion instruction: f + 1.5 2^52
// rounded down is 1.5 2^52 + floor(f), with floor(f) in the low bits of its significand.  *r is
// floor(f) as a double (exact).
__device__ __forceinline__ ndf_ix ndf_ip_floor(double f, double *r) {
  const double M = 6755399441055744.0;
  const double t = __dadd_rd(f, M);
  *r = t - M;
#if IDX32
  return __double2loint(t);
#else
  return (__double_as_longlong(t) & 0xfffffffffffffll) - 0x8000000000000ll;
#endif
}

NDF_PARAMS(ndf_interp_eval_params)

#define NT (ORDER + 1)
__device__ constexpr int ndf_ip_pow(int b, int e) { return e == 0 ? 1 : b * ndf_ip_pow(b, e - 1); }
// The sums over taps: unrolled up to 64 taps (order 1 to 6 axes, orders 2 and 3 to 3 axes), the
// fast paths; larger supports loop, so that high orders in many axes still compile quickly.
#if ORDER == 0 || (ORDER == 1 && NSP <= 6) || (ORDER <= 3 && NSP <= 3) || NSP <= 2
#define NDF_IP_TAPS_UNROLL _Pragma("unroll")
#else
#define NDF_IP_TAPS_UNROLL _Pragma("unroll 1")
#endif

// The output points a thread evaluates: NDF_IP_R points 32 apart (a warp
// covers 32 consecutive points at each step, so that loads and stores stay
// coalesced).  A point is its image index img (the batch axes flattened) and
// its coordinates along the spatial output axes, held last axis first (xr[j]
// is spatial axis onsp - 1 - j, NDF_IP_OSP at most), so that every index into
// xr is a compile-time constant and xr stays in registers.  The first point's
// index is split once; each next point advances xr[0] by 32, dividing only
// where the last axis wraps.
#define NDF_IP_R 4
#define NDF_IP_OSP (KIND == 0 ? NSP : NDF_MAX_SPATIAL)
#define NDF_IP_ONSP (KIND == 0 ? NSP : p.onsp) // zoom and shift: the output's spatial rank is the input's
#if IDX32
typedef unsigned ndf_ip_u; // unsigned index arithmetic for the divisions
#else
typedef ndf_i64 ndf_ip_u;
#endif
__device__ __forceinline__ void ndf_ip_split(const ndf_interp_eval_params &p, ndf_i64 i, ndf_ix *xr, ndf_ix &img) {
  const int onsp = NDF_IP_ONSP, nd = p.nb + onsp;
  ndf_ip_u r = (ndf_ip_u)i;
#pragma unroll
  for (int j = 0; j < NDF_IP_OSP; j++) {
    ndf_ix v = 0;
    if (j < onsp) {
      const ndf_ip_u e = (ndf_ip_u)p.oshape[nd - 1 - j], q = r / e;
      v = (ndf_ix)(r - q * e);
      r = q;
    }
    xr[j] = v;
  }
  img = (ndf_ix)r;
}

// xr and img advanced by 32 points; true when anything but the last spatial axis moved.
__device__ __forceinline__ bool ndf_ip_advance(const ndf_interp_eval_params &p, ndf_ix *xr, ndf_ix &img) {
  const int onsp = NDF_IP_ONSP, nd = p.nb + onsp;
  if (onsp == 0) {
    img += 32;
    return true;
  }
  xr[0] += 32;
  if (xr[0] < (ndf_ix)p.oshape[nd - 1]) return false;
#pragma unroll
  for (int j = 0; j < NDF_IP_OSP; j++) {
    if (j < onsp) {
      const ndf_ix e = (ndf_ix)p.oshape[nd - 1 - j];
      if (xr[j] >= e) {
        const ndf_ix q = (ndf_ix)((ndf_ip_u)xr[j] / (ndf_ip_u)e);
        xr[j] -= q * e;
        if (j + 1 < onsp) xr[j + 1] += q;
        else img += q;
      }
    }
  }
  return true;
}

// The point's output offset (and the coordinates array's, KIND 2) along the
// spatial axes.
__device__ __forceinline__ void ndf_ip_locate(const ndf_interp_eval_params &p, const ndf_ix *xr, ndf_ix &ooff,
                                              ndf_ix &coff) {
  const int onsp = NDF_IP_ONSP, nd = p.nb + onsp;
  ooff = 0;
  coff = 0;
#pragma unroll
  for (int j = 0; j < NDF_IP_OSP; j++) {
    if (j < onsp) {
      ooff += xr[j] * (ndf_ix)p.ostr[nd - 1 - j];
      if (KIND == 2) coff += xr[j] * (ndf_ix)p.cstr[onsp - j];
    }
  }
}

// Image img: its output offset ob and source (the coefficients of image img,
// or the input at the image's offset), from its coordinates along the batch axes.
template <typename S>
__device__ __forceinline__ void ndf_ip_image(const ndf_interp_eval_params &p, ndf_ix img, ndf_ix &ob, const S *&src) {
  ndf_ip_u r = (ndf_ip_u)img;
  ndf_ix ib = 0;
  ob = 0;
  for (int d = p.nb - 1; d >= 0; d--) {
    const ndf_ip_u e = (ndf_ip_u)p.oshape[d], q = r / e;
    const ndf_ix x = (ndf_ix)(r - q * e);
    ob += x * (ndf_ix)p.ostr[d];
    if (!p.filtered) ib += x * (ndf_ix)p.istr[d]; // with coefficients, IDX32 bounds them, not the input
    r = q;
  }
  src = p.filtered ? (const S *)p.src + img * (ndf_ix)p.svol : (const S *)p.src + ib;
}

// The walk of ndf_interp_eval and ndf_interp_zoom over their output points,
// as macros over the kernel's own names (p, T and what the earlier macros
// declare), not functions: NVRTC compiles the kernels to the same code as
// when these steps are written out in each, which it does not for the same
// steps as __forceinline__ functions (other instruction order and branch
// layout).
//
// NDF_IP_WALK declares lane, nd (the output's rank) and step (the grid's
// stride in points); the kernel then declares ostep, the output offset of 32
// points along the last axis (where it is a spatial one).  NDF_IP_RUNS(i0)
// loops over the thread's runs of NDF_IP_R points, i0 the first point of a run.
#define NDF_IP_WALK                                                                                                  \
  const int lane = threadIdx.x & 31, nd = p.nb + p.onsp;                                                             \
  const ndf_i64 step = (ndf_i64)gridDim.x * blockDim.x * NDF_IP_R
#define NDF_IP_RUNS(i0)                                                                                              \
  for (ndf_i64 i0 = ((ndf_i64)blockIdx.x * blockDim.x + threadIdx.x - lane) * NDF_IP_R + lane; i0 < p.total;        \
       i0 += step)
// At the start of run i0, NDF_IP_RUN declares xr, img (its first point),
// cimg and ob (the image ob is for: none yet); then, after the kernel's own
// declarations (their order, too, shapes the compiled code), NDF_IP_POINTS
// declares src (image cimg's source), ooff, coff (the point's output and
// coordinates offsets) and nk, the run's points (NDF_IP_R, or those left).
#define NDF_IP_RUN(i0)                                                                                               \
  ndf_ix xr[NDF_IP_OSP], img, cimg = -1, ob = 0;                                                                     \
  ndf_ip_split(p, (i0), xr, img)
#define NDF_IP_POINTS(i0)                                                                                            \
  ndf_ix ooff = 0, coff = 0;                                                                                         \
  const T *src = 0;                                                                                                  \
  const ndf_i64 left_ = (p.total - (i0) + 31) / 32;                                                                  \
  const int nk = left_ < NDF_IP_R ? (int)left_ : NDF_IP_R
// At point k of the run: declares moved (the first point, or one where an
// axis other than the last moved), and brings ob, src, ooff and coff to the
// point, coff by CSTEP per 32 points along the last axis.
#define NDF_IP_MOVE(k, CSTEP)                                                                                        \
  const bool moved = (k) == 0 || ndf_ip_advance(p, xr, img);                                                         \
  if (moved) {                                                                                                       \
    if (img != cimg) {                                                                                               \
      ndf_ip_image(p, img, ob, src);                                                                                 \
      cimg = img;                                                                                                    \
    }                                                                                                                \
    ndf_ip_locate(p, xr, ooff, coff);                                                                                \
    ooff += ob;                                                                                                      \
  } else {                                                                                                           \
    ooff += ostep;                                                                                                   \
    coff += (CSTEP);                                                                                                 \
  }

// The taps are loaded NDF_IP_G at a time, all before their products, so
// that a warp has NDF_IP_G loads in flight: every tap up to 16, else NT^2 or
// NT taps of consecutive rows.
#define NDF_IP_NTAPS ndf_ip_pow(NT, NSP)
#define NDF_IP_G (NDF_IP_NTAPS <= 16 ? NDF_IP_NTAPS : NT * NT <= 16 ? NT * NT : NT)

// Tap k's index l[d] along every axis (raster order, last axis fastest).
__device__ __forceinline__ void ndf_ip_tap(int k, int *l) {
#pragma unroll
  for (int d = NSP - 1; d >= 0; d--) {
    l[d] = k % NT;
    k /= NT;
  }
}

// The element offset of tap l of a point whose axis d's taps are at off[d][0..NT).
__device__ __forceinline__ ndf_ix ndf_ip_offset(const ndf_ix (&off)[NSP][NT], const int *l) {
  ndf_ix so = 0;
#pragma unroll
  for (int d = 0; d < NSP; d++) so += off[d][l[d]];
  return so;
}

// The sum over the (ORDER + 1)^NSP taps in raster order, tap l (indexes
// l[d]) at element offset(l) of src, or cval where out[d][l[d]] for some axis
// (grid-constant; out may be NULL where any_out is false); each value times
// its weights axis by axis (scipy's order).  The taps are loaded NDF_IP_G at a
// time, all before their products, so that a warp has NDF_IP_G loads in
// flight, through the read-only path (the transforms refuse outputs that
// overlap the source).
template <typename S, typename Off>
__device__ __forceinline__ double ndf_ip_sum(const S *src, const Off &offset, const bool (*out)[NT], bool any_out,
                                             double cval, const double (&w)[NSP][NT]) {
  const bool gc = MODE == M_GRID_CONSTANT;
  double t = 0.0;
  NDF_IP_TAPS_UNROLL
  for (int k0 = 0; k0 < NDF_IP_NTAPS; k0 += NDF_IP_G) {
    S v[NDF_IP_G];
    bool cv[NDF_IP_G];
#pragma unroll
    for (int g = 0; g < NDF_IP_G; g++) {
      int l[NSP];
      ndf_ip_tap(k0 + g, l);
      cv[g] = false;
      if (gc && any_out) {
#pragma unroll
        for (int d = 0; d < NSP; d++) cv[g] |= out[d][l[d]];
      }
      v[g] = cv[g] ? (S)0 : __ldg(src + offset(l));
    }
#pragma unroll
    for (int g = 0; g < NDF_IP_G; g++) {
      double x = cv[g] ? cval : (double)v[g];
#if ORDER > 0
      int l[NSP];
      ndf_ip_tap(k0 + g, l);
#pragma unroll
      for (int d = 0; d < NSP; d++) x = MUL(x, w[d][l[d]]);
#endif
      t += x;
    }
  }
  (void)w;
  return t;
}

// Axis d of a point whose input coordinate along d is c: 0, with the taps'
// offsets in the source, their grid-constant outside flags and their weights;
// or the point's value without taps: 1 cval, 2 NaN (scipy's NI_GeometricTransform).
__device__ __forceinline__ int ndf_ip_axis(const ndf_interp_eval_params &p, int d, double c, ndf_ix *off, bool *out,
                                           double *w) {
  // The boundary the taps use beyond an edge: constant and wrap mirror, as scipy's.
  const int smode = (MODE == M_CONSTANT || MODE == M_WRAP) ? M_MIRROR : MODE;
  const bool gc = MODE == M_GRID_CONSTANT, unmapped = gc || MODE == M_NEAREST;
  const ndf_i64 n = p.sshape[d];
  double cc = c + p.npad;
  if (!(fabs(cc) < 4503599627370496.0)) return unmapped ? 2 : 1;
  if (!unmapped) {
    cc = ndf_ip_map(cc, n, MODE);
    if (!(cc > -1.0)) return 1;
  }
  const ndf_i64 start = (ndf_i64)floor((ORDER & 1) ? cc : cc + 0.5) - ORDER / 2;
#pragma unroll
  for (int l = 0; l < NT; l++) {
    const ndf_i64 idx = start + l;
    if (gc) {
      out[l] = idx < 0 || idx >= n;
      off[l] = out[l] ? 0 : (ndf_ix)idx * (ndf_ix)p.sstr[d];
    } else {
      out[l] = false;
      const ndf_i64 mm = (idx >= 0 && idx < n) ? idx : (ndf_i64)ndf_ip_map((double)idx, n, smode);
      off[l] = (ndf_ix)mm * (ndf_ix)p.sstr[d];
    }
  }
#if ORDER > 0
  ndf_ip_weights(cc, w);
#endif
  return 0;
}

// The value of a point at input coordinates c: where every axis's taps lie
// inside the source (the interior: no boundary rule applies, and scipy's
// mapping of c leaves it as it is), its weights from c and the taps from one
// base offset; elsewhere ndf_ip_axis per axis.  lim[d] bounds the interior
// (n - ORDER + ORDER / 2; order 0: n - 1), str[d] the source's strides.
template <typename S>
__device__ __forceinline__ double ndf_ip_point(const ndf_interp_eval_params &p, const S *src, const double (&c)[NSP],
                                               const double (&lim)[NSP], const ndf_ix (&str)[NSP]) {
  double cc[NSP], f[NSP];
  bool inside = true;
#pragma unroll
  for (int d = 0; d < NSP; d++) {
    // npad is 0 but for nearest and grid-constant (and the interior's weights are the same for -0 and 0)
    cc[d] = (MODE == M_NEAREST || MODE == M_GRID_CONSTANT) ? c[d] + p.npad : c[d];
    f[d] = (ORDER & 1) ? cc[d] : cc[d] + 0.5;
#if ORDER == 0
    inside = inside && cc[d] >= 0.0 && cc[d] <= lim[d]; // f's floor in [0, n - 1], and c unmapped
#else
    inside = inside && f[d] >= (double)(ORDER / 2) && f[d] < lim[d];
#endif
  }
  double w[NSP][NT];
  if (inside) {
    ndf_ix base = 0;
#pragma unroll
    for (int d = 0; d < NSP; d++) {
      double r;
      base += (ndf_ip_floor(f[d], &r) - ORDER / 2) * str[d];
#if ORDER > 0
      ndf_ip_weights_frac(cc[d] - r, w[d]);
#endif
    }
    const auto at = [&](const int *l) {
      ndf_ix so = base;
#pragma unroll
      for (int d = 0; d < NSP; d++) so += (ndf_ix)l[d] * str[d];
      return so;
    };
    return ndf_ip_sum(src, at, (const bool(*)[NT])0, false, p.cval, w);
  }
  ndf_ix off[NSP][NT];
  bool out[NSP][NT];
  bool any_out = false;
#pragma unroll
  for (int d = 0; d < NSP; d++) {
    const int code = ndf_ip_axis(p, d, c[d], off[d], out[d], w[d]);
    if (code == 1) return p.cval;
    if (code == 2) return __longlong_as_double(0x7ff8000000000000ll);
#pragma unroll
    for (int l = 0; l < NT; l++) any_out |= out[d][l];
  }
  return ndf_ip_sum(src, [&](const int *l) { return ndf_ip_offset(off, l); }, out, any_out, p.cval, w);
}

// KIND 0: the input coordinate of output coordinate o along axis d.
__device__ __forceinline__ double ndf_ip_zoomshift(const ndf_interp_eval_params &p, int d, ndf_i64 o) {
  double cc = (double)o;
  if (p.has_shift) cc += p.shift[d];
  if (p.has_zoom) cc = p.grid_mode ? MUL(cc + 0.5, p.zoom[d]) - 0.5 : MUL(cc, p.zoom[d]);
  return cc;
}

#if NDF_KERNEL(ndf_interp_eval)
extern "C" __global__ void __launch_bounds__(256) ndf_interp_eval(const ndf_interp_eval_params p) {
  NDF_IP_WALK;
  double lim[NSP];
  ndf_ix str[NSP];
#pragma unroll
  for (int d = 0; d < NSP; d++) {
    lim[d] = (double)(ORDER == 0 ? p.sshape[d] - 1 : p.sshape[d] - ORDER + ORDER / 2);
    str[d] = (ndf_ix)p.sstr[d];
  }
  const ndf_ix ostep = (ndf_ix)(32 * p.ostr[nd - 1]);
  const ndf_ix cstep = KIND == 2 && p.onsp > 0 ? (ndf_ix)(32 * p.cstr[p.onsp]) : 0;
  NDF_IP_RUNS(i0) {
    NDF_IP_RUN(i0);
#if KIND == 1
    // Row h's products of every output axis but the last, summed left to
    // right: the sum scipy's order has before it adds the last product; ol
    // the last output coordinate as a double.
    double rowsum[NSP], ol = 0;
    const int L = p.onsp - 1;
#endif
    NDF_IP_POINTS(i0);
#pragma unroll 1
    for (int k = 0; k < nk; k++) {
      NDF_IP_MOVE(k, cstep);
      double c[NSP];
#if KIND == 0
#pragma unroll
      for (int d = 0; d < NSP; d++) c[d] = ndf_ip_zoomshift(p, d, xr[NSP - 1 - d]);
#elif KIND == 1
      if (moved) {
        ol = (double)xr[0];
        if (L > 0) {
#pragma unroll
          for (int h = 0; h < NSP; h++) {
            const double *m = p.matrix + h * p.onsp;
            // output axis l = L - j, left to right
            double t = 0;
#pragma unroll
            for (int j = NDF_MAX_SPATIAL - 1; j >= 1; j--) {
              if (j <= L) {
                const double pr = MUL((double)xr[j], m[L - j]);
                t = j == L ? pr : t + pr;
              }
            }
            rowsum[h] = t;
          }
        }
      } else {
        ol += 32.0;
      }
#pragma unroll
      for (int h = 0; h < NSP; h++) {
        const double last = MUL(ol, p.matrix[h * p.onsp + L]);
        c[h] = (L > 0 ? rowsum[h] + last : last) + p.offset[h];
      }
#else
#pragma unroll
      for (int d = 0; d < NSP; d++) c[d] = (double)__ldg(p.coords + (coff + (ndf_ix)d * (ndf_ix)p.cstr[0]));
#endif
      p.out[ooff] = ndf_ip_round(ndf_ip_point(p, src, c, lim, str));
    }
  }
}
#endif

// zoom and shift (KIND 0) from per-axis tables: the input coordinate of axis
// d depends on o[d] alone, so ndf_interp_ztab computes, for every output
// coordinate of every axis, what ndf_interp_eval computes for that axis per
// point (the same device code), and ndf_interp_zoom reads it.  The record
// r = taxis[d] + o[d] of tnrec, stored in planes (word j of every record
// together, so that consecutive points read consecutive words): first NT
// planes of doubles, the weights; then NT planes of ndf_ix, the taps' element
// offsets in the source; then a plane of ints, the head:
//   bits 0-7: 0 the taps, 1 the point is cval, 2 NaN (the first axis with a
//   nonzero code decides, as the per-point loop's first early exit);
//   bits 8..: tap l reads cval (grid-constant) where bit 8 + l is set.
struct ndf_ip_tables {
  const double *w;
  const ndf_ix *off;
  const int *head;
};
__device__ __forceinline__ ndf_ip_tables ndf_ip_tabs(const void *tab, ndf_i64 nrec) {
  ndf_ip_tables t;
  t.w = (const double *)tab;
  t.off = (const ndf_ix *)(t.w + NT * nrec);
  t.head = (const int *)(t.off + NT * nrec);
  return t;
}

#if NDF_KERNEL(ndf_interp_ztab)
extern "C" __global__ void __launch_bounds__(256) ndf_interp_ztab(const ndf_interp_eval_params p) {
  const ndf_i64 nrec = p.tnrec;
  const ndf_ip_tables tt = ndf_ip_tabs(p.tab, nrec);
  double *tw = (double *)tt.w;
  ndf_ix *toff = (ndf_ix *)tt.off;
  int *thead = (int *)tt.head;
  for (ndf_i64 r = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x; r < nrec; r += (ndf_i64)gridDim.x * blockDim.x) {
    int d = 0;
    while (d + 1 < NSP && r >= p.taxis[d + 1]) d++;
    ndf_ix off[NT];
    bool out[NT];
    double w[NT];
    const int code = ndf_ip_axis(p, d, ndf_ip_zoomshift(p, d, r - p.taxis[d]), off, out, w);
    int head = code;
#pragma unroll
    for (int l = 0; l < NT; l++) {
      if (!code && out[l]) head |= 1 << (8 + l);
      toff[l * nrec + r] = code ? 0 : off[l];
      tw[l * nrec + r] = code || ORDER == 0 ? 0.0 : w[l];
    }
    thead[r] = head;
  }
}
#endif

#if NDF_KERNEL(ndf_interp_zoom)
extern "C" __global__ void __launch_bounds__(256) ndf_interp_zoom(const ndf_interp_eval_params p) {
  const ndf_i64 nrec = p.tnrec;
  const ndf_ip_tables tt = ndf_ip_tabs(p.tab, nrec);
  // record indexes in ndf_ix (the host keeps NT tnrec within int32 for IDX32)
  const ndf_ix nr = (ndf_ix)nrec, last = (ndf_ix)p.taxis[NSP - 1];
  NDF_IP_WALK;
  const ndf_ix ostep = (ndf_ix)(32 * p.ostr[nd - 1]);
  NDF_IP_RUNS(i0) {
    NDF_IP_RUN(i0);
    // each axis's record; those of the axes before the last change only where the point moves
    ndf_ix off[NSP][NT];
    bool out[NSP][NT];
    double w[NSP][NT];
    int head[NSP];
    NDF_IP_POINTS(i0);
#pragma unroll 1
    for (int k = 0; k < nk; k++) {
      NDF_IP_MOVE(k, 0);
#pragma unroll
      for (int d = 0; d < NSP; d++) {
        if (d == NSP - 1 || moved) {
          const ndf_ix r = (d == NSP - 1 ? last : (ndf_ix)p.taxis[d]) + xr[NSP - 1 - d];
          head[d] = __ldg(tt.head + r);
#pragma unroll
          for (int l = 0; l < NT; l++) {
            off[d][l] = __ldg(tt.off + (l * nr + r));
            out[d][l] = (head[d] >> (8 + l)) & 1;
            w[d][l] = __ldg(tt.w + (l * nr + r));
          }
        }
      }
      int code = 0, any = 0;
#pragma unroll
      for (int d = 0; d < NSP; d++) {
        if (code == 0) code = head[d] & 255;
        any |= head[d];
      }
      double res;
      if (code == 1) res = p.cval;
      else if (code == 2) res = __longlong_as_double(0x7ff8000000000000ll);
      else
        res = ndf_ip_sum(src, [&](const int *l) { return ndf_ip_offset(off, l); }, out, (any >> 8) != 0, p.cval, w);
      p.out[ooff] = ndf_ip_round(res);
      (void)coff;
    }
  }
}
#endif
