// ndf_common.cuh -- device code shared by every ndforge kernel template:
// index types, scipy's boundary modes, and NaN-aware min/max.
//
// Boundary modes, as scipy.ndimage extends the line [a b c d] (n = 4):
//   reflect  (0):  d c b a | a b c d | d c b a     period 2n   (= grid-mirror)
//   constant (1):  k k k k | a b c d | k k k k     k = cval    (= grid-constant)
//   nearest  (2):  a a a a | a b c d | d d d d
//   mirror   (3):    d c b | a b c d | c b a       period 2n-2 (n = 1: nearest)
//   wrap     (4):  a b c d | a b c d | a b c d     period n    (= grid-wrap)
// The extension is periodic however far outside the line a tap reaches.
//
// A template's line NDF_PARAMS(name) becomes the parameter struct `name` its
// kernels take, declared in gen/spec.lua (fields, types, layout asserts;
// docs/adr/0018-kernel-params-from-the-spec.md).
#pragma once

typedef long long ndf_i64;

#define NDF_REFLECT 0
#define NDF_CONSTANT 1
#define NDF_NEAREST 2
#define NDF_MIRROR 3
#define NDF_WRAP 4

// Maps coordinate i of an axis of length n >= 1 into [0, n), or returns -1
// when the tap reads cval (constant mode).  mode is a compile-time constant
// at every call site, so only one branch survives.
__device__ __forceinline__ ndf_i64 ndf_map(ndf_i64 i, ndf_i64 n, int mode) {
  if (i >= 0 && i < n) return i;
  if (mode == NDF_CONSTANT) return -1;
  if (mode == NDF_NEAREST || n == 1) return i < 0 ? 0 : n - 1;
  if (mode == NDF_WRAP) {
    ndf_i64 r = i % n;
    return r < 0 ? r + n : r;
  }
  if (mode == NDF_REFLECT) {
    ndf_i64 p = 2 * n, r = i % p;
    if (r < 0) r += p;
    return r < n ? r : p - 1 - r;
  }
  /* mirror */
  ndf_i64 p = 2 * n - 2, r = i % p;
  if (r < 0) r += p;
  return r < n ? r : p - r;
}

// min/max that propagate NaN: once a NaN is seen the result stays NaN.
template <typename V> __device__ __forceinline__ V ndf_min(V a, V b) { return (b < a || b != b) ? b : a; }
template <typename V> __device__ __forceinline__ V ndf_max(V a, V b) { return (b > a || b != b) ? b : a; }
// Integer types never hold NaN; plain min/max let the compiler emit IMNMX.
#define NDF_INT_MINMAX(V)                                                              \
  template <> __device__ __forceinline__ V ndf_min<V>(V a, V b) { return b < a ? b : a; } \
  template <> __device__ __forceinline__ V ndf_max<V>(V a, V b) { return b > a ? b : a; }
NDF_INT_MINMAX(unsigned char)
NDF_INT_MINMAX(signed char)
NDF_INT_MINMAX(unsigned short)
NDF_INT_MINMAX(short)
NDF_INT_MINMAX(unsigned int)
NDF_INT_MINMAX(int)
#undef NDF_INT_MINMAX

template <int OP, typename V> __device__ __forceinline__ V ndf_pick(V a, V b) {
  return OP == 0 ? ndf_min<V>(a, b) : ndf_max<V>(a, b);
}

#define NDF_MAX_NDIM 12
#define NDF_MAX_SPATIAL 8 /* spatial axes of one image (ndforge.h) */

// Index decoding: NDF_FOR_COORDS(R, N, SHAPE, D, X, ...) splits the C-order
// index R (an ndf_i64 variable, left holding the quotient) over axes N - 1 .. 0
// of SHAPE, the last fastest, and runs the statements ... for each axis D with
// X its coordinate; e.g. an element's offsets through two arrays' strides:
//   ndf_i64 r = i, oa = 0, ob = 0;
//   NDF_FOR_COORDS(r, p.ndim, p.shape, d, x,
//                  oa += x * p.sa[d];
//                  ob += x * p.sb[d];)
// One division per axis: the coordinate is R less the quotient times the
// extent.  A macro rather than a function: NVRTC has compiled steps like these
// to other code as inlined functions (grey_stage.cuh); as this macro they give
// the PTX of the loops it replaced, which each kernel had written out.
#define NDF_FOR_COORDS(R, N, SHAPE, D, X, ...)                                    \
  for (int D = (N) - 1; D >= 0; D--) {                                            \
    const ndf_i64 ndf_q_ = (R) / (SHAPE)[D], X = (R) - ndf_q_ * (SHAPE)[D];       \
    (R) = ndf_q_;                                                                 \
    __VA_ARGS__                                                                   \
  }

// #if NDF_KERNEL(name) ... #endif around each kernel of a template with several:
// the JIT compiles one kernel per module (the request's, which it defines as
// NDF_KERNEL_<name> 1), so a call pays only for the kernels it launches; with
// NDF_ALL_KERNELS 1 (test_nvrtc's family rows) every kernel is compiled.
// An undefined name in #if is 0.
#define NDF_KERNEL(name) (NDF_ALL_KERNELS || NDF_KERNEL_##name)
