// distance_edt.cu -- one pass of the exact Euclidean distance transform
// (scipy.ndimage.distance_transform_edt) along one axis, bit-identical to the
// CPU backend (runtime/distance.c) and so to scipy.
//
// A pass solves, on every line along its axis,
//     out(i) = min over sites x of  W(x) + ((x - i) * s)^2
// where a site is a voxel that already has a feature (the background in the
// first pass) and W its squared distance over the earlier axes.  Maurer's
// lower envelope is built per line (the stack keeps a site unless
//     c*W(top) - b*W(prev) - a*W(new) - a*b*c > 0),
// and the query keeps the earlier site while d1 <= d2, exactly as scipy's
// _VoronoiFT.  Every double operation is an explicit _rn intrinsic in
// scipy's order, so no fused multiply-add can change a tie.
//
// Mapping (one thread per line, coalesced on every axis):
//   ndf_edt_lines  axes other than the last: line (o, j) of the working
//                  layout [outer][n][inner]; threads of a warp take
//                  consecutive j, so every load and store is coalesced.
//   ndf_edt_rows   the last axis: a warp takes 32 rows and streams them
//                  through a 32 x 32 shared-memory tile (a transpose), so
//                  global reads and writes run along the rows.
// The stack of a line keeps its sites (W, position, feature: 16 bytes,
// scratch [l][line]); passes ping-pong between two (feature, W) buffers.
//
// FIRST: the pass reads the input (any dtype, strides; non-zero =
// foreground) instead of a source buffer: sites are the background, W = 0,
// feature = the voxel's flat index in its image.  LAST: the pass writes the
// distances (sqrt, then DOUT) and the indices (decoded coordinates) with the
// outputs' strides instead of a destination buffer.  A line with no site
// keeps feature -1; in the last pass that means the image has no background
// and the distance is scipy's, from the virtual feature (-1, 0, ..., 0).
#include "ndf_common.cuh"

typedef NDF_SLOT(TIN) TIN;     // input element type (FIRST)
typedef NDF_SLOT(DOUT) DOUT;   // distance type: double or float (LAST)
// W as stored between passes: double, or unsigned int when the host found the
// arithmetic exact (integer sampling) and every W below 2^32: W is then an
// integer, so the conversions both ways are exact (12 -> 8 bytes per voxel
// of scratch traffic per pass).  Computed in double either way.
typedef NDF_SLOT(WT) WT;
#define FIRST NDF_SLOT(FIRST)
#define LAST NDF_SLOT(LAST)
#define HAS_DIST NDF_SLOT(HAS_DIST)
#define HAS_IDX NDF_SLOT(HAS_IDX)

// One site of an envelope: its W, position along the line and feature, in
// one 16-byte load (a pop or an advance costs one dependent load).
struct ndf_site {
  double w;
  int v, f;
};

NDF_PARAMS(ndf_edt_params)

__device__ __forceinline__ double ndf_mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ double ndf_add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ double ndf_sub(double a, double b) { return __dsub_rn(a, b); }

// scipy's removal test: true when the top site (v1, w1) is hidden by (v0, w0) and (x, wx).
__device__ __forceinline__ bool ndf_hidden(ndf_i64 v0, double w0, ndf_i64 v1, double w1, ndf_i64 x, double wx,
                                           double s) {
  const double a = ndf_mul((double)(v1 - v0), s);
  const double b = ndf_mul((double)(x - v1), s);
  const double c = ndf_add(a, b);
  const double t = ndf_sub(ndf_sub(ndf_sub(ndf_mul(c, w1), ndf_mul(b, w0)), ndf_mul(a, wx)), ndf_mul(ndf_mul(a, b), c));
  return !(t <= 0.0);
}

// The query's distance of site v (W = w) from position i.
__device__ __forceinline__ double ndf_qd(double w, ndf_i64 v, ndf_i64 i, double s) {
  const double t = ndf_mul((double)(v - i), s);
  return ndf_add(w, ndf_mul(t, t));
}

// Offset of working index `flat` (C order over shape[0..nd)) in an array with
// strides str, leaving out axis `skip` (its coordinate is added by the caller).
__device__ __forceinline__ ndf_i64 ndf_offset(const ndf_edt_params &p, ndf_i64 flat, const ndf_i64 *str) {
  ndf_i64 off = 0;
  for (int a = p.nd - 1; a >= 0; a--) {
    const ndf_i64 q = flat / p.shape[a];
    off += (flat - q * p.shape[a]) * str[a];
    flat = q;
  }
  return off;
}

// scipy's distance of a voxel of an image without background (feature (-1, 0, ...)).
__device__ double ndf_nobg(const ndf_edt_params &p, ndf_i64 flat) {
  ndf_i64 r = flat % p.npix;
  const int nsp = p.nd - p.nb;
  ndf_i64 co[NDF_MAX_NDIM];
  for (int d = nsp - 1; d >= 0; d--) {
    const ndf_i64 q = r / p.shape[p.nb + d];
    co[d] = r - q * p.shape[p.nb + d];
    r = q;
  }
  double acc = 0.0;
  for (int d = 0; d < nsp; d++) {
    const double t = ndf_mul((double)((d == 0 ? -1 : 0) - co[d]), p.samp[d]);
    acc = d == 0 ? ndf_mul(t, t) : ndf_add(acc, ndf_mul(t, t));
  }
  return acc;
}

// Writes the result of one voxel (LAST): distance and coordinates of feature f.
__device__ __forceinline__ void ndf_emit(const ndf_edt_params &p, ndf_i64 doff, ndf_i64 xoff, int f, double d2) {
#if HAS_DIST
  p.dist[doff] = (DOUT)sqrt(d2);
#endif
#if HAS_IDX
  const int nsp = p.nd - p.nb;
  if (f < 0) {
    for (int k = 0; k < nsp; k++) p.idx[xoff + k * p.xk] = k == 0 ? -1 : 0;
  } else {
    int r = f; // a flat index in an image (int32), so every extent fits an int: 32-bit divisions
    for (int k = nsp - 1; k >= 0; k--) {
      const int e = (int)p.shape[p.nb + k], q = r / e;
      p.idx[xoff + k * p.xk] = r - q * e;
      r = q;
    }
  }
#endif
}

// ---- axes other than the last: one thread per line ----------------------------------

#if NDF_KERNEL(ndf_edt_lines)
extern "C" __global__ void __launch_bounds__(128) ndf_edt_lines(const ndf_edt_params p) {
  const ndf_i64 n = p.n, inner = p.inner;
  for (ndf_i64 L = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x; L < p.nlines; L += (ndf_i64)gridDim.x * blockDim.x) {
    const ndf_i64 o = L / inner, j = L - o * inner;
    const ndf_i64 w0 = o * n * inner + j; // working index of x = 0
#if FIRST
    const ndf_i64 ib = ndf_offset(p, w0, p.istr), is = p.istr[p.axis];
#endif
#if LAST
    const ndf_i64 db = ndf_offset(p, w0, p.dstr), ds = p.dstr[p.axis];
    const ndf_i64 xb = ndf_offset(p, w0, p.xstr), xs = p.xstr[p.axis];
#endif
    ndf_site *stk = p.stack + L;
    const ndf_i64 sl = p.nlines;
    ndf_i64 l = -1;
    // Build the envelope.  The top two sites live in registers.
    ndf_i64 vt = 0, vp = 0;
    double wt = 0.0, wp = 0.0;
    // The line is read 8 voxels at a time, all 8 loads in flight before the
    // first is used (coalesced across the warp's lines).
    for (ndf_i64 xb8 = 0; xb8 < n; xb8 += 8) {
      int fb[8];
      double wb[8];
#pragma unroll
      for (int u = 0; u < 8; u++) {
        const ndf_i64 x = xb8 + u;
#if FIRST
        fb[u] = x < n && p.in[ib + x * is] == (TIN)0 ? (int)((w0 + x * inner) % p.npix) : -1;
        wb[u] = 0.0;
#else
        fb[u] = x < n ? p.sfeat[w0 + x * inner] : -1; // every voxel of the source was written
        wb[u] = x < n ? (double)p.sw[w0 + x * inner] : 0.0;
#endif
      }
#pragma unroll
      for (int u = 0; u < 8; u++) {
        const ndf_i64 x = xb8 + u;
        const int fx = fb[u];
        const double wx = wb[u];
        if (fx < 0) continue; // also x >= n
        while (l >= 1 && ndf_hidden(vp, wp, vt, wt, x, wx, p.s)) {
          --l;
          vt = vp;
          wt = wp;
          if (l >= 1) {
            const ndf_site e = stk[(l - 1) * sl];
            vp = e.v;
            wp = e.w;
          }
        }
        ++l;
        ndf_site e;
        e.w = wx;
        e.v = (int)x;
        e.f = fx;
        stk[l * sl] = e;
        vp = vt;
        wp = wt;
        vt = x;
        wt = wx;
      }
    }
    if (l < 0) { // no site on this line
      for (ndf_i64 i = 0; i < n; i++) {
#if LAST
        ndf_emit(p, db + i * ds, xb + i * xs, -1, ndf_nobg(p, w0 + i * inner));
#else
        p.dfeat[w0 + i * inner] = -1;
        p.dw[w0 + i * inner] = (WT)0;
#endif
      }
      continue;
    }
    const ndf_i64 maxl = l;
    l = 0;
    // The next four sites are loaded ahead (n1 .. n4 = sites l + 1 .. l + 4).
    ndf_site cur = stk[0];
    ndf_site n1 = maxl >= 1 ? stk[sl] : cur, n2 = maxl >= 2 ? stk[2 * sl] : cur;
    ndf_site n3 = maxl >= 3 ? stk[3 * sl] : cur, n4 = maxl >= 4 ? stk[4 * sl] : cur;
    for (ndf_i64 i = 0; i < n; i++) {
      double d1 = ndf_qd(cur.w, cur.v, i, p.s);
      while (l < maxl) {
        const double d2 = ndf_qd(n1.w, n1.v, i, p.s);
        if (d1 <= d2) break;
        d1 = d2;
        cur = n1;
        n1 = n2;
        n2 = n3;
        n3 = n4;
        ++l;
        if (l + 4 <= maxl) n4 = stk[(l + 4) * sl];
      }
      const int f = cur.f;
#if LAST
      ndf_emit(p, db + i * ds, xb + i * xs, f, d1);
#else
      p.dfeat[w0 + i * inner] = f;
      p.dw[w0 + i * inner] = (WT)d1;
#endif
    }
  }
}
#endif

