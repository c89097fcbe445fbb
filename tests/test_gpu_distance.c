/*
 * test_gpu_distance.c -- ndf_distance_transform_edt on the GPU against the
 * CPU backend (itself checked against scipy by test_distance), on fresh
 * random inputs drawn here: ndim 1-4 with 0-2 batch axes, sparse and dense
 * background, single background points (long distances), lattices (ties),
 * images without background, every input dtype (NaN and -0.0 in floats),
 * unit and anisotropic sampling, float64 and float32 distances, indices,
 * either output alone, strided and negative-stride inputs, strided outputs,
 * and the benchmark shapes (1024^2, 8x1024^2, 256^3); every last-axis
 * kernel (edt.rows: auto, warp, serial, tile) in turn, the middle axes'
 * ndf_edt_wlines and ndf_edt_lines (edt.lines=thread), and chosen
 * shapes/masks on every path (test_gpu_edt_paths).
 *
 * Tolerance: none.  The GPU evaluates scipy's double arithmetic operation by
 * operation (no fused multiply-adds) and sqrt is correctly rounded on both
 * sides, so float64 distances, float32 distances (the float64 value rounded)
 * and indices must all be bit-identical to the CPU's.  Every GPU output is
 * poisoned before the run; the bytes between the elements of a strided output
 * must keep the poison.  cdt distances (taxicab, chessboard; by name or as
 * a structure) equal the CPU's bit for bit (int32) on the same kinds of
 * random inputs and at the benchmark shapes; cdt indices and other cdt metric
 * structures on CUDA arrays must return NDF_ENOTSUP and leave the outputs
 * untouched (bf: test_gpu_distance_bf.c).
 *
 * Exits 77 (skipped) when the context has no CUDA device.  With fewer than
 * 100 random cases (NDF_TEST_CASES) only the 1024^2 benchmark shapes run.
 * Seed: NDF_TEST_SEED (printed); number of random cases: NDF_TEST_CASES.
 * This file uses only the public API of ndforge.
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
#include <time.h>

#include "ndforge.h"
#include "testutil.h"

typedef tu_gpu_state gpu_state;

/* ------------------------------------------------------------------------ */
/* Device buffers mirroring host layouts (as in test_gpu_grey.c)             */

/* tu_dev (testutil.h): a device copy of a host array's whole buffer. */

/* ------------------------------------------------------------------------ */
/* Random cases                                                              */

typedef struct dcase {
  ndf_dtype dt, dout;
  int nd, batch, nsp;
  int64_t shape[NDF_MAX_NDIM];
  ndf_distance_options o;
  int want_dist, want_idx;
  int in_layout, out_layout;
  char desc[512];
} dcase;

/* Foreground mask of kind k into m (C order, 0/1). */
/* Mask kind for the next draw_mask (-1: random 0-5; test_gpu_edt_paths sets 2, 6, 7, 8). */
static int g_mask_kind = -1;

static void draw_mask(uint8_t *m, const dcase *c, int64_t n, tu_rng *r) {
  int kind = g_mask_kind >= 0 ? g_mask_kind : (int)tu_rng_int(r, 0, 5);
  const int64_t last = c->nd > 0 && c->shape[c->nd - 1] > 0 ? c->shape[c->nd - 1] : 1;
  double p = tu_rng_unif(r);
  for (int64_t i = 0; i < n; i++) {
    switch (kind) {
      case 0: m[i] = !tu_rng_chance(r, 0.02 * p); break;         /* sparse background: long distances */
      case 1: m[i] = !tu_rng_chance(r, 0.5 * p); break;          /* dense background */
      case 2: m[i] = 1; break;                                     /* no background: scipy's virtual feature */
      case 3: m[i] = (i % 3) != 0 && (i % 7) != 0; break;          /* lattice: ties */
      case 4: m[i] = 1; break;                                     /* single points, below */
      case 6: m[i] = 0; break;                                     /* all background (empty mask) */
      case 7: m[i] = i % last != 0 || !tu_rng_chance(r, 0.3); break; /* background only at last coordinate 0:
                                                                      lines without sites in the middle passes */
      case 8: m[i] = 0; break;                                     /* balls of foreground, below */
      default: m[i] = tu_rng_chance(r, p); break;                  /* anything */
    }
  }
  if (kind == 4 && n > 0)
    for (int k = 0; k < 3; k++) m[tu_rng_int(r, 0, n - 1)] = 0;
  if (kind == 8 && n > 0) { /* 1-4 balls of foreground (the same in every image of a batch): long
                               searches in the search kernels, ties on their rims */
    int64_t npix = 1, smax = 1;
    for (int d = c->batch; d < c->nd; d++) {
      npix *= c->shape[d];
      smax = c->shape[d] > smax ? c->shape[d] : smax;
    }
    const int nballs = (int)tu_rng_int(r, 1, 4);
    for (int b = 0; b < nballs; b++) {
      double ctr[NDF_MAX_NDIM];
      const double rad = 1.0 + tu_rng_unif(r) * (double)smax / 3.0;
      for (int d = c->batch; d < c->nd; d++) ctr[d] = tu_rng_unif(r) * (double)c->shape[d];
      for (int64_t i = 0; i < n; i++) {
        int64_t q = i % npix;
        double d2 = 0.0;
        for (int d = c->nd - 1; d >= c->batch; d--) {
          const double x = (double)(q % c->shape[d]) - ctr[d];
          q /= c->shape[d];
          d2 += x * x;
        }
        if (d2 <= rad * rad) m[i] = 1;
      }
    }
  }
}

static void set_value(const ndf_array *a, int64_t i, int fg, tu_rng *r) {
  if (a->dtype == NDF_FLOAT32 || a->dtype == NDF_FLOAT64) {
    static const double fgv[] = {1.0, -2.5, 1e-30, NAN, INFINITY};
    tu_set(a, i, fg ? fgv[tu_rng_int(r, 0, 4)] : (tu_rng_chance(r, 0.3) ? -0.0 : 0.0));
  } else {
    tu_set(a, i, fg ? (a->dtype == NDF_INT16 ? -3 : 1) : 0);
  }
}

