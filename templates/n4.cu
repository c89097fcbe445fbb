// n4.cu -- N4 bias-field correction (runtime/ops/n4/): the per-voxel parts of
// an iteration; the histogram deconvolution runs on the host.
//
//   ndf_n4_load      the shrunk image: v = log I and the fit weight c (0
//                    outside the mask, where weight <= 0 or I <= 0), both
//                    contiguous float64; counts the voxels inside.
//   ndf_n4_resid     r = v - field inside; each block's min and max of r.
//   ndf_n4_hist      the histogram of r (linear splatting between the two
//                    nearest bins), in shared memory when it fits.
//   ndf_n4_numer     a = c (r - E(r)) / sum_k B_k^2, E the sharpened bin
//                    values (linear between bins); 0 outside.
//   ndf_n4_contract  one grid axis of a row-major (A, n, B) array to the
//                    lattice (A, m, B): out[a,k,b] = sum_i w[i][k - span i]
//                    in[a,i,b], a gather over the voxels i whose support
//                    holds k, in increasing i (the CPU's order).
//   ndf_n4_expand    one lattice axis back to the grid:
//                    out[a,i,b] = sum_j w[i][j] in[a, span i + j, b].
//   ndf_n4_update    lattice += delta / omega where omega > 0.
//   ndf_n4_conv      d = expm1(field - new field) inside; each block's count,
//                    sum d and sum d^2 (the coefficient of variation of the
//                    ratio exp(field - new field) is taken on the host).
//   ndf_n4_apply     out = I / exp(F), log_bias_field = F at every input
//                    voxel, any strides.
#include "ndf_common.cuh"

typedef NDF_SLOT(T) T;     // the input's element type
typedef NDF_SLOT(W) W;     // the weight's element type (float when there is none)
typedef NDF_SLOT(OUT) OUT; // the output's and the log field's element types
typedef NDF_SLOT(LB) LB;

#define NDF_N4_BLOCK 256

NDF_PARAMS(ndf_n4_load_params)
NDF_PARAMS(ndf_n4_resid_params)
NDF_PARAMS(ndf_n4_hist_params)
NDF_PARAMS(ndf_n4_numer_params)
NDF_PARAMS(ndf_n4_pass_params)
NDF_PARAMS(ndf_n4_update_params)
NDF_PARAMS(ndf_n4_conv_params)
NDF_PARAMS(ndf_n4_apply_params)

#if NDF_KERNEL(ndf_n4_load)
extern "C" __global__ void __launch_bounds__(NDF_N4_BLOCK) ndf_n4_load(const ndf_n4_load_params p) {
  for (ndf_i64 x = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x; x < p.n; x += (ndf_i64)gridDim.x * blockDim.x) {
    ndf_i64 q = x, oi = 0, om = 0, ow = 0;
    NDF_FOR_COORDS(q, p.ndim, p.shape, d, j,
                   const ndf_i64 i = j * p.shrink + p.off[d];
                   oi += i * p.istr[d];
                   om += i * p.mstr[d];
                   ow += i * p.wstr[d];)
    const double I = (double)p.in[oi];
    double c = I > 0.0 && isfinite(I) ? 1.0 : 0.0;
    if (c > 0.0 && p.mask) {
      const int mv = p.mask[om];
      c = p.mask_label ? (mv == p.mask_label ? 1.0 : 0.0) : (mv != 0 ? 1.0 : 0.0);
    }
    if (c > 0.0 && p.weight) {
      const double wv = (double)p.weight[ow];
      c = wv > 0.0 && isfinite(wv) ? wv : 0.0;
    }
    p.c[x] = c;
    p.v[x] = c > 0.0 ? log(I) : 0.0;
    if (c > 0.0) atomicAdd(p.count, 1ULL);
  }
}
#endif

#if NDF_KERNEL(ndf_n4_resid)
extern "C" __global__ void __launch_bounds__(NDF_N4_BLOCK) ndf_n4_resid(const ndf_n4_resid_params p) {
  __shared__ double slo[NDF_N4_BLOCK], shi[NDF_N4_BLOCK];
  double lo = 1.0 / 0.0, hi = -1.0 / 0.0;
  for (ndf_i64 x = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x; x < p.n; x += (ndf_i64)gridDim.x * blockDim.x) {
    if (p.c[x] > 0.0) {
      const double r = p.v[x] - p.field[x];
      p.r[x] = r;
      lo = fmin(lo, r);
      hi = fmax(hi, r);
    }
  }
  slo[threadIdx.x] = lo;
  shi[threadIdx.x] = hi;
  __syncthreads();
  for (int s = NDF_N4_BLOCK / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.x < s) {
      slo[threadIdx.x] = fmin(slo[threadIdx.x], slo[threadIdx.x + s]);
      shi[threadIdx.x] = fmax(shi[threadIdx.x], shi[threadIdx.x + s]);
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    p.part[2 * blockIdx.x] = slo[0];
    p.part[2 * blockIdx.x + 1] = shi[0];
  }
}
#endif

#if NDF_KERNEL(ndf_n4_hist)
extern "C" __global__ void __launch_bounds__(NDF_N4_BLOCK) ndf_n4_hist(const ndf_n4_hist_params p) {
  extern __shared__ double sh[];
  double *h = p.shared ? sh : p.hist;
  if (p.shared) {
    for (int b = threadIdx.x; b < p.nbins; b += blockDim.x) sh[b] = 0.0;
    __syncthreads();
  }
  for (ndf_i64 x = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x; x < p.n; x += (ndf_i64)gridDim.x * blockDim.x) {
    if (!(p.c[x] > 0.0)) continue;
    const double ci = (p.r[x] - p.lo) / p.slope;
    ndf_i64 b = (ndf_i64)floor(ci);
    if (b > p.nbins - 1) b = p.nbins - 1;
    const double f = ci - (double)b;
    atomicAdd(&h[b], 1.0 - f);
    if (b < p.nbins - 1) atomicAdd(&h[b + 1], f);
  }
  if (p.shared) {
    __syncthreads();
    for (int b = threadIdx.x; b < p.nbins; b += blockDim.x)
      if (sh[b] != 0.0) atomicAdd(&p.hist[b], sh[b]);
  }
}
#endif

