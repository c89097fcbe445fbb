// interp.cu -- scipy.ndimage's spline interpolation: the B-spline prefilter
// and the geometric transforms (zoom, shift, affine_transform, rotate,
// map_coordinates), in float64 with scipy's order of operations, so that
// the GPU gives the CPU backend's values (runtime/ops/interp/interp_cpu.c).
//
//   ndf_interp_load    a float64 contiguous copy of every image, padded by
//                      npad samples per spatial side (edge values, or the
//                      pad value for grid-constant), for the prefilter.
//   ndf_interp_spline  one prefilter pass along one axis of that copy, in
//                      place: a thread per line (Unser's recursive filter with
//                      scipy's boundary initialization of INIT).
//   ndf_interp_store   the copy into the output's dtype and strides with C's
//                      cast (the spline filters' output rule).
//   ndf_interp_eval    a thread per output point: its input coordinate (KIND:
//                      zoom/shift, affine, a coordinates array), then the sum
//                      over the (ORDER + 1)^NSP taps of the spline of ORDER in
//                      MODE, stored rounded as scipy rounds.  ORDER, MODE and
//                      NSP are compile-time, so the order-1 (trilinear) and
//                      order-3 paths are fully unrolled loops over 8 and 64 taps.
#include "ndf_common.cuh"

typedef NDF_SLOT(T) T;       /* source element: the input's, or double for the coefficients */
typedef NDF_SLOT(OUT) OUT;   /* output element */
typedef NDF_SLOT(CT) CT;     /* coordinates element (KIND 2) */
#define NSP NDF_SLOT(NSP)     /* spatial axes of the input */
#define ORDER NDF_SLOT(ORDER) /* spline order 0..5 */
#define MODE NDF_SLOT(MODE)   /* ndf_interp_mode */
#define KIND NDF_SLOT(KIND)   /* 0 zoom/shift, 1 affine, 2 coordinates */
#define INIT NDF_SLOT(INIT)   /* prefilter boundary: 0 mirror, 1 reflect, 2 wrap */
#define OFLOAT NDF_SLOT(OFLOAT) /* 1 when OUT is float or double */

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

// v stored as OUT with C's cast (as x86-64 does it: through int32 for the narrow types).
__device__ __forceinline__ OUT ndf_ip_cast(double v) {
#if OFLOAT
  return (OUT)v;
#else
  if (sizeof(OUT) == 8 && (OUT)-1 > 0) return (OUT)ndf_ip_u64(v);
  if (sizeof(OUT) == 8) return (OUT)ndf_ip_i64(v);
  if (sizeof(OUT) == 4 && (OUT)-1 > 0) return (OUT)ndf_ip_i64(v);
  return (OUT)ndf_ip_i32(v);
#endif
}

// scipy's interpolation output rule: integers rounded half away from zero and clamped.
__device__ __forceinline__ OUT ndf_ip_round(double v) {
#if OFLOAT
  return (OUT)v;
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
      const ndf_i64 ps = p.pshape[d], q = r / ps;
      ndf_i64 x = r - q * ps - p.npad;
      r = q;
      const ndf_i64 n = p.shape[p.nb + d];
      if (x < 0 || x >= n) {
        outside = true;
        x = x < 0 ? 0 : n - 1;
      }
      off += x * p.strides[p.nb + d];
    }
    for (int d = p.nb - 1; d >= 0; d--) {
      const ndf_i64 q = r / p.shape[d];
      off += (r - q * p.shape[d]) * p.strides[d];
      r = q;
    }
    p.buf[i] = (outside && p.pad_const) ? p.pad : (double)p.in[off];
  }
}
#endif

NDF_PARAMS(ndf_interp_spline_params)

