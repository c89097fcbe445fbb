/*
 * test_gpu_sinkhorn.c -- the CUDA backend of ndf_sinkhorn_* against the CPU
 * backend (float64, itself checked against a textbook reference in
 * tests/test_sinkhorn.c), on fresh random histograms and costs drawn here.
 *
 * Cases (few on purpose: every (dtype, cost kind, domain, grid rank) is one
 * NVRTC compile): every cost kind (dense, grid L2 / L1, grid euclidean),
 * scaling and log domain, float64 (tight: rtol 1e-9) and float32 (to a
 * stated tolerance); early exit (same iterations in float64); zero bins in
 * the log domain (-inf potentials at exactly the zero bins, nothing NaN);
 * the global-memory path (state too large for shared memory); a scaling
 * breakdown reported like the CPU's; ndf_sinkhorn_plan after a CUDA solve
 * (also after a solve that left the potentials on the device);
 * the dense path's CUDA-graph replay equals its plain launches bit for bit
 * (sinkhorn.graph=off forces plain launches), early exit included; the
 * dense persistent kernel (sinkhorn.dense=persistent; it serves more
 * than 8 x 65535 pairs); 2-D grids of at most 32 x 32 bins run
 * sinkhorn_grid2.cu, and once the generic sinkhorn.cu
 * (sinkhorn.grid2=off).  On sm_90 such grids with few pairs run
 * sinkhorn_cluster.cu (one thread-block cluster per pair) by default, so the
 * cases above test it there; test_cluster forces each cluster size (1, 2, 4, 8;
 * sinkhorn.cluster, which then fails instead of falling back) and one
 * block per pair (sinkhorn.cluster=0) against the CPU, on grids whose
 * rows do not split evenly (a block with no rows at all included), both
 * domains, zero bins, early exit and breakdown, and compares the two GPU
 * paths with each other on the same inputs.  Cluster kernels whose blocks
 * own equal row counts exchange rows by st.async on mbarriers by default;
 * every cluster case also runs with sinkhorn.clsync=barrier (cluster
 * barriers), and the two must give the same bits.
 *
 * Exits 77 (skipped) without a CUDA device.  Seed: NDF_TEST_SEED (printed).
 * This file uses only the public API of ndforge.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
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
static ndf_ctx *gctx, *cctx;

/* Sets tunable name on ctx (value NULL: its default), asserting the API takes it. */
static void tune(ndf_ctx *ctx, const char *name, const char *value) {
  const ndf_status st = ndf_ctx_set_tunable(ctx, name, value);
  if (st != NDF_OK) printf("%s\n", ndf_errmsg(ctx));
  assert_int_equal(st, NDF_OK);
}

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

typedef struct {
  double *tc, *obj, *err, *f, *g;
  int32_t *it;
} out_t;

static void out_alloc(out_t *o, int64_t n, int64_t d) {
  o->tc = malloc((size_t)n * sizeof(double));
  o->obj = malloc((size_t)n * sizeof(double));
  o->err = malloc((size_t)n * sizeof(double));
  o->f = malloc((size_t)(n * d) * sizeof(double));
  o->g = malloc((size_t)(n * d) * sizeof(double));
  o->it = malloc((size_t)n * sizeof(int32_t));
}
static void out_free(out_t *o) {
  free(o->tc);
  free(o->obj);
  free(o->err);
  free(o->f);
  free(o->g);
  free(o->it);
}

typedef struct {
  const char *what;
  ndf_ot_cost kind;
  int gnd;
  int64_t gshape[4];
  int p;
  int logd;
  ndf_dtype dt;     /* CUDA arithmetic */
  double eps;
  int max_iter, check_every;
  double tol;
  int64_t n;
  double zfrac;
} gcase;

static int64_t case_d(const gcase *c) {
  int64_t d = 1;
  for (int k = 0; k < c->gnd; k++) d *= c->gshape[k];
  return d;
}

/* Largest grid cost, to normalize the grid costs to max 1 (and the dense one lies in [0, 1]). */
static double grid_scale(const gcase *c) {
  double m = 0.0;
  for (int k = 0; k < c->gnd; k++) {
    double t = (double)(c->gshape[k] - 1);
    m += (c->kind == NDF_OT_COST_GRID_LP && c->p == 1) ? t : t * t;
  }
  if (c->kind == NDF_OT_COST_GRID_EUCLIDEAN) m = sqrt(m);
  return m > 0 ? 1.0 / m : 1.0;
}

