/*
 * intensity.c -- histograms, percentiles, windowing, normalization and
 * histogram equalization (NumPy / scikit-image semantics, include/ndforge.h):
 * validation, the CPU backend, and dispatch to CUDA.
 *
 * The CPU backend reads each value as float64 (exact for every input dtype
 * but 64-bit integers beyond 2^53, which round to the nearest float64),
 * computes the whole result in scratch, and stores it only when every image
 * succeeded, so a data error (a histogram's non-finite detected range) writes
 * nothing.  Images run in parallel; the percentiles of one
 * large image run its selection passes in parallel.  This file is compiled with
 * -ffp-contract=off: the formulas are evaluated operation by operation, as
 * NumPy evaluates them and as the kernels do (templates/intensity.cu).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "intensity/intensity.h"

/* ---- element access ----------------------------------------------------------------------- */

static inline void put(const ndf_array *a, int64_t off, double v) {
  char *p = a->data;
  switch (a->dtype) {
    case NDF_BOOL: case NDF_UINT8: ((uint8_t *)p)[off] = (uint8_t)v; break;
    case NDF_INT8: ((int8_t *)p)[off] = (int8_t)v; break;
    case NDF_UINT16: ((uint16_t *)p)[off] = (uint16_t)v; break;
    case NDF_INT16: ((int16_t *)p)[off] = (int16_t)v; break;
    case NDF_UINT32: ((uint32_t *)p)[off] = (uint32_t)v; break;
    case NDF_INT32: ((int32_t *)p)[off] = (int32_t)v; break;
    case NDF_FLOAT32: ((float *)p)[off] = (float)v; break;
    case NDF_FLOAT64: ((double *)p)[off] = v; break;
    case NDF_INT64: ((int64_t *)p)[off] = v >= -9223372036854775808.0 && v < 9223372036854775808.0 ? (int64_t)v : INT64_MIN; break;
    case NDF_UINT64: ((uint64_t *)p)[off] = ndf__cvt_u64(v); break;
    default: break;
  }
}

/* The m elements of image b in C order, through fn(off, j, ud). */
#define FOR_IMAGE(a, nb, b, m, OFF, J, BODY)                                        \
  do {                                                                              \
    int64_t c_[NDF_MAX_NDIM] = {0}, OFF = ndf__lead_offset(a, nb, b);               \
    for (int64_t J = 0; J < (m); J++) {                                             \
      BODY;                                                                         \
      for (int d_ = (a)->ndim - 1; d_ >= (nb); d_--) {                              \
        OFF += (a)->strides[d_];                                                    \
        if (++c_[d_] < (a)->shape[d_]) break;                                       \
        OFF -= c_[d_] * (a)->strides[d_];                                           \
        c_[d_] = 0;                                                                 \
      }                                                                             \
    }                                                                               \
  } while (0)

/* Image b's first element when its m elements are contiguous in C order, else -1. */
static int64_t dense_base(const ndf_array *a, int nb, int64_t b) {
  int64_t want = 1;
  for (int d = a->ndim - 1; d >= nb; d--) {
    if (a->shape[d] != 1 && a->strides[d] != want) return -1;
    want *= a->shape[d];
  }
  return ndf__lead_offset(a, nb, b);
}

/* Elements [off, off + n) of a's data, every dtype, into float64. */
static void load_run(const ndf_array *a, int64_t off, int64_t n, double *dst) {
  const char *p = a->data;
#define LOAD_RUN(T) { const T *q = (const T *)p + off; for (int64_t j = 0; j < n; j++) dst[j] = (double)q[j]; return; }
  switch (a->dtype) {
    case NDF_BOOL: case NDF_UINT8: LOAD_RUN(uint8_t)
    case NDF_INT8: LOAD_RUN(int8_t)
    case NDF_UINT16: LOAD_RUN(uint16_t)
    case NDF_INT16: LOAD_RUN(int16_t)
    case NDF_UINT32: LOAD_RUN(uint32_t)
    case NDF_INT32: LOAD_RUN(int32_t)
    case NDF_INT64: LOAD_RUN(int64_t)
    case NDF_UINT64: LOAD_RUN(uint64_t)
    case NDF_FLOAT32: LOAD_RUN(float)
    case NDF_FLOAT64: LOAD_RUN(double)
    default: for (int64_t j = 0; j < n; j++) dst[j] = 0;
  }
#undef LOAD_RUN
}

static void load_image(const ndf_array *a, int nb, int64_t b, int64_t m, double *dst) {
  const int64_t base = dense_base(a, nb, b);
  if (base >= 0) load_run(a, base, m, dst); /* one conversion loop per dtype */
  else FOR_IMAGE(a, nb, b, m, off, j, dst[j] = ndf__get_f64(a, off));
}

static void store_image(const ndf_array *a, int nb, int64_t b, int64_t m, const double *src) {
  const int64_t base = dense_base(a, nb, b);
  if (base >= 0 && a->dtype == NDF_FLOAT32) {
    float *q = (float *)a->data + base;
    for (int64_t j = 0; j < m; j++) q[j] = (float)src[j];
    return;
  }
  if (base >= 0 && a->dtype == NDF_FLOAT64) {
    memcpy((double *)a->data + base, src, (size_t)m * sizeof *src);
    return;
  }
  FOR_IMAGE(a, nb, b, m, off, j, put(a, off, src[j]));
}

/* Image b of a in C order, read or written a run at a time: contiguous runs when the image is
 * dense, else element by element through its strides. */
typedef struct {
  const ndf_array *a;
  int nb, dense;
  int64_t off, c[NDF_MAX_NDIM];
} img_cursor;

static void cur_init(img_cursor *k, const ndf_array *a, int nb, int64_t b) {
  memset(k, 0, sizeof *k);
  k->a = a;
  k->nb = nb;
  const int64_t base = dense_base(a, nb, b);
  k->dense = base >= 0;
  k->off = k->dense ? base : ndf__lead_offset(a, nb, b);
}

static inline void cur_step(img_cursor *k) {
  const ndf_array *a = k->a;
  for (int d = a->ndim - 1; d >= k->nb; d--) {
    k->off += a->strides[d];
    if (++k->c[d] < a->shape[d]) return;
    k->off -= k->c[d] * a->strides[d];
    k->c[d] = 0;
  }
}

static void cur_read(img_cursor *k, int64_t n, double *dst) {
  if (k->dense) {
    load_run(k->a, k->off, n, dst);
    k->off += n;
    return;
  }
  for (int64_t j = 0; j < n; j++, cur_step(k)) dst[j] = ndf__get_f64(k->a, k->off);
}

static void cur_write(img_cursor *k, int64_t n, const double *src) {
  if (k->dense && k->a->dtype == NDF_FLOAT32) {
    float *q = (float *)k->a->data + k->off;
    for (int64_t j = 0; j < n; j++) q[j] = (float)src[j];
  } else if (k->dense && k->a->dtype == NDF_FLOAT64) {
    memcpy((double *)k->a->data + k->off, src, (size_t)n * sizeof *src);
  } else if (k->dense) {
    for (int64_t j = 0; j < n; j++) put(k->a, k->off + j, src[j]);
  } else {
    for (int64_t j = 0; j < n; j++, cur_step(k)) put(k->a, k->off, src[j]);
    return;
  }
  k->off += n;
}

/* ---- validation ----------------------------------------------------------------------------- */

static int value_dtype(ndf_dtype t) { return t >= NDF_UINT8 && t <= NDF_UINT64; }

static const char *dname(ndf_dtype t) { return ndf_dtype_name(t) ? ndf_dtype_name(t) : "unknown"; }

/* The input: a supported dtype, a valid shape and batch_dims, a device; *g its images. */
static ndf_status check_input(ndf_ctx *ctx, const char *name, const ndf_array *in, int batch_dims, ndf__ity_geom *g) {
  if (!in) return ndf__argerror(ctx, name, "input", "NULL");
  if (!value_dtype(in->dtype))
    return ndf__argerror(ctx, name, "input",
                         "dtype %s is not supported (uint8, int8, uint16, int16, uint32, int32, float32, float64)",
                         dname(in->dtype));
  ndf_status s = ndf__check_shape(ctx, name, in, batch_dims);
  if (s != NDF_OK) return s;
  if ((s = ndf__check_device(ctx, name, in)) != NDF_OK) return s;
  if (ndf_array_size(in) > 0 && !in->data) return ndf__argerror(ctx, name, "input", "NULL data");
  g->nb = batch_dims;
  g->nimg = 1;
  g->m = 1;
  for (int d = 0; d < in->ndim; d++) {
    if (d < batch_dims) g->nimg *= in->shape[d];
    else g->m *= in->shape[d];
  }
  return NDF_OK;
}

/* A second input (mask, weights) shaped like the input on its device; bool allowed when any. */
static ndf_status check_like(ndf_ctx *ctx, const char *name, const char *arg, const ndf_array *a, const ndf_array *in,
                             int allow_bool) {
  if (!value_dtype(a->dtype) && !(allow_bool && a->dtype == NDF_BOOL))
    return ndf__argerror(ctx, name, arg, "dtype %s is not supported", dname(a->dtype));
  if (a->ndim != in->ndim) return ndf__argerror(ctx, name, arg, "rank %d differs from the input's %d", a->ndim, in->ndim);
  for (int d = 0; d < a->ndim; d++)
    if (a->shape[d] != in->shape[d])
      return ndf__argerror(ctx, name, arg, "shape[%d]=%lld differs from the input's %lld", d, (long long)a->shape[d],
                           (long long)in->shape[d]);
  ndf_status s = ndf__check_array(ctx, name, arg, a, NULL);
  if (s != NDF_OK) return s;
  if (a->device != in->device || a->device_id != in->device_id)
    return ndf__argerror(ctx, name, arg, "lives on another device than the input");
  if (ndf_array_size(a) > 0 && !a->data) return ndf__argerror(ctx, name, arg, "NULL data");
  return NDF_OK;
}

