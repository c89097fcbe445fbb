/*
 * distance_cuda.c -- the CUDA backend of distance_transform_edt: one launch
 * per spatial axis (0 .. n-1, scipy's order) over the whole batch, each a
 * specialization of templates/distance_edt.cu.  The first pass of an axis
 * other than the last runs ndf_edt_first (segmented scans: W = 0 needs no
 * envelope), later ones ndf_edt_wlines (a warp per line, lines staged in
 * shared memory; exact arithmetic) or ndf_edt_lines (a thread per line,
 * threads along the contiguous axis); the last axis runs ndf_edt_wrows (a
 * warp per row: exact arithmetic or few rows, see edt_wrows_plan) or
 * ndf_edt_rows (a thread per row through a shared-memory tile).  The first
 * pass reads the input, the last writes the outputs; passes in between
 * ping-pong between two scratch buffers of (feature int32, W double) per
 * voxel, and ndf_edt_lines / ndf_edt_rows keep their envelopes in a third
 * (W, position, feature: 16 bytes per voxel).  Results are bit-identical to
 * the CPU backend.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distance/distance.h"
#include "jit.h"
#include "kernel_params.generated.h"
#include "tune.h"

/* A tunable (tune.h) of a distance call: its workload is the input's
 * dtype, spatial axes and elements. */
static int dist_tune(ndf_ctx *ctx, const ndf_array *in, int nb, int id) {
  const ndf__tune_work w = {in->dtype, in->ndim - nb, ndf_array_size(in), 0};
  return ndf__tune(ctx, id, &w);
}

/* The kernel of pass d of nsp: the last axis runs ndf_edt_wrows or
 * ndf_edt_rows (edt_wrows_plan); the first pass of any other axis
 * ndf_edt_first (W = 0: segmented scans, no envelope); the passes in between
 * ndf_edt_wlines or ndf_edt_lines (edt_wlines_plan). */
static const char *edt_kernel(int d, int nsp, int wrows, int wlines, int first1k) {
  return d == nsp - 1 ? (wrows ? "ndf_edt_wrows" : "ndf_edt_rows")
         : d == 0     ? (first1k == 2 ? "ndf_edt_bfirst" : first1k ? "ndf_edt_first1k" : "ndf_edt_first")
                      : (wlines ? "ndf_edt_wlines" : "ndf_edt_lines");
}

/* ndf_edt_first's configuration: the 512-thread kernel with blocks of down
 * to 4 lines (more blocks for few lines), or (first1k) ndf_edt_first1k,
 * 1024-thread blocks of at least 8 lines (8 adjacent lines: every warp
 * access covers whole 32-byte sectors of the features).  The second is the
 * default without exact arithmetic (16% less time on the 1024^2 sampling +
 * indices workload); edt.first=512 / 1024 forces one.  Returns 2 for
 * ndf_edt_bfirst (the search path's bit-mask first pass with the envelope
 * kernels' output; 512 threads, segments of at most 32 voxels, so axis 0 up
 * to 16384): the default there without exact arithmetic, forced by
 * edt.first=bits. */
static int edt_first1k(ndf_ctx *ctx, const ndf_array *in, int nb, int exact, int64_t n0) {
  const int v = dist_tune(ctx, in, nb, NDF__TUNE_EDT_FIRST);
  if (v == NDF__TUNE_EDT_FIRST__512) return 0;
  if (v == NDF__TUNE_EDT_FIRST__1024) return 1;
  if (n0 <= 16384 && (v == NDF__TUNE_EDT_FIRST__BITS || !exact)) return 2;
  return !exact;
}

/* The last pass of an image of 2+ spatial axes runs ndf_edt_wrows (a warp per
 * row, the envelope in shared memory) instead of ndf_edt_rows (a thread per
 * row) when the arithmetic is exact (any number of rows: every warp busy), or
 * when there are too few rows to fill the GPU (fewer than EDT_WROWS_LINES);
 * always / never under edt.rows=warp / tile (edt.rows=serial: warp,
 * without the exact-arithmetic segments).  Its shared memory (one warp's)
 * must fit the default 48 KiB; a block takes up to 4 rows (warps). */
#define EDT_WROWS_LINES 32768
#define EDT_WROWS_SMEM (48 * 1024)

typedef struct edt_wplan {
  int use, exact, warps; /* warps: rows (warps) per block */
  int wfast;             /* without exact arithmetic: 0 lane 0's envelope (ndf_wenv), 1 ndf_wenv1, 2 the warp's (ndf_wenvp) */
  int64_t seg, stride, wbytes;
  unsigned smem; /* per block */
} edt_wplan;

/* Exact arithmetic: every sampling an integer and every term of the
 * envelope test (at most 4 S (W + S^2), S = the longest axis times its
 * sampling, W = the largest squared distance) below 2^52, so no double
 * operation of a pass rounds (docs/adr/0007-distance-transforms.md). */
static int edt_exact(const ndf_array *in, int nb, const double *sampling) {
  const int nsp = in->ndim - nb;
  double smax = 0.0, wmax = 0.0;
  for (int d = 0; d < nsp; d++) {
    const double sd = sampling[d];
    if (!(sd >= 1.0 && sd <= 1048576.0) || sd != (double)(int64_t)sd) return 0;
    const double e = (double)in->shape[nb + d] * sd;
    smax = e > smax ? e : smax;
    wmax += e * e;
  }
  return 4.0 * smax * (wmax + smax * smax) < 4503599627370496.0;
}

