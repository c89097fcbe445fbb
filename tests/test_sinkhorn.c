/*
 * test_sinkhorn.c -- entropic optimal transport (ndf_sinkhorn_*), CPU backend.
 *
 * The reference is a separate, deliberately plain float64 implementation of
 * the textbook iterations written here (dense d x d matrices, the scaling
 * form u = a / K v, v = b / K^T u, and a log-domain form with a two-pass
 * log-sum-exp), never the library's code.  Properties checked on random
 * inputs: the library equals the reference run for the same iterations; the
 * fixed point (marginals of the plan match a and b); dense and grid costs
 * agree; scaling and log domain agree where both are stable; the log domain
 * stays finite for eps = 1e-3 of the cost scale; finite differences of
 * OT_eps match the potentials; early exit equals full iterations to
 * tolerance; zero bins give -inf potentials and no NaN; batch independence;
 * the contract (bad input, CUDA arrays, outputs untouched).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ndforge.h"
#include "testutil.h"

static tu_rng rng;
static ndf_ctx *ctx;

static int setup(void **st) {
  (void)st;
  tu_rng_seed(&rng, tu_seed("NDF_TEST_SEED"));
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  o.backend = NDF_BACKEND_CPU;
  o.cache_disable = 1;
  return ndf_ctx_create(&ctx, &o) == NDF_OK ? 0 : -1;
}
static int teardown(void **st) {
  (void)st;
  ndf_ctx_destroy(ctx);
  return 0;
}

/* ---- inputs ---------------------------------------------------------------------------------- */

/* n random histograms of mass 1; a fraction zfrac of the bins set to 0. */
static double *rand_hist(int64_t n, int64_t d, double zfrac) {
  double *h = malloc((size_t)(n * d) * sizeof(double));
  for (int64_t k = 0; k < n; k++) {
    double m = 0.0;
    for (int64_t i = 0; i < d; i++) {
      h[k * d + i] = tu_rng_chance(&rng, zfrac) ? 0.0 : 0.05 + tu_rng_unif(&rng);
      m += h[k * d + i];
    }
    if (m == 0.0) {
      h[k * d] = 1.0;
      m = 1.0;
    }
    for (int64_t i = 0; i < d; i++) h[k * d + i] /= m;
  }
  return h;
}

static ndf_array arr(double *p, int ndim, int64_t s0, int64_t s1) {
  ndf_array a;
  int64_t sh[2] = {s0, s1};
  ndf_array_init(&a, p, NDF_DEVICE_CPU, NDF_FLOAT64, ndim, sh);
  return a;
}

/* ---- the reference (textbook, dense) --------------------------------------------------------- */

typedef struct {
  double tc, obj, err;
  double *f, *g; /* d each, shifted so that <a, f> = <b, g> */
} ref_out;

static void ref_solve(const double *C, int64_t d, const double *a, const double *b, double eps, int iters, int logd,
                      ref_out *r) {
  double *u = malloc((size_t)d * sizeof(double)), *v = malloc((size_t)d * sizeof(double));
  double *K = malloc((size_t)(d * d) * sizeof(double));
  for (int64_t e = 0; e < d * d; e++) K[e] = exp(-C[e] / eps);
  /* scaling form: u, v; log form: u, v hold f/eps, g/eps */
  for (int64_t j = 0; j < d; j++) v[j] = logd ? 0.0 : 1.0;
  for (int it = 0; it < iters; it++) {
    for (int64_t i = 0; i < d; i++) {
      if (logd) {
        double mx = -INFINITY, s = 0.0;
        for (int64_t j = 0; j < d; j++) mx = fmax(mx, v[j] - C[i * d + j] / eps);
        for (int64_t j = 0; j < d; j++) s += exp(v[j] - C[i * d + j] / eps - mx);
        u[i] = a[i] > 0 ? log(a[i]) - (mx + log(s)) : -INFINITY;
      } else {
        double s = 0.0;
        for (int64_t j = 0; j < d; j++) s += K[i * d + j] * v[j];
        u[i] = a[i] / s;
      }
    }
    for (int64_t j = 0; j < d; j++) {
      if (logd) {
        double mx = -INFINITY, s = 0.0;
        for (int64_t i = 0; i < d; i++) mx = fmax(mx, u[i] - C[i * d + j] / eps);
        for (int64_t i = 0; i < d; i++) s += exp(u[i] - C[i * d + j] / eps - mx);
        v[j] = b[j] > 0 ? log(b[j]) - (mx + log(s)) : -INFINITY;
      } else {
        double s = 0.0;
        for (int64_t i = 0; i < d; i++) s += K[i * d + j] * u[i];
        v[j] = b[j] / s;
      }
    }
  }
  double *f = r->f, *g = r->g;
  for (int64_t i = 0; i < d; i++) {
    f[i] = eps * (logd ? u[i] : log(u[i]));
    g[i] = eps * (logd ? v[i] : log(v[i]));
  }
  /* the plan, explicitly */
  double tc = 0.0, err = 0.0, fa = 0.0, gb = 0.0, ma = 0.0, mb = 0.0;
  for (int64_t i = 0; i < d; i++) {
    double row = 0.0;
    for (int64_t j = 0; j < d; j++) {
      double p = (a[i] > 0 && b[j] > 0) ? exp((f[i] + g[j] - C[i * d + j]) / eps) : 0.0;
      row += p;
      tc += p * C[i * d + j];
    }
    err += fabs(row - a[i]);
    if (a[i] > 0) fa += a[i] * f[i];
    if (b[i] > 0) gb += b[i] * g[i];
    ma += a[i];
    mb += b[i];
  }
  double c = (gb - fa) / (ma + mb);
  for (int64_t i = 0; i < d; i++) {
    f[i] += c;
    g[i] -= c;
  }
  r->tc = tc;
  r->obj = fa + gb;
  r->err = err;
  free(u);
  free(v);
  free(K);
}

