/*
 * test_contract.c -- every input the eight grey ops (ndf_grey_erosion,
 * ndf_grey_dilation, ndf_grey_opening, ndf_grey_closing,
 * ndf_morphological_gradient, ndf_morphological_laplace, ndf_white_tophat,
 * ndf_black_tophat) must reject, the small helpers of the public API
 * (status, mode and dtype names, array descriptors, context creation), and
 * the argument errors of the linear filters, intensity functions and metrics.
 *
 * Each rejection is checked for every op: the status, a message that names
 * that op (its own name) and the argument (ndf_errmsg, or ndf_last_error
 * without a context), and that the output buffer, filled with a poison
 * pattern before the call, is untouched.  This file uses only the public API
 * of ndforge.
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

#include "ndforge.h"
#include "testutil.h"

/* A 4x5x6 float32 input (or another dtype) and a poisoned output buffer large
 * enough for every output descriptor the cases build. */
typedef struct fixture {
  ndf_ctx *ctx;
  tu_array in;
  void *outbuf;
  size_t outbytes;
  ndf_array out;
  ndf_grey_options opt;
  tu_array fp, st;
} fixture;

static const int64_t SHAPE[3] = {4, 5, 6};

static int group_setup(void **state) {
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  o.backend = NDF_BACKEND_CPU;
  o.cache_disable = 1;
  ndf_ctx *ctx = NULL;
  if (ndf_ctx_create(&ctx, &o) != NDF_OK) {
    fprintf(stderr, "ndf_ctx_create: %s\n", ndf_last_error());
    return -1;
  }
  *state = ctx;
  return 0;
}

static int group_teardown(void **state) {
  ndf_ctx_destroy(*state);
  return 0;
}

static void fx_init(fixture *f, void **state, ndf_dtype dt) {
  memset(f, 0, sizeof *f);
  f->ctx = *state;
  assert_int_equal(tu_array_alloc(&f->in, dt, 3, SHAPE), 0);
  for (int64_t i = 0; i < 120; i++) tu_set(&f->in.arr, i, (double)((i * 37) % 101));
  f->outbytes = 4096;
  f->outbuf = malloc(f->outbytes);
  assert_non_null(f->outbuf);
  tu_poison(f->outbuf, f->outbytes);
  assert_int_equal(ndf_array_init(&f->out, f->outbuf, NDF_DEVICE_CPU, dt, 3, SHAPE), NDF_OK);
  ndf_grey_options_init(&f->opt);
  f->opt.nsize = 1;
  f->opt.size[0] = 3;
}

static void fx_free(fixture *f) {
  tu_array_free(&f->in);
  tu_array_free(&f->fp);
  tu_array_free(&f->st);
  free(f->outbuf);
}

static ndf_status call(ndf_ctx *ctx, int opi, const ndf_array *in, ndf_array *out,
                       const ndf_grey_options *o) {
  return tu_op_call(ctx, opi, in, out, o);
}

/* Checks that every op rejects (in, out, opt) with want, a message naming
 * that op and one of the '|'-separated words in args, and an untouched output. */
static void expect_reject_io(fixture *f, const ndf_array *in, ndf_array *out, const ndf_grey_options *o,
                             ndf_status want, const char *args, const char *what) {
  for (int opi = 0; opi < TU_OP_COUNT; opi++) {
    const char *op = tu_op_api_name(opi);
    tu_poison(f->outbuf, f->outbytes);
    void *insave = malloc(f->in.bytes);
    memcpy(insave, f->in.base, f->in.bytes);
    ndf_status r = call(f->ctx, opi, in, out, o);
    const char *m = f->ctx ? ndf_errmsg(f->ctx) : ndf_last_error();
    if (!m) m = "(null)";
    int named = 0;
    char words[256];
    snprintf(words, sizeof words, "%s", args);
    char *save = NULL;
    for (char *w = strtok_r(words, "|", &save); w; w = strtok_r(NULL, "|", &save))
      if (strstr(m, w)) named = 1;
    int ok = r == want && named && strstr(m, op) != NULL;
    if (!ok)
      printf("%s (%s): got %s \"%s\"; want %s and a message naming %s and one of '%s'\n", what, op,
             ndf_status_name(r), m, ndf_status_name(want), op, args);
    assert_int_equal(r, want);
    assert_true(named);
    assert_non_null(strstr(m, op));
    int64_t p = tu_poison_check(f->outbuf, f->outbytes);
    if (p >= 0) printf("%s (%s): output buffer written at byte %lld\n", what, op, (long long)p);
    assert_int_equal(p, -1);
    assert_memory_equal(insave, f->in.base, f->in.bytes);
    free(insave);
  }
}

static void expect_reject(fixture *f, ndf_status want, const char *args, const char *what) {
  expect_reject_io(f, &f->in.arr, &f->out, &f->opt, want, args, what);
}

static void expect_accept(fixture *f, const char *what) {
  for (int opi = 0; opi < TU_OP_COUNT; opi++) {
    ndf_status r = call(f->ctx, opi, &f->in.arr, &f->out, &f->opt);
    if (r != NDF_OK) printf("%s (%s): rejected: %s\n", what, tu_op_api_name(opi), ndf_errmsg(f->ctx));
    assert_int_equal(r, NDF_OK);
    assert_string_equal(ndf_errmsg(f->ctx), "");
  }
}

/* ------------------------------------------------------------------------ */
/* NULL arguments                                                            */

static void test_null_arguments(void **state) {
  fixture f;
  fx_init(&f, state, NDF_FLOAT32);
  expect_reject_io(&f, NULL, &f.out, &f.opt, NDF_EINVAL, "input", "NULL input");
  expect_reject_io(&f, &f.in.arr, NULL, &f.opt, NDF_EINVAL, "output", "NULL output");
  expect_reject_io(&f, &f.in.arr, &f.out, NULL, NDF_EINVAL, "opt", "NULL options");
  /* NULL context: the message is the thread-local one. */
  for (int opi = 0; opi < TU_OP_COUNT; opi++) {
    tu_poison(f.outbuf, f.outbytes);
    ndf_status r = call(NULL, opi, &f.in.arr, &f.out, &f.opt);
    const char *m = ndf_last_error();
    if (r != NDF_EINVAL || !m || !strstr(m, "ctx") || !strstr(m, tu_op_api_name(opi)))
      printf("NULL ctx (%s): %s \"%s\"\n", tu_op_api_name(opi), ndf_status_name(r), m ? m : "(null)");
    assert_int_equal(r, NDF_EINVAL);
    assert_non_null(m);
    assert_non_null(strstr(m, "ctx"));
    assert_non_null(strstr(m, tu_op_api_name(opi)));
    assert_int_equal(tu_poison_check(f.outbuf, f.outbytes), -1);
  }
  /* NULL data pointers */
  ndf_array in2 = f.in.arr;
  in2.data = NULL;
  expect_reject_io(&f, &in2, &f.out, &f.opt, NDF_EINVAL, "input", "input data NULL");
  ndf_array out2 = f.out;
  out2.data = NULL;
  expect_reject_io(&f, &f.in.arr, &out2, &f.opt, NDF_EINVAL, "output", "output data NULL");
  fx_free(&f);
}

/* ------------------------------------------------------------------------ */
/* Arrays                                                                    */

static void test_dtype_and_shape_mismatch(void **state) {
  fixture f;
  fx_init(&f, state, NDF_FLOAT32);
  ndf_array out = f.out;
  out.dtype = NDF_INT32;
  expect_reject_io(&f, &f.in.arr, &out, &f.opt, NDF_EINVAL, "output|dtype", "dtype mismatch f32 -> i32");
  out = f.out;
  out.dtype = NDF_FLOAT64;
  expect_reject_io(&f, &f.in.arr, &out, &f.opt, NDF_EINVAL, "output|dtype", "dtype mismatch f32 -> f64");
  out = f.out;
  out.shape[1] = 4;
  out.strides[0] = 24;
  expect_reject_io(&f, &f.in.arr, &out, &f.opt, NDF_EINVAL, "output|shape", "shape mismatch");
  out = f.out;
  out.ndim = 2;
  out.shape[0] = 20;
  out.shape[1] = 6;
  out.strides[0] = 6;
  out.strides[1] = 1;
  expect_reject_io(&f, &f.in.arr, &out, &f.opt, NDF_EINVAL, "output|shape|ndim", "ndim mismatch");
  fx_free(&f);
}

static void test_unknown_dtype(void **state) {
  fixture f;
  fx_init(&f, state, NDF_FLOAT32);
  ndf_array in = f.in.arr, out = f.out;
  const int bad[] = {NDF_DTYPE_COUNT, 42, -1};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    in.dtype = (ndf_dtype)bad[k];
    out.dtype = (ndf_dtype)bad[k];
    expect_reject_io(&f, &in, &out, &f.opt, NDF_EINVAL, "input|dtype", "unknown dtype");
  }
  fx_free(&f);
}

static void test_bad_ndim(void **state) {
  fixture f;
  fx_init(&f, state, NDF_FLOAT32);
  /* ndim 0 */
  ndf_array in = f.in.arr, out = f.out;
  in.ndim = 0;
  out.ndim = 0;
  expect_reject_io(&f, &in, &out, &f.opt, NDF_EINVAL, "input|ndim", "ndim 0");
  /* ndim above NDF_MAX_NDIM */
  in = f.in.arr;
  out = f.out;
  in.ndim = NDF_MAX_NDIM + 1;
  out.ndim = NDF_MAX_NDIM + 1;
  expect_reject_io(&f, &in, &out, &f.opt, NDF_EINVAL, "input|ndim", "ndim 13");
  in.ndim = -1;
  out.ndim = -1;
  expect_reject_io(&f, &in, &out, &f.opt, NDF_EINVAL, "input|ndim", "ndim -1");
  /* 9 spatial axes of length 2 (512 elements) */
  int64_t sh9[9] = {2, 2, 2, 2, 2, 2, 2, 2, 2};
  tu_array big;
  assert_int_equal(tu_array_alloc(&big, NDF_FLOAT32, 9, sh9), 0);
  assert_int_equal(ndf_array_init(&out, f.outbuf, NDF_DEVICE_CPU, NDF_FLOAT32, 9, sh9), NDF_OK);
  expect_reject_io(&f, &big.arr, &out, &f.opt, NDF_EINVAL, "input|ndim|spatial|batch_dims", "9 spatial axes");
  /* ... but 8 spatial axes after one batch axis are fine */
  f.opt.batch_dims = 1;
  for (int opi = 0; opi < TU_OP_COUNT; opi++) {
    ndf_status r = call(f.ctx, opi, &big.arr, &out, &f.opt);
    if (r != NDF_OK) printf("8 spatial axes after a batch axis (%s): %s\n", tu_op_api_name(opi), ndf_errmsg(f.ctx));
    assert_int_equal(r, NDF_OK);
  }
  tu_array_free(&big);
  /* negative axis length */
  in = f.in.arr;
  out = f.out;
  in.shape[1] = -5;
  out.shape[1] = -5;
  f.opt.batch_dims = 0;
  expect_reject_io(&f, &in, &out, &f.opt, NDF_EINVAL, "input|shape", "negative shape");
  fx_free(&f);
}

