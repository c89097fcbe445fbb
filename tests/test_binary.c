/*
 * test_binary.c -- the CPU backend of the binary morphology ops
 * (ndf_binary_erosion, _dilation, _opening, _closing, _propagation,
 * _fill_holes, ndf_binary_hit_or_miss) and the structure helpers
 * (ndf_generate_binary_structure, ndf_iterate_structure[_shape]) against
 * scipy.ndimage itself, plus hand-written cases of scipy's less obvious rules
 * and the contract (every rejected input: status, a message naming the op and
 * the argument, an untouched output).
 *
 * The scipy part runs tests/oracle_binary.py with a fresh seed per run
 * (printed; NDF_TEST_SEED repeats a run, NDF_TEST_CASES sets the number of
 * random cases), reads the cases it wrote and requires ndforge's output to
 * equal scipy's exactly (0/1 bytes), with NDF_BOOL and NDF_UINT8 outputs, the
 * input as written, in Fortran order and embedded in a larger buffer with
 * permuted / padded / negative strides (the mask and structure too), and with
 * strided outputs (whose gaps must keep their poison).  Cases whose
 * iterations < 1 sequence cycles (scipy would loop forever) must return
 * NDF_ENOTSUP with a message about the cycle and leave the output untouched.
 * The oracle's directory is kept when a case fails, and its path printed.
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
#error "NDF_TEST_ORACLE (path of tests/oracle_binary.py) must be defined by the build"
#endif

/* ------------------------------------------------------------------------ */
/* The ops                                                                   */

enum {
  B_EROSION = 0,
  B_DILATION,
  B_OPENING,
  B_CLOSING,
  B_PROPAGATION,
  B_FILL_HOLES,
  B_HIT_OR_MISS,
  B_NOPS, /* the ops that take an input image */
  B_GBS = B_NOPS,
  B_ITERATE,
  B_NKINDS
};

static const char *const kind_short[B_NKINDS] = {
    "erosion", "dilation", "opening", "closing", "propagation", "fill_holes", "hit_or_miss",
    "generate_binary_structure", "iterate_structure"};
static const char *const op_api[B_NOPS] = {
    "ndf_binary_erosion",     "ndf_binary_dilation",   "ndf_binary_opening",    "ndf_binary_closing",
    "ndf_binary_propagation", "ndf_binary_fill_holes", "ndf_binary_hit_or_miss"};

/* Op sets for the contract tests. */
#define OPS_ALL 0x7Fu
#define OPS_MASK 0x1Fu   /* erosion .. propagation use mask and border_value */
#define OPS_BINOPT 0x3Fu /* the ops that take ndf_binary_options */

static int kind_from_name(const char *s) {
  for (int k = 0; k < B_NKINDS; k++)
    if (!strcmp(s, kind_short[k])) return k;
  return -1;
}

static ndf_status call_op(ndf_ctx *ctx, int op, const ndf_array *in, ndf_array *out, const ndf_binary_options *o,
                          const ndf_hit_or_miss_options *h) {
  switch (op) {
    case B_EROSION: return ndf_binary_erosion(ctx, in, out, o);
    case B_DILATION: return ndf_binary_dilation(ctx, in, out, o);
    case B_OPENING: return ndf_binary_opening(ctx, in, out, o);
    case B_CLOSING: return ndf_binary_closing(ctx, in, out, o);
    case B_PROPAGATION: return ndf_binary_propagation(ctx, in, out, o);
    case B_FILL_HOLES: return ndf_binary_fill_holes(ctx, in, out, o);
    case B_HIT_OR_MISS: return ndf_binary_hit_or_miss(ctx, in, out, h);
    default: return NDF_EINTERNAL;
  }
}

/* ------------------------------------------------------------------------ */
/* Cases written by the oracle                                               */

typedef struct bin_case {
  char line[1024]; /* the manifest line, for messages */
  int id;
  int kind; /* B_* */
  char dtype[16];
  int ndim;
  int64_t shape[NDF_MAX_NDIM];
  int batch;
  int iterations;
  int border_value;
  int brute_force;
  int norigin;
  int64_t origin[NDF_MAX_SPATIAL];
  int norigin2; /* -1: not given */
  int64_t origin2[NDF_MAX_SPATIAL];
  int norigin_out;
  int64_t origin_out[NDF_MAX_SPATIAL];
  int rank, connectivity;
  int expect_cycle;
  char structure[64], structure2[64], mask[64], input[64], expected[64];
} bin_case;

typedef tu_oracle_group bin_state; /* cases: bin_case records */
static bin_case *cases_of(const bin_state *s) { return s->cases; }

static int parse_case(const char *line, bin_case *c) {
  memset(c, 0, sizeof *c);
  c->kind = -1;
  c->iterations = 1;
  c->norigin2 = -1;
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
      c->kind = kind_from_name(v);
      if (c->kind < 0) {
        fprintf(stderr, "unknown op '%s' in the manifest\n", v);
        return -1;
      }
    }
    else if (!strcmp(k, "dtype")) snprintf(c->dtype, sizeof c->dtype, "%s", v);
    else if (!strcmp(k, "shape")) c->ndim = tu_parse_i64s(v, c->shape, NDF_MAX_NDIM);
    else if (!strcmp(k, "batch")) c->batch = atoi(v);
    else if (!strcmp(k, "iterations")) c->iterations = atoi(v);
    else if (!strcmp(k, "border_value")) c->border_value = atoi(v);
    else if (!strcmp(k, "brute_force")) c->brute_force = atoi(v);
    else if (!strcmp(k, "origin")) c->norigin = tu_parse_i64s(v, c->origin, NDF_MAX_SPATIAL);
    else if (!strcmp(k, "origin2")) c->norigin2 = tu_parse_i64s(v, c->origin2, NDF_MAX_SPATIAL);
    else if (!strcmp(k, "origin_out")) c->norigin_out = tu_parse_i64s(v, c->origin_out, NDF_MAX_SPATIAL);
    else if (!strcmp(k, "rank")) c->rank = atoi(v);
    else if (!strcmp(k, "connectivity")) c->connectivity = atoi(v);
    else if (!strcmp(k, "expect")) c->expect_cycle = !strcmp(v, "cycle");
    else if (!strcmp(k, "structure")) snprintf(c->structure, sizeof c->structure, "%s", v);
    else if (!strcmp(k, "structure2")) snprintf(c->structure2, sizeof c->structure2, "%s", v);
    else if (!strcmp(k, "mask")) snprintf(c->mask, sizeof c->mask, "%s", v);
    else if (!strcmp(k, "input")) snprintf(c->input, sizeof c->input, "%s", v);
    else if (!strcmp(k, "expected")) snprintf(c->expected, sizeof c->expected, "%s", v);
    /* unknown keys are informational */
  }
  if (c->kind < 0) return -1;
  if (c->kind == B_GBS) return c->expected[0] && c->rank > 0 ? 0 : -1;
  if (c->kind == B_ITERATE) return c->expected[0] && c->structure[0] ? 0 : -1;
  return c->input[0] && (c->expected[0] || c->expect_cycle) && c->ndim > 0 ? 0 : -1;
}


static int parse_line(const char *line, void *c) { return parse_case(line, c); }

static int summary(const bin_state *s) {
  int per[B_NKINDS] = {0}, cycles = 0;
  for (int i = 0; i < s->ncases; i++) {
    per[cases_of(s)[i].kind]++;
    cycles += cases_of(s)[i].expect_cycle;
  }
  printf("%d scipy cases (%d expect a cycle):", s->ncases, cycles);
  for (int k = 0; k < B_NKINDS; k++) printf(" %s %d%s", kind_short[k], per[k], k + 1 < B_NKINDS ? "," : "\n");
  return 0;
}

static int group_setup(void **state) {
  return tu_oracle_group_setup(state, "ndf-test-binary", 600, NDF_TEST_PYTHON, NDF_TEST_ORACLE, sizeof(bin_case), parse_line, summary);
}
#define group_teardown tu_oracle_group_teardown

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

static void unflat(const ndf_array *a, int64_t flat, int64_t *idx) {
  for (int i = a->ndim - 1; i >= 0; i--) {
    int64_t n = a->shape[i] > 0 ? a->shape[i] : 1;
    idx[i] = flat % n;
    flat /= n;
  }
}

/* Compares a 0/1 result (NDF_BOOL or NDF_UINT8, any strides) with expected
 * (any dtype, non-zero = 1): every output byte must be exactly 0 or 1 as
 * expected.  Returns the number of differences and describes the first few. */
static int64_t compare01(const ndf_array *expected, const ndf_array *got, char *msg, size_t len) {
  int64_t n = ndf_array_size(expected), bad = 0;
  size_t used = 0;
  msg[0] = 0;
  if (ndf_array_size(got) != n) {
    snprintf(msg, len, "size %lld, expected %lld", (long long)ndf_array_size(got), (long long)n);
    return n ? n : 1;
  }
  for (int64_t i = 0; i < n; i++) {
    int e = tu_get(expected, i) != 0;
    int g = *(const uint8_t *)tu_elem_ptr(got, i);
    if (g == e) continue;
    if (bad < 6 && used + 80 < len) {
      int64_t idx[NDF_MAX_NDIM];
      unflat(expected, i, idx);
      used += (size_t)snprintf(msg + used, len - used, "  at [");
      for (int d = 0; d < expected->ndim && used + 24 < len; d++)
        used += (size_t)snprintf(msg + used, len - used, "%s%lld", d ? "," : "", (long long)idx[d]);
      used += (size_t)snprintf(msg + used, len - used, "]: expected %d got %d\n", e, g);
    }
    bad++;
  }
  return bad;
}

