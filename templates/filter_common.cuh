// filter_common.cuh -- device code shared by the linear filter templates
// (filter_line.cu, filter_uniform.cu, filter_taps.cu, filter_ew.cu): scipy's
// conversion of a double sum to the output dtype, the C cast that gcc emits
// for it on x86-64:
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
template <typename P>
__device__ __forceinline__ void ndf_line_offsets(const P &p, ndf_i64 r, ndf_i64 &ib, ndf_i64 &ob) {
  ib = 0;
  ob = 0;
  for (int d = p.nother - 1; d >= 0; d--) {
    const ndf_i64 q = r / p.oshape[d], x = r - q * p.oshape[d];
    r = q;
    ib += x * p.oistr[d];
    ob += x * p.oostr[d];
  }
}
