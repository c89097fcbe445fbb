/*
 * rank_cuda.c -- the CUDA backend of the rank filters: specializes
 * templates/rank.cu for the window (its taps become compile-time offsets
 * into a shared-memory tile), the rank, the dtype, the mode and the NaN
 * policy, and launches it on the context's stream.
 *
 * The array is seen as (outer..., Y, X): X the last axis, Y the one before
 * (a batch axis when the window is 1-D, so that a block still covers 2-D
 * work), outer every axis in front.  The taps' offsets along the spatial
 * axes in front of Y become "planes" of the tile: one patch per distinct
 * offset tuple, so a 3x3x3 window loads three patches.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rank/rank.h"
#include "kernel_params.generated.h"
#include "selnets.generated.h"
#include "tune.h"

/* The workload of a rank call's tunables (tune.h): the dtype, the spatial
 * axes and the window's taps. */
static ndf__tune_work rank_work(ndf_dtype dtype, const ndf__grey_geom *g, int64_t n) {
  const ndf__tune_work w = {dtype, g->nsp, 0, n};
  return w;
}

#define RANK_TX 32
#define RANK_TY 8
/* The sliding-histogram kernel: columns per block, rows per thread. */
#define HIST_BX 64
#define HIST_STRIP 32
/* The sorted-tile kernel: threads per block (two warps), largest sort, and
 * the shared memory a block may opt in to (H100/H200: 227 KB). */
#define TILE_BT 64
#define TILE_RP2_MAX 16384
#define TILE_SMEM_MAX (227 * 1024)
#define TILE_SMEM_4 (56 * 1024)
/* Shared memory a block may take without the opt-in attribute. */
#define SMEM_DEFAULT (48 * 1024)
#define CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES 8

/* Text appended to a growing heap string; *ok = 0 once out of memory. */
typedef struct {
  char *s;
  size_t n, cap;
  int ok;
} strbuf;

static void sb_add(strbuf *b, const char *fmt, long long x, long long y) {
  if (!b->ok) return;
  char tmp[64];
  int k = snprintf(tmp, sizeof tmp, fmt, x, y);
  if (b->n + (size_t)k + 1 > b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 1024;
    while (cap < b->n + (size_t)k + 1) cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) {
      b->ok = 0;
      return;
    }
    b->s = s;
    b->cap = cap;
  }
  memcpy(b->s + b->n, tmp, (size_t)k + 1);
  b->n += (size_t)k;
}

/* The geometry of one call, shared by the request and the launch. */
typedef struct {
  int nlead, nleadsp, nplanes;
  int ylo, xlo, ky, kx, ty, ry, rz;
  size_t smem;
  const ndf__selnet *net;
  int med3; /* 0: no; 1: ALGO 2; 2: ALGO 3 (ALGO 2, tile load unrolled) */
} rank_geom;

/* Plane index of each tap and the planes' lead offsets (first-seen order). */
static int plane_of(const int32_t *tap, int nleadsp, const int32_t *planes, int nplanes) {
  for (int p = 0; p < nplanes; p++)
    if (!memcmp(planes + (size_t)p * nleadsp, tap, (size_t)nleadsp * sizeof *tap)) return p;
  return -1;
}

/* The lead offsets of tap k shifted by j along Z (the last lead axis). */
static void shifted(const int32_t *tap, int nleadsp, int j, int32_t *outv) {
  memcpy(outv, tap, (size_t)nleadsp * sizeof *outv);
  if (nleadsp) outv[nleadsp - 1] += j;
}

/* Builds the request; returns NDF_OK, or an error (ENOMEM, or ENOTSUP for a
 * window too large for a block).  shape: the array's (ndim axes), for the
 * blocking; NULL when unknown (cache warm). */
