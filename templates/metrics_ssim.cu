// metrics_ssim.cu -- SSIM with the five filters fused: one pass per spatial
// axis carries the five quantities x, y, x*x, y*y, x*y together, where the
// composed path (metrics.cu + the linear filters) filters five arrays one
// after the other.
//
// A pass computes exactly what a pass of the linear filters computes (in
// double, no fused operations; the result rounded to F): the uniform window
// as scipy's running mean (the sum of the first window, then the entering tap
// minus the leaving one, each output the sum divided by K), or the symmetric
// Gaussian correlation in scipy's order (acc = v[c] w[c]; acc += (v[c-j] +
// v[c+j]) w[c-j], j = c..1).  Lines are extended in reflect mode.  So the map
// equals the composed path's, and the CPU backend's, bit for bit.
//
//   ndf_ssim_lines  one thread walks one line (any window: the running mean
//                   needs the whole line in order; Gaussian windows wider
//                   than the segment kernel's RAD).
//   ndf_ssim_seg    Gaussian windows of radius RAD (a slot): one thread
//                   computes SEG consecutive outputs of one line, holding
//                   the SEG + 2 RAD inputs of each quantity in registers as
//                   double (each input read and converted once, where the
//                   line kernel reads K taps per output) and the weights in
//                   the parameter bank.  A warp runs over 32 neighbouring
//                   lines (the axis is strided: every load is one 128-byte
//                   row) or along one line (the axis is contiguous).  Blocks
//                   never straddle images, and a LAST block sums S over its
//                   outputs by a fixed tree into one partial per block.
//
//   FIRST  the pass reads x (TA) and y (TB) with their strides and forms the
//          five quantities in F (x*x ... rounded in F, as the composed prep);
//          otherwise it reads five contiguous F arrays.
//   LAST   the pass forms S from the five filtered values (the composed
//          path's formula, metrics.cu) and writes the map and the sums of S
//          over the cropped interior (per line, or per block); otherwise it
//          writes five contiguous F arrays.
//   IDENT  the window of one tap (uniform, win_size 1): the pass copies.
#include "ndf_common.cuh"

typedef NDF_SLOT(TA) TA;
typedef NDF_SLOT(TB) TB;
typedef NDF_SLOT(F) F;
typedef NDF_SLOT(FO) FO;
#define FIRST NDF_SLOT(FIRST)
#define LAST NDF_SLOT(LAST)
#define GAUSS NDF_SLOT(GAUSS)
#define RAD NDF_SLOT(RAD)

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

// S from the five filtered values, each rounded to F (the composed path's formula, metrics.cu).
__device__ __forceinline__ F ndf_sl_s(const ndf_ssim_lines_params &p, F ux, F uy, F uxx, F uyy, F uxy) {
  const F cn = (F)p.cov_norm, c1 = (F)p.C1, c2 = (F)p.C2, two = (F)2;
  const F vx = ndf_sl_mul(cn, ndf_sl_sub(uxx, ndf_sl_mul(ux, ux)));
  const F vy = ndf_sl_mul(cn, ndf_sl_sub(uyy, ndf_sl_mul(uy, uy)));
  const F vxy = ndf_sl_mul(cn, ndf_sl_sub(uxy, ndf_sl_mul(ux, uy)));
  const F a1 = ndf_sl_add(ndf_sl_mul(ndf_sl_mul(two, ux), uy), c1);
  const F a2 = ndf_sl_add(ndf_sl_mul(two, vxy), c2);
  const F b1 = ndf_sl_add(ndf_sl_add(ndf_sl_mul(ux, ux), ndf_sl_mul(uy, uy)), c1);
  const F b2 = ndf_sl_add(ndf_sl_add(vx, vy), c2);
  return ndf_sl_div(ndf_sl_mul(a1, a2), ndf_sl_mul(b1, b2));
}

