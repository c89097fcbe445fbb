/*
 * metrics_cuda.c -- the CUDA backend of the image metrics
 * (templates/metrics.cu).  Every kernel of a call is resolved before
 * anything runs; the work is stream-ordered.  The one synchronization is
 * PSNR's default data_range on float images, whose range check reads a flag
 * before the result is written.
 *
 * Blocks per image depend only on the image's size (nblk_for), so the
 * block sums, and with them every result, are the same from run to run and
 * device to device.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "filters/filters.h"
#include "jit.h"
#include "kernel_params.generated.h"
#include "metrics/metrics.h"
#include "tune.h"

/* Blocks of 256 threads per image: about 16 elements a thread, at most 1024 blocks. */
static int nblk_for(int64_t vox) {
  int64_t b = (vox + 256 * 16 - 1) / (256 * 16);
  return (int)(b < 1 ? 1 : b > 1024 ? 1024 : b);
}

/* The C type a kernel reads a dtype as (bool as unsigned char). */
static ndf_dtype as_read(ndf_dtype t) { return t == NDF_BOOL ? NDF_UINT8 : t; }

static ndf_status get(ndf_ctx *ctx, const char *name, const char *kernel, ndf_dtype ta, ndf_dtype tb, const char *f,
                      const char *fo, CUfunction *fn) {
  ndf__kernel_req req;
  if (!ndf__req_metrics(&req, kernel, as_read(ta), as_read(tb), f, fo)) {
    ndf__req_free(&req);
    return ndf__error(ctx, NDF_EINTERNAL, "%s: no kernel %s for these types", name, kernel);
  }
  ndf_status s = ndf__jit_get(ctx, name, &req, fn);
  ndf__req_free(&req);
  return s;
}

/* The kernels of one call (up to 4, given as get's arguments): those in neither the memory nor
 * the disk cache compile concurrently (ndf__jit_get_many) instead of one after another. */
typedef struct kwant {
  const char *kernel;
  ndf_dtype ta, tb;
  const char *f, *fo;
  CUfunction *fn;
} kwant;

static ndf_status get_many(ndf_ctx *ctx, const char *name, const kwant *w, int n) {
  ndf__kernel_req req[4];
  const ndf__kernel_req *rp[4];
  CUfunction fns[4];
  if (n < 1 || n > 4) return ndf__error(ctx, NDF_EINTERNAL, "%s: %d kernels in one request set (1 to 4)", name, n);
  ndf_status s = NDF_OK;
  int k = 0;
  for (; k < n && s == NDF_OK; k++) {
    if (!ndf__req_metrics(&req[k], w[k].kernel, as_read(w[k].ta), as_read(w[k].tb), w[k].f, w[k].fo))
      s = ndf__error(ctx, NDF_EINTERNAL, "%s: no kernel %s for these types", name, w[k].kernel);
    rp[k] = &req[k];
  }
  if (s == NDF_OK) s = ndf__jit_get_many(ctx, name, rp, n, fns);
  for (int i = 0; i < k; i++) {
    if (s == NDF_OK) *w[i].fn = fns[i];
    ndf__req_free(&req[i]);
  }
  return s;
}

static CUdeviceptr dptr(const ndf_array *a) { return a ? (CUdeviceptr)(uintptr_t)a->data : 0; }

static void result_geom(const ndf_array *r, int64_t *shape, int64_t *str) {
  for (int d = 0; d < r->ndim; d++) {
    shape[d] = r->shape[d];
    str[d] = r->strides[d];
  }
}

static unsigned blocks_for(ndf_ctx *ctx, int64_t work) { return ndf__grid(ctx, work, 32); }

