// rank.cu -- median, rank and percentile filters: one thread per output,
// the window in registers, shared loads through a shared-memory tile.
//
// A block covers RZ x (TY*RY) x TX outputs: TX along the last axis X, TY*RY
// along Y (the axis before it), and RZ consecutive positions along Z, the
// innermost axis in front of Y, when the window spans it (RZ = 1 otherwise);
// every other axis in front (batch axes included) is an outer index.  The
// block first copies into shared memory, for each of the NPLANES distinct
// offset tuples along the spatial axes in front of Y that its windows read
// (shifted by 0..RZ-1 along Z), the (TY*RY+KY-1) x (TX+KX-1) input patch,
// with the boundary mode already applied (cval where a tap leaves the image
// in constant mode).  A thread computes RY consecutive rows times RZ planes;
// output (j, i) reads its taps at compile-time offsets OFFS[j * N + k]
// (plane * PATCH + dy * W + dx from the thread's corner), so neighbouring
// outputs share their loads through the tile.
//
// ALGO 0: a generated selection network (gen/selnet.lua, NET) runs as
//         straight-line min/max code on registers; the result is register
//         OUTREG.  Windows holding NaN: NaN (propagate), or the bitwise
//         select below on the values that are not NaN (omit).
// ALGO 1: bitwise radix select on order-preserving integer keys, one pass
//         over the window per key bit, for windows without a network.
// ALGO 2: the 3x3 median (a full 3x3 box over Y and X, RZ = 1): rows of
//         three sorted once and shared by a thread's RY outputs (below).
// ALGO 3: ALGO 2 with the tile load unrolled: a thread maps its (at most
//         NCOL) tile columns once, then issues all its rows' loads back to
//         back (no boundary mapping per element, loads in flight together).
// Both are exact; a tie cannot change the value returned (equal keys are
// equal values; -0.0 takes the key of 0.0, so a zero may come back as
// either sign, which ADR 0005 leaves unspecified).
#include "ndf_common.cuh"

typedef NDF_SLOT(T) T;
#define KIND NDF_SLOT(KIND)          /* 0 unsigned integer, 1 signed integer, 2 floating point */
#define TBITS NDF_SLOT(TBITS)        /* bits of T */
#define MODE NDF_SLOT(MODE)
#define NAN_OMIT NDF_SLOT(NAN_OMIT)  /* 0 propagate, 1 omit */
#define ALGO NDF_SLOT(ALGO)
#define N NDF_SLOT(N)                /* taps */
#define RKIND NDF_SLOT(RKIND)        /* 0 median, 1 rank, 2 percentile */
#define RPARAM NDF_SLOT(RPARAM)      /* the rank (RKIND 1) or percentile (RKIND 2) */
#define OUTREG NDF_SLOT(OUTREG)
#define TX NDF_SLOT(TX)
#define TY NDF_SLOT(TY)
#define RY NDF_SLOT(RY)              /* rows per thread */
#define RZ NDF_SLOT(RZ)              /* planes per block along Z (1: none) */
#define KY NDF_SLOT(KY)              /* patch extent added along Y and X */
#define KX NDF_SLOT(KX)
#define NPLANES NDF_SLOT(NPLANES)
#define NLEADSP NDF_SLOT(NLEADSP)    /* spatial axes in front of Y and X that taps move along */

#define W (TX + KX - 1)
#define ROWS (TY * RY + KY - 1)
#define PATCH (ROWS * W)

#if TBITS == 8
typedef unsigned char K;
#elif TBITS == 16
typedef unsigned short K;
#elif TBITS == 32
typedef unsigned int K;
#else
typedef unsigned long long K;
#endif

__constant__ int ndf_offs[RZ * N] = {NDF_SLOT(OFFS)};
#if NLEADSP > 0
__constant__ int ndf_planes[NPLANES * NLEADSP] = {NDF_SLOT(PLANES)};
#else
#define ndf_planes_unused NDF_SLOT(PLANES)
#endif

NDF_PARAMS(ndf_rank_params)

__device__ __forceinline__ bool ndf_isnan(T v) {
#if KIND == 2
  return v != v;
#else
  return false;
#endif
}

__device__ __forceinline__ T ndf_nan() {
#if KIND == 2
  return (T)__int_as_float(0x7fc00000);
#else
  return (T)0;
#endif
}

