// rank_tile.cu -- median, rank and percentile filters over large 2-D box
// windows of data up to 32 bits: sort a tile once, then slide a bitset of
// tile ranks down each output column.
//
// A block of 64 threads (two warps) covers 32 output columns and S output
// rows.  It loads the TH x TW input tile its windows read (TH = S + KY - 1,
// TW = 32 + KX - 1, the boundary mode applied while loading), as 64-bit
// pairs (order-preserving key << 32 | tile position), and sorts them in
// shared memory with a bitonic network (RP2 = the next power of two, padded
// with all-ones; the steps between pairs less than 16 apart in registers).  The rank of a position in the sorted tile is then a small
// integer that orders the tile's values exactly as the keys do, ties broken
// by position; the sorted keys give the value back.
//
// Thread (half, lane) owns column lane and the rows half*S/2 .. +S/2: it
// keeps the set of tile ranks in its window as a bitset (R bits, word w at
// bits[w * 64 + thread], so a warp never shares a bank) plus counts per group
// of 16 words (two 16-bit counts per word).  Its first window sets KY*KX
// bits; each step down clears one row of KX and sets the next.  Updates are
// shared-memory atomics (each thread owns its words; atomics let the
// updates of a row issue back to back).  The k-th set bit is found from the
// group counts, then the words' population counts, then a binary search in
// the word.  Cost per output: about 2*KX bit updates plus the sort's share
// (RP2/2 log2(RP2)^2/2 / (32 S) compare-exchanges), independent of KY.
//
// NaN (floats): its key is all ones, and its position is marked 0xffff:
// never in the bitset, counted per window instead (propagate: NaN; omit:
// the rank among the others).  Exact for every rank; -0.0 takes the key of
// 0.0 (ADR 0005).
#include "ndf_common.cuh"

typedef NDF_SLOT(T) T;
#define KIND NDF_SLOT(KIND)          /* 0 unsigned integer, 1 signed integer, 2 floating point */
#define TBITS NDF_SLOT(TBITS)        /* bits of T: 8, 16 or 32 */
#define MODE NDF_SLOT(MODE)
#define NAN_OMIT NDF_SLOT(NAN_OMIT)  /* 0 propagate, 1 omit */
#define N NDF_SLOT(N)                /* taps: KY * KX */
#define RKIND NDF_SLOT(RKIND)        /* 0 median, 1 rank, 2 percentile */
#define RPARAM NDF_SLOT(RPARAM)
#define KY NDF_SLOT(KY)
#define KX NDF_SLOT(KX)
#define S NDF_SLOT(S)                /* output rows per block (even) */
#define RP2 NDF_SLOT(RP2)            /* power of two >= TH * TW */

#define BT 64
#define HALF (S / 2)
#define TW (32 + KX - 1)
#define TH (S + KY - 1)
#define R (TH * TW)
#define NWORDS ((R + 31) / 32)
#define NG ((NWORDS + 15) / 16)      /* groups of 16 words (512 ranks) */
#define NGP ((NG + 1) / 2)           /* words holding the groups' counts, two per word */
/* u32 words of the region holding first the sort buffer, then bits and counts. */
#define AW (2 * RP2 > (NWORDS + NGP) * BT ? 2 * RP2 : (NWORDS + NGP) * BT)

#if TBITS == 8
typedef unsigned char K;
#elif TBITS == 16
typedef unsigned short K;
#else
typedef unsigned int K;
#endif

NDF_PARAMS(ndf_tile_params)

// Order-preserving 32-bit key; NaN is all ones (only floats test it).
__device__ __forceinline__ unsigned int ndf_tkey(T v) {
#if KIND == 0
  return (unsigned int)v;
#elif KIND == 1
  return (unsigned int)(K)((K)v ^ (K)((K)1 << (TBITS - 1)));
#else
  if (v != v) return 0xffffffffu;
  unsigned int b = v == 0.0f ? 0u : __float_as_uint(v); // -0.0 is 0.0
  return b ^ ((b >> 31) ? 0xffffffffu : 0x80000000u);
#endif
}

__device__ __forceinline__ T ndf_untkey(unsigned int k) {
#if KIND == 0
  return (T)k;
#elif KIND == 1
  return (T)(K)((K)k ^ (K)((K)1 << (TBITS - 1)));
#else
  return __uint_as_float((k >> 31) ? (k ^ 0x80000000u) : ~k);
#endif
}

