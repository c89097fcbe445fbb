/*
 * test_ect.c -- Euler characteristic transform (ndf_euler_characteristic_transform,
 * ndf_soft_ect_forward/backward) on the CPU backend.
 *
 * The brute force knows nothing of owners or local contributions: it lists
 * every cell of the complex on the doubled grid (odd coordinate = the cell
 * spans that axis), keeps the cells of the support S = {input != 0} (V: all
 * vertices in S; T: some top cell holding it in S), gives each its height
 * (V: max over its vertices; T: min over the top cells of S holding it) and
 * weight (V: min over its vertices; T: max over those top cells), with the
 * heights computed from the documented coordinates, and sums
 * (-1)^dim w [h <= t] (or the sigmoid).
 *
 * Checks: random cases (2-D/3-D, V/T, binary/weighted, every input dtype,
 * batches, strided inputs and outputs, spacing, normalize, thresholds as
 * values / default [-R, R] / a range) against the brute force; the binary
 * ECT against ndf_euler_characteristic_curve of f_u (h_u on S, +inf off it);
 * a 0/1 image's WECT against its ECT; -u against u on the flipped image;
 * a 90-degree rotation against the rotated direction; soft -> exact as
 * lambda grows; soft forward against the cell-by-cell sigmoid sum;
 * gradients (input, directions, thresholds) against central differences;
 * rejected input (status, message naming the op, output untouched).
 * NDF_TEST_SEED repeats a run; NDF_TEST_CASES sets the number of cases.
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

static ndf_ctx *g_ctx;
static uint64_t g_seed;

/* ------------------------------------------------------------------------ */
/* Brute force                                                              */

/* Coordinates per the documented formula (independent code). */
static void coords(int nsp, const int64_t *sh, const double *spacing, int normalize, double x[3][16]) {
  double r2 = 0;
  for (int d = 0; d < nsp; d++) {
    double s = spacing[d] == 0 ? 1 : spacing[d];
    double h = (sh[d] - 1) / 2.0 * s;
    r2 += h * h;
  }
  for (int d = 0; d < nsp; d++) {
    double s = spacing[d] == 0 ? 1 : spacing[d];
    for (int64_t i = 0; i < sh[d]; i++) {
      x[d][i] = ((double)i - (sh[d] - 1) / 2.0) * s;
      if (normalize && r2 > 0) x[d][i] /= sqrt(r2);
    }
  }
}

/* out[k] for each threshold: sum over cells of (-1)^dim w [h <= t] (lambda
 * = 0) or w sigmoid(lambda (t - h)). v: one image in C order (weights; 0 = off
 * the support); weighted 0 uses w = 1 on the support. */
static void brute_ect(int nsp, const int64_t *sh, const double *v, int weighted, int cons, double x[3][16],
                      const double *u, const double *t, int64_t T, double lambda, double *out) {
  int64_t g[3] = {1, 1, 1}, ncell = 1;
  for (int d = 0; d < nsp; d++) {
    g[d] = cons == NDF_ECC_V ? 2 * sh[d] - 1 : 2 * sh[d] + 1;
    ncell *= g[d];
  }
  for (int64_t k = 0; k < T; k++) out[k] = 0;
  for (int64_t cell = 0; cell < ncell; cell++) {
    int64_t cc[3], r = cell, lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
    for (int d = nsp - 1; d >= 0; d--) {
      cc[d] = r % g[d];
      r /= g[d];
    }
    int dim = 0;
    for (int d = 0; d < nsp; d++) {
      if (cc[d] % 2) dim++;
      if (cons == NDF_ECC_V) {
        lo[d] = cc[d] / 2;
        hi[d] = cc[d] % 2 ? lo[d] + 1 : lo[d];
      } else if (cc[d] % 2) {
        lo[d] = hi[d] = (cc[d] - 1) / 2;
      } else {
        lo[d] = cc[d] / 2 - 1;
        hi[d] = cc[d] / 2;
        if (lo[d] < 0) lo[d] = 0;
        if (hi[d] >= sh[d]) hi[d] = sh[d] - 1;
      }
    }
    int all = 1, any = 0;
    double h = cons == NDF_ECC_V ? -INFINITY : INFINITY, w = cons == NDF_ECC_V ? INFINITY : -INFINITY;
    int64_t i[3];
    for (i[0] = lo[0]; i[0] <= hi[0]; i[0]++)
      for (i[1] = lo[1]; i[1] <= hi[1]; i[1]++)
        for (i[2] = lo[2]; i[2] <= hi[2]; i[2]++) {
          int64_t li = i[0] * sh[1] + i[1];
          if (nsp == 3) li = li * sh[2] + i[2];
          double val = v[li];
          if (val == 0) {
            all = 0;
            continue;
          }
          any = 1;
          double hv = 0;
          for (int d = 0; d < nsp; d++) hv += x[d][i[d]] * u[d];
          double wv = weighted ? val : 1;
          if (cons == NDF_ECC_V) {
            if (hv > h) h = hv;
            if (wv < w) w = wv;
          } else {
            if (hv < h) h = hv;
            if (wv > w) w = wv;
          }
        }
    if (cons == NDF_ECC_V ? !all : !any) continue;
    double sg = dim % 2 ? -1 : 1;
    for (int64_t k = 0; k < T; k++) {
      if (lambda > 0) out[k] += sg * w / (1 + exp(-lambda * (t[k] - h)));
      else if (h <= t[k]) out[k] += sg * w;
    }
  }
}

/* ------------------------------------------------------------------------ */
/* Helpers                                                                  */

static const ndf_dtype k_dtypes[4] = {NDF_UINT8, NDF_UINT16, NDF_FLOAT32, NDF_FLOAT64};

typedef struct tcase {
  int nsp, nb, ndim, cons, weighted, normalize;
  int64_t shape[5], m;
  double spacing[3];
  ndf_dtype dtype;
} tcase;

