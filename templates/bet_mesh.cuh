// bet_mesh.cuh -- the arithmetic of skull stripping by FSL BET's surface
// model (Smith 2002), shared word for word by the CUDA kernels
// (templates/bet.cu) and the CPU backend (runtime/ops/bet/bet.c includes this
// file as C), so that both backends compute the same bits:
//
//   bet_vertex_update  one vertex's new position from the old surface: the
//                      tangential smoothing, the curvature-weighted normal
//                      smoothing and the intensity term (nearest-voxel
//                      samples, bet_voxel), with bet2's mean edge length
//                      (bet_mean_edge_term, bet_mean_edge_due) and rerun
//                      smoothing (bet_increase)
//   bet_tri_hit        where a column of voxels (parallel to axis 2) crosses a
//                      triangle, for the voxelization by parity
//   bet_hist_bin, bet_key, bet_row_sums, bet_plane_sums, bet_tm_member
//                      the statistics that place the initial sphere, as
//                      histograms and sums in a fixed order
//
// Every product and sum goes through BET_MUL / BET_ADD / BET_SUB, which the
// compilers never fuse into FMAs (__dmul_rn and friends on the device; the
// including C file is compiled with -ffp-contract=off), and the only other
// operations are division, sqrt, floor, truncating conversions and ldexp,
// which round the same way on both sides.  The exponential is written out here for the same
// reason (the device's exp and the C library's may differ in the last bit).
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define BET_MUL(a, b) __dmul_rn((a), (b))
#define BET_ADD(a, b) __dadd_rn((a), (b))
#define BET_SUB(a, b) __dsub_rn((a), (b))
#define BET_FN static __device__ __forceinline__
typedef long long bet_i64;
#else
#define BET_MUL(a, b) ((a) * (b))
#define BET_ADD(a, b) ((a) + (b))
#define BET_SUB(a, b) ((a) - (b))
#define BET_FN static inline
typedef int64_t bet_i64;
#endif

#define BET_MAX_RING 8 /* neighbours of a vertex: 5 or 6 on the subdivided icosahedron */

// The constants of one run; the host fills them (runtime/ops/bet/bet.c).
typedef struct bet_consts {
  bet_i64 shape[3];  // the image, contiguous, axis 2 fastest
  double spacing[3]; // mm per voxel on each axis
  double t2, t, tm;  // robust minimum, brain/background threshold, median inside the sphere
  double bt;         // bet2's main parameter f^0.275 (f: -f)
  double gradient;   // vertical gradient of bt along axis 2 (-g)
  double cog2;       // the centre's coordinate on axis 2 (mm)
  double radius;     // the estimated brain radius (mm)
  double E, F;       // the curvature sigmoid: f2 = (1 + tanh(F (1/r - E))) / 2
  double d1, d2;     // inward search depths (mm) of Imin and Imax
  double l;          // the surface's mean distance between neighbours (mm; bet2 updates it at
                     // iterations 0, 50 and every 100th: bet_mean_edge_term)
  double inc;        // a rerun's extra smoothing of concave vertices (bet_increase), 0 on the first pass
  double dscale;     // the step between samples along the normal: min(spacing, 1 mm)
} bet_consts;

BET_FN double bet_dot(const double *a, const double *b) {
  return BET_ADD(BET_ADD(BET_MUL(a[0], b[0]), BET_MUL(a[1], b[1])), BET_MUL(a[2], b[2]));
}

