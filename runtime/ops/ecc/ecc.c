/*
 * ecc.c -- exact Euler characteristic curves of the sublevel-set filtration
 * of 2-D/3-D images (V- and T-construction): validation, thresholds and the
 * CPU backend (docs/adr/0009-euler-characteristic-curves.md).
 *
 * chi(t) = sum over voxels v with f(v) <= t of c(v), where c(v) is the
 * alternating count of the cells v owns: every cell has exactly one owner,
 * the voxel that decides its filtration value, ties broken by (value, linear
 * index) -- V: the greatest of the cell's vertices, T: the least of the top
 * cells holding the face.  c(v) depends only on which of the 3^d - 1
 * neighbours v wins against; the generated tables (gen/ecc.lua) give it as a
 * sum of one looked-up share per orthant.  Each image's contributions go to a
 * histogram over the threshold bins (bin k: t_{k-1} < f <= t_k in the sorted
 * thresholds), and chi is its prefix sum.
 *
 * Neighbour rows are read into double buffers padded with NaN: every
 * comparison with NaN is false, which is "v loses" in the V test (a cell
 * reaching outside the image does not exist) and "v wins" in the T test (a
 * face on the image border has no other top cell).  That is why NaN input is
 * rejected up front.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <strings.h>

#include "ecc_tables.generated.h"
#include "ecc/ecc.h"

void ndf_ecc_options_init(ndf_ecc_options *opt) {
  if (!opt) return;
  memset(opt, 0, sizeof *opt);
  opt->construction = NDF_ECC_V;
  opt->nthresholds = 256;
}

ndf_status ndf_ecc_construction_from_name(const char *name, ndf_ecc_construction *out) {
  if (!name || !out)
    return ndf__error(NULL, NDF_EINVAL, "ndf_ecc_construction_from_name: bad argument '%s' (NULL)", name ? "out" : "name");
  if (!strcasecmp(name, "V")) *out = NDF_ECC_V;
  else if (!strcasecmp(name, "T")) *out = NDF_ECC_T;
  else
    return ndf__error(NULL, NDF_EINVAL, "ndf_ecc_construction_from_name: bad argument 'name' ('%s' is not V or T)", name);
  return NDF_OK;
}

const char *ndf_ecc_construction_name(ndf_ecc_construction c) {
  switch (c) {
    case NDF_ECC_V: return "V";
    case NDF_ECC_T: return "T";
  }
  return NULL;
}

/* ---- validation ------------------------------------------------------------------------------- */

typedef ndf__ecc_call ecc_call; /* internal.h: shared with ecc_cuda.c */

static const char *dname(ndf_dtype t) { return ndf_dtype_name(t) ? ndf_dtype_name(t) : "unknown"; }

/* Thresholds given as values (a host 1-D float array without NaN, no range)
 * or as nthresholds evenly spaced (2..2^30, over a finite lo <= hi when
 * has_range); *T gets their count.  Shared with the ECT (ect.c). */
ndf_status ndf__ecc_check_thresholds(ndf_ctx *ctx, const char *name, const ndf_array *v, int64_t nthresholds,
                                     int has_range, double range_lo, double range_hi, int64_t *T) {
  if (v) {
    if (v->device != NDF_DEVICE_CPU) return ndf__argerror(ctx, name, "values", "must be a CPU (host) array");
    if (v->dtype != NDF_FLOAT64 && v->dtype != NDF_FLOAT32)
      return ndf__argerror(ctx, name, "values", "dtype %s; thresholds are float64 or float32", dname(v->dtype));
    if (v->ndim != 1) return ndf__argerror(ctx, name, "values", "rank %d; thresholds are a 1-D array", v->ndim);
    if (v->shape[0] < 1) return ndf__argerror(ctx, name, "values", "no thresholds (shape[0]=%lld)", (long long)v->shape[0]);
    ndf_status s = ndf__check_array(ctx, name, "values", v, NULL);
    if (s != NDF_OK) return s;
    if (v->shape[0] > NDF_MAX_THRESHOLDS)
      return ndf__argerror(ctx, name, "values", "%lld thresholds are more than NDF_MAX_THRESHOLDS = 2^30",
                           (long long)v->shape[0]);
    if (!v->data) return ndf__argerror(ctx, name, "values", "NULL data");
    for (int64_t k = 0; k < v->shape[0]; k++)
      if (isnan(ndf__get_f64(v, k * v->strides[0])))
        return ndf__argerror(ctx, name, "values", "values[%lld] is NaN", (long long)k);
    if (has_range) return ndf__argerror(ctx, name, "has_range", "a range goes with nthresholds, not with values");
    *T = v->shape[0];
    return NDF_OK;
  }
  if (nthresholds < 2)
    return ndf__argerror(ctx, name, "nthresholds", "%lld; evenly spaced thresholds need at least 2 (give values for one)",
                         (long long)nthresholds);
  if (nthresholds > NDF_MAX_THRESHOLDS)
    return ndf__argerror(ctx, name, "nthresholds", "%lld is more than NDF_MAX_THRESHOLDS = 2^30", (long long)nthresholds);
  if (has_range && (!isfinite(range_lo) || !isfinite(range_hi) || !(range_lo <= range_hi)))
    return ndf__argerror(ctx, name, "range", "[%g, %g] must be finite with lo <= hi", range_lo, range_hi);
  *T = nthresholds;
  return NDF_OK;
}

