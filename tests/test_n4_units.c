/*
 * test_n4_units.c -- the pieces of N4 bias-field correction (runtime/ops/n4/)
 * against their definitions, white box (the runtime's static copy):
 *   - the histogram sharpening against the same formulas with a naive DFT,
 *     and a Gaussian-blurred spike sharpened back onto the spike;
 *   - the one-level B-spline fit and the lattice evaluation against a brute
 *     force over every voxel and control point, with the uniform B-spline
 *     from the Cox-de Boor recursion (the runtime uses closed forms);
 *   - the refinement of a lattice between levels keeps the spline;
 *   - a field that is itself a B-spline of the lattice is approached by
 *     fits of the residual repeated (the N4 iteration without the sharpening).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "n4/n4.h"
#include "testutil.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* The cardinal B-spline of degree p on [0, p + 1] (Cox-de Boor, uniform integer knots). */
static double cardinal(int p, double x) {
  if (p == 0) return x >= 0.0 && x < 1.0 ? 1.0 : 0.0;
  return (x * cardinal(p - 1, x) + (p + 1 - x) * cardinal(p - 1, x - 1.0)) / p;
}

/* The weight of lattice point k at voxel i of an axis of n voxels and m lattice points: the
 * B-spline is continuous (degree >= 1), so the end point u = spans needs no special case. */
static double bw(int p, int64_t i, int64_t n, int64_t m, int64_t k) {
  const double u = n > 1 ? (double)i * (double)(m - p) / (double)(n - 1) : 0.0;
  return cardinal(p, u - (double)k + p);
}

static void unravel(int64_t x, int nd, const int64_t *sh, int64_t *idx) {
  for (int d = nd - 1; d >= 0; d--) {
    idx[d] = x % sh[d];
    x /= sh[d];
  }
}

/* B_k(x) = prod_d bw over the axes. */
static double tensor(int p, int nd, const int64_t *n, const int64_t *m, const int64_t *xi, const int64_t *ki) {
  double b = 1.0;
  for (int d = 0; d < nd; d++) b *= bw(p, xi[d], n[d], m[d], ki[d]);
  return b;
}

static int64_t prod(int nd, const int64_t *s) {
  int64_t v = 1;
  for (int d = 0; d < nd; d++) v *= s[d];
  return v;
}

static void brute_eval(int p, int nd, const int64_t *n, const int64_t *m, const double *lat, double *grid) {
  const int64_t nn = prod(nd, n), nl = prod(nd, m);
  for (int64_t x = 0; x < nn; x++) {
    int64_t xi[NDF_MAX_SPATIAL], ki[NDF_MAX_SPATIAL];
    unravel(x, nd, n, xi);
    double s = 0.0;
    for (int64_t k = 0; k < nl; k++) {
      unravel(k, nd, m, ki);
      s += lat[k] * tensor(p, nd, n, m, xi, ki);
    }
    grid[x] = s;
  }
}

/* Lee, Wolberg and Shin's one-level fit, from its definition. */
static void brute_fit(int p, int nd, const int64_t *n, const int64_t *m, const double *z, const double *c, double *lat) {
  const int64_t nn = prod(nd, n), nl = prod(nd, m);
  double *num = calloc((size_t)nl, sizeof *num), *den = calloc((size_t)nl, sizeof *den);
  assert_non_null(num);
  assert_non_null(den);
  for (int64_t x = 0; x < nn; x++) {
    if (!(c[x] > 0.0)) continue;
    int64_t xi[NDF_MAX_SPATIAL], ki[NDF_MAX_SPATIAL];
    unravel(x, nd, n, xi);
    double s2 = 0.0;
    for (int64_t k = 0; k < nl; k++) {
      unravel(k, nd, m, ki);
      const double b = tensor(p, nd, n, m, xi, ki);
      s2 += b * b;
    }
    for (int64_t k = 0; k < nl; k++) {
      unravel(k, nd, m, ki);
      const double b = tensor(p, nd, n, m, xi, ki);
      const double phi = z[x] * b / s2;
      num[k] += c[x] * b * b * phi;
      den[k] += c[x] * b * b;
    }
  }
  for (int64_t k = 0; k < nl; k++) lat[k] = den[k] > 0.0 ? num[k] / den[k] : 0.0;
  free(num);
  free(den);
}