/* ---- running the library --------------------------------------------------------------------- */

typedef struct {
  double *tc, *obj, *err, *f, *g;
  int32_t *it;
} lib_out;

static void lib_out_alloc(lib_out *o, int64_t n, int64_t d) {
  o->tc = malloc((size_t)n * sizeof(double));
  o->obj = malloc((size_t)n * sizeof(double));
  o->err = malloc((size_t)n * sizeof(double));
  o->f = malloc((size_t)(n * d) * sizeof(double));
  o->g = malloc((size_t)(n * d) * sizeof(double));
  o->it = malloc((size_t)n * sizeof(int32_t));
}
static void lib_out_free(lib_out *o) {
  free(o->tc);
  free(o->obj);
  free(o->err);
  free(o->f);
  free(o->g);
  free(o->it);
}

typedef struct {
  ndf_ot_cost kind;
  const double *C; /* dense */
  int gnd;
  int64_t gshape[4];
  int p;
  double scale;
} cost_spec;

static ndf_status lib_solve_keep(const cost_spec *cs, int64_t n, int64_t d, const double *a, const double *b,
                                 double eps, int max_iter, double tol, int check_every, int logd, lib_out *o,
                                 ndf_sinkhorn **keep) {
  ndf_sinkhorn_options opt;
  ndf_sinkhorn_options_init(&opt);
  opt.n = n;
  opt.d = d;
  opt.cost_kind = cs->kind;
  ndf_array C = arr((double *)cs->C, 2, d, d);
  if (cs->kind == NDF_OT_COST_DENSE) opt.cost = &C;
  opt.grid_ndim = cs->gnd;
  for (int k = 0; k < cs->gnd; k++) opt.grid_shape[k] = cs->gshape[k];
  opt.p = cs->p ? cs->p : 2;
  opt.grid_scale = cs->scale > 0 ? cs->scale : 1.0;
  opt.epsilon = eps;
  opt.max_iter = max_iter;
  opt.tol = tol;
  opt.check_every = check_every;
  opt.log_domain = logd;
  ndf_sinkhorn *s = NULL;
  ndf_status st = ndf_sinkhorn_create(ctx, &s, &opt);
  if (st != NDF_OK) {
    print_error("create: %s\n", ndf_errmsg(ctx));
    return st;
  }
  ndf_array A = arr((double *)a, 2, n, d), B = arr((double *)b, 2, n, d);
  ndf_array tc = arr(o->tc, 1, n, 0), obj = arr(o->obj, 1, n, 0), er = arr(o->err, 1, n, 0);
  ndf_array F = arr(o->f, 2, n, d), G = arr(o->g, 2, n, d);
  ndf_array it;
  ndf_array_init(&it, o->it, NDF_DEVICE_CPU, NDF_INT32, 1, &n);
  ndf_sinkhorn_result res = {&tc, &obj, &F, &G, &it, &er};
  st = ndf_sinkhorn_solve(s, &A, &B, &res);
  if (keep && st == NDF_OK) *keep = s;
  else ndf_sinkhorn_destroy(s);
  return st;
}
static ndf_status lib_solve(const cost_spec *cs, int64_t n, int64_t d, const double *a, const double *b, double eps,
                            int max_iter, double tol, int check_every, int logd, lib_out *o) {
  return lib_solve_keep(cs, n, d, a, b, eps, max_iter, tol, check_every, logd, o, NULL);
}

static double *rand_cost(int64_t d, double lo, double hi) {
  double *C = malloc((size_t)(d * d) * sizeof(double));
  for (int64_t e = 0; e < d * d; e++) C[e] = lo + (hi - lo) * tu_rng_unif(&rng);
  return C;
}

static double *grid_dense(ndf_ot_cost kind, int nd, const int64_t *shape, int p, double scale, int64_t *d_out) {
  int64_t d = 1;
  for (int k = 0; k < nd; k++) d *= shape[k];
  double *C = malloc((size_t)(d * d) * sizeof(double));
  ndf_array out = arr(C, 2, d, d);
  assert_int_equal(ndf_sinkhorn_grid_cost(kind, nd, shape, p, scale, &out), NDF_OK);
  *d_out = d;
  return C;
}

/* |x - y| <= atol + rtol |y|, with -inf == -inf */
static void close_to(double x, double y, double rtol, double atol, const char *what, int64_t k) {
  if (y == -INFINITY && x == -INFINITY) return;
  if (!(fabs(x - y) <= atol + rtol * fabs(y)))
    fail_msg("%s[%lld]: got %.17g expected %.17g (diff %.3g)", what, (long long)k, x, y, fabs(x - y));
}

/* ---- tests --------------------------------------------------------------------------------- */

