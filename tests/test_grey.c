/*
 * test_grey.c -- the CPU backend of the eight grey ops (grey_erosion,
 * grey_dilation and the composites grey_opening, grey_closing,
 * morphological_gradient, morphological_laplace, white_tophat, black_tophat)
 * against scipy.ndimage itself, plus ndforge's defined policies where scipy
 * has none, and properties of the composites (wraparound, float32 rounding,
 * idempotence, bounds, the tophat identities).
 *
 * The scipy part runs tests/oracle_grey.py with a fresh seed per run (printed;
 * NDF_TEST_SEED repeats a run, NDF_TEST_CASES sets the number of cases), reads
 * the cases it wrote and requires ndforge's output to equal scipy's bit for
 * bit, with the input as written, in Fortran order, embedded in a larger buffer
 * with permuted / padded / negative strides, and with strided outputs (whose
 * gaps must keep their poison).  The oracle's directory is kept when a case
 * fails, and its path printed.
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ndfio.h"
#include "ndforge.h"
#include "testutil.h"

#ifndef NDF_TEST_PYTHON
#error "NDF_TEST_PYTHON (a python3 with numpy and scipy) must be defined by the build"
#endif
#ifndef NDF_TEST_ORACLE
#error "NDF_TEST_ORACLE (path of tests/oracle_grey.py) must be defined by the build"
#endif

/* ------------------------------------------------------------------------ */
/* Cases written by the oracle                                               */

typedef struct grey_case {
  char line[1024]; /* the manifest line, for messages */
  int id;
  int op; /* TU_OP_* */
  char dtype[16];
  int ndim;
  int64_t shape[NDF_MAX_NDIM];
  int batch;
  char mode[32];
  double cval;
  int nsize;
  int64_t size[NDF_MAX_SPATIAL];
  int norigin;
  int64_t origin[NDF_MAX_SPATIAL];
  char footprint[64], structure[64], input[64], expected[64];
} grey_case;

typedef tu_oracle_group grey_state; /* cases: grey_case records */
static grey_case *cases_of(const grey_state *s) { return s->cases; }

static int parse_case(const char *line, grey_case *c) {
  memset(c, 0, sizeof *c);
  c->op = TU_OP_EROSION; /* a manifest line without op= is an erosion */
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
    else if (!strcmp(k, "op")) {
      c->op = tu_op_from_name(v);
      if (c->op < 0) {
        fprintf(stderr, "unknown op '%s' in the manifest\n", v);
        return -1;
      }
    }
    else if (!strcmp(k, "dtype")) snprintf(c->dtype, sizeof c->dtype, "%s", v);
    else if (!strcmp(k, "shape")) c->ndim = tu_parse_i64s(v, c->shape, NDF_MAX_NDIM);
    else if (!strcmp(k, "batch")) c->batch = atoi(v);
    else if (!strcmp(k, "mode")) snprintf(c->mode, sizeof c->mode, "%s", v);
    else if (!strcmp(k, "cval")) c->cval = strtod(v, NULL);
    else if (!strcmp(k, "size")) c->nsize = tu_parse_i64s(v, c->size, NDF_MAX_SPATIAL);
    else if (!strcmp(k, "origin")) c->norigin = tu_parse_i64s(v, c->origin, NDF_MAX_SPATIAL);
    else if (!strcmp(k, "footprint")) snprintf(c->footprint, sizeof c->footprint, "%s", v);
    else if (!strcmp(k, "structure")) snprintf(c->structure, sizeof c->structure, "%s", v);
    else if (!strcmp(k, "input")) snprintf(c->input, sizeof c->input, "%s", v);
    else if (!strcmp(k, "expected")) snprintf(c->expected, sizeof c->expected, "%s", v);
    /* kind= and unknown keys are informational */
  }
  return c->input[0] && c->expected[0] && c->ndim > 0 ? 0 : -1;
}


static int parse_line(const char *line, void *c) { return parse_case(line, c); }

static int summary(const grey_state *s) {
  int per_op[TU_OP_COUNT] = {0};
  for (int i = 0; i < s->ncases; i++) per_op[cases_of(s)[i].op]++;
  printf("%d scipy cases:", s->ncases);
  for (int k = 0; k < TU_OP_COUNT; k++) printf(" %s %d%s", tu_op_name(k), per_op[k], k + 1 < TU_OP_COUNT ? "," : "\n");
  return 0;
}

static int group_setup(void **state) {
  return tu_oracle_group_setup(state, "ndf-test-grey", 1000, NDF_TEST_PYTHON, NDF_TEST_ORACLE, sizeof(grey_case), parse_line, summary);
}
#define group_teardown tu_oracle_group_teardown

/* ------------------------------------------------------------------------ */
/* Running one case                                                          */

enum { IN_ASIS, IN_STRIDED, IN_FORTRAN };
enum { OUT_C, OUT_STRIDED, OUT_FORTRAN };

static const char *variant_name(int inv, int outv) {
  static char buf[64];
  static const char *in_names[] = {"input as read", "strided input", "Fortran input"};
  static const char *out_names[] = {"C output", "strided output", "Fortran output"};
  snprintf(buf, sizeof buf, "%s, %s", in_names[inv], out_names[outv]);
  return buf;
}

static int read_npy(const grey_state *s, const char *name, ndfio_image *img) {
  char path[700], err[512];
  snprintf(path, sizeof path, "%s/%s", s->dir, name);
  ndf_status st = ndfio_npy_read(path, img, err, sizeof err);
  if (st != NDF_OK) {
    fprintf(stderr, "ndfio_npy_read(%s): %s: %s\n", path, ndf_status_name(st), err);
    return -1;
  }
  return 0;
}

/* Returns 0 when the case passes; prints what went wrong otherwise. */
/* 1 when a case's element is a flat box (size, or a footprint without zeros, no structure). */
static int case_is_box(const grey_case *c, const ndfio_image *fp) {
  if (c->structure[0]) return 0;
  if (!c->footprint[0]) return 1;
  for (int64_t i = 0; i < ndf_array_size(&fp->arr); i++)
    if (tu_get(&fp->arr, i) == 0) return 0;
  return 1;
}

/* Runs one case with one algorithm.  An algorithm that is not exact for the
 * element must be refused with NDF_EINVAL (box-only ones exactly when the
 * element is no box); *skipped is then set and the output checked untouched. */
