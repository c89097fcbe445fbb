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
 * Thresholds over [min, max] with T <= 510 (the default new path): one
 * cooperative launch of the first kernel that applies (ndf__ecc_cuda2): the
 * 2-D warp-strip kernels (ndf_ecc_strip2t, ndf_ecc_strip2), the 3-D
 * telescoped one (ndf_ecc_strip3), the bit-sliced rows (ndf_ecc_rows), the
 * fused march (ndf_ecc_pack); with ecc.brick=1|2, ndf_ecc_brick instead
 * (ecc_brick: bricks with their halo binned at once; 2: kept in shared memory
 * over the grid barrier when they fit; slower than the march on large
 * inputs).  The header lies in the context's mapped host memory
 * (ecc.maphdr=off: copied back).  docs/adr/0009, "Bricks instead of the
 * march".
 *
 * Soft curve: ndf_ecc_hist with SOFT = 1 writes c (int8) and f per voxel
 * into scratch, ndf_ecc_soft sums the sigmoids (double accumulation), and
 * ndf_ecc_put copies the nimg x T sums into the strided output.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ecc/ecc.h"
#include "jit.h"
#include "kernel_params.generated.h"
#include "tune.h"
#include "ecc_plan.h"

/* ---- the ECC's state in a context (ndf__family_state, docs/adr/0020) ------------------------------- */
/* The launch shape of one brick kernel's call (brick_planner). */
typedef struct brick_plan {
  int64_t nbz, nby, nbx, nbricks, per, grid;
  int resident;
  unsigned dyn;
} brick_plan;

#define ECC_DEFER_NAMES 64
#define ECC_FN_MEMO 16
/* Created zeroed by the first CUDA call that needs it, released with the context; every field
 * under the context's lock.  Keys that are CUfunctions are this context's own: its modules
 * stay loaded while it lives, so no other kernel can take such a function's address. */
typedef struct ecc_state {
  /* the exact ECC's header in page-locked host memory mapped into the device (mapped_header:
   * HDR_BYTES, allocated on first use) */
  void *hdr_host;
  CUdeviceptr hdr_dev;
  /* the warp-strip kernels' workspace (strip2_mem_at: tickets, histogram copies, partials; the
   * kernel initializes what it uses), kept between calls (stream-ordered), grown when too small */
  CUdeviceptr ws;
  size_t ws_bytes;
  /* deferred data checks (ndf_ctx_options.deferred_errors, docs/adr/0014): the calls since the
   * last report (their ordinals 1, 2, ... as the kernels' seq) and their names by ordinal %
   * ECC_DEFER_NAMES; the record the kernels write lies in the mapped header block (NDF__DREC_OFF) */
  uint32_t defer_n;
  const char *defer_names[ECC_DEFER_NAMES];
  /* get_fn's direct-mapped memo of the kernels' functions (the JIT lookup builds and hashes the
   * request's key on every call) */
  struct {
    const char *kernel; /* a string literal of ecc_cuda.c (compared by address) */
    int dt, nsp, cons, var; /* var: the SOFT and RNG slots (ecc_request) */
    CUfunction fn;
  } fn_memo[ECC_FN_MEMO];
  /* the last plan of brick_planner and the last occupancy of rows_occupancy (the driver's
   * occupancy queries cost microseconds); fn NULL: none */
  struct {
    CUfunction fn;
    int64_t T, nbricks;
    int mode, nsp;
    size_t vsize;
    brick_plan pl;
  } brick_last;
  struct {
    CUfunction fn;
    unsigned dyn;
    int occ;
  } rows_last;
} ecc_state;

static void ecc_release(ndf_ctx *ctx, void *state) {
  ecc_state *st = state;
  if (!ctx->has_cuda) return;
  const ndf__cu_api *cu = ndf__cu(NULL);
  if (st->ws) cu->cuMemFreeAsync(st->ws, ctx->stream);
  if (st->hdr_host) cu->cuMemFreeHost(st->hdr_host);
}

static ndf_status ecc_report(ndf_ctx *ctx, void *state);

static const ndf__family ecc_family = {"ecc", sizeof(ecc_state), ecc_release, ecc_report};

/* The context's ECC state; NULL (no message) when it cannot be created. */
static ecc_state *ecc_state_of(ndf_ctx *ctx) { return ndf__family_state(ctx, &ecc_family); }

/* The deferred-check hook (ndf__deferred_report): the failed check recorded in the mapped
 * header block since the last report, if any, as ecc.c's message; the record is cleared and
 * the ordinals restart. */
static ndf_status ecc_report(ndf_ctx *ctx, void *state) {
  ecc_state *st = state;
  pthread_mutex_lock(&ctx->lock);
  if (!st->hdr_host) { /* no deferred check ran without it */
    pthread_mutex_unlock(&ctx->lock);
    return NDF_OK;
  }
  volatile ndf__drec *d = (volatile ndf__drec *)(void *)((char *)st->hdr_host + NDF__DREC_OFF);
  const uint32_t n = st->defer_n, ord = d->ord;
  const char *name = ord ? st->defer_names[ord % ECC_DEFER_NAMES] : NULL;
  uint64_t key = 0;
  if (ord) {
    key = d->nan_key;
    d->nan_key = 0;
    d->bad = 0;
    d->ord = 0;
  }
  st->defer_n = 0;
  pthread_mutex_unlock(&ctx->lock);
  return ord ? ndf__ecc_deferred_error(ctx, name, ord, n, key) : NDF_OK;
}

/* var: bit 0 the SOFT slot, bit 1 the RNG slot (the telescoped kernels over a given range) */
static void ecc_request(ndf__kernel_req *r, const char *kernel, ndf_dtype dt, int nsp, int cons, int var) {
  ndf__req_ecc(r, kernel, dt, dt == NDF_FLOAT64 ? "double" : "float", nsp, cons, var & 1, (var >> 1) & 1);
}

static unsigned memo_slot(const char *kernel, ndf_dtype dt, int nsp, int cons, int var) {
  return (unsigned)((((uintptr_t)kernel >> 3) ^ ((unsigned)dt * 7u) ^ ((unsigned)nsp * 13u) ^ ((unsigned)cons * 29u) ^
                     ((unsigned)var * 31u)) %
                    ECC_FN_MEMO);
}

/* The context's memo of get_fn (st: NULL when the state could not be made): 1 and *fn when it holds the kernel. */
static int memo_get(ndf_ctx *ctx, ecc_state *st, const char *kernel, ndf_dtype dt, int nsp, int cons, int var,
                    CUfunction *fn) {
  if (!st) return 0;
  const unsigned slot = memo_slot(kernel, dt, nsp, cons, var);
  pthread_mutex_lock(&ctx->lock);
  const int hit = st->fn_memo[slot].fn && st->fn_memo[slot].kernel == kernel && st->fn_memo[slot].dt == (int)dt &&
                  st->fn_memo[slot].nsp == nsp && st->fn_memo[slot].cons == cons && st->fn_memo[slot].var == var;
  if (hit) *fn = st->fn_memo[slot].fn;
  pthread_mutex_unlock(&ctx->lock);
  return hit;
}


/* Kernels whose code does not depend on the slots share one specialization. */
/* The kernel's function: from the context's memo (kernel: a string literal, compared by address), else
 * the JIT lookup (ndf__jit_get: key built and hashed, module loaded or compiled), then memoized.
 * var: ecc_request's (SOFT, RNG). */
static ndf_status get_fn(ndf_ctx *ctx, const char *name, const char *kernel, ndf_dtype dt, int nsp, int cons,
                         int var, CUfunction *fn) {
  ecc_state *st = ecc_state_of(ctx); /* without it (out of memory): the JIT lookup */
  if (memo_get(ctx, st, kernel, dt, nsp, cons, var, fn)) return NDF_OK;
  const unsigned slot = memo_slot(kernel, dt, nsp, cons, var);
  ndf__kernel_req req;
  ecc_request(&req, kernel, dt, nsp, cons, var);
  ndf_status s = ndf__jit_get(ctx, name, &req, fn);
  if (s == NDF_OK && st) {
    pthread_mutex_lock(&ctx->lock);
    st->fn_memo[slot].kernel = kernel;
    st->fn_memo[slot].dt = (int)dt, st->fn_memo[slot].nsp = nsp;
    st->fn_memo[slot].cons = cons, st->fn_memo[slot].var = var;
    st->fn_memo[slot].fn = *fn;
    pthread_mutex_unlock(&ctx->lock);
  }
  return s;
}

/* One kernel of a call for ecc_prefetch: get_fn's arguments. */
typedef struct ecc_want {
  const char *kernel;
  ndf_dtype dt;
  int nsp, cons, var;
} ecc_want;

/* The n kernels (1 to 4) that a call will take through get_fn, and nextra other requests (up to
 * 4): when the first is not in the context's memo (a first call), all of them are looked up at
 * once, those on neither the memory nor the disk cache compiled concurrently (ndf__jit_get_many);
 * get_fn and ndf__jit_get then find them in memory. */
static ndf_status ecc_prefetch(ndf_ctx *ctx, const char *name, const ecc_want *w, int n,
                               const ndf__kernel_req *const *extra, int nextra) {
  CUfunction fn;
  if (memo_get(ctx, ecc_state_of(ctx), w[0].kernel, w[0].dt, w[0].nsp, w[0].cons, w[0].var, &fn)) return NDF_OK;
  ndf__kernel_req reqs[4];
  const ndf__kernel_req *rp[8];
  int k = 0;
  for (int i = 0; i < n && i < 4; i++) {
    ecc_request(&reqs[i], w[i].kernel, w[i].dt, w[i].nsp, w[i].cons, w[i].var);
    rp[k++] = &reqs[i];
  }
  for (int i = 0; i < nextra && k < 8; i++) rp[k++] = extra[i];
  return ndf__jit_get_many(ctx, name, rp, k, NULL);
}

static ndf_status sync_error(ndf_ctx *ctx, const char *name, CUresult r) {
  return r == CUDA_SUCCESS ? NDF_OK : ndf__cuda_error(ctx, name, r);
}

/* The device header of one new-path call (templates/ecc.cu, ndf_ecc_hdr). */
typedef struct ecc_hdr {
  double lo, inv_step, mn, mx;
  uint64_t nan_key;
  int32_t uniform, bad;
  uint32_t ticket, pad;
} ecc_hdr;
#define HDR_BYTES 256

/* A tunable (tune.h) for this call: its workload is the input's dtype, the
 * spatial axes, the voxels of the call and the thresholds. */
static int ecc_tune(ndf_ctx *ctx, const ndf__ecc_call *c, ndf_dtype dt, int id) {
  const ndf__tune_work w = {dt, c->nsp, c->nimg * c->npix, c->T};
  return ndf__tune(ctx, id, &w);
}

/* The packed bin kernel (ndf_ecc_pack) unless ecc.hist=old; bins up to 510. */
#define PACK_MAX_T 510
static int use_pack(ndf_ctx *ctx, const ndf__ecc_call *c, ndf_dtype dt, int64_t T) {
  return T <= PACK_MAX_T && ecc_tune(ctx, c, dt, NDF__TUNE_ECC_HIST) != NDF__TUNE_ECC_HIST__OLD;
}

/* One cooperative launch of ndf_ecc_pack for thresholds over [min, max]
 * (scan, barrier, histogram, curve) unless ecc.fuse=off. */
static int use_fuse(ndf_ctx *ctx, const ndf__ecc_call *c, ndf_dtype dt) {
  return ecc_tune(ctx, c, dt, NDF__TUNE_ECC_FUSE) != NDF__TUNE_ECC_FUSE__OFF;
}

/* The persistent grid barrier word of ndf_ecc_grid_sync (templates/ecc.cu):
 * 0 when uploaded, 0 or 0x80000000 after every launch.  A device table of
 * the context (cached by content: the tag keeps it this op's own). */
static ndf_status grid_barrier_word(ndf_ctx *ctx, CUdeviceptr *out) {
  static const struct {
    uint32_t word, pad;
    char tag[56];
  } init = {0, 0, "ndf_ecc_grid_sync barrier word (ecc/ecc_cuda.c)"};
  return ndf__device_table(ctx, &init, sizeof init, out);
}

int ndf__ecc_new_path(ndf_ctx *ctx) { return ndf__tune(ctx, NDF__TUNE_ECC_PATH, NULL) != NDF__TUNE_ECC_PATH__OLD; }

/* ndf_ecc_scan's parameters and grid.  A C-contiguous input is read as rows
 * of 256 (many short rows: more blocks for a big image than its own rows). */
static unsigned scan_params(ndf_ctx *ctx, ndf__ecc_scan_params *p, const ndf_array *in, CUdeviceptr p_mn,
                            CUdeviceptr p_mx, CUdeviceptr p_nan, CUdeviceptr hdr, CUdeviceptr ts, CUdeviceptr perm,
                            int64_t T, int need_range, int grid_only) {
  int nd = in->ndim;
  int64_t shape[NDF_MAX_NDIM] = {0}, str[NDF_MAX_NDIM] = {0};
  const int64_t n = ndf_array_size(in);
  int contig = 1;
  for (int64_t a = nd - 1, e = 1; a >= 0; a--) {
    if (in->shape[a] != 1 && in->strides[a] != e) contig = 0;
    e *= in->shape[a];
  }
  if (contig && n % 256 == 0 && n > 256) {
    nd = 2;
    shape[0] = n / 256, shape[1] = 256;
    str[0] = 256, str[1] = 1;
  } else {
    for (int a = 0; a < nd; a++) shape[a] = in->shape[a], str[a] = in->strides[a];
  }
  const int64_t nl = shape[nd - 1], nrows = n / nl;
  const unsigned grid = ndf__grid(ctx, (nrows + 7) / 8, 4);
  if (grid_only) return grid;
  memset(p, 0, sizeof *p);
  p->in = NDF__DPTR(in->data);
  p->mn = p_mn;
  p->mx = p_mx;
  p->nan_at = p_nan;
  p->nrows = nrows;
  p->nl = nl;
  p->sl = str[nd - 1];
  p->nd = nd;
  ndf__axes(p->shape, nd, shape);
  ndf__axes(p->str, nd, str);
  p->hdr = hdr;
  p->ts = ts;
  p->perm = perm;
  p->T = T;
  p->need_range = need_range;
  return grid;
}

