/*
 * filters.c -- the linear filters of scipy.ndimage (_filters.py): argument
 * checks, scipy's normalizations (convolution as a flipped correlation,
 * origins, per-axis lists, the Gaussian kernel), and the compositions, each
 * written as scipy writes it: multi-axis filters are 1-D passes in axis
 * order reading the previous pass's output, derivative sums add terms in the
 * output dtype.  Every argument is checked before the first pass runs.
 *
 * Built with -ffp-contract=off: the Gaussian kernel reproduces NumPy's
 * arithmetic operation by operation.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "filters/filters.h"
#include "tune.h"

void ndf_filter_options_init(ndf_filter_options *opt) {
  if (!opt) return;
  memset(opt, 0, sizeof *opt);
  opt->mode = NDF_MODE_REFLECT;
}

void ndf_gaussian_params_init(ndf_gaussian_params *g) {
  if (!g) return;
  memset(g, 0, sizeof *g);
  g->nsigma = 1;
  g->sigma[0] = 1.0;
  g->truncate = 4.0;
}

void ndf__fpass_free(ndf__fpass *p, int n) {
  for (int i = 0; i < n; i++) {
    free(p[i].w);
    p[i].w = NULL;
  }
}

int ndf__filters_symmetry(const double *w, int64_t n) {
  if (!(n & 1)) return 0;
  const int64_t c = n / 2;
  int sym = 1;
  for (int64_t k = 1; k <= c && sym; k++)
    if (fabs(w[c + k] - w[c - k]) > DBL_EPSILON) sym = 0;
  if (sym) return 1;
  for (int64_t k = 1; k <= c; k++)
    if (fabs(w[c + k] + w[c - k]) > DBL_EPSILON) return 0;
  return -1;
}

/* NumPy's pairwise summation of a contiguous float64 array (np.sum). */
static double pairwise_sum(const double *a, int64_t n) {
  if (n < 8) {
    double res = 0.0;
    for (int64_t i = 0; i < n; i++) res += a[i];
    return res;
  }
  if (n <= 128) {
    double r[8];
    int64_t i;
    for (int k = 0; k < 8; k++) r[k] = a[k];
    for (i = 8; i < n - (n % 8); i += 8)
      for (int k = 0; k < 8; k++) r[k] += a[i + k];
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; i++) res += a[i];
    return res;
  }
  int64_t n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

#define MAX_ORDER 8

/* scipy's _gaussian_kernel1d: phi = exp(-0.5 / sigma^2 * x^2) / sum, and for
 * order k the polynomial q with phi^(k) = q(x) phi, built by k products with
 * the operator q -> q' + q p' (p' = x * (1 / -sigma^2)), each a matrix-vector
 * product summed in index order; then the kernel reversed. */
void ndf__gaussian_kernel(double sigma, int order, int64_t radius, double *w) {
  const int64_t n = 2 * radius + 1;
  const double sigma2 = sigma * sigma, c = -0.5 / sigma2;
  for (int64_t i = 0; i < n; i++) {
    const int64_t x = i - radius;
    w[i] = exp(c * (double)(x * x));
  }
  const double sum = pairwise_sum(w, n);
  for (int64_t i = 0; i < n; i++) w[i] = w[i] / sum;
  if (order > 0) {
    const int m = order + 1;
    double Q[MAX_ORDER + 1][MAX_ORDER + 1] = {{0}}, q[MAX_ORDER + 1] = {0}, t[MAX_ORDER + 1];
    const double pd = 1.0 / -sigma2;
    for (int i = 0; i + 1 < m; i++) {
      Q[i][i + 1] = (double)(i + 1);
      Q[i + 1][i] = pd;
    }
    q[0] = 1.0;
    for (int it = 0; it < order; it++) {
      for (int i = 0; i < m; i++) {
        double s = 0.0;
        for (int j = 0; j < m; j++) s += Q[i][j] * q[j];
        t[i] = s;
      }
      memcpy(q, t, sizeof t);
    }
    for (int64_t i = 0; i < n; i++) {
      const int64_t x = i - radius;
      double s = 0.0;
      int64_t xp = 1;
      for (int k = 0; k < m; k++, xp *= x) s += (double)xp * q[k];
      w[i] = s * w[i];
    }
  }
  for (int64_t i = 0, j = n - 1; i < j; i++, j--) {
    const double tmp = w[i];
    w[i] = w[j];
    w[j] = tmp;
  }
}

/* ---- argument checks ------------------------------------------------------------------ */

typedef struct fargs {
  int nsp, nb;
  int nax;
  int axes[NDF_MAX_SPATIAL]; /* filtered axes (array indices) */
  ndf_mode modes[NDF_MAX_SPATIAL];
  int64_t origin[NDF_MAX_SPATIAL];
  int empty;
} fargs;

static int in_dtype_ok(ndf_dtype t) { return t >= NDF_BOOL && t <= NDF_UINT64; }
static int out_dtype_ok(ndf_dtype t) { return t >= NDF_BOOL && t <= NDF_UINT64; }

