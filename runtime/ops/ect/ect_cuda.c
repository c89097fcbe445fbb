/*
 * ect_cuda.c -- the CUDA backend of the Euler characteristic transform, exact
 * (binary, int64: equal to the CPU's bit for bit) and weighted (float64: the
 * CPU's per-voxel weights, summed by float atomics, so equal to rounding),
 * validated by ect.c; kernels in templates/ect.cu (docs/adr/0011).
 *
 * ndf_ect_hist runs over (voxel tile, direction group, image) in one launch
 * into a zeroed [img][j][k] histogram over the sorted thresholds, then
 * ndf_ect_final writes the prefix sums in the caller's threshold order.  The
 * coordinates (computed on the host exactly as the CPU backend does), the
 * directions, the sorted thresholds and their permutation go up with the
 * histogram's scratch (pageable async copies: the host buffers are consumed
 * when the call returns).
 */
#include <stdlib.h>
#include <string.h>

#include "ect/ect.h"
#include "kernel_params.generated.h"
#include "jit.h"
#include "tune.h"

#define ECT_SMEM_MAX 36864 /* dynamic shared bytes for thresholds + histogram (static use <= 10.2 KB) */

/* The exact transform's kernels, at once (compiled concurrently); the final one does not depend on
 * TIN/NSP/CONS: one specialization per WT. */
static ndf_status ect_kernels(ndf_ctx *ctx, const char *name, ndf_dtype dt, int nsp, int cons, int wt, ndf__warm *warm,
                              CUfunction *fh, CUfunction *ff) {
  ndf__kernel_req r[2];
  const ndf__kernel_req *rp[2] = {&r[0], &r[1]};
  CUfunction f[2] = {NULL, NULL};
  ndf__req_ect(&r[0], "ndf_ect_hist", dt, nsp, cons, wt);
  ndf__req_ect(&r[1], "ndf_ect_final", NDF_FLOAT32, 2, 0, wt);
  ndf_status s = ndf__jit_resolve_many(ctx, name, rp, 2, warm, f);
  *fh = f[0], *ff = f[1];
  return s;
}

/* The tiling both ECT kernels launch over: tiles (3-D 8 x 8 x 4 of (z, y, x),
 * 2-D 16 x 16 of (y, x)) times direction groups of G directions, about 8
 * blocks per SM; and the length of the coordinate table. */
typedef struct ect_tiling {
  int64_t nz, ny, nx, sz, sy, sx; /* spatial extents and element strides (2-D: nz = 1, sz = 0) */
  int64_t ntx, nty, ntz;          /* tiles per axis */
  int64_t G, ngroups, items;      /* directions per group, groups, blocks */
  int64_t ncoord;                 /* sum of the spatial extents */
} ect_tiling;

static ndf_status ect_tiling_plan(ndf_ctx *ctx, const ndf__ect_cuda_call *c, const ndf_array *in, ect_tiling *g) {
  const int64_t nimg = c->nimg, m = c->m;
  const int nsp = c->nsp, nb = c->nb;
  if (nsp == 3) {
    g->nz = c->sshape[0], g->ny = c->sshape[1], g->nx = c->sshape[2];
    g->sz = in->strides[nb], g->sy = in->strides[nb + 1], g->sx = in->strides[nb + 2];
  } else {
    g->nz = 1, g->ny = c->sshape[0], g->nx = c->sshape[1];
    g->sz = 0, g->sy = in->strides[nb], g->sx = in->strides[nb + 1];
  }
  const int TX = nsp == 3 ? 8 : 16, TY = nsp == 3 ? 8 : 16, TZ = nsp == 3 ? 4 : 1;
  g->ntx = (g->nx + TX - 1) / TX, g->nty = (g->ny + TY - 1) / TY, g->ntz = (g->nz + TZ - 1) / TZ;
  const int64_t per_group = nimg * g->ntx * g->nty * g->ntz;
  const int64_t target = (int64_t)(ctx->sm_count > 0 ? ctx->sm_count : 132) * 8;
  int64_t ngroups = per_group > 0 ? (target + per_group - 1) / per_group : 1;
  if (ngroups > m) ngroups = m;
  if (ngroups < 1) ngroups = 1;
  g->G = (m + ngroups - 1) / ngroups;
  g->ngroups = (m + g->G - 1) / g->G;
  g->items = per_group * g->ngroups;
  if (g->items > 0x7fffffff)
    return ndf__error(ctx, NDF_ENOTSUP, "%s: the input is too large for one launch (%lld blocks)", c->name,
                      (long long)g->items);
  g->ncoord = 0;
  for (int d = 0; d < nsp; d++) g->ncoord += c->sshape[d];
  return NDF_OK;
}

