// label.cu -- scipy.ndimage.label on the GPU, by runs on packed words.
//
// The input is packed (binary_pack.cu, layout of binary_common.cuh: rows of
// nw words along the last axis).  A row is cut in pieces of at most 32 words
// (nseg per row); the units are the runs of foreground voxels of a piece
// along x when the structure links x-neighbours (linkx), else single voxels.
// A unit is named by the flat index of its first voxel, and parent[] (one
// int per voxel, touched only at unit starts) holds a union-find over them.
// A group of G lanes (a power of two, G >= nw or 32) owns one piece, one word
// per lane, and a max-scan over the group gives every voxel the start of its
// unit without leaving registers.  Pieces are numbered row * nseg + piece, in
// raster order.
//
//   0 init      parent[s] = s at every unit start
//   1 unite     a run cut by a piece boundary joins its two parts; for each
//               backward neighbour row (the structure's offsets before the
//               centre, x offsets t in {-1, 0, 1}) every overlap of a unit
//               with a unit of that row joins them, once per overlap segment
//               (with linkx the segment's first voxel stands for the rest);
//               the smaller index becomes the root
//   2 compress  parent[s] = root; cnt[piece] = roots in the piece
//   3 bsum      sums of cnt over blocks of E pieces
//   4 scan      one block: exclusive prefix of the block sums; base[nimg] = total
//   5 rowpre    cnt[piece] = roots before it; base[img] = roots before the image
//   6 rank      parent[root] = -(1 + roots before it), in raster order
//   7 write     out = label of the voxel's unit - base[image], 0 for background
// Every root is its component's least unit start, the first voxel in raster
// order: scipy's numbering.  Flat voxel indices and pieces fit an int (the
// host checks n < 2^31).
#include "binary_common.cuh"

typedef NDF_SLOT(O) O; /* output element type */
#define E 2048         /* pieces per block in bsum and rowpre: 256 threads x 8 */
#define NDF_FULL 0xffffffffu

NDF_PARAMS(ndf_label_params)

// ---- rows and units -----------------------------------------------------------------------
// Word j of row r, 0 outside the row (or for r < 0).
__device__ __forceinline__ unsigned ndf_word(const ndf_label_params &p, int r, int j) {
  return (r >= 0 && j >= 0 && j < p.nw) ? __ldg(p.bits + (ndf_i64)r * p.nw + j) : 0u;
}
// Unit starts in word w (wprev: the word before it in the row).
__device__ __forceinline__ unsigned ndf_starts(const ndf_label_params &p, unsigned w, unsigned wprev) {
  return p.linkx ? w & ~((w << 1) | (wprev >> 31)) : w;
}
// The highest set bit of s at or below bit b, as a row position (word j), or -1.
__device__ __forceinline__ int ndf_last_at(unsigned s, int b, int j) {
  const unsigned m = s & (b == 31 ? NDF_FULL : ((2u << b) - 1u));
  return m ? 32 * j + 31 - __clz(m) : -1;
}

// The group of lanes that owns a row: G lanes, lane k = lane % G.
struct ndf_grp {
  int G, k, lane;
};

// Inclusive max-scan over the group (every lane of the warp calls it).
__device__ __forceinline__ int ndf_gscan_max(const ndf_grp &g, int v) {
  for (int o = 1; o < g.G; o <<= 1) {
    const int y = __shfl_up_sync(NDF_FULL, v, o, g.G);
    if (g.k >= o) v = max(v, y);
  }
  return v;
}
// Inclusive sum-scan over the group.
__device__ __forceinline__ int ndf_gscan_sum(const ndf_grp &g, int v) {
  for (int o = 1; o < g.G; o <<= 1) {
    const int y = __shfl_up_sync(NDF_FULL, v, o, g.G);
    if (g.k >= o) v += y;
  }
  return v;
}

// The unit-start scan of word j of a piece (lane k of its group): starts s,
// and the last unit start in the piece before the word (excl) and up to its
// end (incl), -1 for none.
struct ndf_scan {
  unsigned w, s;
  int excl, incl;
};
__device__ __forceinline__ ndf_scan ndf_piece_scan(const ndf_label_params &p, const ndf_grp &g, int r, int j) {
  ndf_scan o;
  o.w = ndf_word(p, r, j);
  o.s = ndf_starts(p, o.w, g.k == 0 ? 0u : ndf_word(p, r, j - 1));
  const int last = o.s ? 32 * j + 31 - __clz(o.s) : -1;
  o.incl = ndf_gscan_max(g, last);
  const int prev = __shfl_up_sync(NDF_FULL, o.incl, 1, g.G);
  o.excl = g.k == 0 ? -1 : prev;
  return o;
}
// Start of the unit holding the set bit b of word j (sc: that word's scan).
__device__ __forceinline__ int ndf_unit_at(const ndf_scan &sc, int b, int j) {
  const int at = ndf_last_at(sc.s, b, j);
  return at >= 0 ? at : sc.excl;
}
// Start of the unit holding the set voxel y of row r, looking back from it
// word by word (at most to its piece's first word).
__device__ __forceinline__ int ndf_unit_back(const ndf_label_params &p, int r, int y) {
  int j = y >> 5;
  const int j0 = j & ~31;
  unsigned m = (y & 31) == 31 ? NDF_FULL : (2u << (y & 31)) - 1u;
  for (;; j--) {
    const unsigned s = ndf_starts(p, ndf_word(p, r, j), j == j0 ? 0u : ndf_word(p, r, j - 1)) & m;
    if (s || j <= j0) return s ? 32 * j + 31 - __clz(s) : 32 * j0;
    m = NDF_FULL;
  }
}