/* The library equals the reference run for the same number of iterations. */
static void test_against_reference(void **st) {
  (void)st;
  for (int trial = 0; trial < 4; trial++) {
    const int64_t n = 1 + tu_rng_int(&rng, 0, 3), d = 5 + tu_rng_int(&rng, 0, 30);
    const int logd = trial & 1;
    const double eps = 0.1 + tu_rng_unif(&rng);
    const int iters = 1 + (int)tu_rng_int(&rng, 0, 60);
    double *C = rand_cost(d, 0.0, 2.0), *a = rand_hist(n, d, 0.0), *b = rand_hist(n, d, 0.0);
    cost_spec cs = {NDF_OT_COST_DENSE, C, 0, {0}, 0, 0};
    lib_out o;
    lib_out_alloc(&o, n, d);
    assert_int_equal(lib_solve(&cs, n, d, a, b, eps, iters, 0.0, 7, logd, &o), NDF_OK);
    ref_out r = {0, 0, 0, malloc((size_t)d * sizeof(double)), malloc((size_t)d * sizeof(double))};
    for (int64_t k = 0; k < n; k++) {
      ref_solve(C, d, a + k * d, b + k * d, eps, iters, logd, &r);
      assert_int_equal(o.it[k], iters);
      close_to(o.tc[k], r.tc, 1e-10, 1e-13, "transport_cost", k);
      close_to(o.obj[k], r.obj, 1e-10, 1e-12, "objective", k);
      close_to(o.err[k], r.err, 1e-6, 1e-12, "error", k);
      for (int64_t i = 0; i < d; i++) {
        close_to(o.f[k * d + i], r.f[i], 1e-9, 1e-11, "f", i);
        close_to(o.g[k * d + i], r.g[i], 1e-9, 1e-11, "g", i);
      }
      /* the documented normalization */
      double fa = 0, gb = 0;
      for (int64_t i = 0; i < d; i++) {
        fa += a[k * d + i] * o.f[k * d + i];
        gb += b[k * d + i] * o.g[k * d + i];
      }
      close_to(fa, gb, 1e-12, 1e-12, "<a,f> vs <b,g>", k);
      close_to(fa + gb, o.obj[k], 1e-12, 1e-12, "<a,f>+<b,g>", k);
    }
    free(r.f);
    free(r.g);
    lib_out_free(&o);
    free(C);
    free(a);
    free(b);
  }
}

/* Converged: the plan's marginals are a and b; <P, C> and OT_eps from the plan. */
static void test_fixed_point(void **st) {
  (void)st;
  for (int logd = 0; logd < 2; logd++) {
    const int64_t n = 2, shape[2] = {5, 4};
    int64_t d;
    double *C = grid_dense(NDF_OT_COST_GRID_LP, 2, shape, 2, 1.0 / 25.0, &d);
    double *a = rand_hist(n, d, 0.0), *b = rand_hist(n, d, 0.0);
    const double eps = 0.05;
    cost_spec cs = {NDF_OT_COST_GRID_LP, NULL, 2, {5, 4}, 2, 1.0 / 25.0};
    lib_out o;
    lib_out_alloc(&o, n, d);
    ndf_sinkhorn *s = NULL;
    assert_int_equal(lib_solve_keep(&cs, n, d, a, b, eps, 5000, 1e-12, 5, logd, &o, &s), NDF_OK);
    double *P = malloc((size_t)(d * d) * sizeof(double));
    ndf_array Pa = arr(P, 2, d, d);
    for (int64_t k = 0; k < n; k++) {
      assert_true(o.err[k] <= 1e-12);
      assert_true(o.it[k] < 5000 && o.it[k] % 5 == 0);
      assert_int_equal(ndf_sinkhorn_plan(s, k, &Pa), NDF_OK);
      double tc = 0, ent = 0;
      for (int64_t i = 0; i < d; i++) {
        double row = 0, col = 0;
        for (int64_t j = 0; j < d; j++) {
          row += P[i * d + j];
          col += P[j * d + i];
          tc += P[i * d + j] * C[i * d + j];
          if (P[i * d + j] > 0) ent += P[i * d + j] * log(P[i * d + j]);
        }
        close_to(row, a[k * d + i], 0, 1e-11, "row marginal", i);
        close_to(col, b[k * d + i], 0, 1e-11, "column marginal", i);
      }
      close_to(o.tc[k], tc, 1e-10, 1e-14, "transport_cost vs plan", k);
      close_to(o.obj[k], tc + eps * ent, 1e-9, 1e-12, "objective vs primal", k);
    }
    ndf_sinkhorn_destroy(s);
    free(P);
    lib_out_free(&o);
    free(C);
    free(a);
    free(b);
  }
}

/* Grid costs (separable LP, on-the-fly euclidean) equal the dense cost of the same grid. */
static void test_dense_vs_grid(void **st) {
  (void)st;
  static const struct {
    int nd;
    int64_t shape[3];
  } grids[] = {{1, {9}}, {2, {5, 6}}, {3, {4, 3, 3}}};
  for (size_t gi = 0; gi < sizeof grids / sizeof grids[0]; gi++)
    for (int kindp = 0; kindp < 3; kindp++)
      for (int logd = 0; logd < 2; logd++) {
        const ndf_ot_cost kind = kindp == 2 ? NDF_OT_COST_GRID_EUCLIDEAN : NDF_OT_COST_GRID_LP;
        const int p = kindp == 0 ? 1 : 2;
        const double scale = 0.1 + tu_rng_unif(&rng) * 0.2;
        int64_t d;
        double *C = grid_dense(kind, grids[gi].nd, grids[gi].shape, p, scale, &d);
        /* the helper's cost, recomputed here */
        for (int64_t i = 0; i < d; i++)
          for (int64_t j = 0; j < d; j++) {
            int64_t ii = i, jj = j;
            double acc = 0;
            for (int k = grids[gi].nd - 1; k >= 0; k--) {
              double t = fabs((double)(ii % grids[gi].shape[k]) - (double)(jj % grids[gi].shape[k]));
              acc += (kind == NDF_OT_COST_GRID_LP && p == 1) ? t : t * t;
              ii /= grids[gi].shape[k];
              jj /= grids[gi].shape[k];
            }
            if (kind == NDF_OT_COST_GRID_EUCLIDEAN) acc = sqrt(acc);
            close_to(C[i * d + j], acc * scale, 1e-15, 0, "grid cost", i * d + j);
          }
        const int64_t n = 3;
        double *a = rand_hist(n, d, 0.1), *b = rand_hist(n, d, 0.1);
        cost_spec cd = {NDF_OT_COST_DENSE, C, 0, {0}, 0, 0};
        cost_spec cg = {kind, NULL, grids[gi].nd, {0}, p, scale};
        for (int k = 0; k < grids[gi].nd; k++) cg.gshape[k] = grids[gi].shape[k];
        lib_out od, og;
        lib_out_alloc(&od, n, d);
        lib_out_alloc(&og, n, d);
        assert_int_equal(lib_solve(&cd, n, d, a, b, 0.3, 40, 0.0, 10, logd, &od), NDF_OK);
        assert_int_equal(lib_solve(&cg, n, d, a, b, 0.3, 40, 0.0, 10, logd, &og), NDF_OK);
        for (int64_t k = 0; k < n; k++) {
          close_to(og.tc[k], od.tc[k], 1e-10, 1e-14, "grid transport_cost", k);
          close_to(og.obj[k], od.obj[k], 1e-10, 1e-12, "grid objective", k);
          close_to(og.err[k], od.err[k], 1e-6, 1e-13, "grid error", k);
          for (int64_t i = 0; i < n * d; i++) {
            close_to(og.f[i], od.f[i], 1e-9, 1e-11, "grid f", i);
            close_to(og.g[i], od.g[i], 1e-9, 1e-11, "grid g", i);
          }
        }
        lib_out_free(&od);
        lib_out_free(&og);
        free(C);
        free(a);
        free(b);
      }
}