/* W between passes as uint32 (templates/distance_edt.cu, slot WT): exact
 * arithmetic and every W (at most the sum over the axes of (length x
 * sampling)^2) below 2^32; edt.w=double keeps doubles. */
static int edt_w32(ndf_ctx *ctx, const ndf_array *in, int nb, const double *sampling) {
  if (dist_tune(ctx, in, nb, NDF__TUNE_EDT_W) == NDF__TUNE_EDT_W__DOUBLE || !edt_exact(in, nb, sampling)) return 0;
  double wmax = 0.0;
  for (int d = 0; d < in->ndim - nb; d++) {
    const double e = (double)in->shape[nb + d] * sampling[d];
    wmax += e * e;
  }
  return wmax < 4294967296.0;
}

static edt_wplan edt_wrows_plan(ndf_ctx *ctx, const ndf_array *in, int nb, const double *sampling) {
  edt_wplan w = {0, 0, 0, 0, 0, 0, 0, 0};
  const int nd = in->ndim;
  if (nd - nb < 2) return w;
  const int64_t n = in->shape[nd - 1], nlines = ndf_array_size(in) / (n > 0 ? n : 1);
  const int rows = dist_tune(ctx, in, nb, NDF__TUNE_EDT_ROWS);
  const int force = rows == NDF__TUNE_EDT_ROWS__WARP, serial = rows == NDF__TUNE_EDT_ROWS__SERIAL;
  if (rows == NDF__TUNE_EDT_ROWS__TILE) return w;
  w.exact = !serial && edt_exact(in, nb, sampling);
  if (!force && !serial && !w.exact && nlines >= EDT_WROWS_LINES) return w;
  if (w.exact) {
    w.seg = (n + 31) / 32;
    w.stride = w.seg + (w.seg % 2 == 0); /* odd: the lanes' segments start in different banks */
    w.wbytes = 32 * w.stride * 16;
  } else { /* the envelope (16 bytes per site), then the walk's state per position (int) */
    w.seg = w.stride = n;
    w.wbytes = (n * 20 + 15) & ~(int64_t)15; /* each warp's region 16-byte aligned */
    /* The envelope's builder: edt.serial=old lane 0 (ndf_wenv), =new lane 0
     * (ndf_wenv1), auto the warp (ndf_wenvp: 32 segments of an odd stride, sites, two int
     * arrays and a byte array, 25 bytes per slot) where that fits 48 KiB (rows up to ~1900),
     * else lane 0. */
    const int env_serial = dist_tune(ctx, in, nb, NDF__TUNE_EDT_SERIAL);
    w.wfast = env_serial == NDF__TUNE_EDT_SERIAL__NEW ? 1 : 0;
    const int64_t pseg = (n + 31) / 32, pstride = pseg + (pseg % 2 == 0), pbytes = (32 * pstride * 25 + 15) & ~(int64_t)15;
    const int serial = env_serial != NDF__TUNE_EDT_SERIAL__AUTO;
    if (!serial && pbytes <= EDT_WROWS_SMEM) {
      w.wfast = 2;
      w.seg = pseg;
      w.stride = pstride;
      w.wbytes = pbytes;
    }
  }
  if (w.wbytes > EDT_WROWS_SMEM) return w;
  w.warps = (int)(EDT_WROWS_SMEM / w.wbytes);
  if (w.warps > 4) w.warps = 4;
  /* Without exact arithmetic one row per block (several rows per block are
   * slower on the 1024^2 sampling + indices workload);
   * edt.warps=1..4 forces the rows per block (within 48 KiB). */
  if (!w.exact) w.warps = 1;
  const int want = dist_tune(ctx, in, nb, NDF__TUNE_EDT_WARPS);
  if (want) w.warps = want * w.wbytes <= EDT_WROWS_SMEM ? want : w.warps;
  if (w.warps > nlines) w.warps = (int)(nlines > 0 ? nlines : 1);
  w.smem = (unsigned)(w.warps * w.wbytes);
  w.use = 1;
  return w;
}

/* The middle passes (axes 1 .. nsp-2 of 3+ spatial axes) run ndf_edt_wlines
 * (a warp per line, lw adjacent lines per block staged through shared
 * memory) when the arithmetic is exact and lw >= 1 lines fit in 48 KiB
 * (lines up to ~1600 voxels), else, and under edt.lines=thread,
 * ndf_edt_lines (a thread per line, its envelope in global scratch). */
typedef struct edt_lplan {
  int use, lw;
  int64_t seg, stride, wbytes, pitch;
  unsigned smem;
} edt_lplan;

static edt_lplan edt_wlines_plan(ndf_ctx *ctx, const ndf_array *in, int nb, const double *sampling, int axis) {
  edt_lplan w = {0, 0, 0, 0, 0, 0, 0};
  if (dist_tune(ctx, in, nb, NDF__TUNE_EDT_LINES) == NDF__TUNE_EDT_LINES__THREAD) return w;
  if (!edt_exact(in, nb, sampling)) return w;
  const int64_t n = in->shape[axis], nlines = ndf_array_size(in) / (n > 0 ? n : 1);
  w.seg = (n + 31) / 32;
  w.stride = w.seg + (w.seg % 2 == 0);
  w.wbytes = (32 * w.stride + 1) * 16; /* + 16: the warps' regions start in different banks */
  w.pitch = n + (n % 2 == 0);           /* odd: the output tile's rows start in different banks */
  const int64_t per_line = w.wbytes + 12 * w.pitch;
  int64_t lw = (EDT_WROWS_SMEM - 128) / per_line; /* 128: the kernel's static shared memory (lbase) */
  if (lw > 8) lw = 8;
  if (lw > nlines) lw = nlines;
  if (lw < 1) return w;
  w.lw = (int)lw;
  w.smem = (unsigned)(lw * per_line);
  w.use = 1;
  return w;
}

