/*
 * test_ecc.c -- exact Euler characteristic curves (ndf_euler_characteristic_curve)
 * on the CPU backend against a brute-force oracle that builds the cubical
 * complex explicitly, and against scikit-image's euler_number of {f <= t}
 * (tests/oracle_ecc.py; skipped with a note when skimage is missing), plus
 * the contract (every rejected input: status, a message naming the op and
 * the argument, untouched output).
 *
 * The brute force knows nothing of local contributions: it lists every cell of
 * the complex on the doubled grid (coordinate c per axis; odd c = the cell
 * spans that axis), gives it its filtration value (V: max of its vertices;
 * T: min of the top cells holding it), and counts (-1)^dim over the cells
 * with value <= t.
 *
 * Random cases: 2-D and 3-D, both constructions, 0-2 batch axes, every input
 * dtype, values drawn from a few levels (ties) or constant images, strided /
 * Fortran / negative-stride inputs, strided and reversed outputs whose gaps
 * must keep their poison, thresholds as values (unsorted, duplicates, +-inf,
 * equal to image values) or evenly spaced over [min, max] or a range.
 * NDF_TEST_SEED repeats a run; NDF_TEST_CASES sets the number of cases.
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

#include "ndfio.h"
#include "ndforge.h"
#include "testutil.h"

#ifndef NDF_TEST_PYTHON
#error "NDF_TEST_PYTHON must be defined by the build"
#endif
#ifndef NDF_TEST_ORACLE
#error "NDF_TEST_ORACLE (path of tests/oracle_ecc.py) must be defined by the build"
#endif

static ndf_ctx *g_ctx;
static uint64_t g_seed;

/* ------------------------------------------------------------------------ */
/* Brute force: the complex cell by cell                                    */

/* chi[k] for each threshold t[k] of one image (nsp axes of shape sh, values
 * v in C order). */
