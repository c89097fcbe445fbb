// ecc_soft.cu -- the soft ECC sums for float32 inputs on CUDA (runtime/ecc_cuda.c,
// docs/adr/0009-euler-characteristic-curves.md, "Soft ECC, float32 kernel").
//
//   ndf_ecc_soft2  over the (c, f) per voxel that ecc.cu's ndf_ecc_hist (SOFT = 1)
//                  wrote: a block takes a chunk of NDF_S2_CH voxels of one image
//                  and compacts those with c != 0 into shared memory (in order).
//                  The thresholds, sorted on the host, are cut into groups of
//                  NDF_S2_KT; a lane holds one group in registers and a warp
//                  is 32 / LG voxel slots x LG groups (LG = 1..8, a chunk of
//                  LG * KT <= 64 thresholds; more thresholds: more chunks).
//                  Per (voxel, threshold) one sigmoid s = 1 / (1 + e),
//                  e = 2^(kappa (f - t)), kappa = lambda log2(e):
//                    forward   acc[img][k] += sum_v c s
//                    backward  (one pass for both gradients) with
//                              q = s (1 - s) = e / (1 + e)^2 computed as
//                              r (e r), r = 1 / (1 + e) (no cancellation):
//                              gt[k] += lambda g_k sum_v c q, and per voxel
//                              G = sum_k g_k q (a lane's KT terms, then a
//                              shuffle tree over the LG lanes of the voxel),
//                              grad_input = -lambda c G.
//                  PROD = 1 (each group's thresholds within 32 / kappa of its
//                  float centre m): e = A_k B, A_k = 2^(-kappa (t_k - m))
//                  exact to a float rounding (host, double), B = 2^(kappa (f
//                  - m)) once per (voxel, lane) from a two-float argument
//                  (TwoSum of f - m, kappa as a float pair, the exact product
//                  error by fma), clamped to 2^+-94: one MUFU (rcp) per
//                  (voxel, threshold) plus 1/KT of one (ex2).  Relative error
//                  of s, q: a few 1e-7 whatever kappa (f - t) (ex2.approx,
//                  rcp.approx: about 2 ulp each); the clamp changes only terms
//                  below 2^-62.  PROD = 0: e = 2^(kappa ((f - th) - tl)) per
//                  pair, t = th + tl a float pair (the error of ndf_ecc_soft's
//                  float path: about (2 + |kappa (f - t)|) 1e-7 relative), the
//                  argument clamped to 126 so that e r stays finite.
//                  Sums: per lane float partials of 16 voxels, then double;
//                  the block's lanes and warps in double; one float64 atomic
//                  per (block, threshold).  G: float over the KT terms of a
//                  lane and the LG-lane tree (<= 64 terms, error bound about
//                  (KT - 1 + log2 LG) eps sum |g q|), then double over chunks.
//                  FUSED = 1 (2-D inputs): no contribution pass; the block
//                  takes c(v) (ndf_ecc.cuh, construction CONS) and f of its
//                  chunk from the input itself (9 reads per voxel through
//                  L1, NaN outside the image), a NaN voxel sets the header's
//                  nan_key.  Forward: the sums go to scratch and ndf_ecc_put,
//                  gated by the header, runs after.  Backward (grad_input
//                  written here): ecc.cu's ndf_ecc_scan fills the header
//                  first, so a NaN anywhere stops every block before it writes.
#include "ndf_common.cuh"
#include "ndf_ecc.cuh"

#define PROD NDF_SLOT(PROD)   // 1: e = A_k B_v (each group within 32 / kappa of its centre), 0: e per pair
#define FUSED NDF_SLOT(FUSED) // 1: c and f from the 2-D input (no cbuf / fbuf)
#define CONS NDF_SLOT(CONS)   // FUSED: 0 V-construction, 1 T-construction

#define NDF_S2_CH 2048 // voxels per block
#define NDF_S2_KT 8    // thresholds per lane

// The first words of ecc.cu's ndf_ecc_hdr (the call's header; only the flags are read here).
struct ndf_ecc_soft2_hdr {
  double lo, inv_step, mn, mx;
  unsigned long long nan_key;
  int uniform, bad;
};

// A threshold slot (sorted order, padded to a whole number of chunks): PROD:
// a = A_k; else a = th, b = tl (t = th + tl).  k: the caller's index, -1 padding.
struct ndf_ecc_soft2_slot {
  float a, b;
  int k, pad;
};

NDF_PARAMS(ndf_ecc_soft2_params)

