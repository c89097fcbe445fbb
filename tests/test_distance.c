/*
 * test_distance.c -- the CPU backend of ndf_distance_transform_edt, _cdt and
 * _bf against scipy.ndimage itself, the fast transforms against the brute
 * force, hand-written cases (scipy's tie rules, images without background)
 * and the contract (every rejected input: status, a message naming the op and
 * the argument, untouched outputs).
 *
 * The scipy part runs tests/oracle_distance.py with a fresh seed per run
 * (printed; NDF_TEST_SEED repeats a run, NDF_TEST_CASES sets the number of
 * random cases): random blob, noise, sparse-background, lattice (ties),
 * single-point (cdt distances in the hundreds) and full/empty masks, ndim
 * 1-4, anisotropic sampling, batch axes.  Distances and indices must equal
 * scipy's bit for bit, with the input as written, strided (padded, negative
 * strides, misaligned) and in Fortran order, into C, Fortran and strided
 * outputs (whose gaps must keep their poison), with only distances, only
 * indices, or both; edt's float32 distances must be scipy's float64
 * distances rounded to float32.
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
#error "NDF_TEST_ORACLE (path of tests/oracle_distance.py) must be defined by the build"
#endif

/* ------------------------------------------------------------------------ */
/* Cases written by the oracle                                               */

typedef enum { OP_EDT, OP_CDT, OP_BF } op_kind;

typedef struct dcase {
  char line[1024];
  int id;
  op_kind op;
  char dtype[16];
  int ndim;
  int64_t shape[NDF_MAX_NDIM];
  int batch;
  char metric[16];
  int nsampling;
  double sampling[NDF_MAX_SPATIAL];
  char structure[64], input[64], dist[64], idx[64];
} dcase;

typedef tu_oracle_group dstate; /* cases: dcase records */
static dcase *cases_of(const dstate *s) { return s->cases; }

static int parse_case(const char *line, void *vc) {
  dcase *c = vc;
  memset(c, 0, sizeof *c);
  c->batch = -1;
  c->op = (op_kind)-1;
  snprintf(c->line, sizeof c->line, "%s", line);
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", line);
  char *save = NULL;
  for (char *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
    char *eq = strchr(tok, '=');
    if (!eq) return -1;
    *eq = 0;
    const char *k = tok, *v = eq + 1;
    if (!strcmp(k, "id")) c->id = atoi(v);
    else if (!strcmp(k, "op")) c->op = !strcmp(v, "edt") ? OP_EDT : !strcmp(v, "cdt") ? OP_CDT : !strcmp(v, "bf") ? OP_BF : (op_kind)-1;
    else if (!strcmp(k, "dtype")) snprintf(c->dtype, sizeof c->dtype, "%s", v);
    else if (!strcmp(k, "shape")) {
      char *end;
      const char *p = v;
      while (*p && c->ndim < NDF_MAX_NDIM) {
        c->shape[c->ndim++] = strtoll(p, &end, 10);
        p = *end == ',' ? end + 1 : end;
        if (end == p && *p) return -1;
      }
    } else if (!strcmp(k, "batch")) c->batch = atoi(v);
    else if (!strcmp(k, "metric")) snprintf(c->metric, sizeof c->metric, "%s", v);
    else if (!strcmp(k, "sampling")) {
      char *end;
      const char *p = v;
      while (*p && c->nsampling < NDF_MAX_SPATIAL) {
        c->sampling[c->nsampling++] = strtod(p, &end);
        p = *end == ',' ? end + 1 : end;
      }
    } else if (!strcmp(k, "structure")) snprintf(c->structure, sizeof c->structure, "%s", v);
    else if (!strcmp(k, "input")) snprintf(c->input, sizeof c->input, "%s", v);
    else if (!strcmp(k, "dist")) snprintf(c->dist, sizeof c->dist, "%s", v);
    else if (!strcmp(k, "idx")) snprintf(c->idx, sizeof c->idx, "%s", v);
  }
  if (c->ndim <= 0 || c->batch < 0 || c->batch >= c->ndim || (int)c->op < 0) return -1;
  return c->input[0] && c->dist[0] && c->idx[0] ? 0 : -1;
}

static int summary(const dstate *s) {
  int n[3] = {0, 0, 0}, batched = 0, samp = 0;
  for (int i = 0; i < s->ncases; i++) {
    n[cases_of(s)[i].op]++;
    batched += cases_of(s)[i].batch > 0;
    samp += cases_of(s)[i].nsampling > 0;
  }
  printf("%d scipy cases: %d edt, %d cdt, %d bf; %d batched, %d with sampling\n", s->ncases, n[0], n[1], n[2], batched,
         samp);
  return 0;
}

static int group_setup(void **state) {
  return tu_oracle_group_setup(state, "ndf-test-distance", 300, NDF_TEST_PYTHON, NDF_TEST_ORACLE, sizeof(dcase),
                               parse_case, summary);
}
#define group_teardown tu_oracle_group_teardown

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

typedef ndf_status (*dist_fn)(ndf_ctx *, const ndf_array *, ndf_array *, ndf_array *, const ndf_distance_options *);

static dist_fn fn_of(op_kind op) {
  return op == OP_EDT ? ndf_distance_transform_edt : op == OP_CDT ? ndf_distance_transform_cdt : ndf_distance_transform_bf;
}
static const char *api_of(op_kind op) {
  return op == OP_EDT ? "ndf_distance_transform_edt" : op == OP_CDT ? "ndf_distance_transform_cdt" : "ndf_distance_transform_bf";
}