/* bool as scipy 1.10's linear filters take it: an input is read as its bytes (npy_bool is an
 * unsigned char) and an output stored with C's cast of the double to unsigned char, so that a
 * bool array -- an output, and every intermediate pass stored in it -- is a uint8 one holding
 * those bytes (C's cast of 0.5 is 0, of 2.0 is 2, of -1.0 is 255: bytes NumPy may show as True).
 * Such arrays run as uint8 views; ndf_laplace and the Gaussian derivative filters, whose terms
 * scipy sums with NumPy's bool arithmetic (or, and), refuse a bool output. */
static const ndf_array *u8_in(const ndf_array *a, ndf_array *view) {
  if (!a || a->dtype != NDF_BOOL) return a;
  *view = *a;
  view->dtype = NDF_UINT8;
  return view;
}
static ndf_array *u8_out(ndf_array *a, ndf_array *view) { return (ndf_array *)u8_in(a, view); }
static ndf_status no_bool_output(ndf_ctx *ctx, const char *name, const ndf_array *out) {
  if (!ctx || !out || out->dtype != NDF_BOOL) return NDF_OK;
  ndf__clear_error(ctx);
  return ndf__argerror(ctx, name, "output", "dtype bool is not supported (scipy sums the terms with NumPy's bool "
                       "arithmetic); give a numeric output");
}

static ndf_status check_arrays(ndf_ctx *ctx, const char *name, const ndf_array *in, const ndf_array *out,
                               const ndf_filter_options *opt, fargs *a) {
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  ndf__clear_error(ctx);
  if (!in) return ndf__argerror(ctx, name, "input", "NULL");
  if (!out) return ndf__argerror(ctx, name, "output", "NULL");
  if (!opt) return ndf__argerror(ctx, name, "options", "NULL");
  if (!in_dtype_ok(in->dtype))
    return ndf__argerror(ctx, name, "input",
                         "dtype %s is not supported (bool, uint8, int8, uint16, int16, uint32, int32, int64, uint64, "
                         "float32, float64)",
                         ndf_dtype_name(in->dtype) ? ndf_dtype_name(in->dtype) : "unknown");
  if (!out_dtype_ok(out->dtype))
    return ndf__argerror(ctx, name, "output",
                         "dtype %s is not supported (bool, uint8, int8, uint16, int16, uint32, int32, int64, uint64, "
                         "float32, float64)",
                         ndf_dtype_name(out->dtype) ? ndf_dtype_name(out->dtype) : "unknown");
  ndf_status s = ndf__check_shape(ctx, name, in, opt->batch_dims);
  if (s != NDF_OK) return s;
  if (out->ndim != in->ndim)
    return ndf__argerror(ctx, name, "output", "rank %d differs from the input rank %d", out->ndim, in->ndim);
  for (int d = 0; d < in->ndim; d++)
    if (out->shape[d] != in->shape[d])
      return ndf__argerror(ctx, name, "output", "shape[%d]=%lld differs from the input shape %lld", d,
                           (long long)out->shape[d], (long long)in->shape[d]);
  if ((s = ndf__check_array(ctx, name, "output", out, NULL)) != NDF_OK) return s;
  if (in->device != out->device || in->device_id != out->device_id)
    return ndf__argerror(ctx, name, "output", "lives on another device than the input");
  if ((s = ndf__check_device(ctx, name, in)) != NDF_OK) return s;
  a->nb = opt->batch_dims;
  a->nsp = in->ndim - opt->batch_dims;
  if (a->nsp > NDF_MAX_SPATIAL)
    return ndf__argerror(ctx, name, "batch_dims", "%d leaves %d spatial axes (at most %d)", opt->batch_dims, a->nsp,
                         NDF_MAX_SPATIAL);
  a->empty = ndf_array_size(in) == 0;
  if (a->empty) return NDF_OK;
  if (!in->data) return ndf__argerror(ctx, name, "input", "NULL data");
  if (!out->data) return ndf__argerror(ctx, name, "output", "NULL data");
  if (!ndf__layout_is_proper(out)) return ndf__argerror(ctx, name, "output", "its strides make elements overlap");
  if (ndf__arrays_overlap(in, out))
    return ndf__argerror(ctx, name, "output", "overlaps the input (in-place filtering is not supported)");
  return NDF_OK;
}

static ndf_status check_mode(ndf_ctx *ctx, const char *name, const char *arg, ndf_mode m) {
  if ((int)m < 0 || m >= NDF_MODE_COUNT) return ndf__argerror(ctx, name, arg, "unknown mode %d", (int)m);
  return NDF_OK;
}

/* A per-axis list's length: 1 (every axis) or one per filtered axis; zero when zero_ok. */
static ndf_status check_count(ndf_ctx *ctx, const char *name, const char *arg, int n, int nax, int zero_ok) {
  if ((n == 0 && zero_ok) || n == 1 || n == nax) return NDF_OK;
  return ndf__argerror(ctx, name, arg, "%d values for %d filtered axes (give %s1 or %d)", n, nax,
                       zero_ok ? "0, " : "", nax);
}

/* An axis argument: negative from the end, not a batch axis. */
static ndf_status norm_axis(ndf_ctx *ctx, const char *name, const char *arg, int axis, const ndf_array *in,
                            const fargs *a, int *out) {
  const int ax = axis < 0 ? axis + in->ndim : axis;
  if (ax < 0 || ax >= in->ndim)
    return ndf__argerror(ctx, name, arg, "axis %d is out of range for an input of rank %d", axis, in->ndim);
  if (ax < a->nb) return ndf__argerror(ctx, name, arg, "axis %d is one of the %d batch axes", axis, a->nb);
  *out = ax;
  return NDF_OK;
}

