/*
 * bet.c -- skull stripping by FSL BET's surface model (Smith 2002): the
 * options, validation, the statistics that place the initial sphere, the
 * tessellated sphere, the self-intersection test, the CPU backend (surface
 * passes and voxelization), and dispatch to CUDA (bet_cuda.c).
 *
 * The arithmetic of one vertex update and of one column-triangle crossing is
 * templates/bet_mesh.cuh, included here as C: the CUDA kernels run the same
 * expressions, so that both backends produce the same surface and the same
 * mask bit for bit.  The host parts (statistics, sphere, the test between
 * passes) are this file's, and the CUDA backend calls them too.
 */
#include <stdlib.h>
#include <string.h>

#include "bet/bet.h"

static const char *const NAME = "ndf_skull_strip";

void ndf_skull_strip_options_init(ndf_skull_strip_options *opt) {
  if (!opt) return;
  memset(opt, 0, sizeof *opt);
  opt->fractional_intensity_threshold = 0.5;
  opt->vertical_gradient = 0.0;
  opt->iterations = 1000;
}

/* ---- the tessellated sphere --------------------------------------------------------------- */

typedef struct edge_map {
  int64_t cap;
  int64_t *key; /* (lo << 32 | hi) + 1, 0 empty */
  int *val;
} edge_map;

static int midpoint(edge_map *em, double *unit, int *nv, int a, int b) {
  const int lo = a < b ? a : b, hi = a < b ? b : a;
  const int64_t k = ((int64_t)lo << 32 | (int64_t)hi) + 1;
  int64_t h = (int64_t)(((uint64_t)k * 0x9E3779B97F4A7C15ULL) % (uint64_t)em->cap);
  while (em->key[h] != 0) {
    if (em->key[h] == k) return em->val[h];
    h = (h + 1) % em->cap;
  }
  double p[3], n2 = 0;
  for (int d = 0; d < 3; d++) {
    p[d] = unit[3 * a + d] + unit[3 * b + d];
    n2 += p[d] * p[d];
  }
  const double n = sqrt(n2);
  for (int d = 0; d < 3; d++) unit[3 * *nv + d] = p[d] / n;
  em->key[h] = k;
  em->val[h] = *nv;
  return (*nv)++;
}

void ndf__bet_mesh_free(ndf__bet_mesh *m) {
  if (!m) return;
  free(m->unit);
  free(m->ring);
  free(m->tri);
  memset(m, 0, sizeof *m);
}

