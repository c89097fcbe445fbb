/*
 * test_gpu_intensity.c -- the intensity ops on the GPU against the CPU backend
 * (itself checked against NumPy and scikit-image by test_intensity), on fresh
 * random inputs drawn here: every dtype, 1-4 axes with 0..rank-1 batch axes,
 * many tiny images and a few large ones, values with ties, -0.0, inf and NaN
 * where the op defines them; C-contiguous, padded and negative-stride inputs
 * and strided outputs:
 *   ndf_histogram       detected range, range, edges; counts (int64), weights,
 *                       density; bin_edges
 *   ndf_percentile / ndf_quantile, ndf_clip, ndf_window, ndf_normalize_minmax,
 *   ndf_percentile_window, ndf_normalize_zscore (with and without a mask),
 *   ndf_equalize_hist (with and without a mask)
 * Up to 12 quantiles at once (24 selection targets: two launches per radix pass); one or two
 * quantiles of 32- and 64-bit data select on 11-bit digits, others on bytes.
 * Bit for bit, except weighted histograms (1e-12 relative) and z-scores (1e-9
 * of the output's scale): their float64 sums run in another order.  The data
 * error (a histogram's detected range holding NaN) is NDF_EINVAL with the
 * output untouched, and so is the GPU's own limit (an integer equalize_hist
 * range beyond 2^24 values: NDF_ENOTSUP).  Outputs are poisoned first; the
 * bytes between the elements of a strided output must keep the poison.
 *
 * Exits 77 (skipped) when the context has no CUDA device.  Cases:
 * NDF_TEST_CASES (default 300); seed: NDF_TEST_SEED (printed).  Public API only.
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
static int group_setup(void **state) { return tu_gpu_setup(state, 300); }

static const ndf_dtype DTYPES[] = {NDF_UINT8, NDF_INT8,  NDF_UINT16,  NDF_INT16,
                                   NDF_UINT32, NDF_INT32, NDF_FLOAT32, NDF_FLOAT64};

enum { HIST, PCT, QNT, CLIP, WINDOW, MINMAX, PWINDOW, ZSCORE, EQUALIZE, NOPS };
static const char *OPNAMES[NOPS] = {"histogram", "percentile", "quantile", "clip", "window", "minmax",
                                    "percentile_window", "zscore", "equalize_hist"};

typedef struct icase {
  int op, nd, batch, nq, has_aux, nbins;
  ndf_dtype dt, odt, auxdt;
  int64_t shape[NDF_MAX_NDIM];
  ndf_histogram_options ho;
  double edges[40], q[12], lo, hi;
  ndf_window_options wo;
  char desc[512];
} icase;

/* The op on arrays of either device (aux: weights or mask; out2: bin_edges). */
static ndf_status call(ndf_ctx *ctx, const icase *c, const ndf_array *in, const ndf_array *aux, ndf_array *out,
                       ndf_array *out2) {
  switch (c->op) {
    case HIST: {
      ndf_histogram_options ho = c->ho;
      ho.weights = aux;
      return ndf_histogram(ctx, in, out, out2, &ho);
    }
    case PCT: return ndf_percentile(ctx, in, c->q, c->nq, out, c->batch);
    case QNT: return ndf_quantile(ctx, in, c->q, c->nq, out, c->batch);
    case CLIP: return ndf_clip(ctx, in, out, c->lo, c->hi);
    case WINDOW: return ndf_window(ctx, in, out, c->lo, c->hi, &c->wo);
    case MINMAX: return ndf_normalize_minmax(ctx, in, out, &c->wo);
    case PWINDOW: return ndf_percentile_window(ctx, in, out, c->lo, c->hi, &c->wo);
    case ZSCORE: return ndf_normalize_zscore(ctx, in, aux, out, c->batch);
    default: return ndf_equalize_hist(ctx, in, aux, out, c->nbins, c->batch);
  }
}