// The sort buffer is swizzled: pair a lives at SW(a), which permutes each
// run of 16 pairs so that threads reading whole runs (the register passes
// below) hit different banks.
#define E 16
#define SW(a) ((a) ^ (((a) >> 4) & (E - 1)))

__device__ __forceinline__ void ndf_ce(unsigned long long &x, unsigned long long &y, bool up) {
  const unsigned long long lo = x < y ? x : y, hi = x < y ? y : x;
  x = up ? lo : hi;
  y = up ? hi : lo;
}

// The bitonic steps j < E of the stages k_lo .. k_hi, in registers: runs of
// E consecutive pairs, one run per thread at a time.
__device__ __forceinline__ void ndf_run_pass(unsigned long long *buf, int t, int k_lo, int k_hi) {
  for (int c = t; c < RP2 / E; c += BT) {
    unsigned long long v[E];
#pragma unroll
    for (int i = 0; i < E; i++) v[i] = buf[SW(c * E + i)];
    for (int k = k_lo; k <= k_hi; k <<= 1) {
#pragma unroll
      for (int jj = E / 2; jj > 0; jj >>= 1) {
        if (jj < k) {
#pragma unroll
          for (int i = 0; i < E; i++)
            if ((i & jj) == 0) ndf_ce(v[i], v[i + jj], ((c * E + i) & k) == 0);
        }
      }
    }
#pragma unroll
    for (int i = 0; i < E; i++) buf[SW(c * E + i)] = v[i];
  }
}

#include "ndf_rank.cuh" // ndf_rank_of: the rank among m values (m < N only under NaN omission)

// Clears (add = 0) or sets (add = 1) the ranks of tile row `row`, columns lane .. lane+KX-1.
__device__ __forceinline__ void ndf_tile_row(const unsigned short *rpos, unsigned int *bits, int row, int lane,
                                             int t, bool add, int &nanc) {
  const unsigned short *rp = rpos + row * TW + lane;
  unsigned int *cnt = bits + NWORDS * BT;
#pragma unroll 8
  for (int dx = 0; dx < KX; dx++) {
    const unsigned int q = rp[dx];
#if KIND == 2
    if (q == 0xffffu) {
      nanc += add ? 1 : -1;
      continue;
    }
#endif
    atomicXor(&bits[(q >> 5) * BT + t], 1u << (q & 31));
    const unsigned int g = q >> 9, one = 1u << ((g & 1) * 16);
    atomicAdd(&cnt[(g >> 1) * BT + t], add ? one : 0u - one);
  }
}

// The tile rank of the k-th (0-based) set bit of thread t's bitset.
__device__ __forceinline__ int ndf_tile_kth(const unsigned int *bits, int t, int k) {
  const unsigned int *cnt = bits + NWORDS * BT;
  unsigned int cw[NGP];
#pragma unroll
  for (int i = 0; i < NGP; i++) cw[i] = cnt[i * BT + t];
  int acc = 0, g = NG - 1;
  bool found = false;
#pragma unroll
  for (int i = 0; i < NG - 1; i++) {
    const int c = (int)((cw[i >> 1] >> ((i & 1) * 16)) & 0xffffu);
    if (!found) {
      if (acc + c > k) found = true, g = i;
      else acc += c;
    }
  }
  unsigned int wv[16];
#pragma unroll
  for (int i = 0; i < 16; i++) wv[i] = g * 16 + i < NWORDS ? bits[(g * 16 + i) * BT + t] : 0u;
  unsigned int word = 0;
  int wsel = 15;
  found = false;
#pragma unroll
  for (int i = 0; i < 16; i++) {
    const int c = __popc(wv[i]);
    if (!found) {
      if (acc + c > k) found = true, wsel = i, word = wv[i];
      else acc += c;
    }
  }
  int kk = k - acc, pos = 0;
#pragma unroll
  for (int width = 16; width > 0; width >>= 1) {
    const int c = __popc(word & ((1u << width) - 1u));
    if (kk >= c) {
      kk -= c;
      word >>= width;
      pos += width;
    }
  }
  return (g * 16 + wsel) * 32 + pos;
}

