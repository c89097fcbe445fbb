/*
 * test_label.c -- the CPU backend of ndf_label (scipy.ndimage.label, batched)
 * against scipy.ndimage itself, plus hand-written cases (empty and full
 * images, checkerboards, NaN and negative foreground, labels merged late in
 * raster order, "insufficient bit-depth", the scan order of Fortran and
 * reversed outputs with scipy's fallback to raster order, bool outputs) and
 * the contract (every rejected
 * input: status, a message naming ndf_label and the argument, an untouched
 * output).
 *
 * The scipy part runs tests/oracle_label.py with a fresh seed per run
 * (printed; NDF_TEST_SEED repeats a run, NDF_TEST_CASES sets the number of
 * random cases), reads the cases it wrote and requires ndforge's labels to
 * equal scipy's exactly, and num_features to equal scipy's count of every
 * image, with the input as written, in Fortran order and embedded in a
 * larger buffer with permuted / padded / negative strides (the structure
 * too), and with C, Fortran and strided outputs (whose gaps must keep their
 * poison) of int32 and of the case's second output dtype (uint8 ... float64).
 * scipy numbers features in the scan order of its output's memory layout, so
 * the oracle labels into each layout itself: a Fortran-ordered output and
 * one with strides it draws (axes in random memory order, padded).
 * Where scipy refuses that dtype ("insufficient bit-depth"), ndforge must
 * return NDF_EINVAL and leave the output untouched.  The oracle's directory
 * is kept when a case fails, and its path printed.
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
#include <unistd.h>

#include "ndfio.h"
#include "ndforge.h"
#include "testutil.h"

#ifndef NDF_TEST_PYTHON
#error "NDF_TEST_PYTHON (a python3 with numpy and scipy) must be defined by the build"
#endif
#ifndef NDF_TEST_ORACLE
#error "NDF_TEST_ORACLE (path of tests/oracle_label.py) must be defined by the build"
#endif

#define API "ndf_label"
#define MAX_COUNTS 64
/* num_features entries nobody may write: a pattern no count can have */
#define NF_SENTINEL ((int64_t)0x5A5A5A5A5A5A5A5Aull)

/* ------------------------------------------------------------------------ */
/* Cases written by the oracle                                               */

typedef struct lab_case {
  char line[2048]; /* the manifest line, for messages */
  int id;
  char dtype[16];
  int ndim;
  int64_t shape[NDF_MAX_NDIM];
  int batch;
  char out_dtype[16];
  int out_fits;
  int64_t maxcount;
  int ncounts;
  int64_t counts[MAX_COUNTS];
  char structure[64], input[64], expected[64];
  int64_t ostrides[NDF_MAX_NDIM]; /* the strided outputs' element strides */
  char expected_f[64], expected_s[64], expected_si[64]; /* scipy's labels in Fortran and strided outputs */
} lab_case;

typedef tu_oracle_group lab_state; /* cases: lab_case records */
static lab_case *cases_of(const lab_state *s) { return s->cases; }

/* "3,5,0" into out; "" is an empty list.  Returns the count or -1. */
static int parse_case(const char *line, lab_case *c) {
  memset(c, 0, sizeof *c);
  c->batch = -1;
  c->ncounts = -1;
  c->out_fits = -1;
  int nstr = -1;
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
    else if (!strcmp(k, "dtype")) snprintf(c->dtype, sizeof c->dtype, "%s", v);
    else if (!strcmp(k, "shape")) c->ndim = tu_parse_i64s(v, c->shape, NDF_MAX_NDIM);
    else if (!strcmp(k, "batch")) c->batch = atoi(v);
    else if (!strcmp(k, "out_dtype")) snprintf(c->out_dtype, sizeof c->out_dtype, "%s", v);
    else if (!strcmp(k, "out_fits")) c->out_fits = atoi(v);
    else if (!strcmp(k, "max")) c->maxcount = strtoll(v, NULL, 10);
    else if (!strcmp(k, "counts")) c->ncounts = tu_parse_i64s(v, c->counts, MAX_COUNTS);
    else if (!strcmp(k, "structure")) snprintf(c->structure, sizeof c->structure, "%s", v);
    else if (!strcmp(k, "input")) snprintf(c->input, sizeof c->input, "%s", v);
    else if (!strcmp(k, "expected")) snprintf(c->expected, sizeof c->expected, "%s", v);
    else if (!strcmp(k, "expected_f")) snprintf(c->expected_f, sizeof c->expected_f, "%s", v);
    else if (!strcmp(k, "expected_s")) snprintf(c->expected_s, sizeof c->expected_s, "%s", v);
    else if (!strcmp(k, "expected_si")) snprintf(c->expected_si, sizeof c->expected_si, "%s", v);
    else if (!strcmp(k, "ostrides")) nstr = tu_parse_i64s(v, c->ostrides, NDF_MAX_NDIM);
    /* unknown keys are informational */
  }
  if (c->ndim <= 0 || c->batch < 0 || c->batch >= c->ndim || c->ncounts < 0 || c->out_fits < 0) return -1;
  if (nstr != c->ndim || !c->expected_si[0] || (c->out_fits && (!c->expected_f[0] || !c->expected_s[0]))) return -1;
  int64_t nimg = 1;
  for (int d = 0; d < c->batch; d++) nimg *= c->shape[d];
  if (nimg != c->ncounts) return -1;
  ndf_dtype t;
  if (ndf_dtype_from_name(c->out_dtype, &t) != NDF_OK) return -1;
  return c->input[0] && c->expected[0] ? 0 : -1;
}


static int parse_line(const char *line, void *c) { return parse_case(line, c); }

static int summary(const lab_state *s) {
  int batched = 0, nofit = 0, nost = 0;
  int64_t most = 0;
  for (int i = 0; i < s->ncases; i++) {
    batched += cases_of(s)[i].batch > 0;
    nofit += !cases_of(s)[i].out_fits;
    nost += !cases_of(s)[i].structure[0];
    if (cases_of(s)[i].maxcount > most) most = cases_of(s)[i].maxcount;
  }
  printf("%d scipy cases: %d batched, %d with the default structure, %d where the second output dtype is too "
         "small, at most %lld features in one image\n",
         s->ncases, batched, nost, nofit, (long long)most);
  return 0;
}

static int group_setup(void **state) {
  return tu_oracle_group_setup(state, "ndf-test-label", 600, NDF_TEST_PYTHON, NDF_TEST_ORACLE, sizeof(lab_case), parse_line, summary);
}
#define group_teardown tu_oracle_group_teardown

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

static size_t arr_bytes(const ndf_array *a) { return (size_t)ndf_array_size(a) * ndf_dtype_size(a->dtype); }

/* The largest label a dtype holds exactly. */
static double dtype_max_label(ndf_dtype t) {
  switch (t) {
    case NDF_FLOAT32: return 16777216.0;
    case NDF_FLOAT64: return 9007199254740992.0;
    default: {
      double lo, hi;
      tu_int_range(t, &lo, &hi);
      return hi;
    }
  }
}

/* Compares labels (any dtype, any strides) with expected labels (any dtype):
 * expected is converted to got's dtype, then compared bit for bit (a float
 * 0 label must be +0.0).  Returns the number of differences. */
static int64_t compare_labels(const ndf_array *expected, const ndf_array *got, char *msg, size_t len) {
  tu_array conv;
  if (tu_array_alloc(&conv, got->dtype, expected->ndim, expected->shape) != 0) {
    snprintf(msg, len, "out of memory");
    return -1;
  }
  int64_t n = ndf_array_size(expected);
  for (int64_t i = 0; i < n; i++) tu_set(&conv.arr, i, tu_get(expected, i));
  int64_t bad = tu_compare(&conv.arr, got, msg, len);
  tu_array_free(&conv);
  return bad;
}

/* Checks num_features: want[0..n) then untouched sentinels. */
static int check_counts(const int64_t *nf, const int64_t *want, int n, char *msg, size_t len) {
  for (int i = 0; i < n; i++) {
    if (nf[i] != want[i]) {
      snprintf(msg, len, "num_features[%d] is %lld, scipy's is %lld", i, (long long)nf[i], (long long)want[i]);
      return -1;
    }
  }
  for (int i = n; i < n + 4; i++) {
    if (nf[i] != NF_SENTINEL) {
      snprintf(msg, len, "num_features[%d] written (%lld) for %d image%s", i, (long long)nf[i], n, n == 1 ? "" : "s");
      return -1;
    }
  }
  return 0;
}

static void fill_sentinel(int64_t *nf, int n) {
  for (int i = 0; i < n; i++) nf[i] = NF_SENTINEL;
}

/* Was any num_features entry written?  The header promises that nothing is
 * written to an output array on failure; num_features is not an ndf_array,
 * so a write there is reported, not failed. */
static void note_counts_written(const int64_t *nf, int n, const char *what) {
  for (int i = 0; i < n; i++) {
    if (nf[i] != NF_SENTINEL) {
      printf("NOTE: %s: the call failed but wrote num_features[%d] = %lld\n", what, i, (long long)nf[i]);
      return;
    }
  }
}

/* ------------------------------------------------------------------------ */
/* Running one oracle case                                                   */

enum { IN_ASIS, IN_STRIDED, IN_FORTRAN };
enum { OUT_C, OUT_STRIDED, OUT_FORTRAN };
enum { ODT_CASE, ODT_INT32 };

typedef struct variant {
  int in, out, odt;
  int nf_null; /* pass num_features = NULL */
  const char *name;
} variant;

