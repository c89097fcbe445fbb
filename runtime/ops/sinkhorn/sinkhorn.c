/*
 * sinkhorn.c -- entropic optimal transport: batched Sinkhorn, the API and
 * the CPU backend (float64 reference).  The quantities are defined in
 * ndforge.h; the design in docs/adr/0010-sinkhorn.md.  With device CUDA the
 * iteration runs in sinkhorn_cuda.c and this file validates, then finishes
 * each pair on the host (objective, potentials, plan) with the same code.
 *
 * Internally the iteration runs on scaled potentials alpha = f/eps and
 * beta = g/eps:
 *   alpha_i = log a_i - LSE_j(beta_j + L_ij),  beta_j = log b_j - LSE_i(alpha_i + L_ij)
 * with L = -C/eps (log domain), or on u = exp(alpha), v = exp(beta) with
 * K = exp(L) (scaling form).  The kernel L (or K) is applied through one of
 * three operators, one per cost kind:
 *   dense      L (d x d) and its transpose, stored;
 *   grid LP    per-axis n_k x n_k kernels applied axis by axis (separable);
 *   grid eucl  a table of d values indexed by the absolute index offset.
 * Each histogram pair is solved by one thread, independently of the others.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sinkhorn/sinkhorn.h"

#define OP_CREATE "ndf_sinkhorn_create"
#define OP_SOLVE "ndf_sinkhorn_solve"
#define OP_PLAN "ndf_sinkhorn_plan"
#define OP_GRID "ndf_sinkhorn_grid_cost"

struct ndf_sinkhorn {
  ndf_ctx *ctx;
  ndf_sinkhorn_options opt; /* copy; opt.cost cleared */
  int64_t n, d;
  double eps;
  int log_domain;
  ndf_ot_cost kind;
  /* dense: C (cost), M = kernel (L or K), MT its transpose (== M when symmetric) */
  double *C, *M, *MT;
  /* grid: shape, strides, coordinates of each bin (d x D) */
  int D;
  int64_t gshape[NDF_MAX_SPATIAL], gstride[NDF_MAX_SPATIAL], maxn;
  int32_t *coord;
  /* grid LP: per-axis cost c_k (n_k x n_k), kernel (L_k or K_k), log kernel L_k and weighted log kernel L_k + log c_k */
  double *axc[NDF_MAX_SPATIAL], *axm[NDF_MAX_SPATIAL], *axl[NDF_MAX_SPATIAL], *axw[NDF_MAX_SPATIAL];
  /* grid euclidean: cost table T[offset] and kernel table (L or K) */
  double *T, *TM;
  /* last successful solve: potentials f, g (n x d) */
  double *f, *g;
  int solved;
  int csym;          /* dense: C is symmetric */
  ndf__sk_cuda *cuda; /* the CUDA backend (sinkhorn_cuda.c), NULL on the CPU */
  /* CUDA, a solve that wanted no potentials: they stay on the device until
   * plan asks for them (deferred), finished with the histograms kept here. */
  int deferred;
  double *defA, *defB;
  /* solve's n x d host work buffers, kept between solves (a fresh malloc of
   * that size is an mmap, and its first touch costs a page fault per 4 KB) */
  double *wA, *wB, *wF, *wG;
};

/* ---- small helpers ------------------------------------------------------------------------ */

static double get_elem(const ndf_array *x, int64_t off) {
  if (x->dtype == NDF_FLOAT32) return (double)((const float *)x->data)[off];
  return ((const double *)x->data)[off];
}

static inline void lse_add(double *m, double *s, double x) {
  if (x <= *m) {
    if (x > -INFINITY) *s += exp(x - *m);
  } else {
    *s = *s * exp(*m - x) + 1.0;
    *m = x;
  }
}
static inline double lse_end(double m, double s) { return m == -INFINITY ? -INFINITY : m + log(s); }

/* The grid cost between bins i and j in grid-index units (times scale). */
static double grid_cost_ij(ndf_ot_cost kind, int D, const int32_t *ci, const int32_t *cj, int p, double scale) {
  double acc = 0.0;
  for (int k = 0; k < D; k++) {
    double t = fabs((double)ci[k] - (double)cj[k]);
    acc += (kind == NDF_OT_COST_GRID_LP && p == 1) ? t : t * t;
  }
  if (kind == NDF_OT_COST_GRID_EUCLIDEAN) acc = sqrt(acc);
  return acc * scale;
}

static double cost_ij(const ndf_sinkhorn *s, int64_t i, int64_t j) {
  if (s->kind == NDF_OT_COST_DENSE) return s->C[i * s->d + j];
  return grid_cost_ij(s->kind, s->D, s->coord + i * s->D, s->coord + j * s->D, s->opt.p, s->opt.grid_scale);
}

static int64_t eucl_offset(const ndf_sinkhorn *s, const int32_t *ci, const int32_t *cj) {
  int64_t o = 0;
  for (int k = 0; k < s->D; k++) o += (int64_t)abs(ci[k] - cj[k]) * s->gstride[k];
  return o;
}

/* ---- kernel operators --------------------------------------------------------------------- */

/* Workspace per thread: 2 d (separable ping-pong) + 2 maxn (lines). */
typedef struct {
  double *w1, *w2, *lin, *lout;
} work;

