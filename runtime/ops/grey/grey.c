/*
 * grey.c -- grey erosion and dilation: validation, scipy's argument
 * conventions, and dispatch to the CPU or CUDA backend.
 *
 * scipy.ndimage (_morphology.py, _filters.py:_min_or_max_filter) defines:
 *   erosion   out[x] = min_k in[x + k - (s//2 + o)]  (- structure[k])
 *   dilation  = the maximum filter with footprint and structure reflected on
 *               every axis and origin o -> -o - (1 if s is even else 0).
 * A flat element that is a full box (size=, or an all-true footprint, no
 * structure) is separable; on such size-1 axes scipy ignores the origin.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grey/grey.h"
#include "jit.h"
#include "tune.h"

void ndf_grey_options_init(ndf_grey_options *opt) {
  if (!opt) return;
  memset(opt, 0, sizeof *opt);
  opt->mode = NDF_MODE_REFLECT;
  opt->nan_policy = NDF_NAN_PROPAGATE;
}

static const char *algo_names[NDF_GREY_ALGORITHM_COUNT] = {"auto", "direct", "separable", "vhgw", "decomposed"};

const char *ndf_grey_algorithm_name(ndf_grey_algorithm a) {
  return ((unsigned)a < NDF_GREY_ALGORITHM_COUNT) ? algo_names[a] : NULL;
}

ndf_status ndf_grey_algorithm_from_name(const char *name, ndf_grey_algorithm *out) {
  if (!name || !out) return ndf__error(NULL, NDF_EINVAL, "ndf_grey_algorithm_from_name: NULL argument");
  for (int i = 0; i < NDF_GREY_ALGORITHM_COUNT; i++)
    if (strcmp(name, algo_names[i]) == 0) { *out = (ndf_grey_algorithm)i; return NDF_OK; }
  return ndf__error(NULL, NDF_EINVAL,
                    "ndf_grey_algorithm_from_name: unknown algorithm '%s' (expected auto, direct, separable, vhgw "
                    "or decomposed)", name);
}

int32_t *ndf__grey_geom_taps_copy(const ndf__grey_geom *g) {
  const int nsp = g->nsp;
  int32_t *t = malloc((size_t)(g->ntaps > 0 ? g->ntaps : 1) * nsp * sizeof *t);
  if (!t) return NULL;
  if (!g->is_box) {
    if (g->ntaps > 0) memcpy(t, g->taps, (size_t)g->ntaps * nsp * sizeof *t);
    return t;
  }
  for (int64_t k = 0; k < g->ntaps; k++) {
    int64_t r = k;
    for (int d = nsp - 1; d >= 0; d--) {
      t[k * nsp + d] = (int32_t)(g->lo[d] + r % g->box[d]);
      r /= g->box[d];
    }
  }
  return t;
}

void ndf__grey_geom_free(ndf__grey_geom *g) {
  if (g->step) {
    ndf__grey_geom_free(g->step);
    free(g->step);
    g->step = NULL;
  }
  free(g->taps);
  free(g->w_first);
  free(g->w_cast);
  g->taps = NULL;
  g->w_first = g->w_cast = NULL;
}

/* Reads element i (raster order) of a host array of any dtype and strides as a double. */
static double host_value(const ndf_array *a, int64_t i) { return ndf__get_f64(a, ndf__offset_of(a, i)); }

/* Checks a structuring-element array: on the host, one axis per spatial axis. */
static ndf_status check_element(ndf_ctx *ctx, const char *name, const char *arg, const ndf_array *a, int nsp) {
  if (a->device != NDF_DEVICE_CPU)
    return ndf__argerror(ctx, name, arg, "must be a CPU (host) array");
  if (!ndf_dtype_size(a->dtype)) return ndf__argerror(ctx, name, arg, "unknown dtype %d", (int)a->dtype);
  if (a->ndim != nsp)
    return ndf__argerror(ctx, name, arg, "rank %d does not match the %d spatial axes of the input", a->ndim, nsp);
  for (int d = 0; d < a->ndim; d++)
    if (a->shape[d] < 1)
      return ndf__argerror(ctx, name, arg, "shape[%d]=%lld is empty", d, (long long)a->shape[d]);
  ndf_status s = ndf__check_array(ctx, name, arg, a, NULL);
  if (s != NDF_OK) return s;
  if (!a->data) return ndf__argerror(ctx, name, arg, "NULL data");
  return NDF_OK;
}

