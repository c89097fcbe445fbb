/*
 * grey_cuda.c -- the CUDA backend of grey erosion/dilation: picks a kernel
 * per element class, requests its specialization from the JIT and launches
 * it on the context's stream.
 *
 *   flat box, extents <= 7 on the last three spatial axes (algorithm auto)
 *       -> grey_boxd (one fused pass by doubling; grey_box for 8-byte types
 *          or grey.box=classic) + one line pass per other spatial axis
 *          with extent > 1;
 *   other flat boxes -> one line pass per axis with extent > 1;
 *   any other element (or algorithm direct) -> grey_fp (taps from shared
 *       memory) where its taps lie on the last three spatial axes within 7
 *       per axis, at most 256 of them; else grey_taps with the element's tap
 *       table; algorithm decomposed runs its steps (grey.c).
 * A line pass is grey_line (van Herk/Gil-Werman, constant cost) for
 * algorithm vhgw, or auto from extent NDF__VHGW_MIN_CUDA on: there
 * grey_linew (last axis: one warp per chunk, doubling in registers) and
 * grey_linev (other axes: van Herk streamed by one thread per line segment),
 * within their limits; grey.line=lined runs grey_lined (doubling in
 * shared memory, where its segments are long enough), grey.line=classic
 * grey_line; else grey_taps
 * with a 1-D tap table, O(extent) per voxel (and for extents too large for
 * grey_line's shared memory: some hundreds, see line_geometry).
 * Separable passes are exact for min/max in every mode (cval padding and NaN
 * propagation commute with the axis-wise reduction).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grey/grey.h"
#include "jit.h"
#include "kernel_params.generated.h"
#include "tune.h"

#define BOX_MAX 7
#define BOX_TY 8
#define BOX_VX 4

static int kind_of(ndf_dtype t) { return t == NDF_FLOAT32 ? 1 : t == NDF_FLOAT64 ? 2 : 0; }

static void req_taps(ndf__kernel_req *r, ndf_dtype dtype, int nsp, ndf__minmax op, ndf_mode mode, int weighted) {
  double lo, hi;
  ndf__dtype_range(dtype, &lo, &hi);
  char t_lo[64], t_hi[64];
  snprintf(t_lo, sizeof t_lo, "%.1f", ndf__dtype_is_float(dtype) ? 0.0 : lo);
  snprintf(t_hi, sizeof t_hi, "%.1f", ndf__dtype_is_float(dtype) ? 0.0 : hi);
  ndf__req_grey_taps(r, dtype, nsp, (int)op, (int)mode, weighted, kind_of(dtype), t_lo, t_hi);
}

static void req_line(ndf__kernel_req *r, ndf_dtype dtype, ndf__minmax op, ndf_mode mode, int last, int dbl) {
  if (dbl) ndf__req_grey_lined(r, dtype, (int)op, (int)mode, last);
  else ndf__req_grey_line(r, dtype, (int)op, (int)mode, last);
}

static void req_box(ndf__kernel_req *r, ndf_dtype dtype, ndf__minmax op, ndf_mode mode, const int k[3], int zc) {
  ndf__req_grey_box(r, dtype, (int)op, (int)mode, k[0], k[1], k[2], BOX_TY, BOX_VX, zc, (int)ndf_dtype_size(dtype));
}

/* grey_fp (templates/grey_fp.cu): any element whose taps lie on the last
 * three spatial axes within FP_MAX per axis, at most FP_MAXTAPS taps; the
 * staging of grey_box, the taps from shared memory.  Where it does not apply
 * (larger elements, taps on a fourth spatial axis) grey_taps runs. */
#define FP_MAX 7
#define FP_MAXTAPS 256
/* The element's extent (*k) and least offset (*lo) on the Z, Y, X roles; 0
 * when grey_fp does not apply. */
static int fp_geometry(const ndf__grey_geom *g, int k[3], int lo[3]) {
  const int nsp = g->nsp;
  if (g->is_box || g->ntaps < 1 || g->ntaps > FP_MAXTAPS) return 0;
  for (int i = 0; i < 3; i++) { k[i] = 1; lo[i] = 0; }
  for (int d = 0; d < nsp; d++) {
    int32_t mn = INT32_MAX, mx = INT32_MIN;
    for (int64_t t = 0; t < g->ntaps; t++) {
      const int32_t o = g->taps[t * nsp + d];
      mn = o < mn ? o : mn;
      mx = o > mx ? o : mx;
    }
    const int role = d - (nsp - 3); /* 0 Z, 1 Y, 2 X; < 0: an axis in front of them */
    if (role < 0) {
      if (mn != 0 || mx != 0) return 0;
      continue;
    }
    if ((int64_t)mx - mn + 1 > FP_MAX) return 0;
    k[role] = (int)(mx - mn + 1);
    lo[role] = (int)mn;
  }
  /* The kernel folds the taps in the table's order, plane by plane: raster order (grey.c's). */
  for (int64_t t = 1; t < g->ntaps; t++) {
    int cmp = 0;
    for (int d = 0; d < nsp && !cmp; d++) {
      const int32_t a = g->taps[(t - 1) * nsp + d], b = g->taps[t * nsp + d];
      cmp = a < b ? -1 : a > b;
    }
    if (cmp >= 0) return 0;
  }
  return 1;
}

static void req_fp(ndf__kernel_req *r, ndf_dtype dtype, const ndf__grey_geom *g, const int k[3], int zc) {
  double lo, hi;
  ndf__dtype_range(dtype, &lo, &hi);
  char t_lo[64], t_hi[64];
  snprintf(t_lo, sizeof t_lo, "%.1f", ndf__dtype_is_float(dtype) ? 0.0 : lo);
  snprintf(t_hi, sizeof t_hi, "%.1f", ndf__dtype_is_float(dtype) ? 0.0 : hi);
  ndf__req_grey_fp(r, dtype, (int)g->op, (int)g->mode, k[0], k[1], k[2], BOX_TY, BOX_VX, zc, (int)ndf_dtype_size(dtype),
                   g->has_weights, kind_of(dtype), t_lo, t_hi);
}

