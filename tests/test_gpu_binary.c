/*
 * test_gpu_binary.c -- binary morphology (erosion, dilation, opening,
 * closing, propagation, fill_holes, hit_or_miss) on the GPU against the CPU
 * backend, bit for bit, on fresh random inputs drawn here: random blobs and
 * noise of every input dtype, ndim 1-4 with 0-2 batch axes, rows of lengths
 * around multiples of 32 (the packed words), random structures (default,
 * generate_binary_structure, random shapes and bits, all-False), origins,
 * masks of any dtype, border values, iterations 1, 2, 3, 5, 10, 70, 0 and -1
 * (cycles included: both backends must return the same error), strided,
 * negative-stride and misaligned inputs and masks, strided outputs.  Every
 * GPU output is poisoned before the run; the bytes between a strided output's
 * elements must keep the poison, and a rejected call must leave all of it.
 * Skips when the context has no CUDA device.
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

/* Sets tunable name on ctx (value NULL: its default), asserting the API takes it. */
static void tune(ndf_ctx *ctx, const char *name, const char *value) {
  const ndf_status st = ndf_ctx_set_tunable(ctx, name, value);
  if (st != NDF_OK) printf("%s\n", ndf_errmsg(ctx));
  assert_int_equal(st, NDF_OK);
}
static int group_setup(void **state) { return tu_gpu_setup(state, 400); }
#define group_teardown tu_gpu_teardown

#define SKIP_WITHOUT_CUDA(s) TU_SKIP_WITHOUT_CUDA((s)->ctx)

/* ------------------------------------------------------------------------ */
/* Device buffers mirroring host layouts                                     */

/* tu_dev (testutil.h): a device copy of a host array's whole buffer. */

/* ------------------------------------------------------------------------ */
/* Cases                                                                     */

enum { OP_EROSION, OP_DILATION, OP_OPENING, OP_CLOSING, OP_PROPAGATION, OP_FILL_HOLES, OP_HIT_OR_MISS, OP_COUNT };
static const char *op_names[] = {"erosion", "dilation", "opening", "closing", "propagation", "fill_holes",
                                 "hit_or_miss"};

typedef struct bcase {
  int op;
  ndf_dtype dt, out_dt;
  int nd, batch, nsp;
  int64_t shape[NDF_MAX_NDIM];
  ndf_binary_options o;
  ndf_hit_or_miss_options h;
  tu_array st, st2, mask; /* mask.arr.data NULL: none */
  double density;
  const char *want, *unwanted; /* kernel log specs (tu_klog_check) a successful GPU call must / must not launch */
  char desc[640];
} bcase;

static void bcase_free(bcase *c) {
  tu_array_free(&c->st);
  tu_array_free(&c->st2);
  tu_array_free(&c->mask);
}

/* A non-zero value of dtype dt (NaN sometimes for floats: NumPy counts it as true). */
static double nonzero_value(tu_rng *r, ndf_dtype dt) {
  if (dt == NDF_BOOL) return 1;
  if (tu_is_float(dt)) return tu_rng_chance(r, 0.02) ? NAN : (tu_rng_chance(r, 0.5) ? -1 : 1) * (0.5 + tu_rng_unif(r) * 9);
  double lo, hi;
  tu_int_range(dt, &lo, &hi);
  for (;;) {
    int64_t v = tu_rng_int(r, (int64_t)fmax(lo, -1000), (int64_t)fmin(hi, 1000));
    if (v != 0) return (double)v;
  }
}

static double zero_value(tu_rng *r, ndf_dtype dt) { return tu_is_float(dt) && tu_rng_chance(r, 0.3) ? -0.0 : 0.0; }

/* Random blobs (balls of random centres and radii) with some noise, or plain noise. */
static void fill_binary(const ndf_array *a, tu_rng *r, int batch) {
  const int nd = a->ndim;
  const int64_t n = ndf_array_size(a);
  const int noise = tu_rng_chance(r, 0.3);
  const double p = tu_rng_unif(r);
  int nb = (int)tu_rng_int(r, 1, 8);
  double cen[8][NDF_MAX_NDIM], rad[8];
  for (int k = 0; k < nb; k++) {
    for (int d = 0; d < nd; d++) cen[k][d] = tu_rng_unif(r) * (double)a->shape[d];
    rad[k] = 1 + tu_rng_unif(r) * 12;
  }
  const double flip = tu_rng_chance(r, 0.5) ? 0.02 : 0;
  for (int64_t i = 0; i < n; i++) {
    int on;
    if (noise) {
      on = tu_rng_chance(r, p);
    } else {
      int64_t q = i;
      double c[NDF_MAX_NDIM];
      for (int d = nd - 1; d >= 0; d--) { c[d] = (double)(q % a->shape[d]); q /= a->shape[d]; }
      on = 0;
      for (int k = 0; k < nb && !on; k++) {
        double d2 = 0;
        for (int d = batch; d < nd; d++) d2 += (c[d] - cen[k][d]) * (c[d] - cen[k][d]);
        on = d2 <= rad[k] * rad[k];
      }
      if (flip > 0 && tu_rng_chance(r, flip)) on = !on;
    }
    tu_set(a, i, on ? nonzero_value(r, a->dtype) : zero_value(r, a->dtype));
  }
}

static int64_t draw_len(tu_rng *r, int big) {
  static const int64_t around32[] = {31, 32, 33, 63, 64, 65, 96, 127, 128, 129};
  double u = tu_rng_unif(r);
  if (u < 0.08) return 1;
  if (u < 0.15) return 2;
  if (u < 0.45) return around32[tu_rng_int(r, 0, 9)];
  return tu_rng_int(r, 3, big ? 150 : 40);
}

/* A random structure of rank nsp into t: cross/full/random/all-False, any dtype. */
static void draw_structure(tu_array *t, tu_rng *r, int nsp, int64_t *es) {
  double u = tu_rng_unif(r);
  ndf_dtype sdt = tu_rng_chance(r, 0.6) ? NDF_BOOL : tu_rng_chance(r, 0.5) ? NDF_UINT8 : NDF_FLOAT64;
  if (u < 0.3) {
    for (int d = 0; d < nsp; d++) es[d] = 3;
    assert_int_equal(tu_array_alloc(t, sdt == NDF_FLOAT64 ? NDF_UINT8 : sdt, nsp, es), 0);
    assert_int_equal(ndf_generate_binary_structure(nsp, (int)tu_rng_int(r, 1, nsp), &t->arr), NDF_OK);
    return;
  }
  int64_t n = 1;
  for (int d = 0; d < nsp; d++) {
    es[d] = tu_rng_int(r, 1, nsp >= 3 ? 3 : 5);
    n *= es[d];
  }
  assert_int_equal(tu_array_alloc(t, sdt, nsp, es), 0);
  const int empty = tu_rng_chance(r, 0.04);
  const double p = tu_rng_chance(r, 0.15) ? 1.0 : 0.3 + 0.6 * tu_rng_unif(r);
  for (int64_t k = 0; k < n; k++) tu_set(&t->arr, k, !empty && tu_rng_chance(r, p) ? (sdt == NDF_FLOAT64 ? -2.5 : 1) : 0);
}

