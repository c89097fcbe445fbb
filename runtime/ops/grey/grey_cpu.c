/*
 * grey_cpu.c -- the CPU backend of grey erosion/dilation: the reference the
 * GPU is tested against, itself tested against scipy.ndimage.
 *
 * Flat boxes run as separable passes (one per axis with extent > 1), like
 * scipy; other elements visit every tap, with precomputed linear offsets
 * where the element lies inside the image and the boundary mode elsewhere.
 * Rows are spread over OpenMP threads.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grey/grey.h"


/* NaN-propagating min/max for floats, plain for integers (IS_FLOAT is a constant). */
#define PICK(IS_FLOAT, op, a, b)                                                     \
  ((op) == NDF__MIN ? (((b) < (a) || (IS_FLOAT && (b) != (b))) ? (b) : (a))         \
                    : (((b) > (a) || (IS_FLOAT && (b) != (b))) ? (b) : (a)))

/* One instantiation per dtype: X(type, suffix, is_float, kind) */
#define NDF_CPU_TYPES(X)                  \
  X(uint8_t, u8, 0, 0)                    \
  X(int8_t, i8, 0, 0)                     \
  X(uint16_t, u16, 0, 0)                  \
  X(int16_t, i16, 0, 0)                   \
  X(uint32_t, u32, 0, 0)                  \
  X(int32_t, i32, 0, 0)                   \
  X(int64_t, i64, 0, 0)                   \
  X(uint64_t, u64, 0, 0)                  \
  X(float, f32, 1, 1)                     \
  X(double, f64, 1, 2)

/* scipy's weighted tap arithmetic (see templates/grey_taps.cu). */
static inline double sat(double v, double lo, double hi) { return v < lo ? lo : (v > hi ? hi : v); }

