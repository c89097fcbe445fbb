/*
 * metrics.c -- the image metrics (skimage.metrics): validation, the CPU
 * backend and the dispatch to CUDA.
 *
 * mse, nrmse, psnr, dice and jaccard reduce one pass of per-image statistics
 * (metrics.h): each image is cut into chunks of CHUNK voxels, a chunk sums
 * runs of RUN voxels and then the runs, and an image sums its chunks in
 * order, so the result does not depend on the thread count.  SSIM is
 * composed from the linear filters (ndf_uniform_filter / ndf_gaussian_filter
 * on scratch arrays of the float type) and one elementwise pass; on CUDA the
 * five filters run fused by default (metrics_cuda.c, tunable ssim.path), with
 * the same arithmetic.  The
 * Hausdorff distance reads the Euclidean distance transforms of the two
 * complements (ndf_distance_transform_edt) at the points of the other mask.
 * Results are stored only once everything succeeded.
 */
#include <float.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "metrics/metrics.h"

#define CHUNK 65536
#define RUN 256

/* ---- options and names --------------------------------------------------------------- */

void ndf_metrics_options_init(ndf_metrics_options *opt) {
  if (!opt) return;
  memset(opt, 0, sizeof *opt);
  opt->normalization = NDF_NRMSE_EUCLIDEAN;
  opt->percentile = 100.0;
}

void ndf_ssim_options_init(ndf_ssim_options *opt) {
  if (!opt) return;
  memset(opt, 0, sizeof *opt);
  opt->sigma = 1.5;
  opt->K1 = 0.01;
  opt->K2 = 0.03;
  opt->use_sample_covariance = 1;
}

static const char *norm_names[3] = {"euclidean", "min-max", "mean"};

const char *ndf_nrmse_norm_name(ndf_nrmse_norm n) { return (unsigned)n < 3 ? norm_names[n] : NULL; }

ndf_status ndf_nrmse_norm_from_name(const char *name, ndf_nrmse_norm *out) {
  if (!name || !out)
    return ndf__error(NULL, NDF_EINVAL, "ndf_nrmse_norm_from_name: bad argument '%s' (NULL)", name ? "out" : "name");
  for (int i = 0; i < 3; i++)
    if (strcasecmp(name, norm_names[i]) == 0) {
      *out = (ndf_nrmse_norm)i;
      return NDF_OK;
    }
  return ndf__error(NULL, NDF_EINVAL,
                    "ndf_nrmse_norm_from_name: bad argument 'name' ('%s' is not euclidean, min-max or mean)", name);
}

/* ---- validation ---------------------------------------------------------------------- */

static const char *dtname(ndf_dtype t) { return ndf_dtype_name(t) ? ndf_dtype_name(t) : "unknown"; }

static ndf_status check_one(ndf_ctx *ctx, const char *name, const char *arg, const ndf_array *a) {
  if (!a) return ndf__argerror(ctx, name, arg, "NULL");
  if (!ndf_dtype_size(a->dtype))
    return ndf__argerror(ctx, name, arg,
                         "dtype %s is not supported (bool, uint8, int8, uint16, int16, uint32, int32, int64, uint64, "
                         "float32, float64)",
                         dtname(a->dtype));
  if (a->ndim < 1 || a->ndim > NDF_MAX_NDIM)
    return ndf__argerror(ctx, name, arg, "rank %d is not in 1..%d", a->ndim, NDF_MAX_NDIM);
  for (int d = 0; d < a->ndim; d++)
    if (a->shape[d] < 0) return ndf__argerror(ctx, name, arg, "shape[%d]=%lld is negative", d, (long long)a->shape[d]);
  ndf_status s = ndf__check_array(ctx, name, arg, a, NULL);
  if (s != NDF_OK) return s;
  if (ndf_array_size(a) > 0 && !a->data) return ndf__argerror(ctx, name, arg, "NULL data");
  return NDF_OK;
}

/* The two inputs: supported dtypes, one shape, one device, batch_dims, non-empty images. */
static ndf_status check_inputs(ndf_ctx *ctx, const char *name, const char *an, const char *bn, const ndf_array *a,
                               const ndf_array *b, int batch_dims, ndf__metrics_geom *g) {
  ndf_status s = check_one(ctx, name, an, a);
  if (s == NDF_OK) s = check_one(ctx, name, bn, b);
  if (s != NDF_OK) return s;
  if (b->ndim != a->ndim)
    return ndf__argerror(ctx, name, bn, "rank %d differs from %s's rank %d (the images must have one shape)", b->ndim,
                         an, a->ndim);
  for (int d = 0; d < a->ndim; d++)
    if (b->shape[d] != a->shape[d])
      return ndf__argerror(ctx, name, bn, "shape[%d]=%lld differs from %s's %lld (the images must have one shape)", d,
                           (long long)b->shape[d], an, (long long)a->shape[d]);
  if (a->device != b->device || a->device_id != b->device_id)
    return ndf__argerror(ctx, name, bn, "lives on another device than %s", an);
  if ((s = ndf__check_device(ctx, name, a)) != NDF_OK) return s;
  if (batch_dims < 0 || batch_dims >= a->ndim)
    return ndf__argerror(ctx, name, "batch_dims", "%d must be in 0..%d for inputs of rank %d", batch_dims,
                         a->ndim - 1, a->ndim);
  if (a->ndim - batch_dims > NDF_MAX_SPATIAL)
    return ndf__argerror(ctx, name, "batch_dims", "%d spatial axes; at most %d are supported", a->ndim - batch_dims,
                         NDF_MAX_SPATIAL);
  memset(g, 0, sizeof *g);
  g->ndim = a->ndim;
  g->nb = batch_dims;
  g->nsp = a->ndim - batch_dims;
  g->nimg = 1;
  g->vox = 1;
  for (int d = 0; d < batch_dims; d++) g->nimg *= a->shape[d];
  for (int d = batch_dims; d < a->ndim; d++) {
    if (a->shape[d] == 0)
      return ndf__argerror(ctx, name, an, "shape[%d]=0: an image without elements has no metric", d);
    g->vox *= a->shape[d];
  }
  g->f32 = a->dtype == NDF_FLOAT32 && b->dtype == NDF_FLOAT32;
  return NDF_OK;
}

