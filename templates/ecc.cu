// ecc.cu -- Euler characteristic curves on CUDA (runtime/ecc_cuda.c,
// docs/adr/0009-euler-characteristic-curves.md): results equal the CPU
// backend's exactly (exact curve) or to rounding (soft curve).
//
//   ndf_ecc_scan   min, max and the first NaN (C-order index) of the whole
//                  input, one partial per block (the host reduces them).
//   ndf_ecc_hist   the contribution pass.  A block owns a tile of the plane
//                  (3-D: 32 x 8 of (y, x); 2-D: 256 of x) of one image and
//                  marches along the first spatial axis over MC planes,
//                  keeping three planes (tile + halo, NaN outside) in shared
//                  memory, so each value is read from global memory about
//                  once.  Each thread takes its voxel's c(v) (ndf_ecc.cuh),
//                  finds its threshold bin (bin k: t_{k-1} < f <= t_k of the
//                  sorted thresholds; evenly spaced: a first guess corrected
//                  against the exact thresholds, as the CPU does) and adds c
//                  to a per-block shared-memory histogram (a warp whose
//                  adding lanes share one bin adds once).  One global atomic per
//                  non-zero bin per block.  Too many thresholds for shared
//                  memory: the atomics go to the global histogram directly.
//                  SOFT: the pass writes c (int8) and f (V) per voxel instead.
//   ndf_ecc_final  per image the prefix sum of the histogram, written in the
//                  caller's threshold order (perm) with the output's strides.
//   ndf_ecc_soft   soft ECC over SOFT's (c, f): a block compacts the voxels
//                  of a chunk with c != 0 into shared memory, then forward
//                  acc[img][k] += sum c s_k, backward gt[k] += lambda g_k sum
//                  c s_k (1 - s_k) and grad_input = -lambda c sum_k g_k s_k
//                  (1 - s_k), s_k = sigmoid(lambda (t_k - f)).
//   ndf_ecc_put    copies nimg x T doubles into a strided (batch..., T) array.
#include "ndf_common.cuh"
#include "ndf_ecc.cuh"
#include "ndf_ecc_pack.cuh"

typedef NDF_SLOT(TIN) TIN; // input element type
typedef NDF_SLOT(V) V;     // comparison type: float (uint8/uint16/float32) or double
#define NSP NDF_SLOT(NSP)  // spatial axes, 2 or 3
#define CONS NDF_SLOT(CONS) // 0 V-construction, 1 T-construction
#define SOFT NDF_SLOT(SOFT) // 1: ndf_ecc_hist writes c and f instead of the histogram
#define RNG NDF_SLOT(RNG)   // 1: ndf_ecc_strip3 / strip3n / strip3s / strip2t over a given range
#ifndef NDF_LEAN
#define NDF_LEAN 0 // 1 (NVRTC -DNDF_LEAN=1, the tunable jit.lean; ADR 0025): the forms that compile faster
#endif
// uint8 / uint16 input: the telescoped kernels' exact integer binner (ndf_ecc3_binner)
constexpr bool NDF_ECC_IB = sizeof(TIN) < 4;


template <typename W> __device__ __forceinline__ W ndf_nan();
template <> __device__ __forceinline__ float ndf_nan<float>() { return __int_as_float(0x7fffffff); }
template <> __device__ __forceinline__ double ndf_nan<double>() { return __longlong_as_double(0x7ff8000000000000LL); }

#include "ndf_ecc_fused.cuh" // the header, prefix sums, grid barrier

// ---- min / max / NaN ----------------------------------------------------------------------------
NDF_PARAMS(ndf_ecc_scan_params)

// The last block of ndf_ecc_scan: min, max, NaN over the partials, then the
// thresholds exactly as the CPU's make_thresholds and ecc_cpu take them:
// t_k = lo + (hi - lo) * k / (T - 1) in double (explicit roundings, no
// contraction), t_{T-1} = hi, sorted by (t, k).  fl() is monotone, so
// t_0..t_{T-2} are already in order and only hi moves: it goes after the m
// thresholds t_j <= hi (j < T - 1), before the others.  Then the binner:
// uniform when ts[T-1] > ts[0], lo = ts[0], inv_step = (T - 1) / (ts[T-1] - ts[0]).
__device__ void ndf_ecc_scan_finish(const ndf_ecc_scan_params &p) {
  __shared__ double rmn[256], rmx[256];
  __shared__ unsigned long long rkey[256];
  __shared__ int rcnt[256];
  const int tid = threadIdx.x;
  double lo = 1.0 / 0.0, hi = -1.0 / 0.0;
  unsigned long long key = 0;
  for (unsigned b = tid; b < gridDim.x; b += 256) {
    lo = fmin(lo, __ldcg(p.mn + b));
    hi = fmax(hi, __ldcg(p.mx + b));
    const long long na = __ldcg(p.nan_at + b);
    if (na >= 0) key = max(key, ~(unsigned long long)na);
  }
  rmn[tid] = lo;
  rmx[tid] = hi;
  rkey[tid] = key;
  __syncthreads();
  for (int o = 128; o > 0; o >>= 1) {
    if (tid < o) {
      rmn[tid] = fmin(rmn[tid], rmn[tid + o]);
      rmx[tid] = fmax(rmx[tid], rmx[tid + o]);
      rkey[tid] = max(rkey[tid], rkey[tid + o]);
    }
    __syncthreads();
  }
  lo = rmn[0];
  hi = rmx[0];
  key = rkey[0];
  const bool bad = p.need_range && !(isfinite(lo) && isfinite(hi));
  if (tid == 0) {
    p.hdr->mn = lo;
    p.hdr->mx = hi;
    p.hdr->nan_key = key;
    p.hdr->bad = bad ? 1 : 0;
  }
  if (!p.need_range || bad) return;
  const ndf_i64 T = p.T;
  const double span = __dsub_rn(hi, lo), den = (double)(T - 1);
  int cnt = 0;
  for (ndf_i64 k = tid; k < T - 1; k += 256) cnt += __dadd_rn(lo, __ddiv_rn(__dmul_rn(span, (double)k), den)) <= hi;
  rcnt[tid] = cnt;
  __syncthreads();
  for (int o = 128; o > 0; o >>= 1) {
    if (tid < o) rcnt[tid] += rcnt[tid + o];
    __syncthreads();
  }
  const ndf_i64 m = rcnt[0];
  for (ndf_i64 k = tid; k < T - 1; k += 256) {
    const double t = __dadd_rn(lo, __ddiv_rn(__dmul_rn(span, (double)k), den));
    const ndf_i64 pos = k < m ? k : k + 1;
    p.ts[pos] = t;
    p.perm[pos] = k;
  }
  if (tid == 0) {
    p.ts[m] = hi;
    p.perm[m] = T - 1;
    // ts[0] and ts[T-1] of the sorted list
    const double t0 = m == 0 ? hi : __dadd_rn(lo, __ddiv_rn(__dmul_rn(span, 0.0), den));
    const double tl = m == T - 1 ? hi : __dadd_rn(lo, __ddiv_rn(__dmul_rn(span, (double)(T - 2)), den));
    p.hdr->uniform = tl > t0 ? 1 : 0;
    p.hdr->lo = t0;
    p.hdr->inv_step = tl > t0 ? __ddiv_rn(den, __dsub_rn(tl, t0)) : 0.0;
  }
}

// at most 64 registers: the grid is 4 blocks per SM
#if NDF_KERNEL(ndf_ecc_scan)
extern "C" __global__ void __launch_bounds__(256, 4) ndf_ecc_scan(const ndf_ecc_scan_params p) {
  __shared__ double smn[8], smx[8];
  __shared__ ndf_i64 snan[8];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  double lo = 1.0 / 0.0, hi = -1.0 / 0.0;
  ndf_i64 nan_at = 0x7fffffffffffffffLL;
  for (ndf_i64 row = (ndf_i64)blockIdx.x * 8 + warp; row < p.nrows; row += (ndf_i64)gridDim.x * 8) {
    ndf_i64 off = 0, q = row;
    for (int d = p.nd - 2; d >= 0; d--) {
      off += (q % p.shape[d]) * p.str[d];
      q /= p.shape[d];
    }
    const TIN *rp = p.in + off;
    // 8 loads in flight per lane before any is used: one load at a time per
    // warp would leave the scan latency-bound (~0.5 TB/s)
    for (ndf_i64 x0 = 0; x0 < p.nl; x0 += 256) {
      TIN v[8];
#pragma unroll
      for (int j = 0; j < 8; j++) {
        const ndf_i64 x = x0 + lane + 32 * j;
        v[j] = x < p.nl ? rp[x * p.sl] : (TIN)0;
      }
#pragma unroll
      for (int j = 0; j < 8; j++) {
        const ndf_i64 x = x0 + lane + 32 * j;
        const double f = (double)v[j];
        if (x < p.nl) {
          if (f != f) nan_at = min(nan_at, row * p.nl + x);
          else {
            lo = fmin(lo, f);
            hi = fmax(hi, f);
          }
        }
      }
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    lo = fmin(lo, __shfl_xor_sync(0xffffffffu, lo, o));
    hi = fmax(hi, __shfl_xor_sync(0xffffffffu, hi, o));
    nan_at = min(nan_at, (ndf_i64)__shfl_xor_sync(0xffffffffu, nan_at, o));
  }
  if (lane == 0) {
    smn[warp] = lo;
    smx[warp] = hi;
    snan[warp] = nan_at;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < 8; w++) {
      lo = fmin(lo, smn[w]);
      hi = fmax(hi, smx[w]);
      nan_at = min(nan_at, snan[w]);
    }
    p.mn[blockIdx.x] = lo;
    p.mx[blockIdx.x] = hi;
    p.nan_at[blockIdx.x] = nan_at == 0x7fffffffffffffffLL ? -1 : nan_at;
  }
  if (p.hdr) {
    __shared__ bool last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(&p.hdr->ticket, 1u) == gridDim.x - 1;
    __syncthreads();
    if (last) {
      __threadfence();
      ndf_ecc_scan_finish(p);
    }
  }
}
#endif

// ---- contributions and the threshold histogram ---------------------------------------------------
NDF_PARAMS(ndf_ecc_params)

#define NDF_BX (NSP == 3 ? 32 : 256)
#define NDF_BY (NSP == 3 ? 8 : 1)
#define NDF_PH (NSP == 3 ? NDF_BY + 2 : 1)
#define NDF_PW (NDF_BX + 2)
#define NDF_PS (NDF_PH * NDF_PW)

// at most 32 registers (sm_90, nvcc 13: no spills but 24 bytes in the 2-D soft pass): 8 blocks per SM, the new path's grid is about one such wave
#if NDF_KERNEL(ndf_ecc_hist)
extern "C" __global__ void __launch_bounds__(256, 8)
    ndf_ecc_hist(const ndf_ecc_params p) {
  // the scan found NaN or an infinite [min, max]: no thresholds, nothing to write
  if (p.dev_binner && (p.hdr->nan_key != 0ull || p.hdr->bad != 0)) return;
  __shared__ V plane[3 * NDF_PS];
  extern __shared__ double dyn[]; // smem_ts: the T thresholds, then T + 1 counters
  const int tid = threadIdx.x, tx = tid % NDF_BX, ty = tid / NDF_BX, lane = tid & 31;
  const double *ts = p.smem_ts ? dyn : p.ts;
  // the binner (from the header when the scan derived the thresholds): in
  // shared memory, not in registers that would stay live over the march
  __shared__ double s_bin[2];
  __shared__ int s_uni, s_nan;
  if (tid == 0) {
    s_bin[0] = p.dev_binner ? p.hdr->lo : p.lo;
    s_bin[1] = p.dev_binner ? p.hdr->inv_step : p.inv_step;
    s_uni = p.dev_binner ? p.hdr->uniform : p.uniform;
    s_nan = 0;
  }
  int *shist = (int *)(dyn + p.T);
  if (!SOFT && p.smem_ts) {
    for (ndf_i64 k = tid; k < p.T; k += 256) dyn[k] = p.ts[k];
    for (ndf_i64 k = tid; k <= p.T; k += 256) shist[k] = 0;
  }
  ndf_i64 item = blockIdx.x;
  const ndf_i64 chunk = item % p.nchunks;
  item /= p.nchunks;
  const ndf_i64 tile = item % p.ptiles, img = item / p.ptiles;
  const ndf_i64 x0 = (tile % p.ntx) * NDF_BX, y0 = (tile / p.ntx) * NDF_BY;
  const ndf_i64 z0 = chunk * p.mc, z1 = min(z0 + p.mc, p.nz);
  ndf_i64 base = 0, q = img;
  for (int d = p.nb - 1; d >= 0; d--) {
    base += (q % p.bshape[d]) * p.bstr[d];
    q /= p.bshape[d];
  }
  const TIN *in = p.in + base;
  // planes z0 - 1, z0, z0 + 1 go to buffers 0, 1, 2 (then they rotate), NaN outside
  // the image.  A thread's plane elements sit at fixed (y, x): their offsets
  // are taken once; the next plane is fetched into registers before the
  // current one is computed, so its load latency overlaps the compute.
  constexpr int NLD = (NDF_PS + 255) / 256;
  ndf_i64 loff[NLD];
  bool lok[NLD];
#pragma unroll
  for (int e = 0; e < NLD; e++) {
    const int i = tid + 256 * e, r = i / NDF_PW, cx = i % NDF_PW;
    const ndf_i64 yy = y0 - (NSP == 3 ? 1 : 0) + r, xx = x0 - 1 + cx;
    lok[e] = i < NDF_PS && yy >= 0 && yy < p.ny && xx >= 0 && xx < p.nx;
    loff[e] = lok[e] ? yy * p.sy + xx * p.sx : 0;
  }
  V nxt[NLD];
  auto fetch = [&](ndf_i64 zz) {
    const bool zin = zz >= 0 && zz < p.nz;
    const ndf_i64 zo = zin ? zz * p.sz : 0;
#pragma unroll
    for (int e = 0; e < NLD; e++) nxt[e] = zin && lok[e] ? (V)in[zo + loff[e]] : ndf_nan<V>();
  };
  // buffers rotate by offsets (no 64-bit % 3 per plane): om, oc, op hold
  // planes z - 1, z, z + 1
  int om = 0, oc = NDF_PS, op = 2 * NDF_PS;
  auto store = [&](int off) {
    V *dst = plane + off;
#pragma unroll
    for (int e = 0; e < NLD; e++)
      if (tid + 256 * e < NDF_PS) dst[tid + 256 * e] = nxt[e];
  };
  fetch(z0 - 1);
  store(om);
  fetch(z0);
  store(oc);
  fetch(z0 + 1);
  const ndf_i64 y = y0 + ty, x = x0 + tx;
  const bool col_in = y < p.ny && x < p.nx;
  const int ci = (NSP == 3 ? (ty + 1) * NDF_PW : 0) + tx + 1;
  for (ndf_i64 z = z0; z < z1; z++) {
    store(op); // buffer of plane z - 2: free since the last barrier
    __syncthreads();
    if (z + 1 < z1) fetch(z + 2);
    const V *pm = plane + om;
    const V *pc = plane + oc;
    const V *pp = plane + op;
    {
      const int o = om;
      om = oc;
      oc = op;
      op = o;
    }
    const V fv = pc[ci];
    int c = 0;
    if (col_in && fv != fv) s_nan = 1; // located after the march (rare: keeps the loop's registers)
    if (col_in && fv == fv) { // NaN: c = 0 (the call fails; keeps the bin search in range)
      auto at = [&](int t) -> V {
        const int pz = NSP == 3 ? t / 9 : t / 3;
        const int dy = NSP == 3 ? (t / 3) % 3 - 1 : 0;
        const int dx = t % 3 - 1;
        const V *pl = pz == 0 ? pm : pz == 1 ? pc : pp;
        return pl[ci + dy * NDF_PW + dx];
      };
      c = ndf_ecc_contribution<NSP, CONS, V>(fv, at);
    }
    if (SOFT) {
      if (col_in) {
        const ndf_i64 v = img * (p.nz * p.ny * p.nx) + (z * p.ny + y) * p.nx + x;
        p.cbuf[v] = (signed char)c;
        p.fbuf[v] = fv;
      }
    } else {
      int bin = (int)p.T;
      if (c != 0) {
        const double v = (double)fv;
        ndf_i64 k;
        if (s_uni) {
          const double g = ceil(__dmul_rn(__dsub_rn(v, s_bin[0]), s_bin[1]));
          k = g <= 0 ? 0 : g >= (double)p.T ? p.T : (ndf_i64)g;
          while (k > 0 && v <= ts[k - 1]) k--;
          while (k < p.T && v > ts[k]) k++;
        } else {
          ndf_i64 a = 0, b = p.T;
          while (a < b) {
            const ndf_i64 mid = a + (b - a) / 2;
            if (v <= ts[mid]) b = mid;
            else a = mid + 1;
          }
          k = a;
        }
        bin = (int)k;
      }
      const bool add = c != 0 && bin < p.T;
      const unsigned act = __ballot_sync(0xffffffffu, add);
      if (add) {
        // one atomic when every adding lane has the same bin (flat regions,
        // constant images); otherwise one per lane (the bins are spread, and
        // __match_any_sync costs more than the atomics it would save)
        const int lead = __ffs(act) - 1;
        const int b0 = __shfl_sync(act, bin, lead);
        int sum = c, at = bin;
        bool mine = true;
        if (__all_sync(act, bin == b0)) {
          sum = __reduce_add_sync(act, c);
          at = b0;
          mine = lane == lead;
        }
        if (mine) {
          if (p.smem_ts) atomicAdd(&shist[at], sum);
          else atomicAdd(&p.hist[img * p.T + at], (ndf_u64)(long long)sum);
        }
      }
    }
    __syncthreads();
  }
  if (!SOFT && p.smem_ts) {
    for (ndf_i64 k = tid; k < p.T; k += 256)
      if (shist[k]) atomicAdd(&p.hist[img * p.T + k], (ndf_u64)(long long)shist[k]);
  }
  // the tails below take the block's place again from a volatile read of
  // the block index (not kept live over the march: 32 registers)
  if (p.check_nan || (!SOFT && p.cnt)) {
    unsigned bid, tid2;
    asm volatile("mov.u32 %0, %%ctaid.x;" : "=r"(bid));
    asm volatile("mov.u32 %0, %%tid.x;" : "=r"(tid2));
    // 32-bit: fewer than 2^31 blocks (checked by the host), so every count here fits
    const unsigned ch2 = bid % (unsigned)p.nchunks, it2 = bid / (unsigned)p.nchunks;
    const unsigned tile2 = it2 % (unsigned)p.ptiles, img2 = it2 / (unsigned)p.ptiles;
    if (p.check_nan) {
      // a NaN among this block's voxels: its least C-order index into the header
      __syncthreads();
      const ndf_i64 yy = (ndf_i64)(tile2 / (unsigned)p.ntx) * NDF_BY + (ndf_i64)(tid2 / NDF_BX),
                    xx = (ndf_i64)(tile2 % (unsigned)p.ntx) * NDF_BX + (ndf_i64)(tid2 % NDF_BX);
      if (s_nan && yy < p.ny && xx < p.nx) {
        ndf_i64 b2 = 0;
        unsigned q2 = img2;
        for (int d = p.nb - 1; d >= 0; d--) {
          b2 += (ndf_i64)(q2 % (unsigned)p.bshape[d]) * p.bstr[d];
          q2 /= (unsigned)p.bshape[d];
        }
        const ndf_i64 za = (ndf_i64)ch2 * p.mc, zb = min(za + p.mc, p.nz);
        for (ndf_i64 z = za; z < zb; z++) {
          const V f = (V)p.in[b2 + z * p.sz + yy * p.sy + xx * p.sx];
          if (f != f) {
            atomicMax(&p.hdr->nan_key, ~(ndf_u64)((ndf_i64)img2 * (p.nz * p.ny * p.nx) + (z * p.ny + yy) * p.nx + xx));
            break;
          }
        }
      }
    }
    if (!SOFT && p.cnt) {
      // the image's last block writes its curve (when the header is clean)
      __shared__ bool last;
      __threadfence();
      __syncthreads();
      if (tid2 == 0) last = atomicAdd(&p.cnt[img2], 1u) == (unsigned)(p.ptiles * p.nchunks) - 1u;
      __syncthreads();
      if (last) {
        __threadfence();
        if (ndf_ecc_hdr_ok(p.hdr)) {
          ndf_i64 off = 0;
          unsigned q2 = img2;
          for (int d = p.nb - 1; d >= 0; d--) {
            off += (ndf_i64)(q2 % (unsigned)p.oshape[d]) * p.ostr[d];
            q2 /= (unsigned)p.oshape[d];
          }
          ndf_ecc_prefix((const long long *)p.hist + (ndf_i64)img2 * p.T, p.perm, p.out + off, p.T, p.ostep);
        }
      }
    }
  }
}
#endif


// ---- the packed bin kernel (ndf_ecc_pack, default for T <= 510; ndf_ecc_pack.cuh) -------------------
// Same parameters, header and tails as ndf_ecc_hist, in the bin domain: each
// voxel's threshold bin is found once as its plane is loaded (halo included)
// and packed two voxels per word (16-bit halves, 511 outside the image); a
// thread owns one word (voxels x, x + 1) of a (y, x) tile row (3-D: 8 rows of
// 32 words = 64 voxels; 2-D: 256 words) and marches along the first spatial
// axis keeping the three planes' words (x - 1, x, x + 1 shifted) in
// registers, so each step reads 9 shared words (3-D) and computes both
// voxels' c with word-wide compares (ndf_ecc_pack_sum).  The thresholds sit
// in shared memory (float inputs: rounded down to float, so f <= t_k is
// exact in float).  The histogram: one shared atomic per voxel with c != 0.
#define NDF_QW (NSP == 3 ? 32 : 256)
#define NDF_QY (NSP == 3 ? 8 : 1)
#define NDF_QH (NSP == 3 ? NDF_QY + 2 : 1)
#define NDF_QP (NDF_QW + 2)
#define NDF_QS (NDF_QH * NDF_QP)