ndf_status ndf__metrics_stats_cuda(ndf_ctx *ctx, const char *name, ndf__metric_op op, const ndf_array *a,
                                   const ndf_array *b, ndf_array *result, const ndf__metrics_geom *g,
                                   double data_range) {
  const ndf__cu_api *cu = ndf__cu(NULL);
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  const char *f = g->f32 ? "float" : "double";
  CUfunction f_stats, f_fin;
  const kwant w[] = {{"ndf_metrics_stats", a->dtype, b->dtype, f, "double", &f_stats},
                     {"ndf_metrics_finish", NDF_FLOAT32, NDF_FLOAT32, "double", "double", &f_fin}};
  if ((s = get_many(ctx, name, w, 2)) != NDF_OK) return s;
  const int nblk = nblk_for(g->vox);
  const int64_t nparts = g->nimg * nblk;
  /* Scratch: status (256 bytes) | part (5 doubles per block) | cnt (3 int64 per block). */
  CUdeviceptr mem = 0;
  const size_t pbytes = (size_t)nparts * 40, cbytes = (size_t)nparts * 24;
  if ((s = ndf__scratch_alloc(ctx, 256 + pbytes + cbytes, &mem)) != NDF_OK) return s;
  const CUdeviceptr status = mem, part = mem + 256, cnt = mem + 256 + pbytes;
  CUresult cr = cu->cuMemsetD8Async(status, 0, 16, ctx->stream);
  if (cr != CUDA_SUCCESS) s = ndf__cuda_error(ctx, name, cr);
  ndf__metrics_stats_params ps = {.a = dptr(a), .b = dptr(b), .part = part, .cnt = cnt, .vox = g->vox,
                                  .nimg = g->nimg, .ndim = g->ndim, .nblk = nblk,
                                  .contig = ndf_array_is_contiguous(a) && ndf_array_is_contiguous(b)};
  for (int d = 0; d < g->ndim; d++) {
    ps.shape[d] = a->shape[d];
    ps.astr[d] = a->strides[d];
    ps.bstr[d] = b->strides[d];
  }
  if (s == NDF_OK) s = ndf__metrics_stats_launch(ctx, name, f_stats, blocks_for(ctx, nparts), 256, 1, 0, &ps);
  double lo = -1, hi = 1;
  if (!ndf__dtype_is_float(a->dtype)) ndf__metrics_int_range(a->dtype, &lo, &hi);
  ndf__metrics_finish_params pf = {.part = part, .cnt = cnt, .result = dptr(result), .status = status,
                                   .nimg = g->nimg, .vox = g->vox, .data_range = data_range, .lo = lo, .hi = hi,
                                   .op = (int32_t)op, .f32 = g->f32, .nb = g->nb, .nblk = nblk};
  result_geom(result, pf.rshape, pf.rstr);
  const unsigned fgrid = blocks_for(ctx, g->nimg); /* a block per image */
  if (s == NDF_OK && op == NDF__M_PSNR && data_range == 0 && ndf__dtype_is_float(a->dtype)) {
    /* The range check first: an image outside [-1, 1] is an error, and nothing may be written then. */
    pf.dry = 1;
    s = ndf__metrics_finish_launch(ctx, name, f_fin, fgrid, 256, 1, 0, &pf);
    int32_t h = 0;
    if (s == NDF_OK) {
      cr = cu->cuMemcpyDtoHAsync(&h, status, sizeof h, ctx->stream);
      if (cr == CUDA_SUCCESS) cr = cu->cuStreamSynchronize(ctx->stream);
      if (cr != CUDA_SUCCESS) s = ndf__cuda_error(ctx, name, cr);
    }
    if (s == NDF_OK && h)
      s = ndf__argerror(ctx, name, "data_range", "an image of image_true has values outside [-1, 1], the range of its "
                        "dtype %s: specify the data_range (scikit-image's rule)", ndf_dtype_name(a->dtype));
    pf.dry = 0;
  }
  if (s == NDF_OK) s = ndf__metrics_finish_launch(ctx, name, f_fin, fgrid, 256, 1, 0, &pf);
  ndf__scratch_free(ctx, mem);
  return s;
}