/* Valid user origins for an element axis of size s, as scipy checks them. */
static void origin_range(ndf__minmax op, int64_t s, int64_t *lo, int64_t *hi) {
  if (op == NDF__MIN) {
    *lo = -(s / 2);
    *hi = (s - 1) / 2;
  } else { /* o' = -o - even must lie in [-(s/2), (s-1)/2] */
    int64_t even = (s % 2 == 0);
    *lo = -((s - 1) / 2) - even;
    *hi = s / 2 - even;
  }
}

static ndf_status check_origin(ndf_ctx *ctx, const char *name, ndf__minmax op, int d, int64_t s, int64_t o) {
  int64_t lo, hi;
  origin_range(op, s, &lo, &hi);
  if (o < lo || o > hi)
    return ndf__argerror(ctx, name, "origin", "origin[%d]=%lld is outside the element of size %lld (valid %lld..%lld)",
                         d, (long long)o, (long long)s, (long long)lo, (long long)hi);
  return NDF_OK;
}

/* The c of a footprint equal to iterate_structure(generate_binary_structure(nsp, c), k), k >= 1, or 0.
 * That footprint has extent 2k+1 on every axis and holds exactly the offsets
 * d from its centre with |d|_1 <= c k (|d|_inf <= k holds inside it). */
static int iterated_structure(const ndf_array *fp, const int64_t *es, int nsp, int64_t *kout) {
  const int64_t k = (es[0] - 1) / 2;
  if (k < 1 || es[0] != 2 * k + 1) return 0;
  int64_t count = 1;
  for (int d = 0; d < nsp; d++) {
    if (es[d] != es[0]) return 0;
    count *= es[d];
  }
  int64_t maxl1 = -1;
  for (int pass = 0; pass < 2; pass++) {
    for (int64_t i = 0; i < count; i++) {
      int64_t r = i, l1 = 0;
      for (int d = nsp - 1; d >= 0; d--) {
        int64_t c = r % es[d] - k;
        r /= es[d];
        l1 += c < 0 ? -c : c;
      }
      const int in = host_value(fp, i) != 0;
      if (pass == 0 && in && l1 > maxl1) maxl1 = l1;
      if (pass == 1 && in != (l1 <= maxl1)) return 0;
    }
  }
  if (maxl1 % k != 0 || maxl1 / k < 1 || maxl1 / k > nsp) return 0;
  *kout = k;
  return (int)(maxl1 / k);
}

/* Taps of the 3^nsp element generate_binary_structure(nsp, c). */
static int64_t small_structure_taps(int nsp, int c) {
  int64_t n = 0, count = 1;
  for (int d = 0; d < nsp; d++) count *= 3;
  for (int64_t i = 0; i < count; i++) {
    int64_t r = i, l1 = 0;
    for (int d = 0; d < nsp; d++, r /= 3) l1 += r % 3 != 1;
    n += l1 <= c;
  }
  return n;
}

/* g->step = the element generate_binary_structure(nsp, c), origin 0, run
 * g->nsteps = k times (the caller has checked that this is exact). */