static ndf_status run(ndf_ctx *ctx, ndf_device_type dev, const gcase *c, const double *C, const double *a,
                      const double *b, out_t *o, ndf_sinkhorn **keep) {
  const int64_t n = c->n, d = case_d(c);
  ndf_sinkhorn_options opt;
  ndf_sinkhorn_options_init(&opt);
  opt.n = n;
  opt.d = d;
  opt.cost_kind = c->kind;
  ndf_array Ca = arr((double *)C, 2, d, d);
  if (c->kind == NDF_OT_COST_DENSE) opt.cost = &Ca;
  opt.grid_ndim = c->kind == NDF_OT_COST_DENSE ? 0 : c->gnd;
  for (int k = 0; k < c->gnd; k++) opt.grid_shape[k] = c->gshape[k];
  opt.p = c->p ? c->p : 2;
  opt.grid_scale = grid_scale(c);
  opt.epsilon = c->eps;
  opt.max_iter = c->max_iter;
  opt.check_every = c->check_every;
  opt.tol = c->tol;
  opt.log_domain = c->logd;
  opt.device = dev;
  opt.dtype = dev == NDF_DEVICE_CUDA ? c->dt : NDF_FLOAT64;
  ndf_sinkhorn *s = NULL;
  ndf_status st = ndf_sinkhorn_create(ctx, &s, &opt);
  if (st != NDF_OK) return st;
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

static int close_to(double x, double y, double rtol, double atol) {
  if (x == -INFINITY || y == -INFINITY) return x == y;
  return isfinite(x) && fabs(x - y) <= atol + rtol * fabs(y);
}

/* Runs case c on both backends and compares; returns the number of mismatches. */
static int check_case(const gcase *c) {
  const int64_t n = c->n, d = case_d(c);
  double *a = rand_hist(n, d, c->zfrac), *b = rand_hist(n, d, c->zfrac), *C = NULL;
  if (c->kind == NDF_OT_COST_DENSE) {
    C = malloc((size_t)(d * d) * sizeof(double));
    for (int64_t e = 0; e < d * d; e++) C[e] = tu_rng_unif(&rng);
  }
  out_t oc, og;
  out_alloc(&oc, n, d);
  out_alloc(&og, n, d);
  double t0 = tu_now_ms();
  ndf_status sc = run(cctx, NDF_DEVICE_CPU, c, C, a, b, &oc, NULL);
  double t1 = tu_now_ms();
  ndf_status sg = run(gctx, NDF_DEVICE_CUDA, c, C, a, b, &og, NULL);
  double t2 = tu_now_ms();
  int bad = 0;
  if (sc != NDF_OK || sg != NDF_OK) {
    print_error("%s: CPU %s, GPU %s: %s\n", c->what, ndf_status_name(sc), ndf_status_name(sg), ndf_errmsg(gctx));
    bad = 1;
    goto done;
  }
  const int f32 = c->dt == NDF_FLOAT32;
  /* float64: the same iteration to rounding; float32: rounding of ~1e-7 per
   * step, amplified by the iteration and by 1/eps in the potentials. */
  const double rt = f32 ? 5e-4 : 1e-9, fat = f32 ? 5e-4 : 1e-10, eat = f32 ? 1e-4 : 1e-10;
  double fscale = 0.0;
  for (int64_t i = 0; i < n * d; i++)
    if (isfinite(oc.f[i])) fscale = fmax(fscale, fabs(oc.f[i]));
  for (int64_t k = 0; k < n && bad < 5; k++) {
    if (!f32 || c->tol == 0.0) {
      if (oc.it[k] != og.it[k]) {
        print_error("%s pair %lld: iterations CPU %d GPU %d\n", c->what, (long long)k, oc.it[k], og.it[k]);
        bad++;
      }
    }
    if (!close_to(og.tc[k], oc.tc[k], rt, 1e-12) || !close_to(og.obj[k], oc.obj[k], rt, fat * (1 + fscale))) {
      print_error("%s pair %lld: transport cost CPU %.17g GPU %.17g, objective CPU %.17g GPU %.17g\n", c->what,
                  (long long)k, oc.tc[k], og.tc[k], oc.obj[k], og.obj[k]);
      bad++;
    }
    if (!close_to(og.err[k], oc.err[k], f32 ? 0.5 : 1e-6, eat)) {
      print_error("%s pair %lld: error CPU %.6g GPU %.6g\n", c->what, (long long)k, oc.err[k], og.err[k]);
      bad++;
    }
    for (int64_t i = 0; i < d; i++) {
      const double *pc[2] = {oc.f + k * d + i, oc.g + k * d + i}, *pg[2] = {og.f + k * d + i, og.g + k * d + i};
      for (int w = 0; w < 2; w++) {
        if (isnan(*pg[w]) || !close_to(*pg[w], *pc[w], 0.0, fat * (1 + fscale))) {
          print_error("%s pair %lld: %s[%lld] CPU %.17g GPU %.17g\n", c->what, (long long)k, w ? "g" : "f",
                      (long long)i, *pc[w], *pg[w]);
          bad++;
          break;
        }
      }
      if (bad >= 5) break;
    }
  }
  print_message("%-44s n=%lld d=%lld it=%d: CPU %.1f ms, GPU %.1f ms (with compile) %s\n", c->what, (long long)n,
                (long long)d, og.it[0], t1 - t0, t2 - t1, bad ? "MISMATCH" : "ok");
done:
  out_free(&oc);
  out_free(&og);
  free(a);
  free(b);
  free(C);
  return bad;
}

#define L2 NDF_OT_COST_GRID_LP
#define EU NDF_OT_COST_GRID_EUCLIDEAN
#define DN NDF_OT_COST_DENSE
#define F32 NDF_FLOAT32
#define F64 NDF_FLOAT64

static void test_against_cpu(void **st) {
  (void)st;
  static const gcase cases[] = {
      /* what                                    kind gnd shape         p  log dt   eps   it  chk tol  n  zfrac */
      {"f64 grid L2 scaling 2-D", L2, 2, {12, 9}, 2, 0, F64, 0.05, 60, 10, 0, 3, 0.0},
      {"f64 grid L1 log 3-D, zero bins", L2, 3, {5, 4, 6}, 1, 1, F64, 0.02, 50, 7, 0, 3, 0.3},
      {"f64 dense scaling", DN, 1, {40}, 0, 0, F64, 0.1, 40, 10, 0, 3, 0.0},
      {"f64 dense log, zero bins", DN, 1, {33}, 0, 1, F64, 0.01, 40, 10, 0, 2, 0.25},
      {"f64 dense log, persistent kernel", DN, 1, {45}, 0, 1, F64, 0.02, 30, 10, 0, 3, 0.1},
      {"f64 euclidean scaling 2-D", EU, 2, {7, 8}, 0, 0, F64, 0.1, 30, 10, 0, 2, 0.0},
      {"f64 euclidean log 2-D, zero bins", EU, 2, {6, 9}, 0, 1, F64, 0.01, 30, 10, 0, 2, 0.2},
      {"f64 grid L2 log, early exit", L2, 2, {10, 10}, 2, 1, F64, 0.05, 3000, 5, 1e-9, 4, 0.0},
      {"f64 grid L2 scaling, state in global memory", L2, 2, {150, 150}, 2, 0, F64, 0.05, 12, 4, 0, 2, 0.0},
      {"f32 grid L2 scaling 32x32 (the bench)", L2, 2, {32, 32}, 2, 0, F32, 0.05, 100, 10, 0, 4, 0.0},
      {"f32 grid L2 log 32x32, zero bins", L2, 2, {32, 32}, 2, 1, F32, 0.01, 100, 10, 0, 3, 0.2},
      {"f32 dense scaling", DN, 1, {64}, 0, 0, F32, 0.1, 50, 10, 0, 3, 0.0},
      {"f32 euclidean log 2-D", EU, 2, {8, 8}, 0, 1, F32, 0.02, 50, 10, 0, 2, 0.1},
      /* 2-D grids of at most 32 x 32 run sinkhorn_grid2.cu (the cases above
       * too); "generic kernel" forces sinkhorn.cu for them */
      {"f32 grid L2 scaling 32x32, generic kernel", L2, 2, {32, 32}, 2, 0, F32, 0.05, 100, 10, 0, 2, 0.0},
      {"f32 grid L1 log 7x13, zero bins", L2, 2, {7, 13}, 1, 1, F32, 0.01, 60, 10, 0, 2, 0.2},
      {"f64 grid L2 log 32x32 eps 1e-3, zero bins", L2, 2, {32, 32}, 2, 1, F64, 0.001, 30, 10, 0, 2, 0.1},
  };
  int bad = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    /* the dense persistent kernel serves more than 8 x 65535 pairs; forced here */
    if (strstr(cases[i].what, "persistent")) tune(gctx, "sinkhorn.dense", "persistent");
    if (strstr(cases[i].what, "generic kernel")) tune(gctx, "sinkhorn.grid2", "off");
    bad += check_case(&cases[i]) != 0;
    tune(gctx, "sinkhorn.dense", NULL);
    tune(gctx, "sinkhorn.grid2", NULL);
  }
  assert_int_equal(bad, 0);
}

