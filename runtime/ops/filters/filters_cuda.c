/*
 * filters_cuda.c -- the CUDA backend of the linear filters: requests the
 * specializations of templates/filter_line.cu (a correlation pass, weights
 * compiled in), filter_uniform.cu (a running-mean pass walked in parallel
 * segments where the running sum is exact: whole lines staged in shared
 * memory along the last axis, segments read straight from global memory
 * along the others; one thread per line where neither fits), filter_taps.cu (N-D
 * correlate) and filter_ew.cu (casts and the compositions' elementwise
 * steps), and launches them on the context's stream.  Every kernel computes
 * in double in scipy's order without fused operations, so the GPU equals the
 * CPU backend bit for bit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filters/filters.h"
#include "kernel_params.generated.h"
#include "tune.h"

/* Kernels with at most this many taps have their weights compiled in. */
#define WTAB_MIN 257
#define LINE_SMEM 49152

static int cvt_of(ndf_dtype t) {
  if (t == NDF_FLOAT32 || t == NDF_FLOAT64) return 2;
  if (t == NDF_UINT64) return 3;
  return t == NDF_UINT32 || t == NDF_INT64 ? 1 : 0;
}

static const char *utype_of(ndf_dtype t) {
  switch (t) {
    case NDF_UINT8: case NDF_INT8: return "unsigned char";
    case NDF_UINT16: case NDF_INT16: return "unsigned short";
    case NDF_UINT32: case NDF_INT32: return "unsigned int";
    case NDF_INT64: case NDF_UINT64: return "unsigned long long";
    default: return ndf__dtype_ctype(t);
  }
}

static int is_int(ndf_dtype t) { return t != NDF_FLOAT32 && t != NDF_FLOAT64; }

/* filter_uniform's tile kernel: 32 lines a block, chunks of UNI_S outputs
 * (fewer for long windows) staged with the window's K rows in shared memory
 * of at most UNI_ROWS rows; windows that leave chunks shorter than
 * UNI_MIN_S outputs run one thread per line (ndf_filter_uniform). */
#define UNI_C 32
#define UNI_S 64
#define UNI_ROWS 180
#define UNI_MIN_S 16

/* filter_uniform's exact and stream kernels: UNIX_T threads a block.  The
 * exact kernel stages along the last axis about UNIX_E values a block (a
 * power of 2 of lines, at most UNIX_T), along another axis UNIX_C lines
 * (fewer where they do not fit the shared memory, down to UNIX_MIN_C). */
#define UNIX_T 256
#define UNIX_E 4096
#define UNIX_C 32
#define UNIX_MIN_C 8

/* Outputs per chunk of the uniform tile kernel for a window of K; 0: the line kernel. */
static int uniform_chunk(int64_t K) {
  if (K > UNI_ROWS - UNI_MIN_S) return 0;
  return K + UNI_S <= UNI_ROWS ? UNI_S : (int)(UNI_ROWS - K);
}

/* Shared memory of the exact kernel for C lines of n: their offsets and
 * check keys (24 bytes a line), the lines as ti with an odd pitch, and along
 * the last axis the outputs as to with the same pitch. */
static size_t uniform_exact_smem(int C, int64_t n, ndf_dtype ti, ndf_dtype to, int last) {
  const size_t pitch = (size_t)(n | 1);
  size_t b = 24 * (size_t)C + ((size_t)C * pitch * ndf_dtype_size(ti) + 7) / 8 * 8;
  if (last) b += (size_t)C * pitch * ndf_dtype_size(to);
  return b;
}

/* Lines a block of the exact kernel for a pass along an axis of n (last:
 * the last axis): the most that fit the default 48 KiB of shared memory, else
 * the most that fit the device's limit; 0 where none fits. */
static int uniform_exact_lines(int64_t n, ndf_dtype ti, ndf_dtype to, int last, size_t max_smem) {
  int c0 = UNIX_C;
  if (last)
    for (c0 = 1; c0 < UNIX_T && (int64_t)c0 * 2 * n <= UNIX_E;) c0 *= 2;
  const size_t limits[2] = {LINE_SMEM, max_smem};
  for (int k = 0; k < 2; k++)
    for (int C = c0; C >= (last ? 1 : UNIX_MIN_C); C /= 2)
      if (uniform_exact_smem(C, n, ti, to, last) <= limits[k]) return C;
  return 0;
}

/* Lines a block of the stream kernel for lines of n: 32 (coalesced loads
 * along an axis other than the last), more for short lines, at most UNIX_T. */
