// distance_cdt.cu -- one pass of distance_transform_cdt (distances only) for
// the taxicab and chessboard metrics, equal to the CPU backend's (scipy's
// two-pass chamfer), which for these two structures is the exact L1 / L-inf
// distance to the nearest background voxel of the image, -1 everywhere in an
// image without background (tests/test_cdt_separable.c checks the identity).
//
// Separable: pass 0 runs along the last axis, passes 1 .. nsp-1 along axes
// 0 .. nsp-2 (the order of the axes does not change the minimum), each over
// the whole batch.  Integers throughout: D = 0 on background, INF = 2^30
// elsewhere (the runtime refuses lines of 2^29 voxels or more, so D +- x and
// every distance stay below 2^31), and a pass computes on every line
//   taxicab     g(x) = min_y D(y) + |x - y|
//   chessboard  g(x) = min_y max(D(y), |x - y|)     (pass 0: same as taxicab)
// A line without a finite D keeps INF exactly; LAST writes INF as -1.
//
//   ndf_cdt_rows   pass 0 (reads the input, any dtype, strides): a
//                  warp per row; prefix-min of D(y) - y (forward) and
//                  suffix-min of D(y) + y (backward) by warp shuffles, 32
//                  voxels per step, coalesced.
//   ndf_cdt_seg    later taxicab passes: lines cut into segments, carries
//                  exchanged in shared memory (below); cdt.lines=simple
//                  runs ndf_cdt_lines instead.
//   ndf_cdt_ctile  later chessboard passes whose lines fit in shared memory:
//                  an outward search per voxel, O(distance) (below);
//                  cdt.lines=simple runs ndf_cdt_lines instead.
//   ndf_cdt_lines  later passes: a thread per line, threads along the
//                  contiguous axis (coalesced).  Taxicab: the two recurrences
//                  f(x) = min(f(x-1) + 1, D(x)), g(x) = min(g(x+1) + 1, f(x)).
//                  Chessboard: forward h(x) = min_{y<=x} max(D(y), x - y) with
//                  a monotone deque of (y, D(y)) (D strictly increasing with
//                  y; the front expires once x - y > D(y), and then the
//                  latest expired y is the best of all expired ones), the
//                  same backward on D, g = min of both.  The deque lives in
//                  scratch, [k][line] (coalesced).
// The forward result is stored in the destination (the output when LAST) and
// re-read by the same thread in the backward sweep.
#include "ndf_common.cuh"

typedef NDF_SLOT(TIN) TIN;   // input element type (ndf_cdt_rows)
#define LAST NDF_SLOT(LAST)
#define CHESS NDF_SLOT(CHESS)

#define NDF_CDT_INF (1 << 30)

NDF_PARAMS(ndf_cdt_params)

// Offset of working index `flat` (C order over shape) in an array with strides str.
__device__ __forceinline__ ndf_i64 ndf_cdt_offset(const ndf_cdt_params &p, ndf_i64 flat, const ndf_i64 *str) {
  ndf_i64 off = 0;
  for (int a = p.nd - 1; a >= 0; a--) {
    const ndf_i64 q = flat / p.shape[a];
    off += (flat - q * p.shape[a]) * str[a];
    flat = q;
  }
  return off;
}

__device__ __forceinline__ int ndf_cdt_final(int g) { return g >= NDF_CDT_INF ? -1 : g; }

// ---- pass 0: the last axis, a warp per row ------------------------------------------