/* Random values: narrow or full integer ranges, floats of random scale with ties, specials. */
static void fill(tu_rng *r, const ndf_array *a, int specials, int nan) {
  const int64_t n = ndf_array_size(a);
  double lo, hi;
  const int isf = tu_is_float(a->dtype);
  if (!isf) {
    tu_int_range(a->dtype, &lo, &hi);
    if (tu_rng_chance(r, 0.5)) {
      double l = fmax(lo, (double)tu_rng_int(r, -50, 10));
      hi = fmin(hi, l + (double)tu_rng_int(r, 0, 300));
      lo = l;
    }
  }
  const double scale = pow(10, tu_rng_unif(r) * 6 - 2);
  const int ties = tu_rng_chance(r, 0.3);
  for (int64_t i = 0; i < n; i++) {
    double v;
    if (!isf) {
      v = (double)tu_rng_int(r, (int64_t)lo, (int64_t)hi);
    } else {
      v = tu_rng_normal(r) * scale;
      if (ties) v = round(v);
      if (specials && tu_rng_chance(r, 0.03)) {
        const double sp[4] = {-0.0, 0.0, INFINITY, -INFINITY};
        v = sp[tu_rng_int(r, 0, 3)];
      }
      if (nan && tu_rng_chance(r, 0.01)) v = NAN;
    }
    tu_set(a, i, v);
  }
}

static void describe(icase *c) {
  int n = snprintf(c->desc, sizeof c->desc, "%s %s->%s shape ", OPNAMES[c->op], ndf_dtype_name(c->dt),
                   ndf_dtype_name(c->odt));
  for (int d = 0; d < c->nd; d++)
    n += snprintf(c->desc + n, sizeof c->desc - n, "%s%lld", d ? "x" : "", (long long)c->shape[d]);
  snprintf(c->desc + n, sizeof c->desc - n, " batch %d aux %d", c->batch, c->has_aux);
}

/* Output shape of the case (hist / quantiles: batch + one axis). */
static int out_shape(const icase *c, int second, int64_t *shape) {
  memcpy(shape, c->shape, sizeof c->shape);
  if (c->op == HIST) {
    const int64_t nb = c->ho.edges ? c->ho.nedges - 1 : c->ho.bins;
    shape[c->batch] = second ? nb + 1 : nb;
    return c->batch + 1;
  }
  if (c->op == PCT || c->op == QNT) {
    shape[c->batch] = c->nq;
    return c->batch + 1;
  }
  return c->nd;
}

