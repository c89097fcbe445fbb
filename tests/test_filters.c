/*
 * test_filters.c -- the CPU backend of the linear filters (correlate1d,
 * convolve1d, correlate, convolve, uniform_filter1d, uniform_filter,
 * gaussian_filter1d, gaussian_filter, sobel, prewitt, laplace,
 * gaussian_laplace, gaussian_gradient_magnitude) against scipy.ndimage
 * itself, plus the conversions, compositions and errors checked by hand.
 *
 * The scipy part runs tests/oracle_filters.py with a fresh seed per run
 * (printed; NDF_TEST_SEED repeats a run, NDF_TEST_CASES sets the number of
 * cases), and requires ndforge's output to equal scipy's bit for bit, with
 * the input as written, in Fortran order, embedded in a larger buffer with
 * permuted / padded / negative strides, and with strided outputs (whose gaps
 * must keep their poison).  For the Gaussian ops the bit-exact reference is
 * scipy with the C library's exp in its kernel (see the oracle); plain
 * scipy's output is also compared, to a tolerance: a float64 output within
 * 1e-13 of max(|expected|, |input|), a float32 output within 2e-6 of it.
 * Integer outputs are only counted: a kernel weight one unit in the last
 * place away moves a sum that lands on an integer across it, and a later
 * pass (or a wrap-around) can make that difference large.
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

#include <float.h>
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
#error "NDF_TEST_ORACLE (path of tests/oracle_filters.py) must be defined by the build"
#endif

/* ------------------------------------------------------------------------ */
/* Cases written by the oracle                                               */

typedef struct filt_case {
  char line[1024];
  int id;
  char op[40];
  char dtype[16], odtype[16];
  int ndim;
  int64_t shape[NDF_MAX_NDIM];
  int batch;
  double cval;
  int naxes;
  int64_t axes[NDF_MAX_SPATIAL];
  int has_axis;
  int axis;
  int nmodes;
  ndf_mode modes[NDF_MAX_SPATIAL];
  int norigin;
  int64_t origin[NDF_MAX_SPATIAL];
  int nsize;
  int64_t size[NDF_MAX_SPATIAL];
  int nsigma;
  double sigma[NDF_MAX_SPATIAL];
  int norder;
  int64_t order[NDF_MAX_SPATIAL];
  double truncate;
  int nradius;
  int64_t radius[NDF_MAX_SPATIAL];
  char input[64], weights[64], expected[64], expected_np[64];
} filt_case;

typedef tu_oracle_group filt_state;
static filt_case *cases_of(const filt_state *s) { return s->cases; }

static int parse_modes(const char *v, ndf_mode *out, int max) {
  int n = 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", v);
  char *save = NULL;
  for (char *t = strtok_r(buf, ",", &save); t && n < max; t = strtok_r(NULL, ",", &save))
    if (ndf_mode_from_name(t, &out[n++]) != NDF_OK) return -1;
  return n;
}

static int parse_case(const char *line, filt_case *c) {
  memset(c, 0, sizeof *c);
  c->truncate = 4.0;
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
    else if (!strcmp(k, "op")) snprintf(c->op, sizeof c->op, "%s", v);
    else if (!strcmp(k, "dtype")) snprintf(c->dtype, sizeof c->dtype, "%s", v);
    else if (!strcmp(k, "odtype")) snprintf(c->odtype, sizeof c->odtype, "%s", v);
    else if (!strcmp(k, "shape")) c->ndim = tu_parse_i64s(v, c->shape, NDF_MAX_NDIM);
    else if (!strcmp(k, "batch")) c->batch = atoi(v);
    else if (!strcmp(k, "cval")) c->cval = strtod(v, NULL);
    else if (!strcmp(k, "axes")) c->naxes = tu_parse_i64s(v, c->axes, NDF_MAX_SPATIAL);
    else if (!strcmp(k, "axis")) { c->has_axis = 1; c->axis = atoi(v); }
    else if (!strcmp(k, "modes")) { if ((c->nmodes = parse_modes(v, c->modes, NDF_MAX_SPATIAL)) < 0) return -1; }
    else if (!strcmp(k, "origin")) c->norigin = tu_parse_i64s(v, c->origin, NDF_MAX_SPATIAL);
    else if (!strcmp(k, "size")) c->nsize = tu_parse_i64s(v, c->size, NDF_MAX_SPATIAL);
    else if (!strcmp(k, "sigma")) c->nsigma = tu_parse_f64s(v, c->sigma, NDF_MAX_SPATIAL);
    else if (!strcmp(k, "order")) c->norder = tu_parse_i64s(v, c->order, NDF_MAX_SPATIAL);
    else if (!strcmp(k, "truncate")) c->truncate = strtod(v, NULL);
    else if (!strcmp(k, "radius")) c->nradius = tu_parse_i64s(v, c->radius, NDF_MAX_SPATIAL);
    else if (!strcmp(k, "input")) snprintf(c->input, sizeof c->input, "%s", v);
    else if (!strcmp(k, "weights")) snprintf(c->weights, sizeof c->weights, "%s", v);
    else if (!strcmp(k, "expected")) snprintf(c->expected, sizeof c->expected, "%s", v);
    else if (!strcmp(k, "expected_np")) snprintf(c->expected_np, sizeof c->expected_np, "%s", v);
  }
  return c->op[0] && c->input[0] && c->expected[0] && c->ndim > 0 ? 0 : -1;
}