ndf_status ndf__metrics_ssim_prep_cuda(ndf_ctx *ctx, const char *name, const ndf_array *im1, const ndf_array *im2,
                                       int f32, ndf_array *yc, ndf_array *xx, ndf_array *yy, ndf_array *xy) {
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  CUfunction fn;
  if ((s = get(ctx, name, "ndf_metrics_ssim_prep", im1->dtype, im2->dtype, f32 ? "float" : "double", "double", &fn)) !=
      NDF_OK)
    return s;
  const int64_t n = ndf_array_size(im1);
  ndf__metrics_ssim_prep_params p = {.a = dptr(im1), .b = dptr(im2), .yc = dptr(yc), .xx = dptr(xx), .yy = dptr(yy),
                                     .xy = dptr(xy), .n = n, .ndim = im1->ndim,
                                     .contig = ndf_array_is_contiguous(im1) && ndf_array_is_contiguous(im2)};
  for (int d = 0; d < im1->ndim; d++) {
    p.shape[d] = im1->shape[d];
    p.astr[d] = im1->strides[d];
    p.bstr[d] = im2->strides[d];
  }
  return ndf__metrics_ssim_prep_launch(ctx, name, fn, blocks_for(ctx, (n + 255) / 256), 256, 1, 0, &p);
}

ndf_status ndf__metrics_ssim_cuda(ndf_ctx *ctx, const char *name, const ndf_array *const u[5], ndf_array *full,
                                  ndf_array *mssim, const ndf__metrics_geom *g, const ndf__ssim_plan *pl) {
  const ndf_array *x = u[0];
  const char *f = x->dtype == NDF_FLOAT32 ? "float" : "double";
  const char *fo = full && full->dtype == NDF_FLOAT32 ? "float" : "double";
  CUfunction f_ssim, f_mean = NULL;
  const kwant w[] = {{"ndf_metrics_ssim", NDF_FLOAT32, NDF_FLOAT32, f, fo, &f_ssim},
                     {"ndf_metrics_mean", NDF_FLOAT32, NDF_FLOAT32, "double", "double", &f_mean}};
  ndf_status s = get_many(ctx, name, w, mssim ? 2 : 1);
  if (s != NDF_OK) return s;
  const int nblk = nblk_for(g->vox);
  const int64_t nparts = g->nimg * nblk;
  CUdeviceptr part = 0;
  if (mssim && (s = ndf__scratch_alloc(ctx, (size_t)nparts * 8, &part)) != NDF_OK) return s;
  ndf__metrics_ssim_params p = {.ux = dptr(u[0]), .uy = dptr(u[1]), .uxx = dptr(u[2]), .uyy = dptr(u[3]),
                                .uxy = dptr(u[4]), .full = dptr(full), .part = part, .cov_norm = pl->cov_norm,
                                .C1 = pl->C1, .C2 = pl->C2, .vox = g->vox, .nimg = g->nimg, .pad = pl->pad,
                                .ndim = g->ndim, .nb = g->nb, .fcontig = full ? ndf_array_is_contiguous(full) : 1,
                                .want_sum = mssim != NULL, .nblk = nblk};
  for (int d = 0; d < g->ndim; d++) {
    p.shape[d] = x->shape[d];
    p.fstr[d] = full ? full->strides[d] : 0;
  }
  s = ndf__metrics_ssim_launch(ctx, name, f_ssim, blocks_for(ctx, nparts), 256, 1, 0, &p);
  if (s == NDF_OK && mssim) {
    double cnt = 1;
    for (int d = g->nb; d < g->ndim; d++) cnt *= (double)(x->shape[d] - 2 * pl->pad);
    ndf__metrics_mean_params pm = {.part = part, .result = dptr(mssim), .count = cnt, .nimg = g->nimg, .nb = g->nb,
                                   .nblk = nblk};
    result_geom(mssim, pm.rshape, pm.rstr);
    s = ndf__metrics_mean_launch(ctx, name, f_mean, blocks_for(ctx, g->nimg), 256, 1, 0, &pm);
  }
  if (part) ndf__scratch_free(ctx, part);
  return s;
}

ndf_status ndf__metrics_not_cuda(ndf_ctx *ctx, const char *name, const ndf_array *m, ndf_array *notm) {
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  CUfunction fn;
  if ((s = get(ctx, name, "ndf_metrics_not", m->dtype, NDF_FLOAT32, "double", "double", &fn)) != NDF_OK) return s;
  const int64_t n = ndf_array_size(m);
  ndf__metrics_not_params p = {.a = dptr(m), .out = dptr(notm), .n = n, .ndim = m->ndim,
                               .contig = ndf_array_is_contiguous(m)};
  for (int d = 0; d < m->ndim; d++) {
    p.shape[d] = m->shape[d];
    p.astr[d] = m->strides[d];
  }
  return ndf__metrics_not_launch(ctx, name, fn, blocks_for(ctx, (n + 255) / 256), 256, 1, 0, &p);
}

