/*
 * test_gpu_ect.c -- the Euler characteristic transform on the GPU against the
 * CPU backend (itself checked against a brute-force cubical complex and the
 * ECC by test_ect), on fresh random inputs drawn here: uint8, uint16,
 * float32, float64; 2-D and 3-D with 0-2 batch axes; V and T constructions;
 * binary (int64 counts) and weighted (float64); 1, a few, or 64 directions
 * (random, axis-aligned: whole rows of tied heights, the zero vector);
 * thresholds as values (unsorted, repeated, +-inf), evenly spaced over the
 * default [-R, R] or over a range, few and many (past the shared-memory
 * histogram); spacing and normalize; sparse, dense, full and empty shapes;
 * strided and negative-stride inputs, strided outputs, strided directions.
 *
 * Binary ECT: bit for bit.  Weighted ECT: to a tolerance (the GPU sums the
 * same per-voxel weights with float64 atomics, in another order).  GPU
 * outputs are poisoned first; the bytes between the elements of a strided
 * output must keep the poison, and a NaN (binary) or infinite (weighted)
 * input must leave the output untouched.
 *
 * Soft ECT (forward, dL/dinput, dL/du, dL/dt): to a tolerance scaled by the
 * sum of |terms| (1e-12; 2e-6 for the float sigmoid, soft_ect.fast=on),
 * lambda 0.3 to 25, both grad_input dtypes, thresholds past the shared table.
 *
 * Exits 77 (skipped) when the context has no CUDA device.  Cases:
 * NDF_TEST_CASES (default 60); seed: NDF_TEST_SEED (printed).  Public API only.
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

/* Sets tunable name on ctx (value NULL: its default), asserting the API takes it. */
static void tune(ndf_ctx *ctx, const char *name, const char *value) {
  const ndf_status st = ndf_ctx_set_tunable(ctx, name, value);
  if (st != NDF_OK) printf("%s\n", ndf_errmsg(ctx));
  assert_int_equal(st, NDF_OK);
}
static int group_setup(void **state) { return tu_gpu_setup(state, 60); }

typedef struct tcase {
  ndf_dtype dt;
  int nd, batch, nsp;
  int64_t shape[NDF_MAX_NDIM];
  int vkind;   /* 0 0/1 mask, 1 small integers with zeros, 2 continuous with zeros, 3 all zero, 4 all non-zero */
  int tkind;   /* 0 values, 1 spaced over [-R, R], 2 spaced over a range */
  int dkind;   /* 0 random, 1 axis-aligned and zero vectors mixed in */
  int64_t T, m;
  int weighted, normalize, spacing;
  ndf_ecc_construction cons;
  int in_layout, out_layout, dir_layout;
  char desc[320];
} tcase;

static void fill_values(const ndf_array *a, int vkind, tu_rng *r) {
  const int64_t n = ndf_array_size(a);
  const double dens = tu_rng_unif(r);
  const double scale = 0.1 + tu_rng_unif(r) * 50;
  for (int64_t i = 0; i < n; i++) {
    double v = 0;
    const int on = vkind == 4 || (vkind != 3 && tu_rng_unif(r) < dens);
    if (on) {
      if (vkind == 0) v = 1;
      else if (vkind == 2 && tu_is_float(a->dtype)) {
        v = tu_rng_normal(r) * scale;
        if (v == 0) v = 1;
      } else v = (double)tu_rng_int(r, 1, a->dtype == NDF_UINT8 ? 255 : 9);
      if (vkind == 4 && !tu_is_float(a->dtype)) v = (double)tu_rng_int(r, 1, 5);
    }
    if (a->dtype == NDF_FLOAT32) v = (float)v;
    tu_set(a, i, v);
  }
}