static int parse_line(const char *line, void *c) { return parse_case(line, c); }

static const char *const OPS[] = {"correlate1d", "convolve1d", "correlate", "convolve", "uniform_filter1d",
                                  "uniform_filter", "gaussian_filter1d", "gaussian_filter", "sobel", "prewitt",
                                  "laplace", "gaussian_laplace", "gaussian_gradient_magnitude"};
#define NOPS ((int)(sizeof OPS / sizeof OPS[0]))

static int op_index(const char *op) {
  for (int i = 0; i < NOPS; i++)
    if (!strcmp(op, OPS[i])) return i;
  return -1;
}

static int summary(const filt_state *s) {
  int per[NOPS];
  memset(per, 0, sizeof per);
  for (int i = 0; i < s->ncases; i++) {
    const int k = op_index(cases_of(s)[i].op);
    if (k < 0) {
      fprintf(stderr, "unknown op '%s' in the manifest\n", cases_of(s)[i].op);
      return -1;
    }
    per[k]++;
  }
  printf("%d scipy cases:", s->ncases);
  for (int k = 0; k < NOPS; k++) printf(" %s %d%s", OPS[k], per[k], k + 1 < NOPS ? "," : "\n");
  return 0;
}

static int group_setup(void **state) {
  return tu_oracle_group_setup(state, "ndf-test-filters", 600, NDF_TEST_PYTHON, NDF_TEST_ORACLE, sizeof(filt_case),
                               parse_line, summary);
}
#define group_teardown tu_oracle_group_teardown

/* ------------------------------------------------------------------------ */
/* Running one case                                                          */

enum { IN_ASIS = 0, IN_STRIDED = 1, IN_FORTRAN = 2 };
enum { OUT_C = 0, OUT_STRIDED = 1 };

