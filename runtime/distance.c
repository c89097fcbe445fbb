/*
 * distance.c -- scipy.ndimage's distance transforms (distance_transform_edt,
 * distance_transform_cdt, distance_transform_bf): validation, scipy's
 * argument conventions and the CPU backend.
 *
 * Every transform reproduces scipy's own computation (ni_morphology.c), so
 * distances and indices are bit-identical to scipy's, ties included:
 *
 *   edt  _ComputeFT/_VoronoiFT: one pass per axis, 0 .. n-1.  A voxel is a
 *        site of a pass when it already has a feature; the sites of a line
 *        form Maurer's lower envelope with the test
 *            c*vR - b*uR - a*wR - a*b*c <= 0   (keep the top site)
 *        and the query keeps the earlier site while delta1 <= delta2.  uR,
 *        vR, wR and the query's other-axis terms are sums of squares that
 *        scipy recomputes from the features in axis order; they equal the
 *        previous pass's delta of that site bit for bit, so each voxel
 *        carries that delta (pre) with its feature.  Everything is evaluated
 *        in scipy's order in double (this file is built -ffp-contract=off).
 *   cdt  NI_DistanceTransformOnePass twice: raster order, then the reversed
 *        array, with the structure's first half (raster order before the
 *        centre), strict improvement, features following the minimum.
 *   bf   NI_DistanceTransformBruteForce over the boundary background
 *        (binary_dilation(fg, full) ^ fg), the list walked from the highest
 *        raster index down with strict improvement.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

void ndf_distance_options_init(ndf_distance_options *opt) {
  if (!opt) return;
  memset(opt, 0, sizeof *opt);
  opt->metric = NDF_METRIC_DEFAULT;
  for (int d = 0; d < NDF_MAX_SPATIAL; d++) opt->sampling[d] = 1.0;
}

ndf_status ndf_metric_from_name(const char *name, ndf_metric *out) {
  static const struct { const char *n; ndf_metric m; } names[] = {
      {"euclidean", NDF_METRIC_EUCLIDEAN}, {"taxicab", NDF_METRIC_TAXICAB},       {"cityblock", NDF_METRIC_TAXICAB},
      {"manhattan", NDF_METRIC_TAXICAB},   {"chessboard", NDF_METRIC_CHESSBOARD},
  };
  if (!name || !out) return ndf__error(NULL, NDF_EINVAL, "ndf_metric_from_name: bad argument '%s' (NULL)", name ? "out" : "name");
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (!strcasecmp(name, names[i].n)) {
      *out = names[i].m;
      return NDF_OK;
    }
  return ndf__error(NULL, NDF_EINVAL,
                    "ndf_metric_from_name: bad argument 'name' ('%s' is not euclidean, taxicab, cityblock, manhattan "
                    "or chessboard)", name);
}

const char *ndf_metric_name(ndf_metric m) {
  switch (m) {
    case NDF_METRIC_DEFAULT: return "default";
    case NDF_METRIC_EUCLIDEAN: return "euclidean";
    case NDF_METRIC_TAXICAB: return "taxicab";
    case NDF_METRIC_CHESSBOARD: return "chessboard";
  }
  return NULL;
}

/* ---- validation ----------------------------------------------------------------------------- */

typedef enum { OP_EDT, OP_CDT, OP_BF } dist_op;

/* A validated call: spatial geometry and what to produce. */
typedef struct dist_call {
  dist_op op;
  const char *name;
  int nb, nsp;
  int64_t nimg;                      /* product of the batch axes */
  int64_t sshape[NDF_MAX_SPATIAL];   /* spatial shape */
  int64_t npix;                      /* voxels per image */
  double sampling[NDF_MAX_SPATIAL];
  int has_sampling;                  /* scipy's sampling != None (bf: only then is it multiplied in) */
  ndf_metric metric;                 /* resolved (cdt/bf) */
  uint8_t *structure;                /* cdt: 3^nsp bytes, 0/1 */
} dist_call;

static const char *dname(ndf_dtype t) { return ndf_dtype_name(t) ? ndf_dtype_name(t) : "unknown"; }

static ndf_status check_output(ndf_ctx *ctx, const char *name, const char *arg, const ndf_array *in,
                               const ndf_array *out) {
  ndf_status s = ndf__check_array(ctx, name, arg, out, NULL);
  if (s != NDF_OK) return s;
  if (out->device != in->device || out->device_id != in->device_id)
    return ndf__argerror(ctx, name, arg, "lives on another device than the input");
  if (ndf_array_size(in) == 0) return NDF_OK;
  if (!out->data) return ndf__argerror(ctx, name, arg, "NULL data");
  if (!ndf__layout_is_proper(out)) return ndf__argerror(ctx, name, arg, "its strides make elements overlap");
  if (ndf__arrays_overlap(in, out)) return ndf__argerror(ctx, name, arg, "overlaps the input");
  return NDF_OK;
}

