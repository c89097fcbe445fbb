// metrics.cu -- the image metrics (skimage.metrics) on the GPU: per-image
// statistics with deterministic block sums, the SSIM products and map, the
// masks of the Hausdorff distance.
//
//   ndf_metrics_stats     per (image, block): float64 sums of (a-b)^2, a*a, a
//                         (products in the float type F), NaN-propagating min
//                         and max of a, counts of a != 0, b != 0 and both.
//   ndf_metrics_finish    one block per image: sums its blocks (a fixed tree) and
//                         writes the metric (op) to the strided result; with
//                         dry = 1 it only flags an image whose values leave the
//                         dtype's range (PSNR's default data_range).
//   ndf_metrics_ssim_prep x*x, y*y, x*y in F (and y converted to F) as
//                         contiguous arrays.
//   ndf_metrics_ssim      S from the five filtered arrays, every operation
//                         rounded in F (no contraction into fused multiply-
//                         adds, so S is the CPU backend's bit for bit); writes
//                         the map (any strides) and per (image, block) sums of
//                         S over the cropped interior.
//   ndf_metrics_mean      one block per image: the sum of its partial sums / count.
//   ndf_metrics_not       m == 0 as uint8 (contiguous).
//   ndf_metrics_hd_reduce per image: max of d over a != 0 and the count
//                         (atomics on exact values: order-independent).
//   ndf_metrics_hd_finish the Hausdorff distance from both directions.
//   ndf_metrics_hd_rank   percentile q < 100, one thread per image: NumPy's
//                         linear virtual index of q among the image's n
//                         distances, its two ranks and weight.
//   ndf_metrics_hd_hist   one radix-select pass: per image and rank, a 256-bin
//                         histogram of the byte at shift of the distances'
//                         bits (non-negative doubles order as integers) among
//                         those that match the prefix found so far.
//   ndf_metrics_hd_pick   one thread per image and rank: the bin holding the
//                         rank extends the prefix; the histogram is cleared.
//   ndf_metrics_hd_lerp   the two selected values interpolated as NumPy's
//                         _lerp into the directed term (dmax) of the image.
// Block sums run over a fixed tree in shared memory, and the blocks of an
// image depend only on its size, so a result does not vary between runs.
#include "ndf_common.cuh"

typedef NDF_SLOT(TA) TA;
typedef NDF_SLOT(TB) TB;
typedef NDF_SLOT(F) F;
typedef NDF_SLOT(FO) FO;

// Rounded float-type arithmetic that the compiler may not fuse.
__device__ __forceinline__ float ndf_m_mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double ndf_m_mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float ndf_m_add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double ndf_m_add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float ndf_m_sub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double ndf_m_sub(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ float ndf_m_div(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double ndf_m_div(double a, double b) { return __ddiv_rn(a, b); }

// NaN-propagating extremes, as NumPy's.
__device__ __forceinline__ double ndf_m_min(double m, double v) { return ((v < m) || v != v) && m == m ? v : m; }
__device__ __forceinline__ double ndf_m_max(double m, double v) { return ((v > m) || v != v) && m == m ? v : m; }

// Element offset of flat C-order index i.
__device__ __forceinline__ ndf_i64 ndf_m_off(ndf_i64 i, int ndim, const ndf_i64 *shape, const ndf_i64 *str) {
  ndf_i64 o = 0;
  NDF_FOR_COORDS(i, ndim, shape, d, c, o += c * str[d];)
  return o;
}

// Sum of v over the block (256 threads), the same tree every time; the total in thread 0.
__device__ __forceinline__ double ndf_m_bsum(double v, double *sh) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (threadIdx.x < s) sh[threadIdx.x] = sh[threadIdx.x] + sh[threadIdx.x + s];
    __syncthreads();
  }
  const double r = sh[0];
  __syncthreads();
  return r;
}
__device__ __forceinline__ double ndf_m_bext(double v, double *sh, int mx) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (threadIdx.x < s)
      sh[threadIdx.x] = mx ? ndf_m_max(sh[threadIdx.x], sh[threadIdx.x + s]) : ndf_m_min(sh[threadIdx.x], sh[threadIdx.x + s]);
    __syncthreads();
  }
  const double r = sh[0];
  __syncthreads();
  return r;
}

NDF_PARAMS(ndf_metrics_stats_params)

