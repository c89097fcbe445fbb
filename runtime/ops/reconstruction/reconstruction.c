/*
 * reconstruction.c -- grey morphological reconstruction
 * (skimage.morphology.reconstruction): validation, skimage's argument
 * conventions, the CPU backend, and dispatch to CUDA.
 *
 * skimage (morphology/grayreconstruct.py) defines, with the footprint F, its
 * offset o (default: the centre of an odd footprint) and N = {k - o : F[k],
 * k != o}: reconstruction by dilation raises every voxel x to
 *     r[x] = max over paths x0 -> x1 -> ... -> x (x_{i+1} = x_i + n, n in N,
 *            inside the image) of min(seed[x0], mask[x1], ..., mask[x]),
 * and at least to seed[x]; by erosion, the dual.  That is the limit of the
 * geodesic step r <- min(mask, max(r, max_{n in N} r[x - n])) from the seed.
 *
 * The CPU backend runs L. Vincent's hybrid algorithm (IEEE Trans. Image
 * Processing 2(2), 1993) with any neighbourhood: one raster scan with the
 * taps that lie before a voxel, one anti-raster scan with those after it,
 * then a FIFO propagation from the voxels the second scan leaves able to
 * raise a neighbour.  Images (batch_dims) run in parallel; the result is
 * computed in a scratch buffer and stored in the output only on success.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reconstruction/reconstruction.h"

void ndf_reconstruction_options_init(ndf_reconstruction_options *opt) {
  if (!opt) return;
  memset(opt, 0, sizeof *opt);
  opt->method = NDF_RECONSTRUCT_DILATION;
}

static const char *method_names[2] = {"dilation", "erosion"};

const char *ndf_reconstruct_method_name(ndf_reconstruct_method m) {
  return (unsigned)m < 2 ? method_names[m] : NULL;
}

ndf_status ndf_reconstruct_method_from_name(const char *name, ndf_reconstruct_method *out) {
  if (!name || !out)
    return ndf__error(NULL, NDF_EINVAL, "ndf_reconstruct_method_from_name: bad argument '%s' (NULL)",
                      name ? "out" : "name");
  for (int i = 0; i < 2; i++)
    if (strcmp(name, method_names[i]) == 0) {
      *out = (ndf_reconstruct_method)i;
      return NDF_OK;
    }
  return ndf__error(NULL, NDF_EINVAL,
                    "ndf_reconstruct_method_from_name: bad argument 'name' ('%s' is not dilation or erosion)", name);
}

/* ---- validation ------------------------------------------------------------------------- */

/* An input (seed or mask) or the output: shaped like ref, checked as every call checks arrays. */
static ndf_status check_like(ndf_ctx *ctx, const char *name, const char *arg, const ndf_array *a,
                             const ndf_array *ref) {
  if (!a) return ndf__argerror(ctx, name, arg, "NULL");
  if (a->ndim != ref->ndim)
    return ndf__argerror(ctx, name, arg, "rank %d differs from the seed's rank %d", a->ndim, ref->ndim);
  for (int d = 0; d < a->ndim; d++)
    if (a->shape[d] != ref->shape[d])
      return ndf__argerror(ctx, name, arg, "shape[%d]=%lld differs from the seed's %lld", d, (long long)a->shape[d],
                           (long long)ref->shape[d]);
  ndf_status s = ndf__check_array(ctx, name, arg, a, NULL);
  if (s != NDF_OK) return s;
  if (a->device != ref->device || a->device_id != ref->device_id)
    return ndf__argerror(ctx, name, arg, "lives on another device than the seed");
  if (ndf_array_size(a) > 0 && !a->data) return ndf__argerror(ctx, name, arg, "NULL data");
  return NDF_OK;
}

