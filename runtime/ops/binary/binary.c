/*
 * binary.c -- binary morphology with scipy.ndimage's semantics
 * (_morphology.py: _binary_erosion, binary_dilation, binary_opening,
 * binary_closing, binary_propagation, binary_fill_holes, binary_hit_or_miss,
 * generate_binary_structure, iterate_structure).
 *
 * Every op works on 0/1 bytes: a binary erosion is the grey erosion of the
 * 0/1 image by the structure as a flat footprint in constant mode with
 * cval = border_value, a binary dilation the grey dilation (which reflects
 * the structure and shifts the origin exactly as scipy's binary_dilation
 * does).  Iterations repeat the step; where the mask is zero a step keeps its
 * input.  iterations < 1 repeats until nothing changes, and Brent's cycle
 * detection turns scipy's endless loop on oscillating structures into an
 * error.
 *
 * On host arrays, label, fill_holes and propagation (symmetric elements)
 * are connected components of runs along the last axis instead of repeated
 * steps.  CUDA arrays run on bit-packed words (binary_cuda.c) with the same
 * prepared steps; label on CUDA arrays is a union-find there too.
 */
#include <stdlib.h>
#include <string.h>

#include "binary/binary.h"

void ndf_binary_options_init(ndf_binary_options *opt) {
  if (!opt) return;
  memset(opt, 0, sizeof *opt);
  opt->iterations = 1;
}

void ndf_hit_or_miss_options_init(ndf_hit_or_miss_options *opt) {
  if (!opt) return;
  memset(opt, 0, sizeof *opt);
  opt->norigin2 = -1;
}

/* ---- host helpers -------------------------------------------------------------------- */

/* Input row at offset off (elements) as bytes, 0 / non-zero: in place for
 * contiguous 8-bit rows, else converted into buf. */
static const uint8_t *row_bytes(const ndf_array *in, int64_t off, int64_t nx, uint8_t *buf) {
  const int64_t sx = in->strides[in->ndim - 1];
  switch (in->dtype) {
#define ROW_NZ(T)                                                          \
  {                                                                        \
    const T *q = (const T *)in->data + off;                                \
    for (int64_t x = 0; x < nx; x++) buf[x] = q[x * sx] != 0;              \
    return buf;                                                            \
  }
    case NDF_BOOL: case NDF_UINT8: case NDF_INT8:
      if (sx == 1) return (const uint8_t *)in->data + off;
      ROW_NZ(uint8_t)
    case NDF_UINT16: case NDF_INT16: ROW_NZ(uint16_t)
    case NDF_UINT32: case NDF_INT32: ROW_NZ(uint32_t)
    case NDF_UINT64: case NDF_INT64: ROW_NZ(uint64_t)
    case NDF_FLOAT32: ROW_NZ(float) /* NaN is non-zero, -0.0 zero, as in NumPy */
    case NDF_FLOAT64: ROW_NZ(double)
#undef ROW_NZ
    default: memset(buf, 0, (size_t)nx); return buf;
  }
}

/* A contiguous 0/1 byte copy of a host array (malloc'd into *buf). */
static ndf_status binarize(ndf_ctx *ctx, const ndf_array *a, uint8_t **buf) {
  const int64_t n = ndf_array_size(a);
  uint8_t *o = *buf = malloc((size_t)(n > 0 ? n : 1));
  if (!o) return ndf__error(ctx, NDF_ENOMEM, "ndforge: out of host memory (%lld bytes)", (long long)n);
  if (n == 0) return NDF_OK;
  const int L = a->ndim - 1;
  const int64_t nx = a->shape[L], nrows = n / nx;
  const int nth = n > 65536 ? ndf__cpu_threads(ctx) : 1;
#pragma omp parallel for num_threads(nth) schedule(static)
  for (int64_t r = 0; r < nrows; r++) {
    int64_t c[NDF_MAX_NDIM];
    uint8_t *row = o + r * nx;
    const uint8_t *b = row_bytes(a, ndf__lead_coords(a, L, r, c), nx, row);
    if (b != row)
      for (int64_t x = 0; x < nx; x++) row[x] = b[x] != 0;
  }
  return NDF_OK;
}

/* scipy's generate_binary_structure into a contiguous byte buffer of 3^rank. */
static void cross_structure(int rank, int connectivity, uint8_t *s) {
  int64_t n = 1;
  for (int d = 0; d < rank; d++) n *= 3;
  if (connectivity < 1) connectivity = 1;
  for (int64_t i = 0; i < n; i++) {
    int64_t r = i;
    int dist = 0;
    for (int d = 0; d < rank; d++) {
      dist += (r % 3) != 1;
      r /= 3;
    }
    s[i] = dist <= connectivity;
  }
}

ndf_status ndf_generate_binary_structure(int rank, int connectivity, ndf_array *out) {
  static const char *name = "ndf_generate_binary_structure";
  if (rank < 1 || rank > NDF_MAX_SPATIAL)
    return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'rank' (%d is not in 1..%d)", name, rank, NDF_MAX_SPATIAL);
  if (!out || !out->data) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'out' (NULL)", name);
  if (out->device != NDF_DEVICE_CPU || (out->dtype != NDF_BOOL && out->dtype != NDF_UINT8))
    return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'out' (must be a host bool or uint8 array)", name);
  if (out->ndim != rank)
    return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'out' (rank %d, expected %d)", name, out->ndim, rank);
  for (int d = 0; d < rank; d++)
    if (out->shape[d] != 3)
      return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'out' (shape[%d]=%lld, expected 3)", name, d,
                        (long long)out->shape[d]);
  if (ndf__check_array(NULL, name, "out", out, NULL) != NDF_OK) return NDF_EINVAL;
  uint8_t s[6561]; /* 3^8 */
  cross_structure(rank, connectivity, s);
  ndf_array src;
  ndf_array_init(&src, s, NDF_DEVICE_CPU, out->dtype, rank, out->shape);
  ndf__host_copy(out, &src);
  return NDF_OK;
}

/* Largest label a dtype holds exactly. */
static int64_t label_capacity(ndf_dtype t) {
  switch (t) {
    case NDF_UINT8: return 255;
    case NDF_INT8: return 127;
    case NDF_UINT16: return 65535;
    case NDF_INT16: return 32767;
    case NDF_UINT32: return 4294967295LL;
    case NDF_INT32: return 2147483647LL;
    case NDF_INT64: case NDF_UINT64: return INT64_MAX;
    case NDF_FLOAT32: return 1LL << 24;
    case NDF_FLOAT64: return 1LL << 53;
    default: return 0;
  }
}

/* ---- validation ---------------------------------------------------------------------------- */

/* Checks input and output of a binary op (labels: any dtype that holds labels). */
static ndf_status check_io(ndf_ctx *ctx, const char *name, const ndf_array *in, const ndf_array *out, int batch_dims,
                           int labels) {
  if (!in) return ndf__argerror(ctx, name, "input", "NULL");
  if (!out) return ndf__argerror(ctx, name, "output", "NULL");
  if (!ndf_dtype_size(in->dtype)) return ndf__argerror(ctx, name, "input", "unknown dtype %d", (int)in->dtype);
  const char *oname = ndf_dtype_name(out->dtype) ? ndf_dtype_name(out->dtype) : "unknown";
  if (labels && out->dtype != NDF_BOOL && !label_capacity(out->dtype))
    return ndf__argerror(ctx, name, "output", "dtype %s cannot hold labels", oname);
  if (!labels && out->dtype != NDF_BOOL && out->dtype != NDF_UINT8)
    return ndf__argerror(ctx, name, "output", "dtype %s; binary outputs are bool or uint8", oname);
  if (in->ndim < 1 || in->ndim > NDF_MAX_NDIM)
    return ndf__argerror(ctx, name, "input", "rank %d is not in 1..%d", in->ndim, NDF_MAX_NDIM);
  if (out->ndim != in->ndim)
    return ndf__argerror(ctx, name, "output", "rank %d differs from the input rank %d", out->ndim, in->ndim);
  for (int d = 0; d < in->ndim; d++) {
    if (in->shape[d] < 0) return ndf__argerror(ctx, name, "input", "shape[%d] is negative", d);
    if (out->shape[d] != in->shape[d])
      return ndf__argerror(ctx, name, "output", "shape[%d]=%lld differs from the input shape %lld", d,
                           (long long)out->shape[d], (long long)in->shape[d]);
  }
  ndf_status cs = ndf__check_array(ctx, name, "input", in, NULL);
  if (cs == NDF_OK) cs = ndf__check_array(ctx, name, "output", out, NULL);
  if (cs != NDF_OK) return cs;
  if (batch_dims < 0 || batch_dims >= in->ndim)
    return ndf__argerror(ctx, name, "batch_dims", "%d must be in 0..%d for an input of rank %d", batch_dims,
                         in->ndim - 1, in->ndim);
  if (in->ndim - batch_dims > NDF_MAX_SPATIAL)
    return ndf__argerror(ctx, name, "batch_dims", "%d spatial axes; at most %d are supported",
                         in->ndim - batch_dims, NDF_MAX_SPATIAL);
  if (in->device != out->device || in->device_id != out->device_id)
    return ndf__argerror(ctx, name, "output", "lives on another device than the input");
  ndf_status ds = ndf__check_device(ctx, name, in);
  if (ds != NDF_OK) return ds;
  if (ndf_array_size(in) > 0 && (!in->data || !out->data))
    return ndf__argerror(ctx, name, !in->data ? "input" : "output", "NULL data");
  if (ndf_array_size(in) > 0) {
    if (!ndf__layout_is_proper(out)) return ndf__argerror(ctx, name, "output", "its strides make elements overlap");
    /* The output must not overlap the input (nothing is written on a bad call). */
    if (ndf__arrays_overlap(in, out)) return ndf__argerror(ctx, name, "output", "overlaps the input (in-place is not supported)");
  }
  return NDF_OK;
}

