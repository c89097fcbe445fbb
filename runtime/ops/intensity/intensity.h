/*
 * intensity/intensity.h -- histograms, percentiles, windowing, normalization
 * and histogram equalization: what the CPU backend (intensity.c) and the
 * CUDA one (intensity_cuda.c) share.
 */
#ifndef NDF_OPS_INTENSITY_H
#define NDF_OPS_INTENSITY_H

#include "internal.h"

/* The images of a call: nb leading batch axes, nimg images of m elements. */
typedef struct ndf__ity_geom {
  int nb;
  int64_t nimg, m;
} ndf__ity_geom;

/* What the elementwise pass computes from x (a value as double):
 *   CLIP    lo <= hi: x < lo ? lo : x > hi ? hi : x           (c0 = lo, c1 = hi)
 *   WINDOW  ((clip(x) - lo) / (hi - lo)) * (b - a) + a, or a when hi == lo (NaN stays NaN), with
 *           (lo, hi) per image or c0, c1 for every image, a = out_min, b = out_max
 *   ZSCORE  (x - mean) / std with (mean, std) per image                          */
enum { NDF__ITY_CLIP = 0, NDF__ITY_WINDOW = 1, NDF__ITY_ZSCORE = 2 };

/* The window step, the one formula both backends evaluate (no contraction:
 * intensity.c is compiled with -ffp-contract=off, the kernels round each
 * operation explicitly). */
static inline double ndf__ity_window(double x, double lo, double hi, double a, double b) {
  const double c = x < lo ? lo : x > hi ? hi : x;
  if (hi == lo) return x != x ? x : a;
  return (c - lo) / (hi - lo) * (b - a) + a;
}

/* The per-image statistics the elementwise ops take from the data. */
enum { NDF__ITY_STAT_MINMAX = 0, NDF__ITY_STAT_PERCENTILE = 1, NDF__ITY_STAT_MOMENTS = 2 };

/* CUDA entry points (intensity_cuda.c); the arguments were validated, the input has elements. */
/* Histogram: edges (nedges = nbins + 1) given on the host when opt->edges, else equal bins
 * from opt->range or the data; hist int64 or float64; bin_edges may be NULL. */
ndf_status ndf__ity_histogram_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *hist,
                                   ndf_array *bin_edges, const ndf_histogram_options *opt, const ndf__ity_geom *g,
                                   int64_t nbins);
/* Quantiles q[0..nq-1] in [0, 1] into out (float64, nimg x nq values in the batch layout). */
ndf_status ndf__ity_quantile_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, const double *q, int nq,
                                  ndf_array *out, const ndf__ity_geom *g);
/* The elementwise ops: op CLIP (c0, c1), or WINDOW / ZSCORE with lo, hi (mean, std) from stat
 * (NDF__ITY_STAT_*: percentiles p0, p1 in [0, 1]), or WINDOW with c0, c1 for every image when
 * stat < 0.  mask: NULL or the z-score mask. */
ndf_status ndf__ity_apply_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, const ndf_array *mask,
                               ndf_array *out, const ndf__ity_geom *g, int op, int stat, double c0, double c1,
                               double a, double b);
/* equalize_hist. */
ndf_status ndf__ity_equalize_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, const ndf_array *mask,
                                  ndf_array *out, const ndf__ity_geom *g, int nbins);

#endif
