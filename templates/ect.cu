// ect.cu -- Euler characteristic transform on CUDA (runtime/ect_cuda.c,
// docs/adr/0011-euler-characteristic-transform.md "How the CUDA path slots
// in").  Binary ECT: equal to the CPU backend's exactly; weighted ECT: the
// same per-voxel signed weights as the CPU, summed by float64 atomics (so to
// rounding, not bit for bit).
//
//   ndf_ect_hist   one launch over (voxel tile, direction group, image).  A
//                  block stages its tile + 1-voxel halo of the shape (state:
//                  outside / off the support / on it; weighted: the weights)
//                  once, then per direction of its group computes the heights
//                  of the staged voxels in double exactly as ect.c does
//                  (((0 + x0 u0) + x1 u1) + x2 u2, __dmul_rn/__dadd_rn: no
//                  FMA), NaN outside the image and +inf off the shape; each
//                  thread takes its voxel's win word (ndf_ecc.cuh, ties by
//                  (height, linear index)), c(v) from the generated cell list
//                  (binary) or the signed weight of the cells it owns
//                  (weighted: V min over the cell's vertices, T max over the
//                  shape's top cells holding it, summed in ect.c's cell
//                  order), finds its threshold bin (bin k: t_{k-1} < h <= t_k
//                  of the sorted thresholds; evenly spaced: a first guess
//                  corrected against the exact thresholds) and adds to a
//                  shared histogram; one global atomic per non-zero bin per
//                  (block, direction) into hist[img][j][k].  Too many
//                  thresholds for shared memory: straight to global.
//   ndf_ect_final  per (image, direction) the prefix sum over the sorted
//                  bins, written in the caller's threshold order (perm) with
//                  the output's strides.
#include "ndf_common.cuh"
#include "ndf_ecc.cuh"

typedef NDF_SLOT(TIN) TIN; // input element type
#define NSP NDF_SLOT(NSP)   // spatial axes, 2 or 3
#define CONS NDF_SLOT(CONS) // 0 V-construction, 1 T-construction
#define WT NDF_SLOT(WT)     // 1: weighted ECT (float64 sums), 0: binary (int64 counts)

typedef unsigned long long ndf_u64;

#define NDF_TX (NSP == 3 ? 8 : 16)
#define NDF_TY (NSP == 3 ? 8 : 16)
#define NDF_TZ (NSP == 3 ? 4 : 1)
#define NDF_HX (NDF_TX + 2)
#define NDF_HY (NDF_TY + 2)
#define NDF_HZ (NSP == 3 ? NDF_TZ + 2 : 1)
#define NDF_HS (NDF_HX * NDF_HY * NDF_HZ)

NDF_PARAMS(ndf_ect_params)

__device__ __forceinline__ double ndf_ect_nan() { return __longlong_as_double(0x7ff8000000000000LL); }
__device__ __forceinline__ double ndf_ect_inf() { return __longlong_as_double(0x7ff0000000000000LL); }