/* A structure argument as a contiguous 0/1 host buffer; NULL -> the cross. */
static ndf_status get_structure(ndf_ctx *ctx, const char *name, const char *arg, const ndf_array *st, int nsp,
                                uint8_t **buf, ndf_array *desc) {
  int64_t shape[NDF_MAX_SPATIAL];
  ndf_status s;
  if (!st) {
    for (int d = 0; d < nsp; d++) shape[d] = 3;
    *buf = malloc(6561);
    if (!*buf) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
    cross_structure(nsp, 1, *buf);
  } else {
    if (st->device != NDF_DEVICE_CPU) return ndf__argerror(ctx, name, arg, "must be a CPU (host) array");
    if (!ndf_dtype_size(st->dtype)) return ndf__argerror(ctx, name, arg, "unknown dtype %d", (int)st->dtype);
    if (st->ndim != nsp)
      return ndf__argerror(ctx, name, arg, "rank %d does not match the %d spatial axes of the input", st->ndim, nsp);
    for (int d = 0; d < nsp; d++) {
      if (st->shape[d] < 1) return ndf__argerror(ctx, name, arg, "shape[%d]=%lld is empty", d, (long long)st->shape[d]);
      shape[d] = st->shape[d];
    }
    if ((s = ndf__check_array(ctx, name, arg, st, NULL)) != NDF_OK) return s;
    if (!st->data) return ndf__argerror(ctx, name, arg, "NULL data");
    if ((s = binarize(ctx, st, buf)) != NDF_OK) return s;
  }
  ndf_array_init(desc, *buf, NDF_DEVICE_CPU, NDF_UINT8, nsp, shape);
  return NDF_OK;
}

static ndf_status check_mask(ndf_ctx *ctx, const char *name, const ndf_array *mask, const ndf_array *in,
                             const ndf_array *out) {
  if (!mask) return NDF_OK;
  if (mask->device != in->device || mask->device_id != in->device_id)
    return ndf__argerror(ctx, name, "mask", "lives on another device than the input");
  if (!ndf_dtype_size(mask->dtype)) return ndf__argerror(ctx, name, "mask", "unknown dtype %d", (int)mask->dtype);
  if (mask->ndim != in->ndim) return ndf__argerror(ctx, name, "mask", "rank %d differs from the input rank %d", mask->ndim, in->ndim);
  for (int d = 0; d < in->ndim; d++)
    if (mask->shape[d] != in->shape[d])
      return ndf__argerror(ctx, name, "mask", "shape[%d]=%lld differs from the input shape %lld", d,
                           (long long)mask->shape[d], (long long)in->shape[d]);
  ndf_status s = ndf__check_array(ctx, name, "mask", mask, NULL);
  if (s != NDF_OK) return s;
  if (ndf_array_size(in) > 0 && !mask->data) return ndf__argerror(ctx, name, "mask", "NULL data");
  /* The mask is read while the output is written. */
  if (ndf__arrays_overlap(mask, out)) return ndf__argerror(ctx, name, "mask", "overlaps the output");
  return NDF_OK;
}

/* ---- one binary op on 0/1 bytes --------------------------------------------------------------- */

typedef enum { ERODE, DILATE } binop;

/* A prepared step: the grey geometry of the structure (or "empty"). */
typedef ndf__bin_step step;

static ndf_status prepare_step(ndf_ctx *ctx, const char *name, binop op, const ndf_array *st, int ndim,
                               const int64_t *shape, int norigin, const int64_t *origin, int border_value,
                               int batch_dims, step *out) {
  memset(out, 0, sizeof *out);
  int any = 0;
  const uint8_t *sb = st->data;
  for (int64_t i = 0; i < ndf_array_size(st); i++) any |= sb[i];
  ndf_grey_options o;
  ndf_grey_options_init(&o);
  o.footprint = st;
  o.norigin = norigin;
  for (int d = 0; d < norigin; d++) o.origin[d] = origin[d];
  o.mode = NDF_MODE_CONSTANT;
  o.cval = border_value;
  o.batch_dims = batch_dims;
  if (!any) {
    /* scipy: an empty structure erodes to all True and dilates to all False.
     * The origin is still checked, on a full element of the same shape. */
    int64_t n = ndf_array_size(st);
    uint8_t *full = malloc((size_t)n);
    if (!full) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
    memset(full, 1, (size_t)n);
    ndf_array f = *st;
    f.data = full;
    o.footprint = &f;
    ndf_status s = ndf__grey_prepare(ctx, name, op == ERODE ? NDF__MIN : NDF__MAX, NDF_UINT8, ndim, shape, &o, &out->g);
    free(full);
    ndf__grey_geom_free(&out->g);
    out->empty = 1;
    return s;
  }
  return ndf__grey_prepare(ctx, name, op == ERODE ? NDF__MIN : NDF__MAX, NDF_UINT8, ndim, shape, &o, &out->g);
}

/* dst = step(src), masked: where mask is 0, dst keeps src.  Returns 1 when
 * dst differs from src, 0 when not, -1 on failure (the context has the message). */
static int run_step(ndf_ctx *ctx, const step *sp, binop op, const uint8_t *src, uint8_t *dst, const uint8_t *mask,
                    int ndim, const int64_t *shape, int64_t n) {
  if (sp->empty) {
    memset(dst, op == ERODE ? 1 : 0, (size_t)n);
  } else {
    ndf_array a, b;
    ndf_array_init(&a, (void *)src, NDF_DEVICE_CPU, NDF_UINT8, ndim, shape);
    ndf_array_init(&b, dst, NDF_DEVICE_CPU, NDF_UINT8, ndim, shape);
    if (ndf__grey_cpu(ctx, &a, &b, &sp->g) != NDF_OK) return -1;
  }
  int changed = 0;
  const int nth = n > 65536 ? ndf__cpu_threads(ctx) : 1;
#pragma omp parallel for num_threads(nth) schedule(static) reduction(| : changed)
  for (int64_t i = 0; i < n; i++) {
    if (mask && !mask[i]) dst[i] = src[i];
    changed |= dst[i] != src[i];
  }
  return changed;
}

/* Union-find root of i, halving the path on the way. */
static int32_t uf_find(int32_t *p, int32_t i) {
  while (p[i] != i) {
    p[i] = p[p[i]];
    i = p[i];
  }
  return i;
}

/* ---- connected components by runs (CPU label, fill_holes, propagation) ---------------------- */

/*
 * Runs are maximal stretches of selected voxels along the last axis (single
 * voxels when the offsets do not join x - 1 to x).  A symmetric set of
 * offsets joins a run of row r to a run of row r - drow when an offset with
 * that row part and an x part in one of its intervals [lo, hi] maps a voxel
 * of one into the other, so one merge walk over the two sorted run lists
 * finds every joined pair.  Union-find on run indices links the larger root
 * under the smaller: a component's root is its first run in raster order,
 * the order scipy numbers features in, whatever the order of the unions.
 * Threads extract and join the rows of their own slabs (no union leaves a
 * slab); the pairs across slab borders are joined afterwards by one thread.
 */
typedef struct cc_group {
  int32_t off[NDF_MAX_SPATIAL]; /* row part of the offsets: every spatial axis but the last */
  int64_t drow;                 /* the neighbour row is row - drow (0: the row itself) */
  int first, nint;              /* its x intervals: ilo/ihi[first .. first + nint) */
} cc_group;

typedef struct cc_plan {
  const ndf_array *in;
  int nb, nsp, L;
  int64_t nrows, nx, maxdrow;
  int want;     /* 1: runs of non-zero voxels, 0: runs of zeros */
  int xconn;    /* x - 1 joins x: runs are maximal */
  int light;    /* keep a "lit" flag per run */
  int border;   /* light the runs holding a voxel that some offset maps outside the image */
  int ngroups;
  cc_group *groups;
  int32_t *ilo, *ihi;
  int32_t reach[NDF_MAX_SPATIAL]; /* greatest |offset| per spatial axis */
} cc_plan;

typedef struct cc_runs {
  int32_t *rstart;  /* nrows + 1: first run of each row */
  int32_t *x0, *x1; /* run [x0, x1) */
  int32_t *parent;
  uint8_t *lit;     /* with light; with border, initially: the run reaches outside the image */
  int64_t nruns;
} cc_runs;

static void cc_free(cc_plan *p, cc_runs *r) {
  free(p->groups);
  free(p->ilo);
  free(p->ihi);
  free(r->rstart);
  free(r->x0);
  free(r->x1);
  free(r->parent);
  free(r->lit);
}

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* The plan for the backward half bt (nbt offsets of nsp values, each before
 * 0 in raster order) of a symmetric set of offsets. */
static int cc_plan_init(cc_plan *p, const ndf_array *in, int nb, const int32_t *bt, int64_t nbt, int want, int border) {
  memset(p, 0, sizeof *p);
  p->in = in;
  p->nb = nb;
  p->nsp = in->ndim - nb;
  p->L = in->ndim - 1;
  p->nx = in->shape[p->L];
  p->nrows = ndf_array_size(in) / p->nx;
  p->want = want;
  p->border = border;
  const int nsp = p->nsp;
  p->groups = malloc((size_t)(nbt + 1) * sizeof *p->groups);
  p->ilo = malloc((size_t)(nbt + 1) * sizeof *p->ilo);
  p->ihi = malloc((size_t)(nbt + 1) * sizeof *p->ihi);
  int32_t *dx = malloc((size_t)(nbt + 1) * sizeof *dx);
  if (!p->groups || !p->ilo || !p->ihi || !dx) {
    free(dx);
    return -1;
  }
  int64_t rowstride[NDF_MAX_SPATIAL], m = 1;
  for (int d = nsp - 2; d >= 0; d--) {
    rowstride[d] = m;
    m *= in->shape[nb + d];
  }
  uint8_t *used = calloc((size_t)(nbt + 1), 1);
  if (!used) {
    free(dx);
    return -1;
  }
  for (int64_t k = 0; k < nbt; k++) {
    for (int d = 0; d < nsp; d++) {
      int32_t a = bt[k * nsp + d] < 0 ? -bt[k * nsp + d] : bt[k * nsp + d];
      if (a > p->reach[d]) p->reach[d] = a;
    }
    int rowzero = 1;
    for (int d = 0; d < nsp - 1; d++) rowzero &= bt[k * nsp + d] == 0;
    if (rowzero && bt[k * nsp + nsp - 1] == -1) {
      p->xconn = 1;
      used[k] = 1;
    }
  }
  int nint = 0;
  for (int64_t k = 0; k < nbt; k++) {
    if (used[k]) continue;
    /* a new group: every unused offset with the same row part */
    cc_group *g = &p->groups[p->ngroups++];
    int nd = 0;
    g->drow = 0;
    for (int d = 0; d < nsp - 1; d++) {
      g->off[d] = bt[k * nsp + d];
      g->drow -= (int64_t)g->off[d] * rowstride[d];
    }
    for (int64_t j = k; j < nbt; j++) {
      if (used[j]) continue;
      int same = 1;
      for (int d = 0; d < nsp - 1; d++) same &= bt[j * nsp + d] == g->off[d];
      if (!same) continue;
      used[j] = 1;
      dx[nd++] = bt[j * nsp + nsp - 1];
    }
    qsort(dx, (size_t)nd, sizeof *dx, cmp_i32);
    g->first = nint;
    for (int i = 0; i < nd; i++) {
      if (i > 0 && dx[i] <= p->ihi[nint - 1] + 1) {
        if (dx[i] > p->ihi[nint - 1]) p->ihi[nint - 1] = dx[i];
        continue;
      }
      p->ilo[nint] = p->ihi[nint] = dx[i];
      nint++;
    }
    g->nint = nint - g->first;
    if (g->drow > p->maxdrow) p->maxdrow = g->drow;
  }
  free(used);
  free(dx);
  return 0;
}

