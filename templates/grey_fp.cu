// grey_fp.cu -- grey erosion/dilation with any structuring element whose
// taps fit a KZ x KY x KX box (<= 7 each) on the last three spatial axes
// (Z, Y, X): crosses, balls, diamonds, arbitrary footprints, weighted or
// flat.  The staging is grey_box.cu's (grey_stage.cuh): a block owns a
// tile of TY rows x (32*VX) columns and marches along Z over ZC output
// planes, each input plane (with its Y/X halo, boundary mode applied) staged
// in shared memory once.  The taps are read from shared memory: for the
// taps of plane dz of the element, input plane zi adds to the output plane
// zi - LZ - dz, kept in a ring of KZ accumulators per output (slot
// KZ-1-dz), so every input byte is read from DRAM about once whatever the
// element.
//
//   out[z,y,x] = OP over taps k of in[z+LZ+dz_k, y+LY+dy_k, x+LX+dx_k] (+ w_k)
//
// The taps come in scipy's raster order (dz, dy, dx), so an output folds
// them in the same order as grey_taps.cu and the CPU: ties (-0.0, 0.0) and
// NaNs resolve the same, and weighted elements follow scipy's arithmetic
// (the first tap in double, later taps in the input type with the weight
// converted to it; integers saturate).
#include "ndf_common.cuh"

typedef NDF_SLOT(T) T;
#define OP NDF_SLOT(OP)
#define MODE NDF_SLOT(MODE)
#define KZ NDF_SLOT(KZ)
#define KY NDF_SLOT(KY)
#define KX NDF_SLOT(KX)
#define TY NDF_SLOT(TY)   /* rows per block */
#define VX NDF_SLOT(VX)   /* outputs per thread along X, 32 apart */
#define ZC NDF_SLOT(ZC)   /* output planes per block */
#define TSIZE NDF_SLOT(TSIZE) /* sizeof(T), for the preprocessor */
#define WEIGHTED NDF_SLOT(WEIGHTED)
#define KIND NDF_SLOT(KIND)   /* 0 integer, 1 float32, 2 float64 */
#define T_LO NDF_SLOT(T_LO)   /* range of an integer T, as doubles */
#define T_HI NDF_SLOT(T_HI)

#define TX 32
#define NT (TX * TY)
#define XT (TX * VX)              /* output columns per tile */
#define SW (XT + KX - 1)          /* staged columns */
#define SH (TY + KY - 1)          /* staged rows */
#define NLOAD ((SH * SW + NT - 1) / NT)
#define NDF_FP_MAXTAPS 256        /* the params' tap table (gen/spec.lua) */

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define NDF_ASYNC (TSIZE == 4 || TSIZE == 8)
#else
#define NDF_ASYNC 0
#endif
#define STAGES 3
#define NSTAGE_BUF (NDF_ASYNC ? STAGES : 1)

NDF_PARAMS(ndf_fp_params)

#include "grey_stage.cuh"
#include "grey_weights.cuh"

// Tap k of the staged plane t at staged position base (row ty, column cx).
__device__ __forceinline__ T ndf_tap(const T *t, const int *taps, int k, int base) {
  const int e = taps[k];
  return t[base + (e >> 8) * SW + (e & 255)];
}

extern "C" __global__ void __launch_bounds__(NT) ndf_grey_fp(const ndf_fp_params p) {
  __shared__ T tile[NSTAGE_BUF][SH][SW];
  __shared__ int taps[NDF_FP_MAXTAPS]; // (dy << 8) | dx of each tap; read after the first barrier
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * TX + tx;
  for (int k = tid; k < p.ntaps; k += NT) taps[k] = __ldg(p.taps + k);
  const T cv = (T)p.cval;
  const ndf_i64 nblocks = p.ntx * p.nty * p.ntz * p.nouter;
  for (ndf_i64 blk = blockIdx.x; blk < nblocks; blk += gridDim.x) {
    NDF_TILE_OF(blk);
    const T *img = p.in + ibase;
    const ndf_i64 x0 = bx * XT, y0 = by * TY, z0 = bz * ZC;
    const ndf_i64 zend = min(z0 + (ndf_i64)ZC, p.nz);   // output planes [z0, zend)

    NDF_STAGE_OFFSETS(y0 + p.ly, x0 + p.lx);

    const ndf_i64 zfirst = z0 + p.lz, zlast = zend - 1 + p.lz + KZ - 1;
    A ring[KZ][VX];
    NDF_STAGE_FIRST(zfirst);
    for (ndf_i64 zi = zfirst; zi <= zlast; zi++) {
      NDF_STAGE_NEXT(tp, zi);
      const T *t = tp[0];
      // Slot q holds output plane zi - LZ - (KZ-1-q): shift, then fold plane
      // dz of the element into slot KZ-1-dz (tap 0, of plane 0, opens slot KZ-1).
#pragma unroll
      for (int j = 0; j < VX; j++) {
#pragma unroll
        for (int q = 0; q < KZ - 1; q++) ring[q][j] = ring[q + 1][j];
        const int base = ty * SW + tx + TX * j;
        const T v0 = ndf_tap(t, taps, 0, base);
#if WEIGHTED
        ring[KZ - 1][j] = (double)v0 + p.wfirst;
#else
        ring[KZ - 1][j] = v0;
#endif
      }
#pragma unroll
      for (int dz = 0; dz < KZ; dz++) {
        for (int k = dz == 0 ? 1 : p.zs[dz]; k < p.zs[dz + 1]; k++) {
#if WEIGHTED
          const double wc = __ldg(p.wcast + k);
#endif
#pragma unroll
          for (int j = 0; j < VX; j++) {
            const T v = ndf_tap(t, taps, k, ty * SW + tx + TX * j);
#if WEIGHTED
            ring[KZ - 1 - dz][j] = ndf_pick<OP, double>(ring[KZ - 1 - dz][j], ndf_wtap(v, wc));
#else
            ring[KZ - 1 - dz][j] = ndf_pick<OP, T>(ring[KZ - 1 - dz][j], v);
#endif
          }
        }
      }
      const ndf_i64 zo = zi - p.lz - (KZ - 1);  // output plane completed by this input plane
      const ndf_i64 yo = y0 + ty;
      if (zo >= z0 && yo < p.ny) {
#pragma unroll
        for (int j = 0; j < VX; j++) {
          const ndf_i64 xo = x0 + tx + TX * j;
          if (xo < p.nx) p.out[obase + zo * p.osz + yo * p.osy + xo * p.osx] = ndf_out(ring[0][j]);
        }
      }
    }
    NDF_STAGE_DONE();
    __syncthreads();
  }
}