static ndf_status check_call(ndf_ctx *ctx, dist_op op, const char *name, const ndf_array *in, const ndf_array *dist,
                             const ndf_array *idx, const ndf_distance_options *opt, dist_call *c) {
  memset(c, 0, sizeof *c);
  c->op = op;
  c->name = name;
  if (!in) return ndf__argerror(ctx, name, "input", "NULL");
  if (!opt) return ndf__argerror(ctx, name, "options", "NULL");
  if (!dist && !idx)
    return ndf__argerror(ctx, name, "distances", "NULL and indices NULL: at least one must be given");
  if (!ndf_dtype_size(in->dtype) || in->dtype == NDF_INT64) return ndf__argerror(ctx, name, "input", "unknown dtype %d", (int)in->dtype);
  ndf_status cs = ndf__check_shape(ctx, name, in, opt->batch_dims);
  if (cs != NDF_OK) return cs;
  const int nb = opt->batch_dims, nsp = in->ndim - nb;
  if (nsp > NDF_MAX_SPATIAL)
    return ndf__argerror(ctx, name, "batch_dims", "%d spatial axes; at most %d are supported", nsp, NDF_MAX_SPATIAL);
  c->nb = nb;
  c->nsp = nsp;
  c->nimg = 1;
  c->npix = 1;
  for (int d = 0; d < nb; d++) c->nimg *= in->shape[d];
  for (int d = 0; d < nsp; d++) {
    c->sshape[d] = in->shape[nb + d];
    c->npix *= c->sshape[d];
  }

  /* sampling */
  if (opt->nsampling != 0) {
    if (op == OP_CDT) return ndf__argerror(ctx, name, "sampling", "distance_transform_cdt takes no sampling");
    if (opt->nsampling != 1 && opt->nsampling != nsp)
      return ndf__argerror(ctx, name, "sampling", "%d values for %d spatial axes (give 1 or %d)", opt->nsampling, nsp,
                           nsp);
    for (int d = 0; d < opt->nsampling; d++)
      if (!isfinite(opt->sampling[d]) || !(opt->sampling[d] > 0))
        return ndf__argerror(ctx, name, "sampling", "sampling[%d]=%g must be finite and > 0", d, opt->sampling[d]);
    c->has_sampling = 1;
  }
  for (int d = 0; d < nsp; d++)
    c->sampling[d] = opt->nsampling == 0 ? 1.0 : opt->sampling[opt->nsampling == 1 ? 0 : d];

  /* metric */
  if ((unsigned)opt->metric > NDF_METRIC_CHESSBOARD)
    return ndf__argerror(ctx, name, "metric", "unknown metric %d", (int)opt->metric);
  if (opt->metric_structure && op != OP_CDT)
    return ndf__argerror(ctx, name, "metric_structure", "only distance_transform_cdt takes a structure");
  switch (op) {
    case OP_EDT:
      if (opt->metric != NDF_METRIC_DEFAULT && opt->metric != NDF_METRIC_EUCLIDEAN)
        return ndf__argerror(ctx, name, "metric", "distance_transform_edt is euclidean (got %s)", ndf_metric_name(opt->metric));
      c->metric = NDF_METRIC_EUCLIDEAN;
      break;
    case OP_CDT:
      if (opt->metric == NDF_METRIC_EUCLIDEAN && !opt->metric_structure)
        return ndf__argerror(ctx, name, "metric", "euclidean is not a chamfer metric (taxicab, chessboard or a structure)");
      c->metric = opt->metric == NDF_METRIC_DEFAULT ? NDF_METRIC_CHESSBOARD : opt->metric;
      break;
    case OP_BF:
      c->metric = opt->metric == NDF_METRIC_DEFAULT ? NDF_METRIC_EUCLIDEAN : opt->metric;
      break;
  }
  if (op == OP_CDT && opt->metric_structure) {
    const ndf_array *st = opt->metric_structure;
    if (st->device != NDF_DEVICE_CPU) return ndf__argerror(ctx, name, "metric_structure", "must be a CPU (host) array");
    if (!ndf_dtype_size(st->dtype) || st->dtype == NDF_INT64) return ndf__argerror(ctx, name, "metric_structure", "unknown dtype %d", (int)st->dtype);
    if (st->ndim != nsp)
      return ndf__argerror(ctx, name, "metric_structure", "rank %d does not match the %d spatial axes of the input",
                           st->ndim, nsp);
    for (int d = 0; d < nsp; d++)
      if (st->shape[d] != 3)
        return ndf__argerror(ctx, name, "metric_structure", "shape[%d]=%lld; metric sizes must be equal to 3", d,
                             (long long)st->shape[d]);
    if ((cs = ndf__check_array(ctx, name, "metric_structure", st, NULL)) != NDF_OK) return cs;
    if (!st->data) return ndf__argerror(ctx, name, "metric_structure", "NULL data");
  }

  /* outputs */
  if (dist) {
    int ok;
    const char *want;
    switch (op) {
      case OP_EDT: ok = dist->dtype == NDF_FLOAT64 || dist->dtype == NDF_FLOAT32; want = "float64 or float32"; break;
      case OP_CDT: ok = dist->dtype == NDF_INT32; want = "int32"; break;
      default:
        ok = dist->dtype == (c->metric == NDF_METRIC_EUCLIDEAN ? NDF_FLOAT64 : NDF_UINT32);
        want = c->metric == NDF_METRIC_EUCLIDEAN ? "float64 for the euclidean metric" : "uint32 for taxicab and chessboard";
        break;
    }
    if (!ok) return ndf__argerror(ctx, name, "distances", "dtype %s; distances must be %s", dname(dist->dtype), want);
    if (dist->ndim != in->ndim)
      return ndf__argerror(ctx, name, "distances", "rank %d differs from the input rank %d", dist->ndim, in->ndim);
    for (int d = 0; d < in->ndim; d++)
      if (dist->shape[d] != in->shape[d])
        return ndf__argerror(ctx, name, "distances", "shape[%d]=%lld differs from the input shape %lld", d,
                             (long long)dist->shape[d], (long long)in->shape[d]);
  }
  if (idx) {
    if (idx->dtype != NDF_INT32) return ndf__argerror(ctx, name, "indices", "dtype %s; indices must be int32", dname(idx->dtype));
    if (idx->ndim != in->ndim + 1)
      return ndf__argerror(ctx, name, "indices", "rank %d; expected %d (batch axes, %d coordinates, spatial axes)",
                           idx->ndim, in->ndim + 1, nsp);
    for (int d = 0; d < idx->ndim; d++) {
      int64_t want = d < nb ? in->shape[d] : d == nb ? nsp : in->shape[d - 1];
      if (idx->shape[d] != want)
        return ndf__argerror(ctx, name, "indices", "shape[%d]=%lld; expected %lld (batch axes, %d coordinates, spatial axes)",
                             d, (long long)idx->shape[d], (long long)want, nsp);
    }
  }
  if (in->device != NDF_DEVICE_CPU && in->device != NDF_DEVICE_CUDA)
    return ndf__argerror(ctx, name, "input", "unknown device type %d", (int)in->device);
  ndf_status s;
  if (dist && (s = check_output(ctx, name, "distances", in, dist)) != NDF_OK) return s;
  if (idx && (s = check_output(ctx, name, "indices", in, idx)) != NDF_OK) return s;
  if (ndf_array_size(in) > 0 && !in->data) return ndf__argerror(ctx, name, "input", "NULL data");
  if (dist && idx && ndf_array_size(in) > 0 && ndf__arrays_overlap(dist, idx))
    return ndf__argerror(ctx, name, "indices", "overlaps distances");
  if ((s = ndf__check_device(ctx, name, in)) != NDF_OK) return s;
  if (in->device == NDF_DEVICE_CUDA) {
    if (op == OP_CDT && idx)
      return ndf__error(ctx, NDF_ENOTSUP, "%s: indices (return_indices) on CUDA arrays are not supported: cdt's "
                        "feature transform runs on the CPU backend only (CUDA computes distances)", name);
    if (op == OP_CDT)
      for (int d = 0; d < nsp; d++)
        if (c->sshape[d] >= ((int64_t)1 << 29))
          return ndf__error(ctx, NDF_ENOTSUP, "%s: a spatial axis of %lld voxels; CUDA cdt takes axes shorter than "
                            "2^29 (the CPU backend takes any)", name, (long long)c->sshape[d]);
  }
  if (c->npix >= INT32_MAX)
    return ndf__error(ctx, NDF_ENOTSUP, "%s: images of 2^31 voxels or more are not supported (indices are int32)", name);
  return NDF_OK;
}

