/*
 * test_faults.c -- host allocation failures.  Every allocation the runtime
 * makes (malloc, calloc, realloc, strdup: the linker's --wrap sends them
 * here) can be made to fail; for one representative call of every family,
 * the n-th allocation of the call fails, for n = 1, 2, ... up to the number
 * the call makes.  Each failing call must return a status (or absorb the
 * failure and give the right result), leave its outputs as they were
 * (poisoned before the call), and leak nothing (LeakSanitizer, in the
 * sanitizer build); the same call on the same context then succeeds with
 * the result of the first run.  White box: linked with the runtime's
 * static copy, so that its allocations are the ones wrapped.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ndforge.h"
#include "testutil.h"

/* ---- the injectable allocator ------------------------------------------------------------ */

static atomic_long fault_calls; /* allocations counted since the last arm */
static atomic_long fault_at;    /* fail the allocation with this number (1-based); 0: never */
static atomic_int fault_on;     /* counting (and failing) only inside an armed call */
static atomic_long fault_hits;  /* failures injected since the last arm */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);

static int fault_now(void) {
  if (!atomic_load(&fault_on)) return 0;
  long k = atomic_fetch_add(&fault_calls, 1) + 1;
  if (k != atomic_load(&fault_at)) return 0;
  atomic_fetch_add(&fault_hits, 1);
  return 1;
}
void *__wrap_malloc(size_t n) { return fault_now() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t m) { return fault_now() ? NULL : __real_calloc(n, m); }
void *__wrap_realloc(void *p, size_t n) { return fault_now() ? NULL : __real_realloc(p, n); }
char *__wrap_strdup(const char *s) { return fault_now() ? NULL : __real_strdup(s); }

static void arm(long at) {
  atomic_store(&fault_calls, 0);
  atomic_store(&fault_hits, 0);
  atomic_store(&fault_at, at);
  atomic_store(&fault_on, 1);
}
static void disarm(void) { atomic_store(&fault_on, 0); }

/* ---- the calls ------------------------------------------------------------------------------ */

#define MAX_OUT 3
typedef struct fcase {
  const char *name;
  ndf_ctx *ctx;
  tu_array in, aux, aux2;        /* the input and what a call reads besides (mask, directions, thresholds) */
  tu_array out[MAX_OUT];         /* outputs, poisoned before every call */
  int nout;
  int64_t counts[8];             /* label's num_features (an output too) */
  ndf_status (*call)(struct fcase *c);
} fcase;

static const int64_t SH3[3] = {5, 6, 7};
static const int64_t SH2[2] = {9, 11};

static void fill(tu_array *t, uint64_t seed, int binary) {
  tu_rng r;
  tu_rng_seed(&r, seed);
  for (int64_t i = 0; i < ndf_array_size(&t->arr); i++)
    tu_set(&t->arr, i, binary ? (double)tu_rng_chance(&r, 0.6) : (double)tu_rng_int(&r, 0, 200));
}