static void draw_case(tcase *c, tu_rng *r) {
  memset(c, 0, sizeof *c);
  static const ndf_dtype dts[4] = {NDF_FLOAT32, NDF_FLOAT64, NDF_UINT8, NDF_UINT16};
  c->dt = dts[tu_rng_int(r, 0, 3)];
  c->nsp = (int)tu_rng_int(r, 2, 3);
  c->batch = (int)tu_rng_int(r, 0, 2);
  c->nd = c->nsp + c->batch;
  for (int d = 0; d < c->batch; d++) c->shape[d] = tu_rng_int(r, 1, 3);
  const int64_t h = c->nsp == 2 ? 70 : 18;
  for (int d = 0; d < c->nsp; d++)
    c->shape[c->batch + d] = tu_rng_chance(r, 0.1) ? tu_rng_int(r, 1, 3) : tu_rng_int(r, 1, h);
  const double vk = tu_rng_unif(r);
  c->vkind = vk < 0.35 ? 0 : vk < 0.6 ? 1 : vk < 0.9 ? 2 : vk < 0.95 ? 3 : 4;
  c->tkind = (int)tu_rng_int(r, 0, 2);
  c->dkind = tu_rng_chance(r, 0.3);
  const double mk = tu_rng_unif(r);
  c->m = mk < 0.2 ? 1 : mk < 0.4 ? 64 : tu_rng_int(r, 2, 20);
  c->T = tu_rng_chance(r, 0.08) ? tu_rng_int(r, 2400, 4000) : tu_rng_int(r, c->tkind ? 2 : 1, 200);
  c->weighted = tu_rng_chance(r, 0.5);
  c->normalize = tu_rng_chance(r, 0.3);
  c->spacing = tu_rng_chance(r, 0.3);
  c->cons = tu_rng_chance(r, 0.5) ? NDF_ECC_V : NDF_ECC_T;
  c->in_layout = tu_rng_chance(r, 0.4) ? TU_LAYOUT_PADDED | (tu_rng_chance(r, 0.5) ? TU_LAYOUT_NEGATIVE : 0) |
                                             (tu_rng_chance(r, 0.3) ? TU_LAYOUT_OFFSET : 0)
                                       : TU_LAYOUT_C;
  c->out_layout = tu_rng_chance(r, 0.3) ? TU_LAYOUT_PADDED : tu_rng_chance(r, 0.2) ? TU_LAYOUT_FORTRAN : TU_LAYOUT_C;
  c->dir_layout = tu_rng_chance(r, 0.3) ? TU_LAYOUT_FORTRAN : TU_LAYOUT_C;
}

static void describe(tcase *c, const char *what) {
  char sh[128];
  size_t u = 0;
  sh[0] = 0;
  for (int d = 0; d < c->nd; d++) u += (size_t)snprintf(sh + u, sizeof sh - u, "%s%lld", d ? "x" : "", (long long)c->shape[d]);
  snprintf(c->desc, sizeof c->desc,
           "%s %s %s %s batch=%d %s m=%lld dkind=%d vkind=%d tkind=%d T=%lld spacing=%d normalize=%d layouts %d/%d/%d",
           what, c->weighted ? "weighted" : "binary", ndf_dtype_name(c->dt), sh, c->batch,
           ndf_ecc_construction_name(c->cons), (long long)c->m, c->dkind, c->vkind, c->tkind, (long long)c->T, c->spacing,
           c->normalize, c->in_layout, c->out_layout, c->dir_layout);
}

/* Weighted: |cpu - gpu| <= tol, tol from the largest |weight| and the cell count (float sums reordered). */
static int64_t compare_weighted(const ndf_array *e, const ndf_array *g, double tol, char *msg, size_t len) {
  int64_t bad = 0;
  const int64_t n = ndf_array_size(e);
  msg[0] = 0;
  for (int64_t i = 0; i < n; i++) {
    const double a = tu_get(e, i), b = tu_get(g, i);
    if (!(fabs(a - b) <= tol)) {
      if (bad < 4) {
        size_t u = strlen(msg);
        snprintf(msg + u, len - u, "  [%lld] cpu %.17g gpu %.17g\n", (long long)i, a, b);
      }
      bad++;
    }
  }
  return bad;
}