// The exact bin of ndf_ecc_bin (NaN: T) when the first guess is wrong or the
// thresholds are not evenly spaced: out of line (rare for evenly spaced ones).
template <typename W> __device__ __noinline__ unsigned ndf_ecc_bin_slow(W f, const W *tv, int T, int uni, float lo, float inv) {
  return ndf_ecc_bin<W>(f, tv, T, uni, lo, inv);
}

// bin(f) for float comparisons with evenly spaced thresholds: the guess
// ceil(f * ga + gb) clamped to [0, T], accepted when tp[k] = (tv[k - 1],
// tv[k]) brackets f (one 8-byte shared load), else ndf_ecc_bin (which also
// sends NaN to T: every comparison with NaN fails here).  Any guess gives the
// exact bin; only its speed depends on the guess.
__device__ __forceinline__ unsigned ndf_ecc_bin_pair(float f, const float2 *tp, const float *tv, int T, int uni,
                                                     float ga, float gb, float lo, float inv) {
  if (uni) {
    const int k = min(max(__float2int_ru(fmaf(f, ga, gb)), 0), T);
    const float2 w = tp[k];
    if ((f > w.x) & (f <= w.y)) return (unsigned)k;
    // off by one (a value on a threshold, rounding of the guess): the neighbour
    const int k2 = f <= w.x ? k - 1 : k + 1;
    if (k2 >= 0 && k2 <= T) {
      const float2 w2 = tp[k2];
      if ((f > w2.x) & (f <= w2.y)) return (unsigned)k2;
    }
  }
  return ndf_ecc_bin_slow<float>(f, tv, T, uni, lo, inv);
}

#if NDF_KERNEL(ndf_ecc_pack)
extern "C" __global__ void __launch_bounds__(256, 4) ndf_ecc_pack(const ndf_ecc_params p) {
  if (p.dev_binner && (p.hdr->nan_key != 0ull || p.hdr->bad != 0)) return;
  __shared__ unsigned qpl[2][NDF_QS];
  // dyn: -inf, the T sorted thresholds, +inf (double); T + 1 counters; the
  // same padded table rounded down to float (float inputs)
  extern __shared__ double dyn[];
  const int T = (int)p.T;
  const int tid = threadIdx.x, tx = tid % NDF_QW, ty = tid / NDF_QW;
  int *shist = (int *)(dyn + T + 2);
  float *tsf = (float *)(shist + T + 1);
  const V *tv = sizeof(V) == 4 ? (const V *)(tsf + 1) : (const V *)(dyn + 1);
  // float comparisons: tpair[k] = (tsf[k], tsf[k + 1]) = (tv[k - 1], tv[k]), k = 0..T (8-byte aligned)
  // (bytes 16 T + 28 end the float table: the pairs start at 16 T + 32, a shared-memory pointer from dyn)
  float2 *tpair = (float2 *)(dyn + 2 * T + 4);
  __shared__ float s_lo, s_inv;
  __shared__ int s_uni, s_nan, s_m;
  ndf_i64 item = blockIdx.x;
  const ndf_i64 chunk = item % p.nchunks;
  item /= p.nchunks;
  const ndf_i64 tile = item % p.ptiles, img = item / p.ptiles;
  const ndf_i64 xw0 = (tile % p.ntx) * NDF_QW, y0 = (tile / p.ntx) * NDF_QY;
  const ndf_i64 z0 = chunk * p.mc, z1 = min(z0 + p.mc, p.nz);
  ndf_i64 base = 0, q = img;
  for (int d = p.nb - 1; d >= 0; d--) {
    base += (q % p.bshape[d]) * p.bstr[d];
    q /= p.bshape[d];
  }
  const TIN *in = p.in + base;
  if (p.fused) {
    // ---- phase 1: min, max and NaN of this block's own voxels (each voxel of
    // the batch belongs to exactly one block), its share of the zeroing
    V lo = (V)(1.0 / 0.0), hi = (V)(-1.0 / 0.0);
    bool nan = false;
    const ndf_i64 y = y0 + ty, xb = 2 * (xw0 + tx);
    const bool yin = y < p.ny;
    const TIN *c0 = in + (yin ? y * p.sy + xb * p.sx : 0);
    const bool ok0 = yin && xb < p.nx, ok1 = yin && xb + 1 < p.nx;
    // float pairs as one 8-byte load when unit-stride and aligned (the usual case)
    const bool vec = sizeof(TIN) == 4 && p.sx == 1 && ok1 && (p.sz & 1) == 0 && (((size_t)c0) & 7) == 0;
    const TIN *cz = c0 + z0 * p.sz;
    for (ndf_i64 z = z0; z < z1; z += 8, cz += 8 * p.sz) {
      // eight planes' loads in flight before any is used
      V v[8][2];
      bool ok[8][2];
#pragma unroll
      for (int j = 0; j < 8; j++) {
        const bool zin = z + j < z1;
        ok[j][0] = zin && ok0;
        ok[j][1] = zin && ok1;
        if (vec) {
          if (zin) {
            const float2 f2 = *(const float2 *)(cz + j * p.sz);
            v[j][0] = (V)f2.x;
            v[j][1] = (V)f2.y;
          } else {
            v[j][0] = v[j][1] = (V)0;
          }
        } else {
          v[j][0] = ok[j][0] ? (V)cz[j * p.sz] : (V)0;
          v[j][1] = ok[j][1] ? (V)cz[j * p.sz + p.sx] : (V)0;
        }
      }
#pragma unroll
      for (int j = 0; j < 8; j++)
#pragma unroll
        for (int h = 0; h < 2; h++)
          if (ok[j][h]) {
            nan |= v[j][h] != v[j][h];
            lo = fmin(lo, v[j][h]); // a NaN operand gives the other
            hi = fmax(hi, v[j][h]);
          }
    }
    __shared__ double r_lo[8], r_hi[8];
    __shared__ unsigned long long r_key;
    const int lane = tid & 31, warp = tid >> 5;
    for (int o = 16; o > 0; o >>= 1) {
      lo = fmin(lo, __shfl_xor_sync(0xffffffffu, lo, o));
      hi = fmax(hi, __shfl_xor_sync(0xffffffffu, hi, o));
    }
    if (tid == 0) r_key = 0ull;
    if (lane == 0) {
      r_lo[warp] = (double)lo;
      r_hi[warp] = (double)hi;
    }
    if (__syncthreads_or(nan)) {
      // rare: the least C-order index of a NaN among this block's voxels
      // (per column the first z; ~index kept by atomicMax)
#pragma unroll
      for (int h = 0; h < 2; h++) {
        if (h == 0 ? ok0 : ok1) {
          for (ndf_i64 z = z0; z < z1; z++) {
            const V f = (V)c0[z * p.sz + h * p.sx];
            if (f != f) {
              atomicMax(&r_key, ~(ndf_u64)(img * (p.nz * p.ny * p.nx) + (z * p.ny + y) * p.nx + xb + h));
              break;
            }
          }
        }
      }
      __syncthreads();
    }
    if (tid == 0) {
      double a = r_lo[0], b = r_hi[0];
      for (int w = 1; w < 8; w++) {
        a = fmin(a, r_lo[w]);
        b = fmax(b, r_hi[w]);
      }
      p.part[3 * blockIdx.x] = a;
      p.part[3 * blockIdx.x + 1] = b;
      ((ndf_u64 *)p.part)[3 * blockIdx.x + 2] = r_key;
    }
    // zero the histogram and the per-image tickets (used after the barrier)
    {
      const ndf_i64 nh = p.nimg * p.T, stride = (ndf_i64)gridDim.x * 256;
      for (ndf_i64 i = (ndf_i64)blockIdx.x * 256 + tid; i < nh; i += stride) p.hist[i] = 0ull;
      for (ndf_i64 i = (ndf_i64)blockIdx.x * 256 + tid; i < p.nimg; i += stride) p.cnt[i] = 0u;
    }
    ndf_ecc_grid_sync(p.gbar);
    // ---- phase 2: every block reduces the partials (the same values in each)
    double a = 1.0 / 0.0, b = -1.0 / 0.0;
    unsigned long long key = 0;
    for (unsigned k = tid; k < gridDim.x; k += 256) {
      a = fmin(a, __ldcg(p.part + 3 * k));
      b = fmax(b, __ldcg(p.part + 3 * k + 1));
      key = max(key, __ldcg((const ndf_u64 *)p.part + 3 * k + 2));
    }
    for (int o = 16; o > 0; o >>= 1) {
      a = fmin(a, __shfl_xor_sync(0xffffffffu, a, o));
      b = fmax(b, __shfl_xor_sync(0xffffffffu, b, o));
      key = max(key, __shfl_xor_sync(0xffffffffu, key, o));
    }
    __syncthreads(); // r_lo, r_hi, r_key reused
    if (tid == 0) r_key = 0ull;
    __syncthreads();
    if (lane == 0) {
      r_lo[warp] = a;
      r_hi[warp] = b;
      atomicMax(&r_key, key);
    }
    __syncthreads();
    a = r_lo[0];
    b = r_hi[0];
    for (int w = 1; w < 8; w++) {
      a = fmin(a, r_lo[w]);
      b = fmax(b, r_hi[w]);
    }
    key = r_key;
    const int bad = !(isfinite(a) && isfinite(b));
    if (blockIdx.x == 0 && tid == 0) {
      p.hdr->mn = a;
      p.hdr->mx = b;
      p.hdr->nan_key = key;
      p.hdr->bad = bad;
    }
    if (key != 0ull || bad) return; // the whole grid: nothing is written
    // the thresholds over [a, b] sorted (as ndf_ecc_scan_finish), with the
    // -inf / +inf pads, into dyn (double) and tsf (float, rounded down)
    const double span = __dsub_rn(b, a), den = (double)(T - 1);
    int m = 0;
    for (int k0 = 0; k0 < T - 1; k0 += 256) {
      const int k = k0 + tid;
      m += __syncthreads_count(k < T - 1 && __dadd_rn(a, __ddiv_rn(__dmul_rn(span, (double)k), den)) <= b);
    }
    for (int k = tid; k < T - 1; k += 256) {
      const double t = __dadd_rn(a, __ddiv_rn(__dmul_rn(span, (double)k), den));
      const int pos = k < m ? k : k + 1;
      dyn[pos + 1] = t;
      if (sizeof(V) == 4) tsf[pos + 1] = __double2float_rd(t);
    }
    if (tid == 0) {
      dyn[m + 1] = b;
      dyn[0] = -1.0 / 0.0;
      dyn[T + 1] = 1.0 / 0.0;
      if (sizeof(V) == 4) {
        tsf[m + 1] = __double2float_rd(b);
        tsf[0] = -1.0f / 0.0f;
        tsf[T + 1] = 1.0f / 0.0f;
      }
      const double t0 = m == 0 ? b : __dadd_rn(a, __ddiv_rn(__dmul_rn(span, 0.0), den));
      const double tl = m == T - 1 ? b : __dadd_rn(a, __ddiv_rn(__dmul_rn(span, (double)(T - 2)), den));
      s_lo = (float)t0;
      s_inv = (float)(tl > t0 ? __ddiv_rn(den, __dsub_rn(tl, t0)) : 0.0);
      s_uni = tl > t0 ? 1 : 0;
      s_nan = 0;
      s_m = m;
    }
  } else {
    if (tid == 0) {
      s_lo = (float)(p.dev_binner ? p.hdr->lo : p.lo);
      s_inv = (float)(p.dev_binner ? p.hdr->inv_step : p.inv_step);
      s_uni = p.dev_binner ? p.hdr->uniform : p.uniform;
      s_nan = 0;
    }
    for (int k = tid - 1; k <= T; k += 256) {
      const double t = k < 0 ? -1.0 / 0.0 : k == T ? 1.0 / 0.0 : __ldcg(p.ts + k);
      dyn[k + 1] = t;
      if (sizeof(V) == 4) tsf[k + 1] = __double2float_rd(t);
    }
  }
  for (int k = tid; k <= T; k += 256) shist[k] = 0;
  if (sizeof(V) == 4) {
    __syncthreads(); // tsf
    for (int k = tid; k <= T; k += 256) tpair[k] = make_float2(tsf[k], tsf[k + 1]);
  }
  // the first guess ceil(f * ga + gb) of ndf_ecc_bin_pair (thread 0 wrote s_lo and s_inv)
  __shared__ float s_ga, s_gb;
  if (tid == 0) {
    s_ga = s_inv;
    s_gb = -s_lo * s_inv;
  }
  // load slots: word (r, cw) of the plane tile with its halo; bit h of lok:
  // voxel 2 xw + h is inside the plane
  constexpr int NLD = (NDF_QS + 255) / 256;
  const TIN *lp[NLD]; // the slot's first voxel in plane 0
  unsigned lok[NLD];
#pragma unroll
  for (int e = 0; e < NLD; e++) {
    const int i = tid + 256 * e, r = i / NDF_QP, cw = i % NDF_QP;
    const ndf_i64 yy = y0 - (NSP == 3 ? 1 : 0) + r, xx = 2 * (xw0 - 1 + cw);
    const bool rok = i < NDF_QS && yy >= 0 && yy < p.ny && xx >= 0;
    lok[e] = rok ? (unsigned)(xx < p.nx) | ((unsigned)(xx + 1 < p.nx) << 1) : 0u;
    lp[e] = in + (lok[e] ? yy * p.sy + xx * p.sx : 0);
  }
  V nv[NLD][2];
  bool nzin = false;
  // planes are fetched in order z0 - 1, z0, ...: the plane offset steps by sz
  ndf_i64 zo = (z0 - 1) * p.sz;
  // float pairs as one 8-byte load: unit x stride, even strides and width, aligned base
  const bool vec = sizeof(TIN) == 4 && p.sx == 1 && ((p.sy | p.sz | p.nx) & 1) == 0 && (((size_t)in) & 7) == 0;
  auto fetch = [&](ndf_i64 zz) {
    nzin = zz >= 0 && zz < p.nz;
#pragma unroll
    for (int e = 0; e < NLD; e++) {
      const TIN *q = lp[e] + zo;
      if (vec) {
        // lok bit 0 implies bit 1 here (even width)
        float2 f2 = make_float2(0.0f, 0.0f);
        if (nzin && (lok[e] & 1u)) f2 = *(const float2 *)q;
        nv[e][0] = (V)f2.x;
        nv[e][1] = (V)f2.y;
      } else {
        nv[e][0] = nzin && (lok[e] & 1u) ? (V)q[0] : (V)0;
        nv[e][1] = nzin && (lok[e] & 2u) ? (V)q[p.sx] : (V)0;
      }
    }
    zo += p.sz;
  };
  // NaN among this thread's loads: nacc + f * 0 is NaN from then on (also for +-inf: a
  // false alarm only costs the column re-read after the march, which finds no NaN)
  V nacc = 0;
  auto store = [&](int buf) {
#pragma unroll
    for (int e = 0; e < NLD; e++) {
      const int i = tid + 256 * e;
      if (i < NDF_QS) {
        unsigned w = CONS == 1 ? NDF_ECC_PG : 0u;
#pragma unroll
        for (int h = 0; h < 2; h++) {
          unsigned b = NDF_ECC_POUT;
          if (nzin && ((lok[e] >> h) & 1u)) {
            const V f = nv[e][h];
            // NaN: T, never counted; located after the march
            if (sizeof(V) == 4)
              b = ndf_ecc_bin_pair((float)f, tpair, (const float *)tv, T, s_uni, s_ga, s_gb, s_lo, s_inv);
            else
              b = ndf_ecc_bin_slow<V>(f, tv, T, s_uni, s_lo, s_inv);
            nacc = fma(f, (V)0, nacc);
          }
          w |= b << (16 * h);
        }
        qpl[buf][i] = w;
      }
    }
  };
  auto rd = [&](int buf, unsigned (&R)[3][3]) {
#pragma unroll
    for (int ry = 0; ry < 3; ry++) {
      if (NSP == 2 && ry != 1) continue;
      const unsigned *row = qpl[buf] + (NSP == 3 ? (ty + ry) * NDF_QP : 0);
      const unsigned L = row[tx], W = row[tx + 1], Rw = row[tx + 2];
      R[ry][0] = __byte_perm(L, W, 0x5432);
      R[ry][1] = W;
      R[ry][2] = __byte_perm(W, Rw, 0x5432);
    }
  };
  unsigned A[3][3], B[3][3], C[3][3];
  if (NSP == 2) {
#pragma unroll
    for (int k = 0; k < 3; k++) A[0][k] = A[2][k] = B[0][k] = B[2][k] = C[0][k] = C[2][k] = 0u;
  }
  __syncthreads(); // the tables
  // planes z go to buffer (z - z0 + 1) & 1
  fetch(z0 - 1);
  store(0);
  __syncthreads();
  rd(0, A);
  fetch(z0);
  store(1);
  __syncthreads();
  rd(1, B);
  fetch(z0 + 1);
  // 2-D: this thread's word holds a voxel of the image (else its steps only load and
  // store: a 256-wide image leaves half the 512-wide tile's warps idle; 3-D would spill)
  const bool act = NSP == 3 || 2 * (xw0 + tx) < p.nx;
  auto step = [&](const unsigned (&Pm)[3][3], const unsigned (&Pc)[3][3], unsigned (&Pp)[3][3], ndf_i64 z) {
    const int buf = (int)((z - z0) & 1);
    store(buf); // plane z + 1; this buffer was last read two steps ago, before the last barrier
    __syncthreads();
    if (z + 2 <= z1) fetch(z + 2);
    if (NSP == 2 && !act) return; // both voxels outside the image (whole warps past a narrow image's width)
    rd(buf, Pp);
    const unsigned d = ndf_ecc_pack_sum<NSP, CONS>(Pm, Pc, Pp);
    const unsigned w = Pc[1][1];
#pragma unroll
    for (int h = 0; h < 2; h++) {
      const unsigned b = (w >> (16 * h)) & 0x1ffu;
      const int c = ndf_ecc_pack_c<NSP, CONS>(d, h);
      if (c != 0 && b < (unsigned)T) atomicAdd(&shist[b], c);
    }
  };
  for (ndf_i64 z = z0; z < z1; z += 3) {
    step(A, B, C, z);
    if (z + 1 >= z1) break;
    step(B, C, A, z + 1);
    if (z + 2 >= z1) break;
    step(C, A, B, z + 2);
  }
  if (nacc != nacc) s_nan = 1;
  __syncthreads();
  for (int k = tid; k < T; k += 256)
    if (shist[k]) atomicAdd(&p.hist[img * p.T + k], (ndf_u64)(long long)shist[k]);
  if (p.check_nan && s_nan) {
    // a NaN among this block's loads: each thread reports the least NaN of its two columns
    const ndf_i64 y = y0 + ty;
#pragma unroll
    for (int h = 0; h < 2; h++) {
      const ndf_i64 x = 2 * (xw0 + tx) + h;
      if (y < p.ny && x < p.nx) {
        for (ndf_i64 z = z0; z < z1; z++) {
          const V f = (V)in[z * p.sz + y * p.sy + x * p.sx];
          if (f != f) {
            atomicMax(&p.hdr->nan_key, ~(ndf_u64)(img * (p.nz * p.ny * p.nx) + (z * p.ny + y) * p.nx + x));
            break;
          }
        }
      }
    }
  }
  if (p.cnt) {
    // the image's last block writes its curve (when the header is clean)
    __shared__ bool last;
    __threadfence();
    __syncthreads();
    if (tid == 0) last = atomicAdd(&p.cnt[img], 1u) == (unsigned)(p.ptiles * p.nchunks) - 1u;
    __syncthreads();
    if (last) {
      __threadfence();
      if (p.fused || ndf_ecc_hdr_ok(p.hdr)) { // fused: a bad header returned before the march
        ndf_i64 off = 0, q2 = img;
        for (int d = p.nb - 1; d >= 0; d--) {
          off += (q2 % p.oshape[d]) * p.ostr[d];
          q2 /= p.oshape[d];
        }
        if (p.fused) ndf_ecc_prefix_m((const long long *)p.hist + img * p.T, s_m, p.out + off, p.T, p.ostep);
        else ndf_ecc_prefix((const long long *)p.hist + img * p.T, p.perm, p.out + off, p.T, p.ostep);
      }
    }
  }
}
#endif

// ---- prefix sums in the caller's order -----------------------------------------------------------
NDF_PARAMS(ndf_ecc_final_params)

#if NDF_KERNEL(ndf_ecc_final)
extern "C" __global__ void __launch_bounds__(256) ndf_ecc_final(const ndf_ecc_final_params p) {
  if (p.hdr && !ndf_ecc_hdr_ok(p.hdr)) return;
  __shared__ long long wsum[8];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (ndf_i64 img = blockIdx.x; img < p.nimg; img += gridDim.x) {
    ndf_i64 off = 0, q = img;
    for (int d = p.nb - 1; d >= 0; d--) {
      off += (q % p.oshape[d]) * p.ostr[d];
      q /= p.oshape[d];
    }
    long long carry = 0;
    for (ndf_i64 k0 = 0; k0 < p.T; k0 += 256) {
      const ndf_i64 k = k0 + threadIdx.x;
      long long v = k < p.T ? p.hist[img * p.T + k] : 0;
      for (int o = 1; o < 32; o <<= 1) {
        const long long u = __shfl_up_sync(0xffffffffu, v, o);
        if (lane >= o) v += u;
      }
      if (lane == 31) wsum[warp] = v;
      __syncthreads();
      long long before = carry, total = carry;
      for (int w = 0; w < 8; w++) {
        if (w < warp) before += wsum[w];
        total += wsum[w];
      }
      if (k < p.T) p.out[off + p.perm[k] * p.ostep] = before + v;
      carry = total;
      __syncthreads();
    }
  }
}
#endif

