/*
 * test_cpu_threads.c -- the CPU backend's results do not depend on
 * ndf_ctx_options.cpu_threads.  Every op that splits its work over threads
 * (label, binary_fill_holes, binary_propagation, a masked binary erosion,
 * distance_transform_cdt with indices, median / percentile / rank filters)
 * runs on random inputs with 2, 3 and 5 threads and is compared bit for bit
 * with one thread; a negative thread count is refused.  Correctness against
 * scipy is test_label's, test_binary's, test_distance's and test_rank's.
 * Seed: NDF_TEST_SEED (printed); cases: NDF_TEST_CASES (default 40).
 */
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

static const int kThreads[] = {1, 2, 3, 5};
#define NCTX 4

enum { OP_LABEL, OP_FILL, OP_PROPAGATE, OP_ERODE, OP_CDT, OP_MEDIAN, OP_PERCENTILE, OP_RANK, NOPS };
static const char *kOpName[] = {"label", "fill_holes", "propagation", "erosion", "cdt", "median", "percentile", "rank"};

typedef struct tcase {
  int op, ndim, nb;
  int64_t shape[NDF_MAX_NDIM];
  tu_array in, aux; /* aux: the propagation's / erosion's mask */
  int full;         /* label, cdt: the full 3^n structure (else the cross) */
  int64_t size[NDF_MAX_SPATIAL];
} tcase;

/* The op's outputs (out, and cdt's indices in idx) on ctx. */
static ndf_status run(ndf_ctx *ctx, const tcase *c, tu_array *out, tu_array *idx) {
  const int nsp = c->ndim - c->nb;
  ndf_binary_options bo;
  ndf_binary_options_init(&bo);
  bo.batch_dims = c->nb;
  ndf_rank_options ro;
  ndf_rank_options_init(&ro);
  ro.batch_dims = c->nb;
  ro.nsize = nsp;
  for (int d = 0; d < nsp; d++) ro.size[d] = c->size[d];
  uint8_t st[6561];
  int64_t sshape[NDF_MAX_SPATIAL];
  for (int d = 0; d < nsp; d++) sshape[d] = 3;
  ndf_array sa;
  ndf_array_init(&sa, st, NDF_DEVICE_CPU, NDF_UINT8, nsp, sshape);
  ndf_generate_binary_structure(nsp, c->full ? nsp : 1, &sa);
  switch (c->op) {
    case OP_LABEL: {
      int64_t nf[64];
      return ndf_label(ctx, &c->in.arr, &out->arr, &sa, c->nb, nf);
    }
    case OP_FILL: bo.structure = &sa; return ndf_binary_fill_holes(ctx, &c->in.arr, &out->arr, &bo);
    case OP_PROPAGATE:
      bo.mask = &c->aux.arr;
      bo.border_value = c->full;
      return ndf_binary_propagation(ctx, &c->in.arr, &out->arr, &bo);
    case OP_ERODE:
      bo.mask = &c->aux.arr;
      bo.iterations = 2;
      bo.structure = &sa;
      return ndf_binary_erosion(ctx, &c->in.arr, &out->arr, &bo);
    case OP_CDT: {
      ndf_distance_options o;
      ndf_distance_options_init(&o);
      o.batch_dims = c->nb;
      o.metric = c->full ? NDF_METRIC_CHESSBOARD : NDF_METRIC_TAXICAB;
      return ndf_distance_transform_cdt(ctx, &c->in.arr, &out->arr, &idx->arr, &o);
    }
    case OP_MEDIAN: return ndf_median_filter(ctx, &c->in.arr, &out->arr, &ro);
    case OP_PERCENTILE: return ndf_percentile_filter(ctx, &c->in.arr, &out->arr, 30.0, &ro);
    default: {
      int64_t n = 1;
      for (int d = 0; d < nsp; d++) n *= c->size[d];
      return ndf_rank_filter(ctx, &c->in.arr, &out->arr, n / 3, &ro);
    }
  }
}

static ndf_dtype in_dtype(int op) {
  return op == OP_MEDIAN ? NDF_FLOAT32 : op == OP_PERCENTILE ? NDF_FLOAT64 : NDF_UINT8;
}

static ndf_dtype out_dtype(int op) {
  switch (op) {
    case OP_LABEL: case OP_CDT: return NDF_INT32;
    case OP_MEDIAN: return NDF_FLOAT32;
    case OP_PERCENTILE: return NDF_FLOAT64;
    default: return NDF_UINT8;
  }
}

/* A random case of op: blobs of 0/1 for the binary ops and cdt, values with
 * ties, NaN and -0.0 for the filters; shapes with enough rows for several
 * slabs per thread. */
