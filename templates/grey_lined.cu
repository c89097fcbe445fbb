// grey_lined.cu -- one 1-D min/max pass of a flat box along one axis by
// doubling in shared memory: ceil(log2 K) levels, every thread of the block
// working on every level, so the cost per output grows with log K, not K,
// and the block is 8 warps with 32 lines (not one warp per 32 lines as the
// serial van Herk scan of grey_line).
//
// out[x] = OP_{k=0..K-1} in[x + lo + k] along the axis, the line extended
// through the boundary mode (periodic at any distance, cval in constant mode).
//
// A block owns NL = 32 lines and one segment of S outputs of each (the
// segment starts at x0, a multiple of S).  It stages e[j] = in[x0 + lo + j],
// j in [0, E = S + K - 1), with coalesced loads exactly as grey_line (LAST =
// 0: consecutive threads take consecutive lines, the neighbours along the
// contiguous axis; LAST = 1: consecutive values of one line), then
//   m_2W[i] = OP(m_W[i], m_W[i+W])   while 2W <= K (ping-pong buffers)
//   out[i]  = OP(m_W[i], m_W[i+K-W]) (overlapping windows when K is no power of 2,
//             taken as the outputs are stored)
// Every OP keeps the operand covering earlier positions first: the result is
// the leftmost of equal extrema and the rightmost NaN of the window, as the
// left-to-right O(K) pass, van Herk and the CPU, bit for bit.
#include "ndf_common.cuh"

typedef NDF_SLOT(T) T;
#define OP NDF_SLOT(OP)
#define MODE NDF_SLOT(MODE)
#define LAST NDF_SLOT(LAST)   // 1: the processed axis is the array's last axis
#define NL 32                 // lines per block
#define NTH 256               // threads per block
#define P (NL + 1)            // padded smem row: no bank conflicts either way
#define LB 8                  // loads in flight per thread while staging

NDF_PARAMS(ndf_line_params)

extern "C" __global__ void __launch_bounds__(NTH) ndf_grey_lined(const ndf_line_params p) {
  extern __shared__ ndf_i64 ndf_lined_smem[];
  const int t = threadIdx.x;
  ndf_i64 *ibase = ndf_lined_smem, *obase = ndf_lined_smem + NL;
  T *const buf0 = (T *)(ndf_lined_smem + 2 * NL);
  T *const buf1 = buf0 + (p.S + p.K - 1) * P;
  const T cv = (T)p.cval;
  const ndf_i64 nlt = (p.nlines + NL - 1) / NL;
  for (ndf_i64 tile = blockIdx.x; tile < nlt * p.nseg; tile += gridDim.x) {
    const ndf_i64 lt = tile / p.nseg, x0 = (tile - lt * p.nseg) * p.S;
    const ndf_i64 l0 = lt * NL;
    const int ncols = (int)(p.nlines - l0 < NL ? p.nlines - l0 : NL);
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
    // Stage e into buf0[j * P + col]; element i of the staging order is
    // (col, j), stepped by NTH without a division per element.
    {
#if LAST
      int j = t % E, col = t / E;
      const int dq = NTH / E, dr = NTH - dq * E;     // NTH = dq * E + dr
#else
      int col = t % ncols, j = t / ncols;
      const int dq = NTH / ncols, dr = NTH - dq * ncols;
#endif
      const int total = E * ncols;
      for (int i0 = t; i0 < total; i0 += LB * NTH) {
        T v[LB];
        int at[LB];
#pragma unroll
        for (int u = 0; u < LB; u++) {
          at[u] = -1;
          if (i0 + u * NTH < total) {
            const ndf_i64 m = ndf_map(x0 + p.lo + j, p.n, MODE);
            v[u] = m < 0 ? cv : __ldg(p.in + ibase[col] + m * p.istr);
            at[u] = j * P + col;
#if LAST
            j += dr;
            col += dq;
            if (j >= E) { j -= E; col++; }
#else
            col += dr;
            j += dq;
            if (col >= ncols) { col -= ncols; j++; }
#endif
          }
        }
#pragma unroll
        for (int u = 0; u < LB; u++)
          if (at[u] >= 0) buf0[at[u]] = v[u];
      }
    }
    __syncthreads();
    // Doubling levels.  a holds m_W[i] for i < len = E - W + 1.
    T *a = buf0, *b = buf1;
    int W = 1, len = E;
    const int c = t % NL, r0 = t / NL; // this thread's column, first row
    for (; 2 * W <= p.K; W *= 2) {
      const int nlen = len - W;
      if (c < ncols) {
#pragma unroll 4
        for (int i = r0; i < nlen; i += NTH / NL) b[i * P + c] = ndf_pick<OP, T>(a[i * P + c], a[(i + W) * P + c]);
      }
      __syncthreads();
      T *s = a; a = b; b = s;
      len = nlen;
    }
    // The last level (overlapping windows when K is no power of 2) as the
    // values are stored, coalesced like the loads.
    const int d = p.K - W;
#if LAST
    const int sq = NTH / scnt, sr = NTH - sq * scnt;
    for (int i = t, s = t % scnt, col = t / scnt; i < scnt * ncols; i += NTH) {
#else
    const int sq = NTH / ncols, sr = NTH - sq * ncols;
    for (int i = t, col = t % ncols, s = t / ncols; i < scnt * ncols; i += NTH) {
#endif
      const T m = a[s * P + col];
      p.out[obase[col] + (x0 + s) * p.ostr] = d > 0 ? ndf_pick<OP, T>(m, a[(s + d) * P + col]) : m;
#if LAST
      s += sr;
      col += sq;
      if (s >= scnt) { s -= scnt; col++; }
#else
      col += sr;
      s += sq;
      if (col >= ncols) { col -= ncols; s++; }
#endif
    }
    __syncthreads();
  }
}