// ---- the first pass on an axis other than the last: segmented scans ---------------
//
// With W = 0 the envelope holds every background voxel and the query picks
// the nearer of the previous and the next background voxel, the previous on
// a tie (the squared products of distinct integer distances never round to
// the same double), so the first pass needs no envelope: a block takes
// blockDim.x (8, 16 or 32) consecutive lines (threadIdx.x, coalesced) and cuts
// each into blockDim.y segments (blockDim.x * blockDim.y <= 512; 3 blocks per SM).  Each thread finds its segment's first and last background, the
// block exchanges them in shared memory, then each thread sweeps its segment
// backwards (the next background, kept in the destination's feature slot) and
// forwards (the previous one; the choice; feature and W written).
#if FIRST && !LAST
// The body of ndf_edt_first (512-thread blocks, 3 per SM) and ndf_edt_first1k
// (1024-thread blocks, for the passes where the host takes them: edt_first1k
// in distance_cuda.c);
// sfirst / slast: the block's shared exchange, blockDim.x * blockDim.y ints each.
__device__ __forceinline__ void ndf_edt_first_body(const ndf_edt_params &p, int *sfirst, int *slast) {
  const int n = (int)p.n;
  const ndf_i64 inner = p.inner;
  const int tx = threadIdx.x, ty = threadIdx.y, nseg = blockDim.y, lw = blockDim.x;
  const int seg = (n + nseg - 1) / nseg, x0 = ty * seg < n ? ty * seg : n, x1 = x0 + seg < n ? x0 + seg : n;
  const ndf_i64 ngroups = (p.nlines + lw - 1) / lw;
  for (ndf_i64 g = blockIdx.x; g < ngroups; g += gridDim.x) {
    const ndf_i64 L = g * lw + tx;
    const bool active = L < p.nlines;
    const ndf_i64 o = L / inner, j = L - o * inner;
    const ndf_i64 w0 = o * n * inner + j;
    const ndf_i64 ib = active ? ndf_offset(p, w0, p.istr) : 0, is = p.istr[p.axis];
    int first = -1, last = -1;
    if (active)
      for (int x = x0; x < x1; x++)
        if (p.in[ib + x * is] == (TIN)0) {
          if (first < 0) first = x;
          last = x;
        }
    sfirst[ty * lw + tx] = first;
    slast[ty * lw + tx] = last;
    __syncthreads();
    int prev = -1, next = -1;
    for (int k = ty - 1; k >= 0 && prev < 0; k--) prev = slast[k * lw + tx];
    for (int k = ty + 1; k < nseg && next < 0; k++) next = sfirst[k * lw + tx];
    __syncthreads(); // the exchange is read before the next group overwrites it
    if (!active) continue;
    for (int x = x1 - 1; x >= x0; x--) { // next background at or after x
      if (p.in[ib + x * is] == (TIN)0) next = x;
      p.dfeat[w0 + x * inner] = next;
    }
    for (int x = x0; x < x1; x++) {
      const ndf_i64 wi = w0 + x * inner;
      const int q = p.dfeat[wi];
      if (q == x) prev = x;
      int v;
      double d;
      if (prev < 0 && q < 0) {
        p.dfeat[wi] = -1;
        p.dw[wi] = (WT)0;
        continue;
      } else if (q < 0) {
        v = prev;
        d = ndf_qd(0.0, prev, x, p.s);
      } else if (prev < 0) {
        v = q;
        d = ndf_qd(0.0, q, x, p.s);
      } else {
        const double dp = ndf_qd(0.0, prev, x, p.s), dq = ndf_qd(0.0, q, x, p.s);
        v = dp <= dq ? prev : q;
        d = dp <= dq ? dp : dq;
      }
      p.dfeat[wi] = (int)((w0 + v * inner) % p.npix);
      p.dw[wi] = (WT)d;
    }
  }
}

#if NDF_KERNEL(ndf_edt_first)
extern "C" __global__ void __launch_bounds__(512, 3) ndf_edt_first(const ndf_edt_params p) {
  __shared__ int sfirst[512], slast[512]; // [segment * lw + line in block]
  ndf_edt_first_body(p, sfirst, slast);
}
#endif

#if NDF_KERNEL(ndf_edt_first1k)
extern "C" __global__ void __launch_bounds__(1024) ndf_edt_first1k(const ndf_edt_params p) {
  __shared__ int sfirst[1024], slast[1024];
  ndf_edt_first_body(p, sfirst, slast);
}
#endif
#endif

// ---- the last axis: a warp per 32 rows, through a shared-memory tile ---------------

#define NDF_TILE 32

#if NDF_KERNEL(ndf_edt_rows)
extern "C" __global__ void __launch_bounds__(NDF_TILE) ndf_edt_rows(const ndf_edt_params p) {
  __shared__ int tf[NDF_TILE][NDF_TILE + 1];
  __shared__ double tw[NDF_TILE][NDF_TILE + 1];
  const int lane = threadIdx.x;
  const ndf_i64 n = p.n;
  const ndf_i64 ngroups = (p.nlines + NDF_TILE - 1) / NDF_TILE;
  for (ndf_i64 g = blockIdx.x; g < ngroups; g += gridDim.x) {
    const ndf_i64 r0 = g * NDF_TILE, row = r0 + lane;
    const bool active = row < p.nlines;
    const int nrows = p.nlines - r0 < NDF_TILE ? (int)(p.nlines - r0) : NDF_TILE;
    const ndf_i64 w0 = (active ? row : r0) * n; // working index of this lane's row start
#if FIRST
    const ndf_i64 ib = ndf_offset(p, w0, p.istr), is = p.istr[p.axis];
#endif
#if LAST
    const ndf_i64 db = ndf_offset(p, w0, p.dstr), ds = p.dstr[p.axis];
    const ndf_i64 xb = ndf_offset(p, w0, p.xstr), xs = p.xstr[p.axis];
#endif
    ndf_site *stk = p.stack + row;
    const ndf_i64 sl = p.nlines;
    ndf_i64 l = -1, vt = 0, vp = 0;
    double wt = 0.0, wp = 0.0;
    // Phase 1: stream the rows through the tile and build each row's envelope.
    for (ndf_i64 x0 = 0; x0 < n; x0 += NDF_TILE) {
      const ndf_i64 x = x0 + lane;
#pragma unroll 8
      for (int k = 0; k < nrows; k++) { // row r0 + k, column x: coalesced along the row
#if FIRST
        const ndf_i64 rb = __shfl_sync(0xffffffffu, ib, k);
        if (x < n) tf[k][lane] = p.in[rb + x * is] != (TIN)0 ? -1 : 0;
#else
        if (x < n) {
          tf[k][lane] = p.sfeat[(r0 + k) * n + x];
          tw[k][lane] = (double)p.sw[(r0 + k) * n + x];
        }
#endif
      }
      __syncwarp();
      if (active) {
        const ndf_i64 m = n - x0 < NDF_TILE ? n - x0 : NDF_TILE;
        for (ndf_i64 c = 0; c < m; c++) {
          if (tf[lane][c] < 0) continue;
          const ndf_i64 xx = x0 + c;
#if FIRST
          const double wx = 0.0;
          const int fx = (int)((w0 + xx) % p.npix);
#else
          const double wx = tw[lane][c];
          const int fx = tf[lane][c];
#endif
          while (l >= 1 && ndf_hidden(vp, wp, vt, wt, xx, wx, p.s)) {
            --l;
            vt = vp;
            wt = wp;
            if (l >= 1) {
              const ndf_site e = stk[(l - 1) * sl];
              vp = e.v;
              wp = e.w;
            }
          }
          ++l;
          ndf_site e;
          e.w = wx;
          e.v = (int)xx;
          e.f = fx;
          stk[l * sl] = e;
          vp = vt;
          wp = wt;
          vt = xx;
          wt = wx;
        }
      }
      __syncwarp();
    }
    // Phase 2: answer the queries of a chunk into the tile, then write it out along the rows.
    const ndf_i64 maxl = l;
    l = 0;
    ndf_site cur;
    cur.w = 0.0;
    cur.v = cur.f = 0;
    ndf_site n1 = cur, n2 = cur, n3 = cur, n4 = cur; // sites l + 1 .. l + 4, loaded ahead
    if (active && maxl >= 0) {
      cur = stk[0];
      if (maxl >= 1) n1 = stk[sl];
      if (maxl >= 2) n2 = stk[2 * sl];
      if (maxl >= 3) n3 = stk[3 * sl];
      if (maxl >= 4) n4 = stk[4 * sl];
    }
    for (ndf_i64 x0 = 0; x0 < n; x0 += NDF_TILE) {
      const ndf_i64 m = n - x0 < NDF_TILE ? n - x0 : NDF_TILE;
      if (active) {
        for (ndf_i64 c = 0; c < m; c++) {
          const ndf_i64 i = x0 + c;
          if (maxl < 0) {
            tf[lane][c] = -1;
#if LAST
            tw[lane][c] = ndf_nobg(p, w0 + i);
#else
            tw[lane][c] = 0.0;
#endif
            continue;
          }
          double d1 = ndf_qd(cur.w, cur.v, i, p.s);
          while (l < maxl) {
            const double d2 = ndf_qd(n1.w, n1.v, i, p.s);
            if (d1 <= d2) break;
            d1 = d2;
            cur = n1;
            n1 = n2;
            n2 = n3;
            n3 = n4;
            ++l;
            if (l + 4 <= maxl) n4 = stk[(l + 4) * sl];
          }
          tf[lane][c] = cur.f;
          tw[lane][c] = d1;
        }
      }
      __syncwarp();
      const ndf_i64 x = x0 + lane;
#pragma unroll 8
      for (int k = 0; k < nrows; k++) { // every lane shuffles; lanes past the row end do not store
#if LAST
        const ndf_i64 rdb = __shfl_sync(0xffffffffu, db, k), rxb = __shfl_sync(0xffffffffu, xb, k);
        if (x < n) ndf_emit(p, rdb + x * ds, rxb + x * xs, tf[k][lane], tw[k][lane]);
#else
        if (x < n) {
          p.dfeat[(r0 + k) * n + x] = tf[k][lane];
          p.dw[(r0 + k) * n + x] = (WT)tw[k][lane];
        }
#endif
      }
      __syncwarp();
    }
  }
}
#endif