static void edt_request(ndf__kernel_req *r, const char *kernel, ndf_dtype tin, ndf_dtype dout, int first, int last,
                        int has_dist, int has_idx, int w32) {
  /* Slots that do not change the pass get one value, so passes share kernels. */
  ndf__req_distance_edt(r, kernel, first ? tin : NDF_UINT8,
                        last && has_dist && dout == NDF_FLOAT32 ? "float" : "double",
                        w32 && !(first && last) ? "unsigned int" : "double", first, last, last ? has_dist : 0,
                        last ? has_idx : 0);
}

/* The search path (templates/distance_edt.cu, ndf_edt_s*): with exact
 * arithmetic and every W below 2^32 (edt_w32) no pass needs an envelope;
 * each voxel searches outwards for its nearest site (cost ~ its distance
 * along the axis).  Passes: ndf_edt_sfirst (axis 0, ndf_edt_first's
 * segmented scans), ndf_edt_smid (middle axes: lw = 8..32 lines per block
 * staged whole in shared memory), ndf_edt_srows (last axis: R rows per
 * block).  Between passes W (uint32) and, with indices, the feature (int32).
 * A line whose search goes past radius scap (edt.scap, default 64) is
 * answered from its exact envelope instead (ndf_senv / ndf_squery, in the
 * same block), so the work per voxel stays bounded whatever the input.
 * Taken for 2+ spatial axes when every W stays below 2^30 and every staged
 * block fits 48 KiB, unless
 * edt.search=off or one of the envelope kernels' switches (edt.rows,
 * edt.lines, edt.merge, edt.w) is set. */
#define EDT_SEARCH_BUDGET (28 * 1024) /* per block: 8 blocks (64 warps) per SM */

typedef struct edt_splan {
  int use, scap; /* scap: the longest search (radius) before a line's envelope answers it */
  int64_t lw[NDF_MAX_SPATIAL]; /* lines (middle) or rows (last) per block; unused for pass 0 */
  unsigned smem[NDF_MAX_SPATIAL];
  int dk[NDF_MAX_SPATIAL]; /* 1: ndf_edt_sdrows / ndf_edt_sdmid, 2: ndf_edt_sdmidt (distances only, padded staging) */
} edt_splan;

/* Distances only (no indices), the middle and last passes default to
 * ndf_edt_sdmid / ndf_edt_sdrows: no position kept, one add-and-min per
 * candidate, lines staged with edt_spad cells of NDF_WNONE past both ends (no
 * bounds tests); edt.smid=old / edt.srows=old keep ndf_edt_smid /
 * ndf_edt_srows; edt.smid=t takes ndf_edt_sdmidt (lanes along a line,
 * lines staged transposed, answers through a shared tile; an alternative,
 * exercised by test_gpu_distance's mode 12) instead of ndf_edt_sdmid (lanes
 * across lines, as ndf_edt_smid; about a third less time than ndf_edt_smid in
 * the 256^3 middle pass).  They need ((n + 8) s)^2 below 2^30 on the pass's axis
 * (radii up to n + 2 are read, past the line's end). */
static int edt_spad(int64_t n, int scap) { return (int)((scap < n - 1 ? scap : n - 1) + 3); }

/* ndf_spitch: the transposed line pitch, at least n + pad and 32 / lw modulo 32. */
static int64_t edt_spitch(int64_t n, int64_t pad, int64_t lw) {
  const int64_t q = n + pad, m = 32 / lw;
  return q + (((m - q) % 32) + 32) % 32;
}

static int edt_sdist(ndf_ctx *ctx, const ndf_array *in, int nb, int last, int64_t n, double s) {
  const int v = dist_tune(ctx, in, nb, last ? NDF__TUNE_EDT_SROWS : NDF__TUNE_EDT_SMID);
  if (last ? v == NDF__TUNE_EDT_SROWS__OLD : v == NDF__TUNE_EDT_SMID__OLD) return 0;
  const double e = (double)(n + 8) * s;
  if (!(e * e < 1073741824.0)) return 0;
  return last || v != NDF__TUNE_EDT_SMID__T ? 1 : 2;
}