/* A tunable (tune.h) of a grey call: w = (dtype, spatial axes, n, k) with
 * the axis length and extent of a line pass, or n = 0 and the largest
 * extent of the fused box kernels. */
static int grey_tune(ndf_ctx *ctx, ndf_dtype dt, const ndf__grey_geom *g, int64_t n, int64_t k, int id) {
  const ndf__tune_work w = {dt, g->nsp, n, k};
  return ndf__tune(ctx, id, &w);
}
static int64_t kmax3(const int k[3]) { return k[0] > k[1] ? (k[0] > k[2] ? k[0] : k[2]) : (k[1] > k[2] ? k[1] : k[2]); }

/* grey_boxd (templates/grey_boxd.cu): the fused box kernel by doubling.
 * Rows per thread RY (grey.boxd_ry, 1..8, default 8); the classic grey_box
 * runs instead with grey.box=classic, for types wider than 4 bytes, and
 * where the tile's shared memory does not fit. */
#define BOXD_XT 128
#define BOXD_NRC 2
static int boxd_ry(ndf_ctx *ctx, ndf_dtype dtype, const ndf__grey_geom *g, const int k[3]) {
  return grey_tune(ctx, dtype, g, 0, kmax3(k), NDF__TUNE_GREY_BOXD_RY);
}
static int boxd_applies(ndf_ctx *ctx, ndf_dtype dtype, const ndf__grey_geom *g, const int k[3]) {
  if (grey_tune(ctx, dtype, g, 0, kmax3(k), NDF__TUNE_GREY_BOX) == NDF__TUNE_GREY_BOX__CLASSIC) return 0;
  const size_t es = ndf_dtype_size(dtype);
  if (es > 4) return 0;
  const int64_t sh = (int64_t)BOXD_NRC * boxd_ry(ctx, dtype, g, k) + k[1] - 1;
  const int64_t sw = BOXD_XT + 4 * ((k[2] - 1 + 3) / 4);
  const int stages = es == 4 ? 2 : 1; /* the fewest the kernel uses */
  return ((int64_t)stages * sh * sw + sh * BOXD_XT) * (int64_t)es <= 49152;
}

static void req_boxd(ndf_ctx *ctx, ndf__kernel_req *r, ndf_dtype dtype, const ndf__grey_geom *g, ndf__minmax op,
                     ndf_mode mode, const int k[3]) {
  ndf__req_grey_boxd(r, dtype, (int)op, (int)mode, k[0], k[1], k[2], boxd_ry(ctx, dtype, g, k),
                     (int)ndf_dtype_size(dtype));
}

/* Number of trailing spatial axes the fused box kernel covers (0 = none). */
static int box_lines(ndf_ctx *ctx, ndf_dtype dtype, const ndf__grey_geom *g, int64_t k) {
  return grey_tune(ctx, dtype, g, 0, k, NDF__TUNE_GREY_BOX) == NDF__TUNE_GREY_BOX__LINES;
}
static int box_fused_axes(ndf_ctx *ctx, ndf_dtype dtype, const ndf__grey_geom *g) {
  if (!g->is_box || g->algo != NDF_GREY_AUTO) return 0;
  int n = g->nsp < 3 ? g->nsp : 3;
  int64_t kmax = 1;
  for (int d = g->nsp - n; d < g->nsp; d++) {
    if (g->box[d] > BOX_MAX) return 0;
    kmax = g->box[d] > kmax ? g->box[d] : kmax;
  }
  return box_lines(ctx, dtype, g, kmax) ? 0 : n;
}

/* Box extents (KZ, KY, KX) of the fused axes, 1 where absent. */
static void box_k(const ndf__grey_geom *g, int nf, int k[3], int lo[3]) {
  for (int i = 0; i < 3; i++) {
    int d = g->nsp - 3 + i;
    k[i] = (d >= g->nsp - nf && d >= 0) ? (int)g->box[d] : 1;
    lo[i] = (d >= g->nsp - nf && d >= 0) ? (int)g->lo[d] : 0;
  }
}

/* van Herk/Gil-Werman line pass (grey_line): lines per block and outputs per
 * segment for extent K on an axis of length n, within 48 KiB of shared
 * memory; 0 when K is too large for it (the O(K) pass runs instead). */
#define LINE_SMEM 49152
static int line_geometry(int64_t K, int64_t n, size_t es, int *cols, int *seg) {
  for (int c = 64; c >= 32; c /= 2) {
    int64_t rows = ((int64_t)LINE_SMEM - 16 * c) / ((int64_t)(c + 1) * (int64_t)es); /* S + K - 1 */
    int64_t S = rows - K + 1;
    if (S > K) S = K;
    if (S > n) S = n;
    if (S >= 1) {
      *cols = c;
      *seg = (int)S;
      return 1;
    }
  }
  return 0;
}

/* grey_lined (templates/grey_lined.cu): the line pass by doubling in shared
 * memory, 32 lines x S outputs per block of 256 threads, two buffers of
 * S + K - 1 rows.  Under auto only (algorithm vhgw keeps grey_line), where S
 * is at least about K / 2 (else the extra staging outweighs it);
 * grey.line=classic keeps grey_line. */
#define LINED_NL 32
#define LINED_NTH 256
/* Shared memory per block: 48 KiB, or grey.lined_kb (48..200: longer
 * segments, less staging overhead, fewer blocks per SM). */
static int64_t lined_budget(ndf_ctx *ctx, ndf_dtype dtype, const ndf__grey_geom *g, int64_t K, int64_t n) {
  return (int64_t)grey_tune(ctx, dtype, g, n, K, NDF__TUNE_GREY_LINED_KB) * 1024;
}
static int lined_geometry(ndf_ctx *ctx, ndf_dtype dtype, const ndf__grey_geom *g, int64_t K, int64_t n, size_t es,
                          int *seg) {
  int64_t rows = (lined_budget(ctx, dtype, g, K, n) - 16 * LINED_NL) / (2 * (int64_t)(LINED_NL + 1) * (int64_t)es);
  int64_t S = rows - K + 1;
  if (S > n) S = n;
  if (S < 1 || 2 * S < K + 1) return 0;
  *seg = (int)S;
  return 1;
}
static int use_lined(ndf_ctx *ctx, ndf_dtype dtype, const ndf__grey_geom *g, int64_t K, int64_t n, size_t es) {
  int sg;
  if (grey_tune(ctx, dtype, g, n, K, NDF__TUNE_GREY_LINE) == NDF__TUNE_GREY_LINE__CLASSIC) return 0;
  return g->algo == NDF_GREY_AUTO && K >= NDF__VHGW_MIN_CUDA && lined_geometry(ctx, dtype, g, K, n, es, &sg);
}

