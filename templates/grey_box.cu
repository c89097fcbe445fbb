// grey_box.cu -- grey erosion/dilation with a flat box element of at most
// 3 axes (the last three spatial axes, Z, Y, X), in one fused pass.
//
// A block owns a tile of TY rows x (32*VX) columns and marches along Z over
// ZC output planes.  Each input plane (with its Y/X halo, boundary mode
// applied) is staged in shared memory once; its KY x KX reduction is kept in
// a ring of KZ registers per output, so every input byte is read from DRAM
// about once.  The next plane's loads are issued before the current plane is
// reduced, to keep bytes in flight.
//
//   out[z,y,x] = OP over dz<KZ, dy<KY, dx<KX of in[z+LZ+dz, y+LY+dy, x+LX+dx]
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

#define TX 32
#define NT (TX * TY)
#define XT (TX * VX)              /* output columns per tile */
#define SW (XT + KX - 1)          /* staged columns */
#define SH (TY + KY - 1)          /* staged rows */
#define NLOAD ((SH * SW + NT - 1) / NT)

struct ndf_box_params {
  const T *in;
  T *out;
  ndf_i64 nz, ny, nx;             // extents of the Z, Y, X axes
  ndf_i64 isz, isy, isx;          // input strides (elements)
  ndf_i64 osz, osy, osx;          // output strides
  int lz, ly, lx;                 // offset of the first tap per axis
  int nb;                         // outer axes (batch and untouched spatial axes)
  ndf_i64 bshape[NDF_MAX_NDIM], bistr[NDF_MAX_NDIM], bostr[NDF_MAX_NDIM];
  ndf_i64 ntx, nty, ntz, nouter;  // tiles along X, Y, Z chunks, outer images
  double cval;
};

extern "C" __global__ void __launch_bounds__(NT) ndf_grey_box(const ndf_box_params p) {
  __shared__ T tile[SH][SW];
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

    // Per-thread staged elements: their (row, col) in the tile and source offsets.
    ndf_i64 soff[NLOAD];
    bool sin[NLOAD];
#pragma unroll
    for (int i = 0; i < NLOAD; i++) {
      int e = tid + i * NT;
      int row = e / SW, col = e - (e / SW) * SW;
      ndf_i64 yy = ndf_map(y0 + p.ly + row, p.ny, MODE);
      ndf_i64 xx = ndf_map(x0 + p.lx + col, p.nx, MODE);
      sin[i] = e < SH * SW && yy >= 0 && xx >= 0;
      soff[i] = sin[i] ? yy * p.isy + xx * p.isx : 0;
    }

    T ring[KZ][VX];
    T next[NLOAD];
    // Issue the loads of the first input plane.
    const ndf_i64 zfirst = z0 + p.lz, zlast = zend - 1 + p.lz + KZ - 1;
    {
      ndf_i64 zz = ndf_map(zfirst, p.nz, MODE);
#pragma unroll
      for (int i = 0; i < NLOAD; i++) next[i] = (zz >= 0 && sin[i]) ? __ldg(img + zz * p.isz + soff[i]) : cv;
    }
    for (ndf_i64 zi = zfirst; zi <= zlast; zi++) {
      __syncthreads();  // the previous plane's readers are done with the tile
#pragma unroll
      for (int i = 0; i < NLOAD; i++) {
        int e = tid + i * NT;
        if (e < SH * SW) (&tile[0][0])[e] = next[i];
      }
      __syncthreads();
      if (zi < zlast) {  // prefetch the next plane while this one is reduced
        ndf_i64 zz = ndf_map(zi + 1, p.nz, MODE);
#pragma unroll
        for (int i = 0; i < NLOAD; i++) next[i] = (zz >= 0 && sin[i]) ? __ldg(img + zz * p.isz + soff[i]) : cv;
      }
      // Shift the ring and reduce this plane over KY x KX.
#pragma unroll
      for (int j = 0; j < VX; j++) {
#pragma unroll
        for (int q = 0; q < KZ - 1; q++) ring[q][j] = ring[q + 1][j];
        const int cx = tx + TX * j;
        T m = tile[ty][cx];
#pragma unroll
        for (int dy = 0; dy < KY; dy++)
#pragma unroll
          for (int dx = 0; dx < KX; dx++) m = ndf_pick<OP, T>(m, tile[ty + dy][cx + dx]);
        ring[KZ - 1][j] = m;
      }
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
    __syncthreads();
  }
}
