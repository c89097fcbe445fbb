// grey_lines.cuh -- index helpers of the register line passes (grey_linew.cu,
// grey_linev.cu).
#pragma once
#include "ndf_common.cuh"

// a / b for 0 <= a, 0 < b: by 32-bit division where both fit (about a
// quarter of the instructions of the 64-bit one).
__device__ __forceinline__ ndf_i64 ndf_div(ndf_i64 a, ndf_i64 b) {
  if ((unsigned long long)(a | b) <= 0xffffffffull) return (ndf_i64)((unsigned)a / (unsigned)b);
  return a / b;
}

// Where line `line` (C order over the other axes) starts in the input and the
// output.  The first axis needs no division (line < the product of shapes).
__device__ __forceinline__ void ndf_line_bases(ndf_i64 line, int nother, const ndf_i64 *oshape,
                                               const ndf_i64 *oistr, const ndf_i64 *oostr, ndf_i64 &ib,
                                               ndf_i64 &ob) {
  ndf_i64 r = line;
  ib = 0;
  ob = 0;
  for (int d = nother - 1; d >= 0; d--) {
    const ndf_i64 q = d == 0 ? 0 : ndf_div(r, oshape[d]), c = r - q * oshape[d];
    r = q;
    ib += c * oistr[d];
    ob += c * oostr[d];
  }
}
