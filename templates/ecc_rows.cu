// ecc_rows.cu -- ndf_ecc_rows: the exact 3-D ECC as one cooperative launch with a bit-sliced
// contribution pass (docs/adr/0009-euler-characteristic-curves.md, "Bit-sliced rows").
//
// Applies to 3-D inputs with thresholds over [min, max] and T <= 256 (runtime/ecc_cuda.c,
// ecc.rows): then every voxel's bin (the least k with f <= t_k) is 0..T - 1 <= 255,
// 8 bits.  Phase 1 (min / max / NaN of the block's voxels), the grid barrier and the
// thresholds are ndf_ecc_pack's (ndf_ecc_fused.cuh); the march differs:
//
// - A block owns a tile of 32 rows (y) x 128 voxels (x) of one image and marches along z over
//   its chunk.  Warp s takes the 16-voxel segment x0 + 16 s .. + 15 of every row, lane l the row
//   y0 + l.  Each plane is binned once (own segment: one row of 16 voxels per lane; the halo
//   rows y0 - 1, y0 + 32 and the columns x0 - 1, x0 + 128: one or two voxels per thread) into a
//   shared ring of four plane buffers (one barrier per plane).
// - A segment is 8 words, word j holding the bins of voxels j and j + 8 in its 16-bit halves
//   (bits 0..7; T-construction: 255 - bin, see below).  A shift by one voxel along x is word
//   j -+ 1, or one PRMT with the neighbour segment's word at the ends.
// - "v wins against n" for a whole word: with the guard G_j = bit 8 + j of each half,
//   (w_j | G_j) - n [- 0x10001] keeps bit 8 + j iff b_v >= b_n [b_v > b_n] (both < 256:
//   no borrow between halves), so acc |= D & G_j packs the 16 voxels' flags of one direction
//   into one word (voxel j at bit 8 + j, voxel j + 8 at bit 24 + j).  V: v wins against an
//   after-neighbour (C order) iff b_v > b_n, a before-neighbour iff b_v >= b_n (ndf_ecc_pack.cuh).
//   T: iff b_v <= b_n (after) / b_v < b_n (before); with c = 255 - b stored, that is c_v >= c_n
//   / c_v > c_n: the V code with the two rules swapped.
// - Outside the image: V flags false (the cell does not exist), T flags true (a border face);
//   a warp with a lane at a border of the image (and every step on the first / last plane)
//   applies inside masks to the 26 flag words (V: &=, T: |= ~).
// - Cells on the 16-voxel flag words: squares = AND of 3 flags, cubes = AND of 7;
//   c = 1 - edges + squares - cubes (V; negated for T), i.e. c = E' + S + C' - 13 (V, E' the
//   edges not owned, C' the cubes not owned) or E + S' + C - 13 (T): 26 one-bit terms summed
//   by carry-save adders into four bit slices of c mod 16 (c is in [-7, 7]: a 4-bit two's
//   complement).  The slices are transposed into nibbles (4 PRMT, 4 delta swaps per 8 voxels);
//   each voxel with c != 0 adds c to the block's shared histogram (one shared atomic).
// - The block's histogram goes to the global one (one atomic per non-zero bin); the image's
//   last block writes the curve (ndf_ecc_prefix_m).
//
// PF bit 0: 1 loads plane z + 2 into registers before the step of plane z (its latency hidden
// by the step), 0 after it.  PF bit 1: every voxel's c goes to the shared histogram (adding 0
// for c = 0: no branch per voxel, more shared atomics), else only c != 0.  PF bit 2 (inputs of
// at most 4 bytes; bit 0 ignored): the lane's 16 values of plane z + 2 go to a shared staging
// slot of its own by cp.async before the step of plane z and are read back after it (the
// latency hidden by the step, no registers live over it; the halo voxels in registers).  PF
// bit 3: the other register budget (launch bounds of 3 blocks per SM where the default is 4,
// 4 where it is 3).
#include "ndf_common.cuh"
#include "ndf_ecc_pack.cuh"
#include "ndf_ecc_fused.cuh"

typedef NDF_SLOT(TIN) TIN; // input element type
typedef NDF_SLOT(V) V;     // comparison type: float (uint8/uint16/float32) or double (float64)
#define CONS NDF_SLOT(CONS) // 0 V-construction, 1 T-construction
#define PFS NDF_SLOT(PF)    // bit 0: the next plane's loads in flight over a step; bit 1: unconditional adds
#define PF (PFS & 1)
#define RED_ALL ((PFS >> 1) & 1)

NDF_PARAMS(ndf_ecc_rows_params)

#define NDF_ROWS_STG (((PFS >> 2) & 1) && sizeof(TIN) <= 4) // the staging of bit 2
// blocks per SM of the launch bounds: 3 with loads in flight (bit 0 or 2), else 4; bit 3 swaps
#define NDF_ROWS_MINB ((((PFS & 5) != 0) != ((PFS & 8) != 0)) ? 3 : 4)

#define NDF_RS 8                        // segments (warps) per block along x, 16 voxels each
#define NDF_RR 34                       // rows of a plane buffer: 32 lanes and the two halo rows
#define NDF_RSLOT (NDF_RR * 8)          // words of one segment column
#define NDF_RE0 (NDF_RS * NDF_RSLOT)    // the edge words E[slot][row], slot = segment + 1
#define NDF_RPL (NDF_RE0 + (NDF_RS + 2) * NDF_RR) // words of a plane buffer (2516: 16-byte multiple)
// E[s + 1][r] = (voxel 0, voxel 15) of segment s of row r (E[0][r]: voxel x0 - 1 in the high
// half, E[9][r]: voxel x0 + 128 in the low half): a lane's x - 1 / x + 16 neighbours, one
// 4-byte read per row from consecutive words (no bank conflicts)
#define NDF_REDGE(s1, r) (NDF_RE0 + (s1) * NDF_RR + (r))

