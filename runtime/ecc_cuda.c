/*
 * ecc_cuda.c -- the CUDA backend of the Euler characteristic curves (exact
 * and soft), validated by ecc.c; kernels in templates/ecc.cu, the local
 * contribution in templates/ndf_ecc.cuh (docs/adr/0009).
 *
 * Exact curve: ndf_ecc_hist over the whole batch in one launch (a block: a
 * plane tile of one image marching over mc planes) into a zeroed int64
 * histogram [img][T] over the sorted thresholds, then ndf_ecc_final (prefix
 * sums, written in the caller's order).  The sorted thresholds and their
 * permutation go up with the histogram's scratch (pageable async copies:
 * the host buffers are consumed when the call returns).  Equal to the CPU's
 * curve exactly: the same owners, the same bins.
 *
 * Soft curve: ndf_ecc_hist with SOFT = 1 writes c (int8) and f per voxel
 * into scratch, ndf_ecc_soft sums the sigmoids (double accumulation), and
 * ndf_ecc_put copies the nimg x T sums into the strided output.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static void ecc_request(ndf__kernel_req *r, const char *kernel, ndf_dtype dt, int nsp, int cons, int soft) {
  ndf__req_init(r, "ecc", kernel);
  ndf__req_set(r, "TIN", "%s", ndf__dtype_ctype(dt));
  ndf__req_set(r, "V", "%s", dt == NDF_FLOAT64 ? "double" : "float");
  ndf__req_set(r, "NSP", "%d", nsp);
  ndf__req_set(r, "CONS", "%d", cons);
  ndf__req_set(r, "SOFT", "%d", soft);
}

/* Kernels whose code does not depend on the slots share one specialization. */
static ndf_status get_fn(ndf_ctx *ctx, const char *name, const char *kernel, ndf_dtype dt, int nsp, int cons,
                         int soft, CUfunction *fn) {
  ndf__kernel_req req;
  ecc_request(&req, kernel, dt, nsp, cons, soft);
  return ndf__jit_get(ctx, name, &req, fn);
}

static ndf_status sync_error(ndf_ctx *ctx, const char *name, CUresult r) {
  return r == CUDA_SUCCESS ? NDF_OK : ndf__cuda_error(ctx, name, r);
}

ndf_status ndf__ecc_cuda_scan(ndf_ctx *ctx, const char *name, const ndf_array *in, double *mn, double *mx,
                              int64_t *nan_at) {
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  CUfunction fn;
  if ((s = get_fn(ctx, name, "ndf_ecc_scan", in->dtype, 2, 0, 0, &fn)) != NDF_OK) return s;
  const int nd = in->ndim;
  const int64_t nl = in->shape[nd - 1], nrows = ndf_array_size(in) / nl;
  const unsigned grid = ndf__grid(ctx, (nrows + 7) / 8, 4);
  CUdeviceptr scratch = 0;
  if ((s = ndf__scratch_alloc(ctx, (size_t)grid * 24, &scratch)) != NDF_OK) return s;
  ndf__params pb = {.n = 0};
  CUdeviceptr p_mn = scratch, p_mx = scratch + (size_t)grid * 8, p_nan = scratch + (size_t)grid * 16;
  int64_t sl = in->strides[nd - 1];
  NDF__PUT(&pb, in->data);
  NDF__PUT(&pb, p_mn);
  NDF__PUT(&pb, p_mx);
  NDF__PUT(&pb, p_nan);
  NDF__PUT(&pb, nrows);
  NDF__PUT(&pb, nl);
  NDF__PUT(&pb, sl);
  NDF__PUT(&pb, nd);
  for (int a = 0; a < NDF_MAX_NDIM; a++) {
    int64_t v = a < nd ? in->shape[a] : 0;
    NDF__PUT(&pb, v);
  }
  for (int a = 0; a < NDF_MAX_NDIM; a++) {
    int64_t v = a < nd ? in->strides[a] : 0;
    NDF__PUT(&pb, v);
  }
  s = ndf__launch(ctx, name, fn, grid, 256, 1, 0, pb.b);
  double *h = s == NDF_OK ? malloc((size_t)grid * 24) : NULL;
  if (s == NDF_OK && !h) s = ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", name);
  if (s == NDF_OK) {
    const ndf__cu_api *cu = ndf__cu(NULL);
    CUresult r = cu->cuMemcpyDtoHAsync(h, scratch, (size_t)grid * 24, ctx->stream);
    if (r == CUDA_SUCCESS) r = cu->cuStreamSynchronize(ctx->stream);
    s = sync_error(ctx, name, r);
  }
  if (s == NDF_OK) {
    double lo = h[0], hi = h[grid];
    int64_t na = -1;
    for (unsigned b = 0; b < grid; b++) {
      if (h[b] < lo) lo = h[b];
      if (h[grid + b] > hi) hi = h[grid + b];
      int64_t v;
      memcpy(&v, &h[2 * grid + b], 8);
      if (v >= 0 && (na < 0 || v < na)) na = v;
    }
    *mn = lo;
    *mx = hi;
    *nan_at = na;
  }
  free(h);
  ndf__scratch_free(ctx, scratch);
  return s;
}

