// reconstruction.cu -- grey morphological reconstruction
// (skimage.morphology.reconstruction) as geodesic steps repeated until one
// changes nothing.
//
//   ndf_recon_init   r = seed, m = mask, as contiguous copies (r clamped to
//                    the mask in the order below); flags a seed on the wrong
//                    side of the mask (status[0]) and NaN (status[1]).
//   ndf_recon_step   geodesic steps, in place:
//                      r[x] <- bound(m[x], up(r[x], r[x + t] for every tap t))
//                    where up is max (dilation) or min (erosion) and bound the
//                    opposite; taps reaching outside the image are skipped.
//                    A block owns runs of 256 consecutive voxels and repeats
//                    the step on its run (up to NDF_RC_LOCAL times) while it
//                    changes something there, so that values travel along a
//                    run within one launch.  A launch that raised some r[x]
//                    sets status[2].
//   ndf_recon_store  out = r, converted to the output's type, any strides.
//
// The step updates r in place while other threads read it: a read sees the
// old or the new value, both at most the limit (every value written is the
// step applied to values at most the limit), so r never overshoots.  A launch
// that changes nothing read nothing but final values, so r is then the limit.
// Floats are ordered with -0.0 below +0.0, which makes the limit unique bit
// for bit (the numeric order leaves a zero's sign to the visiting order).
#include "ndf_common.cuh"

typedef NDF_SLOT(T) T;
typedef NDF_SLOT(OUT) OUT;
#define NDIM NDF_SLOT(NDIM)   /* spatial axes */
#define DIL NDF_SLOT(DIL)     /* 1: reconstruction by dilation, 0: by erosion */
#define FLOAT NDF_SLOT(FLOAT) /* 1 when T is float or double */

// a < b, with -0.0 < +0.0 for floats.
__device__ __forceinline__ bool ndf_rc_lt(T a, T b) {
#if FLOAT
  return a < b || (a == b && signbit((double)a) && !signbit((double)b));
#else
  return a < b;
#endif
}
// 1 when b lies beyond a in the direction values spread.
__device__ __forceinline__ bool ndf_rc_up(T a, T b) { return DIL ? ndf_rc_lt(a, b) : ndf_rc_lt(b, a); }

NDF_PARAMS(ndf_recon_init_params)

#if NDF_KERNEL(ndf_recon_init)
extern "C" __global__ void __launch_bounds__(256) ndf_recon_init(const ndf_recon_init_params p) {
  for (ndf_i64 i = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += (ndf_i64)gridDim.x * blockDim.x) {
    ndf_i64 q = i, os = 0, om = 0;
    NDF_FOR_COORDS(q, p.ndim, p.shape, d, c,
                   os += c * p.sstr[d];
                   om += c * p.mstr[d];)
    const T s = p.seed[os], m = p.mask[om];
#if FLOAT
    if (s != s || m != m) p.status[1] = 1;
#endif
    if (DIL ? s > m : s < m) p.status[0] = 1;
    p.r[i] = ndf_rc_up(m, s) ? m : s;
    p.m[i] = m;
  }
}
#endif

NDF_PARAMS(ndf_recon_step_params)

// One step at voxel i (< p.n); true when it raised r[i].
__device__ __forceinline__ bool ndf_rc_step(const ndf_recon_step_params &p, ndf_i64 i) {
  const T v = p.r[i], bound = p.m[i];
  if (!ndf_rc_up(v, bound)) return false; // at its bound already
  ndf_i64 c[NDIM], q = i;
  bool inside = true;
#pragma unroll
  for (int d = NDIM - 1; d >= 0; d--) {
    const ndf_i64 k = q / p.shape[d];
    c[d] = q - k * p.shape[d];
    q = k;
    inside = inside && c[d] + p.rlo[d] >= 0 && c[d] + p.rhi[d] < p.shape[d];
  }
  T best = v;
  for (int k = 0; k < p.ntaps; k++) {
    if (!inside) {
      bool ok = true;
#pragma unroll
      for (int d = 0; d < NDIM; d++) {
        const ndf_i64 y = c[d] + p.toff[k * NDIM + d];
        ok = ok && y >= 0 && y < p.shape[d];
      }
      if (!ok) continue;
    }
    const T x = p.r[i + p.loff[k]];
    if (ndf_rc_up(best, x)) best = x;
  }
  if (ndf_rc_up(bound, best)) best = bound;
  if (!ndf_rc_up(v, best)) return false;
  p.r[i] = best;
  return true;
}

#define NDF_RC_LOCAL 64

// Launched with 256 threads per block.  Every thread of a block runs the same
// number of iterations of both loops (the run loop is uniform, and the
// repeat ends on a block-wide vote), so the barriers are reached by all; a
// barrier also makes the block's writes to r visible to the whole block.
#if NDF_KERNEL(ndf_recon_step)
extern "C" __global__ void __launch_bounds__(256) ndf_recon_step(const ndf_recon_step_params p) {
  const ndf_i64 runs = (p.n + 255) / 256;
  for (ndf_i64 run = blockIdx.x; run < runs; run += gridDim.x) {
    const ndf_i64 i = run * 256 + threadIdx.x;
    for (int it = 0; it < NDF_RC_LOCAL; it++) {
      const bool changed = i < p.n && ndf_rc_step(p, i);
      if (changed) p.status[2] = 1;
      if (!__syncthreads_or(changed)) break;
    }
  }
}
#endif

NDF_PARAMS(ndf_recon_store_params)

#if NDF_KERNEL(ndf_recon_store)
extern "C" __global__ void __launch_bounds__(256) ndf_recon_store(const ndf_recon_store_params p) {
  for (ndf_i64 i = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += (ndf_i64)gridDim.x * blockDim.x) {
    ndf_i64 q = i, oo = 0;
    NDF_FOR_COORDS(q, p.ndim, p.shape, d, c, oo += c * p.ostr[d];)
    p.out[oo] = (OUT)p.r[i];
  }
}
#endif
