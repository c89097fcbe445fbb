/*
 * test_gpu_interp.c -- the interpolation family on the GPU against the CPU
 * backend (itself checked against scipy.ndimage by test_interp), bit for bit,
 * on fresh random inputs drawn here: spline_filter1d, spline_filter,
 * map_coordinates, affine_transform (linear, homogeneous and diagonal
 * matrices), shift, zoom (both grid modes, by exactly 1 too) and rotate; every input and output
 * dtype, orders 0..5, every mode, prefilter on and off, cval, 0-2 batch axes,
 * 1-4 spatial axes; coordinates of float64, float32, int16, int64 and uint64;
 * strided and negative-stride inputs and coordinates,
 * strided outputs whose gaps must keep their poison.  Both backends compute
 * in float64 with the same order of operations (the kernels round every
 * product on its own), so the results must be equal bit for bit.  A bool is
 * compared as its byte (a bool output holds scipy's C cast of the value, a
 * bool input sometimes bytes other than 0 and 1).
 *
 * Also: the same with rows up to 300 long (points of a thread in one row, the
 * interior path next to border points); inputs with an empty spatial axis
 * (points outside them in the constant and grid-constant modes, zooms to an
 * empty axis); order-1 (trilinear) and order-3 zooms
 * of a 3-D float32 volume, and the kernel log shows which specialization ran
 * (zoom: the per-axis tables' kernel); every op with a bool input, a bool
 * output or both (spline_filter1d's copies of order <= 1 among them); the
 * prefilter's kernels for short and
 * long lines; 32- and 64-bit index arithmetic on either side of the int32
 * boundary (a 2 GiB strided input).
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

static const ndf_dtype IN_DTYPES[] = {NDF_BOOL,  NDF_UINT8,   NDF_INT8,    NDF_UINT16, NDF_INT16, NDF_UINT32,
                                      NDF_INT32, NDF_FLOAT32, NDF_FLOAT64, NDF_INT64,  NDF_UINT64};
static const ndf_dtype OUT_DTYPES[] = {NDF_UINT8,   NDF_INT8,    NDF_UINT16, NDF_INT16, NDF_UINT32, NDF_INT32,
                                       NDF_FLOAT32, NDF_FLOAT64, NDF_INT64,  NDF_UINT64, NDF_BOOL};
enum { OP_SPLINE1D, OP_SPLINE, OP_MAP, OP_AFFINE, OP_SHIFT, OP_ZOOM, OP_ROTATE, OP_COUNT };
static const char *OP_NAMES[OP_COUNT] = {"spline_filter1d", "spline_filter", "map_coordinates", "affine_transform",
                                         "shift", "zoom", "rotate"};

typedef struct icase {
  int op, nd, nb, nsp, axis, grid, reshape, ax0, ax1, onsp, form, nvals, empty;
  ndf_dtype dt, odt, ct;
  int64_t shape[NDF_MAX_NDIM], oshape[NDF_MAX_NDIM], cshape[NDF_MAX_NDIM];
  double vals[NDF_MAX_SPATIAL], angle;
  double mat[(NDF_MAX_SPATIAL + 1) * (NDF_MAX_SPATIAL + 1)];
  ndf_interp_options o;
  int in_layout, out_layout;
  char desc[512];
} icase;

static int pick_layout(tu_rng *r, int negative) {
  if (tu_rng_chance(r, 0.4)) return TU_LAYOUT_C;
  if (tu_rng_chance(r, 0.3)) return TU_LAYOUT_FORTRAN;
  return TU_LAYOUT_PADDED | (negative && tu_rng_chance(r, 0.5) ? TU_LAYOUT_NEGATIVE : 0) |
         (tu_rng_chance(r, 0.3) ? TU_LAYOUT_OFFSET : 0);
}

/* Calls the op; matrix (host) for affine, coords for map. */
static ndf_status call(ndf_ctx *ctx, const icase *c, const ndf_array *in, const ndf_array *coords,
                       const ndf_array *matrix, ndf_array *out) {
  switch (c->op) {
    case OP_SPLINE1D: return ndf_spline_filter1d(ctx, in, out, c->o.order, c->axis, c->o.mode);
    case OP_SPLINE: return ndf_spline_filter(ctx, in, out, c->o.order, c->o.mode, c->nb);
    case OP_MAP: return ndf_map_coordinates(ctx, in, coords, out, &c->o);
    case OP_AFFINE: return ndf_affine_transform(ctx, in, matrix, c->form != 1 ? c->nvals : 0, c->vals, out, &c->o);
    case OP_SHIFT: return ndf_shift(ctx, in, out, c->nvals, c->vals, &c->o);
    case OP_ZOOM: return ndf_zoom(ctx, in, out, c->nvals, c->vals, c->grid, &c->o);
    default: return ndf_rotate(ctx, in, out, c->angle, c->ax0, c->ax1, c->reshape, &c->o);
  }
}

