/*
 * test_gpu_ecc.c -- Euler characteristic curves on the GPU against the CPU
 * backend (itself checked against a brute-force cubical complex and
 * skimage by test_ecc), on fresh random inputs drawn here: float32, float64,
 * uint8, uint16; 2-D and 3-D with 0-2 batch axes; V and T constructions;
 * thresholds as values (unsorted, repeated, +-inf), evenly spaced over
 * [min, max] or over a range, few and many (past the shared-memory
 * histogram); small-integer values (ties everywhere), continuous values,
 * constant images; strided and negative-stride inputs, strided outputs.
 *
 * Exact curve: bit for bit (int64).  Soft curve (float32/float64, forward and
 * backward): to a tolerance, since the GPU sums in another order and takes
 * float32 sigmoids for float32 inputs.  GPU outputs are poisoned first; the
 * bytes between the elements of a strided output must keep the poison, and a
 * NaN input must leave the output untouched.
 *
 * Exits 77 (skipped) when the context has no CUDA device.  With fewer than
 * 100 random cases (NDF_TEST_CASES, default 150) the 256^3 shape is left out.
 * Seed: NDF_TEST_SEED (printed).  Public API only.
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

typedef struct ecase {
  ndf_dtype dt;
  int nd, batch, nsp;
  int64_t shape[NDF_MAX_NDIM];
  int vkind;   /* 0 small integers (ties), 1 continuous, 2 constant, 3 far from 0 in a narrow range */
  int tkind;   /* 0 values, 1 spaced over [min, max], 2 spaced over a range */
  int rdeg;    /* tkind 2: the range is one point (lo == hi; set by run_exact) */
  int64_t T;
  ndf_ecc_construction cons;
  int in_layout, out_layout;
  char desc[256];
} ecase;

static void draw_shape(ecase *c, tu_rng *r, int soft) {
  c->nsp = (int)tu_rng_int(r, 2, 3);
  c->batch = (int)tu_rng_int(r, 0, 2);
  c->nd = c->nsp + c->batch;
  for (int d = 0; d < c->batch; d++) c->shape[d] = tu_rng_int(r, 1, 3);
  const int64_t h = c->nsp == 2 ? (soft ? 40 : 300) : (soft ? 14 : 40);
  for (int d = 0; d < c->nsp; d++) c->shape[c->batch + d] = tu_rng_chance(r, 0.1) ? tu_rng_int(r, 1, 3) : tu_rng_int(r, 1, h);
}

static void fill_values(const ndf_array *a, int vkind, tu_rng *r) {
  const int64_t n = ndf_array_size(a);
  const int64_t top = tu_rng_int(r, 1, 12);
  const double scale = tu_rng_unif(r) * 100;
  const double k = tu_is_float(a->dtype) ? tu_rng_normal(r) : (double)tu_rng_int(r, 0, 9);
  for (int64_t i = 0; i < n; i++) {
    double v;
    if (vkind == 0) v = (double)tu_rng_int(r, 0, top);
    else if (vkind == 2) v = k;
    else if (vkind == 3) /* far from 0 in a narrow range: the first bin guesses are off */
      v = tu_is_float(a->dtype) ? 1e6 + (double)tu_rng_int(r, 0, 40) * 0.0625 : (double)tu_rng_int(r, 200, 255);
    else if (tu_is_float(a->dtype)) v = tu_rng_normal(r) * scale;
    else v = (double)tu_rng_int(r, 0, a->dtype == NDF_UINT8 ? 255 : 65535);
    if (a->dtype == NDF_FLOAT32) v = (float)v;
    tu_set(a, i, v);
  }
}

static void draw_case(ecase *c, tu_rng *r) {
  memset(c, 0, sizeof *c);
  static const ndf_dtype dts[4] = {NDF_FLOAT32, NDF_FLOAT64, NDF_UINT8, NDF_UINT16};
  c->dt = dts[tu_rng_int(r, 0, 3)];
  draw_shape(c, r, 0);
  c->vkind = tu_rng_chance(r, 0.5) ? 0 : tu_rng_chance(r, 0.9) ? 1 : 2;
  c->tkind = (int)tu_rng_int(r, 0, 2);
  c->T = tu_rng_chance(r, 0.1) ? tu_rng_int(r, 3000, 6000) : tu_rng_int(r, c->tkind ? 2 : 1, 300);
  c->cons = tu_rng_chance(r, 0.5) ? NDF_ECC_V : NDF_ECC_T;
  c->in_layout = tu_rng_chance(r, 0.4) ? TU_LAYOUT_PADDED | (tu_rng_chance(r, 0.5) ? TU_LAYOUT_NEGATIVE : 0) |
                                             (tu_rng_chance(r, 0.3) ? TU_LAYOUT_OFFSET : 0)
                                       : TU_LAYOUT_C;
  c->out_layout = tu_rng_chance(r, 0.3) ? TU_LAYOUT_PADDED : tu_rng_chance(r, 0.2) ? TU_LAYOUT_FORTRAN : TU_LAYOUT_C;
}