/* A float64 per-image result: rank batch_dims, the batch shape, the inputs' device. */
static ndf_status check_result(ndf_ctx *ctx, const char *name, const char *arg, const ndf_array *r,
                               const ndf_array *a, const ndf_array *b, int nb) {
  if (!r) return ndf__argerror(ctx, name, arg, "NULL");
  if (r->dtype != NDF_FLOAT64) return ndf__argerror(ctx, name, arg, "dtype %s is not float64", dtname(r->dtype));
  if (r->ndim != nb)
    return ndf__argerror(ctx, name, arg, "rank %d is not batch_dims=%d (one value per image)", r->ndim, nb);
  for (int d = 0; d < nb; d++)
    if (r->shape[d] != a->shape[d])
      return ndf__argerror(ctx, name, arg, "shape[%d]=%lld differs from the batch extent %lld", d,
                           (long long)r->shape[d], (long long)a->shape[d]);
  ndf_status s = ndf__check_array(ctx, name, arg, r, NULL);
  if (s != NDF_OK) return s;
  if (r->device != a->device || r->device_id != a->device_id)
    return ndf__argerror(ctx, name, arg, "lives on another device than the inputs");
  if (ndf_array_size(r) > 0 && !r->data) return ndf__argerror(ctx, name, arg, "NULL data");
  if (!ndf__layout_is_proper(r)) return ndf__argerror(ctx, name, arg, "its strides make elements overlap");
  if (ndf__arrays_overlap(r, a) || ndf__arrays_overlap(r, b))
    return ndf__argerror(ctx, name, arg, "overlaps an input");
  return NDF_OK;
}

/* ---- host element access ------------------------------------------------------------- */

/* Walks the elements of up to two arrays of one shape in C order (byte offsets). */
typedef struct walk {
  int nd;
  int64_t shape[NDF_MAX_NDIM], c[NDF_MAX_NDIM], sa[NDF_MAX_NDIM], sb[NDF_MAX_NDIM];
  int64_t oa, ob;
} walk;

static void walk_start(walk *w, const ndf_array *a, const ndf_array *b, int64_t i) {
  w->nd = a->ndim;
  w->oa = w->ob = 0;
  const int64_t ea = (int64_t)ndf_dtype_size(a->dtype), eb = b ? (int64_t)ndf_dtype_size(b->dtype) : 0;
  for (int d = a->ndim - 1; d >= 0; d--) {
    w->shape[d] = a->shape[d];
    w->c[d] = i % a->shape[d];
    i /= a->shape[d];
    w->sa[d] = a->strides[d] * ea;
    w->sb[d] = b ? b->strides[d] * eb : 0;
    w->oa += w->c[d] * w->sa[d];
    w->ob += w->c[d] * w->sb[d];
  }
}

static inline void walk_next(walk *w) {
  for (int d = w->nd - 1; d >= 0; d--) {
    w->oa += w->sa[d];
    w->ob += w->sb[d];
    if (++w->c[d] < w->shape[d]) return;
    w->oa -= w->c[d] * w->sa[d];
    w->ob -= w->c[d] * w->sb[d];
    w->c[d] = 0;
  }
}

static void store_result(const ndf_array *r, int64_t img, double v) {
  ((double *)r->data)[ndf__offset_of(r, img)] = v;
}

/* ---- statistics ---------------------------------------------------------------------- */

static void stats_zero(ndf__mstats *s) {
  memset(s, 0, sizeof *s);
  s->amin = INFINITY;
  s->amax = -INFINITY;
}

/* NaN-propagating extremes, as NumPy's min / max. */
static inline double nmin(double m, double v) { return (v < m || v != v) && m == m ? v : m; }
static inline double nmax(double m, double v) { return (v > m || v != v) && m == m ? v : m; }

static void stats_add(ndf__mstats *s, const ndf__mstats *t) {
  s->sdd += t->sdd;
  s->saa += t->saa;
  s->sa += t->sa;
  s->amin = nmin(s->amin, t->amin);
  s->amax = nmax(s->amax, t->amax);
  s->na += t->na;
  s->nbz += t->nbz;
  s->nab += t->nab;
}