static void test_bad_batch_dims(void **state) {
  fixture f;
  fx_init(&f, state, NDF_FLOAT32);
  const int bad[] = {-1, 3, 4, 100};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    f.opt.batch_dims = bad[k];
    expect_reject(&f, NDF_EINVAL, "batch_dims", "bad batch_dims");
  }
  f.opt.batch_dims = 2;
  expect_accept(&f, "batch_dims 2 of 3");
  fx_free(&f);
}

static void test_overlap(void **state) {
  fixture f;
  fx_init(&f, state, NDF_FLOAT32);
  /* same data pointer: the output is the input buffer itself */
  ndf_array out = f.in.arr;
  for (int opi = 0; opi < TU_OP_COUNT; opi++) {
    void *save = malloc(f.in.bytes);
    memcpy(save, f.in.base, f.in.bytes);
    ndf_status r = call(f.ctx, opi, &f.in.arr, &out, &f.opt);
    const char *m = ndf_errmsg(f.ctx);
    if (r != NDF_EINVAL || !(strstr(m, "output") || strstr(m, "overlap")) || !strstr(m, tu_op_api_name(opi)))
      printf("in-place call (%s): %s \"%s\"\n", tu_op_api_name(opi), ndf_status_name(r), m);
    assert_int_equal(r, NDF_EINVAL);
    assert_true(strstr(m, "output") || strstr(m, "overlap"));
    assert_non_null(strstr(m, tu_op_api_name(opi)));
    assert_memory_equal(save, f.in.base, f.in.bytes);
    free(save);
  }
  /* partial overlap: the output starts in the middle of the input */
  tu_array both;
  int64_t sh1[1] = {240};
  assert_int_equal(tu_array_alloc(&both, NDF_FLOAT32, 1, sh1), 0);
  for (int i = 0; i < 240; i++) tu_set(&both.arr, i, i);
  ndf_array a, b;
  assert_int_equal(ndf_array_init(&a, both.base, NDF_DEVICE_CPU, NDF_FLOAT32, 3, SHAPE), NDF_OK);
  assert_int_equal(ndf_array_init(&b, (float *)both.base + 60, NDF_DEVICE_CPU, NDF_FLOAT32, 3, SHAPE), NDF_OK);
  for (int opi = 0; opi < TU_OP_COUNT; opi++) {
    for (int i = 0; i < 240; i++) tu_set(&both.arr, i, i);
    ndf_status r = call(f.ctx, opi, &a, &b, &f.opt);
    if (r != NDF_EINVAL) printf("partial overlap accepted by %s: %s\n", tu_op_api_name(opi), ndf_status_name(r));
    assert_int_equal(r, NDF_EINVAL);
    assert_true(strstr(ndf_errmsg(f.ctx), "output") || strstr(ndf_errmsg(f.ctx), "overlap"));
    for (int i = 0; i < 240; i++) assert_true(tu_get(&both.arr, i) == i);
  }
  tu_array_free(&both);
  /* an output that overlaps itself (zero stride, or strides that interleave) */
  out = f.out;
  out.strides[0] = 0;
  expect_reject_io(&f, &f.in.arr, &out, &f.opt, NDF_EINVAL, "output|stride", "output stride 0");
  out = f.out;
  out.strides[0] = 7; /* axis 0 steps into rows 1 and 2 of the 5x6 planes */
  expect_reject_io(&f, &f.in.arr, &out, &f.opt, NDF_EINVAL, "output|stride", "self-overlapping output strides");
  fx_free(&f);
}

/* ndforge.h: strides "may be negative or zero only for inputs". */
/* Negative output strides (a reversed NumPy view) are valid: the result lands
 * reversed, exactly where the view says. */
static void test_negative_output_stride(void **state) {
  fixture f;
  fx_init(&f, state, NDF_FLOAT32);
  for (int opi = 0; opi < TU_OP_COUNT; opi++) {
    float ref[120];
    ndf_array r;
    assert_int_equal(ndf_array_init(&r, ref, NDF_DEVICE_CPU, NDF_FLOAT32, 3, SHAPE), NDF_OK);
    assert_int_equal(call(f.ctx, opi, &f.in.arr, &r, &f.opt), NDF_OK);
    ndf_array out = f.out;
    out.strides[2] = -1;
    out.data = (float *)f.outbuf + 5;
    tu_poison(f.outbuf, f.outbytes);
    assert_int_equal(call(f.ctx, opi, &f.in.arr, &out, &f.opt), NDF_OK);
    const float *o = f.outbuf;
    int bad = 0;
    for (int z = 0; z < 4; z++)
      for (int y = 0; y < 5; y++)
        for (int x = 0; x < 6; x++) bad += memcmp(&o[z * 30 + y * 6 + (5 - x)], &ref[z * 30 + y * 6 + x], 4) != 0;
    if (bad) printf("%s: %d elements misplaced with a negative output stride\n", tu_op_api_name(opi), bad);
    assert_int_equal(bad, 0);
    /* nothing written past the view's 120 elements (bytes 480 on) */
    void *fresh = malloc(f.outbytes);
    assert_non_null(fresh);
    tu_poison(fresh, f.outbytes);
    assert_memory_equal((char *)fresh + 480, (char *)f.outbuf + 480, f.outbytes - 480);
    free(fresh);
  }
  fx_free(&f);
}

static void test_device_mismatch(void **state) {
  fixture f;
  fx_init(&f, state, NDF_FLOAT32);
  ndf_array out = f.out;
  out.device = NDF_DEVICE_CUDA; /* the host buffer behind it must stay untouched */
  expect_reject_io(&f, &f.in.arr, &out, &f.opt, NDF_EINVAL, "output|device", "CPU input, CUDA output");
  ndf_array in = f.in.arr;
  in.device = (ndf_device_type)7;
  out = f.out;
  out.device = (ndf_device_type)7;
  expect_reject_io(&f, &in, &out, &f.opt, NDF_EINVAL, "input|device", "unknown device type");
  fx_free(&f);
}

/* ------------------------------------------------------------------------ */
/* Options                                                                   */

static void test_no_element(void **state) {
  fixture f;
  fx_init(&f, state, NDF_FLOAT32);
  f.opt.nsize = 0;
  expect_reject(&f, NDF_EINVAL, "size", "no size, footprint or structure");
  fx_free(&f);
}

static void test_bad_size(void **state) {
  fixture f;
  fx_init(&f, state, NDF_FLOAT32);
  const int64_t bad[] = {0, -1, -3};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    f.opt.nsize = 1;
    f.opt.size[0] = bad[k];
    expect_reject(&f, NDF_EINVAL, "size", "scalar size <= 0");
    f.opt.nsize = 3;
    f.opt.size[0] = 3;
    f.opt.size[1] = bad[k];
    f.opt.size[2] = 2;
    expect_reject(&f, NDF_EINVAL, "size", "one axis size <= 0");
  }
  const int badn[] = {2, 4, -1, NDF_MAX_SPATIAL + 1};
  for (size_t k = 0; k < sizeof badn / sizeof badn[0]; k++) {
    f.opt.nsize = badn[k];
    for (int i = 0; i < NDF_MAX_SPATIAL; i++) f.opt.size[i] = 3;
    expect_reject(&f, NDF_EINVAL, "size", "nsize neither 1 nor the spatial ndim");
  }
  /* with one batch axis the spatial ndim is 2: nsize 2 is right, 3 is not */
  f.opt.batch_dims = 1;
  f.opt.nsize = 3;
  expect_reject(&f, NDF_EINVAL, "size", "nsize 3 with 2 spatial axes");
  f.opt.nsize = 2;
  expect_accept(&f, "nsize 2 with 2 spatial axes");
  fx_free(&f);
}

static void make_fp(tu_array *t, int nd, const int64_t *sh, int value) {
  tu_array_free(t);
  assert_int_equal(tu_array_alloc(t, NDF_BOOL, nd, sh), 0);
  for (int64_t i = 0; i < ndf_array_size(&t->arr); i++) tu_set(&t->arr, i, value ? (i % 3 != 1) : 0);
}

static void make_st(tu_array *t, int nd, const int64_t *sh) {
  tu_array_free(t);
  assert_int_equal(tu_array_alloc(t, NDF_FLOAT64, nd, sh), 0);
  for (int64_t i = 0; i < ndf_array_size(&t->arr); i++) tu_set(&t->arr, i, (double)(i % 5));
}

static void test_bad_footprint(void **state) {
  fixture f;
  fx_init(&f, state, NDF_FLOAT32);
  f.opt.nsize = 0;
  int64_t s2[2] = {3, 3}, s3[3] = {3, 3, 3}, s4[4] = {1, 3, 3, 3};
  make_fp(&f.fp, 2, s2, 1);
  f.opt.footprint = &f.fp.arr;
  expect_reject(&f, NDF_EINVAL, "footprint", "footprint rank 2 for 3 spatial axes");
  make_fp(&f.fp, 4, s4, 1);
  expect_reject(&f, NDF_EINVAL, "footprint", "footprint rank 4 for 3 spatial axes");
  make_fp(&f.fp, 3, s3, 1);
  f.opt.batch_dims = 1;
  expect_reject(&f, NDF_EINVAL, "footprint", "footprint rank 3 for 2 spatial axes");
  f.opt.batch_dims = 0;
  make_fp(&f.fp, 3, s3, 0);
  expect_reject(&f, NDF_EINVAL, "footprint", "all-zero footprint");
  /* an all-zero footprint wins over a valid size too */
  f.opt.nsize = 1;
  f.opt.size[0] = 3;
  expect_reject(&f, NDF_EINVAL, "footprint", "all-zero footprint with size");
  f.opt.nsize = 0;
  make_fp(&f.fp, 3, s3, 1);
  ndf_array fpd = f.fp.arr;
  fpd.device = NDF_DEVICE_CUDA;
  f.opt.footprint = &fpd;
  expect_reject(&f, NDF_EINVAL, "footprint", "footprint on a CUDA device");
  fpd = f.fp.arr;
  fpd.data = NULL;
  expect_reject(&f, NDF_EINVAL, "footprint", "footprint data NULL");
  fpd = f.fp.arr;
  fpd.shape[1] = 0;
  expect_reject(&f, NDF_EINVAL, "footprint", "footprint with an empty axis");
  fpd = f.fp.arr;
  fpd.dtype = (ndf_dtype)42;
  expect_reject(&f, NDF_EINVAL, "footprint", "footprint of unknown dtype");
  f.opt.footprint = &f.fp.arr;
  expect_accept(&f, "valid footprint");
  fx_free(&f);
}

