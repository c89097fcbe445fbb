// metrics_ssim.cu -- SSIM with the five filters fused: one pass per spatial
// axis carries the five quantities x, y, x*x, y*y, x*y together, where the
// composed path (metrics.cu + the linear filters) filters five arrays one
// after the other.
//
// A pass computes exactly what a pass of the linear filters computes (one
// thread walks one line, in double, no fused operations; the result rounded
// to F): the uniform window as scipy's running mean (the sum of the first
// window, then the entering tap minus the leaving one, each output the sum
// divided by K), or the symmetric Gaussian correlation in scipy's order
// (acc = v[c] w[c]; acc += (v[c-j] + v[c+j]) w[c-j], j = c..1).  Lines are
// extended in reflect mode.  So the map equals the composed path's, and the
// CPU backend's, bit for bit.
//
//   FIRST  the pass reads x (TA) and y (TB) with their strides and forms the
//          five quantities in F (x*x ... rounded in F, as the composed prep);
//          otherwise it reads five contiguous F arrays.
//   LAST   the pass forms S from the five filtered values (the composed
//          path's formula, metrics.cu) and writes the map and, per line, the
//          sum of S over the cropped interior; otherwise it writes five
//          contiguous F arrays.
//   IDENT  the window of one tap (uniform, win_size 1): the pass copies.
#include "ndf_common.cuh"

typedef NDF_SLOT(TA) TA;
typedef NDF_SLOT(TB) TB;
typedef NDF_SLOT(F) F;
typedef NDF_SLOT(FO) FO;
#define FIRST NDF_SLOT(FIRST)
#define LAST NDF_SLOT(LAST)
#define GAUSS NDF_SLOT(GAUSS)

