/*
 * test_n4.c -- N4 bias-field correction on the CPU backend
 * (ndf_n4_bias_field_correction):
 *   - real data: Debian's mricron-data ch2 (T1 MRI, 181x217x181) times a
 *     known smooth bias field (40% variation inside the brain of ch2bet):
 *     the recovered log field correlates with the true one at least 0.95,
 *     and at least as well as SimpleITK's N4 with the same parameters
 *     (tests/oracle_n4.py; that part skips without SimpleITK), with which
 *     it agrees voxel for voxel up to a constant;
 *   - the result: iterations per level within their maxima, the output
 *     equal to input / exp(log field);
 *   - layouts (Fortran, padded, negative strides) and thread counts give
 *     the same bits; a weight image of ones is no weight image;
 *   - the contract: every rejected option and array (NDF_EINVAL, the
 *     outputs untouched).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "ndfio.h"
#include "testutil.h"

#define CH2 "/usr/share/mricron/templates/ch2.nii.gz"
#define CH2BET "/usr/share/mricron/templates/ch2bet.nii.gz"

static ndf_ctx *new_ctx(int threads) {
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  o.backend = NDF_BACKEND_CPU;
  o.cache_disable = 1;
  o.cpu_threads = threads;
  ndf_ctx *ctx = NULL;
  assert_int_equal(ndf_ctx_create(&ctx, &o), NDF_OK);
  return ctx;
}

/* Pearson correlation of a and b (flat C order, any strides) over the voxels where mask != 0. */
static double corr(const ndf_array *a, const ndf_array *b, const ndf_array *mask) {
  const int64_t n = ndf_array_size(a);
  double sa = 0, sb = 0, cnt = 0;
  for (int64_t i = 0; i < n; i++)
    if (tu_get(mask, i) != 0) {
      sa += tu_get(a, i);
      sb += tu_get(b, i);
      cnt += 1;
    }
  const double ma = sa / cnt, mb = sb / cnt;
  double ab = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < n; i++)
    if (tu_get(mask, i) != 0) {
      const double x = tu_get(a, i) - ma, y = tu_get(b, i) - mb;
      ab += x * y;
      aa += x * x;
      bb += y * y;
    }
  return ab / sqrt(aa * bb);
}

/* The largest |(a - b) - mean(a - b)| over the mask: fields equal up to a constant. */
static double centred_diff(const ndf_array *a, const ndf_array *b, const ndf_array *mask) {
  const int64_t n = ndf_array_size(a);
  double s = 0, cnt = 0, e = 0;
  for (int64_t i = 0; i < n; i++)
    if (tu_get(mask, i) != 0) {
      s += tu_get(a, i) - tu_get(b, i);
      cnt += 1;
    }
  for (int64_t i = 0; i < n; i++)
    if (tu_get(mask, i) != 0) e = fmax(e, fabs(tu_get(a, i) - tu_get(b, i) - s / cnt));
  return e;
}

/* log b at voxel idx of shape sh: 0.7 (0.25 c2 + 0.15 c1^2 - 0.1 c0 + 0.1 c0 c2), c_d in [-1, 1]
 * along axis d (before centring). */
static double bias(const int64_t *idx, const int64_t *sh) {
  double c[3];
  for (int d = 0; d < 3; d++) c[d] = -1.0 + 2.0 * (double)idx[d] / (double)(sh[d] - 1);
  return 0.7 * (0.25 * c[2] + 0.15 * c[1] * c[1] - 0.1 * c[0] + 0.1 * c[0] * c[2]);
}

static int exists(const char *p) {
  struct stat st;
  return stat(p, &st) == 0;
}