/* Clusters (sm_90 only; skipped below): every forced cluster size and the
 * one-block path against the CPU, then cluster vs one block on the same
 * inputs (float64: equal iterations, values to 1e-10). */
static void test_cluster(void **st) {
  (void)st;
  ndf_ctx_info info;
  assert_int_equal(ndf_ctx_get_info(gctx, &info), NDF_OK);
  if (info.cc_major < 9) {
    print_message("test_cluster: sm_%d%d has no thread-block clusters: skipped\n", info.cc_major, info.cc_minor);
    return;
  }
  static const struct {
    const char *cl;
    gcase c;
  } cases[] = {
      /* CL   what                                  kind gnd shape    p  log dt   eps   it  chk tol  n  zfrac */
      {"2", {"cluster 2: f64 L2 scaling 12x9", L2, 2, {12, 9}, 2, 0, F64, 0.05, 60, 10, 0, 3, 0.0}},
      {"4", {"cluster 4: f64 L2 scaling 12x9", L2, 2, {12, 9}, 2, 0, F64, 0.05, 60, 10, 0, 3, 0.0}},
      {"8", {"cluster 8: f64 L2 scaling 12x9", L2, 2, {12, 9}, 2, 0, F64, 0.05, 60, 7, 0, 3, 0.0}},
      {"0", {"one block: f64 L2 scaling 12x9", L2, 2, {12, 9}, 2, 0, F64, 0.05, 60, 10, 0, 3, 0.0}},
      {"4", {"cluster 4: f64 L1 log 5x3 (an empty block)", L2, 2, {5, 3}, 1, 1, F64, 0.02, 40, 3, 0, 2, 0.2}},
      {"2", {"cluster 2: f64 L1 log 7x13, zero bins", L2, 2, {7, 13}, 1, 1, F64, 0.01, 60, 10, 0, 3, 0.2}},
      {"8", {"cluster 8: f64 L2 log 32x32 eps 1e-3", L2, 2, {32, 32}, 2, 1, F64, 0.001, 30, 10, 0, 2, 0.1}},
      {"4", {"cluster 4: f64 L2 log early exit 10x10", L2, 2, {10, 10}, 2, 1, F64, 0.05, 3000, 5, 1e-9, 4, 0.0}},
      {"8", {"cluster 8: f32 L2 scaling 32x32 (bench)", L2, 2, {32, 32}, 2, 0, F32, 0.05, 100, 10, 0, 16, 0.0}},
      {"4", {"cluster 4: f32 L2 scaling 32x32", L2, 2, {32, 32}, 2, 0, F32, 0.05, 100, 10, 0, 5, 0.0}},
      {"2", {"cluster 2: f32 L2 scaling 32x31", L2, 2, {32, 31}, 2, 0, F32, 0.05, 100, 10, 0, 3, 0.0}},
      {"8", {"cluster 8: f32 L2 log 32x32, zero bins", L2, 2, {32, 32}, 2, 1, F32, 0.01, 100, 10, 0, 5, 0.2}},
      {"2", {"cluster 2: f32 L2 log 20x27", L2, 2, {20, 27}, 2, 1, F32, 0.01, 50, 10, 0, 3, 0.0}},
      {"8", {"cluster 8: f32 L2 scaling early exit 32x32", L2, 2, {32, 32}, 2, 0, F32, 0.05, 2000, 10, 1e-4, 6, 0.0}},
      /* "1": the same kernel, one 32 * N0-thread block per pair, no cluster (float only) */
      {"1", {"cluster kernel, 1 block: f32 L2 scaling 32x32", L2, 2, {32, 32}, 2, 0, F32, 0.05, 100, 10, 0, 5, 0.0}},
      {"1", {"cluster kernel, 1 block: f32 L2 log 20x27, zero bins", L2, 2, {20, 27}, 2, 1, F32, 0.01, 50, 10, 0, 3, 0.2}},
  };
  int bad = 0;
  for (int sy = 0; sy < 2; sy++) /* st.async (default where rows split evenly), then cluster barriers */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      tune(gctx, "sinkhorn.cluster", cases[i].cl);
      if (sy) tune(gctx, "sinkhorn.clsync", "barrier");
      const int b = check_case(&cases[i].c) != 0;
      if (b) fprintf(stderr, "test_cluster: %s failed (%s)\n", cases[i].c.what, sy ? "cluster barriers" : "default exchange");
      bad += b;
      tune(gctx, "sinkhorn.cluster", NULL);
      tune(gctx, "sinkhorn.clsync", NULL);
    }
  assert_int_equal(bad, 0);
  /* the same inputs through a cluster and through one block */
  /* (v = 3: scaling, tol 0, so the st.async kernel skips all checks but the last) */
  for (int v = 0; v < 4; v++) {
    const int lg = v == 1 || v == 2;
    gcase c = {"cluster vs block", L2, 2, {v == 2 ? 9 : 16, v == 2 ? 30 : v == 3 ? 12 : 16}, v == 1 ? 1 : 2, lg, F64,
               lg ? 0.01 : 0.05, 400, 10, v >= 2 ? 0 : 1e-8, 5, lg ? 0.15 : 0.0};
    const int64_t n = c.n, d = case_d(&c);
    double *a = rand_hist(n, d, c.zfrac), *b = rand_hist(n, d, c.zfrac);
    out_t o[3]; /* cluster (st.async where rows split evenly), one block, cluster with cluster barriers */
    for (int r = 0; r < 3; r++) {
      out_alloc(&o[r], n, d);
      tune(gctx, "sinkhorn.cluster", r == 1 ? "0" : (v == 1 ? "2" : "8"));
      if (r == 2) tune(gctx, "sinkhorn.clsync", "barrier");
      const ndf_status st = run(gctx, NDF_DEVICE_CUDA, &c, NULL, a, b, &o[r], NULL);
      if (st != NDF_OK)
        fprintf(stderr, "cluster vs block, variant %d, %s: %s\n", v, r == 1 ? "one block" : r ? "cluster barriers" : "cluster",
                ndf_errmsg(gctx));
      assert_int_equal(st, NDF_OK);
      tune(gctx, "sinkhorn.cluster", NULL);
      tune(gctx, "sinkhorn.clsync", NULL);
    }
    /* the two row exchanges run the same arithmetic in the same order */
    assert_memory_equal(o[0].it, o[2].it, (size_t)n * sizeof(int32_t));
    assert_memory_equal(o[0].tc, o[2].tc, (size_t)n * sizeof(double));
    assert_memory_equal(o[0].err, o[2].err, (size_t)n * sizeof(double));
    assert_memory_equal(o[0].f, o[2].f, (size_t)(n * d) * sizeof(double));
    assert_memory_equal(o[0].g, o[2].g, (size_t)(n * d) * sizeof(double));
    for (int64_t k = 0; k < n; k++) {
      assert_int_equal(o[0].it[k], o[1].it[k]);
      assert_true(close_to(o[0].tc[k], o[1].tc[k], 1e-10, 1e-14));
      assert_true(close_to(o[0].err[k], o[1].err[k], 1e-6, 1e-13));
      for (int64_t i = 0; i < d; i++) {
        assert_true(close_to(o[0].f[k * d + i], o[1].f[k * d + i], 1e-10, 1e-10));
        assert_true(close_to(o[0].g[k * d + i], o[1].g[k * d + i], 1e-10, 1e-10));
      }
    }
    print_message("cluster vs one block (%s): same iterations (%d), values to 1e-10\n",
                  v == 0 ? "scaling, early exit" : v == 1 ? "L1 log, early exit" : v == 2 ? "log 9x30" : "scaling 16x12, tol 0",
                  o[0].it[0]);
    for (int r = 0; r < 3; r++) out_free(&o[r]);
    free(a);
    free(b);
  }
}