#if NDF_KERNEL(ndf_cdt_rows)
extern "C" __global__ void __launch_bounds__(128) ndf_cdt_rows(const ndf_cdt_params p) {
  const int lane = threadIdx.x & 31;
  const ndf_i64 n = p.n;
  const ndf_i64 nwarps = (ndf_i64)gridDim.x * (blockDim.x >> 5);
  for (ndf_i64 r = (ndf_i64)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); r < p.nlines; r += nwarps) {
    const ndf_i64 w0 = r * n;
    const ndf_i64 ib = ndf_cdt_offset(p, w0, p.istr), is = p.istr[p.nd - 1];
#if LAST
    const ndf_i64 ob = ndf_cdt_offset(p, w0, p.ostr), os = p.ostr[p.nd - 1];
#define NDF_CDT_AT(x) p.out[ob + (x) * os]
#else
#define NDF_CDT_AT(x) p.dst[w0 + (x)]
#endif
    if (p.stage) {
      // The row in shared memory, lane l owning x = l, l + 32, ... (no lane
      // reads another's slots: no synchronisation).  Independent loads first,
      // then f in place of D (f(x) = 0 exactly where D(x) = 0, so the
      // backward sweep recovers D from f).
      extern __shared__ int ndf_cdt_srow[];
      int *row = ndf_cdt_srow + (threadIdx.x >> 5) * n;
#pragma unroll 8
      for (ndf_i64 x = lane; x < n; x += 32) row[x] = p.in[ib + x * is] != (TIN)0 ? NDF_CDT_INF : 0;
      int c = NDF_CDT_INF;
      for (ndf_i64 b = 0; b < n; b += 32) {
        const ndf_i64 x = b + lane;
        int v = x < n ? row[x] - (int)x : NDF_CDT_INF;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
          const int u = __shfl_up_sync(0xffffffffu, v, o);
          if (lane >= o) v = min(v, u);
        }
        v = min(v, c);
        c = __shfl_sync(0xffffffffu, v, 31);
        if (x < n) row[x] = v + (int)x;
      }
      c = 0x7fffffff;
      for (ndf_i64 b = ((n + 31) / 32 - 1) * 32; b >= 0; b -= 32) {
        const ndf_i64 x = b + lane;
        const int f = x < n ? row[x] : 0;
        int v = x < n ? (f == 0 ? 0 : NDF_CDT_INF) + (int)x : 0x7fffffff;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
          const int u = __shfl_down_sync(0xffffffffu, v, o);
          if (lane + o < 32) v = min(v, u);
        }
        v = min(v, c);
        c = __shfl_sync(0xffffffffu, v, 0);
        if (x < n) {
          const int g = min(f, v - (int)x);
#if LAST
          NDF_CDT_AT(x) = ndf_cdt_final(g);
#else
          NDF_CDT_AT(x) = g;
#endif
        }
      }
      continue;
    }
    // forward: f(x) = x + min_{y <= x} (D(y) - y)
    int carry = NDF_CDT_INF;
    for (ndf_i64 b = 0; b < n; b += 32) {
      const ndf_i64 x = b + lane;
      int v = NDF_CDT_INF;
      if (x < n) v = (p.in[ib + x * is] != (TIN)0 ? NDF_CDT_INF : 0) - (int)x;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const int u = __shfl_up_sync(0xffffffffu, v, o);
        if (lane >= o) v = min(v, u);
      }
      v = min(v, carry);
      carry = __shfl_sync(0xffffffffu, v, 31);
      if (x < n) NDF_CDT_AT(x) = v + (int)x;
    }
    // backward: g(x) = min(f(x), min_{y >= x} (D(y) + y) - x)
    carry = 0x7fffffff; // above every D(y) + y
    for (ndf_i64 b = ((n + 31) / 32 - 1) * 32; b >= 0; b -= 32) {
      const ndf_i64 x = b + lane;
      int v = 0x7fffffff;
      if (x < n) v = (p.in[ib + x * is] != (TIN)0 ? NDF_CDT_INF : 0) + (int)x;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const int u = __shfl_down_sync(0xffffffffu, v, o);
        if (lane + o < 32) v = min(v, u);
      }
      v = min(v, carry);
      carry = __shfl_sync(0xffffffffu, v, 0);
      if (x < n) {
        const int g = min(NDF_CDT_AT(x), v - (int)x);
#if LAST
        NDF_CDT_AT(x) = ndf_cdt_final(g);
#else
        NDF_CDT_AT(x) = g;
#endif
      }
    }
#undef NDF_CDT_AT
  }
}
#endif

// ---- later passes: a thread per line -------------------------------------------------

