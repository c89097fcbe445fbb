/*
 * binary_cuda.c -- the CUDA backend of binary morphology, on bit-packed
 * words (templates/binary_common.cuh: 32 voxels of the last axis per word).
 *
 * An op packs its input (and mask) once, runs its steps on packed words in
 * two scratch buffers, and unpacks the result into the output: with no
 * error the output is written once, at the end, and on an error (a cycle)
 * not at all.  Iterations stay on the device: every launch reads the flags
 * the previous launch left (templates/binary_step.cu) and returns at once
 * after a convergence, so the host queues launches and reads the status only
 * when it must decide whether to queue more (iterations < 1, or many
 * iterations): after 16, 32, 64, ... launches.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "binary/binary.h"
#include "kernel_params.generated.h"
#include "tune.h"

/* The packed image geometry and the scratch of one op. */
typedef struct bdev {
  ndf_ctx *ctx;
  const char *name;
  int ndim, nsp;
  int64_t shape[NDF_MAX_NDIM];
  int64_t nx, nw, nrows, nwords;
  int x_empty; /* buf[0] holds no voxel (fill_holes): the components' kernels skip reading it */
  CUdeviceptr scratch, buf[2], mask, saved, status;
  ndf__warm *warm; /* cache warm: kernels are compiled for warm->arch, nothing else happens */
} bdev;

/* A kernel of the op: loaded, or with b->warm only compiled into the disk cache. */
static ndf_status bget(bdev *b, const ndf__kernel_req *req, CUfunction *fn) {
  return ndf__jit_resolve(b->ctx, b->name, req, b->warm, fn);
}

/* A read-only table on the device (none with b->warm). */
static ndf_status btable(bdev *b, const void *data, size_t bytes, CUdeviceptr *out) {
  *out = 0;
  return b->warm ? NDF_OK : ndf__device_table(b->ctx, data, bytes, out);
}

/* A prepared step: its kernel and tap table. */
typedef struct bstep {
  CUfunction fn;
  ndf__bstep_params p; /* src, dst, mask, saved, status and t are set per launch */
  int monotone;   /* offset 0 is a tap: the iteration only grows (OR) or shrinks (AND) */
  int cycle;      /* compare with the saved state (iterations < 1, not monotone) */
  int inplace;    /* one buffer, block-local repeats (iterations < 1, monotone) */
  int fixed;      /* templates/binary_fstep.cu: the taps compiled in */
  int ccl;        /* the limit by connected components (OR, monotone, symmetric taps) */
  CUfunction ccl_fn; /* templates/binary_ccl.cu: one kernel, five phases */
  CUdeviceptr ccl_tab;
  int ccl_ntaps;
  int ccl_linkx; /* the taps hold (0, ..., 0, -1) */
  int flood;     /* 6 or 26: the limit by templates/binary_flood.cu (cross / full box, rank 2-3); 0: none */
  int flood_k;   /* its words per thread along x */
  int flood_tz;  /* its planes per block (binary.flood_tz) */
  int64_t flood_taps; /* the structure's taps (the tunables' workload) */
  CUfunction flood_fn;
} bstep;

/* 1 if the set of taps is symmetric (t in it implies -t is); small sets only. */
static int taps_symmetric(const int32_t *taps, int64_t n, int nsp) {
  if (n > 4096) return 0;
  for (int64_t k = 0; k < n; k++) {
    int found = 0;
    for (int64_t m = 0; m < n && !found; m++) {
      int eq = 1;
      for (int d = 0; d < nsp; d++) eq &= taps[m * nsp + d] == -taps[k * nsp + d];
      found = eq;
    }
    if (!found) return 0;
  }
  return 1;
}

/* Prepares the connected-components path of a dilation step (taps: raster order). */
static ndf_status ccl_prepare(bdev *b, const int32_t *taps, int64_t n, bstep *st) {
  const int nsp = b->nsp;
  int32_t *tab = malloc((size_t)(n * (nsp + 1) + 1) * sizeof *tab);
  if (!tab) return ndf__error(b->ctx, NDF_ENOMEM, "%s: out of memory", b->name);
  memcpy(tab, taps, (size_t)(n * nsp) * sizeof *tab);
  for (int64_t k = 0; k < n; k++) {
    int64_t off = 0, s = 1;
    for (int d = nsp - 1; d >= 0; d--) {
      off += (int64_t)taps[k * nsp + d] * s;
      s *= b->shape[b->ndim - nsp + d];
    }
    tab[n * nsp + k] = (int32_t)off;
    int xm1 = taps[k * nsp + nsp - 1] == -1;
    for (int d = 0; d < nsp - 1; d++) xm1 &= taps[k * nsp + d] == 0;
    st->ccl_linkx |= xm1;
  }
  ndf_status s = btable(b, tab, (size_t)(n * (nsp + 1) + 1) * sizeof *tab, &st->ccl_tab);
  free(tab);
  if (s != NDF_OK) return s;
  st->ccl_ntaps = (int)n;
  ndf__kernel_req req;
  ndf__req_binary_ccl(&req, nsp);
  return bget(b, &req, &st->ccl_fn);
}

static ndf_status flood_prepare(bdev *b, const int32_t *taps, int64_t n, bstep *st);

static ndf_status launch(bdev *b, CUfunction fn, int64_t blocks, void *params) {
  return ndf__launch(b->ctx, b->name, fn, ndf__grid(b->ctx, blocks, 16), 256, 1, 0, params);
}

static const char *pack_ctype(ndf_dtype t) {
  return t == NDF_BOOL ? "unsigned char" : ndf__dtype_ctype(t);
}

/* 1 when a (1-byte elements) can be read or written 32 voxels at a time with
 * 16-byte accesses: unit last stride, nx % 32 == 0, every row 16-aligned. */
