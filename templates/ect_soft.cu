// ect_soft.cu -- the soft (differentiable) Euler characteristic transform on
// CUDA, forward and backward, all directions of a batch in one launch
// (runtime/ect_cuda.c, docs/adr/0011-euler-characteristic-transform.md).
//
//   chi(img, j, k) = sum_{v in S} cw(v, j) sigmoid(lambda (t_k - h_j(v)))
//
// with h_j(v) = <x(v), u_j> and cw(v, j) the signed weight of the cells v owns
// along u_j (binary: c(v); weighted: each owned cell's weight, V min over its
// vertices, T max over the shape's top cells holding it).
//
//   ndf_ect_soft   one launch over (voxel tile, direction group, image), the
//                  tiles and the staging of ect.cu's ndf_ect_hist: per
//                  direction the block computes the heights of tile + halo in
//                  double exactly as ect.c (__dmul_rn/__dadd_rn in axis
//                  order), each voxel of the shape its cw (binary:
//                  ndf_ecc_contribution; weighted: ect.c's owned_weight cell by
//                  cell, in its pattern order, so cw and the voxel each cell
//                  takes its weight from are the CPU's bit for bit), and the
//                  voxels with cw != 0 are compacted in shared memory. Then
//                    forward   per threshold the sum over the compacted voxels,
//                              one float64 atomic per (block, direction, k)
//                              into acc[img][j][k];
//                    backward  dL/dt: the same per-threshold sums of
//                              lambda g_k cw s(1-s) into acc[img][j][k];
//                              per voxel (a group of P lanes splits the T
//                              thresholds, shuffle-reduced) sd = lambda sum_k
//                              g_k s(1-s) and ss = sum_k g_k s: dL/du_j gets
//                              -cw sd x(v) (block sum, one atomic per axis
//                              into gu[img][j][d]), dL/dweight of each owned
//                              cell's weight voxel gets +-ss (weighted only;
//                              shared accumulators over tile + halo, flushed
//                              with one atomic per voxel per block).
//   ndf_ect_soft_put  what 0: acc into the strided (batch..., m, T) output;
//                     what 1: dL/dt[k] = sum over (img, j) of acc and
//                             dL/du[j][d] = sum over img of gu (fixed order);
//                     what 2: dL/dinput from gw (0 when not weighted) into
//                             the strided float32/float64 grad_input.
// FAST = 1: the sigmoid in float (__expf), sums still in double.
#include "ndf_common.cuh"
#include "ndf_ecc.cuh"

typedef NDF_SLOT(TIN) TIN; // input element type
#define NSP NDF_SLOT(NSP)   // spatial axes, 2 or 3
#define CONS NDF_SLOT(CONS) // 0 V-construction, 1 T-construction
#define WT NDF_SLOT(WT)     // 1: weighted (the image values weight the cells)
#define FAST NDF_SLOT(FAST) // 1: float sigmoid

#define NDF_TX (NSP == 3 ? 8 : 16)
#define NDF_TY (NSP == 3 ? 8 : 16)
#define NDF_TZ (NSP == 3 ? 4 : 1)
#define NDF_HX (NDF_TX + 2)
#define NDF_HY (NDF_TY + 2)
#define NDF_HZ (NSP == 3 ? NDF_TZ + 2 : 1)
#define NDF_HS (NDF_HX * NDF_HY * NDF_HZ)
#define NDF_NPAT (NSP == 3 ? 27 : 9)
#define NDF_KQ 256

NDF_PARAMS(ndf_ects_params)

__device__ __forceinline__ double ndf_ects_nan() { return __longlong_as_double(0x7ff8000000000000LL); }
__device__ __forceinline__ double ndf_ects_inf() { return __longlong_as_double(0x7ff0000000000000LL); }

// ect.c's sigmoid: z >= 0 ? 1 / (1 + e^-z) : e^z / (1 + e^z)
__device__ __forceinline__ double ndf_ects_sig(double z) {
#if FAST
  const float e = __expf(-fabsf((float)z));
  return (double)(z >= 0 ? 1.0f / (1.0f + e) : e / (1.0f + e));
#else
  const double e = exp(-fabs(z));
  return z >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
#endif
}