static size_t arr_bytes(const ndf_array *a) { return (size_t)ndf_array_size(a) * ndf_dtype_size(a->dtype); }

/* ------------------------------------------------------------------------ */
/* Running one oracle case                                                   */

enum { IN_ASIS, IN_STRIDED, IN_FORTRAN };
enum { OUT_C, OUT_STRIDED, OUT_FORTRAN };

typedef struct variant {
  int in, out;
  ndf_dtype out_dtype;
  const char *name;
} variant;

static const variant VARIANTS[] = {
    {IN_ASIS, OUT_C, NDF_BOOL, "input as read, C bool output"},
    {IN_STRIDED, OUT_C, NDF_UINT8, "strided input/mask/structure, C uint8 output"},
    {IN_FORTRAN, OUT_FORTRAN, NDF_BOOL, "Fortran input/mask/structure, Fortran bool output"},
    {IN_ASIS, OUT_STRIDED, NDF_UINT8, "input as read, strided uint8 output"},
    {IN_STRIDED, OUT_STRIDED, NDF_BOOL, "strided input/mask/structure, strided bool output"},
};

static int read_npy(const bin_state *s, const char *name, ndfio_image *img) {
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
                                 : TU_LAYOUT_PADDED | (tu_rng_chance(rng, 0.5) ? TU_LAYOUT_NEGATIVE : 0);
  if (tu_array_relayout(t, src, layout, rng)) return -1;
  *use = &t->arr;
  return 0;
}

static int out_layout(int outv) {
  return outv == OUT_STRIDED ? TU_LAYOUT_PADDED : outv == OUT_FORTRAN ? TU_LAYOUT_FORTRAN : TU_LAYOUT_C;
}

/* generate_binary_structure / iterate_structure cases. */
static int run_structure_case(bin_state *s, const bin_case *c, const variant *v, tu_rng *rng, char *msg,
                              size_t msglen) {
  ndfio_image exp = {0}, st = {0};
  tu_array st2 = {0}, out = {0};
  int rc = -1;
  if (read_npy(s, c->expected, &exp)) goto done;
  ndf_array like = exp.arr;
  like.dtype = v->out_dtype;
  if (tu_array_like(&out, &like, out_layout(v->out), rng)) goto done;
  if (c->kind == B_GBS) {
    ndf_status r = ndf_generate_binary_structure(c->rank, c->connectivity, &out.arr);
    if (r != NDF_OK) {
      snprintf(msg, msglen, "ndf_generate_binary_structure returned %s: %s", ndf_status_name(r), ndf_last_error());
      goto done;
    }
  } else {
    if (read_npy(s, c->structure, &st)) goto done;
    const ndf_array *stru;
    if (lay(&st.arr, &st2, v->in, rng, &stru)) goto done;
    int64_t shape[NDF_MAX_NDIM];
    for (int i = 0; i < NDF_MAX_NDIM; i++) shape[i] = -7;
    ndf_status r = ndf_iterate_structure_shape(stru, c->iterations, shape);
    if (r != NDF_OK) {
      snprintf(msg, msglen, "ndf_iterate_structure_shape returned %s: %s", ndf_status_name(r), ndf_last_error());
      goto done;
    }
    for (int i = 0; i < exp.arr.ndim; i++) {
      if (shape[i] != exp.arr.shape[i]) {
        snprintf(msg, msglen, "ndf_iterate_structure_shape: axis %d is %lld, scipy's is %lld", i,
                 (long long)shape[i], (long long)exp.arr.shape[i]);
        goto done;
      }
    }
    int64_t oout[NDF_MAX_SPATIAL];
    for (int i = 0; i < NDF_MAX_SPATIAL; i++) oout[i] = -12345;
    int give_out = c->norigin > 0 ? 1 : tu_rng_chance(rng, 0.5);
    r = ndf_iterate_structure(stru, c->iterations, &out.arr, c->norigin, c->norigin ? c->origin : NULL,
                              give_out ? oout : NULL);
    if (r != NDF_OK) {
      snprintf(msg, msglen, "ndf_iterate_structure returned %s: %s", ndf_status_name(r), ndf_last_error());
      goto done;
    }
    for (int i = 0; i < c->norigin; i++) {
      /* scipy returns one origin per axis; for one given origin all are equal */
      if (oout[i] != c->origin_out[i]) {
        snprintf(msg, msglen, "origin_out[%d] is %lld, scipy's is %lld", i, (long long)oout[i],
                 (long long)c->origin_out[i]);
        goto done;
      }
    }
  }
  char detail[1024];
  int64_t bad = compare01(&exp.arr, &out.arr, detail, sizeof detail);
  if (bad) {
    snprintf(msg, msglen, "%lld elements differ from scipy:\n%s", (long long)bad, detail);
    goto done;
  }
  int64_t gap = tu_check_gaps(&out);
  if (gap >= 0) {
    snprintf(msg, msglen, "wrote outside the output's elements (buffer byte %lld)", (long long)gap);
    goto done;
  }
  rc = 0;
done:
  ndfio_image_free(&exp);
  ndfio_image_free(&st);
  tu_array_free(&st2);
  tu_array_free(&out);
  return rc;
}

/* Returns 0 when the case passes; prints what went wrong otherwise. */
static int run_case(bin_state *s, const bin_case *c, const variant *v, tu_rng *rng, int verbose) {
  char msg[2048] = "";
  int rc = -1;
  if (c->kind >= B_NOPS) {
    rc = run_structure_case(s, c, v, rng, msg, sizeof msg);
    if (rc != 0 && verbose) printf("FAIL case %d (%s): %s\n  %s\n", c->id, v->name, c->line, msg);
    return rc;
  }
  ndfio_image in = {0}, exp = {0}, st = {0}, st2 = {0}, mask = {0};
  tu_array in_l = {0}, st_l = {0}, st2_l = {0}, mask_l = {0}, out = {0};
  void *insave = NULL;
  ndf_binary_options o;
  ndf_binary_options_init(&o);
  ndf_hit_or_miss_options h;
  ndf_hit_or_miss_options_init(&h);
  if (read_npy(s, c->input, &in)) goto done;
  if (c->expected[0] && read_npy(s, c->expected, &exp)) goto done;
  if (c->structure[0] && read_npy(s, c->structure, &st)) goto done;
  if (c->structure2[0] && read_npy(s, c->structure2, &st2)) goto done;
  if (c->mask[0] && read_npy(s, c->mask, &mask)) goto done;
  ndf_dtype want;
  if (ndf_dtype_from_name(c->dtype, &want) != NDF_OK || want != in.arr.dtype) {
    snprintf(msg, sizeof msg, "dtype of the input file is not %s", c->dtype);
    goto done;
  }

  const ndf_array *input, *stru = NULL, *stru2 = NULL, *msk = NULL;
  if (lay(&in.arr, &in_l, v->in, rng, &input)) goto done;
  if (c->structure[0] && lay(&st.arr, &st_l, v->in, rng, &stru)) goto done;
  if (c->structure2[0] && lay(&st2.arr, &st2_l, v->in, rng, &stru2)) goto done;
  if (c->mask[0] && lay(&mask.arr, &mask_l, v->in, rng, &msk)) goto done;
  ndf_array like = in.arr;
  like.dtype = v->out_dtype;
  if (tu_array_like(&out, &like, out_layout(v->out), rng)) goto done;
  size_t inbytes = input == &in.arr ? arr_bytes(&in.arr) : in_l.bytes;
  const void *inbase = input == &in.arr ? in.arr.data : in_l.base;
  insave = malloc(inbytes ? inbytes : 1);
  memcpy(insave, inbase, inbytes);

  o.structure = stru;
  o.iterations = c->iterations;
  o.mask = msk;
  o.border_value = c->border_value;
  o.norigin = c->norigin;
  for (int i = 0; i < c->norigin; i++) o.origin[i] = c->origin[i];
  o.brute_force = c->brute_force;
  o.batch_dims = c->batch;
  if (c->kind == B_PROPAGATION) {
    /* iterations is ignored; brute_force changes nothing */
    const int its[] = {1, 2, 5, 0, -1};
    o.iterations = its[tu_rng_int(rng, 0, 4)];
    o.brute_force = (int)tu_rng_int(rng, 0, 1);
  } else if (c->kind == B_FILL_HOLES) {
    /* only structure, origin and batch_dims are used */
    const int its[] = {1, 3, 0, -1};
    o.iterations = its[tu_rng_int(rng, 0, 3)];
    o.border_value = (int)tu_rng_int(rng, 0, 1);
    o.brute_force = (int)tu_rng_int(rng, 0, 1);
  }
  h.structure1 = stru;
  h.structure2 = stru2;
  h.norigin1 = c->norigin;
  for (int i = 0; i < c->norigin; i++) h.origin1[i] = c->origin[i];
  h.norigin2 = c->norigin2;
  for (int i = 0; i < c->norigin2; i++) h.origin2[i] = c->origin2[i];
  h.batch_dims = c->batch;

  ndf_status r = call_op(s->ctx, c->kind, input, &out.arr, &o, &h);
  const char *m = ndf_errmsg(s->ctx);
  if (c->expect_cycle) {
    if (r != NDF_ENOTSUP || !strstr(m, "cycl") || !strstr(m, op_api[c->kind])) {
      snprintf(msg, sizeof msg,
               "the iterations < 1 sequence cycles (scipy loops forever): want NDF_ENOTSUP and a message "
               "naming %s and the cycle; got %s \"%s\"",
               op_api[c->kind], ndf_status_name(r), m);
      goto done;
    }
    int64_t p = tu_poison_check(out.base, out.bytes);
    if (p >= 0) {
      snprintf(msg, sizeof msg, "NDF_ENOTSUP (cycle) but the output buffer was written (byte %lld)", (long long)p);
      goto done;
    }
  } else {
    if (r != NDF_OK) {
      snprintf(msg, sizeof msg, "returned %s: %s", ndf_status_name(r), m);
      goto done;
    }
    char detail[1024];
    int64_t bad = compare01(&exp.arr, &out.arr, detail, sizeof detail);
    if (bad) {
      snprintf(msg, sizeof msg, "%lld of %lld elements differ from scipy:\n%s", (long long)bad,
               (long long)ndf_array_size(&exp.arr), detail);
      goto done;
    }
    int64_t gap = tu_check_gaps(&out);
    if (gap >= 0) {
      snprintf(msg, sizeof msg, "wrote outside the output's elements (buffer byte %lld)", (long long)gap);
      goto done;
    }
  }
  if (memcmp(insave, inbase, inbytes) != 0) {
    snprintf(msg, sizeof msg, "the input buffer was modified");
    goto done;
  }
  rc = 0;
done:
  if (rc != 0 && verbose) {
    printf("FAIL case %d (%s): %s\n  %s\n", c->id, v->name, c->line, msg);
    if (c->kind == B_PROPAGATION || c->kind == B_FILL_HOLES)
      printf("  (passed iterations=%d border_value=%d brute_force=%d, which %s ignores)\n", o.iterations,
             o.border_value, o.brute_force, op_api[c->kind]);
  }
  free(insave);
  ndfio_image_free(&in);
  ndfio_image_free(&exp);
  ndfio_image_free(&st);
  ndfio_image_free(&st2);
  ndfio_image_free(&mask);
  tu_array_free(&in_l);
  tu_array_free(&st_l);
  tu_array_free(&st2_l);
  tu_array_free(&mask_l);
  tu_array_free(&out);
  return rc;
}