/* An output of shape (batch..., tail...) (ntail 0..1) on the input's device, not overlapping
 * the inputs, a proper layout. */
static ndf_status check_out(ndf_ctx *ctx, const char *name, const char *arg, const ndf_array *o, const ndf_array *in,
                            int nb, int ntail, int64_t tail, const ndf_array *other) {
  if (!o) return ndf__argerror(ctx, name, arg, "NULL");
  if (!ndf_dtype_size(o->dtype)) return ndf__argerror(ctx, name, arg, "unknown dtype %d", (int)o->dtype);
  char want[256], got[256];
  int64_t shp[NDF_MAX_NDIM];
  memcpy(shp, in->shape, (size_t)nb * sizeof *shp);
  if (ntail) shp[nb] = tail;
  int ok = o->ndim == nb + ntail;
  for (int d = 0; ok && d < nb + ntail; d++) ok = o->shape[d] == shp[d];
  if (!ok)
    return ndf__argerror(ctx, name, arg, "shape %s; expected %s", ndf__shape_str(o->ndim, o->shape, got, sizeof got),
                         ndf__shape_str(nb + ntail, shp, want, sizeof want));
  ndf_status s = ndf__check_array(ctx, name, arg, o, NULL);
  if (s != NDF_OK) return s;
  if (o->device != in->device || o->device_id != in->device_id)
    return ndf__argerror(ctx, name, arg, "lives on another device than the input");
  if (ndf_array_size(o) == 0) return NDF_OK;
  if (!o->data) return ndf__argerror(ctx, name, arg, "NULL data");
  if (!ndf__layout_is_proper(o)) return ndf__argerror(ctx, name, arg, "its strides make elements overlap");
  if (ndf_array_size(in) > 0 && ndf__arrays_overlap(in, o)) return ndf__argerror(ctx, name, arg, "overlaps the input");
  if (other && ndf_array_size(other) > 0 && ndf__arrays_overlap(other, o))
    return ndf__argerror(ctx, name, arg, "overlaps another argument");
  return NDF_OK;
}

/* An output shaped like the input (elementwise ops) with a float dtype (or the input's when allow_same). */
static ndf_status check_elementwise(ndf_ctx *ctx, const char *name, const ndf_array *in, const ndf_array *out,
                                    const ndf_array *mask, int allow_same) {
  if (!out) return ndf__argerror(ctx, name, "output", "NULL");
  if (out->dtype != NDF_FLOAT32 && out->dtype != NDF_FLOAT64 && !(allow_same && out->dtype == in->dtype))
    return ndf__argerror(ctx, name, "output", "dtype %s is not float32 or float64%s", dname(out->dtype),
                         allow_same ? " or the input's" : "");
  if (out->ndim != in->ndim) return ndf__argerror(ctx, name, "output", "rank %d differs from the input's %d", out->ndim, in->ndim);
  return check_out(ctx, name, "output", out, in, in->ndim, 0, 0, mask);
}

static ndf_status scratch(ndf_ctx *ctx, const char *name, int64_t count, size_t esz, void **p) {
  int64_t bytes;
  if (!ndf__mul(count < 1 ? 1 : count, (int64_t)esz, &bytes)) bytes = -1;
  ndf_status s = ndf__check_host_memory(ctx, name, "scratch", bytes);
  if (s != NDF_OK) return s;
  *p = malloc((size_t)bytes);
  return *p ? NDF_OK : ndf__error(ctx, NDF_ENOMEM, "%s: out of memory (%lld bytes of scratch)", name, (long long)bytes);
}

/* ---- histogram ------------------------------------------------------------------------------ */

void ndf_histogram_options_init(ndf_histogram_options *opt) {
  if (!opt) return;
  memset(opt, 0, sizeof *opt);
  opt->bins = 10;
}

/* np.linspace(first, last, n + 1) in float64, rounded to float32 when f32 (NumPy's bin type). */
static void linspace_edges(double first, double last, int64_t n, int f32, double *e) {
  const double div = (double)n, delta = last - first, step = delta / div;
  for (int64_t i = 0; i < n; i++) {
    double y = step == 0 ? (double)i / div * delta : (double)i * step;
    e[i] = y + first;
  }
  e[n] = last;
  if (f32)
    for (int64_t i = 0; i <= n; i++) e[i] = (double)(float)e[i];
}

/* The bin of x among edges e[0..n]: the largest i < n with e[i] <= x (x == e[n] in bin n - 1),
 * or -1 outside [e[0], e[n]] or NaN. */
static inline int64_t bin_of(double x, const double *e, int64_t n) {
  if (!(x >= e[0] && x <= e[n])) return -1;
  int64_t lo = 0, hi = n; /* e[lo] <= x; answer in [lo, hi) */
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (e[mid] <= x) lo = mid;
    else hi = mid;
  }
  return lo;
}

/* NDF_EINVAL naming image b when its detected range [*lo, *hi] (NaN when nan) is not finite. */
static ndf_status range_ok(ndf_ctx *ctx, const char *name, int64_t b, int nan, double *lo, double *hi) {
  if (nan) *lo = *hi = NAN;
  if (!isfinite(*lo) || !isfinite(*hi))
    return ndf__argerror(ctx, name, "input",
                         "image %lld: the detected range [%g, %g] is not finite (NumPy's ValueError); give a range",
                         (long long)b, *lo, *hi);
  return NDF_OK;
}

/* Each image's range, or NDF_EINVAL naming the first image whose detected range is not finite. */
static ndf_status auto_range(ndf_ctx *ctx, const char *name, const double *x, int64_t m, int64_t b, double *first,
                             double *last) {
  if (m == 0) {
    *first = 0;
    *last = 1;
    return NDF_OK;
  }
  double lo = x[0], hi = x[0];
  int nan = 0;
  for (int64_t j = 0; j < m; j++) { /* -0.0 below +0.0, as the keys on the GPU */
    nan |= isnan(x[j]);
    if (x[j] < lo || (x[j] == lo && signbit(x[j]) && !signbit(lo))) lo = x[j];
    if (x[j] > hi || (x[j] == hi && !signbit(x[j]) && signbit(hi))) hi = x[j];
  }
  *first = lo;
  *last = hi;
  return range_ok(ctx, name, b, nan, first, last);
}