/* Early exit: stops before max_iter, the same iterations as the CPU (float64). */
static void test_early_exit(void **st) {
  (void)st;
  gcase c = {"early exit", L2, 2, {8, 8}, 2, 0, F64, 0.1, 5000, 5, 1e-10, 5, 0.0};
  const int64_t n = c.n, d = case_d(&c);
  double *a = rand_hist(n, d, 0.0), *b = rand_hist(n, d, 0.0);
  out_t oc, og;
  out_alloc(&oc, n, d);
  out_alloc(&og, n, d);
  assert_int_equal(run(cctx, NDF_DEVICE_CPU, &c, NULL, a, b, &oc, NULL), NDF_OK);
  assert_int_equal(run(gctx, NDF_DEVICE_CUDA, &c, NULL, a, b, &og, NULL), NDF_OK);
  for (int64_t k = 0; k < n; k++) {
    assert_true(og.it[k] < c.max_iter);
    assert_true(og.it[k] % c.check_every == 0);
    assert_int_equal(og.it[k], oc.it[k]);
    assert_true(og.err[k] <= c.tol);
  }
  out_free(&oc);
  out_free(&og);
  free(a);
  free(b);
}

/* Dense cost: graph replay and plain launches give the same bits (sums run
 * in a fixed order), with and without early exit, and a second solve on the
 * same solver (the graph is replayed, not recaptured) too. */