ndf_status ndf__bet_mesh_build(ndf_ctx *ctx, const char *name, ndf__bet_mesh *m) {
  memset(m, 0, sizeof *m);
  int nt = 20, nv = 12, maxv = 12, maxt = 20;
  for (int l = 0; l < NDF__BET_LEVELS; l++) maxv += 3 * (maxt / 2), maxt *= 4; /* nv + edges, 4 nt */
  double *unit = malloc(sizeof(double) * 3 * (size_t)maxv);
  int *tri = malloc(sizeof(int) * 3 * (size_t)maxt), *tmp = malloc(sizeof(int) * 3 * (size_t)maxt);
  edge_map em = {4 * (int64_t)maxt, calloc(4 * (size_t)maxt, sizeof(int64_t)), malloc(sizeof(int) * 4 * (size_t)maxt)};
  int *ring = malloc(sizeof(int) * (BET_MAX_RING + 1) * (size_t)maxv);
  int *inc = malloc(sizeof(int) * 2 * BET_MAX_RING * (size_t)maxv), *ninc = calloc((size_t)maxv, sizeof(int));
  ndf_status s = NDF_OK;
  if (!unit || !tri || !tmp || !em.key || !em.val || !ring || !inc || !ninc) {
    s = ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
    goto done;
  }
  /* The icosahedron as bet2 places it: the cyclic permutations of (0, +-phi, +-1) (bet2's (0, +-tau, +-one)
   * and its rotations; the mirror image, (0, +-1, +-phi), tessellates the sphere along other lines); its
   * faces are the triples of vertices at mutual distance 2, oriented counter-clockwise seen from outside. */
  const double phi = (1.0 + sqrt(5.0)) / 2.0;
  for (int i = 0; i < 12; i++) {
    const double v[3] = {0.0, (i & 1) ? -phi : phi, (i & 2) ? -1.0 : 1.0};
    const int r = i / 4;
    for (int d = 0; d < 3; d++) unit[3 * i + d] = v[(d + 3 - r) % 3];
  }
  nt = 0;
  for (int a = 0; a < 12; a++)
    for (int b = a + 1; b < 12; b++)
      for (int c = b + 1; c < 12; c++) {
        const int p[3] = {a, b, c};
        int ok = 1;
        for (int e = 0; e < 3 && ok; e++) {
          double d2 = 0;
          for (int d = 0; d < 3; d++) {
            const double t = unit[3 * p[e] + d] - unit[3 * p[(e + 1) % 3] + d];
            d2 += t * t;
          }
          ok = fabs(d2 - 4.0) < 1e-9;
        }
        if (!ok) continue;
        double u[3], w[3], cr[3], ctr = 0;
        for (int d = 0; d < 3; d++) u[d] = unit[3 * b + d] - unit[3 * a + d], w[d] = unit[3 * c + d] - unit[3 * a + d];
        cr[0] = u[1] * w[2] - u[2] * w[1], cr[1] = u[2] * w[0] - u[0] * w[2], cr[2] = u[0] * w[1] - u[1] * w[0];
        for (int d = 0; d < 3; d++) ctr += cr[d] * (unit[3 * a + d] + unit[3 * b + d] + unit[3 * c + d]);
        tri[3 * nt] = a, tri[3 * nt + 1] = ctr > 0 ? b : c, tri[3 * nt + 2] = ctr > 0 ? c : b;
        nt++;
      }
  for (int i = 0; i < 12; i++) {
    const double n = sqrt(unit[3 * i] * unit[3 * i] + unit[3 * i + 1] * unit[3 * i + 1] + unit[3 * i + 2] * unit[3 * i + 2]);
    for (int d = 0; d < 3; d++) unit[3 * i + d] /= n;
  }
  /* Each subdivision splits a triangle into four at its edges' midpoints, pushed out to the sphere. */
  for (int l = 0; l < NDF__BET_LEVELS; l++) {
    memset(em.key, 0, sizeof(int64_t) * (size_t)em.cap);
    int n2 = 0;
    for (int t = 0; t < nt; t++) {
      const int a = tri[3 * t], b = tri[3 * t + 1], c = tri[3 * t + 2];
      const int ab = midpoint(&em, unit, &nv, a, b), bc = midpoint(&em, unit, &nv, b, c),
                ca = midpoint(&em, unit, &nv, c, a);
      const int q[12] = {a, ab, ca, ab, b, bc, ca, bc, c, ab, bc, ca};
      memcpy(tmp + 3 * n2, q, sizeof q);
      n2 += 4;
    }
    int *sw = tri;
    tri = tmp, tmp = sw, nt = n2;
  }
  /* The rings: the triangle (v, a, b) gives a -> b; following those arrows from any neighbour goes once
   * around v counter-clockwise. */
  for (int t = 0; t < nt; t++)
    for (int e = 0; e < 3; e++) {
      const int v = tri[3 * t + e], a = tri[3 * t + (e + 1) % 3], b = tri[3 * t + (e + 2) % 3];
      if (ninc[v] == BET_MAX_RING) {
        s = ndf__error(ctx, NDF_EINTERNAL, "%s: the tessellation has a vertex of degree > %d", name, BET_MAX_RING);
        goto done;
      }
      inc[2 * (BET_MAX_RING * v + ninc[v])] = a;
      inc[2 * (BET_MAX_RING * v + ninc[v]) + 1] = b;
      ninc[v]++;
    }
  for (int v = 0; v < nv; v++) {
    int *r = ring + (BET_MAX_RING + 1) * v, cur = inc[2 * BET_MAX_RING * v];
    r[0] = ninc[v];
    for (int k = 0; k < ninc[v]; k++) {
      r[1 + k] = cur;
      int next = -1;
      for (int j = 0; j < ninc[v]; j++)
        if (inc[2 * (BET_MAX_RING * v + j)] == cur) next = inc[2 * (BET_MAX_RING * v + j) + 1];
      if (next < 0) {
        s = ndf__error(ctx, NDF_EINTERNAL, "%s: the tessellation is not closed at vertex %d", name, v);
        goto done;
      }
      cur = next;
    }
  }
  m->nv = nv, m->nt = nt, m->unit = unit, m->tri = tri, m->ring = ring;
  unit = NULL, tri = NULL, ring = NULL;
done:
  free(unit), free(tri), free(tmp), free(em.key), free(em.val), free(ring), free(inc), free(ninc);
  return s;
}

void ndf__bet_sphere(const ndf__bet_mesh *m, const ndf__bet_setup *st, double *pos) {
  for (int v = 0; v < m->nv; v++)
    for (int d = 0; d < 3; d++) pos[3 * v + d] = st->centre[d] + st->radius0 * m->unit[3 * v + d];
}