/* Whether the line pass of extent K runs grey_line (or grey_lined, see use_lined). */
static int use_line(const ndf__grey_geom *g, int64_t K, int64_t n, size_t es) {
  int c, sg;
  if (K <= 1 || !line_geometry(K, n, es, &c, &sg)) return 0;
  return g->algo == NDF_GREY_VHGW || (g->algo == NDF_GREY_AUTO && K >= NDF__VHGW_MIN_CUDA);
}

/* grey_linew / grey_linev (templates/grey_linew.cu, grey_linev.cu), the
 * line passes of auto by default: no block barrier, every load and store of
 * a warp 32 consecutive values.  grey_linew (the array's last axis) has the
 * extent as a slot (registers: 8 + ceil((K-1)/32) per lane), up to
 * LINEW_KMAX; grey_linev (other axes) keeps K values per thread in shared
 * memory, 32..128 threads per block within 48 KiB.  grey.line selects
 * the kernels of auto: "regs" (default) these, "lined" grey_lined,
 * "classic" grey_line, "linew" / "linev" one of these only.  grey.box=lines runs boxes of extents
 * <= 7 by these line passes too, in place of the fused box kernel. */
#define LINEW_KMAX 257
#define LINEW_WPB 8
#define LINEW_CO 256
#define LINEV_SMEM 49152
enum { LK_TAPS, LK_LINE, LK_LINED, LK_LINEW, LK_LINEV };
/* Which of the two grey.line allows: 1 grey_linew, 2 grey_linev (3: "regs";
 * "linew" / "linev": one of them, the other axes' passes as with "lined", to
 * time each kernel alone). */
static int line_regs(ndf_ctx *ctx, ndf_dtype dtype, const ndf__grey_geom *g, int64_t K, int64_t n, int last) {
  const int v = grey_tune(ctx, dtype, g, n, K, NDF__TUNE_GREY_LINE);
  const int m = v == NDF__TUNE_GREY_LINE__REGS ? 3 : v == NDF__TUNE_GREY_LINE__LINEW ? 1 : v == NDF__TUNE_GREY_LINE__LINEV ? 2 : 0;
  return (m & (last ? 1 : 2)) != 0;
}
static int linev_threads(int64_t K, size_t es) {
  for (int nt = 128; nt >= 32; nt -= 32)
    if (K * nt * (int64_t)es <= LINEV_SMEM) return nt;
  return 0;
}
/* The kernel of a box line pass of extent K along an axis of length n (the
 * array's last axis when last). */
static int line_kind(ndf_ctx *ctx, ndf_dtype dtype, const ndf__grey_geom *g, int64_t K, int64_t n, size_t es,
                     int last) {
  if (g->algo == NDF_GREY_AUTO && K >= 2 && K < NDF__VHGW_MIN_CUDA && box_lines(ctx, dtype, g, K) &&
      line_regs(ctx, dtype, g, K, n, last) && (last ? K <= LINEW_KMAX : linev_threads(K, es) > 0))
    return last ? LK_LINEW : LK_LINEV; /* grey.box=lines: small boxes by these passes too */
  if (!use_line(g, K, n, es)) return LK_TAPS;
  if (g->algo != NDF_GREY_AUTO) return LK_LINE;
  if (line_regs(ctx, dtype, g, K, n, last) && (last ? K <= LINEW_KMAX : linev_threads(K, es) > 0))
    return last ? LK_LINEW : LK_LINEV;
  return use_lined(ctx, dtype, g, K, n, es) ? LK_LINED : LK_LINE;
}
static void req_linek(ndf__kernel_req *r, int kind, ndf_dtype dtype, const ndf__grey_geom *g, int64_t K, int last) {
  if (kind == LK_LINEW) {
    ndf__req_grey_linew(r, dtype, (int)g->op, (int)g->mode, (int)K);
  } else if (kind == LK_LINEV) {
    ndf__req_grey_linev(r, dtype, (int)g->op, (int)g->mode);
  } else {
    req_line(r, dtype, g->op, g->mode, last, kind == LK_LINED);
  }
}
static int req_same(const ndf__kernel_req *a, const ndf__kernel_req *b) {
  if (strcmp(a->kernel, b->kernel) != 0 || a->nslots != b->nslots) return 0;
  for (int i = 0; i < a->nslots; i++)
    if (strcmp(a->slots[i].name, b->slots[i].name) != 0 ||
        strcmp(ndf__slot_value(&a->slots[i]), ndf__slot_value(&b->slots[i])) != 0)
      return 0;
  return 1;
}