// ---- soft ECC ---------------------------------------------------------------------------------------
#define NDF_SOFT_CH 1024 // voxels per block
NDF_PARAMS(ndf_ecc_soft_params)

__device__ __forceinline__ float ndf_sigmoid(float z) { return 1.0f / (1.0f + __expf(-z)); }
__device__ __forceinline__ double ndf_sigmoid(double z) { return 1.0 / (1.0 + exp(-z)); }
// sigmoid(lambda (t - f)) for a float f and t = th + tl (a float pair): d =
// (th - f) + tl has the relative error of a float even when t and f are
// close (no cancellation of a rounded t), then 1 / (1 + 2^(kneg d)), kneg =
// -lambda log2(e): two MUFU ops, no double arithmetic or conversions; about
// 1e-7 from the double sigmoid (2^(+-inf) gives 0 and 1).
__device__ __forceinline__ float ndf_sigmoid_pair(float th, float tl, float f, float kneg) {
  const float d = __fadd_rn(__fsub_rn(th, f), tl);
  float e;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(__fmul_rn(kneg, d)));
  return __fdividef(1.0f, 1.0f + e);
}

#if NDF_KERNEL(ndf_ecc_soft)
extern "C" __global__ void __launch_bounds__(256) ndf_ecc_soft(const ndf_ecc_soft_params p) {
  if (p.hdr && !ndf_ecc_hdr_ok(p.hdr)) return;
  __shared__ V sf[NDF_SOFT_CH];
  __shared__ int si[NDF_SOFT_CH];
  __shared__ signed char sc[NDF_SOFT_CH];
  __shared__ double sg[NDF_SOFT_CH];
  __shared__ double tk[256], gk[256], part[256];
  __shared__ float thi[256], tlo[256], gkf[256];
  __shared__ int wcount[8];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const ndf_i64 img = blockIdx.x / p.nchunk, v0 = (blockIdx.x % p.nchunk) * NDF_SOFT_CH;
  ndf_i64 gbase = 0, ibase = 0, q = img;
  for (int d = p.nb - 1; d >= 0; d--) {
    const ndf_i64 c = q % p.bshape[d];
    gbase += c * p.gostr[d];
    ibase += c * p.gistr[d];
    q /= p.bshape[d];
  }
  // grad_input offset of voxel v (C-order index in the image)
  auto gin_off = [&](ndf_i64 v) {
    const ndf_i64 x = v % p.nx, r = v / p.nx;
    return ibase + (r / p.ny) * p.gsz + (r % p.ny) * p.gsy + x * p.gsx;
  };
  // compaction of the chunk's voxels with c != 0, in order
  int n = 0;
  for (int r = 0; r < NDF_SOFT_CH / 256; r++) {
    const int j = r * 256 + tid;
    const ndf_i64 v = v0 + j;
    int c = 0;
    V f = 0;
    if (v < p.npix) {
      c = p.cbuf[img * p.npix + v];
      f = p.fbuf[img * p.npix + v];
      if (c == 0 && p.mode == 1 && p.gin) p.gin[gin_off(v)] = (V)0;
    }
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
      sf[pos] = f;
      sc[pos] = (signed char)c;
      si[pos] = j;
      sg[pos] = 0;
    }
    n = tot;
    __syncthreads();
  }
  if (n == 0) return; // uniform over the block
  const ndf_i64 KQ = p.T >= 256 ? 256 : p.T > 128 ? 256 : p.T > 64 ? 128 : p.T > 32 ? 64 : 32;
  const int parts = (int)(256 / KQ), kk = (int)(tid % KQ), part_id = (int)(tid / KQ);
  const double lam = p.lambda;
  const float kneg = (float)(-lam * 1.4426950408889634); // -lambda log2(e)
  for (ndf_i64 k0 = 0; k0 < p.T; k0 += KQ) {
    const int kn = (int)min((ndf_i64)KQ, p.T - k0);
    if (tid < kn) {
      const double t = p.ts[k0 + tid];
      tk[tid] = t;
      gk[tid] = p.mode == 1 ? p.g[gbase + (k0 + tid) * p.gstep] : 0.0;
      // float inputs: t as a float pair (hi + lo) for ndf_sigmoid_pair
      const float hi = (float)t;
      thi[tid] = hi;
      tlo[tid] = isfinite(hi) ? (float)(t - (double)hi) : 0.0f;
      gkf[tid] = (float)gk[tid];
    }
    __syncthreads();
    // per threshold: sum over the compacted voxels
    if (sizeof(V) == 4 && (p.mode == 0 || p.gt)) {
      // float inputs: every step in float (ndf_sigmoid_pair), sums of 16
      // terms in float added to a double
      double sum = 0;
      if (kk < kn) {
        const float th = thi[kk], tl = tlo[kk];
        float fs = 0;
        int cnt = 0;
        for (int e = part_id; e < n; e += parts) {
          const float sg1 = ndf_sigmoid_pair(th, tl, (float)sf[e], kneg);
          fs = __fmaf_rn((float)sc[e], p.mode == 0 ? sg1 : sg1 * (1.0f - sg1), fs);
          if (++cnt == 16) {
            sum += (double)fs;
            fs = 0;
            cnt = 0;
          }
        }
        sum += (double)fs;
      }
      part[tid] = sum;
      __syncthreads();
      if (part_id == 0 && kk < kn) {
        double tot = 0;
        for (int pi = 0; pi < parts; pi++) tot += part[pi * KQ + kk];
        if (p.mode == 0) atomicAdd(&p.acc[img * p.T + k0 + kk], tot);
        else atomicAdd(&p.gt[k0 + kk], lam * gk[kk] * tot);
      }
    } else if (p.mode == 0 || p.gt) {
      double sum = 0;
      if (kk < kn) {
        const double t = tk[kk];
        for (int e = part_id; e < n; e += parts) {
          const V s = ndf_sigmoid((V)(lam * (t - (double)sf[e])));
          sum += (double)sc[e] * (double)(p.mode == 0 ? s : s * ((V)1 - s));
        }
      }
      part[tid] = sum;
      __syncthreads();
      if (part_id == 0 && kk < kn) {
        double tot = 0;
        for (int pi = 0; pi < parts; pi++) tot += part[pi * KQ + kk];
        if (p.mode == 0) atomicAdd(&p.acc[img * p.T + k0 + kk], tot);
        else atomicAdd(&p.gt[k0 + kk], lam * gk[kk] * tot);
      }
    }
    // per voxel: grad_input
    if (sizeof(V) == 4 && p.mode == 1 && p.gin) {
      for (int e = tid; e < n; e += 256) {
        const float f = (float)sf[e];
        double a = 0;
        float fa = 0;
        for (int j = 0; j < kn; j++) {
          const float sg1 = ndf_sigmoid_pair(thi[j], tlo[j], f, kneg);
          fa = __fmaf_rn(gkf[j], sg1 * (1.0f - sg1), fa);
          if ((j & 15) == 15) {
            a += (double)fa;
            fa = 0;
          }
        }
        sg[e] += a + (double)fa;
      }
    } else if (p.mode == 1 && p.gin) {
      for (int e = tid; e < n; e += 256) {
        const double f = (double)sf[e];
        double a = 0;
        for (int j = 0; j < kn; j++) {
          const V s = ndf_sigmoid((V)(lam * (tk[j] - f)));
          a += gk[j] * (double)(s * ((V)1 - s));
        }
        sg[e] += a;
      }
    }
    __syncthreads();
  }
  if (p.mode == 1 && p.gin)
    for (int e = tid; e < n; e += 256) p.gin[gin_off(v0 + si[e])] = (V)(-lam * (double)sc[e] * sg[e]);
}
#endif

// ---- nimg x T doubles into a strided (batch..., T) array --------------------------------------------
NDF_PARAMS(ndf_ecc_put_params)

#if NDF_KERNEL(ndf_ecc_put)
extern "C" __global__ void __launch_bounds__(256) ndf_ecc_put(const ndf_ecc_put_params p) {
  if (p.hdr && !ndf_ecc_hdr_ok(p.hdr)) return;
  for (ndf_i64 i = (ndf_i64)blockIdx.x * 256 + threadIdx.x; i < p.nimg * p.T; i += (ndf_i64)gridDim.x * 256) {
    ndf_i64 img = i / p.T, k = i % p.T, off = 0;
    for (int d = p.nb - 1; d >= 0; d--) {
      off += (img % p.bshape[d]) * p.bstr[d];
      img /= p.bshape[d];
    }
    p.dst[off + k * p.step] = p.src[i];
  }
}
#endif

// ---- the brick kernel (ndf_ecc_brick, one cooperative launch; runtime/ecc_cuda.c, ecc.brick) -----
// Thresholds over [min, max], T <= 510, the bin domain of ndf_ecc_pack
// without its per-plane march.  The batch is cut into bricks (3-D: 8 planes x
// 8 rows x 64 voxels of x; 2-D: 16 rows x 128 voxels); block b owns the
// contiguous run of bricks [b per, b per + per).
//   phase 1: min, max and the least NaN index of the block's bricks (each
//            voxel in exactly one brick; resident: the bricks with their halo
//            are kept raw in shared memory), its share of zeroing the
//            histogram and tickets, the grid barrier; every block then
//            reduces the partials and derives the thresholds (as ndf_ecc_pack).
//   phase 2: per brick, every word (two voxels' bins, ndf_ecc_pack.cuh) of the
//            brick and its one-voxel halo is binned at once (the loads of
//            eight words per thread in flight; resident: from shared memory)
//            into a shared word array, ONE __syncthreads, then each thread
//            takes its column of words (2-D: 4 rows, 3-D: 8 planes) keeping
//            three planes' words in registers (9 shared reads per step, no
//            barrier) and adds both voxels' c to the shared histogram.  When
//            the image changes and at the end: one global atomic per non-zero
//            bin, then the brick count goes to the image's ticket; the block
//            that completes an image writes its curve.
// Outside the image a voxel's bin is 511 (ndf_ecc_pack.cuh): it is never
// counted (T <= 510) and decides the border cells as NaN does.
#define NDF_KW (NSP == 3 ? 32 : 64)              // words (voxel pairs) of x per brick
#define NDF_KY (NSP == 3 ? 8 : 1)                // rows of y per brick (3-D)
#define NDF_KZ (NSP == 3 ? 8 : 16)               // planes (2-D: rows) of the first axis per brick
#define NDF_KG (256 / (NDF_KW * NDF_KY))         // thread groups along the first axis: 1 (3-D), 4 (2-D)
#define NDF_KR (NDF_KZ / NDF_KG)                 // planes per thread: 8 (3-D), 4 (2-D)
#define NDF_KWP (NDF_KW + 2)                     // words per row with the halo
#define NDF_KWY (NSP == 3 ? NDF_KY + 2 : 1)      // rows per plane with the halo
#define NDF_KNW ((NDF_KZ + 2) * NDF_KWY * NDF_KWP) // words with the halo: 1188 (2-D), 3400 (3-D)
#define NDF_KNI (NDF_KZ * NDF_KY * NDF_KW)       // words of the brick itself
#define NDF_KNL (NSP == 3 ? 6 : 5) // word slots per thread loaded before any is used (2-D: the whole brick at once)

NDF_PARAMS(ndf_ecc_brick_params)

