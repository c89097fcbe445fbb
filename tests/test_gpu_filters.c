/*
 * test_gpu_filters.c -- the linear filters (correlate1d, convolve1d,
 * correlate, convolve, uniform_filter1d, uniform_filter, gaussian_filter1d,
 * gaussian_filter, sobel, prewitt, laplace, gaussian_laplace,
 * gaussian_gradient_magnitude) on the GPU against the CPU backend, bit for
 * bit (NaN positions equal), on fresh random inputs drawn here: every op,
 * input and output dtype, mode and origin, per-axis modes, sigmas, orders and
 * radii, axes, batch axes, strided and negative-stride inputs, strided
 * outputs, kernels compiled in and read from a table (more than 256 taps),
 * lines cut at every segment edge, fused passes (filter_plane) and, with the
 * tunable filters.fuse off, unfused ones; the uniform filter's exact and
 * stream kernels (lines walked in parallel where the running sum is exact,
 * sequentially elsewhere), its tile kernel (chunks of a line, windows up to its limit) and
 * its line kernel.  Every GPU output is poisoned before the
 * run; the bytes between the elements of a strided output must keep the
 * poison.  Exits 77 (skipped) when no CUDA device is usable.
 *
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

#include "ndforge.h"
#include "testutil.h"

/* 120 cases by default: most compile a kernel of their own (weights are compiled in). */
static int group_setup(void **state) { return tu_gpu_setup(state, 120); }
#define group_teardown tu_gpu_teardown

enum {
  OP_CORRELATE1D, OP_CONVOLVE1D, OP_CORRELATE, OP_CONVOLVE, OP_UNIFORM1D, OP_UNIFORM, OP_GAUSS1D, OP_GAUSS,
  OP_SOBEL, OP_PREWITT, OP_LAPLACE, OP_GLAPLACE, OP_GGM, OP_COUNT
};
static const char *const OP_NAMES[OP_COUNT] = {
    "correlate1d", "convolve1d", "correlate", "convolve", "uniform_filter1d", "uniform_filter", "gaussian_filter1d",
    "gaussian_filter", "sobel", "prewitt", "laplace", "gaussian_laplace", "gaussian_gradient_magnitude"};

typedef struct fcase {
  int op;
  ndf_dtype dt, odt;
  int ndim;
  int64_t shape[NDF_MAX_NDIM];
  ndf_filter_options o;
  ndf_gaussian_params g;
  int axis;
  int64_t n; /* 1-D weights / uniform_filter1d size */
  double w1[400];
  tu_array wnd; /* N-D weights */
  int nsize;
  int64_t size[NDF_MAX_SPATIAL];
  int sigma1d_order;
  double sigma1d, truncate1d;
  int64_t radius1d;
  int fill; /* FILL_*: the input's values (FILL_RANDOM: fill()) */
  char desc[512];
} fcase;

static ndf_status call(ndf_ctx *ctx, const fcase *c, const ndf_array *in, ndf_array *out) {
  switch (c->op) {
    case OP_CORRELATE1D: return ndf_correlate1d(ctx, in, out, c->w1, c->n, c->axis, &c->o);
    case OP_CONVOLVE1D: return ndf_convolve1d(ctx, in, out, c->w1, c->n, c->axis, &c->o);
    case OP_CORRELATE: return ndf_correlate(ctx, in, out, &c->wnd.arr, &c->o);
    case OP_CONVOLVE: return ndf_convolve(ctx, in, out, &c->wnd.arr, &c->o);
    case OP_UNIFORM1D: return ndf_uniform_filter1d(ctx, in, out, c->n, c->axis, &c->o);
    case OP_UNIFORM: return ndf_uniform_filter(ctx, in, out, c->nsize, c->size, &c->o);
    case OP_GAUSS1D:
      return ndf_gaussian_filter1d(ctx, in, out, c->sigma1d, c->axis, c->sigma1d_order, c->truncate1d, c->radius1d,
                                   &c->o);
    case OP_GAUSS: return ndf_gaussian_filter(ctx, in, out, &c->g, &c->o);
    case OP_SOBEL: return ndf_sobel(ctx, in, out, c->axis, &c->o);
    case OP_PREWITT: return ndf_prewitt(ctx, in, out, c->axis, &c->o);
    case OP_LAPLACE: return ndf_laplace(ctx, in, out, &c->o);
    case OP_GLAPLACE: return ndf_gaussian_laplace(ctx, in, out, &c->g, &c->o);
    default: return ndf_gaussian_gradient_magnitude(ctx, in, out, &c->g, &c->o);
  }
}

