/*
 * test_preprocess.c -- the preprocessing steps on the CPU backend: reorientation
 * to RAS+, resampling to a spacing, the mask's bounding box and crops, and the
 * per-modality normalization (docs: include/ndforge.h, "Preprocessing of
 * medical volumes").  The references are written here from the definitions:
 *   reorient   known affines (flips, permutations, an oblique one) give the
 *              axes nibabel's io_orientation gives; the data is the input
 *              read through the planned permutation and flips (every dtype,
 *              padded and negative-stride inputs, a batch axis); the new
 *              affine maps every output voxel to its input voxel's world point
 *   resample   the plan's shape (Python's round), scale and offset, its
 *              affine (each output voxel at the world point of its input
 *              coordinate; the grids' centres equal); a linear ramp is
 *              sampled at o r + t (order 1 is exact on it)
 *   bbox/crop  random masks against a scan; the margin clipped to the volume;
 *              the cropped affine; the data
 *   normalize  CT window to [-1, 1] (preset and centre/width) and MRI z-scores
 *              in a mask, by their formulas
 * and the contract: NULL pointers, bad affines, wrong output shapes and
 * dtypes, empty boxes; each a status, a message naming the rule, and an
 * output left as it was.  Cases: NDF_TEST_CASES (default 200); seed:
 * NDF_TEST_SEED (printed).  Public API only.
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

typedef struct state {
  ndf_ctx *ctx;
  uint64_t seed;
  long ncases;
} state;

static int group_setup(void **st) {
  state *s = calloc(1, sizeof *s);
  if (!s) return -1;
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  o.backend = NDF_BACKEND_CPU;
  if (ndf_ctx_create(&s->ctx, &o) != NDF_OK) return -1;
  s->seed = tu_seed("NDF_TEST_SEED");
  s->ncases = tu_env_long("NDF_TEST_CASES", 200);
  *st = s;
  return 0;
}

static int group_teardown(void **st) {
  state *s = *st;
  ndf_ctx_destroy(s->ctx);
  free(s);
  return 0;
}

/* world = A (v, 1) */
static void world(const double *a, const double *v, double *w) {
  for (int i = 0; i < 3; i++) w[i] = a[4 * i] * v[0] + a[4 * i + 1] * v[1] + a[4 * i + 2] * v[2] + a[4 * i + 3];
}

/* ---- reorientation ------------------------------------------------------------------- */