static edt_splan edt_search_plan(ndf_ctx *ctx, const ndf_array *in, int nb, const double *sampling, int has_idx) {
  edt_splan sp;
  memset(&sp, 0, sizeof sp);
  if (dist_tune(ctx, in, nb, NDF__TUNE_EDT_SEARCH) == NDF__TUNE_EDT_SEARCH__OFF) return sp;
  /* a variant of the envelope kernels asked for: those run */
  if (ndf__tune_is_set(ctx, NDF__TUNE_EDT_ROWS) || ndf__tune_is_set(ctx, NDF__TUNE_EDT_LINES) ||
      ndf__tune_is_set(ctx, NDF__TUNE_EDT_MERGE))
    return sp;
  const int nd = in->ndim, nsp = nd - nb;
  if (nsp < 2 || !edt_w32(ctx, in, nb, sampling)) return sp;
  double wmax = 0.0; /* every W + (r s)^2 below 2^30 (templates/distance_edt.cu: NDF_WNONE) */
  for (int d = 0; d < nsp; d++) {
    const double e = (double)in->shape[nb + d] * sampling[d];
    wmax += e * e;
  }
  if (!(wmax < 1073741824.0)) return sp;
  /* edt.scap=r: the longest search before a line falls back to its envelope (default 64; tests use 1-3) */
  sp.scap = dist_tune(ctx, in, nb, NDF__TUNE_EDT_SCAP);
  if (in->shape[nb] > 16384) return sp; /* ndf_edt_sfirst: 512 segments of at most 32 voxels */
  /* staged per voxel: W (4), the feature (4, with indices), the fallback envelope's position (2) */
  const int64_t N = ndf_array_size(in), bpv = has_idx ? 10 : 6;
  const int64_t want = 4 * (int64_t)(ctx->sm_count > 0 ? ctx->sm_count : 132); /* blocks */
  for (int d = 1; d < nsp; d++) {
    const int64_t n = in->shape[nb + d], nlines = N / n;
    if (n > 65535) return sp;
    /* bytes of lw lines (rows): per voxel as above; ndf_edt_sd*: W and the stack's position (6), plus the pads
     * (middle: 2 pad rows per line; last: pad cells per row and one more run); ndf_edt_sdmidt: the transposed
     * lines (pitch edt_spitch, one pad run more) and the answer tile n (lw + 1) (the stacks reuse it).  A kernel
     * that does not fit 48 KiB gives way to the next (sdmidt, sdmid, smid; sdrows, srows). */
    const int64_t pad = edt_spad(n, sp.scap);
    int dk = has_idx ? 0 : edt_sdist(ctx, in, nb, d == nsp - 1, n, sampling[d]), fits = 0;
#define EDT_SBYTES(lw)                                                                                          \
  (dk == 2 ? 4 * (edt_spitch(n, pad, lw) - n + (lw) * edt_spitch(n, pad, lw)) + 4 * n * ((lw) + 1)                 \
   : dk    ? (d < nsp - 1 ? (lw) * (n * 6 + 8 * pad) : (lw) * (n * 6 + 4 * pad) + 4 * pad)                           \
           : (lw) * n * bpv)
    int64_t lw = 1;
    for (; dk >= 0 && !fits; dk--) {
      if (d < nsp - 1) { /* 32, 16 or 8 lines: 8+ keep every access a whole 32-byte sector */
        lw = 32;
        while (lw > 8 && (EDT_SBYTES(lw) > EDT_SEARCH_BUDGET || (nlines + lw - 1) / lw < want)) lw /= 2;
      } else { /* 1 .. 32 rows */
        lw = 32;
        while (lw > 1 && EDT_SBYTES(lw) > EDT_SEARCH_BUDGET) lw--;
        while (lw > 1 && (nlines + lw - 1) / lw < want) lw /= 2;
      }
      /* the kernels' static shared memory: up to 640 bytes (ndf_edt_sdrows: 2688, its sqrt table) */
      fits = EDT_SBYTES(lw) <= EDT_WROWS_SMEM - (dk && d == nsp - 1 ? 3072 : 1024);
      if (fits) {
        sp.lw[d] = lw;
        sp.smem[d] = (unsigned)EDT_SBYTES(lw);
        sp.dk[d] = dk;
      }
    }
    if (!fits) return sp;
#undef EDT_SBYTES
  }
  sp.use = 1;
  return sp;
}

/* The fields of ndf_edt_params up to its sampling table (the W layout
 * fields are the caller's), for pass d along axis nb + d: it reads (sf, sw)
 * unless it is the first pass (which reads the input), writes (df, dw) unless
 * it is the last (which writes dist and idx). */
static void edt_head(ndf__edt_params *p, const ndf_array *in, const ndf_array *dist, const ndf_array *idx, int nb,
                     const double *sampling, int d, CUdeviceptr sf, CUdeviceptr sw, CUdeviceptr df, CUdeviceptr dw,
                     CUdeviceptr stack) {
  const int nd = in->ndim, nsp = nd - nb, axis = nb + d, first = d == 0, last = d == nsp - 1;
  int64_t inner = 1, npix = 1;
  for (int a = axis + 1; a < nd; a++) inner *= in->shape[a];
  for (int a = nb; a < nd; a++) npix *= in->shape[a];
  const int64_t n = in->shape[axis], nlines = ndf_array_size(in) / n;
  p->in = first ? NDF__DPTR(in->data) : 0;
  p->sfeat = first ? 0 : sf;
  p->sw = first ? 0 : sw;
  p->dfeat = last ? 0 : df;
  p->dw = last ? 0 : dw;
  p->stack = stack;
  p->dist = last && dist ? NDF__DPTR(dist->data) : 0;
  p->idx = last && idx ? NDF__DPTR(idx->data) : 0;
  p->nlines = nlines;
  p->n = n;
  p->inner = inner;
  p->s = sampling[d];
  p->nd = nd;
  p->nb = nb;
  p->axis = axis;
  p->npix = npix;
  ndf__axes(p->shape, nd, in->shape);
  ndf__axes(p->istr, nd, in->strides);
  for (int a = 0; a < nd; a++) {
    p->dstr[a] = dist ? dist->strides[a] : 0;
    p->xstr[a] = idx ? idx->strides[a < nb ? a : a + 1] : 0;
  }
  p->xk = idx ? idx->strides[nb] : 0;
  for (int k = 0; k < nsp; k++) p->samp[k] = sampling[k];
}

