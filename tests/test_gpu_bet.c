/*
 * test_gpu_bet.c -- skull stripping on the GPU against the CPU backend, bit
 * for bit: both run the surface arithmetic of templates/bet_mesh.cuh without
 * fused multiply-adds, so the masks are equal voxel for voxel.  Fresh random
 * heads (dtypes, shapes, spacings, -f, -g, iteration counts, input and
 * output layouts) into poisoned outputs, the real T1 MRI ch2.nii.gz when
 * Debian's mricron-data is installed (timed), and the data error (NaN:
 * NDF_EINVAL, the output untouched).  Exit 77 without a CUDA device.
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
#include <unistd.h>

#include "ndfio.h"
#include "ndforge.h"
#include "testutil.h"

#define CH2 "/usr/share/mricron/templates/ch2.nii.gz"

typedef tu_gpu_state gpu_state;
static int group_setup(void **state) { return tu_gpu_setup(state, 12); }

static const ndf_dtype DTYPES[] = {NDF_UINT8, NDF_INT8,  NDF_UINT16,  NDF_INT16,
                                   NDF_UINT32, NDF_INT32, NDF_FLOAT32, NDF_FLOAT64};

/* A random head: an ellipsoid brain (random radii and centre) with noise, a gap, a skull and a scalp. */
static void make_head(tu_array *img, ndf_dtype t, const int64_t *shape, const double *h, tu_rng *r) {
  assert_int_equal(tu_array_alloc(img, t, 3, shape), 0);
  double rad[3], ctr[3];
  for (int d = 0; d < 3; d++) {
    const double field = (double)shape[d] * h[d];
    rad[d] = field * (0.22 + 0.12 * tu_rng_unif(r));
    ctr[d] = field * (0.45 + 0.1 * tu_rng_unif(r));
  }
  const double bright = 60 + 60 * tu_rng_unif(r), noise = 2 + 8 * tu_rng_unif(r);
  for (int64_t i = 0, x = 0; x < shape[0]; x++)
    for (int64_t y = 0; y < shape[1]; y++)
      for (int64_t z = 0; z < shape[2]; z++, i++) {
        const double p[3] = {(double)x * h[0] - ctr[0], (double)y * h[1] - ctr[1], (double)z * h[2] - ctr[2]};
        const double q = sqrt(p[0] * p[0] / (rad[0] * rad[0]) + p[1] * p[1] / (rad[1] * rad[1]) +
                              p[2] * p[2] / (rad[2] * rad[2]));
        const double out_mm = (q - 1) * rad[2];
        double v = q <= 1 ? bright + noise * tu_rng_normal(r)
                   : out_mm <= 3 ? 0.2 * bright : out_mm <= 7 ? 5 : out_mm <= 11 ? 0.9 * bright : 0;
        if (v < 0) v = 0;
        tu_set(&img->arr, i, t == NDF_FLOAT32 || t == NDF_FLOAT64 ? v : round(v));
      }
}

static void test_gpu_bet_random(void **state) {
  gpu_state *s = *state;
  TU_SKIP_WITHOUT_CUDA(s->ctx);
  tu_rng r;
  tu_rng_seed(&r, s->seed);
  for (long c = 0; c < s->ncases; c++) {
    const ndf_dtype t = DTYPES[tu_rng_int(&r, 0, 7)];
    int64_t shape[3];
    double h[3];
    for (int d = 0; d < 3; d++) shape[d] = tu_rng_int(&r, 24, 72), h[d] = 1.0 + 2.0 * tu_rng_unif(&r);
    tu_array img, in, cpu, gpu;
    make_head(&img, t, shape, h, &r);
    ndf_skull_strip_options o;
    ndf_skull_strip_options_init(&o);
    o.fractional_intensity_threshold = 0.2 + 0.6 * tu_rng_unif(&r);
    o.vertical_gradient = tu_rng_chance(&r, 0.5) ? 0 : 0.6 * tu_rng_unif(&r) - 0.3;
    o.iterations = (int)tu_rng_int(&r, 100, 1000);
    char desc[256];
    snprintf(desc, sizeof desc, "skull_strip %s %lldx%lldx%lld spacing %.3g,%.3g,%.3g f %.3g g %.3g it %d",
             ndf_dtype_name(t), (long long)shape[0], (long long)shape[1], (long long)shape[2], h[0], h[1], h[2],
             o.fractional_intensity_threshold, o.vertical_gradient, o.iterations);
    const int lin = (int)tu_rng_int(&r, 0, 2), lout = (int)tu_rng_int(&r, 0, 1);
    assert_int_equal(tu_array_relayout(&in, &img.arr, lin == 0 ? TU_LAYOUT_C : lin == 1 ? TU_LAYOUT_FORTRAN
                                                                                      : TU_LAYOUT_PADDED, &r), 0);
    assert_int_equal(tu_array_alloc(&cpu, NDF_UINT8, 3, shape), 0);
    assert_int_equal(ndf_skull_strip(s->ctx, &img.arr, h, &cpu.arr, &o), NDF_OK);
    assert_int_equal(tu_array_like(&gpu, &cpu.arr, lout ? TU_LAYOUT_PADDED : TU_LAYOUT_C, &r), 0);
    tu_dev din = {0}, dout = {0};
    tu_dev_upload(s->ctx, &din, &in);
    tu_dev_upload(s->ctx, &dout, &gpu); /* poisoned */
    const double t0 = tu_now_ms();
    assert_int_equal(ndf_skull_strip(s->ctx, &din.arr, h, &dout.arr, &o), NDF_OK);
    assert_int_equal(ndf_ctx_synchronize(s->ctx), NDF_OK);
    printf("%s: %.1f ms on the GPU\n", desc, tu_now_ms() - t0);
    assert_int_equal(tu_dev_check(s->ctx, desc, "mask", &dout, &gpu, &cpu.arr), 0);
    tu_dev_free(s->ctx, &din), tu_dev_free(s->ctx, &dout);
    tu_array_free(&img), tu_array_free(&in), tu_array_free(&cpu), tu_array_free(&gpu);
  }
}