int ndf__grey_cuda_requests(ndf_ctx *ctx, const ndf__grey_geom *g, ndf_dtype dtype, int ndim, ndf__kernel_req *reqs,
                            int max) {
  if (g->algo == NDF_GREY_DECOMPOSED) return ndf__grey_cuda_requests(ctx, g->step, dtype, ndim, reqs, max);
  int n = 0, nf = box_fused_axes(ctx, dtype, g);
  if (g->is_box) /* line passes (the warm shape is 64 per axis) */
    for (int d = 0; d < g->nsp - nf; d++) {
      const int last = d == g->nsp - 1, kind = line_kind(ctx, dtype, g, g->box[d], 64, ndf_dtype_size(dtype), last);
      if (kind == LK_TAPS || n >= max) continue;
      req_linek(&reqs[n], kind, dtype, g, g->box[d], last);
      int seen = 0;
      for (int i = 0; i < n; i++) seen |= req_same(&reqs[i], &reqs[n]);
      if (!seen) n++;
    }
  if (nf) {
    int k[3], lo[3];
    box_k(g, nf, k, lo);
    if (boxd_applies(ctx, dtype, g, k)) {
      if (n < max) req_boxd(ctx, &reqs[n++], dtype, g, g->op, g->mode, k);
    } else {
      if (n < max) req_box(&reqs[n++], dtype, g->op, g->mode, k, 32);
      if (n < max) req_box(&reqs[n++], dtype, g->op, g->mode, k, 4);
    }
  }
  int need_taps = !g->is_box;
  {
    int k[3], lo[3];
    if (fp_geometry(g, k, lo)) {
      need_taps = 0;
      if (n < max) req_fp(&reqs[n++], dtype, g, k, 32);
      if (n < max) req_fp(&reqs[n++], dtype, g, k, 4);
    }
  }
  for (int d = 0; d < g->nsp - nf; d++)
    need_taps |= g->box[d] > 1 && line_kind(ctx, dtype, g, g->box[d], 64, ndf_dtype_size(dtype), d == g->nsp - 1) == LK_TAPS;
  if (need_taps && n < max) req_taps(&reqs[n++], dtype, g->nsp, g->op, g->mode, g->has_weights);
  return n;
}

/* ---- launches ------------------------------------------------------------------------- */

/* A view of an array split into batch (outer) axes and spatial axes. */
typedef struct {
  int nb;
  int64_t bshape[NDF_MAX_NDIM], bistr[NDF_MAX_NDIM], bostr[NDF_MAX_NDIM];
} outer_axes;

/* One grey_taps pass (templates/grey_taps.cu) with the tap table taps (ntaps * nsp offsets). */
static ndf_status run_taps(ndf_ctx *ctx, const char *name, ndf_dtype dtype, const void *in, const int64_t *istr,
                           void *out, const int64_t *ostr, const int64_t *shape, int ndim, const ndf__grey_geom *g,
                           int64_t ntaps, const int32_t *taps, const double *wf, const double *wc) {
  const int nsp = g->nsp, nb = ndim - nsp;
  ndf__kernel_req req;
  req_taps(&req, dtype, nsp, g->op, g->mode, wf != NULL);
  CUfunction fn;
  ndf_status s = ndf__jit_get(ctx, name, &req, &fn);
  if (s != NDF_OK) return s;
  /* Device table: loff[ntaps] i64 | toff[ntaps*nsp] i32 (padded to 8) | wfirst | wcast. */
  size_t toff_bytes = ((size_t)ntaps * nsp * sizeof(int32_t) + 7) & ~(size_t)7;
  size_t bytes = (size_t)ntaps * 8 + toff_bytes + (wf ? 2 * (size_t)ntaps * sizeof(double) : 0);
  unsigned char *tab = calloc(1, bytes);
  if (!tab) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
  int64_t *loff = (int64_t *)tab;
  for (int64_t k = 0; k < ntaps; k++) {
    int64_t o = 0;
    for (int d = 0; d < nsp; d++) o += (int64_t)taps[k * nsp + d] * istr[nb + d];
    loff[k] = o;
  }
  memcpy(tab + ntaps * 8, taps, (size_t)ntaps * nsp * sizeof(int32_t));
  if (wf) {
    memcpy(tab + ntaps * 8 + toff_bytes, wf, (size_t)ntaps * sizeof(double));
    memcpy(tab + ntaps * 8 + toff_bytes + ntaps * sizeof(double), wc, (size_t)ntaps * sizeof(double));
  }
  CUdeviceptr dt = 0;
  s = ndf__device_table(ctx, tab, bytes, &dt);
  free(tab);
  if (s != NDF_OK) return s;

  int32_t rlo[NDF_MAX_SPATIAL], rhi[NDF_MAX_SPATIAL];
  for (int d = 0; d < nsp; d++) { rlo[d] = INT32_MAX; rhi[d] = INT32_MIN; }
  for (int64_t k = 0; k < ntaps; k++)
    for (int d = 0; d < nsp; d++) {
      int32_t o = taps[k * nsp + d];
      if (o < rlo[d]) rlo[d] = o;
      if (o > rhi[d]) rhi[d] = o;
    }
  int64_t nx = shape[ndim - 1], nrows = 1;
  for (int d = 0; d < ndim - 1; d++) nrows *= shape[d];
  unsigned bx = nx >= 256 ? 256 : (unsigned)((nx + 31) / 32 * 32);
  int64_t nchunks = (nx + bx - 1) / bx;

  ndf__taps_params p = {0};
  p.in = NDF__DPTR(in);
  p.out = NDF__DPTR(out);
  ndf__axes(p.shape, nsp, shape + nb);
  ndf__axes(p.istr, nsp, istr + nb);
  ndf__axes(p.ostr, nsp, ostr + nb);
  p.nb = nb;
  ndf__axes(p.bshape, nb, shape);
  ndf__axes(p.bistr, nb, istr);
  ndf__axes(p.bostr, nb, ostr);
  p.nrows = nrows;
  p.nchunks = nchunks;
  p.ntaps = (int)ntaps;
  p.loff = dt;
  p.toff = dt + ntaps * 8;
  p.wfirst = wf ? dt + ntaps * 8 + toff_bytes : 0;
  p.wcast = wf ? p.wfirst + ntaps * sizeof(double) : 0;
  for (int d = 0; d < nsp; d++) {
    p.rlo[d] = rlo[d];
    p.rhi[d] = rhi[d];
  }
  p.cval = g->cval;
  return ndf__taps_launch(ctx, name, fn, ndf__grid(ctx, nrows * nchunks, 32), bx, 1, 0, &p);
}

/* 1 if every offset inside one (Y, X) plane fits the box kernel's int offsets. */
static int plane_offsets_fit(const int64_t *shape, const int64_t *istr, int ndim) {
  int64_t span = 0;
  for (int d = ndim - 2; d < ndim; d++)
    if (d >= 0) span += (shape[d] - 1) * (istr[d] < 0 ? -istr[d] : istr[d]);
  return span < INT32_MAX;
}