static ndf_status prepare_decomposed(ndf_ctx *ctx, const char *name, ndf__minmax op, ndf_dtype dtype, int ndim,
                                     const int64_t *shape, const ndf_grey_options *opt, int c, int64_t k,
                                     ndf__grey_geom *g) {
  const int nsp = g->nsp;
  uint8_t mask[6561]; /* 3^NDF_MAX_SPATIAL */
  int64_t eshape[NDF_MAX_SPATIAL], count = 1;
  for (int d = 0; d < nsp; d++) { eshape[d] = 3; count *= 3; }
  for (int64_t i = 0; i < count; i++) {
    int64_t r = i, l1 = 0;
    for (int d = 0; d < nsp; d++, r /= 3) l1 += r % 3 != 1;
    mask[i] = l1 <= c;
  }
  ndf_array fa;
  ndf_array_init(&fa, mask, NDF_DEVICE_CPU, NDF_UINT8, nsp, eshape);
  ndf_grey_options so = *opt;
  so.nsize = 0;
  so.footprint = &fa;
  so.structure = NULL;
  so.norigin = 0;
  so.algorithm = NDF_GREY_AUTO;
  g->step = calloc(1, sizeof *g->step);
  if (!g->step) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory for the element", name);
  ndf_status s = ndf__grey_prepare(ctx, name, op, dtype, ndim, shape, &so, g->step);
  if (s != NDF_OK) {
    free(g->step);
    g->step = NULL;
    return s;
  }
  g->algo = NDF_GREY_DECOMPOSED;
  g->nsteps = k;
  return NDF_OK;
}