static int uniform_stream_lines(int64_t n) {
  int C = 32;
  while (C < UNIX_T && C * 2 * n <= 8 * UNIX_T) C *= 2;
  return C;
}

/* The kernel of a uniform pass: the tunable filters.uniform's choice where it
 * fits, else the line kernel; auto: for inputs other than float64 the stream
 * kernel along an axis other than the last, the exact kernel along the last.
 * *S: the tile kernel's chunk; *C: the exact or stream kernel's lines a block. */
enum { UNI_LINE, UNI_TILE, UNI_EXACT, UNI_STREAM };
static int uniform_kernel(ndf_ctx *ctx, const ndf_array *src, const ndf_array *dst, const ndf__fpass *p, int *S,
                          int *C) {
  const ndf__tune_work w = {src->dtype, src->ndim, ndf_array_size(src), p->n};
  const int v = ndf__tune(ctx, NDF__TUNE_FILTERS_UNIFORM, &w);
  const int last = p->axis == src->ndim - 1;
  const int64_t n = src->shape[p->axis];
  *S = *C = 0;
  if (v == NDF__TUNE_FILTERS_UNIFORM__TILE) {
    *S = uniform_chunk(p->n);
    return *S ? UNI_TILE : UNI_LINE;
  }
  if (v == NDF__TUNE_FILTERS_UNIFORM__LINE || (v == NDF__TUNE_FILTERS_UNIFORM__AUTO && src->dtype == NDF_FLOAT64))
    return UNI_LINE;
  if (n > INT32_MAX / UNIX_T || p->n > INT32_MAX / 4) return UNI_LINE; /* the kernels index in int */
  if (v == NDF__TUNE_FILTERS_UNIFORM__STREAM || (v == NDF__TUNE_FILTERS_UNIFORM__AUTO && !last)) {
    *C = uniform_stream_lines(n);
    return UNI_STREAM;
  }
  *C = uniform_exact_lines(n, src->dtype, dst->dtype, last, ctx->max_smem_block);
  return *C ? UNI_EXACT : UNI_LINE;
}

/* The request of one pass (uk: a uniform pass's kernel, UNI_*); 0 when out of memory for its weights. */
static int req_pass(ndf__kernel_req *r, const ndf__fpass *p, ndf_dtype src, ndf_dtype dst, int last, int uk) {
  const char *ti = ndf__dtype_ctype(src), *to = ndf__dtype_ctype(dst);
  if (p->uniform) {
    static const char *const kernels[] = {"ndf_filter_uniform", "ndf_filter_uniform_tile", "ndf_filter_uniform_exact",
                                          "ndf_filter_uniform_stream"};
    ndf__req_filter_uniform(r, kernels[uk], ti, to, cvt_of(dst), (int)p->mode,
                            uk == UNI_TILE || uk == UNI_EXACT ? last : 0);
    return 1;
  }
  const int wtab = p->n >= WTAB_MIN;
  char *w = malloc(wtab ? 2 : (size_t)p->n * 32 + 1);
  if (!w) return 0;
  size_t at = 0;
  w[0] = '0';
  w[1] = 0;
  for (int64_t k = 0; !wtab && k < p->n; k++) at += (size_t)sprintf(w + at, "%s%a", k ? "," : "", p->w[k]);
  ndf__req_filter_line(r, ti, to, cvt_of(dst), (int)p->mode, last, p->sym, p->n > INT32_MAX ? 0 : (int)p->n, wtab, w);
  free(w);
  return 1;
}

/* Fills the axes of a line-pass struct P (ndf__fline_params, ndf__funi_params)
 * for axis a: its length and strides, the other axes in array order (shapes,
 * input and output strides), and nlines, their product. */
#define LINE_AXES(P, src, dst, a)                                                                                   \
  do {                                                                                                              \
    (P).n = (src)->shape[a];                                                                                        \
    (P).istr = (src)->strides[a];                                                                                   \
    (P).ostr = (dst)->strides[a];                                                                                   \
    (P).nother = (src)->ndim - 1;                                                                                   \
    (P).nlines = 1;                                                                                                 \
    for (int d_ = 0, i_ = 0; d_ < (src)->ndim; d_++) {                                                              \
      if (d_ == (a)) continue;                                                                                      \
      (P).oshape[i_] = (src)->shape[d_];                                                                            \
      (P).oistr[i_] = (src)->strides[d_];                                                                           \
      (P).oostr[i_] = (dst)->strides[d_];                                                                           \
      (P).nlines *= (src)->shape[d_];                                                                               \
      i_++;                                                                                                         \
    }                                                                                                               \
  } while (0)