/* Runs of the selected bytes of one row (p: 0 / non-zero); counts only when x0 is NULL. */
static int64_t row_runs(const uint8_t *p, int64_t nx, int want, int split, int32_t *x0, int32_t *x1) {
  const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
  int64_t x = 0, n = 0;
  while (x < nx) {
    /* skip unselected voxels, 8 at a time where the word is all unselected */
    if (want) {
      for (uint64_t w; x + 8 <= nx && (memcpy(&w, p + x, 8), w == 0);) x += 8;
      while (x < nx && !p[x]) x++;
    } else {
      for (uint64_t w; x + 8 <= nx && (memcpy(&w, p + x, 8), ((w - ones) & ~w & highs) == 0);) x += 8;
      while (x < nx && p[x]) x++;
    }
    if (x >= nx) break;
    const int64_t a = x;
    if (split) {
      x++;
    } else if (want) {
      for (uint64_t w; x + 8 <= nx && (memcpy(&w, p + x, 8), ((w - ones) & ~w & highs) == 0);) x += 8;
      while (x < nx && p[x]) x++;
    } else {
      for (uint64_t w; x + 8 <= nx && (memcpy(&w, p + x, 8), w == 0);) x += 8;
      while (x < nx && !p[x]) x++;
    }
    if (x0) {
      x0[n] = (int32_t)a;
      x1[n] = (int32_t)x;
    }
    n++;
  }
  return n;
}

/* Joins the runs a..ae (one row) to the runs b..be (its neighbour row) whose
 * voxels an x offset in [lo, hi] connects.  The neighbour's runs are disjoint
 * and sorted, and the first one a run can reach only moves right. */
static void join_runs(int32_t *par, const int32_t *x0, const int32_t *x1, int32_t a, int32_t ae, int32_t b,
                      int32_t be, int32_t lo, int32_t hi) {
  for (; a < ae && b < be; a++) {
    const int32_t s = x0[a] + lo, e = x1[a] - 1 + hi;
    while (b < be && x1[b] - 1 < s) b++;
    int32_t ra = -1;
    for (int32_t k = b; k < be && x0[k] <= e; k++) {
      if (ra < 0) ra = uf_find(par, a);
      const int32_t rb = uf_find(par, k);
      if (ra < rb) {
        par[rb] = ra;
      } else if (rb < ra) {
        par[ra] = rb;
        ra = rb;
      }
    }
  }
}

/* Joins row r (coordinates c) to its neighbour rows r' with lo <= r' < hi. */
static void join_row(const cc_plan *p, cc_runs *R, int64_t r, const int64_t *c, int64_t lo, int64_t hi) {
  const int32_t a = R->rstart[r], ae = R->rstart[r + 1];
  if (a == ae) return;
  for (int k = 0; k < p->ngroups; k++) {
    const cc_group *g = &p->groups[k];
    const int64_t rr = r - g->drow;
    if (rr < lo || rr >= hi) continue;
    int ok = 1;
    for (int d = 0; d < p->nsp - 1 && ok; d++) {
      const int64_t y = c[p->nb + d] + g->off[d];
      ok = y >= 0 && y < p->in->shape[p->nb + d];
    }
    if (!ok) continue;
    const int32_t b = R->rstart[rr], be = R->rstart[rr + 1];
    for (int i = g->first; i < g->first + g->nint; i++)
      join_runs(R->parent, R->x0, R->x1, a, ae, b, be, p->ilo[i], p->ihi[i]);
  }
}

/* Whether every voxel of the row with coordinates c has an offset leaving the image. */
static int row_reaches_out(const cc_plan *p, const int64_t *c) {
  for (int d = 0; d < p->nsp - 1; d++)
    if (c[p->nb + d] < p->reach[d] || c[p->nb + d] + p->reach[d] >= p->in->shape[p->nb + d]) return 1;
  return 0;
}

/* The runs of the input under plan p, joined into components (R->parent). */
static ndf_status cc_build(ndf_ctx *ctx, const char *name, const cc_plan *p, cc_runs *R) {
  memset(R, 0, sizeof *R);
  const int64_t nrows = p->nrows, nx = p->nx;
  const int L = p->L, split = !p->xconn;
  if (nrows * nx >= INT32_MAX) return NDF_ENOTSUP; /* run indices are int32 */
  const int nth = ndf__cpu_threads(ctx);
  int64_t nchunk = nth > 1 ? 4 * (int64_t)nth : 1;
  if (nchunk > nrows) nchunk = nrows;
  R->rstart = malloc((size_t)(nrows + 1) * sizeof *R->rstart);
  void **bufs = ndf__thread_buffers(nth, (size_t)nx);
  if (!R->rstart || !bufs) {
    ndf__thread_buffers_free(bufs, nth);
    return ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", name);
  }
  R->rstart[0] = 0;
#pragma omp parallel for num_threads(nth) schedule(dynamic, 1)
  for (int64_t k = 0; k < nchunk; k++) {
    uint8_t *buf = bufs[ndf__thread_id()];
    int64_t c[NDF_MAX_NDIM];
    for (int64_t r = k * nrows / nchunk; r < (k + 1) * nrows / nchunk; r++) {
      const uint8_t *b = row_bytes(p->in, ndf__lead_coords(p->in, L, r, c), nx, buf);
      R->rstart[r + 1] = (int32_t)row_runs(b, nx, p->want, split, NULL, NULL);
    }
  }
  for (int64_t r = 0; r < nrows; r++) R->rstart[r + 1] += R->rstart[r]; /* at most n < 2^31 runs */
  const int64_t nr = R->nruns = R->rstart[nrows];
  R->x0 = malloc((size_t)(nr + 1) * sizeof *R->x0);
  R->x1 = malloc((size_t)(nr + 1) * sizeof *R->x1);
  R->parent = malloc((size_t)(nr + 1) * sizeof *R->parent);
  if (p->light) R->lit = malloc((size_t)(nr + 1));
  if (!R->x0 || !R->x1 || !R->parent || (p->light && !R->lit)) {
    ndf__thread_buffers_free(bufs, nth);
    return ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory for %lld runs", name, (long long)nr);
  }
  const int32_t rx = p->reach[p->nsp - 1];
#pragma omp parallel for num_threads(nth) schedule(dynamic, 1)
  for (int64_t k = 0; k < nchunk; k++) {
    uint8_t *buf = bufs[ndf__thread_id()];
    int64_t c[NDF_MAX_NDIM];
    const int64_t r0 = k * nrows / nchunk, r1 = (k + 1) * nrows / nchunk;
    for (int64_t r = r0; r < r1; r++) {
      const uint8_t *b = row_bytes(p->in, ndf__lead_coords(p->in, L, r, c), nx, buf);
      const int32_t a = R->rstart[r], ae = R->rstart[r + 1];
      row_runs(b, nx, p->want, split, R->x0 + a, R->x1 + a);
      for (int32_t i = a; i < ae; i++) R->parent[i] = i;
      if (p->light) {
        const int out = p->border && row_reaches_out(p, c);
        for (int32_t i = a; i < ae; i++) R->lit[i] = p->border && (out || R->x0[i] < rx || R->x1[i] - 1 + rx >= nx);
      }
      join_row(p, R, r, c, r0, r + 1);
    }
  }
  ndf__thread_buffers_free(bufs, nth);
  /* the pairs across slab borders */
  for (int64_t k = 1; k < nchunk; k++) {
    const int64_t r0 = k * nrows / nchunk, r1 = (k + 1) * nrows / nchunk;
    int64_t c[NDF_MAX_NDIM];
    for (int64_t r = r0; r < r1 && r < r0 + p->maxdrow; r++) {
      ndf__lead_coords(p->in, L, r, c);
      join_row(p, R, r, c, 0, r0);
    }
  }
  return NDF_OK;
}

/* Root of every run (parent[i] <= i, so one forward pass), then "lit" spread to the roots and back. */
static void cc_roots_lit(cc_runs *R) {
  int32_t *par = R->parent;
  for (int64_t i = 0; i < R->nruns; i++) par[i] = par[i] == i ? (int32_t)i : par[par[i]];
  for (int64_t i = 0; i < R->nruns; i++) R->lit[par[i]] |= R->lit[i];
  for (int64_t i = 0; i < R->nruns; i++) R->lit[i] = R->lit[par[i]];
}

/* Whether row rr of x holds a 1 in columns a..b (clamped to the row). */
static int any_set(const uint8_t *x, int64_t nx, int64_t rr, int64_t a, int64_t b) {
  if (a < 0) a = 0;
  if (b > nx - 1) b = nx - 1;
  return a <= b && memchr(x + rr * nx + a, 1, (size_t)(b - a + 1)) != NULL;
}

/* Whether some offset (both halves of the symmetric set) maps a voxel of the
 * run [x0, x1) of row r (coordinates c) onto a 1 of x. */
static int run_touches(const cc_plan *p, const uint8_t *x, int64_t r, const int64_t *c, int64_t x0, int64_t x1) {
  const int64_t nx = p->nx;
  if (p->xconn && (any_set(x, nx, r, x0 - 1, x0 - 1) || any_set(x, nx, r, x1, x1))) return 1;
  for (int k = 0; k < p->ngroups; k++) {
    const cc_group *g = &p->groups[k];
    for (int dir = -1; dir <= 1; dir += 2) { /* -1: the offsets of the backward half, +1: their mirror */
      int ok = 1;
      for (int d = 0; d < p->nsp - 1 && ok; d++) {
        const int64_t y = c[p->nb + d] - dir * g->off[d];
        ok = y >= 0 && y < p->in->shape[p->nb + d];
      }
      if (!ok) continue;
      const int64_t rr = r + dir * g->drow;
      for (int i = g->first; i < g->first + g->nint; i++) {
        const int64_t lo = dir < 0 ? p->ilo[i] : -p->ihi[i], hi = dir < 0 ? p->ihi[i] : -p->ilo[i];
        if (any_set(x, nx, rr, x0 + lo, x1 - 1 + hi)) return 1;
      }
    }
  }
  return 0;
}

/*
 * The propagation's closure (propagate_bfs) for a symmetric set of offsets
 * holding 0, by components of the mask's runs: a component is lit when one
 * of its voxels is 1, has an offset onto a 1 (inside the mask or not), or
 * reaches outside the image while border_value is 1; the lit components are
 * set.  x is 0/1, contiguous.  NDF_ENOTSUP (nothing changed) for images of
 * 2^31 voxels or more.
 */
