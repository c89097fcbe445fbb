/*
 * n4/n4.h -- N4 bias-field correction: the geometry and the host pieces
 * shared by the CPU backend (n4.c) and the CUDA one (n4_cuda.c): the shrunk
 * grid, the B-spline tables of one grid axis against one lattice axis, the
 * histogram sharpening (always on the host: it is a few hundred bins) and
 * the exact refinement of a control lattice.
 */
#ifndef NDF_OPS_N4_H
#define NDF_OPS_N4_H

#include "internal.h"

/* A validated call: the options normalized per axis. */
typedef struct ndf__n4_plan {
  int ndim;
  int64_t shape[NDF_MAX_SPATIAL];  /* the input's */
  int64_t sshape[NDF_MAX_SPATIAL]; /* the shrunk grid's: max(1, n / shrink_factor) */
  int64_t soff[NDF_MAX_SPATIAL];   /* shrunk voxel j is input voxel j * shrink_factor + soff */
  int64_t n, sn;                   /* voxels of the input and of the shrunk grid */
  int64_t ncp[NDF_MAX_SPATIAL];    /* control points of level 0 per axis */
  int order;
  int levels;
  int iters[NDF_N4_MAX_LEVELS];
  double threshold, fwhm, noise;
  int nbins;
  int shrink;
  int mask_label;
} ndf__n4_plan;

/* One grid axis of n voxels against a lattice axis of m = spans + order
 * points: voxel i lies in span span[i] at local coordinate t, and its order
 * + 1 basis weights are w[i * (order + 1) + j] for lattice points span[i] + j
 * (w2, w3: their squares and cubes, the fit's tables); sq[i] is sum_j w^2.
 * first[k], last[k]: the voxels whose support holds lattice point k (an
 * interval, first > last when empty). */
typedef struct ndf__n4_axis {
  int64_t n, m;
  int32_t *span, *first, *last;
  double *w, *w2, *w3, *sq;
} ndf__n4_axis;

/* Fills ax for n voxels and m lattice points; -1 when out of memory. */
int ndf__n4_axis_init(ndf__n4_axis *ax, int64_t n, int64_t m, int order);
void ndf__n4_axis_free(ndf__n4_axis *ax);

/* Lattice points of level l on axis d. */
static inline int64_t ndf__n4_level_points(const ndf__n4_plan *p, int d, int l) {
  return (p->ncp[d] - p->order) * ((int64_t)1 << l) + p->order;
}

/* The histogram sharpening of one iteration: hist (nbins bins of width
 * slope from lo, linear splatting) deconvolved by the Gaussian of the
 * plan's FWHM (Wiener filter), then E[u | v] per bin into e[nbins].
 * -1 when out of memory. */
int ndf__n4_sharpen(const ndf__n4_plan *p, const double *hist, double lo, double slope, double *e);

/* The refinement of a control lattice of shape m (row-major, ndim axes) to
 * twice as many spans per axis, 2 (m - order) + order points: the same
 * spline on the same domain.  out holds the refined shape's product. */
void ndf__n4_refine(const double *in, double *out, int ndim, const int64_t *m, int order, double *tmp);

/* The CPU backend's B-spline steps on their own (the unit tests call them):
 * the one-level scattered-data fit of values z with weights c (0: unused)
 * on a grid of shape n to the lattice of shape m (each lattice point the
 * weighted mean of the voxels' proposals, as one fit of an N4 iteration),
 * and the lattice evaluated on the grid.  -1 when out of memory. */
int ndf__n4_fit_grid(int ndim, const int64_t *n, const int64_t *m, int order, const double *z, const double *c,
                     double *lat);
int ndf__n4_eval_grid(int ndim, const int64_t *n, const int64_t *m, int order, const double *lat, double *grid);

/* Runs a validated call on CUDA arrays. */
ndf_status ndf__n4_cuda(ndf_ctx *ctx, const char *name, const ndf_array *input, const ndf_array *mask,
                        const ndf_array *weight, ndf_array *output, ndf_array *logb, const ndf__n4_plan *p,
                        ndf_n4_result *res);

#endif