static void random_case(tu_rng *r, tcase *c) {
  memset(c, 0, sizeof *c);
  c->nsp = tu_rng_chance(r, 0.5) ? 2 : 3;
  c->nb = (int)tu_rng_int(r, 0, 1);
  c->ndim = c->nb + c->nsp;
  for (int d = 0; d < c->nb; d++) c->shape[d] = tu_rng_int(r, 1, 3);
  for (int d = 0; d < c->nsp; d++) c->shape[c->nb + d] = tu_rng_int(r, 1, c->nsp == 2 ? 9 : 5);
  c->cons = tu_rng_chance(r, 0.5) ? NDF_ECC_T : NDF_ECC_V;
  c->weighted = tu_rng_chance(r, 0.5);
  c->normalize = tu_rng_chance(r, 0.3);
  c->m = tu_rng_int(r, 1, 4);
  c->dtype = k_dtypes[tu_rng_int(r, 0, 3)];
  if (tu_rng_chance(r, 0.4))
    for (int d = 0; d < c->nsp; d++) c->spacing[d] = 0.5 + tu_rng_unif(r) * 2;
}

/* A value for the input: 0 with probability p0, else a level (ties). */
static double random_value(tu_rng *r, ndf_dtype dt, double p0, int levels) {
  if (tu_rng_chance(r, p0)) return 0;
  double v = (double)tu_rng_int(r, 1, levels);
  if (dt == NDF_FLOAT32 || dt == NDF_FLOAT64) {
    v = v * 0.75 - 1.3;
    if (v == 0) v = 0.5;
    if (dt == NDF_FLOAT32) v = (float)v;
  } else if (dt == NDF_UINT16) {
    v *= 1000;
  }
  return v;
}

static void random_directions(tu_rng *r, int nsp, int64_t m, double *u) {
  for (int64_t j = 0; j < m; j++) {
    int kind = (int)tu_rng_int(r, 0, 5);
    for (int d = 0; d < nsp; d++) {
      if (kind == 0) u[j * nsp + d] = d == (int)(j % nsp) ? (tu_rng_chance(r, 0.5) ? 1 : -1) : 0; /* axis: ties */
      else if (kind == 1) u[j * nsp + d] = (double)tu_rng_int(r, -1, 1);                          /* diagonal ties */
      else u[j * nsp + d] = tu_rng_normal(r);
    }
  }
}

/* C-order doubles of image img of an array (any strides). */
static void image_values(const ndf_array *a, int nb, int64_t img, int64_t npix, double *v) {
  for (int64_t i = 0; i < npix; i++) v[i] = tu_get(a, img * npix + i);
  (void)nb;
}

/* ------------------------------------------------------------------------ */
/* Random cases against the brute force                                     */

static void run_case(tu_rng *r, int id) {
  tcase c;
  random_case(r, &c);
  const int nsp = c.nsp;
  int64_t nimg = 1, npix = 1;
  for (int d = 0; d < c.nb; d++) nimg *= c.shape[d];
  for (int d = 0; d < nsp; d++) npix *= c.shape[c.nb + d];
  tu_array src, in;
  assert_int_equal(tu_array_alloc(&src, c.dtype, c.ndim, c.shape), 0);
  const double p0 = tu_rng_unif(r) * 0.6;
  const int levels = (int)tu_rng_int(r, 1, 6);
  for (int64_t i = 0; i < nimg * npix; i++) tu_set(&src.arr, i, random_value(r, c.dtype, p0, levels));
  int layout = tu_rng_chance(r, 0.5) ? TU_LAYOUT_C : TU_LAYOUT_PADDED | TU_LAYOUT_NEGATIVE;
  assert_int_equal(tu_array_relayout(&in, &src.arr, layout, r), 0);

  double u[4 * 3];
  random_directions(r, nsp, c.m, u);
  int64_t dsh[2] = {c.m, nsp};
  ndf_array dirs;
  ndf_array_init(&dirs, u, NDF_DEVICE_CPU, NDF_FLOAT64, 2, dsh);

  ndf_ect_options opt;
  ndf_ect_options_init(&opt);
  opt.construction = (ndf_ecc_construction)c.cons;
  opt.weighted = c.weighted;
  opt.normalize = c.normalize;
  opt.batch_dims = c.nb;
  memcpy(opt.spacing, c.spacing, sizeof opt.spacing);
  int tmode = (int)tu_rng_int(r, 0, 2);
  double tv[12];
  int64_t T = tu_rng_int(r, 2, 12);
  ndf_array vals;
  if (tmode == 0) {
    for (int64_t k = 0; k < T; k++) tv[k] = tu_rng_chance(r, 0.1) ? INFINITY : tu_rng_normal(r) * 3;
    if (T > 2) tv[1] = tv[0]; /* a duplicate */
    ndf_array_init(&vals, tv, NDF_DEVICE_CPU, NDF_FLOAT64, 1, &T);
    opt.values = &vals;
  } else {
    opt.nthresholds = T;
    if (tmode == 2) {
      opt.has_range = 1;
      opt.range_lo = -2 - tu_rng_unif(r);
      opt.range_hi = 2 * tu_rng_unif(r);
    }
  }
  double t[12];
  assert_int_equal(ndf_ect_thresholds(g_ctx, &in.arr, &dirs, &opt, t, T), NDF_OK);

  int64_t osh[5];
  for (int d = 0; d < c.nb; d++) osh[d] = c.shape[d];
  osh[c.nb] = c.m;
  osh[c.nb + 1] = T;
  tu_array out0, out;
  assert_int_equal(tu_array_alloc(&out0, c.weighted ? NDF_FLOAT64 : NDF_INT64, c.nb + 2, osh), 0);
  assert_int_equal(tu_array_like(&out, &out0.arr, tu_rng_chance(r, 0.5) ? TU_LAYOUT_C : TU_LAYOUT_PADDED, r), 0);
  ndf_status s = ndf_euler_characteristic_transform(g_ctx, &in.arr, &dirs, &out.arr, &opt);
  if (s != NDF_OK) fail_msg("case %d: %s", id, ndf_errmsg(g_ctx));
  assert_int_equal(tu_check_gaps(&out), -1);

  /* default thresholds: [-R, R] with R the max |h| over the grid */
  double x[3][16];
  coords(nsp, c.shape + c.nb, c.spacing, c.normalize, x);
  if (tmode == 1) {
    double R = 0;
    int64_t i[3] = {0, 0, 0};
    for (i[0] = 0; i[0] < c.shape[c.nb]; i[0]++)
      for (i[1] = 0; i[1] < c.shape[c.nb + 1]; i[1]++)
        for (i[2] = 0; i[2] < (nsp == 3 ? c.shape[c.nb + 2] : 1); i[2]++)
          for (int64_t j = 0; j < c.m; j++) {
            double h = 0;
            for (int d = 0; d < nsp; d++) h += x[d][i[d]] * u[j * nsp + d];
            if (fabs(h) > R) R = fabs(h);
          }
    assert_true(t[0] == -R && t[T - 1] == R);
  }

  double *v = malloc((size_t)npix * sizeof *v), want[12];
  for (int64_t img = 0; img < nimg; img++) {
    image_values(&in.arr, c.nb, img, npix, v);
    for (int64_t j = 0; j < c.m; j++) {
      brute_ect(nsp, c.shape + c.nb, v, c.weighted, c.cons, x, u + j * nsp, t, T, 0, want);
      for (int64_t k = 0; k < T; k++) {
        double got = tu_get(&out.arr, (img * c.m + j) * T + k);
        double tol = c.weighted ? 1e-9 * (1 + fabs(want[k]) + npix * 1000.0 * 1e-3) : 0;
        if (fabs(got - want[k]) > tol)
          fail_msg("case %d (seed %llu) nsp %d cons %s weighted %d img %lld dir %lld k %lld (t=%g): got %.17g want %.17g",
                   id, (unsigned long long)g_seed, nsp, c.cons ? "T" : "V", c.weighted, (long long)img, (long long)j,
                   (long long)k, t[k], got, want[k]);
      }
    }
  }

  /* binary: exactly the ECC of f_u (h_u on S, +inf off it) */
  if (!c.weighted && npix > 0) {
    int64_t one = npix;
    tu_array f, e;
    assert_int_equal(tu_array_alloc(&f, NDF_FLOAT64, nsp, c.shape + c.nb), 0);
    assert_int_equal(tu_array_alloc(&e, NDF_INT64, 1, &T), 0);
    (void)one;
    ndf_ecc_options eo;
    ndf_ecc_options_init(&eo);
    eo.construction = (ndf_ecc_construction)c.cons;
    ndf_array tva;
    ndf_array_init(&tva, t, NDF_DEVICE_CPU, NDF_FLOAT64, 1, &T);
    eo.values = &tva;
    for (int64_t img = 0; img < nimg; img++) {
      image_values(&in.arr, c.nb, img, npix, v);
      for (int64_t j = 0; j < c.m; j++) {
        for (int64_t p = 0; p < npix; p++) {
          int64_t q = p, ii[3];
          for (int d = nsp - 1; d >= 0; d--) {
            ii[d] = q % c.shape[c.nb + d];
            q /= c.shape[c.nb + d];
          }
          double h = 0;
          for (int d = 0; d < nsp; d++) h += x[d][ii[d]] * u[j * nsp + d];
          ((double *)f.arr.data)[p] = v[p] != 0 ? h : INFINITY;
        }
        assert_int_equal(ndf_euler_characteristic_curve(g_ctx, &f.arr, &e.arr, &eo), NDF_OK);
        for (int64_t k = 0; k < T; k++) /* at t = +inf the ECC also counts the cells off the shape */
          assert_true(isinf(t[k]) || ((int64_t *)e.arr.data)[k] == (int64_t)tu_get(&out.arr, (img * c.m + j) * T + k));
      }
    }
    tu_array_free(&f);
    tu_array_free(&e);
  }
  free(v);
  tu_array_free(&src);
  tu_array_free(&in);
  tu_array_free(&out0);
  tu_array_free(&out);
}

