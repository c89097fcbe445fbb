// grey_linev.cu -- one 1-D min/max pass of a flat box along an axis other
// than the last, by van Herk/Gil-Werman streamed by one thread per line
// segment: about three picks per output whatever the extent K, no block
// barrier, K values per thread in shared memory.
//
// out[x] = OP_{k=0..K-1} in[x + lo + k] along the axis, the line extended
// through the boundary mode (periodic at any distance, cval in constant mode).
//
// Work item = (segment, line): consecutive threads take consecutive lines,
// i.e. neighbours along the contiguous last axis, so every load and store of
// a warp covers 32 consecutive values (a 128-byte line for float32).  A
// thread owns the outputs y0 .. y0+S-1 of its line (S <= L, the segment
// length) and streams the rows e[r] = in[y0 + lo + r], r < R = S + K - 1,
// in chunks of K rows; chunk c = rows [cK, cK + K), j = r - cK:
//   g = OP(e[cK] .. e[r])                    the running prefix of the chunk
//   out[y0 + r - K + 1] = j == K - 1 ? g : OP(h[j + 1], g)     (r >= K - 1)
//   buf[j] = e[r]                                      (h[j] no longer needed)
// and at the end of a chunk, backward over buf, h[j] = OP(e[cK + j] ..
// e[cK + K - 1]), the suffixes used by the next chunk's outputs.  The window
// of output r - K + 1 is rows r - K + 1 .. r = the suffix of chunk c - 1 from
// j + 1 and the prefix of chunk c to j.  Every OP keeps the operand covering
// earlier positions first: the leftmost of equal extrema and the rightmost
// NaN of the window, as the left-to-right O(K) pass, grey_line and the CPU,
// bit for bit.  Rows are loaded U at a time, the next U while the current
// ones are processed (up to 2U loads in flight per thread: one wave of
// threads is all the parallelism a 2048^2 image offers at K = 63).
#include "ndf_common.cuh"
#include "grey_lines.cuh"

typedef NDF_SLOT(T) T;
#define OP NDF_SLOT(OP)
#define MODE NDF_SLOT(MODE)
#define U 16                  // rows per load batch

NDF_PARAMS(ndf_linev_params)

// e[u] = the extended line at y + u, u < cnt.
__device__ __forceinline__ void ndf_linev_load(T (&e)[U], const T *src, ndf_i64 y, ndf_i64 n, ndf_i64 istr,
                                               int cnt, T cv) {
  if (y >= 0 && y + U <= n) {
#pragma unroll
    for (int u = 0; u < U; u++)
      if (u < cnt) e[u] = __ldg(src + (y + u) * istr);
  } else {
#pragma unroll
    for (int u = 0; u < U; u++)
      if (u < cnt) {
        const ndf_i64 m = ndf_map(y + u, n, MODE);
        e[u] = m < 0 ? cv : __ldg(src + m * istr);
      }
  }
}

extern "C" __global__ void ndf_grey_linev(const ndf_linev_params p) {
  extern __shared__ ndf_i64 ndf_linev_smem[];
  const int nt = blockDim.x, K = p.K;
  T *const buf = (T *)ndf_linev_smem + threadIdx.x; // buf[j * nt], j < K: this thread's own
  const T cv = (T)p.cval;
  const ndf_i64 total = p.nlines * p.nseg, step = (ndf_i64)gridDim.x * nt;
  for (ndf_i64 item = (ndf_i64)blockIdx.x * nt + threadIdx.x; item < total; item += step) {
    const ndf_i64 seg = ndf_div(item, p.nlines), line = item - seg * p.nlines;
    ndf_i64 ib, ob;
    ndf_line_bases(line, p.nother, p.oshape, p.oistr, p.oostr, ib, ob);
    const T *src = p.in + ib;
    T *dst = p.out + ob;
    const ndf_i64 y0 = seg * p.L, a = y0 + p.lo, oy = y0 - (K - 1); // output of row r: oy + r
    const int S = (int)(p.n - y0 < p.L ? p.n - y0 : p.L), R = S + K - 1;
    int j = 0;
    T g = cv, e[U], nx[U];
    ndf_linev_load(e, src, a, p.n, p.istr, R < U ? R : U, cv);
    for (int r0 = 0; r0 < R; r0 += U) {
      const int cnt = R - r0 < U ? R - r0 : U;
      if (r0 + U < R) ndf_linev_load(nx, src, a + r0 + U, p.n, p.istr, R - r0 - U < U ? R - r0 - U : U, cv);
#pragma unroll
      for (int u = 0; u < U; u++) {
        if (u < cnt) {
          const T v = e[u];
          g = j == 0 ? v : ndf_pick<OP, T>(g, v);
          if (r0 + u >= K - 1) dst[(oy + r0 + u) * p.ostr] = j == K - 1 ? g : ndf_pick<OP, T>(buf[(j + 1) * nt], g);
          buf[j * nt] = v;
          if (++j == K) {
            j = 0;
            if (r0 + u + 1 < R) { // suffixes of the chunk for the next one's outputs
              T h = buf[(K - 1) * nt];
              for (int i = K - 2; i >= 0; i--) {
                h = ndf_pick<OP, T>(buf[i * nt], h);
                buf[i * nt] = h;
              }
            }
          }
        }
      }
#pragma unroll
      for (int u = 0; u < U; u++) e[u] = nx[u];
    }
  }
}
