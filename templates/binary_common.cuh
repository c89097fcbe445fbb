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

// ---- union-find over int parents (binary_ccl.cu, label.cu) --------------------------------
// The root of x, halving the path on the way (other threads may be linking:
// the parents are read through volatile).
__device__ __forceinline__ int ndf_uf_find(int *parent, int x) {
  volatile int *vp = parent;
  int px = vp[x];
  while (px != x) {
    const int gp = vp[px];
    if (gp != px) vp[x] = gp;
    x = px;
    px = gp;
  }
  return x;
}

// Joins the sets of a and b, the larger root linked under the smaller by CAS.
__device__ __forceinline__ void ndf_uf_unite(int *parent, int a, int b) {
  for (;;) {
    a = ndf_uf_find(parent, a);
    b = ndf_uf_find(parent, b);
    if (a == b) return;
    if (a < b) { const int t = a; a = b; b = t; }
    if (atomicCAS(parent + a, a, b) == a) return;
  }
}