/* ---- host array access ----------------------------------------------------------------------- */

/* Offset (elements) of spatial row `row` (an index over every spatial axis but
 * the last) of image `img` of an array whose spatial axes start at axis sp0. */
static int64_t row_offset(const ndf_array *a, int nb, int sp0, int nsp, int64_t img, int64_t row) {
  int64_t off = 0;
  for (int d = nsp - 2; d >= 0; d--) {
    int64_t n = a->shape[sp0 + d];
    off += (row % n) * a->strides[sp0 + d];
    row /= n;
  }
  for (int d = nb - 1; d >= 0; d--) {
    off += (img % a->shape[d]) * a->strides[d];
    img /= a->shape[d];
  }
  return off;
}

/* fg[i] = input != 0 for the voxels of image img (C order). */
static void read_mask(const ndf_array *in, const dist_call *c, int64_t img, uint8_t *fg) {
  const int64_t nx = c->sshape[c->nsp - 1], nrows = c->npix / (nx ? nx : 1);
  const int64_t sx = in->strides[in->ndim - 1];
  for (int64_t r = 0; r < nrows; r++) {
    const int64_t off = row_offset(in, c->nb, c->nb, c->nsp, img, r);
    uint8_t *o = fg + r * nx;
#define READ_ROW(T)                                                   \
  {                                                                   \
    const T *p = (const T *)in->data + off;                           \
    for (int64_t x = 0; x < nx; x++) o[x] = p[x * sx] != 0;           \
  }                                                                   \
  break;
    switch (in->dtype) {
      case NDF_BOOL: case NDF_UINT8: READ_ROW(uint8_t)
      case NDF_INT8: READ_ROW(int8_t)
      case NDF_UINT16: READ_ROW(uint16_t)
      case NDF_INT16: READ_ROW(int16_t)
      case NDF_UINT32: READ_ROW(uint32_t)
      case NDF_INT32: READ_ROW(int32_t)
      case NDF_FLOAT32: READ_ROW(float)
      case NDF_FLOAT64: READ_ROW(double)
      default: break;
    }
#undef READ_ROW
  }
}

