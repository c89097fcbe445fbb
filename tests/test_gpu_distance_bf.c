/*
 * test_gpu_distance_bf.c -- ndf_distance_transform_bf on the GPU against the
 * CPU backend (itself checked against scipy by test_distance), bit for bit,
 * on fresh random inputs drawn here: ndim 1-4 (and one 8-D case) with 0-2
 * batch axes; every metric (euclidean float64, taxicab and chessboard
 * uint32); no sampling, one value, or one per axis (non-integer: the rounding
 * of every product counts); distances, indices, or both; sparse and dense
 * background, lattices (many ties: scipy's rule, the highest raster index
 * among the nearest boundary points), single background points, masks that
 * are empty (all background) or full (no background: scipy's sentinels);
 * every input dtype (NaN and -0.0 in floats); strided and negative-stride
 * inputs, strided outputs; and the benchmark shape 256^2.
 *
 * Tolerance: none (the GPU adds the squared products in the CPU's order
 * without fused multiply-adds; sqrt is correctly rounded on both sides).
 * Outputs are poisoned first; the bytes between the elements of a strided
 * output must keep the poison.
 *
 * Exits 77 (skipped) when the context has no CUDA device.  Cases:
 * NDF_TEST_CASES (default 120); seed: NDF_TEST_SEED (printed).  Public API only.
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

typedef tu_gpu_state gpu_state;
static int group_setup(void **state) { return tu_gpu_setup(state, 120); }

typedef struct bcase {
  ndf_dtype dt;
  int nd, batch, nsp, mask;
  int64_t shape[NDF_MAX_NDIM];
  ndf_distance_options o;
  int want_dist, want_idx, in_layout, out_layout;
  char desc[512];
} bcase;

static const char *const mask_names[] = {"sparse-bg", "dense-bg", "full", "lattice", "points", "empty", "any"};

static void draw_mask(uint8_t *m, int kind, int64_t n, tu_rng *r) {
  const double p = tu_rng_unif(r);
  for (int64_t i = 0; i < n; i++) {
    switch (kind) {
      case 0: m[i] = !tu_rng_chance(r, 0.02 * p); break;
      case 1: m[i] = !tu_rng_chance(r, 0.5 * p); break;
      case 2: m[i] = 1; break;
      case 3: m[i] = (i % 3) != 0 && (i % 7) != 0; break;
      case 4: m[i] = 1; break;
      case 5: m[i] = 0; break;
      default: m[i] = tu_rng_chance(r, p); break;
    }
  }
  if (kind == 4 && n > 0)
    for (int k = 0; k < 3; k++) m[tu_rng_int(r, 0, n - 1)] = 0;
}

static void set_value(const ndf_array *a, int64_t i, int fg, tu_rng *r) {
  if (a->dtype == NDF_FLOAT32 || a->dtype == NDF_FLOAT64) {
    static const double fgv[] = {1.0, -2.5, 1e-30, NAN, INFINITY};
    tu_set(a, i, fg ? fgv[tu_rng_int(r, 0, 4)] : (tu_rng_chance(r, 0.3) ? -0.0 : 0.0));
  } else {
    tu_set(a, i, fg ? (a->dtype == NDF_INT16 ? -3 : 1) : 0);
  }
}

static void describe(bcase *c) {
  int n = snprintf(c->desc, sizeof c->desc, "bf %s %s %s shape ", ndf_metric_name(c->o.metric),
                   ndf_dtype_name(c->dt), mask_names[c->mask]);
  for (int d = 0; d < c->nd; d++) n += snprintf(c->desc + n, sizeof c->desc - n, "%s%lld", d ? "x" : "", (long long)c->shape[d]);
  n += snprintf(c->desc + n, sizeof c->desc - n, " batch %d sampling", c->batch);
  for (int d = 0; d < c->o.nsampling; d++) n += snprintf(c->desc + n, sizeof c->desc - n, " %g", c->o.sampling[d]);
  snprintf(c->desc + n, sizeof c->desc - n, "%s%s layouts %d/%d", c->want_dist ? " dist" : "", c->want_idx ? " idx" : "",
           c->in_layout, c->out_layout);
}

static void draw_case(bcase *c, tu_rng *r) {
  memset(c, 0, sizeof *c);
  static const ndf_dtype dts[] = {NDF_BOOL, NDF_UINT8, NDF_INT16, NDF_FLOAT32, NDF_FLOAT64};
  c->dt = dts[tu_rng_int(r, 0, 4)];
  c->nsp = (int)tu_rng_int(r, 1, 4);
  c->batch = (int)tu_rng_int(r, 0, 2);
  c->nd = c->nsp + c->batch;
  for (int d = 0; d < c->batch; d++) c->shape[d] = tu_rng_int(r, 1, 3);
  static const int64_t hi[5] = {0, 2000, 90, 20, 9};
  for (int d = 0; d < c->nsp; d++)
    c->shape[c->batch + d] = tu_rng_chance(r, 0.1) ? tu_rng_int(r, 1, 3) : tu_rng_int(r, 1, hi[c->nsp]);
  c->mask = (int)tu_rng_int(r, 0, 6);
  ndf_distance_options_init(&c->o);
  c->o.batch_dims = c->batch;
  static const ndf_metric ms[3] = {NDF_METRIC_EUCLIDEAN, NDF_METRIC_TAXICAB, NDF_METRIC_CHESSBOARD};
  c->o.metric = ms[tu_rng_int(r, 0, 2)];
  if (tu_rng_chance(r, 0.5)) {
    static const double sv[] = {0.7, 1.3, 1.0, 2.0, 0.35, 3.14159, 1.1};
    c->o.nsampling = tu_rng_chance(r, 0.2) ? 1 : c->nsp;
    for (int d = 0; d < c->o.nsampling; d++) c->o.sampling[d] = sv[tu_rng_int(r, 0, 6)];
  }
  const int w = (int)tu_rng_int(r, 0, 3);
  c->want_dist = w != 1;
  c->want_idx = w != 2;
  c->in_layout = tu_rng_chance(r, 0.4) ? TU_LAYOUT_PADDED | (tu_rng_chance(r, 0.5) ? TU_LAYOUT_NEGATIVE : 0) |
                                             (tu_rng_chance(r, 0.3) ? TU_LAYOUT_OFFSET : 0)
                                       : TU_LAYOUT_C;
  c->out_layout = tu_rng_chance(r, 0.3) ? TU_LAYOUT_PADDED : tu_rng_chance(r, 0.2) ? TU_LAYOUT_FORTRAN : TU_LAYOUT_C;
}

static int run_case(ndf_ctx *ctx, bcase *c, tu_rng *r, double *gpu_ms) {
  describe(c);
  int rc = -1;
  tu_array hin, lin, cd = {0}, ci = {0}, gd = {0}, gi = {0};
  tu_dev din = {0}, dd = {0}, di = {0};
  assert_int_equal(tu_array_alloc(&hin, c->dt, c->nd, c->shape), 0);
  const int64_t n = ndf_array_size(&hin.arr);
  uint8_t *m = malloc((size_t)(n ? n : 1));
  draw_mask(m, c->mask, n, r);
  for (int64_t i = 0; i < n; i++) set_value(&hin.arr, i, m[i], r);
  free(m);
  assert_int_equal(tu_array_relayout(&lin, &hin.arr, c->in_layout, r), 0);
  int64_t ish[NDF_MAX_NDIM + 1];
  for (int d = 0; d < c->batch; d++) ish[d] = c->shape[d];
  ish[c->batch] = c->nsp;
  for (int d = c->batch; d < c->nd; d++) ish[d + 1] = c->shape[d];
  const ndf_dtype dout = c->o.metric == NDF_METRIC_EUCLIDEAN ? NDF_FLOAT64 : NDF_UINT32;
  ndf_array dl = hin.arr, il;
  dl.dtype = dout;
  ndf_array_init(&il, NULL, NDF_DEVICE_CPU, NDF_INT32, c->nd + 1, ish);
  if (c->want_dist) {
    assert_int_equal(tu_array_alloc(&cd, dout, c->nd, c->shape), 0);
    assert_int_equal(tu_array_like(&gd, &dl, c->out_layout, r), 0);
  }
  if (c->want_idx) {
    assert_int_equal(tu_array_alloc(&ci, NDF_INT32, c->nd + 1, ish), 0);
    assert_int_equal(tu_array_like(&gi, &il, c->out_layout, r), 0);
  }
  ndf_status s = ndf_distance_transform_bf(ctx, &hin.arr, c->want_dist ? &cd.arr : NULL, c->want_idx ? &ci.arr : NULL,
                                           &c->o);
  if (s != NDF_OK) {
    printf("%s: CPU: %s %s\n", c->desc, ndf_status_name(s), ndf_errmsg(ctx));
    goto done;
  }
  tu_dev_upload(ctx, &din, &lin);
  if (c->want_dist) tu_dev_upload(ctx, &dd, &gd); /* poisoned buffers */
  if (c->want_idx) tu_dev_upload(ctx, &di, &gi);
  double t0 = tu_now_ms();
  s = ndf_distance_transform_bf(ctx, &din.arr, c->want_dist ? &dd.arr : NULL, c->want_idx ? &di.arr : NULL, &c->o);
  if (s == NDF_OK) s = ndf_ctx_synchronize(ctx);
  if (gpu_ms) *gpu_ms = tu_now_ms() - t0;
  if (s != NDF_OK) {
    printf("%s: GPU: %s %s\n", c->desc, ndf_status_name(s), ndf_errmsg(ctx));
    goto done;
  }
  if (c->want_dist && tu_dev_check(ctx, c->desc, "distances", &dd, &gd, &cd.arr)) goto done;
  if (c->want_idx && tu_dev_check(ctx, c->desc, "indices", &di, &gi, &ci.arr)) goto done;
  rc = 0;