// exp(x) for |x| <= 60 to a few ulps: x = n ln2 + r, |r| <= ln2 / 2, a
// Taylor polynomial of degree 14 for e^r, then the exact scaling by 2^n.
BET_FN double bet_exp(double x) {
  if (x > 60.0) x = 60.0;
  if (x < -60.0) x = -60.0;
  const double n = floor(BET_ADD(BET_MUL(x, 1.4426950408889634), 0.5));
  const double r = BET_SUB(BET_SUB(x, BET_MUL(n, 6.93147180369123816490e-01)), BET_MUL(n, 1.90821492927058770002e-10));
  double p = 1.0 / 87178291200.0; // 1/14!
  const double inv[14] = {1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0,
                          1.0 / 362880.0,     1.0 / 40320.0,     1.0 / 5040.0,     1.0 / 720.0,
                          1.0 / 120.0,        1.0 / 24.0,        1.0 / 6.0,        0.5,
                          1.0,                1.0};
  for (int k = 0; k < 14; k++) p = BET_ADD(BET_MUL(p, r), inv[k]);
  return ldexp(p, (int)n);
}

// The image is held as float in bricks of 4x4x4 voxels (256 bytes), the
// bricks in C order over the extents rounded up to multiples of 4, the
// padding 0: the samples along a normal share most of their cache lines.
BET_FN bet_i64 bet_index(const bet_i64 *shape, bet_i64 a, bet_i64 b, bet_i64 e) {
  const bet_i64 nb1 = (shape[1] + 3) >> 2, nb2 = (shape[2] + 3) >> 2;
  return ((((a >> 2) * nb1 + (b >> 2)) * nb2 + (e >> 2)) << 6) + ((a & 3) << 4) + ((b & 3) << 2) + (e & 3);
}
BET_FN bet_i64 bet_image_size(const bet_i64 *shape) {
  return (((shape[0] + 3) >> 2) * ((shape[1] + 3) >> 2) * ((shape[2] + 3) >> 2)) << 6;
}

// The voxel at continuous voxel coordinates u (already shifted by half a
// voxel), as bet2 reads it: each coordinate truncated towards zero, so that
// the voxel is the nearest one; *in = 0 and 0 returned outside the image
// (or for NaN).
BET_FN double bet_voxel(const float *img, const bet_consts *c, const double *u, int *in) {
  bet_i64 i[3];
  for (int d = 0; d < 3; d++) {
    if (!(u[d] > -1.0 && u[d] < (double)c->shape[d])) {
      *in = 0;
      return 0.0;
    }
    i[d] = (bet_i64)u[d];
  }
  *in = 1;
  return (double)img[bet_index(c->shape, i[0], i[1], i[2])];
}

// The curvature sigmoid's extra factor on a rerun (pass > 0) at iteration it
// of n: 10^(pass + 1), falling linearly to 1 over the last quarter of the
// iterations; 0 (none) on the first pass.
BET_FN double bet_increase(int pass, int it, int n) {
  if (pass <= 0) return 0.0;
  double inc = 1.0;
  for (int k = 0; k <= pass; k++) inc = BET_MUL(inc, 10.0);
  if ((double)it > BET_MUL(0.75, (double)n))
    inc = BET_ADD(BET_MUL(BET_MUL(4.0, BET_SUB(1.0, (double)it / (double)n)), BET_SUB(inc, 1.0)), 1.0);
  return inc;
}

// Vertex v's mean distance to its neighbours: bet2's mean edge length l is
// the mean of these over the vertices, summed in vertex order.
BET_FN double bet_mean_edge_term(const double *pos, const int *ring, int v) {
  const int *r = ring + (bet_i64)v * (BET_MAX_RING + 1);
  const double *p = pos + 3 * (bet_i64)v;
  double lv = 0.0;
  for (int j = 0; j < r[0]; j++) {
    const double *a = pos + 3 * (bet_i64)r[1 + j];
    const double e[3] = {BET_SUB(a[0], p[0]), BET_SUB(a[1], p[1]), BET_SUB(a[2], p[2])};
    lv = BET_ADD(lv, sqrt(bet_dot(e, e)));
  }
  return lv / (double)r[0];
}
// Whether bet2 updates l at iteration it: 0, 50 and every 100th.
BET_FN int bet_mean_edge_due(int it) { return it == 50 || it % 100 == 0; }