/* One axis of the separable operator: y = M_k x along axis k (log: LSE form). */
static void axis_apply(const ndf_sinkhorn *s, int k, const double *M, int logd, const double *x, double *y,
                       work *w) {
  const int64_t nk = s->gshape[k], st = s->gstride[k];
  const int64_t outer = s->d / (nk * st);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t r = 0; r < st; r++) {
      const int64_t base = o * nk * st + r;
      for (int64_t t = 0; t < nk; t++) w->lin[t] = x[base + t * st];
      for (int64_t t = 0; t < nk; t++) {
        const double *row = M + t * nk;
        if (logd) {
          double m = -INFINITY, sm = 0.0;
          for (int64_t u = 0; u < nk; u++) lse_add(&m, &sm, w->lin[u] + row[u]);
          w->lout[t] = lse_end(m, sm);
        } else {
          double acc = 0.0;
          for (int64_t u = 0; u < nk; u++) acc += row[u] * w->lin[u];
          w->lout[t] = acc;
        }
      }
      for (int64_t t = 0; t < nk; t++) y[base + t * st] = w->lout[t];
    }
}

/* y = K x (scaling) or y_i = LSE_j(x_j + L_ij) (log); transpose: K^T / L^T.
 * weighted_axis >= 0 (log, grid LP only): axis k's kernel is L_k + log c_k. */
static void apply(const ndf_sinkhorn *s, const double *x, double *y, int transpose, int weighted_axis, work *w) {
  const int64_t d = s->d;
  const int logd = s->log_domain || weighted_axis >= 0;
  if (s->kind == NDF_OT_COST_DENSE) {
    const double *M = transpose ? s->MT : s->M;
    for (int64_t i = 0; i < d; i++) {
      const double *row = M + i * d;
      if (logd) {
        double m = -INFINITY, sm = 0.0;
        for (int64_t j = 0; j < d; j++) lse_add(&m, &sm, x[j] + row[j]);
        y[i] = lse_end(m, sm);
      } else {
        double acc = 0.0;
        for (int64_t j = 0; j < d; j++) acc += row[j] * x[j];
        y[i] = acc;
      }
    }
  } else if (s->kind == NDF_OT_COST_GRID_EUCLIDEAN) { /* symmetric: transpose is the same */
    const int D = s->D;
    for (int64_t i = 0; i < d; i++) {
      const int32_t *ci = s->coord + i * D;
      if (logd) {
        double m = -INFINITY, sm = 0.0;
        for (int64_t j = 0; j < d; j++) lse_add(&m, &sm, x[j] + s->TM[eucl_offset(s, ci, s->coord + j * D)]);
        y[i] = lse_end(m, sm);
      } else {
        double acc = 0.0;
        for (int64_t j = 0; j < d; j++) acc += s->TM[eucl_offset(s, ci, s->coord + j * D)] * x[j];
        y[i] = acc;
      }
    }
  } else { /* separable grid: symmetric per axis */
    const double *cur = x;
    for (int k = 0; k < s->D; k++) {
      double *dst = (k == s->D - 1) ? y : ((k % 2 == 0) ? w->w1 : w->w2);
      const double *Mk = k == weighted_axis ? s->axw[k] : (weighted_axis >= 0 ? s->axl[k] : s->axm[k]);
      axis_apply(s, k, Mk, logd, cur, dst, w);
      cur = dst;
    }
  }
}

/* ---- one histogram pair ------------------------------------------------------------------- */

typedef struct {
  double *alpha, *beta, *tmp; /* d each */
} pair_bufs;

/* L1 error of the row marginals for the current (alpha, beta) or (u, v). */
static double row_error(const ndf_sinkhorn *s, const double *a, const double *x, const double *y, pair_bufs *pb,
                        work *w) {
  apply(s, y, pb->tmp, 0, -1, w);
  double err = 0.0;
  for (int64_t i = 0; i < s->d; i++) {
    double r = s->log_domain ? (x[i] == -INFINITY ? 0.0 : exp(x[i] + pb->tmp[i])) : x[i] * pb->tmp[i];
    err += fabs(r - a[i]);
  }
  return err;
}

/* Runs the iteration; alpha, beta receive the scaled potentials.  Returns 0,
 * or the iteration (>= 1) at which the scaling form broke down. */
static int solve_pair(const ndf_sinkhorn *s, const double *a, const double *b, pair_bufs *pb, work *w,
                      int32_t *iters, double *err_out) {
  const int64_t d = s->d;
  double *x = pb->alpha, *y = pb->beta, *t = pb->tmp;
  const int ld = s->log_domain;
  for (int64_t j = 0; j < d; j++) y[j] = ld ? 0.0 : 1.0;
  double err = INFINITY;
  int it = 0;
  while (it < s->opt.max_iter) {
    apply(s, y, t, 0, -1, w); /* row update */
    for (int64_t i = 0; i < d; i++) {
      if (a[i] == 0.0) x[i] = ld ? -INFINITY : 0.0;
      else if (ld) x[i] = log(a[i]) - t[i];
      else {
        x[i] = a[i] / t[i];
        if (!(t[i] > 0.0) || !isfinite(x[i])) return it + 1;
      }
    }
    apply(s, x, t, 1, -1, w); /* column update */
    for (int64_t j = 0; j < d; j++) {
      if (b[j] == 0.0) y[j] = ld ? -INFINITY : 0.0;
      else if (ld) y[j] = log(b[j]) - t[j];
      else {
        y[j] = b[j] / t[j];
        if (!(t[j] > 0.0) || !isfinite(y[j])) return it + 1;
      }
    }
    it++;
    if (it % s->opt.check_every == 0 || it == s->opt.max_iter) {
      err = row_error(s, a, x, y, pb, w);
      if (s->opt.tol > 0.0 && err <= s->opt.tol) break;
    }
  }
  if (!ld)
    for (int64_t i = 0; i < d; i++) {
      x[i] = log(x[i]); /* log 0 = -inf at zero bins */
      y[i] = log(y[i]);
    }
  *iters = it;
  *err_out = err;
  return 0;
}