static ndf_status build(ndf_ctx *ctx, const char *name, ndf_dtype dtype, int ndim, const int64_t *shape,
                        const ndf__grey_geom *g, const int32_t *taps, int64_t n, const ndf__rank_sel *sel,
                        ndf__kernel_req *req, rank_geom *rg) {
  const int nsp = g->nsp;
  memset(rg, 0, sizeof *rg);
  rg->nlead = ndim >= 2 ? ndim - 2 : 0;
  rg->nleadsp = nsp > 2 ? nsp - 2 : 0;
  int32_t ylo = 0, yhi = 0, xlo = INT32_MAX, xhi = INT32_MIN;
  if (nsp >= 2) ylo = INT32_MAX, yhi = INT32_MIN;
  for (int64_t k = 0; k < n; k++) {
    int32_t x = taps[k * nsp + nsp - 1], y = nsp >= 2 ? taps[k * nsp + nsp - 2] : 0;
    if (x < xlo) xlo = x;
    if (x > xhi) xhi = x;
    if (y < ylo) ylo = y;
    if (y > yhi) yhi = y;
  }
  rg->ylo = ylo, rg->xlo = xlo, rg->ky = yhi - ylo + 1, rg->kx = xhi - xlo + 1;

  /* rank.c has rejected NETWORK where no network exists. */
  const ndf__selnet *net = ndf__selnet_find(n, ndf__rank_for(sel->kind, sel->rank, sel->percentile, n));
  rg->net = sel->algorithm == NDF_RANK_ALGO_SELECT ? NULL : net;
  /* The 3x3 median (every tap of a 3x3 box over Y and X): sorted rows shared
   * down a thread's outputs, the tile load unrolled (ALGO 3); rank.med3=network
   * keeps the network, =rows the sorted rows with the generic tile load (ALGO 2). */
  const ndf__tune_work tw = rank_work(dtype, g, n);
  const int em = ndf__tune(ctx, NDF__TUNE_RANK_MED3, &tw);
  rg->med3 = rg->net && n == 9 && ndf__rank_for(sel->kind, sel->rank, sel->percentile, n) == 4 && rg->ky == 3 &&
             rg->kx == 3 && em != NDF__TUNE_RANK_MED3__NETWORK;
  if (rg->med3) rg->med3 = em == NDF__TUNE_RANK_MED3__ROWS ? 1 : 2;
  for (int64_t k = 0; rg->med3 && k < n; k++)
    for (int d = 0; d < nsp - 2; d++)
      if (taps[k * nsp + d] != taps[d]) rg->med3 = 0; /* the taps span an axis in front of Y */

  /* Outputs per thread: RY rows and RZ planes along Z when the window spans
   * Z, fewer for large windows (registers) and small extents (idle threads). */
  int64_t ny = shape && ndim >= 2 ? shape[ndim - 2] : 1 << 20;
  int64_t nz = shape && ndim >= 3 ? shape[ndim - 3] : 1 << 20;
  /* Measured on the H200 (a sweep of RY x RZ over the benchmark's rank workloads): 8 rows
   * per thread up to 5x5, 2 rows x 8 planes for 3x3x3; then fewer while the
   * grid would have under 2^16 threads (small batches need the threads more
   * than the shared loads). */
  rg->ry = n <= 25 ? 8 : n <= 27 ? 2 : 1;
  rg->rz = rg->nleadsp && n <= 27 && !rg->med3 ? 8 : 1;
  /* rank.ry / rank.rz (1, 2, 4 or 8) override the blocking. */
  const int ey = ndf__tune(ctx, NDF__TUNE_RANK_RY, &tw), ez = ndf__tune(ctx, NDF__TUNE_RANK_RZ, &tw);
  if (ey == 1 || ey == 2 || ey == 4 || ey == 8 || (rg->med3 && ey == 16))
    rg->ry = ey; /* 16: the 3x3 median only (its registers do not grow with RY) */
  if (rg->nleadsp && !rg->med3 && (ez == 1 || ez == 2 || ez == 4 || ez == 8)) rg->rz = ez;
  while (rg->ry > 1 && ny < (int64_t)RANK_TY * rg->ry) rg->ry /= 2;
  while (rg->rz > 1 && nz < rg->rz) rg->rz /= 2;
  if (shape) {
    int64_t outputs = 1;
    for (int d = 0; d < ndim; d++) outputs *= shape[d];
    while (rg->ry > 1 && outputs / (rg->ry * rg->rz) < (1 << 16)) rg->ry /= 2;
    while (rg->rz > 1 && outputs / (rg->ry * rg->rz) < (1 << 16)) rg->rz /= 2;
  }

  const int nl = rg->nleadsp ? rg->nleadsp : 1;
  int32_t *planes = malloc((size_t)(n > 0 ? n : 1) * (size_t)rg->rz * nl * sizeof *planes);
  if (!planes) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
  int32_t tup[NDF_MAX_SPATIAL];
  for (int j = 0; j < rg->rz; j++)
    for (int64_t k = 0; k < n; k++) {
      shifted(taps + k * nsp, rg->nleadsp, j, tup);
      if (plane_of(tup, rg->nleadsp, planes, rg->nplanes) < 0)
        memcpy(planes + (size_t)rg->nplanes++ * rg->nleadsp, tup, (size_t)rg->nleadsp * sizeof *planes);
    }

  /* Threads along Y: 8, fewer when the tile would not fit. */
  const size_t es = ndf_dtype_size(dtype);
  int ty = RANK_TY;
  for (;;) {
    rg->smem = (size_t)rg->nplanes * (size_t)(ty * rg->ry + rg->ky - 1) * (size_t)(RANK_TX + rg->kx - 1) * es;
    if (rg->smem <= SMEM_DEFAULT || ty == 1) break;
    ty /= 2;
  }
  rg->ty = ty;
  if (rg->smem > 200 * 1024) {
    free(planes);
    return ndf__error(ctx, NDF_ENOTSUP, "%s: the window (%lld taps over %d x %d x %d) is too large for the CUDA "
                      "rank kernel's shared-memory tile (%zu bytes)", name, (long long)n, rg->nplanes, rg->ky,
                      rg->kx, rg->smem);
  }

  strbuf offs = {.ok = 1}, pl = {.ok = 1}, code = {.ok = 1};
  const long long w = RANK_TX + rg->kx - 1, patch = (long long)(ty * rg->ry + rg->ky - 1) * w;
  for (int j = 0; j < rg->rz; j++)
    for (int64_t k = 0; k < n; k++) {
      const int32_t *t = taps + k * nsp;
      shifted(t, rg->nleadsp, j, tup);
      long long y = nsp >= 2 ? t[nsp - 2] : 0, p = plane_of(tup, rg->nleadsp, planes, rg->nplanes);
      sb_add(&offs, (j || k) ? ",%lld" : "%lld", p * patch + (y - ylo) * w + (t[nsp - 1] - xlo), 0);
    }
  for (int p = 0; p < rg->nplanes; p++)
    for (int j = 0; j < rg->nleadsp; j++) sb_add(&pl, (p || j) ? ",%lld" : "%lld", planes[p * rg->nleadsp + j], 0);
  if (!rg->nleadsp) sb_add(&pl, "0", 0, 0);
  if (rg->net) {
    const uint8_t *st = ndf__selnet_steps + rg->net->offset;
    for (int s = 0; s < rg->net->nsteps; s++, st += 3)
      sb_add(&code, st[2] == 0 ? "X(%lld,%lld)" : st[2] == 1 ? "MN(%lld,%lld)" : "MX(%lld,%lld)", st[0], st[1]);
  }
  sb_add(&code, "", 0, 0); /* never NULL */
  free(planes);

  ndf_status s = NDF_OK;
  if (!offs.ok || !pl.ok || !code.ok) {
    s = ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
  } else {
    const int is_float = ndf__dtype_is_float(dtype);
    const int is_signed = dtype == NDF_INT8 || dtype == NDF_INT16 || dtype == NDF_INT32 || dtype == NDF_INT64;
    ndf__req_init(req, "rank", "ndf_rank");
    ndf__req_set(req, "T", "%s", ndf__dtype_ctype(dtype));
    ndf__req_set(req, "KIND", "%d", is_float ? 2 : is_signed ? 1 : 0);
    ndf__req_set(req, "TBITS", "%d", (int)(8 * es));
    ndf__req_set(req, "MODE", "%d", (int)g->mode);
    ndf__req_set(req, "NAN_OMIT", "%d", is_float && sel->nan_policy == NDF_RANK_NAN_OMIT);
    ndf__req_set(req, "ALGO", "%d", rg->med3 ? rg->med3 + 1 : rg->net ? 0 : 1);
    ndf__req_set(req, "N", "%lld", (long long)n);
    ndf__req_set(req, "RKIND", "%d", (int)sel->kind);
    if (sel->kind == 1) ndf__req_set(req, "RPARAM", "%lld", (long long)sel->rank);
    else if (sel->kind == 2) ndf__req_set(req, "RPARAM", "%.17g", sel->percentile);
    else ndf__req_set(req, "RPARAM", "0");
    ndf__req_set(req, "OUTREG", "%d", rg->net ? (int)rg->net->out : 0);
    ndf__req_set(req, "TX", "%d", RANK_TX);
    ndf__req_set(req, "TY", "%d", ty);
    ndf__req_set(req, "RY", "%d", rg->ry);
    ndf__req_set(req, "RZ", "%d", rg->rz);
    ndf__req_set(req, "KY", "%d", rg->ky);
    ndf__req_set(req, "KX", "%d", rg->kx);
    ndf__req_set(req, "NPLANES", "%d", rg->nplanes);
    ndf__req_set(req, "NLEADSP", "%d", rg->nleadsp);
    ndf__req_set(req, "OFFS", "%s", offs.s);
    ndf__req_set(req, "PLANES", "%s", pl.s);
    ndf__req_set(req, "NET", "%s", code.s);
  }
  free(offs.s);
  free(pl.s);
  free(code.s);
  return s;
}