done:
  tu_dev_free(ctx, &din);
  if (c->want_dist) tu_dev_free(ctx, &dd);
  if (c->want_idx) tu_dev_free(ctx, &di);
  tu_array_free(&hin);
  tu_array_free(&lin);
  tu_array_free(&cd);
  tu_array_free(&ci);
  tu_array_free(&gd);
  tu_array_free(&gi);
  return rc;
}

static void test_gpu_bf_random(void **state) {
  gpu_state *s = *state;
  tu_rng r;
  tu_rng_seed(&r, s->seed ^ 0xbf);
  int failed = 0;
  for (long k = 0; k < s->ncases && failed < 5; k++) {
    bcase c;
    draw_case(&c, &r);
    if (k % 40 == 39) { /* 8 spatial axes, 2^8 voxels, no batch */
      c.nsp = 8;
      c.batch = 0;
      c.nd = 8;
      c.o.batch_dims = 0;
      c.o.nsampling = 0;
      for (int d = 0; d < 8; d++) c.shape[d] = 2;
    }
    if (run_case(s->ctx, &c, &r, NULL) != 0) failed++;
  }
  if (failed) printf("%d random bf cases failed; seed %llu\n", failed, (unsigned long long)s->seed);
  assert_int_equal(failed, 0);
}

/* The benchmark shape: 256^2 uint8 blobs-like random mask, each metric, distances and indices. */
static void test_gpu_bf_bench_shape(void **state) {
  gpu_state *s = *state;
  tu_rng r;
  tu_rng_seed(&r, s->seed ^ 0xbf2);
  static const ndf_metric ms[3] = {NDF_METRIC_EUCLIDEAN, NDF_METRIC_TAXICAB, NDF_METRIC_CHESSBOARD};
  for (int k = 0; k < 3; k++) {
    bcase c;
    memset(&c, 0, sizeof c);
    c.dt = NDF_UINT8;
    c.nd = c.nsp = 2;
    c.shape[0] = c.shape[1] = 256;
    c.mask = 1;
    ndf_distance_options_init(&c.o);
    c.o.metric = ms[k];
    c.want_dist = c.want_idx = 1;
    double ms_gpu = 0;
    assert_int_equal(run_case(s->ctx, &c, &r, &ms_gpu), 0);
    printf("%s: %.3f ms on the GPU (first call, compile included)\n", c.desc, ms_gpu);
  }
}

int main(void) {
  if (!tu_have_cuda()) return 77; /* ctest: skipped */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gpu_bf_random),
      cmocka_unit_test(test_gpu_bf_bench_shape),
  };
  return cmocka_run_group_tests(tests, group_setup, tu_gpu_teardown);
}
