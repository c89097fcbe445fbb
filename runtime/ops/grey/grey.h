/*
 * grey/grey.h -- grey morphology: the normalized geometry shared by the filter families, the CPU and CUDA backends, the elementwise epilogues and the CPU tap tables.
 */
#ifndef NDF_OPS_GREY_H
#define NDF_OPS_GREY_H

#include "internal.h"
#include "ops.generated.h"

/* ---- grey: normalized geometry --------------------------------------------------------- */
typedef enum { NDF__MIN = 0, NDF__MAX = 1 } ndf__minmax;

typedef struct ndf__grey_geom {
  ndf__minmax op;
  int nsp;          /* spatial axes */
  int batch_dims;
  ndf_mode mode;
  double cval;      /* already converted to the input dtype */
  int is_box;       /* flat box: separable */
  int64_t box[NDF_MAX_SPATIAL]; /* box extent per spatial axis (1 = axis untouched) */
  int64_t lo[NDF_MAX_SPATIAL];  /* offset of the box's first tap per axis */
  /* general element (is_box == 0): taps in scipy's raster order */
  int64_t ntaps;
  int32_t *taps;    /* ntaps * nsp offsets relative to the output voxel */
  int has_weights;
  double *w_first;  /* weight of every tap in double (used exactly for tap 0) */
  double *w_cast;   /* weight converted to the input dtype (used for taps >= 1) */
  int32_t rad_lo[NDF_MAX_SPATIAL], rad_hi[NDF_MAX_SPATIAL]; /* min/max tap offset per axis */
  /* The algorithm (docs/adr/0008): for a box NDF_GREY_AUTO, _SEPARABLE or
   * _VHGW says how its line passes run; NDF_GREY_DIRECT marks a tap table
   * (is_box == 0); NDF_GREY_DECOMPOSED runs nsteps times the element *step. */
  ndf_grey_algorithm algo;
  int64_t nsteps;
  struct ndf__grey_geom *step;
} ndf__grey_geom;

/* AUTO runs a box line pass with van Herk/Gil-Werman from this extent on
 * (below it, the O(K) pass is as cheap); one tuning value per backend. */
#define NDF__VHGW_MIN_CPU 8
#define NDF__VHGW_MIN_CUDA 8

void ndf__grey_geom_free(ndf__grey_geom *g);
/* The geometry's tap offsets in raster order (a box's enumerated), ntaps x nsp, as a malloc'd
 * copy the caller owns; NULL when out of memory. */
int32_t *ndf__grey_geom_taps_copy(const ndf__grey_geom *g);
/* Validates the call and normalizes scipy's arguments.  name is "ndf_grey_erosion"/... */
ndf_status ndf__grey_prepare(ndf_ctx *ctx, const char *name, ndf__minmax op, ndf_dtype dtype,
                             int ndim, const int64_t *shape, const ndf_grey_options *opt,
                             ndf__grey_geom *g);

/* Argument checks shared by every grey op (messages carry name). */
ndf_status ndf__grey_check(ndf_ctx *ctx, const char *name, const ndf_array *in, const ndf_array *out,
                           const ndf_grey_options *opt);
/* Runs one prepared min/max step on the backend of the arrays. */
ndf_status ndf__grey_run(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out,
                         const ndf__grey_geom *g);

/* ---- grey_compose.c: elementwise epilogues in NumPy arithmetic of the dtype ---------------- */
typedef enum {
  NDF__COMBINE_SUB = 0,     /* out = a - b */
  NDF__COMBINE_LAPLACE = 1  /* out = ((a + b) - c) - c */
} ndf__combine_kind;
/* out may alias a or b; all arrays share dtype, shape and device. */
ndf_status ndf__combine(ndf_ctx *ctx, const char *name, ndf__combine_kind kind, const ndf_array *a,
                        const ndf_array *b, const ndf_array *c, ndf_array *out);
void ndf__combine_request(ndf__kernel_req *r, int kind, ndf_dtype dtype);
ndf_status ndf__grey_cpu(ndf_ctx *ctx, const ndf_array *in, ndf_array *out, const ndf__grey_geom *g);
ndf_status ndf__grey_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out,
                          const ndf__grey_geom *g);