// Spatial coordinates of row r but the last axis (c[0..nsp-2]).
__device__ __forceinline__ void ndf_row_coords(const ndf_label_params &p, int r, int *c) {
  ndf_u64 q = (ndf_u64)r;
  for (int d = p.nsp - 2; d >= 0; d--) {
    ndf_u64 rem;
    q = ndf_udiv(q, (ndf_u64)p.sshape[d], &rem);
    c[d] = (int)rem;
  }
}

// Pieces of the warp: groups of G lanes, 32 / G pieces per warp (G = 32
// when a row has more than one piece).  Every lane of a warp runs the same
// iterations (the shuffles need the whole warp).  Per lane: piece index vr,
// its row (-1 past the end) and word j.
#define NDF_FOR_PIECES(...)                                                                       \
  {                                                                                               \
    ndf_grp g;                                                                                    \
    g.G = p.G;                                                                                    \
    g.lane = threadIdx.x & 31;                                                                    \
    g.k = g.lane & (g.G - 1);                                                                     \
    const int ppw = 32 / g.G;                                                                     \
    const int npieces = p.nrows * p.nseg;                                                         \
    const int nwarps = (npieces + ppw - 1) / ppw;                                                 \
    for (int wi = (int)((blockIdx.x * blockDim.x + threadIdx.x) >> 5); wi < nwarps;               \
         wi += (int)((gridDim.x * blockDim.x) >> 5)) {                                            \
      const int vr = wi * ppw + g.lane / g.G;                                                     \
      const bool rowok = vr < npieces;                                                            \
      const int row = rowok ? vr / p.nseg : -1;                                                   \
      const int seg = rowok ? vr - row * p.nseg : 0;                                              \
      const int j = seg * 32 + g.k;                                                               \
      __VA_ARGS__                                                                                 \
    }                                                                                             \
  }

// Unit starts of word j (lane k of a piece's group).
__device__ __forceinline__ unsigned ndf_piece_starts(const ndf_label_params &p, const ndf_grp &g, int row, int j) {
  return ndf_starts(p, ndf_word(p, row, j), g.k == 0 ? 0u : ndf_word(p, row, j - 1));
}

__device__ __forceinline__ void ndf_label_init(const ndf_label_params &p) {
  NDF_FOR_PIECES({
    for (unsigned u = ndf_piece_starts(p, g, row, j); u; u &= u - 1) {
      const int v = row * p.nx + 32 * j + __ffs(u) - 1;
      p.parent[v] = v;
    }
  })
}