#if NDF_KERNEL(ndf_ect_soft)
extern "C" __global__ void __launch_bounds__(256) ndf_ect_soft(const ndf_ects_params p) {
  __shared__ unsigned char st[NDF_HS]; // 0 outside the image, 1 off the shape, 2 on it
  __shared__ double hh[NDF_HS];        // heights of the current direction
#if WT
  __shared__ double wt[NDF_HS];        // weights (0 off the shape)
  __shared__ double gws[NDF_HS];       // backward: dL/dweight of tile + halo over the group's directions
  __shared__ signed char pcode[NDF_NPAT][7];
  __shared__ short poff[NDF_NPAT][7];
  __shared__ signed char pn[NDF_NPAT], psign[NDF_NPAT];
#endif
  __shared__ double eh[256], ecw[256], ess[256], part[256];
  __shared__ short eid[256];
  __shared__ double gub[3];
  __shared__ int wcount[8];
  extern __shared__ double dyn[]; // smem: ts[T], then g[T] (backward)
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const double lam = p.lambda;

  ndf_i64 item = blockIdx.x;
  const ndf_i64 grp = item % p.ngroups;
  item /= p.ngroups;
  const ndf_i64 ntile = p.ntx * p.nty * p.ntz;
  const ndf_i64 tile = item % ntile, img = item / ntile;
  const ndf_i64 x0 = (tile % p.ntx) * NDF_TX, y0 = ((tile / p.ntx) % p.nty) * NDF_TY,
                z0 = (tile / (p.ntx * p.nty)) * NDF_TZ;
  ndf_i64 base = 0, gbase = 0, q = img;
  for (int d = p.nb - 1; d >= 0; d--) {
    const ndf_i64 c = q % p.bshape[d];
    base += c * p.bstr[d];
    gbase += c * p.gbstr[d];
    q /= p.bshape[d];
  }
  const TIN *in = p.in + base;
  const double *cz = p.coord, *cy = NSP == 3 ? p.coord + p.nz : p.coord, *cx = cy + p.ny;
  double *sts = dyn, *sgk = dyn + p.T;
  if (p.smem)
    for (ndf_i64 k = tid; k < p.T; k += 256) sts[k] = p.ts[k];
  const double *tsv = p.smem ? sts : p.ts;

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
    gws[i] = 0;
#else
    (void)w;
#endif
  }
#if WT
  // ect.c's make_patterns: pattern t (ternary digits e_d + 1, axis 0 most
  // significant) is decided against v + e restricted to each non-empty subset
  // of its non-zero axes, subsets in binary order (bit i: the i-th non-zero axis)
  if (tid < NDF_NPAT) {
    const int t = tid, centre = NDF_NPAT / 2;
    int e[3], z[3], nz = 0, qq = t;
    for (int d = NSP - 1; d >= 0; d--) {
      e[d] = qq % 3 - 1;
      qq /= 3;
    }
    for (int d = 0; d < NSP; d++)
      if (e[d]) z[nz++] = d;
    int n = 0;
    for (int mask = 1; mask < (1 << nz); mask++) {
      int code = centre, o[3] = {0, 0, 0};
      for (int i = 0; i < nz; i++)
        if (mask >> i & 1) {
          int pw = 1;
          for (int d = z[i] + 1; d < NSP; d++) pw *= 3;
          code += e[z[i]] * pw;
          o[z[i]] = e[z[i]];
        }
      pcode[t][n] = (signed char)code;
      poff[t][n] = NSP == 3 ? (short)((o[0] * NDF_HY + o[1]) * NDF_HX + o[2]) : (short)(o[0] * NDF_HX + o[1]);
      n++;
    }
    pn[t] = (signed char)n;
    const int dim = CONS == 0 ? nz : NSP - nz;
    psign[t] = (signed char)(dim % 2 ? -1 : 1);
  }