ndf_status ndf__ecc_cuda_scan(ndf_ctx *ctx, const char *name, const ndf_array *in, double *mn, double *mx,
                              int64_t *nan_at) {
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  CUfunction fn;
  if ((s = get_fn(ctx, name, "ndf_ecc_scan", in->dtype, 2, 0, 0, &fn)) != NDF_OK) return s;
  ndf__ecc_scan_params p;
  const unsigned grid = scan_params(ctx, &p, in, 0, 0, 0, 0, 0, 0, 0, 0, 1);
  CUdeviceptr scratch = 0;
  if ((s = ndf__scratch_alloc(ctx, (size_t)grid * 24, &scratch)) != NDF_OK) return s;
  CUdeviceptr p_mn = scratch, p_mx = scratch + (size_t)grid * 8, p_nan = scratch + (size_t)grid * 16;
  scan_params(ctx, &p, in, p_mn, p_mx, p_nan, 0, 0, 0, 0, 0, 0);
  s = ndf__ecc_scan_launch(ctx, name, fn, grid, 256, 1, 0, &p);
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

static ndf_status hist_geometry(ndf_ctx *ctx, const ndf__ecc_call *c, const ndf_array *in, hist_geom *g, int newp) {
  const int nb = c->nb;
  /* newp 2: ndf_ecc_pack's tiles, 64 (3-D, 8 rows) or 512 (2-D) voxels of x */
  const int64_t tw = newp == 2 ? 64 : 32, tw2 = newp == 2 ? 512 : 256;
  if (c->nsp == 3) {
    g->nz = c->sshape[0], g->ny = c->sshape[1], g->nx = c->sshape[2];
    g->sz = in->strides[nb], g->sy = in->strides[nb + 1], g->sx = in->strides[nb + 2];
    g->ntx = (g->nx + tw - 1) / tw;
    g->ptiles = g->ntx * ((g->ny + 7) / 8);
  } else {
    g->nz = c->sshape[0], g->ny = 1, g->nx = c->sshape[1];
    g->sz = in->strides[nb], g->sy = 0, g->sx = in->strides[nb + 1];
    g->ntx = (g->nx + tw2 - 1) / tw2;
    g->ptiles = g->ntx;
  }
  /* about 16 blocks per SM (two waves: the kernel takes 32 registers, so 8
   * blocks of 256 are resident per SM; one wave and a bit left most SMs idle
   * in the second), each at least 4 and at most 128 planes */
  const int64_t sms = ctx->sm_count > 0 ? ctx->sm_count : 132;
  if (newp) {
    /* new path: about one wave (3-D: 8 blocks per SM, 2-D: 4) of chunks of
     * equal length, at least 8 planes (the halo) -- fewer blocks, so fewer
     * threshold loads and flushes of T global atomics per voxel (the old
     * path's 2-D chunks at 1024^2: 4 rows and 256 atomics per block of 1024
     * voxels) */
    /* ndf_ecc_pack: 64 registers, 4 blocks of 256 per SM */
    const int64_t target = sms * (newp == 2 ? 4 : c->nsp == 3 ? 8 : 4), per = c->nimg * g->ptiles;
    int64_t nch = (target + per / 2) / (per > 0 ? per : 1);
    if (nch < 1) nch = 1;
    if (nch > (g->nz + 7) / 8) nch = (g->nz + 7) / 8;
    if (nch < 1) nch = 1;
    g->mc = (g->nz + nch - 1) / nch;
    if (g->mc < 1) g->mc = 1;
    g->nchunks = (g->nz + g->mc - 1) / g->mc;
  } else {
    const int64_t target = sms * 16;
    const int64_t steps = c->nimg * g->ptiles * g->nz;
    int64_t mc = (steps + target - 1) / target;
    if (mc < 4) mc = 4;
    if (mc > 128) mc = 128;
    if (mc > g->nz) mc = g->nz;
    g->mc = mc;
    g->nchunks = (g->nz + mc - 1) / mc;
  }
  g->items = c->nimg * g->ptiles * g->nchunks;
  if (g->items > 0x7fffffff)
    return ndf__error(ctx, NDF_ENOTSUP, "%s: the input is too large for one launch (%lld blocks)", c->name,
                      (long long)g->items);
  return NDF_OK;
}

/* The new path's fields of ndf_ecc_hist (all 0: the old path). */
typedef struct hist_extra {
  CUdeviceptr hdr;
  int dev_binner, check_nan;
  CUdeviceptr cnt, perm;
  const ndf_array *out; /* with cnt */
  int pack;             /* ndf_ecc_pack: thresholds, counters and float thresholds in shared memory */
} hist_extra;

/* ndf_ecc_pack in one cooperative launch (thresholds over [min, max]; NULL: a plain launch). */
typedef struct hist_fuse {
  CUdeviceptr gbar, part;
  int *too_large; /* set when the grid cannot be resident at once (nothing launched) */
} hist_fuse;

/* The fused launch's geometry: at most cap blocks (all resident at once), so
 * the march chunks of hist_geometry are made longer when needed.  Returns 0
 * when even one chunk per tile is too many blocks. */
static int fuse_geometry(hist_geom *g, int64_t nimg, int64_t cap, int64_t minmc) {
  const int64_t per = nimg * g->ptiles;
  if (per <= 0 || per > cap) return 0;
  /* as many blocks as fit (small images are latency-bound: each march step
   * waits for its plane), chunks of at least minmc planes (ecc.minmc, default 4) */
  if (minmc > g->nz) minmc = g->nz > 0 ? g->nz : 1; /* no overflow below for a huge knob */
  int64_t nch = cap / per;
  if (nch > (g->nz + minmc - 1) / minmc) nch = (g->nz + minmc - 1) / minmc;
  if (nch < 1) nch = 1;
  g->mc = (g->nz + nch - 1) / nch;
  g->nchunks = (g->nz + g->mc - 1) / g->mc;
  g->items = per * g->nchunks;
  return g->items <= cap;
}

static ndf_status hist_launch2(ndf_ctx *ctx, const ndf__ecc_call *c, const ndf_array *in, CUfunction fn,
                               const hist_geom *g, CUdeviceptr cbuf, CUdeviceptr fbuf, CUdeviceptr hist,
                               CUdeviceptr ts, double lo, double inv_step, int uniform, const hist_extra *x,
                               const hist_fuse *f) {
  int smem_ts = 0;
  unsigned dyn = 0;
  if (x && x->pack) {
    smem_ts = 1;
    /* thresholds (double) and counters, the float table, its (t_{k-1}, t_k) pairs */
    dyn = (unsigned)((size_t)c->T * 24 + 64);
  } else if (hist && (size_t)c->T * 12 + 4 <= 40960) {
    smem_ts = 1;
    dyn = (unsigned)((size_t)c->T * 12 + 4);
  }
  const int nb = c->nb;
  ndf__ecc_params p = {0};
  p.in = NDF__DPTR(in->data);
  p.cbuf = cbuf;
  p.fbuf = fbuf;
  p.hist = hist;
  p.ts = ts;
  p.lo = lo;
  p.inv_step = inv_step;
  p.T = c->T;
  p.nimg = c->nimg;
  p.ptiles = g->ptiles;
  p.ntx = g->ntx;
  p.nchunks = g->nchunks;
  p.mc = g->mc;
  p.nz = g->nz;
  p.ny = g->ny;
  p.nx = g->nx;
  p.sz = g->sz;
  p.sy = g->sy;
  p.sx = g->sx;
  p.nb = nb;
  p.uniform = uniform;
  p.smem_ts = smem_ts;
  ndf__axes(p.bshape, nb, in->shape);
  ndf__axes(p.bstr, nb, in->strides);
  const hist_extra none = {0};
  if (!x) x = &none;
  const ndf_array *out = x->cnt ? x->out : NULL;
  p.hdr = x->hdr;
  p.dev_binner = x->dev_binner;
  p.check_nan = x->check_nan;
  p.cnt = x->cnt;
  p.perm = x->perm;
  if (out) {
    p.out = NDF__DPTR(out->data);
    p.ostep = out->strides[nb];
    ndf__axes(p.oshape, nb, out->shape);
    ndf__axes(p.ostr, nb, out->strides);
  }
  p.fused = f != NULL;
  p.gbar = f ? f->gbar : 0;
  p.part = f ? f->part : 0;
  if (f) {
    void *args[] = {&p};
    CUresult r = ndf__cu(NULL)->cuLaunchCooperativeKernel(fn, (unsigned)g->items, 1, 1, 256, 1, 1, dyn, ctx->stream,
                                                          args);
    /* too many blocks to be resident at once, or no cooperative launches on
     * this device / setup: nothing ran, the caller takes the scan path */
    if (r == CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE || r == CUDA_ERROR_NOT_SUPPORTED) {
      *f->too_large = 1;
      return NDF_OK;
    }
    if (r == CUDA_SUCCESS) ndf__klog(ctx, fn);
    return r == CUDA_SUCCESS ? NDF_OK : ndf__cuda_error(ctx, c->name, r);
  }
  return ndf__ecc_launch(ctx, c->name, fn, (unsigned)g->items, 256, 1, dyn, &p);
}

static ndf_status hist_launch(ndf_ctx *ctx, const ndf__ecc_call *c, const ndf_array *in, CUfunction fn,
                              const hist_geom *g, CUdeviceptr cbuf, CUdeviceptr fbuf, CUdeviceptr hist,
                              CUdeviceptr ts, double lo, double inv_step, int uniform, const hist_extra *x) {
  return hist_launch2(ctx, c, in, fn, g, cbuf, fbuf, hist, ts, lo, inv_step, uniform, x, NULL);
}

/* ndf_ecc_final: per image the prefix sums, in the caller's order (hdr: only when clean). */
static ndf_status final_launch(ndf_ctx *ctx, const ndf__ecc_call *c, CUfunction ff, CUdeviceptr hist,
                               CUdeviceptr d_perm, const ndf_array *out, CUdeviceptr hdr) {
  const int nb = c->nb;
  ndf__ecc_final_params p = {0};
  p.hist = hist;
  p.perm = d_perm;
  p.out = NDF__DPTR(out->data);
  p.nimg = c->nimg;
  p.T = c->T;
  p.ostep = out->strides[nb];
  p.nb = nb;
  ndf__axes(p.oshape, nb, out->shape);
  ndf__axes(p.ostr, nb, out->strides);
  p.hdr = hdr;
  return ndf__ecc_final_launch(ctx, c->name, ff, ndf__grid(ctx, c->nimg, 8), 256, 1, 0, &p);
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
  if (c->npix > 0 && (s = hist_geometry(ctx, c, in, &g, 0)) != NDF_OK) return s;
  /* the sorted thresholds, then the permutation: one host-to-device copy */
  double *ts = malloc((size_t)T * 16);
  int64_t *perm = ts ? (int64_t *)(ts + T) : NULL;
  CUdeviceptr d_ts = 0, d_perm = 0, hist = 0;
  const size_t hbytes = (size_t)nimg * (size_t)T * 8;
  if (!ts || ndf__ecc_sort_thresholds(t, T, ts, perm)) {
    s = ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", c->name);
    goto done;
  }
  double lo, inv_step;
  const int uni = ndf__ecc_uniform_bins(ts, T, uniform, &lo, &inv_step);
  /* scratch: the histogram, the sorted thresholds, the permutation (the
   * thresholds change with the data or per training step: no device table) */
  if ((s = ndf__scratch_alloc(ctx, hbytes + (size_t)T * 16, &hist)) != NDF_OK) goto done;
  d_ts = hist + hbytes;
  d_perm = d_ts + (size_t)T * 8;
  const ndf__cu_api *cu = ndf__cu(NULL);
  CUresult r = cu->cuMemsetD8Async(hist, 0, hbytes, ctx->stream);
  if (r == CUDA_SUCCESS) r = cu->cuMemcpyHtoDAsync(d_ts, ts, (size_t)T * 16, ctx->stream);
  if ((s = sync_error(ctx, c->name, r)) != NDF_OK) goto done;
  if (c->npix > 0 && (s = hist_launch(ctx, c, in, fh, &g, 0, 0, hist, d_ts, lo, inv_step, uni, NULL)) != NDF_OK) goto done;
  s = final_launch(ctx, c, ff, hist, d_perm, out, 0);
done:
  if (hist) ndf__scratch_free(ctx, hist);
  free(ts);
  return s;
}

/* Reads the header back (one copy, one stream sync): the NaN index and the
 * not-finite flag. */
static ndf_status hdr_read(ndf_ctx *ctx, const char *name, CUdeviceptr hdr, int64_t *nan_at, int *not_finite) {
  ecc_hdr h;
  const ndf__cu_api *cu = ndf__cu(NULL);
  CUresult r = cu->cuMemcpyDtoHAsync(&h, hdr, sizeof h, ctx->stream);
  if (r == CUDA_SUCCESS) r = cu->cuStreamSynchronize(ctx->stream);
  ndf_status s = sync_error(ctx, name, r);
  if (s != NDF_OK) return s;
  *nan_at = h.nan_key ? (int64_t)~h.nan_key : -1;
  if (not_finite) *not_finite = h.bad != 0;
  return NDF_OK;
}

static int mapped_header(ndf_ctx *ctx, CUdeviceptr *dev, volatile ecc_hdr **host);
/* 1: the context defers data checks and the input can hold NaN / inf (float) */
static int defer_float(const ndf_ctx *ctx, const ndf_array *in) {
  return ctx->opt.deferred_errors && (in->dtype == NDF_FLOAT32 || in->dtype == NDF_FLOAT64);
}
static ndf_status fused_result(ndf_ctx *ctx, const char *name, int isfloat, volatile ecc_hdr *host, CUdeviceptr hdr,
                               int64_t *nan_at, int *not_finite);

/* The memory of one fused cooperative launch (ndf_ecc_pack or ndf_ecc_brick):
 * the grid barrier word; scratch with the header (unless the mapped one is
 * used: hhost != NULL), the per-image tickets and the histogram (the kernel
 * zeroes them), then the partials of nblocks blocks.  Free base. */
typedef struct fused_mem {
  CUdeviceptr gbar, base, hdr, cnt, hist, part;
  volatile ecc_hdr *hhost;
  /* the warp-strip kernels (strip2_mem): the call's seq and the mapped header's sequence word
   * (0: none); deferred: the host does not wait (drec: the deferred check's record; seq: the
   * call's ordinal there) */
  CUdeviceptr seqp, drec;
  uint32_t seq;
  int deferred;
} fused_mem;

/* The fields that the fused kernels' parameter structs (ndf_ecc_brick, ndf_ecc_strip2, strip3,
 * ndf_ecc_rows) name alike: the input, the scratch of m and the output. */
#define FUSED_HEAD(p, in_, out_, m_)                                           \
  do {                                                                         \
    (p).in = NDF__DPTR((in_)->data);                                           \
    (p).hist = (m_)->hist;                                                     \
    (p).cnt = (m_)->cnt;                                                       \
    (p).out = NDF__DPTR((out_)->data);                                         \
    (p).hdr = (m_)->hdr;                                                       \
    (p).gbar = (m_)->gbar;                                                     \
    (p).part = (m_)->part;                                                     \
  } while (0)

/* The fields that ndf_ecc_brick's and ndf_ecc_strip3's structs name alike: T, nimg, the
 * output's threshold step, the shape (nz, ny, nx) and strides (sz, sy, sx); 2-D: ny = 1, sy = 0. */
#define FUSED_GEOM(p, c_, in_, out_)                                           \
  do {                                                                         \
    const int nb_ = (c_)->nb, nsp_ = (c_)->nsp;                                \
    (p).T = (c_)->T;                                                           \
    (p).nimg = (c_)->nimg;                                                     \
    (p).ostep = (out_)->strides[nb_];                                          \
    (p).nz = (c_)->sshape[0];                                                  \
    (p).ny = nsp_ == 3 ? (c_)->sshape[1] : 1;                                  \
    (p).nx = (c_)->sshape[nsp_ - 1];                                           \
    (p).sz = (in_)->strides[nb_];                                              \
    (p).sy = nsp_ == 3 ? (in_)->strides[nb_ + 1] : 0;                          \
    (p).sx = (in_)->strides[nb_ + nsp_ - 1];                                   \
  } while (0)

/* The batch axes of the input and the output, the last fields of every fused kernel's struct. */
#define FUSED_AXES(p, nb_, in_, out_)                                          \
  do {                                                                         \
    ndf__axes((p).bshape, (nb_), (in_)->shape);                                \
    ndf__axes((p).bstr, (nb_), (in_)->strides);                                \
    ndf__axes((p).oshape, (nb_), (out_)->shape);                               \
    ndf__axes((p).ostr, (nb_), (out_)->strides);                               \
  } while (0)

static ndf_status fused_mem_alloc(ndf_ctx *ctx, int64_t nimg, int64_t T, int64_t nblocks, fused_mem *m) {
  memset(m, 0, sizeof *m);
  ndf_status s = grid_barrier_word(ctx, &m->gbar);
  if (s != NDF_OK) return s;
  /* tickets: one per image and the call's (the telescoped kernels over a given range) */
  const size_t cnt_bytes = ((size_t)(nimg + 1) * 4 + 255) & ~(size_t)255, hbytes = (size_t)nimg * (size_t)T * 8;
  if ((s = ndf__scratch_alloc(ctx, HDR_BYTES + cnt_bytes + hbytes + (size_t)nblocks * 24, &m->base)) != NDF_OK)
    return s;
  CUdeviceptr mhdr = 0;
  volatile ecc_hdr *hhost = NULL;
  const int mapped = mapped_header(ctx, &mhdr, &hhost);
  m->hhost = mapped ? hhost : NULL;
  m->hdr = mapped ? mhdr : m->base;
  m->cnt = m->base + HDR_BYTES;
  m->hist = m->cnt + cnt_bytes;
  m->part = m->hist + hbytes;
  return NDF_OK;
}

/* The fused call (thresholds over [min, max], ndf_ecc_pack): one cooperative
 * launch -- no memset, no scan kernel; float inputs then read the header
 * back (one copy, one sync), integer inputs do not wait at all.  *too_large:
 * the grid could not be resident at once, nothing was launched. */
static ndf_status ecc_fused(ndf_ctx *ctx, const ndf__ecc_call *c, const ndf_array *in, ndf_array *out, CUfunction fh,
                            const hist_geom *g, int64_t *nan_at, int *not_finite, int *too_large) {
  const int isfloat = in->dtype == NDF_FLOAT32 || in->dtype == NDF_FLOAT64;
  fused_mem m;
  ndf_status s = fused_mem_alloc(ctx, c->nimg, c->T, g->items, &m);
  if (s != NDF_OK) return s;
  const hist_extra x = {m.hdr, 0, 0, m.cnt, 0, out, 1};
  const hist_fuse f = {m.gbar, m.part, too_large};
  s = hist_launch2(ctx, c, in, fh, g, 0, 0, m.hist, 0, 0, 0, 0, &x, &f);
  if (s == NDF_OK && !*too_large) s = fused_result(ctx, c->name, isfloat, m.hhost, m.hdr, nan_at, not_finite);
  ndf__scratch_free(ctx, m.base);
  return s;
}

/* ecc.maphdr=off: the fused calls' header in device scratch, read back
 * by a copy; default: the context's page-locked, device-mapped header
 * (ecc_state.hdr_host), which block 0 writes directly, so a float call only
 * synchronizes the stream.  Returns 0 (device header) when mapping fails. */
static int mapped_header(ndf_ctx *ctx, CUdeviceptr *dev, volatile ecc_hdr **host) {
  if (ndf__tune(ctx, NDF__TUNE_ECC_MAPHDR, NULL) == NDF__TUNE_ECC_MAPHDR__OFF) return 0;
  ecc_state *st = ecc_state_of(ctx);
  if (!st) return 0;
  pthread_mutex_lock(&ctx->lock);
  if (!st->hdr_host) {
    const ndf__cu_api *cu = ndf__cu(NULL);
    void *h = NULL;
    CUdeviceptr d = 0;
    if (cu->cuMemHostAlloc(&h, HDR_BYTES, CU_MEMHOSTALLOC_DEVICEMAP) == CUDA_SUCCESS) {
      memset(h, 0, HDR_BYTES);
      if (cu->cuMemHostGetDevicePointer(&d, h, 0) == CUDA_SUCCESS) {
        st->hdr_host = h;
        st->hdr_dev = d;
      } else {
        cu->cuMemFreeHost(h);
      }
    }
  }
  *dev = st->hdr_dev;
  *host = (volatile ecc_hdr *)st->hdr_host;
  pthread_mutex_unlock(&ctx->lock);
  return *host != NULL;
}

/* After a fused launch: float inputs wait for the stream and read the NaN
 * index and the not-finite flag from the mapped header (host != NULL) or by
 * a copy from the device header; integer inputs do not wait. */
static ndf_status fused_result(ndf_ctx *ctx, const char *name, int isfloat, volatile ecc_hdr *host, CUdeviceptr hdr,
                               int64_t *nan_at, int *not_finite) {
  if (!isfloat) return NDF_OK;
  if (!host) return hdr_read(ctx, name, hdr, nan_at, not_finite);
  ndf_status s = sync_error(ctx, name, ndf__cu(NULL)->cuStreamSynchronize(ctx->stream));
  if (s != NDF_OK) return s;
  const uint64_t key = host->nan_key;
  *nan_at = key ? (int64_t)~key : -1;
  *not_finite = host->bad != 0;
  return NDF_OK;
}

/* ---- the brick kernel (ndf_ecc_brick, templates/ecc.cu) ------------------------------------------ */
/* ecc.brick=1: the brick kernel reading the input twice (phase 1 and
 * phase 2); =2: the brick kernel, the bricks kept in shared memory over the
 * grid barrier when every block's share fits (one read of the input), else
 * as 1; default (0): the march (ndf_ecc_pack, one cooperative launch), which
 * is faster on the H200 (about a third less time than either brick form at
 * 256^3 and 8192^2; small inputs within ~10%). */
static int brick_mode(ndf_ctx *ctx, const ndf__ecc_call *c, ndf_dtype dt) {
  return ecc_tune(ctx, c, dt, NDF__TUNE_ECC_BRICK); /* the value's index is the mode */
}

/* The brick geometry of ndf_ecc_brick (NDF_KW, NDF_KY, NDF_KZ, NDF_KNW there). */
#define BRICK_KW(nsp) ((nsp) == 3 ? 32 : 64)
#define BRICK_KY(nsp) ((nsp) == 3 ? 8 : 1)
#define BRICK_KZ(nsp) ((nsp) == 3 ? 8 : 16)
#define BRICK_NW(nsp) ((nsp) == 3 ? 10 * 10 * 34 : 18 * 66)
#define BRICK_MAX_PER_SM 4 /* __launch_bounds__(256, 4) */

static unsigned brick_dyn(int64_t T, int nsp, int64_t per, int resident, size_t vsize) {
  const size_t base = (size_t)8 * (size_t)((3 * T + 9) & ~(int64_t)1) + (size_t)4 * BRICK_NW(nsp);
  const size_t res = resident ? (size_t)per * 2 * BRICK_NW(nsp) * vsize : 0;
  const size_t b = base + res;
  return b > 0x7fffffffu ? 0x7fffffffu : (unsigned)b;
}

static int brick_occupancy(CUfunction fn, unsigned dyn) {
  int n = 0;
  if (ndf__cu(NULL)->cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, fn, 256, dyn) != CUDA_SUCCESS) return 0;
  return n;
}