static ndf_status check_arrays(ndf_ctx *ctx, const char *name, const ndf_array *seed, const ndf_array *mask,
                               const ndf_array *out, int batch_dims) {
  if (!seed) return ndf__argerror(ctx, name, "seed", "NULL");
  const ndf_dtype t = seed->dtype;
  if (t == NDF_BOOL || !ndf_dtype_size(t))
    return ndf__argerror(ctx, name, "seed",
                         "dtype %s is not supported (uint8, int8, uint16, int16, uint32, int32, int64, uint64, float32, "
                         "float64)",
                         ndf_dtype_name(t) ? ndf_dtype_name(t) : "unknown");
  if (seed->ndim < 1 || seed->ndim > NDF_MAX_NDIM)
    return ndf__argerror(ctx, name, "seed", "rank %d is not in 1..%d", seed->ndim, NDF_MAX_NDIM);
  for (int d = 0; d < seed->ndim; d++)
    if (seed->shape[d] < 0)
      return ndf__argerror(ctx, name, "seed", "shape[%d]=%lld is negative", d, (long long)seed->shape[d]);
  ndf_status s = ndf__check_array(ctx, name, "seed", seed, NULL);
  if (s != NDF_OK) return s;
  if (ndf_array_size(seed) > 0 && !seed->data) return ndf__argerror(ctx, name, "seed", "NULL data");
  if ((s = check_like(ctx, name, "mask", mask, seed)) != NDF_OK) return s;
  if (mask->dtype != t)
    return ndf__argerror(ctx, name, "mask", "dtype %s differs from the seed's %s",
                         ndf_dtype_name(mask->dtype) ? ndf_dtype_name(mask->dtype) : "unknown", ndf_dtype_name(t));
  if ((s = check_like(ctx, name, "output", out, seed)) != NDF_OK) return s;
  if (out->dtype != t && out->dtype != NDF_FLOAT64)
    return ndf__argerror(ctx, name, "output", "dtype %s is neither float64 nor the seed's %s",
                         ndf_dtype_name(out->dtype) ? ndf_dtype_name(out->dtype) : "unknown", ndf_dtype_name(t));
  if ((s = ndf__check_device(ctx, name, seed)) != NDF_OK) return s;
  if (batch_dims < 0 || batch_dims >= seed->ndim)
    return ndf__argerror(ctx, name, "batch_dims", "%d must be in 0..%d for a seed of rank %d", batch_dims,
                         seed->ndim - 1, seed->ndim);
  if (seed->ndim - batch_dims > NDF_MAX_SPATIAL)
    return ndf__argerror(ctx, name, "batch_dims", "%d spatial axes; at most %d are supported",
                         seed->ndim - batch_dims, NDF_MAX_SPATIAL);
  if (ndf_array_size(seed) == 0) return NDF_OK;
  if (!ndf__layout_is_proper(out)) return ndf__argerror(ctx, name, "output", "its strides make elements overlap");
  if (ndf__arrays_overlap(seed, out)) return ndf__argerror(ctx, name, "output", "overlaps the seed");
  if (ndf__arrays_overlap(mask, out)) return ndf__argerror(ctx, name, "output", "overlaps the mask");
  return NDF_OK;
}