ndf_status ndf_histogram(ndf_ctx *ctx, const ndf_array *input, ndf_array *hist, ndf_array *bin_edges,
                         const ndf_histogram_options *opt) {
  static const char *name = "ndf_histogram";
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  ndf__clear_error(ctx);
  if (!opt) return ndf__argerror(ctx, name, "options", "NULL");
  ndf__ity_geom g;
  ndf_status s = check_input(ctx, name, input, opt->batch_dims, &g);
  if (s != NDF_OK) return s;
  int64_t nbins;
  if (opt->edges) {
    if (opt->nedges < 2) return ndf__argerror(ctx, name, "edges", "%lld edges; at least 2 are needed", (long long)opt->nedges);
    if (opt->nedges > ((int64_t)1 << 30)) return ndf__argerror(ctx, name, "edges", "more than 2^30 edges");
    for (int64_t i = 0; i < opt->nedges; i++) {
      if (isnan(opt->edges[i])) return ndf__argerror(ctx, name, "edges", "edges[%lld] is NaN", (long long)i);
      if (i > 0 && opt->edges[i] < opt->edges[i - 1])
        return ndf__argerror(ctx, name, "edges", "edges[%lld]=%g < edges[%lld]=%g: bins must increase monotonically",
                             (long long)i, opt->edges[i], (long long)i - 1, opt->edges[i - 1]);
    }
    nbins = opt->nedges - 1;
  } else {
    if (opt->bins <= 0) return ndf__argerror(ctx, name, "bins", "%lld must be positive", (long long)opt->bins);
    if (opt->bins > ((int64_t)1 << 30)) return ndf__argerror(ctx, name, "bins", "more than 2^30 bins");
    nbins = opt->bins;
    if (opt->has_range) {
      if (!isfinite(opt->range[0]) || !isfinite(opt->range[1]))
        return ndf__argerror(ctx, name, "range", "[%g, %g] is not finite", opt->range[0], opt->range[1]);
      if (opt->range[0] > opt->range[1])
        return ndf__argerror(ctx, name, "range", "min %g > max %g: max must be larger than min", opt->range[0],
                             opt->range[1]);
    }
  }
  if (opt->weights && (s = check_like(ctx, name, "weights", opt->weights, input, 0)) != NDF_OK) return s;
  if ((s = check_out(ctx, name, "hist", hist, input, g.nb, 1, nbins, opt->weights)) != NDF_OK) return s;
  if (hist->dtype != NDF_FLOAT64 && hist->dtype != NDF_INT64)
    return ndf__argerror(ctx, name, "hist", "dtype %s is not int64 or float64", dname(hist->dtype));
  if (hist->dtype == NDF_INT64 && (opt->weights || opt->density))
    return ndf__argerror(ctx, name, "hist", "int64 holds plain counts; weights and density need float64");
  if (bin_edges) {
    if ((s = check_out(ctx, name, "bin_edges", bin_edges, input, g.nb, 1, nbins + 1, opt->weights)) != NDF_OK) return s;
    if (bin_edges->dtype != NDF_FLOAT64)
      return ndf__argerror(ctx, name, "bin_edges", "dtype %s is not float64", dname(bin_edges->dtype));
    if (ndf__arrays_overlap(hist, bin_edges) && ndf_array_size(hist) > 0 && ndf_array_size(bin_edges) > 0)
      return ndf__argerror(ctx, name, "bin_edges", "overlaps hist");
  }
  if (g.nimg == 0) return NDF_OK;
  if (input->device == NDF_DEVICE_CUDA) return ndf__ity_histogram_cuda(ctx, name, input, hist, bin_edges, opt, &g, nbins);

  const int f32 = input->dtype == NDF_FLOAT32;
  int64_t nh, ne;
  if (!ndf__mul(g.nimg, nbins, &nh) || !ndf__mul(g.nimg, nbins + 1, &ne))
    return ndf__argerror(ctx, name, "bins", "too many bins for %lld images", (long long)g.nimg);
  double *H = NULL, *E = NULL, *x = NULL, *w = NULL;
  if ((s = scratch(ctx, name, nh, sizeof(double), (void **)&H)) != NDF_OK) return s;
  if ((s = scratch(ctx, name, ne, sizeof(double), (void **)&E)) != NDF_OK) goto done;
  if ((s = scratch(ctx, name, g.m, sizeof(double), (void **)&x)) != NDF_OK) goto done;
  if (opt->weights && (s = scratch(ctx, name, g.m, sizeof(double), (void **)&w)) != NDF_OK) goto done;
  for (int64_t b = 0; b < g.nimg && s == NDF_OK; b++) {
    double *h = H + b * nbins, *e = E + b * (nbins + 1);
    load_image(input, g.nb, b, g.m, x);
    if (w) load_image(opt->weights, g.nb, b, g.m, w);
    if (opt->edges) {
      memcpy(e, opt->edges, (size_t)(nbins + 1) * sizeof *e);
    } else {
      double first = opt->range[0], last = opt->range[1];
      if (!opt->has_range && (s = auto_range(ctx, name, x, g.m, b, &first, &last)) != NDF_OK) break;
      if (first == last) {
        first -= 0.5;
        last += 0.5;
      }
      linspace_edges(first, last, nbins, f32, e);
    }
    memset(h, 0, (size_t)nbins * sizeof *h);
    double total = 0;
    for (int64_t j = 0; j < g.m; j++) {
      const int64_t k = bin_of(x[j], e, nbins);
      if (k >= 0) {
        h[k] += w ? w[j] : 1.0;
        total += w ? w[j] : 1.0;
      }
    }
    if (opt->density) {
      /* n / np.diff(edges) / n.sum(): the widths in the bin type */
      for (int64_t k = 0; k < nbins; k++) {
        const double width = (f32 && !opt->edges) ? (double)((float)e[k + 1] - (float)e[k]) : e[k + 1] - e[k];
        h[k] = h[k] / width / total;
      }
    }
  }
  if (s == NDF_OK) {
    for (int64_t b = 0; b < g.nimg; b++) {
      store_image(hist, g.nb, b, nbins, H + b * nbins);
      if (bin_edges) store_image(bin_edges, g.nb, b, nbins + 1, E + b * (nbins + 1));
    }
  }
done:
  free(H);
  free(E);
  free(x);
  free(w);
  return s;
}

/* ---- percentile / quantile ------------------------------------------------------------------ */

/* The total order of the sort: numeric, with -0.0 below +0.0 (NaN never reaches it). */
static int cmp_double(const void *pa, const void *pb) {
  const double a = *(const double *)pa, b = *(const double *)pb;
  if (a < b) return -1;
  if (a > b) return 1;
  return (int)!!signbit(b) - (int)!!signbit(a);
}

/* NumPy's linear quantile at q in [0, 1] of n >= 1 sorted values, from the two
 * order statistics it reads: ranks *ip <= *in, weight *t. */
static void lerp_ranks(int64_t n, double q, int64_t *ip, int64_t *in, double *t) {
  const double h = (double)(n - 1) * q;
  double prev = floor(h);
  if (h >= (double)(n - 1)) {
    *ip = *in = n - 1;
    prev = -1; /* NumPy indexes the last value as -1, and its gamma is computed from that index */
  } else {
    *ip = (int64_t)prev;
    *in = *ip + 1;
  }
  *t = h - prev;
}

/* The quantile from the order statistics a <= b and weight t; f32: b - a rounded to float32. */
static double lerp_value(double a, double b, double t, int f32) {
  const double diff = f32 ? (double)((float)b - (float)a) : b - a;
  return t >= 0.5 ? b - diff * (1 - t) : a + diff * t;
}

/* ---- selection of order statistics ----------------------------------------------------------
 * Quantiles read two order statistics per q, so they select them instead of
 * sorting: a most-significant-digit radix select on keys whose unsigned order
 * is the sort's order (the GPU path selects the same way, intensity_cuda.c).
 * Each level takes the digit (16 bits for large arrays, else 11) below the
 * prefix that the remaining keys share, counts the digits, keeps only the
 * buckets holding a wanted rank and goes on inside them; a bucket of equal
 * keys ends the search, and ranks among the copies of the smallest or the
 * largest key (an image's background) are answered from the counts.  Large
 * arrays are counted and compacted in parallel chunks (fixed chunk bounds,
 * the chunks' offsets from their counts in chunk order), so the result is
 * the same for every thread count -- it is exact in any case: a selected
 * value is a value of the image. */

#define SEL_SMALL 48               /* at most this many keys: insertion sort */
#define SEL_PAR ((int64_t)1 << 18) /* at least this many keys: parallel chunks */
#define SEL_WIDE ((int64_t)1 << 20) /* at least this many keys: 16-bit digits */

/* The key of x: numeric order, -0.0 below +0.0. */
static inline uint64_t key_of(double x) {
  uint64_t u;
  memcpy(&u, &x, sizeof u);
  return (u >> 63) ? ~u : u | ((uint64_t)1 << 63);
}
static inline double value_of(uint64_t k) {
  const uint64_t u = (k >> 63) ? k & ~((uint64_t)1 << 63) : ~k;
  double x;
  memcpy(&x, &u, sizeof x);
  return x;
}

#define SEL_CHUNKS 16 /* at most this many chunks: each has its own digit counts, merged serially */

/* Chunks of n values: as many as threads (at most SEL_CHUNKS) for large n, else one; chunk c
 * starts at chunk_at(n, nc, c). */
static int sel_chunks(int64_t n, int nth) { return (n >= SEL_PAR && nth > 1) ? (nth < SEL_CHUNKS ? nth : SEL_CHUNKS) : 1; }
static int64_t chunk_at(int64_t n, int64_t nc, int64_t c) { return c * (n / nc) + (c < n % nc ? c : n % nc); }

/* What a selection level reads: keys (SEL_KEYS), or the elements of a contiguous image of
 * dtype t (a value dtype), each read as a double and keyed. */
#define SEL_KEYS (-1)
typedef struct sel_src {
  const void *p;
  int t;
} sel_src;

/* Runs STMT with K(j) the key of element j of src, the loop over the dtype inside. */
#define SEL_FOR(src, j0, j1, STMT)                                                                  \
  do {                                                                                              \
    switch ((src).t) {                                                                              \
      case SEL_KEYS: SEL_LOOP(uint64_t, (src).p, j0, j1, x_, STMT); break;                     \
      case NDF_FLOAT32: SEL_LOOP(float, (src).p, j0, j1, key_of(x_), STMT); break;            \
      case NDF_FLOAT64: SEL_LOOP(double, (src).p, j0, j1, key_of(x_), STMT); break;           \
      case NDF_UINT8: SEL_LOOP(uint8_t, (src).p, j0, j1, key_of(x_), STMT); break;            \
      case NDF_INT8: SEL_LOOP(int8_t, (src).p, j0, j1, key_of(x_), STMT); break;              \
      case NDF_UINT16: SEL_LOOP(uint16_t, (src).p, j0, j1, key_of(x_), STMT); break;          \
      case NDF_INT16: SEL_LOOP(int16_t, (src).p, j0, j1, key_of(x_), STMT); break;            \
      case NDF_UINT32: SEL_LOOP(uint32_t, (src).p, j0, j1, key_of(x_), STMT); break;          \
      case NDF_INT32: SEL_LOOP(int32_t, (src).p, j0, j1, key_of(x_), STMT); break;            \
      case NDF_INT64: SEL_LOOP(int64_t, (src).p, j0, j1, key_of((double)x_), STMT); break;    \
      case NDF_UINT64: SEL_LOOP(uint64_t, (src).p, j0, j1, key_of((double)x_), STMT); break;  \
      default: break;                                                                               \
    }                                                                                               \
  } while (0)
#define SEL_LOOP(T, P, j0, j1, KEY, STMT)     \
  do {                                        \
    const T *p_ = (const T *)(P);             \
    for (int64_t j_ = (j0); j_ < (j1); j_++) { \
      const T x_ = p_[j_];                    \
      const uint64_t K = (KEY);               \
      STMT;                                   \
    }                                         \
  } while (0)

/* The smallest and largest key of src[0..n) (n >= 1); 1 if an element is NaN. */
static int key_range(sel_src src, int64_t n, int nth, uint64_t *lo, uint64_t *hi) {
  const int nc = sel_chunks(n, nth);
  uint64_t L[SEL_CHUNKS], H[SEL_CHUNKS];
  int N[SEL_CHUNKS];
#pragma omp parallel for schedule(static) num_threads(nc) if (nc > 1)
  for (int c = 0; c < nc; c++) {
    uint64_t l = UINT64_MAX, h = 0;
    SEL_FOR(src, chunk_at(n, nc, c), chunk_at(n, nc, c + 1), {
      l = K < l ? K : l;
      h = K > h ? K : h;
    });
    /* NaN keys lie above +inf's and below -inf's */
    const int nan = (src.t == NDF_FLOAT32 || src.t == NDF_FLOAT64) && (h > key_of(INFINITY) || l < key_of(-INFINITY));
    L[c] = l;
    H[c] = h;
    N[c] = nan;
  }
  int nan = 0;
  *lo = L[0];
  *hi = H[0];
  for (int c = 0; c < nc; c++) {
    *lo = L[c] < *lo ? L[c] : *lo;
    *hi = H[c] > *hi ? H[c] : *hi;
    nan |= N[c];
  }
  return nan;
}