static void test_graph_vs_plain(void **st) {
  (void)st;
  for (int v = 0; v < 2; v++) {
    gcase c = {"graph vs plain", DN, 1, {200}, 0, v, v ? F64 : F32, v ? 0.02 : 0.1, v ? 37 : 500, 5, v ? 0 : 1e-5, 11,
               v ? 0.2 : 0.0};
    const int64_t n = c.n, d = case_d(&c);
    double *a = rand_hist(n, d, c.zfrac), *b = rand_hist(n, d, c.zfrac), *C = malloc((size_t)(d * d) * sizeof(double));
    for (int64_t e = 0; e < d * d; e++) C[e] = tu_rng_unif(&rng);
    out_t o[3];
    for (int r = 0; r < 3; r++) out_alloc(&o[r], n, d);
    tune(gctx, "sinkhorn.graph", "off");
    assert_int_equal(run(gctx, NDF_DEVICE_CUDA, &c, C, a, b, &o[0], NULL), NDF_OK);
    tune(gctx, "sinkhorn.graph", NULL);
    ndf_sinkhorn *s = NULL;
    assert_int_equal(run(gctx, NDF_DEVICE_CUDA, &c, C, a, b, &o[1], &s), NDF_OK);
    /* solve again with the same solver: the captured graph is replayed */
    ndf_array A = arr(a, 2, n, d), B = arr(b, 2, n, d), tc = arr(o[2].tc, 1, n, 0), obj = arr(o[2].obj, 1, n, 0);
    ndf_array er = arr(o[2].err, 1, n, 0), F = arr(o[2].f, 2, n, d), G = arr(o[2].g, 2, n, d), it;
    ndf_array_init(&it, o[2].it, NDF_DEVICE_CPU, NDF_INT32, 1, &n);
    ndf_sinkhorn_result res = {&tc, &obj, &F, &G, &it, &er};
    assert_int_equal(ndf_sinkhorn_solve(s, &A, &B, &res), NDF_OK);
    ndf_sinkhorn_destroy(s);
    for (int r = 1; r < 3; r++) {
      assert_memory_equal(o[r].tc, o[0].tc, (size_t)n * sizeof(double));
      assert_memory_equal(o[r].err, o[0].err, (size_t)n * sizeof(double));
      assert_memory_equal(o[r].it, o[0].it, (size_t)n * sizeof(int32_t));
      assert_memory_equal(o[r].f, o[0].f, (size_t)(n * d) * sizeof(double));
      assert_memory_equal(o[r].g, o[0].g, (size_t)(n * d) * sizeof(double));
    }
    if (c.tol > 0)
      for (int64_t k = 0; k < n; k++) assert_true(o[0].it[k] < c.max_iter);
    print_message("graph vs plain (%s, %s): equal bits, iterations of pair 0: %d\n", v ? "f64 log" : "f32 scaling",
                  c.tol > 0 ? "early exit" : "max_iter", o[0].it[0]);
    for (int r = 0; r < 3; r++) out_free(&o[r]);
    free(a);
    free(b);
    free(C);
  }
}

