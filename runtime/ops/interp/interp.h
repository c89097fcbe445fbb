/*
 * interp/interp.h -- interpolation (scipy.ndimage's spline filters and
 * geometric transforms): the normalized plan shared by validation, the CPU
 * and the CUDA backends, and the scalar rules both backends follow.
 */
#ifndef NDF_OPS_INTERP_H
#define NDF_OPS_INTERP_H

#include <math.h>

#include "internal.h"

/* How an output point becomes an input coordinate. */
typedef enum {
  NDF__XF_ZOOMSHIFT = 0, /* per axis: c = o (+ shift); zoom: c *= zoom, or (c + 0.5) zoom - 0.5 (grid_mode) */
  NDF__XF_AFFINE = 1,    /* c = matrix @ o + offset: the products summed left to right, then the offset (scipy's order) */
  NDF__XF_COORDS = 2     /* c = coordinates[:, o] */
} ndf__xf_kind;

/* A geometric transform after scipy's arguments are normalized.  The input
 * has nb batch axes and nsp spatial ones; the output nb and onsp. */
typedef struct ndf__interp_plan {
  int nb, nsp, onsp;
  int order;
  ndf_interp_mode mode;
  double cval;
  int filtered; /* the source is the float64 spline coefficients (prefilter and order >= 2) */
  int npad;     /* samples of padding per side of the coefficients (12 for nearest, grid-constant) */
  ndf__xf_kind kind;
  int has_zoom, has_shift, grid_mode;
  double zoom[NDF_MAX_SPATIAL], shift[NDF_MAX_SPATIAL];
  double matrix[NDF_MAX_SPATIAL * NDF_MAX_SPATIAL]; /* nsp rows of onsp */
  double offset[NDF_MAX_SPATIAL];
  const ndf_array *coords; /* NDF__XF_COORDS: (nsp, out spatial...) */
} ndf__interp_plan;

/* Padding scipy puts around the input before prefiltering in the nearest and grid-constant modes. */
#define NDF__INTERP_NPAD 12
/* Coordinates at least this large in magnitude are treated as non-finite. */
#define NDF__INTERP_HUGE 4503599627370496.0 /* 2^52 */

/* The boundary the spline's taps use beyond an edge: constant and wrap
 * (which have no exact spline boundary) mirror, as scipy does. */
static inline ndf_interp_mode ndf__spline_mode(ndf_interp_mode m) {
  return (m == NDF_INTERP_CONSTANT || m == NDF_INTERP_WRAP) ? NDF_INTERP_MIRROR : m;
}

/* Maps a coordinate outside [0, n-1] back for mode, in scipy's double
 * arithmetic; -1 for constant outside.  |x| < 2^52. */
static inline double ndf__interp_map(double x, int64_t n, ndf_interp_mode mode) {
  if (x < 0) {
    switch (mode) {
      case NDF_INTERP_MIRROR:
        if (n <= 1) return 0;
        {
          const int64_t p = 2 * n - 2;
          x += (double)p * (double)(int64_t)(-x / p);
          return x <= 1 - n ? x + p : -x;
        }
      case NDF_INTERP_REFLECT:
        if (n <= 1) return 0;
        {
          const int64_t p = 2 * n;
          if (x < -p) x += (double)p * (double)(int64_t)(-x / p);
          if (x < -n) return x + p;
          return (x > -1e-15 ? 1e-15 : -x) - 1; /* keeps a tiny negative x off -1 */
        }
      case NDF_INTERP_WRAP:
        if (n <= 1) return 0;
        return x + (double)(n - 1) * (double)((int64_t)(-x / (n - 1)) + 1);
      case NDF_INTERP_GRID_WRAP:
        if (n <= 1) return 0;
        return x + (double)n * (double)((int64_t)((-1 - x) / n) + 1);
      case NDF_INTERP_NEAREST: return 0;
      case NDF_INTERP_CONSTANT: return -1;
      default: return x;
    }
  }
  if (x > n - 1) {
    switch (mode) {
      case NDF_INTERP_MIRROR:
        if (n <= 1) return 0;
        {
          const int64_t p = 2 * n - 2;
          x -= (double)p * (double)(int64_t)(x / p);
          return x >= n ? p - x : x;
        }
      case NDF_INTERP_REFLECT:
        if (n <= 1) return 0;
        {
          const int64_t p = 2 * n;
          x -= (double)p * (double)(int64_t)(x / p);
          return x >= n ? p - x - 1 : x;
        }
      case NDF_INTERP_WRAP:
        if (n <= 1) return 0;
        return x - (double)(n - 1) * (double)(int64_t)(x / (n - 1));
      case NDF_INTERP_GRID_WRAP:
        if (n <= 1) return 0;
        return x - (double)n * (double)(int64_t)(x / n);
      case NDF_INTERP_NEAREST: return (double)(n - 1);
      case NDF_INTERP_CONSTANT: return -1;
      default: return x;
    }
  }
  return x;
}