/* ---- bet2's self-intersection measure ---------------------------------------------------- */

double ndf__bet_mean_edge(const ndf__bet_mesh *m, const double *pos) {
  double sum = 0.0;
  for (int v = 0; v < m->nv; v++) sum = BET_ADD(sum, bet_mean_edge_term(pos, m->ring, v));
  return sum / (double)m->nv;
}

/* The pairs closer than ml are found through a grid of cells of side ml, hashed into a table: a pair
 * lies in the same or neighbouring cells. */
double ndf__bet_self_intersection(const ndf__bet_mesh *m, const double *pos, const double *orig) {
  const int nv = m->nv;
  const double ml = ndf__bet_mean_edge(m, pos), mlo = ndf__bet_mean_edge(m, orig);
  if (!(ml > 0) || !isfinite(ml) || !(mlo > 0)) return INFINITY; /* degenerate: as intersecting */
  double lo[3] = {INFINITY, INFINITY, INFINITY};
  for (int v = 0; v < nv; v++)
    for (int d = 0; d < 3; d++) {
      if (!isfinite(pos[3 * v + d])) return INFINITY;
      lo[d] = fmin(lo[d], pos[3 * v + d]);
    }
  int64_t nb = 1;
  while (nb < 2 * (int64_t)nv) nb *= 2;
  int64_t *cell = malloc(sizeof(int64_t) * 3 * (size_t)nv);
  int *head = malloc(sizeof(int) * (size_t)(nb + 1)), *order = malloc(sizeof(int) * (size_t)nv);
  int *bucket = malloc(sizeof(int) * (size_t)nv);
  double sum = -1;
  if (!cell || !head || !order || !bucket) goto done;
#define BET_HASH(x, y, z) \
  ((int64_t)((((uint64_t)(x) * 73856093u) ^ ((uint64_t)(y) * 19349663u) ^ ((uint64_t)(z) * 83492791u)) & (uint64_t)(nb - 1)))
  memset(head, 0, sizeof(int) * (size_t)(nb + 1));
  for (int v = 0; v < nv; v++) {
    for (int d = 0; d < 3; d++) cell[3 * v + d] = (int64_t)floor((pos[3 * v + d] - lo[d]) / ml);
    bucket[v] = (int)BET_HASH(cell[3 * v], cell[3 * v + 1], cell[3 * v + 2]);
    head[bucket[v] + 1]++;
  }
  for (int64_t k = 0; k < nb; k++) head[k + 1] += head[k];
  for (int v = 0; v < nv; v++) order[head[bucket[v]]++] = v; /* head[k] now ends bucket k */
  sum = 0.0;
  const double ml2 = ml * ml;
  for (int a = 0; a < nv; a++)
    for (int dx = -1; dx <= 1; dx++)
      for (int dy = -1; dy <= 1; dy++)
        for (int dz = -1; dz <= 1; dz++) {
          const int64_t cx = cell[3 * a] + dx, cy = cell[3 * a + 1] + dy, cz = cell[3 * a + 2] + dz;
          const int64_t k = BET_HASH(cx, cy, cz);
          for (int j = k == 0 ? 0 : head[k - 1]; j < head[k]; j++) {
            const int b = order[j];
            if (b <= a || cell[3 * b] != cx || cell[3 * b + 1] != cy || cell[3 * b + 2] != cz) continue;
            double d2 = 0, o2 = 0;
            for (int d = 0; d < 3; d++) {
              const double w = pos[3 * a + d] - pos[3 * b + d], u = orig[3 * a + d] - orig[3 * b + d];
              d2 += w * w, o2 += u * u;
            }
            if (d2 >= ml2) continue;
            const double e = sqrt(d2) / ml - sqrt(o2) / mlo;
            sum += e * e;
          }
        }
#undef BET_HASH
done:
  free(cell), free(head), free(order), free(bucket);
  return sum;
}

/* ---- the statistics ----------------------------------------------------------------------- */

/* FSL's robust range (2nd and 98th percentiles from a histogram of 1000 bins; while they span less than a
 * tenth of the histogram's range, again over the bins between them widened by one, at most 10 passes, the
 * last over the full range without its end bins). */