/* long_rows: the last spatial axis (of the input, and of the output where it is drawn) up to 300
 * long, so that a thread's points (32 apart) share rows.  bools: 0 any dtypes; 1 a bool input, output
 * or both (and spline_filter1d mostly of order <= 1).  empty: one spatial axis of the input of extent 0
 * (the ops with outputs of points outside it in the constant or grid-constant mode, the modes that
 * define them), and zoom factors that may empty an axis. */
static void draw_case(icase *c, tu_rng *r, int long_rows, int bools, int empty) {
  memset(c, 0, sizeof *c);
  c->op = (int)tu_rng_int(r, 0, OP_COUNT - 1);
  if (empty && tu_rng_chance(r, 0.6)) /* mostly the ops whose outputs hold points outside an empty input */
    c->op = tu_rng_chance(r, 0.5) ? OP_AFFINE : tu_rng_chance(r, 0.5) ? OP_MAP : OP_ROTATE;
  ndf_interp_options_init(&c->o);
  c->o.order = (int)tu_rng_int(r, 0, 5);
  c->o.mode = (ndf_interp_mode)tu_rng_int(r, 0, NDF_INTERP_MODE_COUNT - 1);
  c->o.cval = tu_rng_chance(r, 0.5) ? 0.0 : floor(tu_rng_normal(r) * 5000) / 100;
  c->o.prefilter = tu_rng_chance(r, 0.8);
  c->nsp = (int)tu_rng_int(r, c->op == OP_ROTATE ? 2 : 1, c->op == OP_ROTATE ? 3 : 4);
  c->nb = c->op == OP_SPLINE1D ? 0 : (int)tu_rng_int(r, 0, 2);
  c->o.batch_dims = c->nb;
  c->nd = c->nb + c->nsp;
  const int64_t maxn = c->nsp == 1 ? 40 : c->nsp == 2 ? 14 : c->nsp == 3 ? 7 : 4;
  for (int d = 0; d < c->nd; d++) c->shape[d] = d < c->nb ? tu_rng_int(r, 1, 3) : tu_rng_int(r, 1, maxn);
  if (long_rows) c->shape[c->nd - 1] = tu_rng_int(r, 33, 300);
  c->empty = empty;
  if (empty) {
    c->shape[c->nb + tu_rng_int(r, 0, c->nsp - 1)] = 0;
    if (c->op == OP_MAP || c->op == OP_AFFINE || c->op == OP_ROTATE)
      c->o.mode = tu_rng_chance(r, 0.5) ? NDF_INTERP_CONSTANT : NDF_INTERP_GRID_CONSTANT;
  }
  c->dt = IN_DTYPES[tu_rng_int(r, 0, 10)];
  c->odt = tu_rng_chance(r, 0.4) ? OUT_DTYPES[tu_rng_int(r, 0, 10)] : c->dt;
  if (bools) {
    const int k = (int)tu_rng_int(r, 0, 2);
    if (k != 1) c->dt = NDF_BOOL;
    if (k != 0) c->odt = NDF_BOOL;
    if (c->op == OP_SPLINE1D && tu_rng_chance(r, 0.6)) c->o.order = (int)tu_rng_int(r, 0, 1);
  }
  if (c->op == OP_SPLINE && c->o.order < 2) c->o.order = (int)tu_rng_int(r, 2, 5);
  for (int d = 0; d < c->nd; d++) c->oshape[d] = c->shape[d];
  c->onsp = c->nsp;
  const int nsp = c->nsp, nb = c->nb;
  switch (c->op) {
    case OP_SPLINE1D: c->axis = (int)tu_rng_int(r, -c->nd, c->nd - 1); break;
    case OP_MAP:
      c->onsp = (int)tu_rng_int(r, 1, 3);
      c->cshape[0] = nsp;
      for (int d = 0; d < c->onsp; d++)
        c->oshape[nb + d] = c->cshape[1 + d] = tu_rng_int(r, 1, long_rows && d == c->onsp - 1 ? 300 : 8);
      c->ct = tu_rng_chance(r, 0.7) ? NDF_FLOAT64 : tu_rng_chance(r, 0.5) ? NDF_FLOAT32
              : tu_rng_chance(r, 0.5) ? NDF_INT16 : tu_rng_chance(r, 0.5) ? NDF_INT64 : NDF_UINT64;
      break;
    case OP_AFFINE:
      c->form = (int)tu_rng_int(r, 0, 2); /* 0 (n, n) + offset, 1 (n + 1, n + 1), 2 diagonal (n,) */
      for (int h = 0; h < nsp; h++) {
        c->vals[h] = tu_rng_normal(r) * 2;
        for (int l = 0; l < nsp; l++) c->mat[h * nsp + l] = (h == l) + tu_rng_normal(r) * 0.5;
      }
      c->nvals = nsp;
      for (int d = 0; d < nsp; d++) c->oshape[nb + d] = tu_rng_int(r, 1, long_rows && d == nsp - 1 ? 300 : maxn + 2);
      break;
    case OP_SHIFT:
      c->nvals = tu_rng_chance(r, 0.3) ? 1 : nsp;
      for (int d = 0; d < c->nvals; d++) c->vals[d] = tu_rng_chance(r, 0.3) ? floor(tu_rng_normal(r) * 6) / 2 : tu_rng_normal(r) * 3;
      break;
    case OP_ZOOM: {
      c->nvals = nsp;
      c->grid = tu_rng_chance(r, 0.4);
      for (int d = 0; d < nsp; d++) c->vals[d] = 0.5 + tu_rng_unif(r) * 2;
      if (tu_rng_chance(r, 0.08)) /* by exactly 1: with the prefilter, ndf_zoom's copy */
        for (int d = 0; d < nsp; d++) c->vals[d] = 1.0;
      if (empty) c->vals[tu_rng_int(r, 0, nsp - 1)] = tu_rng_chance(r, 0.5) ? 0.0 : tu_rng_unif(r) * 0.2;
      int64_t zs[NDF_MAX_NDIM];
      if (ndf_zoom_shape(c->nd, c->shape, nb, nsp, c->vals, zs) != NDF_OK) { /* an empty axis: zoom by 1 */
        for (int d = 0; d < nsp; d++) c->vals[d] = 1.0;
        ndf_zoom_shape(c->nd, c->shape, nb, nsp, c->vals, zs);
      }
      for (int d = 0; d < c->nd; d++) c->oshape[d] = zs[d];
      break;
    }
    case OP_ROTATE: {
      c->angle = tu_rng_chance(r, 0.3) ? 90.0 * (double)tu_rng_int(r, -3, 4) + (tu_rng_chance(r, 0.5) ? 45 : 0)
                                        : (tu_rng_unif(r) - 0.5) * 720;
      c->ax0 = (int)tu_rng_int(r, 0, nsp - 1);
      do c->ax1 = (int)tu_rng_int(r, 0, nsp - 1); while (c->ax1 == c->ax0);
      c->reshape = tu_rng_chance(r, 0.6);
      int64_t rs[NDF_MAX_NDIM];
      ndf_rotate_shape(c->nd, c->shape, nb, c->angle, c->ax0, c->ax1, c->reshape, rs);
      for (int d = 0; d < c->nd; d++) c->oshape[d] = rs[d];
      break;
    }
    default: break;
  }
  c->in_layout = pick_layout(r, 1);
  c->out_layout = tu_rng_chance(r, 0.5) ? TU_LAYOUT_C : TU_LAYOUT_PADDED;
  int n = snprintf(c->desc, sizeof c->desc, "%s%s %s->%s order %d mode %s cval %g prefilter %d batch %d shape ",
                   long_rows ? "(long rows) " : "", OP_NAMES[c->op], ndf_dtype_name(c->dt), ndf_dtype_name(c->odt), c->o.order,
                   ndf_interp_mode_name(c->o.mode), c->o.cval, c->o.prefilter, nb);
  for (int d = 0; d < c->nd; d++) n += snprintf(c->desc + n, sizeof c->desc - n, "%s%lld", d ? "x" : "", (long long)c->shape[d]);
  n += snprintf(c->desc + n, sizeof c->desc - n, " -> ");
  for (int d = 0; d < nb + c->onsp; d++)
    n += snprintf(c->desc + n, sizeof c->desc - n, "%s%lld", d ? "x" : "", (long long)c->oshape[d]);
  snprintf(c->desc + n, sizeof c->desc - n, " layouts %d/%d", c->in_layout, c->out_layout);
}