static void draw_origin(tu_rng *r, int nsp, const int64_t *es, int *norigin, int64_t *origin) {
  *norigin = 0;
  if (tu_rng_chance(r, 0.35)) return;
  if (tu_rng_chance(r, 0.2)) {
    int64_t m = es[0];
    for (int d = 1; d < nsp; d++) m = m < es[d] ? m : es[d];
    *norigin = 1;
    origin[0] = tu_rng_int(r, -(m / 2), (m - 1) / 2);
    return;
  }
  *norigin = nsp;
  for (int d = 0; d < nsp; d++) origin[d] = tu_rng_int(r, -(es[d] / 2), (es[d] - 1) / 2);
}

static const char *shape_text(const int64_t *s, int n, char *buf, size_t len) {
  size_t w = 0;
  buf[0] = '\0';
  for (int i = 0; i < n && w < len; i++) w += (size_t)snprintf(buf + w, len - w, "%s%lld", i ? "x" : "", (long long)s[i]);
  return buf;
}

static void draw_case(bcase *c, tu_rng *r, int force_op) {
  memset(c, 0, sizeof *c);
  ndf_binary_options_init(&c->o);
  ndf_hit_or_miss_options_init(&c->h);
  c->op = force_op >= 0 ? force_op : (int)tu_rng_int(r, 0, OP_COUNT - 1);
  c->dt = (ndf_dtype)tu_rng_int(r, NDF_BOOL, NDF_UINT64);
  c->out_dt = tu_rng_chance(r, 0.5) ? NDF_BOOL : NDF_UINT8;
  c->batch = (int)tu_rng_int(r, 0, 2);
  c->nsp = (int)tu_rng_int(r, 1, 4);
  c->nd = c->batch + c->nsp;
  static const int iters[] = {1, 1, 1, 2, 3, 5, 10, 70, 0, -1, -1};
  c->o.iterations = iters[tu_rng_int(r, 0, 10)];
  const int64_t budget = c->o.iterations == 1 ? 300000 : 60000;
  int big = tu_rng_chance(r, 0.3);
  for (int tries = 0;; tries++) {
    int64_t n = 1;
    for (int i = 0; i < c->nd; i++) {
      c->shape[i] = i < c->batch ? tu_rng_int(r, 1, 3) : draw_len(r, big && c->nsp <= 3);
      n *= c->shape[i];
    }
    if (n <= budget || tries > 50) break;
  }
  int64_t es[NDF_MAX_SPATIAL], es2[NDF_MAX_SPATIAL];
  char sh[96], el[96] = "default", el2[96] = "-", org[96] = "0";
  for (int d = 0; d < c->nsp; d++) es[d] = 3;
  if (tu_rng_chance(r, 0.8)) {
    draw_structure(&c->st, r, c->nsp, es);
    shape_text(es, c->nsp, el, sizeof el);
  }
  int norigin;
  int64_t origin[NDF_MAX_SPATIAL];
  draw_origin(r, c->nsp, es, &norigin, origin);
  shape_text(origin, norigin, org, sizeof org);
  if (c->op == OP_HIT_OR_MISS) {
    c->h.structure1 = c->st.arr.data ? &c->st.arr : NULL;
    c->h.norigin1 = norigin;
    memcpy(c->h.origin1, origin, sizeof origin);
    c->h.batch_dims = c->batch;
    if (tu_rng_chance(r, 0.5)) {
      draw_structure(&c->st2, r, c->nsp, es2);
      shape_text(es2, c->nsp, el2, sizeof el2);
      c->h.structure2 = &c->st2.arr;
      if (tu_rng_chance(r, 0.5)) draw_origin(r, c->nsp, es2, &c->h.norigin2, c->h.origin2);
    } else if (tu_rng_chance(r, 0.3)) {
      draw_origin(r, c->nsp, es, &c->h.norigin2, c->h.origin2);
    }
  } else {
    c->o.structure = c->st.arr.data ? &c->st.arr : NULL;
    c->o.norigin = norigin;
    memcpy(c->o.origin, origin, sizeof origin);
    c->o.border_value = (int)tu_rng_int(r, 0, 1);
    c->o.brute_force = (int)tu_rng_int(r, 0, 1);
    c->o.batch_dims = c->batch;
    if (c->op != OP_FILL_HOLES && tu_rng_chance(r, 0.4)) {
      ndf_dtype mdt = (ndf_dtype)tu_rng_int(r, NDF_BOOL, NDF_UINT64);
      assert_int_equal(tu_array_alloc(&c->mask, mdt, c->nd, c->shape), 0);
      fill_binary(&c->mask.arr, r, c->batch);
    }
  }
  shape_text(c->shape, c->nd, sh, sizeof sh);
  snprintf(c->desc, sizeof c->desc,
           "%s in=%s out=%s shape=%s batch=%d structure=%s structure2=%s origin=%s origin2(n=%d) iterations=%d "
           "border=%d mask=%s",
           op_names[c->op], ndf_dtype_name(c->dt), ndf_dtype_name(c->out_dt), sh, c->batch, el, el2, org,
           c->h.norigin2, c->o.iterations, c->o.border_value,
           c->mask.arr.data ? ndf_dtype_name(c->mask.arr.dtype) : "none");
}

static ndf_status call_op(ndf_ctx *ctx, bcase *c, const ndf_array *in, ndf_array *out, const ndf_array *mask) {
  ndf_binary_options o = c->o;
  o.mask = mask;
  switch (c->op) {
    case OP_EROSION: return ndf_binary_erosion(ctx, in, out, &o);
    case OP_DILATION: return ndf_binary_dilation(ctx, in, out, &o);
    case OP_OPENING: return ndf_binary_opening(ctx, in, out, &o);
    case OP_CLOSING: return ndf_binary_closing(ctx, in, out, &o);
    case OP_PROPAGATION: return ndf_binary_propagation(ctx, in, out, &o);
    case OP_FILL_HOLES: return ndf_binary_fill_holes(ctx, in, out, &o);
    default: return ndf_binary_hit_or_miss(ctx, in, out, &c->h);
  }
}