// Block bi (grid-strided) is block bi % nblk of image bi / nblk; thread sums
// run over the image in a fixed order; part gets 5 doubles, cnt 3 counts per
// (image, block), at bi.
#if NDF_KERNEL(ndf_metrics_stats)
extern "C" __global__ void __launch_bounds__(256) ndf_metrics_stats(const ndf_metrics_stats_params p) {
  __shared__ double sh[256];
  for (ndf_i64 bi = blockIdx.x; bi < p.nimg * p.nblk; bi += gridDim.x) {
    const ndf_i64 img = bi / p.nblk, blk = bi - img * p.nblk;
    double sdd = 0, saa = 0, sa = 0, mn = 1.0 / 0.0, mx = -1.0 / 0.0;
    unsigned long long na = 0, nb = 0, nab = 0;
    for (ndf_i64 i = blk * 256 + threadIdx.x; i < p.vox; i += (ndf_i64)p.nblk * 256) {
      const ndf_i64 flat = img * p.vox + i;
      const ndf_i64 oa = p.contig ? flat : ndf_m_off(flat, p.ndim, p.shape, p.astr);
      const ndf_i64 ob = p.contig ? flat : ndf_m_off(flat, p.ndim, p.shape, p.bstr);
      const double x = (double)p.a[oa], y = (double)p.b[ob];
      const F fx = (F)x, fy = (F)y;
      const F d = ndf_m_sub(fx, fy);
      sdd += (double)ndf_m_mul(d, d);
      saa += (double)ndf_m_mul(fx, fx);
      sa += x;
      mn = ndf_m_min(mn, x);
      mx = ndf_m_max(mx, x);
      na += x != 0;
      nb += y != 0;
      nab += (x != 0) & (y != 0);
    }
    const ndf_i64 k = bi;
    const double r0 = ndf_m_bsum(sdd, sh), r1 = ndf_m_bsum(saa, sh), r2 = ndf_m_bsum(sa, sh);
    const double r3 = ndf_m_bext(mn, sh, 0), r4 = ndf_m_bext(mx, sh, 1);
    const double c0 = ndf_m_bsum((double)na, sh), c1 = ndf_m_bsum((double)nb, sh), c2 = ndf_m_bsum((double)nab, sh);
    if (threadIdx.x == 0) {
      p.part[k * 5 + 0] = r0;
      p.part[k * 5 + 1] = r1;
      p.part[k * 5 + 2] = r2;
      p.part[k * 5 + 3] = r3;
      p.part[k * 5 + 4] = r4;
      p.cnt[k * 3 + 0] = (ndf_i64)c0;
      p.cnt[k * 3 + 1] = (ndf_i64)c1;
      p.cnt[k * 3 + 2] = (ndf_i64)c2;
    }
  }
}
#endif

NDF_PARAMS(ndf_metrics_finish_params)

// Block b (grid-strided) finishes image b: its threads sum strided subsets of
// the image's block sums in a fixed order, then the block's tree.
#if NDF_KERNEL(ndf_metrics_finish)
extern "C" __global__ void __launch_bounds__(256) ndf_metrics_finish(const ndf_metrics_finish_params p) {
  __shared__ double sh[256];
  for (ndf_i64 img = blockIdx.x; img < p.nimg; img += gridDim.x) {
    double sdd = 0, saa = 0, sa = 0, mn = 1.0 / 0.0, mx = -1.0 / 0.0, ca = 0, cb = 0, cab = 0;
    for (ndf_i64 b = threadIdx.x; b < p.nblk; b += 256) {
      const ndf_i64 k = img * p.nblk + b;
      sdd += p.part[k * 5 + 0];
      saa += p.part[k * 5 + 1];
      sa += p.part[k * 5 + 2];
      mn = ndf_m_min(mn, p.part[k * 5 + 3]);
      mx = ndf_m_max(mx, p.part[k * 5 + 4]);
      ca += (double)p.cnt[k * 3 + 0];
      cb += (double)p.cnt[k * 3 + 1];
      cab += (double)p.cnt[k * 3 + 2];
    }
    sdd = ndf_m_bsum(sdd, sh);
    saa = ndf_m_bsum(saa, sh);
    sa = ndf_m_bsum(sa, sh);
    mn = ndf_m_bext(mn, sh, 0);
    mx = ndf_m_bext(mx, sh, 1);
    ca = ndf_m_bsum(ca, sh);
    cb = ndf_m_bsum(cb, sh);
    cab = ndf_m_bsum(cab, sh);
    if (threadIdx.x != 0) continue;
    const double n = (double)p.vox, mse = sdd / n;
    double dr = p.data_range;
    if (p.op == 4 && dr == 0) { // PSNR, scikit-image's default range
      if (mx > p.hi || mn < p.lo) {
        p.status[0] = 1;
        continue;
      }
      dr = mn >= 0 ? p.hi : p.hi - p.lo;
    }
    if (p.dry) continue;
    double v;
    switch (p.op) {
      case 0: v = mse; break;
      case 1: v = sqrt(mse) / sqrt(saa / n); break;
      case 2: v = sqrt(mse) / (p.f32 ? (double)__fsub_rn((float)mx, (float)mn) : mx - mn); break;
      case 3: v = sqrt(mse) / (sa / n); break;
      case 4: v = 10.0 * log10(__ddiv_rn(__dmul_rn(dr, dr), mse)); break;
      case 5: v = ca + cb == 0 ? 1.0 : (2.0 * cab) / (ca + cb); break;
      default: v = ca + cb == 0 ? 1.0 : cab / (ca + cb - cab); break;
    }
    p.result[ndf_m_off(img, p.nb, p.rshape, p.rstr)] = v;
  }
}
#endif