/* The keys of ranks r[i] - r0 (i < nr; increasing) of src[0..n) into out[i]; lo and hi are
 * the smallest and largest key.  A level keeps its wanted buckets in dst (NULL: allocated
 * here) and hands its deeper levels alt, both with room for them.  0, or -1 out of memory. */
static int select_ranks(sel_src src, int64_t n, const int64_t *r, int nr, int64_t r0, uint64_t lo, uint64_t hi,
                        uint64_t *dst, uint64_t *alt, uint64_t *out, int nth) {
  if (lo == hi) {
    for (int i = 0; i < nr; i++) out[i] = lo;
    return 0;
  }
  if (n <= SEL_SMALL) {
    uint64_t k[SEL_SMALL];
    SEL_FOR(src, 0, n, {
      int64_t i = j_;
      for (; i > 0 && k[i - 1] > K; i--) k[i] = k[i - 1];
      k[i] = K;
    });
    for (int i = 0; i < nr; i++) out[i] = k[r[i] - r0];
    return 0;
  }
  const int bits = n >= SEL_WIDE ? 16 : 11, nd = 1 << bits;
  const int hb = 63 - __builtin_clzll(lo ^ hi), shift = hb >= bits - 1 ? hb - (bits - 1) : 0;
  const uint64_t base = lo >> shift;
  const int nc = sel_chunks(n, nth);
  /* cnt: each chunk's digit counts, then the copies of lo and of hi */
  int64_t *cnt = calloc((size_t)nc * (nd + 2), sizeof *cnt), *tot = calloc((size_t)nd + 1, sizeof *tot);
  unsigned char *want = calloc((size_t)nd, 1);
  uint64_t *own = NULL;
  int rc = -1;
  if (!cnt || !tot || !want) goto done;
#pragma omp parallel for schedule(static) num_threads(nc) if (nc > 1)
  for (int c = 0; c < nc; c++) {
    int64_t *h = cnt + (size_t)c * (nd + 2), nlo = 0, nhi = 0;
    SEL_FOR(src, chunk_at(n, nc, c), chunk_at(n, nc, c + 1), {
      h[(K >> shift) - base]++;
      nlo += K == lo;
      nhi += K == hi;
    });
    h[nd] = nlo;
    h[nd + 1] = nhi;
  }
  /* tot[d]: keys below digit d.  Each wanted digit's bucket goes to dst packed in digit
   * order; cnt becomes each chunk's write position there (-1: not wanted). */
  int64_t nlo = 0, nhi = 0;
  for (int c = 0; c < nc; c++) {
    nlo += cnt[(size_t)c * (nd + 2) + nd];
    nhi += cnt[(size_t)c * (nd + 2) + nd + 1];
  }
  for (int d = 0; d < nd; d++) {
    int64_t t = 0;
    for (int c = 0; c < nc; c++) t += cnt[(size_t)c * (nd + 2) + d];
    tot[d + 1] = tot[d] + t;
  }
  for (int i = 0, d = 0; i < nr; i++) {
    const int64_t ri = r[i] - r0;
    if (ri < nlo || ri >= n - nhi) continue;
    while (tot[d + 1] <= ri) d++;
    want[d] = 1;
  }
  int64_t pos = 0;
  for (int d = 0; d < nd; d++)
    for (int c = 0; c < nc; c++) {
      int64_t *h = cnt + (size_t)c * (nd + 2) + d;
      const int64_t m = *h;
      *h = want[d] ? pos : -1;
      if (want[d]) pos += m;
    }
  if (!dst) {
    if (!(own = malloc((size_t)(pos ? pos : 1) * 2 * sizeof *own))) goto done;
    dst = own;
    alt = own + pos;
  }
  if (pos > 0) {
#pragma omp parallel for schedule(static) num_threads(nc) if (nc > 1)
    for (int c = 0; c < nc; c++) {
      int64_t *h = cnt + (size_t)c * (nd + 2);
      SEL_FOR(src, chunk_at(n, nc, c), chunk_at(n, nc, c + 1), {
        const uint64_t d = (K >> shift) - base;
        if (h[d] >= 0) dst[h[d]++] = K;
      });
    }
  }
  /* Each wanted bucket in turn; its deeper levels use the same part of alt and dst. */
  rc = 0;
  pos = 0;
  for (int d = 0, i = 0; i < nr && rc == 0;) {
    const int64_t ri = r[i] - r0;
    if (ri < nlo || ri >= n - nhi) {
      out[i++] = ri < nlo ? lo : hi;
      continue;
    }
    while (!want[d] || tot[d + 1] <= ri) {
      if (want[d]) pos += tot[d + 1] - tot[d];
      d++;
    }
    const int64_t m = tot[d + 1] - tot[d];
    int j = i;
    while (j < nr && r[j] - r0 < tot[d + 1] && r[j] - r0 < n - nhi) j++;
    const sel_src sub = {dst + pos, SEL_KEYS};
    uint64_t l, h;
    key_range(sub, m, nth, &l, &h);
    rc = select_ranks(sub, m, r + i, j - i, r0 + tot[d], l, h, alt + pos, dst + pos, out + i, nth);
    pos += m;
    d++;
    i = j;
  }
done:
  free(own);
  free(cnt);
  free(tot);
  free(want);
  return rc;
}

/* 1 if image b's elements (the axes after nb) are contiguous in C order. */
static int image_contiguous(const ndf_array *a, int nb) {
  int64_t st = 1;
  for (int d = a->ndim - 1; d >= nb; d--) {
    if (a->shape[d] != 1 && a->strides[d] != st) return 0;
    st *= a->shape[d];
  }
  return 1;
}

static int cmp_i64(const void *pa, const void *pb) {
  const int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
  return (a > b) - (a < b);
}