extern "C" __global__ void __launch_bounds__(BT) ndf_rank_tile(const ndf_tile_params p) {
  extern __shared__ __align__(16) unsigned char ndf_smem[];
  unsigned long long *buf = reinterpret_cast<unsigned long long *>(ndf_smem);
  unsigned int *bits = reinterpret_cast<unsigned int *>(ndf_smem); // after the sort; counts follow
  unsigned int *skey = reinterpret_cast<unsigned int *>(ndf_smem) + AW;
  unsigned short *rpos = reinterpret_cast<unsigned short *>(skey + R);
  const int t = threadIdx.x, lane = t & 31, half = t >> 5;
  const T cv = (T)p.cval;
  const ndf_i64 nwork = p.nxb * p.nstrips * p.nouter;
  for (ndf_i64 w = blockIdx.x; w < nwork; w += gridDim.x) {
    ndf_i64 r = w / p.nxb;
    const ndf_i64 xb = w - r * p.nxb;
    ndf_i64 o = r / p.nstrips;
    const ndf_i64 strip = r - o * p.nstrips;
    ndf_i64 ibase = 0, obase = 0;
    NDF_FOR_COORDS(o, p.nlead, p.lshape, d, c,
                   ibase += c * p.listr[d];
                   obase += c * p.lostr[d];)
    const ndf_i64 y0 = strip * S, x0 = xb * 32;
    __syncthreads(); // the previous tile is no longer read
    for (int i = t; i < RP2; i += BT) {
      unsigned long long e = ~0ull;
      if (i < R) {
        const int ry = i / TW, rx = i - ry * TW;
        const ndf_i64 my = ndf_map(y0 + p.ylo + ry, p.ny, MODE), mx = ndf_map(x0 + p.xlo + rx, p.nx, MODE);
        const T v = (my < 0 || mx < 0) ? cv : p.in[ibase + my * p.iys + mx * p.ixs];
        e = ((unsigned long long)ndf_tkey(v) << 32) | (unsigned int)i;
      }
      buf[SW(i)] = e;
    }
    __syncthreads();
    // Bitonic sort, ascending: the steps j < E in registers (every stage up to
    // E in one pass), the others through shared memory.
    ndf_run_pass(buf, t, 2, E);
    __syncthreads();
    for (int k = 2 * E; k <= RP2; k <<= 1) {
      for (int j = k >> 1; j >= E; j >>= 1) {
#pragma unroll 4
        for (int i = t; i < RP2 / 2; i += BT) {
          const int a = ((i & ~(j - 1)) << 1) | (i & (j - 1)), b = a + j;
          const unsigned long long x = buf[SW(a)], y = buf[SW(b)];
          if ((x > y) == ((a & k) == 0)) {
            buf[SW(a)] = y;
            buf[SW(b)] = x;
          }
        }
        __syncthreads();
      }
      ndf_run_pass(buf, t, k, k);
      __syncthreads();
    }
    for (int i = t; i < R; i += BT) {
      const unsigned long long e = buf[SW(i)];
      const unsigned int key = (unsigned int)(e >> 32);
      skey[i] = key;
      rpos[(unsigned int)e] = (KIND == 2 && key == 0xffffffffu) ? (unsigned short)0xffffu : (unsigned short)i;
    }
    __syncthreads();
    for (int q = 0; q < NWORDS + NGP; q++) bits[q * BT + t] = 0u; // this thread's words only
    const ndf_i64 x = x0 + lane;
    if (x >= p.nx) continue; // no barrier below
    const int ly0 = half * HALF;
    int nanc = 0;
    for (int dy = 0; dy < KY; dy++) ndf_tile_row(rpos, bits, ly0 + dy, lane, t, true, nanc);
    T *out = p.out + obase + x * p.oxs;
    for (int jr = 0; jr < HALF; jr++) {
      const ndf_i64 y = y0 + ly0 + jr;
      if (y >= p.ny) break;
      T res;
#if KIND == 2 && !NAN_OMIT
      res = nanc ? __int_as_float(0x7fc00000) : ndf_untkey(skey[ndf_tile_kth(bits, t, ndf_rank_of(N))]);
#else
      const int m = N - nanc, k = ndf_rank_of(m);
      if (m == 0 || k < 0 || k >= m) res = (T)__int_as_float(0x7fc00000); // floats only: m < N needs NaN
      else res = ndf_untkey(skey[ndf_tile_kth(bits, t, k)]);
#endif
      out[y * p.oys] = res;
      if (jr + 1 < HALF) {
        ndf_tile_row(rpos, bits, ly0 + jr, lane, t, false, nanc);
        ndf_tile_row(rpos, bits, ly0 + jr + KY, lane, t, true, nanc);
      }
    }
  }
}
