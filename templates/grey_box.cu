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

#include "grey_stage.cuh"

extern "C" __global__ void __launch_bounds__(NT) ndf_grey_box(const ndf_box_params p) {
  __shared__ T tile[NSTAGE_BUF][SH][SW];
#if SEP
  __shared__ T hx[SH][XT];
#endif
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * TX + tx;
  const T cv = (T)p.cval;
  const ndf_i64 nblocks = p.ntx * p.nty * p.ntz * p.nouter;
  for (ndf_i64 blk = blockIdx.x; blk < nblocks; blk += gridDim.x) {
    NDF_TILE_OF(blk);
    const T *img = p.in + ibase;
    const ndf_i64 x0 = bx * XT, y0 = by * TY, z0 = bz * ZC;
    const ndf_i64 zend = min(z0 + (ndf_i64)ZC, p.nz);   // output planes [z0, zend)

    NDF_STAGE_OFFSETS(y0 + p.ly, x0 + p.lx);

    const ndf_i64 zfirst = z0 + p.lz, zlast = zend - 1 + p.lz + KZ - 1;
    T ring[KZ][VX];
    NDF_STAGE_FIRST(zfirst);
    for (ndf_i64 zi = zfirst; zi <= zlast; zi++) {
      NDF_STAGE_NEXT(t, zi);
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
    NDF_STAGE_DONE();
    __syncthreads();
  }
}
