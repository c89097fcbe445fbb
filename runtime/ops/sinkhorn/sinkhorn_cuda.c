/*
 * sinkhorn_cuda.c -- the CUDA backend of the batched Sinkhorn solver
 * (docs/adr/0010-sinkhorn.md); the solver owns every device buffer.
 *
 * Grid costs (and dense ones with more than 8 x 65535 pairs): one launch of
 * templates/sinkhorn.cu per solve, a persistent kernel in which one thread
 * block runs one histogram pair through all its iterations, checks and early
 * exit, then computes its transport cost.  2-D grid L^p costs of at most
 * 32 x 32 bins use templates/sinkhorn_grid2.cu instead (the same parameter
 * block and launch; the grid's sizes compiled in).  On sm_90 and later, when
 * n is small enough that n * CL blocks (CL = 2, 4 or 8) fit the SMs, those
 * grids use templates/sinkhorn_cluster.cu instead: one thread-block cluster
 * of CL blocks per pair, the rows split between the blocks, the column pass
 * exchanged through distributed shared memory (sinkhorn.cluster unset,
 * empty or "auto": this choice; =0 forces one block per pair (the run-time
 * off switch), =2/4/8 forces that cluster size, =1 runs that
 * kernel with one block of 32 * N0 threads per pair and no cluster: float
 * only, a measurement point against sinkhorn_grid2.cu).  If the
 * cluster kernel cannot be compiled or launched, the solver falls back to
 * sinkhorn_grid2.cu for good.  How a cluster's blocks exchange rows
 * (sinkhorn.clsync): unset, empty, "auto" or "async" = st.async stores
 * completing on mbarriers, no cluster barrier in the loop (the template's
 * ASYNC slot; when CL divides N0, else as "barrier"); "barrier" = distributed
 * stores and a cluster barrier per application.
 *
 * Dense costs: templates/sinkhorn_dense.cu, one kernel per half-iteration
 * for all pairs (K read once per 8 pairs).  A chunk of check_every
 * iterations and its check is captured once into a CUDA graph on the
 * context's stream and replayed max_iter / check_every times (the rest runs
 * as plain launches); kernels return at once when every pair is done.  When
 * capture fails (e.g. a legacy default stream) or sinkhorn.graph=0, the
 * same launches run plainly; both give the same bits.  The graph captures
 * object-owned buffers only (a, b are copied in), so it stays valid for the
 * solver's life and is destroyed with it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sinkhorn/sinkhorn.h"
#include "kernel_params.generated.h"
#include "tune.h"

#define OP_CREATE "ndf_sinkhorn_create"
#define OP_SOLVE "ndf_sinkhorn_solve"
#define SK_THREADS 256
#define SK_R 4 /* outputs per thread in the separable passes (the template's R) */
#define SKD_NB 8   /* sinkhorn_dense.cu: pairs per block */
#define SKD_ROWS 8 /* sinkhorn_dense.cu: rows per block */

struct ndf__sk_cuda {
  ndf_ctx *ctx;
  CUfunction fn;
  int64_t n, d, dp;
  size_t es;        /* sizeof(T) */
  int f32, log_domain, kind, nsp;
  int use_smem;
  int grid2; /* templates/sinkhorn_grid2.cu (2-D grid L^p, at most 32 x 32) */
  int cl;    /* > 0: templates/sinkhorn_cluster.cu with clusters of cl blocks of nt threads (fncl) */
  unsigned nt;
  CUfunction fncl; /* the cluster kernel; fn then stays NULL until a fallback compiles sinkhorn_grid2.cu */
  int cl_forced; /* sinkhorn.cluster chose cl: no silent fallback (tests see failures) */
  int clasync;   /* the cluster kernel's ASYNC slot (sinkhorn.clsync) */
  unsigned smem;
  int64_t shape[NDF_MAX_SPATIAL], stride[NDF_MAX_SPATIAL], axoff[NDF_MAX_SPATIAL], wofs, axlen;
  double tol;
  int max_iter, check_every;
  /* device buffers */
  CUdeviceptr a, b, x, y, iters, fail, err, tc, ws, M, MT, CT, ax, tab, tabm;
  /* err, tc, iters and fail share one allocation (err first: 8 n + 8 n + 4 n + 4 n bytes),
   * downloaded with one copy into the stage's tail */
  void *stage; /* host staging: 2 * n * d * es (a then b) + 24 n, page-locked when stage_pinned */
  int stage_pinned;
  /* the batched dense path (sinkhorn_dense.cu): CT then holds C itself */
  int batched;
  CUfunction fnd;
  int64_t nblk;
  CUdeviceptr ha, hb, itn, done, alldone, part;
  int graph_state; /* 0 not captured yet, 1 captured, -1 capture failed or disabled: plain launches */
  CUgraphExec gexec;
};