static int run_case(grey_state *s, const grey_case *c, int inv, int outv, tu_rng *rng, int verbose,
                    ndf_grey_algorithm algo, int *skipped) {
  ndfio_image in = {0}, exp = {0}, fp = {0}, st = {0};
  tu_array in2 = {0}, out = {0};
  int rc = -1;
  char msg[2048] = "";
  if (read_npy(s, c->input, &in) || read_npy(s, c->expected, &exp)) goto done;
  if (c->footprint[0] && read_npy(s, c->footprint, &fp)) goto done;
  if (c->structure[0] && read_npy(s, c->structure, &st)) goto done;

  const ndf_array *input = &in.arr;
  if (inv == IN_STRIDED) {
    if (tu_array_relayout(&in2, &in.arr, TU_LAYOUT_PADDED | (tu_rng_chance(rng, 0.5) ? TU_LAYOUT_NEGATIVE : 0), rng))
      goto done;
    input = &in2.arr;
  } else if (inv == IN_FORTRAN) {
    if (tu_array_relayout(&in2, &in.arr, TU_LAYOUT_FORTRAN, rng)) goto done;
    input = &in2.arr;
  }
  int layout = outv == OUT_STRIDED ? TU_LAYOUT_PADDED : outv == OUT_FORTRAN ? TU_LAYOUT_FORTRAN : TU_LAYOUT_C;
  if (tu_array_like(&out, &in.arr, layout, rng)) goto done;

  ndf_grey_options o;
  ndf_grey_options_init(&o);
  o.nsize = c->nsize;
  for (int i = 0; i < c->nsize; i++) o.size[i] = c->size[i];
  o.norigin = c->norigin;
  for (int i = 0; i < c->norigin; i++) o.origin[i] = c->origin[i];
  o.footprint = c->footprint[0] ? &fp.arr : NULL;
  o.structure = c->structure[0] ? &st.arr : NULL;
  o.cval = c->cval;
  o.batch_dims = c->batch;
  o.algorithm = algo;
  *skipped = 0;
  if (algo == NDF_GREY_DIRECT) { /* every tap of every voxel: skip the costly cases (the size= ones) */
    const ndf_array *el = o.footprint ? o.footprint : o.structure;
    const int nsp = in.arr.ndim - c->batch;
    double work = (double)ndf_array_size(&in.arr);
    for (int d = 0; d < nsp; d++) work *= el ? (double)el->shape[d] : (double)o.size[o.nsize == 1 ? 0 : d];
    if (work > 2e5) {
      *skipped = 1;
      rc = 0;
      goto done;
    }
  }
  if (ndf_mode_from_name(c->mode, &o.mode) != NDF_OK) {
    snprintf(msg, sizeof msg, "ndf_mode_from_name(\"%s\") failed", c->mode);
    goto done;
  }
  ndf_dtype want;
  if (ndf_dtype_from_name(c->dtype, &want) != NDF_OK || want != in.arr.dtype) {
    snprintf(msg, sizeof msg, "dtype of the input file is not %s", c->dtype);
    goto done;
  }
  ndf_status r = tu_op_call(s->ctx, c->op, input, &out.arr, &o);
  const int box = case_is_box(c, &fp);
  if ((algo == NDF_GREY_SEPARABLE || algo == NDF_GREY_VHGW) && box != (r == NDF_OK)) {
    snprintf(msg, sizeof msg, "algorithm %s on %s element returned %s: %s", ndf_grey_algorithm_name(algo),
             box ? "a box" : "a non-box", ndf_status_name(r), ndf_errmsg(s->ctx));
    goto done;
  }
  if (r == NDF_EINVAL && algo != NDF_GREY_AUTO && algo != NDF_GREY_DIRECT &&
      strstr(ndf_errmsg(s->ctx), "bad argument 'algorithm'")) {
    *skipped = 1;
    if (tu_poison_check(out.base, out.bytes) >= 0) {
      snprintf(msg, sizeof msg, "algorithm %s refused, but wrote the output", ndf_grey_algorithm_name(algo));
      goto done;
    }
    rc = 0;
    goto done;
  }
  if (r != NDF_OK) {
    snprintf(msg, sizeof msg, "returned %s: %s", ndf_status_name(r), ndf_errmsg(s->ctx));
    goto done;
  }
  int64_t bad = tu_compare(&exp.arr, &out.arr, msg, sizeof msg);
  if (bad != 0) {
    char head[128];
    snprintf(head, sizeof head, "%lld elements differ from scipy:\n", (long long)bad);
    size_t hl = strlen(head);
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
  rc = 0;
done:
  if (rc != 0 && verbose) {
    printf("FAIL case %d (%s, algorithm %s): %s\n  %s\n", c->id, variant_name(inv, outv),
           ndf_grey_algorithm_name(algo), c->line, msg);
  }
  ndfio_image_free(&in);
  ndfio_image_free(&exp);
  ndfio_image_free(&fp);
  ndfio_image_free(&st);
  tu_array_free(&in2);
  tu_array_free(&out);
  return rc;
}

/* Runs every case with the default algorithm, and with all_algos every
 * other algorithm too (those not exact for a case must refuse it). */
static void run_all_algos(void **state, int inv, int outv, int all_algos) {
  grey_state *s = *state;
  tu_rng rng;
  tu_rng_seed(&rng, s->seed * 31u + (uint64_t)(inv * 3 + outv));
  int failed = 0, failed_op[TU_OP_COUNT] = {0}, ran[NDF_GREY_ALGORITHM_COUNT] = {0};
  const clock_t t0 = clock();
  for (int a = 0; a < (all_algos ? NDF_GREY_ALGORITHM_COUNT : 1); a++)
    for (int i = 0; i < s->ncases; i++) {
      int skipped = 0;
      if (run_case(s, &cases_of(s)[i], inv, outv, &rng, failed < 12, (ndf_grey_algorithm)a, &skipped) != 0) {
        failed++;
        failed_op[cases_of(s)[i].op]++;
      }
      ran[a] += !skipped;
    }
  if (all_algos) {
    printf("cases run per algorithm (%s, %.1f s CPU):", variant_name(inv, outv), (double)(clock() - t0) / CLOCKS_PER_SEC);
    for (int a = 0; a < NDF_GREY_ALGORITHM_COUNT; a++) printf(" %s %d", ndf_grey_algorithm_name((ndf_grey_algorithm)a), ran[a]);
    printf("\n");
    /* Every algorithm must have met cases it is exact for. */
    if (s->ncases >= 200)
      for (int a = 0; a < NDF_GREY_ALGORITHM_COUNT; a++) assert_true(ran[a] > 0);
  }
  if (failed) {
    s->keep_dir = 1;
    printf("%d of %d scipy cases failed (%s); seed %llu, cases in %s\n  failures per op:", failed, s->ncases,
           variant_name(inv, outv), (unsigned long long)s->seed, s->dir);
    for (int k = 0; k < TU_OP_COUNT; k++) printf(" %s %d", tu_op_name(k), failed_op[k]);
    printf("\n");
  }
  assert_int_equal(failed, 0);
}

static void run_all(void **state, int inv, int outv) { run_all_algos(state, inv, outv, 0); }

static void test_scipy_cases(void **state) { run_all_algos(state, IN_ASIS, OUT_C, 1); }
static void test_scipy_cases_strided_input(void **state) { run_all(state, IN_STRIDED, OUT_C); }
static void test_scipy_cases_fortran_input(void **state) { run_all(state, IN_FORTRAN, OUT_C); }
static void test_scipy_cases_strided_output(void **state) { run_all(state, IN_ASIS, OUT_STRIDED); }
static void test_scipy_cases_fortran_both(void **state) { run_all(state, IN_FORTRAN, OUT_FORTRAN); }

/* ------------------------------------------------------------------------ */
/* Hand-written cases                                                        */

static ndf_ctx *ctx_of(void **state) { return ((grey_state *)*state)->ctx; }

/* A 1-D host array from a list of doubles. */
static void arr1d(tu_array *t, ndf_dtype dt, int n, const double *v) {
  int64_t sh[1] = {n};
  assert_int_equal(tu_array_alloc(t, dt, 1, sh), 0);
  for (int i = 0; i < n; i++) tu_set(&t->arr, i, v[i]);
}

static void expect_1d(const tu_array *t, int n, const double *v, const char *what) {
  for (int i = 0; i < n; i++) {
    double g = tu_get(&t->arr, i);
    if (!(g == v[i] || (isnan(g) && isnan(v[i])))) {
      printf("%s: element %d expected %g got %g\n", what, i, v[i], g);
      fail();
    }
  }
}

static ndf_status grey(ndf_ctx *ctx, int dilation, const ndf_array *in, ndf_array *out,
                       const ndf_grey_options *o) {
  return dilation ? ndf_grey_dilation(ctx, in, out, o) : ndf_grey_erosion(ctx, in, out, o);
}

/* §1.3 of the research notes: dilation reflects the footprint, negates origin
 * and subtracts 1 more on even axes (values checked against scipy 1.10). */
static void test_dilation_reflects_footprint_and_origin(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  static const double a8[] = {0, 0, 0, 9, 0, 0, 0, 0}, b8[] = {9, 9, 9, 0, 9, 9, 9, 9};
  static const double a6[] = {0, 0, 0, 9, 0, 0}, b6[] = {9, 9, 9, 0, 9, 9};
  static const double fp110[] = {1, 1, 0};
  struct {
    int dilation, n;
    const double *in;
    int fp, size, norigin, origin;
    double want[8];
  } cases[] = {
      {1, 8, a8, 1, 0, 0, 0, {0, 0, 9, 9, 0, 0, 0, 0}},
      {0, 8, b8, 1, 0, 0, 0, {9, 9, 9, 0, 0, 9, 9, 9}},
      {1, 6, a6, 0, 2, 0, 0, {0, 0, 9, 9, 0, 0}},
      {1, 6, a6, 0, 2, 1, -1, {0, 0, 0, 9, 9, 0}},
      {0, 6, b6, 0, 2, 0, 0, {9, 9, 9, 0, 0, 9}},
      {0, 6, b6, 0, 2, 1, -1, {9, 9, 0, 0, 9, 9}},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    for (int dt = NDF_UINT8; dt <= NDF_FLOAT64; dt++) {
      tu_array in, out, fp;
      arr1d(&in, (ndf_dtype)dt, cases[k].n, cases[k].in);
      arr1d(&out, (ndf_dtype)dt, cases[k].n, cases[k].in);
      arr1d(&fp, NDF_BOOL, 3, fp110);
      ndf_grey_options o;
      ndf_grey_options_init(&o);
      if (cases[k].fp) o.footprint = &fp.arr;
      if (cases[k].size) {
        o.nsize = 1;
        o.size[0] = cases[k].size;
      }
      o.norigin = cases[k].norigin;
      o.origin[0] = cases[k].origin;
      ndf_status r = grey(ctx, cases[k].dilation, &in.arr, &out.arr, &o);
      if (r != NDF_OK) printf("case %zu dtype %d: %s\n", k, dt, ndf_errmsg(ctx));
      assert_int_equal(r, NDF_OK);
      char what[64];
      snprintf(what, sizeof what, "case %zu dtype %s", k, ndf_dtype_name((ndf_dtype)dt));
      expect_1d(&out, cases[k].n, cases[k].want, what);
      tu_array_free(&in);
      tu_array_free(&out);
      tu_array_free(&fp);
    }
  }
}

/* mirror on an axis of length 1 behaves as nearest (scipy special-cases it),
 * in the separable path and in the footprint path. */
static void test_mirror_length_one_is_nearest(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  int64_t sh[2] = {1, 7};
  tu_array in, a, b, fp;
  assert_int_equal(tu_array_alloc(&in, NDF_FLOAT32, 2, sh), 0);
  static const double v[] = {5, 1, 7, 3, 2, 8, 4};
  for (int i = 0; i < 7; i++) tu_set(&in.arr, i, v[i]);
  assert_int_equal(tu_array_alloc(&a, NDF_FLOAT32, 2, sh), 0);
  assert_int_equal(tu_array_alloc(&b, NDF_FLOAT32, 2, sh), 0);
  int64_t fsh[2] = {3, 3};
  assert_int_equal(tu_array_alloc(&fp, NDF_UINT8, 2, fsh), 0);
  static const double fv[] = {1, 0, 1, 0, 1, 0, 1, 0, 0};
  for (int i = 0; i < 9; i++) tu_set(&fp.arr, i, fv[i]);
  for (int use_fp = 0; use_fp < 2; use_fp++) {
    for (int op = 0; op < TU_OP_COUNT; op++) {
      ndf_grey_options o;
      ndf_grey_options_init(&o);
      if (use_fp) o.footprint = &fp.arr;
      else {
        o.nsize = 2;
        o.size[0] = 3;
        o.size[1] = 3;
      }
      o.mode = NDF_MODE_MIRROR;
      assert_int_equal(tu_op_call(ctx, op, &in.arr, &a.arr, &o), NDF_OK);
      o.mode = NDF_MODE_NEAREST;
      assert_int_equal(tu_op_call(ctx, op, &in.arr, &b.arr, &o), NDF_OK);
      char msg[1024];
      int64_t bad = tu_compare(&b.arr, &a.arr, msg, sizeof msg);
      if (bad) printf("mirror != nearest (footprint %d, %s):\n%s", use_fp, tu_op_name(op), msg);
      assert_int_equal(bad, 0);
    }
  }
  /* Known values (scipy 1.10): dilation with the footprint above. */
  ndf_grey_options o;
  ndf_grey_options_init(&o);
  o.footprint = &fp.arr;
  o.mode = NDF_MODE_MIRROR;
  assert_int_equal(ndf_grey_dilation(ctx, &in.arr, &a.arr, &o), NDF_OK);
  static const double want[] = {5, 7, 7, 7, 8, 8, 8};
  tu_array flat = a;
  flat.arr.ndim = 1;
  flat.arr.shape[0] = 7;
  flat.arr.strides[0] = 1;
  expect_1d(&flat, 7, want, "mirror n=1 dilation");
  tu_array_free(&in);
  tu_array_free(&a);
  tu_array_free(&b);
  tu_array_free(&fp);
}

/* Rule (d): with a box element, an axis of size 1 ignores its origin (scipy's
 * separable path skips that axis). */
static void test_size_one_axis_ignores_origin(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  int64_t sh[2] = {4, 9};
  tu_array in, a, b, fp;
  tu_rng rng;
  tu_rng_seed(&rng, 12345);
  assert_int_equal(tu_array_alloc(&in, NDF_INT16, 2, sh), 0);
  for (int i = 0; i < 36; i++) tu_set(&in.arr, i, (double)tu_rng_int(&rng, -1000, 1000));
  assert_int_equal(tu_array_alloc(&a, NDF_INT16, 2, sh), 0);
  assert_int_equal(tu_array_alloc(&b, NDF_INT16, 2, sh), 0);
  int64_t fsh[2] = {1, 3};
  assert_int_equal(tu_array_alloc(&fp, NDF_BOOL, 2, fsh), 0);
  for (int i = 0; i < 3; i++) tu_set(&fp.arr, i, 1);
  for (int op = 0; op < TU_OP_COUNT; op++) {
    for (int use_fp = 0; use_fp < 2; use_fp++) {
      for (int64_t o0 = -2; o0 <= 2; o0++) {
        ndf_grey_options o;
        ndf_grey_options_init(&o);
        if (use_fp) o.footprint = &fp.arr;
        else {
          o.nsize = 2;
          o.size[0] = 1;
          o.size[1] = 3;
        }
        o.norigin = 2;
        o.origin[0] = 0;
        o.origin[1] = 1;
        assert_int_equal(tu_op_call(ctx, op, &in.arr, &b.arr, &o), NDF_OK);
        o.origin[0] = o0;
        ndf_status r = tu_op_call(ctx, op, &in.arr, &a.arr, &o);
        if (r != NDF_OK)
          printf("%s: origin (%lld,1) on a size-1 axis of a box (%s) rejected: %s\n", tu_op_name(op), (long long)o0,
                 use_fp ? "footprint of ones" : "size", ndf_errmsg(ctx));
        assert_int_equal(r, NDF_OK);
        char msg[1024];
        int64_t bad = tu_compare(&b.arr, &a.arr, msg, sizeof msg);
        if (bad) printf("%s: origin[0]=%lld changed the result:\n%s", tu_op_name(op), (long long)o0, msg);
        assert_int_equal(bad, 0);
      }
    }
  }
  /* A scalar origin applies to every axis; the size-1 axis ignores it. */
  ndf_grey_options o;
  ndf_grey_options_init(&o);
  o.nsize = 2;
  o.size[0] = 1;
  o.size[1] = 3;
  o.norigin = 1;
  o.origin[0] = 1;
  assert_int_equal(ndf_grey_erosion(ctx, &in.arr, &a.arr, &o), NDF_OK);
  o.norigin = 2;
  o.origin[0] = 0;
  o.origin[1] = 1;
  assert_int_equal(ndf_grey_erosion(ctx, &in.arr, &b.arr, &o), NDF_OK);
  assert_int_equal(tu_compare(&b.arr, &a.arr, NULL, 0), 0);
  tu_array_free(&in);
  tu_array_free(&a);
  tu_array_free(&b);
  tu_array_free(&fp);
}

/* size, an all-ones footprint and an all-zero structure are the same flat box. */
static void test_size_footprint_structure_agree(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  tu_rng rng;
  tu_rng_seed(&rng, ((grey_state *)*state)->seed + 7);
  for (int iter = 0; iter < 120; iter++) {
    ndf_dtype dt = (ndf_dtype)tu_rng_int(&rng, NDF_UINT8, NDF_FLOAT64);
    int nd = (int)tu_rng_int(&rng, 1, 3);
    int64_t sh[3], es[3];
    for (int i = 0; i < nd; i++) {
      sh[i] = tu_rng_int(&rng, 1, 11);
      es[i] = tu_rng_int(&rng, 2, 5);
    }
    tu_array in, a, b, c, fp, st;
    assert_int_equal(tu_array_alloc(&in, dt, nd, sh), 0);
    double lo, hi;
    tu_int_range(dt, &lo, &hi);
    int64_t n = ndf_array_size(&in.arr);
    for (int64_t i = 0; i < n; i++)
      tu_set(&in.arr, i, tu_is_float(dt) ? tu_rng_normal(&rng) * 100 : (double)tu_rng_int(&rng, (int64_t)lo, (int64_t)hi));
    assert_int_equal(tu_array_alloc(&a, dt, nd, sh), 0);
    assert_int_equal(tu_array_alloc(&b, dt, nd, sh), 0);
    assert_int_equal(tu_array_alloc(&c, dt, nd, sh), 0);
    assert_int_equal(tu_array_alloc(&fp, NDF_BOOL, nd, es), 0);
    assert_int_equal(tu_array_alloc(&st, NDF_FLOAT64, nd, es), 0);
    for (int64_t i = 0; i < ndf_array_size(&fp.arr); i++) tu_set(&fp.arr, i, 1);
    ndf_grey_options o;
    ndf_grey_options_init(&o);
    o.mode = (ndf_mode)tu_rng_int(&rng, 0, NDF_MODE_COUNT - 1);
    if (!tu_is_float(dt)) o.cval = (double)tu_rng_int(&rng, (int64_t)lo, (int64_t)hi);
    else o.cval = tu_rng_normal(&rng) * 100;
    o.norigin = nd;
    for (int i = 0; i < nd; i++) o.origin[i] = tu_rng_int(&rng, -(es[i] / 2), (es[i] - 1) / 2);
    int op = (int)tu_rng_int(&rng, 0, TU_OP_COUNT - 1);
    o.nsize = nd;
    for (int i = 0; i < nd; i++) o.size[i] = es[i];
    assert_int_equal(tu_op_call(ctx, op, &in.arr, &a.arr, &o), NDF_OK);
    o.nsize = 0;
    o.footprint = &fp.arr;
    assert_int_equal(tu_op_call(ctx, op, &in.arr, &b.arr, &o), NDF_OK);
    o.footprint = NULL;
    o.structure = &st.arr;
    assert_int_equal(tu_op_call(ctx, op, &in.arr, &c.arr, &o), NDF_OK);
    char msg[1024];
    int64_t bad1 = tu_compare(&a.arr, &b.arr, msg, sizeof msg);
    if (bad1) printf("%s: size vs footprint (iter %d):\n%s", tu_op_name(op), iter, msg);
    int64_t bad2 = tu_compare(&a.arr, &c.arr, msg, sizeof msg);
    if (bad2) printf("%s: size vs flat structure (iter %d):\n%s", tu_op_name(op), iter, msg);
    assert_int_equal(bad1 + bad2, 0);
    tu_array_free(&in);
    tu_array_free(&a);
    tu_array_free(&b);
    tu_array_free(&c);
    tu_array_free(&fp);
    tu_array_free(&st);
  }
}

/* Random element for the policy tests: box, footprint or integer structure. */
typedef struct rand_elem {
  tu_elem el;
  uint8_t fpv[512];
  double stv[512];
  tu_array fp, st;
  ndf_grey_options o;
} rand_elem;

static void draw_elem(rand_elem *e, tu_rng *r, int nsp, int structure_kind, double smax) {
  memset(e, 0, sizeof *e);
  ndf_grey_options_init(&e->o);
  e->el.nsp = nsp;
  int64_t ntap = 1;
  for (int i = 0; i < nsp; i++) {
    e->el.shape[i] = tu_rng_int(r, 1, nsp >= 3 ? 3 : 5);
    ntap *= e->el.shape[i];
  }
  int kind = structure_kind ? 2 : (int)tu_rng_int(r, 0, 1);
  if (kind == 0) {
    e->o.nsize = nsp;
    for (int i = 0; i < nsp; i++) e->o.size[i] = e->el.shape[i];
  } else {
    assert_int_equal(tu_array_alloc(&e->fp, NDF_BOOL, nsp, e->el.shape), 0);
    int any = 0;
    for (int64_t k = 0; k < ntap; k++) {
      e->fpv[k] = (uint8_t)tu_rng_chance(r, 0.6);
      any |= e->fpv[k];
    }
    if (!any) e->fpv[tu_rng_int(r, 0, ntap - 1)] = 1;
    for (int64_t k = 0; k < ntap; k++) tu_set(&e->fp.arr, k, e->fpv[k]);
    e->el.fp = e->fpv;
    e->o.footprint = &e->fp.arr;
    if (kind == 2) {
      assert_int_equal(tu_array_alloc(&e->st, NDF_FLOAT64, nsp, e->el.shape), 0);
      for (int64_t k = 0; k < ntap; k++) {
        e->stv[k] = (double)tu_rng_int(r, -(int64_t)smax, (int64_t)smax);
        tu_set(&e->st.arr, k, e->stv[k]);
      }
      e->el.st = e->stv;
      e->o.structure = &e->st.arr;
      if (tu_rng_chance(r, 0.3)) { /* structure alone: footprint = ones */
        e->o.footprint = NULL;
        e->el.fp = NULL;
      }
    }
  }
  e->o.norigin = nsp;
  for (int i = 0; i < nsp; i++) {
    int64_t s = e->el.shape[i];
    e->el.origin[i] = (s == 1) ? 0 : tu_rng_int(r, -(s / 2), (s - 1) / 2);
    e->o.origin[i] = e->el.origin[i];
  }
}

static void free_elem(rand_elem *e) {
  tu_array_free(&e->fp);
  tu_array_free(&e->st);
}

/* Policy (a): NaN propagates -- an output is NaN iff a value under the element
 * (cval included in constant mode) is NaN; elsewhere the exact result.  The
 * composites apply it to each min/max step, then NumPy's arithmetic. */
static void test_nan_propagates(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  tu_rng rng;
  tu_rng_seed(&rng, ((grey_state *)*state)->seed + 11);
  int failed = 0;
  for (int iter = 0; iter < 600; iter++) {
    ndf_dtype dt = tu_rng_chance(&rng, 0.5) ? NDF_FLOAT32 : NDF_FLOAT64;
    int batch = (int)tu_rng_int(&rng, 0, 1);
    int nsp = (int)tu_rng_int(&rng, 1, 3);
    int nd = batch + nsp;
    int64_t sh[4];
    for (int i = 0; i < nd; i++) sh[i] = tu_rng_int(&rng, 1, i < batch ? 3 : 9);
    tu_array in, want, got;
    assert_int_equal(tu_array_alloc(&in, dt, nd, sh), 0);
    assert_int_equal(tu_array_alloc(&want, dt, nd, sh), 0);
    int64_t n = ndf_array_size(&in.arr);
    double pnan = tu_rng_unif(&rng) * 0.15;
    for (int64_t i = 0; i < n; i++) {
      double v = tu_rng_normal(&rng) * 100;
      if (tu_rng_chance(&rng, pnan)) v = tu_rng_chance(&rng, 0.5) ? NAN : -NAN;
      tu_set(&in.arr, i, v);
    }
    rand_elem e;
    draw_elem(&e, &rng, nsp, tu_rng_chance(&rng, 0.3), 50);
    e.o.mode = (ndf_mode)tu_rng_int(&rng, 0, NDF_MODE_COUNT - 1);
    e.o.cval = tu_rng_chance(&rng, 0.4) ? NAN : tu_rng_normal(&rng) * 100;
    e.o.batch_dims = batch;
    int op = (int)tu_rng_int(&rng, 0, TU_OP_COUNT - 1);
    assert_int_equal(tu_array_like(&got, &in.arr, TU_LAYOUT_C, &rng), 0);
    tu_ref_op(op, &in.arr, &want.arr, &e.el, e.o.mode, e.o.cval, batch);
    ndf_status r = tu_op_call(ctx, op, &in.arr, &got.arr, &e.o);
    char msg[2048] = "", shs[64];
    int64_t bad = r == NDF_OK ? tu_compare(&want.arr, &got.arr, msg, sizeof msg) : -1;
    if (bad != 0) {
      if (failed < 8)
        printf("NaN case %d (seed %llu): %s %s %s mode=%s cval=%g batch=%d: %s\n%s", iter,
               (unsigned long long)((grey_state *)*state)->seed, tu_op_name(op), ndf_dtype_name(dt), tu_shape_str(&in.arr, shs, sizeof shs),
               ndf_mode_name(e.o.mode), e.o.cval, batch, r == NDF_OK ? "differs" : ndf_errmsg(ctx), msg);
      failed++;
    }
    free_elem(&e);
    tu_array_free(&in);
    tu_array_free(&want);
    tu_array_free(&got);
  }
  assert_int_equal(failed, 0);
}

/* Policy (a), by hand: one NaN poisons exactly the outputs whose element
 * covers it; a NaN cval poisons exactly the outputs whose element leaves the
 * image in constant mode. */
static void test_nan_by_hand(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  static const double v[] = {1, 2, 3, NAN, 5, 6, 7, 8};
  for (int dt = NDF_FLOAT32; dt <= NDF_FLOAT64; dt++) {
    tu_array in, out;
    arr1d(&in, (ndf_dtype)dt, 8, v);
    arr1d(&out, (ndf_dtype)dt, 8, v);
    ndf_grey_options o;
    ndf_grey_options_init(&o);
    o.nsize = 1;
    o.size[0] = 3;
    assert_int_equal(ndf_grey_erosion(ctx, &in.arr, &out.arr, &o), NDF_OK);
    static const double w1[] = {1, 1, NAN, NAN, NAN, 5, 6, 7};
    expect_1d(&out, 8, w1, "erosion size 3 with one NaN");
    assert_int_equal(ndf_grey_dilation(ctx, &in.arr, &out.arr, &o), NDF_OK);
    static const double w2[] = {2, 3, NAN, NAN, NAN, 7, 8, 8};
    expect_1d(&out, 8, w2, "dilation size 3 with one NaN");
    static const double clean[] = {1, 2, 3, 4, 5, 6, 7, 8};
    for (int i = 0; i < 8; i++) tu_set(&in.arr, i, clean[i]);
    o.mode = NDF_MODE_CONSTANT;
    o.cval = NAN;
    assert_int_equal(ndf_grey_erosion(ctx, &in.arr, &out.arr, &o), NDF_OK);
    static const double w3[] = {NAN, 1, 2, 3, 4, 5, 6, NAN};
    expect_1d(&out, 8, w3, "erosion size 3, constant mode, cval NaN");
    o.norigin = 1;
    o.origin[0] = 1;
    assert_int_equal(ndf_grey_dilation(ctx, &in.arr, &out.arr, &o), NDF_OK);
    /* dilation maps origin 1 to -1: window x .. x+2, past the end at x = 6, 7 */
    static const double w4[] = {3, 4, 5, 6, 7, 8, NAN, NAN};
    expect_1d(&out, 8, w4, "dilation size 3 origin 1, constant mode, cval NaN");
    tu_array_free(&in);
    tu_array_free(&out);
  }
}

/* Policy (c): with a structure on an integer dtype, results outside the
 * dtype's range saturate (exact value clamped to the range).  maxfrac sets
 * how large the structure values are relative to the dtype's range.  The
 * composites saturate each min/max step, then wrap in NumPy's arithmetic. */
static void saturation_run(void **state, double maxfrac, const char *what) {
  ndf_ctx *ctx = ctx_of(state);
  tu_rng rng;
  tu_rng_seed(&rng, ((grey_state *)*state)->seed + 13 + (uint64_t)(maxfrac * 100));
  int failed = 0;
  for (int iter = 0; iter < 480; iter++) {
    ndf_dtype dt = (ndf_dtype)(NDF_UINT8 + iter % 6);
    double lo, hi;
    tu_int_range(dt, &lo, &hi);
    int nsp = (int)tu_rng_int(&rng, 1, 3);
    int64_t sh[3];
    for (int i = 0; i < nsp; i++) sh[i] = tu_rng_int(&rng, 1, 8);
    tu_array in, want, got;
    assert_int_equal(tu_array_alloc(&in, dt, nsp, sh), 0);
    assert_int_equal(tu_array_alloc(&want, dt, nsp, sh), 0);
    int64_t n = ndf_array_size(&in.arr);
    for (int64_t i = 0; i < n; i++) {
      double v = tu_rng_chance(&rng, 0.3) ? (tu_rng_chance(&rng, 0.5) ? lo : hi)
                                          : (double)tu_rng_int(&rng, (int64_t)lo, (int64_t)hi);
      tu_set(&in.arr, i, v);
    }
    double smax = floor((hi - lo) * maxfrac);
    if (smax > 4e9) smax = 4e9;
    rand_elem e;
    draw_elem(&e, &rng, nsp, 1, smax);
    e.o.mode = (ndf_mode)tu_rng_int(&rng, 0, NDF_MODE_COUNT - 1);
    e.o.cval = (double)tu_rng_int(&rng, (int64_t)lo, (int64_t)hi);
    int op = (int)tu_rng_int(&rng, 0, TU_OP_COUNT - 1);
    assert_int_equal(tu_array_like(&got, &in.arr, TU_LAYOUT_C, &rng), 0);
    tu_ref_op(op, &in.arr, &want.arr, &e.el, e.o.mode, e.o.cval, 0);
    ndf_status r = tu_op_call(ctx, op, &in.arr, &got.arr, &e.o);
    char msg[2048] = "", shs[64];
    int64_t bad = r == NDF_OK ? tu_compare(&want.arr, &got.arr, msg, sizeof msg) : -1;
    if (bad != 0) {
      if (failed < 8) {
        printf("%s case %d (seed %llu): %s %s %s mode=%s cval=%g structure values:", what, iter,
               (unsigned long long)((grey_state *)*state)->seed, tu_op_name(op), ndf_dtype_name(dt), tu_shape_str(&in.arr, shs, sizeof shs),
               ndf_mode_name(e.o.mode), e.o.cval);
        int64_t nt = 1;
        for (int i = 0; i < nsp; i++) nt *= e.el.shape[i];
        for (int64_t k = 0; k < nt && k < 16; k++) printf(" %g%s", e.stv[k], e.el.fp && !e.el.fp[k] ? "(off)" : "");
        printf("\n  %s\n%s", r == NDF_OK ? "differs (expected: exact result clamped, per min/max step)" : ndf_errmsg(ctx), msg);
      }
      failed++;
    }
    free_elem(&e);
    tu_array_free(&in);
    tu_array_free(&want);
    tu_array_free(&got);
  }
  assert_int_equal(failed, 0);
}

/* Structure values up to a quarter of the range: every signed dtype can hold
 * them, and results cross the range's ends. */
static void test_saturation_moderate(void **state) { saturation_run(state, 0.25, "saturation"); }
/* Structure values up to twice the range (not representable in the dtype). */
static void test_saturation_large(void **state) { saturation_run(state, 2.0, "saturation (large structure)"); }

/* Policy (b): cval is converted to the input dtype (truncation for integers);
 * non-finite or out-of-range values are rejected for integer dtypes. */
static void test_cval_policy(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  static const double v[] = {40, 50, 60, 70, 80, 90};
  for (int dt = NDF_UINT8; dt <= NDF_INT32; dt++) {
    double lo, hi;
    tu_int_range((ndf_dtype)dt, &lo, &hi);
    tu_array in, out, ref;
    arr1d(&in, (ndf_dtype)dt, 6, v);
    arr1d(&out, (ndf_dtype)dt, 6, v);
    arr1d(&ref, (ndf_dtype)dt, 6, v);
    const double bad[] = {NAN, INFINITY, -INFINITY, hi + 1, lo - 1, hi * 2 + 10, lo - 1e12, 1e300};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
      for (int mode = 0; mode < 2; mode++) { /* constant, and its grid-constant alias */
        for (int op = 0; op < TU_OP_COUNT; op++) {
          ndf_grey_options o;
          ndf_grey_options_init(&o);
          o.nsize = 1;
          o.size[0] = 3;
          assert_int_equal(ndf_mode_from_name(mode ? "grid-constant" : "constant", &o.mode), NDF_OK);
          o.cval = bad[k];
          tu_poison(out.base, out.bytes);
          ndf_status r = tu_op_call(ctx, op, &in.arr, &out.arr, &o);
          const char *m = ndf_errmsg(ctx);
          if (r != NDF_EINVAL || !strstr(m, "cval") || !strstr(m, tu_op_api_name(op)))
            printf("%s %s cval=%g accepted or badly reported: %s \"%s\"\n", tu_op_api_name(op),
                   ndf_dtype_name((ndf_dtype)dt), bad[k], ndf_status_name(r), m);
          assert_int_equal(r, NDF_EINVAL);
          assert_non_null(strstr(m, "cval"));
          assert_non_null(strstr(m, tu_op_api_name(op)));
          assert_int_equal(tu_poison_check(out.base, out.bytes), -1);
        }
      }
    }
    /* Accepted: the ends of the range, and non-integers (truncated). */
    const double good[] = {lo, hi, lo + 0.5, hi - 0.5, 45.7, -0.9};
    for (size_t k = 0; k < sizeof good / sizeof good[0]; k++) {
      if (good[k] < lo || good[k] > hi) continue;
      for (int op = 0; op < TU_OP_COUNT; op++) {
        ndf_grey_options o;
        ndf_grey_options_init(&o);
        o.nsize = 1;
        o.size[0] = 3;
        o.mode = NDF_MODE_CONSTANT;
        o.cval = good[k];
        ndf_status r = tu_op_call(ctx, op, &in.arr, &out.arr, &o);
        if (r != NDF_OK)
          printf("%s %s cval=%.17g rejected: %s\n", tu_op_api_name(op), ndf_dtype_name((ndf_dtype)dt), good[k],
                 ndf_errmsg(ctx));
        assert_int_equal(r, NDF_OK);
        o.cval = trunc(good[k]);
        assert_int_equal(tu_op_call(ctx, op, &in.arr, &ref.arr, &o), NDF_OK);
        char msg[1024];
        int64_t nbad = tu_compare(&ref.arr, &out.arr, msg, sizeof msg);
        if (nbad) printf("%s %s: cval=%.17g differs from cval=%.17g:\n%s", tu_op_name(op),
                         ndf_dtype_name((ndf_dtype)dt), good[k], trunc(good[k]), msg);
        assert_int_equal(nbad, 0);
        if (op > TU_OP_DILATION) continue;
        int dil = op == TU_OP_DILATION;
        /* and against the exact values: border = op(cval, neighbours) */
        double c = trunc(good[k]);
        double e0 = dil ? fmax(c, fmax(v[0], v[1])) : fmin(c, fmin(v[0], v[1]));
        double e5 = dil ? fmax(c, fmax(v[4], v[5])) : fmin(c, fmin(v[4], v[5]));
        assert_true(tu_get(&out.arr, 0) == e0);
        assert_true(tu_get(&out.arr, 5) == e5);
      }
    }
    tu_array_free(&in);
    tu_array_free(&out);
    tu_array_free(&ref);
  }
  /* Floats: any cval, converted to the dtype (0.1 becomes 0.1f for float32). */
  static const double fv[] = {0.5, -0.25, 0.75};
  tu_array in, out;
  arr1d(&in, NDF_FLOAT32, 3, fv);
  arr1d(&out, NDF_FLOAT32, 3, fv);
  ndf_grey_options o;
  ndf_grey_options_init(&o);
  o.nsize = 1;
  o.size[0] = 3;
  o.mode = NDF_MODE_CONSTANT;
  o.cval = 0.1;
  assert_int_equal(ndf_grey_dilation(ctx, &in.arr, &out.arr, &o), NDF_OK);
  assert_true(*(float *)tu_elem_ptr(&out.arr, 1) == 0.75f);
  o.cval = 1e300; /* float32: converts to +inf */
  assert_int_equal(ndf_grey_dilation(ctx, &in.arr, &out.arr, &o), NDF_OK);
  assert_true(isinf(tu_get(&out.arr, 0)) && tu_get(&out.arr, 0) > 0);
  o.cval = -INFINITY;
  assert_int_equal(ndf_grey_erosion(ctx, &in.arr, &out.arr, &o), NDF_OK);
  assert_true(isinf(tu_get(&out.arr, 0)) && tu_get(&out.arr, 0) < 0);
  assert_true(tu_get(&out.arr, 1) == -0.25);
  o.cval = 0.1;
  o.size[0] = 1; /* a size-1 element never reaches cval */
  assert_int_equal(ndf_grey_erosion(ctx, &in.arr, &out.arr, &o), NDF_OK);
  assert_true(tu_get(&out.arr, 1) == -0.25);
  o.size[0] = 3;
  assert_int_equal(ndf_grey_erosion(ctx, &in.arr, &out.arr, &o), NDF_OK);
  assert_true(*(float *)tu_elem_ptr(&out.arr, 0) == -0.25f);
  o.cval = -0.3;
  assert_int_equal(ndf_grey_erosion(ctx, &in.arr, &out.arr, &o), NDF_OK);
  assert_true(*(float *)tu_elem_ptr(&out.arr, 2) == (float)-0.3);
  tu_array_free(&in);
  tu_array_free(&out);
}

