// grey_boxd.cu -- grey erosion/dilation with a flat box element of at most
// 3 axes (the last three spatial axes, Z, Y, X), in one fused pass, each
// axis reduced by doubling: about log2(K) picks per output and axis instead
// of K - 1 (3 instead of 6 for K = 7).
//
//   out[z,y,x] = OP over dz<KZ, dy<KY, dx<KX of in[z+LZ+dz, y+LY+dy, x+LX+dx]
//
// A block of 128 x NRC threads owns a tile of TY = RY*NRC rows x XT = 128
// columns and marches along Z over zc output planes (a run-time argument).
// For each input plane:
//   1. the plane (with its Y/X halo, boundary mode applied) is staged in
//      shared memory, STAGES deep with cp.async (sm_80+, 4-byte types) or
//      prefetched through registers;
//   2. X: a warp takes a staged row, each lane 4 consecutive outputs from
//      4 + KX - 1 values (vector loads), reduced by doubling in registers,
//      into hx[SH][XT];
//   3. Y: thread (c, rc) reads RY + KY - 1 values of column c of hx and
//      reduces them by doubling into RY values;
//   4. Z: each of the thread's RY outputs keeps KZ - 1 values of history
//      and folds the new value in by streaming doubling (ndf_zstream).
// Doubling: m_2W[i] = OP(m_W[i], m_W[i+W]) while 2W <= K, then
// m_K[i] = OP(m_W[i], m_W[i+K-W]) (overlapping when K is no power of 2).
// Every OP keeps the operand that covers earlier positions first: along an
// axis the result is the leftmost of equal extrema and the rightmost NaN, and
// X, then Y, then Z make it the first of equal extrema (the last NaN) in
// raster order of the window: the fold of grey_box and the CPU's box passes
// (last axis first), bit for bit, -0.0 against 0.0 included (ADR 0008).
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
#define RY NDF_SLOT(RY)       /* rows per thread */
#define TSIZE NDF_SLOT(TSIZE) /* sizeof(T), for the preprocessor */

#define XT 128                    /* columns per tile = threads along X */
#define NRC 2                     /* row chunks = threads along Y */
#define NT (XT * NRC)
#define NW (NT / 32)
#define TY (RY * NRC)             /* rows per tile */
#define R 4                       /* X outputs per lane */
#define NV ((R + KX - 1 + R - 1) / R) /* vectors of R loaded per lane */
#define SW (XT + R * (NV - 1))    /* staged columns (>= XT + KX - 1, a multiple of R) */
#define SH (TY + KY - 1)          /* staged rows */
#define NLOAD ((SH * SW + NT - 1) / NT)

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define NDF_ASYNC (TSIZE == 4)
#else
#define NDF_ASYNC 0
#endif
#define SMEM_OF(st) (((st) * SH * SW + SH * XT) * TSIZE)
#define STAGES (SMEM_OF(3) <= 49152 ? 3 : 2)
#define NSTAGE_BUF (NDF_ASYNC ? STAGES : 1)

NDF_PARAMS(ndf_boxd_params)

#define NDF_STAGE_ZCLAMP 1
#include "grey_stage.cuh"

// R values of T, aligned so that one load/store moves them all (16 bytes
// for 4-byte types).
struct __align__(R * TSIZE) ndf_vecr { T v[R]; };

// a[0 .. N+K-1) -> a[i] = OP a[i .. i+K) for i < N, by doubling (in place,
// ascending: a[i+W] is read before it is overwritten).
template <int K, int N, int W = 1> __device__ __forceinline__ void ndf_dbl(T *a) {
  if constexpr (2 * W <= K) {
#pragma unroll
    for (int i = 0; i < N + K - 2 * W; i++) a[i] = ndf_pick<OP, T>(a[i], a[i + W]);
    ndf_dbl<K, N, 2 * W>(a);
  } else if constexpr (W < K) {
#pragma unroll
    for (int i = 0; i < N; i++) a[i] = ndf_pick<OP, T>(a[i], a[i + K - W]);
  }
}