/* Checks input, options and (when given) output. */
static ndf_status check_call(ndf_ctx *ctx, const char *name, const ndf_array *in, const ndf_array *out,
                             const ndf_ecc_options *opt, ecc_call *c) {
  memset(c, 0, sizeof *c);
  c->name = name;
  if (!in) return ndf__argerror(ctx, name, "input", "NULL");
  if (!opt) return ndf__argerror(ctx, name, "options", "NULL");
  if (in->dtype != NDF_FLOAT32 && in->dtype != NDF_FLOAT64 && in->dtype != NDF_UINT8 && in->dtype != NDF_UINT16)
    return ndf__argerror(ctx, name, "input", "dtype %s; the filtration takes float32, float64, uint8 or uint16",
                         dname(in->dtype));
  ndf_status cs = ndf__check_shape(ctx, name, in, opt->batch_dims);
  if (cs != NDF_OK) return cs;
  c->nb = opt->batch_dims;
  c->nsp = in->ndim - c->nb;
  if (c->nsp != 2 && c->nsp != 3)
    return ndf__argerror(ctx, name, "batch_dims", "leaves %d spatial axes; Euler characteristic curves take 2 or 3",
                         c->nsp);
  if (in->device != NDF_DEVICE_CPU && in->device != NDF_DEVICE_CUDA)
    return ndf__argerror(ctx, name, "input", "unknown device type %d", (int)in->device);
  if ((unsigned)opt->construction > NDF_ECC_T)
    return ndf__argerror(ctx, name, "construction", "unknown construction %d (NDF_ECC_V or NDF_ECC_T)",
                         (int)opt->construction);
  c->nimg = c->npix = 1;
  for (int d = 0; d < c->nb; d++) c->nimg *= in->shape[d];
  for (int d = 0; d < c->nsp; d++) {
    c->sshape[d] = in->shape[c->nb + d];
    c->npix *= c->sshape[d];
  }
  /* thresholds */
  ndf_status ts = ndf__ecc_check_thresholds(ctx, name, opt->values, opt->nthresholds, opt->has_range, opt->range_lo,
                                            opt->range_hi, &c->T);
  if (ts != NDF_OK) return ts;
  if (out) {
    if (out->dtype != NDF_INT64)
      return ndf__argerror(ctx, name, "output", "dtype %s; Euler characteristic curves are int64", dname(out->dtype));
    if (out->ndim != c->nb + 1)
      return ndf__argerror(ctx, name, "output", "rank %d; expected %d (the %d batch axes, then one of thresholds)",
                           out->ndim, c->nb + 1, c->nb);
    for (int d = 0; d <= c->nb; d++) {
      int64_t want = d < c->nb ? in->shape[d] : c->T;
      if (out->shape[d] != want)
        return ndf__argerror(ctx, name, "output", "shape[%d]=%lld; expected %lld (batch axes, then %lld thresholds)", d,
                             (long long)out->shape[d], (long long)want, (long long)c->T);
    }
    if ((cs = ndf__check_array(ctx, name, "output", out, NULL)) != NDF_OK) return cs;
    if (out->device != in->device || out->device_id != in->device_id)
      return ndf__argerror(ctx, name, "output", "lives on another device than the input");
  }
  if (in->device == NDF_DEVICE_CUDA) {
    ndf_status ds = ndf__check_device(ctx, name, in);
    if (ds != NDF_OK) return ds;
  }
  if (ndf_array_size(in) > 0 && !in->data) return ndf__argerror(ctx, name, "input", "NULL data");
  if (out && ndf_array_size(out) > 0) {
    if (!out->data) return ndf__argerror(ctx, name, "output", "NULL data");
    if (!ndf__layout_is_proper(out)) return ndf__argerror(ctx, name, "output", "its strides make elements overlap");
    if (ndf_array_size(in) > 0 && ndf__arrays_overlap(in, out))
      return ndf__argerror(ctx, name, "output", "overlaps the input");
  }
  return NDF_OK;
}

/* ---- host array access ---------------------------------------------------------------------- */

/* Reads n elements from off with stride st into dst[0..n) as double. */
void ndf__ecc_read_line(const ndf_array *a, int64_t off, int64_t st, int64_t n, double *dst) {
  switch (a->dtype) {
#define READ_LINE(T)                                             \
  {                                                              \
    const T *p = (const T *)a->data + off;                      \
    for (int64_t i = 0; i < n; i++) dst[i] = (double)p[i * st]; \
  }                                                              \
  break;
    case NDF_UINT8: READ_LINE(uint8_t)
    case NDF_UINT16: READ_LINE(uint16_t)
    case NDF_FLOAT32: READ_LINE(float)
    case NDF_FLOAT64: READ_LINE(double)
#undef READ_LINE
    default: break;
  }
}

/* One pass over the input: NaN check, min and max.  Returns the flat index of
 * a NaN or -1. */
static int64_t scan_input(ndf_ctx *ctx, const ndf_array *in, double *mn, double *mx, int *ok) {
  const int64_t nl = in->shape[in->ndim - 1], nrows = ndf_array_size(in) / nl;
  const int64_t sl = in->strides[in->ndim - 1];
  const int nth = ndf_array_size(in) < 65536 ? 1 : ndf__cpu_threads(ctx); /* small: one thread */
  double lo = INFINITY, hi = -INFINITY;
  int64_t nan_at = INT64_MAX;
  *ok = 1;
  double **bufs = (double **)ndf__thread_buffers(nth, (size_t)nl * sizeof(double));
  if (!bufs) {
    *ok = 0;
    return -1;
  }
#pragma omp parallel for num_threads(nth) schedule(static) reduction(min : lo, nan_at) reduction(max : hi)
  for (int64_t r = 0; r < nrows; r++) {
    double *b = bufs[ndf__thread_id()];
    ndf__ecc_read_line(in, ndf__lead_offset(in, in->ndim - 1, r), sl, nl, b);
    for (int64_t i = 0; i < nl; i++) {
      double v = b[i];
      if (isnan(v)) {
        if (r * nl + i < nan_at) nan_at = r * nl + i;
      } else {
        if (v < lo) lo = v;
        if (v > hi) hi = v;
      }
    }
  }
  ndf__thread_buffers_free((void **)bufs, nth);
  *mn = lo;
  *mx = hi;
  return nan_at == INT64_MAX ? -1 : nan_at;
}