#if NDF_KERNEL(ndf_ect_hist)
extern "C" __global__ void __launch_bounds__(256) ndf_ect_hist(const ndf_ect_params p) {
  __shared__ unsigned char st[NDF_HS]; // 0 outside the image, 1 off the shape, 2 on it
  __shared__ double hh[NDF_HS];        // heights of the current direction
#if WT
  __shared__ double wt[NDF_HS];        // weights (0 off the shape)
#endif
  extern __shared__ double dyn[];      // smem: the T thresholds, then T counters (int or double)
  const int tid = threadIdx.x, lane = tid & 31;
  const double *ts = p.smem ? dyn : p.ts;
#if WT
  double *shist = dyn + p.T;
#else
  int *shist = (int *)(dyn + p.T);
#endif
  if (p.smem) {
    for (ndf_i64 k = tid; k < p.T; k += 256) {
      dyn[k] = p.ts[k];
      shist[k] = 0;
    }
  }
  ndf_i64 item = blockIdx.x;
  const ndf_i64 grp = item % p.ngroups;
  item /= p.ngroups;
  const ndf_i64 ntile = p.ntx * p.nty * p.ntz;
  const ndf_i64 tile = item % ntile, img = item / ntile;
  const ndf_i64 x0 = (tile % p.ntx) * NDF_TX, y0 = ((tile / p.ntx) % p.nty) * NDF_TY,
                z0 = (tile / (p.ntx * p.nty)) * NDF_TZ;
  ndf_i64 base = 0, q = img;
  for (int d = p.nb - 1; d >= 0; d--) {
    base += (q % p.bshape[d]) * p.bstr[d];
    q /= p.bshape[d];
  }
  const TIN *in = p.in + base;
  const double *cz = p.coord, *cy = NSP == 3 ? p.coord + p.nz : p.coord, *cx = cy + p.ny;
  // stage the shape (and weights) of tile + halo
  for (int i = tid; i < NDF_HS; i += 256) {
    const int hx = i % NDF_HX, hy = (i / NDF_HX) % NDF_HY, hz = i / (NDF_HX * NDF_HY);
    const ndf_i64 xx = x0 - 1 + hx, yy = y0 - 1 + hy, zz = NSP == 3 ? z0 - 1 + hz : 0;
    unsigned char s = 0;
    double w = 0;
    if (zz >= 0 && zz < p.nz && yy >= 0 && yy < p.ny && xx >= 0 && xx < p.nx) {
      const double v = (double)in[zz * p.sz + yy * p.sy + xx * p.sx];
      s = v != 0 ? 2 : 1;
      w = v != 0 ? v : 0.0;
    }
    st[i] = s;
#if WT
    wt[i] = w;
#else
    (void)w;
#endif
  }
  const int tx = tid % NDF_TX, ty = (tid / NDF_TX) % NDF_TY, tz = tid / (NDF_TX * NDF_TY);
  const int ci = ((NSP == 3 ? tz + 1 : 0) * NDF_HY + ty + 1) * NDF_HX + tx + 1;
  const ndf_i64 j0 = grp * p.G, j1 = min(j0 + p.G, p.m);
  __syncthreads();
  const bool mine = st[ci] == 2; // false also outside the image
  for (ndf_i64 j = j0; j < j1; j++) {
    const double u0 = p.dirs[j * NSP], u1 = p.dirs[j * NSP + 1], u2 = NSP == 3 ? p.dirs[j * NSP + 2] : 0.0;
    for (int i = tid; i < NDF_HS; i += 256) {
      const unsigned char s = st[i];
      double h = s == 0 ? ndf_ect_nan() : ndf_ect_inf();
      if (s == 2) {
        const int hx = i % NDF_HX, hy = (i / NDF_HX) % NDF_HY, hz = i / (NDF_HX * NDF_HY);
        const ndf_i64 xx = x0 - 1 + hx, yy = y0 - 1 + hy;
        double pre = 0.0;
        if (NSP == 3) {
          pre = __dadd_rn(pre, __dmul_rn(cz[z0 - 1 + hz], u0));
          pre = __dadd_rn(pre, __dmul_rn(cy[yy], u1));
          h = __dadd_rn(pre, __dmul_rn(cx[xx], u2));
        } else {
          pre = __dadd_rn(pre, __dmul_rn(cy[yy], u0));
          h = __dadd_rn(pre, __dmul_rn(cx[xx], u1));
        }
      }
      hh[i] = h;
    }
    __syncthreads();
    double h = 0;
#if WT
    double cw = 0;
#else
    int cw = 0;
#endif
    if (mine) {
      h = hh[ci];
      auto at = [&](int t) -> double {
        const int dz = NSP == 3 ? t / 9 - 1 : 0, dy = (NSP == 3 ? (t / 3) % 3 : t / 3) - 1, dx = t % 3 - 1;
        return hh[ci + (dz * NDF_HY + dy) * NDF_HX + dx];
      };
#if WT
      const unsigned w = ndf_ecc_win_word<NSP, CONS, double>(h, at);
      auto noff = [&](int b) {
        const int dz = NSP == 3 ? b / 9 - 1 : 0, dy = (NSP == 3 ? (b / 3) % 3 : b / 3) - 1, dx = b % 3 - 1;
        return ci + (dz * NDF_HY + dy) * NDF_HX + dx;
      };
      // cells in ect.c's pattern order; weight: V min over the vertices, T max over the shape's top cells
#define NDF_ECT_CELL(M, K)                                                    \
  if ((w & (M)) == (M)) {                                                     \
    double cwt = wt[ci];                                                      \
    unsigned mm = (M);                                                        \
    while (mm) {                                                              \
      const int b = __ffs(mm) - 1;                                            \
      mm &= mm - 1;                                                           \
      const int o = noff(b);                                                  \
      if (CONS == 0) {                                                        \
        if (wt[o] < cwt) cwt = wt[o];                                         \
      } else {                                                                \
        if (st[o] == 2 && wt[o] > cwt) cwt = wt[o];                           \
      }                                                                       \
    }                                                                         \
    cw += ((((CONS == 0) ? (K) : (NSP - (K))) & 1) ? -cwt : cwt);             \
  }
      if (NSP == 2) {
        NDF_ECC_CELLS2(NDF_ECT_CELL)
      } else {
        NDF_ECC_CELLS3(NDF_ECT_CELL)
      }
#undef NDF_ECT_CELL
#else
      cw = ndf_ecc_contribution<NSP, CONS, double>(h, at);
#endif
    }
    int bin = (int)p.T;
    if (cw != 0) {
      ndf_i64 k;
      if (p.uniform) {
        const double g = ceil((h - p.lo) * p.inv_step);
        k = g <= 0 ? 0 : g >= (double)p.T ? p.T : (ndf_i64)g;
        while (k > 0 && h <= ts[k - 1]) k--;
        while (k < p.T && h > ts[k]) k++;
      } else {
        ndf_i64 a = 0, b = p.T;
        while (a < b) {
          const ndf_i64 mid = a + (b - a) / 2;
          if (h <= ts[mid]) b = mid;
          else a = mid + 1;
        }
        k = a;
      }
      bin = (int)k;
    }
    const bool add = cw != 0 && bin < p.T;
    ndf_u64 *gh = p.hist + (img * p.m + j) * p.T;
#if WT
    if (add) {
      if (p.smem) atomicAdd(&shist[bin], cw);
      else atomicAdd((double *)&gh[bin], cw);
    }
#else
    const unsigned act = __ballot_sync(0xffffffffu, add);
    if (add) {
      const unsigned peers = __match_any_sync(act, bin);
      const int sum = __reduce_add_sync(peers, cw);
      if (lane == __ffs(peers) - 1) {
        if (p.smem) atomicAdd(&shist[bin], sum);
        else atomicAdd(&gh[bin], (ndf_u64)(long long)sum);
      }
    }
#endif
    __syncthreads(); // heights and the shared histogram are done with
    if (p.smem) {
      for (ndf_i64 k = tid; k < p.T; k += 256) {
        if (shist[k] != 0) {
#if WT
          atomicAdd((double *)&gh[k], shist[k]);
#else
          atomicAdd(&gh[k], (ndf_u64)(long long)shist[k]);
#endif
          shist[k] = 0;
        }
      }
      __syncthreads();
    }
  }
  (void)lane;
}
#endif

