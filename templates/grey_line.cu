// grey_line.cu -- one 1-D min/max pass of a flat box along one axis by van
// Herk/Gil-Werman: about three comparisons per output whatever the extent K.
//
// out[x] = OP_{k=0..K-1} in[x + lo + k] along the axis, the line extended
// through the boundary mode (periodic at any distance, cval in constant mode).
//
// A block owns C = blockDim.x lines and one segment of S <= K outputs of each
// (the segment starts at x0, a multiple of S).  It stages the extended values
// e[j] = in[x0 + lo + j], j in [0, S + K - 1), in shared memory, one column
// per line, with coalesced loads: for an axis other than the last (LAST = 0)
// consecutive threads take consecutive lines, i.e. neighbours along the
// contiguous last axis, and walk the processed axis; for the last axis
// (LAST = 1) consecutive threads take consecutive values of one line.  Then
// thread t alone works on column t:
//   h[s] = OP e[s .. K-1]            backward, stored over e[s]  (s < S)
//   g    = OP e[K .. s+K-1]          forward, a running value
//   out[x0 + s] = s == 0 ? h[0] : OP(h[s], g)
// which is the window e[s .. s+K-1] split at the block boundary K.  Every OP
// keeps the operand covering earlier positions first, so ties (-0.0, 0.0)
// and NaNs resolve exactly as in the left-to-right O(K) pass and the CPU.
// The results go back through shared memory and are stored coalesced too.
#include "ndf_common.cuh"

typedef NDF_SLOT(T) T;
#define OP NDF_SLOT(OP)
#define MODE NDF_SLOT(MODE)
#define LAST NDF_SLOT(LAST)   // 1: the processed axis is the array's last axis
#define LB 8                  // loads in flight per thread while staging

NDF_PARAMS(ndf_line_params)

extern "C" __global__ void __launch_bounds__(64) ndf_grey_line(const ndf_line_params p) {
  extern __shared__ ndf_i64 ndf_line_smem[];
  const int C = blockDim.x, t = threadIdx.x, P = C + 1; // P: padded row, no bank conflicts
  ndf_i64 *ibase = ndf_line_smem, *obase = ndf_line_smem + C;
  T *e = (T *)(ndf_line_smem + 2 * C);
  const T cv = (T)p.cval;
  const ndf_i64 nlt = (p.nlines + C - 1) / C;
  for (ndf_i64 tile = blockIdx.x; tile < nlt * p.nseg; tile += gridDim.x) {
    const ndf_i64 lt = tile / p.nseg, x0 = (tile - lt * p.nseg) * p.S;
    const ndf_i64 l0 = lt * C;
    const int ncols = (int)(p.nlines - l0 < C ? p.nlines - l0 : C);
    const int scnt = (int)(p.n - x0 < p.S ? p.n - x0 : p.S);
    const int E = scnt + p.K - 1;
    if (t < ncols) { // where line l0 + t starts in the input and the output
      ndf_i64 r = l0 + t, ib = 0, ob = 0;
      NDF_FOR_COORDS(r, p.nother, p.oshape, d, c,
                     ib += c * p.oistr[d];
                     ob += c * p.oostr[d];)
      ibase[t] = ib;
      obase[t] = ob;
    }
    __syncthreads();
    // Element i of the staging order is (col, j); the pair is stepped by C
    // without a division per element.  Loads go out LB at a time before
    // their stores, so a thread has LB global loads in flight rather than
    // one (with one load each the pass is latency-bound: ~8 warps per SM).
    {
#if LAST
      int j = t % E, col = t / E;
#else
      int col = t % ncols, j = t / ncols;
#endif
      const int total = E * ncols;
      for (int i0 = t; i0 < total; i0 += LB * C) {
        T v[LB];
        int at[LB];
#pragma unroll
        for (int u = 0; u < LB; u++) {
          at[u] = -1;
          if (i0 + u * C < total) {
            const ndf_i64 m = ndf_map(x0 + p.lo + j, p.n, MODE);
            v[u] = m < 0 ? cv : __ldg(p.in + ibase[col] + m * p.istr);
            at[u] = j * P + col;
#if LAST
            for (j += C; j >= E; j -= E) col++;
#else
            for (col += C; col >= ncols; col -= ncols) j++;
#endif
          }
        }
#pragma unroll
        for (int u = 0; u < LB; u++)
          if (at[u] >= 0) e[at[u]] = v[u];
      }
    }
    __syncthreads();
    if (t < ncols) {
      T h = e[(p.K - 1) * P + t];
#pragma unroll 4
      for (int j = p.K - 2; j >= 0; j--) {
        h = ndf_pick<OP, T>(e[j * P + t], h);
        if (j < scnt) e[j * P + t] = h;
      }
      T g = cv;
#pragma unroll 4
      for (int s = 1; s < scnt; s++) {
        const T v = e[(s + p.K - 1) * P + t];
        g = s == 1 ? v : ndf_pick<OP, T>(g, v);
        e[s * P + t] = ndf_pick<OP, T>(e[s * P + t], g);
      }
    }
    __syncthreads();
#if LAST
    for (int i = t, s = t % scnt, col = t / scnt; i < scnt * ncols; i += C) {
#else
    for (int i = t, col = t % ncols, s = t / ncols; i < scnt * ncols; i += C) {
#endif
      p.out[obase[col] + (x0 + s) * p.ostr] = e[s * P + col];
#if LAST
      for (s += C; s >= scnt; s -= scnt) col++;
#else
      for (col += C; col >= ncols; col -= ncols) s++;
#endif
    }
    __syncthreads();
  }
}