// Steps 1-2 of a warp's envelope (ndf_edt_wrows, ndf_edt_wlines).  S holds
// the line's n sites in segment layout (site x at slot (x / m) wstride + x % m,
// feature -1: not a site); on return the envelope is S[0, G), G returned to
// every lane.  Called by all 32 lanes of a warp (threadIdx.x = lane).
//
// tree = 1: the 32 segment envelopes are merged pairwise in 5 levels (level
// h: lane 2 h t merges the envelope at lane 2 h t + h into its own, the 2 h
// lanes of the pair copy the rest), instead of lane 0 merging all 31 in
// order.  A merge is the same step as the in-order merge -- the right
// envelope's sites fed to the left stack with scipy's test until one is
// pushed without a pop, the rest kept -- applied to two envelopes of
// adjacent ranges, which is what the in-order merge already relies on (the
// stack so far is the envelope of a prefix); so both give the sequential
// stack (checked against it by a host emulation on random lines with ties).
#if !FIRST
__device__ int ndf_wenv(ndf_site *S, ndf_i64 n, ndf_i64 m, ndf_i64 wstride, double s, int tree) {
  const unsigned full = 0xffffffffu;
  const int lane = threadIdx.x;
  // 1. Each lane: the envelope of its segment [lane wseg, (lane + 1) wseg),
  //    built in place at S + lane * wstride (the stack never passes the
  //    site being read); the top two sites in registers.
  const ndf_i64 x0 = (ndf_i64)lane * m, x1 = x0 + m < n ? x0 + m : n;
  ndf_site *B = S + (x0 < n ? (ndf_i64)lane * wstride : 0);
  int len = 0;
  ndf_site top, prv;
  top.w = prv.w = 0.0;
  top.v = top.f = prv.v = prv.f = 0;
  for (ndf_i64 j = 0; j < x1 - x0; j++) {
    const ndf_site e = B[j];
    if (e.f < 0) continue;
    while (len >= 2 && ndf_hidden(prv.v, prv.w, top.v, top.w, e.v, e.w, s)) {
      --len;
      top = prv;
      if (len >= 2) prv = B[len - 2];
    }
    B[len++] = e; // len <= j: at most the slot just read
    prv = top;
    top = e;
  }
  __syncwarp();
  if (tree) {
    // 2'. Pairwise merges: after level h, lane 2 h t holds (len) the envelope of
    //     segments [2 h t, 2 h t + 2 h) at S + 2 h t wstride.
    for (int h = 1; h < 32; h <<= 1) {
      const int lead = lane & ~(2 * h - 1);
      const int lb = __shfl_down_sync(full, len, h); // the right envelope's length (lead + h < 32)
      ndf_site *A = S + (ndf_i64)lead * wstride;
      const ndf_site *Bh = S + (ndf_i64)(lead + h) * wstride;
      int j = 0, g = len;
      if (lane == lead) {
        while (j < lb) {
          const ndf_site e = Bh[j];
          bool popped = false;
          while (g >= 2 && ndf_hidden(A[g - 2].v, A[g - 2].w, A[g - 1].v, A[g - 1].w, e.v, e.w, s)) {
            --g;
            popped = true;
          }
          A[g++] = e; // A + g <= Bh + j: the left envelope has at most h m <= h wstride sites
          ++j;
          if (j >= 2 && !popped) break; // the rest of the right envelope stays
        }
      }
      j = __shfl_sync(full, j, lead);
      g = __shfl_sync(full, g, lead);
      const int rem = __shfl_sync(full, lb, lead) - j;
      int most = rem; // the loop below runs the same count on every lane
#pragma unroll
      for (int o = 16; o >= 1; o >>= 1) {
        const int other = __shfl_xor_sync(full, most, o);
        most = other > most ? other : most;
      }
      __syncwarp();
      for (int c0 = 0; c0 < most; c0 += 2 * h) { // Bh[j, lb) -> A[g, g + rem): destination below the source
        const int c = c0 + (lane - lead);
        ndf_site e;
        if (c < rem) e = Bh[j + c];
        __syncwarp();
        if (c < rem) A[g + c] = e;
        __syncwarp();
      }
      len = lane == lead ? g + rem : 0;
    }
    return __shfl_sync(full, len, 0);
  }
  // 2. Lane 0 merges segment k into the stack S[0, G) (G <= k wseg <= k wstride: in place).
  int G = __shfl_sync(full, len, 0);
  for (int k = 1; k < 32; k++) {
    const int lk = __shfl_sync(full, len, k);
    if (lk == 0) continue; // uniform
    const ndf_site *Bk = S + (ndf_i64)k * wstride;
    int j = 0, g = G;
    if (lane == 0) {
      while (j < lk) {
        const ndf_site e = Bk[j];
        bool popped = false;
        while (g >= 2 && ndf_hidden(S[g - 2].v, S[g - 2].w, S[g - 1].v, S[g - 1].w, e.v, e.w, s)) {
          --g;
          popped = true;
        }
        S[g++] = e; // g <= k wstride + j: at most the slot just read
        ++j;
        if (j >= 2 && !popped) break; // Bk[j - 1] sits on Bk[j - 2]: the rest of the segment stays
      }
    }
    j = __shfl_sync(full, j, 0);
    g = __shfl_sync(full, g, 0);
    __syncwarp();
    const int rem = lk - j; // Bk[j, lk) -> S[g, g + rem), g <= k wstride + j: copy in chunks of 32
    for (int c0 = 0; c0 < rem; c0 += 32) {
      ndf_site e;
      const int c = c0 + lane;
      if (c < rem) e = Bk[j + c];
      __syncwarp();
      if (c < rem) S[g + c] = e;
      __syncwarp();
    }
    G = g + rem;
  }
  __syncwarp();
  return G;
}
#endif

// Lane 0 builds the envelope of a whole staged row S[0, n) in place, as
// ndf_wenv's step 1 does for one segment (scipy's sites, tests and order:
// the same stack bit for bit), with a shorter dependent chain per site.
// Every site is pushed, so when site x arrives the top is always the
// previous site; when that one was pushed without a pop, the one below is
// the site before it.  So first (ndf_wenv1_pre, every lane) T[x] = the
// outcome of scipy's test of x against (x - 2, x - 1) for every x whose two
// predecessors are sites (1: the top stays, 2: it goes; 0: not known); then
// lane 0 walks the sites and, where x - 1 was pushed without a pop, takes
// T[x] instead of computing the same test (same operands, same operations,
// same result); after a pop it tests as scipy does.  The chain per site is
// then a shared load that does not depend on the stack.  Also: int
// positions (32-bit conversions), the next site and its T loaded ahead, and
// a = (top - prev) s carried.  Returns the stack's length to every lane.
// (ndf_edt_wrows without exact arithmetic under edt.serial=new; not the
// default: on the H200 it takes about 20% more time than ndf_wenv on the
// 1024^2 sampling + indices workload.)
#if !FIRST
__device__ __forceinline__ void ndf_wenv1_pre(const ndf_site *S, unsigned char *T, int n, double s, int lane) {
  for (int x = lane; x < n; x += 32) {
    unsigned char t = 0;
    if (x >= 2 && S[x].f >= 0 && S[x - 1].f >= 0 && S[x - 2].f >= 0)
      t = ndf_hidden(x - 2, S[x - 2].w, x - 1, S[x - 1].w, x, S[x].w, s) ? 2 : 1;
    T[x] = t;
  }
}

__device__ int ndf_wenv1(ndf_site *S, unsigned char *T, int n, double s) {
  ndf_wenv1_pre(S, T, n, s, threadIdx.x);
  __syncwarp();
  int len = 0;
  if (threadIdx.x == 0 && n > 0) {
    int tv = 0, pv = 0;         // positions of the top and the previous site
    double tw = 0.0, pw = 0.0;  // their W
    double a = 0.0;             // (tv - pv) s while len >= 2
    bool clean = false;         // the top is site x - 1, pushed without a pop, over site x - 2
    ndf_site e = S[0];
    unsigned char te = T[0];
    for (int j = 0; j < n; j++) {
      const int jn = j + 1 < n ? j + 1 : j;
      const ndf_site nx = S[jn]; // in flight during the tests (len <= j: not overwritten)
      const unsigned char tn = T[jn];
      if (e.f >= 0) {
        const int x = e.v;
        const double wx = e.w;
        double b = 0.0;
        bool tested = false; // b = (x - tv) s was computed against the current top
        if (clean && te == 1) { // scipy's test against (x - 2, x - 1) keeps the top: push
        } else {
          if (clean && te == 2) { // the same test removes the top: pop it, then test as scipy does
            --len;
            tv = pv;
            tw = pw;
            if (len >= 2) {
              const ndf_site q = S[len - 2];
              pv = q.v;
              pw = q.w;
              a = ndf_mul((double)(tv - pv), s);
            }
          }
          while (len >= 2) {
            b = ndf_mul((double)(x - tv), s);
            const double c = ndf_add(a, b);
            const double t =
                ndf_sub(ndf_sub(ndf_sub(ndf_mul(c, tw), ndf_mul(b, pw)), ndf_mul(a, wx)), ndf_mul(ndf_mul(a, b), c));
            if (t <= 0.0) { // the top stays (ndf_hidden: !(t <= 0))
              tested = true;
              break;
            }
            --len;
            tv = pv;
            tw = pw;
            if (len >= 2) {
              const ndf_site q = S[len - 2];
              pv = q.v;
              pw = q.w;
              a = ndf_mul((double)(tv - pv), s);
            }
          }
        }
        S[len++] = e;
        if (len >= 2) a = tested ? b : ndf_mul((double)(x - tv), s);
        // the next site's T assumes (x - 1, x) on top: x - 1 was the top when x came and x popped nothing
        // (any pop takes x - 1 first)
        clean = len >= 2 && tv == x - 1;
        pv = tv;
        pw = tw;
        tv = x;
        tw = wx;
      } else {
        clean = false;
      }
      e = nx;
      te = tn;
    }
  }
  __syncwarp();
  return __shfl_sync(0xffffffffu, len, 0);
}
#endif

// The whole warp builds a row's envelope with scipy's sequential stack, bit
// for bit, without a serial chain over the row (ndf_edt_wrows without exact
// arithmetic, p.wfast == 2, the default).  The sequential build is a linked
// stack: site x, when it arrives, is pushed on top of below(x) = the site
// reached from the previous site y by following below() while scipy's test
// hides y under (below(y), x) -- the same tests, in the same order, as the
// array stack (the top is always the previous site: every site is pushed).
// So the history is the array below[] and it solves, for every site x in
// order, below(x) = walk(x; below of sites < x): a triangular system with one
// solution.  Lane k owns segment k (sites in the segment layout, slot
// (x / wseg) wstride + x % wseg, odd wstride: lanes in different banks) and
// runs the sequential build of its segment on top of the stack the previous
// round left below it (array P; its own new values in C): round 1 takes
// every earlier segment's below as "nothing below" (-1).  A lane builds again
// when a slot it read (on the chain below its segment) changed since its last
// build; when no lane changes, every lane's values are its walk over the
// final values of the segments before it, i.e. the system holds everywhere:
// scipy's history exactly (after round r lanes 0..r-1 are exact, so at most
// 33 rounds; 3 on the benchmark's rows).  Pointers are slots (monotone in x).
// Then a site is on the final stack iff no later site y has below(y) below it
// (a suffix minimum), and the warp compacts the stack into S[0, G) in order
// (ascending chunks of 32 positions; a site's rank <= its position <= its
// slot, so no chunk overwrites a slot still to be read).  Shared memory: 32
// wstride sites, then P and C (ints) and R (bytes), 25 bytes per slot.
// Returns G to every lane.
#if !FIRST
// ndf_hidden with 32-bit positions (the differences convert exactly either way: the same bits).
__device__ __forceinline__ bool ndf_hidden32(int v0, double w0, int v1, double w1, int x, double wx, double s) {
  const double a = ndf_mul((double)(v1 - v0), s);
  const double b = ndf_mul((double)(x - v1), s);
  const double c = ndf_add(a, b);
  const double t = ndf_sub(ndf_sub(ndf_sub(ndf_mul(c, w1), ndf_mul(b, w0)), ndf_mul(a, wx)), ndf_mul(ndf_mul(a, b), c));
  return !(t <= 0.0);
}