static int read_npy(const char *dir, const char *name, ndfio_image *img) {
  char path[700], err[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  ndf_status st = ndfio_npy_read(path, img, err, sizeof err);
  if (st != NDF_OK) {
    fprintf(stderr, "ndfio_npy_read(%s): %s: %s\n", path, ndf_status_name(st), err);
    return -1;
  }
  return 0;
}

/* Calls the op of case c. */
static ndf_status call_case(ndf_ctx *ctx, const filt_case *c, const ndf_array *in, ndf_array *out,
                            const ndf_array *w) {
  ndf_filter_options o;
  ndf_filter_options_init(&o);
  o.cval = c->cval;
  o.batch_dims = c->batch;
  o.naxes = c->naxes;
  for (int i = 0; i < c->naxes; i++) o.axes[i] = (int)c->axes[i];
  if (c->nmodes == 1) o.mode = c->modes[0];
  else {
    o.nmodes = c->nmodes;
    memcpy(o.modes, c->modes, sizeof o.modes);
  }
  o.norigin = c->norigin;
  memcpy(o.origin, c->origin, sizeof o.origin);
  ndf_gaussian_params g;
  ndf_gaussian_params_init(&g);
  g.nsigma = c->nsigma;
  memcpy(g.sigma, c->sigma, sizeof g.sigma);
  g.norder = c->norder;
  for (int i = 0; i < c->norder; i++) g.order[i] = (int)c->order[i];
  g.truncate = c->truncate;
  g.nradius = c->nradius;
  memcpy(g.radius, c->radius, sizeof g.radius);
  const char *op = c->op;
  if (!strcmp(op, "correlate1d") || !strcmp(op, "convolve1d")) {
    const int64_t n = ndf_array_size(w);
    double *wv = malloc((size_t)n * sizeof *wv);
    for (int64_t i = 0; i < n; i++) wv[i] = tu_get(w, i);
    ndf_status s = (op[1] == 'o' && op[2] == 'r' ? ndf_correlate1d : ndf_convolve1d)(ctx, in, out, wv, n, c->axis, &o);
    free(wv);
    return s;
  }
  if (!strcmp(op, "correlate")) return ndf_correlate(ctx, in, out, w, &o);
  if (!strcmp(op, "convolve")) return ndf_convolve(ctx, in, out, w, &o);
  if (!strcmp(op, "uniform_filter1d")) return ndf_uniform_filter1d(ctx, in, out, c->size[0], c->axis, &o);
  if (!strcmp(op, "uniform_filter")) return ndf_uniform_filter(ctx, in, out, c->nsize, c->size, &o);
  if (!strcmp(op, "gaussian_filter1d"))
    return ndf_gaussian_filter1d(ctx, in, out, c->sigma[0], c->axis, (int)c->order[0], c->truncate,
                                 c->nradius ? c->radius[0] : -1, &o);
  if (!strcmp(op, "gaussian_filter")) return ndf_gaussian_filter(ctx, in, out, &g, &o);
  if (!strcmp(op, "sobel")) return ndf_sobel(ctx, in, out, c->axis, &o);
  if (!strcmp(op, "prewitt")) return ndf_prewitt(ctx, in, out, c->axis, &o);
  if (!strcmp(op, "laplace")) return ndf_laplace(ctx, in, out, &o);
  if (!strcmp(op, "gaussian_laplace")) return ndf_gaussian_laplace(ctx, in, out, &g, &o);
  if (!strcmp(op, "gaussian_gradient_magnitude")) return ndf_gaussian_gradient_magnitude(ctx, in, out, &g, &o);
  return NDF_EINTERNAL;
}

/* Elements of got farther from plain scipy's output than the documented tolerance. */
static int64_t tolerance_misses(const ndf_array *exp, const ndf_array *got, const ndf_array *in, double *worst) {
  const int64_t n = ndf_array_size(exp);
  double scale = 0;
  for (int64_t i = 0; i < n; i++) {
    const double a = fabs(tu_get(exp, i)), b = fabs(tu_get(in, i));
    if (isfinite(a) && a > scale) scale = a;
    if (isfinite(b) && b > scale) scale = b;
  }
  /* 64-bit integer outputs: relative to the values (1 ulp of a weight moves a sum near 2^60 by
   * hundreds), their difference taken modulo 2^64 (a sum near 0 may wrap around either way) */
  const int wide = exp->dtype == NDF_INT64 || exp->dtype == NDF_UINT64;
  const double tol = exp->dtype == NDF_FLOAT64 || wide ? fmax(1.0, 1e-13 * scale)
                     : exp->dtype == NDF_FLOAT32 ? 2e-6 * scale : 1.0;
  int64_t miss = 0;
  *worst = 0;
  for (int64_t i = 0; i < n; i++) {
    const double e = tu_get(exp, i), g = tu_get(got, i);
    if (isnan(e) && isnan(g)) continue;
    double d = fabs(e - g);
    if (wide) {
      uint64_t eb, gb;
      memcpy(&eb, tu_elem_ptr(exp, i), 8);
      memcpy(&gb, tu_elem_ptr(got, i), 8);
      const uint64_t u = eb - gb;
      d = (double)(u > ((uint64_t)1 << 63) ? (uint64_t)0 - u : u);
    }
    if (d > *worst) *worst = d;
    if (!(d <= tol)) miss++;
  }
  return miss;
}

static int run_case(filt_state *s, const filt_case *c, int inv, int outv, tu_rng *rng, int verbose, int *tol_cases,
                    int *int_cases) {
  ndfio_image in = {0}, exp = {0}, expnp = {0}, w = {0};
  tu_array in2 = {0}, out = {0};
  int rc = -1;
  char msg[2048] = "";
  if (read_npy(s->dir, c->input, &in) || read_npy(s->dir, c->expected, &exp)) goto done;
  if (c->weights[0] && read_npy(s->dir, c->weights, &w)) goto done;
  if (c->expected_np[0] && read_npy(s->dir, c->expected_np, &expnp)) goto done;
  const ndf_array *input = &in.arr;
  if (inv == IN_STRIDED) {
    if (tu_array_relayout(&in2, &in.arr, TU_LAYOUT_PADDED | (tu_rng_chance(rng, 0.5) ? TU_LAYOUT_NEGATIVE : 0), rng))
      goto done;
    input = &in2.arr;
  } else if (inv == IN_FORTRAN) {
    if (tu_array_relayout(&in2, &in.arr, TU_LAYOUT_FORTRAN, rng)) goto done;
    input = &in2.arr;
  }
  if (tu_array_like(&out, &exp.arr, outv == OUT_STRIDED ? TU_LAYOUT_PADDED : TU_LAYOUT_C, rng)) goto done;
  ndf_status r = call_case(s->ctx, c, input, &out.arr, c->weights[0] ? &w.arr : NULL);
  if (r != NDF_OK) {
    snprintf(msg, sizeof msg, "returned %s: %s", ndf_status_name(r), ndf_errmsg(s->ctx));
    goto done;
  }
  int64_t bad = tu_compare(&exp.arr, &out.arr, msg, sizeof msg);
  if (bad != 0) {
    char head[128];
    snprintf(head, sizeof head, "%lld elements differ from scipy:\n", (long long)bad);
    const size_t hl = strlen(head);
    memmove(msg + hl, msg, sizeof msg - hl - 1);
    memcpy(msg, head, hl);
    msg[sizeof msg - 1] = 0;
    goto done;
  }
  int64_t gap = tu_check_gaps(&out);
  if (gap >= 0) {
    snprintf(msg, sizeof msg, "wrote outside the output's elements (buffer byte %lld)", (long long)gap);
    goto done;
  }
  if (c->expected_np[0]) {
    double worst;
    const int64_t miss = tolerance_misses(&expnp.arr, &out.arr, &in.arr, &worst);
    const int64_t n = ndf_array_size(&exp.arr);
    const int int_out = exp.arr.dtype != NDF_FLOAT32 && exp.arr.dtype != NDF_FLOAT64;
    if (miss > 0 && !int_out) {
      snprintf(msg, sizeof msg, "%lld of %lld elements beyond the tolerance of plain scipy (worst %g)",
               (long long)miss, (long long)n, worst);
      goto done;
    }
    if (worst > 0) (*tol_cases)++;
    if (worst > 0 && int_out) (*int_cases)++;
  }
  rc = 0;
done:
  if (rc != 0 && verbose) printf("FAIL case %d (in %d, out %d): %s\n  %s\n", c->id, inv, outv, c->line, msg);
  ndfio_image_free(&in);
  ndfio_image_free(&exp);
  ndfio_image_free(&expnp);
  ndfio_image_free(&w);
  tu_array_free(&in2);
  tu_array_free(&out);
  return rc;
}

static void run_all(void **state, int inv, int outv) {
  filt_state *s = *state;
  tu_rng rng;
  tu_rng_seed(&rng, s->seed * 31u + (uint64_t)(inv * 3 + outv));
  int failed = 0, tol_cases = 0, int_cases = 0, failed_op[NOPS];
  memset(failed_op, 0, sizeof failed_op);
  for (int i = 0; i < s->ncases; i++)
    if (run_case(s, &cases_of(s)[i], inv, outv, &rng, failed < 12, &tol_cases, &int_cases) != 0) {
      failed++;
      failed_op[op_index(cases_of(s)[i].op)]++;
    }
  if (inv == IN_ASIS && outv == OUT_C)
    printf("%d Gaussian cases differ from plain scipy (NumPy's exp): %d with float outputs within the tolerance, "
           "%d with integer outputs\n", tol_cases, tol_cases - int_cases, int_cases);
  if (failed) {
    s->keep_dir = 1;
    printf("%d of %d scipy cases failed; seed %llu, cases in %s\n  failures per op:", failed, s->ncases,
           (unsigned long long)s->seed, s->dir);
    for (int k = 0; k < NOPS; k++)
      if (failed_op[k]) printf(" %s %d", OPS[k], failed_op[k]);
    printf("\n");
  }
  assert_int_equal(failed, 0);
}

static void test_scipy_cases(void **state) { run_all(state, IN_ASIS, OUT_C); }
static void test_scipy_cases_strided_input(void **state) { run_all(state, IN_STRIDED, OUT_C); }
static void test_scipy_cases_fortran_input(void **state) { run_all(state, IN_FORTRAN, OUT_C); }
static void test_scipy_cases_strided_output(void **state) { run_all(state, IN_ASIS, OUT_STRIDED); }

/* ------------------------------------------------------------------------ */
/* By hand                                                                   */

static ndf_ctx *ctx_of(void **state) { return ((filt_state *)*state)->ctx; }

static void arr1d(tu_array *t, ndf_dtype dt, int n, const double *v) {
  const int64_t shape[1] = {n};
  assert_int_equal(tu_array_alloc(t, dt, 1, shape), 0);
  for (int i = 0; i < n; i++) tu_set(&t->arr, i, v[i]);
}

/* scipy's conversion of a sum to an integer output: truncation, wrap-around,
 * and the most negative int32 (int64 for uint32) out of range (values from
 * scipy 1.10 on x86-64: correlate1d([1.0], weights=[w], output=dtype)). */
static void test_integer_conversion(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  static const double ws[7] = {-3.7, 2.7, -300.5, 300.5, 1e10, -1e10, NAN};
  static const struct {
    ndf_dtype t;
    double want[7];
  } rows[] = {
      {NDF_UINT8, {253, 2, 212, 44, 0, 0, 0}},
      {NDF_INT8, {-3, 2, -44, 44, 0, 0, 0}},
      {NDF_UINT16, {65533, 2, 65236, 300, 0, 0, 0}},
      {NDF_INT16, {-3, 2, -300, 300, 0, 0, 0}},
      {NDF_UINT32, {4294967293.0, 2, 4294966996.0, 300, 1410065408.0, 2884901888.0, 0}},
      {NDF_INT32, {-3, 2, -300, 300, -2147483648.0, -2147483648.0, -2147483648.0}},
  };
  ndf_filter_options o;
  ndf_filter_options_init(&o);
  for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++)
    for (int k = 0; k < 7; k++) {
      tu_array in = {0}, out = {0};
      const double one = 1.0;
      arr1d(&in, NDF_FLOAT64, 1, &one);
      const int64_t shape[1] = {1};
      assert_int_equal(tu_array_alloc(&out, rows[r].t, 1, shape), 0);
      assert_int_equal(ndf_correlate1d(ctx, &in.arr, &out.arr, &ws[k], 1, 0, &o), NDF_OK);
      if (tu_get(&out.arr, 0) != rows[r].want[k])
        fail_msg("%s of %g: got %g, scipy gives %g", ndf_dtype_name(rows[r].t), ws[k], tu_get(&out.arr, 0),
                 rows[r].want[k]);
      tu_array_free(&in);
      tu_array_free(&out);
    }
}