/* The plan of one call: resident (mode 2) with the fewest bricks per block
 * whose grid is resident at once (occupancy from the driver at that shared
 * memory), else streaming with as many blocks as are resident.  The last
 * plan is kept in the context's state (the driver's occupancy queries cost microseconds). */
static int brick_planner(ndf_ctx *ctx, CUfunction fn, const ndf__ecc_call *c, int mode, size_t vsize, brick_plan *pl) {
  ecc_state *st = ecc_state_of(ctx); /* without it (out of memory): no plan kept */
  const int nsp = c->nsp;
  const int64_t nz = c->sshape[0], ny = nsp == 3 ? c->sshape[1] : 1, nx = c->sshape[nsp - 1];
  memset(pl, 0, sizeof *pl);
  pl->nbz = (nz + BRICK_KZ(nsp) - 1) / BRICK_KZ(nsp);
  pl->nby = (ny + BRICK_KY(nsp) - 1) / BRICK_KY(nsp);
  pl->nbx = (nx + 2 * BRICK_KW(nsp) - 1) / (2 * BRICK_KW(nsp));
  const int64_t bpi = pl->nbz * pl->nby * pl->nbx;
  if (bpi <= 0 || c->nimg > INT64_MAX / bpi) return 0;
  pl->nbricks = c->nimg * bpi;
  if (pl->nbricks > 0x7fffffff) return 0;
  int hit = 0;
  if (st) {
    pthread_mutex_lock(&ctx->lock);
    hit = st->brick_last.fn == fn && st->brick_last.T == c->T && st->brick_last.nbricks == pl->nbricks &&
          st->brick_last.mode == mode && st->brick_last.nsp == nsp && st->brick_last.vsize == vsize;
    /* the layout (nbz, nby, nbx) is this call's: only the launch shape depends on the key (the
     * function's shared memory attribute was set when the plan was made) */
    if (hit)
      pl->per = st->brick_last.pl.per, pl->grid = st->brick_last.pl.grid, pl->resident = st->brick_last.pl.resident,
      pl->dyn = st->brick_last.pl.dyn;
    pthread_mutex_unlock(&ctx->lock);
  }
  if (hit) return 1;
  const int64_t sms = ctx->sm_count > 0 ? ctx->sm_count : 132;
  /* the attribute plus the kernel's static shared memory (about 200 bytes) must stay within the opt-in limit */
  const size_t cap = ctx->max_smem_block > 49152 + 1024 ? ctx->max_smem_block - 1024 : 49152;
  if (ndf__cu(NULL)->cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)cap) != CUDA_SUCCESS)
    return 0;
  int found = 0;
  if (mode == 2) {
    for (int b = BRICK_MAX_PER_SM; b >= 1 && !found; b--) {
      const int64_t per = (pl->nbricks + b * sms - 1) / (b * sms);
      const unsigned dyn = brick_dyn(c->T, nsp, per, 1, vsize);
      if (dyn > cap) continue;
      const int64_t grid = (pl->nbricks + per - 1) / per;
      if ((int64_t)brick_occupancy(fn, dyn) * sms >= grid) {
        pl->per = per, pl->grid = grid, pl->resident = 1, pl->dyn = dyn;
        found = 1;
      }
    }
  }
  if (!found) {
    const unsigned dyn = brick_dyn(c->T, nsp, 0, 0, vsize);
    if (dyn > cap) return 0;
    const int64_t occ = brick_occupancy(fn, dyn);
    if (occ < 1) return 0;
    int64_t grid = occ * sms;
    if (grid > pl->nbricks) grid = pl->nbricks;
    pl->per = (pl->nbricks + grid - 1) / grid;
    pl->grid = (pl->nbricks + pl->per - 1) / pl->per;
    pl->resident = 0, pl->dyn = dyn;
  }
  if (st) {
    pthread_mutex_lock(&ctx->lock);
    st->brick_last.fn = fn, st->brick_last.T = c->T, st->brick_last.nbricks = pl->nbricks;
    st->brick_last.mode = mode, st->brick_last.nsp = nsp, st->brick_last.vsize = vsize, st->brick_last.pl = *pl;
    pthread_mutex_unlock(&ctx->lock);
  }
  return 1;
}

