// bet.cu -- skull stripping by FSL BET's surface model (Smith 2002) on the
// device; the arithmetic is bet_mesh.cuh, which the CPU backend compiles too.
//
//   ndf_bet_load    img = the input as floats in bricks (bet_index; the host
//                   has cleared the padding); stat[0] = the least C-order
//                   index of a non-finite value, stat[1], stat[2] = the least
//                   and greatest key (bet_key) of the values
//   ndf_bet_hist    FSL's robust-range histogram of the image (bet_hist_bin)
//   ndf_bet_planes  a block a plane i0: each row's bet_row_sums, then the
//                   plane's bet_plane_sums in row order (the host sums the
//                   planes in order: the centre of gravity)
//   ndf_bet_select  a 16-bit digit histogram of the keys of tm's voxels
//                   (bet_tm_member), to select their median exactly
//   ndf_bet_evolve  one pass of the surface: a single block runs every
//                   iteration, a thread a few vertices, the Jacobi updates
//                   separated by __syncthreads; bet2's mean edge length is
//                   summed by one thread in vertex order, as on the host
//   ndf_bet_fill    one thread a column (axis 2): the voxels with an odd
//                   number of the column's crossings (computed on the host)
//                   below their centres set to 1, the others to 0
// Every count is an integer atomic and every floating sum has a fixed order,
// so the setup, the surface and the mask equal the CPU backend's bit for bit.
#include "ndf_common.cuh"
#include "bet_mesh.cuh"

typedef NDF_SLOT(T) T;

// The slots of the evolve consts array, in this order.
#define NDF_BET_C_SPACING 0 // 3 values
#define NDF_BET_C_T2 3
#define NDF_BET_C_T 4
#define NDF_BET_C_TM 5
#define NDF_BET_C_BT 6
#define NDF_BET_C_GRADIENT 7
#define NDF_BET_C_COG2 8
#define NDF_BET_C_RADIUS 9
#define NDF_BET_C_E 10
#define NDF_BET_C_F 11
#define NDF_BET_C_D1 12
#define NDF_BET_C_D2 13
#define NDF_BET_C_DSCALE 14

NDF_PARAMS(ndf_bet_load_params)

#if NDF_KERNEL(ndf_bet_load)
extern "C" __global__ void __launch_bounds__(256) ndf_bet_load(const ndf_bet_load_params p) {
  unsigned long long bad = ~0ull, kmin = ~0ull, kmax = 0;
  for (ndf_i64 i = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += (ndf_i64)gridDim.x * blockDim.x) {
    const ndf_i64 i2 = i % p.shape[2], r = i / p.shape[2], i1 = r % p.shape[1], i0 = r / p.shape[1];
    const float v = (float)p.in[i0 * p.str[0] + i1 * p.str[1] + i2 * p.str[2]];
    p.img[bet_index(p.shape, i0, i1, i2)] = v;
    if (!isfinite(v)) {
      if ((unsigned long long)i < bad) bad = (unsigned long long)i;
      continue;
    }
    const unsigned long long k = bet_key(v);
    kmin = k < kmin ? k : kmin;
    kmax = k > kmax ? k : kmax;
  }
  for (int o = 16; o > 0; o >>= 1) {
    const unsigned long long b = __shfl_down_sync(0xffffffffu, bad, o), a = __shfl_down_sync(0xffffffffu, kmin, o),
                             c = __shfl_down_sync(0xffffffffu, kmax, o);
    bad = b < bad ? b : bad;
    kmin = a < kmin ? a : kmin;
    kmax = c > kmax ? c : kmax;
  }
  if ((threadIdx.x & 31) == 0) {
    if (bad != ~0ull) atomicMin(&p.stat[0], bad);
    atomicMin(&p.stat[1], kmin);
    atomicMax(&p.stat[2], kmax);
  }
}
#endif

NDF_PARAMS(ndf_bet_hist_params)

#if NDF_KERNEL(ndf_bet_hist)
extern "C" __global__ void __launch_bounds__(256) ndf_bet_hist(const ndf_bet_hist_params p) {
  __shared__ unsigned int h[BET_HIST_BINS];
  for (int k = threadIdx.x; k < BET_HIST_BINS; k += blockDim.x) h[k] = 0;
  __syncthreads();
  for (ndf_i64 i = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += (ndf_i64)gridDim.x * blockDim.x) {
    const ndf_i64 i2 = i % p.shape[2], r = i / p.shape[2], i1 = r % p.shape[1], i0 = r / p.shape[1];
    atomicAdd(&h[bet_hist_bin((double)p.img[bet_index(p.shape, i0, i1, i2)], p.fa, p.fb)], 1u);
  }
  __syncthreads();
  for (int k = threadIdx.x; k < BET_HIST_BINS; k += blockDim.x)
    if (h[k]) atomicAdd(&p.counts[k], (unsigned long long)h[k]);
}
#endif

