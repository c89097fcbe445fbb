// ndf_ecc.cuh -- the local contribution c(v) of a voxel to the Euler
// characteristic curve of a sublevel-set filtration on a 2-D/3-D cubical grid
// (docs/adr/0009-euler-characteristic-curves.md), as a device function that
// any kernel can feed: the exact/soft ECC (templates/ecc.cu) with image
// values, an Euler characteristic transform with heights <x, u>.
//
// Every cell of the complex has one owner, the voxel that decides its
// filtration value, ties broken by (value, linear index): V-construction
// (voxels are vertices) the greatest vertex, T-construction (voxels are top
// cells) the least top cell.  c(v) = sum over the 3^d cells around v that v
// owns of (-1)^dim.  "v wins against u" (neighbour u at ternary code t):
//   V: t < centre (u first in C order): f(v) >= f(u);  t > centre: f(v) > f(u)
//   T: t < centre: !(f(u) <= f(v));                   t > centre: !(f(u) < f(v))
// A neighbour outside the image (or the foreground) reads as NaN: every
// comparison with NaN is false, so v loses in V (the cell does not exist) and
// wins in T (a border face has no other top cell).  Values must not be NaN
// otherwise; +-inf are fine.  The cells and the neighbours that decide them
// come from gen/ecc.lua (ecc_tables.generated.cuh, NDF_ECC_CELLS<d>); they
// are the CPU backend's orthant tables without the orthant split.
//
// Interface (NSP 2 or 3, CONS 0 = V, 1 = T, both compile-time):
//   int ndf_ecc_word_contribution<NSP, CONS>(unsigned w)
//       c(v) from the win word: bit t set when v wins against neighbour t.
//   unsigned ndf_ecc_win_word<NSP, CONS>(V fv, A at)
//   int ndf_ecc_contribution<NSP, CONS>(V fv, A at)
//       fv: the voxel's value; at(t): the value of the neighbour with ternary
//       code t = sum_i (o_i + 1) 3^(NSP-1-i) over the offsets o_i in {-1,0,1}
//       of the spatial axes in C order (t = centre = (3^NSP - 1) / 2 is never
//       asked), NaN outside; V any floating type (float holds uint8/uint16/
//       float32 exactly).  Result in [-7, 7].
#pragma once
#include "ecc_tables.generated.cuh"

template <int CONS, typename V> __device__ __forceinline__ bool ndf_ecc_wins(V fv, V fu, bool neg) {
  if (CONS == 0) return neg ? fv >= fu : fv > fu;
  return neg ? !(fu <= fv) : !(fu < fv);
}

// The cells one by one from the generated table (reference: equal to
// ndf_ecc_word_contribution below for every one of the 2^8 / 2^26 words).
template <int NSP, int CONS> __device__ __forceinline__ int ndf_ecc_cells_contribution(unsigned w) {
  int s = 0;
#define NDF_ECC_CELL(M, K) \
  s += ((w & (M)) == (M)) ? ((((CONS == 0) ? (K) : (NSP - (K))) & 1) ? -1 : 1) : 0;
  if (NSP == 2) {
    NDF_ECC_CELLS2(NDF_ECC_CELL)
  } else {
    NDF_ECC_CELLS3(NDF_ECC_CELL)
  }
#undef NDF_ECC_CELL
  return s;
}

// The same sum bit-parallel: with the centre's own bit set, the cells v owns
// are the 2^k windows of the 3^d neighbourhood that contain the centre and
// whose bits are all set.  Bit t = 9z + 3y + x (3-D) or 3y + x (2-D): ANDing
// the word with itself shifted by 1 (x), 3 (y) and 9 (z) leaves at the window's
// least corner whether the whole window is set; the masks keep the windows
// that hold the centre.  c = 1 - edges + squares - cubes (V; T in 3-D: the
// opposite sign, since a cell reaching along k axes has dimension 3 - k; in
// 2-D both constructions give the same sign).  About 20 instructions instead
// of about 80 for the cell-by-cell tests.
template <int NSP, int CONS> __device__ __forceinline__ int ndf_ecc_word_contribution(unsigned w) {
  if (NSP == 2) {
    const unsigned w1 = w | 0x10u, h = w1 & (w1 >> 1), sq = h & (h >> 3);
    return 1 - __popc(w & 0xaau) + __popc(sq & 0x1bu);
  }
  const unsigned w1 = w | 0x2000u, h = w1 & (w1 >> 1), v = w1 & (w1 >> 3);
  const unsigned sxy = h & (h >> 3), sxz = h & (h >> 9), syz = v & (v >> 9), cube = sxy & (sxy >> 9);
  const int c = 1 - __popc(w & 0x415410u) + __popc(sxy & 0x3600u) + __popc(sxz & 0x3018u) + __popc(syz & 0x2412u) -
                __popc(cube & 0x361bu);
  return CONS == 0 ? c : -c;
}

template <int NSP, int CONS, typename V, typename A> __device__ __forceinline__ unsigned ndf_ecc_win_word(V fv, A at) {
  constexpr int NNB = NSP == 2 ? 9 : 27, CENTRE = NNB / 2;
  unsigned w = 0;
#pragma unroll
  for (int t = 0; t < NNB; t++) {
    if (t == CENTRE) continue;
    w |= (unsigned)ndf_ecc_wins<CONS, V>(fv, (V)at(t), t < CENTRE) << t;
  }
  return w;
}

template <int NSP, int CONS, typename V, typename A> __device__ __forceinline__ int ndf_ecc_contribution(V fv, A at) {
  return ndf_ecc_word_contribution<NSP, CONS>(ndf_ecc_win_word<NSP, CONS, V>(fv, at));
}