NDF_PARAMS(ndf_metrics_ssim_prep_params)

#if NDF_KERNEL(ndf_metrics_ssim_prep)
extern "C" __global__ void __launch_bounds__(256) ndf_metrics_ssim_prep(const ndf_metrics_ssim_prep_params p) {
  for (ndf_i64 i = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += (ndf_i64)gridDim.x * blockDim.x) {
    const ndf_i64 oa = p.contig ? i : ndf_m_off(i, p.ndim, p.shape, p.astr);
    const ndf_i64 ob = p.contig ? i : ndf_m_off(i, p.ndim, p.shape, p.bstr);
    const F x = (F)(double)p.a[oa], y = (F)(double)p.b[ob];
    if (p.yc) p.yc[i] = y;
    p.xx[i] = ndf_m_mul(x, x);
    p.yy[i] = ndf_m_mul(y, y);
    p.xy[i] = ndf_m_mul(x, y);
  }
}
#endif

NDF_PARAMS(ndf_metrics_ssim_params)

#if NDF_KERNEL(ndf_metrics_ssim)
extern "C" __global__ void __launch_bounds__(256) ndf_metrics_ssim(const ndf_metrics_ssim_params p) {
  __shared__ double sh[256];
  const F cn = (F)p.cov_norm, c1 = (F)p.C1, c2 = (F)p.C2, two = (F)2;
  for (ndf_i64 bi = blockIdx.x; bi < p.nimg * p.nblk; bi += gridDim.x) {
    const ndf_i64 img = bi / p.nblk, blk = bi - img * p.nblk;
    double acc = 0;
    for (ndf_i64 i = blk * 256 + threadIdx.x; i < p.vox; i += (ndf_i64)p.nblk * 256) {
      const ndf_i64 e = img * p.vox + i;
      const F ux = p.ux[e], uy = p.uy[e], uxx = p.uxx[e], uyy = p.uyy[e], uxy = p.uxy[e];
      const F vx = ndf_m_mul(cn, ndf_m_sub(uxx, ndf_m_mul(ux, ux)));
      const F vy = ndf_m_mul(cn, ndf_m_sub(uyy, ndf_m_mul(uy, uy)));
      const F vxy = ndf_m_mul(cn, ndf_m_sub(uxy, ndf_m_mul(ux, uy)));
      const F a1 = ndf_m_add(ndf_m_mul(ndf_m_mul(two, ux), uy), c1);
      const F a2 = ndf_m_add(ndf_m_mul(two, vxy), c2);
      const F b1 = ndf_m_add(ndf_m_add(ndf_m_mul(ux, ux), ndf_m_mul(uy, uy)), c1);
      const F b2 = ndf_m_add(ndf_m_add(vx, vy), c2);
      const F s = ndf_m_div(ndf_m_mul(a1, a2), ndf_m_mul(b1, b2));
      if (p.full) p.full[p.fcontig ? e : ndf_m_off(e, p.ndim, p.shape, p.fstr)] = (FO)s;
      if (p.want_sum) {
        ndf_i64 q = i;
        bool in = true;
        for (int d = p.ndim - 1; d >= p.nb; d--) {
          const ndf_i64 k = q / p.shape[d], c = q - k * p.shape[d];
          q = k;
          in = in && c >= p.pad && c < p.shape[d] - p.pad;
        }
        if (in) acc += (double)s;
      }
    }
    if (p.want_sum) {
      const double r = ndf_m_bsum(acc, sh);
      if (threadIdx.x == 0) p.part[bi] = r;
    }
  }
}
#endif