// The new position of vertex v (into out[3]) from the surface pos (3 doubles
// a vertex); ring[v * (BET_MAX_RING + 1)] holds the count of its neighbours,
// then the neighbours in order around the vertex, counter-clockwise seen from
// outside, so that the cross products of consecutive spokes point outwards.
//   s  = mean of the neighbours - the vertex, split into its part along the
//        unit normal n (sn = (s.n) n) and the tangential rest (st)
//   u1 = 0.5 st
//   u2 = f2 sn,  f2 = (1 + tanh(F (1/r - E))) / 2,  1/r = 2 |sn.n| / l^2; on a rerun f2 is
//        multiplied by c->inc (at most 1) where s points outwards
//   u3 = 0.05 l f3 n,  f3 = 2 (Imin - tl) / (Imax - t2),  tl = (Imax - t2) bt' + t2
// with l the surface's mean distance between neighbours (c->l), bt' = bt + g (z - z_cog) / radius
// clamped to [0, 1].  Imin and Imax are bet2's: the voxels along the inward normal at 1 mm, at
// d1 - 1 mm, and from 2 mm every dscale below d1 mm (Imax: 1 mm and below d2 mm), walked in voxel
// coordinates; Imin starts at tm and is at least t2, Imax starts at t and is at most tm.  When the
// first or the deepest sample lies outside the image, f3 = 0.
BET_FN void bet_vertex_update(const double *pos, const int *ring, int v, const bet_consts *c, const float *img,
                              double *out) {
  const double *p = pos + 3 * (bet_i64)v;
  const int *r = ring + (bet_i64)v * (BET_MAX_RING + 1);
  const int k = r[0];
  double m[3] = {0.0, 0.0, 0.0}, nrm[3] = {0.0, 0.0, 0.0}, l;
  for (int j = 0; j < k; j++) {
    const double *a = pos + 3 * (bet_i64)r[1 + j], *b = pos + 3 * (bet_i64)r[1 + (j + 1) % k];
    double ea[3], eb[3];
    for (int d = 0; d < 3; d++) {
      m[d] = BET_ADD(m[d], a[d]);
      ea[d] = BET_SUB(a[d], p[d]);
      eb[d] = BET_SUB(b[d], p[d]);
    }
    nrm[0] = BET_ADD(nrm[0], BET_SUB(BET_MUL(ea[1], eb[2]), BET_MUL(ea[2], eb[1])));
    nrm[1] = BET_ADD(nrm[1], BET_SUB(BET_MUL(ea[2], eb[0]), BET_MUL(ea[0], eb[2])));
    nrm[2] = BET_ADD(nrm[2], BET_SUB(BET_MUL(ea[0], eb[1]), BET_MUL(ea[1], eb[0])));
  }
  const double nlen = sqrt(bet_dot(nrm, nrm));
  double s[3], sn[3], st[3];
  l = c->l;
  for (int d = 0; d < 3; d++) {
    nrm[d] = nlen > 0.0 ? nrm[d] / nlen : 0.0;
    s[d] = BET_SUB(m[d] / (double)k, p[d]);
  }
  const double sdn = bet_dot(s, nrm);
  for (int d = 0; d < 3; d++) {
    sn[d] = BET_MUL(sdn, nrm[d]);
    st[d] = BET_SUB(s[d], sn[d]);
  }
  // f2: BET's sigmoid of the local curvature 1/r, written with the exponential
  const double rinv = l > 0.0 ? BET_MUL(2.0, fabs(bet_dot(sn, nrm))) / BET_MUL(l, l) : 0.0;
  double f2 = 1.0 / BET_ADD(1.0, bet_exp(BET_MUL(-2.0, BET_MUL(c->F, BET_SUB(rinv, c->E)))));
  if (c->inc > 0.0 && sdn > 0.0) {
    f2 = BET_MUL(f2, c->inc);
    if (f2 > 1.0) f2 = 1.0;
  }
  // the intensity term: nearest voxels along the inward normal
  double f3 = 0.0, iv[3];
  int in;
  for (int d = 0; d < 3; d++) iv[d] = BET_ADD(BET_SUB(p[d], nrm[d]) / c->spacing[d], 0.5);
  const double first = bet_voxel(img, c, iv, &in);
  if (in) {
    double imin = first < c->tm ? first : c->tm, imax = first > c->t ? first : c->t, nv[3], e[3];
    for (int d = 0; d < 3; d++) {
      nv[d] = nrm[d] / c->spacing[d];
      e[d] = BET_SUB(iv[d], BET_MUL(BET_SUB(c->d1, 1.0), nv[d]));
    }
    const double deep = bet_voxel(img, c, e, &in);
    if (in) {
      if (deep < imin) imin = deep;
      for (int d = 0; d < 3; d++) nv[d] = BET_MUL(nv[d], c->dscale);
      for (double gi = 2.0; gi < c->d1; gi = BET_ADD(gi, c->dscale)) {
        for (int d = 0; d < 3; d++) iv[d] = BET_SUB(iv[d], nv[d]);
        const double val = bet_voxel(img, c, iv, &in);
        if (val < imin) imin = val;
        if (gi < c->d2 && val > imax) imax = val;
      }
      if (imin < c->t2) imin = c->t2;
      if (imax > c->tm) imax = c->tm;
      double bt = c->bt;
      if (c->gradient != 0.0) {
        bt = BET_ADD(bt, BET_MUL(c->gradient, BET_SUB(p[2], c->cog2) / c->radius));
        bt = bt < 0.0 ? 0.0 : bt > 1.0 ? 1.0 : bt;
      }
      const double range = BET_SUB(imax, c->t2);
      const double tl = BET_ADD(BET_MUL(range, bt), c->t2);
      f3 = range > 0.0 ? BET_MUL(2.0, BET_SUB(imin, tl)) / range : BET_MUL(BET_SUB(imin, tl), 2.0);
    }
  }
  const double g3 = BET_MUL(f3, BET_MUL(0.05, l));
  for (int d = 0; d < 3; d++) {
    const double u = BET_ADD(BET_ADD(BET_MUL(0.5, st[d]), BET_MUL(f2, sn[d])), BET_MUL(g3, nrm[d]));
    out[d] = BET_ADD(p[d], u);
  }
}