#define DEFINE_CPU(T, SUF, IS_FLOAT, KIND)                                                                  \
  static inline double wtap_##SUF(T v, double wc, double lo, double hi) {                                  \
    if (KIND == 1) return (double)((float)v + (float)wc);                                                  \
    if (KIND == 2) return (double)v + wc;                                                                  \
    return sat((double)v + wc, lo, hi);                                                                    \
  }                                                                                                        \
  static inline T outv_##SUF(double acc, double lo, double hi) {                                           \
    if (KIND == 0) return (T)sat(trunc(acc), lo, hi);                                                      \
    return (T)acc;                                                                                         \
  }                                                                                                        \
  /* General element: taps with linear offsets inside, the mode at the border. */                         \
  static int taps_##SUF(const ndf_ctx *ctx, const ndf_array *in, ndf_array *out, const ndf__grey_geom *g,  \
                         int64_t ntaps, const int32_t *taps, const double *wf, const double *wc) {         \
    const int ndim = in->ndim, nsp = g->nsp, nb = ndim - nsp, L = ndim - 1, Ls = nsp - 1;                  \
    const T *src = in->data;                                                                               \
    T *dst = out->data;                                                                                    \
    const ndf__minmax op = g->op;                                                                          \
    const T cv = (T)g->cval;                                                                               \
    double lo = 0, hi = 0;                                                                                 \
    ndf__dtype_range(in->dtype, &lo, &hi);                                                                 \
    int64_t *loff = malloc((size_t)ntaps * sizeof *loff);                                                  \
    if (!loff) return -1;                                                                                  \
    int32_t rlo[NDF_MAX_SPATIAL], rhi[NDF_MAX_SPATIAL]; \
    ndf__tap_table(taps, ntaps, nsp, in->strides + nb, loff, rlo, rhi); \
    const int64_t nx = in->shape[L];                                                                       \
    int64_t nrows = 1;                                                                                     \
    for (int d = 0; d < L; d++) nrows *= in->shape[d];                                                     \
    int64_t xa = -rlo[Ls] > 0 ? -rlo[Ls] : 0, xb = nx - (rhi[Ls] > 0 ? rhi[Ls] : 0);                      \
    if (xb < xa) xb = xa;                                                                                  \
    const int nth = ndf__cpu_threads(ctx);                                                                 \
    void **bufs = ndf__thread_buffers(nth, (size_t)(nx > 0 ? nx : 1) * sizeof(T));                         \
    if (!bufs) { free(loff); return -1; }                                                                  \
    _Pragma("omp parallel num_threads(nth)")                                                               \
    {                                                                                                      \
    T *accrow = bufs[ndf__thread_id()];                                                                    \
    _Pragma("omp for schedule(dynamic, 8)")                                                                \
    for (int64_t row = 0; row < nrows; row++) {                                                            \
      int64_t c[NDF_MAX_NDIM], ib, ob, ispat; \
      const int inside = ndf__row_decode(row, in, out, nb, rlo, rhi, c, &ib, &ispat, &ob); \
      const T *img = src + ib;                                                                             \
      const int64_t sx = in->strides[L];                                                                   \
      /* Interior segment of a flat element: tap-outer loops over the row (vectorizable). */               \
      const int64_t fa = (inside && !wf) ? xa : nx, fb = (inside && !wf) ? xb : nx;                        \
      if (fa < fb) {                                                                                       \
        const T *p0 = img + ispat + loff[0];                                                               \
        for (int64_t x = fa; x < fb; x++) accrow[x] = p0[x * sx];                                          \
        for (int64_t k = 1; k < ntaps; k++) {                                                              \
          const T *pk = img + ispat + loff[k];                                                             \
          if (sx == 1)                                                                                     \
            for (int64_t x = fa; x < fb; x++) accrow[x] = PICK(IS_FLOAT, op, accrow[x], pk[x]);            \
          else                                                                                             \
            for (int64_t x = fa; x < fb; x++) accrow[x] = PICK(IS_FLOAT, op, accrow[x], pk[x * sx]);       \
        }                                                                                                  \
      }                                                                                                    \
      for (int64_t x = 0; x < nx; x++) {                                                                   \
        if (x >= fa && x < fb) continue;                                                                   \
        const int fast = inside && x >= xa && x < xb;                                                      \
        const T *base = img + ispat + x * sx;                                                              \
        double dacc = 0;                                                                                   \
        T acc = cv;                                                                                        \
        for (int64_t k = 0; k < ntaps; k++) {                                                              \
          T v;                                                                                             \
          if (fast) {                                                                                      \
            v = base[loff[k]];                                                                             \
          } else {                                                                                         \
            int64_t off;                                                                \
            v = ndf__tap_border_offset(taps + k * nsp, c, x, in, nb, g->mode, &off) ? img[off] : cv; \
          }                                                                                                \
          if (wf) {                                                                                        \
            double t = k == 0 ? (double)v + wf[0] : wtap_##SUF(v, wc[k], lo, hi);                          \
            dacc = k == 0 ? t : PICK(1, op, dacc, t);                                                      \
          } else {                                                                                         \
            acc = k == 0 ? v : PICK(IS_FLOAT, op, acc, v);                                                 \
          }                                                                                                \
        }                                                                                                  \
        accrow[x] = wf ? outv_##SUF(dacc, lo, hi) : acc;                                                   \
      }                                                                                                    \
      T *orow = dst + ob;                                                                                  \
      const int64_t osx = out->strides[L];                                                                 \
      for (int64_t x = 0; x < nx; x++) orow[x * osx] = accrow[x];                                          \
    }                                                                                                      \
    }                                                                                                      \
    ndf__thread_buffers_free(bufs, nth);                                                                   \
    free(loff);                                                                                            \
    return 0;                                                                                              \
  }                                                                                                        \
  /* One separable pass along axis a of contiguous arrays: window [lo, lo+K). */                           \
  static void pass_##SUF(const ndf_ctx *ctx, void **bufs, int nth, const T *src, T *dst, const int64_t *shape, \
                         int ndim, int a, int64_t K, int64_t lo, ndf_mode mode, ndf__minmax op, T cv) {    \
    int64_t inner = 1, outer = 1, n = shape[a];                                                            \
    for (int d = a + 1; d < ndim; d++) inner *= shape[d];                                                  \
    for (int d = 0; d < a; d++) outer *= shape[d];                                                         \
    if (inner == 1) {                                                                                      \
      _Pragma("omp parallel num_threads(nth)")                                                             \
      {                                                                                                    \
        T *ext = bufs[ndf__thread_id()]; /* holds n + K values: allocated by the caller */                 \
        _Pragma("omp for schedule(static)")                                                                \
        for (int64_t o = 0; o < outer; o++) {                                                              \
          const T *s = src + o * n;                                                                        \
          T *t = dst + o * n;                                                                              \
          for (int64_t j = 0; j < n + K - 1; j++) {                                                        \
            int64_t m = ndf__map_coord(j + lo, n, mode);                                                        \
            ext[j] = m < 0 ? cv : s[m];                                                                    \
          }                                                                                                \
          for (int64_t x = 0; x < n; x++) {                                                                \
            T m = ext[x];                                                                                  \
            for (int64_t k = 1; k < K; k++) m = PICK(IS_FLOAT, op, m, ext[x + k]);                         \
            t[x] = m;                                                                                      \
          }                                                                                                \
        }                                                                                                  \
      }                                                                                                    \
      return;                                                                                              \
    }                                                                                                      \
    _Pragma("omp parallel for schedule(static) num_threads(nth)")                                          \
    for (int64_t oi = 0; oi < outer * n; oi++) {                                                           \
      const int64_t o = oi / n, i = oi % n;                                                                \
      T *t = dst + oi * inner;                                                                             \
      for (int64_t k = 0; k < K; k++) {                                                                    \
        int64_t m = ndf__map_coord(i + lo + k, n, mode);                                                        \
        const T *s = src + (o * n + (m < 0 ? 0 : m)) * inner;                                              \
        if (k == 0) {                                                                                      \
          if (m < 0) for (int64_t j = 0; j < inner; j++) t[j] = cv;                                        \
          else memcpy(t, s, (size_t)inner * sizeof(T));                                                    \
        } else if (m < 0) {                                                                                \
          for (int64_t j = 0; j < inner; j++) t[j] = PICK(IS_FLOAT, op, t[j], cv);                         \
        } else {                                                                                           \
          for (int64_t j = 0; j < inner; j++) t[j] = PICK(IS_FLOAT, op, t[j], s[j]);                       \
        }                                                                                                  \
      }                                                                                                    \
    }                                                                                                      \
  }