static void run_all(void **state, int vi) {
  bin_state *s = *state;
  const variant *v = &VARIANTS[vi];
  tu_rng rng;
  tu_rng_seed(&rng, s->seed * 37u + (uint64_t)vi);
  int failed = 0, failed_kind[B_NKINDS] = {0};
  for (int i = 0; i < s->ncases; i++) {
    if (run_case(s, &cases_of(s)[i], v, &rng, failed < 12) != 0) {
      failed++;
      failed_kind[cases_of(s)[i].kind]++;
    }
  }
  if (failed) {
    s->keep_dir = 1;
    printf("%d of %d scipy cases failed (%s); seed %llu, cases in %s\n  failures per op:", failed, s->ncases,
           v->name, (unsigned long long)s->seed, s->dir);
    for (int k = 0; k < B_NKINDS; k++) printf(" %s %d", kind_short[k], failed_kind[k]);
    printf("\n");
  }
  assert_int_equal(failed, 0);
}

static void test_scipy_cases(void **state) { run_all(state, 0); }
static void test_scipy_cases_strided_input_uint8(void **state) { run_all(state, 1); }
static void test_scipy_cases_fortran(void **state) { run_all(state, 2); }
static void test_scipy_cases_strided_output_uint8(void **state) { run_all(state, 3); }
static void test_scipy_cases_strided_both(void **state) { run_all(state, 4); }

/* ------------------------------------------------------------------------ */
/* Hand-written cases                                                        */

static ndf_ctx *ctx_of(void **state) { return ((bin_state *)*state)->ctx; }

static void arr_nd(tu_array *t, ndf_dtype dt, int ndim, const int64_t *shape, const double *v) {
  assert_int_equal(tu_array_alloc(t, dt, ndim, shape), 0);
  int64_t n = ndf_array_size(&t->arr);
  for (int64_t i = 0; i < n; i++) tu_set(&t->arr, i, v ? v[i] : 0);
}

static void arr1d(tu_array *t, ndf_dtype dt, int n, const double *v) {
  int64_t sh[1] = {n};
  arr_nd(t, dt, 1, sh, v);
}

/* A poisoned output shaped like in. */
static void out_like(tu_array *t, const ndf_array *in, ndf_dtype dt) {
  assert_int_equal(tu_array_alloc(t, dt, in->ndim, in->shape), 0);
  tu_poison(t->base, t->bytes);
}

static void expect_values(const tu_array *got, const double *want, const char *what) {
  int64_t n = ndf_array_size(&got->arr);
  int bad = 0;
  for (int64_t i = 0; i < n; i++) {
    int g = *(const uint8_t *)tu_elem_ptr(&got->arr, i);
    int e = want[i] != 0;
    if (g != e) {
      if (bad < 8) printf("%s: element %lld expected %d got %d\n", what, (long long)i, e, g);
      bad++;
    }
  }
  if (bad) fail();
}

/* §2.1: the miss part of hit-or-miss counts outside the image as background
 * (scipy: binary_hit_or_miss([1], [0,1,0]) == [1]). */
static void test_hit_or_miss_outside_is_background(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  static const double s010[] = {0, 1, 0};
  static const struct {
    int n;
    double in[6], want[6];
  } cases[] = {
      {1, {1}, {1}},
      {2, {1, 1}, {0, 0}},
      {6, {0, 1, 0, 1, 1, 0}, {0, 1, 0, 0, 0, 0}},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    for (int dt = NDF_BOOL; dt <= NDF_FLOAT64; dt++) {
      for (int odt = 0; odt < 2; odt++) {
        tu_array in, st, out;
        arr1d(&in, (ndf_dtype)dt, cases[k].n, cases[k].in);
        arr1d(&st, NDF_BOOL, 3, s010);
        out_like(&out, &in.arr, odt ? NDF_UINT8 : NDF_BOOL);
        ndf_hit_or_miss_options h;
        ndf_hit_or_miss_options_init(&h);
        h.structure1 = &st.arr;
        ndf_status r = ndf_binary_hit_or_miss(ctx, &in.arr, &out.arr, &h);
        if (r != NDF_OK) printf("hit_or_miss case %zu dtype %s: %s\n", k, ndf_dtype_name((ndf_dtype)dt), ndf_errmsg(ctx));
        assert_int_equal(r, NDF_OK);
        char what[96];
        snprintf(what, sizeof what, "hit_or_miss case %zu input %s output %s", k, ndf_dtype_name((ndf_dtype)dt),
                 odt ? "uint8" : "bool");
        expect_values(&out, cases[k].want, what);
        tu_array_free(&in);
        tu_array_free(&st);
        tu_array_free(&out);
      }
    }
  }
}

/* §2.1: fill_holes' structure is the background connectivity: a hole that
 * touches the outside only diagonally is filled with the default cross and
 * kept with the full 3x3 structure (values from scipy 1.10). */
static void test_fill_holes_background_connectivity(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  static const double a[] = {0, 1, 0, 0, 0, /**/ 1, 0, 1, 0, 0, /**/ 0, 1, 0, 0, 0, /**/ 0, 0, 0, 0, 0};
  static const double a_cross[] = {0, 1, 0, 0, 0, /**/ 1, 1, 1, 0, 0, /**/ 0, 1, 0, 0, 0, /**/ 0, 0, 0, 0, 0};
  static const double b[] = {0, 0, 0, 0, 0, 0, /**/ 0, 1, 1, 1, 0, 0, /**/ 0, 1, 0, 1, 0, 0,
                             /**/ 0, 1, 1, 0, 0, 0, /**/ 0, 0, 0, 0, 0, 0};
  static const double b_cross[] = {0, 0, 0, 0, 0, 0, /**/ 0, 1, 1, 1, 0, 0, /**/ 0, 1, 1, 1, 0, 0,
                                   /**/ 0, 1, 1, 0, 0, 0, /**/ 0, 0, 0, 0, 0, 0};
  const int64_t sa[2] = {4, 5}, sb[2] = {5, 6}, s33[2] = {3, 3};
  static const double ones9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  tu_array full;
  arr_nd(&full, NDF_UINT8, 2, s33, ones9);
  for (int which = 0; which < 2; which++) {
    const double *img = which ? b : a, *cross = which ? b_cross : a_cross;
    const int64_t *sh = which ? sb : sa;
    for (int usefull = 0; usefull < 2; usefull++) {
      tu_array in, out;
      arr_nd(&in, NDF_FLOAT32, 2, sh, img);
      out_like(&out, &in.arr, NDF_BOOL);
      ndf_binary_options o;
      ndf_binary_options_init(&o);
      if (usefull) o.structure = &full.arr;
      ndf_status r = ndf_binary_fill_holes(ctx, &in.arr, &out.arr, &o);
      if (r != NDF_OK) printf("fill_holes: %s\n", ndf_errmsg(ctx));
      assert_int_equal(r, NDF_OK);
      char what[96];
      snprintf(what, sizeof what, "fill_holes image %c, %s structure", which ? 'b' : 'a',
               usefull ? "full 3x3" : "default cross");
      expect_values(&out, usefull ? img : cross, what);
      tu_array_free(&in);
      tu_array_free(&out);
    }
  }
  tu_array_free(&full);
}