/* ADR 0003 §4: the boundary extension is periodic at any distance, also for
 * non-box elements many times larger than the image (where scipy's N-D offset
 * table goes wrong in reflect mode, so the oracle stays below 4n). */
static void test_large_elements_periodic(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  tu_rng rng;
  tu_rng_seed(&rng, ((grey_state *)*state)->seed + 23);
  int failed = 0;
  for (int iter = 0; iter < 320; iter++) {
    ndf_dtype dt = (ndf_dtype)tu_rng_int(&rng, NDF_UINT8, NDF_FLOAT64);
    int nsp = (int)tu_rng_int(&rng, 1, 3);
    int64_t sh[3];
    for (int i = 0; i < nsp; i++) sh[i] = tu_rng_int(&rng, 1, 4);
    tu_array in, want, got;
    assert_int_equal(tu_array_alloc(&in, dt, nsp, sh), 0);
    assert_int_equal(tu_array_alloc(&want, dt, nsp, sh), 0);
    double lo, hi;
    tu_int_range(dt, &lo, &hi);
    for (int64_t i = 0; i < ndf_array_size(&in.arr); i++)
      tu_set(&in.arr, i, tu_is_float(dt) ? tu_rng_normal(&rng) * 100 : (double)tu_rng_int(&rng, (int64_t)lo, (int64_t)hi));
    rand_elem e;
    memset(&e, 0, sizeof e);
    ndf_grey_options_init(&e.o);
    e.el.nsp = nsp;
    int64_t ntap = 1;
    for (int i = 0; i < nsp; i++) {
      e.el.shape[i] = tu_rng_int(&rng, 1, nsp == 3 ? 8 : nsp == 2 ? 22 : 24);
      ntap *= e.el.shape[i];
    }
    assert_true(ntap <= 512);
    assert_int_equal(tu_array_alloc(&e.fp, NDF_BOOL, nsp, e.el.shape), 0);
    for (int64_t k = 0; k < ntap; k++) {
      e.fpv[k] = (uint8_t)tu_rng_chance(&rng, 0.5);
      tu_set(&e.fp.arr, k, e.fpv[k]);
    }
    e.fpv[0] = 1; /* a far corner tap is always on */
    tu_set(&e.fp.arr, 0, 1);
    e.el.fp = e.fpv;
    e.o.footprint = &e.fp.arr;
    if (tu_rng_chance(&rng, 0.3)) {
      assert_int_equal(tu_array_alloc(&e.st, NDF_FLOAT64, nsp, e.el.shape), 0);
      for (int64_t k = 0; k < ntap; k++) {
        e.stv[k] = (double)tu_rng_int(&rng, -9, 9);
        tu_set(&e.st.arr, k, e.stv[k]);
      }
      e.el.st = e.stv;
      e.o.structure = &e.st.arr;
    }
    e.o.norigin = nsp;
    for (int i = 0; i < nsp; i++) {
      int64_t s = e.el.shape[i];
      e.el.origin[i] = e.o.origin[i] = tu_rng_int(&rng, -(s / 2), (s - 1) / 2);
    }
    e.o.mode = (ndf_mode)tu_rng_int(&rng, 0, NDF_MODE_COUNT - 1);
    e.o.cval = tu_is_float(dt) ? 0.5 : lo + 1;
    int op = (int)tu_rng_int(&rng, 0, TU_OP_COUNT - 1);
    assert_int_equal(tu_array_like(&got, &in.arr, TU_LAYOUT_C, &rng), 0);
    tu_ref_op(op, &in.arr, &want.arr, &e.el, e.o.mode, e.o.cval, 0);
    ndf_status r = tu_op_call(ctx, op, &in.arr, &got.arr, &e.o);
    char msg[2048] = "", shs[64];
    int64_t bad = r == NDF_OK ? tu_compare(&want.arr, &got.arr, msg, sizeof msg) : -1;
    if (bad != 0) {
      if (failed < 8)
        printf("large element case %d (seed %llu): %s %s image %s element %lldx%lldx%lld mode=%s: %s\n%s", iter,
               (unsigned long long)((grey_state *)*state)->seed, tu_op_name(op), ndf_dtype_name(dt), tu_shape_str(&in.arr, shs, sizeof shs),
               (long long)e.el.shape[0], nsp > 1 ? (long long)e.el.shape[1] : 1LL,
               nsp > 2 ? (long long)e.el.shape[2] : 1LL, ndf_mode_name(e.o.mode),
               r == NDF_OK ? "differs from the reference" : ndf_errmsg(ctx), msg);
      failed++;
    }
    free_elem(&e);
    tu_array_free(&in);
    tu_array_free(&want);
    tu_array_free(&got);
  }
  assert_int_equal(failed, 0);
}

