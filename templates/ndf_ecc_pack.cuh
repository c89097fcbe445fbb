// ndf_ecc_pack.cuh -- c(v) of two voxels at once from packed threshold bins
// (docs/adr/0009, "The packed bin kernel"): the exact ECC in the bin domain.
//
// bin(x) = the least k with x <= t_k over the sorted thresholds (T when
// none).  Bins are monotone in the value, so a cell's bin is the max (V) /
// min (T) of its voxels' bins, and the owner rule on (bin, linear index)
// gives the same histogram as the rule on (value, index).  A 32-bit word holds
// the bins of two consecutive voxels (x, x + 1) in its 16-bit halves (bits
// 0..8 of each half: bins 0..510; 511 marks a voxel outside the image).
//
// "v wins against n" for the neighbour n in a fixed direction is one compare,
// and for both halves at once one 32-bit subtraction: with the guard bit G =
// bit 9 of each half, (a | G) - b keeps bit 9 iff a >= b (no borrow between
// the halves since a, b < 512).
//   V (owner: greatest (bin, index)): n after v in C order: b_v > b_n; n before: b_v >= b_n.
//     Stored raw; flag = bit 9 of ((w | G) - [ONE if n after]) - n.
//   T (owner: least (bin, index)):    n after v: b_n >= b_v; n before: b_n > b_v.
//     Stored guarded (w | G); flag = bit 9 of n - ((w ^ G) + [ONE if n before]).
// The outside marker 511 makes every V flag false (the cell does not exist)
// and every T flag true (a border face has no other top cell), as NaN does in
// ndf_ecc.cuh.  A cell around v is owned iff the flags of all its other voxels
// are set; c = 1 - edges + squares - cubes (V; negated for T in 3-D; in 2-D
// 1 - edges + squares for both).  Each half keeps 512 * (15 + squares - edges
// - cubes) in [512, 13824]: no carry between the halves.
//
// r0, r1, r2 [ry][k]: the planes (2-D: rows) at offset -1, 0, +1 along the
// first spatial axis; row offset ry - 1 along y (3-D; 2-D uses ry = 1 only), k = 0: the
// word of voxels (x - 1, x), 1: (x, x + 1), 2: (x + 1, x + 2).  Returns the
// packed sum D; ndf_ecc_pack_c(D, h) gives c of half h.
#pragma once

#ifndef NDF_HD
#ifdef __CUDACC__
#define NDF_HD __host__ __device__ __forceinline__
#else
#define NDF_HD static inline
#endif
#endif

#define NDF_ECC_PG 0x02000200u   // the guard bits
#define NDF_ECC_PONE 0x00010001u // one in each half
#define NDF_ECC_POUT 511u        // the outside marker (raw)

