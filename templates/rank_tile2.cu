// rank_tile2.cu -- median, rank and percentile filters over large 2-D box
// windows of data up to 32 bits: the sorted tile of rank_tile.cu with a
// cheaper sort and a cheaper search (ADR 0005, "sorted tile, second form").
//
// A block of 64 threads covers 32 output columns and S output rows; its
// TH x TW input tile (TH = S + KY - 1, TW = 32 + KX - 1, at most 4096
// values, the boundary mode applied while loading) is sorted as 32-bit
// order-preserving keys only, 64 keys per thread in registers: a bitonic
// network whose steps between elements less than 64 apart run inside a
// thread ("blocked": thread t holds elements 64t .. 64t+63) and whose other
// steps run inside a thread too after a transpose through shared memory
// ("strided": thread t holds elements t, t+64, ...), four shared-memory
// passes per stage of 4096 keys instead of one per step, compare-exchanges
// as one unsigned min and max.  A tile position's rank is then the lower
// bound of its key in the sorted keys plus a per-key counter of earlier
// equal keys (shared-memory atomics): distinct ranks that order the tile as
// its keys do.
//
// Thread (half, lane) slides a bitset of ranks down column lane, rows
// half*S/2 .. +S/2, as in rank_tile.cu (one atomic XOR per value entering
// or leaving), but without group counts: it keeps a pivot word pw and the
// number of set bits in the words below it, updated by one compare per
// changed value.  The k-th set bit is found by walking from the pivot to
// the word holding it (neighbouring windows have nearby ranks, so the walk
// is short) and a binary search in that word.
//
// NaN (floats): key all ones, so NaNs take the ranks above every other
// value; a thread counts the set bits at or above the first NaN rank (one
// more compare per flip) instead of testing each value.  Propagate: NaN
// where that count is not 0; omit: the k-th set bit for k below the number
// of other values is never a NaN.  Exact for every rank.
//
// Slot PIPE (ADR 0005): 1 orders the shared-memory loads ahead of
// the atomics and stores that would otherwise hold them back (one load
// latency per row of flips instead of per flip; rank searches interleaved)
// and sorts 8/16-bit keys with their tile position; 2 also lets the two
// threads of a column share their first window.  0 does neither.
// 3 is 1 with fewer instructions: flips, counts,
// rank probes, walks, loads by columns, an odd-even 64-key sort and 16-byte
// transposes (see "PIPE 3" below and ADR 0005); 4 is 3 with the first
// window shared by a column's two threads within one warp; 5 to 8 share first
// windows across columns (see "PIPE 5, 6, 7" below).  10 keeps no bitsets at
// all: a pivot rank per thread walked over the ranks' positions (see "PIPE 10"
// below).  The runtime takes 10 where it applies, else 6 (tile2_pipe_for).
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
#define SORTU NDF_SLOT(SORTU)        /* 1: the sort's stages unrolled (larger code), 0: rolled, 2: 1 with its last six stages as a loop, 3: 2 with each stage's transposes in a switch */
#define PIPE NDF_SLOT(PIPE)          /* 0: loads behind the atomics; 1: shared loads ahead of the atomics; 2: 1 and a shared middle window; 3: 1, cheaper; 4: 3 and a middle window shared within a warp; 5, 6 (6: default for 8/16-bit data and small windows): 3 with first windows shared by groups of 8, 4 columns; 7: 5 with a faster select in a word; 8: 6 with 32 rank searches at a time; 10 (default where it applies): pivots over the ranks' positions, no bitsets */
#ifndef NDF_LEAN
#define NDF_LEAN 0 /* 1 (NVRTC -DNDF_LEAN=1, the tunable jit.lean; ADR 0025): the forms that compile faster */
#endif

#define BT 64                        /* threads */
#define PK 64                        /* keys per thread in the sort */
#define RP2 (BT * PK)                /* keys sorted: 4096 */
#define HALF (S / 2)
#define TW (32 + KX - 1)
#define TH (S + KY - 1)
#define R (TH * TW)
#define NWORDS ((R + 31) / 32)
#define LU (PIPE ? 16 : 8)           /* global loads in flight per thread (inner tiles) */
// Data of 8 and 16 bits (PIPE): the sort's keys carry their tile position,
// key << 12 | position (padding: 0xffff << 12 | position, above every real
// key or after it), so the sorted order gives every position its rank with
// no search and no counters; the value of a rank is its sorted key >> 12.
#define PACK (PIPE && TBITS <= 16)
#if PACK
#define NDF_T2VAL(k) ((k) >> 12)
#define NDF_T2PAD(e) (0xffffu << 12 | (unsigned int)(e))
#define NDF_T2KEY(k, e) ((k) << 12 | (unsigned int)(e))
#else
#define NDF_T2VAL(k) (k)
#define NDF_T2PAD(e) 0xffffffffu
#define NDF_T2KEY(k, e) (k)
#endif
static_assert(R <= RP2, "rank_tile2: the tile holds more than 4096 values");
static_assert(NWORDS <= 128, "rank_tile2: the bitsets would overflow their area");

#if TBITS == 8
typedef unsigned char K;
#elif TBITS == 16
typedef unsigned short K;
#else
typedef unsigned int K;
#endif

NDF_PARAMS(ndf_tile_params)

// Order-preserving 32-bit key; NaN is all ones (only floats test it).  The
// same keys as rank_tile.cu: -0.0 takes the key of 0.0.
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

