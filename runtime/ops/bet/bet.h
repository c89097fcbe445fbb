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
  double radius0; /* the initial sphere's radius: half the estimated brain radius; 0: no brain */
  int iterations;
} ndf__bet_setup;

/* bet2 reruns a surface whose self-intersection measure exceeds this, with more smoothing, up to pass 10. */
#define NDF__BET_SELF_INTERSECTION 4000.0
#define NDF__BET_LAST_PASS 10

/* The image statistics of the setup, as a backend computes them; the host turns them into the setup
 * (ndf__bet_setup_run), so both backends place the sphere identically.  Each returns NDF_OK or an error
 * already set on the context.
 *   hist    FSL's robust-range histogram: counts[BET_HIST_BINS] of bet_hist_bin(v, fa, fb) over the image
 *   planes  per plane i0 < shape[0]: bet_plane_sums of its rows' bet_row_sums into planes[3 i0 + 0..2],
 *           and the voxels above t into *count
 *   select  a 16-bit digit histogram of the keys (bet_key) of the tm members (bet_tm_member): level 0,
 *           counts[key >> 16]; level 1, counts[key & 0xffff] of the keys with key >> 16 == prefix */
typedef struct ndf__bet_stats {
  void *self;
  ndf_status (*hist)(void *self, double fa, double fb, uint64_t *counts);
  ndf_status (*planes)(void *self, double t2, double t, double t98, double *planes, int64_t *count);
  ndf_status (*select)(void *self, const double *cog, double r2, double t2, double t98, int level, unsigned prefix,
                       uint64_t *counts);
} ndf__bet_stats;

/* The setup (steps 1-2 of ndf_skull_strip in ndforge.h) from the image's extremes vmin, vmax (finite) and
 * the statistics ops. */
ndf_status ndf__bet_setup_run(ndf_ctx *ctx, const char *name, const int64_t *shape, const double *spacing,
                              const ndf_skull_strip_options *opt, double vmin, double vmax, const ndf__bet_stats *ops,
                              ndf__bet_setup *st);
/* bet2's mean neighbour distance l of the surface pos: the vertices' bet_mean_edge_term summed in order. */
double ndf__bet_mean_edge(const ndf__bet_mesh *m, const double *pos);
/* The initial surface: the sphere of the setup, into pos (nv x 3, mm). */
void ndf__bet_sphere(const ndf__bet_mesh *m, const ndf__bet_setup *st, double *pos);
/* bet2's self-intersection measure of the surface pos against the initial sphere orig: over the pairs of
 * vertices closer than the mean neighbour distance ml, the sum of (d / ml - d0 / ml0)^2, d0 and ml0 the
 * same on the sphere.  -1 when out of memory. */
double ndf__bet_self_intersection(const ndf__bet_mesh *m, const double *pos, const double *orig);
/* Where the surface pos (mm) crosses the columns of voxels along axis 2: column k's crossings (voxel units)
 * are hits[start[k] .. start[k + 1]) in increasing order; a voxel is inside when an odd number of its
 * column's crossings lie below its centre.  *start and *hits are malloc'ed (free them). */
ndf_status ndf__bet_crossings(ndf_ctx *ctx, const char *name, const ndf__bet_mesh *m, const bet_consts *c,
                              const double *pos, int64_t **start, double **hits);

/* Runs a validated call on a CUDA input: the statistics, the passes and the mask in kernels, the host
 * deciding between them with the CPU backend's code (setup, self-intersection, crossings). */
ndf_status ndf__skull_strip_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, const double *spacing,
                                 ndf_array *out, const ndf_skull_strip_options *opt, const ndf__bet_mesh *m);
/* Cache warm: the kernels of a CUDA call for input dtype t, compiled for warm->arch. */
ndf_status ndf__skull_strip_cuda_warm(ndf_ctx *ctx, const char *name, ndf_dtype t, ndf__warm *warm);
#endif