static int random_layout(tu_rng *r, int output) {
  double u = tu_rng_unif(r);
  if (output) {
    if (u < 0.15) return tu_rng_chance(r, 0.5) ? TU_LAYOUT_PADDED : TU_LAYOUT_FORTRAN;
    if (u < 0.25) return TU_LAYOUT_C | TU_LAYOUT_OFFSET;
    return TU_LAYOUT_C;
  }
  if (u < 0.25) return TU_LAYOUT_PADDED | (tu_rng_chance(r, 0.5) ? TU_LAYOUT_NEGATIVE : 0);
  if (u < 0.35) return TU_LAYOUT_FORTRAN;
  if (u < 0.5) return TU_LAYOUT_C | TU_LAYOUT_OFFSET;
  return TU_LAYOUT_C;
}

/* Runs one case on both backends and compares status, message and output.
 * Returns 0 when they agree. */
static int run_case(gpu_state *s, bcase *c, tu_rng *r, const ndf_array *given_in, double *gpu_ms) {
  ndf_ctx *ctx = s->ctx;
  tu_array in, cpu_out, hin, hout, hmask;
  memset(&hmask, 0, sizeof hmask);
  assert_int_equal(tu_array_alloc(&in, c->dt, c->nd, c->shape), 0);
  if (given_in) {
    for (int64_t i = 0; i < ndf_array_size(&in.arr); i++) tu_set(&in.arr, i, tu_get(given_in, i));
  } else {
    fill_binary(&in.arr, r, c->batch);
  }
  ndf_array out_desc = in.arr;
  out_desc.dtype = c->out_dt;
  assert_int_equal(tu_array_like(&cpu_out, &out_desc, TU_LAYOUT_C, r), 0);
  const ndf_array *cmask = c->mask.arr.data ? &c->mask.arr : NULL;
  const uint64_t cpu_mark = tu_klog_mark(ctx);
  ndf_status rc = call_op(ctx, c, &in.arr, &cpu_out.arr, cmask);
  const int cpu_launched = tu_klog_mark(ctx) != cpu_mark; /* the CPU backend launches no kernel */
  char cpu_msg[1024];
  snprintf(cpu_msg, sizeof cpu_msg, "%s", rc == NDF_OK ? "" : ndf_errmsg(ctx));

  assert_int_equal(tu_array_relayout(&hin, &in.arr, random_layout(r, 0), r), 0);
  assert_int_equal(tu_array_like(&hout, &out_desc, random_layout(r, 1), r), 0); /* poisoned */
  tu_dev din, dout, dmask;
  tu_dev_upload(ctx, &din, &hin);
  tu_dev_upload(ctx, &dout, &hout);
  if (cmask) {
    assert_int_equal(tu_array_relayout(&hmask, cmask, random_layout(r, 0), r), 0);
    tu_dev_upload(ctx, &dmask, &hmask);
  }
  assert_int_equal(ndf_ctx_synchronize(ctx), NDF_OK);
  double t0 = tu_now_ms();
  const uint64_t mark = tu_klog_mark(ctx);
  ndf_status rg = call_op(ctx, c, &din.arr, &dout.arr, cmask ? &dmask.arr : NULL);
  char gpu_msg[1024];
  snprintf(gpu_msg, sizeof gpu_msg, "%s", rg == NDF_OK ? "" : ndf_errmsg(ctx));
  ndf_status rs = ndf_ctx_synchronize(ctx);
  if (gpu_ms) *gpu_ms = tu_now_ms() - t0;
  int result = 0;
  tu_dev_download(ctx, &dout, &hout);
  if (rs != NDF_OK) {
    printf("GPU sync failed: %s: %s\n  %s\n", ndf_status_name(rs), ndf_errmsg(ctx), c->desc);
    result = -1;
  } else if (rc != rg || strcmp(cpu_msg, gpu_msg) != 0) {
    printf("CPU %s (%s) but GPU %s (%s)\n  %s\n", ndf_status_name(rc), cpu_msg, ndf_status_name(rg), gpu_msg, c->desc);
    result = -1;
  } else if (rc != NDF_OK) {
    int64_t p = tu_poison_check(hout.base, hout.bytes);
    if (p >= 0) {
      printf("GPU wrote the output (byte %lld) of a rejected call (%s):\n  %s\n", (long long)p, gpu_msg, c->desc);
      result = -1;
    }
  } else if (cpu_launched) {
    printf("the CPU call launched kernels:\n  %s\n", c->desc);
    result = -1;
  } else if ((c->want && tu_klog_check(ctx, mark, c->want, 1, c->desc)) ||
             (c->unwanted && tu_klog_check(ctx, mark, c->unwanted, 0, c->desc))) {
    result = -1;
  } else {
    char msg[2048];
    int64_t bad = tu_compare(&cpu_out.arr, &hout.arr, msg, sizeof msg);
    if (bad != 0) {
      printf("GPU != CPU in %lld elements:\n  %s\n%s", (long long)bad, c->desc, msg);
      result = -1;
    } else {
      int64_t gap = tu_check_gaps(&hout);
      if (gap >= 0) {
        printf("GPU wrote outside the output's elements (byte %lld):\n  %s\n", (long long)gap, c->desc);
        result = -1;
      }
    }
  }
  tu_dev_free(ctx, &din);
  tu_dev_free(ctx, &dout);
  if (cmask) tu_dev_free(ctx, &dmask);
  tu_array_free(&in);
  tu_array_free(&cpu_out);
  tu_array_free(&hin);
  tu_array_free(&hout);
  tu_array_free(&hmask);
  return result;
}

/* ------------------------------------------------------------------------ */
/* Tests                                                                     */

static void test_gpu_random_cases(void **state) {
  gpu_state *s = *state;
  SKIP_WITHOUT_CUDA(s);
  tu_rng r;
  tu_rng_seed(&r, s->seed);
  int failed = 0, errors = 0;
  double t0 = tu_now_ms();
  for (long i = 0; i < s->ncases; i++) {
    bcase c;
    draw_case(&c, &r, (int)(i % OP_COUNT));
    /* Every third case keeps the steps on the tap table (binary_step.cu),
     * the others compile the structure in (binary_fstep.cu). */
    const int table = i % 3 == 2;
    if (table) tune(s->ctx, "binary.fixed_taps", "0");
    if (table) c.unwanted = "ndf_bin_fstep";
    if (run_case(s, &c, &r, NULL, NULL) != 0) {
      printf("  (random case %ld, %s steps)\n", i, table ? "table" : "compiled");
      failed++;
    }
    if (table) tune(s->ctx, "binary.fixed_taps", NULL);
    bcase_free(&c);
    if (failed >= 15) break;
  }
  (void)errors;
  printf("%ld random cases in %.1f s, %d failed\n", s->ncases, (tu_now_ms() - t0) / 1e3, failed);
  assert_int_equal(failed, 0);
}