/* Output planes per block of the box kernel: 32, or 4 when that leaves too
 * few blocks to fill the device. */
static int box_zc(const ndf_ctx *ctx, const int64_t *shape, int ndim) {
  int64_t ext[3], nouter = 1;
  for (int i = 0; i < 3; i++) ext[i] = ndim - 3 + i >= 0 ? shape[ndim - 3 + i] : 1;
  for (int d = 0; d < ndim - 3; d++) nouter *= shape[d];
  const int64_t xt = 32 * BOX_VX;
  int64_t blocks = ((ext[2] + xt - 1) / xt) * ((ext[1] + BOX_TY - 1) / BOX_TY) * ((ext[0] + 31) / 32) * nouter;
  return blocks < 2 * (int64_t)(ctx->sm_count > 0 ? ctx->sm_count : 132) ? 4 : 32;
}

/* The fields the line templates share (the same names in each struct): the
 * axis' length and strides, then the other axes (in array order) and their
 * product, the number of lines. */
#define SET_LINE_AXES(p, is_, os_, sh_, nd_, a_)                               \
  do {                                                                         \
    (p).n = (sh_)[a_];                                                         \
    (p).istr = (is_)[a_];                                                      \
    (p).ostr = (os_)[a_];                                                      \
    (p).nother = (nd_) - 1;                                                    \
    (p).nlines = 1;                                                            \
    for (int d_ = 0, i_ = 0; d_ < (nd_); d_++) {                               \
      if (d_ == (a_)) continue;                                                \
      (p).oshape[i_] = (sh_)[d_];                                              \
      (p).oistr[i_] = (is_)[d_];                                               \
      (p).oostr[i_] = (os_)[d_];                                               \
      (p).nlines *= (sh_)[d_];                                                 \
      i_++;                                                                    \
    }                                                                          \
  } while (0)

/* One van Herk/Gil-Werman pass along array axis a (templates/grey_line.cu). */
static ndf_status run_line(ndf_ctx *ctx, const char *name, ndf_dtype dtype, const void *in, const int64_t *istr,
                           void *out, const int64_t *ostr, const int64_t *shape, int ndim, const ndf__grey_geom *g,
                           int a, int64_t K, int64_t lo, int dbl) {
  int cols = 0, seg = 0;
  const size_t es = ndf_dtype_size(dtype);
  if (dbl) {
    cols = LINED_NL;
    lined_geometry(ctx, dtype, g, K, shape[a], es, &seg);
  } else {
    line_geometry(K, shape[a], es, &cols, &seg);
  }
  ndf__kernel_req req;
  req_line(&req, dtype, g->op, g->mode, a == ndim - 1, dbl);
  CUfunction fn;
  ndf_status s = ndf__jit_get(ctx, name, &req, &fn);
  if (s != NDF_OK) return s;
  ndf__line_params p = {0};
  p.in = NDF__DPTR(in);
  p.out = NDF__DPTR(out);
  SET_LINE_AXES(p, istr, ostr, shape, ndim, a);
  const int64_t nlines = p.nlines;
  p.nseg = (shape[a] + seg - 1) / seg;
  p.K = (int)K;
  p.lo = (int)lo;
  p.S = seg;
  p.cval = g->cval;
  const unsigned smem = (unsigned)(16 * cols + (dbl ? 2 : 1) * (size_t)(seg + K - 1) * (size_t)(cols + 1) * es);
  if (smem > LINE_SMEM) {
    CUresult r = ndf__cu(NULL)->cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem);
    if (r != CUDA_SUCCESS)
      return ndf__error(ctx, NDF_ENOTSUP, "%s: the line pass needs %u bytes of shared memory per block, more than "
                        "this device allows (grey.lined_kb)", name, smem);
  }
  int64_t tiles = (nlines + cols - 1) / cols * p.nseg;
  return ndf__line_launch(ctx, name, fn, ndf__grid(ctx, tiles, dbl ? 8 : 32), dbl ? LINED_NTH : (unsigned)cols, 1, smem,
                          &p);
}

/* grey_linew along the last axis a (templates/grey_linew.cu): one warp per
 * chunk of LINEW_CO outputs of a line. */
static ndf_status run_linew(ndf_ctx *ctx, const char *name, ndf_dtype dtype, const void *in, const int64_t *istr,
                            void *out, const int64_t *ostr, const int64_t *shape, int ndim, const ndf__grey_geom *g,
                            int a, int64_t K, int64_t lo) {
  ndf__kernel_req req;
  req_linek(&req, LK_LINEW, dtype, g, K, 1);
  CUfunction fn;
  ndf_status s = ndf__jit_get(ctx, name, &req, &fn);
  if (s != NDF_OK) return s;
  ndf__linew_params p = {0};
  p.in = NDF__DPTR(in);
  p.out = NDF__DPTR(out);
  SET_LINE_AXES(p, istr, ostr, shape, ndim, a);
  p.nchunk = (shape[a] + LINEW_CO - 1) / LINEW_CO;
  p.lo = (int)lo;
  p.cval = g->cval;
  const int64_t warps = p.nlines * p.nchunk;
  return ndf__linew_launch(ctx, name, fn, ndf__grid(ctx, (warps + LINEW_WPB - 1) / LINEW_WPB, 8), 32 * LINEW_WPB, 1, 0,
                           &p);
}

/* Segment length of grey_linev: grey.linev_l when set, else the axis
 * split in as many segments as fill the device's threads once (nt threads
 * and K * nt values of shared memory per block; registers, about 90 per
 * thread, are not counted: on the H200 this rule picks the fastest L at
 * 2048^2 size 63, L = 64, where L = 32, 128 or 256 take 16-70% more time),
 * but segments of at least K outputs (each segment also
 * reads K - 1 rows before its first output). */