__device__ __forceinline__ float ndf_s2_ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float ndf_s2_rcp(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// B = 2^(kappa (f - m)) to a few float roundings, the exponent clamped to +-94.
__device__ __forceinline__ float ndf_s2_base(float f, float m, float kh, float kl) {
  const float s = __fsub_rn(f, m);                    // TwoSum(f, -m): s + err = f - m exactly
  const float bb = __fsub_rn(s, f);
  const float err = __fadd_rn(__fsub_rn(f, __fsub_rn(s, bb)), __fsub_rn(-m, bb));
  const float xh = __fmul_rn(kh, s);
  const float pe = __fmaf_rn(kh, s, -xh);             // kh s - xh exactly
  const float xl = __fadd_rn(pe, __fmaf_rn(kh, err, __fmul_rn(kl, s)));
  const bool in_range = fabsf(xh) < 94.0f; // else saturated: the low part (large, or NaN for xh = inf) is dropped
  const float b = ndf_s2_ex2(in_range ? xh : copysignf(94.0f, xh));
  return in_range ? __fmaf_rn(b, __fmul_rn(xl, 0.6931471805599453f), b) : b; // 2^xl ~ 1 + xl ln 2 (|xl| < 1e-5)
}

// BWD: backward (q = s (1 - s)), else forward (s); WT: the per-threshold sums
// (forward, or dL/dt); the per-voxel sums when BWD and grad_input is asked.
template <bool BWD, bool WT>
__device__ __forceinline__ void ndf_s2_run(const ndf_ecc_soft2_params &p, const float2 *sv, double *sg, double *red,
                                           int n, ndf_i64 img, ndf_i64 gbase) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int lg = p.lg, kg = lane & (lg - 1), vs = lane / lg, nsl = 32 / lg;
  const int stream = warp * nsl + vs, ns = 8 * nsl;
  const bool want_gin = BWD && p.gin;
  const float kh = p.kh, kl = p.kl;
  for (int ch = 0; ch < p.tchunks; ch++) {
    const int grp = ch * lg + kg;
    const ndf_ecc_soft2_slot *sl = p.slots + (ndf_i64)grp * NDF_S2_KT;
    float ta[NDF_S2_KT], tb[NDF_S2_KT], gk[NDF_S2_KT], fa[NDF_S2_KT];
    double da[NDF_S2_KT];
#pragma unroll
    for (int j = 0; j < NDF_S2_KT; j++) {
      const ndf_ecc_soft2_slot s = sl[j];
      ta[j] = s.a;
      tb[j] = s.b;
      gk[j] = BWD && s.k >= 0 ? (float)p.g[gbase + (ndf_i64)s.k * p.gstep] : 0.0f;
      fa[j] = 0.0f;
      da[j] = 0.0;
      if (PROD && BWD) gk[j] *= ta[j]; // g_k A_k: q = A_k B r^2, so sum_k g_k q = B sum_k (g_k A_k) r^2
    }
    const float m = PROD ? p.centre[grp] : 0.0f;
    int cnt = 0;
    for (int base = 0; base < n; base += ns) { // uniform trip count: the shuffles need every lane
      const int e = base + stream;
      const float2 v = e < n ? sv[e] : make_float2(0.0f, 0.0f); // (f, c)
      const float f = v.x, c = v.y;
      float G = 0.0f;
      const float B = PROD ? ndf_s2_base(f, m, kh, kl) : 0.0f;
      const float cB = __fmul_rn(c, B); // PROD, backward: the per-threshold sums take c B r^2 (times A_k at the end)
#pragma unroll
      for (int j = 0; j < NDF_S2_KT; j++) {
        float ee;
        if (PROD) {
          ee = __fmul_rn(ta[j], B);
        } else {
          const float d = __fadd_rn(__fsub_rn(f, ta[j]), -tb[j]); // f - t
          ee = ndf_s2_ex2(fminf(__fmul_rn(kh, d), 126.0f));
        }
        const float r = ndf_s2_rcp(__fadd_rn(1.0f, ee)); // s
        if (!BWD) {
          fa[j] = __fmaf_rn(c, r, fa[j]);
        } else if (PROD) {
          const float r2 = __fmul_rn(r, r); // s (1 - s) = e r^2 = A_k B r^2
          if (WT) fa[j] = __fmaf_rn(cB, r2, fa[j]);
          G = __fmaf_rn(gk[j], r2, G);
        } else {
          const float q = __fmul_rn(r, __fmul_rn(ee, r)); // s (1 - s) = e r^2
          if (WT) fa[j] = __fmaf_rn(c, q, fa[j]);
          G = __fmaf_rn(gk[j], q, G);
        }
      }
      if (PROD && BWD) G = __fmul_rn(G, B);
      if (WT && ++cnt == 16) {
#pragma unroll
        for (int j = 0; j < NDF_S2_KT; j++) {
          da[j] += (double)fa[j];
          fa[j] = 0.0f;
        }
        cnt = 0;
      }
      if (want_gin) {
        for (int o = 1; o < lg; o <<= 1) G += __shfl_xor_sync(0xffffffffu, G, o);
        if (kg == 0 && e < n) sg[e] = ch == 0 ? (double)G : sg[e] + (double)G;
      }
    }
    if (WT) {
      // the block's sums per slot: lanes of other voxel slots, then warps (fixed order)
#pragma unroll
      for (int j = 0; j < NDF_S2_KT; j++) {
        double t = da[j] + (double)fa[j];
        if (PROD && BWD) t *= (double)ta[j];
        for (int o = lg; o < 32; o <<= 1) t += __shfl_xor_sync(0xffffffffu, t, o);
        if (vs == 0) red[warp * 64 + kg * NDF_S2_KT + j] = t;
      }
      __syncthreads();
      if (tid < lg * NDF_S2_KT) {
        const ndf_ecc_soft2_slot s = p.slots[(ndf_i64)ch * lg * NDF_S2_KT + tid];
        if (s.k >= 0) {
          double tot = 0;
          for (int w = 0; w < 8; w++) tot += red[w * 64 + tid];
          if (!BWD) atomicAdd(&p.acc[img * p.T + s.k], tot);
          else atomicAdd(&p.gt[s.k], p.lambda * p.g[gbase + (ndf_i64)s.k * p.gstep] * tot);
        }
      }
      __syncthreads();
    }
  }
}