/* Fixed cases that must take given paths: the 16-byte packing paths (uint8
 * and bool, rows of 64 and 256), status reads (iterations 200), propagation
 * by components along a 1-D path of 3000 voxels and on a 90x110x130
 * fill_holes, cycles of period 2 (dilation and erosion by {-1, +1}), the
 * in-place iteration (an asymmetric structure holding its centre), and large
 * structures compiled in (81 taps) or past binary.fixed_taps (150 taps). */
static void test_gpu_paths(void **state) {
  gpu_state *s = *state;
  SKIP_WITHOUT_CUDA(s);
  tu_rng r;
  tu_rng_seed(&r, s->seed + 1);
  int failed = 0;
  for (int v = 0; v < 14; v++) {
    bcase c;
    memset(&c, 0, sizeof c);
    ndf_binary_options_init(&c.o);
    ndf_hit_or_miss_options_init(&c.h);
    c.dt = v % 2 ? NDF_BOOL : NDF_UINT8;
    c.out_dt = v % 3 ? NDF_UINT8 : NDF_BOOL;
    c.nsp = c.nd = 3;
    int64_t big[3] = {17, 40, 256}, mid[3] = {3, 9, 64};
    memcpy(c.shape, v < 4 ? big : mid, sizeof big);
    tu_array path;
    memset(&path, 0, sizeof path);
    switch (v) {
      case 0: c.op = OP_EROSION; break;
      case 1: c.op = OP_DILATION; c.o.iterations = 3; break;
      case 2: c.op = OP_FILL_HOLES; break;
      case 3: c.op = OP_HIT_OR_MISS; break;
      case 4: c.op = OP_DILATION; c.o.iterations = 200; break;
      case 5: c.op = OP_EROSION; c.o.iterations = 200; c.o.border_value = 1; break;
      case 6: { /* a 1-D path of 3000 voxels, propagated from one end */
        c.op = OP_PROPAGATION;
        c.nsp = c.nd = 1;
        c.shape[0] = 3000;
        assert_int_equal(tu_array_alloc(&c.mask, NDF_UINT8, 1, c.shape), 0);
        for (int64_t i = 0; i < 3000; i++) tu_set(&c.mask.arr, i, i % 1000 != 999 || i == 999);
        assert_int_equal(tu_array_alloc(&path, NDF_UINT8, 1, c.shape), 0);
        tu_set(&path.arr, 0, 1);
        break;
      }
      case 7: case 8: { /* {-1, +1}: period 2 for dilation (and erosion with border 1) */
        c.op = v == 7 ? OP_DILATION : OP_EROSION;
        c.o.iterations = -1;
        c.o.border_value = v == 8;
        c.nsp = c.nd = 1;
        c.shape[0] = 70;
        int64_t e = 3;
        assert_int_equal(tu_array_alloc(&c.st, NDF_UINT8, 1, &e), 0);
        tu_set(&c.st.arr, 0, 1);
        tu_set(&c.st.arr, 2, 1);
        c.o.structure = &c.st.arr;
        assert_int_equal(tu_array_alloc(&path, NDF_UINT8, 1, c.shape), 0);
        for (int64_t i = 0; i < 70; i++) tu_set(&path.arr, i, i % 2 == 0);
        break;
      }
      case 9: c.op = OP_CLOSING; c.o.iterations = -1; break;
      case 10: { /* fill_holes by components on a larger volume */
        c.op = OP_FILL_HOLES;
        int64_t sh[3] = {90, 110, 130};
        memcpy(c.shape, sh, sizeof sh);
        break;
      }
      case 12: case 13: { /* large random structures with origins: 9x9 (81 taps, compiled in, 2 iterations),
                           * 5x5x6 (up to 150 taps: past the default cap of 125, on the tap table) */
        c.op = v == 12 ? OP_EROSION : OP_DILATION;
        c.o.iterations = v == 12 ? 2 : 3;
        c.o.border_value = v == 12;
        int64_t e[3] = {9, 9, 1};
        if (v == 12) {
          c.nsp = c.nd = 2;
          int64_t sh[2] = {70, 100};
          memcpy(c.shape, sh, sizeof sh);
        } else {
          e[0] = 5; e[1] = 5; e[2] = 6;
          int64_t sh[3] = {20, 30, 97};
          memcpy(c.shape, sh, sizeof sh);
          assert_int_equal(tu_array_alloc(&c.mask, NDF_BOOL, 3, c.shape), 0);
          fill_binary(&c.mask.arr, &r, 0);
        }
        assert_int_equal(tu_array_alloc(&c.st, NDF_UINT8, c.nsp, e), 0);
        const int64_t ne = e[0] * e[1] * (c.nsp == 3 ? e[2] : 1);
        for (int64_t k = 0; k < ne; k++) tu_set(&c.st.arr, k, tu_rng_chance(&r, v == 12 ? 0.8 : 0.97));
        c.o.structure = &c.st.arr;
        c.o.norigin = c.nsp;
        for (int d = 0; d < c.nsp; d++) c.o.origin[d] = tu_rng_int(&r, -(e[d] / 2), (e[d] - 1) / 2);
        break;
      }
      default: { /* propagation with an asymmetric structure holding its centre: in place, many launches */
        c.op = OP_PROPAGATION;
        int64_t sh[3] = {40, 100, 200}, e[3] = {3, 3, 3};
        memcpy(c.shape, sh, sizeof sh);
        assert_int_equal(tu_array_alloc(&c.st, NDF_UINT8, 3, e), 0);
        for (int k = 0; k < 27; k++) tu_set(&c.st.arr, k, k == 13 || k == 4 || k == 10 || k == 14 || k == 22 || k == 26);
        c.o.structure = &c.st.arr;
        assert_int_equal(tu_array_alloc(&c.mask, NDF_BOOL, 3, c.shape), 0);
        fill_binary(&c.mask.arr, &r, 0);
        break;
      }
    }
    /* the kernel each case is about (ndf_binary_*: flood fills, components, taps compiled in or on the table) */
    switch (v) {
      case 0: case 12: c.want = "ndf_bin_fstep"; break;
      case 2: case 10: c.want = "ndf_bin_flood"; break;
      case 6: c.want = "ndf_ccl"; break;
      case 11: c.want = "ndf_bin_step|INPLACE=1"; break;
      case 13: c.want = "ndf_bin_step|INPLACE=0"; c.unwanted = "ndf_bin_fstep"; break;
      default: break;
    }
    snprintf(c.desc, sizeof c.desc, "path case %d (%s)", v, op_names[c.op]);
    if (run_case(s, &c, &r, path.arr.data ? &path.arr : NULL, NULL) != 0) failed++;
    tu_array_free(&path);
    bcase_free(&c);
  }
  assert_int_equal(failed, 0);
}