/* The end of one fused cooperative launch (ndf_ecc_brick, ndf_ecc_strip2,
 * ndf_ecc_rows): the shapes and strides of in and out after pb's own
 * fields, the launch, then (float inputs) the header's flags -- with seq != 0
 * and the mapped header, strip2's wait for its sequence word -- and m's
 * scratch freed.  *fallback stays 1 when the grid could not be resident at
 * once (nothing launched). */
static ndf_status strip2_wait(ndf_ctx *ctx, const char *name, volatile ecc_hdr *h, uint32_t seq, int64_t *nan_at,
                              int *not_finite);
/* ecc.prof's host times: the public call's entry (ecc.c), before and after the launch call */
__thread uint64_t ndf__ecc_t_entry;
static __thread uint64_t ecc_t_launch[2], ecc_t_prof; /* ecc_t_prof: strip_prof_alloc's own time */
static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
/* (pre: a kernel launched first on the same grid with the same parameters, no dynamic shared memory, not
 * cooperative -- strip3's split phase 1; NULL: none) */
static ndf_status fused_launch_pre(ndf_ctx *ctx, const ndf__ecc_call *c, CUfunction pre, CUfunction fn, void *params,
                                   const ndf_array *in, unsigned grid, unsigned dyn, const fused_mem *m, uint32_t seq,
                                   int64_t *nan_at, int *not_finite, int *fallback) {
  const int isfloat = in->dtype == NDF_FLOAT32 || in->dtype == NDF_FLOAT64;
  void *args[] = {params};
  ecc_t_launch[0] = now_ns();
  CUresult r = CUDA_SUCCESS;
  if (pre) r = ndf__cu(NULL)->cuLaunchKernel(pre, grid, 1, 1, 256, 1, 1, 0, ctx->stream, args, NULL);
  if (r == CUDA_SUCCESS) r = ndf__cu(NULL)->cuLaunchCooperativeKernel(fn, grid, 1, 1, 256, 1, 1, dyn, ctx->stream, args);
  ecc_t_launch[1] = now_ns();
  if (r == CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE || r == CUDA_ERROR_NOT_SUPPORTED) {
    ndf__scratch_free(ctx, m->base);
    return NDF_OK;
  }
  *fallback = 0;
  if (r == CUDA_SUCCESS) ndf__klog(ctx, fn);
  ndf_status s = r == CUDA_SUCCESS ? NDF_OK : ndf__cuda_error(ctx, c->name, r);
  if (s == NDF_OK && m->deferred) {
    /* no wait: the check's failure goes to m->drec */
  } else if (s == NDF_OK && isfloat && seq && m->hhost) {
    s = strip2_wait(ctx, c->name, m->hhost, seq, nan_at, not_finite);
  } else if (s == NDF_OK) {
    s = fused_result(ctx, c->name, isfloat, m->hhost, m->hdr, nan_at, not_finite);
  }
  ndf__scratch_free(ctx, m->base);
  return s;
}
static ndf_status fused_launch(ndf_ctx *ctx, const ndf__ecc_call *c, CUfunction fn, void *params,
                               const ndf_array *in, unsigned grid, unsigned dyn, const fused_mem *m, uint32_t seq,
                               int64_t *nan_at, int *not_finite, int *fallback) {
  return fused_launch_pre(ctx, c, NULL, fn, params, in, grid, dyn, m, seq, nan_at, not_finite, fallback);
}

/* One cooperative launch of ndf_ecc_brick (thresholds over [min, max], T <=
 * 510).  *fallback: nothing was launched (no plan, or the grid could not be
 * resident at once); the caller takes another path. */
static ndf_status ecc_brick(ndf_ctx *ctx, const ndf__ecc_call *c, const ndf_array *in, ndf_array *out, int cons,
                            int mode, int64_t *nan_at, int *not_finite, int *fallback) {
  *fallback = 1;
  CUfunction fn;
  ndf_status s = get_fn(ctx, c->name, "ndf_ecc_brick", in->dtype, c->nsp, cons, 0, &fn);
  if (s != NDF_OK) return s;
  const size_t vsize = in->dtype == NDF_FLOAT64 ? 8 : 4;
  brick_plan pl;
  if (!brick_planner(ctx, fn, c, mode, vsize, &pl)) return NDF_OK;
  const int64_t T = c->T, nimg = c->nimg;
  fused_mem m;
  if ((s = fused_mem_alloc(ctx, nimg, T, pl.grid, &m)) != NDF_OK) return s;
  const int nb = c->nb;
  ndf__ecc_brick_params p = {0};
  FUSED_HEAD(p, in, out, &m);
  FUSED_GEOM(p, c, in, out);
  p.nbz = pl.nbz;
  p.nby = pl.nby;
  p.nbx = pl.nbx;
  p.nbricks = pl.nbricks;
  p.per = pl.per;
  p.nb = nb;
  p.resident = pl.resident;
  FUSED_AXES(p, nb, in, out);
  return fused_launch(ctx, c, fn, &p, in, (unsigned)pl.grid, pl.dyn, &m, 0, nan_at, not_finite, fallback);
}

/* ---- the 2-D warp-strip kernel (ndf_ecc_strip2, templates/ecc.cu) ------------------------------ */
/* 2-D calls with thresholds over [min, max], T <= 510 and float comparisons
 * (float32, uint8, uint16) make one cooperative launch of ndf_ecc_strip2
 * (a warp marches a strip of 128 columns, no block barriers in the march)
 * unless ecc.2d=old (ndf_ecc_pack's fused march); T <= 320 takes
 * ndf_ecc_strip2t (below) unless ecc.2d=strip2.
 * ecc.mc2: the least rows per warp task (default 4 for ndf_ecc_strip2t, 8 for
 * ndf_ecc_strip2).  ecc.fence=sc: the fence.sc pairs at the grid barrier and tickets
 * instead of acq_rel atomics.
 * ecc.bin=table: no certified first guesses (every bin from the table).  docs/adr/0009,
 * "The 2-D warp-strip kernel". */
static int use_strip2(ndf_ctx *ctx, const ndf__ecc_call *c, ndf_dtype dt) {
  return ecc_tune(ctx, c, dt, NDF__TUNE_ECC_2D) != NDF__TUNE_ECC_2D__OLD;
}

#define STRIP2_W 128          /* columns per strip (NDF_SW) */
#define STRIP2_MAX_PER_SM 4   /* __launch_bounds__(256, 4) */
#define STRIP2_SEQ_OFF 128    /* the sequence word in the mapped header block (HDR_BYTES) */

/* The 2-D warp-strip plans' finer chunk-count search (strip_chunks_make's fine) by default: on the
 * H200 (float32, T = 256) it is 7% faster than the coarse search at 8192^2 and equal at 1024^2 and
 * 64 x 256^2; ecc.plan=coarse: the coarse search.  (3-D: strip_units_make's equal shares.) */
static int plan_fine(ndf_ctx *ctx) { return ndf__tune(ctx, NDF__TUNE_ECC_PLAN, NULL) != NDF__TUNE_ECC_PLAN__COARSE; }

typedef struct strip2_plan {
  int64_t nstrip, mc, tpi, bpi, nblocks;
  int ncopy;
} strip2_plan;

/* Tasks (strip, chunk of mc rows) of 8 per block, blocks of one image each,
 * at most cap blocks; rows per task at least ecc.mc2 (default mc0) and about one task
 * per resident warp; rows0 more rows before row 0 (ndf_ecc_strip2t's
 * T-construction: rows from -1).  0: no plan (the caller keeps ndf_ecc_pack). */
static int strip2_plan_make(ndf_ctx *ctx, const ndf__ecc_call *c, ndf_dtype dt, int64_t rows0, int64_t mc0,
                            int64_t cap, strip2_plan *pl) {
  const int64_t nz = c->sshape[0], nx = c->sshape[1], nimg = c->nimg;
  if (nz <= 0 || nx <= 0 || nimg <= 0 || nz > 0x7fffff00 || nx > 0x7fffff00) return 0;
  const int mc2 = ecc_tune(ctx, c, dt, NDF__TUNE_ECC_MC2);
  /* mc0 (the default): ndf_ecc_strip2t 4, ndf_ecc_strip2 8.  On the H200, ndf_ecc_strip2t with 4 rows
   * takes 8-11% less time than with 8 at 512^2 to 1024^2 float32 (25% uint8 1024^2); from 2048^2 on, and
   * at 64 x 256^2, the resident grid sets mc and both are equal.  ndf_ecc_strip2 is fastest at 8 (1024^2:
   * 4 is 3% slower, 2, 16 and 32 are 15-70% slower). */
  pl->nstrip = (nx + STRIP2_W - 1) / STRIP2_W;
  strip_chunks ch;
  if (!strip_chunks_make(pl->nstrip, nz + rows0, 1, mc2 > 0 ? mc2 : mc0, nimg, cap, plan_fine(ctx), &ch)) return 0;
  pl->mc = ch.mc, pl->tpi = ch.tpi, pl->bpi = ch.bpi, pl->nblocks = ch.nblocks, pl->ncopy = ch.ncopy;
  return 1;
}

/* After the launch (float input, mapped header): wait until block 0 has
 * written this call's sequence word after the header (the end of phase 1),
 * not for the end of the kernel; after about 1 ms a stream sync instead. */
static ndf_status strip2_wait(ndf_ctx *ctx, const char *name, volatile ecc_hdr *h, uint32_t seq, int64_t *nan_at,
                              int *not_finite) {
  volatile uint32_t *w = (volatile uint32_t *)((volatile char *)h + STRIP2_SEQ_OFF);
  int seen = 0;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (unsigned it = 0;; it++) {
    if (__atomic_load_n(w, __ATOMIC_ACQUIRE) == seq) {
      seen = 1;
      break;
    }
    if ((it & 63u) == 63u) {
      clock_gettime(CLOCK_MONOTONIC, &t1);
      if ((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) > 1000000L) break;
    }
  }
  if (!seen) {
    ndf_status s = sync_error(ctx, name, ndf__cu(NULL)->cuStreamSynchronize(ctx->stream));
    if (s != NDF_OK) return s;
    if (__atomic_load_n(w, __ATOMIC_ACQUIRE) != seq)
      return ndf__error(ctx, NDF_EINTERNAL, "%s: the kernel ended without writing its header", name);
  }
  const uint64_t key = h->nan_key;
  *nan_at = key ? (int64_t)~key : -1;
  *not_finite = h->bad != 0;
  return NDF_OK;
}

static ndf_status strip2_mem_at(ndf_ctx *ctx, int64_t nimg, int64_t T, int64_t nblocks, fused_mem *m);
static uint32_t strip_seq(void);
/* The memory of a warp-strip kernel's call (strip2_mem_at, or with ecc.ws=off per-call scratch:
 * fused_mem_alloc, the caller frees m->base after the launch) and its seq: the mapped header's
 * sequence word the host waits for; with defer (the context defers the checks of a float input)
 * and a mapped header block, no wait: the call's ordinal and the deferred check's record. */
static ndf_status strip2_mem(ndf_ctx *ctx, const char *name, int defer, int64_t nimg, int64_t T, int64_t nblocks,
                             fused_mem *m) {
  ndf_status s = ndf__tune(ctx, NDF__TUNE_ECC_WS, NULL) == NDF__TUNE_ECC_WS__OFF ? fused_mem_alloc(ctx, nimg, T, nblocks, m) /* the caller frees m->base */
                                          : strip2_mem_at(ctx, nimg, T, nblocks, m);
  if (s != NDF_OK) return s;
  ecc_state *st = defer && m->hhost ? ecc_state_of(ctx) : NULL; /* there: the mapped header is in it */
  if (st) {
    /* deferred check: the kernel writes the header to the device (the workspace's, or the
     * scratch's), a failure to the record in the mapped block; the call's ordinal is its seq */
    m->drec = m->hdr + NDF__DREC_OFF;
    m->hdr = m->cnt - HDR_BYTES; /* the scratch's or the workspace's header */
    m->hhost = NULL;
    m->deferred = 1;
    pthread_mutex_lock(&ctx->lock);
    uint32_t n = ++st->defer_n;
    if (n == 0) n = ++st->defer_n;
    st->defer_names[n % ECC_DEFER_NAMES] = name;
    pthread_mutex_unlock(&ctx->lock);
    m->seq = n;
    m->seqp = 0;
    return NDF_OK;
  }
  m->seq = strip_seq();
  m->seqp = m->hhost ? m->hdr + STRIP2_SEQ_OFF : 0;
  return NDF_OK;
}
/* fused_mem_alloc's layout in the context's workspace (ecc_state.ws) instead
 * of per-call scratch: no allocation and free per call (the kernel zeroes
 * the tickets and histograms and writes the partials itself; later calls
 * on the stream are ordered after it).  Grown by a stream-ordered free and
 * allocation; ecc.ws=off takes per-call scratch (fused_mem_alloc: the
 * caller frees m->base after the launch). */