static const ndf_dtype IN_DT[] = {NDF_UINT8, NDF_INT8,    NDF_UINT16,  NDF_INT16, NDF_UINT32,
                                  NDF_INT32, NDF_FLOAT32, NDF_FLOAT64, NDF_INT64, NDF_UINT64};

static void fill(tu_array *t, tu_rng *r) {
  const int64_t n = ndf_array_size(&t->arr);
  const int few = tu_rng_chance(r, 0.3);
  for (int64_t i = 0; i < n; i++) {
    double v;
    if (t->arr.dtype == NDF_FLOAT32 || t->arr.dtype == NDF_FLOAT64) {
      v = few ? (double)tu_rng_int(r, -4, 4) : tu_rng_normal(r) * 50.0;
      if (tu_rng_chance(r, 0.002)) v = NAN;
    } else {
      double lo, hi;
      tu_int_range(t->arr.dtype, &lo, &hi);
      if (hi > 1e6) hi = 1e6;
      if (lo < -1e6) lo = -1e6;
      v = few ? lo + (double)tu_rng_int(r, 0, 4) : (double)tu_rng_int(r, (int64_t)lo, (int64_t)hi);
    }
    tu_set(&t->arr, i, v);
  }
  tu_offset64(&t->arr);
}

/* Inputs of the uniform filter's exact path (ndf_filter_uniform_exact, which
 * walks a line in parallel segments where its running sum is exact and
 * sequentially elsewhere): FILL_UNIT floats k 2^-24 in [0, 1) (every line
 * exact), integers over their dtype's whole range (64-bit ones beyond 2^53
 * on some lines); FILL_WIDE unit values and +-1e30, +-1e-30 in some lines;
 * FILL_NONFINITE unit values and NaN, Inf, -Inf; FILL_SUBNORMAL float32
 * subnormals (k 2^-149) with a few unit values. */
enum { FILL_RANDOM, FILL_UNIT, FILL_WIDE, FILL_NONFINITE, FILL_SUBNORMAL, FILL_COUNT };

static void fill_pattern(tu_array *t, int kind, tu_rng *r) {
  const int64_t n = ndf_array_size(&t->arr);
  const ndf_dtype dt = t->arr.dtype;
  const int wide64 = tu_rng_chance(r, 0.5);
  for (int64_t i = 0; i < n; i++) {
    if (dt == NDF_INT64 || dt == NDF_UINT64) {
      uint64_t u = tu_rng_u64(r);
      if (!wide64) u = dt == NDF_UINT64 ? u >> 24 : (uint64_t)((int64_t)u >> 24);
      memcpy(tu_elem_ptr(&t->arr, i), &u, 8);
      continue;
    }
    if (!tu_is_float(dt)) {
      double lo, hi;
      tu_int_range(dt, &lo, &hi);
      tu_set(&t->arr, i, (double)tu_rng_int(r, (int64_t)lo, (int64_t)hi));
      continue;
    }
    double v = (double)(tu_rng_u64(r) >> 40) * 0x1p-24;
    if (kind == FILL_WIDE && tu_rng_chance(r, 0.02))
      v = (tu_rng_chance(r, 0.5) ? 1e30 : 1e-30) * (tu_rng_chance(r, 0.5) ? 1 : -1);
    else if (kind == FILL_NONFINITE && tu_rng_chance(r, 0.01))
      v = tu_rng_chance(r, 0.3) ? NAN : tu_rng_chance(r, 0.5) ? INFINITY : -INFINITY;
    else if (kind == FILL_SUBNORMAL && !tu_rng_chance(r, 0.002))
      v = (double)tu_rng_int(r, -(1 << 22), 1 << 22) * 0x1p-149;
    tu_set(&t->arr, i, v);
  }
}