/* gaussian_gradient_magnitude into uint8 / int8: NumPy squares and adds in
 * the dtype (wrapping), then takes np.sqrt in float16 (values from scipy
 * 1.10: [[0, 100, 0], [50, 0, 120]] int8, sigma 0.7). */
static void test_gradient_magnitude_small_ints(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  static const double v[6] = {0, 100, 0, 50, 0, 120};
  static const struct {
    ndf_dtype t;
    double want[6];
  } rows[] = {
      {NDF_INT8, {0, 10, 0, 7, 0, 0}},
      {NDF_UINT8, {10, 10, 11, 3, 13, 11}},
      {NDF_INT16, {25, 10, 34, 7, 26, 41}},
      {NDF_INT32, {25, 10, 34, 7, 26, 41}},
  };
  const int64_t shape[2] = {2, 3};
  ndf_filter_options o;
  ndf_filter_options_init(&o);
  ndf_gaussian_params g;
  ndf_gaussian_params_init(&g);
  g.sigma[0] = 0.7;
  for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
    tu_array in = {0}, out = {0};
    assert_int_equal(tu_array_alloc(&in, rows[r].t, 2, shape), 0);
    assert_int_equal(tu_array_alloc(&out, rows[r].t, 2, shape), 0);
    for (int i = 0; i < 6; i++) tu_set(&in.arr, i, v[i]);
    assert_int_equal(ndf_gaussian_gradient_magnitude(ctx, &in.arr, &out.arr, &g, &o), NDF_OK);
    for (int i = 0; i < 6; i++)
      if (tu_get(&out.arr, i) != rows[r].want[i])
        fail_msg("%s element %d: got %g, scipy gives %g", ndf_dtype_name(rows[r].t), i, tu_get(&out.arr, i),
                 rows[r].want[i]);
    tu_array_free(&in);
    tu_array_free(&out);
  }
}