static void test_bad_structure(void **state) {
  fixture f;
  fx_init(&f, state, NDF_FLOAT32);
  f.opt.nsize = 0;
  int64_t s2[2] = {3, 3}, s3[3] = {3, 3, 3}, s3b[3] = {3, 2, 3};
  make_st(&f.st, 2, s2);
  f.opt.structure = &f.st.arr;
  expect_reject(&f, NDF_EINVAL, "structure", "structure rank 2 for 3 spatial axes");
  make_st(&f.st, 3, s3);
  f.opt.batch_dims = 1;
  expect_reject(&f, NDF_EINVAL, "structure", "structure rank 3 for 2 spatial axes");
  f.opt.batch_dims = 0;
  ndf_array std = f.st.arr;
  std.device = NDF_DEVICE_CUDA;
  f.opt.structure = &std;
  expect_reject(&f, NDF_EINVAL, "structure", "structure on a CUDA device");
  std = f.st.arr;
  std.data = NULL;
  expect_reject(&f, NDF_EINVAL, "structure", "structure data NULL");
  /* structure and footprint of different shapes */
  f.opt.structure = &f.st.arr;
  make_fp(&f.fp, 3, s3b, 1);
  f.opt.footprint = &f.fp.arr;
  expect_reject(&f, NDF_EINVAL, "structure|footprint", "structure shape != footprint shape");
  make_fp(&f.fp, 3, s3, 1);
  expect_accept(&f, "structure with footprint");
  fx_free(&f);
  /* ADR 0003: non-finite structure values are rejected for integer inputs */
  const double nonfinite[] = {NAN, INFINITY, -INFINITY};
  for (ndf_dtype dt = NDF_UINT8; dt <= NDF_INT32; dt++) {
    for (size_t k = 0; k < 3; k++) {
      fx_init(&f, state, dt);
      f.opt.nsize = 0;
      make_st(&f.st, 3, s3);
      tu_set(&f.st.arr, 13, nonfinite[k]);
      f.opt.structure = &f.st.arr;
      expect_reject(&f, NDF_EINVAL, "structure", "non-finite structure value, integer input");
      fx_free(&f);
    }
  }
  fx_init(&f, state, NDF_FLOAT32);
  f.opt.nsize = 0;
  make_st(&f.st, 3, s3);
  f.opt.structure = &f.st.arr;
  make_fp(&f.fp, 3, s3, 1);
  f.opt.footprint = &f.fp.arr;
  f.opt.footprint = NULL;
  expect_accept(&f, "structure alone");
  fx_free(&f);
}

static void test_bad_origin(void **state) {
  fixture f;
  fx_init(&f, state, NDF_FLOAT32);
  /* size 3: -1..1 valid */
  const int64_t bad3[] = {2, -2, 100, -100};
  for (size_t k = 0; k < sizeof bad3 / sizeof bad3[0]; k++) {
    f.opt.norigin = 1;
    f.opt.origin[0] = bad3[k];
    expect_reject(&f, NDF_EINVAL, "origin", "scalar origin outside size 3");
    f.opt.norigin = 3;
    f.opt.origin[0] = 0;
    f.opt.origin[1] = 0;
    f.opt.origin[2] = bad3[k];
    expect_reject(&f, NDF_EINVAL, "origin", "origin[2] outside size 3");
  }
  /* even size 4: -2..1 valid, for dilation as well (reflected: -o-1 in -2..1) */
  f.opt.nsize = 3;
  f.opt.size[0] = 4;
  f.opt.size[1] = 2;
  f.opt.size[2] = 3;
  f.opt.norigin = 3;
  const int64_t ok0[] = {-2, -1, 0, 1};
  for (size_t k = 0; k < 4; k++) {
    f.opt.origin[0] = ok0[k];
    f.opt.origin[1] = k % 2 ? -1 : 0;
    f.opt.origin[2] = (int64_t)k % 3 - 1;
    expect_accept(&f, "origin inside an even size");
  }
  f.opt.origin[1] = 0;
  f.opt.origin[2] = 0;
  const int64_t bad4[] = {2, -3};
  for (size_t k = 0; k < 2; k++) {
    f.opt.origin[0] = bad4[k];
    expect_reject(&f, NDF_EINVAL, "origin", "origin[0] outside size 4");
  }
  f.opt.origin[0] = 0;
  const int64_t bad2[] = {1, -2};
  for (size_t k = 0; k < 2; k++) {
    f.opt.origin[1] = bad2[k];
    expect_reject(&f, NDF_EINVAL, "origin", "origin[1] outside size 2");
  }
  /* norigin neither 0, 1 nor the spatial ndim */
  f.opt.origin[1] = 0;
  const int badn[] = {2, 4, -1};
  for (size_t k = 0; k < 3; k++) {
    f.opt.norigin = badn[k];
    expect_reject(&f, NDF_EINVAL, "origin", "norigin neither 1 nor the spatial ndim");
  }
  /* a footprint that is not a box checks every axis, size-1 axes included */
  int64_t fs[3] = {3, 1, 2};
  make_fp(&f.fp, 3, fs, 1);
  f.opt.footprint = &f.fp.arr;
  f.opt.norigin = 3;
  f.opt.origin[0] = 0;
  f.opt.origin[1] = 1;
  f.opt.origin[2] = 0;
  expect_reject(&f, NDF_EINVAL, "origin", "origin 1 on a size-1 axis of a non-box footprint");
  f.opt.origin[1] = 0;
  f.opt.origin[2] = 1;
  expect_reject(&f, NDF_EINVAL, "origin", "origin 1 on a size-2 axis of a footprint");
  f.opt.origin[2] = -1;
  expect_accept(&f, "origin -1 on a size-2 axis of a footprint");
  /* a structure too */
  f.opt.footprint = NULL;
  make_st(&f.st, 3, fs);
  f.opt.structure = &f.st.arr;
  f.opt.origin[1] = -1;
  expect_reject(&f, NDF_EINVAL, "origin", "origin -1 on a size-1 axis of a structure");
  fx_free(&f);
}

/* The composites run an erosion and a dilation with the same origin; scipy
 * checks the origin in both steps (the dilation's is -o, minus 1 more on even
 * axes), and ndforge validates both before the first step runs.  For every
 * element length s = 1..8 on axis 1 (size, a non-box footprint, a structure),
 * every origin -6..6 and every op: accepted exactly when scipy 1.10 accepts
 * it (o in [-(s/2), (s-1)/2]; any o on a size-1 axis of a box), and for the
 * composites exactly when both erosion and dilation accept it; rejected with
 * a message naming the op itself and "origin", the output untouched.  (For
 * every s the erosion's and the reflected dilation's ranges coincide:
 * -o - 1 in [-(s/2), s/2 - 1] iff o in [-(s/2), s/2 - 1].) */
static void test_composite_origin_both_steps(void **state) {
  fixture f;
  int failed = 0;
  for (int kind = 0; kind < 3; kind++) { /* size, footprint (not a box), structure */
    for (int64_t s = 1; s <= 8; s++) {
      fx_init(&f, state, kind == 2 ? NDF_INT16 : NDF_FLOAT32);
      f.opt.nsize = 0;
      int64_t es[3] = {3, s, 2};
      if (kind == 0) {
        f.opt.nsize = 3;
        for (int i = 0; i < 3; i++) f.opt.size[i] = es[i];
      } else if (kind == 1) {
        tu_array_free(&f.fp);
        assert_int_equal(tu_array_alloc(&f.fp, NDF_UINT8, 3, es), 0);
        for (int64_t i = 0; i < ndf_array_size(&f.fp.arr); i++) tu_set(&f.fp.arr, i, i != 1); /* one tap off */
        f.opt.footprint = &f.fp.arr;
      } else {
        make_st(&f.st, 3, es);
        f.opt.structure = &f.st.arr;
      }
      f.opt.norigin = 3;
      for (int64_t o = -6; o <= 6; o++) {
        f.opt.origin[0] = 0;
        f.opt.origin[1] = o;
        f.opt.origin[2] = -1;
        int want = (o >= -(s / 2) && o <= (s - 1) / 2) || (kind == 0 && s == 1);
        int step_ok[2];
        for (int opi = 0; opi < TU_OP_COUNT; opi++) {
          tu_poison(f.outbuf, f.outbytes);
          ndf_status r = call(f.ctx, opi, &f.in.arr, &f.out, &f.opt);
          const char *m = ndf_errmsg(f.ctx);
          const char *op = tu_op_api_name(opi);
          if (opi <= TU_OP_DILATION) step_ok[opi] = r == NDF_OK;
          int ok;
          if (want) ok = r == NDF_OK;
          else ok = r == NDF_EINVAL && strstr(m, op) && strstr(m, "origin") && tu_poison_check(f.outbuf, f.outbytes) == -1;
          if (ok && tu_op_is_composite(opi) && (r == NDF_OK) != (step_ok[0] && step_ok[1])) ok = 0;
          if (!ok) {
            if (failed < 12)
              printf("%s, %s of length %lld on axis 1, origin (0,%lld,-1): %s%s \"%s\"; want %s%s\n", op,
                     kind == 0 ? "size" : kind == 1 ? "footprint" : "structure", (long long)s, (long long)o,
                     ndf_status_name(r), r != NDF_OK && tu_poison_check(f.outbuf, f.outbytes) != -1 ? " (output written)" : "",
                     m, want ? "NDF_OK" : "NDF_EINVAL naming the op and 'origin'",
                     tu_op_is_composite(opi) ? (step_ok[0] && step_ok[1] ? " (erosion and dilation accept it)"
                                                                         : " (erosion or dilation rejects it)")
                                             : "");
            failed++;
          }
        }
      }
      fx_free(&f);
    }
  }
  /* Even lengths on every axis, one origin per axis, and a scalar origin. */
  fx_init(&f, state, NDF_UINT8);
  f.opt.nsize = 3;
  f.opt.size[0] = 4;
  f.opt.size[1] = 2;
  f.opt.size[2] = 6;
  for (int64_t a = -3; a <= 3; a++) {
    for (int64_t b = -2; b <= 2; b++) {
      for (int64_t c = -4; c <= 4; c++) {
        for (int scalar = 0; scalar < 2; scalar++) {
          if (scalar && (b != a || c != a)) continue;
          f.opt.norigin = scalar ? 1 : 3;
          f.opt.origin[0] = a;
          f.opt.origin[1] = b;
          f.opt.origin[2] = c;
          int want = a >= -2 && a <= 1 && b >= -1 && b <= 0 && c >= -3 && c <= 2;
          for (int opi = 0; opi < TU_OP_COUNT; opi++) {
            tu_poison(f.outbuf, f.outbytes);
            ndf_status r = call(f.ctx, opi, &f.in.arr, &f.out, &f.opt);
            const char *m = ndf_errmsg(f.ctx);
            int ok = want ? r == NDF_OK
                          : r == NDF_EINVAL && strstr(m, tu_op_api_name(opi)) && strstr(m, "origin") &&
                                tu_poison_check(f.outbuf, f.outbytes) == -1;
            if (!ok) {
              if (failed < 12)
                printf("%s, size (4,2,6), origin %s(%lld,%lld,%lld): %s \"%s\"; want %s\n", tu_op_api_name(opi),
                       scalar ? "scalar " : "", (long long)a, (long long)b, (long long)c, ndf_status_name(r), m,
                       want ? "NDF_OK" : "NDF_EINVAL naming the op and 'origin'");
              failed++;
            }
          }
        }
      }
    }
  }
  fx_free(&f);
  assert_int_equal(failed, 0);
}