#if NDF_KERNEL(ndf_ecc_brick)
extern "C" __global__ void __launch_bounds__(256, 4) ndf_ecc_brick(const ndf_ecc_brick_params p) {
  // dyn: the tables of ndf_ecc_pack (24 T + 64 bytes), the word array, the resident bricks
  extern __shared__ double dyn[];
  const int T = (int)p.T;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  int *shist = (int *)(dyn + T + 2);
  float *tsf = (float *)(shist + T + 1);
  const V *tv = sizeof(V) == 4 ? (const V *)(tsf + 1) : (const V *)(dyn + 1);
  float2 *tpair = (float2 *)(dyn + 2 * T + 4);
  unsigned *wb = (unsigned *)(dyn + ((3 * T + 9) & ~1));
  V *raw = (V *)(wb + NDF_KNW);
  __shared__ float s_lo, s_inv, s_ga, s_gb;
  __shared__ int s_uni, s_m;
  __shared__ bool s_last;
  __shared__ double r_lo[8], r_hi[8];
  __shared__ unsigned long long r_key;
  const ndf_i64 bpi = p.nbz * p.nby * p.nbx;
  const ndf_i64 j0 = (ndf_i64)blockIdx.x * p.per, j1 = min(j0 + p.per, p.nbricks);
  const bool vec = sizeof(TIN) == 4 && p.sx == 1 && ((p.sy | p.sz | p.nx) & 1) == 0;
  // brick j: its image, first voxel (z0, y0, word xw0) and the image's input
  auto brick = [&](ndf_i64 j, ndf_i64 &img, ndf_i64 &z0, ndf_i64 &y0, ndf_i64 &xw0) -> const TIN * {
    img = j / bpi;
    const ndf_i64 r = j - img * bpi, bx = r % p.nbx, q = r / p.nbx;
    xw0 = bx * NDF_KW;
    y0 = (q % p.nby) * NDF_KY;
    z0 = (q / p.nby) * NDF_KZ;
    ndf_i64 base = 0, q2 = img;
    for (int d = p.nb - 1; d >= 0; d--) {
      base += (q2 % p.bshape[d]) * p.bstr[d];
      q2 /= p.bshape[d];
    }
    return p.in + base;
  };
  // word slot i of a brick (halo: with the one-voxel halo, NDF_KNW slots; else
  // the brick's own NDF_KNI): its voxels (z, y, 2 xw + h)
  auto coords = [&](int i, bool halo, ndf_i64 z0, ndf_i64 y0, ndf_i64 xw0, ndf_i64 &z, ndf_i64 &y, ndf_i64 &x) {
    if (halo) {
      const int iz = i / (NDF_KWY * NDF_KWP), r = i - iz * (NDF_KWY * NDF_KWP), iy = r / NDF_KWP;
      z = z0 - 1 + iz;
      y = NSP == 3 ? y0 - 1 + iy : 0;
      x = 2 * (xw0 - 1 + (r - iy * NDF_KWP));
    } else {
      const int iz = i / (NDF_KY * NDF_KW), r = i - iz * (NDF_KY * NDF_KW), iy = r / NDF_KW;
      z = z0 + iz;
      y = y0 + iy;
      x = 2 * (xw0 + (r - iy * NDF_KW));
    }
  };
  // the slot's two values (0 where outside); bit h of the result: voxel h is inside the image
  auto load = [&](const TIN *in, int i, bool halo, ndf_i64 z0, ndf_i64 y0, ndf_i64 xw0, V &a, V &b) -> unsigned {
    ndf_i64 z, y, x;
    coords(i, halo, z0, y0, xw0, z, y, x);
    const bool inn = z >= 0 && z < p.nz && y >= 0 && y < p.ny && x >= 0;
    const unsigned ok = inn ? (unsigned)(x < p.nx) | ((unsigned)(x + 1 < p.nx) << 1) : 0u;
    const TIN *q = in + (ok ? z * p.sz + y * p.sy + x * p.sx : 0);
    if (vec && ok == 3u && (((size_t)q) & 7) == 0) {
      const float2 f2 = *(const float2 *)q;
      a = (V)f2.x;
      b = (V)f2.y;
    } else {
      a = (ok & 1u) ? (V)q[0] : (V)0;
      b = (ok & 2u) ? (V)q[p.sx] : (V)0;
    }
    return ok;
  };
  // the same inside-bits without loading (resident bricks)
  auto inside = [&](int i, ndf_i64 z0, ndf_i64 y0, ndf_i64 xw0) -> unsigned {
    ndf_i64 z, y, x;
    coords(i, true, z0, y0, xw0, z, y, x);
    const bool inn = z >= 0 && z < p.nz && y >= 0 && y < p.ny && x >= 0;
    return inn ? (unsigned)(x < p.nx) | ((unsigned)(x + 1 < p.nx) << 1) : 0u;
  };

  // ---- phase 1: min, max, NaN of the block's bricks
  if (tid == 0) r_key = 0ull;
  __syncthreads();
  V lo = (V)(1.0 / 0.0), hi = (V)(-1.0 / 0.0);
  {
    const int ns = p.resident ? NDF_KNW : NDF_KNI;
    for (ndf_i64 j = j0; j < j1; j++) {
      ndf_i64 img, z0, y0, xw0;
      const TIN *in = brick(j, img, z0, y0, xw0);
      V *rw = raw + (j - j0) * (2 * NDF_KNW);
      for (int i0 = 0; i0 < ns; i0 += 256 * NDF_KNL) {
        V v[NDF_KNL][2];
        unsigned ok[NDF_KNL];
#pragma unroll
        for (int e = 0; e < NDF_KNL; e++) {
          const int i = i0 + 256 * e + tid;
          v[e][0] = v[e][1] = (V)0;
          ok[e] = i < ns ? load(in, i, p.resident, z0, y0, xw0, v[e][0], v[e][1]) : 0u;
        }
#pragma unroll
        for (int e = 0; e < NDF_KNL; e++) {
          const int i = i0 + 256 * e + tid;
#pragma unroll
          for (int h = 0; h < 2; h++) {
            const V f = v[e][h];
            if ((ok[e] >> h) & 1u) {
              if (f != f) {
                // rare: the voxel's C-order index in the batch
                ndf_i64 z, y, x;
                coords(i, p.resident, z0, y0, xw0, z, y, x);
                atomicMax(&r_key, ~(ndf_u64)(img * (p.nz * p.ny * p.nx) + (z * p.ny + y) * p.nx + x + h));
              } else {
                lo = fmin(lo, f);
                hi = fmax(hi, f);
              }
            }
            if (p.resident && i < ns) rw[2 * i + h] = f;
          }
        }
      }
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    lo = fmin(lo, __shfl_xor_sync(0xffffffffu, lo, o));
    hi = fmax(hi, __shfl_xor_sync(0xffffffffu, hi, o));
  }
  if (lane == 0) {
    r_lo[warp] = (double)lo;
    r_hi[warp] = (double)hi;
  }
  __syncthreads();
  if (tid == 0) {
    double a = r_lo[0], b = r_hi[0];
    for (int w = 1; w < 8; w++) {
      a = fmin(a, r_lo[w]);
      b = fmax(b, r_hi[w]);
    }
    p.part[3 * blockIdx.x] = a;
    p.part[3 * blockIdx.x + 1] = b;
    ((ndf_u64 *)p.part)[3 * blockIdx.x + 2] = r_key;
  }
  {
    const ndf_i64 nh = p.nimg * p.T, stride = (ndf_i64)gridDim.x * 256;
    for (ndf_i64 i = (ndf_i64)blockIdx.x * 256 + tid; i < nh; i += stride) p.hist[i] = 0ull;
    for (ndf_i64 i = (ndf_i64)blockIdx.x * 256 + tid; i < p.nimg; i += stride) p.cnt[i] = 0u;
  }
  ndf_ecc_grid_sync(p.gbar);

  // ---- the partials of every block, the thresholds (as ndf_ecc_pack)
  double a = 1.0 / 0.0, b = -1.0 / 0.0;
  unsigned long long key = 0;
  for (unsigned k = tid; k < gridDim.x; k += 256) {
    a = fmin(a, __ldcg(p.part + 3 * k));
    b = fmax(b, __ldcg(p.part + 3 * k + 1));
    key = max(key, __ldcg((const ndf_u64 *)p.part + 3 * k + 2));
  }
  for (int o = 16; o > 0; o >>= 1) {
    a = fmin(a, __shfl_xor_sync(0xffffffffu, a, o));
    b = fmax(b, __shfl_xor_sync(0xffffffffu, b, o));
    key = max(key, __shfl_xor_sync(0xffffffffu, key, o));
  }
  if (tid == 0) r_key = 0ull; // r_lo / r_hi were last read by thread 0 before the grid barrier
  __syncthreads();
  if (lane == 0) {
    r_lo[warp] = a;
    r_hi[warp] = b;
    atomicMax(&r_key, key);
  }
  __syncthreads();
  a = r_lo[0];
  b = r_hi[0];
  for (int w = 1; w < 8; w++) {
    a = fmin(a, r_lo[w]);
    b = fmax(b, r_hi[w]);
  }
  key = r_key;
  const int bad = !(isfinite(a) && isfinite(b));
  if (blockIdx.x == 0 && tid == 0) {
    p.hdr->mn = a;
    p.hdr->mx = b;
    p.hdr->nan_key = key;
    p.hdr->bad = bad;
    __threadfence_system();
  }
  if (key != 0ull || bad) return; // the whole grid: nothing is written
  {
    const double span = __dsub_rn(b, a), den = (double)(T - 1);
    int m = 0;
    for (int k0 = 0; k0 < T - 1; k0 += 256) {
      const int k = k0 + tid;
      m += __syncthreads_count(k < T - 1 && __dadd_rn(a, __ddiv_rn(__dmul_rn(span, (double)k), den)) <= b);
    }
    for (int k = tid; k < T - 1; k += 256) {
      const double t = __dadd_rn(a, __ddiv_rn(__dmul_rn(span, (double)k), den));
      const int pos = k < m ? k : k + 1;
      dyn[pos + 1] = t;
      if (sizeof(V) == 4) tsf[pos + 1] = __double2float_rd(t);
    }
    if (tid == 0) {
      dyn[m + 1] = b;
      dyn[0] = -1.0 / 0.0;
      dyn[T + 1] = 1.0 / 0.0;
      if (sizeof(V) == 4) {
        tsf[m + 1] = __double2float_rd(b);
        tsf[0] = -1.0f / 0.0f;
        tsf[T + 1] = 1.0f / 0.0f;
      }
      const double t0 = m == 0 ? b : __dadd_rn(a, __ddiv_rn(__dmul_rn(span, 0.0), den));
      const double tl = m == T - 1 ? b : __dadd_rn(a, __ddiv_rn(__dmul_rn(span, (double)(T - 2)), den));
      s_lo = (float)t0;
      s_inv = (float)(tl > t0 ? __ddiv_rn(den, __dsub_rn(tl, t0)) : 0.0);
      s_uni = tl > t0 ? 1 : 0;
      s_m = m;
    }
  }
  for (int k = tid; k <= T; k += 256) shist[k] = 0;
  __syncthreads(); // tsf, s_lo, s_inv
  if (sizeof(V) == 4)
    for (int k = tid; k <= T; k += 256) tpair[k] = make_float2(tsf[k], tsf[k + 1]);
  if (tid == 0) {
    s_ga = s_inv;
    s_gb = -s_lo * s_inv;
  }
  __syncthreads();

  // ---- phase 2: the bricks' histograms
  const int tx = tid % NDF_KW, ty = (tid / NDF_KW) % NDF_KY, tg = tid / (NDF_KW * NDF_KY);
  // the words (x - 1, x), (x, x + 1), (x + 1, x + 2) of plane iz, rows ty - 1 .. ty + 1 (2-D: ry = 1 only)
  auto rd = [&](int iz, unsigned (&R)[3][3]) {
#pragma unroll
    for (int ry = 0; ry < 3; ry++) {
      if (NSP == 2 && ry != 1) continue;
      const unsigned *row = wb + (iz * NDF_KWY + (NSP == 3 ? ty + ry : 0)) * NDF_KWP;
      const unsigned L = row[tx], W = row[tx + 1], Rw = row[tx + 2];
      R[ry][0] = __byte_perm(L, W, 0x5432);
      R[ry][1] = W;
      R[ry][2] = __byte_perm(W, Rw, 0x5432);
    }
  };
  // the block's counts of image img (nd bricks) into the global histogram; the image's last brick writes the curve
  auto flush = [&](ndf_i64 img, unsigned nd) {
    __syncthreads();
    for (int k = tid; k < T; k += 256) {
      const int h = shist[k];
      if (h) atomicAdd(&p.hist[img * p.T + k], (ndf_u64)(long long)h);
      shist[k] = 0;
    }
    __threadfence();
    __syncthreads();
    if (tid == 0) s_last = atomicAdd(&p.cnt[img], nd) + nd == (unsigned)bpi;
    __syncthreads();
    if (s_last) {
      __threadfence();
      ndf_i64 off = 0, q2 = img;
      for (int d = p.nb - 1; d >= 0; d--) {
        off += (q2 % p.oshape[d]) * p.ostr[d];
        q2 /= p.oshape[d];
      }
      ndf_ecc_prefix_m((const long long *)p.hist + img * p.T, s_m, p.out + off, p.T, p.ostep);
    }
  };
  ndf_i64 cur = -1;
  unsigned ndone = 0;
  for (ndf_i64 j = j0; j < j1; j++) {
    ndf_i64 img, z0, y0, xw0;
    const TIN *in = brick(j, img, z0, y0, xw0);
    if (img != cur) {
      if (cur >= 0) flush(cur, ndone);
      cur = img;
      ndone = 0;
    }
    const V *rw = raw + (j - j0) * (2 * NDF_KNW);
    for (int i0 = 0; i0 < NDF_KNW; i0 += 256 * NDF_KNL) {
      V v[NDF_KNL][2];
      unsigned ok[NDF_KNL];
#pragma unroll
      for (int e = 0; e < NDF_KNL; e++) {
        const int i = i0 + 256 * e + tid;
        v[e][0] = v[e][1] = (V)0;
        if (i >= NDF_KNW) {
          ok[e] = 0u;
        } else if (p.resident) {
          ok[e] = inside(i, z0, y0, xw0);
          if (ok[e] & 1u) v[e][0] = rw[2 * i];
          if (ok[e] & 2u) v[e][1] = rw[2 * i + 1];
        } else {
          ok[e] = load(in, i, true, z0, y0, xw0, v[e][0], v[e][1]);
        }
      }
#pragma unroll
      for (int e = 0; e < NDF_KNL; e++) {
        const int i = i0 + 256 * e + tid;
        if (i < NDF_KNW) {
          unsigned w = CONS == 1 ? NDF_ECC_PG : 0u;
#pragma unroll
          for (int h = 0; h < 2; h++) {
            unsigned bn = NDF_ECC_POUT;
            if ((ok[e] >> h) & 1u) {
              if (sizeof(V) == 4)
                bn = ndf_ecc_bin_pair((float)v[e][h], tpair, (const float *)tv, T, s_uni, s_ga, s_gb, s_lo, s_inv);
              else
                bn = ndf_ecc_bin_slow<V>(v[e][h], tv, T, s_uni, s_lo, s_inv);
            }
            w |= bn << (16 * h);
          }
          wb[i] = w;
        }
      }
    }
    __syncthreads();
    {
      unsigned A[3][3], B[3][3], C[3][3];
      if (NSP == 2) {
#pragma unroll
        for (int k = 0; k < 3; k++) A[0][k] = A[2][k] = B[0][k] = B[2][k] = C[0][k] = C[2][k] = 0u;
      }
      const int iz0 = tg * NDF_KR; // word planes iz0 .. iz0 + KR + 1: brick planes iz0 .. iz0 + KR - 1 with halo
      rd(iz0, A);
      rd(iz0 + 1, B);
#pragma unroll
      for (int r = 0; r < NDF_KR; r++) {
        rd(iz0 + r + 2, C);
        const unsigned d = ndf_ecc_pack_sum<NSP, CONS>(A, B, C);
        const unsigned w = B[1][1];
#pragma unroll
        for (int h = 0; h < 2; h++) {
          const unsigned bn = (w >> (16 * h)) & 0x1ffu;
          const int c = ndf_ecc_pack_c<NSP, CONS>(d, h);
          if (c != 0 && bn < (unsigned)T) atomicAdd(&shist[bn], c);
        }
#pragma unroll
        for (int ry = 0; ry < 3; ry++)
#pragma unroll
          for (int k = 0; k < 3; k++) {
            A[ry][k] = B[ry][k];
            B[ry][k] = C[ry][k];
          }
      }
    }
    __syncthreads(); // wb is refilled for the next brick
    ndone++;
  }
  if (cur >= 0) flush(cur, ndone);
}
#endif

// ---- the 2-D warp-strip kernel (ndf_ecc_strip2, 2-D fused calls; ecc.2d=old: ndf_ecc_pack) ---
// Thresholds over [min, max], T <= 510, 2-D, float comparisons (float32,
// uint8, uint16); one cooperative launch, the phases of ndf_ecc_pack's fused
// form, but a WARP is the unit of work and the march has no block barrier:
// a task is a strip of 128 columns (32 lanes x 4 voxels, one 16-byte load per
// lane and row when the rows allow it) over mc rows of one image; a block is 8
// tasks of one image.  Per row a lane bins its 4 voxels (the first guess and
// one bracket check against the (t_{k-1}, t_k) float pairs; a warp-uniform
// slow path only when some lane's guess is off), packs them as two words,
// takes the x - 1 / x + 4 neighbours' bins from the neighbouring lanes by
// shuffles (lanes 0 and 31 bin the strip's halo voxel themselves), and keeps
// three rows' words in registers; c of the 4 voxels from ndf_ecc_pack_sum.
// Phase 1 reads the task's rows in reverse order (the last read are the
// first the march needs: L2 hits), min with NaN propagation flags NaN.  The
// block's shared histogram goes to one of NC copies of the image's global
// histogram (fewer atomics on one address), then one acquire-release ticket
// per block; the image's last block sums the copies and writes the curve.
// Block 0 writes the header, then (mapped header) the call's sequence word,
// which the host waits for instead of the end of the kernel.
#define NDF_SW 128 // columns per strip (task)

NDF_PARAMS(ndf_ecc2_params)
// thresholds over a given range [a, b] (the RNG specialization; ndf_ecc2_params and ndf_ecc3_params both carry
// rlo, rhi; ndf_ecc_strip2 is never launched with RNG)
template <class P> __device__ __forceinline__ bool ndf_ecc2_given(const P &p, double &a, double &b) {
  a = p.rlo, b = p.rhi;
  return RNG != 0;
}

// NDF_ECC2_HELPERS_BEGIN (the inline-PTX helpers, fenced so a host build can replace them)
// min keeping NaN (min.NaN.f32): a NaN voxel leaves the lane's min NaN
__device__ __forceinline__ float ndf_ecc2_fminnan(float a, float b) {
#if __CUDA_ARCH__ >= 800
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
#else
  return (a != a || b != b) ? __int_as_float(0x7fffffff) : fminf(a, b);
#endif
}
// the image's ticket, taken by one thread after a __syncthreads: it orders the
// block's histogram atomics before it (release, cumulative over the block's
// threads through the barrier) and the other blocks' before the last block's
// reads (acquire; the __syncthreads after it passes that on).  fence 1
// (ecc.fence=sc): __threadfence (fence.sc.gpu) before and after a relaxed add.
__device__ __forceinline__ unsigned ndf_ecc2_ticket(unsigned *p, int fence) {
  unsigned old;
  if (fence) {
    __threadfence();
    old = atomicAdd(p, 1u);
    __threadfence();
  } else {
    asm volatile("atom.acq_rel.gpu.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(1u) : "memory");
  }
  return old;
}
// The barrier in two halves (thread 0; the grid co-resident): ndf_ecc2_arrive releases the block's writes
// before it (after a __syncthreads) and returns the word before its add; ndf_ecc2_await(w, old) returns once
// every block has arrived (the top bit flipped since old), acquiring their writes -- the given range's calls
// arrive at their start and wait only before their first global atomics.
__device__ __forceinline__ unsigned ndf_ecc2_arrive(unsigned *w) {
  const unsigned n = gridDim.x;
  const unsigned add = blockIdx.x == 0 ? 0x80000000u - (n - 1u) : 1u;
  unsigned old;
  asm volatile("atom.release.gpu.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(w), "r"(add) : "memory");
  return old;
}
// the word at w, an acquire load at gpu scope (the polls below)
__device__ __forceinline__ unsigned ndf_ecc2_ldacq(const unsigned *w) {
  unsigned v;
  asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(v) : "l"(w) : "memory");
  return v;
}
__device__ __forceinline__ void ndf_ecc2_await(unsigned *w, unsigned old) {
  while (((old ^ ndf_ecc2_ldacq(w)) & 0x80000000u) == 0u) {
  }
}
// Returns once the word at w is n or more (acquire polls; thread 0 of a co-resident grid's block): the given
// range's batches, the images' last blocks waiting for each other (ndf_ecc2_finish_given)
__device__ __forceinline__ void ndf_ecc2_wait_count(unsigned *w, unsigned n) {
  while (ndf_ecc2_ldacq(w) < n) {
  }
}
// ndf_ecc_grid_sync (templates/ndf_ecc_fused.cuh: the same arrival word and
// flip protocol) with a release add and acquire polls instead of a fence.sc
// before and after: every block's writes before the barrier (partials,
// zeroed histograms and tickets; ordered before thread 0's add by the
// __syncthreads) are visible to every block after it.  fence 1: that function.
__device__ __forceinline__ void ndf_ecc2_grid_sync(unsigned *w, int fence) {
  if (fence) {
    ndf_ecc_grid_sync(w);
    return;
  }
  __syncthreads();
  if (threadIdx.x == 0) ndf_ecc2_await(w, ndf_ecc2_arrive(w));
  __syncthreads();
}
// stamp i of the block (thread 0): %globaltimer at a phase boundary, when profiling (prof != NULL)
__device__ __forceinline__ void ndf_ecc2_stamp(unsigned long long *prof, int i) {
  if (prof && threadIdx.x == 0) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    prof[blockIdx.x * 8 + i] = t;
    if (i == 0) { // slot 7: the block's SM (ecc.prof's dump)
      unsigned sm;
      asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
      prof[blockIdx.x * 8 + 7] = sm;
    }
  }
}
// ecc.prof: a warp's own march end (strip3), after the blocks' 8 stamps
__device__ __forceinline__ void ndf_ecc2_wstamp(unsigned long long *prof) {
  if (prof && (threadIdx.x & 31) == 0) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    prof[gridDim.x * 8 + blockIdx.x * 8 + (threadIdx.x >> 5)] = t;
  }
}
template <bool B> struct ndf_ecc2_bool {
  static constexpr bool value = B;
};
// prefix sums of the NC copies' sum (NC <= 8: strip_chunks_make's cap), written as ndf_ecc_prefix_m
__device__ void ndf_ecc2_prefix(const long long *hist, int nc, ndf_i64 m, long long *out, ndf_i64 T, ndf_i64 ostep) {
  __shared__ long long wsum[8];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  long long carry = 0;
  for (ndf_i64 k0 = 0; k0 < T; k0 += 256) {
    const ndf_i64 k = k0 + threadIdx.x;
    long long v = 0;
    if (k < T) { // nc <= 8 copies (the runtime's cap): every load in flight at once
      long long w[8];
#pragma unroll
      for (int c = 0; c < 8; c++) w[c] = c < nc ? __ldcg(hist + c * T + k) : 0ll;
#pragma unroll
      for (int c = 0; c < 8; c++) v += w[c];
    }
    for (int o = 1; o < 32; o <<= 1) {
      const long long u = __shfl_up_sync(0xffffffffu, v, o);
      if (lane >= o) v += u;
    }
    if (lane == 31) wsum[warp] = v;
    __syncthreads();
    long long before = carry, total = carry;
    for (int w = 0; w < 8; w++) {
      if (w < warp) before += wsum[w];
      total += wsum[w];
    }
    if (k < T) out[(k < m ? k : k == m ? T - 1 : k - 1) * ostep] = before + v;
    carry = total;
    __syncthreads();
  }
}
// NDF_ECC2_HELPERS_END

// the least k with f <= tv[k] from any start k (+inf: T); out of line (the rare path; code size)
__device__ __noinline__ unsigned ndf_ecc2_walk(float f, int k, const float *tv, int T) {
  while (k > 0 && f <= tv[k - 1]) k--;
  while (k < T && f > tv[k]) k++;
  return (unsigned)k;
}

// A warp-strip kernel's block and warp (ndf_ecc_strip2, ndf_ecc_strip2t; strip3 inline; thread 0 stamps
// the start when profiling): hblk, the header block (no tasks, no image); img, the block's image; bimg,
// its place among the image's bpi blocks; task, the warp's task in the image; act, the warp has one
// (warp-uniform).
struct ndf_ecc2_at {
  bool hblk, act;
  int img, bimg, task;
};
template <class P> __device__ __forceinline__ ndf_ecc2_at ndf_ecc2_start(const P &p) {
  ndf_ecc2_stamp(p.prof, 0);
  ndf_ecc2_at a;
  a.hblk = p.hdrblk && blockIdx.x == gridDim.x - 1;
  const int bpi = (int)p.bpi;
  a.img = a.hblk ? 0 : (int)blockIdx.x / bpi;
  a.bimg = a.hblk ? 0 : (int)blockIdx.x % bpi;
  const int tid = threadIdx.x;
  a.task = a.bimg * 8 + (tid >> 5);
  a.act = !a.hblk && a.task < (int)p.tpi;
  return a;
}

// The element offset of image img of the batch in the input (the warp-strip kernels' parameter blocks)
template <class P> __device__ __forceinline__ ndf_i64 ndf_ecc2_img_base(const P &p, int img) {
  ndf_i64 base = 0, q = img;
  for (int d = p.nb - 1; d > 0; d--) {
    base += (q % p.bshape[d]) * p.bstr[d];
    q /= p.bshape[d];
  }
  if (p.nb > 0) base += q * p.bstr[0]; // q < bshape[0]: no division for the outermost axis
  return base;
}

// The warp's 128-column strip task (ndf_ecc_strip2, ndf_ecc_strip2t): strip x0, rows r0 .. r1 - 1 with
// r0 = chunk * mc - rows0 (ndf_ecc_strip2t's T-construction counts rows from -1), its image's input
// (32-bit places: the runtime keeps rows, columns + 256 and blocks below 2^31)
struct ndf_ecc2_task {
  int x0, r0, r1;
  const TIN *in;
};
template <class P>
__device__ __forceinline__ ndf_ecc2_task ndf_ecc2_task_at(const P &p, const ndf_ecc2_at &at, int rows0) {
  ndf_ecc2_task t;
  const int strip = at.act ? at.task % (int)p.nstrip : 0, chunk = at.act ? at.task / (int)p.nstrip : 0;
  t.x0 = strip * NDF_SW;
  t.r0 = chunk * (int)p.mc - rows0;
  t.r1 = at.act ? min(t.r0 + (int)p.mc, (int)p.nz) : t.r0;
  t.in = p.in + ndf_ecc2_img_base(p, at.img);
  return t;
}

// The end of phase 1 of the warp-strip kernels (ndf_ecc_strip2, ndf_ecc_strip3): the block's
// (min, max) as a float pair and its least ~NaN key into the partials, the histogram copies and
// the per-image tickets zeroed.  lo: the thread's min (NaN when it saw a NaN), hi: its max;
// nanfind(): the thread's least NaN index, atomicMax'ed into r_key as ~index (only when lo is NaN).
template <class P, class F>
__device__ __forceinline__ void ndf_ecc2_phase1_end(const P &p, float lo, float hi, float *r_lo, float *r_hi,
                                                    unsigned long long &r_key, F nanfind) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const unsigned FULL = 0xffffffffu;
  const bool nan = lo != lo;
  for (int o = 16; o > 0; o >>= 1) {
    lo = fminf(lo, __shfl_xor_sync(FULL, lo, o));
    hi = fmaxf(hi, __shfl_xor_sync(FULL, hi, o));
  }
  if (tid == 0) r_key = 0ull;
  if (lane == 0) {
    r_lo[warp] = lo;
    r_hi[warp] = hi;
  }
  if (__syncthreads_or(nan)) {
    // rare: the least C-order index of a NaN among this block's voxels (rows ascending)
    if (nan) nanfind();
    __syncthreads();
  }
  if (tid == 0) {
    float a = r_lo[0], b = r_hi[0];
    for (int w = 1; w < 8; w++) {
      a = fminf(a, r_lo[w]);
      b = fmaxf(b, r_hi[w]);
    }
    // (min, max) as a float pair, the pairs of all blocks first (phase 2: every block reads
    // them all, 8 bytes each, coalesced), then the keys (16 of the 24 bytes per block); a block
    // that saw a NaN writes NaN as its min (phase 2 reads the keys only then)
    ((float2 *)p.part)[blockIdx.x] = make_float2(r_key ? __int_as_float(0x7fffffff) : a, b);
    ((ndf_u64 *)p.part)[gridDim.x + blockIdx.x] = r_key;
  }
  if (tid == 0) r_key = 0ull; // for phase 2 (the grid barrier orders it)
  // zero the histogram copies and the per-image tickets (used after the barrier)
  const ndf_i64 nh = p.nimg * p.ncopy * p.T, stride = (ndf_i64)gridDim.x * 256;
  for (ndf_i64 i = (ndf_i64)blockIdx.x * 256 + tid; i < nh; i += stride) p.hist[i] = 0ull;
  for (ndf_i64 i = (ndf_i64)blockIdx.x * 256 + tid; i < p.nimg; i += stride) p.cnt[i] = 0u;
}

// N elements of TIN at q (N sizeof(TIN) bytes, aligned to that: float4s, or for uint8 / uint16 a uint4, uint2 or u32)
// as floats to o.  Integers by bytes into 0x4b000000's mantissa (2^23 + f exactly), then - 2^23: one PRMT and
// one FADD an element, no conversion instructions.
// (the byte selector of __byte_perm(word, 0x4b000000, sel) for element i of its word: the element's bytes, then
// zeros, then 0x4b)
__device__ __forceinline__ constexpr unsigned ndf_ecc3_bsel(int i) {
  return sizeof(TIN) == 1 ? 0x7440u | (unsigned)(i & 3) : 0x7400u | (unsigned)((2 * (i & 1) + 1) << 4) | (unsigned)(2 * (i & 1));
}
template <int N> __device__ __forceinline__ void ndf_ecc3_vld(const TIN *q, float *o) {
  if (sizeof(TIN) == 4) {
#pragma unroll
    for (int u = 0; u < N / 4; u++) {
      const float4 f4 = *(const float4 *)((const float *)q + 4 * u);
      o[4 * u] = f4.x, o[4 * u + 1] = f4.y, o[4 * u + 2] = f4.z, o[4 * u + 3] = f4.w;
    }
  } else {
    constexpr int NW = N * (int)sizeof(TIN) / 4; // 32-bit words: 1 (u32), 2 (uint2) or 4 (uint4)
    unsigned w[NW];
    if (NW == 4) {
      const uint4 u4 = *(const uint4 *)q;
      w[0] = u4.x, w[NW > 1 ? 1 : 0] = u4.y, w[NW > 2 ? 2 : 0] = u4.z, w[NW > 3 ? 3 : 0] = u4.w;
    } else if (NW == 2) {
      const uint2 u2 = *(const uint2 *)q;
      w[0] = u2.x, w[NW > 1 ? 1 : 0] = u2.y;
    } else {
      w[0] = *(const unsigned *)q;
    }
    constexpr int EW = 4 / (int)sizeof(TIN); // elements a word
#pragma unroll
    for (int i = 0; i < N; i++) o[i] = __int_as_float((int)__byte_perm(w[i / EW], 0x4b000000u, ndf_ecc3_bsel(i))) - 8388608.0f;
  }
}
// The lane's place in a 128-column strip (ndf_ecc_strip2, ndf_ecc_strip2t): its columns x .. x + 3
// (bit j of inb: x + j < nx) and its halo voxel hx (lane 0: x0 - 1, lane 31: x0 + 128; hin: in the
// image; the other lanes have none); vec: vector rows, float4 (uint8 / uint16: a u32 / uint2;
// unit x stride, row stride and width multiples of 4, an aligned base: a lane is all in or all out).
struct ndf_ecc2_lane {
  int x, hx;
  unsigned inb;
  bool hin, vec;
};
template <class P> __device__ __forceinline__ ndf_ecc2_lane ndf_ecc2_lane_at(const P &p, const TIN *in, int x0) {
  ndf_ecc2_lane L;
  const int lane = threadIdx.x & 31;
  L.x = x0 + 4 * lane;
  L.inb = 0;
#pragma unroll
  for (int j = 0; j < 4; j++) L.inb |= (unsigned)(L.x + j < p.nx) << j;
  L.hx = lane == 0 ? x0 - 1 : x0 + NDF_SW;
  L.hin = (lane == 0 && x0 > 0) || (lane == 31 && x0 + NDF_SW < p.nx);
  L.vec = p.sx == 1 && ((p.sz | p.nx) & 3) == 0 && (((size_t)in) & (4 * sizeof(TIN) - 1)) == 0;
  return L;
}

