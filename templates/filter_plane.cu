// filter_plane.cu -- two consecutive 1-D correlation passes in one kernel:
// first along an axis Y other than the last, then along the last axis X, as
// two launches of filter_line compute them: the Y pass's double sum is
// rounded to TO (the intermediate's dtype) and read back as a double by the X
// pass, each sum in scipy's order with no fused operations, so the result
// equals the two passes (and the CPU backend) bit for bit.
//
// A block owns a tile of TY x TX outputs of one plane (the other axes fixed).
// It stages the input at Y coordinates y0 - PREY .. + H1 - 1 and X
// coordinates x0 - PREX .. + W1 - 1, each mapped by its axis's mode, as
// doubles (cval where the Y mode reads outside); computes the Y pass for
// every staged column (RY rows per thread from a register window), where
// the X mode reads outside (constant mode) the column holds cval instead, as
// the X pass of filter_line reads it; then the X pass (RX outputs per
// thread), and stores the tile with coalesced stores.
#include "ndf_common.cuh"
#include "filter_common.cuh"

typedef NDF_SLOT(TI) TI;
typedef NDF_SLOT(TO) TO;
#define CVT NDF_SLOT(CVT)
#define MODEY NDF_SLOT(MODEY)
#define MODEX NDF_SLOT(MODEX)
#define SYMY NDF_SLOT(SYMY)
#define SYMX NDF_SLOT(SYMX)
#define NTY NDF_SLOT(NTY)
#define NTX NDF_SLOT(NTX)

__constant__ const double ndf_fwy[NTY] = {NDF_SLOT(WY)};
__constant__ const double ndf_fwx[NTX] = {NDF_SLOT(WX)};

#define TY 16                  // output rows of a tile
#define TX 64                  // output columns of a tile
#define RY 4                   // Y outputs per thread and item
#define RX 4                   // X outputs per thread and item
#define NB 8                   // staging loads in flight per thread
#define H1 (TY + NTY - 1)      // staged rows
#define W1 (TX + NTX - 1)      // staged columns
#define P1 (W1 | 1)            // odd row pitch (doubles): conflict-free column reads
#define PO (TX + 1)            // pitch of the output tile
#define NTHREADS 128

// R outputs o[s], the correlation of v[s .. s + N - 1] with WARR, in scipy's
// order (filter_line.cu).  Every index is a constant once unrolled.
#define NDF_FP_TAPS(NAME, N, SYM, WARR)                                                                   \
  template <int R> __device__ __forceinline__ void NAME(const double *v, double *o) {                     \
    const int c = (N) / 2;                                                                                \
    _Pragma("unroll") for (int s = 0; s < R; s++) {                                                       \
      double acc;                                                                                         \
      if ((SYM) > 0) {                                                                                    \
        acc = __dmul_rn(v[s + c], WARR[c]);                                                               \
        _Pragma("unroll") for (int j = c; j >= 1; j--)                                                    \
            acc = __dadd_rn(acc, __dmul_rn(__dadd_rn(v[s + c - j], v[s + c + j]), WARR[c - j]));          \
      } else if ((SYM) < 0) {                                                                             \
        acc = __dmul_rn(v[s + c], WARR[c]);                                                               \
        _Pragma("unroll") for (int j = c; j >= 1; j--)                                                    \
            acc = __dadd_rn(acc, __dmul_rn(__dsub_rn(v[s + c - j], v[s + c + j]), WARR[c - j]));          \
      } else {                                                                                            \
        acc = __dmul_rn(v[s + (N) - 1], WARR[(N) - 1]);                                                   \
        _Pragma("unroll") for (int k = 0; k < (N) - 1; k++) acc = __dadd_rn(acc, __dmul_rn(v[s + k], WARR[k])); \
      }                                                                                                   \
      o[s] = acc;                                                                                         \
    }                                                                                                     \
  }
NDF_FP_TAPS(ndf_fp_y, NTY, SYMY, ndf_fwy)
NDF_FP_TAPS(ndf_fp_x, NTX, SYMX, ndf_fwx)

NDF_PARAMS(ndf_fplane_params)

