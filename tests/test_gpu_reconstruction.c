/*
 * test_gpu_reconstruction.c -- ndf_reconstruction on the GPU against the CPU
 * backend (itself checked against scikit-image by test_reconstruction), bit
 * for bit, on fresh random inputs drawn here: every dtype (inf and -0.0 in
 * floats), both methods, 1-4 spatial axes (and one 8-D case) with 0-2 batch
 * axes, the default footprint or random ones with and without an offset
 * (all-zero ones too), seeds that are the mask moved by h, sparse markers or
 * noise; strided and negative-stride inputs, strided outputs of float64 or
 * the seed's dtype; the data errors (seed on the wrong side of the mask,
 * NaN: NDF_EINVAL, output untouched); and a 256x256 maze-like mask whose
 * reconstruction needs long geodesic paths.
 *
 * Outputs are poisoned first; the bytes between the elements of a strided
 * output must keep the poison.
 *
 * Exits 77 (skipped) when the context has no CUDA device.  Cases:
 * NDF_TEST_CASES (default 150); seed: NDF_TEST_SEED (printed).  Public API only.
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
static int group_setup(void **state) { return tu_gpu_setup(state, 150); }

static const ndf_dtype DTYPES[] = {NDF_UINT8, NDF_INT8,    NDF_UINT16,  NDF_INT16, NDF_UINT32,
                                   NDF_INT32, NDF_FLOAT32, NDF_FLOAT64, NDF_INT64, NDF_UINT64};

typedef struct rcase {
  ndf_dtype dt, odt;
  int nd, batch, nsp, seedkind, bad; /* bad: 0 none, 1 seed on the wrong side, 2 NaN */
  int64_t shape[NDF_MAX_NDIM];
  int64_t fshape[NDF_MAX_SPATIAL];
  int has_fp, fp_zero;
  ndf_reconstruction_options o;
  int in_layout, out_layout;
  char desc[512];
} rcase;

static void describe(rcase *c) {
  int n = snprintf(c->desc, sizeof c->desc, "reconstruction by %s %s->%s shape ",
                   ndf_reconstruct_method_name(c->o.method), ndf_dtype_name(c->dt), ndf_dtype_name(c->odt));
  for (int d = 0; d < c->nd; d++)
    n += snprintf(c->desc + n, sizeof c->desc - n, "%s%lld", d ? "x" : "", (long long)c->shape[d]);
  n += snprintf(c->desc + n, sizeof c->desc - n, " batch %d seed %d footprint %s", c->batch, c->seedkind,
                c->has_fp ? (c->fp_zero ? "zero" : "random") : "default");
  if (c->has_fp)
    for (int d = 0; d < c->nsp; d++) n += snprintf(c->desc + n, sizeof c->desc - n, "%s%lld", d ? "x" : " ", (long long)c->fshape[d]);
  for (int d = 0; d < c->o.noffset; d++)
    n += snprintf(c->desc + n, sizeof c->desc - n, "%s%lld", d ? "," : " offset ", (long long)c->o.offset[d]);
  snprintf(c->desc + n, sizeof c->desc - n, " layouts %d/%d%s", c->in_layout, c->out_layout,
           c->bad == 1 ? " (seed on the wrong side)" : c->bad == 2 ? " (NaN)" : "");
}

