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

/* ---- element access ----------------------------------------------------------------------- */

static inline double get(const ndf_array *a, int64_t off) {
  const char *p = a->data;
  switch (a->dtype) {
    case NDF_BOOL: case NDF_UINT8: return ((const uint8_t *)p)[off];
    case NDF_INT8: return ((const int8_t *)p)[off];
    case NDF_UINT16: return ((const uint16_t *)p)[off];
    case NDF_INT16: return ((const int16_t *)p)[off];
    case NDF_UINT32: return ((const uint32_t *)p)[off];
    case NDF_INT32: return ((const int32_t *)p)[off];
    case NDF_FLOAT32: return ((const float *)p)[off];
    case NDF_FLOAT64: return ((const double *)p)[off];
    default: return 0;
  }
}

/* Offset of element i (C order) of a. */
static inline int64_t offset_of(const ndf_array *a, int64_t i) {
  int64_t off = 0;
  for (int d = a->ndim - 1; d >= 0; d--) {
    off += (i % a->shape[d]) * a->strides[d];
    i /= a->shape[d];
  }
  return off;
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
  /* The icosahedron: the cyclic permutations of (0, +-1, +-phi); its faces are the triples of vertices at
   * mutual distance 2, oriented counter-clockwise seen from outside. */
  const double phi = (1.0 + sqrt(5.0)) / 2.0;
  for (int i = 0; i < 12; i++) {
    const double v[3] = {0.0, (i & 1) ? -1.0 : 1.0, (i & 2) ? -phi : phi};
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

/* BET's curvature radii (rmin 3.33 mm, rmax 10 mm), scaled on later passes by 1 + (2^pass - 1) times a
 * ramp from 1 at the start to 0 at three quarters of the run, so that a rerun starts smoother. */
void ndf__bet_curvature(int pass, int it, int iterations, double *E, double *F) {
  double scale = 1.0;
  if (pass > 0) {
    double ramp = 1.0 - (double)it / (0.75 * iterations);
    if (ramp < 0) ramp = 0;
    scale = 1.0 + ((double)(1 << pass) - 1.0) * ramp;
  }
  const double rmin = 3.33 * scale, rmax = 10.0 * scale;
  *E = (1.0 / rmin + 1.0 / rmax) / 2.0;
  *F = 6.0 / (1.0 / rmin - 1.0 / rmax);
}

/* Two vertices that were far apart on the sphere (more than four mean edge lengths) and have come closer
 * than half the surface's mean edge length: the surface has folded through itself there. */
int ndf__bet_self_intersects(const ndf__bet_mesh *m, const double *pos) {
  double e0 = 0, e1 = 0;
  int ne = 0;
  for (int t = 0; t < m->nt; t++)
    for (int e = 0; e < 3; e++) {
      const int a = m->tri[3 * t + e], b = m->tri[3 * t + (e + 1) % 3];
      double d0 = 0, d1 = 0;
      for (int d = 0; d < 3; d++) {
        const double u = m->unit[3 * a + d] - m->unit[3 * b + d], w = pos[3 * a + d] - pos[3 * b + d];
        d0 += u * u, d1 += w * w;
      }
      e0 += sqrt(d0), e1 += sqrt(d1), ne++;
    }
  const double far2 = (4.0 * e0 / ne) * (4.0 * e0 / ne), near2 = (0.5 * e1 / ne) * (0.5 * e1 / ne);
  for (int a = 0; a < m->nv; a++)
    for (int b = a + 1; b < m->nv; b++) {
      double d1 = 0;
      for (int d = 0; d < 3; d++) {
        const double w = pos[3 * a + d] - pos[3 * b + d];
        d1 += w * w;
      }
      if (d1 >= near2) continue;
      double d0 = 0;
      for (int d = 0; d < 3; d++) {
        const double u = m->unit[3 * a + d] - m->unit[3 * b + d];
        d0 += u * u;
      }
      if (d0 > far2) return 1;
    }
  return 0;
}

/* ---- the statistics ----------------------------------------------------------------------- */

/* The k-th smallest of v[0..n) (v is reordered). */
static double select_kth(double *v, int64_t n, int64_t k) {
  int64_t lo = 0, hi = n - 1;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    double a = v[lo], b = v[mid], c = v[hi], piv;
    piv = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
    int64_t i = lo, j = hi;
    while (i <= j) {
      while (v[i] < piv) i++;
      while (v[j] > piv) j--;
      if (i <= j) {
        const double t = v[i];
        v[i] = v[j], v[j] = t;
        i++, j--;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else return v[k];
  }
  return v[k];
}

/* NumPy's percentile (linear interpolation) of v[0..n), n >= 1 (v is reordered). */
static double percentile(double *v, int64_t n, double q) {
  const double pos = q / 100.0 * (double)(n - 1);
  const int64_t lo = (int64_t)floor(pos);
  const double a = select_kth(v, n, lo);
  if (lo + 1 >= n) return a;
  double b = v[lo + 1]; /* after the selection, the least of v[lo + 1..n) is the next value */
  for (int64_t i = lo + 2; i < n; i++)
    if (v[i] < b) b = v[i];
  return a + (b - a) * (pos - (double)lo);
}

ndf_status ndf__bet_setup_from(ndf_ctx *ctx, const char *name, const float *img, const int64_t *shape,
                               const double *spacing, const ndf_skull_strip_options *opt, ndf__bet_setup *st) {
  const int64_t n = shape[0] * shape[1] * shape[2];
  memset(st, 0, sizeof *st);
  for (int d = 0; d < 3; d++) st->c.shape[d] = shape[d], st->c.spacing[d] = spacing[d];
  st->iterations = opt->iterations;
  st->c.bt = pow(opt->fractional_intensity_threshold, 0.275); /* bet2's main parameter */
  st->c.gradient = opt->vertical_gradient;
  st->c.d1 = 7.0; /* bet2's search depths (the paper's 20 and 10 mm) */
  st->c.d2 = 3.0;
  double *v = malloc(sizeof(double) * (size_t)n);
  if (!v) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
  for (int64_t i0 = 0, i = 0; i0 < shape[0]; i0++)
    for (int64_t i1 = 0; i1 < shape[1]; i1++)
      for (int64_t i2 = 0; i2 < shape[2]; i2++, i++) {
        v[i] = img[bet_index(shape, i0, i1, i2)];
        if (!isfinite(v[i])) {
          free(v);
          return ndf__argerror(ctx, name, "input", "NaN, infinity or a value beyond float32's range at element %lld",
                               (long long)i);
        }
      }
  const double t2 = percentile(v, n, 2.0), t98 = percentile(v, n, 98.0), t = t2 + 0.1 * (t98 - t2);
  /* the centre of gravity and the volume of the voxels above t */
  double sw = 0, sx[3] = {0, 0, 0};
  int64_t count = 0;
  for (int64_t i0 = 0, i = 0; i0 < shape[0]; i0++)
    for (int64_t i1 = 0; i1 < shape[1]; i1++)
      for (int64_t i2 = 0; i2 < shape[2]; i2++, i++) {
        const double x = img[bet_index(shape, i0, i1, i2)];
        if (!(x > t)) continue;
        const double w = x < t98 ? x : t98;
        sw += w, count++;
        sx[0] += w * (double)i0 * spacing[0], sx[1] += w * (double)i1 * spacing[1], sx[2] += w * (double)i2 * spacing[2];
      }
  const double vox = spacing[0] * spacing[1] * spacing[2];
  double radius = cbrt(3.0 * (double)count * vox / (4.0 * 3.14159265358979323846)), cog[3];
  for (int d = 0; d < 3; d++) cog[d] = sw > 0 ? sx[d] / sw : 0.5 * (double)(shape[d] - 1) * spacing[d];
  if (opt->radius > 0) radius = opt->radius;
  if (opt->has_centre)
    for (int d = 0; d < 3; d++) cog[d] = opt->centre[d] * spacing[d];
  /* tm: the median of the values in (t2, t98) inside the sphere */
  int64_t m = 0;
  for (int64_t i0 = 0, i = 0; i0 < shape[0]; i0++)
    for (int64_t i1 = 0; i1 < shape[1]; i1++)
      for (int64_t i2 = 0; i2 < shape[2]; i2++, i++) {
        const double x = (double)i0 * spacing[0] - cog[0], y = (double)i1 * spacing[1] - cog[1],
                     z = (double)i2 * spacing[2] - cog[2];
        const double val = img[bet_index(shape, i0, i1, i2)];
        if (x * x + y * y + z * z <= radius * radius && val > t2 && val < t98) v[m++] = val;
      }
  double tm = t98 > t ? 0.5 * (t + t98) : t;
  if (m > 0) {
    const double a = select_kth(v, m, (m - 1) / 2);
    double b = a;
    if (m % 2 == 0) {
      b = v[m / 2];
      for (int64_t i = m / 2 + 1; i < m; i++)
        if (v[i] < b) b = v[i];
    }
    tm = 0.5 * (a + b);
  }
  free(v);
  st->c.t2 = t2, st->c.t = t, st->c.tm = tm;
  st->c.cog2 = cog[2];
  st->c.radius = radius > 0 ? radius : 1.0;
  for (int d = 0; d < 3; d++) st->centre[d] = cog[d];
  st->radius0 = count > 0 || opt->radius > 0 ? 0.5 * radius : 0.0;
  return NDF_OK;
}

/* ---- the CPU backend ---------------------------------------------------------------------- */

int ndf__bet_mean_edge(const ndf__bet_mesh *m, const double *pos, int it, double *l) {
  if (!(it == 50 || it % 100 == 0)) return 0;
  double sum = 0.0;
  for (int v = 0; v < m->nv; v++) {
    const int *r = m->ring + (int64_t)v * (BET_MAX_RING + 1);
    double lv = 0.0;
    for (int j = 0; j < r[0]; j++) {
      const double *a = pos + 3 * (int64_t)r[1 + j], *p = pos + 3 * (int64_t)v;
      const double e[3] = {BET_SUB(a[0], p[0]), BET_SUB(a[1], p[1]), BET_SUB(a[2], p[2])};
      lv = BET_ADD(lv, sqrt(bet_dot(e, e)));
    }
    sum = BET_ADD(sum, lv / (double)r[0]);
  }
  *l = sum / (double)m->nv;
  return 1;
}

/* The passes: from the sphere, `iterations` Jacobi updates of every vertex; again with more smoothing while
 * the result intersects itself.  pos receives the final surface. */
static ndf_status evolve_cpu(ndf_ctx *ctx, const ndf__bet_mesh *m, const ndf__bet_setup *st, const float *img,
                             double *pos) {
  double *tmp = malloc(sizeof(double) * 3 * (size_t)m->nv);
  if (!tmp) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", NAME);
  const int nth = ndf__cpu_threads(ctx);
  for (int pass = 0; pass < NDF__BET_MAX_PASSES; pass++) {
    ndf__bet_sphere(m, st, pos);
    double *a = pos, *b = tmp, l = 0.0;
    for (int it = 0; it < st->iterations; it++) {
      bet_consts c = st->c;
      ndf__bet_curvature(pass, it, st->iterations, &c.E, &c.F);
      ndf__bet_mean_edge(m, a, it, &l);
      c.l = l;
      _Pragma("omp parallel for schedule(static) num_threads(nth)")
      for (int v = 0; v < m->nv; v++) bet_vertex_update(a, m->ring, v, &c, img, b + 3 * (int64_t)v);
      double *t = a;
      a = b, b = t;
    }
    if (a != pos) memcpy(pos, a, sizeof(double) * 3 * (size_t)m->nv);
    if (!ndf__bet_self_intersects(m, pos)) break;
  }
  (void)nth;
  free(tmp);
  return NDF_OK;
}

/* The mask of the voxels inside the surface: every triangle is crossed with the columns (axis 2) its
 * projection covers; a voxel is inside when an odd number of crossings lie below its centre. */
static ndf_status voxelize_cpu(ndf_ctx *ctx, const ndf__bet_mesh *m, const bet_consts *c, const double *pos,
                               const ndf_array *out) {
  const int64_t n0 = c->shape[0], n1 = c->shape[1], n2 = c->shape[2], ncol = n0 * n1;
  double *vx = malloc(sizeof(double) * 3 * (size_t)m->nv);
  int64_t *start = calloc((size_t)ncol + 1, sizeof(int64_t));
  double *hits = NULL;
  if (!vx || !start) goto oom;
  for (int v = 0; v < m->nv; v++)
    for (int d = 0; d < 3; d++) vx[3 * v + d] = pos[3 * v + d] / c->spacing[d];
  for (int round = 0; round < 2; round++) { /* count, then store */
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
  /* start[k] now ends column k's crossings; column k's begin where column k - 1's end */
  for (int64_t k = 0; k < ncol; k++) {
    const int64_t b = k == 0 ? 0 : start[k - 1], e = start[k];
    for (int64_t i = b + 1; i < e; i++) /* insertion sort: a column has few crossings */
      for (int64_t j = i; j > b && hits[j - 1] > hits[j]; j--) {
        const double t = hits[j];
        hits[j] = hits[j - 1], hits[j - 1] = t;
      }
    const int64_t x = k / n1, y = k % n1;
    int64_t h = b;
    uint8_t *o = out->data;
    for (int64_t z = 0; z < n2; z++) {
      while (h < e && hits[h] < (double)z) h++;
      o[x * out->strides[0] + y * out->strides[1] + z * out->strides[2]] = (uint8_t)((h - b) & 1);
    }
  }
  free(vx), free(start), free(hits);
  return NDF_OK;
oom:
  free(vx), free(start), free(hits);
  return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", NAME);
}

static ndf_status skull_strip_cpu(ndf_ctx *ctx, const ndf_array *in, const double *spacing, ndf_array *out,
                                  const ndf_skull_strip_options *opt, const ndf__bet_mesh *m) {
  const int64_t n = ndf_array_size(in), nimg = bet_image_size(in->shape);
  ndf_status s = ndf__check_host_memory(ctx, NAME, "the image in float32 and float64", 4 * nimg + 8 * n);
  if (s != NDF_OK) return s;
  float *img = calloc((size_t)nimg, sizeof(float));
  double *pos = malloc(sizeof(double) * 3 * (size_t)m->nv);
  if (!img || !pos) {
    free(img), free(pos);
    return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", NAME);
  }
  for (int64_t i0 = 0, i = 0; i0 < in->shape[0]; i0++)
    for (int64_t i1 = 0; i1 < in->shape[1]; i1++)
      for (int64_t i2 = 0; i2 < in->shape[2]; i2++, i++)
        img[bet_index(in->shape, i0, i1, i2)] = (float)get(in, i0 * in->strides[0] + i1 * in->strides[1] + i2 * in->strides[2]);
  ndf__bet_setup st;
  s = ndf__bet_setup_from(ctx, NAME, img, in->shape, spacing, opt, &st);
  if (s == NDF_OK && st.radius0 > 0) s = evolve_cpu(ctx, m, &st, img, pos);
  if (s == NDF_OK) {
    if (st.radius0 > 0) s = voxelize_cpu(ctx, m, &st.c, pos, out);
    else /* nothing above the threshold: no brain */
      for (int64_t i = 0; i < n; i++) ((uint8_t *)out->data)[offset_of(out, i)] = 0;
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
      if (!(spacing[d] > 0) || !isfinite(spacing[d]))
        return ndf__argerror(ctx, name, "spacing", "spacing[%d]=%g (each must be > 0 and finite)", d, spacing[d]);
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
