// rank_hist.cu -- median, rank and percentile filters over large box windows
// of 8-bit data: a sliding histogram (Huang's algorithm with Perreault and
// Hebert's two-level search), one histogram per thread.
//
// A thread owns one output column x and a strip of STRIP consecutive rows
// along Y.  It builds the 256-bin histogram of its first window, then walks
// down the strip: each step removes the window's top row and adds the row
// below it (2 x planes x KX updates instead of the whole window), and finds
// the rank by scanning 16 coarse bins, then the 16 bins of the chosen one.
// The histograms live in shared memory as hist[bin][thread], so the threads
// of a warp never share a bank.  Counts are 16-bit (windows below 65536
// taps).  The box spans Y, X and any spatial axes in front of Y ("planes",
// every offset tuple of the box there); out-of-image taps follow the mode.
#include "ndf_common.cuh"

typedef NDF_SLOT(T) T;
#define KIND NDF_SLOT(KIND)          /* 0 unsigned, 1 signed (8-bit) */
#define MODE NDF_SLOT(MODE)
#define RKIND NDF_SLOT(RKIND)        /* 0 median, 1 rank, 2 percentile */
#define RPARAM NDF_SLOT(RPARAM)
#define BX NDF_SLOT(BX)              /* threads per block (columns) */
#define STRIP NDF_SLOT(STRIP)        /* rows per thread */

NDF_PARAMS(ndf_hist_params)

__device__ __forceinline__ int ndf_key8(T v) {
#if KIND == 1
  return (int)(unsigned char)v ^ 0x80;
#else
  return (int)(unsigned char)v;
#endif
}

__device__ __forceinline__ T ndf_unkey8(int k) {
#if KIND == 1
  return (T)(signed char)(unsigned char)(k ^ 0x80);
#else
  return (T)k;
#endif
}

#include "ndf_rank.cuh" // ndf_rank_of: the rank among m values (m < N only under NaN omission)

// Linear offset of plane pl's lead coordinates, or -1 when a tap there reads cval.
__device__ __forceinline__ ndf_i64 ndf_plane_base(const ndf_hist_params &p, const ndf_i64 *lc, int pl) {
  ndf_i64 ib = 0;
  for (int d = p.nlead - 1; d >= 0; d--) {
    const int q = pl / p.lbox[d];
    const int off = pl - q * p.lbox[d] + p.llo[d];
    pl = q;
    const ndf_i64 m = ndf_map(lc[d] + off, p.lshape[d], MODE);
    if (m < 0) return -1;
    ib += m * p.listr[d];
  }
  return ib;
}

// Adds (delta = 1) or removes (-1) row y of every plane of the window at column x.
__device__ __forceinline__ void ndf_row(const ndf_hist_params &p, const ndf_i64 *lc, ndf_i64 y, ndf_i64 x,
                                        unsigned short *hist, unsigned short *coarse, int delta, int cvkey) {
  const ndf_i64 my = ndf_map(y, p.ny, MODE);
  for (int pl = 0; pl < p.nplanes; pl++) {
    const ndf_i64 ib = ndf_plane_base(p, lc, pl);
    const T *row = p.in + ib + my * p.iys;
    for (int dx = 0; dx < p.kx; dx++) {
      const ndf_i64 mx = ndf_map(x + p.xlo + dx, p.nx, MODE);
      const int k = (ib < 0 || my < 0 || mx < 0) ? cvkey : ndf_key8(row[mx * p.ixs]);
      hist[k * BX] += delta;
      coarse[(k >> 4) * BX] += delta;
    }
  }
}

extern "C" __global__ void __launch_bounds__(BX) ndf_rank_hist(const ndf_hist_params p) {
  __shared__ unsigned short hist_all[256 * BX];
  __shared__ unsigned short coarse_all[16 * BX];
  unsigned short *hist = hist_all + threadIdx.x, *coarse = coarse_all + threadIdx.x;
  const int cvkey = ndf_key8((T)p.cval);
  const int k = ndf_rank_of(p.n);
  const ndf_i64 nwork = p.nxb * p.nstrips * p.nouter;
  for (ndf_i64 w = blockIdx.x; w < nwork; w += gridDim.x) {
    ndf_i64 r = w / p.nxb;
    const ndf_i64 xb = w - r * p.nxb;
    ndf_i64 o = r / p.nstrips;
    const ndf_i64 strip = r - o * p.nstrips;
    ndf_i64 lc[NDF_MAX_NDIM], obase = 0;
    NDF_FOR_COORDS(o, p.nlead, p.lshape, d, c,
                   lc[d] = c;
                   obase += c * p.lostr[d];)
    const ndf_i64 x = xb * BX + threadIdx.x;
    if (x >= p.nx) continue; // no barriers below: each thread works alone
    const ndf_i64 y0 = strip * STRIP, y1 = min(p.ny, y0 + STRIP);
    for (int b = 0; b < 256; b++) hist[b * BX] = 0;
    for (int b = 0; b < 16; b++) coarse[b * BX] = 0;
    for (int dy = 0; dy < p.ky; dy++) ndf_row(p, lc, y0 + p.ylo + dy, x, hist, coarse, 1, cvkey);
    T *out = p.out + obase + x * p.oxs;
    for (ndf_i64 y = y0; y < y1; y++) {
      int acc = 0, c = 0;
      while (acc + coarse[c * BX] <= k) acc += coarse[(c++) * BX];
      int b = c * 16;
      while (acc + hist[b * BX] <= k) acc += hist[(b++) * BX];
      out[y * p.oys] = ndf_unkey8(b);
      if (y + 1 < y1) {
        ndf_row(p, lc, y + p.ylo, x, hist, coarse, -1, cvkey);
        ndf_row(p, lc, y + p.ylo + p.ky, x, hist, coarse, 1, cvkey);
      }
    }
  }
}