/* Draws case k; shapes stay small except for the occasional large image. */
static void draw(tu_rng *r, int k, icase *c) {
  memset(c, 0, sizeof *c);
  c->op = k % NOPS;
  c->dt = DTYPES[tu_rng_int(r, 0, 7)];
  c->nd = (int)tu_rng_int(r, 1, 4);
  c->batch = (int)tu_rng_int(r, 0, c->nd - 1);
  const int big = tu_rng_chance(r, 0.05), many = !big && tu_rng_chance(r, 0.1);
  for (int d = 0; d < c->nd; d++) c->shape[d] = tu_rng_int(r, tu_rng_chance(r, 0.02) ? 0 : 1, c->nd > 2 ? 9 : 40);
  if (big) { /* one image of 2^17 .. 2^20 elements: many chunks and blocks per image */
    c->nd = 1;
    c->batch = 0;
    c->shape[0] = tu_rng_int(r, 1 << 17, 1 << 20);
  } else if (many) { /* hundreds of tiny images */
    c->nd = 2;
    c->batch = 1;
    c->shape[0] = tu_rng_int(r, 200, 700);
    c->shape[1] = tu_rng_int(r, 1, 9);
  }
  ndf_window_options_init(&c->wo);
  c->wo.batch_dims = c->batch;
  if (tu_rng_chance(r, 0.3)) c->wo.out_min = -1;
  c->odt = tu_rng_chance(r, 0.5) ? NDF_FLOAT32 : NDF_FLOAT64;
  switch (c->op) {
    case HIST: {
      ndf_histogram_options_init(&c->ho);
      c->ho.batch_dims = c->batch;
      const int kind = (int)tu_rng_int(r, 0, 2);
      c->ho.bins = tu_rng_chance(r, 0.2) ? tu_rng_int(r, 9000, 12000) : tu_rng_int(r, 1, 300);
      if (kind == 1) {
        c->ho.has_range = 1;
        c->ho.range[0] = tu_rng_normal(r) * 30;
        c->ho.range[1] = c->ho.range[0] + (tu_rng_chance(r, 0.1) ? 0 : tu_rng_unif(r) * 300);
      } else if (kind == 2) {
        c->ho.nedges = tu_rng_int(r, 2, 40);
        double v = tu_rng_normal(r) * 50;
        for (int i = 0; i < c->ho.nedges; i++) {
          c->edges[i] = v;
          v += tu_rng_chance(r, 0.1) ? 0 : round(tu_rng_unif(r) * 20);
        }
        c->ho.edges = c->edges;
      }
      c->has_aux = tu_rng_chance(r, 0.3);
      c->ho.density = tu_rng_chance(r, 0.3);
      c->odt = c->has_aux || c->ho.density || tu_rng_chance(r, 0.3) ? NDF_FLOAT64 : NDF_INT64;
      c->auxdt = DTYPES[tu_rng_int(r, 0, 7)];
      break;
    }
    case PCT:
    case QNT:
      c->nq = tu_rng_chance(r, 0.15) ? (int)tu_rng_int(r, 9, 12) : (int)tu_rng_int(r, 1, 6); /* > 8: two target groups */
      for (int i = 0; i < c->nq; i++) {
        const double u = tu_rng_chance(r, 0.2) ? 0 : tu_rng_chance(r, 0.2) ? 1 : tu_rng_unif(r);
        c->q[i] = c->op == PCT ? u * 100 : u;
      }
      c->odt = NDF_FLOAT64;
      break;
    case CLIP:
      c->lo = round(tu_rng_normal(r) * 20);
      c->hi = c->lo + round(tu_rng_unif(r) * 40);
      if (!tu_is_float(c->dt) && tu_rng_chance(r, 0.4)) {
        double mn, mx;
        tu_int_range(c->dt, &mn, &mx);
        if (c->lo >= mn && c->hi <= mx) c->odt = c->dt;
      }
      break;
    case WINDOW:
      c->lo = tu_rng_normal(r) * 50;
      c->hi = c->lo + (tu_rng_chance(r, 0.1) ? 0 : tu_rng_unif(r) * 300);
      break;
    case PWINDOW:
      c->lo = tu_rng_chance(r, 0.3) ? 0.5 : tu_rng_unif(r) * 50;
      c->hi = tu_rng_chance(r, 0.3) ? 99.5 : 50 + tu_rng_unif(r) * 50;
      break;
    case ZSCORE:
      c->has_aux = tu_rng_chance(r, 0.6);
      c->auxdt = tu_rng_chance(r, 0.5) ? NDF_BOOL : NDF_FLOAT32;
      break;
    case EQUALIZE:
      c->has_aux = tu_rng_chance(r, 0.4);
      c->auxdt = NDF_BOOL;
      c->nbins = tu_rng_chance(r, 0.5) ? 256 : (int)tu_rng_int(r, 1, 300);
      c->odt = c->dt == NDF_FLOAT32 ? NDF_FLOAT32 : NDF_FLOAT64;
      break;
    default: break;
  }
  describe(c);
}

static int close_enough(const icase *c, const ndf_array *exp, const ndf_array *got, double rel, double abs_scale) {
  const int64_t n = ndf_array_size(exp);
  double scale = 0;
  for (int64_t i = 0; i < n; i++) {
    const double e = tu_get(exp, i);
    if (isfinite(e) && fabs(e) > scale) scale = fabs(e);
  }
  int bad = 0;
  for (int64_t i = 0; i < n; i++) {
    const double e = tu_get(exp, i), v = tu_get(got, i);
    int ok = e == v || (isnan(e) && isnan(v));
    if (!ok && rel > 0) ok = fabs(e - v) <= rel * (1 + fabs(e));
    if (!ok && abs_scale > 0) ok = fabs(e - v) <= abs_scale * (1 + scale);
    if (!ok && bad++ < 4) printf("%s: [%lld] expected %.17g, got %.17g\n", c->desc, (long long)i, e, v);
  }
  return bad;
}