/* <P, C> from the scaled potentials (log form, stable for both iterations). */
static double transport_cost(const ndf_sinkhorn *s, const double *x, const double *y, pair_bufs *pb, work *w) {
  const int64_t d = s->d;
  double acc = 0.0;
  if (s->kind == NDF_OT_COST_GRID_LP) {
    for (int k = 0; k < s->D; k++) {
      apply(s, y, pb->tmp, 0, k, w);
      for (int64_t i = 0; i < d; i++)
        if (x[i] > -INFINITY && pb->tmp[i] > -INFINITY) acc += exp(x[i] + pb->tmp[i]);
    }
    return acc;
  }
  for (int64_t i = 0; i < d; i++) {
    if (x[i] == -INFINITY) continue;
    for (int64_t j = 0; j < d; j++) {
      if (y[j] == -INFINITY) continue;
      double c = cost_ij(s, i, j);
      acc += exp(x[i] + y[j] - c / s->eps) * c;
    }
  }
  return acc;
}

/* Turns the scaled potentials x = f/eps, y = g/eps of one pair into f, g
 * with <a, f> = <b, g>; returns OT_eps = <a, f> + <b, g>. */
static double finish_pair(const ndf_sinkhorn *s, const double *ak, const double *bk, double ma, double mb, double *x,
                          double *y) {
  const int64_t d = s->d;
  double fa = 0.0, gb = 0.0;
  for (int64_t i = 0; i < d; i++) {
    if (ak[i] > 0.0) fa += ak[i] * x[i];
    if (bk[i] > 0.0) gb += bk[i] * y[i];
  }
  fa *= s->eps;
  gb *= s->eps;
  const double c = (gb - fa) / (ma + mb); /* <a, f + c> = <b, g - c> */
  for (int64_t i = 0; i < d; i++) {
    x[i] = s->eps * x[i] + c; /* -inf stays -inf */
    y[i] = s->eps * y[i] - c;
  }
  return fa + gb;
}

/* A histogram row's mass, summed in the order load_hist sums it (4 partial
 * sums), so a deferred plan finishes with the masses of the solve, bit for bit. */
static double row_mass(const double *row, int64_t d) {
  double m4[4] = {0.0, 0.0, 0.0, 0.0};
  for (int64_t i = 0; i < d; i++) m4[i & 3] += row[i];
  return (m4[0] + m4[1]) + (m4[2] + m4[3]);
}

/* CUDA: the potentials of the last solve, downloaded and finished (plan). */
static ndf_status undefer(ndf_sinkhorn *s) {
  ndf_status st = ndf__sk_cuda_potentials(s->cuda, s->f, s->g);
  if (st != NDF_OK) return st;
  const int64_t d = s->d;
  for (int64_t k = 0; k < s->n; k++) {
    const double *ak = s->defA + k * d, *bk = s->defB + k * d;
    finish_pair(s, ak, bk, row_mass(ak, d), row_mass(bk, d), s->f + k * d, s->g + k * d);
  }
  s->deferred = 0;
  return NDF_OK;
}

/* ---- options, create, destroy ------------------------------------------------------------- */

void ndf_sinkhorn_options_init(ndf_sinkhorn_options *opt) {
  if (!opt) return;
  memset(opt, 0, sizeof *opt);
  opt->cost_kind = NDF_OT_COST_DENSE;
  opt->p = 2;
  opt->grid_scale = 1.0;
  opt->epsilon = 0.05;
  opt->max_iter = 100;
  opt->tol = 0.0;
  opt->check_every = 10;
  opt->log_domain = 0;
  opt->device = NDF_DEVICE_CPU;
  opt->dtype = NDF_FLOAT64;
}

void ndf_sinkhorn_destroy(ndf_sinkhorn *s) {
  if (!s) return;
  ndf__sk_cuda_destroy(s->cuda);
  free(s->wA);
  free(s->wB);
  free(s->wF);
  free(s->wG);
  free(s->C);
  if (s->MT != s->M) free(s->MT);
  free(s->M);
  free(s->coord);
  for (int k = 0; k < NDF_MAX_SPATIAL; k++) {
    free(s->axc[k]);
    free(s->axm[k]);
    free(s->axw[k]);
    free(s->axl[k]);
  }
  free(s->T);
  free(s->TM);
  free(s->f);
  free(s->g);
  free(s->defA);
  free(s->defB);
  free(s);
}