// NaN flag of a C-contiguous float32 input (n elements) into the header: the
// fused backward runs it first (ecc.cu's ndf_ecc_scan for other layouts).
// Four elements per load, 4 loads in flight per thread; nan_key keeps the
// least index (atomicMax of its complement).
NDF_PARAMS(ndf_ecc_soft2_nan_params)

#if NDF_KERNEL(ndf_ecc_soft2_nan)
extern "C" __global__ void __launch_bounds__(256) ndf_ecc_soft2_nan(const ndf_ecc_soft2_nan_params p) {
  const ndf_i64 n4 = ((unsigned long long)p.in & 15) == 0 ? p.n / 4 : 0, stride = (ndf_i64)gridDim.x * 256 * 4;
  const float4 *in4 = (const float4 *)p.in;
  ndf_i64 bad = -1;
  for (ndf_i64 i0 = (ndf_i64)blockIdx.x * 256 * 4 + threadIdx.x; i0 < n4; i0 += stride) {
    float4 v[4];
#pragma unroll
    for (int j = 0; j < 4; j++) v[j] = i0 + 256 * j < n4 ? __ldcs(in4 + i0 + 256 * j) : make_float4(0, 0, 0, 0);
#pragma unroll
    for (int j = 3; j >= 0; j--) {
      const ndf_i64 e = 4 * (i0 + 256 * j);
      if (v[j].w != v[j].w) bad = e + 3;
      if (v[j].z != v[j].z) bad = e + 2;
      if (v[j].y != v[j].y) bad = e + 1;
      if (v[j].x != v[j].x) bad = e;
    }
    if (bad >= 0) break; // the least index of this thread's elements (its later ones are greater)
  }
  // the tail (and a misaligned input): one element per thread
  for (ndf_i64 i = 4 * n4 + (ndf_i64)blockIdx.x * 256 + threadIdx.x; i < p.n && bad < 0; i += (ndf_i64)gridDim.x * 256)
    if (p.in[i] != p.in[i]) bad = i;
  if (bad >= 0) atomicMax(&p.hdr->nan_key, ~(unsigned long long)bad);
}
#endif