/* The flood path (templates/binary_flood.cu): fill_holes and propagation
 * with the cross or the full box of rank 2-3 (4-D arrays with a batch
 * axis), against the CPU backend: random blobs, serpentine corridors that
 * cross many tiles (long geodesics), all-zero and all-one inputs, masks and
 * border values, sizes off the tile grid, batch axes, and the tile
 * parameters (binary.flood_k 1/2, binary.flood_tz, binary.flood_batch) varied. */
static void test_gpu_flood(void **state) {
  gpu_state *s = *state;
  SKIP_WITHOUT_CUDA(s);
  tu_rng r;
  tu_rng_seed(&r, s->seed + 7);
  static const int64_t lens[] = {1, 2, 31, 32, 33, 64, 65, 97, 130};
  static const char *tzs[] = {"32", "1", "3", "8", "17"};
  int failed = 0;
  for (int v = 0; v < 48; v++) {
    bcase c;
    memset(&c, 0, sizeof c);
    ndf_binary_options_init(&c.o);
    ndf_hit_or_miss_options_init(&c.h);
    c.dt = v % 3 ? NDF_UINT8 : NDF_BOOL;
    c.out_dt = v % 4 ? NDF_BOOL : NDF_UINT8;
    c.op = v % 2 ? OP_PROPAGATION : OP_FILL_HOLES;
    c.nsp = v % 5 == 4 ? 2 : 3;
    c.batch = v % 7 == 3 ? 1 : v % 11 == 5 ? 2 : 0;
    if (c.nsp == 3 && c.batch == 2) c.batch = 1;
    c.nd = c.batch + c.nsp;
    const int kind = v % 6; /* 0-2 blobs, 3 serpentine, 4 all zero, 5 all one */
    for (int d = 0; d < c.nd; d++)
      c.shape[d] = d < c.batch ? tu_rng_int(&r, 1, 3) : lens[tu_rng_int(&r, 0, 8)];
    if (v < 4) { /* larger volumes: many tiles */
      int64_t big[3] = {70, 100, 260};
      for (int d = 0; d < 3; d++) c.shape[c.nd - 3 + d] = big[d];
    }
    const int full = (v / 2) % 2;
    int64_t e[3] = {3, 3, 3};
    assert_int_equal(tu_array_alloc(&c.st, NDF_BOOL, c.nsp, e), 0);
    assert_int_equal(ndf_generate_binary_structure(c.nsp, full ? c.nsp : 1, &c.st.arr), NDF_OK);
    if (v % 3 != 2) c.o.structure = &c.st.arr; /* else the default (the cross) */
    c.o.batch_dims = c.batch;
    if (c.op == OP_PROPAGATION) {
      c.o.border_value = tu_rng_chance(&r, 0.5);
      if (tu_rng_chance(&r, 0.75)) {
        assert_int_equal(tu_array_alloc(&c.mask, NDF_UINT8, c.nd, c.shape), 0);
        fill_binary(&c.mask.arr, &r, c.batch);
      }
    }
    tu_array in;
    assert_int_equal(tu_array_alloc(&in, c.dt, c.nd, c.shape), 0);
    const int64_t n = ndf_array_size(&in.arr), nx = c.shape[c.nd - 1], ny = c.shape[c.nd - 2];
    for (int64_t i = 0; i < n; i++) {
      const int64_t x = i % nx, y = (i / nx) % ny;
      double on;
      switch (kind) {
        case 3: /* rows of walls with a gap at alternating ends: one corridor through the plane */
          on = y % 4 == 3 && (((y / 4) % 2) ? x != 0 : x != nx - 1);
          if (c.op == OP_PROPAGATION) {
            on = i == 0;
          } else { /* fill_holes: a closed shell with one opening, at the first corner of each image */
            int64_t q = i, shell = 0, corner = 1;
            for (int d = c.nd - 1; d >= c.batch; d--) {
              const int64_t k = q % c.shape[d];
              q /= c.shape[d];
              shell |= k == 0 || k == c.shape[d] - 1;
              corner &= k == 0;
            }
            on = (on || shell) && !corner;
          }
          break;
        case 4: on = 0; break;
        case 5: on = 1; break;
        default: on = -1;
      }
      if (on >= 0) tu_set(&in.arr, i, on);
    }
    if (kind <= 2) fill_binary(&in.arr, &r, c.batch);
    if (kind == 3 && c.op == OP_PROPAGATION) { /* the corridor as the mask */
      tu_array_free(&c.mask);
      assert_int_equal(tu_array_alloc(&c.mask, NDF_UINT8, c.nd, c.shape), 0);
      for (int64_t i = 0; i < n; i++) {
        const int64_t x = i % nx, y = (i / nx) % ny;
        tu_set(&c.mask.arr, i, !(y % 4 == 3 && (((y / 4) % 2) ? x != 0 : x != nx - 1)));
      }
    }
    tune(s->ctx, "binary.flood_k", v % 3 == 1 ? "1" : "2");
    tune(s->ctx, "binary.flood_tz", tzs[v % 5]);
    tune(s->ctx, "binary.flood_batch", v % 2 ? "1" : "8");
    char sh[128];
    shape_text(c.shape, c.nd, sh, sizeof sh);
    c.want = "ndf_bin_flood";
    c.unwanted = "ndf_ccl";
    snprintf(c.desc, sizeof c.desc, "flood case %d: %s shape=%s batch=%d %s kind=%d border=%d mask=%s K=%s TZ=%s", v,
             op_names[c.op], sh, c.batch, full ? "full" : "cross", kind, c.o.border_value,
             c.mask.arr.data ? "yes" : "none", v % 3 == 1 ? "1" : "2", tzs[v % 5]);
    if (run_case(s, &c, &r, &in.arr, NULL) != 0) failed++;
    tu_array_free(&in);
    bcase_free(&c);
  }
  tune(s->ctx, "binary.flood_k", NULL);
  tune(s->ctx, "binary.flood_tz", NULL);
  tune(s->ctx, "binary.flood_batch", NULL);
  assert_int_equal(failed, 0);
}

/* label on the GPU against the CPU backend: random blobs and noise of any
 * dtype, ndim 1-4 with batch axes, default, generate_binary_structure and
 * random symmetric 3^n structures, every output dtype (too small ones must
 * fail alike, output untouched), strided inputs and outputs, counts. */
