// binary_flood.cu -- the limit of an iterated masked binary dilation by the
// cross (CONN 6: face neighbours) or the full box (CONN 26) of rank 2 or 3,
// as a tile-local flood fill on packed words (binary_fill_holes and
// binary_propagation with their usual structures; ADR 0006, "flood").
//
//   R <- R | (dilate(R) & mask), to the least fixed point above the seed,
//   with neighbours outside the image reading `border` (0 or ~0).
//
// The packed image (binary_common.cuh) is seen as nimg x nz x ny rows of nw
// words.  A block owns a tile of K words (32 K voxels) along x, 32 rows
// along y (the lanes) and tz planes along z (the warps) and updates it in
// place, in shared memory, until nothing changes inside it; the tile's
// neighbours (one word along x, one row along y, one plane along z, with
// their corners for CONN 26) are read once per launch from the global state.
// One iteration: the dilation step (Jacobi, all neighbours), then exact run
// fills along x (carry arithmetic over the thread's K words) and along y
// and z (segmented OR scans by warp shuffles: lanes = y, then lanes = z).
// Every write is the step applied to a state below the limit, so the
// result never overshoots, whatever the order.
//
// Launch t (t >= 1) sets status[t % 3] when it changed a word some other
// tile reads (a face of the tile; for x only bit 0 of the first word and bit
// 31 of the last).  Launch t + 1 reads that flag first: when it is clear,
// every tile had read final neighbours and reached its own fixed point, so
// the state is the limit; it records status[6] = 1 (status[7] = t) and all
// later launches return at once.  The host queues launches in batches and
// reads the status between batches.
//
// ysp / zsp = 0: that axis is not spatial (2-D: z folds the batch; the
// neighbours along it are absent, not border).  x is always spatial.
#include "binary_common.cuh"

#define CONN NDF_SLOT(CONN) /* 6 or 26 */
#define K NDF_SLOT(K)       /* words per thread along x */

NDF_PARAMS(ndf_flood_params)

#define NDF_FULL 0xffffffffu

// A word as its neighbours see it: outside the image along x -> border,
// along y or z -> border when that axis is spatial (else 0); the last word
// of a row has its tail bits at border.
__device__ __forceinline__ unsigned ndf_fl_ext(const ndf_flood_params &p, ndf_i64 img, ndf_i64 z, ndf_i64 y,
                                               ndf_i64 j) {
  if (y < 0 || y >= p.ny) return p.ysp ? p.border : 0u;
  if (z < 0 || z >= p.nz) return p.zsp ? p.border : 0u;
  if (j < 0 || j >= p.nw) return p.border;
  const volatile unsigned *r = p.r;
  unsigned w = r[((img * p.nz + z) * p.ny + y) * p.nw + j];
  if (j == p.nw - 1) w |= p.border & ~p.tail;
  return w;
}

// Dilation along x of word c with its neighbours l (x - 32) and h (x + 32).
__device__ __forceinline__ unsigned ndf_fl_dilx(unsigned l, unsigned c, unsigned h) {
  return c | (c << 1) | (l >> 31) | (c >> 1) | (h << 31);
}

// The K words of row (z, y) from word j0, dilated along x (CONN 26) or not.
__device__ __forceinline__ void ndf_fl_row(const ndf_flood_params &p, ndf_i64 img, ndf_i64 z, ndf_i64 y, ndf_i64 j0,
                                           unsigned *o) {
#if CONN == 26
  unsigned w[K + 2];
#pragma unroll
  for (int k = 0; k < K + 2; k++) w[k] = ndf_fl_ext(p, img, z, y, j0 - 1 + k);
#pragma unroll
  for (int k = 0; k < K; k++) o[k] = ndf_fl_dilx(w[k], w[k + 1], w[k + 2]);
#else
#pragma unroll
  for (int k = 0; k < K; k++) o[k] = ndf_fl_ext(p, img, z, y, j0 + k);
#endif
}

// Segmented OR scan over the lanes of a warp, both directions: a[lane] ends
// as the set reachable inside runs of b (per bit) from a.  Lanes with b = 0
// stop the runs.
__device__ __forceinline__ unsigned ndf_fl_scan(unsigned a, unsigned b, int lane) {
  unsigned a0 = a, bb = b;
#pragma unroll
  for (int s = 1; s < 32; s <<= 1) {
    const unsigned ua = __shfl_up_sync(NDF_FULL, a0, s), ub = __shfl_up_sync(NDF_FULL, bb, s);
    if (lane >= s) {
      a0 |= bb & ua;
      bb &= ub;
    }
  }
  bb = b;
#pragma unroll
  for (int s = 1; s < 32; s <<= 1) {
    const unsigned ua = __shfl_down_sync(NDF_FULL, a0, s), ub = __shfl_down_sync(NDF_FULL, bb, s);
    if (lane + s < 32) {
      a0 |= bb & ua;
      bb &= ub;
    }
  }
  return a0;
}