/* ---- thresholds ------------------------------------------------------------------------------ */

static void fill_given_thresholds(const ecc_call *c, const ndf_ecc_options *opt, double *t);

/* Validates the input values (NaN) and fills the T thresholds. */
static ndf_status make_thresholds(ndf_ctx *ctx, const ecc_call *c, const ndf_array *in, const ndf_ecc_options *opt,
                                  double *t) {
  const int need_range = !opt->values && !opt->has_range;
  if (ndf_array_size(in) > 0 && (need_range || in->dtype == NDF_FLOAT32 || in->dtype == NDF_FLOAT64)) {
    double mn, mx;
    int ok = 1;
    int64_t nan_at;
    if (in->device == NDF_DEVICE_CUDA) {
      ndf_status s = ndf__ecc_cuda_scan(ctx, c->name, in, &mn, &mx, &nan_at);
      if (s != NDF_OK) return s;
    } else {
      nan_at = scan_input(ctx, in, &mn, &mx, &ok);
    }
    if (!ok) return ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", c->name);
    if (nan_at >= 0)
      return ndf__argerror(ctx, c->name, "input", "element %lld (C order) is NaN; the filtration needs ordered values",
                           (long long)nan_at);
    if (need_range && (!isfinite(mn) || !isfinite(mx)))
      return ndf__argerror(ctx, c->name, "input", "holds infinite values, so [min, max] gives no thresholds (give a "
                           "range or values)");
    if (need_range) {
      double lo = mn, hi = mx;
      for (int64_t k = 0; k < c->T; k++) t[k] = lo + (hi - lo) * (double)k / (double)(c->T - 1);
      t[c->T - 1] = hi;
      return NDF_OK;
    }
  }
  fill_given_thresholds(c, opt, t);
  return NDF_OK;
}

/* The thresholds that need no data: values, a range, or zeros (empty input). */
static void fill_given_thresholds(const ecc_call *c, const ndf_ecc_options *opt, double *t) {
  const int need_range = !opt->values && !opt->has_range;
  if (opt->values) {
    const ndf_array *v = opt->values;
    for (int64_t k = 0; k < c->T; k++) t[k] = ndf__get_f64(v, k * v->strides[0]);
  } else {
    double lo = need_range ? 0.0 : opt->range_lo, hi = need_range ? 0.0 : opt->range_hi;
    for (int64_t k = 0; k < c->T; k++) t[k] = lo + (hi - lo) * (double)k / (double)(c->T - 1);
    t[c->T - 1] = hi;
  }
}

/* ---- local contributions ---------------------------------------------------------------------- */