static const variant VARIANTS[] = {
    {IN_ASIS, OUT_C, ODT_CASE, 0, "input as read, C output of the case's output dtype"},
    {IN_STRIDED, OUT_C, ODT_INT32, 0, "strided (negative) input/structure, C int32 output"},
    {IN_FORTRAN, OUT_FORTRAN, ODT_CASE, 0, "Fortran input/structure, Fortran output of the case's output dtype"},
    {IN_ASIS, OUT_STRIDED, ODT_CASE, 1, "input as read, strided output of the case's dtype, num_features NULL"},
    {IN_STRIDED, OUT_STRIDED, ODT_INT32, 0, "strided (negative) input/structure, strided int32 output"},
};

static int read_npy(const lab_state *s, const char *name, ndfio_image *img) {
  char path[700], err[512];
  snprintf(path, sizeof path, "%s/%s", s->dir, name);
  ndf_status st = ndfio_npy_read(path, img, err, sizeof err);
  if (st != NDF_OK) {
    fprintf(stderr, "ndfio_npy_read(%s): %s: %s\n", path, ndf_status_name(st), err);
    return -1;
  }
  return 0;
}

/* The array as the variant passes it: as read, or a relaid copy in t. */
static int lay(const ndf_array *src, tu_array *t, int inv, tu_rng *rng, const ndf_array **use) {
  if (inv == IN_ASIS) {
    *use = src;
    return 0;
  }
  int layout = inv == IN_FORTRAN ? TU_LAYOUT_FORTRAN
                                 : TU_LAYOUT_PADDED | (tu_rng_chance(rng, 0.6) ? TU_LAYOUT_NEGATIVE : 0) |
                                       (tu_rng_chance(rng, 0.3) ? TU_LAYOUT_OFFSET : 0);
  if (tu_array_relayout(t, src, layout, rng)) return -1;
  *use = &t->arr;
  return 0;
}

static int out_layout(int outv) { return outv == OUT_FORTRAN ? TU_LAYOUT_FORTRAN : TU_LAYOUT_C; }

/* An empty array shaped like src with the given element strides (the
 * oracle's), 0-3 elements into a new poisoned buffer. */
static int strided_like(tu_array *dst, const ndf_array *src, const int64_t *strides, tu_rng *rng) {
  const int64_t es = (int64_t)ndf_dtype_size(src->dtype), front = tu_rng_int(rng, 0, 3);
  int64_t last = 0;
  for (int d = 0; d < src->ndim; d++) last += (src->shape[d] > 0 ? src->shape[d] - 1 : 0) * strides[d];
  memset(dst, 0, sizeof *dst);
  dst->bytes = (size_t)((front + last + 2) * es);
  if (!(dst->base = malloc(dst->bytes))) return -1;
  tu_poison(dst->base, dst->bytes);
  dst->arr = *src;
  dst->arr.data = (char *)dst->base + front * es;
  for (int d = 0; d < src->ndim; d++) dst->arr.strides[d] = strides[d];
  return 0;
}

/* Returns 0 when the case passes; prints what went wrong otherwise. */
static int run_case(lab_state *s, const lab_case *c, const variant *v, tu_rng *rng, int verbose) {
  char msg[2048] = "";
  int rc = -1;
  ndfio_image in = {0}, exp = {0}, st = {0};
  tu_array in_l = {0}, st_l = {0}, out = {0};
  void *insave = NULL;
  int64_t nf[MAX_COUNTS + 4];
  ndf_dtype odt = NDF_INT32;
  if (v->odt == ODT_CASE) ndf_dtype_from_name(c->out_dtype, &odt);
  int fits = v->odt == ODT_CASE ? c->out_fits : 1;
  /* scipy numbers features in the scan order of its output's layout: the expected labels of the layout */
  const char *ename = v->out == OUT_FORTRAN   ? c->expected_f
                      : v->out == OUT_STRIDED ? (v->odt == ODT_INT32 ? c->expected_si : c->expected_s)
                                              : c->expected;
  if (read_npy(s, c->input, &in)) goto done;
  if (fits && read_npy(s, ename, &exp)) goto done;
  if (c->structure[0] && read_npy(s, c->structure, &st)) goto done;
  ndf_dtype want;
  if (ndf_dtype_from_name(c->dtype, &want) != NDF_OK || want != in.arr.dtype) {
    snprintf(msg, sizeof msg, "dtype of the input file is not %s", c->dtype);
    goto done;
  }
  /* the oracle's verdict agrees with the dtype's range (a check of the oracle) */
  if (v->odt == ODT_CASE && fits != ((double)c->maxcount <= dtype_max_label(odt))) {
    snprintf(msg, sizeof msg, "oracle: out_fits=%d for %lld features in %s", fits, (long long)c->maxcount,
             c->out_dtype);
    goto done;
  }

  const ndf_array *input, *stru = NULL;
  if (lay(&in.arr, &in_l, v->in, rng, &input)) goto done;
  if (c->structure[0] && lay(&st.arr, &st_l, v->in, rng, &stru)) goto done;
  ndf_array like = in.arr;
  like.dtype = odt;
  if (v->out == OUT_STRIDED ? strided_like(&out, &like, c->ostrides, rng)
                            : tu_array_like(&out, &like, out_layout(v->out), rng))
    goto done;
  size_t inbytes = input == &in.arr ? arr_bytes(&in.arr) : in_l.bytes;
  const void *inbase = input == &in.arr ? in.arr.data : in_l.base;
  insave = malloc(inbytes ? inbytes : 1);
  memcpy(insave, inbase, inbytes);
  fill_sentinel(nf, MAX_COUNTS + 4);

  ndf_status r = ndf_label(s->ctx, input, &out.arr, stru, c->batch, v->nf_null ? NULL : nf);
  const char *m = ndf_errmsg(s->ctx);
  if (!fits) {
    if (r != NDF_EINVAL || !strstr(m, API) || !strstr(m, "bit-depth")) {
      snprintf(msg, sizeof msg,
               "%lld features do not fit %s (scipy: insufficient bit-depth): want NDF_EINVAL and a message naming "
               "%s and the bit-depth; got %s \"%s\"",
               (long long)c->maxcount, c->out_dtype, API, ndf_status_name(r), m);
      goto done;
    }
    int64_t p = tu_poison_check(out.base, out.bytes);
    if (p >= 0) {
      snprintf(msg, sizeof msg, "NDF_EINVAL (bit-depth) but the output buffer was written (byte %lld)", (long long)p);
      goto done;
    }
    if (!v->nf_null) note_counts_written(nf, MAX_COUNTS + 4, "insufficient bit-depth");
  } else {
    if (r != NDF_OK) {
      snprintf(msg, sizeof msg, "returned %s: %s", ndf_status_name(r), m);
      goto done;
    }
    if (strcmp(m, "") != 0) {
      snprintf(msg, sizeof msg, "NDF_OK but ndf_errmsg is \"%s\"", m);
      goto done;
    }
    char detail[1024];
    int64_t bad = compare_labels(&exp.arr, &out.arr, detail, sizeof detail);
    if (bad) {
      snprintf(msg, sizeof msg, "%lld of %lld labels differ from scipy's (%s output):\n%s", (long long)bad,
               (long long)ndf_array_size(&exp.arr), ndf_dtype_name(odt), detail);
      goto done;
    }
    int64_t gap = tu_check_gaps(&out);
    if (gap >= 0) {
      snprintf(msg, sizeof msg, "wrote outside the output's elements (buffer byte %lld)", (long long)gap);
      goto done;
    }
    if (!v->nf_null && check_counts(nf, c->counts, c->ncounts, msg, sizeof msg) != 0) goto done;
  }
  if (memcmp(insave, inbase, inbytes) != 0) {
    snprintf(msg, sizeof msg, "the input buffer was modified");
    goto done;
  }
  rc = 0;
done:
  if (rc != 0 && verbose)
    printf("FAIL case %d (%s; output %s): %s\n  %s\n", c->id, v->name, ndf_dtype_name(odt), c->line, msg);
  free(insave);
  ndfio_image_free(&in);
  ndfio_image_free(&exp);
  ndfio_image_free(&st);
  tu_array_free(&in_l);
  tu_array_free(&st_l);
  tu_array_free(&out);
  return rc;
}

static void run_all(void **state, int vi) {
  lab_state *s = *state;
  const variant *v = &VARIANTS[vi];
  tu_rng rng;
  tu_rng_seed(&rng, s->seed * 41u + (uint64_t)vi);
  int failed = 0, failed_batched = 0, failed_nofit = 0;
  for (int i = 0; i < s->ncases; i++) {
    if (run_case(s, &cases_of(s)[i], v, &rng, failed < 12) != 0) {
      failed++;
      failed_batched += cases_of(s)[i].batch > 0;
      failed_nofit += v->odt == ODT_CASE && !cases_of(s)[i].out_fits;
    }
  }
  if (failed) {
    s->keep_dir = 1;
    printf("%d of %d scipy cases failed (%s): %d batched, %d bit-depth; seed %llu, cases in %s\n", failed,
           s->ncases, v->name, failed_batched, failed_nofit, (unsigned long long)s->seed, s->dir);
  }
  assert_int_equal(failed, 0);
}

static void test_scipy_cases(void **state) { run_all(state, 0); }
static void test_scipy_cases_strided_input_int32(void **state) { run_all(state, 1); }
static void test_scipy_cases_fortran(void **state) { run_all(state, 2); }
static void test_scipy_cases_strided_output_nf_null(void **state) { run_all(state, 3); }
static void test_scipy_cases_strided_both(void **state) { run_all(state, 4); }

/* ------------------------------------------------------------------------ */
/* Hand-written cases                                                        */

static ndf_ctx *ctx_of(void **state) { return ((lab_state *)*state)->ctx; }

static void arr_nd(tu_array *t, ndf_dtype dt, int ndim, const int64_t *shape, const double *v) {
  assert_int_equal(tu_array_alloc(t, dt, ndim, shape), 0);
  int64_t n = ndf_array_size(&t->arr);
  for (int64_t i = 0; i < n; i++) tu_set(&t->arr, i, v ? v[i] : 0);
}