static ndf_status check_grid(ndf_ctx *ctx, const char *op, ndf_ot_cost kind, int ndim, const int64_t *shape, int p,
                             double scale, int64_t *d_out) {
  if (kind != NDF_OT_COST_GRID_LP && kind != NDF_OT_COST_GRID_EUCLIDEAN)
    return ndf__argerror(ctx, op, "cost_kind", "%d is not a grid cost (NDF_OT_COST_GRID_LP or _GRID_EUCLIDEAN)",
                         (int)kind);
  if (ndim < 1 || ndim > NDF_MAX_SPATIAL)
    return ndf__argerror(ctx, op, "grid_ndim", "%d is outside 1..%d", ndim, NDF_MAX_SPATIAL);
  if (!shape) return ndf__argerror(ctx, op, "grid_shape", "is NULL");
  int64_t d = 1;
  for (int k = 0; k < ndim; k++) {
    if (shape[k] < 1 || shape[k] > (1 << 20))
      return ndf__argerror(ctx, op, "grid_shape", "grid_shape[%d]=%lld is outside 1..%d", k, (long long)shape[k],
                           1 << 20);
    d *= shape[k];
    if (d > (1 << 24)) return ndf__argerror(ctx, op, "grid_shape", "more than %d bins", 1 << 24);
  }
  if (kind == NDF_OT_COST_GRID_LP && p != 1 && p != 2)
    return ndf__argerror(ctx, op, "p", "%d is not 1 or 2", p);
  if (!(scale > 0.0) || !isfinite(scale))
    return ndf__argerror(ctx, op, "grid_scale", "%g is not a finite positive number", scale);
  *d_out = d;
  return NDF_OK;
}

static ndf_status check_matrix(ndf_ctx *ctx, const char *op, const char *name, const ndf_array *m, int64_t r,
                               int64_t c, int write, int f32_ok) {
  if (!m) return ndf__argerror(ctx, op, name, "is NULL");
  if (m->device == NDF_DEVICE_CUDA)
    return ndf__error(ctx, NDF_ENOTSUP, "%s: '%s' is a CUDA array; entropic OT takes host arrays in this version",
                      op, name);
  if (m->device != NDF_DEVICE_CPU) return ndf__argerror(ctx, op, name, "unknown device type %d", (int)m->device);
  if (!(m->dtype == NDF_FLOAT64 || (f32_ok && m->dtype == NDF_FLOAT32)))
    return ndf__argerror(ctx, op, name, "dtype %s, expected %s", ndf_dtype_name(m->dtype) ? ndf_dtype_name(m->dtype) : "?",
                         f32_ok ? "float32 or float64" : "float64");
  if (c == 0) { /* a vector */
    if (m->ndim != 1 || m->shape[0] != r)
      return ndf__argerror(ctx, op, name, "expected shape (%lld,)", (long long)r);
  } else if (m->ndim != 2 || m->shape[0] != r || m->shape[1] != c)
    return ndf__argerror(ctx, op, name, "expected shape (%lld, %lld)", (long long)r, (long long)c);
  ndf_status s = ndf__check_array(ctx, op, name, m, NULL);
  if (s != NDF_OK) return s;
  if (!m->data && r > 0) return ndf__argerror(ctx, op, name, "data is NULL");
  (void)write;
  return NDF_OK;
}

static void *xcalloc(size_t n, size_t sz) { return calloc(n ? n : 1, sz); }