static void test_ch2(void **state) {
  (void)state;
  if (!exists(CH2) || !exists(CH2BET)) {
    print_message("no %s (Debian's mricron-data): skipped\n", CH2);
    skip();
  }
  char err[1024];
  ndfio_image t1 = {0}, bet = {0};
  assert_int_equal(ndfio_read(CH2, &t1, err, sizeof err), NDF_OK);
  assert_int_equal(ndfio_read(CH2BET, &bet, err, sizeof err), NDF_OK);
  assert_int_equal(t1.arr.ndim, 3);
  const int64_t *sh = t1.arr.shape;
  tu_array in, mask, truth, out, logb;
  assert_int_equal(tu_array_alloc(&in, NDF_FLOAT32, 3, sh), 0);
  assert_int_equal(tu_array_alloc(&mask, NDF_UINT8, 3, sh), 0);
  assert_int_equal(tu_array_alloc(&truth, NDF_FLOAT64, 3, sh), 0);
  assert_int_equal(tu_array_alloc(&out, NDF_FLOAT32, 3, sh), 0);
  assert_int_equal(tu_array_alloc(&logb, NDF_FLOAT64, 3, sh), 0);
  const int64_t n = ndf_array_size(&t1.arr);
  double mean = 0, cnt = 0;
  for (int64_t i = 0; i < n; i++) {
    const int64_t idx[3] = {i / (sh[1] * sh[2]), i / sh[2] % sh[1], i % sh[2]};
    const int inside = tu_get(&bet.arr, i) > 0;
    tu_set(&mask.arr, i, inside);
    tu_set(&truth.arr, i, bias(idx, sh));
    if (inside) {
      mean += bias(idx, sh);
      cnt += 1;
    }
  }
  mean /= cnt;
  for (int64_t i = 0; i < n; i++) {
    const double b = tu_get(&truth.arr, i) - mean;
    tu_set(&truth.arr, i, b);
    tu_set(&in.arr, i, (float)(tu_get(&t1.arr, i) * exp(b)));
  }
  ndf_ctx *ctx = new_ctx(0);
  ndf_n4_options o;
  ndf_n4_options_init(&o);
  o.number_of_fitting_levels = 2;
  o.shrink_factor = 4;
  ndf_n4_result res;
  assert_int_equal(ndf_n4_bias_field_correction(ctx, &in.arr, &mask.arr, NULL, &out.arr, &logb.arr, &o, &res), NDF_OK);
  const double c_ndf = corr(&logb.arr, &truth.arr, &mask.arr);
  print_message("ch2 x bias (40%%), shrink 4, 2 levels: iterations %d,%d, convergence %g, correlation %.4f\n",
                res.iterations[0], res.iterations[1], res.convergence, c_ndf);
  assert_true(c_ndf >= 0.95);
  for (int l = 0; l < 2; l++) assert_true(res.iterations[l] >= 1 && res.iterations[l] <= 50);
  /* output = input / exp(log b) */
  for (int64_t i = 0; i < n; i += 997) {
    const double want = (double)(float)(tu_get(&in.arr, i) / exp(tu_get(&logb.arr, i)));
    assert_true(fabs(tu_get(&out.arr, i) - want) <= 1e-6 * fabs(want) + 1e-30);
  }

  /* SimpleITK's N4 on the same volume */
  char dir[4096], path[4200];
  assert_int_equal(tu_mkdtemp(dir, sizeof dir, "test_n4"), 0);
  snprintf(path, sizeof path, "%s/input.npy", dir);
  assert_int_equal(ndfio_npy_write(path, &in.arr, err, sizeof err), NDF_OK);
  snprintf(path, sizeof path, "%s/mask.npy", dir);
  assert_int_equal(ndfio_npy_write(path, &mask.arr, err, sizeof err), NDF_OK);
  snprintf(path, sizeof path, "%s/params.txt", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f, "shrink 4\niterations 50,50\n");
  fclose(f);
  const int ran = tu_run_oracle(NDF_TEST_PYTHON, NDF_TEST_ORACLE, dir, 0, 1) == 0;
  snprintf(path, sizeof path, "%s/sitk_logb.npy", dir);
  ndfio_image sl = {0};
  if (!ran) {
    print_message("oracle_n4.py failed (no python3 with numpy?): SimpleITK comparison skipped\n");
  } else if (!exists(path)) {
    print_message("SimpleITK not installed (pip install SimpleITK): comparison skipped\n");
  } else {
    assert_int_equal(ndfio_read(path, &sl, err, sizeof err), NDF_OK);
    const double c_sitk = corr(&sl.arr, &truth.arr, &mask.arr);
    const double d = centred_diff(&sl.arr, &logb.arr, &mask.arr);
    print_message("SimpleITK: correlation %.4f; the two log fields differ by at most %.2g (up to a constant)\n",
                  c_sitk, d);
    assert_true(c_ndf >= c_sitk - 1e-3);
    assert_true(d <= 0.01);
    ndfio_image_free(&sl);
  }
  tu_rmtree(dir);
  ndf_ctx_destroy(ctx);
  ndfio_image_free(&t1);
  ndfio_image_free(&bet);
  tu_array_free(&in);
  tu_array_free(&mask);
  tu_array_free(&truth);
  tu_array_free(&out);
  tu_array_free(&logb);
}