/* One case: CPU on the host copy, GPU on a relaid device copy. */
static int run_case(ndf_ctx *ctx, tcase *c, tu_rng *r) {
  describe(c, "ect");
  int rc = 0;
  tu_array hin, lin, cpu, gpu, hd, dirs, vals = {0};
  tu_dev din = {0}, dout = {0};
  assert_int_equal(tu_array_alloc(&hin, c->dt, c->nd, c->shape), 0);
  fill_values(&hin.arr, c->vkind, r);
  assert_int_equal(tu_array_relayout(&lin, &hin.arr, c->in_layout, r), 0);
  const int64_t dsh[2] = {c->m, c->nsp};
  assert_int_equal(tu_array_alloc(&hd, NDF_FLOAT64, 2, dsh), 0);
  for (int64_t j = 0; j < c->m; j++) {
    const int kind = c->dkind ? (int)tu_rng_int(r, 0, 3) : 0;
    for (int d = 0; d < c->nsp; d++) {
      double u = tu_rng_normal(r);
      if (kind == 1) u = d == (int)(j % c->nsp) ? (tu_rng_chance(r, 0.5) ? 1 : -1) : 0; /* axis-aligned */
      else if (kind == 2) u = 0;                                                           /* zero vector */
      else if (kind == 3) u = (double)tu_rng_int(r, -2, 2);                                /* ties on diagonals */
      tu_set(&hd.arr, j * c->nsp + d, u);
    }
  }
  assert_int_equal(tu_array_relayout(&dirs, &hd.arr, c->dir_layout, r), 0);
  int64_t oshape[NDF_MAX_NDIM];
  for (int d = 0; d < c->batch; d++) oshape[d] = c->shape[d];
  oshape[c->batch] = c->m;
  oshape[c->batch + 1] = c->T;
  assert_int_equal(tu_array_alloc(&cpu, c->weighted ? NDF_FLOAT64 : NDF_INT64, c->batch + 2, oshape), 0);
  assert_int_equal(tu_array_like(&gpu, &cpu.arr, c->out_layout, r), 0);
  ndf_ect_options o;
  ndf_ect_options_init(&o);
  o.construction = c->cons;
  o.batch_dims = c->batch;
  o.nthresholds = c->T;
  o.weighted = c->weighted;
  o.normalize = c->normalize;
  if (c->spacing)
    for (int d = 0; d < c->nsp; d++) o.spacing[d] = tu_rng_chance(r, 0.3) ? 0 : 0.25 + tu_rng_unif(r) * 3;
  if (c->tkind == 0) {
    assert_int_equal(tu_array_alloc(&vals, NDF_FLOAT64, 1, &c->T), 0);
    const double sc = c->normalize ? 1.0 : 30.0;
    for (int64_t k = 0; k < c->T; k++) {
      double v = c->dkind ? (double)tu_rng_int(r, -20, 20) * 0.5 : tu_rng_normal(r) * sc;
      if (tu_rng_chance(r, 0.1) && k > 0) v = tu_get(&vals.arr, tu_rng_int(r, 0, k - 1)); /* repeats */
      if (tu_rng_chance(r, 0.03)) v = tu_rng_chance(r, 0.5) ? INFINITY : -INFINITY;
      tu_set(&vals.arr, k, v);
    }
    o.values = &vals.arr;
  } else if (c->tkind == 2) {
    o.has_range = 1;
    o.range_lo = tu_rng_normal(r) * 10;
    o.range_hi = o.range_lo + (tu_rng_chance(r, 0.1) ? 0 : tu_rng_unif(r) * 60);
  }
  ndf_status sc = ndf_euler_characteristic_transform(ctx, &hin.arr, &dirs.arr, &cpu.arr, &o);
  if (sc != NDF_OK) {
    printf("CPU failed on %s: %s\n", c->desc, ndf_errmsg(ctx));
    rc = 1;
    goto done;
  }
  tu_dev_upload(ctx, &din, &lin);
  tu_dev_upload(ctx, &dout, &gpu);
  ndf_status sg = ndf_euler_characteristic_transform(ctx, &din.arr, &dirs.arr, &dout.arr, &o);
  if (sg == NDF_OK) sg = ndf_ctx_synchronize(ctx);
  if (sg != NDF_OK) {
    printf("GPU failed on %s: %s\n", c->desc, ndf_errmsg(ctx));
    rc = 1;
    goto done;
  }
  tu_dev_download(ctx, &dout, &gpu);
  char msg[1024];
  int64_t bad;
  if (c->weighted) {
    double wmax = 0;
    for (int64_t i = 0; i < ndf_array_size(&hin.arr); i++) wmax = fmax(wmax, fabs(tu_get(&hin.arr, i)));
    const double npix = (double)ndf_array_size(&hin.arr);
    bad = compare_weighted(&cpu.arr, &gpu.arr, 1e-13 * (1 + 27 * wmax * npix), msg, sizeof msg);
  } else {
    bad = tu_compare(&cpu.arr, &gpu.arr, msg, sizeof msg);
  }
  if (bad) {
    printf("%s: %lld of %lld transform values differ\n%s", c->desc, (long long)bad,
           (long long)ndf_array_size(&cpu.arr), msg);
    rc = 1;
  }
  if (tu_check_gaps(&gpu) >= 0) {
    printf("%s: the output's gaps were written\n", c->desc);
    rc = 1;
  }
done:
  tu_dev_free(ctx, &din);
  tu_dev_free(ctx, &dout);
  tu_array_free(&hin);
  tu_array_free(&lin);
  tu_array_free(&hd);
  tu_array_free(&dirs);
  tu_array_free(&cpu);
  tu_array_free(&gpu);
  tu_array_free(&vals);
  return rc;
}