/* Writes image img's distances: v is double (edt, bf euclidean), int32 (cdt) or uint32 (bf). */
static void write_dist_f64(const ndf_array *out, const dist_call *c, int64_t img, const double *v) {
  const int64_t nx = c->sshape[c->nsp - 1], nrows = c->npix / nx, sx = out->strides[out->ndim - 1];
  for (int64_t r = 0; r < nrows; r++) {
    const int64_t off = row_offset(out, c->nb, c->nb, c->nsp, img, r);
    const double *s = v + r * nx;
    if (out->dtype == NDF_FLOAT64) {
      double *p = (double *)out->data + off;
      for (int64_t x = 0; x < nx; x++) p[x * sx] = s[x];
    } else {
      float *p = (float *)out->data + off;
      for (int64_t x = 0; x < nx; x++) p[x * sx] = (float)s[x];
    }
  }
}

static void write_dist_i32(const ndf_array *out, const dist_call *c, int64_t img, const int32_t *v) {
  const int64_t nx = c->sshape[c->nsp - 1], nrows = c->npix / nx, sx = out->strides[out->ndim - 1];
  for (int64_t r = 0; r < nrows; r++) {
    int32_t *p = (int32_t *)out->data + row_offset(out, c->nb, c->nb, c->nsp, img, r);
    for (int64_t x = 0; x < nx; x++) p[x * sx] = v[r * nx + x];
  }
}

/* Writes image img's indices from flat feature indices (C order of the
 * image); a negative feature f means scipy's "no background": (-1, 0, ...). */
static void write_indices(const ndf_array *out, const dist_call *c, int64_t img, const int32_t *feat) {
  const int nsp = c->nsp, nb = c->nb;
  const int64_t nx = c->sshape[nsp - 1], nrows = c->npix / nx, sx = out->strides[out->ndim - 1];
  const int64_t sk = out->strides[nb];
  for (int64_t r = 0; r < nrows; r++) {
    int32_t *p = (int32_t *)out->data + row_offset(out, nb, nb + 1, nsp, img, r);
    for (int64_t x = 0; x < nx; x++) {
      int64_t f = feat[r * nx + x];
      if (f < 0) {
        for (int k = 0; k < nsp; k++) p[x * sx + k * sk] = k == 0 ? -1 : 0;
        continue;
      }
      for (int k = nsp - 1; k >= 0; k--) {
        p[x * sx + k * sk] = (int32_t)(f % c->sshape[k]);
        f /= c->sshape[k];
      }
    }
  }
}

/* ---- edt ------------------------------------------------------------------------------------- */

/* Stacks of one line's envelope (per thread). */
typedef struct edt_scratch {
  int32_t *v;   /* site positions along the line */
  double *w;    /* their pre (scipy's uR/vR/wR) */
  int32_t *f;   /* their features */
  int32_t *lf;  /* gathered block of lines: features */
  double *lw;   /* gathered block of lines: pre */
} edt_scratch;

/* One line of scipy's _VoronoiFT: n voxels at stride st of feat/pre (feature
 * < 0: not a site), spacing s along the line. */
static void edt_line(int64_t n, int32_t *feat, double *pre, int64_t st, double s, edt_scratch *k) {
  int32_t *v = k->v, *F = k->f;
  double *W = k->w;
  int64_t l = -1;
  for (int64_t x = 0; x < n; x++) {
    const int32_t fx = feat[x * st];
    if (fx < 0) continue;
    const double wR = pre[x * st];
    while (l >= 1) {
      double a = (double)(v[l] - v[l - 1]) * s;
      double b = (double)(x - v[l]) * s;
      double cc = a + b;
      if (cc * W[l] - b * W[l - 1] - a * wR - a * b * cc <= 0.0) break;
      --l;
    }
    ++l;
    v[l] = (int32_t)x;
    W[l] = wR;
    F[l] = fx;
  }
  if (l < 0) return; /* no site: the line keeps its "no feature" */
  const int64_t maxl = l;
  l = 0;
  for (int64_t i = 0; i < n; i++) {
    double t = (double)(v[l] - i) * s;
    double d1 = W[l] + t * t;
    while (l < maxl) {
      t = (double)(v[l + 1] - i) * s;
      const double d2 = W[l + 1] + t * t;
      if (d1 <= d2) break;
      d1 = d2;
      ++l;
    }
    feat[i * st] = F[l];
    pre[i * st] = d1;
  }
}

