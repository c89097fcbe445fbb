// distance_bf.cu -- distance_transform_bf on CUDA (runtime/distance_bf_cuda.c),
// equal to the CPU backend (runtime/distance.c, bf_cpu) bit for bit: scipy's
// brute force over the boundary background, the voxels with value 0 that have
// a non-zero voxel in their 3^n neighbourhood.  For a foreground voxel the
// nearest such point, ties going to the highest raster index (scipy walks the
// points from the last one with a strict <); a background voxel is its own
// feature at distance 0; an image without boundary background gives scipy's
// sentinels (euclidean sqrt(DBL_MAX), else UINT32_MAX; feature 0).
//
//   ndf_bf_mark    a thread per voxel (blocks: chunks of one image): fg =
//                  input != 0 into a byte mask [img][voxel].
//   ndf_bf_list    a thread per voxel: background voxels with a foreground
//                  neighbour append their raster index to the image's list
//                  (warp-aggregated atomics: the list is unordered, so the
//                  distance kernel applies the tie rule explicitly).
//   ndf_bf_dist    a thread per voxel, blocks of 256 voxels of one image: the
//                  image's list goes through shared memory in tiles of 256
//                  points (coordinates decoded once per tile); every thread
//                  keeps (best distance, best index) with the rule d < best ||
//                  (d == best && index > best index).  Euclidean: ((0 + t0^2)
//                  + t1^2) + ... with t = (double)(x - y) (times the sampling
//                  when given), __dmul_rn/__dadd_rn as the CPU's
//                  -ffp-contract=off, sqrt (IEEE); taxicab / chessboard:
//                  uint32 sums / maxima.  Writes distances (float64 or
//                  uint32) and indices (int32, (batch..., nsp, spatial...))
//                  with their strides.
#include "ndf_common.cuh"

typedef NDF_SLOT(TIN) TIN;    // input element type (ndf_bf_mark)
#define NSP NDF_SLOT(NSP)       // spatial axes, 1..8
#define METRIC NDF_SLOT(METRIC) // 0 euclidean, 1 taxicab, 2 chessboard

NDF_PARAMS(ndf_bf_params)

__device__ __forceinline__ ndf_i64 ndf_bf_batch_off(const ndf_bf_params &p, ndf_i64 img, const ndf_i64 *str) {
  ndf_i64 off = 0;
  for (int d = p.nb - 1; d >= 0; d--) {
    off += (img % p.bshape[d]) * str[d];
    img /= p.bshape[d];
  }
  return off;
}

#if NDF_KERNEL(ndf_bf_mark)
extern "C" __global__ void __launch_bounds__(256) ndf_bf_mark(const ndf_bf_params p) {
  const ndf_i64 img = blockIdx.x / p.nchunk, v = (blockIdx.x % p.nchunk) * 256 + threadIdx.x;
  if (v >= p.npix) return;
  ndf_i64 off = ndf_bf_batch_off(p, img, p.ibstr), r = v;
  for (int d = NSP - 1; d >= 0; d--) {
    off += (r % p.sshape[d]) * p.isstr[d];
    r /= p.sshape[d];
  }
  p.fg[img * p.npix + v] = p.in[off] != (TIN)0;
}
#endif

#if NDF_KERNEL(ndf_bf_list)
extern "C" __global__ void __launch_bounds__(256) ndf_bf_list(const ndf_bf_params p) {
  const ndf_i64 img = blockIdx.x / p.nchunk, v = (blockIdx.x % p.nchunk) * 256 + threadIdx.x;
  const unsigned char *fg = p.fg + img * p.npix;
  bool bnd = false;
  if (v < p.npix && !fg[v]) {
    int co[NSP];
    ndf_i64 r = v;
    for (int d = NSP - 1; d >= 0; d--) {
      co[d] = (int)(r % p.sshape[d]);
      r /= p.sshape[d];
    }
    int nn = 1;
    for (int d = 0; d < NSP; d++) nn *= 3;
    for (int k = 0; k < nn && !bnd; k++) {
      int kr = k;
      ndf_i64 q = 0, m = 1;
      bool inb = true;
      for (int d = NSP - 1; d >= 0; d--) {
        const ndf_i64 x = co[d] + kr % 3 - 1;
        kr /= 3;
        inb &= x >= 0 && x < p.sshape[d];
        q += x * m;
        m *= p.sshape[d];
      }
      if (inb) bnd = fg[q] != 0;
    }
  }
  const unsigned b = __ballot_sync(0xffffffffu, bnd);
  if (b == 0) return;
  const int lane = threadIdx.x & 31, leader = __ffs(b) - 1;
  int base = 0;
  if (lane == leader) base = atomicAdd(&p.cnt[img], __popc(b));
  base = __shfl_sync(0xffffffffu, base, leader);
  if (bnd) p.list[img * p.npix + base + __popc(b & ((1u << lane) - 1))] = (int)v;
}
#endif

