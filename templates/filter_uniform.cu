// filter_uniform.cu -- one 1-D uniform (running mean) pass along one axis, as
// scipy's NI_UniformFilter1D computes it: the sum of the first window, then
// for every next output the entering tap minus the leaving one added to the
// running sum, each output the running sum divided by K, all in double with
// no fused operations, so it equals the CPU backend bit for bit.  The running
// sum makes a line sequential: one thread walks one line (consecutive
// threads take consecutive lines, coalesced unless the axis is the last).
// Output x's window reads the coordinates x - pre .. x - pre + K - 1 of the
// line extended by the boundary mode (cval in constant mode).
#include "ndf_common.cuh"
#include "filter_common.cuh"

typedef NDF_SLOT(TI) TI;
typedef NDF_SLOT(TO) TO;
#define CVT NDF_SLOT(CVT)
#define MODE NDF_SLOT(MODE)
#define U 8 // steps whose loads are in flight together

NDF_PARAMS(ndf_funi_params)

extern "C" __global__ void __launch_bounds__(128) ndf_filter_uniform(const ndf_funi_params p) {
  for (ndf_i64 line = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x; line < p.nlines;
       line += (ndf_i64)gridDim.x * blockDim.x) {
    ndf_i64 r = line, ib = 0, ob = 0;
    for (int d = p.nother - 1; d >= 0; d--) {
      const ndf_i64 q = r / p.oshape[d], x = r - q * p.oshape[d];
      r = q;
      ib += x * p.oistr[d];
      ob += x * p.oostr[d];
    }
    const TI *in = p.in + ib;
#define VAL(x) (ndf_map((x), p.n, MODE) < 0 ? p.cval : (double)__ldg(in + ndf_map((x), p.n, MODE) * p.istr))
    const double K = (double)p.K;
    double tmp = 0.0;
    for (ndf_i64 l = 0; l < p.K; l++) tmp = __dadd_rn(tmp, VAL(l - p.pre));
    p.out[ob] = ndf_filter_cvt<CVT, TO>(__ddiv_rn(tmp, K));
    // U steps at a time: their 2 U loads are issued before the running sum
    // (a chain through tmp) consumes them.
    for (ndf_i64 l0 = 1; l0 < p.n; l0 += U) {
      double enter[U], leave[U];
#pragma unroll
      for (int q = 0; q < U; q++) {
        const ndf_i64 l = l0 + q;
        if (l < p.n) {
          enter[q] = VAL(l - 1 + p.K - p.pre);
          leave[q] = VAL(l - 1 - p.pre);
        }
      }
#pragma unroll
      for (int q = 0; q < U; q++) {
        const ndf_i64 l = l0 + q;
        if (l < p.n) {
          tmp = __dadd_rn(tmp, __dsub_rn(enter[q], leave[q]));
          p.out[ob + l * p.ostr] = ndf_filter_cvt<CVT, TO>(__ddiv_rn(tmp, K));
        }
      }
    }
#undef VAL
  }
}