static double max_abs_diff(const double *a, const double *b, int64_t n) {
  double e = 0.0;
  for (int64_t i = 0; i < n; i++) e = fmax(e, fabs(a[i] - b[i]));
  return e;
}

typedef struct geo {
  int nd, p;
  int64_t n[3], m[3];
} geo;

static const geo GEOS[] = {
    {1, 3, {17}, {7}},          {2, 3, {13, 9}, {6, 4}},     {3, 3, {7, 6, 5}, {5, 4, 6}},
    {2, 1, {8, 11}, {3, 5}},    {2, 2, {10, 7}, {5, 4}},     {2, 4, {12, 9}, {6, 7}},
    {3, 5, {9, 8, 7}, {7, 6, 6}}, {2, 3, {1, 9}, {4, 5}},
};

static void test_eval_and_fit(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_seed(&r, tu_seed("test_n4_units"));
  for (size_t g = 0; g < sizeof GEOS / sizeof GEOS[0]; g++) {
    const geo *G = &GEOS[g];
    const int64_t nn = prod(G->nd, G->n), nl = prod(G->nd, G->m);
    double *lat = malloc((size_t)nl * 8), *lat2 = malloc((size_t)nl * 8), *lat3 = malloc((size_t)nl * 8);
    double *grid = malloc((size_t)nn * 8), *grid2 = malloc((size_t)nn * 8), *c = malloc((size_t)nn * 8);
    assert_true(lat && lat2 && lat3 && grid && grid2 && c);
    for (int64_t k = 0; k < nl; k++) lat[k] = tu_rng_normal(&r);
    assert_int_equal(ndf__n4_eval_grid(G->nd, G->n, G->m, G->p, lat, grid), 0);
    brute_eval(G->p, G->nd, G->n, G->m, lat, grid2);
    double e = max_abs_diff(grid, grid2, nn);
    if (e > 1e-9) fail_msg("geometry %zu: evaluation differs from the brute force by %g", g, e);
    /* a fit of random values with random weights (some voxels unused) */
    for (int64_t x = 0; x < nn; x++) {
      grid[x] = tu_rng_normal(&r);
      c[x] = tu_rng_chance(&r, 0.2) ? 0.0 : 0.5 + tu_rng_unif(&r);
    }
    assert_int_equal(ndf__n4_fit_grid(G->nd, G->n, G->m, G->p, grid, c, lat2), 0);
    brute_fit(G->p, G->nd, G->n, G->m, grid, c, lat3);
    e = max_abs_diff(lat2, lat3, nl);
    if (e > 1e-9) fail_msg("geometry %zu: the fit differs from the brute force by %g", g, e);
    free(lat);
    free(lat2);
    free(lat3);
    free(grid);
    free(grid2);
    free(c);
  }
}

static void test_refine(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_seed(&r, tu_seed("test_n4_units.refine"));
  for (size_t g = 0; g < sizeof GEOS / sizeof GEOS[0]; g++) {
    const geo *G = &GEOS[g];
    int64_t m2[3], n[3];
    for (int d = 0; d < G->nd; d++) {
      m2[d] = 2 * (G->m[d] - G->p) + G->p;
      n[d] = G->n[d] * 2 + 1;
    }
    const int64_t nl = prod(G->nd, G->m), nl2 = prod(G->nd, m2), nn = prod(G->nd, n);
    double *lat = malloc((size_t)nl * 8), *lat2 = malloc((size_t)nl2 * 8), *tmp = malloc((size_t)nl2 * 8);
    double *a = malloc((size_t)nn * 8), *b = malloc((size_t)nn * 8);
    assert_true(lat && lat2 && tmp && a && b);
    for (int64_t k = 0; k < nl; k++) lat[k] = tu_rng_normal(&r);
    ndf__n4_refine(lat, lat2, G->nd, G->m, G->p, tmp);
    assert_int_equal(ndf__n4_eval_grid(G->nd, n, G->m, G->p, lat, a), 0);
    assert_int_equal(ndf__n4_eval_grid(G->nd, n, m2, G->p, lat2, b), 0);
    const double e = max_abs_diff(a, b, nn);
    if (e > 1e-12) fail_msg("geometry %zu: the refined lattice's spline differs by %g", g, e);
    free(lat);
    free(lat2);
    free(tmp);
    free(a);
    free(b);
  }
}