static int vec_ok(const ndf_array *a) {
  const int L = a->ndim - 1;
  if (ndf_dtype_size(a->dtype) != 1 || a->strides[L] != 1 || a->shape[L] % 32 != 0) return 0;
  if ((uintptr_t)a->data % 16 != 0) return 0;
  for (int d = 0; d < L; d++)
    if (a->shape[d] > 1 && a->strides[d] % 16 != 0) return 0;
  return 1;
}

static ndf_status get_pack(bdev *b, const ndf_array *a, CUfunction *fn) {
  ndf__kernel_req req;
  ndf__req_binary_pack(&req, pack_ctype(a->dtype), vec_ok(a));
  return bget(b, &req, fn);
}

static ndf_status get_unpack(bdev *b, const ndf_array *out, CUfunction *fn) {
  ndf__kernel_req req;
  ndf__req_binary_unpack(&req, vec_ok(out));
  return bget(b, &req, fn);
}

static ndf_status pack(bdev *b, CUfunction fn, const ndf_array *a, CUdeviceptr dst, int invert) {
  ndf__bpack_params p;
  memset(&p, 0, sizeof p);
  p.in = (CUdeviceptr)(uintptr_t)a->data;
  p.out = dst;
  p.ndim = a->ndim;
  for (int d = 0; d < a->ndim; d++) {
    p.shape[d] = a->shape[d];
    p.istr[d] = a->strides[d];
  }
  p.nx = b->nx;
  p.nw = b->nw;
  p.nrows = b->nrows;
  p.invert = invert ? 0xffffffffu : 0u;
  /* VEC: a thread per word; else a warp per word (8 per block). */
  return launch(b, fn, vec_ok(a) ? (b->nwords + 255) / 256 : (b->nwords + 7) / 8, &p);
}

static ndf_status unpack(bdev *b, CUfunction fn, CUdeviceptr a, CUdeviceptr bm, int invert, ndf_array *out) {
  ndf__bunpack_params p;
  memset(&p, 0, sizeof p);
  p.a = a;
  p.b = bm;
  p.out = (CUdeviceptr)(uintptr_t)out->data;
  p.ndim = out->ndim;
  for (int d = 0; d < out->ndim; d++) {
    p.shape[d] = out->shape[d];
    p.ostr[d] = out->strides[d];
  }
  p.nx = b->nx;
  p.nw = b->nw;
  p.nrows = b->nrows;
  p.invert = invert ? 0xffffffffu : 0u;
  int64_t work = vec_ok(out) ? b->nwords : b->nrows * b->nx;
  return launch(b, fn, (work + 255) / 256, &p);
}

/* Geometry and scratch: two packed buffers, plus mask and saved state when asked. */
static ndf_status bdev_init(bdev *b, ndf_ctx *ctx, const char *name, const ndf_array *in, int batch_dims,
                            int with_mask, int with_saved, ndf__warm *warm) {
  memset(b, 0, sizeof *b);
  b->ctx = ctx;
  b->name = name;
  b->warm = warm;
  b->ndim = in->ndim;
  b->nsp = in->ndim - batch_dims;
  for (int d = 0; d < in->ndim; d++) b->shape[d] = in->shape[d];
  b->nx = in->shape[in->ndim - 1];
  b->nw = (b->nx + 31) / 32;
  b->nrows = ndf_array_size(in) / b->nx;
  b->nwords = b->nrows * b->nw;
  if (b->nwords >= ((int64_t)1 << 40))
    return ndf__error(ctx, NDF_ENOTSUP, "%s: the image is too large for the packed CUDA path", name);
  if (warm) return NDF_OK; /* no scratch */
  const size_t bytes = ((size_t)b->nwords * 4 + 255) & ~(size_t)255;
  const int nbuf = 2 + (with_mask != 0) + (with_saved != 0);
  ndf_status s = ndf__scratch_alloc(ctx, bytes * nbuf + 256, &b->scratch);
  if (s != NDF_OK) return s;
  CUdeviceptr p = b->scratch;
  b->status = p;
  p += 256;
  b->buf[0] = p;
  p += bytes;
  b->buf[1] = p;
  p += bytes;
  if (with_mask) { b->mask = p; p += bytes; }
  if (with_saved) b->saved = p;
  return NDF_OK;
}

static void bdev_free(bdev *b) {
  if (b->scratch) ndf__scratch_free(b->ctx, b->scratch);
  b->scratch = 0;
}

/* Taps of a geometry in raster order (a box enumerated); *owned is what to free. */
static const int32_t *geom_taps(const ndf__grey_geom *g, int64_t *ntaps, int32_t **owned) {
  *owned = NULL;
  *ntaps = g->ntaps;
  if (!g->is_box) return g->taps;
  *owned = ndf__grey_geom_taps_copy(g);
  return *owned;
}

/* A growing string for generated code. */
typedef struct gbuf {
  char *s;
  size_t n, cap;
  int failed;
} gbuf;