/* The footprint and offset as pull taps (reconstruction.h). */
static ndf_status prepare(ndf_ctx *ctx, const char *name, int ndim, const ndf_reconstruction_options *opt,
                          ndf__recon_geom *g) {
  memset(g, 0, sizeof *g);
  if ((unsigned)opt->method > NDF_RECONSTRUCT_EROSION)
    return ndf__argerror(ctx, name, "method", "unknown method %d (dilation or erosion)", (int)opt->method);
  g->dilation = opt->method == NDF_RECONSTRUCT_DILATION;
  g->batch_dims = opt->batch_dims;
  const int nsp = g->nsp = ndim - opt->batch_dims;
  const ndf_array *fp = opt->footprint;
  int64_t es[NDF_MAX_SPATIAL], count = 1;
  if (fp) {
    if (fp->device != NDF_DEVICE_CPU) return ndf__argerror(ctx, name, "footprint", "must be a CPU (host) array");
    if (!ndf_dtype_size(fp->dtype)) return ndf__argerror(ctx, name, "footprint", "unknown dtype %d", (int)fp->dtype);
    if (fp->ndim != nsp)
      return ndf__argerror(ctx, name, "footprint", "rank %d does not match the %d spatial axes of the seed", fp->ndim,
                           nsp);
    ndf_status s = ndf__check_array(ctx, name, "footprint", fp, NULL);
    if (s != NDF_OK) return s;
    for (int d = 0; d < nsp; d++) {
      if (fp->shape[d] < 1)
        return ndf__argerror(ctx, name, "footprint", "shape[%d]=%lld is empty", d, (long long)fp->shape[d]);
      if (fp->shape[d] > (int64_t)1 << 30) return ndf__argerror(ctx, name, "footprint", "axis %d is too large", d);
      es[d] = fp->shape[d];
      count *= es[d];
      if (count > (int64_t)1 << 26) return ndf__argerror(ctx, name, "footprint", "more than 2^26 elements");
    }
    if (!fp->data) return ndf__argerror(ctx, name, "footprint", "NULL data");
  } else {
    for (int d = 0; d < nsp; d++) {
      es[d] = 3;
      count *= 3;
    }
  }
  int64_t off[NDF_MAX_SPATIAL];
  if (opt->noffset == 0) {
    for (int d = 0; d < nsp; d++) {
      if (es[d] % 2 == 0)
        return ndf__argerror(ctx, name, "footprint", "shape[%d]=%lld is even: give an offset (skimage: footprint "
                             "dimensions must all be odd)", d, (long long)es[d]);
      off[d] = es[d] / 2;
    }
  } else {
    if (opt->noffset != 1 && opt->noffset != nsp)
      return ndf__argerror(ctx, name, "offset", "%d values for %d spatial axes (give 1 or %d)", opt->noffset, nsp,
                           nsp);
    for (int d = 0; d < nsp; d++) {
      off[d] = opt->offset[opt->noffset == 1 ? 0 : d];
      if (off[d] < 0 || off[d] >= es[d])
        return ndf__argerror(ctx, name, "offset", "offset[%d]=%lld is outside the footprint of extent %lld", d,
                             (long long)off[d], (long long)es[d]);
    }
  }
  int64_t n = 0;
  for (int64_t i = 0; i < count; i++) n += fp ? ndf__get_nonzero(fp, ndf__offset_of(fp, i)) : 1;
  g->taps = malloc((size_t)(n > 0 ? n : 1) * nsp * sizeof *g->taps);
  if (!g->taps) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory for the footprint", name);
  for (int64_t i = 0; i < count; i++) {
    if (fp && !ndf__get_nonzero(fp, ndf__offset_of(fp, i))) continue;
    int64_t r = i, t[NDF_MAX_SPATIAL];
    int centre = 1;
    for (int d = nsp - 1; d >= 0; d--) {
      t[d] = off[d] - r % es[d];
      r /= es[d];
      centre &= t[d] == 0;
    }
    if (centre) continue; /* skimage crosses the centre out: a voxel keeps at least its own value */
    for (int d = 0; d < nsp; d++) {
      g->taps[g->ntaps * nsp + d] = (int32_t)t[d];
      if (t[d] < g->rlo[d]) g->rlo[d] = (int32_t)t[d];
      if (t[d] > g->rhi[d]) g->rhi[d] = (int32_t)t[d];
    }
    g->ntaps++;
  }
  return NDF_OK;
}

/* ---- the CPU backend -------------------------------------------------------------------- */

