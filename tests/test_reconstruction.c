/*
 * test_reconstruction.c -- the CPU backend of ndf_reconstruction
 * (skimage.morphology.reconstruction, batched) against scikit-image itself,
 * against a brute-force fixed-point iteration, on hand-checked cases, and
 * its contract (every rejected input: status, a message naming
 * ndf_reconstruction and the argument, an untouched output).
 *
 * The scikit-image part runs tests/oracle_reconstruction.py with a fresh seed
 * per run (printed; NDF_TEST_SEED repeats a run, NDF_TEST_CASES sets the
 * number of cases), reads the cases it wrote and requires ndforge's result
 * to equal scikit-image's value for value (a float64 output, and one of the
 * seed's dtype), with the arrays as written, in Fortran order and embedded in
 * larger buffers with permuted / padded / negative strides, and outputs whose
 * gaps must keep their poison.  Without scikit-image those tests are skipped,
 * saying so; the others run.  The oracle's directory is kept when a case
 * fails, and its path printed.
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
#error "NDF_TEST_PYTHON (a python3 with numpy and scipy) must be defined by the build"
#endif
#ifndef NDF_TEST_ORACLE
#error "NDF_TEST_ORACLE (path of tests/oracle_reconstruction.py) must be defined by the build"
#endif

#define API "ndf_reconstruction"

static const ndf_dtype DTYPES[] = {NDF_UINT8, NDF_INT8,  NDF_UINT16,  NDF_INT16,
                                   NDF_UINT32, NDF_INT32, NDF_FLOAT32, NDF_FLOAT64};
#define NDTYPES ((int)(sizeof DTYPES / sizeof DTYPES[0]))

/* ------------------------------------------------------------------------ */
/* Cases written by the oracle                                               */

typedef struct rc_case {
  char line[2048]; /* the manifest line, for messages */
  int id;
  int erosion;
  char dtype[16];
  int ndim;
  int64_t shape[NDF_MAX_NDIM];
  int batch;
  int noffset;
  int64_t offset[NDF_MAX_SPATIAL];
  int error;
  char footprint[64], seed[64], mask[64], expected[64];
} rc_case;

typedef tu_oracle_group rc_state; /* cases: rc_case records; dir "" without scikit-image */
static rc_case *cases_of(const rc_state *s) { return s->cases; }