#if NDF_KERNEL(ndf_n4_numer)
extern "C" __global__ void __launch_bounds__(NDF_N4_BLOCK) ndf_n4_numer(const ndf_n4_numer_params p) {
  for (ndf_i64 x = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x; x < p.n; x += (ndf_i64)gridDim.x * blockDim.x) {
    const double c = p.c[x];
    if (!(c > 0.0) || p.flat) {
      p.a[x] = 0.0;
      continue;
    }
    const double r = p.r[x], ci = (r - p.lo) / p.slope;
    const ndf_i64 b = (ndf_i64)floor(ci);
    double s;
    if (b >= p.nbins - 1) s = p.e[p.nbins - 1];
    else s = p.e[b] + (p.e[b + 1] - p.e[b]) * (ci - (double)b);
    double sq = 1.0;
    ndf_i64 q = x;
    NDF_FOR_COORDS(q, p.ndim, p.shape, d, j, sq *= p.sq[p.sqoff[d] + j];)
    p.a[x] = c * (r - s) / sq;
  }
}
#endif

#if NDF_KERNEL(ndf_n4_contract)
extern "C" __global__ void __launch_bounds__(NDF_N4_BLOCK) ndf_n4_contract(const ndf_n4_pass_params p) {
  const ndf_i64 total = p.A * p.m * p.B;
  for (ndf_i64 o = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x; o < total; o += (ndf_i64)gridDim.x * blockDim.x) {
    const ndf_i64 b = o % p.B, ak = o / p.B, k = ak % p.m, a = ak / p.m;
    double s = 0.0;
    for (int i = p.first[k]; i <= p.last[k]; i++)
      s += p.w[(ndf_i64)i * p.P + (k - p.span[i])] * p.in[(a * p.n + i) * p.B + b];
    p.out[o] = s;
  }
}
#endif

#if NDF_KERNEL(ndf_n4_expand)
extern "C" __global__ void __launch_bounds__(NDF_N4_BLOCK) ndf_n4_expand(const ndf_n4_pass_params p) {
  const ndf_i64 total = p.A * p.n * p.B;
  for (ndf_i64 o = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x; o < total; o += (ndf_i64)gridDim.x * blockDim.x) {
    const ndf_i64 b = o % p.B, ai = o / p.B, i = ai % p.n, a = ai / p.n;
    const double *x = p.in + (a * p.m + p.span[i]) * p.B + b;
    double s = 0.0;
    for (int j = 0; j < p.P; j++) s += p.w[i * p.P + j] * x[(ndf_i64)j * p.B];
    p.out[o] = s;
  }
}
#endif

#if NDF_KERNEL(ndf_n4_update)
extern "C" __global__ void __launch_bounds__(NDF_N4_BLOCK) ndf_n4_update(const ndf_n4_update_params p) {
  for (ndf_i64 k = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x; k < p.n; k += (ndf_i64)gridDim.x * blockDim.x)
    if (p.omega[k] > 0.0) p.lat[k] += p.delta[k] / p.omega[k];
}
#endif

#if NDF_KERNEL(ndf_n4_conv)
extern "C" __global__ void __launch_bounds__(NDF_N4_BLOCK) ndf_n4_conv(const ndf_n4_conv_params p) {
  __shared__ double s0[NDF_N4_BLOCK], s1[NDF_N4_BLOCK], s2[NDF_N4_BLOCK];
  double n = 0.0, sum = 0.0, sum2 = 0.0;
  for (ndf_i64 x = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x; x < p.n; x += (ndf_i64)gridDim.x * blockDim.x) {
    if (p.c[x] > 0.0) {
      const double d = expm1(p.field[x] - p.nfield[x]);
      n += 1.0;
      sum += d;
      sum2 += d * d;
    }
  }
  s0[threadIdx.x] = n;
  s1[threadIdx.x] = sum;
  s2[threadIdx.x] = sum2;
  __syncthreads();
  for (int s = NDF_N4_BLOCK / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.x < s) {
      s0[threadIdx.x] += s0[threadIdx.x + s];
      s1[threadIdx.x] += s1[threadIdx.x + s];
      s2[threadIdx.x] += s2[threadIdx.x + s];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    p.part[3 * blockIdx.x] = s0[0];
    p.part[3 * blockIdx.x + 1] = s1[0];
    p.part[3 * blockIdx.x + 2] = s2[0];
  }
}
#endif

#if NDF_KERNEL(ndf_n4_apply)
extern "C" __global__ void __launch_bounds__(NDF_N4_BLOCK) ndf_n4_apply(const ndf_n4_apply_params p) {
  for (ndf_i64 x = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x; x < p.n; x += (ndf_i64)gridDim.x * blockDim.x) {
    ndf_i64 q = x, oi = 0, oo = 0, ol = 0;
    NDF_FOR_COORDS(q, p.ndim, p.shape, d, j,
                   oi += j * p.istr[d];
                   oo += j * p.ostr[d];
                   ol += j * p.lstr[d];)
    const double F = p.field[x];
    p.out[oo] = (OUT)((double)p.in[oi] / exp(F));
    if (p.logb) p.logb[ol] = (LB)F;
  }
}
#endif