/* batch_dims: each image is filtered alone (the element never crosses images). */
static void test_batch_images_independent(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  tu_rng rng;
  tu_rng_seed(&rng, ((grey_state *)*state)->seed + 17);
  for (int iter = 0; iter < 80; iter++) {
    ndf_dtype dt = (ndf_dtype)tu_rng_int(&rng, NDF_UINT8, NDF_FLOAT64);
    int nb = (int)tu_rng_int(&rng, 1, 2), nsp = (int)tu_rng_int(&rng, 1, 3), nd = nb + nsp;
    int64_t sh[5];
    for (int i = 0; i < nd; i++) sh[i] = tu_rng_int(&rng, 1, i < nb ? 3 : 7);
    tu_array in, out;
    assert_int_equal(tu_array_alloc(&in, dt, nd, sh), 0);
    assert_int_equal(tu_array_alloc(&out, dt, nd, sh), 0);
    double lo, hi;
    tu_int_range(dt, &lo, &hi);
    int64_t n = ndf_array_size(&in.arr);
    for (int64_t i = 0; i < n; i++)
      tu_set(&in.arr, i, tu_is_float(dt) ? tu_rng_normal(&rng) * 100 : (double)tu_rng_int(&rng, (int64_t)lo, (int64_t)hi));
    rand_elem e;
    draw_elem(&e, &rng, nsp, 0, 0);
    e.o.mode = (ndf_mode)tu_rng_int(&rng, 0, NDF_MODE_COUNT - 1);
    e.o.cval = tu_is_float(dt) ? 1.5 : lo;
    e.o.batch_dims = nb;
    int op = (int)tu_rng_int(&rng, 0, TU_OP_COUNT - 1);
    assert_int_equal(tu_op_call(ctx, op, &in.arr, &out.arr, &e.o), NDF_OK);
    /* Now image by image, through views of one image (batch_dims 0). */
    int64_t nimg = 1, per = 1;
    for (int i = 0; i < nb; i++) nimg *= sh[i];
    for (int i = nb; i < nd; i++) per *= sh[i];
    size_t es = ndf_dtype_size(dt);
    tu_array one;
    assert_int_equal(tu_array_alloc(&one, dt, nsp, sh + nb), 0);
    e.o.batch_dims = 0;
    for (int64_t b = 0; b < nimg; b++) {
      ndf_array view = one.arr;
      view.data = (char *)in.arr.data + (size_t)(b * per) * es;
      assert_int_equal(tu_op_call(ctx, op, &view, &one.arr, &e.o), NDF_OK);
      ndf_array part = one.arr;
      part.data = (char *)out.arr.data + (size_t)(b * per) * es;
      char msg[1024];
      int64_t bad = tu_compare(&one.arr, &part, msg, sizeof msg);
      if (bad) printf("batch iter %d (%s, seed %llu) image %lld differs from a lone image:\n%s", iter, tu_op_name(op),
                      (unsigned long long)((grey_state *)*state)->seed, (long long)b, msg);
      assert_int_equal(bad, 0);
    }
    tu_array_free(&one);
    free_elem(&e);
    tu_array_free(&in);
    tu_array_free(&out);
  }
}

