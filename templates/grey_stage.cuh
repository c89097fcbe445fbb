// grey_stage.cuh -- the plane staging of the fused grey kernels (grey_box.cu,
// grey_fp.cu, grey_boxd.cu).
//
// A block owns a tile of rows x columns of the last two spatial axes (Y, X)
// and marches along Z.  Each input plane of the tile, with its Y/X halo and
// the boundary mode applied, is staged in shared memory once: STAGES planes
// deep with cp.async (NDF_ASYNC), so that the loads of later planes are in
// flight while one is reduced; otherwise the next plane is prefetched through
// registers while one is reduced.
//
// The template defines before including it: T; MODE; NT, the threads of a
// block; SH x SW, the staged rows x columns; NLOAD = ceil(SH*SW / NT), the
// staged elements per thread (element e = tid + i*NT, at row e / SW and
// column e % SW); STAGES >= 2; NDF_ASYNC, 1 where cp.async copies a T (then
// the shared buffer tile[][SH][SW] holds STAGES planes, else one).
//
// The block-level steps are macros, not functions: they work on the kernel's
// own shared buffer and register arrays, and NVRTC compiles the kernels to
// the same code as when these steps were written out in each of them, which
// it does not for the same steps as __forceinline__ functions (different
// instructions in the cp.async path).  They use the kernel's names p (the
// parameters: nz, ny, nx, isz, isy, isx, ntx, nty, ntz, nb, bshape, bistr,
// bostr), tile, tid, img (the image, outer axes applied), cv (cval as T)
// and zlast (the last input plane), and declare soff, cur or next.
#pragma once
#include "ndf_common.cuh"

#define NDF_NOLOAD (-2147483647 - 1)

// Offset (within a plane) of staged element e, or NDF_NOLOAD when it reads
// cval (or lies past the staged area).  The host guarantees every in-plane
// offset fits in an int.  Out of line: it runs once per block, and inlining
// it NLOAD times only lengthens the compile.
__device__ __noinline__ int ndf_stage_offset(int e, ndf_i64 y, ndf_i64 x, ndf_i64 ny, ndf_i64 nx, ndf_i64 isy,
                                             ndf_i64 isx) {
  if (e >= SH * SW) return NDF_NOLOAD;
  const int row = e / SW, col = e - row * SW;
  const ndf_i64 yy = ndf_map(y + row, ny, MODE);
  const ndf_i64 xx = ndf_map(x + col, nx, MODE);
  return (yy < 0 || xx < 0) ? NDF_NOLOAD : (int)(yy * isy + xx * isx);
}

// cp.async of one T (4 or 8 bytes), its commit and the wait that leaves the
// newest STAGES - 2 groups in flight.
__device__ __forceinline__ void ndf_cp_async(T *dst, const T *src) {
#if NDF_ASYNC
  unsigned s = (unsigned)__cvta_generic_to_shared(dst);
  if (sizeof(T) == 4) asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s), "l"(src));
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

// Declares bx, by, bz, the tile coordinates of block blk along X, Y and Z
// (bz: the Z chunk), and ibase, obase, where its image (the outer axes)
// starts in the input and the output.
#define NDF_TILE_OF(blk)                                                                 \
  ndf_i64 r_ = (blk);                                                                    \
  const ndf_i64 bx = r_ % p.ntx; r_ /= p.ntx;                                            \
  const ndf_i64 by = r_ % p.nty; r_ /= p.nty;                                            \
  const ndf_i64 bz = r_ % p.ntz; r_ /= p.ntz;                                            \
  ndf_i64 ibase = 0, obase = 0;                                                          \
  for (int b_ = p.nb - 1; b_ >= 0; b_--) {                                               \
    ndf_i64 q_ = r_ / p.bshape[b_];                                                      \
    ndf_i64 cb_ = r_ - q_ * p.bshape[b_];                                                \
    r_ = q_;                                                                             \
    ibase += cb_ * p.bistr[b_];                                                          \
    obase += cb_ * p.bostr[b_];                                                          \
  }

// Declares soff[NLOAD], the in-plane offsets of this thread's staged
// elements for a staged area that starts at row y, column x of each plane.
#define NDF_STAGE_OFFSETS(y, x)                                                          \
  int soff[NLOAD];                                                                       \
  _Pragma("unroll") for (int i = 0; i < NLOAD; i++)                                      \
    soff[i] = ndf_stage_offset(tid + i * NT, (y), (x), p.ny, p.nx, p.isy, p.isx)