/* The N-D filters' axes, modes and origins. */
static ndf_status check_nd(ndf_ctx *ctx, const char *name, const ndf_array *in, const ndf_array *out,
                           const ndf_filter_options *opt, int use_axes, fargs *a) {
  ndf_status s = check_arrays(ctx, name, in, out, opt, a);
  if (s != NDF_OK) return s;
  if (!use_axes || opt->naxes == 0) {
    a->nax = a->nsp;
    for (int i = 0; i < a->nsp; i++) a->axes[i] = a->nb + i;
  } else {
    if (opt->naxes < 0 || opt->naxes > a->nsp)
      return ndf__argerror(ctx, name, "axes", "naxes=%d is not in 0..%d", opt->naxes, a->nsp);
    a->nax = opt->naxes;
    for (int i = 0; i < a->nax; i++) {
      if ((s = norm_axis(ctx, name, "axes", opt->axes[i], in, a, &a->axes[i])) != NDF_OK) return s;
      for (int j = 0; j < i; j++)
        if (a->axes[j] == a->axes[i]) return ndf__argerror(ctx, name, "axes", "axis %d appears twice", a->axes[i]);
    }
  }
  if ((s = check_count(ctx, name, "modes", opt->nmodes, a->nax, 1)) != NDF_OK) return s;
  if ((s = check_count(ctx, name, "origin", opt->norigin, a->nax, 1)) != NDF_OK) return s;
  for (int i = 0; i < a->nax; i++) {
    a->modes[i] = opt->nmodes == 0 ? opt->mode : opt->modes[opt->nmodes == 1 ? 0 : i];
    if ((s = check_mode(ctx, name, "mode", a->modes[i])) != NDF_OK) return s;
    a->origin[i] = opt->norigin == 0 ? 0 : opt->origin[opt->norigin == 1 ? 0 : i];
  }
  return NDF_OK;
}

/* The 1-D filters: one axis, one mode, one origin. */
static ndf_status check_1d(ndf_ctx *ctx, const char *name, const ndf_array *in, const ndf_array *out,
                           const ndf_filter_options *opt, int axis, fargs *a) {
  ndf_status s = check_arrays(ctx, name, in, out, opt, a);
  if (s != NDF_OK) return s;
  a->nax = 1;
  if ((s = norm_axis(ctx, name, "axis", axis, in, a, &a->axes[0])) != NDF_OK) return s;
  if (opt->nmodes < 0 || opt->nmodes > 1)
    return ndf__argerror(ctx, name, "modes", "%d modes for a 1-D filter (give 0 or 1)", opt->nmodes);
  a->modes[0] = opt->nmodes == 1 ? opt->modes[0] : opt->mode;
  if ((s = check_mode(ctx, name, "mode", a->modes[0])) != NDF_OK) return s;
  if (opt->norigin < 0 || opt->norigin > 1)
    return ndf__argerror(ctx, name, "origin", "%d origins for a 1-D filter (give 0 or 1)", opt->norigin);
  a->origin[0] = opt->norigin ? opt->origin[0] : 0;
  return NDF_OK;
}

/* scipy's _invalid_origin for a correlation of n taps. */
static ndf_status check_origin(ndf_ctx *ctx, const char *name, int64_t origin, int64_t n) {
  if (origin < -(n / 2) || origin > (n - 1) / 2)
    return ndf__argerror(ctx, name, "origin", "%lld is outside [%lld, %lld] for %lld taps", (long long)origin,
                         (long long)-(n / 2), (long long)((n - 1) / 2), (long long)n);
  return NDF_OK;
}

/* ---- running passes -------------------------------------------------------------------- */

/* A contiguous scratch array of dtype dt shaped like like, on its device. */
static ndf_status scratch_like(ndf_ctx *ctx, const char *name, const ndf_array *like, ndf_dtype dt, ndf_array *t) {
  ndf_array_init(t, NULL, like->device, dt, like->ndim, like->shape);
  t->device_id = like->device_id;
  const size_t bytes = (size_t)ndf_array_size(like) * ndf_dtype_size(dt);
  if (like->device == NDF_DEVICE_CPU) {
    t->data = malloc(bytes ? bytes : 1);
    return t->data ? NDF_OK : ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory for a temporary", name);
  }
  CUdeviceptr p = 0;
  ndf_status s = ndf__ctx_bind(ctx);
  if (s == NDF_OK) s = ndf__scratch_alloc(ctx, bytes ? bytes : 1, &p);
  t->data = (void *)(uintptr_t)p;
  return s;
}

static void scratch_free(ndf_ctx *ctx, ndf_array *t) {
  if (!t->data) return;
  if (t->device == NDF_DEVICE_CPU) free(t->data);
  else ndf__scratch_free(ctx, (CUdeviceptr)(uintptr_t)t->data);
  t->data = NULL;
}

/* The passes in order from in to out, each reading the previous one's
 * output (in place on the CPU, ping-ponging through scratch on CUDA so that
 * the last pass writes out); no pass copies (converts) in to out. */