static int64_t linev_segment(ndf_ctx *ctx, ndf_dtype dtype, const ndf__grey_geom *g, int64_t K, int64_t n,
                             int64_t nlines, int nt, size_t es) {
  if (n < 1) return 1;
  int64_t knob = grey_tune(ctx, dtype, g, n, K, NDF__TUNE_GREY_LINEV_L); /* min(knob, n, 2^30): L fits the kernel's int */
  if (knob >= 1) {
    if (knob > n) knob = n;
    return knob < (1 << 30) ? knob : (1 << 30);
  }
  const int64_t smem = K * nt * (int64_t)es + 1024, sm_smem = 227 * 1024;
  int64_t bps = sm_smem / smem, cap = 2048 / nt;
  if (bps > cap) bps = cap;
  if (bps < 1) bps = 1;
  const int64_t resident = (int64_t)(ctx->sm_count > 0 ? ctx->sm_count : 132) * bps * nt;
  int64_t nseg = resident / (nlines > 0 ? nlines : 1);
  if (nseg > n / K) nseg = n / K;
  if (nseg < (n >> 30) + 1) nseg = (n >> 30) + 1; /* L fits the kernel's int */
  return (n + nseg - 1) / nseg;
}

/* grey_linev along axis a, not the last (templates/grey_linev.cu). */
static ndf_status run_linev(ndf_ctx *ctx, const char *name, ndf_dtype dtype, const void *in, const int64_t *istr,
                            void *out, const int64_t *ostr, const int64_t *shape, int ndim, const ndf__grey_geom *g,
                            int a, int64_t K, int64_t lo) {
  const size_t es = ndf_dtype_size(dtype);
  const int nt = linev_threads(K, es);
  ndf__kernel_req req;
  req_linek(&req, LK_LINEV, dtype, g, K, 0);
  CUfunction fn;
  ndf_status s = ndf__jit_get(ctx, name, &req, &fn);
  if (s != NDF_OK) return s;
  ndf__linev_params p = {0};
  p.in = NDF__DPTR(in);
  p.out = NDF__DPTR(out);
  SET_LINE_AXES(p, istr, ostr, shape, ndim, a);
  const int64_t nlines = p.nlines;
  const int64_t L = linev_segment(ctx, dtype, g, K, shape[a], nlines, nt, es);
  p.nseg = (shape[a] + L - 1) / L;
  p.K = (int)K;
  p.lo = (int)lo;
  p.L = (int)L;
  p.cval = g->cval;
  const unsigned smem = (unsigned)(K * nt * (int64_t)es);
  const int64_t blocks = (nlines * p.nseg + nt - 1) / nt;
  return ndf__linev_launch(ctx, name, fn, ndf__grid(ctx, blocks, 2048 / nt), (unsigned)nt, 1, smem, &p);
}

/* The fields grey_box and grey_boxd share (the same names in both structs):
 * the Z, Y, X extents, strides and first tap offsets, then the outer axes. */
#define SET_BOX_AXES(p, ext_, is_, os_, lo_, nb_, sh_, bis_, bos_)              \
  do {                                                                         \
    (p).nz = (ext_)[0], (p).ny = (ext_)[1], (p).nx = (ext_)[2];                \
    (p).isz = (is_)[0], (p).isy = (is_)[1], (p).isx = (is_)[2];                \
    (p).osz = (os_)[0], (p).osy = (os_)[1], (p).osx = (os_)[2];                \
    (p).lz = (lo_)[0], (p).ly = (lo_)[1], (p).lx = (lo_)[2];                   \
    (p).nb = (nb_);                                                            \
    ndf__axes((p).bshape, (nb_), (sh_));                                       \
    ndf__axes((p).bistr, (nb_), (bis_));                                       \
    ndf__axes((p).bostr, (nb_), (bos_));                                       \
  } while (0)

/* The Z, Y, X roles of the last three axes of an array (size-1 stand-ins when it has fewer): their
 * extents and input and output strides; *nb gets the number of axes in front of them (the outer
 * axes), and the return value their element count. */
static int64_t zyx_axes(const int64_t *shape, const int64_t *istr, const int64_t *ostr, int ndim, int64_t ext[3],
                        int64_t is[3], int64_t os[3], int *nb) {
  for (int i = 0; i < 3; i++) {
    const int d = ndim - 3 + i;
    ext[i] = d >= 0 ? shape[d] : 1;
    is[i] = d >= 0 ? istr[d] : 0;
    os[i] = d >= 0 ? ostr[d] : 0;
  }
  *nb = ndim < 3 ? 0 : ndim - 3;
  int64_t nouter = 1;
  for (int d = 0; d < *nb; d++) nouter *= shape[d];
  return nouter;
}

static ndf_status run_box(ndf_ctx *ctx, const char *name, ndf_dtype dtype, const void *in, const int64_t *istr,
                          void *out, const int64_t *ostr, const int64_t *shape, int ndim, const ndf__grey_geom *g,
                          int nf) {
  int k[3], lo[3];
  box_k(g, nf, k, lo);
  /* Z, Y, X = the last three axes of the array (size-1 stand-ins when it has
   * fewer).  When the element spans fewer than three axes, the axes in front
   * of it (batch axes) take the Z/Y roles with extent 1, so a block marches
   * over many images instead of one plane. */
  int64_t ext[3], is[3], os[3];
  int nb; /* outer axes: batch + spatial axes not fused */
  const int64_t nouter = zyx_axes(shape, istr, ostr, ndim, ext, is, os, &nb);
  const int64_t xt = 32 * BOX_VX;
  int64_t ntx = (ext[2] + xt - 1) / xt, nty = (ext[1] + BOX_TY - 1) / BOX_TY;
  const int zc = box_zc(ctx, shape, ndim);
  int64_t ntz = (ext[0] + zc - 1) / zc;
  ndf__kernel_req req;
  req_box(&req, dtype, g->op, g->mode, k, zc);
  CUfunction fn;
  ndf_status s = ndf__jit_get(ctx, name, &req, &fn);
  if (s != NDF_OK) return s;
  ndf__box_params p = {0};
  p.in = NDF__DPTR(in);
  p.out = NDF__DPTR(out);
  SET_BOX_AXES(p, ext, is, os, lo, nb, shape, istr, ostr);
  p.ntx = ntx;
  p.nty = nty;
  p.ntz = ntz;
  p.nouter = nouter;
  p.cval = g->cval;
  return ndf__box_launch(ctx, name, fn, ndf__grid(ctx, ntx * nty * ntz * nouter, 32), 32, BOX_TY, 0, &p);
}