// Exact fill of runs of m along x over K consecutive words (both directions):
// a run holding a bit of s & m is filled.  Bits of s outside m stay as they are.
__device__ __forceinline__ void ndf_fl_fillx(unsigned *s, const unsigned *m) {
  unsigned c = 0;
#pragma unroll
  for (int k = 0; k < K; k++) { // upwards: a seed at the lowest bit of a run carries to its top
    const unsigned q = (s[k] & m[k]) | (c & m[k] & 1u);
    const unsigned u = q | (m[k] & ~(m[k] + q));
    s[k] |= u;
    c = u >> 31;
  }
  c = 0;
#pragma unroll
  for (int k = K - 1; k >= 0; k--) { // downwards, on the reversed bits
    const unsigned mr = __brev(m[k]);
    const unsigned q = (__brev(s[k]) & mr) | (c & mr & 1u);
    const unsigned u = q | (mr & ~(mr + q));
    s[k] |= __brev(u);
    c = u >> 31;
  }
}

extern "C" __global__ void __launch_bounds__(1024) ndf_bin_flood(const ndf_flood_params p) {
  __shared__ unsigned S[32][32][K];      // own state [z][y][k]
  __shared__ unsigned MS[32][32][K];     // own mask
  __shared__ unsigned E[34][32][K];      // exported neighbour values, planes z0 - 1 .. z0 + tz
  __shared__ int stop_s;
  if (threadIdx.x == 0) {
    volatile int *st = p.status;
    int stop = st[6] != 0;
    if (!stop && p.t >= 2 && st[(p.t - 1) % 3] == 0) {
      st[6] = 1;
      st[7] = p.t - 1;
      stop = 1;
    }
    if (!stop && blockIdx.x == 0) st[(p.t + 1) % 3] = 0;
    stop_s = stop;
  }
  __syncthreads();
  if (stop_s) return;

  const int lane = threadIdx.x & 31, wp = threadIdx.x >> 5, tz = p.tz;
  ndf_i64 b = blockIdx.x;
  const ndf_i64 tx = b % p.ntx;
  b /= p.ntx;
  const ndf_i64 ty = b % p.nty;
  b /= p.nty;
  const ndf_i64 tzi = b % p.ntz;
  const ndf_i64 img = b / p.ntz;
  const ndf_i64 j0 = tx * K, y0 = ty * 32, z0 = tzi * tz;
  const ndf_i64 y = y0 + lane, z = z0 + wp;
  const bool iny = y < p.ny, inz = z < p.nz;
  // The outside value of a whole row of this thread (y or z outside).
  const unsigned outv = !iny ? (p.ysp ? p.border : 0u) : !inz ? (p.zsp ? p.border : 0u) : 0u;

  unsigned r0[K], m[K], vb[K]; // initial state, mask, valid bits (0 outside the image)
#pragma unroll
  for (int k = 0; k < K; k++) {
    const ndf_i64 j = j0 + k;
    const bool in = iny && inz && j < p.nw;
    const ndf_i64 a = ((img * p.nz + z) * p.ny + y) * p.nw + j;
    vb[k] = !in ? 0u : j == p.nw - 1 ? p.tail : NDF_FULL;
    r0[k] = in ? ((const volatile unsigned *)p.r)[a] : 0u;
    m[k] = in ? (p.mask ? __ldg(p.mask + a) : vb[k]) : 0u;
    S[wp][lane][k] = r0[k];
    MS[wp][lane][k] = m[k];
  }
  // Neighbours fixed for this launch: the words left and right of the row,
  // the rows below/above the tile (lanes 0 and 31), the planes before/after
  // it (warps 0 and tz - 1).
  unsigned xl = 0, xh = 0, yo[K], zo[K];
  if (iny && inz) {
    xl = ndf_fl_ext(p, img, z, y, j0 - 1);
    xh = ndf_fl_ext(p, img, z, y, j0 + K);
  }
#pragma unroll
  for (int k = 0; k < K; k++) yo[k] = 0;
  if (p.ysp && (lane == 0 || lane == 31) && inz) ndf_fl_row(p, img, z, lane == 0 ? y0 - 1 : y0 + 32, j0, yo);
  if (p.zsp && (wp == 0 || wp == tz - 1)) {
    // Plane zz's export at row y: 6: the word; 26: dilated along x and y.
    for (int side = 0; side < 2; side++) {
      if (side == 0 ? wp != 0 : wp != tz - 1) continue;
      const ndf_i64 zz = side == 0 ? z0 - 1 : z0 + tz;
      ndf_fl_row(p, img, zz, y, j0, zo);
#if CONN == 26
      if (p.ysp) {
        unsigned t[K];
        ndf_fl_row(p, img, zz, y - 1, j0, t);
#pragma unroll
        for (int k = 0; k < K; k++) zo[k] |= t[k];
        ndf_fl_row(p, img, zz, y + 1, j0, t);
#pragma unroll
        for (int k = 0; k < K; k++) zo[k] |= t[k];
      }
#endif
#pragma unroll
      for (int k = 0; k < K; k++) E[side == 0 ? 0 : tz + 1][lane][k] = zo[k];
    }
  }
  if (!p.zsp && (wp == 0 || wp == tz - 1)) {
#pragma unroll
    for (int k = 0; k < K; k++) {
      if (wp == 0) E[0][lane][k] = 0;
      if (wp == tz - 1) E[tz + 1][lane][k] = 0;
    }
  }
  __syncthreads();

  bool any = true;
  while (any) {
    // 1. Export: this row's words as the neighbouring planes see them.
    unsigned c[K], d[K];
#pragma unroll
    for (int k = 0; k < K; k++) c[k] = (iny && inz) ? (S[wp][lane][k] | (p.border & ~vb[k] & (j0 + k < p.nw ? NDF_FULL : 0u)))
                                                      : outv;
#pragma unroll
    for (int k = 0; k < K; k++) { // words outside the row along x
      if (iny && inz && j0 + k >= p.nw) c[k] = p.border;
    }
    // own row along x (with the fixed neighbours xl, xh)
#pragma unroll
    for (int k = 0; k < K; k++) d[k] = ndf_fl_dilx(k == 0 ? (iny && inz ? xl : outv) : c[k - 1], c[k],
                                                   k == K - 1 ? (iny && inz ? xh : outv) : c[k + 1]);
    unsigned ex[K];
#pragma unroll
    for (int k = 0; k < K; k++) {
#if CONN == 26
      const unsigned own = d[k]; // dilated along x
#else
      const unsigned own = c[k];
#endif
      unsigned lo = __shfl_up_sync(NDF_FULL, own, 1), hi = __shfl_down_sync(NDF_FULL, own, 1);
      if (lane == 0) lo = yo[k];
      if (lane == 31) hi = yo[k];
      if (!p.ysp) lo = hi = 0;
#if CONN == 26
      ex[k] = own | lo | hi; // dilated along x and y
      d[k] = ex[k];
#else
      ex[k] = own;
      d[k] |= lo | hi;
#endif
      E[wp + 1][lane][k] = ex[k];
    }
    __syncthreads();
    // 2. The step with the planes z +- 1, then runs along x and y.
    // (Outside the image s stays 0: S and m are 0 there; every lane runs the shuffles.)
    bool ch = false;
    unsigned s[K];
#pragma unroll
    for (int k = 0; k < K; k++) {
      if (p.zsp) d[k] |= E[wp][lane][k] | E[wp + 2][lane][k];
      s[k] = S[wp][lane][k] | (d[k] & m[k]);
    }
    ndf_fl_fillx(s, m);
    if (p.ysp) {
#pragma unroll
      for (int k = 0; k < K; k++) s[k] = ndf_fl_scan(s[k], m[k], lane);
      ndf_fl_fillx(s, m);
    }
#pragma unroll
    for (int k = 0; k < K; k++) {
      ch |= s[k] != S[wp][lane][k];
      S[wp][lane][k] = s[k];
    }
    __syncthreads();
    // 3. Runs along z: lanes are planes, warps take rows.
    if (p.zsp) {
      for (int yy = wp; yy < 32; yy += tz) {
#pragma unroll
        for (int k = 0; k < K; k++) {
          const unsigned a = lane < tz ? S[lane][yy][k] : 0u, mm = lane < tz ? MS[lane][yy][k] : 0u;
          const unsigned s2 = ndf_fl_scan(a, mm, lane);
          if (lane < tz && s2 != a) {
            S[lane][yy][k] = s2;
            ch = true;
          }
        }
      }
    }
    any = __syncthreads_or(ch) != 0;
  }

  // Write back; flag a change that another tile reads.
  bool face = false;
  if (iny && inz) {
#pragma unroll
    for (int k = 0; k < K; k++) {
      const unsigned s = S[wp][lane][k], dlt = s ^ r0[k];
      if (dlt) {
        p.r[((img * p.nz + z) * p.ny + y) * p.nw + j0 + k] = s;
        face |= lane == 0 || lane == 31 || wp == 0 || wp == tz - 1 || (k == 0 && (dlt & 1u)) ||
                (k == K - 1 && (dlt & 0x80000000u));
      }
    }
  }
  if (__syncthreads_or(face) && threadIdx.x == 0) {
    __threadfence();
    ((volatile int *)p.status)[p.t % 3] = 1;
  }
}