static void test_gpu_ect_random(void **state) {
  gpu_state *s = *state;
  tu_rng r;
  tu_rng_seed(&r, s->seed);
  int failed = 0;
  for (long k = 0; k < s->ncases && failed < 5; k++) {
    tcase c;
    draw_case(&c, &r);
    failed += run_case(s->ctx, &c, &r);
  }
  if (failed) printf("%d ECT cases failed; seed %llu\n", failed, (unsigned long long)s->seed);
  assert_int_equal(failed, 0);
}

/* The benchmark-sized workloads: binary 256x256 and a batch, 64 directions, T = 64, and a 3-D volume. */
static void test_gpu_ect_bench_shapes(void **state) {
  gpu_state *s = *state;
  tu_rng r;
  tu_rng_seed(&r, s->seed ^ 0xec7);
  static const struct { int nd, batch; int64_t shape[3]; int64_t m; } W[] = {
      {2, 0, {256, 256}, 64}, {3, 1, {8, 128, 128}, 16}, {3, 0, {64, 64, 64}, 64}};
  for (size_t k = 0; k < sizeof W / sizeof W[0]; k++)
    for (int wt = 0; wt < 2; wt++) {
      tcase c;
      memset(&c, 0, sizeof c);
      c.dt = wt ? NDF_FLOAT32 : NDF_UINT8;
      c.nd = W[k].nd;
      c.batch = W[k].batch;
      c.nsp = c.nd - c.batch;
      memcpy(c.shape, W[k].shape, sizeof W[k].shape);
      c.vkind = wt ? 2 : 0;
      c.tkind = 1;
      c.T = 64;
      c.m = W[k].m;
      c.weighted = wt;
      c.cons = (ndf_ecc_construction)(k % 2);
      double t0 = tu_now_ms();
      assert_int_equal(run_case(s->ctx, &c, &r), 0);
      printf("%s: %.1f ms (CPU reference, transfers and first compile included)\n", c.desc, tu_now_ms() - t0);
    }
}