// NDF_STAGE_ZCLAMP 1 (grey_boxd.cu) computes the source plane of cp.async
// as max(zz, 0): the same address for every copy made (zz >= 0), but the
// address arithmetic NVRTC emits differs, and each kernel keeps its own.
#ifndef NDF_STAGE_ZCLAMP
#define NDF_STAGE_ZCLAMP 0
#endif

#if NDF_ASYNC
// Stages plane zi into buffer `buf`: cp.async where it reads the image, cval
// elsewhere.  Past zlast it copies nothing but still commits a group, so
// that ndf_cp_wait counts the same.
#define NDF_STAGE_ASYNC(zi, buf)                                                         \
  do {                                                                                   \
    if ((zi) <= zlast) {                                                                 \
      const ndf_i64 zz_ = ndf_map((zi), p.nz, MODE);                                     \
      T *buf_ = &tile[(buf)][0][0];                                                      \
      const ndf_i64 zb_ = NDF_STAGE_ZCLAMP && zz_ < 0 ? 0 : zz_;                         \
      _Pragma("unroll") for (int i = 0; i < NLOAD; i++) {                                \
        const int e = tid + i * NT;                                                      \
        if (zz_ >= 0 && soff[i] != NDF_NOLOAD) ndf_cp_async(buf_ + e, img + zb_ * p.isz + soff[i]); \
        else if (e < SH * SW) buf_[e] = cv;                                              \
      }                                                                                  \
    }                                                                                    \
    ndf_cp_commit();                                                                     \
  } while (0)
// Before the loop over the planes: starts staging plane zfirst and the
// STAGES - 2 after it, and declares cur, the buffer of the next plane.
#define NDF_STAGE_FIRST(zfirst)                                                          \
  _Pragma("unroll") for (int s = 0; s < STAGES - 1; s++) NDF_STAGE_ASYNC((zfirst) + s, s); \
  int cur = 0
// In the loop, for plane zi: declares t, the staged plane (T[SH][SW]), once
// every thread's copies of it have landed.  Its barrier also waits until
// every thread is done with plane zi - 1 (and anything reduced from it).
#define NDF_STAGE_NEXT(t, zi)                                                            \
  ndf_cp_wait();     /* this thread's copies of plane zi have landed */                  \
  __syncthreads();   /* everyone's have, and plane zi-1's buffer is free */              \
  NDF_STAGE_ASYNC((zi) + STAGES - 1, cur == 0 ? STAGES - 1 : cur - 1);                   \
  const T (*t)[SW] = tile[cur];                                                          \
  cur = cur == STAGES - 1 ? 0 : cur + 1
// After the last plane: no copy is in flight.
#define NDF_STAGE_DONE() asm volatile("cp.async.wait_all;\n" ::)
#else
// Loads this thread's elements of plane zi into next.
#define NDF_STAGE_FETCH(zi)                                                              \
  {                                                                                      \
    const ndf_i64 zz_ = ndf_map((zi), p.nz, MODE);                                       \
    _Pragma("unroll") for (int i = 0; i < NLOAD; i++)                                    \
      next[i] = (zz_ >= 0 && soff[i] != NDF_NOLOAD) ? __ldg(img + zz_ * p.isz + soff[i]) : cv; \
  }
// Before the loop over the planes: declares next and loads plane zfirst into it.
#define NDF_STAGE_FIRST(zfirst)                                                          \
  T next[NLOAD];                                                                         \
  NDF_STAGE_FETCH(zfirst)
// In the loop, for plane zi: declares t, the staged plane (T[SH][SW]), and
// loads plane zi + 1 into next.  Its first barrier waits until every thread
// is done with plane zi - 1 (and anything reduced from it).
#define NDF_STAGE_NEXT(t, zi)                                                            \
  __syncthreads();                                                                       \
  _Pragma("unroll") for (int i = 0; i < NLOAD; i++) {                                    \
    int e = tid + i * NT;                                                                \
    if (e < SH * SW) (&tile[0][0][0])[e] = next[i];                                      \
  }                                                                                      \
  __syncthreads();                                                                       \
  if ((zi) < zlast) NDF_STAGE_FETCH((zi) + 1)                                            \
  const T (*t)[SW] = tile[0]
#define NDF_STAGE_DONE() ((void)0)
#endif