static void test_brute_force_cases(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_seed(&r, g_seed);
  long n = tu_env_long("NDF_TEST_CASES", 300);
  for (long i = 0; i < n; i++) run_case(&r, (int)i);
}

/* ------------------------------------------------------------------------ */
/* Invariants                                                               */

/* ECT of a C-contiguous float64 image (one image), m directions, values t. */
static void ect_of(int nsp, const int64_t *sh, const double *img, int weighted, int cons, const double *u, int64_t m,
                   const double *t, int64_t T, double *res) {
  ndf_array in, dirs, vals, out;
  int64_t dsh[2] = {m, nsp}, osh[2] = {m, T};
  ndf_array_init(&in, (void *)img, NDF_DEVICE_CPU, NDF_FLOAT64, nsp, sh);
  ndf_array_init(&dirs, (void *)u, NDF_DEVICE_CPU, NDF_FLOAT64, 2, dsh);
  ndf_array_init(&vals, (void *)t, NDF_DEVICE_CPU, NDF_FLOAT64, 1, &T);
  int64_t *ib = malloc((size_t)(m * T) * sizeof *ib);
  ndf_array_init(&out, weighted ? (void *)res : (void *)ib, NDF_DEVICE_CPU, weighted ? NDF_FLOAT64 : NDF_INT64, 2, osh);
  ndf_ect_options opt;
  ndf_ect_options_init(&opt);
  opt.construction = (ndf_ecc_construction)cons;
  opt.weighted = weighted;
  opt.values = &vals;
  ndf_status s = ndf_euler_characteristic_transform(g_ctx, &in, &dirs, &out, &opt);
  if (s != NDF_OK) fail_msg("%s", ndf_errmsg(g_ctx));
  if (!weighted)
    for (int64_t i = 0; i < m * T; i++) res[i] = (double)ib[i];
  free(ib);
}

