// binary_unpack.cu -- writes packed words (binary_common.cuh) into a bool or
// uint8 output of any strides as 0/1 bytes:
//   out = (a AND NOT b) XOR invert      (b NULL: out = a XOR invert)
// b is the miss part of binary_hit_or_miss; invert ends binary_fill_holes.
//
// VEC 0: one thread per voxel (any layout).
// VEC 1: one thread per word, two 16-byte stores; the host guarantees unit
//        stride on the last axis, nx % 32 == 0 and 16-byte aligned rows.
#include "binary_common.cuh"

#define VEC NDF_SLOT(VEC)

NDF_PARAMS(ndf_bunpack_params)

__device__ __forceinline__ ndf_i64 ndf_out_offset(const ndf_bunpack_params &p, ndf_u64 row) {
  ndf_i64 off = 0;
  for (int d = p.ndim - 2; d >= 0; d--) {
    ndf_u64 c;
    row = ndf_udiv(row, (ndf_u64)p.shape[d], &c);
    off += (ndf_i64)c * p.ostr[d];
  }
  return off;
}

__device__ __forceinline__ unsigned ndf_word(const ndf_bunpack_params &p, ndf_u64 i) {
  unsigned w = __ldg(p.a + i);
  if (p.b) w &= ~__ldg(p.b + i);
  return w ^ p.invert;
}

extern "C" __global__ void __launch_bounds__(256) ndf_bin_unpack(const ndf_bunpack_params p) {
#if VEC
  const ndf_u64 nwords = (ndf_u64)p.nrows * p.nw;
  for (ndf_u64 i = (ndf_u64)blockIdx.x * blockDim.x + threadIdx.x; i < nwords; i += (ndf_u64)gridDim.x * blockDim.x) {
    ndf_u64 j;
    const ndf_u64 row = ndf_udiv(i, (ndf_u64)p.nw, &j);
    const unsigned w = ndf_word(p, i);
    unsigned v[8];
#pragma unroll
    for (int k = 0; k < 8; k++) v[k] = (((w >> (4 * k)) & 0xfu) * 0x00204081u) & 0x01010101u; // bit b -> byte b
    uint4 *dst = (uint4 *)(p.out + ndf_out_offset(p, row) + 32 * (ndf_i64)j);
    dst[0] = make_uint4(v[0], v[1], v[2], v[3]);
    dst[1] = make_uint4(v[4], v[5], v[6], v[7]);
  }
#else
  const ndf_u64 n = (ndf_u64)p.nrows * p.nx;
  for (ndf_u64 i = (ndf_u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (ndf_u64)gridDim.x * blockDim.x) {
    ndf_u64 x;
    const ndf_u64 row = ndf_udiv(i, (ndf_u64)p.nx, &x);
    const unsigned w = ndf_word(p, row * p.nw + x / 32);
    p.out[ndf_out_offset(p, row) + (ndf_i64)x * p.ostr[p.ndim - 1]] = (unsigned char)((w >> (x & 31)) & 1u);
  }
#endif
}
