/*
 * test_metrics.c -- the CPU backend of the image metrics (mse, nrmse, psnr,
 * ssim, dice, jaccard, hausdorff) against scikit-image / NumPy, against
 * brute forces written here, on hand-checked values, and their contract
 * (every rejected input: status, a message naming the call and the
 * argument, untouched outputs).
 *
 * The reference part runs tests/oracle_metrics.py with a fresh seed per run
 * (printed; NDF_TEST_SEED repeats a run, NDF_TEST_CASES sets the number of
 * cases) and compares with the inputs as written, with padded / negative
 * strides, and in Fortran order, into strided results whose gaps must keep
 * their poison.  Tolerances: the values agree with the reference up to the
 * order of float64 sums (relative 1e-12; NRMSE 'mean' of float32 images
 * 1e-6 times mean|x| / |mean x|, scikit-image's mean being float32 there and
 * cancelling in images of both signs); SSIM maps with uniform
 * windows are equal bit for bit, with Gaussian ones to 1e-10 (float64) /
 * 1e-6 (float32), NumPy's exp on some CPUs differing from the C library's in
 * the last place (a weight's last place grows through the variances'
 * cancellation, E[xy] - E[x]E[y], where small K1, K2 leave the quotient
 * ill-conditioned: 1.8e-12 seen at K1 0.0027, K2 0.0175).
 *
 * This file uses only the public API of ndforge (and tools/ndfio.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ndfio.h"
#include "ndforge.h"
#include "testutil.h"

#ifndef NDF_TEST_PYTHON
#error "NDF_TEST_PYTHON (a python3 with numpy and scipy) must be defined by the build"
#endif
#ifndef NDF_TEST_ORACLE
#error "NDF_TEST_ORACLE (path of tests/oracle_metrics.py) must be defined by the build"
#endif

/* ------------------------------------------------------------------------ */
/* Cases written by the oracle                                               */

typedef struct mt_case {
  char line[1024];
  int id;
  char metric[16];
  char a[64], b[64], expected[64], full[64];
  int batch;
  int error;
  /* ssim */
  int win, gauss, sample;
  double sigma, k1, k2, dr;
  /* nrmse */
  char norm[16];
  /* hausdorff */
  double q;
  int nsampling;
  double sampling[NDF_MAX_SPATIAL];
} mt_case;

typedef tu_oracle_group mt_state;