/* Statistics of elements [lo, hi) of image img: runs of RUN summed, then the runs. */
static void stats_chunk(const ndf_array *a, const ndf_array *b, const ndf__metrics_geom *g, int64_t img, int64_t lo,
                        int64_t hi, ndf__mstats *out) {
  walk w = {0};
  walk_start(&w, a, b, img * g->vox + lo);
  const char *pa = a->data, *pb = b->data;
  ndf__mstats acc;
  stats_zero(&acc);
  for (int64_t i = lo; i < hi;) {
    const int64_t e = i + RUN < hi ? i + RUN : hi;
    double sdd = 0, saa = 0, sa = 0;
    for (; i < e; i++, walk_next(&w)) {
      const double x = ndf__load_f64(pa + w.oa, a->dtype, 0), y = ndf__load_f64(pb + w.ob, b->dtype, 0);
      if (g->f32) {
        const float d = (float)x - (float)y;
        sdd += (double)(d * d);
        saa += (double)((float)x * (float)x);
      } else {
        const double d = x - y;
        sdd += d * d;
        saa += x * x;
      }
      sa += x;
      acc.amin = nmin(acc.amin, x);
      acc.amax = nmax(acc.amax, x);
      const int nza = x != 0, nzb = y != 0;
      acc.na += nza;
      acc.nbz += nzb;
      acc.nab += nza & nzb;
    }
    acc.sdd += sdd;
    acc.saa += saa;
    acc.sa += sa;
  }
  *out = acc;
}

/* Per-image statistics of the whole pair into st[nimg]. */
static ndf_status stats_cpu(ndf_ctx *ctx, const char *name, const ndf_array *a, const ndf_array *b,
                            const ndf__metrics_geom *g, ndf__mstats *st) {
  const int64_t per = (g->vox + CHUNK - 1) / CHUNK, nch = per * g->nimg;
  ndf__mstats *ch = malloc((size_t)(nch > 0 ? nch : 1) * sizeof *ch);
  if (!ch) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory for the statistics", name);
  const int nth = ndf__cpu_threads(ctx);
  _Pragma("omp parallel for schedule(dynamic, 1) num_threads(nth)")
  for (int64_t k = 0; k < nch; k++) {
    const int64_t img = k / per, lo = (k % per) * CHUNK, hi = lo + CHUNK < g->vox ? lo + CHUNK : g->vox;
    stats_chunk(a, b, g, img, lo, hi, &ch[k]);
  }
  for (int64_t img = 0; img < g->nimg; img++) {
    stats_zero(&st[img]);
    for (int64_t k = 0; k < per; k++) stats_add(&st[img], &ch[img * per + k]);
  }
  free(ch);
  return NDF_OK;
}

void ndf__metrics_int_range(ndf_dtype t, double *lo, double *hi) {
  ndf__dtype_range(t, lo, hi);
  if (t == NDF_INT64) *hi = 9223372036854775808.0;
  if (t == NDF_UINT64) *hi = 18446744073709551616.0;
}

double ndf__metrics_psnr_range(ndf_dtype t, double amin, double amax) {
  double lo, hi;
  if (t == NDF_FLOAT32 || t == NDF_FLOAT64) {
    lo = -1;
    hi = 1;
  } else {
    ndf__metrics_int_range(t, &lo, &hi);
  }
  if (amax > hi || amin < lo) return -1;
  return amin >= 0 ? hi : hi - lo;
}

double ndf__metrics_finish(ndf__metric_op op, const ndf__mstats *s, int64_t vox, int f32, double data_range) {
  const double n = (double)vox, mse = s->sdd / n;
  switch (op) {
    case NDF__M_MSE: return mse;
    case NDF__M_NRMSE_EUCLIDEAN: return sqrt(mse) / sqrt(s->saa / n);
    case NDF__M_NRMSE_MIN_MAX: {
      const double den = f32 ? (double)((float)s->amax - (float)s->amin) : s->amax - s->amin;
      return sqrt(mse) / den;
    }
    case NDF__M_NRMSE_MEAN: return sqrt(mse) / (s->sa / n);
    case NDF__M_PSNR: return 10.0 * log10((data_range * data_range) / mse);
    case NDF__M_DICE:
      return s->na + s->nbz == 0 ? 1.0 : (2.0 * (double)s->nab) / (double)(s->na + s->nbz);
    case NDF__M_JACCARD:
      return s->na + s->nbz == 0 ? 1.0 : (double)s->nab / (double)(s->na + s->nbz - s->nab);
  }
  return NAN;
}

/* The five statistics metrics: validation, then the CPU or CUDA pass. */
static ndf_status stats_metric(ndf_ctx *ctx, const char *name, const char *an, const char *bn, ndf__metric_op op,
                               const ndf_array *a, const ndf_array *b, ndf_array *result,
                               const ndf_metrics_options *opt) {
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  ndf__clear_error(ctx);
  if (!opt) return ndf__argerror(ctx, name, "options", "NULL");
  ndf__metrics_geom g;
  ndf_status s = check_inputs(ctx, name, an, bn, a, b, opt->batch_dims, &g);
  if (s == NDF_OK) s = check_result(ctx, name, "result", result, a, b, g.nb);
  if (s != NDF_OK) return s;
  if (op == NDF__M_NRMSE_EUCLIDEAN && (unsigned)opt->normalization > NDF_NRMSE_MEAN)
    return ndf__argerror(ctx, name, "normalization", "unknown normalization %d (euclidean, min-max or mean)",
                         (int)opt->normalization);
  if (op == NDF__M_NRMSE_EUCLIDEAN) op = (ndf__metric_op)(NDF__M_NRMSE_EUCLIDEAN + (int)opt->normalization);
  double dr = 0;
  if (op == NDF__M_PSNR) {
    dr = opt->data_range;
    if (!(dr >= 0) || isinf(dr))
      return ndf__argerror(ctx, name, "data_range", "%g (must be finite and > 0, or 0 for the dtype's)", dr);
  }
  if (g.nimg == 0) return NDF_OK;
  if (a->device == NDF_DEVICE_CUDA) return ndf__metrics_stats_cuda(ctx, name, op, a, b, result, &g, dr);
  ndf__mstats *st = malloc((size_t)g.nimg * sizeof *st);
  if (!st) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory for the statistics", name);
  if ((s = stats_cpu(ctx, name, a, b, &g, st)) != NDF_OK) {
    free(st);
    return s;
  }
  double *v = malloc((size_t)g.nimg * sizeof *v);
  if (!v) {
    free(st);
    return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory for the results", name);
  }
  for (int64_t img = 0; img < g.nimg && s == NDF_OK; img++) {
    double r = dr;
    if (op == NDF__M_PSNR && dr == 0) {
      r = ndf__metrics_psnr_range(a->dtype, st[img].amin, st[img].amax);
      if (r < 0)
        s = ndf__argerror(ctx, name, "data_range",
                          "image %lld of %s has values in [%g, %g], outside the range of its dtype %s: specify the "
                          "data_range (scikit-image's rule)", (long long)img, an, st[img].amin, st[img].amax,
                          dtname(a->dtype));
    }
    v[img] = ndf__metrics_finish(op, &st[img], g.vox, g.f32, r);
  }
  if (s == NDF_OK)
    for (int64_t img = 0; img < g.nimg; img++) store_result(result, img, v[img]);
  free(st);
  free(v);
  return s;
}