static ndf_status propagate_runs(ndf_ctx *ctx, const char *name, const int32_t *taps, int64_t ntaps, int nsp,
                                 uint8_t *x, const uint8_t *mask, int ndim, const int64_t *shape, int border) {
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) n *= shape[d];
  if (n >= INT32_MAX) return NDF_ENOTSUP;
  int32_t *bt = malloc((size_t)(ntaps > 0 ? ntaps : 1) * nsp * sizeof *bt);
  uint8_t *ones = mask ? NULL : malloc((size_t)n);
  if (!bt || (!mask && !ones)) {
    free(bt);
    free(ones);
    return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
  }
  if (ones) memset(ones, 1, (size_t)n);
  int64_t nbt = 0; /* the backward half */
  for (int64_t k = 0; k < ntaps; k++) {
    int d = 0;
    while (d < nsp && taps[k * nsp + d] == 0) d++;
    if (d < nsp && taps[k * nsp + d] < 0) memcpy(bt + nbt++ * nsp, taps + k * nsp, (size_t)nsp * sizeof *bt);
  }
  ndf_array m;
  ndf_array_init(&m, mask ? (void *)mask : ones, NDF_DEVICE_CPU, NDF_UINT8, ndim, shape);
  cc_plan p;
  cc_runs R;
  memset(&R, 0, sizeof R);
  ndf_status s = NDF_OK;
  if (cc_plan_init(&p, &m, ndim - nsp, bt, nbt, 1, border) != 0) s = ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
  p.light = 1;
  free(bt);
  if (s == NDF_OK) s = cc_build(ctx, name, &p, &R);
  if (s == NDF_OK) {
    const int nth = ndf__cpu_threads(ctx);
    const int64_t nx = p.nx;
#pragma omp parallel for num_threads(nth) schedule(dynamic, 64)
    for (int64_t r = 0; r < p.nrows; r++) {
      int64_t c[NDF_MAX_NDIM];
      ndf__lead_coords(&m, p.L, r, c);
      for (int32_t i = R.rstart[r]; i < R.rstart[r + 1]; i++)
        if (!R.lit[i]) R.lit[i] = any_set(x, nx, r, R.x0[i], R.x1[i] - 1) || run_touches(&p, x, r, c, R.x0[i], R.x1[i]);
    }
    cc_roots_lit(&R);
#pragma omp parallel for num_threads(nth) schedule(static)
    for (int64_t r = 0; r < p.nrows; r++)
      for (int32_t i = R.rstart[r]; i < R.rstart[r + 1]; i++)
        if (R.lit[i]) memset(x + r * nx + R.x0[i], 1, (size_t)(R.x1[i] - R.x0[i]));
  }
  cc_free(&p, &R);
  free(ones);
  return s;
}

/* 1 if the step's offsets are symmetric (t in the set implies -t is). */
static int symmetric_taps(const int32_t *taps, int64_t ntaps, int nsp) {
  for (int64_t k = 0; k < ntaps; k++) {
    int found = 0;
    for (int64_t m = 0; m < ntaps && !found; m++) {
      int eq = 1;
      for (int d = 0; d < nsp; d++) eq &= taps[m * nsp + d] == -taps[k * nsp + d];
      found = eq;
    }
    if (!found) return 0;
  }
  return 1;
}

/*
 * Propagation by breadth-first search.  When the dilation's offsets include 0
 * (the structure's centre, shifted by the origin, is true) the iterated
 * masked dilation only grows, so its limit is the least set containing the
 * input that is closed under "y (inside the mask) becomes 1 when y + t is 1,
 * or lies outside the image while border_value is 1, for some offset t".
 * That closure is what scipy's changed-pixel iteration computes, in
 * O(N * taps) instead of O(N * diameter).
 */
static ndf_status propagate_bfs(ndf_ctx *ctx, const char *name, const ndf__grey_geom *g, uint8_t *x,
                                const uint8_t *mask, int ndim, const int64_t *shape, int border) {
  const int nsp = g->nsp, nb = ndim - nsp;
  int64_t ntaps = g->ntaps, n = 1, st[NDF_MAX_NDIM];
  for (int d = ndim - 1; d >= 0; d--) { st[d] = n; n *= shape[d]; }
  int32_t *taps = g->taps, *boxtaps = NULL;
  if (g->is_box) { /* enumerate the box's offsets */
    boxtaps = malloc((size_t)ntaps * nsp * sizeof *boxtaps);
    if (!boxtaps) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
    for (int64_t k = 0; k < ntaps; k++) {
      int64_t r = k;
      for (int d = nsp - 1; d >= 0; d--) {
        boxtaps[k * nsp + d] = (int32_t)(g->lo[d] + r % g->box[d]);
        r /= g->box[d];
      }
    }
    taps = boxtaps;
  }
  if (symmetric_taps(taps, ntaps, nsp)) {
    ndf_status s = propagate_runs(ctx, name, taps, ntaps, nsp, x, mask, ndim, shape, border);
    if (s != NDF_ENOTSUP) {
      free(boxtaps);
      return s;
    }
  }
  int64_t *queue = malloc((size_t)(n > 0 ? n : 1) * sizeof *queue);
  if (!queue) {
    free(boxtaps);
    return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory for the propagation queue", name);
  }
  /* Least and greatest offset per spatial axis: a voxel reads the border only
   * if one of its coordinates is within that reach of an edge. */
  int64_t rlo[NDF_MAX_SPATIAL], rhi[NDF_MAX_SPATIAL];
  for (int d = 0; d < nsp; d++) {
    rlo[d] = INT64_MAX;
    rhi[d] = INT64_MIN;
    for (int64_t k = 0; k < ntaps; k++) {
      if (taps[k * nsp + d] < rlo[d]) rlo[d] = taps[k * nsp + d];
      if (taps[k * nsp + d] > rhi[d]) rhi[d] = taps[k * nsp + d];
    }
  }
  int64_t head = 0, tail = 0, c[NDF_MAX_NDIM] = {0};
  for (int64_t i = 0; i < n; i++) { /* seeds; c walks the coordinates of i */
    if (x[i]) {
      queue[tail++] = i;
    } else if (border && (!mask || mask[i])) {
      int near = 0;
      for (int d = 0; d < nsp; d++) near |= c[nb + d] + rlo[d] < 0 || c[nb + d] + rhi[d] >= shape[nb + d];
      int outside = 0; /* some tap of i reads the border */
      for (int64_t k = 0; near && k < ntaps && !outside; k++)
        for (int d = 0; d < nsp && !outside; d++) {
          int64_t y = c[nb + d] + taps[k * nsp + d];
          outside = y < 0 || y >= shape[nb + d];
        }
      if (outside) { x[i] = 1; queue[tail++] = i; }
    }
    for (int d = ndim - 1; d >= 0 && ++c[d] == shape[d]; d--) c[d] = 0;
  }
  const int small = n <= (int64_t)UINT32_MAX; /* 32-bit division is several times cheaper */
  uint32_t shape32[NDF_MAX_NDIM];
  for (int d = 0; d < ndim; d++) shape32[d] = (uint32_t)shape[d];
  while (head < tail) {
    int64_t i = queue[head++];
    if (small) {
      uint32_t r = (uint32_t)i;
      for (int d = ndim - 1; d >= 0; d--) { c[d] = r % shape32[d]; r /= shape32[d]; }
    } else {
      int64_t r = i;
      for (int d = ndim - 1; d >= 0; d--) { c[d] = r % shape[d]; r /= shape[d]; }
    }
    for (int64_t k = 0; k < ntaps; k++) { /* y = i - t gains i */
      int64_t off = 0;
      int ok = 1;
      for (int d = 0; d < nsp && ok; d++) {
        int64_t y = c[nb + d] - taps[k * nsp + d];
        ok = y >= 0 && y < shape[nb + d];
        off -= (int64_t)taps[k * nsp + d] * st[nb + d];
      }
      if (!ok) continue;
      int64_t j = i + off;
      if (!x[j] && (!mask || mask[j])) { x[j] = 1; queue[tail++] = j; }
    }
  }
  free(queue);
  free(boxtaps);
  return NDF_OK;
}

/* 1 if offset 0 is among the step's taps (the centre, shifted by origin, is in). */
static int has_centre(const step *sp) {
  const ndf__grey_geom *g = &sp->g;
  if (sp->empty) return 0;
  if (g->is_box) {
    for (int d = 0; d < g->nsp; d++)
      if (g->lo[d] > 0 || g->lo[d] + g->box[d] - 1 < 0) return 0;
    return 1;
  }
  for (int64_t k = 0; k < g->ntaps; k++) {
    int zero = 1;
    for (int d = 0; d < g->nsp; d++) zero &= g->taps[k * g->nsp + d] == 0;
    if (zero) return 1;
  }
  return 0;
}

/*
 * Applies op `iterations` times (< 1: until nothing changes) to the 0/1
 * buffer *cur, using *spare as the other buffer; on return *cur holds the
 * result.  A cycle of period > 1 (scipy would loop forever) is NDF_ENOTSUP.
 */
static ndf_status iterate(ndf_ctx *ctx, const char *name, const step *sp, binop op, uint8_t **cur, uint8_t **spare,
                          const uint8_t *mask, int ndim, const int64_t *shape, int iterations) {
  int64_t total = 1;
  for (int d = 0; d < ndim; d++) total *= shape[d];
  if (iterations >= 1) {
    for (int it = 0; it < iterations; it++) {
      int changed = run_step(ctx, sp, op, *cur, *spare, mask, ndim, shape, total);
      if (changed < 0) return NDF_ENOMEM;
      uint8_t *t = *cur; *cur = *spare; *spare = t;
      if (!changed) break; /* a fixed point: further steps change nothing */
    }
    return NDF_OK;
  }
  if (op == DILATE && has_centre(sp)) /* a growing sequence: its limit by search */
    return propagate_bfs(ctx, name, &sp->g, *cur, mask, ndim, shape, (int)sp->g.cval);
  /* Until nothing changes, with Brent's cycle detection on the states. */
  uint8_t *saved = malloc((size_t)(total > 0 ? total : 1));
  if (!saved) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
  memcpy(saved, *cur, (size_t)total);
  int64_t power = 1, lam = 0;
  for (;;) {
    int changed = run_step(ctx, sp, op, *cur, *spare, mask, ndim, shape, total);
    if (changed < 0) {
      free(saved);
      return NDF_ENOMEM;
    }
    uint8_t *t = *cur; *cur = *spare; *spare = t;
    if (!changed) break;
    lam++;
    if (memcmp(saved, *cur, (size_t)total) == 0) {
      free(saved);
      return ndf__error(ctx, NDF_ENOTSUP,
                        "%s: bad argument 'iterations' (< 1 never converges here: the result cycles with period "
                        "%lld; scipy would loop forever. Use a structure whose centre, shifted by origin, is "
                        "true, or a fixed number of iterations)", name, (long long)lam);
    }
    if (lam == power) {
      memcpy(saved, *cur, (size_t)total);
      power *= 2;
      lam = 0;
    }
  }
  free(saved);
  return NDF_OK;
}