/* The tiling's fields, which both kernels' parameter structs name alike. */
#define SET_TILING(p, g_)                                                      \
  do {                                                                         \
    (p).G = (g_)->G;                                                           \
    (p).ngroups = (g_)->ngroups;                                               \
    (p).ntx = (g_)->ntx;                                                       \
    (p).nty = (g_)->nty;                                                       \
    (p).ntz = (g_)->ntz;                                                       \
    (p).nz = (g_)->nz;                                                         \
    (p).ny = (g_)->ny;                                                         \
    (p).nx = (g_)->nx;                                                         \
    (p).sz = (g_)->sz;                                                         \
    (p).sy = (g_)->sy;                                                         \
    (p).sx = (g_)->sx;                                                         \
  } while (0)

ndf_status ndf__ect_cuda(ndf_ctx *ctx, const ndf__ect_cuda_call *c, const ndf_array *in, ndf_array *out,
                         const double *coord, const double *dirs, const double *t, int uniform) {
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  const int64_t T = c->T, nimg = c->nimg, m = c->m;
  const int nsp = c->nsp, nb = c->nb, wt = c->weighted;
  CUfunction fh, ff;
  if ((s = ect_kernels(ctx, c->name, in->dtype, nsp, c->cons, wt, NULL, &fh, &ff)) != NDF_OK) return s;

  ect_tiling g;
  if ((s = ect_tiling_plan(ctx, c, in, &g)) != NDF_OK) return s;

  double *ts = malloc((size_t)T * sizeof *ts);
  int64_t *perm = malloc((size_t)T * sizeof *perm);
  CUdeviceptr hist = 0;
  const size_t hbytes = (size_t)nimg * (size_t)m * (size_t)T * 8;
  const size_t cbytes = (size_t)(g.ncoord > 0 ? g.ncoord : 1) * 8, dbytes = (size_t)m * (size_t)nsp * 8;
  if (!ts || !perm || ndf__ecc_sort_thresholds(t, T, ts, perm)) {
    s = ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", c->name);
    goto done;
  }
  double lo, inv_step;
  const int uni = ndf__ecc_uniform_bins(ts, T, uniform, &lo, &inv_step);
  if ((s = ndf__scratch_alloc(ctx, hbytes + (size_t)T * 16 + cbytes + dbytes, &hist)) != NDF_OK) goto done;
  const CUdeviceptr d_ts = hist + hbytes, d_perm = d_ts + (size_t)T * 8, d_coord = d_perm + (size_t)T * 8,
                    d_dirs = d_coord + cbytes;
  const ndf__cu_api *cu = ndf__cu(NULL);
  CUresult r = cu->cuMemsetD8Async(hist, 0, hbytes, ctx->stream);
  if (r == CUDA_SUCCESS) r = cu->cuMemcpyHtoDAsync(d_ts, ts, (size_t)T * 8, ctx->stream);
  if (r == CUDA_SUCCESS) r = cu->cuMemcpyHtoDAsync(d_perm, perm, (size_t)T * 8, ctx->stream);
  if (r == CUDA_SUCCESS && g.ncoord > 0) r = cu->cuMemcpyHtoDAsync(d_coord, coord, (size_t)g.ncoord * 8, ctx->stream);
  if (r == CUDA_SUCCESS) r = cu->cuMemcpyHtoDAsync(d_dirs, dirs, dbytes, ctx->stream);
  if (r != CUDA_SUCCESS) {
    s = ndf__cuda_error(ctx, c->name, r);
    goto done;
  }
  if (c->npix > 0) {
    const size_t dyn_bytes = (size_t)T * (wt ? 16 : 12);
    int smem = dyn_bytes <= ECT_SMEM_MAX;
    ndf__ect_params p = {0};
    p.in = NDF__DPTR(in->data);
    p.coord = d_coord;
    p.dirs = d_dirs;
    p.ts = d_ts;
    p.hist = hist;
    p.lo = lo;
    p.inv_step = inv_step;
    p.T = T;
    p.m = m;
    p.nimg = nimg;
    SET_TILING(p, &g);
    p.nb = nb;
    p.uniform = uni;
    p.smem = smem;
    ndf__axes(p.bshape, nb, in->shape);
    ndf__axes(p.bstr, nb, in->strides);
    s = ndf__ect_launch(ctx, c->name, fh, (unsigned)g.items, 256, 1, smem ? (unsigned)dyn_bytes : 0, &p);
    if (s != NDF_OK) goto done;
  }
  {
    ndf__ect_final_params p = {0};
    p.hist = hist;
    p.perm = d_perm;
    p.out = NDF__DPTR(out->data);
    p.nimg = nimg;
    p.m = m;
    p.T = T;
    p.dstep = out->strides[nb];
    p.kstep = out->strides[nb + 1];
    p.nb = nb;
    ndf__axes(p.oshape, nb, out->shape);
    ndf__axes(p.ostr, nb, out->strides);
    s = ndf__ect_final_launch(ctx, c->name, ff, ndf__grid(ctx, nimg * m, 8), 256, 1, 0, &p);
  }
done:
  if (hist) ndf__scratch_free(ctx, hist);
  free(ts);
  free(perm);
  return s;
}