/* The scaling form's breakdown: the same status and message as the CPU. */
static void test_breakdown(void **st) {
  (void)st;
  gcase c = {"breakdown", DN, 1, {16}, 0, 0, F64, 1e-3, 10, 10, 0, 2, 0.0};
  const int64_t n = c.n, d = case_d(&c);
  double *a = rand_hist(n, d, 0.0), *b = rand_hist(n, d, 0.0), *C = malloc((size_t)(d * d) * sizeof(double));
  for (int64_t e = 0; e < d * d; e++) C[e] = 1.0 + tu_rng_unif(&rng);
  out_t oc, og;
  out_alloc(&oc, n, d);
  out_alloc(&og, n, d);
  assert_int_equal(run(cctx, NDF_DEVICE_CPU, &c, C, a, b, &oc, NULL), NDF_EINVAL);
  assert_int_equal(run(gctx, NDF_DEVICE_CUDA, &c, C, a, b, &og, NULL), NDF_EINVAL);
  assert_string_equal(ndf_errmsg(gctx), ndf_errmsg(cctx));
  out_free(&oc);
  out_free(&og);
  free(a);
  free(b);
  free(C);
  /* a 2-D grid (sinkhorn_grid2.cu): K underflows to the identity, so a zero
   * bin of a makes K x = 0 where b > 0 (the column update breaks down) */
  /* (default path: clusters on sm_90; then one block, then clusters of 2 and 4) */
  ndf_ctx_info info;
  assert_int_equal(ndf_ctx_get_info(gctx, &info), NDF_OK);
  static const char *paths[] = {NULL, "0", "2", "4", "4b"}; /* 4b: clusters of 4 with cluster barriers */
  for (int pi = 0; pi < (info.cc_major >= 9 ? 5 : 2); pi++) {
    gcase cg = {"breakdown grid", L2, 2, {12, 9}, 2, 0, F64, 1e-6, 10, 10, 0, 3, 0.3};
    const int64_t ng = cg.n, dg = case_d(&cg);
    a = rand_hist(ng, dg, cg.zfrac);
    b = rand_hist(ng, dg, cg.zfrac);
    out_alloc(&oc, ng, dg);
    out_alloc(&og, ng, dg);
    assert_int_equal(run(cctx, NDF_DEVICE_CPU, &cg, NULL, a, b, &oc, NULL), NDF_EINVAL);
    if (paths[pi]) tune(gctx, "sinkhorn.cluster", paths[pi][1] ? "4" : paths[pi]);
    if (paths[pi] && paths[pi][1]) tune(gctx, "sinkhorn.clsync", "barrier");
    assert_int_equal(run(gctx, NDF_DEVICE_CUDA, &cg, NULL, a, b, &og, NULL), NDF_EINVAL);
    assert_string_equal(ndf_errmsg(gctx), ndf_errmsg(cctx)); /* before the next call on gctx replaces it */
    tune(gctx, "sinkhorn.cluster", NULL);
    tune(gctx, "sinkhorn.clsync", NULL);
    out_free(&oc);
    out_free(&og);
    free(a);
    free(b);
  }
}

