// bet.cu -- skull stripping by FSL BET's surface model (Smith 2002) on the
// device; the arithmetic is bet_mesh.cuh, which the CPU backend compiles too.
//
//   ndf_bet_load      img = the input as floats in bricks (bet_index); the
//                     host has cleared the padding
//   ndf_bet_step      one simultaneous update of every vertex: npos from pos
//                     (one thread a vertex); the host launches it once per
//                     iteration, swapping pos and npos
//   ndf_bet_voxelize  one thread a column (axis 2): the crossings of the
//                     column with every triangle, sorted, and the voxels
//                     with an odd number of crossings below their centres
//                     set to 1, the others to 0; status[0] = 1 when a column
//                     crosses more than NDF_BET_MAXHIT triangles (then that
//                     column is left unwritten and the host reports it)
#include "ndf_common.cuh"
#include "bet_mesh.cuh"

typedef NDF_SLOT(T) T;

// The slots of the consts array, in this order.
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
#define NDF_BET_C_L 14
#define NDF_BET_MAXHIT 256

NDF_PARAMS(ndf_bet_load_params)

#if NDF_KERNEL(ndf_bet_load)
extern "C" __global__ void __launch_bounds__(256) ndf_bet_load(const ndf_bet_load_params p) {
  for (ndf_i64 i = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += (ndf_i64)gridDim.x * blockDim.x) {
    const ndf_i64 i2 = i % p.shape[2], r = i / p.shape[2], i1 = r % p.shape[1], i0 = r / p.shape[1];
    p.img[bet_index(p.shape, i0, i1, i2)] = (float)p.in[i0 * p.str[0] + i1 * p.str[1] + i2 * p.str[2]];
  }
}
#endif

NDF_PARAMS(ndf_bet_step_params)

#if NDF_KERNEL(ndf_bet_step)
extern "C" __global__ void __launch_bounds__(128) ndf_bet_step(const ndf_bet_step_params p) {
  const int v = blockIdx.x * blockDim.x + threadIdx.x;
  if (v >= p.nv) return;
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
  c.l = p.c[NDF_BET_C_L];
  bet_vertex_update(p.pos, p.ring, v, &c, p.img, p.npos + 3 * (ndf_i64)v);
}
#endif

NDF_PARAMS(ndf_bet_voxelize_params)

#if NDF_KERNEL(ndf_bet_voxelize)
extern "C" __global__ void __launch_bounds__(128) ndf_bet_voxelize(const ndf_bet_voxelize_params p) {
  const ndf_i64 col = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x;
  if (col >= p.shape[0] * p.shape[1]) return;
  const ndf_i64 x = col / p.shape[1], y = col % p.shape[1];
  const double px = (double)x, py = (double)y;
  double hit[NDF_BET_MAXHIT];
  int nh = 0;
  for (int t = 0; t < p.nt; t++) {
    const double *a = p.vx + 3 * p.tri[3 * t], *b = p.vx + 3 * p.tri[3 * t + 1], *q = p.vx + 3 * p.tri[3 * t + 2];
    // the bounding box first: the same columns the CPU backend visits
    const double lo0 = fmin(a[0], fmin(b[0], q[0])), hi0 = fmax(a[0], fmax(b[0], q[0]));
    const double lo1 = fmin(a[1], fmin(b[1], q[1])), hi1 = fmax(a[1], fmax(b[1], q[1]));
    if (!isfinite(lo0) || !isfinite(lo1) || !isfinite(hi0) || !isfinite(hi1)) continue; // as the CPU
    if (px < lo0 || px > hi0 || py < lo1 || py > hi1) continue;
    double z;
    if (!bet_tri_hit(a, b, q, px, py, &z)) continue;
    if (nh == NDF_BET_MAXHIT) {
      p.status[0] = 1;
      return;
    }
    int j = nh++;
    for (; j > 0 && hit[j - 1] > z; j--) hit[j] = hit[j - 1];
    hit[j] = z;
  }
  int h = 0;
  for (ndf_i64 z = 0; z < p.shape[2]; z++) {
    while (h < nh && hit[h] < (double)z) h++;
    p.out[x * p.ostr[0] + y * p.ostr[1] + z * p.ostr[2]] = (unsigned char)(h & 1);
  }
}
#endif