static ndf_status c_grey_erosion(fcase *c) {
  ndf_grey_options o;
  ndf_grey_options_init(&o);
  o.nsize = 1;
  o.size[0] = 3;
  return ndf_grey_erosion(c->ctx, &c->in.arr, &c->out[0].arr, &o);
}
static ndf_status c_grey_opening(fcase *c) { /* a footprint (tap table), two steps */
  uint8_t fp[9] = {0, 1, 0, 1, 1, 1, 0, 1, 1};
  int64_t fs[2] = {3, 3};
  ndf_array f;
  ndf_array_init(&f, fp, NDF_DEVICE_CPU, NDF_UINT8, 2, fs);
  ndf_grey_options o;
  ndf_grey_options_init(&o);
  o.footprint = &f;
  o.batch_dims = 1;
  return ndf_grey_opening(c->ctx, &c->in.arr, &c->out[0].arr, &o);
}
static ndf_status c_laplace(fcase *c) {
  ndf_grey_options o;
  ndf_grey_options_init(&o);
  o.nsize = 1;
  o.size[0] = 3;
  o.mode = NDF_MODE_CONSTANT;
  return ndf_morphological_laplace(c->ctx, &c->in.arr, &c->out[0].arr, &o);
}
static ndf_status c_reconstruction(fcase *c) { /* seed in, mask aux (>= seed), a batch axis, an offset */
  uint8_t fp[6] = {1, 1, 0, 1, 1, 1};
  int64_t fs[2] = {2, 3};
  ndf_array f;
  ndf_array_init(&f, fp, NDF_DEVICE_CPU, NDF_UINT8, 2, fs);
  ndf_reconstruction_options o;
  ndf_reconstruction_options_init(&o);
  o.footprint = &f;
  o.noffset = 2;
  o.offset[0] = 1;
  o.offset[1] = 1;
  o.batch_dims = 1;
  return ndf_reconstruction(c->ctx, &c->in.arr, &c->aux.arr, &c->out[0].arr, &o);
}
static ndf_status c_median(fcase *c) {
  ndf_rank_options o;
  ndf_rank_options_init(&o);
  o.nsize = 1;
  o.size[0] = 3;
  return ndf_median_filter(c->ctx, &c->in.arr, &c->out[0].arr, &o);
}
static ndf_status c_percentile(fcase *c) {
  uint8_t fp[9] = {1, 1, 0, 1, 1, 1, 0, 1, 1};
  int64_t fs[2] = {3, 3};
  ndf_array f;
  ndf_array_init(&f, fp, NDF_DEVICE_CPU, NDF_UINT8, 2, fs);
  ndf_rank_options o;
  ndf_rank_options_init(&o);
  o.footprint = &f;
  o.batch_dims = 1;
  return ndf_percentile_filter(c->ctx, &c->in.arr, &c->out[0].arr, 30.0, &o);
}
static ndf_status c_binary_erosion(fcase *c) {
  ndf_binary_options o;
  ndf_binary_options_init(&o);
  o.iterations = 2;
  o.mask = &c->aux.arr;
  return ndf_binary_erosion(c->ctx, &c->in.arr, &c->out[0].arr, &o);
}
static ndf_status c_binary_closing(fcase *c) {
  ndf_binary_options o;
  ndf_binary_options_init(&o);
  o.iterations = 0; /* until nothing changes */
  return ndf_binary_closing(c->ctx, &c->in.arr, &c->out[0].arr, &o);
}
static ndf_status c_propagation(fcase *c) {
  ndf_binary_options o;
  ndf_binary_options_init(&o);
  o.mask = &c->aux.arr;
  return ndf_binary_propagation(c->ctx, &c->in.arr, &c->out[0].arr, &o);
}
static ndf_status c_fill_holes(fcase *c) {
  ndf_binary_options o;
  ndf_binary_options_init(&o);
  return ndf_binary_fill_holes(c->ctx, &c->in.arr, &c->out[0].arr, &o);
}
static ndf_status c_hit_or_miss(fcase *c) {
  ndf_hit_or_miss_options o;
  ndf_hit_or_miss_options_init(&o);
  return ndf_binary_hit_or_miss(c->ctx, &c->in.arr, &c->out[0].arr, &o);
}
static ndf_status c_label(fcase *c) {
  return ndf_label(c->ctx, &c->in.arr, &c->out[0].arr, NULL, 1, c->counts);
}
static ndf_status c_iterate(fcase *c) {
  return ndf_iterate_structure(&c->in.arr, 3, &c->out[0].arr, 0, NULL, NULL);
}
static ndf_status c_edt(fcase *c) {
  ndf_distance_options o;
  ndf_distance_options_init(&o);
  return ndf_distance_transform_edt(c->ctx, &c->in.arr, &c->out[0].arr, &c->out[1].arr, &o);
}
static ndf_status c_cdt(fcase *c) {
  ndf_distance_options o;
  ndf_distance_options_init(&o);
  o.metric = NDF_METRIC_TAXICAB;
  return ndf_distance_transform_cdt(c->ctx, &c->in.arr, &c->out[0].arr, &c->out[1].arr, &o);
}
static ndf_status c_bf(fcase *c) {
  ndf_distance_options o;
  ndf_distance_options_init(&o);
  return ndf_distance_transform_bf(c->ctx, &c->in.arr, &c->out[0].arr, &c->out[1].arr, &o);
}
static ndf_status c_ecc(fcase *c) {
  ndf_ecc_options o;
  ndf_ecc_options_init(&o);
  o.nthresholds = 16;
  o.batch_dims = 1;
  o.construction = NDF_ECC_T;
  return ndf_euler_characteristic_curve(c->ctx, &c->in.arr, &c->out[0].arr, &o);
}
static ndf_status c_soft_ecc(fcase *c) {
  ndf_soft_ecc_options o;
  ndf_soft_ecc_options_init(&o);
  o.batch_dims = 1;
  return ndf_soft_ecc_forward(c->ctx, &c->in.arr, &c->aux.arr, &c->out[0].arr, &o);
}
static ndf_status c_ect(fcase *c) {
  ndf_ect_options o;
  ndf_ect_options_init(&o);
  o.nthresholds = 12;
  o.weighted = 1;
  return ndf_euler_characteristic_transform(c->ctx, &c->in.arr, &c->aux.arr, &c->out[0].arr, &o);
}
static ndf_status c_soft_ect(fcase *c) {
  ndf_soft_ect_options o;
  ndf_soft_ect_options_init(&o);
  return ndf_soft_ect_forward(c->ctx, &c->in.arr, &c->aux.arr, &c->aux2.arr, &c->out[0].arr, &o);
}
static ndf_status c_sinkhorn(fcase *c) { /* create (it owns buffers), solve, destroy */
  ndf_sinkhorn_options o;
  ndf_sinkhorn_options_init(&o);
  o.n = 2;
  o.d = 12;
  o.cost_kind = NDF_OT_COST_GRID_LP;
  o.grid_ndim = 2;
  o.grid_shape[0] = 3;
  o.grid_shape[1] = 4;
  o.epsilon = 0.5;
  o.max_iter = 20;
  ndf_sinkhorn *s = NULL;
  ndf_status st = ndf_sinkhorn_create(c->ctx, &s, &o);
  if (st != NDF_OK) return st;
  ndf_sinkhorn_result res = {&c->out[0].arr, &c->out[1].arr, &c->out[2].arr, NULL, NULL, NULL};
  st = ndf_sinkhorn_solve(s, &c->in.arr, &c->aux.arr, &res);
  ndf_sinkhorn_destroy(s);
  return st;
}

