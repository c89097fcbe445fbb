/*
 * test_gpu_n4.c -- N4 bias-field correction on the GPU against the CPU
 * backend, on fresh random inputs (smooth bias fields times two-tissue
 * noise): ranks 1 to 4, every input dtype, float32 and float64 outputs,
 * masks (non-zero and mask_label), weight images, shrink factors 1 to 4,
 * spline orders 1 to 5, strided and negative-stride inputs, strided outputs.
 * The histogram and the convergence sums are ordered differently on the two
 * backends, so the values are compared to a tolerance: the log fields to
 * 1e-6 absolute, the outputs to 1e-6 relative (float32 outputs to their
 * rounding); the iterations per level must match.  Also the data error (no
 * voxel inside: NDF_EINVAL, outputs untouched) and ch2-sized timing (shrink
 * 4, SimpleITK's defaults) printed.  Exits 77 (skipped) without a device.
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

static int group_setup(void **state) { return tu_gpu_setup(state, 40); }

static const ndf_dtype DTYPES[] = {NDF_UINT8, NDF_INT8, NDF_UINT16, NDF_INT16, NDF_UINT32, NDF_INT32, NDF_FLOAT32,
                                   NDF_FLOAT64};

static ndf_ctx *cpu_ctx(void) {
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  o.backend = NDF_BACKEND_CPU;
  ndf_ctx *c = NULL;
  assert_int_equal(ndf_ctx_create(&c, &o), NDF_OK);
  return c;
}

/* Values of dtype dt in a smooth bias: 1..100 for int8 (positive), else tissue classes. */
static void fill(tu_rng *r, const ndf_array *a, const ndf_array *mask, int label) {
  const int nd = a->ndim;
  const int64_t n = ndf_array_size(a);
  double coef[NDF_MAX_SPATIAL];
  for (int d = 0; d < nd; d++) coef[d] = 0.4 * tu_rng_normal(r);
  for (int64_t i = 0; i < n; i++) {
    int64_t q = i;
    double s = 0.0, rr = 0.0;
    for (int d = nd - 1; d >= 0; d--) {
      const double c = -1.0 + 2.0 * (double)(q % a->shape[d]) / (double)(a->shape[d] > 1 ? a->shape[d] - 1 : 1);
      q /= a->shape[d];
      s += coef[d] * c;
      rr += c * c;
    }
    const double base = a->dtype == NDF_INT8 ? 40.0 : tu_rng_chance(r, 0.5) ? 60.0 : 150.0;
    double v = (base + 0.15 * base * tu_rng_normal(r)) * exp(s);
    if (tu_rng_chance(r, 0.02)) v = 0.0; /* outside: I <= 0 */
    if (a->dtype != NDF_FLOAT32 && a->dtype != NDF_FLOAT64) v = floor(v);
    if (a->dtype == NDF_INT8 && v > 127) v = 127;
    if (a->dtype == NDF_UINT8 && v > 255) v = 255;
    tu_set(a, i, v);
    if (mask) tu_set(mask, i, rr < 0.8 * nd ? label : (tu_rng_chance(r, 0.5) ? 0 : label + 1));
  }
}

static void compare(const char *desc, const char *what, const ndf_array *cpu, const ndf_array *gpu, double abs_tol,
                    double rel_tol) {
  const int64_t n = ndf_array_size(cpu);
  for (int64_t i = 0; i < n; i++) {
    const double a = tu_get(cpu, i), b = tu_get(gpu, i);
    if (!(fabs(a - b) <= abs_tol + rel_tol * fabs(a)))
      fail_msg("%s: %s[%lld] CPU %.17g GPU %.17g", desc, what, (long long)i, a, b);
  }
}