/* Converts expected (any dtype) to got's dtype and compares bit for bit. */
static int64_t compare_as(const ndf_array *expected, const ndf_array *got, char *msg, size_t len) {
  tu_array conv;
  if (tu_array_alloc(&conv, got->dtype, expected->ndim, expected->shape) != 0) return -1;
  int64_t n = ndf_array_size(expected);
  if (got->dtype == NDF_FLOAT32 && expected->dtype == NDF_FLOAT64) {
    for (int64_t i = 0; i < n; i++) *(float *)tu_elem_ptr(&conv.arr, i) = (float)*(const double *)tu_elem_ptr(expected, i);
  } else {
    for (int64_t i = 0; i < n; i++) memcpy(tu_elem_ptr(&conv.arr, i), tu_elem_ptr(expected, i), ndf_dtype_size(got->dtype));
  }
  int64_t bad = tu_compare(&conv.arr, got, msg, len);
  tu_array_free(&conv);
  return bad;
}

static int read_npy(const dstate *s, const char *name, ndfio_image *img) {
  char path[700], err[512];
  snprintf(path, sizeof path, "%s/%s", s->dir, name);
  if (ndfio_npy_read(path, img, err, sizeof err) != NDF_OK) {
    fprintf(stderr, "ndfio_npy_read(%s): %s\n", path, err);
    return -1;
  }
  return 0;
}

static void set_metric(ndf_distance_options *o, const char *m) {
  if (!strcmp(m, "default") || !strcmp(m, "structure")) return;
  assert_int_equal(ndf_metric_from_name(m, &o->metric), NDF_OK);
}

/* ------------------------------------------------------------------------ */
/* Running one oracle case                                                   */

enum { IN_ASIS, IN_STRIDED, IN_FORTRAN };
enum { WANT_BOTH, WANT_DIST, WANT_IDX };

typedef struct variant {
  int in, out_layout, want, f32;
  const char *name;
} variant;

static const variant VARIANTS[] = {
    {IN_ASIS, TU_LAYOUT_C, WANT_BOTH, 0, "input as read, C outputs"},
    {IN_STRIDED, TU_LAYOUT_PADDED, WANT_BOTH, 0, "strided (negative, misaligned) input, strided outputs"},
    {IN_FORTRAN, TU_LAYOUT_FORTRAN, WANT_DIST, 1, "Fortran input, Fortran distances only (edt: float32)"},
    {IN_STRIDED, TU_LAYOUT_C, WANT_IDX, 0, "strided input, C indices only"},
};

static int run_case(dstate *s, const dcase *c, const variant *v, tu_rng *rng, int verbose) {
  char msg[2048] = "";
  int rc = -1;
  ndfio_image in = {0}, ed = {0}, ei = {0}, st = {0};
  tu_array in_l = {0}, dout = {0}, iout = {0};
  void *insave = NULL;
  if (read_npy(s, c->input, &in) || read_npy(s, c->dist, &ed) || read_npy(s, c->idx, &ei)) goto done;
  if (c->structure[0] && read_npy(s, c->structure, &st)) goto done;
  const ndf_array *input = &in.arr;
  if (v->in != IN_ASIS) {
    int layout = v->in == IN_FORTRAN ? TU_LAYOUT_FORTRAN
                                     : TU_LAYOUT_PADDED | (tu_rng_chance(rng, 0.6) ? TU_LAYOUT_NEGATIVE : 0) |
                                           (tu_rng_chance(rng, 0.3) ? TU_LAYOUT_OFFSET : 0);
    if (tu_array_relayout(&in_l, &in.arr, layout, rng)) goto done;
    input = &in_l.arr;
  }
  ndf_distance_options o;
  ndf_distance_options_init(&o);
  o.batch_dims = c->batch;
  o.nsampling = c->nsampling;
  for (int d = 0; d < c->nsampling; d++) o.sampling[d] = c->sampling[d];
  set_metric(&o, c->metric);
  if (c->structure[0]) o.metric_structure = &st.arr;

  ndf_array dl = ed.arr;
  if (v->f32 && c->op == OP_EDT) dl.dtype = NDF_FLOAT32;
  const int wd = v->want != WANT_IDX, wi = v->want != WANT_DIST;
  if (wd && tu_array_like(&dout, &dl, v->out_layout, rng)) goto done;
  if (wi && tu_array_like(&iout, &ei.arr, v->out_layout, rng)) goto done;
  size_t inbytes = input == &in.arr ? (size_t)ndf_array_size(&in.arr) * ndf_dtype_size(in.arr.dtype) : in_l.bytes;
  const void *inbase = input == &in.arr ? in.arr.data : in_l.base;
  insave = malloc(inbytes ? inbytes : 1);
  memcpy(insave, inbase, inbytes);

  ndf_status r = fn_of(c->op)(s->ctx, input, wd ? &dout.arr : NULL, wi ? &iout.arr : NULL, &o);
  if (r != NDF_OK) {
    snprintf(msg, sizeof msg, "returned %s: %s", ndf_status_name(r), ndf_errmsg(s->ctx));
    goto done;
  }
  char detail[1024];
  int64_t bad;
  if (wd && (bad = compare_as(&ed.arr, &dout.arr, detail, sizeof detail)) != 0) {
    snprintf(msg, sizeof msg, "%lld of %lld distances (%s) differ from scipy's:\n%s", (long long)bad,
             (long long)ndf_array_size(&ed.arr), ndf_dtype_name(dout.arr.dtype), detail);
    goto done;
  }
  if (wi && (bad = tu_compare(&ei.arr, &iout.arr, detail, sizeof detail)) != 0) {
    snprintf(msg, sizeof msg, "%lld of %lld indices differ from scipy's:\n%s", (long long)bad,
             (long long)ndf_array_size(&ei.arr), detail);
    goto done;
  }
  int64_t gap;
  if ((wd && (gap = tu_check_gaps(&dout)) >= 0) || (wi && (gap = tu_check_gaps(&iout)) >= 0)) {
    snprintf(msg, sizeof msg, "wrote outside the output's elements (buffer byte %lld)", (long long)gap);
    goto done;
  }
  if (memcmp(insave, inbase, inbytes) != 0) {
    snprintf(msg, sizeof msg, "the input buffer was modified");
    goto done;
  }
  rc = 0;
done:
  if (rc != 0 && verbose) printf("FAIL case %d (%s): %s\n  %s\n", c->id, v->name, c->line, msg);
  free(insave);
  ndfio_image_free(&in);
  ndfio_image_free(&ed);
  ndfio_image_free(&ei);
  ndfio_image_free(&st);
  tu_array_free(&in_l);
  tu_array_free(&dout);
  tu_array_free(&iout);
  return rc;
}