/* The index of r in the increasing rk[0..u) that holds it. */
static int rank_index(const int64_t *rk, int u, int64_t r) {
  int lo = 0, hi = u - 1;
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (rk[mid] < r) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* The quantiles qf[0..nq) (in [0, 1], NumPy's linear method) of every image into R (nimg x nq):
 * images in parallel, or one at a time with its passes in parallel when there are fewer
 * images than threads.  NaN in an image makes its quantiles NaN. */
static ndf_status cpu_quantiles(ndf_ctx *ctx, const char *name, const ndf_array *in, const ndf__ity_geom *g,
                                const double *qf, int nq, double *R) {
  const int f32 = in->dtype == NDF_FLOAT32, nth = ndf__cpu_threads(ctx);
  const int outer = g->nimg >= nth ? nth : 1, inner = outer > 1 ? 1 : nth;
  const int contiguous = image_contiguous(in, g->nb);
  /* The wanted ranks, the same for every image (they depend on m and q alone): increasing and
   * distinct in rk[0..u), and where q's two ranks lie among them, at[2 i] and at[2 i + 1]. */
  int64_t *rk = malloc((size_t)nq * 2 * sizeof *rk);
  int *at = malloc((size_t)nq * 2 * sizeof *at);
  if (!rk || !at) {
    free(rk);
    free(at);
    return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
  }
  for (int i = 0; i < nq; i++) {
    double t;
    lerp_ranks(g->m, qf[i], &rk[2 * i], &rk[2 * i + 1], &t);
  }
  qsort(rk, (size_t)nq * 2, sizeof *rk, cmp_i64);
  int u = 0;
  for (int i = 0; i < 2 * nq; i++)
    if (u == 0 || rk[i] != rk[u - 1]) rk[u++] = rk[i];
  for (int i = 0; i < nq; i++) {
    int64_t ip, ir;
    double t;
    lerp_ranks(g->m, qf[i], &ip, &ir, &t);
    at[2 * i] = rank_index(rk, u, ip);
    at[2 * i + 1] = rank_index(rk, u, ir);
  }
  /* Per worker: the selected keys, and a float64 copy of an image that is not contiguous. */
  const int64_t copy = contiguous ? 0 : g->m;
  int64_t bytes;
  if (!ndf__mul(copy + 2 * (int64_t)nq, 8 * (int64_t)outer, &bytes)) bytes = -1;
  ndf_status s = ndf__check_host_memory(ctx, name, "the selection buffers", bytes);
  void **buf = NULL;
  if (s == NDF_OK && !(buf = ndf__thread_buffers(outer, (size_t)(copy + 2 * (int64_t)nq) * sizeof(uint64_t))))
    s = ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
  if (s != NDF_OK) {
    free(rk);
    free(at);
    return s;
  }
  int oom = 0;
#pragma omp parallel for schedule(dynamic, 1) num_threads(outer) if (outer > 1)
  for (int64_t b = 0; b < g->nimg; b++) {
    uint64_t *sel = buf[outer > 1 ? ndf__thread_id() : 0];
    sel_src src;
    if (contiguous) {
      src.p = (const char *)in->data + ndf__lead_offset(in, g->nb, b) * (int64_t)ndf_dtype_size(in->dtype);
      src.t = in->dtype;
    } else {
      double *x = (double *)(sel + 2 * nq);
      load_image(in, g->nb, b, g->m, x);
      src.p = x;
      src.t = NDF_FLOAT64;
    }
    uint64_t lo = 0, hi = 0;
    if (key_range(src, g->m, inner, &lo, &hi)) {
      for (int i = 0; i < nq; i++) R[b * nq + i] = NAN;
      continue;
    }
    if (select_ranks(src, g->m, rk, u, 0, lo, hi, NULL, NULL, sel, inner) != 0) {
#pragma omp atomic write
      oom = 1;
      continue;
    }
    for (int i = 0; i < nq; i++) {
      int64_t ip, ir;
      double t;
      lerp_ranks(g->m, qf[i], &ip, &ir, &t);
      R[b * nq + i] = lerp_value(value_of(sel[at[2 * i]]), value_of(sel[at[2 * i + 1]]), t, f32);
    }
  }
  ndf__thread_buffers_free(buf, outer);
  free(rk);
  free(at);
  if (oom) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
  return NDF_OK;
}

static ndf_status quantile_common(ndf_ctx *ctx, const char *name, const ndf_array *in, const double *q, int nq,
                                  ndf_array *out, int batch_dims, double scale) {
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  ndf__clear_error(ctx);
  ndf__ity_geom g;
  ndf_status s = check_input(ctx, name, in, batch_dims, &g);
  if (s != NDF_OK) return s;
  if (!q || nq < 1) return ndf__argerror(ctx, name, "q", "%s", q ? "nq must be at least 1" : "NULL");
  if (nq > 4096) return ndf__argerror(ctx, name, "q", "%d values; at most 4096", nq);
  for (int i = 0; i < nq; i++)
    if (!(q[i] >= 0 && q[i] <= scale))
      return ndf__argerror(ctx, name, "q", "q[%d]=%g is outside [0, %g]", i, q[i], scale);
  if (!out) return ndf__argerror(ctx, name, "output", "NULL");
  if (out->dtype != NDF_FLOAT64) return ndf__argerror(ctx, name, "output", "dtype %s is not float64", dname(out->dtype));
  const int ntail = (nq == 1 && out->ndim == g.nb) ? 0 : 1;
  if ((s = check_out(ctx, name, "output", out, in, g.nb, ntail, nq, NULL)) != NDF_OK) return s;
  if (g.nimg == 0) return NDF_OK;
  if (g.m == 0) return ndf__argerror(ctx, name, "input", "the images are empty: an empty image has no %s", name + 4);
  double *qf = malloc((size_t)nq * sizeof *qf);
  if (!qf) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
  for (int i = 0; i < nq; i++) qf[i] = scale == 100 ? q[i] / 100 : q[i]; /* np.true_divide(q, 100) */
  if (in->device == NDF_DEVICE_CUDA) {
    s = ndf__ity_quantile_cuda(ctx, name, in, qf, nq, out, &g);
    free(qf);
    return s;
  }
  double *R = NULL;
  int64_t nr;
  if (!ndf__mul(g.nimg, nq, &nr)) nr = -1;
  if ((s = scratch(ctx, name, nr, sizeof(double), (void **)&R)) == NDF_OK &&
      (s = cpu_quantiles(ctx, name, in, &g, qf, nq, R)) == NDF_OK)
    for (int64_t b = 0; b < g.nimg; b++) store_image(out, g.nb, b, nq, R + b * nq);
  free(R);
  free(qf);
  return s;
}

ndf_status ndf_percentile(ndf_ctx *ctx, const ndf_array *input, const double *q, int nq, ndf_array *output,
                          int batch_dims) {
  return quantile_common(ctx, "ndf_percentile", input, q, nq, output, batch_dims, 100);
}

ndf_status ndf_quantile(ndf_ctx *ctx, const ndf_array *input, const double *q, int nq, ndf_array *output,
                        int batch_dims) {
  return quantile_common(ctx, "ndf_quantile", input, q, nq, output, batch_dims, 1);
}

/* ---- elementwise: clip, windows, normalizations ------------------------------------------------ */

void ndf_window_options_init(ndf_window_options *opt) {
  if (!opt) return;
  memset(opt, 0, sizeof *opt);
  opt->out_min = 0;
  opt->out_max = 1;
}

/* Each image's statistic on the CPU: (lo, hi) = min, max; (mean, std).  Percentiles: cpu_quantiles. */
static ndf_status cpu_stats(ndf_ctx *ctx, const char *name, const ndf_array *in, const ndf_array *mask,
                            const ndf__ity_geom *g, int stat, double *P) {
  const int nth = ndf__cpu_threads(ctx);
  int64_t bytes;
  if (!ndf__mul(g->m, 16 * (int64_t)nth, &bytes)) bytes = -1;
  ndf_status s = ndf__check_host_memory(ctx, name, "the image buffers", bytes);
  if (s != NDF_OK) return s;
  void **buf = ndf__thread_buffers(nth, (size_t)(g->m ? g->m : 1) * 2 * sizeof(double));
  if (!buf) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
#pragma omp parallel for schedule(dynamic, 1) num_threads(nth)
  for (int64_t b = 0; b < g->nimg; b++) {
    double *v = buf[ndf__thread_id()], *mk = v + g->m;
    load_image(in, g->nb, b, g->m, v);
    int nan = 0;
    for (int64_t j = 0; j < g->m; j++) nan |= isnan(v[j]);
    double lo = NAN, hi = NAN;
    if (stat == NDF__ITY_STAT_MINMAX) {
      if (!nan && g->m > 0) {
        lo = hi = v[0]; /* in the order of the keys on the GPU: -0.0 below +0.0 */
        for (int64_t j = 1; j < g->m; j++) {
          if (v[j] < lo || (v[j] == lo && signbit(v[j]) && !signbit(lo))) lo = v[j];
          if (v[j] > hi || (v[j] == hi && !signbit(v[j]) && signbit(hi))) hi = v[j];
        }
      }
    } else {
      if (mask) load_image(mask, g->nb, b, g->m, mk);
      double sum = 0, ss = 0;
      int64_t cnt = 0;
      for (int64_t j = 0; j < g->m; j++)
        if (!mask || mk[j] != 0) {
          sum += v[j];
          cnt++;
        }
      lo = sum / (double)cnt;
      for (int64_t j = 0; j < g->m; j++)
        if (!mask || mk[j] != 0) {
          const double d = v[j] - lo;
          ss += d * d;
        }
      hi = sqrt(ss / (double)cnt);
      if (hi == 0) hi = 1;
    }
    P[2 * b] = lo;
    P[2 * b + 1] = hi;
  }
  ndf__thread_buffers_free(buf, nth);
  return NDF_OK;
}

/* The elementwise op on one value (intensity.h). */
static inline double apply_one(int op, double x, double lo, double hi, double a, double bb) {
  if (op == NDF__ITY_CLIP) return x < lo ? lo : x > hi ? hi : x;
  if (op == NDF__ITY_WINDOW) return ndf__ity_window(x, lo, hi, a, bb);
  return (x - lo) / hi;
}

/* cpu_apply's loop over elements j0..j1 of contiguous images, from TI to TO. */
#define APPLY_LOOP(TI, TO)                                                             \
  do {                                                                                 \
    const TI *x_ = (const TI *)in->data + io;                                          \
    TO *y_ = (TO *)out->data + oo;                                                     \
    if (op == NDF__ITY_CLIP)                                                           \
      for (int64_t j = j0; j < j1; j++) y_[j] = (TO)apply_one(NDF__ITY_CLIP, (double)x_[j], lo, hi, a, bb);     \
    else if (op == NDF__ITY_WINDOW)                                                    \
      for (int64_t j = j0; j < j1; j++) y_[j] = (TO)apply_one(NDF__ITY_WINDOW, (double)x_[j], lo, hi, a, bb);   \
    else                                                                               \
      for (int64_t j = j0; j < j1; j++) y_[j] = (TO)apply_one(NDF__ITY_ZSCORE, (double)x_[j], lo, hi, a, bb);   \
  } while (0)
#define APPLY_IN(TO)                                                 \
  do {                                                               \
    switch (in->dtype) {                                             \
      case NDF_UINT8: APPLY_LOOP(uint8_t, TO); break;                \
      case NDF_INT8: APPLY_LOOP(int8_t, TO); break;                  \
      case NDF_UINT16: APPLY_LOOP(uint16_t, TO); break;              \
      case NDF_INT16: APPLY_LOOP(int16_t, TO); break;                \
      case NDF_UINT32: APPLY_LOOP(uint32_t, TO); break;              \
      case NDF_INT32: APPLY_LOOP(int32_t, TO); break;                \
      case NDF_INT64: APPLY_LOOP(int64_t, TO); break;                \
      case NDF_UINT64: APPLY_LOOP(uint64_t, TO); break;              \
      case NDF_FLOAT32: APPLY_LOOP(float, TO); break;                \
      default: APPLY_LOOP(double, TO); break;                        \
    }                                                                \
  } while (0)

/* clip of a 64-bit integer into its own dtype, compared and stored as integers (through double a
 * value beyond 2^53 would come back rounded).  lo and hi are integers in the dtype's range as
 * doubles (ndf_clip), whose maximum is 2^63 (2^64): a bound there is the dtype's largest value. */
static inline int64_t clip_s64(int64_t x, double lo, double hi) {
  if (lo >= 9223372036854775808.0) return INT64_MAX;
  if (x < (int64_t)lo) return (int64_t)lo;
  return hi < 9223372036854775808.0 && x > (int64_t)hi ? (int64_t)hi : x;
}
static inline uint64_t clip_u64(uint64_t x, double lo, double hi) {
  if (lo >= 18446744073709551616.0) return UINT64_MAX;
  if (x < (uint64_t)lo) return (uint64_t)lo;
  return hi < 18446744073709551616.0 && x > (uint64_t)hi ? (uint64_t)hi : x;
}

/* The elementwise pass on the CPU (intensity.h).  Contiguous images with a float output
 * run in typed loops, in parallel chunks of the image as well. */
static void cpu_apply(const ndf_array *in, ndf_array *out, const ndf__ity_geom *g, int op, const double *P, double c0,
                      double c1, double a, double bb, int nth) {
  /* clip of a 64-bit integer into its own dtype: as integers, in the strided loop below */
  const int clip64 = op == NDF__ITY_CLIP && in->dtype == out->dtype && (in->dtype == NDF_INT64 || in->dtype == NDF_UINT64);
  if ((out->dtype == NDF_FLOAT32 || out->dtype == NDF_FLOAT64) && image_contiguous(in, g->nb) &&
      image_contiguous(out, g->nb)) {
    const int64_t per = g->m > 65536 ? (g->m + 65535) / 65536 : 1, tasks = g->nimg * per;
#pragma omp parallel for schedule(static) num_threads(nth)
    for (int64_t t = 0; t < tasks; t++) {
      const int64_t b = t / per, j0 = chunk_at(g->m, per, t % per), j1 = chunk_at(g->m, per, t % per + 1);
      const double lo = P ? P[2 * b] : c0, hi = P ? P[2 * b + 1] : c1;
      const int64_t io = ndf__lead_offset(in, g->nb, b), oo = ndf__lead_offset(out, g->nb, b);
      if (out->dtype == NDF_FLOAT32) APPLY_IN(float);
      else APPLY_IN(double);
    }
    return;
  }
#pragma omp parallel for schedule(dynamic, 1) num_threads(nth)
  for (int64_t b = 0; b < g->nimg; b++) {
    const double lo = P ? P[2 * b] : c0, hi = P ? P[2 * b + 1] : c1;
    int64_t c_[NDF_MAX_NDIM] = {0}, io = ndf__lead_offset(in, g->nb, b), oo = ndf__lead_offset(out, g->nb, b);
    for (int64_t j = 0; j < g->m; j++) {
      if (!clip64)
        put(out, oo, apply_one(op, ndf__get_f64(in, io), lo, hi, a, bb));
      else if (in->dtype == NDF_UINT64)
        ((uint64_t *)out->data)[oo] = clip_u64(((const uint64_t *)in->data)[io], lo, hi);
      else
        ((int64_t *)out->data)[oo] = clip_s64(((const int64_t *)in->data)[io], lo, hi);
      for (int d = in->ndim - 1; d >= g->nb; d--) {
        io += in->strides[d];
        oo += out->strides[d];
        if (++c_[d] < in->shape[d]) break;
        io -= c_[d] * in->strides[d];
        oo -= c_[d] * out->strides[d];
        c_[d] = 0;
      }
    }
  }
}

/* The common path of the elementwise ops after their own checks. */
static ndf_status run_apply(ndf_ctx *ctx, const char *name, const ndf_array *in, const ndf_array *mask,
                            ndf_array *out, const ndf__ity_geom *g, int op, int stat, double c0, double c1, double a,
                            double b) {
  if (g->nimg == 0 || g->m == 0) return NDF_OK;
  if (in->device == NDF_DEVICE_CUDA) return ndf__ity_apply_cuda(ctx, name, in, mask, out, g, op, stat, c0, c1, a, b);
  double *P = NULL;
  ndf_status s;
  if (stat >= 0) {
    if ((s = scratch(ctx, name, 2 * g->nimg, sizeof(double), (void **)&P)) != NDF_OK) return s;
    if (stat == NDF__ITY_STAT_PERCENTILE) {
      const double pq[2] = {c0, c1};
      s = cpu_quantiles(ctx, name, in, g, pq, 2, P);
    } else {
      s = cpu_stats(ctx, name, in, mask, g, stat, P);
    }
    if (s != NDF_OK) {
      free(P);
      return s;
    }
  }
  cpu_apply(in, out, g, op, P, c0, c1, a, b, ndf__cpu_threads(ctx));
  free(P);
  return NDF_OK;
}

/* The checks every windowing op makes first: its options, the input (its geometry into g), the output. */
static ndf_status check_window(ndf_ctx *ctx, const char *name, const ndf_array *input, const ndf_array *output,
                               const ndf_window_options *opt, ndf__ity_geom *g) {
  if (!opt) return ndf__argerror(ctx, name, "options", "NULL");
  if (!isfinite(opt->out_min) || !isfinite(opt->out_max))
    return ndf__argerror(ctx, name, "options", "the target range [%g, %g] is not finite", opt->out_min, opt->out_max);
  ndf_status s = check_input(ctx, name, input, opt->batch_dims, g);
  if (s == NDF_OK) s = check_elementwise(ctx, name, input, output, NULL, 0);
  return s;
}

ndf_status ndf_clip(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, double lo, double hi) {
  static const char *name = "ndf_clip";
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  ndf__clear_error(ctx);
  ndf__ity_geom g;
  ndf_status s = check_input(ctx, name, input, 0, &g);
  if (s != NDF_OK) return s;
  if ((s = check_elementwise(ctx, name, input, output, NULL, 1)) != NDF_OK) return s;
  if (isnan(lo) || isnan(hi)) return ndf__argerror(ctx, name, "lo", "NaN bound");
  if (lo > hi) return ndf__argerror(ctx, name, "lo", "lo %g > hi %g", lo, hi);
  if (!ndf__dtype_is_float(output->dtype)) {
    double mn, mx;
    ndf__dtype_range(output->dtype, &mn, &mx);
    /* a 64-bit integer output holds the input's dtype, clipped as integers (clip_s64, clip_u64): there
     * the dtype's maximum as a double, 2^63 or 2^64, stands for the largest value */
    if (output->dtype == NDF_INT64) mx = 9223372036854775808.0;
    if (output->dtype == NDF_UINT64) mx = 18446744073709551616.0;
    if (lo < mn || hi > mx)
      return ndf__argerror(ctx, name, "lo", "[%g, %g] is outside the range of the output's dtype %s", lo, hi,
                           dname(output->dtype));
    lo = trunc(lo);
    hi = trunc(hi);
  }
  return run_apply(ctx, name, input, NULL, output, &g, NDF__ITY_CLIP, -1, lo, hi, 0, 0);
}

ndf_status ndf_window(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, double lo, double hi,
                      const ndf_window_options *opt) {
  static const char *name = "ndf_window";
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  ndf__clear_error(ctx);
  ndf__ity_geom g;
  ndf_status s = check_window(ctx, name, input, output, opt, &g);
  if (s != NDF_OK) return s;
  if (!isfinite(lo) || !isfinite(hi)) return ndf__argerror(ctx, name, "lo", "the window [%g, %g] is not finite", lo, hi);
  if (lo > hi) return ndf__argerror(ctx, name, "lo", "lo %g > hi %g", lo, hi);
  return run_apply(ctx, name, input, NULL, output, &g, NDF__ITY_WINDOW, -1, lo, hi, opt->out_min, opt->out_max);
}

static const struct {
  const char *name;
  double centre, width;
} ct_presets[] = {
    {"brain", 40, 80},      {"subdural", 75, 215},     {"stroke", 32, 8},         {"bone", 400, 1800},
    {"lung", -600, 1500},   {"mediastinum", 50, 350},  {"soft_tissue", 50, 400},  {"liver", 30, 150},
};

ndf_status ndf_ct_window_preset(const char *name, double *centre, double *width) {
  if (!name || !centre || !width)
    return ndf__error(NULL, NDF_EINVAL, "ndf_ct_window_preset: bad argument '%s' (NULL)",
                      !name ? "name" : !centre ? "centre" : "width");
  for (size_t i = 0; i < sizeof ct_presets / sizeof ct_presets[0]; i++)
    if (strcmp(name, ct_presets[i].name) == 0) {
      *centre = ct_presets[i].centre;
      *width = ct_presets[i].width;
      return NDF_OK;
    }
  return ndf__error(NULL, NDF_EINVAL,
                    "ndf_ct_window_preset: bad argument 'name' ('%s' is not brain, subdural, stroke, bone, lung, "
                    "mediastinum, soft_tissue or liver)", name);
}

ndf_status ndf_window_ct(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, double centre, double width,
                         const ndf_window_options *opt) {
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "ndf_window_ct: bad argument 'ctx' (NULL)");
  if (!(width >= 0) || !isfinite(centre) || !isfinite(width)) {
    ndf__clear_error(ctx);
    return ndf__argerror(ctx, "ndf_window_ct", "width", "centre %g, width %g: a finite centre and a width >= 0",
                         centre, width);
  }
  return ndf_window(ctx, input, output, centre - width / 2, centre + width / 2, opt);
}

ndf_status ndf_normalize_minmax(ndf_ctx *ctx, const ndf_array *input, ndf_array *output,
                                const ndf_window_options *opt) {
  static const char *name = "ndf_normalize_minmax";
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  ndf__clear_error(ctx);
  ndf__ity_geom g;
  ndf_status s = check_window(ctx, name, input, output, opt, &g);
  if (s != NDF_OK) return s;
  return run_apply(ctx, name, input, NULL, output, &g, NDF__ITY_WINDOW, NDF__ITY_STAT_MINMAX, 0, 0, opt->out_min,
                   opt->out_max);
}

ndf_status ndf_percentile_window(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, double p_lo, double p_hi,
                                 const ndf_window_options *opt) {
  static const char *name = "ndf_percentile_window";
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  ndf__clear_error(ctx);
  ndf__ity_geom g;
  ndf_status s = check_window(ctx, name, input, output, opt, &g);
  if (s != NDF_OK) return s;
  if (!(p_lo >= 0 && p_lo <= 100) || !(p_hi >= 0 && p_hi <= 100))
    return ndf__argerror(ctx, name, "p_lo", "percentiles %g, %g must be in [0, 100]", p_lo, p_hi);
  if (p_lo > p_hi) return ndf__argerror(ctx, name, "p_lo", "p_lo %g > p_hi %g", p_lo, p_hi);
  return run_apply(ctx, name, input, NULL, output, &g, NDF__ITY_WINDOW, NDF__ITY_STAT_PERCENTILE, p_lo / 100,
                   p_hi / 100, opt->out_min, opt->out_max);
}

ndf_status ndf_normalize_zscore(ndf_ctx *ctx, const ndf_array *input, const ndf_array *mask, ndf_array *output,
                                int batch_dims) {
  static const char *name = "ndf_normalize_zscore";
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  ndf__clear_error(ctx);
  ndf__ity_geom g;
  ndf_status s = check_input(ctx, name, input, batch_dims, &g);
  if (s != NDF_OK) return s;
  if (mask && (s = check_like(ctx, name, "mask", mask, input, 1)) != NDF_OK) return s;
  if ((s = check_elementwise(ctx, name, input, output, mask, 0)) != NDF_OK) return s;
  return run_apply(ctx, name, input, mask, output, &g, NDF__ITY_ZSCORE, NDF__ITY_STAT_MOMENTS, 0, 0, 0, 0);
}

/* ---- equalize_hist ------------------------------------------------------------------------- */

/* The largest i < n with s[i] <= x, for s[0..n-1] non-decreasing and s[0] <= x.  With
 * scale > 0 the search starts at (x - s[0]) * scale and walks (evenly spaced bins: a step or
 * none); else it bisects.  The index is unique, so both give the same answer. */
static inline int64_t last_le(double x, const double *s, int64_t n, double scale) {
  if (scale > 0) {
    const double t = (x - s[0]) * scale;
    int64_t i = t < (double)(n - 1) ? (int64_t)t : n - 1;
    while (i > 0 && s[i] > x) i--;
    while (i + 1 < n && s[i + 1] <= x) i++;
    return i;
  }
  int64_t lo = 0, hi = n; /* s[lo] <= x */
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (s[mid] <= x) lo = mid;
    else hi = mid;
  }
  return lo;
}