ndf_status ndf_mean_squared_error(ndf_ctx *ctx, const ndf_array *image0, const ndf_array *image1, ndf_array *result,
                                  const ndf_metrics_options *opt) {
  return stats_metric(ctx, "ndf_mean_squared_error", "image0", "image1", NDF__M_MSE, image0, image1, result, opt);
}

ndf_status ndf_normalized_root_mse(ndf_ctx *ctx, const ndf_array *image_true, const ndf_array *image_test,
                                   ndf_array *result, const ndf_metrics_options *opt) {
  return stats_metric(ctx, "ndf_normalized_root_mse", "image_true", "image_test", NDF__M_NRMSE_EUCLIDEAN, image_true,
                      image_test, result, opt);
}

ndf_status ndf_peak_signal_noise_ratio(ndf_ctx *ctx, const ndf_array *image_true, const ndf_array *image_test,
                                       ndf_array *result, const ndf_metrics_options *opt) {
  return stats_metric(ctx, "ndf_peak_signal_noise_ratio", "image_true", "image_test", NDF__M_PSNR, image_true,
                      image_test, result, opt);
}

ndf_status ndf_dice_coefficient(ndf_ctx *ctx, const ndf_array *mask0, const ndf_array *mask1, ndf_array *result,
                                const ndf_metrics_options *opt) {
  return stats_metric(ctx, "ndf_dice_coefficient", "mask0", "mask1", NDF__M_DICE, mask0, mask1, result, opt);
}

ndf_status ndf_jaccard_index(ndf_ctx *ctx, const ndf_array *mask0, const ndf_array *mask1, ndf_array *result,
                             const ndf_metrics_options *opt) {
  return stats_metric(ctx, "ndf_jaccard_index", "mask0", "mask1", NDF__M_JACCARD, mask0, mask1, result, opt);
}

/* ---- structural similarity --------------------------------------------------------------- */

/* A contiguous array over data, shaped like a, of dtype t, on a's device. */
static ndf_array like(const ndf_array *a, void *data, ndf_dtype t) {
  ndf_array r;
  memset(&r, 0, sizeof r);
  ndf_array_init(&r, data, a->device, t, a->ndim, a->shape);
  r.device_id = a->device_id;
  return r;
}

/* S at one voxel from the five filtered values, every operation rounded in the float type T. */
#define SSIM_VALUE(T, ux, uy, uxx, uyy, uxy, cn, c1, c2, out)               \
  do {                                                                      \
    const T vx_ = (cn) * ((uxx) - (ux) * (ux));                             \
    const T vy_ = (cn) * ((uyy) - (uy) * (uy));                             \
    const T vxy_ = (cn) * ((uxy) - (ux) * (uy));                            \
    const T a1_ = ((T)2 * (ux)) * (uy) + (c1);                              \
    const T a2_ = (T)2 * vxy_ + (c2);                                       \
    const T b1_ = ((ux) * (ux) + (uy) * (uy)) + (c1);                       \
    const T b2_ = (vx_ + vy_) + (c2);                                       \
    const T d_ = b1_ * b2_;                                                 \
    (out) = (a1_ * a2_) / d_;                                               \
  } while (0)