/* The fused box pass by doubling (grey_boxd); same axes roles as run_box.
 * Output planes per block zc: the Z extent spread over about one wave of
 * blocks (two per SM), so a block marches as far as it can without leaving
 * SMs idle (each block also reduces KZ - 1 halo planes). */
static ndf_status run_boxd(ndf_ctx *ctx, const char *name, ndf_dtype dtype, const void *in, const int64_t *istr,
                           void *out, const int64_t *ostr, const int64_t *shape, int ndim, const ndf__grey_geom *g,
                           int nf) {
  int k[3], lo[3];
  box_k(g, nf, k, lo);
  int64_t ext[3], is[3], os[3];
  int nb;
  const int64_t nouter = zyx_axes(shape, istr, ostr, ndim, ext, is, os, &nb);
  const int ty = BOXD_NRC * boxd_ry(ctx, dtype, g, k);
  int64_t ntx = (ext[2] + BOXD_XT - 1) / BOXD_XT, nty = (ext[1] + ty - 1) / ty;
  const int64_t slots = 2 * (int64_t)(ctx->sm_count > 0 ? ctx->sm_count : 132);
  const int64_t tiles = ntx * nty * nouter;
  int64_t zc = (ext[0] * tiles + slots - 1) / slots;
  if (zc < 1) zc = 1;
  if (zc > ext[0]) zc = ext[0] > 0 ? ext[0] : 1;
  int64_t ntz = (ext[0] + zc - 1) / zc;
  ndf__kernel_req req;
  req_boxd(ctx, &req, dtype, g, g->op, g->mode, k);
  CUfunction fn;
  ndf_status s = ndf__jit_get(ctx, name, &req, &fn);
  if (s != NDF_OK) return s;
  ndf__boxd_params p = {0};
  p.in = NDF__DPTR(in);
  p.out = NDF__DPTR(out);
  SET_BOX_AXES(p, ext, is, os, lo, nb, shape, istr, ostr);
  p.ntx = ntx;
  p.nty = nty;
  p.ntz = ntz;
  p.nouter = nouter;
  p.zc = zc;
  p.cval = g->cval;
  return ndf__boxd_launch(ctx, name, fn, ndf__grid(ctx, ntx * nty * ntz * nouter, 8), BOXD_XT, BOXD_NRC, 0, &p);
}

/* grey_fp over the last three axes of the array (the axes roles of run_box;
 * k, lo from fp_geometry). */
static ndf_status run_fp(ndf_ctx *ctx, const char *name, ndf_dtype dtype, const void *in, const int64_t *istr,
                         void *out, const int64_t *ostr, const int64_t *shape, int ndim, const ndf__grey_geom *g,
                         const int k[3], const int lo[3]) {
  const int nsp = g->nsp;
  const int64_t nt = g->ntaps;
  int64_t ext[3], is[3], os[3];
  int nb; /* outer axes: batch + spatial axes the element does not reach */
  const int64_t nouter = zyx_axes(shape, istr, ostr, ndim, ext, is, os, &nb);
  /* Table: wcast[nt] (f64, weighted only) | taps[nt] as (dy << 8) | dx; zs: taps per Z plane. */
  const size_t wbytes = g->has_weights ? (size_t)nt * sizeof(double) : 0;
  unsigned char *tab = calloc(1, wbytes + (size_t)nt * sizeof(int32_t));
  if (!tab) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
  if (wbytes) memcpy(tab, g->w_cast, wbytes);
  int32_t *tp = (int32_t *)(tab + wbytes);
  ndf__fp_params p = {0};
  for (int64_t t = 0; t < nt; t++) {
    int c[3];
    for (int i = 0; i < 3; i++) {
      const int d = nsp - 3 + i;
      c[i] = d >= 0 ? g->taps[t * nsp + d] - lo[i] : 0;
    }
    tp[t] = (c[1] << 8) | c[2];
    p.zs[c[0] + 1]++;
  }
  for (int i = 0; i < 7; i++) p.zs[i + 1] += p.zs[i];
  CUdeviceptr dt = 0;
  ndf_status s = ndf__device_table(ctx, tab, wbytes + (size_t)nt * sizeof(int32_t), &dt);
  free(tab);
  if (s != NDF_OK) return s;
  const int64_t xt = 32 * BOX_VX;
  const int zc = box_zc(ctx, shape, ndim);
  ndf__kernel_req req;
  req_fp(&req, dtype, g, k, zc);
  CUfunction fn;
  s = ndf__jit_get(ctx, name, &req, &fn);
  if (s != NDF_OK) return s;
  p.in = NDF__DPTR(in);
  p.out = NDF__DPTR(out);
  SET_BOX_AXES(p, ext, is, os, lo, nb, shape, istr, ostr);
  p.ntx = (ext[2] + xt - 1) / xt;
  p.nty = (ext[1] + BOX_TY - 1) / BOX_TY;
  p.ntz = (ext[0] + zc - 1) / zc;
  p.nouter = nouter;
  p.ntaps = (int)nt;
  p.taps = dt + wbytes;
  p.wfirst = g->has_weights ? g->w_first[0] : 0.0;
  p.wcast = g->has_weights ? dt : 0;
  p.cval = g->cval;
  return ndf__fp_launch(ctx, name, fn, ndf__grid(ctx, p.ntx * p.nty * p.ntz * nouter, 32), 32, BOX_TY, 0, &p);
}