static void dev_free(ndf__sk_cuda *g, CUdeviceptr *p) {
  if (*p) ndf__cu(NULL)->cuMemFree(*p);
  *p = 0;
}

void ndf__sk_cuda_destroy(ndf__sk_cuda *g) {
  if (!g) return;
  if (g->ctx && g->ctx->has_cuda && ndf__ctx_bind(g->ctx) == NDF_OK) {
    g->b = 0; /* b lies in a's allocation */
    g->tc = g->iters = g->fail = 0; /* in err's */
    CUdeviceptr *all[] = {&g->a, &g->b, &g->x, &g->y, &g->iters, &g->fail, &g->err, &g->tc,
                          &g->ws, &g->CT, &g->ax, &g->tab, &g->tabm};
    ndf__cu(NULL)->cuStreamSynchronize(g->ctx->stream);
    if (g->gexec) ndf__cu(NULL)->cuGraphExecDestroy(g->gexec);
    CUdeviceptr *more[] = {&g->ha, &g->hb, &g->itn, &g->done, &g->alldone, &g->part};
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) dev_free(g, more[i]);
    if (g->MT == g->M) g->MT = 0;
    dev_free(g, &g->M);
    dev_free(g, &g->MT);
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) dev_free(g, all[i]);
    if (g->stage_pinned) ndf__cu(NULL)->cuMemFreeHost(g->stage);
    if (g->stage_pinned) g->stage = NULL;
  }
  if (!g->stage_pinned) free(g->stage);
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
  /* From pageable memory the call returns once tmp has been staged: tmp may be reused at once. */
  CUresult r = ndf__cu(NULL)->cuMemcpyHtoDAsync(dst, tmp, n * g->es, g->ctx->stream);
  return r == CUDA_SUCCESS ? NDF_OK : ndf__cuda_error(g->ctx, "ndf_sinkhorn: upload", r);
}

/* Converts a and b (nd values each) to T into the staging buffer and uploads
 * both with one copy (b follows a on the device).  The stream is synchronous
 * with the host at the end of every solve, so the stage is free here. */