/* Columns C and segment S of filter_line for K taps on an axis of n: the
 * widest block whose staging (S + K - 1 rows of C + 1 doubles, plus 16 bytes
 * per column) fits limit bytes with a segment of at least min(n, 8). */
static int line_geometry(int64_t K, int64_t n, size_t limit, int *cols, int *seg) {
  static const int cs[] = {128, 64, 32, 16, 8};
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
    const int c = cs[i];
    const int64_t rows = ((int64_t)limit - 16 * c) / ((int64_t)(c + 1) * 8);
    int64_t s = rows - K + 1;
    if (s > n) s = n;
    if (s > 256) s = 256;
    if (s >= (n < 8 ? n : 8) && s >= 1) {
      *cols = c;
      *seg = (int)s;
      return 1;
    }
  }
  return 0;
}

ndf_status ndf__filters_line_cuda(ndf_ctx *ctx, const char *name, const ndf_array *src, ndf_array *dst,
                                  const ndf__fpass *p, double cval) {
  if (ndf_array_size(src) == 0) return NDF_OK;
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  const int a = p->axis;
  ndf__kernel_req req;
  int S = 0, C = 0;
  const int uk = p->uniform ? uniform_kernel(ctx, src, dst, p, &S, &C) : UNI_LINE;
  if (!req_pass(&req, p, src->dtype, dst->dtype, a == src->ndim - 1, uk))
    return ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory for a kernel request", name);
  CUfunction fn;
  s = ndf__jit_get(ctx, name, &req, &fn);
  ndf__req_free(&req);
  if (s != NDF_OK) return s;
  const int64_t pre = p->n / 2 + p->origin;
  if (p->uniform) {
    ndf__funi_params pu = {.in = (CUdeviceptr)(uintptr_t)src->data,
                           .out = (CUdeviceptr)(uintptr_t)dst->data,
                           .K = p->n,
                           .pre = pre,
                           .cval = cval,
                           .S = S,
                           .C = C};
    LINE_AXES(pu, src, dst, a);
    if (uk == UNI_EXACT) {
      const size_t smem = uniform_exact_smem(C, pu.n, src->dtype, dst->dtype, a == src->ndim - 1);
      if (smem > LINE_SMEM) {
        CUresult r = ndf__cu(NULL)->cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem);
        if (r != CUDA_SUCCESS) return ndf__cuda_error(ctx, name, r);
      }
      return ndf__funi_launch(ctx, name, fn, ndf__grid(ctx, (pu.nlines + C - 1) / C, 16), UNIX_T, 1, (unsigned)smem,
                              &pu);
    }
    if (uk == UNI_STREAM)
      return ndf__funi_launch(ctx, name, fn, ndf__grid(ctx, (pu.nlines + C - 1) / C, 16), UNIX_T, 1, 0, &pu);
    if (uk == UNI_LINE) return ndf__funi_launch(ctx, name, fn, ndf__grid(ctx, (pu.nlines + 127) / 128, 16), 128, 1, 0, &pu);
    /* Shared memory: the lines' input and output offsets, then S + K rows of C + 1 doubles. */
    const unsigned smem = (unsigned)(16 * UNI_C + (pu.S + p->n) * (UNI_C + 1) * 8);
    return ndf__funi_launch(ctx, name, fn, ndf__grid(ctx, (pu.nlines + UNI_C - 1) / UNI_C, 32), UNI_C, 1, smem, &pu);
  }
  int cols = 0, seg = 0;
  size_t limit = LINE_SMEM;
  if (!line_geometry(p->n, src->shape[a], limit, &cols, &seg)) {
    limit = ctx->max_smem_block;
    if (limit <= LINE_SMEM || !line_geometry(p->n, src->shape[a], limit, &cols, &seg))
      return ndf__error(ctx, NDF_ENOTSUP, "%s: a kernel of %lld taps does not fit the shared memory of this device",
                        name, (long long)p->n);
  }
  const unsigned smem = (unsigned)(16 * (size_t)cols + (size_t)(seg + p->n - 1) * (size_t)(cols + 1) * 8);
  if (smem > LINE_SMEM) {
    CUresult r = ndf__cu(NULL)->cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem);
    if (r != CUDA_SUCCESS) return ndf__cuda_error(ctx, name, r);
  }
  CUdeviceptr wt = 0;
  if (p->n >= WTAB_MIN && (s = ndf__device_table(ctx, p->w, (size_t)p->n * sizeof(double), &wt)) != NDF_OK) return s;
  ndf__fline_params pl = {.in = (CUdeviceptr)(uintptr_t)src->data,
                          .out = (CUdeviceptr)(uintptr_t)dst->data,
                          .nseg = (src->shape[a] + seg - 1) / seg,
                          .S = seg,
                          .pre = (int32_t)pre,
                          .cval = cval,
                          .w = wt};
  LINE_AXES(pl, src, dst, a);
  const int64_t tiles = (pl.nlines + cols - 1) / cols * pl.nseg;
  return ndf__fline_launch(ctx, name, fn, ndf__grid(ctx, tiles, 2048 / cols), (unsigned)cols, 1, smem, &pl);
}