ndf_status ndf_sinkhorn_create(ndf_ctx *ctx, ndf_sinkhorn **out, const ndf_sinkhorn_options *opt) {
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (is NULL)", OP_CREATE);
  if (!out) return ndf__argerror(ctx, OP_CREATE, "out", "is NULL");
  *out = NULL;
  if (!opt) return ndf__argerror(ctx, OP_CREATE, "opt", "is NULL");
  if (opt->device != NDF_DEVICE_CPU && opt->device != NDF_DEVICE_CUDA)
    return ndf__argerror(ctx, OP_CREATE, "device", "unknown device %d", (int)opt->device);
  if (opt->device == NDF_DEVICE_CUDA && !ctx->has_cuda)
    return ndf__error(ctx, NDF_ENODEV, "%s: device cuda: the context has no CUDA device", OP_CREATE);
  if (opt->dtype != NDF_FLOAT64 && !(opt->dtype == NDF_FLOAT32 && opt->device == NDF_DEVICE_CUDA))
    return ndf__argerror(ctx, OP_CREATE, "dtype", "%s is not float64%s",
                         ndf_dtype_name(opt->dtype) ? ndf_dtype_name(opt->dtype) : "?",
                         opt->device == NDF_DEVICE_CUDA ? " or float32" : " (float32 runs on CUDA only)");
  if (opt->n < 1) return ndf__argerror(ctx, OP_CREATE, "n", "%lld is not >= 1", (long long)opt->n);
  if (opt->d < 1) return ndf__argerror(ctx, OP_CREATE, "d", "%lld is not >= 1", (long long)opt->d);
  if (!(opt->epsilon > 0.0) || !isfinite(opt->epsilon))
    return ndf__argerror(ctx, OP_CREATE, "epsilon", "%g is not a finite positive number", opt->epsilon);
  if (opt->max_iter < 1) return ndf__argerror(ctx, OP_CREATE, "max_iter", "%d is not >= 1", opt->max_iter);
  if (!(opt->tol >= 0.0) || !isfinite(opt->tol))
    return ndf__argerror(ctx, OP_CREATE, "tol", "%g is not a finite number >= 0", opt->tol);
  if (opt->check_every < 1) return ndf__argerror(ctx, OP_CREATE, "check_every", "%d is not >= 1", opt->check_every);
  if (opt->log_domain != 0 && opt->log_domain != 1)
    return ndf__argerror(ctx, OP_CREATE, "log_domain", "%d is not 0 or 1", opt->log_domain);
  const int64_t d = opt->d;
  if (opt->n > ((int64_t)1 << 40) / d)
    return ndf__argerror(ctx, OP_CREATE, "n", "n x d = %lld x %lld is too large", (long long)opt->n, (long long)d);
  const double eps = opt->epsilon;
  const int ld = opt->log_domain;
  ndf_status st;
  if (opt->cost_kind == NDF_OT_COST_DENSE) {
    if (d > (1 << 15)) return ndf__argerror(ctx, OP_CREATE, "d", "%lld is too large for a dense cost (max %d)", (long long)d, 1 << 15);
    if ((st = check_matrix(ctx, OP_CREATE, "cost", opt->cost, d, d, 0, 1)) != NDF_OK) return st;
    for (int64_t i = 0; i < d; i++)
      for (int64_t j = 0; j < d; j++) {
        double c = get_elem(opt->cost, i * opt->cost->strides[0] + j * opt->cost->strides[1]);
        if (!isfinite(c))
          return ndf__argerror(ctx, OP_CREATE, "cost", "cost[%lld, %lld] = %g is not finite", (long long)i, (long long)j, c);
      }
  } else if (opt->cost_kind == NDF_OT_COST_GRID_LP || opt->cost_kind == NDF_OT_COST_GRID_EUCLIDEAN) {
    int64_t gd = 0;
    if ((st = check_grid(ctx, OP_CREATE, opt->cost_kind, opt->grid_ndim, opt->grid_shape, opt->p, opt->grid_scale,
                         &gd)) != NDF_OK)
      return st;
    if (gd != d)
      return ndf__argerror(ctx, OP_CREATE, "d", "%lld is not the number of grid bins %lld", (long long)d, (long long)gd);
  } else {
    return ndf__argerror(ctx, OP_CREATE, "cost_kind", "unknown cost kind %d", (int)opt->cost_kind);
  }

  ndf_sinkhorn *s = calloc(1, sizeof *s);
  if (!s) return ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", OP_CREATE);
  s->ctx = ctx;
  s->opt = *opt;
  s->opt.cost = NULL;
  s->n = opt->n;
  s->d = d;
  s->eps = eps;
  s->log_domain = ld;
  s->kind = opt->cost_kind;
  s->f = xcalloc((size_t)(s->n * d), sizeof(double));
  s->g = xcalloc((size_t)(s->n * d), sizeof(double));
  if (!s->f || !s->g) goto nomem;
  if (s->kind == NDF_OT_COST_DENSE) {
    const size_t dd = (size_t)d * (size_t)d;
    s->C = malloc(dd * sizeof(double));
    s->M = malloc(dd * sizeof(double));
    if (!s->C || !s->M) goto nomem;
    int sym = 1;
    for (int64_t i = 0; i < d; i++)
      for (int64_t j = 0; j < d; j++)
        s->C[i * d + j] = get_elem(opt->cost, i * opt->cost->strides[0] + j * opt->cost->strides[1]);
    for (int64_t i = 0; i < d && sym; i++)
      for (int64_t j = 0; j < i; j++)
        if (s->C[i * d + j] != s->C[j * d + i]) {
          sym = 0;
          break;
        }
    for (size_t e = 0; e < dd; e++) s->M[e] = ld ? -s->C[e] / eps : exp(-s->C[e] / eps);
    s->csym = sym;
    if (sym) s->MT = s->M;
    else {
      s->MT = malloc(dd * sizeof(double));
      if (!s->MT) goto nomem;
      for (int64_t i = 0; i < d; i++)
        for (int64_t j = 0; j < d; j++) s->MT[j * d + i] = s->M[i * d + j];
    }
  } else {
    const int D = opt->grid_ndim;
    s->D = D;
    int64_t m = 1;
    s->maxn = 1;
    for (int k = D - 1; k >= 0; k--) {
      s->gshape[k] = opt->grid_shape[k];
      s->gstride[k] = m;
      m *= opt->grid_shape[k];
      if (opt->grid_shape[k] > s->maxn) s->maxn = opt->grid_shape[k];
    }
    s->coord = malloc((size_t)d * (size_t)D * sizeof(int32_t));
    if (!s->coord) goto nomem;
    for (int64_t i = 0; i < d; i++)
      for (int k = 0; k < D; k++) s->coord[i * D + k] = (int32_t)((i / s->gstride[k]) % s->gshape[k]);
    if (s->kind == NDF_OT_COST_GRID_LP) {
      for (int k = 0; k < D; k++) {
        const int64_t nk = s->gshape[k];
        s->axc[k] = malloc((size_t)(nk * nk) * sizeof(double));
        s->axm[k] = malloc((size_t)(nk * nk) * sizeof(double));
        s->axw[k] = malloc((size_t)(nk * nk) * sizeof(double));
        s->axl[k] = malloc((size_t)(nk * nk) * sizeof(double));
        if (!s->axc[k] || !s->axm[k] || !s->axw[k] || !s->axl[k]) goto nomem;
        for (int64_t t = 0; t < nk; t++)
          for (int64_t u = 0; u < nk; u++) {
            double dt = fabs((double)(t - u));
            double c = (opt->p == 1 ? dt : dt * dt) * opt->grid_scale;
            s->axc[k][t * nk + u] = c;
            s->axm[k][t * nk + u] = ld ? -c / eps : exp(-c / eps);
            s->axl[k][t * nk + u] = -c / eps;
            s->axw[k][t * nk + u] = -c / eps + log(c); /* log 0 = -inf: no contribution */
          }
      }
    } else {
      s->T = malloc((size_t)d * sizeof(double));
      s->TM = malloc((size_t)d * sizeof(double));
      if (!s->T || !s->TM) goto nomem;
      int32_t zero[NDF_MAX_SPATIAL] = {0};
      for (int64_t o = 0; o < d; o++) {
        s->T[o] = grid_cost_ij(s->kind, D, s->coord + o * D, zero, opt->p, opt->grid_scale);
        s->TM[o] = ld ? -s->T[o] / eps : exp(-s->T[o] / eps);
      }
    }
  }
  if (opt->device == NDF_DEVICE_CUDA) {
    ndf__sk_host_cost hc = {s->C, s->M, s->MT, s->T, s->TM, s->csym};
    if ((st = ndf__sk_cuda_create(ctx, opt, &hc, &s->cuda)) != NDF_OK) {
      ndf_sinkhorn_destroy(s);
      return st;
    }
  }
  *out = s;
  ndf__clear_error(ctx);
  return NDF_OK;
nomem:
  ndf_sinkhorn_destroy(s);
  return ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", OP_CREATE);
}