static void describe(ecase *c, const char *what) {
  char sh[128];
  size_t u = 0;
  sh[0] = 0;
  for (int d = 0; d < c->nd; d++) u += (size_t)snprintf(sh + u, sizeof sh - u, "%s%lld", d ? "x" : "", (long long)c->shape[d]);
  snprintf(c->desc, sizeof c->desc, "%s %s %s batch=%d %s vkind=%d tkind=%d T=%lld layouts %d/%d", what,
           ndf_dtype_name(c->dt), sh, c->batch, ndf_ecc_construction_name(c->cons), c->vkind, c->tkind, (long long)c->T,
           c->in_layout, c->out_layout);
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

/* The kernel the new path (ndf__ecc_cuda2) must launch for an exact case
 * under the context's tunables (the kernel log checks it): NULL where the
 * choice depends on the device (grids near the resident limit: checked only
 * well below it) or the path is the old one. */
static const char *expected_kernel(ndf_ctx *ctx, const ecase *c, char *buf, size_t len) {
  char eb[32];
  const char *e = tuned(ctx, "ecc.path", eb, sizeof eb);
  if (e && !strcmp(e, "old")) return NULL;
  e = tuned(ctx, "ecc.hist", eb, sizeof eb);
  const int pack = c->T <= 510 && !(e && !strcmp(e, "old"));
  if (!pack) return "ndf_ecc_hist";
  e = tuned(ctx, "ecc.fuse", eb, sizeof eb);
  const int nofuse = e && !strcmp(e, "off");
  e = tuned(ctx, "ecc.brick", eb, sizeof eb);
  const int brick = e && (!strcmp(e, "1") || !strcmp(e, "2"));
  /* a given range with lo < hi: float32 calls take the telescoped kernels as [min, max] does */
  const int givenr = c->tkind == 2 && !c->rdeg && c->dt == NDF_FLOAT32 && !brick;
  if ((c->tkind != 1 && !givenr) || nofuse) return "ndf_ecc_pack"; /* values, or unfused */
  if (brick) return "ndf_ecc_brick";
  int64_t nimg = 1;
  for (int d = 0; d < c->batch; d++) nimg *= c->shape[d];
  const int64_t *sp = c->shape + c->batch;
  if (c->nsp == 2) {
    e = tuned(ctx, "ecc.2d", eb, sizeof eb);
    if (c->dt == NDF_FLOAT64 || (e && !strcmp(e, "old"))) return "ndf_ecc_pack";
    /* the telescoped kernel for T <= 320 (strip2's tasks) unless ecc.2d=strip2, else ndf_ecc_strip2
     * (8 strips per block at least; checked well below the resident grid of an H200) */
    const int tele = !(e && !strcmp(e, "strip2")) && c->T <= 320;
    if (givenr && !tele) return "ndf_ecc_pack"; /* a range: ndf_ecc_strip2t only */
    if (nimg * ((sp[1] + 128 * 8 - 1) / (128 * 8)) > 256) return NULL;
    return tele ? "ndf_ecc_strip2t" : "ndf_ecc_strip2";
  }
  /* 3-D: the telescoped warp-strip kernel for float32, uint8 and uint16 and T <= 320
   * unless ecc.3d=old (tasks of W columns x 31 rows, 8 per block; checked well below the resident
   * grid of an H200; a device with few SMs may fall back) */
  e = tuned(ctx, "ecc.3d", eb, sizeof eb);
  if (c->T <= 320 &&
      c->dt != NDF_FLOAT64 && !(e && !strcmp(e, "old"))) {
    char wb[32], bcb[32], sgb[32];
    const char *w3 = tuned(ctx, "ecc.w3", wb, sizeof wb);
    const int t = c->cons == NDF_ECC_T, w = w3 && atoi(w3) == 8 ? 8 : 16;
    if (nimg * ((((sp[2] + w - 1) / w) * ((sp[1] + t + 30) / 31) + 7) / 8) > 128) return NULL;
    /* staged planes (ndf_ecc_strip3s): float32, widths multiple of 128 at 16 columns per lane, from 2^26 (a range: 2^21)
     * voxels a call or with ecc.stg=on (two blocks fit an H200's SM up to T 326: every T here) */
    const char *bc = tuned(ctx, "ecc.bcol", bcb, sizeof bcb), *sg = tuned(ctx, "ecc.stg", sgb, sizeof sgb);
    if (w == 16 && c->dt == NDF_FLOAT32 && sp[2] % 128 == 0 && !(bc && !strcmp(bc, "off")) &&
        (sg ? !strcmp(sg, "on") : nimg * sp[0] * sp[1] * sp[2] >= ((int64_t)1 << (givenr ? 21 : 26))))
      return "ndf_ecc_strip3s";
    return w == 16 ? "ndf_ecc_strip3" : "ndf_ecc_strip3n";
  }
  if (c->tkind == 2) return "ndf_ecc_pack"; /* the rows kernel and the fused march: [min, max] only */
  /* ecc.rows: 0 the march, 1..4 ndf_ecc_rows with PF = mode - 1, other values modes this
   * model does not know (PF not checked); unset: the rows kernel for uint8 / uint16, the march for
   * floats (or the rows kernel: a default that may follow the volume) */
  e = tuned(ctx, "ecc.rows", eb, sizeof eb);
  const int known = e && e[0] >= '0' && e[0] <= '4' && !e[1];
  const int rmode = known ? e[0] - '0' : e && *e ? -1 : c->dt == NDF_UINT8 || c->dt == NDF_UINT16 ? 1 : -2;
  if (rmode == 0 || c->T > 256) return "ndf_ecc_pack";
  if (nimg * ((sp[1] + 31) / 32) * ((sp[2] + 127) / 128) > 128) return NULL; /* tiles of 32 x 128 */
  if (rmode == -2) return "ndf_ecc_pack||ndf_ecc_rows";
  if (rmode == -1) return "ndf_ecc_rows";
  snprintf(buf, len, "ndf_ecc_rows|PF=%d", rmode - 1);
  return buf;
}

/* One exact case: CPU on the host copy, GPU on a relaid device copy. */
static int run_exact(ndf_ctx *ctx, ecase *c, tu_rng *r) {
  describe(c, "exact");
  int rc = 0;
  tu_array hin, lin, cpu, gpu, vals = {0};
  tu_dev din = {0}, dout = {0};
  assert_int_equal(tu_array_alloc(&hin, c->dt, c->nd, c->shape), 0);
  fill_values(&hin.arr, c->vkind, r);
  assert_int_equal(tu_array_relayout(&lin, &hin.arr, c->in_layout, r), 0);
  int64_t oshape[NDF_MAX_NDIM];
  for (int d = 0; d < c->batch; d++) oshape[d] = c->shape[d];
  oshape[c->batch] = c->T;
  assert_int_equal(tu_array_alloc(&cpu, NDF_INT64, c->batch + 1, oshape), 0);
  assert_int_equal(tu_array_like(&gpu, &cpu.arr, c->out_layout, r), 0);
  ndf_ecc_options o;
  ndf_ecc_options_init(&o);
  o.construction = c->cons;
  o.batch_dims = c->batch;
  o.nthresholds = c->T;
  if (c->tkind == 0) {
    assert_int_equal(tu_array_alloc(&vals, NDF_FLOAT64, 1, &c->T), 0);
    for (int64_t k = 0; k < c->T; k++) {
      double v = c->vkind == 0 ? (double)tu_rng_int(r, -1, 13) : tu_rng_normal(r) * 60;
      if (tu_rng_chance(r, 0.1) && k > 0) v = tu_get(&vals.arr, tu_rng_int(r, 0, k - 1)); /* repeats */
      if (tu_rng_chance(r, 0.03)) v = tu_rng_chance(r, 0.5) ? INFINITY : -INFINITY;
      tu_set(&vals.arr, k, v);
    }
    o.values = &vals.arr;
  } else if (c->tkind == 2) {
    o.has_range = 1;
    o.range_lo = tu_rng_normal(r) * 10;
    o.range_hi = o.range_lo + (tu_rng_chance(r, 0.1) ? 0 : tu_rng_unif(r) * 100);
    c->rdeg = o.range_lo == o.range_hi;
  }
  ndf_status sc = ndf_euler_characteristic_curve(ctx, &hin.arr, &cpu.arr, &o);
  if (sc != NDF_OK) {
    printf("CPU failed on %s: %s\n", c->desc, ndf_errmsg(ctx));
    rc = 1;
    goto done;
  }
  tu_dev_upload(ctx, &din, &lin);
  tu_dev_upload(ctx, &dout, &gpu);
  const uint64_t mark = tu_klog_mark(ctx);
  ndf_status sg = ndf_euler_characteristic_curve(ctx, &din.arr, &dout.arr, &o);
  if (sg == NDF_OK) sg = ndf_ctx_synchronize(ctx);
  if (sg != NDF_OK) {
    printf("GPU failed on %s: %s\n", c->desc, ndf_errmsg(ctx));
    rc = 1;
    goto done;
  }
  char kbuf[64];
  const char *want = expected_kernel(ctx, c, kbuf, sizeof kbuf);
  if (want && tu_klog_check(ctx, mark, want, 1, c->desc)) rc = 1;
  tu_dev_download(ctx, &dout, &gpu);
  char msg[1024];
  int64_t bad = tu_compare(&cpu.arr, &gpu.arr, msg, sizeof msg);
  if (bad) {
    printf("%s: %lld of %lld curve values differ\n%s", c->desc, (long long)bad, (long long)ndf_array_size(&cpu.arr), msg);
    rc = 1;
  }
  if (tu_check_gaps(&gpu) >= 0) {
    printf("%s: the output's gaps were written\n", c->desc);
    rc = 1;
  }
done:
  tu_dev_free(ctx, &din);
  tu_dev_free(ctx, &dout);
  tu_array_free(&hin);
  tu_array_free(&lin);
  tu_array_free(&cpu);
  tu_array_free(&gpu);
  tu_array_free(&vals);
  return rc;
}

static void test_gpu_exact_random(void **state) {
  gpu_state *s = *state;
  tu_rng r;
  tu_rng_seed(&r, s->seed);
  int failed = 0;
  for (long k = 0; k < s->ncases && failed < 5; k++) {
    ecase c;
    draw_case(&c, &r);
    failed += run_exact(s->ctx, &c, &r);
  }
  if (failed) printf("%d exact cases failed; seed %llu\n", failed, (unsigned long long)s->seed);
  assert_int_equal(failed, 0);
}

/* The benchmark workloads (float32, T = 256 over [min, max]) at size. */
static void test_gpu_benchmark_shapes(void **state) {
  gpu_state *s = *state;
  tu_rng r;
  tu_rng_seed(&r, s->seed ^ 0xecc);
  static const struct { int nd, batch; int64_t shape[3]; } W[] = {
      {2, 0, {1024, 1024}}, {3, 1, {64, 256, 256}}, {3, 0, {128, 128, 128}}, {3, 0, {256, 256, 256}}};
  for (size_t k = 0; k < sizeof W / sizeof W[0]; k++) {
    if (s->ncases < 100 && W[k].shape[0] == 256) continue;
    for (int cons = 0; cons < 2; cons++) {
      ecase c;
      memset(&c, 0, sizeof c);
      c.dt = NDF_FLOAT32;
      c.nd = W[k].nd;
      c.batch = W[k].batch;
      c.nsp = c.nd - c.batch;
      memcpy(c.shape, W[k].shape, sizeof W[k].shape);
      c.vkind = 1;
      c.tkind = 1;
      c.T = 256;
      c.cons = (ndf_ecc_construction)cons;
      double t0 = tu_now_ms();
      assert_int_equal(run_exact(s->ctx, &c, &r), 0);
      printf("%s: %.1f ms (CPU reference, transfers and first compile included)\n", c.desc, tu_now_ms() - t0);
    }
  }
}

/* One NaN case: EINVAL naming the least NaN's C-order index (exact curve),
 * every output untouched (poisoned before, poisoned after).  nan_at < 0: an
 * infinite value instead (an error only for thresholds over [min, max]). */
static void nan_case(ndf_ctx *ctx, ndf_dtype dt, int nd, const int64_t *sh, int batch, int64_t nan_at, int64_t nan2,
                     int tkind, ndf_ecc_construction cons, int deferred) {
  /* deferred: ctx defers data checks; under the default environment the warp-strip kernels'
   * calls (float32 over [min, max] or over a range) then return NDF_OK and
   * ndf_ctx_synchronize the error */
  const int defers = deferred && dt == NDF_FLOAT32 && tkind <= 1;
  int64_t n = 1;
  for (int d = 0; d < nd; d++) n *= sh[d];
  int64_t os[NDF_MAX_NDIM];
  for (int d = 0; d < batch; d++) os[d] = sh[d];
  os[batch] = 16;
  tu_array h, o, v;
  assert_int_equal(tu_array_alloc(&h, dt, nd, sh), 0);
  assert_int_equal(tu_array_alloc(&o, NDF_INT64, batch + 1, os), 0);
  const int64_t T16 = 16;
  assert_int_equal(tu_array_alloc(&v, NDF_FLOAT64, 1, &T16), 0);
  for (int64_t k = 0; k < 16; k++) tu_set(&v.arr, k, (double)(15 - k) * 0.5);
  for (int64_t i = 0; i < n; i++) tu_set(&h.arr, i, (double)(i % 7));
  const int inf_case = nan_at < 0;
  if (inf_case) tu_set(&h.arr, n / 2, INFINITY);
  else {
    tu_set(&h.arr, nan2, NAN);
    tu_set(&h.arr, nan_at, NAN);
  }
  tu_poison(o.base, o.bytes);
  tu_dev din, dout;
  tu_dev_upload(ctx, &din, &h);
  tu_dev_upload(ctx, &dout, &o);
  ndf_ecc_options opt;
  ndf_ecc_options_init(&opt);
  opt.nthresholds = 16;
  opt.batch_dims = batch;
  opt.construction = cons;
  if (tkind == 1) {
    opt.has_range = 1;
    opt.range_hi = 5;
  } else if (tkind == 2) {
    opt.values = &v.arr;
  }
  ndf_status st = ndf_euler_characteristic_curve(ctx, &din.arr, &dout.arr, &opt);
  if (inf_case && tkind != 0) {
    /* infinite values are fine with a range or values: the curve equals the CPU's */
    assert_int_equal(st, NDF_OK);
    tu_array cpu;
    assert_int_equal(tu_array_alloc(&cpu, NDF_INT64, batch + 1, os), 0);
    assert_int_equal(ndf_euler_characteristic_curve(ctx, &h.arr, &cpu.arr, &opt), NDF_OK);
    assert_int_equal(ndf_ctx_synchronize(ctx), NDF_OK);
    tu_dev_download(ctx, &dout, &o);
    char msg[512];
    assert_int_equal(tu_compare(&cpu.arr, &o.arr, msg, sizeof msg), 0);
    tu_array_free(&cpu);
  } else {
    if (defers) {
      assert_int_equal(st, NDF_OK); /* the check's failure comes with the next synchronize */
      st = ndf_ctx_synchronize(ctx);
      assert_non_null(strstr(ndf_errmsg(ctx), "found by a deferred check: call 1 of the 1 "));
    }
    assert_int_equal(st, NDF_EINVAL);
    assert_non_null(strstr(ndf_errmsg(ctx), "ndf_euler_characteristic_curve: bad argument 'input'"));
    char want[64];
    if (!inf_case) {
      snprintf(want, sizeof want, "element %lld ", (long long)nan_at);
      if (!strstr(ndf_errmsg(ctx), want)) printf("message: %s (want %s)\n", ndf_errmsg(ctx), want);
      assert_non_null(strstr(ndf_errmsg(ctx), want));
    } else {
      assert_non_null(strstr(ndf_errmsg(ctx), "infinite"));
    }
    assert_int_equal(ndf_ctx_synchronize(ctx), NDF_OK);
    tu_dev_download(ctx, &dout, &o);
    assert_int_equal(tu_poison_check(o.base, o.bytes), -1);
  }
  /* soft forward and backward (float inputs): EINVAL, outputs untouched */
  if (!inf_case && (dt == NDF_FLOAT32 || dt == NDF_FLOAT64)) {
    tu_array so, go, gi, gt;
    int64_t fs[NDF_MAX_NDIM];
    memcpy(fs, os, sizeof fs);
    assert_int_equal(tu_array_alloc(&so, NDF_FLOAT64, batch + 1, fs), 0);
    assert_int_equal(tu_array_alloc(&go, NDF_FLOAT64, batch + 1, fs), 0);
    assert_int_equal(tu_array_alloc(&gi, dt, nd, sh), 0);
    assert_int_equal(tu_array_alloc(&gt, NDF_FLOAT64, 1, &T16), 0);
    for (int64_t i = 0; i < ndf_array_size(&go.arr); i++) tu_set(&go.arr, i, 1.0);
    tu_poison(so.base, so.bytes);
    tu_poison(gi.base, gi.bytes);
    tu_poison(gt.base, gt.bytes);
    tu_dev dso, dgo, dgi, dgt;
    tu_dev_upload(ctx, &dso, &so);
    tu_dev_upload(ctx, &dgo, &go);
    tu_dev_upload(ctx, &dgi, &gi);
    tu_dev_upload(ctx, &dgt, &gt);
    ndf_soft_ecc_options so_opt;
    ndf_soft_ecc_options_init(&so_opt);
    so_opt.batch_dims = batch;
    so_opt.construction = cons;
    assert_int_equal(ndf_soft_ecc_forward(ctx, &din.arr, &v.arr, &dso.arr, &so_opt), NDF_EINVAL);
    assert_int_equal(ndf_soft_ecc_backward(ctx, &din.arr, &v.arr, &dgo.arr, &dgi.arr, &dgt.arr, &so_opt), NDF_EINVAL);
    assert_int_equal(ndf_ctx_synchronize(ctx), NDF_OK);
    tu_dev_download(ctx, &dso, &so);
    tu_dev_download(ctx, &dgi, &gi);
    tu_dev_download(ctx, &dgt, &gt);
    assert_int_equal(tu_poison_check(so.base, so.bytes), -1);
    assert_int_equal(tu_poison_check(gi.base, gi.bytes), -1);
    assert_int_equal(tu_poison_check(gt.base, gt.bytes), -1);
    tu_dev *dd[] = {&dso, &dgo, &dgi, &dgt};
    for (int i = 0; i < 4; i++) tu_dev_free(ctx, dd[i]);
    tu_array *aa[] = {&so, &go, &gi, &gt};
    for (int i = 0; i < 4; i++) tu_array_free(aa[i]);
  }
  tu_dev_free(ctx, &din);
  tu_dev_free(ctx, &dout);
  tu_array_free(&h);
  tu_array_free(&o);
  tu_array_free(&v);
}

/* NaN: EINVAL naming the least NaN, output untouched, on the GPU as on the
 * CPU, for every way the thresholds come (spaced over [min, max]: the scan
 * finds it; a range or values: the contribution pass does), 2-D and 3-D,
 * batches with the NaN in a later image, float32 and float64; an infinite
 * value fails only over [min, max]. */
static void nan_cases(ndf_ctx *ctx, int tk, int deferred) {
  static const int64_t s3[3] = {3, 17, 40}, s2[2] = {70, 300}, s4[4] = {2, 3, 9, 33}, s5[3] = {20, 30, 40};
  nan_case(ctx, NDF_FLOAT32, 3, s3, 1, 1234, 1300, tk, NDF_ECC_V, deferred);
  nan_case(ctx, NDF_FLOAT64, 3, s3, 1, 1234, 2000, tk, NDF_ECC_T, deferred);
  nan_case(ctx, NDF_FLOAT32, 2, s2, 0, 20999, 20999, tk, NDF_ECC_T, deferred);
  nan_case(ctx, NDF_FLOAT32, 4, s4, 2, 5 * 9 * 33 + 7, 6 * 9 * 33 - 1, tk, NDF_ECC_V, deferred);
  nan_case(ctx, NDF_FLOAT64, 3, s5, 0, 20 * 30 * 40 - 1, 20 * 30 * 40 - 1, tk, NDF_ECC_V, deferred);
  nan_case(ctx, NDF_FLOAT32, 3, s5, 0, -1, 0, tk, NDF_ECC_V, deferred); /* +inf */
}

static void test_gpu_nan_rejected(void **state) {
  gpu_state *s = *state;
  /* tk 0 ([min, max]) runs the fused default (3-D float32: ndf_ecc_strip3, float64: the march;
   * 2-D: the warp-strip kernel; header in mapped host memory), then (grp 1)
   * the brick kernel reading twice, (grp 2) the brick kernel with resident
   * bricks, (grp 3) the scan + ndf_ecc_pack path, (grp 4) the fused default
   * with the header in device memory read back by a copy, (grp 5) 2-D calls
   * on ndf_ecc_pack's fused march, (grp 6, 7) ndf_ecc_rows for 3-D
   * (ecc.3d=old with ecc.rows=1: PF = 0, =2: PF = 1, =5: PF = 4, the cp.async staging) */
  static const char *const var[9] = {NULL,      "ecc.brick", "ecc.brick", "ecc.fuse", "ecc.maphdr",
                                     "ecc.2d",  "ecc.rows",  "ecc.rows",  "ecc.rows"};
  static const char *const val[9] = {NULL, "1", "2", "off", "off", "old", "1", "2", "5"};
  for (int k = 0; k < 27; k++) {
    const int grp = k / 3, tk = k % 3;
    if (grp > 0 && tk > 0) continue; /* given thresholds: the same path in every group */
    if (var[grp]) tune(s->ctx, var[grp], val[grp]);
    if (grp >= 6) tune(s->ctx, "ecc.3d", "old");
    nan_cases(s->ctx, tk, 0);
    if (var[grp]) tune(s->ctx, var[grp], NULL);
    tune(s->ctx, "ecc.3d", NULL);
  }
}

/* A context with deferred data checks (ndf_ctx_options.deferred_errors): the NaN / inf cases above
 * (float32 over [min, max]: the call returns NDF_OK, the next synchronize the error naming the
 * element and the call, as float32 calls over a range; float64, values: the call's own error); four calls
 * before one report (clean, NaN, NaN, clean: the first failing one is reported, by a
 * device-to-host copy, once; the failing calls' outputs untouched, the clean ones equal the CPU);
 * then random float32 curves over [min, max] against the CPU in that context. */
static void test_gpu_deferred(void **state) {
  gpu_state *s = *state;
  ndf_ctx_options co;
  ndf_ctx_options_init(&co);
  co.backend = NDF_BACKEND_CUDA;
  co.deferred_errors = 1;
  ndf_ctx *ctx;
  assert_int_equal(ndf_ctx_create(&ctx, &co), NDF_OK);
  for (int tk = 0; tk < 3; tk++) nan_cases(ctx, tk, 1);

  const int64_t sh[3][3] = {{64, 200}, {64, 200}, {9, 20, 33}}; /* 2-D (strip2t), 3-D (strip3) */
  for (int k = 0; k < 3; k++) {
    const int nd = k < 2 ? 2 : 3;
    int64_t n = 1, T = k == 1 ? 400 : 32; /* T 400: ndf_ecc_strip2 */
    for (int d = 0; d < nd; d++) n *= sh[k][d];
    tu_array h[4], o[4], cpu;
    tu_dev din[4], dout[4];
    assert_int_equal(tu_array_alloc(&cpu, NDF_INT64, 1, &T), 0);
    ndf_ecc_options opt;
    ndf_ecc_options_init(&opt);
    opt.nthresholds = T;
    opt.construction = k == 2 ? NDF_ECC_T : NDF_ECC_V;
    const int64_t nan_at[4] = {-1, 777 + k, 5, -1};
    for (int i = 0; i < 4; i++) {
      assert_int_equal(tu_array_alloc(&h[i], NDF_FLOAT32, nd, sh[k]), 0);
      assert_int_equal(tu_array_alloc(&o[i], NDF_INT64, 1, &T), 0);
      for (int64_t j = 0; j < n; j++) tu_set(&h[i].arr, j, (double)((j * (i + 3)) % 11) - 4.5);
      if (nan_at[i] >= 0) tu_set(&h[i].arr, nan_at[i], NAN);
      tu_poison(o[i].base, o[i].bytes);
      tu_dev_upload(ctx, &din[i], &h[i]);
      tu_dev_upload(ctx, &dout[i], &o[i]);
    }
    for (int i = 0; i < 4; i++) assert_int_equal(ndf_euler_characteristic_curve(ctx, &din[i].arr, &dout[i].arr, &opt), NDF_OK);
    /* the report comes with the first device-to-host copy */
    const ndf_status st = ndf_array_copy(ctx, &o[0].arr, &dout[0].arr);
    char want[64];
    snprintf(want, sizeof want, "element %lld (C order) is NaN", (long long)nan_at[1]);
    if (st != NDF_EINVAL || !strstr(ndf_errmsg(ctx), want))
      printf("case %d: status %d, message: %s (want %s)\n", k, (int)st, ndf_errmsg(ctx), want);
    assert_int_equal(st, NDF_EINVAL);
    assert_non_null(strstr(ndf_errmsg(ctx), want));
    assert_non_null(strstr(ndf_errmsg(ctx), "call 2 of the 4 "));
    assert_int_equal(ndf_ctx_synchronize(ctx), NDF_OK); /* reported once */
    for (int i = 0; i < 4; i++) {
      tu_dev_download(ctx, &dout[i], &o[i]);
      if (nan_at[i] >= 0) {
        assert_int_equal(tu_poison_check(o[i].base, o[i].bytes), -1);
      } else {
        assert_int_equal(ndf_euler_characteristic_curve(ctx, &h[i].arr, &cpu.arr, &opt), NDF_OK);
        char msg[512];
        assert_int_equal(tu_compare(&cpu.arr, &o[i].arr, msg, sizeof msg), 0);
      }
      tu_dev_free(ctx, &din[i]);
      tu_dev_free(ctx, &dout[i]);
      tu_array_free(&h[i]);
      tu_array_free(&o[i]);
    }
    tu_array_free(&cpu);
  }

  tu_rng r;
  tu_rng_seed(&r, s->seed ^ 0xdefe);
  int failed = 0;
  for (long k = 0; k < s->ncases / 3 + 8 && failed < 5; k++) {
    ecase c;
    draw_case(&c, &r);
    c.dt = NDF_FLOAT32;
    c.tkind = 1;
    c.T = tu_rng_int(&r, 2, 320);
    failed += run_exact(ctx, &c, &r);
  }
  ndf_ctx_destroy(ctx);
  if (failed) printf("%d deferred cases failed; seed %llu\n", failed, (unsigned long long)s->seed);
  assert_int_equal(failed, 0);
}

/* ---- soft curve ------------------------------------------------------------------------------ */

static int near(double want, double got, double tol) { return fabs(want - got) <= tol; }

static int run_soft(ndf_ctx *ctx, ecase *c, tu_rng *r) {
  describe(c, "soft");
  int rc = 0;
  tu_array hin, lin, thr, cf, gf, go, lgo, cgi, ggi, cgt, ggt;
  tu_dev din = {0}, dfo = {0}, dgo = {0}, dgi = {0}, dgt = {0};
  assert_int_equal(tu_array_alloc(&hin, c->dt, c->nd, c->shape), 0);
  fill_values(&hin.arr, c->vkind, r);
  assert_int_equal(tu_array_relayout(&lin, &hin.arr, c->in_layout, r), 0);
  assert_int_equal(tu_array_alloc(&thr, NDF_FLOAT64, 1, &c->T), 0);
  /* tkind 3 (soft_tight): thresholds and lambda that ndf_ecc_soft2's product form takes (each group of 8
   * sorted thresholds within 32 / kappa of its centre), float32 to 1e-6 */
  const int tight = c->tkind == 3;
  for (int64_t k = 0; k < c->T; k++)
    tu_set(&thr.arr, k, tight || c->vkind == 0 ? tu_rng_unif(r) * 14 - 1 : tu_rng_normal(r) * 60);
  int64_t oshape[NDF_MAX_NDIM];
  for (int d = 0; d < c->batch; d++) oshape[d] = c->shape[d];
  oshape[c->batch] = c->T;
  assert_int_equal(tu_array_alloc(&cf, NDF_FLOAT64, c->batch + 1, oshape), 0);
  assert_int_equal(tu_array_like(&gf, &cf.arr, c->out_layout, r), 0);
  assert_int_equal(tu_array_alloc(&go, NDF_FLOAT64, c->batch + 1, oshape), 0);
  for (int64_t i = 0; i < ndf_array_size(&go.arr); i++) tu_set(&go.arr, i, tu_rng_normal(r));
  assert_int_equal(tu_array_relayout(&lgo, &go.arr, c->out_layout, r), 0);
  assert_int_equal(tu_array_alloc(&cgi, c->dt, c->nd, c->shape), 0);
  assert_int_equal(tu_array_like(&ggi, &cgi.arr, c->out_layout, r), 0);
  assert_int_equal(tu_array_alloc(&cgt, NDF_FLOAT64, 1, &c->T), 0);
  assert_int_equal(tu_array_like(&ggt, &cgt.arr, tu_rng_chance(r, 0.3) ? TU_LAYOUT_PADDED : TU_LAYOUT_C, r), 0);
  ndf_soft_ecc_options o;
  ndf_soft_ecc_options_init(&o);
  o.construction = c->cons;
  o.batch_dims = c->batch;
  o.lambda = tight ? 0.3 + tu_rng_unif(r) * 2.7 : tu_rng_chance(r, 0.5) ? 0.3 + tu_rng_unif(r) * 3 : 1 + tu_rng_unif(r) * 40;
  assert_int_equal(ndf_soft_ecc_forward(ctx, &hin.arr, &thr.arr, &cf.arr, &o), NDF_OK);
  assert_int_equal(ndf_soft_ecc_backward(ctx, &hin.arr, &thr.arr, &go.arr, &cgi.arr, &cgt.arr, &o), NDF_OK);
  tu_dev_upload(ctx, &din, &lin);
  tu_dev_upload(ctx, &dfo, &gf);
  tu_dev_upload(ctx, &dgo, &lgo);
  tu_dev_upload(ctx, &dgi, &ggi);
  tu_dev_upload(ctx, &dgt, &ggt);
  ndf_status st = ndf_soft_ecc_forward(ctx, &din.arr, &thr.arr, &dfo.arr, &o);
  if (st == NDF_OK) st = ndf_soft_ecc_backward(ctx, &din.arr, &thr.arr, &dgo.arr, &dgi.arr, &dgt.arr, &o);
  if (st == NDF_OK) st = ndf_ctx_synchronize(ctx);
  if (st != NDF_OK) {
    printf("GPU failed on %s: %s\n", c->desc, ndf_errmsg(ctx));
    rc = 1;
    goto done;
  }
  tu_dev_download(ctx, &dfo, &gf);
  tu_dev_download(ctx, &dgi, &ggi);
  tu_dev_download(ctx, &dgt, &ggt);
  int64_t npix = 1, nimg = 1;
  for (int d = 0; d < c->nd; d++) {
    if (d < c->batch) nimg *= c->shape[d];
    else npix *= c->shape[d];
  }
  (void)nimg;
  const double eps = c->dt == NDF_FLOAT32 ? (tight ? 1e-6 : 2e-5) : 1e-11;
  double gsum = 0;
  for (int64_t i = 0; i < ndf_array_size(&go.arr); i++) gsum += fabs(tu_get(&go.arr, i));
  int64_t bad = 0;
  for (int64_t i = 0; i < ndf_array_size(&cf.arr); i++)
    if (!near(tu_get(&cf.arr, i), tu_get(&gf.arr, i), eps * 7 * (double)npix + 1e-12)) {
      if (bad++ < 3) printf("%s: chi[%lld] %.12g vs %.12g\n", c->desc, (long long)i, tu_get(&cf.arr, i), tu_get(&gf.arr, i));
    }
  for (int64_t i = 0; i < ndf_array_size(&cgi.arr); i++)
    if (!near(tu_get(&cgi.arr, i), tu_get(&ggi.arr, i), eps * 7 * o.lambda * gsum + 1e-12)) {
      if (bad++ < 6) printf("%s: grad_input[%lld] %.12g vs %.12g\n", c->desc, (long long)i, tu_get(&cgi.arr, i), tu_get(&ggi.arr, i));
    }
  for (int64_t k = 0; k < c->T; k++)
    if (!near(tu_get(&cgt.arr, k), tu_get(&ggt.arr, k), eps * 7 * o.lambda * gsum * (double)npix + 1e-12)) {
      if (bad++ < 9) printf("%s: grad_thresholds[%lld] %.12g vs %.12g\n", c->desc, (long long)k, tu_get(&cgt.arr, k), tu_get(&ggt.arr, k));
    }
  if (tu_check_gaps(&gf) >= 0 || tu_check_gaps(&ggi) >= 0 || tu_check_gaps(&ggt) >= 0) {
    printf("%s: an output's gaps were written\n", c->desc);
    bad++;
  }
  if (bad) rc = 1;
done:
  tu_dev_free(ctx, &din);
  tu_dev_free(ctx, &dfo);
  tu_dev_free(ctx, &dgo);
  tu_dev_free(ctx, &dgi);
  tu_dev_free(ctx, &dgt);
  tu_array *all[] = {&hin, &lin, &thr, &cf, &gf, &go, &lgo, &cgi, &ggi, &cgt, &ggt};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tu_array_free(all[i]);
  return rc;
}

/* env: soft_ecc.mode for these cases (old: ndf_ecc_soft for float32 too; direct: ndf_ecc_soft2 without
 * the product form; fused: 2-D inputs without the contribution pass); tight: float32 only, tkind 3
 * (see run_soft). */
static void soft_cases(gpu_state *s, uint64_t salt, const char *env, int tight) {
  tu_rng r;
  tu_rng_seed(&r, s->seed ^ salt);
  if (env) tune(s->ctx, "soft_ecc.mode", env);
  int failed = 0;
  const long n = s->ncases / 3 > 10 ? s->ncases / 3 : 10;
  for (long k = 0; k < n && failed < 5; k++) {
    ecase c;
    memset(&c, 0, sizeof c);
    c.dt = tight || tu_rng_chance(&r, 0.5) ? NDF_FLOAT32 : NDF_FLOAT64;
    c.tkind = tight ? 3 : 0;
    draw_shape(&c, &r, 1);
    c.vkind = tu_rng_chance(&r, 0.5) ? 0 : 1;
    c.T = tu_rng_chance(&r, 0.1) ? tu_rng_int(&r, tight ? 65 : 257, tight ? 200 : 600) : tu_rng_int(&r, 1, 80);
    c.cons = tu_rng_chance(&r, 0.5) ? NDF_ECC_V : NDF_ECC_T;
    c.in_layout = tu_rng_chance(&r, 0.3) ? TU_LAYOUT_PADDED | TU_LAYOUT_NEGATIVE : TU_LAYOUT_C;
    c.out_layout = tu_rng_chance(&r, 0.3) ? TU_LAYOUT_PADDED : TU_LAYOUT_C;
    failed += run_soft(s->ctx, &c, &r);
  }
  if (env) tune(s->ctx, "soft_ecc.mode", NULL);
  if (failed)
    printf("%d soft cases failed (soft_ecc.mode=%s%s); seed %llu\n", failed, env ? env : "", tight ? ", tight" : "",
           (unsigned long long)s->seed);
  assert_int_equal(failed, 0);
}
static void test_gpu_soft_random(void **state) { soft_cases(*state, 0x50f7, NULL, 0); }
static void test_gpu_soft_tight(void **state) { soft_cases(*state, 0x5e1f, NULL, 1); }
static void test_gpu_soft_fused(void **state) { soft_cases(*state, 0x50f7, "fused", 0); }
static void test_gpu_soft_direct(void **state) { soft_cases(*state, 0x50f7, "direct", 0); }
static void test_gpu_soft_old(void **state) { soft_cases(*state, 0x50f7, "old", 0); }

/* The soft workload (64 x 256^2 float32, T = 64, forward + backward):
 * host-clock time per pair of calls after a warm-up, printed, not judged. */
static void test_gpu_soft_timing(void **state) {
  gpu_state *s = *state;
  const int64_t sh[3] = {64, 256, 256}, osh[2] = {64, 64}, T = 64;
  tu_rng r;
  tu_rng_seed(&r, s->seed ^ 0x71);
  tu_array h, th, go;
  assert_int_equal(tu_array_alloc(&h, NDF_FLOAT32, 3, sh), 0);
  for (int64_t i = 0; i < 64 * 256 * 256; i++) tu_set(&h.arr, i, (float)(tu_rng_unif(&r) * 2000 - 1000));
  assert_int_equal(tu_array_alloc(&th, NDF_FLOAT64, 1, &T), 0);
  for (int64_t k = 0; k < T; k++) tu_set(&th.arr, k, -1000 + 2000.0 * (double)k / (double)(T - 1));
  assert_int_equal(tu_array_alloc(&go, NDF_FLOAT64, 2, osh), 0);
  for (int64_t i = 0; i < 64 * 64; i++) tu_set(&go.arr, i, tu_rng_normal(&r));
  ndf_array din, dout, dgo, dgi, dgt;
  assert_int_equal(ndf_array_alloc(s->ctx, &din, NDF_DEVICE_CUDA, NDF_FLOAT32, 3, sh), NDF_OK);
  assert_int_equal(ndf_array_alloc(s->ctx, &dgi, NDF_DEVICE_CUDA, NDF_FLOAT32, 3, sh), NDF_OK);
  assert_int_equal(ndf_array_alloc(s->ctx, &dout, NDF_DEVICE_CUDA, NDF_FLOAT64, 2, osh), NDF_OK);
  assert_int_equal(ndf_array_alloc(s->ctx, &dgo, NDF_DEVICE_CUDA, NDF_FLOAT64, 2, osh), NDF_OK);
  assert_int_equal(ndf_array_alloc(s->ctx, &dgt, NDF_DEVICE_CUDA, NDF_FLOAT64, 1, &T), NDF_OK);
  assert_int_equal(ndf_array_copy(s->ctx, &din, &h.arr), NDF_OK);
  assert_int_equal(ndf_array_copy(s->ctx, &dgo, &go.arr), NDF_OK);
  ndf_soft_ecc_options o;
  ndf_soft_ecc_options_init(&o);
  o.batch_dims = 1;
  o.lambda = 0.05;
  /* the default (ndf_ecc_soft2, product form, after the contribution pass), then soft_ecc.mode=fused,
   * =direct and =old */
  static const char *const envs[4] = {NULL, "fused", "direct", "old"};
  for (int v = 0; v < 4; v++) {
    if (envs[v]) tune(s->ctx, "soft_ecc.mode", envs[v]);
    double t0 = 0;
    for (int it = 0; it < 23; it++) {
      if (it == 3) {
        assert_int_equal(ndf_ctx_synchronize(s->ctx), NDF_OK);
        t0 = tu_now_ms();
      }
      assert_int_equal(ndf_soft_ecc_forward(s->ctx, &din, &th.arr, &dout, &o), NDF_OK);
      assert_int_equal(ndf_soft_ecc_backward(s->ctx, &din, &th.arr, &dgo, &dgi, &dgt, &o), NDF_OK);
    }
    assert_int_equal(ndf_ctx_synchronize(s->ctx), NDF_OK);
    printf("soft ECC forward + backward, 64x256x256 float32, T = 64 (soft_ecc.mode=%s): %.3f ms per pair (host clock, "
           "mean of 20; one header readback per call included)\n", envs[v] ? envs[v] : "", (tu_now_ms() - t0) / 20);
    if (envs[v]) tune(s->ctx, "soft_ecc.mode", NULL);
  }
  ndf_array *all[] = {&din, &dout, &dgo, &dgi, &dgt};
  for (int i = 0; i < 5; i++) ndf_array_free(s->ctx, all[i]);
  tu_array_free(&h);
  tu_array_free(&th);
  tu_array_free(&go);
}

/* The old path (ecc.path=old: scan readback, host thresholds, separate
 * final kernel) on its own random cases, exact and soft: kept selectable to
 * compare both in one GPU run. */
static void test_gpu_old_path(void **state) {
  gpu_state *s = *state;
  tu_rng r;
  tu_rng_seed(&r, s->seed ^ 0x01d);
  tune(s->ctx, "ecc.path", "old");
  int failed = 0;
  const long n = s->ncases / 4 > 10 ? s->ncases / 4 : 10;
  for (long k = 0; k < n && failed < 5; k++) {
    ecase c;
    draw_case(&c, &r);
    failed += run_exact(s->ctx, &c, &r);
  }
  tune(s->ctx, "ecc.path", NULL);
  if (failed) printf("%d exact cases failed on the old path; seed %llu\n", failed, (unsigned long long)s->seed);
  assert_int_equal(failed, 0);
}

/* The packed bin kernel (ndf_ecc_pack, T <= 510) at its edges: T = 1, 2,
 * 255, 256, 509, 510 and the fallback past it (511, 1000); shapes not
 * multiple of 2, 64 (a 3-D tile row) or 512 (a 2-D tile), 1-long axes;
 * ties (few distinct values), constant images; thresholds as values, over
 * [min, max], over a range; V and T; batches; every dtype.  The same cases
 * run again with ecc.hist=old (ndf_ecc_hist) to compare both. */
static void pack_cases(gpu_state *s, uint64_t salt, const char *var, const char *env) {
  tu_rng r;
  tu_rng_seed(&r, s->seed ^ salt);
  static const int64_t Ts[] = {1, 2, 255, 256, 300, 509, 510, 511, 1000};
  static const int64_t S2[][2] = {{1, 1}, {1, 7}, {7, 1}, {3, 513}, {5, 1023}, {2, 2}, {33, 511}, {40, 1025}, {9, 64}};
  static const int64_t S3[][3] = {{1, 1, 1}, {1, 9, 65}, {9, 1, 63}, {5, 17, 1}, {3, 9, 129},
                                  {12, 8, 64}, {17, 3, 2}, {20, 16, 127}, {2, 23, 66}};
  static const ndf_dtype dts[4] = {NDF_FLOAT32, NDF_FLOAT64, NDF_UINT8, NDF_UINT16};
  if (env) tune(s->ctx, var, env);
  int failed = 0;
  const long n = s->ncases / 2 > 40 ? s->ncases / 2 : 40;
  for (long k = 0; k < n && failed < 5; k++) {
    ecase c;
    memset(&c, 0, sizeof c);
    c.dt = dts[tu_rng_int(&r, 0, 3)];
    c.nsp = (int)tu_rng_int(&r, 2, 3);
    c.batch = (int)tu_rng_int(&r, 0, 2);
    c.nd = c.nsp + c.batch;
    for (int d = 0; d < c.batch; d++) c.shape[d] = tu_rng_int(&r, 1, 3);
    const int64_t *sp = c.nsp == 2 ? S2[tu_rng_int(&r, 0, 8)] : S3[tu_rng_int(&r, 0, 8)];
    for (int d = 0; d < c.nsp; d++) c.shape[c.batch + d] = sp[d];
    c.vkind = tu_rng_chance(&r, 0.5) ? 0 : tu_rng_chance(&r, 0.8) ? 1 : 2;
    c.T = Ts[tu_rng_int(&r, 0, 8)];
    c.tkind = c.T == 1 ? 0 : (int)tu_rng_int(&r, 0, 2);
    c.cons = tu_rng_chance(&r, 0.5) ? NDF_ECC_V : NDF_ECC_T;
    c.in_layout = tu_rng_chance(&r, 0.2) ? TU_LAYOUT_PADDED | TU_LAYOUT_NEGATIVE : TU_LAYOUT_C;
    c.out_layout = TU_LAYOUT_C;
    failed += run_exact(s->ctx, &c, &r);
  }
  if (env) tune(s->ctx, var, NULL);
  if (failed) printf("%d packed-kernel cases failed (%s=%s); seed %llu\n", failed, var, env ? env : "",
                     (unsigned long long)s->seed);
  assert_int_equal(failed, 0);
}
static void test_gpu_pack_edges(void **state) { pack_cases(*state, 0x9ac, "ecc.hist", NULL); }
static void test_gpu_pack_edges_old_hist(void **state) { pack_cases(*state, 0x9ac, "ecc.hist", "old"); }
/* thresholds over [min, max] without the fused launch (scan, then ndf_ecc_pack) */
static void test_gpu_pack_edges_unfused(void **state) { pack_cases(*state, 0x9ac, "ecc.fuse", "off"); }

/* The brick kernel with resident bricks (ecc.brick=2) on the pack edges
 * (the default runs the march there). */
static void test_gpu_pack_edges_brick(void **state) { pack_cases(*state, 0x9ac, "ecc.brick", "2"); }

/* The brick kernel (ndf_ecc_brick, thresholds over [min, max], T <= 510)
 * against the CPU and the march, the same input under each setting:
 * default (the march, header in mapped host memory), ecc.brick=1 (read
 * twice), ecc.brick=2 (resident bricks when they fit), the default with
 * ecc.maphdr=off (header copied back).  Shapes: 1xN, Nx1, 1x1x1, sizes not multiples of the brick
 * (2-D 16 x 128, 3-D 8 x 8 x 64) on either side, batches of tiny images and
 * of images of several bricks; every dtype; V and T; ties and constant images. */
static void test_gpu_brick(void **state) {
  gpu_state *s = *state;
  tu_rng r;
  tu_rng_seed(&r, s->seed ^ 0xb41c);
  static const int64_t Ts[] = {2, 3, 64, 255, 256, 510};
  static const int64_t S2[][2] = {{1, 1},    {1, 300},  {300, 1},  {16, 128}, {15, 127},  {17, 129},
                                  {33, 257}, {2, 1023}, {1023, 3}, {48, 384}, {100, 250}, {3, 3}};
  static const int64_t S3[][3] = {{1, 1, 1},   {1, 1, 200}, {1, 200, 1}, {200, 1, 1}, {8, 8, 64}, {7, 7, 63},
                                  {9, 9, 65},  {17, 3, 129}, {3, 17, 2}, {24, 16, 128}, {2, 2, 2}, {33, 20, 70}};
  static const ndf_dtype dts[4] = {NDF_FLOAT32, NDF_FLOAT64, NDF_UINT8, NDF_UINT16};
  static const char *const var[4] = {NULL, "ecc.brick", "ecc.brick", "ecc.maphdr"};
  static const char *const val[4] = {NULL, "1", "2", "off"};
  int failed = 0;
  const long n = s->ncases / 2 > 40 ? s->ncases / 2 : 40;
  for (long k = 0; k < n && failed < 5; k++) {
    ecase c;
    memset(&c, 0, sizeof c);
    c.dt = dts[tu_rng_int(&r, 0, 3)];
    c.nsp = (int)tu_rng_int(&r, 2, 3);
    c.batch = (int)tu_rng_int(&r, 0, 2);
    c.nd = c.nsp + c.batch;
    const int tiny = tu_rng_chance(&r, 0.25); /* many tiny images: bricks of several images per block */
    for (int d = 0; d < c.batch; d++) c.shape[d] = tiny ? tu_rng_int(&r, 1, 40) : tu_rng_int(&r, 1, 3);
    const int64_t *sp = c.nsp == 2 ? S2[tu_rng_int(&r, 0, 11)] : S3[tu_rng_int(&r, 0, 11)];
    for (int d = 0; d < c.nsp; d++) c.shape[c.batch + d] = tiny ? tu_rng_int(&r, 1, 5) : sp[d];
    c.vkind = tu_rng_chance(&r, 0.4) ? 0 : tu_rng_chance(&r, 0.8) ? 1 : 2;
    c.T = Ts[tu_rng_int(&r, 0, 5)];
    c.tkind = 1;
    c.cons = tu_rng_chance(&r, 0.5) ? NDF_ECC_V : NDF_ECC_T;
    c.in_layout = tu_rng_chance(&r, 0.2) ? TU_LAYOUT_PADDED | TU_LAYOUT_NEGATIVE : TU_LAYOUT_C;
    c.out_layout = tu_rng_chance(&r, 0.2) ? TU_LAYOUT_PADDED : TU_LAYOUT_C;
    const tu_rng r0 = r; /* the same input and layouts under every setting */
    for (int v = 0; v < 4; v++) {
      tu_rng rv = r0;
      if (var[v]) tune(s->ctx, var[v], val[v]);
      const int f = run_exact(s->ctx, &c, &rv);
      if (f) printf("  (failed with %s=%s)\n", var[v] ? var[v] : "default", var[v] ? val[v] : "");
      failed += f;
      if (var[v]) tune(s->ctx, var[v], NULL);
      r = rv;
    }
  }
  if (failed) printf("%d brick cases failed; seed %llu\n", failed, (unsigned long long)s->seed);
  assert_int_equal(failed, 0);
}

/* The warp-strip tests' draws after the shape: values, T from Ts, thresholds over [min, max], the
 * construction and the layouts (padded / negative / offset inputs: the element loads). */
static void strip_draw_rest(ecase *c, tu_rng *r, const int64_t *Ts, int nT) {
  c->vkind = tu_rng_chance(r, 0.4) ? 0 : tu_rng_chance(r, 0.7) ? 1 : tu_rng_chance(r, 0.5) ? 2 : 3;
  c->T = Ts[tu_rng_int(r, 0, nT - 1)];
  c->tkind = 1;
  c->cons = tu_rng_chance(r, 0.5) ? NDF_ECC_V : NDF_ECC_T;
  c->in_layout = tu_rng_chance(r, 0.3) ? TU_LAYOUT_PADDED | (tu_rng_chance(r, 0.5) ? TU_LAYOUT_NEGATIVE : 0) |
                                             (tu_rng_chance(r, 0.5) ? TU_LAYOUT_OFFSET : 0)
                                       : TU_LAYOUT_C;
  c->out_layout = tu_rng_chance(r, 0.2) ? TU_LAYOUT_PADDED : TU_LAYOUT_C;
}

/* Case k of a warp-strip test under each of its nv settings (var[v]=val[v], and var2[v]=val2[v] where
 * var2 has one; var[0]: the default), the same input and layouts under each; settings 6 and up on
 * every other case (even settings on even cases, odd on odd: time).  base: a variable set under
 * every setting (NULL: none; a setting of the same variable overrides it).  Returns the failures; *r
 * continues after the case. */
static int strip_settings(ndf_ctx *ctx, ecase *c, tu_rng *r, long k, int nv, const char *const *var,
                          const char *const *val, const char *const *var2, const char *const *val2, const char *base,
                          const char *bval) {
  const tu_rng r0 = *r;
  int failed = 0;
  for (int v = 0; v < nv; v++) {
    if (v >= 6 && (k & 1) != (v & 1)) continue;
    const char *v2 = var2 ? var2[v] : NULL;
    tu_rng rv = r0;
    if (base) tune(ctx, base, bval);
    if (var[v]) tune(ctx, var[v], val[v]);
    if (v2) tune(ctx, v2, val2[v]);
    const int verbose = getenv("NDF_TEST_VERBOSE") != NULL; /* each case as it runs (which one runs long) */
    if (verbose) {
      printf("case %ld with %s=%s%s%s%s ...", k, var[v] ? var[v] : "default", var[v] ? val[v] : "", v2 ? " " : "",
             v2 ? v2 : "", v2 ? val2[v] : "");
      fflush(stdout);
    }
    const int f = run_exact(ctx, c, &rv);
    if (verbose) printf(" %s\n", c->desc);
    if (f)
      printf("  (failed with %s=%s%s%s%s)\n", var[v] ? var[v] : "default", var[v] ? val[v] : "", v2 ? " " : "",
             v2 ? v2 : "", v2 ? val2[v] : "");
    failed += f;
    if (var[v]) tune(ctx, var[v], NULL);
    if (v2) tune(ctx, v2, NULL);
    if (base) tune(ctx, base, NULL);
    *r = rv;
  }
  return failed;
}

/* The 2-D warp-strip kernels (ndf_ecc_strip2t, ndf_ecc_strip2: 2-D, thresholds over [min,
 * max], T <= 510, float32 / uint8 / uint16) against the CPU, the same input
 * under each setting: default, ecc.2d=old (ndf_ecc_pack's fused march),
 * ecc.maphdr=off (header copied back instead of the sequence word),
 * ecc.mc2=1 and 13 (other task lengths), ecc.ws=off (per-call scratch
 * instead of the context's workspace), ecc.fence=sc (fence.sc pairs
 * instead of release / acquire atomics at the grid barrier and tickets),
 * ecc.bin=table (every bin from the thresholds table, no certified
 * guesses), and ecc.2d=strip2 (ndf_ecc_strip2; the default is
 * ndf_ecc_strip2t for T <= 320: the telescoped sum) alone, with MC=1 and
 * with BIN=table -- these five on alternate cases, and on odd cases jit.lean=off (ADR 0025).  Widths around the 128-column
 * strip and the 4-voxel lane (1, 3, 4, 127, 128, 129, 256, 260, 1023, 1025),
 * heights 1 to 600, batches (many images: more than the resident blocks falls
 * back to the march), float64 (the march), T = 2, 3, 255, 256, 509, 510; a third of the float32 cases
 * over a given range (ndf_ecc_strip2t's RNG specialization);
 * ties, constant images, values far from 0 (first guesses off); padded,
 * negative and offset layouts (element loads), strided outputs. */
static void test_gpu_strip2(void **state) {
  gpu_state *s = *state;
  tu_rng r;
  tu_rng_seed(&r, s->seed ^ 0x5721);
  static const int64_t Ts[] = {2, 3, 255, 256, 509, 510};
  static const int64_t W[] = {1, 3, 4, 127, 128, 129, 256, 260, 1023, 1025};
  static const ndf_dtype dts[5] = {NDF_FLOAT32, NDF_FLOAT32, NDF_UINT8, NDF_UINT16, NDF_FLOAT64};
  /* 11 (odd cases): jit.lean=off, the march's two instantiations (ADR 0025) */
  static const char *const var[12] = {NULL,      "ecc.2d", "ecc.maphdr", "ecc.mc2", "ecc.mc2", "ecc.ws",
                                      "ecc.fence", "ecc.bin", "ecc.2d",   "ecc.2d",  "ecc.2d", "jit.lean"};
  static const char *const val[12] = {NULL, "old", "off", "1", "13", "off", "sc", "table", "strip2", "strip2", "strip2", "off"};
  static const char *const var2[12] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "ecc.mc2", "ecc.bin", NULL};
  static const char *const val2[12] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "1", "table", NULL};
  int failed = 0;
  const long n = s->ncases / 2 > 40 ? s->ncases / 2 : 40;
  for (long k = 0; k < n && failed < 5; k++) {
    ecase c;
    memset(&c, 0, sizeof c);
    c.dt = dts[tu_rng_int(&r, 0, 4)];
    c.nsp = 2;
    c.batch = tu_rng_chance(&r, 0.4) ? (int)tu_rng_int(&r, 1, 2) : 0;
    c.nd = c.nsp + c.batch;
    const int many = c.batch && tu_rng_chance(&r, 0.2);
    for (int d = 0; d < c.batch; d++) c.shape[d] = many ? tu_rng_int(&r, 20, 40) : tu_rng_int(&r, 1, 3);
    c.shape[c.batch] = tu_rng_chance(&r, 0.1) ? tu_rng_int(&r, 1, 3) : tu_rng_int(&r, 1, many ? 8 : 600);
    c.shape[c.batch + 1] = tu_rng_chance(&r, 0.6) ? W[tu_rng_int(&r, 0, 9)] : tu_rng_int(&r, 1, 700);
    strip_draw_rest(&c, &r, Ts, 6);
    /* float32: thresholds over a given range in a third of the cases (ndf_ecc_strip2t without phase 1
     * for T <= 320; the other kernels and T 509 / 510 the paths before) */
    if (c.dt == NDF_FLOAT32 && tu_rng_chance(&r, 0.35)) c.tkind = 2;
    failed += strip_settings(s->ctx, &c, &r, k, 12, var, val, var2, val2, NULL, NULL); /* 6..11: even / odd cases */
  }
  if (failed) printf("%d strip2 cases failed; seed %llu\n", failed, (unsigned long long)s->seed);
  assert_int_equal(failed, 0);
}