/*
 * One van Herk/Gil-Werman pass along axis a of contiguous arrays: window
 * [lo, lo+K).  A line, extended through the mode, is cut into blocks of K;
 * h holds suffix minima within a block (right to left), g prefix minima
 * (left to right), and out[x] = pick(h[x], g[x+K-1]), or g[x+K-1] alone
 * when x starts a block: about three comparisons per voxel for any K.
 * Every pick keeps the operand covering earlier positions first, so ties
 * (-0.0 and 0.0) and NaNs resolve exactly as in the O(K) left-to-right pass.
 * W neighbouring lines (along the contiguous axis) are processed together.
 * Each thread needs vhgw_bytes() of buffer.
 */
#define VHGW_W 64
static size_t vhgw_bytes(int64_t n, int64_t K, int64_t inner, size_t es) {
  const int64_t W = inner < VHGW_W ? inner : VHGW_W;
  return (size_t)((2 * (n + K - 1) + 1) * W) * es;
}

#define DEFINE_VHGW(T, SUF, IS_FLOAT, KIND)                                                                  \
  static void vhgw_##SUF(void **bufs, int nth, const T *src, T *dst, const int64_t *shape, int ndim, int a,   \
                         int64_t K, int64_t lo, ndf_mode mode, ndf__minmax op, T cv) {                      \
    int64_t inner = 1, outer = 1, n = shape[a];                                                             \
    for (int d = a + 1; d < ndim; d++) inner *= shape[d];                                                   \
    for (int d = 0; d < a; d++) outer *= shape[d];                                                          \
    const int64_t W = inner < VHGW_W ? inner : VHGW_W, nchunk = (inner + W - 1) / W, E = n + K - 1;         \
    _Pragma("omp parallel num_threads(nth)")                                                                \
    {                                                                                                       \
      T *ext = bufs[ndf__thread_id()], *h = ext + E * W, *gr = h + E * W;                                   \
      _Pragma("omp for schedule(static)")                                                                   \
      for (int64_t u = 0; u < outer * nchunk; u++) {                                                        \
        const int64_t o = u / nchunk, c0 = (u % nchunk) * W, w = inner - c0 < W ? inner - c0 : W;           \
        for (int64_t j = 0; j < E; j++) {                                                                   \
          const int64_t m = ndf__map_coord(j + lo, n, mode);                                                \
          T *e = ext + j * W;                                                                               \
          if (m < 0) for (int64_t c = 0; c < w; c++) e[c] = cv;                                             \
          else { const T *sp = src + (o * n + m) * inner + c0; for (int64_t c = 0; c < w; c++) e[c] = sp[c]; } \
        }                                                                                                   \
        for (int64_t j = E - 1; j >= 0; j--) {                                                              \
          T *hj = h + j * W;                                                                                \
          const T *ej = ext + j * W;                                                                        \
          if (j == E - 1 || (j + 1) % K == 0) for (int64_t c = 0; c < w; c++) hj[c] = ej[c];                 \
          else for (int64_t c = 0; c < w; c++) hj[c] = PICK(IS_FLOAT, op, ej[c], hj[W + c]);                \
        }                                                                                                   \
        for (int64_t j = 0; j < E; j++) {                                                                   \
          const T *ej = ext + j * W;                                                                        \
          if (j % K == 0) for (int64_t c = 0; c < w; c++) gr[c] = ej[c];                                    \
          else for (int64_t c = 0; c < w; c++) gr[c] = PICK(IS_FLOAT, op, gr[c], ej[c]);                    \
          const int64_t x = j - (K - 1);                                                                    \
          if (x < 0) continue;                                                                              \
          T *t = dst + (o * n + x) * inner + c0;                                                            \
          if (x % K == 0) for (int64_t c = 0; c < w; c++) t[c] = gr[c];                                     \
          else {                                                                                            \
            const T *hx = h + x * W;                                                                        \
            for (int64_t c = 0; c < w; c++) t[c] = PICK(IS_FLOAT, op, hx[c], gr[c]);                        \
          }                                                                                                 \
        }                                                                                                   \
      }                                                                                                     \
    }                                                                                                       \
  }

