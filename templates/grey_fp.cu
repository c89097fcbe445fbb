// grey_fp.cu -- grey erosion/dilation with any structuring element whose
// taps fit a KZ x KY x KX box (<= 7 each) on the last three spatial axes
// (Z, Y, X): crosses, balls, diamonds, arbitrary footprints, weighted or
// flat.  The staging is grey_box.cu's: a block owns a tile of TY rows x
// (32*VX) columns and marches along Z over ZC output planes, each input
// plane (with its Y/X halo, boundary mode applied) staged in shared memory
// once.  The taps are read from shared memory: for the taps of plane dz of
// the element, input plane zi adds to the output plane zi - LZ - dz, kept in
// a ring of KZ accumulators per output (slot KZ-1-dz), so every input byte
// is read from DRAM about once whatever the element.
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

#if WEIGHTED
typedef double A; /* accumulator */
#else
typedef T A;
#endif

__device__ __forceinline__ double ndf_sat(double v) {
#if KIND == 0
  return v < T_LO ? T_LO : (v > T_HI ? T_HI : v);
#else
  return v;
#endif
}

// The value of tap k >= 1 in scipy's weighted arithmetic; tap 0 is v + wfirst in double.
__device__ __forceinline__ double ndf_wtap(T v, double wc) {
#if KIND == 1
  return (double)((float)v + (float)wc);
#elif KIND == 2
  return (double)v + wc;
#else
  return ndf_sat((double)v + wc);
#endif
}

__device__ __forceinline__ T ndf_out(A acc) {
#if WEIGHTED && KIND == 0
  return (T)ndf_sat(trunc(acc));
#else
  return (T)acc;
#endif
}

#define NDF_NOLOAD (-2147483647 - 1)

// Offset (within a plane) of staged element e, or NDF_NOLOAD when it reads
// cval.  The host guarantees every in-plane offset fits in an int.
__device__ __noinline__ int ndf_stage_offset(int e, ndf_i64 y, ndf_i64 x, ndf_i64 ny, ndf_i64 nx, ndf_i64 isy,
                                             ndf_i64 isx) {
  if (e >= SH * SW) return NDF_NOLOAD;
  const int row = e / SW, col = e - row * SW;
  const ndf_i64 yy = ndf_map(y + row, ny, MODE);
  const ndf_i64 xx = ndf_map(x + col, nx, MODE);
  return (yy < 0 || xx < 0) ? NDF_NOLOAD : (int)(yy * isy + xx * isx);
}

__device__ __forceinline__ void ndf_cp_async(T *dst, const T *src) {
#if NDF_ASYNC
  unsigned s = (unsigned)__cvta_generic_to_shared(dst);
  if (TSIZE == 4) asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s), "l"(src));
  else asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(s), "l"(src));
#endif
}
__device__ __forceinline__ void ndf_cp_commit() {
#if NDF_ASYNC
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
__device__ __forceinline__ void ndf_cp_wait() {
#if NDF_ASYNC
  asm volatile("cp.async.wait_group %0;\n" ::"n"(STAGES - 2));
#endif
}

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
    ndf_i64 r = blk;
    const ndf_i64 bx = r % p.ntx; r /= p.ntx;
    const ndf_i64 by = r % p.nty; r /= p.nty;
    const ndf_i64 bz = r % p.ntz; r /= p.ntz;
    ndf_i64 ibase = 0, obase = 0;
    for (int b = p.nb - 1; b >= 0; b--) {
      ndf_i64 q = r / p.bshape[b];
      ndf_i64 cb = r - q * p.bshape[b];
      r = q;
      ibase += cb * p.bistr[b];
      obase += cb * p.bostr[b];
    }
    const T *img = p.in + ibase;
    const ndf_i64 x0 = bx * XT, y0 = by * TY, z0 = bz * ZC;
    const ndf_i64 zend = min(z0 + (ndf_i64)ZC, p.nz);   // output planes [z0, zend)

    int soff[NLOAD];
#pragma unroll
    for (int i = 0; i < NLOAD; i++)
      soff[i] = ndf_stage_offset(tid + i * NT, y0 + p.ly, x0 + p.lx, p.ny, p.nx, p.isy, p.isx);

    const ndf_i64 zfirst = z0 + p.lz, zlast = zend - 1 + p.lz + KZ - 1;
    A ring[KZ][VX];
#if NDF_ASYNC
    // Stage plane zi into buffer `stage`: cp.async where it reads the image, cval elsewhere.
#define STAGE_PLANE(zi, stage)                                                       \
    do {                                                                             \
      if ((zi) <= zlast) {                                                           \
        const ndf_i64 zz_ = ndf_map((zi), p.nz, MODE);                               \
        T *buf_ = &tile[(stage)][0][0];                                              \
        _Pragma("unroll") for (int i = 0; i < NLOAD; i++) {                          \
          const int e = tid + i * NT;                                                \
          if (zz_ >= 0 && soff[i] != NDF_NOLOAD) ndf_cp_async(buf_ + e, img + zz_ * p.isz + soff[i]); \
          else if (e < SH * SW) buf_[e] = cv;                                        \
        }                                                                            \
      }                                                                              \
      ndf_cp_commit();                                                               \
    } while (0)
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) STAGE_PLANE(zfirst + s, s);
    int cur = 0; /* buffer of plane zi */
#else
    T next[NLOAD];
    {
      const ndf_i64 zz = ndf_map(zfirst, p.nz, MODE);
#pragma unroll
      for (int i = 0; i < NLOAD; i++) next[i] = (zz >= 0 && soff[i] != NDF_NOLOAD) ? __ldg(img + zz * p.isz + soff[i]) : cv;
    }
#endif
    for (ndf_i64 zi = zfirst; zi <= zlast; zi++) {
#if NDF_ASYNC
      ndf_cp_wait();      // this thread's copies of plane zi have landed
      __syncthreads();    // everyone's have, and plane zi-1's buffer is free
      STAGE_PLANE(zi + STAGES - 1, cur == 0 ? STAGES - 1 : cur - 1);
      const T *t = &tile[cur][0][0];
      cur = cur == STAGES - 1 ? 0 : cur + 1;
#else
      __syncthreads();
#pragma unroll
      for (int i = 0; i < NLOAD; i++) {
        int e = tid + i * NT;
        if (e < SH * SW) (&tile[0][0][0])[e] = next[i];
      }
      __syncthreads();
      if (zi < zlast) {
        const ndf_i64 zz = ndf_map(zi + 1, p.nz, MODE);
#pragma unroll
        for (int i = 0; i < NLOAD; i++) next[i] = (zz >= 0 && soff[i] != NDF_NOLOAD) ? __ldg(img + zz * p.isz + soff[i]) : cv;
      }
      const T *t = &tile[0][0][0];
#endif
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
#if NDF_ASYNC
    asm volatile("cp.async.wait_all;\n" ::);
#endif
    __syncthreads();
  }
}
