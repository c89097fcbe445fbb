// binary_common.cuh -- the packed layout of binary morphology on the GPU.
//
// A 0/1 image of shape (..., nx) is stored as rows of nw = ceil(nx / 32)
// 32-bit words: bit b of word j of a row is voxel x = 32 j + b of that row
// (the last axis), and a row is every index over the other axes, batch axes
// included, in C order.  Bits at x >= nx (the tail of a row's last word) are
// always 0 in a stored word.  Rows never share a word, so batch images and
// neighbouring rows never mix.
#pragma once
#include "ndf_common.cuh"

typedef unsigned long long ndf_u64;

// a / b and a % b, in 32 bits when both fit (the common case: several times
// cheaper than the 64-bit division).
__device__ __forceinline__ ndf_u64 ndf_udiv(ndf_u64 a, ndf_u64 b, ndf_u64 *rem) {
  if ((a | b) < 0x100000000ull) {
    unsigned q = (unsigned)a / (unsigned)b;
    *rem = (unsigned)a - q * (unsigned)b;
    return q;
  }
  ndf_u64 q = a / b;
  *rem = a - q * b;
  return q;
}
