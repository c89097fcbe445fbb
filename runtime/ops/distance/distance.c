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
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "distance/distance.h"

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
  if (!ndf_dtype_size(in->dtype)) return ndf__argerror(ctx, name, "input", "unknown dtype %d", (int)in->dtype);
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
    if (!ndf_dtype_size(st->dtype)) return ndf__argerror(ctx, name, "metric_structure", "unknown dtype %d", (int)st->dtype);
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
  return off + ndf__lead_offset(a, nb, img);
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
      case NDF_INT64: case NDF_UINT64: READ_ROW(uint64_t)
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
  int64_t *f64; /* ndf_distance_edt_pass: the envelope's features, the line's features */
  int64_t *lf64;
  int32_t *lf;  /* gathered block of lines: features */
  double *lw;   /* gathered block of lines: pre */
} edt_scratch;

/* One line of scipy's _VoronoiFT: n voxels at stride st of feat/pre (feature
 * < 0: not a site), spacing s along the line; k's v, w and f hold the
 * envelope.  Defined for int32 features (the transform) and int64 ones
 * (ndf_distance_edt_pass), the same code. */
#define EDT_LINE_DEF(NAME, FT, FSTACK)                                                         \
  static void NAME(int64_t n, FT *feat, double *pre, int64_t st, double s, edt_scratch *k) {   \
    int32_t *v = k->v;                                                                       \
    FT *F = (FT *)k->FSTACK;                                                                 \
    double *W = k->w;                                                                        \
    int64_t l = -1;                                                                          \
    for (int64_t x = 0; x < n; x++) {                                                        \
      const FT fx = feat[x * st];                                                            \
      if (fx < 0) continue;                                                                  \
      const double wR = pre[x * st];                                                         \
      while (l >= 1) {                                                                       \
        double a = (double)(v[l] - v[l - 1]) * s;                                            \
        double b = (double)(x - v[l]) * s;                                                   \
        double cc = a + b;                                                                   \
        if (cc * W[l] - b * W[l - 1] - a * wR - a * b * cc <= 0.0) break;                    \
        --l;                                                                                 \
      }                                                                                      \
      ++l;                                                                                   \
      v[l] = (int32_t)x;                                                                     \
      W[l] = wR;                                                                             \
      F[l] = fx;                                                                             \
    }                                                                                        \
    if (l < 0) return; /* no site: the line keeps its "no feature" */                        \
    const int64_t maxl = l;                                                                  \
    l = 0;                                                                                   \
    for (int64_t i = 0; i < n; i++) {                                                        \
      double t = (double)(v[l] - i) * s;                                                     \
      double d1 = W[l] + t * t;                                                              \
      while (l < maxl) {                                                                     \
        t = (double)(v[l + 1] - i) * s;                                                      \
        const double d2 = W[l + 1] + t * t;                                                  \
        if (d1 <= d2) break;                                                                 \
        d1 = d2;                                                                             \
        ++l;                                                                                 \
      }                                                                                      \
      feat[i * st] = F[l];                                                                   \
      pre[i * st] = d1;                                                                      \
    }                                                                                        \
  }
EDT_LINE_DEF(edt_line, int32_t, f)
EDT_LINE_DEF(edt_line64, int64_t, f64)

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

/* ---- one pass on a caller's state (ndf_distance_edt_pass) ------------------------------------ */