static void gb_add(gbuf *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void gb_add(gbuf *g, const char *fmt, ...) {
  if (g->failed) return;
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (k < 0) { g->failed = 1; return; }
  if (g->n + (size_t)k + 1 > g->cap) {
    size_t cap = g->cap ? g->cap : 1024;
    while (cap < g->n + (size_t)k + 1) cap *= 2;
    char *t = realloc(g->s, cap);
    if (!t) { g->failed = 1; return; }
    g->s = t;
    g->cap = cap;
  }
  va_start(ap, fmt);
  vsnprintf(g->s + g->n, g->cap - g->n, fmt, ap);
  va_end(ap);
  g->n += (size_t)k;
}

/* A tunable (tune.h) of a binary call: its workload is bool, the spatial
 * axes, the voxels and the structure's taps. */
static int bin_tune(const bdev *b, int64_t taps, int id) {
  const ndf__tune_work w = {NDF_BOOL, b->nsp, b->nrows * b->nx, taps};
  return ndf__tune(b->ctx, id, &w);
}

/* The largest structure (taps) compiled into binary_fstep.cu: binary.fixed_taps
 * (0 keeps every step on binary_step.cu's tap table), 125 by default. */
static int64_t fixed_taps_cap(const bdev *b, int64_t taps) { return bin_tune(b, taps, NDF__TUNE_BINARY_FIXED_TAPS); }

/*
 * The TAPS slot of binary_fstep.cu for the tap rows tab (step_prepare's
 * layout: ntr rows of nra offsets, first dx, count; then the dx list), op
 * 0 = AND, 1 = OR.  One block per tap row: its inside test, its row, one
 * load per word it reads (word offsets floor(dx / 32), and the next word for
 * a dx that is not a multiple of 32), the funnel shifts and the combination.
 * The code depends on the structure only (not on the shape).
 */
static void fstep_code(gbuf *g, const int32_t *tab, int64_t ntr, int nra, int op) {
  const int R = nra + 2;
  const int32_t *dxs = tab + ntr * R;
  const char *opc = op == 0 ? "&" : "|";
  for (int64_t r = 0; r < ntr; r++) {
    const int32_t *t = tab + r * R;
    const int32_t first = t[nra], cnt = t[nra + 1];
    gb_add(g, "{ const bool ok = true");
    for (int d = 0; d < nra; d++)
      if (t[d] != 0) gb_add(g, " && NDF_RY(%d, %d)", d, t[d]);
    gb_add(g, "; const unsigned *b = ndf_trow(p, row, ok, 0u");
    for (int d = 0; d < nra; d++)
      if (t[d] != 0) gb_add(g, " + (unsigned)(%d) * rst[%d]", t[d], d);
    gb_add(g, ");\n");
    /* The distinct word offsets, ascending (dx ascends within a row). */
    int32_t words[2 * 1024 + 2];
    int nwd = 0;
    for (int32_t e = 0; e < cnt; e++) {
      const int32_t dx = dxs[first + e], a = dx >= 0 ? dx / 32 : -((31 - dx) / 32);
      const int need = (dx & 31) ? 2 : 1;
      for (int k = 0; k < need; k++) {
        int seen = 0;
        for (int m = 0; m < nwd && !seen; m++) seen = words[m] == a + k;
        if (!seen) words[nwd++] = a + k;
      }
    }
    for (int m = 0; m < nwd; m++) gb_add(g, "  const unsigned w%d = NDF_W(%d);\n", m, words[m]);
    gb_add(g, "  acc = NDF_OPB(acc, ok ? (");
    for (int32_t e = 0; e < cnt; e++) {
      const int32_t dx = dxs[first + e], a = dx >= 0 ? dx / 32 : -((31 - dx) / 32), sh = dx & 31;
      int lo = 0, hi = 0;
      for (int m = 0; m < nwd; m++) {
        if (words[m] == a) lo = m;
        if (words[m] == a + 1) hi = m;
      }
      if (e) gb_add(g, " %s ", opc);
      if (sh) gb_add(g, "__funnelshift_r(w%d, w%d, %d)", lo, hi, (int)sh);
      else gb_add(g, "w%d", lo);
    }
    gb_add(g, ") : border); }\n");
  }
}

/*
 * Prepares a step: op 0 = AND (erosion), 1 = OR (dilation, the miss part);
 * sp->empty: no taps (AND gives all 1, OR all 0).  The taps become tap rows:
 * runs of taps with the same offsets on every spatial axis but the last
 * (raster order keeps them together), each with its list of last-axis
 * offsets.
 */
static ndf_status step_prepare(bdev *b, const ndf__bin_step *sp, int op, int border, int iterations, bstep *st) {
  memset(st, 0, sizeof *st);
  const int nsp = b->nsp, nra = nsp - 1, R = nra + 2;
  ndf__bstep_params *p = &st->p;
  p->nra = nra;
  for (int d = 0; d < nra; d++) {
    int ax = b->ndim - nsp + d;
    p->rshape[d] = b->shape[ax];
    int64_t rs = 1;
    for (int e = ax + 1; e < b->ndim - 1; e++) rs *= b->shape[e];
    p->rstride[d] = rs;
  }
  p->nx = b->nx;
  p->nw = b->nw;
  p->nrows = b->nrows;
  p->tail = b->nx % 32 ? (1u << (b->nx % 32)) - 1 : 0xffffffffu;
  p->border = border ? 0xffffffffu : 0u;
  if (!sp->empty) {
    int32_t *owned;
    int64_t n;
    const int32_t *taps = geom_taps(&sp->g, &n, &owned);
    if (!taps) return ndf__error(b->ctx, NDF_ENOMEM, "%s: out of memory", b->name);
    int64_t ntr = 0;
    for (int64_t k = 0; k < n; k++) {
      int same = k > 0;
      for (int d = 0; d < nra && same; d++) same = taps[k * nsp + d] == taps[(k - 1) * nsp + d];
      ntr += !same;
    }
    if (ntr > INT32_MAX / R || n > INT32_MAX) {
      free(owned);
      return ndf__error(b->ctx, NDF_ENOTSUP, "%s: the structure has too many taps for the CUDA path", b->name);
    }
    size_t bytes = ((size_t)ntr * R + (size_t)n) * sizeof(int32_t);
    int32_t *tab = malloc(bytes);
    if (!tab) {
      free(owned);
      return ndf__error(b->ctx, NDF_ENOMEM, "%s: out of memory", b->name);
    }
    int32_t *dx = tab + ntr * R;
    for (int d = 0; d < nra; d++) { p->rlo[d] = INT32_MAX; p->rhi[d] = INT32_MIN; }
    int64_t r = -1;
    for (int64_t k = 0; k < n; k++) {
      const int32_t *t = taps + k * nsp;
      int same = k > 0;
      for (int d = 0; d < nra && same; d++) same = t[d] == taps[(k - 1) * nsp + d];
      if (!same) {
        r++;
        for (int d = 0; d < nra; d++) {
          tab[r * R + d] = t[d];
          if (t[d] < p->rlo[d]) p->rlo[d] = t[d];
          if (t[d] > p->rhi[d]) p->rhi[d] = t[d];
        }
        tab[r * R + nra] = (int32_t)k;
        tab[r * R + nra + 1] = 0;
      }
      tab[r * R + nra + 1]++;
      dx[k] = t[nra];
      int zero = 1;
      for (int d = 0; d < nsp; d++) zero &= t[d] == 0;
      st->monotone |= zero;
    }
    /* The limit of a monotone dilation with symmetric taps: by components
     * (flat voxel indices in int32). */
    ndf_status cs = NDF_OK;
    if (op == 1 && iterations < 1 && st->monotone && b->nrows * b->nx < INT32_MAX && taps_symmetric(taps, n, nsp)) {
      st->ccl = 1;
      cs = flood_prepare(b, taps, n, st); /* the flood fill when it applies, else components */
      if (cs == NDF_OK && !st->flood) cs = ccl_prepare(b, taps, n, st);
    }
    free(owned);
    if (cs != NDF_OK) {
      free(tab);
      return cs;
    }
    st->cycle = iterations < 1 && !st->monotone;
    st->inplace = iterations < 1 && st->monotone;
    /* The taps compiled in (binary_fstep.cu): small structures, 32-bit word indices. */
    if (!st->inplace && n > 0 && n <= fixed_taps_cap(b, n) && b->nwords < INT32_MAX) {
      gbuf g = {0};
      fstep_code(&g, tab, ntr, nra, op);
      if (g.failed) {
        free(g.s);
        free(tab);
        return ndf__error(b->ctx, NDF_ENOMEM, "%s: out of memory", b->name);
      }
      ndf__kernel_req req;
      ndf__req_binary_fstep(&req, op, st->cycle, nra, g.s);
      free(g.s);
      free(tab);
      p->ntr = (int)ntr;
      st->fixed = 1;
      ndf_status s = bget(b, &req, &st->fn);
      ndf__req_free(&req);
      return s;
    }
    CUdeviceptr dt = 0;
    ndf_status s = n > 0 ? btable(b, tab, bytes, &dt) : NDF_OK;
    free(tab);
    if (s != NDF_OK) return s;
    p->ntr = (int)ntr;
    p->taps = dt;
    p->dx = dt + (CUdeviceptr)(ntr * R * sizeof(int32_t));
  }
  st->cycle = iterations < 1 && !st->monotone;
  st->inplace = iterations < 1 && st->monotone;
  ndf__kernel_req req;
  ndf__req_binary_step(&req, op, st->cycle, st->inplace);
  return bget(b, &req, &st->fn);
}

static ndf_status step_launch(bdev *b, bstep *st, CUdeviceptr src, CUdeviceptr dst, CUdeviceptr mask, int with_status,
                              int t) {
  st->p.src = src;
  st->p.dst = dst;
  st->p.mask = mask;
  st->p.saved = st->cycle ? b->saved : 0;
  st->p.status = with_status ? b->status : 0;
  st->p.t = t;
  return launch(b, st->fn, (b->nwords + 255) / 256, &st->p);
}

/* The kernel parameters of templates/binary_ccl.cu (phase set per launch). */
static void ccl_params(const bdev *b, const bstep *st, CUdeviceptr x, CUdeviceptr mask, CUdeviceptr dst,
                       CUdeviceptr parent, CUdeviceptr lit, int border, ndf__ccl_params *p) {
  memset(p, 0, sizeof *p);
  p->x = x;
  p->mask = mask;
  p->dst = dst;
  p->parent = parent;
  p->lit = lit;
  const int nsp = b->nsp;
  for (int d = 0; d < nsp; d++) p->sshape[d] = b->shape[b->ndim - nsp + d];
  p->nx = b->nx;
  p->nw = b->nw;
  p->nrows = b->nrows;
  p->border = border;
  p->ntaps = st->ccl_ntaps;
  p->linkx = st->ccl_linkx;
  p->taps = st->ccl_tab;
  p->toff = st->ccl_tab + (CUdeviceptr)((size_t)st->ccl_ntaps * nsp * sizeof(int32_t));
}

/* Launches phases first..last of binary_ccl.cu over every (word, lane). */
static ndf_status ccl_run(bdev *b, const bstep *st, ndf__ccl_params *p, int first, int last) {
  const int64_t blocks = (b->nwords * 32 + 255) / 256;
  ndf_status s = NDF_OK;
  for (int k = first; k <= last && s == NDF_OK; k++) {
    p->phase = k;
    s = launch(b, st->ccl_fn, blocks, p);
  }
  return s;
}

/* buf[*cur] -> buf[*cur ^ 1]: the limit of the monotone dilation, by components. */
static ndf_status ccl_limit(bdev *b, bstep *st, int *cur) {
  const int64_t n = b->nrows * b->nx;
  CUdeviceptr mem = 0;
  const size_t pb = ((size_t)n * 4 + 255) & ~(size_t)255;
  ndf_status s = ndf__scratch_alloc(b->ctx, pb + (size_t)n, &mem);
  if (s != NDF_OK) return s;
  ndf__ccl_params p;
  const CUdeviceptr x = b->x_empty && *cur == 0 ? 0 : b->buf[*cur];
  ccl_params(b, st, x, b->mask, b->buf[*cur ^ 1], mem, mem + pb, st->p.border != 0, &p);
  s = ccl_run(b, st, &p, 0, 4);
  ndf__scratch_free(b->ctx, mem);
  if (s == NDF_OK) *cur ^= 1;
  return s;
}

static ndf_status read_status(bdev *b, int32_t *h) {
  const ndf__cu_api *cu = ndf__cu(NULL);
  CUresult r = cu->cuMemcpyDtoHAsync(h, b->status, 8 * sizeof(int32_t), b->ctx->stream);
  if (r == CUDA_SUCCESS) r = cu->cuStreamSynchronize(b->ctx->stream);
  return r == CUDA_SUCCESS ? NDF_OK : ndf__cuda_error(b->ctx, b->name, r);
}

/*
 * The flood path (templates/binary_flood.cu) for the limit of a monotone
 * dilation whose taps are exactly the cross or the full 3^nsp box, nsp 2 or
 * 3 (binary.flood=off keeps the components' path).  Sets st->flood.
 */
static ndf_status flood_prepare(bdev *b, const int32_t *taps, int64_t n, bstep *st) {
  const int nsp = b->nsp;
  if (nsp < 2 || nsp > 3 || bin_tune(b, n, NDF__TUNE_BINARY_FLOOD) == NDF__TUNE_BINARY_FLOOD__OFF) return NDF_OK;
  int l1max = 0, linf = 1;
  for (int64_t k = 0; k < n; k++) {
    int l1 = 0;
    for (int d = 0; d < nsp; d++) {
      const int a = taps[k * nsp + d] < 0 ? -taps[k * nsp + d] : taps[k * nsp + d];
      l1 += a;
      linf &= a <= 1;
    }
    if (l1 > l1max) l1max = l1;
  }
  /* Distinct taps (a structure's true elements): the count identifies the set. */
  const int64_t box = nsp == 2 ? 9 : 27;
  int conn = 0;
  if (l1max <= 1 && n == 2 * nsp + 1) conn = 6;
  else if (linf && n == box) conn = 26;
  if (!conn) return NDF_OK;
  const int64_t ny = b->shape[b->ndim - 2];
  const int64_t nz = nsp == 3 ? b->shape[b->ndim - 3] : b->nrows / (ny > 0 ? ny : 1);
  const int tz = bin_tune(b, n, NDF__TUNE_BINARY_FLOOD_TZ);
  const int kk = bin_tune(b, n, NDF__TUNE_BINARY_FLOOD_K);
  const int64_t tzv = nz < tz ? (nz > 0 ? nz : 1) : tz;
  const int64_t tiles = (b->nrows / (ny * nz > 0 ? ny * nz : 1)) * ((nz + tzv - 1) / tzv) * ((ny + 31) / 32) *
                        ((b->nw + kk - 1) / kk);
  if (b->nrows == 0 || tiles >= INT32_MAX) return NDF_OK;
  ndf__kernel_req req;
  ndf__req_binary_flood(&req, conn, kk);
  ndf_status s = bget(b, &req, &st->flood_fn);
  if (s != NDF_OK) return s;
  st->flood = conn;
  st->flood_k = kk;
  st->flood_tz = tz;
  st->flood_taps = n;
  return NDF_OK;
}

/*
 * buf[cur], in place: the limit of the monotone dilation by flooding tiles
 * (templates/binary_flood.cu).  Launches are queued in batches of
 * binary.flood_batch (default 8); the host reads the 32-byte status after
 * each batch, and launches after the convergence return at once.
 */
static ndf_status flood_limit(bdev *b, bstep *st, int cur) {
  const ndf__cu_api *cu = ndf__cu(NULL);
  const int nsp = b->nsp, kk = st->flood_k;
  ndf__flood_params p;
  memset(&p, 0, sizeof p);
  p.r = b->buf[cur];
  p.mask = b->mask;
  p.status = b->status;
  p.ny = b->shape[b->ndim - 2];
  p.nz = nsp == 3 ? b->shape[b->ndim - 3] : b->nrows / p.ny;
  p.nimg = b->nrows / (p.ny * p.nz);
  p.ysp = 1;
  p.zsp = nsp == 3;
  const int tz0 = st->flood_tz;
  p.tz = p.nz < tz0 ? (int)p.nz : tz0;
  p.nw = b->nw;
  p.ntx = (b->nw + kk - 1) / kk;
  p.nty = (p.ny + 31) / 32;
  p.ntz = (p.nz + p.tz - 1) / p.tz;
  p.border = st->p.border;
  p.tail = st->p.tail;
  const int64_t tiles = p.nimg * p.ntz * p.nty * p.ntx;
  CUresult r = cu->cuMemsetD8Async(b->status, 0, 256, b->ctx->stream);
  if (r != CUDA_SUCCESS) return ndf__cuda_error(b->ctx, b->name, r);
  const int batch = bin_tune(b, st->flood_taps, NDF__TUNE_BINARY_FLOOD_BATCH);
  int32_t h[8] = {0};
  for (int t = 0;;) {
    for (int i = 0; i < batch; i++) {
      p.t = ++t;
      ndf_status s = ndf__flood_launch(b->ctx, b->name, st->flood_fn, (unsigned)tiles, 32u * (unsigned)p.tz, 1, 0, &p);
      if (s != NDF_OK) return s;
    }
    ndf_status s = read_status(b, h);
    if (s != NDF_OK) return s;
    if (h[6] != 0) return NDF_OK;
    if (t > (1 << 28))
      return ndf__error(b->ctx, NDF_ENOTSUP, "%s: the flood fill did not converge (internal error)", b->name);
  }
}


/*
 * Applies a prepared step `iterations` times (< 1: until nothing changes) to
 * buf[*cur]; on return buf[*cur] holds the result.  Launch t reads buf[t-1]
 * and writes buf[t] (indices mod 2, from *cur), or updates buf[*cur] in
 * place for a monotone iteration to the limit.  A cycle is NDF_ENOTSUP, as
 * on the CPU backend (Brent's detection, with the same period).
 */
static ndf_status iterate(bdev *b, bstep *st, int iterations, int *cur) {
  const ndf__cu_api *cu = ndf__cu(NULL);
  const CUstream stream = b->ctx->stream;
  const int c0 = *cur;
  ndf_status s;
  if (iterations == 1) {
    s = step_launch(b, st, b->buf[c0], b->buf[c0 ^ 1], b->mask, 0, 1);
    if (s == NDF_OK) *cur = c0 ^ 1;
    return s;
  }
  if (st->flood) return flood_limit(b, st, *cur);
  if (st->ccl) return ccl_limit(b, st, cur);
  /* A device-side memset: a copy from pageable host memory may wait for the stream. */
  CUresult r = cu->cuMemsetD8Async(b->status, 0, 256, stream);
  if (r == CUDA_SUCCESS && st->cycle)
    r = cu->cuMemcpyDtoDAsync(b->saved, b->buf[c0], (size_t)b->nwords * 4, stream);
  if (r != CUDA_SUCCESS) return ndf__cuda_error(b->ctx, b->name, r);
  /* The host reads the status after launch 16, 32, 64, ... (never for a few
   * iterations: those are all queued, later ones return at once). */
  const int64_t few = 64;
  int64_t check = (iterations >= 1 && iterations <= few) ? INT64_MAX : 16;
  int32_t h[8] = {0};
  int64_t t = 0;
  for (;;) {
    if (iterations >= 1 && t == iterations) break;
    if (t == INT32_MAX - 1)
      return ndf__error(b->ctx, NDF_ENOTSUP, "%s: more than 2^31 iterations are not supported on CUDA", b->name);
    t++;
    const int src = st->inplace ? c0 : (int)((c0 + t - 1) & 1), dst = st->inplace ? c0 : (int)((c0 + t) & 1);
    if ((s = step_launch(b, st, b->buf[src], b->buf[dst], b->mask, 1, (int)t)) != NDF_OK) return s;
    if (st->cycle && (t & (t + 1)) == 0) { /* t = 2^k - 1: save state t */
      r = cu->cuMemcpyDtoDAsync(b->saved, b->buf[dst], (size_t)b->nwords * 4, stream);
      if (r != CUDA_SUCCESS) return ndf__cuda_error(b->ctx, b->name, r);
    }
    if (t == check) {
      if ((s = read_status(b, h)) != NDF_OK) return s;
      if (h[6] != 0) break;
      check *= 2;
    }
  }
  /* After a convergence both buffers hold the result. */
  *cur = st->inplace ? c0 : (int)((c0 + t) & 1);
  if (iterations >= 1) return NDF_OK;
  if (h[6] == 2) {
    int64_t td = h[7], p2 = 1;
    while (2 * p2 - 1 < td) p2 *= 2; /* the saved state is state p2 - 1 */
    return ndf__error(b->ctx, NDF_ENOTSUP,
                      "%s: bad argument 'iterations' (< 1 never converges here: the result cycles with period "
                      "%lld; scipy would loop forever. Use a structure whose centre, shifted by origin, is "
                      "true, or a fixed number of iterations)", b->name, (long long)(td - (p2 - 1)));
  }
  return NDF_OK;
}

/* Every kernel of a binary op resolved (and its tables uploaded) before the
 * first launch; iterations as the op runs them (< 1 for propagation and fill_holes). */
static ndf_status binary_kernels(bdev *b, ndf__binary_kind kind, const ndf_array *in, const ndf_array *out,
                                 const ndf_array *mask, const ndf__bin_step *ero, const ndf__bin_step *dil, int border,
                                 int iterations, bstep *se, bstep *sd, CUfunction *fpack, CUfunction *fmask,
                                 CUfunction *funpack) {
  const int need_ero = kind == NDF__B_EROSION || kind == NDF__B_OPENING || kind == NDF__B_CLOSING;
  const int need_dil = kind != NDF__B_EROSION;
  ndf_status s = get_pack(b, in, fpack);
  if (s == NDF_OK && mask) s = get_pack(b, mask, fmask);
  if (s == NDF_OK) s = get_unpack(b, out, funpack);
  if (s == NDF_OK && need_ero) s = step_prepare(b, ero, 0, border, iterations, se);
  if (s == NDF_OK && need_dil) s = step_prepare(b, dil, 1, border, iterations, sd);
  return s;
}

ndf_status ndf__binary_cuda_warm(ndf__warm *w, ndf_ctx *ctx, const char *name, ndf__binary_kind kind,
                                 const ndf_array *in, const ndf_array *out, const ndf_array *mask,
                                 const ndf__bin_step *ero, const ndf__bin_step *dil, int border, int iterations,
                                 int batch_dims) {
  if (kind == NDF__B_PROPAGATION || kind == NDF__B_FILL_HOLES) iterations = -1;
  bdev b;
  bstep se, sd;
  CUfunction fpack, fmask, funpack;
  ndf_status s = bdev_init(&b, ctx, name, in, batch_dims, 0, 0, w);
  if (s == NDF_OK)
    s = binary_kernels(&b, kind, in, out, kind == NDF__B_FILL_HOLES ? NULL : mask, ero, dil, border, iterations, &se,
                       &sd, &fpack, &fmask, &funpack);
  return s;
}

ndf_status ndf__binary_cuda(ndf_ctx *ctx, const char *name, ndf__binary_kind kind, const ndf_array *in,
                            ndf_array *out, const ndf_array *mask, const ndf__bin_step *ero,
                            const ndf__bin_step *dil, int border, int iterations, int batch_dims) {
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  const int fill = kind == NDF__B_FILL_HOLES;
  if (kind == NDF__B_PROPAGATION || fill) iterations = -1;
  bdev b;
  bstep se, sd;
  CUfunction fpack, fmask = NULL, funpack;
  if ((s = bdev_init(&b, ctx, name, in, batch_dims, mask || fill, iterations < 1, NULL)) != NDF_OK) return s;
  if ((s = binary_kernels(&b, kind, in, out, mask, ero, dil, border, iterations, &se, &sd, &fpack, &fmask,
                          &funpack)) != NDF_OK)
    goto done;

  int cur = 0;
  if (fill) { /* propagate zeros into NOT input (border 1); the result is negated */
    if ((s = pack(&b, fpack, in, b.mask, 1)) != NDF_OK) goto done;
    CUresult r = ndf__cu(NULL)->cuMemsetD8Async(b.buf[0], 0, (size_t)b.nwords * 4, ctx->stream);
    if (r != CUDA_SUCCESS) { s = ndf__cuda_error(ctx, name, r); goto done; }
    b.x_empty = 1;
  } else {
    if ((s = pack(&b, fpack, in, b.buf[0], 0)) != NDF_OK) goto done;
    if (mask && (s = pack(&b, fmask, mask, b.mask, 0)) != NDF_OK) goto done;
  }
  switch (kind) {
    case NDF__B_EROSION: s = iterate(&b, &se, iterations, &cur); break;
    case NDF__B_DILATION:
    case NDF__B_PROPAGATION:
    case NDF__B_FILL_HOLES: s = iterate(&b, &sd, iterations, &cur); break;
    case NDF__B_OPENING:
      s = iterate(&b, &se, iterations, &cur);
      if (s == NDF_OK) s = iterate(&b, &sd, iterations, &cur);
      break;
    case NDF__B_CLOSING:
      s = iterate(&b, &sd, iterations, &cur);
      if (s == NDF_OK) s = iterate(&b, &se, iterations, &cur);
      break;
  }
  if (s == NDF_OK) s = unpack(&b, funpack, b.buf[cur], 0, fill, out);
done:
  bdev_free(&b);
  return s;
}

/* hit = erosion by structure1 (border 0); miss = OR over structure2's
 * erosion-style taps (border 0); out = hit AND NOT miss, in one unpack. */
static ndf_status hit_or_miss_kernels(bdev *b, const ndf_array *in, const ndf_array *out, const ndf__bin_step *hit,
                                      const ndf__bin_step *miss, bstep *sh, bstep *sm, CUfunction *fpack,
                                      CUfunction *funpack) {
  ndf_status s = get_pack(b, in, fpack);
  if (s == NDF_OK) s = get_unpack(b, out, funpack);
  if (s == NDF_OK) s = step_prepare(b, hit, 0, 0, 1, sh);
  if (s == NDF_OK) s = step_prepare(b, miss, 1, 0, 1, sm);
  return s;
}

ndf_status ndf__hit_or_miss_cuda_warm(ndf__warm *w, ndf_ctx *ctx, const char *name, const ndf_array *in,
                                      const ndf_array *out, const ndf__bin_step *hit, const ndf__bin_step *miss,
                                      int batch_dims) {
  bdev b;
  bstep sh, sm;
  CUfunction fpack, funpack;
  ndf_status s = bdev_init(&b, ctx, name, in, batch_dims, 0, 0, w);
  if (s == NDF_OK) s = hit_or_miss_kernels(&b, in, out, hit, miss, &sh, &sm, &fpack, &funpack);
  return s;
}

ndf_status ndf__hit_or_miss_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out,
                                 const ndf__bin_step *hit, const ndf__bin_step *miss, int batch_dims) {
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  bdev b;
  bstep sh, sm;
  CUfunction fpack, funpack;
  if ((s = bdev_init(&b, ctx, name, in, batch_dims, 1, 0, NULL)) != NDF_OK) return s;
  if ((s = hit_or_miss_kernels(&b, in, out, hit, miss, &sh, &sm, &fpack, &funpack)) != NDF_OK) goto done;
  /* buf[0] = input, buf[1] = hit, mask buffer = miss. */
  if ((s = pack(&b, fpack, in, b.buf[0], 0)) != NDF_OK) goto done;
  if ((s = step_launch(&b, &sh, b.buf[0], b.buf[1], 0, 0, 1)) != NDF_OK) goto done;
  if ((s = step_launch(&b, &sm, b.buf[0], b.mask, 0, 0, 1)) != NDF_OK) goto done;
  s = unpack(&b, funpack, b.buf[1], b.mask, 0, out);
done:
  bdev_free(&b);
  return s;
}