static void make_case(tu_rng *r, int op, tcase *c) {
  memset(c, 0, sizeof *c);
  c->op = op;
  c->ndim = (int)tu_rng_int(r, 2, 4);
  c->nb = c->ndim > 2 && tu_rng_chance(r, 0.3) ? 1 : 0;
  for (int d = 0; d < c->ndim; d++) c->shape[d] = tu_rng_int(r, d < c->nb ? 2 : 6, c->ndim == 2 ? 90 : 24);
  c->full = (int)tu_rng_int(r, 0, 1);
  for (int d = 0; d < c->ndim - c->nb; d++) c->size[d] = tu_rng_int(r, 1, 5);
  assert_int_equal(tu_array_alloc(&c->in, in_dtype(op), c->ndim, c->shape), 0);
  assert_int_equal(tu_array_alloc(&c->aux, NDF_UINT8, c->ndim, c->shape), 0);
  const int64_t n = ndf_array_size(&c->in.arr);
  const double p = tu_rng_unif(r), seeds = op == OP_PROPAGATE ? 0.01 : p;
  for (int64_t i = 0; i < n; i++) {
    if (op == OP_MEDIAN || op == OP_PERCENTILE) {
      double v = (double)tu_rng_int(r, -3, 3);
      if (tu_rng_chance(r, 0.02)) v = NAN;
      else if (v == 0 && tu_rng_chance(r, 0.5)) v = -0.0;
      tu_set(&c->in.arr, i, v);
    } else if (op == OP_RANK) {
      tu_set(&c->in.arr, i, (double)tu_rng_int(r, 0, 255));
    } else {
      tu_set(&c->in.arr, i, tu_rng_chance(r, seeds) ? 1 : 0);
    }
    tu_set(&c->aux.arr, i, tu_rng_chance(r, 0.8) ? 1 : 0);
  }
}

static void test_thread_counts(void **state) {
  (void)state;
  const uint64_t seed = tu_seed("NDF_TEST_SEED");
  const long ncases = tu_env_long("NDF_TEST_CASES", 40);
  tu_rng r;
  tu_rng_seed(&r, seed);
  ndf_ctx *ctx[NCTX];
  for (int t = 0; t < NCTX; t++) {
    ndf_ctx_options o;
    ndf_ctx_options_init(&o);
    o.backend = NDF_BACKEND_CPU;
    o.cache_disable = 1;
    o.cpu_threads = kThreads[t];
    assert_int_equal(ndf_ctx_create(&ctx[t], &o), NDF_OK);
  }
  int failed = 0;
  for (long k = 0; k < ncases * NOPS; k++) {
    tcase c;
    make_case(&r, (int)(k % NOPS), &c);
    int64_t ishape[NDF_MAX_NDIM + 1];
    for (int d = 0; d < c.nb; d++) ishape[d] = c.shape[d];
    ishape[c.nb] = c.ndim - c.nb;
    for (int d = c.nb; d < c.ndim; d++) ishape[d + 1] = c.shape[d];
    tu_array ref, refi, got, goti;
    assert_int_equal(tu_array_alloc(&ref, out_dtype(c.op), c.ndim, c.shape), 0);
    assert_int_equal(tu_array_alloc(&got, out_dtype(c.op), c.ndim, c.shape), 0);
    assert_int_equal(tu_array_alloc(&refi, NDF_INT32, c.ndim + 1, ishape), 0);
    assert_int_equal(tu_array_alloc(&goti, NDF_INT32, c.ndim + 1, ishape), 0);
    ndf_status s = run(ctx[0], &c, &ref, &refi);
    if (s != NDF_OK) fprintf(stderr, "case %ld (%s): %s\n", k, kOpName[c.op], ndf_errmsg(ctx[0]));
    assert_int_equal(s, NDF_OK);
    for (int t = 1; t < NCTX; t++) {
      tu_poison(got.base, got.bytes);
      tu_poison(goti.base, goti.bytes);
      assert_int_equal(run(ctx[t], &c, &got, &goti), NDF_OK);
      char msg[1024];
      int64_t bad = tu_compare(&ref.arr, &got.arr, msg, sizeof msg);
      if (!bad && c.op == OP_CDT) bad = tu_compare(&refi.arr, &goti.arr, msg, sizeof msg);
      if (bad) {
        fprintf(stderr, "case %ld (%s, %d threads, ndim %d, batch %d): %lld elements differ from 1 thread\n%s\n", k,
                kOpName[c.op], kThreads[t], c.ndim, c.nb, (long long)bad, msg);
        failed++;
      }
    }
    tu_array_free(&ref);
    tu_array_free(&got);
    tu_array_free(&refi);
    tu_array_free(&goti);
    tu_array_free(&c.in);
    tu_array_free(&c.aux);
  }
  for (int t = 0; t < NCTX; t++) ndf_ctx_destroy(ctx[t]);
  if (failed) fprintf(stderr, "NDF_TEST_SEED=%llu repeats this run\n", (unsigned long long)seed);
  assert_int_equal(failed, 0);
}

static void test_negative_threads(void **state) {
  (void)state;
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  o.backend = NDF_BACKEND_CPU;
  o.cpu_threads = -1;
  ndf_ctx *ctx = (ndf_ctx *)&o;
  assert_int_equal(ndf_ctx_create(&ctx, &o), NDF_EINVAL);
  assert_null(ctx);
  assert_non_null(strstr(ndf_last_error(), "cpu_threads"));
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_thread_counts), cmocka_unit_test(test_negative_threads)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