static ndf_status edt_pass_cpu(ndf_ctx *ctx, const char *name, ndf_array *w, ndf_array *f, int axis, double s) {
  const int64_t n = w->shape[axis], nlines = ndf_array_size(w) / n;
  const int64_t sw = w->strides[axis], sf = f ? f->strides[axis] : 0;
  double *W = w->data;
  int64_t *F = f ? f->data : NULL;
  /* the values first: nothing is written when one is refused */
  for (int64_t l = 0; l < nlines; l++) {
    int64_t ow = 0, of = 0; /* f has w's shape (checked) */
    ndf__line_offsets2(w, f ? f : w, axis, -1, l, &ow, &of);
    const double *p = W + ow;
    const int64_t *q = F ? F + of : NULL;
    for (int64_t x = 0; x < n; x++) {
      const double v = p[x * sw];
      if (!(v >= 0.0))
        return ndf__argerror(ctx, name, "sqdist", "value %g on line %lld at %lld: values must be >= 0 or +inf", v,
                             (long long)l, (long long)x);
      if (q && isfinite(v) && q[x * sf] < 0)
        return ndf__argerror(ctx, name, "features", "feature %lld on line %lld at %lld, where sqdist is finite: "
                             "features must be >= 0 there", (long long)q[x * sf], (long long)l, (long long)x);
    }
  }
  const int nth = ndf__cpu_threads(ctx);
  edt_scratch *ks = calloc((size_t)nth, sizeof *ks);
  int ok = ks != NULL;
  for (int t = 0; ok && t < nth; t++) {
    ks[t].v = malloc((size_t)n * sizeof(int32_t));
    ks[t].w = malloc((size_t)n * sizeof(double));
    ks[t].f64 = malloc((size_t)n * sizeof(int64_t));
    ks[t].lw = malloc((size_t)n * sizeof(double));
    ks[t].lf64 = malloc((size_t)n * sizeof(int64_t));
    ok = ks[t].v && ks[t].w && ks[t].f64 && ks[t].lw && ks[t].lf64;
  }
  ndf_status st = NDF_OK;
  if (!ok) {
    st = ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", name);
  } else {
#pragma omp parallel for num_threads(nth) schedule(dynamic, 16)
    for (int64_t l = 0; l < nlines; l++) {
      edt_scratch *k = &ks[ndf__thread_id()];
      int64_t ow = 0, of = 0;
      ndf__line_offsets2(w, f ? f : w, axis, -1, l, &ow, &of);
      double *p = W + ow, *lw = k->lw;
      int64_t *q = F ? F + of : NULL, *lf = k->lf64;
      for (int64_t x = 0; x < n; x++) {
        lw[x] = p[x * sw];
        lf[x] = isinf(lw[x]) ? -1 : q ? q[x * sf] : 0;
      }
      edt_line64(n, lf, lw, 1, s, k);
      for (int64_t x = 0; x < n; x++) {
        p[x * sw] = lw[x];
        if (q && lf[x] >= 0) q[x * sf] = lf[x];
      }
    }
  }
  for (int t = 0; ks && t < nth; t++) {
    free(ks[t].v);
    free(ks[t].w);
    free(ks[t].f64);
    free(ks[t].lw);
    free(ks[t].lf64);
  }
  free(ks);
  return st;
}

ndf_status ndf_distance_edt_pass(ndf_ctx *ctx, ndf_array *sqdist, ndf_array *features, int axis, double sampling) {
  static const char *name = "ndf_distance_edt_pass";
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  ndf__clear_error(ctx);
  if (!sqdist) return ndf__argerror(ctx, name, "sqdist", "NULL");
  ndf_status s = ndf__check_array(ctx, name, "sqdist", sqdist, NULL);
  if (s != NDF_OK) return s;
  if (sqdist->dtype != NDF_FLOAT64)
    return ndf__argerror(ctx, name, "sqdist", "dtype %s; it must be float64", dname(sqdist->dtype));
  if (sqdist->ndim < 1) return ndf__argerror(ctx, name, "sqdist", "0-d: it needs the axis of the pass");
  if (axis < 0 || axis >= sqdist->ndim)
    return ndf__argerror(ctx, name, "axis", "%d is not an axis of a %d-d array", axis, sqdist->ndim);
  if (!isfinite(sampling) || !(sampling > 0))
    return ndf__argerror(ctx, name, "sampling", "%g must be finite and > 0", sampling);
  if (sqdist->shape[axis] > INT32_MAX)
    return ndf__error(ctx, NDF_ENOTSUP, "%s: a line of %lld voxels; at most 2^31 - 1 are supported", name,
                      (long long)sqdist->shape[axis]);
  if (ndf_array_size(sqdist) > 0 && !sqdist->data) return ndf__argerror(ctx, name, "sqdist", "NULL data");
  if (ndf_array_size(sqdist) > 0 && !ndf__layout_is_proper(sqdist))
    return ndf__argerror(ctx, name, "sqdist", "its strides make elements overlap");
  if (features) {
    if ((s = check_output(ctx, name, "features", sqdist, features)) != NDF_OK) return s;
    if (features->dtype != NDF_INT64)
      return ndf__argerror(ctx, name, "features", "dtype %s; it must be int64", dname(features->dtype));
    if (features->ndim != sqdist->ndim || memcmp(features->shape, sqdist->shape, (size_t)sqdist->ndim * 8))
      return ndf__argerror(ctx, name, "features", "its shape differs from sqdist's");
  }
  if (ndf_array_size(sqdist) == 0) return NDF_OK;
  if ((s = ndf__check_device(ctx, name, sqdist)) != NDF_OK) return s;
  return sqdist->device == NDF_DEVICE_CUDA ? ndf__edt_pass_cuda(ctx, name, sqdist, features, axis, sampling)
                                           : edt_pass_cpu(ctx, name, sqdist, features, axis, sampling);
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
  for (int64_t i = 0; i < n; i++) out[i] = (uint8_t)ndf__get_nonzero(a, ndf__offset_of(a, i));
}