/* last_le's scale for s[0..n-1] spanning `units` steps: 0 (bisect) unless s never decreases
 * and its span is finite and positive. */
static double guess_scale(const double *s, int64_t n, double units) {
  for (int64_t i = 1; i < n; i++)
    if (!(s[i] >= s[i - 1])) return 0;
  const double span = s[n - 1] - s[0];
  return n > 1 && span > 0 && isfinite(span) ? units / span : 0;
}

/* np.interp(x, xp, fp) (numpy/core/src/multiarray/compiled_base.c's rules), n >= 1; scale as
 * last_le's. */
static double interp(double x, const double *xp, const double *fp, int64_t n, double scale) {
  if (isnan(x)) return x;
  if (x < xp[0]) return fp[0];
  if (x > xp[n - 1]) return fp[n - 1];
  const int64_t lo = last_le(x, xp, n, scale);
  if (lo == n - 1 || xp[lo] == x) return fp[lo];
  const double slope = (fp[lo + 1] - fp[lo]) / (xp[lo + 1] - xp[lo]);
  double r = slope * (x - xp[lo]) + fp[lo];
  if (isnan(r)) {
    r = slope * (x - xp[lo + 1]) + fp[lo + 1];
    if (isnan(r) && fp[lo] == fp[lo + 1]) r = fp[lo];
  }
  return r;
}