/* One instantiation per dtype: X(type, suffix, is_float, dtype). */
#define RECON_TYPES(X)                                                                             \
  X(uint8_t, u8, 0, NDF_UINT8) X(int8_t, i8, 0, NDF_INT8) X(uint16_t, u16, 0, NDF_UINT16)          \
  X(int16_t, i16, 0, NDF_INT16) X(uint32_t, u32, 0, NDF_UINT32) X(int32_t, i32, 0, NDF_INT32)      \
  X(int64_t, i64, 0, NDF_INT64) X(uint64_t, u64, 0, NDF_UINT64)                                    \
  X(float, f32, 1, NDF_FLOAT32) X(double, f64, 1, NDF_FLOAT64)

/* a < b, with -0.0 < +0.0 for floats (one order, so one result bit for bit). */
#define LT(IS_FLOAT, a, b) \
  ((a) < (b) || ((IS_FLOAT) && (a) == (b) && signbit((double)(a)) && !signbit((double)(b))))
/* 1 when b lies beyond a in the direction values spread (up for dilation). */
#define UP(IS_FLOAT, dil, a, b) ((dil) ? LT(IS_FLOAT, a, b) : LT(IS_FLOAT, b, a))

/* Steps through the elements of a in C order: the element offset of the
 * current one in *off (odometer over the coordinates c). */
static inline void next_offset(const ndf_array *a, int64_t *c, int64_t *off) {
  for (int d = a->ndim - 1; d >= 0; d--) {
    *off += a->strides[d];
    if (++c[d] < a->shape[d]) return;
    *off -= a->strides[d] * a->shape[d];
    c[d] = 0;
  }
}

/* A growing FIFO of voxel indices. */
typedef struct fifo {
  int64_t *buf;
  int64_t cap, head, count;
} fifo;

static int fifo_push(fifo *f, int64_t v) {
  if (f->count == f->cap) {
    int64_t cap = f->cap ? 2 * f->cap : 1024;
    int64_t *b = malloc((size_t)cap * sizeof *b);
    if (!b) return -1;
    for (int64_t i = 0; i < f->count; i++) b[i] = f->buf[(f->head + i) % f->cap];
    free(f->buf);
    f->buf = b;
    f->cap = cap;
    f->head = 0;
  }
  f->buf[(f->head + f->count) % f->cap] = v;
  f->count++;
  return 0;
}

static int64_t fifo_pop(fifo *f) {
  int64_t v = f->buf[f->head];
  f->head = (f->head + 1) % f->cap;
  f->count--;
  return v;
}

/* The neighbourhood of one image: taps with their linear offsets in a
 * contiguous image (loff), the shape, and the voxel count. */
typedef struct nbhd {
  const ndf__recon_geom *g;
  const int64_t *shape; /* nsp spatial extents */
  int64_t npix;
  int64_t *loff;
  int64_t *before, *after; /* the taps of negative / positive linear offset (voxels before / after) */
  int64_t nbefore, nafter;
} nbhd;

/* x + t inside the image (sign +1: pull from x + t) or x - t (sign -1: push to x - t), tap k. */
static inline int tap_inside(const nbhd *h, const int64_t *c, int64_t k, int sign) {
  const int nsp = h->g->nsp;
  for (int d = 0; d < nsp; d++) {
    int64_t y = c[d] + sign * (int64_t)h->g->taps[k * nsp + d];
    if (y < 0 || y >= h->shape[d]) return 0;
  }
  return 1;
}

/* Every tap of voxel c stays inside (pull, sign +1; push, sign -1). */
static inline int all_inside(const nbhd *h, const int64_t *c, int sign) {
  for (int d = 0; d < h->g->nsp; d++) {
    int64_t lo = sign > 0 ? h->g->rlo[d] : -(int64_t)h->g->rhi[d];
    int64_t hi = sign > 0 ? h->g->rhi[d] : -(int64_t)h->g->rlo[d];
    if (c[d] + lo < 0 || c[d] + hi >= h->shape[d]) return 0;
  }
  return 1;
}

static inline void coords_of(const nbhd *h, int64_t q, int64_t *c) {
  for (int d = h->g->nsp - 1; d >= 0; d--) {
    c[d] = q % h->shape[d];
    q /= h->shape[d];
  }
}