/* ---- soft ECT ----------------------------------------------------------------------------------- */

/* The sigmoid in float (soft_ect.fast=on) or double (default, the CPU's arithmetic). */
static int soft_fast(ndf_ctx *ctx) { return ndf__tune(ctx, NDF__TUNE_SOFT_ECT_FAST, NULL) == NDF__TUNE_SOFT_ECT_FAST__ON; }

static ndf_status soft_kernels(ndf_ctx *ctx, const char *name, ndf_dtype dt, int nsp, int cons, int wt, int fast,
                               ndf__warm *warm, CUfunction *fs, CUfunction *fp) {
  ndf__kernel_req r[2];
  const ndf__kernel_req *rp[2] = {&r[0], &r[1]};
  CUfunction f[2] = {NULL, NULL};
  ndf__req_ect_soft(&r[0], "ndf_ect_soft", dt, nsp, cons, wt, fast);
  ndf__req_ect_soft(&r[1], "ndf_ect_soft_put", NDF_FLOAT32, 2, 0, 0, 0);
  ndf_status s = ndf__jit_resolve_many(ctx, name, rp, 2, warm, f); /* compiled concurrently */
  *fs = f[0], *fp = f[1];
  return s;
}

ndf_status ndf__ect_cuda_warm(ndf_ctx *ctx, const char *name, ndf_dtype dt, int nsp, int cons, int wt, int soft,
                              ndf__warm *warm) {
  CUfunction f1, f2;
  return soft ? soft_kernels(ctx, name, dt, nsp, cons, wt, soft_fast(ctx), warm, &f1, &f2)
              : ect_kernels(ctx, name, dt, nsp, cons, wt, warm, &f1, &f2);
}