NDF_PARAMS(ndf_bet_planes_params)

#if NDF_KERNEL(ndf_bet_planes)
extern "C" __global__ void __launch_bounds__(256) ndf_bet_planes(const ndf_bet_planes_params p) {
  const ndf_i64 i0 = blockIdx.x, n1 = p.shape[1];
  double *rows = p.rows + 2 * i0 * n1;
  unsigned long long count = 0;
  for (ndf_i64 i1 = threadIdx.x; i1 < n1; i1 += blockDim.x) {
    ndf_i64 k;
    bet_row_sums(p.img, p.shape, i0, i1, p.t[0], p.t[1], p.t[2], rows + 2 * i1, &k);
    count += (unsigned long long)k;
  }
  if (count) atomicAdd(p.count, count);
  __syncthreads();
  if (threadIdx.x == 0) bet_plane_sums(rows, n1, p.planes + 3 * i0);
}
#endif

NDF_PARAMS(ndf_bet_select_params)

#if NDF_KERNEL(ndf_bet_select)
extern "C" __global__ void __launch_bounds__(256) ndf_bet_select(const ndf_bet_select_params p) {
  for (ndf_i64 i = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += (ndf_i64)gridDim.x * blockDim.x) {
    const ndf_i64 i2 = i % p.shape[2], r = i / p.shape[2], i1 = r % p.shape[1], i0 = r / p.shape[1];
    const float v = p.img[bet_index(p.shape, i0, i1, i2)];
    if (!bet_tm_member((double)v, i0, i1, i2, p.c, p.c + 3, p.c[6], p.c[7], p.c[8])) continue;
    const unsigned int k = bet_key(v);
    if (p.level == 0) atomicAdd(&p.counts[k >> 16], 1ull);
    else if (k >> 16 == p.prefix) atomicAdd(&p.counts[k & 0xffffu], 1ull);
  }
}
#endif

NDF_PARAMS(ndf_bet_evolve_params)

#if NDF_KERNEL(ndf_bet_evolve)
extern "C" __global__ void __launch_bounds__(1024) ndf_bet_evolve(const ndf_bet_evolve_params p) {
  __shared__ double mean_edge;
  bet_consts c;
  for (int d = 0; d < 3; d++) {
    c.shape[d] = p.shape[d];
    c.spacing[d] = p.c[NDF_BET_C_SPACING + d];
  }
  c.t2 = p.c[NDF_BET_C_T2];
  c.t = p.c[NDF_BET_C_T];
  c.tm = p.c[NDF_BET_C_TM];
  c.bt = p.c[NDF_BET_C_BT];
  c.gradient = p.c[NDF_BET_C_GRADIENT];
  c.cog2 = p.c[NDF_BET_C_COG2];
  c.radius = p.c[NDF_BET_C_RADIUS];
  c.E = p.c[NDF_BET_C_E];
  c.F = p.c[NDF_BET_C_F];
  c.d1 = p.c[NDF_BET_C_D1];
  c.d2 = p.c[NDF_BET_C_D2];
  c.dscale = p.c[NDF_BET_C_DSCALE];
  double *a = p.pos, *b = p.npos;
  for (int it = 0; it < p.iterations; it++) {
    if (bet_mean_edge_due(it)) {
      for (int v = threadIdx.x; v < p.nv; v += blockDim.x) p.terms[v] = bet_mean_edge_term(a, p.ring, v);
      __syncthreads();
      if (threadIdx.x == 0) {
        double sum = 0.0;
        for (int v = 0; v < p.nv; v++) sum = BET_ADD(sum, p.terms[v]);
        mean_edge = sum / (double)p.nv;
      }
      __syncthreads();
    }
    c.l = mean_edge;
    c.inc = bet_increase(p.pass, it, p.iterations);
    for (int v = threadIdx.x; v < p.nv; v += blockDim.x) bet_vertex_update(a, p.ring, v, &c, p.img, b + 3 * (ndf_i64)v);
    __syncthreads();
    double *t = a;
    a = b;
    b = t;
  }
}
#endif

NDF_PARAMS(ndf_bet_fill_params)

#if NDF_KERNEL(ndf_bet_fill)
extern "C" __global__ void __launch_bounds__(128) ndf_bet_fill(const ndf_bet_fill_params p) {
  const ndf_i64 col = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x;
  if (col >= p.shape[0] * p.shape[1]) return;
  const ndf_i64 x = col / p.shape[1], y = col % p.shape[1], b = p.start[col], e = p.start[col + 1];
  ndf_i64 h = b;
  for (ndf_i64 z = 0; z < p.shape[2]; z++) {
    while (h < e && p.hits[h] < (double)z) h++;
    p.out[x * p.ostr[0] + y * p.ostr[1] + z * p.ostr[2]] = (unsigned char)((h - b) & 1);
  }
}
#endif