static int parse_line(const char *line, void *cv) {
  rc_case *c = cv;
  memset(c, 0, sizeof *c);
  c->batch = -1;
  c->erosion = -1;
  snprintf(c->line, sizeof c->line, "%s", line);
  char buf[2048];
  snprintf(buf, sizeof buf, "%s", line);
  char *save = NULL;
  for (char *tok = strtok_r(buf, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
    char *eq = strchr(tok, '=');
    if (!eq) return -1;
    *eq = 0;
    const char *k = tok, *v = eq + 1;
    if (!strcmp(k, "id")) c->id = atoi(v);
    else if (!strcmp(k, "method")) c->erosion = !strcmp(v, "erosion") ? 1 : !strcmp(v, "dilation") ? 0 : -1;
    else if (!strcmp(k, "dtype")) snprintf(c->dtype, sizeof c->dtype, "%s", v);
    else if (!strcmp(k, "shape")) c->ndim = tu_parse_i64s(v, c->shape, NDF_MAX_NDIM);
    else if (!strcmp(k, "batch")) c->batch = atoi(v);
    else if (!strcmp(k, "offset")) c->noffset = tu_parse_i64s(v, c->offset, NDF_MAX_SPATIAL);
    else if (!strcmp(k, "error")) c->error = atoi(v);
    else if (!strcmp(k, "footprint")) snprintf(c->footprint, sizeof c->footprint, "%s", v);
    else if (!strcmp(k, "seed")) snprintf(c->seed, sizeof c->seed, "%s", v);
    else if (!strcmp(k, "mask")) snprintf(c->mask, sizeof c->mask, "%s", v);
    else if (!strcmp(k, "expected")) snprintf(c->expected, sizeof c->expected, "%s", v);
  }
  if (c->ndim <= 0 || c->batch < 0 || c->batch >= c->ndim || c->erosion < 0 || c->noffset < 0) return -1;
  return c->seed[0] && c->mask[0] && (c->error || c->expected[0]) ? 0 : -1;
}

static int summary(const rc_state *s) {
  int batched = 0, errors = 0, nofp = 0, offs = 0, ero = 0;
  for (int i = 0; i < s->ncases; i++) {
    const rc_case *c = &cases_of(s)[i];
    batched += c->batch > 0;
    errors += c->error;
    nofp += !c->footprint[0];
    offs += c->noffset > 0;
    ero += c->erosion;
  }
  printf("%d scikit-image cases: %d by erosion, %d batched, %d with the default footprint, %d with an offset, %d "
         "rejected\n", s->ncases, ero, batched, nofp, offs, errors);
  return 0;
}

static int group_setup(void **state) {
  return tu_oracle_group_setup_if(state, "skimage", "ndf-test-recon", 400, NDF_TEST_PYTHON, NDF_TEST_ORACLE, sizeof(rc_case),
                                  parse_line, summary);
}

static ndf_ctx *ctx_of(void **state) { return ((rc_state *)*state)->ctx; }

/* ------------------------------------------------------------------------ */
/* Comparing values                                                          */

/* Elements of got (any dtype) that differ in value from want (float64; -0.0 == +0.0, as in
 * scikit-image, which leaves a zero's sign to its sort); a description of the first in msg. */
static int64_t compare_values(const ndf_array *want, const ndf_array *got, char *msg, size_t len) {
  const int64_t n = ndf_array_size(want);
  int64_t bad = 0;
  for (int64_t i = 0; i < n; i++) {
    const double w = tu_get(want, i), g = tu_get(got, i);
    if (w == g || (w != w && g != g)) continue;
    if (bad++ == 0) snprintf(msg, len, "element %lld: want %.17g, got %.17g", (long long)i, w, g);
  }
  return bad;
}

/* ------------------------------------------------------------------------ */
/* The scikit-image cases                                                    */

enum { V_ASIS, V_STRIDED, V_FORTRAN };
static const char *VARIANT_NAMES[] = {"arrays as read, float64 C output",
                                      "padded/negative strides, strided output of the seed's dtype",
                                      "Fortran seed and footprint, strided mask, Fortran float64 output"};

static int read_npy(const rc_state *s, const char *name, ndfio_image *img) {
  char path[700], err[512];
  snprintf(path, sizeof path, "%s/%s", s->dir, name);
  ndf_status st = ndfio_npy_read(path, img, err, sizeof err);
  if (st != NDF_OK) {
    fprintf(stderr, "ndfio_npy_read(%s): %s: %s\n", path, ndf_status_name(st), err);
    return -1;
  }
  return 0;
}

static int relay(const ndf_array *src, tu_array *t, int layout, tu_rng *rng, const ndf_array **use) {
  if (tu_array_relayout(t, src, layout, rng)) return -1;
  *use = &t->arr;
  return 0;
}

static int run_case(rc_state *s, const rc_case *c, int v, tu_rng *rng, int verbose) {
  char msg[2048] = "";
  int rc = -1;
  ndfio_image seed = {0}, mask = {0}, exp = {0}, fp = {0};
  tu_array sl = {0}, ml = {0}, fl = {0}, out = {0};
  if (read_npy(s, c->seed, &seed) || read_npy(s, c->mask, &mask)) goto done;
  if (!c->error && read_npy(s, c->expected, &exp)) goto done;
  if (c->footprint[0] && read_npy(s, c->footprint, &fp)) goto done;
  const ndf_array *ps = &seed.arr, *pm = &mask.arr, *pf = c->footprint[0] ? &fp.arr : NULL;
  const int strided = TU_LAYOUT_PADDED | TU_LAYOUT_NEGATIVE | TU_LAYOUT_OFFSET;
  if (v == V_STRIDED) {
    if (relay(&seed.arr, &sl, strided, rng, &ps) || relay(&mask.arr, &ml, strided, rng, &pm)) goto done;
    if (pf && relay(&fp.arr, &fl, strided, rng, &pf)) goto done;
  } else if (v == V_FORTRAN) {
    if (relay(&seed.arr, &sl, TU_LAYOUT_FORTRAN, rng, &ps) || relay(&mask.arr, &ml, TU_LAYOUT_PADDED, rng, &pm))
      goto done;
    if (pf && relay(&fp.arr, &fl, TU_LAYOUT_FORTRAN, rng, &pf)) goto done;
  }
  ndf_array like = seed.arr;
  like.dtype = v == V_STRIDED ? seed.arr.dtype : NDF_FLOAT64;
  int olayout = v == V_STRIDED ? TU_LAYOUT_PADDED : v == V_FORTRAN ? TU_LAYOUT_FORTRAN : TU_LAYOUT_C;
  if (tu_array_like(&out, &like, olayout, rng)) goto done;

  ndf_reconstruction_options o;
  ndf_reconstruction_options_init(&o);
  o.method = c->erosion ? NDF_RECONSTRUCT_EROSION : NDF_RECONSTRUCT_DILATION;
  o.footprint = pf;
  o.noffset = c->noffset;
  memcpy(o.offset, c->offset, sizeof o.offset);
  o.batch_dims = c->batch;
  ndf_status r = ndf_reconstruction(s->ctx, ps, pm, &out.arr, &o);
  const char *m = ndf_errmsg(s->ctx);
  if (c->error) {
    const char *rule = c->erosion ? "seed >= mask" : "seed <= mask";
    if (r != NDF_EINVAL || !strstr(m, API) || !strstr(m, "'seed'") || !strstr(m, rule)) {
      snprintf(msg, sizeof msg, "scikit-image raises ValueError: want NDF_EINVAL naming %s, 'seed' and '%s'; got %s \"%s\"",
               API, rule, ndf_status_name(r), m);
      goto done;
    }
    int64_t p = tu_poison_check(out.base, out.bytes);
    if (p >= 0) {
      snprintf(msg, sizeof msg, "NDF_EINVAL but the output buffer was written (byte %lld)", (long long)p);
      goto done;
    }
  } else {
    if (r != NDF_OK) {
      snprintf(msg, sizeof msg, "returned %s: %s", ndf_status_name(r), m);
      goto done;
    }
    char detail[512] = "";
    int64_t bad = compare_values(&exp.arr, &out.arr, detail, sizeof detail);
    if (bad) {
      snprintf(msg, sizeof msg, "%lld of %lld values differ from scikit-image's (%s output): %s", (long long)bad,
               (long long)ndf_array_size(&exp.arr), ndf_dtype_name(out.arr.dtype), detail);
      goto done;
    }
    int64_t gap = tu_check_gaps(&out);
    if (gap >= 0) {
      snprintf(msg, sizeof msg, "wrote outside the output's elements (buffer byte %lld)", (long long)gap);
      goto done;
    }
  }
  rc = 0;
done:
  if (rc != 0 && verbose) printf("FAIL case %d (%s): %s\n  %s\n", c->id, VARIANT_NAMES[v], c->line, msg);
  ndfio_image_free(&seed);
  ndfio_image_free(&mask);
  ndfio_image_free(&exp);
  ndfio_image_free(&fp);
  tu_array_free(&sl);
  tu_array_free(&ml);
  tu_array_free(&fl);
  tu_array_free(&out);
  return rc;
}

static void run_all(void **state, int v) {
  rc_state *s = *state;
  if (!s->dir[0]) skip();
  tu_rng rng;
  tu_rng_seed(&rng, s->seed * 43u + (uint64_t)v);
  int failed = 0;
  for (int i = 0; i < s->ncases; i++) failed += run_case(s, &cases_of(s)[i], v, &rng, failed < 12) != 0;
  if (failed) {
    s->keep_dir = 1;
    printf("%d of %d scikit-image cases failed (%s); seed %llu, cases in %s\n", failed, s->ncases, VARIANT_NAMES[v],
           (unsigned long long)s->seed, s->dir);
  }
  assert_int_equal(failed, 0);
}

static void test_skimage_cases(void **state) { run_all(state, V_ASIS); }
static void test_skimage_cases_strided(void **state) { run_all(state, V_STRIDED); }
static void test_skimage_cases_fortran(void **state) { run_all(state, V_FORTRAN); }

/* ------------------------------------------------------------------------ */
/* Brute force: the geodesic step (Jacobi, in double) until nothing changes   */

typedef struct bf_elem {
  int nsp;
  int64_t shape[NDF_MAX_SPATIAL];
  uint8_t *fp; /* C order; NULL: ones((3,)*nsp) */
  int64_t offset[NDF_MAX_SPATIAL];
} bf_elem;

/* want (float64, C order, shaped like seed) = the limit of
 * r[x] <- bound(mask[x], up(r[x], r[x + o - k] for footprint k != o inside the image)). */
static void brute_force(const ndf_array *seed, const ndf_array *mask, int erosion, int batch, const bf_elem *e,
                        double *want) {
  const int64_t n = ndf_array_size(seed);
  const int nsp = seed->ndim - batch;
  int64_t npix = 1, ecount = 1;
  for (int d = 0; d < nsp; d++) npix *= seed->shape[batch + d];
  for (int d = 0; d < nsp; d++) ecount *= e->shape[d];
  double *r = malloc(sizeof(double) * (size_t)(n ? n : 1)), *m = malloc(sizeof(double) * (size_t)(n ? n : 1));
  double *nx = malloc(sizeof(double) * (size_t)(n ? n : 1));
  for (int64_t i = 0; i < n; i++) {
    r[i] = tu_get(seed, i);
    m[i] = tu_get(mask, i);
  }
  for (int changed = 1; changed;) {
    changed = 0;
    for (int64_t i = 0; i < n; i++) {
      const int64_t img = i / npix;
      int64_t c[NDF_MAX_SPATIAL], q = i % npix;
      for (int d = nsp - 1; d >= 0; d--) {
        c[d] = q % seed->shape[batch + d];
        q /= seed->shape[batch + d];
      }
      double best = r[i];
      for (int64_t k = 0; k < ecount; k++) {
        if (e->fp && !e->fp[k]) continue;
        int64_t kk = k, y[NDF_MAX_SPATIAL], lin = 0, centre = 1, inside = 1;
        for (int d = nsp - 1; d >= 0; d--) {
          int64_t kd = kk % e->shape[d];
          kk /= e->shape[d];
          centre &= kd == e->offset[d];
          y[d] = c[d] + e->offset[d] - kd;
          inside &= y[d] >= 0 && y[d] < seed->shape[batch + d];
        }
        if (centre || !inside) continue;
        for (int d = 0; d < nsp; d++) lin = lin * seed->shape[batch + d] + y[d];
        const double v = r[img * npix + lin];
        best = erosion ? fmin(best, v) : fmax(best, v);
      }
      best = erosion ? fmax(best, m[i]) : fmin(best, m[i]);
      nx[i] = best;
      changed |= best != r[i];
    }
    memcpy(r, nx, sizeof(double) * (size_t)n);
  }
  memcpy(want, r, sizeof(double) * (size_t)n);
  free(r);
  free(m);
  free(nx);
}

/* Random values of dtype t, in a range of width w (ties) or the whole range. */
static double draw_value(tu_rng *rng, ndf_dtype t, double base, double w) {
  if (tu_is_float(t)) {
    double v = floor(base + tu_rng_unif(rng) * w);
    if (tu_rng_chance(rng, 0.02)) v = tu_rng_chance(rng, 0.5) ? INFINITY : -INFINITY;
    if (v == 0 && tu_rng_chance(rng, 0.5)) v = -0.0;
    return v;
  }
  double lo, hi;
  tu_int_range(t, &lo, &hi);
  double v = floor(base + tu_rng_unif(rng) * w);
  return v < lo ? lo : v > hi ? hi : v;
}

static void test_brute_force(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  tu_rng rng;
  tu_rng_seed(&rng, ((rc_state *)*state)->seed ^ 0xb7u);
  const long ncases = tu_env_long("NDF_TEST_CASES", 400);
  int failed = 0;
  for (long ci = 0; ci < ncases; ci++) {
    const ndf_dtype t = DTYPES[tu_rng_int(&rng, 0, NDTYPES - 1)];
    const int erosion = (int)tu_rng_int(&rng, 0, 1);
    const int nsp = (int)tu_rng_int(&rng, 1, 3), batch = (int)tu_rng_int(&rng, 0, 2), ndim = nsp + batch;
    int64_t shape[NDF_MAX_NDIM], n = 1;
    for (int d = 0; d < ndim; d++) {
      shape[d] = d < batch ? tu_rng_int(&rng, 1, 3) : tu_rng_int(&rng, 1, nsp == 1 ? 40 : nsp == 2 ? 12 : 6);
      n *= shape[d];
    }
    bf_elem e = {.nsp = nsp};
    uint8_t fpv[125];
    const int given = tu_rng_chance(&rng, 0.7), with_off = given && tu_rng_chance(&rng, 0.5);
    int64_t ecount = 1;
    for (int d = 0; d < nsp; d++) {
      e.shape[d] = given ? tu_rng_int(&rng, 1, 5) : 3;
      if (given && !with_off && e.shape[d] % 2 == 0) e.shape[d]++;
      if (e.shape[d] > 5) e.shape[d] = 5;
      e.offset[d] = with_off ? tu_rng_int(&rng, 0, e.shape[d] - 1) : e.shape[d] / 2;
      ecount *= e.shape[d];
    }
    const double p = tu_rng_unif(&rng);
    for (int64_t k = 0; k < ecount; k++) fpv[k] = given ? tu_rng_unif(&rng) < p : 1;
    e.fp = given ? fpv : NULL;
    tu_array seed, mask, fp = {0}, out, out2;
    assert_int_equal(tu_array_alloc(&seed, t, ndim, shape), 0);
    assert_int_equal(tu_array_alloc(&mask, t, ndim, shape), 0);
    double lo = 0, hi = 0;
    if (!tu_is_float(t)) tu_int_range(t, &lo, &hi);
    const double w = tu_rng_chance(&rng, 0.5) ? 6 : tu_is_float(t) ? 200 : hi - lo + 1;
    const double base = tu_is_float(t) ? -w / 2 : tu_rng_chance(&rng, 0.5) ? lo : hi - w + 1;
    for (int64_t i = 0; i < n; i++) {
      double a = draw_value(&rng, t, base, w), b = draw_value(&rng, t, base, w);
      if (tu_rng_chance(&rng, 0.3)) a = b;
      if (erosion ? a < b : a > b) { double x = a; a = b; b = x; }
      tu_set(&seed.arr, i, a);
      tu_set(&mask.arr, i, b);
    }
    ndf_reconstruction_options o;
    ndf_reconstruction_options_init(&o);
    o.method = erosion ? NDF_RECONSTRUCT_EROSION : NDF_RECONSTRUCT_DILATION;
    o.batch_dims = batch;
    if (given) {
      assert_int_equal(tu_array_alloc(&fp, NDF_UINT8, nsp, e.shape), 0);
      for (int64_t k = 0; k < ecount; k++) tu_set(&fp.arr, k, fpv[k]);
      o.footprint = &fp.arr;
    }
    if (with_off) {
      o.noffset = nsp;
      for (int d = 0; d < nsp; d++) o.offset[d] = e.offset[d];
    }
    double *want = malloc(sizeof(double) * (size_t)n);
    brute_force(&seed.arr, &mask.arr, erosion, batch, &e, want);
    ndf_array wa;
    ndf_array_init(&wa, want, NDF_DEVICE_CPU, NDF_FLOAT64, ndim, shape);
    assert_int_equal(tu_array_alloc(&out, NDF_FLOAT64, ndim, shape), 0);
    assert_int_equal(tu_array_alloc(&out2, t, ndim, shape), 0);
    ndf_status r = ndf_reconstruction(ctx, &seed.arr, &mask.arr, &out.arr, &o);
    ndf_status r2 = ndf_reconstruction(ctx, &seed.arr, &mask.arr, &out2.arr, &o);
    char detail[512] = "";
    int64_t bad = r == NDF_OK && r2 == NDF_OK ? compare_values(&wa, &out.arr, detail, sizeof detail) : -1;
    if (bad == 0) bad = compare_values(&wa, &out2.arr, detail, sizeof detail);
    /* the two outputs hold the same bits (a float64 output of a float64 seed is the same array) */
    for (int64_t i = 0; bad == 0 && i < n; i++) {
      const double a = tu_get(&out.arr, i), b = tu_get(&out2.arr, i);
      if (memcmp(&a, &b, sizeof a) != 0) {
        bad = 1;
        snprintf(detail, sizeof detail, "element %lld: float64 output %g, %s output %g", (long long)i, a,
                 ndf_dtype_name(t), b);
      }
    }
    if (bad) {
      char sh[64];
      if (failed++ < 10)
        printf("FAIL brute force case %ld: %s %s, shape %s, batch %d, footprint %s, offset %s: %s %s\n", ci,
               erosion ? "erosion" : "dilation", ndf_dtype_name(t), tu_shape_str(&seed.arr, sh, sizeof sh), batch,
               given ? "random" : "default", with_off ? "given" : "centre",
               bad < 0 ? ndf_status_name(r != NDF_OK ? r : r2) : "", bad < 0 ? ndf_errmsg(ctx) : detail);
    }
    free(want);
    tu_array_free(&seed);
    tu_array_free(&mask);
    tu_array_free(&fp);
    tu_array_free(&out);
    tu_array_free(&out2);
  }
  if (failed) printf("%d of %ld cases failed; NDF_TEST_SEED=%llu repeats this run\n", failed, ncases,
                     (unsigned long long)((rc_state *)*state)->seed);
  assert_int_equal(failed, 0);
}

/* ------------------------------------------------------------------------ */
/* Hand-checked cases                                                        */

static void arr_1d(tu_array *t, ndf_dtype dt, int64_t n, const double *v) {
  assert_int_equal(tu_array_alloc(t, dt, 1, &n), 0);
  for (int64_t i = 0; i < n; i++) tu_set(&t->arr, i, v[i]);
}

static void expect_1d(ndf_ctx *ctx, ndf_dtype dt, int n, const double *seed, const double *mask,
                      const ndf_reconstruction_options *o, const double *want, const char *what) {
  tu_array s, m, out;
  arr_1d(&s, dt, n, seed);
  arr_1d(&m, dt, n, mask);
  int64_t nn = n;
  assert_int_equal(tu_array_alloc(&out, NDF_FLOAT64, 1, &nn), 0);
  ndf_status r = ndf_reconstruction(ctx, &s.arr, &m.arr, &out.arr, o);
  if (r != NDF_OK) printf("%s: %s %s\n", what, ndf_status_name(r), ndf_errmsg(ctx));
  assert_int_equal(r, NDF_OK);
  int bad = 0;
  for (int i = 0; i < n; i++) bad += tu_get(&out.arr, i) != want[i];
  if (bad) {
    printf("%s: got", what);
    for (int i = 0; i < n; i++) printf(" %g", tu_get(&out.arr, i));
    printf("\n");
  }
  assert_int_equal(bad, 0);
  tu_array_free(&s);
  tu_array_free(&m);
  tu_array_free(&out);
}

/* scikit-image's own tests (test_reconstruction.py): fill_hole by erosion, an offset footprint. */
static void test_skimage_known_values(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  ndf_reconstruction_options o;
  static const double s1[10] = {0, 8, 8, 8, 8, 8, 8, 8, 8, 0}, m1[10] = {0, 3, 6, 2, 1, 1, 1, 4, 2, 0};
  static const double w1[10] = {0, 3, 6, 4, 4, 4, 4, 4, 2, 0};
  for (int k = 0; k < NDTYPES; k++) {
    ndf_reconstruction_options_init(&o);
    o.method = NDF_RECONSTRUCT_EROSION;
    expect_1d(ctx, DTYPES[k], 10, s1, m1, &o, w1, "fill_hole");
  }
  static const double s2[10] = {0, 3, 6, 2, 1, 1, 1, 4, 2, 0}, m2[10] = {0, 8, 6, 8, 8, 8, 8, 4, 4, 0};
  static const double w2[10] = {0, 3, 6, 6, 6, 6, 6, 4, 4, 0};
  const uint8_t ones[3] = {1, 1, 1};
  const int64_t three = 3;
  ndf_array fp;
  ndf_array_init(&fp, (void *)ones, NDF_DEVICE_CPU, NDF_UINT8, 1, &three);
  ndf_reconstruction_options_init(&o);
  o.footprint = &fp;
  o.noffset = 1;
  o.offset[0] = 0;
  expect_1d(ctx, NDF_INT16, 10, s2, m2, &o, w2, "offset_not_none");
  /* zero_image_one_mask / image_equals_mask */
  static const double z[5] = {0, 0, 0, 0, 0}, one[5] = {1, 1, 1, 1, 1}, x[5] = {3, 1, 4, 1, 5};
  ndf_reconstruction_options_init(&o);
  expect_1d(ctx, NDF_FLOAT32, 5, z, one, &o, z, "zero seed, one mask");
  expect_1d(ctx, NDF_UINT8, 5, x, x, &o, x, "seed equals mask");
  /* one peak: the seed's maximum floods everything the mask allows */
  static const double sp[7] = {0, 0, 0, 5, 0, 0, 0}, mp[7] = {9, 2, 9, 9, 9, 1, 9}, wp[7] = {2, 2, 5, 5, 5, 1, 1};
  expect_1d(ctx, NDF_INT32, 7, sp, mp, &o, wp, "one peak through a pass");
  /* an all-zero footprint: the result is the seed */
  const uint8_t none[3] = {0, 0, 0};
  ndf_array_init(&fp, (void *)none, NDF_DEVICE_CPU, NDF_UINT8, 1, &three);
  o.footprint = &fp;
  expect_1d(ctx, NDF_INT32, 7, sp, mp, &o, sp, "all-zero footprint");
}

/* -0.0 < +0.0: a +0.0 seed spreads over -0.0 by dilation (and -0.0 over +0.0 by erosion). */
static void test_signed_zeros(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  for (int ero = 0; ero < 2; ero++) {
    for (int dt = 0; dt < 2; dt++) {
      const ndf_dtype t = dt ? NDF_FLOAT64 : NDF_FLOAT32;
      double s[6], m[6];
      for (int i = 0; i < 6; i++) {
        s[i] = ero ? 0.0 : -0.0;
        m[i] = ero ? -0.0 : 0.0;
      }
      s[2] = ero ? -0.0 : 0.0;
      tu_array a, b, out;
      arr_1d(&a, t, 6, s);
      arr_1d(&b, t, 6, m);
      const int64_t six = 6;
      assert_int_equal(tu_array_alloc(&out, t, 1, &six), 0);
      ndf_reconstruction_options o;
      ndf_reconstruction_options_init(&o);
      o.method = ero ? NDF_RECONSTRUCT_EROSION : NDF_RECONSTRUCT_DILATION;
      assert_int_equal(ndf_reconstruction(ctx, &a.arr, &b.arr, &out.arr, &o), NDF_OK);
      for (int i = 0; i < 6; i++) {
        const double v = tu_get(&out.arr, i);
        assert_true(v == 0.0);
        assert_int_equal(!!signbit(v), ero);
      }
      tu_array_free(&a);
      tu_array_free(&b);
      tu_array_free(&out);
    }
  }
}

/* Zero strides: a mask broadcast along the batch axis, a seed that is one value. */
static void test_broadcast_inputs(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  static const double row[6] = {1, 7, 3, 9, 2, 8};
  double zero = 0;
  tu_array m, out;
  arr_1d(&m, NDF_FLOAT64, 6, row);
  const int64_t shape[2] = {4, 6};
  assert_int_equal(tu_array_alloc(&out, NDF_FLOAT64, 2, shape), 0);
  ndf_array seed, mask;
  ndf_array_init(&seed, &zero, NDF_DEVICE_CPU, NDF_FLOAT64, 2, shape);
  seed.strides[0] = seed.strides[1] = 0;
  ndf_array_init(&mask, m.arr.data, NDF_DEVICE_CPU, NDF_FLOAT64, 2, shape);
  mask.strides[0] = 0;
  ndf_reconstruction_options o;
  ndf_reconstruction_options_init(&o);
  o.batch_dims = 1;
  assert_int_equal(ndf_reconstruction(ctx, &seed, &mask, &out.arr, &o), NDF_OK);
  for (int64_t i = 0; i < 24; i++) assert_true(tu_get(&out.arr, i) == 0); /* nothing above 0 to spread */
  /* a marker per image under the broadcast mask, against the brute force */
  tu_array sd;
  assert_int_equal(tu_array_alloc(&sd, NDF_FLOAT64, 2, shape), 0);
  for (int64_t b = 0; b < 4; b++) tu_set(&sd.arr, b * 6 + (b * 5) % 6, row[(b * 5) % 6]);
  double want[24];
  bf_elem e = {.nsp = 1, .shape = {3}, .fp = NULL, .offset = {1}};
  brute_force(&sd.arr, &mask, 0, 1, &e, want);
  assert_int_equal(ndf_reconstruction(ctx, &sd.arr, &mask, &out.arr, &o), NDF_OK);
  for (int64_t i = 0; i < 24; i++) assert_true(tu_get(&out.arr, i) == want[i]);
  tu_array_free(&sd);
  tu_array_free(&m);
  tu_array_free(&out);
}

/* The result does not depend on the CPU thread count (images in parallel). */
static void test_threads(void **state) {
  (void)state;
  const int64_t shape[3] = {7, 9, 11};
  tu_array s, m, o1, o3;
  assert_int_equal(tu_array_alloc(&s, NDF_UINT16, 3, shape), 0);
  assert_int_equal(tu_array_alloc(&m, NDF_UINT16, 3, shape), 0);
  assert_int_equal(tu_array_alloc(&o1, NDF_UINT16, 3, shape), 0);
  assert_int_equal(tu_array_alloc(&o3, NDF_UINT16, 3, shape), 0);
  tu_rng rng;
  tu_rng_seed(&rng, 5);
  for (int64_t i = 0; i < 7 * 9 * 11; i++) {
    double b = (double)tu_rng_int(&rng, 0, 60000), a = tu_rng_chance(&rng, 0.1) ? b : 0;
    tu_set(&s.arr, i, a);
    tu_set(&m.arr, i, b);
  }
  ndf_reconstruction_options o;
  ndf_reconstruction_options_init(&o);
  o.batch_dims = 1;
  for (int k = 0; k < 2; k++) {
    ndf_ctx_options co;
    ndf_ctx_options_init(&co);
    co.backend = NDF_BACKEND_CPU;
    co.cache_disable = 1;
    co.cpu_threads = k ? 3 : 1;
    ndf_ctx *c;
    assert_int_equal(ndf_ctx_create(&c, &co), NDF_OK);
    assert_int_equal(ndf_reconstruction(c, &s.arr, &m.arr, k ? &o3.arr : &o1.arr, &o), NDF_OK);
    ndf_ctx_destroy(c);
  }
  char msg[512];
  assert_int_equal(tu_compare(&o1.arr, &o3.arr, msg, sizeof msg), 0);
  tu_array_free(&s);
  tu_array_free(&m);
  tu_array_free(&o1);
  tu_array_free(&o3);
}

/* ------------------------------------------------------------------------ */
/* Contract                                                                  */

/* The call fails with status want, a message naming the API and needle, and a still-poisoned output. */
static void expect_reject(ndf_ctx *ctx, const ndf_array *seed, const ndf_array *mask, tu_array *out,
                          const ndf_reconstruction_options *o, ndf_status want, const char *needle) {
  tu_poison(out->base, out->bytes);
  ndf_status r = ndf_reconstruction(ctx, seed, mask, &out->arr, o);
  const char *m = ndf_errmsg(ctx);
  if (r != want || !strstr(m, API) || !strstr(m, needle))
    printf("want %s with \"%s\"; got %s \"%s\"\n", ndf_status_name(want), needle, ndf_status_name(r), m);
  assert_int_equal(r, want);
  assert_non_null(strstr(m, API));
  assert_non_null(strstr(m, needle));
  assert_int_equal(tu_poison_check(out->base, out->bytes), -1);
}

static void test_contract(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  const int64_t shape[2] = {4, 5};
  tu_array s, m, out, o8, fp, fp2, fp1;
  assert_int_equal(tu_array_alloc(&s, NDF_INT16, 2, shape), 0);
  assert_int_equal(tu_array_alloc(&m, NDF_INT16, 2, shape), 0);
  assert_int_equal(tu_array_alloc(&out, NDF_FLOAT64, 2, shape), 0);
  assert_int_equal(tu_array_alloc(&o8, NDF_UINT8, 2, shape), 0);
  for (int i = 0; i < 20; i++) tu_set(&m.arr, i, 5);
  const int64_t f24[2] = {2, 4}, f33[2] = {3, 3}, f3[1] = {3};
  assert_int_equal(tu_array_alloc(&fp, NDF_UINT8, 2, f24), 0);
  assert_int_equal(tu_array_alloc(&fp2, NDF_BOOL, 2, f33), 0);
  assert_int_equal(tu_array_alloc(&fp1, NDF_UINT8, 1, f3), 0);
  ndf_reconstruction_options o;
  ndf_reconstruction_options_init(&o);
  assert_int_equal(ndf_reconstruction(ctx, &s.arr, &m.arr, &out.arr, &o), NDF_OK);
  assert_string_equal(ndf_errmsg(ctx), "");

  assert_int_equal(ndf_reconstruction(NULL, &s.arr, &m.arr, &out.arr, &o), NDF_EINVAL);
  expect_reject(ctx, &s.arr, &m.arr, &out, NULL, NDF_EINVAL, "'options'");
  expect_reject(ctx, NULL, &m.arr, &out, &o, NDF_EINVAL, "'seed'");
  expect_reject(ctx, &s.arr, NULL, &out, &o, NDF_EINVAL, "'mask'");
  assert_int_equal(ndf_reconstruction(ctx, &s.arr, &m.arr, NULL, &o), NDF_EINVAL);
  /* dtypes */
  ndf_array x = m.arr;
  x.dtype = NDF_UINT16;
  expect_reject(ctx, &s.arr, &x, &out, &o, NDF_EINVAL, "'mask' (dtype uint16 differs");
  expect_reject(ctx, &s.arr, &m.arr, &o8, &o, NDF_EINVAL, "'output' (dtype uint8 is neither float64");
  x = s.arr;
  x.dtype = NDF_BOOL;
  ndf_array y = m.arr;
  y.dtype = NDF_BOOL;
  expect_reject(ctx, &x, &y, &out, &o, NDF_EINVAL, "'seed' (dtype bool is not supported");
  /* shapes, devices, overlap */
  x = m.arr;
  x.shape[1] = 4;
  expect_reject(ctx, &s.arr, &x, &out, &o, NDF_EINVAL, "'mask' (shape[1]=4 differs");
  x = m.arr;
  x.device = NDF_DEVICE_CUDA;
  expect_reject(ctx, &s.arr, &x, &out, &o, NDF_EINVAL, "'mask' (lives on another device");
  tu_array o16 = s; /* the seed's own buffer as the output (poisoned, then zeroed again) */
  expect_reject(ctx, &s.arr, &m.arr, &o16, &o, NDF_EINVAL, "'output' (overlaps the seed");
  for (int i = 0; i < 20; i++) tu_set(&s.arr, i, 0);
  /* batch_dims */
  o.batch_dims = 2;
  expect_reject(ctx, &s.arr, &m.arr, &out, &o, NDF_EINVAL, "'batch_dims'");
  o.batch_dims = -1;
  expect_reject(ctx, &s.arr, &m.arr, &out, &o, NDF_EINVAL, "'batch_dims'");
  ndf_reconstruction_options_init(&o);
  /* method */
  o.method = (ndf_reconstruct_method)7;
  expect_reject(ctx, &s.arr, &m.arr, &out, &o, NDF_EINVAL, "'method'");
  ndf_reconstruction_options_init(&o);
  /* footprint: even without offset, rank, device, offset range and count */
  o.footprint = &fp.arr;
  expect_reject(ctx, &s.arr, &m.arr, &out, &o, NDF_EINVAL, "'footprint' (shape[0]=2 is even");
  o.noffset = 2;
  o.offset[0] = 1;
  o.offset[1] = 3;
  assert_int_equal(ndf_reconstruction(ctx, &s.arr, &m.arr, &out.arr, &o), NDF_OK);
  o.offset[1] = 4;
  expect_reject(ctx, &s.arr, &m.arr, &out, &o, NDF_EINVAL, "'offset' (offset[1]=4 is outside");
  o.offset[1] = -1;
  expect_reject(ctx, &s.arr, &m.arr, &out, &o, NDF_EINVAL, "'offset' (offset[1]=-1 is outside");
  o.noffset = 3;
  expect_reject(ctx, &s.arr, &m.arr, &out, &o, NDF_EINVAL, "'offset' (3 values");
  ndf_reconstruction_options_init(&o);
  o.footprint = &fp1.arr;
  expect_reject(ctx, &s.arr, &m.arr, &out, &o, NDF_EINVAL, "'footprint' (rank 1 does not match");
  x = fp2.arr;
  x.device = NDF_DEVICE_CUDA;
  o.footprint = &x;
  expect_reject(ctx, &s.arr, &m.arr, &out, &o, NDF_EINVAL, "'footprint' (must be a CPU");
  ndf_reconstruction_options_init(&o);
  /* data: the seed above the mask (dilation), below it (erosion), NaN */
  tu_set(&s.arr, 7, 6);
  expect_reject(ctx, &s.arr, &m.arr, &out, &o, NDF_EINVAL, "at [1,2]: reconstruction by dilation needs seed <= mask");
  o.method = NDF_RECONSTRUCT_EROSION;
  expect_reject(ctx, &s.arr, &m.arr, &out, &o, NDF_EINVAL, "reconstruction by erosion needs seed >= mask");
  for (int i = 0; i < 20; i++) tu_set(&s.arr, i, 9);
  assert_int_equal(ndf_reconstruction(ctx, &s.arr, &m.arr, &out.arr, &o), NDF_OK);
  tu_array fs, fm;
  assert_int_equal(tu_array_alloc(&fs, NDF_FLOAT32, 2, shape), 0);
  assert_int_equal(tu_array_alloc(&fm, NDF_FLOAT32, 2, shape), 0);
  tu_set(&fm.arr, 19, NAN);
  ndf_reconstruction_options_init(&o);
  expect_reject(ctx, &fs.arr, &fm.arr, &out, &o, NDF_EINVAL, "NaN in the seed or the mask at [3,4]");
  /* names */
  ndf_reconstruct_method mth;
  assert_int_equal(ndf_reconstruct_method_from_name("erosion", &mth), NDF_OK);
  assert_int_equal(mth, NDF_RECONSTRUCT_EROSION);
  assert_int_equal(ndf_reconstruct_method_from_name("opening", &mth), NDF_EINVAL);
  assert_string_equal(ndf_reconstruct_method_name(NDF_RECONSTRUCT_DILATION), "dilation");
  assert_null(ndf_reconstruct_method_name((ndf_reconstruct_method)2));
  /* empty arrays: nothing to do */
  const int64_t e0[2] = {0, 5};
  tu_array es, em, eo;
  assert_int_equal(tu_array_alloc(&es, NDF_INT16, 2, e0), 0);
  assert_int_equal(tu_array_alloc(&em, NDF_INT16, 2, e0), 0);
  assert_int_equal(tu_array_alloc(&eo, NDF_FLOAT64, 2, e0), 0);
  assert_int_equal(ndf_reconstruction(ctx, &es.arr, &em.arr, &eo.arr, &o), NDF_OK);
  tu_array_free(&es);
  tu_array_free(&em);
  tu_array_free(&eo);
  tu_array_free(&fs);
  tu_array_free(&fm);
  tu_array_free(&s);
  tu_array_free(&m);
  tu_array_free(&out);
  tu_array_free(&o8);
  tu_array_free(&fp);
  tu_array_free(&fp2);
  tu_array_free(&fp1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_skimage_cases),
      cmocka_unit_test(test_skimage_cases_strided),
      cmocka_unit_test(test_skimage_cases_fortran),
      cmocka_unit_test(test_brute_force),
      cmocka_unit_test(test_skimage_known_values),
      cmocka_unit_test(test_signed_zeros),
      cmocka_unit_test(test_broadcast_inputs),
      cmocka_unit_test(test_threads),
      cmocka_unit_test(test_contract),
  };
  return cmocka_run_group_tests(tests, group_setup, tu_oracle_group_teardown);
}