/* A random case; big: one larger volume. */
static void draw(fcase *c, tu_rng *r, int op, int big) {
  memset(c, 0, sizeof *c);
  c->op = op;
  c->dt = tu_rng_chance(r, 0.08) ? NDF_BOOL : IN_DT[tu_rng_int(r, 0, 9)];
  static const ndf_dtype OUT_DT[] = {NDF_UINT8, NDF_INT8,    NDF_UINT16,  NDF_INT16, NDF_UINT32,
                                     NDF_INT32, NDF_FLOAT32, NDF_FLOAT64, NDF_INT64, NDF_UINT64};
  c->odt = tu_rng_chance(r, 0.6) ? c->dt : OUT_DT[tu_rng_int(r, 0, 9)];
  /* bool outputs (scipy's C cast to unsigned char, ndforge.h), but not of the sums of terms */
  const int sums = op == OP_LAPLACE || op == OP_GLAPLACE || op == OP_GGM;
  if (!sums && tu_rng_chance(r, 0.05)) c->odt = NDF_BOOL;
  if (sums && c->odt == NDF_BOOL) c->odt = NDF_UINT8;
  const int nb = big ? 0 : (int)tu_rng_int(r, 0, 2), nsp = big ? 3 : (int)tu_rng_int(r, 1, 3);
  c->ndim = nb + nsp;
  for (int d = 0; d < nb; d++) c->shape[d] = tu_rng_int(r, 1, 3);
  for (int d = nb; d < c->ndim; d++)
    c->shape[d] = big ? (d == c->ndim - 1 ? 160 : 64) : tu_rng_chance(r, 0.15) ? tu_rng_int(r, 1, 3) : tu_rng_int(r, 3, 300 / (nsp * nsp));
  ndf_filter_options_init(&c->o);
  ndf_filter_options *o = &c->o;
  o->batch_dims = nb;
  o->cval = tu_rng_chance(r, 0.5) ? 0.0 : tu_rng_normal(r) * 10;
  int nax = nsp;
  const int uses_axes = op == OP_CORRELATE || op == OP_CONVOLVE || op == OP_UNIFORM || op == OP_GAUSS ||
                        op == OP_LAPLACE || op == OP_GLAPLACE || op == OP_GGM;
  if (uses_axes && tu_rng_chance(r, 0.3)) {
    nax = (int)tu_rng_int(r, 1, nsp);
    int perm[NDF_MAX_SPATIAL];
    for (int i = 0; i < nsp; i++) perm[i] = nb + i;
    for (int i = nsp - 1; i > 0; i--) {
      const int j = (int)tu_rng_int(r, 0, i), t = perm[i];
      perm[i] = perm[j];
      perm[j] = t;
    }
    o->naxes = nax;
    for (int i = 0; i < nax; i++) o->axes[i] = perm[i];
  }
  const int one_d = op == OP_CORRELATE1D || op == OP_CONVOLVE1D || op == OP_UNIFORM1D || op == OP_GAUSS1D;
  const int nmode = op == OP_SOBEL || op == OP_PREWITT ? nsp : nax;
  o->mode = (ndf_mode)tu_rng_int(r, 0, NDF_MODE_COUNT - 1);
  if (!one_d && op != OP_CORRELATE && op != OP_CONVOLVE && nmode > 1 && tu_rng_chance(r, 0.5)) {
    o->nmodes = nmode;
    for (int i = 0; i < nmode; i++) o->modes[i] = (ndf_mode)tu_rng_int(r, 0, NDF_MODE_COUNT - 1);
  }
  c->axis = (int)tu_rng_int(r, nb, c->ndim - 1);
  if (op == OP_CORRELATE1D || op == OP_CONVOLVE1D) {
    c->n = tu_rng_chance(r, 0.1) ? tu_rng_int(r, 257, 399) : tu_rng_int(r, 1, 12);
    for (int64_t k = 0; k < c->n; k++) c->w1[k] = tu_rng_normal(r);
    if (c->n % 2 && tu_rng_chance(r, 0.5)) { /* exactly symmetric or antisymmetric */
      const double sg = tu_rng_chance(r, 0.5) ? 1 : -1;
      for (int64_t k = 1; k <= c->n / 2; k++) c->w1[c->n / 2 + k] = sg * c->w1[c->n / 2 - k];
    }
    o->norigin = 1;
    o->origin[0] = tu_rng_int(r, -(c->n / 2), (c->n - 1) / 2);
    if (op == OP_CONVOLVE1D) o->origin[0] = -o->origin[0] - (c->n % 2 == 0);
  } else if (op == OP_UNIFORM1D) {
    c->n = tu_rng_int(r, 1, 12);
    o->norigin = 1;
    o->origin[0] = tu_rng_int(r, -(c->n / 2), c->n - 1 - c->n / 2);
  } else if (op == OP_CORRELATE || op == OP_CONVOLVE) {
    int64_t ws[NDF_MAX_SPATIAL];
    for (int i = 0; i < nax; i++) ws[i] = tu_rng_int(r, 1, 5);
    assert_int_equal(tu_array_alloc(&c->wnd, NDF_FLOAT64, nax, ws), 0);
    for (int64_t k = 0; k < ndf_array_size(&c->wnd.arr); k++)
      tu_set(&c->wnd.arr, k, tu_rng_chance(r, 0.2) ? 0.0 : tu_rng_normal(r));
    o->norigin = nax;
    for (int i = 0; i < nax; i++) {
      o->origin[i] = tu_rng_int(r, -(ws[i] / 2), (ws[i] - 1) / 2);
      if (op == OP_CONVOLVE) o->origin[i] = -o->origin[i] - (ws[i] % 2 == 0);
    }
  } else if (op == OP_UNIFORM) {
    c->nsize = tu_rng_chance(r, 0.5) ? 1 : nax;
    o->norigin = c->nsize;
    for (int i = 0; i < c->nsize; i++) {
      c->size[i] = tu_rng_int(r, 0, 9);
      o->origin[i] = c->size[i] ? tu_rng_int(r, -(c->size[i] / 2), c->size[i] - 1 - c->size[i] / 2) : 0;
    }
  } else if (op == OP_GAUSS1D) {
    c->sigma1d = tu_rng_chance(r, 0.1) ? 60 + 20 * tu_rng_unif(r) : 0.3 + 3 * tu_rng_unif(r);
    c->sigma1d_order = (int)tu_rng_int(r, 0, 3);
    c->truncate1d = tu_rng_chance(r, 0.7) ? 4.0 : 1.0 + 4 * tu_rng_unif(r);
    c->radius1d = tu_rng_chance(r, 0.2) ? tu_rng_int(r, 0, 6) : -1;
  } else if (op == OP_GAUSS || op == OP_GLAPLACE || op == OP_GGM) {
    ndf_gaussian_params_init(&c->g);
    c->g.nsigma = tu_rng_chance(r, 0.5) ? 1 : nax;
    for (int i = 0; i < c->g.nsigma; i++) c->g.sigma[i] = tu_rng_chance(r, 0.1) ? 0.0 : 0.3 + 3 * tu_rng_unif(r);
    if (op == OP_GAUSS) {
      c->g.norder = tu_rng_chance(r, 0.5) ? 1 : nax;
      for (int i = 0; i < c->g.norder; i++) c->g.order[i] = (int)tu_rng_int(r, 0, 3);
    }
    if (tu_rng_chance(r, 0.2)) c->g.truncate = 1.0 + 4 * tu_rng_unif(r);
    if (tu_rng_chance(r, 0.2)) {
      c->g.nradius = 1;
      c->g.radius[0] = tu_rng_int(r, 0, 6);
    }
  }
  char sh[96];
  size_t at = 0;
  for (int d = 0; d < c->ndim; d++) at += (size_t)snprintf(sh + at, sizeof sh - at, "%s%lld", d ? "x" : "", (long long)c->shape[d]);
  snprintf(c->desc, sizeof c->desc, "%s %s->%s %s batch=%d axis=%d naxes=%d mode=%s nmodes=%d n=%lld sigma=%g order=%d",
           OP_NAMES[op], ndf_dtype_name(c->dt), ndf_dtype_name(c->odt), sh, nb, c->axis, o->naxes,
           ndf_mode_name(o->mode), o->nmodes, (long long)c->n, op == OP_GAUSS1D ? c->sigma1d : c->g.sigma[0],
           op == OP_GAUSS1D ? c->sigma1d_order : c->g.order[0]);
}

