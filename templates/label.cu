// label.cu -- scipy.ndimage.label on the GPU: connected components of the
// non-zero voxels by lock-free union-find, numbered 1..n per image in the
// raster order of each feature's first voxel.
//
//   init      parent[i] = i for a foreground voxel, -1 for background
//   unite     for each foreground voxel and each tap of the structure's
//             backward half (each undirected edge once): union.  A root is
//             only ever linked under a smaller index (atomicCAS on the root),
//             so every component's root is its least index: its first voxel
//             in raster order, which is the order scipy numbers features in.
//   compress  parent[i] = root of i
//   count / scan / rank   exclusive prefix count of the roots (blocks of E
//             voxels): rank[root] = 1 + roots before it
//   base      roots before each image's first voxel (one thread per image)
//   write     out[i] = rank[parent[i]] - base[image of i], or 0
// Voxel indices are C-order flat indices of the logical shape (< 2^31).
#include "ndf_common.cuh"

typedef NDF_SLOT(T) T;   /* input element type */
typedef NDF_SLOT(O) O;   /* output element type */
#define E 2048           /* voxels per block in count and rank: 256 threads x 8 */
#define NDF_MAX_SPATIAL 8

struct ndf_label_params {
  const T *in;
  O *out;
  int *parent, *rank, *bsum, *base;
  int ndim, nsp;                          // all axes; trailing spatial axes
  ndf_i64 shape[NDF_MAX_NDIM], istr[NDF_MAX_NDIM], ostr[NDF_MAX_NDIM];
  int n;                                  // voxels
  int per;                                // voxels per image
  int nimg;                               // images
  int nblk;                               // ceil(n / E)
  int ntaps;                              // backward taps
  const int *taps;                        // ntaps * nsp offsets in {-1, 0, 1}
  const int *toff;                        // flat (C-order) offset of each tap
};

__device__ __forceinline__ ndf_i64 ndf_offset(const ndf_label_params &p, const ndf_i64 *st, unsigned i) {
  ndf_i64 off = 0;
  for (int d = p.ndim - 1; d >= 0; d--) {
    const unsigned q = i / (unsigned)p.shape[d];
    off += (ndf_i64)(i - q * (unsigned)p.shape[d]) * st[d];
    i = q;
  }
  return off;
}

extern "C" __global__ void __launch_bounds__(256) ndf_label_init(const ndf_label_params p) {
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)p.n; i += gridDim.x * blockDim.x)
    p.parent[i] = p.in[ndf_offset(p, p.istr, i)] != (T)0 ? (int)i : -1;
}

__device__ __forceinline__ int ndf_find(int *parent, int x) {
  volatile int *vp = parent;
  int px = vp[x];
  while (px != x) {
    const int gp = vp[px];
    if (gp != px) vp[x] = gp; // path halving: x keeps an ancestor
    x = px;
    px = gp;
  }
  return x;
}

__device__ __forceinline__ void ndf_unite(int *parent, int a, int b) {
  for (;;) {
    a = ndf_find(parent, a);
    b = ndf_find(parent, b);
    if (a == b) return;
    if (a < b) { const int t = a; a = b; b = t; }
    const int old = atomicCAS(parent + a, a, b); // link the larger root under the smaller
    if (old == a) return;
  }
}

extern "C" __global__ void __launch_bounds__(256) ndf_label_unite(const ndf_label_params p) {
  const int L = p.ndim - 1, nb = p.ndim - p.nsp;
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)p.n; i += gridDim.x * blockDim.x) {
    if (p.parent[i] < 0) continue;
    int c[NDF_MAX_SPATIAL];
    unsigned r = i;
    for (int d = L; d >= nb; d--) {
      const unsigned q = r / (unsigned)p.shape[d];
      c[d - nb] = (int)(r - q * (unsigned)p.shape[d]);
      r = q;
    }
    for (int k = 0; k < p.ntaps; k++) {
      bool ok = true;
      for (int d = 0; d < p.nsp && ok; d++) {
        const int y = c[d] + p.taps[k * p.nsp + d];
        ok = y >= 0 && y < p.shape[nb + d];
      }
      if (!ok) continue;
      const int j = (int)i + p.toff[k];
      if (*(volatile int *)(p.parent + j) >= 0) ndf_unite(p.parent, (int)i, j);
    }
  }
}

extern "C" __global__ void __launch_bounds__(256) ndf_label_compress(const ndf_label_params p) {
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)p.n; i += gridDim.x * blockDim.x) {
    int x = p.parent[i];
    if (x < 0) continue;
    while (true) {
      const int px = p.parent[x];
      if (px == x) break;
      x = px;
    }
    p.parent[i] = x;
  }
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

extern "C" __global__ void __launch_bounds__(256) ndf_label_count(const ndf_label_params p) {
  for (int b = blockIdx.x; b < p.nblk; b += gridDim.x) {
    int v = 0;
    for (int k = 0; k < E / 256; k++) v += ndf_is_root(p, b * E + k * 256 + (int)threadIdx.x);
    int total;
    ndf_block_scan(v, &total);
    if (threadIdx.x == 0) p.bsum[b] = total;
  }
}

// One block: bsum[0..nblk) -> exclusive prefix, bsum[nblk] = total.
extern "C" __global__ void __launch_bounds__(256) ndf_label_scan(const ndf_label_params p) {
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
extern "C" __global__ void __launch_bounds__(256) ndf_label_rank(const ndf_label_params p) {
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
extern "C" __global__ void __launch_bounds__(256) ndf_label_base(const ndf_label_params p) {
  for (int b = blockIdx.x * blockDim.x + threadIdx.x; b <= p.nimg; b += gridDim.x * blockDim.x) {
    const long long pos = b == p.nimg ? (long long)p.n : (long long)b * p.per;
    const int blk = (int)(pos / E);
    int v = p.bsum[blk < p.nblk ? blk : p.nblk];
    if (blk < p.nblk)
      for (int i = blk * E; i < pos; i++) v += ndf_is_root(p, i);
    p.base[b] = v;
  }
}

extern "C" __global__ void __launch_bounds__(256) ndf_label_write(const ndf_label_params p) {
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)p.n; i += gridDim.x * blockDim.x) {
    const int r = p.parent[i];
    const int v = r < 0 ? 0 : p.rank[r] - p.base[i / (unsigned)p.per];
    p.out[ndf_offset(p, p.ostr, i)] = (O)v;
  }
}