/* Writes the 0/1 buffer into out (bool or uint8, any strides). */
static void store(const uint8_t *buf, ndf_array *out) {
  ndf_array src;
  ndf_array_init(&src, (void *)buf, NDF_DEVICE_CPU, out->dtype, out->ndim, out->shape);
  ndf__host_copy(out, &src);
}

/*
 * binary_fill_holes on host arrays when the dilation's offsets are symmetric
 * and hold 0: the background's components under those offsets, by runs; a
 * component that holds a voxel some offset maps outside the image stays
 * background, every other one is filled.  NDF_ENOTSUP (nothing written) for
 * other elements, which run the propagation.
 */
static ndf_status fill_holes_runs(ndf_ctx *ctx, const char *name, const step *dil, const ndf_array *in,
                                  ndf_array *out, int batch_dims) {
  const ndf__grey_geom *g = &dil->g;
  if (!has_centre(dil)) return NDF_ENOTSUP;
  const int nsp = g->nsp;
  int32_t *t = ndf__grey_geom_taps_copy(g);
  if (!t) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
  if (!symmetric_taps(t, g->ntaps, nsp)) {
    free(t);
    return NDF_ENOTSUP;
  }
  int64_t nbt = 0; /* the backward half, in place */
  for (int64_t k = 0; k < g->ntaps; k++) {
    int d = 0;
    while (d < nsp && t[k * nsp + d] == 0) d++;
    if (d < nsp && t[k * nsp + d] < 0) memmove(t + nbt++ * nsp, t + k * nsp, (size_t)nsp * sizeof *t);
  }
  cc_plan p;
  cc_runs R;
  memset(&R, 0, sizeof R);
  ndf_status s = NDF_OK;
  if (cc_plan_init(&p, in, batch_dims, t, nbt, 0, 1) != 0) s = ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
  p.light = 1;
  free(t);
  if (s == NDF_OK) s = cc_build(ctx, name, &p, &R);
  if (s == NDF_OK) {
    cc_roots_lit(&R);
    const int nth = ndf__cpu_threads(ctx), L = p.L;
    const int64_t nx = p.nx, sx = out->strides[L];
#pragma omp parallel for num_threads(nth) schedule(static)
    for (int64_t r = 0; r < p.nrows; r++) {
      int64_t c[NDF_MAX_NDIM];
      uint8_t *o = (uint8_t *)out->data + ndf__lead_coords(out, L, r, c);
      if (sx == 1) memset(o, 1, (size_t)nx);
      else for (int64_t x = 0; x < nx; x++) o[x * sx] = 1;
      for (int32_t i = R.rstart[r]; i < R.rstart[r + 1]; i++)
        if (R.lit[i])
          for (int64_t x = R.x0[i]; x < R.x1[i]; x++) o[x * sx] = 0;
    }
  }
  cc_free(&p, &R);
  return s;
}

/* ---- the ops ------------------------------------------------------------------------------------ */

typedef ndf__binary_kind binary_kind;
#define B_EROSION NDF__B_EROSION
#define B_DILATION NDF__B_DILATION
#define B_OPENING NDF__B_OPENING
#define B_CLOSING NDF__B_CLOSING
#define B_PROPAGATION NDF__B_PROPAGATION
#define B_FILL_HOLES NDF__B_FILL_HOLES

/* A binary op; with warm, its CUDA path's kernels are compiled instead (ndf_cache_warm_binary). */
static ndf_status binary(ndf_ctx *ctx, const char *name, binary_kind kind, const ndf_array *in, ndf_array *out,
                         const ndf_binary_options *opt, ndf__warm *warm) {
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  ndf__clear_error(ctx);
  if (!opt) return ndf__argerror(ctx, name, "options", "NULL");
  ndf_status s = check_io(ctx, name, in, out, opt->batch_dims, 0);
  if (s != NDF_OK) return s;
  const int nsp = in->ndim - opt->batch_dims;
  if (kind != B_FILL_HOLES && (s = check_mask(ctx, name, opt->mask, in, out)) != NDF_OK) return s;
  int border = opt->border_value;
  if (kind == B_FILL_HOLES) border = 1;
  else if (border != 0 && border != 1) return ndf__argerror(ctx, name, "border_value", "%d must be 0 or 1", border);
  if (opt->norigin != 0 && opt->norigin != 1 && opt->norigin != nsp)
    return ndf__argerror(ctx, name, "origin", "%d values for %d spatial axes (give 1 or %d)", opt->norigin, nsp, nsp);

  uint8_t *sbuf = NULL, *a = NULL, *b = NULL, *m = NULL;
  ndf_array sdesc;
  step ero, dil;
  memset(&ero, 0, sizeof ero);
  memset(&dil, 0, sizeof dil);
  if ((s = get_structure(ctx, name, "structure", opt->structure, nsp, &sbuf, &sdesc)) != NDF_OK) goto done;
  /* Prepare (and so validate) every step before anything is computed. */
  int need_ero = kind == B_EROSION || kind == B_OPENING || kind == B_CLOSING;
  int need_dil = kind != B_EROSION;
  if (need_ero && (s = prepare_step(ctx, name, ERODE, &sdesc, in->ndim, in->shape, opt->norigin, opt->origin, border,
                                    opt->batch_dims, &ero)) != NDF_OK)
    goto done;
  if (need_dil && (s = prepare_step(ctx, name, DILATE, &sdesc, in->ndim, in->shape, opt->norigin, opt->origin, border,
                                    opt->batch_dims, &dil)) != NDF_OK)
    goto done;
  if (warm) {
    s = ndf__binary_cuda_warm(warm, ctx, name, kind, in, out, opt->mask, &ero, &dil, border, opt->iterations,
                              opt->batch_dims);
    goto done;
  }
  const int64_t n = ndf_array_size(in);
  if (n == 0) goto done;
  if (in->device == NDF_DEVICE_CUDA) {
    s = ndf__binary_cuda(ctx, name, kind, in, out, kind == B_FILL_HOLES ? NULL : opt->mask, &ero, &dil, border,
                         opt->iterations, opt->batch_dims);
    goto done;
  }
  if (kind == B_FILL_HOLES && !dil.empty && (s = fill_holes_runs(ctx, name, &dil, in, out, opt->batch_dims)) != NDF_ENOTSUP)
    goto done;
  s = NDF_OK;
  if ((s = binarize(ctx, in, &a)) != NDF_OK) goto done;
  b = malloc((size_t)n);
  if (!b) { s = ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name); goto done; }
  if (kind == B_FILL_HOLES) { /* propagate zeros into NOT input, border 1; the result is negated */
    m = a;
    a = malloc((size_t)n);
    if (!a) { s = ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name); goto done; }
    for (int64_t i = 0; i < n; i++) { m[i] = !m[i]; a[i] = 0; }
  } else if (opt->mask && (s = binarize(ctx, opt->mask, &m)) != NDF_OK) {
    goto done;
  }
  const int iters = (kind == B_PROPAGATION || kind == B_FILL_HOLES) ? -1 : opt->iterations;
  switch (kind) {
    case B_EROSION: s = iterate(ctx, name, &ero, ERODE, &a, &b, m, in->ndim, in->shape, iters); break;
    case B_DILATION:
    case B_PROPAGATION:
    case B_FILL_HOLES: s = iterate(ctx, name, &dil, DILATE, &a, &b, m, in->ndim, in->shape, iters); break;
    case B_OPENING:
      s = iterate(ctx, name, &ero, ERODE, &a, &b, m, in->ndim, in->shape, iters);
      if (s == NDF_OK) s = iterate(ctx, name, &dil, DILATE, &a, &b, m, in->ndim, in->shape, iters);
      break;
    case B_CLOSING:
      s = iterate(ctx, name, &dil, DILATE, &a, &b, m, in->ndim, in->shape, iters);
      if (s == NDF_OK) s = iterate(ctx, name, &ero, ERODE, &a, &b, m, in->ndim, in->shape, iters);
      break;
  }
  if (s == NDF_OK) {
    if (kind == B_FILL_HOLES)
      for (int64_t i = 0; i < n; i++) a[i] = !a[i];
    store(a, out);
  }
done:
  ndf__grey_geom_free(&ero.g);
  ndf__grey_geom_free(&dil.g);
  free(sbuf);
  free(a);
  free(b);
  free(m);
  return s;
}

ndf_status ndf_binary_erosion(ndf_ctx *ctx, const ndf_array *in, ndf_array *out, const ndf_binary_options *opt) {
  return binary(ctx, "ndf_binary_erosion", B_EROSION, in, out, opt, NULL);
}
ndf_status ndf_binary_dilation(ndf_ctx *ctx, const ndf_array *in, ndf_array *out, const ndf_binary_options *opt) {
  return binary(ctx, "ndf_binary_dilation", B_DILATION, in, out, opt, NULL);
}
ndf_status ndf_binary_opening(ndf_ctx *ctx, const ndf_array *in, ndf_array *out, const ndf_binary_options *opt) {
  return binary(ctx, "ndf_binary_opening", B_OPENING, in, out, opt, NULL);
}
ndf_status ndf_binary_closing(ndf_ctx *ctx, const ndf_array *in, ndf_array *out, const ndf_binary_options *opt) {
  return binary(ctx, "ndf_binary_closing", B_CLOSING, in, out, opt, NULL);
}
ndf_status ndf_binary_propagation(ndf_ctx *ctx, const ndf_array *in, ndf_array *out, const ndf_binary_options *opt) {
  return binary(ctx, "ndf_binary_propagation", B_PROPAGATION, in, out, opt, NULL);
}
ndf_status ndf_binary_fill_holes(ndf_ctx *ctx, const ndf_array *in, ndf_array *out, const ndf_binary_options *opt) {
  return binary(ctx, "ndf_binary_fill_holes", B_FILL_HOLES, in, out, opt, NULL);
}

/* hit = erosion by structure1 (origin1, border 0); miss = 1 where any
 * structure2 neighbour (unreflected, origin2, outside = background) is 1;
 * out = hit AND NOT miss. */