int ndf__rank_hist_applies(ndf_dtype dtype, const ndf__grey_geom *g, int64_t n) {
  return (dtype == NDF_UINT8 || dtype == NDF_INT8) && g->is_box && g->nsp >= 2 && n < 65536;
}

/* The sorted-tile kernel: rows per block and the sort's size for a KY x KX
 * box over ny rows; 0 when no tile fits the shared memory.  The tile is
 * (S + KY - 1) x (32 + KX - 1) values, sorted as RP2 (a power of two) 64-bit
 * pairs; S rows as many as fit 4096 pairs (56 KB: 4 blocks per SM), more
 * pairs only when that leaves fewer than 16 rows (large KY). */
typedef struct {
  int s, rp2;
  size_t smem;
  int form; /* 1: templates/rank_tile.cu; 2: templates/rank_tile2.cu */
  int pipe; /* form 2: the template's slot PIPE (tile2_finish) */
} tile_geom;

static size_t tile_smem(int s, int ky, int kx, int rp2) {
  const size_t tw = 31 + (size_t)kx, r = (size_t)(s + ky - 1) * tw, nwords = (r + 31) / 32;
  const size_t ng = (nwords + 15) / 16, ngp = (ng + 1) / 2;
  const size_t aw = 2 * (size_t)rp2 > (nwords + ngp) * TILE_BT ? 2 * (size_t)rp2 : (nwords + ngp) * TILE_BT;
  return (aw * 4 + r * 4 + r * 2 + 15) & ~(size_t)15;
}

