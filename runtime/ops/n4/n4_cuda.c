/*
 * n4/n4_cuda.c -- the CUDA backend of N4 bias-field correction
 * (templates/n4.cu).  It runs the CPU backend's algorithm (n4.c) step for
 * step: the shrunk image, the residual, its histogram, the fit's numerators,
 * the axis-by-axis contractions and expansions of the B-spline lattice and
 * the convergence sums on the device; the histogram deconvolution (a few
 * hundred bins), the lattice refinement between levels (a few thousand
 * points) and the per-axis B-spline tables on the host.
 *
 * Each iteration synchronizes three times: for the residual's range (the
 * histogram's bins), for the histogram (the deconvolution) and for the
 * convergence sums (whether to go on).  Block partial results are combined
 * on the host in block order, so a run is reproducible on one device.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jit.h"
#include "kernel_params.generated.h"
#include "n4/n4.h"

enum { K_LOAD, K_RESID, K_HIST, K_NUMER, K_CONTRACT, K_EXPAND, K_UPDATE, K_CONV, K_APPLY, K_COUNT };
static const char *KNAMES[K_COUNT] = {"ndf_n4_load",   "ndf_n4_resid",  "ndf_n4_hist",
                                      "ndf_n4_numer",  "ndf_n4_contract", "ndf_n4_expand",
                                      "ndf_n4_update", "ndf_n4_conv",   "ndf_n4_apply"};

/* Slots a kernel does not read get one fixed value, so that it compiles once for them. */
static ndf_status kernels(ndf_ctx *ctx, const char *name, ndf_dtype t, ndf_dtype w, ndf_dtype out, ndf_dtype lb,
                          CUfunction *fn) {
  ndf__kernel_req req[K_COUNT];
  const ndf__kernel_req *rp[K_COUNT];
  const char *tc = ndf__dtype_ctype(t), *wc = w == NDF_FLOAT64 ? "double" : "float";
  const char *oc = out == NDF_FLOAT64 ? "double" : "float", *lc = lb == NDF_FLOAT64 ? "double" : "float";
  for (int k = 0; k < K_COUNT; k++) {
    const int reads_t = k == K_LOAD || k == K_APPLY;
    ndf__req_n4(&req[k], KNAMES[k], reads_t ? tc : "double", k == K_LOAD ? wc : "float", k == K_APPLY ? oc : "float",
                k == K_APPLY ? lc : "float");
    rp[k] = &req[k];
  }
  ndf_status s = ndf__jit_resolve_many(ctx, name, rp, K_COUNT, NULL, fn);
  for (int k = 0; k < K_COUNT; k++) ndf__req_free(&req[k]);
  return s;
}

/* The device memory of a call: one scratch block cut into 256-byte aligned parts. */
typedef struct dmem {
  CUdeviceptr base;
  size_t used;
} dmem;

static size_t rnd(size_t bytes) { return (bytes + 255) & ~(size_t)255; }

static CUdeviceptr part(dmem *m, size_t bytes) {
  const CUdeviceptr p = m->base + m->used;
  m->used += rnd(bytes);
  return p;
}

/* One grid's tables on the device (ndf__n4_axis per axis). */
typedef struct dtabs {
  CUdeviceptr span[NDF_MAX_SPATIAL], first[NDF_MAX_SPATIAL], last[NDF_MAX_SPATIAL];
  CUdeviceptr w[NDF_MAX_SPATIAL], w2[NDF_MAX_SPATIAL], w3[NDF_MAX_SPATIAL];
  CUdeviceptr sq;
  int64_t sqoff[NDF_MAX_SPATIAL];
} dtabs;

typedef struct run {
  ndf_ctx *ctx;
  const char *name;
  const ndf__cu_api *cu;
  CUfunction fn[K_COUNT];
  int nd, P;
  unsigned grid;
  CUdeviceptr t0, t1;
} run;

static ndf_status cuerr(run *R, CUresult r) { return r == CUDA_SUCCESS ? NDF_OK : ndf__cuda_error(R->ctx, R->name, r); }

static ndf_status upload(run *R, CUdeviceptr dst, const void *src, size_t bytes) {
  return bytes ? cuerr(R, R->cu->cuMemcpyHtoDAsync(dst, src, bytes, R->ctx->stream)) : NDF_OK;
}

static ndf_status download(run *R, void *dst, CUdeviceptr src, size_t bytes) {
  ndf_status s = cuerr(R, R->cu->cuMemcpyDtoHAsync(dst, src, bytes, R->ctx->stream));
  return s == NDF_OK ? cuerr(R, R->cu->cuStreamSynchronize(R->ctx->stream)) : s;
}