__device__ __forceinline__ void ndf_label_unite(const ndf_label_params &p) {
  NDF_FOR_PIECES({
    // A run across the boundary with the piece before: its two parts.
    if (p.linkx && seg > 0 && g.k == 0 && (ndf_word(p, row, j) & 1u) && (ndf_word(p, row, j - 1) >> 31))
      ndf_uf_unite(p.parent, row * p.nx + 32 * j, row * p.nx + ndf_unit_back(p, row, 32 * j - 1));
    int c[NDF_MAX_SPATIAL];
    ndf_row_coords(p, rowok ? row : 0, c);
    const ndf_scan a = ndf_piece_scan(p, g, row, j);
    const bool last = g.k == g.G - 1 || j == p.nw - 1; // the piece's last word
    for (int e = 0; e < p.nbt; e++) {
      const int *ent = p.bt + e * 10; // {row offset, x-offset mask (bit t+1), d[0..nsp-2]}
      bool ok = rowok;
      for (int d = 0; d < p.nsp - 1; d++) {
        const int y = c[d] + __ldg(ent + 2 + d);
        ok = ok && y >= 0 && y < p.sshape[d];
      }
      const int tmask = __ldg(ent + 1);
      const int nr = ok ? row + __ldg(ent) : -1; // neighbour row, -1: none
      const ndf_scan b = ndf_piece_scan(p, g, nr, j);
      if (!ok || !a.w || (!b.w && !(tmask & 5))) continue; // no overlap possible
      const unsigned bm = ndf_word(p, nr, j - 1), bp = ndf_word(p, nr, j + 1);
      for (int t = -1; t <= 1; t++) {
        if (!((tmask >> (t + 1)) & 1)) continue;
        // sh: bit x set when voxel x + t of the neighbour row is set.
        const unsigned sh = t == 0 ? b.w : t > 0 ? (b.w >> 1) | (bp << 31) : (b.w << 1) | (bm >> 31);
        const unsigned m = a.w & sh;
        unsigned u = m;
        if (p.linkx) {
          // Bit 31 of the word before's overlap: voxel 32j - 1 and its neighbour 32j - 1 + t.
          const int y = 32 * j - 1 + t;
          const bool pb = j > 0 && (ndf_word(p, row, j - 1) >> 31) && y >= 0 && y < p.nx &&
                          ((ndf_word(p, nr, y >> 5) >> (y & 31)) & 1u);
          u = m & ~((m << 1) | (pb ? 1u : 0u));
        }
        for (; u; u &= u - 1) {
          const int bit = __ffs(u) - 1;
          const int x = 32 * j + bit, y = x + t;
          int sb;
          if (y < 32 * j) { // bit 0, t = -1: the word before (maybe in the piece before)
            sb = g.k == 0 ? ndf_unit_back(p, nr, y) : b.excl;
          } else if (y >= 32 * j + 32) { // bit 31, t = 1: bit 0 of the next word
            const bool st0 = last || !(p.linkx && (b.w >> 31)); // a unit starts there
            sb = st0 ? y : b.incl;
          } else {
            sb = ndf_unit_at(b, y - 32 * j, j);
          }
          ndf_uf_unite(p.parent, row * p.nx + ndf_unit_at(a, bit, j), nr * p.nx + sb);
        }
      }
    }
  })
}

__device__ __forceinline__ void ndf_label_compress(const ndf_label_params &p) {
  NDF_FOR_PIECES({
    int cnt = 0;
    for (unsigned u = ndf_piece_starts(p, g, row, j); u; u &= u - 1) {
      const int v = row * p.nx + 32 * j + __ffs(u) - 1;
      int x = p.parent[v];
      while (true) {
        const int px = p.parent[x];
        if (px == x) break;
        x = px;
      }
      if (x == v) cnt++;
      else p.parent[v] = x;
    }
    for (int o = g.G >> 1; o > 0; o >>= 1) cnt += __shfl_xor_sync(NDF_FULL, cnt, o, g.G);
    if (rowok && g.k == 0) p.cnt[vr] = cnt;
  })
}

// Block-wide exclusive scan of one int per thread (256 threads); *total gets the sum.
__device__ __forceinline__ int ndf_block_scan(int v, int *total) {
  __shared__ int warp_sums[32];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  int x = v;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int y = __shfl_up_sync(NDF_FULL, x, o);
    if (lane >= o) x += y;
  }
  if (lane == 31) warp_sums[w] = x;
  __syncthreads();
  if (w == 0) {
    int s = lane < (int)(blockDim.x >> 5) ? warp_sums[lane] : 0;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int y = __shfl_up_sync(NDF_FULL, s, o);
      if (lane >= o) s += y;
    }
    warp_sums[lane] = s; // inclusive
  }
  __syncthreads();
  const int before = (w ? warp_sums[w - 1] : 0) + x - v;
  *total = warp_sums[(blockDim.x >> 5) - 1];
  __syncthreads();
  return before;
}

__device__ __forceinline__ int ndf_cnt_at(const ndf_label_params &p, int r) {
  return r < p.nrows * p.nseg ? p.cnt[r] : 0;
}

__device__ __forceinline__ void ndf_label_bsum(const ndf_label_params &p) {
  for (int b = blockIdx.x; b < p.nblk; b += gridDim.x) {
    int v = 0;
    for (int k = 0; k < E / 256; k++) v += ndf_cnt_at(p, b * E + k * 256 + (int)threadIdx.x);
    int total;
    ndf_block_scan(v, &total);
    if (threadIdx.x == 0) p.bsum[b] = total;
  }
}

// One block: bsum[0..nblk) -> exclusive prefix, base[nimg] = total.
__device__ __forceinline__ void ndf_label_scan(const ndf_label_params &p) {
  const int chunk = (p.nblk + 255) / 256;
  const int lo = threadIdx.x * chunk, hi = min(lo + chunk, p.nblk);
  int v = 0;
  for (int k = lo; k < hi; k++) v += p.bsum[k];
  int total;
  int run = ndf_block_scan(v, &total);
  for (int k = lo; k < hi; k++) {
    const int s = p.bsum[k];
    p.bsum[k] = run;
    run += s;
  }
  if (threadIdx.x == 0) p.base[p.nimg] = total;
}