/* The geometry of ndf_ecc_hist: plane tiles and march chunks (see ecc.cu). */
typedef struct hist_geom {
  int64_t nz, ny, nx, sz, sy, sx;
  int64_t ntx, ptiles, mc, nchunks, items;
} hist_geom;

static ndf_status hist_geometry(ndf_ctx *ctx, const ndf__ecc_call *c, const ndf_array *in, hist_geom *g) {
  const int nb = c->nb;
  if (c->nsp == 3) {
    g->nz = c->sshape[0], g->ny = c->sshape[1], g->nx = c->sshape[2];
    g->sz = in->strides[nb], g->sy = in->strides[nb + 1], g->sx = in->strides[nb + 2];
    g->ntx = (g->nx + 31) / 32;
    g->ptiles = g->ntx * ((g->ny + 7) / 8);
  } else {
    g->nz = c->sshape[0], g->ny = 1, g->nx = c->sshape[1];
    g->sz = in->strides[nb], g->sy = 0, g->sx = in->strides[nb + 1];
    g->ntx = (g->nx + 255) / 256;
    g->ptiles = g->ntx;
  }
  /* about 16 blocks per SM (two waves: the kernel takes 32 registers, so 8
   * blocks of 256 are resident per SM; one wave and a bit left most SMs idle
   * in the second), each at least 4 and at most 128 planes */
  const int64_t target = (int64_t)(ctx->sm_count > 0 ? ctx->sm_count : 132) * 16;
  const int64_t steps = c->nimg * g->ptiles * g->nz;
  int64_t mc = (steps + target - 1) / target;
  if (mc < 4) mc = 4;
  if (mc > 128) mc = 128;
  if (mc > g->nz) mc = g->nz;
  g->mc = mc;
  g->nchunks = (g->nz + mc - 1) / mc;
  g->items = c->nimg * g->ptiles * g->nchunks;
  if (g->items > 0x7fffffff)
    return ndf__error(ctx, NDF_ENOTSUP, "%s: the input is too large for one launch (%lld blocks)", c->name,
                      (long long)g->items);
  return NDF_OK;
}

