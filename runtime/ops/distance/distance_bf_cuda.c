/*
 * distance_bf_cuda.c -- distance_transform_bf on CUDA arrays (validated by
 * distance.c), kernels in templates/distance_bf.cu: mark the foreground,
 * list each image's boundary background (unordered), then a thread per
 * voxel scans its image's list through shared memory with scipy's tie rule
 * (highest raster index) applied explicitly.  Bit for bit the CPU backend's
 * distances (float64 / uint32) and indices.  O(N B) per image, B the
 * boundary points: the oracle, not a fast transform.
 */
#include <stdlib.h>
#include <string.h>

#include "distance/distance.h"
#include "jit.h"
#include "kernel_params.generated.h"

ndf_status ndf__bf_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *dist, ndf_array *idx, int nb,
                        int metric, int has_sampling, const double *sampling, ndf__warm *warm) {
  ndf_status s = warm ? NDF_OK : ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  const int nd = in->ndim, nsp = nd - nb;
  int64_t nimg = 1, npix = 1;
  for (int d = 0; d < nb; d++) nimg *= in->shape[d];
  for (int d = nb; d < nd; d++) npix *= in->shape[d];
  if (nimg == 0 || npix == 0) return NDF_OK;
  const int mcode = metric == NDF_METRIC_TAXICAB ? 1 : metric == NDF_METRIC_CHESSBOARD ? 2 : 0;
  static const char *const kn[3] = {"ndf_bf_mark", "ndf_bf_list", "ndf_bf_dist"};
  CUfunction fn[3];
  ndf__kernel_req rq[3];
  const ndf__kernel_req *rp[3] = {&rq[0], &rq[1], &rq[2]};
  for (int k = 0; k < 3; k++) /* the input type matters to ndf_bf_mark only, the metric to ndf_bf_dist only */
    ndf__req_distance_bf(&rq[k], kn[k], k == 0 ? in->dtype : NDF_UINT8, nsp, k == 2 ? mcode : 0);
  if ((s = ndf__jit_resolve_many(ctx, name, rp, 3, warm, fn)) != NDF_OK) return s; /* compiled concurrently */
  if (warm) return NDF_OK;
  const int64_t nchunk = (npix + 255) / 256;
  if (nimg * nchunk > 0x7fffffff)
    return ndf__error(ctx, NDF_ENOTSUP, "%s: the input is too large for one launch", name);
  /* scratch: counters, lists (int32 per voxel), the mask (byte per voxel) */
  const size_t cnt_b = ((size_t)nimg * 4 + 255) & ~(size_t)255, list_b = ((size_t)nimg * npix * 4 + 255) & ~(size_t)255;
  CUdeviceptr scratch = 0;
  if ((s = ndf__scratch_alloc(ctx, cnt_b + list_b + (size_t)nimg * npix, &scratch)) != NDF_OK) return s;
  const CUdeviceptr cnt = scratch, list = scratch + cnt_b, fg = list + list_b;
  CUresult r = ndf__cu(NULL)->cuMemsetD8Async(cnt, 0, cnt_b, ctx->stream);
  if (r != CUDA_SUCCESS) {
    s = ndf__cuda_error(ctx, name, r);
    goto done;
  }
  {
    ndf__bf_params p = {0};
    p.in = NDF__DPTR(in->data);
    p.fg = fg;
    p.list = list;
    p.cnt = cnt;
    p.dist = dist ? NDF__DPTR(dist->data) : 0;
    p.idx = idx ? NDF__DPTR(idx->data) : 0;
    p.nimg = nimg;
    p.npix = npix;
    p.nchunk = nchunk;
    p.nb = nb;
    p.has_samp = has_sampling;
    for (int d = 0; d < 8; d++) {
      p.sshape[d] = d < nsp ? in->shape[nb + d] : 1;
      p.samp[d] = d < nsp ? sampling[d] : 1.0;
    }
    ndf__axes(p.bshape, nb, in->shape);
    /* input, distances, indices: batch strides then spatial strides */
    ndf__axes(p.ibstr, nb, in->strides);
    for (int d = 0; d < nsp; d++) p.isstr[d] = in->strides[nb + d];
    if (dist) {
      ndf__axes(p.dbstr, nb, dist->strides);
      for (int d = 0; d < nsp; d++) p.dsstr[d] = dist->strides[nb + d];
    }
    if (idx) {
      ndf__axes(p.xbstr, nb, idx->strides);
      for (int d = 0; d < nsp; d++) p.xsstr[d] = idx->strides[nb + 1 + d];
      p.xkstr = idx->strides[nb];
    }
    for (int k = 0; k < 3 && s == NDF_OK; k++)
      s = ndf__bf_launch(ctx, name, fn[k], (unsigned)(nimg * nchunk), 256, 1, 0, &p);
  }
done:
  ndf__scratch_free(ctx, scratch);
  return s;
}