/* ---- solve -------------------------------------------------------------------------------- */

static ndf_status check_out(ndf_ctx *ctx, const char *name, const ndf_array *x, ndf_dtype dt, int64_t r, int64_t c) {
  if (!x) return NDF_OK;
  if (x->device == NDF_DEVICE_CUDA)
    return ndf__error(ctx, NDF_ENOTSUP, "%s: '%s' is a CUDA array; entropic OT takes host arrays in this version",
                      OP_SOLVE, name);
  if (x->device != NDF_DEVICE_CPU) return ndf__argerror(ctx, OP_SOLVE, name, "unknown device type %d", (int)x->device);
  if (x->dtype != dt)
    return ndf__argerror(ctx, OP_SOLVE, name, "dtype %s, expected %s",
                         ndf_dtype_name(x->dtype) ? ndf_dtype_name(x->dtype) : "?", ndf_dtype_name(dt));
  if (c == 0 ? (x->ndim != 1 || x->shape[0] != r) : (x->ndim != 2 || x->shape[0] != r || x->shape[1] != c)) {
    if (c == 0) return ndf__argerror(ctx, OP_SOLVE, name, "expected shape (%lld,)", (long long)r);
    return ndf__argerror(ctx, OP_SOLVE, name, "expected shape (%lld, %lld)", (long long)r, (long long)c);
  }
  ndf_status s = ndf__check_array(ctx, OP_SOLVE, name, x, NULL);
  if (s != NDF_OK) return s;
  if (!x->data) return ndf__argerror(ctx, OP_SOLVE, name, "data is NULL");
  return NDF_OK;
}

/* Copies the (n, d) histograms into dst (float64, contiguous), checks every
 * value is finite and >= 0 and every row has positive mass; the error names
 * the first offending row in order (a bad value before a zero mass).  The
 * row mass is summed in four interleaved partial sums (element i into sum
 * i % 4, then (s0 + s1) + (s2 + s3)) for every layout alike: a single running
 * sum is one dependent add per element.  Rows run in parallel when there are
 * many values (this copy is most of the host's work per solve on the GPU
 * path); the result does not depend on it. */
static ndf_status load_hist(ndf_ctx *ctx, const char *name, const ndf_array *x, int64_t n, int64_t d, double *dst,
                            double *mass) {
  const int fast = x->dtype == NDF_FLOAT64 && x->strides[1] == 1; /* rows of contiguous doubles */
  const int nth = n * d >= (1 << 16) ? ndf__cpu_threads(ctx) : 1;
#pragma omp parallel for num_threads(nth) schedule(static) if (nth > 1)
  for (int64_t k = 0; k < n; k++) {
    double m4[4] = {0.0, 0.0, 0.0, 0.0};
    int bad = 0;
    double *out = dst + k * d;
    if (fast) {
      const double *row = (const double *)x->data + k * x->strides[0];
      for (int64_t i = 0; i < d; i++) {
        const double v = row[i];
        out[i] = v;
        m4[i & 3] += v;
        bad |= !(v >= 0.0 && v <= DBL_MAX); /* NaN, inf or negative */
      }
    } else {
      for (int64_t i = 0; i < d; i++) {
        const double v = get_elem(x, k * x->strides[0] + i * x->strides[1]);
        out[i] = v;
        m4[i & 3] += v;
        bad |= !(v >= 0.0 && v <= DBL_MAX);
      }
    }
    mass[k] = bad ? -1.0 : (m4[0] + m4[1]) + (m4[2] + m4[3]); /* -1: a bad value */
  }
  for (int64_t k = 0; k < n; k++) {
    if (mass[k] == -1.0) {
      const double *out = dst + k * d;
      for (int64_t i = 0; i < d; i++)
        if (!isfinite(out[i]) || out[i] < 0.0)
          return ndf__argerror(ctx, OP_SOLVE, name, "%s[%lld, %lld] = %g is not finite and >= 0", name, (long long)k,
                               (long long)i, out[i]);
    }
    if (!(mass[k] > 0.0)) return ndf__argerror(ctx, OP_SOLVE, name, "row %lld has mass 0", (long long)k);
  }
  return NDF_OK;
}

