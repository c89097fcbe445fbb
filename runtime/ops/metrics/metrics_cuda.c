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

#include "kernel_params.generated.h"
#include "metrics/metrics.h"

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
  if ((s = get(ctx, name, "ndf_metrics_stats", a->dtype, b->dtype, f, "double", &f_stats)) != NDF_OK) return s;
  if ((s = get(ctx, name, "ndf_metrics_finish", NDF_FLOAT32, NDF_FLOAT32, "double", "double", &f_fin)) != NDF_OK)
    return s;
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
  if (!ndf__dtype_is_float(a->dtype)) ndf__dtype_range(a->dtype, &lo, &hi);
  ndf__metrics_finish_params pf = {.part = part, .cnt = cnt, .result = dptr(result), .status = status,
                                   .nimg = g->nimg, .vox = g->vox, .data_range = data_range, .lo = lo, .hi = hi,
                                   .op = (int32_t)op, .f32 = g->f32, .nb = g->nb, .nblk = nblk};
  result_geom(result, pf.rshape, pf.rstr);
  const unsigned fgrid = (unsigned)((g->nimg + 255) / 256);
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
  ndf_status s = get(ctx, name, "ndf_metrics_ssim", NDF_FLOAT32, NDF_FLOAT32, f, fo, &f_ssim);
  if (s == NDF_OK && mssim) s = get(ctx, name, "ndf_metrics_mean", NDF_FLOAT32, NDF_FLOAT32, "double", "double", &f_mean);
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
    s = ndf__metrics_mean_launch(ctx, name, f_mean, (unsigned)((g->nimg + 255) / 256), 256, 1, 0, &pm);
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
