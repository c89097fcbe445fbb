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

// The kernel arguments of one step (binary_step.cu, binary_fstep.cu).
NDF_PARAMS(ndf_bstep_params)

// Iteration control before the step (status != NULL): one thread per block
// reads the flags of launch t-1 (see binary_step.cu) and the block learns
// whether to return (true).  One read per block, not per thread.
__device__ __forceinline__ bool ndf_bstep_begin(const ndf_bstep_params &p, bool with_cycle) {
  __shared__ int stop_s;
  if (threadIdx.x == 0) {
    volatile int *st = p.status;
    int stop = st[6] != 0;
    if (!stop && p.t >= 2) {
      const bool same = st[(p.t - 1) % 3] == 0;
      const bool cycle = with_cycle && !same && st[3 + (p.t - 1) % 3] == 0;
      if (same || cycle) {
        st[6] = same ? 1 : 2;
        st[7] = p.t - 1;
        stop = 1;
      }
    }
    if (!stop && blockIdx.x == 0) { // clear the flags of launch t+1
      st[(p.t + 1) % 3] = 0;
      st[3 + (p.t + 1) % 3] = 0;
    }
    stop_s = stop;
  }
  __syncthreads();
  return stop_s != 0;
}