#define DEFINE_CPU(T, SUF, IS_FLOAT, DT)                                                                    \
  /* The first voxel (C order) where the seed lies beyond the mask, or holds NaN with the mask; -1 if none. */ \
  static int64_t check_##SUF(const ndf_array *seed, const ndf_array *mask, int dil, int *nan) {           \
    const T *s = seed->data, *m = mask->data;                                                              \
    int64_t cs[NDF_MAX_NDIM] = {0}, cm[NDF_MAX_NDIM] = {0}, os = 0, om = 0;                                \
    const int64_t n = ndf_array_size(seed);                                                                \
    for (int64_t i = 0; i < n; i++) {                                                                      \
      const T a = s[os], b = m[om];                                                                        \
      if (IS_FLOAT && (a != a || b != b)) { *nan = 1; return i; }                                          \
      if (dil ? a > b : a < b) return i;                                                                   \
      next_offset(seed, cs, &os);                                                                          \
      next_offset(mask, cm, &om);                                                                          \
    }                                                                                                      \
    return -1;                                                                                             \
  }                                                                                                        \
  /* Vincent's hybrid algorithm on one image: r (the seed, clamped to m) becomes the reconstruction. */   \
  static int hybrid_##SUF(const nbhd *h, T *r, const T *m, fifo *f) {                                     \
    const ndf__recon_geom *g = h->g;                                                                       \
    const int dil = g->dilation, nsp = g->nsp, L = nsp - 1;                                                \
    const int64_t nx = h->shape[L], nrows = h->npix / nx;                                                  \
    int64_t c[NDF_MAX_SPATIAL];                                                                            \
    if (g->ntaps == 0) return 0;                                                                           \
    /* raster scan: the taps before a voxel (negative linear offset) */                                    \
    for (int64_t row = 0; row < nrows; row++) {                                                            \
      coords_of(h, row * nx, c);                                                                           \
      for (int64_t x = 0; x < nx; x++) {                                                                   \
        const int64_t q = row * nx + x;                                                                    \
        const T v = r[q], b = m[q];                                                                        \
        if (!UP(IS_FLOAT, dil, v, b)) continue;                                                            \
        c[L] = x;                                                                                          \
        const int in = all_inside(h, c, 1);                                                                \
        T best = v;                                                                                        \
        for (int64_t j = 0; j < h->nbefore; j++) {                                                         \
          const int64_t k = h->before[j];                                                                  \
          if (!in && !tap_inside(h, c, k, 1)) continue;                                                    \
          const T y = r[q + h->loff[k]];                                                                   \
          if (UP(IS_FLOAT, dil, best, y)) best = y;                                                        \
        }                                                                                                  \
        r[q] = UP(IS_FLOAT, dil, b, best) ? b : best;                                                      \
      }                                                                                                    \
    }                                                                                                      \
    /* anti-raster scan: the taps after a voxel; then queue each voxel that can still raise a voxel */    \
    /* after it (which pulls from it through a tap of negative offset) */                                  \
    for (int64_t row = nrows - 1; row >= 0; row--) {                                                       \
      coords_of(h, row * nx, c);                                                                           \
      for (int64_t x = nx - 1; x >= 0; x--) {                                                              \
        const int64_t q = row * nx + x;                                                                    \
        const T v = r[q], b = m[q];                                                                        \
        c[L] = x;                                                                                          \
        if (UP(IS_FLOAT, dil, v, b)) {                                                                     \
          const int in = all_inside(h, c, 1);                                                              \
          T best = v;                                                                                      \
          for (int64_t j = 0; j < h->nafter; j++) {                                                        \
            const int64_t k = h->after[j];                                                                 \
            if (!in && !tap_inside(h, c, k, 1)) continue;                                                  \
            const T y = r[q + h->loff[k]];                                                                 \
            if (UP(IS_FLOAT, dil, best, y)) best = y;                                                      \
          }                                                                                                \
          r[q] = UP(IS_FLOAT, dil, b, best) ? b : best;                                                    \
        }                                                                                                  \
        const T w = r[q];                                                                                  \
        const int pin = all_inside(h, c, -1);                                                              \
        for (int64_t j = 0; j < h->nbefore; j++) {                                                         \
          const int64_t k = h->before[j];                                                                  \
          if (!pin && !tap_inside(h, c, k, -1)) continue;                                                  \
          const int64_t p = q - h->loff[k];                                                                \
          if (UP(IS_FLOAT, dil, r[p], w) && UP(IS_FLOAT, dil, r[p], m[p])) {                               \
            if (fifo_push(f, q)) return -1;                                                                \
            break;                                                                                         \
          }                                                                                                \
        }                                                                                                  \
      }                                                                                                    \
    }                                                                                                      \
    /* propagation: a voxel raises every voxel it reaches to itself, bounded by the mask */               \
    while (f->count > 0) {                                                                                 \
      const int64_t q = fifo_pop(f);                                                                       \
      const T w = r[q];                                                                                    \
      coords_of(h, q, c);                                                                                  \
      const int pin = all_inside(h, c, -1);                                                                \
      for (int64_t k = 0; k < g->ntaps; k++) {                                                             \
        if (!pin && !tap_inside(h, c, k, -1)) continue;                                                    \
        const int64_t p = q - h->loff[k];                                                                  \
        if (UP(IS_FLOAT, dil, r[p], w) && UP(IS_FLOAT, dil, r[p], m[p])) {                                 \
          r[p] = UP(IS_FLOAT, dil, m[p], w) ? m[p] : w;                                                    \
          if (fifo_push(f, p)) return -1;                                                                  \
        }                                                                                                  \
      }                                                                                                    \
    }                                                                                                      \
    return 0;                                                                                              \
  }                                                                                                        \
  /* Image b of seed and mask into r (clamped) and m, contiguous. */                                      \
  static void gather_##SUF(const ndf_array *seed, const ndf_array *mask, int dil, int64_t b, int64_t npix, \
                           T *r, T *m) {                                                                   \
    int64_t cs[NDF_MAX_NDIM], cm[NDF_MAX_NDIM];                                                            \
    int64_t os = ndf__lead_coords(seed, seed->ndim, b * npix, cs);                                         \
    int64_t om = ndf__lead_coords(mask, mask->ndim, b * npix, cm);                                         \
    const T *s = seed->data, *mk = mask->data;                                                             \
    for (int64_t i = 0; i < npix; i++) {                                                                   \
      const T a = s[os], v = mk[om];                                                                       \
      m[i] = v;                                                                                            \
      r[i] = UP(IS_FLOAT, dil, v, a) ? v : a;                                                              \
      next_offset(seed, cs, &os);                                                                          \
      next_offset(mask, cm, &om);                                                                          \
    }                                                                                                      \
  }                                                                                                        \
  /* The result (contiguous) into out, converted to its dtype (T or float64). */                          \
  static void store_##SUF(const T *r, const ndf_array *out) {                                              \
    int64_t c[NDF_MAX_NDIM] = {0}, o = 0;                                                                  \
    const int64_t n = ndf_array_size(out);                                                                 \
    for (int64_t i = 0; i < n; i++) {                                                                      \
      if (out->dtype == DT) ((T *)out->data)[o] = r[i];                                                    \
      else ((double *)out->data)[o] = (double)r[i];                                                        \
      next_offset(out, c, &o);                                                                             \
    }                                                                                                      \
  }                                                                                                        \
  static ndf_status cpu_##SUF(ndf_ctx *ctx, const char *name, const ndf_array *seed, const ndf_array *mask, \
                              ndf_array *out, const ndf__recon_geom *g) {                                  \
    const int nb = g->batch_dims, nsp = g->nsp;                                                            \
    int64_t nimg = 1, npix = 1;                                                                            \
    for (int d = 0; d < nb; d++) nimg *= seed->shape[d];                                                   \
    for (int d = 0; d < nsp; d++) npix *= seed->shape[nb + d];                                             \
    int64_t bytes;                                                                                         \
    if (!ndf__mul(nimg * npix, (int64_t)sizeof(T), &bytes)) bytes = -1;                                    \
    ndf_status s = ndf__check_host_memory(ctx, name, "the result", bytes);                                 \
    if (s != NDF_OK) return s;                                                                             \
    nbhd h = {g, seed->shape + nb, npix, malloc((size_t)(g->ntaps > 0 ? g->ntaps : 1) * 3 * sizeof(int64_t)), \
              NULL, NULL, 0, 0};                                                                           \
    T *r = malloc((size_t)bytes);                                                                          \
    const int nth = ndf__cpu_threads(ctx);                                                                 \
    void **mbuf = ndf__thread_buffers(nth, (size_t)npix * sizeof(T));                                      \
    fifo *fq = calloc((size_t)nth, sizeof *fq);                                                            \
    int failed = !h.loff || !r || !mbuf || !fq;                                                            \
    if (!failed) {                                                                                         \
      int64_t cstr[NDF_MAX_SPATIAL], st = 1;                                                               \
      for (int d = nsp - 1; d >= 0; d--) {                                                                 \
        cstr[d] = st;                                                                                      \
        st *= h.shape[d];                                                                                  \
      }                                                                                                    \
      for (int64_t k = 0; k < g->ntaps; k++) {                                                             \
        h.loff[k] = 0;                                                                                     \
        for (int d = 0; d < nsp; d++) h.loff[k] += (int64_t)g->taps[k * nsp + d] * cstr[d];                \
      }                                                                                                    \
      h.before = h.loff + g->ntaps;                                                                        \
      h.after = h.before + g->ntaps;                                                                       \
      for (int64_t k = 0; k < g->ntaps; k++) {                                                             \
        if (h.loff[k] < 0) h.before[h.nbefore++] = k;                                                      \
        else h.after[h.nafter++] = k;                                                                      \
      }                                                                                                    \
      _Pragma("omp parallel for schedule(dynamic, 1) num_threads(nth)")                                    \
      for (int64_t b = 0; b < nimg; b++) {                                                                 \
        int stop;                                                                                          \
        _Pragma("omp atomic read")                                                                         \
        stop = failed;                                                                                     \
        if (stop) continue;                                                                                \
        const int tid = ndf__thread_id();                                                                  \
        T *rb = r + b * npix, *mb = mbuf[tid];                                                             \
        gather_##SUF(seed, mask, g->dilation, b, npix, rb, mb);                                            \
        fq[tid].head = fq[tid].count = 0;                                                                  \
        if (hybrid_##SUF(&h, rb, mb, &fq[tid])) {                                                          \
          _Pragma("omp atomic write")                                                                      \
          failed = 1;                                                                                      \
        }                                                                                                  \
      }                                                                                                    \
    }                                                                                                      \
    if (!failed) store_##SUF(r, out);                                                                      \
    if (fq)                                                                                                \
      for (int i = 0; i < nth; i++) free(fq[i].buf);                                                       \
    free(fq);                                                                                              \
    if (mbuf) ndf__thread_buffers_free(mbuf, nth);                                                         \
    free(r);                                                                                               \
    free(h.loff);                                                                                          \
    return failed ? ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", name) : NDF_OK;                  \
  }

RECON_TYPES(DEFINE_CPU)
#undef DEFINE_CPU

/* The first voxel where the data breaks the method's rule, as NDF_EINVAL; NDF_OK if none. */
static ndf_status check_data(ndf_ctx *ctx, const char *name, const ndf_array *seed, const ndf_array *mask, int dil) {
  int nan = 0;
  int64_t bad = -1;
  switch (seed->dtype) {
#define CASE(T, SUF, IS_FLOAT, DT) \
    case DT: bad = check_##SUF(seed, mask, dil, &nan); break;
    RECON_TYPES(CASE)
#undef CASE
    default: break;
  }
  if (bad < 0) return NDF_OK;
  char at[256];
  int64_t c[NDF_MAX_NDIM];
  ndf__lead_coords(seed, seed->ndim, bad, c);
  ndf__shape_str(seed->ndim, c, at, sizeof at);
  for (char *p = at; *p; p++)
    if (*p == 'x') *p = ',';
  if (nan) return ndf__argerror(ctx, name, "seed", "NaN in the seed or the mask at [%s]", at);
  return ndf__argerror(ctx, name, "seed", "the seed lies %s the mask at [%s]: reconstruction by %s needs seed %s mask",
                       dil ? "above" : "below", at, dil ? "dilation" : "erosion", dil ? "<=" : ">=");
}

/* ndf_reconstruction, or with warm (cache warm) the CUDA path's kernels compiled for warm->arch. */
static ndf_status reconstruct(ndf_ctx *ctx, const char *name, const ndf_array *seed, const ndf_array *mask,
                              ndf_array *output, const ndf_reconstruction_options *opt, ndf__warm *warm) {
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  ndf__clear_error(ctx);
  if (!opt) return ndf__argerror(ctx, name, "options", "NULL");
  ndf_status s = check_arrays(ctx, name, seed, mask, output, opt->batch_dims);
  if (s != NDF_OK) return s;
  ndf__recon_geom g;
  if ((s = prepare(ctx, name, seed->ndim, opt, &g)) != NDF_OK) {
    free(g.taps);
    return s;
  }
  if (warm) {
    s = ndf__reconstruction_cuda_warm(ctx, name, seed->dtype, output->dtype, &g, warm);
  } else if (ndf_array_size(seed) > 0) {
    if (seed->device == NDF_DEVICE_CUDA) {
      s = ndf__reconstruction_cuda(ctx, name, seed, mask, output, &g);
    } else if ((s = check_data(ctx, name, seed, mask, g.dilation)) == NDF_OK) {
      switch (seed->dtype) {
#define CASE(T, SUF, IS_FLOAT, DT) \
        case DT: s = cpu_##SUF(ctx, name, seed, mask, output, &g); break;
        RECON_TYPES(CASE)
#undef CASE
        default: s = ndf__error(ctx, NDF_EINTERNAL, "%s: unhandled dtype", name); break;
      }
    }
  }
  free(g.taps);
  return s;
}

ndf_status ndf_reconstruction(ndf_ctx *ctx, const ndf_array *seed, const ndf_array *mask, ndf_array *output,
                              const ndf_reconstruction_options *opt) {
  return reconstruct(ctx, "ndf_reconstruction", seed, mask, output, opt, NULL);
}

/* ---- cache warm ---------------------------------------------------------------------------------- */

ndf_status ndf_cache_warm_reconstruction(ndf_ctx *ctx, const char *arch, ndf_dtype dtype, int ndim,
                                         ndf_dtype output_dtype, const ndf_reconstruction_options *opt,
                                         int *compiled) {
  static const char *name = "ndf_cache_warm_reconstruction";
  ndf_status s = ndf__warm_check(ctx, name, arch, dtype, ndim, compiled);
  if (s != NDF_OK) return s;
  ndf_array seed, mask, out;
  ndf__warm_array(&seed, 0, dtype, ndim);
  ndf__warm_array(&mask, 1, dtype, ndim);
  ndf__warm_array(&out, 2, output_dtype, ndim);
  ndf__warm w = {arch, 0};
  s = reconstruct(ctx, name, &seed, &mask, &out, opt, &w);
  if (compiled) *compiled = w.compiled;
  return s;
}
