/*
 * test_gpu_grey.c -- the eight grey ops (grey_erosion, grey_dilation and the
 * composites grey_opening, grey_closing, morphological_gradient,
 * morphological_laplace, white_tophat, black_tophat) on the GPU against the
 * CPU backend, bit for bit (NaN positions equal), on fresh random inputs drawn
 * here: every op, dtype and mode, shapes up to 2x3x67x131 and 64x128x128, sizes
 * 1-7 and 8-63 (van Herk line passes), every algorithm (auto, direct,
 * separable, vhgw, decomposed iterated structures), random and large (7x7x7) footprints, non-flat structures (including
 * values that saturate integer dtypes), origins, batch axes, strided and
 * negative-stride inputs, strided outputs.  Every GPU output is poisoned before
 * the run; the bytes between the elements of a strided output must keep the
 * poison.  Skips when the context has no CUDA device.
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
#include <time.h>

#include "ndforge.h"
#include "testutil.h"

typedef tu_gpu_state gpu_state;
static int group_setup(void **state) { return tu_gpu_setup(state, 200); }
#define group_teardown tu_gpu_teardown

#define SKIP_WITHOUT_CUDA(s) TU_SKIP_WITHOUT_CUDA((s)->ctx)


/* ------------------------------------------------------------------------ */
/* Random cases                                                              */

typedef struct gcase {
  int op; /* TU_OP_* */
  ndf_dtype dt;
  int nd, batch, nsp;
  int64_t shape[NDF_MAX_NDIM];
  ndf_grey_options o;
  tu_array fp, st;
  char desc[512];
  int cpu_algo; /* > 0: the CPU reference runs this algorithm instead of o.algorithm */
} gcase;

static void fill_values(tu_array *in, tu_rng *r, int with_nan) {
  ndf_dtype dt = in->arr.dtype;
  int64_t n = ndf_array_size(&in->arr);
  double lo, hi;
  tu_int_range(dt, &lo, &hi);
  int narrow = tu_rng_chance(r, 0.2);
  double a = lo, b = hi;
  if (!tu_is_float(dt) && narrow) {
    a = (double)tu_rng_int(r, (int64_t)lo, (int64_t)hi);
    b = fmin(hi, a + 6);
  }
  double pnan = with_nan ? tu_rng_unif(r) * 0.05 : 0;
  for (int64_t i = 0; i < n; i++) {
    double v;
    if (tu_is_float(dt)) {
      v = tu_rng_normal(r) * 100;
      if (pnan > 0 && tu_rng_chance(r, pnan)) v = NAN;
      else if (with_nan && tu_rng_chance(r, 0.002)) v = tu_rng_chance(r, 0.5) ? INFINITY : -INFINITY;
    } else {
      v = (double)tu_rng_int(r, (int64_t)a, (int64_t)b);
    }
    tu_set(&in->arr, i, v);
  }
  tu_offset64(&in->arr);
}

static int64_t draw_len(tu_rng *r, int big) {
  double u = tu_rng_unif(r);
  if (u < 0.1) return 1;
  if (u < 0.2) return 2;
  return tu_rng_int(r, 3, big ? 140 : 24);
}

static void gcase_free(gcase *c) {
  tu_array_free(&c->fp);
  tu_array_free(&c->st);
}

static void draw_case(gcase *c, tu_rng *r) {
  memset(c, 0, sizeof *c);
  ndf_grey_options_init(&c->o);
  c->op = (int)tu_rng_int(r, 0, TU_OP_COUNT - 1);
  c->dt = (ndf_dtype)tu_rng_int(r, NDF_UINT8, NDF_UINT64);
  c->batch = (int)tu_rng_int(r, 0, 2);
  c->nsp = (int)tu_rng_int(r, 1, 4);
  c->nd = c->batch + c->nsp;
  /* size budget: about 400k elements */
  int big = tu_rng_chance(r, 0.25);
  for (int tries = 0;; tries++) {
    int64_t n = 1;
    for (int i = 0; i < c->nd; i++) {
      c->shape[i] = i < c->batch ? tu_rng_int(r, 1, 3) : draw_len(r, big && c->nsp <= 3);
      n *= c->shape[i];
    }
    if (n <= 400000 || tries > 50) break;
  }
  /* element */
  int kind = (int)tu_rng_int(r, 0, 3); /* size, footprint, structure, structure+footprint */
  int64_t es[NDF_MAX_SPATIAL], ntap = 1;
  int large = tu_rng_chance(r, 0.1) && c->nsp == 3;
  for (int i = 0; i < c->nsp; i++) {
    es[i] = large ? 7 : tu_rng_int(r, 1, c->nsp >= 4 ? 3 : 7);
    ntap *= es[i];
  }
  const char *kinds[] = {"size", "footprint", "structure", "structure+footprint"};
  if (kind == 0 && tu_rng_chance(r, 0.25)) /* large boxes: van Herk line passes */
    for (int i = 0; i < c->nsp; i++) es[i] = tu_rng_chance(r, 0.3) ? es[i] : tu_rng_int(r, 8, 40);
  if (kind == 0) {
    if (tu_rng_chance(r, 0.3)) {
      c->o.nsize = 1;
      c->o.size[0] = es[0];
      for (int i = 1; i < c->nsp; i++) es[i] = es[0];
    } else {
      c->o.nsize = c->nsp;
      for (int i = 0; i < c->nsp; i++) c->o.size[i] = es[i];
    }
  } else {
    if (kind != 2) {
      assert_int_equal(tu_array_alloc(&c->fp, tu_rng_chance(r, 0.7) ? NDF_BOOL : NDF_FLOAT32, c->nsp, es), 0);
      double p = tu_rng_chance(r, 0.1) ? 1.0 : 0.2 + 0.7 * tu_rng_unif(r);
      int any = 0;
      for (int64_t k = 0; k < ntap; k++) {
        int on = tu_rng_chance(r, p);
        any |= on;
        tu_set(&c->fp.arr, k, on ? (c->fp.arr.dtype == NDF_BOOL ? 1 : 0.5) : 0);
      }
      if (!any) tu_set(&c->fp.arr, tu_rng_int(r, 0, ntap - 1), 1);
      c->o.footprint = &c->fp.arr;
    }
    if (kind >= 2) {
      assert_int_equal(tu_array_alloc(&c->st, NDF_FLOAT64, c->nsp, es), 0);
      double lo, hi;
      tu_int_range(c->dt, &lo, &hi);
      double smax = tu_is_float(c->dt) ? 100 : (tu_rng_chance(r, 0.3) ? (hi - lo) / 2 : 20);
      int quarter = tu_rng_chance(r, 0.6);
      for (int64_t k = 0; k < ntap; k++) {
        double v = quarter ? round(tu_rng_unif(r) * 8 * smax - 4 * smax) / 4 : (tu_rng_unif(r) * 2 - 1) * smax;
        tu_set(&c->st.arr, k, v);
      }
      c->o.structure = &c->st.arr;
    }
  }
  /* origins */
  if (tu_rng_chance(r, 0.7)) {
    c->o.norigin = c->nsp;
    for (int i = 0; i < c->nsp; i++) c->o.origin[i] = tu_rng_int(r, -(es[i] / 2), (es[i] - 1) / 2);
  }
  c->o.mode = (ndf_mode)tu_rng_int(r, 0, NDF_MODE_COUNT - 1);
  if (tu_is_float(c->dt)) c->o.cval = tu_rng_chance(r, 0.1) ? NAN : tu_rng_normal(r) * 100;
  else {
    double lo, hi;
    tu_int_range(c->dt, &lo, &hi);
    c->o.cval = (double)tu_rng_int(r, (int64_t)lo, (int64_t)hi);
  }
  c->o.batch_dims = c->batch;
  char sh[96];
  size_t w = 0;
  for (int i = 0; i < c->nd; i++) w += (size_t)snprintf(sh + w, sizeof sh - w, "%s%lld", i ? "x" : "", (long long)c->shape[i]);
  char el[96];
  w = 0;
  for (int i = 0; i < c->nsp; i++) w += (size_t)snprintf(el + w, sizeof el - w, "%s%lld", i ? "x" : "", (long long)es[i]);
  char org[96] = "0";
  w = 0;
  for (int i = 0; i < c->o.norigin; i++) w += (size_t)snprintf(org + w, sizeof org - w, "%s%lld", i ? "," : "", (long long)c->o.origin[i]);
  snprintf(c->desc, sizeof c->desc, "%s %s shape=%s batch=%d %s=%s origin=%s mode=%s cval=%g",
           tu_op_name(c->op), ndf_dtype_name(c->dt), sh, c->batch, kinds[kind], el, org,
           ndf_mode_name(c->o.mode), c->o.cval);
}

