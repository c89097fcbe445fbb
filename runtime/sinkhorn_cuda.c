/*
 * sinkhorn_cuda.c -- the CUDA backend of the batched Sinkhorn solver
 * (docs/adr/0010-sinkhorn.md): device buffers owned by the solver, and one
 * launch of templates/sinkhorn.cu per solve -- a persistent kernel in which
 * one thread block runs one histogram pair through all its iterations,
 * checks and early exit, then computes its transport cost.  There is no
 * host round trip between iterations, so nothing is left to capture in a
 * CUDA graph (one launch per solve).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define OP_CREATE "ndf_sinkhorn_create"
#define OP_SOLVE "ndf_sinkhorn_solve"
#define SK_THREADS 256
#define SK_R 4 /* outputs per thread in the separable passes (the template's R) */

struct ndf__sk_cuda {
  ndf_ctx *ctx;
  CUfunction fn;
  int64_t n, d, dp;
  size_t es;        /* sizeof(T) */
  int f32, log_domain, kind, nsp;
  int use_smem;
  unsigned smem;
  int64_t shape[NDF_MAX_SPATIAL], stride[NDF_MAX_SPATIAL], axoff[NDF_MAX_SPATIAL], wofs, axlen;
  double tol;
  int max_iter, check_every;
  /* device buffers */
  CUdeviceptr a, b, x, y, iters, fail, err, tc, ws, M, MT, CT, ax, tab, tabm;
  void *stage; /* host staging: n * d * es */
};

static void dev_free(ndf__sk_cuda *g, CUdeviceptr *p) {
  if (*p) ndf__cu(NULL)->cuMemFree(*p);
  *p = 0;
}

void ndf__sk_cuda_destroy(ndf__sk_cuda *g) {
  if (!g) return;
  if (g->ctx && g->ctx->has_cuda && ndf__ctx_bind(g->ctx) == NDF_OK) {
    CUdeviceptr *all[] = {&g->a, &g->b, &g->x, &g->y, &g->iters, &g->fail, &g->err, &g->tc,
                          &g->ws, &g->CT, &g->ax, &g->tab, &g->tabm};
    ndf__cu(NULL)->cuStreamSynchronize(g->ctx->stream);
    if (g->MT == g->M) g->MT = 0;
    dev_free(g, &g->M);
    dev_free(g, &g->MT);
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) dev_free(g, all[i]);
  }
  free(g->stage);
  free(g);
}

static ndf_status dev_alloc(ndf__sk_cuda *g, CUdeviceptr *p, size_t bytes) {
  CUresult r = ndf__cu(NULL)->cuMemAlloc(p, bytes ? bytes : 1);
  if (r != CUDA_SUCCESS) {
    *p = 0;
    return ndf__cuda_error(g->ctx, OP_CREATE ": device allocation", r);
  }
  return NDF_OK;
}

/* Converts n float64 values to T and uploads them to dst (synchronously). */
static ndf_status upload(ndf__sk_cuda *g, CUdeviceptr dst, const double *src, size_t n, void *tmp) {
  if (g->f32) {
    float *f = tmp;
    for (size_t i = 0; i < n; i++) f[i] = (float)src[i];
  } else {
    memcpy(tmp, src, n * sizeof(double));
  }
  CUresult r = ndf__cu(NULL)->cuMemcpyHtoDAsync(dst, tmp, n * g->es, g->ctx->stream);
  if (r == CUDA_SUCCESS) r = ndf__cu(NULL)->cuStreamSynchronize(g->ctx->stream);
  return r == CUDA_SUCCESS ? NDF_OK : ndf__cuda_error(g->ctx, "ndf_sinkhorn: upload", r);
}

static ndf_status upload_new(ndf__sk_cuda *g, CUdeviceptr *dst, const double *src, size_t n) {
  void *tmp = malloc(n * g->es + 1);
  if (!tmp) return ndf__error(g->ctx, NDF_ENOMEM, "%s: out of host memory", OP_CREATE);
  ndf_status s = dev_alloc(g, dst, n * g->es);
  if (s == NDF_OK) s = upload(g, *dst, src, n, tmp);
  free(tmp);
  return s;
}