ndf_status ndf__grey_prepare(ndf_ctx *ctx, const char *name, ndf__minmax op, ndf_dtype dtype, int ndim,
                             const int64_t *shape, const ndf_grey_options *opt, ndf__grey_geom *g) {
  memset(g, 0, sizeof *g);
  g->op = op;
  if (opt->batch_dims < 0 || opt->batch_dims >= ndim)
    return ndf__argerror(ctx, name, "batch_dims", "%d must be in 0..%d for an input of rank %d", opt->batch_dims,
                         ndim - 1, ndim);
  const int nsp = ndim - opt->batch_dims;
  if (nsp > NDF_MAX_SPATIAL)
    return ndf__argerror(ctx, name, "batch_dims", "%d spatial axes; at most %d are supported", nsp, NDF_MAX_SPATIAL);
  g->nsp = nsp;
  g->batch_dims = opt->batch_dims;
  if ((unsigned)opt->mode >= NDF_MODE_COUNT) return ndf__argerror(ctx, name, "mode", "unknown mode %d", (int)opt->mode);
  g->mode = opt->mode;
  if (opt->nan_policy != NDF_NAN_PROPAGATE)
    return ndf__argerror(ctx, name, "nan_policy", "unknown policy %d", (int)opt->nan_policy);
  if ((unsigned)opt->algorithm >= NDF_GREY_ALGORITHM_COUNT)
    return ndf__argerror(ctx, name, "algorithm", "unknown algorithm %d", (int)opt->algorithm);
  const ndf_grey_algorithm algo = opt->algorithm;
  if (!ndf__dtype_is_float(dtype)) {
    double lo, hi;
    ndf__dtype_range(dtype, &lo, &hi);
    if (!isfinite(opt->cval) || trunc(opt->cval) < lo || trunc(opt->cval) > hi)
      return ndf__argerror(ctx, name, "cval", "%g is not representable as %s", opt->cval, ndf_dtype_name(dtype));
  }
  g->cval = ndf__convert_value(dtype, opt->cval);

  const ndf_array *fp = opt->footprint, *st = opt->structure;
  if (opt->nsize == 0 && !fp && !st)
    return ndf__argerror(ctx, name, "size", "one of size, footprint or structure must be given");
  /* As in scipy, a footprint or structure wins and size is then ignored. */
  const int use_size = opt->nsize != 0 && !fp && !st;
  if (use_size && opt->nsize != 1 && opt->nsize != nsp)
    return ndf__argerror(ctx, name, "size", "%d values for %d spatial axes (give 1 or %d)", opt->nsize, nsp, nsp);
  int64_t size[NDF_MAX_SPATIAL];
  for (int d = 0; d < nsp && use_size; d++) {
    size[d] = opt->size[opt->nsize == 1 ? 0 : d];
    if (size[d] < 1) return ndf__argerror(ctx, name, "size", "size[%d]=%lld must be >= 1", d, (long long)size[d]);
  }
  if (opt->norigin != 0 && opt->norigin != 1 && opt->norigin != nsp)
    return ndf__argerror(ctx, name, "origin", "%d values for %d spatial axes (give 1 or %d)", opt->norigin, nsp, nsp);
  int64_t origin[NDF_MAX_SPATIAL];
  for (int d = 0; d < nsp; d++) origin[d] = opt->norigin ? opt->origin[opt->norigin == 1 ? 0 : d] : 0;

  ndf_status s;
  if (fp && (s = check_element(ctx, name, "footprint", fp, nsp)) != NDF_OK) return s;
  if (st && (s = check_element(ctx, name, "structure", st, nsp)) != NDF_OK) return s;
  if (fp && st)
    for (int d = 0; d < nsp; d++)
      if (fp->shape[d] != st->shape[d])
        return ndf__argerror(ctx, name, "structure", "shape[%d]=%lld differs from footprint shape %lld", d,
                             (long long)st->shape[d], (long long)fp->shape[d]);

  /* Element shape, and whether it is a flat full box. */
  int64_t es[NDF_MAX_SPATIAL];
  int64_t count = 1;
  for (int d = 0; d < nsp; d++) {
    es[d] = fp ? fp->shape[d] : st ? st->shape[d] : size[d];
    if (es[d] > (int64_t)1 << 30) return ndf__argerror(ctx, name, fp ? "footprint" : "size", "axis %d is too large", d);
    count *= es[d];
    if (count > (int64_t)1 << 26) return ndf__argerror(ctx, name, fp ? "footprint" : "size", "element has more than 2^26 taps");
  }
  int64_t active = count;
  if (fp) {
    active = 0;
    for (int64_t i = 0; i < count; i++) active += host_value(fp, i) != 0;
    if (active == 0) return ndf__argerror(ctx, name, "footprint", "all-zero footprint is not supported");
  }
  if (st && !ndf__dtype_is_float(dtype)) {
    for (int64_t i = 0; i < count; i++)
      if (!isfinite(host_value(st, i)))
        return ndf__argerror(ctx, name, "structure", "non-finite value for an integer input");
  }
  const int box_like = !st && active == count;
  g->is_box = box_like && algo != NDF_GREY_DIRECT && algo != NDF_GREY_DECOMPOSED;
  if ((algo == NDF_GREY_SEPARABLE || algo == NDF_GREY_VHGW) && !box_like)
    return ndf__argerror(ctx, name, "algorithm", "'%s' is exact only for a flat box (no structure, no zero in the "
                         "footprint); use direct, decomposed or auto", ndf_grey_algorithm_name(algo));
  /* scipy ignores the origin of size-1 axes of a box (its separable path):
   * the tap table of a box keeps that meaning. */
  if (box_like)
    for (int d = 0; d < nsp; d++)
      if (es[d] == 1) origin[d] = 0;

  /* Iterated structures (diamonds, crosses, boxes) with origin 0: k steps of
   * the small element equal the big one in every mode (ADR 0008). */
  int zero_origin = 1;
  for (int d = 0; d < nsp; d++) zero_origin &= origin[d] == 0;
  int64_t kdec = 0;
  int cdec = 0;
  if (!st && zero_origin && (algo == NDF_GREY_DECOMPOSED || (algo == NDF_GREY_AUTO && !box_like && fp)))
    cdec = fp ? iterated_structure(fp, es, nsp, &kdec) : 0;
  if (!cdec && !st && zero_origin && !fp && algo == NDF_GREY_DECOMPOSED && es[0] >= 3 && es[0] % 2 == 1) {
    cdec = nsp; /* size=(2k+1, ..., 2k+1) */
    kdec = (es[0] - 1) / 2;
    for (int d = 0; d < nsp; d++) cdec = es[d] == es[0] ? cdec : 0;
  }
  if (algo == NDF_GREY_DECOMPOSED && !cdec)
    return ndf__argerror(ctx, name, "algorithm", "'decomposed' needs a flat footprint equal to "
                         "iterate_structure(generate_binary_structure(%d, c), k) and origin 0", nsp);
  const int decompose = cdec && (algo == NDF_GREY_DECOMPOSED || kdec * small_structure_taps(nsp, cdec) < active);
  g->algo = g->is_box ? algo : NDF_GREY_DIRECT;

  /* Dilation: origin -> -origin - (even size).  check_origin refuses INT64_MIN below (it lies
   * outside every footprint), or the axis ignores its origin; it is not negated here. */
  int64_t o2[NDF_MAX_SPATIAL];
  for (int d = 0; d < nsp; d++)
    o2[d] = op == NDF__MAX && origin[d] != INT64_MIN ? -origin[d] - (es[d] % 2 == 0) : origin[d];

  if (g->is_box) {
    for (int d = 0; d < nsp; d++) {
      g->box[d] = es[d];
      if (es[d] == 1) continue; /* scipy's separable path skips size-1 axes, origin included */
      if ((s = check_origin(ctx, name, op, d, es[d], origin[d])) != NDF_OK) return s;
      g->lo[d] = -(es[d] / 2 + o2[d]);
      g->rad_lo[d] = (int32_t)g->lo[d];
      g->rad_hi[d] = (int32_t)(g->lo[d] + es[d] - 1);
    }
    g->ntaps = count;
    return NDF_OK;
  }
  for (int d = 0; d < nsp; d++)
    if ((s = check_origin(ctx, name, op, d, es[d], origin[d])) != NDF_OK) return s;

  g->ntaps = active;
  g->taps = malloc((size_t)active * nsp * sizeof *g->taps);
  g->has_weights = st != NULL;
  if (st) {
    g->w_first = malloc((size_t)active * sizeof(double));
    g->w_cast = malloc((size_t)active * sizeof(double));
  }
  if (!g->taps || (st && (!g->w_first || !g->w_cast))) {
    ndf__grey_geom_free(g);
    return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory for the element", name);
  }
  for (int d = 0; d < nsp; d++) {
    g->rad_lo[d] = INT32_MAX;
    g->rad_hi[d] = INT32_MIN;
  }
  /* Taps in raster order of the (for dilation: reflected) element. */
  int64_t k = 0;
  for (int64_t i = 0; i < count; i++) {
    int64_t c[NDF_MAX_SPATIAL], r = i, src = 0;
    for (int d = nsp - 1; d >= 0; d--) {
      c[d] = r % es[d];
      r /= es[d];
    }
    /* Index of the element value that lands at c: reflected for dilation. */
    for (int d = 0; d < nsp; d++) src = src * es[d] + (op == NDF__MAX ? es[d] - 1 - c[d] : c[d]);
    if (fp && host_value(fp, src) == 0) continue;
    for (int d = 0; d < nsp; d++) {
      int32_t off = (int32_t)(c[d] - (es[d] / 2 + o2[d]));
      g->taps[k * nsp + d] = off;
      if (off < g->rad_lo[d]) g->rad_lo[d] = off;
      if (off > g->rad_hi[d]) g->rad_hi[d] = off;
    }
    if (st) {
      double w = host_value(st, src);
      w = op == NDF__MIN ? -w : w;
      g->w_first[k] = w;
      g->w_cast[k] = dtype == NDF_FLOAT64 ? w : dtype == NDF_FLOAT32 ? (double)(float)w : trunc(w);
    }
    k++;
  }
  /* A decomposed element keeps its tap table: the rank filters and binary
   * morphology read the taps of the geometry (and run ndf__grey_cpu on it,
   * which is the direct path); only ndf__grey_run takes the k steps. */
  if (!decompose) return NDF_OK;
  if ((s = prepare_decomposed(ctx, name, op, dtype, ndim, shape, opt, cdec, kdec, g)) != NDF_OK) ndf__grey_geom_free(g);
  return s;
}