/* Every algorithm against the direct path, bit for bit (NaN payloads aside),
 * on inputs scipy's oracle cannot afford: boxes with extents up to 63 (and
 * longer than the image), iterated structures (diamonds, crosses, boxes),
 * 1-4 spatial axes, batch axes, every mode, NaN in the input and as cval,
 * strided inputs and outputs.  With -0.0 and 0.0 in the input (boxes only)
 * every algorithm but decomposed is compared with separable, signed zeros
 * included: all return the first of equal extrema in raster order of the
 * window (the separable passes run from the last axis to the first);
 * decomposed takes its steps in another order (scipy says nothing about
 * which zero). */
static void test_algorithms_bit_for_bit(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  tu_rng rng;
  tu_rng_seed(&rng, ((grey_state *)*state)->seed + 23);
  int failed = 0, ran[NDF_GREY_ALGORITHM_COUNT] = {0};
  const long iters = tu_env_long("NDF_TEST_CASES", 1000) / 8 + 40;
  const clock_t t0 = clock();
  for (long it = 0; it < iters && failed < 10; it++) {
    const ndf_dtype dt = (ndf_dtype)tu_rng_int(&rng, NDF_UINT8, NDF_FLOAT64);
    const int nsp = (int)tu_rng_int(&rng, 1, 4), nb = (int)tu_rng_int(&rng, 0, 1), nd = nsp + nb;
    const int64_t maxlen = nsp == 1 ? 1500 : nsp == 2 ? 90 : nsp == 3 ? 24 : 9;
    int64_t sh[NDF_MAX_NDIM], es[NDF_MAX_SPATIAL], nelem = 1, ntap = 1;
    for (int i = 0; i < nd; i++) {
      sh[i] = i < nb ? tu_rng_int(&rng, 1, 3) : tu_rng_int(&rng, 1, maxlen);
      nelem *= sh[i];
    }
    ndf_grey_options o;
    ndf_grey_options_init(&o);
    tu_array fp = {0};
    const int iterated = tu_rng_chance(&rng, 0.35);
    if (iterated) {
      const int c = (int)tu_rng_int(&rng, 1, nsp);
      const int64_t k = tu_rng_int(&rng, 1, nsp <= 2 ? 10 : nsp == 3 ? 3 : 2);
      for (int i = 0; i < nsp; i++) { es[i] = 2 * k + 1; ntap *= es[i]; }
      assert_int_equal(tu_array_alloc(&fp, tu_rng_chance(&rng, 0.5) ? NDF_BOOL : NDF_FLOAT64, nsp, es), 0);
      for (int64_t t = 0; t < ntap; t++) {
        int64_t q = t, l1 = 0;
        for (int i = 0; i < nsp; i++, q /= es[0]) l1 += llabs(q % es[0] - k);
        tu_set(&fp.arr, t, l1 <= c * k);
      }
      o.footprint = &fp.arr;
    } else {
      o.nsize = nsp;
      for (int i = 0; i < nsp; i++) {
        const double u = tu_rng_unif(&rng);
        const int64_t n = sh[nb + i];
        es[i] = u < 0.15 ? 1 : u < 0.35 ? tu_rng_int(&rng, 2, 7) : u < 0.9 ? tu_rng_int(&rng, 8, 63) : n * tu_rng_int(&rng, 1, 4) + 1;
        if (nsp >= 3 && es[i] > 12) es[i] = tu_rng_int(&rng, 8, 12);
        o.size[i] = es[i];
        ntap *= es[i];
      }
    }
    if (!iterated || tu_rng_chance(&rng, 0.3)) {
      o.norigin = nsp;
      for (int i = 0; i < nsp; i++) o.origin[i] = tu_rng_int(&rng, -(es[i] / 2), (es[i] - 1) / 2);
    }
    o.mode = (ndf_mode)tu_rng_int(&rng, 0, NDF_MODE_COUNT - 1);
    o.batch_dims = nb;
    const int zeros = tu_is_float(dt) && tu_rng_chance(&rng, 0.25);
    double lo, hi;
    tu_int_range(dt, &lo, &hi);
    o.cval = tu_is_float(dt) ? (tu_rng_chance(&rng, 0.1) ? NAN : zeros ? -0.0 : tu_rng_normal(&rng) * 50)
                             : (double)tu_rng_int(&rng, (int64_t)lo, (int64_t)hi);
    const int op = tu_rng_chance(&rng, 0.6) ? (int)tu_rng_int(&rng, 0, 1) : (int)tu_rng_int(&rng, 0, TU_OP_COUNT - 1);
    tu_array in, ref, out, in2 = {0};
    assert_int_equal(tu_array_alloc(&in, dt, nd, sh), 0);
    const double pnan = tu_is_float(dt) && tu_rng_chance(&rng, 0.5) ? 0.02 : 0;
    for (int64_t i = 0; i < nelem; i++) {
      double v;
      if (zeros) v = tu_rng_chance(&rng, 0.05) ? NAN : (double)tu_rng_int(&rng, -1, 2) * 0.5 + (tu_rng_chance(&rng, 0.5) ? -0.0 : 0.0);
      else if (tu_is_float(dt)) v = tu_rng_chance(&rng, pnan) ? NAN : tu_rng_chance(&rng, 0.3) ? (double)tu_rng_int(&rng, -3, 3) : tu_rng_normal(&rng) * 100;
      else v = (double)tu_rng_int(&rng, (int64_t)lo, (int64_t)hi);
      if (zeros && v == 0) v = tu_rng_chance(&rng, 0.5) ? -0.0 : 0.0;
      tu_set(&in.arr, i, v);
    }
    const ndf_array *input = &in.arr;
    if (tu_rng_chance(&rng, 0.3)) {
      assert_int_equal(tu_array_relayout(&in2, &in.arr, TU_LAYOUT_PADDED | TU_LAYOUT_NEGATIVE, &rng), 0);
      input = &in2.arr;
    }
    assert_int_equal(tu_array_alloc(&ref, dt, nd, sh), 0);
    /* The reference: direct, or separable for the signed-zero runs. */
    const int direct_ok = nelem * ntap <= 3000000;
    o.algorithm = zeros ? NDF_GREY_SEPARABLE : NDF_GREY_DIRECT;
    ndf_status r0 = (zeros || direct_ok) ? tu_op_call(ctx, op, input, &ref.arr, &o) : NDF_EINVAL;
    if (r0 != NDF_OK) { /* no reference affordable or applicable: skip */
      tu_array_free(&in); tu_array_free(&in2); tu_array_free(&ref); tu_array_free(&fp);
      continue;
    }
    ran[o.algorithm]++;
    char desc[512];
    snprintf(desc, sizeof desc, "%s %s nd=%d batch=%d %s=%lld.. mode=%s cval=%g%s", tu_op_name(op), ndf_dtype_name(dt), nd,
             nb, iterated ? "iterated" : "size", (long long)es[0], ndf_mode_name(o.mode), o.cval,
             zeros ? " signed zeros" : "");
    for (int a = 0; a < NDF_GREY_ALGORITHM_COUNT; a++) {
      if (a == (int)o.algorithm && a == NDF_GREY_DIRECT) continue;
      if (zeros && (a == NDF_GREY_DECOMPOSED || (a == NDF_GREY_DIRECT && !direct_ok))) continue;
      ndf_grey_options oa = o;
      oa.algorithm = (ndf_grey_algorithm)a;
      assert_int_equal(tu_array_like(&out, &in.arr, tu_rng_chance(&rng, 0.3) ? TU_LAYOUT_PADDED : TU_LAYOUT_C, &rng), 0);
      ndf_status r = tu_op_call(ctx, op, input, &out.arr, &oa);
      int ok = 1;
      char msg[2048] = "";
      if (r == NDF_OK) {
        ran[a]++;
        if (tu_compare(&ref.arr, &out.arr, msg, sizeof msg) != 0 || tu_check_gaps(&out) >= 0) ok = 0;
      } else if (r != NDF_EINVAL || (a == NDF_GREY_AUTO) ||
                 ((a == NDF_GREY_SEPARABLE || a == NDF_GREY_VHGW) && !iterated)) { /* size= is a box */
        ok = 0;
        snprintf(msg, sizeof msg, "returned %s: %s\n", ndf_status_name(r), ndf_errmsg(ctx));
      } else if (tu_poison_check(out.base, out.bytes) >= 0) {
        ok = 0;
        snprintf(msg, sizeof msg, "refused, but wrote the output\n");
      }
      if (!ok) {
        printf("algorithm %s != %s: %s\n%s", ndf_grey_algorithm_name(oa.algorithm), ndf_grey_algorithm_name(o.algorithm),
               desc, msg);
        failed++;
      }
      tu_array_free(&out);
    }
    tu_array_free(&in);
    tu_array_free(&in2);
    tu_array_free(&ref);
    tu_array_free(&fp);
  }
  printf("algorithms bit for bit (%.1f s CPU): cases per algorithm:", (double)(clock() - t0) / CLOCKS_PER_SEC);
  for (int a = 0; a < NDF_GREY_ALGORITHM_COUNT; a++) printf(" %s %d", ndf_grey_algorithm_name((ndf_grey_algorithm)a), ran[a]);
  printf("\n");
  assert_int_equal(failed, 0);
  for (int a = 0; a < NDF_GREY_ALGORITHM_COUNT; a++) assert_true(ran[a] > 0);
}