/* The 3-D warp-strip kernel (ndf_ecc_strip3: 3-D, thresholds over [min,
 * max] or, float32, over a given range (a third of the float32 cases), T <= 320, float32 / uint8 / uint16; cells' bins by max / min,
 * telescoped along x) against the CPU, the same input under each setting:
 * default (ndf_ecc_strip3, 16 columns per lane; uint8 / uint16 too: the integer
 * binner), ecc.3d=old (the paths before), ecc.maphdr=off,
 * ecc.mc3=1 (other task lengths), ecc.w3=8 (ndf_ecc_strip3n),
 * ecc.ws=off, and on alternate
 * cases ecc.fence=sc / ecc.bin=table, ecc.bcol=off (the warps' own shares where
 * block columns apply: 8 or 16 tiles across), ecc.stg=on (ndf_ecc_strip3s, staged planes, where
 * they apply, its phase 1 by ndf_ecc_strip3 first: the split; odd and even cases), jit.lean=off
 * (the forms before ADR 0025: a march for each row load; odd cases).  Widths
 * around the 16-column task (1, 4, 15, 16, 17, 33, 64, 100, 128, 256; 4224: 33 block columns of
 * 128), heights around the 31-row tile (1, 2, 30, 31, 32, 62, 63,
 * 64), depths 1 to 24, batches (many images: past the
 * resident grid the old paths), float64 (the old paths), T = 2, 3, 37, 256,
 * 319, 320 and 321 (past the kernel's limit: the old paths); ties, constant images,
 * values far from 0 (first guesses off); padded, negative and offset layouts
 * (element loads), strided outputs. */