static void fill(const ndf_array *a, tu_rng *r) {
  const int64_t n = ndf_array_size(a);
  double lo = -1e4, hi = 1e4;
  if (!tu_is_float(a->dtype)) tu_int_range(a->dtype, &lo, &hi);
  const int full = tu_rng_chance(r, 0.3);
  for (int64_t i = 0; i < n; i++) {
    double v;
    if (a->dtype == NDF_BOOL) v = tu_rng_chance(r, 0.5);
    else if (tu_is_float(a->dtype)) v = tu_rng_normal(r) * 100;
    else if (full) v = lo + floor(tu_rng_unif(r) * (hi - lo + 1));
    else v = floor(tu_rng_unif(r) * 100) - (lo < 0 ? 50 : 0);
    if (v > hi) v = hi;
    tu_set(a, i, v);
  }
  if (a->dtype == NDF_BOOL && tu_rng_chance(r, 0.3)) /* bytes other than 0 and 1, read as their values */
    for (int64_t i = 0; i < n; i++)
      if (tu_rng_chance(r, 0.2)) *(uint8_t *)tu_elem_ptr(a, i) = (uint8_t)tu_rng_int(r, 2, 255);
  tu_offset64(a);
}

static int run_case(ndf_ctx *ctx, icase *c, tu_rng *r) {
  int rc = -1;
  tu_array hin = {0}, lin = {0}, hco = {0}, lco = {0}, mat = {0}, cout = {0}, gout = {0};
  tu_dev din = {0}, dco = {0}, dout = {0};
  assert_int_equal(tu_array_alloc(&hin, c->dt, c->nd, c->shape), 0);
  fill(&hin.arr, r);
  assert_int_equal(tu_array_relayout(&lin, &hin.arr, c->in_layout, r), 0);
  const ndf_array *pco = NULL, *pmat = NULL;
  if (c->op == OP_MAP) {
    assert_int_equal(tu_array_alloc(&hco, c->ct, 1 + c->onsp, c->cshape), 0);
    const int64_t per = ndf_array_size(&hco.arr) / c->nsp;
    for (int d = 0; d < c->nsp; d++)
      for (int64_t j = 0; j < per; j++) {
        const double n = (double)c->shape[c->nb + d];
        double v = -3 + tu_rng_unif(r) * (n + 5);
        if (c->ct == NDF_UINT64) v = fabs(v);
        if (!tu_is_float(c->ct) || tu_rng_chance(r, 0.2)) v = round(v);
        else if (tu_rng_chance(r, 0.2)) v = round(v * 2) / 2;
        tu_set(&hco.arr, d * per + j, v);
      }
    assert_int_equal(tu_array_relayout(&lco, &hco.arr, pick_layout(r, 1), r), 0);
  }
  if (c->op == OP_AFFINE) {
    const int n = c->nsp;
    if (c->form == 2) {
      const int64_t ms[1] = {n};
      assert_int_equal(tu_array_alloc(&mat, NDF_FLOAT64, 1, ms), 0);
      for (int h = 0; h < n; h++) tu_set(&mat.arr, h, fabs(c->mat[h * n + h]) < 0.2 ? 0.5 : c->mat[h * n + h]);
      if (!c->empty) /* an empty input keeps the drawn output shape: the per-axis tables of points outside it */
        for (int d = 0; d < c->nd; d++) c->oshape[d] = c->shape[d];
    } else if (c->form == 1) {
      const int64_t ms[2] = {n + 1, n + 1};
      assert_int_equal(tu_array_alloc(&mat, NDF_FLOAT64, 2, ms), 0);
      for (int h = 0; h <= n; h++)
        for (int l = 0; l <= n; l++)
          tu_set(&mat.arr, h * (n + 1) + l, h == n ? (l == n) : l == n ? c->vals[h] : c->mat[h * n + l]);
    } else {
      const int64_t ms[2] = {n, n};
      assert_int_equal(tu_array_alloc(&mat, NDF_FLOAT64, 2, ms), 0);
      for (int k = 0; k < n * n; k++) tu_set(&mat.arr, k, c->mat[k]);
    }
    pmat = &mat.arr;
  }
  const int ond = c->nb + c->onsp;
  assert_int_equal(tu_array_alloc(&cout, c->odt, ond, c->oshape), 0);
  ndf_status s = call(ctx, c, &hin.arr, c->op == OP_MAP ? &hco.arr : NULL, pmat, &cout.arr);
  if (s != NDF_OK) {
    printf("%s: CPU: %s %s\n", c->desc, ndf_status_name(s), ndf_errmsg(ctx));
    goto done;
  }
  assert_int_equal(tu_array_like(&gout, &cout.arr, c->out_layout, r), 0);
  tu_dev_upload(ctx, &din, &lin);
  if (c->op == OP_MAP) {
    tu_dev_upload(ctx, &dco, &lco);
    pco = &dco.arr;
  }
  tu_dev_upload(ctx, &dout, &gout);
  s = call(ctx, c, &din.arr, pco, pmat, &dout.arr);
  if (s == NDF_OK) s = ndf_ctx_synchronize(ctx);
  if (s != NDF_OK) {
    printf("%s: GPU: %s %s\n", c->desc, ndf_status_name(s), ndf_errmsg(ctx));
    goto done;
  }
  if (tu_dev_check(ctx, c->desc, "output", &dout, &gout, &cout.arr)) goto done;
  rc = 0;
done:
  tu_dev_free(ctx, &din);
  tu_dev_free(ctx, &dco);
  tu_dev_free(ctx, &dout);
  tu_array *all[] = {&hin, &lin, &hco, &lco, &mat, &cout, &gout};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tu_array_free(all[i]);
  return rc;
}