/* ---- label ------------------------------------------------------------------------------- */

#define LABEL_E 2048 /* rows per block of the row prefix (templates/label.cu) */
#define LABEL_BT 10  /* ints per backward neighbour row: row offset, x-offset mask, d[NDF_MAX_SPATIAL] */

/*
 * scipy.ndimage.label on CUDA arrays, by runs (templates/label.cu): the input
 * is packed (binary_pack.cu), the units (runs along x within pieces of 32
 * words of a row when the structure links x-neighbours, else voxels) joined
 * by a union-find over their first voxels, the roots counted per piece and
 * numbered in raster order, and the
 * labels written.  The host reads the per-image counts once, before the
 * labels are written (cap: the largest label the output dtype holds).
 *
 * The backward half of the structure (taps, raster order) becomes a table
 * of neighbour rows: for each offset of the axes but the last that occurs,
 * its flat row offset and the set of x offsets (bit t + 1 for t in -1..1).
 */
static int32_t *label_rows(const bdev *b, const int32_t *taps, int64_t ntaps, int *nbt, int *linkx) {
  const int nsp = b->nsp;
  int32_t *tab = calloc((size_t)(ntaps + 1) * LABEL_BT, sizeof *tab);
  if (!tab) return NULL;
  *nbt = 0;
  *linkx = 0;
  for (int64_t k = 0; k < ntaps; k++) {
    const int32_t *t = taps + k * nsp;
    int lead = 0;
    for (int d = 0; d < nsp - 1; d++) lead |= t[d] != 0;
    if (!lead) { /* (0, ..., 0, -1): runs along x are the units */
      *linkx |= t[nsp - 1] == -1;
      continue;
    }
    int e = 0;
    for (; e < *nbt; e++) {
      int same = 1;
      for (int d = 0; d < nsp - 1; d++) same &= tab[e * LABEL_BT + 2 + d] == t[d];
      if (same) break;
    }
    if (e == *nbt) {
      int64_t off = 0, rs = 1;
      for (int d = nsp - 2; d >= 0; d--) {
        off += (int64_t)t[d] * rs;
        rs *= b->shape[b->ndim - nsp + d];
      }
      tab[e * LABEL_BT] = (int32_t)off;
      for (int d = 0; d < nsp - 1; d++) tab[e * LABEL_BT + 2 + d] = t[d];
      (*nbt)++;
    }
    tab[e * LABEL_BT + 1] |= 1 << (t[nsp - 1] + 1);
  }
  return tab;
}

