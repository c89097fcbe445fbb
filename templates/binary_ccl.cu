// binary_ccl.cu -- the limit of an iterated binary dilation whose taps are
// symmetric and include 0 (binary_propagation and binary_fill_holes with
// their usual structures), by connected components instead of iteration:
//
//   init     parent[v] = v for a voxel inside the mask, -1 outside
//   unite    each mask voxel joins its mask neighbours through the taps with
//            a negative flat offset (each undirected edge once), and is "lit"
//            when it or a tap neighbour is set in x, or a tap leaves the
//            image while border_value is 1
//   compress parent[v] = root of v;  spread: lit[v] -> lit[root]
//   final    x'[v] = x[v] | (mask[v] & lit[root of v]), written as words
// The result is the same as runtime/binary.c:propagate_components (the
// least set containing x closed under the masked dilation).  Voxels are
// addressed by the packed layout (binary_common.cuh): word w, lane b; the
// flat voxel index is row * nx + x.
#include "binary_common.cuh"

#define NSP NDF_SLOT(NSP) /* spatial axes, 1..8 */

NDF_PARAMS(ndf_ccl_params)

// Bit x of row r (inside the image) of a packed image; a mask voxel.
__device__ __forceinline__ bool ndf_rbit(const unsigned *w, const ndf_ccl_params &p, ndf_i64 r, ndf_i64 x) {
  return (__ldg(w + r * p.nw + (x >> 5)) >> (x & 31)) & 1u;
}
__device__ __forceinline__ bool ndf_rmask(const ndf_ccl_params &p, ndf_i64 r, ndf_i64 x) {
  return p.mask ? ndf_rbit(p.mask, p, r, x) : true;
}

// Grid-stride over (word, lane); v = flat voxel index, valid when x < nx.
#define NDF_FOR_VOXELS(body)                                                                     \
  for (ndf_u64 g = (ndf_u64)blockIdx.x * blockDim.x + threadIdx.x; g < (ndf_u64)p.nrows * p.nw * 32; \
       g += (ndf_u64)gridDim.x * blockDim.x) {                                                   \
    ndf_u64 j;                                                                                   \
    const ndf_u64 w = g / 32, lane = g & 31;                                                     \
    const ndf_u64 row = ndf_udiv(w, (ndf_u64)p.nw, &j);                                          \
    const ndf_i64 xx = (ndf_i64)j * 32 + (ndf_i64)lane;                                          \
    const bool valid = xx < p.nx;                                                                \
    const ndf_i64 v = (ndf_i64)row * p.nx + xx;                                                  \
    const unsigned mw = p.mask ? __ldg(p.mask + w) : 0xffffffffu;                                \
    const bool inm = valid && ((mw >> lane) & 1u);                                               \
    body                                                                                         \
  }

// With linkx, a mask voxel points at once to the start of its run of mask
// voxels along x (looking back at most 8 words; a longer run links to a voxel
// of the same run further back), which saves the x-tap's unions.  Every
// parent stays at a smaller or equal index in the same component.
__device__ __forceinline__ void ndf_ccl_init(const ndf_ccl_params &p) {
  NDF_FOR_VOXELS({
    if (valid) {
      ndf_i64 start = xx;
      if (inm && p.linkx) {
        if (!p.mask) {
          start = 0;
        } else {
          const unsigned gaps = ~mw & ((1u << lane) - 1u); // non-mask voxels below this one in its word
          if (gaps) {
            start = (ndf_i64)j * 32 + (32 - __clz(gaps));
          } else {
            start = (ndf_i64)j * 32;
            for (ndf_i64 jj = (ndf_i64)j - 1; jj >= 0 && jj >= (ndf_i64)j - 8; jj--) {
              const unsigned g = ~__ldg(p.mask + row * p.nw + jj);
              if (g) {
                start = jj * 32 + (32 - __clz(g));
                break;
              }
              start = jj * 32;
            }
          }
        }
      }
      p.parent[v] = inm ? (int)(v - (xx - start)) : -1;
    }
  })
}

