/*
 * bet_cuda.c -- the CUDA backend of skull stripping (templates/bet.cu): the
 * input converted to float bricks (bet_index) on the device; a host copy of them
 * for the statistics that place the initial sphere (bet.c's code, so both
 * backends start from the same numbers); one launch per surface update; the
 * surface read back after each pass for the self-intersection test; the
 * voxelization on the device, straight into the output.
 */
#include <stdlib.h>
#include <string.h>

#include "bet/bet.h"
#include "jit.h"
#include "kernel_params.generated.h"

/* The kernels of a call; with warm, compiled for warm->arch instead of loaded.  Only the load reads T. */
static ndf_status kernels(ndf_ctx *ctx, const char *name, ndf_dtype t, ndf__warm *warm, CUfunction *fn) {
  ndf__kernel_req req[3];
  const ndf__kernel_req *rp[3] = {&req[0], &req[1], &req[2]};
  ndf__req_bet(&req[0], "ndf_bet_load", t);
  ndf__req_bet(&req[1], "ndf_bet_step", NDF_FLOAT64);
  ndf__req_bet(&req[2], "ndf_bet_voxelize", NDF_FLOAT64);
  return ndf__jit_resolve_many(ctx, name, rp, 3, warm, fn);
}

ndf_status ndf__skull_strip_cuda_warm(ndf_ctx *ctx, const char *name, ndf_dtype t, ndf__warm *warm) {
  CUfunction fn[3];
  return kernels(ctx, name, t, warm, fn);
}

static ndf_status cu_check(ndf_ctx *ctx, const char *name, CUresult r) {
  return r == CUDA_SUCCESS ? NDF_OK : ndf__cuda_error(ctx, name, r);
}