ndf_status ndf__grey_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out,
                          const ndf__grey_geom *g) {
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  const int ndim = in->ndim, nsp = g->nsp;
  if (!g->is_box) {
    int k[3], lo[3];
    if (fp_geometry(g, k, lo) && plane_offsets_fit(in->shape, in->strides, ndim))
      return run_fp(ctx, name, in->dtype, in->data, in->strides, out->data, out->strides, in->shape, ndim, g, k, lo);
  }
  if (!g->is_box)
    return run_taps(ctx, name, in->dtype, in->data, in->strides, out->data, out->strides, in->shape, ndim, g,
                    g->ntaps, g->taps, g->w_first, g->w_cast);

  /* Separable box: the fused kernel for the trailing axes, then line passes
   * for the others, last axis first (the CPU's order). */
  int nf = box_fused_axes(ctx, in->dtype, g);
  if (!plane_offsets_fit(in->shape, in->strides, ndim)) nf = 0;
  int axes[NDF_MAX_SPATIAL], npass = 0;
  for (int d = 0; d < nsp - nf; d++)
    if (g->box[d] > 1) axes[npass++] = d;
  if (!nf)
    for (int d = nsp - nf; d < nsp; d++)
      if (g->box[d] > 1) axes[npass++] = d;
  int total = npass + (nf ? 1 : 0);
  if (total == 0) { /* all extents 1: a copy, by the box kernel (K = 1) or one line pass */
    if (plane_offsets_fit(in->shape, in->strides, ndim)) nf = nsp < 3 ? nsp : 3;
    else axes[npass++] = nsp - 1;
    total = 1;
  }

  const size_t es = ndf_dtype_size(in->dtype);
  const int nb = ndim - nsp;
  /* Resolve every kernel before the first launch: a compile or load failure
   * then leaves the output untouched (later lookups are memory hits). */
  {
    /* all at once: the ones not cached compile concurrently */
    ndf__kernel_req req[1 + NDF_MAX_NDIM];
    const ndf__kernel_req *rp[1 + NDF_MAX_NDIM];
    int nreq = 0;
    if (nf) {
      int k[3], lo[3];
      box_k(g, nf, k, lo);
      if (boxd_applies(ctx, in->dtype, g, k)) req_boxd(ctx, &req[nreq], in->dtype, g, g->op, g->mode, k);
      else req_box(&req[nreq], in->dtype, g->op, g->mode, k, box_zc(ctx, in->shape, ndim));
      nreq++;
    }
    for (int i = 0; i < npass; i++) {
      const int a = axes[i], last = nb + a == ndim - 1;
      const int kind = line_kind(ctx, in->dtype, g, g->box[a], in->shape[nb + a], es, last);
      if (kind != LK_TAPS) req_linek(&req[nreq], kind, in->dtype, g, g->box[a], last);
      else req_taps(&req[nreq], in->dtype, nsp, g->op, g->mode, 0);
      nreq++;
    }
    for (int i = 0; i < nreq; i++) rp[i] = &req[i];
    if (nreq > 0) s = ndf__jit_get_many(ctx, name, rp, nreq, NULL);
    for (int i = 0; i < nreq; i++) ndf__req_free(&req[i]);
    if (s != NDF_OK) return s;
  }
  int64_t n = ndf_array_size(in);
  CUdeviceptr tmp = 0;
  int64_t cstr[NDF_MAX_NDIM];
  int64_t st = 1;
  for (int d = ndim - 1; d >= 0; d--) { cstr[d] = st; st *= in->shape[d]; }
  if (total > 1 && (s = ndf__scratch_alloc(ctx, (size_t)n * es, &tmp)) != NDF_OK) return s;

  /* Pass i writes to out when (total - 1 - i) is even, else to tmp. */
  const void *src = in->data;
  const int64_t *sstr = in->strides;
  for (int i = 0; i < total && s == NDF_OK; i++) {
    int to_out = (total - 1 - i) % 2 == 0;
    void *dst = to_out ? out->data : (void *)(uintptr_t)tmp;
    const int64_t *dstr = to_out ? out->strides : cstr;
    if (nf && i == 0) {
      int k[3], lo[3];
      box_k(g, nf, k, lo);
      if (boxd_applies(ctx, in->dtype, g, k))
        s = run_boxd(ctx, name, in->dtype, src, sstr, dst, dstr, in->shape, ndim, g, nf);
      else
        s = run_box(ctx, name, in->dtype, src, sstr, dst, dstr, in->shape, ndim, g, nf);
    } else {
      /* line passes from the last axis to the first, after the fused pass
       * (which covers the last axes): ties resolve as on the CPU, the first
       * of equal extrema in raster order of the window (ADR 0008) */
      int a = axes[npass - 1 - (nf ? i - 1 : i)];
      const int kind = line_kind(ctx, in->dtype, g, g->box[a], in->shape[nb + a], es, nb + a == ndim - 1);
      if (kind != LK_TAPS) {
        if (kind == LK_LINEW)
          s = run_linew(ctx, name, in->dtype, src, sstr, dst, dstr, in->shape, ndim, g, nb + a, g->box[a], g->lo[a]);
        else if (kind == LK_LINEV)
          s = run_linev(ctx, name, in->dtype, src, sstr, dst, dstr, in->shape, ndim, g, nb + a, g->box[a], g->lo[a]);
        else
          s = run_line(ctx, name, in->dtype, src, sstr, dst, dstr, in->shape, ndim, g, nb + a, g->box[a], g->lo[a],
                       kind == LK_LINED);
        src = dst;
        sstr = dstr;
        continue;
      }
      int32_t taps[NDF_MAX_SPATIAL * 64];
      int64_t kk = g->box[a];
      int32_t *tp = kk * nsp <= (int64_t)(sizeof taps / sizeof taps[0]) ? taps : malloc((size_t)(kk * nsp) * sizeof(int32_t));
      if (!tp) { s = ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name); break; }
      for (int64_t k = 0; k < kk; k++)
        for (int d = 0; d < nsp; d++) tp[k * nsp + d] = d == a ? (int32_t)(g->lo[a] + k) : 0;
      s = run_taps(ctx, name, in->dtype, src, sstr, dst, dstr, in->shape, ndim, g, kk, tp, NULL, NULL);
      if (tp != taps) free(tp);
    }
    src = dst;
    sstr = dstr;
  }
  if (tmp) ndf__scratch_free(ctx, tmp);
  return s;
}
