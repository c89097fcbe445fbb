// grey_box.cu -- grey erosion/dilation with a flat box element of at most
// 3 axes (the last three spatial axes, Z, Y, X), in one fused pass.
//
// A block owns a tile of TY rows x (32*VX) columns and marches along Z over
// ZC output planes.  Each input plane (with its Y/X halo, boundary mode
// applied) is staged in shared memory once; its KY x KX reduction is kept in
// a ring of KZ registers per output, so every input byte is read from DRAM
// about once.  Planes are staged STAGES deep with cp.async (sm_80+, 4- and
// 8-byte types), so loads of later planes are in flight while one is reduced;
// otherwise the next plane is prefetched through registers.
//
//   out[z,y,x] = OP over dz<KZ, dy<KY, dx<KX of in[z+LZ+dz, y+LY+dy, x+LX+dx]
//
// When the element has no Z extent (KZ = 1) the host may pass an outer axis
// (a batch axis) as Z: planes never mix, and blocks march over many images.
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

#define TX 32
#define NT (TX * TY)
#define XT (TX * VX)              /* output columns per tile */
#define SW (XT + KX - 1)          /* staged columns */
#define SH (TY + KY - 1)          /* staged rows */
#define NLOAD ((SH * SW + NT - 1) / NT)

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define NDF_ASYNC (TSIZE == 4 || TSIZE == 8)
#else
#define NDF_ASYNC 0
#endif
#define STAGES 3
// Separable in shared memory (SEP): each staged plane is first reduced along
// X into hx[SH][XT] by all threads, then each output folds KY rows of hx:
// (SH/TY)*KX + KY shared reads per output instead of KY*KX (7x7: 19, not
// 49).  The fold keeps the row-major order of the direct one -- rows in dy
// order, each row's value over dx in order -- and ndf_pick keeps the earlier
// operand on ties and the later NaN, so the result is the same bit for bit.
// Only when hx fits beside the staging buffers in 48 KiB of static shared
// memory, and when the box spans both X and Y beyond 3x3 (3x3 direct: 9
// reads, separable: 8 and one more barrier).
#define NSTAGE_BUF (NDF_ASYNC ? STAGES : 1)
#define SEP (KX > 1 && KY > 1 && KX * KY > 9 && (NSTAGE_BUF * SH * SW + SH * XT) * TSIZE <= 49152)
#define HLOAD ((SH * XT + NT - 1) / NT)

NDF_PARAMS(ndf_box_params)

#define NDF_NOLOAD (-2147483647 - 1)

// Offset (within a plane) of staged element e, or NDF_NOLOAD when it reads
// cval.  The host guarantees every in-plane offset fits in an int.
// Out of line: it runs once per block, and inlining it NLOAD times only
// lengthens the compile.
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

extern "C" __global__ void __launch_bounds__(NT) ndf_grey_box(const ndf_box_params p) {
  __shared__ T tile[NSTAGE_BUF][SH][SW];
#if SEP
  __shared__ T hx[SH][XT];
#endif
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * TX + tx;
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
    T ring[KZ][VX];
#if NDF_ASYNC
    // Stage plane zi into buffer zi % STAGES: cp.async where it reads the image, cval elsewhere.
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
      const T (*t)[SW] = tile[cur];
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
      const T (*t)[SW] = tile[0];
#endif
      // Shift the ring and reduce this plane over KY x KX.
#if SEP
#pragma unroll
      for (int i = 0; i < HLOAD; i++) {
        const int e = tid + i * NT;
        if (e < SH * XT) {
          const int row = e / XT, col = e - row * XT;
          T m = t[row][col];
#pragma unroll
          for (int dx = 1; dx < KX; dx++) m = ndf_pick<OP, T>(m, t[row][col + dx]);
          hx[row][col] = m;
        }
      }
      __syncthreads();  // hx is complete; the next plane's top-of-loop sync guards its reuse
#pragma unroll
      for (int j = 0; j < VX; j++) {
#pragma unroll
        for (int q = 0; q < KZ - 1; q++) ring[q][j] = ring[q + 1][j];
        const int cx = tx + TX * j;
        T m = hx[ty][cx];
#pragma unroll
        for (int dy = 1; dy < KY; dy++) m = ndf_pick<OP, T>(m, hx[ty + dy][cx]);
        ring[KZ - 1][j] = m;
      }
#else
#pragma unroll
      for (int j = 0; j < VX; j++) {
#pragma unroll
        for (int q = 0; q < KZ - 1; q++) ring[q][j] = ring[q + 1][j];
        const int cx = tx + TX * j;
        T m = t[ty][cx];
#pragma unroll
        for (int dy = 0; dy < KY; dy++)
#pragma unroll
          for (int dx = 0; dx < KX; dx++) m = ndf_pick<OP, T>(m, t[ty + dy][cx + dx]);
        ring[KZ - 1][j] = m;
      }
#endif
      const ndf_i64 zo = zi - p.lz - (KZ - 1);  // output plane completed by this input plane
      const ndf_i64 yo = y0 + ty;
      if (zo >= z0 && yo < p.ny) {
#pragma unroll
        for (int j = 0; j < VX; j++) {
          const ndf_i64 xo = x0 + tx + TX * j;
          if (xo < p.nx) {
            T m = ring[0][j];
#pragma unroll
            for (int q = 1; q < KZ; q++) m = ndf_pick<OP, T>(m, ring[q][j]);
            p.out[obase + zo * p.osz + yo * p.osy + xo * p.osx] = m;
          }
        }
      }
    }
#if NDF_ASYNC
    asm volatile("cp.async.wait_all;\n" ::);
#endif
    __syncthreads();
  }
}
