/*
 * interp_cuda.c -- the CUDA backend of the interpolation family
 * (templates/interp.cu).  Both entry points follow the CPU backend step by
 * step, in float64 with the same order of operations, so the GPU gives the
 * CPU's values:
 *   spline_filter[1d]  per axis pass: the source (the input, then the output
 *                      in its dtype) copied to a contiguous float64 scratch,
 *                      filtered along the axis (a thread per line, lines
 *                      staged through shared memory), stored
 *                      into the output with C's cast (a copy of order
 *                      <= 1: NumPy's casts, interp.h's store rules);
 *   transforms         with a prefilter (order >= 2): every image copied to
 *                      float64 scratch with scipy's padding and filtered
 *                      along each spatial axis; then one thread per output
 *                      point evaluates the spline (ORDER, MODE and the
 *                      spatial rank compiled in); zoom and shift read each
 *                      axis's taps and weights from tables computed first,
 *                      once per output coordinate of that axis.  Where every
 *                      output index and element offset fits int32 (reach()),
 *                      the kernels do their index arithmetic in 32 bits
 *                      (the IDX32 slot).
 * Every kernel is compiled (or found in the cache) before anything runs, so a
 * compile failure writes nothing.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_params.generated.h"
#include "interp/interp.h"

static const char *ctype(ndf_dtype t) { return ndf__dtype_ctype(t); }

/* A kernel of the template; the slots a kernel does not read are given one fixed value so that
 * it compiles once for them. */
static ndf_status get(ndf_ctx *ctx, const char *name, const char *kernel, const char *t, const char *out,
                      const char *ct, int nsp, int order, int mode, int kind, int init, int ofloat, int idx32,
                      CUfunction *f) {
  ndf__kernel_req req;
  if (!ndf__req_interp(&req, kernel, t, out, ct, nsp, order, mode, kind, init, ofloat, idx32)) {
    ndf__req_free(&req);
    return ndf__error(ctx, NDF_EINTERNAL, "%s: no kernel %s for the types %s, %s, %s", name, kernel, t, out, ct);
  }
  ndf_status s = ndf__jit_get(ctx, name, &req, f);
  ndf__req_free(&req);
  return s;
}

static ndf_status get_load(ndf_ctx *ctx, const char *name, ndf_dtype t, CUfunction *f) {
  return get(ctx, name, "ndf_interp_load", ctype(t), "double", "double", 1, 0, 0, 0, 0, 1, 0, f);
}
/* The prefilter of one axis: ndf_interp_spline_tile where a tile of lines fits the shared memory,
 * else ndf_interp_spline. */
typedef struct spline_fns {
  CUfunction tile, line;
} spline_fns;

/* Lines per block of ndf_interp_spline_tile for lines of n samples (n (C + 1) doubles of shared
 * memory), 0 when none fits; *smem its bytes. */
static int spline_cols(const ndf_ctx *ctx, int64_t n, unsigned *smem) {
  static const int cs[] = {32, 16, 8};
  const size_t limit = ctx->max_smem_block > 49152 ? ctx->max_smem_block : 49152;
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
    const size_t bytes = (size_t)n * (size_t)(cs[i] + 1) * 8;
    if (n <= 65536 && bytes <= limit) {
      *smem = (unsigned)bytes;
      return cs[i];
    }
  }
  return 0;
}

/* The kernels the passes along axes[0..naxes) of shape need (tile and/or line). */
static ndf_status get_spline(ndf_ctx *ctx, const char *name, int init, const int64_t *shape, int naxes,
                             const int *axes, spline_fns *f) {
  unsigned smem;
  int need_tile = 0, need_line = 0;
  for (int k = 0; k < naxes; k++) {
    if (shape[axes[k]] <= 1) continue;
    if (spline_cols(ctx, shape[axes[k]], &smem)) need_tile = 1;
    else need_line = 1;
  }
  f->tile = f->line = NULL;
  ndf_status s = NDF_OK;
  if (need_tile) s = get(ctx, name, "ndf_interp_spline_tile", "double", "double", "double", 1, 0, 0, 0, init, 1, 0, &f->tile);
  if (s == NDF_OK && need_line)
    s = get(ctx, name, "ndf_interp_spline", "double", "double", "double", 1, 0, 0, 0, init, 1, 0, &f->line);
  return s;
}
/* The OFLOAT slot of an output dtype: 1 float, 2 bool (stored with C's cast, templates/interp.cu), 0 integer. */
static int ofloat(ndf_dtype out) { return out == NDF_BOOL ? 2 : ndf__dtype_is_float(out); }