__device__ int ndf_wenvp(ndf_site *S, ndf_i64 n64, ndf_i64 m64, ndf_i64 wstride64, double s) {
  const unsigned full = 0xffffffffu;
  const int lane = threadIdx.x;
  const int n = (int)n64, m = (int)m64, wstride = (int)wstride64;
  int *P = (int *)(S + 32 * wstride), *C = P + 32 * wstride;
  unsigned char *R = (unsigned char *)(C + 32 * wstride);
  const int xs0 = lane * m < n ? lane * m : n;
  const int len = xs0 + m < n ? m : n - xs0; // sites of this lane's segment
  const int base = lane * wstride;           // its first slot
  int last = -1;                             // the slot of its last site
  for (int j = 0; j < len; j++) {
    P[base + j] = -1;
    C[base + j] = -1;
    R[base + j] = 0;
    if (S[base + j].f >= 0) last = base + j;
  }
  // the last site before the segment: an exclusive max-scan of `last` (slots grow with the lane)
  int ps = last;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int t = __shfl_up_sync(full, ps, o);
    if (lane >= o && t > ps) ps = t;
  }
  int ps0 = __shfl_up_sync(full, ps, 1);
  if (lane == 0) ps0 = -1;
  __syncwarp();
  // Rounds.  r0: the round of this lane's last build; dmin: the lowest slot whose P it used
  // then (all on the stack left of it: the chain ps0, P[ps0], ...).  A lane is a candidate
  // when a lane to its left changed in the last round, and builds again only when a slot of
  // its chain down to dmin changed since r0 (R: the round of each slot's last change; the
  // chain is followed in its current values, so if none changed it is the chain it read).
  int r0 = 1, dmin = 0x7fffffff;
  bool redo = len > 0;
  for (int round = 1;; round++) {
    bool changed = false;
    if (redo && round > 1) { // a candidate: did its chain change?
      bool need = false;
      for (int e = ps0; e >= 0 && e >= dmin && !need; e = P[e]) need = R[e] >= r0;
      redo = need;
    }
    if (redo) {
      r0 = round;
      dmin = 0x7fffffff;
      // The top (slot t, site tc) and the site below it (slot b, site bs) in registers: after a
      // push they are (x, its below), so a site that pops nothing costs one test and no load;
      // each pop loads the next pair ahead of its test.
      int t = ps0, b = -1;
      ndf_site tc, bs;
      tc.w = bs.w = 0.0;
      tc.v = tc.f = bs.v = bs.f = 0;
      if (t >= 0) {
        tc = S[t];
        b = P[t];
        dmin = t;
        if (b >= 0) bs = S[b];
      }
      // One step per iteration (skip a non-site, pop the top, or push the site), so each lane
      // runs at its own pace: the warp takes the most steps of a lane, not the sum over
      // sites of the most pops at that site.
      ndf_site e = S[base];
      for (int j = 0; j < len;) {
        const int xs = base + j;
        const ndf_site en = S[j + 1 < len ? xs + 1 : xs]; // the next site, in flight during the test
        if (e.f >= 0) {
          if (b >= 0) {
            const int nb = b >= base ? C[b] : P[b]; // the pair below, loaded ahead of the test
            ndf_site nbs = bs;
            if (nb >= 0) nbs = S[nb];
            if (ndf_hidden32(bs.v, bs.w, tc.v, tc.w, e.v, e.w, s)) { // pop the top; x again
              if (b < base && b < dmin) dmin = b; // P[b] is used (read ahead only, it is not)
              t = b;
              tc = bs;
              b = nb;
              bs = nbs;
              continue;
            }
          }
          // x goes on top of t
          C[xs] = t;
          changed |= t != P[xs];
          b = t;
          bs = tc;
          t = xs;
          tc = e;
        }
        e = en;
        ++j;
      }
    }
    const unsigned chg = __ballot_sync(full, changed);
    __syncwarp();
    if (changed)
      for (int j = 0; j < len; j++) {
        const int c = C[base + j];
        if (c != P[base + j]) {
          P[base + j] = c;
          R[base + j] = (unsigned char)round;
        }
      }
    __syncwarp();
    redo = len > 0 && (chg & ((1u << lane) - 1u)) != 0u;
    if (__ballot_sync(full, redo) == 0u) break;
  }
  // On the final stack: every later site's below is at or above it.  mn: the least below
  // of this segment's sites; a suffix minimum over the lanes to the right.
  int mn = 0x7fffffff;
  for (int j = 0; j < len; j++)
    if (S[base + j].f >= 0 && P[base + j] < mn) mn = P[base + j];
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int t = __shfl_down_sync(full, mn, o);
    if (lane + o < 32 && t < mn) mn = t;
  }
  int cur = __shfl_down_sync(full, mn, 1);
  if (lane == 31) cur = 0x7fffffff;
  for (int j = len - 1; j >= 0; j--) { // C becomes the flags (P stays: every lane reads its own slots only)
    const int xs = base + j;
    int flag = 0;
    if (S[xs].f >= 0) {
      flag = cur >= xs;
      if (P[xs] < cur) cur = P[xs];
    }
    C[xs] = flag;
  }
  __syncwarp();
  int G = 0;
  for (int x0 = 0; x0 < n; x0 += 32) {
    const int x = x0 + lane;
    const int k = x / m, xs = k * wstride + (x - k * m);
    const bool on = x < n && C[xs] != 0;
    const unsigned mask = __ballot_sync(full, on);
    ndf_site e;
    if (on) e = S[xs];
    __syncwarp();
    if (on) S[G + __popc(mask & ((1u << lane) - 1u))] = e;
    __syncwarp();
    G += __popc(mask);
  }
  return G;
}
#endif

// ---- the last axis, a warp per row (ndf_edt_wrows) --------------------------------------
//
// For passes with few rows (2-D images: a row per image line) a thread per
// row leaves most of the GPU idle, so a warp takes a row and keeps its
// envelope in shared memory (blockDim = (32, 1..4), a warp per row, each warp
// its own p.wbytes of dynamic shared memory).
//
// The warp first stages the row in shared memory (coalesced loads, several
// in flight), so the envelope loops read shared memory only.
//
// wexact = 0 (any sampling): lane 0 builds the row's envelope exactly as the
// CPU does (one segment, wseg = n), then the lanes run scipy's query walk in
// parallel over 32 chunks of positions, correcting a chunk's start until it
// agrees with its neighbour's end (see step 3), with the walk's state per
// position in shared memory after the envelope (n ints).  Bit-identical by
// construction.
//
// wexact = 1 (the host checked that every sampling is an integer and every
// product of the tests stays below 2^53, so no operation rounds): lane k
// builds the envelope of its segment [k wseg, (k + 1) wseg); lane 0 merges
// the segments in order into one stack, in place (a segment's sites are fed
// to the stack with scipy's test until one is pushed without a pop, after
// which the rest of the segment is kept as it is: the same triples were
// tested when the segment was built), and the rest is copied by the warp.
// Without rounding the envelope is the exact lower envelope and the walk
// returns the first site (the smallest position) of least distance, which is
// what the sequential algorithm returns; the first site of least distance is
// non-decreasing in the position, so each lane walks its positions
// lane, lane + 32, ... from where its previous one stopped.
#if !FIRST && LAST
#if NDF_KERNEL(ndf_edt_wrows)
extern "C" __global__ void __launch_bounds__(128) ndf_edt_wrows(const ndf_edt_params p) {
  extern __shared__ __align__(16) unsigned char ndf_wsmem[];
  // blockDim = (32, 1..4): warp threadIdx.y takes its own rows and its own p.wbytes of shared memory.
  ndf_site *S = (ndf_site *)(ndf_wsmem + (ndf_i64)threadIdx.y * p.wbytes);
  const unsigned full = 0xffffffffu;
  const int lane = threadIdx.x;
  const ndf_i64 n = p.n, m = p.wseg;
  for (ndf_i64 row = (ndf_i64)blockIdx.x * blockDim.y + threadIdx.y; row < p.nlines;
       row += (ndf_i64)gridDim.x * blockDim.y) {
    const ndf_i64 r0 = row * n; // working index of the row start
    // 0. The warp stages the row in shared memory, coalesced, 8 loads in
    //    flight per lane: site x (W, x, feature) at slot (x / wseg) wstride + x % wseg,
    //    its segment's place (wexact = 0: wseg = wstride = n, slot x).
    for (ndf_i64 xb = 0; xb < n; xb += 8 * 32) {
      int fb[8];
      double wb[8];
#pragma unroll
      for (int u = 0; u < 8; u++) {
        const ndf_i64 x = xb + u * 32 + lane;
        fb[u] = x < n ? p.sfeat[r0 + x] : -1;
        wb[u] = x < n ? (double)p.sw[r0 + x] : 0.0;
      }
#pragma unroll
      for (int u = 0; u < 8; u++) {
        const ndf_i64 x = xb + u * 32 + lane;
        if (x < n) {
          const ndf_i64 k = x / m;
          ndf_site e;
          e.w = wb[u];
          e.v = (int)x;
          e.f = fb[u];
          S[k * p.wstride + (x - k * m)] = e;
        }
      }
    }
    __syncwarp();
    // 1-2. The envelope of the row (ndf_wenv).
    // (ndf_wenv1's test outcomes T go where the walk's states L go later: n bytes of 4 n)
    // (p.wfast: 0 lane 0 builds it (ndf_wenv, one segment), 1 ndf_wenv1, 2 the warp (ndf_wenvp))
    const int G = !p.wexact && p.wfast == 2 ? ndf_wenvp(S, n, m, p.wstride, p.s)
                  : !p.wexact && p.wfast    ? ndf_wenv1(S, (unsigned char *)(S + n), (int)n, p.s)
                                            : ndf_wenv(S, n, m, p.wstride, p.s, p.wtree);
    // 3. Queries; the outputs are written along the row.
    const ndf_i64 db = ndf_offset(p, r0, p.dstr), ds = p.dstr[p.axis];
    const ndf_i64 xb = ndf_offset(p, r0, p.xstr), xs = p.xstr[p.axis];
    if (G == 0) { // no site on this row: the image has no background
      for (ndf_i64 i = lane; i < n; i += 32) ndf_emit(p, db + i * ds, xb + i * xs, -1, ndf_nobg(p, r0 + i));
    } else if (p.wexact) {
      int l = 0;
      for (ndf_i64 i = lane; i < n; i += 32) {
        ndf_site cur = S[l];
        double d1 = ndf_qd(cur.w, cur.v, i, p.s);
        while (l < G - 1) {
          const ndf_site nx = S[l + 1];
          const double d2 = ndf_qd(nx.w, nx.v, i, p.s);
          if (d1 <= d2) break;
          d1 = d2;
          cur = nx;
          ++l;
        }
        ndf_emit(p, db + i * ds, xb + i * xs, cur.f, d1);
      }
    } else {
      // scipy's walk, l_i = step(l_{i-1}, i) from l_{-1} = 0, in parallel:
      // lane k takes positions [k c, (k + 1) c) and records l_i in L[i].  It
      // starts from a guess (a binary search for a site the walk stops at),
      // then, round by round, each lane whose start differs from its left
      // neighbour's end walks again from that end until its states meet the
      // recorded ones (the walk is deterministic: from there on they agree).
      // After round r lanes 0..r hold scipy's states; rounds stop when no
      // start changes.  Bit-identical by construction.
      int *L = (int *)(S + n);
      const ndf_i64 c = (n + 31) / 32, i0 = (ndf_i64)lane * c, i1 = i0 + c < n ? i0 + c : n;
      int start = 0;
      if (lane > 0 && i0 < n) { // the first l in [0, G - 1] where the walk at i0 does not advance, if monotone
        int lo = 0, hi = G - 1;
        while (lo < hi) {
          const int mid = (lo + hi) >> 1;
          const ndf_site a = S[mid], b2 = S[mid + 1];
          if (ndf_qd(a.w, a.v, i0, p.s) <= ndf_qd(b2.w, b2.v, i0, p.s))
            hi = mid;
          else
            lo = mid + 1;
        }
        start = lo;
      }
      bool walk = i0 < n, fresh = true; // fresh: L holds the previous row's states
      for (;;) {
        if (walk) {
          int l = start;
          for (ndf_i64 i = i0; i < i1; i++) {
            ndf_site cur = S[l];
            double d1 = ndf_qd(cur.w, cur.v, i, p.s);
            while (l < G - 1) {
              const ndf_site nx = S[l + 1];
              const double d2 = ndf_qd(nx.w, nx.v, i, p.s);
              if (d1 <= d2) break;
              d1 = d2;
              ++l;
            }
            if (!fresh && L[i] == l) break; // met the recorded walk
            L[i] = l;
          }
        }
        fresh = false;
        __syncwarp();
        const int end = i0 < n ? L[i1 - 1] : 0;
        const int left = __shfl_up_sync(full, end, 1);
        walk = lane > 0 && i0 < n && left != start;
        if (walk) start = left;
        if (__ballot_sync(full, walk) == 0u) break;
      }
      for (ndf_i64 i = lane; i < n; i += 32) {
        const ndf_site cur = S[L[i]];
        ndf_emit(p, db + i * ds, xb + i * xs, cur.f, ndf_qd(cur.w, cur.v, i, p.s));
      }
    }
    __syncwarp(); // the next row overwrites S
  }
}
#endif
#endif