// cnt[r] -> roots before piece r; a thread owns 8 consecutive pieces.
__device__ __forceinline__ void ndf_label_rowpre(const ndf_label_params &p) {
  for (int b = blockIdx.x; b < p.nblk; b += gridDim.x) {
    const int first = b * E + (int)threadIdx.x * (E / 256);
    int v = 0;
    for (int k = 0; k < E / 256; k++) v += ndf_cnt_at(p, first + k);
    int total;
    int before = p.bsum[b] + ndf_block_scan(v, &total);
    for (int k = 0; k < E / 256; k++) {
      const int r = first + k;
      if (r >= p.nrows * p.nseg) break;
      const int c = p.cnt[r];
      p.cnt[r] = before;
      if (r % p.rpi == 0) p.base[r / p.rpi] = before;
      before += c;
    }
  }
}

__device__ __forceinline__ void ndf_label_rank(const ndf_label_params &p) {
  NDF_FOR_PIECES({
    unsigned roots = 0;
    for (unsigned u = ndf_piece_starts(p, g, row, j); u; u &= u - 1) {
      const int bit = __ffs(u) - 1, v = row * p.nx + 32 * j + bit;
      if (p.parent[v] == v) roots |= 1u << bit;
    }
    const int n = __popc(roots);
    int lab = (rowok ? p.cnt[vr] : 0) + ndf_gscan_sum(g, n) - n;
    for (unsigned u = roots; u; u &= u - 1) p.parent[row * p.nx + 32 * j + __ffs(u) - 1] = -(++lab);
  })
}

// Output offset of the first voxel of row r.
__device__ __forceinline__ ndf_i64 ndf_out_row(const ndf_label_params &p, int r) {
  ndf_i64 off = 0;
  ndf_u64 q = (ndf_u64)r;
  for (int d = p.ndim - 2; d >= 0; d--) {
    ndf_u64 rem;
    q = ndf_udiv(q, (ndf_u64)p.shape[d], &rem);
    off += (ndf_i64)rem * p.ostr[d];
  }
  return off;
}

// The writes of a warp are 32 consecutive voxels of one word: for each piece
// of the warp and each of its words, the word's scan comes from its lane.
__device__ __forceinline__ void ndf_label_write(const ndf_label_params &p) {
  const ndf_i64 sx = p.ostr[p.ndim - 1];
  NDF_FOR_PIECES({
    const ndf_i64 obase = rowok ? ndf_out_row(p, row) : 0;
    const int base = rowok ? p.base[vr / p.rpi] : 0;
    const ndf_scan sc = ndf_piece_scan(p, g, row, j);
    for (int q = 0; q < 32 / g.G; q++) {
      const int src0 = q * g.G;
      const int r = __shfl_sync(NDF_FULL, row, src0);
      const int j0 = __shfl_sync(NDF_FULL, j, src0); // the piece's first word
      const ndf_i64 ob = __shfl_sync(NDF_FULL, obase, src0);
      const int bs = __shfl_sync(NDF_FULL, base, src0);
      const int nwc = min(g.G, p.nw - j0); // words of the piece
#pragma unroll 4
      for (int k = 0; k < nwc; k++) { // unrolled: the parent loads of 4 words in flight
        const int src = src0 + k;
        const unsigned w = __shfl_sync(NDF_FULL, sc.w, src);
        const unsigned s = __shfl_sync(NDF_FULL, sc.s, src);
        const int excl = __shfl_sync(NDF_FULL, sc.excl, src);
        const int jj = j0 + k, x = 32 * jj + g.lane;
        if (r < 0 || x >= p.nx) continue;
        int v = 0;
        if ((w >> g.lane) & 1u) {
          const int at = ndf_last_at(s, g.lane, jj);
          const int u = r * p.nx + (at >= 0 ? at : excl);
          const int pu = p.parent[u];
          v = (pu < 0 ? -pu : -p.parent[pu]) - bs;
        }
        p.out[ob + (ndf_i64)x * sx] = (O)v;
      }
    }
  })
}

// One entry point for the eight phases (one module, one compile per output
// type): the host launches it with phase 0..7 in stream order.
extern "C" __global__ void __launch_bounds__(256) ndf_label(const ndf_label_params p) {
  switch (p.phase) {
    case 0: ndf_label_init(p); break;
    case 1: ndf_label_unite(p); break;
    case 2: ndf_label_compress(p); break;
    case 3: ndf_label_bsum(p); break;
    case 4: ndf_label_scan(p); break;
    case 5: ndf_label_rowpre(p); break;
    case 6: ndf_label_rank(p); break;
    default: ndf_label_write(p); break;
  }
}