static ndf_status get_store(ndf_ctx *ctx, const char *name, ndf_dtype out, CUfunction *f) {
  return get(ctx, name, "ndf_interp_store", "double", ctype(out), "double", 1, 0, 0, 0, 0, ofloat(out), 0, f);
}

/* Launches the load kernel: a (in) -> buf, images = the first nb axes, npad samples of padding per
 * spatial side (pad_const: the value pad, else the edge). */
static ndf_status launch_load(ndf_ctx *ctx, const char *name, CUfunction f, const ndf_array *a, int nb, int64_t npad,
                              int pad_const, double pad, CUdeviceptr buf, const int64_t *pshape, int64_t total) {
  ndf__interp_load_params p;
  memset(&p, 0, sizeof p);
  p.in = (CUdeviceptr)(uintptr_t)a->data;
  p.buf = buf;
  p.total = total;
  p.nb = nb;
  p.nsp = a->ndim - nb;
  p.npad = npad;
  p.pad_const = pad_const;
  p.pad = pad;
  for (int d = 0; d < a->ndim; d++) {
    p.shape[d] = a->shape[d];
    p.strides[d] = a->strides[d];
  }
  for (int d = 0; d < a->ndim - nb; d++) p.pshape[d] = pshape[d];
  p.idx32 = total <= (int64_t)UINT32_MAX;
  return ndf__interp_load_launch(ctx, name, f, ndf__grid(ctx, (total + 255) / 256, 32), 256, 1, 0, &p);
}

/* One prefilter pass of order's poles along axis of a contiguous float64 buffer of shape[0..ndim). */
static ndf_status launch_spline(ndf_ctx *ctx, const char *name, const spline_fns *f, CUdeviceptr buf, int ndim,
                                const int64_t *shape, int axis, int order, int init) {
  ndf__interp_spline_params p;
  memset(&p, 0, sizeof p);
  int64_t total = 1, inner = 1;
  for (int d = 0; d < ndim; d++) total *= shape[d];
  for (int d = axis + 1; d < ndim; d++) inner *= shape[d];
  p.buf = buf;
  p.n = shape[axis];
  p.lines = total / shape[axis];
  p.inner = inner;
  p.npoles = ndf__spline_poles(order, p.poles);
  for (int k = 0; k < p.npoles; k++) p.zn[k] = pow(p.poles[k], (double)(init == 1 ? p.n : p.n - 1));
  if (p.lines == 0 || p.n <= 1) return NDF_OK;
  unsigned smem = 0;
  const int cols = spline_cols(ctx, p.n, &smem);
  if (cols) {
    if (smem > 49152) {
      CUresult r = ndf__cu(NULL)->cuFuncSetAttribute(f->tile, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem);
      if (r != CUDA_SUCCESS) return ndf__cuda_error(ctx, name, r);
    }
    const int64_t tiles = inner == 1 ? (p.lines + cols - 1) / cols : p.lines / inner * ((inner + cols - 1) / cols);
    return ndf__interp_spline_launch(ctx, name, f->tile, ndf__grid(ctx, tiles, 32), (unsigned)cols, 1, smem, &p);
  }
  const int64_t blocks = (p.lines + 127) / 128;
  if (blocks > 0x7fffffff) return ndf__error(ctx, NDF_ENOTSUP, "%s: %lld lines are too many for one launch", name,
                                             (long long)p.lines);
  return ndf__interp_spline_launch(ctx, name, f->line, (unsigned)blocks, 128, 1, 0, &p);
}