/* Runs one case on both backends and compares.  in_layout / out_layout are
 * TU_LAYOUT_* flags.  Returns 0 when equal. */
static int run_gpu_case(gpu_state *s, gcase *c, tu_rng *r, int in_layout, int out_layout, int with_nan,
                        double *gpu_ms, double *cpu_ms) {
  ndf_ctx *ctx = s->ctx;
  tu_array in, cpu_out, hin, hout;
  assert_int_equal(tu_array_alloc(&in, c->dt, c->nd, c->shape), 0);
  fill_values(&in, r, with_nan && tu_is_float(c->dt));
  assert_int_equal(tu_array_like(&cpu_out, &in.arr, TU_LAYOUT_C, r), 0);
  double t0 = tu_now_ms();
  ndf_grey_options co = c->o;
  if (c->cpu_algo > 0) co.algorithm = (ndf_grey_algorithm)c->cpu_algo;
  ndf_status rc = tu_op_call(ctx, c->op, &in.arr, &cpu_out.arr, &co);
  double t1 = tu_now_ms();
  if (rc != NDF_OK) {
    printf("CPU backend rejected: %s: %s\n  %s\n", ndf_status_name(rc), ndf_errmsg(ctx), c->desc);
    tu_array_free(&in);
    tu_array_free(&cpu_out);
    return -1;
  }
  assert_int_equal(tu_array_relayout(&hin, &in.arr, in_layout, r), 0);
  assert_int_equal(tu_array_like(&hout, &in.arr, out_layout, r), 0); /* poisoned */
  tu_dev din, dout;
  tu_dev_upload(ctx, &din, &hin);
  tu_dev_upload(ctx, &dout, &hout);
  assert_int_equal(ndf_ctx_synchronize(ctx), NDF_OK);
  double t2 = tu_now_ms();
  ndf_status rg = tu_op_call(ctx, c->op, &din.arr, &dout.arr, &c->o);
  ndf_status rs = ndf_ctx_synchronize(ctx);
  double t3 = tu_now_ms();
  int result = 0;
  if (rg != NDF_OK || rs != NDF_OK) {
    printf("GPU run failed: %s / sync %s: %s\n  %s\n", ndf_status_name(rg), ndf_status_name(rs), ndf_errmsg(ctx),
           c->desc);
    result = -1;
  } else {
    tu_dev_download(ctx, &dout, &hout);
    char msg[2048];
    int64_t bad = tu_compare(&cpu_out.arr, &hout.arr, msg, sizeof msg);
    if (bad != 0) {
      printf("GPU != CPU in %lld elements (input layout %d, output layout %d):\n  %s\n%s", (long long)bad,
             in_layout, out_layout, c->desc, msg);
      result = -1;
    } else {
      int64_t gap = tu_check_gaps(&hout);
      if (gap >= 0) {
        printf("GPU wrote outside the output's elements (byte %lld):\n  %s\n", (long long)gap, c->desc);
        result = -1;
      }
    }
  }
  if (gpu_ms) *gpu_ms = t3 - t2;
  if (cpu_ms) *cpu_ms = t1 - t0;
  tu_dev_free(ctx, &din);
  tu_dev_free(ctx, &dout);
  tu_array_free(&in);
  tu_array_free(&cpu_out);
  tu_array_free(&hin);
  tu_array_free(&hout);
  return result;
}

/* ------------------------------------------------------------------------ */
/* Tests                                                                     */

static void test_gpu_random_cases(void **state) {
  gpu_state *s = *state;
  SKIP_WITHOUT_CUDA(s);
  tu_rng r;
  tu_rng_seed(&r, s->seed);
  int failed = 0;
  double t0 = tu_now_ms();
  for (long i = 0; i < s->ncases; i++) {
    gcase c;
    draw_case(&c, &r);
    int in_layout = TU_LAYOUT_C, out_layout = TU_LAYOUT_C;
    double u = tu_rng_unif(&r);
    if (u < 0.25) in_layout = TU_LAYOUT_PADDED | (tu_rng_chance(&r, 0.5) ? TU_LAYOUT_NEGATIVE : 0);
    else if (u < 0.35) in_layout = TU_LAYOUT_FORTRAN;
    else if (u < 0.5) in_layout = TU_LAYOUT_C | TU_LAYOUT_OFFSET;
    u = tu_rng_unif(&r);
    if (u < 0.15) out_layout = tu_rng_chance(&r, 0.5) ? TU_LAYOUT_PADDED : TU_LAYOUT_FORTRAN;
    else if (u < 0.25) out_layout = TU_LAYOUT_C | TU_LAYOUT_OFFSET;
    if (run_gpu_case(s, &c, &r, in_layout, out_layout, 1, NULL, NULL) != 0) {
      printf("  (random case %ld)\n", i);
      failed++;
    }
    gcase_free(&c);
    if (failed >= 15) break;
  }
  printf("%ld random cases in %.1f s, %d failed\n", s->ncases, (tu_now_ms() - t0) / 1e3, failed);
  assert_int_equal(failed, 0);
}

/* Each dtype x mode once on a 2x3x67x131 batch (batch_dims 2), 3x5 footprint:
 * erosion, dilation, and one composite (five of the six per dtype; all six
 * per mode). */
static void test_gpu_every_dtype_and_mode(void **state) {
  gpu_state *s = *state;
  SKIP_WITHOUT_CUDA(s);
  tu_rng r;
  tu_rng_seed(&r, s->seed + 1);
  int failed = 0;
  for (int dt = NDF_UINT8; dt <= NDF_UINT64; dt++) {
    for (int mode = 0; mode < NDF_MODE_COUNT; mode++) {
      for (int k = 0; k < 3; k++) {
        int op = k < 2 ? k : TU_OP_OPENING + (dt * NDF_MODE_COUNT + mode) % 6;
        gcase c;
        memset(&c, 0, sizeof c);
        ndf_grey_options_init(&c.o);
        c.op = op;
        c.dt = (ndf_dtype)dt;
        c.nd = 4;
        c.batch = 2;
        c.nsp = 2;
        int64_t sh[4] = {2, 3, 67, 131};
        memcpy(c.shape, sh, sizeof sh);
        int64_t es[2] = {3, 5};
        assert_int_equal(tu_array_alloc(&c.fp, NDF_BOOL, 2, es), 0);
        for (int k = 0; k < 15; k++) tu_set(&c.fp.arr, k, (k * 7) % 3 != 0);
        c.o.footprint = &c.fp.arr;
        c.o.mode = (ndf_mode)mode;
        c.o.norigin = 2;
        c.o.origin[0] = op == TU_OP_DILATION ? -1 : 1;
        c.o.origin[1] = -1;
        double lo, hi;
        tu_int_range(c.dt, &lo, &hi);
        c.o.cval = tu_is_float(c.dt) ? -12.5 : floor((lo + hi) / 2);
        c.o.batch_dims = 2;
        snprintf(c.desc, sizeof c.desc, "%s %s 2x3x67x131 batch 2 footprint 3x5 mode %s",
                 tu_op_name(op), ndf_dtype_name(c.dt), ndf_mode_name(c.o.mode));
        if (run_gpu_case(s, &c, &r, TU_LAYOUT_C, TU_LAYOUT_C, 1, NULL, NULL) != 0) failed++;
        gcase_free(&c);
      }
    }
  }
  assert_int_equal(failed, 0);
}

/* Large and irregular footprints: 7x7x7 ball-like, 7x7x7 random, 1x9x2;
 * variants 6-7 run composites (black_tophat on the ball, laplace on a
 * random non-flat 7x7x7). */