// ndf_tkey with fewer instructions for floats (the same keys): -0.0 as 0.0,
// a NaN all ones, else the sign-flip (no float compare with zero: subnormals
// keep their keys whatever the compile flags).
__device__ __forceinline__ unsigned int ndf_tkey3(T v) {
#if KIND == 2
  const unsigned int b0 = __float_as_uint(v), b = b0 == 0x80000000u ? 0u : b0;
  const unsigned int k = b ^ ((unsigned int)((int)b >> 31) | 0x80000000u);
  return v != v ? 0xffffffffu : k;
#else
  return ndf_tkey(v);
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

// The sort buffer is padded so that both layouts are free of bank conflicts
// and every access is a base plus a constant: element e (row e / 64, column
// e % 64) lives at word 65 * (e / 64) + e % 64.  Blocked accesses of a warp
// (element 64t + i, i fixed) and strided ones (element 64i + t) touch 32
// different banks.
// PIPE 3 (tiles of at most 3968 values): rows of 68 words instead, so that
// a thread's blocked row is 16-byte aligned and moves as 16 vector accesses
// (a quarter warp's 8 rows then start in 8 different groups of 4 banks;
// strided accesses stay conflict-free, bank 4i + t), and area 0 shrinks to
// what the tile needs (keys and counters of R values, or the bitsets) to
// make room: 57088 bytes for 31 x 31.
// The sorted keys themselves (the last store of the sort) keep rows of 65
// words: the rank searches' probes of one level lie in rows 65 words apart,
// 32 different banks (rows of 68 would put them in 8: 8-way conflicts,
// 34% excess shared wavefronts).
#define VEC3 (PIPE >= 3 && R <= 3968)
#if PIPE == 10
#define SPADW 68                     /* rows of the sort's transposes */
#define TKW ((R + 3) & ~3)
#define AREA0 128                    /* PIPE 10: no keys by position, counters, bitsets; the border map (TH + TW <= 128) */
#elif VEC3
#define SPADW 68                     /* rows of the sort's transposes */
#define TKW ((R + 3) & ~3)           /* words of tkey (and of dup) */
#define AREA0 (2 * TKW > NWORDS * BT ? 2 * TKW : NWORDS * BT)
#else
#define SPADW 65
#define TKW RP2
#define AREA0 (2 * RP2)
#endif
#define PADW 65                      /* rows of the sorted keys after the sort */
#define PADX (PADW - 64)
#define SBUF_WORDS (SPADW * PK)
__device__ __forceinline__ int ndf_saddr(int e) { return e + PADX * (e >> 6); }

// Ascending compare-exchange: one unsigned min and one max.
__device__ __forceinline__ void ndf_cx(unsigned int &a, unsigned int &b) {
  const unsigned int lo = a < b ? a : b, hi = a < b ? b : a;
  a = lo;
  b = hi;
}

#include "ndf_rank.cuh" // ndf_rank_of: the rank among m values (m < N only under NaN omission)

// The bitonic sort with every comparator ascending: a stage of size k first
// compares each element of a block of k with its mirror image in the block
// (e and e ^ (k - 1)), then runs the half-cleaners e, e ^ j for j = k/4 .. 1.
// Half-cleaners j = 32 .. 1 on a thread's 64 blocked keys.
__device__ __forceinline__ void ndf_blocked_steps(unsigned int (&v)[PK], int ljhi) {
#pragma unroll
  for (int lj = 5; lj >= 0; lj--) {
    const int j = 1 << lj;
    if (lj <= ljhi) {
#pragma unroll
      for (int i = 0; i < PK; i++)
        if ((i & j) == 0) ndf_cx(v[i], v[i + j]);
    }
  }
}

// Thread t's row of the padded buffer (its blocked keys 64t .. 64t+63).
__device__ __forceinline__ void ndf_blocked_store(const unsigned int (&v)[PK], unsigned int *buf, int t) {
#if VEC3
#pragma unroll
  for (int j = 0; j < PK / 4; j++)
    reinterpret_cast<uint4 *>(buf + SPADW * t)[j] = make_uint4(v[4 * j], v[4 * j + 1], v[4 * j + 2], v[4 * j + 3]);
#else
#pragma unroll
  for (int i = 0; i < PK; i++) buf[SPADW * t + i] = v[i];
#endif
}

// The sort's result: thread t's keys 64t .. 64t+63 at rows of PADW (65)
// words.  With rows of 68 in the transposes, a barrier first: the rows of
// 65 overlap other threads' rows of 68, which they may still be reading.
__device__ __forceinline__ void ndf_final_store(const unsigned int (&v)[PK], unsigned int *buf, int t) {
#if VEC3
  __syncthreads();
#endif
#pragma unroll
  for (int i = 0; i < PK; i++) buf[PADW * t + i] = v[i];
}

__device__ __forceinline__ void ndf_blocked_load(unsigned int (&v)[PK], const unsigned int *buf, int t) {
#if VEC3
#pragma unroll
  for (int j = 0; j < PK / 4; j++) {
    const uint4 q = reinterpret_cast<const uint4 *>(buf + SPADW * t)[j];
    v[4 * j] = q.x, v[4 * j + 1] = q.y, v[4 * j + 2] = q.z, v[4 * j + 3] = q.w;
  }
#else
#pragma unroll
  for (int i = 0; i < PK; i++) v[i] = buf[SPADW * t + i];
#endif
}

#if SORTU
// The strided part of a stage whose blocks span 2 HB rows: the mirror step,
// then the half-cleaners between rows under HB apart.
template <int HB>
__device__ __forceinline__ void ndf_strided_steps(unsigned int (&v)[PK]) {
#pragma unroll
  for (int i = 0; i < PK; i++)
    if ((i & HB) == 0) ndf_cx(v[i], v[i ^ (2 * HB - 1)]);
#pragma unroll
  for (int jj = HB / 2; jj > 0; jj >>= 1) {
#pragma unroll
    for (int i = 0; i < PK; i++)
      if ((i & jj) == 0) ndf_cx(v[i], v[i + jj]);
  }
}

// SORTU 3: a stage's strided part with its transposes (hb = HB: rows of 64
// in the upper half of a block of k read and written mirrored).
template <int HB>
__device__ __forceinline__ void ndf_strided_stage(unsigned int (&v)[PK], unsigned int *buf, int t) {
#pragma unroll
  for (int i = 0; i < PK; i++) v[i] = buf[SPADW * i + ((i & HB) ? 63 - t : t)];
  ndf_strided_steps<HB>(v);
#pragma unroll
  for (int i = 0; i < PK; i++) buf[SPADW * i + ((i & HB) ? 63 - t : t)] = v[i];
}

// Sorts the block's 4096 keys (thread t's v[i] is element 64t + i) ascending
// into buf (padded, blocked order).  Ends with a barrier.
__device__ __forceinline__ void ndf_sort4096(unsigned int (&v)[PK], unsigned int *buf, int t) {
#if PIPE >= 3
  // Each thread's 64 keys by Batcher's odd-even merge sort (543 compare-
  // exchanges instead of the bitonic 672; any network that sorts ascending
  // will do before the merges below).
  // (p = 2^lp, k = 2^lk: element a meets a + k when a - k % p lies in an even
  // block of k and both lie in one block of 2p.)
#pragma unroll
  for (int lp = 0; lp < 6; lp++)
#pragma unroll
    for (int lk = lp; lk >= 0; lk--) {
      const int k = 1 << lk, j0 = lk == lp ? 0 : k;
#pragma unroll
      for (int a = 0; a < PK; a++)
        if (a >= j0 && (((a - j0) >> lk) & 1) == 0 && a + k < PK && (a >> (lp + 1)) == ((a + k) >> (lp + 1)))
          ndf_cx(v[a], v[a + k]);
    }
#else
  // Stages 2 .. 64 inside the thread.
#pragma unroll
  for (int lk = 1; lk <= 6; lk++) {
    const int k = 1 << lk;
#pragma unroll
    for (int i = 0; i < PK; i++)
      if ((i & (k >> 1)) == 0) ndf_cx(v[i], v[i ^ (k - 1)]);
    ndf_blocked_steps(v, lk - 2);
  }
#endif
  // Stages 128 .. 4096: the mirror step and the half-cleaners j >= 64
  // strided, the half-cleaners j < 64 blocked.  Strided, slot i of thread t
  // holds element 64i + t in the lower half of its block of k and element
  // 64i + 63 - t in the upper half, so that mirror images (e ^ (k - 1): the
  // column t becomes 63 - t) meet in one thread as the half-cleaners' pairs do.
#if SORTU == 3
  // SORTU 3 (rank.tile2_unroll=3): the stages as a loop like
  // SORTU 2, each stage's strided part (its transposes included, so their
  // addresses stay constants, no selects) one case of a switch: the blocked
  // half-cleaners' code once (about 34 KB less code than SORTU 1, a branch
  // per stage more).
#pragma unroll 1
  for (int lk = 7; lk <= 12; lk++) {
    ndf_blocked_store(v, buf, t);
    __syncthreads();
    switch (lk) {
      case 7: ndf_strided_stage<1>(v, buf, t); break;
      case 8: ndf_strided_stage<2>(v, buf, t); break;
      case 9: ndf_strided_stage<4>(v, buf, t); break;
      case 10: ndf_strided_stage<8>(v, buf, t); break;
      case 11: ndf_strided_stage<16>(v, buf, t); break;
      default: ndf_strided_stage<32>(v, buf, t); break;
    }
    __syncthreads();
    ndf_blocked_load(v, buf, t);
    ndf_blocked_steps(v, 5);
  }
#elif SORTU == 2
  // SORTU 2 (rank.tile2_unroll=2): the same stages as a loop, the
  // blocked half-cleaners' code once instead of six times (about 30 KB less
  // code, 128 selects more per stage for the transposes' columns).
#pragma unroll 1
  for (int lk = 7; lk <= 12; lk++) {
    const int hb = 1 << (lk - 7);
    ndf_blocked_store(v, buf, t);
    __syncthreads();
    const int a1 = 63 - t;
#pragma unroll
    for (int i = 0; i < PK; i++) v[i] = buf[SPADW * i + ((i & hb) ? a1 : t)];
    switch (lk) {
      case 7: ndf_strided_steps<1>(v); break;
      case 8: ndf_strided_steps<2>(v); break;
      case 9: ndf_strided_steps<4>(v); break;
      case 10: ndf_strided_steps<8>(v); break;
      case 11: ndf_strided_steps<16>(v); break;
      default: ndf_strided_steps<32>(v); break;
    }
#pragma unroll
    for (int i = 0; i < PK; i++) buf[SPADW * i + ((i & hb) ? a1 : t)] = v[i];
    __syncthreads();
    ndf_blocked_load(v, buf, t);
    ndf_blocked_steps(v, 5);
  }
#else
#pragma unroll
  for (int lk = 7; lk <= 12; lk++) {
    const int hb = 1 << (lk - 7); // bit of i marking the upper half of a block of k
    ndf_blocked_store(v, buf, t);
    __syncthreads();
#pragma unroll
    for (int i = 0; i < PK; i++) v[i] = buf[SPADW * i + ((i & hb) ? 63 - t : t)];
#pragma unroll
    for (int i = 0; i < PK; i++)
      if ((i & hb) == 0) ndf_cx(v[i], v[i ^ (2 * hb - 1)]);
#pragma unroll
    for (int lj = 10; lj >= 6; lj--) {
      const int jj = 1 << (lj - 6);
      if (jj < hb) {
#pragma unroll
        for (int i = 0; i < PK; i++)
          if ((i & jj) == 0) ndf_cx(v[i], v[i + jj]);
      }
    }
#pragma unroll
    for (int i = 0; i < PK; i++) buf[SPADW * i + ((i & hb) ? 63 - t : t)] = v[i];
    __syncthreads();
    ndf_blocked_load(v, buf, t);
    ndf_blocked_steps(v, 5);
  }
#endif
  ndf_final_store(v, buf, t);
  __syncthreads();
}
#else
// The rolled form (about 60 KB less code, a few more instructions): the
// classic bitonic directions, a block of 64 keys sorted descending where
// its stage asks for it by complementing its keys around ascending steps.
__device__ __forceinline__ void ndf_flip(unsigned int (&v)[PK], unsigned int m) {
#pragma unroll
  for (int i = 0; i < PK; i++) v[i] ^= m;
}

__device__ __forceinline__ void ndf_sort4096(unsigned int (&v)[PK], unsigned int *buf, int t) {
  // Stages 2 .. 32 inside the thread: element 64t + i ascending when (i & k) == 0.
#pragma unroll
  for (int lk = 1; lk <= 5; lk++) {
    const int k = 1 << lk;
#pragma unroll
    for (int lj = lk - 1; lj >= 0; lj--) {
      const int j = 1 << lj;
#pragma unroll
      for (int i = 0; i < PK; i++)
        if ((i & j) == 0) {
          if ((i & k) == 0) ndf_cx(v[i], v[i + j]);
          else ndf_cx(v[i + j], v[i]);
        }
    }
  }
  // Stages 64 .. 4096: the half-cleaners j >= 64 strided (slot i of thread t
  // holds element 64i + t, ascending when (64i & k) == 0), those under 64
  // blocked (ascending when (64t & k) == 0); descending runs complemented.
#pragma unroll 1
  for (int lk = 6; lk <= 12; lk++) {
    const int k = 1 << lk;
    if (lk > 6) {
      ndf_blocked_store(v, buf, t);
      __syncthreads();
      const unsigned int kb = (unsigned int)k >> 6;
#pragma unroll
      for (int i = 0; i < PK; i++) v[i] = buf[SPADW * i + t] ^ (((unsigned int)i & kb) ? 0xffffffffu : 0u);
#pragma unroll
      for (int lj = 11; lj >= 6; lj--) {
        const int jj = 1 << (lj - 6);
        if (lj < lk) {
#pragma unroll
          for (int i = 0; i < PK; i++)
            if ((i & jj) == 0) ndf_cx(v[i], v[i + jj]);
        }
      }
#pragma unroll
      for (int i = 0; i < PK; i++) buf[SPADW * i + t] = v[i] ^ (((unsigned int)i & kb) ? 0xffffffffu : 0u);
      __syncthreads();
      ndf_blocked_load(v, buf, t);
    }
    const unsigned int m = ((t * PK) & k) ? 0xffffffffu : 0u;
    ndf_flip(v, m);
    ndf_blocked_steps(v, 5);
    ndf_flip(v, m);
  }
  ndf_final_store(v, buf, t);
  __syncthreads();
}
#endif

// Rank q is stored as (q / 32) << 8 | q % 32: the byte offset of its word in
// the bitsets (word w of thread t at bits[w * BT + t]) and its bit; the
// stored values order as the ranks do.
__device__ __forceinline__ unsigned int ndf_tile2_code(int rk) { return (unsigned int)(((rk >> 5) << 8) | (rk & 31)); }

// Clears (add = 0) or sets (add = 1) the ranks of tile row `row`, columns
// lane .. lane+KX-1, in thread t's bitset (mybits = bits + t), keeping
// `below` (set bits in the words under the pivot word, code pq) and, when
// the tile holds NaNs, nanc (set bits at or above the first NaN rank, code nq).
template <bool NANS>
__device__ __forceinline__ void ndf_tile2_row(const unsigned short *rpos, unsigned int *mybits, int row, int lane,
                                              bool add, unsigned int pq, unsigned int nq, int &below, int &nanc) {
  const unsigned short *rp = rpos + row * TW + lane;
  const int d = add ? 1 : -1;
#pragma unroll
  for (int dx = 0; dx < KX; dx++) {
    const unsigned int q = rp[dx];
    atomicXor(reinterpret_cast<unsigned int *>(reinterpret_cast<unsigned char *>(mybits) + (q & 0xff00u)),
              __funnelshift_l(0u, 1u, q)); // 1 << (q % 32)
    below += q < pq ? d : 0;
    if (NANS) nanc += q >= nq ? d : 0;
  }
}

// The rank of the k-th (0-based) set bit of the bitset, walking the pivot
// word pw (below: the set bits in the words under it) to the word holding it.
__device__ __forceinline__ int ndf_tile2_kth(const unsigned int *mybits, int k, int &pw, int &below) {
  while (below > k) {
    pw--;
    below -= __popc(mybits[pw * BT]);
  }
  unsigned int word;
  for (;;) {
    word = mybits[pw * BT];
    const int c = __popc(word);
    if (below + c > k) break;
    below += c;
    pw++;
  }
  int kk = k - below, pos = 0;
#pragma unroll
  for (int width = 16; width > 0; width >>= 1) {
    const int c = __popc(word & ((1u << width) - 1u));
    if (kk >= c) {
      kk -= c;
      word >>= width;
      pos += width;
    }
  }
  return pw * 32 + pos;
}

// One step down: tile row `out` leaves the window of thread t, row `in`
// enters it (the bits of distinct positions are distinct).
template <bool NANS>
__device__ __forceinline__ void ndf_tile2_step(const unsigned short *rpos, unsigned int *mybits, int out, int in,
                                               int lane, unsigned int pq, unsigned int nq, int &below, int &nanc) {
  const unsigned short *ro = rpos + out * TW + lane, *ri = rpos + in * TW + lane;
#pragma unroll
  for (int dx = 0; dx < KX; dx++) {
    const unsigned int q1 = ro[dx], q2 = ri[dx];
    atomicXor(reinterpret_cast<unsigned int *>(reinterpret_cast<unsigned char *>(mybits) + (q1 & 0xff00u)),
              __funnelshift_l(0u, 1u, q1));
    atomicXor(reinterpret_cast<unsigned int *>(reinterpret_cast<unsigned char *>(mybits) + (q2 & 0xff00u)),
              __funnelshift_l(0u, 1u, q2));
    below += (int)(q2 < pq) - (int)(q1 < pq);
    if (NANS) nanc += (int)(q2 >= nq) - (int)(q1 >= nq);
  }
}

#if PIPE
// PIPE 1 and up (ADR 0005, "loads ahead of the atomics"): the compiler may not move
// a shared-memory load above an earlier shared atomic (both live in the one
// dynamic shared array), so in the loops above each code's load waits for the
// previous flip: one load latency per flip (first window) or per pair (step).
// Here a row's codes (a chunk of CW columns) are loaded into registers first,
// the next row's codes before this row's atomics, and a step's codes before
// the search of the output above it.
#define CW (KX < 32 ? KX : 32)

// Codes of tile row `row`, columns lane + c0 .. lane + c0 + CW - 1 (those under KX).
__device__ __forceinline__ void ndf_tile2_ld(const unsigned short *rpos, int row, int lane, int c0, unsigned int (&q)[CW]) {
  const unsigned short *rp = rpos + row * TW + lane + c0;
#pragma unroll
  for (int u = 0; u < CW; u++)
    if (c0 + u < KX) q[u] = rp[u];
}

// Flips the loaded codes q (columns c0 + u < KX) in and out of the bitset.
template <bool NANS>
__device__ __forceinline__ void ndf_tile2_flipq(unsigned int *mybits, const unsigned int (&q)[CW], int c0, int d,
                                                unsigned int pq, unsigned int nq, int &below, int &nanc) {
  // Four partial counts: a single running count would chain all its adds.
  int cb[4] = {0, 0, 0, 0}, cn[4] = {0, 0, 0, 0};
#pragma unroll
  for (int u = 0; u < CW; u++)
    if (c0 + u < KX) {
      atomicXor(reinterpret_cast<unsigned int *>(reinterpret_cast<unsigned char *>(mybits) + (q[u] & 0xff00u)),
                __funnelshift_l(0u, 1u, q[u]));
      cb[u & 3] += (int)(q[u] < pq);
      if (NANS) cn[u & 3] += (int)(q[u] >= nq);
    }
  below += d * ((cb[0] + cb[1]) + (cb[2] + cb[3]));
  if (NANS) nanc += d * ((cn[0] + cn[1]) + (cn[2] + cn[3]));
}

// The first window's rows row0 .. row0+nrows-1, columns lane .. lane+KX-1,
// set with pq = 0 (below stays 0).  One row ahead when a row is one chunk.
template <bool NANS>
__device__ __forceinline__ void ndf_tile2_first(const unsigned short *rpos, unsigned int *mybits, int row0, int nrows,
                                                int lane, unsigned int nq, int &below, int &nanc) {
  if (KX <= CW) {
    unsigned int qa[CW], qb[CW];
    if (nrows > 0) ndf_tile2_ld(rpos, row0, lane, 0, qa);
#pragma unroll 1
    for (int dy = 0; dy + 1 < nrows; dy += 2) {
      ndf_tile2_ld(rpos, row0 + dy + 1, lane, 0, qb);
      ndf_tile2_flipq<NANS>(mybits, qa, 0, 1, 0u, nq, below, nanc);
      if (dy + 2 < nrows) ndf_tile2_ld(rpos, row0 + dy + 2, lane, 0, qa);
      ndf_tile2_flipq<NANS>(mybits, qb, 0, 1, 0u, nq, below, nanc);
    }
    if (nrows & 1) ndf_tile2_flipq<NANS>(mybits, qa, 0, 1, 0u, nq, below, nanc);
  } else {
#pragma unroll 1
    for (int dy = 0; dy < nrows; dy++) {
#pragma unroll
      for (int c0 = 0; c0 < KX; c0 += CW) {
        unsigned int q[CW];
        ndf_tile2_ld(rpos, row0 + dy, lane, c0, q);
        ndf_tile2_flipq<NANS>(mybits, q, c0, 1, 0u, nq, below, nanc);
      }
    }
  }
}

// One step down (row `out` leaves, row `in` enters) with the first chunk's
// codes already loaded (qo, qi); further chunks are loaded here.
template <bool NANS>
__device__ __forceinline__ void ndf_tile2_stepq(const unsigned short *rpos, unsigned int *mybits, int out, int in,
                                                int lane, const unsigned int (&qo)[CW], const unsigned int (&qi)[CW],
                                                unsigned int pq, unsigned int nq, int &below, int &nanc) {
  ndf_tile2_flipq<NANS>(mybits, qo, 0, -1, pq, nq, below, nanc);
  ndf_tile2_flipq<NANS>(mybits, qi, 0, 1, pq, nq, below, nanc);
#pragma unroll
  for (int c0 = CW; c0 < KX; c0 += CW) {
    unsigned int ro[CW], ri[CW];
    ndf_tile2_ld(rpos, out, lane, c0, ro);
    ndf_tile2_ld(rpos, in, lane, c0, ri);
    ndf_tile2_flipq<NANS>(mybits, ro, c0, -1, pq, nq, below, nanc);
    ndf_tile2_flipq<NANS>(mybits, ri, c0, 1, pq, nq, below, nanc);
  }
}
#endif

// Thread (half, lane)'s outputs: the column lane, tile rows ly0 .. ly0+HALF-1.
template <bool NANS>
__device__ __forceinline__ void ndf_tile2_column(const unsigned short *rpos, unsigned int *mybits, const unsigned int *sbuf,
                                                 int ly0, int lane, unsigned int nq, ndf_i64 y0, ndf_i64 ny, T *out,
                                                 ndf_i64 oys) {
  int nanc = 0, pw = 0, below = 0;
#if PIPE
  ndf_tile2_first<NANS>(rpos, mybits, ly0, KY, lane, nq, below, nanc);
#else
  for (int dy = 0; dy < KY; dy++) ndf_tile2_row<NANS>(rpos, mybits, ly0 + dy, lane, true, 0u, nq, below, nanc);
#endif
  for (int jr = 0; jr < HALF; jr++) {
    const ndf_i64 y = y0 + ly0 + jr;
    if (y >= ny) break;
#if PIPE
    // The next step's first chunk of codes, before the search below.
    unsigned int qo[CW], qi[CW];
    if (jr + 1 < HALF) {
      ndf_tile2_ld(rpos, ly0 + jr, lane, 0, qo);
      ndf_tile2_ld(rpos, ly0 + jr + KY, lane, 0, qi);
    }
#endif
    T res;
#if KIND == 2 && !NAN_OMIT
    if (nanc) res = __int_as_float(0x7fc00000);
    else res = ndf_untkey(NDF_T2VAL(sbuf[ndf_saddr(ndf_tile2_kth(mybits, ndf_rank_of(N), pw, below))]));
#else
    const int m = N - nanc, k = ndf_rank_of(m);
    if (m == 0 || k < 0 || k >= m) res = (T)__int_as_float(0x7fc00000); // floats only: m < N needs NaN
    else res = ndf_untkey(NDF_T2VAL(sbuf[ndf_saddr(ndf_tile2_kth(mybits, k, pw, below))]));
#endif
    out[y * oys] = res;
    if (jr + 1 < HALF) {
#if PIPE
      ndf_tile2_stepq<NANS>(rpos, mybits, ly0 + jr, ly0 + jr + KY, lane, qo, qi, (unsigned int)pw << 8, nq, below, nanc);
#else
      ndf_tile2_step<NANS>(rpos, mybits, ly0 + jr, ly0 + jr + KY, lane, (unsigned int)pw << 8, nq, below, nanc);
#endif
    }
  }
}

#if PIPE == 2
// PIPE 2: the two threads of a column start from one window, that of tile row
// HALF, each setting half of its rows (half 0 the first (KY + 1) / 2, half 1
// the others) and taking the other half from its partner's bitset (t ^ 32)
// between barriers; then half 1 walks down over rows HALF .. S-1 as above and
// half 0 walks up over rows HALF-1 .. 0 (one step more).  Each thread sets
// about half of a first window instead of all of it.  Every thread of the
// block calls this (barriers): `active` is false for columns past the array.
template <bool NANS>
__device__ __forceinline__ void ndf_tile2_column_mid(const unsigned short *rpos, unsigned int *bits,
                                                     const unsigned int *sbuf, int t, unsigned int nq, ndf_i64 y0,
                                                     ndf_i64 ny, bool active, T *out, ndf_i64 oys) {
  const int lane = t & 31, half = t >> 5;
  unsigned int *mybits = bits + t;
  const unsigned int *other = bits + (t ^ 32);
  int nanc = 0, pw = 0, below = 0;
  const int ka = (KY + 1) / 2;
  if (half == 0) ndf_tile2_first<NANS>(rpos, mybits, HALF, ka, lane, nq, below, nanc);
  else ndf_tile2_first<NANS>(rpos, mybits, HALF + ka, KY - ka, lane, nq, below, nanc);
  // The two sets are disjoint: OR them.  Half 0 completes the lower words,
  // half 1 the upper ones; then each copies the other's completed words.
  // Eight words at a time: loads first, then stores (a store would keep
  // the next word's loads behind it).
  const int wh = NWORDS / 2;
  __syncthreads();
#pragma unroll 1
  for (int w0 = half ? wh : 0, we = half ? NWORDS : wh; w0 < we; w0 += 8) {
    unsigned int a[8];
#pragma unroll
    for (int u = 0; u < 8; u++)
      if (w0 + u < we) a[u] = mybits[(w0 + u) * BT] | other[(w0 + u) * BT];
#pragma unroll
    for (int u = 0; u < 8; u++)
      if (w0 + u < we) mybits[(w0 + u) * BT] = a[u];
  }
  __syncthreads();
#pragma unroll 1
  for (int w0 = half ? 0 : wh, we = half ? wh : NWORDS; w0 < we; w0 += 8) {
    unsigned int a[8];
#pragma unroll
    for (int u = 0; u < 8; u++)
      if (w0 + u < we) a[u] = other[(w0 + u) * BT];
#pragma unroll
    for (int u = 0; u < 8; u++)
      if (w0 + u < we) mybits[(w0 + u) * BT] = a[u];
  }
  __syncthreads(); // the partner's words are no longer read
  if (!active) return;
  if (NANS) { // set bits at or above the first NaN rank (code nq)
    nanc = 0;
    const int nw = (int)(nq >> 8);
    for (int w = nw; w < NWORDS; w++) {
      unsigned int word = mybits[w * BT];
      if (w == nw) word &= ~0u << (nq & 31u);
      nanc += __popc(word);
    }
  }
  // Half 0: first the step from the window of row HALF to that of row HALF-1.
  int r = half ? HALF : HALF - 1;
  if (half == 0) {
    unsigned int qo[CW], qi[CW];
    ndf_tile2_ld(rpos, r + KY, lane, 0, qo);
    ndf_tile2_ld(rpos, r, lane, 0, qi);
    ndf_tile2_stepq<NANS>(rpos, mybits, r + KY, r, lane, qo, qi, 0u, nq, below, nanc);
  }
  for (int jr = 0; jr < HALF; jr++) {
    const ndf_i64 y = y0 + r;
    if (half && y >= ny) break; // rows below are past the array too
    const bool more = jr + 1 < HALF;
    const int rn = half ? r + 1 : r - 1;
    const int ro = half ? r : rn + KY, rin = half ? r + KY : rn;
    unsigned int qo[CW], qi[CW];
    if (more) {
      ndf_tile2_ld(rpos, ro, lane, 0, qo);
      ndf_tile2_ld(rpos, rin, lane, 0, qi);
    }
    if (y < ny) {
      T res;
#if KIND == 2 && !NAN_OMIT
      if (nanc) res = __int_as_float(0x7fc00000);
      else res = ndf_untkey(NDF_T2VAL(sbuf[ndf_saddr(ndf_tile2_kth(mybits, ndf_rank_of(N), pw, below))]));
#else
      const int m = N - nanc, k = ndf_rank_of(m);
      if (m == 0 || k < 0 || k >= m) res = (T)__int_as_float(0x7fc00000); // floats only: m < N needs NaN
      else res = ndf_untkey(NDF_T2VAL(sbuf[ndf_saddr(ndf_tile2_kth(mybits, k, pw, below))]));
#endif
      out[y * oys] = res;
    }
    if (more) ndf_tile2_stepq<NANS>(rpos, mybits, ro, rin, lane, qo, qi, (unsigned int)pw << 8, nq, below, nanc);
    r = rn;
  }
}
#endif

#if PIPE >= 3
// PIPE 3 (ADR 0005, "fewer instructions per flip"): PIPE 1's order
// with cheaper flips, probes and walks.
// - Flip: the bitsets start at shared offset 0 and word w of thread t lies at
//   byte 256 w + 4 t, so a code's word bits (code & 0xff00 = 256 w) ORed with
//   4 t are the word's address: one LOP3, one funnel shift, the atomic (PIPE
//   0 to 2: a mask, an add and a zero-extension more).
// - Counts (codes under the pivot word, NaN codes) as sums of sign bits.
// - The first window's rows two at a time with no codes carried between
//   iterations (a carried 16-bit load costs a zero extension per code).
// - The first search of a column starts from a scan of 8 words at a time
//   (independent loads) instead of walking word by word from word 0.
// - Walks and rank searches step byte offsets and pointers (loads at a
//   register plus a constant).
// Inner tiles of 32-bit keys with at most 64 rows and columns load by columns
// (the sort does not care which thread holds which key; 8/16-bit keys carry
// their position and keep the row-major order).
#define COLMAP (!PACK && TH <= 64 && TW <= 64)

__device__ __forceinline__ void ndf_t3_flip(unsigned char *sm, unsigned int t4, unsigned int q) {
  atomicXor(reinterpret_cast<unsigned int *>(sm + ((q & 0xff00u) | t4)), __funnelshift_l(0u, 1u, q));
}

// Codes of tile row `row`, columns lane + c0 .. (those under KX).
__device__ __forceinline__ void ndf_t3_ld(const unsigned short *rpos, int row, int lane, int c0, unsigned int (&q)[CW]) {
  ndf_tile2_ld(rpos, row, lane, c0, q);
}

// Flips the loaded codes q (columns c0 + u < KX); counts those under pqs
// into below (d = +1 or -1) when `count`, those at or above nqs into nanc.
template <bool NANS>
__device__ __forceinline__ void ndf_t3_flipq(unsigned char *sm, unsigned int t4, const unsigned int (&q)[CW], int c0,
                                             int d, bool count, unsigned int pqs, unsigned int nqs, int &below,
                                             int &nanc) {
  // Counts as sums of sign bits (codes and bounds are under 2^31): an
  // add and a shift-add per code.
  // Four partial sums of each: one sum would chain all its shift-adds.
  unsigned int cb[4] = {0u, 0u, 0u, 0u}, cn[4] = {0u, 0u, 0u, 0u};
#pragma unroll
  for (int u = 0; u < CW; u++)
    if (c0 + u < KX) {
      ndf_t3_flip(sm, t4, q[u]);
      if (count) cb[u & 3] += (q[u] - pqs) >> 31;
      if (NANS) cn[u & 3] += (q[u] - nqs) >> 31;
    }
  const unsigned int cbs = (cb[0] + cb[1]) + (cb[2] + cb[3]), cns = (cn[0] + cn[1]) + (cn[2] + cn[3]);
  if (count) below += d > 0 ? (int)cbs : -(int)cbs;
  // nanc counts codes at or above nqs: (code < nqs) counted, the rest taken from the codes flipped.
  if (NANS) {
    int nf = 0;
#pragma unroll
    for (int u = 0; u < CW; u++)
      if (c0 + u < KX) nf++;
    nanc += d > 0 ? nf - (int)cns : (int)cns - nf;
  }
}

// The first window's rows row0 .. row0+nrows-1 (below stays 0).
template <bool NANS>
__device__ __forceinline__ void ndf_t3_first(const unsigned short *rpos, unsigned char *sm, unsigned int t4, int row0,
                                             int nrows, int lane, unsigned int nqs, int &nanc) {
  int below = 0;
  if (KX <= CW) {
    // Two rows' codes loaded ahead of their atomics; no codes carried from
    // one iteration to the next (carried 16-bit loads cost a zero-extension each).
#pragma unroll 1
    for (int dy = 0; dy + 1 < nrows; dy += 2) {
      unsigned int qa[CW], qb[CW];
      ndf_t3_ld(rpos, row0 + dy, lane, 0, qa);
      ndf_t3_ld(rpos, row0 + dy + 1, lane, 0, qb);
      ndf_t3_flipq<NANS>(sm, t4, qa, 0, 1, false, 0u, nqs, below, nanc);
      ndf_t3_flipq<NANS>(sm, t4, qb, 0, 1, false, 0u, nqs, below, nanc);
    }
    if (nrows & 1) {
      unsigned int qa[CW];
      ndf_t3_ld(rpos, row0 + nrows - 1, lane, 0, qa);
      ndf_t3_flipq<NANS>(sm, t4, qa, 0, 1, false, 0u, nqs, below, nanc);
    }
  } else {
#pragma unroll 1
    for (int dy = 0; dy < nrows; dy++) {
#pragma unroll
      for (int c0 = 0; c0 < KX; c0 += CW) {
        unsigned int q[CW];
        ndf_t3_ld(rpos, row0 + dy, lane, c0, q);
        ndf_t3_flipq<NANS>(sm, t4, q, c0, 1, false, 0u, nqs, below, nanc);
      }
    }
  }
}

// One step down (row `out` leaves, row `in` enters), the first chunk's codes loaded.
template <bool NANS>
__device__ __forceinline__ void ndf_t3_stepq(const unsigned short *rpos, unsigned char *sm, unsigned int t4, int out,
                                             int in, int lane, const unsigned int (&qo)[CW], const unsigned int (&qi)[CW],
                                             unsigned int pqs, unsigned int nqs, int &below, int &nanc) {
  ndf_t3_flipq<NANS>(sm, t4, qo, 0, -1, true, pqs, nqs, below, nanc);
  ndf_t3_flipq<NANS>(sm, t4, qi, 0, 1, true, pqs, nqs, below, nanc);
#pragma unroll
  for (int c0 = CW; c0 < KX; c0 += CW) {
    unsigned int ro[CW], ri[CW];
    ndf_t3_ld(rpos, out, lane, c0, ro);
    ndf_t3_ld(rpos, in, lane, c0, ri);
    ndf_t3_flipq<NANS>(sm, t4, ro, c0, -1, true, pqs, nqs, below, nanc);
    ndf_t3_flipq<NANS>(sm, t4, ri, c0, 1, true, pqs, nqs, below, nanc);
  }
}

__device__ __forceinline__ unsigned int ndf_t3_word(const unsigned char *mb, unsigned int off) {
  return *reinterpret_cast<const unsigned int *>(mb + off);
}

// pw, below for a first search of rank k (below(0) = 0): whole groups of 8
// words while they hold at most k set bits.  k < N (the set bits).
__device__ __forceinline__ void ndf_t3_seek(const unsigned char *mb, int k, int &pw, int &below) {
  int acc = 0, w0 = 0;
#pragma unroll 1
  for (; w0 + 8 <= NWORDS; w0 += 8) {
    int c[8];
#pragma unroll
    for (int u = 0; u < 8; u++) c[u] = __popc(ndf_t3_word(mb, (unsigned int)(w0 + u) << 8));
    const int s = ((c[0] + c[1]) + (c[2] + c[3])) + ((c[4] + c[5]) + (c[6] + c[7]));
    if (acc + s > k) break;
    acc += s;
  }
  pw = w0;
  below = acc;
}

// The rank of the k-th (0-based) set bit, walking from the pivot word pw.
__device__ __forceinline__ int ndf_t3_kth(const unsigned char *mb, int k, int &pw, int &below) {
  unsigned int off = (unsigned int)pw << 8, word;
  while (below > k) {
    off -= 256u;
    below -= __popc(ndf_t3_word(mb, off));
  }
  for (;;) {
    word = ndf_t3_word(mb, off);
    const int c = __popc(word);
    if (below + c > k) break;
    below += c;
    off += 256u;
  }
  pw = (int)(off >> 8);
  int kk = k - below, pos = 0;
#pragma unroll
  for (int width = 16; width > 0; width >>= 1) {
    const int c = __popc(word & ((1u << width) - 1u));
    if (kk >= c) {
      kk -= c;
      word >>= width;
      pos += width;
    }
  }
  return (int)(off >> 3) + pos; // 32 * pw + pos
}

// Thread (half, lane)'s outputs: the column lane, tile rows ly0 .. ly0+HALF-1.
template <bool NANS>
__device__ __forceinline__ void ndf_t3_column(const unsigned short *rpos, unsigned char *sm, unsigned int t4,
                                              const unsigned int *sbuf, int ly0, int lane, unsigned int nq, ndf_i64 y0,
                                              ndf_i64 ny, T *out, ndf_i64 oys) {
  const unsigned char *mb = sm + t4;
  const unsigned int nqs = nq;
  const int nr = ny - (y0 + ly0) < HALF ? (int)(ny - (y0 + ly0)) : HALF; // rows of this thread inside the array
  if (nr <= 0) return;
  int nanc = 0, pw = 0, below = 0;
  ndf_t3_first<NANS>(rpos, sm, t4, ly0, KY, lane, nqs, nanc);
  {
    int ks = ndf_rank_of(N - nanc); // any rank under N (the set bits) will do
    ks = ks < 0 ? 0 : ks >= N ? N - 1 : ks;
    ndf_t3_seek(mb, ks, pw, below);
  }
  T *op = out + (y0 + ly0) * oys;
  for (int jr = 0; jr < nr; jr++, op += oys) {
    unsigned int qo[CW], qi[CW];
    if (jr + 1 < nr) {
      ndf_t3_ld(rpos, ly0 + jr, lane, 0, qo);
      ndf_t3_ld(rpos, ly0 + jr + KY, lane, 0, qi);
    }
    T res;
#if KIND == 2 && !NAN_OMIT
    if (nanc) res = __int_as_float(0x7fc00000);
    else res = ndf_untkey(NDF_T2VAL(sbuf[ndf_saddr(ndf_t3_kth(mb, ndf_rank_of(N), pw, below))]));
#else
    const int m = N - nanc, k = ndf_rank_of(m);
    if (m == 0 || k < 0 || k >= m) res = (T)__int_as_float(0x7fc00000); // floats only: m < N needs NaN
    else res = ndf_untkey(NDF_T2VAL(sbuf[ndf_saddr(ndf_t3_kth(mb, k, pw, below))]));
#endif
    *op = res;
    if (jr + 1 < nr)
      ndf_t3_stepq<NANS>(rpos, sm, t4, ly0 + jr, ly0 + jr + KY, lane, qo, qi, (unsigned int)pw << 8, nqs, below, nanc);
  }
}
#endif

#if PIPE == 4
// PIPE 4: PIPE 3 with the two threads of a column in one warp (column
// 16 * warp + lane % 16, half lane / 16; partner lane ^ 16) starting from one
// window, that of tile row HALF: half 0 sets its first (KY + 1) / 2 rows, half
// 1 the others, each ORs in its partner's words (the sets are disjoint; a
// chunk of 16 of the partner's words is read before either lane writes its
// own words of that chunk, __syncwarp between), the NaN counts add up.  Then
// half 1 walks down over rows HALF .. S-1 and half 0 up over HALF-1 .. 0 (one
// step more).  A thread sets about half of a first window (31 x 31: 496 or
// 465 bits instead of 961) and ORs 124 words.  Every lane of the warp runs it
// (`active`: the column lies inside the array).
template <bool NANS>
__device__ __forceinline__ void ndf_t4_column(const unsigned short *rpos, unsigned char *sm, unsigned int t4,
                                              const unsigned int *sbuf, int col, int half, unsigned int nq, ndf_i64 y0,
                                              ndf_i64 ny, bool active, T *out, ndf_i64 oys) {
  const unsigned char *mb = sm + t4, *pb = sm + (t4 ^ 64u);
  int nanc = 0, pw = 0, below = 0;
  const int ka = (KY + 1) / 2;
  if (half == 0) ndf_t3_first<NANS>(rpos, sm, t4, HALF, ka, col, nq, nanc);
  else ndf_t3_first<NANS>(rpos, sm, t4, HALF + ka, KY - ka, col, nq, nanc);
  __syncwarp();
#pragma unroll 1
  for (int w0 = 0; w0 < NWORDS; w0 += 16) {
    unsigned int a[16];
#pragma unroll
    for (int u = 0; u < 16; u++)
      if (w0 + u < NWORDS) a[u] = ndf_t3_word(pb, (unsigned int)(w0 + u) << 8);
    __syncwarp();
#pragma unroll
    for (int u = 0; u < 16; u++)
      if (w0 + u < NWORDS) atomicOr(reinterpret_cast<unsigned int *>(sm + (((unsigned int)(w0 + u) << 8) | t4)), a[u]);
  }
  if (NANS) nanc += __shfl_xor_sync(0xffffffffu, nanc, 16);
  {
    int ks = ndf_rank_of(N - nanc); // any rank under N (the set bits) will do
    ks = ks < 0 ? 0 : ks >= N ? N - 1 : ks;
    ndf_t3_seek(mb, ks, pw, below);
  }
  // Iteration j: a step (half 0 always, up; half 1 from j = 1, down), then
  // the codes of the next step, then the output of row r.
  int r = HALF;
  unsigned int qo[CW], qi[CW];
  int ro = half ? r : r + KY - 1, ri = half ? r + KY : r - 1;
  if (half == 0 || HALF > 1) { // half 1 steps first at j = 1 (S = 2: row HALF + KY lies past the tile)
    ndf_t3_ld(rpos, ro, col, 0, qo);
    ndf_t3_ld(rpos, ri, col, 0, qi);
  }
  for (int j = 0; j < HALF; j++) {
    if (half == 0 || j > 0) {
      ndf_t3_stepq<NANS>(rpos, sm, t4, ro, ri, col, qo, qi, (unsigned int)pw << 8, nq, below, nanc);
      r += half ? 1 : -1;
    }
    if (j + 1 < HALF) {
      ro = half ? r : r + KY - 1;
      ri = half ? r + KY : r - 1;
      ndf_t3_ld(rpos, ro, col, 0, qo);
      ndf_t3_ld(rpos, ri, col, 0, qi);
    }
    const ndf_i64 y = y0 + r;
    if (active && y < ny) {
      T res;
#if KIND == 2 && !NAN_OMIT
      if (nanc) res = __int_as_float(0x7fc00000);
      else res = ndf_untkey(NDF_T2VAL(sbuf[ndf_saddr(ndf_t3_kth(mb, ndf_rank_of(N), pw, below))]));
#else
      const int m = N - nanc, k = ndf_rank_of(m);
      if (m == 0 || k < 0 || k >= m) res = (T)__int_as_float(0x7fc00000); // floats only: m < N needs NaN
      else res = ndf_untkey(NDF_T2VAL(sbuf[ndf_saddr(ndf_t3_kth(mb, k, pw, below))]));
#endif
      out[y * oys] = res;
    }
  }
}
#endif

#if PIPE >= 5
// PIPE 5, 6, 7 (ADR 0005 "first windows shared across columns"):
// PIPE 3 with the first window of GRP neighbouring threads of one half (lanes
// L .. L+GRP-1, L = lane & ~(GRP-1); GRP 8 for PIPE 5, 4 for PIPE 6) built
// mostly once.  Their windows (columns lane .. lane+KX-1, the same rows) all
// hold the KX-GRP+1 columns L+GRP-1 .. L+KX-1; the group's lanes flip those
// columns' codes into the leader's (lane L's) bitset, a share each (columns
// m = j, j + GRP, ..., j = lane - L; the leader's words, all in one bank,
// take GRP-way conflicted atomics), the other lanes copy its words into
// their own, then every lane flips its GRP-1 other columns (lane .. L+GRP-2
// and L+KX .. lane+KX-1) into its own bitset.  31 x 31, GRP 8: 93 + 217
// flips and a copy of 124 words per thread instead of 961 flips.  The NaN
// count (tiles with NaNs) is taken from the finished bitset.  Every lane of
// the warp runs it (__syncwarp between the phases), whatever its column.
// PIPE 7 is 5 with a select in the word of less latency (ndf_t7_kth); PIPE
// 8 is 6 with 32 rank searches at a time instead of 16.
#define GRP (PIPE == 6 || PIPE == 8 ? 4 : 8)
#define T5SHARE (KX >= 2 * GRP)
#define T5CH 16                      /* codes of a column loaded ahead of their atomics */

// Flips tile column col, rows row0 .. row0+KY-1, in the bitset at byte offset t4x.
__device__ __forceinline__ void ndf_t5_col(const unsigned short *rpos, unsigned char *sm, unsigned int t4x, int row0,
                                           int col) {
  const unsigned short *rp = rpos + row0 * TW + col;
#pragma unroll
  for (int d0 = 0; d0 < KY; d0 += T5CH) {
    unsigned int q[T5CH];
#pragma unroll
    for (int u = 0; u < T5CH; u++)
      if (d0 + u < KY) q[u] = rp[(d0 + u) * TW];
#pragma unroll
    for (int u = 0; u < T5CH; u++)
      if (d0 + u < KY) ndf_t3_flip(sm, t4x, q[u]);
  }
}

// The first window of thread t4 / 4 (rows row0 .. row0+KY-1, columns lane ..),
// its bitset cleared.  Every lane of the warp calls it.
__device__ __forceinline__ void ndf_t5_first(const unsigned short *rpos, unsigned char *sm, unsigned int t4, int row0,
                                             int lane) {
  const int j = lane & (GRP - 1), l0 = lane - j;
  const unsigned int t4l = t4 - 4u * (unsigned int)j; // the leader's words
  const int nc = KX - GRP + 1;                        // columns common to the group
  __syncwarp();                                       // the leader's words are cleared
#pragma unroll 1
  for (int m = j; m < nc; m += GRP) ndf_t5_col(rpos, sm, t4l, row0, l0 + GRP - 1 + m);
  __syncwarp();
  if (j != 0) {
#pragma unroll
    for (int w0 = 0; w0 < NWORDS; w0 += 32) {
      unsigned int a[32];
#pragma unroll
      for (int u = 0; u < 32; u++)
        if (w0 + u < NWORDS) a[u] = ndf_t3_word(sm + t4l, (unsigned int)(w0 + u) << 8);
#pragma unroll
      for (int u = 0; u < 32; u++)
        if (w0 + u < NWORDS) *reinterpret_cast<unsigned int *>(sm + (((unsigned int)(w0 + u) << 8) | t4)) = a[u];
    }
  }
  __syncwarp(); // the leader's words are copied before it changes them
  // Columns lane + e, e = 0 .. GRP-2, those from L + GRP - 1 up shifted past the common ones.
#pragma unroll 1
  for (int e = 0; e < GRP - 1; e++) ndf_t5_col(rpos, sm, t4, row0, lane + e + (e >= GRP - 1 - j ? nc : 0));
}

#if PIPE == 7
// PIPE 7: PIPE 5 with the k-th set bit of a word found with less latency
// than the 5 dependent halvings of ndf_t3_kth: the byte from three
// independent prefix counts, then the bit from seven (about 45 instructions
// instead of 35, dependent chains of about 8 instead of 25).
__device__ __forceinline__ int ndf_t7_inword(unsigned int word, int kk) {
  const int c0 = __popc(word & 0xffu), c1 = __popc(word & 0xffffu), c2 = __popc(word & 0xffffffu);
  const int b = (kk >= c0) + (kk >= c1) + (kk >= c2);
  const int sub = b == 0 ? 0 : b == 1 ? c0 : b == 2 ? c1 : c2;
  const unsigned int x = (word >> (8 * b)) & 0xffu;
  const int k2 = kk - sub;
  int pos = 0;
#pragma unroll
  for (int i = 1; i < 8; i++) pos += __popc(x & ((1u << i) - 1u)) <= k2;
  return 8 * b + pos;
}

// ndf_t3_kth with ndf_t7_inword.
__device__ __forceinline__ int ndf_t7_kth(const unsigned char *mb, int k, int &pw, int &below) {
  unsigned int off = (unsigned int)pw << 8, word;
  while (below > k) {
    off -= 256u;
    below -= __popc(ndf_t3_word(mb, off));
  }
  for (;;) {
    word = ndf_t3_word(mb, off);
    const int c = __popc(word);
    if (below + c > k) break;
    below += c;
    off += 256u;
  }
  pw = (int)(off >> 8);
  return (int)(off >> 3) + ndf_t7_inword(word, k - below); // 32 * pw + bit
}
#define NDF_T5_KTH ndf_t7_kth
#else
#define NDF_T5_KTH ndf_t3_kth
#endif

// PIPE 3's column (ndf_t3_column) with the first window above; `active`: the
// column lies inside the array (every lane runs the first window).
template <bool NANS>
__device__ __forceinline__ void ndf_t5_column(const unsigned short *rpos, unsigned char *sm, unsigned int t4,
                                              const unsigned int *sbuf, int ly0, int lane, unsigned int nq, ndf_i64 y0,
                                              ndf_i64 ny, bool active, T *out, ndf_i64 oys) {
  const unsigned char *mb = sm + t4;
  const unsigned int nqs = nq;
  int nanc = 0, pw = 0, below = 0;
#if T5SHARE
  ndf_t5_first(rpos, sm, t4, ly0, lane);
  if (NANS) { // set bits at or above the first NaN rank (code nq)
    const int nw = (int)(nq >> 8);
#pragma unroll 1
    for (int w = nw; w < NWORDS; w++) {
      unsigned int word = ndf_t3_word(mb, (unsigned int)w << 8);
      if (w == nw) word &= ~0u << (nq & 31u);
      nanc += __popc(word);
    }
  }
#else
  ndf_t3_first<NANS>(rpos, sm, t4, ly0, KY, lane, nqs, nanc);
#endif
  const int nr = ny - (y0 + ly0) < HALF ? (int)(ny - (y0 + ly0)) : HALF; // rows of this thread inside the array
  if (!active || nr <= 0) return;
  {
    int ks = ndf_rank_of(N - nanc); // any rank under N (the set bits) will do
    ks = ks < 0 ? 0 : ks >= N ? N - 1 : ks;
    ndf_t3_seek(mb, ks, pw, below);
  }
  T *op = out + (y0 + ly0) * oys;
  for (int jr = 0; jr < nr; jr++, op += oys) {
    unsigned int qo[CW], qi[CW];
    if (jr + 1 < nr) {
      ndf_t3_ld(rpos, ly0 + jr, lane, 0, qo);
      ndf_t3_ld(rpos, ly0 + jr + KY, lane, 0, qi);
    }
    T res;
#if KIND == 2 && !NAN_OMIT
    if (nanc) res = __int_as_float(0x7fc00000);
    else res = ndf_untkey(NDF_T2VAL(sbuf[ndf_saddr(NDF_T5_KTH(mb, ndf_rank_of(N), pw, below))]));
#else
    const int m = N - nanc, k = ndf_rank_of(m);
    if (m == 0 || k < 0 || k >= m) res = (T)__int_as_float(0x7fc00000); // floats only: m < N needs NaN
    else res = ndf_untkey(NDF_T2VAL(sbuf[ndf_saddr(NDF_T5_KTH(mb, k, pw, below))]));
#endif
    *op = res;
    if (jr + 1 < nr)
      ndf_t3_stepq<NANS>(rpos, sm, t4, ly0 + jr, ly0 + jr + KY, lane, qo, qi, (unsigned int)pw << 8, nqs, below, nanc);
  }
}
#endif

#if PIPE == 10
// PIPE 10 (ADR 0005 "pivots instead of bitsets"; the default where
// the runtime's tile2_pipe_for takes it): no bitsets, so that eight blocks fit
// a SM (one round of tiles at 1024^2 instead of two).  Shared memory: the
// border tiles' map of rows and columns (area 0), the sort's buffer (later the
// position of each rank, posOf, and the two warps' column counts) and the
// ranks by position (before them, 16-bit equal-key counters): 25,856 bytes for
// 31 x 31.  The search's keys and the outputs' values are read again from
// global memory (L1/L2), the ranks of a thread's positions wait in registers
// for a barrier.  A thread keeps a pivot rank P, c = the window's ranks under
// P and whether P is in the window; a step counts the leaving and entering
// row's ranks under P (two 16-bit ranks a word, sign bits of biased
// differences), then walks P over posOf, eight ranks a load, to the window's
// k-th rank (ndf_t10_m8: the window test byte-wise).  The first windows: the
// warp's column counts of 32 buckets of 128 ranks and their prefix sums, the
// bucket holding rank k, a walk in it.  Same bits as the other forms (a
// rank's value is read at its position; -0.0 as 0.0 by the key).
static_assert(!PACK && COLMAP && VEC3, "rank_tile2 PIPE 10: 32-bit keys, tiles of at most 64 x 64 and 3968 values");
#define NWX (KX / 2 + 1)                        /* words holding a row's KX ranks, from either parity */
#define T10_POSB ((((R + 8) * 2) + 15) & ~15)   /* bytes of posOf (8 padding ranks, outside every window) */
#define T10_NBP 16                              /* first windows: 32 buckets of 128 ranks, two a word */
#define T10_ROWS (T10_NBP + 1)                  /* and the NaN counts */
#define T10_RW (TW + 1)                         /* words a row: prefixes at columns 0 .. TW */
static_assert(T10_POSB + 2 * T10_ROWS * T10_RW * 4 <= SBUF_WORDS * 4, "rank_tile2 PIPE 10: posOf and the column counts exceed the sort's buffer");

struct ndf_t10_src {
  const T *in, *src;   // src: the tile's corner (fast tiles)
  ndf_i64 ibase, iys, ixs;
  int iys32, ixs32;
  bool fast;           // the tile inside the array, 32-bit offsets
  T cv;
  const int *my, *mx;  // border tiles: the mapped row of each tile row, column of each tile column (-1: cval)
};

// The value at tile position (row, column) = pp >> 8, pp & 255; border tiles
// read the tile's map of rows and columns (shared memory, set before the
// loads: no mapping arithmetic and no call in the unrolled loops, every load
// independent: out-of-line mapping would serialize the border tiles'
// loads, and the last tiles set the kernel's time).
__device__ __forceinline__ T ndf_t10_val(const ndf_t10_src &s, unsigned int pp) {
  const int row = (int)(pp >> 8), col = (int)(pp & 0xffu);
  if (s.fast) return s.src[row * s.iys32 + col * s.ixs32];
  const int my = s.my[row], mx = s.mx[col];
  return (my < 0 || mx < 0) ? s.cv : s.in[s.ibase + (ndf_i64)my * s.iys + (ndf_i64)mx * s.ixs];
}
// Tile column col's TH values, every load in flight; addresses stepped one row at a time (all 64
// addresses computed ahead cost ptxas 128 registers: spills at the 128 cap).
__device__ __forceinline__ void ndf_t10_colvals(const ndf_t10_src &s, int col, T (&val)[PK]) {
  if (s.fast) {
    const T *q = s.src + col * s.ixs32;
#pragma unroll
    for (int r = 0; r < PK; r++)
      if (r < TH) val[r] = *q, q += s.iys32;
  } else {
    const int mx = s.mx[col];
    const T *q = s.in + s.ibase + (ndf_i64)(mx < 0 ? 0 : mx) * s.ixs;
#pragma unroll
    for (int r = 0; r < PK; r++)
      if (r < TH) {
        const int my = s.my[r];
        val[r] = (my < 0 || mx < 0) ? s.cv : q[(ndf_i64)my * s.iys];
      }
  }
}


// Word j of a row's ranks (tile row start s = row * TW + lane, par = s & 1):
// the halves that hold the row's columns, as the sign-bit mask 0x8000 / 0x80000000.
__device__ __forceinline__ unsigned int ndf_t10_vm(int j, int par) {
  return ((unsigned int)(2 * j - par) < (unsigned int)KX ? 0x8000u : 0u) |
         ((unsigned int)(2 * j + 1 - par) < (unsigned int)KX ? 0x80000000u : 0u);
}
__device__ __forceinline__ unsigned int ndf_t10_word(const unsigned int *w, int j, int par) {
  // With KX even and par 0 the last word holds none of the row (it may lie past the ranks).
  return (j < NWX - 1 || (KX & 1) || par) ? w[j] : 0u;
}

// The row's ranks at or above P (P2 = P * 0x10001; ranks and P under 2^15).
__device__ __forceinline__ int ndf_t10_ge(const unsigned short *rpos, int s, unsigned int P2) {
  const unsigned int *w = reinterpret_cast<const unsigned int *>(rpos) + (s >> 1);
  const int par = s & 1;
  unsigned int acc = 0u;
#pragma unroll
  for (int j = 0; j < NWX; j++) acc += (((ndf_t10_word(w, j, par) | 0x80008000u) - P2) & ndf_t10_vm(j, par)) >> 15;
  return (int)((acc & 0xffffu) + (acc >> 16));
}

// Window membership of eight ranks' positions (row << 8 | column, rows and columns under 128) at
// once: with x = q + 0x4040 - corner in each 16-bit half (no borrows: every byte stays in 1 .. 191),
// a rank is inside iff its column byte lies in [64, 64 + KX) and its row byte in [64, 64 + KY): bit 6
// clear is below, bit 7 of the byte plus 64 - K is above.  b2 = 0x40404040 - corner * 0x10001.
// Returns bit i for rank 8g + i.
__device__ __forceinline__ unsigned int ndf_t10_m8(const uint4 &w, unsigned int b2) {
  const unsigned int AK = (unsigned int)(64 - KY) << 24 | (unsigned int)(64 - KX) << 16 | (unsigned int)(64 - KY) << 8 |
                          (unsigned int)(64 - KX);
  unsigned int e[4];
  const unsigned int ws[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
  for (int j = 0; j < 4; j++) {
    const unsigned int x = ws[j] + b2;
    const unsigned int bad = ((~x & 0x40404040u) << 1) | ((x + AK) & 0x80808080u); // bit 7 of a bad byte
    e[j] = ~(bad | (bad << 8)) & 0x80008000u;                                         // bits 15, 31: inside
  }
  const unsigned int u = (e[0] >> 15) | (e[1] >> 13) | (e[2] >> 11) | (e[3] >> 9); // bits 2j and 16 + 2j
  return (u | (u >> 15)) & 0xffu;
}
__device__ __forceinline__ unsigned int ndf_t10_pick(const uint4 &w, int b) {
  const unsigned int x = (b & 4) ? ((b & 2) ? w.w : w.z) : ((b & 2) ? w.y : w.x);
  return (b & 1) ? x >> 16 : x & 0xffffu;
}

// P moves to the need-th (from 1) window rank above it (UP) or below it; pp its position.  base:
// the window's corner (top row << 8 | first column).
template <bool UP>
__device__ __forceinline__ void ndf_t10_walk(const unsigned short *pof, unsigned int base, int need, int &P,
                                             unsigned int &pp) {
  const unsigned int b2 = 0x40404040u - base * 0x10001u;
  const int r0 = UP ? P + 1 : P - 1; // the first rank looked at
  int g = r0 >> 3;
  unsigned int keep = UP ? 0xffu << (r0 & 7) : 0xffu >> (7 - (r0 & 7));
#pragma unroll 1
  for (;;) {
    const uint4 w = reinterpret_cast<const uint4 *>(pof)[g];
    unsigned int m = ndf_t10_m8(w, b2) & keep;
    keep = 0xffu;
    const int n = __popc(m);
    if (n >= need) {
#pragma unroll 1
      for (int j = 1; j < need; j++) m &= UP ? m - 1 : ~(0x80000000u >> __clz(m)); // the nearest ones dropped
      const int b = UP ? __ffs(m) - 1 : 31 - __clz(m);
      P = 8 * g + b;
      pp = ndf_t10_pick(w, b);
      return;
    }
    need -= n;
    g += UP ? 1 : -1;
  }
}

// Thread (half, lane)'s outputs: column lane, tile rows ly0 .. ly0+HALF-1.
// A: this half's (warp's) column counts; nq: the first NaN rank (floats; R
// when the tile holds none); active: the column lies inside the array (every
// lane of the warp takes part in the first windows' counts).
// The first windows (rows ly0 .. ly0+KY-1) of the warp's 32 columns share
// their rows: counts of each tile column's ranks per bucket of 128 ranks
// (two 16-bit counts a word, row p of A for buckets 2p, 2p+1; row T10_NBP
// the NaN ranks), prefix sums along the columns, so that a lane's window
// count of a bucket is the difference of two prefixes; then a walk in the
// bucket holding rank k.
template <bool NANS>
__device__ __forceinline__ void ndf_t10_column(const unsigned short *rpos, const unsigned short *pof, unsigned int *A,
                                               const ndf_t10_src &sr, int ly0, int lane, int nq, ndf_i64 y0,
                                               ndf_i64 ny, bool active, T *out, ndf_i64 oys) {
  const int nr = ny - (y0 + ly0) < HALF ? (int)(ny - (y0 + ly0)) : HALF; // rows of this half inside the array
  const unsigned int NQ2 = (unsigned int)nq * 0x10001u;
  for (int i = lane; i < T10_ROWS * T10_RW; i += 32) A[i] = 0u;
  __syncwarp();
#pragma unroll
  for (int xx = 0; xx < 2; xx++) {
    const int x = lane + 32 * xx;
    if (x < TW) {
#pragma unroll 4
      for (int dy = 0; dy < KY; dy++) {
        const unsigned int q = rpos[(ly0 + dy) * TW + x];
        atomicAdd(&A[(q >> 8) * T10_RW + x], 1u << ((q >> 3) & 16u));
        if (NANS && (int)q >= nq) atomicAdd(&A[T10_NBP * T10_RW + x], 1u);
      }
    }
  }
  __syncwarp();
  if (lane < (NANS ? T10_ROWS : T10_NBP)) { // exclusive prefix sums along the row
    unsigned int *row = A + lane * T10_RW, run = 0u;
#pragma unroll 8
    for (int x = 0; x <= TW; x++) {
      const unsigned int v = x < TW ? row[x] : 0u;
      row[x] = run;
      run += v;
    }
  }
  __syncwarp();
  if (!active || nr <= 0) return; // after the warp's counts
  int nanc = NANS ? (int)(A[T10_NBP * T10_RW + lane + KX] - A[T10_NBP * T10_RW + lane]) : 0;
  int P, c;
  unsigned int pp;
  {
    int k = ndf_rank_of(N - nanc); // any rank under N (every window rank) will do
    k = k < 0 ? 0 : k >= N ? N - 1 : k;
    unsigned int hw[T10_NBP];
#pragma unroll
    for (int j = 0; j < T10_NBP; j++) hw[j] = A[j * T10_RW + lane + KX] - A[j * T10_RW + lane];
    int acc = 0, bk = -1;
#pragma unroll
    for (int j = 0; j < T10_NBP; j++) {
      const int lo = (int)(hw[j] & 0xffffu), hi = (int)(hw[j] >> 16);
      if (bk < 0) {
        if (acc + lo > k) bk = 2 * j;
        else if (acc + lo + hi > k) acc += lo, bk = 2 * j + 1;
        else acc += lo + hi;
      }
    }
    P = 128 * bk - 1;
    ndf_t10_walk<true>(pof, ((unsigned int)ly0 << 8) | (unsigned int)lane, k - acc + 1, P, pp);
    c = k;
  }
  bool inP = true;
  T *op = out + (y0 + ly0) * oys;
  for (int jr = 0;; jr++, op += oys) {
    // the output's value read at its position now, stored after the next step (the load's latency
    // behind the step's work)
    const T val = ndf_t10_val(sr, pp);
    bool isnan;
#if KIND == 2 && !NAN_OMIT
    isnan = nanc != 0;
#else
    {
      const int m = N - nanc, k = ndf_rank_of(m);
      isnan = m == 0 || k < 0 || k >= m; // floats only: m < N needs NaN
    }
#endif
    if (jr + 1 >= nr) {
      *op = isnan ? (T)__int_as_float(0x7fc00000) : ndf_untkey(ndf_tkey3(val));
      break;
    }
    const int ro = ly0 + jr, ri = ro + KY;
    const unsigned int P2 = (unsigned int)P * 0x10001u;
    c += ndf_t10_ge(rpos, ro * TW + lane, P2) - ndf_t10_ge(rpos, ri * TW + lane, P2);
    if ((int)(pp >> 8) == ro) inP = false;
    if (NANS) nanc += ndf_t10_ge(rpos, ri * TW + lane, NQ2) - ndf_t10_ge(rpos, ro * TW + lane, NQ2);
#if KIND == 2 && !NAN_OMIT
    const int k = ndf_rank_of(N);
    const bool ok = true;
#else
    const int m = N - nanc, k = ndf_rank_of(m);
    const bool ok = m > 0 && k >= 0 && k < m;
#endif
    unsigned int npp = pp;
    if (ok) {
      const unsigned int base = ((unsigned int)(ro + 1) << 8) | (unsigned int)lane;
      if (c > k) {
        ndf_t10_walk<false>(pof, base, c - k, P, npp);
        c = k, inP = true;
      } else if (c < k || !inP) {
        ndf_t10_walk<true>(pof, base, k - c - (inP ? 1 : 0) + 1, P, npp);
        c = k, inP = true;
      }
    }
    *op = isnan ? (T)__int_as_float(0x7fc00000) : ndf_untkey(ndf_tkey3(val));
    pp = npp;
  }
}
#endif

#if PIPE == 10
#define NDF_T2_LB __launch_bounds__(BT, 8) /* 8 blocks of 64 per SM: 128 registers */
#else
#define NDF_T2_LB __launch_bounds__(BT)
#endif
extern "C" __global__ void NDF_T2_LB ndf_rank_tile2(const ndf_tile_params p) {
  extern __shared__ __align__(16) unsigned char ndf_smem[];
  // Area 0 (32 KB): the tile's keys by position and the equal-key counters,
  // then the bitsets.  Then the sorted keys (16.25 KB), then the ranks by position.
  unsigned int *tkey = reinterpret_cast<unsigned int *>(ndf_smem);
#if PIPE != 10
  unsigned int *dup = tkey + TKW; // PIPE 10: its counters lie where the ranks go
#endif
  unsigned int *bits = tkey;
  unsigned int *sbuf = tkey + AREA0;
  unsigned short *rpos = reinterpret_cast<unsigned short *>(sbuf + SBUF_WORDS);
  const int t = threadIdx.x, lane = t & 31, half = t >> 5;
  const T cv = (T)p.cval;
  const ndf_i64 nwork = p.nxb * p.nstrips * p.nouter;
#if PIPE >= 3
  const ndf_i64 ay = p.iys < 0 ? -p.iys : p.iys, ax = p.ixs < 0 ? -p.ixs : p.ixs;
  const bool off32 = (ndf_i64)(TH - 1) * ay + (ndf_i64)(TW - 1) * ax < ((ndf_i64)1 << 31);
#endif
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
    const ndf_i64 ty0 = y0 + p.ylo, tx0 = x0 + p.xlo;
    // The whole tile inside the array: no boundary mapping.
    const bool inner = ty0 >= 0 && ty0 + TH <= p.ny && tx0 >= 0 && tx0 + TW <= p.nx;
    __syncthreads(); // the previous tile is no longer read
    // Tile position e (row-major); positions from R up are padding (all
    // ones).  Inner tiles: LU loads in flight (clamped positions, no branch
    // between them); border tiles (few) map each position, one at a time.
    unsigned int v[PK];
#if PIPE == 10
    // Thread t loads tile column t (rows 0 .. TH-1) into its sort registers,
    // every tile (border tiles through the tile's map of rows and columns in
    // area 0); the rest is padding.
    const int cc = t < TW ? t : TW - 1;
    const bool real = t < TW;
    ndf_t10_src sr;
    sr.in = p.in, sr.ibase = ibase, sr.iys = p.iys, sr.ixs = p.ixs;
    sr.iys32 = (int)p.iys, sr.ixs32 = (int)p.ixs, sr.fast = inner && off32, sr.cv = cv;
    sr.src = p.in + ibase + (sr.fast ? ty0 * p.iys + tx0 * p.ixs : 0);
    sr.my = reinterpret_cast<const int *>(tkey), sr.mx = sr.my + TH;
    if (!sr.fast) { // block-uniform: the border map (array extents below 2^31: the runtime's limit for tiles)
      int *mp = reinterpret_cast<int *>(tkey);
      for (int i = t; i < TH + TW; i += BT)
        mp[i] = (int)(i < TH ? ndf_map(ty0 + i, p.ny, MODE) : ndf_map(tx0 + (i - TH), p.nx, MODE));
      __syncthreads();
    }
    {
      T val[PK];
      ndf_t10_colvals(sr, cc, val);
#pragma unroll
      for (int r = 0; r < PK; r++) v[r] = (r < TH && real) ? ndf_tkey3(val[r]) : 0xffffffffu;
    }
    // The equal-key counters (16 bits each, where the ranks go later) cleared.
    for (int j = t; j < (R * 2 + 15) / 16; j += BT) reinterpret_cast<uint4 *>(rpos)[j] = make_uint4(0u, 0u, 0u, 0u);
#else
#if PIPE >= 3
    // Inner tiles whose offsets fit 32 bits: all 64 loads of a thread in
    // flight, straight into its sort registers (its positions t + 64i are the
    // sort's elements 64t + i); the equal-key counters cleared 16 bytes at a time.
    if (inner && off32) {
      const T *src = p.in + ibase + ty0 * p.iys + tx0 * p.ixs;
      const int iys = (int)p.iys, ixs = (int)p.ixs;
      T val[PK];
#if COLMAP
      // The sort takes its keys in any arrangement: thread t loads tile
      // column t (rows 0 .. TH-1: no division, one multiply-add per load),
      // the rest of its 64 slots padding; tkey still by position.
      const int c = t < TW ? t : TW - 1;
#pragma unroll
      for (int r = 0; r < PK; r++)
        if (r < TH) val[r] = src[r * iys + c * ixs];
      const bool real = t < TW;
#pragma unroll
      for (int r = 0; r < PK; r++) {
        if (r < TH) {
          const unsigned int k = ndf_tkey3(val[r]);
          v[r] = real ? k : 0xffffffffu;
        } else {
          v[r] = 0xffffffffu;
        }
      }
      if (real) {
#pragma unroll
        for (int r = 0; r < TH; r++) tkey[r * TW + t] = v[r];
      }
#else
#pragma unroll
      for (int i = 0; i < PK; i++) {
        const int e = i * BT + t, ec = e < R ? e : R - 1;
        const int ry = ec / TW, rx = ec - ry * TW;
        val[i] = src[ry * iys + rx * ixs];
      }
#pragma unroll
      for (int i = 0; i < PK; i++) {
        const int e = i * BT + t;
        v[i] = e < R ? NDF_T2KEY(ndf_tkey(val[i]), e) : NDF_T2PAD(e);
        if (e < TKW) tkey[e] = v[i];
      }
#endif
#pragma unroll
      for (int j = 0; j < (TKW / 4 + BT - 1) / BT; j++)
        if (j * BT + t < TKW / 4) reinterpret_cast<uint4 *>(dup)[j * BT + t] = make_uint4(0u, 0u, 0u, 0u);
    } else
#endif
    {
    if (inner) {
#pragma unroll 1
      for (int e0 = t; e0 < RP2; e0 += LU * BT) {
        T val[LU];
#pragma unroll
        for (int u = 0; u < LU; u++) {
          const int e = e0 + u * BT, ec = e < R ? e : R - 1;
          const int ry = ec / TW, rx = ec - ry * TW;
          val[u] = p.in[ibase + (ty0 + ry) * p.iys + (tx0 + rx) * p.ixs];
        }
#pragma unroll
        for (int u = 0; u < LU; u++) {
          const int e = e0 + u * BT;
          if (!VEC3 || e < TKW) {
            tkey[e] = e < R ? NDF_T2KEY(ndf_tkey(val[u]), e) : NDF_T2PAD(e);
            dup[e] = 0u;
          }
        }
      }
    } else {
#pragma unroll 1
      for (int e = t; e < RP2; e += BT) {
        unsigned int key = NDF_T2PAD(e);
        if (e < R) {
          const int ry = e / TW, rx = e - ry * TW;
          const ndf_i64 my = ndf_map(ty0 + ry, p.ny, MODE), mx = ndf_map(tx0 + rx, p.nx, MODE);
          key = NDF_T2KEY(ndf_tkey((my < 0 || mx < 0) ? cv : p.in[ibase + my * p.iys + mx * p.ixs]), e);
        }
        if (!VEC3 || e < TKW) {
          tkey[e] = key;
          dup[e] = 0u;
        }
      }
    }
    // Thread t's own positions t + 64i become the sort's elements 64t + i
    // (positions from TKW up: padding, not stored).
#if VEC3
#pragma unroll
    for (int i = 0; i < PK; i++) v[i] = i * BT + t < TKW ? tkey[i * BT + t] : NDF_T2PAD(i * BT + t);
#else
#pragma unroll
    for (int i = 0; i < PK; i++) v[i] = tkey[i * BT + t];
#endif
    }
#endif // PIPE == 10
    ndf_sort4096(v, sbuf, t); // its first barrier orders dup too
    // Ranks: the lower bound of the key (it is present) plus the equal keys
    // counted so far.  NaNs (floats) take the ranks from the lower bound of
    // all ones up; nq is its code (padding keys lie above every real one).
#if PIPE == 10
    {
      // Column cc's keys read again (L1 / L2), 16 searches at a time as PIPE
      // 3's; the ranks wait in registers until every search is done (the
      // counters lie where the ranks go, the sorted keys where posOf goes).
      // rk[r]: first row r's key (all loads in flight at once), then its rank
      unsigned int rk[PK];
      unsigned int *dup = reinterpret_cast<unsigned int *>(rpos);
      const unsigned char *sb = reinterpret_cast<const unsigned char *>(sbuf);
      {
        T val[PK];
        ndf_t10_colvals(sr, cc, val);
#pragma unroll
        for (int r = 0; r < PK; r++) rk[r] = (r < TH && real) ? ndf_tkey3(val[r]) : 0xffffffffu;
      }
#pragma unroll
      for (int i0 = 0; i0 < PK; i0 += 16) {
        unsigned int ob[16];
#pragma unroll
        for (int u = 0; u < 16; u++) ob[u] = 0u;
        // NDF_LEAN: the levels as a loop (their probe offset and step computed once for the 16 searches)
#if NDF_LEAN
#pragma unroll 1
#else
#pragma unroll
#endif
        for (int h = RP2 / 2; h > 0; h >>= 1) {
          const unsigned int po = 4 * (h - 1 + (h >= 64 ? PADX * (h / 64 - 1) : 0)), st = 4 * (h + PADX * (h / 64));
#pragma unroll
          for (int u = 0; u < 16; u++)
            if (*reinterpret_cast<const unsigned int *>(sb + ob[u] + po) < rk[i0 + u]) ob[u] += st;
        }
#pragma unroll
        for (int u = 0; u < 16; u++) {
          const int r = i0 + u;
          int lb = (int)(ob[u] >> 2);
          lb -= PADX * (lb / PADW);
          const int lbc = lb < R ? lb : R - 1;
          const unsigned int sh = (unsigned int)(lbc & 1) << 4;
          const unsigned int old = atomicAdd(&dup[lbc >> 1], ((r < TH && real) ? 1u : 0u) << sh);
          rk[r] = (unsigned int)lb + ((old >> sh) & 0xffffu);
        }
      }
      int nqr = R; // the first NaN rank (floats), R when the tile holds none
#if KIND == 2
      {
        int lb = 0;
#pragma unroll
        for (int h = RP2 / 2; h > 0; h >>= 1)
          if (sbuf[ndf_saddr(lb + h - 1)] < 0xffffffffu) lb += h;
        nqr = lb < R ? lb : R; // R <= 3968: padding keys (all ones) follow every real key
      }
#endif
      __syncthreads(); // counters and sorted keys no longer read
      unsigned short *pof = reinterpret_cast<unsigned short *>(sbuf);
      if (real) {
#pragma unroll
        for (int r = 0; r < PK; r++)
          if (r < TH) {
            rpos[r * TW + cc] = (unsigned short)rk[r];
            pof[rk[r]] = (unsigned short)((r << 8) | cc);
          }
      }
      if (t < 8) pof[R + t] = 0x7f7fu; // ranks past the tile (a walk reads eight at a time): outside every window
      __syncthreads(); // ranks and positions complete
      const ndf_i64 x = x0 + lane;
      const bool active = x < p.nx; // every lane of the warp takes part in the first windows' counts
      unsigned int *A = reinterpret_cast<unsigned int *>(reinterpret_cast<unsigned char *>(sbuf) + T10_POSB) + half * (T10_ROWS * T10_RW);
      T *op = p.out + obase + (active ? x : 0) * p.oxs;
#if KIND == 2
      if (nqr < R) { // NaNs in the tile (the same for the whole block)
        ndf_t10_column<true>(rpos, pof, A, sr, half * HALF, lane, nqr, y0, p.ny, active, op, p.oys);
        continue;
      }
#endif
      ndf_t10_column<false>(rpos, pof, A, sr, half * HALF, lane, nqr, y0, p.ny, active, op, p.oys);
      continue;
    }
#elif PACK
    // Sorted element 64t + i (v[i] after the sort, also in sbuf) has rank 64t + i.
#pragma unroll
    for (int i = 0; i < PK; i++) {
      const unsigned int pos = v[i] & 0xfffu;
      if (pos < (unsigned int)R) rpos[pos] = (unsigned short)ndf_tile2_code(PK * t + i);
    }
#elif PIPE >= 3
    // As PIPE 1 below, each search's position a byte offset into the padded
    // sorted keys: a probe is a load at the offset plus a constant, a taken
    // step adds a constant.  PIPE 8: 32 searches at a time (more
    // independent chains of probes per warp, twice the registers for them).
#define RG (PIPE == 8 ? 32 : 16)
#pragma unroll 1
    for (int i0 = 0; i0 < PK; i0 += RG) {
      unsigned int key[RG], dk[RG], ob[RG];
      int lb[RG];
      const unsigned char *sb = reinterpret_cast<const unsigned char *>(sbuf);
#pragma unroll
      for (int u = 0; u < RG; u++) {
        key[u] = (i0 + u) * BT + t < R ? tkey[(i0 + u) * BT + t] : 0xffffffffu; // padding searches harmlessly
        ob[u] = 0u;
      }
#pragma unroll
      for (int h = RP2 / 2; h > 0; h >>= 1) {
#pragma unroll
        for (int u = 0; u < RG; u++)
          if (*reinterpret_cast<const unsigned int *>(sb + ob[u] + 4 * (h - 1 + (h >= 64 ? PADX * (h / 64 - 1) : 0))) < key[u])
            ob[u] += 4 * (h + PADX * (h / 64));
      }
#pragma unroll
      for (int u = 0; u < RG; u++) {
        lb[u] = (int)(ob[u] >> 2);
        lb[u] -= PADX * (lb[u] / PADW);
      }
#if PIPE >= 5
      // Every lane adds (0 for padding, at a clamped counter: its lower bound
      // may be R), so the atomics need no branch each.
#pragma unroll
      for (int u = 0; u < RG; u++)
        dk[u] = atomicAdd(&dup[lb[u] < R ? lb[u] : R - 1], (i0 + u) * BT + t < R ? 1u : 0u);
#else
#pragma unroll
      for (int u = 0; u < RG; u++) dk[u] = (i0 + u) * BT + t < R ? atomicAdd(&dup[lb[u]], 1u) : 0u;
#endif
#pragma unroll
      for (int u = 0; u < RG; u++) {
        const int e = (i0 + u) * BT + t;
        if (e < R) rpos[e] = (unsigned short)ndf_tile2_code(lb[u] + (int)dk[u]);
      }
    }
#elif PIPE
    // RG searches at a time, with no shared store or atomic among their loads
    // (those would keep the next search's loads behind them): RG independent
    // chains of 12 loads, then RG atomics, then RG stores.
#define RG 16
#pragma unroll 1
    for (int i0 = 0; i0 < PK; i0 += RG) {
      unsigned int key[RG], dk[RG];
      int lb[RG];
#pragma unroll
      for (int u = 0; u < RG; u++) {
        key[u] = tkey[(i0 + u) * BT + t]; // padding (all ones) searches harmlessly
        lb[u] = 0;
      }
      // lb[u] runs in padded words (lb + lb / 64): lb is a multiple of 2h
      // before the step of h, so the probe saddr(lb + h - 1) is lb's padded
      // word plus a constant (h - 1 + (h >= 64 ? h / 64 - 1 : 0)), and a
      // taken step adds h + h / 64.  Back to a rank: lb - lb / 65.
#pragma unroll
      for (int h = RP2 / 2; h > 0; h >>= 1) {
#pragma unroll
        for (int u = 0; u < RG; u++)
          if (sbuf[lb[u] + h - 1 + (h >= 64 ? h / 64 - 1 : 0)] < key[u]) lb[u] += h + h / 64;
      }
#pragma unroll
      for (int u = 0; u < RG; u++) lb[u] -= lb[u] / 65;
#pragma unroll
      for (int u = 0; u < RG; u++) dk[u] = (i0 + u) * BT + t < R ? atomicAdd(&dup[lb[u]], 1u) : 0u;
#pragma unroll
      for (int u = 0; u < RG; u++) {
        const int e = (i0 + u) * BT + t;
        if (e < R) rpos[e] = (unsigned short)ndf_tile2_code(lb[u] + (int)dk[u]);
      }
    }
#else
    // Eight searches at a time: each is a chain of 12 dependent loads.
#pragma unroll 8
    for (int i = 0; i < PK; i++) {
      const int e = i * BT + t;
      if (e < R) {
        const unsigned int key = tkey[e];
        int lb = 0;
#pragma unroll
        for (int h = RP2 / 2; h > 0; h >>= 1)
          if (sbuf[ndf_saddr(lb + h - 1)] < key) lb += h;
        rpos[e] = (unsigned short)ndf_tile2_code(lb + (int)atomicAdd(&dup[lb], 1u));
      }
    }
#endif
    unsigned int nq = 0xffffu; // above every code
#if KIND == 2
    {
      int lb = 0;
#pragma unroll
      for (int h = RP2 / 2; h > 0; h >>= 1)
        if (sbuf[ndf_saddr(lb + h - 1)] < 0xffffffffu) lb += h;
      if (sbuf[ndf_saddr(lb)] < 0xffffffffu) lb++; // 4096 values, no NaN: above every rank
      nq = ndf_tile2_code(lb);
    }
#endif
    __syncthreads(); // rpos complete; tkey and dup no longer read
    unsigned int *mybits = bits + t;
    for (int q = 0; q < NWORDS; q++) mybits[q * BT] = 0u; // this thread's words only
    const ndf_i64 x = x0 + lane;
#if PIPE == 2
    {
      const bool active = x < p.nx;
      T *op = p.out + obase + (active ? x : 0) * p.oxs;
#if KIND == 2
      if (nq < ndf_tile2_code(R)) { // NaNs in the tile (the same for the whole block)
        ndf_tile2_column_mid<true>(rpos, bits, sbuf, t, nq, y0, p.ny, active, op, p.oys);
        continue;
      }
#endif
      ndf_tile2_column_mid<false>(rpos, bits, sbuf, t, nq, y0, p.ny, active, op, p.oys);
      continue;
    }
#endif
#if PIPE == 4
    {
      const int col = 16 * half + (lane & 15), hf = lane >> 4;
      const ndf_i64 xx = x0 + col;
      const bool active = xx < p.nx;
      T *op = p.out + obase + (active ? xx : 0) * p.oxs;
#if KIND == 2
      if (nq < ndf_tile2_code(R)) { // NaNs in the tile (the same for the whole block)
        ndf_t4_column<true>(rpos, ndf_smem, 4u * t, sbuf, col, hf, nq, y0, p.ny, active, op, p.oys);
        continue;
      }
#endif
      ndf_t4_column<false>(rpos, ndf_smem, 4u * t, sbuf, col, hf, nq, y0, p.ny, active, op, p.oys);
      continue;
    }
#endif
#if PIPE >= 5
    {
      const bool active = x < p.nx;
      T *op = p.out + obase + (active ? x : 0) * p.oxs;
#if KIND == 2
      if (nq < ndf_tile2_code(R)) { // NaNs in the tile (the same for the whole block)
        ndf_t5_column<true>(rpos, ndf_smem, 4u * t, sbuf, half * HALF, lane, nq, y0, p.ny, active, op, p.oys);
        continue;
      }
#endif
      ndf_t5_column<false>(rpos, ndf_smem, 4u * t, sbuf, half * HALF, lane, nq, y0, p.ny, active, op, p.oys);
      continue;
    }
#endif
    if (x >= p.nx) continue; // no barrier below
#if PIPE == 3
#if KIND == 2
    if (nq < ndf_tile2_code(R)) { // NaNs in the tile
      ndf_t3_column<true>(rpos, ndf_smem, 4u * t, sbuf, half * HALF, lane, nq, y0, p.ny, p.out + obase + x * p.oxs, p.oys);
      continue;
    }
#endif
    ndf_t3_column<false>(rpos, ndf_smem, 4u * t, sbuf, half * HALF, lane, nq, y0, p.ny, p.out + obase + x * p.oxs, p.oys);
    continue;
#endif
#if KIND == 2
    if (nq < ndf_tile2_code(R)) { // NaNs in the tile
      ndf_tile2_column<true>(rpos, mybits, sbuf, half * HALF, lane, nq, y0, p.ny, p.out + obase + x * p.oxs, p.oys);
      continue;
    }
#endif
    ndf_tile2_column<false>(rpos, mybits, sbuf, half * HALF, lane, nq, y0, p.ny, p.out + obase + x * p.oxs, p.oys);
  }
}