/* A poisoned C-order output shaped like in. */
static void out_like(tu_array *t, const ndf_array *in, ndf_dtype dt) {
  assert_int_equal(tu_array_alloc(t, dt, in->ndim, in->shape), 0);
  tu_poison(t->base, t->bytes);
}

/* Calls ndf_label on in into a poisoned C-order output of dtype odt;
 * requires NDF_OK, the labels want (C order) and the counts. */
static void expect_labels(ndf_ctx *ctx, const ndf_array *in, const ndf_array *st, int batch, ndf_dtype odt,
                          const double *want, const int64_t *counts, int ncounts, const char *what) {
  tu_array out;
  out_like(&out, in, odt);
  int64_t nf[MAX_COUNTS + 4];
  fill_sentinel(nf, MAX_COUNTS + 4);
  ndf_status r = ndf_label(ctx, in, &out.arr, st, batch, nf);
  if (r != NDF_OK) printf("%s: %s %s\n", what, ndf_status_name(r), ndf_errmsg(ctx));
  assert_int_equal(r, NDF_OK);
  assert_string_equal(ndf_errmsg(ctx), "");
  int64_t n = ndf_array_size(in);
  int bad = 0;
  for (int64_t i = 0; i < n; i++) {
    double g = tu_get(&out.arr, i);
    if (g != want[i]) {
      if (bad < 8) printf("%s: element %lld expected %g got %g\n", what, (long long)i, want[i], g);
      bad++;
    }
  }
  if (bad) printf("%s: %d of %lld labels wrong\n", what, bad, (long long)n);
  assert_int_equal(bad, 0);
  char msg[256];
  if (check_counts(nf, counts, ncounts, msg, sizeof msg) != 0) {
    printf("%s: %s\n", what, msg);
    fail();
  }
  tu_array_free(&out);
}

static void gbs(tu_array *t, int rank, int conn) {
  int64_t sh[NDF_MAX_SPATIAL];
  for (int i = 0; i < rank; i++) sh[i] = 3;
  assert_int_equal(tu_array_alloc(t, NDF_BOOL, rank, sh), 0);
  assert_int_equal(ndf_generate_binary_structure(rank, conn, &t->arr), NDF_OK);
}

/* All-zero images: no features; all non-zero images: one per image (every
 * connectivity), or one per voxel with an all-False structure, numbered in
 * raster order. */
static void test_empty_and_full_images(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  static const int64_t shapes[4][4] = {{7}, {4, 5}, {3, 4, 5}, {2, 3, 2, 3}};
  static const ndf_dtype dts[] = {NDF_BOOL, NDF_UINT8, NDF_INT16, NDF_FLOAT32, NDF_FLOAT64};
  static const ndf_dtype odts[] = {NDF_INT32, NDF_UINT8, NDF_FLOAT32, NDF_UINT32, NDF_INT16, NDF_FLOAT64};
  static const double fgval[] = {1, 200, -7, -0.5, 1e-300};
  for (int nd = 1; nd <= 4; nd++) {
    for (int batch = 0; batch < 2 && batch < nd; batch++) {
      const int64_t *sh = shapes[nd - 1];
      int64_t nimg = batch ? sh[0] : 1, n = 1;
      for (int i = 0; i < nd; i++) n *= sh[i];
      int nsp = nd - batch;
      double *want = malloc(sizeof(double) * (size_t)n);
      int64_t counts[8];
      for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
        ndf_dtype odt = odts[(nd + k) % (sizeof odts / sizeof odts[0])];
        char what[160];
        tu_array in, st;
        /* all zero, -0.0 in floats */
        arr_nd(&in, dts[k], nd, sh, NULL);
        if (tu_is_float(dts[k]))
          for (int64_t i = 0; i < n; i += 2) tu_set(&in.arr, i, -0.0);
        for (int64_t i = 0; i < n; i++) want[i] = 0;
        for (int64_t b = 0; b < nimg; b++) counts[b] = 0;
        snprintf(what, sizeof what, "empty %d-D %s image, batch %d, %s output", nd, ndf_dtype_name(dts[k]), batch,
                 ndf_dtype_name(odt));
        expect_labels(ctx, &in.arr, NULL, batch, odt, want, counts, (int)nimg, what);
        /* all foreground: one feature per image for every connectivity */
        for (int64_t i = 0; i < n; i++) tu_set(&in.arr, i, fgval[k]);
        for (int64_t i = 0; i < n; i++) want[i] = 1;
        for (int64_t b = 0; b < nimg; b++) counts[b] = 1;
        snprintf(what, sizeof what, "all-foreground %d-D %s image, batch %d, default structure", nd,
                 ndf_dtype_name(dts[k]), batch);
        expect_labels(ctx, &in.arr, NULL, batch, odt, want, counts, (int)nimg, what);
        for (int conn = 1; conn <= nsp; conn++) {
          gbs(&st, nsp, conn);
          snprintf(what, sizeof what, "all-foreground %d-D %s image, batch %d, connectivity %d", nd,
                   ndf_dtype_name(dts[k]), batch, conn);
          expect_labels(ctx, &in.arr, &st.arr, batch, odt, want, counts, (int)nimg, what);
          tu_array_free(&st);
        }
        /* all-False structure: every voxel is a feature, in raster order */
        int64_t ssh[NDF_MAX_SPATIAL];
        for (int i = 0; i < nsp; i++) ssh[i] = 3;
        arr_nd(&st, NDF_UINT8, nsp, ssh, NULL);
        for (int64_t i = 0; i < n; i++) want[i] = (double)(i % (n / nimg) + 1);
        for (int64_t b = 0; b < nimg; b++) counts[b] = n / nimg;
        snprintf(what, sizeof what, "all-foreground %d-D %s image, batch %d, all-False structure", nd,
                 ndf_dtype_name(dts[k]), batch);
        expect_labels(ctx, &in.arr, &st.arr, batch, NDF_INT32, want, counts, (int)nimg, what);
        tu_array_free(&st);
        tu_array_free(&in);
      }
      free(want);
    }
  }
}

/* Checkerboards: with the cross every square is its own feature (numbered in
 * raster order); with the full structure the diagonal links make one. */
static void test_checkerboard(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  /* 2-D 5x6, both parities */
  for (int parity = 0; parity < 2; parity++) {
    const int64_t sh[2] = {5, 6};
    tu_array in, st;
    arr_nd(&in, NDF_UINT8, 2, sh, NULL);
    double want_cross[30], want_full[30];
    int64_t k = 0;
    for (int64_t i = 0; i < 30; i++) {
      int on = ((i / 6 + i % 6) & 1) == parity;
      tu_set(&in.arr, i, on ? 3 : 0);
      want_cross[i] = on ? (double)++k : 0;
      want_full[i] = on ? 1 : 0;
    }
    int64_t cross_n[1] = {k}, one[1] = {1};
    char what[96];
    snprintf(what, sizeof what, "5x6 checkerboard (parity %d), default structure", parity);
    expect_labels(ctx, &in.arr, NULL, 0, NDF_INT32, want_cross, cross_n, 1, what);
    gbs(&st, 2, 1);
    snprintf(what, sizeof what, "5x6 checkerboard (parity %d), cross", parity);
    expect_labels(ctx, &in.arr, &st.arr, 0, NDF_UINT8, want_cross, cross_n, 1, what);
    tu_array_free(&st);
    gbs(&st, 2, 2);
    snprintf(what, sizeof what, "5x6 checkerboard (parity %d), full 3x3", parity);
    expect_labels(ctx, &in.arr, &st.arr, 0, NDF_INT32, want_full, one, 1, what);
    tu_array_free(&st);
    /* only the two diagonals (symmetric, centre False): one feature too */
    static const double diag[9] = {1, 0, 1, 0, 0, 0, 1, 0, 1};
    const int64_t s33[2] = {3, 3};
    arr_nd(&st, NDF_FLOAT32, 2, s33, diag);
    snprintf(what, sizeof what, "5x6 checkerboard (parity %d), diagonals only", parity);
    expect_labels(ctx, &in.arr, &st.arr, 0, NDF_INT16, want_full, one, 1, what);
    tu_array_free(&st);
    tu_array_free(&in);
  }
  /* 3-D 4x4x4: cross isolates the 32 cubes; edges (connectivity 2) and
   * corners (3) join them; batched as 2 images of 2x4x4 too */
  const int64_t sh3[3] = {4, 4, 4};
  tu_array in3;
  arr_nd(&in3, NDF_BOOL, 3, sh3, NULL);
  double want_cross[64], want_one[64], want_b[64];
  int64_t k = 0;
  for (int64_t i = 0; i < 64; i++) {
    int z = (int)(i / 16), y = (int)(i / 4 % 4), x = (int)(i % 4);
    int on = ((x + y + z) & 1) == 0;
    tu_set(&in3.arr, i, on);
    want_cross[i] = on ? (double)++k : 0;
    want_one[i] = on;
  }
  /* batch_dims 1 with a 2-D structure: each 4x4 plane separately */
  int64_t nplane[4];
  for (int z = 0; z < 4; z++) {
    int64_t kk = 0;
    for (int i = 0; i < 16; i++) {
      int on = ((i / 4 + i % 4 + z) & 1) == 0;
      want_b[z * 16 + i] = on ? (double)++kk : 0;
    }
    nplane[z] = kk;
  }
  int64_t n32[1] = {k}, one[1] = {1};
  tu_array st;
  expect_labels(ctx, &in3.arr, NULL, 0, NDF_INT32, want_cross, n32, 1, "4x4x4 checkerboard, default structure");
  gbs(&st, 3, 2);
  expect_labels(ctx, &in3.arr, &st.arr, 0, NDF_INT32, want_one, one, 1, "4x4x4 checkerboard, connectivity 2");
  tu_array_free(&st);
  gbs(&st, 3, 3);
  expect_labels(ctx, &in3.arr, &st.arr, 0, NDF_FLOAT64, want_one, one, 1, "4x4x4 checkerboard, connectivity 3");
  tu_array_free(&st);
  expect_labels(ctx, &in3.arr, NULL, 1, NDF_INT32, want_b, nplane, 4, "4x4x4 checkerboard, batch 1, default");
  tu_array_free(&in3);
}