static void test_gpu_large_footprints(void **state) {
  gpu_state *s = *state;
  SKIP_WITHOUT_CUDA(s);
  tu_rng r;
  tu_rng_seed(&r, s->seed + 2);
  int failed = 0;
  for (int variant = 0; variant < 8; variant++) {
    gcase c;
    memset(&c, 0, sizeof c);
    ndf_grey_options_init(&c.o);
    c.op = variant < 6 ? variant % 2 : variant == 6 ? TU_OP_BLACK_TOPHAT : TU_OP_LAPLACE;
    c.dt = variant < 2 || variant == 6 ? NDF_FLOAT32 : variant < 4 || variant == 7 ? NDF_UINT16 : NDF_FLOAT64;
    c.nd = 3;
    c.nsp = 3;
    int64_t sh[3] = {23, 41, 57};
    memcpy(c.shape, sh, sizeof sh);
    int64_t es[3] = {7, 7, 7};
    if (variant == 4 || variant == 5) {
      es[0] = 1;
      es[1] = 9;
      es[2] = 2;
    }
    assert_int_equal(tu_array_alloc(&c.fp, NDF_UINT8, 3, es), 0);
    int64_t ntap = es[0] * es[1] * es[2];
    for (int64_t k = 0; k < ntap; k++) {
      int z = (int)(k / (es[1] * es[2])), y = (int)(k / es[2] % es[1]), x = (int)(k % es[2]);
      int on;
      if (variant < 2 || variant == 6) on = (z - 3) * (z - 3) + (y - 3) * (y - 3) + (x - 3) * (x - 3) <= 9; /* ball r=3 */
      else on = tu_rng_chance(&r, 0.5);
      tu_set(&c.fp.arr, k, on);
    }
    tu_set(&c.fp.arr, 0, 1);
    c.o.footprint = &c.fp.arr;
    if (variant == 3 || variant == 7) { /* non-flat too */
      assert_int_equal(tu_array_alloc(&c.st, NDF_FLOAT64, 3, es), 0);
      for (int64_t k = 0; k < ntap; k++) tu_set(&c.st.arr, k, (double)tu_rng_int(&r, -300, 300));
      c.o.structure = &c.st.arr;
    }
    c.o.mode = (ndf_mode)(variant % NDF_MODE_COUNT);
    c.o.cval = 3;
    c.o.norigin = 3;
    for (int i = 0; i < 3; i++) c.o.origin[i] = tu_rng_int(&r, -(es[i] / 2), (es[i] - 1) / 2);
    snprintf(c.desc, sizeof c.desc, "%s %s 23x41x57 footprint %lldx%lldx%lld variant %d mode %s",
             tu_op_name(c.op), ndf_dtype_name(c.dt), (long long)es[0], (long long)es[1],
             (long long)es[2], variant, ndf_mode_name(c.o.mode));
    double g, cp;
    if (run_gpu_case(s, &c, &r, variant == 2 ? (TU_LAYOUT_PADDED | TU_LAYOUT_NEGATIVE) : TU_LAYOUT_C,
                     TU_LAYOUT_C, 1, &g, &cp) != 0)
      failed++;
    else
      printf("  %s: GPU %.1f ms (first call: compile or cache load), CPU %.1f ms\n", c.desc, g, cp);
    gcase_free(&c);
  }
  assert_int_equal(failed, 0);
}

/* Non-box elements on the GPU by shape: crosses, diamonds and balls of
 * radius 1-3 (grey_fp, the taps from shared memory), in 1-4 spatial axes
 * (a 4th axis the element does not reach), with batch axes, origins, every
 * mode, flat and non-flat, every dtype width (cp.async staging for 4- and
 * 8-byte types); and the elements grey_fp leaves to grey_taps: more than 256
 * taps, extents over 7, taps on a 4th spatial axis. */
static void test_gpu_footprint_shapes(void **state) {
  gpu_state *s = *state;
  SKIP_WITHOUT_CUDA(s);
  tu_rng r;
  tu_rng_seed(&r, s->seed + 6);
  static const struct { int nd, batch; int64_t shape[5]; } geo[] = {
      {3, 0, {37, 70, 131}}, {3, 1, {3, 45, 200}}, {2, 0, {300, 77}}, {2, 1, {4, 999}}, {4, 0, {3, 9, 20, 70}},
      {5, 1, {2, 3, 5, 17, 40}},
  };
  static const ndf_dtype dts[] = {NDF_FLOAT32, NDF_FLOAT64, NDF_UINT8, NDF_INT16, NDF_UINT32, NDF_INT64};
  int failed = 0, ncase = 0;
  for (size_t gi = 0; gi < sizeof geo / sizeof geo[0]; gi++)
    for (int shape_kind = 0; shape_kind < 7; shape_kind++) {
      /* 0 cross r1, 1 diamond r2, 2 ball r3, 3 random 7^3 > 256 taps, 4 cross r4 (extent 9),
       * 5 4-axis cross (taps on the 4th axis), 6 random thin element, 1 x 3 x ... */
      gcase c;
      memset(&c, 0, sizeof c);
      ndf_grey_options_init(&c.o);
      c.nd = geo[gi].nd;
      c.batch = geo[gi].batch;
      c.nsp = c.nd - c.batch;
      memcpy(c.shape, geo[gi].shape, sizeof geo[gi].shape);
      if ((shape_kind == 3 && c.nsp != 3) || (shape_kind == 5 && c.nsp != 4)) continue;
      const int rad = shape_kind == 0 || shape_kind == 5 ? 1 : shape_kind == 1 ? 2 : shape_kind == 4 ? 4 : 3;
      int64_t es[NDF_MAX_SPATIAL], ntap = 1;
      for (int d = 0; d < c.nsp; d++) {
        es[d] = 2 * rad + 1;
        if (c.nsp == 4 && d == 0 && shape_kind != 5) es[d] = 1; /* the 4th axis untouched */
        if (shape_kind == 6) es[d] = c.nsp == 4 && d == 0 ? 1 : tu_rng_int(&r, 2, 4);
        ntap *= es[d];
      }
      assert_int_equal(tu_array_alloc(&c.fp, NDF_BOOL, c.nsp, es), 0);
      int any = 0;
      for (int64_t k = 0; k < ntap; k++) {
        int64_t q = k, l1 = 0, l2 = 0, nz = 0;
        for (int d = c.nsp - 1; d >= 0; d--) {
          const int64_t o = q % es[d] - es[d] / 2;
          q /= es[d];
          l1 += o < 0 ? -o : o;
          l2 += o * o;
          nz += o != 0;
        }
        int on = shape_kind == 2 ? l2 <= rad * rad : shape_kind == 3 ? tu_rng_chance(&r, 0.9)
                 : shape_kind == 6 ? tu_rng_chance(&r, 0.6) : shape_kind == 1 ? l1 <= rad : nz <= 1;
        if (shape_kind == 6 && k == ntap - 1) on = 0; /* not a box */
        any |= on;
        tu_set(&c.fp.arr, k, on);
      }
      if (!any) tu_set(&c.fp.arr, 0, 1); /* ntap >= 2 where the last tap is off */
      int box = 1; /* a full box runs the box kernels (1-D crosses, balls) */
      for (int64_t k = 0; k < ntap; k++) box &= tu_get(&c.fp.arr, k) != 0;
      c.o.footprint = &c.fp.arr;
      c.dt = dts[ncase % (int)(sizeof dts / sizeof dts[0])];
      c.op = ncase % 2 ? TU_OP_DILATION : TU_OP_EROSION;
      c.o.mode = (ndf_mode)(ncase % NDF_MODE_COUNT);
      c.o.cval = tu_is_float(c.dt) ? -3.5 : 5;
      c.o.batch_dims = c.batch;
      if (ncase % 3 == 1) {
        c.o.norigin = c.nsp;
        for (int d = 0; d < c.nsp; d++) c.o.origin[d] = tu_rng_int(&r, -(es[d] / 2), (es[d] - 1) / 2);
      }
      if (ncase % 4 == 2) { /* non-flat */
        assert_int_equal(tu_array_alloc(&c.st, NDF_FLOAT64, c.nsp, es), 0);
        for (int64_t k = 0; k < ntap; k++) tu_set(&c.st.arr, k, (double)tu_rng_int(&r, -40, 40) / 4);
        c.o.structure = &c.st.arr;
      }
      char sh[96];
      size_t w = 0;
      for (int i = 0; i < c.nd; i++) w += (size_t)snprintf(sh + w, sizeof sh - w, "%s%lld", i ? "x" : "", (long long)c.shape[i]);
      static const char *kn[] = {"cross r1", "diamond r2", "ball r3", "random 7^3 >256 taps", "cross r4",
                                 "4-axis cross", "random thin"};
      snprintf(c.desc, sizeof c.desc, "%s %s shape=%s batch=%d %s%s%s mode=%s", tu_op_name(c.op), ndf_dtype_name(c.dt),
               sh, c.batch, kn[shape_kind], c.o.norigin ? " origin" : "", c.o.structure ? " non-flat" : "",
               ndf_mode_name(c.o.mode));
      double g, cp;
      const int lay = ncase % 5 == 3 ? (TU_LAYOUT_PADDED | TU_LAYOUT_NEGATIVE) : TU_LAYOUT_C;
      const int fp = shape_kind <= 2 || shape_kind == 6; /* else grey_taps */
      const uint64_t mark = tu_klog_mark(s->ctx);
      if (run_gpu_case(s, &c, &r, lay, ncase % 7 == 4 ? TU_LAYOUT_PADDED : TU_LAYOUT_C, 1, &g, &cp) != 0 ||
          (!box && tu_klog_check(s->ctx, mark, fp ? "ndf_grey_fp" : "ndf_grey_taps", 1, c.desc)) ||
          (!box && !fp && tu_klog_check(s->ctx, mark, "ndf_grey_fp", 0, c.desc)))
        failed++;
      else printf("  %s: GPU %.2f ms (first call), CPU %.1f ms\n", c.desc, g, cp);
      gcase_free(&c);
      ncase++;
    }
  assert_int_equal(failed, 0);
}