template <int NSP, int CONS>
NDF_HD unsigned ndf_ecc_pack_sum(const unsigned (&r0)[3][3], const unsigned (&r1)[3][3], const unsigned (&r2)[3][3]) {
  const unsigned G = NDF_ECC_PG, ONE = NDF_ECC_PONE;
  const unsigned w = r1[1][1];
  // a_after / a_before: the centre's side of the compare for a neighbour after / before v
  const unsigned a_after = CONS == 0 ? (w | G) - ONE : (w ^ G);
  const unsigned a_before = CONS == 0 ? (w | G) : (w ^ G) + ONE;
#define NDF_ECC_R(Z, Y, X) ((Z) == 0 ? r0[Y][X] : (Z) == 1 ? r1[Y][X] : r2[Y][X])
#define NDF_ECC_F(Z, Y, X)                                                                                     \
  (CONS == 0 ? ((((Z) * 9 + (Y) * 3 + (X)) > 13 ? a_after : a_before) - NDF_ECC_R(Z, Y, X))                     \
             : (NDF_ECC_R(Z, Y, X) - (((Z) * 9 + (Y) * 3 + (X)) > 13 ? a_after : a_before)))
  unsigned d;
  if (NSP == 2) {
    // rows are the first index (z slot), x the last
    const unsigned ezm = NDF_ECC_F(0, 1, 1) & G, ezp = NDF_ECC_F(2, 1, 1) & G;
    const unsigned exm = NDF_ECC_F(1, 1, 0) & G, exp = NDF_ECC_F(1, 1, 2) & G;
    const unsigned s = (ezm & exm & NDF_ECC_F(0, 1, 0)) + (ezm & exp & NDF_ECC_F(0, 1, 2)) +
                       (ezp & exm & NDF_ECC_F(2, 1, 0)) + (ezp & exp & NDF_ECC_F(2, 1, 2));
    d = 0x1E001E00u + s - (ezm + ezp + exm + exp);
  } else {
    unsigned e[3][2]; // e[axis][side]: axis 0 z, 1 y, 2 x; side 0 -, 1 +
    e[0][0] = NDF_ECC_F(0, 1, 1) & G;
    e[0][1] = NDF_ECC_F(2, 1, 1) & G;
    e[1][0] = NDF_ECC_F(1, 0, 1) & G;
    e[1][1] = NDF_ECC_F(1, 2, 1) & G;
    e[2][0] = NDF_ECC_F(1, 1, 0) & G;
    e[2][1] = NDF_ECC_F(1, 1, 2) & G;
    unsigned sxy[2][2], sxz[2][2], syz[2][2];
#pragma unroll
    for (int a = 0; a < 2; a++)
#pragma unroll
      for (int b = 0; b < 2; b++) {
        sxy[a][b] = e[1][a] & e[2][b] & NDF_ECC_F(1, 2 * a, 2 * b);
        sxz[a][b] = e[0][a] & e[2][b] & NDF_ECC_F(2 * a, 1, 2 * b);
        syz[a][b] = e[0][a] & e[1][b] & NDF_ECC_F(2 * a, 2 * b, 1);
      }
    unsigned sq = 0, cu = 0;
#pragma unroll
    for (int a = 0; a < 2; a++)
#pragma unroll
      for (int b = 0; b < 2; b++) {
        sq += sxy[a][b] + sxz[a][b] + syz[a][b];
#pragma unroll
        for (int c = 0; c < 2; c++)
          cu += sxy[b][c] & sxz[a][c] & NDF_ECC_F(2 * a, 2 * b, 1) & NDF_ECC_F(2 * a, 2 * b, 2 * c);
      }
    d = 0x1E001E00u + sq - (e[0][0] + e[0][1] + e[1][0] + e[1][1] + e[2][0] + e[2][1]) - cu;
  }
#undef NDF_ECC_F
#undef NDF_ECC_R
  return d;
}

// c of half h (0: voxel x, 1: voxel x + 1) from ndf_ecc_pack_sum's D
template <int NSP, int CONS> NDF_HD int ndf_ecc_pack_c(unsigned d, int h) {
  const int k = (int)((d >> (9 + 16 * h)) & 127u) - 14;
  return (NSP == 3 && CONS == 1) ? -k : k;
}

// bin(f): the least k with f <= tv[k] (T when none) over the sorted table tv,
// padded with tv[-1] = -inf and tv[T] = +inf.  uni: evenly spaced thresholds,
// a first guess ceil((f - lo) * inv) in float, accepted when tv[k - 1] < f <=
// tv[k] (two table reads), else the loops walk to the exact bin (a rare
// path: a guess off by one near a threshold, ranges past float, +-inf).
// Values: binary search.  NaN gives T.  float inputs use the table
// rounded down to float (f <= t iff f <= rd(t) for a float f).
#ifndef NDF_ECC_CEILF
#define NDF_ECC_CEILF ceilf
#endif
template <typename V> NDF_HD unsigned ndf_ecc_bin(V f, const V *tv, int T, int uni, float lo, float inv) {
  if (f != f) return (unsigned)T; // NaN: never counted (the guess below would give bin 0)
  int k;
  if (uni) {
    // fmax(NaN, 0) = 0: a NaN guess (inf * 0) starts at 0
    const float g = fminf(fmaxf(NDF_ECC_CEILF(((float)f - lo) * inv), 0.0f), (float)T);
    k = (int)g;
    if (!((f > tv[k - 1]) & (f <= tv[k]))) { // both reads always: no branch between them
      while (k > 0 && f <= tv[k - 1]) k--;
      while (k < T && f > tv[k]) k++;
    }
  } else {
    int a = 0, b = T;
    while (a < b) {
      const int mid = (a + b) >> 1;
      if (f <= tv[mid]) b = mid;
      else a = mid + 1;
    }
    k = a;
  }
  return (unsigned)k;
}