static int tile_plan(int ky, int kx, int64_t ny, tile_geom *tg) {
  const int64_t tw = 31 + (int64_t)kx;
  int64_t s = 0;
  int rp2 = 4096;
  for (; rp2 <= TILE_RP2_MAX; rp2 *= 2) {
    s = (rp2 / tw - (ky - 1)) & ~(int64_t)1;
    if (s >= 16 || s >= ny) break;
  }
  if (rp2 > TILE_RP2_MAX) rp2 = TILE_RP2_MAX, s = (rp2 / tw - (ky - 1)) & ~(int64_t)1;
  if (s < 2) return 0;
  const int64_t sneed = ny < 2 ? 2 : (ny + 1) & ~(int64_t)1;
  if (s > sneed) s = sneed;
  /* With 4096 pairs, 4 blocks per SM: drop rows while the group counts push
   * the block over 56 KB (31x31: 34 rows, not 36). */
  while (rp2 == 4096 && s > 16 && tile_smem((int)s, ky, kx, rp2) > TILE_SMEM_4) s -= 2;
  const int64_t r = (s + ky - 1) * tw;
  int p2 = 64;
  while (p2 < r) p2 *= 2;
  tg->s = (int)s;
  tg->rp2 = p2;
  tg->smem = tile_smem((int)s, ky, kx, p2);
  tg->form = 1;
  return tg->smem <= TILE_SMEM_MAX;
}

/* The second form (templates/rank_tile2.cu): 4096 keys sorted in registers,
 * S as large as (S + KY - 1) x (32 + KX - 1) <= 4096 allows, fewer (not
 * under 16) while the tile has more than 3968 values, so that the block
 * takes at most 56 KB (4 blocks per SM; 31x31: 34 rows); used where that
 * leaves at least 16 rows (or covers ny).  Shared memory: 32 KB (keys by
 * position and equal-key counters, then the bitsets), 16.25 KB of sorted
 * keys (rows of 64 padded to 65), 2 bytes of rank per tile position. */
#define TILE2_KEYS 4096
/* The variant of templates/rank_tile2.cu (slot PIPE): rank.tile2_pipe=0..8 or 10, else 10
 * where it applies and 6 elsewhere (tile2_pipe_for). */
static int tile2_pipe(ndf_ctx *ctx, const ndf__tune_work *w) {
  const int v = ndf__tune(ctx, NDF__TUNE_RANK_TILE2_PIPE, w);
  return v == NDF__TUNE_RANK_TILE2_PIPE__AUTO || v == NDF__TUNE_RANK_TILE2_PIPE__10 ? 10
                                                                                   : v - NDF__TUNE_RANK_TILE2_PIPE__0;
}

/* PIPE 10 (ADR 0005 "pivots instead of bitsets") takes 32-bit
 * data in tiles of at most 64 x 64 and 3968 values, rows and columns below
 * 2^31 (its border map is 32-bit), where the window holds at least a tenth of
 * the tile's values (its walks pass the tile's ranks outside the window: on
 * the H200, 1024^2 float32, it takes 40% more time than PIPE 6 at 11x11 and
 * 18% more at 15x15, 30% less at 21x21); elsewhere it is 6. */
static int tile2_pipe_for(ndf_ctx *ctx, const ndf__tune_work *w, ndf_dtype dtype, int s, int ky, int kx, int64_t ny,
                          int64_t nx) {
  const int p = tile2_pipe(ctx, w);
  if (p != 10) return p;
  const int th = s + ky - 1, tw = 31 + kx;
  return ndf_dtype_size(dtype) == 4 && th <= 64 && tw <= 64 && th * tw <= 3968 && 10 * ky * kx >= th * tw &&
                 ny < INT32_MAX - 64 && nx < INT32_MAX - 64
             ? 10
             : 6;
}

/* PIPE 3 and 4 with at most 3968 values (VEC3 in the template): keys and counters
 * of R values (or the bitsets), rows of 68 words for the sort's transposes (the
 * sorted keys themselves in rows of 65); else 32 KB and rows
 * of 65 words.  Then 2 bytes of rank per value. */
static size_t tile2_smem(int pipe, int s, int ky, int kx) {
  const size_t r = (size_t)(s + ky - 1) * (size_t)(31 + kx);
  const size_t rpos = (r * 2 + 15) & ~(size_t)15;
  /* PIPE 10: 512 bytes for the border tiles' map of rows and columns, the
   * sort's buffer (rows of 68; later posOf and the column counts), the ranks
   * (before them the equal-key counters): 25856 bytes for 31x31. */
  if (pipe == 10) return 128 * 4 + 68 * 64 * 4 + rpos; /* the border map, the sort's buffer, the ranks */
  if (pipe >= 3 && r <= 3968) {
    const size_t tkw = (r + 3) & ~(size_t)3, bitw = (r + 31) / 32 * 64;
    return 4 * (2 * tkw > bitw ? 2 * tkw : bitw) + 68 * 64 * 4 + rpos;
  }
  return 32768 + 65 * 64 * 4 + rpos;
}

