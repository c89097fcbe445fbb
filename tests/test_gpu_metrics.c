/*
 * test_gpu_metrics.c -- the image metrics on the GPU against the CPU backend
 * (itself checked against scikit-image by test_metrics), on fresh random
 * inputs drawn here: mse, nrmse (three normalizations), psnr (given and
 * default data_range), ssim (uniform and Gaussian windows, sigmas of radius 1 to 14, 2-D and 3-D, the
 * map as float32 / float64, mean only or map only; the fused kernels and,
 * with the tunable ssim.path=composed, the filters composed), dice, jaccard and the
 * Hausdorff distance (with sampling and percentiles); every input dtype pair class, 0-2 batch
 * axes, strided and negative-stride inputs, strided results and maps.
 *
 * Equality: counts and distances (dice, jaccard, hausdorff, its percentiles
 * too) and the SSIM map bit for bit; sums (mse, nrmse, psnr, the SSIM mean)
 * to a relative 1e-12, as the GPU sums in another order.  Also: PSNR's range
 * error on the GPU (NDF_EINVAL, the result untouched), and SSIM 3-D on a
 * 96^3 float32 volume.
 *
 * Exits 77 (skipped) when the context has no CUDA device.  Cases:
 * NDF_TEST_CASES (default 150); seed: NDF_TEST_SEED (printed).  Public API only.
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
static int group_setup(void **state) { return tu_gpu_setup(state, 150); }

static const ndf_dtype DTYPES[] = {NDF_BOOL,   NDF_UINT8, NDF_INT8,    NDF_UINT16, NDF_INT16,
                                   NDF_UINT32, NDF_INT32, NDF_FLOAT32, NDF_FLOAT64};

enum { M_MSE, M_NRMSE, M_PSNR, M_SSIM, M_DICE, M_JACCARD, M_HD, M_COUNT };
static const char *MNAMES[M_COUNT] = {"mse", "nrmse", "psnr", "ssim", "dice", "jaccard", "hausdorff"};

typedef struct mcase {
  int metric, nd, nb;
  int64_t shape[NDF_MAX_NDIM];
  ndf_dtype ta, tb, tf;
  ndf_metrics_options o;
  ndf_ssim_options so;
  int want_mean, want_full;
  int composed; /* SSIM on CUDA: tunable ssim.path=composed instead of the fused default */
  char desc[512];
} mcase;

static void fill(tu_rng *rng, const ndf_array *a, int mask, double lo, double hi) {
  const int64_t n = ndf_array_size(a);
  double dlo = lo, dhi = hi;
  if (!tu_is_float(a->dtype)) {
    double tlo, thi;
    tu_int_range(a->dtype, &tlo, &thi);
    if (a->dtype == NDF_BOOL) tlo = 0, thi = 1;
    dlo = dlo < tlo ? tlo : dlo;
    dhi = dhi > thi ? thi : dhi;
  }
  for (int64_t i = 0; i < n; i++) {
    double v;
    if (mask) v = tu_rng_chance(rng, 0.3) ? 1 : 0;
    else if (tu_is_float(a->dtype)) v = dlo + (dhi - dlo) * tu_rng_unif(rng);
    else v = (double)tu_rng_int(rng, (int64_t)dlo, (int64_t)dhi);
    tu_set(a, i, v);
  }
}

/* The call of case c on a, b (either backend). */
static ndf_status run(ndf_ctx *ctx, const mcase *c, const ndf_array *a, const ndf_array *b, ndf_array *r,
                      ndf_array *full) {
  switch (c->metric) {
    case M_MSE: return ndf_mean_squared_error(ctx, a, b, r, &c->o);
    case M_NRMSE: return ndf_normalized_root_mse(ctx, a, b, r, &c->o);
    case M_PSNR: return ndf_peak_signal_noise_ratio(ctx, a, b, r, &c->o);
    case M_SSIM: return ndf_structural_similarity(ctx, a, b, c->want_mean ? r : NULL, full, &c->so);
    case M_DICE: return ndf_dice_coefficient(ctx, a, b, r, &c->o);
    case M_JACCARD: return ndf_jaccard_index(ctx, a, b, r, &c->o);
    default: return ndf_hausdorff_distance(ctx, a, b, r, &c->o);
  }
}

static int same(double w, double g, double rel) {
  if (memcmp(&w, &g, sizeof w) == 0 || (w != w && g != g)) return 1;
  return rel > 0 && !isinf(w) && fabs(g - w) <= rel * fabs(w) + 1e-300;
}

