// grey_taps.cu -- grey erosion/dilation with any structuring element, the
// general kernel: one thread per output voxel, taps from a table.
//
// out[x] = OP_k  in[x + d_k] (+ w_k)     OP = min (erosion) or max (dilation)
// The host has already applied scipy's conventions (reflection and origin
// shift for dilation, negated weights for erosion): here d_k are plain
// offsets.  Interior voxels use precomputed linear offsets; voxels whose
// element crosses the border map each tap's coordinates through the mode.
//
// Weighted (non-flat) elements reproduce scipy's arithmetic exactly: the
// first tap is computed in double, later taps in the input type with the
// weight converted to it (integers saturate where scipy would overflow).
#include "ndf_common.cuh"

typedef NDF_SLOT(T) T;
#define NDIM NDF_SLOT(NDIM)
#define OP NDF_SLOT(OP)
#define MODE NDF_SLOT(MODE)
#define WEIGHTED NDF_SLOT(WEIGHTED)
#define KIND NDF_SLOT(KIND)      /* 0 integer, 1 float32, 2 float64 */
#define T_LO NDF_SLOT(T_LO)      /* range of an integer T, as doubles */
#define T_HI NDF_SLOT(T_HI)

NDF_PARAMS(ndf_taps_params)

#include "grey_weights.cuh"

extern "C" __global__ void __launch_bounds__(256) ndf_grey_taps(const ndf_taps_params p) {
  const int L = NDIM - 1;
  for (ndf_i64 blk = blockIdx.x; blk < p.nrows * p.nchunks; blk += gridDim.x) {
    ndf_i64 row = blk / p.nchunks;
    ndf_i64 x = (blk - row * p.nchunks) * blockDim.x + threadIdx.x;
    if (x >= p.shape[L]) continue;
    // Decode row -> spatial coordinates but the last, then batch index.
    ndf_i64 c[NDIM];
    ndf_i64 r = row, ispat = 0, obase = 0, ibatch = 0;
    bool outer_inside = true;
#pragma unroll
    for (int d = L - 1; d >= 0; d--) {
      ndf_i64 q = r / p.shape[d];
      c[d] = r - q * p.shape[d];
      r = q;
      ispat += c[d] * p.istr[d];
      obase += c[d] * p.ostr[d];
      outer_inside = outer_inside && c[d] + p.rlo[d] >= 0 && c[d] + p.rhi[d] < p.shape[d];
    }
    for (int b = p.nb - 1; b >= 0; b--) {
      ndf_i64 q = r / p.bshape[b];
      ndf_i64 cb = r - q * p.bshape[b];
      r = q;
      ibatch += cb * p.bistr[b];
      obase += cb * p.bostr[b];
    }
    c[L] = x;
    const T *img = p.in + ibatch;
    const bool inside = outer_inside && x + p.rlo[L] >= 0 && x + p.rhi[L] < p.shape[L];
    const T cv = (T)p.cval;
#if WEIGHTED
    double acc = 0.0;
#else
    T acc = cv;
#endif
    for (int k = 0; k < p.ntaps; k++) {
      T v;
      if (inside) {
        v = __ldg(img + ispat + x * p.istr[L] + p.loff[k]);
      } else {
        ndf_i64 off = 0;
        bool outside = false;
#pragma unroll
        for (int d = 0; d < NDIM; d++) {
          ndf_i64 m = ndf_map(c[d] + p.toff[k * NDIM + d], p.shape[d], MODE);
          outside = outside || m < 0;
          off += m * p.istr[d];
        }
        v = outside ? cv : __ldg(img + off);
      }
#if WEIGHTED
      double t = (k == 0) ? (double)v + p.wfirst[0] : ndf_wtap(v, p.wcast[k]);
      acc = (k == 0) ? t : ndf_pick<OP, double>(acc, t);
#else
      acc = (k == 0) ? v : ndf_pick<OP, T>(acc, v);
#endif
    }
#if WEIGHTED
    p.out[obase + x * p.ostr[L]] = ndf_out(acc);
#else
    p.out[obase + x * p.ostr[L]] = acc;
#endif
  }
}
