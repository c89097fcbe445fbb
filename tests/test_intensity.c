/*
 * test_intensity.c -- the CPU backend of the intensity ops (ndf_histogram,
 * ndf_percentile / ndf_quantile, ndf_clip, ndf_window, ndf_normalize_minmax,
 * ndf_percentile_window, ndf_normalize_zscore, ndf_equalize_hist) against
 * NumPy and scikit-image, on hand-checked values, and their contract (every
 * rejected input: status, a message naming the op and the argument, an
 * untouched output).
 *
 * The reference part runs tests/oracle_intensity.py with a fresh seed per run
 * (printed; NDF_TEST_SEED repeats a run, NDF_TEST_CASES sets the number of
 * cases) and requires ndforge's results to equal the reference's value for
 * value -- NaN equal to NaN, -0.0 to +0.0 -- except weighted histograms
 * (1e-12 relative: the sums' order) and z-scores (1e-9 of the output's
 * scale: NumPy's pairwise mean), with the inputs as written, embedded in
 * larger buffers with permuted / padded / negative strides, and in Fortran
 * order, into outputs whose gaps must keep their poison.  Without NumPy and
 * scikit-image those cases are skipped, saying so.
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
#error "NDF_TEST_PYTHON (a python3 with numpy) must be defined by the build"
#endif
#ifndef NDF_TEST_ORACLE
#error "NDF_TEST_ORACLE (path of tests/oracle_intensity.py) must be defined by the build"
#endif

/* ------------------------------------------------------------------------ */
/* Cases written by the oracle                                               */

typedef struct it_case {
  char line[2048];
  int id;
  char op[16], dtype[16], odtype[16];
  int ndim, batch, error, density;
  int64_t shape[NDF_MAX_NDIM];
  int64_t bins, nbins;
  int has_range, nq;
  double range[2], q[8], lo, hi, a, b;
  char input[64], expected[64], expected2[64], edges[64], weights[64], mask[64];
} it_case;