/* scipy's documented examples. */
static void test_known_values(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  ndf_filter_options o;
  ndf_filter_options_init(&o);
  const double x[8] = {2, 8, 0, 4, 1, 9, 9, 0}, w[2] = {1, 3};
  const double corr[8] = {8, 26, 8, 12, 7, 28, 36, 9}, conv[8] = {14, 24, 4, 13, 12, 36, 27, 0};
  tu_array in = {0}, out = {0};
  arr1d(&in, NDF_INT32, 8, x);
  arr1d(&out, NDF_INT32, 8, x);
  assert_int_equal(ndf_correlate1d(ctx, &in.arr, &out.arr, w, 2, -1, &o), NDF_OK);
  for (int i = 0; i < 8; i++) assert_true(tu_get(&out.arr, i) == corr[i]);
  assert_int_equal(ndf_convolve1d(ctx, &in.arr, &out.arr, w, 2, -1, &o), NDF_OK);
  for (int i = 0; i < 8; i++) assert_true(tu_get(&out.arr, i) == conv[i]);
  tu_array_free(&in);
  tu_array_free(&out);
  /* gaussian_filter1d([1, 2, 3, 4, 5], 1) */
  const double y[5] = {1, 2, 3, 4, 5}, gy[5] = {1.42704095, 2.06782203, 3.0, 3.93217797, 4.57295905};
  arr1d(&in, NDF_FLOAT64, 5, y);
  arr1d(&out, NDF_FLOAT64, 5, y);
  assert_int_equal(ndf_gaussian_filter1d(ctx, &in.arr, &out.arr, 1.0, 0, 0, 4.0, -1, &o), NDF_OK);
  for (int i = 0; i < 5; i++) assert_true(fabs(tu_get(&out.arr, i) - gy[i]) < 1e-8);
  tu_array_free(&in);
  tu_array_free(&out);
  /* gaussian_filter(np.arange(50, step=2).reshape(5, 5), sigma=1) (int64 input in scipy: int32 here) */
  static const double ga[25] = {4, 6, 8, 9, 11, 10, 12, 14, 15, 17, 20, 22, 24, 25, 27, 29, 31, 33, 34, 36, 35, 37,
                                39, 40, 42};
  const int64_t sh[2] = {5, 5};
  assert_int_equal(tu_array_alloc(&in, NDF_INT32, 2, sh), 0);
  assert_int_equal(tu_array_alloc(&out, NDF_INT32, 2, sh), 0);
  for (int i = 0; i < 25; i++) tu_set(&in.arr, i, 2.0 * i);
  ndf_gaussian_params g;
  ndf_gaussian_params_init(&g);
  assert_int_equal(ndf_gaussian_filter(ctx, &in.arr, &out.arr, &g, &o), NDF_OK);
  for (int i = 0; i < 25; i++) assert_true(tu_get(&out.arr, i) == ga[i]);
  tu_array_free(&in);
  tu_array_free(&out);
}

