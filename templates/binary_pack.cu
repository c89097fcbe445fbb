// binary_pack.cu -- packs a binary image (any dtype, any strides, non-zero =
// 1, NaN included as in NumPy) into the bit layout of binary_common.cuh,
// optionally inverted (binary_fill_holes packs NOT input as its mask).
//
// VEC 0: one warp per word; lane b reads voxel 32 j + b, __ballot_sync
//        gathers the word (any dtype and layout).
// VEC 1: one thread per word, two 16-byte loads of 32 one-byte voxels; the
//        host guarantees 1-byte T, unit stride on the last axis, nx % 32 == 0
//        and 16-byte alignment of every row.
#include "binary_common.cuh"

typedef NDF_SLOT(T) T;
#define VEC NDF_SLOT(VEC)

NDF_PARAMS(ndf_bpack_params)

// Input offset of the first voxel of a row.
__device__ __forceinline__ ndf_i64 ndf_row_offset(const ndf_bpack_params &p, ndf_u64 row) {
  ndf_i64 off = 0;
  for (int d = p.ndim - 2; d >= 0; d--) {
    ndf_u64 c;
    row = ndf_udiv(row, (ndf_u64)p.shape[d], &c);
    off += (ndf_i64)c * p.istr[d];
  }
  return off;
}

extern "C" __global__ void __launch_bounds__(256) ndf_bin_pack(const ndf_bpack_params p) {
  const ndf_u64 nwords = (ndf_u64)p.nrows * p.nw;
#if VEC
  for (ndf_u64 i = (ndf_u64)blockIdx.x * blockDim.x + threadIdx.x; i < nwords; i += (ndf_u64)gridDim.x * blockDim.x) {
    ndf_u64 j;
    const ndf_u64 row = ndf_udiv(i, (ndf_u64)p.nw, &j);
    const uint4 *src = (const uint4 *)(p.in + ndf_row_offset(p, row) + 32 * (ndf_i64)j);
    const uint4 a = __ldg(src), b = __ldg(src + 1);
    const unsigned v[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
    unsigned w = 0;
#pragma unroll
    for (int k = 0; k < 8; k++) {
      // 0x01 in each non-zero byte, then bytes 0..3 -> bits 0..3.
      const unsigned x = __vcmpne4(v[k], 0u) & 0x01010101u;
      w |= ((x | (x >> 7) | (x >> 14) | (x >> 21)) & 0xfu) << (4 * k);
    }
    p.out[i] = w ^ p.invert;
  }
#else
  const int lane = threadIdx.x & 31;
  const ndf_u64 wpb = blockDim.x / 32;
  for (ndf_u64 i = (ndf_u64)blockIdx.x * wpb + threadIdx.x / 32; i < nwords; i += (ndf_u64)gridDim.x * wpb) {
    ndf_u64 j;
    const ndf_u64 row = ndf_udiv(i, (ndf_u64)p.nw, &j);
    const ndf_i64 x = 32 * (ndf_i64)j + lane;
    bool bit = false;
    if (x < p.nx) bit = (p.in[ndf_row_offset(p, row) + x * p.istr[p.ndim - 1]] != (T)0) ^ (p.invert != 0);
    const unsigned w = __ballot_sync(0xffffffffu, bit);
    if (lane == 0) p.out[i] = w;
  }
#endif
}