static ndf_status robust_range(const ndf__bet_stats *ops, int64_t n, double vmin, double vmax, double *t2,
                               double *t98) {
  uint64_t hist[BET_HIST_BINS];
  const int bins = BET_HIST_BINS, last = 10;
  int bottom = 0, top = 0, lowest = 0, highest = bins - 1;
  double lo = vmin, hi = vmax;
  *t2 = *t98 = 0;
  for (int pass = 1;; pass++) {
    if (pass > 1) {
      if (!(*t98 - *t2 < (hi - lo) / 10.0)) break;
      bottom = bottom - 1 > 0 ? bottom - 1 : 0;
      top = top + 1 < bins - 1 ? top + 1 : bins - 1;
      const double nlo = lo + ((double)bottom / (double)bins) * (hi - lo);
      hi = lo + ((double)(top + 1) / (double)bins) * (hi - lo);
      lo = nlo;
    }
    if (pass == last || lo == hi) lo = vmin, hi = vmax;
    if (lo == hi) { /* a constant image */
      *t2 = lo, *t98 = hi;
      return NDF_OK;
    }
    const double fa = (double)bins / (hi - lo), fb = ((double)bins * -lo) / (hi - lo);
    ndf_status s = ops->hist(ops->self, fa, fb, hist);
    if (s != NDF_OK) return s;
    int64_t valid = n;
    if (pass == last) {
      valid -= (int64_t)hist[lowest] + (int64_t)hist[highest];
      lowest++, highest--;
    }
    if (valid < 0) {
      *t2 = *t98 = lo;
      return NDF_OK;
    }
    const double w = (hi - lo) / (double)bins;
    int64_t count = 0;
    for (bottom = lowest; count < valid / 50; bottom++) count += (int64_t)hist[bottom];
    bottom--;
    *t2 = lo + (double)bottom * w;
    count = 0;
    for (top = highest; count < valid / 50; top--) count += (int64_t)hist[top];
    top++;
    *t98 = lo + (double)(top + 1) * w;
    if (pass == last) break;
  }
  return NDF_OK;
}

ndf_status ndf__bet_setup_run(ndf_ctx *ctx, const char *name, const int64_t *shape, const double *spacing,
                              const ndf_skull_strip_options *opt, double vmin, double vmax, const ndf__bet_stats *ops,
                              ndf__bet_setup *st) {
  const int64_t n = shape[0] * shape[1] * shape[2];
  memset(st, 0, sizeof *st);
  for (int d = 0; d < 3; d++) st->c.shape[d] = shape[d], st->c.spacing[d] = spacing[d];
  st->iterations = opt->iterations;
  st->c.bt = pow(opt->fractional_intensity_threshold, 0.275); /* bet2's main parameter */
  st->c.gradient = opt->vertical_gradient;
  st->c.d1 = 7.0; /* bet2's search depths (the paper's 20 and 10 mm) */
  st->c.d2 = 3.0;
  st->c.dscale = fmin(fmin(fmin(spacing[0], spacing[1]), spacing[2]), 1.0);
  const double rmin = 3.33, rmax = 10.0; /* BET's curvature radii (mm) */
  st->c.E = (1.0 / rmin + 1.0 / rmax) / 2.0;
  st->c.F = 6.0 / (1.0 / rmin - 1.0 / rmax);
  double t2, t98;
  ndf_status s = robust_range(ops, n, vmin, vmax, &t2, &t98);
  if (s != NDF_OK) return s;
  const double t = t2 + 0.1 * (t98 - t2);
  /* the centre of gravity and the volume above t */
  double *planes = malloc(sizeof(double) * 3 * (size_t)shape[0]);
  uint64_t *hist = malloc(sizeof(uint64_t) * 65536);
  if (!planes || !hist) {
    free(planes), free(hist);
    return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
  }
  int64_t count = 0;
  s = ops->planes(ops->self, t2, t, t98, planes, &count);
  double sw = 0.0, sx[3] = {0.0, 0.0, 0.0}, cog[3];
  for (int64_t i0 = 0; s == NDF_OK && i0 < shape[0]; i0++) {
    sw = BET_ADD(sw, planes[3 * i0]);
    sx[0] = BET_ADD(sx[0], BET_MUL(planes[3 * i0], (double)i0));
    sx[1] = BET_ADD(sx[1], planes[3 * i0 + 1]);
    sx[2] = BET_ADD(sx[2], planes[3 * i0 + 2]);
  }
  for (int d = 0; d < 3; d++)
    cog[d] = sw > 0 ? BET_MUL(sx[d], spacing[d]) / sw : 0.5 * (double)(shape[d] - 1) * spacing[d];
  if (opt->has_centre)
    for (int d = 0; d < 3; d++) cog[d] = opt->centre[d] * spacing[d];
  double radius = pow(0.75 * (double)count * spacing[0] * spacing[1] * spacing[2] / 3.14159265358979323846, 1.0 / 3.0);
  if (opt->radius > 0) radius = opt->radius;
  /* tm: bet2's median (the lower one) of the values in (t2, t98) strictly inside the sphere, selected by
   * the two 16-bit halves of their keys */
  double tm = t98 > t ? 0.5 * (t + t98) : t;
  const double r2 = BET_MUL(radius, radius);
  if (s == NDF_OK) s = ops->select(ops->self, cog, r2, t2, t98, 0, 0, hist);
  if (s == NDF_OK) {
    uint64_t total = 0;
    for (int k = 0; k < 65536; k++) total += hist[k];
    if (total > 0) {
      uint64_t rank = total / 2 > 0 ? total / 2 - 1 : 0, below = 0; /* the (total / 2)-th smallest */
      unsigned hi = 0;
      while (below + hist[hi] <= rank) below += hist[hi++];
      s = ops->select(ops->self, cog, r2, t2, t98, 1, hi, hist);
      unsigned lo = 0;
      if (s == NDF_OK)
        while (below + hist[lo] <= rank) below += hist[lo++];
      tm = (double)bet_unkey(hi << 16 | lo);
    }
  }
  free(planes), free(hist);
  if (s != NDF_OK) return s;
  st->c.t2 = t2, st->c.t = t, st->c.tm = tm;
  st->c.cog2 = cog[2];
  st->c.radius = radius > 0 ? radius : 1.0;
  for (int d = 0; d < 3; d++) st->centre[d] = cog[d];
  st->radius0 = count > 0 || opt->radius > 0 ? 0.5 * radius : 0.0;
  return NDF_OK;
}