static void test_bad_mode(void **state) {
  fixture f;
  fx_init(&f, state, NDF_FLOAT32);
  const int bad[] = {NDF_MODE_COUNT, -1, 100};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    f.opt.mode = (ndf_mode)bad[k];
    expect_reject(&f, NDF_EINVAL, "mode", "bad mode value");
  }
  f.opt.mode = NDF_MODE_WRAP;
  f.opt.nan_policy = (ndf_nan_policy)7;
  expect_reject(&f, NDF_EINVAL, "nan_policy|nan", "bad nan_policy value");
  fx_free(&f);
}

static void test_bad_cval_for_integers(void **state) {
  for (ndf_dtype dt = NDF_UINT8; dt <= NDF_INT32; dt++) {
    fixture f;
    fx_init(&f, state, dt);
    double lo, hi;
    tu_int_range(dt, &lo, &hi);
    f.opt.mode = NDF_MODE_CONSTANT;
    const double bad[] = {NAN, INFINITY, -INFINITY, hi + 1, lo - 1, 1e30};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
      f.opt.cval = bad[k];
      expect_reject(&f, NDF_EINVAL, "cval", "bad cval for an integer dtype");
    }
    f.opt.cval = hi;
    expect_accept(&f, "cval = dtype max");
    f.opt.cval = lo;
    expect_accept(&f, "cval = dtype min");
    fx_free(&f);
  }
  /* floats take any cval, NaN and infinities included */
  fixture f;
  fx_init(&f, state, NDF_FLOAT64);
  f.opt.mode = NDF_MODE_CONSTANT;
  f.opt.cval = NAN;
  expect_accept(&f, "float cval NaN");
  f.opt.cval = -INFINITY;
  expect_accept(&f, "float cval -inf");
  fx_free(&f);
}

/* After a failure the message is set; after a success it is "". */
static void test_errmsg_cleared_on_success(void **state) {
  fixture f;
  fx_init(&f, state, NDF_FLOAT32);
  for (int opi = 0; opi < TU_OP_COUNT; opi++) {
    f.opt.nsize = 0;
    assert_int_equal(call(f.ctx, opi, &f.in.arr, &f.out, &f.opt), NDF_EINVAL);
    assert_true(strlen(ndf_errmsg(f.ctx)) > 0);
    f.opt.nsize = 1;
    assert_int_equal(call(f.ctx, opi, &f.in.arr, &f.out, &f.opt), NDF_OK);
    assert_string_equal(ndf_errmsg(f.ctx), "");
  }
  fx_free(&f);
}

/* ------------------------------------------------------------------------ */
/* Names, descriptors, contexts                                              */

static void test_status_names(void **state) {
  (void)state;
#define CHECK_STATUS(name, code, msg)                                  \
  assert_int_equal(NDF_##name, code);                                  \
  assert_string_equal(ndf_status_name(NDF_##name), "NDF_" #name);      \
  assert_string_equal(ndf_status_string(NDF_##name), msg);
  NDF_STATUS_MAP(CHECK_STATUS)
#undef CHECK_STATUS
  assert_string_equal(ndf_status_name((ndf_status)99), "NDF_UNKNOWN");
  assert_string_equal(ndf_status_name((ndf_status)-1), "NDF_UNKNOWN");
  assert_non_null(ndf_status_string((ndf_status)99));
  assert_non_null(ndf_status_string((ndf_status)-1));
  assert_string_equal(ndf_version(), NDF_VERSION_STRING);
}

static void test_mode_names(void **state) {
  (void)state;
  struct {
    const char *name;
    ndf_mode m;
  } ok[] = {{"reflect", NDF_MODE_REFLECT},     {"constant", NDF_MODE_CONSTANT},
            {"nearest", NDF_MODE_NEAREST},     {"mirror", NDF_MODE_MIRROR},
            {"wrap", NDF_MODE_WRAP},           {"grid-mirror", NDF_MODE_REFLECT},
            {"grid-constant", NDF_MODE_CONSTANT}, {"grid-wrap", NDF_MODE_WRAP}};
  for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
    ndf_mode m = (ndf_mode)-7;
    ndf_status r = ndf_mode_from_name(ok[k].name, &m);
    if (r != NDF_OK || m != ok[k].m) printf("ndf_mode_from_name(\"%s\"): %s, %d\n", ok[k].name, ndf_status_name(r), m);
    assert_int_equal(r, NDF_OK);
    assert_int_equal(m, ok[k].m);
  }
  const char *canon[] = {"reflect", "constant", "nearest", "mirror", "wrap"};
  for (int m = 0; m < NDF_MODE_COUNT; m++) assert_string_equal(ndf_mode_name((ndf_mode)m), canon[m]);
  const char *bad[] = {"bogus", "", "Reflect", "reflect ", "grid_wrap", "wrap-grid"};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    ndf_mode m = NDF_MODE_NEAREST;
    ndf_status r = ndf_mode_from_name(bad[k], &m);
    if (r != NDF_EINVAL) printf("ndf_mode_from_name(\"%s\") = %s\n", bad[k], ndf_status_name(r));
    assert_int_equal(r, NDF_EINVAL);
  }
  ndf_mode m;
  assert_int_equal(ndf_mode_from_name(NULL, &m), NDF_EINVAL);
  assert_int_equal(ndf_mode_from_name("wrap", NULL), NDF_EINVAL);
}

static void test_dtype_names(void **state) {
  (void)state;
  const char *names[] = {"bool",    "uint8",   "int8",  "uint16", "int16", "uint32",
                         "int32",   "float32", "float64", "int64", "uint64"};
  const size_t sizes[] = {1, 1, 1, 2, 2, 4, 4, 4, 8, 8, 8};
  for (int t = 0; t < NDF_DTYPE_COUNT; t++) {
    assert_string_equal(ndf_dtype_name((ndf_dtype)t), names[t]);
    assert_int_equal(ndf_dtype_size((ndf_dtype)t), sizes[t]);
    ndf_dtype back = (ndf_dtype)-1;
    assert_int_equal(ndf_dtype_from_name(names[t], &back), NDF_OK);
    assert_int_equal(back, t);
  }
  assert_null(ndf_dtype_name(NDF_DTYPE_COUNT));
  assert_null(ndf_dtype_name((ndf_dtype)-1));
  assert_int_equal(ndf_dtype_size(NDF_DTYPE_COUNT), 0);
  struct {
    const char *name;
    ndf_dtype t;
  } ok[] = {{"u1", NDF_UINT8},   {"|u1", NDF_UINT8},    {"i1", NDF_INT8},     {"|i1", NDF_INT8},
            {"<u2", NDF_UINT16}, {"u2", NDF_UINT16},    {"<i2", NDF_INT16},   {"<u4", NDF_UINT32},
            {"<i4", NDF_INT32},  {"i4", NDF_INT32},     {"<f4", NDF_FLOAT32}, {"f4", NDF_FLOAT32},
            {"<f8", NDF_FLOAT64}, {"f8", NDF_FLOAT64},  {"|b1", NDF_BOOL},    {"<i8", NDF_INT64},
            {"u8", NDF_UINT64}};
  for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
    ndf_dtype t = (ndf_dtype)-1;
    ndf_status r = ndf_dtype_from_name(ok[k].name, &t);
    if (r != NDF_OK || t != ok[k].t) printf("ndf_dtype_from_name(\"%s\"): %s %d\n", ok[k].name, ndf_status_name(r), t);
    assert_int_equal(r, NDF_OK);
    assert_int_equal(t, ok[k].t);
  }
  const char *bad[] = {"float16", "complex64", "uint128", "", "xyz", "f2", ">f4", ">i2"};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    ndf_dtype t;
    ndf_status r = ndf_dtype_from_name(bad[k], &t);
    if (r == NDF_OK) printf("ndf_dtype_from_name(\"%s\") accepted (%d)\n", bad[k], t);
    assert_int_not_equal(r, NDF_OK);
  }
  ndf_dtype t;
  assert_int_not_equal(ndf_dtype_from_name(NULL, &t), NDF_OK);
}

static void test_array_helpers(void **state) {
  (void)state;
  float buf[120];
  ndf_array a;
  int64_t sh[3] = {4, 5, 6};
  assert_int_equal(ndf_array_init(&a, buf, NDF_DEVICE_CPU, NDF_FLOAT32, 3, sh), NDF_OK);
  assert_ptr_equal(a.data, buf);
  assert_int_equal(a.device, NDF_DEVICE_CPU);
  assert_int_equal(a.device_id, 0);
  assert_int_equal(a.strides[0], 30);
  assert_int_equal(a.strides[1], 6);
  assert_int_equal(a.strides[2], 1);
  assert_int_equal(ndf_array_size(&a), 120);
  assert_int_equal(ndf_array_is_contiguous(&a), 1);
  a.strides[0] = 1;
  a.strides[2] = 20;
  assert_int_equal(ndf_array_is_contiguous(&a), 0);
  assert_int_equal(ndf_array_init(&a, buf, NDF_DEVICE_CPU, NDF_FLOAT32, 0, sh), NDF_OK);
  assert_int_equal(ndf_array_size(&a), 1);
  int64_t sh13[13] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  assert_int_equal(ndf_array_init(&a, buf, NDF_DEVICE_CPU, NDF_FLOAT32, 13, sh13), NDF_EINVAL);
  assert_int_equal(ndf_array_init(&a, buf, NDF_DEVICE_CPU, NDF_FLOAT32, -1, sh), NDF_EINVAL);
  assert_int_equal(ndf_array_init(NULL, buf, NDF_DEVICE_CPU, NDF_FLOAT32, 3, sh), NDF_EINVAL);
  assert_int_equal(ndf_array_init(&a, buf, NDF_DEVICE_CPU, (ndf_dtype)42, 3, sh), NDF_EINVAL);
  assert_true(strlen(ndf_last_error()) > 0);
}

static void test_context_and_options(void **state) {
  ndf_ctx *cpu = *state;
  assert_int_equal(ndf_ctx_has_cuda(cpu), 0);
  assert_null(ndf_ctx_stream(cpu));
  assert_string_equal(ndf_ctx_cache_dir(cpu), ""); /* cache_disable = 1 */
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  assert_int_equal(o.backend, NDF_BACKEND_AUTO);
  assert_int_equal(o.device, 0);
  assert_null(o.stream);
  assert_null(o.cache_dir);
  assert_int_equal(o.cache_disable, 0);
  assert_int_equal(ndf_ctx_create(NULL, &o), NDF_EINVAL);
  ndf_ctx *c = (ndf_ctx *)&o; /* a non-NULL value that must become NULL */
  o.backend = (ndf_backend)9;
  assert_int_equal(ndf_ctx_create(&c, &o), NDF_EINVAL);
  assert_null(c);
  assert_true(strlen(ndf_last_error()) > 0);
  /* CUDA required: ENODEV (and *out NULL) exactly when AUTO finds no device */
  ndf_ctx_options_init(&o);
  ndf_ctx *autoc = NULL;
  assert_int_equal(ndf_ctx_create(&autoc, &o), NDF_OK);
  int has = ndf_ctx_has_cuda(autoc);
  ndf_ctx_destroy(autoc);
  o.backend = NDF_BACKEND_CUDA;
  c = (ndf_ctx *)&o;
  ndf_status r = ndf_ctx_create(&c, &o);
  if (has) {
    assert_int_equal(r, NDF_OK);
    ndf_ctx_destroy(c);
  } else {
    assert_int_equal(r, NDF_ENODEV);
    assert_null(c);
    assert_true(strlen(ndf_last_error()) > 0);
  }
  ndf_ctx_destroy(NULL);
  ndf_grey_options g;
  memset(&g, 0x5c, sizeof g);
  ndf_grey_options_init(&g);
  assert_int_equal(g.nsize, 0);
  assert_null(g.footprint);
  assert_null(g.structure);
  assert_int_equal(g.norigin, 0);
  assert_int_equal(g.mode, NDF_MODE_REFLECT);
  assert_true(g.cval == 0.0);
  assert_int_equal(g.batch_dims, 0);
  assert_int_equal(g.nan_policy, NDF_NAN_PROPAGATE);
  /* host allocation through a CPU context */
  ndf_array a;
  int64_t sh[2] = {3, 7};
  assert_int_equal(ndf_array_alloc(cpu, &a, NDF_DEVICE_CPU, NDF_INT16, 2, sh), NDF_OK);
  assert_non_null(a.data);
  assert_int_equal(ndf_array_is_contiguous(&a), 1);
  ndf_array b;
  assert_int_equal(ndf_array_alloc(cpu, &b, NDF_DEVICE_CPU, NDF_INT16, 2, sh), NDF_OK);
  for (int i = 0; i < 21; i++) ((int16_t *)a.data)[i] = (int16_t)(i * 3 - 20);
  assert_int_equal(ndf_array_copy(cpu, &b, &a), NDF_OK);
  assert_memory_equal(a.data, b.data, 21 * sizeof(int16_t));
  b.dtype = NDF_UINT16;
  assert_int_equal(ndf_array_copy(cpu, &b, &a), NDF_EINVAL);
  b.dtype = NDF_INT16;
  ndf_array_free(cpu, &a);
  assert_null(a.data);
  ndf_array_free(cpu, &a); /* NULL data: no-op */
  ndf_array_free(cpu, &b);
  /* a CUDA allocation on a CPU-only context fails */
  assert_int_not_equal(ndf_array_alloc(cpu, &a, NDF_DEVICE_CUDA, NDF_INT16, 2, sh), NDF_OK);
}

/* ------------------------------------------------------------------------ */
/* Hostile sizes: shapes, strides and derived sizes that overflow            */

/* Checks status and that the message holds every '|'-separated word. */
static void expect_msg(ndf_status got, ndf_status want, const char *m, const char *words, const char *what) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", words);
  int ok = got == want;
  char *save = NULL;
  for (char *w = strtok_r(buf, "|", &save); w; w = strtok_r(NULL, "|", &save))
    if (!m || !strstr(m, w)) ok = 0;
  if (!ok) printf("%s: got %s \"%s\"; want %s naming %s\n", what, ndf_status_name(got), m ? m : "(null)",
                  ndf_status_name(want), words);
  assert_int_equal(got, want);
  assert_true(ok);
}