static void draw_case(dcase *c, tu_rng *r, int large) {
  memset(c, 0, sizeof *c);
  static const ndf_dtype dts[] = {NDF_BOOL, NDF_UINT8, NDF_INT16, NDF_FLOAT32, NDF_FLOAT64};
  c->dt = dts[tu_rng_int(r, 0, 4)];
  c->nsp = (int)tu_rng_int(r, 1, 4);
  c->batch = (int)tu_rng_int(r, 0, 2);
  if (c->nsp + c->batch > 5) c->batch = 5 - c->nsp;
  c->nd = c->nsp + c->batch;
  for (int d = 0; d < c->batch; d++) c->shape[d] = tu_rng_int(r, 1, 3);
  static const int64_t hi[5] = {0, 3000, 300, 48, 14}, hil[5] = {0, 40000, 700, 96, 24};
  for (int d = 0; d < c->nsp; d++) {
    int64_t h = large ? hil[c->nsp] : hi[c->nsp];
    c->shape[c->batch + d] = tu_rng_chance(r, 0.1) ? tu_rng_int(r, 1, 3) : tu_rng_int(r, 1, h);
  }
  ndf_distance_options_init(&c->o);
  c->o.batch_dims = c->batch;
  if (tu_rng_chance(r, 0.5)) {
    static const double sv[] = {0.7, 1.3, 1.0, 2.0, 0.35, 3.14159, 1.1};
    c->o.nsampling = tu_rng_chance(r, 0.2) ? 1 : c->nsp;
    for (int d = 0; d < c->o.nsampling; d++) c->o.sampling[d] = sv[tu_rng_int(r, 0, 6)];
  }
  int w = (int)tu_rng_int(r, 0, 3);
  c->want_dist = w != 1;
  c->want_idx = w != 2;
  c->dout = tu_rng_chance(r, 0.3) ? NDF_FLOAT32 : NDF_FLOAT64;
  c->in_layout = tu_rng_chance(r, 0.4) ? TU_LAYOUT_PADDED | (tu_rng_chance(r, 0.5) ? TU_LAYOUT_NEGATIVE : 0) |
                                             (tu_rng_chance(r, 0.3) ? TU_LAYOUT_OFFSET : 0)
                                       : TU_LAYOUT_C;
  c->out_layout = tu_rng_chance(r, 0.3) ? TU_LAYOUT_PADDED : tu_rng_chance(r, 0.2) ? TU_LAYOUT_FORTRAN : TU_LAYOUT_C;
  int n = snprintf(c->desc, sizeof c->desc, "edt %s shape ", ndf_dtype_name(c->dt));
  for (int d = 0; d < c->nd; d++) n += snprintf(c->desc + n, sizeof c->desc - n, "%s%lld", d ? "x" : "", (long long)c->shape[d]);
  n += snprintf(c->desc + n, sizeof c->desc - n, " batch %d sampling", c->batch);
  for (int d = 0; d < c->o.nsampling; d++) n += snprintf(c->desc + n, sizeof c->desc - n, " %g", c->o.sampling[d]);
  snprintf(c->desc + n, sizeof c->desc - n, "%s%s %s in-layout %d out-layout %d", c->want_dist ? " dist" : "",
           c->want_idx ? " idx" : "", ndf_dtype_name(c->dout), c->in_layout, c->out_layout);
}

static void idx_shape(const dcase *c, int64_t *sh) {
  for (int d = 0; d < c->batch; d++) sh[d] = c->shape[d];
  sh[c->batch] = c->nsp;
  for (int d = c->batch; d < c->nd; d++) sh[d + 1] = c->shape[d];
}

/* Sets tunable name on ctx (value NULL: its default), asserting the API takes it. */
static void tune(ndf_ctx *ctx, const char *name, const char *value) {
  const ndf_status st = ndf_ctx_set_tunable(ctx, name, value);
  if (st != NDF_OK) printf("%s\n", ndf_errmsg(ctx));
  assert_int_equal(st, NDF_OK);
}
/* The value set on ctx for tunable name in buf, or NULL when none is set. */
static const char *tuned(ndf_ctx *ctx, const char *name, char *buf, size_t cap) {
  assert_int_equal(ndf_ctx_get_tunable(ctx, name, buf, cap), NDF_OK);
  return strcmp(buf, "default") ? buf : NULL;
}

/* The kernels runtime/ops/distance/distance_cuda.c must (want) and must not (nots)
 * launch for an edt case under the current environment (the kernel log
 * checks them; NULL-terminated lists): the search path (ndf_edt_sfirst, then
 * ndf_edt_sdrows / ndf_edt_srows last) where edt_search_plan takes it --
 * claimed only well inside its limits (middle axes up to 500, the last up to
 * 4000) -- and never under the envelope kernels' switches; the switches' own
 * kernels (edt.rows=tile: ndf_edt_rows, =warp: ndf_edt_wrows for rows up
 * to 1500; edt.lines=thread: ndf_edt_lines). */
static void edt_expect(ndf_ctx *ctx, const dcase *c, const char **want, const char **nots) {
  int nw = 0, nn = 0;
  const int nsp = c->nsp, nb = c->batch;
  char b[6][32];
  const char *rows = tuned(ctx, "edt.rows", b[0], 32), *lines = tuned(ctx, "edt.lines", b[1], 32);
  const char *merge = tuned(ctx, "edt.merge", b[2], 32), *search = tuned(ctx, "edt.search", b[3], 32);
  const char *w = tuned(ctx, "edt.w", b[4], 32), *srows = tuned(ctx, "edt.srows", b[5], 32);
  const int off = (search && !strcmp(search, "off")) || rows || lines || merge || (w && !strcmp(w, "double"));
  double smax = 0, wmax = 0, slast = 1.0;
  int integer = 1, inside = nsp >= 2 && c->shape[nb] <= 16384 && c->shape[c->nd - 1] <= 4000;
  for (int d = 0; d < nsp; d++) {
    const double sd = c->o.nsampling == 0 ? 1.0 : c->o.sampling[c->o.nsampling == 1 ? 0 : d];
    integer &= sd >= 1.0 && sd <= 1048576.0 && sd == (double)(int64_t)sd;
    const double e = (double)c->shape[nb + d] * sd;
    if (d == nsp - 1) slast = sd;
    smax = e > smax ? e : smax;
    wmax += e * e;
    if (d > 0 && d < nsp - 1) inside &= c->shape[nb + d] <= 500;
  }
  const int exact = integer && 4.0 * smax * (wmax + smax * smax) < 4503599627370496.0;
  if (off) {
    nots[nn++] = "ndf_edt_sfirst";
  } else if (exact && wmax < 1073741824.0 && inside) {
    want[nw++] = "ndf_edt_sfirst";
    /* the last pass: ndf_edt_sdrows without indices where ((n + 8) s)^2 < 2^30 (edt_sdist), else ndf_edt_srows */
    const double el = ((double)c->shape[c->nd - 1] + 8) * slast;
    const int sd = !c->want_idx && !(srows && !strcmp(srows, "old")) && el * el < 1073741824.0;
    want[nw++] = sd ? "ndf_edt_sdrows" : "ndf_edt_srows";
  }
  if (rows && !strcmp(rows, "tile") && nsp >= 2) {
    want[nw++] = "ndf_edt_rows";
    nots[nn++] = "ndf_edt_wrows";
  }
  if (rows && !strcmp(rows, "warp") && nsp >= 2 && c->shape[c->nd - 1] <= 1500) want[nw++] = "ndf_edt_wrows";
  if (lines && !strcmp(lines, "thread") && nsp >= 3) {
    want[nw++] = "ndf_edt_lines";
    nots[nn++] = "ndf_edt_wlines";
  }
  want[nw] = nots[nn] = NULL;
}