__device__ __forceinline__ void ndf_uf_unite(const ndf_ccl_params &p) {
  NDF_FOR_VOXELS({
    if (inm) {
      ndf_i64 c[NSP];
      ndf_u64 r = row;
      c[NSP - 1] = xx;
      for (int d = NSP - 2; d >= 0; d--) {
        ndf_u64 q;
        r = ndf_udiv(r, (ndf_u64)p.sshape[d], &q);
        c[d] = (ndf_i64)q;
      }
      bool l = p.x && ((__ldg(p.x + w) >> lane) & 1u);
      ndf_i64 rs[NSP]; // row strides of the spatial axes but the last
      rs[NSP - 1] = 0;
#pragma unroll
      for (int d = NSP - 2; d >= 0; d--) rs[d] = d == NSP - 2 ? 1 : rs[d + 1] * p.sshape[d + 1];
      for (int k = 0; k < p.ntaps; k++) {
        bool ok = true;
        ndf_i64 ru = (ndf_i64)row; // u's row
#pragma unroll
        for (int d = 0; d < NSP; d++) {
          const int t = p.taps[k * NSP + d];
          const ndf_i64 y = c[d] + t;
          ok = ok && y >= 0 && y < p.sshape[d];
          ru += (ndf_i64)t * rs[d];
        }
        if (!ok) {
          l = l || p.border;
          continue;
        }
        const int tx = p.taps[k * NSP + NSP - 1];
        const ndf_i64 xu = xx + tx;
        if (p.lit && p.x) l = l || ndf_rbit(p.x, p, ru, xu);
        const bool xlink = p.linkx && p.toff[k] == -1 && tx == -1; // linked at init
        if (p.toff[k] < 0 && !xlink && ndf_rmask(p, ru, xu)) {
          // With runs along x linked at init, v - 1 ~ v and u - 1 ~ u: when
          // v - 1 and u - 1 are both mask voxels (and u - 1 is in u's row),
          // v - 1's thread unites them (or skips for the same reason), so
          // one union per overlap of two runs is enough.
          const bool covered = p.linkx && xx > 0 && xu > 0 && ndf_rmask(p, (ndf_i64)row, xx - 1) && ndf_rmask(p, ru, xu - 1);
          if (!covered) ndf_uf_unite(p.parent, (int)v, (int)(v + p.toff[k]));
        }
      }
      if (p.lit) p.lit[v] = l; // NULL: components only (label)
    }
  })
}

__device__ __forceinline__ void ndf_ccl_compress(const ndf_ccl_params &p) {
  NDF_FOR_VOXELS({
    if (inm) {
      int x = p.parent[v];
      while (true) {
        const int px = p.parent[x];
        if (px == x) break;
        x = px;
      }
      p.parent[v] = x;
    }
    (void)row;
  })
}

__device__ __forceinline__ void ndf_ccl_spread(const ndf_ccl_params &p) {
  NDF_FOR_VOXELS({
    if (inm && p.lit[v]) p.lit[p.parent[v]] = 1;
    (void)row;
  })
}

// One warp per word: lanes are the word's 32 voxels.
__device__ __forceinline__ void ndf_ccl_final(const ndf_ccl_params &p) {
  NDF_FOR_VOXELS({
    const bool xb = p.x && ((__ldg(p.x + w) >> lane) & 1u);
    const bool on = valid && (xb || (inm && p.lit[p.parent[v]]));
    const unsigned word = __ballot_sync(0xffffffffu, on);
    if (lane == 0) p.dst[w] = word;
    (void)row;
  })
}

// One entry point for the five phases (one module, one compile per NSP):
// the host launches it five times in stream order with phase 0..4.
extern "C" __global__ void __launch_bounds__(256) ndf_ccl(const ndf_ccl_params p) {
  switch (p.phase) {
    case 0: ndf_ccl_init(p); break;
    case 1: ndf_uf_unite(p); break;
    case 2: ndf_ccl_compress(p); break;
    case 3: ndf_ccl_spread(p); break;
    default: ndf_ccl_final(p); break;
  }
}