/* n random cases drawn by draw_case(long_rows, bools, empty) from the seed xored with salt, each GPU
 * against CPU; stops after 8 failures. */
static void run_drawn(gpu_state *s, uint64_t salt, long n, int long_rows, int bools, int empty, const char *what) {
  tu_rng r;
  tu_rng_seed(&r, s->seed ^ salt);
  int failed = 0;
  for (long k = 0; k < n && failed < 8; k++) {
    icase c;
    draw_case(&c, &r, long_rows, bools, empty);
    if (run_case(s->ctx, &c, &r) != 0) failed++;
  }
  if (failed) printf("%d %s interpolation cases failed; seed %llu\n", failed, what, (unsigned long long)s->seed);
  assert_int_equal(failed, 0);
}

static void test_gpu_interp_random(void **state) {
  gpu_state *s = *state;
  run_drawn(s, 0x1e7, s->ncases, 0, 0, 0, "random");
}

/* Every op with a bool input, a bool output or both: the bool store (scipy's C cast, OFLOAT 2),
 * spline_filter1d's copies of order <= 1 (NumPy's casts: v != 0 into a bool, a bool's bytes as 0 or 1
 * into another dtype) and spline_filter's passes through a bool output. */
static void test_gpu_interp_bool(void **state) {
  gpu_state *s = *state;
  run_drawn(s, 0x1e9, s->ncases / 2 > 40 ? s->ncases / 2 : 40, 0, 1, 0, "bool");
}