/* One case on both backends: 0 when the GPU equals the CPU. */
static int run_case(ndf_ctx *ctx, const fcase *c, tu_rng *r) {
  tu_array base = {0}, hin = {0}, hout = {0}, gout = {0};
  assert_int_equal(tu_array_alloc(&base, c->dt, c->ndim, c->shape), 0);
  if (c->fill) fill_pattern(&base, c->fill, r);
  else fill(&base, r);
  const int lin = tu_rng_chance(r, 0.3) ? TU_LAYOUT_PADDED | (tu_rng_chance(r, 0.5) ? TU_LAYOUT_NEGATIVE : 0)
                                        : TU_LAYOUT_C;
  assert_int_equal(tu_array_relayout(&hin, &base.arr, lin, r), 0);
  tu_array oshape = {0};
  assert_int_equal(tu_array_alloc(&oshape, c->odt, c->ndim, c->shape), 0);
  const int lout = tu_rng_chance(r, 0.3) ? TU_LAYOUT_PADDED : TU_LAYOUT_C;
  assert_int_equal(tu_array_like(&hout, &oshape.arr, lout, r), 0);
  assert_int_equal(tu_array_like(&gout, &oshape.arr, lout, r), 0);
  int rc = 0;
  ndf_status sc = call(ctx, c, &hin.arr, &hout.arr);
  if (sc != NDF_OK) {
    printf("CPU failed: %s: %s\n  %s\n", ndf_status_name(sc), ndf_errmsg(ctx), c->desc);
    rc = 1;
  } else {
    tu_dev din, dout;
    tu_dev_upload(ctx, &din, &hin);
    tu_dev_upload(ctx, &dout, &gout);
    ndf_status sg = call(ctx, c, &din.arr, &dout.arr);
    ndf_status ss = ndf_ctx_synchronize(ctx);
    if (sg != NDF_OK || ss != NDF_OK) {
      printf("GPU failed: %s / %s: %s\n  %s\n", ndf_status_name(sg), ndf_status_name(ss), ndf_errmsg(ctx), c->desc);
      rc = 1;
    } else {
      rc = tu_dev_check(ctx, c->desc, "outputs", &dout, &gout, &hout.arr);
    }
    tu_dev_free(ctx, &din);
    tu_dev_free(ctx, &dout);
  }
  tu_array_free(&base);
  tu_array_free(&hin);
  tu_array_free(&hout);
  tu_array_free(&gout);
  tu_array_free(&oshape);
  return rc;
}