/* Binary NaN / weighted +-inf: EINVAL, output untouched, as on the CPU. */
static void test_gpu_ect_rejects(void **state) {
  gpu_state *s = *state;
  const int64_t sh[3] = {3, 17, 40}, osh[3] = {3, 2, 16}, dsh[2] = {2, 2};
  double dv[4] = {1, 0, 0.6, 0.8};
  tu_array h, o;
  ndf_array dirs;
  ndf_array_init(&dirs, dv, NDF_DEVICE_CPU, NDF_FLOAT64, 2, dsh);
  assert_int_equal(tu_array_alloc(&h, NDF_FLOAT32, 3, sh), 0);
  for (int wt = 0; wt < 2; wt++) {
    assert_int_equal(tu_array_alloc(&o, wt ? NDF_FLOAT64 : NDF_INT64, 3, osh), 0);
    for (int64_t i = 0; i < 3 * 17 * 40; i++) tu_set(&h.arr, i, (double)(i % 7));
    tu_set(&h.arr, 1234, wt ? INFINITY : NAN);
    tu_poison(o.base, o.bytes);
    tu_dev din, dout;
    tu_dev_upload(s->ctx, &din, &h);
    tu_dev_upload(s->ctx, &dout, &o);
    ndf_ect_options opt;
    ndf_ect_options_init(&opt);
    opt.nthresholds = 16;
    opt.batch_dims = 1;
    opt.weighted = wt;
    assert_int_equal(ndf_euler_characteristic_transform(s->ctx, &din.arr, &dirs, &dout.arr, &opt), NDF_EINVAL);
    printf("rejected: %s\n", ndf_errmsg(s->ctx));
    assert_non_null(strstr(ndf_errmsg(s->ctx), wt ? "finite" : "NaN"));
    tu_dev_download(s->ctx, &dout, &o);
    assert_int_equal(tu_poison_check(o.base, o.bytes), -1);
    tu_dev_free(s->ctx, &din);
    tu_dev_free(s->ctx, &dout);
    tu_array_free(&o);
  }
  tu_array_free(&h);
}

/* ---- soft ECT ------------------------------------------------------------------------------------ */

/* Sum-scaled tolerance: the GPU sums the same terms as the CPU in another
 * order (and its exp is within an ulp of glibc's), so |cpu - gpu| <= rel *
 * (1 + bound of the sum of |terms|).  FAST (soft_ect.fast=on, float
 * sigmoid): rel 2e-6. */
static int64_t compare_tol(const ndf_array *e, const ndf_array *g, double tol, double frel, char *msg, size_t len,
                           const char *what) {
  int64_t bad = 0;
  const int64_t n = ndf_array_size(e);
  for (int64_t i = 0; i < n; i++) {
    const double a = tu_get(e, i), b = tu_get(g, i);
    if (!(fabs(a - b) <= tol + frel * fabs(a))) {
      if (bad < 3) {
        size_t u = strlen(msg);
        snprintf(msg + u, len - u, "  %s[%lld] cpu %.17g gpu %.17g (tol %.3g)\n", what, (long long)i, a, b,
                 tol + frel * fabs(a));
      }
      bad++;
    }
  }
  return bad;
}