/* ndf_sinkhorn_plan after a CUDA solve: the CPU's plan to tolerance. */
static void test_plan(void **st) {
  (void)st;
  gcase c = {"plan", EU, 2, {5, 6}, 0, 1, F64, 0.05, 40, 10, 0, 2, 0.2};
  const int64_t n = c.n, d = case_d(&c);
  double *a = rand_hist(n, d, c.zfrac), *b = rand_hist(n, d, c.zfrac);
  out_t oc, og;
  out_alloc(&oc, n, d);
  out_alloc(&og, n, d);
  ndf_sinkhorn *sc = NULL, *sg = NULL;
  assert_int_equal(run(cctx, NDF_DEVICE_CPU, &c, NULL, a, b, &oc, &sc), NDF_OK);
  assert_int_equal(run(gctx, NDF_DEVICE_CUDA, &c, NULL, a, b, &og, &sg), NDF_OK);
  double *Pc = malloc((size_t)(d * d) * sizeof(double)), *Pg = malloc((size_t)(d * d) * sizeof(double));
  ndf_array Ac = arr(Pc, 2, d, d), Ag = arr(Pg, 2, d, d);
  assert_int_equal(ndf_sinkhorn_plan(sc, 1, &Ac), NDF_OK);
  assert_int_equal(ndf_sinkhorn_plan(sg, 1, &Ag), NDF_OK);
  for (int64_t e = 0; e < d * d; e++) {
    assert_false(isnan(Pg[e]));
    assert_true(fabs(Pg[e] - Pc[e]) <= 1e-12 + 1e-8 * fabs(Pc[e]));
  }
  /* a solve that asks for the transport cost only leaves the potentials on
   * the device; plan fetches them: the same plan, bit for bit */
  double *Pd = malloc((size_t)(d * d) * sizeof(double));
  ndf_array A = arr(a, 2, n, d), B = arr(b, 2, n, d), tc = arr(og.tc, 1, n, 0), Ad = arr(Pd, 2, d, d);
  ndf_sinkhorn_result only_tc = {&tc, NULL, NULL, NULL, NULL, NULL};
  assert_int_equal(ndf_sinkhorn_solve(sg, &A, &B, &only_tc), NDF_OK);
  assert_int_equal(ndf_sinkhorn_plan(sg, 1, &Ad), NDF_OK);
  assert_memory_equal(Pd, Pg, (size_t)(d * d) * sizeof(double));
  free(Pd);
  ndf_sinkhorn_destroy(sc);
  ndf_sinkhorn_destroy(sg);
  free(Pc);
  free(Pg);
  out_free(&oc);
  out_free(&og);
  free(a);
  free(b);
}