static void test_gpu_n4_random(void **state) {
  tu_gpu_state *s = *state;
  TU_SKIP_WITHOUT_CUDA(s->ctx);
  ndf_ctx *cpu = cpu_ctx();
  tu_rng r;
  tu_rng_seed(&r, s->seed);
  for (long k = 0; k < s->ncases; k++) {
    const int nd = (int)tu_rng_int(&r, 1, 4);
    static const int64_t hi[5] = {0, 3000, 90, 36, 14};
    int64_t sh[4];
    for (int d = 0; d < nd; d++) sh[d] = tu_rng_int(&r, 6, hi[nd]);
    const ndf_dtype dt = DTYPES[tu_rng_int(&r, 0, 7)];
    const ndf_dtype odt = tu_rng_chance(&r, 0.5) ? NDF_FLOAT32 : NDF_FLOAT64;
    const int use_mask = tu_rng_chance(&r, 0.7), use_w = tu_rng_chance(&r, 0.3), use_lb = tu_rng_chance(&r, 0.7);
    ndf_n4_options o;
    ndf_n4_options_init(&o);
    o.number_of_fitting_levels = (int)tu_rng_int(&r, 1, 3);
    for (int l = 0; l < o.number_of_fitting_levels; l++) o.maximum_number_of_iterations[l] = (int)tu_rng_int(&r, 1, 20);
    o.spline_order = (int)tu_rng_int(&r, 1, 5);
    o.number_of_control_points[0] = o.spline_order + tu_rng_int(&r, 1, 3);
    o.shrink_factor = (int)tu_rng_int(&r, 1, 4);
    o.number_of_histogram_bins = tu_rng_chance(&r, 0.8) ? 200 : (int)tu_rng_int(&r, 2, 5000);
    o.mask_label = use_mask && tu_rng_chance(&r, 0.3) ? 3 : 0;
    char desc[256];
    snprintf(desc, sizeof desc, "case %ld: %dD %lldx.. %s->%s mask %d label %d weight %d levels %d order %d ncp %lld shrink %d bins %d",
             k, nd, (long long)sh[0], ndf_dtype_name(dt), ndf_dtype_name(odt), use_mask, o.mask_label, use_w,
             o.number_of_fitting_levels, o.spline_order, (long long)o.number_of_control_points[0], o.shrink_factor,
             o.number_of_histogram_bins);
    tu_array in, mask, w, co, cl, go, gl, li;
    assert_int_equal(tu_array_alloc(&in, dt, nd, sh), 0);
    assert_int_equal(tu_array_alloc(&mask, NDF_UINT8, nd, sh), 0);
    assert_int_equal(tu_array_alloc(&w, tu_rng_chance(&r, 0.5) ? NDF_FLOAT32 : NDF_FLOAT64, nd, sh), 0);
    fill(&r, &in.arr, &mask.arr, o.mask_label ? o.mask_label : 1);
    for (int64_t i = 0; i < ndf_array_size(&w.arr); i++) tu_set(&w.arr, i, tu_rng_chance(&r, 0.1) ? 0.0 : 0.2 + tu_rng_unif(&r));
    assert_int_equal(tu_array_alloc(&co, odt, nd, sh), 0);
    assert_int_equal(tu_array_alloc(&cl, NDF_FLOAT64, nd, sh), 0);
    ndf_n4_result rc, rg;
    ndf_status sc = ndf_n4_bias_field_correction(cpu, &in.arr, use_mask ? &mask.arr : NULL, use_w ? &w.arr : NULL,
                                                 &co.arr, use_lb ? &cl.arr : NULL, &o, &rc);
    /* the GPU's arrays: the input in a random layout, the outputs strided */
    const int lay = tu_rng_chance(&r, 0.5) ? TU_LAYOUT_C : (TU_LAYOUT_PADDED | TU_LAYOUT_NEGATIVE);
    assert_int_equal(tu_array_relayout(&li, &in.arr, lay, &r), 0);
    assert_int_equal(tu_array_like(&go, &co.arr, tu_rng_chance(&r, 0.5) ? TU_LAYOUT_C : TU_LAYOUT_PADDED, &r), 0);
    assert_int_equal(tu_array_like(&gl, &cl.arr, TU_LAYOUT_PADDED, &r), 0);
    tu_dev din = {0}, dm = {0}, dw = {0}, dout = {0}, dl = {0};
    tu_dev_upload(s->ctx, &din, &li);
    tu_dev_upload(s->ctx, &dm, &mask);
    tu_dev_upload(s->ctx, &dw, &w);
    tu_dev_upload(s->ctx, &dout, &go);
    tu_dev_upload(s->ctx, &dl, &gl);
    ndf_status sg = ndf_n4_bias_field_correction(s->ctx, &din.arr, use_mask ? &dm.arr : NULL, use_w ? &dw.arr : NULL,
                                                 &dout.arr, use_lb ? &dl.arr : NULL, &o, &rg);
    if (sg == NDF_OK) sg = ndf_ctx_synchronize(s->ctx);
    if (sc != sg) fail_msg("%s: CPU %s (%s), GPU %s (%s)", desc, ndf_status_name(sc), ndf_errmsg(cpu), ndf_status_name(sg),
                           ndf_errmsg(s->ctx));
    tu_dev_download(s->ctx, &dout, &go);
    tu_dev_download(s->ctx, &dl, &gl);
    if (sc == NDF_OK) {
      for (int l = 0; l < o.number_of_fitting_levels; l++)
        if (rc.iterations[l] != rg.iterations[l])
          fail_msg("%s: level %d ran %d iterations on the CPU, %d on the GPU", desc, l, rc.iterations[l], rg.iterations[l]);
      assert_true(fabs(rc.convergence - rg.convergence) <= 1e-6 * fabs(rc.convergence) + 1e-12);
      compare(desc, "output", &co.arr, &go.arr, 0.0, odt == NDF_FLOAT32 ? 2e-6 : 1e-6);
      if (use_lb) compare(desc, "log_bias_field", &cl.arr, &gl.arr, 1e-6, 0.0);
    } else {
      assert_true(tu_poison_check(go.base, go.bytes) < 0); /* untouched */
    }
    assert_true(tu_check_gaps(&go) < 0);
    assert_true(tu_check_gaps(&gl) < 0);
    tu_dev_free(s->ctx, &din);
    tu_dev_free(s->ctx, &dm);
    tu_dev_free(s->ctx, &dw);
    tu_dev_free(s->ctx, &dout);
    tu_dev_free(s->ctx, &dl);
    tu_array_free(&in);
    tu_array_free(&mask);
    tu_array_free(&w);
    tu_array_free(&co);
    tu_array_free(&cl);
    tu_array_free(&go);
    tu_array_free(&gl);
    tu_array_free(&li);
  }
  ndf_ctx_destroy(cpu);
}