static void draw(tu_rng *rng, mcase *c) {
  memset(c, 0, sizeof *c);
  c->metric = (int)tu_rng_int(rng, 0, M_COUNT - 1);
  const int nsp = c->metric == M_SSIM ? (int)tu_rng_int(rng, 2, 3) : (int)tu_rng_int(rng, 1, 3);
  c->nb = (int)tu_rng_int(rng, 0, 2);
  c->nd = c->nb + nsp;
  ndf_metrics_options_init(&c->o);
  ndf_ssim_options_init(&c->so);
  c->o.batch_dims = c->so.batch_dims = c->nb;
  int64_t minside = 1;
  if (c->metric == M_SSIM) {
    c->so.gaussian_weights = tu_rng_chance(rng, 0.4);
    c->so.win_size = tu_rng_chance(rng, 0.5) ? 0 : (int)(2 * tu_rng_int(rng, 1, 4) + 1);
    c->so.use_sample_covariance = tu_rng_chance(rng, 0.8);
    c->so.data_range = tu_rng_chance(rng, 0.5) ? 0 : 100;
    /* Other sigmas: Gaussian radii 1, 4, 9 (the segment kernel's RAD) and 14 (the line kernel). */
    static const double SIGMAS[4] = {0.3, 1.0, 2.5, 4.0};
    if (c->so.gaussian_weights && tu_rng_chance(rng, 0.4)) c->so.sigma = SIGMAS[tu_rng_int(rng, 0, 3)];
    minside = c->so.win_size ? c->so.win_size
              : c->so.gaussian_weights ? 2 * (int64_t)(3.5 * c->so.sigma + 0.5) + 1 : 7;
    c->want_mean = tu_rng_chance(rng, 0.8);
    c->want_full = !c->want_mean || tu_rng_chance(rng, 0.7);
    c->composed = tu_rng_chance(rng, 0.5);
  }
  for (int d = 0; d < c->nd; d++)
    c->shape[d] = d < c->nb ? tu_rng_int(rng, 1, 3) : tu_rng_int(rng, minside, nsp == 3 ? minside + 14 : minside + 50);
  c->ta = DTYPES[tu_rng_int(rng, 0, 8)];
  c->tb = tu_rng_chance(rng, 0.6) ? c->ta : DTYPES[tu_rng_int(rng, 0, 8)];
  if (c->metric == M_NRMSE) c->o.normalization = (ndf_nrmse_norm)tu_rng_int(rng, 0, 2);
  if (c->metric == M_PSNR && tu_rng_chance(rng, 0.3)) c->o.data_range = 255;
  if (c->metric == M_HD && tu_rng_chance(rng, 0.5)) c->o.percentile = tu_rng_chance(rng, 0.5) ? 95 : 12.5 * (double)tu_rng_int(rng, 1, 7);
  if (c->metric == M_HD && tu_rng_chance(rng, 0.4)) {
    c->o.nsampling = nsp;
    for (int d = 0; d < nsp; d++) c->o.sampling[d] = 0.5 * (double)tu_rng_int(rng, 1, 4);
  }
  c->tf = tu_rng_chance(rng, 0.5) ? NDF_FLOAT32 : NDF_FLOAT64;
  int n = snprintf(c->desc, sizeof c->desc, "%s %s/%s shape ", MNAMES[c->metric], ndf_dtype_name(c->ta),
                   ndf_dtype_name(c->tb));
  for (int d = 0; d < c->nd; d++) n += snprintf(c->desc + n, sizeof c->desc - n, "%s%lld", d ? "x" : "", (long long)c->shape[d]);
  if (c->metric == M_SSIM && c->so.gaussian_weights) n += snprintf(c->desc + n, sizeof c->desc - n, " sigma %g", c->so.sigma);
  snprintf(c->desc + n, sizeof c->desc - n, " batch %d%s%s", c->nb,
           c->metric == M_SSIM ? (c->so.gaussian_weights ? " gaussian" : " uniform") : "",
           c->metric == M_SSIM ? (c->composed ? " composed" : " fused") : "");
}