/* Scaling and log domain agree where both are stable; zero bins give -inf and no NaN. */
static void test_scaling_vs_log_and_zero_bins(void **st) {
  (void)st;
  for (int trial = 0; trial < 3; trial++) {
    const int64_t n = 4, shape[2] = {6, 7};
    int64_t d;
    const ndf_ot_cost kind = trial == 2 ? NDF_OT_COST_GRID_EUCLIDEAN : NDF_OT_COST_GRID_LP;
    double *C = grid_dense(kind, 2, shape, 2, 1.0 / 36.0, &d);
    double *a = rand_hist(n, d, trial == 0 ? 0.0 : 0.3), *b = rand_hist(n, d, trial == 0 ? 0.0 : 0.3);
    cost_spec cs = {kind, NULL, 2, {6, 7}, 2, 1.0 / 36.0};
    lib_out os, ol;
    lib_out_alloc(&os, n, d);
    lib_out_alloc(&ol, n, d);
    assert_int_equal(lib_solve(&cs, n, d, a, b, 0.05, 300, 0.0, 10, 0, &os), NDF_OK);
    assert_int_equal(lib_solve(&cs, n, d, a, b, 0.05, 300, 0.0, 10, 1, &ol), NDF_OK);
    ref_out r = {0, 0, 0, malloc((size_t)d * sizeof(double)), malloc((size_t)d * sizeof(double))};
    for (int64_t k = 0; k < n; k++) {
      close_to(os.tc[k], ol.tc[k], 1e-9, 1e-14, "scaling vs log transport_cost", k);
      close_to(os.obj[k], ol.obj[k], 1e-9, 1e-12, "scaling vs log objective", k);
      ref_solve(C, d, a + k * d, b + k * d, 0.05, 300, 1, &r);
      close_to(ol.tc[k], r.tc, 1e-9, 1e-14, "log vs reference transport_cost", k);
      for (int64_t i = 0; i < d; i++) {
        const int64_t e = k * d + i;
        close_to(os.f[e], ol.f[e], 1e-8, 1e-10, "scaling vs log f", e);
        close_to(os.g[e], ol.g[e], 1e-8, 1e-10, "scaling vs log g", e);
        close_to(ol.f[e], r.f[i], 1e-8, 1e-10, "log vs reference f", e);
        assert_true(a[e] == 0.0 ? ol.f[e] == -INFINITY && os.f[e] == -INFINITY : isfinite(ol.f[e]));
        assert_true(b[e] == 0.0 ? ol.g[e] == -INFINITY && os.g[e] == -INFINITY : isfinite(ol.g[e]));
      }
      assert_true(isfinite(ol.tc[k]) && isfinite(ol.obj[k]) && isfinite(ol.err[k]));
      assert_true(isfinite(os.tc[k]) && isfinite(os.obj[k]) && isfinite(os.err[k]));
    }
    free(r.f);
    free(r.g);
    lib_out_free(&os);
    lib_out_free(&ol);
    free(C);
    free(a);
    free(b);
  }
}