/* Bad arguments: the status, the message, and an untouched output. */
static void expect_error(ndf_ctx *ctx, ndf_status got, const tu_array *out, const char *needle) {
  if (got != NDF_EINVAL) fail_msg("expected NDF_EINVAL with '%s', got %s: %s", needle, ndf_status_name(got), ndf_errmsg(ctx));
  if (!strstr(ndf_errmsg(ctx), needle)) fail_msg("message '%s' lacks '%s'", ndf_errmsg(ctx), needle);
  if (tu_poison_check(out->base, out->bytes) >= 0) fail_msg("the output was written (%s)", needle);
}

static void test_errors(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  const int64_t shape[2] = {4, 5};
  tu_array in = {0}, out = {0}, bad = {0};
  assert_int_equal(tu_array_alloc(&in, NDF_FLOAT32, 2, shape), 0);
  assert_int_equal(tu_array_alloc(&out, NDF_FLOAT32, 2, shape), 0);
  assert_int_equal(tu_array_alloc(&bad, NDF_BOOL, 2, shape), 0);
  tu_poison(out.base, out.bytes);
  ndf_filter_options o;
  ndf_filter_options_init(&o);
  ndf_gaussian_params g;
  ndf_gaussian_params_init(&g);
  const double w3[3] = {1, 2, 1};
  expect_error(ctx, ndf_correlate1d(ctx, &in.arr, &out.arr, w3, 0, 0, &o), &out, "'weights'");
  expect_error(ctx, ndf_correlate1d(ctx, &in.arr, &out.arr, w3, 3, 2, &o), &out, "'axis'");
  o.norigin = 1;
  o.origin[0] = 2;
  expect_error(ctx, ndf_correlate1d(ctx, &in.arr, &out.arr, w3, 3, 0, &o), &out, "'origin'");
  expect_error(ctx, ndf_uniform_filter1d(ctx, &in.arr, &out.arr, 3, 0, &o), &out, "'origin'");
  o.norigin = 0;
  expect_error(ctx, ndf_uniform_filter1d(ctx, &in.arr, &out.arr, 0, 0, &o), &out, "'size'");
  g.sigma[0] = -1;
  expect_error(ctx, ndf_gaussian_filter(ctx, &in.arr, &out.arr, &g, &o), &out, "'sigma'");
  g.sigma[0] = NAN;
  expect_error(ctx, ndf_gaussian_filter(ctx, &in.arr, &out.arr, &g, &o), &out, "'sigma'");
  expect_error(ctx, ndf_gaussian_filter1d(ctx, &in.arr, &out.arr, 0.0, 0, 0, 4.0, -1, &o), &out, "'sigma'");
  g.sigma[0] = 1;
  g.norder = 1;
  g.order[0] = 9;
  expect_error(ctx, ndf_gaussian_filter(ctx, &in.arr, &out.arr, &g, &o), &out, "'order'");
  g.order[0] = 1;
  expect_error(ctx, ndf_gaussian_laplace(ctx, &in.arr, &out.arr, &g, &o), &out, "'order'");
  g.norder = 0;
  g.nradius = 1;
  g.radius[0] = -2;
  expect_error(ctx, ndf_gaussian_filter(ctx, &in.arr, &out.arr, &g, &o), &out, "'radius'");
  g.nradius = 0;
  expect_error(ctx, ndf_gaussian_filter1d(ctx, &in.arr, &out.arr, 1.0, 0, 0, -3.0, -1, &o), &out, "'radius'");
  g.nsigma = 3;
  expect_error(ctx, ndf_gaussian_filter(ctx, &in.arr, &out.arr, &g, &o), &out, "'sigma'");
  g.nsigma = 1;
  o.naxes = 2;
  o.axes[0] = 1;
  o.axes[1] = -1;
  expect_error(ctx, ndf_gaussian_filter(ctx, &in.arr, &out.arr, &g, &o), &out, "twice");
  o.axes[1] = 5;
  expect_error(ctx, ndf_laplace(ctx, &in.arr, &out.arr, &o), &out, "'axes'");
  o.naxes = 0;
  o.batch_dims = 1;
  expect_error(ctx, ndf_sobel(ctx, &in.arr, &out.arr, 0, &o), &out, "batch");
  o.batch_dims = 2;
  expect_error(ctx, ndf_laplace(ctx, &in.arr, &out.arr, &o), &out, "'batch_dims'");
  o.batch_dims = 0;
  o.nmodes = 3;
  expect_error(ctx, ndf_laplace(ctx, &in.arr, &out.arr, &o), &out, "'modes'");
  o.nmodes = 0;
  o.mode = (ndf_mode)17;
  expect_error(ctx, ndf_laplace(ctx, &in.arr, &out.arr, &o), &out, "'mode'");
  o.mode = NDF_MODE_REFLECT;
  ndf_array unknown = bad.arr;
  unknown.dtype = NDF_DTYPE_COUNT;
  expect_error(ctx, ndf_laplace(ctx, &unknown, &out.arr, &o), &out, "'input'");
  /* bool: an input reads as 0 and 1; a bool output of a sum of terms is refused (ndforge.h) */
  expect_error(ctx, ndf_laplace(ctx, &in.arr, &bad.arr, &o), &out, "'output'");
  expect_error(ctx, ndf_gaussian_laplace(ctx, &in.arr, &bad.arr, &g, &o), &out, "dtype bool");
  expect_error(ctx, ndf_gaussian_gradient_magnitude(ctx, &in.arr, &bad.arr, &g, &o), &out, "dtype bool");
  expect_error(ctx, ndf_laplace(ctx, &in.arr, &in.arr, &o), &out, "overlaps");
  /* correlate: weights of the wrong rank, an empty extent, a bad origin */
  const int64_t ws1[1] = {3}, ws2[2] = {3, 0}, ws3[2] = {2, 3};
  tu_array w1 = {0}, w2 = {0}, w3a = {0};
  assert_int_equal(tu_array_alloc(&w1, NDF_FLOAT64, 1, ws1), 0);
  assert_int_equal(tu_array_alloc(&w2, NDF_FLOAT64, 2, ws2), 0);
  assert_int_equal(tu_array_alloc(&w3a, NDF_FLOAT64, 2, ws3), 0);
  expect_error(ctx, ndf_correlate(ctx, &in.arr, &out.arr, &w1.arr, &o), &out, "rank 1");
  expect_error(ctx, ndf_correlate(ctx, &in.arr, &out.arr, &w2.arr, &o), &out, "at least 1");
  o.norigin = 2;
  o.origin[0] = 1;
  o.origin[1] = 0;
  expect_error(ctx, ndf_correlate(ctx, &in.arr, &out.arr, &w3a.arr, &o), &out, "'origin'");
  o.origin[0] = -1; /* convolve: -(-1) - 1 = 0 is fine for 2 taps */
  assert_int_equal(ndf_convolve(ctx, &in.arr, &out.arr, &w3a.arr, &o), NDF_OK);
  tu_array_free(&w1);
  tu_array_free(&w2);
  tu_array_free(&w3a);
  tu_array_free(&in);
  tu_array_free(&out);
  tu_array_free(&bad);
}