static ndf_status run_passes(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out,
                             const ndf__fpass *p, int np, double cval) {
  const int cpu = in->device == NDF_DEVICE_CPU;
  if (np == 0) {
    if (cpu) {
      ndf__filters_cast_cpu(ctx, in, out);
      return NDF_OK;
    }
    return ndf__filters_cast_cuda(ctx, name, in, out);
  }
  if (cpu) return ndf__filters_line_cpu(ctx, name, in, out, p, np, cval);
  /* The launches: a pass along an axis other than the last followed by one
   * along the last axis run as one kernel (filter_plane) where it applies and
   * the tunable filters.fuse is on (its default). */
  const ndf__tune_work w = {in->dtype, np, ndf_array_size(in), 0};
  const int fuse = ndf__tune(ctx, NDF__TUNE_FILTERS_FUSE, &w) == NDF__TUNE_FILTERS_FUSE__ON;
  int first[NDF_MAX_SPATIAL], two[NDF_MAX_SPATIAL], nk = 0;
  for (int i = 0; i < np; i++, nk++) {
    first[nk] = i;
    two[nk] = fuse && i + 1 < np && ndf__filters_plane_applies(&p[i], &p[i + 1], in->ndim);
    i += two[nk];
  }
  ndf_array tmp = {0};
  ndf_status s = NDF_OK;
  if (nk > 1 && (s = scratch_like(ctx, name, out, out->dtype, &tmp)) != NDF_OK) return s;
  const ndf_array *src = in;
  for (int k = 0; k < nk && s == NDF_OK; k++) {
    ndf_array *dst = (nk - 1 - k) % 2 == 0 ? out : &tmp;
    const ndf__fpass *q = &p[first[k]];
    s = two[k] ? ndf__filters_plane_cuda(ctx, name, src, dst, q, q + 1, cval)
               : ndf__filters_line_cuda(ctx, name, src, dst, q, cval);
    src = dst;
  }
  scratch_free(ctx, &tmp);
  return s;
}

static ndf_status run_ew(ndf_ctx *ctx, const char *name, ndf__few_kind kind, const ndf_array *a, ndf_array *out) {
  if (out->device == NDF_DEVICE_CPU) {
    ndf__filters_ew_cpu(ctx, kind, a, out);
    return NDF_OK;
  }
  return ndf__filters_ew_cuda(ctx, name, kind, a, out);
}

/* A pass of explicit weights (copied). */
static ndf_status weights_pass(ndf_ctx *ctx, const char *name, const double *w, int64_t n, int axis, int64_t origin,
                               ndf_mode mode, ndf__fpass *p) {
  memset(p, 0, sizeof *p);
  if (!(p->w = malloc((size_t)n * sizeof *p->w))) return ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", name);
  memcpy(p->w, w, (size_t)n * sizeof *w);
  p->n = n;
  p->axis = axis;
  p->origin = origin;
  p->mode = mode;
  p->sym = ndf__filters_symmetry(w, n);
  return NDF_OK;
}

/* ---- correlate1d, convolve1d ------------------------------------------------------------ */

static ndf_status correlate1d(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out, const double *w,
                              int64_t n, int axis, const ndf_filter_options *opt, int convolve) {
  ndf_array iv, ov;
  in = u8_in(in, &iv);
  out = u8_out(out, &ov);
  fargs a;
  ndf_status s = check_1d(ctx, name, in, out, opt, axis, &a);
  if (s != NDF_OK) return s;
  if (!w) return ndf__argerror(ctx, name, "weights", "NULL");
  if (n < 1 || n > NDF_MAX_BYTES / 8) return ndf__argerror(ctx, name, "weights", "%lld taps (at least 1)", (long long)n);
  int64_t origin = a.origin[0];
  ndf__fpass p;
  if ((s = weights_pass(ctx, name, w, n, a.axes[0], 0, a.modes[0], &p)) != NDF_OK) return s;
  if (convolve) {
    for (int64_t i = 0, j = n - 1; i < j; i++, j--) {
      const double t = p.w[i];
      p.w[i] = p.w[j];
      p.w[j] = t;
    }
    origin = -origin - (n % 2 == 0 ? 1 : 0);
  }
  p.origin = origin;
  if ((s = check_origin(ctx, name, origin, n)) == NDF_OK && !a.empty) s = run_passes(ctx, name, in, out, &p, 1, opt->cval);
  ndf__fpass_free(&p, 1);
  return s;
}

ndf_status ndf_correlate1d(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, const double *weights, int64_t n,
                           int axis, const ndf_filter_options *opt) {
  return correlate1d(ctx, "ndf_correlate1d", input, output, weights, n, axis, opt, 0);
}

ndf_status ndf_convolve1d(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, const double *weights, int64_t n,
                          int axis, const ndf_filter_options *opt) {
  return correlate1d(ctx, "ndf_convolve1d", input, output, weights, n, axis, opt, 1);
}

/* ---- correlate, convolve -------------------------------------------------------------------- */