/* eps = 1e-3 of the cost scale (max 1): log domain finite and converging; scaling fails cleanly. */
static void test_small_epsilon(void **st) {
  (void)st;
  const int64_t n = 2, shape[2] = {8, 8}, d = 64;
  const double scale = 1.0 / 98.0; /* max cost 1 */
  double *a = rand_hist(n, d, 0.2), *b = rand_hist(n, d, 0.2);
  for (int kind = 0; kind < 3; kind++) {
    int64_t dd;
    const ndf_ot_cost gk = kind == 1 ? NDF_OT_COST_GRID_EUCLIDEAN : NDF_OT_COST_GRID_LP;
    double *C = grid_dense(gk, 2, shape, 2, scale, &dd);
    cost_spec cs = kind == 2 ? (cost_spec){NDF_OT_COST_DENSE, C, 0, {0}, 0, 0}
                             : (cost_spec){gk, NULL, 2, {8, 8}, 2, scale};
    lib_out o;
    lib_out_alloc(&o, n, d);
    /* convergence is slow at this epsilon: check stability, not convergence,
       and the numbers against the textbook log-domain reference */
    assert_int_equal(lib_solve(&cs, n, d, a, b, 1e-3, 300, 0.0, 10, 1, &o), NDF_OK);
    ref_out r = {0, 0, 0, malloc((size_t)d * sizeof(double)), malloc((size_t)d * sizeof(double))};
    for (int64_t k = 0; k < n; k++) {
      assert_true(isfinite(o.tc[k]) && isfinite(o.obj[k]) && isfinite(o.err[k]));
      assert_true(o.err[k] <= 2.0 + 1e-12);
      assert_true(o.tc[k] >= 0.0 && o.tc[k] <= 1.0 + 1e-12);
      ref_solve(C, d, a + k * d, b + k * d, 1e-3, 300, 1, &r);
      close_to(o.tc[k], r.tc, 1e-7, 1e-12, "eps 1e-3 transport_cost vs reference", k);
      close_to(o.obj[k], r.obj, 1e-7, 1e-10, "eps 1e-3 objective vs reference", k);
      close_to(o.err[k], r.err, 1e-5, 1e-10, "eps 1e-3 error vs reference", k);
      for (int64_t i = 0; i < d; i++)
        close_to(o.f[k * d + i], r.f[i], 1e-7, 1e-9, "eps 1e-3 f vs reference", i);
      for (int64_t i = 0; i < d; i++) {
        assert_true(a[k * d + i] == 0.0 ? o.f[k * d + i] == -INFINITY : isfinite(o.f[k * d + i]));
        assert_true(b[k * d + i] == 0.0 ? o.g[k * d + i] == -INFINITY : isfinite(o.g[k * d + i]));
      }
    }
    free(r.f);
    free(r.g);
    /* a cost >= 1 everywhere: exp(-C/eps) underflows to 0 and the scaling form
       breaks down (K v = 0): a clear error, outputs untouched */
    if (kind == 2) {
      double *C1 = rand_cost(d, 1.0, 2.0);
      cost_spec c1 = {NDF_OT_COST_DENSE, C1, 0, {0}, 0, 0};
      tu_poison(o.tc, (size_t)n * sizeof(double));
      tu_poison(o.f, (size_t)(n * d) * sizeof(double));
      ndf_status s = lib_solve(&c1, n, d, a, b, 1e-3, 50, 0.0, 10, 0, &o);
      assert_int_equal(s, NDF_EINVAL);
      assert_non_null(strstr(ndf_errmsg(ctx), "log domain"));
      assert_int_equal(tu_poison_check(o.tc, (size_t)n * sizeof(double)), -1);
      assert_int_equal(tu_poison_check(o.f, (size_t)(n * d) * sizeof(double)), -1);
      assert_int_equal(lib_solve(&c1, n, d, a, b, 1e-3, 50, 0.0, 10, 1, &o), NDF_OK);
      assert_true(isfinite(o.tc[0]) && isfinite(o.obj[0]));
      free(C1);
    }
    lib_out_free(&o);
    free(C);
  }
  free(a);
  free(b);
}

/* Finite differences of OT_eps along feasible directions equal <da, f> + <db, g>. */
static void test_gradient(void **st) {
  (void)st;
  for (int logd = 0; logd < 2; logd++) {
    const int64_t d = 12;
    double *C = rand_cost(d, 0.0, 1.0), *a = rand_hist(1, d, 0.0), *b = rand_hist(1, d, 0.0);
    cost_spec cs = {NDF_OT_COST_DENSE, C, 0, {0}, 0, 0};
    const double eps = 0.2, h = 1e-5;
    lib_out o, op, om;
    lib_out_alloc(&o, 1, d);
    lib_out_alloc(&op, 1, d);
    lib_out_alloc(&om, 1, d);
    assert_int_equal(lib_solve(&cs, 1, d, a, b, eps, 100000, 1e-14, 1, logd, &o), NDF_OK);
    for (int t = 0; t < 6; t++) {
      /* direction: move mass h between two bins of a (t even) or of b (t odd), or shift a and b together */
      double *da = calloc((size_t)d, sizeof(double)), *db = calloc((size_t)d, sizeof(double));
      int64_t i = tu_rng_int(&rng, 0, d - 1), j = (i + 1 + tu_rng_int(&rng, 0, d - 2)) % d;
      if (t < 4) {
        double *x = (t % 2) ? db : da;
        x[i] = 1;
        x[j] = -1;
      } else { /* unbalanced in each, balanced together: sum da = sum db */
        da[i] = 1;
        db[j] = 1;
        for (int64_t e = 0; e < d; e++) {
          da[e] -= 0.5 / (double)d;
          db[e] -= 0.5 / (double)d;
        }
      }
      double ap[64], am[64], bp[64], bm[64], pred = 0;
      for (int64_t e = 0; e < d; e++) {
        ap[e] = a[e] + h * da[e];
        am[e] = a[e] - h * da[e];
        bp[e] = b[e] + h * db[e];
        bm[e] = b[e] - h * db[e];
        pred += da[e] * o.f[e] + db[e] * o.g[e];
      }
      /* the documented extra term when the mass changes: eps (sum da + sum db) / 2 */
      double sda = 0, sdb = 0;
      for (int64_t e = 0; e < d; e++) {
        sda += da[e];
        sdb += db[e];
      }
      pred += eps * (sda + sdb) / 2;
      assert_int_equal(lib_solve(&cs, 1, d, ap, bp, eps, 100000, 1e-14, 1, logd, &op), NDF_OK);
      assert_int_equal(lib_solve(&cs, 1, d, am, bm, eps, 100000, 1e-14, 1, logd, &om), NDF_OK);
      double fd = (op.obj[0] - om.obj[0]) / (2 * h);
      close_to(fd, pred, 1e-6, 1e-8, "finite difference of OT_eps", t);
      /* and it is not the gradient of <P, C> (the two differ by the entropy's derivative) */
      double fdc = (op.tc[0] - om.tc[0]) / (2 * h);
      assert_true(fabs(fdc - pred) > 1e-4 * (fabs(pred) + 1e-3));
      free(da);
      free(db);
    }
    lib_out_free(&o);
    lib_out_free(&op);
    lib_out_free(&om);
    free(C);
    free(a);
    free(b);
  }
}