static void test_hostile_descriptors(void **state) {
  ndf_ctx *ctx = *state;
  ndf_array a;
  int64_t big2[2] = {(int64_t)1 << 32, (int64_t)1 << 32};
  expect_msg(ndf_array_init(&a, NULL, NDF_DEVICE_CPU, NDF_FLOAT32, 2, big2), NDF_EINVAL, ndf_last_error(),
             "ndf_array_init|shape|4294967296x4294967296", "init 2^32 x 2^32");
  int64_t neg[2] = {3, -2};
  expect_msg(ndf_array_init(&a, NULL, NDF_DEVICE_CPU, NDF_FLOAT32, 2, neg), NDF_EINVAL, ndf_last_error(),
             "ndf_array_init|shape[1]=-2", "init negative");
  /* an empty array may have huge other extents when the non-zero ones multiply within int64 */
  int64_t empty[3] = {(int64_t)1 << 61, 0, 3};
  assert_int_equal(ndf_array_init(&a, NULL, NDF_DEVICE_CPU, NDF_UINT8, 3, empty), NDF_OK);
  assert_int_equal(ndf_array_size(&a), 0);
  int64_t empty2[3] = {(int64_t)1 << 40, 0, (int64_t)1 << 40};
  assert_int_equal(ndf_array_init(&a, NULL, NDF_DEVICE_CPU, NDF_UINT8, 3, empty2), NDF_EINVAL);
  /* ndf_array_size of a descriptor built by hand: -1 when the product overflows or an extent is negative */
  memset(&a, 0, sizeof a);
  a.dtype = NDF_FLOAT32;
  a.ndim = 2;
  a.shape[0] = a.shape[1] = (int64_t)1 << 32;
  assert_int_equal(ndf_array_size(&a), -1);
  a.shape[1] = -1;
  assert_int_equal(ndf_array_size(&a), -1);
  a.ndim = NDF_MAX_NDIM + 1;
  assert_int_equal(ndf_array_size(&a), -1);
  assert_int_equal(ndf_array_size(NULL), 0);
  /* the checked arithmetic */
  int64_t r = 7;
  assert_int_equal(ndf_size_mul((int64_t)1 << 62, 2, &r), 0);
  assert_int_equal(r, 7);
  assert_int_equal(ndf_size_mul(-1, 2, &r), 0);
  assert_int_equal(ndf_size_mul((int64_t)1 << 31, (int64_t)1 << 31, &r), 1);
  assert_int_equal(r, (int64_t)1 << 62);
  int64_t bytes = -1, one[1] = {(int64_t)1 << 61};
  expect_msg(ndf_shape_bytes(NDF_FLOAT64, 1, one, &bytes), NDF_EINVAL, ndf_last_error(), "NDF_MAX_BYTES",
             "shape_bytes 2^61 f64");
  int64_t ok3[3] = {4, 5, 6};
  assert_int_equal(ndf_shape_bytes(NDF_FLOAT64, 3, ok3, &bytes), NDF_OK);
  assert_int_equal(bytes, 960);
  assert_int_equal(ndf_shape_bytes(NDF_FLOAT64, 3, empty, &bytes), NDF_OK);
  assert_int_equal(bytes, 0);
  /* allocation of 2^61 float64: refused before malloc, not a 1-byte buffer */
  memset(&a, 0, sizeof a);
  expect_msg(ndf_array_alloc(ctx, &a, NDF_DEVICE_CPU, NDF_FLOAT64, 1, one), NDF_EINVAL, ndf_errmsg(ctx),
             "ndf_array_alloc|NDF_MAX_BYTES", "alloc 2^61 f64");
  assert_null(a.data);
  expect_msg(ndf_array_alloc(ctx, &a, NDF_DEVICE_CPU, NDF_FLOAT32, 2, big2), NDF_EINVAL, ndf_errmsg(ctx),
             "ndf_array_alloc|shape", "alloc 2^32 x 2^32");
  assert_null(a.data);
}