// A line of n coefficients at c[0], c[s], ..., filtered in place for each pole.
#if NDF_KERNEL(ndf_interp_spline)
extern "C" __global__ void __launch_bounds__(128) ndf_interp_spline(const ndf_interp_spline_params p) {
  const ndf_i64 line = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x;
  if (line >= p.lines) return;
  const ndf_i64 n = p.n, s = p.inner, o = line / s, in = line - o * s;
  double *c = p.buf + o * n * s + in;
  if (n <= 1) return;
  double gain = 1.0;
  for (int k = 0; k < p.npoles; k++) gain = MUL(gain, MUL(1.0 - p.poles[k], 1.0 - 1.0 / p.poles[k]));
  for (ndf_i64 i = 0; i < n; i++) c[i * s] = MUL(c[i * s], gain);
  for (int k = 0; k < p.npoles; k++) {
    const double z = p.poles[k];
#if INIT == 0
    {  // mirror (period 2n - 2); zn = z^(n-1) from the host's pow, as the CPU's
      const double zn1 = p.zn[k];
      double zi = z;
      c[0] = c[0] + MUL(zn1, c[(n - 1) * s]);
      for (ndf_i64 i = 1; i < n - 1; i++) {
        c[0] += MUL(zi, c[i * s] + MUL(zn1, c[(n - 1 - i) * s]));
        zi = MUL(zi, z);
      }
      c[0] /= 1 - MUL(zn1, zn1);
    }
#elif INIT == 1
    {  // reflect (period 2n); zn = z^n; the last term reads the running sum in c[0], as scipy's
      const double zn = p.zn[k], c0 = c[0];
      double zi = z;
      c[0] = c[0] + MUL(zn, c[(n - 1) * s]);
      for (ndf_i64 i = 1; i < n; i++) {
        c[0] += MUL(zi, c[i * s] + MUL(zn, c[(n - 1 - i) * s]));
        zi = MUL(zi, z);
      }
      c[0] = MUL(c[0], z / (1 - MUL(zn, zn)));
      c[0] += c0;
    }
#else
    {  // wrap (period n)
      double zi = z;
      for (ndf_i64 i = 1; i < n; i++) {
        c[0] += MUL(zi, c[(n - i) * s]);
        zi = MUL(zi, z);
      }
      c[0] /= 1 - zi;
    }
#endif
    for (ndf_i64 i = 1; i < n; i++) c[i * s] += MUL(z, c[(i - 1) * s]);
#if INIT == 0
    c[(n - 1) * s] = MUL(MUL(z, c[(n - 2) * s]) + c[(n - 1) * s], z) / (MUL(z, z) - 1);
#elif INIT == 1
    c[(n - 1) * s] = MUL(c[(n - 1) * s], z / (z - 1));
#else
    {
      double zi = z;
      for (ndf_i64 i = 0; i < n - 1; i++) {
        c[(n - 1) * s] += MUL(zi, c[i * s]);
        zi = MUL(zi, z);
      }
      c[(n - 1) * s] = MUL(c[(n - 1) * s], z / (zi - 1));
    }
#endif
    for (ndf_i64 i = n - 2; i >= 0; i--) c[i * s] = MUL(z, c[(i + 1) * s] - c[i * s]);
  }
}
#endif

NDF_PARAMS(ndf_interp_store_params)