// Order-preserving key of a value that is not NaN, and back.
__device__ __forceinline__ K ndf_key(T v) {
#if KIND == 0
  return (K)v;
#elif KIND == 1
  return (K)((K)v ^ ((K)1 << (TBITS - 1)));
#elif TBITS == 32
  unsigned int b = (float)v == 0.0f ? 0u : __float_as_uint((float)v); // -0.0 is 0.0
  return (K)(b ^ ((b >> 31) ? 0xffffffffu : 0x80000000u));
#else
  unsigned long long b = (double)v == 0.0 ? 0ull : (unsigned long long)__double_as_longlong((double)v);
  return (K)(b ^ ((b >> 63) ? 0xffffffffffffffffull : 0x8000000000000000ull));
#endif
}

__device__ __forceinline__ T ndf_unkey(K k) {
#if KIND == 0
  return (T)k;
#elif KIND == 1
  return (T)(K)(k ^ ((K)1 << (TBITS - 1)));
#elif TBITS == 32
  unsigned int b = (unsigned int)k;
  return (T)__uint_as_float((b >> 31) ? (b ^ 0x80000000u) : ~b);
#else
  unsigned long long b = (unsigned long long)k;
  return (T)__longlong_as_double((long long)((b >> 63) ? (b ^ 0x8000000000000000ull) : ~b));
#endif
}

#include "ndf_rank.cuh" // ndf_rank_of: the rank among m values (m < N only under NaN omission)

