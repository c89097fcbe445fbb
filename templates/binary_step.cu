// binary_step.cu -- one step of binary erosion or dilation on packed words
// (binary_common.cuh), with the mask and the device-side iteration control.
//
//   new[x] = OP over taps t of src[x + t]      OP = AND (erosion) or OR
//   dst[x] = mask[x] ? new[x] : src[x]                 (dilation, miss)
// Voxels outside the image read border_value.  The host has applied scipy's
// conventions (reflection and origin shift for dilation): taps are plain
// offsets, grouped into tap rows (one offset over the spatial axes but the
// last, and a list of offsets dx along the last axis).  A tap dx of word j
// is the funnel shift of words j + floor(dx/32) and the next one by dx mod 32.
//
// Iteration control (status != NULL).  Launch t (t >= 1) makes state t from
// state t-1.  status[t % 3] records "state t differs from state t-1" and,
// with CYCLE, status[3 + t % 3] "state t differs from the saved state"
// (Brent's cycle detection: the host copies state 2^k - 1 into saved after
// launch 2^k - 1).  Launch t first reads the flags of launch t-1, final
// since launches are stream-ordered: nothing changed -> converged; equal to
// the saved state -> a cycle.  It then records status[6] (1 converged, 2
// cycle) and status[7] = t-1, and every later launch returns at once, so the
// host can queue many launches and read the status once per chunk.  After a
// convergence at t-1 both buffers hold the same state.
//
// INPLACE (iterations < 1 with offset 0 among the taps, so the sequence only
// grows or only shrinks): src == dst, and a block repeats its pass over its
// 256 words until the pass changes nothing (at most REPS times) before it
// moves on.  Reads may see older or newer words; every value written lies
// between the current state and the limit, and a launch that changes nothing
// has verified a fixed point, so the limit is the one scipy's iteration
// reaches (the least/greatest fixed point above/below the input), in far
// fewer launches.
#include "binary_common.cuh"

#define OP NDF_SLOT(OP)       /* 0: AND (erosion), 1: OR (dilation, miss) */
#define CYCLE NDF_SLOT(CYCLE) /* 1: compare with the saved state */
#define INPLACE NDF_SLOT(INPLACE) /* 1: src == dst, block-local repeats */
#define REPS 32
#if INPLACE
#define NDF_LD(p) (*(volatile const unsigned *)(p)) /* other threads write these words */
#else
#define NDF_LD(p) __ldg(p)
#endif

// Word a of a row (base), or the border outside the row; tail bits read the border.
__device__ __forceinline__ unsigned ndf_get(const ndf_bstep_params &p, const unsigned *base, ndf_i64 a) {
  if (a < 0 || a >= p.nw) return p.border;
  unsigned w = NDF_LD(base + a);
  if (a == p.nw - 1) w = (w & p.tail) | (p.border & ~p.tail);
  return w;
}

// OP over the taps of word j of row (spatial coordinates c but the last;
// inside: no tap row leaves the image), tail bits cleared.
__device__ __forceinline__ unsigned ndf_word(const ndf_bstep_params &p, ndf_u64 row, ndf_u64 j, const ndf_i64 *c,
                                             bool inside) {
  const int R = p.nra + 2;
  unsigned acc = OP == 0 ? 0xffffffffu : 0u;
  for (int k = 0; k < p.ntr; k++) {
    const int *tr = p.taps + k * R;
    ndf_i64 lin = 0;
    bool ok = true;
    for (int d = 0; d < p.nra; d++) {
      const ndf_i64 y = c[d] + tr[d];
      ok = ok && (inside || (y >= 0 && y < p.rshape[d]));
      lin += (ndf_i64)tr[d] * p.rstride[d];
    }
    if (!ok) { // the whole tap row lies outside: it reads the border
      acc = OP == 0 ? (acc & p.border) : (acc | p.border);
    } else {
      const unsigned *base = p.src + ((ndf_i64)row + lin) * p.nw;
      const int n = tr[p.nra + 1];
      const int *dx = p.dx + tr[p.nra];
      for (int e = 0; e < n; e++) {
        const ndf_i64 a = (ndf_i64)j + (dx[e] >> 5); // floor(dx / 32)
        const unsigned b = (unsigned)dx[e] & 31u;
        const unsigned lo = ndf_get(p, base, a);
        const unsigned v = b ? __funnelshift_r(lo, ndf_get(p, base, a + 1), b) : lo;
        acc = OP == 0 ? (acc & v) : (acc | v);
      }
    }
    if (acc == (OP == 0 ? 0u : 0xffffffffu)) break; // decided
  }
  if ((ndf_i64)j == p.nw - 1) acc &= p.tail;
  return acc;
}

extern "C" __global__ void __launch_bounds__(256) ndf_bin_step(const ndf_bstep_params p) {
  int *st = p.status;
  if (st && ndf_bstep_begin(p, CYCLE)) return;
  const ndf_u64 nwords = (ndf_u64)p.nrows * p.nw;
  int changed = 0, differs = 0;
  // Chunks of blockDim.x words; the loop bounds are uniform over the block.
  for (ndf_u64 base = (ndf_u64)blockIdx.x * blockDim.x; base < nwords; base += (ndf_u64)gridDim.x * blockDim.x) {
    const ndf_u64 i = base + threadIdx.x;
    const bool valid = i < nwords;
    ndf_u64 j = 0, row = 0;
    ndf_i64 c[NDF_MAX_SPATIAL];
    bool inside = true;
    if (valid) {
      row = ndf_udiv(i, (ndf_u64)p.nw, &j);
      ndf_u64 r = row;
      for (int d = p.nra - 1; d >= 0; d--) {
        ndf_u64 q;
        r = ndf_udiv(r, (ndf_u64)p.rshape[d], &q);
        c[d] = (ndf_i64)q;
        inside = inside && c[d] + p.rlo[d] >= 0 && c[d] + p.rhi[d] < p.rshape[d];
      }
    }
    for (int rep = 0; rep < (INPLACE ? REPS : 1); rep++) {
      int ch = 0;
      if (valid) {
        const unsigned acc = ndf_word(p, row, j, c, inside);
        const unsigned old = NDF_LD(p.src + i);
        unsigned nw = acc;
        if (p.mask) {
          const unsigned m = __ldg(p.mask + i);
          nw = (acc & m) | (old & ~m);
        }
#if INPLACE
        if (nw != old) p.dst[i] = nw;
#else
        p.dst[i] = nw;
#endif
        ch = nw != old;
#if CYCLE
        differs |= nw != p.saved[i];
#endif
      }
      changed |= ch;
#if INPLACE
      if (!__syncthreads_or(ch)) break;
#endif
    }
  }
  if (st) {
    if (__syncthreads_or(changed) && threadIdx.x == 0) st[p.t % 3] = 1;
#if CYCLE
    if (__syncthreads_or(differs) && threadIdx.x == 0) st[3 + p.t % 3] = 1;
#endif
  }
  (void)differs;
}
