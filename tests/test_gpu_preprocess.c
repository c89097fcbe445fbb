/*
 * test_gpu_preprocess.c -- the preprocessing steps on the GPU against the CPU
 * backend (itself checked by test_preprocess), on fresh random volumes drawn
 * here: reorientation to RAS+ under random flipped, permuted and oblique
 * affines (every input dtype, a batch axis sometimes, padded and
 * negative-stride inputs), resampling to random spacings (orders 0, 1 and 3,
 * float32 and float64 outputs), the mask's bounding box (float32, uint8 and
 * bool masks, empty ones too) and crops, and the per-modality normalization
 * (CT window bit for bit; MRI z-scores in a mask to 1e-9 of the output's
 * scale, their float64 sums running in another order).  Outputs are poisoned
 * first; tu_dev_check compares bit for bit and checks the poison of the
 * layout's gaps.  Exits 77 (skipped) when the context has no CUDA device.
 * Cases: NDF_TEST_CASES (default 100); seed: NDF_TEST_SEED (printed).
 * Public API only.
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

static int group_setup(void **state) { return tu_gpu_setup(state, 100); }

static const ndf_dtype DTYPES[] = {NDF_UINT8, NDF_INT8, NDF_UINT16, NDF_INT16, NDF_UINT32, NDF_INT32, NDF_FLOAT32,
                                   NDF_FLOAT64};

static void fill(tu_rng *r, tu_array *t) {
  double lo = -1000, hi = 1000;
  if (!tu_is_float(t->arr.dtype)) tu_int_range(t->arr.dtype, &lo, &hi);
  lo = fmax(lo, -1000);
  hi = fmin(hi, 1000);
  for (int64_t e = 0; e < ndf_array_size(&t->arr); e++)
    tu_set(&t->arr, e, tu_is_float(t->arr.dtype) ? lo + (hi - lo) * tu_rng_unif(r) : (double)tu_rng_int(r, (int64_t)lo, (int64_t)hi));
}

/* The input in a random layout on the device (hin), the output poisoned on the device (dout). */
static void test_gpu_reorient_resample_crop(void **state) {
  tu_gpu_state *s = *state;
  TU_SKIP_WITHOUT_CUDA(s->ctx);
  ndf_ctx *cpu;
  ndf_ctx_options co;
  ndf_ctx_options_init(&co);
  co.backend = NDF_BACKEND_CPU;
  assert_int_equal(ndf_ctx_create(&cpu, &co), NDF_OK);
  tu_rng r;
  tu_rng_seed(&r, s->seed);
  long bad = 0;
  for (long c = 0; c < s->ncases; c++) {
    const int nb = tu_rng_chance(&r, 0.2) ? 1 : 0;
    int64_t shape[4];
    for (int d = 0; d < nb + 3; d++) shape[d] = tu_rng_int(&r, 1, c % 10 == 0 ? 40 : 12);
    const ndf_dtype dt = DTYPES[tu_rng_int(&r, 0, 7)];
    double a[16];
    tu_random_affine(&r, a, tu_rng_chance(&r, 0.5) ? 0 : 1, 50);
    tu_array hin, lin;
    assert_int_equal(tu_array_alloc(&hin, dt, nb + 3, shape), 0);
    fill(&r, &hin);
    const int layout = (int)tu_rng_int(&r, 0, 2) == 0 ? 0 : TU_LAYOUT_PADDED | (tu_rng_chance(&r, 0.5) ? TU_LAYOUT_NEGATIVE : 0);
    assert_int_equal(tu_array_relayout(&lin, &hin.arr, layout, &r), 0);
    tu_dev din = {0};
    tu_dev_upload(s->ctx, &din, &lin);
    char desc[160];
    /* reorient */
    int64_t osh[4];
    for (int d = 0; d < nb; d++) osh[d] = shape[d];
    assert_int_equal(ndf_reorient_ras_plan(&shape[nb], a, &osh[nb], NULL, NULL, NULL), NDF_OK);
    tu_array want, got;
    assert_int_equal(tu_array_alloc(&want, dt, nb + 3, osh), 0);
    assert_int_equal(ndf_reorient_ras(cpu, &hin.arr, a, &want.arr), NDF_OK);
    assert_int_equal(tu_array_like(&got, &want.arr, TU_LAYOUT_C, &r), 0);
    tu_dev dout = {0};
    tu_dev_upload(s->ctx, &dout, &got);
    snprintf(desc, sizeof desc, "case %ld reorient %s %s", c, ndf_dtype_name(dt), tu_shape_str(&hin.arr, (char[64]){0}, 64));
    ndf_status st = ndf_reorient_ras(s->ctx, &din.arr, a, &dout.arr);
    if (st != NDF_OK) fail_msg("%s: %s", desc, ndf_errmsg(s->ctx));
    bad += tu_dev_check(s->ctx, desc, "output", &dout, &got, &want.arr);
    tu_dev_free(s->ctx, &dout);
    tu_array_free(&want);
    tu_array_free(&got);
    /* resample */
    double sp[3], nsp[3];
    assert_int_equal(ndf_affine_spacing(a, sp), NDF_OK);
    for (int d = 0; d < 3; d++) nsp[d] = 0.5 + 2.5 * tu_rng_unif(&r);
    ndf_interp_options io;
    ndf_interp_options_init(&io);
    io.order = (int)(c % 3 == 2 ? 3 : c % 3);
    io.mode = NDF_INTERP_NEAREST;
    io.batch_dims = nb;
    assert_int_equal(ndf_resample_plan(3, &shape[nb], sp, nsp, &osh[nb], NULL, NULL), NDF_OK);
    const ndf_dtype odt = c % 2 ? NDF_FLOAT32 : NDF_FLOAT64;
    assert_int_equal(tu_array_alloc(&want, odt, nb + 3, osh), 0);
    assert_int_equal(ndf_resample(cpu, &hin.arr, &want.arr, sp, nsp, &io), NDF_OK);
    assert_int_equal(tu_array_like(&got, &want.arr, tu_rng_chance(&r, 0.5) ? TU_LAYOUT_PADDED : 0, &r), 0);
    tu_dev_upload(s->ctx, &dout, &got);
    snprintf(desc, sizeof desc, "case %ld resample order %d %s", c, io.order, ndf_dtype_name(dt));
    st = ndf_resample(s->ctx, &din.arr, &dout.arr, sp, nsp, &io);
    if (st != NDF_OK) fail_msg("%s: %s", desc, ndf_errmsg(s->ctx));
    bad += tu_dev_check(s->ctx, desc, "output", &dout, &got, &want.arr);
    tu_dev_free(s->ctx, &dout);
    tu_array_free(&want);
    tu_array_free(&got);
    /* the bounding box of a sparse mask, and the crop it gives */
    tu_array hm;
    const ndf_dtype mdt = c % 3 == 0 ? NDF_FLOAT32 : c % 3 == 1 ? NDF_UINT8 : NDF_BOOL;
    assert_int_equal(tu_array_alloc(&hm, mdt, 3, &shape[nb]), 0);
    const double p = c % 7 == 0 ? 0 : 0.05 * tu_rng_unif(&r);
    for (int64_t e = 0; e < ndf_array_size(&hm.arr); e++)
      if (tu_rng_chance(&r, p)) tu_set(&hm.arr, e, 1);
    tu_dev dm = {0};
    tu_dev_upload(s->ctx, &dm, &hm);
    int64_t lo[3], hi[3], n, glo[3], ghi[3], gn;
    assert_int_equal(ndf_mask_bbox(cpu, &hm.arr, lo, hi, &n), NDF_OK);
    assert_int_equal(ndf_mask_bbox(s->ctx, &dm.arr, glo, ghi, &gn), NDF_OK);
    assert_int_equal(gn, n);
    for (int d = 0; d < 3; d++) {
      assert_int_equal(glo[d], lo[d]);
      assert_int_equal(ghi[d], hi[d]);
    }
    if (n > 0 && dt != NDF_BOOL) {
      const int64_t mg = tu_rng_int(&r, 0, 3);
      int64_t st0[3];
      assert_int_equal(ndf_crop_plan(3, &shape[nb], lo, hi, 1, &mg, st0, &osh[nb], NULL, NULL), NDF_OK);
      assert_int_equal(tu_array_alloc(&want, dt, nb + 3, osh), 0);
      assert_int_equal(ndf_crop(cpu, &hin.arr, st0, &want.arr), NDF_OK);
      assert_int_equal(tu_array_like(&got, &want.arr, TU_LAYOUT_C, &r), 0);
      tu_dev_upload(s->ctx, &dout, &got);
      snprintf(desc, sizeof desc, "case %ld crop %s", c, ndf_dtype_name(dt));
      st = ndf_crop(s->ctx, &din.arr, st0, &dout.arr);
      if (st != NDF_OK) fail_msg("%s: %s", desc, ndf_errmsg(s->ctx));
      bad += tu_dev_check(s->ctx, desc, "output", &dout, &got, &want.arr);
      tu_dev_free(s->ctx, &dout);
      tu_array_free(&want);
      tu_array_free(&got);
    }
    tu_dev_free(s->ctx, &dm);
    tu_array_free(&hm);
    tu_dev_free(s->ctx, &din);
    tu_array_free(&hin);
    tu_array_free(&lin);
  }
  ndf_ctx_destroy(cpu);
  assert_int_equal(bad, 0);
}