static void run_all(void **state, int vi) {
  dstate *s = *state;
  tu_rng rng;
  tu_rng_seed(&rng, s->seed * 37u + (uint64_t)vi);
  int failed = 0;
  for (int i = 0; i < s->ncases; i++)
    if (run_case(s, &cases_of(s)[i], &VARIANTS[vi], &rng, failed < 10) != 0) failed++;
  if (failed) {
    s->keep_dir = 1;
    printf("%d of %d scipy cases failed (%s); seed %llu, cases in %s\n", failed, s->ncases, VARIANTS[vi].name,
           (unsigned long long)s->seed, s->dir);
  }
  assert_int_equal(failed, 0);
}

static void test_scipy_cases(void **state) { run_all(state, 0); }
static void test_scipy_cases_strided(void **state) { run_all(state, 1); }
static void test_scipy_cases_fortran_distances_only(void **state) { run_all(state, 2); }
static void test_scipy_cases_indices_only(void **state) { run_all(state, 3); }

/* ------------------------------------------------------------------------ */
/* Hand-written cases                                                        */

static ndf_ctx *ctx_of(void **state) { return ((dstate *)*state)->ctx; }

static void mask(tu_array *t, int ndim, const int64_t *shape, const uint8_t *v) {
  assert_int_equal(tu_array_alloc(t, NDF_UINT8, ndim, shape), 0);
  for (int64_t i = 0; i < ndf_array_size(&t->arr); i++) ((uint8_t *)t->arr.data)[i] = v ? v[i] : 1;
}

static void idx_like(tu_array *t, const ndf_array *in, int batch) {
  int64_t sh[NDF_MAX_NDIM];
  for (int d = 0; d < batch; d++) sh[d] = in->shape[d];
  sh[batch] = in->ndim - batch;
  for (int d = batch; d < in->ndim; d++) sh[d + 1] = in->shape[d];
  assert_int_equal(tu_array_alloc(t, NDF_INT32, in->ndim + 1, sh), 0);
  tu_poison(t->base, t->bytes);
}

static void dist_like(tu_array *t, const ndf_array *in, ndf_dtype dt) {
  assert_int_equal(tu_array_alloc(t, dt, in->ndim, in->shape), 0);
  tu_poison(t->base, t->bytes);
}

/* scipy's tie rules, on the cases of ../shared/research/algorithms.md §3.3
 * (verified there on scipy 1.18): background at (0,2) and (2,0), query (0,0):
 * edt and cdt taxicab give (2,0) (cdt chessboard reaches (0,2) first: its
 * forward pass sees the diagonal neighbour (-1,+1) before (0,-1)); background
 * at (0,0) and (2,2), query (1,1): edt and cdt give (0,0), bf gives (2,2);
 * 1-D [0,1,0]: edt gives 0.  (Checked on scipy 1.10 here.) */
static void test_tie_rules(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  ndf_distance_options o;
  ndf_distance_options_init(&o);
  const int64_t sh[2] = {3, 3};
  static const uint8_t a[9] = {1, 1, 0, 1, 1, 1, 0, 1, 1}, b[9] = {0, 1, 1, 1, 1, 1, 1, 1, 0};
  tu_array m, ix;
  mask(&m, 2, sh, a);
  idx_like(&ix, &m.arr, 0);
  assert_int_equal(ndf_distance_transform_edt(ctx, &m.arr, NULL, &ix.arr, &o), NDF_OK);
  assert_int_equal(tu_get(&ix.arr, 0), 2); /* (0,0) -> (2,0) */
  assert_int_equal(tu_get(&ix.arr, 9), 0);
  o.metric = NDF_METRIC_TAXICAB;
  assert_int_equal(ndf_distance_transform_cdt(ctx, &m.arr, NULL, &ix.arr, &o), NDF_OK);
  assert_int_equal(tu_get(&ix.arr, 0), 2);
  assert_int_equal(tu_get(&ix.arr, 9), 0);
  o.metric = NDF_METRIC_DEFAULT;
  assert_int_equal(ndf_distance_transform_cdt(ctx, &m.arr, NULL, &ix.arr, &o), NDF_OK);
  assert_int_equal(tu_get(&ix.arr, 0), 0);
  assert_int_equal(tu_get(&ix.arr, 9), 2);
  tu_array_free(&m);
  mask(&m, 2, sh, b);
  assert_int_equal(ndf_distance_transform_edt(ctx, &m.arr, NULL, &ix.arr, &o), NDF_OK);
  assert_int_equal(tu_get(&ix.arr, 4), 0); /* (1,1) -> (0,0) */
  assert_int_equal(tu_get(&ix.arr, 13), 0);
  assert_int_equal(ndf_distance_transform_cdt(ctx, &m.arr, NULL, &ix.arr, &o), NDF_OK);
  assert_int_equal(tu_get(&ix.arr, 4), 0);
  assert_int_equal(tu_get(&ix.arr, 13), 0);
  assert_int_equal(ndf_distance_transform_bf(ctx, &m.arr, NULL, &ix.arr, &o), NDF_OK);
  assert_int_equal(tu_get(&ix.arr, 4), 2); /* (1,1) -> (2,2) */
  assert_int_equal(tu_get(&ix.arr, 13), 2);
  tu_array_free(&m);
  tu_array_free(&ix);
  const int64_t n3 = 3;
  static const uint8_t c[3] = {0, 1, 0};
  mask(&m, 1, &n3, c);
  idx_like(&ix, &m.arr, 0);
  assert_int_equal(ndf_distance_transform_edt(ctx, &m.arr, NULL, &ix.arr, &o), NDF_OK);
  assert_int_equal(tu_get(&ix.arr, 1), 0);
  tu_array_free(&m);
  tu_array_free(&ix);
}