/* One soft case: forward, then backward with a random grad_output, CPU vs GPU. */
static int run_soft_case(ndf_ctx *ctx, tcase *c, double lam, int gin_f32, int fast, tu_rng *r) {
  describe(c, fast ? "soft-ect(fast)" : "soft-ect");
  size_t dl = strlen(c->desc);
  snprintf(c->desc + dl, sizeof c->desc - dl, " lambda=%g gin=%s", lam, gin_f32 ? "f32" : "f64");
  int rc = 0;
  tu_array hin, lin, hd, dirs, th, cpu, gpu, gout, lgout, gin_c, gin_g, gd_c, gd_g, gt_c, gt_g;
  tu_dev din = {0}, dout = {0}, dgo = {0}, dgin = {0};
  assert_int_equal(tu_array_alloc(&hin, c->dt, c->nd, c->shape), 0);
  fill_values(&hin.arr, c->vkind, r);
  assert_int_equal(tu_array_relayout(&lin, &hin.arr, c->in_layout, r), 0);
  const int64_t dsh[2] = {c->m, c->nsp};
  assert_int_equal(tu_array_alloc(&hd, NDF_FLOAT64, 2, dsh), 0);
  for (int64_t j = 0; j < c->m; j++) {
    const int kind = c->dkind ? (int)tu_rng_int(r, 0, 3) : 0;
    for (int d = 0; d < c->nsp; d++) {
      double u = tu_rng_normal(r);
      if (kind == 1) u = d == (int)(j % c->nsp) ? (tu_rng_chance(r, 0.5) ? 1 : -1) : 0;
      else if (kind == 2) u = 0;
      else if (kind == 3) u = (double)tu_rng_int(r, -2, 2);
      tu_set(&hd.arr, j * c->nsp + d, u);
    }
  }
  assert_int_equal(tu_array_relayout(&dirs, &hd.arr, c->dir_layout, r), 0);
  ndf_soft_ect_options o;
  ndf_soft_ect_options_init(&o);
  o.construction = c->cons;
  o.batch_dims = c->batch;
  o.weighted = c->weighted;
  o.normalize = c->normalize;
  o.lambda = lam;
  double xmax = 0;
  for (int d = 0; d < c->nsp; d++) {
    if (c->spacing) o.spacing[d] = tu_rng_chance(r, 0.3) ? 0 : 0.25 + tu_rng_unif(r) * 3;
    const double sp = o.spacing[d] == 0 ? 1 : o.spacing[d];
    xmax += (double)c->shape[c->batch + d] * sp;
  }
  if (c->normalize) xmax = 1;
  assert_int_equal(tu_array_alloc(&th, NDF_FLOAT64, 1, &c->T), 0);
  double umax = 0;
  for (int64_t i = 0; i < c->m * c->nsp; i++) umax = fmax(umax, fabs(tu_get(&hd.arr, i)));
  const double hmax = xmax * umax * c->nsp + 1;
  for (int64_t k = 0; k < c->T; k++) tu_set(&th.arr, k, (tu_rng_unif(r) * 2 - 1) * hmax);
  int64_t osh[NDF_MAX_NDIM];
  for (int d = 0; d < c->batch; d++) osh[d] = c->shape[d];
  osh[c->batch] = c->m;
  osh[c->batch + 1] = c->T;
  assert_int_equal(tu_array_alloc(&cpu, NDF_FLOAT64, c->batch + 2, osh), 0);
  assert_int_equal(tu_array_like(&gpu, &cpu.arr, c->out_layout, r), 0);
  assert_int_equal(tu_array_alloc(&gout, NDF_FLOAT64, c->batch + 2, osh), 0);
  double gmax = 0;
  for (int64_t i = 0; i < ndf_array_size(&gout.arr); i++) {
    tu_set(&gout.arr, i, tu_rng_normal(r));
    gmax = fmax(gmax, fabs(tu_get(&gout.arr, i)));
  }
  assert_int_equal(tu_array_relayout(&lgout, &gout.arr, tu_rng_chance(r, 0.3) ? TU_LAYOUT_PADDED : TU_LAYOUT_C, r), 0);
  const ndf_dtype gdt = gin_f32 ? NDF_FLOAT32 : NDF_FLOAT64;
  assert_int_equal(tu_array_alloc(&gin_c, gdt, c->nd, c->shape), 0);
  assert_int_equal(tu_array_like(&gin_g, &gin_c.arr, tu_rng_chance(r, 0.3) ? TU_LAYOUT_PADDED : TU_LAYOUT_C, r), 0);
  assert_int_equal(tu_array_alloc(&gd_c, NDF_FLOAT64, 2, dsh), 0);
  assert_int_equal(tu_array_like(&gd_g, &gd_c.arr, tu_rng_chance(r, 0.3) ? TU_LAYOUT_FORTRAN : TU_LAYOUT_C, r), 0);
  assert_int_equal(tu_array_alloc(&gt_c, NDF_FLOAT64, 1, &c->T), 0);
  assert_int_equal(tu_array_alloc(&gt_g, NDF_FLOAT64, 1, &c->T), 0);
  tu_poison(gd_g.base, gd_g.bytes);
  tu_poison(gt_g.base, gt_g.bytes);
  double wmax = 1;
  if (c->weighted)
    for (int64_t i = 0; i < ndf_array_size(&hin.arr); i++) wmax = fmax(wmax, fabs(tu_get(&hin.arr, i)));
  const double cells = 27 * wmax;
  const double rel = fast ? 2e-6 : 1e-12;
  char msg[2048];
  msg[0] = 0;
  int64_t bad = 0;
  ndf_status sc = ndf_soft_ect_forward(ctx, &hin.arr, &dirs.arr, &th.arr, &cpu.arr, &o);
  if (sc == NDF_OK)
    sc = ndf_soft_ect_backward(ctx, &hin.arr, &dirs.arr, &th.arr, &gout.arr, &gin_c.arr, &gd_c.arr, &gt_c.arr, &o);
  if (sc != NDF_OK) {
    printf("CPU failed on %s: %s\n", c->desc, ndf_errmsg(ctx));
    rc = 1;
    goto done;
  }
  tu_dev_upload(ctx, &din, &lin);
  tu_dev_upload(ctx, &dout, &gpu);
  tu_dev_upload(ctx, &dgo, &lgout);
  tu_dev_upload(ctx, &dgin, &gin_g);
  if (fast) tune(ctx, "soft_ect.fast", "on");
  ndf_status sg = ndf_soft_ect_forward(ctx, &din.arr, &dirs.arr, &th.arr, &dout.arr, &o);
  if (sg == NDF_OK)
    sg = ndf_soft_ect_backward(ctx, &din.arr, &dirs.arr, &th.arr, &dgo.arr, &dgin.arr, &gd_g.arr, &gt_g.arr, &o);
  if (sg == NDF_OK) sg = ndf_ctx_synchronize(ctx);
  tune(ctx, "soft_ect.fast", NULL);
  if (sg != NDF_OK) {
    printf("GPU failed on %s: %s\n", c->desc, ndf_errmsg(ctx));
    rc = 1;
    goto done;
  }
  tu_dev_download(ctx, &dout, &gpu);
  tu_dev_download(ctx, &dgin, &gin_g);
  /* bounds of the sums of |terms| */
  const double npix_all = (double)ndf_array_size(&hin.arr); /* voxels of the whole batch */
  const double m = (double)c->m, T = (double)c->T;
  bad += compare_tol(&cpu.arr, &gpu.arr, rel * (1 + npix_all * cells), 0, msg, sizeof msg, "chi");
  bad += compare_tol(&gt_c.arr, &gt_g.arr, rel * (1 + npix_all * m * cells * lam * gmax), 0, msg, sizeof msg, "dt");
  bad += compare_tol(&gd_c.arr, &gd_g.arr, rel * (1 + npix_all * T * cells * lam * gmax * xmax), 0, msg, sizeof msg,
                     "du");
  bad += compare_tol(&gin_c.arr, &gin_g.arr, rel * (1 + 27 * m * T * gmax), gin_f32 ? 1.2e-7 : 0, msg, sizeof msg,
                     "dinput");
  if (bad) {
    printf("%s: %lld values differ\n%s", c->desc, (long long)bad, msg);
    rc = 1;
  }
  if (tu_check_gaps(&gpu) >= 0 || tu_check_gaps(&gin_g) >= 0) {
    printf("%s: an output's gaps were written\n", c->desc);
    rc = 1;
  }
done:
  tu_dev_free(ctx, &din);
  tu_dev_free(ctx, &dout);
  tu_dev_free(ctx, &dgo);
  tu_dev_free(ctx, &dgin);
  tu_array_free(&hin);
  tu_array_free(&lin);
  tu_array_free(&hd);
  tu_array_free(&dirs);
  tu_array_free(&th);
  tu_array_free(&cpu);
  tu_array_free(&gpu);
  tu_array_free(&gout);
  tu_array_free(&lgout);
  tu_array_free(&gin_c);
  tu_array_free(&gin_g);
  tu_array_free(&gd_c);
  tu_array_free(&gd_g);
  tu_array_free(&gt_c);
  tu_array_free(&gt_g);
  return rc;
}