/* Runs case c on both backends; returns 0 when they agree. */
static int run_case(ndf_ctx *gctx, ndf_ctx *cctx, tu_rng *r, const icase *c) {
  ndf_array desc;
  tu_array in0, in, aux0 = {0}, aux = {0}, ce, ge, ce2 = {0}, ge2 = {0};
  assert_int_equal(ndf_array_init(&desc, NULL, NDF_DEVICE_CPU, c->dt, c->nd, c->shape), NDF_OK);
  assert_int_equal(tu_array_alloc(&in0, c->dt, c->nd, c->shape), 0);
  const int nan_ok = c->op == PCT || c->op == QNT || c->op == CLIP || c->op == WINDOW || c->op == MINMAX ||
                     c->op == PWINDOW || c->op == ZSCORE || (c->op == HIST && tu_rng_chance(r, 0.2));
  fill(r, &in0.arr, c->op != EQUALIZE || tu_rng_chance(r, 0.1), nan_ok && tu_rng_chance(r, 0.3));
  if (c->op == EQUALIZE && (c->dt == NDF_UINT32 || c->dt == NDF_INT32)) /* GPU: at most 2^24 integer bins */
    for (int64_t i = 0; i < ndf_array_size(&in0.arr); i++) tu_set(&in0.arr, i, trunc(tu_get(&in0.arr, i) / 65536));
  const int layout = tu_rng_chance(r, 0.5) ? TU_LAYOUT_C : TU_LAYOUT_PADDED | TU_LAYOUT_NEGATIVE | TU_LAYOUT_OFFSET;
  assert_int_equal(tu_array_relayout(&in, &in0.arr, layout, r), 0);
  if (c->has_aux) {
    assert_int_equal(tu_array_alloc(&aux0, c->auxdt, c->nd, c->shape), 0);
    if (c->op == HIST) {
      fill(r, &aux0.arr, 0, 0);
    } else {
      const double p = tu_rng_unif(r);
      for (int64_t i = 0; i < ndf_array_size(&aux0.arr); i++) tu_set(&aux0.arr, i, tu_rng_chance(r, p));
    }
    assert_int_equal(tu_array_relayout(&aux, &aux0.arr, layout, r), 0);
  }
  int64_t os[NDF_MAX_NDIM];
  ndf_array od;
  int ond = out_shape(c, 0, os);
  if ((c->op == PCT || c->op == QNT) && c->nq == 1 && tu_rng_chance(r, 0.5)) ond = c->batch; /* q scalar */
  assert_int_equal(ndf_array_init(&od, NULL, NDF_DEVICE_CPU, c->odt, ond, os), NDF_OK);
  const int olayout = tu_rng_chance(r, 0.5) ? TU_LAYOUT_C : TU_LAYOUT_PADDED;
  assert_int_equal(tu_array_like(&ce, &od, olayout, r), 0);
  assert_int_equal(tu_array_like(&ge, &od, olayout, r), 0);
  const int edges_out = c->op == HIST && tu_rng_chance(r, 0.7);
  if (edges_out) {
    ond = out_shape(c, 1, os);
    assert_int_equal(ndf_array_init(&od, NULL, NDF_DEVICE_CPU, NDF_FLOAT64, ond, os), NDF_OK);
    assert_int_equal(tu_array_like(&ce2, &od, olayout, r), 0);
    assert_int_equal(tu_array_like(&ge2, &od, olayout, r), 0);
  }
  /* CPU */
  const ndf_status cs = call(cctx, c, &in.arr, c->has_aux ? &aux.arr : NULL, &ce.arr, edges_out ? &ce2.arr : NULL);
  if (cs != NDF_OK && cs != NDF_EINVAL) fail_msg("%s: CPU: %s", c->desc, ndf_errmsg(cctx));
  /* GPU */
  tu_dev din, daux = {0}, dout, dout2 = {0};
  tu_dev_upload(gctx, &din, &in);
  if (c->has_aux) tu_dev_upload(gctx, &daux, &aux);
  tu_dev_upload(gctx, &dout, &ge);
  if (edges_out) tu_dev_upload(gctx, &dout2, &ge2);
  ndf_status gs = call(gctx, c, &din.arr, c->has_aux ? &daux.arr : NULL, &dout.arr, edges_out ? &dout2.arr : NULL);
  if (gs == NDF_OK) gs = ndf_ctx_synchronize(gctx);
  int bad = 0;
  if (gs != cs) {
    printf("%s: CPU %s (%s), GPU %s (%s)\n", c->desc, ndf_status_name(cs), cs ? ndf_errmsg(cctx) : "",
           ndf_status_name(gs), gs ? ndf_errmsg(gctx) : "");
    bad = 1;
  } else if (cs != NDF_OK) {
    tu_dev_download(gctx, &dout, &ge);
    if (tu_poison_check(ge.base, ge.bytes) >= 0) {
      printf("%s: a rejected call wrote its output\n", c->desc);
      bad = 1;
    }
  } else {
    const int weighted = c->op == HIST && c->has_aux;
    if (weighted || c->op == ZSCORE) {
      tu_dev_download(gctx, &dout, &ge);
      bad = close_enough(c, &ce.arr, &ge.arr, weighted ? 1e-12 : 0, c->op == ZSCORE ? 1e-9 : 0) != 0;
      if (!bad && tu_check_gaps(&ge) >= 0) {
        printf("%s: output written outside the elements\n", c->desc);
        bad = 1;
      }
    } else {
      bad = tu_dev_check(gctx, c->desc, "values", &dout, &ge, &ce.arr);
    }
    if (edges_out) bad |= tu_dev_check(gctx, c->desc, "bin edges", &dout2, &ge2, &ce2.arr);
  }
  tu_dev_free(gctx, &din);
  if (c->has_aux) tu_dev_free(gctx, &daux);
  tu_dev_free(gctx, &dout);
  if (edges_out) tu_dev_free(gctx, &dout2);
  tu_array_free(&in0);
  tu_array_free(&in);
  tu_array_free(&aux0);
  tu_array_free(&aux);
  tu_array_free(&ce);
  tu_array_free(&ge);
  tu_array_free(&ce2);
  tu_array_free(&ge2);
  return bad;
}

