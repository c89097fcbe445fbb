/*
 * ect.c -- Euler characteristic transform (ECT) and weighted ECT (WECT) of
 * binary / grayscale 2-D and 3-D images along m directions, exact and soft,
 * on the CPU backend (docs/adr/0011-euler-characteristic-transform.md).
 *
 * The shape is the support S = {input != 0}; along direction u the image is
 * the ECC filtration of f_u = h_u = <x, u> on S and +inf elsewhere, so every
 * cell of the complex of S has exactly one owner voxel (ecc.c's rule, ties by
 * (height, linear index)) and its height is its owner's.  Binary exact: c(v)
 * from ecc.c's tables (ndf__ecc_contrib) into a histogram over the threshold
 * bins, then a prefix sum.  Weighted and soft: the cells around v are
 * enumerated (3^d patterns, each checked against the same win rule) so each
 * owned cell's weight, and the voxel it comes from, are known.
 *
 * Work is split over (image, direction) pairs: one thread runs one pair over
 * every row of its image.  CUDA arrays: exact and weighted ECT in ect_cuda.c
 * (templates/ect.cu), the soft ECT too (templates/ect_soft.cu).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ect/ect.h"

void ndf_ect_options_init(ndf_ect_options *opt) {
  if (!opt) return;
  memset(opt, 0, sizeof *opt);
  opt->construction = NDF_ECC_V;
  opt->nthresholds = 256;
}

void ndf_soft_ect_options_init(ndf_soft_ect_options *opt) {
  if (!opt) return;
  memset(opt, 0, sizeof *opt);
  opt->construction = NDF_ECC_V;
  opt->lambda = 1.0;
}

/* ---- validation ------------------------------------------------------------------------------- */

typedef struct ect_call {
  const char *name;
  int nb, nsp, cons, weighted;
  int64_t nimg, npix, m, T;
  int64_t sshape[3];
  double spacing[3];
  int normalize;
} ect_call;

static const char *dname(ndf_dtype t) { return ndf_dtype_name(t) ? ndf_dtype_name(t) : "unknown"; }

/* Input, directions, construction, spacing: what every ECT call shares. */
static ndf_status check_common(ndf_ctx *ctx, const char *name, const ndf_array *in, const ndf_array *dirs,
                               int construction, int weighted, const double *spacing, int normalize, int batch_dims,
                               ect_call *c) {
  memset(c, 0, sizeof *c);
  c->name = name;
  if (!in) return ndf__argerror(ctx, name, "input", "NULL");
  if (!dirs) return ndf__argerror(ctx, name, "directions", "NULL");
  if (in->dtype != NDF_FLOAT32 && in->dtype != NDF_FLOAT64 && in->dtype != NDF_UINT8 && in->dtype != NDF_UINT16)
    return ndf__argerror(ctx, name, "input", "dtype %s; the transform takes float32, float64, uint8 or uint16",
                         dname(in->dtype));
  ndf_status cs = ndf__check_shape(ctx, name, in, batch_dims);
  if (cs != NDF_OK) return cs;
  c->nb = batch_dims;
  c->nsp = in->ndim - c->nb;
  if (c->nsp != 2 && c->nsp != 3)
    return ndf__argerror(ctx, name, "batch_dims", "leaves %d spatial axes; the Euler characteristic transform takes 2 or 3",
                         c->nsp);
  if (in->device != NDF_DEVICE_CPU && in->device != NDF_DEVICE_CUDA)
    return ndf__argerror(ctx, name, "input", "unknown device type %d", (int)in->device);
  if ((unsigned)construction > NDF_ECC_T)
    return ndf__argerror(ctx, name, "construction", "unknown construction %d (NDF_ECC_V or NDF_ECC_T)", construction);
  if (weighted != 0 && weighted != 1) return ndf__argerror(ctx, name, "weighted", "%d is not 0 or 1", weighted);
  if (normalize != 0 && normalize != 1) return ndf__argerror(ctx, name, "normalize", "%d is not 0 or 1", normalize);
  c->cons = construction;
  c->weighted = weighted;
  c->normalize = normalize;
  for (int d = 0; d < c->nsp; d++) {
    double s = spacing[d];
    if (!isfinite(s) || s < 0)
      return ndf__argerror(ctx, name, "spacing", "spacing[%d]=%g must be finite and > 0 (0 means 1)", d, s);
    c->spacing[d] = s == 0 ? 1.0 : s;
  }
  c->nimg = c->npix = 1;
  for (int d = 0; d < c->nb; d++) c->nimg *= in->shape[d];
  for (int d = 0; d < c->nsp; d++) {
    c->sshape[d] = in->shape[c->nb + d];
    c->npix *= c->sshape[d];
  }
  if (dirs->device != NDF_DEVICE_CPU) return ndf__argerror(ctx, name, "directions", "must be a CPU (host) array");
  if (dirs->dtype != NDF_FLOAT64)
    return ndf__argerror(ctx, name, "directions", "dtype %s; directions are float64", dname(dirs->dtype));
  if (dirs->ndim != 2 || dirs->shape[1] != c->nsp)
    return ndf__argerror(ctx, name, "directions", "must have shape (m, %d) for %d spatial axes", c->nsp, c->nsp);
  if (dirs->shape[0] < 1) return ndf__argerror(ctx, name, "directions", "no directions (shape[0]=%lld)",
                                               (long long)dirs->shape[0]);
  if ((cs = ndf__check_array(ctx, name, "directions", dirs, NULL)) != NDF_OK) return cs;
  if (!dirs->data) return ndf__argerror(ctx, name, "directions", "NULL data");
  c->m = dirs->shape[0];
  for (int64_t j = 0; j < c->m; j++)
    for (int d = 0; d < c->nsp; d++) {
      double u = ((const double *)dirs->data)[j * dirs->strides[0] + d * dirs->strides[1]];
      if (!isfinite(u))
        return ndf__argerror(ctx, name, "directions", "directions[%lld, %d] = %g is not finite", (long long)j, d, u);
    }
  return NDF_OK;
}