/* The same with rows up to 300 long: a thread's next point mostly in the same row (offsets
 * advanced in place, the zoom tables' records of the slower axes kept), and most points' taps
 * inside the input (the interior path) next to border points. */
static void test_gpu_interp_long_rows(void **state) {
  gpu_state *s = *state;
  run_drawn(s, 0x1e8, s->ncases / 4 > 20 ? s->ncases / 4 : 20, 1, 0, 0, "long-row");
}

/* Inputs with an empty spatial axis: the outputs of points outside them (map_coordinates, affine
 * with an output shape, rotate with reshape) in the constant and grid-constant modes, the padded
 * prefilter of grid-constant over no samples, and empty outputs (zoom, shift, spline filters)
 * that launch nothing. */
static void test_gpu_interp_empty(void **state) {
  gpu_state *s = *state;
  run_drawn(s, 0x1ea, s->ncases / 4 > 40 ? s->ncases / 4 : 40, 0, 0, 1, "empty-input");
}

/* 32- or 64-bit index arithmetic (the IDX32 slot) at the boundary: a uint8 input of 3 rows S apart
 * (S = 2^30 - 25) whose farthest element is at 2^31 - 1 (rows of 50: every offset fits int32) or
 * at 2^31 (rows of 51: 64-bit offsets), by zoom, affine_transform and map_coordinates (order 1),
 * GPU against CPU, with the specialization the kernel log saw.  Needs 2 GiB of device memory
 * (skipped, saying so, without it). */