/*
 * scipy's chamfer pass, row by row.  A voxel's new value is the least of its
 * own and of (neighbour + 1) over the structure's backward offsets, the
 * first of equal candidates in offset order winning (features follow it).
 * Every offset but x - 1 reads a row finished earlier in the pass, so those
 * candidates are whole-row minima (vectorizable); x - 1, the last offset in
 * raster order, is a running minimum along the row.  Unreached foreground is
 * CDT_FAR (scipy's -1), so that a candidate from it, CDT_FAR + 1, never wins
 * and background (0) never changes, without branches.
 */
#define CDT_FAR (INT32_MAX - 1)

typedef struct cdt_tap {
  int32_t off[NDF_MAX_SPATIAL]; /* row part: every spatial axis but the last */
  int32_t dx;
  int64_t drow;                 /* the neighbour row is row + drow (forward pass) */
} cdt_tap;

typedef struct cdt_plan {
  int nsp;
  const int64_t *sh;
  int64_t nx, nrows;
  int ntaps;     /* the offsets with a row part, in raster order */
  cdt_tap *taps;
  int xtap;      /* the structure holds (0, ..., 0, -1) */
  int64_t ahead; /* rows of the previous slice a row of the pipeline reads beyond its own index */
} cdt_plan;

/* m[x] = min(m[x], q[x] + 1) for x in [0, n). */
static void cdt_min_row(int32_t *restrict m, const int32_t *restrict q, int64_t n) {
  for (int64_t x = 0; x < n; x++) {
    const int32_t c = q[x] + 1;
    m[x] = c < m[x] ? c : m[x];
  }
}

/* Row r of the pass dir (+1: raster order, -1: reversed) of one image. */
static void cdt_row(const cdt_plan *p, int32_t *dt, int32_t *ft, int64_t r, int dir, int32_t *m, int32_t *mk) {
  const int nsp = p->nsp;
  const int64_t nx = p->nx;
  int64_t c[NDF_MAX_SPATIAL], rr = r;
  for (int d = nsp - 2; d >= 0; d--) {
    c[d] = rr % p->sh[d];
    rr /= p->sh[d];
  }
  int32_t *row = dt + r * nx;
  if (ft)
    for (int64_t x = 0; x < nx; x++) {
      m[x] = row[x];
      mk[x] = -1;
    }
  for (int k = 0; k < p->ntaps; k++) {
    const cdt_tap *t = &p->taps[k];
    int ok = 1;
    for (int d = 0; d < nsp - 1 && ok; d++) {
      const int64_t y = c[d] + dir * t->off[d];
      ok = y >= 0 && y < p->sh[d];
    }
    if (!ok) continue;
    const int64_t rn = r + dir * t->drow, dx = dir * t->dx;
    const int64_t x0 = dx < 0 ? -dx : 0, x1 = dx > 0 ? nx - dx : nx;
    const int32_t *q = dt + rn * nx;
    if (!ft) {
      if (x1 > x0) cdt_min_row(row + x0, q + x0 + dx, x1 - x0);
      continue;
    }
    for (int64_t x = x0; x < x1; x++) {
      const int32_t cand = q[x + dx] + 1;
      if (cand < m[x]) {
        m[x] = cand;
        mk[x] = k;
      }
    }
  }
  if (!ft) {
    if (!p->xtap) return;
    if (dir > 0)
      for (int64_t x = 1; x < nx; x++) row[x] = row[x - 1] + 1 < row[x] ? row[x - 1] + 1 : row[x];
    else
      for (int64_t x = nx - 2; x >= 0; x--) row[x] = row[x + 1] + 1 < row[x] ? row[x + 1] + 1 : row[x];
    return;
  }
  int32_t *frow = ft + r * nx;
  for (int64_t i = 0; i < nx; i++) {
    const int64_t x = dir > 0 ? i : nx - 1 - i;
    int32_t w = row[x], f = frow[x];
    if (mk[x] >= 0) {
      const cdt_tap *t = &p->taps[mk[x]];
      w = m[x];
      f = ft[(r + dir * t->drow) * nx + x + dir * t->dx];
    }
    if (p->xtap && i > 0 && row[x - dir] + 1 < w) {
      w = row[x - dir] + 1;
      f = frow[x - dir];
    }
    row[x] = w;
    frow[x] = f;
  }
}