static void test_gpu_random_cases(void **state) {
  tu_gpu_state *s = *state;
  tu_rng r;
  tu_rng_seed(&r, s->seed);
  int failed = 0;
  for (long i = 0; i < s->ncases; i++) {
    fcase c;
    draw(&c, &r, (int)(i % OP_COUNT), 0);
    failed += run_case(s->ctx, &c, &r);
    tu_array_free(&c.wnd);
    if (failed > 10) break;
  }
  assert_int_equal(failed, 0);
}

/* Every op on a 64x64x160 volume (segments cut along every axis), float32 and uint8. */
static void test_gpu_volumes(void **state) {
  tu_gpu_state *s = *state;
  tu_rng r;
  tu_rng_seed(&r, s->seed + 1);
  int failed = 0;
  for (int op = 0; op < OP_COUNT; op++) {
    fcase c;
    draw(&c, &r, op, 1);
    c.dt = op % 2 ? NDF_UINT8 : NDF_FLOAT32;
    c.odt = op % 3 ? c.dt : NDF_FLOAT32;
    failed += run_case(s->ctx, &c, &r);
    tu_array_free(&c.wnd);
  }
  assert_int_equal(failed, 0);
}

/* The volumes again with the tunable filters.fuse off: every multi-axis
 * filter then runs one filter_line pass per axis (on: a pass along another
 * axis followed by one along the last runs as filter_plane). */