/* The benchmark shapes at small scale. */
static void test_gpu_benchmark_shapes(void **state) {
  gpu_state *s = *state;
  SKIP_WITHOUT_CUDA(s);
  tu_rng r;
  tu_rng_seed(&r, s->seed + 3);
  struct {
    ndf_dtype dt;
    int nd, batch;
    int64_t shape[4];
    int64_t size;
    ndf_mode mode;
    int op;
  } b[] = {
      {NDF_FLOAT32, 3, 0, {64, 128, 128}, 3, NDF_MODE_REFLECT, TU_OP_EROSION},
      {NDF_FLOAT32, 3, 0, {64, 128, 128}, 3, NDF_MODE_REFLECT, TU_OP_DILATION},
      {NDF_FLOAT32, 4, 1, {2, 32, 64, 64}, 3, NDF_MODE_NEAREST, TU_OP_DILATION},
      {NDF_FLOAT32, 3, 0, {32, 64, 64}, 7, NDF_MODE_NEAREST, TU_OP_EROSION},
      {NDF_UINT8, 3, 0, {64, 128, 128}, 3, NDF_MODE_CONSTANT, TU_OP_DILATION},
      {NDF_INT16, 3, 0, {64, 128, 128}, 5, NDF_MODE_WRAP, TU_OP_EROSION},
      /* one benchmark shape per composite */
      {NDF_FLOAT32, 3, 0, {64, 128, 128}, 3, NDF_MODE_REFLECT, TU_OP_OPENING},
      {NDF_UINT8, 3, 0, {64, 128, 128}, 3, NDF_MODE_CONSTANT, TU_OP_CLOSING},
      {NDF_FLOAT32, 4, 1, {2, 32, 64, 64}, 3, NDF_MODE_NEAREST, TU_OP_GRADIENT},
      {NDF_FLOAT32, 3, 0, {64, 128, 128}, 3, NDF_MODE_REFLECT, TU_OP_LAPLACE},
      {NDF_INT16, 3, 0, {64, 128, 128}, 5, NDF_MODE_WRAP, TU_OP_WHITE_TOPHAT},
      {NDF_FLOAT32, 3, 0, {32, 64, 64}, 7, NDF_MODE_NEAREST, TU_OP_BLACK_TOPHAT},
      /* the size sweep on 2048^2 (here 512^2) and 4x128^3 opening (here 2x64^3) */
      {NDF_FLOAT32, 2, 0, {512, 512}, 63, NDF_MODE_REFLECT, TU_OP_DILATION},
      {NDF_FLOAT32, 2, 0, {512, 512}, 15, NDF_MODE_REFLECT, TU_OP_DILATION},
      {NDF_FLOAT32, 4, 1, {2, 64, 64, 64}, 5, NDF_MODE_REFLECT, TU_OP_OPENING},
  };
  int failed = 0;
  for (size_t k = 0; k < sizeof b / sizeof b[0]; k++) {
    for (int rep = 0; rep < 3; rep++) { /* second run: kernel cached; third: misaligned views */
      gcase c;
      memset(&c, 0, sizeof c);
      ndf_grey_options_init(&c.o);
      c.op = b[k].op;
      c.dt = b[k].dt;
      c.nd = b[k].nd;
      c.batch = b[k].batch;
      c.nsp = c.nd - c.batch;
      memcpy(c.shape, b[k].shape, sizeof c.shape);
      c.o.nsize = 1;
      c.o.size[0] = b[k].size;
      c.o.mode = b[k].mode;
      c.o.batch_dims = c.batch;
      c.o.cval = 7;
      snprintf(c.desc, sizeof c.desc, "bench %s %s %lldx%lldx%lld%s size %lld %s", tu_op_name(c.op),
               ndf_dtype_name(c.dt), (long long)c.shape[0], (long long)c.shape[1], (long long)c.shape[2],
               c.nd == 4 ? "x64 (batch 1)" : "", (long long)b[k].size, ndf_mode_name(c.o.mode));
      double g, cp;
      int lay = rep == 2 ? TU_LAYOUT_C | TU_LAYOUT_OFFSET : TU_LAYOUT_C;
      if (run_gpu_case(s, &c, &r, lay, lay, 0, &g, &cp) != 0) failed++;
      else printf("  %s: GPU %.2f ms%s, CPU %.1f ms\n", c.desc, g,
                  rep == 0 ? " (first call)" : rep == 2 ? " (input and output 1-3 elements off alignment)" : "", cp);
      gcase_free(&c);
    }
  }
  /* the cross-shaped footprint of the benchmark, 3x3x3 */
  gcase c;
  memset(&c, 0, sizeof c);
  ndf_grey_options_init(&c.o);
  c.dt = NDF_FLOAT32;
  c.nd = c.nsp = 3;
  int64_t sh[3] = {64, 128, 128}, es[3] = {3, 3, 3};
  memcpy(c.shape, sh, sizeof sh);
  assert_int_equal(tu_array_alloc(&c.fp, NDF_BOOL, 3, es), 0);
  for (int k = 0; k < 27; k++) {
    int z = k / 9, y = k / 3 % 3, x = k % 3;
    tu_set(&c.fp.arr, k, (z == 1) + (y == 1) + (x == 1) >= 2);
  }
  c.o.footprint = &c.fp.arr;
  c.o.mode = NDF_MODE_NEAREST;
  snprintf(c.desc, sizeof c.desc, "bench erosion float32 64x128x128 cross 3x3x3 nearest");
  double g, cp;
  if (run_gpu_case(s, &c, &r, TU_LAYOUT_C, TU_LAYOUT_C, 0, &g, &cp) != 0) failed++;
  else printf("  %s: GPU %.2f ms (first call), CPU %.1f ms\n", c.desc, g, cp);
  gcase_free(&c);
  assert_int_equal(failed, 0);
}

/* The fused box kernels of algorithm auto (extents <= 7 on the last three
 * spatial axes): grey_boxd (doubling, the default), with every rows-per-
 * thread setting (the tunable grey.boxd_ry), against the CPU, and bit for bit
 * (memcmp: signed zeros and NaN payloads included) against the classic
 * grey_box (grey.box=classic), and so are the register line passes
 * grey_linew / grey_linev run for these boxes (grey.box=lines).  Boxes by size= and by full footprints,
 * odd and even extents 1-7, origins, every mode, dtype and op, batch axes,
 * 1-4 spatial axes, tiles cut at every edge (X to 300, Y to 70), strided
 * inputs and outputs, inputs of few distinct values (ties of -0.0 and 0.0,
 * NaN). */