static int parse_line(const char *line, void *cv) {
  mt_case *c = cv;
  memset(c, 0, sizeof *c);
  c->batch = -1;
  c->q = 100;
  snprintf(c->line, sizeof c->line, "%s", line);
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", line);
  char *save = NULL;
  for (char *tok = strtok_r(buf, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
    char *eq = strchr(tok, '=');
    if (!eq) return -1;
    *eq = 0;
    const char *k = tok, *v = eq + 1;
    if (!strcmp(k, "id")) c->id = atoi(v);
    else if (!strcmp(k, "metric")) snprintf(c->metric, sizeof c->metric, "%s", v);
    else if (!strcmp(k, "a")) snprintf(c->a, sizeof c->a, "%s", v);
    else if (!strcmp(k, "b")) snprintf(c->b, sizeof c->b, "%s", v);
    else if (!strcmp(k, "expected")) snprintf(c->expected, sizeof c->expected, "%s", v);
    else if (!strcmp(k, "full")) snprintf(c->full, sizeof c->full, "%s", v);
    else if (!strcmp(k, "batch")) c->batch = atoi(v);
    else if (!strcmp(k, "error")) c->error = atoi(v);
    else if (!strcmp(k, "win")) c->win = atoi(v);
    else if (!strcmp(k, "gauss")) c->gauss = atoi(v);
    else if (!strcmp(k, "sample")) c->sample = atoi(v);
    else if (!strcmp(k, "sigma")) c->sigma = strtod(v, NULL);
    else if (!strcmp(k, "k1")) c->k1 = strtod(v, NULL);
    else if (!strcmp(k, "k2")) c->k2 = strtod(v, NULL);
    else if (!strcmp(k, "dr")) c->dr = strtod(v, NULL);
    else if (!strcmp(k, "norm")) snprintf(c->norm, sizeof c->norm, "%s", v);
    else if (!strcmp(k, "q")) c->q = strtod(v, NULL);
    else if (!strcmp(k, "sampling")) {
      char *end = (char *)v;
      while (*end && c->nsampling < NDF_MAX_SPATIAL) {
        c->sampling[c->nsampling++] = strtod(v, &end);
        if (*end == ',') v = ++end;
      }
    }
  }
  if (c->batch < 0 || !c->metric[0] || !c->a[0] || !c->b[0]) return -1;
  return c->error || c->expected[0] ? 0 : -1;
}

static int summary(const mt_state *s) {
  int n[8] = {0}, batched = 0, errors = 0;
  static const char *names[8] = {"mse", "nrmse", "psnr", "ssim", "dice", "jaccard", "hausdorff", "?"};
  for (int i = 0; i < s->ncases; i++) {
    const mt_case *c = &((mt_case *)s->cases)[i];
    int k = 0;
    while (k < 7 && strcmp(names[k], c->metric)) k++;
    n[k]++;
    batched += c->batch > 0;
    errors += c->error;
  }
  printf("%d reference cases: mse %d, nrmse %d, psnr %d, ssim %d, dice %d, jaccard %d, hausdorff %d; %d batched, %d "
         "rejected\n", s->ncases, n[0], n[1], n[2], n[3], n[4], n[5], n[6], batched, errors);
  return n[7] ? -1 : 0;
}

static int group_setup(void **state) {
  return tu_oracle_group_setup_if(state, "skimage", "ndf-test-metrics", 300, NDF_TEST_PYTHON, NDF_TEST_ORACLE, sizeof(mt_case),
                                  parse_line, summary);
}

static ndf_ctx *ctx_of(void **state) { return ((mt_state *)*state)->ctx; }

/* ------------------------------------------------------------------------ */
/* A strided float64 result of the batch shape in a poisoned buffer           */

typedef struct res_buf {
  ndf_array arr;
  double *base;
  size_t n; /* doubles in base */
} res_buf;

/* Every other double of a buffer, starting at the second (rank 0: one value). */
static int res_alloc(res_buf *r, int nb, const int64_t *shape) {
  memset(r, 0, sizeof *r);
  int64_t cnt = 1;
  for (int d = 0; d < nb; d++) cnt *= shape[d];
  r->n = (size_t)(2 * cnt + 2);
  r->base = malloc(r->n * sizeof(double));
  if (!r->base) return -1;
  tu_poison(r->base, r->n * sizeof(double));
  r->arr.data = r->base + 1;
  r->arr.device = NDF_DEVICE_CPU;
  r->arr.dtype = NDF_FLOAT64;
  r->arr.ndim = nb;
  int64_t st = 2;
  for (int d = nb - 1; d >= 0; d--) {
    r->arr.shape[d] = shape[d];
    r->arr.strides[d] = st;
    st *= shape[d];
  }
  return 0;
}

/* 1 when the buffer's gaps (and, with untouched, every value) still hold the poison. */
static int res_poison_ok(const res_buf *r, int untouched) {
  double *copy = malloc(r->n * sizeof(double));
  if (!copy) return 0;
  tu_poison(copy, r->n * sizeof(double));
  int ok = 1;
  for (size_t i = 0; i < r->n; i++) {
    const int elem = i % 2 == 1 && i < r->n - 1;
    if ((untouched || !elem) && memcmp(&copy[i], &r->base[i], sizeof(double))) ok = 0;
  }
  free(copy);
  return ok;
}

static double res_get(const res_buf *r, int64_t i) { return tu_get(&r->arr, i); }

static void res_free(res_buf *r) { free(r->base); }

/* ------------------------------------------------------------------------ */
/* Comparing values                                                          */

static int close_to(double want, double got, double rel) {
  if (want == got || (want != want && got != got)) return 1;
  if (isinf(want) || isinf(got)) return 0;
  return fabs(got - want) <= rel * fabs(want) + 1e-300;
}

static int close_abs(double want, double got, double tol) {
  if (want == got || (want != want && got != got)) return 1;
  if (isinf(want) || isinf(got)) return 0;
  return fabs(got - want) <= tol * (1 + fabs(want));
}

/* ------------------------------------------------------------------------ */
/* Calling a metric by name                                                  */

static ndf_status call_metric(ndf_ctx *ctx, const mt_case *c, const ndf_array *a, const ndf_array *b,
                              ndf_array *result, ndf_array *full) {
  if (!strcmp(c->metric, "ssim")) {
    ndf_ssim_options o;
    ndf_ssim_options_init(&o);
    o.win_size = c->win;
    o.gaussian_weights = c->gauss;
    o.sigma = c->sigma;
    o.K1 = c->k1;
    o.K2 = c->k2;
    o.use_sample_covariance = c->sample;
    o.data_range = c->dr;
    o.batch_dims = c->batch;
    return ndf_structural_similarity(ctx, a, b, result, full, &o);
  }
  ndf_metrics_options o;
  ndf_metrics_options_init(&o);
  o.batch_dims = c->batch;
  if (!strcmp(c->metric, "mse")) return ndf_mean_squared_error(ctx, a, b, result, &o);
  if (!strcmp(c->metric, "nrmse")) {
    if (ndf_nrmse_norm_from_name(c->norm, &o.normalization) != NDF_OK) return NDF_EINTERNAL;
    return ndf_normalized_root_mse(ctx, a, b, result, &o);
  }
  if (!strcmp(c->metric, "psnr")) {
    o.data_range = c->dr;
    return ndf_peak_signal_noise_ratio(ctx, a, b, result, &o);
  }
  if (!strcmp(c->metric, "dice")) return ndf_dice_coefficient(ctx, a, b, result, &o);
  if (!strcmp(c->metric, "jaccard")) return ndf_jaccard_index(ctx, a, b, result, &o);
  o.percentile = c->q;
  o.nsampling = c->nsampling;
  memcpy(o.sampling, c->sampling, sizeof o.sampling);
  return ndf_hausdorff_distance(ctx, a, b, result, &o);
}

/* ------------------------------------------------------------------------ */
/* The reference cases                                                       */

enum { V_ASIS, V_STRIDED, V_FORTRAN };
static const char *VARIANT_NAMES[] = {"arrays as read", "padded/negative strides, strided map",
                                      "Fortran image0, padded image1, Fortran map"};

static int read_npy(const mt_state *s, const char *name, ndfio_image *img) {
  char path[700], err[512];
  snprintf(path, sizeof path, "%s/%s", s->dir, name);
  ndf_status st = ndfio_npy_read(path, img, err, sizeof err);
  if (st != NDF_OK) {
    fprintf(stderr, "ndfio_npy_read(%s): %s: %s\n", path, ndf_status_name(st), err);
    return -1;
  }
  return 0;
}

static int run_case(mt_state *s, const mt_case *c, int v, tu_rng *rng, int verbose) {
  char msg[1024] = "";
  int rc = -1;
  ndfio_image a = {0}, b = {0}, exp = {0}, S = {0};
  tu_array al = {0}, bl = {0}, fl = {0};
  res_buf r = {0};
  const int ssim = !strcmp(c->metric, "ssim");
  if (read_npy(s, c->a, &a) || read_npy(s, c->b, &b)) goto done;
  if (!c->error && read_npy(s, c->expected, &exp)) goto done;
  if (!c->error && ssim && read_npy(s, c->full, &S)) goto done;
  const ndf_array *pa = &a.arr, *pb = &b.arr;
  const int strided = TU_LAYOUT_PADDED | TU_LAYOUT_NEGATIVE | TU_LAYOUT_OFFSET;
  if (v == V_STRIDED) {
    if (tu_array_relayout(&al, &a.arr, strided, rng) || tu_array_relayout(&bl, &b.arr, strided, rng)) goto done;
    pa = &al.arr;
    pb = &bl.arr;
  } else if (v == V_FORTRAN) {
    if (tu_array_relayout(&al, &a.arr, TU_LAYOUT_FORTRAN, rng) || tu_array_relayout(&bl, &b.arr, TU_LAYOUT_PADDED, rng))
      goto done;
    pa = &al.arr;
    pb = &bl.arr;
  }
  if (res_alloc(&r, c->batch, a.arr.shape)) goto done;
  ndf_array *full = NULL;
  if (ssim) {
    ndf_array like = a.arr;
    like.dtype = a.arr.dtype == NDF_FLOAT32 ? NDF_FLOAT32 : NDF_FLOAT64;
    if (tu_array_like(&fl, &like, v == V_STRIDED ? TU_LAYOUT_PADDED : v == V_FORTRAN ? TU_LAYOUT_FORTRAN : TU_LAYOUT_C,
                      rng))
      goto done;
    full = &fl.arr;
  }
  ndf_status st = call_metric(s->ctx, c, pa, pb, &r.arr, full);
  const char *m = ndf_errmsg(s->ctx);
  if (c->error) {
    if (st != NDF_EINVAL || !strstr(m, "'data_range'")) {
      snprintf(msg, sizeof msg, "the reference raises ValueError: want NDF_EINVAL naming 'data_range'; got %s \"%s\"",
               ndf_status_name(st), m);
      goto done;
    }
    if (!res_poison_ok(&r, 1)) {
      snprintf(msg, sizeof msg, "NDF_EINVAL but the result was written");
      goto done;
    }
  } else {
    if (st != NDF_OK) {
      snprintf(msg, sizeof msg, "returned %s: %s", ndf_status_name(st), m);
      goto done;
    }
    const int64_t nimg = ndf_array_size(&exp.arr);
    const double rel = !strcmp(c->metric, "nrmse") && !strcmp(c->norm, "mean") && a.arr.dtype == NDF_FLOAT32 &&
                               b.arr.dtype == NDF_FLOAT32
                           ? 1e-6
                           : 1e-12;
    for (int64_t i = 0; i < nimg; i++) {
      const double w = tu_get(&exp.arr, i), g = res_get(&r, i);
      double reli = rel;
      if (rel > 1e-12) { /* float32 mean of image_true: its error scales with mean|x|, not with |mean x| */
        const int64_t vox = ndf_array_size(&a.arr) / (nimg ? nimg : 1);
        double s = 0, sa = 0;
        for (int64_t k = i * vox; k < (i + 1) * vox; k++) {
          const double x = tu_get(&a.arr, k);
          s += x;
          sa += fabs(x);
        }
        if (fabs(s) > 0) reli = rel * (sa / fabs(s) > 1 ? sa / fabs(s) : 1);
      }
      const int ok = ssim ? close_abs(w, g, 1e-12) : close_to(w, g, reli);
      if (!ok) {
        snprintf(msg, sizeof msg, "image %lld: want %.17g, got %.17g", (long long)i, w, g);
        goto done;
      }
    }
    if (!res_poison_ok(&r, 0)) {
      snprintf(msg, sizeof msg, "wrote into the result's gaps");
      goto done;
    }
    if (ssim) {
      const int64_t n = ndf_array_size(&S.arr);
      const double tol = !c->gauss ? 0 : S.arr.dtype == NDF_FLOAT32 ? 1e-6 : 1e-10;
      int64_t bad = 0;
      char detail[200] = "";
      for (int64_t i = 0; i < n; i++) {
        const double w = tu_get(&S.arr, i), g = tu_get(&fl.arr, i);
        if (tol == 0 ? !(w == g || (w != w && g != g)) : !close_abs(w, g, tol)) {
          if (bad++ == 0) snprintf(detail, sizeof detail, "map element %lld: want %.17g, got %.17g", (long long)i, w, g);
        }
      }
      if (bad) {
        snprintf(msg, sizeof msg, "%lld of %lld map values differ (%s): %s", (long long)bad, (long long)n,
                 tol == 0 ? "bit for bit" : "tolerance", detail);
        goto done;
      }
      if (tu_check_gaps(&fl) >= 0) {
        snprintf(msg, sizeof msg, "wrote outside the map's elements");
        goto done;
      }
    }
  }
  rc = 0;
done:
  if (rc != 0 && verbose) printf("FAIL case %d (%s): %s\n  %s\n", c->id, VARIANT_NAMES[v], c->line, msg);
  ndfio_image_free(&a);
  ndfio_image_free(&b);
  ndfio_image_free(&exp);
  ndfio_image_free(&S);
  tu_array_free(&al);
  tu_array_free(&bl);
  tu_array_free(&fl);
  res_free(&r);
  return rc;
}

static void run_all(void **state, int v) {
  mt_state *s = *state;
  if (!s->dir[0]) skip();
  tu_rng rng;
  tu_rng_seed(&rng, s->seed * 41u + (uint64_t)v);
  int failed = 0;
  for (int i = 0; i < s->ncases; i++) failed += run_case(s, &((mt_case *)s->cases)[i], v, &rng, failed < 12) != 0;
  if (failed) {
    s->keep_dir = 1;
    printf("%d of %d reference cases failed (%s); seed %llu, cases in %s\n", failed, s->ncases, VARIANT_NAMES[v],
           (unsigned long long)s->seed, s->dir);
  }
  assert_int_equal(failed, 0);
}

static void test_reference_cases(void **state) { run_all(state, V_ASIS); }
static void test_reference_cases_strided(void **state) { run_all(state, V_STRIDED); }
static void test_reference_cases_fortran(void **state) { run_all(state, V_FORTRAN); }

/* ------------------------------------------------------------------------ */
/* Brute forces: the definitions in double, on random images                  */

static void fill_random(tu_rng *rng, const ndf_array *a, double p_nonzero) {
  const int64_t n = ndf_array_size(a);
  double lo = -50, hi = 50;
  if (!tu_is_float(a->dtype)) tu_int_range(a->dtype, &lo, &hi);
  if (a->dtype == NDF_BOOL) lo = 0, hi = 1;
  for (int64_t i = 0; i < n; i++) {
    double v;
    if (p_nonzero >= 0) v = tu_rng_chance(rng, p_nonzero) ? (a->dtype == NDF_BOOL ? 1 : 1 + tu_rng_int(rng, 0, 3)) : 0;
    else if (tu_is_float(a->dtype)) v = lo + (hi - lo) * tu_rng_unif(rng);
    else v = (double)tu_rng_int(rng, (int64_t)(lo > -1000 ? lo : -1000), (int64_t)(hi < 1000 ? hi : 1000));
    tu_set(a, i, v);
  }
}

/* Hausdorff by definition: every pair of points (images of a small batch). */
static double bf_hausdorff(const ndf_array *a, const ndf_array *b, int nb, int64_t img, const double *sp) {
  const int nd = a->ndim, nsp = nd - nb;
  int64_t vox = 1;
  for (int d = nb; d < nd; d++) vox *= a->shape[d];
  double h[2] = {-1, -1};
  int64_t cnt[2] = {0, 0};
  for (int dir = 0; dir < 2; dir++) {
    const ndf_array *p = dir ? b : a, *q = dir ? a : b;
    for (int64_t i = 0; i < vox; i++) {
      if (tu_get(p, img * vox + i) == 0) continue;
      cnt[dir]++;
      double best = INFINITY;
      for (int64_t j = 0; j < vox; j++) {
        if (tu_get(q, img * vox + j) == 0) continue;
        double s = 0;
        int64_t x = i, y = j;
        for (int d = nsp - 1; d >= 0; d--) {
          const int64_t e = a->shape[nb + d];
          const double dd = (double)(x % e - y % e) * sp[d];
          s += dd * dd;
          x /= e;
          y /= e;
        }
        if (s < best) best = s;
      }
      if (sqrt(best) > h[dir]) h[dir] = sqrt(best);
    }
  }
  if (cnt[0] == 0) return cnt[1] == 0 ? 0 : INFINITY;
  if (cnt[1] == 0) return INFINITY;
  return h[0] > h[1] ? h[0] : h[1];
}

static void test_brute_force(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  tu_rng rng;
  tu_rng_seed(&rng, ((mt_state *)*state)->seed * 7u + 3);
  static const ndf_dtype dts[] = {NDF_BOOL, NDF_UINT8, NDF_INT8, NDF_UINT16, NDF_INT16,
                                  NDF_UINT32, NDF_INT32, NDF_FLOAT32, NDF_FLOAT64};
  for (int it = 0; it < 120; it++) {
    const int nb = (int)tu_rng_int(&rng, 0, 1), nsp = (int)tu_rng_int(&rng, 1, 3), nd = nb + nsp;
    int64_t shape[NDF_MAX_NDIM];
    for (int d = 0; d < nd; d++) shape[d] = tu_rng_int(&rng, 1, d < nb ? 3 : (nsp == 3 ? 6 : 12));
    const ndf_dtype ta = dts[tu_rng_int(&rng, 0, 8)], tb = dts[tu_rng_int(&rng, 0, 8)];
    tu_array a0 = {0}, b0 = {0}, a = {0}, b = {0};
    assert_int_equal(tu_array_alloc(&a0, ta, nd, shape), 0);
    assert_int_equal(tu_array_alloc(&b0, tb, nd, shape), 0);
    const int masks = it % 2;
    fill_random(&rng, &a0.arr, masks ? 0.3 : -1);
    fill_random(&rng, &b0.arr, masks ? 0.3 : -1);
    assert_int_equal(tu_array_relayout(&a, &a0.arr, TU_LAYOUT_PADDED | TU_LAYOUT_NEGATIVE, &rng), 0);
    assert_int_equal(tu_array_relayout(&b, &b0.arr, TU_LAYOUT_PADDED, &rng), 0);
    res_buf r;
    assert_int_equal(res_alloc(&r, nb, shape), 0);
    ndf_metrics_options o;
    ndf_metrics_options_init(&o);
    o.batch_dims = nb;
    int64_t nimg = 1, vox = 1;
    for (int d = 0; d < nb; d++) nimg *= shape[d];
    for (int d = nb; d < nd; d++) vox *= shape[d];
    const int f32 = ta == NDF_FLOAT32 && tb == NDF_FLOAT32;
    if (masks) {
      double sp[NDF_MAX_SPATIAL];
      o.nsampling = nsp;
      for (int d = 0; d < nsp; d++) o.sampling[d] = sp[d] = 0.5 + 0.25 * (double)tu_rng_int(&rng, 0, 4);
      assert_int_equal(ndf_hausdorff_distance(ctx, &a.arr, &b.arr, &r.arr, &o), NDF_OK);
      for (int64_t img = 0; img < nimg; img++) {
        const double want = bf_hausdorff(&a0.arr, &b0.arr, nb, img, sp), got = res_get(&r, img);
        if (!close_to(want, got, 1e-12)) fail_msg("hausdorff case %d image %lld: want %.17g got %.17g", it, (long long)img, want, got);
      }
      ndf_status st = ndf_dice_coefficient(ctx, &a.arr, &b.arr, &r.arr, &o);
      assert_int_equal(st, NDF_OK);
      for (int64_t img = 0; img < nimg; img++) {
        int64_t na = 0, nbz = 0, nab = 0;
        for (int64_t i = 0; i < vox; i++) {
          const int x = tu_get(&a0.arr, img * vox + i) != 0, y = tu_get(&b0.arr, img * vox + i) != 0;
          na += x;
          nbz += y;
          nab += x && y;
        }
        const double want = na + nbz ? 2.0 * (double)nab / (double)(na + nbz) : 1.0;
        assert_true(res_get(&r, img) == want);
      }
    } else {
      assert_int_equal(ndf_mean_squared_error(ctx, &a.arr, &b.arr, &r.arr, &o), NDF_OK);
      for (int64_t img = 0; img < nimg; img++) {
        double s = 0;
        for (int64_t i = 0; i < vox; i++) {
          const double x = tu_get(&a0.arr, img * vox + i), y = tu_get(&b0.arr, img * vox + i);
          if (f32) {
            const float d = (float)x - (float)y;
            s += (double)(d * d);
          } else {
            s += (x - y) * (x - y);
          }
        }
        const double want = s / (double)vox, got = res_get(&r, img);
        if (!close_to(want, got, 1e-12)) fail_msg("mse case %d image %lld: want %.17g got %.17g", it, (long long)img, want, got);
      }
    }
    assert_true(res_poison_ok(&r, 0));
    res_free(&r);
    tu_array_free(&a0);
    tu_array_free(&b0);
    tu_array_free(&a);
    tu_array_free(&b);
  }
}

/* ------------------------------------------------------------------------ */
/* Hand-checked values                                                       */

static double one(ndf_ctx *ctx, const char *metric, ndf_dtype t, int64_t n, const double *x, const double *y,
                  const ndf_metrics_options *opt, ndf_status *st) {
  tu_array a = {0}, b = {0};
  assert_int_equal(tu_array_alloc(&a, t, 1, &n), 0);
  assert_int_equal(tu_array_alloc(&b, t, 1, &n), 0);
  for (int64_t i = 0; i < n; i++) {
    tu_set(&a.arr, i, x[i]);
    tu_set(&b.arr, i, y[i]);
  }
  double v = NAN;
  ndf_array r;
  ndf_array_init(&r, &v, NDF_DEVICE_CPU, NDF_FLOAT64, 0, NULL);
  ndf_metrics_options o;
  ndf_metrics_options_init(&o);
  if (opt) o = *opt;
  if (!strcmp(metric, "hausdorff")) *st = ndf_hausdorff_distance(ctx, &a.arr, &b.arr, &r, &o);
  else if (!strcmp(metric, "dice")) *st = ndf_dice_coefficient(ctx, &a.arr, &b.arr, &r, &o);
  else if (!strcmp(metric, "jaccard")) *st = ndf_jaccard_index(ctx, &a.arr, &b.arr, &r, &o);
  else if (!strcmp(metric, "psnr")) *st = ndf_peak_signal_noise_ratio(ctx, &a.arr, &b.arr, &r, &o);
  else *st = ndf_mean_squared_error(ctx, &a.arr, &b.arr, &r, &o);
  tu_array_free(&a);
  tu_array_free(&b);
  return v;
}

static void test_known_values(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  ndf_status st;
  /* skimage's docstring: points (3, 0) and (6, 0) of a (7, 1) image, as a line. */
  static const double pa[7] = {0, 0, 0, 1, 0, 0, 0}, pb[7] = {0, 0, 0, 0, 0, 0, 1}, z[7] = {0};
  assert_true(one(ctx, "hausdorff", NDF_BOOL, 7, pa, pb, NULL, &st) == 3.0 && st == NDF_OK);
  assert_true(one(ctx, "hausdorff", NDF_BOOL, 7, z, z, NULL, &st) == 0.0 && st == NDF_OK);
  assert_true(isinf(one(ctx, "hausdorff", NDF_BOOL, 7, pa, z, NULL, &st)) && st == NDF_OK);
  assert_true(isinf(one(ctx, "hausdorff", NDF_UINT8, 7, z, pb, NULL, &st)) && st == NDF_OK);
  ndf_metrics_options o;
  ndf_metrics_options_init(&o);
  o.nsampling = 1;
  o.sampling[0] = 0.5;
  assert_true(one(ctx, "hausdorff", NDF_BOOL, 7, pa, pb, &o, &st) == 1.5 && st == NDF_OK);
  /* Percentiles of the directed distances {3, 2, 1, 0} (A = 0..3, B = {3}) and {0}: linear 50% = 1.5. */
  static const double qa[7] = {1, 1, 1, 1, 0, 0, 0}, qb[7] = {0, 0, 0, 1, 0, 0, 0};
  ndf_metrics_options_init(&o);
  o.percentile = 50;
  assert_true(one(ctx, "hausdorff", NDF_BOOL, 7, qa, qb, &o, &st) == 1.5 && st == NDF_OK);
  o.percentile = 100;
  assert_true(one(ctx, "hausdorff", NDF_BOOL, 7, qa, qb, &o, &st) == 3.0 && st == NDF_OK);
  /* Dice / Jaccard: both empty is 1; {0, 3} vs {3}: 2/3 and 1/2. */
  assert_true(one(ctx, "dice", NDF_BOOL, 7, z, z, NULL, &st) == 1.0 && st == NDF_OK);
  assert_true(one(ctx, "jaccard", NDF_FLOAT32, 7, z, z, NULL, &st) == 1.0 && st == NDF_OK);
  static const double da[7] = {1, 0, 0, 1, 0, 0, 0};
  assert_true(one(ctx, "dice", NDF_INT16, 7, da, qb, NULL, &st) == 2.0 / 3.0);
  assert_true(one(ctx, "jaccard", NDF_INT16, 7, da, qb, NULL, &st) == 0.5);
  assert_true(one(ctx, "dice", NDF_INT16, 7, da, z, NULL, &st) == 0.0);
  /* MSE and PSNR: uint8 {0, 10} vs {0, 0}: mse 50, psnr 10 log10(255^2 / 50). */
  static const double ma[2] = {0, 10}, mb[2] = {0, 0};
  assert_true(one(ctx, "mse", NDF_UINT8, 2, ma, mb, NULL, &st) == 50.0);
  assert_true(one(ctx, "psnr", NDF_UINT8, 2, ma, mb, NULL, &st) == 10.0 * log10(65025.0 / 50.0));
  assert_true(isinf(one(ctx, "psnr", NDF_UINT8, 2, ma, ma, NULL, &st)) && st == NDF_OK); /* mse 0 */
  /* int8 with a negative value: data_range 255 (hi - lo). */
  static const double na_[2] = {-1, 10};
  assert_true(one(ctx, "psnr", NDF_INT8, 2, na_, mb, NULL, &st) == 10.0 * log10(65025.0 / 50.5));
  /* float values in [0, 1]: data_range 1; outside [-1, 1]: rejected, naming data_range. */
  static const double fa[2] = {0.25, 1.0}, fb[2] = {0.0, 1.0}, fo[2] = {0.25, 1.5};
  assert_true(one(ctx, "psnr", NDF_FLOAT64, 2, fa, fb, NULL, &st) == 10.0 * log10(1.0 / (0.0625 / 2)));
  one(ctx, "psnr", NDF_FLOAT64, 2, fo, fb, NULL, &st);
  assert_int_equal(st, NDF_EINVAL);
  assert_non_null(strstr(ndf_errmsg(ctx), "'data_range'"));
  ndf_metrics_options_init(&o);
  o.data_range = 2.0;
  assert_true(one(ctx, "psnr", NDF_FLOAT64, 2, fo, fb, &o, &st) == 10.0 * log10(4.0 / (0.3125 / 2)));
  /* NaN propagates into mse. */
  static const double nn[2] = {NAN, 0};
  assert_true(isnan(one(ctx, "mse", NDF_FLOAT32, 2, nn, mb, NULL, &st)) && st == NDF_OK);
}

/* SSIM of an image with itself is 1 everywhere; a constant shift lowers the luminance term only. */
static void test_ssim_identity(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  tu_rng rng;
  tu_rng_seed(&rng, 11);
  const int64_t shape[3] = {2, 9, 11};
  tu_array a = {0}, f = {0};
  assert_int_equal(tu_array_alloc(&a, NDF_FLOAT64, 3, shape), 0);
  assert_int_equal(tu_array_alloc(&f, NDF_FLOAT64, 3, shape), 0);
  for (int64_t i = 0; i < 2 * 9 * 11; i++) tu_set(&a.arr, i, tu_rng_unif(&rng));
  double m[2];
  ndf_array r;
  ndf_array_init(&r, m, NDF_DEVICE_CPU, NDF_FLOAT64, 1, shape);
  ndf_ssim_options o;
  ndf_ssim_options_init(&o);
  o.batch_dims = 1;
  o.data_range = 1;
  assert_int_equal(ndf_structural_similarity(ctx, &a.arr, &a.arr, &r, &f.arr, &o), NDF_OK);
  assert_true(fabs(m[0] - 1) < 1e-12 && fabs(m[1] - 1) < 1e-12);
  for (int64_t i = 0; i < 2 * 9 * 11; i++) assert_true(fabs(tu_get(&f.arr, i) - 1) < 1e-12);
  /* mssim only, map only. */
  assert_int_equal(ndf_structural_similarity(ctx, &a.arr, &a.arr, NULL, &f.arr, &o), NDF_OK);
  assert_int_equal(ndf_structural_similarity(ctx, &a.arr, &a.arr, &r, NULL, &o), NDF_OK);
  tu_array_free(&a);
  tu_array_free(&f);
}

/* Results do not depend on the thread count. */
static void test_threads(void **state) {
  (void)state;
  tu_rng rng;
  tu_rng_seed(&rng, 5);
  const int64_t shape[3] = {70, 80, 90}; /* more than one chunk */
  tu_array a = {0}, b = {0};
  assert_int_equal(tu_array_alloc(&a, NDF_FLOAT32, 3, shape), 0);
  assert_int_equal(tu_array_alloc(&b, NDF_FLOAT32, 3, shape), 0);
  fill_random(&rng, &a.arr, -1);
  fill_random(&rng, &b.arr, -1);
  double v[2][3];
  for (int k = 0; k < 2; k++) {
    ndf_ctx_options co;
    ndf_ctx_options_init(&co);
    co.backend = NDF_BACKEND_CPU;
    co.cache_disable = 1;
    co.cpu_threads = k ? 3 : 1;
    ndf_ctx *ctx;
    assert_int_equal(ndf_ctx_create(&ctx, &co), NDF_OK);
    ndf_array r;
    ndf_array_init(&r, &v[k][0], NDF_DEVICE_CPU, NDF_FLOAT64, 0, NULL);
    ndf_metrics_options o;
    ndf_metrics_options_init(&o);
    assert_int_equal(ndf_mean_squared_error(ctx, &a.arr, &b.arr, &r, &o), NDF_OK);
    r.data = &v[k][1];
    ndf_ssim_options so;
    ndf_ssim_options_init(&so);
    so.data_range = 100;
    assert_int_equal(ndf_structural_similarity(ctx, &a.arr, &b.arr, &r, NULL, &so), NDF_OK);
    r.data = &v[k][2];
    o.percentile = 95;
    assert_int_equal(ndf_hausdorff_distance(ctx, &a.arr, &b.arr, &r, &o), NDF_OK);
    ndf_ctx_destroy(ctx);
  }
  assert_memory_equal(v[0], v[1], sizeof v[0]);
  tu_array_free(&a);
  tu_array_free(&b);
}

/* ------------------------------------------------------------------------ */
/* Contract                                                                  */

/* A rejected call: its status, message and untouched result; an accepted one (want NDF_OK)
 * poisons the result again for the next. */
static void expect(ndf_ctx *ctx, ndf_status got, ndf_status want, const char *api, const char *arg, const char *what,
                   const res_buf *r) {
  const char *m = ndf_errmsg(ctx);
  if (want == NDF_OK && got == NDF_OK) {
    if (r) tu_poison(r->base, r->n * sizeof(double));
    return;
  }
  if (got != want || !strstr(m, api) || (arg && !strstr(m, arg)) || (what && !strstr(m, what)))
    fail_msg("want %s naming %s, %s, \"%s\"; got %s \"%s\"", ndf_status_name(want), api, arg ? arg : "-",
             what ? what : "", ndf_status_name(got), m);
  if (r && !res_poison_ok(r, 1)) fail_msg("%s: rejected but the result was written", api);
}

static void test_contract(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  const int64_t s2[2] = {8, 9}, s2b[2] = {8, 10}, s3[3] = {3, 8, 9};
  tu_array a = {0}, b = {0}, c = {0}, a3 = {0}, i64 = {0}, e = {0};
  assert_int_equal(tu_array_alloc(&a, NDF_FLOAT32, 2, s2), 0);
  assert_int_equal(tu_array_alloc(&b, NDF_UINT8, 2, s2), 0);
  assert_int_equal(tu_array_alloc(&c, NDF_FLOAT32, 2, s2b), 0);
  assert_int_equal(tu_array_alloc(&a3, NDF_FLOAT64, 3, s3), 0);
  assert_int_equal(tu_array_alloc(&i64, NDF_INT64, 2, s2), 0);
  const int64_t s0[2] = {8, 0};
  assert_int_equal(tu_array_alloc(&e, NDF_FLOAT32, 2, s0), 0);
  res_buf r, r1;
  assert_int_equal(res_alloc(&r, 0, NULL), 0);
  assert_int_equal(res_alloc(&r1, 1, s3), 0);
  ndf_metrics_options o;
  ndf_metrics_options_init(&o);
  const char *mse = "ndf_mean_squared_error";

  expect(ctx, ndf_mean_squared_error(ctx, &a.arr, &c.arr, &r.arr, &o), NDF_EINVAL, mse, "'image1'", "one shape", &r);
  expect(ctx, ndf_mean_squared_error(ctx, NULL, &b.arr, &r.arr, &o), NDF_EINVAL, mse, "'image0'", "NULL", &r);
  expect(ctx, ndf_mean_squared_error(ctx, &a.arr, &b.arr, NULL, &o), NDF_EINVAL, mse, "'result'", "NULL", NULL);
  expect(ctx, ndf_mean_squared_error(ctx, &a.arr, &b.arr, &r.arr, NULL), NDF_EINVAL, mse, "'options'", NULL, &r);
  expect(ctx, ndf_mean_squared_error(ctx, &i64.arr, &b.arr, &r.arr, &o), NDF_OK, mse, NULL, NULL, &r); /* int64 taken */
  expect(ctx, ndf_mean_squared_error(ctx, &e.arr, &e.arr, &r.arr, &o), NDF_EINVAL, mse, "'image0'", "without elements",
         &r);
  expect(ctx, ndf_mean_squared_error(ctx, &a3.arr, &a3.arr, &r.arr, &o), NDF_OK, mse, NULL, NULL, &r);
  o.batch_dims = 1;
  expect(ctx, ndf_mean_squared_error(ctx, &a3.arr, &a3.arr, &r.arr, &o), NDF_EINVAL, mse, "'result'", "batch_dims",
         NULL);
  expect(ctx, ndf_mean_squared_error(ctx, &a3.arr, &a3.arr, &r1.arr, &o), NDF_OK, mse, NULL, NULL, &r1);
  o.batch_dims = 3;
  expect(ctx, ndf_mean_squared_error(ctx, &a3.arr, &a3.arr, &r1.arr, &o), NDF_EINVAL, mse, "'batch_dims'", NULL, NULL);
  o.batch_dims = 0;
  ndf_array bad = r.arr;
  bad.dtype = NDF_FLOAT32;
  expect(ctx, ndf_mean_squared_error(ctx, &a.arr, &b.arr, &bad, &o), NDF_EINVAL, mse, "'result'", "float64", &r);
  ndf_array over = a.arr; /* the result overlapping an input */
  over.dtype = NDF_FLOAT64;
  over.ndim = 0;
  expect(ctx, ndf_mean_squared_error(ctx, &a.arr, &b.arr, &over, &o), NDF_EINVAL, mse, "'result'", "overlaps", NULL);

  o.data_range = -1;
  expect(ctx, ndf_peak_signal_noise_ratio(ctx, &a.arr, &b.arr, &r.arr, &o), NDF_EINVAL, "ndf_peak_signal_noise_ratio",
         "'data_range'", NULL, &r);
  ndf_metrics_options_init(&o);
  o.normalization = (ndf_nrmse_norm)7;
  expect(ctx, ndf_normalized_root_mse(ctx, &a.arr, &b.arr, &r.arr, &o), NDF_EINVAL, "ndf_normalized_root_mse",
         "'normalization'", NULL, &r);
  ndf_metrics_options_init(&o);
  o.percentile = 0;
  expect(ctx, ndf_hausdorff_distance(ctx, &a.arr, &b.arr, &r.arr, &o), NDF_EINVAL, "ndf_hausdorff_distance",
         "'percentile'", NULL, &r);
  o.percentile = 100.5;
  expect(ctx, ndf_hausdorff_distance(ctx, &a.arr, &b.arr, &r.arr, &o), NDF_EINVAL, "ndf_hausdorff_distance",
         "'percentile'", NULL, &r);
  ndf_metrics_options_init(&o);
  o.nsampling = 3;
  expect(ctx, ndf_hausdorff_distance(ctx, &a.arr, &b.arr, &r.arr, &o), NDF_EINVAL, "ndf_hausdorff_distance",
         "'sampling'", NULL, &r);
  o.nsampling = 1;
  o.sampling[0] = 0;
  expect(ctx, ndf_hausdorff_distance(ctx, &a.arr, &b.arr, &r.arr, &o), NDF_EINVAL, "ndf_hausdorff_distance",
         "'sampling'", NULL, &r);

  const char *ss = "ndf_structural_similarity";
  ndf_ssim_options so;
  ndf_ssim_options_init(&so);
  tu_array f = {0};
  assert_int_equal(tu_array_alloc(&f, NDF_FLOAT32, 2, s2), 0);
  tu_poison(f.base, f.bytes);
  expect(ctx, ndf_structural_similarity(ctx, &a.arr, &b.arr, NULL, NULL, &so), NDF_EINVAL, ss, "'mssim'", NULL, NULL);
  so.win_size = 4;
  expect(ctx, ndf_structural_similarity(ctx, &a.arr, &b.arr, &r.arr, &f.arr, &so), NDF_EINVAL, ss, "'win_size'",
         "even", &r);
  so.win_size = 9;
  expect(ctx, ndf_structural_similarity(ctx, &a.arr, &b.arr, &r.arr, &f.arr, &so), NDF_EINVAL, ss, "'win_size'",
         "exceeds", &r);
  so.win_size = 1;
  expect(ctx, ndf_structural_similarity(ctx, &a.arr, &b.arr, &r.arr, &f.arr, &so), NDF_EINVAL, ss, "'win_size'",
         "divides by zero", &r);
  so.win_size = 0;
  so.gaussian_weights = 1; /* window 11 > 8 */
  expect(ctx, ndf_structural_similarity(ctx, &a.arr, &b.arr, &r.arr, &f.arr, &so), NDF_EINVAL, ss, "'win_size'",
         "exceeds", &r);
  ndf_ssim_options_init(&so);
  so.K1 = -0.1;
  expect(ctx, ndf_structural_similarity(ctx, &a.arr, &b.arr, &r.arr, &f.arr, &so), NDF_EINVAL, ss, "'K1'", NULL, &r);
  ndf_ssim_options_init(&so);
  so.sigma = -1;
  expect(ctx, ndf_structural_similarity(ctx, &a.arr, &b.arr, &r.arr, &f.arr, &so), NDF_EINVAL, ss, "'sigma'", NULL, &r);
  ndf_ssim_options_init(&so);
  ndf_array fb = f.arr;
  fb.dtype = NDF_UINT8;
  expect(ctx, ndf_structural_similarity(ctx, &a.arr, &b.arr, &r.arr, &fb, &so), NDF_EINVAL, ss, "'full'", "float32",
         &r);
  expect(ctx, ndf_structural_similarity(ctx, &a.arr, &c.arr, &r.arr, &f.arr, &so), NDF_EINVAL, ss, "'im2'", "one shape",
         &r);
  assert_true(tu_poison_check(f.base, f.bytes) < 0);
  expect(ctx, ndf_structural_similarity(ctx, &a.arr, &b.arr, &r.arr, &f.arr, &so), NDF_OK, ss, NULL, NULL, NULL);

  /* Names. */
  ndf_nrmse_norm nn;
  assert_int_equal(ndf_nrmse_norm_from_name("Min-Max", &nn), NDF_OK);
  assert_int_equal(nn, NDF_NRMSE_MIN_MAX);
  assert_int_equal(ndf_nrmse_norm_from_name("l2", &nn), NDF_EINVAL);
  assert_string_equal(ndf_nrmse_norm_name(NDF_NRMSE_MEAN), "mean");
  assert_null(ndf_nrmse_norm_name((ndf_nrmse_norm)9));

  tu_array_free(&a);
  tu_array_free(&b);
  tu_array_free(&c);
  tu_array_free(&a3);
  tu_array_free(&i64);
  tu_array_free(&e);
  tu_array_free(&f);
  res_free(&r);
  res_free(&r1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reference_cases),
      cmocka_unit_test(test_reference_cases_strided),
      cmocka_unit_test(test_reference_cases_fortran),
      cmocka_unit_test(test_brute_force),
      cmocka_unit_test(test_known_values),
      cmocka_unit_test(test_ssim_identity),
      cmocka_unit_test(test_threads),
      cmocka_unit_test(test_contract),
  };
  return cmocka_run_group_tests_name("metrics (CPU backend)", tests, group_setup, tu_oracle_group_teardown);
}