static void test_hostile_copy(void **state) {
  ndf_ctx *ctx = *state;
  int64_t sh[1] = {16};
  ndf_array a, b;
  assert_int_equal(ndf_array_alloc(ctx, &a, NDF_DEVICE_CPU, NDF_FLOAT32, 1, sh), NDF_OK);
  assert_int_equal(ndf_array_alloc(ctx, &b, NDF_DEVICE_CPU, NDF_FLOAT32, 1, sh), NDF_OK);
  for (int i = 0; i < 16; i++) ((float *)a.data)[i] = (float)i;
  tu_poison(b.data, 64);
  ndf_array src = a, dst = b;
  src.shape[0] = dst.shape[0] = -16; /* a negative shape copies nothing */
  expect_msg(ndf_array_copy(ctx, &dst, &src), NDF_EINVAL, ndf_errmsg(ctx), "ndf_array_copy|src|negative",
             "copy negative shape");
  src = a;
  dst = b;
  src.strides[0] = INT64_MIN;
  expect_msg(ndf_array_copy(ctx, &dst, &src), NDF_EINVAL, ndf_errmsg(ctx), "ndf_array_copy|src|stride",
             "copy INT64_MIN stride");
  src = a;
  src.strides[0] = (int64_t)1 << 62;
  expect_msg(ndf_array_copy(ctx, &dst, &src), NDF_EINVAL, ndf_errmsg(ctx), "ndf_array_copy|src|stride",
             "copy 2^62 stride");
  src = a;
  dst.strides[0] = 0; /* every element onto one */
  expect_msg(ndf_array_copy(ctx, &dst, &src), NDF_EINVAL, ndf_errmsg(ctx), "ndf_array_copy|dst", "copy onto a broadcast");
  assert_int_equal(tu_poison_check(b.data, 64), -1);
  /* overlapping copies: the destination starts inside the source */
  int64_t sh8[1] = {8};
  ndf_array lo, hi;
  assert_int_equal(ndf_array_init(&lo, a.data, NDF_DEVICE_CPU, NDF_FLOAT32, 1, sh8), NDF_OK);
  assert_int_equal(ndf_array_init(&hi, (float *)a.data + 4, NDF_DEVICE_CPU, NDF_FLOAT32, 1, sh8), NDF_OK);
  expect_msg(ndf_array_copy(ctx, &hi, &lo), NDF_EINVAL, ndf_errmsg(ctx), "ndf_array_copy|overlaps", "copy overlap");
  expect_msg(ndf_array_copy(ctx, &lo, &lo), NDF_EINVAL, ndf_errmsg(ctx), "ndf_array_copy|overlaps", "copy onto itself");
  for (int i = 0; i < 16; i++) assert_true(((float *)a.data)[i] == (float)i);
  ndf_array_free(ctx, &a);
  ndf_array_free(ctx, &b);
}

/* Ops on descriptors whose sizes overflow: refused, nothing written (a
 * 2^32 x 2^32 input used to wrap to 0 elements and return NDF_OK). */
static void test_hostile_op_shapes(void **state) {
  fixture f;
  fx_init(&f, state, NDF_FLOAT32);
  ndf_array in = f.in.arr, out = f.out;
  in.ndim = out.ndim = 2;
  in.shape[0] = in.shape[1] = out.shape[0] = out.shape[1] = (int64_t)1 << 32;
  in.strides[0] = out.strides[0] = (int64_t)1 << 32;
  in.strides[1] = out.strides[1] = 1;
  expect_reject_io(&f, &in, &out, &f.opt, NDF_EINVAL, "exceeds", "2^32 x 2^32");
  in = f.in.arr;
  out = f.out;
  in.strides[0] = (int64_t)1 << 62;
  expect_reject_io(&f, &in, &out, &f.opt, NDF_EINVAL, "input", "input stride 2^62");
  in = f.in.arr;
  out.strides[2] = INT64_MIN;
  expect_reject_io(&f, &in, &out, &f.opt, NDF_EINVAL, "output", "output stride INT64_MIN");
  /* an empty array with a huge other axis is a valid input with an empty output */
  int64_t empty[3] = {(int64_t)1 << 61, 0, 3};
  assert_int_equal(ndf_array_init(&in, f.in.base, NDF_DEVICE_CPU, NDF_FLOAT32, 3, empty), NDF_OK);
  assert_int_equal(ndf_array_init(&out, f.outbuf, NDF_DEVICE_CPU, NDF_FLOAT32, 3, empty), NDF_OK);
  for (int opi = 0; opi < TU_OP_COUNT; opi++) {
    tu_poison(f.outbuf, f.outbytes);
    ndf_status r = call(f.ctx, opi, &in, &out, &f.opt);
    if (r != NDF_OK) printf("empty (2^61, 0, 3) input (%s): %s\n", tu_op_api_name(opi), ndf_errmsg(f.ctx));
    assert_int_equal(r, NDF_OK);
    assert_int_equal(tu_poison_check(f.outbuf, f.outbytes), -1);
  }
  fx_free(&f);
}

static void test_hostile_curves(void **state) {
  ndf_ctx *ctx = *state;
  uint8_t one = 0;
  int64_t ibuf[16];
  tu_poison(ibuf, sizeof ibuf);
  /* a (2^61, 0, 3) input: with a batch axis its curves would be 2^61 x T int64 */
  int64_t ish[3] = {(int64_t)1 << 61, 0, 3};
  ndf_array in, out, dirs;
  assert_int_equal(ndf_array_init(&in, &one, NDF_DEVICE_CPU, NDF_UINT8, 3, ish), NDF_OK);
  int64_t osh[2] = {(int64_t)1 << 61, 2};
  memset(&out, 0, sizeof out); /* built by hand: ndf_array_init refuses it */
  out.data = ibuf;
  out.device = NDF_DEVICE_CPU;
  out.dtype = NDF_INT64;
  out.ndim = 2;
  out.shape[0] = osh[0];
  out.shape[1] = osh[1];
  out.strides[0] = 2;
  out.strides[1] = 1;
  ndf_ecc_options eo;
  ndf_ecc_options_init(&eo);
  eo.batch_dims = 1;
  eo.nthresholds = 2;
  eo.has_range = 1;
  eo.range_lo = 0;
  eo.range_hi = 1;
  expect_msg(ndf_euler_characteristic_curve(ctx, &in, &out, &eo), NDF_EINVAL, ndf_errmsg(ctx),
             "ndf_euler_characteristic_curve|output|NDF_MAX_BYTES", "ecc 2^61 curves");
  assert_int_equal(tu_poison_check(ibuf, sizeof ibuf), -1);
  /* without the batch axis: one empty image, whose curve is 0 everywhere */
  eo.batch_dims = 0;
  int64_t tsh[1] = {2};
  assert_int_equal(ndf_array_init(&out, ibuf, NDF_DEVICE_CPU, NDF_INT64, 1, tsh), NDF_OK);
  assert_int_equal(ndf_euler_characteristic_curve(ctx, &in, &out, &eo), NDF_OK);
  assert_true(ibuf[0] == 0 && ibuf[1] == 0);
  /* thresholds beyond the documented maximum */
  eo.nthresholds = NDF_MAX_THRESHOLDS + 1;
  expect_msg(ndf_euler_characteristic_curve(ctx, &in, &out, &eo), NDF_EINVAL, ndf_errmsg(ctx),
             "nthresholds|NDF_MAX_THRESHOLDS", "ecc too many thresholds");
  /* the transform: (batch, m, T) */
  double dbuf[3] = {1, 0, 0};
  int64_t dsh[2] = {1, 3};
  assert_int_equal(ndf_array_init(&dirs, dbuf, NDF_DEVICE_CPU, NDF_FLOAT64, 2, dsh), NDF_OK);
  int64_t ish4[4] = {(int64_t)1 << 59, 0, 3, 3};
  assert_int_equal(ndf_array_init(&in, &one, NDF_DEVICE_CPU, NDF_UINT8, 4, ish4), NDF_OK);
  memset(&out, 0, sizeof out);
  out.data = ibuf;
  out.device = NDF_DEVICE_CPU;
  out.dtype = NDF_INT64;
  out.ndim = 3;
  out.shape[0] = (int64_t)1 << 59;
  out.shape[1] = 1;
  out.shape[2] = 2;
  out.strides[0] = 2;
  out.strides[1] = 2;
  out.strides[2] = 1;
  ndf_ect_options to;
  ndf_ect_options_init(&to);
  to.batch_dims = 1;
  to.nthresholds = 2;
  tu_poison(ibuf, sizeof ibuf);
  expect_msg(ndf_euler_characteristic_transform(ctx, &in, &dirs, &out, &to), NDF_EINVAL, ndf_errmsg(ctx),
             "ndf_euler_characteristic_transform|output", "ect 2^61 transforms");
  assert_int_equal(tu_poison_check(ibuf, sizeof ibuf), -1);
}

static void test_hostile_structures(void **state) {
  (void)state;
  uint8_t row[1000];
  memset(row, 1, sizeof row);
  int64_t sh[2] = {1, 1000}, out_shape[2];
  ndf_array st;
  assert_int_equal(ndf_array_init(&st, row, NDF_DEVICE_CPU, NDF_UINT8, 2, sh), NDF_OK);
  /* 2,000,000 iterations of a 1x1000 element: ~2e9 elements, refused before any allocation */
  expect_msg(ndf_iterate_structure_shape(&st, 2000000, out_shape), NDF_EINVAL, ndf_last_error(),
             "iterations|NDF_MAX_STRUCTURE_ELEMENTS", "iterate 1x1000 2e6 times");
  expect_msg(ndf_iterate_structure_shape(&st, INT32_MAX, out_shape), NDF_EINVAL, ndf_last_error(),
             "iterations|NDF_MAX_STRUCTURE_ELEMENTS", "iterate INT32_MAX times");
  /* the result would fit, the dilation steps that build it would not: (1, 2e6+1) elements x 1e6 steps x 3 taps */
  uint8_t three[3] = {1, 1, 1};
  int64_t sh3[2] = {1, 3};
  assert_int_equal(ndf_array_init(&st, three, NDF_DEVICE_CPU, NDF_UINT8, 2, sh3), NDF_OK);
  assert_int_equal(ndf_iterate_structure_shape(&st, 1000000, out_shape), NDF_OK);
  assert_int_equal(out_shape[1], 2000001);
  uint8_t dummy = 0;
  ndf_array out;
  memset(&out, 0, sizeof out);
  out.data = &dummy; /* never written: the call fails first */
  out.device = NDF_DEVICE_CPU;
  out.dtype = NDF_UINT8;
  out.ndim = 2;
  out.shape[0] = 1;
  out.shape[1] = out_shape[1];
  out.strides[0] = out_shape[1];
  out.strides[1] = 1;
  expect_msg(ndf_iterate_structure(&st, 1000000, &out, 0, NULL, NULL), NDF_EINVAL, ndf_last_error(),
             "iterations|NDF_MAX_STRUCTURE_WORK", "iterate work bound");
  assert_int_equal(dummy, 0);
  /* iterations x origin beyond int64 (found by fuzz/fuzz_structure): refused, nothing written */
  uint8_t res[3 * 9];
  int64_t sh9[2] = {3, 9};
  ndf_array out9;
  assert_int_equal(ndf_array_init(&st, three, NDF_DEVICE_CPU, NDF_UINT8, 2, sh3), NDF_OK);
  assert_int_equal(ndf_iterate_structure_shape(&st, 4, out_shape), NDF_OK);
  assert_int_equal(out_shape[1], 9);
  sh9[0] = out_shape[0];
  assert_int_equal(ndf_array_init(&out9, res, NDF_DEVICE_CPU, NDF_UINT8, 2, sh9), NDF_OK);
  memset(res, 0xA5, sizeof res);
  int64_t big[1] = {-(INT64_MAX / 2)}, scaled[2] = {7, 7};
  expect_msg(ndf_iterate_structure(&st, 4, &out9, 1, big, scaled), NDF_EINVAL, ndf_last_error(),
             "origin|overflow", "iterate origin overflow");
  for (size_t i = 0; i < sizeof res; i++) assert_int_equal(res[i], 0xA5);
  assert_int_equal(scaled[0], 7);
}