static ndf_status correlate_nd(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out,
                               const ndf_array *weights, const ndf_filter_options *opt, int convolve) {
  ndf_array iv, ov;
  in = u8_in(in, &iv);
  out = u8_out(out, &ov);
  fargs a;
  ndf_status s = check_nd(ctx, name, in, out, opt, 1, &a);
  if (s != NDF_OK) return s;
  if (opt->nmodes > 1) return ndf__argerror(ctx, name, "modes", "one mode for every axis (nmodes must be 0 or 1)");
  if (!weights) return ndf__argerror(ctx, name, "weights", "NULL");
  int64_t wn = 0;
  if ((s = ndf__check_array(ctx, name, "weights", weights, &wn)) != NDF_OK) return s;
  if (weights->device != NDF_DEVICE_CPU) return ndf__argerror(ctx, name, "weights", "must be a host (CPU) array");
  if (!ndf_dtype_size(weights->dtype))
    return ndf__argerror(ctx, name, "weights", "dtype %s is not supported",
                         ndf_dtype_name(weights->dtype) ? ndf_dtype_name(weights->dtype) : "unknown");
  if (weights->ndim != a.nax)
    return ndf__argerror(ctx, name, "weights", "rank %d does not match the %d filtered axes", weights->ndim, a.nax);
  for (int i = 0; i < a.nax; i++)
    if (weights->shape[i] < 1)
      return ndf__argerror(ctx, name, "weights", "shape[%d]=%lld (every extent must be at least 1)", i,
                           (long long)weights->shape[i]);
  if (!weights->data) return ndf__argerror(ctx, name, "weights", "NULL data");
  /* Per spatial axis d: extent k, origin, and which weights axis it is. */
  int64_t k[NDF_MAX_SPATIAL], org[NDF_MAX_SPATIAL];
  int wax[NDF_MAX_SPATIAL];
  for (int d = 0; d < a.nsp; d++) {
    k[d] = 1;
    org[d] = 0;
    wax[d] = -1;
  }
  for (int i = 0; i < a.nax; i++) {
    const int d = a.axes[i] - a.nb;
    const int64_t ki = weights->shape[i];
    int64_t o = a.origin[i];
    if (convolve) o = -o - (ki % 2 == 0 ? 1 : 0);
    if ((s = check_origin(ctx, name, o, ki)) != NDF_OK) return s;
    k[d] = ki;
    org[d] = o;
    wax[d] = i;
  }
  ndf__ftaps t = {0};
  t.nsp = a.nsp;
  t.mode = a.modes[0];
  if (!(t.off = malloc((size_t)wn * a.nsp * sizeof *t.off)) || !(t.w = malloc((size_t)wn * sizeof *t.w))) {
    free(t.off);
    return ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory for %lld taps", name, (long long)wn);
  }
  for (int d = 0; d < a.nsp; d++) {
    t.rlo[d] = INT32_MAX;
    t.rhi[d] = INT32_MIN;
  }
  for (int64_t r = 0; r < wn; r++) {
    /* r enumerates the taps in the raster order of the spatial axes. */
    int64_t idx[NDF_MAX_SPATIAL], rem = r, woff = 0;
    for (int d = a.nsp - 1; d >= 0; d--) {
      idx[d] = rem % k[d];
      rem /= k[d];
    }
    for (int d = 0; d < a.nsp; d++) {
      if (wax[d] < 0) continue;
      const int64_t wi = convolve ? k[d] - 1 - idx[d] : idx[d];
      woff += wi * weights->strides[wax[d]];
    }
    const double v = ndf__get_f64(weights, woff);
    if (!(fabs(v) > DBL_EPSILON)) continue;
    for (int d = 0; d < a.nsp; d++) {
      const int32_t o = (int32_t)(idx[d] - (k[d] / 2 + org[d]));
      t.off[t.ntaps * a.nsp + d] = o;
      if (o < t.rlo[d]) t.rlo[d] = o;
      if (o > t.rhi[d]) t.rhi[d] = o;
    }
    t.w[t.ntaps++] = v;
  }
  if (t.ntaps == 0)
    for (int d = 0; d < a.nsp; d++) t.rlo[d] = t.rhi[d] = 0;
  if (!a.empty)
    s = in->device == NDF_DEVICE_CPU ? ndf__filters_taps_cpu(ctx, name, in, out, &t, opt->cval)
                                     : ndf__filters_taps_cuda(ctx, name, in, out, &t, opt->cval);
  free(t.off);
  free(t.w);
  return s;
}

ndf_status ndf_correlate(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, const ndf_array *weights,
                         const ndf_filter_options *opt) {
  return correlate_nd(ctx, "ndf_correlate", input, output, weights, opt, 0);
}

ndf_status ndf_convolve(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, const ndf_array *weights,
                        const ndf_filter_options *opt) {
  return correlate_nd(ctx, "ndf_convolve", input, output, weights, opt, 1);
}

/* ---- uniform filters -------------------------------------------------------------------- */

static ndf_status uniform_pass(ndf_ctx *ctx, const char *name, int64_t size, int axis, int64_t origin, ndf_mode mode,
                               ndf__fpass *p) {
  memset(p, 0, sizeof *p);
  if (size < 1) return ndf__argerror(ctx, name, "size", "%lld (at least 1)", (long long)size);
  if (size / 2 + origin < 0 || size / 2 + origin >= size)
    return ndf__argerror(ctx, name, "origin", "%lld is outside [%lld, %lld] for size %lld", (long long)origin,
                         (long long)-(size / 2), (long long)(size - 1 - size / 2), (long long)size);
  p->uniform = 1;
  p->n = size;
  p->axis = axis;
  p->origin = origin;
  p->mode = mode;
  return NDF_OK;
}