/* ---- the sweep ------------------------------------------------------------------------------ */

static void poison_outputs(fcase *c) {
  for (int i = 0; i < c->nout; i++) tu_poison(c->out[i].base, c->out[i].bytes);
  tu_poison(c->counts, sizeof c->counts);
}

/* 1 when every output still holds its poison. */
static int outputs_untouched(const fcase *c) {
  for (int i = 0; i < c->nout; i++)
    if (tu_poison_check(c->out[i].base, c->out[i].bytes) >= 0) return 0;
  return tu_poison_check(c->counts, sizeof c->counts) < 0;
}

/* Copies the outputs (and counts) into a malloc'd snapshot. */
static void *snapshot(const fcase *c) {
  size_t total = sizeof c->counts;
  for (int i = 0; i < c->nout; i++) total += c->out[i].bytes;
  char *s = malloc(total), *p = s;
  assert_non_null(s);
  for (int i = 0; i < c->nout; i++) {
    memcpy(p, c->out[i].base, c->out[i].bytes);
    p += c->out[i].bytes;
  }
  memcpy(p, c->counts, sizeof c->counts);
  return s;
}

static int same_as(const fcase *c, const void *snap) {
  const char *p = snap;
  for (int i = 0; i < c->nout; i++) {
    if (memcmp(p, c->out[i].base, c->out[i].bytes) != 0) return 0;
    p += c->out[i].bytes;
  }
  return memcmp(p, c->counts, sizeof c->counts) == 0;
}

static long total_faults;