#endif
  // halo index of the voxel of thread t
  auto cidx = [](int t) {
    return ((NSP == 3 ? t / (NDF_TX * NDF_TY) + 1 : 0) * NDF_HY + (t / NDF_TX) % NDF_TY + 1) * NDF_HX + t % NDF_TX + 1;
  };
  const int ci = cidx(tid);
  const ndf_i64 j0 = grp * p.G, j1 = min(j0 + p.G, p.m);
  __syncthreads();
  const bool mine = st[ci] == 2; // false also outside the image

  for (ndf_i64 j = j0; j < j1; j++) {
    const double u0 = p.dirs[j * NSP], u1 = p.dirs[j * NSP + 1], u2 = NSP == 3 ? p.dirs[j * NSP + 2] : 0.0;
    for (int i = tid; i < NDF_HS; i += 256) {
      const unsigned char s = st[i];
      double h = s == 0 ? ndf_ects_nan() : ndf_ects_inf();
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
    if (p.mode == 1 && p.smem)
      for (ndf_i64 k = tid; k < p.T; k += 256) sgk[k] = p.g[gbase + j * p.gdstep + k * p.gkstep];
    if (tid < 3) gub[tid] = 0;
    __syncthreads();
    double h = 0, cw = 0;
    if (mine) {
      h = hh[ci];
#if WT
      for (int t = 0; t < NDF_NPAT; t++) {
        double w = wt[ci];
        bool owned = true;
        for (int i = 0; i < pn[t]; i++) {
          const int o = ci + poff[t][i];
          const double fu = hh[o];
          if (!ndf_ecc_wins<CONS, double>(h, fu, pcode[t][i] < NDF_NPAT / 2)) {
            owned = false;
            break;
          }
          if (CONS == 0 ? wt[o] < w : (isfinite(fu) && wt[o] > w)) w = wt[o];
        }
        if (owned) cw += psign[t] * w;
      }
#else
      auto at = [&](int t) -> double {
        const int dz = NSP == 3 ? t / 9 - 1 : 0, dy = (NSP == 3 ? (t / 3) % 3 : t / 3) - 1, dx = t % 3 - 1;
        return hh[ci + (dz * NDF_HY + dy) * NDF_HX + dx];
      };
      cw = (double)ndf_ecc_contribution<NSP, CONS, double>(h, at);
#endif
    }
    // compact the voxels with cw != 0 (CPU: cw != 0 for the sums; weighted backward: every owner)
    const bool keep = mine && cw != 0;
    const unsigned b = __ballot_sync(0xffffffffu, keep);
    if (lane == 0) wcount[warp] = __popc(b);
    __syncthreads();
    int pos = __popc(b & ((1u << lane) - 1)), n = 0;
    for (int w = 0; w < 8; w++) {
      if (w < warp) pos += wcount[w];
      n += wcount[w];
    }
    if (keep) {
      eh[pos] = h;
      ecw[pos] = cw;
      eid[pos] = (short)tid;
    }
    // weighted backward: every owner passes ss to its cells' weights, also with cw == 0 (block-uniform)
    const bool gwv = WT && p.mode == 1 && p.gw != nullptr;
    __syncthreads();
    // per threshold: forward sums / dL/dt terms
    if (n > 0 && (p.mode == 0 || p.want_gt)) {
      const int KQ = p.T >= 256 ? 256 : p.T > 128 ? 256 : p.T > 64 ? 128 : p.T > 32 ? 64 : 32;
      const int parts = 256 / KQ, kk = tid % KQ, pid = tid / KQ;
      for (ndf_i64 k0 = 0; k0 < p.T; k0 += KQ) {
        const ndf_i64 k = k0 + kk;
        double sum = 0;
        if (k < p.T) {
          const double t = tsv[k];
          for (int e = pid; e < n; e += parts) {
            const double s = ndf_ects_sig(lam * (t - eh[e]));
            sum += ecw[e] * (p.mode == 0 ? s : lam * s * (1 - s));
          }
        }
        part[tid] = sum;
        __syncthreads();
        if (pid == 0 && k < p.T) {
          double tot = 0;
          for (int pi = 0; pi < parts; pi++) tot += part[pi * KQ + kk];
          if (p.mode == 1) tot *= p.smem ? sgk[k] : p.g[gbase + j * p.gdstep + k * p.gkstep];
          if (tot != 0) atomicAdd(&p.acc[(img * p.m + j) * p.T + k], tot);
        }
        __syncthreads();
      }
    }
    // per voxel: sd and ss (backward).  Entries: the compacted voxels, or
    // (gwv) every thread's voxel; P lanes split the thresholds of an entry.
    if (p.mode == 1 && (p.gu || gwv) && (n > 0 || gwv)) {
      const int ne = gwv ? 256 : n;
      int P = 32;
      while (P > 1 && ne * P > 256) P >>= 1;
      const int ee = tid / P, pr = tid % P;
      bool ok;
      double he;
      if (gwv) {
        const int c2 = cidx(ee);
        ok = st[c2] == 2;
        he = ok ? hh[c2] : 0.0;
      } else {
        ok = ee < n;
        he = ok ? eh[ee] : 0.0;
      }
      double sd = 0, ss = 0;
      if (ok)
        for (ndf_i64 k = pr; k < p.T; k += P) {
          const double gk = p.smem ? sgk[k] : p.g[gbase + j * p.gdstep + k * p.gkstep];
          const double s = ndf_ects_sig(lam * (tsv[k] - he));
          sd += lam * s * (1 - s) * gk;
          ss += gk * s;
        }
      for (int o = P / 2; o > 0; o >>= 1) {
        sd += __shfl_xor_sync(0xffffffffu, sd, o);
        ss += __shfl_xor_sync(0xffffffffu, ss, o);
      }
      if (ok && pr == 0) {
        ess[ee] = ss;
        part[ee] = sd;
      }
      __syncthreads();
      // dL/du_j: -sum cw sd x(v)
      if (p.gu) {
        double a0 = 0, a1 = 0, a2 = 0;
        const int e = tid;
        if (gwv ? keep : e < n) {
          const int vt = gwv ? tid : eid[e];
          const double c = gwv ? cw : ecw[e], sd = part[e];
          const int vx = vt % NDF_TX, vy = (vt / NDF_TX) % NDF_TY, vz = vt / (NDF_TX * NDF_TY);
          if (NSP == 3) {
            a0 = -c * sd * cz[z0 + vz];
            a1 = -c * sd * cy[y0 + vy];
            a2 = -c * sd * cx[x0 + vx];
          } else {
            a0 = -c * sd * cy[y0 + vy];
            a1 = -c * sd * cx[x0 + vx];
          }
        }
        for (int o = 16; o > 0; o >>= 1) {
          a0 += __shfl_xor_sync(0xffffffffu, a0, o);
          a1 += __shfl_xor_sync(0xffffffffu, a1, o);
          if (NSP == 3) a2 += __shfl_xor_sync(0xffffffffu, a2, o);
        }
        if (lane == 0) {
          atomicAdd(&gub[0], a0);
          atomicAdd(&gub[1], a1);
          if (NSP == 3) atomicAdd(&gub[2], a2);
        }
      }
#if WT
      // dL/dweight: each owned cell's weight voxel gets sign * ss (ect.c's owned_weight, same tie rule)
      if (gwv && mine) {
        const double ss = ess[tid];
        for (int t = 0; t < NDF_NPAT; t++) {
          double w = wt[ci];
          int from = ci;
          bool owned = true;
          for (int i = 0; i < pn[t]; i++) {
            const int o = ci + poff[t][i];
            const double fu = hh[o];
            if (!ndf_ecc_wins<CONS, double>(h, fu, pcode[t][i] < NDF_NPAT / 2)) {
              owned = false;
              break;
            }
            if (CONS == 0 ? wt[o] < w : (isfinite(fu) && wt[o] > w)) {
              w = wt[o];
              from = o;
            }
          }
          if (owned) atomicAdd(&gws[from], psign[t] * ss);
        }
      }
#endif
      __syncthreads();
      if (p.gu && tid < NSP) atomicAdd(&p.gu[(img * p.m + j) * NSP + tid], gub[tid]);
    }
    __syncthreads(); // heights, entries and g are done with
  }
#if WT
  if (p.mode == 1 && p.gw) {
    for (int i = tid; i < NDF_HS; i += 256) {
      const double v = gws[i];
      if (v == 0) continue;
      const int hx = i % NDF_HX, hy = (i / NDF_HX) % NDF_HY, hz = i / (NDF_HX * NDF_HY);
      const ndf_i64 xx = x0 - 1 + hx, yy = y0 - 1 + hy, zz = NSP == 3 ? z0 - 1 + hz : 0;
      atomicAdd(&p.gw[(img * p.nz + zz) * p.ny * p.nx + yy * p.nx + xx], v); // on the shape: inside the image
    }
  }
#endif
}
#endif