static ndf_ctx *cpu_ctx(void) {
  ndf_ctx *ctx;
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  o.backend = NDF_BACKEND_CPU;
  assert_int_equal(ndf_ctx_create(&ctx, &o), NDF_OK);
  return ctx;
}

static void test_gpu_intensity_random(void **state) {
  gpu_state *g = *state;
  TU_SKIP_WITHOUT_CUDA(g->ctx);
  ndf_ctx *cctx = cpu_ctx();
  tu_rng r;
  tu_rng_seed(&r, g->seed);
  int failed = 0, byop[NOPS] = {0};
  for (long k = 0; k < g->ncases; k++) {
    icase c;
    draw(&r, (int)k, &c);
    if (run_case(g->ctx, cctx, &r, &c)) {
      failed++;
      byop[c.op]++;
    }
  }
  ndf_ctx_destroy(cctx);
  for (int o = 0; o < NOPS; o++)
    if (byop[o]) printf("%s: %d failed\n", OPNAMES[o], byop[o]);
  if (failed) fail_msg("%d of %ld cases differ between GPU and CPU", failed, g->ncases);
}

/* The benchmark's workload: percentile windowing (0.5, 99.5) of a 256^3 float32 volume, a
 * uint16 percentile over the same size (two radix passes per target), and a float32 batch
 * too large for the 11-bit digits' histograms. */