static void brute_ecc(int nsp, const int64_t *sh, const double *v, int construction, const double *t, int64_t T,
                      int64_t *chi) {
  int64_t g[3], ncell = 1;
  for (int d = 0; d < nsp; d++) {
    g[d] = construction == NDF_ECC_V ? 2 * sh[d] - 1 : 2 * sh[d] + 1;
    if (sh[d] == 0) g[d] = 0;
    ncell *= g[d];
  }
  for (int64_t k = 0; k < T; k++) chi[k] = 0;
  for (int64_t cell = 0; cell < ncell; cell++) {
    int64_t cc[3], r = cell;
    for (int d = nsp - 1; d >= 0; d--) {
      cc[d] = r % g[d];
      r /= g[d];
    }
    int dim = 0;
    /* voxels that decide the cell: per axis a range [lo, hi] of coordinates */
    int64_t lo[3], hi[3];
    for (int d = 0; d < nsp; d++) {
      if (cc[d] % 2) dim++;
      if (construction == NDF_ECC_V) {
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
    double val = construction == NDF_ECC_V ? -INFINITY : INFINITY;
    int64_t x[3];
    for (x[0] = lo[0]; x[0] <= hi[0]; x[0]++)
      for (x[1] = lo[1]; x[1] <= hi[1]; x[1]++)
        for (x[2] = nsp == 3 ? lo[2] : 0; x[2] <= (nsp == 3 ? hi[2] : 0); x[2]++) {
          int64_t li = x[0] * sh[1] + x[1];
          if (nsp == 3) li = li * sh[2] + x[2];
          double f = v[li];
          if (construction == NDF_ECC_V ? f > val : f < val) val = f;
        }
    for (int64_t k = 0; k < T; k++)
      if (val <= t[k]) chi[k] += dim % 2 ? -1 : 1;
  }
}

/* ------------------------------------------------------------------------ */
/* Random cases                                                             */

typedef struct ecase {
  int nsp, nb, ndim;
  int64_t shape[5];
  ndf_dtype dtype;
  int construction;
  int tmode; /* 0 values, 1 [min, max], 2 range */
  int64_t T;
  double lo, hi;
  double *values;
} ecase;

static const ndf_dtype k_dtypes[4] = {NDF_UINT8, NDF_UINT16, NDF_FLOAT32, NDF_FLOAT64};

/* Fills a C-contiguous input of the case: a few levels (ties) or a constant. */
static void fill_input(tu_rng *r, const ndf_array *a) {
  const int64_t n = ndf_array_size(a);
  const int constant = tu_rng_chance(r, 0.08);
  const int levels = (int)tu_rng_int(r, 2, 12);
  const double scale = a->dtype == NDF_UINT8 ? 20 : a->dtype == NDF_UINT16 ? 5000 : tu_rng_unif(r) * 4 - 2;
  const double off = a->dtype == NDF_UINT8 || a->dtype == NDF_UINT16 ? 0 : tu_rng_normal(r);
  const double c0 = (double)tu_rng_int(r, 0, levels - 1);
  for (int64_t i = 0; i < n; i++) {
    double lv = constant ? c0 : (double)tu_rng_int(r, 0, levels - 1);
    double v = off + scale * lv;
    if (a->dtype == NDF_FLOAT32) v = (float)v;
    tu_set(a, i, v);
  }
}

static void make_case(tu_rng *r, ecase *c) {
  memset(c, 0, sizeof *c);
  c->nsp = tu_rng_chance(r, 0.5) ? 2 : 3;
  c->nb = (int)tu_rng_int(r, 0, 2);
  c->ndim = c->nb + c->nsp;
  for (int d = 0; d < c->nb; d++) c->shape[d] = tu_rng_int(r, 1, 3);
  for (int d = 0; d < c->nsp; d++) c->shape[c->nb + d] = c->nsp == 2 ? tu_rng_int(r, 1, 9) : tu_rng_int(r, 1, 6);
  c->dtype = k_dtypes[tu_rng_int(r, 0, 3)];
  c->construction = tu_rng_chance(r, 0.5) ? NDF_ECC_V : NDF_ECC_T;
  c->tmode = (int)tu_rng_int(r, 0, 2);
  c->T = tu_rng_int(r, 2, 17);
  if (c->tmode == 2) {
    c->lo = tu_rng_normal(r) * 30;
    c->hi = c->lo + tu_rng_unif(r) * 200 * (tu_rng_chance(r, 0.1) ? 0 : 1);
  }
}

/* The thresholds of the case, computed here from the documented formula. */
static void case_thresholds(const ecase *c, const ndf_array *in, double *t) {
  if (c->tmode == 0) {
    memcpy(t, c->values, (size_t)c->T * sizeof *t);
    return;
  }
  double lo = c->lo, hi = c->hi;
  if (c->tmode == 1) {
    lo = INFINITY;
    hi = -INFINITY;
    for (int64_t i = 0; i < ndf_array_size(in); i++) {
      double v = tu_get(in, i);
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
    if (ndf_array_size(in) == 0) lo = hi = 0;
  }
  for (int64_t k = 0; k < c->T; k++) t[k] = lo + (hi - lo) * (double)k / (double)(c->T - 1);
  t[c->T - 1] = hi;
}

/* Runs one random case; returns the number of failures (printing them). */
static int run_case(tu_rng *r, int id, FILE *skim) {
  ecase c;
  make_case(r, &c);
  tu_array in, alt;
  assert_int_equal(tu_array_alloc(&in, c.dtype, c.ndim, c.shape), 0);
  fill_input(r, &in.arr);
  if (c.tmode == 0) {
    c.values = malloc((size_t)c.T * sizeof *c.values);
    for (int64_t k = 0; k < c.T; k++) {
      double v;
      int pick = (int)tu_rng_int(r, 0, 9);
      if (pick == 0) v = INFINITY;
      else if (pick == 1) v = -INFINITY;
      else if (pick < 6 && ndf_array_size(&in.arr) > 0)
        v = tu_get(&in.arr, tu_rng_int(r, 0, ndf_array_size(&in.arr) - 1)); /* equal to an image value */
      else if (k > 0 && pick == 6) v = c.values[k - 1];                       /* duplicate */
      else v = tu_get(&in.arr, 0) + tu_rng_normal(r) * 100;
      c.values[k] = v;
    }
  }
  /* the input in some layout */
  static const int layouts[] = {TU_LAYOUT_C, TU_LAYOUT_FORTRAN, TU_LAYOUT_PADDED,
                                TU_LAYOUT_PADDED | TU_LAYOUT_NEGATIVE | TU_LAYOUT_OFFSET};
  int layout = layouts[tu_rng_int(r, 0, 3)];
  assert_int_equal(tu_array_relayout(&alt, &in.arr, layout, r), 0);
  /* output: (batch..., T) int64, C order, or strided with poisoned gaps, maybe reversed along T */
  int64_t oshape[4];
  for (int d = 0; d < c.nb; d++) oshape[d] = c.shape[d];
  oshape[c.nb] = c.T;
  const int onb = c.nb + 1;
  int64_t nout = 1;
  for (int d = 0; d < onb; d++) nout *= oshape[d];
  const int ostride = (int)tu_rng_int(r, 1, 3), reverse = tu_rng_chance(r, 0.3);
  const size_t obytes = (size_t)(nout * ostride + 4) * sizeof(int64_t);
  int64_t *obuf = malloc(obytes);
  tu_poison(obuf, obytes);
  ndf_array out;
  ndf_array_init(&out, obuf, NDF_DEVICE_CPU, NDF_INT64, onb, oshape);
  for (int d = 0; d < onb; d++) out.strides[d] *= ostride;
  if (reverse) {
    out.data = obuf + (c.T - 1) * out.strides[c.nb];
    out.strides[c.nb] = -out.strides[c.nb];
  }
  ndf_ecc_options opt;
  ndf_ecc_options_init(&opt);
  opt.construction = (ndf_ecc_construction)c.construction;
  opt.batch_dims = c.nb;
  ndf_array vals;
  if (c.tmode == 0) {
    int64_t vs = c.T;
    ndf_array_init(&vals, c.values, NDF_DEVICE_CPU, NDF_FLOAT64, 1, &vs);
    opt.values = &vals;
  } else {
    opt.nthresholds = c.T;
    opt.has_range = c.tmode == 2;
    opt.range_lo = c.lo;
    opt.range_hi = c.hi;
  }
  char sh[64];
  tu_shape_str(&in.arr, sh, sizeof sh);
  ndf_status s = ndf_euler_characteristic_curve(g_ctx, &alt.arr, &out, &opt);
  int fails = 0;
  if (s != NDF_OK) {
    print_error("case %d (%s %s %s nb=%d): %s: %s\n", id, sh, ndf_dtype_name(c.dtype),
                ndf_ecc_construction_name(opt.construction), c.nb, ndf_status_name(s), ndf_errmsg(g_ctx));
    fails++;
    goto done;
  }
  double *t = malloc((size_t)c.T * sizeof *t), *tl = malloc((size_t)c.T * sizeof *tl);
  case_thresholds(&c, &in.arr, t);
  if (ndf_ecc_thresholds(g_ctx, &alt.arr, &opt, tl, c.T) != NDF_OK || memcmp(t, tl, (size_t)c.T * sizeof *t)) {
    print_error("case %d: ndf_ecc_thresholds differs from the documented formula (%s)\n", id, ndf_errmsg(g_ctx));
    fails++;
  }
  int64_t nimg = 1, npix = 1;
  for (int d = 0; d < c.nb; d++) nimg *= c.shape[d];
  for (int d = 0; d < c.nsp; d++) npix *= c.shape[c.nb + d];
  double *v = malloc((size_t)(npix ? npix : 1) * sizeof *v);
  int64_t *chi = malloc((size_t)c.T * sizeof *chi);
  for (int64_t img = 0; img < nimg && !fails; img++) {
    for (int64_t i = 0; i < npix; i++) v[i] = tu_get(&in.arr, img * npix + i);
    brute_ecc(c.nsp, c.shape + c.nb, v, c.construction, t, c.T, chi);
    int64_t oo = 0, rem = img;
    for (int d = c.nb - 1; d >= 0; d--) {
      oo += (rem % c.shape[d]) * out.strides[d];
      rem /= c.shape[d];
    }
    for (int64_t k = 0; k < c.T; k++) {
      int64_t got = ((int64_t *)out.data)[oo + k * out.strides[c.nb]];
      if (got != chi[k]) {
        print_error("case %d (%s %s %s nb=%d layout=%d tmode=%d): image %lld t[%lld]=%g: chi %lld, brute force %lld\n",
                    id, sh, ndf_dtype_name(c.dtype), ndf_ecc_construction_name(opt.construction), c.nb, layout,
                    c.tmode, (long long)img, (long long)k, t[k], (long long)got, (long long)chi[k]);
        fails++;
        break;
      }
    }
    /* one image per case to the skimage cross-check: a line "path construction t..." */
    if (skim && img == 0 && npix > 0) {
      char path[512];
      snprintf(path, sizeof path, "%s/img%04d.npy", getenv("NDF_ECC_SKDIR"), id);
      int64_t ish[3];
      for (int d = 0; d < c.nsp; d++) ish[d] = c.shape[c.nb + d];
      ndf_array ia;
      ndf_array_init(&ia, v, NDF_DEVICE_CPU, NDF_FLOAT64, c.nsp, ish);
      char err[256];
      if (ndfio_npy_write(path, &ia, err, sizeof err) == NDF_OK) {
        fprintf(skim, "%s %s", path, ndf_ecc_construction_name(opt.construction));
        for (int64_t k = 0; k < c.T; k++)
          if (isfinite(t[k])) fprintf(skim, " %.17g:%lld", t[k], (long long)chi[k]);
        fprintf(skim, "\n");
      }
    }
  }
  /* the gaps of a strided output keep their poison */
  if (!fails && ostride > 1) {
    unsigned char *ref = malloc(obytes);
    tu_poison(ref, obytes);
    for (int64_t i = 0; i < (int64_t)(obytes / sizeof(int64_t)); i++) {
      int64_t rr = i;
      int written = 0;
      (void)rr;
      for (int64_t e = 0; e < nout && !written; e++) {
        int64_t off = 0, q = e;
        for (int d = onb - 1; d >= 0; d--) {
          off += (q % oshape[d]) * out.strides[d];
          q /= oshape[d];
        }
        if ((int64_t *)out.data + off == obuf + i) written = 1;
      }
      if (!written && memcmp(ref + i * 8, (unsigned char *)obuf + i * 8, 8)) {
        print_error("case %d: output gap element %lld was written\n", id, (long long)i);
        fails++;
        break;
      }
    }
    free(ref);
  }
  free(v);
  free(chi);
  free(t);
  free(tl);
done:
  free(obuf);
  free(c.values);
  tu_array_free(&in);
  tu_array_free(&alt);
  return fails;
}

static void test_brute_force_cases(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_seed(&r, g_seed);
  const long n = tu_env_long("NDF_TEST_CASES", 600);
  int fails = 0;
  for (long i = 0; i < n; i++) fails += run_case(&r, (int)i, NULL);
  if (fails) print_error("NDF_TEST_SEED=%llu repeats this run\n", (unsigned long long)g_seed);
  assert_int_equal(fails, 0);
}

/* chi at each finite threshold against skimage.measure.euler_number({f <= t}). */
static void test_skimage_cross_check(void **state) {
  (void)state;
  char dir[512];
  assert_int_equal(tu_mkdtemp(dir, sizeof dir, "ndf-ecc"), 0);
  setenv("NDF_ECC_SKDIR", dir, 1);
  char list[600];
  snprintf(list, sizeof list, "%s/cases.txt", dir);
  FILE *f = fopen(list, "w");
  assert_non_null(f);
  tu_rng r;
  tu_rng_seed(&r, g_seed ^ 0x5eed);
  int fails = 0;
  const long n = tu_env_long("NDF_TEST_CASES", 600) / 16 + 1;
  for (long i = 0; i < n; i++) fails += run_case(&r, (int)i, f);
  fclose(f);
  assert_int_equal(fails, 0);
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "'%s' '%s' '%s'", NDF_TEST_PYTHON, NDF_TEST_ORACLE, list);
  int rc = system(cmd);
  rc = rc == -1 ? -1 : WEXITSTATUS(rc);
  if (rc == 77) {
    printf("NOTE: scikit-image is not installed for %s: the euler_number cross-check was skipped "
           "(apt-get install python3-skimage enables it)\n", NDF_TEST_PYTHON);
    tu_rmtree(dir);
    skip();
  }
  if (rc != 0) print_error("oracle_ecc.py failed (rc %d); cases kept in %s\n", rc, dir);
  else tu_rmtree(dir);
  assert_int_equal(rc, 0);
}

/* Hand-checked invariants: chi(-inf) = 0, chi(max) = 1 for one image; a
 * checkerboard's V and T curves differ as connectivity says. */
static void test_invariants(void **state) {
  (void)state;
  /* 4x4 checkerboard of 0/1: {f <= 0} is 8 isolated pixels in V (chi 8), one
   * 8-connected blob with 1 hole... counted by the brute force. */
  double img[16];
  for (int i = 0; i < 16; i++) img[i] = ((i / 4) + (i % 4)) % 2;
  int64_t sh[2] = {4, 4}, os[1] = {3};
  ndf_array in, out;
  ndf_array_init(&in, img, NDF_DEVICE_CPU, NDF_FLOAT64, 2, sh);
  int64_t chi[3], ref[3];
  ndf_array_init(&out, chi, NDF_DEVICE_CPU, NDF_INT64, 1, os);
  double tv[3] = {-INFINITY, 0, 1};
  int64_t tn = 3;
  ndf_array vals;
  ndf_array_init(&vals, tv, NDF_DEVICE_CPU, NDF_FLOAT64, 1, &tn);
  ndf_ecc_options opt;
  ndf_ecc_options_init(&opt);
  opt.values = &vals;
  for (int k = 0; k < 2; k++) {
    opt.construction = k ? NDF_ECC_T : NDF_ECC_V;
    assert_int_equal(ndf_euler_characteristic_curve(g_ctx, &in, &out, &opt), NDF_OK);
    brute_ecc(2, sh, img, opt.construction, tv, 3, ref);
    assert_int_equal(chi[0], 0);
    assert_int_equal(chi[2], 1);
    assert_int_equal(chi[1], ref[1]);
  }
  /* V: 8 isolated zeros; T: the zeros touch at corners: one component with
   * the 4 interior ones... as counted by the brute force above, and V must be 8. */
  opt.construction = NDF_ECC_V;
  assert_int_equal(ndf_euler_characteristic_curve(g_ctx, &in, &out, &opt), NDF_OK);
  assert_int_equal(chi[1], 8);
}

/* 3-D contributions beyond {-1, 0, 1}: a voxel above all its 26 neighbours. */
static void test_big_contributions(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_seed(&r, g_seed + 7);
  for (int rep = 0; rep < 40; rep++) {
    int64_t sh[3] = {5, 5, 5};
    double v[125];
    for (int i = 0; i < 125; i++) v[i] = (double)tu_rng_int(&r, 0, rep % 2 ? 1 : 3);
    double t[4] = {0, 1, 2, 3};
    int64_t chi[4], ref[4], T = 4;
    ndf_array in, out, vals;
    ndf_array_init(&in, v, NDF_DEVICE_CPU, NDF_FLOAT64, 3, sh);
    ndf_array_init(&out, chi, NDF_DEVICE_CPU, NDF_INT64, 1, &T);
    ndf_array_init(&vals, t, NDF_DEVICE_CPU, NDF_FLOAT64, 1, &T);
    ndf_ecc_options opt;
    ndf_ecc_options_init(&opt);
    opt.values = &vals;
    for (int k = 0; k < 2; k++) {
      opt.construction = k ? NDF_ECC_T : NDF_ECC_V;
      assert_int_equal(ndf_euler_characteristic_curve(g_ctx, &in, &out, &opt), NDF_OK);
      brute_ecc(3, sh, v, opt.construction, t, 4, ref);
      for (int j = 0; j < 4; j++) assert_int_equal(chi[j], ref[j]);
    }
  }
}


/* Larger images (above the 4096 voxels under which a call runs on one
 * thread) through contexts of 1, 2 and 3 threads: the row-parallel path (one
 * image, per-thread histograms) agrees with the brute force. */
static void test_threads(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_seed(&r, g_seed + 13);
  for (int nthreads = 1; nthreads <= 3; nthreads++) {
    ndf_ctx_options o;
    ndf_ctx_options_init(&o);
    o.backend = NDF_BACKEND_CPU;
    o.cpu_threads = nthreads;
    ndf_ctx *ctx;
    assert_int_equal(ndf_ctx_create(&ctx, &o), NDF_OK);
    for (int rep = 0; rep < 4; rep++) {
      const int nsp = rep % 2 ? 3 : 2;
      int64_t sh[3] = {nsp == 2 ? 70 : 18, nsp == 2 ? 80 : 19, 20}, n = nsp == 2 ? 70 * 80 : 18 * 19 * 20, T = 33;
      double *v = malloc((size_t)n * sizeof *v), t[33];
      for (int64_t i = 0; i < n; i++) v[i] = (double)tu_rng_int(&r, 0, 20);
      int64_t chi[33], ref[33];
      ndf_array in, out;
      ndf_array_init(&in, v, NDF_DEVICE_CPU, NDF_FLOAT64, nsp, sh);
      ndf_array_init(&out, chi, NDF_DEVICE_CPU, NDF_INT64, 1, &T);
      ndf_ecc_options opt;
      ndf_ecc_options_init(&opt);
      opt.nthresholds = T;
      opt.construction = rep / 2 ? NDF_ECC_T : NDF_ECC_V;
      assert_int_equal(ndf_euler_characteristic_curve(ctx, &in, &out, &opt), NDF_OK);
      for (int k = 0; k < T; k++) t[k] = 0 + 20.0 * k / (T - 1);
      t[T - 1] = 20;
      brute_ecc(nsp, sh, v, opt.construction, t, T, ref);
      for (int k = 0; k < T; k++)
        if (chi[k] != ref[k]) fail_msg("%d threads rep %d t=%g: %lld, brute force %lld", nthreads, rep, t[k], (long long)chi[k], (long long)ref[k]);
      free(v);
    }
    /* above 65536 voxels the NaN / min / max scan runs in parallel too */
    {
      int64_t sh[2] = {256, 260}, n = 256 * 260, T = 9;
      double *v = malloc((size_t)n * sizeof *v), t[9];
      for (int64_t i = 0; i < n; i++) v[i] = (double)tu_rng_int(&r, 0, 50) - 3.5;
      int64_t chi[9], ref[9];
      ndf_array in, out;
      ndf_array_init(&in, v, NDF_DEVICE_CPU, NDF_FLOAT64, 2, sh);
      ndf_array_init(&out, chi, NDF_DEVICE_CPU, NDF_INT64, 1, &T);
      ndf_ecc_options opt;
      ndf_ecc_options_init(&opt);
      opt.nthresholds = T;
      double mn = INFINITY, mx = -INFINITY;
      for (int64_t i = 0; i < n; i++) {
        if (v[i] < mn) mn = v[i];
        if (v[i] > mx) mx = v[i];
      }
      assert_int_equal(ndf_euler_characteristic_curve(ctx, &in, &out, &opt), NDF_OK);
      for (int k = 0; k < T; k++) t[k] = mn + (mx - mn) * (double)k / (double)(T - 1);
      t[T - 1] = mx;
      brute_ecc(2, sh, v, NDF_ECC_V, t, T, ref);
      for (int k = 0; k < T; k++) assert_int_equal(chi[k], ref[k]);
      v[n - 5] = NAN;
      v[40000] = NAN;
      assert_int_equal(ndf_euler_characteristic_curve(ctx, &in, &out, &opt), NDF_EINVAL);
      assert_non_null(strstr(ndf_errmsg(ctx), "element 40000 "));
      free(v);
    }
    ndf_ctx_destroy(ctx);
  }
}

/* ------------------------------------------------------------------------ */
/* Contract                                                                 */

#define EXPECT_REJECT(call, status, needle)                                                 \
  do {                                                                                      \
    tu_poison(obuf, sizeof obuf);                                                           \
    ndf_status s_ = (call);                                                                 \
    if (s_ != (status) || !strstr(ndf_errmsg(g_ctx), "ndf_euler_characteristic_curve") ||   \
        !strstr(ndf_errmsg(g_ctx), (needle)))                                               \
      fail_msg("line %d: got %s '%s', wanted %s with '%s'", __LINE__, ndf_status_name(s_), \
               ndf_errmsg(g_ctx), ndf_status_name(status), needle);                         \
    assert_int_equal(tu_poison_check(obuf, sizeof obuf), -1);                               \
  } while (0)

static void test_contract(void **state) {
  (void)state;
  float img[4 * 5 * 6];
  for (int i = 0; i < 120; i++) img[i] = (float)(i % 7);
  int64_t sh3[3] = {4, 5, 6}, sh2[2] = {5, 6}, os[2] = {4, 16}, os1[1] = {16};
  int64_t obuf[64];
  ndf_array in, out, in2, out1;
  ndf_array_init(&in, img, NDF_DEVICE_CPU, NDF_FLOAT32, 3, sh3);
  ndf_array_init(&in2, img, NDF_DEVICE_CPU, NDF_FLOAT32, 2, sh2);
  ndf_array_init(&out, obuf, NDF_DEVICE_CPU, NDF_INT64, 2, os);
  ndf_array_init(&out1, obuf, NDF_DEVICE_CPU, NDF_INT64, 1, os1);
  ndf_ecc_options opt;
  ndf_ecc_options_init(&opt);
  opt.nthresholds = 16;
  opt.batch_dims = 1;
  assert_int_equal(ndf_euler_characteristic_curve(g_ctx, &in, &out, &opt), NDF_OK);

  /* NaN input */
  img[37] = NAN;
  EXPECT_REJECT(ndf_euler_characteristic_curve(g_ctx, &in, &out, &opt), NDF_EINVAL, "NaN");
  assert_non_null(strstr(ndf_errmsg(g_ctx), "element 37"));
  img[37] = INFINITY; /* infinite values: no [min, max] thresholds, fine with a range */
  EXPECT_REJECT(ndf_euler_characteristic_curve(g_ctx, &in, &out, &opt), NDF_EINVAL, "infinite");
  opt.has_range = 1;
  opt.range_lo = 0;
  opt.range_hi = 6;
  assert_int_equal(ndf_euler_characteristic_curve(g_ctx, &in, &out, &opt), NDF_OK);
  opt.has_range = 0;
  /* a context with deferred data checks (ndf_ctx_options.deferred_errors): on the CPU every check is
   * the call's own -- the error comes at once, nothing is left for the synchronize */
  {
    ndf_ctx_options co;
    ndf_ctx_options_init(&co);
    co.backend = NDF_BACKEND_CPU;
    co.deferred_errors = 1;
    ndf_ctx *dc;
    assert_int_equal(ndf_ctx_create(&dc, &co), NDF_OK);
    img[37] = NAN;
    assert_int_equal(ndf_euler_characteristic_curve(dc, &in, &out, &opt), NDF_EINVAL);
    assert_non_null(strstr(ndf_errmsg(dc), "element 37 "));
    assert_int_equal(ndf_ctx_synchronize(dc), NDF_OK);
    img[37] = 2;
    assert_int_equal(ndf_euler_characteristic_curve(dc, &in, &out, &opt), NDF_OK);
    assert_int_equal(ndf_ctx_synchronize(dc), NDF_OK);
    ndf_ctx_destroy(dc);
  }
  img[37] = 2;

  /* dtypes, ranks, batch_dims */
  ndf_array bad = in;
  bad.dtype = NDF_INT16;
  EXPECT_REJECT(ndf_euler_characteristic_curve(g_ctx, &bad, &out, &opt), NDF_EINVAL, "'input'");
  bad = out;
  bad.dtype = NDF_INT32;
  EXPECT_REJECT(ndf_euler_characteristic_curve(g_ctx, &in, &bad, &opt), NDF_EINVAL, "int64");
  opt.batch_dims = 2;
  EXPECT_REJECT(ndf_euler_characteristic_curve(g_ctx, &in, &out, &opt), NDF_EINVAL, "'batch_dims'");
  opt.batch_dims = 3;
  EXPECT_REJECT(ndf_euler_characteristic_curve(g_ctx, &in, &out, &opt), NDF_EINVAL, "'batch_dims'");
  opt.batch_dims = 0;
  EXPECT_REJECT(ndf_euler_characteristic_curve(g_ctx, &in, &out, &opt), NDF_EINVAL, "'output'"); /* rank */
  assert_int_equal(ndf_euler_characteristic_curve(g_ctx, &in, &out1, &opt), NDF_OK);
  opt.batch_dims = 1;
  EXPECT_REJECT(ndf_euler_characteristic_curve(g_ctx, &in2, &out1, &opt), NDF_EINVAL, "'batch_dims'"); /* 1 spatial axis */
  opt.nthresholds = 15;
  EXPECT_REJECT(ndf_euler_characteristic_curve(g_ctx, &in, &out, &opt), NDF_EINVAL, "shape[1]=16");
  opt.nthresholds = 1;
  EXPECT_REJECT(ndf_euler_characteristic_curve(g_ctx, &in, &out, &opt), NDF_EINVAL, "'nthresholds'");
  opt.nthresholds = 16;
  opt.construction = (ndf_ecc_construction)5;
  EXPECT_REJECT(ndf_euler_characteristic_curve(g_ctx, &in, &out, &opt), NDF_EINVAL, "'construction'");
  opt.construction = NDF_ECC_T;

  /* ranges and values */
  opt.has_range = 1;
  opt.range_lo = 3;
  opt.range_hi = 2;
  EXPECT_REJECT(ndf_euler_characteristic_curve(g_ctx, &in, &out, &opt), NDF_EINVAL, "'range'");
  opt.range_lo = NAN;
  EXPECT_REJECT(ndf_euler_characteristic_curve(g_ctx, &in, &out, &opt), NDF_EINVAL, "'range'");
  double tv[16];
  for (int k = 0; k < 16; k++) tv[k] = k;
  int64_t tn = 16;
  ndf_array vals;
  ndf_array_init(&vals, tv, NDF_DEVICE_CPU, NDF_FLOAT64, 1, &tn);
  opt.values = &vals;
  EXPECT_REJECT(ndf_euler_characteristic_curve(g_ctx, &in, &out, &opt), NDF_EINVAL, "'has_range'");
  opt.has_range = 0;
  assert_int_equal(ndf_euler_characteristic_curve(g_ctx, &in, &out, &opt), NDF_OK);
  tv[3] = NAN;
  EXPECT_REJECT(ndf_euler_characteristic_curve(g_ctx, &in, &out, &opt), NDF_EINVAL, "values[3] is NaN");
  tv[3] = 3;
  vals.dtype = NDF_INT32;
  EXPECT_REJECT(ndf_euler_characteristic_curve(g_ctx, &in, &out, &opt), NDF_EINVAL, "'values'");
  vals.dtype = NDF_FLOAT64;
  vals.device = NDF_DEVICE_CUDA;
  EXPECT_REJECT(ndf_euler_characteristic_curve(g_ctx, &in, &out, &opt), NDF_EINVAL, "'values'");
  vals.device = NDF_DEVICE_CPU;

  /* overlap, bad layouts, NULLs */
  ndf_array ov = out;
  ov.data = img;
  EXPECT_REJECT(ndf_euler_characteristic_curve(g_ctx, &in, &ov, &opt), NDF_EINVAL, "overlaps the input");
  ov = out;
  ov.strides[0] = 0;
  EXPECT_REJECT(ndf_euler_characteristic_curve(g_ctx, &in, &ov, &opt), NDF_EINVAL, "overlap");
  EXPECT_REJECT(ndf_euler_characteristic_curve(g_ctx, &in, NULL, &opt), NDF_EINVAL, "'output'");
  EXPECT_REJECT(ndf_euler_characteristic_curve(g_ctx, NULL, &out, &opt), NDF_EINVAL, "'input'");
  EXPECT_REJECT(ndf_euler_characteristic_curve(g_ctx, &in, &out, NULL), NDF_EINVAL, "'options'");

  /* CUDA arrays on a CPU context: NDF_ENODEV, output untouched (test_gpu_ecc runs the CUDA path) */
  ndf_array cin = in, cout = out;
  cin.device = cout.device = NDF_DEVICE_CUDA;
  EXPECT_REJECT(ndf_euler_characteristic_curve(g_ctx, &cin, &cout, &opt), NDF_ENODEV, "has none");

  /* empty images: zeros; a zero batch: nothing */
  int64_t she[3] = {4, 0, 6};
  ndf_array ein;
  ndf_array_init(&ein, img, NDF_DEVICE_CPU, NDF_FLOAT32, 3, she);
  opt.values = NULL;
  tu_poison(obuf, sizeof obuf);
  assert_int_equal(ndf_euler_characteristic_curve(g_ctx, &ein, &out, &opt), NDF_OK);
  for (int i = 0; i < 64; i++) assert_int_equal(obuf[i], 0);

  /* NDF_INT64: an input of the grey, rank, binary and distance ops and an output of label, not an input of the ECC */
  {
    int64_t a64[30] = {0}, b64[30], sh[2] = {5, 6};
    uint8_t u8[30] = {0};
    ndf_array i64, o64, iu8;
    ndf_array_init(&i64, a64, NDF_DEVICE_CPU, NDF_INT64, 2, sh);
    ndf_array_init(&o64, b64, NDF_DEVICE_CPU, NDF_INT64, 2, sh);
    ndf_array_init(&iu8, u8, NDF_DEVICE_CPU, NDF_UINT8, 2, sh);
    ndf_grey_options go;
    ndf_grey_options_init(&go);
    go.nsize = 1;
    go.size[0] = 3;
    assert_int_equal(ndf_grey_erosion(g_ctx, &i64, &o64, &go), NDF_OK);
    ndf_rank_options ro;
    ndf_rank_options_init(&ro);
    ro.nsize = 1;
    ro.size[0] = 3;
    assert_int_equal(ndf_median_filter(g_ctx, &i64, &o64, &ro), NDF_OK);
    ndf_binary_options bo;
    ndf_binary_options_init(&bo);
    ndf_array ob = iu8;
    ob.data = b64;
    assert_int_equal(ndf_binary_erosion(g_ctx, &i64, &ob, &bo), NDF_OK);
    assert_int_equal(ndf_label(g_ctx, &iu8, &o64, NULL, 0, NULL), NDF_OK);
    ndf_distance_options dopt;
    ndf_distance_options_init(&dopt);
    double dd[30];
    ndf_array dist;
    ndf_array_init(&dist, dd, NDF_DEVICE_CPU, NDF_FLOAT64, 2, sh);
    assert_int_equal(ndf_distance_transform_edt(g_ctx, &i64, &dist, NULL, &dopt), NDF_OK);
    ndf_array i64e = i64;
    i64e.ndim = 3;
    i64e.shape[0] = 1, i64e.shape[1] = 5, i64e.shape[2] = 6;
    i64e.strides[0] = 30, i64e.strides[1] = 6, i64e.strides[2] = 1;
    assert_int_equal(ndf_euler_characteristic_curve(g_ctx, &i64e, &out, &opt), NDF_EINVAL);
  }

  /* names */
  ndf_ecc_construction cc;
  assert_int_equal(ndf_ecc_construction_from_name("t", &cc), NDF_OK);
  assert_int_equal(cc, NDF_ECC_T);
  assert_int_equal(ndf_ecc_construction_from_name("X", &cc), NDF_EINVAL);
  assert_string_equal(ndf_ecc_construction_name(NDF_ECC_V), "V");
  assert_string_equal(ndf_dtype_name(NDF_INT64), "int64");
  double th[16];
  assert_int_equal(ndf_ecc_thresholds(g_ctx, &in, &opt, th, 15), NDF_EINVAL);
  assert_int_equal(ndf_ecc_thresholds(g_ctx, &in, &opt, th, 16), NDF_OK);
  assert_true(th[0] == 0 && th[15] == 6);
}


/* ------------------------------------------------------------------------ */
/* Soft ECC                                                                 */

static double sig(double z) { return 1.0 / (1.0 + exp(-z)); }

/* The soft curve cell by cell (the brute force's complex). */
static void brute_soft(int nsp, const int64_t *sh, const double *v, int construction, const double *t, int64_t T,
                       double lam, double *chi) {
  /* reuse brute_ecc's enumeration: one threshold at a time is too coarse, so
   * list the cells' values through a T = 1 pass per distinct cell value */
  int64_t g[3], ncell = 1;
  for (int d = 0; d < nsp; d++) {
    g[d] = construction == NDF_ECC_V ? 2 * sh[d] - 1 : 2 * sh[d] + 1;
    ncell *= g[d];
  }
  for (int64_t k = 0; k < T; k++) chi[k] = 0;
  for (int64_t cell = 0; cell < ncell; cell++) {
    int64_t cc[3], r = cell, lo[3], hi[3];
    int dim = 0;
    for (int d = nsp - 1; d >= 0; d--) {
      cc[d] = r % g[d];
      r /= g[d];
    }
    for (int d = 0; d < nsp; d++) {
      if (cc[d] % 2) dim++;
      if (construction == NDF_ECC_V) {
        lo[d] = cc[d] / 2;
        hi[d] = cc[d] % 2 ? lo[d] + 1 : lo[d];
      } else if (cc[d] % 2) {
        lo[d] = hi[d] = (cc[d] - 1) / 2;
      } else {
        lo[d] = cc[d] / 2 - 1 < 0 ? 0 : cc[d] / 2 - 1;
        hi[d] = cc[d] / 2 >= sh[d] ? sh[d] - 1 : cc[d] / 2;
      }
    }
    double val = construction == NDF_ECC_V ? -INFINITY : INFINITY;
    int64_t x[3];
    for (x[0] = lo[0]; x[0] <= hi[0]; x[0]++)
      for (x[1] = lo[1]; x[1] <= hi[1]; x[1]++)
        for (x[2] = nsp == 3 ? lo[2] : 0; x[2] <= (nsp == 3 ? hi[2] : 0); x[2]++) {
          int64_t li = x[0] * sh[1] + x[1];
          if (nsp == 3) li = li * sh[2] + x[2];
          if (construction == NDF_ECC_V ? v[li] > val : v[li] < val) val = v[li];
        }
    for (int64_t k = 0; k < T; k++) chi[k] += (dim % 2 ? -1 : 1) * sig(lam * (t[k] - val));
  }
}

static void test_soft(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_seed(&r, g_seed + 99);
  for (int rep = 0; rep < 24; rep++) {
    const int nsp = rep % 2 ? 3 : 2, cons = (rep / 2) % 2 ? NDF_ECC_T : NDF_ECC_V, nb = (rep / 4) % 2;
    int64_t sh[4], n = 1;
    int nd = nb + nsp;
    if (nb) sh[0] = 2;
    for (int d = nb; d < nd; d++) sh[d] = tu_rng_int(&r, 2, nsp == 2 ? 7 : 4);
    for (int d = 0; d < nd; d++) n *= sh[d];
    const int64_t nimg = nb ? sh[0] : 1, npix = n / nimg, T = 6;
    double *f = malloc((size_t)n * sizeof *f), t[6], g[2 * 6], *fp = malloc((size_t)n * sizeof *f);
    for (int64_t i = 0; i < n; i++) f[i] = tu_rng_normal(&r); /* distinct values: no ties */
    for (int k = 0; k < T; k++) t[k] = tu_rng_normal(&r) * 1.5;
    for (int k = 0; k < 2 * T; k++) g[k] = tu_rng_normal(&r);
    int64_t Tn = T, osh[2] = {nimg, T};
    ndf_array in, th, out, gout, gin, gth;
    ndf_array_init(&in, f, NDF_DEVICE_CPU, NDF_FLOAT64, nd, sh);
    ndf_array_init(&th, t, NDF_DEVICE_CPU, NDF_FLOAT64, 1, &Tn);
    double o[12], ref[6], gi_buf[4 * 7 * 7 * 2], gt[6];
    double *gi = malloc((size_t)n * sizeof *gi);
    (void)gi_buf;
    ndf_array_init(&out, o, NDF_DEVICE_CPU, NDF_FLOAT64, nb + 1, nb ? osh : osh + 1);
    ndf_array_init(&gout, g, NDF_DEVICE_CPU, NDF_FLOAT64, nb + 1, nb ? osh : osh + 1);
    ndf_array_init(&gin, gi, NDF_DEVICE_CPU, NDF_FLOAT64, nd, sh);
    ndf_array_init(&gth, gt, NDF_DEVICE_CPU, NDF_FLOAT64, 1, &Tn);
    ndf_soft_ecc_options so;
    ndf_soft_ecc_options_init(&so);
    so.construction = (ndf_ecc_construction)cons;
    so.batch_dims = nb;
    so.lambda = 0.5 + tu_rng_unif(&r) * 4;
    /* forward against the cell-by-cell soft sum */
    assert_int_equal(ndf_soft_ecc_forward(g_ctx, &in, &th, &out, &so), NDF_OK);
    for (int64_t img = 0; img < nimg; img++) {
      brute_soft(nsp, sh + nb, f + img * npix, cons, t, T, so.lambda, ref);
      for (int k = 0; k < T; k++)
        if (fabs(o[img * T + k] - ref[k]) > 1e-9 * (1 + fabs(ref[k])))
          fail_msg("soft forward rep %d image %lld k %d: %.12g, cells %.12g", rep, (long long)img, k, o[img * T + k], ref[k]);
    }
    /* backward against central finite differences of L = sum g * chi */
    assert_int_equal(ndf_soft_ecc_backward(g_ctx, &in, &th, &gout, &gin, &gth, &so), NDF_OK);
    const double h = 1e-6;
    for (int64_t i = 0; i < n; i++) {
      double lp = 0, lm = 0, ch[6];
      memcpy(fp, f, (size_t)n * sizeof *f);
      int64_t img = i / npix;
      fp[i] = f[i] + h;
      brute_soft(nsp, sh + nb, fp + img * npix, cons, t, T, so.lambda, ch);
      for (int k = 0; k < T; k++) lp += g[img * T + k] * ch[k];
      fp[i] = f[i] - h;
      brute_soft(nsp, sh + nb, fp + img * npix, cons, t, T, so.lambda, ch);
      for (int k = 0; k < T; k++) lm += g[img * T + k] * ch[k];
      double fd = (lp - lm) / (2 * h);
      if (fabs(fd - gi[i]) > 1e-5 * (1 + fabs(fd))) fail_msg("dL/df rep %d voxel %lld: %.9g, fd %.9g", rep, (long long)i, gi[i], fd);
    }
    for (int k = 0; k < T; k++) {
      double tt[6], lp = 0, lm = 0, ch[6];
      for (int sgn = -1; sgn <= 1; sgn += 2) {
        memcpy(tt, t, sizeof tt);
        tt[k] += sgn * h;
        for (int64_t img = 0; img < nimg; img++) {
          brute_soft(nsp, sh + nb, f + img * npix, cons, tt, T, so.lambda, ch);
          for (int j = 0; j < T; j++) *(sgn > 0 ? &lp : &lm) += g[img * T + j] * ch[j];
        }
      }
      double fd = (lp - lm) / (2 * h);
      if (fabs(fd - gt[k]) > 1e-5 * (1 + fabs(fd))) fail_msg("dL/dt rep %d k %d: %.9g, fd %.9g", rep, k, gt[k], fd);
    }
    /* large lambda: the exact curve (no value sits on a threshold) */
    so.lambda = 1e7;
    int64_t ex[12];
    ndf_array eout, vals;
    ndf_array_init(&eout, ex, NDF_DEVICE_CPU, NDF_INT64, nb + 1, nb ? osh : osh + 1);
    ndf_array_init(&vals, t, NDF_DEVICE_CPU, NDF_FLOAT64, 1, &Tn);
    ndf_ecc_options eo;
    ndf_ecc_options_init(&eo);
    eo.construction = (ndf_ecc_construction)cons;
    eo.batch_dims = nb;
    eo.values = &vals;
    assert_int_equal(ndf_euler_characteristic_curve(g_ctx, &in, &eout, &eo), NDF_OK);
    assert_int_equal(ndf_soft_ecc_forward(g_ctx, &in, &th, &out, &so), NDF_OK);
    for (int k = 0; k < nimg * T; k++)
      if (fabs(o[k] - (double)ex[k]) > 1e-6) fail_msg("lambda 1e7 rep %d k %d: %.9g, exact %lld", rep, k, o[k], (long long)ex[k]);
    free(f);
    free(fp);
    free(gi);
  }
  /* contract: float64 output only, lambda > 0, no NaN */
  double f[9] = {0, 1, 2, 3, 4, 5, 6, 7, NAN}, t[2] = {0, 1}, o[2];
  int64_t sh[2] = {3, 3}, T = 2;
  ndf_array in, th, out;
  ndf_array_init(&in, f, NDF_DEVICE_CPU, NDF_FLOAT64, 2, sh);
  ndf_array_init(&th, t, NDF_DEVICE_CPU, NDF_FLOAT64, 1, &T);
  ndf_array_init(&out, o, NDF_DEVICE_CPU, NDF_FLOAT64, 1, &T);
  ndf_soft_ecc_options so;
  ndf_soft_ecc_options_init(&so);
  assert_int_equal(ndf_soft_ecc_forward(g_ctx, &in, &th, &out, &so), NDF_EINVAL);
  assert_non_null(strstr(ndf_errmsg(g_ctx), "NaN"));
  f[8] = 8;
  so.lambda = 0;
  assert_int_equal(ndf_soft_ecc_forward(g_ctx, &in, &th, &out, &so), NDF_EINVAL);
  assert_non_null(strstr(ndf_errmsg(g_ctx), "'lambda'"));
  so.lambda = 1;
  out.dtype = NDF_FLOAT32;
  assert_int_equal(ndf_soft_ecc_forward(g_ctx, &in, &th, &out, &so), NDF_EINVAL);
  out.dtype = NDF_FLOAT64;
  assert_int_equal(ndf_soft_ecc_forward(g_ctx, &in, &th, &out, &so), NDF_OK);
}

/* ------------------------------------------------------------------------ */
/* test_gpu_ecc's case mix on the CPU (regression: testutil sized int64       */
/* arrays at one byte per element, so the int64 curves overran the heap and    */
/* tu_compare compared nothing; this runs the same draws here under ASan)      */

static void test_gpu_case_mix_on_cpu(void **state) {
  (void)state;
  /* testutil itself: 8 bytes per int64 element, and a one-element change is seen */
  {
    tu_array a, b;
    const int64_t n = 5;
    assert_int_equal(tu_array_alloc(&a, NDF_INT64, 1, &n), 0);
    assert_int_equal(tu_array_alloc(&b, NDF_INT64, 1, &n), 0);
    assert_int_equal((int64_t)a.bytes, 5 * 8);
    tu_set(&a.arr, 4, 3e15);
    assert_true(tu_get(&a.arr, 4) == 3e15);
    assert_int_equal(tu_compare(&a.arr, &b.arr, NULL, 0), 1);
    ((int64_t *)b.base)[4] = (int64_t)3e15;
    assert_int_equal(tu_compare(&a.arr, &b.arr, NULL, 0), 0);
    tu_array_free(&a);
    tu_array_free(&b);
  }
  tu_rng r;
  tu_rng_seed(&r, g_seed + 4242);
  const long ncases = tu_env_long("NDF_TEST_CASES", 60) / 3 + 8;
  static const ndf_dtype dts[4] = {NDF_FLOAT32, NDF_FLOAT64, NDF_UINT8, NDF_UINT16};
  for (long cs = 0; cs < ncases; cs++) {
    const ndf_dtype dt = dts[tu_rng_int(&r, 0, 3)];
    const int nsp = (int)tu_rng_int(&r, 2, 3), nb = (int)tu_rng_int(&r, 0, 2), nd = nsp + nb;
    int64_t sh[NDF_MAX_NDIM], osh[NDF_MAX_NDIM];
    for (int d = 0; d < nb; d++) sh[d] = osh[d] = tu_rng_int(&r, 1, 3);
    for (int d = nb; d < nd; d++)
      sh[d] = tu_rng_chance(&r, 0.1) ? tu_rng_int(&r, 1, 3) : tu_rng_int(&r, 1, nsp == 2 ? 120 : 24);
    const int tkind = (int)tu_rng_int(&r, 0, 2);
    const int64_t T = tu_rng_chance(&r, 0.2) ? tu_rng_int(&r, 3000, 6000) : tu_rng_int(&r, tkind ? 2 : 1, 300);
    osh[nb] = T;
    tu_array in, lin, ref, got, vals = {0};
    assert_int_equal(tu_array_alloc(&in, dt, nd, sh), 0);
    const int64_t n = ndf_array_size(&in.arr);
    for (int64_t i = 0; i < n; i++) tu_set(&in.arr, i, (double)tu_rng_int(&r, 0, dt == NDF_UINT8 ? 255 : 12));
    const int il = tu_rng_chance(&r, 0.6) ? TU_LAYOUT_PADDED | (tu_rng_chance(&r, 0.5) ? TU_LAYOUT_NEGATIVE : 0) |
                                                (tu_rng_chance(&r, 0.3) ? TU_LAYOUT_OFFSET : 0)
                                          : TU_LAYOUT_FORTRAN;
    assert_int_equal(tu_array_relayout(&lin, &in.arr, il, &r), 0);
    assert_int_equal(tu_array_alloc(&ref, NDF_INT64, nb + 1, osh), 0);
    assert_int_equal(tu_array_like(&got, &ref.arr, tu_rng_chance(&r, 0.5) ? TU_LAYOUT_PADDED : TU_LAYOUT_FORTRAN, &r), 0);
    ndf_ecc_options o;
    ndf_ecc_options_init(&o);
    o.construction = tu_rng_chance(&r, 0.5) ? NDF_ECC_V : NDF_ECC_T;
    o.batch_dims = nb;
    o.nthresholds = T;
    if (tkind == 0) {
      assert_int_equal(tu_array_alloc(&vals, NDF_FLOAT64, 1, &T), 0);
      for (int64_t k = 0; k < T; k++) tu_set(&vals.arr, k, tu_rng_chance(&r, 0.03) ? INFINITY : (double)tu_rng_int(&r, -1, 13));
      o.values = &vals.arr;
    } else if (tkind == 2) {
      o.has_range = 1;
      o.range_lo = tu_rng_normal(&r) * 10;
      o.range_hi = o.range_lo + tu_rng_unif(&r) * 100;
    }
    for (int nth = 1; nth <= 16; nth *= 4) { /* 1, 4, 16 threads: the per-thread buffers and the by-row path */
      ndf_ctx_options co;
      ndf_ctx_options_init(&co);
      co.backend = NDF_BACKEND_CPU;
      co.cpu_threads = nth;
      ndf_ctx *ctx;
      assert_int_equal(ndf_ctx_create(&ctx, &co), NDF_OK);
      ndf_array *dst = nth == 1 ? &ref.arr : &got.arr;
      const ndf_array *src = nth == 1 ? &in.arr : &lin.arr;
      if (ndf_euler_characteristic_curve(ctx, src, dst, &o) != NDF_OK) fail_msg("case %ld: %s", cs, ndf_errmsg(ctx));
      ndf_ctx_destroy(ctx);
      if (nth == 1) continue;
      char msg[512];
      if (tu_compare(&ref.arr, &got.arr, msg, sizeof msg))
        fail_msg("case %ld (%s, %d-D, batch %d, T=%lld, layout %d, %d threads) differs:\n%s", cs, ndf_dtype_name(dt), nsp,
                 nb, (long long)T, il, nth, msg);
      if (tu_check_gaps(&got) >= 0) fail_msg("case %ld: the output's gaps were written", cs);
    }
    tu_array_free(&in);
    tu_array_free(&lin);
    tu_array_free(&ref);
    tu_array_free(&got);
    tu_array_free(&vals);
  }
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
      cmocka_unit_test(test_brute_force_cases),
      cmocka_unit_test(test_invariants),
      cmocka_unit_test(test_big_contributions),
      cmocka_unit_test(test_threads),
      cmocka_unit_test(test_contract),
      cmocka_unit_test(test_skimage_cross_check),
      cmocka_unit_test(test_soft),
      cmocka_unit_test(test_gpu_case_mix_on_cpu),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