static void test_gpu_label(void **state) {
  gpu_state *s = *state;
  SKIP_WITHOUT_CUDA(s);
  ndf_ctx *ctx = s->ctx;
  tu_rng r;
  tu_rng_seed(&r, s->seed + 3);
  int failed = 0;
  const long ncases = s->ncases / 2 + 20;
  for (long ci = 0; ci < ncases && failed < 15; ci++) {
    ndf_dtype dt = (ndf_dtype)tu_rng_int(&r, NDF_BOOL, NDF_UINT64);
    ndf_dtype odt = (ndf_dtype)tu_rng_int(&r, NDF_UINT8, NDF_UINT64);
    int batch = (int)tu_rng_int(&r, 0, 2), nsp = (int)tu_rng_int(&r, 1, 4), nd = batch + nsp;
    int64_t shape[NDF_MAX_NDIM];
    int big = ci == 0;
    for (int tries = 0;; tries++) {
      int64_t n = 1;
      for (int i = 0; i < nd; i++) {
        shape[i] = i < batch ? tu_rng_int(&r, 1, 3) : draw_len(&r, 1);
        n *= shape[i];
      }
      if (n <= 400000 || tries > 50) break;
    }
    if (big) { /* one 3-D case of 160^3 */
      batch = 0; nsp = nd = 3;
      shape[0] = shape[1] = shape[2] = 160;
      odt = NDF_INT32;
    }
    tu_array st, in, cpu_out, hin, hout;
    memset(&st, 0, sizeof st);
    char sdesc[64] = "default";
    if (tu_rng_chance(&r, 0.7)) {
      int64_t es[NDF_MAX_SPATIAL];
      for (int d = 0; d < nsp; d++) es[d] = 3;
      assert_int_equal(tu_array_alloc(&st, NDF_UINT8, nsp, es), 0);
      if (tu_rng_chance(&r, 0.5)) {
        int conn = (int)tu_rng_int(&r, 1, nsp);
        assert_int_equal(ndf_generate_binary_structure(nsp, conn, &st.arr), NDF_OK);
        snprintf(sdesc, sizeof sdesc, "connectivity %d", conn);
      } else { /* random, symmetric */
        int64_t k = ndf_array_size(&st.arr);
        for (int64_t i = 0; i <= k / 2; i++) {
          int on = i == k / 2 || tu_rng_chance(&r, 0.5);
          tu_set(&st.arr, i, on);
          tu_set(&st.arr, k - 1 - i, on);
        }
        snprintf(sdesc, sizeof sdesc, "random symmetric");
      }
    }
    assert_int_equal(tu_array_alloc(&in, dt, nd, shape), 0);
    fill_binary(&in.arr, &r, batch);
    ndf_array odesc = in.arr;
    odesc.dtype = odt;
    /* both outputs in one layout: label numbers features in scipy's scan order of the output's layout */
    const int olayout = random_layout(&r, 1);
    const tu_rng rlay = r;
    tu_rng rl = rlay;
    assert_int_equal(tu_array_like(&cpu_out, &odesc, olayout, &rl), 0);
    int64_t nimg = 1;
    for (int d = 0; d < batch; d++) nimg *= shape[d];
    int64_t *fc = calloc((size_t)nimg, sizeof *fc), *fg = calloc((size_t)nimg, sizeof *fg);
    const ndf_array *sp = st.arr.data ? &st.arr : NULL;
    ndf_status rc = ndf_label(ctx, &in.arr, &cpu_out.arr, sp, batch, fc);
    char cmsg[1024];
    snprintf(cmsg, sizeof cmsg, "%s", rc == NDF_OK ? "" : ndf_errmsg(ctx));
    assert_int_equal(tu_array_relayout(&hin, &in.arr, random_layout(&r, 0), &r), 0);
    rl = rlay;
    assert_int_equal(tu_array_like(&hout, &odesc, olayout, &rl), 0);
    tu_dev din, dout;
    tu_dev_upload(ctx, &din, &hin);
    tu_dev_upload(ctx, &dout, &hout);
    double t0 = tu_now_ms();
    ndf_status rg = ndf_label(ctx, &din.arr, &dout.arr, sp, batch, fg);
    char gmsg[1024];
    snprintf(gmsg, sizeof gmsg, "%s", rg == NDF_OK ? "" : ndf_errmsg(ctx));
    assert_int_equal(ndf_ctx_synchronize(ctx), NDF_OK);
    double ms = tu_now_ms() - t0;
    tu_dev_download(ctx, &dout, &hout);
    char sh[96], desc[256];
    snprintf(desc, sizeof desc, "label in=%s out=%s shape=%s batch=%d structure=%s", ndf_dtype_name(dt),
             ndf_dtype_name(odt), shape_text(shape, nd, sh, sizeof sh), batch, sdesc);
    if (big) printf("%s: GPU %.2f ms (first call includes compiles), %lld features\n", desc, ms, (long long)fg[0]);
    int bad = 0;
    if (rc != rg || strcmp(cmsg, gmsg) != 0) {
      printf("CPU %s (%s) but GPU %s (%s)\n  %s\n", ndf_status_name(rc), cmsg, ndf_status_name(rg), gmsg, desc);
      bad = 1;
    } else if (rc != NDF_OK) {
      if (tu_poison_check(hout.base, hout.bytes) >= 0) {
        printf("GPU wrote the output of a rejected label call:\n  %s\n", desc);
        bad = 1;
      }
    } else {
      char msg[2048];
      int64_t nbad = tu_compare(&cpu_out.arr, &hout.arr, msg, sizeof msg);
      if (nbad) {
        printf("GPU != CPU in %lld labels:\n  %s\n%s", (long long)nbad, desc, msg);
        bad = 1;
      } else if (tu_check_gaps(&hout) >= 0) {
        printf("GPU wrote outside the output's elements:\n  %s\n", desc);
        bad = 1;
      }
      for (int64_t b = 0; b < nimg && !bad; b++)
        if (fc[b] != fg[b]) {
          printf("num_features[%lld]: CPU %lld, GPU %lld\n  %s\n", (long long)b, (long long)fc[b], (long long)fg[b], desc);
          bad = 1;
        }
    }
    failed += bad;
    tu_dev_free(ctx, &din);
    tu_dev_free(ctx, &dout);
    free(fc);
    free(fg);
    tu_array_free(&st);
    tu_array_free(&in);
    tu_array_free(&cpu_out);
    tu_array_free(&hin);
    tu_array_free(&hout);
  }
  assert_int_equal(failed, 0);
}

