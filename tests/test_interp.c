/*
 * test_interp.c -- the CPU backend of the interpolation family
 * (ndf_spline_filter1d, ndf_spline_filter, ndf_map_coordinates,
 * ndf_affine_transform in its four matrix forms, ndf_shift, ndf_zoom,
 * ndf_rotate) against scipy.ndimage itself, and its contract (every rejected
 * input: NDF_EINVAL, a message naming the function and the argument, an
 * untouched output).
 *
 * The scipy part runs tests/oracle_interp.py with a fresh seed per run
 * (printed; NDF_TEST_SEED repeats a run, NDF_TEST_CASES sets the number of
 * cases): random ops, dtypes, output dtypes, modes, orders 0..5, prefilter
 * on and off, cval, batch axes, and compares ndforge's output with scipy's
 * with the arrays as written and again with the input (and coordinates) in
 * padded / permuted / negative strides and a padded output whose gaps must
 * keep their poison.
 *
 * Tolerance.  Both compute in float64 in scipy's order of operations
 * (affine coordinates, spline weights, taps in raster order, the recursive
 * prefilter), so the outputs are bit for bit scipy's, and the summary counts
 * the cases that are not; the last bits could differ where the C library's
 * pow() (the prefilter's z^n) rounds otherwise than scipy's build's.  Allowed
 * there: a float64 output within
 * 1e-12 (order >= 2 with a prefilter: 1e-10) of max(1, |input|, |cval|);
 * float32 one float32 ulp more; an integer output off by one only where
 * scipy's unrounded value lies within that tolerance of a rounding (or, for
 * the spline filters' truncating cast, an integer) boundary: the oracle
 * saves scipy's unrounded float64 output beside an integer one to tell (for
 * spline_filter, whose passes each round, it cannot: there off-by-one is
 * allowed in at most 1% of a case's elements).
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
#error "NDF_TEST_ORACLE (path of tests/oracle_interp.py) must be defined by the build"
#endif

/* ------------------------------------------------------------------------ */
/* Cases written by the oracle                                               */

enum { OP_SPLINE1D, OP_SPLINE, OP_MAP, OP_AFFINE, OP_SHIFT, OP_ZOOM, OP_ROTATE, OP_COUNT };
static const char *OP_NAMES[OP_COUNT] = {"spline1d", "spline", "map", "affine", "shift", "zoom", "rotate"};

typedef struct ip_case {
  char line[2048];
  int id, op, batch, order, prefilter, axis, grid, reshape, ax0, ax1;
  char mode[24], dtype[16], odtype[16];
  double cval, angle;
  int noffset, nshift, nzoom;
  double offset[NDF_MAX_SPATIAL], shift[NDF_MAX_SPATIAL], zoom[NDF_MAX_SPATIAL];
  char input[64], expected[64], coords[64], matrix[64], unrounded[64];
} ip_case;

typedef tu_oracle_group ip_state;
static ip_case *cases_of(const ip_state *s) { return s->cases; }