/* One case on both backends; 0 when they agree. */
static int check_case(ndf_ctx *ctx, tu_rng *rng, const mcase *c) {
  int bad = 0;
  tu_array a0 = {0}, b0 = {0}, a = {0}, b = {0}, rc = {0}, rg = {0}, fc = {0}, fg = {0};
  const int mask = c->metric == M_DICE || c->metric == M_JACCARD || c->metric == M_HD;
  assert_int_equal(tu_array_alloc(&a0, c->ta, c->nd, c->shape), 0);
  assert_int_equal(tu_array_alloc(&b0, c->tb, c->nd, c->shape), 0);
  /* PSNR's default data_range needs float images in [-1, 1]. */
  const int unit = c->metric == M_PSNR && c->o.data_range == 0;
  fill(rng, &a0.arr, mask, unit && tu_is_float(c->ta) ? -tu_rng_int(rng, 0, 1) : -100, unit && tu_is_float(c->ta) ? 1 : 100);
  fill(rng, &b0.arr, mask, unit && tu_is_float(c->tb) ? 0 : -100, unit && tu_is_float(c->tb) ? 1 : 100);
  assert_int_equal(tu_array_relayout(&a, &a0.arr, TU_LAYOUT_PADDED | TU_LAYOUT_NEGATIVE | TU_LAYOUT_OFFSET, rng), 0);
  assert_int_equal(tu_array_relayout(&b, &b0.arr, tu_rng_chance(rng, 0.5) ? TU_LAYOUT_C : TU_LAYOUT_FORTRAN, rng), 0);
  ndf_array rl;
  memset(&rl, 0, sizeof rl);
  rl.device = NDF_DEVICE_CPU;
  rl.dtype = NDF_FLOAT64;
  rl.ndim = c->nb;
  for (int d = 0; d < c->nb; d++) rl.shape[d] = c->shape[d];
  assert_int_equal(tu_array_like(&rc, &rl, c->nb ? TU_LAYOUT_PADDED : TU_LAYOUT_C, rng), 0);
  assert_int_equal(tu_array_like(&rg, &rc.arr, c->nb ? TU_LAYOUT_PADDED : TU_LAYOUT_C, rng), 0);
  ndf_array fl = a0.arr;
  fl.dtype = c->tf;
  if (c->want_full) {
    assert_int_equal(tu_array_like(&fc, &fl, TU_LAYOUT_C, rng), 0);
    assert_int_equal(tu_array_like(&fg, &fl, TU_LAYOUT_PADDED, rng), 0);
  }
  const ndf_status sc = run(ctx, c, &a.arr, &b.arr, &rc.arr, c->want_full ? &fc.arr : NULL);
  char cmsg[600];
  snprintf(cmsg, sizeof cmsg, "%s", ndf_errmsg(ctx));
  tu_dev da, db, dr, df;
  tu_dev_upload(ctx, &da, &a);
  tu_dev_upload(ctx, &db, &b);
  tu_dev_upload(ctx, &dr, &rg);
  if (c->want_full) tu_dev_upload(ctx, &df, &fg);
  assert_int_equal(ndf_ctx_set_tunable(ctx, "ssim.path", c->composed ? "composed" : "fused"), NDF_OK);
  const ndf_status sg = run(ctx, c, &da.arr, &db.arr, &dr.arr, c->want_full ? &df.arr : NULL);
  assert_int_equal(ndf_ctx_set_tunable(ctx, "ssim.path", NULL), NDF_OK);
  if (sg == NDF_OK) assert_int_equal(ndf_ctx_synchronize(ctx), NDF_OK);
  if (sc != sg) {
    printf("%s: CPU %s (%s), GPU %s (%s)\n", c->desc, ndf_status_name(sc), cmsg, ndf_status_name(sg), ndf_errmsg(ctx));
    bad = 1;
  } else if (sc == NDF_OK) {
    tu_dev_download(ctx, &dr, &rg);
    const double rel = mask ? 0 : 1e-12;
    const int64_t nimg = ndf_array_size(&rc.arr);
    for (int64_t i = 0; i < nimg && (c->metric != M_SSIM || c->want_mean); i++) {
      const double w = tu_get(&rc.arr, i), g = tu_get(&rg.arr, i);
      if (!(c->metric == M_SSIM ? fabs(w - g) <= 1e-12 || (w != w && g != g) : same(w, g, rel))) {
        printf("%s: image %lld: CPU %.17g GPU %.17g\n", c->desc, (long long)i, w, g);
        bad = 1;
        break;
      }
    }
    if (tu_check_gaps(&rg) >= 0) {
      printf("%s: the GPU wrote into the result's gaps\n", c->desc);
      bad = 1;
    }
    if (c->want_full) bad |= tu_dev_check(ctx, c->desc, "SSIM map values", &df, &fg, &fc.arr);
  }
  tu_dev_free(ctx, &da);
  tu_dev_free(ctx, &db);
  tu_dev_free(ctx, &dr);
  if (c->want_full) tu_dev_free(ctx, &df);
  tu_array_free(&a0);
  tu_array_free(&b0);
  tu_array_free(&a);
  tu_array_free(&b);
  tu_array_free(&rc);
  tu_array_free(&rg);
  tu_array_free(&fc);
  tu_array_free(&fg);
  return bad;
}