// Bitwise select over the window in the tile; NaN excluded (omit) or
// returned (propagate).  NDF_LEAN (ADR 0025): out of line where it is the
// networks' fallback for windows holding a NaN (NaN omission), one copy
// instead of one per output of a thread (a 5x5 float32 median: half the
// compile time).
#ifndef NDF_LEAN
#define NDF_LEAN 0
#endif
#if NDF_LEAN && ALGO == 0
__device__ __noinline__ T ndf_select_bits(const T *s, int j) {
#else
__device__ T ndf_select_bits(const T *s, int j) {
#endif
  const int *offs = ndf_offs + j * N;
  int m = 0;
#if KIND == 2
  for (int i = 0; i < N; i++) {
    bool nan = ndf_isnan(s[offs[i]]);
#if !NAN_OMIT
    if (nan) return ndf_nan();
#endif
    m += !nan;
  }
#else
  m = N;
#endif
  const int k0 = ndf_rank_of(m);
  if (m == 0 || k0 >= m || k0 < 0) return ndf_nan();
  int k = k0;
  K prefix = 0;
  for (int b = TBITS - 1; b >= 0; b--) {
    const K hi = (K)(0xffffffffffffffffull << b); // the bits fixed so far and bit b
    int c = 0;
#pragma unroll 4
    for (int i = 0; i < N; i++) {
      T v = s[offs[i]];
      c += !ndf_isnan(v) && (K)(ndf_key(v) & hi) == prefix;
    }
    if (k >= c) {
      k -= c;
      prefix |= (K)((K)1 << b);
    }
  }
  return ndf_unkey(prefix);
}

#if ALGO == 0
// Steps of the network: compare-exchange, min only, max only.
// NaN never reaches the network, so fminf/fmaxf (one instruction) are exact.
#if KIND == 2 && TBITS == 32
#define LO(a, b) fminf(a, b)
#define HI(a, b) fmaxf(a, b)
#elif KIND == 2
#define LO(a, b) fmin(a, b)
#define HI(a, b) fmax(a, b)
#else
#define LO(a, b) ((b) < (a) ? (b) : (a))
#define HI(a, b) ((b) < (a) ? (a) : (b))
#endif
#define X(a, b) { T lo_ = LO(v[a], v[b]); T hi_ = HI(v[a], v[b]); v[a] = lo_; v[b] = hi_; }
#define MN(a, b) { v[a] = LO(v[a], v[b]); }
#define MX(a, b) { v[b] = HI(v[a], v[b]); }
__device__ __forceinline__ T ndf_select(const T *s, int j) {
  constexpr int ndf_coffs[RZ * N] = {NDF_SLOT(OFFS)};
  T v[N];
  bool nan = false;
#pragma unroll
  for (int i = 0; i < N; i++) {
    v[i] = s[ndf_coffs[j * N + i]];
    nan = nan || ndf_isnan(v[i]);
  }
  if (nan) {
#if NAN_OMIT
    return ndf_select_bits(s, j);
#else
    return ndf_nan();
#endif
  }
  NDF_SLOT(NET)
  return v[OUTREG];
}
#elif ALGO >= 2
// 3x3 median: each row of three sorted once (shared by the RY outputs of a
// thread, which slide down), then the median of (the largest low, the median
// of the middles, the smallest high): exactly the value of rank 4 (checked
// exhaustively on 0/1 inputs in tests/test_selnet.c).  NaN never reaches the
// min/max (rows holding one are flagged).
#if KIND == 2 && TBITS == 32
#define LO(a, b) fminf(a, b)
#define HI(a, b) fmaxf(a, b)
#elif KIND == 2
#define LO(a, b) fmin(a, b)
#define HI(a, b) fmax(a, b)
#else
#define LO(a, b) ((b) < (a) ? (b) : (a))
#define HI(a, b) ((b) < (a) ? (a) : (b))
#endif
#define ndf_net_unused NDF_SLOT(NET) NDF_SLOT(OUTREG)
__device__ __forceinline__ T ndf_select(const T *s, int j) { return ndf_select_bits(s, j); } // not reached
struct ndf_row3 {
  T lo, md, hi;
  bool nan;
};
__device__ __forceinline__ ndf_row3 ndf_sort_row(const T *s) {
  const T a = s[0], b = s[1], c = s[2];
  ndf_row3 r;
  r.nan = ndf_isnan(a) || ndf_isnan(b) || ndf_isnan(c);
  const T l = LO(a, b), h = HI(a, b);
  r.lo = LO(l, c);
  const T m = HI(l, c);
  r.md = LO(h, m);
  r.hi = HI(h, m);
  return r;
}
__device__ __forceinline__ T ndf_med3(T a, T b, T c) { return HI(LO(a, b), LO(HI(a, b), c)); }
#else
#define ndf_net_unused NDF_SLOT(NET) NDF_SLOT(OUTREG)
__device__ __forceinline__ T ndf_select(const T *s, int j) { return ndf_select_bits(s, j); }
#endif

// q, r = a / b, a % b, in 32 bits when both fit (the usual case).
__device__ __forceinline__ void ndf_divmod(ndf_i64 a, ndf_i64 b, ndf_i64 &q, ndf_i64 &r) {
  if (((a | b) >> 31) == 0) {
    unsigned int q32 = (unsigned int)a / (unsigned int)b;
    q = q32;
    r = a - (ndf_i64)q32 * b;
  } else {
    q = a / b;
    r = a - q * b;
  }
}

// ALGO 2 fits in 32 registers without spilling (data up to 32 bits, NaN
// propagated): 8 blocks of 256 threads per SM, so the 8x3x256^2 benchmark's
// 768 blocks run as one wave.
#if ALGO >= 2 && TBITS <= 32 && !NAN_OMIT
#define NDF_MINB 8
#else
#define NDF_MINB 1
#endif
extern "C" __global__ void __launch_bounds__(TX * TY, NDF_MINB) ndf_rank(const ndf_rank_params p) {
  extern __shared__ __align__(16) unsigned char ndf_smem[];
  T *tile = reinterpret_cast<T *>(ndf_smem);
  const T cv = (T)p.cval;
  const ndf_i64 ntiles = p.ntx * p.nty * p.nouter;
  const int zaxis = RZ > 1 ? p.nlead - 1 : -1; // the lead axis a block covers RZ positions of
  for (ndf_i64 t = blockIdx.x; t < ntiles; t += gridDim.x) {
    ndf_i64 r, bx, o, by;
    ndf_divmod(t, p.ntx, r, bx);
    ndf_divmod(r, p.nty, o, by);
    ndf_i64 lc[NDF_MAX_NDIM];
    ndf_i64 obase = 0;
    for (int d = p.nlead - 1; d >= 0; d--) {
      ndf_i64 q;
      ndf_divmod(o, p.lblocks[d], q, lc[d]);
      o = q;
      if (d == zaxis) lc[d] *= RZ;
      obase += lc[d] * p.lostr[d];
    }
    const ndf_i64 y0 = by * (TY * RY) + p.ylo, x0 = bx * TX + p.xlo;
    __syncthreads(); // the previous tile has been read
#if ALGO == 3 && NPLANES == 1
    {
      // The lead axes map once (NPLANES = 1: one offset tuple), this thread's
      // columns once for all its rows; per column, the loads of all its rows
      // issue before any shared store (read-only path: the output never
      // overlaps the input).
      ndf_i64 ib = 0;
      bool outside = false;
      for (int d = 0; d < p.nlead; d++) {
        ndf_i64 c = lc[d];
#if NLEADSP > 0
        const int j = d - (p.nlead - NLEADSP);
        if (j >= 0) c += ndf_planes[j];
#endif
        const ndf_i64 m = ndf_map(c, p.lshape[d], MODE);
        outside = outside || m < 0;
        ib += m * p.listr[d];
      }
      constexpr int NCOL = (W + TX - 1) / TX, NROW = (ROWS + TY - 1) / TY;
      ndf_i64 xo[NCOL];
#pragma unroll
      for (int ci = 0; ci < NCOL; ci++) {
        const int cc = threadIdx.x + ci * TX;
        const ndf_i64 mx = cc < W ? ndf_map(x0 + cc, p.nx, MODE) : -1;
        xo[ci] = mx < 0 ? -1 : mx * p.ixs;
      }
      T v[NROW];
#pragma unroll
      for (int ri = 0; ri < NROW; ri++) {
        const int rr = threadIdx.y + ri * TY;
        const ndf_i64 my = rr < ROWS ? ndf_map(y0 + rr, p.ny, MODE) : -1;
        v[ri] = (outside || my < 0 || xo[0] < 0) ? cv : __ldg(p.in + ib + my * p.iys + xo[0]);
      }
#pragma unroll
      for (int ri = 0; ri < NROW; ri++) {
        const int rr = threadIdx.y + ri * TY;
        if (rr < ROWS) tile[rr * W + threadIdx.x] = v[ri];
      }
#pragma unroll
      for (int ci = 1; ci < NCOL; ci++) {
        const int cc = threadIdx.x + ci * TX;
        if (cc < W) {
#pragma unroll
          for (int ri = 0; ri < NROW; ri++) {
            const int rr = threadIdx.y + ri * TY;
            const ndf_i64 my = rr < ROWS ? ndf_map(y0 + rr, p.ny, MODE) : -1;
            v[ri] = (outside || my < 0 || xo[ci] < 0) ? cv : __ldg(p.in + ib + my * p.iys + xo[ci]);
          }
#pragma unroll
          for (int ri = 0; ri < NROW; ri++) {
            const int rr = threadIdx.y + ri * TY;
            if (rr < ROWS) tile[rr * W + cc] = v[ri];
          }
        }
      }
    }
#else
    for (int pl = 0; pl < NPLANES; pl++) {
      ndf_i64 ib = 0;
      bool outside = false;
      for (int d = 0; d < p.nlead; d++) {
        ndf_i64 c = lc[d];
#if NLEADSP > 0
        const int j = d - (p.nlead - NLEADSP);
        if (j >= 0) c += ndf_planes[pl * NLEADSP + j];
#endif
        ndf_i64 m = ndf_map(c, p.lshape[d], MODE);
        outside = outside || m < 0;
        ib += m * p.listr[d];
      }
      for (int rr = threadIdx.y; rr < ROWS; rr += TY) {
        const ndf_i64 my = ndf_map(y0 + rr, p.ny, MODE);
        const bool rowout = outside || my < 0;
        const T *src = p.in + ib + my * p.iys;
        T *dst = tile + pl * PATCH + rr * W;
        for (int cc = threadIdx.x; cc < W; cc += TX) {
          const ndf_i64 mx = ndf_map(x0 + cc, p.nx, MODE);
          dst[cc] = (rowout || mx < 0) ? cv : src[mx * p.ixs];
        }
      }
    }
#endif
    __syncthreads();
    const ndf_i64 x = bx * TX + threadIdx.x;
    if (x >= p.nx) continue;
    const T *s = tile + threadIdx.y * RY * W + threadIdx.x;
#if ALGO >= 2
    {
      T *out = p.out + obase + x * p.oxs;
      ndf_row3 r0 = ndf_sort_row(s), r1 = ndf_sort_row(s + W);
#pragma unroll
      for (int jy = 0; jy < RY; jy++) {
        const ndf_i64 y = by * (TY * RY) + threadIdx.y * RY + jy;
        if (y >= p.ny) break;
        const ndf_row3 r2 = ndf_sort_row(s + (jy + 2) * W);
        T res;
        if (r0.nan || r1.nan || r2.nan) {
#if NAN_OMIT
          res = ndf_select_bits(s + jy * W, 0);
#else
          res = ndf_nan();
#endif
        } else {
          res = ndf_med3(HI(HI(r0.lo, r1.lo), r2.lo), ndf_med3(r0.md, r1.md, r2.md), LO(LO(r0.hi, r1.hi), r2.hi));
        }
        out[y * p.oys] = res;
        r0 = r1;
        r1 = r2;
      }
    }
    continue;
#endif
#pragma unroll
    for (int jz = 0; jz < RZ; jz++) {
      if (RZ > 1 && lc[zaxis] + jz >= p.lshape[zaxis]) break;
      T *out = p.out + obase + (RZ > 1 ? jz * p.lostr[zaxis] : 0) + x * p.oxs;
#pragma unroll
      for (int jy = 0; jy < RY; jy++) {
        const ndf_i64 y = by * (TY * RY) + threadIdx.y * RY + jy;
        if (y < p.ny) out[y * p.oys] = ndf_select(s + jy * W, jz);
      }
    }
  }
}