enum { EDT_BLOCK = 16 }; /* lines gathered at once for the strided axes */

/* The pass of axis d over one image (C order, shape sh). */
static void edt_pass(int32_t *feat, double *pre, const int64_t *sh, int nsp, int d, double s, edt_scratch *ks,
                     int nth) {
  int64_t outer = 1, inner = 1;
  const int64_t len = sh[d];
  for (int a = 0; a < d; a++) outer *= sh[a];
  for (int a = d + 1; a < nsp; a++) inner *= sh[a];
  if (inner == 1) {
#pragma omp parallel for num_threads(nth) schedule(dynamic, 16)
    for (int64_t o = 0; o < outer; o++) edt_line(len, feat + o * len, pre + o * len, 1, s, &ks[ndf__thread_id()]);
    return;
  }
  const int64_t nch = (inner + EDT_BLOCK - 1) / EDT_BLOCK, nblk = outer * nch;
#pragma omp parallel for num_threads(nth) schedule(dynamic, 4)
  for (int64_t b = 0; b < nblk; b++) {
    edt_scratch *k = &ks[ndf__thread_id()];
    const int64_t o = b / nch, i0 = (b % nch) * EDT_BLOCK;
    const int64_t m = inner - i0 < EDT_BLOCK ? inner - i0 : EDT_BLOCK;
    const int64_t base = o * len * inner + i0;
    for (int64_t x = 0; x < len; x++)
      for (int64_t j = 0; j < m; j++) {
        k->lf[x * EDT_BLOCK + j] = feat[base + x * inner + j];
        k->lw[x * EDT_BLOCK + j] = pre[base + x * inner + j];
      }
    for (int64_t j = 0; j < m; j++) edt_line(len, k->lf + j, k->lw + j, EDT_BLOCK, s, k);
    for (int64_t x = 0; x < len; x++)
      for (int64_t j = 0; j < m; j++) {
        feat[base + x * inner + j] = k->lf[x * EDT_BLOCK + j];
        pre[base + x * inner + j] = k->lw[x * EDT_BLOCK + j];
      }
  }
}

static ndf_status edt_cpu(ndf_ctx *ctx, const dist_call *c, const ndf_array *in, ndf_array *dist, ndf_array *idx) {
  const int nsp = c->nsp;
  const int64_t N = c->npix;
  int64_t maxlen = 1;
  for (int d = 0; d < nsp; d++) maxlen = c->sshape[d] > maxlen ? c->sshape[d] : maxlen;
  const int nth = ndf__cpu_threads(ctx);
  uint8_t *fg = malloc((size_t)N);
  int32_t *feat = malloc((size_t)N * sizeof *feat);
  double *pre = malloc((size_t)N * sizeof *pre);
  edt_scratch *ks = calloc((size_t)nth, sizeof *ks);
  int ok = fg && feat && pre && ks;
  for (int t = 0; ok && t < nth; t++) {
    ks[t].v = malloc((size_t)maxlen * sizeof(int32_t));
    ks[t].f = malloc((size_t)maxlen * sizeof(int32_t));
    ks[t].w = malloc((size_t)maxlen * sizeof(double));
    ks[t].lf = malloc((size_t)maxlen * EDT_BLOCK * sizeof(int32_t));
    ks[t].lw = malloc((size_t)maxlen * EDT_BLOCK * sizeof(double));
    ok = ks[t].v && ks[t].f && ks[t].w && ks[t].lf && ks[t].lw;
  }
  ndf_status s = NDF_OK;
  if (!ok) {
    s = ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", c->name);
    goto done;
  }
  for (int64_t img = 0; img < c->nimg; img++) {
    read_mask(in, c, img, fg);
    int64_t nbg = 0;
    for (int64_t i = 0; i < N; i++) {
      feat[i] = fg[i] ? -1 : (int32_t)i;
      pre[i] = 0.0;
      nbg += !fg[i];
    }
    if (nbg > 0) {
      for (int d = 0; d < nsp; d++) edt_pass(feat, pre, c->sshape, nsp, d, c->sampling[d], ks, nth);
    } else {
      /* scipy: features stay (-1, 0, ..., 0); distances from them, axis by axis. */
      for (int64_t i = 0; i < N; i++) {
        int64_t r = i, co[NDF_MAX_SPATIAL];
        for (int d = nsp - 1; d >= 0; d--) {
          co[d] = r % c->sshape[d];
          r /= c->sshape[d];
        }
        double acc = 0.0;
        for (int d = 0; d < nsp; d++) {
          double t = (double)((d == 0 ? -1 : 0) - co[d]) * c->sampling[d];
          acc = d == 0 ? t * t : acc + t * t;
        }
        pre[i] = acc;
      }
    }
    if (dist) {
#pragma omp parallel for num_threads(nth) schedule(static)
      for (int64_t i = 0; i < N; i++) pre[i] = sqrt(pre[i]);
      write_dist_f64(dist, c, img, pre);
    }
    if (idx) write_indices(idx, c, img, feat);
  }
done:
  for (int t = 0; ks && t < nth; t++) {
    free(ks[t].v);
    free(ks[t].f);
    free(ks[t].w);
    free(ks[t].lf);
    free(ks[t].lw);
  }
  free(ks);
  free(fg);
  free(feat);
  free(pre);
  return s;
}