#define NDF_BF_TILE 256

#if NDF_KERNEL(ndf_bf_dist)
extern "C" __global__ void __launch_bounds__(256) ndf_bf_dist(const ndf_bf_params p) {
  __shared__ int sco[NSP][NDF_BF_TILE];
  __shared__ int sid[NDF_BF_TILE];
  const ndf_i64 img = blockIdx.x / p.nchunk, v = (blockIdx.x % p.nchunk) * 256 + threadIdx.x;
  const bool in_img = v < p.npix;
  const bool f = in_img && p.fg[img * p.npix + v] != 0;
  int co[NSP];
  {
    ndf_i64 r = in_img ? v : 0;
    for (int d = NSP - 1; d >= 0; d--) {
      co[d] = (int)(r % p.sshape[d]);
      r /= p.sshape[d];
    }
  }
#if METRIC == 0
  double best = 1.7976931348623157e308; // DBL_MAX
#else
  unsigned best = 0xffffffffu;
#endif
  int bi = 0;
  const int n = p.cnt[img];
  const int *list = p.list + img * p.npix;
  if (__syncthreads_or(f)) {
    for (int e0 = 0; e0 < n; e0 += NDF_BF_TILE) {
      const int ne = min(NDF_BF_TILE, n - e0);
      if ((int)threadIdx.x < ne) {
        const int q = list[e0 + threadIdx.x];
        ndf_i64 r = q;
        for (int d = NSP - 1; d >= 0; d--) {
          sco[d][threadIdx.x] = (int)(r % p.sshape[d]);
          r /= p.sshape[d];
        }
        sid[threadIdx.x] = q;
      }
      __syncthreads();
      if (f) {
        for (int e = 0; e < ne; e++) {
#if METRIC == 0
          double acc = 0.0;
#pragma unroll
          for (int d = 0; d < NSP; d++) {
            double t = (double)(ndf_i64)(co[d] - sco[d][e]);
            if (p.has_samp) t = __dmul_rn(t, p.samp[d]);
            acc = __dadd_rn(acc, __dmul_rn(t, t));
          }
#else
          unsigned acc = 0;
#pragma unroll
          for (int d = 0; d < NSP; d++) {
            const int t = co[d] - sco[d][e];
            const unsigned a = (unsigned)(t < 0 ? -t : t);
            if (METRIC == 1) acc += a;
            else acc = a > acc ? a : acc;
          }
#endif
          const int q = sid[e];
          if (acc < best || (acc == best && q > bi)) {
            best = acc;
            bi = q;
          }
        }
      }
      __syncthreads();
    }
  }
  if (!in_img) return;
  if (!f) { // background: its own feature at distance 0
    bi = (int)v;
#if METRIC == 0
    best = 0.0;
#else
    best = 0;
#endif
  }
  if (p.dist) {
    ndf_i64 off = ndf_bf_batch_off(p, img, p.dbstr);
    for (int d = 0; d < NSP; d++) off += co[d] * p.dsstr[d];
#if METRIC == 0
    ((double *)p.dist)[off] = sqrt(best);
#else
    ((unsigned *)p.dist)[off] = best;
#endif
  }
  if (p.idx) {
    ndf_i64 off = ndf_bf_batch_off(p, img, p.xbstr);
    for (int d = 0; d < NSP; d++) off += co[d] * p.xsstr[d];
    ndf_i64 r = bi;
    for (int d = NSP - 1; d >= 0; d--) {
      p.idx[off + d * p.xkstr] = (int)(r % p.sshape[d]);
      r /= p.sshape[d];
    }
  }
}
#endif