static void cdt_relax(int spins) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
  if (spins % 64 == 63) sched_yield();
}

/*
 * Both passes over one image.  With several threads and at least 3 spatial
 * axes, the slices of the first axis form a pipeline: slice s (in pass
 * order) runs on thread s % nth, and its row i waits until slice s - 1 has
 * finished the rows it reads (i + ahead + 1).  Every value is computed from
 * the same finished values as in one thread, so the result is the same.
 */
static void cdt_image(const cdt_plan *p, int32_t *dt, int32_t *ft, int nth, void **bufs, int *prog) {
  const int64_t S = p->nsp >= 3 ? p->sh[0] : 1, R = p->nrows / S;
  if (S < 2) nth = 1;
  for (int dir = 1; dir >= -1; dir -= 2) {
    if (nth > 1)
      for (int64_t s = 0; s < S; s++) prog[s] = 0;
#pragma omp parallel num_threads(nth)
    {
      const int tid = ndf__thread_id(), nt = nth;
      int32_t *m = bufs[tid], *mk = m + p->nx;
      for (int64_t ps = tid; ps < S; ps += nt) {
        const int64_t s = dir > 0 ? ps : S - 1 - ps;
        for (int64_t i = 0; i < R; i++) {
          if (ps > 0 && nt > 1) {
            const int64_t need = i + p->ahead + 1 < R ? i + p->ahead + 1 : R;
            for (int spins = 0; __atomic_load_n(&prog[ps - 1], __ATOMIC_ACQUIRE) < need; spins++) cdt_relax(spins);
          }
          const int64_t j = dir > 0 ? i : R - 1 - i;
          cdt_row(p, dt, ft, s * R + j, dir, m, mk);
          if (nt > 1) __atomic_store_n(&prog[ps], (int)(i + 1), __ATOMIC_RELEASE);
        }
      }
    }
  }
}

/* dt = CDT_FAR where image img of the input is non-zero, else 0; ft = the voxel's index. */
static void cdt_read(const ndf_array *in, const dist_call *c, int64_t img, int32_t *dt, int32_t *ft, int nth) {
  const int64_t nx = c->sshape[c->nsp - 1], nrows = c->npix / nx, sx = in->strides[in->ndim - 1];
#pragma omp parallel for num_threads(nth) schedule(static)
  for (int64_t r = 0; r < nrows; r++) {
    const int64_t off = row_offset(in, c->nb, c->nb, c->nsp, img, r);
    int32_t *o = dt + r * nx;
#define CDT_READ(T)                                                             \
  {                                                                             \
    const T *q = (const T *)in->data + off;                                     \
    for (int64_t x = 0; x < nx; x++) o[x] = q[x * sx] != 0 ? CDT_FAR : 0;       \
  }                                                                             \
  break;
    switch (in->dtype) {
      case NDF_BOOL: case NDF_UINT8: CDT_READ(uint8_t)
      case NDF_INT8: CDT_READ(int8_t)
      case NDF_UINT16: CDT_READ(uint16_t)
      case NDF_INT16: CDT_READ(int16_t)
      case NDF_UINT32: CDT_READ(uint32_t)
      case NDF_INT32: CDT_READ(int32_t)
      case NDF_INT64: case NDF_UINT64: CDT_READ(uint64_t)
      case NDF_FLOAT32: CDT_READ(float)
      case NDF_FLOAT64: CDT_READ(double)
      default: break;
    }
#undef CDT_READ
    if (ft)
      for (int64_t x = 0; x < nx; x++) ft[r * nx + x] = (int32_t)(r * nx + x);
  }
}

/* Writes image img's distances, CDT_FAR as scipy's -1. */
static void cdt_write(const ndf_array *out, const dist_call *c, int64_t img, const int32_t *dt, int nth) {
  const int64_t nx = c->sshape[c->nsp - 1], nrows = c->npix / nx, sx = out->strides[out->ndim - 1];
#pragma omp parallel for num_threads(nth) schedule(static)
  for (int64_t r = 0; r < nrows; r++) {
    int32_t *o = (int32_t *)out->data + row_offset(out, c->nb, c->nb, c->nsp, img, r);
    const int32_t *v = dt + r * nx;
    for (int64_t x = 0; x < nx; x++) o[x * sx] = v[x] == CDT_FAR ? -1 : v[x];
  }
}