/* Checks an output-like float64/int64 array of shape (batch..., m, T). */
static ndf_status check_curve_array(ndf_ctx *ctx, const ect_call *c, const ndf_array *in, const ndf_array *a,
                                    const char *arg, ndf_dtype want_dt) {
  if (!a) return ndf__argerror(ctx, c->name, arg, "NULL");
  if (a->dtype != want_dt)
    return ndf__argerror(ctx, c->name, arg, "dtype %s; expected %s here (%s)", dname(a->dtype), dname(want_dt),
                         want_dt == NDF_INT64 ? "the binary ECT counts cells" : "weighted or soft values");
  if (a->ndim != c->nb + 2)
    return ndf__argerror(ctx, c->name, arg, "rank %d; expected %d (the %d batch axes, directions, thresholds)", a->ndim,
                         c->nb + 2, c->nb);
  for (int d = 0; d < c->nb + 2; d++) {
    int64_t want = d < c->nb ? in->shape[d] : d == c->nb ? c->m : c->T;
    if (a->shape[d] != want)
      return ndf__argerror(ctx, c->name, arg, "shape[%d]=%lld; expected %lld (batch axes, %lld directions, %lld thresholds)",
                           d, (long long)a->shape[d], (long long)want, (long long)c->m, (long long)c->T);
  }
  return ndf__check_array(ctx, c->name, arg, a, NULL);
}

static ndf_status check_exact(ndf_ctx *ctx, const char *name, const ndf_array *in, const ndf_array *dirs,
                              const ndf_array *out, const ndf_ect_options *opt, ect_call *c) {
  if (!opt) return ndf__argerror(ctx, name, "options", "NULL");
  ndf_status s = check_common(ctx, name, in, dirs, (int)opt->construction, opt->weighted, opt->spacing, opt->normalize,
                              opt->batch_dims, c);
  if (s != NDF_OK) return s;
  s = ndf__ecc_check_thresholds(ctx, name, opt->values, opt->nthresholds, opt->has_range, opt->range_lo, opt->range_hi,
                                &c->T);
  if (s != NDF_OK) return s;
  if (out) {
    s = check_curve_array(ctx, c, in, out, "output", c->weighted ? NDF_FLOAT64 : NDF_INT64);
    if (s != NDF_OK) return s;
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
    if (ndf_array_size(in) > 0 && ndf__arrays_overlap(in, out)) return ndf__argerror(ctx, name, "output", "overlaps the input");
    if (out->device == NDF_DEVICE_CPU && ndf__arrays_overlap(dirs, out))
      return ndf__argerror(ctx, name, "output", "overlaps the directions");
  }
  return NDF_OK;
}

/* ---- host array access ---------------------------------------------------------------------- */

/* NaN anywhere (and, when weighted, +-inf) is rejected; returns the C-order index or -1. */
static int64_t scan_input(const ndf_array *in, int finite, double *buf) {
  if (ndf_array_size(in) == 0) return -1;
  const int64_t nl = in->shape[in->ndim - 1], nrows = ndf_array_size(in) / nl;
  for (int64_t r = 0; r < nrows; r++) {
    ndf__ecc_read_line(in, ndf__lead_offset(in, in->ndim - 1, r), in->strides[in->ndim - 1], nl, buf);
    for (int64_t i = 0; i < nl; i++)
      if (finite ? !isfinite(buf[i]) : isnan(buf[i])) return r * nl + i;
  }
  return -1;
}

static ndf_status check_values(ndf_ctx *ctx, const ect_call *c, const ndf_array *in) {
  if (ndf_array_size(in) == 0) return NDF_OK;
  if (in->dtype == NDF_UINT8 || in->dtype == NDF_UINT16) return NDF_OK; /* always finite */
  if (in->device == NDF_DEVICE_CUDA) { /* ecc_cuda.c's scan: min, max (NaN skipped), first NaN */
    double mn, mx;
    int64_t nan_at;
    ndf_status s = ndf__ecc_cuda_scan(ctx, c->name, in, &mn, &mx, &nan_at);
    if (s != NDF_OK) return s;
    if (nan_at >= 0)
      return ndf__argerror(ctx, c->name, "input", "element %lld (C order) is %s", (long long)nan_at,
                           c->weighted ? "not finite; weights must be finite" : "NaN; the shape is input != 0");
    if (c->weighted && (!isfinite(mn) || !isfinite(mx)))
      return ndf__argerror(ctx, c->name, "input", "holds infinite values; weights must be finite");
    return NDF_OK;
  }
  double *buf = malloc((size_t)in->shape[in->ndim - 1] * sizeof *buf);
  if (!buf) return ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", c->name);
  int64_t bad = scan_input(in, c->weighted, buf);
  free(buf);
  if (bad >= 0)
    return ndf__argerror(ctx, c->name, "input", "element %lld (C order) is %s", (long long)bad,
                         c->weighted ? "not finite; weights must be finite" : "NaN; the shape is input != 0");
  return NDF_OK;
}

/* ---- geometry ---------------------------------------------------------------------------------- */

/* Coordinates per spatial axis: coord[d][i] = (i - (n_d - 1) / 2) * spacing_d,
 * divided by the half-diagonal when normalize is set.  buf: sum of n_d. */
static void make_coords(const ect_call *c, double *buf, const double **coord) {
  double r2 = 0;
  for (int d = 0; d < c->nsp; d++) {
    double h = (double)(c->sshape[d] - 1) / 2.0 * c->spacing[d];
    if (c->sshape[d] > 0) r2 += h * h;
  }
  const double R0 = sqrt(r2);
  for (int d = 0; d < c->nsp; d++) {
    coord[d] = buf;
    for (int64_t i = 0; i < c->sshape[d]; i++) {
      double x = ((double)i - (double)(c->sshape[d] - 1) / 2.0) * c->spacing[d];
      buf[i] = c->normalize && R0 > 0 ? x / R0 : x;
    }
    buf += c->sshape[d];
  }
}

static inline double dir_at(const ndf_array *dirs, int64_t j, int d) {
  return ((const double *)dirs->data)[j * dirs->strides[0] + d * dirs->strides[1]];
}

/* R = the largest |h_u(v)| over the grid and every direction; rounding is
 * monotone, so the extremes of the computed heights lie at the corners. */
