// grey_linew.cu -- one 1-D min/max pass of a flat box along the array's last
// axis, one warp per chunk of a line, by doubling in registers with warp
// shuffles: no shared memory, no block barrier, ceil(log2 K) picks per output.
//
// out[x] = OP_{k=0..K-1} in[x + lo + k] along the axis, the line extended
// through the boundary mode (periodic at any distance, cval in constant mode).
//
// A warp owns CO = 32 RO consecutive outputs x0 .. x0+CO-1 of one line and
// loads e[i] = in[x0 + lo + i], i < 32 RI (RI = RO + NH registers per lane,
// NH = ceil((K-1)/32) of them the halo), register q of lane l holding
// e[32 q + l]: every load instruction of the warp reads 32 consecutive
// values (one 128-byte line for float32 where the axis is contiguous), RI
// independent loads in flight per lane.  Then, the extent K being a
// compile-time slot (everything below unrolls):
//   m_2W[i] = OP(m_W[i], m_W[i+W])   while 2W <= K
//   out[i]  = OP(m_W[i], m_W[i+K-W]) (overlapping windows, K no power of 2)
// where m_W[i + W] is register q (q + W/32 for W >= 32) of lane l + W, or
// register q + 1 of lane l + W - 32 past the warp's edge: one shuffle per
// register and level.  Values at positions whose window runs past 32 RI are
// garbage and never reach an output (i + K - 1 < CO + K - 1 <= 32 RI).
// Every OP keeps the operand covering earlier positions first, so the result
// is the leftmost of equal extrema and the rightmost NaN of the window: the
// left-to-right O(K) pass, grey_line (van Herk), grey_lined and the CPU, bit
// for bit.  Shuffles move the bits (NaN payloads and signed zeros kept).
#include "ndf_common.cuh"
#include "grey_lines.cuh"

typedef NDF_SLOT(T) T;
#define OP NDF_SLOT(OP)
#define MODE NDF_SLOT(MODE)
#define KK NDF_SLOT(K)        // the extent K (>= 2)
#define RO 8                  // output registers per lane: CO = 256 outputs per warp
#define NH ((KK - 1 + 31) / 32)
#define RI (RO + NH)
#define WPB 8                 // warps per block

NDF_PARAMS(ndf_linew_params)

// Warp shuffle of the element types, through their bits for floating point
// (NaN payloads and signed zeros kept); 64-bit integers as themselves,
// narrower ones through int, which holds each of their values.
__device__ __forceinline__ float ndf_shfl_bits(float v, int src) {
  return __uint_as_float(__shfl_sync(0xffffffffu, __float_as_uint(v), src));
}
__device__ __forceinline__ double ndf_shfl_bits(double v, int src) {
  return __longlong_as_double(__shfl_sync(0xffffffffu, __double_as_longlong(v), src));
}
__device__ __forceinline__ long long ndf_shfl_bits(long long v, int src) { return __shfl_sync(0xffffffffu, v, src); }
__device__ __forceinline__ unsigned long long ndf_shfl_bits(unsigned long long v, int src) {
  return __shfl_sync(0xffffffffu, v, src);
}
template <typename V> __device__ __forceinline__ V ndf_shfl_bits(V v, int src) {
  static_assert(sizeof(V) <= 4, "integer element types of up to 4 bytes");
  return (V)__shfl_sync(0xffffffffu, (int)v, src);
}

// The largest power of two W with W <= K, i.e. the width of the last level.
__device__ constexpr int ndf_linew_wlast(int k) { return k >= 2 * 1 ? 2 * ndf_linew_wlast(k / 2) : 1; }

extern "C" __global__ void __launch_bounds__(32 * WPB) ndf_grey_linew(const ndf_linew_params p) {
  const int lane = threadIdx.x & 31;
  const T cv = (T)p.cval;
  const ndf_i64 ntask = p.nlines * p.nchunk, nw = (ndf_i64)gridDim.x * WPB;
  // The task (line, chunk) is the same for all lanes of a warp: the loop and
  // the shuffles stay warp-uniform.
  for (ndf_i64 task = (ndf_i64)blockIdx.x * WPB + (threadIdx.x >> 5); task < ntask; task += nw) {
    const ndf_i64 line = ndf_div(task, p.nchunk), x0 = (task - line * p.nchunk) * (32 * RO);
    ndf_i64 ib, ob;
    ndf_line_bases(line, p.nother, p.oshape, p.oistr, p.oostr, ib, ob);
    const T *src = p.in + ib;
    T a[RI];
    const ndf_i64 first = x0 + p.lo;
    if (first >= 0 && first + 32 * RI <= p.n) {
#pragma unroll
      for (int q = 0; q < RI; q++) a[q] = __ldg(src + (first + 32 * q + lane) * p.istr);
    } else {
#pragma unroll
      for (int q = 0; q < RI; q++) {
        const ndf_i64 m = ndf_map(first + 32 * q + lane, p.n, MODE);
        a[q] = m < 0 ? cv : __ldg(src + m * p.istr);
      }
    }
    // Doubling levels W = 1, 2, 4, ... while 2W <= K.
#pragma unroll
    for (int lv = 0; lv < 16; lv++) {
      const int W = 1 << lv;
      if (2 * W > KK) break;
      if (W < 32) {
        T s[RI];
#pragma unroll
        for (int q = 0; q < RI; q++) s[q] = ndf_shfl_bits(a[q], (lane + W) & 31);
        const bool wrap = lane + W >= 32;
#pragma unroll
        for (int q = 0; q < RI; q++) a[q] = ndf_pick<OP, T>(a[q], wrap ? s[q + 1 < RI ? q + 1 : q] : s[q]);
      } else {
        const int D = W / 32;
#pragma unroll
        for (int q = 0; q + D < RI; q++) a[q] = ndf_pick<OP, T>(a[q], a[q + D]);
      }
    }
    // The last level: out[i] = OP(m_W[i], m_W[i + d]), d = K - W < W.
    constexpr int WL = ndf_linew_wlast(KK);
    constexpr int DL = KK - WL, DQ = DL / 32, DR = DL % 32;
    T o[RO];
    if (DL == 0) {
#pragma unroll
      for (int q = 0; q < RO; q++) o[q] = a[q];
    } else if (DR == 0) {
#pragma unroll
      for (int q = 0; q < RO; q++) o[q] = ndf_pick<OP, T>(a[q], a[q + DQ]);
    } else {
      T s[RO + 1];
#pragma unroll
      for (int q = 0; q <= RO; q++) s[q] = ndf_shfl_bits(a[q + DQ < RI ? q + DQ : RI - 1], (lane + DR) & 31);
      const bool wrap = lane + DR >= 32;
#pragma unroll
      for (int q = 0; q < RO; q++) o[q] = ndf_pick<OP, T>(a[q], wrap ? s[q + 1] : s[q]);
    }
    T *dst = p.out + ob;
#pragma unroll
    for (int q = 0; q < RO; q++) {
      const ndf_i64 x = x0 + 32 * q + lane;
      if (x < p.n) dst[x * p.ostr] = o[q];
    }
  }
}