static void test_gpu_strip3(void **state) {
  gpu_state *s = *state;
  tu_rng r;
  tu_rng_seed(&r, s->seed ^ 0x5731);
  static const int64_t Ts[] = {2, 3, 37, 256, 319, 320, 321}; /* 321: the paths before */
  static const int64_t W[] = {1, 4, 15, 16, 17, 33, 64, 100, 128, 256, 4224}; /* 4224: 33 block columns */
  static const int64_t H[] = {1, 2, 30, 31, 32, 62, 63, 64};
  static const ndf_dtype dts[5] = {NDF_FLOAT32, NDF_FLOAT32, NDF_UINT8, NDF_UINT16, NDF_FLOAT64};
  /* 9, 10: the staged planes forced (ndf_ecc_strip3s where it applies; odd and even cases); 11 (odd
   * cases): jit.lean=off, the march's two instantiations (ADR 0025) */
  static const char *const var[12] = {NULL,      "ecc.3d",  "ecc.maphdr", "ecc.mc3",  "ecc.w3", "ecc.ws",
                                      "ecc.fence", "ecc.bin", "ecc.bcol",   "ecc.stg", "ecc.stg", "jit.lean"};
  static const char *const val[12] = {NULL, "old", "off", "1", "8", "off", "sc", "table", "off", "on", "on", "off"};
  int failed = 0;
  const long n = s->ncases / 4 > 24 ? s->ncases / 4 : 24;
  for (long k = 0; k < n && failed < 5; k++) {
    ecase c;
    memset(&c, 0, sizeof c);
    c.dt = dts[tu_rng_int(&r, 0, 4)];
    c.nsp = 3;
    c.batch = tu_rng_chance(&r, 0.3) ? (int)tu_rng_int(&r, 1, 2) : 0;
    c.nd = c.nsp + c.batch;
    const int many = c.batch && tu_rng_chance(&r, 0.2);
    for (int d = 0; d < c.batch; d++) c.shape[d] = many ? tu_rng_int(&r, 20, 40) : tu_rng_int(&r, 1, 3);
    c.shape[c.batch] = tu_rng_chance(&r, 0.15) ? tu_rng_int(&r, 1, 2) : tu_rng_int(&r, 1, many ? 3 : 24);
    /* many images are small ones (thousands of 32 x 4224 float64 images would take gigabytes and minutes) */
    c.shape[c.batch + 1] = !many && tu_rng_chance(&r, 0.6) ? H[tu_rng_int(&r, 0, 7)] : tu_rng_int(&r, 1, many ? 8 : 70);
    c.shape[c.batch + 2] =
        !many && tu_rng_chance(&r, 0.6) ? W[tu_rng_int(&r, 0, 10)] : tu_rng_int(&r, 1, many ? 8 : 130);
    strip_draw_rest(&c, &r, Ts, 7);
    if (k < 2) { /* values far from 0 in a narrow range (uncertified guesses far off), T above 256 */
      c.dt = NDF_FLOAT32;
      c.vkind = 3;
      c.T = k ? 256 : 320;
    }
    /* float32: thresholds over a given range in a third of the cases (no phase 1; run_exact's
     * ranges, [N(0, 10), + U(0, 100)], one in ten a single point: the paths before) */
    if (k >= 2 && c.dt == NDF_FLOAT32 && tu_rng_chance(&r, 0.35)) c.tkind = 2;
    /* (uint8 / uint16: strip3 by default; the setting ecc.3d=old: the rows kernel) */
    failed += strip_settings(s->ctx, &c, &r, k, 12, var, val, NULL, NULL, NULL, NULL);
  }
  if (failed) printf("%d strip3 cases failed; seed %llu\n", failed, (unsigned long long)s->seed);
  assert_int_equal(failed, 0);
}