/* ---- the mask from the surface ------------------------------------------------------------ */

ndf_status ndf__bet_crossings(ndf_ctx *ctx, const char *name, const ndf__bet_mesh *m, const bet_consts *c,
                              const double *pos, int64_t **startp, double **hitsp) {
  const int64_t n0 = c->shape[0], n1 = c->shape[1], ncol = n0 * n1;
  double *vx = malloc(sizeof(double) * 3 * (size_t)m->nv);
  int64_t *start = calloc((size_t)ncol + 1, sizeof(int64_t));
  double *hits = NULL;
  *startp = NULL, *hitsp = NULL;
  if (!vx || !start) goto oom;
  for (int v = 0; v < m->nv; v++)
    for (int d = 0; d < 3; d++) vx[3 * v + d] = pos[3 * v + d] / c->spacing[d];
  /* Every triangle is crossed with the columns its projection's bounding box covers: counted, then
   * stored (start[k + 1] counts column k's, then the prefix sums place them). */
  for (int round = 0; round < 2; round++) {
    if (round == 1) {
      for (int64_t k = 0; k < ncol; k++) start[k + 1] += start[k];
      if (!(hits = malloc(sizeof(double) * (size_t)(start[ncol] > 0 ? start[ncol] : 1)))) goto oom;
    }
    for (int t = 0; t < m->nt; t++) {
      const double *a = vx + 3 * m->tri[3 * t], *b = vx + 3 * m->tri[3 * t + 1], *q = vx + 3 * m->tri[3 * t + 2];
      double lo[2], hi[2];
      for (int d = 0; d < 2; d++) {
        lo[d] = fmin(a[d], fmin(b[d], q[d]));
        hi[d] = fmax(a[d], fmax(b[d], q[d]));
      }
      if (!isfinite(lo[0]) || !isfinite(lo[1]) || !isfinite(hi[0]) || !isfinite(hi[1])) continue; /* crosses no column */
      const int64_t x0 = lo[0] < 0 ? 0 : (int64_t)ceil(lo[0]), y0 = lo[1] < 0 ? 0 : (int64_t)ceil(lo[1]);
      const int64_t x1 = hi[0] > (double)(n0 - 1) ? n0 - 1 : (int64_t)floor(hi[0]);
      const int64_t y1 = hi[1] > (double)(n1 - 1) ? n1 - 1 : (int64_t)floor(hi[1]);
      for (int64_t x = x0; x <= x1; x++)
        for (int64_t y = y0; y <= y1; y++) {
          double z;
          if (!bet_tri_hit(a, b, q, (double)x, (double)y, &z)) continue;
          if (round == 0) start[x * n1 + y + 1]++;
          else hits[start[x * n1 + y]++] = z;
        }
    }
  }
  /* start[k] now ends column k's crossings: shift back, and sort each column (few crossings) */
  for (int64_t k = ncol; k > 0; k--) start[k] = start[k - 1];
  start[0] = 0;
  for (int64_t k = 0; k < ncol; k++)
    for (int64_t i = start[k] + 1; i < start[k + 1]; i++)
      for (int64_t j = i; j > start[k] && hits[j - 1] > hits[j]; j--) {
        const double t = hits[j];
        hits[j] = hits[j - 1], hits[j - 1] = t;
      }
  free(vx);
  *startp = start, *hitsp = hits;
  return NDF_OK;
oom:
  free(vx), free(start), free(hits);
  return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
}