__device__ __forceinline__ float ndf_sl_mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double ndf_sl_mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float ndf_sl_add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double ndf_sl_add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float ndf_sl_sub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double ndf_sl_sub(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ float ndf_sl_div(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double ndf_sl_div(double a, double b) { return __ddiv_rn(a, b); }

NDF_PARAMS(ndf_ssim_lines_params)

// The five quantities at coordinate m (in [0, n)) of the line.
__device__ __forceinline__ void ndf_sl_load(const ndf_ssim_lines_params &p, ndf_i64 ia, ndf_i64 ib, ndf_i64 iu,
                                            ndf_i64 m, double q[5]) {
#if FIRST
  const F x = (F)(double)p.a[ia + m * p.astr], y = (F)(double)p.b[ib + m * p.bstr];
  q[0] = (double)x;
  q[1] = (double)y;
  q[2] = (double)ndf_sl_mul(x, x);
  q[3] = (double)ndf_sl_mul(y, y);
  q[4] = (double)ndf_sl_mul(x, y);
#else
  const ndf_i64 o = iu + m * p.ustr;
  q[0] = (double)__ldg(p.u0 + o);
  q[1] = (double)__ldg(p.u1 + o);
  q[2] = (double)__ldg(p.u2 + o);
  q[3] = (double)__ldg(p.u3 + o);
  q[4] = (double)__ldg(p.u4 + o);
#endif
}

// The filtered values r at coordinate l: stored, or turned into S.
__device__ __forceinline__ void ndf_sl_emit(const ndf_ssim_lines_params &p, ndf_i64 iu, ndf_i64 ifu, ndf_i64 l,
                                            const double r[5], bool crop_ok, double &acc) {
#if LAST
  const F ux = (F)r[0], uy = (F)r[1], uxx = (F)r[2], uyy = (F)r[3], uxy = (F)r[4];
  const F cn = (F)p.cov_norm, c1 = (F)p.C1, c2 = (F)p.C2, two = (F)2;
  const F vx = ndf_sl_mul(cn, ndf_sl_sub(uxx, ndf_sl_mul(ux, ux)));
  const F vy = ndf_sl_mul(cn, ndf_sl_sub(uyy, ndf_sl_mul(uy, uy)));
  const F vxy = ndf_sl_mul(cn, ndf_sl_sub(uxy, ndf_sl_mul(ux, uy)));
  const F a1 = ndf_sl_add(ndf_sl_mul(ndf_sl_mul(two, ux), uy), c1);
  const F a2 = ndf_sl_add(ndf_sl_mul(two, vxy), c2);
  const F b1 = ndf_sl_add(ndf_sl_add(ndf_sl_mul(ux, ux), ndf_sl_mul(uy, uy)), c1);
  const F b2 = ndf_sl_add(ndf_sl_add(vx, vy), c2);
  const F s = ndf_sl_div(ndf_sl_mul(a1, a2), ndf_sl_mul(b1, b2));
  if (p.full) p.full[ifu + l * p.fstr] = (FO)s;
  if (crop_ok && l >= p.pad && l < p.n - p.pad) acc += (double)s;
#else
  const ndf_i64 o = iu + l * p.ustr;
  p.o0[o] = (F)r[0];
  p.o1[o] = (F)r[1];
  p.o2[o] = (F)r[2];
  p.o3[o] = (F)r[3];
  p.o4[o] = (F)r[4];
#endif
}

extern "C" __global__ void __launch_bounds__(128) ndf_ssim_lines(const ndf_ssim_lines_params p) {
  for (ndf_i64 line = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x; line < p.nlines;
       line += (ndf_i64)gridDim.x * blockDim.x) {
    ndf_i64 r = line, ia = 0, ib = 0, iu = 0, ifu = 0;
    bool crop_ok = true;
    for (int d = p.nother - 1; d >= 0; d--) {
      const ndf_i64 q = r / p.oshape[d], c = r - q * p.oshape[d];
      r = q;
      ia += c * p.oastr[d];
      ib += c * p.obstr[d];
      iu += c * p.oustr[d];
      ifu += c * p.ofstr[d];
      if (p.ocrop[d]) crop_ok = crop_ok && c >= p.pad && c < p.oshape[d] - p.pad;
    }
    double acc = 0, q[5], v[5];
#if GAUSS
    const int c = (int)p.pre; // the centre tap; K = 2c + 1
    for (ndf_i64 l = 0; l < p.n; l++) {
      ndf_sl_load(p, ia, ib, iu, ndf_map(l, p.n, NDF_REFLECT), q);
      const double wc = __ldg(p.w + c);
#pragma unroll
      for (int k = 0; k < 5; k++) v[k] = __dmul_rn(q[k], wc);
      for (int j = c; j >= 1; j--) {
        double lo[5], hi[5];
        ndf_sl_load(p, ia, ib, iu, ndf_map(l - j, p.n, NDF_REFLECT), lo);
        ndf_sl_load(p, ia, ib, iu, ndf_map(l + j, p.n, NDF_REFLECT), hi);
        const double wj = __ldg(p.w + c - j);
#pragma unroll
        for (int k = 0; k < 5; k++) v[k] = __dadd_rn(v[k], __dmul_rn(__dadd_rn(lo[k], hi[k]), wj));
      }
      ndf_sl_emit(p, iu, ifu, l, v, crop_ok, acc);
    }
#else
    if (p.ident) {
      for (ndf_i64 l = 0; l < p.n; l++) {
        ndf_sl_load(p, ia, ib, iu, l, q);
        ndf_sl_emit(p, iu, ifu, l, q, crop_ok, acc);
      }
    } else {
      const double K = (double)p.K;
      double t[5] = {0, 0, 0, 0, 0};
      for (ndf_i64 k = 0; k < p.K; k++) {
        ndf_sl_load(p, ia, ib, iu, ndf_map(k - p.pre, p.n, NDF_REFLECT), q);
#pragma unroll
        for (int i = 0; i < 5; i++) t[i] = __dadd_rn(t[i], q[i]);
      }
#pragma unroll
      for (int i = 0; i < 5; i++) v[i] = __ddiv_rn(t[i], K);
      ndf_sl_emit(p, iu, ifu, 0, v, crop_ok, acc);
      for (ndf_i64 l = 1; l < p.n; l++) {
        double in[5], out[5];
        ndf_sl_load(p, ia, ib, iu, ndf_map(l - 1 + p.K - p.pre, p.n, NDF_REFLECT), in);
        ndf_sl_load(p, ia, ib, iu, ndf_map(l - 1 - p.pre, p.n, NDF_REFLECT), out);
#pragma unroll
        for (int i = 0; i < 5; i++) {
          t[i] = __dadd_rn(t[i], __dsub_rn(in[i], out[i]));
          v[i] = __ddiv_rn(t[i], K);
        }
        ndf_sl_emit(p, iu, ifu, l, v, crop_ok, acc);
      }
    }
#endif
#if LAST
    if (p.part) p.part[line] = acc;
#endif
  }
}