/* NaN: every 1-D pass spreads it over its kernel's reach (0 * NaN is NaN);
 * correlate leaves taps of |weight| <= DBL_EPSILON out, as scipy. */
static void test_nan(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  const double x[5] = {1, 2, NAN, 4, 5};
  tu_array in = {0}, out = {0};
  arr1d(&in, NDF_FLOAT64, 5, x);
  arr1d(&out, NDF_FLOAT64, 5, x);
  ndf_filter_options o;
  ndf_filter_options_init(&o);
  const double w[3] = {1, 0, 0};
  assert_int_equal(ndf_correlate1d(ctx, &in.arr, &out.arr, w, 3, 0, &o), NDF_OK);
  assert_true(isnan(tu_get(&out.arr, 1)) && isnan(tu_get(&out.arr, 2)) && isnan(tu_get(&out.arr, 3)));
  assert_true(tu_get(&out.arr, 0) == 1.0 && tu_get(&out.arr, 4) == 4.0);
  const int64_t ws[1] = {3};
  tu_array wa = {0};
  assert_int_equal(tu_array_alloc(&wa, NDF_FLOAT64, 1, ws), 0);
  tu_set(&wa.arr, 0, 1.0);
  assert_int_equal(ndf_correlate(ctx, &in.arr, &out.arr, &wa.arr, &o), NDF_OK);
  assert_true(tu_get(&out.arr, 1) == 1.0 && isnan(tu_get(&out.arr, 3)) && !isnan(tu_get(&out.arr, 2)));
  tu_array_free(&wa);
  tu_array_free(&in);
  tu_array_free(&out);
}

