// grey_weights.cuh -- scipy's arithmetic of weighted (non-flat) structuring
// elements, shared by grey_taps.cu and grey_fp.cu.
//
// The first tap is computed in double, later taps in the input type with the
// weight converted to it (integers saturate where scipy would overflow); the
// fold runs in A, double for a weighted element and T for a flat one.
//
// The template defines before including it: T; WEIGHTED; KIND, 0 integer,
// 1 float32, 2 float64; T_LO and T_HI, the range of an integer T as doubles.
#pragma once
#include "ndf_common.cuh"

#if WEIGHTED
typedef double A; /* accumulator */
#else
typedef T A;
#endif

__device__ __forceinline__ double ndf_sat(double v) {
#if KIND == 0
  return v < T_LO ? T_LO : (v > T_HI ? T_HI : v);
#else
  return v;
#endif
}

// The value of tap k >= 1 in scipy's weighted arithmetic; tap 0 is v + wfirst in double.
__device__ __forceinline__ double ndf_wtap(T v, double wc) {
#if KIND == 1
  return (double)((float)v + (float)wc);
#elif KIND == 2
  return (double)v + wc;
#else
  return ndf_sat((double)v + wc);
#endif
}

// The output value of an accumulator.
__device__ __forceinline__ T ndf_out(A acc) {
#if WEIGHTED && KIND == 0
  return (T)ndf_sat(trunc(acc));
#else
  return (T)acc;
#endif
}