/* ---- cdt ------------------------------------------------------------------------------------- */

/* scipy's generate_binary_structure(rank, connectivity) as 3^rank bytes. */
static void binary_structure(int rank, int conn, uint8_t *s) {
  int64_t n = 1;
  for (int d = 0; d < rank; d++) n *= 3;
  for (int64_t i = 0; i < n; i++) {
    int64_t r = i;
    int dd = 0;
    for (int d = 0; d < rank; d++) {
      dd += (r % 3) != 1;
      r /= 3;
    }
    s[i] = dd <= conn;
  }
}

/* Reads a host array of any dtype and strides as 0/1 bytes in C order. */
static void read_structure(const ndf_array *a, uint8_t *out) {
  const int64_t n = ndf_array_size(a);
  for (int64_t i = 0; i < n; i++) {
    int64_t r = i, off = 0;
    for (int d = a->ndim - 1; d >= 0; d--) {
      off += (r % a->shape[d]) * a->strides[d];
      r /= a->shape[d];
    }
    const char *p = (const char *)a->data + off * (int64_t)ndf_dtype_size(a->dtype);
    int nz = 0;
    switch (a->dtype) {
      case NDF_BOOL: case NDF_UINT8: case NDF_INT8: nz = *(const uint8_t *)p != 0; break;
      case NDF_UINT16: case NDF_INT16: nz = *(const uint16_t *)p != 0; break;
      case NDF_UINT32: case NDF_INT32: nz = *(const uint32_t *)p != 0; break;
      case NDF_FLOAT32: nz = *(const float *)p != 0; break;
      case NDF_FLOAT64: nz = *(const double *)p != 0; break;
      default: break;
    }
    out[i] = (uint8_t)nz;
  }
}

/* One of scipy's passes over an image: dir = +1 raster order with neighbours
 * p + o, dir = -1 reverse order with neighbours p - o (the reversed view). */
static void cdt_pass(int32_t *dt, int32_t *ft, const int64_t *sh, int nsp, int64_t N, const int32_t *taps,
                     const int64_t *loff, int ntaps, int dir) {
  int64_t co[NDF_MAX_SPATIAL];
  for (int d = 0; d < nsp; d++) co[d] = dir > 0 ? 0 : sh[d] - 1;
  for (int64_t it = 0; it < N; it++) {
    const int64_t p = dir > 0 ? it : N - 1 - it;
    int32_t v = dt[p];
    if (v != 0) {
      int interior = 1;
      for (int d = 0; d < nsp; d++) interior &= co[d] > 0 && co[d] < sh[d] - 1;
      int32_t mn = v;
      int64_t mo = 0;
      for (int k = 0; k < ntaps; k++) {
        if (!interior) {
          int in = 1;
          for (int d = 0; d < nsp; d++) {
            int64_t q = co[d] + dir * taps[k * nsp + d];
            in &= q >= 0 && q < sh[d];
          }
          if (!in) continue;
        }
        const int64_t o = dir * loff[k];
        const int32_t tt = dt[p + o];
        if (tt >= 0 && (mn < 0 || tt + 1 < mn)) {
          mn = tt + 1;
          mo = o;
        }
      }
      dt[p] = mn;
      if (ft) ft[p] = ft[p + mo];
    }
    for (int d = nsp - 1; d >= 0; d--) { /* next coordinates in the pass's order */
      if (dir > 0) {
        if (++co[d] < sh[d]) break;
        co[d] = 0;
      } else {
        if (--co[d] >= 0) break;
        co[d] = sh[d] - 1;
      }
    }
  }
}