/* correlate with the last weights zero along the last axis: those taps are left out, so
 * every kept tap lies to the left (offset -4), and no point of a row may be written past
 * the row's end (the output's rows are 12 of 16 poisoned elements). */
static void test_correlate_left_taps(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  const int64_t sh[2] = {3, 12}, osh[2] = {3, 16}, wsh[2] = {1, 9};
  tu_array in = {0}, out = {0}, wa = {0};
  assert_int_equal(tu_array_alloc(&in, NDF_FLOAT64, 2, sh), 0);
  assert_int_equal(tu_array_alloc(&out, NDF_FLOAT64, 2, osh), 0);
  assert_int_equal(tu_array_alloc(&wa, NDF_FLOAT64, 2, wsh), 0);
  for (int i = 0; i < 36; i++) tu_set(&in.arr, i, (double)(i * 7 % 11));
  tu_set(&wa.arr, 0, 2.0);
  tu_poison(out.base, out.bytes);
  out.arr.shape[1] = 12;
  ndf_filter_options o;
  ndf_filter_options_init(&o);
  assert_int_equal(ndf_correlate(ctx, &in.arr, &out.arr, &wa.arr, &o), NDF_OK);
  for (int r = 0; r < 3; r++) {
    const double *row = (const double *)out.arr.data + 16 * r;
    for (int x = 0; x < 12; x++) {
      const int m = x - 4 < 0 ? 3 - x : x - 4; /* reflect */
      assert_true(row[x] == 2.0 * tu_get(&in.arr, 12 * r + m));
    }
  }
  if (tu_check_gaps(&out) >= 0) fail_msg("a row was written past its end");
  tu_array_free(&wa);
  tu_array_free(&in);
  tu_array_free(&out);
}

/* An empty input is a no-op, after the arguments are checked. */
static void test_empty(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  const int64_t shape[2] = {0, 5};
  tu_array in = {0}, out = {0};
  assert_int_equal(tu_array_alloc(&in, NDF_UINT8, 2, shape), 0);
  assert_int_equal(tu_array_alloc(&out, NDF_FLOAT32, 2, shape), 0);
  ndf_filter_options o;
  ndf_filter_options_init(&o);
  ndf_gaussian_params g;
  ndf_gaussian_params_init(&g);
  assert_int_equal(ndf_gaussian_filter(ctx, &in.arr, &out.arr, &g, &o), NDF_OK);
  assert_int_equal(ndf_gaussian_gradient_magnitude(ctx, &in.arr, &out.arr, &g, &o), NDF_OK);
  g.sigma[0] = -1;
  assert_int_equal(ndf_gaussian_filter(ctx, &in.arr, &out.arr, &g, &o), NDF_EINVAL);
  tu_array_free(&in);
  tu_array_free(&out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_scipy_cases),
      cmocka_unit_test(test_scipy_cases_strided_input),
      cmocka_unit_test(test_scipy_cases_fortran_input),
      cmocka_unit_test(test_scipy_cases_strided_output),
      cmocka_unit_test(test_integer_conversion),
      cmocka_unit_test(test_gradient_magnitude_small_ints),
      cmocka_unit_test(test_known_values),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_nan),
      cmocka_unit_test(test_correlate_left_taps),
      cmocka_unit_test(test_empty),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