// The filtered values r at coordinate l: stored, or turned into S.
__device__ __forceinline__ void ndf_sl_emit(const ndf_ssim_lines_params &p, ndf_i64 iu, ndf_i64 ifu, ndf_i64 l,
                                            const double r[5], bool crop_ok, double &acc) {
#if LAST
  const F s = ndf_sl_s(p, (F)r[0], (F)r[1], (F)r[2], (F)r[3], (F)r[4]);
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

// The offsets of line `line` (the other axes in array order): into a, b, the
// contiguous arrays and the map; crop_ok when the line lies in the cropped
// interior of its other spatial axes.
__device__ __forceinline__ void ndf_sl_line(const ndf_ssim_lines_params &p, ndf_i64 line, ndf_i64 &ia, ndf_i64 &ib,
                                            ndf_i64 &iu, ndf_i64 &ifu, bool &crop_ok) {
  ndf_i64 r = line;
  ia = ib = iu = ifu = 0;
  crop_ok = true;
  NDF_FOR_COORDS(r, p.nother, p.oshape, d, c,
                 ia += c * p.oastr[d];
                 ib += c * p.obstr[d];
                 iu += c * p.oustr[d];
                 ifu += c * p.ofstr[d];
                 if (p.ocrop[d]) crop_ok = crop_ok && c >= p.pad && c < p.oshape[d] - p.pad;)
}

#if NDF_KERNEL(ndf_ssim_lines)
extern "C" __global__ void __launch_bounds__(128) ndf_ssim_lines(const ndf_ssim_lines_params p) {
  for (ndf_i64 line = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x; line < p.nlines;
       line += (ndf_i64)gridDim.x * blockDim.x) {
    ndf_i64 ia, ib, iu, ifu;
    bool crop_ok;
    ndf_sl_line(p, line, ia, ib, iu, ifu, crop_ok);
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
#endif

#if NDF_KERNEL(ndf_ssim_seg)
#define NDF_SL_SEG 8                        // outputs per thread
#define NDF_SL_WIN (NDF_SL_SEG + 2 * RAD) // inputs per thread and quantity
#define NDF_SL_BLOCK 256

__device__ __forceinline__ const F *ndf_sl_u(const ndf_ssim_lines_params &p, int k) {
  return k == 0 ? p.u0 : k == 1 ? p.u1 : k == 2 ? p.u2 : k == 3 ? p.u3 : p.u4;
}
__device__ __forceinline__ F *ndf_sl_o(const ndf_ssim_lines_params &p, int k) {
  return k == 0 ? p.o0 : k == 1 ? p.o1 : k == 2 ? p.o2 : k == 3 ? p.o3 : p.o4;
}
// Quantity k of the pixel pair (x, y): x, y, x*x, y*y, x*y, rounded in F.
__device__ __forceinline__ F ndf_sl_q(int k, F x, F y) {
  return k == 0 ? x : k == 1 ? y : k == 2 ? ndf_sl_mul(x, x) : k == 3 ? ndf_sl_mul(y, y) : ndf_sl_mul(x, y);
}
// Coordinate m of the line, reflected unless the whole window lies inside.
__device__ __forceinline__ ndf_i64 ndf_sl_at(ndf_i64 m, ndf_i64 n, bool inside) {
  return inside ? m : ndf_map(m, n, NDF_REFLECT);
}

extern "C" __global__ void __launch_bounds__(NDF_SL_BLOCK) ndf_ssim_seg(const ndf_ssim_lines_params p) {
  // Block b works on image b / bpi; its items are (line, segment) pairs of that image.
  const ndf_i64 img = blockIdx.x / p.bpi;
  const ndf_i64 it = (ndf_i64)(blockIdx.x - img * p.bpi) * NDF_SL_BLOCK + threadIdx.x;
  double acc = 0;
  if (it < p.ipi) {
    ndf_i64 lin, seg;
    if (p.along) {
      lin = it / p.nseg;
      seg = it - lin * p.nseg;
    } else {
      seg = it / p.lpi;
      lin = it - seg * p.lpi;
    }
    ndf_i64 ia, ib, iu, ifu;
    bool crop_ok;
    ndf_sl_line(p, img * p.lpi + lin, ia, ib, iu, ifu, crop_ok);
    const ndf_i64 n = p.n, l0 = seg * NDF_SL_SEG, m0 = l0 - RAD;
    const bool inside = m0 >= 0 && l0 + NDF_SL_SEG + RAD <= n;
#if FIRST
    F xa[NDF_SL_WIN], ya[NDF_SL_WIN];
#pragma unroll
    for (int i = 0; i < NDF_SL_WIN; i++) {
      const ndf_i64 m = ndf_sl_at(m0 + i, n, inside);
      xa[i] = (F)(double)p.a[ia + m * p.astr];
      ya[i] = (F)(double)p.b[ib + m * p.bstr];
    }
#else
    // The window's offsets, mapped once for the five quantities (five inlined copies of the
    // reflection per input made NVRTC take seconds over this kernel).
    ndf_i64 uo[NDF_SL_WIN];
#pragma unroll
    for (int i = 0; i < NDF_SL_WIN; i++) uo[i] = ndf_sl_at(m0 + i, n, inside) * p.ustr;
#endif
#if LAST
    F res[5][NDF_SL_SEG];
#endif
#pragma unroll
    for (int k = 0; k < 5; k++) {
      double win[NDF_SL_WIN];
#if FIRST
#pragma unroll
      for (int i = 0; i < NDF_SL_WIN; i++) win[i] = (double)ndf_sl_q(k, xa[i], ya[i]);
#else
      const F *u = ndf_sl_u(p, k) + iu;
#pragma unroll
      for (int i = 0; i < NDF_SL_WIN; i++) win[i] = (double)__ldg(u + uo[i]);
#endif
#if !LAST
      F *o = ndf_sl_o(p, k) + iu;
#endif
#pragma unroll
      for (int t = 0; t < NDF_SL_SEG; t++) {
        double v = __dmul_rn(win[t + RAD], p.wt[RAD]);
#pragma unroll
        for (int j = RAD; j >= 1; j--) v = __dadd_rn(v, __dmul_rn(__dadd_rn(win[t + RAD - j], win[t + RAD + j]), p.wt[RAD - j]));
#if LAST
        res[k][t] = (F)v;
#else
        if (l0 + t < n) o[(l0 + t) * p.ustr] = (F)v;
#endif
      }
    }
#if LAST
#pragma unroll
    for (int t = 0; t < NDF_SL_SEG; t++) {
      const ndf_i64 l = l0 + t;
      if (l < n) {
        const F s = ndf_sl_s(p, res[0][t], res[1][t], res[2][t], res[3][t], res[4][t]);
        if (p.full) p.full[ifu + l * p.fstr] = (FO)s;
        if (crop_ok && l >= p.pad && l < n - p.pad) acc += (double)s;
      }
    }
#endif
  }
#if LAST
  if (p.part) { // the block's sum by a fixed tree: the same on every run
    __shared__ double sh[NDF_SL_BLOCK];
    sh[threadIdx.x] = acc;
    __syncthreads();
    for (int s = NDF_SL_BLOCK / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s) sh[threadIdx.x] = __dadd_rn(sh[threadIdx.x], sh[threadIdx.x + s]);
      __syncthreads();
    }
    if (threadIdx.x == 0) p.part[blockIdx.x] = sh[0];
  }
#endif
}
#endif