/* A small volume with a smooth bias over a random blob mask: values 20..220 times exp(field). */
static void small_case(tu_rng *r, int nd, const int64_t *sh, tu_array *in, tu_array *mask) {
  assert_int_equal(tu_array_alloc(in, NDF_FLOAT64, nd, sh), 0);
  assert_int_equal(tu_array_alloc(mask, NDF_UINT8, nd, sh), 0);
  const int64_t n = ndf_array_size(&in->arr);
  for (int64_t i = 0; i < n; i++) {
    int64_t q = i;
    double s = 0.0, rr = 0.0;
    for (int d = nd - 1; d >= 0; d--) {
      const double c = -1.0 + 2.0 * (double)(q % sh[d]) / (double)(sh[d] > 1 ? sh[d] - 1 : 1);
      q /= sh[d];
      s += (0.2 + 0.05 * d) * c;
      rr += c * c;
    }
    const double tissue = tu_rng_chance(r, 0.5) ? 60.0 : 150.0;
    tu_set(&in->arr, i, (tissue + 20.0 * tu_rng_normal(r) + 60.0) * exp(s));
    tu_set(&mask->arr, i, rr < 0.9 * nd ? 1 : 0);
  }
}

static void run(ndf_ctx *ctx, const ndf_array *in, const ndf_array *mask, const ndf_array *w, ndf_array *out,
                ndf_array *lb, const ndf_n4_options *o) {
  ndf_status s = ndf_n4_bias_field_correction(ctx, in, mask, w, out, lb, o, NULL);
  if (s != NDF_OK) fail_msg("%s", ndf_errmsg(ctx));
}

static void test_layouts_threads(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_seed(&r, tu_seed("test_n4.layouts"));
  const int64_t sh3[3] = {21, 18, 15}, sh2[2] = {40, 33};
  for (int t = 0; t < 2; t++) {
    const int nd = t ? 2 : 3;
    const int64_t *sh = t ? sh2 : sh3;
    tu_array in, mask, ref, refl;
    small_case(&r, nd, sh, &in, &mask);
    assert_int_equal(tu_array_alloc(&ref, NDF_FLOAT64, nd, sh), 0);
    assert_int_equal(tu_array_alloc(&refl, NDF_FLOAT32, nd, sh), 0);
    ndf_n4_options o;
    ndf_n4_options_init(&o);
    o.number_of_fitting_levels = 3;
    o.maximum_number_of_iterations[0] = o.maximum_number_of_iterations[1] = o.maximum_number_of_iterations[2] = 10;
    o.shrink_factor = t ? 3 : 2;
    ndf_ctx *c1 = new_ctx(1), *c2 = new_ctx(2);
    run(c1, &in.arr, &mask.arr, NULL, &ref.arr, &refl.arr, &o);
    /* two threads; then every layout of the input, the mask and the outputs */
    for (int layout = -1; layout <= 4; layout++) {
      const int lay = layout < 0 ? TU_LAYOUT_C
                      : layout == 0 ? TU_LAYOUT_FORTRAN
                      : layout == 1 ? TU_LAYOUT_PADDED
                      : layout == 2 ? (TU_LAYOUT_PADDED | TU_LAYOUT_NEGATIVE)
                      : layout == 3 ? (TU_LAYOUT_PADDED | TU_LAYOUT_OFFSET)
                                    : TU_LAYOUT_C;
      tu_array li, lm, lo, ll, ones;
      assert_int_equal(tu_array_relayout(&li, &in.arr, lay, &r), 0);
      assert_int_equal(tu_array_relayout(&lm, &mask.arr, lay, &r), 0);
      assert_int_equal(tu_array_like(&lo, &ref.arr, lay & ~TU_LAYOUT_NEGATIVE, &r), 0);
      assert_int_equal(tu_array_like(&ll, &refl.arr, lay & ~TU_LAYOUT_NEGATIVE, &r), 0);
      const ndf_array *w = NULL;
      if (layout == 4) { /* a weight image of ones is no weight image */
        assert_int_equal(tu_array_alloc(&ones, NDF_FLOAT32, nd, sh), 0);
        for (int64_t i = 0; i < ndf_array_size(&ones.arr); i++) tu_set(&ones.arr, i, 1.0);
        w = &ones.arr;
      }
      run(layout < 0 ? c2 : c1, &li.arr, &lm.arr, w, &lo.arr, &ll.arr, &o);
      char msg[512];
      if (tu_compare(&ref.arr, &lo.arr, msg, sizeof msg)) fail_msg("layout %d: output %s", layout, msg);
      if (tu_compare(&refl.arr, &ll.arr, msg, sizeof msg)) fail_msg("layout %d: log field %s", layout, msg);
      assert_true(tu_check_gaps(&lo) < 0);
      assert_true(tu_check_gaps(&ll) < 0);
      tu_array_free(&li);
      tu_array_free(&lm);
      tu_array_free(&lo);
      tu_array_free(&ll);
      if (w) tu_array_free(&ones);
    }
    ndf_ctx_destroy(c1);
    ndf_ctx_destroy(c2);
    tu_array_free(&in);
    tu_array_free(&mask);
    tu_array_free(&ref);
    tu_array_free(&refl);
  }
}