static int parse_line(const char *line, void *cv) {
  ip_case *c = cv;
  memset(c, 0, sizeof *c);
  c->op = -1;
  snprintf(c->line, sizeof c->line, "%s", line);
  char buf[2048];
  snprintf(buf, sizeof buf, "%s", line);
  char *save = NULL;
  for (char *tok = strtok_r(buf, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
    char *eq = strchr(tok, '=');
    if (!eq) return -1;
    *eq = 0;
    const char *k = tok, *v = eq + 1;
    if (!strcmp(k, "id")) c->id = atoi(v);
    else if (!strcmp(k, "op")) {
      for (int i = 0; i < OP_COUNT; i++)
        if (!strcmp(v, OP_NAMES[i])) c->op = i;
    } else if (!strcmp(k, "batch")) c->batch = atoi(v);
    else if (!strcmp(k, "order")) c->order = atoi(v);
    else if (!strcmp(k, "prefilter")) c->prefilter = atoi(v);
    else if (!strcmp(k, "axis")) c->axis = atoi(v);
    else if (!strcmp(k, "grid")) c->grid = atoi(v);
    else if (!strcmp(k, "reshape")) c->reshape = atoi(v);
    else if (!strcmp(k, "axes")) {
      if (sscanf(v, "%d,%d", &c->ax0, &c->ax1) != 2) return -1;
    } else if (!strcmp(k, "mode")) snprintf(c->mode, sizeof c->mode, "%s", v);
    else if (!strcmp(k, "odtype")) snprintf(c->odtype, sizeof c->odtype, "%s", v);
    else if (!strcmp(k, "dtype")) snprintf(c->dtype, sizeof c->dtype, "%s", v);
    else if (!strcmp(k, "cval")) c->cval = strtod(v, NULL);
    else if (!strcmp(k, "angle")) c->angle = strtod(v, NULL);
    else if (!strcmp(k, "offset")) c->noffset = tu_parse_f64s(v, c->offset, NDF_MAX_SPATIAL);
    else if (!strcmp(k, "shift")) c->nshift = tu_parse_f64s(v, c->shift, NDF_MAX_SPATIAL);
    else if (!strcmp(k, "zoom")) c->nzoom = tu_parse_f64s(v, c->zoom, NDF_MAX_SPATIAL);
    else if (!strcmp(k, "input")) snprintf(c->input, sizeof c->input, "%s", v);
    else if (!strcmp(k, "expected")) snprintf(c->expected, sizeof c->expected, "%s", v);
    else if (!strcmp(k, "coords")) snprintf(c->coords, sizeof c->coords, "%s", v);
    else if (!strcmp(k, "matrix")) snprintf(c->matrix, sizeof c->matrix, "%s", v);
    else if (!strcmp(k, "unrounded")) snprintf(c->unrounded, sizeof c->unrounded, "%s", v);
  }
  if (c->op < 0 || !c->input[0] || !c->expected[0] || c->noffset < 0 || c->nshift < 0 || c->nzoom < 0) return -1;
  return 0;
}

static int summary(const ip_state *s) {
  int per[OP_COUNT] = {0}, batched = 0, orders[6] = {0};
  for (int i = 0; i < s->ncases; i++) {
    const ip_case *c = &cases_of(s)[i];
    per[c->op]++;
    batched += c->batch > 0;
    if (c->order >= 0 && c->order <= 5) orders[c->order]++;
  }
  printf("%d scipy cases:", s->ncases);
  for (int i = 0; i < OP_COUNT; i++) printf(" %s %d", OP_NAMES[i], per[i]);
  printf("; orders 0..5: %d %d %d %d %d %d; %d batched\n", orders[0], orders[1], orders[2], orders[3], orders[4],
         orders[5], batched);
  return 0;
}

static int group_setup(void **state) {
  return tu_oracle_group_setup(state, "ndf-test-interp", 500, NDF_TEST_PYTHON, NDF_TEST_ORACLE, sizeof(ip_case),
                               parse_line, summary);
}

static ndf_ctx *ctx_of(void **state) { return ((ip_state *)*state)->ctx; }

static int read_npy(const ip_state *s, const char *name, ndfio_image *img) {
  char path[700], err[512];
  snprintf(path, sizeof path, "%s/%s", s->dir, name);
  ndf_status st = ndfio_npy_read(path, img, err, sizeof err);
  if (st != NDF_OK) {
    fprintf(stderr, "ndfio_npy_read(%s): %s: %s\n", path, ndf_status_name(st), err);
    return -1;
  }
  return 0;
}

/* Calls the ndforge function of case c. */
static ndf_status call_case(ndf_ctx *ctx, const ip_case *c, const ndf_array *in, const ndf_array *coords,
                            const ndf_array *matrix, ndf_array *out) {
  ndf_interp_mode mode;
  if (ndf_interp_mode_from_name(c->mode, &mode) != NDF_OK) return NDF_EINVAL;
  ndf_interp_options o;
  ndf_interp_options_init(&o);
  o.order = c->order;
  o.mode = mode;
  o.cval = c->cval;
  o.prefilter = c->prefilter;
  o.batch_dims = c->batch;
  switch (c->op) {
    case OP_SPLINE1D: return ndf_spline_filter1d(ctx, in, out, c->order, c->axis, mode);
    case OP_SPLINE: return ndf_spline_filter(ctx, in, out, c->order, mode, c->batch);
    case OP_MAP: return ndf_map_coordinates(ctx, in, coords, out, &o);
    case OP_AFFINE: return ndf_affine_transform(ctx, in, matrix, c->noffset, c->offset, out, &o);
    case OP_SHIFT: return ndf_shift(ctx, in, out, c->nshift, c->shift, &o);
    case OP_ZOOM: return ndf_zoom(ctx, in, out, c->nzoom, c->zoom, c->grid, &o);
    default: return ndf_rotate(ctx, in, out, c->angle, c->ax0, c->ax1, c->reshape, &o);
  }
}

/* Element i as a double; a bool as its byte (scipy reads and writes a bool as its byte). */
static double get_raw(const ndf_array *a, int64_t i) {
  if (a->dtype != NDF_BOOL) return tu_get(a, i);
  ndf_array u = *a;
  u.dtype = NDF_UINT8;
  return tu_get(&u, i);
}

/* Compares got with scipy's want under the tolerance of the file comment.
 * Returns the number of elements out of tolerance; *inexact counts elements
 * that differ at all. */
static int64_t compare(const ip_case *c, const ndf_array *in, const ndf_array *want, const ndf_array *unrounded,
                       const ndf_array *got, int64_t *inexact, char *msg, size_t len) {
  double scale = fmax(1.0, fabs(c->cval));
  const int64_t nin = ndf_array_size(in), n = ndf_array_size(want);
  for (int64_t i = 0; i < nin; i++) scale = fmax(scale, fabs(get_raw(in, i)));
  const int filtered = c->order >= 2 && (c->prefilter || c->op == OP_SPLINE || c->op == OP_SPLINE1D);
  const double tol = scale * (filtered ? 1e-10 : 1e-12);
  const int isint = !tu_is_float(want->dtype), isbool = want->dtype == NDF_BOOL;
  int64_t bad = 0, off1 = 0;
  *inexact = 0;
  for (int64_t i = 0; i < n; i++) {
    const double w = get_raw(want, i), g = get_raw(got, i);
    if (w == g || (w != w && g != g)) continue;
    ++*inexact;
    double allow = tol;
    if (want->dtype == NDF_FLOAT32) allow += fabs(nextafterf((float)w, INFINITY) - (float)w);
    int ok;
    if (isint && unrounded) {
      /* off by one only where scipy's unrounded value is within tol of the
       * boundary: a half integer (rounding) or an integer (the spline
       * filter's truncating cast, a bool's; its byte wraps around) */
      const double f = tu_get(unrounded, i), b = c->op == OP_SPLINE1D || isbool ? round(f) : floor(f) + 0.5;
      ok = (fabs(w - g) <= 1 || (isbool && fabs(w - g) == 255)) && fabs(f - b) <= tol;
    } else if (want->dtype == NDF_INT64 || want->dtype == NDF_UINT64) {
      ok = fabs(w - g) <= fmax(1.0, tol); /* values near 2^60 round in double as floats do */
    } else if (isint) {
      ok = fabs(w - g) <= 1 && ++off1 * 100 <= n;
    }
    else ok = fabs(w - g) <= allow;
    if (!ok && bad++ == 0)
      snprintf(msg, len, "element %lld: want %.17g, got %.17g (tolerance %.3g)", (long long)i, w, g,
               isint ? 1.0 : allow);
  }
  return bad;
}

enum { V_ASIS, V_STRIDED };
static const char *VARIANT_NAMES[] = {"arrays as read, C output", "strided input and coordinates, padded output"};

typedef struct run_stats {
  int exact, close;
} run_stats;

static int run_case(ip_state *s, const ip_case *c, int v, tu_rng *rng, int verbose, run_stats *st) {
  char msg[2048] = "";
  int rc = -1;
  ndfio_image in = {0}, exp = {0}, co = {0}, mat = {0}, unr = {0};
  tu_array il = {0}, cl = {0}, out = {0};
  if (read_npy(s, c->input, &in) || read_npy(s, c->expected, &exp)) goto done;
  if (c->coords[0] && read_npy(s, c->coords, &co)) goto done;
  if (c->matrix[0] && read_npy(s, c->matrix, &mat)) goto done;
  if (c->unrounded[0] && read_npy(s, c->unrounded, &unr)) goto done;
  /* bool arrays come as their bytes (uint8) */
  if (!strcmp(c->dtype, "bool")) in.arr.dtype = NDF_BOOL;
  if (!strcmp(c->odtype, "bool")) exp.arr.dtype = NDF_BOOL;
  const ndf_array *pi = &in.arr, *pc = c->coords[0] ? &co.arr : NULL;
  if (v == V_STRIDED) {
    const int lay = TU_LAYOUT_PADDED | TU_LAYOUT_NEGATIVE | TU_LAYOUT_OFFSET;
    if (tu_array_relayout(&il, &in.arr, lay, rng)) goto done;
    pi = &il.arr;
    if (pc) {
      if (tu_array_relayout(&cl, &co.arr, lay, rng)) goto done;
      pc = &cl.arr;
    }
  }
  ndf_array like = exp.arr; /* the output's dtype is odtype */
  if (tu_array_like(&out, &like, v == V_STRIDED ? TU_LAYOUT_PADDED : TU_LAYOUT_C, rng)) goto done;
  ndf_status r = call_case(s->ctx, c, pi, pc, c->matrix[0] ? &mat.arr : NULL, &out.arr);
  if (r != NDF_OK) {
    snprintf(msg, sizeof msg, "returned %s: %s", ndf_status_name(r), ndf_errmsg(s->ctx));
    goto done;
  }
  char detail[512] = "";
  int64_t inexact;
  int64_t bad = compare(c, &in.arr, &exp.arr, c->unrounded[0] ? &unr.arr : NULL, &out.arr, &inexact, detail, sizeof detail);
  if (bad) {
    snprintf(msg, sizeof msg, "%lld of %lld values differ from scipy's (%s output): %s", (long long)bad,
             (long long)ndf_array_size(&exp.arr), ndf_dtype_name(out.arr.dtype), detail);
    goto done;
  }
  if (inexact) st->close++;
  else st->exact++;
  int64_t gap = tu_check_gaps(&out);
  if (gap >= 0) {
    snprintf(msg, sizeof msg, "wrote outside the output's elements (buffer byte %lld)", (long long)gap);
    goto done;
  }
  rc = 0;
done:
  if (rc != 0 && verbose) printf("FAIL case %d (%s): %s\n  %s\n", c->id, VARIANT_NAMES[v], c->line, msg);
  ndfio_image_free(&in);
  ndfio_image_free(&exp);
  ndfio_image_free(&co);
  ndfio_image_free(&mat);
  ndfio_image_free(&unr);
  tu_array_free(&il);
  tu_array_free(&cl);
  tu_array_free(&out);
  return rc;
}

static void run_all(void **state, int v) {
  ip_state *s = *state;
  tu_rng rng;
  tu_rng_seed(&rng, s->seed * 41u + (uint64_t)v);
  int failed = 0;
  run_stats st = {0, 0};
  for (int i = 0; i < s->ncases; i++) failed += run_case(s, &cases_of(s)[i], v, &rng, failed < 12, &st) != 0;
  printf("%s: %d cases bit for bit, %d within tolerance, %d failed\n", VARIANT_NAMES[v], st.exact, st.close, failed);
  if (failed) {
    s->keep_dir = 1;
    printf("%d of %d scipy cases failed (%s); seed %llu, cases in %s\n", failed, s->ncases, VARIANT_NAMES[v],
           (unsigned long long)s->seed, s->dir);
  }
  assert_int_equal(failed, 0);
}

static void test_scipy_cases(void **state) { run_all(state, V_ASIS); }
static void test_scipy_cases_strided(void **state) { run_all(state, V_STRIDED); }

/* ------------------------------------------------------------------------ */
/* Known values                                                              */

/* Order-1 zoom of [0, 10] by 5/2 (scipy: [0, 2.5, 5, 7.5, 10]); shift of a ramp; rotate by 90 of a 2x3. */
static void test_known_values(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  const int64_t s2[1] = {2}, s5[1] = {5};
  tu_array a, o;
  assert_int_equal(tu_array_alloc(&a, NDF_FLOAT64, 1, s2), 0);
  assert_int_equal(tu_array_alloc(&o, NDF_FLOAT64, 1, s5), 0);
  tu_set(&a.arr, 0, 0);
  tu_set(&a.arr, 1, 10);
  ndf_interp_options opt;
  ndf_interp_options_init(&opt);
  opt.order = 1;
  const double z = 2.5;
  int64_t zs[1];
  assert_int_equal(ndf_zoom_shape(1, s2, 0, 1, &z, zs), NDF_OK);
  assert_int_equal(zs[0], 5);
  assert_int_equal(ndf_zoom(ctx, &a.arr, &o.arr, 1, &z, 0, &opt), NDF_OK);
  for (int i = 0; i < 5; i++) assert_true(tu_get(&o.arr, i) == 2.5 * i);
  tu_array_free(&a);
  tu_array_free(&o);

  const int64_t s23[2] = {2, 3}, s32[2] = {3, 2};
  tu_array r, ro;
  assert_int_equal(tu_array_alloc(&r, NDF_INT16, 2, s23), 0);
  assert_int_equal(tu_array_alloc(&ro, NDF_INT16, 2, s32), 0);
  for (int i = 0; i < 6; i++) tu_set(&r.arr, i, i + 1);
  int64_t rs[2];
  assert_int_equal(ndf_rotate_shape(2, s23, 0, 90.0, 1, 0, 1, rs), NDF_OK);
  assert_int_equal(rs[0], 3);
  assert_int_equal(rs[1], 2);
  assert_int_equal(ndf_rotate(ctx, &r.arr, &ro.arr, 90.0, 1, 0, 1, NULL), NDF_OK);
  /* numpy.rot90([[1,2,3],[4,5,6]]) = [[3,6],[2,5],[1,4]] */
  const double want[6] = {3, 6, 2, 5, 1, 4};
  for (int i = 0; i < 6; i++) assert_true(tu_get(&ro.arr, i) == want[i]);
  tu_array_free(&r);
  tu_array_free(&ro);

  /* Empty inputs (scipy's results): zoom keeps the empty axis and zooms the others; rotate of a 0x5
   * plane with reshape has a 2x4 output of points outside the input, cval in the constant mode (an
   * integer output rounded), NDF_EINVAL in a mode that maps them onto samples that do not exist. */
  const int64_t s05[2] = {0, 5}, s010[2] = {0, 10}, s24[2] = {2, 4};
  tu_array e, eo, er;
  assert_int_equal(tu_array_alloc(&e, NDF_FLOAT32, 2, s05), 0);
  assert_int_equal(tu_array_alloc(&eo, NDF_FLOAT32, 2, s010), 0);
  assert_int_equal(tu_array_alloc(&er, NDF_INT16, 2, s24), 0);
  const double z2 = 2.0;
  int64_t zs2[2];
  assert_int_equal(ndf_zoom_shape(2, s05, 0, 1, &z2, zs2), NDF_OK);
  assert_true(zs2[0] == 0 && zs2[1] == 10);
  assert_int_equal(ndf_zoom(ctx, &e.arr, &eo.arr, 1, &z2, 0, NULL), NDF_OK);
  assert_int_equal(ndf_rotate_shape(2, s05, 0, 30.0, 1, 0, 1, rs), NDF_OK);
  assert_true(rs[0] == 2 && rs[1] == 4);
  ndf_interp_options_init(&opt);
  opt.cval = 7.5;
  assert_int_equal(ndf_rotate(ctx, &e.arr, &er.arr, 30.0, 1, 0, 1, &opt), NDF_OK);
  for (int i = 0; i < 8; i++) assert_true(tu_get(&er.arr, i) == 8);
  opt.mode = NDF_INTERP_REFLECT;
  assert_int_equal(ndf_rotate(ctx, &e.arr, &er.arr, 30.0, 1, 0, 1, &opt), NDF_EINVAL);
  assert_non_null(strstr(ndf_errmsg(ctx), "empty"));
  tu_array_free(&e);
  tu_array_free(&eo);
  tu_array_free(&er);
}

/* A bool output as scipy 1.10 stores it (npy_bool, C's cast on x86-64: truncation to int32, its low byte;
 * no rounding, no clamping); a spline filter of order <= 1 copies with NumPy's casts (v != 0; a bool
 * input's bytes as 0 or 1 into another dtype, as they are into a bool). */
static void test_bool_known_values(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  const double v[] = {0.49, 0.5, 0.9, 1.0, 1.7, 2.0, 255.9, 256.2, 300.5, -0.3, -0.99, -1.0, -1.5, -255.5,
                      2147483651.0, 4294967299.0, -2147483653.0, 1e20, NAN, INFINITY, -INFINITY};
  const uint8_t want[] = {0, 0, 0, 1, 1, 2, 255, 0, 44, 0, 0, 255, 255, 1, 0, 0, 0, 0, 0, 0, 0};
  enum { N = sizeof v / sizeof v[0] };
  const int64_t sh[1] = {N}, csh[2] = {1, N};
  tu_array a, co, o, ob, u8;
  assert_int_equal(tu_array_alloc(&a, NDF_FLOAT64, 1, sh), 0);
  assert_int_equal(tu_array_alloc(&co, NDF_FLOAT64, 2, csh), 0);
  assert_int_equal(tu_array_alloc(&o, NDF_BOOL, 1, sh), 0);
  for (int i = 0; i < N; i++) {
    tu_set(&a.arr, i, v[i]);
    tu_set(&co.arr, i, i);
  }
  ndf_interp_options opt;
  ndf_interp_options_init(&opt);
  for (int order = 0; order <= 1; order++) {
    opt.order = order;
    assert_int_equal(ndf_map_coordinates(ctx, &a.arr, &co.arr, &o.arr, &opt), NDF_OK);
    assert_memory_equal(o.arr.data, want, N);
    const double zero = 0;
    assert_int_equal(ndf_shift(ctx, &a.arr, &o.arr, 1, &zero, &opt), NDF_OK);
    assert_memory_equal(o.arr.data, want, N);
  }
  /* spline_filter1d of order 0 into a bool: NumPy's cast (NaN and -0.3 are true) */
  assert_int_equal(ndf_spline_filter1d(ctx, &a.arr, &o.arr, 0, -1, NDF_INTERP_MIRROR), NDF_OK);
  for (int i = 0; i < N; i++) assert_int_equal(((const uint8_t *)o.arr.data)[i], v[i] != 0);
  /* a bool holding the byte 44: read as 44 by the transforms, copied as it is into a bool and as 1 into uint8 */
  const int64_t s3[1] = {3};
  assert_int_equal(tu_array_alloc(&ob, NDF_BOOL, 1, s3), 0);
  assert_int_equal(tu_array_alloc(&u8, NDF_UINT8, 1, s3), 0);
  uint8_t *bb = ob.arr.data;
  bb[0] = 0;
  bb[1] = 44;
  bb[2] = 1;
  tu_array ob2;
  assert_int_equal(tu_array_alloc(&ob2, NDF_BOOL, 1, s3), 0);
  assert_int_equal(ndf_spline_filter1d(ctx, &ob.arr, &ob2.arr, 1, 0, NDF_INTERP_MIRROR), NDF_OK);
  assert_memory_equal(ob2.arr.data, bb, 3);
  assert_int_equal(ndf_spline_filter1d(ctx, &ob.arr, &u8.arr, 0, 0, NDF_INTERP_MIRROR), NDF_OK);
  const uint8_t nz[3] = {0, 1, 1};
  assert_memory_equal(u8.arr.data, nz, 3);
  opt.order = 1;
  const double half = 0.5;
  assert_int_equal(ndf_shift(ctx, &ob.arr, &u8.arr, 1, &half, &opt), NDF_OK);
  const uint8_t sh44[3] = {0, 22, 23}; /* 0, (0 + 44) / 2, (44 + 1) / 2 = 22.5 rounded half away from zero */
  assert_memory_equal(u8.arr.data, sh44, 3);
  tu_array *all[] = {&a, &co, &o, &ob, &u8, &ob2};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tu_array_free(all[i]);
}

/* ------------------------------------------------------------------------ */
/* Contract                                                                   */

/* The call must return st with a message naming api and containing part,
 * and leave the (poisoned) output untouched. */
#define EXPECT_REJECT(call, api, part, outp)                                                            \
  do {                                                                                                 \
    tu_poison((outp)->base, (outp)->bytes);                                                            \
    ndf_status r_ = (call);                                                                            \
    const char *m_ = ndf_errmsg(ctx);                                                                  \
    if (r_ != NDF_EINVAL || !strstr(m_, api) || !strstr(m_, part)) {                                   \
      printf("%s:%d: want NDF_EINVAL naming %s and \"%s\"; got %s \"%s\"\n", __FILE__, __LINE__, api,  \
             part, ndf_status_name(r_), m_);                                                           \
      fail();                                                                                          \
    }                                                                                                  \
    assert_int_equal(tu_poison_check((outp)->base, (outp)->bytes), -1);                                \
  } while (0)

static void test_contract(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  const int64_t sh[2] = {4, 5}, s1[1] = {4};
  tu_array in, out, m22, m33, m23, m32, m2, m3, mbad, o0, co, o4;
  assert_int_equal(tu_array_alloc(&in, NDF_FLOAT32, 2, sh), 0);
  assert_int_equal(tu_array_alloc(&out, NDF_FLOAT32, 2, sh), 0);
  const int64_t d22[2] = {2, 2}, d33[2] = {3, 3}, d23[2] = {2, 3}, d32[2] = {3, 2}, d2[1] = {2}, d3[1] = {3};
  assert_int_equal(tu_array_alloc(&m22, NDF_FLOAT64, 2, d22), 0);
  assert_int_equal(tu_array_alloc(&m33, NDF_FLOAT64, 2, d33), 0);
  assert_int_equal(tu_array_alloc(&m23, NDF_FLOAT64, 2, d23), 0);
  assert_int_equal(tu_array_alloc(&m32, NDF_FLOAT64, 2, d32), 0);
  assert_int_equal(tu_array_alloc(&m2, NDF_FLOAT64, 1, d2), 0);
  assert_int_equal(tu_array_alloc(&m3, NDF_FLOAT64, 1, d3), 0);
  assert_int_equal(tu_array_alloc(&mbad, NDF_FLOAT64, 2, d33), 0);
  for (int i = 0; i < 2; i++) {
    tu_set(&m22.arr, i * 3, 1);
    tu_set(&m2.arr, i, 1);
    tu_set(&m23.arr, i * 4, 1);
  }
  for (int i = 0; i < 3; i++) tu_set(&m33.arr, i * 4, 1);
  for (int i = 0; i < 9; i++) tu_set(&mbad.arr, i, 1); /* bottom row (1, 1, 1) */
  ndf_interp_options o;
  ndf_interp_options_init(&o);
  /* The good calls of every form. */
  assert_int_equal(ndf_affine_transform(ctx, &in.arr, &m22.arr, 0, NULL, &out.arr, &o), NDF_OK);
  assert_int_equal(ndf_affine_transform(ctx, &in.arr, &m33.arr, 0, NULL, &out.arr, &o), NDF_OK);
  assert_int_equal(ndf_affine_transform(ctx, &in.arr, &m23.arr, 0, NULL, &out.arr, &o), NDF_OK);
  assert_int_equal(ndf_affine_transform(ctx, &in.arr, &m2.arr, 0, NULL, &out.arr, &o), NDF_OK);
  assert_string_equal(ndf_errmsg(ctx), "");

  const char *A = "ndf_affine_transform";
  EXPECT_REJECT(ndf_affine_transform(ctx, &in.arr, &m32.arr, 0, NULL, &out.arr, &o), A, "'matrix'", &out);
  EXPECT_REJECT(ndf_affine_transform(ctx, &in.arr, &m3.arr, 0, NULL, &out.arr, &o), A, "'matrix'", &out);
  EXPECT_REJECT(ndf_affine_transform(ctx, &in.arr, &mbad.arr, 0, NULL, &out.arr, &o), A, "bottom row", &out);
  const double off3[3] = {1, 2, 3};
  EXPECT_REJECT(ndf_affine_transform(ctx, &in.arr, &m22.arr, 3, off3, &out.arr, &o), A, "'offset'", &out);
  o.order = 6;
  EXPECT_REJECT(ndf_affine_transform(ctx, &in.arr, &m22.arr, 0, NULL, &out.arr, &o), A, "'order'", &out);
  o.order = -1;
  EXPECT_REJECT(ndf_shift(ctx, &in.arr, &out.arr, 1, off3, &o), "ndf_shift", "'order'", &out);
  o.order = 3;
  o.mode = (ndf_interp_mode)7;
  EXPECT_REJECT(ndf_shift(ctx, &in.arr, &out.arr, 1, off3, &o), "ndf_shift", "'mode'", &out);
  o.mode = NDF_INTERP_CONSTANT;
  ndf_interp_mode md;
  assert_int_equal(ndf_interp_mode_from_name("grid-mirror", &md), NDF_OK);
  assert_int_equal(md, NDF_INTERP_REFLECT);
  assert_int_equal(ndf_interp_mode_from_name("edge", &md), NDF_EINVAL);
  EXPECT_REJECT(ndf_spline_filter(ctx, &in.arr, &out.arr, 6, NDF_INTERP_MIRROR, 0), "ndf_spline_filter", "'order'", &out);
  EXPECT_REJECT(ndf_spline_filter1d(ctx, &in.arr, &out.arr, 3, 2, NDF_INTERP_MIRROR), "ndf_spline_filter1d", "'axis'",
                &out);
  /* zoom to an empty axis needs the empty output (scipy's); a wrong output shape, a negative or NaN factor */
  const double zsmall[2] = {0.1, 1.0}, zbig[2] = {2.0, 1.0}, zneg = -1, znan = NAN;
  assert_int_equal(tu_array_alloc(&o0, NDF_FLOAT32, 2, sh), 0);
  EXPECT_REJECT(ndf_zoom(ctx, &in.arr, &o0.arr, 2, zsmall, 0, &o), "ndf_zoom", "'output'", &o0);
  EXPECT_REJECT(ndf_zoom(ctx, &in.arr, &o0.arr, 2, zbig, 0, &o), "ndf_zoom", "'output'", &o0);
  EXPECT_REJECT(ndf_zoom(ctx, &in.arr, &o0.arr, 1, &zneg, 0, &o), "ndf_zoom", "'zoom'", &o0);
  EXPECT_REJECT(ndf_zoom(ctx, &in.arr, &o0.arr, 1, &znan, 0, &o), "ndf_zoom", "'zoom'", &o0);
  int64_t zs[2];
  assert_int_equal(ndf_zoom_shape(2, sh, 0, 2, zsmall, zs), NDF_OK);
  assert_int_equal(zs[0], 0);
  assert_int_equal(zs[1], 5);
  /* rotate needs two distinct spatial axes */
  EXPECT_REJECT(ndf_rotate(ctx, &in.arr, &out.arr, 30, 1, 1, 0, &o), "ndf_rotate", "'axes'", &out);
  tu_array in1;
  assert_int_equal(tu_array_alloc(&in1, NDF_FLOAT32, 1, s1), 0);
  assert_int_equal(tu_array_alloc(&o4, NDF_FLOAT32, 1, s1), 0);
  EXPECT_REJECT(ndf_rotate(ctx, &in1.arr, &o4.arr, 30, 0, 1, 0, &o), "ndf_rotate", "'input'", &o4);
  /* map_coordinates: coordinates of the wrong leading extent */
  const int64_t cs[3] = {3, 4, 5};
  assert_int_equal(tu_array_alloc(&co, NDF_FLOAT64, 3, cs), 0);
  EXPECT_REJECT(ndf_map_coordinates(ctx, &in.arr, &co.arr, &out.arr, &o), "ndf_map_coordinates", "'coordinates'",
                &out);
  /* output overlapping the input, an unknown input dtype */
  EXPECT_REJECT(ndf_shift(ctx, &in.arr, &in.arr, 1, off3, &o), "ndf_shift", "overlaps", &in);
  ndf_array x = in.arr;
  x.dtype = NDF_DTYPE_COUNT;
  EXPECT_REJECT(ndf_shift(ctx, &x, &out.arr, 1, off3, &o), "ndf_shift", "'input'", &out);
  tu_array *all[] = {&in, &out, &m22, &m33, &m23, &m32, &m2, &m3, &mbad, &o0, &co, &o4, &in1};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tu_array_free(all[i]);
}

/* spline_filter1d of order 0 or 1 copies (scipy 1.10: output[...] = numpy.array(input)) before it
 * reads axis or mode: any axis and mode pass, and a rank-0 input is copied into a rank-0 output.  From
 * order 2 both are checked, and a rank-0 input is refused (scipy: numpy's AxisError). */
static void test_spline_filter1d_copies_without_axis_or_mode(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  const int64_t sh[2] = {3, 4};
  tu_array a, o;
  assert_int_equal(tu_array_alloc(&a, NDF_FLOAT64, 2, sh), 0);
  assert_int_equal(tu_array_alloc(&o, NDF_INT16, 2, sh), 0);
  for (int i = 0; i < 12; i++) tu_set(&a.arr, i, i * 1.75 - 6);
  const int axes[4] = {-7, -3, 2, 99};
  for (int order = 0; order <= 1; order++)
    for (int k = 0; k < 4; k++) {
      tu_poison(o.base, o.bytes);
      assert_int_equal(ndf_spline_filter1d(ctx, &a.arr, &o.arr, order, axes[k], (ndf_interp_mode)42), NDF_OK);
      for (int i = 0; i < 12; i++) assert_true(tu_get(&o.arr, i) == (double)(int16_t)(i * 1.75 - 6));
    }
  EXPECT_REJECT(ndf_spline_filter1d(ctx, &a.arr, &o.arr, 2, 2, NDF_INTERP_MIRROR), "ndf_spline_filter1d", "'axis'",
                &o);
  EXPECT_REJECT(ndf_spline_filter1d(ctx, &a.arr, &o.arr, 2, 0, (ndf_interp_mode)42), "ndf_spline_filter1d", "'mode'",
                &o);
  float x = 2.75f;
  int32_t y = -1;
  ndf_array x0, y0;
  assert_int_equal(ndf_array_init(&x0, &x, NDF_DEVICE_CPU, NDF_FLOAT32, 0, NULL), NDF_OK);
  assert_int_equal(ndf_array_init(&y0, &y, NDF_DEVICE_CPU, NDF_INT32, 0, NULL), NDF_OK);
  for (int order = 0; order <= 1; order++) {
    y = -1;
    assert_int_equal(ndf_spline_filter1d(ctx, &x0, &y0, order, 5, NDF_INTERP_MIRROR), NDF_OK);
    assert_int_equal(y, 2);
  }
  y = -1;
  assert_int_not_equal(ndf_spline_filter1d(ctx, &x0, &y0, 2, 0, NDF_INTERP_MIRROR), NDF_OK);
  assert_int_equal(y, -1);
  tu_array_free(&a);
  tu_array_free(&o);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_scipy_cases),
      cmocka_unit_test(test_scipy_cases_strided),
      cmocka_unit_test(test_known_values),
      cmocka_unit_test(test_bool_known_values),
      cmocka_unit_test(test_contract),
      cmocka_unit_test(test_spline_filter1d_copies_without_axis_or_mode),
  };
  return cmocka_run_group_tests(tests, group_setup, tu_oracle_group_teardown);
}