/* Launches the store kernel: buf (contiguous, out's shape) into out by rule (NDF__STORE_*: int_copy). */
static ndf_status launch_store(ndf_ctx *ctx, const char *name, CUfunction f, CUdeviceptr buf, const ndf_array *out,
                               int rule, int64_t total) {
  ndf__interp_store_params p;
  memset(&p, 0, sizeof p);
  p.buf = buf;
  p.out = (CUdeviceptr)(uintptr_t)out->data;
  p.total = total;
  p.ndim = out->ndim;
  p.int_copy = rule;
  p.idx32 = total <= (int64_t)UINT32_MAX;
  for (int d = 0; d < out->ndim; d++) {
    p.shape[d] = out->shape[d];
    p.ostr[d] = out->strides[d];
  }
  return ndf__interp_store_launch(ctx, name, f, ndf__grid(ctx, (total + 255) / 256, 32), 256, 1, 0, &p);
}

ndf_status ndf__spline_filter_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out, int order,
                                   int naxes, const int *axes, ndf_interp_mode mode) {
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  const int64_t total = ndf_array_size(in);
  const int ndim = in->ndim, filter = order >= 2;
  /* A copy of a bool into another dtype reads its bytes as 0 or 1: the store kernel of a bool output
   * makes them so in a scratch copy (nz), which the pass then reads as its source. */
  const int bool_copy = ndf__spline_store_rule(filter, in->dtype, out->dtype) == NDF__STORE_NZ && out->dtype != NDF_BOOL;
  CUfunction f_load_in, f_load_out, f_store, f_store_nz = NULL;
  spline_fns f_spline = {NULL, NULL};
  if ((s = get_load(ctx, name, in->dtype, &f_load_in)) != NDF_OK) return s;
  if ((s = get_load(ctx, name, out->dtype, &f_load_out)) != NDF_OK) return s;
  if (filter && (s = get_spline(ctx, name, ndf__spline_init(mode), in->shape, naxes, axes, &f_spline)) != NDF_OK)
    return s;
  if ((s = get_store(ctx, name, out->dtype, &f_store)) != NDF_OK) return s;
  if (bool_copy && (s = get_store(ctx, name, NDF_BOOL, &f_store_nz)) != NDF_OK) return s;
  CUdeviceptr buf = 0, nzbuf = 0;
  if ((s = ndf__scratch_alloc(ctx, (size_t)total * sizeof(double), &buf)) != NDF_OK) return s;
  ndf_array nz;
  memset(&nz, 0, sizeof nz);
  if (bool_copy) {
    if ((s = ndf__scratch_alloc(ctx, (size_t)total, &nzbuf)) != NDF_OK) {
      ndf__scratch_free(ctx, buf);
      return s;
    }
    nz = *in;
    nz.data = (void *)(uintptr_t)nzbuf;
    for (int64_t d = ndim - 1, st = 1; d >= 0; st *= in->shape[d], d--) nz.strides[d] = st;
  }
  for (int k = 0; k < naxes && s == NDF_OK; k++) {
    const ndf_array *src = k == 0 ? in : out;
    int rule = ndf__spline_store_rule(filter, src->dtype, out->dtype);
    /* a copy in the source's layout: every axis but the last is a "batch" axis of the load */
    s = launch_load(ctx, name, k == 0 ? f_load_in : f_load_out, src, ndim - 1, 0, 0, 0.0, buf, src->shape + ndim - 1,
                    total);
    if (s == NDF_OK && filter) s = launch_spline(ctx, name, &f_spline, buf, ndim, in->shape, axes[k], order, ndf__spline_init(mode));
    if (s == NDF_OK && rule == NDF__STORE_NZ && out->dtype != NDF_BOOL) {
      s = launch_store(ctx, name, f_store_nz, buf, &nz, NDF__STORE_NZ, total);
      if (s == NDF_OK) s = launch_load(ctx, name, f_load_in, &nz, ndim - 1, 0, 0, 0.0, buf, nz.shape + ndim - 1, total);
      rule = NDF__STORE_WRAP;
    }
    if (s == NDF_OK) s = launch_store(ctx, name, f_store, buf, out, rule, total);
  }
  if (nzbuf) ndf__scratch_free(ctx, nzbuf);
  ndf__scratch_free(ctx, buf);
  return s;
}