static ndf_status strip2_mem_at(ndf_ctx *ctx, int64_t nimg, int64_t T, int64_t nblocks, fused_mem *m) {
  memset(m, 0, sizeof *m);
  ndf_status s = grid_barrier_word(ctx, &m->gbar);
  if (s != NDF_OK) return s;
  const size_t cnt_bytes = ((size_t)(nimg + 1) * 4 + 255) & ~(size_t)255, hbytes = (size_t)nimg * (size_t)T * 8;
  const size_t need = HDR_BYTES + cnt_bytes + hbytes + (size_t)nblocks * 24;
  ecc_state *st = ecc_state_of(ctx);
  if (!st) return ndf__error(ctx, NDF_ENOMEM, "ndforge: out of host memory (the context's ECC state)");
  pthread_mutex_lock(&ctx->lock);
  if (st->ws_bytes < need) {
    if (st->ws) ndf__scratch_free(ctx, st->ws);
    st->ws = 0;
    st->ws_bytes = 0;
    const size_t want = need < ((size_t)1 << 16) ? (size_t)1 << 16 : need;
    s = ndf__scratch_alloc(ctx, want, &st->ws);
    if (s == NDF_OK) st->ws_bytes = want;
    else st->ws = 0;
  }
  const CUdeviceptr base = st->ws;
  pthread_mutex_unlock(&ctx->lock);
  if (s != NDF_OK) return s;
  CUdeviceptr mhdr = 0;
  volatile ecc_hdr *hhost = NULL;
  const int mapped = mapped_header(ctx, &mhdr, &hhost);
  m->base = 0; /* nothing to free */
  m->hhost = mapped ? hhost : NULL;
  m->hdr = mapped ? mhdr : base;
  m->cnt = base + HDR_BYTES;
  m->hist = m->cnt + cnt_bytes;
  m->part = m->hist + hbytes;
  return NDF_OK;
}

/* The call's number for the mapped header's sequence word (strip2_wait): one counter for every
 * kernel that writes the word (ndf_ecc_strip2, ndf_ecc_strip3), never 0, so that no call finds its
 * number already left there by a call of the other kernel. */
static uint32_t strip_seq(void) {
  static uint32_t seq_next = 0;
  uint32_t seq = __atomic_add_fetch(&seq_next, 1u, __ATOMIC_RELAXED);
  if (seq == 0) seq = __atomic_add_fetch(&seq_next, 1u, __ATOMIC_RELAXED);
  return seq;
}

/* The parameter blocks' common tail (ndf_ecc2_params, ndf_ecc3_params): nb, ncopy, seq, hdrblk,
 * fence, bin, prof (strip_prof_alloc).  ecc.fence=sc: __threadfence pairs at the grid barrier
 * and the tickets; default: release / acquire atomics.  ecc.bin=table: every first guess
 * checked against the thresholds in shared memory; default: guesses certified by an
 * error bound skip the table. */
static void strip_flags(ndf_ctx *ctx, int *fence_out, int *bin_out) {
  *fence_out = ndf__tune(ctx, NDF__TUNE_ECC_FENCE, NULL) == NDF__TUNE_ECC_FENCE__SC;
  *bin_out = ndf__tune(ctx, NDF__TUNE_ECC_BIN, NULL) == NDF__TUNE_ECC_BIN__TABLE;
}
/* The fields after rhi that ndf_ecc2_params and ndf_ecc3_params name alike. */
#define STRIP_TAIL(ctx_, p, nb_, ncopy_, m_, hdrblk_, prof_)                   \
  do {                                                                         \
    (p).nb = (nb_);                                                            \
    (p).ncopy = (ncopy_);                                                      \
    (p).seq = (m_)->seq;                                                       \
    (p).hdrblk = (hdrblk_);                                                    \
    strip_flags((ctx_), &(p).fence, &(p).bin);                                 \
    (p).prof = (prof_);                                                        \
    (p).drec = (m_)->drec;                                                     \
  } while (0)

/* ecc.prof=on (benchmarks): the warp-strip kernels write %globaltimer at their phase boundaries
 * (8 stamps per block: 0 start, 1 phase 1 done, 2 past the grid barrier, 3 set-up done, 4 the
 * block's march done, 5 histogram flushed and ticket taken, 6 end); strip_prof_report prints, after
 * the call, the grid's span and per phase the median and largest block time (microseconds) to stderr,
 * and the host's time from the public call's entry to the launch call (without this scratch's
 * allocation and memset) and of the launch call.  Returns the stamps' scratch (0: not profiling). */
static CUdeviceptr strip_prof_alloc(ndf_ctx *ctx, int64_t grid) {
  CUdeviceptr d = 0;
  if (ndf__tune(ctx, NDF__TUNE_ECC_PROF, NULL) != NDF__TUNE_ECC_PROF__ON) return 0;
  const uint64_t t0 = now_ns();
  if (ndf__scratch_alloc(ctx, (size_t)grid * 128, &d) != NDF_OK) return 0;
  ndf__cu(NULL)->cuMemsetD8Async(d, 0, (size_t)grid * 128, ctx->stream);
  ecc_t_prof = now_ns() - t0;
  return d;
}
static int cmp_u64(const void *a, const void *b) {
  const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}
static void strip_prof_report(ndf_ctx *ctx, const char *kname, CUdeviceptr d, int64_t nblocks, int64_t grid) {
  if (!d) return;
  const ndf__cu_api *cu = ndf__cu(NULL);
  uint64_t *h = malloc((size_t)grid * 128), *v = malloc((size_t)nblocks * 8);
  uint64_t t0 = UINT64_MAX, t6 = 0, s0 = 0;
  int64_t done = -1;
  if (h && v && cu->cuMemcpyDtoHAsync(h, d, (size_t)grid * 128, ctx->stream) == CUDA_SUCCESS &&
      cu->cuStreamSynchronize(ctx->stream) == CUDA_SUCCESS) {
    done = 0; /* blocks with all 7 stamps (none when nothing ran, or a NaN / inf ended the call early) */
    for (int64_t b = 0; b < nblocks; b++) {
      if (h[b * 8] < t0) t0 = h[b * 8];
      if (h[b * 8] > s0) s0 = h[b * 8];
      if (h[b * 8 + 6] > t6) t6 = h[b * 8 + 6];
      done += h[b * 8] && h[b * 8 + 6];
    }
    if (done < nblocks)
      fprintf(stderr, "ndf prof %s blocks %lld: %lld without all stamps (not launched, or ended early)\n", kname,
              (long long)nblocks, (long long)(nblocks - done));
  }
  if (h && v && done == nblocks) {
    static const char *const ph[6] = {"phase1", "barrier", "setup", "march", "flush", "tail"};
    fprintf(stderr, "ndf prof %s blocks %lld: span %.2f us, starts over %.2f us;", kname, (long long)nblocks,
            (double)(t6 - t0) * 1e-3, (double)(s0 - t0) * 1e-3);
    for (int i = 0; i < 6; i++) {
      for (int64_t b = 0; b < nblocks; b++) v[b] = h[b * 8 + i + 1] - h[b * 8 + i];
      qsort(v, (size_t)nblocks, 8, cmp_u64);
      fprintf(stderr, " %s %.2f/%.2f", ph[i], (double)v[nblocks / 2] * 1e-3, (double)v[nblocks - 1] * 1e-3);
    }
    fprintf(stderr, " (median/max us); host: call to launch %.2f us (the profiler's allocation %.2f us not counted), "
            "launch call %.2f us\n", (double)(ecc_t_launch[0] - ndf__ecc_t_entry - ecc_t_prof) * 1e-3,
            (double)ecc_t_prof * 1e-3, (double)(ecc_t_launch[1] - ecc_t_launch[0]) * 1e-3);
  }
  free(h);
  free(v);
  ndf__scratch_free(ctx, d);
}

static int rows_occupancy(ndf_ctx *ctx, CUfunction fn, unsigned dyn);

/* One cooperative launch of ndf_ecc_strip2, or with tele of ndf_ecc_strip2t (the same tasks and
 * parameters; its histogram, T + 1 rows of 32 lane columns of int, in dynamic shared memory).
 * *fallback: nothing was launched (no plan, or the grid could not be resident at once). */
static ndf_status ecc_strip2(ndf_ctx *ctx, const ndf__ecc_call *c, const ndf_array *in, ndf_array *out, int cons,
                             int tele, const double *rng, int64_t *nan_at, int *not_finite, int *fallback) {
  *fallback = 1;
  const int64_t sms = ctx->sm_count > 0 ? ctx->sm_count : 132;
  /* ecc.hb=off: block 0 writes the header; default: one more block, without tasks, does
   * (the system fence after its write to the mapped header then delays no marching block).
   * rng: a given range {lo, hi} (ndf_ecc_strip2t only, its RNG specialization; as ecc_strip3) */
  int hdrblk = !rng && ecc_tune(ctx, c, in->dtype, NDF__TUNE_ECC_HB) != NDF__TUNE_ECC_HB__OFF;
  if (rng && !tele) return NDF_OK; /* *fallback */
  CUfunction fn;
  ndf_status s =
      get_fn(ctx, c->name, tele ? "ndf_ecc_strip2t" : "ndf_ecc_strip2", in->dtype, 2, cons, rng ? 2 : 0, &fn);
  if (s != NDF_OK) return s;
  const unsigned dyn = tele ? (unsigned)((c->T + 1) * 128) : 0;
  const int64_t cap = tele ? (int64_t)rows_occupancy(ctx, fn, dyn) * sms : STRIP2_MAX_PER_SM * sms;
  strip2_plan pl;
  if (cap < 2 || !strip2_plan_make(ctx, c, in->dtype, tele ? cons : 0, tele ? 4 : 8, cap - hdrblk, &pl)) return NDF_OK;
  const int64_t grid = pl.nblocks + hdrblk;
  const int64_t T = c->T, nimg = c->nimg;
  /* the partials, 24 bytes a block (a given range: the call's NaN key in the first 8) */
  fused_mem m;
  if ((s = strip2_mem(ctx, c->name, defer_float(ctx, in), nimg, T * pl.ncopy, grid, &m)) != NDF_OK) return s;
  const int nb = c->nb;
  ndf__ecc2_params p = {0};
  FUSED_HEAD(p, in, out, &m);
  p.seqp = m.seqp;
  p.T = T;
  p.nimg = nimg;
  p.ostep = out->strides[nb];
  p.nz = c->sshape[0];
  p.nx = c->sshape[1];
  p.sz = in->strides[nb];
  p.sx = in->strides[nb + 1];
  p.nstrip = pl.nstrip;
  p.mc = pl.mc;
  p.tpi = pl.tpi;
  p.bpi = pl.bpi;
  p.rlo = rng ? rng[0] : 0.0;
  p.rhi = rng ? rng[1] : 0.0;
  const CUdeviceptr prof = strip_prof_alloc(ctx, grid);
  STRIP_TAIL(ctx, p, nb, pl.ncopy, &m, hdrblk, prof);
  FUSED_AXES(p, nb, in, out);
  s = fused_launch(ctx, c, fn, &p, in, (unsigned)grid, dyn, &m, m.seq, nan_at, not_finite, fallback);
  strip_prof_report(ctx, tele ? "ndf_ecc_strip2t" : "ndf_ecc_strip2", prof, pl.nblocks, grid);
  return s;
}

/* ---- the telescoped warp-strip kernels (ndf_ecc_strip3: 3-D, ndf_ecc_strip2t: 2-D; templates/ecc.cu) -- */
/* 3-D float32, uint8 and uint16 calls with thresholds over [min, max] and
 * T <= 320 make one cooperative launch of ndf_ecc_strip3 (or strip3n)
 * (cells' bins by max / min, telescoped along x: four shared-memory adds
 * per voxel and no ownership tests) unless ecc.3d=old (the rows kernel
 * or ndf_ecc_pack's fused march).  ecc.mc3: the least planes
 * per warp task (default 4); ecc.w3: columns per lane, 16 (ndf_ecc_strip3,
 * 2 blocks per SM; default) or 8 (ndf_ecc_strip3n, 3 blocks per SM).
 * 2-D calls (float32, uint8, uint16) with T <= 320 take ndf_ecc_strip2t (the same sum in 2-D on
 * ndf_ecc_strip2's tasks: two adds per pixel; ecc_strip2) unless ecc.2d=strip2 or old.
 * ecc.fence and ecc.bin as strip2.  docs/adr/0009, "Telescoped cells". */
static int use_strip3(ndf_ctx *ctx, const ndf__ecc_call *c, ndf_dtype dt) {
  if (ecc_tune(ctx, c, dt, NDF__TUNE_ECC_3D) == NDF__TUNE_ECC_3D__OLD) return 0;
  /* uint8 / uint16 too: with the exact integer binner and vector loads the telescoped kernel takes
   * less than half the time of ndf_ecc_rows, the next kernel in line for integers (H200, T = 256:
   * uint8 and uint16 256^3, uint8 512^3) */
  return 1;
}
/* 2-D: ndf_ecc_strip2t unless ecc.2d=strip2 (or =old: ndf_ecc_pack).  On the H200 (float32,
 * T = 256) it takes 16% less time than ndf_ecc_strip2 at 8192^2 and the same at 1024^2 and
 * 64 x 256^2. */
static int use_strip2t(ndf_ctx *ctx, const ndf__ecc_call *c, ndf_dtype dt) {
  return ecc_tune(ctx, c, dt, NDF__TUNE_ECC_2D) == NDF__TUNE_ECC_2D__AUTO;
}
/* W 16 by default: on the H200 (float32, T = 256) it takes 10% less time than W 8 at 256^3 and 17%
 * less at 512^3, 9% more at 128^3. */