ndf_status ndf_uniform_filter1d(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, int64_t size, int axis,
                                const ndf_filter_options *opt) {
  const char *name = "ndf_uniform_filter1d";
  ndf_array iv, ov;
  input = u8_in(input, &iv);
  output = u8_out(output, &ov);
  fargs a;
  ndf__fpass p;
  ndf_status s = check_1d(ctx, name, input, output, opt, axis, &a);
  if (s == NDF_OK) s = uniform_pass(ctx, name, size, a.axes[0], a.origin[0], a.modes[0], &p);
  if (s != NDF_OK || a.empty) return s;
  return run_passes(ctx, name, input, output, &p, 1, opt->cval);
}

ndf_status ndf_uniform_filter(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, int nsize,
                              const int64_t *size, const ndf_filter_options *opt) {
  const char *name = "ndf_uniform_filter";
  ndf_array iv, ov;
  input = u8_in(input, &iv);
  output = u8_out(output, &ov);
  fargs a;
  ndf_status s = check_nd(ctx, name, input, output, opt, 1, &a);
  if (s != NDF_OK) return s;
  if (!size) return ndf__argerror(ctx, name, "size", "NULL");
  if ((s = check_count(ctx, name, "size", nsize, a.nax, 0)) != NDF_OK) return s;
  ndf__fpass p[NDF_MAX_SPATIAL];
  int np = 0;
  for (int i = 0; i < a.nax; i++) {
    const int64_t sz = size[nsize == 1 ? 0 : i];
    if (sz < 0) return ndf__argerror(ctx, name, "size", "size[%d]=%lld is negative", i, (long long)sz);
    if (sz <= 1) continue;
    if ((s = uniform_pass(ctx, name, sz, a.axes[i], a.origin[i], a.modes[i], &p[np])) != NDF_OK) return s;
    np++;
  }
  if (a.empty) return NDF_OK;
  return run_passes(ctx, name, input, output, p, np, opt->cval);
}

/* ---- Gaussian filters ------------------------------------------------------------------- */

/* The pass of gaussian_filter1d(sigma, order, truncate, radius) (radius < 0: from truncate). */
static ndf_status gauss_pass(ndf_ctx *ctx, const char *name, double sigma, int order, double truncate,
                             int64_t radius, int axis, ndf_mode mode, ndf__fpass *p) {
  memset(p, 0, sizeof *p);
  if (!isfinite(sigma) || sigma <= 0)
    return ndf__argerror(ctx, name, "sigma", "%g (must be finite and > 0 for a 1-D pass)", sigma);
  if (order < 0 || order > MAX_ORDER) return ndf__argerror(ctx, name, "order", "%d is not in 0..%d", order, MAX_ORDER);
  if (radius < 0) {
    if (!isfinite(truncate)) return ndf__argerror(ctx, name, "truncate", "%g is not finite", truncate);
    const double r = truncate * sigma + 0.5;
    if (!(r > -1.0) || r >= (double)NDF_MAX_GAUSSIAN_RADIUS + 1)
      return ndf__argerror(ctx, name, "radius", "truncate * sigma + 0.5 = %g gives a radius outside 0..%lld", r,
                           (long long)NDF_MAX_GAUSSIAN_RADIUS);
    radius = (int64_t)r;
  }
  if (radius > NDF_MAX_GAUSSIAN_RADIUS)
    return ndf__argerror(ctx, name, "radius", "%lld is above %lld", (long long)radius,
                         (long long)NDF_MAX_GAUSSIAN_RADIUS);
  p->n = 2 * radius + 1;
  if (!(p->w = malloc((size_t)p->n * sizeof *p->w))) return ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", name);
  ndf__gaussian_kernel(sigma, order, radius, p->w);
  p->sym = ndf__filters_symmetry(p->w, p->n);
  p->axis = axis;
  p->mode = mode;
  return NDF_OK;
}

ndf_status ndf_gaussian_filter1d(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, double sigma, int axis,
                                 int order, double truncate, int64_t radius, const ndf_filter_options *opt) {
  const char *name = "ndf_gaussian_filter1d";
  ndf_array iv, ov;
  input = u8_in(input, &iv);
  output = u8_out(output, &ov);
  fargs a;
  ndf__fpass p;
  ndf_status s = check_1d(ctx, name, input, output, opt, axis, &a);
  if (s == NDF_OK) s = gauss_pass(ctx, name, sigma, order, truncate, radius, a.axes[0], a.modes[0], &p);
  if (s != NDF_OK) return s;
  if (!a.empty) s = run_passes(ctx, name, input, output, &p, 1, opt->cval);
  ndf__fpass_free(&p, 1);
  return s;
}