/* The map and the per-image cropped sums on the CPU; u: the five filtered arrays (contiguous). */
static ndf_status ssim_cpu(ndf_ctx *ctx, const char *name, const ndf_array *const u[5], ndf_array *full,
                           double *sums, const ndf__metrics_geom *g, const ndf__ssim_plan *p, int f32) {
  const int64_t per = (g->vox + CHUNK - 1) / CHUNK, nch = per * g->nimg;
  double *ch = malloc((size_t)(nch > 0 ? nch : 1) * sizeof *ch);
  if (!ch) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory for the sums", name);
  const int nth = ndf__cpu_threads(ctx);
  const int nb = g->nb, nsp = g->nsp;
  const int64_t *shape = u[0]->shape;
  _Pragma("omp parallel for schedule(dynamic, 1) num_threads(nth)")
  for (int64_t k = 0; k < nch; k++) {
    const int64_t img = k / per, lo = (k % per) * CHUNK, hi = lo + CHUNK < g->vox ? lo + CHUNK : g->vox;
    walk w = {0};
    if (full) walk_start(&w, full, NULL, img * g->vox + lo);
    int64_t c[NDF_MAX_SPATIAL], q = lo;
    for (int d = nsp - 1; d >= 0; d--) {
      c[d] = q % shape[nb + d];
      q /= shape[nb + d];
    }
    double acc = 0, run = 0;
    int64_t inrun = 0;
    for (int64_t i = lo; i < hi; i++) {
      const int64_t e = img * g->vox + i;
      double sv;
      if (f32) {
        const float ux = ((const float *)u[0]->data)[e], uy = ((const float *)u[1]->data)[e];
        const float uxx = ((const float *)u[2]->data)[e], uyy = ((const float *)u[3]->data)[e];
        const float uxy = ((const float *)u[4]->data)[e];
        float s;
        SSIM_VALUE(float, ux, uy, uxx, uyy, uxy, (float)p->cov_norm, (float)p->C1, (float)p->C2, s);
        sv = s;
      } else {
        const double ux = ((const double *)u[0]->data)[e], uy = ((const double *)u[1]->data)[e];
        const double uxx = ((const double *)u[2]->data)[e], uyy = ((const double *)u[3]->data)[e];
        const double uxy = ((const double *)u[4]->data)[e];
        double s;
        SSIM_VALUE(double, ux, uy, uxx, uyy, uxy, p->cov_norm, p->C1, p->C2, s);
        sv = s;
      }
      if (full) {
        char *o = (char *)full->data + w.oa;
        if (full->dtype == NDF_FLOAT32) *(float *)o = (float)sv;
        else *(double *)o = sv;
        walk_next(&w);
      }
      int in = 1;
      for (int d = 0; d < nsp; d++) in &= c[d] >= p->pad && c[d] < shape[nb + d] - p->pad;
      if (in) {
        run += sv;
        if (++inrun == RUN) {
          acc += run;
          run = 0;
          inrun = 0;
        }
      }
      for (int d = nsp - 1; d >= 0; d--) {
        if (++c[d] < shape[nb + d]) break;
        c[d] = 0;
      }
    }
    ch[k] = acc + run;
  }
  for (int64_t img = 0; img < g->nimg && sums; img++) {
    double s = 0;
    for (int64_t k = 0; k < per; k++) s += ch[img * per + k];
    sums[img] = s;
  }
  free(ch);
  return NDF_OK;
}

/* x * x, y * y, x * y (and y converted when it must be) in the float type, on the CPU. */
static void ssim_prep_cpu(ndf_ctx *ctx, const ndf_array *im1, const ndf_array *im2, int f32, ndf_array *yc,
                          ndf_array *xx, ndf_array *yy, ndf_array *xy) {
  const int64_t n = ndf_array_size(im1), per = (n + CHUNK - 1) / CHUNK;
  const int nth = ndf__cpu_threads(ctx);
  _Pragma("omp parallel for schedule(dynamic, 1) num_threads(nth)")
  for (int64_t k = 0; k < per; k++) {
    const int64_t lo = k * CHUNK, hi = lo + CHUNK < n ? lo + CHUNK : n;
    walk w = {0};
    walk_start(&w, im1, im2, lo);
    for (int64_t i = lo; i < hi; i++, walk_next(&w)) {
      const double x = ndf__load_f64((const char *)im1->data + w.oa, im1->dtype, 0);
      const double y = ndf__load_f64((const char *)im2->data + w.ob, im2->dtype, 0);
      if (f32) {
        const float fx = (float)x, fy = (float)y;
        if (yc) ((float *)yc->data)[i] = fy;
        ((float *)xx->data)[i] = fx * fx;
        ((float *)yy->data)[i] = fy * fy;
        ((float *)xy->data)[i] = fx * fy;
      } else {
        ((double *)xx->data)[i] = x * x;
        ((double *)yy->data)[i] = y * y;
        ((double *)xy->data)[i] = x * y;
      }
    }
  }
}

/* 1 when every value of dtype t converts to float32 exactly (so a filter can read it as it is). */
static int exact_in_f32(ndf_dtype t) {
  return t == NDF_BOOL || t == NDF_UINT8 || t == NDF_INT8 || t == NDF_UINT16 || t == NDF_INT16 || t == NDF_FLOAT32;
}

static ndf_status ssim_filter(ndf_ctx *ctx, const ndf_array *in, ndf_array *out, const ndf_ssim_options *o,
                              int64_t ws, int nb) {
  ndf_filter_options fo;
  ndf_filter_options_init(&fo);
  fo.mode = NDF_MODE_REFLECT;
  fo.batch_dims = nb;
  if (o->gaussian_weights) {
    ndf_gaussian_params gp;
    ndf_gaussian_params_init(&gp);
    gp.nsigma = 1;
    gp.sigma[0] = o->sigma;
    gp.truncate = 3.5;
    return ndf_gaussian_filter(ctx, in, out, &gp, &fo);
  }
  return ndf_uniform_filter(ctx, in, out, 1, &ws, &fo);
}

/* Frees scratch of either backend. */
static void scratch_release(ndf_ctx *ctx, ndf_device_type dev, void *p) {
  if (!p) return;
  if (dev == NDF_DEVICE_CUDA) ndf__scratch_free(ctx, (CUdeviceptr)(uintptr_t)p);
  else free(p);
}