ndf_status ndf__metrics_hd_reduce_cuda(ndf_ctx *ctx, const char *name, const ndf_array *a, const ndf_array *d,
                                       const ndf__metrics_geom *g, CUdeviceptr dmax, CUdeviceptr cnt) {
  const ndf__cu_api *cu = ndf__cu(NULL);
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  CUfunction fn;
  if ((s = get(ctx, name, "ndf_metrics_hd_reduce", a->dtype, NDF_FLOAT32, "double", "double", &fn)) != NDF_OK)
    return s;
  CUresult cr = cu->cuMemsetD8Async(dmax, 0, (size_t)g->nimg * 8, ctx->stream);
  if (cr == CUDA_SUCCESS) cr = cu->cuMemsetD8Async(cnt, 0, (size_t)g->nimg * 8, ctx->stream);
  if (cr != CUDA_SUCCESS) return ndf__cuda_error(ctx, name, cr);
  const int nblk = nblk_for(g->vox);
  ndf__metrics_hd_reduce_params p = {.a = dptr(a), .d = dptr(d), .dmax = dmax, .cnt = cnt, .vox = g->vox,
                                     .nimg = g->nimg, .ndim = g->ndim, .contig = ndf_array_is_contiguous(a),
                                     .nblk = nblk};
  for (int k = 0; k < g->ndim; k++) {
    p.shape[k] = a->shape[k];
    p.astr[k] = a->strides[k];
  }
  return ndf__metrics_hd_reduce_launch(ctx, name, fn, blocks_for(ctx, g->nimg * nblk), 256, 1, 0, &p);
}

ndf_status ndf__metrics_hd_finish_cuda(ndf_ctx *ctx, const char *name, ndf_array *result,
                                       const ndf__metrics_geom *g, CUdeviceptr dmax, CUdeviceptr cnt) {
  CUfunction fn;
  ndf_status s = get(ctx, name, "ndf_metrics_hd_finish", NDF_FLOAT32, NDF_FLOAT32, "double", "double", &fn);
  if (s != NDF_OK) return s;
  ndf__metrics_hd_finish_params p = {.dmax = dmax, .cnt = cnt, .result = dptr(result), .nimg = g->nimg, .nb = g->nb};
  result_geom(result, p.rshape, p.rstr);
  return ndf__metrics_hd_finish_launch(ctx, name, fn, (unsigned)((g->nimg + 255) / 256), 256, 1, 0, &p);
}

/* ---- SSIM, the five filters fused ---------------------------------------------------- */

#define SEG 8         /* ndf_ssim_seg: outputs per thread (NDF_SL_SEG) */
#define SEG_BLOCK 256 /* its threads per block (NDF_SL_BLOCK) */
#define SEG_RAD 12    /* the largest radius it takes (the spec's RAD domain; wt holds 2 RAD + 1) */

int ndf__metrics_ssim_fused_wanted(ndf_ctx *ctx, const ndf_array *im1) {
  const ndf__tune_work w = {im1->dtype, im1->ndim, ndf_array_size(im1), 0};
  return ndf__tune(ctx, NDF__TUNE_SSIM_PATH, &w) == NDF__TUNE_SSIM_PATH__FUSED;
}