/* ---- the CPU backend ---------------------------------------------------------------------- */

typedef struct cpu_stats {
  ndf_ctx *ctx;
  const float *img;
  const int64_t *shape;
  const double *spacing;
  int nth;
} cpu_stats;

static ndf_status cpu_hist(void *self, double fa, double fb, uint64_t *counts) {
  const cpu_stats *cs = self;
  memset(counts, 0, sizeof(uint64_t) * BET_HIST_BINS);
  for (int64_t i0 = 0; i0 < cs->shape[0]; i0++)
    for (int64_t i1 = 0; i1 < cs->shape[1]; i1++)
      for (int64_t i2 = 0; i2 < cs->shape[2]; i2++)
        counts[bet_hist_bin((double)cs->img[bet_index(cs->shape, i0, i1, i2)], fa, fb)]++;
  return NDF_OK;
}

static ndf_status cpu_planes(void *self, double t2, double t, double t98, double *planes, int64_t *count) {
  const cpu_stats *cs = self;
  const int64_t n0 = cs->shape[0], n1 = cs->shape[1];
  double *rows = malloc(sizeof(double) * 2 * (size_t)(n0 * n1));
  if (!rows) return ndf__error(cs->ctx, NDF_ENOMEM, "%s: out of memory", NAME);
  int64_t total = 0;
  const int nth = cs->nth;
  _Pragma("omp parallel for schedule(static) num_threads(nth) reduction(+ : total)")
  for (int64_t i0 = 0; i0 < n0; i0++) {
    for (int64_t i1 = 0; i1 < n1; i1++) {
      int64_t k;
      bet_row_sums(cs->img, cs->shape, i0, i1, t2, t, t98, rows + 2 * (i0 * n1 + i1), &k);
      total += k;
    }
    bet_plane_sums(rows + 2 * i0 * n1, n1, planes + 3 * i0);
  }
  (void)nth;
  free(rows);
  *count = total;
  return NDF_OK;
}

static ndf_status cpu_select(void *self, const double *cog, double r2, double t2, double t98, int level,
                             unsigned prefix, uint64_t *counts) {
  const cpu_stats *cs = self;
  memset(counts, 0, sizeof(uint64_t) * 65536);
  for (int64_t i0 = 0; i0 < cs->shape[0]; i0++)
    for (int64_t i1 = 0; i1 < cs->shape[1]; i1++)
      for (int64_t i2 = 0; i2 < cs->shape[2]; i2++) {
        const float v = cs->img[bet_index(cs->shape, i0, i1, i2)];
        if (!bet_tm_member((double)v, i0, i1, i2, cs->spacing, cog, r2, t2, t98)) continue;
        const unsigned k = bet_key(v);
        if (level == 0) counts[k >> 16]++;
        else if (k >> 16 == prefix) counts[k & 0xffffu]++;
      }
  return NDF_OK;
}

/* The passes: from the sphere, `iterations` Jacobi updates of every vertex; while bet2's self-intersection
 * measure exceeds its threshold, again from the sphere with more smoothing (bet_increase), up to
 * NDF__BET_LAST_PASS.  pos receives the final surface. */
static ndf_status evolve_cpu(ndf_ctx *ctx, const ndf__bet_mesh *m, const ndf__bet_setup *st, const float *img,
                             double *pos) {
  double *tmp = malloc(sizeof(double) * 3 * (size_t)m->nv), *orig = malloc(sizeof(double) * 3 * (size_t)m->nv);
  if (!tmp || !orig) {
    free(tmp), free(orig);
    return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", NAME);
  }
  const int nth = ndf__cpu_threads(ctx);
  ndf__bet_sphere(m, st, orig);
  ndf_status s = NDF_OK;
  for (int pass = 0; pass <= NDF__BET_LAST_PASS; pass++) {
    memcpy(pos, orig, sizeof(double) * 3 * (size_t)m->nv);
    double *a = pos, *b = tmp, l = 0.0;
    for (int it = 0; it < st->iterations; it++) {
      bet_consts c = st->c;
      c.inc = bet_increase(pass, it, st->iterations);
      if (bet_mean_edge_due(it)) l = ndf__bet_mean_edge(m, a);
      c.l = l;
      _Pragma("omp parallel for schedule(static) num_threads(nth)")
      for (int v = 0; v < m->nv; v++) bet_vertex_update(a, m->ring, v, &c, img, b + 3 * (int64_t)v);
      double *t = a;
      a = b, b = t;
    }
    if (a != pos) memcpy(pos, a, sizeof(double) * 3 * (size_t)m->nv);
    const double si = ndf__bet_self_intersection(m, pos, orig);
    if (si < 0) {
      s = ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", NAME);
      break;
    }
    if (!(si > NDF__BET_SELF_INTERSECTION)) break;
  }
  (void)nth;
  free(tmp), free(orig);
  return s;
}

