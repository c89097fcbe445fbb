// filter_common.cuh -- device code shared by the linear filter templates
// (filter_line.cu, filter_uniform.cu, filter_taps.cu, filter_ew.cu,
// filter_plane.cu): the line passes' addressing and staging (below), and
// scipy's conversion of a double sum to the output dtype, the C cast that gcc
// emits for it on x86-64:
//   CVT 0  truncate to int32, keep the low bits (8-, 16-bit outputs, int32);
//          out of the int32 range, and NaN, give INT32_MIN
//   CVT 1  truncate to int64, keep the low bits (uint32, int64);
//          out of the int64 range, and NaN, give INT64_MIN
//   CVT 2  a floating-point cast (float32 rounds to nearest; float64 as is)
//   CVT 3  uint64: below 2^63 as CVT 1 (negative values wrap; NaN 2^63),
//          below 2^64 by the offset 2^63, beyond 0
//   CVT 4  uint64 as scipy's N-D correlate: a negative v as the negated CVT 3
//          of -v (filter_taps.cu)
#pragma once

template <int CVT, typename TO> __device__ __forceinline__ TO ndf_filter_cvt(double v) {
  if (CVT == 0) {
    const int t = v > -2147483649.0 && v < 2147483648.0 ? (int)v : (int)0x80000000u;
    return (TO)(unsigned int)t;
  }
  if (CVT == 1) {
    const long long t = v >= -9223372036854775808.0 && v < 9223372036854775808.0
                            ? (long long)v
                            : (long long)0x8000000000000000ull;
    return (TO)(unsigned long long)t;
  }
  if (CVT == 3 || CVT == 4) {
    const bool neg = CVT == 4 && v < 0;
    if (neg) v = -v;
    unsigned long long u;
    if (!(v >= 9223372036854775808.0))
      u = (unsigned long long)(v >= -9223372036854775808.0 ? (long long)v : (long long)0x8000000000000000ull);
    else if (v < 18446744073709551616.0)
      u = (unsigned long long)(long long)(v - 9223372036854775808.0) ^ 0x8000000000000000ull;
    else
      u = 0ull;
    return (TO)(neg ? 0ull - u : u);
  }
  return (TO)v;
}

// Line r's first input and output elements: r split over the axes other than
// the pass's (p.nother of them, the last fastest), through their strides.
// filter_plane: plane r's, the axes other than its two passes'.
template <typename P>
__device__ __forceinline__ void ndf_line_offsets(const P &p, ndf_i64 r, ndf_i64 &ib, ndf_i64 &ob) {
  ib = 0;
  ob = 0;
  NDF_FOR_COORDS(r, p.nother, p.oshape, d, x,
                 ib += x * p.oistr[d];
                 ob += x * p.oostr[d];)
}

// A block's tile of lines: C lines from l0, of which ncols = min(C,
// p.nlines - l0) exist (ndf_line_cols).  ndf_line_bases: thread t < ncols
// stores line l0 + t's first input and output elements in ibase[t], obase[t]
// and runs init(t), the kernel's own setup of that line; the caller's
// barrier makes them visible to the block.
template <typename P> __device__ __forceinline__ int ndf_line_cols(const P &p, ndf_i64 l0, int C) {
  return (int)(p.nlines - l0 < C ? p.nlines - l0 : C);
}
struct ndf_line_noinit {
  __device__ void operator()(int) const {}
};
template <typename P, typename F = ndf_line_noinit>
__device__ __forceinline__ void ndf_line_bases(const P &p, ndf_i64 l0, int t, int ncols, ndf_i64 *ibase,
                                               ndf_i64 *obase, F init = F()) {
  if (t < ncols) {
    ndf_i64 ib, ob;
    ndf_line_offsets(p, l0 + t, ib, ob);
    ibase[t] = ib;
    obase[t] = ob;
    init(t);
  }
}

// NDF_LINE_STAGE stages rows R0 .. R0 + NR - 1 of the tile's columns
// 0 .. NCOLS - 1 in shared memory as doubles, row r of column c at
// BUF[r PITCH + c]: row R0 + j of column c holds coordinate A + j of line c
// (input elements from IBASE[c], parameters P_), extended by the boundary
// mode (cval in constant mode).  The loads are coalesced: LAST 0, consecutive
// threads on consecutive lines (an axis other than the last); LAST 1, on
// consecutive values of one line.  Each of the C threads of the block (this
// one T) issues NB loads before their stores.  NB, LAST and MODE are the
// template's macros.  A macro, not a function: as an inlined function, NVRTC
// compiles its loop to other code.
#define NDF_LINE_STAGE(P_, IBASE, BUF, PITCH, C, T, NCOLS, R0, NR, A)                                                \
  do {                                                                                                               \
    for (int i0_ = (T); i0_ < (NR) * (NCOLS); i0_ += NB * (C)) {                                                     \
      double v_[NB];                                                                                                 \
      int at_[NB];                                                                                                   \
      _Pragma("unroll") for (int q_ = 0; q_ < NB; q_++) {                                                            \
        const int i_ = i0_ + q_ * (C);                                                                               \
        at_[q_] = -1;                                                                                                \
        if (i_ < (NR) * (NCOLS)) {                                                                                   \
          int c_, j_;                                                                                                \
          if (LAST) {                                                                                                \
            c_ = i_ / (NR);                                                                                          \
            j_ = i_ - c_ * (NR);                                                                                     \
          } else {                                                                                                   \
            j_ = i_ / (NCOLS);                                                                                       \
            c_ = i_ - j_ * (NCOLS);                                                                                  \
          }                                                                                                          \
          const ndf_i64 m_ = ndf_map((A) + j_, (P_).n, MODE);                                                        \
          v_[q_] = m_ < 0 ? (P_).cval : (double)__ldg((P_).in + (IBASE)[c_] + m_ * (P_).istr);                       \
          at_[q_] = ((R0) + j_) * (PITCH) + c_;                                                                      \
        }                                                                                                            \
      }                                                                                                              \
      _Pragma("unroll") for (int q_ = 0; q_ < NB; q_++) if (at_[q_] >= 0) (BUF)[at_[q_]] = v_[q_];                   \
    }                                                                                                                \
  } while (0)