static void test_reorient_known(void **st) {
  (void)st;
  const int64_t shape[3] = {4, 5, 6};
  int64_t osh[3];
  int perm[3], flip[3];
  double out[16];
  /* LAS: x flipped */
  const double las[16] = {-2, 0, 0, 10, 0, 1, 0, 20, 0, 0, 3, 30, 0, 0, 0, 1};
  assert_int_equal(ndf_reorient_ras_plan(shape, las, osh, perm, flip, out), NDF_OK);
  assert_int_equal(perm[0], 0);
  assert_int_equal(perm[1], 1);
  assert_int_equal(perm[2], 2);
  assert_true(flip[0] && !flip[1] && !flip[2]);
  const double want_las[16] = {2, 0, 0, 10 - 2 * 3, 0, 1, 0, 20, 0, 0, 3, 30, 0, 0, 0, 1};
  for (int i = 0; i < 16; i++) assert_true(fabs(out[i] - want_las[i]) < 1e-12);
  /* voxel axes (i, j, k) pointing to (-y, z, x): output x <- k, y <- -i, z <- j */
  const double p[16] = {0, 0, 1.5, 0, -1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 1};
  assert_int_equal(ndf_reorient_ras_plan(shape, p, osh, perm, flip, out), NDF_OK);
  assert_int_equal(perm[0], 2);
  assert_int_equal(perm[1], 0);
  assert_int_equal(perm[2], 1);
  assert_true(!flip[0] && flip[1] && !flip[2]);
  assert_int_equal(osh[0], 6);
  assert_int_equal(osh[1], 4);
  assert_int_equal(osh[2], 5);
  const double want_p[16] = {1.5, 0, 0, 0, 0, 1, 0, -3, 0, 0, 2, 0, 0, 0, 0, 1};
  for (int i = 0; i < 16; i++) assert_true(fabs(out[i] - want_p[i]) < 1e-12);
  /* oblique: 30 degrees about z keeps the axes' order (cos 30 > sin 30) */
  const double c = cos(M_PI / 6), s = sin(M_PI / 6);
  const double ob[16] = {c, -s, 0, 0, s, c, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
  assert_int_equal(ndf_reorient_ras_plan(shape, ob, osh, perm, flip, out), NDF_OK);
  assert_true(perm[0] == 0 && perm[1] == 1 && perm[2] == 2 && !flip[0] && !flip[1] && !flip[2]);
  /* 60 degrees about z: voxel i points mostly to +y, j to -x */
  const double ob2[16] = {s, -c, 0, 0, c, s, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
  assert_int_equal(ndf_reorient_ras_plan(shape, ob2, osh, perm, flip, out), NDF_OK);
  assert_true(perm[0] == 1 && perm[1] == 0 && perm[2] == 2 && flip[0] && !flip[1] && !flip[2]);
}

/* Reads input voxel (i, j, k) of output voxel o through perm/flip. */
static int64_t in_index(const int64_t *shape, const int *perm, const int *flip, const int64_t *o, int64_t *v) {
  for (int a = 0; a < 3; a++) v[perm[a]] = flip[a] ? shape[perm[a]] - 1 - o[a] : o[a];
  return (v[0] * shape[1] + v[1]) * shape[2] + v[2];
}

static void test_reorient_data(void **st) {
  state *s = *st;
  tu_rng r;
  tu_rng_seed(&r, s->seed);
  static const ndf_dtype dts[] = {NDF_UINT8, NDF_INT8, NDF_UINT16, NDF_INT16, NDF_UINT32, NDF_INT32, NDF_FLOAT32,
                                  NDF_FLOAT64};
  for (long c = 0; c < s->ncases; c++) {
    const int nb = tu_rng_chance(&r, 0.2) ? 1 : 0;
    int64_t shape[4];
    for (int d = 0; d < nb + 3; d++) shape[d] = tu_rng_int(&r, 1, 7);
    const ndf_dtype dt = dts[tu_rng_int(&r, 0, 7)];
    double a[16], oa[16];
    tu_random_affine(&r, a, (int)(c % 2), 100);
    int64_t osh[3];
    int perm[3], flip[3];
    assert_int_equal(ndf_reorient_ras_plan(&shape[nb], a, osh, perm, flip, oa), NDF_OK);
    /* the new affine maps each output voxel to its input voxel's world point */
    for (int t = 0; t < 4; t++) {
      int64_t o[3], v[3];
      for (int d = 0; d < 3; d++) o[d] = tu_rng_int(&r, 0, osh[d] - 1);
      in_index(&shape[nb], perm, flip, o, v);
      double of[3] = {(double)o[0], (double)o[1], (double)o[2]}, vf[3] = {(double)v[0], (double)v[1], (double)v[2]};
      double w0[3], w1[3];
      world(oa, of, w0);
      world(a, vf, w1);
      for (int i = 0; i < 3; i++) assert_true(fabs(w0[i] - w1[i]) < 1e-9 * (1 + fabs(w1[i])));
    }
    tu_array in, in2, out;
    assert_int_equal(tu_array_alloc(&in, dt, nb + 3, shape), 0);
    const int64_t n = ndf_array_size(&in.arr);
    for (int64_t e = 0; e < n; e++) tu_set(&in.arr, e, (double)tu_rng_int(&r, 0, 120));
    assert_int_equal(tu_array_relayout(&in2, &in.arr, c % 3 == 0 ? TU_LAYOUT_PADDED | TU_LAYOUT_NEGATIVE : 0, &r), 0);
    int64_t fsh[4];
    for (int d = 0; d < nb; d++) fsh[d] = shape[d];
    for (int d = 0; d < 3; d++) fsh[nb + d] = osh[d];
    assert_int_equal(tu_array_alloc(&out, dt, nb + 3, fsh), 0);
    ndf_status st2 = ndf_reorient_ras(s->ctx, &in2.arr, a, &out.arr);
    if (st2 != NDF_OK) fail_msg("ndf_reorient_ras: %s", ndf_errmsg(s->ctx));
    const int64_t m = ndf_array_size(&out.arr) / (nb ? shape[0] : 1);
    const int64_t m_in = n / (nb ? shape[0] : 1);
    for (int64_t b = 0; b < (nb ? shape[0] : 1); b++)
      for (int64_t e = 0; e < m; e++) {
        int64_t o[3] = {e / (osh[1] * osh[2]), (e / osh[2]) % osh[1], e % osh[2]}, v[3];
        const int64_t src = in_index(&shape[nb], perm, flip, o, v);
        if (tu_get(&out.arr, b * m + e) != tu_get(&in.arr, b * m_in + src))
          fail_msg("case %ld: output voxel %lld differs", c, (long long)e);
      }
    tu_array_free(&in);
    tu_array_free(&in2);
    tu_array_free(&out);
  }
}

/* ---- resampling -------------------------------------------------------------------------- */

static void test_resample(void **st) {
  state *s = *st;
  tu_rng r;
  tu_rng_seed(&r, s->seed + 1);
  /* Python's round, half to even: 5 * 1 / 2 = 2.5 -> 2; 7 * 1 / 2 = 3.5 -> 4 */
  const int64_t sh[3] = {5, 7, 1};
  const double sp[3] = {1, 1, 1}, ns[3] = {2, 2, 2};
  int64_t osh[3];
  double sc[3], off[3];
  assert_int_equal(ndf_resample_plan(3, sh, sp, ns, osh, sc, off), NDF_OK);
  assert_int_equal(osh[0], 2);
  assert_int_equal(osh[1], 4);
  assert_int_equal(osh[2], 1); /* at least 1 */
  for (long c = 0; c < s->ncases / 4 + 1; c++) {
    int64_t shape[3];
    double a[16], spc[3], nsp[3], oa[16];
    tu_random_affine(&r, a, 1, 100);
    assert_int_equal(ndf_affine_spacing(a, spc), NDF_OK);
    for (int d = 0; d < 3; d++) {
      shape[d] = tu_rng_int(&r, 2, 12);
      nsp[d] = 0.4 + 3 * tu_rng_unif(&r);
    }
    assert_int_equal(ndf_resample_plan(3, shape, spc, nsp, osh, sc, off), NDF_OK);
    assert_int_equal(ndf_resample_affine(3, a, sc, off, oa), NDF_OK);
    /* corners and centre: the output voxel sits at its input coordinate's world point */
    for (int t = 0; t < 9; t++) {
      double o[3], ci[3], w0[3], w1[3];
      for (int d = 0; d < 3; d++) {
        o[d] = t == 8 ? (double)(osh[d] - 1) / 2 : ((t >> d) & 1) ? (double)(osh[d] - 1) : 0;
        ci[d] = o[d] * sc[d] + off[d];
      }
      world(oa, o, w0);
      world(a, ci, w1);
      for (int i = 0; i < 3; i++) assert_true(fabs(w0[i] - w1[i]) < 1e-9 * (1 + fabs(w1[i])));
      if (t == 8) /* the centres coincide */
        for (int d = 0; d < 3; d++) assert_true(fabs(ci[d] - (double)(shape[d] - 1) / 2) < 1e-9);
    }
    /* the new affine's columns have the new spacing */
    double got_sp[3];
    assert_int_equal(ndf_affine_spacing(oa, got_sp), NDF_OK);
    for (int d = 0; d < 3; d++) assert_true(fabs(got_sp[d] - nsp[d]) < 1e-9 * nsp[d]);
    /* a linear ramp, order 1: the value at o is the ramp at o r + t (inside the volume) */
    tu_array in, out;
    assert_int_equal(tu_array_alloc(&in, NDF_FLOAT64, 3, shape), 0);
    for (int64_t i = 0; i < shape[0]; i++)
      for (int64_t j = 0; j < shape[1]; j++)
        for (int64_t k = 0; k < shape[2]; k++)
          tu_set(&in.arr, (i * shape[1] + j) * shape[2] + k, 3.0 * i - 2.0 * j + 0.5 * k + 7);
    assert_int_equal(tu_array_alloc(&out, NDF_FLOAT64, 3, osh), 0);
    ndf_interp_options io;
    ndf_interp_options_init(&io);
    io.order = 1;
    io.mode = NDF_INTERP_NEAREST;
    assert_int_equal(ndf_resample(s->ctx, &in.arr, &out.arr, spc, nsp, &io), NDF_OK);
    for (int64_t e = 0; e < ndf_array_size(&out.arr); e++) {
      const int64_t o[3] = {e / (osh[1] * osh[2]), (e / osh[2]) % osh[1], e % osh[2]};
      double ci[3];
      int inside = 1;
      for (int d = 0; d < 3; d++) {
        ci[d] = (double)o[d] * sc[d] + off[d];
        inside &= ci[d] >= 0 && ci[d] <= (double)(shape[d] - 1);
      }
      if (inside) assert_true(fabs(tu_get(&out.arr, e) - (3 * ci[0] - 2 * ci[1] + 0.5 * ci[2] + 7)) < 1e-9);
    }
    tu_array_free(&in);
    tu_array_free(&out);
  }
}

/* ---- bounding box and crop ------------------------------------------------------------------ */

static void test_bbox_crop(void **st) {
  state *s = *st;
  tu_rng r;
  tu_rng_seed(&r, s->seed + 2);
  for (long c = 0; c < s->ncases; c++) {
    int64_t shape[3];
    for (int d = 0; d < 3; d++) shape[d] = tu_rng_int(&r, 1, 9);
    tu_array m, m2;
    const ndf_dtype dt = c % 4 == 0 ? NDF_FLOAT32 : c % 4 == 1 ? NDF_UINT8 : c % 4 == 2 ? NDF_BOOL : NDF_UINT64;
    assert_int_equal(tu_array_alloc(&m, dt, 3, shape), 0);
    const double p = tu_rng_unif(&r) * 0.1;
    int64_t lo[3] = {shape[0], shape[1], shape[2]}, hi[3] = {0, 0, 0}, cnt = 0;
    for (int64_t e = 0; e < ndf_array_size(&m.arr); e++) {
      if (!tu_rng_chance(&r, p)) continue;
      tu_set(&m.arr, e, 1);
      const int64_t v[3] = {e / (shape[1] * shape[2]), (e / shape[2]) % shape[1], e % shape[2]};
      cnt++;
      for (int d = 0; d < 3; d++) {
        if (v[d] < lo[d]) lo[d] = v[d];
        if (v[d] + 1 > hi[d]) hi[d] = v[d] + 1;
      }
    }
    assert_int_equal(tu_array_relayout(&m2, &m.arr, TU_LAYOUT_PADDED | TU_LAYOUT_NEGATIVE, &r), 0);
    int64_t glo[3], ghi[3], gc;
    assert_int_equal(ndf_mask_bbox(s->ctx, &m2.arr, glo, ghi, &gc), NDF_OK);
    assert_int_equal(gc, cnt);
    for (int d = 0; d < 3; d++) {
      assert_int_equal(glo[d], cnt ? lo[d] : 0);
      assert_int_equal(ghi[d], cnt ? hi[d] : 0);
    }
    if (cnt == 0) {
      int64_t st0[3], osh[3];
      assert_int_equal(ndf_crop_plan(3, shape, glo, ghi, 0, NULL, st0, osh, NULL, NULL), NDF_EINVAL);
      assert_non_null(strstr(ndf_last_error(), "empty"));
    } else {
      const int64_t mg[3] = {tu_rng_int(&r, 0, 3), tu_rng_int(&r, 0, 3), tu_rng_int(&r, 0, 3)};
      double a[16], oa[16];
      tu_random_affine(&r, a, 1, 100);
      int64_t st0[3], osh[3];
      assert_int_equal(ndf_crop_plan(3, shape, glo, ghi, 3, mg, st0, osh, a, oa), NDF_OK);
      for (int d = 0; d < 3; d++) {
        const int64_t wa = lo[d] - mg[d] < 0 ? 0 : lo[d] - mg[d];
        const int64_t wb = hi[d] + mg[d] > shape[d] ? shape[d] : hi[d] + mg[d];
        assert_int_equal(st0[d], wa);
        assert_int_equal(osh[d], wb - wa);
      }
      double o[3] = {(double)(osh[0] - 1), 0, (double)(osh[2] - 1)}, v[3], w0[3], w1[3];
      for (int d = 0; d < 3; d++) v[d] = o[d] + (double)st0[d];
      world(oa, o, w0);
      world(a, v, w1);
      for (int i = 0; i < 3; i++) assert_true(fabs(w0[i] - w1[i]) < 1e-9 * (1 + fabs(w1[i])));
      /* the data, from a float32 volume */
      tu_array x, y;
      assert_int_equal(tu_array_alloc(&x, NDF_FLOAT32, 3, shape), 0);
      for (int64_t e = 0; e < ndf_array_size(&x.arr); e++) tu_set(&x.arr, e, (double)e);
      assert_int_equal(tu_array_alloc(&y, NDF_FLOAT32, 3, osh), 0);
      assert_int_equal(ndf_crop(s->ctx, &x.arr, st0, &y.arr), NDF_OK);
      for (int64_t e = 0; e < ndf_array_size(&y.arr); e++) {
        const int64_t q[3] = {e / (osh[1] * osh[2]) + st0[0], (e / osh[2]) % osh[1] + st0[1], e % osh[2] + st0[2]};
        assert_true(tu_get(&y.arr, e) == (double)((q[0] * shape[1] + q[1]) * shape[2] + q[2]));
      }
      tu_array_free(&x);
      tu_array_free(&y);
    }
    tu_array_free(&m);
    tu_array_free(&m2);
  }
}

/* ---- normalization ----------------------------------------------------------------------------- */

static void test_normalize(void **st) {
  state *s = *st;
  tu_rng r;
  tu_rng_seed(&r, s->seed + 3);
  const int64_t shape[3] = {6, 5, 7};
  tu_array x, mk, y;
  assert_int_equal(tu_array_alloc(&x, NDF_INT16, 3, shape), 0);
  assert_int_equal(tu_array_alloc(&mk, NDF_UINT8, 3, shape), 0);
  assert_int_equal(tu_array_alloc(&y, NDF_FLOAT64, 3, shape), 0);
  const int64_t n = ndf_array_size(&x.arr);
  for (int64_t e = 0; e < n; e++) {
    tu_set(&x.arr, e, (double)tu_rng_int(&r, -1200, 2000));
    tu_set(&mk.arr, e, tu_rng_chance(&r, 0.4));
  }
  ndf_normalize_options o;
  ndf_normalize_options_init(&o);
  o.modality = NDF_MODALITY_CT;
  o.preset = "lung";
  assert_int_equal(ndf_normalize_modality(s->ctx, &x.arr, NULL, &y.arr, &o), NDF_OK);
  for (int64_t e = 0; e < n; e++) {
    const double lo = -600 - 750, hi = -600 + 750, v = fmin(hi, fmax(lo, tu_get(&x.arr, e)));
    assert_true(fabs(tu_get(&y.arr, e) - ((v - lo) / (hi - lo) * 2 - 1)) < 1e-12);
  }
  o.preset = NULL;
  o.centre = 100;
  o.width = 0; /* a zero-width window: everything to -1 */
  assert_int_equal(ndf_normalize_modality(s->ctx, &x.arr, NULL, &y.arr, &o), NDF_OK);
  for (int64_t e = 0; e < n; e++) assert_true(tu_get(&y.arr, e) == -1);
  o.modality = NDF_MODALITY_MRI;
  assert_int_equal(ndf_normalize_modality(s->ctx, &x.arr, &mk.arr, &y.arr, &o), NDF_OK);
  double sum = 0, sq = 0, k = 0;
  for (int64_t e = 0; e < n; e++)
    if (tu_get(&mk.arr, e)) {
      sum += tu_get(&y.arr, e);
      sq += tu_get(&y.arr, e) * tu_get(&y.arr, e);
      k++;
    }
  assert_true(fabs(sum / k) < 1e-9 && fabs(sq / k - 1) < 1e-9);
  ndf_modality mo;
  assert_int_equal(ndf_modality_from_name("ct", &mo), NDF_OK);
  assert_int_equal(mo, NDF_MODALITY_CT);
  assert_string_equal(ndf_modality_name(NDF_MODALITY_MRI), "mri");
  assert_int_equal(ndf_modality_from_name("pet", &mo), NDF_EINVAL);
  o.modality = NDF_MODALITY_CT;
  o.preset = "nosuch";
  assert_int_equal(ndf_normalize_modality(s->ctx, &x.arr, NULL, &y.arr, &o), NDF_EINVAL);
  assert_non_null(strstr(ndf_errmsg(s->ctx), "preset"));
  tu_array_free(&x);
  tu_array_free(&mk);
  tu_array_free(&y);
}

/* ---- the contract ------------------------------------------------------------------------------- */

static void expect(ndf_status got, ndf_status want, const char *msg, const char *needle) {
  if (got != want) fail_msg("status %s, expected %s (%s)", ndf_status_name(got), ndf_status_name(want), msg);
  if (needle && !strstr(msg, needle)) fail_msg("message '%s' lacks '%s'", msg, needle);
}

static void test_contract(void **st) {
  state *s = *st;
  const int64_t shape[3] = {3, 4, 5}, wrong[3] = {4, 3, 5};
  const double id[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
  const double flipx[16] = {-1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
  double badrow[16], sing[16], nanaff[16], out[16];
  memcpy(badrow, id, sizeof id);
  badrow[12] = 1;
  memcpy(sing, id, sizeof id);
  sing[10] = 0;
  sing[6] = 1; /* column k = column j */
  sing[5] = 1;
  memcpy(nanaff, id, sizeof id);
  nanaff[3] = NAN;
  int64_t osh[3];
  expect(ndf_reorient_ras_plan(shape, badrow, osh, NULL, NULL, out), NDF_EINVAL, ndf_last_error(), "bottom row");
  expect(ndf_reorient_ras_plan(shape, sing, osh, NULL, NULL, out), NDF_EINVAL, ndf_last_error(), "singular");
  expect(ndf_reorient_ras_plan(shape, nanaff, osh, NULL, NULL, out), NDF_EINVAL, ndf_last_error(), "non-finite");
  expect(ndf_affine_spacing(badrow, out), NDF_EINVAL, ndf_last_error(), "bottom row");
  tu_array x, y, yb, yw;
  assert_int_equal(tu_array_alloc(&x, NDF_FLOAT32, 3, shape), 0);
  assert_int_equal(tu_array_alloc(&y, NDF_FLOAT32, 3, shape), 0);
  assert_int_equal(tu_array_alloc(&yb, NDF_FLOAT64, 3, shape), 0);
  assert_int_equal(tu_array_alloc(&yw, NDF_FLOAT32, 3, wrong), 0);
  tu_poison(y.arr.data, y.bytes);
  expect(ndf_reorient_ras(s->ctx, &x.arr, flipx, &yw.arr), NDF_EINVAL, ndf_errmsg(s->ctx), "extent");
  expect(ndf_reorient_ras(s->ctx, &x.arr, flipx, &yb.arr), NDF_EINVAL, ndf_errmsg(s->ctx), "dtype");
  expect(ndf_reorient_ras(s->ctx, &x.arr, NULL, &y.arr), NDF_EINVAL, ndf_errmsg(s->ctx), "NULL");
  expect(ndf_reorient_ras(s->ctx, &x.arr, sing, &y.arr), NDF_EINVAL, ndf_errmsg(s->ctx), "singular");
  assert_int_equal(tu_poison_check(y.arr.data, y.bytes), -1);
  /* resample */
  const double sp[3] = {1, 1, 1}, zero[3] = {1, 0, 1}, ns[3] = {2, 2, 2};
  expect(ndf_resample_plan(3, shape, sp, zero, osh, NULL, NULL), NDF_EINVAL, ndf_last_error(), "positive");
  expect(ndf_resample_plan(4, shape, sp, ns, osh, NULL, NULL), NDF_EINVAL, ndf_last_error(), "1 to 3");
  expect(ndf_resample(s->ctx, &x.arr, &y.arr, sp, ns, NULL), NDF_EINVAL, ndf_errmsg(s->ctx), "resampled");
  expect(ndf_resample(s->ctx, &x.arr, &y.arr, sp, zero, NULL), NDF_EINVAL, ndf_errmsg(s->ctx), "positive");
  assert_int_equal(tu_poison_check(y.arr.data, y.bytes), -1);
  /* crop */
  const int64_t lo[3] = {1, 1, 1}, hi[3] = {2, 3, 4}, hi_bad[3] = {2, 5, 4}, st0[3] = {1, 1, 1}, neg[1] = {-1};
  int64_t st1[3];
  expect(ndf_crop_plan(3, shape, lo, hi_bad, 0, NULL, st1, osh, NULL, NULL), NDF_EINVAL, ndf_last_error(), "outside");
  expect(ndf_crop_plan(3, shape, lo, hi, 1, neg, st1, osh, NULL, NULL), NDF_EINVAL, ndf_last_error(), "negative");
  expect(ndf_crop_plan(3, shape, lo, hi, 2, neg, st1, osh, NULL, NULL), NDF_EINVAL, ndf_last_error(), "2 values");
  expect(ndf_crop(s->ctx, &x.arr, st0, &y.arr), NDF_EINVAL, ndf_errmsg(s->ctx), "start");
  expect(ndf_mask_bbox(s->ctx, NULL, st1, osh, NULL), NDF_EINVAL, ndf_errmsg(s->ctx), "NULL");
  assert_int_equal(tu_poison_check(y.arr.data, y.bytes), -1);
  tu_array_free(&x);
  tu_array_free(&y);
  tu_array_free(&yb);
  tu_array_free(&yw);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reorient_known), cmocka_unit_test(test_reorient_data), cmocka_unit_test(test_resample),
      cmocka_unit_test(test_bbox_crop),      cmocka_unit_test(test_normalize),     cmocka_unit_test(test_contract),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
