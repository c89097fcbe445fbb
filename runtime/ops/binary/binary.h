/*
 * binary/binary.h -- binary morphology and label: the CUDA backend on bit-packed words.
 */
#ifndef NDF_OPS_BINARY_H
#define NDF_OPS_BINARY_H

#include "internal.h"
#include "grey/grey.h"

/* ---- binary.c / binary_cuda.c: binary morphology ------------------------------------------ */
typedef enum {
  NDF__B_EROSION, NDF__B_DILATION, NDF__B_OPENING, NDF__B_CLOSING, NDF__B_PROPAGATION, NDF__B_FILL_HOLES
} ndf__binary_kind;
/* A prepared binary step: the grey geometry of the structure, or "empty"
 * (an all-False structure: erosion gives 1, dilation 0). */
typedef struct ndf__bin_step {
  int empty;
  ndf__grey_geom g;
} ndf__bin_step;
/* The CUDA backend on bit-packed words: a validated op of kind (mask NULL for
 * fill_holes), its prepared steps, border_value and iterations. */
ndf_status ndf__binary_cuda(ndf_ctx *ctx, const char *name, ndf__binary_kind kind, const ndf_array *in,
                            ndf_array *out, const ndf_array *mask, const ndf__bin_step *ero,
                            const ndf__bin_step *dil, int border, int iterations, int batch_dims);
/* scipy's label on CUDA arrays: taps = the structure's backward half; cap = largest label of out's dtype. */
ndf_status ndf__label_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out, const int32_t *taps,
                           int64_t ntaps, int nsp, int batch_dims, int64_t cap, int64_t *num_features);
ndf_status ndf__hit_or_miss_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out,
                                 const ndf__bin_step *hit, const ndf__bin_step *miss, int batch_dims);

/* Cache warm (ndf_cache_warm_binary, _hit_or_miss, _label): the kernels the
 * CUDA path above would request for these arguments (ndf__warm); the arrays'
 * data is never read (their geometry, dtype and alignment are). */
ndf_status ndf__binary_cuda_warm(ndf__warm *w, ndf_ctx *ctx, const char *name, ndf__binary_kind kind,
                                 const ndf_array *in, const ndf_array *out, const ndf_array *mask,
                                 const ndf__bin_step *ero, const ndf__bin_step *dil, int border, int iterations,
                                 int batch_dims);
ndf_status ndf__hit_or_miss_cuda_warm(ndf__warm *w, ndf_ctx *ctx, const char *name, const ndf_array *in,
                                      const ndf_array *out, const ndf__bin_step *hit, const ndf__bin_step *miss,
                                      int batch_dims);
ndf_status ndf__label_cuda_warm(ndf__warm *w, ndf_ctx *ctx, const char *name, const ndf_array *in,
                                const ndf_array *out, const int32_t *taps, int64_t ntaps, int batch_dims);

#endif