static int strip3_w(ndf_ctx *ctx, const ndf__ecc_call *c, ndf_dtype dt) {
  return ecc_tune(ctx, c, dt, NDF__TUNE_ECC_W3) == NDF__TUNE_ECC_W3__8 ? 8 : 16;
}

/* the histogram ((T + 1) x 128 bytes) and the kernels' 6.3 KiB of static shared memory within the
 * default 48 KiB: no opt-in attribute.  Larger T takes the other paths. */
#define TELE_MAX_T 320

typedef struct strip3_plan {
  int64_t ntx, nty;
  strip_chunks ch;
} strip3_plan;

/* Tiles of w columns x 31 rows over the planes; each warp an equal share of the (tile, plane) units, at
 * least ecc.mc3 (default 4) where the grid allows, 8 warps per block (strip_units_make).
 * T-construction: rows and planes from -1.  0: no plan (the caller takes the other kernels). */
static int strip3_plan_make(ndf_ctx *ctx, const ndf__ecc_call *c, ndf_dtype dt, int cons, int w, int64_t cap,
                            strip3_plan *pl) {
  const int64_t nz = c->sshape[0], ny = c->sshape[1], nx = c->sshape[2], nimg = c->nimg;
  if (nz <= 0 || ny <= 0 || nx <= 0 || nimg <= 0 || nz > 0x7fffff00 || ny > 0x7fffff00 || nx > 0x7fffff00) return 0;
  const int mc3 = ecc_tune(ctx, c, dt, NDF__TUNE_ECC_MC3);
  pl->ntx = (nx + w - 1) / w;
  pl->nty = (ny + cons + 30) / 31;
  return strip_units_make(pl->ntx * pl->nty, nz + cons, mc3, nimg, cap, &pl->ch);
}

/* One cooperative launch of ndf_ecc_strip3 (or strip3n, strip3s).  rng: NULL (thresholds over [min, max]), or
 * the given range {lo, hi} (lo < hi, finite): no phase 1, no split, no header block -- the call's
 * last block writes the header, so a waiting call waits for the whole kernel.  *fallback: nothing was launched
 * (no plan, or the grid could not be resident at once). */
static ndf_status ecc_strip3(ndf_ctx *ctx, const ndf__ecc_call *c, const ndf_array *in, ndf_array *out, int cons,
                             const double *rng, int64_t *nan_at, int *not_finite, int *fallback) {
  *fallback = 1;
  const int64_t sms = ctx->sm_count > 0 ? ctx->sm_count : 132;
  int hdrblk = !rng && ecc_tune(ctx, c, in->dtype, NDF__TUNE_ECC_HB) != NDF__TUNE_ECC_HB__OFF;
  const int w = strip3_w(ctx, c, in->dtype);
  /* the histogram: T + 1 rows of 32 lane columns of int; staged planes (ndf_ecc_strip3s: float32, block
   * columns of 128 whole columns, 16 per lane, sm_80 on, two blocks per SM): four buffers of 32 rows of 132
   * floats.  Staged from 2^26 voxels a call: the staged march gains only where the planes come from DRAM
   * (H200, against ndf_ecc_strip3: 9% less time at 512^3, about 10% more at 256^3 and 128^3);
   * ecc.stg=on: wherever it applies, =off or ecc.bcol=off: never.  Its phase 1 (ndf_ecc3_params.p1 =
   * 2, the split): a launch of ndf_ecc_strip3 first, phase 1 only, with that kernel's small shared memory
   * (a large L1) -- faster than phase 1 inside the staged kernel, by bulk copies (2%) or by ndf_ecc_strip3's
   * loads (15%, 512^3).  A given range (no phase 1, no split): staged from 2^21 voxels (128^3, the smallest
   * size measured), where the staged march takes 7-14% less time from 128^3 to 512^3. */
  const int stge = ecc_tune(ctx, c, in->dtype, NDF__TUNE_ECC_STG);
  const int bcol_ok = ecc_tune(ctx, c, in->dtype, NDF__TUNE_ECC_BCOL) != NDF__TUNE_ECC_BCOL__OFF;
  const int64_t stg_min = (int64_t)1 << (rng ? 21 : 26);
  int stg = bcol_ok && w == 16 && in->dtype == NDF_FLOAT32 && c->sshape[2] % 128 == 0 && ctx->cc_major >= 8 &&
            (stge == NDF__TUNE_ECC_STG__ON || (stge == NDF__TUNE_ECC_STG__AUTO && c->nimg * c->npix >= stg_min));
  const int64_t T = c->T, nimg = c->nimg;
  const char *kname;
  CUfunction fn;
  unsigned dyn;
  int64_t cap;
  ndf_status s;
  if (stg && !rng) { /* the staged kernel and its split phase 1 (ndf_ecc_strip3) */
    const ecc_want ws[2] = {{"ndf_ecc_strip3s", in->dtype, 3, cons, 0}, {"ndf_ecc_strip3", in->dtype, 3, cons, 0}};
    if ((s = ecc_prefetch(ctx, c->name, ws, 2, NULL, 0)) != NDF_OK) return s;
  }
  for (;;) {
    kname = stg ? "ndf_ecc_strip3s" : w == 16 ? "ndf_ecc_strip3" : "ndf_ecc_strip3n";
    /* a given range: the RNG specialization (its own module; the [min, max] kernels keep their code) */
    if ((s = get_fn(ctx, c->name, kname, in->dtype, 3, cons, rng ? 2 : 0, &fn)) != NDF_OK) return s;
    dyn = (unsigned)((T + 1) * 128 + (stg ? 4 * 32 * 132 * 4 : 0));
    /* past 48 KiB the function needs the attribute, set on every call (as the rows kernel's): without it
     * the staged launch is refused and the call falls back to ndf_ecc_strip3 */
    const int attr_ok = dyn <= 49152 || ndf__cu(NULL)->cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                                        (int)dyn) == CUDA_SUCCESS;
    if (!attr_ok && !stg) return NDF_OK; /* *fallback */
    const int occ = attr_ok ? rows_occupancy(ctx, fn, dyn) : 0;
    cap = (int64_t)occ * sms;
    if (!stg || occ >= 2) break;
    stg = 0; /* many thresholds (T > ~300 at 228 KiB per SM): the staged planes' block would be alone on its SM */
  }
  const int64_t p1 = stg && !rng ? 2 : 1; /* the staged call's phase 1: the split */
  CUfunction pre = NULL; /* the split phase 1's kernel (same module) */
  if (p1 == 2 && (s = get_fn(ctx, c->name, "ndf_ecc_strip3", in->dtype, 3, cons, 0, &pre)) != NDF_OK) return s;
  strip3_plan pl;
  if (cap < 2 || !strip3_plan_make(ctx, c, in->dtype, cons, w, cap - hdrblk, &pl)) return NDF_OK;
  const int64_t grid = pl.ch.nblocks + hdrblk;
  /* the partials, 24 bytes a block (a given range: the call's NaN key in the first 8) */
  fused_mem m;
  if ((s = strip2_mem(ctx, c->name, defer_float(ctx, in), nimg, T * pl.ch.ncopy, grid, &m)) != NDF_OK) return s;
  const int nb = c->nb;
  ndf__ecc3_params p = {0};
  FUSED_HEAD(p, in, out, &m);
  p.seqp = m.seqp;
  FUSED_GEOM(p, c, in, out);
  p.ntx = pl.ntx;
  p.nty = pl.nty;
  p.tpi = pl.ch.tpi;
  p.bpi = pl.ch.bpi;
  /* block columns (ndf_ecc3_params.bcol) where the tiles across come in eights (2: and staged planes) */
  p.bcol = stg ? 2 : pl.ntx % 8 == 0 && bcol_ok;
  p.p1 = p1;
  p.rlo = rng ? rng[0] : 0.0;
  p.rhi = rng ? rng[1] : 0.0;
  const CUdeviceptr prof = strip_prof_alloc(ctx, grid);
  STRIP_TAIL(ctx, p, nb, pl.ch.ncopy, &m, hdrblk, prof);
  FUSED_AXES(p, nb, in, out);
  s = fused_launch_pre(ctx, c, pre, fn, &p, in, (unsigned)grid, dyn, &m, m.seq, nan_at, not_finite, fallback);
  strip_prof_report(ctx, kname, prof, pl.ch.nblocks, grid);
  return s;
}

/* ---- the bit-sliced rows kernel (ndf_ecc_rows, templates/ecc_rows.cu) --------------------------- */
/* ecc.rows: 0 off (ndf_ecc_pack's fused march); 1 .. 4: ndf_ecc_rows with PF = mode - 1,
 * i.e. 1: the next plane loaded after each step (4 blocks per SM), 2: loaded a step ahead (3
 * blocks per SM), 3 / 4: the same with an add to the shared histogram for every voxel (no
 * branch; c = 0 adds 0).  5 / 6 = PF 4 / 6: the next plane's segment staged in shared memory by
 * cp.async over the step (3 blocks per SM), c != 0 only / every voxel added; 7 = PF 8: mode 1 at
 * 3 blocks per SM (80 registers, fewer spills); 8 = PF 12: mode 5 at 4 blocks per SM (64
 * registers; float32 inputs stay at 3 by the shared memory); 9 = PF 10: mode 7 with every voxel
 * added.  It applies to 3-D inputs with thresholds over [min, max] and T <= 256 (every bin in
 * 0..255) that ndf_ecc_strip3 did not take (uint8 / uint16 reach it only with ecc.3d=old).
 * Unset: mode 1 for uint8 / uint16 (about 20% less time than the march at 256^3 on the H200, and
 * no slower than modes 5 or 8); float32 takes mode 7 from 256^3 (2^24 voxels per call) on and the
 * march below: on the H200 mode 7 takes 3-7% less time than the march at 256^3 and 15% less at
 * 512^3, but 15% more at 128^3, and of modes 1, 5, 6 and 8 none beats it; float64 the march. */
static const int rows_pf[10] = {0, 0, 1, 2, 3, 4, 6, 8, 12, 10};
#define ROWS_MAX_T 256
/* The default for float32 inputs: ROWS_F32_MODE from ROWS_F32_MIN voxels per call on (0: the
 * march at every size) */
#define ROWS_F32_MODE 7
#define ROWS_F32_MIN ((int64_t)1 << 24)
static int rows_mode(ndf_ctx *ctx, const ndf__ecc_call *c, ndf_dtype dt, int64_t nvox) {
  const int v = ecc_tune(ctx, c, dt, NDF__TUNE_ECC_ROWS);
  if (v != NDF__TUNE_ECC_ROWS__AUTO) return v - NDF__TUNE_ECC_ROWS__0; /* "0".."9": the mode */
  if (dt == NDF_FLOAT32) return nvox >= ROWS_F32_MIN ? ROWS_F32_MODE : 0;
  return dt == NDF_UINT8 || dt == NDF_UINT16 ? 1 : 0;
}

/* Blocks of ndf_ecc_rows resident per SM at its shared memory (the last answer kept in the
 * context's state: the driver's query costs microseconds). */
static int rows_occupancy(ndf_ctx *ctx, CUfunction fn, unsigned dyn) {
  ecc_state *st = ecc_state_of(ctx); /* without it (out of memory): the query every time */
  int n = 0, hit = 0;
  if (st) {
    pthread_mutex_lock(&ctx->lock);
    hit = st->rows_last.fn == fn && st->rows_last.dyn == dyn;
    if (hit) n = st->rows_last.occ;
    pthread_mutex_unlock(&ctx->lock);
  }
  if (hit) return n;
  if (ndf__cu(NULL)->cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, fn, 256, dyn) != CUDA_SUCCESS) return 0;
  if (st) {
    pthread_mutex_lock(&ctx->lock);
    st->rows_last.fn = fn, st->rows_last.dyn = dyn, st->rows_last.occ = n;
    pthread_mutex_unlock(&ctx->lock);
  }
  return n;
}

/* One cooperative launch of ndf_ecc_rows: tiles of 32 rows x 128 voxels per block, the march
 * chunks as long as the resident grid needs (at least ecc.minmc planes, default 4).
 * *fallback: nothing was launched (the tiles alone exceed the resident grid, or the launch
 * was refused); the caller takes ndf_ecc_pack. */
