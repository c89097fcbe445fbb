// label.cu -- the numbering of scipy.ndimage.label on the GPU.  The
// components come from binary_ccl.cu's union-find (init, unite, compress):
// parent[v] is the root of foreground voxel v, -1 for background, and every
// root is its component's least flat index, its first voxel in raster order,
// which is the order scipy numbers features in.  Here:
//   count / scan / rank   exclusive prefix count of the roots (blocks of E
//             voxels): rank[root] = 1 + roots before it
//   base      roots before each image's first voxel (one thread per image)
//   write     out[i] = rank[parent[i]] - base[image of i], or 0
// Voxel indices are C-order flat indices of the logical shape (< 2^31).
#include "ndf_common.cuh"

typedef NDF_SLOT(O) O;   /* output element type */
#define E 2048           /* voxels per block in count and rank: 256 threads x 8 */

NDF_PARAMS(ndf_label_params)

__device__ __forceinline__ ndf_i64 ndf_offset(const ndf_label_params &p, const ndf_i64 *st, unsigned i) {
  ndf_i64 off = 0;
  for (int d = p.ndim - 1; d >= 0; d--) {
    const unsigned q = i / (unsigned)p.shape[d];
    off += (ndf_i64)(i - q * (unsigned)p.shape[d]) * st[d];
    i = q;
  }
  return off;
}

__device__ __forceinline__ bool ndf_is_root(const ndf_label_params &p, int i) {
  return i < p.n && p.parent[i] == i;
}

// Block-wide exclusive scan of one int per thread (256 threads); *total gets the sum.
__device__ __forceinline__ int ndf_block_scan(int v, int *total) {
  __shared__ int warp_sums[32];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  int x = v;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int y = __shfl_up_sync(0xffffffffu, x, o);
    if (lane >= o) x += y;
  }
  if (lane == 31) warp_sums[w] = x;
  __syncthreads();
  if (w == 0) {
    int s = lane < (int)(blockDim.x >> 5) ? warp_sums[lane] : 0;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int y = __shfl_up_sync(0xffffffffu, s, o);
      if (lane >= o) s += y;
    }
    warp_sums[lane] = s; // inclusive
  }
  __syncthreads();
  const int before = (w ? warp_sums[w - 1] : 0) + x - v;
  *total = warp_sums[(blockDim.x >> 5) - 1];
  __syncthreads();
  return before;
}

__device__ __forceinline__ void ndf_label_count(const ndf_label_params &p) {
  for (int b = blockIdx.x; b < p.nblk; b += gridDim.x) {
    int v = 0;
    for (int k = 0; k < E / 256; k++) v += ndf_is_root(p, b * E + k * 256 + (int)threadIdx.x);
    int total;
    ndf_block_scan(v, &total);
    if (threadIdx.x == 0) p.bsum[b] = total;
  }
}

// One block: bsum[0..nblk) -> exclusive prefix, bsum[nblk] = total.
__device__ __forceinline__ void ndf_label_scan(const ndf_label_params &p) {
  const int chunk = (p.nblk + 255) / 256;
  const int lo = threadIdx.x * chunk, hi = min(lo + chunk, p.nblk);
  int v = 0;
  for (int k = lo; k < hi; k++) v += p.bsum[k];
  int total;
  int run = ndf_block_scan(v, &total);
  for (int k = lo; k < hi; k++) {
    const int s = p.bsum[k];
    p.bsum[k] = run;
    run += s;
  }
  if (threadIdx.x == 0) p.bsum[p.nblk] = total;
}

// rank[root] = 1 + roots before it; a thread owns 8 consecutive voxels.
__device__ __forceinline__ void ndf_label_rank(const ndf_label_params &p) {
  for (int b = blockIdx.x; b < p.nblk; b += gridDim.x) {
    const int first = b * E + (int)threadIdx.x * (E / 256);
    int v = 0;
    for (int k = 0; k < E / 256; k++) v += ndf_is_root(p, first + k);
    int total;
    int before = p.bsum[b] + ndf_block_scan(v, &total);
    for (int k = 0; k < E / 256; k++)
      if (ndf_is_root(p, first + k)) p.rank[first + k] = ++before;
  }
}

// base[b] = roots before the first voxel of image b (b = nimg: all roots).
__device__ __forceinline__ void ndf_label_base(const ndf_label_params &p) {
  for (int b = blockIdx.x * blockDim.x + threadIdx.x; b <= p.nimg; b += gridDim.x * blockDim.x) {
    const long long pos = b == p.nimg ? (long long)p.n : (long long)b * p.per;
    const int blk = (int)(pos / E);
    int v = p.bsum[blk < p.nblk ? blk : p.nblk];
    if (blk < p.nblk)
      for (int i = blk * E; i < pos; i++) v += ndf_is_root(p, i);
    p.base[b] = v;
  }
}

__device__ __forceinline__ void ndf_label_write(const ndf_label_params &p) {
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)p.n; i += gridDim.x * blockDim.x) {
    const int r = p.parent[i];
    const int v = r < 0 ? 0 : p.rank[r] - p.base[i / (unsigned)p.per];
    p.out[ndf_offset(p, p.ostr, i)] = (O)v;
  }
}

// One entry point for the five phases (one module, one compile per output
// type): the host launches it with phase 0..4 in stream order.
extern "C" __global__ void __launch_bounds__(256) ndf_label(const ndf_label_params p) {
  switch (p.phase) {
    case 0: ndf_label_count(p); break;
    case 1: ndf_label_scan(p); break;
    case 2: ndf_label_rank(p); break;
    case 3: ndf_label_base(p); break;
    default: ndf_label_write(p); break;
  }
}