/* One image: read, both passes, write. */
static void cdt_one(const cdt_plan *p, const dist_call *c, const ndf_array *in, ndf_array *dist, ndf_array *idx,
                    int64_t img, void *buf, void **row_bufs, int nth, int *prog) {
  int32_t *dt = buf, *ft = idx ? dt + c->npix : NULL;
  cdt_read(in, c, img, dt, ft, nth);
  cdt_image(p, dt, ft, nth, row_bufs, prog);
  if (dist) cdt_write(dist, c, img, dt, nth);
  if (idx) write_indices(idx, c, img, ft);
}

static ndf_status cdt_cpu(ndf_ctx *ctx, const dist_call *c, const ndf_array *in, ndf_array *dist, ndf_array *idx) {
  const int nsp = c->nsp;
  const int64_t N = c->npix, nx = c->sshape[nsp - 1];
  int64_t sn = 1;
  for (int d = 0; d < nsp; d++) sn *= 3;
  cdt_plan p;
  memset(&p, 0, sizeof p);
  p.nsp = nsp;
  p.sh = c->sshape;
  p.nx = nx;
  p.nrows = N / nx;
  p.taps = malloc((size_t)(sn / 2 + 1) * sizeof *p.taps);
  const int64_t nimg = c->nimg;
  const int nth = ndf__cpu_threads(ctx);
  /* several images: one per thread; one image: its slices pipelined on every thread */
  const int per_image = nimg >= 2 && nth >= 2;
  const int nbuf = per_image ? (nimg < nth ? (int)nimg : nth) : 1;
  void **img_bufs = ndf__thread_buffers(nbuf, (size_t)N * (idx ? 2 : 1) * sizeof(int32_t));
  void **row_bufs = ndf__thread_buffers(nth, (size_t)nx * 2 * sizeof(int32_t));
  int *prog = malloc((size_t)c->sshape[0] * sizeof *prog);
  ndf_status s = NDF_OK;
  if (!p.taps || !img_bufs || !row_bufs || !prog) {
    s = ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", c->name);
    goto done;
  }
  int64_t rowstride[NDF_MAX_SPATIAL];
  {
    int64_t m = 1;
    for (int d = nsp - 2; d >= 0; d--) {
      rowstride[d] = m;
      m *= c->sshape[d];
    }
  }
  /* the structure's entries before the centre in raster order, in that order; (0, ..., 0, -1) is the last */
  for (int64_t k = 0; k < sn / 2; k++) {
    if (!c->structure[k]) continue;
    int32_t t[NDF_MAX_SPATIAL];
    int64_t r = k;
    for (int d = nsp - 1; d >= 0; d--) {
      t[d] = (int32_t)(r % 3) - 1;
      r /= 3;
    }
    if (k == sn / 2 - 1) {
      p.xtap = 1;
      continue;
    }
    cdt_tap *tp = &p.taps[p.ntaps++];
    tp->dx = t[nsp - 1];
    tp->drow = 0;
    for (int d = 0; d < nsp - 1; d++) {
      tp->off[d] = t[d];
      tp->drow += (int64_t)t[d] * rowstride[d];
    }
    if (nsp >= 3 && t[0] == -1 && tp->drow + rowstride[0] > p.ahead) p.ahead = tp->drow + rowstride[0];
  }
  if (per_image) {
#pragma omp parallel for num_threads(nbuf) schedule(dynamic, 1)
    for (int64_t img = 0; img < nimg; img++) {
      const int t = ndf__thread_id();
      cdt_one(&p, c, in, dist, idx, img, img_bufs[t], row_bufs + t, 1, prog);
    }
  } else {
    for (int64_t img = 0; img < nimg; img++) cdt_one(&p, c, in, dist, idx, img, img_bufs[0], row_bufs, nth, prog);
  }
done:
  ndf__thread_buffers_free(img_bufs, nbuf);
  ndf__thread_buffers_free(row_bufs, nth);
  free(prog);
  free(p.taps);
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

/* A distance transform; with warm, its CUDA path's kernels are compiled instead (ndf_cache_warm_distance). */
static ndf_status run(ndf_ctx *ctx, dist_op op, const char *name, const ndf_array *in, ndf_array *dist,
                      ndf_array *idx, const ndf_distance_options *opt, ndf__warm *warm) {
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
  const int cuda = in->device == NDF_DEVICE_CUDA || warm;
  switch (op) {
    case OP_EDT:
      s = cuda ? ndf__edt_cuda(ctx, name, in, dist, idx, c.nb, c.sampling, warm) : edt_cpu(ctx, &c, in, dist, idx);
      break;
    case OP_CDT:
      if (cuda) {
        const int chess = cdt_cuda_metric(&c);
        s = chess < 0 ? ndf__error(ctx, NDF_ENOTSUP, "%s: on CUDA arrays the metric must be taxicab (cityblock, "
                                   "manhattan; generate_binary_structure(rank, 1)) or chessboard "
                                   "(generate_binary_structure(rank, rank)); other metric structures run on the "
                                   "CPU backend only", name)
                      : ndf__cdt_cuda(ctx, name, in, dist, c.nb, chess, warm);
      } else {
        s = cdt_cpu(ctx, &c, in, dist, idx);
      }
      break;
    case OP_BF:
      s = cuda ? ndf__bf_cuda(ctx, name, in, dist, idx, c.nb, (int)c.metric, c.has_sampling, c.sampling, warm)
               : bf_cpu(ctx, &c, in, dist, idx);
      break;
  }
  free(c.structure);
  return s;
}

ndf_status ndf_distance_transform_edt(ndf_ctx *ctx, const ndf_array *input, ndf_array *distances, ndf_array *indices,
                                      const ndf_distance_options *opt) {
  return run(ctx, OP_EDT, "ndf_distance_transform_edt", input, distances, indices, opt, NULL);
}

ndf_status ndf_distance_transform_cdt(ndf_ctx *ctx, const ndf_array *input, ndf_array *distances, ndf_array *indices,
                                      const ndf_distance_options *opt) {
  return run(ctx, OP_CDT, "ndf_distance_transform_cdt", input, distances, indices, opt, NULL);
}

ndf_status ndf_distance_transform_bf(ndf_ctx *ctx, const ndf_array *input, ndf_array *distances, ndf_array *indices,
                                     const ndf_distance_options *opt) {
  return run(ctx, OP_BF, "ndf_distance_transform_bf", input, distances, indices, opt, NULL);
}

ndf_status ndf_cache_warm_distance(ndf_ctx *ctx, const char *arch, const char *op, ndf_dtype dtype, int ndim,
                                   const ndf_distance_options *opt, ndf_dtype distances_dtype, int with_indices,
                                   int *compiled) {
  static const char *name = "ndf_cache_warm_distance";
  ndf_status s = ndf__warm_check(ctx, name, arch, dtype, ndim, compiled);
  if (s != NDF_OK) return s;
  dist_op which;
  if (op && !strcmp(op, "distance_transform_edt")) which = OP_EDT;
  else if (op && !strcmp(op, "distance_transform_cdt")) which = OP_CDT;
  else if (op && !strcmp(op, "distance_transform_bf")) which = OP_BF;
  else
    return ndf__argerror(ctx, name, "op", "unknown op '%s' (distance_transform_edt, distance_transform_cdt, "
                         "distance_transform_bf)", op ? op : "(null)");
  if (!opt) return ndf__argerror(ctx, name, "options", "NULL");
  if (ndim > NDF_MAX_NDIM - 1) with_indices = 0; /* the call would reject the indices' rank */
  ndf_array in, dist, idx;
  ndf__warm_array(&in, 0, dtype, ndim);
  ndf__warm_array(&dist, 1, distances_dtype, ndim);
  if (with_indices) { /* batch + (spatial rank,) + spatial */
    const int nb = opt->batch_dims >= 0 && opt->batch_dims < ndim ? opt->batch_dims : 0;
    int64_t shape[NDF_MAX_NDIM];
    for (int d = 0; d < nb; d++) shape[d] = 64;
    shape[nb] = ndim - nb;
    for (int d = nb; d < ndim; d++) shape[d + 1] = 64;
    ndf__warm_array(&idx, 2, NDF_INT32, 1);
    ndf_array_init(&idx, idx.data, NDF_DEVICE_CPU, NDF_INT32, ndim + 1, shape);
  }
  ndf__warm w = {arch, 0};
  s = run(ctx, which, name, &in, &dist, with_indices ? &idx : NULL, opt, &w);
  if (compiled) *compiled = w.compiled;
  return s;
}