static ndf_status upload2(ndf__sk_cuda *g, const double *A, const double *B, size_t nd) {
  if (g->f32) {
    float *f = g->stage;
    const int nth = nd >= (1 << 16) ? ndf__cpu_threads(g->ctx) : 1; /* n = 128 at 32 x 32: 256k values */
#pragma omp parallel for num_threads(nth) schedule(static) if (nth > 1)
    for (int64_t i = 0; i < (int64_t)nd; i++) {
      f[i] = (float)A[i];
      f[nd + i] = (float)B[i];
    }
  } else {
    memcpy(g->stage, A, nd * sizeof(double));
    memcpy((double *)g->stage + nd, B, nd * sizeof(double));
  }
  CUresult r = ndf__cu(NULL)->cuMemcpyHtoDAsync(g->a, g->stage, 2 * nd * g->es, g->ctx->stream);
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

  /* the tunables' workload (tune.h): the arithmetic, the grid axes, the pairs, the bins */
  const ndf__tune_work tw = {opt->dtype, g->nsp, g->n, g->d};
  /* sinkhorn.dense=persistent forces the persistent kernel for dense costs. */
  g->batched = g->kind == NDF_OT_COST_DENSE && (g->n + SKD_NB - 1) / SKD_NB <= 65535 &&
               ndf__tune(ctx, NDF__TUNE_SINKHORN_DENSE, &tw) != NDF__TUNE_SINKHORN_DENSE__PERSISTENT;
  g->graph_state = ndf__tune(ctx, NDF__TUNE_SINKHORN_GRAPH, &tw) == NDF__TUNE_SINKHORN_GRAPH__OFF ? -1 : 0;
  ndf__kernel_req req;
  if (g->batched) {
    ndf__req_sinkhorn_dense(&req, g->f32 ? "float" : "double", g->log_domain);
    if ((s = ndf__jit_get(ctx, OP_CREATE, &req, &g->fnd)) != NDF_OK) goto fail;
    g->nblk = (g->d + SKD_ROWS - 1) / SKD_ROWS;
  }
  /* 2-D grid L^p of at most 32 x 32 bins: templates/sinkhorn_grid2.cu, the
   * sizes compiled in (sinkhorn.grid2=off forces sinkhorn.cu). */
  g->grid2 = g->kind == NDF_OT_COST_GRID_LP && g->nsp == 2 && g->shape[0] <= 32 && g->shape[1] <= 32 &&
             ndf__tune(ctx, NDF__TUNE_SINKHORN_GRID2, &tw) != NDF__TUNE_SINKHORN_GRID2__OFF;
  /* Clusters (sm_90): the largest CL in {8, 4, 2} with n * CL <= the SM
   * count and CL <= N0 (every block owns a row); none when n > SMs / 2. */
  if (g->grid2 && ctx->cc_major >= 9) {
    const int ce = ndf__tune(ctx, NDF__TUNE_SINKHORN_CLUSTER, &tw);
    const int sms = ctx->sm_count > 0 ? ctx->sm_count : 132;
    if (ce != NDF__TUNE_SINKHORN_CLUSTER__AUTO) { /* "auto": the choice below */
      /* 0: off, one block per pair (sinkhorn_grid2.cu) */
      const int v = atoi(ndf__tunables[NDF__TUNE_SINKHORN_CLUSTER].values[ce]);
      /* 1 (float only): the same kernel with one 32 * N0-thread block per pair, no cluster (a comparison point) */
      g->cl = ((v == 2 || v == 4 || v == 8) && v <= g->shape[0]) || (v == 1 && g->f32) ? v : 0;
      g->cl_forced = g->cl > 0;
    } else {
      for (int c = 8; c >= 2 && !g->cl; c /= 2)
        if (g->n * c <= sms && c <= g->shape[0]) g->cl = c;
    }
  }
  if (g->cl) {
    const int rows = (int)((g->shape[0] + g->cl - 1) / g->cl);
    g->nt = (unsigned)(32 * rows);
    g->clasync = g->cl > 1 && g->shape[0] % g->cl == 0 &&
                 ndf__tune(ctx, NDF__TUNE_SINKHORN_CLSYNC, &tw) != NDF__TUNE_SINKHORN_CLSYNC__BARRIER;
    ndf__req_sinkhorn_cluster(&req, g->f32 ? "float" : "double", g->log_domain, (int)g->shape[0], (int)g->shape[1],
                              g->cl, g->clasync);
    if ((s = ndf__jit_get(ctx, OP_CREATE, &req, &g->fncl)) != NDF_OK) { /* e.g. an NVRTC without sm_90 */
      if (g->cl_forced) goto fail;
      ndf__clear_error(ctx);
      g->cl = 0;
      g->fncl = NULL;
    }
  }
  /* fn: the one-block-per-pair kernel (grid2 or generic), not compiled when
   * the cluster kernel serves this solver (it is launched from fncl only: fn
   * and fncl differ in grid, block and shared-memory geometry). */
  if (g->cl) {
    /* nothing: cluster_fallback compiles sinkhorn_grid2.cu if the cluster launch fails */
  } else if (g->grid2) {
    ndf__req_sinkhorn_grid2(&req, g->f32 ? "float" : "double", g->log_domain, (int)g->shape[0], (int)g->shape[1]);
    if ((s = ndf__jit_get(ctx, OP_CREATE, &req, &g->fn)) != NDF_OK) goto fail;
  } else if (!g->batched) {
    ndf__req_sinkhorn(&req, g->f32 ? "float" : "double", g->kind, g->log_domain, g->nsp);
    if ((s = ndf__jit_get(ctx, OP_CREATE, &req, &g->fn)) != NDF_OK) goto fail;
  }

  const size_t d = (size_t)g->d, d2 = d * d, nd = (size_t)g->n * d;
  if (g->kind == NDF_OT_COST_DENSE) {
    double *CT = NULL;
    const double *cts = hc->C;
    if (!hc->c_symmetric && !g->batched) { /* the persistent kernel reads C transposed, the batched one C */
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
  if (g->grid2) { /* static shared memory (at most 42 KB) */
    g->use_smem = 1;
    g->smem = 0;
  } else if (g->batched) {
    g->use_smem = 0;
    g->smem = 0;
  } else if (g->use_smem) {
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
  /* a and b in one allocation (b = a + nd): one upload for both */
  if ((s = dev_alloc(g, &g->a, 2 * nd * g->es)) != NDF_OK) goto fail;
  g->b = g->a + nd * g->es;
  if ((s = dev_alloc(g, &g->x, nd * g->es)) != NDF_OK || (s = dev_alloc(g, &g->y, nd * g->es)) != NDF_OK ||
      (s = dev_alloc(g, &g->err, (size_t)g->n * 24)) != NDF_OK)
    goto fail;
  g->tc = g->err + (size_t)g->n * 8;
  g->iters = g->tc + (size_t)g->n * 8;
  g->fail = g->iters + (size_t)g->n * 4;
  if (g->batched &&
      ((s = dev_alloc(g, &g->ha, nd * g->es)) != NDF_OK || (s = dev_alloc(g, &g->hb, nd * g->es)) != NDF_OK ||
       (s = dev_alloc(g, &g->itn, (size_t)g->n * 4)) != NDF_OK || (s = dev_alloc(g, &g->done, (size_t)g->n * 4)) != NDF_OK ||
       (s = dev_alloc(g, &g->alldone, 4)) != NDF_OK ||
       (s = dev_alloc(g, &g->part, (size_t)g->n * (size_t)g->nblk * 8)) != NDF_OK))
    goto fail;
  /* page-locked staging: the upload is one DMA, not the driver's bounce copies */
  if (ndf__cu(NULL)->cuMemAllocHost(&g->stage, 2 * nd * g->es + 24 * (size_t)g->n) == CUDA_SUCCESS)
    g->stage_pinned = 1;
  else if (!(g->stage = malloc(2 * nd * g->es + 24 * (size_t)g->n))) {
    s = ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", OP_CREATE);
    goto fail;
  }
  *out = g;
  return NDF_OK;
fail:
  ndf__sk_cuda_destroy(g);
  return s;
}

/* The kernel parameters of templates/sinkhorn.cu (and sinkhorn_grid2.cu, sinkhorn_cluster.cu). */
static void sk_params(const ndf__sk_cuda *g, ndf__sk_params *p) {
  memset(p, 0, sizeof *p);
  p->a = g->a;
  p->b = g->b;
  p->x = g->x;
  p->y = g->y;
  p->iters = g->iters;
  p->fail = g->fail;
  p->err = g->err;
  p->tc = g->tc;
  p->ws = g->ws;
  p->M = g->M;
  p->MT = g->MT;
  p->CT = g->CT;
  p->ax = g->ax;
  p->tab = g->tab;
  p->tabm = g->tabm;
  p->n = g->n;
  p->d = g->d;
  p->dp = g->dp;
  for (int k = 0; k < NDF_MAX_SPATIAL; k++) {
    p->shape[k] = g->shape[k];
    p->stride[k] = g->stride[k];
    p->axoff[k] = g->axoff[k];
  }
  p->wofs = g->wofs;
  p->axlen = g->axlen;
  p->tol = g->tol;
  p->max_iter = g->max_iter;
  p->check_every = g->check_every;
  p->use_smem = g->use_smem;
}

/* One launch of sinkhorn_dense.cu: phase 0 init, 1 row, 2 column, 3 check, 4 finish, 5 cost, 6 total. */
static CUresult dense_launch(const ndf__sk_cuda *g, int phase) {
  ndf__skd_params p = {0};
  p.a = g->a;
  p.b = g->b;
  p.x = g->x;
  p.y = g->y;
  p.ha = g->ha;
  p.hb = g->hb;
  p.M = g->M;
  p.MT = g->MT;
  p.C = g->CT;
  p.it = g->iters;
  p.itn = g->itn;
  p.fail = g->fail;
  p.done = g->done;
  p.alldone = g->alldone;
  p.err = g->err;
  p.part = g->part;
  p.tc = g->tc;
  p.n = g->n;
  p.d = g->d;
  p.nblk = g->nblk;
  p.tol = g->tol;
  p.phase = phase;
  unsigned gx = 1, gy = 1;
  if (phase == 0 || phase == 7) gx = ndf__grid(g->ctx, (g->n * g->d + SKD_ROWS * 32 - 1) / (SKD_ROWS * 32), 8);
  else if (phase != 4 && phase != 6) {
    gx = (unsigned)g->nblk;
    gy = (unsigned)((g->n + SKD_NB - 1) / SKD_NB);
  }
  void *args[] = {&p};
  const CUresult r = ndf__cu(NULL)->cuLaunchKernel(g->fnd, gx, gy, 1, SKD_ROWS * 32, 1, 1, 0, g->ctx->stream, args, NULL);
  if (r == CUDA_SUCCESS) ndf__klog(g->ctx, g->fnd);
  return r;
}

/* k iterations, then a check. */
static CUresult dense_chunk(const ndf__sk_cuda *g, int k) {
  CUresult r = CUDA_SUCCESS;
  for (int i = 0; i < k && r == CUDA_SUCCESS; i++) {
    r = dense_launch(g, 1);
    if (r == CUDA_SUCCESS) r = dense_launch(g, 2);
  }
  if (r == CUDA_SUCCESS) r = dense_launch(g, 3);
  if (r == CUDA_SUCCESS) r = dense_launch(g, 4);
  return r;
}

/* Captures one chunk of check_every iterations into g->gexec; on failure
 * the solver falls back to plain launches for good. */
static void dense_capture(ndf__sk_cuda *g) {
  const ndf__cu_api *cu = ndf__cu(NULL);
  CUstream st = g->ctx->stream;
  CUgraph graph = NULL;
  g->graph_state = -1;
  if (cu->cuStreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) != CUDA_SUCCESS) return;
  CUresult r = dense_chunk(g, g->check_every);
  CUresult re = cu->cuStreamEndCapture(st, &graph);
  if (r == CUDA_SUCCESS && re == CUDA_SUCCESS && graph &&
      cu->cuGraphInstantiateWithFlags(&g->gexec, graph, 0) == CUDA_SUCCESS)
    g->graph_state = 1;
  else
    g->gexec = NULL;
  if (graph) cu->cuGraphDestroy(graph);
}

/* The batched dense iteration: init, chunks (graph or plain), the rest, the cost. */
static ndf_status dense_run(ndf__sk_cuda *g) {
  const ndf__cu_api *cu = ndf__cu(NULL);
  CUresult r = dense_launch(g, 0);
  const int full = g->max_iter / g->check_every, rest = g->max_iter % g->check_every;
  if (r == CUDA_SUCCESS && full > 0 && g->graph_state == 0) dense_capture(g);
  for (int c = 0; c < full && r == CUDA_SUCCESS; c++)
    r = g->graph_state == 1 ? cu->cuGraphLaunch(g->gexec, g->ctx->stream) : dense_chunk(g, g->check_every);
  if (r == CUDA_SUCCESS && rest > 0) r = dense_chunk(g, rest);
  if (r == CUDA_SUCCESS) r = dense_launch(g, 5);
  if (r == CUDA_SUCCESS) r = dense_launch(g, 6);
  if (r == CUDA_SUCCESS) r = dense_launch(g, 7);
  return r == CUDA_SUCCESS ? NDF_OK : ndf__cuda_error(g->ctx, OP_SOLVE, r);
}

/* The cluster kernel would not launch (no cluster support, too few SMs for
 * a cluster, ...): compile sinkhorn_grid2.cu into fn and use it from now on
 * (the solver's state was set up for grid2: static shared memory, no
 * workspace, so fn then runs with the usual n blocks of SK_THREADS). */
static ndf_status cluster_fallback(ndf__sk_cuda *g) {
  ndf__kernel_req req;
  ndf__req_sinkhorn_grid2(&req, g->f32 ? "float" : "double", g->log_domain, (int)g->shape[0], (int)g->shape[1]);
  ndf_status s = ndf__jit_get(g->ctx, OP_SOLVE, &req, &g->fn);
  if (s == NDF_OK) {
    g->cl = 0;
    g->fncl = NULL;
  }
  return s;
}

ndf_status ndf__sk_cuda_solve(ndf__sk_cuda *g, const double *A, const double *B, double *alpha, double *beta,
                              int32_t *iters, double *err, double *tc, int *fail) {
  ndf_ctx *ctx = g->ctx;
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  const ndf__cu_api *cu = ndf__cu(NULL);
  const size_t nd = (size_t)(g->n * g->d), n = (size_t)g->n;
  if ((s = upload2(g, A, B, nd)) != NDF_OK) return s;
  char *rh = (char *)g->stage + 2 * nd * g->es; /* err, tc, iters, fail: the stage's tail */
  for (;;) {
    const int cl = g->cl;
    if (g->batched) {
      if ((s = dense_run(g)) != NDF_OK) return s;
    } else {
      ndf__sk_params p;
      sk_params(g, &p);
      if (cl) {
        void *args[] = {&p};
        if (!g->fncl || !g->grid2 || g->smem != 0 || g->nt != (unsigned)(32 * ((g->shape[0] + cl - 1) / cl)))
          return ndf__error(ctx, NDF_EINTERNAL, "%s: the cluster kernel's set-up is inconsistent", OP_SOLVE);
        CUresult rl = cu->cuLaunchKernel(g->fncl, (unsigned)(g->n * cl), 1, 1, g->nt, 1, 1, 0, ctx->stream, args, NULL);
        if (rl != CUDA_SUCCESS && g->cl_forced) return ndf__cuda_error(ctx, OP_SOLVE ": cluster launch", rl);
        if (rl != CUDA_SUCCESS) {
          if ((s = cluster_fallback(g)) != NDF_OK) return s;
          continue;
        }
        ndf__klog(ctx, g->fncl);
      } else if (!g->fn) {
        return ndf__error(ctx, NDF_EINTERNAL, "%s: no kernel", OP_SOLVE);
      } else if ((s = ndf__sk_launch(ctx, OP_SOLVE, g->fn, (unsigned)g->n, SK_THREADS, 1, g->smem, &p)) != NDF_OK) {
        return s;
      }
    }
    /* one download of err, tc, iters, fail (contiguous on the device) */
    CUresult r = cu->cuMemcpyDtoHAsync(rh, g->err, n * 24, ctx->stream);
    if (r == CUDA_SUCCESS) r = cu->cuStreamSynchronize(ctx->stream);
    if (r != CUDA_SUCCESS) return ndf__cuda_error(ctx, OP_SOLVE, r);
    int f0;
    memcpy(&f0, rh + 20 * n, sizeof f0);
    if (!(cl && f0 == -1)) break;
    /* fail[0] = -1: the kernel ran without its cluster dimensions (it checks
     * %cluster_nctarank and does nothing else) */
    if (g->cl_forced) return ndf__error(ctx, NDF_ECUDA, "%s: the cluster kernel ran without clusters of %d", OP_SOLVE, cl);
    if ((s = cluster_fallback(g)) != NDF_OK) return s;
  }
  memcpy(err, rh, n * 8);
  memcpy(tc, rh + 8 * n, n * 8);
  memcpy(iters, rh + 16 * n, n * 4);
  memcpy(fail, rh + 20 * n, n * 4);
  return alpha ? ndf__sk_cuda_potentials(g, alpha, beta) : NDF_OK;
}

ndf_status ndf__sk_cuda_potentials(ndf__sk_cuda *g, double *alpha, double *beta) {
  ndf_ctx *ctx = g->ctx;
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  const ndf__cu_api *cu = ndf__cu(NULL);
  const size_t nd = (size_t)(g->n * g->d);
  for (int pass = 0; pass < 2; pass++) {
    double *dst = pass ? beta : alpha;
    CUresult r = cu->cuMemcpyDtoHAsync(g->stage, pass ? g->y : g->x, nd * g->es, ctx->stream);
    if (r == CUDA_SUCCESS) r = cu->cuStreamSynchronize(ctx->stream);
    if (r != CUDA_SUCCESS) return ndf__cuda_error(ctx, "ndf_sinkhorn: potentials", r);
    if (g->f32)
      for (size_t i = 0; i < nd; i++) dst[i] = (double)((const float *)g->stage)[i];
    else
      memcpy(dst, g->stage, nd * sizeof(double));
  }
  return NDF_OK;
}