/* No voxel inside: NDF_EINVAL from the device's count, nothing written. */
static void test_gpu_n4_empty(void **state) {
  tu_gpu_state *s = *state;
  TU_SKIP_WITHOUT_CUDA(s->ctx);
  const int64_t sh[3] = {10, 11, 12};
  tu_array in, mask, go;
  assert_int_equal(tu_array_alloc(&in, NDF_FLOAT32, 3, sh), 0);
  assert_int_equal(tu_array_alloc(&mask, NDF_UINT8, 3, sh), 0);
  for (int64_t i = 0; i < ndf_array_size(&in.arr); i++) tu_set(&in.arr, i, 5.0);
  assert_int_equal(tu_array_alloc(&go, NDF_FLOAT32, 3, sh), 0);
  tu_poison(go.base, go.bytes);
  tu_dev din = {0}, dm = {0}, dout = {0};
  tu_dev_upload(s->ctx, &din, &in);
  tu_dev_upload(s->ctx, &dm, &mask);
  tu_dev_upload(s->ctx, &dout, &go);
  ndf_n4_options o;
  ndf_n4_options_init(&o);
  assert_int_equal(ndf_n4_bias_field_correction(s->ctx, &din.arr, &dm.arr, NULL, &dout.arr, NULL, &o, NULL), NDF_EINVAL);
  assert_non_null(strstr(ndf_errmsg(s->ctx), "no voxel"));
  tu_dev_download(s->ctx, &dout, &go);
  assert_true(tu_poison_check(go.base, go.bytes) < 0);
  tu_dev_free(s->ctx, &din);
  tu_dev_free(s->ctx, &dm);
  tu_dev_free(s->ctx, &dout);
  tu_array_free(&in);
  tu_array_free(&mask);
  tu_array_free(&go);
}