/* §2.1: an all-False structure makes erosion all True and dilation all False
 * (where the mask allows; elsewhere the input), for any iterations and
 * border_value (values from scipy 1.10). */
static void test_empty_structure(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  static const double x[8] = {0, 1, 1, 0, 1, 0, 0, 1}, m[8] = {1, 1, 0, 1, 1, 1, 0, 1};
  static const double ero_mask[8] = {1, 1, 1, 1, 1, 1, 0, 1}, dil_mask[8] = {0, 0, 1, 0, 0, 0, 0, 0};
  static const double ones[8] = {1, 1, 1, 1, 1, 1, 1, 1}, zeros[8] = {0};
  static const double z3[3] = {0, 0, 0};
  const int its[] = {1, 2, 5, -1};
  for (int dil = 0; dil < 2; dil++) {
    for (size_t ii = 0; ii < sizeof its / sizeof its[0]; ii++) {
      for (int bv = 0; bv < 2; bv++) {
        for (int usemask = 0; usemask < 2; usemask++) {
          tu_array in, st, mk, out;
          arr1d(&in, NDF_INT16, 8, x);
          arr1d(&st, NDF_BOOL, 3, z3);
          arr1d(&mk, NDF_UINT8, 8, m);
          out_like(&out, &in.arr, NDF_BOOL);
          ndf_binary_options o;
          ndf_binary_options_init(&o);
          o.structure = &st.arr;
          o.iterations = its[ii];
          o.border_value = bv;
          o.brute_force = (int)(ii & 1);
          if (usemask) o.mask = &mk.arr;
          ndf_status r = dil ? ndf_binary_dilation(ctx, &in.arr, &out.arr, &o) : ndf_binary_erosion(ctx, &in.arr, &out.arr, &o);
          char what[128];
          snprintf(what, sizeof what, "%s, all-False structure, iterations %d, border_value %d%s",
                   dil ? "dilation" : "erosion", its[ii], bv, usemask ? ", mask" : "");
          if (r != NDF_OK) printf("%s: %s %s\n", what, ndf_status_name(r), ndf_errmsg(ctx));
          assert_int_equal(r, NDF_OK);
          const double *want = dil ? (usemask ? dil_mask : zeros) : (usemask ? ero_mask : ones);
          expect_values(&out, want, what);
          tu_array_free(&in);
          tu_array_free(&st);
          tu_array_free(&mk);
          tu_array_free(&out);
        }
      }
    }
  }
}

/* §2.1 pitfall: with the centre of the structure False (after the origin),
 * iterations < 1 can alternate between two sets forever in scipy; ndforge
 * returns NDF_ENOTSUP naming the cycle, output untouched.  A fixed count of
 * iterations still works (values from scipy 1.10). */
static void test_oscillation_is_enotsup(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  static const double s101[3] = {1, 0, 1};
  static const double pix[8] = {0, 0, 0, 1, 0, 0, 0, 0};
  static const double alt[6] = {1, 0, 1, 0, 1, 0};
  struct {
    int op, n, iterations, border_value;
    const double *in;
  } cyc[] = {
      {B_DILATION, 8, -1, 0, pix},   {B_DILATION, 8, 0, 0, pix},     {B_PROPAGATION, 8, 1, 0, pix},
      {B_EROSION, 6, -1, 1, alt},    {B_OPENING, 6, -1, 1, alt},     {B_CLOSING, 8, -1, 0, pix},
  };
  for (size_t k = 0; k < sizeof cyc / sizeof cyc[0]; k++) {
    for (int bf = 0; bf < 2; bf++) {
      tu_array in, st, out;
      arr1d(&in, NDF_UINT8, cyc[k].n, cyc[k].in);
      arr1d(&st, NDF_BOOL, 3, s101);
      out_like(&out, &in.arr, NDF_BOOL);
      ndf_binary_options o;
      ndf_binary_options_init(&o);
      o.structure = &st.arr;
      o.iterations = cyc[k].iterations;
      o.border_value = cyc[k].border_value;
      o.brute_force = bf;
      ndf_status r = call_op(ctx, cyc[k].op, &in.arr, &out.arr, &o, NULL);
      const char *m = ndf_errmsg(ctx);
      int ok = r == NDF_ENOTSUP && strstr(m, "cycl") && strstr(m, op_api[cyc[k].op]);
      if (!ok)
        printf("%s, structure [1,0,1], iterations %d, brute_force %d: got %s \"%s\"; want NDF_ENOTSUP and a "
               "message naming %s and the cycle\n",
               op_api[cyc[k].op], cyc[k].iterations, bf, ndf_status_name(r), m, op_api[cyc[k].op]);
      assert_int_equal(r, NDF_ENOTSUP);
      assert_non_null(strstr(m, "cycl"));
      assert_non_null(strstr(m, op_api[cyc[k].op]));
      assert_int_equal(tu_poison_check(out.base, out.bytes), -1);
      tu_array_free(&in);
      tu_array_free(&st);
      tu_array_free(&out);
    }
  }
  /* a fixed count: scipy's values */
  static const double d3[8] = {1, 0, 1, 0, 1, 0, 1, 0}, d4[8] = {0, 1, 0, 1, 0, 1, 0, 1};
  static const double e2[6] = {1, 0, 1, 0, 1, 0};
  for (int it = 3; it <= 4; it++) {
    tu_array in, st, out;
    arr1d(&in, NDF_FLOAT32, 8, pix);
    arr1d(&st, NDF_BOOL, 3, s101);
    out_like(&out, &in.arr, NDF_UINT8);
    ndf_binary_options o;
    ndf_binary_options_init(&o);
    o.structure = &st.arr;
    o.iterations = it;
    ndf_status r = ndf_binary_dilation(ctx, &in.arr, &out.arr, &o);
    if (r != NDF_OK) printf("dilation [1,0,1] iterations %d: %s\n", it, ndf_errmsg(ctx));
    assert_int_equal(r, NDF_OK);
    expect_values(&out, it == 3 ? d3 : d4, it == 3 ? "dilation [1,0,1] x3" : "dilation [1,0,1] x4");
    tu_array_free(&in);
    tu_array_free(&st);
    tu_array_free(&out);
  }
  {
    tu_array in, st, out;
    arr1d(&in, NDF_INT16, 6, alt);
    arr1d(&st, NDF_BOOL, 3, s101);
    out_like(&out, &in.arr, NDF_BOOL);
    ndf_binary_options o;
    ndf_binary_options_init(&o);
    o.structure = &st.arr;
    o.iterations = 2;
    o.border_value = 1;
    ndf_status r = ndf_binary_erosion(ctx, &in.arr, &out.arr, &o);
    if (r != NDF_OK) printf("erosion [1,0,1] iterations 2: %s\n", ndf_errmsg(ctx));
    assert_int_equal(r, NDF_OK);
    expect_values(&out, e2, "erosion [1,0,1] x2, border 1");
    tu_array_free(&in);
    tu_array_free(&st);
    tu_array_free(&out);
  }
}

/* Zero-stride (broadcast) inputs give the result of the materialized input. */
static void test_zero_stride_input(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  tu_rng rng;
  tu_rng_seed(&rng, ((bin_state *)*state)->seed + 99);
  for (int trial = 0; trial < 20; trial++) {
    int64_t n = tu_rng_int(&rng, 1, 12), rows = tu_rng_int(&rng, 1, 6);
    tu_array row, full, o1, o2;
    int64_t sh1[1] = {n}, sh2[2] = {rows, n};
    arr_nd(&row, NDF_UINT8, 1, sh1, NULL);
    for (int64_t i = 0; i < n; i++) tu_set(&row.arr, i, tu_rng_chance(&rng, 0.6) ? 1 : 0);
    arr_nd(&full, NDF_UINT8, 2, sh2, NULL);
    for (int64_t i = 0; i < rows * n; i++) tu_set(&full.arr, i, tu_get(&row.arr, i % n));
    ndf_array bc = row.arr;
    bc.ndim = 2;
    bc.shape[0] = rows;
    bc.shape[1] = n;
    bc.strides[0] = 0;
    bc.strides[1] = 1;
    for (int op = 0; op < B_NOPS; op++) {
      out_like(&o1, &full.arr, NDF_BOOL);
      out_like(&o2, &full.arr, NDF_BOOL);
      ndf_binary_options o;
      ndf_binary_options_init(&o);
      o.iterations = (int)tu_rng_int(&rng, 1, 3);
      o.border_value = (int)tu_rng_int(&rng, 0, 1);
      ndf_hit_or_miss_options h;
      ndf_hit_or_miss_options_init(&h);
      ndf_status r1 = call_op(ctx, op, &full.arr, &o1.arr, &o, &h);
      ndf_status r2 = call_op(ctx, op, &bc, &o2.arr, &o, &h);
      if (r1 != NDF_OK || r2 != NDF_OK) printf("%s zero-stride: %s / %s: %s\n", op_api[op], ndf_status_name(r1), ndf_status_name(r2), ndf_errmsg(ctx));
      assert_int_equal(r1, NDF_OK);
      assert_int_equal(r2, NDF_OK);
      char msg[1024];
      int64_t bad = compare01(&o1.arr, &o2.arr, msg, sizeof msg);
      if (bad) printf("%s: broadcast input (%lldx%lld) differs from its copy:\n%s", op_api[op], (long long)rows, (long long)n, msg);
      assert_int_equal(bad, 0);
      tu_array_free(&o1);
      tu_array_free(&o2);
    }
    tu_array_free(&row);
    tu_array_free(&full);
  }
}