/* The mask of a binary op is read while the output is written: aliasing refused. */
static void test_hostile_mask_alias(void **state) {
  ndf_ctx *ctx = *state;
  int64_t sh[2] = {6, 7};
  ndf_array in, out;
  assert_int_equal(ndf_array_alloc(ctx, &in, NDF_DEVICE_CPU, NDF_UINT8, 2, sh), NDF_OK);
  assert_int_equal(ndf_array_alloc(ctx, &out, NDF_DEVICE_CPU, NDF_UINT8, 2, sh), NDF_OK);
  memset(in.data, 1, 42);
  memset(out.data, 0xA5, 42);
  ndf_binary_options bo;
  ndf_binary_options_init(&bo);
  bo.mask = &out;
  expect_msg(ndf_binary_erosion(ctx, &in, &out, &bo), NDF_EINVAL, ndf_errmsg(ctx), "ndf_binary_erosion|mask|output",
             "mask is the output");
  expect_msg(ndf_binary_propagation(ctx, &in, &out, &bo), NDF_EINVAL, ndf_errmsg(ctx),
             "ndf_binary_propagation|mask|output", "propagation mask is the output");
  for (int i = 0; i < 42; i++) assert_int_equal(((uint8_t *)out.data)[i], 0xA5);
  bo.mask = &in; /* the mask may be the input (both are read) */
  assert_int_equal(ndf_binary_erosion(ctx, &in, &out, &bo), NDF_OK);
  ndf_array_free(ctx, &in);
  ndf_array_free(ctx, &out);
}

/* cpu_threads beyond the documented maximum: refused at ndf_ctx_create (it used
 * to overflow the OpenMP runtime's stack on the first op). */
static void test_hostile_cpu_threads(void **state) {
  (void)state;
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  o.backend = NDF_BACKEND_CPU;
  o.cache_disable = 1;
  const int bad[] = {100000, NDF_MAX_CPU_THREADS + 1, -1, INT32_MIN};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ndf_ctx *ctx = (ndf_ctx *)&o; /* not NULL: the call must clear it */
    o.cpu_threads = bad[i];
    expect_msg(ndf_ctx_create(&ctx, &o), NDF_EINVAL, ndf_last_error(), "ndf_ctx_create|cpu_threads|NDF_MAX_CPU_THREADS",
               "cpu_threads");
    assert_null(ctx);
  }
  ndf_ctx *ctx = NULL;
  o.cpu_threads = 2;
  assert_int_equal(ndf_ctx_create(&ctx, &o), NDF_OK);
  ndf_ctx_destroy(ctx);
}

/* ------------------------------------------------------------------------ */
/* Linear filters, intensity, metrics: argument errors                       */

/* Checks an NDF_EINVAL naming words ('|'-separated, all of them) and that every poisoned output stayed so. */
static void expect_einval_untouched(ndf_ctx *ctx, ndf_status got, const char *words, const char *what, tu_array *o1,
                                    tu_array *o2) {
  expect_msg(got, NDF_EINVAL, ndf_errmsg(ctx), words, what);
  if (o1) assert_int_equal(tu_poison_check(o1->base, o1->bytes), -1);
  if (o2) assert_int_equal(tu_poison_check(o2->base, o2->bytes), -1);
}

static void test_linear_filter_args(void **state) {
  ndf_ctx *ctx = *state;
  tu_array in, out, small;
  const int64_t sh2[3] = {4, 5, 5};
  assert_int_equal(tu_array_alloc(&in, NDF_FLOAT32, 3, SHAPE), 0);
  for (int64_t i = 0; i < 120; i++) tu_set(&in.arr, i, (double)((i * 37) % 101));
  assert_int_equal(tu_array_alloc(&out, NDF_FLOAT32, 3, SHAPE), 0);
  assert_int_equal(tu_array_alloc(&small, NDF_FLOAT32, 3, sh2), 0);
  tu_poison(out.base, out.bytes);
  tu_poison(small.base, small.bytes);
  ndf_filter_options o;
  ndf_filter_options_init(&o);
  ndf_gaussian_params g;
  ndf_gaussian_params_init(&g);
  const double bad_sigma[] = {-1.0, NAN, INFINITY};
  for (size_t i = 0; i < sizeof bad_sigma / sizeof bad_sigma[0]; i++) {
    g.sigma[0] = bad_sigma[i];
    expect_einval_untouched(ctx, ndf_gaussian_filter(ctx, &in.arr, &out.arr, &g, &o), "ndf_gaussian_filter|sigma",
                            "gaussian_filter bad sigma", &out, NULL);
  }
  g.sigma[0] = 1.0;
  g.norder = 1;
  g.order[0] = 9;
  expect_einval_untouched(ctx, ndf_gaussian_filter(ctx, &in.arr, &out.arr, &g, &o), "ndf_gaussian_filter|order",
                          "gaussian_filter order 9", &out, NULL);
  g.order[0] = -1;
  expect_einval_untouched(ctx, ndf_gaussian_filter(ctx, &in.arr, &out.arr, &g, &o), "ndf_gaussian_filter|order",
                          "gaussian_filter order -1", &out, NULL);
  g.order[0] = 1;
  expect_einval_untouched(ctx, ndf_gaussian_laplace(ctx, &in.arr, &out.arr, &g, &o), "ndf_gaussian_laplace|order",
                          "gaussian_laplace with an order", &out, NULL);
  g.norder = 0;
  expect_einval_untouched(ctx, ndf_gaussian_filter(ctx, &in.arr, &small.arr, &g, &o), "ndf_gaussian_filter|output",
                          "gaussian_filter shape mismatch", &small, NULL);
  expect_einval_untouched(ctx, ndf_gaussian_filter1d(ctx, &in.arr, &out.arr, 0.0, -1, 0, 4.0, -1, &o),
                          "ndf_gaussian_filter1d|sigma", "gaussian_filter1d sigma 0", &out, NULL);
  expect_einval_untouched(ctx, ndf_gaussian_filter1d(ctx, &in.arr, &out.arr, 1.0, -1, 9, 4.0, -1, &o),
                          "ndf_gaussian_filter1d|order", "gaussian_filter1d order 9", &out, NULL);
  const int64_t neg[1] = {-3};
  expect_einval_untouched(ctx, ndf_uniform_filter(ctx, &in.arr, &out.arr, 1, neg, &o), "ndf_uniform_filter|size",
                          "uniform_filter size -3", &out, NULL);
  expect_einval_untouched(ctx, ndf_uniform_filter1d(ctx, &in.arr, &out.arr, 0, -1, &o), "ndf_uniform_filter1d|size",
                          "uniform_filter1d size 0", &out, NULL);
  const int64_t three[1] = {3};
  expect_einval_untouched(ctx, ndf_uniform_filter(ctx, &in.arr, &small.arr, 1, three, &o),
                          "ndf_uniform_filter|output", "uniform_filter shape mismatch", &small, NULL);
  double w[9] = {1, 2, 1, 2, 4, 2, 1, 2, 1};
  const int64_t wsh[2] = {3, 3};
  ndf_array wa;
  assert_int_equal(ndf_array_init(&wa, w, NDF_DEVICE_CPU, NDF_FLOAT64, 2, wsh), NDF_OK);
  expect_einval_untouched(ctx, ndf_correlate(ctx, &in.arr, &out.arr, &wa, &o), "ndf_correlate|weights",
                          "correlate 2-D weights on 3 axes", &out, NULL);
  o.batch_dims = 1;
  expect_einval_untouched(ctx, ndf_convolve(ctx, &in.arr, &small.arr, &wa, &o), "ndf_convolve|output",
                          "convolve shape mismatch", &small, NULL);
  o.norigin = 1;
  o.origin[0] = 2;
  expect_einval_untouched(ctx, ndf_correlate(ctx, &in.arr, &out.arr, &wa, &o), "ndf_correlate|origin",
                          "correlate origin 2 for 3 taps", &out, NULL);
  o.norigin = 0;
  assert_int_equal(ndf_correlate(ctx, &in.arr, &out.arr, &wa, &o), NDF_OK); /* the same call, well formed */
  tu_array_free(&in);
  tu_array_free(&out);
  tu_array_free(&small);
}