static ndf_status edt_search_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *dist, ndf_array *idx,
                                  int nb, const double *sampling, const edt_splan *sp, ndf__warm *warm) {
  const int nd = in->ndim, nsp = nd - nb, has_idx = idx != NULL;
  const int64_t N = ndf_array_size(in);
  const ndf_dtype dout = dist ? dist->dtype : NDF_FLOAT64;
  static const char *const kn[6] = {"ndf_edt_sfirst", "ndf_edt_smid",   "ndf_edt_srows",
                                    "ndf_edt_sdmid",  "ndf_edt_sdrows", "ndf_edt_sdmidt"};
  CUfunction fns[NDF_MAX_SPATIAL];
  ndf__kernel_req reqs[NDF_MAX_SPATIAL];
  const ndf__kernel_req *rp[NDF_MAX_SPATIAL];
  for (int d = 0; d < nsp; d++) {
    const int last = d == nsp - 1;
    ndf__req_distance_edt(&reqs[d], kn[d == 0 ? 0 : (last ? 2 : 1) + 2 * sp->dk[d]], d == 0 ? in->dtype : NDF_UINT8,
                          last && dist && dout == NDF_FLOAT32 ? "float" : "double", "unsigned int", d == 0, last,
                          last ? dist != NULL : 0, has_idx);
    rp[d] = &reqs[d];
  }
  /* the passes' kernels at once (a first call compiles them concurrently) */
  ndf_status s = ndf__jit_resolve_many(ctx, name, rp, nsp, warm, fns);
  if (s != NDF_OK || warm) return s;
  /* Two buffers (one for 2-D) of W (uint32) then, with indices, features (int32). */
  const int nbuf = nsp >= 3 ? 2 : 1;
  const size_t buf_bytes = ((size_t)N * (has_idx ? 8 : 4) + 255) & ~(size_t)255;
  CUdeviceptr scratch = 0;
  if ((s = ndf__scratch_alloc(ctx, (size_t)nbuf * buf_bytes, &scratch)) != NDF_OK) return s;
  CUdeviceptr w[2] = {0, 0}, f[2] = {0, 0};
  for (int k = 0; k < nbuf; k++) {
    w[k] = scratch + (size_t)k * buf_bytes;
    f[k] = has_idx ? w[k] + (size_t)N * 4 : 0;
  }
  for (int d = 0; d < nsp && s == NDF_OK; d++) {
    const int axis = nb + d, first = d == 0, last = d == nsp - 1;
    int64_t inner = 1;
    for (int a = axis + 1; a < nd; a++) inner *= in->shape[a];
    const int64_t n = in->shape[axis], nlines = N / n;
    const int src = nbuf == 1 ? 0 : (d + 1) % 2, dst = nbuf == 1 ? 0 : d % 2;
    ndf__edt_params p = {0};
    edt_head(&p, in, dist, idx, nb, sampling, d, f[src], w[src], f[dst], w[dst], 0);
    const int64_t slw = sp->lw[d];
    p.wexact = 1; /* wseg, wstride, wbytes, wpitch, wtree, wfast: 0 (the W kernels' fields) */
    p.slw = slw;
    p.scap = sp->scap;
    unsigned grid, bx = 256, by = 1, smem = 0;
    if (first) { /* as ndf_edt_first: 32 .. 4 lines x segments of 8 .. 32 voxels, 512 threads, 3 blocks per SM */
      const int64_t want = 6 * (int64_t)(ctx->sm_count > 0 ? ctx->sm_count : 132);
      int64_t lw = 32;
      while (lw > 4 && (nlines + lw - 1) / lw < want) lw /= 2;
      while (lw > 1 && (n + 512 / lw - 1) / (512 / lw) > 32) lw /= 2; /* segments of at most 32 (bit masks) */
      /* segments of 8+ voxels (edt.sfseg=1..32: the least length) */
      const int seg_env = dist_tune(ctx, in, nb, NDF__TUNE_EDT_SFSEG);
      int64_t segmin = seg_env ? seg_env : 8;
      int64_t nseg = (n + segmin - 1) / segmin;
      if (nseg > 512 / lw) nseg = 512 / lw;
      bx = (unsigned)lw;
      by = (unsigned)(nseg < 1 ? 1 : nseg);
      grid = ndf__grid(ctx, (nlines + lw - 1) / lw, 32);
    } else {
      smem = sp->smem[d];
      /* ndf_edt_sd*: a grid of the blocks that fit the SMs at once (launch bounds: sdmid 8 blocks, sdmidt and
       * sdrows 6; shared memory per SM from the device, 228 KiB on sm_90), one wave of grid-stride loops -- 8 per SM (the other
       * kernels' grid) would leave a third of a wave behind at 256^3; edt.sgrid=k: k blocks per SM) */
      const int sgrid = dist_tune(ctx, in, nb, NDF__TUNE_EDT_SGRID);
      int per_sm = sgrid ? sgrid : 8;
      if (!sgrid && sp->dk[d]) {
        const int64_t per_smem = ctx->smem_per_sm ? (int64_t)ctx->smem_per_sm : 233472;
        const int lb = sp->dk[d] == 1 && !last ? 8 : 6, fit = (int)(per_smem / ((int64_t)smem + 3072));
        per_sm = fit < 1 ? 1 : fit < lb ? fit : lb;
      }
      grid = ndf__grid(ctx, (nlines + slw - 1) / slw, per_sm);
    }
    s = ndf__edt_launch(ctx, name, fns[d], grid, bx, by, smem, &p);
  }
  ndf__scratch_free(ctx, scratch);
  return s;
}