/* The mask: 1 where a column's crossings below the voxel's centre are odd. */
static ndf_status voxelize_cpu(ndf_ctx *ctx, const ndf__bet_mesh *m, const bet_consts *c, const double *pos,
                               const ndf_array *out) {
  int64_t *start;
  double *hits;
  ndf_status s = ndf__bet_crossings(ctx, NAME, m, c, pos, &start, &hits);
  if (s != NDF_OK) return s;
  const int64_t n1 = c->shape[1], n2 = c->shape[2], ncol = c->shape[0] * n1;
  uint8_t *o = out->data;
  for (int64_t k = 0; k < ncol; k++) {
    const int64_t x = k / n1, y = k % n1, e = start[k + 1];
    int64_t h = start[k];
    for (int64_t z = 0; z < n2; z++) {
      while (h < e && hits[h] < (double)z) h++;
      o[x * out->strides[0] + y * out->strides[1] + z * out->strides[2]] = (uint8_t)((h - start[k]) & 1);
    }
  }
  free(start), free(hits);
  return NDF_OK;
}

static ndf_status skull_strip_cpu(ndf_ctx *ctx, const ndf_array *in, const double *spacing, ndf_array *out,
                                  const ndf_skull_strip_options *opt, const ndf__bet_mesh *m) {
  const int64_t n = ndf_array_size(in), nimg = bet_image_size(in->shape);
  ndf_status s = ndf__check_host_memory(ctx, NAME, "the image in float32", 4 * nimg + 16 * in->shape[0] * in->shape[1]);
  if (s != NDF_OK) return s;
  float *img = calloc((size_t)nimg, sizeof(float));
  double *pos = malloc(sizeof(double) * 3 * (size_t)m->nv);
  if (!img || !pos) {
    free(img), free(pos);
    return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", NAME);
  }
  unsigned kmin = 0xffffffffu, kmax = 0;
  for (int64_t i0 = 0, i = 0; i0 < in->shape[0]; i0++)
    for (int64_t i1 = 0; i1 < in->shape[1]; i1++)
      for (int64_t i2 = 0; i2 < in->shape[2]; i2++, i++) {
        const float v = (float)ndf__get_f64(in, i0 * in->strides[0] + i1 * in->strides[1] + i2 * in->strides[2]);
        if (!isfinite(v)) {
          free(img), free(pos);
          return ndf__argerror(ctx, NAME, "input", "NaN, infinity or a value beyond float32's range at element %lld",
                               (long long)i);
        }
        img[bet_index(in->shape, i0, i1, i2)] = v;
        kmin = bet_key(v) < kmin ? bet_key(v) : kmin; /* by keys, as the device (-0 below +0) */
        kmax = bet_key(v) > kmax ? bet_key(v) : kmax;
      }
  cpu_stats cs = {ctx, img, in->shape, spacing, ndf__cpu_threads(ctx)};
  const ndf__bet_stats ops = {&cs, cpu_hist, cpu_planes, cpu_select};
  ndf__bet_setup st;
  s = ndf__bet_setup_run(ctx, NAME, in->shape, spacing, opt, (double)bet_unkey(kmin), (double)bet_unkey(kmax), &ops,
                         &st);
  if (s == NDF_OK && st.radius0 > 0) s = evolve_cpu(ctx, m, &st, img, pos);
  if (s == NDF_OK) {
    if (st.radius0 > 0) s = voxelize_cpu(ctx, m, &st.c, pos, out);
    else /* nothing above the threshold: no brain */
      for (int64_t i = 0; i < n; i++) ((uint8_t *)out->data)[ndf__offset_of(out, i)] = 0;
  }
  free(img), free(pos);
  return s;
}

/* ---- validation and dispatch -------------------------------------------------------------- */