static ndf_status ecc_rows(ndf_ctx *ctx, const ndf__ecc_call *c, const ndf_array *in, ndf_array *out, int cons,
                           int mode, int64_t *nan_at, int *not_finite, int *fallback) {
  *fallback = 1;
  ndf__kernel_req req;
  ndf__req_ecc_rows(&req, in->dtype, in->dtype == NDF_FLOAT64 ? "double" : "float", cons, rows_pf[mode]);
  CUfunction fn;
  ndf_status s = ndf__jit_get(ctx, c->name, &req, &fn);
  if (s != NDF_OK) return s;
  int64_t T = c->T, nimg = c->nimg;
  /* -inf, T thresholds, +inf (double); the float table; the float pairs; PF bit 2: then the
   * staging of 16 values per thread (inputs of at most 4 bytes), past the default 48 KiB of
   * static and dynamic shared memory with float32 (41.6 KiB static) */
  const size_t esz = ndf_dtype_size(in->dtype);
  const int stg = (rows_pf[mode] & 4) && esz <= 4;
  const unsigned dyn = (unsigned)((((size_t)T * 24 + 64 + 15) & ~(size_t)15) + (stg ? 4096 * esz : 0));
  /* every call (a context and function at reused addresses would not have it) */
  if (stg && ndf__cu(NULL)->cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)dyn) !=
                 CUDA_SUCCESS)
    return NDF_OK; /* *fallback: the march */
  const int64_t sms = ctx->sm_count > 0 ? ctx->sm_count : 132;
  const int64_t cap = (int64_t)rows_occupancy(ctx, fn, dyn) * sms;
  const int nb = c->nb;
  int64_t nz = c->sshape[0], ny = c->sshape[1], nx = c->sshape[2];
  int64_t sz = in->strides[nb], sy = in->strides[nb + 1], sx = in->strides[nb + 2];
  int64_t ntx = (nx + 127) / 128, ptiles = ntx * ((ny + 31) / 32);
  const int64_t per = nimg * ptiles;
  if (per <= 0 || per > cap) return NDF_OK;
  int64_t minmc = ecc_tune(ctx, c, in->dtype, NDF__TUNE_ECC_MINMC);
  if (minmc > nz) minmc = nz > 0 ? nz : 1;
  int64_t nch = cap / per;
  if (nch > (nz + minmc - 1) / minmc) nch = (nz + minmc - 1) / minmc;
  if (nch < 1) nch = 1;
  int64_t mc = (nz + nch - 1) / nch;
  int64_t nchunks = (nz + mc - 1) / mc;
  const int64_t grid = per * nchunks;
  if (grid > cap) return NDF_OK;
  fused_mem m;
  if ((s = fused_mem_alloc(ctx, nimg, T, grid, &m)) != NDF_OK) return s;
  ndf__ecc_rows_params p = {0};
  FUSED_HEAD(p, in, out, &m);
  p.T = T;
  p.nimg = nimg;
  p.ptiles = ptiles;
  p.ntx = ntx;
  p.nchunks = nchunks;
  p.mc = mc;
  p.nz = nz;
  p.ny = ny;
  p.nx = nx;
  p.sz = sz;
  p.sy = sy;
  p.sx = sx;
  p.ostep = out->strides[nb];
  p.nb = nb;
  FUSED_AXES(p, nb, in, out);
  return fused_launch(ctx, c, fn, &p, in, (unsigned)grid, dyn, &m, 0, nan_at, not_finite, fallback);
}

ndf_status ndf__ecc_cuda2(ndf_ctx *ctx, const ndf__ecc_call *c, const ndf_array *in, ndf_array *out,
                          int construction, const double *t, int uniform, int64_t *nan_at, int *not_finite) {
  *nan_at = -1;
  *not_finite = 0;
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  const int64_t T = c->T, nimg = c->nimg;
  const int need_range = t == NULL;
  const int isfloat = in->dtype == NDF_FLOAT32 || in->dtype == NDF_FLOAT64;
  /* fused: the last block of each image writes its curve (the header's flags
   * are final before the histogram kernel starts: a scan ran, or no NaN can
   * occur); otherwise ndf_ecc_final runs after the NaN-checking histogram */
  const int fused = need_range || !isfloat;
  CUfunction fh, ff = NULL, fsc = NULL;
  const int pack = use_pack(ctx, c, in->dtype, T), fuse = use_fuse(ctx, c, in->dtype);
  const int bmode = brick_mode(ctx, c, in->dtype);
  /* a given range (evenly spaced thresholds from t[0] = lo to t[T - 1] = hi, lo < hi): float32 calls take the
   * telescoped kernels without their phase 1 (ndf_ecc_strip2t, ndf_ecc_strip3); values and the
   * other kernels: the paths below */
  const double rng[2] = {t ? t[0] : 0.0, t ? t[T - 1] : 0.0};
  const int given = !need_range && uniform && in->dtype == NDF_FLOAT32 && isfinite(rng[0]) && isfinite(rng[1]) &&
                    rng[0] < rng[1];
  if ((need_range || given) && pack && fuse && bmode == 0 && c->nsp == 2 && in->dtype != NDF_FLOAT64 &&
      use_strip2(ctx, c, in->dtype)) {
    /* 2-D: the warp-strip kernels (before the other kernels' lookups): the telescoped one for T <= 320 */
    int fallback = 1;
    if (T <= TELE_MAX_T && use_strip2t(ctx, c, in->dtype)) {
      s = ecc_strip2(ctx, c, in, out, construction, 1, given ? rng : NULL, nan_at, not_finite, &fallback);
      if (s != NDF_OK || !fallback) return s;
    }
    if (!given) s = ecc_strip2(ctx, c, in, out, construction, 0, NULL, nan_at, not_finite, &fallback);
    if (s != NDF_OK || !fallback) return s;
  }
  if (need_range && pack && fuse && bmode != 0) {
    /* before the other kernels' lookups: a warm call needs only this one */
    int fallback = 1;
    s = ecc_brick(ctx, c, in, out, construction, bmode, nan_at, not_finite, &fallback);
    if (s != NDF_OK || !fallback) return s;
  }
  if ((need_range || given) && pack && fuse && bmode == 0 && c->nsp == 3 && in->dtype != NDF_FLOAT64 &&
      T <= TELE_MAX_T && use_strip3(ctx, c, in->dtype)) {
    /* 3-D: the telescoped warp-strip kernel */
    int fallback = 1;
    s = ecc_strip3(ctx, c, in, out, construction, given ? rng : NULL, nan_at, not_finite, &fallback);
    if (s != NDF_OK || !fallback) return s;
  }
  const int rmode = rows_mode(ctx, c, in->dtype, c->nimg * c->npix);
  if (need_range && pack && fuse && bmode == 0 && rmode != 0 && c->nsp == 3 && T <= ROWS_MAX_T) {
    int fallback = 1;
    s = ecc_rows(ctx, c, in, out, construction, rmode, nan_at, not_finite, &fallback);
    if (s != NDF_OK || !fallback) return s;
  }
  if (!fused) { /* the histogram kernel and ndf_ecc_final */
    const ecc_want ws[2] = {{pack ? "ndf_ecc_pack" : "ndf_ecc_hist", in->dtype, c->nsp, construction, 0},
                            {"ndf_ecc_final", NDF_FLOAT32, 2, 0, 0}};
    if ((s = ecc_prefetch(ctx, c->name, ws, 2, NULL, 0)) != NDF_OK) return s;
  }
  if ((s = get_fn(ctx, c->name, pack ? "ndf_ecc_pack" : "ndf_ecc_hist", in->dtype, c->nsp, construction, 0, &fh)) !=
      NDF_OK)
    return s;
  if (!fused && (s = get_fn(ctx, c->name, "ndf_ecc_final", NDF_FLOAT32, 2, 0, 0, &ff)) != NDF_OK) return s;
  hist_geom g;
  if ((s = hist_geometry(ctx, c, in, &g, pack ? 2 : 1)) != NDF_OK) return s;
  if (need_range && pack && fuse) {
    /* one cooperative launch: at most 4 blocks of 256 per SM (ndf_ecc_pack's
     * launch bounds; its shared memory is far below the SM's) */
    hist_geom gf = g;
    const int64_t cap = 4 * (int64_t)(ctx->sm_count > 0 ? ctx->sm_count : 132);
    if (fuse_geometry(&gf, nimg, cap, ecc_tune(ctx, c, in->dtype, NDF__TUNE_ECC_MINMC))) {
      int too_large = 0;
      s = ecc_fused(ctx, c, in, out, fh, &gf, nan_at, not_finite, &too_large);
      if (s != NDF_OK || !too_large) return s;
    }
  }
  /* the scan kernel only now: a fused call needs no lookup of it */
  if (need_range && (s = get_fn(ctx, c->name, "ndf_ecc_scan", in->dtype, 2, 0, 0, &fsc)) != NDF_OK) return s;
  ndf__ecc_scan_params spb;
  const unsigned sgrid = need_range ? scan_params(ctx, &spb, in, 0, 0, 0, 0, 0, 0, 0, 0, 1) : 0;
  /* scratch: header, per-image tickets, histogram (zeroed by one memset),
   * sorted thresholds, permutation, the scan's partials */
  const size_t cnt_bytes = ((size_t)nimg * 4 + 255) & ~(size_t)255, hbytes = (size_t)nimg * (size_t)T * 8;
  const size_t zbytes = HDR_BYTES + cnt_bytes + hbytes;
  CUdeviceptr base = 0;
  if ((s = ndf__scratch_alloc(ctx, zbytes + (size_t)T * 16 + (size_t)sgrid * 24, &base)) != NDF_OK) return s;
  const CUdeviceptr hdr = base, cnt = base + HDR_BYTES, hist = cnt + cnt_bytes, d_ts = hist + hbytes,
                    d_perm = d_ts + (size_t)T * 8, part = d_perm + (size_t)T * 8;
  const ndf__cu_api *cu = ndf__cu(NULL);
  double *ts = NULL;
  double lo = 0, inv_step = 0;
  int uni = 0;
  CUresult r = cu->cuMemsetD8Async(base, 0, zbytes, ctx->stream);
  if ((s = sync_error(ctx, c->name, r)) != NDF_OK) goto done;
  if (!need_range) {
    ts = malloc((size_t)T * 16); /* the sorted thresholds, then the permutation */
    if (!ts || ndf__ecc_sort_thresholds(t, T, ts, (int64_t *)(ts + T))) {
      s = ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", c->name);
      goto done;
    }
    uni = ndf__ecc_uniform_bins(ts, T, uniform, &lo, &inv_step);
    r = cu->cuMemcpyHtoDAsync(d_ts, ts, (size_t)T * 16, ctx->stream);
    if ((s = sync_error(ctx, c->name, r)) != NDF_OK) goto done;
  } else {
    scan_params(ctx, &spb, in, part, part + (size_t)sgrid * 8, part + (size_t)sgrid * 16, hdr, d_ts, d_perm, T, 1, 0);
    if ((s = ndf__ecc_scan_launch(ctx, c->name, fsc, sgrid, 256, 1, 0, &spb)) != NDF_OK) goto done;
  }
  {
    const hist_extra x = {hdr, need_range, isfloat && !need_range, fused ? cnt : 0, d_perm, out, pack};
    if ((s = hist_launch(ctx, c, in, fh, &g, 0, 0, hist, d_ts, lo, inv_step, uni, &x)) != NDF_OK) goto done;
  }
  if (!fused && (s = final_launch(ctx, c, ff, hist, d_perm, out, hdr)) != NDF_OK) goto done;
  if (isfloat) s = hdr_read(ctx, c->name, hdr, nan_at, not_finite);
done:
  ndf__scratch_free(ctx, base);
  free(ts);
  return s;
}

/* nimg x T doubles at src into the strided (batch..., T) array dst (nb batch axes). */
static ndf_status put_launch(ndf_ctx *ctx, const char *name, CUfunction fn, CUdeviceptr src, const ndf_array *dst,
                             int nb, int64_t nimg, int64_t T, CUdeviceptr hdr) {
  ndf__ecc_put_params p = {0};
  p.src = src;
  p.dst = NDF__DPTR(dst->data);
  p.nimg = nimg;
  p.T = T;
  p.step = dst->strides[nb];
  p.nb = nb;
  ndf__axes(p.bshape, nb, dst->shape);
  ndf__axes(p.bstr, nb, dst->strides);
  p.hdr = hdr;
  return ndf__ecc_put_launch(ctx, name, fn, ndf__grid(ctx, (nimg * T + 255) / 256, 8), 256, 1, 0, &p);
}

/* ---- soft ECC, float32: ndf_ecc_soft2 (templates/ecc_soft.cu) unless soft_ecc.mode=old ---------- */
/* soft_ecc.mode=old: ndf_ecc_soft (templates/ecc.cu) for float32 too; =direct:
 * ndf_ecc_soft2 with one exp per (voxel, threshold) (PROD = 0) always;
 * =fused: 2-D inputs skip the contribution pass (FUSED = 1: c and f from the
 * input in ndf_ecc_soft2).  Default: after the contribution pass (FUSED = 0),
 * which is faster on the H200 (64 x 256^2, T = 64: 11% less time than the
 * fused form). */
static int soft2_mode(ndf_ctx *ctx) {
  const int v = ndf__tune(ctx, NDF__TUNE_SOFT_ECC_MODE, NULL);
  return v == NDF__TUNE_SOFT_ECC_MODE__OLD ? 0 : v == NDF__TUNE_SOFT_ECC_MODE__DIRECT ? 2 : 1;
}
static int soft2_fused(ndf_ctx *ctx) {
  return ndf__tune(ctx, NDF__TUNE_SOFT_ECC_MODE, NULL) == NDF__TUNE_SOFT_ECC_MODE__FUSED;
}

#define SOFT2_KT 8
#define SOFT2_RMAX 32.0 /* PROD: kappa |t - m| <= 32 for every threshold of a group */
typedef struct soft2_slot {
  float a, b;
  int32_t k, pad;
} soft2_slot;
typedef struct soft2_plan {
  int lg, tchunks, prod;
  int64_t nslots, ngroups;
  float kh, kl;
  soft2_slot *slots; /* nslots, then ngroups float centres (one allocation) */
  size_t bytes;
} soft2_plan;

/* The thresholds sorted into slots: lg lanes of KT per chunk (lg * KT <= 64),
 * each group of KT its float centre m; PROD when kappa |t - m| <= RMAX for
 * every threshold (A = 2^(-kappa (t - m)) then lies in [2^-32, 2^32]). */