static void sweep(fcase *c) {
  /* the reference run, counting the allocations of the call */
  poison_outputs(c);
  arm(0);
  ndf_status s = c->call(c);
  disarm();
  long calls = atomic_load(&fault_calls);
  if (s != NDF_OK) printf("%s: the reference call failed: %s\n", c->name, c->ctx ? ndf_errmsg(c->ctx) : ndf_last_error());
  assert_int_equal(s, NDF_OK);
  void *ref = snapshot(c);
  int absorbed = 0;
  for (long n = 1; n <= calls; n++) {
    poison_outputs(c);
    arm(n);
    s = c->call(c);
    disarm();
    if (atomic_load(&fault_hits) == 0) continue; /* fewer allocations this time (threads) */
    total_faults++;
    if (s == NDF_OK) { /* absorbed (a fallback): the result must be right */
      absorbed++;
      if (!same_as(c, ref)) printf("%s: allocation %ld of %ld failed, NDF_OK, wrong result\n", c->name, n, calls);
      assert_true(same_as(c, ref));
    } else {
      if (!outputs_untouched(c))
        printf("%s: allocation %ld of %ld failed (%s: %s) and an output was written\n", c->name, n, calls,
               ndf_status_name(s), c->ctx ? ndf_errmsg(c->ctx) : ndf_last_error());
      assert_true(outputs_untouched(c));
    }
    /* the context is still usable */
    poison_outputs(c);
    s = c->call(c);
    if (s != NDF_OK || !same_as(c, ref))
      printf("%s: after failing allocation %ld: %s %s\n", c->name, n, ndf_status_name(s),
             c->ctx ? ndf_errmsg(c->ctx) : ndf_last_error());
    assert_int_equal(s, NDF_OK);
    assert_true(same_as(c, ref));
  }
  printf("%-22s %3ld allocations, each failed once (%d absorbed)\n", c->name, calls, absorbed);
  free(ref);
}

static void out_alloc(fcase *c, ndf_dtype dt, int ndim, const int64_t *shape) {
  assert_int_equal(tu_array_alloc(&c->out[c->nout++], dt, ndim, shape), 0);
}

static void case_free(fcase *c) {
  tu_array_free(&c->in);
  tu_array_free(&c->aux);
  tu_array_free(&c->aux2);
  for (int i = 0; i < c->nout; i++) tu_array_free(&c->out[i]);
}

/* A case on a float32 (or binary uint8) 3-D input whose output has the input's shape and out_dt. */
static void run_filter(ndf_ctx *ctx, const char *name, ndf_status (*call)(fcase *), ndf_dtype in_dt, ndf_dtype out_dt,
                       int binary, int with_mask) {
  fcase c;
  memset(&c, 0, sizeof c);
  c.name = name;
  c.ctx = ctx;
  c.call = call;
  assert_int_equal(tu_array_alloc(&c.in, in_dt, 3, SH3), 0);
  fill(&c.in, 7, binary);
  if (with_mask) {
    assert_int_equal(tu_array_alloc(&c.aux, NDF_UINT8, 3, SH3), 0);
    fill(&c.aux, 11, 1);
  }
  out_alloc(&c, out_dt, 3, SH3);
  sweep(&c);
  case_free(&c);
}

static void test_filters(void **state) {
  ndf_ctx *ctx = *state;
  run_filter(ctx, "grey_erosion", c_grey_erosion, NDF_FLOAT32, NDF_FLOAT32, 0, 0);
  run_filter(ctx, "grey_opening", c_grey_opening, NDF_FLOAT32, NDF_FLOAT32, 0, 0);
  run_filter(ctx, "morphological_laplace", c_laplace, NDF_INT16, NDF_INT16, 0, 0);
  run_filter(ctx, "median_filter", c_median, NDF_FLOAT32, NDF_FLOAT32, 0, 0);
  run_filter(ctx, "percentile_filter", c_percentile, NDF_UINT8, NDF_UINT8, 0, 0);
  /* reconstruction: in each 6x7 image a corridor that climbs from a marker at the bottom-left
   * and turns back against the raster order, so that the CPU backend needs its FIFO */
  fcase c;
  memset(&c, 0, sizeof c);
  c.name = "reconstruction";
  c.ctx = ctx;
  c.call = c_reconstruction;
  assert_int_equal(tu_array_alloc(&c.in, NDF_INT16, 3, SH3), 0);
  assert_int_equal(tu_array_alloc(&c.aux, NDF_INT16, 3, SH3), 0);
  for (int64_t i = 0; i < ndf_array_size(&c.in.arr); i++) {
    const int64_t y = i / 7 % 6, x = i % 7;
    const int open = y % 2 == 1 || (y % 4 == 0 && x == 0) || (y % 4 == 2 && x == 6);
    tu_set(&c.aux.arr, i, open ? 100 : 0);
    tu_set(&c.in.arr, i, y == 5 && x == 0 ? 100 : 0);
  }
  out_alloc(&c, NDF_FLOAT64, 3, SH3);
  sweep(&c);
  case_free(&c);
}