NDF_CPU_TYPES(DEFINE_CPU)
NDF_CPU_TYPES(DEFINE_VHGW)

typedef int (*taps_fn)(const ndf_ctx *, const ndf_array *, ndf_array *, const ndf__grey_geom *, int64_t,
                        const int32_t *, const double *, const double *);

static taps_fn taps_for(ndf_dtype t) {
  switch (t) {
    case NDF_UINT8: return taps_u8;
    case NDF_INT8: return taps_i8;
    case NDF_UINT16: return taps_u16;
    case NDF_INT16: return taps_i16;
    case NDF_UINT32: return taps_u32;
    case NDF_INT32: return taps_i32;
    case NDF_INT64: return taps_i64;
    case NDF_UINT64: return taps_u64;
    case NDF_FLOAT32: return taps_f32;
    case NDF_FLOAT64: return taps_f64;
    default: return NULL;
  }
}

/* Whether the line pass of extent K runs van Herk/Gil-Werman. */
static int use_vhgw(const ndf__grey_geom *g, int64_t K) {
  return K > 1 && (g->algo == NDF_GREY_VHGW || (g->algo == NDF_GREY_AUTO && K >= NDF__VHGW_MIN_CPU));
}

/* Runs one separable pass for dtype t. */
static void pass_any(const ndf_ctx *ctx, void **bufs, int nth, ndf_dtype t, const void *src, void *dst,
                     const int64_t *shape, int ndim, int a, int64_t K, int64_t lo, const ndf__grey_geom *g) {
  if (use_vhgw(g, K)) {
    switch (t) {
#define VCASE(DT, T, SUF) case DT: vhgw_##SUF(bufs, nth, src, dst, shape, ndim, a, K, lo, g->mode, g->op, (T)g->cval); break;
      VCASE(NDF_UINT8, uint8_t, u8) VCASE(NDF_INT8, int8_t, i8) VCASE(NDF_UINT16, uint16_t, u16)
      VCASE(NDF_INT16, int16_t, i16) VCASE(NDF_UINT32, uint32_t, u32) VCASE(NDF_INT32, int32_t, i32)
      VCASE(NDF_INT64, int64_t, i64) VCASE(NDF_UINT64, uint64_t, u64)
      VCASE(NDF_FLOAT32, float, f32) VCASE(NDF_FLOAT64, double, f64)
#undef VCASE
      default: break;
    }
    return;
  }
  switch (t) {
    case NDF_UINT8: pass_u8(ctx, bufs, nth, src, dst, shape, ndim, a, K, lo, g->mode, g->op, (uint8_t)g->cval); break;
    case NDF_INT8: pass_i8(ctx, bufs, nth, src, dst, shape, ndim, a, K, lo, g->mode, g->op, (int8_t)g->cval); break;
    case NDF_UINT16: pass_u16(ctx, bufs, nth, src, dst, shape, ndim, a, K, lo, g->mode, g->op, (uint16_t)g->cval); break;
    case NDF_INT16: pass_i16(ctx, bufs, nth, src, dst, shape, ndim, a, K, lo, g->mode, g->op, (int16_t)g->cval); break;
    case NDF_UINT32: pass_u32(ctx, bufs, nth, src, dst, shape, ndim, a, K, lo, g->mode, g->op, (uint32_t)g->cval); break;
    case NDF_INT32: pass_i32(ctx, bufs, nth, src, dst, shape, ndim, a, K, lo, g->mode, g->op, (int32_t)g->cval); break;
    case NDF_INT64: pass_i64(ctx, bufs, nth, src, dst, shape, ndim, a, K, lo, g->mode, g->op, (int64_t)g->cval); break;
    case NDF_UINT64: pass_u64(ctx, bufs, nth, src, dst, shape, ndim, a, K, lo, g->mode, g->op, (uint64_t)g->cval); break;
    case NDF_FLOAT32: pass_f32(ctx, bufs, nth, src, dst, shape, ndim, a, K, lo, g->mode, g->op, (float)g->cval); break;
    case NDF_FLOAT64: pass_f64(ctx, bufs, nth, src, dst, shape, ndim, a, K, lo, g->mode, g->op, g->cval); break;
    default: break;
  }
}