/* label into Fortran-ordered outputs on the GPU against the CPU: a batch of
 * two 600x6 images, the first with teeth whose Fortran scan (lines along
 * axis 0) opens more provisional labels than uint8 holds, so that scipy, and
 * ndforge, number it in raster order; the second sparse noise, numbered in
 * the Fortran scan.  int32 and uint8 outputs. */
static void test_gpu_label_scan_order(void **state) {
  gpu_state *s = *state;
  SKIP_WITHOUT_CUDA(s);
  ndf_ctx *ctx = s->ctx;
  tu_rng r;
  tu_rng_seed(&r, s->seed + 5);
  const int64_t sh[3] = {2, 600, 6};
  tu_array in;
  assert_int_equal(tu_array_alloc(&in, NDF_UINT8, 3, sh), 0);
  for (int64_t i = 0; i < 3600; i++) {
    const int64_t y = i / 6, x = i % 6;
    tu_set(&in.arr, i, (y % 2 == 0 && x < 3) || x == 2 || (y == 1 && x == 5) || (y == 5 && x == 4));
    tu_set(&in.arr, 3600 + i, tu_rng_chance(&r, 0.03));
  }
  int failed = 0;
  const ndf_dtype odts[2] = {NDF_INT32, NDF_UINT8};
  for (int k = 0; k < 2; k++) {
    ndf_array od = in.arr;
    od.dtype = odts[k];
    tu_array cpu_out, hout;
    tu_rng r1 = r, r2 = r;
    assert_int_equal(tu_array_like(&cpu_out, &od, TU_LAYOUT_FORTRAN, &r1), 0);
    assert_int_equal(tu_array_like(&hout, &od, TU_LAYOUT_FORTRAN, &r2), 0);
    int64_t fc[2] = {-1, -1}, fg[2] = {-2, -2};
    assert_int_equal(ndf_label(ctx, &in.arr, &cpu_out.arr, NULL, 1, fc), NDF_OK);
    tu_dev din, dout;
    tu_dev_upload(ctx, &din, &in);
    tu_dev_upload(ctx, &dout, &hout);
    assert_int_equal(ndf_label(ctx, &din.arr, &dout.arr, NULL, 1, fg), NDF_OK);
    assert_int_equal(ndf_ctx_synchronize(ctx), NDF_OK);
    tu_dev_download(ctx, &dout, &hout);
    char msg[2048];
    const int64_t nbad = tu_compare(&cpu_out.arr, &hout.arr, msg, sizeof msg);
    if (nbad) printf("GPU != CPU in %lld labels (%s Fortran output):\n%s", (long long)nbad,
                     ndf_dtype_name(odts[k]), msg);
    failed += nbad != 0 || tu_check_gaps(&hout) >= 0 || fc[0] != fg[0] || fc[1] != fg[1];
    tu_dev_free(ctx, &din);
    tu_dev_free(ctx, &dout);
    tu_array_free(&cpu_out);
    tu_array_free(&hout);
  }
  tu_array_free(&in);
  assert_int_equal(failed, 0);
}

/* One label call on both backends (C layouts, int32 labels); 0 when equal. */
static int label_pair(ndf_ctx *ctx, const tu_array *in, const ndf_array *st, int batch, const char *desc) {
  tu_array cpu_out, gout;
  assert_int_equal(tu_array_alloc(&cpu_out, NDF_INT32, in->arr.ndim, in->arr.shape), 0);
  assert_int_equal(tu_array_alloc(&gout, NDF_INT32, in->arr.ndim, in->arr.shape), 0);
  int64_t nimg = 1;
  for (int d = 0; d < batch; d++) nimg *= in->arr.shape[d];
  int64_t *fc = calloc((size_t)nimg, sizeof *fc), *fg = calloc((size_t)nimg, sizeof *fg);
  assert_int_equal(ndf_label(ctx, &in->arr, &cpu_out.arr, st, batch, fc), NDF_OK);
  tu_dev din, dout;
  tu_dev_upload(ctx, &din, in);
  tu_dev_upload(ctx, &dout, &gout);
  assert_int_equal(ndf_label(ctx, &din.arr, &dout.arr, st, batch, fg), NDF_OK); /* compiles, caches */
  const uint64_t mark = tu_klog_mark(ctx);
  double t0 = tu_now_ms();
  assert_int_equal(ndf_label(ctx, &din.arr, &dout.arr, st, batch, fg), NDF_OK);
  assert_int_equal(ndf_ctx_synchronize(ctx), NDF_OK);
  double ms = tu_now_ms() - t0;
  tu_dev_download(ctx, &dout, &gout);
  char msg[2048];
  /* by runs (templates/label.cu), not the voxel union-find */
  int bad = tu_klog_check(ctx, mark, "ndf_label", 1, desc) || tu_klog_check(ctx, mark, "ndf_ccl", 0, desc);
  int64_t nbad = tu_compare(&cpu_out.arr, &gout.arr, msg, sizeof msg);
  if (nbad) {
    printf("GPU != CPU in %lld labels:\n  %s\n%s", (long long)nbad, desc, msg);
    bad = 1;
  }
  for (int64_t b = 0; b < nimg && !bad; b++)
    if (fc[b] != fg[b]) {
      printf("num_features[%lld]: CPU %lld, GPU %lld\n  %s\n", (long long)b, (long long)fc[b], (long long)fg[b], desc);
      bad = 1;
    }
  if (!bad) printf("  %s: %lld features, GPU %.3f ms (second call, with the count's read-back)\n", desc, (long long)fg[0], ms);
  tu_dev_free(ctx, &din);
  tu_dev_free(ctx, &dout);
  free(fc);
  free(fg);
  tu_array_free(&cpu_out);
  tu_array_free(&gout);
  return bad;
}

/* label's row geometry on the GPU: rows of one word down to one voxel, rows
 * longer than a warp's 32 words (several chunks per row), odd widths, the
 * cross, the full box and a structure without the x-neighbours (units are
 * voxels, not runs), batch axes; and the benchmark's 256^3 blobs (random
 * blobs on a grid every 16 voxels, as bench.c draws them). */