/* Early exit equals full iterations to tolerance, and a batch's pairs are independent. */
static void test_early_exit_and_batch(void **st) {
  (void)st;
  const int64_t n = 5, shape[2] = {7, 5};
  int64_t d = 35;
  double *a = rand_hist(n, d, 0.1), *b = rand_hist(n, d, 0.1);
  cost_spec cs = {NDF_OT_COST_GRID_LP, NULL, 2, {7, 5}, 1, 1.0 / 10.0};
  (void)shape;
  for (int logd = 0; logd < 2; logd++) {
    lib_out oe, of, o1, ox;
    lib_out_alloc(&oe, n, d);
    lib_out_alloc(&of, n, d);
    lib_out_alloc(&o1, 1, d);
    lib_out_alloc(&ox, n, d);
    assert_int_equal(lib_solve(&cs, n, d, a, b, 0.1, 5000, 1e-10, 3, logd, &oe), NDF_OK);
    assert_int_equal(lib_solve(&cs, n, d, a, b, 0.1, 5000, 0.0, 3, logd, &of), NDF_OK);
    for (int64_t k = 0; k < n; k++) {
      assert_true(oe.it[k] % 3 == 0 && oe.it[k] < 5000 && oe.err[k] <= 1e-10);
      assert_int_equal(of.it[k], 5000);
      close_to(oe.tc[k], of.tc[k], 1e-8, 1e-12, "early vs full transport_cost", k);
      close_to(oe.obj[k], of.obj[k], 1e-8, 1e-12, "early vs full objective", k);
      for (int64_t i = 0; i < d; i++) close_to(oe.f[k * d + i], of.f[k * d + i], 1e-7, 1e-9, "early vs full f", i);
      /* exactly max_iter = iterations run and tol 0: the same numbers */
      lib_out_free(&o1);
      lib_out_alloc(&o1, 1, d);
      assert_int_equal(lib_solve(&cs, 1, d, a + k * d, b + k * d, 0.1, oe.it[k], 0.0, 3, logd, &o1), NDF_OK);
      assert_true(o1.tc[0] == oe.tc[k] && o1.obj[0] == oe.obj[k] && o1.err[0] == oe.err[k]);
      assert_memory_equal(o1.f, oe.f + k * d, (size_t)d * sizeof(double));
    }
    lib_out_free(&oe);
    lib_out_free(&of);
    lib_out_free(&o1);
    lib_out_free(&ox);
  }
  free(a);
  free(b);
}

/* Plan with zero bins: rows/columns of zero bins are 0, no NaN. */
static void test_plan_zero_bins(void **st) {
  (void)st;
  const int64_t d = 20;
  double *C = rand_cost(d, 0.0, 1.0), *a = rand_hist(1, d, 0.4), *b = rand_hist(1, d, 0.4);
  cost_spec cs = {NDF_OT_COST_DENSE, C, 0, {0}, 0, 0};
  for (int logd = 0; logd < 2; logd++) {
    lib_out o;
    lib_out_alloc(&o, 1, d);
    ndf_sinkhorn *s = NULL;
    assert_int_equal(lib_solve_keep(&cs, 1, d, a, b, 0.1, 3000, 1e-12, 10, logd, &o, &s), NDF_OK);
    double P[400];
    ndf_array Pa = arr(P, 2, d, d);
    assert_int_equal(ndf_sinkhorn_plan(s, 0, &Pa), NDF_OK);
    for (int64_t i = 0; i < d; i++) {
      double row = 0, col = 0;
      for (int64_t j = 0; j < d; j++) {
        assert_false(isnan(P[i * d + j]));
        if (a[i] == 0.0 || b[j] == 0.0) assert_true(P[i * d + j] == 0.0);
        row += P[i * d + j];
        col += P[j * d + i];
      }
      close_to(row, a[i], 0, 1e-11, "row", i);
      close_to(col, b[i], 0, 1e-11, "col", i);
    }
    ndf_sinkhorn_destroy(s);
    lib_out_free(&o);
  }
  free(C);
  free(a);
  free(b);
}

/* Strided inputs and outputs (a transposed view, a broadcast row, a reversed
 * axis) give the same numbers as contiguous ones. */
static void test_strides(void **st) {
  (void)st;
  const int64_t n = 3, d = 10;
  double *C = rand_cost(d, 0.0, 1.0), *a = rand_hist(n, d, 0.1), *b1 = rand_hist(1, d, 0.1);
  double *b = malloc((size_t)(n * d) * sizeof(double));
  for (int64_t k = 0; k < n; k++) memcpy(b + k * d, b1, (size_t)d * sizeof(double));
  cost_spec cs = {NDF_OT_COST_DENSE, C, 0, {0}, 0, 0};
  lib_out o;
  lib_out_alloc(&o, n, d);
  assert_int_equal(lib_solve(&cs, n, d, a, b, 0.2, 30, 0.0, 10, 1, &o), NDF_OK);
  /* a stored transposed (d, n) and viewed as (n, d); b a zero-stride broadcast of
   * one row; f written reversed along d into a wider buffer */
  double *aT = malloc((size_t)(n * d) * sizeof(double)), *Fw = malloc((size_t)(n * d * 2) * sizeof(double));
  for (int64_t k = 0; k < n; k++)
    for (int64_t i = 0; i < d; i++) aT[i * n + k] = a[k * d + i];
  ndf_array A = arr(aT, 2, n, d), B = arr(b1, 2, n, d), C2 = arr(C, 2, d, d), F = arr(Fw, 2, n, d);
  A.strides[0] = 1;
  A.strides[1] = n;
  B.strides[0] = 0;
  F.data = Fw + d - 1;
  F.strides[0] = 2 * d;
  F.strides[1] = -1;
  double tc[3];
  ndf_array T = arr(tc, 1, n, 0);
  ndf_sinkhorn_options opt;
  ndf_sinkhorn_options_init(&opt);
  opt.n = n;
  opt.d = d;
  opt.cost = &C2;
  opt.epsilon = 0.2;
  opt.max_iter = 30;
  opt.log_domain = 1;
  ndf_sinkhorn *s = NULL;
  assert_int_equal(ndf_sinkhorn_create(ctx, &s, &opt), NDF_OK);
  ndf_sinkhorn_result res = {&T, NULL, &F, NULL, NULL, NULL};
  assert_int_equal(ndf_sinkhorn_solve(s, &A, &B, &res), NDF_OK);
  for (int64_t k = 0; k < n; k++) {
    assert_true(tc[k] == o.tc[k]);
    for (int64_t i = 0; i < d; i++) assert_true(Fw[k * 2 * d + d - 1 - i] == o.f[k * d + i]);
  }
  ndf_sinkhorn_destroy(s);
  lib_out_free(&o);
  free(aT);
  free(Fw);
  free(C);
  free(a);
  free(b);
  free(b1);
}