/* Non-zero is foreground: negative values, NaN, -inf and subnormals are
 * foreground, -0.0 is background (scipy: label([nan, 0, -0., 1, nan]) ==
 * ([1, 0, 0, 2, 2], 2)). */
static void test_nan_and_negative_foreground(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  const int64_t n5[1] = {5};
  const double x[5] = {NAN, 0, -0.0, 1, NAN}, w[5] = {1, 0, 0, 2, 2};
  const int64_t two[1] = {2}, three[1] = {3}, one[1] = {1};
  for (int f64 = 0; f64 < 2; f64++) {
    tu_array in;
    arr_nd(&in, f64 ? NDF_FLOAT64 : NDF_FLOAT32, 1, n5, x);
    expect_labels(ctx, &in.arr, NULL, 0, NDF_INT32, w, two, 1, f64 ? "float64 NaN" : "float32 NaN");
    expect_labels(ctx, &in.arr, NULL, 0, NDF_FLOAT32, w, two, 1, f64 ? "float64 NaN, float32 out" : "float32 NaN, float32 out");
    tu_array_free(&in);
  }
  {
    const int64_t n7[1] = {7};
    const double v[7] = {-INFINITY, 1e-40, 0, -1e30, -0.0, INFINITY, NAN};
    const double wv[7] = {1, 1, 0, 2, 0, 3, 3};
    tu_array in;
    arr_nd(&in, NDF_FLOAT32, 1, n7, v);
    expect_labels(ctx, &in.arr, NULL, 0, NDF_UINT8, wv, three, 1, "float32 inf / subnormal / NaN");
    tu_array_free(&in);
  }
  {
    const int64_t n6[1] = {6};
    const double v[6] = {-1, 0, -300, -32768, 0, 5}, wv[6] = {1, 0, 2, 2, 0, 3};
    tu_array in;
    arr_nd(&in, NDF_INT16, 1, n6, v);
    expect_labels(ctx, &in.arr, NULL, 0, NDF_INT32, wv, three, 1, "int16 negative values");
    tu_array_free(&in);
    const double v8[6] = {-128, 0, 0, 127, -1, 0}, w8[6] = {1, 0, 0, 2, 2, 0};
    arr_nd(&in, NDF_INT8, 1, n6, v8);
    expect_labels(ctx, &in.arr, NULL, 0, NDF_INT32, w8, two, 1, "int8 negative values");
    tu_array_free(&in);
  }
  {
    /* a 2-D NaN blob touching a -0.0 moat */
    const int64_t s[2] = {3, 4};
    const double v[12] = {NAN, NAN, -0.0, 2, -0.0, NAN, -0.0, -3, 0, 0, NAN, 0};
    const double wv[12] = {1, 1, 0, 2, 0, 1, 0, 2, 0, 0, 3, 0};
    tu_array in;
    arr_nd(&in, NDF_FLOAT32, 2, s, v);
    expect_labels(ctx, &in.arr, NULL, 0, NDF_INT32, wv, three, 1, "2-D NaN blob, cross");
    tu_array st;
    gbs(&st, 2, 2);
    const double wf[12] = {1, 1, 0, 1, 0, 1, 0, 1, 0, 0, 1, 0};
    expect_labels(ctx, &in.arr, &st.arr, 0, NDF_INT32, wf, one, 1, "2-D NaN blob, full 3x3");
    tu_array_free(&st);
    tu_array_free(&in);
  }
  (void)one;
}

/* Provisional labels that merge late in the raster scan (a U, a W, a spiral)
 * and a feature whose first voxel comes after another feature's: the final
 * numbering is the raster order of each feature's first voxel. */
static void test_merges_and_numbering(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  const int64_t s44[2] = {4, 4}, s57[2] = {5, 7};
  const int64_t one[1] = {1}, two[1] = {2}, three[1] = {3};
  tu_array in, st;
  gbs(&st, 2, 2);
  {
    const double v[16] = {0, 0, 0, 1, /**/ 0, 1, 0, 1, /**/ 0, 1, 1, 1, /**/ 1, 0, 0, 0};
    const double wc[16] = {0, 0, 0, 1, /**/ 0, 1, 0, 1, /**/ 0, 1, 1, 1, /**/ 2, 0, 0, 0};
    const double wf[16] = {0, 0, 0, 1, /**/ 0, 1, 0, 1, /**/ 0, 1, 1, 1, /**/ 1, 0, 0, 0};
    arr_nd(&in, NDF_UINT8, 2, s44, v);
    expect_labels(ctx, &in.arr, NULL, 0, NDF_INT32, wc, two, 1, "hook, cross");
    expect_labels(ctx, &in.arr, &st.arr, 0, NDF_INT32, wf, one, 1, "hook, full");
    tu_array_free(&in);
  }
  {
    /* W: three teeth joined at the bottom; a separate bar on top right */
    const double v[35] = {1, 0, 1, 0, 1, 0, 1, /**/ 1, 0, 1, 0, 1, 0, 1, /**/ 1, 0, 1, 0, 1, 0, 0,
                          /**/ 1, 1, 1, 1, 1, 0, 1, /**/ 0, 0, 0, 0, 0, 0, 1};
    const double w[35] = {1, 0, 1, 0, 1, 0, 2, /**/ 1, 0, 1, 0, 1, 0, 2, /**/ 1, 0, 1, 0, 1, 0, 0,
                          /**/ 1, 1, 1, 1, 1, 0, 3, /**/ 0, 0, 0, 0, 0, 0, 3};
    arr_nd(&in, NDF_INT16, 2, s57, v);
    expect_labels(ctx, &in.arr, NULL, 0, NDF_INT32, w, three, 1, "W, cross");
    tu_array_free(&in);
  }
  {
    /* a spiral: one feature reached in raster order from many starts */
    const double v[35] = {1, 1, 1, 1, 1, 1, 1, /**/ 0, 0, 0, 0, 0, 0, 1, /**/ 1, 1, 1, 0, 1, 0, 1,
                          /**/ 1, 0, 0, 0, 1, 0, 1, /**/ 1, 1, 1, 1, 1, 1, 1};
    double w[35];
    for (int i = 0; i < 35; i++) w[i] = v[i];
    arr_nd(&in, NDF_FLOAT32, 2, s57, v);
    expect_labels(ctx, &in.arr, NULL, 0, NDF_INT32, w, one, 1, "spiral, cross");
    tu_array_free(&in);
  }
  {
    /* a symmetric structure linking only along the anti-diagonal */
    const double ad[9] = {0, 0, 1, 0, 1, 0, 1, 0, 0};
    const int64_t s33[2] = {3, 3};
    tu_array sad;
    arr_nd(&sad, NDF_INT16, 2, s33, ad);
    const double v[16] = {0, 0, 0, 1, /**/ 0, 0, 1, 0, /**/ 1, 1, 0, 0, /**/ 1, 0, 0, 1};
    const double w[16] = {0, 0, 0, 1, /**/ 0, 0, 1, 0, /**/ 2, 1, 0, 0, /**/ 1, 0, 0, 3};
    arr_nd(&in, NDF_BOOL, 2, s44, v);
    expect_labels(ctx, &in.arr, &sad.arr, 0, NDF_INT32, w, three, 1, "anti-diagonal structure");
    tu_array_free(&in);
    tu_array_free(&sad);
  }
  tu_array_free(&st);
}

/* The structure's truth values count (any dtype, non-zero = in), its centre
 * does not (scipy: a ring without the centre labels like the full square). */
static void test_structure_values(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  const int64_t s44[2] = {4, 4}, s33[2] = {3, 3};
  const double v[16] = {1, 0, 0, 1, /**/ 0, 1, 0, 0, /**/ 0, 0, 0, 1, /**/ 1, 1, 0, 1};
  const double wfull[16] = {1, 0, 0, 2, /**/ 0, 1, 0, 0, /**/ 0, 0, 0, 3, /**/ 4, 4, 0, 3};
  const int64_t four[1] = {4};
  tu_array in;
  arr_nd(&in, NDF_UINT8, 2, s44, v);
  /* ring (centre False), float values differing at mirrored positions */
  const double ring[9] = {0.5, -2, 7, 1e-30, 0, -0.25, 3, 1, -1};
  tu_array st;
  arr_nd(&st, NDF_FLOAT64, 2, s33, ring);
  expect_labels(ctx, &in.arr, &st.arr, 0, NDF_INT32, wfull, four, 1, "ring structure with mixed values");
  tu_array_free(&st);
  /* -0.0 is out: this float structure is the cross */
  const double cross[9] = {-0.0, 5, 0, -1, 1, 2, 0, 9, -0.0};
  arr_nd(&st, NDF_FLOAT32, 2, s33, cross);
  const double wcross[16] = {1, 0, 0, 2, /**/ 0, 3, 0, 0, /**/ 0, 0, 0, 4, /**/ 5, 5, 0, 4};
  const int64_t five[1] = {5};
  expect_labels(ctx, &in.arr, &st.arr, 0, NDF_INT32, wcross, five, 1, "float cross with -0.0 corners");
  tu_array_free(&st);
  tu_array_free(&in);
}