static void test_gpu_bet_ch2(void **state) {
  gpu_state *s = *state;
  TU_SKIP_WITHOUT_CUDA(s->ctx);
  if (access(CH2, R_OK) != 0) {
    printf("skip: %s missing (Debian's mricron-data)\n", CH2);
    skip();
  }
  char err[512];
  ndfio_image img;
  assert_int_equal(ndfio_read(CH2, &img, err, sizeof err), NDF_OK);
  double h[3];
  assert_true(ndfio_nifti_spacing(&img, h));
  tu_array in, cpu, gpu;
  tu_rng r;
  tu_rng_seed(&r, s->seed);
  assert_int_equal(tu_array_relayout(&in, &img.arr, TU_LAYOUT_C, &r), 0);
  assert_int_equal(tu_array_alloc(&cpu, NDF_UINT8, 3, img.arr.shape), 0);
  assert_int_equal(tu_array_like(&gpu, &cpu.arr, TU_LAYOUT_C, &r), 0);
  ndf_skull_strip_options o;
  ndf_skull_strip_options_init(&o);
  double t0 = tu_now_ms();
  assert_int_equal(ndf_skull_strip(s->ctx, &img.arr, h, &cpu.arr, &o), NDF_OK);
  const double cpu_ms = tu_now_ms() - t0;
  tu_dev din = {0}, dout = {0};
  tu_dev_upload(s->ctx, &din, &in);
  tu_dev_upload(s->ctx, &dout, &gpu);
  double gpu_ms = 0;
  for (int rep = 0; rep < 3; rep++) { /* the first pays the compile */
    t0 = tu_now_ms();
    assert_int_equal(ndf_skull_strip(s->ctx, &din.arr, h, &dout.arr, &o), NDF_OK);
    assert_int_equal(ndf_ctx_synchronize(s->ctx), NDF_OK);
    gpu_ms = tu_now_ms() - t0;
  }
  printf("ch2 181x217x181: CPU %.0f ms, GPU %.1f ms (warm)\n", cpu_ms, gpu_ms);
  assert_int_equal(tu_dev_check(s->ctx, "ch2", "mask", &dout, &gpu, &cpu.arr), 0);
  tu_dev_free(s->ctx, &din), tu_dev_free(s->ctx, &dout);
  tu_array_free(&in), tu_array_free(&cpu), tu_array_free(&gpu);
  ndfio_image_free(&img);
}

static void test_gpu_bet_nan(void **state) {
  gpu_state *s = *state;
  TU_SKIP_WITHOUT_CUDA(s->ctx);
  const int64_t shape[3] = {20, 21, 22};
  tu_array img, gpu;
  assert_int_equal(tu_array_alloc(&img, NDF_FLOAT32, 3, shape), 0);
  for (int64_t i = 0; i < 20 * 21 * 22; i++) tu_set(&img.arr, i, (double)(i % 13));
  tu_set(&img.arr, 333, NAN);
  assert_int_equal(tu_array_alloc(&gpu, NDF_UINT8, 3, shape), 0);
  tu_poison(gpu.base, gpu.bytes);
  tu_dev din = {0}, dout = {0};
  tu_dev_upload(s->ctx, &din, &img);
  tu_dev_upload(s->ctx, &dout, &gpu);
  ndf_skull_strip_options o;
  ndf_skull_strip_options_init(&o);
  assert_int_equal(ndf_skull_strip(s->ctx, &din.arr, NULL, &dout.arr, &o), NDF_EINVAL);
  assert_non_null(strstr(ndf_errmsg(s->ctx), "NaN"));
  tu_dev_download(s->ctx, &dout, &gpu);
  assert_int_equal(tu_poison_check(gpu.base, gpu.bytes), -1); /* untouched */
  tu_dev_free(s->ctx, &din), tu_dev_free(s->ctx, &dout);
  tu_array_free(&img), tu_array_free(&gpu);
}

int main(void) {
  if (!tu_have_cuda()) return 77; /* ctest: skipped */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gpu_bet_nan),
      cmocka_unit_test(test_gpu_bet_random),
      cmocka_unit_test(test_gpu_bet_ch2),
  };
  return cmocka_run_group_tests(tests, group_setup, tu_gpu_teardown);
}