/* No background at all: edt gives index (-1, 0, ...) and the distance from
 * it, scipy's edt(ones((2,3))) = [[1, 1.414, 2.236], [2, 2.236, 2.828]];
 * cdt gives -1 and the voxel's own index; bf sqrt(DBL_MAX) / UINT32_MAX and
 * index 0.  With sampling (0.5, 3) the edt distances scale per axis. */
static void test_no_background(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  ndf_distance_options o;
  ndf_distance_options_init(&o);
  const int64_t sh[2] = {2, 3};
  tu_array m, d, ix;
  mask(&m, 2, sh, NULL);
  dist_like(&d, &m.arr, NDF_FLOAT64);
  idx_like(&ix, &m.arr, 0);
  for (int samp = 0; samp < 2; samp++) {
    o.nsampling = samp ? 2 : 0;
    o.sampling[0] = 0.5;
    o.sampling[1] = 3.0;
    assert_int_equal(ndf_distance_transform_edt(ctx, &m.arr, &d.arr, &ix.arr, &o), NDF_OK);
    for (int64_t i = 0; i < 6; i++) {
      double y = (double)(i / 3 + 1) * (samp ? 0.5 : 1.0), x = (double)(i % 3) * (samp ? 3.0 : 1.0);
      assert_true(tu_get(&d.arr, i) == sqrt(y * y + x * x));
      assert_int_equal(tu_get(&ix.arr, i), -1);
      assert_int_equal(tu_get(&ix.arr, 6 + i), 0);
    }
  }
  o.nsampling = 0;
  tu_array_free(&d);
  dist_like(&d, &m.arr, NDF_INT32);
  assert_int_equal(ndf_distance_transform_cdt(ctx, &m.arr, &d.arr, &ix.arr, &o), NDF_OK);
  for (int64_t i = 0; i < 6; i++) {
    assert_int_equal(tu_get(&d.arr, i), -1);
    assert_int_equal(tu_get(&ix.arr, i), i / 3);
    assert_int_equal(tu_get(&ix.arr, 6 + i), i % 3);
  }
  tu_array_free(&d);
  dist_like(&d, &m.arr, NDF_FLOAT64);
  assert_int_equal(ndf_distance_transform_bf(ctx, &m.arr, &d.arr, &ix.arr, &o), NDF_OK);
  for (int64_t i = 0; i < 6; i++) {
    assert_true(tu_get(&d.arr, i) == sqrt(DBL_MAX));
    assert_int_equal(tu_get(&ix.arr, i), 0);
  }
  tu_array_free(&d);
  dist_like(&d, &m.arr, NDF_UINT32);
  o.metric = NDF_METRIC_CHESSBOARD;
  assert_int_equal(ndf_distance_transform_bf(ctx, &m.arr, &d.arr, NULL, &o), NDF_OK);
  for (int64_t i = 0; i < 6; i++) assert_true(tu_get(&d.arr, i) == (double)UINT32_MAX);
  tu_array_free(&d);
  tu_array_free(&ix);
  tu_array_free(&m);
}

/* ndf_distance_edt_pass: the passes of every axis, each on random pieces of
 * lines, give distance_transform_edt's distances (sqrt, bit for bit) and
 * indices, with and without sampling; bad values and arguments are refused
 * with nothing written. */