/* Rank filters and binary morphology read the tap table of the element: an
 * iterated structure (which grey ops decompose) must still give them every
 * tap.  min / max rank filters and binary erosion / propagation against grey
 * erosion / dilation by the same (symmetric) diamond, computed directly. */
static void test_iterated_footprint_in_rank_and_binary(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  tu_rng rng;
  tu_rng_seed(&rng, ((grey_state *)*state)->seed + 29);
  int64_t sh[2] = {37, 45}, es[2] = {7, 7};
  tu_array in, bin, fp, a, b, bb;
  assert_int_equal(tu_array_alloc(&in, NDF_FLOAT32, 2, sh), 0);
  assert_int_equal(tu_array_alloc(&bin, NDF_UINT8, 2, sh), 0);
  for (int64_t i = 0; i < sh[0] * sh[1]; i++) {
    tu_set(&in.arr, i, (double)tu_rng_int(&rng, -50, 50));
    tu_set(&bin.arr, i, tu_rng_chance(&rng, 0.85));
  }
  tu_set(&bin.arr, 18 * 45 + 22, 1); /* the propagation's seed lies in the mask */
  assert_int_equal(tu_array_alloc(&fp, NDF_BOOL, 2, es), 0);
  for (int64_t t = 0; t < 49; t++) tu_set(&fp.arr, t, llabs(t / 7 - 3) + llabs(t % 7 - 3) <= 3);
  assert_int_equal(tu_array_alloc(&a, NDF_FLOAT32, 2, sh), 0);
  assert_int_equal(tu_array_alloc(&b, NDF_FLOAT32, 2, sh), 0);
  ndf_grey_options g;
  ndf_grey_options_init(&g);
  g.footprint = &fp.arr;
  g.mode = NDF_MODE_NEAREST;
  g.algorithm = NDF_GREY_DIRECT;
  ndf_rank_options r;
  ndf_rank_options_init(&r);
  r.footprint = &fp.arr;
  r.mode = NDF_MODE_NEAREST;
  char msg[1024];
  for (int k = 0; k < 2; k++) {
    assert_int_equal((k ? ndf_grey_dilation : ndf_grey_erosion)(ctx, &in.arr, &a.arr, &g), NDF_OK);
    assert_int_equal(ndf_rank_filter(ctx, &in.arr, &b.arr, k ? -1 : 0, &r), NDF_OK);
    int64_t bad = tu_compare(&a.arr, &b.arr, msg, sizeof msg);
    if (bad) printf("rank_filter %d with a diamond differs from grey %s:\n%s", k ? -1 : 0, k ? "dilation" : "erosion", msg);
    assert_int_equal(bad, 0);
  }
  /* binary erosion (border 0) = grey erosion of 0/1 with cval 0; propagation
   * from a seed inside a mask = the closure, checked to contain the seed and
   * to equal one more dilation step of itself within the mask. */
  assert_int_equal(tu_array_alloc(&bb, NDF_BOOL, 2, sh), 0);
  tu_array ga;
  assert_int_equal(tu_array_alloc(&ga, NDF_UINT8, 2, sh), 0);
  ndf_binary_options bo;
  ndf_binary_options_init(&bo);
  bo.structure = &fp.arr;
  assert_int_equal(ndf_binary_erosion(ctx, &bin.arr, &bb.arr, &bo), NDF_OK);
  g.mode = NDF_MODE_CONSTANT;
  g.cval = 0;
  assert_int_equal(ndf_grey_erosion(ctx, &bin.arr, &ga.arr, &g), NDF_OK);
  int64_t diff = 0;
  for (int64_t i = 0; i < sh[0] * sh[1]; i++) diff += tu_get(&bb.arr, i) != tu_get(&ga.arr, i);
  if (diff) printf("binary_erosion with a diamond differs from grey erosion in %lld elements\n", (long long)diff);
  assert_int_equal(diff, 0);
  tu_array seed;
  assert_int_equal(tu_array_alloc(&seed, NDF_BOOL, 2, sh), 0);
  tu_set(&seed.arr, 18 * 45 + 22, 1);
  bo.mask = &bin.arr;
  assert_int_equal(ndf_binary_propagation(ctx, &seed.arr, &bb.arr, &bo), NDF_OK);
  g.algorithm = NDF_GREY_AUTO;
  tu_array prop;
  assert_int_equal(tu_array_alloc(&prop, NDF_UINT8, 2, sh), 0);
  for (int64_t i = 0; i < sh[0] * sh[1]; i++) tu_set(&prop.arr, i, tu_get(&bb.arr, i));
  assert_true(tu_get(&bb.arr, 18 * 45 + 22) == 1);
  assert_int_equal(ndf_grey_dilation(ctx, &prop.arr, &ga.arr, &g), NDF_OK);
  tu_array_free(&prop);
  diff = 0;
  for (int64_t i = 0; i < sh[0] * sh[1]; i++)
    diff += tu_get(&bb.arr, i) != (tu_get(&ga.arr, i) && tu_get(&bin.arr, i)) && tu_get(&bin.arr, i);
  assert_int_equal(diff, 0);
  tu_array_free(&seed);
  tu_array_free(&ga);
  tu_array_free(&bb);
  tu_array_free(&in);
  tu_array_free(&bin);
  tu_array_free(&fp);
  tu_array_free(&a);
  tu_array_free(&b);
}

/* An input with a zero stride (a broadcast axis) gives the same result as the
 * materialized array. */
static void test_zero_stride_input(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  tu_rng rng;
  tu_rng_seed(&rng, ((grey_state *)*state)->seed + 19);
  int64_t sh[3] = {5, 6, 7};
  tu_array row, full, a, b;
  int64_t rsh[1] = {7};
  assert_int_equal(tu_array_alloc(&row, NDF_INT32, 1, rsh), 0);
  for (int i = 0; i < 7; i++) tu_set(&row.arr, i, (double)tu_rng_int(&rng, -100000, 100000));
  assert_int_equal(tu_array_alloc(&full, NDF_INT32, 3, sh), 0);
  for (int64_t i = 0; i < 5 * 6 * 7; i++) tu_set(&full.arr, i, tu_get(&row.arr, i % 7));
  ndf_array bc = full.arr;
  bc.data = row.arr.data;
  bc.strides[0] = 0;
  bc.strides[1] = 0;
  bc.strides[2] = 1;
  assert_int_equal(tu_array_alloc(&a, NDF_INT32, 3, sh), 0);
  assert_int_equal(tu_array_alloc(&b, NDF_INT32, 3, sh), 0);
  for (int op = 0; op < TU_OP_COUNT; op++) {
    for (int mode = 0; mode < NDF_MODE_COUNT; mode++) {
      ndf_grey_options o;
      ndf_grey_options_init(&o);
      o.nsize = 3;
      o.size[0] = 3;
      o.size[1] = 2;
      o.size[2] = 4;
      o.mode = (ndf_mode)mode;
      o.cval = -7;
      assert_int_equal(tu_op_call(ctx, op, &full.arr, &a.arr, &o), NDF_OK);
      ndf_status r = tu_op_call(ctx, op, &bc, &b.arr, &o);
      if (r != NDF_OK) printf("zero-stride input rejected by %s: %s\n", tu_op_api_name(op), ndf_errmsg(ctx));
      assert_int_equal(r, NDF_OK);
      char msg[1024];
      int64_t bad = tu_compare(&a.arr, &b.arr, msg, sizeof msg);
      if (bad) printf("%s, mode %s: zero-stride input differs from the materialized one:\n%s", tu_op_name(op),
                      ndf_mode_name((ndf_mode)mode), msg);
      assert_int_equal(bad, 0);
    }
  }
  tu_array_free(&row);
  tu_array_free(&full);
  tu_array_free(&a);
  tu_array_free(&b);
}

/* ------------------------------------------------------------------------ */
/* Composite ops                                                             */

/* Compares a 1-D result with expected values (exact; NaN equals NaN). */
static int check_1d(const ndf_array *got, int n, const double *want, const char *what) {
  int bad = 0;
  for (int i = 0; i < n; i++) {
    double g = tu_get(got, i);
    if (g == want[i] || (isnan(g) && isnan(want[i]))) continue;
    if (bad < 4) printf("%s: element %d expected %.17g got %.17g\n", what, i, want[i], g);
    bad++;
  }
  return bad;
}

#define F32(v) ((double)(float)(v))

/* Values of all eight ops computed by scipy 1.10.1 / NumPy 1.24 (the six
 * composites wrap around in uint8 / int8 and round after every step in
 * float32), checked against ndforge and against the test's own reference
 * (tu_ref_op, which the policy tests trust). */
