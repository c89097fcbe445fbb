/*
 * reconstruction_cuda.c -- the CUDA backend of grey reconstruction
 * (templates/reconstruction.cu): the inputs copied to contiguous scratch and
 * checked, geodesic steps in place until a launch changes nothing, the
 * result stored in the output's dtype and strides.
 *
 * Steps are queued in batches (4, 8, ... 64 launches); the host clears the
 * "changed" flag before the last launch of a batch and reads it after, so a
 * batch whose last launch changed nothing ends the iteration.  The result
 * does not depend on the batch sizes: the limit is unique.
 */
#include <stdlib.h>
#include <string.h>

#include "jit.h"
#include "kernel_params.generated.h"
#include "reconstruction/reconstruction.h"

/* A kernel of templates/reconstruction.cu.  Slots a kernel does not read get one fixed value, so
 * that it compiles once for them: NDIM only matters to the step, OUT to the store, DIL to the
 * init and the step. */
static void request(ndf__kernel_req *r, const char *kernel, ndf_dtype t, ndf_dtype out, int nsp, int dil) {
  ndf__req_reconstruction(r, kernel, t, out, nsp, dil, ndf__dtype_is_float(t));
}

static ndf_status read_status(ndf_ctx *ctx, const char *name, CUdeviceptr status, int32_t *h) {
  const ndf__cu_api *cu = ndf__cu(NULL);
  CUresult r = cu->cuMemcpyDtoHAsync(h, status, 4 * sizeof(int32_t), ctx->stream);
  if (r == CUDA_SUCCESS) r = cu->cuStreamSynchronize(ctx->stream);
  return r == CUDA_SUCCESS ? NDF_OK : ndf__cuda_error(ctx, name, r);
}

/* The kernels of a call (the step only with taps); with warm, compiled for warm->arch instead of loaded. */
static ndf_status kernels(ndf_ctx *ctx, const char *name, ndf_dtype t, ndf_dtype out, const ndf__recon_geom *g,
                          ndf__warm *warm, CUfunction *f_init, CUfunction *f_step, CUfunction *f_store) {
  /* at once: a first call compiles them concurrently */
  ndf__kernel_req req[3];
  const ndf__kernel_req *rp[3] = {&req[0], &req[1], &req[2]};
  CUfunction fn[3] = {NULL, NULL, NULL};
  request(&req[0], "ndf_recon_init", t, t, 1, g->dilation);
  request(&req[1], "ndf_recon_store", t, out, 1, 1);
  request(&req[2], "ndf_recon_step", t, t, g->nsp, g->dilation);
  ndf_status s = ndf__jit_resolve_many(ctx, name, rp, g->ntaps > 0 ? 3 : 2, warm, fn);
  *f_init = fn[0], *f_store = fn[1], *f_step = fn[2];
  return s;
}

ndf_status ndf__reconstruction_cuda_warm(ndf_ctx *ctx, const char *name, ndf_dtype t, ndf_dtype out,
                                         const ndf__recon_geom *g, ndf__warm *warm) {
  CUfunction f_init, f_step, f_store;
  return kernels(ctx, name, t, out, g, warm, &f_init, &f_step, &f_store);
}