static void test_gpu_volumes_unfused(void **state) {
  tu_gpu_state *s = *state;
  assert_int_equal(ndf_ctx_set_tunable(s->ctx, "filters.fuse", "off"), NDF_OK);
  test_gpu_volumes(state);
  assert_int_equal(ndf_ctx_set_tunable(s->ctx, "filters.fuse", NULL), NDF_OK);
}

/* uniform_filter1d's kernels: windows around the tile kernel's limits (one
 * chunk of 64 outputs up to 116 taps, shorter chunks up to 164, the line
 * kernel beyond), lines of several chunks and a last partial one, along the
 * last axis and the first, every mode, random origins; the kernel log shows
 * which kernel ran. */
static void test_gpu_uniform_paths(void **state) {
  tu_gpu_state *s = *state;
  tu_rng r;
  tu_rng_seed(&r, s->seed + 2);
  static const int64_t sizes[] = {1, 2, 5, 64, 116, 117, 150, 164, 165, 300};
  int failed = 0;
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
    for (int last = 0; last < 2; last++) {
      fcase c;
      memset(&c, 0, sizeof c);
      c.op = OP_UNIFORM1D;
      c.dt = k % 3 == 1 ? NDF_INT16 : NDF_FLOAT32;
      c.odt = k % 3 == 2 ? NDF_FLOAT64 : c.dt;
      c.ndim = 3;
      const int64_t len = 250 + (int64_t)tu_rng_int(&r, 0, 200);
      c.shape[0] = last ? 3 : len;
      c.shape[1] = 5;
      c.shape[2] = last ? len : 37;
      c.axis = last ? 2 : 0;
      c.n = sizes[k];
      ndf_filter_options_init(&c.o);
      c.o.mode = (ndf_mode)((k + (size_t)last) % NDF_MODE_COUNT);
      c.o.cval = 1.5;
      c.o.norigin = 1;
      c.o.origin[0] = tu_rng_int(&r, -(c.n / 2), c.n - 1 - c.n / 2);
      snprintf(c.desc, sizeof c.desc, "uniform_filter1d paths %s->%s %lldx%lldx%lld axis %d size %lld origin %lld mode %s",
               ndf_dtype_name(c.dt), ndf_dtype_name(c.odt), (long long)c.shape[0], (long long)c.shape[1],
               (long long)c.shape[2], c.axis, (long long)c.n, (long long)c.o.origin[0], ndf_mode_name(c.o.mode));
      /* The tunable filters.uniform: auto (the default: stream along the
       * first axis, exact along the last), exact, stream, line, tile. */
      static const char *const kinds[] = {NULL, "exact", "stream", "line", "tile"};
      for (int v = 0; v < 5; v++) {
        assert_int_equal(ndf_ctx_set_tunable(s->ctx, "filters.uniform", kinds[v]), NDF_OK);
        const uint64_t mark = tu_klog_mark(s->ctx);
        failed += run_case(s->ctx, &c, &r);
        const char *want = v == 1 || (v == 0 && last) ? "ndf_filter_uniform_exact"
                           : v <= 2                  ? "ndf_filter_uniform_stream"
                           : v == 4 && c.n <= 164    ? "ndf_filter_uniform_tile"
                                                     : "ndf_filter_uniform";
        failed += tu_klog_check(s->ctx, mark, want, 1, c.desc);
      }
    }
  assert_int_equal(ndf_ctx_set_tunable(s->ctx, "filters.uniform", NULL), NDF_OK);
  assert_int_equal(failed, 0);
}

/* The uniform filter's exact and stream kernels (the default):
 * every input dtype on the data of fill_pattern (lines walked in parallel
 * segments, lines of NaN, Inf, a wide range or float64 mantissas walked
 * sequentially, in one call), every mode, cval that breaks the exactness
 * (0.1, 1e30, NaN), windows of 1 tap to longer than the line, batch axes,
 * strided inputs and outputs (run_case's layouts), uniform_filter over
 * several axes, float64 under auto (the line kernel) and under exact and
 * stream; lines long enough for fewer lines a block and more than 48 KiB of
 * the exact kernel's shared memory, and too long for it (auto: the line
 * kernel; stream: no limit). */
