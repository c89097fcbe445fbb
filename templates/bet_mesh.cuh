// bet_mesh.cuh -- the arithmetic of skull stripping by FSL BET's surface
// model (Smith 2002), shared word for word by the CUDA kernels
// (templates/bet.cu) and the CPU backend (runtime/ops/bet/bet.c includes this
// file as C), so that both backends compute the same bits:
//
//   bet_vertex_update  one vertex's new position from the old surface: the
//                      tangential smoothing, the curvature-weighted normal
//                      smoothing and the intensity term
//   bet_tri_hit        where a column of voxels (parallel to axis 2) crosses a
//                      triangle, for the voxelization by parity
//
// Every product and sum goes through BET_MUL / BET_ADD / BET_SUB, which the
// compilers never fuse into FMAs (__dmul_rn and friends on the device; the
// including C file is compiled with -ffp-contract=off), and the only other
// operations are division, sqrt, floor and ldexp, which IEEE 754 rounds the
// same way on both sides.  The exponential is written out here for the same
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
                     // iterations 0, 50 and every 100th: ndf__bet_mean_edge)
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
// padding 0: a trilinear sample touches few cache lines, and the samples
// along a normal share most of them.
BET_FN bet_i64 bet_index(const bet_i64 *shape, bet_i64 a, bet_i64 b, bet_i64 e) {
  const bet_i64 nb1 = (shape[1] + 3) >> 2, nb2 = (shape[2] + 3) >> 2;
  return ((((a >> 2) * nb1 + (b >> 2)) * nb2 + (e >> 2)) << 6) + ((a & 3) << 4) + ((b & 3) << 2) + (e & 3);
}
BET_FN bet_i64 bet_image_size(const bet_i64 *shape) {
  return (((shape[0] + 3) >> 2) * ((shape[1] + 3) >> 2) * ((shape[2] + 3) >> 2)) << 6;
}

// The image at a point in mm, as bet2 samples it: the voxel whose centre is
// nearest (coordinates rounded half up); voxels outside the image count as 0.
BET_FN double bet_sample(const float *img, const bet_consts *c, const double *p) {
  bet_i64 i[3];
  for (int d = 0; d < 3; d++) {
    const double u = floor(BET_ADD(p[d] / c->spacing[d], 0.5));
    if (!(u >= 0.0 && u < (double)c->shape[d])) return 0.0; // outside, or NaN
    i[d] = (bet_i64)u;
  }
  return (double)img[bet_index(c->shape, i[0], i[1], i[2])];
}

// The new position of vertex v (into out[3]) from the surface pos (3 doubles
// a vertex); ring[v * (BET_MAX_RING + 1)] holds the count of its neighbours,
// then the neighbours in order around the vertex, counter-clockwise seen from
// outside, so that the cross products of consecutive spokes point outwards.
//   s  = mean of the neighbours - the vertex, split into its part along the
//        unit normal n (sn) and the tangential rest (st)
//   u1 = 0.5 st
//   u2 = f2 sn,  f2 = (1 + tanh(F (1/r - E))) / 2,  1/r = 2 |sn| / l^2
//   u3 = 0.05 f3 l n,  f3 = 2 (Imin - tl) / (Imax - t2),  tl = (Imax - t2) bt' + t2
// with l the surface's mean distance between neighbours (c->l), bt' = bt + g (z - z_cog) / radius
// clamped to [0, 1], Imin = max(t2, min(tm, I(p - d n) for d = 1 .. d1 - 1 mm)) and
// Imax = min(tm, max(t, I(p - d n) for d = 1 .. d2 - 1 mm)) (bet2's d1 = 7, d2 = 3).
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
  const double rinv = l > 0.0 ? BET_MUL(2.0, fabs(sdn)) / BET_MUL(l, l) : 0.0;
  const double f2 = 1.0 / BET_ADD(1.0, bet_exp(BET_MUL(-2.0, BET_MUL(c->F, BET_SUB(rinv, c->E)))));
  // the intensity term, sampled along the inward normal every millimetre (nearest voxels)
  double imin = c->tm, imax = c->t;
  const int n1 = (int)c->d1, n2 = (int)c->d2;
  for (int j = 1; j < n1; j++) {
    double q[3];
    for (int d = 0; d < 3; d++) q[d] = BET_SUB(p[d], BET_MUL((double)j, nrm[d]));
    const double val = bet_sample(img, c, q);
    if (val < imin) imin = val;
    if (j < n2 && val > imax) imax = val;
  }
  if (imin < c->t2) imin = c->t2;
  if (imax > c->tm) imax = c->tm;
  double bt = BET_ADD(c->bt, BET_MUL(c->gradient, BET_SUB(p[2], c->cog2) / c->radius));
  bt = bt < 0.0 ? 0.0 : bt > 1.0 ? 1.0 : bt;
  const double range = BET_SUB(imax, c->t2);
  const double tl = BET_ADD(BET_MUL(range, bt), c->t2);
  const double f3 = range > 0.0 ? BET_MUL(2.0, BET_SUB(imin, tl)) / range : 0.0;
  const double g3 = BET_MUL(BET_MUL(0.05, f3), l);
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