/* The call rejects opt-mutated options or arrays with NDF_EINVAL and a message holding want;
 * the outputs stay poisoned. */
static void expect_einval(ndf_ctx *ctx, const ndf_array *in, const ndf_array *mask, const ndf_array *w,
                          tu_array *out, tu_array *lb, const ndf_n4_options *o, const char *want) {
  tu_poison(out->base, out->bytes);
  tu_poison(lb->base, lb->bytes);
  const ndf_status s = ndf_n4_bias_field_correction(ctx, in, mask, w, &out->arr, &lb->arr, o, NULL);
  if (s != NDF_EINVAL) fail_msg("expected NDF_EINVAL for '%s', got %s (%s)", want, ndf_status_name(s), ndf_errmsg(ctx));
  if (!strstr(ndf_errmsg(ctx), want)) fail_msg("message '%s' lacks '%s'", ndf_errmsg(ctx), want);
  assert_true(tu_poison_check(out->base, out->bytes) < 0);
  assert_true(tu_poison_check(lb->base, lb->bytes) < 0);
}

static void test_contract(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_seed(&r, tu_seed("test_n4.contract"));
  const int64_t sh[3] = {9, 8, 7}, sh2[3] = {9, 8, 6};
  tu_array in, mask, out, lb, m16, wi, o2, oi;
  small_case(&r, 3, sh, &in, &mask);
  assert_int_equal(tu_array_alloc(&out, NDF_FLOAT32, 3, sh), 0);
  assert_int_equal(tu_array_alloc(&lb, NDF_FLOAT64, 3, sh), 0);
  assert_int_equal(tu_array_alloc(&m16, NDF_UINT16, 3, sh), 0);
  assert_int_equal(tu_array_alloc(&wi, NDF_INT32, 3, sh), 0);
  assert_int_equal(tu_array_alloc(&o2, NDF_FLOAT32, 3, sh2), 0);
  assert_int_equal(tu_array_alloc(&oi, NDF_INT16, 3, sh), 0);
  ndf_ctx *ctx = new_ctx(1);
  ndf_n4_options d, o;
  ndf_n4_options_init(&d);
#define BAD(mutate, want)                                               \
  do {                                                                  \
    o = d;                                                              \
    mutate;                                                             \
    expect_einval(ctx, &in.arr, &mask.arr, NULL, &out, &lb, &o, want); \
  } while (0)
  BAD(o.number_of_fitting_levels = 0, "number_of_fitting_levels");
  BAD(o.number_of_fitting_levels = NDF_N4_MAX_LEVELS + 1, "number_of_fitting_levels");
  BAD(o.maximum_number_of_iterations[2] = -1, "maximum_number_of_iterations");
  BAD(o.convergence_threshold = -0.1, "convergence_threshold");
  BAD(o.convergence_threshold = NAN, "convergence_threshold");
  BAD(o.spline_order = 0, "spline_order");
  BAD(o.spline_order = 6, "spline_order");
  BAD(o.number_of_control_points[0] = 3, "number_of_control_points");
  BAD((o.nnumber_of_control_points = 2, o.number_of_control_points[1] = 5), "number_of_control_points");
  BAD((o.number_of_control_points[0] = 4000, o.number_of_fitting_levels = 12), "number_of_fitting_levels");
  BAD(o.bias_field_full_width_at_half_maximum = 0, "bias_field_full_width_at_half_maximum");
  BAD(o.bias_field_full_width_at_half_maximum = INFINITY, "bias_field_full_width_at_half_maximum");
  BAD(o.wiener_filter_noise = -1e-3, "wiener_filter_noise");
  BAD(o.number_of_histogram_bins = 1, "number_of_histogram_bins");
  BAD(o.shrink_factor = 0, "shrink_factor");
  BAD((o.nspacing = 3, o.spacing[1] = 0), "spacing");
  BAD(o.nspacing = 2, "spacing");
  BAD(o.mask_label = 256, "mask_label");
  BAD(o.mask_label = 7, "mask"); /* no voxel of the mask equals 7 */
#undef BAD
  expect_einval(ctx, &in.arr, &mask.arr, NULL, &out, &lb, NULL, "opt");
  expect_einval(ctx, &in.arr, &m16.arr, NULL, &out, &lb, &d, "mask");
  expect_einval(ctx, &in.arr, &mask.arr, &wi.arr, &out, &lb, &d, "weight");
  expect_einval(ctx, &in.arr, &mask.arr, NULL, &o2, &lb, &d, "output");
  expect_einval(ctx, &in.arr, &mask.arr, NULL, &oi, &lb, &d, "output");
  expect_einval(ctx, &in.arr, &mask.arr, NULL, &out, &o2, &d, "log_bias_field");
  /* nothing inside: a zero mask, or an input <= 0 */
  tu_array zero;
  assert_int_equal(tu_array_alloc(&zero, NDF_UINT8, 3, sh), 0);
  expect_einval(ctx, &in.arr, &zero.arr, NULL, &out, &lb, &d, "no voxel");
  tu_array neg;
  assert_int_equal(tu_array_alloc(&neg, NDF_FLOAT64, 3, sh), 0);
  for (int64_t i = 0; i < ndf_array_size(&neg.arr); i++) tu_set(&neg.arr, i, -1.0 - (double)i);
  expect_einval(ctx, &neg.arr, NULL, NULL, &out, &lb, &d, "no voxel");
  /* the output overlapping the input */
  tu_array f32;
  assert_int_equal(tu_array_alloc(&f32, NDF_FLOAT32, 3, sh), 0);
  for (int64_t i = 0; i < ndf_array_size(&f32.arr); i++) tu_set(&f32.arr, i, 1.0 + (double)(i % 7));
  tu_poison(lb.base, lb.bytes);
  assert_int_equal(ndf_n4_bias_field_correction(ctx, &f32.arr, NULL, NULL, &f32.arr, NULL, &d, NULL), NDF_EINVAL);
  assert_non_null(strstr(ndf_errmsg(ctx), "overlaps"));
  tu_array_free(&f32);
  tu_array_free(&neg);
  tu_array_free(&zero);
  ndf_ctx_destroy(ctx);
  tu_array_free(&in);
  tu_array_free(&mask);
  tu_array_free(&out);
  tu_array_free(&lb);
  tu_array_free(&m16);
  tu_array_free(&wi);
  tu_array_free(&o2);
  tu_array_free(&oi);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_contract),
      cmocka_unit_test(test_layouts_threads),
      cmocka_unit_test(test_ch2),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