static void test_edt_pass(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  tu_rng r;
  tu_rng_seed(&r, tu_seed("NDF_TEST_SEED") + 11);
  for (int k = 0; k < 24; k++) {
    const int nd = 1 + k % 3;
    int64_t sh[3] = {1, 1, 1}, n = 1;
    double samp[3];
    for (int d = 0; d < nd; d++) {
      sh[d] = tu_rng_int(&r, 1, 20);
      n *= sh[d];
      samp[d] = k % 2 ? 0.5 + 2.0 * tu_rng_unif(&r) : 1.0;
    }
    tu_array m, w, f, dist, idx;
    assert_int_equal(tu_array_alloc(&m, NDF_UINT8, nd, sh), 0);
    const double p = k % 4 == 3 ? 0.97 : 0.6;
    for (int64_t i = 0; i < n; i++) tu_set(&m.arr, i, tu_rng_chance(&r, p));
    tu_set(&m.arr, tu_rng_int(&r, 0, n - 1), 0); /* some background */
    assert_int_equal(tu_array_alloc(&w, NDF_FLOAT64, nd, sh), 0);
    assert_int_equal(tu_array_alloc(&f, NDF_INT64, nd, sh), 0);
    for (int64_t i = 0; i < n; i++) {
      const int fg = tu_get(&m.arr, i) != 0;
      ((double *)w.arr.data)[i] = fg ? INFINITY : 0.0;
      ((int64_t *)f.arr.data)[i] = fg ? -1 : i;
    }
    const int64_t ish[4] = {nd, sh[0], sh[1], sh[2]};
    assert_int_equal(tu_array_alloc(&dist, NDF_FLOAT64, nd, sh), 0);
    assert_int_equal(tu_array_alloc(&idx, NDF_INT32, nd + 1, ish), 0);
    ndf_distance_options o;
    ndf_distance_options_init(&o);
    o.nsampling = nd;
    for (int d = 0; d < nd; d++) o.sampling[d] = samp[d];
    assert_int_equal(ndf_distance_transform_edt(ctx, &m.arr, &dist.arr, &idx.arr, &o), NDF_OK);
    assert_int_equal(tu_edt_pass_pieces(ctx, &w.arr, k % 5 == 4 ? NULL : &f.arr, samp, &r), NDF_OK);
    for (int64_t i = 0; i < n; i++) {
      const double got = sqrt(((double *)w.arr.data)[i]), want = ((double *)dist.arr.data)[i];
      assert_memory_equal(&got, &want, sizeof got);
      if (k % 5 == 4) continue;
      int64_t fi = ((int64_t *)f.arr.data)[i];
      for (int d = nd - 1; d >= 0; d--) {
        assert_int_equal(fi % sh[d], ((int32_t *)idx.arr.data)[d * n + i]);
        fi /= sh[d];
      }
    }
    tu_array_free(&m);
    tu_array_free(&w);
    tu_array_free(&f);
    tu_array_free(&dist);
    tu_array_free(&idx);
  }
  /* refusals: nothing written */
  const int64_t two = 2, three = 3;
  tu_array w, f;
  assert_int_equal(tu_array_alloc(&w, NDF_FLOAT64, 1, &two), 0);
  assert_int_equal(tu_array_alloc(&f, NDF_INT64, 1, &two), 0);
  double *wv = w.arr.data;
  int64_t *fv = f.arr.data;
  const double bad[3] = {-1.0, NAN, -INFINITY};
  for (int b = 0; b < 3; b++) {
    wv[0] = INFINITY;
    wv[1] = bad[b];
    assert_int_equal(ndf_distance_edt_pass(ctx, &w.arr, NULL, 0, 1.0), NDF_EINVAL);
    assert_true(isinf(wv[0]) && wv[0] > 0);
  }
  wv[0] = 0.0;
  wv[1] = INFINITY;
  fv[0] = -5;
  fv[1] = 7;
  assert_int_equal(ndf_distance_edt_pass(ctx, &w.arr, &f.arr, 0, 1.0), NDF_EINVAL); /* finite W, feature < 0 */
  assert_true(isinf(wv[1]) && fv[1] == 7);
  fv[0] = 3;
  assert_int_equal(ndf_distance_edt_pass(ctx, &w.arr, &f.arr, 1, 1.0), NDF_EINVAL);  /* no axis 1 */
  assert_int_equal(ndf_distance_edt_pass(ctx, &w.arr, &f.arr, -1, 1.0), NDF_EINVAL);
  assert_int_equal(ndf_distance_edt_pass(ctx, &w.arr, &f.arr, 0, 0.0), NDF_EINVAL);  /* sampling */
  assert_int_equal(ndf_distance_edt_pass(ctx, &w.arr, &f.arr, 0, NAN), NDF_EINVAL);
  assert_int_equal(ndf_distance_edt_pass(ctx, &f.arr, NULL, 0, 1.0), NDF_EINVAL);    /* sqdist int64 */
  assert_int_equal(ndf_distance_edt_pass(ctx, &w.arr, &w.arr, 0, 1.0), NDF_EINVAL);  /* features float64 */
  assert_int_equal(ndf_distance_edt_pass(ctx, NULL, NULL, 0, 1.0), NDF_EINVAL);
  tu_array f3;
  assert_int_equal(tu_array_alloc(&f3, NDF_INT64, 1, &three), 0);
  assert_int_equal(ndf_distance_edt_pass(ctx, &w.arr, &f3.arr, 0, 1.0), NDF_EINVAL); /* shape */
  assert_true(isinf(wv[1]) && fv[1] == 7);
  assert_int_equal(ndf_distance_edt_pass(ctx, &w.arr, &f.arr, 0, 2.0), NDF_OK);
  assert_true(wv[1] == 4.0 && fv[1] == 3);
  tu_array_free(&f3);
  tu_array_free(&w);
  tu_array_free(&f);
}

/* The fast transforms against the brute force on random masks with some
 * background: edt distances equal bf's euclidean ones (bit for bit at unit
 * sampling, within 4 ulp with sampling: both sum the same squares, but the
 * envelope may pick a different site at a tie that rounding breaks), and
 * cdt's taxicab / chessboard distances equal bf's (the two raster passes are
 * exact for these structures); every edt / cdt index is a background voxel
 * at the voxel's distance. */