NDF_PARAMS(ndf_metrics_mean_params)

// Block b (grid-strided) averages image b's nblk partial sums (threads over strided
// subsets in a fixed order, then the tree).
#if NDF_KERNEL(ndf_metrics_mean)
extern "C" __global__ void __launch_bounds__(256) ndf_metrics_mean(const ndf_metrics_mean_params p) {
  __shared__ double sh[256];
  for (ndf_i64 img = blockIdx.x; img < p.nimg; img += gridDim.x) {
    double s = 0;
    for (ndf_i64 b = threadIdx.x; b < p.nblk; b += 256) s += p.part[img * p.nblk + b];
    s = ndf_m_bsum(s, sh);
    if (threadIdx.x == 0) p.result[ndf_m_off(img, p.nb, p.rshape, p.rstr)] = s / p.count;
  }
}
#endif

NDF_PARAMS(ndf_metrics_not_params)

#if NDF_KERNEL(ndf_metrics_not)
extern "C" __global__ void __launch_bounds__(256) ndf_metrics_not(const ndf_metrics_not_params p) {
  for (ndf_i64 i = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += (ndf_i64)gridDim.x * blockDim.x) {
    const ndf_i64 o = p.contig ? i : ndf_m_off(i, p.ndim, p.shape, p.astr);
    p.out[i] = p.a[o] == (TA)0;
  }
}
#endif

NDF_PARAMS(ndf_metrics_hd_reduce_params)

// dmax holds the bits of non-negative doubles, which order as integers.
#if NDF_KERNEL(ndf_metrics_hd_reduce)
extern "C" __global__ void __launch_bounds__(256) ndf_metrics_hd_reduce(const ndf_metrics_hd_reduce_params p) {
  for (ndf_i64 bi = blockIdx.x; bi < p.nimg * p.nblk; bi += gridDim.x) {
    const ndf_i64 img = bi / p.nblk, blk = bi - img * p.nblk;
    long long m = 0;
    unsigned long long c = 0;
    for (ndf_i64 i = blk * 256 + threadIdx.x; i < p.vox; i += (ndf_i64)p.nblk * 256) {
      const ndf_i64 e = img * p.vox + i;
      const ndf_i64 o = p.contig ? e : ndf_m_off(e, p.ndim, p.shape, p.astr);
      if (p.a[o] == (TA)0) continue;
      const long long b = __double_as_longlong(p.d[e]);
      m = b > m ? b : m;
      c++;
    }
    if (c) {
      atomicMax((long long *)&p.dmax[img], m);
      atomicAdd((unsigned long long *)&p.cnt[img], c);
    }
  }
}
#endif

NDF_PARAMS(ndf_metrics_hd_finish_params)

#if NDF_KERNEL(ndf_metrics_hd_finish)
extern "C" __global__ void __launch_bounds__(256) ndf_metrics_hd_finish(const ndf_metrics_hd_finish_params p) {
  const ndf_i64 img = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x;
  if (img >= p.nimg) return;
  const ndf_i64 ca = p.cnt[img], cb = p.cnt[p.nimg + img];
  const double t0 = __longlong_as_double(p.dmax[img]), t1 = __longlong_as_double(p.dmax[p.nimg + img]);
  const double inf = 1.0 / 0.0;
  const double v = ca == 0 ? (cb == 0 ? 0.0 : inf) : cb == 0 ? inf : (t0 > t1 ? t0 : t1);
  p.result[ndf_m_off(img, p.nb, p.rshape, p.rstr)] = v;
}
#endif

NDF_PARAMS(ndf_metrics_hd_rank_params)