static ndf_status put_launch(ndf_ctx *ctx, const char *name, CUfunction fn, int what, CUdeviceptr acc, CUdeviceptr gu,
                             CUdeviceptr gw, CUdeviceptr out, const ndf_array *dst, const ndf__ect_cuda_call *c) {
  const int nb = c->nb, nsp = c->nsp;
  const int64_t nimg = c->nimg, m = c->m, T = c->T;
  ndf__ects_put_params p = {0};
  p.acc = acc;
  p.gu = gu;
  p.gw = gw;
  p.out = out;
  if (what == 0) {
    p.out = NDF__DPTR(dst->data);
    p.dstep = dst->strides[nb];
    p.kstep = dst->strides[nb + 1];
  } else if (what == 2) {
    p.gin = NDF__DPTR(dst->data);
    p.gsz = nsp == 3 ? dst->strides[nb] : 0;
    p.gsy = dst->strides[nb + nsp - 2];
    p.gsx = dst->strides[nb + nsp - 1];
  }
  p.nimg = nimg;
  p.m = m;
  p.T = T;
  p.nsp = nsp;
  p.nz = nsp == 3 ? c->sshape[0] : 1;
  p.ny = c->sshape[nsp - 2];
  p.nx = c->sshape[nsp - 1];
  p.nb = what == 1 ? 0 : nb;
  p.what = what;
  p.gin_f32 = dst && dst->dtype == NDF_FLOAT32;
  if (dst) {
    ndf__axes(p.bshape, p.nb, dst->shape);
    ndf__axes(p.bstr, p.nb, dst->strides);
  }
  const int64_t n = what == 0 ? nimg * m * T : what == 1 ? T + m * nsp : nimg * c->npix;
  if (n <= 0) return NDF_OK;
  return ndf__ects_put_launch(ctx, name, fn, ndf__grid(ctx, (n + 255) / 256, 8), 256, 1, 0, &p);
}