ndf_status ndf_structural_similarity(ndf_ctx *ctx, const ndf_array *im1, const ndf_array *im2, ndf_array *mssim,
                                     ndf_array *full, const ndf_ssim_options *opt) {
  static const char *name = "ndf_structural_similarity";
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  ndf__clear_error(ctx);
  if (!opt) return ndf__argerror(ctx, name, "options", "NULL");
  ndf__metrics_geom g;
  ndf_status s = check_inputs(ctx, name, "im1", "im2", im1, im2, opt->batch_dims, &g);
  if (s != NDF_OK) return s;
  if (!mssim && !full) return ndf__argerror(ctx, name, "mssim", "NULL, and so is full: nothing to compute");
  if (mssim && (s = check_result(ctx, name, "mssim", mssim, im1, im2, g.nb)) != NDF_OK) return s;
  if (full) {
    if ((s = check_one(ctx, name, "full", full)) != NDF_OK) return s;
    if (full->dtype != NDF_FLOAT32 && full->dtype != NDF_FLOAT64)
      return ndf__argerror(ctx, name, "full", "dtype %s is not float32 or float64", dtname(full->dtype));
    if (full->ndim != im1->ndim) return ndf__argerror(ctx, name, "full", "rank %d differs from im1's %d", full->ndim, im1->ndim);
    for (int d = 0; d < im1->ndim; d++)
      if (full->shape[d] != im1->shape[d])
        return ndf__argerror(ctx, name, "full", "shape[%d]=%lld differs from im1's %lld", d, (long long)full->shape[d],
                             (long long)im1->shape[d]);
    if (full->device != im1->device || full->device_id != im1->device_id)
      return ndf__argerror(ctx, name, "full", "lives on another device than the inputs");
    if (!ndf__layout_is_proper(full)) return ndf__argerror(ctx, name, "full", "its strides make elements overlap");
    if (ndf__arrays_overlap(full, im1) || ndf__arrays_overlap(full, im2))
      return ndf__argerror(ctx, name, "full", "overlaps an input");
    if (mssim && ndf__arrays_overlap(full, mssim)) return ndf__argerror(ctx, name, "full", "overlaps mssim");
  }
  const ndf_ssim_options *o = opt;
  if (!(o->sigma >= 0) || isinf(o->sigma)) return ndf__argerror(ctx, name, "sigma", "%g (must be finite and >= 0)", o->sigma);
  if (!(o->K1 >= 0) || isinf(o->K1)) return ndf__argerror(ctx, name, "K1", "%g (must be finite and >= 0)", o->K1);
  if (!(o->K2 >= 0) || isinf(o->K2)) return ndf__argerror(ctx, name, "K2", "%g (must be finite and >= 0)", o->K2);
  if (!(o->data_range >= 0) || isinf(o->data_range))
    return ndf__argerror(ctx, name, "data_range", "%g (must be finite and > 0, or 0 for the dtype's)", o->data_range);
  int64_t ws = o->win_size;
  if (ws == 0) {
    if (o->gaussian_weights) {
      const double r = 3.5 * o->sigma + 0.5;
      if (r >= (double)((int64_t)1 << 30)) return ndf__argerror(ctx, name, "sigma", "%g gives too wide a window", o->sigma);
      ws = 2 * (int64_t)r + 1;
    } else {
      ws = 7;
    }
  }
  if (ws < 1) return ndf__argerror(ctx, name, "win_size", "%lld (must be odd and >= 1, or 0 for the default)", (long long)ws);
  for (int d = g.nb; d < g.ndim; d++)
    if (ws > im1->shape[d])
      return ndf__argerror(ctx, name, "win_size", "%lld exceeds the image extent %lld of axis %d (scikit-image: "
                           "win_size exceeds image extent)", (long long)ws, (long long)im1->shape[d], d);
  if (ws % 2 == 0) return ndf__argerror(ctx, name, "win_size", "%lld is even (it must be odd)", (long long)ws);
  double np_ = 1;
  for (int d = 0; d < g.nsp; d++) np_ *= (double)ws;
  if (o->use_sample_covariance && np_ == 1)
    return ndf__argerror(ctx, name, "win_size", "1 with use_sample_covariance: NP / (NP - 1) divides by zero");
  double R = o->data_range;
  if (R == 0) {
    double lo, hi;
    if (ndf__dtype_is_float(im1->dtype)) {
      lo = -1;
      hi = 1;
    } else {
      ndf__metrics_int_range(im1->dtype, &lo, &hi);
    }
    R = hi - lo;
  }
  ndf__ssim_plan p = {.win_size = (int)ws, .pad = (int)((ws - 1) / 2)};
  p.cov_norm = o->use_sample_covariance ? np_ / (np_ - 1) : 1.0;
  p.C1 = (o->K1 * R) * (o->K1 * R);
  p.C2 = (o->K2 * R) * (o->K2 * R);
  if (g.nimg == 0) return NDF_OK;
  if (im1->device == NDF_DEVICE_CUDA && ndf__metrics_ssim_fused_wanted(ctx, im1)) {
    s = ndf__metrics_ssim_fused_cuda(ctx, name, im1, im2, full, mssim, &g, &p, o->gaussian_weights, o->sigma);
    if (s != NDF_ENOTSUP) return s;
    s = NDF_OK; /* a window the fused kernels do not take: composed */
  }

  /* Scratch: six arrays of the float type, and y converted when a filter cannot read it as it is.
   * The prep writes x*x, y*y, x*y into b2, b3, b4; then ux = f(x) -> b0, uy = f(y) -> b1,
   * uxx = f(b2) -> b5, uyy = f(b3) -> b2, uxy = f(b4) -> b3. */
  const int f32 = im1->dtype == NDF_FLOAT32;
  const ndf_dtype ft = f32 ? NDF_FLOAT32 : NDF_FLOAT64;
  const int need_yc = f32 && !exact_in_f32(im2->dtype);
  const int64_t n = ndf_array_size(im1);
  const size_t bytes = (size_t)n * ndf_dtype_size(ft);
  const int cuda = im1->device == NDF_DEVICE_CUDA;
  void *buf[7] = {0};
  const int nbuf = 6 + need_yc;
  if (!cuda && (s = ndf__check_host_memory(ctx, name, "the SSIM scratch", (int64_t)bytes * nbuf)) != NDF_OK) return s;
  for (int i = 0; i < nbuf && s == NDF_OK; i++) {
    if (cuda) {
      CUdeviceptr dp = 0;
      s = ndf__scratch_alloc(ctx, bytes, &dp);
      buf[i] = (void *)(uintptr_t)dp;
    } else if (!(buf[i] = malloc(bytes))) {
      s = ndf__error(ctx, NDF_ENOMEM, "%s: out of memory for the SSIM scratch (%zu bytes)", name, bytes);
    }
  }
  double *sums = NULL;
  if (s == NDF_OK && !cuda && mssim && !(sums = malloc((size_t)g.nimg * sizeof *sums)))
    s = ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
  ndf_array b[6], yc = like(im1, buf[6], ft);
  for (int i = 0; i < 6; i++) b[i] = like(im1, buf[i], ft);
  const ndf_array *y = need_yc ? &yc : im2;
  if (s == NDF_OK) {
    if (cuda) s = ndf__metrics_ssim_prep_cuda(ctx, name, im1, im2, f32, need_yc ? &yc : NULL, &b[2], &b[3], &b[4]);
    else ssim_prep_cpu(ctx, im1, im2, f32, need_yc ? &yc : NULL, &b[2], &b[3], &b[4]);
  }
  if (s == NDF_OK) s = ssim_filter(ctx, im1, &b[0], o, ws, g.nb);
  if (s == NDF_OK) s = ssim_filter(ctx, y, &b[1], o, ws, g.nb);
  if (s == NDF_OK) s = ssim_filter(ctx, &b[2], &b[5], o, ws, g.nb);
  if (s == NDF_OK) s = ssim_filter(ctx, &b[3], &b[2], o, ws, g.nb);
  if (s == NDF_OK) s = ssim_filter(ctx, &b[4], &b[3], o, ws, g.nb);
  if (s != NDF_OK && strstr(ndf_errmsg(ctx), name) == NULL) {
    char why[600];
    snprintf(why, sizeof why, "%s", ndf_errmsg(ctx));
    s = ndf__error(ctx, s, "%s: the filter step failed: %s", name, why);
  }
  const ndf_array *uf[5] = {&b[0], &b[1], &b[5], &b[2], &b[3]};
  if (s == NDF_OK) {
    if (cuda) {
      s = ndf__metrics_ssim_cuda(ctx, name, uf, full, mssim, &g, &p);
    } else if ((s = ssim_cpu(ctx, name, uf, full, sums, &g, &p, f32)) == NDF_OK && mssim) {
      double cnt = 1;
      for (int d = g.nb; d < g.ndim; d++) cnt *= (double)(im1->shape[d] - 2 * p.pad);
      for (int64_t img = 0; img < g.nimg; img++) store_result(mssim, img, sums[img] / cnt);
    }
  }
  free(sums);
  for (int i = 0; i < nbuf; i++) scratch_release(ctx, im1->device, buf[i]);
  return s;
}