static void test_gpu_interp_index_width(void **state) {
  gpu_state *s = *state;
  ndf_ctx *ctx = s->ctx;
  tu_rng r;
  tu_rng_seed(&r, s->seed ^ 0x400);
  const int64_t S = ((int64_t)1 << 30) - 25, span[1] = {2 * S + 51};
  ndf_array raw;
  if (ndf_array_alloc(ctx, &raw, NDF_DEVICE_CUDA, NDF_UINT8, 1, span) != NDF_OK) {
    printf("index width: no 2 GiB of device memory (%s); skipped\n", ndf_errmsg(ctx));
    return;
  }
  int failed = 0;
  for (int n1 = 50; n1 <= 51; n1++) {
    const int idx32 = n1 == 50;
    const int64_t ishape[2] = {3, n1};
    tu_array hin;
    assert_int_equal(tu_array_alloc(&hin, NDF_UINT8, 2, ishape), 0);
    for (int64_t i = 0; i < 3 * n1; i++) tu_set(&hin.arr, i, (double)tu_rng_int(&r, 0, 255));
    ndf_array din;
    assert_int_equal(ndf_array_init(&din, raw.data, NDF_DEVICE_CUDA, NDF_UINT8, 2, ishape), NDF_OK);
    din.strides[0] = S;
    for (int i = 0; i < 3; i++) { /* row by row (ndf_array_copy takes contiguous device arrays) */
      ndf_array hrow, drow;
      assert_int_equal(ndf_array_init(&hrow, (uint8_t *)hin.arr.data + i * n1, NDF_DEVICE_CPU, NDF_UINT8, 1, ishape + 1), NDF_OK);
      assert_int_equal(ndf_array_init(&drow, (uint8_t *)raw.data + i * S, NDF_DEVICE_CUDA, NDF_UINT8, 1, ishape + 1), NDF_OK);
      assert_int_equal(ndf_array_copy(ctx, &drow, &hrow), NDF_OK);
    }
    for (int op = 0; op < 3; op++) {
      ndf_interp_options o;
      ndf_interp_options_init(&o);
      o.order = 1;
      o.mode = op == 0 ? NDF_INTERP_MIRROR : op == 1 ? NDF_INTERP_REFLECT : NDF_INTERP_CONSTANT;
      const double z[2] = {1.0, 1.3}, mat[4] = {0.9, 0.1, -0.05, 1.1}, off[2] = {0.4, -2.5};
      /* zoom's shape; affine: 3x64; map: the coordinates' 64 points */
      int64_t os[2] = {op == 2 ? 64 : 3, 64};
      const int ond = op == 2 ? 1 : 2;
      if (op == 0) assert_int_equal(ndf_zoom_shape(2, ishape, 0, 2, z, os), NDF_OK);
      tu_array hco = {0}, cout, gout;
      ndf_array m, dco = {0}, dout;
      const int64_t ms[2] = {2, 2}, cs[2] = {2, 64};
      assert_int_equal(ndf_array_init(&m, (void *)mat, NDF_DEVICE_CPU, NDF_FLOAT64, 2, ms), NDF_OK);
      if (op == 2) {
        assert_int_equal(tu_array_alloc(&hco, NDF_FLOAT64, 2, cs), 0);
        for (int64_t j = 0; j < 64; j++) {
          tu_set(&hco.arr, j, -0.5 + tu_rng_unif(&r) * 3);
          tu_set(&hco.arr, 64 + j, -2 + tu_rng_unif(&r) * (n1 + 3));
        }
        assert_int_equal(ndf_array_alloc(ctx, &dco, NDF_DEVICE_CUDA, NDF_FLOAT64, 2, cs), NDF_OK);
        assert_int_equal(ndf_array_copy(ctx, &dco, &hco.arr), NDF_OK);
      }
      assert_int_equal(tu_array_alloc(&cout, NDF_FLOAT32, ond, os), 0);
      assert_int_equal(tu_array_alloc(&gout, NDF_FLOAT32, ond, os), 0);
      assert_int_equal(ndf_array_alloc(ctx, &dout, NDF_DEVICE_CUDA, NDF_FLOAT32, ond, os), NDF_OK);
      ndf_status st;
      st = op == 0 ? ndf_zoom(ctx, &hin.arr, &cout.arr, 2, z, 0, &o)
           : op == 1 ? ndf_affine_transform(ctx, &hin.arr, &m, 2, off, &cout.arr, &o)
                     : ndf_map_coordinates(ctx, &hin.arr, &hco.arr, &cout.arr, &o);
      assert_int_equal(st, NDF_OK);
      const uint64_t mark = tu_klog_mark(ctx);
      st = op == 0 ? ndf_zoom(ctx, &din, &dout, 2, z, 0, &o)
           : op == 1 ? ndf_affine_transform(ctx, &din, &m, 2, off, &dout, &o)
                     : ndf_map_coordinates(ctx, &din, &dco, &dout, &o);
      if (st == NDF_OK) st = ndf_array_copy(ctx, &gout.arr, &dout);
      assert_int_equal(st, NDF_OK);
      char desc[96], spec[64];
      snprintf(desc, sizeof desc, "index width: %s of rows of %d", op == 0 ? "zoom" : op == 1 ? "affine" : "map", n1);
      snprintf(spec, sizeof spec, "%s|IDX32=%d", op == 0 ? "ndf_interp_zoom" : "ndf_interp_eval", idx32);
      failed += tu_klog_check(ctx, mark, spec, 1, desc);
      if (memcmp(gout.arr.data, cout.arr.data, (size_t)ndf_array_size(&cout.arr) * 4) != 0) {
        printf("%s: the GPU's output differs from the CPU's\n", desc);
        failed++;
      }
      ndf_array_free(ctx, &dout);
      if (op == 2) ndf_array_free(ctx, &dco);
      tu_array_free(&hco);
      tu_array_free(&cout);
      tu_array_free(&gout);
    }
    tu_array_free(&hin);
  }
  ndf_array_free(ctx, &raw);
  assert_int_equal(failed, 0);
}