ndf_status ndf__metrics_ssim_fused_cuda(ndf_ctx *ctx, const char *name, const ndf_array *im1, const ndf_array *im2,
                                        ndf_array *full, ndf_array *mssim, const ndf__metrics_geom *g,
                                        const ndf__ssim_plan *pl, int gauss, double sigma) {
  /* The window: K taps read from x - pre (the filters' uniform_filter / gaussian_filter pass). */
  int64_t K = pl->win_size, radius = 0;
  double *wts = NULL;
  if (gauss) {
    if (!(sigma > 1e-15)) return NDF_ENOTSUP; /* scipy leaves the axis unfiltered */
    radius = (int64_t)(3.5 * sigma + 0.5);
    K = 2 * radius + 1;
    if (!(wts = malloc((size_t)K * sizeof *wts))) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
    ndf__gaussian_kernel(sigma, 0, radius, wts);
    if (ndf__filters_symmetry(wts, K) != 1) { /* scipy's symmetric pairing is the only order the kernel has */
      free(wts);
      return NDF_ENOTSUP;
    }
  }
  const int f32 = im1->dtype == NDF_FLOAT32;
  const char *F = f32 ? "float" : "double", *FO = full && full->dtype == NDF_FLOAT32 ? "float" : "double";
  /* Gaussian windows up to radius SEG_RAD run on the segment kernel; its blocks are counted per image. */
  const int nd = g->ndim, nb = g->nb, last_axis = nd - 1;
  const int64_t n = ndf_array_size(im1), nimg = g->nimg > 0 ? g->nimg : 1;
  int seg = gauss && radius <= SEG_RAD && n > 0;
  int64_t bpi[NDF_MAX_SPATIAL] = {0};
  for (int k = 0; k < g->nsp && seg; k++) {
    const int64_t len = im1->shape[nb + k], ipi = n / len / nimg * ((len + SEG - 1) / SEG);
    bpi[k] = (ipi + SEG_BLOCK - 1) / SEG_BLOCK;
    if (bpi[k] > INT32_MAX / nimg) seg = 0; /* a grid beyond 2^31 blocks: the line kernel */
  }
  ndf_status s = ndf__ctx_bind(ctx);
  /* Every pass's kernel first: a compile failure writes nothing. */
  /* Requested together: those not cached compile concurrently (ndf__jit_get_many). */
  CUfunction fn[NDF_MAX_SPATIAL + 1], f_mean = NULL;
  ndf__kernel_req req[NDF_MAX_SPATIAL + 1];
  const ndf__kernel_req *rp[NDF_MAX_SPATIAL + 1];
  int nreq = 0;
  for (int k = 0; k < g->nsp && s == NDF_OK; k++) {
    const int first = k == 0, last = k == g->nsp - 1;
    if (!ndf__req_metrics_ssim(&req[k], seg ? "ndf_ssim_seg" : "ndf_ssim_lines", first ? as_read(im1->dtype) : NDF_FLOAT32,
                               first ? as_read(im2->dtype) : NDF_FLOAT32, F, last ? FO : "double", first, last,
                               gauss, seg ? (int)radius : 0))
      s = ndf__error(ctx, NDF_EINTERNAL, "%s: no SSIM line kernel for these types", name);
    rp[k] = &req[k];
    nreq = k + 1;
  }
  if (s == NDF_OK && mssim) {
    if (!ndf__req_metrics(&req[nreq], "ndf_metrics_mean", NDF_FLOAT32, NDF_FLOAT32, "double", "double"))
      s = ndf__error(ctx, NDF_EINTERNAL, "%s: no kernel ndf_metrics_mean for these types", name);
    rp[nreq] = &req[nreq];
    nreq++;
  }
  if (s == NDF_OK && nreq > 0) s = ndf__jit_get_many(ctx, name, rp, nreq, fn);
  if (s == NDF_OK && mssim) f_mean = fn[nreq - 1];
  for (int k = 0; k < nreq; k++) ndf__req_free(&req[k]);
  CUdeviceptr wdev = 0;
  double wt[2 * SEG_RAD + 1] = {0};
  if (s == NDF_OK && gauss && !seg) s = ndf__device_table(ctx, wts, (size_t)K * sizeof *wts, &wdev);
  if (seg) memcpy(wt, wts, (size_t)K * sizeof *wts);
  free(wts);
  if (s != NDF_OK) return s;

  /* Scratch: two sets of five contiguous arrays of the float type (one for two axes, none for one),
   * and the sums of the last pass (per line, or per block of the segment kernel). */
  const int64_t esz = f32 ? 4 : 8;
  const int64_t nlast = seg ? nimg * bpi[g->nsp - 1] : n / im1->shape[last_axis];
  const int nsets = g->nsp >= 3 ? 2 : g->nsp == 2 ? 1 : 0;
  CUdeviceptr set[2][5] = {{0}}, part = 0;
  for (int a = 0; a < nsets && s == NDF_OK; a++)
    for (int q = 0; q < 5 && s == NDF_OK; q++) s = ndf__scratch_alloc(ctx, (size_t)(n * esz), &set[a][q]);
  if (s == NDF_OK && mssim) s = ndf__scratch_alloc(ctx, (size_t)nlast * 8, &part);
  int64_t cstr[NDF_MAX_NDIM], st = 1;
  for (int d = nd - 1; d >= 0; d--) {
    cstr[d] = st;
    st *= im1->shape[d];
  }
  for (int k = 0; k < g->nsp && s == NDF_OK; k++) {
    const int ax = nb + k, first = k == 0, last = k == g->nsp - 1;
    const CUdeviceptr *in = set[(k + 1) % 2], *out = set[k % 2]; /* pass k writes set k % 2 */
    ndf__ssim_lines_params p = {.n = im1->shape[ax], .nlines = n / im1->shape[ax], .K = K, .pre = K / 2,
                                .pad = pl->pad, .cov_norm = pl->cov_norm, .C1 = pl->C1, .C2 = pl->C2,
                                .ident = !gauss && K == 1, .w = wdev};
    if (seg) {
      memcpy(p.wt, wt, sizeof wt);
      p.lpi = p.nlines / nimg;
      p.nseg = (p.n + SEG - 1) / SEG;
      p.ipi = p.lpi * p.nseg;
      p.bpi = bpi[k];
      p.along = cstr[ax] == 1;
    }
    if (first) {
      p.a = dptr(im1);
      p.b = dptr(im2);
      p.astr = im1->strides[ax];
      p.bstr = im2->strides[ax];
    } else {
      p.u0 = in[0], p.u1 = in[1], p.u2 = in[2], p.u3 = in[3], p.u4 = in[4];
    }
    if (last) {
      p.full = dptr(full);
      p.part = part;
      p.fstr = full ? full->strides[ax] : 0;
    } else {
      p.o0 = out[0], p.o1 = out[1], p.o2 = out[2], p.o3 = out[3], p.o4 = out[4];
    }
    p.ustr = cstr[ax];
    for (int d = 0; d < nd; d++) {
      if (d == ax) continue;
      const int o = p.nother++;
      p.oshape[o] = im1->shape[d];
      p.oastr[o] = im1->strides[d];
      p.obstr[o] = im2->strides[d];
      p.oustr[o] = cstr[d];
      p.ofstr[o] = full ? full->strides[d] : 0;
      p.ocrop[o] = d >= nb;
    }
    if (seg) s = ndf__ssim_lines_launch(ctx, name, fn[k], (unsigned)(nimg * p.bpi), SEG_BLOCK, 1, 0, &p);
    else s = ndf__ssim_lines_launch(ctx, name, fn[k], blocks_for(ctx, (p.nlines + 127) / 128), 128, 1, 0, &p);
  }
  if (s == NDF_OK && mssim) {
    /* The last pass's lines run over the other axes in array order, batch axes outermost:
     * image i owns lines (or the segment kernel's blocks) i * L .. i * L + L - 1. */
    double cnt = 1;
    for (int d = nb; d < nd; d++) cnt *= (double)(im1->shape[d] - 2 * pl->pad);
    ndf__metrics_mean_params pm = {.part = part, .result = dptr(mssim), .count = cnt, .nimg = g->nimg,
                                   .nblk = nlast / g->nimg, .nb = nb};
    result_geom(mssim, pm.rshape, pm.rstr);
    s = ndf__metrics_mean_launch(ctx, name, f_mean, blocks_for(ctx, g->nimg), 256, 1, 0, &pm);
  }
  for (int a = 0; a < nsets; a++)
    for (int q = 0; q < 5; q++)
      if (set[a][q]) ndf__scratch_free(ctx, set[a][q]);
  if (part) ndf__scratch_free(ctx, part);
  return s;
}