// ---- prefix sums in the caller's order -----------------------------------------------------------
NDF_PARAMS(ndf_ect_final_params)

#if WT
typedef double ndf_ect_acc;
__device__ __forceinline__ double ndf_ect_load(ndf_u64 v) { return __longlong_as_double((long long)v); }
__device__ __forceinline__ ndf_u64 ndf_ect_bits(double v) { return (ndf_u64)__double_as_longlong(v); }
#else
typedef long long ndf_ect_acc;
__device__ __forceinline__ long long ndf_ect_load(ndf_u64 v) { return (long long)v; }
__device__ __forceinline__ ndf_u64 ndf_ect_bits(long long v) { return (ndf_u64)v; }
#endif

#if NDF_KERNEL(ndf_ect_final)
extern "C" __global__ void __launch_bounds__(256) ndf_ect_final(const ndf_ect_final_params p) {
  __shared__ ndf_ect_acc wsum[8];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (ndf_i64 pair = blockIdx.x; pair < p.nimg * p.m; pair += gridDim.x) {
    const ndf_i64 img = pair / p.m, j = pair % p.m;
    ndf_i64 off = j * p.dstep, q = img;
    for (int d = p.nb - 1; d >= 0; d--) {
      off += (q % p.oshape[d]) * p.ostr[d];
      q /= p.oshape[d];
    }
    ndf_ect_acc carry = 0;
    for (ndf_i64 k0 = 0; k0 < p.T; k0 += 256) {
      const ndf_i64 k = k0 + threadIdx.x;
      ndf_ect_acc v = k < p.T ? ndf_ect_load(p.hist[pair * p.T + k]) : (ndf_ect_acc)0;
      for (int o = 1; o < 32; o <<= 1) {
        const ndf_ect_acc u = __shfl_up_sync(0xffffffffu, v, o);
        if (lane >= o) v += u;
      }
      if (lane == 31) wsum[warp] = v;
      __syncthreads();
      ndf_ect_acc before = carry, total = carry;
      for (int w = 0; w < 8; w++) {
        if (w < warp) before += wsum[w];
        total += wsum[w];
      }
      if (k < p.T) p.out[off + p.perm[k] * p.kstep] = ndf_ect_bits(before + v);
      carry = total;
      __syncthreads();
    }
  }
}
#endif