static int tile2_plan(ndf_ctx *ctx, const ndf__tune_work *w, int ky, int kx, int64_t ny, tile_geom *tg) {
  const int64_t tw = 31 + (int64_t)kx;
  int64_t s = (TILE2_KEYS / tw - (ky - 1)) & ~(int64_t)1;
  const int64_t sneed = ny < 2 ? 2 : (ny + 1) & ~(int64_t)1;
  if (s < 2 || (s < 16 && s < sneed)) return 0;
  if (s > sneed) s = sneed;
  while (s > 16 && (s + ky - 1) * tw > 3968) s -= 2;
  tg->s = (int)s;
  tg->rp2 = TILE2_KEYS;
  tg->pipe = tile2_pipe(ctx, w);
  tg->smem = tile2_smem(tg->pipe, (int)s, ky, kx);
  tg->form = 2;
  return 1;
}

/* Form 2's slot PIPE for this dtype, and its shared memory. */
static void tile2_finish(ndf_ctx *ctx, const ndf__tune_work *w, ndf_dtype dtype, int ky, int kx, int64_t ny, int64_t nx,
                         tile_geom *tg) {
  if (tg->form != 2) return;
  /* PIPE 10 takes tiles of at most 64 rows: where the plan took more, fewer rows per block (not
   * under 16), unless PIPE 10 does not apply even then.  On the H200 (1024^2 float32) PIPE 10 at
   * S = 40 takes 26% less time than PIPE 6 at the plan's 48 rows for 25x25, at S = 44 30% less
   * for 21x21. */
  const int s0 = tg->s, scap = (65 - ky) & ~1;
  if (tile2_pipe(ctx, w) == 10 && s0 + ky - 1 > 64 && scap >= 16) tg->s = scap;
  tg->pipe = tile2_pipe_for(ctx, w, dtype, tg->s, ky, kx, ny, nx);
  if (tg->pipe != 10) tg->s = s0; /* (6, or the form asked for: the same at the plan's rows) */
  tg->smem = tile2_smem(tg->pipe, tg->s, ky, kx);
}

/* The second form where it applies, unless rank.tile=first asks for the first. */
static int tile_choose(ndf_ctx *ctx, const ndf__tune_work *w, int ky, int kx, int64_t ny, tile_geom *tg) {
  if (ndf__tune(ctx, NDF__TUNE_RANK_TILE, w) != NDF__TUNE_RANK_TILE__FIRST && tile2_plan(ctx, w, ky, kx, ny, tg))
    return 1;
  return tile_plan(ky, kx, ny, tg);
}

int ndf__rank_tile_applies(ndf_dtype dtype, const ndf__grey_geom *g, int64_t n) {
  if (ndf_dtype_size(dtype) > 4 || !g->is_box || g->nsp < 2 || n > 16384) return 0;
  for (int d = 0; d < g->nsp - 2; d++)
    if (g->box[d] != 1) return 0;
  tile_geom tg;
  return tile_plan((int)g->box[g->nsp - 2], (int)g->box[g->nsp - 1], 1 << 20, &tg);
}

/* The histogram kernel where the selection asks for it, or AUTO finds no
 * network, no tile, and the histogram applies. */
static int use_hist(ndf_dtype dtype, const ndf__grey_geom *g, int64_t n, const ndf__rank_sel *sel) {
  if (sel->algorithm == NDF_RANK_ALGO_HISTOGRAM) return 1;
  if (sel->algorithm != NDF_RANK_ALGO_AUTO || !ndf__rank_hist_applies(dtype, g, n)) return 0;
  return !ndf__selnet_find(n, ndf__rank_for(sel->kind, sel->rank, sel->percentile, n)) &&
         !ndf__rank_tile_applies(dtype, g, n);
}

/* The sorted tile where the selection asks for it, or AUTO finds no network
 * and the tile applies.  rank.tile=off leaves AUTO's choice to the other
 * kernels (histogram, radix select), for comparing them in one run. */
static int use_tile(ndf_ctx *ctx, ndf_dtype dtype, const ndf__grey_geom *g, int64_t n, const ndf__rank_sel *sel) {
  if (sel->algorithm == NDF_RANK_ALGO_TILE) return 1;
  if (sel->algorithm != NDF_RANK_ALGO_AUTO || !ndf__rank_tile_applies(dtype, g, n)) return 0;
  const ndf__tune_work w = rank_work(dtype, g, n);
  if (ndf__tune(ctx, NDF__TUNE_RANK_TILE, &w) == NDF__TUNE_RANK_TILE__OFF) return 0;
  return !ndf__selnet_find(n, ndf__rank_for(sel->kind, sel->rank, sel->percentile, n));
}

static void hist_request(ndf_dtype dtype, const ndf__grey_geom *g, const ndf__rank_sel *sel, ndf__kernel_req *req) {
  char rparam[64];
  if (sel->kind == 1) snprintf(rparam, sizeof rparam, "%lld", (long long)sel->rank);
  else if (sel->kind == 2) snprintf(rparam, sizeof rparam, "%.17g", sel->percentile);
  else snprintf(rparam, sizeof rparam, "0");
  ndf__req_rank_hist(req, dtype, dtype == NDF_INT8, (int)g->mode, (int)sel->kind, rparam, HIST_BX, HIST_STRIP);
}