static ndf_status label_kernels(bdev *b, const ndf_array *in, const ndf_array *out, CUfunction *fn, CUfunction *fpack) {
  ndf__kernel_req req;
  ndf__req_label(&req, ndf__dtype_ctype(out->dtype));
  ndf_status s = bget(b, &req, fn);
  if (s == NDF_OK) s = get_pack(b, in, fpack);
  return s;
}

ndf_status ndf__label_cuda_warm(ndf__warm *w, ndf_ctx *ctx, const char *name, const ndf_array *in,
                                const ndf_array *out, const int32_t *taps, int64_t ntaps, int batch_dims) {
  bdev b;
  CUfunction fn, fpack;
  (void)taps;
  (void)ntaps;
  ndf_status s = bdev_init(&b, ctx, name, in, batch_dims, 0, 0, w);
  if (s == NDF_OK) s = label_kernels(&b, in, out, &fn, &fpack);
  return s;
}

ndf_status ndf__label_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out, const int32_t *taps,
                           int64_t ntaps, int nsp, int batch_dims, int64_t cap, int64_t *num_features) {
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  const int64_t n = ndf_array_size(in);
  if (n >= INT32_MAX - 64)
    return ndf__error(ctx, NDF_ENOTSUP, "%s: inputs of 2^31 elements or more are not supported yet", name);
  int64_t nimg = 1;
  for (int d = 0; d < batch_dims; d++) nimg *= in->shape[d];
  CUfunction fn, fpack;
  bdev b;
  CUdeviceptr scratch = 0, bt = 0;
  int32_t *counts = NULL, *tab = NULL;
  /* Packed input in b.mask. */
  if ((s = bdev_init(&b, ctx, name, in, batch_dims, 1, 0, NULL)) != NDF_OK) return s;
  (void)nsp;
  if ((s = label_kernels(&b, in, out, &fn, &fpack)) != NDF_OK) goto done;

  ndf__label_params p;
  memset(&p, 0, sizeof p);
  int nbt = 0, linkx = 0;
  if (!(tab = label_rows(&b, taps, ntaps, &nbt, &linkx))) {
    s = ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
    goto done;
  }
  if ((s = ndf__device_table(ctx, tab, (size_t)(nbt + 1) * LABEL_BT * sizeof *tab, &bt)) != NDF_OK) goto done;
  p.out = (CUdeviceptr)(uintptr_t)out->data;
  p.bits = b.mask;
  p.bt = bt;
  p.ndim = in->ndim;
  p.nsp = b.nsp;
  for (int d = 0; d < in->ndim; d++) {
    p.shape[d] = in->shape[d];
    p.ostr[d] = out->strides[d];
  }
  for (int d = 0; d < b.nsp; d++) p.sshape[d] = in->shape[in->ndim - b.nsp + d];
  p.nx = (int)b.nx;
  p.nw = (int)b.nw;
  p.nrows = (int)b.nrows;
  p.nseg = (int)((b.nw + 31) / 32);
  const int64_t npieces = b.nrows * p.nseg; /* <= the words, < 2^31 */
  p.rpi = (int)(npieces / nimg);
  p.nimg = (int)nimg;
  p.nblk = (int)((npieces + LABEL_E - 1) / LABEL_E);
  p.nbt = nbt;
  p.linkx = linkx;
  p.G = 1;
  while (p.G < 32 && p.G < p.nw) p.G *= 2;
  const size_t nb = ((size_t)n * 4 + 255) & ~(size_t)255, rb = ((size_t)(npieces + 1) * 4 + 255) & ~(size_t)255;
  const size_t bb = ((size_t)(p.nblk + 1) * 4 + 255) & ~(size_t)255, ib = ((size_t)(nimg + 1) * 4 + 255) & ~(size_t)255;
  if ((s = ndf__scratch_alloc(ctx, nb + rb + bb + ib, &scratch)) != NDF_OK) goto done;
  p.parent = scratch;
  p.cnt = scratch + nb;
  p.bsum = scratch + nb + rb;
  p.base = scratch + nb + rb + bb;
  if ((s = pack(&b, fpack, in, b.mask, 0)) != NDF_OK) goto done;
  const int64_t ppw = 32 / p.G, row_blocks = ((npieces + ppw - 1) / ppw + 7) / 8; /* 8 warps per block */
  const int64_t blocks[7] = {row_blocks, row_blocks, row_blocks, p.nblk, 1, p.nblk, row_blocks};
  for (int k = 0; k < 7 && s == NDF_OK; k++) { /* init, unite, compress, bsum, scan, rowpre, rank */
    p.phase = k;
    s = launch(&b, fn, blocks[k], &p);
  }
  if (s != NDF_OK) goto done;
  counts = malloc((size_t)(nimg + 1) * sizeof *counts);
  if (!counts) { s = ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name); goto done; }
  {
    const ndf__cu_api *cu = ndf__cu(NULL);
    CUresult r = cu->cuMemcpyDtoHAsync(counts, p.base, (size_t)(nimg + 1) * sizeof *counts, ctx->stream);
    if (r == CUDA_SUCCESS) r = cu->cuStreamSynchronize(ctx->stream);
    if (r != CUDA_SUCCESS) { s = ndf__cuda_error(ctx, name, r); goto done; }
  }
  for (int64_t i = 0; i < nimg; i++)
    if (counts[i + 1] - counts[i] > cap) {
      s = ndf__error(ctx, NDF_EINVAL, "%s: bad argument 'output' (insufficient bit-depth: %lld features do not fit %s)",
                     name, (long long)(counts[i + 1] - counts[i]), ndf_dtype_name(out->dtype));
      goto done;
    }
  p.phase = 7; /* write */
  if ((s = launch(&b, fn, row_blocks, &p)) != NDF_OK) goto done;
  if (num_features)
    for (int64_t i = 0; i < nimg; i++) num_features[i] = counts[i + 1] - counts[i];
done:
  free(counts);
  free(tab);
  if (scratch) ndf__scratch_free(ctx, scratch);
  bdev_free(&b);
  return s;
}