/* Runs one case on both backends; returns 0 when the GPU matches the CPU. */
static int run_case(ndf_ctx *ctx, const dcase *c, tu_rng *r, double *gpu_ms) {
  int rc = -1;
  tu_array hin, lin, cd = {0}, ci = {0}, gd = {0}, gi = {0};
  tu_dev din = {0}, dd = {0}, di = {0};
  assert_int_equal(tu_array_alloc(&hin, c->dt, c->nd, c->shape), 0);
  const int64_t n = ndf_array_size(&hin.arr);
  uint8_t *m = malloc((size_t)(n ? n : 1));
  draw_mask(m, c, n, r);
  for (int64_t i = 0; i < n; i++) set_value(&hin.arr, i, m[i], r);
  free(m);
  assert_int_equal(tu_array_relayout(&lin, &hin.arr, c->in_layout, r), 0);
  int64_t ish[NDF_MAX_NDIM];
  idx_shape(c, ish);
  ndf_array dl = hin.arr, il;
  dl.dtype = c->dout;
  ndf_array_init(&il, NULL, NDF_DEVICE_CPU, NDF_INT32, c->nd + 1, ish);
  if (c->want_dist) {
    assert_int_equal(tu_array_alloc(&cd, c->dout, c->nd, c->shape), 0);
    assert_int_equal(tu_array_like(&gd, &dl, c->out_layout, r), 0);
  }
  if (c->want_idx) {
    assert_int_equal(tu_array_alloc(&ci, NDF_INT32, c->nd + 1, ish), 0);
    assert_int_equal(tu_array_like(&gi, &il, c->out_layout, r), 0);
  }
  ndf_status s = ndf_distance_transform_edt(ctx, &hin.arr, c->want_dist ? &cd.arr : NULL, c->want_idx ? &ci.arr : NULL, &c->o);
  if (s != NDF_OK) {
    printf("%s: CPU: %s %s\n", c->desc, ndf_status_name(s), ndf_errmsg(ctx));
    goto done;
  }
  tu_dev_upload(ctx, &din, &lin);
  if (c->want_dist) tu_dev_upload(ctx, &dd, &gd); /* poisoned buffers */
  if (c->want_idx) tu_dev_upload(ctx, &di, &gi);
  double t0 = tu_now_ms();
  const uint64_t mark = tu_klog_mark(ctx);
  s = ndf_distance_transform_edt(ctx, &din.arr, c->want_dist ? &dd.arr : NULL, c->want_idx ? &di.arr : NULL, &c->o);
  if (s == NDF_OK) s = ndf_ctx_synchronize(ctx);
  if (gpu_ms) *gpu_ms = tu_now_ms() - t0;
  if (s != NDF_OK) {
    printf("%s: GPU: %s %s\n", c->desc, ndf_status_name(s), ndf_errmsg(ctx));
    goto done;
  }
  if (n > 0) {
    const char *want[8], *nots[8];
    edt_expect(ctx, c, want, nots);
    int bad = 0;
    for (int k = 0; want[k]; k++) bad |= tu_klog_check(ctx, mark, want[k], 1, c->desc);
    for (int k = 0; nots[k]; k++) bad |= tu_klog_check(ctx, mark, nots[k], 0, c->desc);
    if (bad) goto done;
  }
  if (c->want_dist && tu_dev_check(ctx, c->desc, "distances", &dd, &gd, &cd.arr)) goto done;
  if (c->want_idx && tu_dev_check(ctx, c->desc, "indices", &di, &gi, &ci.arr)) goto done;
  rc = 0;
done:
  tu_dev_free(ctx, &din);
  if (c->want_dist) tu_dev_free(ctx, &dd);
  if (c->want_idx) tu_dev_free(ctx, &di);
  tu_array_free(&hin);
  tu_array_free(&lin);
  tu_array_free(&cd);
  tu_array_free(&ci);
  tu_array_free(&gd);
  tu_array_free(&gi);
  return rc;
}

/* The kernels (runtime/ops/distance/distance_cuda.c), recorded in the case's description.
 * Last axis (edt.rows): 0 the automatic choice, 1 a warp per row
 * (exact-arithmetic segments where the sampling allows), 2 a warp per row
 * with scipy's serial walk, 3 a thread per row (ndf_edt_rows); 4 = 3 with
 * the middle axes on a thread per line too (edt.lines=thread: the
 * kernels before ndf_edt_wlines); 5 = 0 with the warp kernels' segments
 * merged by lane 0 in order (edt.merge=serial) instead of in a tree;
 * 6 = 0 with W kept as double between passes (edt.w=double) where it
 * would be uint32 (exact arithmetic); 7 = 0 with ndf_edt_first's 512-thread
 * configuration and 2 rows per ndf_edt_wrows block forced (edt.first=512,
 * edt.warps=2, without exact arithmetic); 8 = 0 with
 * ndf_edt_first1k and one row per block forced (edt.first=1024,
 * edt.warps=1: the default without exact arithmetic, here on exact too);
 * 9 = 0 without the search path (edt.search=off: envelope kernels only);
 * modes 2 and 8 build lane 0's envelope (no exact arithmetic) with ndf_wenv1
 * (edt.serial=new), the others with ndf_wenv; 10 = 0 with searches
 * capped at radius 2 (edt.scap=2: most lines of the search path answered
 * by their envelope, ndf_senv / ndf_squery).  Mode 0 (and 7, 8) take the search path (ndf_edt_s*)
 * where it applies (integer sampling, W < 2^32, 2+ spatial axes); modes 1-6
 * name envelope kernels, which turns it off.  Modes 0-3 leave the middle
 * axes' automatic choice (ndf_edt_wlines with exact arithmetic).  Without
 * indices the search path's middle and last passes are ndf_edt_sdmid /
 * ndf_edt_sdrows (padded staging, distances only); 11 = 0 with the older
 * ndf_edt_smid / ndf_edt_srows there (edt.smid=old, edt.srows=old)
 * and the first pass's segments of 8+ voxels (edt.sfseg=8);
 * 12 = 0 with ndf_edt_sdmidt (edt.smid=t), searches up to radius 100
 * (edt.scap=100: wider pads, searches past 64 on long lines),
 * ndf_edt_srows (edt.srows=old) and first-pass segments of 32
 * (edt.sfseg=32). */