/* The order + 1 B-spline weights of the taps start .. start + order around
 * coordinate x (start = floor(x) - order/2 for odd orders, floor(x + 0.5) -
 * order/2 for even ones); the last weight is 1 minus the others. */
static inline void ndf__spline_weights(double x, int order, double *w) {
  x -= floor((order & 1) ? x : x + 0.5);
  const double z = 1.0 - x;
  double y, t;
  switch (order) {
    case 1: w[0] = 1.0 - x; break;
    case 2:
      w[1] = 0.75 - x * x;
      y = 0.5 - x;
      w[0] = 0.5 * y * y;
      break;
    case 3:
      w[1] = (x * x * (x - 2.0) * 3.0 + 4.0) / 6.0;
      w[2] = (z * z * (z - 2.0) * 3.0 + 4.0) / 6.0;
      w[0] = z * z * z / 6.0;
      break;
    case 4:
      t = x * x;
      w[2] = t * (t * 0.25 - 0.625) + 115.0 / 192.0;
      y = 1.0 + x;
      w[1] = y * (y * (y * (5.0 - y) / 6.0 - 1.25) + 5.0 / 24.0) + 55.0 / 96.0;
      y = z;
      w[3] = y * (y * (y * (5.0 - y) / 6.0 - 1.25) + 5.0 / 24.0) + 55.0 / 96.0;
      y = 0.5 - x;
      t = y * y;
      w[0] = t * t / 24.0;
      break;
    case 5:
      t = x * x;
      w[2] = t * (t * (0.25 - x / 12.0) - 0.5) + 0.55;
      t = z * z;
      w[3] = t * (t * (0.25 - z / 12.0) - 0.5) + 0.55;
      y = x + 1.0;
      w[1] = y * (y * (y * (y * (y / 24.0 - 0.375) + 1.25) - 1.75) + 0.625) + 0.425;
      y = z + 1.0;
      w[4] = y * (y * (y * (y * (y / 24.0 - 0.375) + 1.25) - 1.75) + 0.625) + 0.425;
      y = 1.0 - x;
      t = y * y;
      w[0] = y * t * t / 120.0;
      break;
    default: return;
  }
  w[order] = 1.0;
  for (int i = 0; i < order; i++) w[order] -= w[i];
}

/* The poles of the B-spline prefilter of order 2..5 (order/2 of them). */
static inline int ndf__spline_poles(int order, double *p) {
  switch (order) {
    case 2: p[0] = -0.171572875253809902396622551580603843; return 1; /* sqrt(8) - 3 */
    case 3: p[0] = -0.267949192431122706472553658494127633; return 1; /* sqrt(3) - 2 */
    case 4:
      p[0] = -0.361341225900220177092212841325675255;
      p[1] = -0.013725429297339121360331226939128204;
      return 2;
    case 5:
      p[0] = -0.430575347099973791851434783493520110;
      p[1] = -0.043096288203264653822712376822550182;
      return 2;
    default: return 0;
  }
}

/* x86-64's conversions of a double (what NumPy and scipy get there): NaN and
 * values out of range become the most negative value. */
static inline int32_t ndf__cvt_i32(double v) {
  return (v > -2147483649.0 && v < 2147483648.0) ? (int32_t)v : INT32_MIN;
}
static inline int64_t ndf__cvt_i64(double v) {
  return (v >= -9223372036854775808.0 && v < 9223372036854775808.0) ? (int64_t)v : INT64_MIN;
}

/* Stores v into element p of dtype t.  round = 1: scipy's interpolation
 * output rule (half away from zero, clamped to the dtype); 0: C's cast
 * (truncation) as NumPy and scipy's line buffers do.  bool is scipy's
 * npy_bool (unsigned char) under either rule: C's cast, no rounding or
 * clamping (x86-64: truncation to int32, its low byte; so 0.9 is 0, 1.7 is
 * 1, -1.5 is the byte 255, 300.5 the byte 44, NaN 0). */