static ndf_status cdt_cpu(ndf_ctx *ctx, const dist_call *c, const ndf_array *in, ndf_array *dist, ndf_array *idx) {
  const int nsp = c->nsp;
  const int64_t N = c->npix;
  int64_t sn = 1;
  for (int d = 0; d < nsp; d++) sn *= 3;
  /* taps: the structure's entries before the centre in raster order, in that order */
  int32_t *taps = malloc((size_t)(sn / 2 + 1) * nsp * sizeof *taps);
  int64_t *loff = malloc((size_t)(sn / 2 + 1) * sizeof *loff);
  int ntaps = 0;
  int64_t nimg = c->nimg;
  const int nth = ndf__cpu_threads(ctx);
  const int nt = nimg < nth ? (int)nimg : nth;
  void **b1 = ndf__thread_buffers(nt, (size_t)N * (sizeof(int32_t) * 2 + 1));
  ndf_status s = NDF_OK;
  if (!taps || !loff || !b1) {
    s = ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", c->name);
    goto done;
  }
  int64_t sst[NDF_MAX_SPATIAL];
  {
    int64_t m = 1;
    for (int d = nsp - 1; d >= 0; d--) {
      sst[d] = m;
      m *= c->sshape[d];
    }
  }
  for (int64_t k = 0; k < sn / 2; k++) {
    if (!c->structure[k]) continue;
    int64_t r = k;
    loff[ntaps] = 0;
    for (int d = nsp - 1; d >= 0; d--) {
      taps[ntaps * nsp + d] = (int32_t)(r % 3) - 1;
      loff[ntaps] += (int64_t)taps[ntaps * nsp + d] * sst[d];
      r /= 3;
    }
    ntaps++;
  }
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
  for (int64_t img = 0; img < nimg; img++) {
    int32_t *dt = b1[ndf__thread_id()];
    int32_t *ft = idx ? dt + N : NULL;
    uint8_t *fg = (uint8_t *)(dt + 2 * N);
    read_mask(in, c, img, fg);
    for (int64_t i = 0; i < N; i++) {
      dt[i] = fg[i] ? -1 : 0;
      if (ft) ft[i] = (int32_t)i;
    }
    cdt_pass(dt, ft, c->sshape, nsp, N, taps, loff, ntaps, +1);
    cdt_pass(dt, ft, c->sshape, nsp, N, taps, loff, ntaps, -1);
    if (dist) write_dist_i32(dist, c, img, dt);
    if (idx) write_indices(idx, c, img, ft);
  }
done:
  ndf__thread_buffers_free(b1, nt);
  free(taps);
  free(loff);
  return s;
}

/* The CUDA path's metric: 0 taxicab, 1 chessboard, -1 another structure.
 * scipy's chamfer reads only the structure's entries before the centre (the
 * second pass mirrors them), so those decide; in 1-D both are [1, 1, 1]. */
static int cdt_cuda_metric(const dist_call *c) {
  uint8_t ref[6561];
  int64_t sn = 1;
  for (int d = 0; d < c->nsp; d++) sn *= 3;
  for (int conn = 1; conn <= 2; conn++) {
    binary_structure(c->nsp, conn == 1 ? 1 : c->nsp, ref);
    if (!memcmp(ref, c->structure, (size_t)(sn / 2))) return conn - 1;
  }
  return -1;
}

/* ---- bf -------------------------------------------------------------------------------------- */

static ndf_status bf_cpu(ndf_ctx *ctx, const dist_call *c, const ndf_array *in, ndf_array *dist, ndf_array *idx) {
  const int nsp = c->nsp;
  const int64_t N = c->npix;
  const int nth = ndf__cpu_threads(ctx);
  uint8_t *fg = malloc((size_t)N);
  int32_t *bco = malloc((size_t)N * nsp * sizeof *bco); /* boundary coordinates, highest index first */
  int32_t *bidx = malloc((size_t)N * sizeof *bidx);
  double *dd = dist && dist->dtype == NDF_FLOAT64 ? malloc((size_t)N * sizeof *dd) : NULL;
  int32_t *du = dist && dist->dtype == NDF_UINT32 ? malloc((size_t)N * sizeof *du) : NULL;
  int32_t *ft = malloc((size_t)N * sizeof *ft);
  ndf_status s = NDF_OK;
  if (!fg || !bco || !bidx || !ft || (dist && !dd && !du)) {
    s = ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", c->name);
    goto done;
  }
  const int euclid = c->metric == NDF_METRIC_EUCLIDEAN, taxi = c->metric == NDF_METRIC_TAXICAB;
  int64_t sst[NDF_MAX_SPATIAL];
  {
    int64_t m = 1;
    for (int d = nsp - 1; d >= 0; d--) {
      sst[d] = m;
      m *= c->sshape[d];
    }
  }
  for (int64_t img = 0; img < c->nimg; img++) {
    read_mask(in, c, img, fg);
    /* boundary background: a background voxel with a foreground voxel in its 3^n neighbourhood */
    int64_t nbd = 0;
    for (int64_t p = N - 1; p >= 0; p--) {
      if (fg[p]) continue;
      int64_t co[NDF_MAX_SPATIAL], r = p;
      for (int d = nsp - 1; d >= 0; d--) {
        co[d] = r % c->sshape[d];
        r /= c->sshape[d];
      }
      int found = 0;
      int64_t nn = 1;
      for (int d = 0; d < nsp; d++) nn *= 3;
      for (int64_t k = 0; k < nn && !found; k++) {
        int64_t kr = k, q = 0;
        int inb = 1;
        for (int d = nsp - 1; d >= 0; d--) {
          int64_t x = co[d] + (kr % 3) - 1;
          kr /= 3;
          inb &= x >= 0 && x < c->sshape[d];
          q += x * sst[d];
        }
        found = inb && fg[q];
      }
      if (!found) continue;
      for (int d = 0; d < nsp; d++) bco[nbd * nsp + d] = (int32_t)co[d];
      bidx[nbd++] = (int32_t)p;
    }
#pragma omp parallel for num_threads(nth) schedule(dynamic, 64)
    for (int64_t p = 0; p < N; p++) {
      if (!fg[p]) {
        if (dd) dd[p] = 0.0;
        if (du) du[p] = 0;
        ft[p] = (int32_t)p;
        continue;
      }
      int64_t co[NDF_MAX_SPATIAL], r = p;
      for (int d = nsp - 1; d >= 0; d--) {
        co[d] = r % c->sshape[d];
        r /= c->sshape[d];
      }
      int32_t best = 0;
      if (euclid) {
        double bd = DBL_MAX;
        for (int64_t e = 0; e < nbd; e++) {
          double acc = 0.0;
          for (int d = 0; d < nsp; d++) {
            double t = (double)(co[d] - bco[e * nsp + d]);
            if (c->has_sampling) t *= c->sampling[d];
            acc += t * t;
          }
          if (acc < bd) {
            bd = acc;
            best = bidx[e];
          }
        }
        if (dd) dd[p] = sqrt(bd);
      } else {
        uint32_t bd = UINT32_MAX;
        for (int64_t e = 0; e < nbd; e++) {
          uint32_t acc = 0;
          for (int d = 0; d < nsp; d++) {
            int64_t t = co[d] - bco[e * nsp + d];
            if (t < 0) t = -t;
            if (taxi) acc += (uint32_t)t;
            else if ((uint32_t)t > acc) acc = (uint32_t)t;
          }
          if (acc < bd) {
            bd = acc;
            best = bidx[e];
          }
        }
        if (du) du[p] = (int32_t)bd;
      }
      ft[p] = best;
    }
    if (dd) write_dist_f64(dist, c, img, dd);
    if (du) write_dist_i32(dist, c, img, du);
    if (idx) write_indices(idx, c, img, ft);
  }
done:
  free(fg);
  free(bco);
  free(bidx);
  free(dd);
  free(du);
  free(ft);
  return s;
}