static void test_gpu_percentile_window_256(void **state) {
  gpu_state *g = *state;
  TU_SKIP_WITHOUT_CUDA(g->ctx);
  ndf_ctx *cctx = cpu_ctx();
  tu_rng r;
  tu_rng_seed(&r, g->seed + 1);
  icase c;
  memset(&c, 0, sizeof c);
  c.op = PWINDOW;
  c.dt = NDF_FLOAT32;
  c.odt = NDF_FLOAT32;
  c.nd = 3;
  c.shape[0] = c.shape[1] = c.shape[2] = 256;
  c.lo = 0.5;
  c.hi = 99.5;
  ndf_window_options_init(&c.wo);
  describe(&c);
  assert_int_equal(run_case(g->ctx, cctx, &r, &c), 0);
  c.op = PCT;
  c.dt = NDF_UINT16;
  c.odt = NDF_FLOAT64;
  c.nq = 3;
  c.q[0] = 0.5;
  c.q[1] = 50;
  c.q[2] = 99.5;
  describe(&c);
  assert_int_equal(run_case(g->ctx, cctx, &r, &c), 0);
  /* 70000 float32 images of 3 values: their 11-bit digit histograms would pass the limit,
   * so the selection runs on bytes (4 passes). */
  c.dt = NDF_FLOAT32;
  c.nd = 2;
  c.batch = 1;
  c.shape[0] = 70000;
  c.shape[1] = 3;
  c.nq = 1;
  c.q[0] = 37.5;
  describe(&c);
  assert_int_equal(run_case(g->ctx, cctx, &r, &c), 0);
  ndf_ctx_destroy(cctx);
}

/* What only the GPU refuses: an integer equalize_hist whose range needs more than 2^24 bins
 * (NDF_ENOTSUP, output untouched); and a histogram whose detected range holds NaN (NDF_EINVAL). */
static void test_gpu_intensity_limits(void **state) {
  gpu_state *g = *state;
  TU_SKIP_WITHOUT_CUDA(g->ctx);
  int64_t n = 1000;
  tu_array in, out, fin, hist;
  assert_int_equal(tu_array_alloc(&in, NDF_INT32, 1, &n), 0);
  assert_int_equal(tu_array_alloc(&fin, NDF_FLOAT32, 1, &n), 0);
  for (int64_t i = 0; i < n; i++) {
    tu_set(&in.arr, i, i % 2 ? 1 << 25 : 0);
    tu_set(&fin.arr, i, i == 500 ? NAN : (double)i);
  }
  assert_int_equal(tu_array_alloc(&out, NDF_FLOAT64, 1, &n), 0);
  int64_t nb = 10;
  assert_int_equal(tu_array_alloc(&hist, NDF_INT64, 1, &nb), 0);
  tu_poison(out.base, out.bytes);
  tu_poison(hist.base, hist.bytes);
  tu_dev din, dfin, dout, dhist;
  tu_dev_upload(g->ctx, &din, &in);
  tu_dev_upload(g->ctx, &dfin, &fin);
  tu_dev_upload(g->ctx, &dout, &out);
  tu_dev_upload(g->ctx, &dhist, &hist);
  assert_int_equal(ndf_equalize_hist(g->ctx, &din.arr, NULL, &dout.arr, 256, 0), NDF_ENOTSUP);
  assert_non_null(strstr(ndf_errmsg(g->ctx), "2^24"));
  ndf_histogram_options ho;
  ndf_histogram_options_init(&ho);
  assert_int_equal(ndf_histogram(g->ctx, &dfin.arr, &dhist.arr, NULL, &ho), NDF_EINVAL);
  assert_non_null(strstr(ndf_errmsg(g->ctx), "not finite"));
  tu_dev_download(g->ctx, &dout, &out);
  tu_dev_download(g->ctx, &dhist, &hist);
  assert_true(tu_poison_check(out.base, out.bytes) < 0);
  assert_true(tu_poison_check(hist.base, hist.bytes) < 0);
  tu_dev_free(g->ctx, &din);
  tu_dev_free(g->ctx, &dfin);
  tu_dev_free(g->ctx, &dout);
  tu_dev_free(g->ctx, &dhist);
  tu_array_free(&in);
  tu_array_free(&fin);
  tu_array_free(&out);
  tu_array_free(&hist);
}