/* An input with an axis of length 0 (scipy returns an empty result): OK,
 * nothing written. */
static void test_empty_input(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  const int64_t shapes[3][3] = {{0, 5, 4}, {3, 0, 4}, {3, 5, 0}};
  for (int k = 0; k < 3; k++) {
    for (int batch = 0; batch < 2; batch++) {
      uint8_t inbuf[4] = {1, 1, 1, 1}, outbuf[64];
      ndf_array in, out;
      assert_int_equal(ndf_array_init(&in, inbuf, NDF_DEVICE_CPU, NDF_UINT8, 3, shapes[k]), NDF_OK);
      assert_int_equal(ndf_array_init(&out, outbuf, NDF_DEVICE_CPU, NDF_BOOL, 3, shapes[k]), NDF_OK);
      for (int op = 0; op < B_NOPS; op++) {
        tu_poison(outbuf, sizeof outbuf);
        ndf_binary_options o;
        ndf_binary_options_init(&o);
        o.batch_dims = batch;
        o.iterations = op == B_EROSION ? -1 : 1;
        ndf_hit_or_miss_options h;
        ndf_hit_or_miss_options_init(&h);
        h.batch_dims = batch;
        ndf_status r = call_op(ctx, op, &in, &out, &o, &h);
        if (r != NDF_OK) printf("%s on a %lldx%lldx%lld input: %s\n", op_api[op], (long long)shapes[k][0],
                                (long long)shapes[k][1], (long long)shapes[k][2], ndf_errmsg(ctx));
        assert_int_equal(r, NDF_OK);
        assert_int_equal(tu_poison_check(outbuf, sizeof outbuf), -1);
      }
    }
  }
}

/* Defaults of the option initializers, as the header documents them. */
static void test_options_init(void **state) {
  (void)state;
  ndf_binary_options o;
  memset(&o, 0x5A, sizeof o);
  ndf_binary_options_init(&o);
  assert_null(o.structure);
  assert_int_equal(o.iterations, 1);
  assert_null(o.mask);
  assert_int_equal(o.border_value, 0);
  assert_int_equal(o.norigin, 0);
  assert_int_equal(o.brute_force, 0);
  assert_int_equal(o.batch_dims, 0);
  ndf_hit_or_miss_options h;
  memset(&h, 0x5A, sizeof h);
  ndf_hit_or_miss_options_init(&h);
  assert_null(h.structure1);
  assert_null(h.structure2);
  assert_int_equal(h.norigin1, 0);
  assert_int_equal(h.norigin2, -1);
  assert_int_equal(h.batch_dims, 0);
}

/* generate_binary_structure by definition: |offset|_1 <= max(connectivity, 1),
 * for every rank 1..NDF_MAX_SPATIAL and connectivity -1..rank+1 (the oracle
 * checks ranks 1..4 against scipy itself). */
static void test_generate_binary_structure_all_ranks(void **state) {
  (void)state;
  for (int rank = 1; rank <= NDF_MAX_SPATIAL; rank++) {
    int64_t sh[NDF_MAX_SPATIAL];
    for (int i = 0; i < rank; i++) sh[i] = 3;
    for (int conn = -1; conn <= rank + 1; conn++) {
      tu_array out;
      assert_int_equal(tu_array_alloc(&out, conn & 1 ? NDF_UINT8 : NDF_BOOL, rank, sh), 0);
      tu_poison(out.base, out.bytes);
      ndf_status r = ndf_generate_binary_structure(rank, conn, &out.arr);
      if (r != NDF_OK) printf("generate_binary_structure(%d, %d): %s\n", rank, conn, ndf_last_error());
      assert_int_equal(r, NDF_OK);
      int64_t n = ndf_array_size(&out.arr);
      int c = conn < 1 ? 1 : conn;
      for (int64_t i = 0; i < n; i++) {
        int64_t idx[NDF_MAX_NDIM], d = 0;
        unflat(&out.arr, i, idx);
        for (int a = 0; a < rank; a++) d += idx[a] == 1 ? 0 : 1;
        int want = d <= c;
        int got = *(uint8_t *)tu_elem_ptr(&out.arr, i);
        if (got != want) printf("generate_binary_structure(%d, %d) element %lld: want %d got %d\n", rank, conn, (long long)i, want, got);
        assert_int_equal(got, want);
      }
      tu_array_free(&out);
    }
  }
}

/* ------------------------------------------------------------------------ */
/* Contract                                                                  */

/* A 4x5x6 uint8 input and a poisoned output buffer large enough for every
 * output descriptor built below. */
typedef struct fixture {
  ndf_ctx *ctx;
  tu_array in;
  void *outbuf;
  size_t outbytes;
  ndf_array out;
  ndf_binary_options o;
  ndf_hit_or_miss_options h;
} fixture;

static const int64_t SHAPE[3] = {4, 5, 6};

static void fx_init(fixture *f, void **state) {
  memset(f, 0, sizeof *f);
  f->ctx = ctx_of(state);
  assert_int_equal(tu_array_alloc(&f->in, NDF_UINT8, 3, SHAPE), 0);
  for (int64_t i = 0; i < 120; i++) tu_set(&f->in.arr, i, (double)((i * 37) % 101 > 40 ? (i % 3) + 1 : 0));
  f->outbytes = 4096;
  f->outbuf = malloc(f->outbytes);
  assert_non_null(f->outbuf);
  tu_poison(f->outbuf, f->outbytes);
  assert_int_equal(ndf_array_init(&f->out, f->outbuf, NDF_DEVICE_CPU, NDF_BOOL, 3, SHAPE), NDF_OK);
  ndf_binary_options_init(&f->o);
  ndf_hit_or_miss_options_init(&f->h);
}

static void fx_free(fixture *f) {
  tu_array_free(&f->in);
  free(f->outbuf);
}

/* want < 0: any status but NDF_OK. */
static void reject_one(fixture *f, int op, const ndf_array *in, ndf_array *out, const ndf_binary_options *o,
                       const ndf_hit_or_miss_options *h, int want, const char *args, const char *what) {
  const char *api = op_api[op];
  tu_poison(f->outbuf, f->outbytes);
  void *insave = malloc(f->in.bytes);
  memcpy(insave, f->in.base, f->in.bytes);
  ndf_status r = call_op(f->ctx, op, in, out, o, h);
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
  int ok = status_ok && named && (args == NULL || strstr(m, api) != NULL);
  if (!ok)
    printf("%s (%s): got %s \"%s\"; want %s and a message naming %s and one of '%s'\n", what, api,
           ndf_status_name(r), m, want < 0 ? "a failure" : ndf_status_name((ndf_status)want), api,
           args ? args : "-");
  assert_true(status_ok);
  assert_true(named);
  if (args) assert_non_null(strstr(m, api));
  int64_t p = tu_poison_check(f->outbuf, f->outbytes);
  if (p >= 0) printf("%s (%s): output buffer written at byte %lld\n", what, api, (long long)p);
  assert_int_equal(p, -1);
  assert_memory_equal(insave, f->in.base, f->in.bytes);
  free(insave);
}

static void reject(fixture *f, unsigned ops, const ndf_array *in, ndf_array *out, int want, const char *args,
                   const char *what) {
  for (int op = 0; op < B_NOPS; op++)
    if (ops & (1u << op)) reject_one(f, op, in, out, &f->o, &f->h, want, args, what);
}

static void accept_all(fixture *f, const char *what) {
  for (int op = 0; op < B_NOPS; op++) {
    ndf_status r = call_op(f->ctx, op, &f->in.arr, &f->out, &f->o, &f->h);
    if (r != NDF_OK) printf("%s (%s): rejected: %s\n", what, op_api[op], ndf_errmsg(f->ctx));
    assert_int_equal(r, NDF_OK);
    assert_string_equal(ndf_errmsg(f->ctx), "");
  }
}

static void test_contract_null_arguments(void **state) {
  fixture f;
  fx_init(&f, state);
  accept_all(&f, "the fixture");
  reject(&f, OPS_ALL, NULL, &f.out, NDF_EINVAL, "input", "NULL input");
  reject(&f, OPS_ALL, &f.in.arr, NULL, NDF_EINVAL, "output", "NULL output");
  for (int op = 0; op < B_NOPS; op++)
    reject_one(&f, op, &f.in.arr, &f.out, NULL, NULL, NDF_EINVAL, "opt", "NULL options");
  /* NULL context: the message is the thread-local one. */
  for (int op = 0; op < B_NOPS; op++) {
    tu_poison(f.outbuf, f.outbytes);
    ndf_status r = call_op(NULL, op, &f.in.arr, &f.out, &f.o, &f.h);
    const char *m = ndf_last_error();
    if (r != NDF_EINVAL || !m || !strstr(m, "ctx") || !strstr(m, op_api[op]))
      printf("NULL ctx (%s): %s \"%s\"\n", op_api[op], ndf_status_name(r), m ? m : "(null)");
    assert_int_equal(r, NDF_EINVAL);
    assert_non_null(m);
    assert_non_null(strstr(m, "ctx"));
    assert_non_null(strstr(m, op_api[op]));
    assert_int_equal(tu_poison_check(f.outbuf, f.outbytes), -1);
  }
  ndf_array in2 = f.in.arr;
  in2.data = NULL;
  reject(&f, OPS_ALL, &in2, &f.out, NDF_EINVAL, "input", "input data NULL");
  ndf_array out2 = f.out;
  out2.data = NULL;
  reject(&f, OPS_ALL, &f.in.arr, &out2, NDF_EINVAL, "output", "output data NULL");
  fx_free(&f);
}