/* Bin of value v among sorted thresholds ts[0..T): the first k with v <= ts[k]; T if none. */
static inline int64_t bin_of(const double *ts, int64_t T, double v) {
  int64_t lo = 0, hi = T;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (v <= ts[mid]) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/* Win bit of v against a neighbour u whose offset is lexicographically
 * negative (neg = 1: u comes first in C order) or positive. */
static inline unsigned wins_v(double fv, double fu, int neg) { return neg ? fv >= fu : fv > fu; }
static inline unsigned wins_t(double fv, double fu, int neg) { return neg ? !(fu <= fv) : !(fu < fv); }

/* How a value finds its bin: evenly spaced thresholds give a first guess
 * that the exact comparisons with ts then correct. */
typedef struct binner {
  const double *ts;
  int64_t T;
  int uniform;
  double lo, inv_step;
} binner;

static inline int64_t bin_find(const binner *b, double v) {
  if (!b->uniform) return bin_of(b->ts, b->T, v);
  double g = ceil((v - b->lo) * b->inv_step);
  int64_t k = g <= 0 ? 0 : g >= (double)b->T ? b->T : (int64_t)g;
  while (k > 0 && v <= b->ts[k - 1]) k--;
  while (k < b->T && v > b->ts[k]) k++;
  return k;
}

/* The contribution of the voxel at x of the centre line: NSP and CONS are
 * constants in each instance, so the loops unroll over constant tables. */
#define ECC_CONTRIB(NSP, CONS)                                                                       \
  static inline int contrib_##NSP##CONS(const double *buf, int64_t W, int64_t x) {                  \
    enum { NNB = NSP == 2 ? 9 : 27, CENTRE = NNB / 2, NORTH = 1 << NSP, NJ = NORTH - 1 };           \
    const double fv = buf[(CENTRE / 3) * W + 1 + x];                                                \
    uint32_t w = 0;                                                                                 \
    _Pragma("GCC unroll 27") for (int t = 0; t < NNB; t++) {                                        \
      if (t == CENTRE) continue;                                                                    \
      const double fu = buf[(t / 3) * W + x + (t % 3)];                                             \
      w |= (uint32_t)(NDF_ECC_##CONS == NDF_ECC_V ? wins_v(fv, fu, t < CENTRE)                      \
                                                  : wins_t(fv, fu, t < CENTRE))                     \
           << t;                                                                                    \
    }                                                                                               \
    int sum = 0;                                                                                    \
    _Pragma("GCC unroll 8") for (int o = 0; o < NORTH; o++) {                                       \
      unsigned m = 0;                                                                               \
      _Pragma("GCC unroll 7") for (int j = 0; j < NJ; j++) m |= ((w >> ndf__ecc_gather##NSP[o][j]) & 1u) << j; \
      sum += ndf__ecc_lut##NSP##CONS[m];                                                            \
    }                                                                                               \
    return sum >> NSP; /* exact: sum is a multiple of 2^d */                                        \
  }
ECC_CONTRIB(2, V)
ECC_CONTRIB(2, T)
ECC_CONTRIB(3, V)
ECC_CONTRIB(3, T)

/* c(v) of the voxel at x of the centre line of buf (3^(nsp-1) lines of W
 * doubles, NaN-padded, as image_rows builds them); for the ECT (ect.c). */
int ndf__ecc_contrib(const double *buf, int64_t W, int64_t x, int nsp, int construction) {
  switch ((nsp - 2) * 2 + (construction == NDF_ECC_T)) {
    case 0: return contrib_2V(buf, W, x);
    case 1: return contrib_2T(buf, W, x);
    case 2: return contrib_3V(buf, W, x);
    default: return contrib_3T(buf, W, x);
  }
}

/* Histogram of one image's rows [r0, r1) (rows: every spatial axis but the
 * last) into hist[0..T].  buf holds 3^(nsp-1) lines of nl + 2, padded with NaN. */
static void image_rows(const ecc_call *c, const ndf_array *in, int construction, int64_t img, int64_t r0, int64_t r1,
                       const binner *bn, int64_t *hist, double *buf, int8_t *cimg, double *fimg) {
  const int nsp = c->nsp, nb = c->nb;
  const int64_t nl = c->sshape[nsp - 1], W = nl + 2;
  const int64_t base = ndf__lead_offset(in, nb, img);
  const int64_t sl = in->strides[in->ndim - 1];
  const int nlines = nsp == 2 ? 3 : 9;
  const int kind = (nsp - 2) * 2 + (construction == NDF_ECC_T);
  for (int64_t r = r0; r < r1; r++) {
    int64_t rc[2];
    if (nsp == 2) rc[0] = r;
    else {
      rc[0] = r / c->sshape[1];
      rc[1] = r % c->sshape[1];
    }
    /* the neighbour lines: line index = ternary code of the row offsets */
    for (int l = 0; l < nlines; l++) {
      double *dst = buf + l * W;
      int inside = 1;
      int64_t off = base;
      int lc = l;
      for (int d = nsp - 2; d >= 0; d--) {
        int64_t x = rc[d] + (lc % 3) - 1;
        lc /= 3;
        if (x < 0 || x >= c->sshape[d]) inside = 0;
        else off += x * in->strides[nb + d];
      }
      dst[0] = dst[W - 1] = NAN;
      if (inside) ndf__ecc_read_line(in, off, sl, nl, dst + 1);
      else
        for (int64_t i = 1; i <= nl; i++) dst[i] = NAN;
    }
    const double *centre = buf + (nlines / 2) * W + 1;
    for (int64_t x = 0; x < nl; x++) {
      int cv;
      switch (kind) {
        case 0: cv = contrib_2V(buf, W, x); break;
        case 1: cv = contrib_2T(buf, W, x); break;
        case 2: cv = contrib_3V(buf, W, x); break;
        default: cv = contrib_3T(buf, W, x); break;
      }
      if (cimg) { /* soft ECC: the contributions and values of the image, C order */
        cimg[r * nl + x] = (int8_t)cv;
        fimg[r * nl + x] = centre[x];
      } else if (cv) {
        hist[bin_find(bn, centre[x])] += cv;
      }
    }
  }
}

typedef struct tsort {
  double t;
  int64_t k;
} tsort;
static int cmp_tsort(const void *a, const void *b) {
  const tsort *x = a, *y = b;
  return x->t < y->t ? -1 : x->t > y->t ? 1 : (x->k > y->k) - (x->k < y->k);
}
_Static_assert(sizeof(tsort) == NDF__ECC_SORT_BYTES, "ecc.h's sort bytes");

int ndf__ecc_sort_thresholds(const double *t, int64_t T, double *ts, int64_t *perm) {
  tsort *srt = malloc((size_t)(T > 0 ? T : 1) * sizeof *srt);
  if (!srt) return -1;
  for (int64_t k = 0; k < T; k++) srt[k] = (tsort){t[k], k};
  qsort(srt, (size_t)T, sizeof *srt, cmp_tsort);
  for (int64_t k = 0; k < T; k++) {
    if (ts) ts[k] = srt[k].t;
    perm[k] = srt[k].k;
  }
  free(srt);
  return 0;
}

int ndf__ecc_uniform_bins(const double *ts, int64_t T, int uniform, double *lo, double *inv_step) {
  *lo = *inv_step = 0;
  if (!uniform || !(ts[T - 1] > ts[0])) return 0;
  *lo = ts[0];
  *inv_step = (double)(T - 1) / (ts[T - 1] - ts[0]);
  return 1;
}

/* The threads of ecc_cpu: small calls run on one thread (a parallel region
 * costs more than they do); *by_image: threads take whole images. */
static int ecc_cpu_threads(ndf_ctx *ctx, const ecc_call *c, int *by_image) {
  const int64_t nimg = c->nimg, nrows = c->npix ? c->npix / c->sshape[c->nsp - 1] : 0;
  const int nth = c->npix * nimg < 4096 ? 1 : ndf__cpu_threads(ctx);
  *by_image = nimg >= nth || nrows < 4 * nth;
  return *by_image && nimg < nth ? (int)nimg : nth;
}

/* The host memory ecc_cpu and its caller take (thresholds, their sort, the
 * per-thread lines and histograms), checked before any of it is allocated. */
static ndf_status ecc_cpu_memory(ndf_ctx *ctx, const ecc_call *c) {
  int by_image;
  const int64_t nt = ecc_cpu_threads(ctx, c, &by_image), W = c->sshape[c->nsp - 1] + 2, T = c->T;
  /* T is at most NDF_MAX_THRESHOLDS and W an extent of a checked array: no overflow */
  const int64_t bytes = T * (int64_t)(NDF__ECC_SORT_BYTES + 3 * sizeof(double)) +
                        nt * ((c->nsp == 2 ? 3 : 9) * W + T + 1) * (int64_t)sizeof(double);
  return ndf__check_host_memory(ctx, c->name, "the thresholds, their sort and the histograms", bytes);
}

static ndf_status ecc_cpu(ndf_ctx *ctx, const ecc_call *c, const ndf_array *in, ndf_array *out, int construction,
                          const double *t, int uniform) {
  const int64_t T = c->T, nimg = c->nimg;
  const int nsp = c->nsp;
  const int64_t W = c->sshape[nsp - 1] + 2, nrows = c->npix ? c->npix / c->sshape[nsp - 1] : 0;
  const int nlines = nsp == 2 ? 3 : 9;
  int by_image;
  const int nt = ecc_cpu_threads(ctx, c, &by_image);
  int64_t *perm = malloc((size_t)T * sizeof *perm);
  double *ts = malloc((size_t)T * sizeof *ts);
  int64_t *chi = malloc((size_t)T * sizeof *chi);
  /* per thread: padded lines, then a histogram of T + 1 bins */
  const size_t lines_bytes = (size_t)nlines * (size_t)W * sizeof(double);
  void **bufs = ndf__thread_buffers(nt, lines_bytes + (size_t)(T + 1) * sizeof(int64_t));
  ndf_status s = NDF_OK;
  if (!perm || !ts || !chi || !bufs || ndf__ecc_sort_thresholds(t, T, ts, perm)) {
    s = ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", c->name);
    goto done;
  }
  binner bn = {ts, T, 0, 0, 0};
  bn.uniform = ndf__ecc_uniform_bins(ts, T, uniform, &bn.lo, &bn.inv_step);
  const int64_t ostep = out->strides[c->nb];
  if (by_image) {
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
    for (int64_t img = 0; img < nimg; img++) {
      char *b = bufs[ndf__thread_id()];
      int64_t *hist = (int64_t *)(b + lines_bytes);
      memset(hist, 0, (size_t)(T + 1) * sizeof *hist);
      if (c->npix > 0) image_rows(c, in, construction, img, 0, nrows, &bn, hist, (double *)b, NULL, NULL);
      int64_t *o = (int64_t *)out->data + ndf__lead_offset(out, c->nb, img);
      int64_t acc = 0;
      for (int64_t k = 0; k < T; k++) {
        acc += hist[k];
        o[perm[k] * ostep] = acc;
      }
    }
  } else {
    for (int64_t img = 0; img < nimg; img++) {
#pragma omp parallel num_threads(nt)
      {
        char *b = bufs[ndf__thread_id()];
        int64_t *hist = (int64_t *)(b + lines_bytes);
        memset(hist, 0, (size_t)(T + 1) * sizeof *hist);
#pragma omp for schedule(dynamic, 4)
        for (int64_t r = 0; r < nrows; r++) image_rows(c, in, construction, img, r, r + 1, &bn, hist, (double *)b, NULL, NULL);
      }
      for (int64_t k = 0; k < T; k++) {
        chi[k] = 0;
        for (int i = 0; i < nt; i++) chi[k] += ((int64_t *)((char *)bufs[i] + lines_bytes))[k];
      }
      int64_t *o = (int64_t *)out->data + ndf__lead_offset(out, c->nb, img);
      int64_t acc = 0;
      for (int64_t k = 0; k < T; k++) {
        acc += chi[k];
        o[perm[k] * ostep] = acc;
      }
    }
  }
done:
  if (bufs) ndf__thread_buffers_free(bufs, nt);
  free(perm);
  free(ts);
  free(chi);
  return s;
}

/* ---- entry points ---------------------------------------------------------------------------- */

/* The failed check of the device's data (a NaN at C-order index nan_at >= 0, else infinite values
 * with [min, max] thresholds); how: where it was found ("" for the call itself). */
static ndf_status data_error(ndf_ctx *ctx, const char *name, int64_t nan_at, const char *how) {
  if (nan_at >= 0)
    return ndf__argerror(ctx, name, "input", "element %lld (C order) is NaN; the filtration needs ordered values%s",
                         (long long)nan_at, how);
  return ndf__argerror(ctx, name, "input",
                       "holds infinite values, so [min, max] gives no thresholds (give a range or values)%s", how);
}

ndf_status ndf__ecc_deferred_error(ndf_ctx *ctx, const char *name, uint32_t ord, uint32_t n, uint64_t key) {
  char how[160];
  snprintf(how, sizeof how, "; found by a deferred check: call %u of the %u with deferred checks since the last "
           "synchronize", (unsigned)ord, (unsigned)n);
  return data_error(ctx, name ? name : "ndf_euler_characteristic_curve", key ? (int64_t)~key : -1, how);
}

ndf_status ndf_euler_characteristic_curve(ndf_ctx *ctx, const ndf_array *input, ndf_array *output,
                                          const ndf_ecc_options *opt) {
  const char *name = "ndf_euler_characteristic_curve";
  {
    struct timespec ts; /* ecc.prof's host times start here (ecc_cuda.c) */
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ndf__ecc_t_entry = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
  }
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  ndf__clear_error(ctx);
  if (!output) return ndf__argerror(ctx, name, "output", "NULL");
  ecc_call c;
  ndf_status s = check_call(ctx, name, input, output, opt, &c);
  if (s != NDF_OK) return s;
  if (ndf_array_size(output) == 0) return NDF_OK;
  if (input->device == NDF_DEVICE_CPU && (s = ecc_cpu_memory(ctx, &c)) != NDF_OK) return s;
  double *t = malloc((size_t)c.T * sizeof *t);
  if (!t) return ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", name);
  if (input->device == NDF_DEVICE_CUDA && ndf_array_size(input) > 0 && ndf__ecc_new_path(ctx)) {
    /* new path: thresholds over [min, max] and the NaN check on the device,
     * one readback at the end (float inputs), the output untouched on error */
    const int need_range = !opt->values && !opt->has_range;
    if (!need_range) fill_given_thresholds(&c, opt, t);
    int64_t nan_at = -1;
    int not_finite = 0;
    s = ndf__ecc_cuda2(ctx, &c, input, output, opt->construction, need_range ? NULL : t, opt->values == NULL, &nan_at,
                       &not_finite);
    if (s == NDF_OK && (nan_at >= 0 || not_finite)) s = data_error(ctx, name, nan_at, "");
    free(t);
    return s;
  }
  s = make_thresholds(ctx, &c, input, opt, t);
  if (s == NDF_OK && input->device == NDF_DEVICE_CUDA)
    s = ndf__ecc_cuda(ctx, &c, input, output, opt->construction, t, opt->values == NULL);
  else if (s == NDF_OK)
    s = ecc_cpu(ctx, &c, input, output, opt->construction, t, opt->values == NULL);
  free(t);
  return s;
}

ndf_status ndf_ecc_thresholds(ndf_ctx *ctx, const ndf_array *input, const ndf_ecc_options *opt, double *thresholds,
                              int64_t n) {
  const char *name = "ndf_ecc_thresholds";
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  ndf__clear_error(ctx);
  if (!thresholds) return ndf__argerror(ctx, name, "thresholds", "NULL");
  ecc_call c;
  ndf_status s = check_call(ctx, name, input, NULL, opt, &c);
  if (s != NDF_OK) return s;
  if (n != c.T) return ndf__argerror(ctx, name, "n", "%lld; the options give %lld thresholds", (long long)n, (long long)c.T);
  double *t = malloc((size_t)c.T * sizeof *t);
  if (!t) return ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", name);
  s = make_thresholds(ctx, &c, input, opt, t);
  if (s == NDF_OK) memcpy(thresholds, t, (size_t)n * sizeof *t);
  free(t);
  return s;
}

/* ---- soft ECC ---------------------------------------------------------------------------------- */

void ndf_soft_ecc_options_init(ndf_soft_ecc_options *opt) {
  if (!opt) return;
  memset(opt, 0, sizeof *opt);
  opt->construction = NDF_ECC_V;
  opt->lambda = 1.0;
}

/* Checks a soft call: input (float32/float64), thresholds (host float64,
 * 1-D), a float64 (batch..., T) array `arr` named arg (output or grad_output)
 * and the gradients when given. */
static ndf_status check_soft(ndf_ctx *ctx, const char *name, const ndf_array *in, const ndf_array *thr,
                             const ndf_array *arr, const char *arg, const ndf_array *gin, const ndf_array *gthr,
                             const ndf_soft_ecc_options *opt, ecc_call *c) {
  if (!opt) return ndf__argerror(ctx, name, "options", "NULL");
  if (!thr) return ndf__argerror(ctx, name, "thresholds", "NULL");
  if (!arr) return ndf__argerror(ctx, name, arg, "NULL");
  if (in && in->dtype != NDF_FLOAT32 && in->dtype != NDF_FLOAT64)
    return ndf__argerror(ctx, name, "input", "dtype %s; the soft ECC is differentiable in float32 or float64 only",
                         dname(in->dtype));
  if (!isfinite(opt->lambda) || !(opt->lambda > 0))
    return ndf__argerror(ctx, name, "lambda", "%g must be finite and > 0", opt->lambda);
  if (thr->dtype != NDF_FLOAT64) return ndf__argerror(ctx, name, "thresholds", "dtype %s; thresholds are float64", dname(thr->dtype));
  ndf_ecc_options eo;
  ndf_ecc_options_init(&eo);
  eo.construction = opt->construction;
  eo.batch_dims = opt->batch_dims;
  eo.values = thr;
  ndf_status s = check_call(ctx, name, in, NULL, &eo, c);
  if (s != NDF_OK) {
    /* check_call names the thresholds 'values' */
    return s;
  }
  for (int64_t k = 0; k < c->T; k++)
    if (!isfinite(ndf__get_f64(thr, k * thr->strides[0])))
      return ndf__argerror(ctx, name, "thresholds", "thresholds[%lld] is not finite", (long long)k);
  if (arr->dtype != NDF_FLOAT64) return ndf__argerror(ctx, name, arg, "dtype %s; must be float64", dname(arr->dtype));
  if (arr->ndim != c->nb + 1) return ndf__argerror(ctx, name, arg, "rank %d; expected %d", arr->ndim, c->nb + 1);
  for (int d = 0; d <= c->nb; d++) {
    int64_t want = d < c->nb ? in->shape[d] : c->T;
    if (arr->shape[d] != want)
      return ndf__argerror(ctx, name, arg, "shape[%d]=%lld; expected %lld (batch axes, then %lld thresholds)", d,
                           (long long)arr->shape[d], (long long)want, (long long)c->T);
  }
  if ((s = ndf__check_array(ctx, name, arg, arr, NULL)) != NDF_OK) return s;
  if (arr->device != in->device || arr->device_id != in->device_id || (ndf_array_size(arr) > 0 && !arr->data))
    return ndf__argerror(ctx, name, arg, "must be an array with data on the input's device");
  if (gin && (s = ndf__check_array(ctx, name, "grad_input", gin, NULL)) != NDF_OK) return s;
  if (gthr && (s = ndf__check_array(ctx, name, "grad_thresholds", gthr, NULL)) != NDF_OK) return s;
  if (gin) {
    if (gin->dtype != in->dtype) return ndf__argerror(ctx, name, "grad_input", "dtype %s differs from the input's", dname(gin->dtype));
    if (gin->ndim != in->ndim) return ndf__argerror(ctx, name, "grad_input", "rank differs from the input's");
    for (int d = 0; d < in->ndim; d++)
      if (gin->shape[d] != in->shape[d]) return ndf__argerror(ctx, name, "grad_input", "shape[%d] differs from the input's", d);
    if (gin->device != in->device || gin->device_id != in->device_id || (ndf_array_size(gin) > 0 && !gin->data))
      return ndf__argerror(ctx, name, "grad_input", "must be an array with data on the input's device");
    if (ndf_array_size(gin) > 0 && (!ndf__layout_is_proper(gin) || ndf__arrays_overlap(gin, in) || ndf__arrays_overlap(gin, arr)))
      return ndf__argerror(ctx, name, "grad_input", "overlaps itself, the input or %s", arg);
  }
  if (gthr) {
    if (gthr->dtype != NDF_FLOAT64 || gthr->ndim != 1 || gthr->shape[0] != c->T || gthr->device != in->device ||
        gthr->device_id != in->device_id || !gthr->data)
      return ndf__argerror(ctx, name, "grad_thresholds", "must be a float64 array of shape (%lld,) on the input's device",
                           (long long)c->T);
  }
  if (ndf_array_size(arr) > 0 && (!ndf__layout_is_proper(arr) || ndf__arrays_overlap(arr, in)))
    return ndf__argerror(ctx, name, arg, "overlaps itself or the input");
  return NDF_OK;
}

static inline double sigmoid(double z) { return z >= 0 ? 1.0 / (1.0 + exp(-z)) : exp(z) / (1.0 + exp(z)); }

/* mode 0: forward into arr; mode 1: backward from arr (grad_output). */
static ndf_status soft_run(ndf_ctx *ctx, const ecc_call *c, const ndf_array *in, const ndf_array *thr, ndf_array *arr,
                           ndf_array *gin, ndf_array *gthr, const ndf_soft_ecc_options *opt, int mode) {
  const int64_t T = c->T, nimg = c->nimg, npix = c->npix;
  const int nsp = c->nsp;
  const int64_t nl = c->sshape[nsp - 1], W = nl + 2, nrows = npix ? npix / nl : 0;
  const int nlines = nsp == 2 ? 3 : 9;
  const int nth = npix * nimg < 4096 ? 1 : ndf__cpu_threads(ctx);
  const int nt = nimg < nth ? (int)(nimg > 0 ? nimg : 1) : nth;
  const double lam = opt->lambda;
  const size_t per = (size_t)nlines * W * sizeof(double) + (size_t)npix * (sizeof(double) + 1) +
                     (size_t)T * 2 * sizeof(double) + 64;
  void **bufs = ndf__thread_buffers(nt, per);
  if (!bufs) return ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", c->name);
  double *t = malloc((size_t)(T ? T : 1) * sizeof *t);
  if (!t) {
    ndf__thread_buffers_free(bufs, nt);
    return ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", c->name);
  }
  for (int64_t k = 0; k < T; k++) t[k] = ndf__get_f64(thr, k * thr->strides[0]);
  const int64_t as = arr->strides[c->nb];
  for (int i = 0; i < nt; i++) memset((char *)bufs[i] + (size_t)nlines * W * sizeof(double) + (size_t)npix * sizeof(double) + (size_t)T * sizeof(double), 0, (size_t)T * sizeof(double));
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
  for (int64_t img = 0; img < nimg; img++) {
    char *b = bufs[ndf__thread_id()];
    double *lines = (double *)b;
    double *fimg = (double *)(b + (size_t)nlines * W * sizeof(double));
    double *acc = fimg + npix;                 /* T: forward sums, or g_k */
    double *gt = acc + T;                      /* T: this thread's grad_thresholds */
    int8_t *cimg = (int8_t *)(gt + T);
    if (npix > 0) image_rows(c, in, opt->construction, img, 0, nrows, NULL, NULL, lines, cimg, fimg);
    const int64_t ao = ndf__lead_offset(arr, c->nb, img);
    const double *a = (const double *)arr->data + ao;
    if (mode == 0) {
      for (int64_t k = 0; k < T; k++) acc[k] = 0;
      for (int64_t v = 0; v < npix; v++) {
        if (!cimg[v]) continue;
        for (int64_t k = 0; k < T; k++) acc[k] += cimg[v] * sigmoid(lam * (t[k] - fimg[v]));
      }
      for (int64_t k = 0; k < T; k++) ((double *)arr->data)[ao + k * as] = acc[k];
    } else {
      for (int64_t k = 0; k < T; k++) acc[k] = a[k * as];
      for (int64_t v = 0; v < npix; v++) {
        double gf = 0;
        if (cimg[v]) {
          for (int64_t k = 0; k < T; k++) {
            double s = sigmoid(lam * (t[k] - fimg[v]));
            double d = lam * s * (1 - s) * cimg[v] * acc[k];
            gf -= d;
            gt[k] += d;
          }
        }
        if (gin) { /* voxel v of image img: element img * npix + v of gin in C order */
          const int64_t off = ndf__offset_of(gin, img * npix + v);
          if (gin->dtype == NDF_FLOAT32) ((float *)gin->data)[off] = (float)gf;
          else ((double *)gin->data)[off] = gf;
        }
      }
    }
  }
  if (mode == 1 && gthr) {
    for (int64_t k = 0; k < T; k++) {
      double sum = 0;
      for (int i = 0; i < nt; i++)
        sum += ((double *)((char *)bufs[i] + (size_t)nlines * W * sizeof(double) + (size_t)npix * sizeof(double)))[T + k];
      ((double *)gthr->data)[k * gthr->strides[0]] = sum;
    }
  }
  free(t);
  ndf__thread_buffers_free(bufs, nt);
  return NDF_OK;
}

/* NaN in the input: NDF_EINVAL (CPU scan, or the device reduction). */
static ndf_status soft_nan_check(ndf_ctx *ctx, const char *name, const ndf_array *in) {
  if (ndf_array_size(in) == 0) return NDF_OK;
  double mn, mx;
  int64_t nan_at;
  int ok = 1;
  if (in->device == NDF_DEVICE_CUDA) {
    ndf_status s = ndf__ecc_cuda_scan(ctx, name, in, &mn, &mx, &nan_at);
    if (s != NDF_OK) return s;
  } else {
    nan_at = scan_input(ctx, in, &mn, &mx, &ok);
  }
  if (!ok) return ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", name);
  if (nan_at >= 0) return ndf__argerror(ctx, name, "input", "holds NaN; the filtration needs ordered values");
  return NDF_OK;
}

/* The CUDA path: thresholds read on the host, everything else on the device. */
static ndf_status soft_cuda(ndf_ctx *ctx, const ecc_call *c, const ndf_array *in, const ndf_array *thr,
                            ndf_array *arr, ndf_array *gin, ndf_array *gthr, const ndf_soft_ecc_options *opt,
                            int mode) {
  double *t = malloc((size_t)(c->T ? c->T : 1) * sizeof *t);
  if (!t) return ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", c->name);
  for (int64_t k = 0; k < c->T; k++) t[k] = ndf__get_f64(thr, k * thr->strides[0]);
  int64_t nan_at = -1;
  ndf_status s = ndf__soft_ecc_cuda(ctx, c, in, t, arr, ndf_array_size(in) > 0 ? gin : NULL, gthr, opt->construction,
                                    opt->lambda, mode, ndf__ecc_new_path(ctx) ? &nan_at : NULL);
  free(t);
  if (s == NDF_OK && nan_at >= 0) s = ndf__argerror(ctx, c->name, "input", "holds NaN; the filtration needs ordered values");
  return s;
}

ndf_status ndf_soft_ecc_forward(ndf_ctx *ctx, const ndf_array *input, const ndf_array *thresholds, ndf_array *output,
                                const ndf_soft_ecc_options *opt) {
  const char *name = "ndf_soft_ecc_forward";
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  ndf__clear_error(ctx);
  ecc_call c;
  ndf_status s = check_soft(ctx, name, input, thresholds, output, "output", NULL, NULL, opt, &c);
  if (s != NDF_OK) return s;
  if (input->device == NDF_DEVICE_CUDA && ndf__ecc_new_path(ctx))
    return soft_cuda(ctx, &c, input, thresholds, output, NULL, NULL, opt, 0); /* NaN checked on the device */
  if ((s = soft_nan_check(ctx, name, input)) != NDF_OK) return s;
  if (input->device == NDF_DEVICE_CUDA) return soft_cuda(ctx, &c, input, thresholds, output, NULL, NULL, opt, 0);
  return soft_run(ctx, &c, input, thresholds, output, NULL, NULL, opt, 0);
}

ndf_status ndf_soft_ecc_backward(ndf_ctx *ctx, const ndf_array *input, const ndf_array *thresholds,
                                 const ndf_array *grad_output, ndf_array *grad_input, ndf_array *grad_thresholds,
                                 const ndf_soft_ecc_options *opt) {
  const char *name = "ndf_soft_ecc_backward";
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  ndf__clear_error(ctx);
  ecc_call c;
  ndf_status s = check_soft(ctx, name, input, thresholds, grad_output, "grad_output", grad_input, grad_thresholds, opt, &c);
  if (s != NDF_OK) return s;
  if (input->device != NDF_DEVICE_CUDA || !ndf__ecc_new_path(ctx))
    if ((s = soft_nan_check(ctx, name, input)) != NDF_OK) return s;
  if (input->device == NDF_DEVICE_CUDA)
    return soft_cuda(ctx, &c, input, thresholds, (ndf_array *)grad_output, grad_input, grad_thresholds, opt, 1);
  return soft_run(ctx, &c, input, thresholds, (ndf_array *)grad_output, grad_input, grad_thresholds, opt, 1);
}