static void draw_soft_case(tcase *c, tu_rng *r) {
  draw_case(c, r);
  if (c->batch > 1) c->batch = 1, c->nd = c->nsp + 1;
  const int64_t h = c->nsp == 2 ? 40 : 12;
  for (int d = 0; d < c->nsp; d++)
    c->shape[c->batch + d] = tu_rng_chance(r, 0.1) ? tu_rng_int(r, 1, 3) : tu_rng_int(r, 1, h);
  const double mk = tu_rng_unif(r);
  c->m = mk < 0.2 ? 1 : mk < 0.35 ? 64 : tu_rng_int(r, 2, 12);
  c->T = tu_rng_chance(r, 0.08) ? tu_rng_int(r, 1300, 3000) : tu_rng_int(r, 1, 100); /* past the shared tables */
  c->tkind = 0;
}

/* Soft ECT forward and both gradients: GPU vs CPU to the tolerance above, for
 * several lambdas, both grad_input dtypes, double and (some cases) fast sigmoids. */
static void test_gpu_soft_ect_random(void **state) {
  gpu_state *s = *state;
  tu_rng r;
  tu_rng_seed(&r, s->seed ^ 0x50f7);
  int failed = 0;
  static const double lams[] = {0.3, 1, 4, 25};
  for (long k = 0; k < s->ncases && failed < 5; k++) {
    tcase c;
    draw_soft_case(&c, &r);
    failed += run_soft_case(s->ctx, &c, lams[k % 4], tu_rng_chance(&r, 0.3), k % 5 == 4, &r);
  }
  if (failed) printf("%d soft ECT cases failed; seed %llu\n", failed, (unsigned long long)s->seed);
  assert_int_equal(failed, 0);
}