static void test_invariants(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_seed(&r, g_seed ^ 0x1234);
  double img[6 * 6 * 6], rot[6 * 6 * 6], flip[6 * 6 * 6], b01[6 * 6 * 6];
  double a[4 * 16], b[4 * 16], c2[4 * 16];
  double t[16];
  for (int it = 0; it < 40; it++) {
    const int nsp = it % 2 ? 3 : 2, cons = (it / 2) % 2, weighted = (it / 4) % 2;
    const int64_t n = nsp == 2 ? 6 : 4, sh[3] = {n, n, n};
    const int64_t npix = nsp == 2 ? n * n : n * n * n, m = 3, T = 16;
    for (int64_t i = 0; i < npix; i++) {
      img[i] = tu_rng_chance(&r, 0.4) ? 0 : weighted ? (double)tu_rng_int(&r, -3, 5) : 1;
      b01[i] = img[i] != 0;
    }
    double u[9], un[9], ur[9];
    random_directions(&r, nsp, m, u);
    for (int k = 0; k < T; k++) t[k] = -4 + 8.0 * k / (T - 1) + (k % 3) * 0.01;
    ect_of(nsp, sh, img, weighted, cons, u, m, t, T, a);
    double tol = weighted ? 1e-9 : 0;
    /* -u on the image flipped along every spatial axis */
    for (int64_t i = 0; i < npix; i++) flip[npix - 1 - i] = img[i];
    for (int i = 0; i < m * nsp; i++) un[i] = -u[i];
    ect_of(nsp, sh, flip, weighted, cons, un, m, t, T, b);
    for (int i = 0; i < m * T; i++)
      if (fabs(a[i] - b[i]) > tol) fail_msg("it %d: -u on the flipped image: %g vs %g at %d", it, a[i], b[i], i);
    /* rot90 in axes (0, 1): g[i, j, k] = f[j, n-1-i, k]; u' = (u1, -u0, u2) */
    const int64_t nk = nsp == 3 ? n : 1;
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < n; j++)
        for (int64_t k = 0; k < nk; k++) rot[(i * n + j) * nk + k] = img[(j * n + (n - 1 - i)) * nk + k];
    for (int j = 0; j < m; j++) {
      ur[j * nsp + 0] = -u[j * nsp + 1];
      ur[j * nsp + 1] = u[j * nsp + 0];
      if (nsp == 3) ur[j * nsp + 2] = u[j * nsp + 2];
    }
    /* <x_g, ur> = <x_f, u> with x_f = (x_g1, -x_g0, x_g2) */
    ect_of(nsp, sh, rot, weighted, cons, ur, m, t, T, b);
    for (int i = 0; i < m * T; i++)
      if (fabs(a[i] - b[i]) > tol) fail_msg("it %d: rotation: %g vs %g at %d", it, a[i], b[i], i);
    /* a 0/1 image: the WECT equals the binary ECT */
    ect_of(nsp, sh, b01, 1, cons, u, m, t, T, b);
    ect_of(nsp, sh, b01, 0, cons, u, m, t, T, c2);
    for (int i = 0; i < m * T; i++)
      if (b[i] != c2[i]) fail_msg("it %d: WECT of 0/1 %g vs ECT %g at %d", it, b[i], c2[i], i);
    if (!weighted) /* the binary shape: the ECT of img is that of b01 */
      for (int i = 0; i < m * T; i++) assert_true(a[i] == c2[i]);
  }
}

/* ------------------------------------------------------------------------ */
/* Soft                                                                     */

static ndf_status soft_fwd(int nsp, const int64_t *sh, const double *img, int weighted, int cons, const double *u,
                           int64_t m, const double *t, int64_t T, double lambda, double *res) {
  ndf_array in, dirs, th, out;
  int64_t dsh[2] = {m, nsp}, osh[2] = {m, T};
  ndf_array_init(&in, (void *)img, NDF_DEVICE_CPU, NDF_FLOAT64, nsp, sh);
  ndf_array_init(&dirs, (void *)u, NDF_DEVICE_CPU, NDF_FLOAT64, 2, dsh);
  ndf_array_init(&th, (void *)t, NDF_DEVICE_CPU, NDF_FLOAT64, 1, &T);
  ndf_array_init(&out, res, NDF_DEVICE_CPU, NDF_FLOAT64, 2, osh);
  ndf_soft_ect_options so;
  ndf_soft_ect_options_init(&so);
  so.construction = (ndf_ecc_construction)cons;
  so.weighted = weighted;
  so.lambda = lambda;
  return ndf_soft_ect_forward(g_ctx, &in, &dirs, &th, &out, &so);
}

static double loss(const double *chi, const double *g, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; i++) s += chi[i] * g[i];
  return s;
}