// Whether the column through (px, py) (voxel indices on axes 0 and 1) crosses
// the triangle a, b, c (vertices in voxel units); *z receives the crossing on
// axis 2.  A point on an edge belongs to exactly one of the two triangles
// that share it (the projected triangle is made counter-clockwise, and an
// edge counts when it runs towards -y, or along +x), so a closed surface is
// crossed an even number of times by every column; a triangle seen edge-on
// is never crossed.
BET_FN double bet_edge(const double *u, const double *v, double px, double py) {
  return BET_SUB(BET_MUL(BET_SUB(v[0], u[0]), BET_SUB(py, u[1])), BET_MUL(BET_SUB(v[1], u[1]), BET_SUB(px, u[0])));
}
BET_FN int bet_edge_in(double e, const double *u, const double *v) {
  if (e != 0.0) return e > 0.0;
  const double dy = BET_SUB(v[1], u[1]), dx = BET_SUB(v[0], u[0]);
  return dy < 0.0 || (dy == 0.0 && dx > 0.0);
}
BET_FN int bet_tri_hit(const double *a, const double *b, const double *c, double px, double py, double *z) {
  double area = bet_edge(a, b, c[0], c[1]);
  if (area == 0.0) return 0;
  if (area < 0.0) { // make it counter-clockwise
    const double *t = b;
    b = c;
    c = t;
    area = -area;
  }
  const double wa = bet_edge(b, c, px, py), wb = bet_edge(c, a, px, py), wc = bet_edge(a, b, px, py);
  if (!bet_edge_in(wa, b, c) || !bet_edge_in(wb, c, a) || !bet_edge_in(wc, a, b)) return 0;
  *z = BET_ADD(BET_ADD(BET_MUL(wa, a[2]), BET_MUL(wb, b[2])), BET_MUL(wc, c[2])) / area;
  return 1;
}

