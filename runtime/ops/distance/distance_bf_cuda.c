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
  for (int k = 0; k < 3; k++) {
    ndf__kernel_req r;
    ndf__req_init(&r, "distance_bf", kn[k]);
    /* the input type matters to ndf_bf_mark only, the metric to ndf_bf_dist only */
    ndf__req_set(&r, "TIN", "%s", k == 0 ? ndf__dtype_ctype(in->dtype) : "unsigned char");
    ndf__req_set(&r, "NSP", "%d", nsp);
    ndf__req_set(&r, "METRIC", "%d", k == 2 ? mcode : 0);
    if ((s = ndf__jit_resolve(ctx, name, &r, warm, &fn[k])) != NDF_OK) return s;
  }
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
    ndf__params pb = {.n = 0};
    CUdeviceptr p_dist = dist ? (CUdeviceptr)(uintptr_t)dist->data : 0, p_idx = idx ? (CUdeviceptr)(uintptr_t)idx->data : 0;
    int i_nb = nb, hs = has_sampling;
    NDF__PUT(&pb, in->data);
    NDF__PUT(&pb, fg);
    NDF__PUT(&pb, list);
    NDF__PUT(&pb, cnt);
    NDF__PUT(&pb, p_dist);
    NDF__PUT(&pb, p_idx);
    NDF__PUT(&pb, nimg);
    NDF__PUT(&pb, npix);
    NDF__PUT(&pb, nchunk);
    NDF__PUT(&pb, i_nb);
    NDF__PUT(&pb, hs);
    for (int d = 0; d < 8; d++) {
      int64_t v = d < nsp ? in->shape[nb + d] : 1;
      NDF__PUT(&pb, v);
    }
    for (int d = 0; d < 8; d++) {
      double v = d < nsp ? sampling[d] : 1.0;
      NDF__PUT(&pb, v);
    }
    ndf__params_put_padded(&pb, nb, in->shape);
    /* input, distances, indices: batch strides then spatial strides */
    const ndf_array *arrs[3] = {in, dist, idx};
    for (int k = 0; k < 3; k++) {
      const ndf_array *a = arrs[k];
      const int sp0 = k == 2 ? nb + 1 : nb;
      for (int d = 0; d < NDF_MAX_NDIM; d++) {
        int64_t v = a && d < nb ? a->strides[d] : 0;
        NDF__PUT(&pb, v);
      }
      for (int d = 0; d < 8; d++) {
        int64_t v = a && d < nsp ? a->strides[sp0 + d] : 0;
        NDF__PUT(&pb, v);
      }
    }
    int64_t xk = idx ? idx->strides[nb] : 0;
    NDF__PUT(&pb, xk);
    for (int k = 0; k < 3 && s == NDF_OK; k++)
      s = ndf__launch(ctx, name, fn[k], (unsigned)(nimg * nchunk), 256, 1, 0, pb.b);
  }
done:
  ndf__scratch_free(ctx, scratch);
  return s;
}