static ndf_status hit_or_miss(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out,
                              const ndf_hit_or_miss_options *opt, ndf__warm *warm) {
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  ndf__clear_error(ctx);
  if (!opt) return ndf__argerror(ctx, name, "options", "NULL");
  ndf_status s = check_io(ctx, name, in, out, opt->batch_dims, 0);
  if (s != NDF_OK) return s;
  const int nsp = in->ndim - opt->batch_dims;
  if (opt->norigin1 != 0 && opt->norigin1 != 1 && opt->norigin1 != nsp)
    return ndf__argerror(ctx, name, "origin1", "%d values for %d spatial axes (give 1 or %d)", opt->norigin1, nsp, nsp);
  if (opt->norigin2 != -1 && opt->norigin2 != 0 && opt->norigin2 != 1 && opt->norigin2 != nsp)
    return ndf__argerror(ctx, name, "origin2", "%d values for %d spatial axes (give -1, 1 or %d)", opt->norigin2, nsp, nsp);
  uint8_t *s1 = NULL, *s2 = NULL, *a = NULL, *hit = NULL, *miss = NULL;
  ndf_array d1, d2;
  step st1, st2;
  memset(&st1, 0, sizeof st1);
  memset(&st2, 0, sizeof st2);
  if ((s = get_structure(ctx, name, "structure1", opt->structure1, nsp, &s1, &d1)) != NDF_OK) goto done;
  if (opt->structure2) {
    if ((s = get_structure(ctx, name, "structure2", opt->structure2, nsp, &s2, &d2)) != NDF_OK) goto done;
  } else { /* NOT structure1 */
    int64_t k = ndf_array_size(&d1);
    if (!(s2 = malloc((size_t)k))) { s = ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name); goto done; }
    for (int64_t i = 0; i < k; i++) s2[i] = !s1[i];
    ndf_array_init(&d2, s2, NDF_DEVICE_CPU, NDF_UINT8, nsp, d1.shape);
  }
  const int n2 = opt->norigin2 == -1 ? opt->norigin1 : opt->norigin2;
  const int64_t *o2 = opt->norigin2 == -1 ? opt->origin1 : opt->origin2;
  if ((s = prepare_step(ctx, name, ERODE, &d1, in->ndim, in->shape, opt->norigin1, opt->origin1, 0, opt->batch_dims,
                        &st1)) != NDF_OK)
    goto done;
  /* The miss part: erosion-style offsets, taking the maximum. */
  if ((s = prepare_step(ctx, name, ERODE, &d2, in->ndim, in->shape, n2, o2, 0, opt->batch_dims, &st2)) != NDF_OK)
    goto done;
  st2.g.op = NDF__MAX;
  if (warm) {
    s = ndf__hit_or_miss_cuda_warm(warm, ctx, name, in, out, &st1, &st2, opt->batch_dims);
    goto done;
  }
  const int64_t n = ndf_array_size(in);
  if (n == 0) goto done;
  if (in->device == NDF_DEVICE_CUDA) {
    s = ndf__hit_or_miss_cuda(ctx, name, in, out, &st1, &st2, opt->batch_dims);
    goto done;
  }
  if ((s = binarize(ctx, in, &a)) != NDF_OK) goto done;
  hit = malloc((size_t)n);
  miss = malloc((size_t)n);
  if (!hit || !miss) { s = ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name); goto done; }
  if (run_step(ctx, &st1, ERODE, a, hit, NULL, in->ndim, in->shape, n) < 0 ||
      run_step(ctx, &st2, DILATE, a, miss, NULL, in->ndim, in->shape, n) < 0) { /* empty structure2: no miss */
    s = NDF_ENOMEM;
    goto done;
  }
  for (int64_t i = 0; i < n; i++) hit[i] = hit[i] && !miss[i];
  store(hit, out);
done:
  ndf__grey_geom_free(&st1.g);
  ndf__grey_geom_free(&st2.g);
  free(s1);
  free(s2);
  free(a);
  free(hit);
  free(miss);
  return s;
}

ndf_status ndf_binary_hit_or_miss(ndf_ctx *ctx, const ndf_array *in, ndf_array *out,
                                  const ndf_hit_or_miss_options *opt) {
  return hit_or_miss(ctx, "ndf_binary_hit_or_miss", in, out, opt, NULL);
}

/* ---- iterate_structure ------------------------------------------------------------------------------ */

ndf_status ndf_iterate_structure_shape(const ndf_array *st, int iterations, int64_t *shape) {
  static const char *name = "ndf_iterate_structure";
  if (!st || !shape) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument '%s' (NULL)", name, !st ? "structure" : "shape");
  if (st->ndim < 1 || st->ndim > NDF_MAX_SPATIAL)
    return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'structure' (rank %d is not in 1..%d)", name, st->ndim, NDF_MAX_SPATIAL);
  if (ndf__check_array(NULL, name, "structure", st, NULL) != NDF_OK) return NDF_EINVAL;
  int ni = iterations < 2 ? 0 : iterations - 1;
  int64_t n = 1;
  for (int d = 0; d < st->ndim; d++) {
    if (st->shape[d] < 1) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'structure' (shape[%d] is empty)", name, d);
    int64_t grow;
    if (!ndf__mul(ni, st->shape[d] - 1, &grow) || __builtin_add_overflow(st->shape[d], grow, &shape[d]) ||
        !ndf__mul(n, shape[d], &n) || n > NDF_MAX_STRUCTURE_ELEMENTS)
      return ndf__error(NULL, NDF_EINVAL,
                        "%s: bad argument 'iterations' (%d iterations of a structure of shape %s give more than "
                        "NDF_MAX_STRUCTURE_ELEMENTS = %lld elements)", name, iterations,
                        ndf__shape_str(st->ndim, st->shape, (char[NDF_MAX_NDIM * 21 + 4]){0}, NDF_MAX_NDIM * 21 + 4),
                        (long long)NDF_MAX_STRUCTURE_ELEMENTS);
  }
  return NDF_OK;
}

/* scipy: out = zeros(shape); out[centre slice] = structure; out = binary_dilation(out, structure, ni). */
ndf_status ndf_iterate_structure(const ndf_array *st, int iterations, ndf_array *out, int norigin,
                                 const int64_t *origin, int64_t *origin_out) {
  static const char *name = "ndf_iterate_structure";
  int64_t shape[NDF_MAX_SPATIAL];
  ndf_status s = ndf_iterate_structure_shape(st, iterations, shape);
  if (s != NDF_OK) return s;
  if (!out || !out->data || out->device != NDF_DEVICE_CPU || (out->dtype != NDF_BOOL && out->dtype != NDF_UINT8))
    return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'out' (a host bool or uint8 array is needed)", name);
  if (st->device != NDF_DEVICE_CPU || !st->data)
    return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'structure' (a host array is needed)", name);
  if (out->ndim != st->ndim) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'out' (rank %d, expected %d)", name, out->ndim, st->ndim);
  for (int d = 0; d < st->ndim; d++)
    if (out->shape[d] != shape[d])
      return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'out' (shape[%d]=%lld, expected %lld)", name, d,
                        (long long)out->shape[d], (long long)shape[d]);
  if (norigin != 0 && norigin != 1 && norigin != st->ndim)
    return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'origin' (%d values for rank %d)", name, norigin, st->ndim);
  if (norigin && !origin) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'origin' (NULL)", name);
  ndf_ctx *ctx = NULL;
  ndf_ctx_options co;
  ndf_ctx_options_init(&co);
  co.backend = NDF_BACKEND_CPU;
  co.cache_disable = 1;
  if ((s = ndf_ctx_create(&ctx, &co)) != NDF_OK) return s;
  uint8_t *sb = NULL, *res = NULL, *tmp = NULL;
  if ((s = binarize(ctx, st, &sb)) != NDF_OK) goto done;
  int64_t n = 1, taps = 0, work;
  for (int d = 0; d < st->ndim; d++) n *= shape[d]; /* at most NDF_MAX_STRUCTURE_ELEMENTS */
  for (int64_t i = 0; i < ndf_array_size(st); i++) taps += sb[i];
  /* iterations - 1 dilation steps over the whole result */
  if (!ndf__mul(iterations < 2 ? 0 : iterations - 1, taps, &work) || !ndf__mul(work, n, &work) ||
      work > NDF_MAX_STRUCTURE_WORK) {
    s = ndf__argerror(ctx, name, "iterations", "%d iterations of a structure of %lld true elements over %lld "
                      "elements take more than NDF_MAX_STRUCTURE_WORK = %lld steps", iterations, (long long)taps,
                      (long long)n, (long long)NDF_MAX_STRUCTURE_WORK);
    goto done;
  }
  /* The scaled origin (iterations x origin) must fit int64, checked before anything is written. */
  for (int d = 0; origin_out && norigin && d < st->ndim; d++) {
    int64_t o = origin[norigin == 1 ? 0 : d], scaled;
    if (iterations >= 2 && __builtin_mul_overflow(o, (int64_t)iterations, &scaled)) {
      s = ndf__argerror(ctx, name, "origin", "origin[%d]=%lld times %d iterations overflows int64", d, (long long)o,
                        iterations);
      goto done;
    }
  }
  res = calloc((size_t)n, 1);
  tmp = malloc((size_t)n);
  if (!res || !tmp) { s = ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name); goto done; }
  const int ni = iterations < 2 ? 0 : iterations - 1;
  /* Place the structure at pos = ni * (s // 2) on every axis. */
  int64_t sn = ndf_array_size(st);
  for (int64_t i = 0; i < sn; i++) {
    int64_t r = i, off = 0, stride = 1;
    int64_t c[NDF_MAX_SPATIAL];
    for (int d = st->ndim - 1; d >= 0; d--) { c[d] = r % st->shape[d]; r /= st->shape[d]; }
    for (int d = st->ndim - 1; d >= 0; d--) {
      off += (c[d] + (int64_t)ni * (st->shape[d] / 2)) * stride;
      stride *= shape[d];
    }
    res[off] = sb[i];
  }
  if (ni > 0) {
    ndf_array sdesc;
    ndf_array_init(&sdesc, sb, NDF_DEVICE_CPU, NDF_UINT8, st->ndim, st->shape);
    step dil;
    if ((s = prepare_step(ctx, name, DILATE, &sdesc, st->ndim, shape, 0, NULL, 0, 0, &dil)) != NDF_OK) goto done;
    uint8_t *cur = res, *spare = tmp;
    s = iterate(ctx, name, &dil, DILATE, &cur, &spare, NULL, st->ndim, shape, ni);
    ndf__grey_geom_free(&dil.g);
    res = cur;
    tmp = spare;
  }
  if (s == NDF_OK) {
    store(res, out);
    if (origin_out)
      for (int d = 0; d < st->ndim; d++) { /* scipy scales the origin by iterations (from 2 on) */
        int64_t o = norigin ? origin[norigin == 1 ? 0 : d] : 0;
        origin_out[d] = iterations < 2 ? o : (int64_t)iterations * o;
      }
  }