// Streaming doubling along Z for K <= 7: push(v) takes the value of the
// newest plane t and returns OP over planes t-K+1 .. t, keeping K - 1 values:
// h1 the last m_1 (if K >= 2), h2 the last two m_2 (if K >= 4), hf the last
// K - W values of m_W (W = 4, 2 or 1, the largest power of 2 <= K).
template <int K> struct ndf_zstream {
  static constexpr int W = K >= 4 ? 4 : K >= 2 ? 2 : 1;
  static constexpr int NF = K - W;
  T h1, h2[2], hf[NF > 0 ? NF : 1];
  __device__ __forceinline__ void init(T v) {
    h1 = v;
    h2[0] = h2[1] = v;
#pragma unroll
    for (int i = 0; i < (NF > 0 ? NF : 1); i++) hf[i] = v;
  }
  __device__ __forceinline__ T push(T m) {
    if constexpr (W >= 2) { const T o = h1; h1 = m; m = ndf_pick<OP, T>(o, m); }
    if constexpr (W >= 4) { const T o = h2[0]; h2[0] = h2[1]; h2[1] = m; m = ndf_pick<OP, T>(o, m); }
    if constexpr (NF > 0) {
      const T o = hf[0];
#pragma unroll
      for (int i = 0; i < NF - 1; i++) hf[i] = hf[i + 1];
      hf[NF - 1] = m;
      m = ndf_pick<OP, T>(o, m);
    }
    return m;
  }
};

extern "C" __global__ void __launch_bounds__(NT, 2) ndf_grey_boxd(const ndf_boxd_params p) {
  __shared__ __align__(32) T tile[NSTAGE_BUF][SH][SW];
  __shared__ __align__(32) T hx[SH][XT];
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * XT + tx;
  const int lane = tid & 31, warp = tid >> 5;
  const T cv = (T)p.cval;
  const ndf_i64 nblocks = p.ntx * p.nty * p.ntz * p.nouter;
  for (ndf_i64 blk = blockIdx.x; blk < nblocks; blk += gridDim.x) {
    NDF_TILE_OF(blk);
    const T *img = p.in + ibase;
    const ndf_i64 x0 = bx * XT, y0 = by * TY, z0 = bz * p.zc;
    const ndf_i64 zend = min(z0 + p.zc, p.nz);   // output planes [z0, zend)

    NDF_STAGE_OFFSETS(y0 + p.ly, x0 + p.lx);

    const ndf_i64 zfirst = z0 + p.lz, zlast = zend - 1 + p.lz + KZ - 1;
    ndf_zstream<KZ> zs[RY];
#pragma unroll
    for (int j = 0; j < RY; j++) zs[j].init(cv);
    // Output row of this thread's first value, and where its outputs go.
    const ndf_i64 yo0 = y0 + ty * RY, xo = x0 + tx;
    T *const optr = p.out + obase + yo0 * p.osy + xo * p.osx;
    NDF_STAGE_FIRST(zfirst);
    for (ndf_i64 zi = zfirst; zi <= zlast; zi++) {
      NDF_STAGE_NEXT(t, zi);  // its barrier also frees hx
      // X: row `row`, outputs 4*lane .. 4*lane+3.
      for (int row = warp; row < SH; row += NW) {
        T a[NV * R];
#pragma unroll
        for (int v = 0; v < NV; v++) {
          const ndf_vecr w = *(const ndf_vecr *)&t[row][R * (lane + v)];
#pragma unroll
          for (int q = 0; q < R; q++) a[v * R + q] = w.v[q];
        }
        ndf_dbl<KX, R>(a);
        ndf_vecr o;
#pragma unroll
        for (int q = 0; q < R; q++) o.v[q] = a[q];
        *(ndf_vecr *)&hx[row][R * lane] = o;
      }
      __syncthreads();  // hx is complete; the next plane's top-of-loop sync guards its reuse
      // Y: rows ty*RY .. ty*RY + RY + KY - 2 of column tx.
      T b[RY + KY - 1];
#pragma unroll
      for (int i = 0; i < RY + KY - 1; i++) b[i] = hx[ty * RY + i][tx];
      ndf_dbl<KY, RY>(b);
      // Z: fold in, store the output plane this input plane completes.
      const ndf_i64 zo = zi - p.lz - (KZ - 1);
      const bool st = zo >= z0 && xo < p.nx;
      T *const orow = optr + zo * p.osz;
#pragma unroll
      for (int j = 0; j < RY; j++) {
        const T m = zs[j].push(b[j]);
        if (st && yo0 + j < p.ny) orow[j * p.osy] = m;
      }
    }
    NDF_STAGE_DONE();
    __syncthreads();
  }
}