// word w of row r of segment s: the two halves of a row's 8 words are swapped on rows with
// bit 2 set, so the 8 lanes of a quarter warp (8 consecutive rows) read 16 bytes each from
// distinct banks
__host__ __device__ __forceinline__ int ndf_rows_at(int s, int r, int w) { return s * NDF_RSLOT + r * 8 + (w ^ (r & 4)); }

// swap of the bits p and p + d for p in m (address bits a < b swapped: d = 2^b - 2^a)
__host__ __device__ __forceinline__ unsigned ndf_rows_dswap(unsigned x, int d, unsigned m) {
  const unsigned t = (x ^ (x >> d)) & m;
  return x ^ t ^ (t << d);
}

// bytes 0..3 of a: bit i of byte k (slice k of voxel i) -> nibble i bit k
__host__ __device__ __forceinline__ unsigned ndf_rows_transpose(unsigned a) {
  a = ndf_rows_dswap(a, 7, 0x00aa00aau);  // address bits 0 <-> 3
  a = ndf_rows_dswap(a, 14, 0x0000ccccu); // 1 <-> 4
  a = ndf_rows_dswap(a, 12, 0x0000f0f0u); // 2 <-> 4
  a = ndf_rows_dswap(a, 4, 0x00f000f0u);  // 2 <-> 3
  return a;
}

// sum of 26 one-bit masks plus 3, modulo 16, as four bit slices, by carry-save (full) adders:
// the first level is 8 adders of x[0..23] in triples (s, k: their sums and carries, the
// kernel feeds them as its terms appear), ndf_rows_csa_rest the others
#define NDF_FA(a, b, c, s, k)                                                                                  \
  do {                                                                                                         \
    const unsigned fa_a = (a), fa_b = (b), fa_c = (c);                                                         \
    s = fa_a ^ fa_b ^ fa_c;                                                                                    \
    k = (fa_a & fa_b) | (fa_c & (fa_a ^ fa_b));                                                                \
  } while (0)
__host__ __device__ __forceinline__ void ndf_rows_csa_rest(const unsigned (&s)[8], const unsigned (&k8)[8],
                                                           unsigned x24, unsigned x25, unsigned (&o)[4]) {
  unsigned k[13];
#pragma unroll
  for (int i = 0; i < 8; i++) k[i] = k8[i];
  unsigned t0, t1, t2, u;
  NDF_FA(s[0], s[1], s[2], t0, k[8]);
  NDF_FA(s[3], s[4], s[5], t1, k[9]);
  NDF_FA(s[6], s[7], x24, t2, k[10]);
  NDF_FA(t0, t1, t2, u, k[11]);
  o[0] = ~(u ^ x25); // + the constant's 1
  k[12] = u | x25;
  unsigned a0, a1, a2, a3, b0, b1, m[7];
  NDF_FA(k[0], k[1], k[2], a0, m[0]);
  NDF_FA(k[3], k[4], k[5], a1, m[1]);
  NDF_FA(k[6], k[7], k[8], a2, m[2]);
  NDF_FA(k[9], k[10], k[11], a3, m[3]);
  NDF_FA(a0, a1, a2, b0, m[4]);
  NDF_FA(a3, k[12], b0, b1, m[5]);
  o[1] = ~b1; // + the constant's 2
  m[6] = b1;
  unsigned d0, d1, n0, n1, n2;
  NDF_FA(m[0], m[1], m[2], d0, n0);
  NDF_FA(m[3], m[4], m[5], d1, n1);
  NDF_FA(d0, d1, m[6], o[2], n2);
  o[3] = n0 ^ n1 ^ n2;
}
__host__ __device__ __forceinline__ void ndf_rows_csa(const unsigned (&x)[26], unsigned (&o)[4]) {
  unsigned s[8], k[8];
#pragma unroll
  for (int i = 0; i < 8; i++) NDF_FA(x[3 * i], x[3 * i + 1], x[3 * i + 2], s[i], k[i]);
  ndf_rows_csa_rest(s, k, x[24], x[25], o);
}