static void test_gpu_metrics_random(void **state) {
  gpu_state *s = *state;
  tu_rng rng;
  tu_rng_seed(&rng, s->seed);
  int failed = 0;
  for (long i = 0; i < s->ncases; i++) {
    mcase c;
    draw(&rng, &c);
    failed += check_case(s->ctx, &rng, &c);
  }
  if (failed) printf("%d of %ld cases failed (seed %llu)\n", failed, s->ncases, (unsigned long long)s->seed);
  assert_int_equal(failed, 0);
}

/* PSNR's range error on CUDA arrays: NDF_EINVAL, the result untouched. */
static void test_gpu_metrics_errors(void **state) {
  gpu_state *s = *state;
  ndf_ctx *ctx = s->ctx;
  const int64_t shape[2] = {2, 50};
  tu_array a = {0}, r = {0};
  assert_int_equal(tu_array_alloc(&a, NDF_FLOAT32, 2, shape), 0);
  for (int64_t i = 0; i < 100; i++) tu_set(&a.arr, i, i == 77 ? 1.5 : 0.01 * (double)(i % 50));
  assert_int_equal(tu_array_alloc(&r, NDF_FLOAT64, 1, shape), 0);
  tu_poison(r.base, r.bytes);
  tu_dev da, dr;
  tu_dev_upload(ctx, &da, &a);
  tu_dev_upload(ctx, &dr, &r);
  ndf_metrics_options o;
  ndf_metrics_options_init(&o);
  o.batch_dims = 1;
  assert_int_equal(ndf_peak_signal_noise_ratio(ctx, &da.arr, &da.arr, &dr.arr, &o), NDF_EINVAL);
  assert_non_null(strstr(ndf_errmsg(ctx), "'data_range'"));
  tu_dev_download(ctx, &dr, &r);
  assert_true(tu_poison_check(r.base, r.bytes) < 0);
  tu_dev_free(ctx, &da);
  tu_dev_free(ctx, &dr);
  tu_array_free(&a);
  tu_array_free(&r);
}

/* SSIM 3-D on a 96^3 float32 volume (several blocks per image, the bench's shape class), fused and
 * composed, Gaussian sigma 1.5 and 2.5. */
static void test_gpu_metrics_ssim_volume(void **state) {
  gpu_state *s = *state;
  tu_rng rng;
  tu_rng_seed(&rng, s->seed + 1);
  mcase c;
  memset(&c, 0, sizeof c);
  c.metric = M_SSIM;
  c.nd = 3;
  c.shape[0] = c.shape[1] = c.shape[2] = 96;
  c.ta = c.tb = c.tf = NDF_FLOAT32;
  ndf_metrics_options_init(&c.o);
  ndf_ssim_options_init(&c.so);
  c.so.data_range = 1;
  c.want_mean = c.want_full = 1;
  for (int k = 0; k < 6; k++) {
    c.so.gaussian_weights = k >= 2;
    c.so.sigma = k >= 4 ? 2.5 : 1.5; /* radius 9: the segment kernel at another RAD */
    c.composed = k % 2;
    snprintf(c.desc, sizeof c.desc, "ssim float32 96^3 %s sigma %g %s", k >= 2 ? "gaussian" : "uniform", c.so.sigma,
             k % 2 ? "composed" : "fused");
    assert_int_equal(check_case(s->ctx, &rng, &c), 0);
  }
}

int main(void) {
  if (!tu_have_cuda()) return 77; /* ctest: skipped */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gpu_metrics_random),
      cmocka_unit_test(test_gpu_metrics_errors),
      cmocka_unit_test(test_gpu_metrics_ssim_volume),
  };
  return cmocka_run_group_tests(tests, group_setup, tu_gpu_teardown);
}