static void test_contract_output(void **state) {
  fixture f;
  fx_init(&f, state);
  const ndf_dtype bad[] = {NDF_INT8, NDF_INT16, NDF_UINT16, NDF_INT32, NDF_FLOAT32, NDF_FLOAT64};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    ndf_array out = f.out;
    out.dtype = bad[k];
    char what[64];
    snprintf(what, sizeof what, "output dtype %s", ndf_dtype_name(bad[k]));
    reject(&f, OPS_ALL, &f.in.arr, &out, NDF_EINVAL, "output|dtype", what);
  }
  ndf_array out = f.out;
  out.dtype = (ndf_dtype)42;
  reject(&f, OPS_ALL, &f.in.arr, &out, NDF_EINVAL, "output|dtype", "output dtype 42");
  out = f.out;
  out.shape[1] = 4;
  out.strides[0] = 24;
  reject(&f, OPS_ALL, &f.in.arr, &out, NDF_EINVAL, "output|shape", "shape mismatch");
  out = f.out;
  out.ndim = 2;
  out.shape[0] = 20;
  out.shape[1] = 6;
  out.strides[0] = 6;
  out.strides[1] = 1;
  reject(&f, OPS_ALL, &f.in.arr, &out, NDF_EINVAL, "output|shape|ndim", "ndim mismatch");
  /* uint8 output over the input itself */
  ndf_array same = f.in.arr;
  for (int op = 0; op < B_NOPS; op++) {
    void *save = malloc(f.in.bytes);
    memcpy(save, f.in.base, f.in.bytes);
    ndf_status r = call_op(f.ctx, op, &f.in.arr, &same, &f.o, &f.h);
    const char *m = ndf_errmsg(f.ctx);
    if (r != NDF_EINVAL || !(strstr(m, "output") || strstr(m, "overlap")) || !strstr(m, op_api[op]))
      printf("in-place call (%s): %s \"%s\"\n", op_api[op], ndf_status_name(r), m);
    assert_int_equal(r, NDF_EINVAL);
    assert_true(strstr(m, "output") || strstr(m, "overlap"));
    assert_non_null(strstr(m, op_api[op]));
    assert_memory_equal(save, f.in.base, f.in.bytes);
    free(save);
  }
  /* an output that overlaps itself (zero stride, or strides that interleave) */
  out = f.out;
  out.strides[0] = 0;
  reject(&f, OPS_ALL, &f.in.arr, &out, NDF_EINVAL, "output|stride|overlap", "output stride 0");
  out = f.out;
  out.strides[0] = 7; /* axis 0 steps into rows 1 and 2 of the 5x6 planes */
  reject(&f, OPS_ALL, &f.in.arr, &out, NDF_EINVAL, "output|stride|overlap", "self-overlapping output strides");
  /* partial overlap: a uint8 output that starts in the middle of the input */
  {
    tu_array both;
    int64_t sh1[1] = {240};
    assert_int_equal(tu_array_alloc(&both, NDF_UINT8, 1, sh1), 0);
    ndf_array a, b;
    assert_int_equal(ndf_array_init(&a, both.base, NDF_DEVICE_CPU, NDF_UINT8, 3, SHAPE), NDF_OK);
    assert_int_equal(ndf_array_init(&b, (uint8_t *)both.base + 60, NDF_DEVICE_CPU, NDF_UINT8, 3, SHAPE), NDF_OK);
    for (int op = 0; op < B_NOPS; op++) {
      for (int i = 0; i < 240; i++) ((uint8_t *)both.base)[i] = (uint8_t)(i % 3 == 0);
      ndf_status r = call_op(f.ctx, op, &a, &b, &f.o, &f.h);
      const char *m = ndf_errmsg(f.ctx);
      if (r != NDF_EINVAL || !(strstr(m, "output") || strstr(m, "overlap")))
        printf("partial overlap of output and input (%s): %s \"%s\"\n", op_api[op], ndf_status_name(r), m);
      assert_int_equal(r, NDF_EINVAL);
      assert_true(strstr(m, "output") || strstr(m, "overlap"));
      for (int i = 0; i < 240; i++) assert_int_equal(((uint8_t *)both.base)[i], i % 3 == 0);
    }
    tu_array_free(&both);
  }
  /* bad input dtype */
  ndf_array in = f.in.arr;
  in.dtype = (ndf_dtype)42;
  reject(&f, OPS_ALL, &in, &f.out, NDF_EINVAL, "input|dtype", "input dtype 42");
  fx_free(&f);
}

static void test_contract_structure(void **state) {
  fixture f;
  fx_init(&f, state);
  tu_array st2d, st4d, st0, stok;
  const int64_t s33[2] = {3, 3}, s4[4] = {3, 3, 3, 3}, s0[3] = {3, 0, 3}, s3[3] = {3, 3, 3};
  arr_nd(&st2d, NDF_BOOL, 2, s33, NULL);
  arr_nd(&st4d, NDF_BOOL, 4, s4, NULL);
  assert_int_equal(tu_array_alloc(&st0, NDF_BOOL, 3, s0), 0);
  arr_nd(&stok, NDF_BOOL, 3, s3, NULL);
  tu_set(&stok.arr, 13, 1);
  /* rank mismatch: 2-D and 4-D structures for a 3-D input */
  const tu_array *wrong[2] = {&st2d, &st4d};
  for (int k = 0; k < 2; k++) {
    f.o.structure = &wrong[k]->arr;
    f.h.structure1 = &wrong[k]->arr;
    reject(&f, OPS_ALL, &f.in.arr, &f.out, NDF_EINVAL, "structure", k ? "4-D structure, 3-D input" : "2-D structure, 3-D input");
    f.o.structure = NULL;
    f.h.structure1 = &stok.arr;
    f.h.structure2 = &wrong[k]->arr;
    reject(&f, 1u << B_HIT_OR_MISS, &f.in.arr, &f.out, NDF_EINVAL, "structure2", "structure2 of the wrong rank");
    f.h.structure1 = NULL;
    f.h.structure2 = NULL;
  }
  /* a 2-D structure is right after one batch axis, the 3-D one is not */
  f.o.batch_dims = 1;
  f.h.batch_dims = 1;
  f.o.structure = &st2d.arr;
  f.h.structure1 = &st2d.arr;
  accept_all(&f, "2-D structure after one batch axis");
  f.o.structure = &stok.arr;
  f.h.structure1 = &stok.arr;
  reject(&f, OPS_ALL, &f.in.arr, &f.out, NDF_EINVAL, "structure", "3-D structure after one batch axis");
  f.o.batch_dims = 0;
  f.h.batch_dims = 0;
  /* empty structure (scipy: 'structure must not be empty') */
  f.o.structure = &st0.arr;
  f.h.structure1 = &st0.arr;
  reject(&f, OPS_ALL, &f.in.arr, &f.out, NDF_EINVAL, "structure", "structure with an axis of length 0");
  /* NULL data */
  ndf_array nd = stok.arr;
  nd.data = NULL;
  f.o.structure = &nd;
  f.h.structure1 = &nd;
  reject(&f, OPS_ALL, &f.in.arr, &f.out, NDF_EINVAL, "structure", "structure data NULL");
  /* a structure on a CUDA device (it must be a host array) */
  ndf_array dev = stok.arr;
  dev.device = NDF_DEVICE_CUDA;
  f.o.structure = &dev;
  f.h.structure1 = &dev;
  reject(&f, OPS_ALL, &f.in.arr, &f.out, -1, "structure", "CUDA structure");
  /* unknown dtype */
  ndf_array bd = stok.arr;
  bd.dtype = (ndf_dtype)42;
  f.o.structure = &bd;
  f.h.structure1 = &bd;
  reject(&f, OPS_ALL, &f.in.arr, &f.out, NDF_EINVAL, "structure", "structure dtype 42");
  f.o.structure = NULL;
  f.h.structure1 = NULL;
  tu_array_free(&st2d);
  tu_array_free(&st4d);
  tu_array_free(&st0);
  tu_array_free(&stok);
  fx_free(&f);
}