/* The benchmark shapes of the soft ECT: 256^2 and 32^3 x 2 (batch), 64 directions, T = 64. */
static void test_gpu_soft_ect_bench_shapes(void **state) {
  gpu_state *s = *state;
  tu_rng r;
  tu_rng_seed(&r, s->seed ^ 0x50f8);
  static const struct { int nd, batch; int64_t shape[4]; } W[] = {{2, 0, {256, 256}}, {4, 1, {2, 32, 32, 32}}};
  for (size_t k = 0; k < sizeof W / sizeof W[0]; k++)
    for (int wt = 0; wt < 2; wt++) {
      tcase c;
      memset(&c, 0, sizeof c);
      c.dt = wt ? NDF_FLOAT32 : NDF_UINT8;
      c.nd = W[k].nd;
      c.batch = W[k].batch;
      c.nsp = c.nd - c.batch;
      memcpy(c.shape, W[k].shape, sizeof W[k].shape);
      c.vkind = wt ? 2 : 0;
      c.T = 64;
      c.m = 64;
      c.weighted = wt;
      c.normalize = 1;
      c.cons = (ndf_ecc_construction)(k % 2);
      double t0 = tu_now_ms();
      assert_int_equal(run_soft_case(s->ctx, &c, 10, 0, 0, &r), 0);
      printf("%s: %.1f ms (CPU reference included)\n", c.desc, tu_now_ms() - t0);
    }
}

/* A CUDA input with a host output: EINVAL naming the device. */
static void test_gpu_soft_ect_device_args(void **state) {
  gpu_state *s = *state;
  const int64_t sh[2] = {9, 11}, osh[2] = {1, 4}, dsh[2] = {1, 2}, tsh = 4;
  double dv[2] = {0.6, 0.8}, tv[4] = {-3, -1, 1, 3};
  ndf_array dirs, th;
  ndf_array_init(&dirs, dv, NDF_DEVICE_CPU, NDF_FLOAT64, 2, dsh);
  ndf_array_init(&th, tv, NDF_DEVICE_CPU, NDF_FLOAT64, 1, &tsh);
  tu_array h, o;
  assert_int_equal(tu_array_alloc(&h, NDF_FLOAT32, 2, sh), 0);
  assert_int_equal(tu_array_alloc(&o, NDF_FLOAT64, 2, osh), 0);
  tu_dev din;
  tu_dev_upload(s->ctx, &din, &h);
  ndf_soft_ect_options so;
  ndf_soft_ect_options_init(&so);
  assert_int_equal(ndf_soft_ect_forward(s->ctx, &din.arr, &dirs, &th, &o.arr, &so), NDF_EINVAL);
  assert_non_null(strstr(ndf_errmsg(s->ctx), "device"));
  tu_dev_free(s->ctx, &din);
  tu_array_free(&h);
  tu_array_free(&o);
}

int main(void) {
  if (!tu_have_cuda()) return 77; /* ctest: skipped */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gpu_ect_rejects),
      cmocka_unit_test(test_gpu_soft_ect_device_args),
      cmocka_unit_test(test_gpu_ect_random),
      cmocka_unit_test(test_gpu_ect_bench_shapes),
      cmocka_unit_test(test_gpu_soft_ect_random),
      cmocka_unit_test(test_gpu_soft_ect_bench_shapes),
  };
  return cmocka_run_group_tests(tests, group_setup, tu_gpu_teardown);
}