/* clip of int64 / uint64 images into their own dtype on the GPU: every value exact (none through
 * double), a bound at the dtype's maximum as a double (2^63, 2^64) its largest value; GPU and CPU
 * against the integers' own clip. */
static void test_gpu_clip_64_bit(void **state) {
  gpu_state *g = *state;
  TU_SKIP_WITHOUT_CUDA(g->ctx);
  ndf_ctx *cctx = cpu_ctx();
  const int64_t n = 1000;
  const double bounds[4][2] = {{3, 4503599627370496.0}, {3, 9223372036854775808.0}, {0, 18446744073709551616.0},
                               {9223372036854775808.0, 9223372036854775808.0}};
  for (int u = 0; u < 2; u++) {
    const ndf_dtype dt = u ? NDF_UINT64 : NDF_INT64;
    tu_array in, out, gout;
    assert_int_equal(tu_array_alloc(&in, dt, 1, &n), 0);
    assert_int_equal(tu_array_alloc(&out, dt, 1, &n), 0);
    assert_int_equal(tu_array_alloc(&gout, dt, 1, &n), 0);
    int64_t *xi = in.arr.data;
    for (int64_t i = 0; i < n; i++) /* near the extremes, around 2^62 and 2^53, and small */
      xi[i] = (i % 4 == 0 ? INT64_MAX - i : i % 4 == 1 ? ((int64_t)1 << 62) + i - 500
               : i % 4 == 2 ? ((int64_t)1 << 53) + i : i - 500) * (u || i % 3 ? 1 : -1);
    for (int k = 0; k < 4; k++) {
      double lo = bounds[k][0], hi = bounds[k][1];
      if (!u && hi > 9223372036854775808.0) continue;
      if (u && k == 3) lo = hi = 18446744073709551616.0;
      tu_dev din, dout;
      tu_dev_upload(g->ctx, &din, &in);
      tu_dev_upload(g->ctx, &dout, &gout);
      assert_int_equal(ndf_clip(g->ctx, &din.arr, &dout.arr, lo, hi), NDF_OK);
      tu_dev_download(g->ctx, &dout, &gout);
      tu_dev_free(g->ctx, &din);
      tu_dev_free(g->ctx, &dout);
      assert_int_equal(ndf_clip(cctx, &in.arr, &out.arr, lo, hi), NDF_OK);
      for (int64_t i = 0; i < n; i++) {
        int64_t want;
        if (u) {
          const uint64_t x = (uint64_t)xi[i], l = lo >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)lo;
          const uint64_t h = hi >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)hi;
          want = (int64_t)(x < l ? l : x > h ? h : x);
        } else {
          const int64_t l = lo >= 9223372036854775808.0 ? INT64_MAX : (int64_t)lo;
          const int64_t h = hi >= 9223372036854775808.0 ? INT64_MAX : (int64_t)hi;
          want = xi[i] < l ? l : xi[i] > h ? h : xi[i];
        }
        if (((int64_t *)out.arr.data)[i] != want || ((int64_t *)gout.arr.data)[i] != want)
          fail_msg("%s clip [%g, %g] element %lld of %lld: CPU %lld, GPU %lld, want %lld", u ? "uint64" : "int64", lo,
                   hi, (long long)i, (long long)xi[i], (long long)((int64_t *)out.arr.data)[i],
                   (long long)((int64_t *)gout.arr.data)[i], (long long)want);
      }
    }
    tu_array_free(&in);
    tu_array_free(&out);
    tu_array_free(&gout);
  }
  ndf_ctx_destroy(cctx);
}

int main(void) {
  if (!tu_have_cuda()) return 77; /* ctest: skipped */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gpu_intensity_random),
      cmocka_unit_test(test_gpu_percentile_window_256),
      cmocka_unit_test(test_gpu_intensity_limits),
      cmocka_unit_test(test_gpu_clip_64_bit),
  };
  return cmocka_run_group_tests(tests, group_setup, tu_gpu_teardown);
}
