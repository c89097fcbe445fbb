/*
 * ecc/ecc.h -- Euler characteristic curves: the validated call, the CUDA backends, the deferred data checks and the helpers the ECT shares.
 */
#ifndef NDF_OPS_ECC_H
#define NDF_OPS_ECC_H

#include "internal.h"

/* ---- ecc.c / ecc_cuda.c: Euler characteristic curves ------------------------------------- */
/* A validated call: batch and spatial axes, images, voxels per image, thresholds. */
typedef struct ndf__ecc_call {
  const char *name;
  int nb, nsp;
  int64_t nimg, npix;
  int64_t sshape[3];
  int64_t T;
} ndf__ecc_call;
/* Min and max of a CUDA input and the C-order index of its first NaN (-1: none); size > 0. */
ndf_status ndf__ecc_cuda_scan(ndf_ctx *ctx, const char *name, const ndf_array *in, double *mn, double *mx,
                              int64_t *nan_at);
/* The exact curve of a CUDA input at the T thresholds t (caller's order; uniform: evenly spaced). */
ndf_status ndf__ecc_cuda(ndf_ctx *ctx, const ndf__ecc_call *c, const ndf_array *in, ndf_array *out,
                         int construction, const double *t, int uniform);
/* New path (default; ecc.path=old selects the old one): no readback
 * before the curve.  t NULL: T thresholds over [min, max] taken on the device.
 * The NaN check runs on the device; a float input's call ends with one
 * readback: *nan_at (-1: none) and *not_finite ([min, max] infinite), the
 * output untouched then.  Input size > 0. */
int ndf__ecc_new_path(ndf_ctx *ctx);
/* ecc.prof: CLOCK_MONOTONIC nanoseconds at the public ECC call's entry (ecc.c) */
extern __thread uint64_t ndf__ecc_t_entry;
/* The record of a failed deferred check (templates/ndf_ecc_fused.cuh: ndf_ecc_drec), at
 * NDF__DREC_OFF in the context's mapped header block: the first failing kernel (in stream order)
 * since the last report writes the NaN key (~ the least C-order NaN index; 0: none), the
 * not-finite flag, then its ordinal (0: no failure).  The block and the ordinals are the ECC's
 * state in the context (ecc_cuda.c). */
typedef struct ndf__drec {
  uint64_t nan_key;
  int32_t bad;
  uint32_t ord;
} ndf__drec;
#define NDF__DREC_OFF 192
/* The report of a failed deferred check (ecc_cuda.c's hook, called after a stream sync by
 * ndf__deferred_report): NDF_EINVAL with the message of call ord (named name; NULL: the exact
 * curve) of the n since the last report, key its record's NaN key (0: not-finite values). */
ndf_status ndf__ecc_deferred_error(ndf_ctx *ctx, const char *name, uint32_t ord, uint32_t n, uint64_t key);
ndf_status ndf__ecc_cuda2(ndf_ctx *ctx, const ndf__ecc_call *c, const ndf_array *in, ndf_array *out,
                          int construction, const double *t, int uniform, int64_t *nan_at, int *not_finite);
/* Soft curve on CUDA: mode 0 forward into arr; mode 1 backward from arr (grad_output) into gin/gthr (may be NULL).
 * nan_at non-NULL (new path): NaN checked on the device, *nan_at >= 0 then and nothing written. */
ndf_status ndf__soft_ecc_cuda(ndf_ctx *ctx, const ndf__ecc_call *c, const ndf_array *in, const double *t,
                              ndf_array *arr, ndf_array *gin, ndf_array *gthr, int construction, double lambda,
                              int mode, int64_t *nan_at);

/* ---- Euler characteristic curves, shared with the ECT (ecc.c, ect.c) ---- */
/* c(v), the alternating count of the cells the voxel at x of the centre line
 * owns: buf holds 3^(nsp-1) neighbour lines of W = n + 2 doubles padded with
 * NaN (line index = ternary code of the row offsets, centre line in the
 * middle); construction NDF_ECC_V or NDF_ECC_T; ties by (value, index). */
int ndf__ecc_contrib(const double *buf, int64_t W, int64_t x, int nsp, int construction);
/* n elements from off with stride st into dst[0..n), as double. */
void ndf__ecc_read_line(const ndf_array *a, int64_t off, int64_t st, int64_t n, double *dst);
/* The thresholds t[0..T) in ascending order, ties by index (the order every ECC and ECT backend
 * bins in): ts[k] (ts may be NULL) the k-th, perm[k] its index in t.  0, or -1 when the sort's
 * host memory (NDF__ECC_SORT_BYTES a threshold, besides ts and perm) is not there. */
#define NDF__ECC_SORT_BYTES 16
int ndf__ecc_sort_thresholds(const double *t, int64_t T, double *ts, int64_t *perm);
/* The arithmetic binning of sorted thresholds ts[0..T) when uniform (evenly spaced) and ts[T-1] >
 * ts[0]: 1, with *lo = ts[0] and *inv_step = (T - 1) / (ts[T-1] - ts[0]); else 0 and both 0. */
int ndf__ecc_uniform_bins(const double *ts, int64_t T, int uniform, double *lo, double *inv_step);
/* The thresholds options (values, or nthresholds [+ range]); *T their count. */
ndf_status ndf__ecc_check_thresholds(ndf_ctx *ctx, const char *name, const ndf_array *values, int64_t nthresholds,
                                     int has_range, double range_lo, double range_hi, int64_t *T);

#endif