/* "insufficient bit-depth": an output dtype too small for the count is
 * NDF_EINVAL (message naming ndf_label and the bit-depth), nothing written;
 * the largest count that fits is fine. */
static void bitdepth_case(ndf_ctx *ctx, ndf_dtype odt, int64_t nfeat, int nimg, int ok) {
  /* nimg images of 2*nfeat-1 voxels: the last image has nfeat isolated
   * voxels, the others 3 */
  int64_t len = 2 * nfeat - 1;
  int64_t sh[2] = {nimg, len};
  tu_array in, out;
  assert_int_equal(tu_array_alloc(&in, NDF_UINT8, 2, sh), 0);
  uint8_t *p = in.base;
  for (int b = 0; b < nimg; b++)
    for (int64_t i = 0; i < len; i++)
      p[b * len + i] = b == nimg - 1 ? (i % 2 == 0) : (i == 0 || i == 2 || i == len - 1) && len > 4;
  ndf_array in_arr = in.arr;
  int batch = nimg > 1 ? 1 : 0;
  if (!batch) { /* a 1-D image */
    in_arr.ndim = 1;
    in_arr.shape[0] = len;
    in_arr.strides[0] = 1;
  }
  out_like(&out, &in_arr, odt);
  int64_t nf[8];
  fill_sentinel(nf, 8);
  char what[128];
  snprintf(what, sizeof what, "%lld features into %s (%d image%s)", (long long)nfeat, ndf_dtype_name(odt), nimg,
           nimg > 1 ? "s" : "");
  ndf_status r = ndf_label(ctx, &in_arr, &out.arr, NULL, batch, nf);
  const char *m = ndf_errmsg(ctx);
  if (ok) {
    if (r != NDF_OK) printf("%s: %s %s\n", what, ndf_status_name(r), m);
    assert_int_equal(r, NDF_OK);
    int bad = 0;
    for (int b = 0; b < nimg; b++) {
      int64_t k = 0;
      for (int64_t i = 0; i < len; i++) {
        double want = p[b * len + i] ? (double)++k : 0;
        double got = tu_get(&out.arr, b * len + i);
        if (got != want && bad++ < 5) printf("%s: image %d element %lld: expected %g got %g\n", what, b, (long long)i, want, got);
      }
      if (nf[b] != k && bad++ < 5) printf("%s: num_features[%d] = %lld, expected %lld\n", what, b, (long long)nf[b], (long long)k);
    }
    assert_int_equal(bad, 0);
  } else {
    if (r != NDF_EINVAL || !strstr(m, API) || !strstr(m, "bit-depth"))
      printf("%s: got %s \"%s\"; want NDF_EINVAL and a message naming %s and the bit-depth\n", what,
             ndf_status_name(r), m, API);
    assert_int_equal(r, NDF_EINVAL);
    assert_non_null(strstr(m, API));
    assert_non_null(strstr(m, "bit-depth"));
    int64_t pp = tu_poison_check(out.base, out.bytes);
    if (pp >= 0) printf("%s: output written at byte %lld\n", what, (long long)pp);
    assert_int_equal(pp, -1);
    note_counts_written(nf, 8, what);
  }
  tu_array_free(&in);
  tu_array_free(&out);
}

static void test_insufficient_bit_depth(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  static const struct {
    ndf_dtype t;
    int64_t max;
  } lim[] = {{NDF_UINT8, 255}, {NDF_INT8, 127}, {NDF_INT16, 32767}, {NDF_UINT16, 65535}};
  for (size_t k = 0; k < sizeof lim / sizeof lim[0]; k++) {
    for (int nimg = 1; nimg <= 3; nimg += 2) {
      bitdepth_case(ctx, lim[k].t, lim[k].max, nimg, 1);
      bitdepth_case(ctx, lim[k].t, lim[k].max + 1, nimg, 0);
    }
  }
  /* the same counts fit the wider dtypes */
  bitdepth_case(ctx, NDF_INT32, 65536, 1, 1);
  bitdepth_case(ctx, NDF_UINT32, 300, 3, 1);
  bitdepth_case(ctx, NDF_FLOAT32, 70000, 1, 1);
  bitdepth_case(ctx, NDF_FLOAT64, 256, 2, 1);
  bitdepth_case(ctx, NDF_INT16, 256, 2, 1);
}