ndf_status ndf__grey_check(ndf_ctx *ctx, const char *name, const ndf_array *in, const ndf_array *out,
                           const ndf_grey_options *opt) {
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  ndf__clear_error(ctx);
  ndf_status s = ndf__check_filter_arrays(ctx, name, in, out);
  if (s != NDF_OK) return s;
  if (!opt) return ndf__argerror(ctx, name, "options", "NULL");
  return NDF_OK;
}

static ndf_status run_one(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out,
                          const ndf__grey_geom *g) {
  return in->device == NDF_DEVICE_CPU ? ndf__grey_cpu(ctx, in, out, g) : ndf__grey_cuda(ctx, name, in, out, g);
}

/* A decomposed element: nsteps steps of the small element, ping-ponging
 * between out and one contiguous temporary so that the last step writes out. */
static ndf_status run_decomposed(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out,
                                 const ndf__grey_geom *g) {
  if (g->nsteps == 1) return run_one(ctx, name, in, out, g->step);
  const size_t bytes = (size_t)ndf_array_size(in) * ndf_dtype_size(in->dtype);
  ndf_array tmp;
  ndf_array_init(&tmp, NULL, in->device, in->dtype, in->ndim, in->shape);
  tmp.device_id = in->device_id;
  CUdeviceptr dp = 0;
  ndf_status s = NDF_OK;
  if (in->device == NDF_DEVICE_CPU) {
    if (!(tmp.data = malloc(bytes))) return ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory for a temporary", name);
  } else {
    if ((s = ndf__ctx_bind(ctx)) != NDF_OK || (s = ndf__scratch_alloc(ctx, bytes, &dp)) != NDF_OK) return s;
    tmp.data = (void *)(uintptr_t)dp;
  }
  const ndf_array *src = in;
  for (int64_t i = 0; i < g->nsteps && s == NDF_OK; i++) {
    ndf_array *dst = (g->nsteps - 1 - i) % 2 == 0 ? out : &tmp;
    s = run_one(ctx, name, src, dst, g->step);
    src = dst;
  }
  if (in->device == NDF_DEVICE_CPU) free(tmp.data);
  else ndf__scratch_free(ctx, dp);
  return s;
}

