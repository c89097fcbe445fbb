/*
 * metrics/metrics.h -- the image metrics (skimage.metrics): the validated
 * geometry of a call and the per-image statistics that the CPU backend
 * (metrics.c) and the CUDA one (metrics_cuda.c) share.
 */
#ifndef NDF_OPS_METRICS_H
#define NDF_OPS_METRICS_H

#include "internal.h"

/* Which metric a statistics pass finishes into. */
typedef enum {
  NDF__M_MSE = 0,
  NDF__M_NRMSE_EUCLIDEAN = 1,
  NDF__M_NRMSE_MIN_MAX = 2,
  NDF__M_NRMSE_MEAN = 3,
  NDF__M_PSNR = 4,
  NDF__M_DICE = 5,
  NDF__M_JACCARD = 6
} ndf__metric_op;

/* A validated pair of inputs: nimg images of vox voxels (batch axes first). */
typedef struct ndf__metrics_geom {
  int ndim, nb, nsp;
  int64_t nimg, vox;
  int f32; /* the elementwise arithmetic is float32 (else float64) */
} ndf__metrics_geom;

/* The statistics of one image (or one chunk of one): float64 sums of values
 * computed in the float type, NaN-propagating extremes of a, non-zero counts. */
typedef struct ndf__mstats {
  double sdd;        /* sum (a - b)^2 */
  double saa;        /* sum a * a */
  double sa;         /* sum a */
  double amin, amax; /* min / max of a (NaN when a holds NaN) */
  int64_t na, nbz, nab; /* elements with a != 0, b != 0, both */
} ndf__mstats;

/* The metric of an image from its statistics (data_range: the PSNR's, resolved). */
double ndf__metrics_finish(ndf__metric_op op, const ndf__mstats *s, int64_t vox, int f32, double data_range);
/* scikit-image's default PSNR data range for a's dtype t and the image's
 * extremes; -1 when the values lie outside the dtype's range. */
double ndf__metrics_psnr_range(ndf_dtype t, double amin, double amax);
/* scikit-image's dtype_range of an integer dtype as doubles (the 64-bit ends
 * round to +-2^63 and 2^64, as NumPy converts them). */
void ndf__metrics_int_range(ndf_dtype t, double *lo, double *hi);

/* CUDA backends of validated calls (result: float64 of the batch shape). */
ndf_status ndf__metrics_stats_cuda(ndf_ctx *ctx, const char *name, ndf__metric_op op, const ndf_array *a,
                                   const ndf_array *b, ndf_array *result, const ndf__metrics_geom *g,
                                   double data_range);
/* SSIM on CUDA: ux..uxy are the five filtered arrays (contiguous, the float
 * type, shaped like the input); writes full (may be NULL) and mssim (may be NULL). */
typedef struct ndf__ssim_plan {
  int win_size, pad;
  double cov_norm, C1, C2;
} ndf__ssim_plan;
ndf_status ndf__metrics_ssim_prep_cuda(ndf_ctx *ctx, const char *name, const ndf_array *im1, const ndf_array *im2,
                                       int f32, ndf_array *yc, ndf_array *xx, ndf_array *yy, ndf_array *xy);
ndf_status ndf__metrics_ssim_cuda(ndf_ctx *ctx, const char *name, const ndf_array *const u[5], ndf_array *full,
                                  ndf_array *mssim, const ndf__metrics_geom *g, const ndf__ssim_plan *p);
/* SSIM on CUDA with the five filters fused into one pass per spatial axis
 * (templates/metrics_ssim.cu): the same map and mean as the composed path.
 * gauss: the Gaussian window of sigma (truncate 3.5), else the uniform one of
 * p->win_size.  NDF_ENOTSUP, with nothing done and no message, where it does
 * not apply (a Gaussian of sigma <= 1e-15, which scipy does not filter). */
ndf_status ndf__metrics_ssim_fused_cuda(ndf_ctx *ctx, const char *name, const ndf_array *im1, const ndf_array *im2,
                                        ndf_array *full, ndf_array *mssim, const ndf__metrics_geom *g,
                                        const ndf__ssim_plan *p, int gauss, double sigma);
/* 1 when the context's tunable ssim.path picks the fused kernels (the default). */
int ndf__metrics_ssim_fused_wanted(ndf_ctx *ctx, const ndf_array *im1);
/* Hausdorff on CUDA: notm = (m == 0) as uint8 (contiguous, shaped like m). */
ndf_status ndf__metrics_not_cuda(ndf_ctx *ctx, const char *name, const ndf_array *m, ndf_array *notm);
/* Per image: max over a != 0 of d (contiguous float64, shaped like a) into dmax[img]
 * (-inf for none) and the counts of a != 0 into cnt[img]; device buffers. */
ndf_status ndf__metrics_hd_reduce_cuda(ndf_ctx *ctx, const char *name, const ndf_array *a, const ndf_array *d,
                                       const ndf__metrics_geom *g, CUdeviceptr dmax, CUdeviceptr cnt);
/* The directed term as the percentile q < 100 of the distances instead (after the reduce). */
ndf_status ndf__metrics_hd_percentile_cuda(ndf_ctx *ctx, const char *name, const ndf_array *a, const ndf_array *d,
                                           const ndf__metrics_geom *g, double q, CUdeviceptr dmax, CUdeviceptr cnt);
/* result[img] from the two directed maxima and counts (0 / inf rules). */
ndf_status ndf__metrics_hd_finish_cuda(ndf_ctx *ctx, const char *name, ndf_array *result,
                                       const ndf__metrics_geom *g, CUdeviceptr dmax, CUdeviceptr cnt);

#endif