static void test_fast_against_brute_force(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  tu_rng rng;
  tu_rng_seed(&rng, ((dstate *)*state)->seed ^ 0xbf);
  int bad = 0;
  for (int it = 0; it < 120 && bad < 5; it++) {
    int nd = (int)tu_rng_int(&rng, 1, 4);
    int64_t sh[4], n = 1;
    static const int64_t hi[5] = {0, 200, 30, 11, 6};
    for (int d = 0; d < nd; d++) n *= (sh[d] = tu_rng_int(&rng, 1, hi[nd]));
    tu_array m;
    mask(&m, nd, sh, NULL);
    double p = tu_rng_unif(&rng) * 0.2;
    for (int64_t i = 0; i < n; i++) ((uint8_t *)m.arr.data)[i] = !tu_rng_chance(&rng, p);
    ((uint8_t *)m.arr.data)[tu_rng_int(&rng, 0, n - 1)] = 0;
    ndf_distance_options o;
    ndf_distance_options_init(&o);
    int samp = tu_rng_chance(&rng, 0.5);
    if (samp) {
      o.nsampling = nd;
      for (int d = 0; d < nd; d++) o.sampling[d] = 0.25 + 2.0 * tu_rng_unif(&rng);
    }
    tu_array de, db, ix, cd, cb;
    dist_like(&de, &m.arr, NDF_FLOAT64);
    dist_like(&db, &m.arr, NDF_FLOAT64);
    idx_like(&ix, &m.arr, 0);
    assert_int_equal(ndf_distance_transform_edt(ctx, &m.arr, &de.arr, &ix.arr, &o), NDF_OK);
    assert_int_equal(ndf_distance_transform_bf(ctx, &m.arr, &db.arr, NULL, &o), NDF_OK);
    for (int64_t i = 0; i < n; i++) {
      double e = tu_get(&de.arr, i), b = tu_get(&db.arr, i);
      int ok = samp ? fabs(e - b) <= 4 * DBL_EPSILON * b : e == b;
      /* the index is a background voxel at distance e */
      int64_t f = 0;
      double acc = 0;
      for (int d = 0; d < nd; d++) {
        int64_t q = (int64_t)tu_get(&ix.arr, d * n + i), x = i;
        for (int k = nd - 1; k > d; k--) x /= sh[k];
        x %= sh[d];
        f = f * sh[d] + q;
        double t = (double)(q - x) * (samp ? o.sampling[d] : 1.0);
        acc += t * t;
      }
      ok &= ((uint8_t *)m.arr.data)[f] == 0 && sqrt(acc) == e;
      if (!ok && bad++ < 5) printf("edt vs bf: %dD n=%lld voxel %lld: edt %.17g bf %.17g\n", nd, (long long)n, (long long)i, e, b);
    }
    o.nsampling = 0;
    for (int met = NDF_METRIC_TAXICAB; met <= NDF_METRIC_CHESSBOARD; met++) {
      o.metric = (ndf_metric)met;
      dist_like(&cd, &m.arr, NDF_INT32);
      dist_like(&cb, &m.arr, NDF_UINT32);
      assert_int_equal(ndf_distance_transform_cdt(ctx, &m.arr, &cd.arr, &ix.arr, &o), NDF_OK);
      assert_int_equal(ndf_distance_transform_bf(ctx, &m.arr, &cb.arr, NULL, &o), NDF_OK);
      for (int64_t i = 0; i < n; i++) {
        int ok = tu_get(&cd.arr, i) == tu_get(&cb.arr, i);
        int64_t f = 0, dist = 0;
        for (int d = 0; d < nd; d++) {
          int64_t q = (int64_t)tu_get(&ix.arr, d * n + i), x = i;
          for (int k = nd - 1; k > d; k--) x /= sh[k];
          x %= sh[d];
          f = f * sh[d] + q;
          int64_t t = llabs(q - x);
          dist = met == NDF_METRIC_TAXICAB ? dist + t : (t > dist ? t : dist);
        }
        ok &= ((uint8_t *)m.arr.data)[f] == 0 && dist == (int64_t)tu_get(&cd.arr, i);
        if (!ok && bad++ < 5)
          printf("cdt %s vs bf: %dD voxel %lld: cdt %g bf %g\n", ndf_metric_name(o.metric), nd, (long long)i,
                 tu_get(&cd.arr, i), tu_get(&cb.arr, i));
      }
      tu_array_free(&cd);
      tu_array_free(&cb);
    }
    tu_array_free(&de);
    tu_array_free(&db);
    tu_array_free(&ix);
    tu_array_free(&m);
  }
  assert_int_equal(bad, 0);
}

/* A long diagonal: one background voxel in the corner of a 600x600 image;
 * cdt chessboard gives max(y, x) and taxicab y + x everywhere (distances up
 * to 1198), edt sqrt(y^2 + x^2). */
static void test_long_paths(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  const int64_t sh[2] = {600, 600};
  tu_array m, d;
  mask(&m, 2, sh, NULL);
  ((uint8_t *)m.arr.data)[0] = 0;
  ndf_distance_options o;
  ndf_distance_options_init(&o);
  dist_like(&d, &m.arr, NDF_INT32);
  for (int met = NDF_METRIC_TAXICAB; met <= NDF_METRIC_CHESSBOARD; met++) {
    o.metric = (ndf_metric)met;
    assert_int_equal(ndf_distance_transform_cdt(ctx, &m.arr, &d.arr, NULL, &o), NDF_OK);
    int bad = 0;
    for (int64_t i = 0; i < 600 * 600; i++) {
      int64_t y = i / 600, x = i % 600;
      bad += (int64_t)tu_get(&d.arr, i) != (met == NDF_METRIC_TAXICAB ? y + x : (y > x ? y : x));
    }
    assert_int_equal(bad, 0);
  }
  tu_array_free(&d);
  dist_like(&d, &m.arr, NDF_FLOAT64);
  o.metric = NDF_METRIC_DEFAULT;
  assert_int_equal(ndf_distance_transform_edt(ctx, &m.arr, &d.arr, NULL, &o), NDF_OK);
  for (int64_t i = 0; i < 600 * 600; i += 7) {
    double y = (double)(i / 600), x = (double)(i % 600);
    assert_true(tu_get(&d.arr, i) == sqrt(y * y + x * x));
  }
  tu_array_free(&d);
  tu_array_free(&m);
}