// The march's rows of a 128-column strip, loaded in order from row r: the lane's 4 voxels and its
// halo voxel (v[4]; lanes 1..30: +inf, never used).  Voxels outside the image (columns past nx, the
// strip's halo at the image's border, rows outside [0, nz)) read as +inf, whose bin is T: no voxel
// inside has it (every value is <= max = t_{T-1}), so T serves as ndf_ecc_pack.cuh's outside marker
// (every V flag false, every T flag true) and is never counted.  Rows past rend are not read.
struct ndf_ecc2_raw {
  float v[5];
};
template <class P> struct ndf_ecc2_rows {
  const P &p;
  const ndf_ecc2_lane &L;
  const TIN *lq; // the lane's voxel x of row lr
  ndf_i64 hoff;
  int lr, rend;
  __device__ __forceinline__ ndf_ecc2_rows(const P &p_, const TIN *in, const ndf_ecc2_lane &L_, int r, int rend_)
      : p(p_), L(L_), lq(in + (ndf_i64)L_.x * p_.sx + (ndf_i64)r * p_.sz), hoff((ndf_i64)(L_.hx - L_.x) * p_.sx), lr(r),
        rend(rend_) {}
  template <bool VEC> __device__ __forceinline__ void load(ndf_ecc2_raw &w) {
    const float INF = __int_as_float(0x7f800000);
    const int r = lr++;
    const TIN *rp = lq;
    lq += p.sz;
    if (r > rend) return; // not needed
    if (r < 0 || r >= (int)p.nz) {
      w.v[0] = w.v[1] = w.v[2] = w.v[3] = w.v[4] = INF;
      return;
    }
    if (VEC) {
      if (L.inb && sizeof(TIN) < 4) {
        ndf_ecc3_vld<4>(rp, w.v); // (float32 through ndf_ecc3_vld: 8 more instructions in strip2t, so apart)
      } else if (L.inb) {
        const float4 f4 = *(const float4 *)rp;
        w.v[0] = f4.x, w.v[1] = f4.y, w.v[2] = f4.z, w.v[3] = f4.w;
      } else {
        w.v[0] = w.v[1] = w.v[2] = w.v[3] = INF;
      }
    } else {
#pragma unroll
      for (int j = 0; j < 4; j++) w.v[j] = ((L.inb >> j) & 1u) ? (float)rp[j * p.sx] : INF;
    }
    w.v[4] = L.hin ? (float)rp[hoff] : INF;
  }
};

// Phase 1 of the 128-column strip kernels: min, max, NaN of the lane's voxels over rows r0 .. r1 - 1
// (in the image; act: the warp has a task), then ndf_ecc2_phase1_end.
template <class P>
__device__ __forceinline__ void ndf_ecc2_strip_phase1(const P &p, const TIN *in, const ndf_ecc2_lane &L, int img, bool act,
                                                      int r0, int r1, float *r_lo, float *r_hi, unsigned long long &r_key) {
  const int x = L.x;
  const unsigned inb = L.inb;
  const bool vec = L.vec;
  // the lane's 4 voxels of row r (in the image: r in [0, nz)); fill for the voxels outside
  auto ld4 = [&](int r, float (&v)[4], float fill) {
    const TIN *rp = in + r * p.sz;
    if (vec) {
      if (inb && sizeof(TIN) < 4) {
        ndf_ecc3_vld<4>(rp + x, v);
      } else if (inb) {
        const float4 f4 = *(const float4 *)(rp + x);
        v[0] = f4.x, v[1] = f4.y, v[2] = f4.z, v[3] = f4.w;
      } else {
        v[0] = v[1] = v[2] = v[3] = fill;
      }
    } else {
#pragma unroll
      for (int j = 0; j < 4; j++) v[j] = ((inb >> j) & 1u) ? (float)rp[(ndf_i64)(x + j) * p.sx] : fill;
    }
  };

  // rows in reverse order
  float lo = __int_as_float(0x7f800000), hi = __int_as_float(0xff800000);
  if (sizeof(TIN) < 4 && act && vec && inb) {
    // uint8 / uint16: the lane's 4 voxels a row as one u32 / uint2, eight rows in flight
    const TIN *in0 = in + x;
    const ndf_i64 sz = p.sz;
    for (int r = r1 - 1; r >= r0; r -= 8) {
      float v[8][4];
#pragma unroll
      for (int u = 0; u < 8; u++) ndf_ecc3_vld<4>(in0 + (ndf_i64)max(r - u, r0) * sz, v[u]);
#pragma unroll
      for (int u = 0; u < 8; u++) {
        lo = fminf(lo, fminf(fminf(v[u][0], v[u][1]), fminf(v[u][2], v[u][3])));
        hi = fmaxf(hi, fmaxf(fmaxf(v[u][0], v[u][1]), fmaxf(v[u][2], v[u][3])));
      }
    }
  } else if (sizeof(TIN) == 4 && act && vec && inb) {
    // float4 rows, the lane's 4 voxels all in the image: one pointer per 8 rows, no per-voxel tests
    // (the general loop below compiles to ~50 instructions a row with its element-load paths)
    // rows past r0 in the last group re-read row r0 (min and max do not mind; no predicates, so
    // the eight loads are issued before any is used)
    const float *in0 = (const float *)in + x;
    const ndf_i64 sz = p.sz;
    for (int r = r1 - 1; r >= r0; r -= 8) { // eight rows' loads in flight
      float4 v[8];
#pragma unroll
      for (int u = 0; u < 8; u++) v[u] = *(const float4 *)(in0 + (ndf_i64)max(r - u, r0) * sz);
#pragma unroll
      for (int u = 0; u < 8; u++) {
        lo = ndf_ecc2_fminnan(lo, ndf_ecc2_fminnan(ndf_ecc2_fminnan(v[u].x, v[u].y), ndf_ecc2_fminnan(v[u].z, v[u].w)));
        hi = fmaxf(hi, fmaxf(fmaxf(v[u].x, v[u].y), fmaxf(v[u].z, v[u].w)));
      }
    }
  } else if (act && !vec) {
    for (int r = r1 - 1; r >= r0; r -= 8) { // eight rows' loads in flight
      float v[8][4];
#pragma unroll
      for (int u = 0; u < 8; u++)
        if (r - u >= r0) ld4(r - u, v[u], 0.0f);
#pragma unroll
      for (int u = 0; u < 8; u++)
        if (r - u >= r0) {
          if (inb == 15u) {
            lo = ndf_ecc2_fminnan(lo, ndf_ecc2_fminnan(ndf_ecc2_fminnan(v[u][0], v[u][1]), ndf_ecc2_fminnan(v[u][2], v[u][3])));
            hi = fmaxf(hi, fmaxf(fmaxf(v[u][0], v[u][1]), fmaxf(v[u][2], v[u][3])));
          } else {
#pragma unroll
            for (int j = 0; j < 4; j++)
              if ((inb >> j) & 1u) {
                lo = ndf_ecc2_fminnan(lo, v[u][j]);
                hi = fmaxf(hi, v[u][j]);
              }
          }
        }
    }
  }
  ndf_ecc2_phase1_end(p, lo, hi, r_lo, r_hi, r_key, [&] {
    // rare: the least C-order index of a NaN among this lane's voxels (rows ascending)
    bool found = false;
    for (int r = r0; r < r1 && !found; r++) {
      float v[4];
      ld4(r, v, 0.0f);
#pragma unroll
      for (int j = 0; j < 4; j++)
        if (!found && ((inb >> j) & 1u) && v[j] != v[j]) {
          atomicMax(&r_key, ~(ndf_u64)((ndf_i64)img * (p.nz * p.nx) + (ndf_i64)r * p.nx + x + j));
          found = true;
        }
    }
  });
}

// The call's header (thread 0 of one block): min / max (or the given range), the least NaN index's key, the
// infinite flag; then the mapped header's sequence word, and a failure to the deferred check's record.
template <class P> __device__ __forceinline__ void ndf_ecc2_header(const P &p, double a, double b, unsigned long long key, int bad) {
  p.hdr->mn = a;
  p.hdr->mx = b;
  p.hdr->nan_key = key;
  p.hdr->bad = bad;
  if (p.seqp) {
    __threadfence_system();
    *(volatile unsigned *)p.seqp = p.seq;
  }
  // deferred checks (the host does not wait for this call): the first failure since the host's
  // last report is kept; seq is the call's ordinal there
  if (p.drec && (key != 0ull || bad)) {
    volatile ndf_ecc_drec *d = p.drec;
    if (d->ord == 0u) {
      d->nan_key = key;
      d->bad = bad;
      __threadfence_system();
      d->ord = p.seq;
    }
  }
}

// Phase 2's set-up of the warp-strip kernels: every block reduces the partials (the same values
// in each), in float (exact: the values are floats); block 0 (or the header block) writes the
// header (a given range, RNG: [a, b] from the parameters, no partials, no header here); the thresholds in double as the CPU's, the float table tsf, the pairs tpair and the
// first guess (s_ga, s_gb; certified when d = ceil(g) - g lies in [s_dl, s_dh]).  false: nothing
// more to do (a NaN or inf in the grid: nothing is written; the header block).  Ends with a
// __syncthreads.
template <class P>
__device__ __forceinline__ bool ndf_ecc2_setup(const P &p, bool hblk, int T, float *tsf, float2 *tpair, float *r_lo,
                                               float *r_hi, unsigned long long &r_key, float &s_ga, float &s_gb,
                                               float &s_dl, float &s_dh, int &s_m, bool ib = false) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const unsigned FULL = 0xffffffffu;
  // (exact: the values are floats); the thresholds in double as the CPU's.  A given range (RNG, ndf_ecc3 only):
  // [a, b] from the parameters, no partials, the header written at the end (ndf_ecc2_finish_given)
  double a, b;
  const bool given = ndf_ecc2_given(p, a, b);
  if (!given) {
    float fa = __int_as_float(0x7f800000), fb = __int_as_float(0xff800000);
    bool nan = false; // some block saw a NaN (its min is NaN): only then are the keys read
    for (unsigned k0 = tid; k0 < gridDim.x; k0 += 1024) { // grids up to 1024 blocks: one round trip
      float2 ab[4];
#pragma unroll
      for (int u = 0; u < 4; u++)
        ab[u] = k0 + 256u * u < gridDim.x ? __ldcg((const float2 *)p.part + k0 + 256u * u) : make_float2(fa, fb);
#pragma unroll
      for (int u = 0; u < 4; u++) {
        nan |= ab[u].x != ab[u].x;
        fa = fminf(fa, ab[u].x);
        fb = fmaxf(fb, ab[u].y);
      }
    }
    for (int o = 16; o > 0; o >>= 1) {
      fa = fminf(fa, __shfl_xor_sync(FULL, fa, o));
      fb = fmaxf(fb, __shfl_xor_sync(FULL, fb, o));
    }
    // r_lo, r_hi: last read by thread 0 before the grid barrier; r_key zeroed there
    if (lane == 0) {
      r_lo[warp] = fa;
      r_hi[warp] = fb;
    }
    unsigned long long key = 0;
    if (__syncthreads_or(nan)) {
      // rare: the least NaN index of the grid (max of the blocks' ~index keys)
      for (unsigned k = tid; k < gridDim.x; k += 256) key = max(key, __ldcg((const ndf_u64 *)p.part + gridDim.x + k));
      for (int o = 16; o > 0; o >>= 1) key = max(key, __shfl_xor_sync(FULL, key, o));
      if (lane == 0) atomicMax(&r_key, key);
      __syncthreads();
      key = r_key;
    }
    fa = r_lo[0];
    fb = r_hi[0];
    for (int w = 1; w < 8; w++) {
      fa = fminf(fa, r_lo[w]);
      fb = fmaxf(fb, r_hi[w]);
    }
    a = (double)fa;
    b = (double)fb;
    const int bad = !(isfinite(a) && isfinite(b));
    if ((p.hdrblk ? hblk : blockIdx.x == 0) && tid == 0) ndf_ecc2_header(p, a, b, key, bad);
    if (key != 0ull || bad || hblk) return false; // the whole grid: nothing is written; the header block is done
  }
  // the thresholds over [a, b] sorted (as ndf_ecc_scan_finish), rounded down to float:
  // tsf[j + 1] = tv[j] (tv[-1] = -inf, tv[T] = +inf) and the pairs tpair[j] = (tv[j - 1], tv[j])
  {
    const double span = __dsub_rn(b, a), den = (double)(T - 1);
    auto tof = [&](int k) { return __dadd_rn(a, __ddiv_rn(__dmul_rn(span, (double)k), den)); };
    // t_tid, and t_{tid + 256} only when T - 1 > 256 (block-uniform: no division for nothing)
    const bool two = T - 1 > 256;
    double tk[2];
    tk[0] = tof(tid);
    tk[1] = two ? tof(tid + 256) : 0.0;
    // m = #{k < T - 1 : t_k <= b}: t_k is non-decreasing in k (each rounding is monotone), so
    // those k are 0 .. m - 1 and m = T - 1 - #{k < T - 1 : t_k > b} (a block count of the
    // thresholds already computed; usually 0)
    int m = T - 1 - __syncthreads_count(tid < T - 1 && tk[0] > b);
    if (two) m -= __syncthreads_count(tid + 256 < T - 1 && tk[1] > b);
    auto put = [&](int j, float t) { // sorted position j holds t
      tsf[j + 1] = t;
      tpair[j].y = t;
      tpair[j + 1].x = t;
    };
#pragma unroll
    for (int i = 0; i < 2; i++) {
      const int k = tid + 256 * i;
      if (k < T - 1) put(k < m ? k : k + 1, __double2float_rd(tk[i]));
    }
    if (tid == 0) {
      put(m, __double2float_rd(b));
      // +-inf as bits: NVRTC emits -1.0f / 0.0f here as a division (its slow path), not a constant
      tsf[0] = tpair[0].x = __int_as_float(0xff800000);
      tsf[T + 1] = tpair[T].y = __int_as_float(0x7f800000);
      // the first guess ceil(f * ga + gb) ~ (f - a) (T - 1) / (b - a): any guess gives the exact
      // bin (the bracket check, then the walk); a constant image: 0
      const float w = (float)span;
      s_ga = w > 0.0f ? (float)(T - 1) / w : 0.0f;
      s_gb = -(float)a * s_ga;
      s_m = m;
      // Certified guesses: g = fmaf(f, ga, gb) differs from (f - a) G, G = (T - 1) / (b - a), by
      // at most T 2^-22.3 + |a| ga 2^-23.9 (ga = G (1 + th), |th| <= 2^-22.9: span to float, the
      // division; gb and the fma: one rounding each), the binner's g = s K - 1 by at most T 2^-22.5 +
      // (|a| + |b|) ga 2^-22 + 2^-23 with d's rounding (ndf_ecc3_binner), and t_k from a + k (b - a) /
      // (T - 1) by (|a| + |b|) 2^-51 in the same units; f <= rd(t_k) iff f <= t_k.  So when d = ceil(g)
      // - g lies in [D, 1 - D], D = T 2^-22 + 5 (|a| + |b|) ga 2^-24 + 2^-21 (above each bound by a
      // quarter or more), the bin is ceil(g): f > t_{k-1} and f <= t_k.  Only with the thresholds in
      // order (m = T - 1), D < 1/4 and ga > 0; else every guess reads the table.  (tests/test_ecc_cert.c
      // finds no wrong certified bin at D, and wrong ones from D / 4.)
      // A given range: a and b are doubles, so gb = -(float)a ga has one more rounding, |a| ga 2^-24 at most: the
      // middle term 6 (|a| + |b|) ga 2^-24 there (values outside [a, b] saturate to the bins -1 and T, or lie
      // within 1 / ga of a or b: their products' roundings are inside the constant's margin; test_ecc_cert's
      // given-range runs).
      const double D = (double)T * 0x1p-22 + (fabs(a) + fabs(b)) * (double)s_ga * (given ? 0x1.8p-22 : 0x1.4p-22) + 0x1p-21;
      // (ga > 0: +inf * ga + gb = +inf, whose guess is T; a constant image has ga = 0 and NaN there)
      const bool cert = p.bin == 0 && m == T - 1 && D < 0.25 && s_ga > 0.0f;
      s_dl = cert ? __double2float_ru(D) : 2.0f; // 2: never certified
      s_dh = cert ? __fsub_rd(1.0f, __double2float_ru(D)) : -1.0f;
      // ib (the telescoped kernels' uint8 / uint16 input over [min, max]: a and b are integers, b - a < 2^16): the
      // integer binner's M, c, mag, sh as bits in s_ga, s_gb, s_dl, s_dh (ndf_ecc3_binner).  An integer f has the
      // bin ceil((f - a) M / D), M = T - 1, D = b - a: f <= t_k iff (f - a) M <= D k, and t_k (double) is that
      // rational exactly when it is an integer, else 1 / M or more from the next integer (rounding 2^-35 at most).
      // As floor(x / D), x = (f - a) M + D - 1 < 2^25 (f up to 65536: +inf's clamp), by one 32 x 32-bit product:
      // floor(x mag / 2^sh), sh = 25 + ceil(log2 D), mag = ceil(2^sh / D) (mag D = 2^sh + e, e < D: the excess
      // x e / (D 2^sh) < 2^-ceil(log2 D) <= 1 / D never reaches the next integer).  c folds the bias of the
      // binner's f + 2^23 (bits 0x4b000000 + f).  A constant image (D = 0): M = T, D = 1 (bins 0, and T outside).
      if (ib) {
        const unsigned D0 = (unsigned)(b - a), D = D0 ? D0 : 1u, M = D0 ? (unsigned)(T - 1) : (unsigned)T;
        const int sh = 25 + (D > 1u ? 32 - __clz(D - 1u) : 0);
        s_ga = __int_as_float((int)M);
        s_gb = __int_as_float((int)(D - 1u - (unsigned)a * M - 0x4b000000u * M));
        s_dl = __int_as_float((int)(unsigned)(((1ull << sh) + D - 1u) / D));
        s_dh = __int_as_float(sh);
      }
    }
    __syncthreads(); // tsf, tpair, the guess (and the caller's histogram, zeroed before)
  }
  return true;
}

// the offset of image img's curve in the output (its batch index by the caller's strides)
template <class P> __device__ __forceinline__ ndf_i64 ndf_ecc2_out_at(const P &p, ndf_i64 img) {
  ndf_i64 off = 0;
  for (int d = p.nb - 1; d >= 0; d--) {
    off += (img % p.oshape[d]) * p.ostr[d];
    img /= p.oshape[d];
  }
  return off;
}
// A given range's end in image img's last block (h: the image's histogram copies): no curve is written when
// some block found a NaN (the call's key, every block's before its ticket).  One image: the curve, then the
// header.  Several: the call's ticket (cnt[nimg]), then the image's last block waits until every image's has
// taken it (the grid is co-resident) and writes its own curve (or none); the call's last writes the header.
// (The call's last block alone copying every curve out of scratch, each element's offset by 64-bit divisions,
// would make 64 x 256^2 about 1.8 times as slow as over [min, max].)
template <class P>
__device__ __forceinline__ void ndf_ecc2_finish_given(const P &p, const long long *h, int img, int m, double a, double b,
                                                   bool &s_last) {
  const int tid = threadIdx.x;
  const ndf_u64 *const gkey = (const ndf_u64 *)p.part;
  if (p.nimg > 1) {
    __syncthreads(); // every thread has read s_last (the caller's branch)
    if (tid == 0) {
      s_last = ndf_ecc2_ticket(&p.cnt[p.nimg], p.fence) == (unsigned)p.nimg - 1u;
      ndf_ecc2_wait_count(&p.cnt[p.nimg], (unsigned)p.nimg);
    }
    __syncthreads();
  }
  const ndf_u64 key = __ldcg(gkey);
  if (key == 0ull) ndf_ecc2_prefix(h, p.ncopy, m, p.out + ndf_ecc2_out_at(p, img), p.T, p.ostep);
  if (s_last && tid == 0) ndf_ecc2_header(p, a, b, key, 0);
}

