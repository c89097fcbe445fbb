// binary_fstep.cu -- one step of binary erosion or dilation on packed words
// (binary_common.cuh) with the structure compiled in: binary_step.cu's
// semantics (taps, border, mask, tail bits, iteration control with the
// status flags, CYCLE), but the tap rows are generated straight-line code
// (slot TAPS) instead of a device table walked at run time, and the
// spatial rank is a compile-time constant, so a word costs a few divisions
// for its coordinates, one independent load per word a tap row touches,
// funnel shifts and ANDs (ORs).  Not for INPLACE (the monotone limit keeps
// binary_step.cu).  32-bit indices: the host takes this path only when the
// image has fewer than 2^31 words and every tap row offset fits an int.
//
// TAPS is a sequence of blocks, one per tap row (offsets o_d over the
// spatial axes but the last, last-axis offsets dx), as the host writes it:
//   { const bool ok = NDF_RY(d, o_d) && ...;         // the tap row is inside
//     const unsigned *b = ndf_trow(p, row, ok, 0u + (unsigned)o_0 * rst[0] + ...);
//     const unsigned w1 = NDF_W(a), ...;             // words j + a it reads
//     acc = NDF_OPB(acc, ok ? (w1 OP __funnelshift_r(w0, w1, s) ...) : border); }
// A tap dx of word j is word j + floor(dx / 32) funnel-shifted with the next
// one by dx mod 32; words outside the row and tail bits read the border.
#include "binary_common.cuh"

#define OP NDF_SLOT(OP)       /* 0: AND (erosion), 1: OR (dilation, miss) */
#define CYCLE NDF_SLOT(CYCLE) /* 1: compare with the saved state */
#define NRA NDF_SLOT(NRA)     /* spatial axes but the last, 0..7 */
#define NDF_NRA1 (NRA > 0 ? NRA : 1)

#define NDF_OPB(a, b) (OP == 0 ? ((a) & (b)) : ((a) | (b)))
// Coordinate c[d] + o inside axis d.
#define NDF_RY(d, o) ((unsigned)(c[d] + (o)) < rsh[d])
// Word j + a of the tap row at b.
#define NDF_W(a) ndf_fword(b, j + (a), nw, tail, border)

// Word a of the row at b, the border outside it; tail bits read the border.
__device__ __forceinline__ unsigned ndf_fword(const unsigned *b, int a, int nw, unsigned tail, unsigned border) {
  const bool in = a >= 0 && a < nw;
  unsigned w = __ldg(b + (in ? a : 0));
  w = in ? w : border;
  return a == nw - 1 ? (w & tail) | (border & ~tail) : w;
}

// The tap row at row offset lin (ok), or the word's own row (the values are
// then replaced by the border).
// lin is the row offset modulo 2^32 (the sum is exact when the row is inside).
__device__ __forceinline__ const unsigned *ndf_trow(const ndf_bstep_params &p, unsigned row, bool ok, unsigned lin) {
  const unsigned r = ok ? row + lin : row;
  return p.src + (ndf_u64)r * (ndf_u64)p.nw;
}

extern "C" __global__ void __launch_bounds__(256) ndf_bin_fstep(const ndf_bstep_params p) {
  if (p.status && ndf_bstep_begin(p, CYCLE)) return;
  const int nw = (int)p.nw;
  const unsigned nwords = (unsigned)(p.nrows * p.nw);
  const unsigned tail = p.tail, border = p.border;
  unsigned rsh[NDF_NRA1];
  unsigned rst[NDF_NRA1];
#pragma unroll
  for (int d = 0; d < NDF_NRA1; d++) {
    rsh[d] = d < NRA ? (unsigned)p.rshape[d] : 1u;
    rst[d] = d < NRA ? (unsigned)p.rstride[d] : 0u;
  }
  (void)rst;
  int changed = 0, differs = 0;
  // Chunks of blockDim.x words; the loop bounds are uniform over the block.
  for (unsigned base = blockIdx.x * blockDim.x; base < nwords; base += gridDim.x * blockDim.x) {
    const unsigned i = base + threadIdx.x;
    if (i < nwords) {
      const unsigned row = i / (unsigned)nw;
      const int j = (int)(i - row * (unsigned)nw);
      int c[NDF_NRA1];
      c[0] = 0;
      unsigned r = row;
#pragma unroll
      for (int d = NRA - 1; d >= 0; d--) {
        const unsigned q = r / rsh[d];
        c[d] = (int)(r - q * rsh[d]);
        r = q;
      }
      (void)c;
      unsigned acc = OP == 0 ? 0xffffffffu : 0u;
      NDF_SLOT(TAPS)
      if (j == nw - 1) acc &= tail;
      const unsigned old = __ldg(p.src + i);
      unsigned nv = acc;
      if (p.mask) {
        const unsigned m = __ldg(p.mask + i);
        nv = (acc & m) | (old & ~m);
      }
      p.dst[i] = nv;
      changed |= nv != old;
#if CYCLE
      differs |= nv != p.saved[i];
#endif
    }
  }
  if (p.status) {
    if (__syncthreads_or(changed) && threadIdx.x == 0) p.status[p.t % 3] = 1;
#if CYCLE
    if (__syncthreads_or(differs) && threadIdx.x == 0) p.status[3 + p.t % 3] = 1;
#endif
  }
  (void)differs;
}