/* num_features may be NULL. */
static void test_num_features_null(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  const int64_t sh[3] = {2, 3, 4};
  const double v[24] = {1, 0, 1, 0, 0, 0, 0, 0, 1, 1, 0, 1, /**/ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  const double w[24] = {1, 0, 2, 0, 0, 0, 0, 0, 3, 3, 0, 4, /**/ 0};
  tu_array in, out;
  arr_nd(&in, NDF_UINT8, 3, sh, v);
  out_like(&out, &in.arr, NDF_INT32);
  assert_int_equal(ndf_label(ctx, &in.arr, &out.arr, NULL, 1, NULL), NDF_OK);
  for (int i = 0; i < 24; i++) assert_int_equal(((int32_t *)out.base)[i], (int32_t)w[i]);
  tu_poison(out.base, out.bytes);
  assert_int_equal(ndf_label(ctx, &in.arr, &out.arr, NULL, 0, NULL), NDF_OK);
  for (int i = 0; i < 24; i++) assert_int_equal(((int32_t *)out.base)[i], (int32_t)w[i]);
  tu_array_free(&in);
  tu_array_free(&out);
}

/* An input with an axis of length 0 (scipy: no features): OK, no label
 * written, a count of 0 for each image (none when a batch axis is empty). */
static void test_empty_input(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  const int64_t shapes[3][3] = {{0, 5, 4}, {3, 0, 4}, {3, 5, 0}};
  for (int k = 0; k < 3; k++) {
    for (int batch = 0; batch < 3; batch++) {
      uint8_t inbuf[4] = {1, 1, 1, 1}, outbuf[64];
      ndf_array in, out;
      assert_int_equal(ndf_array_init(&in, inbuf, NDF_DEVICE_CPU, NDF_UINT8, 3, shapes[k]), NDF_OK);
      assert_int_equal(ndf_array_init(&out, outbuf, NDF_DEVICE_CPU, NDF_INT32, 3, shapes[k]), NDF_OK);
      tu_poison(outbuf, sizeof outbuf);
      int64_t nf[32];
      fill_sentinel(nf, 32);
      ndf_status r = ndf_label(ctx, &in, &out, NULL, batch, nf);
      if (r != NDF_OK)
        printf("ndf_label on a %lldx%lldx%lld input, batch %d: %s\n", (long long)shapes[k][0],
               (long long)shapes[k][1], (long long)shapes[k][2], batch, ndf_errmsg(ctx));
      assert_int_equal(r, NDF_OK);
      assert_int_equal(tu_poison_check(outbuf, sizeof outbuf), -1);
      int64_t nimg = 1;
      for (int d = 0; d < batch; d++) nimg *= shapes[k][d];
      int64_t zeros[16] = {0};
      char msg[256];
      if (check_counts(nf, zeros, (int)nimg, msg, sizeof msg) != 0) {
        printf("empty input %lldx%lldx%lld batch %d: %s\n", (long long)shapes[k][0], (long long)shapes[k][1],
               (long long)shapes[k][2], batch, msg);
        fail();
      }
    }
  }
}

/* A broadcast input (zero strides) labels like its dense copy. */
static void test_zero_stride_input(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  tu_rng rng;
  tu_rng_seed(&rng, 99);
  for (int t = 0; t < 8; t++) {
    int64_t n = tu_rng_int(&rng, 3, 20), rows = tu_rng_int(&rng, 2, 6);
    int64_t sh1[1] = {n}, sh2[2] = {rows, n};
    tu_array row, full, o1, o2;
    assert_int_equal(tu_array_alloc(&row, NDF_UINT8, 1, sh1), 0);
    assert_int_equal(tu_array_alloc(&full, NDF_UINT8, 2, sh2), 0);
    for (int64_t i = 0; i < n; i++) tu_set(&row.arr, i, (double)(tu_rng_chance(&rng, 0.5) ? 1 : 0));
    for (int64_t i = 0; i < rows * n; i++) tu_set(&full.arr, i, tu_get(&row.arr, i % n));
    ndf_array bc = full.arr;
    bc.data = row.base;
    bc.strides[0] = 0;
    bc.strides[1] = 1;
    for (int batch = 0; batch < 2; batch++) {
      out_like(&o1, &full.arr, NDF_INT32);
      out_like(&o2, &full.arr, NDF_INT32);
      int64_t nf1[16], nf2[16];
      fill_sentinel(nf1, 16);
      fill_sentinel(nf2, 16);
      ndf_status r1 = ndf_label(ctx, &full.arr, &o1.arr, NULL, batch, nf1);
      ndf_status r2 = ndf_label(ctx, &bc, &o2.arr, NULL, batch, nf2);
      if (r1 != NDF_OK || r2 != NDF_OK)
        printf("zero-stride: %s / %s: %s\n", ndf_status_name(r1), ndf_status_name(r2), ndf_errmsg(ctx));
      assert_int_equal(r1, NDF_OK);
      assert_int_equal(r2, NDF_OK);
      char msg[1024];
      int64_t bad = tu_compare(&o1.arr, &o2.arr, msg, sizeof msg);
      if (bad) printf("broadcast input (%lldx%lld) differs from its copy:\n%s", (long long)rows, (long long)n, msg);
      assert_int_equal(bad, 0);
      assert_memory_equal(nf1, nf2, sizeof nf1);
      tu_array_free(&o1);
      tu_array_free(&o2);
    }
    tu_array_free(&row);
    tu_array_free(&full);
  }
}

/* Negative output strides (a reversed NumPy view) are valid: the labels land
 * reversed, exactly where the view says, and nothing else is written.  With
 * strides (30, 6, -1) scipy scans lines along axis 1 (the smallest positive
 * stride), so the numbers are those of an output whose axis 1 is innermost,
 * strides (30, 1, 5). */
static void test_negative_output_stride(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  const int64_t sh[3] = {4, 5, 6};
  tu_array in;
  assert_int_equal(tu_array_alloc(&in, NDF_UINT8, 3, sh), 0);
  for (int64_t i = 0; i < 120; i++) tu_set(&in.arr, i, (double)((i * 37) % 101 > 60 ? (i % 3) + 1 : 0));
  int32_t ref[120];
  ndf_array r;
  assert_int_equal(ndf_array_init(&r, ref, NDF_DEVICE_CPU, NDF_INT32, 3, sh), NDF_OK);
  r.strides[1] = 1;
  r.strides[2] = 5;
  assert_int_equal(ndf_label(ctx, &in.arr, &r, NULL, 0, NULL), NDF_OK);
  int32_t cref[120];
  ndf_array rc;
  assert_int_equal(ndf_array_init(&rc, cref, NDF_DEVICE_CPU, NDF_INT32, 3, sh), NDF_OK);
  assert_int_equal(ndf_label(ctx, &in.arr, &rc, NULL, 0, NULL), NDF_OK);
  assert_memory_not_equal(ref, cref, sizeof ref); /* an input whose two scan orders number differently */
  size_t bytes = 4 * 130;
  int32_t *buf = malloc(bytes);
  tu_poison(buf, bytes);
  ndf_array out;
  assert_int_equal(ndf_array_init(&out, buf + 5, NDF_DEVICE_CPU, NDF_INT32, 3, sh), NDF_OK);
  out.strides[2] = -1;
  ndf_status st = ndf_label(ctx, &in.arr, &out, NULL, 0, NULL);
  if (st != NDF_OK) printf("ndf_label with a negative output stride: %s\n", ndf_errmsg(ctx));
  assert_int_equal(st, NDF_OK);
  int bad = 0;
  for (int z = 0; z < 4; z++)
    for (int y = 0; y < 5; y++)
      for (int x = 0; x < 6; x++) bad += buf[z * 30 + y * 6 + (5 - x)] != ref[z * 30 + x * 5 + y];
  if (bad) printf("%d labels misplaced with a negative output stride\n", bad);
  assert_int_equal(bad, 0);
  int32_t *pat = malloc(bytes);
  tu_poison(pat, bytes);
  int past = memcmp(buf + 120, pat + 120, bytes - 480) != 0;
  free(pat);
  if (past) printf("ndf_label wrote past the reversed view\n");
  assert_false(past);
  free(buf);
  tu_array_free(&in);
}

/* Teeth along axis 0 (every other row, columns 0-2) joined by column 2, and
 * three dots: a Fortran-ordered output is scanned along axis 0, where column 0
 * opens 300 provisional labels.  In int32 scipy numbers the features in that
 * scan order, (0,0) (5,4) (1,5) (3,5); in uint8 its first pass overflows and
 * it labels a C-ordered int32 array instead: raster order, (0,0) (1,5) (3,5)
 * (5,4) (scipy 1.10, output=np.zeros((600, 6), dtype, order="F")). */
static void comb_image(const ndf_array *a, int64_t img) {
  for (int64_t y = 0; y < 600; y++)
    for (int64_t x = 0; x < 6; x++)
      tu_set(a, img * 3600 + y * 6 + x, (y % 2 == 0 && x < 3) || x == 2 || (y == 1 && x == 5) ||
                                            (y == 5 && x == 4) || (y == 3 && x == 5));
}

static void fortran_out(tu_array *t, const ndf_array *like, ndf_dtype dt, tu_rng *rng) {
  ndf_array l = *like;
  l.dtype = dt;
  assert_int_equal(tu_array_like(t, &l, TU_LAYOUT_FORTRAN, rng), 0);
}

static void test_scan_order_and_overflow(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  tu_rng rng;
  tu_rng_seed(&rng, 7);
  const int64_t sh[2] = {600, 6};
  tu_array in;
  arr_nd(&in, NDF_UINT8, 2, sh, NULL);
  comb_image(&in.arr, 0);
  static const int64_t at[4][2] = {{0, 0}, {1, 5}, {3, 5}, {5, 4}};
  static const int want_f[4] = {1, 3, 4, 2}, want_c[4] = {1, 2, 3, 4};
  const ndf_dtype dts[3] = {NDF_INT32, NDF_UINT16, NDF_UINT8};
  for (int k = 0; k < 3; k++) {
    tu_array out;
    fortran_out(&out, &in.arr, dts[k], &rng);
    int64_t nf = -1;
    assert_int_equal(ndf_label(ctx, &in.arr, &out.arr, NULL, 0, &nf), NDF_OK);
    assert_int_equal(nf, 4);
    for (int i = 0; i < 4; i++) {
      const double got = tu_get(&out.arr, at[i][0] * 6 + at[i][1]);
      const int want = dts[k] == NDF_UINT8 ? want_c[i] : want_f[i];
      if (got != want)
        printf("%s Fortran output: label %g at (%lld,%lld), scipy's is %d\n", ndf_dtype_name(dts[k]), got,
               (long long)at[i][0], (long long)at[i][1], want);
      assert_true(got == want);
    }
    assert_int_equal(tu_check_gaps(&out), -1);
    tu_array_free(&out);
  }
  tu_array_free(&in);
}

/* A batch of two images into a Fortran-ordered uint8 output: the comb (scipy
 * numbers it in raster order, its first pass overflowing) and a small pattern
 * (numbered in the Fortran scan); each image as scipy labels it alone. */
static void test_scan_order_overflow_batch(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  tu_rng rng;
  tu_rng_seed(&rng, 11);
  const int64_t sh[3] = {2, 600, 6}, sh1[2] = {600, 6};
  tu_array in, img0, img1;
  arr_nd(&in, NDF_UINT8, 3, sh, NULL);
  arr_nd(&img0, NDF_UINT8, 2, sh1, NULL);
  arr_nd(&img1, NDF_UINT8, 2, sh1, NULL);
  comb_image(&in.arr, 0);
  comb_image(&img0.arr, 0);
  for (int64_t i = 0; i < 3600; i++) {
    const double v = i < 120 && (i * 37) % 101 > 60;
    tu_set(&in.arr, 3600 + i, v);
    tu_set(&img1.arr, i, v);
  }
  tu_array out, ref0, ref1;
  fortran_out(&out, &in.arr, NDF_UINT8, &rng);
  arr_nd(&ref0, NDF_INT32, 2, sh1, NULL);     /* raster order */
  fortran_out(&ref1, &img1.arr, NDF_INT32, &rng); /* the Fortran scan, no overflow in int32 */
  int64_t nf[2] = {-1, -1}, n0 = -1, n1 = -1;
  assert_int_equal(ndf_label(ctx, &img0.arr, &ref0.arr, NULL, 0, &n0), NDF_OK);
  assert_int_equal(ndf_label(ctx, &img1.arr, &ref1.arr, NULL, 0, &n1), NDF_OK);
  tu_array c1;
  arr_nd(&c1, NDF_INT32, 2, sh1, NULL);
  assert_int_equal(ndf_label(ctx, &img1.arr, &c1.arr, NULL, 0, NULL), NDF_OK);
  int differ = 0; /* the Fortran scan numbers differently */
  for (int64_t i = 0; i < 3600; i++) differ += tu_get(&c1.arr, i) != tu_get(&ref1.arr, i);
  assert_true(differ > 0);
  tu_array_free(&c1);
  assert_int_equal(ndf_label(ctx, &in.arr, &out.arr, NULL, 1, nf), NDF_OK);
  assert_int_equal(nf[0], n0);
  assert_int_equal(nf[1], n1);
  int bad = 0;
  for (int64_t i = 0; i < 3600; i++) {
    bad += tu_get(&out.arr, i) != tu_get(&ref0.arr, i);
    bad += tu_get(&out.arr, 3600 + i) != tu_get(&ref1.arr, i);
  }
  if (bad) printf("%d labels of the batch differ from its images labelled alone\n", bad);
  assert_int_equal(bad, 0);
  assert_int_equal(tu_check_gaps(&out), -1);
  tu_array_free(&in);
  tu_array_free(&img0);
  tu_array_free(&img1);
  tu_array_free(&out);
  tu_array_free(&ref0);
  tu_array_free(&ref1);
}

/* A bool output is scipy's npy_bool (scipy 1.10, output=np.bool_): it holds
 * the labels' bytes; where scipy's first pass overflows the byte (here the
 * teeth open 300 labels in raster order too) it casts int32 labels to bool:
 * one feature passes, two are "insufficient bit-depth". */
static void test_bool_output(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  const int64_t s26[2] = {2, 6};
  const double v26[12] = {1, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0};
  tu_array in, out;
  arr_nd(&in, NDF_UINT8, 2, s26, v26);
  assert_int_equal(tu_array_alloc(&out, NDF_BOOL, 2, s26), 0);
  int64_t nf = -1;
  assert_int_equal(ndf_label(ctx, &in.arr, &out.arr, NULL, 0, &nf), NDF_OK);
  assert_int_equal(nf, 3);
  const uint8_t want[12] = {1, 0, 2, 0, 3, 0, 0, 0, 0, 0, 0, 0};
  assert_memory_equal(out.base, want, 12);
  tu_array_free(&in);
  tu_array_free(&out);
  const int64_t sh[2] = {600, 6};
  tu_rng rng;
  tu_rng_seed(&rng, 3);
  for (int dot = 0; dot <= 1; dot++) {
    arr_nd(&in, NDF_UINT8, 2, sh, NULL);
    comb_image(&in.arr, 0); /* teeth and three dots */
    for (int64_t i = 0; i < 3600; i++)
      if (i / 6 % 2 == 1 && i % 6 != 2) tu_set(&in.arr, i, 0); /* the teeth alone */
    if (dot) tu_set(&in.arr, 1 * 6 + 5, 1);
    for (int f = 0; f <= 1; f++) {
      if (f) {
        ndf_array l = in.arr;
        l.dtype = NDF_BOOL;
        assert_int_equal(tu_array_like(&out, &l, TU_LAYOUT_FORTRAN, &rng), 0);
      } else {
        assert_int_equal(tu_array_alloc(&out, NDF_BOOL, 2, sh), 0);
        tu_poison(out.base, out.bytes);
      }
      void *save = malloc(out.bytes);
      memcpy(save, out.base, out.bytes);
      nf = -1;
      ndf_status r = ndf_label(ctx, &in.arr, &out.arr, NULL, 0, &nf);
      if (dot) {
        if (r != NDF_EINVAL || !strstr(ndf_errmsg(ctx), "bit-depth"))
          printf("two features into bool: %s \"%s\"\n", ndf_status_name(r), ndf_errmsg(ctx));
        assert_int_equal(r, NDF_EINVAL);
        assert_non_null(strstr(ndf_errmsg(ctx), "bit-depth"));
        assert_memory_equal(save, out.base, out.bytes);
      } else {
        assert_int_equal(r, NDF_OK);
        assert_int_equal(nf, 1);
        for (int64_t i = 0; i < 3600; i++) assert_true(tu_get(&out.arr, i) == tu_get(&in.arr, i));
      }
      free(save);
      tu_array_free(&out);
    }
    tu_array_free(&in);
  }
}

/* ------------------------------------------------------------------------ */
/* Contract                                                                  */

/* A 4x5x6 uint8 input and a poisoned output buffer large enough for every
 * output descriptor built below (int32 C order by default). */
typedef struct fixture {
  ndf_ctx *ctx;
  tu_array in;
  void *outbuf;
  size_t outbytes;
  ndf_array out;
  const ndf_array *st;
  int batch;
} fixture;

static const int64_t SHAPE[3] = {4, 5, 6};

static void fx_init(fixture *f, void **state) {
  memset(f, 0, sizeof *f);
  f->ctx = ctx_of(state);
  assert_int_equal(tu_array_alloc(&f->in, NDF_UINT8, 3, SHAPE), 0);
  for (int64_t i = 0; i < 120; i++) tu_set(&f->in.arr, i, (double)((i * 37) % 101 > 40 ? (i % 3) + 1 : 0));
  f->outbytes = 8192;
  f->outbuf = malloc(f->outbytes);
  assert_non_null(f->outbuf);
  tu_poison(f->outbuf, f->outbytes);
  assert_int_equal(ndf_array_init(&f->out, f->outbuf, NDF_DEVICE_CPU, NDF_INT32, 3, SHAPE), NDF_OK);
}

static void fx_free(fixture *f) {
  tu_array_free(&f->in);
  free(f->outbuf);
}

/* want < 0: any status but NDF_OK.  args: '|'-separated words, one of which
 * the message must contain (NULL: no message check). */
static void reject(fixture *f, const ndf_array *in, ndf_array *out, int want, const char *args, const char *what) {
  tu_poison(f->outbuf, f->outbytes);
  void *insave = malloc(f->in.bytes);
  memcpy(insave, f->in.base, f->in.bytes);
  int64_t nf[MAX_COUNTS];
  fill_sentinel(nf, MAX_COUNTS);
  ndf_status r = ndf_label(f->ctx, in, out, f->st, f->batch, nf);
  const char *m = f->ctx ? ndf_errmsg(f->ctx) : ndf_last_error();
  if (!m) m = "(null)";
  int named = args == NULL;
  if (args) {
    char words[256];
    snprintf(words, sizeof words, "%s", args);
    char *save = NULL;
    for (char *w = strtok_r(words, "|", &save); w; w = strtok_r(NULL, "|", &save))
      if (strstr(m, w)) named = 1;
  }
  int status_ok = want < 0 ? r != NDF_OK : (int)r == want;
  int ok = status_ok && named && (args == NULL || strstr(m, API) != NULL);
  if (!ok)
    printf("%s: got %s \"%s\"; want %s and a message naming %s and one of '%s'\n", what, ndf_status_name(r), m,
           want < 0 ? "a failure" : ndf_status_name((ndf_status)want), API, args ? args : "-");
  assert_true(status_ok);
  assert_true(named);
  if (args) assert_non_null(strstr(m, API));
  int64_t p = tu_poison_check(f->outbuf, f->outbytes);
  if (p >= 0) printf("%s: output buffer written at byte %lld\n", what, (long long)p);
  assert_int_equal(p, -1);
  assert_memory_equal(insave, f->in.base, f->in.bytes);
  note_counts_written(nf, MAX_COUNTS, what);
  free(insave);
}

static void accept(fixture *f, const char *what) {
  int64_t nf[MAX_COUNTS];
  ndf_status r = ndf_label(f->ctx, &f->in.arr, &f->out, f->st, f->batch, nf);
  if (r != NDF_OK) printf("%s: rejected: %s\n", what, ndf_errmsg(f->ctx));
  assert_int_equal(r, NDF_OK);
  assert_string_equal(ndf_errmsg(f->ctx), "");
}

static void test_contract_null_arguments(void **state) {
  fixture f;
  fx_init(&f, state);
  accept(&f, "the fixture");
  reject(&f, NULL, &f.out, NDF_EINVAL, "input", "NULL input");
  reject(&f, &f.in.arr, NULL, NDF_EINVAL, "output", "NULL output");
  /* NULL context: the message is the thread-local one. */
  tu_poison(f.outbuf, f.outbytes);
  ndf_status r = ndf_label(NULL, &f.in.arr, &f.out, NULL, 0, NULL);
  const char *m = ndf_last_error();
  if (r != NDF_EINVAL || !m || !strstr(m, "ctx") || !strstr(m, API))
    printf("NULL ctx: %s \"%s\"\n", ndf_status_name(r), m ? m : "(null)");
  assert_int_equal(r, NDF_EINVAL);
  assert_non_null(m);
  assert_non_null(strstr(m, "ctx"));
  assert_non_null(strstr(m, API));
  assert_int_equal(tu_poison_check(f.outbuf, f.outbytes), -1);
  ndf_array in2 = f.in.arr;
  in2.data = NULL;
  reject(&f, &in2, &f.out, NDF_EINVAL, "input", "input data NULL");
  ndf_array out2 = f.out;
  out2.data = NULL;
  reject(&f, &f.in.arr, &out2, NDF_EINVAL, "output", "output data NULL");
  fx_free(&f);
}

static void test_contract_output(void **state) {
  fixture f;
  fx_init(&f, state);
  ndf_array out = f.out;
  out.dtype = (ndf_dtype)42;
  reject(&f, &f.in.arr, &out, NDF_EINVAL, "output|dtype", "output dtype 42");
  out = f.out;
  out.shape[1] = 4;
  out.strides[0] = 24;
  reject(&f, &f.in.arr, &out, NDF_EINVAL, "output|shape", "output shape 4x4x6 for a 4x5x6 input");
  out = f.out;
  out.shape[2] = 7;
  out.strides[1] = 7;
  out.strides[0] = 35;
  reject(&f, &f.in.arr, &out, NDF_EINVAL, "output|shape", "output shape 4x5x7 for a 4x5x6 input");
  out = f.out;
  out.ndim = 2;
  out.shape[0] = 20;
  out.shape[1] = 6;
  out.strides[0] = 6;
  out.strides[1] = 1;
  reject(&f, &f.in.arr, &out, NDF_EINVAL, "output|shape|ndim", "2-D output for a 3-D input");
  /* an output that overlaps itself */
  out = f.out;
  out.strides[0] = 0;
  reject(&f, &f.in.arr, &out, NDF_EINVAL, "output|stride|overlap", "output stride 0");
  out = f.out;
  out.strides[0] = 7; /* axis 0 steps into rows 1 and 2 of the 5x6 planes */
  reject(&f, &f.in.arr, &out, NDF_EINVAL, "output|stride|overlap", "self-overlapping output strides");
  /* a uint8 output over the input itself (the header: an output must not
   * overlap the input) */
  {
    ndf_array same = f.in.arr;
    void *save = malloc(f.in.bytes);
    memcpy(save, f.in.base, f.in.bytes);
    ndf_status r = ndf_label(f.ctx, &f.in.arr, &same, NULL, 0, NULL);
    const char *m = ndf_errmsg(f.ctx);
    if (r != NDF_EINVAL || !(strstr(m, "output") || strstr(m, "overlap")) || !strstr(m, API))
      printf("in-place call: %s \"%s\"\n", ndf_status_name(r), m);
    assert_int_equal(r, NDF_EINVAL);
    assert_true(strstr(m, "output") || strstr(m, "overlap"));
    assert_non_null(strstr(m, API));
    assert_memory_equal(save, f.in.base, f.in.bytes);
    free(save);
  }
  /* partial overlap: an int16 output that starts inside a uint8 input */
  {
    tu_array both;
    int64_t sh1[1] = {400};
    assert_int_equal(tu_array_alloc(&both, NDF_UINT8, 1, sh1), 0);
    ndf_array a, b;
    assert_int_equal(ndf_array_init(&a, both.base, NDF_DEVICE_CPU, NDF_UINT8, 3, SHAPE), NDF_OK);
    assert_int_equal(ndf_array_init(&b, (uint8_t *)both.base + 60, NDF_DEVICE_CPU, NDF_INT16, 3, SHAPE), NDF_OK);
    for (int i = 0; i < 400; i++) ((uint8_t *)both.base)[i] = (uint8_t)(i % 3 == 0);
    ndf_status r = ndf_label(f.ctx, &a, &b, NULL, 0, NULL);
    const char *m = ndf_errmsg(f.ctx);
    if (r != NDF_EINVAL || !(strstr(m, "output") || strstr(m, "overlap")))
      printf("partial overlap of output and input: %s \"%s\"\n", ndf_status_name(r), m);
    assert_int_equal(r, NDF_EINVAL);
    assert_true(strstr(m, "output") || strstr(m, "overlap"));
    for (int i = 0; i < 400; i++) assert_int_equal(((uint8_t *)both.base)[i], i % 3 == 0);
    tu_array_free(&both);
  }
  /* bad input dtype */
  ndf_array in = f.in.arr;
  in.dtype = (ndf_dtype)42;
  reject(&f, &in, &f.out, NDF_EINVAL, "input|dtype", "input dtype 42");
  /* every integer and float output dtype is accepted */
  static const ndf_dtype good[] = {NDF_UINT8, NDF_INT8, NDF_UINT16, NDF_INT16, NDF_UINT32, NDF_INT32, NDF_FLOAT32, NDF_FLOAT64};
  for (size_t k = 0; k < sizeof good / sizeof good[0]; k++) {
    out = f.out;
    out.dtype = good[k];
    char what[64];
    snprintf(what, sizeof what, "output dtype %s", ndf_dtype_name(good[k]));
    ndf_status r = ndf_label(f.ctx, &f.in.arr, &out, NULL, 0, NULL);
    if (r != NDF_OK) printf("%s: rejected: %s\n", what, ndf_errmsg(f.ctx));
    assert_int_equal(r, NDF_OK);
  }
  fx_free(&f);
}

static void test_contract_structure(void **state) {
  fixture f;
  fx_init(&f, state);
  tu_array st2d, st4d, s332, s353, s111, s0, nonsym, nonsym2, ok3;
  const int64_t s33[2] = {3, 3}, s4[4] = {3, 3, 3, 3}, sh332[3] = {3, 3, 2}, sh353[3] = {3, 5, 3},
                sh111[3] = {1, 1, 1}, sh0[3] = {3, 0, 3}, s3[3] = {3, 3, 3};
  arr_nd(&st2d, NDF_BOOL, 2, s33, NULL);
  arr_nd(&st4d, NDF_BOOL, 4, s4, NULL);
  arr_nd(&s332, NDF_BOOL, 3, sh332, NULL);
  arr_nd(&s353, NDF_UINT8, 3, sh353, NULL);
  arr_nd(&s111, NDF_BOOL, 3, sh111, NULL);
  tu_set(&s111.arr, 0, 1);
  assert_int_equal(tu_array_alloc(&s0, NDF_BOOL, 3, sh0), 0);
  gbs(&ok3, 3, 1);
  /* not symmetric: one corner in, its mirror out */
  arr_nd(&nonsym, NDF_UINT8, 3, s3, NULL);
  assert_int_equal(ndf_generate_binary_structure(3, 1, &nonsym.arr), NDF_OK);
  tu_set(&nonsym.arr, 0, 1);
  /* not symmetric as truth values: a float structure whose mirror of an
   * in-element is -0.0 */
  arr_nd(&nonsym2, NDF_FLOAT32, 3, s3, NULL);
  for (int i = 0; i < 27; i++) tu_set(&nonsym2.arr, i, 0.5);
  tu_set(&nonsym2.arr, 26 - 5, -0.0);
  /* rank mismatch */
  f.st = &st2d.arr;
  reject(&f, &f.in.arr, &f.out, NDF_EINVAL, "structure", "2-D structure, 3-D input");
  f.st = &st4d.arr;
  reject(&f, &f.in.arr, &f.out, NDF_EINVAL, "structure", "4-D structure, 3-D input");
  /* not 3 per axis */
  f.st = &s332.arr;
  reject(&f, &f.in.arr, &f.out, NDF_EINVAL, "structure", "structure 3x3x2");
  f.st = &s353.arr;
  reject(&f, &f.in.arr, &f.out, NDF_EINVAL, "structure", "structure 3x5x3");
  f.st = &s111.arr;
  reject(&f, &f.in.arr, &f.out, NDF_EINVAL, "structure", "structure 1x1x1");
  f.st = &s0.arr;
  reject(&f, &f.in.arr, &f.out, NDF_EINVAL, "structure", "structure with an axis of length 0");
  /* not symmetric */
  f.st = &nonsym.arr;
  reject(&f, &f.in.arr, &f.out, NDF_EINVAL, "structure", "non-symmetric structure (one corner)");
  f.st = &nonsym2.arr;
  reject(&f, &f.in.arr, &f.out, NDF_EINVAL, "structure", "float structure with a -0.0 mirror of an in-element");
  /* also after a batch axis: a 2-D non-symmetric structure */
  {
    static const double ns2[9] = {1, 1, 0, 0, 1, 0, 0, 0, 0};
    tu_array t;
    arr_nd(&t, NDF_BOOL, 2, s33, ns2);
    f.st = &t.arr;
    f.batch = 1;
    reject(&f, &f.in.arr, &f.out, NDF_EINVAL, "structure", "non-symmetric 2-D structure after one batch axis");
    f.batch = 0;
    tu_array_free(&t);
  }
  /* NULL data, a CUDA structure, an unknown dtype */
  ndf_array nd = ok3.arr;
  nd.data = NULL;
  f.st = &nd;
  reject(&f, &f.in.arr, &f.out, NDF_EINVAL, "structure", "structure data NULL");
  ndf_array dev = ok3.arr;
  dev.device = NDF_DEVICE_CUDA;
  f.st = &dev;
  reject(&f, &f.in.arr, &f.out, -1, "structure", "CUDA structure");
  ndf_array bd = ok3.arr;
  bd.dtype = (ndf_dtype)42;
  f.st = &bd;
  reject(&f, &f.in.arr, &f.out, NDF_EINVAL, "structure", "structure dtype 42");
  /* the right structure passes, also strided / reversed */
  f.st = &ok3.arr;
  accept(&f, "3x3x3 cross");
  {
    tu_rng rng;
    tu_rng_seed(&rng, 5);
    tu_array rl;
    assert_int_equal(tu_array_relayout(&rl, &ok3.arr, TU_LAYOUT_PADDED | TU_LAYOUT_NEGATIVE, &rng), 0);
    f.st = &rl.arr;
    accept(&f, "strided reversed 3x3x3 cross");
    tu_array_free(&rl);
  }
  /* a 2-D structure is right after one batch axis, the 3-D one is not */
  f.batch = 1;
  f.st = &st2d.arr;
  accept(&f, "2-D structure after one batch axis");
  f.st = &ok3.arr;
  reject(&f, &f.in.arr, &f.out, NDF_EINVAL, "structure", "3-D structure after one batch axis");
  f.batch = 0;
  f.st = NULL;
  tu_array_free(&st2d);
  tu_array_free(&st4d);
  tu_array_free(&s332);
  tu_array_free(&s353);
  tu_array_free(&s111);
  tu_array_free(&s0);
  tu_array_free(&nonsym);
  tu_array_free(&nonsym2);
  tu_array_free(&ok3);
  fx_free(&f);
}

static void test_contract_batch_dims(void **state) {
  fixture f;
  fx_init(&f, state);
  const int bad[] = {-1, 3, 4, 100};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    f.batch = bad[k];
    char what[64];
    snprintf(what, sizeof what, "batch_dims %d of a 3-D input", bad[k]);
    reject(&f, &f.in.arr, &f.out, NDF_EINVAL, "batch_dims", what);
  }
  f.batch = 2;
  accept(&f, "batch_dims 2 of 3");
  fx_free(&f);
}