// ---- axes other than the last, a warp per line (ndf_edt_wlines) -------------------------
//
// The middle axes of 3+-D images with exact arithmetic (wexact, see
// ndf_edt_wrows: every sampling an integer and no operation rounds).  A block
// of lw warps (blockDim = (32, lw)) takes lw consecutive lines of the working
// layout [outer][n][inner] -- consecutive j, so adjacent in memory -- and:
//  0. stages them in shared memory, element e = x lw + k (line k, position x):
//     consecutive threads read consecutive lines, so the loads are coalesced
//     along the contiguous axis (lw features = one 32-byte sector for lw = 8);
//     each line's sites go to its warp's region in ndf_edt_wrows' segment layout;
//  1-2. each warp builds its line's envelope (ndf_wenv: 32 segments, merged);
//  3. each lane answers positions lane, lane + 32, ... walking forward (the
//     first site of least distance, as the sequential walk without rounding),
//     into the block's output tile [k][x] (pitch wpitch, odd: no bank conflicts);
//  4. the block writes the tile out, coalesced as in 0.
// Shared memory: lw (wbytes + 12 wpitch) bytes (the host keeps it within 48 KiB).
// A line without a site (an image without background so far) gets feature -1, W 0,
// as in ndf_edt_lines.
#if !FIRST && !LAST
#if NDF_KERNEL(ndf_edt_wlines)
extern "C" __global__ void __launch_bounds__(256) ndf_edt_wlines(const ndf_edt_params p) {
  extern __shared__ __align__(16) unsigned char ndf_wsmem[];
  __shared__ ndf_i64 lbase[8]; // working index of each line's start (-1: past the last line)
  const int lane = threadIdx.x, k = threadIdx.y, lw = blockDim.y, tid = k * 32 + lane, nt = lw * 32;
  const int n = (int)p.n, m = (int)p.wseg, pitch = (int)p.wpitch;
  const ndf_i64 inner = p.inner, wstride = p.wstride, wbytes = p.wbytes;
  ndf_site *S = (ndf_site *)(ndf_wsmem + (ndf_i64)k * wbytes);
  double *ow = (double *)(ndf_wsmem + (ndf_i64)lw * wbytes); // [line][x], pitch
  int *of = (int *)(ow + (ndf_i64)lw * pitch);
  const int total = lw * n;
  const ndf_i64 ngroups = (p.nlines + lw - 1) / lw;
  for (ndf_i64 g = blockIdx.x; g < ngroups; g += gridDim.x) {
    if (tid < lw) {
      const ndf_i64 L = g * lw + tid;
      const ndf_i64 o = L / inner, j = L - o * inner;
      lbase[tid] = L < p.nlines ? o * p.n * inner + j : -1;
    }
    __syncthreads();
    // 0. Stage the lines, 4 loads in flight per thread.
    for (int eb = 0; eb < total; eb += 4 * nt) {
      int fb[4];
      double wb[4];
#pragma unroll
      for (int u = 0; u < 4; u++) {
        const int e = eb + u * nt + tid;
        const int kk = e % lw, x = e / lw;
        const ndf_i64 b = e < total ? lbase[kk] : -1;
        fb[u] = b >= 0 ? p.sfeat[b + x * inner] : -1;
        wb[u] = b >= 0 ? (double)p.sw[b + x * inner] : 0.0;
      }
#pragma unroll
      for (int u = 0; u < 4; u++) {
        const int e = eb + u * nt + tid;
        if (e < total) {
          const int kk = e % lw, x = e / lw, q = x / m;
          ndf_site s;
          s.w = wb[u];
          s.v = x;
          s.f = fb[u];
          ((ndf_site *)(ndf_wsmem + (ndf_i64)kk * wbytes))[q * wstride + (x - q * m)] = s;
        }
      }
    }
    __syncthreads();
    // 1-2. This warp's line: its envelope S[0, G).
    const int G = ndf_wenv(S, n, m, wstride, p.s, p.wtree);
    // 3. Queries into the output tile.
    if (G == 0) {
      for (int i = lane; i < n; i += 32) {
        of[k * pitch + i] = -1;
        ow[k * pitch + i] = 0.0;
      }
    } else {
      int l = 0;
      for (int i = lane; i < n; i += 32) {
        ndf_site cur = S[l];
        double d1 = ndf_qd(cur.w, cur.v, i, p.s);
        while (l < G - 1) {
          const ndf_site nx = S[l + 1];
          const double d2 = ndf_qd(nx.w, nx.v, i, p.s);
          if (d1 <= d2) break;
          d1 = d2;
          cur = nx;
          ++l;
        }
        of[k * pitch + i] = cur.f;
        ow[k * pitch + i] = d1;
      }
    }
    __syncthreads();
    // 4. Write the tile out, coalesced along the contiguous axis.
    for (int e = tid; e < total; e += nt) {
      const int kk = e % lw, x = e / lw;
      const ndf_i64 b = lbase[kk];
      if (b >= 0) {
        p.dfeat[b + x * inner] = of[kk * pitch + x];
        p.dw[b + x * inner] = (WT)ow[kk * pitch + x];
      }
    }
    __syncthreads(); // the next group overwrites the staging, the tile and lbase
  }
}
#endif
#endif

// ---- the search path: exact arithmetic, W below 2^30 (ndf_edt_s*) -------------------------
//
// When every sampling is an integer and every W is below 2^30 (the host's
// edt_search_plan), no operation rounds, so a pass's answer is the exact minimum of
// W(y) + ((y - i) s)^2 over the line's sites, and the sequential algorithm
// returns the smallest position y among the minimisers (docs/adr/0007).  So
// the passes need no envelope: each voxel searches outwards from its own
// position, y = i, i - 1, i + 1, i - 2, i + 2, ..., keeping the least
// distance (a left candidate at radius r lies left of every candidate seen,
// so it wins a tie; a right one loses it), and stops at the first radius
// with (r s)^2 > best: no site further out can reach best.  The work per
// voxel is about twice its distance along the axis (in voxels): every
// thread independent, every shared-memory read conflict-free, no serial
// per-lane chain.  Worst case (a few sites far apart, or large blobs) O(n)
// per voxel; edt.search=off keeps the envelope kernels.
//
// Between passes only W travels (uint32; NDF_WNONE: the line so far has no
// background), and the feature (int32, flat index in the image) only when
// indices are wanted (HAS_IDX, set on every pass of this path): 4 or 8
// bytes per voxel instead of 8.  All in unsigned arithmetic: every W and
// every W + (r s)^2 < 2^30 by the host's bound (NDF_WNONE = 2^31 - 1).
//   ndf_edt_sfirst  axis 0 (not the last): ndf_edt_first's segmented scans.
//   ndf_edt_smid    middle axes: slw (8..32) adjacent lines per block staged
//                   whole in shared memory as [x][line] (coalesced loads and
//                   stores; a warp reads 32 consecutive words), a thread per
//                   voxel.
//   ndf_edt_srows   the last axis: slw rows per block staged as [row][x]
//                   (one contiguous chunk), a thread per voxel; writes the
//                   outputs along the rows.
#define NDF_WNONE 0x7fffffffu // no site; the host keeps every W + (r s)^2 below 2^30, so W + t never wraps

// The search of position i on a staged line w[0, n) (stride: words between
// positions); s2 = s^2.  Candidates without a site read NDF_WNONE, which no
// sum W + t can beat (best <= NDF_WNONE < NDF_WNONE + t), so they need no test.
// The caller skips lines without a site (the loop would run to both ends);
// with one, best < NDF_WNONE and pos is the site on return.  Returns false
// (best, pos unfinished) when the search would go past radius cap: the
// caller then answers the whole line from its envelope (ndf_senv).
__device__ __forceinline__ bool ndf_ssearch(const unsigned *w, int stride, int n, int i, unsigned s2, int cap,
                                            unsigned &best, int &pos) {
  const unsigned *p0 = w + i * stride;
  best = *p0;
  pos = i;
  unsigned t = 0, dt = s2; // t = (r s)^2 = t + (2 r - 1) s^2
  for (int r = 1;;) {
    t += dt;
    dt += 2 * s2;
    const int yl = i - r, yr = i + r;
    if (t > best || (yl < 0 && yr >= n)) return true;
    if (r > cap) return false;
    if (yl >= 3 && yr + 3 < n && r + 3 <= cap) {
      // radii r .. r + 3 inside the line: 8 loads in flight, then the candidates in the
      // sequential order (left, right, radius by radius); a radius past the stop (its t
      // above best) cannot reach best, so testing it changes nothing
      unsigned al[4], ar[4];
#pragma unroll
      for (int k = 0; k < 4; k++) {
        al[k] = p0[-(r + k) * stride];
        ar[k] = p0[(r + k) * stride];
      }
#pragma unroll
      for (int k = 0; k < 4; k++) {
        if (al[k] + t <= best) { // left of every candidate seen: wins a tie
          best = al[k] + t;
          pos = yl - k;
        }
        if (ar[k] + t < best) { // right of every candidate seen: loses a tie
          best = ar[k] + t;
          pos = yr + k;
        }
        if (k < 3) {
          t += dt;
          dt += 2 * s2;
        }
      }
      r += 4;
    } else {
      const unsigned al = yl >= 0 ? p0[-r * stride] : NDF_WNONE, ar = yr < n ? p0[r * stride] : NDF_WNONE;
      if (al + t <= best) {
        best = al + t;
        pos = yl;
      }
      if (ar + t < best) {
        best = ar + t;
        pos = yr;
      }
      r += 1;
    }
  }
}

// The fallback for a line with a long search (a few sites far apart, large
// blobs): the exact lower envelope of the staged line w (stride) into stk
// (positions), scipy's removal test in exact int64 arithmetic (terms below
// 2^46), O(n); returns its length.  Run by one thread per line.
__device__ int ndf_senv(const unsigned *w, int stride, int n, unsigned short *stk, ndf_i64 s) {
  int len = 0;
  for (int x = 0; x < n; x++) {
    const ndf_i64 wx = w[x * stride];
    if (wx == NDF_WNONE) continue;
    while (len >= 2) {
      const int v0 = stk[len - 2], v1 = stk[len - 1];
      const ndf_i64 a = (v1 - v0) * s, b = (x - v1) * s, c = a + b;
      if (c * (ndf_i64)w[v1 * stride] - b * (ndf_i64)w[v0 * stride] - a * wx - a * b * c <= 0) break;
      --len;
    }
    stk[len++] = (unsigned short)x;
  }
  return len;
}

// Position i's answer from an envelope stk[0, G) of the line w: the first
// site l with d_l(i) <= d_{l+1}(i), by binary search (without rounding that
// predicate is monotone in l: consecutive breakpoints never decrease), which
// is where the sequential walk stops: the smallest minimiser.  Returns the
// site's position; best = its distance.
__device__ __forceinline__ int ndf_squery(const unsigned *w, int stride, const unsigned short *stk, int G, int i,
                                          unsigned s2, unsigned &best) {
  int lo = 0, hi = G - 1;
  while (lo < hi) {
    const int mid = (lo + hi) >> 1, v0 = stk[mid], v1 = stk[mid + 1];
    const unsigned d0 = w[v0 * stride] + (unsigned)((v0 - i) * (v0 - i)) * s2;
    const unsigned d1 = w[v1 * stride] + (unsigned)((v1 - i) * (v1 - i)) * s2;
    if (d0 <= d1)
      hi = mid;
    else
      lo = mid + 1;
  }
  const int v = stk[lo];
  best = w[v * stride] + (unsigned)((v - i) * (v - i)) * s2;
  return v;
}

