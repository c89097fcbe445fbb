/*
 * distance_pass_cuda.c -- ndf_distance_edt_pass on CUDA arrays
 * (templates/distance_edt_pass.cu): one launch, a thread per line, the lines'
 * envelopes in scratch (position int32, W double, feature int64 when features
 * are carried: up to 20 bytes per voxel).  Results are bit-identical to the
 * CPU backend (distance.c).
 */
#include <string.h>

#include "distance/distance.h"
#include "jit.h"
#include "kernel_params.generated.h"

ndf_status ndf__edt_pass_cuda(ndf_ctx *ctx, const char *name, ndf_array *sqdist, ndf_array *features, int axis,
                              double sampling) {
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  const int has_f = features != NULL;
  ndf__kernel_req req;
  ndf__req_distance_edt_pass(&req, has_f);
  CUfunction fn;
  if ((s = ndf__jit_get(ctx, name, &req, &fn)) != NDF_OK) return s;
  const int64_t N = ndf_array_size(sqdist), n = sqdist->shape[axis], nlines = N / n;
  const size_t per = 4 + 8 + (has_f ? 8 : 0);
  CUdeviceptr scratch = 0;
  if ((s = ndf__scratch_alloc(ctx, (size_t)N * per + 16, &scratch)) != NDF_OK) return s;
  ndf__edt_pass_params p;
  memset(&p, 0, sizeof p);
  p.w = (CUdeviceptr)(uintptr_t)sqdist->data;
  p.f = has_f ? (CUdeviceptr)(uintptr_t)features->data : 0;
  p.sw = scratch;                              /* doubles first: 8-byte aligned */
  p.sf = has_f ? scratch + (size_t)N * 8 : 0;  /* then int64 */
  p.sv = scratch + (size_t)N * (has_f ? 16 : 8);
  p.nlines = nlines;
  p.n = n;
  p.s = sampling;
  p.nd = sqdist->ndim;
  p.axis = axis;
  for (int d = 0; d < sqdist->ndim; d++) {
    p.shape[d] = sqdist->shape[d];
    p.wstr[d] = sqdist->strides[d];
    p.fstr[d] = has_f ? features->strides[d] : 0;
  }
  s = ndf__edt_pass_launch(ctx, name, fn, ndf__grid(ctx, (nlines + 127) / 128, 16), 128, 1, 0, &p);
  ndf__scratch_free(ctx, scratch);
  return s;
}