ndf_status ndf__sk_cuda_create(ndf_ctx *ctx, const ndf_sinkhorn_options *opt, const ndf__sk_host_cost *hc,
                               ndf__sk_cuda **out) {
  *out = NULL;
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  if (opt->n > 0x7fffffff)
    return ndf__argerror(ctx, OP_CREATE, "n", "%lld pairs: CUDA runs at most %d per solver", (long long)opt->n,
                         0x7fffffff);
  ndf__sk_cuda *g = calloc(1, sizeof *g);
  if (!g) return ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", OP_CREATE);
  g->ctx = ctx;
  g->n = opt->n;
  g->d = opt->d;
  g->dp = opt->d + opt->d / 32 + 1;
  g->f32 = opt->dtype == NDF_FLOAT32;
  g->es = g->f32 ? sizeof(float) : sizeof(double);
  g->log_domain = opt->log_domain;
  g->kind = (int)opt->cost_kind;
  g->nsp = opt->cost_kind == NDF_OT_COST_DENSE ? 1 : opt->grid_ndim;
  g->tol = opt->tol;
  g->max_iter = opt->max_iter;
  g->check_every = opt->check_every;
  const double eps = opt->epsilon;
  if (g->kind != NDF_OT_COST_DENSE) {
    int64_t m = 1;
    for (int k = g->nsp - 1; k >= 0; k--) {
      g->shape[k] = opt->grid_shape[k];
      g->stride[k] = m;
      m *= opt->grid_shape[k];
    }
  }

  ndf__kernel_req req;
  ndf__req_init(&req, "sinkhorn", "ndf_sinkhorn");
  ndf__req_set(&req, "T", "%s", g->f32 ? "float" : "double");
  ndf__req_set(&req, "KIND", "%d", g->kind);
  ndf__req_set(&req, "LOGD", "%d", g->log_domain);
  ndf__req_set(&req, "NSP", "%d", g->nsp);
  if ((s = ndf__jit_get(ctx, OP_CREATE, &req, &g->fn)) != NDF_OK) goto fail;

  const size_t d = (size_t)g->d, d2 = d * d, nd = (size_t)g->n * d;
  if (g->kind == NDF_OT_COST_DENSE) {
    double *CT = NULL;
    const double *cts = hc->C;
    if (!hc->c_symmetric) {
      if (!(CT = malloc(d2 * sizeof(double)))) {
        s = ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", OP_CREATE);
        goto fail;
      }
      for (size_t i = 0; i < d; i++)
        for (size_t j = 0; j < d; j++) CT[j * d + i] = hc->C[i * d + j];
      cts = CT;
    }
    s = upload_new(g, &g->M, hc->M, d2);
    if (s == NDF_OK) s = hc->MT == hc->M ? (g->MT = g->M, NDF_OK) : upload_new(g, &g->MT, hc->MT, d2);
    if (s == NDF_OK) s = upload_new(g, &g->CT, cts, d2);
    free(CT);
    if (s != NDF_OK) goto fail;
  } else if (g->kind == NDF_OT_COST_GRID_LP) {
    /* m_k[delta] (delta = 0 .. n_k + R - 1), then the weighted w_k likewise */
    int64_t tot = 0;
    for (int k = 0; k < g->nsp; k++) {
      g->axoff[k] = tot;
      tot += g->shape[k] + SK_R;
    }
    g->wofs = tot;
    g->axlen = 2 * tot;
    double *v = malloc((size_t)g->axlen * sizeof(double));
    if (!v) {
      s = ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", OP_CREATE);
      goto fail;
    }
    for (int k = 0; k < g->nsp; k++)
      for (int64_t t = 0; t < g->shape[k] + SK_R; t++) {
        double c = (opt->p == 1 ? (double)t : (double)t * (double)t) * opt->grid_scale;
        double *m = v + g->axoff[k] + t, *w = m + g->wofs;
        if (g->log_domain) {
          *m = -c / eps;
          *w = -c / eps + log(c); /* log 0 = -inf: no contribution */
        } else {
          *m = exp(-c / eps);
          *w = exp(-c / eps) * c;
        }
      }
    s = upload_new(g, &g->ax, v, (size_t)g->axlen);
    free(v);
    if (s != NDF_OK) goto fail;
  } else {
    if ((s = upload_new(g, &g->tab, hc->T, d)) != NDF_OK || (s = upload_new(g, &g->tabm, hc->TM, d)) != NDF_OK)
      goto fail;
  }

  /* State in shared memory when it fits (7 padded vectors + the axis vectors). */
  size_t smem = (size_t)(7 * g->dp + (g->kind == NDF_OT_COST_GRID_LP ? g->axlen : 0)) * g->es;
  size_t cap = ctx->max_smem_block > 1024 ? ctx->max_smem_block - 1024 : 0;
  g->use_smem = smem <= cap;
  if (g->use_smem) {
    g->smem = (unsigned)smem;
    if (smem > 48 * 1024) {
      CUresult r = ndf__cu(NULL)->cuFuncSetAttribute(g->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem);
      if (r != CUDA_SUCCESS) {
        s = ndf__cuda_error(ctx, OP_CREATE ": cuFuncSetAttribute", r);
        goto fail;
      }
    }
  } else {
    g->smem = 0;
    if ((s = dev_alloc(g, &g->ws, (size_t)g->n * 7 * (size_t)g->dp * g->es)) != NDF_OK) goto fail;
  }
  if ((s = dev_alloc(g, &g->a, nd * g->es)) != NDF_OK || (s = dev_alloc(g, &g->b, nd * g->es)) != NDF_OK ||
      (s = dev_alloc(g, &g->x, nd * g->es)) != NDF_OK || (s = dev_alloc(g, &g->y, nd * g->es)) != NDF_OK ||
      (s = dev_alloc(g, &g->iters, (size_t)g->n * 4)) != NDF_OK ||
      (s = dev_alloc(g, &g->fail, (size_t)g->n * 4)) != NDF_OK ||
      (s = dev_alloc(g, &g->err, (size_t)g->n * 8)) != NDF_OK || (s = dev_alloc(g, &g->tc, (size_t)g->n * 8)) != NDF_OK)
    goto fail;
  if (!(g->stage = malloc(nd * g->es + 1))) {
    s = ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", OP_CREATE);
    goto fail;
  }
  *out = g;
  return NDF_OK;
fail:
  ndf__sk_cuda_destroy(g);
  return s;
}