static void test_gpu_normalize(void **state) {
  tu_gpu_state *s = *state;
  TU_SKIP_WITHOUT_CUDA(s->ctx);
  ndf_ctx *cpu;
  ndf_ctx_options co;
  ndf_ctx_options_init(&co);
  co.backend = NDF_BACKEND_CPU;
  assert_int_equal(ndf_ctx_create(&cpu, &co), NDF_OK);
  tu_rng r;
  tu_rng_seed(&r, s->seed + 1);
  long bad = 0;
  for (long c = 0; c < s->ncases; c++) {
    int64_t shape[3];
    for (int d = 0; d < 3; d++) shape[d] = tu_rng_int(&r, 1, 20);
    const ndf_dtype dt = DTYPES[tu_rng_int(&r, 0, 7)];
    tu_array hx, hm, want, got;
    assert_int_equal(tu_array_alloc(&hx, dt, 3, shape), 0);
    assert_int_equal(tu_array_alloc(&hm, NDF_UINT8, 3, shape), 0);
    fill(&r, &hx);
    for (int64_t e = 0; e < ndf_array_size(&hm.arr); e++) tu_set(&hm.arr, e, tu_rng_chance(&r, 0.5));
    tu_set(&hm.arr, 0, 1);
    ndf_normalize_options o;
    ndf_normalize_options_init(&o);
    o.modality = c % 2 ? NDF_MODALITY_CT : NDF_MODALITY_MRI;
    if (c % 4 == 1) o.preset = "bone";
    const ndf_dtype odt = c % 3 ? NDF_FLOAT32 : NDF_FLOAT64;
    assert_int_equal(tu_array_alloc(&want, odt, 3, shape), 0);
    assert_int_equal(ndf_normalize_modality(cpu, &hx.arr, &hm.arr, &want.arr, &o), NDF_OK);
    assert_int_equal(tu_array_like(&got, &want.arr, TU_LAYOUT_C, &r), 0);
    tu_dev dx = {0}, dm = {0}, dout = {0};
    tu_dev_upload(s->ctx, &dx, &hx);
    tu_dev_upload(s->ctx, &dm, &hm);
    tu_dev_upload(s->ctx, &dout, &got);
    assert_int_equal(ndf_normalize_modality(s->ctx, &dx.arr, &dm.arr, &dout.arr, &o), NDF_OK);
    char desc[128];
    snprintf(desc, sizeof desc, "case %ld normalize %s %s", c, ndf_modality_name(o.modality), ndf_dtype_name(dt));
    if (o.modality == NDF_MODALITY_CT) {
      bad += tu_dev_check(s->ctx, desc, "output", &dout, &got, &want.arr);
    } else { /* z-scores: float64 sums in another order */
      tu_dev_download(s->ctx, &dout, &got);
      for (int64_t e = 0; e < ndf_array_size(&want.arr); e++) {
        const double w = tu_get(&want.arr, e), g = tu_get(&got.arr, e);
        if (!(fabs(w - g) <= 1e-9 * (1 + fabs(w)) || (odt == NDF_FLOAT32 && fabs(w - g) <= 1e-6 * (1 + fabs(w))))) {
          printf("%s: voxel %lld: GPU %.17g, CPU %.17g\n", desc, (long long)e, g, w);
          bad++;
          break;
        }
      }
    }
    tu_dev_free(s->ctx, &dx);
    tu_dev_free(s->ctx, &dm);
    tu_dev_free(s->ctx, &dout);
    tu_array_free(&hx);
    tu_array_free(&hm);
    tu_array_free(&want);
    tu_array_free(&got);
  }
  ndf_ctx_destroy(cpu);
  assert_int_equal(bad, 0);
}

int main(void) {
  if (!tu_have_cuda()) return 77; /* ctest: skipped */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gpu_reorient_resample_crop),
      cmocka_unit_test(test_gpu_normalize),
  };
  return cmocka_run_group_tests(tests, group_setup, tu_gpu_teardown);
}