ndf_status ndf_sinkhorn_solve(ndf_sinkhorn *s, const ndf_array *a, const ndf_array *b, const ndf_sinkhorn_result *res) {
  if (!s) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 's' (is NULL)", OP_SOLVE);
  ndf_ctx *ctx = s->ctx;
  const int64_t n = s->n, d = s->d;
  ndf_status st;
  if (!res) return ndf__argerror(ctx, OP_SOLVE, "res", "is NULL");
  if ((st = check_matrix(ctx, OP_SOLVE, "a", a, n, d, 0, 1)) != NDF_OK) return st;
  if ((st = check_matrix(ctx, OP_SOLVE, "b", b, n, d, 0, 1)) != NDF_OK) return st;
  if ((st = check_out(ctx, "transport_cost", res->transport_cost, NDF_FLOAT64, n, 0)) != NDF_OK) return st;
  if ((st = check_out(ctx, "objective", res->objective, NDF_FLOAT64, n, 0)) != NDF_OK) return st;
  if ((st = check_out(ctx, "f", res->f, NDF_FLOAT64, n, d)) != NDF_OK) return st;
  if ((st = check_out(ctx, "g", res->g, NDF_FLOAT64, n, d)) != NDF_OK) return st;
  if ((st = check_out(ctx, "iterations", res->iterations, NDF_INT32, n, 0)) != NDF_OK) return st;
  if ((st = check_out(ctx, "error", res->error, NDF_FLOAT64, n, 0)) != NDF_OK) return st;

  const size_t nd = (size_t)(n * d);
  double *A = s->wA ? s->wA : malloc(nd * sizeof(double)), *B = s->wB ? s->wB : malloc(nd * sizeof(double));
  double *F = s->wF ? s->wF : malloc(nd * sizeof(double)), *G = s->wG ? s->wG : malloc(nd * sizeof(double));
  s->wA = s->wB = s->wF = s->wG = NULL; /* taken; given back at done */
  double *ma = malloc((size_t)n * sizeof(double)), *mb = malloc((size_t)n * sizeof(double));
  double *tc = malloc((size_t)n * sizeof(double)), *obj = malloc((size_t)n * sizeof(double));
  double *er = malloc((size_t)n * sizeof(double));
  int32_t *its = malloc((size_t)n * sizeof(int32_t));
  int *fail = calloc((size_t)n, sizeof(int));
  /* CUDA: potentials nobody asked for stay on the device (plan fetches them). */
  const int defer = s->cuda && !res->f && !res->g && !res->objective;
  const int nth = ndf__cpu_threads(ctx);
  const size_t wsz = (size_t)(3 * d + 2 * (s->maxn > 0 ? s->maxn : 1)) * sizeof(double);
  void **bufs = defer ? NULL : ndf__thread_buffers(nth, wsz); /* deferred: no host pass over the pairs */
  if (!A || !B || !F || !G || !ma || !mb || !tc || !obj || !er || !its || !fail || (!defer && !bufs)) {
    st = ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", OP_SOLVE);
    goto done;
  }
  if ((st = load_hist(ctx, "a", a, n, d, A, ma)) != NDF_OK) goto done;
  if ((st = load_hist(ctx, "b", b, n, d, B, mb)) != NDF_OK) goto done;
  for (int64_t k = 0; k < n; k++)
    if (fabs(ma[k] - mb[k]) > 1e-5 * fmax(ma[k], mb[k])) {
      st = ndf__argerror(ctx, OP_SOLVE, "b", "row %lld has mass %.17g but a's row has %.17g (masses must be equal)",
                         (long long)k, mb[k], ma[k]);
      goto done;
    }

  /* The device is about to be overwritten: deferred potentials of the last
   * solve are lost, so plan then needs this solve to succeed. */
  if (s->cuda && s->deferred) s->solved = 0;
  if (s->cuda && (st = ndf__sk_cuda_solve(s->cuda, A, B, defer ? NULL : F, G, its, er, tc, fail)) != NDF_OK) goto done;
  if (!defer) /* deferred CUDA solves have nothing to finish on the host (no OpenMP wake-up) */
#pragma omp parallel for num_threads(nth) schedule(dynamic, 1)
  for (int64_t k = 0; k < n; k++) {
    double *wb = bufs[ndf__thread_id()];
    work w = {wb + d, wb + 2 * d, wb + 3 * d, wb + 3 * d + (s->maxn > 0 ? s->maxn : 1)};
    /* alpha/beta live in F/G rows; tmp is the first d of the buffer */
    pair_bufs pb = {F + k * d, G + k * d, wb};
    const double *ak = A + k * d, *bk = B + k * d;
    if (!s->cuda) { /* CUDA: alpha, beta, iterations, error, <P, C> and failures came from the device */
      int bad = solve_pair(s, ak, bk, &pb, &w, &its[k], &er[k]);
      if (bad) {
        fail[k] = bad;
        continue;
      }
      tc[k] = transport_cost(s, pb.alpha, pb.beta, &pb, &w);
    } else if (fail[k] || defer) {
      continue;
    }
    obj[k] = finish_pair(s, ak, bk, ma[k], mb[k], pb.alpha, pb.beta);
  }
  for (int64_t k = 0; k < n; k++)
    if (fail[k]) {
      st = ndf__error(ctx, NDF_EINVAL,
                      "%s: the scaling form broke down at iteration %d of pair %lld (exp(-C/epsilon) underflows "
                      "for epsilon=%g); use the log domain or a larger epsilon",
                      OP_SOLVE, fail[k], (long long)k, s->eps);
      goto done;
    }
  /* commit */
  for (int64_t k = 0; k < n; k++) {
    if (res->transport_cost) ((double *)res->transport_cost->data)[k * res->transport_cost->strides[0]] = tc[k];
    if (res->objective) ((double *)res->objective->data)[k * res->objective->strides[0]] = obj[k];
    if (res->iterations) ((int32_t *)res->iterations->data)[k * res->iterations->strides[0]] = its[k];
    if (res->error) ((double *)res->error->data)[k * res->error->strides[0]] = er[k];
    for (int64_t i = 0; i < d; i++) {
      if (res->f) ((double *)res->f->data)[k * res->f->strides[0] + i * res->f->strides[1]] = F[k * d + i];
      if (res->g) ((double *)res->g->data)[k * res->g->strides[0] + i * res->g->strides[1]] = G[k * d + i];
    }
  }
  if (defer) { /* keep the histograms for undefer (the old ones become work buffers) */
    double *oa = s->defA, *ob = s->defB;
    s->defA = A;
    s->defB = B;
    A = oa;
    B = ob;
  } else {
    memcpy(s->f, F, nd * sizeof(double));
    memcpy(s->g, G, nd * sizeof(double));
  }
  s->deferred = defer;
  s->solved = 1;
  ndf__clear_error(ctx);
  st = NDF_OK;
done:
  s->wA = A; /* NULL ones are allocated by the next solve */
  s->wB = B;
  s->wF = F;
  s->wG = G;
  free(ma);
  free(mb);
  free(tc);
  free(obj);
  free(er);
  free(its);
  free(fail);
  if (bufs) ndf__thread_buffers_free(bufs, nth);
  return st;
}