static double max_height(const ect_call *c, const ndf_array *dirs, const double **coord) {
  double R = 0;
  if (c->npix == 0) return 0;
  for (int64_t j = 0; j < c->m; j++)
    for (int corner = 0; corner < (1 << c->nsp); corner++) {
      double h = 0;
      for (int d = 0; d < c->nsp; d++) h += coord[d][(corner >> d) & 1 ? c->sshape[d] - 1 : 0] * dir_at(dirs, j, d);
      if (fabs(h) > R) R = fabs(h);
    }
  return R;
}

/* Heights must stay finite: +inf marks voxels off the shape. */
static ndf_status check_heights(ndf_ctx *ctx, const ect_call *c, const ndf_array *dirs, const double **coord) {
  if (!isfinite(max_height(c, dirs, coord)))
    return ndf__argerror(ctx, c->name, "directions", "give heights <x, u> that overflow double");
  return NDF_OK;
}

static ndf_status make_thresholds(ndf_ctx *ctx, const ect_call *c, const ndf_array *dirs, const ndf_ect_options *opt,
                                  const double **coord, double *t) {
  if (opt->values) {
    for (int64_t k = 0; k < c->T; k++) t[k] = ndf__get_f64(opt->values, k * opt->values->strides[0]);
    return NDF_OK;
  }
  double lo, hi;
  if (opt->has_range) {
    lo = opt->range_lo;
    hi = opt->range_hi;
  } else {
    double R = max_height(c, dirs, coord); /* finite: check_heights ran */
    lo = -R;
    hi = R;
  }
  for (int64_t k = 0; k < c->T; k++) t[k] = lo + (hi - lo) * (double)k / (double)(c->T - 1);
  t[c->T - 1] = hi;
  return NDF_OK;
}

/* ---- cells around a voxel --------------------------------------------------------------------- */

/* The cells around a voxel, one per offset pattern e in {-1,0,1}^nsp (code
 * t = ternary digits e_d + 1, axis 0 most significant, as ecc.c's
 * neighbourhood): the voxels it is decided against are v + e restricted to
 * each non-empty subset of its non-zero axes.  V: the cell spanning those
 * axes (dim = #non-zero); T: the face of top cell v on those sides (dim =
 * nsp - #non-zero). */
typedef struct ect_pat {
  int nsub;
  int8_t sub[7];
  int8_t sign;
} ect_pat;

static int make_patterns(int nsp, int cons, ect_pat *p) {
  const int npat = nsp == 2 ? 9 : 27, centre = npat / 2;
  for (int t = 0; t < npat; t++) {
    int e[3], z[3], nz = 0, q = t;
    for (int d = nsp - 1; d >= 0; d--) {
      e[d] = q % 3 - 1;
      q /= 3;
    }
    for (int d = 0; d < nsp; d++)
      if (e[d]) z[nz++] = d;
    p[t].nsub = 0;
    for (int mask = 1; mask < (1 << nz); mask++) {
      int code = centre;
      for (int i = 0; i < nz; i++)
        if (mask >> i & 1) {
          int pw = 1;
          for (int d = z[i] + 1; d < nsp; d++) pw *= 3;
          code += e[z[i]] * pw;
        }
      p[t].sub[p[t].nsub++] = (int8_t)code;
    }
    int dim = cons == NDF_ECC_V ? nz : nsp - nz;
    p[t].sign = (int8_t)(dim % 2 ? -1 : 1);
  }
  return npat;
}

/* Same win rule as ecc.c (ties by linear index; neg: u comes first in C order). */
static inline int wins_v(double fv, double fu, int neg) { return neg ? fv >= fu : fv > fu; }
static inline int wins_t(double fv, double fu, int neg) { return neg ? !(fu <= fv) : !(fu < fv); }

/* Signed weight of the cells v owns (hb/wb: heights / weights of the
 * neighbourhood by code; out of image: NaN / 0; off the support: +inf / 0).
 * With src/sgn, records each owned cell's weight voxel (code) and sign. */
static inline double owned_weight(const ect_pat *p, int npat, int cons, const double *hb, const double *wb, int8_t *src,
                                  int8_t *sgn, int *nown) {
  const int centre = npat / 2;
  const double fv = hb[centre];
  double cw = 0;
  int n = 0;
  for (int t = 0; t < npat; t++) {
    double w = wb[centre];
    int from = centre, owned = 1;
    for (int i = 0; i < p[t].nsub; i++) {
      const int s = p[t].sub[i];
      const double fu = hb[s];
      if (cons == NDF_ECC_V) {
        if (!wins_v(fv, fu, s < centre)) {
          owned = 0;
          break;
        }
        if (wb[s] < w) {
          w = wb[s];
          from = s;
        }
      } else {
        if (!wins_t(fv, fu, s < centre)) {
          owned = 0;
          break;
        }
        if (isfinite(fu) && wb[s] > w) {
          w = wb[s];
          from = s;
        }
      }
    }
    if (!owned) continue;
    cw += p[t].sign * w;
    if (src) {
      src[n] = (int8_t)from;
      sgn[n] = p[t].sign;
    }
    n++;
  }
  if (nown) *nown = n;
  return cw;
}

/* ---- the per-pair pass ------------------------------------------------------------------------ */

/* Per voxel of the support of one image along one direction: its height h,
 * C-order index, cw (signed weight, or c(v) for the binary exact pass), and
 * the owned cells' weight voxels when asked.  The visitor decides. */
typedef struct pair_ctx {
  const ect_call *c;
  const ndf_array *in;
  const double **coord;
  const ect_pat *pat;
  int npat;
  int use_lut; /* binary exact: c(v) from ecc.c's tables */
  int want_src;
  double *hl, *wl, *tmp; /* nlines * W each, then nl */
} pair_ctx;

typedef void (*voxel_fn)(void *ud, int64_t lin, double h, double cw, const int8_t *src, const int8_t *sgn, int nown);