static void test_intensity_args(void **state) {
  ndf_ctx *ctx = *state;
  tu_array in, q1, hist, edges, eq, small;
  const int64_t qsh[1] = {3}, hsh[1] = {10}, esh[1] = {11}, sh2[3] = {4, 5, 5};
  assert_int_equal(tu_array_alloc(&in, NDF_FLOAT32, 3, SHAPE), 0);
  for (int64_t i = 0; i < 120; i++) tu_set(&in.arr, i, (double)((i * 37) % 101));
  assert_int_equal(tu_array_alloc(&q1, NDF_FLOAT64, 1, qsh), 0);
  assert_int_equal(tu_array_alloc(&hist, NDF_INT64, 1, hsh), 0);
  assert_int_equal(tu_array_alloc(&edges, NDF_FLOAT64, 1, esh), 0);
  assert_int_equal(tu_array_alloc(&eq, NDF_FLOAT32, 3, SHAPE), 0);
  assert_int_equal(tu_array_alloc(&small, NDF_FLOAT32, 3, sh2), 0);
  tu_poison(q1.base, q1.bytes);
  tu_poison(hist.base, hist.bytes);
  tu_poison(edges.base, edges.bytes);
  tu_poison(eq.base, eq.bytes);
  tu_poison(small.base, small.bytes);
  const double bad_q[][3] = {{10, 50, 100.5}, {-1, 50, 90}, {10, NAN, 90}};
  for (size_t i = 0; i < sizeof bad_q / sizeof bad_q[0]; i++)
    expect_einval_untouched(ctx, ndf_percentile(ctx, &in.arr, bad_q[i], 3, &q1.arr, 0), "ndf_percentile|q",
                            "percentile q outside [0, 100]", &q1, NULL);
  const double bad_fraction[3] = {0.1, 0.5, 1.5};
  expect_einval_untouched(ctx, ndf_quantile(ctx, &in.arr, bad_fraction, 3, &q1.arr, 0), "ndf_quantile|q",
                          "quantile q outside [0, 1]", &q1, NULL);
  const double good_q[2] = {10, 90};
  expect_einval_untouched(ctx, ndf_percentile(ctx, &in.arr, good_q, 2, &q1.arr, 0), "ndf_percentile|output",
                          "percentile output shape", &q1, NULL);
  ndf_histogram_options h;
  ndf_histogram_options_init(&h);
  const int64_t bad_bins[] = {0, -4};
  for (size_t i = 0; i < sizeof bad_bins / sizeof bad_bins[0]; i++) {
    h.bins = bad_bins[i];
    expect_einval_untouched(ctx, ndf_histogram(ctx, &in.arr, &hist.arr, &edges.arr, &h), "ndf_histogram|bins",
                            "histogram bins <= 0", &hist, &edges);
  }
  h.bins = 10;
  h.has_range = 1;
  h.range[0] = 5;
  h.range[1] = 1;
  expect_einval_untouched(ctx, ndf_histogram(ctx, &in.arr, &hist.arr, &edges.arr, &h), "ndf_histogram|range",
                          "histogram range reversed", &hist, &edges);
  h.has_range = 0;
  h.bins = 9; /* hist and bin_edges hold 10 and 11 */
  expect_einval_untouched(ctx, ndf_histogram(ctx, &in.arr, &hist.arr, &edges.arr, &h), "ndf_histogram|hist",
                          "histogram shape mismatch", &hist, &edges);
  h.bins = 10;
  h.weights = &small.arr;
  expect_einval_untouched(ctx, ndf_histogram(ctx, &in.arr, &hist.arr, &edges.arr, &h), "ndf_histogram|weights",
                          "histogram weights shape mismatch", &hist, &edges);
  ndf_window_options wo;
  ndf_window_options_init(&wo);
  expect_einval_untouched(ctx, ndf_percentile_window(ctx, &in.arr, &eq.arr, 1, 100.5, &wo),
                          "ndf_percentile_window|p_lo", "percentile_window p_hi > 100", &eq, NULL);
  expect_einval_untouched(ctx, ndf_percentile_window(ctx, &in.arr, &eq.arr, 60, 40, &wo),
                          "ndf_percentile_window|p_lo", "percentile_window p_lo > p_hi", &eq, NULL);
  expect_einval_untouched(ctx, ndf_percentile_window(ctx, &in.arr, &small.arr, 1, 99, &wo),
                          "ndf_percentile_window|output", "percentile_window shape mismatch", &small, NULL);
  expect_einval_untouched(ctx, ndf_equalize_hist(ctx, &in.arr, NULL, &eq.arr, 0, 0), "ndf_equalize_hist|nbins",
                          "equalize_hist nbins 0", &eq, NULL);
  expect_einval_untouched(ctx, ndf_equalize_hist(ctx, &in.arr, &small.arr, &eq.arr, 16, 0), "ndf_equalize_hist|mask",
                          "equalize_hist mask shape mismatch", &eq, NULL);
  expect_einval_untouched(ctx, ndf_equalize_hist(ctx, &in.arr, NULL, &small.arr, 16, 0),
                          "ndf_equalize_hist|output", "equalize_hist shape mismatch", &small, NULL);
  tu_array_free(&in);
  tu_array_free(&q1);
  tu_array_free(&hist);
  tu_array_free(&edges);
  tu_array_free(&eq);
  tu_array_free(&small);
}

static void test_metrics_args(void **state) {
  ndf_ctx *ctx = *state;
  tu_array a, b, other, mssim, full, res;
  const int64_t sh2[3] = {4, 5, 5}, bsh[1] = {4};
  assert_int_equal(tu_array_alloc(&a, NDF_FLOAT32, 3, SHAPE), 0);
  assert_int_equal(tu_array_alloc(&b, NDF_UINT8, 3, SHAPE), 0);
  assert_int_equal(tu_array_alloc(&other, NDF_UINT8, 3, sh2), 0);
  for (int64_t i = 0; i < 120; i++) {
    tu_set(&a.arr, i, (double)((i * 37) % 101));
    tu_set(&b.arr, i, (double)((i * 11) % 3 == 0));
  }
  memset(other.base, 1, other.bytes);
  assert_int_equal(tu_array_alloc(&mssim, NDF_FLOAT64, 1, bsh), 0);
  assert_int_equal(tu_array_alloc(&full, NDF_FLOAT32, 3, SHAPE), 0);
  assert_int_equal(tu_array_alloc(&res, NDF_FLOAT64, 1, bsh), 0);
  tu_poison(mssim.base, mssim.bytes);
  tu_poison(full.base, full.bytes);
  tu_poison(res.base, res.bytes);
  ndf_ssim_options so;
  ndf_ssim_options_init(&so);
  so.batch_dims = 1;
  const int bad_win[] = {4, 7, -1, 1}; /* even; above the 5x6 images; negative; 1 with the sample covariance */
  for (size_t i = 0; i < sizeof bad_win / sizeof bad_win[0]; i++) {
    so.win_size = bad_win[i];
    expect_einval_untouched(ctx, ndf_structural_similarity(ctx, &a.arr, &b.arr, &mssim.arr, &full.arr, &so),
                            "ndf_structural_similarity|win_size", "ssim bad win_size", &mssim, &full);
  }
  so.win_size = 3;
  so.sigma = -1;
  expect_einval_untouched(ctx, ndf_structural_similarity(ctx, &a.arr, &b.arr, &mssim.arr, &full.arr, &so),
                          "ndf_structural_similarity|sigma", "ssim sigma -1", &mssim, &full);
  so.sigma = 1.5;
  expect_einval_untouched(ctx, ndf_structural_similarity(ctx, &a.arr, &other.arr, &mssim.arr, &full.arr, &so),
                          "ndf_structural_similarity|one shape", "ssim shape mismatch", &mssim, &full);
  expect_einval_untouched(ctx, ndf_structural_similarity(ctx, &a.arr, &b.arr, NULL, NULL, &so),
                          "ndf_structural_similarity|mssim", "ssim without outputs", NULL, NULL);
  ndf_metrics_options mo;
  ndf_metrics_options_init(&mo);
  mo.batch_dims = 1;
  const double bad_pct[] = {0, -5, 100.5, NAN};
  for (size_t i = 0; i < sizeof bad_pct / sizeof bad_pct[0]; i++) {
    mo.percentile = bad_pct[i];
    expect_einval_untouched(ctx, ndf_hausdorff_distance(ctx, &b.arr, &b.arr, &res.arr, &mo),
                            "ndf_hausdorff_distance|percentile", "hausdorff percentile outside (0, 100]", &res, NULL);
  }
  mo.percentile = 95;
  mo.nsampling = 1;
  mo.sampling[0] = -1;
  expect_einval_untouched(ctx, ndf_hausdorff_distance(ctx, &b.arr, &b.arr, &res.arr, &mo),
                          "ndf_hausdorff_distance|sampling", "hausdorff negative sampling", &res, NULL);
  mo.nsampling = 0;
  expect_einval_untouched(ctx, ndf_hausdorff_distance(ctx, &b.arr, &other.arr, &res.arr, &mo),
                          "ndf_hausdorff_distance|one shape", "hausdorff shape mismatch", &res, NULL);
  expect_einval_untouched(ctx, ndf_mean_squared_error(ctx, &a.arr, &other.arr, &res.arr, &mo),
                          "ndf_mean_squared_error|one shape", "mse shape mismatch", &res, NULL);
  mo.batch_dims = 0; /* the result must then have rank 0 */
  expect_einval_untouched(ctx, ndf_mean_squared_error(ctx, &a.arr, &b.arr, &res.arr, &mo),
                          "ndf_mean_squared_error|batch_dims", "mse result rank", &res, NULL);
  mo.batch_dims = 1;
  mo.data_range = -2;
  expect_einval_untouched(ctx, ndf_peak_signal_noise_ratio(ctx, &a.arr, &b.arr, &res.arr, &mo),
                          "ndf_peak_signal_noise_ratio|data_range", "psnr negative data_range", &res, NULL);
  tu_array_free(&a);
  tu_array_free(&b);
  tu_array_free(&other);
  tu_array_free(&mssim);
  tu_array_free(&full);
  tu_array_free(&res);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_null_arguments),
      cmocka_unit_test(test_dtype_and_shape_mismatch),
      cmocka_unit_test(test_unknown_dtype),
      cmocka_unit_test(test_bad_ndim),
      cmocka_unit_test(test_bad_batch_dims),
      cmocka_unit_test(test_overlap),
      cmocka_unit_test(test_negative_output_stride),
      cmocka_unit_test(test_device_mismatch),
      cmocka_unit_test(test_no_element),
      cmocka_unit_test(test_bad_size),
      cmocka_unit_test(test_bad_footprint),
      cmocka_unit_test(test_bad_structure),
      cmocka_unit_test(test_bad_origin),
      cmocka_unit_test(test_composite_origin_both_steps),
      cmocka_unit_test(test_bad_mode),
      cmocka_unit_test(test_bad_cval_for_integers),
      cmocka_unit_test(test_errmsg_cleared_on_success),
      cmocka_unit_test(test_status_names),
      cmocka_unit_test(test_mode_names),
      cmocka_unit_test(test_dtype_names),
      cmocka_unit_test(test_array_helpers),
      cmocka_unit_test(test_context_and_options),
      cmocka_unit_test(test_hostile_descriptors),
      cmocka_unit_test(test_hostile_copy),
      cmocka_unit_test(test_hostile_op_shapes),
      cmocka_unit_test(test_hostile_curves),
      cmocka_unit_test(test_hostile_structures),
      cmocka_unit_test(test_hostile_mask_alias),
      cmocka_unit_test(test_hostile_cpu_threads),
      cmocka_unit_test(test_linear_filter_args),
      cmocka_unit_test(test_intensity_args),
      cmocka_unit_test(test_metrics_args),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