static ndf_status hist_launch(ndf_ctx *ctx, const ndf__ecc_call *c, const ndf_array *in, CUfunction fn,
                              const hist_geom *g, CUdeviceptr cbuf, CUdeviceptr fbuf, CUdeviceptr hist,
                              CUdeviceptr ts, double lo, double inv_step, int uniform) {
  int smem_ts = 0;
  unsigned dyn = 0;
  if (hist && (size_t)c->T * 12 + 4 <= 40960) {
    smem_ts = 1;
    dyn = (unsigned)((size_t)c->T * 12 + 4);
  }
  ndf__params pb = {.n = 0};
  int64_t T = c->T, nimg = c->nimg;
  int nb = c->nb;
  NDF__PUT(&pb, in->data);
  NDF__PUT(&pb, cbuf);
  NDF__PUT(&pb, fbuf);
  NDF__PUT(&pb, hist);
  NDF__PUT(&pb, ts);
  NDF__PUT(&pb, lo);
  NDF__PUT(&pb, inv_step);
  NDF__PUT(&pb, T);
  NDF__PUT(&pb, nimg);
  NDF__PUT(&pb, g->ptiles);
  NDF__PUT(&pb, g->ntx);
  NDF__PUT(&pb, g->nchunks);
  NDF__PUT(&pb, g->mc);
  NDF__PUT(&pb, g->nz);
  NDF__PUT(&pb, g->ny);
  NDF__PUT(&pb, g->nx);
  NDF__PUT(&pb, g->sz);
  NDF__PUT(&pb, g->sy);
  NDF__PUT(&pb, g->sx);
  NDF__PUT(&pb, nb);
  NDF__PUT(&pb, uniform);
  NDF__PUT(&pb, smem_ts);
  for (int a = 0; a < NDF_MAX_NDIM; a++) {
    int64_t v = a < nb ? in->shape[a] : 0;
    NDF__PUT(&pb, v);
  }
  for (int a = 0; a < NDF_MAX_NDIM; a++) {
    int64_t v = a < nb ? in->strides[a] : 0;
    NDF__PUT(&pb, v);
  }
  return ndf__launch(ctx, c->name, fn, (unsigned)g->items, 256, 1, dyn, pb.b);
}

typedef struct tsort {
  double t;
  int64_t k;
} tsort;
static int cmp_tsort(const void *a, const void *b) {
  const tsort *x = a, *y = b;
  return x->t < y->t ? -1 : x->t > y->t ? 1 : (x->k > y->k) - (x->k < y->k);
}

ndf_status ndf__ecc_cuda(ndf_ctx *ctx, const ndf__ecc_call *c, const ndf_array *in, ndf_array *out,
                         int construction, const double *t, int uniform) {
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  const int64_t T = c->T, nimg = c->nimg;
  CUfunction fh, ff;
  if ((s = get_fn(ctx, c->name, "ndf_ecc_hist", in->dtype, c->nsp, construction, 0, &fh)) != NDF_OK) return s;
  if ((s = get_fn(ctx, c->name, "ndf_ecc_final", NDF_FLOAT32, 2, 0, 0, &ff)) != NDF_OK) return s;
  hist_geom g;
  if (c->npix > 0 && (s = hist_geometry(ctx, c, in, &g)) != NDF_OK) return s;
  tsort *srt = malloc((size_t)T * sizeof *srt);
  /* the sorted thresholds, then the permutation: one host-to-device copy */
  double *ts = malloc((size_t)T * 16);
  int64_t *perm = ts ? (int64_t *)(ts + T) : NULL;
  CUdeviceptr d_ts = 0, d_perm = 0, hist = 0;
  const size_t hbytes = (size_t)nimg * (size_t)T * 8;
  if (!srt || !ts || !perm) {
    s = ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", c->name);
    goto done;
  }
  for (int64_t k = 0; k < T; k++) srt[k] = (tsort){t[k], k};
  qsort(srt, (size_t)T, sizeof *srt, cmp_tsort);
  for (int64_t k = 0; k < T; k++) {
    ts[k] = srt[k].t;
    perm[k] = srt[k].k;
  }
  double lo = 0, inv_step = 0;
  const int uni = uniform && ts[T - 1] > ts[0];
  if (uni) {
    lo = ts[0];
    inv_step = (double)(T - 1) / (ts[T - 1] - ts[0]);
  }
  /* scratch: the histogram, the sorted thresholds, the permutation (the
   * thresholds change with the data or per training step: no device table) */
  if ((s = ndf__scratch_alloc(ctx, hbytes + (size_t)T * 16, &hist)) != NDF_OK) goto done;
  d_ts = hist + hbytes;
  d_perm = d_ts + (size_t)T * 8;
  const ndf__cu_api *cu = ndf__cu(NULL);
  CUresult r = cu->cuMemsetD8Async(hist, 0, hbytes, ctx->stream);
  if (r == CUDA_SUCCESS) r = cu->cuMemcpyHtoDAsync(d_ts, ts, (size_t)T * 16, ctx->stream);
  if ((s = sync_error(ctx, c->name, r)) != NDF_OK) goto done;
  if (c->npix > 0 && (s = hist_launch(ctx, c, in, fh, &g, 0, 0, hist, d_ts, lo, inv_step, uni)) != NDF_OK) goto done;
  {
    ndf__params pb = {.n = 0};
    int64_t ostep = out->strides[c->nb], tt = T, ni = nimg;
    int nb = c->nb;
    NDF__PUT(&pb, hist);
    NDF__PUT(&pb, d_perm);
    NDF__PUT(&pb, out->data);
    NDF__PUT(&pb, ni);
    NDF__PUT(&pb, tt);
    NDF__PUT(&pb, ostep);
    NDF__PUT(&pb, nb);
    for (int a = 0; a < NDF_MAX_NDIM; a++) {
      int64_t v = a < nb ? out->shape[a] : 0;
      NDF__PUT(&pb, v);
    }
    for (int a = 0; a < NDF_MAX_NDIM; a++) {
      int64_t v = a < nb ? out->strides[a] : 0;
      NDF__PUT(&pb, v);
    }
    s = ndf__launch(ctx, c->name, ff, ndf__grid(ctx, nimg, 8), 256, 1, 0, pb.b);
  }
done:
  if (hist) ndf__scratch_free(ctx, hist);
  free(srt);
  free(ts);
  return s;
}