static void test_soft(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_seed(&r, g_seed ^ 0x5678);
  double img[5 * 5 * 5], img2[5 * 5 * 5], res[3 * 8], res2[3 * 8], ex[3 * 8], gout[3 * 8], want[8];
  double gin[5 * 5 * 5], gdir[9], gthr[8];
  for (int it = 0; it < 24; it++) {
    const int nsp = it % 2 ? 3 : 2, cons = (it / 2) % 2, weighted = (it / 4) % 2;
    const int64_t n = nsp == 2 ? 5 : 4, sh[3] = {n, n, n}, npix = nsp == 2 ? n * n : n * n * n, m = 3, T = 8;
    for (int64_t i = 0; i < npix; i++)
      img[i] = tu_rng_chance(&r, 0.3) ? 0 : weighted ? 0.5 + tu_rng_unif(&r) * 2 * (tu_rng_chance(&r, 0.2) ? -1 : 1) : 1;
    double u[9], t[8], x[3][16];
    for (int i = 0; i < m * nsp; i++) u[i] = tu_rng_normal(&r);
    for (int k = 0; k < T; k++) t[k] = -3 + 6.0 * k / (T - 1) + 0.0123 * k;
    int64_t zero3[3] = {0, 0, 0};
    double sp0[3] = {0, 0, 0};
    coords(nsp, sh, sp0, 0, x);
    (void)zero3;
    /* forward against the cell-by-cell sigmoid sum */
    assert_int_equal(soft_fwd(nsp, sh, img, weighted, cons, u, m, t, T, 1.7, res), NDF_OK);
    for (int j = 0; j < m; j++) {
      brute_ect(nsp, sh, img, weighted, cons, x, u + j * nsp, t, T, 1.7, want);
      for (int k = 0; k < T; k++)
        if (fabs(res[j * T + k] - want[k]) > 1e-9 * (1 + fabs(want[k])))
          fail_msg("it %d soft forward j %d k %d: %.17g vs %.17g", it, j, k, res[j * T + k], want[k]);
    }
    /* lambda -> infinity: the exact transform */
    assert_int_equal(soft_fwd(nsp, sh, img, weighted, cons, u, m, t, T, 1e9, res), NDF_OK);
    ect_of(nsp, sh, img, weighted, cons, u, m, t, T, ex);
    for (int i = 0; i < m * T; i++)
      if (fabs(res[i] - ex[i]) > 1e-6 * (1 + fabs(ex[i]))) fail_msg("it %d: lambda 1e9 %g vs exact %g", it, res[i], ex[i]);

    /* gradients against central differences, L = sum g chi */
    const double lam = 1.3, eps = 1e-6;
    for (int i = 0; i < m * T; i++) gout[i] = tu_rng_normal(&r);
    ndf_array in, dirs, th, go, gi, gd, gt;
    int64_t dsh[2] = {m, nsp}, osh[2] = {m, T};
    ndf_array_init(&in, img, NDF_DEVICE_CPU, NDF_FLOAT64, nsp, sh);
    ndf_array_init(&dirs, u, NDF_DEVICE_CPU, NDF_FLOAT64, 2, dsh);
    ndf_array_init(&th, t, NDF_DEVICE_CPU, NDF_FLOAT64, 1, &T);
    ndf_array_init(&go, gout, NDF_DEVICE_CPU, NDF_FLOAT64, 2, osh);
    ndf_array_init(&gi, gin, NDF_DEVICE_CPU, NDF_FLOAT64, nsp, sh);
    ndf_array_init(&gd, gdir, NDF_DEVICE_CPU, NDF_FLOAT64, 2, dsh);
    ndf_array_init(&gt, gthr, NDF_DEVICE_CPU, NDF_FLOAT64, 1, &T);
    ndf_soft_ect_options so;
    ndf_soft_ect_options_init(&so);
    so.construction = (ndf_ecc_construction)cons;
    so.weighted = weighted;
    so.lambda = lam;
    if (ndf_soft_ect_backward(g_ctx, &in, &dirs, &th, &go, &gi, &gd, &gt, &so) != NDF_OK) fail_msg("%s", ndf_errmsg(g_ctx));
    for (int64_t p = 0; p < npix; p++) {
      if (img[p] == 0) {
        assert_true(gin[p] == 0);
        continue;
      }
      memcpy(img2, img, (size_t)npix * sizeof *img);
      img2[p] += eps;
      assert_int_equal(soft_fwd(nsp, sh, img2, weighted, cons, u, m, t, T, lam, res), NDF_OK);
      img2[p] -= 2 * eps;
      assert_int_equal(soft_fwd(nsp, sh, img2, weighted, cons, u, m, t, T, lam, res2), NDF_OK);
      double fd = (loss(res, gout, m * T) - loss(res2, gout, m * T)) / (2 * eps);
      if (fabs(fd - gin[p]) > 1e-5 * (1 + fabs(fd))) fail_msg("it %d grad_input[%lld]: %g vs fd %g", it, (long long)p, gin[p], fd);
    }
    for (int i = 0; i < m * nsp; i++) {
      double ub[9];
      memcpy(ub, u, sizeof ub);
      ub[i] = u[i] + eps;
      assert_int_equal(soft_fwd(nsp, sh, img, weighted, cons, ub, m, t, T, lam, res), NDF_OK);
      ub[i] = u[i] - eps;
      assert_int_equal(soft_fwd(nsp, sh, img, weighted, cons, ub, m, t, T, lam, res2), NDF_OK);
      double fd = (loss(res, gout, m * T) - loss(res2, gout, m * T)) / (2 * eps);
      if (fabs(fd - gdir[i]) > 1e-5 * (1 + fabs(fd))) fail_msg("it %d grad_directions[%d]: %g vs fd %g", it, i, gdir[i], fd);
    }
    for (int k = 0; k < T; k++) {
      double tb[8];
      memcpy(tb, t, sizeof tb);
      tb[k] = t[k] + eps;
      assert_int_equal(soft_fwd(nsp, sh, img, weighted, cons, u, m, tb, T, lam, res), NDF_OK);
      tb[k] = t[k] - eps;
      assert_int_equal(soft_fwd(nsp, sh, img, weighted, cons, u, m, tb, T, lam, res2), NDF_OK);
      double fd = (loss(res, gout, m * T) - loss(res2, gout, m * T)) / (2 * eps);
      if (fabs(fd - gthr[k]) > 1e-5 * (1 + fabs(fd))) fail_msg("it %d grad_thresholds[%d]: %g vs fd %g", it, k, gthr[k], fd);
    }
  }
}

/* A batch with strides: the soft backward sums grad_directions / grad_thresholds
 * over the batch and fills grad_input per image. */