/* Zooms of a 3-D float32 volume by orders 1 and 3 (the fast paths), GPU against CPU, with the
 * specialization the kernel log saw. */
static void test_gpu_interp_zoom3d(void **state) {
  gpu_state *s = *state;
  ndf_ctx *ctx = s->ctx;
  tu_rng r;
  tu_rng_seed(&r, s->seed ^ 0x200);
  const int64_t shape[3] = {45, 54, 45};
  const double z[3] = {1.6, 1.7, 1.5};
  int64_t os[3];
  assert_int_equal(ndf_zoom_shape(3, shape, 0, 3, z, os), NDF_OK);
  int failed = 0;
  for (int order = 1; order <= 3; order += 2) {
    tu_array hin, cout, gout;
    tu_dev din = {0}, dout = {0};
    assert_int_equal(tu_array_alloc(&hin, NDF_FLOAT32, 3, shape), 0);
    fill(&hin.arr, &r);
    assert_int_equal(tu_array_alloc(&cout, NDF_FLOAT32, 3, os), 0);
    assert_int_equal(tu_array_alloc(&gout, NDF_FLOAT32, 3, os), 0);
    ndf_interp_options o;
    ndf_interp_options_init(&o);
    o.order = order;
    o.mode = NDF_INTERP_NEAREST;
    assert_int_equal(ndf_zoom(ctx, &hin.arr, &cout.arr, 3, z, 0, &o), NDF_OK);
    tu_dev_upload(ctx, &din, &hin);
    tu_dev_upload(ctx, &dout, &gout);
    const uint64_t mark = tu_klog_mark(ctx);
    const double t0 = tu_now_ms();
    assert_int_equal(ndf_zoom(ctx, &din.arr, &dout.arr, 3, z, 0, &o), NDF_OK);
    assert_int_equal(ndf_ctx_synchronize(ctx), NDF_OK);
    printf("zoom order %d of 45x54x45 float32 on the GPU: %.2f ms (first call compiles)\n", order, tu_now_ms() - t0);
    char desc[64], spec[64];
    snprintf(desc, sizeof desc, "zoom order %d", order);
    snprintf(spec, sizeof spec, "ndf_interp_zoom|ORDER=%d", order);
    failed += tu_klog_check(ctx, mark, spec, 1, desc);
    failed += tu_dev_check(ctx, desc, "output", &dout, &gout, &cout.arr);
    tu_dev_free(ctx, &din);
    tu_dev_free(ctx, &dout);
    tu_array_free(&hin);
    tu_array_free(&cout);
    tu_array_free(&gout);
  }
  assert_int_equal(failed, 0);
}