static void test_contract_mask_and_border(void **state) {
  fixture f;
  fx_init(&f, state);
  tu_array mk, mk2;
  const int64_t sm[3] = {4, 5, 5}, sm2[2] = {20, 6};
  arr_nd(&mk, NDF_BOOL, 3, sm, NULL);
  arr_nd(&mk2, NDF_BOOL, 2, sm2, NULL);
  f.o.mask = &mk.arr;
  reject(&f, OPS_MASK, &f.in.arr, &f.out, NDF_EINVAL, "mask", "mask 4x5x5 for a 4x5x6 input");
  f.o.mask = &mk2.arr;
  reject(&f, OPS_MASK, &f.in.arr, &f.out, NDF_EINVAL, "mask", "2-D mask for a 3-D input");
  ndf_array mnull = f.in.arr;
  mnull.data = NULL;
  f.o.mask = &mnull;
  reject(&f, OPS_MASK, &f.in.arr, &f.out, NDF_EINVAL, "mask", "mask data NULL");
  ndf_array mdev = f.in.arr;
  mdev.device = NDF_DEVICE_CUDA;
  f.o.mask = &mdev;
  reject(&f, OPS_MASK, &f.in.arr, &f.out, -1, "mask", "mask on another device");
  f.o.mask = NULL;
  const int bad[] = {2, -1, 255};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    f.o.border_value = bad[k];
    char what[64];
    snprintf(what, sizeof what, "border_value %d", bad[k]);
    reject(&f, OPS_MASK, &f.in.arr, &f.out, NDF_EINVAL, "border_value", what);
  }
  f.o.border_value = 0;
  tu_array_free(&mk);
  tu_array_free(&mk2);
  fx_free(&f);
}

static void test_contract_origin(void **state) {
  fixture f;
  fx_init(&f, state);
  tu_array st2;
  const int64_t s2[3] = {2, 2, 2};
  static const double ones8[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  arr_nd(&st2, NDF_BOOL, 3, s2, ones8);
  /* default 3x3x3 structure: origin in [-1, 1] */
  f.o.norigin = 1;
  f.o.origin[0] = 2;
  f.h.norigin1 = 1;
  f.h.origin1[0] = 2;
  reject(&f, OPS_ALL, &f.in.arr, &f.out, NDF_EINVAL, "origin", "origin 2 for a structure of size 3");
  f.o.norigin = 3;
  f.o.origin[0] = 0;
  f.o.origin[1] = 0;
  f.o.origin[2] = -2;
  f.h.norigin1 = 3;
  f.h.origin1[0] = 0;
  f.h.origin1[1] = 0;
  f.h.origin1[2] = -2;
  reject(&f, OPS_ALL, &f.in.arr, &f.out, NDF_EINVAL, "origin", "origin[2] = -2 for a structure of size 3");
  /* even size 2: origin in [-1, 0] */
  f.o.structure = &st2.arr;
  f.h.structure1 = &st2.arr;
  f.o.norigin = 1;
  f.o.origin[0] = 1;
  f.h.norigin1 = 1;
  f.h.origin1[0] = 1;
  reject(&f, OPS_ALL, &f.in.arr, &f.out, NDF_EINVAL, "origin", "origin 1 for a structure of size 2");
  f.o.origin[0] = -1;
  f.h.origin1[0] = -1;
  accept_all(&f, "origin -1 for a structure of size 2");
  f.o.origin[0] = -2;
  f.h.origin1[0] = -2;
  reject(&f, OPS_ALL, &f.in.arr, &f.out, NDF_EINVAL, "origin", "origin -2 for a structure of size 2");
  /* a count of origins that is neither 1 nor the spatial rank */
  f.o.structure = NULL;
  f.h.structure1 = NULL;
  const int badn[] = {2, 4, -1, NDF_MAX_SPATIAL + 1};
  for (size_t k = 0; k < sizeof badn / sizeof badn[0]; k++) {
    ndf_binary_options_init(&f.o);
    ndf_hit_or_miss_options_init(&f.h);
    f.o.norigin = badn[k];
    f.h.norigin1 = badn[k];
    char what[64];
    snprintf(what, sizeof what, "norigin %d for 3 spatial axes", badn[k]);
    reject(&f, OPS_ALL, &f.in.arr, &f.out, NDF_EINVAL, "origin", what);
  }
  /* hit-or-miss: origin2 is checked against structure2 */
  ndf_hit_or_miss_options_init(&f.h);
  f.h.norigin2 = 1;
  f.h.origin2[0] = -2;
  reject(&f, 1u << B_HIT_OR_MISS, &f.in.arr, &f.out, NDF_EINVAL, "origin", "origin2 -2");
  f.h.norigin2 = 2;
  f.h.origin2[0] = 0;
  f.h.origin2[1] = 0;
  reject(&f, 1u << B_HIT_OR_MISS, &f.in.arr, &f.out, NDF_EINVAL, "origin", "norigin2 2 for 3 spatial axes");
  f.h.structure2 = &st2.arr;
  f.h.norigin2 = 1;
  f.h.origin2[0] = 1;
  reject(&f, 1u << B_HIT_OR_MISS, &f.in.arr, &f.out, NDF_EINVAL, "origin", "origin2 1 for a structure2 of size 2");
  /* origin2 = origin1 (norigin2 -1) must fit structure2 too */
  f.h.norigin2 = -1;
  f.h.norigin1 = 1;
  f.h.origin1[0] = 1; /* fine for the 3x3x3 structure1, not for structure2 of size 2 */
  reject(&f, 1u << B_HIT_OR_MISS, &f.in.arr, &f.out, NDF_EINVAL, "origin", "origin2 = origin1 = 1 for a structure2 of size 2");
  tu_array_free(&st2);
  fx_free(&f);
}

static void test_contract_batch_dims(void **state) {
  fixture f;
  fx_init(&f, state);
  const int bad[] = {-1, 3, 4, 100};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    f.o.batch_dims = bad[k];
    f.h.batch_dims = bad[k];
    char what[64];
    snprintf(what, sizeof what, "batch_dims %d of a 3-D input", bad[k]);
    reject(&f, OPS_ALL, &f.in.arr, &f.out, NDF_EINVAL, "batch_dims", what);
  }
  f.o.batch_dims = 2;
  f.h.batch_dims = 2;
  accept_all(&f, "batch_dims 2 of 3");
  fx_free(&f);
}

/* Negative output strides (a reversed NumPy view) are valid: the result lands
 * reversed, exactly where the view says, and nothing else is written. */
static void test_negative_output_stride(void **state) {
  fixture f;
  fx_init(&f, state);
  for (int op = 0; op < B_NOPS; op++) {
    uint8_t ref[120];
    ndf_array r;
    assert_int_equal(ndf_array_init(&r, ref, NDF_DEVICE_CPU, NDF_BOOL, 3, SHAPE), NDF_OK);
    assert_int_equal(call_op(f.ctx, op, &f.in.arr, &r, &f.o, &f.h), NDF_OK);
    ndf_array out = f.out;
    out.strides[2] = -1;
    out.data = (uint8_t *)f.outbuf + 5;
    tu_poison(f.outbuf, f.outbytes);
    ndf_status st = call_op(f.ctx, op, &f.in.arr, &out, &f.o, &f.h);
    if (st != NDF_OK) printf("%s with a negative output stride: %s\n", op_api[op], ndf_errmsg(f.ctx));
    assert_int_equal(st, NDF_OK);
    const uint8_t *o = f.outbuf;
    int bad = 0;
    for (int z = 0; z < 4; z++)
      for (int y = 0; y < 5; y++)
        for (int x = 0; x < 6; x++) bad += o[z * 30 + y * 6 + (5 - x)] != ref[z * 30 + y * 6 + x];
    if (bad) printf("%s: %d elements misplaced with a negative output stride\n", op_api[op], bad);
    assert_int_equal(bad, 0);
    uint8_t *pat = malloc(f.outbytes);
    tu_poison(pat, f.outbytes);
    int past = memcmp(o + 120, pat + 120, f.outbytes - 120) != 0;
    free(pat);
    if (past) printf("%s: wrote past the reversed view\n", op_api[op]);
    assert_false(past);
  }
  fx_free(&f);
}

/* CUDA arrays: not supported by the binary ops yet (or no GPU here): any
 * failure, output untouched. */
static void test_contract_cuda_arrays(void **state) {
  fixture f;
  fx_init(&f, state);
  ndf_array in = f.in.arr, out = f.out;
  in.device = NDF_DEVICE_CUDA;
  out.device = NDF_DEVICE_CUDA;
  reject(&f, OPS_ALL, &in, &out, -1, NULL, "CUDA input and output");
  reject(&f, OPS_ALL, &in, &f.out, -1, NULL, "CUDA input, host output");
  reject(&f, OPS_ALL, &f.in.arr, &out, -1, NULL, "host input, CUDA output");
  fx_free(&f);
}

/* generate_binary_structure / iterate_structure (no context: ndf_last_error). */
static void expect_fail_noctx(ndf_status r, int want, const char *api, const char *args, const void *buf,
                              size_t bytes, const char *what) {
  const char *m = ndf_last_error();
  if (!m) m = "(null)";
  int named = 0;
  char words[256];
  snprintf(words, sizeof words, "%s", args);
  char *save = NULL;
  for (char *w = strtok_r(words, "|", &save); w; w = strtok_r(NULL, "|", &save))
    if (strstr(m, w)) named = 1;
  int status_ok = want < 0 ? r != NDF_OK : (int)r == want;
  if (!status_ok || !named || !strstr(m, api))
    printf("%s: got %s \"%s\"; want %s and a message naming %s and one of '%s'\n", what, ndf_status_name(r), m,
           want < 0 ? "a failure" : ndf_status_name((ndf_status)want), api, args);
  assert_true(status_ok);
  assert_true(named);
  assert_non_null(strstr(m, api));
  if (buf) {
    int64_t p = tu_poison_check(buf, bytes);
    if (p >= 0) printf("%s: output written at byte %lld\n", what, (long long)p);
    assert_int_equal(p, -1);
  }
}