static void draw_case(rcase *c, tu_rng *r) {
  memset(c, 0, sizeof *c);
  c->dt = DTYPES[tu_rng_int(r, 0, 9)];
  c->odt = tu_rng_chance(r, 0.5) ? NDF_FLOAT64 : c->dt;
  c->nsp = (int)tu_rng_int(r, 1, 4);
  c->batch = (int)tu_rng_int(r, 0, 2);
  c->nd = c->nsp + c->batch;
  for (int d = 0; d < c->batch; d++) c->shape[d] = tu_rng_int(r, 1, 3);
  static const int64_t hi[5] = {0, 3000, 80, 18, 8};
  for (int d = 0; d < c->nsp; d++)
    c->shape[c->batch + d] = tu_rng_chance(r, 0.1) ? tu_rng_int(r, 1, 3) : tu_rng_int(r, 1, hi[c->nsp]);
  c->seedkind = (int)tu_rng_int(r, 0, 2);
  ndf_reconstruction_options_init(&c->o);
  c->o.method = tu_rng_chance(r, 0.5) ? NDF_RECONSTRUCT_EROSION : NDF_RECONSTRUCT_DILATION;
  c->o.batch_dims = c->batch;
  c->has_fp = tu_rng_chance(r, 0.6);
  if (c->has_fp) {
    const int off = tu_rng_chance(r, 0.4);
    c->fp_zero = tu_rng_chance(r, 0.05);
    for (int d = 0; d < c->nsp; d++) {
      c->fshape[d] = tu_rng_int(r, 1, c->nsp <= 2 ? 5 : 3);
      if (!off && c->fshape[d] % 2 == 0) c->fshape[d]++;
    }
    if (off) {
      c->o.noffset = c->nsp;
      for (int d = 0; d < c->nsp; d++) c->o.offset[d] = tu_rng_int(r, 0, c->fshape[d] - 1);
    }
  }
  c->bad = tu_rng_chance(r, 0.05) ? 1 : (tu_is_float(c->dt) && tu_rng_chance(r, 0.04)) ? 2 : 0;
  c->in_layout = tu_rng_chance(r, 0.4) ? TU_LAYOUT_PADDED | (tu_rng_chance(r, 0.5) ? TU_LAYOUT_NEGATIVE : 0) |
                                             (tu_rng_chance(r, 0.3) ? TU_LAYOUT_OFFSET : 0)
                                       : TU_LAYOUT_C;
  c->out_layout = tu_rng_chance(r, 0.3) ? TU_LAYOUT_PADDED : tu_rng_chance(r, 0.2) ? TU_LAYOUT_FORTRAN : TU_LAYOUT_C;
}

/* mask and a seed on its right side (dilation: below) of kind c->seedkind. */
static void fill_inputs(const rcase *c, const ndf_array *seed, const ndf_array *mask, tu_rng *r) {
  const int64_t n = ndf_array_size(seed);
  const int ero = c->o.method == NDF_RECONSTRUCT_EROSION, fl = tu_is_float(c->dt);
  double lo = -1e6, hi = 1e6;
  if (!fl) tu_int_range(c->dt, &lo, &hi);
  const double w = tu_rng_chance(r, 0.5) ? 8 : fl ? 400 : hi - lo;
  const double base = fl ? -w / 2 : lo + tu_rng_unif(r) * (hi - lo - w);
  for (int64_t i = 0; i < n; i++) {
    double m = floor(base + tu_rng_unif(r) * (w + 1));
    if (fl && tu_rng_chance(r, 0.02)) m = tu_rng_chance(r, 0.5) ? INFINITY : -INFINITY;
    if (fl && m == 0 && tu_rng_chance(r, 0.5)) m = -0.0;
    if (!fl) m = m < lo ? lo : m > hi ? hi : m;
    double s;
    switch (c->seedkind) {
      case 0: s = ero ? m + 3 : m - 3; break;                         /* h-dome / h-basin */
      case 1: s = tu_rng_chance(r, 0.05) ? m : ero ? hi : lo; break;   /* markers */
      default: s = m + (ero ? 1 : -1) * floor(tu_rng_unif(r) * w); /* noise */
    }
    if (fl && m == -0.0 && tu_rng_chance(r, 0.5)) s = 0.0; /* +0.0 above -0.0, numerically equal */
    if (!fl) s = s < lo ? lo : s > hi ? hi : s;
    if (ero ? s < m : s > m) s = m;
    tu_set(mask, i, m);
    tu_set(seed, i, s);
  }
  if (c->bad && n > 0) {
    const int64_t i = tu_rng_int(r, 0, n - 1);
    if (c->bad == 2) {
      tu_set(tu_rng_chance(r, 0.5) ? seed : mask, i, NAN);
    } else {
      double m = ero ? (fl ? 5 : hi) : (fl ? -5 : lo);
      tu_set(mask, i, m);
      tu_set(seed, i, ero ? m - 1 : m + 1);
    }
  }
  tu_offset64(seed); /* the same offset for both: every order between them kept */
  tu_offset64(mask);
}