ndf_status ndf__grey_run(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out,
                         const ndf__grey_geom *g) {
  if (ndf_array_size(in) == 0) return NDF_OK;
  if (g->algo == NDF_GREY_DECOMPOSED) return run_decomposed(ctx, name, in, out, g);
  return run_one(ctx, name, in, out, g);
}

static ndf_status grey_call(ndf_ctx *ctx, const char *name, ndf__minmax op, const ndf_array *in, ndf_array *out,
                            const ndf_grey_options *opt) {
  ndf_status s = ndf__grey_check(ctx, name, in, out, opt);
  if (s != NDF_OK) return s;
  ndf__grey_geom g;
  if ((s = ndf__grey_prepare(ctx, name, op, in->dtype, in->ndim, in->shape, opt, &g)) != NDF_OK) return s;
  s = ndf__grey_run(ctx, name, in, out, &g);
  ndf__grey_geom_free(&g);
  return s;
}
/* The call with the options' own tunables (opt->tune) in force. */
static ndf_status grey(ndf_ctx *ctx, const char *name, ndf__minmax op, const ndf_array *in, ndf_array *out,
                       const ndf_grey_options *opt) {
  ndf__tune_call tc;
  ndf_status s = ndf__tune_call_begin(ctx, name, ctx && opt ? opt->tune : NULL, &tc);
  if (s != NDF_OK) return s;
  s = grey_call(ctx, name, op, in, out, opt);
  ndf__tune_call_end(&tc);
  return s;
}