/* The prefilter's kernels: lines of n samples filtered in shared memory, 32,
 * 16 or 8 lines a block as n grows (within 48 KiB up to 186 samples, beyond
 * with the device's opt-in limit), in global memory for longer lines; along
 * the last axis and the first, each boundary initialization. */
static void test_gpu_interp_spline_paths(void **state) {
  gpu_state *s = *state;
  tu_rng r;
  tu_rng_seed(&r, s->seed ^ 0x300);
  static const int64_t lens[] = {2, 186, 187, 700, 1500, 3000, 5000};
  static const ndf_interp_mode modes[] = {NDF_INTERP_MIRROR, NDF_INTERP_REFLECT, NDF_INTERP_GRID_WRAP};
  int failed = 0;
  for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++)
    for (int last = 0; last < 2; last++) {
      icase c;
      memset(&c, 0, sizeof c);
      c.op = OP_SPLINE1D;
      ndf_interp_options_init(&c.o);
      c.o.order = k % 2 ? 5 : 3;
      c.o.mode = modes[(k + (size_t)last) % 3];
      c.nd = 2;
      c.nsp = 2;
      c.shape[0] = last ? 3 : lens[k];
      c.shape[1] = last ? lens[k] : 41;
      c.oshape[0] = c.shape[0];
      c.oshape[1] = c.shape[1];
      c.onsp = 2;
      c.axis = last ? 1 : 0;
      c.dt = k % 3 ? NDF_FLOAT64 : NDF_FLOAT32;
      c.odt = NDF_FLOAT64;
      c.in_layout = TU_LAYOUT_C;
      c.out_layout = TU_LAYOUT_C;
      snprintf(c.desc, sizeof c.desc, "spline_filter1d paths order %d mode %s %lldx%lld axis %d", c.o.order,
               ndf_interp_mode_name(c.o.mode), (long long)c.shape[0], (long long)c.shape[1], c.axis);
      const uint64_t mark = tu_klog_mark(s->ctx);
      if (run_case(s->ctx, &c, &r) != 0) failed++;
      /* 186 samples fit 48 KiB a block (32 lines), 5000 no device's shared memory; between, the device's limit decides */
      const char *spec = lens[k] <= 186 ? "ndf_interp_spline_tile" : lens[k] == 5000 ? "ndf_interp_spline"
                                                                   : "ndf_interp_spline_tile||ndf_interp_spline";
      failed += tu_klog_check(s->ctx, mark, spec, 1, c.desc);
    }
  assert_int_equal(failed, 0);
}

int main(void) {
  if (!tu_have_cuda()) return 77; /* ctest: skipped */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gpu_interp_random),
      cmocka_unit_test(test_gpu_interp_long_rows),
      cmocka_unit_test(test_gpu_interp_bool),
      cmocka_unit_test(test_gpu_interp_empty),
      cmocka_unit_test(test_gpu_interp_index_width),
      cmocka_unit_test(test_gpu_interp_zoom3d),
      cmocka_unit_test(test_gpu_interp_spline_paths),
  };
  return cmocka_run_group_tests(tests, group_setup, tu_gpu_teardown);
}