static ndf_status check_gauss(ndf_ctx *ctx, const char *name, const ndf_gaussian_params *g, const fargs *a) {
  if (!g) return ndf__argerror(ctx, name, "gaussian", "NULL");
  ndf_status s;
  if ((s = check_count(ctx, name, "sigma", g->nsigma, a->nax, 0)) != NDF_OK) return s;
  if (g->nsigma == 0) return ndf__argerror(ctx, name, "sigma", "no value given");
  if ((s = check_count(ctx, name, "order", g->norder, a->nax, 1)) != NDF_OK) return s;
  if ((s = check_count(ctx, name, "radius", g->nradius, a->nax, 1)) != NDF_OK) return s;
  for (int i = 0; i < g->nsigma; i++)
    if (!isfinite(g->sigma[i]) || g->sigma[i] < 0)
      return ndf__argerror(ctx, name, "sigma", "sigma[%d]=%g (must be finite and >= 0)", i, g->sigma[i]);
  for (int i = 0; i < g->norder; i++)
    if (g->order[i] < 0 || g->order[i] > MAX_ORDER)
      return ndf__argerror(ctx, name, "order", "order[%d]=%d is not in 0..%d", i, g->order[i], MAX_ORDER);
  for (int i = 0; i < g->nradius; i++)
    if (g->radius[i] < 0 || g->radius[i] > NDF_MAX_GAUSSIAN_RADIUS)
      return ndf__argerror(ctx, name, "radius", "radius[%d]=%lld is not in 0..%lld", i, (long long)g->radius[i],
                           (long long)NDF_MAX_GAUSSIAN_RADIUS);
  return NDF_OK;
}

/* The passes of gaussian_filter over the filtered axes, with order[i] on
 * filtered axis i (orders NULL: g's), mode (NULL: the per-axis modes of a),
 * in the order seq gives (filtered-axis indices; NULL: 0, 1, ...). */
static ndf_status gauss_passes(ndf_ctx *ctx, const char *name, const ndf_gaussian_params *g, const int *orders,
                               const ndf_mode *mode1, const fargs *a, const int *seq, ndf__fpass *p, int *np) {
  *np = 0;
  for (int k = 0; k < a->nax; k++) {
    const int i = seq ? seq[k] : k;
    const double sigma = g->sigma[g->nsigma == 1 ? 0 : i];
    if (!(sigma > 1e-15)) continue;
    const int order = orders ? orders[i] : (g->norder == 0 ? 0 : g->order[g->norder == 1 ? 0 : i]);
    const int64_t radius = g->nradius == 0 ? -1 : g->radius[g->nradius == 1 ? 0 : i];
    ndf_status s = gauss_pass(ctx, name, sigma, order, g->truncate, radius, a->axes[i], mode1 ? *mode1 : a->modes[i],
                              &p[*np]);
    if (s != NDF_OK) {
      ndf__fpass_free(p, *np);
      *np = 0;
      return s;
    }
    (*np)++;
  }
  return NDF_OK;
}

ndf_status ndf_gaussian_filter(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, const ndf_gaussian_params *g,
                               const ndf_filter_options *opt) {
  const char *name = "ndf_gaussian_filter";
  ndf_array iv, ov;
  input = u8_in(input, &iv);
  output = u8_out(output, &ov);
  fargs a;
  ndf_status s = check_nd(ctx, name, input, output, opt, 1, &a);
  if (s == NDF_OK) s = check_gauss(ctx, name, g, &a);
  if (s != NDF_OK) return s;
  ndf__fpass p[NDF_MAX_SPATIAL];
  int np;
  if ((s = gauss_passes(ctx, name, g, NULL, NULL, &a, NULL, p, &np)) != NDF_OK) return s;
  if (!a.empty) s = run_passes(ctx, name, input, output, p, np, opt->cval);
  ndf__fpass_free(p, np);
  return s;
}

/* ---- derivatives ------------------------------------------------------------------------ */

static ndf_status sobel_prewitt(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out, int axis,
                                const ndf_filter_options *opt, double side) {
  ndf_array iv, ov;
  in = u8_in(in, &iv);
  out = u8_out(out, &ov);
  fargs a;
  ndf_status s = check_nd(ctx, name, in, out, opt, 0, &a);
  if (s != NDF_OK) return s;
  int ax = 0;
  if ((s = norm_axis(ctx, name, "axis", axis, in, &a, &ax)) != NDF_OK) return s;
  static const double deriv[3] = {-1.0, 0.0, 1.0};
  const double smooth[3] = {1.0, side, 1.0};
  ndf__fpass p[NDF_MAX_SPATIAL];
  int np = 0;
  s = weights_pass(ctx, name, deriv, 3, ax, 0, a.modes[ax - a.nb], &p[np++]);
  for (int i = 0; i < a.nax && s == NDF_OK; i++)
    if (a.axes[i] != ax) s = weights_pass(ctx, name, smooth, 3, a.axes[i], 0, a.modes[i], &p[np++]);
  if (s == NDF_OK && !a.empty) s = run_passes(ctx, name, in, out, p, np, opt->cval);
  ndf__fpass_free(p, np);
  return s;
}

ndf_status ndf_sobel(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, int axis,
                     const ndf_filter_options *opt) {
  return sobel_prewitt(ctx, "ndf_sobel", input, output, axis, opt, 2.0);
}

ndf_status ndf_prewitt(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, int axis,
                       const ndf_filter_options *opt) {
  return sobel_prewitt(ctx, "ndf_prewitt", input, output, axis, opt, 1.0);
}

/* scipy's generic_laplace / generic_gradient_magnitude: term i (the passes
 * p[i][0..np[i])) written to the sum for i = 0, to a scratch array added to
 * the sum for the others; squared first (NumPy's multiply in the dtype) for
 * the gradient magnitude, whose sum then takes np.sqrt.  With several terms
 * the sum is a scratch array of out's dtype copied to out at the end, so that
 * an allocation failing in a later term leaves out as it was. */