static inline void ndf__interp_store(void *p, ndf_dtype t, double v, int round) {
  if (round && t != NDF_FLOAT32 && t != NDF_FLOAT64 && t != NDF_BOOL) {
    double lo, hi;
    switch (t) {
      case NDF_UINT8: lo = 0; hi = 255; break;
      case NDF_UINT16: lo = 0; hi = 65535; break;
      case NDF_UINT32: lo = 0; hi = 4294967295.0; break;
      case NDF_INT8: lo = -128; hi = 127; break;
      case NDF_INT16: lo = -32768; hi = 32767; break;
      case NDF_INT32: lo = -2147483648.0; hi = 2147483647.0; break;
      case NDF_UINT64: lo = 0; hi = 18446744073709551616.0; break;
      default: lo = -9223372036854775808.0; hi = 9223372036854775808.0; break;
    }
    /* 64-bit: scipy compares with the extreme as a double (2^63, 2^64) and
     * stores the integer extreme beyond it; the extreme itself converts */
    if (lo == 0) {
      v = v > 0 ? v + 0.5 : 0;
      if (v > hi && t == NDF_UINT64) { *(uint64_t *)p = UINT64_MAX; return; }
      if (v > hi) v = hi;
    } else {
      v = v > 0 ? v + 0.5 : v - 0.5;
      if (v > hi && t == NDF_INT64) { *(int64_t *)p = INT64_MAX; return; }
      if (v > hi) v = hi;
      if (v < lo) v = lo;
    }
  }
  switch (t) {
    case NDF_BOOL: case NDF_UINT8: *(uint8_t *)p = (uint8_t)ndf__cvt_i32(v); break;
    case NDF_INT8: *(int8_t *)p = (int8_t)ndf__cvt_i32(v); break;
    case NDF_UINT16: *(uint16_t *)p = (uint16_t)ndf__cvt_i32(v); break;
    case NDF_INT16: *(int16_t *)p = (int16_t)ndf__cvt_i32(v); break;
    case NDF_INT32: *(int32_t *)p = ndf__cvt_i32(v); break;
    case NDF_UINT32: *(uint32_t *)p = (uint32_t)ndf__cvt_i64(v); break;
    case NDF_INT64: *(int64_t *)p = ndf__cvt_i64(v); break;
    case NDF_UINT64: *(uint64_t *)p = ndf__cvt_u64(v); break;
    case NDF_FLOAT32: *(float *)p = (float)v; break;
    default: *(double *)p = v; break;
  }
}

/* cval as scipy pads with it (numpy.pad into the input's dtype): converted
 * to that dtype by C's cast, an integer wrapping around, bool true when not 0. */
static inline double ndf__interp_pad_value(ndf_dtype t, double cval) {
  if (t == NDF_BOOL) return cval != 0;
  if (t == NDF_FLOAT32) return (float)cval;
  if (t == NDF_FLOAT64) return cval;
  const int64_t x = (cval > -9223372036854775808.0 && cval < 9223372036854775808.0) ? (int64_t)cval : INT64_MIN;
  switch (t) {
    case NDF_UINT8: return (uint8_t)x;
    case NDF_INT8: return (int8_t)x;
    case NDF_UINT16: return (uint16_t)x;
    case NDF_INT16: return (int16_t)x;
    case NDF_UINT32: return (uint32_t)x;
    case NDF_INT32: return (int32_t)x;
    case NDF_UINT64: return (double)(uint64_t)x;
    default: return (double)x;
  }
}

/* The prefilter's boundary initialization for mode: 0 mirror, 1 reflect, 2 wrap (scipy's choice). */
static inline int ndf__spline_init(ndf_interp_mode m) {
  return m == NDF_INTERP_GRID_WRAP ? 2 : (m == NDF_INTERP_NEAREST || m == NDF_INTERP_REFLECT) ? 1 : 0;
}

/* How a pass stores its line buffer: C's cast (scipy's line buffers), or for a
 * pass of order <= 1 (a copy: scipy's output[...] = numpy.array(input)) NumPy's
 * cast where it differs from C's. */
enum {
  NDF__STORE_C = 0,    /* C's cast (a bool copied into a bool keeps its byte) */
  NDF__STORE_WRAP = 1, /* an integer into an integer dtype: its low bits (NumPy's integer casts wrap around) */
  NDF__STORE_NZ = 2    /* into or out of a bool (not both): v != 0 (NumPy's casts to bool, and a bool's byte read as 0/1) */
};

/* The store rule of a spline filter pass that reads src (both backends; the CUDA store kernel's int_copy). */
static inline int ndf__spline_store_rule(int filter, ndf_dtype src, ndf_dtype out) {
  if (filter) return NDF__STORE_C;
  if ((src == NDF_BOOL) != (out == NDF_BOOL)) return NDF__STORE_NZ;
  return !ndf__dtype_is_float(src) && out != NDF_BOOL ? NDF__STORE_WRAP : NDF__STORE_C;
}

/* ---- backends ---------------------------------------------------------------------------- */
/* One B-spline prefilter pass of a line of n coefficients in place (scipy's
 * boundary initialization for mode). */
void ndf__spline_line(double *c, int64_t n, const double *poles, int npoles, ndf_interp_mode mode);

/* spline_filter1d along the listed axes in turn (each pass reads the previous
 * pass's output); in and out have one shape. */
ndf_status ndf__spline_filter_cpu(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out, int order,
                                  int naxes, const int *axes, ndf_interp_mode mode);
ndf_status ndf__interp_cpu(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out,
                           const ndf__interp_plan *p);
ndf_status ndf__spline_filter_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out, int order,
                                   int naxes, const int *axes, ndf_interp_mode mode);
ndf_status ndf__interp_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out,
                            const ndf__interp_plan *p);

#endif