static int parse_line(const char *line, void *cv) {
  it_case *c = cv;
  memset(c, 0, sizeof *c);
  c->batch = -1;
  snprintf(c->line, sizeof c->line, "%s", line);
  char buf[2048];
  snprintf(buf, sizeof buf, "%s", line);
  char *save = NULL;
  for (char *tok = strtok_r(buf, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
    char *eq = strchr(tok, '=');
    if (!eq) return -1;
    *eq = 0;
    const char *k = tok, *v = eq + 1;
#define STR(key) else if (!strcmp(k, #key)) snprintf(c->key, sizeof c->key, "%s", v)
    if (!strcmp(k, "id")) c->id = atoi(v);
    STR(op);
    STR(dtype);
    STR(odtype);
    STR(input);
    STR(expected);
    STR(expected2);
    STR(edges);
    STR(weights);
    STR(mask);
#undef STR
    else if (!strcmp(k, "shape")) c->ndim = tu_parse_i64s(v, c->shape, NDF_MAX_NDIM);
    else if (!strcmp(k, "batch")) c->batch = atoi(v);
    else if (!strcmp(k, "error")) c->error = atoi(v);
    else if (!strcmp(k, "density")) c->density = atoi(v);
    else if (!strcmp(k, "bins")) c->bins = atoll(v);
    else if (!strcmp(k, "nbins")) c->nbins = atoll(v);
    else if (!strcmp(k, "range")) c->has_range = tu_parse_f64s(v, c->range, 2) == 2;
    else if (!strcmp(k, "q")) c->nq = tu_parse_f64s(v, c->q, 8);
    else if (!strcmp(k, "lo")) c->lo = strtod(v, NULL);
    else if (!strcmp(k, "hi")) c->hi = strtod(v, NULL);
    else if (!strcmp(k, "a")) c->a = strtod(v, NULL);
    else if (!strcmp(k, "b")) c->b = strtod(v, NULL);
  }
  if (c->ndim <= 0 || c->batch < 0 || c->batch >= c->ndim || !c->op[0] || !c->input[0]) return -1;
  return c->error || c->expected[0] ? 0 : -1;
}

static int summary(const tu_oracle_group *g) {
  int errors = 0, batched = 0;
  const it_case *cs = g->cases;
  for (int i = 0; i < g->ncases; i++) {
    errors += cs[i].error;
    batched += cs[i].batch > 0;
  }
  printf("%d NumPy / scikit-image cases: %d batched, %d rejected\n", g->ncases, batched, errors);
  return 0;
}

static int group_setup(void **state) {
  return tu_oracle_group_setup_if(state, "numpy, skimage", "ndf-test-intensity", 300, NDF_TEST_PYTHON, NDF_TEST_ORACLE, sizeof(it_case),
                                  parse_line, summary);
}

/* ------------------------------------------------------------------------ */
/* Running a case                                                            */

static void load(const tu_oracle_group *g, const char *file, ndfio_image *img) {
  char path[1024], err[512];
  snprintf(path, sizeof path, "%s/%s", g->dir, file);
  if (ndfio_npy_read(path, img, err, sizeof err) != NDF_OK) fail_msg("%s: %s", path, err);
}

/* 0 when got equals expected (NaN = NaN, -0.0 = +0.0), within rel (of 1 + |expected|) or abs_scale
 * (of the largest |expected|) when those are non-zero; else prints the first differences. */
static int compare(const char *what, const it_case *c, const ndf_array *exp, const ndf_array *got, double rel,
                   double abs_scale) {
  const int64_t n = ndf_array_size(exp);
  double scale = 0;
  for (int64_t i = 0; i < n && abs_scale > 0; i++) {
    const double e = tu_get(exp, i);
    if (isfinite(e) && fabs(e) > scale) scale = fabs(e);
  }
  int bad = 0;
  for (int64_t i = 0; i < n; i++) {
    const double e = tu_get(exp, i), v = tu_get(got, i);
    int ok = e == v || (isnan(e) && isnan(v));
    if (!ok && rel > 0) ok = fabs(e - v) <= rel * (1 + fabs(e));
    if (!ok && abs_scale > 0) ok = fabs(e - v) <= abs_scale * (1 + scale);
    if (!ok && bad++ < 4) printf("case %d %s [%lld]: expected %.17g, got %.17g\n", c->id, what, (long long)i, e, v);
  }
  if (bad) printf("  %s\n", c->line);
  return bad;
}

/* Runs case c with the input in layout; returns the number of differences (0: ok). */
static int run_case(tu_oracle_group *g, const it_case *c, int layout, tu_rng *rng) {
  ndf_ctx *ctx = g->ctx;
  ndfio_image in = {0}, aux = {0}, exp = {0}, exp2 = {0}, edg = {0};
  load(g, c->input, &in);
  tu_array tin, taux = {0}, out, out2 = {0};
  assert_int_equal(tu_array_relayout(&tin, &in.arr, layout, rng), 0);
  const char *auxf = c->weights[0] ? c->weights : c->mask[0] ? c->mask : NULL;
  if (auxf) {
    load(g, auxf, &aux);
    assert_int_equal(tu_array_relayout(&taux, &aux.arr, layout, rng), 0);
  }
  if (c->edges[0]) load(g, c->edges, &edg);
  if (!c->error) load(g, c->expected, &exp);
  if (c->expected2[0]) load(g, c->expected2, &exp2);
  /* the output: the expected array's shape, or the shape the op takes when the case is rejected */
  ndf_array od;
  ndf_dtype odt;
  assert_int_equal(ndf_dtype_from_name(c->odtype, &odt), NDF_OK);
  int64_t oshape[NDF_MAX_NDIM];
  int ond = c->ndim;
  memcpy(oshape, c->shape, sizeof oshape);
  const int is_hist = !strcmp(c->op, "hist"), is_q = !strcmp(c->op, "percentile") || !strcmp(c->op, "quantile");
  const int64_t nbins = c->edges[0] ? ndf_array_size(&edg.arr) - 1 : c->bins;
  if (is_hist) {
    ond = c->batch + 1;
    oshape[c->batch] = nbins;
    if (!c->weights[0] && !c->density) odt = NDF_INT64;
  } else if (is_q) {
    ond = c->batch + 1;
    oshape[c->batch] = c->nq;
  }
  if (!c->error && !is_hist) odt = exp.arr.dtype;
  assert_int_equal(ndf_array_init(&od, NULL, NDF_DEVICE_CPU, odt, ond, oshape), NDF_OK);
  assert_int_equal(tu_array_like(&out, &od, layout, rng), 0);
  if (is_hist) {
    oshape[c->batch] = nbins + 1;
    assert_int_equal(ndf_array_init(&od, NULL, NDF_DEVICE_CPU, NDF_FLOAT64, ond, oshape), NDF_OK);
    assert_int_equal(tu_array_like(&out2, &od, layout, rng), 0);
  }
  ndf_window_options wo;
  ndf_window_options_init(&wo);
  wo.out_min = c->a;
  wo.out_max = c->b;
  wo.batch_dims = c->batch;
  ndf_status s;
  if (is_hist) {
    ndf_histogram_options ho;
    ndf_histogram_options_init(&ho);
    ho.bins = c->bins;
    if (c->edges[0]) {
      ho.edges = edg.arr.data;
      ho.nedges = ndf_array_size(&edg.arr);
    }
    ho.has_range = c->has_range;
    ho.range[0] = c->range[0];
    ho.range[1] = c->range[1];
    ho.weights = c->weights[0] ? &taux.arr : NULL;
    ho.density = c->density;
    ho.batch_dims = c->batch;
    s = ndf_histogram(ctx, &tin.arr, &out.arr, &out2.arr, &ho);
  } else if (!strcmp(c->op, "percentile")) {
    s = ndf_percentile(ctx, &tin.arr, c->q, c->nq, &out.arr, c->batch);
  } else if (!strcmp(c->op, "quantile")) {
    s = ndf_quantile(ctx, &tin.arr, c->q, c->nq, &out.arr, c->batch);
  } else if (!strcmp(c->op, "clip")) {
    s = ndf_clip(ctx, &tin.arr, &out.arr, c->lo, c->hi);
  } else if (!strcmp(c->op, "window")) {
    s = ndf_window(ctx, &tin.arr, &out.arr, c->lo, c->hi, &wo);
  } else if (!strcmp(c->op, "minmax")) {
    s = ndf_normalize_minmax(ctx, &tin.arr, &out.arr, &wo);
  } else if (!strcmp(c->op, "pwindow")) {
    s = ndf_percentile_window(ctx, &tin.arr, &out.arr, c->lo, c->hi, &wo);
  } else if (!strcmp(c->op, "zscore")) {
    s = ndf_normalize_zscore(ctx, &tin.arr, auxf ? &taux.arr : NULL, &out.arr, c->batch);
  } else {
    s = ndf_equalize_hist(ctx, &tin.arr, auxf ? &taux.arr : NULL, &out.arr, (int)c->nbins, c->batch);
  }
  int bad = 0;
  if (c->error) {
    if (s != NDF_EINVAL) {
      printf("case %d: expected NDF_EINVAL, got %s (%s)\n  %s\n", c->id, ndf_status_name(s), ndf_errmsg(ctx), c->line);
      bad++;
    }
    if (tu_poison_check(out.base, out.bytes) >= 0) {
      printf("case %d: a rejected call wrote its output\n", c->id);
      bad++;
    }
  } else if (s != NDF_OK) {
    printf("case %d: %s (%s)\n  %s\n", c->id, ndf_status_name(s), ndf_errmsg(ctx), c->line);
    bad++;
  } else {
    const double rel = is_hist && c->weights[0] ? 1e-12 : 0, abs_scale = !strcmp(c->op, "zscore") ? 1e-9 : 0;
    bad += compare("output", c, &exp.arr, &out.arr, rel, abs_scale);
    if (tu_check_gaps(&out) >= 0) {
      printf("case %d: the gaps of the output lost their poison\n", c->id);
      bad++;
    }
    if (is_hist) bad += compare("bin_edges", c, &exp2.arr, &out2.arr, 0, 0);
  }
  tu_array_free(&tin);
  tu_array_free(&taux);
  tu_array_free(&out);
  tu_array_free(&out2);
  ndfio_image_free(&in);
  ndfio_image_free(&aux);
  ndfio_image_free(&exp);
  ndfio_image_free(&exp2);
  ndfio_image_free(&edg);
  return bad;
}

static void run_all(void **state, int layout) {
  tu_oracle_group *g = *state;
  if (!g->dir[0]) {
    printf("skip: no NumPy / scikit-image\n");
    skip();
  }
  tu_rng rng;
  tu_rng_seed(&rng, g->seed + (uint64_t)layout);
  int failed = 0;
  for (int i = 0; i < g->ncases; i++) failed += run_case(g, &((it_case *)g->cases)[i], layout, &rng) != 0;
  if (failed) {
    g->keep_dir = 1;
    fail_msg("%d of %d cases differ from the reference", failed, g->ncases);
  }
}

static void test_reference_cases(void **state) { run_all(state, TU_LAYOUT_C); }
static void test_reference_cases_strided(void **state) {
  run_all(state, TU_LAYOUT_PADDED | TU_LAYOUT_NEGATIVE | TU_LAYOUT_OFFSET);
}
static void test_reference_cases_fortran(void **state) { run_all(state, TU_LAYOUT_FORTRAN); }

/* ------------------------------------------------------------------------ */
/* Hand-checked values                                                       */

static void arr1(ndf_array *a, void *data, ndf_dtype t, int64_t n) {
  assert_int_equal(ndf_array_init(a, data, NDF_DEVICE_CPU, t, 1, &n), NDF_OK);
}

static void test_known_values(void **state) {
  ndf_ctx *ctx = ((tu_oracle_group *)*state)->ctx;
  /* np.percentile([1, 2, 3, 4], [50, 25, 100]) = [2.5, 1.75, 4] */
  float x[4] = {4, 1, 3, 2};
  double r[3], q[3] = {50, 25, 100};
  ndf_array a, o;
  arr1(&a, x, NDF_FLOAT32, 4);
  arr1(&o, r, NDF_FLOAT64, 3);
  assert_int_equal(ndf_percentile(ctx, &a, q, 3, &o, 0), NDF_OK);
  assert_true(r[0] == 2.5 && r[1] == 1.75 && r[2] == 4);
  /* np.percentile(np.int8([-100, 100]), 50) is 0 here (NumPy 1.x wraps b - a around) */
  int8_t xi[2] = {-100, 100};
  double r1;
  double q50 = 50;
  arr1(&a, xi, NDF_INT8, 2);
  assert_int_equal(ndf_array_init(&o, &r1, NDF_DEVICE_CPU, NDF_FLOAT64, 0, NULL), NDF_OK);
  assert_int_equal(ndf_percentile(ctx, &a, &q50, 1, &o, 0), NDF_OK);
  assert_true(r1 == 0);
  /* np.histogram([1, 2, 1, 4], bins=3): [2, 1, 1], edges [1, 2, 3, 4] */
  uint8_t h[4] = {1, 2, 1, 4};
  int64_t cnt[3];
  double e[4];
  ndf_array ha, ea;
  arr1(&a, h, NDF_UINT8, 4);
  arr1(&ha, cnt, NDF_INT64, 3);
  arr1(&ea, e, NDF_FLOAT64, 4);
  ndf_histogram_options ho;
  ndf_histogram_options_init(&ho);
  ho.bins = 3;
  assert_int_equal(ndf_histogram(ctx, &a, &ha, &ea, &ho), NDF_OK);
  assert_true(cnt[0] == 2 && cnt[1] == 1 && cnt[2] == 1);
  assert_true(e[0] == 1 && e[1] == 2 && e[2] == 3 && e[3] == 4);
  /* CT presets: brain 40/80 -> [0, 80]; lung -600/1500 -> [-1350, 150] */
  double c, w;
  assert_int_equal(ndf_ct_window_preset("brain", &c, &w), NDF_OK);
  assert_true(c == 40 && w == 80);
  assert_int_equal(ndf_ct_window_preset("lung", &c, &w), NDF_OK);
  assert_true(c == -600 && w == 1500);
  assert_int_equal(ndf_ct_window_preset("kidney", &c, &w), NDF_EINVAL);
  assert_non_null(strstr(ndf_last_error(), "kidney"));
  /* the brain window of [-100, 0, 40, 80, 200] HU mapped to [-1, 1]: -1, -1, 0, 1, 1 */
  int16_t hu[5] = {-100, 0, 40, 80, 200};
  double wv[5];
  ndf_window_options wo;
  ndf_window_options_init(&wo);
  wo.out_min = -1;
  arr1(&a, hu, NDF_INT16, 5);
  arr1(&o, wv, NDF_FLOAT64, 5);
  assert_int_equal(ndf_ct_window_preset("brain", &c, &w), NDF_OK);
  assert_int_equal(ndf_window_ct(ctx, &a, &o, c, w, &wo), NDF_OK);
  assert_true(wv[0] == -1 && wv[1] == -1 && wv[2] == 0 && wv[3] == 1 && wv[4] == 1);
  /* z-score inside a mask: statistics from {1, 3} (mean 2, std 1) applied to all */
  double zx[4] = {1, 3, 10, 2}, zo[4];
  uint8_t zm[4] = {1, 1, 0, 0};
  ndf_array ma;
  arr1(&a, zx, NDF_FLOAT64, 4);
  arr1(&o, zo, NDF_FLOAT64, 4);
  arr1(&ma, zm, NDF_BOOL, 4);
  assert_int_equal(ndf_normalize_zscore(ctx, &a, &ma, &o, 0), NDF_OK);
  assert_true(zo[0] == -1 && zo[1] == 1 && zo[2] == 8 && zo[3] == 0);
}

/* Empty inputs: a histogram counts nothing; a percentile of an empty image is rejected. */
static void test_empty(void **state) {
  ndf_ctx *ctx = ((tu_oracle_group *)*state)->ctx;
  float x[1];
  int64_t shape[2] = {2, 0}, cnt[2 * 4];
  double e[2 * 5], q = 50, r[2];
  ndf_array a, ha, ea, o;
  assert_int_equal(ndf_array_init(&a, x, NDF_DEVICE_CPU, NDF_FLOAT32, 2, shape), NDF_OK);
  int64_t hs[2] = {2, 4}, es[2] = {2, 5}, rs[1] = {2};
  assert_int_equal(ndf_array_init(&ha, cnt, NDF_DEVICE_CPU, NDF_INT64, 2, hs), NDF_OK);
  assert_int_equal(ndf_array_init(&ea, e, NDF_DEVICE_CPU, NDF_FLOAT64, 2, es), NDF_OK);
  ndf_histogram_options ho;
  ndf_histogram_options_init(&ho);
  ho.bins = 4;
  ho.batch_dims = 1;
  memset(cnt, 0xff, sizeof cnt);
  assert_int_equal(ndf_histogram(ctx, &a, &ha, &ea, &ho), NDF_OK);
  for (int i = 0; i < 8; i++) assert_true(cnt[i] == 0);
  assert_true(e[0] == 0 && e[4] == 1 && e[5] == 0 && e[9] == 1);
  assert_int_equal(ndf_array_init(&o, r, NDF_DEVICE_CPU, NDF_FLOAT64, 1, rs), NDF_OK);
  assert_int_equal(ndf_percentile(ctx, &a, &q, 1, &o, 1), NDF_EINVAL);
  assert_non_null(strstr(ndf_errmsg(ctx), "empty"));
}

/* The result does not depend on the thread count. */
static void test_threads(void **state) {
  (void)state;
  tu_rng rng;
  tu_rng_seed(&rng, tu_seed("NDF_TEST_SEED"));
  int64_t shape[2] = {5, 3001};
  tu_array in, o1, o2;
  assert_int_equal(tu_array_alloc(&in, NDF_FLOAT32, 2, shape), 0);
  assert_int_equal(tu_array_alloc(&o1, NDF_FLOAT32, 2, shape), 0);
  assert_int_equal(tu_array_alloc(&o2, NDF_FLOAT32, 2, shape), 0);
  for (int64_t i = 0; i < 5 * 3001; i++) tu_set(&in.arr, i, (double)(float)tu_rng_normal(&rng));
  ndf_window_options wo;
  ndf_window_options_init(&wo);
  wo.batch_dims = 1;
  for (int th = 1; th <= 3; th += 2) {
    ndf_ctx *ctx = tu_cpu_ctx(th, NULL);
    assert_non_null(ctx);
    assert_int_equal(ndf_percentile_window(ctx, &in.arr, th == 1 ? &o1.arr : &o2.arr, 0.5, 99.5, &wo), NDF_OK);
    ndf_ctx_destroy(ctx);
  }
  char msg[512];
  assert_int_equal(tu_compare(&o1.arr, &o2.arr, msg, sizeof msg), 0);
  tu_array_free(&in);
  tu_array_free(&o1);
  tu_array_free(&o2);
}

static int cmp_key(const void *pa, const void *pb) {
  const double a = *(const double *)pa, b = *(const double *)pb;
  if (a != b) return a < b ? -1 : 1;
  return (int)!!signbit(b) - (int)!!signbit(a); /* -0.0 below +0.0 */
}

/* Percentiles of an image large enough for the selection's parallel chunks and 16-bit digits
 * (over 2^20 values, a background of repeated zeros of both signs, the extremes last), at 1 and
 * 4 threads, against the sorted image. */
static void test_large_percentiles(void **state) {
  (void)state;
  tu_rng rng;
  tu_rng_seed(&rng, tu_seed("NDF_TEST_SEED"));
  const int64_t n = ((int64_t)1 << 20) + 7;
  const double q[6] = {0, 1e-7, 0.5, 50, 99.5, 100};
  double *x = malloc((size_t)n * sizeof *x), *v = malloc((size_t)n * sizeof *v), got[6];
  assert_non_null(x);
  assert_non_null(v);
  for (int64_t i = 0; i < n; i++) {
    const double u = tu_rng_unif(&rng);
    x[i] = u < 0.6 ? 0.0 : u < 0.7 ? -0.0 : u < 0.75 ? 3.0 : tu_rng_normal(&rng);
  }
  x[n - 1] = -1e300; /* the extremes in the last chunk's last elements */
  x[n - 2] = 1e300;
  memcpy(v, x, (size_t)n * sizeof *v);
  qsort(v, (size_t)n, sizeof *v, cmp_key);
  ndf_array in, out;
  arr1(&in, x, NDF_FLOAT64, n);
  arr1(&out, got, NDF_FLOAT64, 6);
  for (int th = 1; th <= 4; th += 3) {
    ndf_ctx *ctx = tu_cpu_ctx(th, NULL);
    assert_non_null(ctx);
    assert_int_equal(ndf_percentile(ctx, &in, q, 6, &out, 0), NDF_OK);
    ndf_ctx_destroy(ctx);
    for (int i = 0; i < 6; i++) {
      const double h = (double)(n - 1) * (q[i] / 100);
      int64_t ip = (int64_t)floor(h), in_ = ip + 1;
      double t = h - floor(h);
      if (h >= (double)(n - 1)) {
        ip = in_ = n - 1;
        t = h + 1; /* NumPy's gamma of the last value, indexed as -1 */
      }
      const double a = v[ip], b = v[in_], d = b - a;
      const double want = t >= 0.5 ? b - d * (1 - t) : a + d * t;
      if (memcmp(&want, &got[i], sizeof want))
        fail_msg("%d threads, q=%g: %.17g, sorted image %.17g", th, q[i], got[i], want);
    }
  }
  free(x);
  free(v);
}

/* ------------------------------------------------------------------------ */
/* The contract                                                              */

#define EXPECT_REJECT(call, op, arg, out)                                                        \
  do {                                                                                          \
    tu_poison((out).base, (out).bytes);                                                         \
    ndf_status s_ = (call);                                                                     \
    if (s_ != NDF_EINVAL) fail_msg("%s: expected NDF_EINVAL, got %s", #call, ndf_status_name(s_)); \
    const char *m_ = ndf_errmsg(ctx);                                                           \
    if (!strstr(m_, op) || !strstr(m_, arg)) fail_msg("%s: message '%s' lacks '%s' / '%s'", #call, m_, op, arg); \
    assert_true(tu_poison_check((out).base, (out).bytes) < 0);                                  \
  } while (0)

static void test_contract(void **state) {
  ndf_ctx *ctx = ((tu_oracle_group *)*state)->ctx;
  int64_t shape[2] = {3, 16}, hshape[2] = {3, 4}, eshape[2] = {3, 5}, qshape[2] = {3, 2};
  tu_array in, bin, hist, hf, edges, q2, of, ou8;
  assert_int_equal(tu_array_alloc(&in, NDF_FLOAT32, 2, shape), 0);
  assert_int_equal(tu_array_alloc(&bin, NDF_BOOL, 2, shape), 0);
  assert_int_equal(tu_array_alloc(&hist, NDF_INT64, 2, hshape), 0);
  assert_int_equal(tu_array_alloc(&hf, NDF_FLOAT64, 2, hshape), 0);
  assert_int_equal(tu_array_alloc(&edges, NDF_FLOAT64, 2, eshape), 0);
  assert_int_equal(tu_array_alloc(&q2, NDF_FLOAT64, 2, qshape), 0);
  assert_int_equal(tu_array_alloc(&of, NDF_FLOAT32, 2, shape), 0);
  assert_int_equal(tu_array_alloc(&ou8, NDF_UINT8, 2, shape), 0);
  for (int64_t i = 0; i < 48; i++) tu_set(&in.arr, i, (double)(i % 7) - (i == 5 ? NAN : 0));
  ndf_histogram_options ho;
  ndf_histogram_options_init(&ho);
  ho.bins = 4;
  ho.batch_dims = 1;
  ho.has_range = 1;
  ho.range[1] = 6;
  /* a valid call first */
  assert_int_equal(ndf_histogram(ctx, &in.arr, &hist.arr, &edges.arr, &ho), NDF_OK);
  ho.bins = 0;
  EXPECT_REJECT(ndf_histogram(ctx, &in.arr, &hist.arr, &edges.arr, &ho), "ndf_histogram", "bins", hist);
  ho.bins = -3;
  EXPECT_REJECT(ndf_histogram(ctx, &in.arr, &hist.arr, NULL, &ho), "ndf_histogram", "bins", hist);
  ho.bins = 4;
  ho.range[0] = 7;
  EXPECT_REJECT(ndf_histogram(ctx, &in.arr, &hist.arr, NULL, &ho), "ndf_histogram", "range", hist);
  ho.range[0] = 0;
  ho.range[1] = INFINITY;
  EXPECT_REJECT(ndf_histogram(ctx, &in.arr, &hist.arr, NULL, &ho), "ndf_histogram", "range", hist);
  ho.range[1] = 6;
  double dec[5] = {0, 1, 3, 2, 4}, nan_e[5] = {0, 1, NAN, 3, 4};
  ho.edges = dec;
  ho.nedges = 5;
  EXPECT_REJECT(ndf_histogram(ctx, &in.arr, &hist.arr, NULL, &ho), "ndf_histogram", "monotonically", hist);
  ho.edges = nan_e;
  EXPECT_REJECT(ndf_histogram(ctx, &in.arr, &hist.arr, NULL, &ho), "ndf_histogram", "edges", hist);
  ho.nedges = 1;
  EXPECT_REJECT(ndf_histogram(ctx, &in.arr, &hist.arr, NULL, &ho), "ndf_histogram", "edges", hist);
  ho.edges = NULL;
  ho.density = 1;
  EXPECT_REJECT(ndf_histogram(ctx, &in.arr, &hist.arr, NULL, &ho), "ndf_histogram", "hist", hist);
  ho.density = 0;
  ho.has_range = 0; /* the detected range of image 0 holds NaN */
  EXPECT_REJECT(ndf_histogram(ctx, &in.arr, &hf.arr, NULL, &ho), "ndf_histogram", "not finite", hf);
  EXPECT_REJECT(ndf_histogram(ctx, &bin.arr, &hist.arr, NULL, &ho), "ndf_histogram", "input", hist);
  ho.batch_dims = 2;
  EXPECT_REJECT(ndf_histogram(ctx, &in.arr, &hist.arr, NULL, &ho), "ndf_histogram", "batch_dims", hist);
  ho.batch_dims = 0;
  EXPECT_REJECT(ndf_histogram(ctx, &in.arr, &hist.arr, NULL, &ho), "ndf_histogram", "hist", hist); /* shape */

  double q[2] = {10, 101}, qq[2] = {0.1, -0.5};
  EXPECT_REJECT(ndf_percentile(ctx, &in.arr, q, 2, &q2.arr, 1), "ndf_percentile", "q", q2);
  EXPECT_REJECT(ndf_quantile(ctx, &in.arr, qq, 2, &q2.arr, 1), "ndf_quantile", "q", q2);
  q[1] = NAN;
  EXPECT_REJECT(ndf_percentile(ctx, &in.arr, q, 2, &q2.arr, 1), "ndf_percentile", "q", q2);
  EXPECT_REJECT(ndf_percentile(ctx, &in.arr, q, 0, &q2.arr, 1), "ndf_percentile", "q", q2);
  q[1] = 50;
  EXPECT_REJECT(ndf_percentile(ctx, &in.arr, q, 2, &hf.arr, 1), "ndf_percentile", "output", hf);

  ndf_window_options wo;
  ndf_window_options_init(&wo);
  EXPECT_REJECT(ndf_clip(ctx, &in.arr, &of.arr, 2, 1), "ndf_clip", "lo", of);
  EXPECT_REJECT(ndf_clip(ctx, &in.arr, &ou8.arr, -1, 1), "ndf_clip", "output", ou8);
  EXPECT_REJECT(ndf_window(ctx, &in.arr, &of.arr, 2, 1, &wo), "ndf_window", "lo", of);
  EXPECT_REJECT(ndf_window(ctx, &in.arr, &of.arr, 0, INFINITY, &wo), "ndf_window", "lo", of);
  EXPECT_REJECT(ndf_window(ctx, &in.arr, &ou8.arr, 0, 1, &wo), "ndf_window", "output", ou8);
  EXPECT_REJECT(ndf_window_ct(ctx, &in.arr, &of.arr, 40, -80, &wo), "ndf_window_ct", "width", of);
  EXPECT_REJECT(ndf_percentile_window(ctx, &in.arr, &of.arr, 99.5, 0.5, &wo), "ndf_percentile_window", "p_lo", of);
  EXPECT_REJECT(ndf_percentile_window(ctx, &in.arr, &of.arr, -1, 50, &wo), "ndf_percentile_window", "p_lo", of);
  wo.out_max = NAN;
  EXPECT_REJECT(ndf_normalize_minmax(ctx, &in.arr, &of.arr, &wo), "ndf_normalize_minmax", "options", of);
  EXPECT_REJECT(ndf_normalize_zscore(ctx, &in.arr, &hf.arr, &of.arr, 0), "ndf_normalize_zscore", "mask", of);
  EXPECT_REJECT(ndf_normalize_zscore(ctx, &in.arr, &of.arr, &of.arr, 0), "ndf_normalize_zscore", "output", of);
  EXPECT_REJECT(ndf_equalize_hist(ctx, &in.arr, NULL, &of.arr, 0, 0), "ndf_equalize_hist", "nbins", of);
  /* NaN among the values of a float image (scikit-image: ValueError) */
  EXPECT_REJECT(ndf_equalize_hist(ctx, &in.arr, NULL, &of.arr, 256, 1), "ndf_equalize_hist", "not finite", of);

  tu_array_free(&in);
  tu_array_free(&bin);
  tu_array_free(&hist);
  tu_array_free(&hf);
  tu_array_free(&edges);
  tu_array_free(&q2);
  tu_array_free(&of);
  tu_array_free(&ou8);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reference_cases),
      cmocka_unit_test(test_reference_cases_strided),
      cmocka_unit_test(test_reference_cases_fortran),
      cmocka_unit_test(test_known_values),
      cmocka_unit_test(test_empty),
      cmocka_unit_test(test_threads),
      cmocka_unit_test(test_large_percentiles),
      cmocka_unit_test(test_contract),
  };
  return cmocka_run_group_tests(tests, group_setup, tu_oracle_group_teardown);
}