static void pair_pass(const pair_ctx *pc, int64_t img, const double *u, voxel_fn fn, void *ud) {
  const ect_call *c = pc->c;
  const ndf_array *in = pc->in;
  const int nsp = c->nsp, nb = c->nb;
  const int64_t nl = c->sshape[nsp - 1], W = nl + 2, nrows = c->npix / nl;
  const int64_t base = ndf__lead_offset(in, nb, img), sl = in->strides[in->ndim - 1];
  const int nlines = nsp == 2 ? 3 : 9;
  const double *cl = pc->coord[nsp - 1];
  const double ul = u[nsp - 1];
  double hb[27], wb[27];
  int8_t src[27], sgn[27];
  for (int64_t r = 0; r < nrows; r++) {
    int64_t rc[2];
    if (nsp == 2) rc[0] = r;
    else {
      rc[0] = r / c->sshape[1];
      rc[1] = r % c->sshape[1];
    }
    for (int l = 0; l < nlines; l++) {
      double *hd = pc->hl + l * W, *wd = pc->wl + l * W;
      int inside = 1, lc = l;
      int64_t off = base, xi[2] = {0, 0};
      for (int d = nsp - 2; d >= 0; d--) {
        int64_t x = rc[d] + (lc % 3) - 1;
        lc /= 3;
        if (x < 0 || x >= c->sshape[d]) inside = 0;
        else {
          off += x * in->strides[nb + d];
          xi[d] = x;
        }
      }
      hd[0] = hd[W - 1] = NAN;
      wd[0] = wd[W - 1] = 0;
      if (!inside) {
        for (int64_t i = 1; i <= nl; i++) {
          hd[i] = NAN;
          wd[i] = 0;
        }
        continue;
      }
      /* h = ((x0 u0) + x1 u1) + x2 u2, in axis order (the oracle's order) */
      double pre = 0;
      for (int d = 0; d < nsp - 1; d++) pre += pc->coord[d][xi[d]] * u[d];
      ndf__ecc_read_line(in, off, sl, nl, pc->tmp);
      for (int64_t i = 0; i < nl; i++) {
        const double v = pc->tmp[i];
        if (v != 0) {
          hd[i + 1] = pre + cl[i] * ul;
          wd[i + 1] = c->weighted ? v : 1.0;
        } else {
          hd[i + 1] = INFINITY;
          wd[i + 1] = 0;
        }
      }
    }
    const int cl_line = nlines / 2;
    const double *hc = pc->hl + cl_line * W + 1;
    for (int64_t x = 0; x < nl; x++) {
      if (!(hc[x] < INFINITY)) continue; /* off the support */
      if (pc->use_lut) {
        int cv = ndf__ecc_contrib(pc->hl, W, x, nsp, c->cons);
        if (cv) fn(ud, r * nl + x, hc[x], (double)cv, NULL, NULL, 0);
        continue;
      }
      for (int t = 0; t < pc->npat; t++) {
        hb[t] = pc->hl[(t / 3) * W + x + (t % 3)];
        wb[t] = pc->wl[(t / 3) * W + x + (t % 3)];
      }
      int nown = 0;
      double cw = owned_weight(pc->pat, pc->npat, c->cons, hb, wb, pc->want_src ? src : NULL, sgn, &nown);
      if (nown) fn(ud, r * nl + x, hc[x], cw, src, sgn, nown);
    }
  }
}

/* per-thread scratch of a pair pass: lines, then extra bytes */
static size_t pass_bytes(const ect_call *c) {
  const int64_t nl = c->sshape[c->nsp - 1];
  const int nlines = c->nsp == 2 ? 3 : 9;
  return ((size_t)2 * nlines * (size_t)(nl + 2) + (size_t)nl) * sizeof(double);
}
static void pass_bind(pair_ctx *pc, char *b) {
  const int64_t nl = pc->c->sshape[pc->c->nsp - 1];
  const int nlines = pc->c->nsp == 2 ? 3 : 9;
  pc->hl = (double *)b;
  pc->wl = pc->hl + nlines * (nl + 2);
  pc->tmp = pc->wl + nlines * (nl + 2);
}

/* ---- exact ------------------------------------------------------------------------------------ */