#if NDF_KERNEL(ndf_cdt_lines)
extern "C" __global__ void __launch_bounds__(128) ndf_cdt_lines(const ndf_cdt_params p) {
  const ndf_i64 n = p.n, inner = p.inner;
  for (ndf_i64 L = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x; L < p.nlines; L += (ndf_i64)gridDim.x * blockDim.x) {
    const ndf_i64 o = L / inner, j = L - o * inner;
    const ndf_i64 w0 = o * n * inner + j; // working index of x = 0
    const int *src = p.src + w0;
#if LAST
    const ndf_i64 ob = ndf_cdt_offset(p, w0, p.ostr), os = p.ostr[p.axis];
    int *dst = p.out + ob;
    const ndf_i64 ds = os;
#else
    int *dst = p.dst + w0;
    const ndf_i64 ds = inner;
#endif
#if !CHESS
    int f = NDF_CDT_INF;
    for (ndf_i64 x = 0; x < n; x++) {
      f = min(f + 1, src[x * inner]);
      dst[x * ds] = f;
    }
    int g = NDF_CDT_INF;
    for (ndf_i64 x = n - 1; x >= 0; x--) {
      g = min(g + 1, dst[x * ds]);
#if LAST
      dst[x * ds] = ndf_cdt_final(g);
#else
      dst[x * ds] = g;
#endif
    }
#else
    int2 *q = p.deque + w0;
    // forward: h(x) = min_{y <= x} max(D(y), x - y)
    {
      ndf_i64 h = 0, t = 0;   // the deque is q[h .. t)
      ndf_i64 yexp = -1;      // the latest expired y (none: -1)
      int2 front = make_int2(0, 0);
      for (ndf_i64 x = 0; x < n; x++) {
        const int dx = src[x * inner];
        while (t > h && q[(t - 1) * inner].y >= dx) t--;
        q[t * inner] = make_int2((int)x, dx);
        if (t == h) front = make_int2((int)x, dx);
        t++;
        while ((ndf_i64)front.x + front.y < x) {
          yexp = front.x;
          h++;
          front = q[h * inner];
        }
        int v = front.y;
        if (yexp >= 0) v = min(v, (int)(x - yexp));
        dst[x * ds] = v;
      }
    }
    // backward: min_{y >= x} max(D(y), y - x), then the minimum of both
    {
      ndf_i64 h = 0, t = 0;
      ndf_i64 yexp = -1;
      int2 front = make_int2(0, 0);
      for (ndf_i64 x = n - 1; x >= 0; x--) {
        const int dx = src[x * inner];
        while (t > h && q[(t - 1) * inner].y >= dx) t--;
        q[t * inner] = make_int2((int)x, dx);
        if (t == h) front = make_int2((int)x, dx);
        t++;
        while ((ndf_i64)front.x - front.y > x) {
          yexp = front.x;
          h++;
          front = q[h * inner];
        }
        int v = front.y;
        if (yexp >= 0) v = min(v, (int)(yexp - x));
        const int g = min(v, dst[x * ds]);
#if LAST
        dst[x * ds] = ndf_cdt_final(g);
#else
        dst[x * ds] = g;
#endif
      }
    }
#endif
  }
}
#endif

// ---- taxicab, later passes: segmented recurrences -------------------------------------
//
// A block takes blockDim.x (8, 16 or 32) consecutive lines (threadIdx.x,
// coalesced) and cuts each into blockDim.y segments.  A thread first runs
// both recurrences over its segment alone (the forward value at its end, the
// backward value at its start), the block exchanges them in shared memory,
// and each thread derives its carries -- f just before its segment, g just
// after it: min over the other segments of their value plus the distance --
// then runs the recurrences again from the carries and writes.
#if NDF_KERNEL(ndf_cdt_seg)
extern "C" __global__ void __launch_bounds__(1024) ndf_cdt_seg(const ndf_cdt_params p) {
  __shared__ int sfe[1024], sbe[1024]; // [segment * lw + line in block]
  const ndf_i64 n = p.n, inner = p.inner;
  const int tx = threadIdx.x, ty = threadIdx.y, nseg = blockDim.y, lw = blockDim.x;
  const ndf_i64 seg = (n + nseg - 1) / nseg;
  const ndf_i64 x0 = ty * seg < n ? ty * seg : n, x1 = x0 + seg < n ? x0 + seg : n;
  const ndf_i64 ngroups = (p.nlines + lw - 1) / lw;
  for (ndf_i64 gi = blockIdx.x; gi < ngroups; gi += gridDim.x) {
    const ndf_i64 L = gi * lw + tx;
    const bool active = L < p.nlines;
    const ndf_i64 o = L / inner, j = L - o * inner;
    const ndf_i64 w0 = o * n * inner + j;
    const int *src = p.src + (active ? w0 : 0);
    int ef = NDF_CDT_INF, eb = NDF_CDT_INF;
    if (active) {
      for (ndf_i64 x = x0; x < x1; x++) ef = min(ef + 1, src[x * inner]);
      for (ndf_i64 x = x1 - 1; x >= x0; x--) eb = min(eb + 1, src[x * inner]);
    }
    sfe[ty * lw + tx] = ef;
    sbe[ty * lw + tx] = eb;
    __syncthreads();
    int cf = NDF_CDT_INF, cb = NDF_CDT_INF; // f at x0 - 1, g at x1
    for (int k = 0; k < ty; k++) {
      const ndf_i64 xe = (k + 1) * seg < n ? (k + 1) * seg : n; // segment k ends before xe
      cf = min(cf, sfe[k * lw + tx] + (int)(x0 - xe));
    }
    for (int k = ty + 1; k < nseg; k++) {
      const ndf_i64 xs = k * seg < n ? k * seg : n; // segment k starts at xs
      cb = min(cb, sbe[k * lw + tx] + (int)(xs - x1));
    }
    cf = min(cf, NDF_CDT_INF);
    cb = min(cb, NDF_CDT_INF);
    __syncthreads(); // the exchange is read before the next group overwrites it
    if (!active) continue;
#if LAST
    int *dst = p.out + ndf_cdt_offset(p, w0, p.ostr);
    const ndf_i64 ds = p.ostr[p.axis];
#else
    int *dst = p.dst + w0;
    const ndf_i64 ds = inner;
#endif
    int f = cf;
    for (ndf_i64 x = x0; x < x1; x++) {
      f = min(f + 1, src[x * inner]);
      dst[x * ds] = f;
    }
    int g = cb;
    for (ndf_i64 x = x1 - 1; x >= x0; x--) {
      g = min(g + 1, dst[x * ds]);
#if LAST
      dst[x * ds] = ndf_cdt_final(g);
#else
      dst[x * ds] = g;
#endif
    }
  }
}
#endif

