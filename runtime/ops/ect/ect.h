/*
 * ect/ect.h -- Euler characteristic transform: the CUDA backends.
 */
#ifndef NDF_OPS_ECT_H
#define NDF_OPS_ECT_H

#include "internal.h"
#include "ecc/ecc.h"

/* ---- ect.c / ect_cuda.c: Euler characteristic transform (exact and weighted) on CUDA ---- */
typedef struct ndf__ect_cuda_call {
  const char *name;
  int nb, nsp, cons, weighted;
  int64_t nimg, npix, m, T;
  int64_t sshape[3];
} ndf__ect_cuda_call;
/* coord: the spatial axes' coordinates concatenated (sum of sshape); dirs: m x nsp contiguous;
 * t: the T thresholds (caller's order; uniform: evenly spaced); out (batch..., m, T) on the device. */
ndf_status ndf__ect_cuda(ndf_ctx *ctx, const ndf__ect_cuda_call *c, const ndf_array *in, ndf_array *out,
                         const double *coord, const double *dirs, const double *t, int uniform);
/* Soft ECT on CUDA (ect_soft.cu): mode 0 forward into arr (device); mode 1 backward from arr (grad_output,
 * device) into gin (device, may be NULL) and the host buffers gdir (m x nsp) / gthr (T) (may be NULL).
 * t: the T thresholds (caller's order). */
ndf_status ndf__soft_ect_cuda(ndf_ctx *ctx, const ndf__ect_cuda_call *c, const ndf_array *in, const double *coord,
                              const double *dirs, const double *t, double lambda, int mode, ndf_array *arr,
                              ndf_array *gin, double *gdir, double *gthr);
/* Cache warm (ndf_cache_warm_ect): the kernels of the exact (soft = 0) or soft transform's CUDA path. */
ndf_status ndf__ect_cuda_warm(ndf_ctx *ctx, const char *name, ndf_dtype dt, int nsp, int cons, int wt, int soft,
                              ndf__warm *warm);

#endif