/* The fields rank_hist and rank_tile share (the same names in both structs):
 * Y and X (the last two axes) and the nlead axes in front of them. */
#define SET_YX(p, in_, out_, ny_, nx_, nlead_)                                 \
  do {                                                                         \
    const int nd_ = (in_)->ndim;                                               \
    (p).ny = (ny_);                                                            \
    (p).nx = (nx_);                                                            \
    (p).iys = (in_)->strides[nd_ - 2];                                         \
    (p).ixs = (in_)->strides[nd_ - 1];                                         \
    (p).oys = (out_)->strides[nd_ - 2];                                        \
    (p).oxs = (out_)->strides[nd_ - 1];                                        \
    (p).nlead = (nlead_);                                                      \
    ndf__axes((p).lshape, (nlead_), (in_)->shape);                             \
    ndf__axes((p).listr, (nlead_), (in_)->strides);                            \
    ndf__axes((p).lostr, (nlead_), (out_)->strides);                           \
  } while (0)

/* The sliding-histogram kernel over a box window (ndf_hist_params of templates/rank_hist.cu). */
static ndf_status run_hist(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out,
                           const ndf__grey_geom *g, int64_t n, const ndf__rank_sel *sel) {
  ndf__kernel_req req;
  hist_request(in->dtype, g, sel, &req);
  CUfunction fn;
  ndf_status s = ndf__jit_get(ctx, name, &req, &fn);
  if (s != NDF_OK || ndf_array_size(in) == 0) return s;
  const int ndim = in->ndim, nsp = g->nsp, nlead = ndim - 2, nleadsp = nsp - 2;
  int64_t ny = in->shape[ndim - 2], nx = in->shape[ndim - 1];
  int lbox[NDF_MAX_NDIM], llo[NDF_MAX_NDIM], nplanes = 1;
  int64_t nouter = 1;
  for (int d = 0; d < nlead; d++) {
    int sp = d - (nlead - nleadsp); /* spatial axis index, < 0 for batch axes */
    lbox[d] = sp >= 0 ? (int)g->box[sp] : 1;
    llo[d] = sp >= 0 ? (int)g->lo[sp] : 0;
    nplanes *= lbox[d];
    nouter *= in->shape[d];
  }
  for (int d = nlead; d < NDF_MAX_NDIM; d++) lbox[d] = 1, llo[d] = 0;
  int ky = (int)g->box[nsp - 2], kx = (int)g->box[nsp - 1], ylo = (int)g->lo[nsp - 2], xlo = (int)g->lo[nsp - 1];
  int nn = (int)n;
  int64_t nstrips = (ny + HIST_STRIP - 1) / HIST_STRIP, nxb = (nx + HIST_BX - 1) / HIST_BX;

  ndf__hist_params p = {0};
  p.in = NDF__DPTR(in->data);
  p.out = NDF__DPTR(out->data);
  SET_YX(p, in, out, ny, nx, nlead);
  for (int d = 0; d < NDF_MAX_NDIM; d++) {
    p.lbox[d] = lbox[d];
    p.llo[d] = llo[d];
  }
  p.nplanes = nplanes;
  p.ky = ky;
  p.kx = kx;
  p.ylo = ylo;
  p.xlo = xlo;
  p.n = nn;
  p.nstrips = nstrips;
  p.nxb = nxb;
  p.nouter = nouter;
  p.cval = g->cval;
  return ndf__hist_launch(ctx, name, fn, ndf__grid(ctx, nxb * nstrips * nouter, 32), HIST_BX, 1, 0, &p);
}