static void test_gpu_label_rows(void **state) {
  gpu_state *s = *state;
  SKIP_WITHOUT_CUDA(s);
  ndf_ctx *ctx = s->ctx;
  tu_rng r;
  tu_rng_seed(&r, s->seed + 5);
  static const struct { int nd, batch; int64_t shape[4]; } g[] = {
      {2, 0, {5, 5000}}, {3, 1, {2, 3, 2100}}, {2, 0, {300, 1}}, {3, 0, {20, 30, 1}}, {3, 0, {7, 9, 33}},
      {3, 0, {4, 6, 1025}}, {4, 1, {2, 5, 7, 96}}, {4, 0, {3, 4, 5, 70}}, {1, 0, {4099}}, {3, 0, {256, 256, 256}},
  };
  int failed = 0;
  for (size_t k = 0; k < sizeof g / sizeof g[0]; k++) {
    const int nsp = g[k].nd - g[k].batch, bench = g[k].shape[0] == 256;
    tu_array in;
    assert_int_equal(tu_array_alloc(&in, NDF_BOOL, g[k].nd, g[k].shape), 0);
    if (bench) { /* trilinear noise on a 16-voxel grid, above 0 */
      const int64_t n0 = 256 / 16 + 2;
      double *c = malloc((size_t)(n0 * n0 * n0) * sizeof *c);
      for (int64_t i = 0; i < n0 * n0 * n0; i++) c[i] = tu_rng_unif(&r) * 2 - 1;
      for (int64_t i = 0; i < 256 * 256 * 256; i++) {
        const int64_t p[3] = {i >> 16, (i >> 8) & 255, i & 255};
        double v = 0;
        for (int q = 0; q < 8; q++) {
          double w = 1;
          int64_t at = 0;
          for (int d = 0; d < 3; d++) {
            const int hi = (q >> d) & 1;
            const double f = (double)(p[d] % 16) / 16;
            w *= hi ? f : 1 - f;
            at = at * n0 + p[d] / 16 + hi;
          }
          v += w * c[at];
        }
        ((uint8_t *)in.arr.data)[i] = v > 0;
      }
      free(c);
    } else {
      fill_binary(&in.arr, &r, g[k].batch);
    }
    for (int sk = 0; sk < 3; sk++) {
      if (bench && sk == 2) continue;
      tu_array st;
      int64_t es[NDF_MAX_SPATIAL];
      for (int d = 0; d < nsp; d++) es[d] = 3;
      assert_int_equal(tu_array_alloc(&st, NDF_UINT8, nsp, es), 0);
      assert_int_equal(ndf_generate_binary_structure(nsp, sk == 1 ? nsp : 1, &st.arr), NDF_OK);
      const int64_t ns = ndf_array_size(&st.arr);
      if (sk == 2 && ns > 1) { /* the x-neighbours off: every foreground voxel is its own unit */
        tu_set(&st.arr, ns / 2 - 1, 0);
        tu_set(&st.arr, ns / 2 + 1, 0);
      }
      char sh[96], desc[256];
      snprintf(desc, sizeof desc, "label %s batch=%d structure=%s", shape_text(g[k].shape, g[k].nd, sh, sizeof sh),
               g[k].batch, sk == 0 ? "cross" : sk == 1 ? "full" : "cross without x");
      failed += label_pair(ctx, &in, &st.arr, g[k].batch, desc);
      tu_array_free(&st);
    }
    tu_array_free(&in);
  }
  assert_int_equal(failed, 0);
}

/* Rejected inputs on CUDA arrays: a status, a message naming the argument,
 * and the output untouched. */
static void test_gpu_contract(void **state) {
  gpu_state *s = *state;
  SKIP_WITHOUT_CUDA(s);
  ndf_ctx *ctx = s->ctx;
  int64_t shape[3] = {4, 5, 37};
  tu_array in, out, hmask;
  assert_int_equal(tu_array_alloc(&in, NDF_UINT8, 3, shape), 0);
  assert_int_equal(tu_array_alloc(&out, NDF_BOOL, 3, shape), 0);
  tu_poison(out.base, out.bytes);
  int64_t mshape[3] = {4, 5, 36};
  assert_int_equal(tu_array_alloc(&hmask, NDF_UINT8, 3, mshape), 0);
  tu_dev din, dout, dmask;
  tu_dev_upload(ctx, &din, &in);
  tu_dev_upload(ctx, &dout, &out);
  tu_dev_upload(ctx, &dmask, &hmask);
  ndf_binary_options o;
  struct { const char *what, *needle; } cases[] = {
      {"mask shape", "mask"}, {"mask on host", "mask"}, {"structure rank", "structure"},
      {"origin outside", "origin"}, {"border_value", "border_value"}, {"label batch_dims", "batch_dims"}};
  for (int k = 0; k < 6; k++) {
    ndf_binary_options_init(&o);
    tu_array st;
    memset(&st, 0, sizeof st);
    ndf_status rc;
    if (k == 0) o.mask = &dmask.arr;
    if (k == 1) o.mask = &in.arr;
    if (k == 2) {
      int64_t e[2] = {3, 3};
      assert_int_equal(tu_array_alloc(&st, NDF_UINT8, 2, e), 0);
      o.structure = &st.arr;
    }
    if (k == 3) { o.norigin = 1; o.origin[0] = 2; }
    if (k == 4) o.border_value = 2;
    if (k == 5) rc = ndf_label(ctx, &din.arr, &dout.arr, NULL, 3, NULL);
    else rc = ndf_binary_dilation(ctx, &din.arr, &dout.arr, &o);
    printf("%s: %s: %s\n", cases[k].what, ndf_status_name(rc), ndf_errmsg(ctx));
    assert_int_not_equal(rc, NDF_OK);
    assert_non_null(strstr(ndf_errmsg(ctx), cases[k].needle));
    tu_array_free(&st);
  }
  assert_int_equal(ndf_ctx_synchronize(ctx), NDF_OK);
  tu_dev_download(ctx, &dout, &out);
  assert_int_equal(tu_poison_check(out.base, out.bytes), -1);
  tu_dev_free(ctx, &din);
  tu_dev_free(ctx, &dout);
  tu_dev_free(ctx, &dmask);
  tu_array_free(&in);
  tu_array_free(&out);
  tu_array_free(&hmask);
}

int main(void) {
  /* No usable CUDA device: exit 77, which ctest reports as skipped. */
  ndf_ctx *probe = NULL;
  ndf_ctx_options po;
  ndf_ctx_options_init(&po);
  if (ndf_ctx_create(&probe, &po) != NDF_OK || !ndf_ctx_has_cuda(probe)) {
    printf("skip: no usable CUDA device\n");
    ndf_ctx_destroy(probe);
    return 77;
  }
  ndf_ctx_destroy(probe);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gpu_contract),
      cmocka_unit_test(test_gpu_paths),
      cmocka_unit_test(test_gpu_flood),
      cmocka_unit_test(test_gpu_random_cases),
      cmocka_unit_test(test_gpu_label),
      cmocka_unit_test(test_gpu_label_rows),
      cmocka_unit_test(test_gpu_label_scan_order),
  };
  int rc = cmocka_run_group_tests(tests, group_setup, group_teardown);
  return rc;
}