#if NDF_KERNEL(ndf_metrics_hd_rank)
extern "C" __global__ void __launch_bounds__(256) ndf_metrics_hd_rank(const ndf_metrics_hd_rank_params p) {
  const ndf_i64 img = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x;
  if (img >= p.nimg) return;
  const ndf_i64 n = p.cnt[img];
  const double qq = p.q / 100.0;
  const double virt = __dsub_rn(__dadd_rn(__dmul_rn((double)n, qq), __dsub_rn(1.0, qq)), 1.0);
  ndf_i64 k0, k1;
  double t = 0;
  if (n == 0) {
    k0 = k1 = 0;
  } else if (virt >= (double)(n - 1)) {
    k0 = k1 = n - 1;
  } else if (virt < 0) {
    k0 = k1 = 0;
  } else {
    const double fl = floor(virt);
    k0 = (ndf_i64)fl;
    k1 = k0 + 1;
    t = __dsub_rn(virt, fl);
  }
  p.sel[img * 2 + 0] = 0; // prefix of rank 0, its remaining rank; then rank 1's
  p.sel[img * 2 + 1] = k0;
  p.sel[(p.nimg + img) * 2 + 0] = 0;
  p.sel[(p.nimg + img) * 2 + 1] = k1;
  p.gamma[img] = t;
}
#endif

NDF_PARAMS(ndf_metrics_hd_hist_params)

#if NDF_KERNEL(ndf_metrics_hd_hist)
extern "C" __global__ void __launch_bounds__(256) ndf_metrics_hd_hist(const ndf_metrics_hd_hist_params p) {
  for (ndf_i64 bi = blockIdx.x; bi < p.nimg * p.nblk; bi += gridDim.x) {
    const ndf_i64 img = bi / p.nblk, blk = bi - img * p.nblk;
    const unsigned long long pre0 = (unsigned long long)p.sel[img * 2], pre1 = (unsigned long long)p.sel[(p.nimg + img) * 2];
    const int hs = p.shift + 8; // the bits above the digit must match the prefix
    for (ndf_i64 i = blk * 256 + threadIdx.x; i < p.vox; i += (ndf_i64)p.nblk * 256) {
      const ndf_i64 e = img * p.vox + i;
      const ndf_i64 o = p.contig ? e : ndf_m_off(e, p.ndim, p.shape, p.astr);
      if (p.a[o] == (TA)0) continue;
      const unsigned long long key = (unsigned long long)__double_as_longlong(p.d[e]);
      const unsigned dig = (unsigned)(key >> p.shift) & 255u;
      if (hs >= 64 || (key >> hs) == (pre0 >> hs)) atomicAdd(&p.hist[img * 256 + dig], 1u);
      if (hs >= 64 || (key >> hs) == (pre1 >> hs)) atomicAdd(&p.hist[(p.nimg + img) * 256 + dig], 1u);
    }
  }
}
#endif

NDF_PARAMS(ndf_metrics_hd_pick_params)

#if NDF_KERNEL(ndf_metrics_hd_pick)
extern "C" __global__ void __launch_bounds__(256) ndf_metrics_hd_pick(const ndf_metrics_hd_pick_params p) {
  const ndf_i64 j = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x; // (rank, image)
  if (j >= 2 * p.nimg) return;
  unsigned *h = p.hist + j * 256;
  ndf_i64 k = p.sel[j * 2 + 1];
  int b = 0;
  for (; b < 255 && k >= (ndf_i64)h[b]; b++) k -= (ndf_i64)h[b];
  p.sel[j * 2 + 0] = (ndf_i64)((unsigned long long)p.sel[j * 2 + 0] | ((unsigned long long)b << p.shift));
  p.sel[j * 2 + 1] = k;
  for (int i = 0; i < 256; i++) h[i] = 0;
}
#endif

NDF_PARAMS(ndf_metrics_hd_lerp_params)

#if NDF_KERNEL(ndf_metrics_hd_lerp)
extern "C" __global__ void __launch_bounds__(256) ndf_metrics_hd_lerp(const ndf_metrics_hd_lerp_params p) {
  const ndf_i64 img = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x;
  if (img >= p.nimg) return;
  const double a = __longlong_as_double(p.sel[img * 2]), b = __longlong_as_double(p.sel[(p.nimg + img) * 2]);
  const double t = p.gamma[img], diff = __dsub_rn(b, a);
  const double v = t >= 0.5 ? __dsub_rn(b, __dmul_rn(diff, __dsub_rn(1.0, t))) : __dadd_rn(a, __dmul_rn(diff, t));
  p.dmax[img] = __double_as_longlong(v);
}
#endif
