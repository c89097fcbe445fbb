// filter_line.cu -- one 1-D correlation pass along one axis, as scipy's
// NI_Correlate1D computes it: every output is a double sum in scipy's order,
// with no fused multiply-adds (the __d*_rn intrinsics are never contracted),
// so a pass equals the CPU backend's bit for bit.
//
// The line is extended by the boundary mode: output x reads the coordinates
// x - PRE .. x - PRE + NTAP - 1 (PRE = NTAP/2 + origin), periodic at any
// distance, cval in constant mode.  With c = NTAP/2, w the weights and
// v[k] the value read at x - PRE + k:
//   SYM  1 (symmetric):      acc = v[c] w[c];  acc += (v[c-j] + v[c+j]) w[c-j], j = c..1
//   SYM -1 (antisymmetric):  acc = v[c] w[c];  acc += (v[c-j] - v[c+j]) w[c-j], j = c..1
//   SYM  0:                  acc = v[NTAP-1] w[NTAP-1];  acc += v[k] w[k], k = 0..NTAP-2
// The weights are compiled into the kernel (WTAB 0: WEIGHTS, exact hex
// literals) or read from a device table (WTAB 1, long kernels).
//
// A block owns C = blockDim.x lines and one segment of S outputs of each (the
// segment starts at x0, a multiple of S).  It stages the extended values
// e[j] (the coordinate x0 - PRE + j, j < S + NTAP - 1) in shared memory as
// doubles, one column per line, with coalesced loads: for an axis other than
// the last (LAST = 0) consecutive threads take consecutive lines, neighbours
// along the contiguous last axis; for the last axis (LAST = 1) consecutive
// values of one line; each thread issues NB loads before it stores them.
// Thread t then computes the S outputs of column t, writing output s over
// e[s] (no later output of the column reads it; RING: a kernel of at most 33
// taps slides a window of NTAP registers down the column, one shared-memory
// load per output instead of NTAP), and the block stores them, converted to
// TO, with coalesced stores again.
#include "ndf_common.cuh"
#include "filter_common.cuh"

typedef NDF_SLOT(TI) TI;
typedef NDF_SLOT(TO) TO;
#define CVT NDF_SLOT(CVT)
#define MODE NDF_SLOT(MODE)
#define LAST NDF_SLOT(LAST)
#define SYM NDF_SLOT(SYM)
#define NTAP NDF_SLOT(NTAP)
#define WTAB NDF_SLOT(WTAB)

// RING: the taps of an output from a register window (short kernels, weights
// compiled in); else read from shared memory at every tap.
#define RING (NTAP <= 33 && !WTAB)
#define NB 8 // staging loads in flight per thread

#if WTAB
#define W(k) __ldg(p.w + (k))
#else
__constant__ const double ndf_fw[NTAP] = {NDF_SLOT(WEIGHTS)};
#define W(k) ndf_fw[k]
#endif

NDF_PARAMS(ndf_fline_params)

extern "C" __global__ void __launch_bounds__(128) ndf_filter_line(const ndf_fline_params p) {
  extern __shared__ double ndf_fline_smem[];
  const int C = blockDim.x, t = threadIdx.x, P = C + 1; // P: padded row, no bank conflicts
  ndf_i64 *ibase = (ndf_i64 *)ndf_fline_smem, *obase = ibase + C;
  double *e = ndf_fline_smem + 2 * C;
  const int c = NTAP / 2;
  const ndf_i64 nlt = (p.nlines + C - 1) / C;
  for (ndf_i64 tile = blockIdx.x; tile < nlt * p.nseg; tile += gridDim.x) {
    const ndf_i64 lt = tile / p.nseg, x0 = (tile - lt * p.nseg) * p.S;
    const ndf_i64 l0 = lt * C;
    const int ncols = ndf_line_cols(p, l0, C);
    const int scnt = (int)(p.n - x0 < p.S ? p.n - x0 : p.S);
    const int E = scnt + NTAP - 1;
    ndf_line_bases(p, l0, t, ncols, ibase, obase);
    __syncthreads();
    NDF_LINE_STAGE(p, ibase, e, P, C, t, ncols, 0, E, x0 - p.pre);
    __syncthreads();
    if (t < ncols) {
#if RING
      // Row r of column t in win[r % NTAP]; s0 steps by NTAP, so every index of
      // win is a constant once the loop over u is unrolled (registers, and one
      // shared-memory load per output).
      const double *colv = e + t;
      double win[NTAP];
#pragma unroll
      for (int k = 0; k < NTAP - 1; k++) win[k] = colv[k * P];
      for (int s0 = 0; s0 < scnt; s0 += NTAP) {
#pragma unroll
        for (int u = 0; u < NTAP; u++) {
          if (s0 + u < scnt) {
            win[(u + NTAP - 1) % NTAP] = colv[(s0 + u + NTAP - 1) * P];
#define V(k) win[(u + (k)) % NTAP]
            double acc;
#if SYM > 0
            acc = __dmul_rn(V(c), W(c));
#pragma unroll
            for (int j = c; j >= 1; j--) acc = __dadd_rn(acc, __dmul_rn(__dadd_rn(V(c - j), V(c + j)), W(c - j)));
#elif SYM < 0
            acc = __dmul_rn(V(c), W(c));
#pragma unroll
            for (int j = c; j >= 1; j--) acc = __dadd_rn(acc, __dmul_rn(__dsub_rn(V(c - j), V(c + j)), W(c - j)));
#else
            acc = __dmul_rn(V(NTAP - 1), W(NTAP - 1));
#pragma unroll
            for (int k = 0; k < NTAP - 1; k++) acc = __dadd_rn(acc, __dmul_rn(V(k), W(k)));
#endif
#undef V
            e[(s0 + u) * P + t] = acc; // row s0 + u is in win already
          }
        }
      }
#else
      for (int s = 0; s < scnt; s++) {
        const double *v = e + s * P + t; // v[k * P]: the value at x0 + s - PRE + k
        double acc;
#if SYM > 0
        acc = __dmul_rn(v[c * P], W(c));
#pragma unroll 8
        for (int j = c; j >= 1; j--) acc = __dadd_rn(acc, __dmul_rn(__dadd_rn(v[(c - j) * P], v[(c + j) * P]), W(c - j)));
#elif SYM < 0
        acc = __dmul_rn(v[c * P], W(c));
#pragma unroll 8
        for (int j = c; j >= 1; j--) acc = __dadd_rn(acc, __dmul_rn(__dsub_rn(v[(c - j) * P], v[(c + j) * P]), W(c - j)));
#else
        acc = __dmul_rn(v[(NTAP - 1) * P], W(NTAP - 1));
#pragma unroll 8
        for (int k = 0; k < NTAP - 1; k++) acc = __dadd_rn(acc, __dmul_rn(v[k * P], W(k)));
#endif
        e[s * P + t] = acc;
      }
#endif
    }
    __syncthreads();
#if LAST
    for (int i = t, s = t % scnt, col = t / scnt; i < scnt * ncols; i += C) {
#else
    for (int i = t, col = t % ncols, s = t / ncols; i < scnt * ncols; i += C) {
#endif
      p.out[obase[col] + (x0 + s) * p.ostr] = ndf_filter_cvt<CVT, TO>(e[s * P + col]);
#if LAST
      for (s += C; s >= scnt; s -= scnt) col++;
#else
      for (col += C; col >= ncols; col -= ncols) s++;
#endif
    }
    __syncthreads();
  }
}
