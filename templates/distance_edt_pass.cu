// distance_edt_pass.cu -- ndf_distance_edt_pass on CUDA arrays: one pass of
// the exact Euclidean distance transform along one axis of a caller's state
// (squared distances, +inf where a voxel has no feature yet; optional int64
// features), bit-identical to the CPU backend (runtime/ops/distance/distance.c,
// edt_line) and so to scipy's _VoronoiFT.
//
// One thread per line; the line index runs over the other axes in C order,
// so the threads of a warp take consecutive positions of the last other axis
// (coalesced unless the pass runs along the array's contiguous axis).  The
// envelope of a line (position, W, feature) lives in scratch at
// [l * nlines + line], coalesced the same way.  Every double operation is an
// explicit _rn intrinsic in the CPU's order, so no fused multiply-add can
// change a tie.
#include "ndf_common.cuh"

#define HAS_F NDF_SLOT(HAS_F)

NDF_PARAMS(ndf_edt_pass_params)

__device__ __forceinline__ double ndf_pmul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ double ndf_padd(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ double ndf_psub(double a, double b) { return __dsub_rn(a, b); }

#if NDF_KERNEL(ndf_edt_pass)
__device__ __forceinline__ void ndf_pass_line(const ndf_edt_pass_params &p, const ndf_i64 line) {
  // offsets of the line in sqdist and features
  ndf_i64 r = line, ow = 0, of = 0;
  for (int d = p.nd - 1; d >= 0; d--) {
    if (d == p.axis) continue;
    const ndf_i64 q = r / p.shape[d];
    ow += (r - q * p.shape[d]) * p.wstr[d];
    of += (r - q * p.shape[d]) * p.fstr[d];
    r = q;
  }
  double *W = p.w + ow;
  const ndf_i64 n = p.n, sw = p.wstr[p.axis], nl = p.nlines;
  const double s = p.s;
#if HAS_F
  long long *F = p.f + of;
  const ndf_i64 sf = p.fstr[p.axis];
#endif
  int *V = p.sv + line;
  double *SW = p.sw + line;
#if HAS_F
  long long *SF = p.sf + line;
#endif
  ndf_i64 l = -1;
  for (ndf_i64 x = 0; x < n; x++) {
    const double wR = W[x * sw];
    if (isinf(wR)) continue;
    while (l >= 1) {
      const double a = ndf_pmul((double)(V[l * nl] - V[(l - 1) * nl]), s);
      const double b = ndf_pmul((double)(x - V[l * nl]), s);
      const double c = ndf_padd(a, b);
      const double t = ndf_psub(ndf_psub(ndf_psub(ndf_pmul(c, SW[l * nl]), ndf_pmul(b, SW[(l - 1) * nl])),
                                         ndf_pmul(a, wR)),
                                ndf_pmul(ndf_pmul(a, b), c));
      if (t <= 0.0) break;
      --l;
    }
    ++l;
    V[l * nl] = (int)x;
    SW[l * nl] = wR;
#if HAS_F
    SF[l * nl] = F[x * sf];
#endif
  }
  if (l < 0) return;  // no site: the line keeps its values
  const ndf_i64 maxl = l;
  l = 0;
  for (ndf_i64 i = 0; i < n; i++) {
    double t = ndf_pmul((double)(V[l * nl] - i), s);
    double d1 = ndf_padd(SW[l * nl], ndf_pmul(t, t));
    while (l < maxl) {
      t = ndf_pmul((double)(V[(l + 1) * nl] - i), s);
      const double d2 = ndf_padd(SW[(l + 1) * nl], ndf_pmul(t, t));
      if (d1 <= d2) break;
      d1 = d2;
      ++l;
    }
    W[i * sw] = d1;
#if HAS_F
    F[i * sf] = SF[l * nl];
#endif
  }
}

extern "C" __global__ void __launch_bounds__(128) ndf_edt_pass(const ndf_edt_pass_params p) {
  for (ndf_i64 line = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x; line < p.nlines;
       line += (ndf_i64)gridDim.x * blockDim.x)
    ndf_pass_line(p, line);
}
#endif