static void test_composite_known_values(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  static const struct {
    const char *what;
    ndf_dtype dt;
    int n;
    double x[8];
    int kind; /* 0: size=esize, 1: footprint elem[0..esize), 2: structure elem[0..esize) */
    int esize;
    double elem[3];
    ndf_mode mode;
    double cval;
    double want[TU_OP_COUNT][8]; /* erosion, dilation, opening, closing, gradient, laplace, white, black */
  } cases[] = {
      {"uint8, footprint [1,0,0] (dilation < erosion), nearest",
       NDF_UINT8, 8, {10, 8, 6, 4, 2, 50, 250, 200}, 1, 3, {1, 0, 0}, NDF_MODE_NEAREST, 0,
       {{10, 10, 8, 6, 4, 2, 50, 250},
        {8, 6, 4, 2, 50, 250, 200, 200},
        {10, 8, 6, 4, 2, 50, 250, 250},
        {8, 8, 6, 4, 2, 50, 250, 200},
        {254, 252, 252, 252, 46, 248, 150, 206},
        {254, 0, 0, 0, 50, 152, 6, 50},
        {0, 0, 0, 0, 0, 0, 0, 206},
        {254, 0, 0, 0, 0, 0, 0, 0}}},
      {"uint8, size 3, nearest (laplace overflows)",
       NDF_UINT8, 8, {200, 250, 100, 30, 255, 0, 128, 127}, 0, 3, {0}, NDF_MODE_NEAREST, 0,
       {{200, 100, 30, 30, 0, 0, 0, 127},
        {250, 250, 250, 255, 255, 255, 128, 128},
        {200, 200, 100, 30, 30, 0, 127, 127},
        {250, 250, 250, 250, 255, 128, 128, 128},
        {50, 150, 220, 225, 255, 255, 128, 1},
        {50, 106, 80, 225, 1, 255, 128, 1},
        {0, 50, 0, 0, 225, 0, 1, 0},
        {50, 0, 150, 220, 0, 128, 0, 1}}},
      {"uint8, size 3, constant cval 200 (opening > x: white tophat wraps)",
       NDF_UINT8, 3, {10, 20, 30}, 0, 3, {0}, NDF_MODE_CONSTANT, 200,
       {{10, 10, 20}, {200, 30, 200}, {200, 20, 200}, {30, 30, 30},
        {190, 20, 180}, {190, 0, 160}, {66, 0, 86}, {20, 10, 0}}},
      {"uint8, size 3, constant cval 0 (closing < x: black tophat wraps)",
       NDF_UINT8, 3, {100, 200, 150}, 0, 3, {0}, NDF_MODE_CONSTANT, 0,
       {{0, 100, 0}, {200, 200, 200}, {100, 100, 100}, {0, 200, 0},
        {200, 100, 200}, {0, 156, 156}, {0, 100, 50}, {156, 0, 106}}},
      {"int8, size 2, reflect",
       NDF_INT8, 6, {100, -100, 120, -128, 127, 5}, 0, 2, {0}, NDF_MODE_REFLECT, 0,
       {{100, -100, -100, -128, -128, 5},
        {100, 120, 120, 127, 127, 5},
        {100, -100, -100, -128, 5, 5},
        {100, 100, 120, 120, 127, 5},
        {0, -36, -36, -1, -1, 0},
        {0, -36, 36, -1, 1, 0},
        {0, 0, -36, 0, 122, 0},
        {0, -56, 0, -8, 0, 0}}},
      {"uint8, structure [-5] (dilation = x-5 < erosion = x+5)",
       NDF_UINT8, 5, {40, 50, 60, 70, 80}, 2, 1, {-5}, NDF_MODE_REFLECT, 0,
       {{45, 55, 65, 75, 85},
        {35, 45, 55, 65, 75},
        {40, 50, 60, 70, 80},
        {40, 50, 60, 70, 80},
        {246, 246, 246, 246, 246},
        {0, 0, 0, 0, 0},
        {0, 0, 0, 0, 0},
        {0, 0, 0, 0, 0}}},
      {"float32, size 3, nearest (laplace and gradient round per step)",
       NDF_FLOAT32, 5, {3, 1, 16777218, 1, 3}, 0, 3, {0}, NDF_MODE_NEAREST, 0,
       {{1, 1, 1, 1, 1},
        {3, 16777218, 16777218, 16777218, 3},
        {1, 1, 1, 1, 1},
        {3, 3, 16777218, 3, 3},
        {2, 16777216, 16777216, 16777216, 2},
        {-2, 16777220, -16777216, 16777220, -2},
        {2, 0, 16777216, 0, 2},
        {0, 2, 0, 2, 0}}},
      {"float64, the same values",
       NDF_FLOAT64, 5, {3, 1, 16777218, 1, 3}, 0, 3, {0}, NDF_MODE_NEAREST, 0,
       {{1, 1, 1, 1, 1},
        {3, 16777218, 16777218, 16777218, 3},
        {1, 1, 1, 1, 1},
        {3, 3, 16777218, 3, 3},
        {2, 16777217, 16777217, 16777217, 2},
        {-2, 16777217, -16777217, 16777217, -2},
        {2, 0, 16777217, 0, 2},
        {0, 2, 0, 2, 0}}},
      {"float32, size 2, nearest (dilation + erosion overflows to inf)",
       NDF_FLOAT32, 4, {3e38, -3e38, 3e38, 2.5e38}, 0, 2, {0}, NDF_MODE_NEAREST, 0,
       {{F32(3e38), F32(-3e38), F32(-3e38), F32(2.5e38)},
        {F32(3e38), F32(3e38), F32(3e38), F32(2.5e38)},
        {F32(3e38), F32(-3e38), F32(2.5e38), F32(2.5e38)},
        {F32(3e38), F32(3e38), F32(3e38), F32(2.5e38)},
        {0, INFINITY, INFINITY, 0},
        {INFINITY, INFINITY, -INFINITY, INFINITY},
        {0, 0, 4.999999333082606e+37, 0},
        {0, INFINITY, 0, 0}}},
  };
  int failed = 0;
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    int n = cases[k].n;
    tu_array in, out, ref, el;
    memset(&el, 0, sizeof el);
    arr1d(&in, cases[k].dt, n, cases[k].x);
    arr1d(&ref, cases[k].dt, n, cases[k].x);
    ndf_grey_options o;
    ndf_grey_options_init(&o);
    o.mode = cases[k].mode;
    o.cval = cases[k].cval;
    tu_elem te;
    memset(&te, 0, sizeof te);
    te.nsp = 1;
    te.shape[0] = cases[k].esize;
    uint8_t fpv[3];
    if (cases[k].kind == 0) {
      o.nsize = 1;
      o.size[0] = cases[k].esize;
    } else if (cases[k].kind == 1) {
      arr1d(&el, NDF_BOOL, cases[k].esize, cases[k].elem);
      o.footprint = &el.arr;
      for (int i = 0; i < cases[k].esize; i++) fpv[i] = cases[k].elem[i] != 0;
      te.fp = fpv;
    } else {
      arr1d(&el, NDF_FLOAT64, cases[k].esize, cases[k].elem);
      o.structure = &el.arr;
      te.st = cases[k].elem;
    }
    for (int op = 0; op < TU_OP_COUNT; op++) {
      int64_t sh[1] = {n};
      assert_int_equal(tu_array_alloc(&out, cases[k].dt, 1, sh), 0);
      tu_poison(out.base, out.bytes);
      char what[256];
      snprintf(what, sizeof what, "%s (%s)", tu_op_name(op), cases[k].what);
      ndf_status r = tu_op_call(ctx, op, &in.arr, &out.arr, &o);
      if (r != NDF_OK) {
        printf("%s: %s %s\n", what, ndf_status_name(r), ndf_errmsg(ctx));
        failed++;
      } else if (check_1d(&out.arr, n, cases[k].want[op], what)) {
        failed++;
      }
      tu_ref_op(op, &in.arr, &ref.arr, &te, o.mode, o.cval, 0);
      snprintf(what, sizeof what, "the test's reference tu_ref_op: %s (%s)", tu_op_name(op), cases[k].what);
      if (check_1d(&ref.arr, n, cases[k].want[op], what)) failed++;
      tu_array_free(&out);
    }
    tu_array_free(&in);
    tu_array_free(&ref);
    tu_array_free(&el);
  }
  assert_int_equal(failed, 0);
}

/* float32 laplace rounds after every step: ((a + b) - x) - x in float32 is
 * not the double result rounded once.  Hand values, then random values with
 * a large dynamic range against the step-by-step reference. */
static void test_laplace_float32_rounding(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  static const double x[] = {3, 1, 16777218, 1, 3};
  tu_array in32, in64, out32, out64;
  arr1d(&in32, NDF_FLOAT32, 5, x);
  arr1d(&in64, NDF_FLOAT64, 5, x);
  arr1d(&out32, NDF_FLOAT32, 5, x);
  arr1d(&out64, NDF_FLOAT64, 5, x);
  ndf_grey_options o;
  ndf_grey_options_init(&o);
  o.nsize = 1;
  o.size[0] = 3;
  o.mode = NDF_MODE_NEAREST;
  assert_int_equal(ndf_morphological_laplace(ctx, &in32.arr, &out32.arr, &o), NDF_OK);
  assert_int_equal(ndf_morphological_laplace(ctx, &in64.arr, &out64.arr, &o), NDF_OK);
  /* i=1: dilation 16777218, erosion 1, x 1: 16777219 -> 16777220 (ties to even), -1 -> 16777220, -1 -> 16777220 */
  static const double want32[] = {-2, 16777220, -16777216, 16777220, -2};
  static const double want64[] = {-2, 16777217, -16777217, 16777217, -2};
  int bad = check_1d(&out32.arr, 5, want32, "laplace float32 (per-step rounding)");
  bad += check_1d(&out64.arr, 5, want64, "laplace float64");
  for (int i = 1; i <= 3; i += 2) { /* (element 2: -16777217 rounds to the same -16777216) */
    float once = (float)tu_get(&out64.arr, i);
    if ((double)once == tu_get(&out32.arr, i)) {
      printf("laplace float32 element %d equals the double result rounded once (%.9g): steps not rounded\n", i,
             (double)once);
      bad++;
    }
  }
  assert_int_equal(bad, 0);
  tu_array_free(&in32);
  tu_array_free(&in64);
  tu_array_free(&out32);
  tu_array_free(&out64);

  /* Random: values near 2^24..2^26 mixed with small ones, random flat or
   * integer-structured elements; every op against the float32 reference. */
  tu_rng rng;
  tu_rng_seed(&rng, ((grey_state *)*state)->seed + 29);
  int failed = 0;
  int64_t steps_differ = 0;
  for (int iter = 0; iter < 160; iter++) {
    int nsp = (int)tu_rng_int(&rng, 1, 2);
    int64_t sh[2];
    for (int i = 0; i < nsp; i++) sh[i] = tu_rng_int(&rng, 1, nsp == 1 ? 40 : 9);
    tu_array in, want, got, dbl, in_d;
    assert_int_equal(tu_array_alloc(&in, NDF_FLOAT32, nsp, sh), 0);
    assert_int_equal(tu_array_alloc(&want, NDF_FLOAT32, nsp, sh), 0);
    int64_t n = ndf_array_size(&in.arr);
    for (int64_t i = 0; i < n; i++) {
      double v = tu_rng_chance(&rng, 0.5) ? (double)tu_rng_int(&rng, -9, 9)
                                          : ldexp(1.0 + tu_rng_unif(&rng), (int)tu_rng_int(&rng, 23, 26)) *
                                                (tu_rng_chance(&rng, 0.3) ? -1 : 1);
      tu_set(&in.arr, i, v);
    }
    rand_elem e;
    draw_elem(&e, &rng, nsp, tu_rng_chance(&rng, 0.3), 3);
    e.o.mode = (ndf_mode)tu_rng_int(&rng, 0, NDF_MODE_COUNT - 1);
    e.o.cval = (double)tu_rng_int(&rng, -5, 5);
    int op = iter % 2 ? TU_OP_LAPLACE : (int)tu_rng_int(&rng, TU_OP_OPENING, TU_OP_COUNT - 1);
    assert_int_equal(tu_array_like(&got, &in.arr, TU_LAYOUT_C, &rng), 0);
    tu_ref_op(op, &in.arr, &want.arr, &e.el, e.o.mode, e.o.cval, 0);
    ndf_status r = tu_op_call(ctx, op, &in.arr, &got.arr, &e.o);
    char msg[2048] = "", shs[64];
    int64_t nbad = r == NDF_OK ? tu_compare(&want.arr, &got.arr, msg, sizeof msg) : -1;
    if (nbad != 0) {
      if (failed < 8)
        printf("float32 rounding case %d (seed %llu): %s %s mode=%s cval=%g: %s\n%s", iter,
               (unsigned long long)((grey_state *)*state)->seed, tu_op_name(op),
               tu_shape_str(&in.arr, shs, sizeof shs), ndf_mode_name(e.o.mode), e.o.cval,
               r == NDF_OK ? "differs from the per-step float32 reference" : ndf_errmsg(ctx), msg);
      failed++;
    }
    if (op == TU_OP_LAPLACE) { /* how often the per-step result is not the double result rounded once */
      assert_int_equal(tu_array_alloc(&in_d, NDF_FLOAT64, nsp, sh), 0);
      assert_int_equal(tu_array_alloc(&dbl, NDF_FLOAT64, nsp, sh), 0);
      for (int64_t i = 0; i < n; i++) tu_set(&in_d.arr, i, tu_get(&in.arr, i));
      tu_ref_op(op, &in_d.arr, &dbl.arr, &e.el, e.o.mode, e.o.cval, 0);
      for (int64_t i = 0; i < n; i++)
        if ((double)(float)tu_get(&dbl.arr, i) != tu_get(&want.arr, i)) steps_differ++;
      tu_array_free(&in_d);
      tu_array_free(&dbl);
    }
    free_elem(&e);
    tu_array_free(&in);
    tu_array_free(&want);
    tu_array_free(&got);
  }
  printf("float32 laplace: %lld elements where per-step rounding differs from rounding the double result\n",
         (long long)steps_differ);
  assert_true(steps_differ > 0); /* the random cases do exercise the rounding */
  assert_int_equal(failed, 0);
}

/* Random input of any dtype without NaN: normal*100 floats (a few
 * infinities), integers over the whole range or a narrow one (ties). */