static inline int64_t bin_of(const double *ts, int64_t T, double v) {
  int64_t lo = 0, hi = T;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (v <= ts[mid]) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

typedef struct hist_ud {
  const double *ts;
  int64_t T;
  int64_t *hi; /* binary */
  double *hd;  /* weighted */
} hist_ud;

static void hist_voxel(void *ud, int64_t lin, double h, double cw, const int8_t *src, const int8_t *sgn, int nown) {
  (void)lin, (void)src, (void)sgn, (void)nown;
  hist_ud *u = ud;
  int64_t k = bin_of(u->ts, u->T, h);
  if (u->hi) u->hi[k] += (int64_t)cw;
  else u->hd[k] += cw;
}

static int pick_threads(ndf_ctx *ctx, const ect_call *c) {
  const int64_t pairs = c->nimg * c->m;
  int nth = c->npix * pairs < 4096 ? 1 : ndf__cpu_threads(ctx);
  if (pairs < nth) nth = (int)(pairs > 0 ? pairs : 1);
  return nth;
}

/* The host memory ect_cpu and its caller take (thresholds, their sort, the
 * per-thread passes and histograms), checked before any of it is allocated. */
static ndf_status ect_cpu_memory(ndf_ctx *ctx, const ect_call *c) {
  const int64_t nt = pick_threads(ctx, c), T = c->T;
  /* T is at most NDF_MAX_THRESHOLDS and the passes a few lines of a checked array: no overflow */
  const int64_t bytes = T * (int64_t)(NDF__ECC_SORT_BYTES + 2 * sizeof(double)) + nt * ((int64_t)pass_bytes(c) + (T + 1) * 8);
  return ndf__check_host_memory(ctx, c->name, "the thresholds, their sort and the histograms", bytes);
}

static ndf_status ect_cpu(ndf_ctx *ctx, const ect_call *c, const ndf_array *in, const ndf_array *dirs, ndf_array *out,
                          const double **coord, const double *t) {
  const int64_t T = c->T, pairs = c->nimg * c->m;
  const int nt = pick_threads(ctx, c);
  const size_t lb = pass_bytes(c);
  int64_t *perm = malloc((size_t)T * sizeof *perm);
  double *ts = malloc((size_t)T * sizeof *ts);
  void **bufs = ndf__thread_buffers(nt, lb + (size_t)(T + 1) * sizeof(double));
  ndf_status s = NDF_OK;
  ect_pat pat[27];
  if (!perm || !ts || !bufs || ndf__ecc_sort_thresholds(t, T, ts, perm)) {
    s = ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", c->name);
    goto done;
  }
  const int npat = make_patterns(c->nsp, c->cons, pat);
  const int64_t ds = out->strides[c->nb], ks = out->strides[c->nb + 1];
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
  for (int64_t p = 0; p < pairs; p++) {
    const int64_t img = p / c->m, j = p % c->m;
    char *b = bufs[ndf__thread_id()];
    pair_ctx pc = {c, in, coord, pat, npat, !c->weighted, 0, NULL, NULL, NULL};
    pass_bind(&pc, b);
    hist_ud hu = {ts, T, NULL, NULL};
    if (c->weighted) hu.hd = (double *)(b + lb);
    else hu.hi = (int64_t *)(b + lb);
    memset(b + lb, 0, (size_t)(T + 1) * sizeof(double));
    double u[3];
    for (int d = 0; d < c->nsp; d++) u[d] = dir_at(dirs, j, d);
    if (c->npix > 0) pair_pass(&pc, img, u, hist_voxel, &hu);
    const int64_t o = ndf__lead_offset(out, c->nb, img) + j * ds;
    if (c->weighted) {
      double acc = 0;
      for (int64_t k = 0; k < T; k++) {
        acc += hu.hd[k];
        ((double *)out->data)[o + perm[k] * ks] = acc;
      }
    } else {
      int64_t acc = 0;
      for (int64_t k = 0; k < T; k++) {
        acc += hu.hi[k];
        ((int64_t *)out->data)[o + perm[k] * ks] = acc;
      }
    }
  }
done:
  if (bufs) ndf__thread_buffers_free(bufs, nt);
  free(perm);
  free(ts);
  return s;
}

/* CUDA (ect_cuda.c): the coordinates (cbuf, axes concatenated) and the directions packed m x nsp. */
static ndf_status ect_cuda(ndf_ctx *ctx, const ect_call *c, const ndf_array *in, const ndf_array *dirs, ndf_array *out,
                           const double *cbuf, const double *t, int uniform) {
  double *du = malloc((size_t)c->m * (size_t)c->nsp * sizeof *du);
  if (!du) return ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", c->name);
  for (int64_t j = 0; j < c->m; j++)
    for (int d = 0; d < c->nsp; d++) du[j * c->nsp + d] = dir_at(dirs, j, d);
  ndf__ect_cuda_call cc = {c->name, c->nb, c->nsp, c->cons, c->weighted, c->nimg, c->npix, c->m, c->T,
                           {c->sshape[0], c->sshape[1], c->sshape[2]}};
  ndf_status s = ndf__ect_cuda(ctx, &cc, in, out, cbuf, du, t, uniform);
  free(du);
  return s;
}

static double *alloc_coords(const ect_call *c, const double **coord) {
  int64_t n = 1;
  for (int d = 0; d < c->nsp; d++) n += c->sshape[d];
  double *buf = malloc((size_t)n * sizeof *buf);
  if (buf) make_coords(c, buf, coord);
  return buf;
}

ndf_status ndf_euler_characteristic_transform(ndf_ctx *ctx, const ndf_array *input, const ndf_array *directions,
                                              ndf_array *output, const ndf_ect_options *opt) {
  const char *name = "ndf_euler_characteristic_transform";
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  ndf__clear_error(ctx);
  if (!output) return ndf__argerror(ctx, name, "output", "NULL");
  ect_call c;
  ndf_status s = check_exact(ctx, name, input, directions, output, opt, &c);
  if (s != NDF_OK) return s;
  if ((s = check_values(ctx, &c, input)) != NDF_OK) return s;
  if (ndf_array_size(output) == 0) return NDF_OK;
  if (input->device == NDF_DEVICE_CPU && (s = ect_cpu_memory(ctx, &c)) != NDF_OK) return s;
  const double *coord[3];
  double *cbuf = alloc_coords(&c, coord);
  double *t = malloc((size_t)c.T * sizeof *t);
  if (!cbuf || !t) s = ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", name);
  if (s == NDF_OK) s = check_heights(ctx, &c, directions, coord);
  if (s == NDF_OK) s = make_thresholds(ctx, &c, directions, opt, coord, t);
  if (s == NDF_OK && input->device == NDF_DEVICE_CUDA) s = ect_cuda(ctx, &c, input, directions, output, cbuf, t,
                                                                     opt->values == NULL);
  else if (s == NDF_OK) s = ect_cpu(ctx, &c, input, directions, output, coord, t);
  free(t);
  free(cbuf);
  return s;
}

ndf_status ndf_ect_thresholds(ndf_ctx *ctx, const ndf_array *input, const ndf_array *directions,
                              const ndf_ect_options *opt, double *thresholds, int64_t n) {
  const char *name = "ndf_ect_thresholds";
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  ndf__clear_error(ctx);
  if (!thresholds) return ndf__argerror(ctx, name, "thresholds", "NULL");
  ect_call c;
  ndf_status s = check_exact(ctx, name, input, directions, NULL, opt, &c);
  if (s != NDF_OK) return s;
  if (n != c.T) return ndf__argerror(ctx, name, "n", "%lld; the options give %lld thresholds", (long long)n, (long long)c.T);
  const double *coord[3];
  double *cbuf = alloc_coords(&c, coord);
  if (!cbuf) return ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", name);
  s = check_heights(ctx, &c, directions, coord);
  if (s == NDF_OK) s = make_thresholds(ctx, &c, directions, opt, coord, thresholds);
  free(cbuf);
  return s;
}

/* ---- soft ------------------------------------------------------------------------------------- */

static ndf_status check_soft(ndf_ctx *ctx, const char *name, const ndf_array *in, const ndf_array *dirs,
                             const ndf_array *thr, const ndf_array *arr, const char *arg, const ndf_array *gin,
                             const ndf_array *gdir, const ndf_array *gthr, const ndf_soft_ect_options *opt, ect_call *c) {
  if (!opt) return ndf__argerror(ctx, name, "options", "NULL");
  ndf_status s = check_common(ctx, name, in, dirs, (int)opt->construction, opt->weighted, opt->spacing, opt->normalize,
                              opt->batch_dims, c);
  if (s != NDF_OK) return s;
  if (!isfinite(opt->lambda) || !(opt->lambda > 0))
    return ndf__argerror(ctx, name, "lambda", "%g must be finite and > 0", opt->lambda);
  if (!thr) return ndf__argerror(ctx, name, "thresholds", "NULL");
  if (thr->dtype != NDF_FLOAT64 || thr->ndim != 1 || thr->device != NDF_DEVICE_CPU || thr->shape[0] < 1 || !thr->data)
    return ndf__argerror(ctx, name, "thresholds", "must be a non-empty host float64 1-D array");
  if ((s = ndf__check_array(ctx, name, "thresholds", thr, NULL)) != NDF_OK) return s;
  c->T = thr->shape[0];
  for (int64_t k = 0; k < c->T; k++)
    if (!isfinite(ndf__get_f64(thr, k * thr->strides[0])))
      return ndf__argerror(ctx, name, "thresholds", "thresholds[%lld] is not finite", (long long)k);
  if ((s = check_curve_array(ctx, c, in, arr, arg, NDF_FLOAT64)) != NDF_OK) return s;
  /* CUDA input: output / grad_output and grad_input on its device; the
   * directions, thresholds and their gradients are host arrays */
  const int dev = in->device == NDF_DEVICE_CUDA;
  if (dev && (s = ndf__check_device(ctx, name, in)) != NDF_OK) return s;
  if (ndf_array_size(in) > 0 && !in->data) return ndf__argerror(ctx, name, "input", "NULL data");
  if (arr->device != in->device || arr->device_id != in->device_id || (ndf_array_size(arr) > 0 && !arr->data))
    return ndf__argerror(ctx, name, arg, "must be an array with data on the input's device");
  if (ndf_array_size(arr) > 0 && (!ndf__layout_is_proper(arr) || ndf__arrays_overlap(arr, in) ||
                                  (!dev && ndf__arrays_overlap(arr, dirs))))
    return ndf__argerror(ctx, name, arg, "overlaps itself, the input or the directions");
  if (gin && (s = ndf__check_array(ctx, name, "grad_input", gin, NULL)) != NDF_OK) return s;
  if (gdir && (s = ndf__check_array(ctx, name, "grad_directions", gdir, NULL)) != NDF_OK) return s;
  if (gthr && (s = ndf__check_array(ctx, name, "grad_thresholds", gthr, NULL)) != NDF_OK) return s;
  if (gin) {
    if (gin->dtype != NDF_FLOAT32 && gin->dtype != NDF_FLOAT64)
      return ndf__argerror(ctx, name, "grad_input", "dtype %s; must be float32 or float64", dname(gin->dtype));
    if (gin->ndim != in->ndim) return ndf__argerror(ctx, name, "grad_input", "rank differs from the input's");
    for (int d = 0; d < in->ndim; d++)
      if (gin->shape[d] != in->shape[d]) return ndf__argerror(ctx, name, "grad_input", "shape[%d] differs from the input's", d);
    if (gin->device != in->device || gin->device_id != in->device_id || (ndf_array_size(gin) > 0 && !gin->data))
      return ndf__argerror(ctx, name, "grad_input", "must be an array with data on the input's device");
    if (ndf_array_size(gin) > 0 && (!ndf__layout_is_proper(gin) || ndf__arrays_overlap(gin, in) ||
                                    ndf__arrays_overlap(gin, arr) || (!dev && ndf__arrays_overlap(gin, dirs))))
      return ndf__argerror(ctx, name, "grad_input", "overlaps itself, the input, the directions or %s", arg);
  }
  if (gdir) {
    if (gdir->dtype != NDF_FLOAT64 || gdir->ndim != 2 || gdir->shape[0] != c->m || gdir->shape[1] != c->nsp ||
        gdir->device != NDF_DEVICE_CPU || !gdir->data)
      return ndf__argerror(ctx, name, "grad_directions", "must be a CPU float64 array of shape (%lld, %d)",
                           (long long)c->m, c->nsp);
    if (!ndf__layout_is_proper(gdir) || ndf__arrays_overlap(gdir, dirs) || (!dev && ndf__arrays_overlap(gdir, arr)))
      return ndf__argerror(ctx, name, "grad_directions", "overlaps itself, the directions or %s", arg);
  }
  if (gthr) {
    if (gthr->dtype != NDF_FLOAT64 || gthr->ndim != 1 || gthr->shape[0] != c->T || gthr->device != NDF_DEVICE_CPU ||
        !gthr->data)
      return ndf__argerror(ctx, name, "grad_thresholds", "must be a CPU float64 array of shape (%lld,)", (long long)c->T);
  }
  return NDF_OK;
}

static inline double sigmoid(double z) { return z >= 0 ? 1.0 / (1.0 + exp(-z)) : exp(z) / (1.0 + exp(z)); }

typedef struct soft_ud {
  const ect_call *c;
  const double **coord;
  const double *t;   /* T */
  double lam;
  const double *g;   /* backward: g_k of the pair (T) */
  double *acc;       /* forward: T sums; backward: this thread's dL/dt (T) */
  double *gu;        /* backward: this thread's dL/du of the pair's direction (nsp) */
  double *gw;        /* backward, weighted: dL/dweight of the image (npix), atomic adds */
  int64_t pstride[3];
  int mode;
} soft_ud;

static void soft_voxel(void *ud, int64_t lin, double h, double cw, const int8_t *src, const int8_t *sgn, int nown) {
  soft_ud *s = ud;
  const int64_t T = s->c->T;
  const double lam = s->lam;
  if (s->mode == 0) {
    if (cw != 0)
      for (int64_t k = 0; k < T; k++) s->acc[k] += cw * sigmoid(lam * (s->t[k] - h));
    return;
  }
  double sd = 0, ss = 0;
  for (int64_t k = 0; k < T; k++) {
    const double sk = sigmoid(lam * (s->t[k] - h));
    const double dk = lam * sk * (1 - sk) * s->g[k];
    sd += dk;
    ss += s->g[k] * sk;
    s->acc[k] += cw * dk;
  }
  if (s->gu && cw != 0) {
    int64_t q = lin;
    for (int d = s->c->nsp - 1; d >= 0; d--) {
      s->gu[d] -= cw * sd * s->coord[d][q % s->c->sshape[d]];
      q /= s->c->sshape[d];
    }
  }
  if (s->gw) {
    for (int i = 0; i < nown; i++) {
      int code = src[i];
      int64_t off = 0;
      for (int d = s->c->nsp - 1; d >= 0; d--) {
        off += (code % 3 - 1) * s->pstride[d];
        code /= 3;
      }
#pragma omp atomic
      s->gw[lin + off] += sgn[i] * ss;
    }
  }
}

static ndf_status soft_run(ndf_ctx *ctx, const ect_call *c, const ndf_array *in, const ndf_array *dirs,
                           const ndf_array *thr, ndf_array *arr, ndf_array *gin, ndf_array *gdir, ndf_array *gthr,
                           double lam, int mode) {
  const int64_t T = c->T, pairs = c->nimg * c->m, npix = c->npix;
  const int nsp = c->nsp;
  const int nt = pick_threads(ctx, c);
  const int want_gw = mode == 1 && gin && c->weighted;
  const size_t lb = pass_bytes(c);
  const size_t per = lb + (size_t)(3 * T + 3 * c->m + 4) * sizeof(double) + (size_t)c->m * nsp * sizeof(double);
  void **bufs = ndf__thread_buffers(nt, per);
  const double *coord[3];
  double *cbuf = alloc_coords(c, coord);
  double *t = malloc((size_t)T * sizeof *t);
  double *gw = want_gw ? calloc((size_t)(c->nimg * npix > 0 ? c->nimg * npix : 1), sizeof *gw) : NULL;
  ndf_status st = NDF_OK;
  ect_pat pat[27];
  if (!bufs || !cbuf || !t || (want_gw && !gw)) {
    st = ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", c->name);
    goto done;
  }
  if ((st = check_heights(ctx, c, dirs, coord)) != NDF_OK) goto done;
  for (int64_t k = 0; k < T; k++) t[k] = ndf__get_f64(thr, k * thr->strides[0]);
  const int npat = make_patterns(nsp, c->cons, pat);
  for (int i = 0; i < nt; i++) memset((char *)bufs[i] + lb, 0, per - lb);
  const int64_t as_d = arr->strides[c->nb], as_k = arr->strides[c->nb + 1];
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
  for (int64_t p = 0; p < pairs; p++) {
    const int64_t img = p / c->m, j = p % c->m;
    char *b = bufs[ndf__thread_id()];
    double *acc = (double *)(b + lb);  /* T: forward sums */
    double *gt = acc + T;              /* T: dL/dt over this thread's pairs */
    double *g = gt + T;                /* T: g of this pair */
    double *gu = g + T;                /* m * nsp: dL/du over this thread's pairs */
    pair_ctx pc = {c, in, coord, pat, npat, 0, want_gw, NULL, NULL, NULL};
    pass_bind(&pc, b);
    const int64_t ao = ndf__lead_offset(arr, c->nb, img) + j * as_d;
    soft_ud su = {c, coord, t, lam, g, mode == 0 ? acc : gt, mode == 1 && gdir ? gu + j * nsp : NULL,
                  want_gw ? gw + img * npix : NULL, {0, 0, 0}, mode};
    su.pstride[nsp - 1] = 1;
    for (int d = nsp - 2; d >= 0; d--) su.pstride[d] = su.pstride[d + 1] * c->sshape[d + 1];
    if (mode == 0) memset(acc, 0, (size_t)T * sizeof *acc);
    else
      for (int64_t k = 0; k < T; k++) g[k] = ((const double *)arr->data)[ao + k * as_k];
    double u[3];
    for (int d = 0; d < nsp; d++) u[d] = dir_at(dirs, j, d);
    if (npix > 0) pair_pass(&pc, img, u, soft_voxel, &su);
    if (mode == 0)
      for (int64_t k = 0; k < T; k++) ((double *)arr->data)[ao + k * as_k] = acc[k];
  }
  if (mode == 1) {
    if (gthr)
      for (int64_t k = 0; k < T; k++) {
        double sum = 0;
        for (int i = 0; i < nt; i++) sum += ((double *)((char *)bufs[i] + lb))[T + k];
        ((double *)gthr->data)[k * gthr->strides[0]] = sum;
      }
    if (gdir)
      for (int64_t j = 0; j < c->m; j++)
        for (int d = 0; d < nsp; d++) {
          double sum = 0;
          for (int i = 0; i < nt; i++) sum += ((double *)((char *)bufs[i] + lb))[3 * T + j * nsp + d];
          ((double *)gdir->data)[j * gdir->strides[0] + d * gdir->strides[1]] = sum;
        }
    if (gin && ndf_array_size(gin) > 0)
      for (int64_t i = 0; i < c->nimg * npix; i++) { /* i = img * npix + v, gw's order and gin's C order */
        const int64_t off = ndf__offset_of(gin, i);
        const double val = gw ? gw[i] : 0.0;
        if (gin->dtype == NDF_FLOAT32) ((float *)gin->data)[off] = (float)val;
        else ((double *)gin->data)[off] = val;
      }
  }
done:
  if (bufs) ndf__thread_buffers_free(bufs, nt);
  free(cbuf);
  free(t);
  free(gw);
  return st;
}

/* CUDA (ect_soft.cu via ect_cuda.c): the host prepares coordinates, thresholds and directions
 * as for the CPU; the gradients of the (host) directions and thresholds come back to the host. */
static ndf_status soft_cuda(ndf_ctx *ctx, const ect_call *c, const ndf_array *in, const ndf_array *dirs,
                            const ndf_array *thr, ndf_array *arr, ndf_array *gin, ndf_array *gdir, ndf_array *gthr,
                            double lam, int mode) {
  const int64_t T = c->T, m = c->m;
  const int nsp = c->nsp;
  const double *coord[3];
  double *cbuf = alloc_coords(c, coord);
  double *t = malloc((size_t)T * sizeof *t);
  double *du = malloc((size_t)m * nsp * sizeof *du);
  double *gd = malloc((size_t)m * nsp * sizeof *gd);
  double *gt = malloc((size_t)T * sizeof *gt);
  ndf_status st = NDF_OK;
  if (!cbuf || !t || !du || !gd || !gt) st = ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", c->name);
  if (st == NDF_OK) st = check_heights(ctx, c, dirs, coord);
  if (st == NDF_OK) {
    for (int64_t k = 0; k < T; k++) t[k] = ndf__get_f64(thr, k * thr->strides[0]);
    for (int64_t j = 0; j < m; j++)
      for (int d = 0; d < nsp; d++) du[j * nsp + d] = dir_at(dirs, j, d);
    ndf__ect_cuda_call cc = {c->name, c->nb, c->nsp, c->cons, c->weighted, c->nimg, c->npix, c->m, c->T,
                             {c->sshape[0], c->sshape[1], c->sshape[2]}};
    st = ndf__soft_ect_cuda(ctx, &cc, in, cbuf, du, t, lam, mode, arr, gin && ndf_array_size(gin) > 0 ? gin : NULL,
                            mode == 1 && gdir ? gd : NULL, mode == 1 && gthr ? gt : NULL);
  }
  if (st == NDF_OK && mode == 1) {
    if (gthr)
      for (int64_t k = 0; k < T; k++) ((double *)gthr->data)[k * gthr->strides[0]] = gt[k];
    if (gdir)
      for (int64_t j = 0; j < m; j++)
        for (int d = 0; d < nsp; d++) ((double *)gdir->data)[j * gdir->strides[0] + d * gdir->strides[1]] = gd[j * nsp + d];
  }
  free(cbuf);
  free(t);
  free(du);
  free(gd);
  free(gt);
  return st;
}

ndf_status ndf_soft_ect_forward(ndf_ctx *ctx, const ndf_array *input, const ndf_array *directions,
                                const ndf_array *thresholds, ndf_array *output, const ndf_soft_ect_options *opt) {
  const char *name = "ndf_soft_ect_forward";
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  ndf__clear_error(ctx);
  ect_call c;
  ndf_status s = check_soft(ctx, name, input, directions, thresholds, output, "output", NULL, NULL, NULL, opt, &c);
  if (s != NDF_OK) return s;
  if ((s = check_values(ctx, &c, input)) != NDF_OK) return s;
  if (ndf_array_size(output) == 0) return NDF_OK;
  if (input->device == NDF_DEVICE_CUDA)
    return soft_cuda(ctx, &c, input, directions, thresholds, output, NULL, NULL, NULL, opt->lambda, 0);
  return soft_run(ctx, &c, input, directions, thresholds, output, NULL, NULL, NULL, opt->lambda, 0);
}

ndf_status ndf_soft_ect_backward(ndf_ctx *ctx, const ndf_array *input, const ndf_array *directions,
                                 const ndf_array *thresholds, const ndf_array *grad_output, ndf_array *grad_input,
                                 ndf_array *grad_directions, ndf_array *grad_thresholds,
                                 const ndf_soft_ect_options *opt) {
  const char *name = "ndf_soft_ect_backward";
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  ndf__clear_error(ctx);
  ect_call c;
  ndf_status s = check_soft(ctx, name, input, directions, thresholds, grad_output, "grad_output", grad_input,
                            grad_directions, grad_thresholds, opt, &c);
  if (s != NDF_OK) return s;
  if ((s = check_values(ctx, &c, input)) != NDF_OK) return s;
  if (input->device == NDF_DEVICE_CUDA)
    return soft_cuda(ctx, &c, input, directions, thresholds, (ndf_array *)grad_output, grad_input, grad_directions,
                     grad_thresholds, opt->lambda, 1);
  return soft_run(ctx, &c, input, directions, thresholds, (ndf_array *)grad_output, grad_input, grad_directions,
                  grad_thresholds, opt->lambda, 1);
}

/* ---- cache warm ---------------------------------------------------------------------------------- */

ndf_status ndf_cache_warm_ect(ndf_ctx *ctx, const char *arch, const char *op, ndf_dtype dtype, int ndim,
                              const ndf_ect_options *opt, int *compiled) {
  static const char *name = "ndf_cache_warm_ect";
  ndf_status s = ndf__warm_check(ctx, name, arch, dtype, ndim, compiled);
  if (s != NDF_OK) return s;
  int soft;
  if (op && !strcmp(op, "euler_characteristic_transform")) soft = 0;
  else if (op && !strcmp(op, "soft_ect")) soft = 1;
  else return ndf__argerror(ctx, name, "op", "unknown op '%s' (euler_characteristic_transform, soft_ect)", op ? op : "(null)");
  if (!opt) return ndf__argerror(ctx, name, "options", "NULL");
  /* The input's stand-in and one direction: the checks of a call see its geometry. */
  ndf_array in, dirs;
  ndf__warm_array(&in, 0, dtype, ndim);
  double u[3] = {1.0, 0.0, 0.0};
  const int64_t nsp = ndim - opt->batch_dims, dshape[2] = {1, nsp >= 1 && nsp <= 3 ? nsp : 1};
  ndf_array_init(&dirs, u, NDF_DEVICE_CPU, NDF_FLOAT64, 2, dshape);
  ect_call c;
  s = check_common(ctx, name, &in, &dirs, opt->construction, opt->weighted, opt->spacing, opt->normalize,
                   opt->batch_dims, &c);
  if (s != NDF_OK) return s;
  ndf__warm w = {arch, 0};
  s = ndf__ect_cuda_warm(ctx, name, dtype, c.nsp, c.cons, c.weighted, soft, &w);
  if (compiled) *compiled = w.compiled;
  return s;
}