static void test_gpu_uniform_exact(void **state) {
  tu_gpu_state *s = *state;
  tu_rng r;
  tu_rng_seed(&r, s->seed + 3);
  static const ndf_dtype dts[] = {NDF_FLOAT32, NDF_FLOAT64, NDF_UINT8, NDF_INT8,  NDF_UINT16,
                                  NDF_INT16,   NDF_UINT32,  NDF_INT32, NDF_INT64, NDF_UINT64};
  static const ndf_dtype odts[] = {NDF_FLOAT32, NDF_FLOAT64, NDF_UINT8, NDF_INT32, NDF_INT64, NDF_UINT64};
  static const double cvals[] = {0.0, 1.5, 0.1, 1e30, NAN};
  static const int64_t sizes[] = {1, 2, 3, 5, 8, 13, 40};
  int failed = 0, k = 0;
  for (int fk = FILL_UNIT; fk < FILL_COUNT; fk++)
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
      if (fk != FILL_UNIT && !(dts[d] == NDF_FLOAT32 || (dts[d] == NDF_FLOAT64 && fk != FILL_SUBNORMAL))) continue;
      for (int rep = 0; rep < 4; rep++, k++) {
        fcase c;
        memset(&c, 0, sizeof c);
        c.fill = fk;
        c.op = rep % 2 ? OP_UNIFORM : OP_UNIFORM1D;
        c.dt = dts[d];
        c.odt = rep < 2 ? c.dt : odts[tu_rng_int(&r, 0, 5)];
        const int nb = (int)tu_rng_int(&r, 0, 1);
        c.ndim = nb + 3;
        for (int a = 0; a < c.ndim; a++) c.shape[a] = a < nb ? tu_rng_int(&r, 1, 3) : tu_rng_int(&r, 1, 70);
        ndf_filter_options_init(&c.o);
        c.o.batch_dims = nb;
        c.o.mode = (ndf_mode)(k % NDF_MODE_COUNT);
        c.o.cval = cvals[(k / NDF_MODE_COUNT) % 5];
        c.axis = (int)tu_rng_int(&r, nb, c.ndim - 1);
        const int64_t len = c.shape[c.axis];
        c.n = rep == 3 ? len + tu_rng_int(&r, 0, 6) : sizes[tu_rng_int(&r, 0, 6)];
        if (c.op == OP_UNIFORM) {
          c.nsize = 1;
          c.size[0] = c.n;
          c.o.norigin = 1;
          c.o.origin[0] = tu_rng_int(&r, -(c.n / 2), c.n - 1 - c.n / 2);
        } else {
          c.o.norigin = 1;
          c.o.origin[0] = tu_rng_int(&r, -(c.n / 2), c.n - 1 - c.n / 2);
        }
        static const char *const tunes[] = {NULL, "exact", "stream", NULL};
        const char *tune = tunes[rep];
        const int last = c.axis == c.ndim - 1;
        snprintf(c.desc, sizeof c.desc,
                 "uniform exact: %s fill %d %s->%s %lldx%lldx%lldx%lld batch %d axis %d size %lld origin %lld "
                 "mode %s cval %g tune %s",
                 OP_NAMES[c.op], fk, ndf_dtype_name(c.dt), ndf_dtype_name(c.odt), (long long)c.shape[0],
                 (long long)c.shape[1], (long long)c.shape[2], (long long)(c.ndim > 3 ? c.shape[3] : 1), nb, c.axis,
                 (long long)c.n, (long long)c.o.origin[0], ndf_mode_name(c.o.mode), c.o.cval, tune ? tune : "auto");
        assert_int_equal(ndf_ctx_set_tunable(s->ctx, "filters.uniform", tune), NDF_OK);
        const uint64_t mark = tu_klog_mark(s->ctx);
        failed += run_case(s->ctx, &c, &r);
        if (c.op == OP_UNIFORM1D)
          failed += tu_klog_check(s->ctx, mark,
                                  !tune && c.dt == NDF_FLOAT64 ? "ndf_filter_uniform"
                                  : (!tune && last) || (tune && tune[0] == 'e') ? "ndf_filter_uniform_exact"
                                                                               : "ndf_filter_uniform_stream",
                                  1, c.desc);
      }
    }
  /* Long lines along the last axis and the first: fewer lines a block, more
   * than 48 KiB of shared memory; beyond the device's limit, the line kernel.
   * The kernels named are sm_90's (227 KiB of shared memory a block): on a
   * device with less, some of these lines take the line kernel and the
   * kernel check fails while the values still match. */
  static const struct {
    int64_t shape[3];
    int axis;
    ndf_dtype dt;
    const char *tune, *kernel;
  } longs[] = {
      {{2, 3, 3000}, 2, NDF_FLOAT32, NULL, "ndf_filter_uniform_exact"},
      {{3000, 2, 5}, 0, NDF_FLOAT32, "exact", "ndf_filter_uniform_exact"},
      {{3000, 2, 5}, 0, NDF_FLOAT32, NULL, "ndf_filter_uniform_stream"},
      {{700, 5, 9}, 0, NDF_UINT8, "exact", "ndf_filter_uniform_exact"},
      {{2, 2, 9000}, 2, NDF_FLOAT32, NULL, "ndf_filter_uniform_exact"},
      {{1, 2, 70000}, 2, NDF_FLOAT32, NULL, "ndf_filter_uniform"},
      {{1, 2, 70000}, 2, NDF_FLOAT32, "stream", "ndf_filter_uniform_stream"},
  };
  for (size_t i = 0; i < sizeof longs / sizeof longs[0]; i++) {
    fcase c;
    memset(&c, 0, sizeof c);
    c.fill = i % 2 ? FILL_NONFINITE : FILL_UNIT;
    c.op = OP_UNIFORM1D;
    c.dt = c.odt = longs[i].dt;
    c.ndim = 3;
    memcpy(c.shape, longs[i].shape, sizeof longs[i].shape);
    c.axis = longs[i].axis;
    c.n = 5 + 2 * (int64_t)i;
    ndf_filter_options_init(&c.o);
    c.o.mode = (ndf_mode)(i % NDF_MODE_COUNT);
    c.o.cval = 0.25;
    snprintf(c.desc, sizeof c.desc, "uniform exact: long lines %lldx%lldx%lld axis %d %s size %lld tune %s",
             (long long)c.shape[0], (long long)c.shape[1], (long long)c.shape[2], c.axis, ndf_dtype_name(c.dt),
             (long long)c.n, longs[i].tune ? longs[i].tune : "auto");
    assert_int_equal(ndf_ctx_set_tunable(s->ctx, "filters.uniform", longs[i].tune), NDF_OK);
    const uint64_t mark = tu_klog_mark(s->ctx);
    failed += run_case(s->ctx, &c, &r);
    failed += tu_klog_check(s->ctx, mark, longs[i].kernel, 1, c.desc);
  }
  assert_int_equal(ndf_ctx_set_tunable(s->ctx, "filters.uniform", NULL), NDF_OK);
  assert_int_equal(failed, 0);
}