/* Sets tunable name on ctx (value NULL: its default), asserting the API takes it. */
static void tune(ndf_ctx *ctx, const char *name, const char *value) {
  const ndf_status s = ndf_ctx_set_tunable(ctx, name, value);
  if (s != NDF_OK) printf("%s\n", ndf_errmsg(ctx));
  assert_int_equal(s, NDF_OK);
}

/* box: NULL (the defaults), "classic" (grey.box and grey.line classic), "lines" (grey.box=lines),
 * "lined" (grey.line=lined: grey_boxd + grey_lined), "linev_l=N" (the default kernels, grey_linev's
 * segment length N). */
static void run_box_env(ndf_ctx *ctx, gcase *c, const tu_array *hin, tu_array *hout, const char *box, int ry) {
  char v[8];
  snprintf(v, sizeof v, "%d", ry);
  tune(ctx, "grey.boxd_ry", v);
  if (box && strcmp(box, "classic") == 0) tune(ctx, "grey.box", "classic"), tune(ctx, "grey.line", "classic");
  if (box && strcmp(box, "lines") == 0) tune(ctx, "grey.box", "lines");
  if (box && strcmp(box, "lined") == 0) tune(ctx, "grey.line", "lined");
  if (box && strncmp(box, "linev_l=", 8) == 0) tune(ctx, "grey.linev_l", box + 8);
  tu_dev din, dout;
  tu_dev_upload(ctx, &din, hin);
  tu_dev_upload(ctx, &dout, hout);
  const uint64_t mark = tu_klog_mark(ctx);
  ndf_status rg = tu_op_call(ctx, c->op, &din.arr, &dout.arr, &c->o);
  ndf_status rs = ndf_ctx_synchronize(ctx);
  if (rg != NDF_OK || rs != NDF_OK)
    printf("GPU run failed (grey.box=%s RY=%d): %s / %s: %s\n  %s\n", box ? box : "(unset)", ry,
           ndf_status_name(rg), ndf_status_name(rs), ndf_errmsg(ctx), c->desc);
  assert_int_equal(rg, NDF_OK);
  assert_int_equal(rs, NDF_OK);
  { /* the kernels each setting is about ran (the kernel log): a setting that fell back
     * silently would make the bit-for-bit comparisons compare a kernel with itself */
    const char *want[4] = {NULL}, *nots[5] = {NULL};
    int nw = 0, nn = 0, fused = 1, last_k = 0, other_k = 0;
    for (int d = 0; d < c->nsp; d++) {
      const int64_t k = c->o.footprint ? c->o.footprint->shape[d] : c->o.size[c->o.nsize == 1 ? 0 : d];
      if (c->nsp - d <= 3 && k > 7) fused = 0; /* the fused box kernel: extents <= 7 on the last three axes */
      if (d == c->nsp - 1) last_k = k > 1;
      else other_k |= k > 1;
    }
    const int wide = ndf_dtype_size(c->dt) > 4; /* grey_boxd: elements up to 4 bytes */
    if (!box && fused) want[nw++] = wide ? "ndf_grey_box" : "ndf_grey_boxd";
    if (box && !strcmp(box, "classic")) {
      if (fused) want[nw++] = "ndf_grey_box";
      nots[nn++] = "ndf_grey_boxd", nots[nn++] = "ndf_grey_linew", nots[nn++] = "ndf_grey_linev";
      nots[nn++] = "ndf_grey_lined";
    }
    if (box && !strcmp(box, "lines") && fused && (last_k || other_k)) {
      if (last_k) want[nw++] = "ndf_grey_linew";
      if (other_k) want[nw++] = "ndf_grey_linev";
      nots[nn++] = "ndf_grey_boxd", nots[nn++] = "ndf_grey_box";
    }
    if (box && !strcmp(box, "lined")) nots[nn++] = "ndf_grey_linew", nots[nn++] = "ndf_grey_linev";
    int bad = 0;
    for (int k = 0; k < nw; k++) bad |= tu_klog_check(ctx, mark, want[k], 1, c->desc);
    for (int k = 0; k < nn; k++) bad |= tu_klog_check(ctx, mark, nots[k], 0, c->desc);
    if (bad) printf("  (grey.box=%s RY=%d)\n", box ? box : "(unset)", ry);
    assert_int_equal(bad, 0);
  }
  tu_dev_download(ctx, &dout, hout);
  tu_dev_free(ctx, &din);
  tu_dev_free(ctx, &dout);
  tune(ctx, "grey.box", NULL);
  tune(ctx, "grey.line", NULL);
  tune(ctx, "grey.boxd_ry", NULL);
  tune(ctx, "grey.linev_l", NULL);
}

/* Elements whose bits differ between a and b (memcmp), the first at *first. */
static int64_t bits_differ(const tu_array *a, const tu_array *b, int64_t *first) {
  const size_t es1 = ndf_dtype_size(a->arr.dtype);
  const int64_t n = ndf_array_size(&a->arr);
  int64_t nbit = 0;
  *first = -1;
  for (int64_t k = 0; k < n; k++)
    if (memcmp(tu_elem_ptr(&a->arr, k), tu_elem_ptr(&b->arr, k), es1) != 0 && nbit++ == 0) *first = k;
  return nbit;
}

