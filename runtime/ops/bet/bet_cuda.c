/*
 * bet_cuda.c -- the CUDA backend of skull stripping (templates/bet.cu): the
 * input converted to float bricks (bet_index) on the device, with its extremes
 * and the first non-finite element; the statistics that place the initial
 * sphere as device histograms and ordered sums, which the host turns into
 * the setup with the CPU backend's code (ndf__bet_setup_run); one launch per
 * pass of the surface, read back for bet2's self-intersection test; the
 * crossings of the final surface with the columns computed on the host (as
 * the CPU backend does) and the mask filled on the device.
 */
#include <stdlib.h>
#include <string.h>

#include "bet/bet.h"
#include "jit.h"
#include "kernel_params.generated.h"

enum { K_LOAD, K_HIST, K_PLANES, K_SELECT, K_EVOLVE, K_FILL, K_COUNT };

/* The kernels of a call; with warm, compiled for warm->arch instead of loaded.  Only the load reads T. */
static ndf_status kernels(ndf_ctx *ctx, const char *name, ndf_dtype t, ndf__warm *warm, CUfunction *fn) {
  static const char *const names[K_COUNT] = {"ndf_bet_load",   "ndf_bet_hist",   "ndf_bet_planes",
                                             "ndf_bet_select", "ndf_bet_evolve", "ndf_bet_fill"};
  ndf__kernel_req req[K_COUNT];
  const ndf__kernel_req *rp[K_COUNT];
  for (int k = 0; k < K_COUNT; k++) {
    ndf__req_bet(&req[k], names[k], k == K_LOAD ? t : NDF_FLOAT64);
    rp[k] = &req[k];
  }
  return ndf__jit_resolve_many(ctx, name, rp, K_COUNT, warm, fn);
}

ndf_status ndf__skull_strip_cuda_warm(ndf_ctx *ctx, const char *name, ndf_dtype t, ndf__warm *warm) {
  CUfunction fn[K_COUNT];
  return kernels(ctx, name, t, warm, fn);
}

static ndf_status cu_check(ndf_ctx *ctx, const char *name, CUresult r) {
  return r == CUDA_SUCCESS ? NDF_OK : ndf__cuda_error(ctx, name, r);
}

/* The device side of the statistics (ndf__bet_stats). */
typedef struct cuda_stats {
  ndf_ctx *ctx;
  const char *name;
  CUfunction *fn;
  const int64_t *shape;
  const double *spacing;
  CUdeviceptr img, rows, planes, counts;
} cuda_stats;

/* Copies bytes from the device to host and waits. */
static ndf_status fetch(const cuda_stats *cs, void *dst, CUdeviceptr src, size_t bytes) {
  const ndf__cu_api *cu = ndf__cu(NULL);
  ndf_status s = cu_check(cs->ctx, cs->name, cu->cuMemcpyDtoHAsync(dst, src, bytes, cs->ctx->stream));
  if (s == NDF_OK) s = cu_check(cs->ctx, cs->name, cu->cuStreamSynchronize(cs->ctx->stream));
  return s;
}

static int64_t voxels(const int64_t *shape) { return shape[0] * shape[1] * shape[2]; }

static ndf_status cuda_hist(void *self, double fa, double fb, uint64_t *counts) {
  const cuda_stats *cs = self;
  const ndf__cu_api *cu = ndf__cu(NULL);
  const int64_t n = voxels(cs->shape);
  ndf_status s = cu_check(cs->ctx, cs->name, cu->cuMemsetD8Async(cs->counts, 0, 8 * BET_HIST_BINS, cs->ctx->stream));
  ndf__bet_hist_params p = {.img = cs->img, .n = n, .fa = fa, .fb = fb, .counts = cs->counts};
  for (int d = 0; d < 3; d++) p.shape[d] = cs->shape[d];
  if (s == NDF_OK)
    s = ndf__bet_hist_launch(cs->ctx, cs->name, cs->fn[K_HIST], ndf__grid(cs->ctx, (n + 255) / 256, 4), 256, 1, 0, &p);
  return s == NDF_OK ? fetch(cs, counts, cs->counts, 8 * BET_HIST_BINS) : s;
}

static ndf_status cuda_planes(void *self, double t2, double t, double t98, double *planes, int64_t *count) {
  const cuda_stats *cs = self;
  const ndf__cu_api *cu = ndf__cu(NULL);
  ndf_status s = cu_check(cs->ctx, cs->name, cu->cuMemsetD8Async(cs->counts, 0, 8, cs->ctx->stream));
  ndf__bet_planes_params p = {.img = cs->img, .t = {t2, t, t98}, .rows = cs->rows, .planes = cs->planes,
                              .count = cs->counts};
  for (int d = 0; d < 3; d++) p.shape[d] = cs->shape[d];
  if (s == NDF_OK) s = ndf__bet_planes_launch(cs->ctx, cs->name, cs->fn[K_PLANES], (unsigned)cs->shape[0], 256, 1, 0, &p);
  uint64_t c = 0;
  if (s == NDF_OK) s = fetch(cs, planes, cs->planes, sizeof(double) * 3 * (size_t)cs->shape[0]);
  if (s == NDF_OK) s = fetch(cs, &c, cs->counts, 8);
  *count = (int64_t)c;
  return s;
}