/* A ch2-sized volume (181x217x181 float32), shrink 4, SimpleITK's defaults: GPU vs CPU, timed. */
static void test_gpu_n4_large(void **state) {
  tu_gpu_state *s = *state;
  TU_SKIP_WITHOUT_CUDA(s->ctx);
  tu_rng r;
  tu_rng_seed(&r, s->seed + 1);
  const int64_t sh[3] = {181, 217, 181};
  tu_array in, mask, co, go, cl, gl;
  assert_int_equal(tu_array_alloc(&in, NDF_FLOAT32, 3, sh), 0);
  assert_int_equal(tu_array_alloc(&mask, NDF_UINT8, 3, sh), 0);
  fill(&r, &in.arr, &mask.arr, 1);
  assert_int_equal(tu_array_alloc(&co, NDF_FLOAT32, 3, sh), 0);
  assert_int_equal(tu_array_alloc(&go, NDF_FLOAT32, 3, sh), 0);
  assert_int_equal(tu_array_alloc(&cl, NDF_FLOAT64, 3, sh), 0);
  assert_int_equal(tu_array_alloc(&gl, NDF_FLOAT64, 3, sh), 0);
  ndf_n4_options o;
  ndf_n4_options_init(&o);
  o.shrink_factor = 4;
  ndf_ctx *cpu = cpu_ctx();
  ndf_n4_result rc, rg;
  double t0 = tu_now_ms();
  assert_int_equal(ndf_n4_bias_field_correction(cpu, &in.arr, &mask.arr, NULL, &co.arr, &cl.arr, &o, &rc), NDF_OK);
  const double tc = tu_now_ms() - t0;
  tu_dev din = {0}, dm = {0}, dout = {0}, dl = {0};
  tu_dev_upload(s->ctx, &din, &in);
  tu_dev_upload(s->ctx, &dm, &mask);
  tu_dev_upload(s->ctx, &dout, &go);
  tu_dev_upload(s->ctx, &dl, &gl);
  double tg = 0;
  for (int rep = 0; rep < 3; rep++) { /* the first run compiles */
    t0 = tu_now_ms();
    assert_int_equal(ndf_n4_bias_field_correction(s->ctx, &din.arr, &dm.arr, NULL, &dout.arr, &dl.arr, &o, &rg), NDF_OK);
    assert_int_equal(ndf_ctx_synchronize(s->ctx), NDF_OK);
    tg = tu_now_ms() - t0;
  }
  tu_dev_download(s->ctx, &dout, &go);
  tu_dev_download(s->ctx, &dl, &gl);
  printf("n4 181x217x181 float32, shrink 4, 4 levels x 50: iterations %d,%d,%d,%d; CPU %.0f ms, GPU %.1f ms\n",
         rg.iterations[0], rg.iterations[1], rg.iterations[2], rg.iterations[3], tc, tg);
  for (int l = 0; l < 4; l++) assert_int_equal(rc.iterations[l], rg.iterations[l]);
  compare("ch2-sized", "log_bias_field", &cl.arr, &gl.arr, 1e-6, 0.0);
  compare("ch2-sized", "output", &co.arr, &go.arr, 0.0, 2e-6);
  tu_dev_free(s->ctx, &din);
  tu_dev_free(s->ctx, &dm);
  tu_dev_free(s->ctx, &dout);
  tu_dev_free(s->ctx, &dl);
  tu_array_free(&in);
  tu_array_free(&mask);
  tu_array_free(&co);
  tu_array_free(&go);
  tu_array_free(&cl);
  tu_array_free(&gl);
  ndf_ctx_destroy(cpu);
}

int main(void) {
  if (!tu_have_cuda()) return 77; /* ctest: skipped */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gpu_n4_random),
      cmocka_unit_test(test_gpu_n4_empty),
      cmocka_unit_test(test_gpu_n4_large),
  };
  return cmocka_run_group_tests(tests, group_setup, tu_gpu_teardown);
}