static void box_doubling_cases(void **state, int lines) {
  gpu_state *s = *state;
  SKIP_WITHOUT_CUDA(s);
  tu_rng r;
  tu_rng_seed(&r, s->seed + 5 + (uint64_t)lines);
  int failed = 0;
  /* a third of NDF_TEST_CASES (each case compiles up to two new kernels), at least 20 */
  const long ncases = s->ncases / 3 < 20 ? 20 : s->ncases / 3;
  for (long i = 0; i < ncases && failed < 10; i++) {
    gcase c;
    memset(&c, 0, sizeof c);
    ndf_grey_options_init(&c.o);
    c.op = (int)tu_rng_int(&r, 0, TU_OP_COUNT - 1);
    c.dt = (ndf_dtype)tu_rng_int(&r, NDF_UINT8, NDF_FLOAT64);
    if (tu_rng_chance(&r, 0.4)) c.dt = NDF_FLOAT32;
    c.batch = (int)tu_rng_int(&r, 0, 2);
    c.nsp = tu_rng_chance(&r, 0.6) ? 3 : (int)tu_rng_int(&r, 1, 4);
    c.nd = c.batch + c.nsp;
    const int64_t cap[3] = {40, lines ? 400 : 70, lines ? 400 : 300}; /* Z, Y, X: the last three spatial axes */
    for (int tries = 0;; tries++) {
      int64_t n = 1;
      for (int d = 0; d < c.nd; d++) {
        int back = c.nd - 1 - d; /* 0: last axis */
        int64_t hi = d < c.batch ? 3 : back == 0 ? cap[2] : back == 1 ? cap[1] : back == 2 ? cap[0] : 6;
        c.shape[d] = tu_rng_chance(&r, 0.1) ? tu_rng_int(&r, 1, 3) : tu_rng_int(&r, 1, hi);
        n *= c.shape[d];
      }
      if (n <= 600000 || tries > 50) break;
    }
    int64_t es[NDF_MAX_SPATIAL];
    for (int d = 0; d < c.nsp; d++) es[d] = c.nsp - d <= 3 ? tu_rng_int(&r, 1, 7) : 1;
    if (lines) /* large extents: line passes (grey_lined / grey_line), sometimes longer than the axis */
      for (int d = 0; d < c.nsp; d++)
        es[d] = tu_rng_chance(&r, 0.3) ? tu_rng_int(&r, 1, 7) : tu_rng_chance(&r, 0.8) ? tu_rng_int(&r, 8, 70) : tu_rng_int(&r, 71, 140);
    if (tu_rng_chance(&r, 0.5)) {
      c.o.nsize = c.nsp;
      for (int d = 0; d < c.nsp; d++) c.o.size[d] = es[d];
    } else { /* a footprint of ones: the same box */
      assert_int_equal(tu_array_alloc(&c.fp, NDF_BOOL, c.nsp, es), 0);
      int64_t nt = 1;
      for (int d = 0; d < c.nsp; d++) nt *= es[d];
      for (int64_t k = 0; k < nt; k++) tu_set(&c.fp.arr, k, 1);
      c.o.footprint = &c.fp.arr;
    }
    if (tu_rng_chance(&r, 0.7)) {
      c.o.norigin = c.nsp;
      for (int d = 0; d < c.nsp; d++) c.o.origin[d] = tu_rng_int(&r, -(es[d] / 2), (es[d] - 1) / 2);
    }
    c.o.mode = (ndf_mode)tu_rng_int(&r, 0, NDF_MODE_COUNT - 1);
    double lo, hi;
    tu_int_range(c.dt, &lo, &hi);
    c.o.cval = tu_is_float(c.dt) ? (tu_rng_chance(&r, 0.1) ? NAN : tu_rng_chance(&r, 0.2) ? -0.0 : tu_rng_normal(&r) * 10)
                                 : (double)tu_rng_int(&r, (int64_t)lo, (int64_t)hi);
    c.o.batch_dims = c.batch;
    int w = 0;
    w += snprintf(c.desc + w, sizeof c.desc - (size_t)w, "%s %s batch=%d shape=", tu_op_name(c.op), ndf_dtype_name(c.dt), c.batch);
    for (int d = 0; d < c.nd; d++) w += snprintf(c.desc + w, sizeof c.desc - (size_t)w, "%s%lld", d ? "x" : "", (long long)c.shape[d]);
    w += snprintf(c.desc + w, sizeof c.desc - (size_t)w, " %s=", c.o.footprint ? "footprint" : "size");
    for (int d = 0; d < c.nsp; d++) w += snprintf(c.desc + w, sizeof c.desc - (size_t)w, "%s%lld", d ? "x" : "", (long long)es[d]);
    w += snprintf(c.desc + w, sizeof c.desc - (size_t)w, " origin=");
    for (int d = 0; d < c.o.norigin; d++) w += snprintf(c.desc + w, sizeof c.desc - (size_t)w, "%s%lld", d ? "," : "", (long long)c.o.origin[d]);
    snprintf(c.desc + w, sizeof c.desc - (size_t)w, " mode=%s cval=%g", ndf_mode_name(c.o.mode), c.o.cval);

    tu_array in, cpu_out, hin, hnew, hold;
    assert_int_equal(tu_array_alloc(&in, c.dt, c.nd, c.shape), 0);
    int ties = tu_rng_chance(&r, 0.4);
    if (ties) { /* few distinct values: ties everywhere, -0.0 against 0.0 */
      static const double fv[] = {-0.0, 0.0, -0.0, 0.0, 1.0, -1.0, NAN};
      const int64_t n = ndf_array_size(&in.arr);
      const int nv = tu_rng_chance(&r, 0.5) ? 7 : 6;
      /* long lines: mostly zeros, else a window of ~60 almost always holds a 1 and -1 (no tie decides) */
      const int zeros = lines && tu_rng_chance(&r, 0.6);
      for (int64_t k = 0; k < n; k++) {
        double v = fv[zeros && tu_rng_int(&r, 0, 99) < 97 ? tu_rng_int(&r, 0, 1) : tu_rng_int(&r, 0, nv - 1)];
        if (!tu_is_float(c.dt)) v = isnan(v) ? 2.0 : v == 0 ? 0.0 : v < 0 && lo == 0 ? 3.0 : v;
        tu_set(&in.arr, k, v);
      }
    } else {
      fill_values(&in, &r, 1);
    }
    assert_int_equal(tu_array_like(&cpu_out, &in.arr, TU_LAYOUT_C, &r), 0);
    ndf_status rc = tu_op_call(s->ctx, c.op, &in.arr, &cpu_out.arr, &c.o);
    if (rc != NDF_OK) printf("CPU rejected: %s: %s\n  %s\n", ndf_status_name(rc), ndf_errmsg(s->ctx), c.desc);
    assert_int_equal(rc, NDF_OK);
    int in_layout = tu_rng_chance(&r, 0.7) ? TU_LAYOUT_C
                    : tu_rng_chance(&r, 0.5) ? TU_LAYOUT_PADDED | (tu_rng_chance(&r, 0.5) ? TU_LAYOUT_NEGATIVE : 0)
                                             : TU_LAYOUT_C | TU_LAYOUT_OFFSET;
    int out_layout = tu_rng_chance(&r, 0.8) ? TU_LAYOUT_C : TU_LAYOUT_C | TU_LAYOUT_OFFSET;
    assert_int_equal(tu_array_relayout(&hin, &in.arr, in_layout, &r), 0);
    assert_int_equal(tu_array_like(&hnew, &in.arr, out_layout, &r), 0);
    assert_int_equal(tu_array_like(&hold, &in.arr, TU_LAYOUT_C, &r), 0);
    const int ry = tu_rng_chance(&r, 0.5) ? 8 : (int)tu_rng_int(&r, 1, 8);
    run_box_env(s->ctx, &c, &hin, &hnew, NULL, ry);
    run_box_env(s->ctx, &c, &hin, &hold, "classic", 8);
    { /* bit for bit with classic too: small boxes by the register line passes (grey.box=lines);
       * large: grey_lined (grey.line=lined), grey_linev with other segment lengths */
      tu_array halt;
      assert_int_equal(tu_array_like(&halt, &in.arr, TU_LAYOUT_C, &r), 0);
      char lv[32];
      snprintf(lv, sizeof lv, "linev_l=%d", (int)tu_rng_int(&r, 1, 90));
      const char *alts[2] = {lines ? "lined" : "lines", lv};
      for (int k = 0; k < (lines ? 2 : 1); k++) {
        run_box_env(s->ctx, &c, &hin, &halt, alts[k], ry);
        int64_t first, nb = bits_differ(&halt, &hold, &first);
        if (nb) {
          printf("line kernels (%s) and classic kernels differ in the bits of %lld elements (first: flat %lld, %g vs %g)%s:\n  %s\n",
                 alts[k], (long long)nb, (long long)first, tu_get(&halt.arr, first), tu_get(&hold.arr, first),
                 ties ? " (ties input)" : "", c.desc);
          failed++;
        }
      }
      tu_array_free(&halt);
    }
    char msg[2048];
    int64_t bad = tu_compare(&cpu_out.arr, &hnew.arr, msg, sizeof msg);
    int64_t gap = tu_check_gaps(&hnew);
    if (bad != 0 || gap >= 0) {
      printf("doubling kernels (RY=%d) != CPU in %lld elements, gap byte %lld%s:\n  %s\n%s", ry, (long long)bad,
             (long long)gap, ties ? " (ties input)" : "", c.desc, msg);
      failed++;
    } else {
      const size_t es1 = ndf_dtype_size(c.dt);
      int64_t nbit = 0, first = -1;
      const int64_t n = ndf_array_size(&in.arr);
      for (int64_t k = 0; k < n; k++)
        if (memcmp(tu_elem_ptr(&hnew.arr, k), tu_elem_ptr(&hold.arr, k), es1) != 0 && nbit++ == 0) first = k;
      if (nbit) {
        printf("doubling kernels (RY=%d) and classic kernels differ in the bits of %lld elements (first: flat %lld, %g vs %g)%s:\n  %s\n",
               ry, (long long)nbit, (long long)first, tu_get(&hnew.arr, first), tu_get(&hold.arr, first),
               ties ? " (ties input)" : "", c.desc);
        failed++;
      }
    }
    tu_array_free(&in);
    tu_array_free(&cpu_out);
    tu_array_free(&hin);
    tu_array_free(&hnew);
    tu_array_free(&hold);
    gcase_free(&c);
  }
  printf("%ld %s cases, %d failed\n", ncases, lines ? "line-pass" : "box-kernel", failed);
  assert_int_equal(failed, 0);
}
static void test_gpu_box_doubling(void **state) { box_doubling_cases(state, 0); }
/* The same for large boxes: the line passes of auto (grey_linew on the last
 * axis, grey_linev on the others) against the CPU and bit for bit against
 * grey_line (grey.line=classic), and so are grey_lined
 * (grey.line=lined) and grey_linev with random segment lengths
 * (grey.linev_l); extents 8-140 on any spatial axis; inputs of ties are
 * mostly -0.0 and 0.0 (long windows). */