/* ---- ndf_ecc_rows (3-D, thresholds over [min, max], T <= 256) ------------------------------------ */
/* The bit-sliced rows kernel against the CPU, each input under ecc.rows=1
 * (PF = 0; float32 also unset: the default, the march), float32 V also =2 (PF = 1)
 * and =3 (PF = 2: an add for every voxel), every fourth case =0 (the march): random shapes 2..40 per axis and a few off the 32 x 128
 * tiles (1-long axes, one voxel past a tile, several tiles), 0-2 batch axes,
 * every dtype, V and T, T in {2, 3, 37, 255, 256} and 257 (the march: bins
 * past 255), ties, continuous and constant images, strided / negative-stride
 * / misaligned inputs (the scalar loads), strided outputs. */
static void test_gpu_rows(void **state) {
  gpu_state *s = *state;
  tu_rng r;
  tu_rng_seed(&r, s->seed ^ 0x7035);
  static const int64_t Ts[] = {2, 3, 37, 255, 256, 256, 257};
  static const int64_t S3[][3] = {{1, 1, 1},  {1, 1, 300},   {1, 300, 1},  {300, 1, 1}, {2, 32, 128}, {3, 33, 129},
                                  {5, 31, 127}, {9, 65, 257}, {40, 40, 40}, {17, 64, 16}, {4, 70, 17},  {64, 64, 64}};
  static const ndf_dtype dts[4] = {NDF_FLOAT32, NDF_FLOAT64, NDF_UINT8, NDF_UINT16};
  /* =5 (PF 4: the next plane staged by cp.async) for every dtype, =6 (PF 6), =7 (PF 8:
   * mode 1 at 3 blocks per SM; the float32 default from 2^24 voxels), =9 (PF 10) for float32 V,
   * =8 (PF 12: =5 at 4 blocks per SM) for float32 V and uint8 */
  static const char *const val[10] = {"1", NULL, "2", "3", "0", "5", "6", "7", "8", "9"};
  int failed = 0;
  /* few kernel specializations (each a ~2-5 s NVRTC compile): the dtypes in turn, the PF
   * variants for float32 V only, the march every fourth case */
  const long n = s->ncases / 3 > 3 ? s->ncases / 3 : 3;
  tune(s->ctx, "ecc.3d", "old"); /* the paths before ndf_ecc_strip3 */
  for (long k = 0; k < n && failed < 5; k++) {
    ecase c;
    memset(&c, 0, sizeof c);
    static const ndf_dtype order[4] = {NDF_FLOAT32, NDF_UINT8, NDF_FLOAT64, NDF_UINT16};
    c.dt = order[k % 4];
    (void)dts;
    c.nsp = 3;
    c.batch = (int)tu_rng_int(&r, 0, 2);
    c.nd = c.nsp + c.batch;
    for (int d = 0; d < c.batch; d++) c.shape[d] = tu_rng_int(&r, 1, 3);
    const int64_t *sp = S3[tu_rng_int(&r, 0, 11)];
    const int rnd = tu_rng_chance(&r, 0.6);
    for (int d = 0; d < 3; d++) c.shape[c.batch + d] = rnd ? tu_rng_int(&r, 2, 40) : sp[d];
    c.vkind = tu_rng_chance(&r, 0.5) ? 0 : tu_rng_chance(&r, 0.9) ? 1 : 2;
    c.T = Ts[tu_rng_int(&r, 0, k < 3 ? 5 : 6)]; /* 257: the march (another compile) */
    c.tkind = 1;
    c.cons = k == 0 || tu_rng_chance(&r, 0.5) ? NDF_ECC_V : NDF_ECC_T;
    c.in_layout = tu_rng_chance(&r, 0.3) ? TU_LAYOUT_PADDED | (tu_rng_chance(&r, 0.5) ? TU_LAYOUT_NEGATIVE : 0) |
                                               (tu_rng_chance(&r, 0.5) ? TU_LAYOUT_OFFSET : 0)
                                         : TU_LAYOUT_C;
    c.out_layout = tu_rng_chance(&r, 0.2) ? TU_LAYOUT_PADDED : TU_LAYOUT_C;
    const tu_rng r0 = r; /* the same input and layouts under every setting */
    for (int v = 0; v < 10; v++) {
      const int fv = c.dt == NDF_FLOAT32 && c.cons == NDF_ECC_V;
      if ((v == 1 && c.dt != NDF_FLOAT32) || ((v == 2 || v == 3 || v == 6 || v == 7 || v == 9) && !fv) ||
          (v == 4 && k % 4 != 0) || (v == 8 && !fv && c.dt != NDF_UINT8))
        continue;
      tu_rng rv = r0;
      if (val[v]) tune(s->ctx, "ecc.rows", val[v]);
      const int f = run_exact(s->ctx, &c, &rv);
      if (f) printf("  (failed with ecc.rows=%s)\n", val[v] ? val[v] : "default");
      failed += f;
      if (val[v]) tune(s->ctx, "ecc.rows", NULL);
      r = rv;
    }
  }
  tune(s->ctx, "ecc.3d", NULL);
  if (failed) printf("%d rows cases failed; seed %llu\n", failed, (unsigned long long)s->seed);
  assert_int_equal(failed, 0);
}