#if FIRST && !LAST
// As ndf_edt_first_body (blockDim.x lines x blockDim.y segments), with each
// segment's background as a bit mask in a register (the host keeps segments
// at 32 voxels or fewer): the previous and the next background of every
// voxel come from the mask (or the neighbouring segments' exchange), so the
// pass reads the input once and writes each voxel once.
// ENV = 0: the search path's output (W uint32, NDF_WNONE without a site;
// features with HAS_IDX).  ENV = 1 (ndf_edt_bfirst): the envelope kernels'
// (feature always, -1 and W 0 without a site; W = ndf_qd(0, v, x, s) in
// double, as ndf_edt_first writes it: the same choice, see above).
template <int ENV> __device__ __forceinline__ void ndf_sfirst_body(const ndf_edt_params &p, int *sfirst, int *slast) {
  const int n = (int)p.n;
  const ndf_i64 inner = p.inner;
  const unsigned si = (unsigned)p.s;
  const int tx = threadIdx.x, ty = threadIdx.y, nseg = blockDim.y, lw = blockDim.x;
  const int seg = (n + nseg - 1) / nseg, x0 = ty * seg < n ? ty * seg : n, x1 = x0 + seg < n ? x0 + seg : n;
  const int cnt = x1 - x0; // <= 32
  const ndf_i64 ngroups = (p.nlines + lw - 1) / lw;
  for (ndf_i64 g = blockIdx.x; g < ngroups; g += gridDim.x) {
    const ndf_i64 L = g * lw + tx;
    const bool active = L < p.nlines;
    const ndf_i64 o = L / inner, j = L - o * inner;
    const ndf_i64 w0 = o * n * inner + j;
    const ndf_i64 is = p.istr[p.axis];
    unsigned bits = 0; // bit k: x0 + k is background
    if (active) {
      const TIN *ip = p.in + ndf_offset(p, w0, p.istr) + (ndf_i64)x0 * is;
#pragma unroll 8
      for (int k = 0; k < cnt; k++)
        if (ip[k * is] == (TIN)0) bits |= 1u << k;
    }
    sfirst[ty * lw + tx] = bits ? x0 + __ffs(bits) - 1 : -1;
    slast[ty * lw + tx] = bits ? x0 + 31 - __clz(bits) : -1;
    __syncthreads();
    int prev = -1, next = -1;
    for (int k = ty - 1; k >= 0 && prev < 0; k--) prev = slast[k * lw + tx];
    for (int k = ty + 1; k < nseg && next < 0; k++) next = sfirst[k * lw + tx];
    __syncthreads(); // the exchange is read before the next group overwrites it
    if (!active) continue;
    const ndf_i64 fbase = w0 % p.npix; // the line lies in one image
    for (int k = 0; k < cnt; k++) {
      const int x = x0 + k;
      const unsigned lo = bits & (0xffffffffu >> (31 - k)), hi = bits >> k; // bits 0..k, k..31
      const int pv = lo ? x0 + 31 - __clz(lo) : prev, nx = hi ? x + __ffs(hi) - 1 : next;
      // the nearer of the two, the previous on a tie (the same sampling scales both)
      const int v = pv < 0 ? nx : nx < 0 ? pv : (x - pv <= nx - x ? pv : nx);
      const ndf_i64 wi = w0 + (ndf_i64)x * inner;
      if (ENV) {
        p.dw[wi] = v < 0 ? (WT)0 : (WT)ndf_qd(0.0, v, x, p.s);
        p.dfeat[wi] = v < 0 ? -1 : (int)(fbase + (ndf_i64)v * inner);
      } else {
        const unsigned t = v < 0 ? 0u : (unsigned)(x > v ? x - v : v - x) * si;
        ((unsigned *)(void *)p.dw)[wi] = v < 0 ? NDF_WNONE : t * t;
#if HAS_IDX
        p.dfeat[wi] = v < 0 ? -1 : (int)(fbase + (ndf_i64)v * inner);
#endif
      }
    }
  }
}

#if NDF_KERNEL(ndf_edt_sfirst)
extern "C" __global__ void __launch_bounds__(512, 3) ndf_edt_sfirst(const ndf_edt_params p) {
  __shared__ int sfirst[512], slast[512];
  ndf_sfirst_body<0>(p, sfirst, slast);
}
#endif

// The first pass of the envelope kernels by ndf_sfirst_body (segments of at
// most 32 voxels as bit masks: the input read once, each voxel written
// once), instead of ndf_edt_first's three sweeps; default without exact
// arithmetic (the 1024^2 sampling + indices workload), edt.first=512 /
// 1024 forces ndf_edt_first / ndf_edt_first1k.
#if NDF_KERNEL(ndf_edt_bfirst)
extern "C" __global__ void __launch_bounds__(512, 3) ndf_edt_bfirst(const ndf_edt_params p) {
  __shared__ int sfirst[512], slast[512];
  ndf_sfirst_body<1>(p, sfirst, slast);
}
#endif
#endif

#if !FIRST && !LAST
#if NDF_KERNEL(ndf_edt_smid)
extern "C" __global__ void __launch_bounds__(256) ndf_edt_smid(const ndf_edt_params p) {
  extern __shared__ __align__(16) unsigned char ndf_wsmem[];
  __shared__ ndf_i64 lbase[32]; // working index of each line's start (-1: past the last line)
  __shared__ int lany[32];      // the line has a site
  __shared__ int llong[32];     // a search of the line went past p.scap: its envelope answers it
  __shared__ int lG[32];        // the envelope's length
  const int tid = threadIdx.x, nt = blockDim.x, lw = (int)p.slw, lsh = __ffs(lw) - 1; // lw: 8, 16 or 32
  const int n = (int)p.n, total = lw * n;
  const ndf_i64 inner = p.inner;
  const unsigned s2 = (unsigned)p.s * (unsigned)p.s;
  const unsigned *gw = (const unsigned *)(const void *)p.sw;
  unsigned *dw = (unsigned *)(void *)p.dw;
  unsigned *sw = (unsigned *)ndf_wsmem; // [x * lw + k]
#if HAS_IDX
  int *sf = (int *)(sw + total);
  unsigned short *stk = (unsigned short *)(sf + total); // [line * n + l]
#else
  unsigned short *stk = (unsigned short *)(sw + total);
#endif
  const ndf_i64 ngroups = (p.nlines + lw - 1) / lw;
  for (ndf_i64 g = blockIdx.x; g < ngroups; g += gridDim.x) {
    if (tid < lw) {
      const ndf_i64 L = g * lw + tid;
      const ndf_i64 o = L / inner, j = L - o * inner;
      lbase[tid] = L < p.nlines ? o * p.n * inner + j : -1;
      lany[tid] = 0;
      llong[tid] = 0;
    }
    __syncthreads();
    // Stage the lines, 4 loads in flight per thread.
    for (int eb = 0; eb < total; eb += 4 * nt) {
      unsigned wb[4];
#if HAS_IDX
      int fb[4];
#endif
#pragma unroll
      for (int u = 0; u < 4; u++) {
        const int e = eb + u * nt + tid;
        const ndf_i64 b = e < total ? lbase[e & (lw - 1)] : -1;
        const ndf_i64 gi = b + (ndf_i64)(e >> lsh) * inner;
        wb[u] = b >= 0 ? gw[gi] : NDF_WNONE;
#if HAS_IDX
        fb[u] = b >= 0 ? p.sfeat[gi] : -1;
#endif
      }
#pragma unroll
      for (int u = 0; u < 4; u++) {
        const int e = eb + u * nt + tid;
        if (e < total) {
          sw[e] = wb[u];
#if HAS_IDX
          sf[e] = fb[u];
#endif
          if (wb[u] != NDF_WNONE) lany[e & (lw - 1)] = 1;
        }
      }
    }
    __syncthreads();
    int mylong = 0;
    for (int e = tid; e < total; e += nt) {
      const int k = e & (lw - 1), x = e >> lsh;
      const ndf_i64 b = lbase[k];
      if (b < 0) continue;
      unsigned best = NDF_WNONE;
      int pos = 0;
      if (lany[k] && !ndf_ssearch(sw + k, lw, n, x, s2, p.scap, best, pos)) {
        llong[k] = 1; // the line's envelope writes this voxel
        mylong = 1;
        continue;
      }
      const ndf_i64 gi = b + (ndf_i64)x * inner;
      dw[gi] = best;
#if HAS_IDX
      p.dfeat[gi] = best != NDF_WNONE ? sf[pos * lw + k] : -1;
#endif
    }
    if (__syncthreads_or(mylong)) { // some line searched too far: its envelope answers all its positions
      if (tid < lw && llong[tid]) lG[tid] = ndf_senv(sw + tid, lw, n, stk + tid * n, (ndf_i64)p.s);
      __syncthreads();
      for (int e = tid; e < total; e += nt) {
        const int k = e & (lw - 1), x = e >> lsh;
        if (!llong[k]) continue;
        unsigned best;
        const int pos = ndf_squery(sw + k, lw, stk + k * n, lG[k], x, s2, best);
        const ndf_i64 gi = lbase[k] + (ndf_i64)x * inner;
        dw[gi] = best;
#if HAS_IDX
        p.dfeat[gi] = sf[pos * lw + k];
#endif
      }
      __syncthreads();
    } // (__syncthreads_or is the barrier before the next group overwrites the staging and the tables)
  }
}
#endif
#endif

#if !FIRST && LAST
#if NDF_KERNEL(ndf_edt_srows)
extern "C" __global__ void __launch_bounds__(256, 5) ndf_edt_srows(const ndf_edt_params p) {
  extern __shared__ __align__(16) unsigned char ndf_wsmem[];
  __shared__ ndf_i64 rdb[32], rxb[32]; // each row's output offsets
  __shared__ int rany[32];             // the row has a site (else the image has no background)
  __shared__ int rlong[32];            // a search of the row went past p.scap: its envelope answers it
  __shared__ int rG[32];               // the envelope's length
  const int tid = threadIdx.x, nt = blockDim.x, R = (int)p.slw, n = (int)p.n;
  const unsigned s2 = (unsigned)p.s * (unsigned)p.s;
  const unsigned *gw = (const unsigned *)(const void *)p.sw;
  const ndf_i64 ds = p.dstr[p.axis], xs = p.xstr[p.axis];
  unsigned *sw = (unsigned *)ndf_wsmem; // [row * n + x]
#if HAS_IDX
  int *sf = (int *)(sw + R * n);
  unsigned short *stk = (unsigned short *)(sf + R * n); // [row * n + l]
#else
  unsigned short *stk = (unsigned short *)(sw + R * n);
#endif
  const ndf_i64 ngroups = (p.nlines + R - 1) / R;
  for (ndf_i64 g = blockIdx.x; g < ngroups; g += gridDim.x) {
    const ndf_i64 r0 = g * R;
    const int rows = p.nlines - r0 < R ? (int)(p.nlines - r0) : R, cnt = rows * n;
    if (tid < rows) {
      rdb[tid] = ndf_offset(p, (r0 + tid) * p.n, p.dstr);
      rxb[tid] = ndf_offset(p, (r0 + tid) * p.n, p.xstr);
      rany[tid] = 0;
      rlong[tid] = 0;
    }
    __syncthreads();
    const ndf_i64 base = r0 * p.n; // the rows are one contiguous chunk of the source
    for (int eb = 0; eb < cnt; eb += 4 * nt) {
      unsigned wb[4];
#if HAS_IDX
      int fb[4];
#endif
#pragma unroll
      for (int u = 0; u < 4; u++) {
        const int e = eb + u * nt + tid;
        wb[u] = e < cnt ? gw[base + e] : NDF_WNONE;
#if HAS_IDX
        fb[u] = e < cnt ? p.sfeat[base + e] : -1;
#endif
      }
#pragma unroll
      for (int u = 0; u < 4; u++) {
        const int e = eb + u * nt + tid;
        if (e < cnt) {
          sw[e] = wb[u];
#if HAS_IDX
          sf[e] = fb[u];
#endif
          if (wb[u] != NDF_WNONE) rany[e / n] = 1;
        }
      }
    }
    __syncthreads();
    int k = tid / n, i = tid - k * n; // element e = k n + i
    int mylong = 0;
    for (int e = tid; e < cnt; e += nt) {
      if (!rany[k]) { // the image has no background
        ndf_emit(p, rdb[k] + i * ds, rxb[k] + i * xs, -1, ndf_nobg(p, (r0 + k) * p.n + i));
      } else {
        unsigned best;
        int pos;
        if (ndf_ssearch(sw + k * n, 1, n, i, s2, p.scap, best, pos)) {
#if HAS_IDX
          const int f = sf[k * n + pos];
#else
          const int f = 0;
#endif
          ndf_emit(p, rdb[k] + i * ds, rxb[k] + i * xs, f, (double)best);
        } else { // the row's envelope writes this voxel
          rlong[k] = 1;
          mylong = 1;
        }
      }
      i += nt;
      while (i >= n) {
        i -= n;
        k++;
      }
    }
    if (__syncthreads_or(mylong)) { // some row searched too far: its envelope answers all its positions
      if (tid < rows && rlong[tid]) rG[tid] = ndf_senv(sw + tid * n, 1, n, stk + tid * n, (ndf_i64)p.s);
      __syncthreads();
      k = tid / n;
      i = tid - k * n;
      for (int e = tid; e < cnt; e += nt) {
        if (rlong[k]) {
          unsigned best;
          const int pos = ndf_squery(sw + k * n, 1, stk + k * n, rG[k], i, s2, best);
#if HAS_IDX
          const int f = sf[k * n + pos];
#else
          const int f = 0;
          (void)pos;
#endif
          ndf_emit(p, rdb[k] + i * ds, rxb[k] + i * xs, f, (double)best);
        }
        i += nt;
        while (i >= n) {
          i -= n;
          k++;
        }
      }
      __syncthreads();
    } // (__syncthreads_or is the barrier before the next group overwrites the staging and the row tables)
  }
}
#endif
#endif

