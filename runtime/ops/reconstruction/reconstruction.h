/*
 * reconstruction/reconstruction.h -- grey morphological reconstruction: the
 * normalized neighbourhood shared by the CPU backend (reconstruction.c) and
 * the CUDA one (reconstruction_cuda.c).
 */
#ifndef NDF_OPS_RECONSTRUCTION_H
#define NDF_OPS_RECONSTRUCTION_H

#include "internal.h"

/* The footprint as "pull" taps: a voxel x takes the values of x + t for every
 * tap t (t = offset - k for each non-zero footprint index k other than the
 * offset, so that a value spreads from x to x + k - offset, as skimage's). */
typedef struct ndf__recon_geom {
  int dilation;      /* 1: reconstruction by dilation, 0: by erosion */
  int nsp;           /* spatial axes */
  int batch_dims;
  int64_t ntaps;
  int32_t *taps;     /* ntaps x nsp */
  int32_t rlo[NDF_MAX_SPATIAL], rhi[NDF_MAX_SPATIAL]; /* least / greatest tap offset per axis (0 without taps) */
} ndf__recon_geom;

/* Runs a validated call on CUDA arrays: checks the data (seed on the right
 * side of the mask, no NaN; NDF_EINVAL naming name otherwise, nothing
 * written), then iterates to the limit and stores it in out. */
ndf_status ndf__reconstruction_cuda(ndf_ctx *ctx, const char *name, const ndf_array *seed, const ndf_array *mask,
                                    ndf_array *out, const ndf__recon_geom *g);
/* Cache warm: the kernels ndf__reconstruction_cuda resolves for seed dtype t and output dtype out,
 * compiled for warm->arch into the disk cache. */
ndf_status ndf__reconstruction_cuda_warm(ndf_ctx *ctx, const char *name, ndf_dtype t, ndf_dtype out,
                                         const ndf__recon_geom *g, ndf__warm *warm);

#endif