int ndf__filters_plane_applies(const ndf__fpass *a, const ndf__fpass *b, int ndim) {
  return !a->uniform && !b->uniform && a->axis != ndim - 1 && b->axis == ndim - 1 && a->n <= NDF__PLANE_MAX_TAPS &&
         b->n <= NDF__PLANE_MAX_TAPS;
}

/* The weights as exact hex literals, comma-separated (malloc'd; NULL when out of memory). */
static char *weights_text(const double *w, int64_t n) {
  char *t = malloc((size_t)n * 32 + 1);
  if (!t) return NULL;
  size_t at = 0;
  t[0] = 0;
  for (int64_t k = 0; k < n; k++) at += (size_t)sprintf(t + at, "%s%a", k ? "," : "", w[k]);
  return t;
}

/* filter_plane's tile and staging (templates/filter_plane.cu): TY x TX outputs, 128 threads. */
#define PLANE_TY 16
#define PLANE_TX 64

ndf_status ndf__filters_plane_cuda(ndf_ctx *ctx, const char *name, const ndf_array *src, ndf_array *dst,
                                   const ndf__fpass *a, const ndf__fpass *b, double cval) {
  if (ndf_array_size(src) == 0) return NDF_OK;
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  char *wy = weights_text(a->w, a->n), *wx = weights_text(b->w, b->n);
  ndf__kernel_req req;
  if (wy && wx)
    ndf__req_filter_plane(&req, ndf__dtype_ctype(src->dtype), ndf__dtype_ctype(dst->dtype), cvt_of(dst->dtype),
                          (int)a->mode, (int)b->mode, a->sym, b->sym, (int)a->n, (int)b->n, wy, wx);
  free(wy);
  free(wx);
  if (!wy || !wx) return ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory for a kernel request", name);
  CUfunction fn;
  s = ndf__jit_get(ctx, name, &req, &fn);
  ndf__req_free(&req);
  if (s != NDF_OK) return s;
  const int ay = a->axis, ax = b->axis;
  ndf__fplane_params pp = {.in = (CUdeviceptr)(uintptr_t)src->data,
                           .out = (CUdeviceptr)(uintptr_t)dst->data,
                           .ny = src->shape[ay],
                           .nx = src->shape[ax],
                           .isy = src->strides[ay],
                           .isx = src->strides[ax],
                           .osy = dst->strides[ay],
                           .osx = dst->strides[ax],
                           .nother = src->ndim - 2,
                           .nouter = 1,
                           .prey = (int32_t)(a->n / 2 + a->origin),
                           .prex = (int32_t)(b->n / 2 + b->origin),
                           .cval = cval};
  for (int d = 0, i = 0; d < src->ndim; d++) {
    if (d == ay || d == ax) continue;
    pp.oshape[i] = src->shape[d];
    pp.oistr[i] = src->strides[d];
    pp.oostr[i] = dst->strides[d];
    pp.nouter *= src->shape[d];
    i++;
  }
  pp.nty = (pp.ny + PLANE_TY - 1) / PLANE_TY;
  pp.ntx = (pp.nx + PLANE_TX - 1) / PLANE_TX;
  /* Shared memory: (H1 + TY) rows of P1 doubles, H1 = TY + NTY - 1, P1 = (TX + NTX - 1) | 1. */
  const int64_t h1 = PLANE_TY + a->n - 1, p1 = (PLANE_TX + b->n - 1) | 1;
  const unsigned smem = (unsigned)((h1 + PLANE_TY) * p1 * 8);
  const int64_t tiles = pp.nouter * pp.nty * pp.ntx;
  return ndf__fplane_launch(ctx, name, fn, ndf__grid(ctx, tiles, 8), 128, 1, smem, &pp);
}

