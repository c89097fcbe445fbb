/*
 * bet/bet.h -- skull stripping by FSL BET's surface model: what the CPU
 * backend (bet.c) and the CUDA one (bet_cuda.c) share.  The per-vertex and
 * per-triangle arithmetic itself is templates/bet_mesh.cuh, compiled by both.
 */
#ifndef NDF_OPS_BET_H
#define NDF_OPS_BET_H

#include <math.h>
#include <stdint.h>

#include "internal.h"
#include "../../../templates/bet_mesh.cuh"

/* The tessellated unit sphere: an icosahedron subdivided four times. */
#define NDF__BET_LEVELS 4
#define NDF__BET_MAX_PASSES 4
typedef struct ndf__bet_mesh {
  int nv, nt;
  double *unit; /* nv x 3: the vertices on the unit sphere */
  int *ring;    /* nv x (BET_MAX_RING + 1): count, then the neighbours counter-clockwise seen from outside */
  int *tri;     /* nt x 3, counter-clockwise seen from outside */
} ndf__bet_mesh;

ndf_status ndf__bet_mesh_build(ndf_ctx *ctx, const char *name, ndf__bet_mesh *m);
void ndf__bet_mesh_free(ndf__bet_mesh *m);

/* Everything a run needs besides the image: the constants and the initial sphere's centre and radius (mm). */
typedef struct ndf__bet_setup {
  bet_consts c;
  double centre[3];
  double radius0; /* the initial sphere's radius: half the estimated brain radius */
  int iterations;
} ndf__bet_setup;

/* The curvature sigmoid's E and F at iteration it of pass (0: BET's own radii; later passes smooth more
 * at first). */
void ndf__bet_curvature(int pass, int it, int iterations, double *E, double *F);
/* bet2's mean distance between neighbouring vertices of the surface (the mean over vertices of each
 * vertex's mean distance to its neighbours), which it updates at iterations 0, 50 and every 100th:
 * 1 when `it` is such an iteration (*l written), else 0.  Both backends call it on the host, on the
 * same positions, in the same order. */
int ndf__bet_mean_edge(const ndf__bet_mesh *m, const double *pos, int it, double *l);
/* The initial surface: the sphere of the setup, into pos (nv x 3, mm). */
void ndf__bet_sphere(const ndf__bet_mesh *m, const ndf__bet_setup *st, double *pos);
/* 1 when the surface pos intersects itself (BET's test, see ndf_skull_strip). */
int ndf__bet_self_intersects(const ndf__bet_mesh *m, const double *pos);

/* Runs a validated call on a CUDA input: the image converted on the device, the statistics on a host copy
 * (the same code as the CPU's), the passes and the voxelization in kernels. */
ndf_status ndf__skull_strip_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, const double *spacing,
                                 ndf_array *out, const ndf_skull_strip_options *opt, const ndf__bet_mesh *m);
/* Cache warm: the kernels of a CUDA call for input dtype t, compiled for warm->arch. */
ndf_status ndf__skull_strip_cuda_warm(ndf_ctx *ctx, const char *name, ndf_dtype t, ndf__warm *warm);
/* The statistics of steps 1-2 (ndforge.h) of the image (float, in bricks: bet_index) into *st. */
ndf_status ndf__bet_setup_from(ndf_ctx *ctx, const char *name, const float *img, const int64_t *shape,
                               const double *spacing, const ndf_skull_strip_options *opt, ndf__bet_setup *st);

#endif