static ndf_status box_cpu(ndf_ctx *ctx, const ndf_array *in, ndf_array *out, const ndf__grey_geom *g) {
  const int ndim = in->ndim, nb = ndim - g->nsp;
  const size_t es = ndf_dtype_size(in->dtype);
  const int64_t n = ndf_array_size(in);
  int axes[NDF_MAX_SPATIAL], npass = 0;
  for (int d = 0; d < g->nsp; d++)
    if (g->box[d] > 1) axes[npass++] = d;
  if (npass == 0) {
    ndf__host_copy(out, in);
    return NDF_OK;
  }
  /* Work on contiguous buffers: the input (packed if strided), a ping-pong
   * buffer, and the output (or a buffer copied into it when it is strided). */
  const int out_c = ndf_array_is_contiguous(out), in_c = ndf_array_is_contiguous(in);
  void *packed = NULL, *tmp = NULL, *obuf = NULL;
  if (!in_c) packed = malloc((size_t)n * es);
  if (npass > 1) tmp = malloc((size_t)n * es);
  if (!out_c) obuf = malloc((size_t)n * es);
  if ((!in_c && !packed) || (npass > 1 && !tmp) || (!out_c && !obuf)) {
    free(packed); free(tmp); free(obuf);
    return ndf__error(ctx, NDF_ENOMEM, "ndforge: out of host memory for a %lld-element temporary", (long long)n);
  }
  ndf_array c;
  if (!in_c) {
    ndf_array_init(&c, packed, NDF_DEVICE_CPU, in->dtype, ndim, in->shape);
    ndf__host_copy(&c, in);
  }
  /* Line buffers for the last-axis pass, one per thread, before anything is written. */
  const int nth = ndf__cpu_threads(ctx);
  size_t ext = es; /* a pass runs on line buffers when no axis after it has extent > 1, or with van Herk */
  for (int i = 0; i < npass; i++) {
    int64_t inner = 1;
    for (int d = nb + axes[i] + 1; d < ndim; d++) inner *= in->shape[d];
    const int64_t K = g->box[axes[i]], len = in->shape[nb + axes[i]];
    size_t need = use_vhgw(g, K) ? vhgw_bytes(len, K, inner, es) : inner == 1 ? (size_t)(len + K) * es : 0;
    if (need > ext) ext = need;
  }
  void **bufs = ndf__thread_buffers(nth, ext);
  if (!bufs) {
    free(packed); free(tmp); free(obuf);
    return ndf__error(ctx, NDF_ENOMEM, "ndforge: out of host memory for line buffers");
  }
  const void *src = in_c ? in->data : packed;
  void *final = out_c ? out->data : obuf;
  /* Passes from the last axis to the first: each keeps the first of equal
   * extrema along its axis, so the last pass's axis decides first and the
   * result is the first of equal extrema in raster (C) order of the window,
   * as in the direct path and the GPU's fused box kernels (ADR 0008). */
  for (int i = 0; i < npass; i++) {
    void *dst = ((npass - 1 - i) % 2 == 0) ? final : tmp;
    int a = axes[npass - 1 - i];
    pass_any(ctx, bufs, nth, in->dtype, src, dst, in->shape, ndim, nb + a, g->box[a], g->lo[a], g);
    src = dst;
  }
  ndf__thread_buffers_free(bufs, nth);
  if (!out_c) {
    ndf_array_init(&c, obuf, NDF_DEVICE_CPU, in->dtype, ndim, in->shape);
    ndf__host_copy(out, &c);
  }
  free(packed);
  free(tmp);
  free(obuf);
  return NDF_OK;
}

ndf_status ndf__grey_cpu(ndf_ctx *ctx, const ndf_array *in, ndf_array *out, const ndf__grey_geom *g) {
  if (g->is_box) return box_cpu(ctx, in, out, g);
  taps_fn fn = taps_for(in->dtype);
  if (!fn) return ndf__error(ctx, NDF_EINTERNAL, "ndforge: no CPU kernel for dtype %d", (int)in->dtype);
  if (fn(ctx, in, out, g, g->ntaps, g->taps, g->w_first, g->w_cast) != 0)
    return ndf__error(ctx, NDF_ENOMEM, "ndforge: out of host memory for the tap table");
  return NDF_OK;
}