/* f, a cubic B-spline of the lattice, is approached by lat += fit(f - eval(lat)) repeated (the N4
 * iteration without the sharpening): the root-mean-square residual on the grid falls by a factor
 * 50 in 400 steps.  (A single fit does not interpolate, and the lattice itself converges slowly:
 * the corner control points weigh little on the grid.) */
static void test_recover(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_seed(&r, tu_seed("test_n4_units.recover"));
  const int64_t n[2] = {40, 33}, m[2] = {7, 8};
  const int64_t nn = prod(2, n), nl = prod(2, m);
  double *truth = malloc((size_t)nl * 8), *lat = calloc((size_t)nl, 8), *step = malloc((size_t)nl * 8);
  double *f = malloc((size_t)nn * 8), *g = malloc((size_t)nn * 8), *res = malloc((size_t)nn * 8), *c = malloc((size_t)nn * 8);
  assert_true(truth && lat && step && f && g && res && c);
  for (int64_t k = 0; k < nl; k++) truth[k] = tu_rng_normal(&r);
  for (int64_t x = 0; x < nn; x++) c[x] = 1.0;
  assert_int_equal(ndf__n4_eval_grid(2, n, m, 3, truth, f), 0);
  double first = 0.0, prev = 0.0;
  for (int it = 0; it <= 400; it++) {
    assert_int_equal(ndf__n4_eval_grid(2, n, m, 3, lat, g), 0);
    double ss = 0.0;
    for (int64_t x = 0; x < nn; x++) {
      res[x] = f[x] - g[x];
      ss += res[x] * res[x];
    }
    prev = sqrt(ss / (double)nn);
    if (it == 0) first = prev;
    assert_int_equal(ndf__n4_fit_grid(2, n, m, 3, res, c, step), 0);
    for (int64_t k = 0; k < nl; k++) lat[k] += step[k];
  }
  if (prev > first / 50) fail_msg("the residual fell only from %g to %g in 400 steps", first, prev);
  free(truth);
  free(lat);
  free(step);
  free(f);
  free(g);
  free(res);
  free(c);
}

/* ---- histogram sharpening ---------------------------------------------------------------- */

static void dft(const double *xr, const double *xi, double *yr, double *yi, int n, int sign) {
  for (int k = 0; k < n; k++) {
    double sr = 0.0, si = 0.0;
    for (int j = 0; j < n; j++) {
      const double a = sign * 2.0 * M_PI * (double)((int64_t)j * k % n) / n;
      sr += xr[j] * cos(a) - xi[j] * sin(a);
      si += xr[j] * sin(a) + xi[j] * cos(a);
    }
    yr[k] = sr;
    yi[k] = si;
  }
}