/* A CUDA input with a CUDA output on another device type, and weights that
 * are no host array, are refused before anything runs. */
static void test_gpu_rejections(void **state) {
  tu_gpu_state *s = *state;
  const int64_t shape[2] = {4, 5};
  tu_array h = {0};
  assert_int_equal(tu_array_alloc(&h, NDF_FLOAT32, 2, shape), 0);
  tu_dev d;
  tu_dev_upload(s->ctx, &d, &h);
  ndf_filter_options o;
  ndf_filter_options_init(&o);
  assert_int_equal(ndf_laplace(s->ctx, &d.arr, &h.arr, &o), NDF_EINVAL);
  assert_non_null(strstr(ndf_errmsg(s->ctx), "another device"));
  assert_int_equal(ndf_correlate(s->ctx, &h.arr, &h.arr, &d.arr, &o), NDF_EINVAL);
  tu_dev_free(s->ctx, &d);
  tu_array_free(&h);
}

int main(void) {
  if (!tu_have_cuda()) return 77; /* ctest: skipped */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gpu_rejections),
      cmocka_unit_test(test_gpu_random_cases),
      cmocka_unit_test(test_gpu_volumes),
      cmocka_unit_test(test_gpu_volumes_unfused),
      cmocka_unit_test(test_gpu_uniform_paths),
      cmocka_unit_test(test_gpu_uniform_exact),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