ndf_status ndf__skull_strip_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, const double *spacing,
                                 ndf_array *out, const ndf_skull_strip_options *opt, const ndf__bet_mesh *m) {
  const ndf__cu_api *cu = ndf__cu(NULL);
  const int64_t n = ndf_array_size(in), nimg = bet_image_size(in->shape);
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  CUfunction fn[3];
  if ((s = kernels(ctx, name, in->dtype, NULL, fn)) != NDF_OK) return s;
  if ((s = ndf__check_host_memory(ctx, name, "a host copy of the image", 4 * nimg + 8 * n)) != NDF_OK) return s;
  float *img = malloc(sizeof(float) * (size_t)nimg);
  double *pos = calloc(3 * (size_t)m->nv, sizeof(double));
  if (!img || !pos) {
    free(img), free(pos);
    return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
  }
  /* Scratch: status (256 bytes) | img (bricks of floats) | pos | npos | vx (nv x 3 doubles each). */
  const size_t vbytes = (sizeof(double) * 3 * (size_t)m->nv + 255) & ~(size_t)255;
  const size_t ibytes = (sizeof(float) * (size_t)nimg + 255) & ~(size_t)255;
  CUdeviceptr mem = 0, ring = 0, tri = 0;
  if ((s = ndf__scratch_alloc(ctx, 256 + ibytes + 3 * vbytes, &mem)) != NDF_OK) {
    free(img), free(pos);
    return s;
  }
  const CUdeviceptr status = mem, dimg = mem + 256, dpos[2] = {dimg + ibytes, dimg + ibytes + vbytes},
                    dvx = dimg + ibytes + 2 * vbytes;
  s = cu_check(ctx, name, cu->cuMemsetD8Async(status, 0, 256 + ibytes, ctx->stream)); /* the bricks' padding 0 */
  if (s == NDF_OK) s = ndf__device_table(ctx, m->ring, sizeof(int) * (BET_MAX_RING + 1) * (size_t)m->nv, &ring);
  if (s == NDF_OK) s = ndf__device_table(ctx, m->tri, sizeof(int) * 3 * (size_t)m->nt, &tri);

  ndf__bet_load_params pl = {.in = NDF__DPTR(in->data), .img = dimg, .n = n};
  for (int d = 0; d < 3; d++) pl.shape[d] = in->shape[d], pl.str[d] = in->strides[d];
  if (s == NDF_OK) s = ndf__bet_load_launch(ctx, name, fn[0], ndf__grid(ctx, (n + 255) / 256, 8), 256, 1, 0, &pl);
  if (s == NDF_OK) s = cu_check(ctx, name, cu->cuMemcpyDtoHAsync(img, dimg, sizeof(float) * (size_t)nimg, ctx->stream));
  if (s == NDF_OK) s = cu_check(ctx, name, cu->cuStreamSynchronize(ctx->stream));
  ndf__bet_setup st;
  if (s == NDF_OK) s = ndf__bet_setup_from(ctx, name, img, in->shape, spacing, opt, &st);

  /* The passes, as the CPU backend runs them (bet.c, evolve_cpu). */
  const int nt = s == NDF_OK && st.radius0 > 0 ? m->nt : 0;
  for (int pass = 0; s == NDF_OK && nt > 0 && pass < NDF__BET_MAX_PASSES; pass++) {
    ndf__bet_sphere(m, &st, pos);
    s = cu_check(ctx, name, cu->cuMemcpyHtoDAsync(dpos[0], pos, sizeof(double) * 3 * (size_t)m->nv, ctx->stream));
    ndf__bet_step_params ps = {.img = dimg, .ring = ring, .nv = m->nv};
    for (int d = 0; d < 3; d++) ps.shape[d] = in->shape[d], ps.c[d] = st.c.spacing[d];
    ps.c[3] = st.c.t2, ps.c[4] = st.c.t, ps.c[5] = st.c.tm, ps.c[6] = st.c.bt, ps.c[7] = st.c.gradient;
    ps.c[8] = st.c.cog2, ps.c[9] = st.c.radius, ps.c[12] = st.c.d1, ps.c[13] = st.c.d2;
    int cur = 0;
    double l = 0.0;
    for (int it = 0; s == NDF_OK && it < st.iterations; it++) {
      ndf__bet_curvature(pass, it, st.iterations, &ps.c[10], &ps.c[11]);
      if (it == 50 || it % 100 == 0) { /* bet2's mean edge, from the positions on the host (ndf__bet_mean_edge) */
        if (it > 0) {
          s = cu_check(ctx, name, cu->cuMemcpyDtoHAsync(pos, dpos[cur], sizeof(double) * 3 * (size_t)m->nv, ctx->stream));
          if (s == NDF_OK) s = cu_check(ctx, name, cu->cuStreamSynchronize(ctx->stream));
          if (s != NDF_OK) break;
        }
        ndf__bet_mean_edge(m, pos, it, &l);
      }
      ps.c[14] = l;
      ps.pos = dpos[cur], ps.npos = dpos[1 - cur];
      s = ndf__bet_step_launch(ctx, name, fn[1], (unsigned)((m->nv + 127) / 128), 128, 1, 0, &ps);
      cur = 1 - cur;
    }
    if (s == NDF_OK)
      s = cu_check(ctx, name, cu->cuMemcpyDtoHAsync(pos, dpos[cur], sizeof(double) * 3 * (size_t)m->nv, ctx->stream));
    if (s == NDF_OK) s = cu_check(ctx, name, cu->cuStreamSynchronize(ctx->stream));
    if (s == NDF_OK && !ndf__bet_self_intersects(m, pos)) break;
  }

  /* The voxelization; without a surface (nothing above the threshold), no triangle: an empty mask. */
  if (s == NDF_OK) {
    for (int v = 0; v < m->nv; v++)
      for (int d = 0; d < 3; d++) pos[3 * v + d] = pos[3 * v + d] / spacing[d];
    s = cu_check(ctx, name, cu->cuMemcpyHtoDAsync(dvx, pos, sizeof(double) * 3 * (size_t)m->nv, ctx->stream));
  }
  if (s == NDF_OK) {
    ndf__bet_voxelize_params pv = {.vx = dvx, .tri = tri, .nt = nt, .out = NDF__DPTR(out->data), .status = status};
    for (int d = 0; d < 3; d++) pv.shape[d] = in->shape[d], pv.ostr[d] = out->strides[d];
    const int64_t ncol = in->shape[0] * in->shape[1];
    s = ndf__bet_voxelize_launch(ctx, name, fn[2], (unsigned)((ncol + 127) / 128), 128, 1, 0, &pv);
  }
  int32_t hs[4] = {0};
  if (s == NDF_OK) s = cu_check(ctx, name, cu->cuMemcpyDtoHAsync(hs, status, sizeof hs, ctx->stream));
  if (s == NDF_OK) s = cu_check(ctx, name, cu->cuStreamSynchronize(ctx->stream));
  if (s == NDF_OK && hs[0])
    s = ndf__error(ctx, NDF_EINTERNAL, "%s: a column of voxels crosses the surface more than 256 times", name);
  ndf__scratch_free(ctx, mem);
  free(img), free(pos);
  return s;
}