// ---- results into the caller's arrays ---------------------------------------------------------
NDF_PARAMS(ndf_ects_put_params)

#if NDF_KERNEL(ndf_ect_soft_put)
extern "C" __global__ void __launch_bounds__(256) ndf_ect_soft_put(const ndf_ects_put_params p) {
  const ndf_i64 n = p.what == 0 ? p.nimg * p.m * p.T : p.what == 1 ? p.T + p.m * p.nsp : p.nimg * p.nz * p.ny * p.nx;
  for (ndf_i64 i = (ndf_i64)blockIdx.x * 256 + threadIdx.x; i < n; i += (ndf_i64)gridDim.x * 256) {
    if (p.what == 1) {
      double s = 0;
      if (i < p.T)
        for (ndf_i64 pr = 0; pr < p.nimg * p.m; pr++) s += p.acc[pr * p.T + i];
      else if (p.gu)
        for (ndf_i64 im = 0; im < p.nimg; im++) s += p.gu[im * p.m * p.nsp + (i - p.T)];
      p.out[i] = s;
      continue;
    }
    ndf_i64 img, off = 0;
    double v;
    if (p.what == 0) {
      img = i / (p.m * p.T);
      const ndf_i64 r = i % (p.m * p.T);
      off = (r / p.T) * p.dstep + (r % p.T) * p.kstep;
      v = p.acc[i];
    } else {
      const ndf_i64 npix = p.nz * p.ny * p.nx, vx = i % npix;
      img = i / npix;
      const ndf_i64 x = vx % p.nx, yz = vx / p.nx;
      off = (yz / p.ny) * p.gsz + (yz % p.ny) * p.gsy + x * p.gsx;
      v = p.gw ? p.gw[i] : 0.0;
    }
    for (int d = p.nb - 1; d >= 0; d--) {
      off += (img % p.bshape[d]) * p.bstr[d];
      img /= p.bshape[d];
    }
    if (p.what == 0) p.out[off] = v;
    else if (p.gin_f32) ((float *)p.gin)[off] = (float)v;
    else ((double *)p.gin)[off] = v;
  }
}
#endif