/* The fields of ndf_sk_params (templates/sinkhorn.cu), in order. */
static void put_params(const ndf__sk_cuda *g, ndf__params *pb) {
  const CUdeviceptr ptrs[] = {g->a, g->b, g->x, g->y, g->iters, g->fail, g->err, g->tc,
                              g->ws, g->M, g->MT, g->CT, g->ax, g->tab, g->tabm};
  for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++) NDF__PUT(pb, ptrs[i]);
  NDF__PUT(pb, g->n);
  NDF__PUT(pb, g->d);
  NDF__PUT(pb, g->dp);
  for (int k = 0; k < 8; k++) {
    int64_t v = k < NDF_MAX_SPATIAL ? g->shape[k] : 0;
    NDF__PUT(pb, v);
  }
  for (int k = 0; k < 8; k++) {
    int64_t v = k < NDF_MAX_SPATIAL ? g->stride[k] : 0;
    NDF__PUT(pb, v);
  }
  for (int k = 0; k < 8; k++) {
    int64_t v = k < NDF_MAX_SPATIAL ? g->axoff[k] : 0;
    NDF__PUT(pb, v);
  }
  NDF__PUT(pb, g->wofs);
  NDF__PUT(pb, g->axlen);
  NDF__PUT(pb, g->tol);
  NDF__PUT(pb, g->max_iter);
  NDF__PUT(pb, g->check_every);
  NDF__PUT(pb, g->use_smem);
  int pad = 0;
  NDF__PUT(pb, pad);
}

ndf_status ndf__sk_cuda_solve(ndf__sk_cuda *g, const double *A, const double *B, double *alpha, double *beta,
                              int32_t *iters, double *err, double *tc, int *fail) {
  ndf_ctx *ctx = g->ctx;
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  const ndf__cu_api *cu = ndf__cu(NULL);
  const size_t nd = (size_t)(g->n * g->d), n = (size_t)g->n;
  if ((s = upload(g, g->a, A, nd, g->stage)) != NDF_OK || (s = upload(g, g->b, B, nd, g->stage)) != NDF_OK) return s;
  ndf__params pb = {.n = 0};
  put_params(g, &pb);
  if ((s = ndf__launch(ctx, OP_SOLVE, g->fn, (unsigned)g->n, SK_THREADS, 1, g->smem, pb.b)) != NDF_OK) return s;
  CUresult r = cu->cuMemcpyDtoHAsync(iters, g->iters, n * 4, ctx->stream);
  if (r == CUDA_SUCCESS) r = cu->cuMemcpyDtoHAsync(fail, g->fail, n * 4, ctx->stream);
  if (r == CUDA_SUCCESS) r = cu->cuMemcpyDtoHAsync(err, g->err, n * 8, ctx->stream);
  if (r == CUDA_SUCCESS) r = cu->cuMemcpyDtoHAsync(tc, g->tc, n * 8, ctx->stream);
  if (r == CUDA_SUCCESS) r = cu->cuStreamSynchronize(ctx->stream);
  if (r != CUDA_SUCCESS) return ndf__cuda_error(ctx, OP_SOLVE, r);
  for (int pass = 0; pass < 2; pass++) {
    double *dst = pass ? beta : alpha;
    r = cu->cuMemcpyDtoHAsync(g->stage, pass ? g->y : g->x, nd * g->es, ctx->stream);
    if (r == CUDA_SUCCESS) r = cu->cuStreamSynchronize(ctx->stream);
    if (r != CUDA_SUCCESS) return ndf__cuda_error(ctx, OP_SOLVE, r);
    for (size_t i = 0; i < nd; i++) {
      double v = g->f32 ? (double)((const float *)g->stage)[i] : ((const double *)g->stage)[i];
      dst[i] = g->log_domain ? v : log(v); /* log 0 = -inf at zero bins */
    }
  }
  return NDF_OK;
}