/* nimg x T doubles at src into the strided (batch..., T) array dst (nb batch axes). */
static ndf_status put_launch(ndf_ctx *ctx, const char *name, CUfunction fn, CUdeviceptr src, const ndf_array *dst,
                             int nb, int64_t nimg, int64_t T) {
  ndf__params pb = {.n = 0};
  int64_t step = dst->strides[nb];
  NDF__PUT(&pb, src);
  NDF__PUT(&pb, dst->data);
  NDF__PUT(&pb, nimg);
  NDF__PUT(&pb, T);
  NDF__PUT(&pb, step);
  NDF__PUT(&pb, nb);
  for (int a = 0; a < NDF_MAX_NDIM; a++) {
    int64_t v = a < nb ? dst->shape[a] : 0;
    NDF__PUT(&pb, v);
  }
  for (int a = 0; a < NDF_MAX_NDIM; a++) {
    int64_t v = a < nb ? dst->strides[a] : 0;
    NDF__PUT(&pb, v);
  }
  return ndf__launch(ctx, name, fn, ndf__grid(ctx, (nimg * T + 255) / 256, 8), 256, 1, 0, pb.b);
}

ndf_status ndf__soft_ecc_cuda(ndf_ctx *ctx, const ndf__ecc_call *c, const ndf_array *in, const double *t,
                              ndf_array *arr, ndf_array *gin, ndf_array *gthr, int construction, double lambda,
                              int mode) {
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  const int64_t T = c->T, nimg = c->nimg, npix = c->npix;
  const int nb = c->nb;
  const size_t vsz = in->dtype == NDF_FLOAT64 ? 8 : 4;
  CUfunction fh, fs, fp;
  if ((s = get_fn(ctx, c->name, "ndf_ecc_hist", in->dtype, c->nsp, construction, 1, &fh)) != NDF_OK) return s;
  if ((s = get_fn(ctx, c->name, "ndf_ecc_soft", in->dtype, 2, 0, 1, &fs)) != NDF_OK) return s;
  if ((s = get_fn(ctx, c->name, "ndf_ecc_put", NDF_FLOAT32, 2, 0, 0, &fp)) != NDF_OK) return s;
  hist_geom g;
  if (npix > 0 && (s = hist_geometry(ctx, c, in, &g)) != NDF_OK) return s;
  const int64_t nchunk = (npix + 1023) / 1024;
  if (nimg * nchunk > 0x7fffffff)
    return ndf__error(ctx, NDF_ENOTSUP, "%s: the input is too large for one launch", c->name);
  CUdeviceptr scratch = 0;
  /* scratch: accumulators (nimg x T or T doubles), thresholds, f per voxel, c per voxel */
  const size_t acc_bytes = ((size_t)(mode == 0 ? nimg : 1) * (size_t)T * 8 + 255) & ~(size_t)255;
  const size_t t_bytes = ((size_t)T * 8 + 255) & ~(size_t)255;
  const size_t f_bytes = ((size_t)nimg * (size_t)npix * vsz + 255) & ~(size_t)255;
  if ((s = ndf__scratch_alloc(ctx, acc_bytes + t_bytes + f_bytes + (size_t)nimg * (size_t)npix, &scratch)) != NDF_OK)
    return s;
  const CUdeviceptr acc = scratch, d_ts = scratch + acc_bytes, fbuf = d_ts + t_bytes, cbuf = fbuf + f_bytes;
  CUresult r = ndf__cu(NULL)->cuMemsetD8Async(acc, 0, acc_bytes, ctx->stream);
  if (r == CUDA_SUCCESS) r = ndf__cu(NULL)->cuMemcpyHtoDAsync(d_ts, t, (size_t)T * 8, ctx->stream);
  s = sync_error(ctx, c->name, r);
  if (s == NDF_OK && npix > 0) s = hist_launch(ctx, c, in, fh, &g, cbuf, fbuf, 0, 0, 0, 0, 0);
  if (s == NDF_OK && npix > 0 && nimg > 0) {
    ndf__params pb = {.n = 0};
    CUdeviceptr p_g = mode == 1 ? (CUdeviceptr)(uintptr_t)arr->data : 0;
    CUdeviceptr p_acc = mode == 0 ? acc : 0, p_gt = mode == 1 && gthr ? acc : 0;
    CUdeviceptr p_gin = mode == 1 && gin ? (CUdeviceptr)(uintptr_t)gin->data : 0;
    int64_t tt = T, ni = nimg, np = npix, nc = nchunk, gstep = arr->strides[nb];
    int64_t ny = c->nsp == 3 ? c->sshape[1] : 1, nx = c->sshape[c->nsp - 1];
    int64_t gsz = 0, gsy = 0, gsx = 0;
    if (gin) {
      gsz = gin->strides[nb];
      gsy = c->nsp == 3 ? gin->strides[nb + 1] : 0;
      gsx = gin->strides[nb + c->nsp - 1];
    }
    int i_nb = nb, i_mode = mode;
    NDF__PUT(&pb, cbuf);
    NDF__PUT(&pb, fbuf);
    NDF__PUT(&pb, d_ts);
    NDF__PUT(&pb, p_g);
    NDF__PUT(&pb, p_acc);
    NDF__PUT(&pb, p_gt);
    NDF__PUT(&pb, p_gin);
    NDF__PUT(&pb, lambda);
    NDF__PUT(&pb, ni);
    NDF__PUT(&pb, np);
    NDF__PUT(&pb, tt);
    NDF__PUT(&pb, nc);
    NDF__PUT(&pb, gstep);
    NDF__PUT(&pb, ny);
    NDF__PUT(&pb, nx);
    NDF__PUT(&pb, gsz);
    NDF__PUT(&pb, gsy);
    NDF__PUT(&pb, gsx);
    NDF__PUT(&pb, i_nb);
    NDF__PUT(&pb, i_mode);
    for (int a = 0; a < NDF_MAX_NDIM; a++) {
      int64_t v = a < nb ? in->shape[a] : 0;
      NDF__PUT(&pb, v);
    }
    for (int a = 0; a < NDF_MAX_NDIM; a++) {
      int64_t v = a < nb ? arr->strides[a] : 0;
      NDF__PUT(&pb, v);
    }
    for (int a = 0; a < NDF_MAX_NDIM; a++) {
      int64_t v = a < nb && gin ? gin->strides[a] : 0;
      NDF__PUT(&pb, v);
    }
    s = ndf__launch(ctx, c->name, fs, (unsigned)(nimg * nchunk), 256, 1, 0, pb.b);
  }
  if (s == NDF_OK && mode == 0 && nimg > 0) s = put_launch(ctx, c->name, fp, acc, arr, nb, nimg, T);
  if (s == NDF_OK && mode == 1 && gthr) s = put_launch(ctx, c->name, fp, acc, gthr, 0, 1, T);
  ndf__scratch_free(ctx, scratch);
  return s;
}