// The end of the warp-strip kernels: the block's histogram (bin k: val(k)) added to its copy of
// the image's (one global atomic per non-zero bin), then one ticket per block; the image's last
// block sums the copies and writes the curve.
template <class P, class F>
__device__ __forceinline__ void ndf_ecc2_end(const P &p, int img, int bimg, int T, const int &s_m, bool &s_last, F val) {
  const int tid = threadIdx.x;
  __syncthreads();
  ndf_ecc2_stamp(p.prof, 4);
  {
    ndf_u64 *hc = p.hist + ((ndf_i64)img * p.ncopy + bimg % p.ncopy) * p.T;
    for (int k = tid; k < T; k += 256) {
      const int v = val(k);
      if (v) atomicAdd(hc + k, (ndf_u64)(long long)v);
    }
  }
  __syncthreads();
  if (tid == 0) s_last = ndf_ecc2_ticket(&p.cnt[img], p.fence) == (unsigned)p.bpi - 1u;
  __syncthreads();
  ndf_ecc2_stamp(p.prof, 5);
  if (s_last) {
    double a, b;
    const long long *h = (const long long *)p.hist + (ndf_i64)img * p.ncopy * p.T;
    if (!ndf_ecc2_given(p, a, b)) ndf_ecc2_prefix(h, p.ncopy, s_m, p.out + ndf_ecc2_out_at(p, img), p.T, p.ostep);
    else ndf_ecc2_finish_given(p, h, img, s_m, a, b, s_last);
  }
  ndf_ecc2_stamp(p.prof, 6);
}

// A given range's start (RNG; instead of phase 1 and the grid barrier): the block zeroes its share of the
// histogram copies and the tickets (the images' and the call's, cnt[nimg]), block 0 the call's NaN key
// (part[0]); then thread 0 arrives at the grid barrier and keeps the word in rflag[1] (rflag[0]: the block's
// NaN flag, set by the binner's pass).  The block marches without waiting.
template <class P> __device__ __forceinline__ void ndf_ecc2_given_start(const P &p, unsigned *rflag, unsigned long long &r_key) {
  const int tid = threadIdx.x;
  const ndf_i64 nh = p.nimg * p.ncopy * p.T, stride = (ndf_i64)gridDim.x * 256;
  for (ndf_i64 i = (ndf_i64)blockIdx.x * 256 + tid; i < nh; i += stride) p.hist[i] = 0ull;
  for (ndf_i64 i = (ndf_i64)blockIdx.x * 256 + tid; i <= p.nimg; i += stride) p.cnt[i] = 0u;
  if (blockIdx.x == 0 && tid == 0) *(ndf_u64 *)p.part = 0ull;
  if (tid == 0) r_key = 0ull, rflag[0] = 0u;
  __syncthreads();
  if (tid == 0) rflag[1] = ndf_ecc2_arrive(p.gbar);
}
// After a given range's march, before ndf_ecc2_end: every block's zeroing done (the barrier's other half);
// when the block's passes saw a NaN, nanfind() (a thread's least NaN index among its own voxels, atomicMax'ed
// as ~index into r_key: the rare path) and the block's key into the call's (before its ticket).
template <class P, class F>
__device__ __forceinline__ void ndf_ecc2_given_nan(const P &p, const unsigned *rflag, unsigned long long &r_key, F nanfind) {
  __syncthreads();
  if (threadIdx.x == 0) ndf_ecc2_await(p.gbar, rflag[1]);
  if (*(const volatile unsigned *)rflag) {
    nanfind();
    __syncthreads();
    if (threadIdx.x == 0 && r_key) atomicMax((ndf_u64 *)p.part, (ndf_u64)r_key);
  }
}

#if NDF_KERNEL(ndf_ecc_strip2)
extern "C" __global__ void __launch_bounds__(256, 4) ndf_ecc_strip2(const ndf_ecc2_params p) {
  if (NSP != 2 || sizeof(V) != 4) return; // 2-D float comparisons only (the runtime never asks otherwise)
  __shared__ int shist[512 + 32]; // T + 1 counters, then a dummy slot per lane (never read)
  __shared__ float tsf[512];       // -inf, the T sorted thresholds rounded down, +inf
  __shared__ float2 tpair[512];    // tpair[k] = (tv[k - 1], tv[k]), k = 0..T
  __shared__ float s_ga, s_gb, s_dl, s_dh;
  __shared__ int s_m;
  __shared__ float r_lo[8], r_hi[8];
  __shared__ unsigned long long r_key;
  __shared__ bool s_last;
  const ndf_ecc2_at at = ndf_ecc2_start(p);
  const bool hblk = at.hblk, act = at.act;
  const int img = at.img, bimg = at.bimg;
  const int T = (int)p.T;
  const int tid = threadIdx.x, lane = tid & 31;
  const unsigned FULL = 0xffffffffu;
  const ndf_ecc2_task tk = ndf_ecc2_task_at(p, at, 0);
  const int x0 = tk.x0, r0 = tk.r0, r1 = tk.r1;
  const TIN *in = tk.in;
  const ndf_ecc2_lane L = ndf_ecc2_lane_at(p, in, x0);
  const bool vec = L.vec;
  ndf_ecc2_strip_phase1(p, in, L, img, act, r0, r1, r_lo, r_hi, r_key);
  ndf_ecc2_stamp(p.prof, 1);
  ndf_ecc2_grid_sync(p.gbar, p.fence);
  ndf_ecc2_stamp(p.prof, 2);

  // ---- the march's first rows, loaded now: their latency overlaps the set-up below (the grid
  // barrier's acquire has emptied L1; the rows come from L2); rows r0 - 1, r0, ... (ndf_ecc2_rows)
  typedef ndf_ecc2_raw raw;
  ndf_ecc2_rows<ndf_ecc2_params> rows(p, in, L, r0 - 1, r1);
  auto load = [&](auto vecc, raw &w) { rows.template load<decltype(vecc)::value>(w); };
  const float INF = __int_as_float(0x7f800000);
  raw R0, R1, R2; // rows r0 - 1, r0, r0 + 1, then a ring (ndf_ecc_strip2's march)
  if (act) {
    if (vec) {
      load(ndf_ecc2_bool<true>(), R0), load(ndf_ecc2_bool<true>(), R1), load(ndf_ecc2_bool<true>(), R2);
    } else {
      load(ndf_ecc2_bool<false>(), R0), load(ndf_ecc2_bool<false>(), R1), load(ndf_ecc2_bool<false>(), R2);
    }
  }

  for (int k = tid; k <= T; k += 256) shist[k] = 0;
  if (!ndf_ecc2_setup(p, hblk, T, tsf, tpair, r_lo, r_hi, r_key, s_ga, s_gb, s_dl, s_dh, s_m)) return;
  ndf_ecc2_stamp(p.prof, 3);

  // ---- the march: the warp's strip over rows r0 .. r1 - 1, no block barrier
  // two copies of the march: float4 rows or element loads (warp-uniform choice)
  auto march = [&](auto vecc) { // vecc: ndf_ecc2_bool<float4 rows>, passed to load
    const float ga = s_ga, gb = s_gb, dl = s_dl, dh = s_dh;
    const bool cert = dl < 1.0f; // block-uniform
    const float *tv = tsf + 1;
    const unsigned G = CONS == 1 ? NDF_ECC_PG : 0u;
    const int ir1 = r1;
    // bins of a row into its words {(x - 1, x), (x, x + 1), (x + 2, x + 3), (x + 3, x + 4)}; the
    // word (x + 1, x + 2) is formed where it is used (registers)
    auto binrow = [&](const raw &w, unsigned (&o)[4]) {
      unsigned bq[5];
      bool ok = true;
      if (cert) {
        // the guess without a table read when certified (see the set-up; +inf, outside: T); the
        // others (about 2 D of the voxels: (T + ...) 2^-21) walk from the guess
        auto certified = [&](float f, float g) {
          const float d = ceilf(g) - g;
          return ((d >= dl) & (d <= dh)) | (f == INF);
        };
#pragma unroll
        for (int j = 0; j < 5; j++) {
          const float f = w.v[j];
          const float g = fmaf(f, ga, gb);
          bq[j] = min((unsigned)__float2int_rz(ceilf(g)), (unsigned)T);
          ok &= certified(f, g);
        }
        if (__any_sync(FULL, !ok)) { // rare: the voxels not certified (the test again) walk
#pragma unroll
          for (int j = 0; j < 5; j++) {
            const float f = w.v[j];
            if (!certified(f, fmaf(f, ga, gb))) bq[j] = ndf_ecc2_walk(f, (int)bq[j], tv, T);
          }
        }
      } else {
#pragma unroll
        for (int j = 0; j < 5; j++) {
          const float f = w.v[j];
          const unsigned k = min((unsigned)__float2int_ru(fmaf(f, ga, gb)), (unsigned)T);
          const float2 pr = tpair[k];
          ok &= (f > pr.x) & (f <= pr.y);
          bq[j] = k;
        }
      }
      if (!cert && __any_sync(FULL, !ok)) {
        // a guess off by some (a value on a threshold, rounding, a wide range): walk to the exact
        // bin, the least k with f <= tv[k] (any start gives it; +inf: T)
#pragma unroll
        for (int j = 0; j < 5; j++) {
          const float f = w.v[j];
          bq[j] = ndf_ecc2_walk(f, (int)bq[j], tv, T);
        }
      }
      const unsigned A = __byte_perm(bq[0], bq[1], 0x5410) | G, B = __byte_perm(bq[2], bq[3], 0x5410) | G;
      const unsigned H = bq[4] | (G & 0x3ffu);
      unsigned up = __shfl_up_sync(FULL, B, 1), dn = __shfl_down_sync(FULL, A, 1);
      if (lane == 0) up = H << 16;
      if (lane == 31) dn = H;
      o[0] = __byte_perm(up, A, 0x5432);
      o[1] = A;
      o[2] = B;
      o[3] = __byte_perm(B, dn, 0x5432);
    };
    auto step = [&](const unsigned (&P)[4], const unsigned (&Q)[4], unsigned (&N)[4], raw &rw) {
      binrow(rw, N);    // row r + 1 from the raw values loaded three steps ago
      load(vecc, rw);   // row r + 4
#pragma unroll
      for (int s = 0; s < 2; s++) {
        // word s: (x + 2 s, x + 2 s + 1) with its left and right neighbour words in each row
        unsigned R0[3][3], R1[3][3], R2[3][3];
#pragma unroll
        for (int k = 0; k < 3; k++) R0[0][k] = R0[2][k] = R1[0][k] = R1[2][k] = R2[0][k] = R2[2][k] = 0u;
        R0[1][2 - 2 * s] = __byte_perm(P[1], P[2], 0x5432);
        R1[1][2 - 2 * s] = __byte_perm(Q[1], Q[2], 0x5432);
        R2[1][2 - 2 * s] = __byte_perm(N[1], N[2], 0x5432);
        R0[1][1] = P[1 + s], R0[1][2 * s] = P[3 * s];
        R1[1][1] = Q[1 + s], R1[1][2 * s] = Q[3 * s];
        R2[1][1] = N[1 + s], R2[1][2 * s] = N[3 * s];
        const unsigned d = ndf_ecc_pack_sum<2, CONS>(R0, R1, R2);
        const unsigned wq = Q[1 + s];
#pragma unroll
        for (int h = 0; h < 2; h++) {
          const unsigned bn = (wq >> (16 * h)) & 0x1ffu;
          const int c = ndf_ecc_pack_c<2, CONS>(d, h);
          // no branch: voxels not counted (c = 0, outside) add to the lane's own dummy slot
          atomicAdd(&shist[c != 0 && bn < (unsigned)T ? bn : 512u + lane], c);
        }
      }
    };
    unsigned WA[4], WB[4], WC[4];
    // rows r0 - 1 (R0), r0 (R1), r0 + 1 (R2) in flight since the grid barrier; then R0, R1 take r0 + 2, r0 + 3
    binrow(R0, WA);
    binrow(R1, WB);
    load(vecc, R0);
    load(vecc, R1);
    for (int r = r0; r < ir1; r += 3) {
      step(WA, WB, WC, R2);
      if (r + 1 >= ir1) break;
      step(WB, WC, WA, R0);
      if (r + 2 >= ir1) break;
      step(WC, WA, WB, R1);
    }
  };
  if (act) {
    if (vec) march(ndf_ecc2_bool<true>());
    else march(ndf_ecc2_bool<false>());
  }

  // ---- the block's histogram to its copy of the image's, the ticket, the curve
  ndf_ecc2_end(p, img, bimg, T, s_m, s_last, [&](int k) { return shist[k]; });
}
#endif

// ---- the 3-D warp-strip kernel (ndf_ecc_strip3, 3-D fused calls; ecc.3d=old: rows or ndf_ecc_pack) ----
// Thresholds over [min, max], T <= 510 (the runtime asks for T <= 320), 3-D, float comparisons
// (float32; uint8, uint16 when asked); one cooperative launch with strip2's phases
// (ndf_ecc2_phase1_end, ndf_ecc2_setup, ndf_ecc2_end), but
// no owner of a cell: every cell's bin is the bin of its max (V) or min (T) vertex -- bin(max f) =
// max bin(f) -- so the histogram of (-1)^dim over the cells is summed directly, telescoped along x
// (docs/adr/0009, "Telescoped cells"): for a sequence a_0 .. a_{n-1} along x (a_n = outside),
//   sum_i delta(a_i) - delta(agg(a_i, a_{i+1})) = sum_i c_i delta(a_i),  c_i = g_i - g_{i-1},
//   g_i = [a_{i+1} > a_i] (g_{-1} = 0),
// the same formula for V (agg = max; cells with their lowest corner at the voxel) and for T (agg
// = min over the top cells a face touches; rows and planes from -1).  Per voxel four sequences
// over the (y, z) faces of the voxel's corner: s0 = b(z, y), s1 = agg(s0, b(z, y + 1)), s2 =
// agg(s0, b(z + 1, y)), s3 = agg(s1, s1 of plane z + 1), signs + - - +: four shared-memory adds
// of c in {-1, 0, 1} per voxel, no neighbour ownership tests.
// - A tile is 16 columns (x .. x + 15) of 32 rows (lane l: row ty * 31 - CONS + l); a warp marches
//   an equal share of the image's (tile, plane) units, tile by tile (a segment: one tile's planes,
//   at most two segments per warp where the share is below a tile's planes); lane 31's row is only
//   the neighbour row y + 1 of lane 30 (its adds are zero: a bias keeps its g at 0).  Rows y + 1 come from lane + 1 by a shuffle; the voxel x + 16 (outside:
//   the bin T) is binned by every lane; the chunk's first voxel takes g_{-1} = 0 and the voxel
//   x + 16 takes -g_15 (the next chunk's lane leaves it out): c sums the same.
// - Voxels outside the image read as +inf: bin T, never counted, above every bin inside (every
//   value is <= max = t_{T-1}); a V cell with an outside vertex has the bin T, a T face's min
//   ignores it.
// - Bins are kept as byte offsets k * 128 + 4 * lane into the block's histogram of T + 1 rows of
//   32 lane columns (dynamic shared memory): a warp's adds hit 32 distinct banks; a max or min of
//   such offsets is the max or min bin (the column only breaks ties: any consistent order gives
//   the same sums).
// - The first guess k = ceil(f * ga + gb) by a round-up add of 1.5 * 2^23 (no conversion
//   instruction), certified or checked against the pairs as strip2's; misses walk.
#define NDF_S3R 31 // output rows per warp task (lane 31: the neighbour row)

NDF_PARAMS(ndf_ecc3_params)

// NDF_ECC3_HELPERS_BEGIN (the inline-PTX helpers, fenced so a host build can replace them)
// h[a] += c for a 32-bit shared-window address a (one RED, no address add)
__device__ __forceinline__ void ndf_ecc3_red(unsigned a, int c) { asm volatile("red.shared.add.s32 [%0], %1;" ::"r"(a), "r"(c)); }
// cp.async copies to shared memory (strip3's staged planes; sm_80 on, the runtime's condition): 16 bytes
// (L2 only), 4 bytes; the thread's copies so far as one group; wait for all of the thread's groups but the N
// newest (their copies visible to it)
#if __CUDA_ARCH__ >= 800
__device__ __forceinline__ void ndf_ecc3_cp16(float *s, const float *g) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"((unsigned)__cvta_generic_to_shared(s)), "l"(g) : "memory");
}
__device__ __forceinline__ void ndf_ecc3_cp4(float *s, const float *g) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"((unsigned)__cvta_generic_to_shared(s)), "l"(g) : "memory");
}
__device__ __forceinline__ void ndf_ecc3_cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> __device__ __forceinline__ void ndf_ecc3_cp_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }
#else
__device__ __forceinline__ void ndf_ecc3_cp16(float *s, const float *g) { *(float4 *)s = *(const float4 *)g; }
__device__ __forceinline__ void ndf_ecc3_cp4(float *s, const float *g) { *s = *g; }
__device__ __forceinline__ void ndf_ecc3_cp_commit() {}
template <int N> __device__ __forceinline__ void ndf_ecc3_cp_wait() {}
#endif
// the float2 at the 32-bit shared-window address a (the binner's threshold pairs)
__device__ __forceinline__ float2 ndf_ecc3_ldpair(unsigned a) {
  float2 r;
  asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];" : "=f"(r.x), "=f"(r.y) : "r"(a));
  return r;
}
// the u32 v to the 32-bit shared-window address a (the binner's NaN flag)
__device__ __forceinline__ void ndf_ecc3_st(unsigned a, unsigned v) { asm volatile("st.shared.u32 [%0], %1;" ::"r"(a), "r"(v) : "memory"); }
// sat(fma(a, b, c)): [0, 1], NaN to 0 (one FFMA.SAT)
__device__ __forceinline__ float ndf_ecc3_fmasat(float a, float b, float c) {
  float r;
  asm("fma.rn.sat.f32 %0, %1, %2, %3;" : "=f"(r) : "f"(a), "f"(b), "f"(c));
  return r;
}
// NDF_ECC3_HELPERS_END
// bin k of a block's histogram: the sum of its 32 lane columns (a thread's reads rotated over the banks)
__device__ __forceinline__ int ndf_ecc3_colsum(const int *h3, int k, int lane) {
  int v = 0;
#pragma unroll 8
  for (int c = 0; c < 32; c++) v += h3[k * 32 + ((c + lane) & 31)];
  return v;
}