ndf_status ndf__edt_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *dist, ndf_array *idx,
                         int nb, const double *sampling, ndf__warm *warm) {
  ndf_status s = warm ? NDF_OK : ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  const int nd = in->ndim, nsp = nd - nb;
  const int64_t N = ndf_array_size(in);
  const ndf_dtype dout = dist ? dist->dtype : NDF_FLOAT64;

  const edt_splan sp = edt_search_plan(ctx, in, nb, sampling, idx != NULL);
  if (sp.use) return edt_search_cuda(ctx, name, in, dist, idx, nb, sampling, &sp, warm);

  const edt_wplan wp = edt_wrows_plan(ctx, in, nb, sampling);
  const int first1k = edt_first1k(ctx, in, nb, edt_exact(in, nb, sampling), in->shape[nb]);
  const int w32 = edt_w32(ctx, in, nb, sampling);
  const size_t wsize = w32 ? 4 : 8; /* bytes of one W between passes */
  /* ndf_wenv merges the lanes' segments in a tree, or (edt.merge=serial) lane 0 in order. */
  int wtree = dist_tune(ctx, in, nb, NDF__TUNE_EDT_MERGE) != NDF__TUNE_EDT_MERGE__SERIAL;
  edt_lplan lp[NDF_MAX_SPATIAL];
  int need_stack = !wp.use; /* ndf_edt_rows (also 1-D) and ndf_edt_lines keep their envelopes in scratch */
  for (int d = 0; d < nsp; d++) {
    lp[d] = d > 0 && d < nsp - 1 ? edt_wlines_plan(ctx, in, nb, sampling, nb + d) : (edt_lplan){0, 0, 0, 0, 0, 0, 0};
    need_stack |= d > 0 && d < nsp - 1 && !lp[d].use;
  }

  /* Resolve every kernel before the first launch (a compile failure leaves the outputs untouched). */
  CUfunction fns[NDF_MAX_SPATIAL];
  ndf__kernel_req reqs[NDF_MAX_SPATIAL];
  const ndf__kernel_req *rp[NDF_MAX_SPATIAL];
  for (int d = 0; d < nsp; d++) {
    edt_request(&reqs[d], edt_kernel(d, nsp, wp.use, lp[d].use, first1k), in->dtype, dout, d == 0, d == nsp - 1,
                dist != NULL, idx != NULL, w32);
    rp[d] = &reqs[d];
  }
  if ((s = ndf__jit_resolve_many(ctx, name, rp, nsp, warm, fns)) != NDF_OK) return s; /* compiled concurrently */
  if (warm) return NDF_OK;

  /* Scratch: the envelopes (16 bytes per voxel: W, position, feature) where
   * a pass keeps them there, then one or two (W double or uint32, feature int32)
   * buffers.  ndf_edt_first, ndf_edt_wlines and ndf_edt_wrows keep none. */
  const int nbuf = nsp >= 3 ? 2 : nsp - 1;
  const size_t stack_bytes = need_stack ? (size_t)N * 16 : 0;
  /* Each buffer starts 256-byte aligned: with N odd, 12 N bytes would leave
   * the second buffer's doubles misaligned (CUDA_ERROR_MISALIGNED_ADDRESS). */
  const size_t buf_bytes = ((size_t)N * (wsize + 4) + 255) & ~(size_t)255;
  CUdeviceptr scratch = 0;
  if ((s = ndf__scratch_alloc(ctx, stack_bytes + (size_t)nbuf * buf_bytes, &scratch)) != NDF_OK) return s;
  CUdeviceptr w[2] = {0, 0}, f[2] = {0, 0};
  for (int k = 0; k < nbuf; k++) {
    w[k] = scratch + stack_bytes + (size_t)k * buf_bytes;
    f[k] = w[k] + (size_t)N * wsize;
  }

  for (int d = 0; d < nsp && s == NDF_OK; d++) {
    const int axis = nb + d, first = d == 0, last = d == nsp - 1;
    int64_t inner = 1;
    for (int a = axis + 1; a < nd; a++) inner *= in->shape[a];
    const int64_t n = in->shape[axis], nlines = N / n;
    const int src = (d + 1) % 2, dst = d % 2;

    ndf__edt_params p = {0};
    edt_head(&p, in, dist, idx, nb, sampling, d, f[src], w[src], f[dst], w[dst], scratch);
    const int wl = lp[d].use;
    p.wseg = wl ? lp[d].seg : wp.seg;
    p.wstride = wl ? lp[d].stride : wp.stride;
    p.wexact = wl ? 1 : wp.exact;
    p.wbytes = wl ? lp[d].wbytes : wp.wbytes;
    p.wpitch = lp[d].pitch;
    p.wtree = wtree;
    /* slw, scap: 0 (the search kernels' fields) */
    /* ndf_edt_wrows without exact arithmetic: the warp's envelope (ndf_wenvp, default), or lane 0's
     * by ndf_wenv (edt.serial=old) or ndf_wenv1 (edt.serial=new): edt_wrows_plan */
    p.wfast = wp.wfast;

    /* rows: a warp per 32 rows; first: 32 lines x nseg segments of about 32 voxels; lines: 128 lines. */
    unsigned bx = 128, by = 1;
    int64_t per_block = 128;
    if (last) {
      bx = 32;
      per_block = 32;
    } else if (first) {
      /* Lines per block: 32, or 16 / 8 / 4 while that leaves fewer than
       * two waves of 3 blocks per SM (a 2-D image: 1024 lines); segments
       * of 8+ voxels, at most 512 threads per block. */
      /* ndf_edt_first1k (edt_first1k): 32 lines, or 16 / 8 while that
       * leaves fewer than two blocks per SM; at most 1024 threads. */
      /* ndf_edt_bfirst (first1k == 2): as ndf_edt_first, with segments of at most 32 voxels (bit masks). */
      const int k1 = first1k == 1;
      const int64_t maxt = k1 ? 1024 : 512, minlw = k1 ? 8 : 4;
      const int64_t want = (k1 ? 2 : 6) * (int64_t)(ctx->sm_count > 0 ? ctx->sm_count : 132);
      int64_t lw = 32;
      while (lw > minlw && (nlines + lw - 1) / lw < want) lw /= 2;
      if (first1k == 2)
        while (lw > 1 && (n + 512 / lw - 1) / (512 / lw) > 32) lw /= 2;
      int64_t nseg = (n + 7) / 8;
      if (nseg > maxt / lw) nseg = maxt / lw; /* __launch_bounds__(512, 3) / (1024) */
      bx = (unsigned)lw;
      by = (unsigned)(nseg < 1 ? 1 : nseg);
      per_block = lw;
    }
    /* ndf_edt_wrows' grid: 64 warps per SM, or (one row per block without
     * exact arithmetic) 32 blocks per SM. */
    const int wrows_per_sm = wp.warps == 1 && !wp.exact ? 32 : 64 / (wp.warps > 0 ? wp.warps : 1);
    if (last && wp.use) /* a warp per row, wp.warps rows per block */
      s = ndf__edt_launch(ctx, name, fns[d], ndf__grid(ctx, (nlines + wp.warps - 1) / wp.warps, wrows_per_sm), 32,
                          (unsigned)wp.warps, wp.smem, &p);
    else if (wl) /* a warp per line, lp[d].lw lines per block */
      s = ndf__edt_launch(ctx, name, fns[d], ndf__grid(ctx, (nlines + lp[d].lw - 1) / lp[d].lw, 64 / lp[d].lw),
                          32, (unsigned)lp[d].lw, lp[d].smem, &p);
    else
      s = ndf__edt_launch(ctx, name, fns[d], ndf__grid(ctx, (nlines + per_block - 1) / per_block, 32), bx, by, 0,
                          &p);
  }
  ndf__scratch_free(ctx, scratch);
  return s;
}