// ---- the statistics that place the initial sphere (bet2's) ------------------
// Both backends compute them from the same integer histograms and the same
// ordered partial sums, so they agree bit for bit.

#define BET_HIST_BINS 1000

// The bin of v in FSL's robust-range histogram: fa v + fb truncated, clamped to the bins
// (fa = bins / (max - min), fb = bins (-min) / (max - min)).
BET_FN int bet_hist_bin(double v, double fa, double fb) {
  const double x = BET_ADD(BET_MUL(fa, v), fb);
  if (!(x > 0.0)) return 0;
  if (x >= (double)(BET_HIST_BINS - 1)) return BET_HIST_BINS - 1;
  return (int)x;
}

// An unsigned key that orders floats as their values (-0 just below +0).
BET_FN unsigned int bet_key(float v) {
  union {
    float f;
    unsigned int u;
  } x;
  x.f = v;
  return (x.u & 0x80000000u) ? ~x.u : (x.u | 0x80000000u);
}
BET_FN float bet_unkey(unsigned int k) {
  union {
    float f;
    unsigned int u;
  } x;
  x.u = (k & 0x80000000u) ? (k & 0x7fffffffu) : ~k;
  return x.f;
}

// bet2's centre of gravity weighs each voxel with v - t2 > t - t2 by min(v - t2, t98 - t2).  The sums
// along row (i0, i1), in order of i2: s[0] = sum of the weights, s[1] = sum of weight * i2; *count = the
// voxels above t (the volume that gives the radius).
BET_FN void bet_row_sums(const float *img, const bet_i64 *shape, bet_i64 i0, bet_i64 i1, double t2, double t,
                         double t98, double *s, bet_i64 *count) {
  const double lo = BET_SUB(t, t2), hi = BET_SUB(t98, t2);
  double a = 0.0, b = 0.0;
  bet_i64 n = 0;
  for (bet_i64 i2 = 0; i2 < shape[2]; i2++) {
    const double v = (double)img[bet_index(shape, i0, i1, i2)];
    double w = BET_SUB(v, t2);
    if (w > lo) {
      if (w > hi) w = hi;
      a = BET_ADD(a, w);
      b = BET_ADD(b, BET_MUL(w, (double)i2));
    }
    n += v > t;
  }
  s[0] = a, s[1] = b, *count = n;
}
// The sums of a plane from its rows' (rows[2 i1 + 0..1], i1 < n1), in order: p[0] = sum s[0],
// p[1] = sum s[0] i1, p[2] = sum s[1].
BET_FN void bet_plane_sums(const double *rows, bet_i64 n1, double *p) {
  double a = 0.0, b = 0.0, e = 0.0;
  for (bet_i64 i1 = 0; i1 < n1; i1++) {
    a = BET_ADD(a, rows[2 * i1]);
    b = BET_ADD(b, BET_MUL(rows[2 * i1], (double)i1));
    e = BET_ADD(e, rows[2 * i1 + 1]);
  }
  p[0] = a, p[1] = b, p[2] = e;
}

// Whether voxel (i0, i1, i2) of value v enters bet2's median tm: t2 < v < t98 and its centre strictly
// inside the sphere of radius^2 r2 around cog (mm).
BET_FN int bet_tm_member(double v, bet_i64 i0, bet_i64 i1, bet_i64 i2, const double *spacing, const double *cog,
                         double r2, double t2, double t98) {
  if (!(v > t2 && v < t98)) return 0;
  const double x = BET_SUB(BET_MUL((double)i0, spacing[0]), cog[0]), y = BET_SUB(BET_MUL((double)i1, spacing[1]), cog[1]),
               z = BET_SUB(BET_MUL((double)i2, spacing[2]), cog[2]);
  return BET_ADD(BET_ADD(BET_MUL(x, x), BET_MUL(y, y)), BET_MUL(z, z)) < r2;
}