static void test_binary(void **state) {
  ndf_ctx *ctx = *state;
  run_filter(ctx, "binary_erosion", c_binary_erosion, NDF_UINT8, NDF_BOOL, 1, 1);
  run_filter(ctx, "binary_closing", c_binary_closing, NDF_UINT8, NDF_UINT8, 1, 0);
  run_filter(ctx, "binary_propagation", c_propagation, NDF_UINT8, NDF_BOOL, 1, 1);
  run_filter(ctx, "binary_fill_holes", c_fill_holes, NDF_UINT8, NDF_BOOL, 1, 0);
  run_filter(ctx, "binary_hit_or_miss", c_hit_or_miss, NDF_UINT8, NDF_BOOL, 1, 0);
  run_filter(ctx, "label", c_label, NDF_UINT8, NDF_INT32, 1, 0);
  /* iterate_structure: no context (it makes its own) */
  fcase c;
  memset(&c, 0, sizeof c);
  c.name = "iterate_structure";
  c.call = c_iterate;
  int64_t s3[2] = {3, 3}, s7[2] = {7, 7};
  assert_int_equal(tu_array_alloc(&c.in, NDF_UINT8, 2, s3), 0);
  const double cross[9] = {0, 1, 0, 1, 1, 1, 0, 1, 0};
  for (int i = 0; i < 9; i++) tu_set(&c.in.arr, i, cross[i]);
  out_alloc(&c, NDF_BOOL, 2, s7);
  sweep(&c);
  case_free(&c);
}

static void test_distance(void **state) {
  ndf_ctx *ctx = *state;
  const struct { const char *name; ndf_status (*call)(fcase *); ndf_dtype dt; } d[] = {
      {"distance_transform_edt", c_edt, NDF_FLOAT64},
      {"distance_transform_cdt", c_cdt, NDF_INT32},
      {"distance_transform_bf", c_bf, NDF_FLOAT64},
  };
  const int64_t ish[4] = {3, 5, 6, 7};
  for (size_t k = 0; k < sizeof d / sizeof d[0]; k++) {
    fcase c;
    memset(&c, 0, sizeof c);
    c.name = d[k].name;
    c.ctx = ctx;
    c.call = d[k].call;
    assert_int_equal(tu_array_alloc(&c.in, NDF_UINT8, 3, SH3), 0);
    fill(&c.in, 13, 1);
    out_alloc(&c, d[k].dt, 3, SH3);
    out_alloc(&c, NDF_INT32, 4, ish);
    sweep(&c);
    case_free(&c);
  }
}