/* ---- distance_transform_cdt (distances; taxicab or chessboard) ------------------------------- */

/*
 * Separable passes of templates/distance_cdt.cu over the whole batch: pass 0
 * along the last axis (ndf_cdt_rows, a warp per row, reads the input; the
 * row staged in shared memory when 4 rows fit in 48 KiB, unless
 * cdt.rows=global), then axes 0 .. nsp-2: taxicab ndf_cdt_seg (lines
 * cut into segments, coalesced; cdt.lines=simple: ndf_cdt_lines),
 * chessboard ndf_cdt_ctile (8+ lines whole in shared memory, an outward
 * search per voxel) where a line of 1535 or fewer voxels fits, else (and
 * under cdt.lines=simple) ndf_cdt_lines (a thread per line, its deque in
 * scratch, coalesced); the last
 * pass writes the int32 output (-1 in an image without background).  Scratch:
 * one int32 buffer per voxel (two with 3+ spatial axes), and for chessboard
 * the per-line deques (8 bytes per voxel).  The caller has checked the
 * metric and that every spatial axis is shorter than 2^29.
 */
/* Lines per block of ndf_cdt_ctile on `axis` (32, 16 or 8: the most whose
 * lines fit in 48 KiB of shared memory, fewer while that leaves under two
 * blocks per SM), 0 when it does not run (taxicab, cdt.lines=simple, or
 * lines of more than 1535 voxels). */
#define CDT_SMEM (48 * 1024)
static int64_t ctile_lw(const ndf_array *in, int axis, const ndf_ctx *ctx, int simple, int chess) {
  if (!chess || simple) return 0;
  const int64_t n = in->shape[axis], nlines = ndf_array_size(in) / n;
  int64_t lw = 32;
  while (lw >= 8 && lw * (n + 1) * 4 > CDT_SMEM) lw /= 2;
  if (lw < 8) return 0;
  const int64_t want = 2 * (int64_t)(ctx->sm_count > 0 ? ctx->sm_count : 132);
  while (lw > 8 && (nlines + lw - 1) / lw < want) lw /= 2;
  return lw;
}