/* The tables of ax[0..nd) into the device region at *m (sized by tab_bytes); synchronizes,
 * so the host tables may go after it. */
static size_t tab_bytes(int nd, const int64_t *n, const int64_t *mm, int P) {
  size_t b = 0, sq = 0;
  for (int d = 0; d < nd; d++) {
    const size_t nn = (size_t)n[d], m = (size_t)mm[d];
    b += rnd(nn * 4) + 2 * rnd(m * 4) + 3 * rnd(nn * P * 8);
    sq += nn * 8;
  }
  return b + rnd(sq);
}

static ndf_status put_tabs(run *R, CUdeviceptr at, const ndf__n4_axis *ax, dtabs *t) {
  dmem m = {at, 0};
  ndf_status s = NDF_OK;
  int64_t sqn = 0;
  for (int d = 0; d < R->nd && s == NDF_OK; d++) {
    const size_t n = (size_t)ax[d].n, mm = (size_t)ax[d].m, nw = n * (size_t)R->P * 8;
    t->span[d] = part(&m, n * 4);
    t->first[d] = part(&m, mm * 4);
    t->last[d] = part(&m, mm * 4);
    t->w[d] = part(&m, nw);
    t->w2[d] = part(&m, nw);
    t->w3[d] = part(&m, nw);
    s = upload(R, t->span[d], ax[d].span, n * 4);
    if (s == NDF_OK) s = upload(R, t->first[d], ax[d].first, mm * 4);
    if (s == NDF_OK) s = upload(R, t->last[d], ax[d].last, mm * 4);
    if (s == NDF_OK) s = upload(R, t->w[d], ax[d].w, nw);
    if (s == NDF_OK) s = upload(R, t->w2[d], ax[d].w2, nw);
    if (s == NDF_OK) s = upload(R, t->w3[d], ax[d].w3, nw);
    t->sqoff[d] = sqn;
    sqn += ax[d].n;
  }
  t->sq = part(&m, (size_t)sqn * 8);
  for (int d = 0; d < R->nd && s == NDF_OK; d++) s = upload(R, t->sq + (CUdeviceptr)t->sqoff[d] * 8, ax[d].sq, (size_t)ax[d].n * 8);
  if (s == NDF_OK) s = cuerr(R, R->cu->cuStreamSynchronize(R->ctx->stream));
  return s;
}

static ndf_status pass(run *R, int expand, CUdeviceptr in, CUdeviceptr out, int64_t A, int64_t B, const dtabs *t,
                       int d, CUdeviceptr w, const ndf__n4_axis *ax) {
  ndf__n4_pass_params p = {.in = in, .out = out, .span = t->span[d], .first = t->first[d], .last = t->last[d],
                           .w = w, .A = A, .n = ax[d].n, .m = ax[d].m, .B = B, .P = R->P};
  const int64_t total = A * B * (expand ? ax[d].n : ax[d].m);
  const unsigned grid = ndf__grid(R->ctx, (total + 255) / 256, 16);
  return ndf__n4_pass_launch(R->ctx, R->name, R->fn[expand ? K_EXPAND : K_CONTRACT], grid, 256, 1, 0, &p);
}

/* The grid contracted to the lattice, axis 0 first (the CPU's order). */
static ndf_status fit(run *R, CUdeviceptr grid, CUdeviceptr lat, const ndf__n4_axis *ax, const dtabs *t, int power) {
  int64_t cur[NDF_MAX_SPATIAL];
  for (int d = 0; d < R->nd; d++) cur[d] = ax[d].n;
  CUdeviceptr src = grid;
  ndf_status s = NDF_OK;
  for (int d = 0; d < R->nd && s == NDF_OK; d++) {
    int64_t A = 1, B = 1;
    for (int e = 0; e < d; e++) A *= cur[e];
    for (int e = d + 1; e < R->nd; e++) B *= cur[e];
    const CUdeviceptr dst = d == R->nd - 1 ? lat : (d % 2 ? R->t1 : R->t0);
    s = pass(R, 0, src, dst, A, B, t, d, power == 3 ? t->w3[d] : t->w2[d], ax);
    cur[d] = ax[d].m;
    src = dst;
  }
  return s;
}