extern "C" __global__ void __launch_bounds__(NTHREADS) ndf_filter_plane(const ndf_fplane_params p) {
  extern __shared__ double ndf_fplane_smem[];
  double *s1 = ndf_fplane_smem; // H1 x P1: the staged input; then TY x PO: the output tile
  double *s2 = s1 + H1 * P1;    // TY x P1: the Y pass, as the X pass reads it
  const int t = threadIdx.x;
  const ndf_i64 per = p.nty * p.ntx;
  for (ndf_i64 tile = blockIdx.x; tile < p.nouter * per; tile += gridDim.x) {
    const ndf_i64 o = tile / per, rem = tile - o * per;
    const ndf_i64 y0 = rem / p.ntx * TY, x0 = (rem - rem / p.ntx * p.ntx) * TX;
    ndf_i64 ob, ib; // in this order: NVRTC's register numbering follows it
    ndf_line_offsets(p, o, ib, ob);
    const int ty = (int)(p.ny - y0 < TY ? p.ny - y0 : TY), tx = (int)(p.nx - x0 < TX ? p.nx - x0 : TX);
    // 1. Stage H1 x W1 values, NB loads in flight per thread.
    for (int i0 = t; i0 < H1 * W1; i0 += NB * NTHREADS) {
      double v[NB];
#pragma unroll
      for (int q = 0; q < NB; q++) {
        const int i = i0 + q * NTHREADS;
        if (i < H1 * W1) {
          const int j = i / W1, c = i - j * W1;
          const ndf_i64 my = ndf_map(y0 - p.prey + j, p.ny, MODEY), mx = ndf_map(x0 - p.prex + c, p.nx, MODEX);
          v[q] = my < 0 ? p.cval : mx < 0 ? 0.0 : (double)__ldg(p.in + ib + my * p.isy + mx * p.isx);
        }
      }
#pragma unroll
      for (int q = 0; q < NB; q++) {
        const int i = i0 + q * NTHREADS;
        if (i < H1 * W1) s1[i / W1 * P1 + i % W1] = v[q];
      }
    }
    __syncthreads();
    // 2. The Y pass: item = (column c, rows k RY .. k RY + RY - 1), consecutive threads on consecutive columns.
    for (int item = t; item < W1 * (TY / RY); item += NTHREADS) {
      const int k = item / W1, c = item - k * W1;
      double res[RY];
      if (ndf_map(x0 - p.prex + c, p.nx, MODEX) < 0) {
#pragma unroll
        for (int s = 0; s < RY; s++) res[s] = p.cval;
      } else {
        double v[NTY + RY - 1];
#pragma unroll
        for (int q = 0; q < NTY + RY - 1; q++) v[q] = s1[(k * RY + q) * P1 + c];
        ndf_fp_y<RY>(v, res);
#pragma unroll
        for (int s = 0; s < RY; s++) res[s] = (double)ndf_filter_cvt<CVT, TO>(res[s]);
      }
#pragma unroll
      for (int s = 0; s < RY; s++) s2[(k * RY + s) * P1 + c] = res[s];
    }
    __syncthreads();
    // 3. The X pass: item = (row s, columns k RX .. k RX + RX - 1), consecutive threads on consecutive rows.
    for (int item = t; item < TY * (TX / RX); item += NTHREADS) {
      const int k = item / TY, s = item - k * TY;
      double v[NTX + RX - 1], res[RX];
#pragma unroll
      for (int q = 0; q < NTX + RX - 1; q++) v[q] = s2[s * P1 + k * RX + q];
      ndf_fp_x<RX>(v, res);
#pragma unroll
      for (int q = 0; q < RX; q++) s1[s * PO + k * RX + q] = res[q];
    }
    __syncthreads();
    // 4. Store the tile's ty x tx outputs.
    for (int i = t; i < ty * tx; i += NTHREADS) {
      const int s = i / tx, c = i - s * tx;
      p.out[ob + (y0 + s) * p.osy + (x0 + c) * p.osx] = ndf_filter_cvt<CVT, TO>(s1[s * PO + c]);
    }
    __syncthreads();
  }
}