ndf_status ndf__soft_ect_cuda(ndf_ctx *ctx, const ndf__ect_cuda_call *c, const ndf_array *in, const double *coord,
                              const double *dirs, const double *t, double lambda, int mode, ndf_array *arr,
                              ndf_array *gin, double *gdir, double *gthr) {
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  const int64_t T = c->T, nimg = c->nimg, m = c->m, npix = c->npix;
  const int nsp = c->nsp, nb = c->nb, wt = c->weighted, fast = soft_fast(ctx);
  CUfunction fs, fp;
  if ((s = soft_kernels(ctx, c->name, in->dtype, nsp, c->cons, wt, fast, NULL, &fs, &fp)) != NDF_OK) return s;

  ect_tiling g;
  if ((s = ect_tiling_plan(ctx, c, in, &g)) != NDF_OK) return s;
  const int want_gw = mode == 1 && gin && wt && npix > 0;
  /* scratch: acc [nimg][m][T], gu [nimg][m][nsp], gw [nimg][npix], reduced [T + m nsp], ts, coords, dirs */
#define A256(x) (((size_t)(x) + 255) & ~(size_t)255)
  const size_t acc_b = A256((size_t)nimg * m * T * 8), gu_b = A256((size_t)nimg * m * nsp * 8),
               gw_b = want_gw ? A256((size_t)nimg * npix * 8) : 0, red_b = A256((size_t)(T + m * nsp) * 8),
               ts_b = A256((size_t)T * 8), c_b = A256((size_t)(g.ncoord > 0 ? g.ncoord : 1) * 8),
               d_b = A256((size_t)m * nsp * 8);
#undef A256
  CUdeviceptr scratch = 0;
  if ((s = ndf__scratch_alloc(ctx, acc_b + gu_b + gw_b + red_b + ts_b + c_b + d_b, &scratch)) != NDF_OK) return s;
  const CUdeviceptr acc = scratch, gu = acc + acc_b, gw = gu + gu_b, red = gw + gw_b, d_ts = red + red_b,
                    d_coord = d_ts + ts_b, d_dirs = d_coord + c_b;
  const ndf__cu_api *cu = ndf__cu(NULL);
  CUresult r = cu->cuMemsetD8Async(acc, 0, acc_b + gu_b + gw_b, ctx->stream);
  if (r == CUDA_SUCCESS) r = cu->cuMemcpyHtoDAsync(d_ts, t, (size_t)T * 8, ctx->stream);
  if (r == CUDA_SUCCESS && g.ncoord > 0) r = cu->cuMemcpyHtoDAsync(d_coord, coord, (size_t)g.ncoord * 8, ctx->stream);
  if (r == CUDA_SUCCESS) r = cu->cuMemcpyHtoDAsync(d_dirs, dirs, (size_t)m * nsp * 8, ctx->stream);
  if (r != CUDA_SUCCESS) {
    s = ndf__cuda_error(ctx, c->name, r);
    goto done;
  }
  if (npix > 0 && nimg > 0) {
    /* thresholds (and, backward, the pair's g) in shared memory when they fit
     * 20 KiB: with the kernel's static 24.4 KiB (3-D weighted) under the 48 KiB
     * a launch may take without opting in */
    const size_t dyn_bytes = (size_t)T * (mode == 1 ? 16 : 8);
    int smem = dyn_bytes <= 20480;
    ndf__ects_params p = {0};
    p.in = NDF__DPTR(in->data);
    p.coord = d_coord;
    p.dirs = d_dirs;
    p.ts = d_ts;
    p.g = mode == 1 ? NDF__DPTR(arr->data) : 0;
    p.acc = acc;
    p.gu = mode == 1 && gdir ? gu : 0;
    p.gw = want_gw ? gw : 0;
    p.lambda = lambda;
    p.T = T;
    p.m = m;
    p.nimg = nimg;
    SET_TILING(p, &g);
    p.gdstep = mode == 1 ? arr->strides[nb] : 0;
    p.gkstep = mode == 1 ? arr->strides[nb + 1] : 0;
    p.nb = nb;
    p.mode = mode;
    p.want_gt = mode == 1 && gthr != NULL;
    p.smem = smem;
    ndf__axes(p.bshape, nb, in->shape);
    ndf__axes(p.bstr, nb, in->strides);
    if (mode == 1) ndf__axes(p.gbstr, nb, arr->strides);
    s = ndf__ects_launch(ctx, c->name, fs, (unsigned)g.items, 256, 1, smem ? (unsigned)dyn_bytes : 0, &p);
    if (s != NDF_OK) goto done;
  }
  if (mode == 0) {
    s = put_launch(ctx, c->name, fp, 0, acc, 0, 0, 0, arr, c);
  } else {
    if (gin && ndf_array_size(gin) > 0) s = put_launch(ctx, c->name, fp, 2, acc, 0, want_gw ? gw : 0, 0, gin, c);
    if (s == NDF_OK && (gdir || gthr)) {
      s = put_launch(ctx, c->name, fp, 1, acc, gdir ? gu : 0, 0, red, NULL, c);
      double *h = s == NDF_OK ? malloc((size_t)(T + m * nsp) * 8) : NULL;
      if (s == NDF_OK && !h) s = ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", c->name);
      if (s == NDF_OK) {
        r = cu->cuMemcpyDtoHAsync(h, red, (size_t)(T + m * nsp) * 8, ctx->stream);
        if (r == CUDA_SUCCESS) r = cu->cuStreamSynchronize(ctx->stream);
        if (r != CUDA_SUCCESS) s = ndf__cuda_error(ctx, c->name, r);
      }
      if (s == NDF_OK) {
        if (gthr) memcpy(gthr, h, (size_t)T * 8);
        if (gdir) memcpy(gdir, h + T, (size_t)m * nsp * 8);
      }
      free(h);
    }
  }
done:
  ndf__scratch_free(ctx, scratch);
  return s;
}