/* The lattice expanded to the grid, last axis first. */
static ndf_status eval(run *R, CUdeviceptr lat, CUdeviceptr grid, const ndf__n4_axis *ax, const dtabs *t) {
  int64_t cur[NDF_MAX_SPATIAL];
  for (int d = 0; d < R->nd; d++) cur[d] = ax[d].m;
  CUdeviceptr src = lat;
  ndf_status s = NDF_OK;
  for (int d = R->nd - 1; d >= 0 && s == NDF_OK; d--) {
    int64_t A = 1, B = 1;
    for (int e = 0; e < d; e++) A *= cur[e];
    for (int e = d + 1; e < R->nd; e++) B *= cur[e];
    const CUdeviceptr dst = d == 0 ? grid : (d % 2 ? R->t1 : R->t0);
    s = pass(R, 1, src, dst, A, B, t, d, t->w[d], ax);
    cur[d] = ax[d].n;
    src = dst;
  }
  return s;
}

static int64_t pass_scratch(int nd, const int64_t *g, const int64_t *m) {
  int64_t best = 1;
  for (int d = 0; d <= nd; d++) {
    int64_t v = 1;
    for (int e = 0; e < nd; e++) v *= e < d ? m[e] : g[e];
    if (v > best) best = v;
  }
  return best;
}