/* The largest magnitude of an element offset an array's indexes reach (the sum of (extent - 1) |stride|),
 * INT64_MAX where that overflows; 0 for an empty array. */
static int64_t reach(int ndim, const int64_t *shape, const int64_t *strides) {
  int64_t r = 0, t;
  for (int d = 0; d < ndim; d++) {
    if (shape[d] == 0) return 0;
    if (!ndf__mul(shape[d] - 1, strides[d] < 0 ? -strides[d] : strides[d], &t) || r > INT64_MAX - t) return INT64_MAX;
    r += t;
  }
  return r;
}

ndf_status ndf__interp_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out,
                            const ndf__interp_plan *p) {
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  const int nb = p->nb, nsp = p->nsp, onsp = p->onsp;
  int64_t nbatch = 1, total = 1, pshape[NDF_MAX_SPATIAL], pvol = 1;
  for (int d = 0; d < nb; d++) nbatch *= in->shape[d];
  for (int d = 0; d < out->ndim; d++) total *= out->shape[d];
  if (nsp * onsp > 64) return ndf__error(ctx, NDF_ENOTSUP, "%s: a %dx%d matrix is too large", name, nsp, onsp);
  const ndf_array *cr = p->coords;
  const ndf_dtype src_t = p->filtered ? NDF_FLOAT64 : in->dtype;
  for (int d = 0; d < nsp; d++) {
    pshape[d] = in->shape[nb + d] + 2 * p->npad;
    pvol *= pshape[d];
  }
  /* 32-bit index arithmetic (IDX32) where every output index and every element offset of the output,
   * the source (the input, or the coefficients of every image) and the coordinates fits int32 */
  int64_t coeffs = -1;
  if (!ndf__mul(pvol, nbatch, &coeffs)) coeffs = -1;
  int64_t nrec = 0; /* zoom and shift: records of the per-axis tables (ndf_interp_ztab) */
  for (int d = 0; d < onsp; d++) nrec += out->shape[nb + d];
  const int idx32 = total <= INT32_MAX && reach(out->ndim, out->shape, out->strides) <= INT32_MAX &&
                    (p->kind != NDF__XF_ZOOMSHIFT || nrec <= INT32_MAX / (p->order + 1)) &&
                    (p->filtered ? coeffs >= 0 && coeffs <= INT32_MAX : reach(in->ndim, in->shape, in->strides) <= INT32_MAX) &&
                    (!cr || reach(cr->ndim, cr->shape, cr->strides) <= INT32_MAX);

  /* Every kernel first. */
  CUfunction f_load = NULL, f_eval;
  spline_fns f_spline = {NULL, NULL};
  if (p->filtered) {
    int64_t bshape[1 + NDF_MAX_SPATIAL];
    int axes[NDF_MAX_SPATIAL];
    bshape[0] = nbatch;
    for (int d = 0; d < nsp; d++) {
      bshape[1 + d] = in->shape[nb + d] + 2 * p->npad;
      axes[d] = 1 + d;
    }
    if ((s = get_load(ctx, name, in->dtype, &f_load)) != NDF_OK) return s;
    if ((s = get_spline(ctx, name, ndf__spline_init(p->mode), bshape, nsp, axes, &f_spline)) != NDF_OK) return s;
  }
  /* zoom and shift: per-axis tables (ndf_interp_ztab, then ndf_interp_zoom); affine and coordinates: per
   * point (ndf_interp_eval) */
  const int ztab = p->kind == NDF__XF_ZOOMSHIFT;
  CUfunction f_ztab = NULL;
  if ((s = get(ctx, name, ztab ? "ndf_interp_zoom" : "ndf_interp_eval", ctype(src_t), ctype(out->dtype),
               cr ? ctype(cr->dtype) : "double", nsp, p->order, (int)p->mode, (int)p->kind, 0,
               ofloat(out->dtype), idx32, &f_eval)) != NDF_OK)
    return s;
  if (ztab && (s = get(ctx, name, "ndf_interp_ztab", ctype(src_t), ctype(out->dtype), "double", nsp, p->order,
                       (int)p->mode, (int)p->kind, 0, ofloat(out->dtype), idx32, &f_ztab)) != NDF_OK)
    return s;

  CUdeviceptr buf = 0, tab = 0;
  if (p->filtered) {
    int64_t bytes = -1;
    if (coeffs < 0 || !ndf__mul(coeffs, 8, &bytes)) bytes = -1;
    if (bytes < 0) return ndf__error(ctx, NDF_ENOMEM, "%s: the spline coefficients overflow", name);
    if ((s = ndf__scratch_alloc(ctx, (size_t)bytes, &buf)) != NDF_OK) return s;
    s = launch_load(ctx, name, f_load, in, nb, p->npad, p->mode == NDF_INTERP_GRID_CONSTANT,
                    ndf__interp_pad_value(in->dtype, p->cval), buf, pshape, nbatch * pvol);
    int64_t bshape[1 + NDF_MAX_SPATIAL];
    bshape[0] = nbatch;
    for (int d = 0; d < nsp; d++) bshape[1 + d] = pshape[d];
    for (int d = 0; d < nsp && s == NDF_OK; d++) s = launch_spline(ctx, name, &f_spline, buf, 1 + nsp, bshape, 1 + d, p->order,
                                                            ndf__spline_init(p->mode));
  }

  if (s == NDF_OK) {
    ndf__interp_eval_params e;
    memset(&e, 0, sizeof e);
    e.src = p->filtered ? buf : (CUdeviceptr)(uintptr_t)in->data;
    e.out = (CUdeviceptr)(uintptr_t)out->data;
    e.coords = cr ? (CUdeviceptr)(uintptr_t)cr->data : 0;
    e.total = total;
    e.nb = nb;
    e.onsp = onsp;
    e.filtered = p->filtered;
    e.has_zoom = p->has_zoom;
    e.has_shift = p->has_shift;
    e.grid_mode = p->grid_mode;
    e.svol = pvol;
    e.npad = p->npad;
    e.cval = p->cval;
    int64_t st = 1;
    for (int d = nsp - 1; d >= 0; d--) {
      e.sshape[d] = p->filtered ? pshape[d] : in->shape[nb + d];
      e.sstr[d] = p->filtered ? st : in->strides[nb + d];
      if (p->filtered) st *= pshape[d];
    }
    for (int d = 0; d < in->ndim; d++) e.istr[d] = in->strides[d];
    for (int d = 0; d < out->ndim; d++) {
      e.oshape[d] = out->shape[d];
      e.ostr[d] = out->strides[d];
    }
    if (cr)
      for (int d = 0; d < cr->ndim; d++) e.cstr[d] = cr->strides[d];
    for (int d = 0; d < nsp; d++) {
      e.zoom[d] = p->zoom[d];
      e.shift[d] = p->shift[d];
      e.offset[d] = p->offset[d];
    }
    memcpy(e.matrix, p->matrix, sizeof(double) * (size_t)(nsp * onsp));
    if (ztab) {
      /* a record per output coordinate of every spatial axis: order + 1 weights (double) and offsets
       * (int32 or int64), and an int32 head */
      for (int d = 0; d < nsp; d++) {
        e.taxis[d] = e.tnrec;
        e.tnrec += out->shape[nb + d];
      }
      const size_t rec = (size_t)(p->order + 1) * (8 + (idx32 ? 4 : 8)) + 4;
      s = ndf__scratch_alloc(ctx, (size_t)(e.tnrec > 0 ? e.tnrec : 1) * rec, &tab);
      e.tab = e.tabw = tab;
      if (s == NDF_OK)
        s = ndf__interp_eval_launch(ctx, name, f_ztab, ndf__grid(ctx, (e.tnrec + 255) / 256, 32), 256, 1, 0, &e);
    }
    /* 256 threads a block, 4 points each (templates/interp.cu, NDF_IP_R) */
    if (s == NDF_OK) s = ndf__interp_eval_launch(ctx, name, f_eval, ndf__grid(ctx, (total + 1023) / 1024, 32), 256, 1, 0, &e);
  }
  if (tab) ndf__scratch_free(ctx, tab);
  if (buf) ndf__scratch_free(ctx, buf);
  return s;
}