// ---- the search path, distances only: padded staging (ndf_edt_sdmid, ndf_edt_sdrows) ----------
//
// Without indices a pass only needs the least W(y) + ((y - i) s)^2, not which
// site gives it, so the search keeps no position and no tie rule: each
// candidate costs a shared load and one add-and-min (__viaddmin_u32, one
// instruction on sm_90), about a third of ndf_ssearch's per-candidate work
// (the profile of ndf_edt_smid at 256^3: 79% of the SM's issue slots, 0.86
// warps issued per cycle per scheduler: instruction-bound, not memory-bound).
// The staged lines carry pad = min(scap, n - 1) + 3 cells of NDF_WNONE past
// both ends, so a step takes four radii on each side with no bounds test
// (radii past a line's end read NDF_WNONE, which no sum beats); the host keeps
// every ((n + 8) s)^2 below 2^30, so NONE + t never wraps even there.  The
// minimum is exact (no rounding), so the distances equal ndf_ssearch's, and
// the fallback (a search past radius scap: the line's envelope) is the same.
// edt.smid=old / edt.srows=old keep ndf_edt_smid / ndf_edt_srows.
__device__ __forceinline__ unsigned ndf_addmin(unsigned a, unsigned t, unsigned b) { return __viaddmin_u32(a, t, b); }

// The least W + t around p0 (W of position y at p0[(y - i) ST]); rend: the
// largest radius that reaches a position of the line.  Returns false when the
// search would go past radius cap (best unfinished).  Radii 1 .. 64 are
// unrolled (S1: unit sampling, so every t = r^2 is an immediate; else r^2 s2):
// constant load offsets from p0, no loop counter; past 64 (cap > 64) a loop.
template <int ST, bool S1>
__device__ __forceinline__ bool ndf_sdsearch(const unsigned *p0, int rend, unsigned s2, int cap, unsigned &best) {
  unsigned b = *p0;
  const int rlim = rend < cap ? rend : cap; // a step starting at radius r runs while r <= rlim
#pragma unroll
  for (int g = 0; g < 16; g++) {
    const int r = 1 + 4 * g;
    // every candidate at radius r or more is at least t: b is the minimum
    if ((S1 ? (unsigned)(r * r) : (unsigned)(r * r) * s2) > b) {
      best = b;
      return true;
    }
    if (r > rlim) {
      best = b;
      return r > rend;
    }
    unsigned bl = b, br = b; // two chains: shorter dependences
#pragma unroll
    for (int k = 0; k < 4; k++) {
      const unsigned t = S1 ? (unsigned)((r + k) * (r + k)) : (unsigned)((r + k) * (r + k)) * s2;
      bl = ndf_addmin(p0[-(r + k) * ST], t, bl);
      br = ndf_addmin(p0[(r + k) * ST], t, br);
    }
    b = bl < br ? bl : br;
  }
  unsigned t = 65u * 65u * s2, dt = 131u * s2; // t = (r s)^2, dt = t(r + 1) - t(r)
  const unsigned s2x2 = 2u * s2;
  for (int r = 65;; r += 4) {
    if (t > b || r > rend) {
      best = b;
      return true;
    }
    if (r > cap) return false;
    const unsigned *pl = p0 - r * ST, *pr = p0 + r * ST;
    const unsigned t1 = t + dt, d2 = dt + s2x2, t2 = t1 + d2, d3 = d2 + s2x2, t3 = t2 + d3, d4 = d3 + s2x2;
    const unsigned l0 = pl[0], r0 = pr[0], l1 = pl[-ST], r1 = pr[ST], l2 = pl[-2 * ST], r2 = pr[2 * ST],
                   l3 = pl[-3 * ST], r3 = pr[3 * ST];
    unsigned bl = ndf_addmin(l0, t, b), br = ndf_addmin(r0, t, b);
    bl = ndf_addmin(l1, t1, bl);
    br = ndf_addmin(r1, t1, br);
    bl = ndf_addmin(l2, t2, bl);
    br = ndf_addmin(r2, t2, br);
    bl = ndf_addmin(l3, t3, bl);
    br = ndf_addmin(r3, t3, br);
    b = bl < br ? bl : br;
    t = t3 + d4;
    dt = d4 + s2x2;
  }
}

// ndf_sdsearch with the sampling's case picked (warp-uniform).
template <int ST>
__device__ __forceinline__ bool ndf_sdsearch2(const unsigned *p0, int rend, unsigned s2, int cap, unsigned &best) {
  return s2 == 1u ? ndf_sdsearch<ST, true>(p0, rend, s2, cap, best) : ndf_sdsearch<ST, false>(p0, rend, s2, cap, best);
}

// The cells of NDF_WNONE staged past each end of a line (host: edt_spad).
__device__ __forceinline__ int ndf_spad(int n, int cap) { return (cap < n - 1 ? cap : n - 1) + 3; }

#if !FIRST && !LAST && !HAS_IDX
// ndf_edt_smid without indices: LW lines staged as [pad + x][k] (pad rows of
// NDF_WNONE above and below, written once), a thread per voxel; the fallback
// envelopes' stacks follow the staging.
template <int LW>
__device__ __forceinline__ void ndf_sdmid_body(const ndf_edt_params &p, unsigned char *ndf_wsmem, ndf_i64 *lbase,
                                               int *lany, int *llong, int *lG) {
  const int tid = threadIdx.x, nt = blockDim.x, lsh = LW == 8 ? 3 : LW == 16 ? 4 : 5;
  const int n = (int)p.n, total = LW * n, cap = p.scap, pad = ndf_spad(n, cap);
  const ndf_i64 inner = p.inner;
  const unsigned s2 = (unsigned)p.s * (unsigned)p.s;
  const unsigned *gw = (const unsigned *)(const void *)p.sw;
  unsigned *dw = (unsigned *)(void *)p.dw;
  unsigned *sw = (unsigned *)ndf_wsmem, *tw = sw + pad * LW; // position x of line k: tw[x * LW + k]
  unsigned short *stk = (unsigned short *)(sw + (n + 2 * pad) * LW); // [line * n + l]
  for (int e = tid; e < pad * LW; e += nt) {
    sw[e] = NDF_WNONE;
    tw[total + e] = NDF_WNONE;
  }
  const ndf_i64 ngroups = (p.nlines + LW - 1) / LW;
  for (ndf_i64 g = blockIdx.x; g < ngroups; g += gridDim.x) {
    if (tid < LW) {
      const ndf_i64 L = g * LW + tid;
      const ndf_i64 o = L / inner, j = L - o * inner;
      lbase[tid] = L < p.nlines ? o * p.n * inner + j : -1;
      lany[tid] = 0;
      llong[tid] = 0;
    }
    __syncthreads(); // (also orders the pad rows before the first search)
    for (int eb = 0; eb < total; eb += 4 * nt) {
      unsigned wb[4];
#pragma unroll
      for (int u = 0; u < 4; u++) {
        const int e = eb + u * nt + tid;
        const ndf_i64 b = e < total ? lbase[e & (LW - 1)] : -1;
        wb[u] = b >= 0 ? gw[b + (ndf_i64)(e >> lsh) * inner] : NDF_WNONE;
      }
#pragma unroll
      for (int u = 0; u < 4; u++) {
        const int e = eb + u * nt + tid;
        if (e < total) {
          tw[e] = wb[u];
          if (wb[u] != NDF_WNONE) lany[e & (LW - 1)] = 1;
        }
      }
    }
    __syncthreads();
    int mylong = 0;
    for (int e = tid; e < total; e += nt) {
      const int k = e & (LW - 1), x = e >> lsh;
      const ndf_i64 b = lbase[k];
      if (b < 0) continue;
      unsigned best = NDF_WNONE;
      if (lany[k] && !ndf_sdsearch2<LW>(tw + e, x > n - 1 - x ? x : n - 1 - x, s2, cap, best)) {
        llong[k] = 1; // the line's envelope writes this voxel
        mylong = 1;
        continue;
      }
      dw[b + (ndf_i64)x * inner] = best;
    }
    if (__syncthreads_or(mylong)) { // some line searched too far: its envelope answers all its positions
      if (tid < LW && llong[tid]) lG[tid] = ndf_senv(tw + tid, LW, n, stk + tid * n, (ndf_i64)p.s);
      __syncthreads();
      for (int e = tid; e < total; e += nt) {
        const int k = e & (LW - 1), x = e >> lsh;
        if (!llong[k]) continue;
        unsigned best;
        ndf_squery(tw + k, LW, stk + k * n, lG[k], x, s2, best);
        dw[lbase[k] + (ndf_i64)x * inner] = best;
      }
      __syncthreads();
    } // (__syncthreads_or is the barrier before the next group overwrites the staging and the tables)
  }
}

#if NDF_KERNEL(ndf_edt_sdmid)
extern "C" __global__ void __launch_bounds__(256, 8) ndf_edt_sdmid(const ndf_edt_params p) {
  extern __shared__ __align__(16) unsigned char ndf_wsmem[];
  __shared__ ndf_i64 lbase[32]; // working index of each line's start (-1: past the last line)
  __shared__ int lany[32];      // the line has a site
  __shared__ int llong[32];     // a search of the line went past p.scap: its envelope answers it
  __shared__ int lG[32];        // the envelope's length
  if (p.slw == 8)
    ndf_sdmid_body<8>(p, ndf_wsmem, lbase, lany, llong, lG);
  else if (p.slw == 16)
    ndf_sdmid_body<16>(p, ndf_wsmem, lbase, lany, llong, lG);
  else
    ndf_sdmid_body<32>(p, ndf_wsmem, lbase, lany, llong, lG);
}
#endif
#endif

