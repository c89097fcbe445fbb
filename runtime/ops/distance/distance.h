/*
 * distance/distance.h -- distance transforms: the CUDA backends of edt, cdt and bf.
 */
#ifndef NDF_OPS_DISTANCE_H
#define NDF_OPS_DISTANCE_H

#include "internal.h"

/* ---- distance_cuda.c ---------------------------------------------------------------------- */
/* With warm (ndf_cache_warm_distance), each of these stops after resolving
 * its kernels (ndf__jit_resolve); the arrays' data is not read. */
/* distance_transform_edt on CUDA arrays (validated by distance.c); dist and
 * idx may be NULL; sampling has one value per spatial axis. */
ndf_status ndf__edt_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *dist, ndf_array *idx,
                         int batch_dims, const double *sampling, ndf__warm *warm);
/* distance_transform_cdt distances on CUDA arrays: taxicab (chess = 0) or
 * chessboard (1); every spatial axis shorter than 2^29 (checked by distance.c). */
ndf_status ndf__cdt_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *dist, int batch_dims,
                         int chess, ndf__warm *warm);
/* distance_transform_bf on CUDA arrays (distance_bf_cuda.c): metric an ndf_metric (resolved),
 * sampling one value per spatial axis (multiplied in when has_sampling); dist and idx may be NULL. */
ndf_status ndf__bf_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *dist, ndf_array *idx, int nb,
                        int metric, int has_sampling, const double *sampling, ndf__warm *warm);

/* ndf_distance_edt_pass on CUDA arrays (distance_pass_cuda.c; validated by distance.c); features may be NULL. */
ndf_status ndf__edt_pass_cuda(ndf_ctx *ctx, const char *name, ndf_array *sqdist, ndf_array *features, int axis,
                              double sampling);

#endif