/* Kernel requests the CUDA path would make for (dtype, geometry); for cache warm. */
int ndf__grey_cuda_requests(ndf_ctx *ctx, const ndf__grey_geom *g, ndf_dtype dtype, int ndim,
                            ndf__kernel_req *reqs, int max);
/* Compiles the requests of one min/max step (plus the epilogue combine, -1 for
 * none) for warm->arch into the disk cache. */
ndf_status ndf__grey_warm_step(ndf_ctx *ctx, const char *name, const ndf__grey_geom *g, ndf_dtype dtype, int ndim,
                               int combine, ndf__warm *warm);

/* The grey ops of the op registry (gen/ops.lua): NDF__GREY_EROSION, ..., NDF__GREY_BLACK_TOPHAT. */
#define NDF__GREY_ENUM(id, name, short_name, fn, composite) NDF__GREY_##id,
typedef enum { NDF_OPS_GREY(NDF__GREY_ENUM) NDF__GREY_COUNT } ndf__grey_op;
#undef NDF__GREY_ENUM
/* Cache warm of a composite op (grey_compose.c): the kernels of its steps and its epilogue
 * for an input of dtype with ndim axes of shape. */
ndf_status ndf__grey_compose_warm(ndf_ctx *ctx, const char *name, ndf__grey_op op, ndf_dtype dtype, int ndim,
                                  const int64_t *shape, const ndf_grey_options *opt, ndf__warm *warm);


/* ---- CPU tap tables (grey_cpu.c, rank.c) ---------------------------------------------- */
/* Linear input offsets of the taps (sstr: strides of the spatial axes) and
 * the least and greatest offset per spatial axis. */
static inline void ndf__tap_table(const int32_t *taps, int64_t n, int nsp, const int64_t *sstr, int64_t *loff,
                                  int32_t *rlo, int32_t *rhi) {
  for (int d = 0; d < nsp; d++) { rlo[d] = INT32_MAX; rhi[d] = INT32_MIN; }
  for (int64_t k = 0; k < n; k++) {
    loff[k] = 0;
    for (int d = 0; d < nsp; d++) {
      int32_t t = taps[k * nsp + d];
      loff[k] += (int64_t)t * sstr[d];
      if (t < rlo[d]) rlo[d] = t;
      if (t > rhi[d]) rhi[d] = t;
    }
  }
}

/* Decodes a row (an index over every axis but the last) of a filter from in
 * to out: coordinates into c, the input's batch offset *ib and spatial
 * offset *ispat, the output's offset *ob.  Returns 1 when the taps stay
 * inside the image on every spatial axis but the last. */
static inline int ndf__row_decode(int64_t row, const ndf_array *in, const ndf_array *out, int nb, const int32_t *rlo,
                                  const int32_t *rhi, int64_t *c, int64_t *ib, int64_t *ispat, int64_t *ob) {
  int inside = 1;
  *ib = *ispat = *ob = 0;
  for (int d = in->ndim - 2; d >= 0; d--) {
    c[d] = row % in->shape[d];
    row /= in->shape[d];
    *ob += c[d] * out->strides[d];
    if (d >= nb) {
      *ispat += c[d] * in->strides[d];
      inside &= c[d] + rlo[d - nb] >= 0 && c[d] + rhi[d - nb] < in->shape[d];
    } else {
      *ib += c[d] * in->strides[d];
    }
  }
  return inside;
}

/* Offset from the image start of the tap `tap` of the voxel at row
 * coordinates c and last coordinate x, through the boundary mode, into *off;
 * returns 0 when the tap reads cval instead.  (Offsets can be negative:
 * strides may be.) */
static inline int ndf__tap_border_offset(const int32_t *tap, const int64_t *c, int64_t x, const ndf_array *in, int nb,
                                         ndf_mode mode, int64_t *off) {
  const int nsp = in->ndim - nb;
  *off = 0;
  for (int d = 0; d < nsp; d++) {
    int64_t m = ndf__map_coord((d == nsp - 1 ? x : c[nb + d]) + tap[d], in->shape[nb + d], mode);
    if (m < 0) return 0;
    *off += m * in->strides[nb + d];
  }
  return 1;
}

#endif