static int run_case(ndf_ctx *ctx, rcase *c, tu_rng *r, double *gpu_ms) {
  describe(c);
  int rc = -1;
  tu_array hs, hm, ls, lm, fp = {0}, co = {0}, go = {0};
  tu_dev ds = {0}, dm = {0}, dout = {0};
  assert_int_equal(tu_array_alloc(&hs, c->dt, c->nd, c->shape), 0);
  assert_int_equal(tu_array_alloc(&hm, c->dt, c->nd, c->shape), 0);
  fill_inputs(c, &hs.arr, &hm.arr, r);
  if (c->has_fp) {
    assert_int_equal(tu_array_alloc(&fp, NDF_UINT8, c->nsp, c->fshape), 0);
    const double p = tu_rng_unif(r);
    for (int64_t i = 0; i < ndf_array_size(&fp.arr); i++) tu_set(&fp.arr, i, !c->fp_zero && tu_rng_unif(r) < p);
    c->o.footprint = &fp.arr;
  }
  assert_int_equal(tu_array_relayout(&ls, &hs.arr, c->in_layout, r), 0);
  assert_int_equal(tu_array_relayout(&lm, &hm.arr, c->in_layout, r), 0);
  ndf_array like = hs.arr;
  like.dtype = c->odt;
  assert_int_equal(tu_array_alloc(&co, c->odt, c->nd, c->shape), 0);
  assert_int_equal(tu_array_like(&go, &like, c->out_layout, r), 0);
  ndf_status s = ndf_reconstruction(ctx, &hs.arr, &hm.arr, &co.arr, &c->o);
  if ((s != NDF_OK) != (c->bad && ndf_array_size(&hs.arr) > 0)) {
    printf("%s: CPU: %s %s\n", c->desc, ndf_status_name(s), ndf_errmsg(ctx));
    goto done;
  }
  char cpu_msg[1024];
  snprintf(cpu_msg, sizeof cpu_msg, "%s", ndf_errmsg(ctx));
  tu_dev_upload(ctx, &ds, &ls);
  tu_dev_upload(ctx, &dm, &lm);
  tu_dev_upload(ctx, &dout, &go); /* poisoned buffer */
  double t0 = tu_now_ms();
  ndf_status g = ndf_reconstruction(ctx, &ds.arr, &dm.arr, &dout.arr, &c->o);
  if (g == NDF_OK) g = ndf_ctx_synchronize(ctx);
  if (gpu_ms) *gpu_ms = tu_now_ms() - t0;
  if (s != NDF_OK) {
    /* the same rule as the CPU's message (which also names the voxel) */
    const char *m = ndf_errmsg(ctx);
    const char *rule = c->bad == 2 ? "NaN in the seed or the mask" : strstr(cpu_msg, "reconstruction by");
    if (g != NDF_EINVAL || !rule || !strstr(m, rule)) {
      printf("%s: want NDF_EINVAL with \"%s\" as on the CPU; GPU: %s \"%s\"\n", c->desc, cpu_msg,
             ndf_status_name(g), m);
      goto done;
    }
    tu_array back = {0};
    assert_int_equal(tu_array_like(&back, &like, c->out_layout, r), 0);
    tu_dev_download(ctx, &dout, &back);
    const int64_t p = tu_poison_check(back.base, back.bytes);
    tu_array_free(&back);
    if (p >= 0) {
      printf("%s: NDF_EINVAL but the output was written (byte %lld)\n", c->desc, (long long)p);
      goto done;
    }
    rc = 0;
    goto done;
  }
  if (g != NDF_OK) {
    printf("%s: GPU: %s %s\n", c->desc, ndf_status_name(g), ndf_errmsg(ctx));
    goto done;
  }
  if (tu_dev_check(ctx, c->desc, "output", &dout, &go, &co.arr)) goto done;
  rc = 0;
done:
  tu_dev_free(ctx, &ds);
  tu_dev_free(ctx, &dm);
  tu_dev_free(ctx, &dout);
  tu_array_free(&hs);
  tu_array_free(&hm);
  tu_array_free(&ls);
  tu_array_free(&lm);
  tu_array_free(&fp);
  tu_array_free(&co);
  tu_array_free(&go);
  return rc;
}