#if NDF_KERNEL(ndf_interp_store)
extern "C" __global__ void __launch_bounds__(256) ndf_interp_store(const ndf_interp_store_params p) {
  for (ndf_i64 i = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x; i < p.total; i += (ndf_i64)gridDim.x * blockDim.x) {
    ndf_i64 r = i, off = 0;
    for (int d = p.ndim - 1; d >= 0; d--) {
      const ndf_i64 q = r / p.shape[d];
      off += (r - q * p.shape[d]) * p.ostr[d];
      r = q;
    }
    const double v = p.buf[i];
#if OFLOAT
    p.out[off] = (OUT)v;
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

// The ORDER + 1 weights (scipy's formulas; the last one is 1 minus the others).
__device__ __forceinline__ void ndf_ip_weights(double x, double *w) {
  x -= floor((ORDER & 1) ? x : x + 0.5);
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

NDF_PARAMS(ndf_interp_eval_params)

#define NT (ORDER + 1)
__device__ constexpr int ndf_ip_pow(int b, int e) { return e == 0 ? 1 : b * ndf_ip_pow(b, e - 1); }

#if NDF_KERNEL(ndf_interp_eval)
extern "C" __global__ void __launch_bounds__(256) ndf_interp_eval(const ndf_interp_eval_params p) {
  // The boundary the taps use beyond an edge: constant and wrap mirror, as scipy's.
  const int smode = (MODE == M_CONSTANT || MODE == M_WRAP) ? M_MIRROR : MODE;
  const bool gc = MODE == M_GRID_CONSTANT, unmapped = gc || MODE == M_NEAREST;
  for (ndf_i64 i = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x; i < p.total; i += (ndf_i64)gridDim.x * blockDim.x) {
    ndf_i64 o[NDF_MAX_SPATIAL], r = i, ooff = 0, coff = 0, ib = 0;
    for (int d = p.onsp - 1; d >= 0; d--) {
      const ndf_i64 q = r / p.oshape[p.nb + d];
      o[d] = r - q * p.oshape[p.nb + d];
      r = q;
      ooff += o[d] * p.ostr[p.nb + d];
      coff += o[d] * p.cstr[1 + d];
    }
    const ndf_i64 b = r;
    for (int d = p.nb - 1; d >= 0; d--) {
      const ndf_i64 q = r / p.oshape[d], x = r - q * p.oshape[d];
      r = q;
      ooff += x * p.ostr[d];
      ib += x * p.istr[d];
    }
    // The source image: the coefficients (contiguous, image b) or the input (image offset ib).
    const T *src = p.filtered ? p.src + b * p.svol : p.src + ib;
    double c[NSP];
#if KIND == 0
#pragma unroll
    for (int d = 0; d < NSP; d++) {
      double cc = (double)o[d];
      if (p.has_shift) cc += p.shift[d];
      if (p.has_zoom) cc = p.grid_mode ? MUL(cc + 0.5, p.zoom[d]) - 0.5 : MUL(cc, p.zoom[d]);
      c[d] = cc;
    }
#elif KIND == 1
#pragma unroll
    for (int h = 0; h < NSP; h++) {
      const double *m = p.matrix + h * p.onsp;
      double t = MUL((double)o[0], m[0]);
      for (int l = 1; l < p.onsp; l++) t += MUL((double)o[l], m[l]);
      c[h] = t + p.offset[h];
    }
#else
#pragma unroll
    for (int d = 0; d < NSP; d++) c[d] = (double)p.coords[coff + d * p.cstr[0]];
#endif
    ndf_i64 off[NSP][NT];
    bool out[NSP][NT];
    double w[NSP][NT];
    bool any_out = false, done = false;
    double res = 0.0;
#pragma unroll
    for (int d = 0; d < NSP; d++) {
      if (done) break;
      const ndf_i64 n = p.sshape[d];
      double cc = c[d] + p.npad;
      if (!(fabs(cc) < 4503599627370496.0)) {
        res = unmapped ? __longlong_as_double(0x7ff8000000000000ll) : p.cval;
        done = true;
        break;
      }
      if (!unmapped) {
        cc = ndf_ip_map(cc, n, MODE);
        if (!(cc > -1.0)) {
          res = p.cval;
          done = true;
          break;
        }
      }
      const ndf_i64 start = (ndf_i64)floor((ORDER & 1) ? cc : cc + 0.5) - ORDER / 2;
#pragma unroll
      for (int l = 0; l < NT; l++) {
        const ndf_i64 idx = start + l;
        if (gc) {
          out[d][l] = idx < 0 || idx >= n;
          any_out |= out[d][l];
          off[d][l] = out[d][l] ? 0 : idx * p.sstr[d];
        } else {
          out[d][l] = false;
          const ndf_i64 mm = (idx >= 0 && idx < n) ? idx : (ndf_i64)ndf_ip_map((double)idx, n, smode);
          off[d][l] = mm * p.sstr[d];
        }
      }
#if ORDER > 0
      ndf_ip_weights(cc, w[d]);
#endif
    }
    if (!done) {
      // The taps in raster order (last axis fastest), each value times its weights axis by axis.
      double t = 0.0;
      // Unrolled up to 64 taps (order 1 to 6 axes, orders 2 and 3 to 3 axes): the fast paths; larger
      // supports loop, so that high orders in many axes still compile quickly.
#if ORDER == 0 || (ORDER == 1 && NSP <= 6) || (ORDER <= 3 && NSP <= 3) || NSP <= 2
#pragma unroll
#else
#pragma unroll 1
#endif
      for (int k = 0; k < ndf_ip_pow(NT, NSP); k++) {
        int l[NSP];
        int kk = k;
#pragma unroll
        for (int d = NSP - 1; d >= 0; d--) {
          l[d] = kk % NT;
          kk /= NT;
        }
        bool is_cval = false;
        if (gc && any_out) {
#pragma unroll
          for (int d = 0; d < NSP; d++) is_cval |= out[d][l[d]];
        }
        double v;
        if (is_cval) {
          v = p.cval;
        } else {
          ndf_i64 so = 0;
#pragma unroll
          for (int d = 0; d < NSP; d++) so += off[d][l[d]];
          v = (double)src[so];
        }
#if ORDER > 0
#pragma unroll
        for (int d = 0; d < NSP; d++) v = MUL(v, w[d][l[d]]);
#endif
        t += v;
      }
      res = t;
    }
    p.out[ooff] = ndf_ip_round(res);
  }
}
#endif