static void fill_random(tu_array *t, tu_rng *r) {
  ndf_dtype dt = t->arr.dtype;
  double lo, hi;
  tu_int_range(dt, &lo, &hi);
  int64_t n = ndf_array_size(&t->arr);
  int narrow = tu_rng_chance(r, 0.3);
  double a = lo, b = hi;
  if (!tu_is_float(dt) && narrow) {
    a = (double)tu_rng_int(r, (int64_t)lo, (int64_t)hi);
    b = fmin(hi, a + 5);
  }
  for (int64_t i = 0; i < n; i++) {
    double v;
    if (tu_is_float(dt)) {
      v = narrow ? (double)tu_rng_int(r, -3, 3) : tu_rng_normal(r) * 100;
      if (tu_rng_chance(r, 0.01)) v = tu_rng_chance(r, 0.5) ? INFINITY : -INFINITY;
    } else {
      v = (double)tu_rng_int(r, (int64_t)a, (int64_t)b);
    }
    tu_set(&t->arr, i, v);
  }
}

/* Opening and closing with flat elements: idempotent (opening(opening(x)) ==
 * opening(x)) in wrap and constant mode, where scipy's boundary extension
 * keeps them true openings / closings; opening <= x and closing >= x in wrap
 * mode, and in constant mode when cval lies below (opening) or above
 * (closing) every value.  (In reflect / mirror / nearest, scipy's per-step
 * extension breaks both properties near the border for asymmetric elements.) */
static void test_opening_closing_properties(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  tu_rng rng;
  tu_rng_seed(&rng, ((grey_state *)*state)->seed + 31);
  int failed = 0;
  for (int iter = 0; iter < 300; iter++) {
    ndf_dtype dt = (ndf_dtype)tu_rng_int(&rng, NDF_UINT8, NDF_FLOAT64);
    int batch = (int)tu_rng_int(&rng, 0, 1);
    int nsp = (int)tu_rng_int(&rng, 1, 3), nd = batch + nsp;
    int64_t sh[4];
    for (int i = 0; i < nd; i++) sh[i] = tu_rng_int(&rng, 1, i < batch ? 3 : (nsp == 1 ? 30 : 9));
    tu_array x, a, b;
    assert_int_equal(tu_array_alloc(&x, dt, nd, sh), 0);
    assert_int_equal(tu_array_alloc(&a, dt, nd, sh), 0);
    assert_int_equal(tu_array_alloc(&b, dt, nd, sh), 0);
    fill_random(&x, &rng);
    rand_elem e;
    draw_elem(&e, &rng, nsp, 0, 0); /* flat: size or footprint, random origins */
    e.o.batch_dims = batch;
    e.o.mode = tu_rng_chance(&rng, 0.5) ? NDF_MODE_WRAP : NDF_MODE_CONSTANT;
    double lo, hi;
    tu_int_range(dt, &lo, &hi);
    int bounds = e.o.mode == NDF_MODE_WRAP || tu_rng_chance(&rng, 0.5);
    for (int closing = 0; closing < 2; closing++) {
      int op = closing ? TU_OP_CLOSING : TU_OP_OPENING;
      if (e.o.mode == NDF_MODE_CONSTANT) {
        if (bounds) e.o.cval = closing ? hi : lo; /* -inf / +inf for floats */
        else e.o.cval = tu_is_float(dt) ? tu_rng_normal(&rng) * 100 : (double)tu_rng_int(&rng, (int64_t)lo, (int64_t)hi);
      }
      char shs[64];
      const char *why = NULL;
      int64_t where = -1;
      ndf_status r = tu_op_call(ctx, op, &x.arr, &a.arr, &e.o);
      if (r == NDF_OK) r = tu_op_call(ctx, op, &a.arr, &b.arr, &e.o);
      if (r != NDF_OK) {
        why = ndf_errmsg(ctx);
      } else {
        int64_t n = ndf_array_size(&x.arr);
        for (int64_t i = 0; i < n && !why; i++) {
          double xv = tu_get(&x.arr, i), av = tu_get(&a.arr, i);
          if (memcmp(tu_elem_ptr(&a.arr, i), tu_elem_ptr(&b.arr, i), ndf_dtype_size(dt)) != 0) {
            why = "not idempotent (applying it twice changed the result)";
            where = i;
          } else if (bounds && (closing ? av < xv : av > xv)) {
            why = closing ? "closing < x (not extensive)" : "opening > x (not anti-extensive)";
            where = i;
          }
        }
      }
      if (why) {
        if (failed < 8) {
          printf("%s case %d (seed %llu): %s %s batch=%d mode=%s cval=%g element", tu_op_name(op), iter,
                 (unsigned long long)((grey_state *)*state)->seed, ndf_dtype_name(dt),
                 tu_shape_str(&x.arr, shs, sizeof shs), batch, ndf_mode_name(e.o.mode), e.o.cval);
          for (int i = 0; i < nsp; i++) printf("%s%lld", i ? "x" : " ", (long long)e.el.shape[i]);
          printf(" %s: %s", e.o.footprint ? "footprint" : "size", why);
          if (where >= 0)
            printf(" at flat index %lld: x=%.17g once=%.17g twice=%.17g", (long long)where, tu_get(&x.arr, where),
                   tu_get(&a.arr, where), tu_get(&b.arr, where));
          printf("\n");
        }
        failed++;
      }
    }
    free_elem(&e);
    tu_array_free(&x);
    tu_array_free(&a);
    tu_array_free(&b);
  }
  assert_int_equal(failed, 0);
}

/* Each composite equals its steps run one by one through the public API and
 * combined with NumPy's arithmetic: white_tophat == x - opening(x) exactly,
 * black_tophat == closing(x) - x, gradient == dilation - erosion, laplace ==
 * ((dilation + erosion) - x) - x, opening == dilation(erosion(x)), closing ==
 * erosion(dilation(x)).  Every dtype, mode, element kind (structures too,
 * saturating ones included), batch axes and NaN. */
static void test_composites_are_their_steps(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  tu_rng rng;
  tu_rng_seed(&rng, ((grey_state *)*state)->seed + 37);
  int failed = 0;
  for (int iter = 0; iter < 300; iter++) {
    ndf_dtype dt = (ndf_dtype)tu_rng_int(&rng, NDF_UINT8, NDF_FLOAT64);
    int batch = (int)tu_rng_int(&rng, 0, 1);
    int nsp = (int)tu_rng_int(&rng, 1, 3), nd = batch + nsp;
    int64_t sh[4];
    for (int i = 0; i < nd; i++) sh[i] = tu_rng_int(&rng, 1, i < batch ? 3 : (nsp == 1 ? 30 : 8));
    tu_array x, ero, dil, t, want, got;
    assert_int_equal(tu_array_alloc(&x, dt, nd, sh), 0);
    assert_int_equal(tu_array_alloc(&ero, dt, nd, sh), 0);
    assert_int_equal(tu_array_alloc(&dil, dt, nd, sh), 0);
    assert_int_equal(tu_array_alloc(&t, dt, nd, sh), 0);
    assert_int_equal(tu_array_alloc(&want, dt, nd, sh), 0);
    fill_random(&x, &rng);
    if (tu_is_float(dt) && tu_rng_chance(&rng, 0.3)) {
      int64_t n = ndf_array_size(&x.arr);
      for (int64_t i = 0; i < n; i++)
        if (tu_rng_chance(&rng, 0.05)) tu_set(&x.arr, i, NAN);
    }
    double lo, hi;
    tu_int_range(dt, &lo, &hi);
    rand_elem e;
    double smax = tu_is_float(dt) ? 50 : floor((hi - lo) * (tu_rng_chance(&rng, 0.5) ? 0.01 : 0.3));
    if (smax > 1e6) smax = 1e6;
    draw_elem(&e, &rng, nsp, tu_rng_chance(&rng, 0.3), smax);
    e.o.batch_dims = batch;
    e.o.mode = (ndf_mode)tu_rng_int(&rng, 0, NDF_MODE_COUNT - 1);
    e.o.cval = tu_is_float(dt) ? (tu_rng_chance(&rng, 0.1) ? NAN : tu_rng_normal(&rng) * 100)
                               : (double)tu_rng_int(&rng, (int64_t)lo, (int64_t)hi);
    int op = (int)tu_rng_int(&rng, TU_OP_OPENING, TU_OP_COUNT - 1);
    ndf_status r = NDF_OK;
    switch (op) {
      case TU_OP_OPENING:
      case TU_OP_WHITE_TOPHAT:
        r = ndf_grey_erosion(ctx, &x.arr, &t.arr, &e.o);
        if (r == NDF_OK) r = ndf_grey_dilation(ctx, &t.arr, &want.arr, &e.o);
        if (r == NDF_OK && op == TU_OP_WHITE_TOPHAT) tu_np_sub(&x.arr, &want.arr, &want.arr);
        break;
      case TU_OP_CLOSING:
      case TU_OP_BLACK_TOPHAT:
        r = ndf_grey_dilation(ctx, &x.arr, &t.arr, &e.o);
        if (r == NDF_OK) r = ndf_grey_erosion(ctx, &t.arr, &want.arr, &e.o);
        if (r == NDF_OK && op == TU_OP_BLACK_TOPHAT) tu_np_sub(&want.arr, &x.arr, &want.arr);
        break;
      default:
        r = ndf_grey_dilation(ctx, &x.arr, &dil.arr, &e.o);
        if (r == NDF_OK) r = ndf_grey_erosion(ctx, &x.arr, &ero.arr, &e.o);
        if (r == NDF_OK) {
          if (op == TU_OP_GRADIENT) tu_np_sub(&dil.arr, &ero.arr, &want.arr);
          else tu_np_laplace(&dil.arr, &ero.arr, &x.arr, &want.arr);
        }
        break;
    }
    assert_int_equal(r, NDF_OK);
    int layout = tu_rng_chance(&rng, 0.5) ? TU_LAYOUT_PADDED : TU_LAYOUT_C;
    assert_int_equal(tu_array_like(&got, &x.arr, layout, &rng), 0);
    r = tu_op_call(ctx, op, &x.arr, &got.arr, &e.o);
    char msg[2048] = "", shs[64];
    int64_t bad = r == NDF_OK ? tu_compare(&want.arr, &got.arr, msg, sizeof msg) : -1;
    int64_t gap = r == NDF_OK && bad == 0 ? tu_check_gaps(&got) : -1;
    if (bad != 0 || gap >= 0) {
      if (failed < 8)
        printf("%s case %d (seed %llu): %s %s batch=%d mode=%s cval=%g %s: %s\n%s", tu_op_name(op), iter,
               (unsigned long long)((grey_state *)*state)->seed, ndf_dtype_name(dt),
               tu_shape_str(&x.arr, shs, sizeof shs), batch, ndf_mode_name(e.o.mode), e.o.cval,
               e.o.structure ? "structure" : e.o.footprint ? "footprint" : "size",
               r != NDF_OK ? ndf_errmsg(ctx)
               : bad ? "differs from its steps run one by one"
                     : "wrote between the elements of a strided output",
               msg);
      failed++;
    }
    free_elem(&e);
    tu_array_free(&x);
    tu_array_free(&ero);
    tu_array_free(&dil);
    tu_array_free(&t);
    tu_array_free(&want);
    tu_array_free(&got);
  }
  assert_int_equal(failed, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_scipy_cases),
      cmocka_unit_test(test_scipy_cases_strided_input),
      cmocka_unit_test(test_scipy_cases_fortran_input),
      cmocka_unit_test(test_scipy_cases_strided_output),
      cmocka_unit_test(test_scipy_cases_fortran_both),
      cmocka_unit_test(test_dilation_reflects_footprint_and_origin),
      cmocka_unit_test(test_mirror_length_one_is_nearest),
      cmocka_unit_test(test_size_one_axis_ignores_origin),
      cmocka_unit_test(test_size_footprint_structure_agree),
      cmocka_unit_test(test_nan_propagates),
      cmocka_unit_test(test_nan_by_hand),
      cmocka_unit_test(test_saturation_moderate),
      cmocka_unit_test(test_saturation_large),
      cmocka_unit_test(test_cval_policy),
      cmocka_unit_test(test_large_elements_periodic),
      cmocka_unit_test(test_batch_images_independent),
      cmocka_unit_test(test_zero_stride_input),
      cmocka_unit_test(test_algorithms_bit_for_bit),
      cmocka_unit_test(test_iterated_footprint_in_rank_and_binary),
      cmocka_unit_test(test_composite_known_values),
      cmocka_unit_test(test_laplace_float32_rounding),
      cmocka_unit_test(test_opening_closing_properties),
      cmocka_unit_test(test_composites_are_their_steps),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