static int soft2_make_plan(const double *t, int64_t T, double lambda, int force_direct, soft2_plan *pl) {
  memset(pl, 0, sizeof *pl);
  const int64_t ng0 = (T + SOFT2_KT - 1) / SOFT2_KT;
  int lg = 1;
  while (lg < 8 && lg < ng0) lg <<= 1;
  pl->lg = lg;
  pl->tchunks = (int)((T + lg * SOFT2_KT - 1) / (lg * SOFT2_KT));
  pl->nslots = (int64_t)pl->tchunks * lg * SOFT2_KT;
  pl->ngroups = pl->nslots / SOFT2_KT;
  const double kappa = lambda * 1.4426950408889634; /* lambda log2(e) */
  pl->kh = (float)kappa;
  pl->kl = (float)(kappa - (double)pl->kh);
  pl->bytes = (size_t)pl->nslots * sizeof(soft2_slot) + (size_t)pl->ngroups * sizeof(float);
  /* sorted by (t, k), the order of the exact curve (ndf__ecc_sort_thresholds) */
  int64_t *idx = malloc((size_t)(T > 0 ? T : 1) * sizeof *idx);
  pl->slots = malloc(pl->bytes);
  if (!idx || !pl->slots || ndf__ecc_sort_thresholds(t, T, NULL, idx)) {
    free(idx);
    free(pl->slots);
    pl->slots = NULL;
    return -1;
  }
  float *centre = (float *)(pl->slots + pl->nslots);
  int prod = !force_direct && isfinite(pl->kh) && pl->kh > 0;
  for (int64_t g = 0; g < pl->ngroups; g++) {
    const int64_t j0 = g * SOFT2_KT, j1 = j0 + SOFT2_KT < T ? j0 + SOFT2_KT : T;
    float m = 0;
    if (j0 < T) {
      const double lo = t[idx[j0]], hi = t[idx[j1 - 1]];
      m = (float)(lo / 2 + hi / 2);
      if (!isfinite(m) || kappa * fmax(fabs(lo - (double)m), fabs(hi - (double)m)) > SOFT2_RMAX) prod = 0;
    }
    centre[g] = m;
  }
  pl->prod = prod;
  for (int64_t j = 0; j < pl->nslots; j++) {
    soft2_slot *s = &pl->slots[j];
    s->pad = 0;
    if (j >= T) { /* padding: s = 1 and q = 0 either way; g = 0, never written */
      s->a = prod ? 0.0f : INFINITY;
      s->b = 0;
      s->k = -1;
      continue;
    }
    const double tk = t[idx[j]];
    s->k = (int32_t)idx[j];
    if (prod) {
      s->a = (float)exp2(-kappa * (tk - (double)centre[j / SOFT2_KT]));
      s->b = 0;
    } else {
      s->a = (float)tk;
      s->b = isfinite(s->a) ? (float)(tk - (double)s->a) : 0.0f;
    }
  }
  free(idx);
  return 0;
}

/* The fields that ndf_ecc_soft's and ndf_ecc_soft2's structs name alike (in ndf__soft_ecc_cuda:
 * mode 0 sums into acc, mode 1 takes grad_output arr and writes grad_input gin and, with gthr,
 * the thresholds' gradient into acc). */
#define SOFT_COMMON(p)                                                         \
  do {                                                                         \
    (p).g = mode == 1 ? NDF__DPTR(arr->data) : 0;                              \
    (p).acc = mode == 0 ? acc : 0;                                             \
    (p).gt = mode == 1 && gthr ? acc : 0;                                      \
    (p).gin = mode == 1 && gin ? NDF__DPTR(gin->data) : 0;                     \
    (p).lambda = lambda;                                                       \
    (p).nimg = nimg;                                                           \
    (p).npix = npix;                                                           \
    (p).T = T;                                                                 \
    (p).nchunk = nchunk;                                                       \
    (p).gstep = arr->strides[nb];                                              \
    (p).ny = c->nsp == 3 ? c->sshape[1] : 1;                                   \
    (p).nx = c->sshape[c->nsp - 1];                                            \
    if (gin) {                                                                 \
      (p).gsz = gin->strides[nb];                                              \
      (p).gsy = c->nsp == 3 ? gin->strides[nb + 1] : 0;                        \
      (p).gsx = gin->strides[nb + c->nsp - 1];                                 \
    }                                                                          \
    (p).nb = nb;                                                               \
    (p).mode = mode;                                                           \
    ndf__axes((p).bshape, nb, in->shape);                                      \
    ndf__axes((p).gostr, nb, arr->strides);                                    \
    if (gin) ndf__axes((p).gistr, nb, gin->strides);                           \
    (p).hdr = hdr;                                                             \
  } while (0)

ndf_status ndf__soft_ecc_cuda(ndf_ctx *ctx, const ndf__ecc_call *c, const ndf_array *in, const double *t,
                              ndf_array *arr, ndf_array *gin, ndf_array *gthr, int construction, double lambda,
                              int mode, int64_t *nan_at) {
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  const int64_t T = c->T, nimg = c->nimg, npix = c->npix;
  const int nb = c->nb;
  const size_t vsz = in->dtype == NDF_FLOAT64 ? 8 : 4;
  CUfunction fh = NULL, fs, fp, fsc = NULL;
  /* float32: ndf_ecc_soft2 (thresholds sorted into slots on the host) unless
   * soft_ecc.mode=old; fused (2-D, new path, soft_ecc.mode=fused): no contribution pass, and a
   * backward with grad_input flags NaN in the header first (ndf_ecc_soft2_nan,
   * or ndf_ecc_scan for other layouts) */
  const int s2mode = in->dtype == NDF_FLOAT32 && T > 0 && T <= 0x7fffffff ? soft2_mode(ctx) : 0;
  const int fused = s2mode && c->nsp == 2 && nan_at && soft2_fused(ctx);
  /* the fused backward's NaN pass: ndf_ecc_soft2_nan (C-contiguous) or ndf_ecc_scan */
  int contig = 1;
  for (int64_t a = in->ndim - 1, e = 1; a >= 0; a--) {
    if (in->shape[a] != 1 && in->strides[a] != e) contig = 0;
    e *= in->shape[a];
  }
  const int nanpass = fused && mode == 1 && gin; /* without grad_input the put kernels' gate suffices */
  if (nanpass && !contig && (s = get_fn(ctx, c->name, "ndf_ecc_scan", in->dtype, 2, 0, 0, &fsc)) != NDF_OK)
    return s;
  CUfunction fnan = NULL;
  soft2_plan pl = {0};
  if (s2mode && soft2_make_plan(t, T, lambda, s2mode == 2, &pl) != 0)
    return ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", c->name);
  {
    /* the call's kernels at once (a first call compiles them concurrently) */
    ecc_want ws[3] = {{"ndf_ecc_put", NDF_FLOAT32, 2, 0, 0}};
    int nw = 1, nx = 0;
    if (!fused) ws[nw++] = (ecc_want){"ndf_ecc_hist", in->dtype, c->nsp, construction, 1};
    if (!s2mode) ws[nw++] = (ecc_want){"ndf_ecc_soft", in->dtype, 2, 0, 1};
    ndf__kernel_req x[2];
    const ndf__kernel_req *xp[2] = {&x[0], &x[1]};
    if (s2mode) ndf__req_ecc_soft(&x[nx++], "ndf_ecc_soft2", pl.prod, fused, fused ? construction : 0);
    if (s2mode && nanpass && contig) ndf__req_ecc_soft(&x[nx++], "ndf_ecc_soft2_nan", pl.prod, fused, construction);
    s = ecc_prefetch(ctx, c->name, ws, nw, xp, nx);
  }
  if (s == NDF_OK && !fused) s = get_fn(ctx, c->name, "ndf_ecc_hist", in->dtype, c->nsp, construction, 1, &fh);
  if (s == NDF_OK && s2mode) {
    ndf__kernel_req req;
    ndf__req_ecc_soft(&req, "ndf_ecc_soft2", pl.prod, fused, fused ? construction : 0);
    s = ndf__jit_get(ctx, c->name, &req, &fs);
    if (s == NDF_OK && nanpass && contig) {
      ndf__req_ecc_soft(&req, "ndf_ecc_soft2_nan", pl.prod, fused, construction);
      s = ndf__jit_get(ctx, c->name, &req, &fnan);
    }
  } else if (s == NDF_OK) {
    s = get_fn(ctx, c->name, "ndf_ecc_soft", in->dtype, 2, 0, 1, &fs);
  }
  if (s == NDF_OK) s = get_fn(ctx, c->name, "ndf_ecc_put", NDF_FLOAT32, 2, 0, 0, &fp);
  hist_geom g;
  if (s == NDF_OK && npix > 0 && !fused) s = hist_geometry(ctx, c, in, &g, 0);
  const int64_t chunk = s2mode ? 2048 : 1024, nchunk = (npix + chunk - 1) / chunk;
  if (s == NDF_OK && nimg * nchunk > 0x7fffffff)
    s = ndf__error(ctx, NDF_ENOTSUP, "%s: the input is too large for one launch", c->name);
  if (s != NDF_OK) {
    free(pl.slots);
    return s;
  }
  CUdeviceptr scratch = 0;
  /* scratch: accumulators (nimg x T or T doubles), thresholds (soft2: the slots
   * and centres), f per voxel, c per voxel */
  const size_t acc_bytes = ((size_t)(mode == 0 ? nimg : 1) * (size_t)T * 8 + 255) & ~(size_t)255;
  const size_t t_bytes = ((s2mode ? pl.bytes : (size_t)T * 8) + 255) & ~(size_t)255;
  /* fused: no f and c per voxel; the backward's scan partials (24 bytes per block) instead */
  ndf__ecc_scan_params spb;
  const unsigned sgrid = fsc && npix > 0 ? scan_params(ctx, &spb, in, 0, 0, 0, 0, 0, 0, 0, 0, 1) : 0;
  const size_t f_bytes = fused ? ((size_t)sgrid * 24 + 255) & ~(size_t)255
                               : ((size_t)nimg * (size_t)npix * vsz + 255) & ~(size_t)255;
  const size_t c_bytes = fused ? 0 : (size_t)nimg * (size_t)npix;
  /* new path (nan_at given): a header first, zeroed with the accumulators; the
   * contribution pass flags NaN there, the later kernels write nothing then,
   * and the header comes back once at the end (no scan, no readback before) */
  const size_t hdr_bytes = nan_at ? HDR_BYTES : 0;
  if (nan_at) *nan_at = -1;
  if ((s = ndf__scratch_alloc(ctx, hdr_bytes + acc_bytes + t_bytes + f_bytes + c_bytes, &scratch)) != NDF_OK) {
    free(pl.slots);
    return s;
  }
  const CUdeviceptr hdr = nan_at ? scratch : 0, acc = scratch + hdr_bytes, d_ts = acc + acc_bytes,
                    fbuf = d_ts + t_bytes, cbuf = fbuf + f_bytes;
  CUresult r = ndf__cu(NULL)->cuMemsetD8Async(scratch, 0, hdr_bytes + acc_bytes, ctx->stream);
  if (r == CUDA_SUCCESS)
    r = ndf__cu(NULL)->cuMemcpyHtoDAsync(d_ts, s2mode ? (const void *)pl.slots : (const void *)t,
                                         s2mode ? pl.bytes : (size_t)T * 8, ctx->stream);
  free(pl.slots); /* pageable: the copy has consumed it when cuMemcpyHtoDAsync returns */
  s = sync_error(ctx, c->name, r);
  if (s == NDF_OK && npix > 0 && !fused) {
    const hist_extra x = {hdr, 0, hdr != 0, 0, 0, NULL, 0};
    s = hist_launch(ctx, c, in, fh, &g, cbuf, fbuf, 0, 0, 0, 0, 0, &x);
  }
  if (s == NDF_OK && npix > 0 && fsc) { /* fused backward: the NaN flag before any grad_input write */
    scan_params(ctx, &spb, in, fbuf, fbuf + (size_t)sgrid * 8, fbuf + (size_t)sgrid * 16, hdr, 0, 0, 0, 0, 0);
    s = ndf__ecc_scan_launch(ctx, c->name, fsc, sgrid, 256, 1, 0, &spb);
  }
  if (s == NDF_OK && npix > 0 && fnan) {
    ndf__ecc_soft2_nan_params np = {0};
    const int64_t n = ndf_array_size(in);
    np.in = NDF__DPTR(in->data);
    np.n = n;
    np.hdr = hdr;
    s = ndf__ecc_soft2_nan_launch(ctx, c->name, fnan, ndf__grid(ctx, (n + 4095) / 4096, 8), 256, 1, 0, &np);
  }
  if (s == NDF_OK && npix > 0 && nimg > 0 && s2mode) {
    ndf__ecc_soft2_params p = {0};
    p.cbuf = fused ? 0 : cbuf;
    p.fbuf = fused ? 0 : fbuf;
    p.slots = d_ts;
    p.centre = d_ts + (size_t)pl.nslots * sizeof(soft2_slot);
    SOFT_COMMON(p);
    p.kh = pl.kh;
    p.kl = pl.kl;
    p.lg = pl.lg;
    p.tchunks = pl.tchunks;
    if (fused) {
      p.in = NDF__DPTR(in->data);
      p.isy = in->strides[nb];
      p.isx = in->strides[nb + 1];
    }
    p.nrow = c->sshape[0];
    ndf__axes(p.ibstr, nb, in->strides);
    s = ndf__ecc_soft2_launch(ctx, c->name, fs, (unsigned)(nimg * nchunk), 256, 1, 0, &p);
  } else if (s == NDF_OK && npix > 0 && nimg > 0) {
    ndf__ecc_soft_params p = {0};
    p.cbuf = cbuf;
    p.fbuf = fbuf;
    p.ts = d_ts;
    SOFT_COMMON(p);
    s = ndf__ecc_soft_launch(ctx, c->name, fs, (unsigned)(nimg * nchunk), 256, 1, 0, &p);
  }
  if (s == NDF_OK && mode == 0 && nimg > 0) s = put_launch(ctx, c->name, fp, acc, arr, nb, nimg, T, hdr);
  if (s == NDF_OK && mode == 1 && gthr) s = put_launch(ctx, c->name, fp, acc, gthr, 0, 1, T, hdr);
  if (s == NDF_OK && nan_at && npix > 0 && nimg > 0 && (in->dtype == NDF_FLOAT32 || in->dtype == NDF_FLOAT64))
    s = hdr_read(ctx, c->name, hdr, nan_at, NULL);
  ndf__scratch_free(ctx, scratch);
  return s;
}