// The pitch of a line staged transposed (ndf_edt_sdmidt): at least n + pad
// and P = 32 / LW (mod 32), so the staging stores of a warp (LW lines x 32 / LW
// positions) fall in 32 distinct banks.  (host: edt_spitch)
__device__ __forceinline__ int ndf_spitch(int n, int pad, int lw) {
  const int q = n + pad, m = 32 / lw;
  return q + (((m - q) % 32) + 32) % 32;
}

#if !FIRST && !LAST && !HAS_IDX
// ndf_edt_sdmid with the lanes of a warp along a line (the searches of
// neighbouring positions end at similar radii, so fewer lanes idle than with
// 32 lines side by side): the LW lines are staged transposed, line k at
// tw[k P + x] (P = ndf_spitch: a line's right pad is the next one's left pad,
// written once), each thread takes positions e = k n + x, e + nt, ... and
// puts its answers in an output tile [x][k] (pitch LW + 1: conflict-free
// both ways), which the block then writes out coalesced as ndf_edt_sdmid.
template <int LW>
__device__ __forceinline__ void ndf_sdmidt_body(const ndf_edt_params &p, unsigned char *ndf_wsmem, ndf_i64 *lbase,
                                               int *lany, int *llong, int *lG) {
  const int tid = threadIdx.x, nt = blockDim.x, lsh = LW == 8 ? 3 : LW == 16 ? 4 : 5;
  const int n = (int)p.n, total = LW * n, cap = p.scap, P = ndf_spitch(n, ndf_spad(n, cap), LW), pad = P - n;
  const int dk = nt / n, di = nt - dk * n, k0 = tid / n, i0 = tid - k0 * n;
  const ndf_i64 inner = p.inner;
  const unsigned s2 = (unsigned)p.s * (unsigned)p.s;
  const unsigned *gw = (const unsigned *)(const void *)p.sw;
  unsigned *dw = (unsigned *)(void *)p.dw;
  unsigned *sw = (unsigned *)ndf_wsmem, *tw = sw + pad; // line k, position x: tw[k P + x]
  unsigned *ot = tw + LW * P;                            // answers: ot[x (LW + 1) + k]
  unsigned short *stk = (unsigned short *)ot; // [line * n + l]: the fallback's stacks, after ot is written out
  for (int e = tid; e < pad; e += nt) sw[e] = NDF_WNONE;
  for (int e = tid; e < LW * pad; e += nt) {
    const int k = e / pad;
    tw[k * P + n + e - k * pad] = NDF_WNONE;
  }
  const ndf_i64 ngroups = (p.nlines + LW - 1) / LW;
  for (ndf_i64 g = blockIdx.x; g < ngroups; g += gridDim.x) {
    __syncthreads(); // the previous group's write-out has read lbase and ot
    if (tid < LW) {
      const ndf_i64 L = g * LW + tid;
      const ndf_i64 o = L / inner, j = L - o * inner;
      lbase[tid] = L < p.nlines ? o * p.n * inner + j : -1;
      lany[tid] = 0;
      llong[tid] = 0;
    }
    __syncthreads(); // (also orders the pads before the first search)
    for (int eb = 0; eb < total; eb += 4 * nt) {
      unsigned wb[4];
#pragma unroll
      for (int u = 0; u < 4; u++) {
        const int e = eb + u * nt + tid;
        const ndf_i64 b = e < total ? lbase[e & (LW - 1)] : -1;
        wb[u] = b >= 0 ? gw[b + (ndf_i64)(e >> lsh) * inner] : NDF_WNONE;
      }
#pragma unroll
      for (int u = 0; u < 4; u++) {
        const int e = eb + u * nt + tid, k = e & (LW - 1);
        if (e < total) {
          tw[k * P + (e >> lsh)] = wb[u];
          if (wb[u] != NDF_WNONE) lany[k] = 1;
        }
      }
    }
    __syncthreads();
    int k = k0, x = i0, mylong = 0;
    for (int e = tid; e < total; e += nt) {
      if (lbase[k] >= 0) {
        unsigned best = NDF_WNONE;
        if (lany[k] && !ndf_sdsearch2<1>(tw + k * P + x, x > n - 1 - x ? x : n - 1 - x, s2, cap, best)) {
          llong[k] = 1; // the line's envelope answers this voxel
          mylong = 1;
        } else {
          ot[x * (LW + 1) + k] = best;
        }
      }
      k += dk;
      x += di;
      if (x >= n) {
        x -= n;
        k++;
      }
    }
    const int anylong = __syncthreads_or(mylong); // (the barrier: ot is complete)
    for (int e = tid; e < total; e += nt) {
      const int kk = e & (LW - 1), xx = e >> lsh;
      const ndf_i64 b = lbase[kk];
      if (b >= 0 && !llong[kk]) dw[b + (ndf_i64)xx * inner] = ot[xx * (LW + 1) + kk];
    }
    if (anylong) { // some line searched too far: its envelope answers all its positions
      __syncthreads(); // ot is written out before the stacks overwrite it
      if (tid < LW && llong[tid]) lG[tid] = ndf_senv(tw + tid * P, 1, n, stk + tid * n, (ndf_i64)p.s);
      __syncthreads();
      for (int e = tid; e < total; e += nt) {
        const int kk = e & (LW - 1), xx = e >> lsh;
        if (!llong[kk]) continue;
        unsigned best;
        ndf_squery(tw + kk * P, 1, stk + kk * n, lG[kk], xx, s2, best);
        dw[lbase[kk] + (ndf_i64)xx * inner] = best;
      }
    }
  }
}

#if NDF_KERNEL(ndf_edt_sdmidt)
extern "C" __global__ void __launch_bounds__(256, 6) ndf_edt_sdmidt(const ndf_edt_params p) {
  extern __shared__ __align__(16) unsigned char ndf_wsmem[];
  __shared__ ndf_i64 lbase[32]; // working index of each line's start (-1: past the last line)
  __shared__ int lany[32];      // the line has a site
  __shared__ int llong[32];     // a search of the line went past p.scap: its envelope answers it
  __shared__ int lG[32];        // the envelope's length
  if (p.slw == 8)
    ndf_sdmidt_body<8>(p, ndf_wsmem, lbase, lany, llong, lG);
  else if (p.slw == 16)
    ndf_sdmidt_body<16>(p, ndf_wsmem, lbase, lany, llong, lG);
  else
    ndf_sdmidt_body<32>(p, ndf_wsmem, lbase, lany, llong, lG);
}
#endif
#endif

#if !FIRST && LAST && !HAS_IDX
// ndf_edt_srows without indices: R rows staged as [pad + k (n + pad) + i]
// (a row's right pad is the next row's left pad; written once), a thread per
// voxel; (k, i) of element e = k n + i advanced without divisions.
#if NDF_KERNEL(ndf_edt_sdrows)
extern "C" __global__ void __launch_bounds__(256, 6) ndf_edt_sdrows(const ndf_edt_params p) {
  extern __shared__ __align__(16) unsigned char ndf_wsmem[];
  __shared__ ndf_i64 rdb[32]; // each row's output offset
  __shared__ int rany[32];    // the row has a site (else the image has no background)
  __shared__ int rlong[32];   // a search of the row went past p.scap: its envelope answers it
  __shared__ int rG[32];      // the envelope's length
  __shared__ double sq[256];  // sqrt(0 .. 255): the distances of most voxels (the same correctly rounded values)
  const int tid = threadIdx.x, nt = blockDim.x, R = (int)p.slw, n = (int)p.n, cap = p.scap, pad = ndf_spad(n, cap);
  const int P = n + pad, dk = nt / n, di = nt - dk * n, k0 = tid / n, i0 = tid - k0 * n;
  const unsigned s2 = (unsigned)p.s * (unsigned)p.s;
  const unsigned *gw = (const unsigned *)(const void *)p.sw;
  const ndf_i64 ds = p.dstr[p.axis];
  unsigned *sw = (unsigned *)ndf_wsmem, *tw = sw + pad; // row k, position i: tw[k P + i]
  unsigned short *stk = (unsigned short *)(sw + pad + R * P); // [row * n + l]
  for (int e = tid; e < 256; e += nt) sq[e] = sqrt((double)e);
  for (int e = tid; e < pad; e += nt) sw[e] = NDF_WNONE;
  for (int e = tid; e < R * pad; e += nt) {
    const int k = e / pad;
    tw[k * P + n + e - k * pad] = NDF_WNONE;
  }
  const ndf_i64 ngroups = (p.nlines + R - 1) / R;
  for (ndf_i64 g = blockIdx.x; g < ngroups; g += gridDim.x) {
    const ndf_i64 r0 = g * R;
    const int rows = p.nlines - r0 < R ? (int)(p.nlines - r0) : R, cnt = rows * n;
    if (tid < rows) {
      rdb[tid] = ndf_offset(p, (r0 + tid) * p.n, p.dstr);
      rany[tid] = 0;
      rlong[tid] = 0;
    }
    __syncthreads(); // (also orders the pads before the first search)
    const ndf_i64 base = r0 * p.n; // the rows are one contiguous chunk of the source
    int k = k0, i = i0;
    for (int eb = 0; eb < cnt; eb += 4 * nt) {
      unsigned wb[4];
      int kk[4];
#pragma unroll
      for (int u = 0; u < 4; u++) {
        const int e = eb + u * nt + tid;
        wb[u] = e < cnt ? gw[base + e] : NDF_WNONE;
        kk[u] = k;
        k += dk;
        i += di;
        if (i >= n) {
          i -= n;
          k++;
        }
      }
#pragma unroll
      for (int u = 0; u < 4; u++) {
        const int e = eb + u * nt + tid;
        if (e < cnt) {
          tw[e + kk[u] * pad] = wb[u];
          if (wb[u] != NDF_WNONE) rany[kk[u]] = 1;
        }
      }
    }
    __syncthreads();
    k = k0;
    i = i0;
    int mylong = 0;
    for (int e = tid; e < cnt; e += nt) {
      if (!rany[k]) { // the image has no background
        ndf_emit(p, rdb[k] + i * ds, 0, -1, ndf_nobg(p, (r0 + k) * p.n + i));
      } else {
        unsigned best;
        if (ndf_sdsearch2<1>(tw + k * P + i, i > n - 1 - i ? i : n - 1 - i, s2, cap, best)) {
#if HAS_DIST
          p.dist[rdb[k] + i * ds] = (DOUT)(best < 256u ? sq[best] : sqrt((double)best));
#endif
        } else { // the row's envelope writes this voxel
          rlong[k] = 1;
          mylong = 1;
        }
      }
      k += dk;
      i += di;
      if (i >= n) {
        i -= n;
        k++;
      }
    }
    if (__syncthreads_or(mylong)) { // some row searched too far: its envelope answers all its positions
      if (tid < rows && rlong[tid]) rG[tid] = ndf_senv(tw + tid * P, 1, n, stk + tid * n, (ndf_i64)p.s);
      __syncthreads();
      k = k0;
      i = i0;
      for (int e = tid; e < cnt; e += nt) {
        if (rlong[k]) {
          unsigned best;
          ndf_squery(tw + k * P, 1, stk + k * n, rG[k], i, s2, best);
          ndf_emit(p, rdb[k] + i * ds, 0, 0, (double)best);
        }
        k += dk;
        i += di;
        if (i >= n) {
          i -= n;
          k++;
        }
      }
      __syncthreads();
    } // (__syncthreads_or is the barrier before the next group overwrites the staging and the row tables)
  }
}
#endif
#endif