/* CUDA arrays: not supported (or no GPU here): any failure, output untouched. */
static void test_contract_cuda_arrays(void **state) {
  fixture f;
  fx_init(&f, state);
  ndf_array in = f.in.arr, out = f.out;
  in.device = NDF_DEVICE_CUDA;
  out.device = NDF_DEVICE_CUDA;
  reject(&f, &in, &out, -1, NULL, "CUDA input and output");
  reject(&f, &in, &f.out, -1, NULL, "CUDA input, host output");
  reject(&f, &f.in.arr, &out, -1, NULL, "host input, CUDA output");
  fx_free(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_scipy_cases),
      cmocka_unit_test(test_scipy_cases_strided_input_int32),
      cmocka_unit_test(test_scipy_cases_fortran),
      cmocka_unit_test(test_scipy_cases_strided_output_nf_null),
      cmocka_unit_test(test_scipy_cases_strided_both),
      cmocka_unit_test(test_empty_and_full_images),
      cmocka_unit_test(test_checkerboard),
      cmocka_unit_test(test_nan_and_negative_foreground),
      cmocka_unit_test(test_merges_and_numbering),
      cmocka_unit_test(test_structure_values),
      cmocka_unit_test(test_insufficient_bit_depth),
      cmocka_unit_test(test_num_features_null),
      cmocka_unit_test(test_empty_input),
      cmocka_unit_test(test_zero_stride_input),
      cmocka_unit_test(test_negative_output_stride),
      cmocka_unit_test(test_scan_order_and_overflow),
      cmocka_unit_test(test_scan_order_overflow_batch),
      cmocka_unit_test(test_bool_output),
      cmocka_unit_test(test_contract_null_arguments),
      cmocka_unit_test(test_contract_output),
      cmocka_unit_test(test_contract_structure),
      cmocka_unit_test(test_contract_batch_dims),
      cmocka_unit_test(test_contract_cuda_arrays),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