/* ---- entry points ---------------------------------------------------------------------------- */

static ndf_status run(ndf_ctx *ctx, dist_op op, const char *name, const ndf_array *in, ndf_array *dist,
                      ndf_array *idx, const ndf_distance_options *opt) {
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  ndf__clear_error(ctx);
  dist_call c;
  ndf_status s = check_call(ctx, op, name, in, dist, idx, opt, &c);
  if (s != NDF_OK) return s;
  if (ndf_array_size(in) == 0) return NDF_OK;
  if (op == OP_CDT) {
    c.structure = malloc(6561);
    if (!c.structure) return ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", name);
    if (opt->metric_structure) read_structure(opt->metric_structure, c.structure);
    else binary_structure(c.nsp, c.metric == NDF_METRIC_TAXICAB ? 1 : c.nsp, c.structure);
  }
  switch (op) {
    case OP_EDT:
      s = in->device == NDF_DEVICE_CUDA ? ndf__edt_cuda(ctx, name, in, dist, idx, c.nb, c.sampling)
                                        : edt_cpu(ctx, &c, in, dist, idx);
      break;
    case OP_CDT:
      if (in->device == NDF_DEVICE_CUDA) {
        const int chess = cdt_cuda_metric(&c);
        s = chess < 0 ? ndf__error(ctx, NDF_ENOTSUP, "%s: on CUDA arrays the metric must be taxicab (cityblock, "
                                   "manhattan; generate_binary_structure(rank, 1)) or chessboard "
                                   "(generate_binary_structure(rank, rank)); other metric structures run on the "
                                   "CPU backend only", name)
                      : ndf__cdt_cuda(ctx, name, in, dist, c.nb, chess);
      } else {
        s = cdt_cpu(ctx, &c, in, dist, idx);
      }
      break;
    case OP_BF:
      s = in->device == NDF_DEVICE_CUDA
              ? ndf__bf_cuda(ctx, name, in, dist, idx, c.nb, (int)c.metric, c.has_sampling, c.sampling)
              : bf_cpu(ctx, &c, in, dist, idx);
      break;
  }
  free(c.structure);
  return s;
}

ndf_status ndf_distance_transform_edt(ndf_ctx *ctx, const ndf_array *input, ndf_array *distances, ndf_array *indices,
                                      const ndf_distance_options *opt) {
  return run(ctx, OP_EDT, "ndf_distance_transform_edt", input, distances, indices, opt);
}

ndf_status ndf_distance_transform_cdt(ndf_ctx *ctx, const ndf_array *input, ndf_array *distances, ndf_array *indices,
                                      const ndf_distance_options *opt) {
  return run(ctx, OP_CDT, "ndf_distance_transform_cdt", input, distances, indices, opt);
}

ndf_status ndf_distance_transform_bf(ndf_ctx *ctx, const ndf_array *input, ndf_array *distances, ndf_array *indices,
                                     const ndf_distance_options *opt) {
  return run(ctx, OP_BF, "ndf_distance_transform_bf", input, distances, indices, opt);
}