/* Contexts made and destroyed one after another, which the allocator often places at one
 * address: each context has its own ECC state (workspace, mapped header, memo of the kernels'
 * functions, launch plans, the deferred checks' ordinals), so nothing a destroyed context kept
 * is found by the next at its address -- every curve equals the CPU's with the expected kernel,
 * and each deferred context numbers its deferred calls from 1 (nan_case). */
static void test_gpu_context_cycle(void **state) {
  gpu_state *s = *state;
  tu_rng r;
  tu_rng_seed(&r, s->seed ^ 0xc7c1eULL);
  int failed = 0, reused = 0;
  uintptr_t prev = 0; /* the address of the context destroyed last */
  for (int i = 0; i < 8 && !failed; i++) {
    ndf_ctx_options co;
    ndf_ctx_options_init(&co);
    co.backend = NDF_BACKEND_CUDA;
    co.deferred_errors = i & 1;
    ndf_ctx *ctx;
    assert_int_equal(ndf_ctx_create(&ctx, &co), NDF_OK);
    reused += (uintptr_t)ctx == prev;
    prev = (uintptr_t)ctx;
    for (int k = 0; k < 4; k++) {
      ecase c;
      draw_case(&c, &r);
      failed += run_exact(ctx, &c, &r);
    }
    if (co.deferred_errors) nan_cases(ctx, 0, 1);
    ndf_ctx_destroy(ctx);
  }
  printf("%d of 7 contexts made at the address of the one before\n", reused);
  if (failed) printf("%d context-cycle cases failed; seed %llu\n", failed, (unsigned long long)s->seed);
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
  s->ncases = tu_env_long("NDF_TEST_CASES", 150);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_prestate(test_gpu_nan_rejected, s),
      cmocka_unit_test_prestate(test_gpu_deferred, s),
      cmocka_unit_test_prestate(test_gpu_context_cycle, s),
      cmocka_unit_test_prestate(test_gpu_exact_random, s),
      cmocka_unit_test_prestate(test_gpu_old_path, s),
      cmocka_unit_test_prestate(test_gpu_pack_edges, s),
      cmocka_unit_test_prestate(test_gpu_pack_edges_old_hist, s),
      cmocka_unit_test_prestate(test_gpu_pack_edges_unfused, s),
      cmocka_unit_test_prestate(test_gpu_pack_edges_brick, s),
      cmocka_unit_test_prestate(test_gpu_brick, s),
      cmocka_unit_test_prestate(test_gpu_strip2, s),
      cmocka_unit_test_prestate(test_gpu_rows, s),
      cmocka_unit_test_prestate(test_gpu_strip3, s),
      cmocka_unit_test_prestate(test_gpu_soft_random, s),
      cmocka_unit_test_prestate(test_gpu_soft_tight, s),
      cmocka_unit_test_prestate(test_gpu_soft_fused, s),
      cmocka_unit_test_prestate(test_gpu_soft_direct, s),
      cmocka_unit_test_prestate(test_gpu_soft_old, s),
      cmocka_unit_test_prestate(test_gpu_benchmark_shapes, s),
      cmocka_unit_test_prestate(test_gpu_soft_timing, s),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  ndf_cache_stats st;
  ndf_ctx_cache_stats(s->ctx, &st);
  printf("kernel cache: %llu memory hits, %llu disk hits, %llu compiles (%.0f ms)\n",
         (unsigned long long)st.memory_hits, (unsigned long long)st.disk_hits, (unsigned long long)st.compiles,
         st.compile_ms);
  ndf_ctx_destroy(s->ctx);
  free(s);
  return rc;
}