done:
  if (s != NDF_OK) ndf__error(NULL, s, "%s", ndf_errmsg(ctx));
  ndf_ctx_destroy(ctx);
  free(sb);
  free(res);
  free(tmp);
  return s;
}

/* ---- label ------------------------------------------------------------------------------------------ */

/* Writes one output row of labels: 0, then lab[i] over each run i of a..ae. */
static void put_label_row(const ndf_array *out, int64_t off, int64_t nx, const cc_runs *R, int32_t a, int32_t ae) {
  const int64_t sx = out->strides[out->ndim - 1];
  switch (out->dtype) {
#define PUT_ROW(T)                                                               \
  {                                                                              \
    T *o = (T *)out->data + off;                                                 \
    if (sx == 1) memset(o, 0, (size_t)nx * sizeof(T)); /* 0 bits: 0 and 0.0 */   \
    else for (int64_t x = 0; x < nx; x++) o[x * sx] = 0;                         \
    for (int32_t i = a; i < ae; i++) {                                           \
      const T v = (T)R->parent[i];                                               \
      for (int64_t x = R->x0[i]; x < R->x1[i]; x++) o[x * sx] = v;               \
    }                                                                            \
  }                                                                              \
  break;
    case NDF_UINT8: PUT_ROW(uint8_t)
    case NDF_INT8: PUT_ROW(int8_t)
    case NDF_UINT16: PUT_ROW(uint16_t)
    case NDF_INT16: PUT_ROW(int16_t)
    case NDF_UINT32: PUT_ROW(uint32_t)
    case NDF_INT32: PUT_ROW(int32_t)
    case NDF_INT64: PUT_ROW(int64_t)
    case NDF_UINT64: PUT_ROW(uint64_t)
    case NDF_FLOAT32: PUT_ROW(float)
    case NDF_FLOAT64: PUT_ROW(double)
#undef PUT_ROW
    default: break;
  }
}

/* label on host arrays by runs; bt = the structure's backward half (nbt offsets). */
static ndf_status label_cpu(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out, const int32_t *bt,
                            int64_t nbt, int batch_dims, int64_t nimg, int64_t *num_features) {
  cc_plan p;
  cc_runs R;
  memset(&R, 0, sizeof R);
  int64_t *lab = malloc((size_t)nimg * sizeof *lab);
  ndf_status s = NDF_OK;
  if (cc_plan_init(&p, in, batch_dims, bt, nbt, 1, 0) != 0 || !lab) {
    s = ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
    goto done;
  }
  if ((s = cc_build(ctx, name, &p, &R)) != NDF_OK) goto done;
  /* Number the roots in raster order per image: parent[i] <= i, so one
   * forward pass turns every parent into its root's number. */
  const int64_t rpi = p.nrows / nimg, cap = label_capacity(out->dtype);
  int32_t *par = R.parent;
  for (int64_t b = 0; b < nimg; b++) {
    int32_t next = 0;
    for (int32_t i = R.rstart[b * rpi]; i < R.rstart[(b + 1) * rpi]; i++) par[i] = par[i] == i ? ++next : par[par[i]];
    lab[b] = next;
    if (next > cap) {
      s = ndf__error(ctx, NDF_EINVAL, "%s: bad argument 'output' (insufficient bit-depth: %lld features do not fit %s)",
                     name, (long long)next, ndf_dtype_name(out->dtype));
      goto done;
    }
  }
  const int nth = ndf__cpu_threads(ctx);
#pragma omp parallel for num_threads(nth) schedule(static)
  for (int64_t r = 0; r < p.nrows; r++) {
    int64_t c[NDF_MAX_NDIM];
    put_label_row(out, ndf__lead_coords(out, p.L, r, c), p.nx, &R, R.rstart[r], R.rstart[r + 1]);
  }
  if (num_features)
    for (int64_t b = 0; b < nimg; b++) num_features[b] = lab[b];
done:
  cc_free(&p, &R);
  free(lab);
  return s;
}

/*
 * scipy's label scans its output line by line: the lines run along the axis
 * numpy's PyArray_IterAllButAxis picks for the output (the first axis of the
 * smallest positive stride, searched from the first non-zero stride on; axis 0
 * when that stride is negative and no positive one is smaller), the lines in
 * C order of the other axes.  Features are numbered in that scan order: raster
 * order for a C-ordered output, lines along axis 0 for a Fortran-ordered one.  The
 * axis is chosen among the spatial axes of each image.
 */
static int label_line_axis(const ndf_array *out, int batch_dims) {
  const int nsp = out->ndim - batch_dims;
  const int64_t *st = out->strides + batch_dims;
  int64_t minst = 0;
  for (int d = 0; minst == 0 && d < nsp; d++) minst = st[d];
  int axis = 0;
  for (int d = 1; d < nsp; d++)
    if (st[d] > 0 && st[d] < minst) {
      axis = d;
      minst = st[d];
    }
  return axis;
}

/* The axes of the scan (line axis last); 1 when that is not plain C order. */
static int label_scan_perm(const ndf_array *out, int batch_dims, int *perm) {
  const int axis = batch_dims + label_line_axis(out, batch_dims);
  int k = 0, later = 0;
  for (int d = 0; d < out->ndim; d++)
    if (d != axis) perm[k++] = d;
  perm[k] = axis;
  for (int d = axis + 1; d < out->ndim; d++) later |= out->shape[d] > 1;
  return later && out->shape[axis] > 1;
}

static ndf_array permuted_view(const ndf_array *a, const int *perm) {
  ndf_array v = *a;
  for (int d = 0; d < a->ndim; d++) {
    v.shape[d] = a->shape[perm[d]];
    v.strides[d] = a->strides[perm[d]];
  }
  return v;
}

/* Image b of a batch as an array of its own. */
static ndf_array image_view(const ndf_array *a, int batch_dims, int64_t b) {
  int64_t c[NDF_MAX_NDIM];
  const int64_t off = ndf__lead_coords(a, batch_dims, b, c);
  ndf_array v = *a;
  v.data = (char *)a->data + off * (int64_t)ndf_dtype_size(a->dtype);
  v.ndim = a->ndim - batch_dims;
  memmove(v.shape, a->shape + batch_dims, (size_t)v.ndim * sizeof *v.shape);
  memmove(v.strides, a->strides + batch_dims, (size_t)v.ndim * sizeof *v.strides);
  return v;
}

static int nonzero_at(const ndf_array *a, int64_t off) {
  switch (a->dtype) {
    case NDF_BOOL: case NDF_UINT8: case NDF_INT8: return ((const uint8_t *)a->data)[off] != 0;
    case NDF_UINT16: case NDF_INT16: return ((const uint16_t *)a->data)[off] != 0;
    case NDF_UINT32: case NDF_INT32: return ((const uint32_t *)a->data)[off] != 0;
    case NDF_UINT64: case NDF_INT64: return ((const uint64_t *)a->data)[off] != 0;
    case NDF_FLOAT32: return ((const float *)a->data)[off] != 0; /* NaN non-zero, -0.0 zero */
    case NDF_FLOAT64: return ((const double *)a->data)[off] != 0;
    default: return 0;
  }
}

/*
 * Whether scipy's first pass gives an image more provisional labels than the
 * output dtype holds (its NeedMoreBits): a foreground voxel opens a label when
 * no taps[] neighbour (the structure's half before the centre, in scan order)
 * is foreground.  scipy then labels that image again into a C-ordered int32
 * array and copies it, so its features come in raster order.  img: one image
 * of a host array, its axes in scan order.
 */
static int label_overflows(const ndf_array *img, const int32_t *taps, int64_t ntaps, int64_t cap) {
  const int nd = img->ndim;
  const int64_t n = ndf_array_size(img);
  if (n < cap) return 0; /* at most one label per voxel */
  int64_t c[NDF_MAX_NDIM] = {0}, opened = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t off = 0;
    for (int d = 0; d < nd; d++) off += c[d] * img->strides[d];
    if (nonzero_at(img, off)) {
      int joined = 0;
      for (int64_t k = 0; k < ntaps && !joined; k++) {
        int64_t o = off;
        int inside = 1;
        for (int d = 0; d < nd && inside; d++) {
          const int64_t q = c[d] + taps[k * nd + d];
          inside = q >= 0 && q < img->shape[d];
          o += taps[k * nd + d] * img->strides[d];
        }
        joined = inside && nonzero_at(img, o);
      }
      if (!joined && ++opened >= cap) return 1;
    }
    for (int d = nd - 1; d >= 0 && ++c[d] == img->shape[d]; d--) c[d] = 0;
  }
  return 0;
}

/* The structure's half before the centre in raster order of the scan axes
 * perm (each undirected edge once), as offsets over those axes. */
static int64_t scan_taps(const uint8_t *sb, int64_t sn, int nsp, const int *perm, int batch_dims, int32_t *taps) {
  int64_t pow3[NDF_MAX_SPATIAL], ntaps = 0;
  for (int d = nsp - 1, m = 1; d >= 0; d--, m *= 3) pow3[d] = m;
  for (int64_t kk = 0; kk < sn / 2; kk++) {
    int64_t r = kk, k = 0;
    for (int d = nsp - 1; d >= 0; d--) {
      taps[ntaps * nsp + d] = (int32_t)(r % 3) - 1;
      k += (r % 3) * pow3[perm[batch_dims + d] - batch_dims];
      r /= 3;
    }
    ntaps += sb[k] != 0;
  }
  return ntaps;
}

/*
 * Labels in the scan order perm (scipy's, with the line axis last): the CPU
 * runs or the CUDA union-find on the permuted views, whose raster order is
 * the scan order.
 */
static ndf_status label_run(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out, const uint8_t *sb,
                            int64_t sn, const int *perm, int batch_dims, int64_t *num_features, ndf__warm *warm) {
  const int nsp = in->ndim - batch_dims;
  int64_t nimg = 1;
  for (int d = 0; d < batch_dims; d++) nimg *= in->shape[d];
  int32_t *taps = malloc((size_t)(sn / 2 + 1) * nsp * sizeof *taps); /* heap: up to 3^8/2 offsets */
  if (!taps) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
  const int64_t ntaps = scan_taps(sb, sn, nsp, perm, batch_dims, taps);
  const ndf_array pin = permuted_view(in, perm);
  ndf_array pout = permuted_view(out, perm);
  ndf_status s;
  if (warm)
    s = ndf__label_cuda_warm(warm, ctx, name, &pin, &pout, taps, ntaps, batch_dims);
  else if (in->device == NDF_DEVICE_CUDA)
    s = ndf__label_cuda(ctx, name, &pin, &pout, taps, ntaps, nsp, batch_dims, label_capacity(out->dtype),
                        num_features);
  else
    s = label_cpu(ctx, name, &pin, &pout, taps, ntaps, batch_dims, nimg, num_features);
  free(taps);
  return s;
}