static void test_contract_generate_binary_structure(void **state) {
  (void)state;
  const char *api = "ndf_generate_binary_structure";
  size_t bytes = 8192;
  void *buf = malloc(bytes);
  const int64_t s3[3] = {3, 3, 3}, s33[2] = {3, 3}, s353[3] = {3, 5, 3};
  ndf_array out;
  const int badrank[] = {0, -1, NDF_MAX_SPATIAL + 1};
  for (size_t k = 0; k < sizeof badrank / sizeof badrank[0]; k++) {
    tu_poison(buf, bytes);
    assert_int_equal(ndf_array_init(&out, buf, NDF_DEVICE_CPU, NDF_BOOL, 3, s3), NDF_OK);
    char what[64];
    snprintf(what, sizeof what, "generate_binary_structure rank %d", badrank[k]);
    expect_fail_noctx(ndf_generate_binary_structure(badrank[k], 1, &out), NDF_EINVAL, api, "rank", buf, bytes, what);
  }
  tu_poison(buf, bytes);
  expect_fail_noctx(ndf_generate_binary_structure(3, 1, NULL), NDF_EINVAL, api, "out", NULL, 0, "NULL out");
  assert_int_equal(ndf_array_init(&out, buf, NDF_DEVICE_CPU, NDF_BOOL, 2, s33), NDF_OK);
  expect_fail_noctx(ndf_generate_binary_structure(3, 1, &out), NDF_EINVAL, api, "out|shape|ndim|rank", buf, bytes,
                    "rank 3 into a 3x3 out");
  assert_int_equal(ndf_array_init(&out, buf, NDF_DEVICE_CPU, NDF_BOOL, 3, s353), NDF_OK);
  expect_fail_noctx(ndf_generate_binary_structure(3, 1, &out), NDF_EINVAL, api, "out|shape", buf, bytes,
                    "rank 3 into a 3x5x3 out");
  const ndf_dtype baddt[] = {NDF_INT16, NDF_FLOAT32, NDF_INT8};
  for (size_t k = 0; k < sizeof baddt / sizeof baddt[0]; k++) {
    assert_int_equal(ndf_array_init(&out, buf, NDF_DEVICE_CPU, baddt[k], 3, s3), NDF_OK);
    expect_fail_noctx(ndf_generate_binary_structure(3, 1, &out), NDF_EINVAL, api, "out|dtype", buf, bytes,
                      "out of dtype int16/float32/int8");
  }
  assert_int_equal(ndf_array_init(&out, buf, NDF_DEVICE_CPU, NDF_BOOL, 3, s3), NDF_OK);
  out.data = NULL;
  expect_fail_noctx(ndf_generate_binary_structure(3, 1, &out), NDF_EINVAL, api, "out", buf, bytes, "out data NULL");
  assert_int_equal(ndf_array_init(&out, buf, NDF_DEVICE_CPU, NDF_BOOL, 3, s3), NDF_OK);
  out.device = NDF_DEVICE_CUDA;
  expect_fail_noctx(ndf_generate_binary_structure(3, 1, &out), -1, api, "out|device|host", buf, bytes, "CUDA out");
  free(buf);
}

static void test_contract_iterate_structure(void **state) {
  (void)state;
  const char *api = "ndf_iterate_structure";
  size_t bytes = 8192;
  void *buf = malloc(bytes);
  tu_array st;
  const int64_t s3[3] = {3, 3, 3}, s5[3] = {5, 5, 5}, s55[2] = {5, 5}, s545[3] = {5, 4, 5};
  arr_nd(&st, NDF_BOOL, 3, s3, NULL);
  assert_int_equal(ndf_generate_binary_structure(3, 1, &st.arr), NDF_OK);
  int64_t shape[NDF_MAX_NDIM];
  /* the shape helper */
  assert_int_equal(ndf_iterate_structure_shape(&st.arr, 2, shape), NDF_OK);
  assert_int_equal(shape[0], 5);
  assert_int_equal(shape[1], 5);
  assert_int_equal(shape[2], 5);
  expect_fail_noctx(ndf_iterate_structure_shape(NULL, 2, shape), NDF_EINVAL, api, "structure", NULL, 0,
                    "shape of a NULL structure");
  expect_fail_noctx(ndf_iterate_structure_shape(&st.arr, 2, NULL), NDF_EINVAL, api, "shape", NULL, 0,
                    "NULL shape");
  ndf_array out;
  int64_t oout[NDF_MAX_SPATIAL];
  tu_poison(buf, bytes);
  expect_fail_noctx(ndf_iterate_structure(NULL, 2, &out, 0, NULL, NULL), NDF_EINVAL, api, "structure", buf, bytes,
                    "NULL structure");
  expect_fail_noctx(ndf_iterate_structure(&st.arr, 2, NULL, 0, NULL, NULL), NDF_EINVAL, api, "out", buf, bytes,
                    "NULL out");
  assert_int_equal(ndf_array_init(&out, buf, NDF_DEVICE_CPU, NDF_BOOL, 2, s55), NDF_OK);
  expect_fail_noctx(ndf_iterate_structure(&st.arr, 2, &out, 0, NULL, NULL), NDF_EINVAL, api, "out|shape|ndim", buf,
                    bytes, "3-D structure into a 5x5 out");
  assert_int_equal(ndf_array_init(&out, buf, NDF_DEVICE_CPU, NDF_BOOL, 3, s545), NDF_OK);
  expect_fail_noctx(ndf_iterate_structure(&st.arr, 2, &out, 0, NULL, NULL), NDF_EINVAL, api, "out|shape", buf, bytes,
                    "5x4x5 out, 5x5x5 needed");
  assert_int_equal(ndf_array_init(&out, buf, NDF_DEVICE_CPU, NDF_BOOL, 3, s3), NDF_OK);
  expect_fail_noctx(ndf_iterate_structure(&st.arr, 2, &out, 0, NULL, NULL), NDF_EINVAL, api, "out|shape", buf, bytes,
                    "3x3x3 out, 5x5x5 needed");
  assert_int_equal(ndf_array_init(&out, buf, NDF_DEVICE_CPU, NDF_FLOAT32, 3, s5), NDF_OK);
  expect_fail_noctx(ndf_iterate_structure(&st.arr, 2, &out, 0, NULL, NULL), NDF_EINVAL, api, "out|dtype", buf, bytes,
                    "float32 out");
  assert_int_equal(ndf_array_init(&out, buf, NDF_DEVICE_CPU, NDF_BOOL, 3, s5), NDF_OK);
  const int64_t org[3] = {1, 0, -1};
  expect_fail_noctx(ndf_iterate_structure(&st.arr, 2, &out, 2, org, oout), NDF_EINVAL, api, "origin", buf, bytes,
                    "norigin 2 for rank 3");
  expect_fail_noctx(ndf_iterate_structure(&st.arr, 2, &out, 1, NULL, oout), NDF_EINVAL, api, "origin", buf, bytes,
                    "norigin 1 with a NULL origin");
  out.device = NDF_DEVICE_CUDA;
  expect_fail_noctx(ndf_iterate_structure(&st.arr, 2, &out, 0, NULL, NULL), -1, api, "out|device|host", buf, bytes,
                    "CUDA out");
  /* and it works with the right descriptor */
  out.device = NDF_DEVICE_CPU;
  for (int i = 0; i < 3; i++) oout[i] = 99;
  ndf_status r = ndf_iterate_structure(&st.arr, 2, &out, 3, org, oout);
  if (r != NDF_OK) printf("iterate_structure 3x3x3 cross x2: %s\n", ndf_last_error());
  assert_int_equal(r, NDF_OK);
  assert_int_equal(oout[0], 2);
  assert_int_equal(oout[1], 0);
  assert_int_equal(oout[2], -2);
  /* the cross iterated twice is the L1 ball of radius 2 */
  for (int64_t i = 0; i < 125; i++) {
    int64_t z = i / 25, y = (i / 5) % 5, x = i % 5;
    int d = (int)(llabs(z - 2) + llabs(y - 2) + llabs(x - 2));
    assert_int_equal(((uint8_t *)buf)[i], d <= 2);
  }
  tu_array_free(&st);
  free(buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_scipy_cases),
      cmocka_unit_test(test_scipy_cases_strided_input_uint8),
      cmocka_unit_test(test_scipy_cases_fortran),
      cmocka_unit_test(test_scipy_cases_strided_output_uint8),
      cmocka_unit_test(test_scipy_cases_strided_both),
      cmocka_unit_test(test_hit_or_miss_outside_is_background),
      cmocka_unit_test(test_fill_holes_background_connectivity),
      cmocka_unit_test(test_empty_structure),
      cmocka_unit_test(test_oscillation_is_enotsup),
      cmocka_unit_test(test_zero_stride_input),
      cmocka_unit_test(test_empty_input),
      cmocka_unit_test(test_options_init),
      cmocka_unit_test(test_generate_binary_structure_all_ranks),
      cmocka_unit_test(test_contract_null_arguments),
      cmocka_unit_test(test_contract_output),
      cmocka_unit_test(test_contract_structure),
      cmocka_unit_test(test_contract_mask_and_border),
      cmocka_unit_test(test_contract_origin),
      cmocka_unit_test(test_contract_batch_dims),
      cmocka_unit_test(test_negative_output_stride),
      cmocka_unit_test(test_contract_cuda_arrays),
      cmocka_unit_test(test_contract_generate_binary_structure),
      cmocka_unit_test(test_contract_iterate_structure),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