ndf_status ndf__filters_taps_cuda(ndf_ctx *ctx, const char *name, const ndf_array *src, ndf_array *dst,
                                  const ndf__ftaps *t, double cval) {
  const int64_t n = ndf_array_size(src);
  if (n == 0) return NDF_OK;
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  const int nsp = t->nsp, nb = src->ndim - nsp;
  ndf__kernel_req req;
  ndf__req_filter_taps(&req, ndf__dtype_ctype(src->dtype), ndf__dtype_ctype(dst->dtype),
                       dst->dtype == NDF_UINT64 ? 4 : cvt_of(dst->dtype),
                       (int)t->mode, nsp);
  CUfunction fn;
  if ((s = ndf__jit_get(ctx, name, &req, &fn)) != NDF_OK) return s;
  const int64_t nt = t->ntaps ? t->ntaps : 1;
  int64_t *loff = calloc((size_t)nt, sizeof *loff);
  if (!loff) return ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory for the tap table", name);
  for (int64_t k = 0; k < t->ntaps; k++)
    for (int d = 0; d < nsp; d++) loff[k] += (int64_t)t->off[k * nsp + d] * src->strides[nb + d];
  static const int32_t zero_off[NDF_MAX_SPATIAL];
  static const double zero_w;
  CUdeviceptr doff = 0, dloff = 0, dw = 0;
  s = ndf__device_table(ctx, t->ntaps ? (const void *)t->off : zero_off, (size_t)nt * nsp * sizeof(int32_t), &doff);
  if (s == NDF_OK) s = ndf__device_table(ctx, loff, (size_t)nt * sizeof *loff, &dloff);
  if (s == NDF_OK) s = ndf__device_table(ctx, t->ntaps ? (const void *)t->w : &zero_w, (size_t)nt * sizeof(double), &dw);
  free(loff);
  if (s != NDF_OK) return s;
  ndf__ftaps_params pt = {.in = (CUdeviceptr)(uintptr_t)src->data,
                          .out = (CUdeviceptr)(uintptr_t)dst->data,
                          .ndim = src->ndim,
                          .n = n,
                          .ntaps = t->ntaps,
                          .off = doff,
                          .loff = dloff,
                          .w = dw,
                          .cval = cval};
  for (int d = 0; d < src->ndim; d++) {
    pt.shape[d] = src->shape[d];
    pt.istr[d] = src->strides[d];
    pt.ostr[d] = dst->strides[d];
  }
  for (int d = 0; d < nsp; d++) {
    pt.rlo[d] = t->rlo[d];
    pt.rhi[d] = t->rhi[d];
  }
  return ndf__ftaps_launch(ctx, name, fn, ndf__grid(ctx, (n + 255) / 256, 16), 256, 1, 0, &pt);
}

static ndf_status run_ew(ndf_ctx *ctx, const char *name, int kind, const ndf_array *a, ndf_array *out) {
  const int64_t n = ndf_array_size(out);
  if (n == 0) return NDF_OK;
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  const ndf_dtype ti = kind == 0 ? a->dtype : out->dtype;
  ndf__kernel_req req;
  ndf__req_filter_ew(&req, ndf__dtype_ctype(ti), ndf__dtype_ctype(out->dtype), utype_of(out->dtype),
                     cvt_of(out->dtype), kind, is_int(ti) && is_int(out->dtype));
  CUfunction fn;
  if ((s = ndf__jit_get(ctx, name, &req, &fn)) != NDF_OK) return s;
  ndf__few_params pe = {.a = (CUdeviceptr)(uintptr_t)(a ? a->data : out->data),
                        .out = (CUdeviceptr)(uintptr_t)out->data,
                        .ndim = out->ndim,
                        .n = n};
  for (int d = 0; d < out->ndim; d++) {
    pe.shape[d] = out->shape[d];
    pe.sa[d] = a ? a->strides[d] : out->strides[d];
    pe.so[d] = out->strides[d];
  }
  return ndf__few_launch(ctx, name, fn, ndf__grid(ctx, (n + 255) / 256, 16), 256, 1, 0, &pe);
}

ndf_status ndf__filters_cast_cuda(ndf_ctx *ctx, const char *name, const ndf_array *src, ndf_array *dst) {
  return run_ew(ctx, name, 0, src, dst);
}

ndf_status ndf__filters_ew_cuda(ndf_ctx *ctx, const char *name, ndf__few_kind kind, const ndf_array *a,
                                ndf_array *out) {
  return run_ew(ctx, name, kind == NDF__FEW_ADD ? 1 : kind == NDF__FEW_SQUARE ? 2 : 3, a, out);
}