/* Which images scipy numbers in raster order after all (label_overflows):
 * over[b] = 1 for those, *nover their number.  A CUDA input is read through
 * a host copy (a synchronization). */
static ndf_status label_fallbacks(ndf_ctx *ctx, const char *name, const ndf_array *in, const uint8_t *sb,
                                  int64_t sn, const int *perm, int batch_dims, int64_t nimg, int64_t cap,
                                  uint8_t *over, int64_t *nover) {
  const int nsp = in->ndim - batch_dims;
  ndf_array host = *in;
  void *buf = NULL;
  int32_t *taps = malloc((size_t)(sn / 2 + 1) * nsp * sizeof *taps);
  ndf_status s = NDF_OK;
  *nover = 0;
  if (in->device != NDF_DEVICE_CPU) {
    buf = malloc((size_t)ndf_array_size(in) * ndf_dtype_size(in->dtype));
    if (buf) {
      ndf_array_init(&host, buf, NDF_DEVICE_CPU, in->dtype, in->ndim, in->shape);
      s = ndf_array_copy(ctx, &host, in);
    }
  }
  if (!taps || (in->device != NDF_DEVICE_CPU && !buf)) s = ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
  if (s == NDF_OK) {
    const int64_t ntaps = scan_taps(sb, sn, nsp, perm, batch_dims, taps);
    const ndf_array pin = permuted_view(&host, perm);
    for (int64_t b = 0; b < nimg; b++) {
      const ndf_array img = image_view(&pin, batch_dims, b);
      over[b] = (uint8_t)label_overflows(&img, taps, ntaps, cap);
      *nover += over[b];
    }
  }
  free(taps);
  free(buf);
  return s;
}

/*
 * Connected components of the foreground under the structure's backward half
 * (each undirected edge once), numbered in scipy's scan order of their first
 * voxel: by runs on host arrays, by union-find on CUDA arrays.
 */
static ndf_status label(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out,
                        const ndf_array *structure, int batch_dims, int64_t *num_features, ndf__warm *warm) {
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  ndf__clear_error(ctx);
  ndf_status s = check_io(ctx, name, in, out, batch_dims, 1);
  if (s != NDF_OK) return s;
  const int nsp = in->ndim - batch_dims;
  const int64_t n = ndf_array_size(in);
  if (n >= INT32_MAX) return ndf__error(ctx, NDF_ENOTSUP, "%s: inputs of 2^31 elements or more are not supported yet", name);

  uint8_t *sb = NULL, *over = NULL;
  int64_t *counts = NULL;
  ndf_array sdesc;
  if ((s = get_structure(ctx, name, "structure", structure, nsp, &sb, &sdesc)) != NDF_OK) return s;
  int64_t sn = ndf_array_size(&sdesc);
  for (int d = 0; d < nsp; d++)
    if (sdesc.shape[d] != 3) {
      s = ndf__argerror(ctx, name, "structure", "shape[%d]=%lld; every axis must be 3", d, (long long)sdesc.shape[d]);
      goto done;
    }
  for (int64_t i = 0; i < sn; i++)
    if (sb[i] != sb[sn - 1 - i]) {
      s = ndf__argerror(ctx, name, "structure", "is not symmetric");
      goto done;
    }
  int64_t nimg = 1;
  for (int d = 0; d < batch_dims; d++) nimg *= in->shape[d];
  if (n == 0 && !warm) {
    if (num_features)
      for (int64_t b = 0; b < nimg; b++) num_features[b] = 0;
    goto done;
  }
  /* A bool output is scipy's npy_bool: it receives the labels' bytes, as a
   * uint8 one; where scipy's first pass overflows the byte, scipy casts its
   * int32 labels to bool and refuses any label beyond 1. */
  ndf_array ov;
  const int isbool = out->dtype == NDF_BOOL;
  if (isbool) {
    ov = *out;
    ov.dtype = NDF_UINT8;
    out = &ov;
  }
  int perm[NDF_MAX_NDIM], ident[NDF_MAX_NDIM];
  for (int d = 0; d < in->ndim; d++) ident[d] = d;
  const int64_t cap = label_capacity(out->dtype);
  const int scan = !warm && label_scan_perm(out, batch_dims, perm);
  if (warm || (!scan && !isbool)) {
    s = label_run(ctx, name, in, out, sb, sn, ident, batch_dims, num_features, warm);
    goto done;
  }
  if (!scan) memcpy(perm, ident, sizeof perm);
  int64_t nover = 0;
  if (cap <= n / nimg) {
    if (!(over = calloc((size_t)nimg, 1))) {
      s = ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
      goto done;
    }
    s = label_fallbacks(ctx, name, in, sb, sn, perm, batch_dims, nimg, cap, over, &nover);
    if (s != NDF_OK) goto done;
  }
  if (nover == 0) {
    s = label_run(ctx, name, in, out, sb, sn, perm, batch_dims, num_features, NULL);
    goto done;
  }
  /* Some images fall back to raster order: every image labelled so into a
   * scratch array (which checks every count before writing), the others
   * again in the scan order of their part of the output, then the scratch
   * copied out, so that a failure leaves the output and the counts as they
   * were. */
  ndf_array tmp;
  if (!(counts = malloc((size_t)nimg * sizeof *counts))) {
    s = ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
    goto done;
  }
  if ((s = ndf_array_alloc(ctx, &tmp, in->device, out->dtype, out->ndim, out->shape)) != NDF_OK) goto done;
  s = label_run(ctx, name, in, &tmp, sb, sn, ident, batch_dims, counts, NULL);
  for (int64_t b = 0; b < nimg && s == NDF_OK && isbool; b++)
    if (over[b] && counts[b] > 1)
      s = ndf__error(ctx, NDF_EINVAL,
                     "%s: bad argument 'output' (insufficient bit-depth: %lld features do not fit bool, scipy's "
                     "first pass overflowing its byte)", name, (long long)counts[b]);
  for (int64_t b = 0; b < nimg && s == NDF_OK && scan; b++) {
    if (over[b]) continue;
    const ndf_array ib = image_view(in, batch_dims, b), ob = image_view(out, batch_dims, b);
    ndf_array tb = image_view(&tmp, batch_dims, b);
    int p1[NDF_MAX_NDIM];
    label_scan_perm(&ob, 0, p1);
    s = label_run(ctx, name, &ib, &tb, sb, sn, p1, 0, NULL, NULL);
  }
  if (s == NDF_OK) s = ndf_array_copy(ctx, out, &tmp);
  ndf_array_free(ctx, &tmp);
  if (s == NDF_OK && num_features) memcpy(num_features, counts, (size_t)nimg * sizeof *counts);
done:
  free(counts);
  free(over);
  free(sb);
  return s;
}

ndf_status ndf_label(ndf_ctx *ctx, const ndf_array *in, ndf_array *out, const ndf_array *structure, int batch_dims,
                     int64_t *num_features) {
  return label(ctx, "ndf_label", in, out, structure, batch_dims, num_features, NULL);
}

/* ---- cache warm ------------------------------------------------------------------------------------------ */

static const struct { const char *op; binary_kind kind; } warm_binary_ops[] = {
    {"binary_erosion", B_EROSION},         {"binary_dilation", B_DILATION},
    {"binary_opening", B_OPENING},         {"binary_closing", B_CLOSING},
    {"binary_propagation", B_PROPAGATION}, {"binary_fill_holes", B_FILL_HOLES},
};

ndf_status ndf_cache_warm_binary(ndf_ctx *ctx, const char *arch, const char *op, ndf_dtype dtype, int ndim,
                                 const ndf_binary_options *opt, int *compiled) {
  static const char *name = "ndf_cache_warm_binary";
  ndf_status s = ndf__warm_check(ctx, name, arch, dtype, ndim, compiled);
  if (s != NDF_OK) return s;
  int which = -1;
  for (size_t i = 0; op && i < sizeof warm_binary_ops / sizeof warm_binary_ops[0]; i++)
    if (!strcmp(op, warm_binary_ops[i].op)) which = (int)i;
  if (which < 0)
    return ndf__argerror(ctx, name, "op", "unknown op '%s' (binary_erosion, binary_dilation, binary_opening, "
                         "binary_closing, binary_propagation, binary_fill_holes)", op ? op : "(null)");
  if (!opt) return ndf__argerror(ctx, name, "options", "NULL");
  ndf_array in, out, mask;
  ndf__warm_array(&in, 0, dtype, ndim);
  ndf__warm_array(&out, 1, NDF_BOOL, ndim);
  ndf_binary_options o = *opt;
  if (opt->mask) { /* its dtype picks a kernel; its geometry is the input's */
    ndf__warm_array(&mask, 2, opt->mask->dtype, ndim);
    o.mask = &mask;
  }
  ndf__warm w = {arch, 0};
  s = binary(ctx, name, warm_binary_ops[which].kind, &in, &out, &o, &w);
  if (compiled) *compiled = w.compiled;
  return s;
}

ndf_status ndf_cache_warm_hit_or_miss(ndf_ctx *ctx, const char *arch, ndf_dtype dtype, int ndim,
                                      const ndf_hit_or_miss_options *opt, int *compiled) {
  static const char *name = "ndf_cache_warm_hit_or_miss";
  ndf_status s = ndf__warm_check(ctx, name, arch, dtype, ndim, compiled);
  if (s != NDF_OK) return s;
  ndf_array in, out;
  ndf__warm_array(&in, 0, dtype, ndim);
  ndf__warm_array(&out, 1, NDF_BOOL, ndim);
  ndf__warm w = {arch, 0};
  s = hit_or_miss(ctx, name, &in, &out, opt, &w);
  if (compiled) *compiled = w.compiled;
  return s;
}

ndf_status ndf_cache_warm_label(ndf_ctx *ctx, const char *arch, ndf_dtype dtype, int ndim, ndf_dtype output_dtype,
                                const ndf_array *structure, int batch_dims, int *compiled) {
  static const char *name = "ndf_cache_warm_label";
  ndf_status s = ndf__warm_check(ctx, name, arch, dtype, ndim, compiled);
  if (s != NDF_OK) return s;
  ndf_array in, out;
  ndf__warm_array(&in, 0, dtype, ndim);
  ndf__warm_array(&out, 1, output_dtype, ndim);
  ndf__warm w = {arch, 0};
  s = label(ctx, name, &in, &out, structure, batch_dims, NULL, &w);
  if (compiled) *compiled = w.compiled;
  return s;
}