ndf_status ndf__cdt_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *dist, int nb, int chess,
                         ndf__warm *warm) {
  ndf_status s = warm ? NDF_OK : ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  const int nd = in->ndim, nsp = nd - nb;
  const int64_t N = ndf_array_size(in);

  const int simple = dist_tune(ctx, in, nb, NDF__TUNE_CDT_LINES) == NDF__TUNE_CDT_LINES__SIMPLE;
  const int seg = !chess && !simple;
  const int64_t nrow = in->shape[nd - 1];
  const int stage = 4 * nrow * 4 <= 48 * 1024 && dist_tune(ctx, in, nb, NDF__TUNE_CDT_ROWS) != NDF__TUNE_CDT_ROWS__GLOBAL;
  CUfunction fns[NDF_MAX_SPATIAL];
  ndf__kernel_req reqs[NDF_MAX_SPATIAL];
  const ndf__kernel_req *rp[NDF_MAX_SPATIAL];
  for (int k = 0; k < nsp; k++) {
    ndf__req_distance_cdt(&reqs[k],
                          k == 0                                            ? "ndf_cdt_rows"
                          : seg                                             ? "ndf_cdt_seg"
                          : ctile_lw(in, nb + k - 1, ctx, simple, chess) ? "ndf_cdt_ctile"
                                                                            : "ndf_cdt_lines",
                          k == 0 ? in->dtype : NDF_UINT8, k == nsp - 1, k == 0 ? 0 : chess);
    rp[k] = &reqs[k];
  }
  if ((s = ndf__jit_resolve_many(ctx, name, rp, nsp, warm, fns)) != NDF_OK) return s; /* compiled concurrently */
  if (warm) return NDF_OK;

  const int nbuf = nsp >= 3 ? 2 : nsp - 1;
  const size_t buf_bytes = ((size_t)N * 4 + 255) & ~(size_t)255;
  int need_dq = 0; /* a chessboard pass on ndf_cdt_lines */
  for (int k = 1; k < nsp; k++) need_dq |= chess && !ctile_lw(in, nb + k - 1, ctx, simple, chess);
  const size_t dq_bytes = need_dq ? (size_t)N * 8 : 0;
  CUdeviceptr scratch = 0;
  if (nbuf + dq_bytes > 0 && (s = ndf__scratch_alloc(ctx, (size_t)nbuf * buf_bytes + dq_bytes, &scratch)) != NDF_OK)
    return s;
  CUdeviceptr buf[2] = {0, 0};
  for (int k = 0; k < nbuf; k++) buf[k] = scratch + (size_t)k * buf_bytes;
  const CUdeviceptr dq = dq_bytes ? scratch + (size_t)nbuf * buf_bytes : 0;

  for (int k = 0; k < nsp && s == NDF_OK; k++) {
    const int axis = k == 0 ? nd - 1 : nb + k - 1, last = k == nsp - 1;
    int64_t inner = 1;
    for (int a = axis + 1; a < nd; a++) inner *= in->shape[a];
    const int64_t n = in->shape[axis], nlines = N / n;
    ndf__cdt_params p = {0};
    p.in = k == 0 ? NDF__DPTR(in->data) : 0;
    p.src = k == 0 ? 0 : buf[(k + 1) % 2];
    p.dst = last ? 0 : buf[k % 2];
    p.deque = k == 0 ? 0 : dq;
    p.out = last ? NDF__DPTR(dist->data) : 0;
    p.nlines = nlines;
    p.n = n;
    p.inner = inner;
    p.nd = nd;
    p.axis = axis;
    ndf__axes(p.shape, nd, in->shape);
    ndf__axes(p.istr, nd, in->strides);
    ndf__axes(p.ostr, nd, dist->strides);
    p.stage = k == 0 && stage;
    if (k == 0) { /* a warp per row, 4 rows per block */
      s = ndf__cdt_launch(ctx, name, fns[k], ndf__grid(ctx, (nlines + 3) / 4, 32), 128, 1,
                          p.stage ? (unsigned)(4 * n * 4) : 0, &p);
    } else if (seg) {
      /* lw lines x nseg segments of 8+ voxels: 32 lines, or 16 / 8 when that
       * leaves fewer than two blocks per SM (as ndf_edt_first) */
      const int64_t want = 2 * (int64_t)(ctx->sm_count > 0 ? ctx->sm_count : 132);
      int64_t lw = 32;
      while (lw > 8 && (nlines + lw - 1) / lw < want) lw /= 2;
      int64_t nseg = (n + 7) / 8;
      if (nseg > 1024 / lw) nseg = 1024 / lw;
      if (nseg < 1) nseg = 1;
      s = ndf__cdt_launch(ctx, name, fns[k], ndf__grid(ctx, (nlines + lw - 1) / lw, 32), (unsigned)lw,
                          (unsigned)nseg, 0, &p);
    } else if (ctile_lw(in, axis, ctx, simple, chess)) {
      const int64_t lw = ctile_lw(in, axis, ctx, simple, chess);
      const int64_t by = n < 1024 / lw ? n : 1024 / lw;
      s = ndf__cdt_launch(ctx, name, fns[k], ndf__grid(ctx, (nlines + lw - 1) / lw, 32), (unsigned)lw, (unsigned)by,
                          (unsigned)(lw * (n + 1) * 4), &p);
    } else { /* a thread per line */
      s = ndf__cdt_launch(ctx, name, fns[k], ndf__grid(ctx, (nlines + 127) / 128, 32), 128, 1, 0, &p);
    }
  }
  if (scratch) ndf__scratch_free(ctx, scratch);
  return s;
}