ndf_status ndf_grey_erosion(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, const ndf_grey_options *opt) {
  return grey(ctx, "ndf_grey_erosion", NDF__MIN, input, output, opt);
}

ndf_status ndf_grey_dilation(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, const ndf_grey_options *opt) {
  return grey(ctx, "ndf_grey_dilation", NDF__MAX, input, output, opt);
}

ndf_status ndf_cache_warm(ndf_ctx *ctx, const char *arch, const char *op, ndf_dtype dtype, int ndim,
                          const ndf_grey_options *opt, int *compiled) {
  static const char *name = "ndf_cache_warm";
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  ndf__clear_error(ctx);
  if (compiled) *compiled = 0;
  if (!arch || strncmp(arch, "sm_", 3) != 0 || atoi(arch + 3) < 50)
    return ndf__argerror(ctx, name, "arch", "'%s' is not an architecture like sm_90", arch ? arch : "(null)");
  if (!op) return ndf__argerror(ctx, name, "op", "NULL");
  int which = -1; /* an ndf__grey_op */
#define GREY_OP(id, op_name, short_name, fn, composite) if (strcmp(op, op_name) == 0) which = NDF__GREY_##id;
  NDF_OPS_GREY(GREY_OP)
#undef GREY_OP
  if (which < 0) {
#define GREY_NAME(id, op_name, short_name, fn, composite) op_name ", "
    static const char names[] = NDF_OPS_GREY(GREY_NAME);
#undef GREY_NAME
    return ndf__argerror(ctx, name, "op", "unknown op '%s' (%.*s)", op, (int)sizeof names - 3, names);
  }
  if (dtype == NDF_BOOL || !ndf_dtype_size(dtype)) return ndf__argerror(ctx, name, "dtype", "unsupported dtype %d", (int)dtype);
  if (ndim < 1 || ndim > NDF_MAX_NDIM) return ndf__argerror(ctx, name, "ndim", "%d is not in 1..%d", ndim, NDF_MAX_NDIM);
  if (!opt) return ndf__argerror(ctx, name, "options", "NULL");
  int64_t shape[NDF_MAX_NDIM];
  for (int d = 0; d < ndim; d++) shape[d] = 64;
  ndf__warm w = {arch, 0};
  ndf_status s;
  if (which == NDF__GREY_EROSION || which == NDF__GREY_DILATION) {
    ndf__grey_geom g;
    if ((s = ndf__grey_prepare(ctx, name, which == NDF__GREY_EROSION ? NDF__MIN : NDF__MAX, dtype, ndim, shape, opt,
                               &g)) != NDF_OK)
      return s;
    s = ndf__grey_warm_step(ctx, name, &g, dtype, ndim, -1, &w);
    ndf__grey_geom_free(&g);
  } else {
    s = ndf__grey_compose_warm(ctx, name, (ndf__grey_op)which, dtype, ndim, shape, opt, &w);
  }
  if (compiled) *compiled = w.compiled;
  return s;
}

ndf_status ndf__grey_warm_step(ndf_ctx *ctx, const char *name, const ndf__grey_geom *g, ndf_dtype dtype, int ndim,
                               int combine, ndf__warm *warm) {
  ndf__kernel_req reqs[16];
  int n = ndf__grey_cuda_requests(ctx, g, dtype, ndim, reqs, 15);
  if (combine >= 0) ndf__combine_request(&reqs[n++], combine, dtype);
  /* the step's kernels at once: the misses compile concurrently */
  const ndf__kernel_req *rp[16];
  CUfunction fns[16];
  for (int i = 0; i < n; i++) rp[i] = &reqs[i];
  return n > 0 ? ndf__jit_resolve_many(ctx, name, rp, n, warm, fns) : NDF_OK;
}