/* Bad input: clear errors, nothing written; CUDA arrays: NDF_ENOTSUP; device cuda without one: NDF_ENODEV. */
static void test_contract(void **st) {
  (void)st;
  const int64_t n = 2, d = 6;
  double C[36], a[12], b[12], tc[2], F[12];
  for (int e = 0; e < 36; e++) C[e] = (double)(e % 7);
  for (int e = 0; e < 12; e++) a[e] = b[e] = 1.0 / 6.0;
  ndf_array Ca = arr(C, 2, d, d);
  ndf_sinkhorn_options opt;
  ndf_sinkhorn_options_init(&opt);
  opt.n = n;
  opt.d = d;
  opt.cost = &Ca;
  ndf_sinkhorn *s = (ndf_sinkhorn *)&opt; /* must be cleared on failure */
  /* create */
  assert_int_equal(ndf_sinkhorn_create(NULL, &s, &opt), NDF_EINVAL);
  assert_int_equal(ndf_sinkhorn_create(ctx, NULL, &opt), NDF_EINVAL);
  assert_int_equal(ndf_sinkhorn_create(ctx, &s, NULL), NDF_EINVAL);
  assert_null(s);
  ndf_sinkhorn_options o2;
#define BAD(field_expr, arg, code)                                                           \
  do {                                                                                       \
    o2 = opt;                                                                                \
    field_expr;                                                                              \
    s = (ndf_sinkhorn *)&o2;                                                                 \
    assert_int_equal(ndf_sinkhorn_create(ctx, &s, &o2), code);                               \
    assert_null(s);                                                                          \
    if (code == NDF_EINVAL) assert_non_null(strstr(ndf_errmsg(ctx), "'" arg "'"));           \
  } while (0)
  BAD(o2.epsilon = 0, "epsilon", NDF_EINVAL);
  BAD(o2.epsilon = NAN, "epsilon", NDF_EINVAL);
  BAD(o2.max_iter = 0, "max_iter", NDF_EINVAL);
  BAD(o2.tol = -1, "tol", NDF_EINVAL);
  BAD(o2.check_every = 0, "check_every", NDF_EINVAL);
  BAD(o2.n = 0, "n", NDF_EINVAL);
  BAD(o2.d = 5, "cost", NDF_EINVAL);
  BAD(o2.cost = NULL, "cost", NDF_EINVAL);
  BAD(o2.log_domain = 2, "log_domain", NDF_EINVAL);
  BAD(o2.cost_kind = (ndf_ot_cost)7, "cost_kind", NDF_EINVAL);
  BAD((o2.cost_kind = NDF_OT_COST_GRID_LP, o2.grid_ndim = 2, o2.grid_shape[0] = 2, o2.grid_shape[1] = 2), "d",
      NDF_EINVAL);
  BAD((o2.cost_kind = NDF_OT_COST_GRID_LP, o2.grid_ndim = 2, o2.grid_shape[0] = 2, o2.grid_shape[1] = 3, o2.p = 3),
      "p", NDF_EINVAL);
  BAD((o2.cost_kind = NDF_OT_COST_GRID_EUCLIDEAN, o2.grid_ndim = 0), "grid_ndim", NDF_EINVAL);
  BAD((o2.cost_kind = NDF_OT_COST_GRID_LP, o2.grid_ndim = 2, o2.grid_shape[0] = 2, o2.grid_shape[1] = 3,
       o2.grid_scale = -1),
      "grid_scale", NDF_EINVAL);
  BAD(o2.device = NDF_DEVICE_CUDA, "device", NDF_ENODEV); /* a CPU context */
  assert_non_null(strstr(ndf_errmsg(ctx), "no CUDA device"));
  BAD(o2.dtype = NDF_FLOAT32, "dtype", NDF_EINVAL); /* float32 is CUDA only */
  assert_non_null(strstr(ndf_errmsg(ctx), "float32 runs on CUDA only"));
  BAD(o2.dtype = NDF_INT32, "dtype", NDF_EINVAL);
  double Cn[36];
  memcpy(Cn, C, sizeof Cn);
  Cn[7] = INFINITY;
  ndf_array Cna = arr(Cn, 2, d, d);
  BAD(o2.cost = &Cna, "cost", NDF_EINVAL);
#undef BAD

  /* solve */
  assert_int_equal(ndf_sinkhorn_create(ctx, &s, &opt), NDF_OK);
  ndf_array A = arr(a, 2, n, d), B = arr(b, 2, n, d), T = arr(tc, 1, n, 0), Fa = arr(F, 2, n, d);
  ndf_sinkhorn_result res = {&T, NULL, &Fa, NULL, NULL, NULL};
  double P[36];
  ndf_array Pa = arr(P, 2, d, d);
  assert_int_equal(ndf_sinkhorn_plan(s, 0, &Pa), NDF_EINVAL); /* no solve yet */
  assert_int_equal(ndf_sinkhorn_solve(NULL, &A, &B, &res), NDF_EINVAL);
  assert_int_equal(ndf_sinkhorn_solve(s, &A, &B, NULL), NDF_EINVAL);
#define BADSOLVE(setup, undo, arg, code)                                                     \
  do {                                                                                       \
    tu_poison(tc, sizeof tc);                                                                \
    tu_poison(F, sizeof F);                                                                  \
    setup;                                                                                   \
    assert_int_equal(ndf_sinkhorn_solve(s, &A, &B, &res), code);                             \
    undo;                                                                                    \
    assert_non_null(strstr(ndf_errmsg(ctx), arg));                                           \
    assert_int_equal(tu_poison_check(tc, sizeof tc), -1);                                    \
    assert_int_equal(tu_poison_check(F, sizeof F), -1);                                      \
  } while (0)
  BADSOLVE(a[3] = -0.1, a[3] = 1.0 / 6.0, "'a'", NDF_EINVAL);
  BADSOLVE(b[8] = NAN, b[8] = 1.0 / 6.0, "'b'", NDF_EINVAL);
  BADSOLVE(b[8] = 0.5, b[8] = 1.0 / 6.0, "masses must be equal", NDF_EINVAL);
  BADSOLVE(for (int e = 6; e < 12; e++) a[e] = 0, for (int e = 6; e < 12; e++) a[e] = 1.0 / 6.0, "mass 0",
           NDF_EINVAL);
  BADSOLVE(A.shape[0] = 3, A.shape[0] = 2, "'a'", NDF_EINVAL);
  BADSOLVE(B.dtype = NDF_INT32, B.dtype = NDF_FLOAT64, "'b'", NDF_EINVAL);
  BADSOLVE(A.device = NDF_DEVICE_CUDA, A.device = NDF_DEVICE_CPU, "takes host arrays in this version",
           NDF_ENOTSUP);
  BADSOLVE(T.device = NDF_DEVICE_CUDA, T.device = NDF_DEVICE_CPU, "takes host arrays in this version",
           NDF_ENOTSUP);
  BADSOLVE(T.shape[0] = 3, T.shape[0] = 2, "'transport_cost'", NDF_EINVAL);
  BADSOLVE(Fa.dtype = NDF_FLOAT32, Fa.dtype = NDF_FLOAT64, "'f'", NDF_EINVAL);
#undef BADSOLVE
  assert_int_equal(ndf_sinkhorn_solve(s, &A, &B, &res), NDF_OK);
  assert_true(isfinite(tc[0]) && isfinite(F[0]));
  /* plan */
  tu_poison(P, sizeof P);
  assert_int_equal(ndf_sinkhorn_plan(s, 2, &Pa), NDF_EINVAL);
  assert_int_equal(ndf_sinkhorn_plan(s, -1, &Pa), NDF_EINVAL);
  assert_int_equal(ndf_sinkhorn_plan(s, 0, NULL), NDF_EINVAL);
  Pa.dtype = NDF_FLOAT32;
  assert_int_equal(ndf_sinkhorn_plan(s, 0, &Pa), NDF_EINVAL);
  Pa.dtype = NDF_FLOAT64;
  Pa.device = NDF_DEVICE_CUDA;
  assert_int_equal(ndf_sinkhorn_plan(s, 0, &Pa), NDF_ENOTSUP);
  Pa.device = NDF_DEVICE_CPU;
  assert_int_equal(tu_poison_check(P, sizeof P), -1);
  assert_int_equal(ndf_sinkhorn_plan(s, 1, &Pa), NDF_OK);
  ndf_sinkhorn_destroy(s);
  ndf_sinkhorn_destroy(NULL);
  /* float32 inputs and strided outputs */
  {
    float a32[12], b32[12];
    for (int e = 0; e < 12; e++) a32[e] = b32[e] = 1.0f / 6.0f;
    ndf_array A32, B32;
    int64_t sh[2] = {n, d};
    ndf_array_init(&A32, a32, NDF_DEVICE_CPU, NDF_FLOAT32, 2, sh);
    ndf_array_init(&B32, b32, NDF_DEVICE_CPU, NDF_FLOAT32, 2, sh);
    double t2[4];
    ndf_array T2 = arr(t2, 1, n, 0);
    T2.strides[0] = 2;
    t2[1] = t2[3] = 42.0;
    ndf_sinkhorn_result r2 = {&T2, NULL, NULL, NULL, NULL, NULL};
    assert_int_equal(ndf_sinkhorn_create(ctx, &s, &opt), NDF_OK);
    assert_int_equal(ndf_sinkhorn_solve(s, &A32, &B32, &r2), NDF_OK);
    assert_true(t2[1] == 42.0 && t2[3] == 42.0 && isfinite(t2[0]) && t2[0] == t2[2]);
    ndf_sinkhorn_destroy(s);
  }
  /* grid cost helper */
  int64_t gs[2] = {2, 3};
  double G36[36];
  ndf_array Ga = arr(G36, 2, 6, 6);
  assert_int_equal(ndf_sinkhorn_grid_cost(NDF_OT_COST_DENSE, 2, gs, 2, 1.0, &Ga), NDF_EINVAL);
  assert_int_equal(ndf_sinkhorn_grid_cost(NDF_OT_COST_GRID_LP, 2, gs, 3, 1.0, &Ga), NDF_EINVAL);
  Ga.shape[0] = 5;
  assert_int_equal(ndf_sinkhorn_grid_cost(NDF_OT_COST_GRID_LP, 2, gs, 2, 1.0, &Ga), NDF_EINVAL);
  assert_non_null(strstr(ndf_last_error(), "'out'"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_against_reference),
      cmocka_unit_test(test_fixed_point),
      cmocka_unit_test(test_dense_vs_grid),
      cmocka_unit_test(test_scaling_vs_log_and_zero_bins),
      cmocka_unit_test(test_small_epsilon),
      cmocka_unit_test(test_gradient),
      cmocka_unit_test(test_early_exit_and_batch),
      cmocka_unit_test(test_plan_zero_bins),
      cmocka_unit_test(test_strides),
      cmocka_unit_test(test_contract),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