// The same sum streamed as the terms appear (fewer live words): the centre plane's 8 terms,
// then 9 of the plane z - 1, then 9 of z + 1.  ndf_rows_acc holds the pending bits of each
// weight (w1: 1, w2: 2, w4: 4) and the parity of the weight-8 carries.
struct ndf_rows_acc {
  unsigned w1a, w1b, w2a, w2b, w4a, p8;
};
__host__ __device__ __forceinline__ ndf_rows_acc ndf_rows_acc_centre(const unsigned (&x)[8]) {
  ndf_rows_acc A;
  unsigned s0, s1, c0, c1, c2;
  NDF_FA(x[0], x[1], x[2], s0, c0);
  NDF_FA(x[3], x[4], x[5], s1, c1);
  NDF_FA(s0, s1, x[6], A.w1a, c2);
  A.w1b = x[7];
  NDF_FA(c0, c1, c2, A.w2a, A.w4a);
  A.w2b = 0u;
  A.p8 = 0u;
  return A;
}
// one plane's 9 terms; in: w1a, w1b, w2a, (w2b unused: 0), w4a; out: w1a, w2a, w2b, w4a, p8
__host__ __device__ __forceinline__ void ndf_rows_acc_first(ndf_rows_acc &A, const unsigned (&t)[9]) {
  unsigned s2, s3, s4, u, c3, c4, c5, c6, c7, e0, e1, d1, d2, f0, g0;
  NDF_FA(A.w1a, A.w1b, t[0], s2, c3);
  NDF_FA(t[1], t[2], t[3], s3, c4);
  NDF_FA(t[4], t[5], t[6], s4, c5);
  NDF_FA(s2, s3, s4, u, c6);
  NDF_FA(u, t[7], t[8], A.w1a, c7);
  NDF_FA(A.w2a, c3, c4, e0, d1);
  NDF_FA(c5, c6, c7, e1, d2);
  NDF_FA(A.w4a, d1, d2, f0, g0);
  A.w1b = 0u;
  A.w2a = e0, A.w2b = e1, A.w4a = f0, A.p8 = g0;
}
// the second plane's 9 terms and the constant 3; the 4 slices of the sum mod 16
__host__ __device__ __forceinline__ void ndf_rows_acc_last(const ndf_rows_acc &A, const unsigned (&t)[9],
                                                           unsigned (&o)[4]) {
  unsigned s5, s6, s7, u, c8, c9, c10, c11, h0, h1, d3, d4, f1, g1, q, d5, d6;
  NDF_FA(A.w1a, t[0], t[1], s5, c8);
  NDF_FA(t[2], t[3], t[4], s6, c9);
  NDF_FA(t[5], t[6], t[7], s7, c10);
  NDF_FA(s5, s6, s7, u, c11);
  NDF_FA(A.w2a, A.w2b, c8, h0, d3);
  NDF_FA(c9, c10, c11, h1, d4);
  NDF_FA(A.w4a, d3, d4, f1, g1);
  // weight 1: u + t8 + 1
  o[0] = ~(u ^ t[8]);
  const unsigned k1 = u | t[8];
  // weight 2: h0 + h1 + k1 + 1
  NDF_FA(h0, h1, k1, q, d5);
  o[1] = ~q;
  // weight 4: f1 + d5 + q (q: the carry of q + 1)
  NDF_FA(f1, d5, q, o[2], d6);
  o[3] = A.p8 ^ g1 ^ d6;
}

// the slices o[0..3] of c mod 16 (voxel j at bit 8 + j, voxel j + 8 at bit 24 + j) as two
// words of 4-bit two's complement nibbles: lo nibble i voxel i, hi nibble i voxel 8 + i
__host__ __device__ __forceinline__ void ndf_rows_nibbles(const unsigned (&o)[4], unsigned &lo, unsigned &hi) {
  // bytes 1 (voxels 0..7) and 3 (voxels 8..15) of the four slices
  const unsigned p01 = __byte_perm(o[0], o[1], 0x7351), p23 = __byte_perm(o[2], o[3], 0x7351);
  lo = ndf_rows_transpose(__byte_perm(p01, p23, 0x5410));
  hi = ndf_rows_transpose(__byte_perm(p01, p23, 0x7632));
}

// The flags f[dx] (dx = 0, 1, 2: voxel x - 1, x, x + 1; the centre row has no f[1]) of the
// segment's 16 voxels against one neighbour row of plane P (offset DZ - 1 along z, DY - 1
// along y): ro the offset of the row's logical word 0 (its swizzled first half; the second
// half at ro ^ 4), n its 8 words (ndf_rows_load), rl the edge word E holding voxel x - 1
// (high half; voxel x + 16: the low half of E two slots on).  a[j]: the centre words with
// their guards.
__device__ __forceinline__ void ndf_rows_load(const unsigned *P, int ro, unsigned (&n)[8]) {
  const uint4 q0 = *(const uint4 *)(P + ro), q1 = *(const uint4 *)(P + (ro ^ 4));
  n[0] = q0.x, n[1] = q0.y, n[2] = q0.z, n[3] = q0.w, n[4] = q1.x, n[5] = q1.y, n[6] = q1.z, n[7] = q1.w;
}
// SKIP: a mask of the dx whose f[dx] the caller supplies (left as they are).
template <int CS, int DZ, int DY, int SKIP = 0>
__device__ __forceinline__ void ndf_rows_row(const unsigned *P, const unsigned (&n)[8], int rl,
                                             const unsigned (&a)[8], unsigned (&f)[3]) {
  const unsigned nm = __byte_perm(P[rl], n[7], 0x5432);                 // (x - 1, x + 7)
  const unsigned np = __byte_perm(n[0], P[rl + 2 * NDF_RR], 0x5432); // (x + 8, x + 16)
#pragma unroll
  for (int dx = 2; dx >= 0; dx--) {
    if ((SKIP >> dx) & 1) continue;
    f[dx] = 0u;
    if (DZ == 1 && DY == 1 && dx == 1) continue;
    const bool after = DZ > 1 || (DZ == 1 && (DY > 1 || (DY == 1 && dx > 1)));
    const unsigned one = (CS == 0 ? after : !after) ? 0x00010001u : 0u;
    if (DZ == 1 && DY == 1 && dx == 0) {
      // v against v - 1 is NOT (v - 1 against v), f[2] of the voxel before, one voxel on
      // (voxel j - 1 at bit 8 + j - 1 -> 8 + j, voxel 7 at bit 15 -> 24); voxel 0 (against
      // the left segment's voxel 15) compared directly
      const unsigned sh = ((f[2] << 1) & 0xfe00fe00u) | ((f[2] << 9) & 0x01000000u);
      const unsigned d0 = (a[0] - nm - one) & 0x100u;
      f[0] = (~sh & 0xfffffeffu) | d0;
      continue;
    }
    unsigned acc = 0;
#pragma unroll
    for (int j = 0; j < 8; j++) {
      const unsigned nb = dx == 1 ? n[j] : dx == 0 ? (j == 0 ? nm : n[j - 1]) : (j == 7 ? np : n[j + 1]);
      acc |= (a[j] - nb - one) & ((0x100u << j) * 0x10001u);
    }
    f[dx] = acc;
  }
}

