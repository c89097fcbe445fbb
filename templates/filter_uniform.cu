// filter_uniform.cu -- one 1-D uniform (running mean) pass along one axis, as
// scipy's NI_UniformFilter1D computes it: the sum of the first window, then
// for every next output the entering tap minus the leaving one added to the
// running sum, each output the running sum divided by K, all in double with
// no fused operations, so it equals the CPU backend bit for bit.  The running
// sum makes a line sequential: one thread walks one line.  Output x's window
// reads the coordinates x - pre .. x - pre + K - 1 of the line extended by
// the boundary mode (cval in constant mode).
//
//   ndf_filter_uniform_tile  a block of C = blockDim.x threads owns C lines
//       and walks them together in chunks of at most S outputs.  A chunk
//       starting at output x0 stages, as doubles in shared memory (one column
//       per line), the rows r = 0 .. cnt + K - 1 holding the coordinates
//       x0 - 1 - pre + r, with coalesced loads: for an axis other than the
//       last (LAST 0) consecutive threads take consecutive lines, for the
//       last axis (LAST 1) consecutive values of one line.  Output x0 + s
//       leaves row s and enters row s + K; thread t advances the running sum
//       of column t and writes output s over row s (read for the last time);
//       the block stores the chunk with coalesced stores, and rows
//       cnt .. cnt + K - 1 become the next chunk's rows 0 .. K - 1 (only rows
//       K .. are loaded again).  Output 0 is the sum of rows 1 .. K.
//   ndf_filter_uniform       one thread per line reading global memory
//       directly (consecutive threads on consecutive lines): windows too long
//       for the tile kernel's shared memory.
#include "ndf_common.cuh"
#include "filter_common.cuh"

typedef NDF_SLOT(TI) TI;
typedef NDF_SLOT(TO) TO;
#define CVT NDF_SLOT(CVT)
#define MODE NDF_SLOT(MODE)
#define LAST NDF_SLOT(LAST)
#define U 8 // steps whose loads are in flight together

NDF_PARAMS(ndf_funi_params)

#if NDF_KERNEL(ndf_filter_uniform)
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
#endif

#if NDF_KERNEL(ndf_filter_uniform_tile)
#define NB 16 // staging loads in flight per thread
extern "C" __global__ void __launch_bounds__(32) ndf_filter_uniform_tile(const ndf_funi_params p) {
  extern __shared__ double ndf_funi_smem[];
  const int C = blockDim.x, t = threadIdx.x, P = C + 1; // P: padded row
  ndf_i64 *ibase = (ndf_i64 *)ndf_funi_smem, *obase = ibase + C;
  double *e = ndf_funi_smem + 2 * C;
  const int K = (int)p.K;
  const double Kd = (double)p.K;
  const ndf_i64 nlt = (p.nlines + C - 1) / C;
  for (ndf_i64 lt = blockIdx.x; lt < nlt; lt += gridDim.x) {
    const ndf_i64 l0 = lt * C;
    const int ncols = (int)(p.nlines - l0 < C ? p.nlines - l0 : C);
    if (t < ncols) {
      ndf_i64 r = l0 + t, ib = 0, ob = 0;
      for (int d = p.nother - 1; d >= 0; d--) {
        const ndf_i64 q = r / p.oshape[d], x = r - q * p.oshape[d];
        r = q;
        ib += x * p.oistr[d];
        ob += x * p.oostr[d];
      }
      ibase[t] = ib;
      obase[t] = ob;
    }
    __syncthreads();
    double tmp = 0.0;
    double *col = e + t;
    for (ndf_i64 x0 = 0; x0 < p.n; x0 += p.S) {
      const int cnt = (int)(p.n - x0 < p.S ? p.n - x0 : p.S);
      const int r0 = x0 == 0 ? 0 : K, nr = cnt + K - r0; // rows r0 .. cnt + K - 1 are loaded
      const ndf_i64 c0 = x0 - 1 - p.pre + r0;              // the coordinate of row r0
      // 1. Stage, NB loads in flight per thread before their stores.
      for (int i0 = t; i0 < nr * ncols; i0 += NB * C) {
        double v[NB];
        int at[NB];
#pragma unroll
        for (int q = 0; q < NB; q++) {
          const int i = i0 + q * C;
          at[q] = -1;
          if (i < nr * ncols) {
#if LAST
            const int c = i / nr, j = i - c * nr;
#else
            const int j = i / ncols, c = i - j * ncols;
#endif
            const ndf_i64 m = ndf_map(c0 + j, p.n, MODE);
            v[q] = m < 0 ? p.cval : (double)__ldg(p.in + ibase[c] + m * p.istr);
            at[q] = (r0 + j) * P + c;
          }
        }
#pragma unroll
        for (int q = 0; q < NB; q++)
          if (at[q] >= 0) e[at[q]] = v[q];
      }
      __syncthreads();
      // 2. The running sum of column t.
      if (t < ncols) {
        int s = 0;
        if (x0 == 0) {
          for (int k = 1; k <= K; k++) tmp = __dadd_rn(tmp, col[k * P]);
          col[0] = __ddiv_rn(tmp, Kd);
          s = 1;
        }
        // U steps at a time: their loads are issued before the stores of the
        // outputs (which go to rows the later steps do not read).
        for (; s + U <= cnt; s += U) {
          double enter[U], leave[U];
#pragma unroll
          for (int q = 0; q < U; q++) {
            enter[q] = col[(s + q + K) * P];
            leave[q] = col[(s + q) * P];
          }
#pragma unroll
          for (int q = 0; q < U; q++) {
            tmp = __dadd_rn(tmp, __dsub_rn(enter[q], leave[q]));
            enter[q] = __ddiv_rn(tmp, Kd);
          }
#pragma unroll
          for (int q = 0; q < U; q++) col[(s + q) * P] = enter[q];
        }
        for (; s < cnt; s++) {
          tmp = __dadd_rn(tmp, __dsub_rn(col[(s + K) * P], col[s * P]));
          col[s * P] = __ddiv_rn(tmp, Kd);
        }
      }
      __syncthreads();
      // 3. Store the chunk's outputs.
      for (int i = t; i < cnt * ncols; i += C) {
#if LAST
        const int c = i / cnt, s = i - c * cnt;
#else
        const int s = i / ncols, c = i - s * ncols;
#endif
        p.out[obase[c] + (x0 + s) * p.ostr] = ndf_filter_cvt<CVT, TO>(e[s * P + c]);
      }
      __syncthreads();
      // 4. Rows cnt .. cnt + K - 1 become rows 0 .. K - 1 (forward: a source row is read before it is written).
      if (t < ncols && x0 + cnt < p.n)
        for (int k = 0; k < K; k++) col[k * P] = col[(cnt + k) * P];
      __syncthreads();
    }
  }
}
#endif