static void test_gpu_reconstruction_random(void **state) {
  gpu_state *s = *state;
  tu_rng r;
  tu_rng_seed(&r, s->seed ^ 0x7ec);
  int failed = 0;
  for (long k = 0; k < s->ncases && failed < 5; k++) {
    rcase c;
    draw_case(&c, &r);
    if (k % 50 == 49) { /* 8 spatial axes, 2^8 voxels, the default 3^8 footprint */
      c.nsp = c.nd = 8;
      c.batch = c.o.batch_dims = 0;
      c.has_fp = 0;
      c.o.noffset = 0;
      for (int d = 0; d < 8; d++) c.shape[d] = 2;
    }
    if (run_case(s->ctx, &c, &r, NULL) != 0) failed++;
  }
  if (failed) printf("%d random reconstruction cases failed; seed %llu\n", failed, (unsigned long long)s->seed);
  assert_int_equal(failed, 0);
}

/* A 256x256 serpentine corridor (walls 0, corridor 200) with one marker at its
 * start: the marker's value has to travel the whole corridor. */
static void test_gpu_reconstruction_maze(void **state) {
  gpu_state *s = *state;
  const int64_t shape[2] = {256, 256};
  for (int ero = 0; ero < 2; ero++) {
    tu_array hs, hm, co, go;
    tu_dev ds = {0}, dm = {0}, dout = {0};
    assert_int_equal(tu_array_alloc(&hs, NDF_FLOAT32, 2, shape), 0);
    assert_int_equal(tu_array_alloc(&hm, NDF_FLOAT32, 2, shape), 0);
    assert_int_equal(tu_array_alloc(&co, NDF_FLOAT32, 2, shape), 0);
    assert_int_equal(tu_array_alloc(&go, NDF_FLOAT32, 2, shape), 0);
    for (int64_t y = 0; y < 256; y++)
      for (int64_t x = 0; x < 256; x++) {
        const int open = y % 2 == 0 || (y % 4 == 1 && x == 255) || (y % 4 == 3 && x == 0);
        const double wall = ero ? 255 : 0, path = ero ? 55 : 200;
        tu_set(&hm.arr, y * 256 + x, open ? path : wall);
        tu_set(&hs.arr, y * 256 + x, ero ? 255 : 0);
      }
    tu_set(&hs.arr, 0, ero ? 90 : 150);
    ndf_reconstruction_options o;
    ndf_reconstruction_options_init(&o);
    o.method = ero ? NDF_RECONSTRUCT_EROSION : NDF_RECONSTRUCT_DILATION;
    const uint8_t cross[9] = {0, 1, 0, 1, 1, 1, 0, 1, 0};
    const int64_t s33[2] = {3, 3};
    ndf_array fp;
    ndf_array_init(&fp, (void *)cross, NDF_DEVICE_CPU, NDF_UINT8, 2, s33);
    o.footprint = &fp;
    assert_int_equal(ndf_reconstruction(s->ctx, &hs.arr, &hm.arr, &co.arr, &o), NDF_OK);
    assert_true(tu_get(&co.arr, 255 * 256) == (ero ? 90 : 150)); /* the corridor's end */
    tu_poison(go.base, go.bytes);
    tu_dev_upload(s->ctx, &ds, &hs);
    tu_dev_upload(s->ctx, &dm, &hm);
    tu_dev_upload(s->ctx, &dout, &go);
    const uint64_t mark = tu_klog_mark(s->ctx);
    const double t0 = tu_now_ms();
    assert_int_equal(ndf_reconstruction(s->ctx, &ds.arr, &dm.arr, &dout.arr, &o), NDF_OK);
    assert_int_equal(ndf_ctx_synchronize(s->ctx), NDF_OK);
    assert_int_equal(tu_klog_check(s->ctx, mark, ero ? "ndf_recon_step|DIL=0" : "ndf_recon_step|DIL=1", 1, "corridor"), 0);
    printf("256x256 corridor of about 33000 voxels, by %s: %.1f ms on the GPU\n", ero ? "erosion" : "dilation",
           tu_now_ms() - t0);
    assert_int_equal(tu_dev_check(s->ctx, "corridor", "output", &dout, &go, &co.arr), 0);
    tu_dev_free(s->ctx, &ds);
    tu_dev_free(s->ctx, &dm);
    tu_dev_free(s->ctx, &dout);
    tu_array_free(&hs);
    tu_array_free(&hm);
    tu_array_free(&co);
    tu_array_free(&go);
  }
}

int main(void) {
  if (!tu_have_cuda()) return 77; /* ctest: skipped */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gpu_reconstruction_random),
      cmocka_unit_test(test_gpu_reconstruction_maze),
  };
  return cmocka_run_group_tests(tests, group_setup, tu_gpu_teardown);
}