int main(void) {
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  if (ndf_ctx_create(&gctx, &o) != NDF_OK) {
    fprintf(stderr, "ndf_ctx_create: %s\n", ndf_last_error());
    return 1;
  }
  if (!ndf_ctx_has_cuda(gctx)) {
    printf("SKIP: the context has no usable CUDA device\n");
    ndf_ctx_destroy(gctx);
    return 77;
  }
  ndf_ctx_options_init(&o);
  o.backend = NDF_BACKEND_CPU;
  if (ndf_ctx_create(&cctx, &o) != NDF_OK) return 1;
  ndf_ctx_info info;
  if (ndf_ctx_get_info(gctx, &info) == NDF_OK)
    printf("device: %s (sm_%d%d), driver %d, NVRTC %d.%d\n", info.device_name, info.cc_major, info.cc_minor,
           info.driver_version, info.nvrtc_major, info.nvrtc_minor);
  tu_rng_seed(&rng, tu_seed("NDF_TEST_SEED"));
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_against_cpu),
      cmocka_unit_test(test_early_exit),
      cmocka_unit_test(test_cluster),
      cmocka_unit_test(test_breakdown),
      cmocka_unit_test(test_graph_vs_plain),
      cmocka_unit_test(test_plan),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  ndf_cache_stats cs;
  ndf_ctx_cache_stats(gctx, &cs);
  printf("kernel cache: %llu memory hits, %llu disk hits, %llu compiles (%.0f ms)\n",
         (unsigned long long)cs.memory_hits, (unsigned long long)cs.disk_hits, (unsigned long long)cs.compiles,
         cs.compile_ms);
  ndf_ctx_destroy(cctx);
  ndf_ctx_destroy(gctx);
  return rc;
}