// The bins of the telescoped kernels' marches (ndf_ecc_strip3, ndf_ecc_strip2t) as shared-window
// addresses k * 128 + cb of the block's histogram, cb: its address plus the lane's column.  The first
// guess k = ceil(g), g = s K - 1, K = T + 1/2, s = sat(f ga2 + gb2) (one FFMA.SAT: ga2 = ga / K, gb2 =
// (gb + 1) / K, so g ~ f ga + gb clamped to [-1, T - 1/2]), by one round-up FFMA r = C + s K, C =
// 1.5 * 2^23 - 1 (r = 1.5 * 2^23 + k: the address bits(r) * 128 + cbm; no conversion instruction),
// certified (d = ceil(g) - g = (r - C) - s K in [dl, dh]: one FADD, one FFMA, the lane's least and
// greatest d) or corrected by passes against the pairs (see the operator).  The error of g against
// (f - a) (T - 1) / (b - a) is at most T 2^-22.5 + (|a| + |b|) ga 2^-22 + 2^-23 with d's own rounding
// (ga: 2^-22.9 relative; ga2, gb + 1, gb2, s, d: one rounding each), within ndf_ecc2_setup's D (T 2^-22
// + 5 (|a| + |b|) ga 2^-24 + 2^-21).
// +inf (outside) gives s = 1, the bin T (d = 1/2: certified); rowin false (strip3: a row outside the
// image, read as row 0 or ny - 1) and planes outside (pin false) take ga2 = 1, gb2 = +inf: every
// value (finite or +inf) the bin T.  s = 0 (a guess far below: uncertified thresholds over a narrow
// range far from 0; a constant image's +inf, ga = 0) gives the bin -1: never certified (d = 0), its
// passes start at 0.
//
// uint8 / uint16 input (NDF_ECC_IB): thresholds on integers -- T = 256 over [0, 255] puts every voxel on
// one -- leave no guess certified, so the FFMA guess would pass every lane (and the uint8 march at 256^3 take
// about three times float32's time).  Instead the exact bin by integer arithmetic (ndf_ecc2_setup's ib): f + 2^23's
// bits clamped to 0x4b010000 (f = 65536: +inf, outside, to the bin T), x = bits M + c, k = min(floor(x mag /
// 2^sh), T); rows and planes outside take M = 0, c = 2^25 - 1 (k >= 512 > T).  Seven instructions a voxel, no
// passes.
struct ndf_ecc3_binner {
  float ga2l, gb2l, K, dl, dh;
  bool cert, rowin;
  unsigned cb, cbm, tpa; // tpa: the shared-window address of tpair[0]
  int T;
  unsigned iM, ic, imag; // NDF_ECC_IB: the integer binner's M, c (rows outside: 0, 2^25 - 1), mag, sh
  int ish;
  // pin false (warp-uniform): v is a plane outside the image (any values), every bin T
  template <int N> __device__ __forceinline__ void operator()(const float (&v)[N], unsigned (&o)[N], bool pin = true) const {
    const unsigned FULL = 0xffffffffu;
    if (NDF_ECC_IB) {
      const unsigned M = pin ? iM : 0u, c = pin ? ic : 0x1ffffffu;
#pragma unroll
      for (int j = 0; j < N; j++) {
        const unsigned x = min((unsigned)__float_as_int(v[j] + 8388608.0f), 0x4b010000u) * M + c;
        o[j] = min((unsigned)(((unsigned long long)x * imag) >> ish), (unsigned)T) * 128u + cb;
      }
      return;
    }
    const float ga2 = pin ? ga2l : 1.0f, gb2 = pin ? gb2l : __int_as_float(0x7f800000);
    const bool in = rowin && pin;
    float dmn = 1.0f, dmx = 0.0f; // certified guesses: the least and the greatest d = ceil(g) - g of the lane's voxels
#pragma unroll
    for (int j = 0; j < N; j++) {
      const float s = ndf_ecc3_fmasat(v[j], ga2, gb2);
      const float r = __fmaf_ru(s, K, 12582911.0f); // 1.5 * 2^23 + ceil(s K - 1)
      o[j] = (unsigned)__float_as_int(r) * 128u + cbm;
      if (cert) {
        const float d = fmaf(-s, K, r - 12582911.0f); // ceil(g) - g
        dmn = fminf(dmn, d), dmx = fmaxf(dmx, d);
      }
    }
    // A lane with a guess not certified (uncertified thresholds: every lane in the image) corrects its bins
    // against the pairs, every voxel one bin a pass toward its own (bin k: tv[k - 1] < f <= tv[k]): certified
    // thresholds need one pass -- every guess is within its error bound (below D < 1 / 4) of the exact (f - a)
    // (T - 1) / (b - a), the thresholds' rounding included, so its ceiling at most one bin from the bin -- others
    // pass until none moves.
    // (A rare path of unrolled ndf_ecc2_walk calls with per-voxel certificate tests would cost the march 13% at
    // 512^3 and 19% at 8192^2, and the path is not that rare: at T = 256 over [-1000, 1000) about 13% of the
    // warps' steps hold an uncertified voxel, an estimate.)  Lanes outside the image take the bin T
    // from the guess (s = 1, certified) for any finite or +inf value -- their values are another row's.
    // A given range (RNG) adds: -inf (bin 0: the clamp below), NaN (s = 0, never certified: the
    // pass flags it in tpair[511], the bodies' rflag), and lanes outside the image whose values give s = 0
    // (-inf, NaN: -inf + inf) -- they pass too and take the bin T; with uncertified thresholds they pass always.
    // Its own specialization: those few instructions a voxel in the pass would cost the [min, max] kernels 2-3%
    // (512^3, 8192^2), though the pass is the cold path.
    const bool fix = cert ? (dmn < dl) | (dmx > dh) : RNG ? true : in;
    if (__any_sync(FULL, fix) && fix) {
      const int kmin = in ? 0 : T; // (RNG: k + dk <= T)
      bool nan = false;
      for (;;) { // a pass over the lane's voxels (settled ones stay)
        bool mv = false;
#pragma unroll
        for (int j = 0; j < N; j++) {
          const int k = min(max((int)(o[j] - cb) >> 7, 0), T);
          const float2 pr = ndf_ecc3_ldpair(tpa + 8u * (unsigned)k);
          const int dk = (int)(v[j] > pr.y) - (int)(v[j] <= pr.x);
          if (RNG) {
            const int kn = max(k + dk, kmin);
            nan |= v[j] != v[j];
            o[j] = (unsigned)kn * 128u + cb;
            mv |= kn != k;
          } else {
            o[j] = (unsigned)(k + dk) * 128u + cb;
            mv |= dk != 0;
          }
        }
        if (cert || !mv) break;
      }
      if (RNG && nan) ndf_ecc3_st(tpa + 8u * 511u, 1u);
    }
  }
};
__device__ __forceinline__ ndf_ecc3_binner ndf_ecc3_binner_make(int T, bool rowin, const int *h3, const float *tsf,
                                                                const float2 *tpair, float ga, float gb, float dl, float dh) {
  ndf_ecc3_binner b;
  b.cert = dl < 1.0f; // block-uniform
  b.dl = dl;
  b.dh = dh;
  b.K = (float)T + 0.5f;
  b.ga2l = rowin ? __fdiv_rn(ga, b.K) : 1.0f;
  b.gb2l = rowin ? __fdiv_rn(__fadd_rn(gb, 1.0f), b.K) : __int_as_float(0x7f800000);
  b.rowin = rowin;
  b.cb = (unsigned)__cvta_generic_to_shared(h3) + 4u * (unsigned)(threadIdx.x & 31);
  b.cbm = b.cb - 0x4b400000u * 128u;
  b.T = T;
  b.tpa = (unsigned)__cvta_generic_to_shared(tpair);
  if (NDF_ECC_IB) { // ndf_ecc2_setup's ib: M, c, mag, sh as bits in ga, gb, dl, dh
    b.iM = rowin ? (unsigned)__float_as_int(ga) : 0u;
    b.ic = rowin ? (unsigned)__float_as_int(gb) : 0x1ffffffu;
    b.imag = (unsigned)__float_as_int(dl);
    b.ish = __float_as_int(dh);
  }
  return b;
}

// The kernel body for W columns per lane (ndf_ecc_strip3: 16, ndf_ecc_strip3n: 8); the block's
// shared variables come from the kernel.
template <int W, bool SK = false>
__device__ __forceinline__ void ndf_ecc3_body(const ndf_ecc3_params &p, int *h3, float *tsf, float2 *tpair, float &s_ga,
                                              float &s_gb, float &s_dl, float &s_dh, int &s_m, float *r_lo, float *r_hi,
                                              unsigned long long &r_key, bool &s_last) {
  // ndf_ecc2_start's fields, computed here: through the helper ptxas schedules strip3 differently
  // (other SASS at the same registers), the other kernels identically
  // the split: phase 1 by a launch of ndf_ecc_strip3 before ndf_ecc_strip3s with the same parameters (p1 ==
  // 2, bcol == 2) -- it ends after phase 1 (the blocks' partials written, histograms and tickets zeroed), and
  // ndf_ecc_strip3s (SK) starts at the set-up: phase 1 runs with ndf_ecc_strip3's small shared memory (a large
  // L1).  ndf_ecc_strip3s has no phase 1 of its own: by bulk copies or by its own loads, phase 1 is slower
  // than the split at every size measured
  const bool split = p.p1 == 2 && p.bcol == 2; // ndf_ecc_strip3 as that phase 1 (its own calls never split)
  if (!SK || RNG) ndf_ecc2_stamp(p.prof, 0); // (the split: ndf_ecc_strip3 stamps phase 1)
  const int T = (int)p.T;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const unsigned FULL = 0xffffffffu;
  // 32-bit places (the runtime keeps planes, rows, columns + 64, blocks and units below 2^31)
  const bool hblk = p.hdrblk && blockIdx.x == gridDim.x - 1; // the header block: no tasks, no image
  const int bpi = (int)p.bpi, img = hblk ? 0 : (int)blockIdx.x / bpi, bimg = hblk ? 0 : (int)blockIdx.x % bpi;
  // the warp's range [u0, u1) of the image's units u = col * L + plane + CONS (L = nz + CONS planes from
  // -CONS), an equal share of the tpi warps' (warp-uniform; empty: no work), col: the tile ty * ntx + tx;
  // or with bcol (block columns) an equal share of the bpi blocks' over the units of nbx = ntx / 8
  // groups of 8 tiles, col = ty * nbx + g, the block's warp w marching tile tx = 8 g + w: the block's
  // warps read the same planes of neighbouring tiles together (a row's 8 x 64 bytes; the voxel x + 16
  // is the next warp's first, in the same sector: sharing that third sector per row saves about 7% of the
  // march at 512^3)
  const int wi = bimg * 8 + warp;
  const int ntx = (int)p.ntx, nty = (int)p.nty, nbx = p.bcol ? ntx / 8 : ntx;
  const int nzi = (int)p.nz, nyi = (int)p.ny, nxi = (int)p.nx, L = nzi + CONS;
  const ndf_i64 U = (ndf_i64)nbx * nty * L, nsh = p.bcol ? p.bpi : p.tpi;
  const bool act = !hblk && wi < (int)p.tpi;
  const int sid = p.bcol ? bimg : wi;
  const int u0 = act ? (int)((ndf_i64)sid * U / nsh) : 0, u1 = act ? (int)((ndf_i64)(sid + 1) * U / nsh) : 0;
  const TIN *in = p.in + ndf_ecc2_img_base(p, img);
  const unsigned wall = (1u << W) - 1u;
  // vector rows (float4; uint8 / uint16: VB elements, 16 bytes or W of them): unit x stride, row
  // and plane strides and width multiples of VB, aligned base
  constexpr int VB = sizeof(TIN) == 4 ? 4 : 16 / (int)sizeof(TIN) < W ? 16 / (int)sizeof(TIN) : W;
  const bool vec = p.sx == 1 && ((p.sy | p.sz | p.nx) & (VB - 1)) == 0 && (((size_t)in) & (VB * sizeof(TIN) - 1)) == 0;
  // a segment of the range: one tile's planes zb .. ze - 1 (warp-uniform but rowin)
  struct seg {
    int x, y, zb, ze;
    unsigned inb; // bit j: voxel x + j in the image (j = 0..W; W: the voxel right of the chunk)
    bool rowin, fast;
    const TIN *rowp;
  };
  // segment s: tile's planes zb .. ze - 1
  auto seg_fill = [&](int tile, int zb, int ze, seg &s) {
    const int tx = tile % ntx, ty = tile / ntx;
    s.x = tx * W, s.y = ty * NDF_S3R - CONS + lane;
    s.zb = zb, s.ze = ze;
    s.rowin = s.y >= 0 && s.y < nyi;
    s.inb = 0;
#pragma unroll
    for (int j = 0; j <= W; j++) s.inb |= (unsigned)(s.x + j < nxi) << j;
    // the fill-free loads: float4 rows, the whole chunk in the image (warp-uniform); a lane whose row is
    // outside reads row 0 or ny - 1 instead, and the march bins its values as outside (the bin T)
    s.fast = vec && (s.inb & wall) == wall;
    s.rowp = in + (ndf_i64)min(max(s.y, 0), nyi - 1) * p.sy + (ndf_i64)s.x * p.sx;
  };
  // the march's segment that starts at unit u (u0 <= u < u1); returns its units
  auto seg_at = [&](int u, seg &s) {
    const int col = u / L, z0 = u - col * L, n = min(L - z0, u1 - u);
    seg_fill(p.bcol ? (col / nbx) * ntx + (col % nbx) * 8 + warp : col, z0 - CONS, z0 - CONS + n, s);
    return n;
  };
  const float INF = __int_as_float(0x7f800000);
  struct raw {   // a row's W voxels and the voxel right of them (v[W])
    float v[W + 1];
    bool pin;     // false: plane outside the image (v: any values; the binner's bin T)
  };
  // the lane's row of plane z of segment s (voxels outside the image: +inf; VEC: a plane outside the
  // image reads plane 0 or nz - 1 and leaves pin false -- no fills, which ptxas hoisted above the test)
  auto load = [&](auto vecc, const seg &s, int z, raw &w) {
    constexpr bool VEC = decltype(vecc)::value;
    w.pin = true;
    if (VEC) {
      w.pin = z >= 0 && z < nzi;
      z = min(max(z, 0), nzi - 1);
    } else if (z < 0 || z >= nzi) { // warp-uniform
#pragma unroll
      for (int j = 0; j <= W; j++) w.v[j] = INF;
      return;
    }
    const TIN *rp = s.rowp + (ndf_i64)z * p.sz;
    if (VEC) { // fast: no fills
#pragma unroll
      for (int u = 0; u < W / VB; u++) ndf_ecc3_vld<VB>(rp + VB * u, w.v + VB * u);
    } else {
#pragma unroll
      for (int j = 0; j < W; j++) w.v[j] = s.rowin && ((s.inb >> j) & 1u) ? (float)rp[(ndf_i64)j * p.sx] : INF;
    }
    w.v[W] = s.rowin && ((s.inb >> W) & 1u) ? (float)rp[(ndf_i64)W * p.sx] : INF;
  };

  // Staged planes (bcol == 2: block columns of 128 whole columns; float4 rows): the block's 8 warps copy
  // each plane's 32 rows x 128 columns to one of NSB shared buffers after the histogram by cp.async,
  // coalesced -- warp w rows 4w .. 4w + 3, lane l columns 4l .. 4l + 3, lanes 0..3 also column 128 -- no
  // registers held; after the copies' wait and a block barrier each lane reads its row's 16 columns and the
  // one after.  A warp's 4 copies touch 4 rows' lines each instead of 32.  (The staging gains only where the
  // planes come from DRAM: the march's stalls are the shared adds', shuffles' and instruction fetch, and
  // coalesced loads without staging do not speed it.)  Every warp of the block marches the same segments (block
  // columns), so all reach each barrier.  The copies run NSB - 1 planes ahead of the reads (two buffers, one
  // plane ahead, are up to 3% slower at 512^3): plane z + 3's copies go, right after plane
  // z's barrier, to the buffer plane z - 1 was read from before it; a segment's first copies follow a
  // block barrier (every warp past its reads of the segment before).
  constexpr int SBS = 132, NSB = 4; // a staged row's stride in floats (lane-per-row float4 reads conflict-free); buffers
  const bool stg = SK && W == 16 && p.bcol == 2 && vec && sizeof(TIN) == 4; // SK: ndf_ecc_strip3s (its own registers)
  float *const sbuf = (float *)(h3 + (T + 1) * 32);
  // plane z (clamped) of the block column of segment s to buffer sq % NSB (rows clamped: binned outside by
  // rowin), no copies past the segment's plane ze; one commit group each call (the waits count groups), sq + 1
  auto s_issue = [&](const seg &s, int z, unsigned &sq) {
    if (z <= s.ze) {
      const int zc = min(max(z, 0), nzi - 1), x0 = s.x - W * warp, r0 = s.y - lane + 4 * warp;
      const float *b = (const float *)in + (ndf_i64)zc * p.sz + x0;
      float *const sb = sbuf + (sq % NSB) * (32 * SBS) + 4 * warp * SBS;
      if (lane < 4 && x0 + 128 < nxi) ndf_ecc3_cp4(sb + lane * SBS + 128, b + (ndf_i64)min(max(r0 + lane, 0), nyi - 1) * p.sy + 128);
      // one pointer walked down the 4 rows (64-bit values live: one; ptxas spilled with four): row r0 + i
      // clamped, so it moves on only while r0 + i >= 0 and r0 + i + 1 <= ny - 1
      const float *q = b + (ndf_i64)min(max(r0, 0), nyi - 1) * p.sy + 4 * lane;
#pragma unroll
      for (int i = 0; i < 4; i++) {
        ndf_ecc3_cp16(sb + i * SBS + 4 * lane, q);
        if (i < 3 && r0 + i >= 0 && r0 + i + 1 <= nyi - 1) q += p.sy;
      }
    }
    ndf_ecc3_cp_commit();
    sq++;
  };
  // plane z to the lane's row w from the buffer of the group issued NSB - 1 calls of s_issue before the last
  // (the copies' wait but the NSB - 2 newest groups, a block barrier); the column after the image (the last
  // block column's 128) reads as outside
  auto s_deliver = [&](const seg &s, int z, raw &w, unsigned sq) {
    ndf_ecc3_cp_wait<NSB - 2>();
    __syncthreads();
    const float *r = sbuf + ((sq - (NSB - 1)) % NSB) * (32 * SBS) + lane * SBS + W * warp;
#pragma unroll
    for (int u = 0; u < W / 4; u++) {
      const float4 f4 = *(const float4 *)(r + 4 * u);
      w.v[4 * u] = f4.x, w.v[4 * u + 1] = f4.y, w.v[4 * u + 2] = f4.z, w.v[4 * u + 3] = f4.w;
    }
    w.v[W] = s.x + W < nxi ? r[W] : INF;
    w.pin = z >= 0 && z < nzi;
  };

  // A given range (RNG, a specialization of its own): no phase 1 -- the blocks zero the histogram copies, the tickets (the
  // images' and the call's) and the call's NaN key, arrive at the grid barrier and march; each waits for every
  // arrival only before its first global atomic (the end).  NaN: its guess s = 0 is never certified, so the
  // binner's pass sees it and sets rflag[0]; the block then looks for its least NaN index (the rare path).
  // rflag: tpair[511] (T <= 320), [0] that flag, [1] the arrival's word (thread 0).
  unsigned *const rflag = (unsigned *)(tpair + 511);
  if (RNG) {
    ndf_ecc2_given_start(p, rflag, r_key);
    ndf_ecc2_stamp(p.prof, 1);
  } else if (!SK) { // phase 1 (ndf_ecc_strip3, ndf_ecc_strip3n)
    // ---- phase 1: min, max, NaN of the image's own voxels (lanes 0..30, rows and planes in the image)
    // over other units: the image's (plane, tile) units v = z * NT + tile in plane-major order, warp wi
    // taking v = wi, wi + tpi, ... (grid-stride), so that the image's warps sweep the planes together,
    // neighbouring warps reading neighbouring tiles at the same time (phase 1 over the march's tile-major
    // shares, or over contiguous plane-major shares, is slower at 512^3)
    const int NT = ntx * nty;
    const ndf_i64 V1 = (ndf_i64)NT * nzi;
    const int tpi = (int)p.tpi;
    auto unit_at = [&](int v, seg &s) {
      const int z = v / NT;
      seg_fill(v - z * NT, z, z + 1, s);
    };
    float lo = INF, hi = -INF;
    bool anyown = false; // the lane owns a row of one of its units
    {
      // float4 rows, coalesced: F lanes per row (the row's W voxels, 16 bytes each), 32 / F rows per
      // load, the own rows 0..30 of the tile in F loads per plane (a load touches 32 / F rows' sectors,
      // not 32 rows' halves); rows outside the image or past 30 read a clamped row and are not folded
      constexpr int F = W / 4, R = 32 / F;
      // a unit's F row pointers (tile column x, first row ty0, plane z) and which rows to fold
      auto ptrs = [&](int x, int ty0, int z, const float *(&pp)[F], bool (&rv)[F]) {
        const float *b4 = (const float *)in + (ndf_i64)z * p.sz + x + 4 * (lane % F);
#pragma unroll
        for (int i = 0; i < F; i++) {
          const int q = lane / F + R * i, yq = ty0 + q;
          rv[i] = q < NDF_S3R && yq >= 0 && yq < nyi;
          pp[i] = b4 + (ndf_i64)min(max(yq, 0), nyi - 1) * p.sy;
        }
      };
      auto fold4 = [&](const float4 &a) {
        lo = ndf_ecc2_fminnan(lo, ndf_ecc2_fminnan(ndf_ecc2_fminnan(a.x, a.y), ndf_ecc2_fminnan(a.z, a.w)));
        hi = fmaxf(hi, fmaxf(fmaxf(a.x, a.y), fmaxf(a.z, a.w)));
      };
      // the lane's own row of a unit, element loads
      auto slow = [&](int tile, int z) {
        seg s;
        seg_fill(tile, z, z + 1, s);
        raw w;
        load(ndf_ecc2_bool<false>(), s, z, w);
        if (lane < NDF_S3R && s.rowin) // lane 31's row is another unit's
#pragma unroll
          for (int j = 0; j < W; j++)
            if ((s.inb >> j) & 1u) lo = ndf_ecc2_fminnan(lo, w.v[j]), hi = fmaxf(hi, w.v[j]);
      };
      // the cursor (tile column cx, row tile cy, plane cz) of unit v, stepped by tpi without divisions
      const int sz_ = tpi / NT, sy_ = tpi % NT / ntx, sx_ = tpi % NT % ntx;
      int cz = 0, cy = 0, cx = 0;
      if (act) cz = wi / NT, cy = wi % NT / ntx, cx = wi % NT % ntx;
      auto next = [&] {
        cx += sx_;
        if (cx >= ntx) cx -= ntx, cy++;
        cy += sy_;
        if (cy >= nty) cy -= nty, cz++;
        cz += sz_;
      };
      // uint8 / uint16, an image contiguous in C order: one linear sweep of 16-byte vectors, a warp's
      // 32 lanes over 512 consecutive bytes, four vectors in flight a lane (the units' rows below read half a
      // sector a row, which takes phase 1 to twice the DRAM floor); the 2^23-biased bits
      // folded as integers, the tail by elements
      const bool lin = sizeof(TIN) < 4 && p.sx == 1 && p.sy == p.nx && p.sz == p.ny * p.nx && (((size_t)in) & 15) == 0;
      if (lin) {
        constexpr int E = 16 / (int)sizeof(TIN), U = 4;
        const ndf_i64 nv = p.nz * p.ny * p.nx, nc = nv / E, st = (ndf_i64)tpi * 32;
        unsigned bmn = 0xffffffffu, bmx = 0u;
        for (ndf_i64 c = act ? (ndf_i64)wi * 32 + lane : nc; c < nc; c += U * st) {
          uint4 q[U];
#pragma unroll
          for (int u = 0; u < U; u++) q[u] = c + u * st < nc ? *(const uint4 *)(in + (c + u * st) * E) : *(const uint4 *)(in + c * E);
#pragma unroll
          for (int u = 0; u < U; u++) {
            const unsigned w[4] = {q[u].x, q[u].y, q[u].z, q[u].w};
#pragma unroll
            for (int i = 0; i < E; i++) {
              const unsigned x = __byte_perm(w[i / (4 / (int)sizeof(TIN))], 0x4b000000u, ndf_ecc3_bsel(i));
              bmn = min(bmn, x), bmx = max(bmx, x);
            }
          }
        }
        for (ndf_i64 i = act ? nc * E + (ndf_i64)wi * 32 + lane : nv; i < nv; i += st) {
          const unsigned x = 0x4b000000u + (unsigned)in[i];
          bmn = min(bmn, x), bmx = max(bmx, x);
        }
        if (bmn <= bmx) lo = __int_as_float((int)bmn) - 8388608.0f, hi = __int_as_float((int)bmx) - 8388608.0f;
      } else
      for (ndf_i64 v = act ? wi : V1; v < V1; v += 2 * (ndf_i64)tpi) { // two units' loads in flight (one left: it twice)
        const int xa = cx * W, ya = cy * NDF_S3R - CONS, za = cz, ta = cy * ntx + cx;
        if (v + tpi < V1) next();
        const int xb = cx * W, yb = cy * NDF_S3R - CONS, zb = cz, tb = cy * ntx + cx;
        next();
        // a row of the tile in the image: lanes 0..30 (rows ya + lane) own one
        anyown |= lane < NDF_S3R && ((ya + lane >= 0 && ya + lane < nyi) || (yb + lane >= 0 && yb + lane < nyi));
        if (sizeof(TIN) < 4 && vec && xa + W <= nxi && xb + W <= nxi) {
          // uint8 / uint16 (element loads would take four times float32's phase 1 at 256^3): the lane's own
          // row of both units, one vector load each (IF vectors of VB), their 2^23-biased bits folded as integers
          constexpr int IF = W / VB;
          const int qa = ya + lane, qb = yb + lane;
          const bool oa = lane < NDF_S3R && qa >= 0 && qa < nyi, ob = lane < NDF_S3R && qb >= 0 && qb < nyi;
          const TIN *a0 = in + (ndf_i64)za * p.sz + (ndf_i64)min(max(qa, 0), nyi - 1) * p.sy + xa;
          const TIN *b0 = in + (ndf_i64)zb * p.sz + (ndf_i64)min(max(qb, 0), nyi - 1) * p.sy + xb;
          float fa[W], fb[W];
#pragma unroll
          for (int i = 0; i < IF; i++) ndf_ecc3_vld<VB>(a0 + VB * i, fa + VB * i), ndf_ecc3_vld<VB>(b0 + VB * i, fb + VB * i);
#pragma unroll
          for (int j = 0; j < W; j++) {
            if (oa) lo = fminf(lo, fa[j]), hi = fmaxf(hi, fa[j]);
            if (ob) lo = fminf(lo, fb[j]), hi = fmaxf(hi, fb[j]);
          }
        } else if (sizeof(TIN) == 4 && vec && xa + W <= nxi && xb + W <= nxi) { // warp-uniform: both units on the fast loads
          const float *pa[F], *pb[F];
          bool ra[F], rb[F];
          ptrs(xa, ya, za, pa, ra);
          ptrs(xb, yb, zb, pb, rb);
          float4 a[F], b[F];
#pragma unroll
          for (int i = 0; i < F; i++) a[i] = *(const float4 *)pa[i], b[i] = *(const float4 *)pb[i];
#pragma unroll
          for (int i = 0; i < F; i++) {
            if (ra[i]) fold4(a[i]);
            if (rb[i]) fold4(b[i]);
          }
        } else {
#if NDF_LEAN
#pragma unroll 1
          for (int q = 0; q < 2; q++) slow(q ? tb : ta, q ? zb : za); // one copy of the rare path
#else
          slow(ta, za);
          slow(tb, zb);
#endif
        }
      }
    }
    // a NaN in the warp's voxels: min and max no longer matter (the call fails); the rows' owners
    // (lanes 0..30 in the image, the rare path's mapping) look for the least NaN index
    if (__any_sync(FULL, lo != lo)) lo = anyown ? __int_as_float(0x7fffffff) : INF, hi = -INF;
    ndf_ecc2_phase1_end(p, lo, hi, r_lo, r_hi, r_key, [&] {
      // rare: the least C-order index of a NaN among this lane's own voxels (per unit: a row's first)
      for (ndf_i64 v = act ? wi : V1; v < V1; v += tpi) {
        seg s;
        unit_at((int)v, s);
        if (lane >= NDF_S3R || !s.rowin) continue;
        for (int j = 0; j < W; j++)
          if (((s.inb >> j) & 1u)) {
            const float f = (float)s.rowp[(ndf_i64)s.zb * p.sz + (ndf_i64)j * p.sx];
            if (f != f) {
              atomicMax(&r_key, ~(ndf_u64)((ndf_i64)img * (p.nz * p.ny * p.nx) + ((ndf_i64)s.zb * p.ny + s.y) * p.nx + s.x + j));
              break;
            }
          }
      }
    });
    ndf_ecc2_stamp(p.prof, 1);
    if (split) return; // ndf_ecc_strip3: phase 1 only
    ndf_ecc2_grid_sync(p.gbar, p.fence);
  } else if (threadIdx.x == 0) r_key = 0ull; // ndf_ecc_strip3s after the split's phase 1 (as phase 1's end)
  ndf_ecc2_stamp(p.prof, 2);

  // ---- the first segment's first two planes, loaded now (their latency overlaps the set-up)
  raw RA, RB;
  unsigned sq = 0; // staged: the copy groups issued (the next plane's buffer sq % NSB)
  seg sm;
  int um = u0;
  // (staged: the first NSB - 1 planes' copies, the first plane from its buffer, the next plane's copies -- its
  // delivery after the set-up instead, or in the march, made ptxas spill 420-480 bytes instead of 64)
  auto first2 = [&] { // the first two planes of the segment that starts at um
    const bool later = um != u0;
    um += seg_at(um, sm);
    if (SK && stg) {
      if (later) __syncthreads(); // the segment before's last planes read by every warp
#pragma unroll
      for (int i = 0; i < NSB - 1; i++) s_issue(sm, sm.zb + i, sq);
      s_deliver(sm, sm.zb, RA, sq), s_issue(sm, sm.zb + NSB - 1, sq);
    } else if (sm.fast) load(ndf_ecc2_bool<true>(), sm, sm.zb, RA), load(ndf_ecc2_bool<true>(), sm, sm.zb + 1, RB);
    else load(ndf_ecc2_bool<false>(), sm, sm.zb, RA), load(ndf_ecc2_bool<false>(), sm, sm.zb + 1, RB);
  };
  if (um < u1) first2();
  for (int i = tid; i < (T + 1) * 32; i += 256) h3[i] = 0;
  if (!ndf_ecc2_setup(p, hblk, T, tsf, tpair, r_lo, r_hi, r_key, s_ga, s_gb, s_dl, s_dh, s_m, NDF_ECC_IB)) {
    if (SK) ndf_ecc3_cp_wait<0>(); // no copies in flight past the block's end
    return;
  }
  ndf_ecc2_stamp(p.prof, 3);

  // ---- the march: segment s's planes zb .. ze - 1 (RA, RB: its planes zb, zb + 1), no block barrier
  auto march = [&](auto vecc, auto stgc, const seg &s) {
    constexpr bool STG = decltype(stgc)::value;
    const int zb = s.zb, ze = s.ze;
    const ndf_ecc3_binner bins = ndf_ecc3_binner_make(T, s.rowin, h3, tsf, tpair, s_ga, s_gb, s_dl, s_dh);
    // lane 31 (the neighbour row only): every x_i = a_i - a_{i+1} + bias is >= 0, so every g is 0
    const int bias = lane == NDF_S3R ? 0x40000000 : 0;
    auto agg = [](unsigned a, unsigned b) { return CONS == 1 ? min(a, b) : max(a, b); };
    // sum_i c_i delta(a_i) with sign SG: n_i = -g_i; c_0 = g_0, c_i = g_i - g_{i-1}, c_W = -g_{W-1}
    auto add = [&](const unsigned (&a)[W + 1], auto sgc) {
      constexpr int SG = decltype(sgc)::value ? 1 : -1;
      int n[W];
#pragma unroll
      for (int i = 0; i < W; i++) n[i] = ((int)(a[i] - a[i + 1]) + bias) >> 31;
      ndf_ecc3_red(a[0], -SG * n[0]);
#pragma unroll
      for (int i = 1; i < W; i++) ndf_ecc3_red(a[i], SG * (n[i - 1] - n[i]));
      ndf_ecc3_red(a[W], SG * n[W - 1]);
    };
    // plane z's row (B) and its s1 (S) -> plane z + 1's (B2, S2), rw: plane z + 1's raw values,
    // then plane z + 2's.  Ordered for registers (ptxas wants ~158 for the march's arrays at 128:
    // the adds' values would take two registers in turn, each waiting for the previous shared add to
    // read it, a third of the march's stalls short scoreboard): B and S's own adds first, then B2,
    // then B's last use; plane z + 2's load once rw is binned and B dead; S2 last (<= 4 arrays live).
    auto step = [&](const unsigned (&B)[W + 1], const unsigned (&S)[W + 1], unsigned (&B2)[W + 1], unsigned (&S2)[W + 1],
                    raw &rw, int z) {
      add(B, ndf_ecc2_bool<true>());
      add(S, ndf_ecc2_bool<false>());
      if (STG) { // plane z + 1 from its buffer, then plane z + NSB's copies into the one plane z was read from
        s_deliver(s, z + 1, rw, sq);
        s_issue(s, z + NSB, sq);
      }
      bins(rw.v, B2, rw.pin);
      unsigned t[W + 1];
#pragma unroll
      for (int j = 0; j <= W; j++) t[j] = agg(B[j], B2[j]);
      add(t, ndf_ecc2_bool<false>());
      if (!STG && z + 2 <= ze) { // NDF_LEAN: one march for both loads, chosen here (warp-uniform)
        if (NDF_LEAN ? s.fast : decltype(vecc)::value) load(ndf_ecc2_bool<true>(), s, z + 2, rw);
        else load(ndf_ecc2_bool<false>(), s, z + 2, rw);
      }
#pragma unroll
      for (int j = 0; j <= W; j++) S2[j] = agg(B2[j], __shfl_down_sync(FULL, B2[j], 1));
#pragma unroll
      for (int j = 0; j <= W; j++) t[j] = agg(S[j], S2[j]);
      add(t, ndf_ecc2_bool<true>());
    };
    unsigned B0[W + 1], S0[W + 1], B1[W + 1], S1[W + 1];
    bins(RA.v, B0, RA.pin);
#pragma unroll
    for (int j = 0; j <= W; j++) S0[j] = agg(B0[j], __shfl_down_sync(FULL, B0[j], 1));
    for (int z = zb; z < ze; z += 2) {
      step(B0, S0, B1, S1, RB, z);
      if (z + 1 >= ze) break;
      step(B1, S1, B0, S0, RB, z + 1);
    }
  };
  if (u0 < u1)
    for (;;) { // segment sm (RA, RB loaded; staged: RA, the next planes' copies in flight), then the next one's first planes
      if (SK && stg) march(ndf_ecc2_bool<true>(), ndf_ecc2_bool<SK>(), sm);
#if NDF_LEAN
      else march(ndf_ecc2_bool<true>(), ndf_ecc2_bool<false>(), sm); // its loads choose by sm.fast
#else
      else if (sm.fast) march(ndf_ecc2_bool<true>(), ndf_ecc2_bool<false>(), sm);
      else march(ndf_ecc2_bool<false>(), ndf_ecc2_bool<false>(), sm);
#endif
      if (um >= u1) break;
      first2();
    }

  ndf_ecc2_wstamp(p.prof);

  if (RNG)
    ndf_ecc2_given_nan(p, rflag, r_key, [&] {
      for (int u = u0; u < u1;) { // the warp's segments; a lane's own row (lanes 0..30), C order
        seg s;
        u += seg_at(u, s);
        bool found = lane >= NDF_S3R || !s.rowin;
        for (int z = max(s.zb, 0); z < min(s.ze, nzi) && !found; z++)
          for (int j = 0; j < W && !found; j++)
            if ((s.inb >> j) & 1u) {
              const float f = (float)s.rowp[(ndf_i64)z * p.sz + (ndf_i64)j * p.sx];
              if (f != f) {
                atomicMax(&r_key, ~(ndf_u64)((ndf_i64)img * (p.nz * p.ny * p.nx) + ((ndf_i64)z * p.ny + s.y) * p.nx + s.x + j));
                found = true;
              }
            }
      }
    });

  // ---- the block's histogram (the sum of its 32 columns) to its copy of the image's, the ticket, the curve
  ndf_ecc2_end(p, img, bimg, T, s_m, s_last, [&](int k) { return ndf_ecc3_colsum(h3, k, lane); });
}