static ndf_status cuda_select(void *self, const double *cog, double r2, double t2, double t98, int level,
                              unsigned prefix, uint64_t *counts) {
  const cuda_stats *cs = self;
  const ndf__cu_api *cu = ndf__cu(NULL);
  const int64_t n = voxels(cs->shape);
  ndf_status s = cu_check(cs->ctx, cs->name, cu->cuMemsetD8Async(cs->counts, 0, 8 * 65536, cs->ctx->stream));
  ndf__bet_select_params p = {.img = cs->img, .n = n, .level = level, .prefix = prefix, .counts = cs->counts};
  for (int d = 0; d < 3; d++) {
    p.shape[d] = cs->shape[d];
    p.c[d] = cs->spacing[d];
    p.c[3 + d] = cog[d];
  }
  p.c[6] = r2, p.c[7] = t2, p.c[8] = t98;
  if (s == NDF_OK)
    s = ndf__bet_select_launch(cs->ctx, cs->name, cs->fn[K_SELECT], ndf__grid(cs->ctx, (n + 255) / 256, 8), 256, 1, 0, &p);
  return s == NDF_OK ? fetch(cs, counts, cs->counts, 8 * 65536) : s;
}

ndf_status ndf__skull_strip_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, const double *spacing,
                                 ndf_array *out, const ndf_skull_strip_options *opt, const ndf__bet_mesh *m) {
  const ndf__cu_api *cu = ndf__cu(NULL);
  const int64_t n = ndf_array_size(in), nimg = bet_image_size(in->shape), ncol = in->shape[0] * in->shape[1];
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  CUfunction fn[K_COUNT];
  if ((s = kernels(ctx, name, in->dtype, NULL, fn)) != NDF_OK) return s;
  const size_t nv3 = 3 * (size_t)m->nv;
  double *pos = malloc(sizeof(double) * nv3), *orig = malloc(sizeof(double) * nv3);
  if (!pos || !orig) {
    free(pos), free(orig);
    return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
  }
  /* Scratch: stat (256 bytes) | img (bricks of floats) | rows | planes | counts (65536) | pos | npos | terms. */
#define BET_ALIGN(b) (((size_t)(b) + 255) & ~(size_t)255)
  const size_t ibytes = BET_ALIGN(sizeof(float) * (size_t)nimg), rbytes = BET_ALIGN(sizeof(double) * 2 * (size_t)ncol),
               pbytes = BET_ALIGN(sizeof(double) * 3 * (size_t)in->shape[0]), cbytes = 8 * 65536,
               vbytes = BET_ALIGN(sizeof(double) * nv3), tbytes = BET_ALIGN(sizeof(double) * (size_t)m->nv);
  CUdeviceptr mem = 0, ring = 0, fill = 0;
  if ((s = ndf__scratch_alloc(ctx, 256 + ibytes + rbytes + pbytes + cbytes + 2 * vbytes + tbytes, &mem)) != NDF_OK) {
    free(pos), free(orig);
    return s;
  }
  const CUdeviceptr stat = mem, dimg = mem + 256, drows = dimg + ibytes, dplanes = drows + rbytes,
                    dcounts = dplanes + pbytes, dpos[2] = {dcounts + cbytes, dcounts + cbytes + vbytes},
                    dterms = dcounts + cbytes + 2 * vbytes;
#undef BET_ALIGN
  /* the bricks' padding 0; stat[0] (least bad index) and stat[1] (least key) all ones, stat[2] 0 */
  s = cu_check(ctx, name, cu->cuMemsetD8Async(mem, 0, 256 + ibytes, ctx->stream));
  if (s == NDF_OK) s = cu_check(ctx, name, cu->cuMemsetD8Async(stat, 0xff, 16, ctx->stream));
  if (s == NDF_OK) s = ndf__device_table(ctx, m->ring, sizeof(int) * (BET_MAX_RING + 1) * (size_t)m->nv, &ring);

  ndf__bet_load_params pl = {.in = NDF__DPTR(in->data), .img = dimg, .n = n, .stat = stat};
  for (int d = 0; d < 3; d++) pl.shape[d] = in->shape[d], pl.str[d] = in->strides[d];
  if (s == NDF_OK) s = ndf__bet_load_launch(ctx, name, fn[K_LOAD], ndf__grid(ctx, (n + 255) / 256, 8), 256, 1, 0, &pl);
  cuda_stats cs = {ctx, name, fn, in->shape, spacing, dimg, drows, dplanes, dcounts};
  uint64_t hs[3] = {0, 0, 0};
  if (s == NDF_OK) s = fetch(&cs, hs, stat, sizeof hs);
  if (s == NDF_OK && hs[0] != ~(uint64_t)0)
    s = ndf__argerror(ctx, name, "input", "NaN, infinity or a value beyond float32's range at element %lld",
                      (long long)hs[0]);
  ndf__bet_setup st;
  const ndf__bet_stats ops = {&cs, cuda_hist, cuda_planes, cuda_select};
  if (s == NDF_OK)
    s = ndf__bet_setup_run(ctx, name, in->shape, spacing, opt, (double)bet_unkey((unsigned)hs[1]),
                           (double)bet_unkey((unsigned)hs[2]), &ops, &st);

  /* The passes, as the CPU backend runs them (bet.c, evolve_cpu). */
  const int surface = s == NDF_OK && st.radius0 > 0;
  if (surface) ndf__bet_sphere(m, &st, orig);
  for (int pass = 0; s == NDF_OK && surface && pass <= NDF__BET_LAST_PASS; pass++) {
    s = cu_check(ctx, name, cu->cuMemcpyHtoDAsync(dpos[0], orig, sizeof(double) * nv3, ctx->stream));
    ndf__bet_evolve_params pe = {.img = dimg, .pos = dpos[0], .npos = dpos[1], .terms = dterms, .ring = ring,
                                 .nv = m->nv, .pass = pass, .iterations = st.iterations};
    for (int d = 0; d < 3; d++) pe.shape[d] = in->shape[d], pe.c[d] = st.c.spacing[d];
    pe.c[3] = st.c.t2, pe.c[4] = st.c.t, pe.c[5] = st.c.tm, pe.c[6] = st.c.bt, pe.c[7] = st.c.gradient;
    pe.c[8] = st.c.cog2, pe.c[9] = st.c.radius, pe.c[10] = st.c.E, pe.c[11] = st.c.F, pe.c[12] = st.c.d1;
    pe.c[13] = st.c.d2, pe.c[14] = st.c.dscale;
    if (s == NDF_OK) s = ndf__bet_evolve_launch(ctx, name, fn[K_EVOLVE], 1, 1024, 1, 0, &pe);
    if (s == NDF_OK) s = fetch(&cs, pos, dpos[st.iterations & 1], sizeof(double) * nv3);
    if (s != NDF_OK) break;
    const double si = ndf__bet_self_intersection(m, pos, orig);
    if (si < 0) s = ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
    else if (!(si > NDF__BET_SELF_INTERSECTION)) break;
  }

  /* The mask: the crossings from the host, the columns filled on the device; no surface, no crossing. */
  int64_t *start = NULL;
  double *hits = NULL;
  if (s == NDF_OK && surface) s = ndf__bet_crossings(ctx, name, m, &st.c, pos, &start, &hits);
  if (s == NDF_OK && !surface && !(start = calloc((size_t)ncol + 1, sizeof(int64_t))))
    s = ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
  const int64_t nh = s == NDF_OK ? start[ncol] : 0;
  const size_t sbytes = (sizeof(int64_t) * (size_t)(ncol + 1) + 255) & ~(size_t)255;
  if (s == NDF_OK) s = ndf__scratch_alloc(ctx, sbytes + sizeof(double) * (size_t)(nh > 0 ? nh : 1), &fill);
  if (s == NDF_OK) s = cu_check(ctx, name, cu->cuMemcpyHtoDAsync(fill, start, sizeof(int64_t) * (size_t)(ncol + 1), ctx->stream));
  if (s == NDF_OK && nh > 0)
    s = cu_check(ctx, name, cu->cuMemcpyHtoDAsync(fill + sbytes, hits, sizeof(double) * (size_t)nh, ctx->stream));
  if (s == NDF_OK) {
    ndf__bet_fill_params pf = {.start = fill, .hits = fill + sbytes, .out = NDF__DPTR(out->data)};
    for (int d = 0; d < 3; d++) pf.shape[d] = in->shape[d], pf.ostr[d] = out->strides[d];
    s = ndf__bet_fill_launch(ctx, name, fn[K_FILL], (unsigned)((ncol + 127) / 128), 128, 1, 0, &pf);
  }
  /* the host arrays stay alive until the copies from them are done */
  if (s == NDF_OK) s = cu_check(ctx, name, cu->cuStreamSynchronize(ctx->stream));
  if (fill) ndf__scratch_free(ctx, fill);
  ndf__scratch_free(ctx, mem);
  free(pos), free(orig), free(start), free(hits);
  return s;
}