// h[off / 4] += c when c != 0: one predicated shared reduction (no branch around it)
#ifndef NDF_ROWS_RED_DEFINED
__device__ __forceinline__ void ndf_rows_red(int *h, unsigned off, int c) {
  const unsigned a = (unsigned)__cvta_generic_to_shared(h) + off;
  asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.s32 p, %1, 0;\n\t@p red.shared.add.s32 [%0], %1;\n\t}" ::"r"(a), "r"(c)
               : "memory");
}
#endif

// cp.async of 16 bytes from global memory into shared memory, its group's commit and the wait
// for every group of the thread (sm_80 on; older: a plain copy)
#ifndef NDF_ROWS_CPASYNC_DEFINED
__device__ __forceinline__ void ndf_rows_cp16(void *dst, const void *src) {
#if __CUDA_ARCH__ >= 800
  const unsigned a = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(a), "l"(src) : "memory");
#else
  *(uint4 *)dst = *(const uint4 *)src;
#endif
}
__device__ __forceinline__ void ndf_rows_cp_commit() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
__device__ __forceinline__ void ndf_rows_cp_wait() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group 0;" ::: "memory");
#endif
}
#endif

template <bool B> struct ndf_rows_bool {
  static constexpr bool value = B;
};

// the exact bin (ndf_ecc_bin), out of line: the misses of the kernel's first guess
// ceil(f * ga + gb) (a value on a threshold, rounding), thresholds not evenly spaced, float64
template <typename W> __device__ __noinline__ unsigned ndf_rows_bin_slow(W f, const W *tv, int T, int uni, float lo, float inv) {
  return ndf_ecc_bin<W>(f, tv, T, uni, lo, inv);
}