static void tile_request(ndf_ctx *ctx, ndf_dtype dtype, const ndf__grey_geom *g, int64_t n, const ndf__rank_sel *sel,
                         const tile_geom *tg, ndf__kernel_req *req) {
  const int nsp = g->nsp;
  const int is_signed = dtype == NDF_INT8 || dtype == NDF_INT16 || dtype == NDF_INT32 || dtype == NDF_INT64;
  if (tg->form == 2) ndf__req_init(req, "rank_tile2", "ndf_rank_tile2");
  else ndf__req_init(req, "rank_tile", "ndf_rank_tile");
  ndf__req_set(req, "T", "%s", ndf__dtype_ctype(dtype));
  ndf__req_set(req, "KIND", "%d", ndf__dtype_is_float(dtype) ? 2 : is_signed ? 1 : 0);
  ndf__req_set(req, "TBITS", "%d", (int)(8 * ndf_dtype_size(dtype)));
  ndf__req_set(req, "MODE", "%d", (int)g->mode);
  ndf__req_set(req, "NAN_OMIT", "%d", ndf__dtype_is_float(dtype) && sel->nan_policy == NDF_RANK_NAN_OMIT);
  ndf__req_set(req, "N", "%lld", (long long)n);
  ndf__req_set(req, "RKIND", "%d", (int)sel->kind);
  if (sel->kind == 1) ndf__req_set(req, "RPARAM", "%lld", (long long)sel->rank);
  else if (sel->kind == 2) ndf__req_set(req, "RPARAM", "%.17g", sel->percentile);
  else ndf__req_set(req, "RPARAM", "0");
  ndf__req_set(req, "KY", "%d", (int)g->box[nsp - 2]);
  ndf__req_set(req, "KX", "%d", (int)g->box[nsp - 1]);
  ndf__req_set(req, "S", "%d", tg->s);
  if (tg->form == 1) ndf__req_set(req, "RP2", "%d", tg->rp2);
  /* The second form's sort: unrolled stages (default) or, with
   * rank.tile2_unroll=0, rolled (more instructions, 75 KB less code), =2
   * the unrolled form with its last six stages as a loop (about 40 KB less
   * code).  On the H200 (31x31 on 1024^2 float32) the rolled sort takes about
   * 15% more time than the unrolled one, =2 and =3 8% and 1% more. */
  /* =3: as 2 with each stage's transposes in a switch (no selects). */
  const ndf__tune_work tw = rank_work(dtype, g, n);
  if (tg->form == 2)
    ndf__req_set(req, "SORTU", "%s", ndf__tunables[NDF__TUNE_RANK_TILE2_UNROLL].values[ndf__tune(ctx, NDF__TUNE_RANK_TILE2_UNROLL, &tw)]);
  /* PIPE (ADR 0005): 1 issues the shared loads ahead of the atomics (27% less
   * time than 0, which does not, at 31x31 on 1024^2 on the H200); 2 also
   * shares the first window between the two threads of a column; 3 is 1
   * with fewer instructions per flip, probe, walk, load and sort; 4 is 3 with
   * the first window shared by the two threads of a column within one warp;
   * 5 and 6 are 3 with the first windows of groups of 8 (5) or 4 (6)
   * neighbouring columns built mostly once, 7 is 5 with a select in a word
   * of less latency, 8 is 6 with 32 rank searches at a time instead of 16;
   * 10 keeps no bitsets (pivots over the ranks' positions).  Of 0..8, 6 is
   * the fastest at 31x31 on 1024^2 (H200, float32 and uint8: 3-5% less time
   * than 3), so it is the default where 10 does not apply (tile2_pipe_for).
   * rank.tile2_pipe=0..8 or 10 selects one. */
  if (tg->form == 2) ndf__req_set(req, "PIPE", "%d", tg->pipe);
}

/* The sorted-tile kernel over a 2-D box window (ndf_tile_params of templates/rank_tile.cu). */
static ndf_status run_tile(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out,
                           const ndf__grey_geom *g, int64_t n, const ndf__rank_sel *sel) {
  const int ndim = in->ndim, nsp = g->nsp, nlead = ndim - 2;
  const int ky = (int)g->box[nsp - 2], kx = (int)g->box[nsp - 1], ylo = (int)g->lo[nsp - 2], xlo = (int)g->lo[nsp - 1];
  int64_t ny = in->shape[ndim - 2], nx = in->shape[ndim - 1];
  tile_geom tg;
  const ndf__tune_work tw = rank_work(in->dtype, g, n);
  if (!tile_choose(ctx, &tw, ky, kx, ny, &tg)) /* rank.c has checked ndf__rank_tile_applies */
    return ndf__error(ctx, NDF_ENOTSUP, "%s: the window is too large for the sorted-tile kernel", name);
  /* rank.tile_s (even, below the plan's rows) shrinks the rows per block:
   * more, smaller blocks (waves, occupancy) against a larger share of the
   * sort per output. */
  const int s2 = ndf__tune(ctx, NDF__TUNE_RANK_TILE_S, &tw);
  if (s2 >= 2 && s2 % 2 == 0 && s2 < tg.s) {
    const int64_t r = (int64_t)(s2 + ky - 1) * (31 + kx);
    int p2 = 64;
    while (p2 < r) p2 *= 2;
    if (tg.form == 2) tg.s = s2;
    else tg.s = s2, tg.rp2 = p2, tg.smem = tile_smem(s2, ky, kx, p2);
  }
  tile2_finish(ctx, &tw, in->dtype, ky, kx, ny, nx, &tg);
  ndf__kernel_req req;
  tile_request(ctx, in->dtype, g, n, sel, &tg, &req);
  CUfunction fn;
  ndf_status s = ndf__jit_get(ctx, name, &req, &fn);
  ndf__req_free(&req);
  if (s != NDF_OK) return s;
  if (tg.smem > SMEM_DEFAULT) {
    CUresult r = ndf__cu(NULL)->cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)tg.smem);
    if (r != CUDA_SUCCESS)
      return ndf__error(ctx, NDF_ENOTSUP, "%s: the sorted tile needs %zu bytes of shared memory per block, more "
                        "than this device allows", name, tg.smem);
  }
  if (ndf_array_size(in) == 0) return NDF_OK;
  int64_t nouter = 1;
  for (int d = 0; d < nlead; d++) nouter *= in->shape[d];
  int64_t nstrips = (ny + tg.s - 1) / tg.s, nxb = (nx + 31) / 32;
  ndf__tile_params p = {0};
  p.in = NDF__DPTR(in->data);
  p.out = NDF__DPTR(out->data);
  SET_YX(p, in, out, ny, nx, nlead);
  p.ylo = ylo;
  p.xlo = xlo;
  p.nstrips = nstrips;
  p.nxb = nxb;
  p.nouter = nouter;
  p.cval = g->cval;
  const int per_sm = (int)(228 * 1024 / (tg.smem + 1024));
  return ndf__tile_launch(ctx, name, fn, ndf__grid(ctx, nxb * nstrips * nouter, per_sm > 0 ? per_sm : 1), TILE_BT, 1,
                          (unsigned)tg.smem, &p);
}