// The telescoped kernels' shell (shared memory as the kernel's; BODY: ndf_ecc3_body<W>, ndf_ecc2t_body):
// NAME for NS spatial axes at MINB blocks per SM, parameters PARAMS.  W = 16 columns per lane at 2 blocks per SM (128
// registers; the default) is ndf_ecc_strip3, 8 at 3 (80) ndf_ecc_strip3n.  ndf_ecc_strip2t at 3 (80 registers, no
// spills; at 4 it would have 64 registers and spill, 2-5% slower); the grids follow the occupancy query.
#define NDF_ECC_TELE_KERNEL(NAME, NS, MINB, PARAMS, BODY)                                                            \
  extern "C" __global__ void __launch_bounds__(256, MINB) NAME(const PARAMS p) {                                     \
    if (NSP != NS || sizeof(V) != 4) return; /* float comparisons only (the runtime never asks otherwise) */       \
    extern __shared__ int h3[];              /* (T + 1) rows of 32 lane columns (row T: outside, never read) */     \
    __shared__ float tsf[512];               /* -inf, the T sorted thresholds rounded down, +inf */                  \
    __shared__ float2 tpair[512];            /* tpair[k] = (tv[k - 1], tv[k]), k = 0..T */                           \
    __shared__ float s_ga, s_gb, s_dl, s_dh;                                                                         \
    __shared__ int s_m;                                                                                              \
    __shared__ float r_lo[8], r_hi[8];                                                                               \
    __shared__ unsigned long long r_key;                                                                             \
    __shared__ bool s_last;                                                                                          \
    BODY(p, h3, tsf, tpair, s_ga, s_gb, s_dl, s_dh, s_m, r_lo, r_hi, r_key, s_last);                                 \
  }
#if NDF_KERNEL(ndf_ecc_strip3)
NDF_ECC_TELE_KERNEL(ndf_ecc_strip3, 3, 2, ndf_ecc3_params, ndf_ecc3_body<16>)
#endif
#if NDF_KERNEL(ndf_ecc_strip3n)
NDF_ECC_TELE_KERNEL(ndf_ecc_strip3n, 3, 3, ndf_ecc3_params, ndf_ecc3_body<8>)
#endif
// the staged planes' form (bcol == 2) as its own kernel: its march's registers do not move the others'
#define NDF_ECC3S_BODY ndf_ecc3_body<16, true>
#if NDF_KERNEL(ndf_ecc_strip3s)
NDF_ECC_TELE_KERNEL(ndf_ecc_strip3s, 3, 2, ndf_ecc3_params, NDF_ECC3S_BODY)
#endif

// ---- the 2-D telescoped kernel (ndf_ecc_strip2t; 2-D calls with T <= 320 unless ecc.2d=strip2) ----
// ndf_ecc_strip3's telescoped cells (docs/adr/0009, "Telescoped cells") on ndf_ecc_strip2's tasks: per
// pixel two sequences along x, s0 = b(y) and s1 = agg(b(y), b(y + 1)), with the signs (+, -) for V
// and (-, +) for T (rows from -1: the pairs (y, y + 1) from y = -1; in 3-D the T-construction's two
// sign flips cancel; tools/ecc_telescope_check.py checks both), so two shared-memory adds of c in
// {-1, 0, 1} per pixel instead of the pack sums and ownership tests.
// - A warp task is strip2's: a strip of 128 columns (lane: 4 of them, float4 rows or element loads)
//   over a chunk of rows (from -1 for T), rows marched down with two rows in flight.  Along x the sum
//   runs over the strip: a lane's a_4 is lane + 1's a_0 (a shuffle), lane 31's the halo voxel x0 +
//   128 (the next strip's first, or outside), which also takes lane 31's -g; lane 0's g_{-1} is 0.
// - Outside voxels (+inf, ndf_ecc2_rows), the bins as shared-window addresses and the guesses as
//   ndf_ecc_strip3 (ndf_ecc3_binner; a tie of bins between two lanes' columns is broken by the column,
//   consistently).
__device__ __forceinline__ void ndf_ecc2t_body(const ndf_ecc2_params &p, int *h3, float *tsf, float2 *tpair, float &s_ga,
                                               float &s_gb, float &s_dl, float &s_dh, int &s_m, float *r_lo, float *r_hi,
                                               unsigned long long &r_key, bool &s_last) {
  const ndf_ecc2_at at = ndf_ecc2_start(p);
  const bool hblk = at.hblk, act = at.act;
  const int img = at.img, bimg = at.bimg;
  const int T = (int)p.T;
  const int tid = threadIdx.x, lane = tid & 31;
  const unsigned FULL = 0xffffffffu;
  const ndf_ecc2_task tk = ndf_ecc2_task_at(p, at, CONS); // T: rows from -1
  const int x0 = tk.x0, r0 = tk.r0, r1 = tk.r1;
  const TIN *in = tk.in;
  const ndf_ecc2_lane L = ndf_ecc2_lane_at(p, in, x0);
  // a given range (RNG): no phase 1, the barrier's two halves (ndf_ecc2_given_start, _nan), as strip3
  unsigned *const rflag = (unsigned *)(tpair + 511);
  if (RNG) {
    ndf_ecc2_given_start(p, rflag, r_key);
    ndf_ecc2_stamp(p.prof, 1);
  } else {
    ndf_ecc2_strip_phase1(p, in, L, img, act, max(r0, 0), r1, r_lo, r_hi, r_key);
    ndf_ecc2_stamp(p.prof, 1);
    ndf_ecc2_grid_sync(p.gbar, p.fence);
  }
  ndf_ecc2_stamp(p.prof, 2);

  // ---- the march's first rows r0 .. r0 + 2, loaded now (their latency overlaps the set-up)
  typedef ndf_ecc2_raw raw;
  ndf_ecc2_rows<ndf_ecc2_params> rows(p, in, L, r0, r1);
  raw R0, R1, R2;
  if (act) {
    if (L.vec) rows.load<true>(R0), rows.load<true>(R1), rows.load<true>(R2);
    else rows.load<false>(R0), rows.load<false>(R1), rows.load<false>(R2);
  }
  for (int i = tid; i < (T + 1) * 32; i += 256) h3[i] = 0;
  if (!ndf_ecc2_setup(p, hblk, T, tsf, tpair, r_lo, r_hi, r_key, s_ga, s_gb, s_dl, s_dh, s_m, NDF_ECC_IB)) return;
  ndf_ecc2_stamp(p.prof, 3);

  // ---- the march: the warp's strip over rows r0 .. r1 - 1, no block barrier
  auto march = [&](auto vecc) {
    constexpr bool VEC = decltype(vecc)::value;
    const ndf_ecc3_binner bins = ndf_ecc3_binner_make(T, true, h3, tsf, tpair, s_ga, s_gb, s_dl, s_dh);
    auto agg = [](unsigned a, unsigned b) { return CONS == 1 ? min(a, b) : max(a, b); };
    // sum_i c_i delta(a_i) over a row's sequence a with sign sg: n_i = -g_i, c_i = n_{i-1} - n_i
    // (n_{-1}: lane - 1's n_3; lane 0: 0); lane 31 also adds -g_3 = n_3 at the halo's bin a[4]
    auto add = [&](const unsigned(&a)[5], int sg) {
      unsigned a4 = __shfl_down_sync(FULL, a[0], 1);
      if (lane == 31) a4 = a[4];
      int n[4];
#pragma unroll
      for (int i = 0; i < 4; i++) n[i] = (int)(a[i] - (i < 3 ? a[i + 1] : a4)) >> 31;
      int np = __shfl_up_sync(FULL, n[3], 1);
      if (lane == 0) np = 0;
      ndf_ecc3_red(a[0], sg * (np - n[0]));
#pragma unroll
      for (int i = 1; i < 4; i++) ndf_ecc3_red(a[i], sg * (n[i - 1] - n[i]));
      if (lane == 31) ndf_ecc3_red(a[4], sg * n[3]);
    };
    constexpr int SG = CONS == 1 ? -1 : 1; // s0's sign (s1: -SG)
    // row y (bins Bc): the bins of row y + 1 (Bn) from rw, rw <- row y + 3, the two sequences' sums
    auto step = [&](const unsigned(&Bc)[5], unsigned(&Bn)[5], raw &rw) {
      bins(rw.v, Bn);
      if (NDF_LEAN ? L.vec : VEC) rows.template load<true>(rw); // NDF_LEAN: one march, its loads chosen here
      else rows.template load<false>(rw);
      unsigned S[5];
#pragma unroll
      for (int j = 0; j < 5; j++) S[j] = agg(Bc[j], Bn[j]);
      add(Bc, SG);
      add(S, -SG);
    };
    unsigned B0[5], B1[5];
    bins(R0.v, B0);
    for (int y = r0; y < r1; y += 2) { // R1, R2: rows y + 1, y + 2
      step(B0, B1, R1);
      if (y + 1 >= r1) break;
      step(B1, B0, R2);
    }
  };
  if (act) {
#if NDF_LEAN
    march(ndf_ecc2_bool<true>()); // its loads choose by L.vec
#else
    if (L.vec) march(ndf_ecc2_bool<true>());
    else march(ndf_ecc2_bool<false>());
#endif
  }
  if (RNG)
    ndf_ecc2_given_nan(p, rflag, r_key, [&] { // the lane's own pixels: rows max(r0, 0) .. r1 - 1, C order
      if (!act) return;
      for (int y = max(r0, 0); y < r1; y++)
        for (int j = 0; j < 4; j++)
          if ((L.inb >> j) & 1u) {
            const float f = (float)in[(ndf_i64)y * p.sz + (ndf_i64)(L.x + j) * p.sx];
            if (f != f) {
              atomicMax(&r_key, ~(ndf_u64)((ndf_i64)img * (p.nz * p.nx) + (ndf_i64)y * p.nx + L.x + j));
              return;
            }
          }
    });

  // ---- the block's histogram (the sum of its 32 columns) to its copy of the image's, the ticket, the curve
  ndf_ecc2_end(p, img, bimg, T, s_m, s_last, [&](int k) { return ndf_ecc3_colsum(h3, k, lane); });
}
#if NDF_KERNEL(ndf_ecc_strip2t)
NDF_ECC_TELE_KERNEL(ndf_ecc_strip2t, 2, 3, ndf_ecc2_params, ndf_ecc2t_body)
#endif