static void test_soft_batch(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_seed(&r, g_seed ^ 0x9abc);
  const int64_t B = 3, n = 6, m = 2, T = 5, sh[3] = {B, n, n}, osh[3] = {B, m, T}, dsh[2] = {m, 2};
  double img[3 * 36], u[4], t[5], out[30], gout[30], gin[108], gd[4], gt[5];
  for (int i = 0; i < B * n * n; i++) img[i] = tu_rng_chance(&r, 0.3) ? 0 : 1 + tu_rng_unif(&r);
  for (int i = 0; i < 4; i++) u[i] = tu_rng_normal(&r);
  for (int k = 0; k < T; k++) t[k] = -2 + k;
  for (int i = 0; i < 30; i++) gout[i] = tu_rng_normal(&r);
  ndf_array in, dirs, th, o, go, gi, gda, gta;
  ndf_array_init(&in, img, NDF_DEVICE_CPU, NDF_FLOAT64, 3, sh);
  ndf_array_init(&dirs, u, NDF_DEVICE_CPU, NDF_FLOAT64, 2, dsh);
  ndf_array_init(&th, t, NDF_DEVICE_CPU, NDF_FLOAT64, 1, &T);
  ndf_array_init(&o, out, NDF_DEVICE_CPU, NDF_FLOAT64, 3, osh);
  ndf_array_init(&go, gout, NDF_DEVICE_CPU, NDF_FLOAT64, 3, osh);
  ndf_array_init(&gi, gin, NDF_DEVICE_CPU, NDF_FLOAT64, 3, sh);
  ndf_array_init(&gda, gd, NDF_DEVICE_CPU, NDF_FLOAT64, 2, dsh);
  ndf_array_init(&gta, gt, NDF_DEVICE_CPU, NDF_FLOAT64, 1, &T);
  ndf_soft_ect_options so;
  ndf_soft_ect_options_init(&so);
  so.weighted = 1;
  so.construction = NDF_ECC_T;
  so.batch_dims = 1;
  so.lambda = 2;
  assert_int_equal(ndf_soft_ect_forward(g_ctx, &in, &dirs, &th, &o, &so), NDF_OK);
  assert_int_equal(ndf_soft_ect_backward(g_ctx, &in, &dirs, &th, &go, &gi, &gda, &gta, &so), NDF_OK);
  double sgd[4] = {0}, sgt[5] = {0}, one[10], gd1[4], gt1[5], gi1[36];
  for (int64_t b = 0; b < B; b++) {
    assert_int_equal(soft_fwd(2, sh + 1, img + b * 36, 1, NDF_ECC_T, u, m, t, T, 2, one), NDF_OK);
    for (int i = 0; i < 10; i++) assert_true(fabs(one[i] - out[b * 10 + i]) <= 1e-12 * (1 + fabs(one[i])));
    ndf_array in1, go1, gi1a, gd1a, gt1a;
    ndf_array_init(&in1, img + b * 36, NDF_DEVICE_CPU, NDF_FLOAT64, 2, sh + 1);
    ndf_array_init(&go1, gout + b * 10, NDF_DEVICE_CPU, NDF_FLOAT64, 2, osh + 1);
    ndf_array_init(&gi1a, gi1, NDF_DEVICE_CPU, NDF_FLOAT64, 2, sh + 1);
    ndf_array_init(&gd1a, gd1, NDF_DEVICE_CPU, NDF_FLOAT64, 2, dsh);
    ndf_array_init(&gt1a, gt1, NDF_DEVICE_CPU, NDF_FLOAT64, 1, &T);
    so.batch_dims = 0;
    assert_int_equal(ndf_soft_ect_backward(g_ctx, &in1, &dirs, &th, &go1, &gi1a, &gd1a, &gt1a, &so), NDF_OK);
    so.batch_dims = 1;
    for (int i = 0; i < 36; i++) assert_true(fabs(gi1[i] - gin[b * 36 + i]) <= 1e-12 * (1 + fabs(gi1[i])));
    for (int i = 0; i < 4; i++) sgd[i] += gd1[i];
    for (int k = 0; k < T; k++) sgt[k] += gt1[k];
  }
  for (int i = 0; i < 4; i++) assert_true(fabs(sgd[i] - gd[i]) <= 1e-10 * (1 + fabs(gd[i])));
  for (int k = 0; k < T; k++) assert_true(fabs(sgt[k] - gt[k]) <= 1e-10 * (1 + fabs(gt[k])));
}

/* Many pairs: every thread count gives the same (a 32 x 32 image, 40 directions). */
static void test_threads(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_seed(&r, g_seed ^ 0x77);
  const int64_t n = 32, m = 40, T = 32, sh[2] = {n, n};
  double *img = malloc(n * n * sizeof *img), u[80], t[32], *a = malloc(m * T * sizeof *a), *b = malloc(m * T * sizeof *b);
  for (int i = 0; i < n * n; i++) img[i] = tu_rng_chance(&r, 0.4) ? 0 : 1;
  for (int i = 0; i < 80; i++) u[i] = tu_rng_normal(&r);
  for (int k = 0; k < T; k++) t[k] = -30 + 60.0 * k / (T - 1);
  ect_of(2, sh, img, 0, NDF_ECC_V, u, m, t, T, a);
  double x[3][16];
  (void)x;
  ndf_ctx *one;
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  o.backend = NDF_BACKEND_CPU;
  o.cpu_threads = 1;
  assert_int_equal(ndf_ctx_create(&one, &o), NDF_OK);
  ndf_ctx *keep = g_ctx;
  g_ctx = one;
  ect_of(2, sh, img, 0, NDF_ECC_V, u, m, t, T, b);
  g_ctx = keep;
  ndf_ctx_destroy(one);
  for (int i = 0; i < m * T; i++) assert_true(a[i] == b[i]);
  free(img);
  free(a);
  free(b);
}

/* ------------------------------------------------------------------------ */
/* Contract                                                                 */

#define EXPECT_REJECT(call, status, opname, needle)                                            \
  do {                                                                                         \
    tu_poison(obuf, sizeof obuf);                                                              \
    ndf_status s_ = (call);                                                                    \
    if (s_ != (status) || !strstr(ndf_errmsg(g_ctx), (opname)) || !strstr(ndf_errmsg(g_ctx), (needle))) \
      fail_msg("line %d: got %s '%s', wanted %s with '%s'", __LINE__, ndf_status_name(s_),    \
               ndf_errmsg(g_ctx), ndf_status_name(status), needle);                            \
    assert_int_equal(tu_poison_check(obuf, sizeof obuf), -1);                                  \
  } while (0)