ndf_status ndf__rank_cuda_request(ndf_ctx *ctx, const char *name, ndf_dtype dtype, int ndim, const int64_t *shape,
                                  const ndf__grey_geom *g, const int32_t *taps, int64_t n, const ndf__rank_sel *sel,
                                  ndf__kernel_req *req) {
  if (use_tile(ctx, dtype, g, n, sel)) {
    tile_geom tg;
    const ndf__tune_work tw = rank_work(dtype, g, n);
    if (!tile_choose(ctx, &tw, (int)g->box[g->nsp - 2], (int)g->box[g->nsp - 1],
                     shape && ndim >= 2 ? shape[ndim - 2] : 1 << 20, &tg))
      return ndf__error(ctx, NDF_ENOTSUP, "%s: the window is too large for the sorted-tile kernel", name);
    tile2_finish(ctx, &tw, dtype, (int)g->box[g->nsp - 2], (int)g->box[g->nsp - 1], shape && ndim >= 2 ? shape[ndim - 2] : 0,
                 shape && ndim >= 2 ? shape[ndim - 1] : 0, &tg);
    tile_request(ctx, dtype, g, n, sel, &tg, req);
    return NDF_OK;
  }
  if (use_hist(dtype, g, n, sel)) {
    hist_request(dtype, g, sel, req);
    return NDF_OK;
  }
  rank_geom rg;
  return build(ctx, name, dtype, ndim, shape, g, taps, n, sel, req, &rg);
}

ndf_status ndf__rank_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out,
                          const ndf__grey_geom *g, const int32_t *taps, int64_t n, const ndf__rank_sel *sel) {
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  if (use_tile(ctx, in->dtype, g, n, sel)) return run_tile(ctx, name, in, out, g, n, sel);
  if (use_hist(in->dtype, g, n, sel)) return run_hist(ctx, name, in, out, g, n, sel);
  ndf__kernel_req req;
  rank_geom rg;
  if ((s = build(ctx, name, in->dtype, in->ndim, in->shape, g, taps, n, sel, &req, &rg)) != NDF_OK) return s;
  CUfunction fn;
  s = ndf__jit_get(ctx, name, &req, &fn);
  ndf__req_free(&req);
  if (s != NDF_OK) return s;
  const ndf__cu_api *cu = ndf__cu(NULL);
  if (rg.smem > SMEM_DEFAULT) {
    CUresult r = cu->cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)rg.smem);
    if (r != CUDA_SUCCESS)
      return ndf__error(ctx, NDF_ENOTSUP, "%s: the window needs %zu bytes of shared memory per block, more than "
                        "this device allows", name, rg.smem);
  }
  if (ndf_array_size(in) == 0) return NDF_OK;

  const int ndim = in->ndim;
  int64_t ny = ndim >= 2 ? in->shape[ndim - 2] : 1, nx = in->shape[ndim - 1];
  int64_t iys = ndim >= 2 ? in->strides[ndim - 2] : 0, oys = ndim >= 2 ? out->strides[ndim - 2] : 0;
  int64_t ntx = (nx + RANK_TX - 1) / RANK_TX, nty = (ny + rg.ty * rg.ry - 1) / (rg.ty * rg.ry), nouter = 1;
  int64_t lblocks[NDF_MAX_NDIM];
  for (int d = 0; d < rg.nlead; d++) {
    lblocks[d] = (rg.rz > 1 && d == rg.nlead - 1) ? (in->shape[d] + rg.rz - 1) / rg.rz : in->shape[d];
    nouter *= lblocks[d];
  }

  ndf__rank_params p = {0};
  p.in = NDF__DPTR(in->data);
  p.out = NDF__DPTR(out->data);
  p.ny = ny;
  p.nx = nx;
  p.iys = iys;
  p.ixs = in->strides[ndim - 1];
  p.oys = oys;
  p.oxs = out->strides[ndim - 1];
  p.nlead = rg.nlead;
  ndf__axes(p.lshape, rg.nlead, in->shape);
  ndf__axes(p.listr, rg.nlead, in->strides);
  ndf__axes(p.lostr, rg.nlead, out->strides);
  ndf__axes(p.lblocks, rg.nlead, lblocks);
  p.ntx = ntx;
  p.nty = nty;
  p.nouter = nouter;
  p.ylo = rg.ylo;
  p.xlo = rg.xlo;
  p.cval = g->cval;

  return ndf__rank_launch(ctx, name, fn, ndf__grid(ctx, ntx * nty * nouter, 32), RANK_TX, (unsigned)rg.ty,
                          (unsigned)rg.smem, &p);
}