extern "C" __global__ void __launch_bounds__(256, NDF_ROWS_MINB) ndf_ecc_rows(const ndf_ecc_rows_params p) {
  __shared__ __align__(16) unsigned rpl[4 * NDF_RPL];
  __shared__ int shist[256];
  // dyn: -inf, the T sorted thresholds, +inf (double); the same rounded down to float; the
  // float pairs (t_{k-1}, t_k), k = 0..T (float inputs)
  extern __shared__ __align__(16) double dyn[]; // 16-byte aligned: PF bit 2's slots
  __shared__ float s_lo, s_inv, s_ga, s_gb;
  __shared__ int s_uni, s_m;
  __shared__ bool s_last;
  const int T = (int)p.T;
  const int tid = threadIdx.x, lane = tid & 31, seg = tid >> 5;
  float *tsf = (float *)(dyn + T + 2);
  float2 *tpair = (float2 *)(dyn + T + 2 + (T + 3) / 2);
  const V *tv = sizeof(V) == 4 ? (const V *)(tsf + 1) : (const V *)(dyn + 1);
  // PF bit 2: chunk i of thread tid's 16 values of the next plane at stg[256 i + tid], after the
  // tables' T * 24 + 64 bytes (runtime/ecc_cuda.c: the dynamic shared memory is larger by
  // 4096 sizeof(TIN))
  uint4 *stg = (uint4 *)((char *)dyn + ((T * 24 + 64 + 15) & ~15));
  ndf_i64 item = blockIdx.x;
  const ndf_i64 chunk = item % p.nchunks;
  item /= p.nchunks;
  const ndf_i64 tile = item % p.ptiles, img = item / p.ptiles;
  const ndf_i64 x0 = (tile % p.ntx) * 128, y0 = (tile / p.ntx) * 32;
  const ndf_i64 z0 = chunk * p.mc, z1 = min(z0 + p.mc, p.nz);
  ndf_i64 base = 0, q = img;
  for (int d = p.nb - 1; d >= 0; d--) {
    base += (q % p.bshape[d]) * p.bstr[d];
    q /= p.bshape[d];
  }
  const TIN *in = p.in + base;
  // this thread's row segment: row y, voxels xs .. xs + nin - 1 of the image
  const ndf_i64 y = y0 + lane, xs = x0 + 16 * seg;
  const int nin = y < p.ny ? (int)max((ndf_i64)0, min((ndf_i64)16, p.nx - xs)) : 0;
  const TIN *rowp = in + (nin > 0 ? y * p.sy + xs * p.sx : 0);
  // 16 bytes at a time: unit stride, a whole segment, aligned rows and planes
  const bool vec = nin == 16 && p.sx == 1 && (((size_t)rowp) & 15) == 0 && ((p.sz * (ndf_i64)sizeof(TIN)) & 15) == 0;
  auto load = [&](ndf_i64 z, V (&v)[16], V fill) {
    const TIN *r = rowp + z * p.sz;
    if (vec) {
      union {
        uint4 u[sizeof(TIN)];
        TIN t[16];
      } b;
#pragma unroll
      for (int i = 0; i < (int)sizeof(TIN); i++) b.u[i] = ((const uint4 *)r)[i];
#pragma unroll
      for (int j = 0; j < 16; j++) v[j] = (V)b.t[j];
    } else {
#pragma unroll
      for (int j = 0; j < 16; j++) v[j] = j < nin ? (V)r[j * p.sx] : fill;
    }
  };

  // ---- phase 1: min, max and NaN of this block's own voxels, read in 16-byte chunks that
  // consecutive threads take along the tile's rows (coalesced; the march's lanes are rows):
  // chunk q = tid + 256 m (m < sizeof(TIN)) of a plane is row q / CPR of the tile, voxels
  // x0 + (q % CPR) VPC .. + VPC - 1
  {
    constexpr int VPC = 16 / (int)sizeof(TIN), CPR = 128 / VPC, NCH = (int)sizeof(TIN);
    V lo = (V)(1.0 / 0.0), hi = (V)(-1.0 / 0.0);
    bool nan = false;
    const TIN *cp[NCH];
    int cn[NCH];
    bool cvec[NCH];
    auto cyx = [&](int m, ndf_i64 &cy, ndf_i64 &cx) {
      const int q = tid + 256 * m;
      cy = y0 + q / CPR;
      cx = x0 + (ndf_i64)(q % CPR) * VPC;
    };
#pragma unroll
    for (int m = 0; m < NCH; m++) {
      ndf_i64 cy, cx;
      cyx(m, cy, cx);
      cn[m] = cy < p.ny ? (int)max((ndf_i64)0, min((ndf_i64)VPC, p.nx - cx)) : 0;
      cp[m] = in + (cn[m] > 0 ? cy * p.sy + cx * p.sx : 0);
      cvec[m] = cn[m] == VPC && p.sx == 1 && (((size_t)cp[m]) & 15) == 0 &&
                ((p.sz * (ndf_i64)sizeof(TIN)) & 15) == 0;
    }
    auto chunk = [&](int m, ndf_i64 z, V (&v)[VPC]) {
      const TIN *r = cp[m] + z * p.sz;
      if (cvec[m]) {
        union {
          uint4 u;
          TIN t[VPC];
        } b;
        b.u = *(const uint4 *)r;
#pragma unroll
        for (int j = 0; j < VPC; j++) v[j] = (V)b.t[j];
      } else {
#pragma unroll
        for (int j = 0; j < VPC; j++) v[j] = j < cn[m] ? (V)r[j * p.sx] : (V)0;
      }
    };
    for (ndf_i64 z = z0; z < z1; z += 2) {
      // two planes' chunks in flight before any is used
      V v[2][NCH][VPC];
      const bool two = z + 1 < z1;
#pragma unroll
      for (int m = 0; m < NCH; m++) {
        chunk(m, z, v[0][m]);
        if (two) chunk(m, z + 1, v[1][m]);
      }
#pragma unroll
      for (int h = 0; h < 2; h++)
#pragma unroll
        for (int m = 0; m < NCH; m++)
#pragma unroll
          for (int j = 0; j < VPC; j++)
            if (j < cn[m] && (h == 0 || two)) {
              nan |= v[h][m][j] != v[h][m][j];
              lo = fmin(lo, v[h][m][j]); // a NaN operand gives the other
              hi = fmax(hi, v[h][m][j]);
            }
    }
    ndf_ecc_fused_partial<V>(p.part, lo, hi, nan, [&](unsigned long long *key) {
      // the least C-order index of a NaN among this thread's voxels: planes, then its chunks
      // (rows in increasing order), then x
      bool found = false;
      for (ndf_i64 z = z0; z < z1 && !found; z++)
        for (int m = 0; m < NCH && !found; m++)
          for (int j = 0; j < cn[m]; j++) {
            const V f = (V)cp[m][z * p.sz + j * p.sx];
            if (f != f) {
              ndf_i64 cy, cx;
              cyx(m, cy, cx);
              atomicMax(key, ~(ndf_u64)(img * (p.nz * p.ny * p.nx) + (z * p.ny + cy) * p.nx + cx + j));
              found = true;
              break;
            }
          }
    });
    // zero the histogram and the per-image tickets (used after the barrier)
    const ndf_i64 nh = p.nimg * p.T, stride = (ndf_i64)gridDim.x * 256;
    for (ndf_i64 i = (ndf_i64)blockIdx.x * 256 + tid; i < nh; i += stride) p.hist[i] = 0ull;
    for (ndf_i64 i = (ndf_i64)blockIdx.x * 256 + tid; i < p.nimg; i += stride) p.cnt[i] = 0u;
  }
  ndf_ecc_grid_sync(p.gbar);
  // ---- phase 2: the thresholds (every block the same); NaN / inf: nothing is written
  if (!ndf_ecc_fused_thresholds(p.part, p.hdr, T, dyn, sizeof(V) == 4 ? tsf : (float *)0, &s_lo, &s_inv, &s_uni, &s_m))
    return;
  for (int k = tid; k < 256; k += 256) shist[k] = 0;
  __syncthreads(); // tsf, s_lo, s_inv, s_uni
  if (sizeof(V) == 4)
    for (int k = tid; k <= T; k += 256) tpair[k] = make_float2(tsf[k], tsf[k + 1]);
  if (tid == 0) {
    s_ga = s_inv;
    s_gb = -s_lo * s_inv;
  }
  __syncthreads(); // tpair, s_ga, s_gb
  // the binner's constants are read from shared memory where they are used (volatile: not
  // kept in registers over the march, where registers are short)
  // the exact bin, out of line (misses of the first guess, thresholds not evenly spaced, float64)
  auto slow = [&](V f) -> unsigned {
    return ndf_rows_bin_slow<V>(f, tv, T, *(volatile int *)&s_uni, *(volatile float *)&s_lo,
                                *(volatile float *)&s_inv);
  };
  // the first guess of bin(f) for float comparisons with evenly spaced thresholds (ndf_rows_bin
  // without its branches): *ok when tpair brackets f, else the caller takes ndf_rows_bin
  auto guess = [&](V f, float ga, float gb, bool &ok) -> unsigned {
    const float ff = (float)f;
    const unsigned k = min((unsigned)__float2int_ru(fmaf(ff, ga, gb)), (unsigned)T);
    const float2 w = tpair[k];
    ok = (ff > w.x) & (ff <= w.y);
    return k;
  };

  // ---- the march
  // halo items of this thread: tid (the rows y0 - 1, y0 + 32: 2 x 128 voxels) and, for tid <
  // 68, tid + 256 (the columns x0 - 1, x0 + 128 over the 34 rows): where in the plane buffer
  // (a 16-bit half) and in the image
  int hidx[2], hidx2[2]; // the half, and the edge word's half (segment ends of the halo rows; else -1)
  const TIN *hp[2];
  bool hok[2];
#pragma unroll
  for (int e = 0; e < 2; e++) {
    const int i = tid + 256 * e;
    int r, h, h2 = -1;
    ndf_i64 xx;
    if (i < 256) {
      const int xo = i & 127, j = xo & 15;
      r = i < 128 ? 0 : NDF_RR - 1;
      xx = x0 + xo;
      h = 2 * ndf_rows_at(xo >> 4, r, j & 7) + (j >> 3);
      h2 = j == 0 ? 2 * NDF_REDGE((xo >> 4) + 1, r) : j == 15 ? 2 * NDF_REDGE((xo >> 4) + 1, r) + 1 : -1;
    } else {
      const int k = min(i - 256, 2 * NDF_RR - 1), side = k >= NDF_RR;
      r = k - side * NDF_RR;
      xx = side ? x0 + 128 : x0 - 1;
      h = side ? 2 * NDF_REDGE(NDF_RS + 1, r) : 2 * NDF_REDGE(0, r) + 1;
    }
    const ndf_i64 yy = y0 - 1 + r;
    hidx[e] = h;
    hidx2[e] = h2;
    hok[e] = (e == 0 || i < 256 + 2 * NDF_RR) && yy >= 0 && yy < p.ny && xx >= 0 && xx < p.nx;
    hp[e] = in + (hok[e] ? yy * p.sy + xx * p.sx : 0);
  }
  // the plane zz's values (own segment and halo items): into registers (PF: a step ahead)
  V nv[16], nh[2];
  auto fetch = [&](ndf_i64 zz) {
    if (zz < 0 || zz >= p.nz) return; // block-uniform
    // the value of voxels outside the image: t_0 (its bin is 0, the first guess finds it)
    const V fill = *(volatile const V *)tv;
    if (nin > 0) load(zz, nv, fill);
    else
#pragma unroll
      for (int j = 0; j < 16; j++) nv[j] = fill;
#pragma unroll
    for (int e = 0; e < 2; e++) nh[e] = hok[e] ? (V)hp[e][zz * p.sz] : fill;
  };
  // PF bit 2: plane zz's own segment (vector lanes) by cp.async into stg, the halo voxels into
  // registers, before the step; land: the segment's values (from stg or, other lanes, memory)
  // after it
  auto issue = [&](ndf_i64 zz) {
    if (zz < 0 || zz >= p.nz) return; // block-uniform
    const V fill = *(volatile const V *)tv;
    if (vec) {
      const uint4 *r = (const uint4 *)(rowp + zz * p.sz);
#pragma unroll
      for (int i = 0; i < (int)sizeof(TIN); i++) ndf_rows_cp16(&stg[256 * i + tid], r + i);
      ndf_rows_cp_commit();
    }
#pragma unroll
    for (int e = 0; e < 2; e++) nh[e] = hok[e] ? (V)hp[e][zz * p.sz] : fill;
  };
  auto land = [&](ndf_i64 zz) {
    if (zz < 0 || zz >= p.nz) return; // block-uniform
    const V fill = *(volatile const V *)tv;
    if (vec) {
      ndf_rows_cp_wait(); // this thread's own copies: no barrier
      union {
        uint4 u[sizeof(TIN)];
        TIN t[16];
      } b;
#pragma unroll
      for (int i = 0; i < (int)sizeof(TIN); i++) b.u[i] = stg[256 * i + tid];
#pragma unroll
      for (int j = 0; j < 16; j++) nv[j] = (V)b.t[j];
    } else if (nin > 0)
      load(zz, nv, fill);
    else
#pragma unroll
      for (int j = 0; j < 16; j++) nv[j] = fill;
  };
  // bins of plane zz into buffer B.  Every word a step reads is written, voxels outside the
  // image (or a plane outside it) as bin 0: a half above 255 would borrow from the other
  // half in the guarded compares (their flags are masked anyway)
  const unsigned cx = CONS == 1 ? 0x00ff00ffu : 0u; // T: 255 - bin
  auto store = [&](int B, ndf_i64 zz) {
    const bool zok = zz >= 0 && zz < p.nz; // block-uniform
    unsigned *pb = rpl + B * NDF_RPL;
    unsigned w[8], hb[2] = {0u, 0u};
    if (zok) {
      // every voxel binned (outside the segment: the value 0, any bin; 8 bits kept)
      const float ga = *(volatile float *)&s_ga, gb = *(volatile float *)&s_gb;
      if (sizeof(V) == 4 && *(volatile int *)&s_uni) {
        // every guess checked without a branch, the rare misses (a value on a threshold,
        // rounding of the guess) one by one
        unsigned miss = 0u;
#pragma unroll
        for (int j = 0; j < 8; j++) {
          bool o0, o1;
          const unsigned k0 = guess(nv[j], ga, gb, o0), k1 = guess(nv[j + 8], ga, gb, o1);
          w[j] = k0 | (k1 << 16);
          miss |= (o0 ? 0u : 1u << j) | (o1 ? 0u : 0x100u << j);
        }
#pragma unroll
        for (int e = 0; e < 2; e++) {
          bool o;
          hb[e] = guess(nh[e], ga, gb, o);
          miss |= o ? 0u : 0x10000u << e;
        }
        // voxels outside the image (the value t_0; any bin will do) are never re-read
        miss &= (nin >= 16 ? 0xffffu : (1u << nin) - 1u) | (hok[0] ? 0x10000u : 0u) | (hok[1] ? 0x20000u : 0u);
        if (miss) {
          // the values again from memory (rare: nothing stays live for it)
          const TIN *r = rowp + zz * p.sz;
#pragma unroll
          for (int j = 0; j < 16; j++)
            if ((miss >> j) & 1u) {
              const unsigned b = slow((V)r[j * p.sx]) << (16 * (j >> 3));
              w[j & 7] = (w[j & 7] & (j >> 3 ? 0xffffu : 0xffff0000u)) | b;
            }
#pragma unroll
          for (int e = 0; e < 2; e++)
            if ((miss >> (16 + e)) & 1u) hb[e] = slow((V)hp[e][zz * p.sz]);
        }
      } else {
#pragma unroll
        for (int j = 0; j < 8; j++) w[j] = slow(nv[j]) | (slow(nv[j + 8]) << 16);
#pragma unroll
        for (int e = 0; e < 2; e++) hb[e] = slow(nh[e]);
      }
#pragma unroll
      for (int j = 0; j < 8; j++) w[j] = (w[j] ^ cx) & 0x00ff00ffu;
    } else {
#pragma unroll
      for (int j = 0; j < 8; j++) w[j] = 0u;
    }
    const int r = lane + 1, o = seg * NDF_RSLOT + r * 8;
    *(uint4 *)(pb + o + (r & 4)) = make_uint4(w[0], w[1], w[2], w[3]);
    *(uint4 *)(pb + o + ((r & 4) ^ 4)) = make_uint4(w[4], w[5], w[6], w[7]);
    pb[NDF_REDGE(seg + 1, r)] = __byte_perm(w[0], w[7], 0x7610); // (voxel 0, voxel 15)
#pragma unroll
    for (int e = 0; e < 2; e++)
      if (e == 0 || tid < 2 * NDF_RR) {
        const unsigned short v = (unsigned short)(zok ? (hb[e] ^ cx) & 0xffu : 0u);
        ((unsigned short *)pb)[hidx[e]] = v;
        if (hidx2[e] >= 0) ((unsigned short *)pb)[hidx2[e]] = v;
      }
  };
  // this lane's rows in the plane buffers (dy = 0, 1, 2: y - 1, y, y + 1)
  int ro[3];
#pragma unroll
  for (int dy = 0; dy < 3; dy++) {
    const int r = lane + dy;
    ro[dy] = seg * NDF_RSLOT + r * 8 + (r & 4);
  }
  // borders: inside masks for the voxels x + dx (bits 8 + j, 24 + j), and whether the warp
  // has a lane whose neighbourhood leaves the image (then every step is masked)
  unsigned xin[3] = {0u, 0u, 0u};
  for (int j = 0; j < 16; j++)
#pragma unroll
    for (int dx = 0; dx < 3; dx++) {
      const ndf_i64 xx = xs + j + dx - 1;
      if (xx >= 0 && xx < p.nx) xin[dx] |= 1u << (j < 8 ? 8 + j : 16 + j);
    }
  const bool lb = y == 0 || y + 1 >= p.ny || xs == 0 || xs + 16 >= p.nx;
  const bool wb = __any_sync(0xffffffffu, lb);

  // c of the segment's 16 voxels of plane z (buffers K, K + 1, K + 2: planes z - 1, z, z + 1)
  // into the block's histogram.  MASK: the inside masks (a border in the warp, or the first /
  // last plane of the image).  Terms as they appear (the centre plane, then z - 1, z + 1) go
  // straight into the carry-save adders (fewer live words).
  auto counts = [&](auto mk, int K, ndf_i64 z) {
    constexpr bool MASK = decltype(mk)::value;
    const unsigned *pl0 = rpl + (K & 3) * NDF_RPL, *pl1 = rpl + ((K + 1) & 3) * NDF_RPL,
                   *pl2 = rpl + ((K + 2) & 3) * NDF_RPL;
    const int rl = NDF_REDGE(seg, lane); // + dy: the edge word left of row y - 1 + dy
    unsigned cw[8], a[8];
    ndf_rows_load(pl1, ro[1], cw);
#pragma unroll
    for (int j = 0; j < 8; j++) a[j] = cw[j] | ((0x100u << j) * 0x10001u);
    bool yin[3] = {true, true, true}, zin[3] = {true, true, true};
    if (MASK) {
      yin[0] = y >= 1 && y - 1 < p.ny;
      yin[1] = y < p.ny;
      yin[2] = y + 1 < p.ny;
      zin[0] = z >= 1;
      zin[2] = z + 1 < p.nz;
    }
    // V: a flag with a voxel outside is false, T: true
    auto mask = [&](int dz, int dy, unsigned (&f)[3]) {
      if (MASK)
#pragma unroll
        for (int dx = 0; dx < 3; dx++) {
          const unsigned m = zin[dz] && yin[dy] ? xin[dx] : 0u;
          f[dx] = CONS == 0 ? f[dx] & m : f[dx] | ~m;
        }
    };
    // V: c = E' + S + C' - 13, T: c = E + S' + C - 13 (primes: the complements)
    const unsigned ne = CONS == 0 ? ~0u : 0u, ns = CONS == 0 ? 0u : ~0u;
    ndf_rows_acc acc;
    // the centre plane: the y and x edges, the xy squares
    unsigned ey[2], ex[2], sxy[2][2];
    {
      unsigned c0[3], c1[3], c2[3], n[8];
      ndf_rows_load(pl1, ro[0], n);
      ndf_rows_row<CONS, 1, 0>(pl1, n, rl, a, c0);
      mask(1, 0, c0);
      ndf_rows_row<CONS, 1, 1>(pl1, cw, rl + 1, a, c1);
      mask(1, 1, c1);
      ndf_rows_load(pl1, ro[2], n);
      ndf_rows_row<CONS, 1, 2>(pl1, n, rl + 2, a, c2);
      mask(1, 2, c2);
      ey[0] = c0[1], ey[1] = c2[1], ex[0] = c1[0], ex[1] = c1[2];
#pragma unroll
      for (int b = 0; b < 2; b++) {
        sxy[0][b] = ey[0] & ex[b] & c0[2 * b];
        sxy[1][b] = ey[1] & ex[b] & c2[2 * b];
      }
      const unsigned x[8] = {ey[0] ^ ne,     ey[1] ^ ne,     ex[0] ^ ne,     ex[1] ^ ne,
                             sxy[0][0] ^ ns, sxy[0][1] ^ ns, sxy[1][0] ^ ns, sxy[1][1] ^ ns};
      acc = ndf_rows_acc_centre(x);
    }
    // planes z - 1 (dz 0) and z + 1 (dz 2): the z edge, the xz / yz squares, the cubes
    unsigned o[4];
#pragma unroll
    for (int side = 0; side < 2; side++) {
      const unsigned *P = side ? pl2 : pl0;
      const int dz = 2 * side;
      unsigned g0[3], g1[3], g2[3], n[8];
      ndf_rows_load(P, ro[0], n);
      if (side) ndf_rows_row<CONS, 2, 0>(P, n, rl, a, g0);
      else ndf_rows_row<CONS, 0, 0>(P, n, rl, a, g0);
      ndf_rows_load(P, ro[1], n);
      if (side) ndf_rows_row<CONS, 2, 1>(P, n, rl + 1, a, g1);
      else ndf_rows_row<CONS, 0, 1>(P, n, rl + 1, a, g1);
      ndf_rows_load(P, ro[2], n);
      if (side) ndf_rows_row<CONS, 2, 2>(P, n, rl + 2, a, g2);
      else ndf_rows_row<CONS, 0, 2>(P, n, rl + 2, a, g2);
      mask(dz, 0, g0);
      mask(dz, 1, g1);
      mask(dz, 2, g2);
      const unsigned ez = g1[1];
      const unsigned sxz[2] = {ez & ex[0] & g1[0], ez & ex[1] & g1[2]};
      const unsigned syz[2] = {ez & ey[0] & g0[1], ez & ey[1] & g2[1]};
      unsigned t[9];
      t[0] = ez ^ ne;
      t[1] = sxz[0] ^ ns, t[2] = sxz[1] ^ ns, t[3] = syz[0] ^ ns, t[4] = syz[1] ^ ns;
#pragma unroll
      for (int b = 0; b < 2; b++)
#pragma unroll
        for (int c = 0; c < 2; c++) {
          const unsigned *gb = b ? g2 : g0;
          t[5 + 2 * b + c] = (sxy[b][c] & sxz[c] & gb[1] & gb[2 * c]) ^ ne;
        }
      if (side == 0) ndf_rows_acc_first(acc, t);
      else ndf_rows_acc_last(acc, t, o);
    }
    if (MASK) {
      const unsigned own = yin[1] ? xin[1] : 0u; // voxels outside the image: c = 0
#pragma unroll
      for (int b = 0; b < 4; b++) o[b] &= own;
    }
    unsigned lo, hi;
    ndf_rows_nibbles(o, lo, hi);
#pragma unroll
    for (int j = 0; j < 8; j++)
#pragma unroll
      for (int h = 0; h < 2; h++) {
        const int c = ((int)((h ? hi : lo) << (28 - 4 * j))) >> 28;
        const unsigned off = h ? (a[j] >> 14) & 0x3fcu : (a[j] << 2) & 0x3fcu; // 4 x the stored bin
        if (RED_ALL) atomicAdd((int *)((char *)shist + off), c);
        else ndf_rows_red(shist, off, c);
      }
  };
  auto step = [&](int K, ndf_i64 z) {
    if (NDF_ROWS_STG) {
      if (z + 1 < z1) issue(z + 2);
    } else if (PF && z + 1 < z1)
      fetch(z + 2);
    if (wb || z == 0 || z + 1 >= p.nz) counts(ndf_rows_bool<true>(), K, z);
    else counts(ndf_rows_bool<false>(), K, z);
    if (z + 1 < z1) {
      if (NDF_ROWS_STG) land(z + 2);
      else if (!PF) fetch(z + 2);
      store((K + 3) & 3, z + 2); // the buffer of plane z - 2, last read before the last barrier
    }
    __syncthreads();
  };
  // planes z0 - 1, z0, z0 + 1 -> buffers 0, 1, 2
  fetch(z0 - 1);
  store(0, z0 - 1);
  fetch(z0);
  store(1, z0);
  fetch(z0 + 1);
  store(2, z0 + 1);
  __syncthreads();
  // one copy of the step (the buffers' offsets at run time: a smaller loop for the
  // instruction cache than an unrolled ring)
#pragma unroll 1
  for (ndf_i64 z = z0; z < z1; z++) step((int)(z - z0) & 3, z);
  for (int k = tid; k < T; k += 256) {
    const int v = shist[CONS == 1 ? 255 - k : k];
    if (v) atomicAdd(&p.hist[img * p.T + k], (ndf_u64)(long long)v);
  }
  // the image's last block writes its curve
  __threadfence();
  __syncthreads();
  if (tid == 0) s_last = atomicAdd(&p.cnt[img], 1u) == (unsigned)(p.ptiles * p.nchunks) - 1u;
  __syncthreads();
  if (s_last) {
    __threadfence();
    ndf_i64 off = 0, q2 = img;
    for (int d = p.nb - 1; d >= 0; d--) {
      off += (q2 % p.oshape[d]) * p.ostr[d];
      q2 /= p.oshape[d];
    }
    ndf_ecc_prefix_m((const long long *)p.hist + img * p.T, s_m, p.out + off, p.T, p.ostep);
  }
}