/* The directed term as NumPy's percentile q (< 100) of the distances at the points of a:
 * the two ranks of its virtual index by an 8-pass radix select on the distances' bits, then
 * the interpolation, into dmax[img]; cnt[img] (from ndf__metrics_hd_reduce_cuda) counts the points. */
ndf_status ndf__metrics_hd_percentile_cuda(ndf_ctx *ctx, const char *name, const ndf_array *a, const ndf_array *d,
                                           const ndf__metrics_geom *g, double q, CUdeviceptr dmax, CUdeviceptr cnt) {
  const ndf__cu_api *cu = ndf__cu(NULL);
  CUfunction f_rank, f_hist, f_pick, f_lerp;
  const kwant w[] = {{"ndf_metrics_hd_rank", NDF_FLOAT32, NDF_FLOAT32, "double", "double", &f_rank},
                     {"ndf_metrics_hd_hist", a->dtype, NDF_FLOAT32, "double", "double", &f_hist},
                     {"ndf_metrics_hd_pick", NDF_FLOAT32, NDF_FLOAT32, "double", "double", &f_pick},
                     {"ndf_metrics_hd_lerp", NDF_FLOAT32, NDF_FLOAT32, "double", "double", &f_lerp}};
  ndf_status s = get_many(ctx, name, w, 4);
  if (s != NDF_OK) return s;
  /* Scratch: hist (2 x nimg x 256 u32) | sel (2 x nimg x 2 i64) | gamma (nimg f64). */
  const size_t hbytes = (size_t)g->nimg * 2 * 256 * 4, sbytes = (size_t)g->nimg * 2 * 16;
  CUdeviceptr mem = 0;
  if ((s = ndf__scratch_alloc(ctx, hbytes + sbytes + (size_t)g->nimg * 8, &mem)) != NDF_OK) return s;
  const CUdeviceptr hist = mem, sel = mem + hbytes, gamma = mem + hbytes + sbytes;
  CUresult cr = cu->cuMemsetD8Async(hist, 0, hbytes, ctx->stream);
  if (cr != CUDA_SUCCESS) s = ndf__cuda_error(ctx, name, cr);
  const unsigned ig = (unsigned)((g->nimg + 255) / 256), pg = (unsigned)((2 * g->nimg + 255) / 256);
  ndf__metrics_hd_rank_params pr = {.cnt = cnt, .sel = sel, .gamma = gamma, .q = q, .nimg = g->nimg};
  if (s == NDF_OK) s = ndf__metrics_hd_rank_launch(ctx, name, f_rank, ig, 256, 1, 0, &pr);
  const int nblk = nblk_for(g->vox);
  ndf__metrics_hd_hist_params ph = {.a = dptr(a), .d = dptr(d), .sel = sel, .hist = hist, .vox = g->vox,
                                    .nimg = g->nimg, .ndim = g->ndim, .contig = ndf_array_is_contiguous(a),
                                    .nblk = nblk};
  for (int k = 0; k < g->ndim; k++) {
    ph.shape[k] = a->shape[k];
    ph.astr[k] = a->strides[k];
  }
  ndf__metrics_hd_pick_params pp = {.hist = hist, .sel = sel, .nimg = g->nimg};
  for (int shift = 56; shift >= 0 && s == NDF_OK; shift -= 8) {
    ph.shift = pp.shift = shift;
    s = ndf__metrics_hd_hist_launch(ctx, name, f_hist, blocks_for(ctx, g->nimg * nblk), 256, 1, 0, &ph);
    if (s == NDF_OK) s = ndf__metrics_hd_pick_launch(ctx, name, f_pick, pg, 256, 1, 0, &pp);
  }
  ndf__metrics_hd_lerp_params pl = {.sel = sel, .gamma = gamma, .dmax = dmax, .nimg = g->nimg};
  if (s == NDF_OK) s = ndf__metrics_hd_lerp_launch(ctx, name, f_lerp, ig, 256, 1, 0, &pl);
  ndf__scratch_free(ctx, mem);
  return s;
}