static void test_gpu_line_doubling(void **state) { box_doubling_cases(state, 1); }

/* Every algorithm on the GPU (auto, direct, separable, vhgw, decomposed)
 * against the CPU's auto, bit for bit: large boxes (extents up to 63, some
 * longer than the image) and iterated structures (diamonds, crosses), 1-4
 * spatial axes, batch axes, strided inputs and outputs, NaN.  An algorithm
 * that is not exact for the element is refused by both backends alike. */
static void test_gpu_algorithms(void **state) {
  gpu_state *s = *state;
  SKIP_WITHOUT_CUDA(s);
  tu_rng r;
  tu_rng_seed(&r, s->seed + 4);
  int failed = 0, ran[NDF_GREY_ALGORITHM_COUNT] = {0};
  const long n = s->ncases / 2 > 40 ? s->ncases / 2 : 40;
  for (long it = 0; it < n && failed < 15; it++) {
    gcase c;
    memset(&c, 0, sizeof c);
    ndf_grey_options_init(&c.o);
    c.op = (int)tu_rng_int(&r, 0, TU_OP_COUNT - 1);
    c.dt = (ndf_dtype)tu_rng_int(&r, NDF_UINT8, NDF_FLOAT64);
    c.nsp = (int)tu_rng_int(&r, 1, 4);
    c.batch = (int)tu_rng_int(&r, 0, 1);
    c.nd = c.batch + c.nsp;
    const int64_t maxlen = c.nsp == 1 ? 3000 : c.nsp == 2 ? 300 : c.nsp == 3 ? 48 : 14;
    for (int i = 0; i < c.nd; i++) c.shape[i] = i < c.batch ? tu_rng_int(&r, 1, 3) : tu_rng_int(&r, 1, maxlen);
    int64_t es[NDF_MAX_SPATIAL];
    const int iterated = tu_rng_chance(&r, 0.4);
    int cc = 0;
    int64_t k = 0;
    if (iterated) { /* iterate_structure(generate_binary_structure(nsp, cc), k) */
      cc = (int)tu_rng_int(&r, 1, c.nsp);
      k = tu_rng_int(&r, 1, c.nsp <= 2 ? 12 : c.nsp == 3 ? 4 : 2);
      int64_t ntap = 1;
      for (int i = 0; i < c.nsp; i++) { es[i] = 2 * k + 1; ntap *= es[i]; }
      assert_int_equal(tu_array_alloc(&c.fp, NDF_BOOL, c.nsp, es), 0);
      for (int64_t t = 0; t < ntap; t++) {
        int64_t q = t, l1 = 0;
        for (int i = 0; i < c.nsp; i++, q /= es[0]) l1 += llabs(q % es[0] - k);
        tu_set(&c.fp.arr, t, l1 <= cc * k);
      }
      c.o.footprint = &c.fp.arr;
    } else {
      c.o.nsize = c.nsp;
      for (int i = 0; i < c.nsp; i++) {
        double u = tu_rng_unif(&r);
        es[i] = u < 0.2 ? 1 : u < 0.4 ? tu_rng_int(&r, 2, 7) : u < 0.9 ? tu_rng_int(&r, 8, 63)
                                                                   : c.shape[c.batch + i] * tu_rng_int(&r, 1, 3) + 1;
        if (c.nsp >= 3 && es[i] > 15) es[i] = 15;
        c.o.size[i] = es[i];
      }
    }
    if (!iterated || tu_rng_chance(&r, 0.3)) {
      c.o.norigin = c.nsp;
      for (int i = 0; i < c.nsp; i++) c.o.origin[i] = tu_rng_int(&r, -(es[i] / 2), (es[i] - 1) / 2);
    }
    c.o.mode = (ndf_mode)tu_rng_int(&r, 0, NDF_MODE_COUNT - 1);
    double lo, hi;
    tu_int_range(c.dt, &lo, &hi);
    c.o.cval = tu_is_float(c.dt) ? (tu_rng_chance(&r, 0.1) ? NAN : tu_rng_normal(&r) * 100)
                                 : (double)tu_rng_int(&r, (int64_t)lo, (int64_t)hi);
    c.o.batch_dims = c.batch;
    c.cpu_algo = NDF_GREY_AUTO;
    char sh[96], el[96];
    size_t w = 0;
    for (int i = 0; i < c.nd; i++) w += (size_t)snprintf(sh + w, sizeof sh - w, "%s%lld", i ? "x" : "", (long long)c.shape[i]);
    w = 0;
    for (int i = 0; i < c.nsp; i++) w += (size_t)snprintf(el + w, sizeof el - w, "%s%lld", i ? "x" : "", (long long)es[i]);
    for (int a = 0; a < NDF_GREY_ALGORITHM_COUNT; a++) {
      c.o.algorithm = (ndf_grey_algorithm)a;
      snprintf(c.desc, sizeof c.desc, "%s %s shape=%s batch=%d %s=%s (c=%d) origin=%s mode=%s algorithm=%s",
               tu_op_name(c.op), ndf_dtype_name(c.dt), sh, c.batch, iterated ? "iterated" : "size", el, cc,
               c.o.norigin ? "random" : "0", ndf_mode_name(c.o.mode), ndf_grey_algorithm_name(c.o.algorithm));
      /* Refused on the CPU: must be refused on the GPU too, output untouched.
       * (Whether it is depends on the element, not the image: 1^nd here.) */
      tu_array hin, hout;
      int64_t ones[NDF_MAX_NDIM];
      for (int i = 0; i < c.nd; i++) ones[i] = 1;
      assert_int_equal(tu_array_alloc(&hin, c.dt, c.nd, ones), 0);
      assert_int_equal(tu_array_like(&hout, &hin.arr, TU_LAYOUT_C, &r), 0);
      ndf_status rc = tu_op_call(s->ctx, c.op, &hin.arr, &hout.arr, &c.o);
      if (rc != NDF_OK) {
        tu_dev din, dout;
        tu_dev_upload(s->ctx, &din, &hin);
        tu_dev_upload(s->ctx, &dout, &hout);
        ndf_status rg = tu_op_call(s->ctx, c.op, &din.arr, &dout.arr, &c.o);
        tu_array back;
        assert_int_equal(tu_array_like(&back, &hin.arr, TU_LAYOUT_C, &r), 0);
        tu_dev_download(s->ctx, &dout, &back);
        if (rc != NDF_EINVAL || rg != NDF_EINVAL || tu_poison_check(back.base, back.bytes) >= 0) {
          printf("refusal differs: CPU %s, GPU %s (%s)\n  %s\n", ndf_status_name(rc), ndf_status_name(rg),
                 ndf_errmsg(s->ctx), c.desc);
          failed++;
        }
        tu_array_free(&back);
        tu_dev_free(s->ctx, &din);
        tu_dev_free(s->ctx, &dout);
      }
      tu_array_free(&hin);
      tu_array_free(&hout);
      if (rc != NDF_OK) continue;
      int in_layout = tu_rng_chance(&r, 0.3) ? TU_LAYOUT_PADDED | (tu_rng_chance(&r, 0.5) ? TU_LAYOUT_NEGATIVE : 0)
                                             : TU_LAYOUT_C;
      int out_layout = tu_rng_chance(&r, 0.2) ? TU_LAYOUT_PADDED : TU_LAYOUT_C;
      if (run_gpu_case(s, &c, &r, in_layout, out_layout, 1, NULL, NULL) != 0) failed++;
      ran[a]++;
    }
    gcase_free(&c);
  }
  printf("GPU cases per algorithm:");
  for (int a = 0; a < NDF_GREY_ALGORITHM_COUNT; a++) printf(" %s %d", ndf_grey_algorithm_name((ndf_grey_algorithm)a), ran[a]);
  printf("\n");
  assert_int_equal(failed, 0);
  for (int a = 0; a < NDF_GREY_ALGORITHM_COUNT; a++) assert_true(ran[a] > 0);
}