static ndf_status sum_terms(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out, int nterms,
                            ndf__fpass (*p)[NDF_MAX_SPATIAL], const int *np, double cval, int magnitude) {
  ndf_array tmp = {0}, acc = {0};
  ndf_status s = NDF_OK;
  if (nterms > 1) s = scratch_like(ctx, name, out, out->dtype, &tmp);
  if (s == NDF_OK && nterms > 1) s = scratch_like(ctx, name, out, out->dtype, &acc);
  ndf_array *sum = nterms > 1 ? &acc : out;
  for (int i = 0; i < nterms && s == NDF_OK; i++) {
    ndf_array *dst = i == 0 ? sum : &tmp;
    s = run_passes(ctx, name, in, dst, p[i], np[i], cval);
    if (s == NDF_OK && magnitude) s = run_ew(ctx, name, NDF__FEW_SQUARE, NULL, dst);
    if (s == NDF_OK && i > 0) s = run_ew(ctx, name, NDF__FEW_ADD, &tmp, sum);
  }
  if (s == NDF_OK && magnitude && nterms > 0) s = run_ew(ctx, name, NDF__FEW_SQRT, NULL, sum);
  if (s == NDF_OK && nterms > 1) s = run_passes(ctx, name, sum, out, NULL, 0, cval); /* the copy */
  scratch_free(ctx, &acc);
  scratch_free(ctx, &tmp);
  return s;
}

ndf_status ndf_laplace(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, const ndf_filter_options *opt) {
  const char *name = "ndf_laplace";
  ndf_array iv;
  input = u8_in(input, &iv);
  fargs a;
  ndf_status s = no_bool_output(ctx, name, output);
  if (s == NDF_OK) s = check_nd(ctx, name, input, output, opt, 1, &a);
  if (s != NDF_OK) return s;
  static const double d2[3] = {1.0, -2.0, 1.0};
  ndf__fpass p[NDF_MAX_SPATIAL][NDF_MAX_SPATIAL];
  int np[NDF_MAX_SPATIAL] = {0}, made = 0;
  for (; made < a.nax && s == NDF_OK; made++) {
    s = weights_pass(ctx, name, d2, 3, a.axes[made], 0, a.modes[made], &p[made][0]);
    np[made] = s == NDF_OK;
  }
  if (s == NDF_OK && !a.empty) s = sum_terms(ctx, name, input, output, a.nax, p, np, opt->cval, 0);
  for (int i = 0; i < made; i++) ndf__fpass_free(p[i], np[i]);
  return s;
}

/* gaussian_laplace (order 2) and gaussian_gradient_magnitude (order 1): term
 * i is gaussian_filter with that order on filtered axis i, 0 elsewhere, and
 * mode i on every axis (scipy passes one mode per term).  The terms are
 * summed in the order of the filtered axes (scipy's generic_laplace loop),
 * but each term's passes go in increasing axis order: scipy's term is a
 * gaussian_filter call with one sigma per input axis (0 off the listed
 * axes) and no axes of its own, and its passes round to the output dtype
 * in between. */
static ndf_status gauss_deriv(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out,
                              const ndf_gaussian_params *g, const ndf_filter_options *opt, int order) {
  ndf_array iv;
  in = u8_in(in, &iv);
  fargs a;
  ndf_status s = no_bool_output(ctx, name, out);
  if (s == NDF_OK) s = check_nd(ctx, name, in, out, opt, 1, &a);
  if (s == NDF_OK) s = check_gauss(ctx, name, g, &a);
  if (s != NDF_OK) return s;
  for (int i = 0; i < g->norder; i++)
    if (g->order[i] != 0) return ndf__argerror(ctx, name, "order", "order[%d]=%d (this filter sets the orders)", i, g->order[i]);
  int seq[NDF_MAX_SPATIAL]; /* the filtered axes by increasing axis (insertion sort) */
  for (int i = 0; i < a.nax; i++) {
    int j = i;
    for (; j > 0 && a.axes[seq[j - 1]] > a.axes[i]; j--) seq[j] = seq[j - 1];
    seq[j] = i;
  }
  ndf__fpass p[NDF_MAX_SPATIAL][NDF_MAX_SPATIAL];
  int np[NDF_MAX_SPATIAL] = {0}, made = 0;
  for (; made < a.nax && s == NDF_OK; made++) {
    int orders[NDF_MAX_SPATIAL] = {0};
    orders[made] = order;
    s = gauss_passes(ctx, name, g, orders, &a.modes[made], &a, seq, p[made], &np[made]);
  }
  if (s == NDF_OK && !a.empty) s = sum_terms(ctx, name, in, out, a.nax, p, np, opt->cval, order == 1);
  for (int i = 0; i < made; i++) ndf__fpass_free(p[i], np[i]);
  return s;
}

ndf_status ndf_gaussian_laplace(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, const ndf_gaussian_params *g,
                                const ndf_filter_options *opt) {
  return gauss_deriv(ctx, "ndf_gaussian_laplace", input, output, g, opt, 2);
}

ndf_status ndf_gaussian_gradient_magnitude(ndf_ctx *ctx, const ndf_array *input, ndf_array *output,
                                           const ndf_gaussian_params *g, const ndf_filter_options *opt) {
  return gauss_deriv(ctx, "ndf_gaussian_gradient_magnitude", input, output, g, opt, 1);
}