ndf_status ndf__n4_cuda(ndf_ctx *ctx, const char *name, const ndf_array *input, const ndf_array *mask,
                        const ndf_array *weight, ndf_array *output, ndf_array *logb, const ndf__n4_plan *p,
                        ndf_n4_result *res) {
  run R = {.ctx = ctx, .name = name, .cu = ndf__cu(NULL), .nd = p->ndim, .P = p->order + 1};
  const int nd = p->ndim;
  const int64_t sn = p->sn;
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  /* Every kernel is resolved before anything runs: a compile failure writes nothing. */
  if ((s = kernels(ctx, name, input->dtype, weight ? weight->dtype : NDF_FLOAT32, output->dtype,
                   logb ? logb->dtype : NDF_FLOAT32, R.fn)) != NDF_OK)
    return s;

  int64_t mlast[NDF_MAX_SPATIAL], lmax = 1, nmax[NDF_MAX_SPATIAL];
  for (int d = 0; d < nd; d++) {
    mlast[d] = ndf__n4_level_points(p, d, p->levels - 1);
    lmax *= mlast[d];
    nmax[d] = p->shape[d];
  }
  int64_t scr = pass_scratch(nd, p->sshape, mlast);
  if (pass_scratch(nd, p->shape, mlast) > scr) scr = pass_scratch(nd, p->shape, mlast);
  R.grid = ndf__grid(ctx, (sn + 255) / 256, 8);
  const size_t S8 = (size_t)sn * 8, L8 = (size_t)lmax * 8;
  const size_t tb = tab_bytes(nd, nmax, mlast, R.P);
  const size_t full = p->shrink > 1 ? (size_t)p->n * 8 : 0;
  /* the parts below, each rounded up to 256 bytes as part() cuts them */
  const size_t total = 6 * rnd(S8) + 3 * rnd(L8) + 2 * rnd((size_t)scr * 8) + 2 * rnd((size_t)p->nbins * 8) +
                       rnd((size_t)R.grid * 24) + rnd(8) + rnd(tb) + rnd(full);
  dmem M = {0, 0};
  if ((s = ndf__scratch_alloc(ctx, total, &M.base)) != NDF_OK) return s;
  const CUdeviceptr v = part(&M, S8), c = part(&M, S8), field = part(&M, S8), nfield = part(&M, S8),
                    r = part(&M, S8), a = part(&M, S8), lat = part(&M, L8), delta = part(&M, L8),
                    omega = part(&M, L8), hist = part(&M, (size_t)p->nbins * 8), e = part(&M, (size_t)p->nbins * 8),
                    partials = part(&M, (size_t)R.grid * 24), count = part(&M, 8), tabs = part(&M, tb),
                    fullf = full ? part(&M, full) : 0;
  R.t0 = part(&M, (size_t)scr * 8);
  R.t1 = part(&M, (size_t)scr * 8);
  if (M.used > total) {
    ndf__scratch_free(ctx, M.base);
    return ndf__error(ctx, NDF_EINTERNAL, "%s: scratch parts of %zu bytes exceed the %zu allocated", name, M.used,
                      total);
  }

  /* Host buffers: the partials, the histogram and its sharpened values, the lattice for refinement. */
  double *hpart = malloc((size_t)R.grid * 24), *hh = malloc((size_t)p->nbins * 16);
  double *hlat = malloc(L8 * 3);
  ndf__n4_axis ax[NDF_MAX_SPATIAL];
  memset(ax, 0, sizeof ax);
  if (!hpart || !hh || !hlat) {
    s = ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", name);
    goto done;
  }
  double *he = hh + p->nbins;

  /* The shrunk image. */
  s = cuerr(&R, R.cu->cuMemsetD8Async(count, 0, 8, ctx->stream));
  if (s == NDF_OK) s = cuerr(&R, R.cu->cuMemsetD8Async(field, 0, S8, ctx->stream));
  if (s == NDF_OK) s = cuerr(&R, R.cu->cuMemsetD8Async(lat, 0, L8, ctx->stream));
  if (s == NDF_OK) {
    ndf__n4_load_params pl = {.in = (CUdeviceptr)(uintptr_t)input->data,
                              .mask = mask ? (CUdeviceptr)(uintptr_t)mask->data : 0,
                              .weight = weight ? (CUdeviceptr)(uintptr_t)weight->data : 0,
                              .v = v, .c = c, .count = count, .ndim = nd, .mask_label = p->mask_label,
                              .shrink = p->shrink, .n = sn};
    for (int d = 0; d < nd; d++) {
      pl.shape[d] = p->sshape[d];
      pl.off[d] = p->soff[d];
      pl.istr[d] = input->strides[d];
      pl.mstr[d] = mask ? mask->strides[d] : 0;
      pl.wstr[d] = weight ? weight->strides[d] : 0;
    }
    s = ndf__n4_load_launch(ctx, name, R.fn[K_LOAD], R.grid, 256, 1, 0, &pl);
  }
  uint64_t inside = 0;
  if (s == NDF_OK) s = download(&R, &inside, count, 8);
  if (s == NDF_OK && inside == 0)
    s = ndf__argerror(ctx, name, "mask", "no voxel of the (shrunk) image is inside (mask, weight > 0, input > 0)");

  double conv = 0.0;
  int iters[NDF_N4_MAX_LEVELS] = {0};
  int64_t m[NDF_MAX_SPATIAL];
  dtabs T;
  const int shared = (size_t)p->nbins * 8 <= 32768;
  for (int l = 0; l < p->levels && s == NDF_OK; l++) {
    int64_t nl = 1;
    for (int d = 0; d < nd; d++) {
      m[d] = ndf__n4_level_points(p, d, l);
      nl *= m[d];
    }
    if (l > 0) { /* the exact refinement, on the host */
      int64_t mp[NDF_MAX_SPATIAL], np = 1;
      for (int d = 0; d < nd; d++) np *= (mp[d] = ndf__n4_level_points(p, d, l - 1));
      s = download(&R, hlat, lat, (size_t)np * 8);
      if (s == NDF_OK) {
        ndf__n4_refine(hlat, hlat + lmax, nd, mp, p->order, hlat + 2 * lmax);
        s = upload(&R, lat, hlat + lmax, (size_t)nl * 8);
      }
    }
    for (int d = 0; d < nd && s == NDF_OK; d++) {
      ndf__n4_axis_free(&ax[d]);
      if (ndf__n4_axis_init(&ax[d], p->sshape[d], m[d], p->order) != 0)
        s = ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", name);
    }
    if (s == NDF_OK) s = put_tabs(&R, tabs, ax, &T);
    if (s == NDF_OK) s = fit(&R, c, omega, ax, &T, 2);
    conv = INFINITY;
    int it = 0;
    while (s == NDF_OK && it < p->iters[l] && conv > p->threshold) {
      it++;
      /* 1. the residual and its range */
      ndf__n4_resid_params pr = {.v = v, .c = c, .field = field, .r = r, .part = partials, .n = sn};
      s = ndf__n4_resid_launch(ctx, name, R.fn[K_RESID], R.grid, 256, 1, 0, &pr);
      if (s == NDF_OK) s = download(&R, hpart, partials, (size_t)R.grid * 16);
      if (s != NDF_OK) break;
      double lo = INFINITY, hi = -INFINITY;
      for (unsigned b = 0; b < R.grid; b++) {
        lo = fmin(lo, hpart[2 * b]);
        hi = fmax(hi, hpart[2 * b + 1]);
      }
      const double slope = (hi - lo) / (p->nbins - 1);
      const int flat = !(slope > 0.0);
      /* 2. the histogram, sharpened on the host */
      if (!flat) {
        s = cuerr(&R, R.cu->cuMemsetD8Async(hist, 0, (size_t)p->nbins * 8, ctx->stream));
        ndf__n4_hist_params ph = {.r = r, .c = c, .hist = hist, .n = sn, .lo = lo, .slope = slope,
                                  .nbins = p->nbins, .shared = shared};
        if (s == NDF_OK)
          s = ndf__n4_hist_launch(ctx, name, R.fn[K_HIST], R.grid, 256, 1, shared ? (unsigned)p->nbins * 8 : 0, &ph);
        if (s == NDF_OK) s = download(&R, hh, hist, (size_t)p->nbins * 8);
        if (s == NDF_OK && ndf__n4_sharpen(p, hh, lo, slope, he) != 0)
          s = ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", name);
        if (s == NDF_OK) s = upload(&R, e, he, (size_t)p->nbins * 8);
      }
      /* 3. the fit */
      if (s == NDF_OK) {
        ndf__n4_numer_params pn = {.r = r, .c = c, .e = e, .sq = T.sq, .a = a, .n = sn, .lo = lo, .slope = slope,
                                   .nbins = p->nbins, .flat = flat, .ndim = nd};
        for (int d = 0; d < nd; d++) {
          pn.shape[d] = p->sshape[d];
          pn.sqoff[d] = T.sqoff[d];
        }
        s = ndf__n4_numer_launch(ctx, name, R.fn[K_NUMER], R.grid, 256, 1, 0, &pn);
      }
      if (s == NDF_OK) s = fit(&R, a, delta, ax, &T, 3);
      if (s == NDF_OK) {
        ndf__n4_update_params pu = {.lat = lat, .delta = delta, .omega = omega, .n = nl};
        s = ndf__n4_update_launch(ctx, name, R.fn[K_UPDATE], ndf__grid(ctx, (nl + 255) / 256, 8), 256, 1, 0, &pu);
      }
      /* 4. the new field, the convergence measure */
      if (s == NDF_OK) s = eval(&R, lat, nfield, ax, &T);
      if (s == NDF_OK) {
        ndf__n4_conv_params pc = {.c = c, .field = field, .nfield = nfield, .part = partials, .n = sn};
        s = ndf__n4_conv_launch(ctx, name, R.fn[K_CONV], R.grid, 256, 1, 0, &pc);
      }
      if (s == NDF_OK) s = download(&R, hpart, partials, (size_t)R.grid * 24);
      if (s != NDF_OK) break;
      double n = 0.0, sum = 0.0, sum2 = 0.0;
      for (unsigned b = 0; b < R.grid; b++) {
        n += hpart[3 * b];
        sum += hpart[3 * b + 1];
        sum2 += hpart[3 * b + 2];
      }
      const double mean = sum / n, var = n > 1.0 ? (sum2 - sum * mean) / (n - 1.0) : 0.0;
      conv = sqrt(var > 0.0 ? var : 0.0) / (1.0 + mean);
      s = cuerr(&R, R.cu->cuMemcpyDtoDAsync(field, nfield, S8, ctx->stream));
    }
    iters[l] = it;
  }

  /* The field at every input voxel, then the output. */
  CUdeviceptr F = field;
  if (s == NDF_OK && p->shrink > 1) {
    for (int d = 0; d < nd && s == NDF_OK; d++) {
      ndf__n4_axis_free(&ax[d]);
      if (ndf__n4_axis_init(&ax[d], p->shape[d], m[d], p->order) != 0)
        s = ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", name);
    }
    if (s == NDF_OK) s = put_tabs(&R, tabs, ax, &T);
    if (s == NDF_OK) s = eval(&R, lat, fullf, ax, &T);
    F = fullf;
  }
  if (s == NDF_OK) {
    ndf__n4_apply_params pa = {.in = (CUdeviceptr)(uintptr_t)input->data, .field = F,
                               .out = (CUdeviceptr)(uintptr_t)output->data,
                               .logb = logb ? (CUdeviceptr)(uintptr_t)logb->data : 0, .ndim = nd, .n = p->n};
    for (int d = 0; d < nd; d++) {
      pa.shape[d] = p->shape[d];
      pa.istr[d] = input->strides[d];
      pa.ostr[d] = output->strides[d];
      pa.lstr[d] = logb ? logb->strides[d] : 0;
    }
    s = ndf__n4_apply_launch(ctx, name, R.fn[K_APPLY], ndf__grid(ctx, (p->n + 255) / 256, 16), 256, 1, 0, &pa);
  }
  if (s == NDF_OK && res) {
    memset(res, 0, sizeof *res);
    res->number_of_fitting_levels = p->levels;
    memcpy(res->iterations, iters, sizeof iters);
    res->convergence = conv;
  }
done:
  for (int d = 0; d < nd; d++) ndf__n4_axis_free(&ax[d]);
  free(hpart);
  free(hh);
  free(hlat);
  ndf__scratch_free(ctx, M.base);
  return s;
}