/* Structuring-element tables uploaded back to back: 300 distinct random
 * footprints (more than the context's table cache holds, so it is dropped and
 * refilled on the way), each erosion/dilation launched right after its table's
 * upload, no synchronisation until the end, every output in its own device
 * buffer; all compared with the CPU.  Guards the ordering of a table's upload
 * against the kernel that reads it (runtime/core/pool.c). */
static void test_gpu_table_churn(void **state) {
  gpu_state *s = *state;
  SKIP_WITHOUT_CUDA(s);
  tu_rng r;
  tu_rng_seed(&r, s->seed + 6);
  enum { NCALL = 300 };
  int64_t shape[3] = {9, 21, 37}, es[3] = {7, 9, 11};
  tu_array in;
  assert_int_equal(tu_array_alloc(&in, NDF_UINT16, 3, shape), 0);
  fill_values(&in, &r, 0);
  tu_dev din;
  tu_dev_upload(s->ctx, &din, &in);
  tu_array blank;
  assert_int_equal(tu_array_like(&blank, &in.arr, TU_LAYOUT_C, &r), 0);
  tu_array *fps = calloc(NCALL, sizeof *fps), *want = calloc(NCALL, sizeof *want);
  tu_dev *dout = calloc(NCALL, sizeof *dout);
  ndf_grey_options *opts = calloc(NCALL, sizeof *opts);
  assert_non_null(fps);
  assert_non_null(want);
  assert_non_null(dout);
  assert_non_null(opts);
  for (int i = 0; i < NCALL; i++) {
    assert_int_equal(tu_array_alloc(&fps[i], NDF_BOOL, 3, es), 0);
    for (int64_t t = 0; t < 7 * 9 * 11; t++) tu_set(&fps[i].arr, t, tu_rng_chance(&r, 0.5));
    tu_set(&fps[i].arr, 0, 1);
    ndf_grey_options_init(&opts[i]);
    opts[i].footprint = &fps[i].arr;
    opts[i].mode = (ndf_mode)tu_rng_int(&r, 0, NDF_MODE_COUNT - 1);
    opts[i].cval = (double)tu_rng_int(&r, 0, 65535);
    opts[i].algorithm = NDF_GREY_DIRECT;
    assert_int_equal(tu_array_alloc(&want[i], NDF_UINT16, 3, shape), 0);
    assert_int_equal(tu_op_call(s->ctx, i % 2 ? TU_OP_DILATION : TU_OP_EROSION, &in.arr, &want[i].arr, &opts[i]),
                     NDF_OK);
    tu_dev_upload(s->ctx, &dout[i], &blank); /* poisoned */
  }
  assert_int_equal(ndf_ctx_synchronize(s->ctx), NDF_OK);
  for (int i = 0; i < NCALL; i++) /* no waits between the calls */
    assert_int_equal(tu_op_call(s->ctx, i % 2 ? TU_OP_DILATION : TU_OP_EROSION, &din.arr, &dout[i].arr, &opts[i]),
                     NDF_OK);
  assert_int_equal(ndf_ctx_synchronize(s->ctx), NDF_OK);
  int failed = 0;
  for (int i = 0; i < NCALL; i++) {
    tu_array got;
    assert_int_equal(tu_array_like(&got, &in.arr, TU_LAYOUT_C, &r), 0);
    char desc[64];
    snprintf(desc, sizeof desc, "table churn call %d", i);
    failed += tu_dev_check(s->ctx, desc, "output", &dout[i], &got, &want[i].arr);
    tu_array_free(&got);
    tu_dev_free(s->ctx, &dout[i]);
    tu_array_free(&want[i]);
    tu_array_free(&fps[i]);
  }
  printf("%d table-churn calls, %d failed\n", NCALL, failed);
  free(fps);
  free(want);
  free(dout);
  free(opts);
  tu_dev_free(s->ctx, &din);
  tu_array_free(&blank);
  tu_array_free(&in);
  assert_int_equal(failed, 0);
}

/* Rejections on CUDA arrays leave the device output untouched. */
static void test_gpu_rejections(void **state) {
  gpu_state *s = *state;
  SKIP_WITHOUT_CUDA(s);
  ndf_ctx *ctx = s->ctx;
  int64_t sh[2] = {16, 20};
  tu_array hin, hout;
  assert_int_equal(tu_array_alloc(&hin, NDF_FLOAT32, 2, sh), 0);
  tu_rng r;
  tu_rng_seed(&r, s->seed + 4);
  fill_values(&hin, &r, 0);
  assert_int_equal(tu_array_like(&hout, &hin.arr, TU_LAYOUT_C, &r), 0);
  tu_dev din, dout;
  tu_dev_upload(ctx, &din, &hin);
  tu_dev_upload(ctx, &dout, &hout);
  ndf_grey_options o;
  ndf_grey_options_init(&o);
  o.nsize = 1;
  o.size[0] = 3;
  struct {
    const char *what, *arg;
    int bad_origin, int_out, host_out, same;
  } cases[] = {
      {"origin outside the element", "origin", 1, 0, 0, 0},
      {"dtype mismatch", "output", 0, 1, 0, 0},
      {"CUDA input, CPU output", "output", 0, 0, 1, 0},
      {"in place", "output", 0, 0, 0, 1},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    for (int opi = 0; opi < TU_OP_COUNT; opi++) {
      ndf_grey_options oo = o;
      if (cases[k].bad_origin) {
        oo.norigin = 1;
        oo.origin[0] = 2;
      }
      ndf_array out = dout.arr;
      tu_array hpoison;
      assert_int_equal(tu_array_like(&hpoison, &hin.arr, TU_LAYOUT_C, &r), 0);
      if (cases[k].int_out) out.dtype = NDF_INT32;
      if (cases[k].host_out) out = hpoison.arr;
      if (cases[k].same) out = din.arr;
      ndf_status st = tu_op_call(ctx, opi, &din.arr, &out, &oo);
      const char *m = ndf_errmsg(ctx);
      if (st != NDF_EINVAL || !strstr(m, cases[k].arg) || !strstr(m, tu_op_api_name(opi)))
        printf("%s (%s): %s \"%s\"\n", cases[k].what, tu_op_api_name(opi), ndf_status_name(st), m);
      assert_int_equal(st, NDF_EINVAL);
      assert_non_null(strstr(m, cases[k].arg));
      assert_non_null(strstr(m, tu_op_api_name(opi)));
      assert_int_equal(ndf_ctx_synchronize(ctx), NDF_OK);
      tu_array back, back_in;
      assert_int_equal(tu_array_like(&back, &hin.arr, TU_LAYOUT_C, &r), 0); /* sized like hout */
      tu_dev_download(ctx, &dout, &back);
      assert_int_equal(tu_poison_check(back.base, back.bytes), -1);
      assert_int_equal(tu_poison_check(hpoison.base, hpoison.bytes), -1);
      assert_int_equal(tu_array_alloc(&back_in, NDF_FLOAT32, 2, sh), 0); /* sized like hin */
      tu_dev_download(ctx, &din, &back_in);
      assert_memory_equal(back_in.base, hin.base, hin.bytes);
      tu_array_free(&back);
      tu_array_free(&back_in);
      tu_array_free(&hpoison);
    }
  }
  tu_dev_free(ctx, &din);
  tu_dev_free(ctx, &dout);
  tu_array_free(&hin);
  tu_array_free(&hout);
}

int main(void) {
  if (!tu_have_cuda()) return 77; /* ctest: skipped */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gpu_rejections),
      cmocka_unit_test(test_gpu_every_dtype_and_mode),
      cmocka_unit_test(test_gpu_large_footprints),
      cmocka_unit_test(test_gpu_footprint_shapes),
      cmocka_unit_test(test_gpu_benchmark_shapes),
      cmocka_unit_test(test_gpu_random_cases),
      cmocka_unit_test(test_gpu_algorithms),
      cmocka_unit_test(test_gpu_box_doubling),
      cmocka_unit_test(test_gpu_line_doubling),
      cmocka_unit_test(test_gpu_table_churn),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