ndf_status ndf__reconstruction_cuda(ndf_ctx *ctx, const char *name, const ndf_array *seed, const ndf_array *mask,
                                    ndf_array *out, const ndf__recon_geom *g) {
  const ndf__cu_api *cu = ndf__cu(NULL);
  const ndf_dtype t = seed->dtype;
  const int nsp = g->nsp, nb = g->batch_dims, ndim = seed->ndim;
  const int64_t n = ndf_array_size(seed);
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  /* Every kernel is resolved before anything runs: a compile failure writes nothing. */
  CUfunction f_init, f_step, f_store;
  if ((s = kernels(ctx, name, t, out->dtype, g, NULL, &f_init, &f_step, &f_store)) != NDF_OK) return s;

  /* The taps: loff[ntaps] i64 (offsets in the contiguous scratch image), toff[ntaps * nsp] i32. */
  CUdeviceptr tab = 0;
  if (g->ntaps > 0) {
    const size_t bytes = (size_t)g->ntaps * 8 + (size_t)g->ntaps * nsp * sizeof(int32_t);
    unsigned char *h = malloc(bytes);
    if (!h) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
    int64_t cstr[NDF_MAX_SPATIAL], st = 1;
    for (int d = nsp - 1; d >= 0; d--) {
      cstr[d] = st;
      st *= seed->shape[nb + d];
    }
    for (int64_t k = 0; k < g->ntaps; k++) {
      int64_t o = 0;
      for (int d = 0; d < nsp; d++) o += (int64_t)g->taps[k * nsp + d] * cstr[d];
      memcpy(h + k * 8, &o, 8);
    }
    memcpy(h + g->ntaps * 8, g->taps, (size_t)g->ntaps * nsp * sizeof(int32_t));
    s = ndf__device_table(ctx, h, bytes, &tab);
    free(h);
    if (s != NDF_OK) return s;
  }

  /* Scratch: the status (4 ints) | r | m, each part 256-byte aligned. */
  const size_t esz = ndf_dtype_size(t), part = ((size_t)n * esz + 255) & ~(size_t)255;
  CUdeviceptr mem = 0;
  if ((s = ndf__scratch_alloc(ctx, 256 + 2 * part, &mem)) != NDF_OK) return s;
  const CUdeviceptr status = mem, r = mem + 256, m = mem + 256 + part;
  CUresult cr = cu->cuMemsetD8Async(status, 0, 16, ctx->stream);
  if (cr != CUDA_SUCCESS) {
    ndf__scratch_free(ctx, mem);
    return ndf__cuda_error(ctx, name, cr);
  }
  const unsigned grid = ndf__grid(ctx, (n + 255) / 256, 32);

  ndf__recon_init_params pi = {.seed = (CUdeviceptr)(uintptr_t)seed->data,
                                .mask = (CUdeviceptr)(uintptr_t)mask->data,
                                .r = r,
                                .m = m,
                                .ndim = ndim,
                                .n = n,
                                .status = status};
  for (int d = 0; d < ndim; d++) {
    pi.shape[d] = seed->shape[d];
    pi.sstr[d] = seed->strides[d];
    pi.mstr[d] = mask->strides[d];
  }
  s = ndf__recon_init_launch(ctx, name, f_init, grid, 256, 1, 0, &pi);
  int32_t hs[4] = {0};
  if (s == NDF_OK) s = read_status(ctx, name, status, hs);
  if (s == NDF_OK && (hs[0] || hs[1])) {
    s = hs[1] ? ndf__argerror(ctx, name, "seed", "NaN in the seed or the mask")
              : ndf__argerror(ctx, name, "seed", "the seed lies %s the mask: reconstruction by %s needs seed %s mask",
                              g->dilation ? "above" : "below", g->dilation ? "dilation" : "erosion",
                              g->dilation ? "<=" : ">=");
  }

  if (s == NDF_OK && g->ntaps > 0) {
    ndf__recon_step_params pp = {.r = r,
                                 .m = m,
                                 .n = n,
                                 .ntaps = (int32_t)g->ntaps,
                                 .loff = tab,
                                 .toff = tab + (CUdeviceptr)g->ntaps * 8,
                                 .status = status};
    for (int d = 0; d < nsp; d++) {
      pp.shape[d] = seed->shape[nb + d];
      pp.rlo[d] = g->rlo[d];
      pp.rhi[d] = g->rhi[d];
    }
    int batch = 4;
    for (int64_t launches = 0; s == NDF_OK;) {
      for (int i = 0; i < batch && s == NDF_OK; i++) {
        if (i == batch - 1) {
          cr = cu->cuMemsetD8Async(status + 8, 0, 4, ctx->stream);
          if (cr != CUDA_SUCCESS) s = ndf__cuda_error(ctx, name, cr);
        }
        if (s == NDF_OK) s = ndf__recon_step_launch(ctx, name, f_step, grid, 256, 1, 0, &pp); /* 256: a run per block */
      }
      if (s == NDF_OK) s = read_status(ctx, name, status, hs);
      if (s != NDF_OK || hs[2] == 0) break;
      launches += batch;
      /* After k steps every voxel holds at least the best path of k taps, and best paths need at most
       * n - 1 taps: n steps and one that changes nothing end it. */
      if (launches > 2 * n + 64) s = ndf__error(ctx, NDF_EINTERNAL, "%s: the iteration did not converge", name);
      if (batch < 64) batch *= 2;
    }
  }

  if (s == NDF_OK) {
    ndf__recon_store_params po = {.r = r, .out = (CUdeviceptr)(uintptr_t)out->data, .ndim = ndim, .n = n};
    for (int d = 0; d < ndim; d++) {
      po.shape[d] = out->shape[d];
      po.ostr[d] = out->strides[d];
    }
    s = ndf__recon_store_launch(ctx, name, f_store, grid, 256, 1, 0, &po);
  }
  ndf__scratch_free(ctx, mem);
  return s;
}