static void test_contract(void **state) {
  (void)state;
  const char *E = "ndf_euler_characteristic_transform";
  float img[4 * 5 * 6];
  for (int i = 0; i < 120; i++) img[i] = (float)(i % 3);
  double u[6] = {1, 0, 0, 0.6, 0.8, 0};
  int64_t sh3[3] = {4, 5, 6}, sh4[4] = {1, 4, 5, 6}, dsh[2] = {2, 3}, osh[2] = {2, 16};
  int64_t obuf[64];
  ndf_array in, dirs, out;
  ndf_array_init(&in, img, NDF_DEVICE_CPU, NDF_FLOAT32, 3, sh3);
  ndf_array_init(&dirs, u, NDF_DEVICE_CPU, NDF_FLOAT64, 2, dsh);
  ndf_array_init(&out, obuf, NDF_DEVICE_CPU, NDF_INT64, 2, osh);
  ndf_ect_options opt;
  ndf_ect_options_init(&opt);
  opt.nthresholds = 16;
  assert_int_equal(ndf_euler_characteristic_transform(g_ctx, &in, &dirs, &out, &opt), NDF_OK);

  img[37] = NAN;
  EXPECT_REJECT(ndf_euler_characteristic_transform(g_ctx, &in, &dirs, &out, &opt), NDF_EINVAL, E, "element 37");
  img[37] = INFINITY; /* binary: inf is foreground; weighted: rejected */
  assert_int_equal(ndf_euler_characteristic_transform(g_ctx, &in, &dirs, &out, &opt), NDF_OK);
  opt.weighted = 1;
  out.dtype = NDF_FLOAT64;
  EXPECT_REJECT(ndf_euler_characteristic_transform(g_ctx, &in, &dirs, &out, &opt), NDF_EINVAL, E, "not finite");
  img[37] = 1;
  assert_int_equal(ndf_euler_characteristic_transform(g_ctx, &in, &dirs, &out, &opt), NDF_OK);
  out.dtype = NDF_INT64; /* weighted wants float64 */
  EXPECT_REJECT(ndf_euler_characteristic_transform(g_ctx, &in, &dirs, &out, &opt), NDF_EINVAL, E, "'output'");
  opt.weighted = 0;
  out.dtype = NDF_FLOAT64; /* binary wants int64 */
  EXPECT_REJECT(ndf_euler_characteristic_transform(g_ctx, &in, &dirs, &out, &opt), NDF_EINVAL, E, "int64");
  out.dtype = NDF_INT64;
  opt.weighted = 2;
  EXPECT_REJECT(ndf_euler_characteristic_transform(g_ctx, &in, &dirs, &out, &opt), NDF_EINVAL, E, "'weighted'");
  opt.weighted = 0;

  /* directions */
  u[4] = NAN;
  EXPECT_REJECT(ndf_euler_characteristic_transform(g_ctx, &in, &dirs, &out, &opt), NDF_EINVAL, E, "directions[1, 1]");
  u[4] = INFINITY;
  EXPECT_REJECT(ndf_euler_characteristic_transform(g_ctx, &in, &dirs, &out, &opt), NDF_EINVAL, E, "'directions'");
  u[4] = 0.8;
  ndf_array bd = dirs;
  bd.shape[1] = 2;
  EXPECT_REJECT(ndf_euler_characteristic_transform(g_ctx, &in, &bd, &out, &opt), NDF_EINVAL, E, "(m, 3)");
  bd = dirs;
  bd.ndim = 1;
  EXPECT_REJECT(ndf_euler_characteristic_transform(g_ctx, &in, &bd, &out, &opt), NDF_EINVAL, E, "'directions'");
  bd = dirs;
  bd.dtype = NDF_FLOAT32;
  EXPECT_REJECT(ndf_euler_characteristic_transform(g_ctx, &in, &bd, &out, &opt), NDF_EINVAL, E, "float64");
  bd = dirs;
  bd.device = NDF_DEVICE_CUDA;
  EXPECT_REJECT(ndf_euler_characteristic_transform(g_ctx, &in, &bd, &out, &opt), NDF_EINVAL, E, "host");
  bd = dirs;
  bd.shape[0] = 0;
  EXPECT_REJECT(ndf_euler_characteristic_transform(g_ctx, &in, &bd, &out, &opt), NDF_EINVAL, E, "no directions");
  EXPECT_REJECT(ndf_euler_characteristic_transform(g_ctx, &in, NULL, &out, &opt), NDF_EINVAL, E, "'directions'");
  u[3] = u[4] = 1e308; /* 1.5e308 + 2e308: heights overflow */
  EXPECT_REJECT(ndf_euler_characteristic_transform(g_ctx, &in, &dirs, &out, &opt), NDF_EINVAL, E, "overflow");
  u[3] = 0.6;
  u[4] = 0.8;
  /* a zero direction is allowed: every height is 0 */
  double zu[6] = {0};
  ndf_array zd = dirs;
  zd.data = zu;
  assert_int_equal(ndf_euler_characteristic_transform(g_ctx, &in, &zd, &out, &opt), NDF_OK);

  /* shapes, dtypes, ranks */
  ndf_array bad = in;
  bad.dtype = NDF_INT64;
  EXPECT_REJECT(ndf_euler_characteristic_transform(g_ctx, &bad, &dirs, &out, &opt), NDF_EINVAL, E, "dtype int64");
  bad.dtype = NDF_INT16;
  EXPECT_REJECT(ndf_euler_characteristic_transform(g_ctx, &bad, &dirs, &out, &opt), NDF_EINVAL, E, "'input'");
  ndf_array in4;
  ndf_array_init(&in4, img, NDF_DEVICE_CPU, NDF_FLOAT32, 4, sh4);
  EXPECT_REJECT(ndf_euler_characteristic_transform(g_ctx, &in4, &dirs, &out, &opt), NDF_EINVAL, E, "4 spatial axes");
  opt.batch_dims = 2;
  EXPECT_REJECT(ndf_euler_characteristic_transform(g_ctx, &in, &dirs, &out, &opt), NDF_EINVAL, E, "1 spatial axes");
  opt.batch_dims = 0;
  bad = out;
  bad.shape[0] = 3;
  EXPECT_REJECT(ndf_euler_characteristic_transform(g_ctx, &in, &dirs, &bad, &opt), NDF_EINVAL, E, "shape[0]=3");
  bad = out;
  bad.ndim = 1;
  EXPECT_REJECT(ndf_euler_characteristic_transform(g_ctx, &in, &dirs, &bad, &opt), NDF_EINVAL, E, "rank 1");
  opt.nthresholds = 1;
  EXPECT_REJECT(ndf_euler_characteristic_transform(g_ctx, &in, &dirs, &out, &opt), NDF_EINVAL, E, "'nthresholds'");
  opt.nthresholds = 16;
  opt.spacing[1] = -1;
  EXPECT_REJECT(ndf_euler_characteristic_transform(g_ctx, &in, &dirs, &out, &opt), NDF_EINVAL, E, "'spacing'");
  opt.spacing[1] = NAN;
  EXPECT_REJECT(ndf_euler_characteristic_transform(g_ctx, &in, &dirs, &out, &opt), NDF_EINVAL, E, "'spacing'");
  opt.spacing[1] = 0;
  opt.construction = (ndf_ecc_construction)3;
  EXPECT_REJECT(ndf_euler_characteristic_transform(g_ctx, &in, &dirs, &out, &opt), NDF_EINVAL, E, "'construction'");
  opt.construction = NDF_ECC_V;
  opt.has_range = 1;
  opt.range_lo = 1;
  opt.range_hi = 0;
  EXPECT_REJECT(ndf_euler_characteristic_transform(g_ctx, &in, &dirs, &out, &opt), NDF_EINVAL, E, "'range'");
  opt.has_range = 0;
  ndf_array ov = out;
  ov.data = u;
  EXPECT_REJECT(ndf_euler_characteristic_transform(g_ctx, &in, &dirs, &ov, &opt), NDF_EINVAL, E, "overlaps the directions");
  EXPECT_REJECT(ndf_euler_characteristic_transform(g_ctx, NULL, &dirs, &out, &opt), NDF_EINVAL, E, "'input'");
  EXPECT_REJECT(ndf_euler_characteristic_transform(g_ctx, &in, &dirs, NULL, &opt), NDF_EINVAL, E, "'output'");
  EXPECT_REJECT(ndf_euler_characteristic_transform(g_ctx, &in, &dirs, &out, NULL), NDF_EINVAL, E, "'options'");

  /* an empty image: zeros everywhere */
  int64_t she[3] = {4, 0, 6};
  ndf_array ein;
  ndf_array_init(&ein, img, NDF_DEVICE_CPU, NDF_FLOAT32, 3, she);
  tu_poison(obuf, sizeof obuf);
  assert_int_equal(ndf_euler_characteristic_transform(g_ctx, &ein, &dirs, &out, &opt), NDF_OK);
  for (int i = 0; i < 32; i++) assert_int_equal(obuf[i], 0);

  /* CUDA arrays on a CPU context: NDF_ENODEV, output untouched (test_gpu_ect runs the CUDA path) */
  ndf_array cin = in, cout = out;
  cin.device = cout.device = NDF_DEVICE_CUDA;
  EXPECT_REJECT(ndf_euler_characteristic_transform(g_ctx, &cin, &dirs, &cout, &opt), NDF_ENODEV, E, "has none");

  /* soft */
  const char *SF = "ndf_soft_ect_forward", *SB = "ndf_soft_ect_backward";
  double t[16], fo[32], gout[32];
  for (int k = 0; k < 16; k++) t[k] = k - 8;
  for (int k = 0; k < 32; k++) gout[k] = 1;
  int64_t T = 16;
  ndf_array th, sout, go;
  ndf_array_init(&th, t, NDF_DEVICE_CPU, NDF_FLOAT64, 1, &T);
  ndf_array_init(&sout, obuf, NDF_DEVICE_CPU, NDF_FLOAT64, 2, osh);
  ndf_array_init(&go, gout, NDF_DEVICE_CPU, NDF_FLOAT64, 2, osh);
  (void)fo;
  ndf_soft_ect_options so;
  ndf_soft_ect_options_init(&so);
  assert_int_equal(ndf_soft_ect_forward(g_ctx, &in, &dirs, &th, &sout, &so), NDF_OK);
  so.lambda = 0;
  EXPECT_REJECT(ndf_soft_ect_forward(g_ctx, &in, &dirs, &th, &sout, &so), NDF_EINVAL, SF, "'lambda'");
  so.lambda = 1;
  t[2] = NAN;
  EXPECT_REJECT(ndf_soft_ect_forward(g_ctx, &in, &dirs, &th, &sout, &so), NDF_EINVAL, SF, "thresholds[2]");
  t[2] = -6;
  u[0] = NAN;
  EXPECT_REJECT(ndf_soft_ect_forward(g_ctx, &in, &dirs, &th, &sout, &so), NDF_EINVAL, SF, "directions[0, 0]");
  u[0] = 1;
  sout.dtype = NDF_INT64;
  EXPECT_REJECT(ndf_soft_ect_forward(g_ctx, &in, &dirs, &th, &sout, &so), NDF_EINVAL, SF, "'output'");
  sout.dtype = NDF_FLOAT64;
  cin = in;
  cin.device = NDF_DEVICE_CUDA;
  ndf_array csout = sout;
  csout.device = NDF_DEVICE_CUDA;
  /* CUDA arrays on a CPU context: NDF_ENODEV (test_gpu_ect runs the CUDA path); a host output: EINVAL */
  EXPECT_REJECT(ndf_soft_ect_forward(g_ctx, &cin, &dirs, &th, &csout, &so), NDF_ENODEV, SF, "has none");
  EXPECT_REJECT(ndf_soft_ect_forward(g_ctx, &in, &dirs, &th, &csout, &so), NDF_EINVAL, SF, "input's device");
  /* backward: grad arrays are checked before anything is written */
  ndf_array gd;
  int64_t gsh[2] = {2, 2};
  ndf_array_init(&gd, obuf, NDF_DEVICE_CPU, NDF_FLOAT64, 2, gsh);
  EXPECT_REJECT(ndf_soft_ect_backward(g_ctx, &in, &dirs, &th, &go, NULL, &gd, NULL, &so), NDF_EINVAL, SB,
                "'grad_directions'");
  ndf_array gi;
  ndf_array_init(&gi, obuf, NDF_DEVICE_CPU, NDF_INT64, 3, sh3);
  EXPECT_REJECT(ndf_soft_ect_backward(g_ctx, &in, &dirs, &th, &go, &gi, NULL, NULL, &so), NDF_EINVAL, SB, "'grad_input'");
  ndf_array cgo = go;
  cgo.device = NDF_DEVICE_CUDA;
  EXPECT_REJECT(ndf_soft_ect_backward(g_ctx, &cin, &dirs, &th, &cgo, NULL, NULL, NULL, &so), NDF_ENODEV, SB,
                "has none");
}

static int group_setup(void **state) {
  (void)state;
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  o.backend = NDF_BACKEND_CPU;
  if (ndf_ctx_create(&g_ctx, &o) != NDF_OK) return -1;
  g_seed = tu_seed("NDF_TEST_SEED");
  return 0;
}
static int group_teardown(void **state) {
  (void)state;
  ndf_ctx_destroy(g_ctx);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_brute_force_cases), cmocka_unit_test(test_invariants), cmocka_unit_test(test_soft),
      cmocka_unit_test(test_soft_batch),        cmocka_unit_test(test_threads),    cmocka_unit_test(test_contract),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