static void test_curves(void **state) {
  ndf_ctx *ctx = *state;
  const int64_t osh[2] = {5, 16};
  fcase c;
  memset(&c, 0, sizeof c);
  c.name = "ecc";
  c.ctx = ctx;
  c.call = c_ecc;
  assert_int_equal(tu_array_alloc(&c.in, NDF_FLOAT32, 3, SH3), 0);
  fill(&c.in, 17, 0);
  out_alloc(&c, NDF_INT64, 2, osh);
  sweep(&c);
  /* soft ECC: the thresholds are an input */
  c.name = "soft_ecc_forward";
  c.call = c_soft_ecc;
  const int64_t tsh[1] = {16};
  assert_int_equal(tu_array_alloc(&c.aux, NDF_FLOAT64, 1, tsh), 0);
  for (int k = 0; k < 16; k++) tu_set(&c.aux.arr, k, 12.5 * k);
  tu_array_free(&c.out[0]);
  c.nout = 0;
  out_alloc(&c, NDF_FLOAT64, 2, osh);
  sweep(&c);
  case_free(&c);
  /* ECT and soft ECT on a 2-D image: 3 directions */
  memset(&c, 0, sizeof c);
  c.name = "ect (weighted)";
  c.ctx = ctx;
  c.call = c_ect;
  assert_int_equal(tu_array_alloc(&c.in, NDF_FLOAT64, 2, SH2), 0);
  fill(&c.in, 19, 0);
  const int64_t dsh[2] = {3, 2}, esh[2] = {3, 12}, t12[1] = {12};
  assert_int_equal(tu_array_alloc(&c.aux, NDF_FLOAT64, 2, dsh), 0);
  const double dirs[6] = {1, 0, 0, 1, 0.6, 0.8};
  for (int i = 0; i < 6; i++) tu_set(&c.aux.arr, i, dirs[i]);
  assert_int_equal(tu_array_alloc(&c.aux2, NDF_FLOAT64, 1, t12), 0);
  for (int k = 0; k < 12; k++) tu_set(&c.aux2.arr, k, -6.0 + k);
  out_alloc(&c, NDF_FLOAT64, 2, esh);
  sweep(&c);
  c.name = "soft_ect_forward";
  c.call = c_soft_ect;
  sweep(&c);
  case_free(&c);
}

static void test_sinkhorn(void **state) {
  ndf_ctx *ctx = *state;
  fcase c;
  memset(&c, 0, sizeof c);
  c.name = "sinkhorn";
  c.ctx = ctx;
  c.call = c_sinkhorn;
  const int64_t hsh[2] = {2, 12}, nsh[1] = {2};
  assert_int_equal(tu_array_alloc(&c.in, NDF_FLOAT64, 2, hsh), 0);
  assert_int_equal(tu_array_alloc(&c.aux, NDF_FLOAT64, 2, hsh), 0);
  for (int i = 0; i < 24; i++) {
    tu_set(&c.in.arr, i, 1.0 / 12);
    tu_set(&c.aux.arr, i, (i % 12 + 1) / 78.0);
  }
  out_alloc(&c, NDF_FLOAT64, 1, nsh);
  out_alloc(&c, NDF_FLOAT64, 1, nsh);
  out_alloc(&c, NDF_FLOAT64, 2, hsh);
  sweep(&c);
  case_free(&c);
}

/* A context that cannot be made returns ENOMEM and no context. */
static void test_context(void **state) {
  (void)state;
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  o.backend = NDF_BACKEND_CPU;
  o.cache_disable = 1;
  for (long n = 1; n <= 4; n++) {
    ndf_ctx *ctx = (ndf_ctx *)&o;
    arm(n);
    ndf_status s = ndf_ctx_create(&ctx, &o);
    disarm();
    if (atomic_load(&fault_hits) == 0) {
      assert_int_equal(s, NDF_OK);
      ndf_ctx_destroy(ctx);
      break;
    }
    total_faults++;
    assert_int_equal(s, NDF_ENOMEM);
    assert_null(ctx);
  }
}

static void test_summary(void **state) {
  (void)state;
  printf("%ld injected allocation failures\n", total_faults);
  assert_true(total_faults > 0);
}

static int group_setup(void **state) {
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  o.backend = NDF_BACKEND_CPU;
  o.cache_disable = 1;
  o.cpu_threads = 2;
  ndf_ctx *ctx = NULL;
  if (ndf_ctx_create(&ctx, &o) != NDF_OK) return -1;
  *state = ctx;
  return 0;
}

static int group_teardown(void **state) {
  ndf_ctx_destroy(*state);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_context),   cmocka_unit_test(test_filters), cmocka_unit_test(test_binary),
      cmocka_unit_test(test_distance),  cmocka_unit_test(test_curves),  cmocka_unit_test(test_sinkhorn),
      cmocka_unit_test(test_summary),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