static ndf_status check_call(ndf_ctx *ctx, const char *name, const ndf_array *in, const double *spacing,
                             const ndf_array *out, const ndf_skull_strip_options *opt) {
  ndf_status s;
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  if ((s = ndf__check_array(ctx, name, "input", in, NULL)) != NDF_OK) return s;
  if ((s = ndf__check_array(ctx, name, "output", out, NULL)) != NDF_OK) return s;
  if (!opt) return ndf__argerror(ctx, name, "opt", "NULL");
  if (in->ndim != 3) return ndf__argerror(ctx, name, "input", "rank %d (a 3-D image is required)", in->ndim);
  if (in->dtype == NDF_INT64 || in->dtype >= NDF_DTYPE_COUNT)
    return ndf__argerror(ctx, name, "input", "dtype %s is not accepted", ndf_dtype_name(in->dtype));
  for (int d = 0; d < 3; d++)
    if (in->shape[d] < 2) return ndf__argerror(ctx, name, "input", "extent %lld on axis %d (at least 2)",
                                               (long long)in->shape[d], d);
  if (out->dtype != NDF_BOOL && out->dtype != NDF_UINT8)
    return ndf__argerror(ctx, name, "output", "dtype %s (bool or uint8)", ndf_dtype_name(out->dtype));
  if (out->ndim != 3 || memcmp(out->shape, in->shape, 3 * sizeof(int64_t)) != 0)
    return ndf__argerror(ctx, name, "output", "its shape differs from the input's");
  if (out->device != in->device || out->device_id != in->device_id)
    return ndf__argerror(ctx, name, "output", "on another device than the input");
  if (!ndf__layout_is_proper(out)) return ndf__argerror(ctx, name, "output", "elements overlap");
  if (ndf__arrays_overlap(in, out)) return ndf__argerror(ctx, name, "output", "overlaps the input");
  if (spacing)
    for (int d = 0; d < 3; d++)
      /* the surface samples every min(spacing, 1) mm along its normals: a floor bounds that work */
      if (!(spacing[d] >= 1e-3) || !isfinite(spacing[d]))
        return ndf__argerror(ctx, name, "spacing", "spacing[%d]=%g (each must be at least 0.001 mm and finite)", d,
                             spacing[d]);
  const double f = opt->fractional_intensity_threshold, g = opt->vertical_gradient;
  if (!(f >= 0 && f <= 1))
    return ndf__argerror(ctx, name, "fractional_intensity_threshold", "%g is outside [0, 1]", f);
  if (!(g >= -1 && g <= 1)) return ndf__argerror(ctx, name, "vertical_gradient", "%g is outside [-1, 1]", g);
  if (!(opt->radius >= 0) || !isfinite(opt->radius))
    return ndf__argerror(ctx, name, "radius", "%g (0 to estimate it, else > 0 mm)", opt->radius);
  if (opt->has_centre)
    for (int d = 0; d < 3; d++)
      if (!isfinite(opt->centre[d]))
        return ndf__argerror(ctx, name, "centre", "centre[%d] is not finite", d);
  if (opt->iterations < 1 || opt->iterations > 100000)
    return ndf__argerror(ctx, name, "iterations", "%d is outside [1, 100000]", opt->iterations);
  return ndf__check_device(ctx, name, in);
}

ndf_status ndf_skull_strip(ndf_ctx *ctx, const ndf_array *input, const double *spacing, ndf_array *output,
                           const ndf_skull_strip_options *opt) {
  static const double unit[3] = {1.0, 1.0, 1.0};
  ndf_status s = check_call(ctx, NAME, input, spacing, output, opt);
  if (s != NDF_OK) return s;
  if (!spacing) spacing = unit;
  ndf__clear_error(ctx);
  ndf__bet_mesh m;
  if ((s = ndf__bet_mesh_build(ctx, NAME, &m)) != NDF_OK) return s;
  if (input->device == NDF_DEVICE_CUDA) s = ndf__skull_strip_cuda(ctx, NAME, input, spacing, output, opt, &m);
  else s = skull_strip_cpu(ctx, input, spacing, output, opt, &m);
  ndf__bet_mesh_free(&m);
  return s;
}

ndf_status ndf_cache_warm_skull_strip(ndf_ctx *ctx, const char *arch, ndf_dtype dtype, int *compiled) {
  static const char *name = "ndf_cache_warm_skull_strip";
  ndf_status s = ndf__warm_check(ctx, name, arch, dtype, 3, compiled);
  if (s != NDF_OK) return s;
  if (dtype == NDF_INT64) return ndf__argerror(ctx, name, "dtype", "int64 is not accepted");
  ndf__warm w = {arch, 0};
  s = ndf__skull_strip_cuda_warm(ctx, name, dtype, &w);
  if (compiled) *compiled = w.compiled;
  return s;
}