#if NDF_KERNEL(ndf_ecc_soft2)
extern "C" __global__ void __launch_bounds__(256) ndf_ecc_soft2(const ndf_ecc_soft2_params p) {
  if (p.hdr && (__ldcg(&p.hdr->nan_key) != 0ull || __ldcg(&p.hdr->bad) != 0)) return;
  __shared__ float2 sv[NDF_S2_CH];          // compacted (f, c)
  __shared__ unsigned short si[NDF_S2_CH]; // their index in the chunk
  __shared__ double sg[NDF_S2_CH];         // backward: sum_k g_k q per compacted voxel
  __shared__ double red[8 * 64];
  __shared__ int wcount[8];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const ndf_i64 img = blockIdx.x / p.nchunk, v0 = (blockIdx.x % p.nchunk) * NDF_S2_CH;
  ndf_i64 gbase = 0, ibase = 0, inbase = 0, q = img;
  for (int d = p.nb - 1; d >= 0; d--) {
    const ndf_i64 c = q % p.bshape[d];
    gbase += c * p.gostr[d];
    ibase += c * p.gistr[d];
    if (FUSED) inbase += c * p.ibstr[d];
    q /= p.bshape[d];
  }
  auto gin_off = [&](ndf_i64 v) {
    const ndf_i64 x = v % p.nx, r = v / p.nx;
    return ibase + (r / p.ny) * p.gsz + (r % p.ny) * p.gsy + x * p.gsx;
  };
  const bool bwd = p.mode == 1;
  // every load of the chunk issued before the first is used
  int cr[NDF_S2_CH / 256];
  float fr[NDF_S2_CH / 256];
  if (FUSED) {
    const float *in = p.in + inbase;
    const ndf_i64 nrow = p.nrow, nx = p.nx, isy = p.isy, isx = p.isx;
    // (y, x) of voxel v0 + r * 256 + tid, stepped by 256 voxels per round (one division per thread)
    ndf_i64 y = (v0 + tid) / nx, x = v0 + tid - y * nx;
    const ndf_i64 dy = 256 / nx, dx = 256 - dy * nx;
    bool nan = false;
#pragma unroll
    for (int r = 0; r < NDF_S2_CH / 256; r++) {
      if (r > 0) {
        y += dy, x += dx;
        if (x >= nx) x -= nx, y++;
      }
      const ndf_i64 v = v0 + r * 256 + tid;
      // the 3 x 3 neighbourhood: row pointers and column offsets once, NaN outside the image
      const float *rows[3] = {in + (y - 1) * isy, in + y * isy, in + (y + 1) * isy};
      const ndf_i64 cols[3] = {(x - 1) * isx, x * isx, (x + 1) * isx};
      const bool yok[3] = {y >= 1, true, y + 1 < nrow}, xok[3] = {x >= 1, true, x + 1 < nx};
      auto at = [&](int t) -> float {
        return yok[t / 3] && xok[t % 3] ? rows[t / 3][cols[t % 3]] : __int_as_float(0x7fffffff);
      };
      const float f = v < p.npix ? at(4) : 0.0f;
      cr[r] = 0;
      fr[r] = f;
      if (v < p.npix && f != f) {
        if (!nan && p.hdr) atomicMax((unsigned long long *)&p.hdr->nan_key, ~(unsigned long long)(img * p.npix + v));
        nan = true;
      } else if (v < p.npix) {
        cr[r] = ndf_ecc_contribution<2, CONS, float>(f, at);
      }
    }
  } else {
#pragma unroll
    for (int r = 0; r < NDF_S2_CH / 256; r++) {
      const ndf_i64 v = v0 + r * 256 + tid;
      cr[r] = v < p.npix ? p.cbuf[img * p.npix + v] : 0;
      fr[r] = v < p.npix ? p.fbuf[img * p.npix + v] : 0.0f;
    }
  }
  int n = 0;
#pragma unroll
  for (int r = 0; r < NDF_S2_CH / 256; r++) {
    const int j = r * 256 + tid;
    const ndf_i64 v = v0 + j;
    const int c = cr[r];
    const float f = fr[r];
    if (c == 0 && bwd && p.gin && v < p.npix) p.gin[gin_off(v)] = 0.0f;
    const unsigned b = __ballot_sync(0xffffffffu, c != 0);
    if (lane == 0) wcount[warp] = __popc(b);
    __syncthreads();
    int pos = n + __popc(b & ((1u << lane) - 1));
    int tot = n;
    for (int w = 0; w < 8; w++) {
      if (w < warp) pos += wcount[w];
      tot += wcount[w];
    }
    if (c != 0) {
      sv[pos] = make_float2(f, (float)c);
      si[pos] = (unsigned short)j;
    }
    n = tot;
    __syncthreads();
  }
  if (n == 0) return; // uniform over the block
  if (!bwd) ndf_s2_run<false, true>(p, sv, sg, red, n, img, gbase);
  else if (p.gt) ndf_s2_run<true, true>(p, sv, sg, red, n, img, gbase);
  else if (p.gin) ndf_s2_run<true, false>(p, sv, sg, red, n, img, gbase);
  if (bwd && p.gin) {
    __syncthreads();
    for (int e = tid; e < n; e += 256)
      p.gin[gin_off(v0 + si[e])] = (float)(-p.lambda * (double)sv[e].y * sg[e]);
  }
}
#endif