/* The sharpening of ITK's N4 written out with a naive DFT. */
static void naive_sharpen(const double *hist, int nb, double lo, double slope, double fwhm, double noise, double *e) {
  int np = 1;
  while (np < nb) np *= 2;
  np *= 2;
  const int off = (np - nb) / 2;
  double *b = calloc((size_t)np * 12, sizeof *b);
  assert_non_null(b);
  double *hr = b, *hi = b + np, *Vr = b + 2 * np, *Vi = b + 3 * np, *fr = b + 4 * np, *fi = b + 5 * np,
         *Fr = b + 6 * np, *Fi = b + 7 * np, *u = b + 8 * np, *t1 = b + 9 * np, *t2 = b + 10 * np, *t3 = b + 11 * np;
  for (int i = 0; i < nb; i++) hr[off + i] = hist[i];
  dft(hr, hi, Vr, Vi, np, -1);
  const double fw = fwhm / slope, a = 4.0 * log(2.0) / (fw * fw), s = 2.0 * sqrt(log(2.0) / M_PI) / fw;
  for (int i = 0; i < np; i++) {
    const int d = i <= np / 2 ? i : np - i; /* circular distance to 0 */
    fr[i] = s * exp(-a * (double)d * (double)d);
  }
  dft(fr, fi, Fr, Fi, np, -1);
  /* U = V conj(F) / (|F|^2 + noise), back to the bins, clipped at 0 */
  double *Ur = calloc((size_t)np, 8), *Ui = calloc((size_t)np, 8), *ur = calloc((size_t)np, 8), *ui = calloc((size_t)np, 8);
  assert_true(Ur && Ui && ur && ui);
  for (int k = 0; k < np; k++) {
    const double den = Fr[k] * Fr[k] + Fi[k] * Fi[k] + noise;
    Ur[k] = (Vr[k] * Fr[k] + Vi[k] * Fi[k]) / den;
    Ui[k] = (Vi[k] * Fr[k] - Vr[k] * Fi[k]) / den;
  }
  dft(Ur, Ui, ur, ui, np, 1);
  for (int i = 0; i < np; i++) u[i] = fmax(ur[i] / np, 0.0);
  /* circular convolutions with the Gaussian, directly: (F * x)[i] = sum_j f[(i - j) mod np] x[j] */
  for (int i = 0; i < np; i++) {
    double num = 0.0, den = 0.0;
    for (int j = 0; j < np; j++) {
      const double g = fr[((i - j) % np + np) % np];
      num += g * (lo + (double)(j - off) * slope) * u[j];
      den += g * u[j];
    }
    t1[i] = num;
    t2[i] = den;
  }
  for (int i = 0; i < nb; i++) e[i] = t2[off + i] != 0.0 ? t1[off + i] / t2[off + i] : 0.0;
  (void)t3;
  free(Ur);
  free(Ui);
  free(ur);
  free(ui);
  free(b);
}

static void test_sharpen(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_seed(&r, tu_seed("test_n4_units.sharpen"));
  const int bins[] = {200, 37, 64, 2};
  for (size_t t = 0; t < sizeof bins / sizeof bins[0]; t++) {
    ndf__n4_plan p;
    memset(&p, 0, sizeof p);
    p.nbins = bins[t];
    p.fwhm = t == 1 ? 0.3 : t == 3 ? 1.2 : 0.15; /* 2 bins 0.6 apart: a Gaussian over both */
    p.noise = t == 2 ? 0.1 : 0.01;
    double *h = malloc((size_t)p.nbins * 8), *e1 = malloc((size_t)p.nbins * 8), *e2 = malloc((size_t)p.nbins * 8);
    assert_true(h && e1 && e2);
    for (int i = 0; i < p.nbins; i++) h[i] = tu_rng_chance(&r, 0.1) ? 0.0 : 100.0 * tu_rng_unif(&r);
    const double lo = 3.0 + tu_rng_normal(&r), slope = 0.6 / (p.nbins - 1);
    assert_int_equal(ndf__n4_sharpen(&p, h, lo, slope, e1), 0);
    naive_sharpen(h, p.nbins, lo, slope, p.fwhm, p.noise, e2);
    const double e = max_abs_diff(e1, e2, p.nbins);
    if (e > 1e-9) fail_msg("%d bins: the sharpening differs from the naive DFT by %g", p.nbins, e);
    free(h);
    free(e1);
    free(e2);
  }
  /* A spike blurred by the Gaussian of the FWHM goes back to the spike: the voxels around it are
   * mapped close to its value. */
  ndf__n4_plan p;
  memset(&p, 0, sizeof p);
  p.nbins = 200;
  p.fwhm = 0.15;
  p.noise = 0.01;
  const double lo = 0.0, slope = 1.0 / 199, fw = p.fwhm / slope;
  const int c = 120;
  double h[200], e[200];
  for (int i = 0; i < 200; i++) h[i] = 1000.0 * exp(-4.0 * log(2.0) * (i - c) * (i - c) / (fw * fw));
  assert_int_equal(ndf__n4_sharpen(&p, h, lo, slope, e), 0);
  for (int i = c - (int)(fw / 2); i <= c + (int)(fw / 2); i++)
    if (fabs(e[i] - c * slope) > 0.5 * fabs((i - c) * slope) + 1e-3)
      fail_msg("bin %d maps to %g, not near the spike's value %g", i, e[i], c * slope);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_eval_and_fit),
      cmocka_unit_test(test_refine),
      cmocka_unit_test(test_recover),
      cmocka_unit_test(test_sharpen),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