// ---- chessboard, later passes on lines that fit in shared memory ----------------------
//
// A block stages blockDim.x lines (threadIdx.x: coalesced along the
// contiguous axis) whole in shared memory, [x * lw + line]; thread (tx, ty)
// answers x = ty, ty + blockDim.y, ... of line tx by searching outwards:
//   best = D(x); for r = 1, 2, ... while r < best: best = min(best, max(D(x +- r), r))
// (a y farther than best cannot do better), so a voxel costs O(its distance)
// shared-memory reads.  A line without any finite D keeps INF at once.
#if NDF_KERNEL(ndf_cdt_ctile)
extern "C" __global__ void __launch_bounds__(1024) ndf_cdt_ctile(const ndf_cdt_params p) {
  extern __shared__ int ndf_cdt_scol[]; // lw * n ints, then lw flags
  const ndf_i64 n = p.n, inner = p.inner;
  const int tx = threadIdx.x, ty = threadIdx.y, lw = blockDim.x, by = blockDim.y;
  int *col = ndf_cdt_scol;
  int *fin = ndf_cdt_scol + lw * n;
  const ndf_i64 ngroups = (p.nlines + lw - 1) / lw;
  for (ndf_i64 gi = blockIdx.x; gi < ngroups; gi += gridDim.x) {
    const ndf_i64 L = gi * lw + tx;
    const bool active = L < p.nlines;
    const ndf_i64 o = L / inner, j = L - o * inner;
    const ndf_i64 w0 = o * n * inner + j;
    if (ty == 0) fin[tx] = 0;
    __syncthreads();
    if (active) {
      int any = 0;
      for (ndf_i64 x = ty; x < n; x += by) {
        const int d = p.src[w0 + x * inner];
        col[x * lw + tx] = d;
        any |= d < NDF_CDT_INF;
      }
      if (any) fin[tx] = 1; // every writer stores 1
    }
    __syncthreads();
    if (active) {
#if LAST
      int *dst = p.out + ndf_cdt_offset(p, w0, p.ostr);
      const ndf_i64 ds = p.ostr[p.axis];
#else
      int *dst = p.dst + w0;
      const ndf_i64 ds = inner;
#endif
      const int has = fin[tx];
      for (ndf_i64 x = ty; x < n; x += by) {
        int best = col[x * lw + tx];
        if (has)
          for (ndf_i64 r = 1; r < best && (x - r >= 0 || x + r < n); r++) {
            if (x - r >= 0) best = min(best, max(col[(x - r) * lw + tx], (int)r));
            if (x + r < n) best = min(best, max(col[(x + r) * lw + tx], (int)r));
          }
#if LAST
        dst[x * ds] = ndf_cdt_final(best);
#else
        dst[x * ds] = best;
#endif
      }
    }
    __syncthreads(); // the tile is read before the next group overwrites it
  }
}
#endif