/* ---- Hausdorff distance ------------------------------------------------------------------ */

/* NumPy's percentile (method 'linear') of v[0..n) (reordered), q in (0, 100]. */
static int cmp_double(const void *x, const void *y) {
  const double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

static double percentile_linear(double *v, int64_t n, double q) {
  const double qq = q / 100.0;
  const double virt = ((double)n * qq + (1.0 - qq)) - 1.0;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  if (virt >= (double)(n - 1)) return v[n - 1];
  if (virt < 0) return v[0];
  const double fl = floor(virt);
  const int64_t i = (int64_t)fl;
  const double t = virt - fl, a = v[i], b = v[i + 1], diff = b - a;
  return t >= 0.5 ? b - diff * (1.0 - t) : a + diff * t;
}

/* Per image of a: the directed term over a != 0 of d (contiguous float64), and the counts. */
static ndf_status directed_cpu(ndf_ctx *ctx, const char *name, const ndf_array *a, const double *d,
                               const ndf__metrics_geom *g, double q, double *term, int64_t *cnt) {
  double *vals = NULL;
  if (q < 100 && !(vals = malloc((size_t)g->vox * sizeof *vals)))
    return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory for the distances", name);
  for (int64_t img = 0; img < g->nimg; img++) {
    walk w = {0};
    walk_start(&w, a, NULL, img * g->vox);
    double m = -INFINITY;
    int64_t k = 0;
    for (int64_t i = 0; i < g->vox; i++, walk_next(&w)) {
      if (ndf__load_f64((const char *)a->data + w.oa, a->dtype, 0) == 0) continue;
      const double v = d[img * g->vox + i];
      if (vals) vals[k] = v;
      k++;
      if (v > m) m = v;
    }
    cnt[img] = k;
    term[img] = vals && k > 0 ? percentile_linear(vals, k, q) : m;
  }
  free(vals);
  return NDF_OK;
}

ndf_status ndf_hausdorff_distance(ndf_ctx *ctx, const ndf_array *image0, const ndf_array *image1, ndf_array *result,
                                  const ndf_metrics_options *opt) {
  static const char *name = "ndf_hausdorff_distance";
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  ndf__clear_error(ctx);
  if (!opt) return ndf__argerror(ctx, name, "options", "NULL");
  ndf__metrics_geom g;
  ndf_status s = check_inputs(ctx, name, "image0", "image1", image0, image1, opt->batch_dims, &g);
  if (s == NDF_OK) s = check_result(ctx, name, "result", result, image0, image1, g.nb);
  if (s != NDF_OK) return s;
  const double q = opt->percentile;
  if (!(q > 0 && q <= 100)) return ndf__argerror(ctx, name, "percentile", "%g is not in (0, 100]", q);
  ndf_distance_options dopt;
  ndf_distance_options_init(&dopt);
  if (opt->nsampling != 0 && opt->nsampling != 1 && opt->nsampling != g.nsp)
    return ndf__argerror(ctx, name, "sampling", "%d values for %d spatial axes (give 0, 1 or %d)", opt->nsampling,
                         g.nsp, g.nsp);
  for (int i = 0; i < opt->nsampling; i++)
    if (!(opt->sampling[i] > 0) || isinf(opt->sampling[i]))
      return ndf__argerror(ctx, name, "sampling", "sampling[%d]=%g (must be finite and > 0)", i, opt->sampling[i]);
  dopt.nsampling = opt->nsampling;
  memcpy(dopt.sampling, opt->sampling, sizeof dopt.sampling);
  dopt.batch_dims = g.nb;
  const int cuda = image0->device == NDF_DEVICE_CUDA;
  if (g.nimg == 0) return NDF_OK;

  /* Scratch: the complement of one mask (uint8), its distance transform (float64). */
  const int64_t n = ndf_array_size(image0);
  void *notm = NULL, *dist = NULL;
  if (cuda) {
    CUdeviceptr p1 = 0, p2 = 0;
    s = ndf__scratch_alloc(ctx, (size_t)n, &p1);
    if (s == NDF_OK) s = ndf__scratch_alloc(ctx, (size_t)n * 8, &p2);
    notm = (void *)(uintptr_t)p1;
    dist = (void *)(uintptr_t)p2;
  } else if ((s = ndf__check_host_memory(ctx, name, "the distance transforms", n * 9)) == NDF_OK) {
    notm = malloc((size_t)n);
    dist = malloc((size_t)n * 8);
    if (!notm || !dist) s = ndf__error(ctx, NDF_ENOMEM, "%s: out of memory for the distance transforms", name);
  }
  double *term = NULL, *v = NULL;
  int64_t *cnt = NULL;
  CUdeviceptr dterm = 0;
  if (s == NDF_OK && !cuda) {
    term = malloc((size_t)g.nimg * 2 * sizeof *term);
    cnt = malloc((size_t)g.nimg * 2 * sizeof *cnt);
    v = malloc((size_t)g.nimg * sizeof *v);
    if (!term || !cnt || !v) s = ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
  }
  if (s == NDF_OK && cuda) s = ndf__scratch_alloc(ctx, (size_t)g.nimg * 32, &dterm);
  ndf_array na = like(image0, notm, NDF_UINT8), da = like(image0, dist, NDF_FLOAT64);
  for (int dir = 0; dir < 2 && s == NDF_OK; dir++) {
    /* dir 0: d(p, B) for p in A, from the transform of B's complement; dir 1 the other way. */
    const ndf_array *from = dir == 0 ? image0 : image1, *to = dir == 0 ? image1 : image0;
    if (cuda) {
      s = ndf__metrics_not_cuda(ctx, name, to, &na);
    } else {
      walk w = {0};
      walk_start(&w, to, NULL, 0);
      for (int64_t i = 0; i < n; i++, walk_next(&w))
        ((uint8_t *)notm)[i] = ndf__load_f64((const char *)to->data + w.oa, to->dtype, 0) == 0;
    }
    if (s == NDF_OK) s = ndf_distance_transform_edt(ctx, &na, &da, NULL, &dopt);
    if (s == NDF_OK) {
      if (cuda) {
        const CUdeviceptr dm = dterm + (CUdeviceptr)dir * g.nimg * 8, dc = dterm + (CUdeviceptr)(2 + dir) * g.nimg * 8;
        s = ndf__metrics_hd_reduce_cuda(ctx, name, from, &da, &g, dm, dc);
        if (s == NDF_OK && q < 100) s = ndf__metrics_hd_percentile_cuda(ctx, name, from, &da, &g, q, dm, dc);
      } else
        s = directed_cpu(ctx, name, from, dist, &g, q, term + dir * g.nimg, cnt + dir * g.nimg);
    }
  }
  if (s == NDF_OK) {
    if (cuda) {
      s = ndf__metrics_hd_finish_cuda(ctx, name, result, &g, dterm, dterm + (CUdeviceptr)2 * g.nimg * 8);
    } else {
      for (int64_t img = 0; img < g.nimg; img++) {
        const int64_t ca = cnt[img], cb = cnt[g.nimg + img];
        const double t0 = term[img], t1 = term[g.nimg + img];
        v[img] = ca == 0 ? (cb == 0 ? 0.0 : INFINITY) : cb == 0 ? INFINITY : (t0 > t1 ? t0 : t1);
      }
      for (int64_t img = 0; img < g.nimg; img++) store_result(result, img, v[img]);
    }
  }
  free(term);
  free(cnt);
  free(v);
  if (dterm) ndf__scratch_free(ctx, dterm);
  scratch_release(ctx, image0->device, notm);
  scratch_release(ctx, image0->device, dist);
  return s;
}
