/*
 * filters/filters.h -- the linear filters (scipy.ndimage): a normalized 1-D
 * pass, the N-D tap table, scipy's conversion of a double to an output
 * dtype, and the CPU and CUDA backends that run them.
 */
#ifndef NDF_OPS_FILTERS_H
#define NDF_OPS_FILTERS_H

#include <math.h>

#include "internal.h"

/* One 1-D pass along an axis, as scipy's NI_Correlate1D / NI_UniformFilter1D
 * run it: output x reads the line extended by the mode at coordinates
 * x - (n/2 + origin) ... x - (n/2 + origin) + n - 1. */
typedef struct ndf__fpass {
  int axis;       /* axis of the array (batch axes excluded by the caller) */
  int uniform;    /* 1: running mean of n taps (w unused) */
  int64_t n;      /* taps, >= 1 */
  double *w;      /* n weights in correlation order (malloc'd; see ndf__fpass_free) */
  int sym;        /* scipy's symmetry class of w: 1 symmetric, -1 antisymmetric, 0 neither */
  int64_t origin;
  ndf_mode mode;
} ndf__fpass;

void ndf__fpass_free(ndf__fpass *p, int n);
/* scipy's test (odd n, |w[c+k] -/+ w[c-k]| <= DBL_EPSILON for every k). */
int ndf__filters_symmetry(const double *w, int64_t n);
/* scipy's _gaussian_kernel1d(sigma, order, radius), reversed for the
 * correlation, into w (2 radius + 1 values). */
void ndf__gaussian_kernel(double sigma, int order, int64_t radius, double *w);

/* The N-D taps of ndf_correlate: ntaps offsets (nsp each, relative to the
 * output voxel) and weights, in scipy's order. */
typedef struct ndf__ftaps {
  int nsp;
  int64_t ntaps;
  int32_t *off;
  double *w;
  int32_t rlo[NDF_MAX_SPATIAL], rhi[NDF_MAX_SPATIAL];
  ndf_mode mode;
} ndf__ftaps;

/* Elementwise steps of the compositions, NumPy arithmetic of the dtype. */
typedef enum {
  NDF__FEW_ADD = 0,    /* out += a */
  NDF__FEW_SQUARE = 1, /* out *= out */
  NDF__FEW_SQRT = 2    /* out = sqrt(out), np.sqrt(out, out, casting='unsafe') */
} ndf__few_kind;

/* ---- scipy's double -> dtype conversion (a C cast as gcc emits it on x86-64) ---- */
static inline int32_t ndf__cvt_i32(double v) {
  return v > -2147483649.0 && v < 2147483648.0 ? (int32_t)v : INT32_MIN;
}
static inline int64_t ndf__cvt_i64(double v) {
  return v >= -9223372036854775808.0 && v < 9223372036854775808.0 ? (int64_t)v : INT64_MIN;
}
/* scipy's N-D correlate (NI_Correlate) converts to uint64 as its sign says:
 * a negative sum as the negated conversion of its magnitude (so (-2^64, 0)
 * wraps around exactly, -2^64 and below give 0); the line filters convert as
 * ndf__cvt_u64. */
static inline uint64_t ndf__cvt_u64_signed(double v) { return v < 0 ? (uint64_t)0 - ndf__cvt_u64(-v) : ndf__cvt_u64(v); }
/* The scipy output element of dtype t for the sum v, written at p. */
static inline void ndf__store_double(ndf_dtype t, void *p, double v) {
  switch (t) {
    case NDF_UINT8: *(uint8_t *)p = (uint8_t)(uint32_t)ndf__cvt_i32(v); break;
    case NDF_INT8: *(int8_t *)p = (int8_t)(uint8_t)(uint32_t)ndf__cvt_i32(v); break;
    case NDF_UINT16: *(uint16_t *)p = (uint16_t)(uint32_t)ndf__cvt_i32(v); break;
    case NDF_INT16: *(int16_t *)p = (int16_t)(uint16_t)(uint32_t)ndf__cvt_i32(v); break;
    case NDF_UINT32: *(uint32_t *)p = (uint32_t)(uint64_t)ndf__cvt_i64(v); break;
    case NDF_INT32: *(int32_t *)p = ndf__cvt_i32(v); break;
    case NDF_INT64: *(int64_t *)p = ndf__cvt_i64(v); break;
    case NDF_UINT64: *(uint64_t *)p = ndf__cvt_u64(v); break;
    case NDF_FLOAT32: *(float *)p = (float)v; break;
    default: *(double *)p = v; break;
  }
}

/* ---- backends ---------------------------------------------------------------------- */
/* The np passes p from src to dst (same shape; dst's dtype): the first reads
 * src, the others dst in place.  CPU: src may be dst. */
ndf_status ndf__filters_line_cpu(ndf_ctx *ctx, const char *name, const ndf_array *src, ndf_array *dst,
                                 const ndf__fpass *p, int np, double cval);
ndf_status ndf__filters_taps_cpu(ndf_ctx *ctx, const char *name, const ndf_array *src, ndf_array *dst,
                                 const ndf__ftaps *t, double cval);
/* dst = src converted (NumPy's cast: integers wrap, floats as ndf__store_double). */
void ndf__filters_cast_cpu(ndf_ctx *ctx, const ndf_array *src, ndf_array *dst);
void ndf__filters_ew_cpu(ndf_ctx *ctx, ndf__few_kind kind, const ndf_array *a, ndf_array *out);

/* CUDA: src and dst never alias. */
ndf_status ndf__filters_line_cuda(ndf_ctx *ctx, const char *name, const ndf_array *src, ndf_array *dst,
                                  const ndf__fpass *p, double cval);
/* 1 when passes a then b (of an array of ndim axes) may run as one filter_plane launch: a along an
 * axis other than the last, b along the last, both correlations of at most NDF__PLANE_MAX_TAPS. */
#define NDF__PLANE_MAX_TAPS 25
int ndf__filters_plane_applies(const ndf__fpass *a, const ndf__fpass *b, int ndim);
/* Passes a then b in one launch (ndf__filters_plane_applies); src and dst never alias. */
ndf_status ndf__filters_plane_cuda(ndf_ctx *ctx, const char *name, const ndf_array *src, ndf_array *dst,
                                   const ndf__fpass *a, const ndf__fpass *b, double cval);
ndf_status ndf__filters_taps_cuda(ndf_ctx *ctx, const char *name, const ndf_array *src, ndf_array *dst,
                                  const ndf__ftaps *t, double cval);
ndf_status ndf__filters_cast_cuda(ndf_ctx *ctx, const char *name, const ndf_array *src, ndf_array *dst);
ndf_status ndf__filters_ew_cuda(ndf_ctx *ctx, const char *name, ndf__few_kind kind, const ndf_array *a,
                                ndf_array *out);

#endif
