// filter_taps.cu -- scipy's N-D correlate (NI_Correlate): out[x] = the sum,
// from 0.0 in the taps' order, of w[k] * in[x + off[k]], the input extended
// by the boundary mode per axis (cval in constant mode), in double with no
// fused multiply-adds, so it equals the CPU backend bit for bit.  One thread
// per output; a voxel whose taps all fall inside the image reads through the
// taps' linear offsets (loff), the others map every coordinate.
#include "ndf_common.cuh"
#include "filter_common.cuh"

typedef NDF_SLOT(TI) TI;
typedef NDF_SLOT(TO) TO;
#define CVT NDF_SLOT(CVT)
#define MODE NDF_SLOT(MODE)
#define NSP NDF_SLOT(NSP)     // spatial axes, 1..8

NDF_PARAMS(ndf_ftaps_params)

extern "C" __global__ void __launch_bounds__(256) ndf_filter_taps(const ndf_ftaps_params p) {
  const int nb = p.ndim - NSP;
  for (ndf_i64 i = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += (ndf_i64)gridDim.x * blockDim.x) {
    ndf_i64 r = i, ib = 0, ob = 0, c[NSP];
    int inside = 1;
    NDF_FOR_COORDS(r, p.ndim, p.shape, d, x,
                   ib += x * p.istr[d];
                   ob += x * p.ostr[d];
                   if (d >= nb) {
                     c[d - nb] = x;
                     inside &= x + p.rlo[d - nb] >= 0 && x + p.rhi[d - nb] < p.shape[d];
                   })
    double acc = 0.0;
    if (inside) {
      for (ndf_i64 k = 0; k < p.ntaps; k++)
        acc = __dadd_rn(acc, __dmul_rn(__ldg(p.w + k), (double)__ldg(p.in + ib + __ldg(p.loff + k))));
    } else {
      ndf_i64 base = ib;
#pragma unroll
      for (int d = 0; d < NSP; d++) base -= c[d] * p.istr[nb + d];
      for (ndf_i64 k = 0; k < p.ntaps; k++) {
        ndf_i64 off = base;
        int out = 0;
#pragma unroll
        for (int d = 0; d < NSP; d++) {
          const ndf_i64 m = ndf_map(c[d] + __ldg(p.off + k * NSP + d), p.shape[nb + d], MODE);
          if (m < 0) out = 1;
          else off += m * p.istr[nb + d];
        }
        acc = __dadd_rn(acc, __dmul_rn(__ldg(p.w + k), out ? p.cval : (double)__ldg(p.in + off)));
      }
    }
    p.out[ob] = ndf_filter_cvt<CVT, TO>(acc);
  }
}