/* The number of sorted s[0..n-1] that are <= x. */
static int64_t count_le(const double *s, int64_t n, double x) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (s[mid] <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* An integer image's values span at most this many more values than it has voxels for the
 * counting table (else it is sorted): the table then costs about what the image does. */
#define EQ_TABLE_SLACK ((int64_t)1 << 16)

static int64_t float_range(const ndf_array *in, const ndf_array *mask, const ndf__ity_geom *g, int64_t b,
                           double *xv, double *mv, double *lo, double *hi, int *nan);
/* The smallest and largest of an integer image b's values under the mask (the whole image without
 * one), read a run at a time through xv and mv; 0 when there are none (no NaN or -0.0 here). */
static int64_t masked_range(const ndf_array *in, const ndf_array *mask, const ndf__ity_geom *g, int64_t b,
                            double *xv, double *mv, double *lo, double *hi) {
  int nan = 0;
  return float_range(in, mask, g, b, xv, mv, lo, hi, &nan);
}

/* equalize_hist of an integer image (bool too) whose values under the mask span a table of at
 * most the voxel count plus EQ_TABLE_SLACK entries (8- and 16-bit dtypes always): the counts in
 * a table over [lo, hi], then each output value looked up in a table of the fractions (the
 * general path's count_le(v, nv, y) / nv, y clamped to [lo, hi], stored the same way), a run
 * of EQ_RUN voxels at a time, so no image-sized scratch.  Wider dtypes read each image's range
 * first (and every image's once to size the tables): everything is allocated before the first
 * store.  Returns 0 (nothing done) where it does not apply. */
#define EQ_RUN 4096
static int equalize_int_table(ndf_ctx *ctx, const char *name, const ndf_array *in, const ndf_array *mask,
                              ndf_array *out, const ndf__ity_geom *g, ndf_status *st) {
  int64_t nval = 0; /* the tables' size */
  int narrow = 1;
  switch (in->dtype) {
    case NDF_BOOL: case NDF_UINT8: case NDF_INT8: nval = 256; break;
    case NDF_UINT16: case NDF_INT16: nval = 65536; break;
    case NDF_UINT32: case NDF_INT32: case NDF_INT64: case NDF_UINT64: narrow = 0; break;
    default: return 0;
  }
  double *run = NULL;
  if ((*st = scratch(ctx, name, 2 * EQ_RUN, sizeof *run, (void **)&run)) != NDF_OK) return 1;
  double *xv = run, *mv = run + EQ_RUN;
  if (!narrow) { /* the widest range of any image, or the general path */
    const double lim = 9007199254740992.0; /* 2^53: integers and their differences exact */
    for (int64_t b = 0; b < g->nimg; b++) {
      double lo, hi;
      if (!masked_range(in, mask, g, b, xv, mv, &lo, &hi)) continue;
      if (!(lo >= -lim && hi <= lim && hi - lo < (double)(g->m + EQ_TABLE_SLACK))) {
        free(run);
        return 0;
      }
      if ((int64_t)(hi - lo) + 1 > nval) nval = (int64_t)(hi - lo) + 1;
    }
  }
  int64_t *cnt = NULL;
  double *lut = NULL;
  if ((*st = scratch(ctx, name, nval, sizeof *cnt, (void **)&cnt)) != NDF_OK ||
      (*st = scratch(ctx, name, nval, sizeof *lut, (void **)&lut)) != NDF_OK) {
    free(run);
    free(cnt);
    return 1;
  }
  img_cursor ci, cm, co;
  for (int64_t b = 0; b < g->nimg; b++) {
    double lo = 0, hi = -1, vmin; /* the tables cover [vmin, vmin + nval) */
    if (narrow) {
      vmin = in->dtype == NDF_INT8 ? -128.0 : in->dtype == NDF_INT16 ? -32768.0 : 0.0;
    } else {
      if (!masked_range(in, mask, g, b, xv, mv, &lo, &hi)) lo = hi = 0;
      vmin = lo;
    }
    cur_init(&ci, in, g->nb, b);
    if (mask) cur_init(&cm, mask, g->nb, b);
    memset(cnt, 0, (size_t)nval * sizeof *cnt);
    for (int64_t j0 = 0; j0 < g->m; j0 += EQ_RUN) {
      const int64_t len = g->m - j0 < EQ_RUN ? g->m - j0 : EQ_RUN;
      cur_read(&ci, len, xv);
      if (mask) {
        cur_read(&cm, len, mv);
        for (int64_t i = 0; i < len; i++)
          if (mv[i] != 0) cnt[(int64_t)(xv[i] - vmin)]++;
      } else {
        for (int64_t i = 0; i < len; i++) cnt[(int64_t)(xv[i] - vmin)]++;
      }
    }
    int64_t klo = 0, khi = nval - 1, nv = 0;
    while (klo < nval && cnt[klo] == 0) klo++;
    if (klo < nval) {
      while (cnt[khi] == 0) khi--;
      for (int64_t k = klo; k <= khi; k++) nv += cnt[k];
      const double dn = (double)nv;
      int64_t cum = 0;
      for (int64_t k = klo; k <= khi; k++) {
        cum += cnt[k];
        lut[k] = (double)cum / dn;
      }
      lo = vmin + (double)klo;
      hi = vmin + (double)khi;
    }
    cur_init(&ci, in, g->nb, b);
    cur_init(&co, out, g->nb, b);
    for (int64_t j0 = 0; j0 < g->m; j0 += EQ_RUN) {
      const int64_t len = g->m - j0 < EQ_RUN ? g->m - j0 : EQ_RUN;
      cur_read(&ci, len, xv);
      if (nv == 0) { /* nothing under the mask */
        for (int64_t i = 0; i < len; i++) xv[i] = NAN;
      } else {
        for (int64_t i = 0; i < len; i++) {
          const double y = xv[i] < lo ? lo : xv[i] > hi ? hi : xv[i];
          xv[i] = lut[(int64_t)(y - vmin)];
        }
      }
      cur_write(&co, len, xv);
    }
  }
  free(run);
  free(cnt);
  free(lut);
  *st = NDF_OK;
  return 1;
}

/* auto_range's extremes (-0.0 below +0.0) of image b's values under the mask, read a run at a
 * time through xv and mv; *nan when one is NaN.  Returns their count. */
static int64_t float_range(const ndf_array *in, const ndf_array *mask, const ndf__ity_geom *g, int64_t b,
                           double *xv, double *mv, double *lo, double *hi, int *nan) {
  img_cursor ci, cm;
  cur_init(&ci, in, g->nb, b);
  if (mask) cur_init(&cm, mask, g->nb, b);
  int64_t nv = 0;
  double l = 0, h = 0;
  int isn = 0;
  for (int64_t j0 = 0; j0 < g->m; j0 += EQ_RUN) {
    const int64_t len = g->m - j0 < EQ_RUN ? g->m - j0 : EQ_RUN;
    cur_read(&ci, len, xv);
    if (mask) cur_read(&cm, len, mv);
    for (int64_t i = 0; i < len; i++) {
      if (mask && mv[i] == 0) continue;
      const double x = xv[i];
      if (nv++ == 0) l = h = x;
      isn |= isnan(x);
      if (x < l || (x == l && signbit(x) && !signbit(l))) l = x;
      if (x > h || (x == h && !signbit(x) && signbit(h))) h = x;
    }
  }
  *lo = l;
  *hi = h;
  *nan = isn;
  return nv;
}

/* equalize_hist of a float image, a run of EQ_RUN voxels at a time (no image-sized scratch):
 * every image's range is checked first, so a non-finite one stores nothing; then per image its
 * range, the histogram of the masked values in nbins bins (NumPy's edges), their cdf, and
 * np.interp of every voxel at the bin centres. */
static ndf_status equalize_float(ndf_ctx *ctx, const char *name, const ndf_array *in, const ndf_array *mask,
                                 ndf_array *out, const ndf__ity_geom *g, int nbins) {
  const int f32 = in->dtype == NDF_FLOAT32;
  double *run = NULL, *e = NULL;
  ndf_status s = scratch(ctx, name, 2 * EQ_RUN, sizeof *run, (void **)&run);
  if (s != NDF_OK) return s;
  if ((s = scratch(ctx, name, 3 * (int64_t)nbins + 1, sizeof *e, (void **)&e)) != NDF_OK) {
    free(run);
    return s;
  }
  double *xv = run, *mv = run + EQ_RUN, *xp = e + nbins + 1, *fp = xp + nbins;
  for (int64_t b = 0; b < g->nimg && s == NDF_OK; b++) {
    double lo, hi;
    int nan;
    if (float_range(in, mask, g, b, xv, mv, &lo, &hi, &nan)) s = range_ok(ctx, name, b, nan, &lo, &hi);
  }
  img_cursor ci, cm, co;
  for (int64_t b = 0; b < g->nimg && s == NDF_OK; b++) {
    double first, last;
    int nan;
    const int64_t nv = float_range(in, mask, g, b, xv, mv, &first, &last, &nan);
    double sc = 0;
    if (nv > 0) {
      if (first == last) {
        first -= 0.5;
        last += 0.5;
      }
      linspace_edges(first, last, nbins, f32, e);
      int64_t *cnt = (int64_t *)fp; /* counts, then the cdf in place */
      memset(cnt, 0, (size_t)nbins * sizeof *cnt);
      const double esc = guess_scale(e, nbins + 1, (double)nbins);
      cur_init(&ci, in, g->nb, b);
      if (mask) cur_init(&cm, mask, g->nb, b);
      for (int64_t j0 = 0; j0 < g->m; j0 += EQ_RUN) {
        const int64_t len = g->m - j0 < EQ_RUN ? g->m - j0 : EQ_RUN;
        cur_read(&ci, len, xv);
        if (mask) cur_read(&cm, len, mv);
        for (int64_t i = 0; i < len; i++) /* bin_of(v, e, nbins) */
          if ((!mask || mv[i] != 0) && xv[i] >= e[0] && xv[i] <= e[nbins]) cnt[last_le(xv[i], e, nbins, esc)]++;
      }
      int64_t cum = 0, tot = 0;
      for (int k = 0; k < nbins; k++) tot += cnt[k];
      for (int k = 0; k < nbins; k++) {
        cum += cnt[k];
        double c = (double)cum / (double)tot;
        if (f32) c = (double)(float)c;
        fp[k] = c;
        xp[k] = f32 ? (double)(((float)e[k] + (float)e[k + 1]) / 2.0f) : (e[k] + e[k + 1]) / 2.0;
      }
      sc = guess_scale(xp, nbins, (double)(nbins - 1));
    }
    cur_init(&ci, in, g->nb, b);
    cur_init(&co, out, g->nb, b);
    for (int64_t j0 = 0; j0 < g->m; j0 += EQ_RUN) {
      const int64_t len = g->m - j0 < EQ_RUN ? g->m - j0 : EQ_RUN;
      cur_read(&ci, len, xv);
      if (nv == 0) /* nothing under the mask */
        for (int64_t i = 0; i < len; i++) xv[i] = NAN;
      else
        for (int64_t i = 0; i < len; i++) xv[i] = interp(xv[i], xp, fp, nbins, sc);
      cur_write(&co, len, xv);
    }
  }
  free(run);
  free(e);
  return s;
}

ndf_status ndf_equalize_hist(ndf_ctx *ctx, const ndf_array *input, const ndf_array *mask, ndf_array *output, int nbins,
                             int batch_dims) {
  static const char *name = "ndf_equalize_hist";
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  ndf__clear_error(ctx);
  ndf__ity_geom g;
  ndf_status s = check_input(ctx, name, input, batch_dims, &g);
  if (s != NDF_OK) return s;
  if (mask && (s = check_like(ctx, name, "mask", mask, input, 1)) != NDF_OK) return s;
  if ((s = check_elementwise(ctx, name, input, output, mask, 0)) != NDF_OK) return s;
  const int isf = ndf__dtype_is_float(input->dtype);
  if (isf && (nbins < 1 || nbins > (1 << 24)))
    return ndf__argerror(ctx, name, "nbins", "%d is not in 1..2^24", nbins);
  if (g.nimg == 0 || g.m == 0) return NDF_OK;
  if (input->device == NDF_DEVICE_CUDA) return ndf__ity_equalize_cuda(ctx, name, input, mask, output, &g, nbins);
  if (isf) return equalize_float(ctx, name, input, mask, output, &g, nbins);
  if (equalize_int_table(ctx, name, input, mask, output, &g, &s)) return s;

  int64_t n;
  if (!ndf__mul(g.nimg, g.m, &n)) n = -1;
  double *R = NULL, *x = NULL, *v = NULL, *mk = NULL;
  int64_t *tab = NULL, tcap = 0;
  if ((s = scratch(ctx, name, n, sizeof(double), (void **)&R)) != NDF_OK) return s;
  if ((s = scratch(ctx, name, 3 * g.m, sizeof(double), (void **)&x)) != NDF_OK) goto done;
  v = x + g.m;
  mk = v + g.m;
  for (int64_t b = 0; b < g.nimg && s == NDF_OK; b++) {
    double *r = R + b * g.m;
    load_image(input, g.nb, b, g.m, x);
    if (mask) load_image(mask, g.nb, b, g.m, mk);
    int64_t nv = 0;
    for (int64_t j = 0; j < g.m; j++)
      if (!mask || mk[j] != 0) v[nv++] = x[j];
    if (nv == 0) {
      for (int64_t j = 0; j < g.m; j++) r[j] = NAN;
      continue;
    }
    {
      /* integers whose range is too wide for a table: the fraction of the (masked) values <= each
       * value, clamped to their range */
      double lo = v[0], hi = v[0];
      for (int64_t j = 1; j < nv; j++) {
        lo = v[j] < lo ? v[j] : lo;
        hi = v[j] > hi ? v[j] : hi;
      }
      const double lim = 9007199254740992.0; /* 2^53: integers and their differences exact */
      if (lo >= -lim && hi <= lim && hi - lo < (double)(nv + EQ_TABLE_SLACK)) {
        /* a counting table over [lo, hi], its running sums the counts <= each value */
        const int64_t span = (int64_t)(hi - lo) + 1;
        if (span > tcap) {
          free(tab);
          tab = NULL;
          tcap = 0;
          if ((s = scratch(ctx, name, span, sizeof *tab, (void **)&tab)) != NDF_OK) break;
          tcap = span;
        }
        memset(tab, 0, (size_t)span * sizeof *tab);
        for (int64_t j = 0; j < nv; j++) tab[(int64_t)(v[j] - lo)]++;
        for (int64_t k = 1; k < span; k++) tab[k] += tab[k - 1];
        const double dn = (double)nv;
        for (int64_t j = 0; j < g.m; j++) {
          const double y = x[j] < lo ? lo : x[j] > hi ? hi : x[j];
          r[j] = (double)tab[(int64_t)(y - lo)] / dn;
        }
      } else {
        qsort(v, (size_t)nv, sizeof *v, cmp_double);
        for (int64_t j = 0; j < g.m; j++) {
          const double y = x[j] < lo ? lo : x[j] > hi ? hi : x[j];
          r[j] = (double)count_le(v, nv, y) / (double)nv;
        }
      }
    }
  }
  if (s == NDF_OK)
    for (int64_t b = 0; b < g.nimg; b++) store_image(output, g.nb, b, g.m, R + b * g.m);
done:
  free(R);
  free(x);
  free(tab);
  return s;
}