/* ---- plan and grid cost ------------------------------------------------------------------- */

ndf_status ndf_sinkhorn_plan(ndf_sinkhorn *s, int64_t index, ndf_array *plan) {
  if (!s) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 's' (is NULL)", OP_PLAN);
  ndf_ctx *ctx = s->ctx;
  const int64_t d = s->d;
  ndf_status st;
  if (!s->solved) return ndf__error(ctx, NDF_EINVAL, "%s: the solver has no successful solve yet", OP_PLAN);
  if (index < 0 || index >= s->n)
    return ndf__argerror(ctx, OP_PLAN, "index", "%lld is outside 0..%lld", (long long)index, (long long)s->n - 1);
  if (plan && plan->device == NDF_DEVICE_CUDA)
    return ndf__error(ctx, NDF_ENOTSUP, "%s: 'plan' is a CUDA array; entropic OT takes host arrays in this version",
                      OP_PLAN);
  if ((st = check_matrix(ctx, OP_PLAN, "plan", plan, d, d, 1, 0)) != NDF_OK) return st;
  if (s->deferred && (st = undefer(s)) != NDF_OK) return st;
  const double *f = s->f + index * d, *g = s->g + index * d;
  double *P = plan->data;
  const int nth = ndf__cpu_threads(ctx);
#pragma omp parallel for num_threads(nth) schedule(static)
  for (int64_t i = 0; i < d; i++)
    for (int64_t j = 0; j < d; j++) {
      double v = (f[i] == -INFINITY || g[j] == -INFINITY) ? 0.0 : exp((f[i] + g[j] - cost_ij(s, i, j)) / s->eps);
      P[i * plan->strides[0] + j * plan->strides[1]] = v;
    }
  ndf__clear_error(ctx);
  return NDF_OK;
}

ndf_status ndf_sinkhorn_grid_cost(ndf_ot_cost kind, int ndim, const int64_t *shape, int p, double scale,
                                  ndf_array *out) {
  int64_t d = 0;
  ndf_status st = check_grid(NULL, OP_GRID, kind, ndim, shape, p, scale, &d);
  if (st != NDF_OK) return st;
  if (d > (1 << 15)) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'shape' (%lld bins: a dense cost has at most %d)", OP_GRID, (long long)d, 1 << 15);
  if (out && out->device == NDF_DEVICE_CUDA)
    return ndf__error(NULL, NDF_ENOTSUP, "%s: 'out' is a CUDA array; entropic OT takes host arrays in this version",
                      OP_GRID);
  if ((st = check_matrix(NULL, OP_GRID, "out", out, d, d, 1, 0)) != NDF_OK) return st;
  int64_t gst[NDF_MAX_SPATIAL];
  int64_t m = 1;
  for (int k = ndim - 1; k >= 0; k--) {
    gst[k] = m;
    m *= shape[k];
  }
  int32_t ci[NDF_MAX_SPATIAL], cj[NDF_MAX_SPATIAL];
  double *o = out->data;
  for (int64_t i = 0; i < d; i++) {
    for (int k = 0; k < ndim; k++) ci[k] = (int32_t)((i / gst[k]) % shape[k]);
    for (int64_t j = 0; j < d; j++) {
      for (int k = 0; k < ndim; k++) cj[k] = (int32_t)((j / gst[k]) % shape[k]);
      o[i * out->strides[0] + j * out->strides[1]] = grid_cost_ij(kind, ndim, ci, cj, p, scale);
    }
  }
  return NDF_OK;
}