#define EDT_MODES 13
static void edt_rows_mode(ndf_ctx *ctx, dcase *c, int mode) {
  static const char *const names[] = {NULL, "warp", "serial", "tile", "tile", NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
  if (names[mode])
    tune(ctx, "edt.rows", names[mode]);
  else
    tune(ctx, "edt.rows", NULL);
  if (mode == 4)
    tune(ctx, "edt.lines", "thread");
  else
    tune(ctx, "edt.lines", NULL);
  if (mode == 5)
    tune(ctx, "edt.merge", "serial");
  else
    tune(ctx, "edt.merge", NULL);
  if (mode == 6)
    tune(ctx, "edt.w", "double");
  else
    tune(ctx, "edt.w", NULL);
  if (mode == 9)
    tune(ctx, "edt.search", "off");
  else
    tune(ctx, "edt.search", NULL);
  if (mode == 2 || mode == 8) /* lane 0's envelope by ndf_wenv1 */
    tune(ctx, "edt.serial", "new");
  else
    tune(ctx, "edt.serial", NULL);
  if (mode == 10 || mode == 12)
    tune(ctx, "edt.scap", mode == 10 ? "2" : "100");
  else
    tune(ctx, "edt.scap", NULL);
  if (mode == 11 || mode == 12) /* ndf_edt_smid / ndf_edt_sdmidt */
    tune(ctx, "edt.smid", mode == 11 ? "old" : "t");
  else
    tune(ctx, "edt.smid", NULL);
  if (mode == 11 || mode == 12)
    tune(ctx, "edt.srows", "old");
  else
    tune(ctx, "edt.srows", NULL);
  if (mode == 11 || mode == 12) /* the first pass's segments: 8+ voxels / 32 */
    tune(ctx, "edt.sfseg", mode == 11 ? "8" : "32");
  else
    tune(ctx, "edt.sfseg", NULL);
  if (mode == 7 || mode == 8) {
    tune(ctx, "edt.first", mode == 7 ? "512" : "1024");
    tune(ctx, "edt.warps", mode == 7 ? "2" : "1");
  } else {
    tune(ctx, "edt.first", NULL);
    tune(ctx, "edt.warps", NULL);
  }
  size_t n = strlen(c->desc);
  snprintf(c->desc + n, sizeof c->desc - n, " rows %s%s", names[mode] ? names[mode] : "auto",
           mode == 4   ? " lines thread"
           : mode == 5 ? " merge serial"
           : mode == 6 ? " W double"
           : mode == 7 ? " first 512 warps 2"
           : mode == 8 ? " first 1024 warps 1, wenv1"
           : mode == 9 ? " search off"
           : mode == 10 ? " search cap 2"
           : mode == 11 ? " smid/srows old, first segments 8+"
           : mode == 12 ? " smid t, search cap 100, srows old, first segments 32"
                       : "");
}

static void test_gpu_random_cases(void **state) {
  gpu_state *s = *state;
  tu_rng r;
  tu_rng_seed(&r, s->seed);
  int failed = 0;
  for (long k = 0; k < s->ncases; k++) {
    dcase c;
    draw_case(&c, &r, k % 10 == 9);
    edt_rows_mode(s->ctx, &c, (int)(k % EDT_MODES));
    if (run_case(s->ctx, &c, &r, NULL) != 0) failed++;
    if (failed >= 5) break;
  }
  if (failed) printf("%d random cases failed; seed %llu\n", failed, (unsigned long long)s->seed);
  assert_int_equal(failed, 0);
}

/* The kernels' paths on chosen shapes, each in every mode (EDT_MODES):
 * 2-D and 3-D, non-power-of-2 and 1-long axes, middle axes whose blocks of
 * lines cross an outer index (inner < 8), a middle axis too long for
 * ndf_edt_wlines (2000: ndf_edt_lines), batches, integer sampling (exact:
 * ndf_edt_wlines / segments in ndf_edt_wrows), non-integer sampling (the
 * thread-per-line kernels), indices, and the masks: random (-1), empty (6:
 * all background), full (2: no background), background only at last
 * coordinate 0 (7: whole lines without a site in the middle passes), balls
 * of foreground (8: long searches, ties on the rims) and a lattice (3: ties). */
static void test_gpu_edt_paths(void **state) {
  gpu_state *s = *state;
  tu_rng r;
  tu_rng_seed(&r, s->seed ^ 0xed7);
  static const struct { int nd, batch; int64_t shape[4]; } S[] = {
      {2, 0, {37, 45}},       {2, 0, {1, 300}},       {2, 0, {300, 1}},        {3, 0, {37, 45, 29}},
      {3, 0, {64, 64, 64}},   {3, 0, {5, 700, 3}},    {3, 0, {1, 33, 1}},      {3, 0, {9, 1, 17}},
      {3, 0, {3, 1500, 5}},   {3, 0, {2, 2000, 3}},   {4, 1, {3, 20, 33, 18}}, {4, 0, {7, 9, 11, 13}},
      {3, 1, {4, 130, 70}},   {4, 1, {2, 31, 40, 65}},
      /* lines past the search cap (64) and block sizes that do not divide them (ndf_edt_sdmid / sdrows) */
      {3, 0, {3, 200, 41}},   {2, 0, {150, 333}},     {4, 2, {2, 3, 70, 9}},
  };
  static const int kinds[] = {-1, 6, 2, 7, 8, 3};
  /* Short runs (compute-sanitizer): the automatic choice and the old kernels, random and kind-7 masks. */
  const int small = s->ncases < 100;
  int failed = 0, ncase = 0;
  for (size_t k = 0; k < sizeof S / sizeof S[0]; k++)
    for (int samp = 0; samp < 3; samp++)
      for (size_t q = 0; q < sizeof kinds / sizeof kinds[0]; q++)
        for (int mode = 0; mode < EDT_MODES; mode++) {
          if (small && ((mode != 0 && mode != 4 && mode != 9 && mode != 10 && mode != 11) || (q != 0 && q != 3 && q != 4)))
            continue;
          dcase c;
          memset(&c, 0, sizeof c);
          c.dt = NDF_UINT8;
          c.nd = S[k].nd;
          c.batch = S[k].batch;
          c.nsp = c.nd - c.batch;
          memcpy(c.shape, S[k].shape, sizeof S[k].shape);
          ndf_distance_options_init(&c.o);
          c.o.batch_dims = c.batch;
          if (samp) { /* 1: integer (exact), 2: non-integer */
            static const double si[] = {2.0, 1.0, 3.0}, sf[] = {0.7, 1.3, 1.1};
            c.o.nsampling = c.nsp;
            for (int d = 0; d < c.nsp; d++) c.o.sampling[d] = samp == 1 ? si[d % 3] : sf[d % 3];
          }
          c.want_dist = 1;
          c.want_idx = (mode + (int)q) % 2 == 0;
          c.dout = NDF_FLOAT64;
          int n = snprintf(c.desc, sizeof c.desc, "paths: shape");
          for (int d = 0; d < c.nd; d++) n += snprintf(c.desc + n, sizeof c.desc - n, " %lld", (long long)c.shape[d]);
          snprintf(c.desc + n, sizeof c.desc - n, " batch %d sampling %d mask %d%s", c.batch, samp, kinds[q],
                   c.want_idx ? " idx" : "");
          edt_rows_mode(s->ctx, &c, mode);
          g_mask_kind = kinds[q];
          ncase++;
          if (run_case(s->ctx, &c, &r, NULL) != 0) failed++;
          g_mask_kind = -1;
          if (failed >= 5) goto out;
        }
out:
  tune(s->ctx, "edt.rows", NULL);
  tune(s->ctx, "edt.lines", NULL);
  tune(s->ctx, "edt.merge", NULL);
  tune(s->ctx, "edt.w", NULL);
  tune(s->ctx, "edt.search", NULL);
  tune(s->ctx, "edt.serial", NULL);
  tune(s->ctx, "edt.scap", NULL);
  tune(s->ctx, "edt.smid", NULL);
  tune(s->ctx, "edt.srows", NULL);
  tune(s->ctx, "edt.sfseg", NULL);
  if (failed) printf("%d of %d path cases failed; seed %llu\n", failed, ncase, (unsigned long long)s->seed);
  assert_int_equal(failed, 0);
}

/* The last axis' envelope built by the warp (ndf_wenvp: ndf_edt_wrows without
 * exact arithmetic, the default there), forced on every sampling by
 * edt.rows=serial (which also turns the search path off): samplings of
 * 0.5 / 1 / 2 (exact ties: the tie rule), non-integer ones (0.7, 1.3, 1.1,
 * 0.35: rounding), float64 and float32 distances, indices with and without
 * distances, masks with ties (lattice), rows without a site (7, and no
 * background at all: 2), all background (6), balls (8), random; 1-D (no warp
 * rows: ndf_edt_rows) to 4-D, batches, rows of 1..2100 (1950 fits the warp's
 * 48 KiB, 2100 falls back to lane 0).  Every third case runs lane 0's build
 * (edt.serial=old) instead, so one run checks both. */
static void test_gpu_edt_wenvp(void **state) {
  gpu_state *s = *state;
  tu_rng r;
  tu_rng_seed(&r, s->seed ^ 0x3e9b);
  static const struct { int nd, batch; int64_t shape[5]; } S[] = {
      {1, 0, {257}},          {2, 0, {37, 45}},         {2, 0, {1, 300}},          {2, 0, {300, 1}},
      {2, 0, {64, 1024}},     {2, 0, {9, 1950}},        {2, 0, {3, 2100}},         {3, 0, {5, 40, 70}},
      {3, 1, {3, 20, 90}},    {4, 0, {3, 5, 6, 40}},    {5, 1, {2, 3, 4, 5, 33}},
  };
  static const double samps[][4] = {{0.5, 1.0, 2.0, 0.5}, {1.0, 1.0, 1.0, 1.0}, {2.0, 0.5, 1.0, 2.0},
                                    {0.7, 1.3, 1.1, 0.7}, {1.3, 0.7, 0.35, 1.1}};
  static const int kinds[] = {-1, 3, 7, 8, 2, 6};
  const int small = s->ncases < 100;
  int failed = 0, ncase = 0;
  tune(s->ctx, "edt.rows", "serial");
  for (size_t k = 0; k < sizeof S / sizeof S[0]; k++)
    for (int q = 0; q < 5; q++)
      for (size_t mk = 0; mk < sizeof kinds / sizeof kinds[0]; mk++) {
        if (small && ((q != 0 && q != 3) || (mk != 0 && mk != 1))) continue;
        dcase c;
        memset(&c, 0, sizeof c);
        c.dt = NDF_UINT8;
        c.nd = S[k].nd;
        c.batch = S[k].batch;
        c.nsp = c.nd - c.batch;
        memcpy(c.shape, S[k].shape, sizeof S[k].shape);
        ndf_distance_options_init(&c.o);
        c.o.batch_dims = c.batch;
        c.o.nsampling = c.nsp;
        for (int d = 0; d < c.nsp; d++) c.o.sampling[d] = samps[q][d];
        const int outs = ncase % 5; /* 0 f64, 1 f64 + idx, 2 f32, 3 f32 + idx, 4 idx only */
        c.want_dist = outs != 4;
        c.want_idx = outs == 1 || outs == 3 || outs == 4;
        c.dout = outs == 2 || outs == 3 ? NDF_FLOAT32 : NDF_FLOAT64;
        const int old = ncase % 3 == 2;
        if (old)
          tune(s->ctx, "edt.serial", "old");
        else
          tune(s->ctx, "edt.serial", NULL);
        int n = snprintf(c.desc, sizeof c.desc, "wenvp: shape");
        for (int d = 0; d < c.nd; d++) n += snprintf(c.desc + n, sizeof c.desc - n, " %lld", (long long)c.shape[d]);
        snprintf(c.desc + n, sizeof c.desc - n, " batch %d sampling %g %g %g mask %d outs %d%s", c.batch,
                 samps[q][0], samps[q][1], samps[q][2], kinds[mk], outs, old ? " lane 0 (old)" : " warp");
        g_mask_kind = kinds[mk];
        ncase++;
        if (run_case(s->ctx, &c, &r, NULL) != 0) failed++;
        g_mask_kind = -1;
        if (failed >= 5) goto out;
      }
out:
  tune(s->ctx, "edt.rows", NULL);
  tune(s->ctx, "edt.serial", NULL);
  if (failed) printf("%d of %d wenvp cases failed; seed %llu\n", failed, ncase, (unsigned long long)s->seed);
  assert_int_equal(failed, 0);
}

/* The workloads, for correctness at size (timings are printed, not judged). */
static void test_gpu_benchmark_shapes(void **state) {
  gpu_state *s = *state;
  tu_rng r;
  tu_rng_seed(&r, s->seed ^ 0x5eed);
  static const struct { int nd, batch; int64_t shape[4]; int samp, idx, rows; } W[] = {
      {2, 0, {1024, 1024}, 0, 0, 0},
      {2, 0, {1024, 1024}, 0, 1, 2},
      {2, 0, {1024, 1024}, 0, 0, 3},
      {3, 1, {8, 1024, 1024}, 0, 0, 0},
      {3, 0, {256, 256, 256}, 0, 0, 0},
      {3, 0, {256, 256, 256}, 0, 1, 1},
      {2, 0, {1024, 1024}, 1, 1, 0},
      {2, 0, {1024, 1024}, 2, 1, 0},
      {3, 1, {8, 1024, 1024}, 1, 1, 2}, /* scipy's walk in parallel chunks, many rows */
      {3, 0, {256, 256, 256}, 0, 1, 4},   /* the thread-per-line kernels (before ndf_edt_wlines) */
      {3, 0, {256, 256, 256}, 2, 1, 0},   /* integer sampling: ndf_edt_wlines + ndf_edt_wrows */
      {3, 0, {256, 256, 256}, 1, 0, 0},   /* non-integer sampling: ndf_edt_lines + ndf_edt_rows */
      {3, 0, {512, 512, 512}, 0, 0, 0},
      {2, 0, {1024, 1024}, 0, 1, 5},      /* segments merged in order (edt.merge=serial) */
      {3, 0, {256, 256, 256}, 0, 1, 6},   /* W as double between passes (edt.w=double) */
      {2, 0, {1024, 1024}, 1, 1, 7},      /* 512-thread first pass, 2 rows per block (edt.first=512, WARPS=2) */
      {3, 0, {256, 256, 256}, 0, 0, 8},   /* ndf_edt_first1k + one row per block on exact arithmetic */
      {3, 0, {256, 256, 256}, 0, 0, 9},   /* the envelope kernels (edt.search=off) */
      {3, 0, {256, 256, 256}, 0, 1, 9},
      {2, 0, {1024, 1024}, 0, 1, 9},
      {2, 0, {1024, 1024}, 1, 1, 8},      /* the sampling + indices workload on ndf_wenv1, ndf_edt_first1k */
      {3, 1, {8, 1024, 1024}, 0, 1, 0},   /* the search path with features, batched */
      {3, 0, {256, 256, 256}, 0, 1, 10},  /* the search path's envelope fallback (edt.scap=2) */
      {3, 0, {256, 256, 256}, 0, 0, 11},  /* the search path without indices on ndf_edt_smid / srows */
      {3, 0, {256, 256, 256}, 0, 0, 10},  /* ndf_edt_sdmid / sdrows with the envelope fallback */
      {2, 0, {1024, 1024}, 0, 0, 12},     /* searches up to radius 100 */
      {3, 0, {256, 256, 256}, 0, 0, 12},  /* ndf_edt_sdmidt (edt.smid=t), first-pass segments of 32 */
  };
  /* Short runs (NDF_TEST_CASES < 100, as gpu_run.sh's compute-sanitizer pass
   * uses) take the 1024^2 shapes only. */
  const int small = s->ncases < 100;
  for (size_t k = 0; k < sizeof W / sizeof W[0]; k++) {
    if (small && W[k].nd - W[k].batch != 2) continue;
    if (small && W[k].batch) continue;
    dcase c;
    memset(&c, 0, sizeof c);
    c.dt = NDF_UINT8;
    c.nd = W[k].nd;
    c.batch = W[k].batch;
    c.nsp = c.nd - c.batch;
    memcpy(c.shape, W[k].shape, sizeof W[k].shape);
    ndf_distance_options_init(&c.o);
    c.o.batch_dims = c.batch;
    if (W[k].samp) { /* 1: scipy's serial walk; 2: integer sampling (exact segments) */
      c.o.nsampling = c.nsp;
      c.o.sampling[0] = W[k].samp == 1 ? 0.7 : 3.0;
      c.o.sampling[1] = W[k].samp == 1 ? 1.3 : 2.0;
      if (c.nsp > 2) c.o.sampling[2] = W[k].samp == 1 ? 1.1 : 1.0;
    }
    c.want_dist = 1;
    c.want_idx = W[k].idx;
    c.dout = NDF_FLOAT64;
    snprintf(c.desc, sizeof c.desc, "benchmark shape %d", (int)k);
    edt_rows_mode(s->ctx, &c, W[k].rows);
    double ms = 0;
    assert_int_equal(run_case(s->ctx, &c, &r, &ms), 0);
    printf("%s: %.3f ms on the GPU (first call, compile included)\n", c.desc, ms);
  }
}

/* ---- cdt (distances; taxicab and chessboard) ------------------------------------------ */

/* One cdt case: GPU distances vs the CPU backend's, bit for bit (int32).
 * metric: 0 taxicab, 1 chessboard; as_struct: given as
 * generate_binary_structure(nsp, 1 or nsp) with a scrambled second half
 * (scipy reads only the first). */
static int run_cdt_case(ndf_ctx *ctx, dcase *c, int chess, int as_struct, tu_rng *r, double *gpu_ms) {
  int rc = -1;
  tu_array hin, lin, cd = {0}, gd = {0}, st = {0};
  tu_dev din = {0}, dd = {0};
  assert_int_equal(tu_array_alloc(&hin, c->dt, c->nd, c->shape), 0);
  const int64_t n = ndf_array_size(&hin.arr);
  uint8_t *m = malloc((size_t)(n ? n : 1));
  draw_mask(m, c, n, r);
  for (int64_t i = 0; i < n; i++) set_value(&hin.arr, i, m[i], r);
  free(m);
  assert_int_equal(tu_array_relayout(&lin, &hin.arr, c->in_layout, r), 0);
  ndf_array dl = hin.arr;
  dl.dtype = NDF_INT32;
  assert_int_equal(tu_array_alloc(&cd, NDF_INT32, c->nd, c->shape), 0);
  assert_int_equal(tu_array_like(&gd, &dl, c->out_layout, r), 0);
  ndf_distance_options o;
  ndf_distance_options_init(&o);
  o.batch_dims = c->batch;
  if (as_struct) {
    int64_t ssh[NDF_MAX_NDIM];
    for (int d = 0; d < c->nsp; d++) ssh[d] = 3;
    assert_int_equal(tu_array_alloc(&st, NDF_UINT8, c->nsp, ssh), 0);
    const int64_t sn = ndf_array_size(&st.arr);
    for (int64_t i = 0; i < sn; i++) {
      int64_t q = i;
      int dd2 = 0;
      for (int d = 0; d < c->nsp; d++) {
        dd2 += q % 3 != 1;
        q /= 3;
      }
      tu_set(&st.arr, i, i > sn / 2 ? (double)tu_rng_int(r, 0, 1) : dd2 <= (chess ? c->nsp : 1));
    }
    o.metric_structure = &st.arr;
  } else {
    o.metric = chess ? NDF_METRIC_CHESSBOARD : NDF_METRIC_TAXICAB;
  }
  size_t len = strlen(c->desc);
  snprintf(c->desc + len, sizeof c->desc - len, " cdt %s%s", chess ? "chessboard" : "taxicab", as_struct ? " (structure)" : "");
  ndf_status s = ndf_distance_transform_cdt(ctx, &hin.arr, &cd.arr, NULL, &o);
  if (s != NDF_OK) {
    printf("%s: CPU: %s %s\n", c->desc, ndf_status_name(s), ndf_errmsg(ctx));
    goto done;
  }
  tu_dev_upload(ctx, &din, &lin);
  tu_dev_upload(ctx, &dd, &gd); /* poisoned */
  double t0 = tu_now_ms();
  s = ndf_distance_transform_cdt(ctx, &din.arr, &dd.arr, NULL, &o);
  if (s == NDF_OK) s = ndf_ctx_synchronize(ctx);
  if (gpu_ms) *gpu_ms = tu_now_ms() - t0;
  if (s != NDF_OK) {
    printf("%s: GPU: %s %s\n", c->desc, ndf_status_name(s), ndf_errmsg(ctx));
    goto done;
  }
  if (tu_dev_check(ctx, c->desc, "distances", &dd, &gd, &cd.arr)) goto done;
  rc = 0;
done:
  tu_dev_free(ctx, &din);
  tu_dev_free(ctx, &dd);
  tu_array_free(&hin);
  tu_array_free(&lin);
  tu_array_free(&cd);
  tu_array_free(&gd);
  if (as_struct) tu_array_free(&st);
  return rc;
}

/* Random cdt cases (a third of NDF_TEST_CASES): ndim 1-4, batch axes, every
 * mask kind of draw_mask (no background, single points: distances in the
 * hundreds), strided inputs and outputs; then the benchmark shapes
 * (1024^2 both metrics, 8 x 1024^2 taxicab, 256^3 chessboard unless short). */
static void test_gpu_cdt(void **state) {
  gpu_state *s = *state;
  tu_rng r;
  tu_rng_seed(&r, s->seed ^ 0xcd7);
  int failed = 0;
  for (long k = 0; k < s->ncases / 3 && failed < 5; k++) {
    dcase c;
    draw_case(&c, &r, k % 10 == 9);
    memcpy(c.desc, "cdt", 3); /* the description starts "edt <dtype> ..." */
    /* every kernel variant in turn: auto, cdt.rows=global, cdt.lines=simple */
    const int mode = (int)(k % 3);
    tune(s->ctx, "cdt.rows", NULL);
    tune(s->ctx, "cdt.lines", NULL);
    if (mode == 1) tune(s->ctx, "cdt.rows", "global");
    if (mode == 2) tune(s->ctx, "cdt.lines", "simple");
    size_t len = strlen(c.desc);
    snprintf(c.desc + len, sizeof c.desc - len, " %s", mode == 0 ? "auto" : mode == 1 ? "rows global" : "lines simple");
    if (run_cdt_case(s->ctx, &c, (int)(k % 2), k % 5 == 4, &r, NULL) != 0) failed++;
  }
  tune(s->ctx, "cdt.rows", NULL);
  tune(s->ctx, "cdt.lines", NULL);
  if (failed) printf("%d random cdt cases failed; seed %llu\n", failed, (unsigned long long)s->seed);
  assert_int_equal(failed, 0);
  static const struct { int nd, batch; int64_t shape[3]; int chess; } W[] = {
      {2, 0, {1024, 1024}, 0}, {2, 0, {1024, 1024}, 1}, {3, 1, {8, 1024, 1024}, 0}, {3, 0, {256, 256, 256}, 1},
  };
  for (size_t k = 0; k < sizeof W / sizeof W[0]; k++) {
    if (s->ncases < 100 && k >= 2) continue;
    dcase c;
    memset(&c, 0, sizeof c);
    c.dt = NDF_UINT8;
    c.nd = W[k].nd;
    c.batch = W[k].batch;
    c.nsp = c.nd - c.batch;
    memcpy(c.shape, W[k].shape, sizeof W[k].shape);
    snprintf(c.desc, sizeof c.desc, "cdt benchmark shape %d", (int)k);
    double ms = 0;
    assert_int_equal(run_cdt_case(s->ctx, &c, W[k].chess, 0, &r, &ms), 0);
    printf("%s: %.3f ms on the GPU (first call, compile included)\n", c.desc, ms);
  }
}

/* cdt's indices and other metric structures have no CUDA path: NDF_ENOTSUP,
 * outputs untouched (bf on CUDA: test_gpu_distance_bf). */
static void test_gpu_cdt_bf_not_supported(void **state) {
  gpu_state *s = *state;
  const int64_t sh[2] = {5, 7};
  tu_array h, o32, oi;
  assert_int_equal(tu_array_alloc(&h, NDF_UINT8, 2, sh), 0);
  assert_int_equal(tu_array_alloc(&o32, NDF_INT32, 2, sh), 0);
  const int64_t ish[3] = {2, 5, 7};
  assert_int_equal(tu_array_alloc(&oi, NDF_INT32, 3, ish), 0);
  tu_poison(o32.base, o32.bytes);
  tu_poison(oi.base, oi.bytes);
  tu_dev din, dout, didx;
  tu_dev_upload(s->ctx, &din, &h);
  tu_dev_upload(s->ctx, &dout, &o32);
  tu_dev_upload(s->ctx, &didx, &oi);
  ndf_distance_options o;
  ndf_distance_options_init(&o);
  assert_int_equal(ndf_distance_transform_cdt(s->ctx, &din.arr, &dout.arr, &didx.arr, &o), NDF_ENOTSUP);
  assert_non_null(strstr(ndf_errmsg(s->ctx), "ndf_distance_transform_cdt"));
  assert_non_null(strstr(ndf_errmsg(s->ctx), "CPU backend only"));
  { /* distances alone with a structure that is neither taxicab nor chessboard */
    const int64_t ssh[2] = {3, 3};
    tu_array st;
    assert_int_equal(tu_array_alloc(&st, NDF_UINT8, 2, ssh), 0);
    for (int i = 0; i < 9; i++) tu_set(&st.arr, i, i != 1);
    o.metric_structure = &st.arr;
    assert_int_equal(ndf_distance_transform_cdt(s->ctx, &din.arr, &dout.arr, NULL, &o), NDF_ENOTSUP);
    assert_non_null(strstr(ndf_errmsg(s->ctx), "CPU backend only"));
    o.metric_structure = NULL;
    tu_array_free(&st);
  }
  tu_dev_download(s->ctx, &dout, &o32);
  tu_dev_download(s->ctx, &didx, &oi);
  assert_int_equal(tu_poison_check(o32.base, o32.bytes), -1);
  assert_int_equal(tu_poison_check(oi.base, oi.bytes), -1);
  tu_dev_free(s->ctx, &din);
  tu_dev_free(s->ctx, &dout);
  tu_dev_free(s->ctx, &didx);
  tu_array_free(&h);
  tu_array_free(&o32);
  tu_array_free(&oi);
}

/* ndf_distance_edt_pass on CUDA arrays: the passes of every axis, each on
 * random pieces of lines (device views), give the CPU passes' squared
 * distances and features bit for bit; strided views along the way. */
static void test_gpu_edt_pass(void **state) {
  gpu_state *s = *state;
  tu_rng r;
  tu_rng_seed(&r, s->seed + 5);
  int failed = 0;
  for (int k = 0; k < 16 && !failed; k++) {
    const int nd = 1 + k % 4;
    int64_t sh[4] = {1, 1, 1, 1}, n = 1;
    double samp[4];
    for (int d = 0; d < nd; d++) {
      sh[d] = tu_rng_int(&r, 1, k % 4 == 0 ? 3000 : 40);
      n *= sh[d];
      samp[d] = k % 2 ? 0.5 + 2.0 * tu_rng_unif(&r) : 1.0;
    }
    const int feats = k % 3 != 2;
    tu_array w, f, wg, fg;
    assert_int_equal(tu_array_alloc(&w, NDF_FLOAT64, nd, sh), 0);
    assert_int_equal(tu_array_alloc(&f, NDF_INT64, nd, sh), 0);
    assert_int_equal(tu_array_alloc(&wg, NDF_FLOAT64, nd, sh), 0);
    assert_int_equal(tu_array_alloc(&fg, NDF_INT64, nd, sh), 0);
    const double p = k % 4 == 3 ? 0.995 : 0.7;
    for (int64_t i = 0; i < n; i++) {
      const int fgv = tu_rng_chance(&r, p);
      ((double *)w.arr.data)[i] = fgv ? INFINITY : 0.0;
      ((int64_t *)f.arr.data)[i] = fgv ? -1 : i;
    }
    ndf_array dw, df;
    assert_int_equal(ndf_array_alloc(s->ctx, &dw, NDF_DEVICE_CUDA, NDF_FLOAT64, nd, sh), NDF_OK);
    assert_int_equal(ndf_array_alloc(s->ctx, &df, NDF_DEVICE_CUDA, NDF_INT64, nd, sh), NDF_OK);
    assert_int_equal(ndf_array_copy(s->ctx, &dw, &w.arr), NDF_OK);
    assert_int_equal(ndf_array_copy(s->ctx, &df, &f.arr), NDF_OK);
    tu_rng r2 = r;
    assert_int_equal(tu_edt_pass_pieces(s->ctx, &w.arr, feats ? &f.arr : NULL, samp, &r), NDF_OK);
    assert_int_equal(tu_edt_pass_pieces(s->ctx, &dw, feats ? &df : NULL, samp, &r2), NDF_OK);
    assert_int_equal(ndf_array_copy(s->ctx, &wg.arr, &dw), NDF_OK);
    assert_int_equal(ndf_array_copy(s->ctx, &fg.arr, &df), NDF_OK);
    assert_int_equal(ndf_ctx_synchronize(s->ctx), NDF_OK);
    if (memcmp(w.arr.data, wg.arr.data, (size_t)n * 8) || (feats && memcmp(f.arr.data, fg.arr.data, (size_t)n * 8))) {
      printf("edt pass: case %d (%d-d, %lld voxels, features %d) differs from the CPU\n", k, nd, (long long)n, feats);
      failed++;
    }
    ndf_array_free(s->ctx, &dw);
    ndf_array_free(s->ctx, &df);
    tu_array_free(&w);
    tu_array_free(&f);
    tu_array_free(&wg);
    tu_array_free(&fg);
  }
  assert_int_equal(failed, 0);
}

int main(void) {
  gpu_state *s = calloc(1, sizeof *s);
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  if (ndf_ctx_create(&s->ctx, &o) != NDF_OK) {
    fprintf(stderr, "ndf_ctx_create: %s\n", ndf_last_error());
    return 1;
  }
  if (!ndf_ctx_has_cuda(s->ctx)) {
    printf("SKIP: the context has no usable CUDA device\n");
    ndf_ctx_destroy(s->ctx);
    free(s);
    return 77;
  }
  ndf_ctx_info info;
  if (ndf_ctx_get_info(s->ctx, &info) == NDF_OK)
    printf("device: %s (sm_%d%d), driver %d, NVRTC %d.%d\n", info.device_name, info.cc_major, info.cc_minor,
           info.driver_version, info.nvrtc_major, info.nvrtc_minor);
  s->seed = tu_seed("NDF_TEST_SEED");
  s->ncases = tu_env_long("NDF_TEST_CASES", 300);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_prestate(test_gpu_cdt_bf_not_supported, s),
      cmocka_unit_test_prestate(test_gpu_random_cases, s),
      cmocka_unit_test_prestate(test_gpu_edt_pass, s),
      cmocka_unit_test_prestate(test_gpu_edt_paths, s),
      cmocka_unit_test_prestate(test_gpu_edt_wenvp, s),
      cmocka_unit_test_prestate(test_gpu_benchmark_shapes, s),
      cmocka_unit_test_prestate(test_gpu_cdt, s),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  tune(s->ctx, "edt.rows", NULL);
  tune(s->ctx, "edt.lines", NULL);
  tune(s->ctx, "edt.merge", NULL);
  tune(s->ctx, "edt.w", NULL);
  tune(s->ctx, "edt.first", NULL);
  tune(s->ctx, "edt.warps", NULL);
  tune(s->ctx, "edt.search", NULL);
  tune(s->ctx, "edt.serial", NULL);
  tune(s->ctx, "edt.scap", NULL);
  tune(s->ctx, "edt.smid", NULL);
  tune(s->ctx, "edt.srows", NULL);
  tune(s->ctx, "edt.sfseg", NULL);
  ndf_cache_stats st;
  ndf_ctx_cache_stats(s->ctx, &st);
  printf("kernel cache: %llu memory hits, %llu disk hits, %llu compiles (%.0f ms)\n",
         (unsigned long long)st.memory_hits, (unsigned long long)st.disk_hits, (unsigned long long)st.compiles,
         st.compile_ms);
  ndf_ctx_destroy(s->ctx);
  free(s);
  return rc;
}