/* ------------------------------------------------------------------------ */
/* Contract                                                                  */

/* Calls op, requires status want, a message naming the op and containing
 * `part`, and untouched (poisoned) outputs. */
static void expect_reject(ndf_ctx *ctx, op_kind op, const ndf_array *in, tu_array *d, tu_array *ix,
                          const ndf_distance_options *o, ndf_status want, const char *part) {
  if (d) tu_poison(d->base, d->bytes);
  if (ix) tu_poison(ix->base, ix->bytes);
  ndf_status r = fn_of(op)(ctx, in, d ? &d->arr : NULL, ix ? &ix->arr : NULL, o);
  const char *m = ndf_errmsg(ctx);
  if (r != want || !strstr(m, api_of(op)) || !strstr(m, part))
    printf("expected %s with \"%s\" from %s; got %s \"%s\"\n", ndf_status_name(want), part, api_of(op),
           ndf_status_name(r), m);
  assert_int_equal(r, want);
  assert_non_null(strstr(m, api_of(op)));
  assert_non_null(strstr(m, part));
  if (d) assert_int_equal(tu_poison_check(d->base, d->bytes), -1);
  if (ix) assert_int_equal(tu_poison_check(ix->base, ix->bytes), -1);
}

static void test_contract(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  const int64_t sh[3] = {2, 4, 5};
  tu_array m, d64, d32, di, du, ix, bad;
  mask(&m, 3, sh, NULL);
  ((uint8_t *)m.arr.data)[3] = 0;
  dist_like(&d64, &m.arr, NDF_FLOAT64);
  dist_like(&d32, &m.arr, NDF_FLOAT32);
  dist_like(&di, &m.arr, NDF_INT32);
  dist_like(&du, &m.arr, NDF_UINT32);
  idx_like(&ix, &m.arr, 0);
  ndf_distance_options o;
  ndf_distance_options_init(&o);

  assert_int_equal(ndf_distance_transform_edt(NULL, &m.arr, &d64.arr, NULL, &o), NDF_EINVAL);
  expect_reject(ctx, OP_EDT, NULL, &d64, NULL, &o, NDF_EINVAL, "'input'");
  expect_reject(ctx, OP_EDT, &m.arr, &d64, NULL, NULL, NDF_EINVAL, "'options'");
  expect_reject(ctx, OP_CDT, &m.arr, NULL, NULL, &o, NDF_EINVAL, "at least one");
  /* distance dtypes: scipy's */
  expect_reject(ctx, OP_EDT, &m.arr, &di, NULL, &o, NDF_EINVAL, "'distances'");
  expect_reject(ctx, OP_CDT, &m.arr, &d64, &ix, &o, NDF_EINVAL, "int32");
  expect_reject(ctx, OP_BF, &m.arr, &du, NULL, &o, NDF_EINVAL, "float64");
  o.metric = NDF_METRIC_TAXICAB;
  expect_reject(ctx, OP_BF, &m.arr, &d64, NULL, &o, NDF_EINVAL, "uint32");
  o.metric = NDF_METRIC_EUCLIDEAN;
  expect_reject(ctx, OP_CDT, &m.arr, &di, NULL, &o, NDF_EINVAL, "'metric'");
  o.metric = NDF_METRIC_CHESSBOARD;
  expect_reject(ctx, OP_EDT, &m.arr, &d64, NULL, &o, NDF_EINVAL, "'metric'");
  o.metric = (ndf_metric)9;
  expect_reject(ctx, OP_BF, &m.arr, &d64, NULL, &o, NDF_EINVAL, "'metric'");
  o.metric = NDF_METRIC_DEFAULT;
  /* shapes */
  const int64_t sh2[3] = {2, 4, 6};
  assert_int_equal(tu_array_alloc(&bad, NDF_FLOAT64, 3, sh2), 0);
  expect_reject(ctx, OP_EDT, &m.arr, &bad, NULL, &o, NDF_EINVAL, "shape[2]");
  tu_array_free(&bad);
  expect_reject(ctx, OP_EDT, &m.arr, &d64, &d32, &o, NDF_EINVAL, "'indices'");
  const int64_t ish[4] = {2, 2, 4, 5};
  assert_int_equal(tu_array_alloc(&bad, NDF_INT32, 4, ish), 0);
  expect_reject(ctx, OP_EDT, &m.arr, NULL, &bad, &o, NDF_EINVAL, "shape[0]");
  tu_array_free(&bad);
  /* with batch_dims 1 the same indices (3, 2, 4, 5) are wrong: (2, 2, 4, 5) is right */
  o.batch_dims = 1;
  expect_reject(ctx, OP_EDT, &m.arr, NULL, &ix, &o, NDF_EINVAL, "'indices'");
  o.batch_dims = 3;
  expect_reject(ctx, OP_EDT, &m.arr, &d64, NULL, &o, NDF_EINVAL, "'batch_dims'");
  o.batch_dims = -1;
  expect_reject(ctx, OP_CDT, &m.arr, &di, NULL, &o, NDF_EINVAL, "'batch_dims'");
  o.batch_dims = 0;
  /* sampling */
  o.nsampling = 2;
  expect_reject(ctx, OP_EDT, &m.arr, &d64, NULL, &o, NDF_EINVAL, "'sampling'");
  o.nsampling = 3;
  o.sampling[1] = 0.0;
  expect_reject(ctx, OP_EDT, &m.arr, &d64, NULL, &o, NDF_EINVAL, "sampling[1]");
  o.sampling[1] = NAN;
  expect_reject(ctx, OP_BF, &m.arr, &d64, NULL, &o, NDF_EINVAL, "sampling[1]");
  o.sampling[1] = 1.0;
  expect_reject(ctx, OP_CDT, &m.arr, &di, NULL, &o, NDF_EINVAL, "no sampling");
  o.nsampling = 0;
  /* metric structure */
  const int64_t s2[2] = {3, 3}, s3[3] = {3, 3, 2};
  tu_array st;
  mask(&st, 2, s2, NULL);
  o.metric_structure = &st.arr;
  expect_reject(ctx, OP_CDT, &m.arr, &di, NULL, &o, NDF_EINVAL, "rank 2");
  expect_reject(ctx, OP_EDT, &m.arr, &d64, NULL, &o, NDF_EINVAL, "'metric_structure'");
  tu_array_free(&st);
  mask(&st, 3, s3, NULL);
  o.metric_structure = &st.arr;
  expect_reject(ctx, OP_CDT, &m.arr, &di, NULL, &o, NDF_EINVAL, "equal to 3");
  tu_array_free(&st);
  o.metric_structure = NULL;
  /* overlaps: an output over the input, indices over distances */
  ndf_array alias = d64.arr;
  alias.dtype = NDF_FLOAT64;
  ndf_array in_over = d64.arr; /* the distances' own buffer as the input */
  expect_reject(ctx, OP_EDT, &in_over, &d64, NULL, &o, NDF_EINVAL, "overlaps");
  tu_array big;
  const int64_t bsh[1] = {400};
  assert_int_equal(tu_array_alloc(&big, NDF_INT32, 1, bsh), 0);
  tu_array dv = big, iv = big;
  ndf_array_init(&dv.arr, big.arr.data, NDF_DEVICE_CPU, NDF_INT32, 3, sh);
  ndf_array_init(&iv.arr, (int32_t *)big.arr.data + 10, NDF_DEVICE_CPU, NDF_INT32, 4, ix.arr.shape);
  iv.bytes = dv.bytes = 0;
  {
    tu_poison(big.base, big.bytes);
    ndf_status r = ndf_distance_transform_cdt(ctx, &m.arr, &dv.arr, &iv.arr, &o);
    assert_int_equal(r, NDF_EINVAL);
    assert_non_null(strstr(ndf_errmsg(ctx), "overlaps"));
    assert_int_equal(tu_poison_check(big.base, big.bytes), -1);
  }
  tu_array_free(&big);
  /* an output whose strides make elements overlap */
  ndf_array self = d64.arr;
  self.strides[2] = 0;
  tu_poison(d64.base, d64.bytes);
  assert_int_equal(ndf_distance_transform_edt(ctx, &m.arr, &self, NULL, &o), NDF_EINVAL);
  assert_int_equal(tu_poison_check(d64.base, d64.bytes), -1);
  /* NULL data, unknown dtype, CUDA arrays */
  ndf_array nul = m.arr;
  nul.data = NULL;
  expect_reject(ctx, OP_EDT, &nul, &d64, NULL, &o, NDF_EINVAL, "NULL data");
  ndf_array unk = m.arr;
  unk.dtype = (ndf_dtype)77;
  expect_reject(ctx, OP_EDT, &unk, &d64, NULL, &o, NDF_EINVAL, "dtype");
  ndf_array cin = m.arr, cout = d64.arr;
  cin.device = cout.device = NDF_DEVICE_CUDA;
  tu_poison(d64.base, d64.bytes);
  ndf_status r = ndf_distance_transform_edt(ctx, &cin, &cout, NULL, &o);
  assert_true(r == NDF_ENOTSUP || (r == NDF_ENODEV && !ndf_ctx_has_cuda(ctx)));
  assert_non_null(strstr(ndf_errmsg(ctx), "ndf_distance_transform_edt"));
  assert_int_equal(tu_poison_check(d64.base, d64.bytes), -1);
  expect_reject(ctx, OP_EDT, &cin, &d64, NULL, &o, NDF_EINVAL, "another device");
  /* metric names */
  ndf_metric mm;
  assert_int_equal(ndf_metric_from_name("Manhattan", &mm), NDF_OK);
  assert_int_equal(mm, NDF_METRIC_TAXICAB);
  assert_int_equal(ndf_metric_from_name("cityblock", &mm), NDF_OK);
  assert_int_equal(ndf_metric_from_name("chessboard", &mm), NDF_OK);
  assert_int_equal(mm, NDF_METRIC_CHESSBOARD);
  assert_int_equal(ndf_metric_from_name("hamming", &mm), NDF_EINVAL);
  assert_non_null(strstr(ndf_last_error(), "hamming"));
  /* an empty input is fine and writes nothing */
  const int64_t esh[2] = {0, 4};
  tu_array e, ed;
  mask(&e, 2, esh, NULL);
  dist_like(&ed, &e.arr, NDF_FLOAT64);
  assert_int_equal(ndf_distance_transform_edt(ctx, &e.arr, &ed.arr, NULL, &o), NDF_OK);
  tu_array_free(&e);
  tu_array_free(&ed);
  (void)alias;
  tu_array_free(&m);
  tu_array_free(&d64);
  tu_array_free(&d32);
  tu_array_free(&di);
  tu_array_free(&du);
  tu_array_free(&ix);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_scipy_cases),
      cmocka_unit_test(test_scipy_cases_strided),
      cmocka_unit_test(test_scipy_cases_fortran_distances_only),
      cmocka_unit_test(test_scipy_cases_indices_only),
      cmocka_unit_test(test_tie_rules),
      cmocka_unit_test(test_no_background),
      cmocka_unit_test(test_edt_pass),
      cmocka_unit_test(test_fast_against_brute_force),
      cmocka_unit_test(test_long_paths),
      cmocka_unit_test(test_contract),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
