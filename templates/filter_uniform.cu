// filter_uniform.cu -- one 1-D uniform (running mean) pass along one axis, as
// scipy's NI_UniformFilter1D computes it: the sum of the first window, then
// for every next output the entering tap minus the leaving one added to the
// running sum, each output the running sum divided by K, all in double with
// no fused operations, so it equals the CPU backend bit for bit.  Output x's
// window reads the coordinates x - pre .. x - pre + K - 1 of the line
// extended by the boundary mode (cval in constant mode).
//
//   ndf_filter_uniform_exact  a block of T = blockDim.x threads stages C whole
//       lines (C = p.C, a power of 2 dividing T) in shared memory as TI, with
//       coalesced loads (LAST 0: consecutive threads on consecutive lines;
//       LAST 1: on consecutive values of one line), and checks each line: when
//       every value of its extended line (samples, and cval in constant mode)
//       is a multiple of 2^q below 2^M in magnitude with
//       M - q + 1 + L <= 53 and M + L <= 1022, L = ceil(log2(K + 1)), every
//       partial sum and every difference the running sum forms is exactly
//       representable, so the running sum at output x is the exact window sum
//       S_x whatever position it started at, and the output fl(S_x / K) is the
//       sequential walk's bit for bit (docs/adr/0029-uniform-exact-parallel.md).
//       Such a line is cut into segments of G outputs, each walked by its own
//       thread from a direct sum of its first window; a line that fails the
//       check (NaN, Inf, a wide dynamic range, most float64 data) is walked
//       whole by one thread, the sequential arithmetic.  LAST 0 stores each
//       output directly (consecutive threads on consecutive lines); LAST 1
//       writes the outputs to shared memory and stores them line by line.
//       Integer inputs of at most 32 bits always meet the condition (q >= 0,
//       M <= 32) and are not scanned; only cval is checked.
//   ndf_filter_uniform_stream  the same segments read from global memory
//       (no staging, no limit on the line's length): each thread walks its
//       segment optimistically, storing its outputs and scanning the samples
//       it reads; after a barrier, a line that fails the check is walked
//       whole by one thread, which overwrites its outputs.  Consecutive
//       threads on consecutive lines: for axes other than the last.
//   ndf_filter_uniform_tile  a block of C = blockDim.x threads owns C lines
//       and walks them together in chunks of at most S outputs.  A chunk
//       starting at output x0 stages, as doubles in shared memory (one column
//       per line), the rows r = 0 .. cnt + K - 1 holding the coordinates
//       x0 - 1 - pre + r, with coalesced loads: for an axis other than the
//       last (LAST 0) consecutive threads take consecutive lines, for the
//       last axis (LAST 1) consecutive values of one line.  Output x0 + s
//       leaves row s and enters row s + K; thread t advances the running sum
//       of column t and writes output s over row s (read for the last time);
//       the block stores the chunk with coalesced stores, and rows
//       cnt .. cnt + K - 1 become the next chunk's rows 0 .. K - 1 (only rows
//       K .. are loaded again).  Output 0 is the sum of rows 1 .. K.
//   ndf_filter_uniform       one thread per line reading global memory
//       directly (consecutive threads on consecutive lines): float64 inputs by
//       default, and lines too long for the exact kernel's shared memory.
#include "ndf_common.cuh"
#include "filter_common.cuh"

typedef NDF_SLOT(TI) TI;
typedef NDF_SLOT(TO) TO;
#define CVT NDF_SLOT(CVT)
#define MODE NDF_SLOT(MODE)
#define LAST NDF_SLOT(LAST)
#define U 8 // steps whose loads are in flight together

NDF_PARAMS(ndf_funi_params)

#if NDF_KERNEL(ndf_filter_uniform)
extern "C" __global__ void __launch_bounds__(128) ndf_filter_uniform(const ndf_funi_params p) {
  for (ndf_i64 line = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x; line < p.nlines;
       line += (ndf_i64)gridDim.x * blockDim.x) {
    ndf_i64 ib, ob;
    ndf_line_offsets(p, line, ib, ob);
    const TI *in = p.in + ib;
#define VAL(x) (ndf_map((x), p.n, MODE) < 0 ? p.cval : (double)__ldg(in + ndf_map((x), p.n, MODE) * p.istr))
    const double K = (double)p.K;
    double tmp = 0.0;
    for (ndf_i64 l = 0; l < p.K; l++) tmp = __dadd_rn(tmp, VAL(l - p.pre));
    p.out[ob] = ndf_filter_cvt<CVT, TO>(__ddiv_rn(tmp, K));
    // U steps at a time: their 2 U loads are issued before the running sum
    // (a chain through tmp) consumes them.
    for (ndf_i64 l0 = 1; l0 < p.n; l0 += U) {
      double enter[U], leave[U];
#pragma unroll
      for (int q = 0; q < U; q++) {
        const ndf_i64 l = l0 + q;
        if (l < p.n) {
          enter[q] = VAL(l - 1 + p.K - p.pre);
          leave[q] = VAL(l - 1 - p.pre);
        }
      }
#pragma unroll
      for (int q = 0; q < U; q++) {
        const ndf_i64 l = l0 + q;
        if (l < p.n) {
          tmp = __dadd_rn(tmp, __dsub_rn(enter[q], leave[q]));
          p.out[ob + l * p.ostr] = ndf_filter_cvt<CVT, TO>(__ddiv_rn(tmp, K));
        }
      }
    }
#undef VAL
  }
}
#endif

#if NDF_KERNEL(ndf_filter_uniform_tile)
#define NB 16 // staging loads in flight per thread
extern "C" __global__ void __launch_bounds__(32) ndf_filter_uniform_tile(const ndf_funi_params p) {
  extern __shared__ double ndf_funi_smem[];
  const int C = blockDim.x, t = threadIdx.x, P = C + 1; // P: padded row
  ndf_i64 *ibase = (ndf_i64 *)ndf_funi_smem, *obase = ibase + C;
  double *e = ndf_funi_smem + 2 * C;
  const int K = (int)p.K;
  const double Kd = (double)p.K;
  const ndf_i64 nlt = (p.nlines + C - 1) / C;
  for (ndf_i64 lt = blockIdx.x; lt < nlt; lt += gridDim.x) {
    const ndf_i64 l0 = lt * C;
    const int ncols = ndf_line_cols(p, l0, C);
    ndf_line_bases(p, l0, t, ncols, ibase, obase);
    __syncthreads();
    double tmp = 0.0;
    double *col = e + t;
    for (ndf_i64 x0 = 0; x0 < p.n; x0 += p.S) {
      const int cnt = (int)(p.n - x0 < p.S ? p.n - x0 : p.S);
      const int r0 = x0 == 0 ? 0 : K, nr = cnt + K - r0; // rows r0 .. cnt + K - 1 are loaded
      const ndf_i64 c0 = x0 - 1 - p.pre + r0;              // the coordinate of row r0
      // 1. Stage, NB loads in flight per thread before their stores.
      NDF_LINE_STAGE(p, ibase, e, P, C, t, ncols, r0, nr, c0);
      __syncthreads();
      // 2. The running sum of column t.
      if (t < ncols) {
        int s = 0;
        if (x0 == 0) {
          for (int k = 1; k <= K; k++) tmp = __dadd_rn(tmp, col[k * P]);
          col[0] = __ddiv_rn(tmp, Kd);
          s = 1;
        }
        // U steps at a time: their loads are issued before the stores of the
        // outputs (which go to rows the later steps do not read).
        for (; s + U <= cnt; s += U) {
          double enter[U], leave[U];
#pragma unroll
          for (int q = 0; q < U; q++) {
            enter[q] = col[(s + q + K) * P];
            leave[q] = col[(s + q) * P];
          }
#pragma unroll
          for (int q = 0; q < U; q++) {
            tmp = __dadd_rn(tmp, __dsub_rn(enter[q], leave[q]));
            enter[q] = __ddiv_rn(tmp, Kd);
          }
#pragma unroll
          for (int q = 0; q < U; q++) col[(s + q) * P] = enter[q];
        }
        for (; s < cnt; s++) {
          tmp = __dadd_rn(tmp, __dsub_rn(col[(s + K) * P], col[s * P]));
          col[s * P] = __ddiv_rn(tmp, Kd);
        }
      }
      __syncthreads();
      // 3. Store the chunk's outputs.
      for (int i = t; i < cnt * ncols; i += C) {
#if LAST
        const int c = i / cnt, s = i - c * cnt;
#else
        const int s = i / ncols, c = i - s * ncols;
#endif
        p.out[obase[c] + (x0 + s) * p.ostr] = ndf_filter_cvt<CVT, TO>(e[s * P + c]);
      }
      __syncthreads();
      // 4. Rows cnt .. cnt + K - 1 become rows 0 .. K - 1 (forward: a source row is read before it is written).
      if (t < ncols && x0 + cnt < p.n)
        for (int k = 0; k < K; k++) col[k * P] = col[(cnt + k) * P];
      __syncthreads();
    }
  }
}
#endif

#if NDF_KERNEL(ndf_filter_uniform_exact) || NDF_KERNEL(ndf_filter_uniform_stream)
// The exponents of a nonzero finite double v = k 2^q (k odd) with |v| < 2^M,
// folded into qmin and mmax; Inf and NaN give M = 4096, which fails every
// check (cval).
__device__ __forceinline__ void ndf_funi_exps(double v, int &qmin, int &mmax) {
  const unsigned long long b = (unsigned long long)__double_as_longlong(v) & 0x7fffffffffffffffull;
  if (!b) return;
  const int e = (int)(b >> 52);
  const unsigned long long m = b & 0xfffffffffffffull;
  int q, M;
  if (e == 2047) {
    q = 0;
    M = 4096;
  } else if (e == 0) {
    q = -1075 + __ffsll((long long)m);
    M = -1074 + 64 - __clzll((long long)m);
  } else {
    q = e - 1076 + __ffsll((long long)(m | 0x10000000000000ull));
    M = e - 1022;
  }
  qmin = min(qmin, q);
  mmax = max(mmax, M);
}
// A sample's raw keys, a few integer operations: kmin, the least over nonzero
// values of the exponent field plus the 1-based position of the lowest set
// bit of the significand with its leading bit (the lowest set bit's exponent
// plus KB below: one less for subnormals, which only makes the check
// stricter), and emax, the largest exponent field (2^(emax - EB) bounds the
// magnitudes; EB for subnormals too).  A float from its own bits (exact),
// other types from the double the CPU reads them as.
#define FL (sizeof(TI) == 4 && (TI)0.5 != (TI)0)
#define KB (FL ? 151 : 1076)
#define EB (FL ? 126 : 1022)
#define EINF (FL ? 255 : 2047)
__device__ __forceinline__ void ndf_funi_raw(float v, int &kmin, int &emax) {
  const unsigned b = __float_as_uint(v) & 0x7fffffffu;
  const int e = (int)(b >> 23), k = e + __ffs((int)((b & 0x7fffffu) | 0x800000u));
  kmin = min(kmin, b ? k : 1 << 20);
  emax = max(emax, e);
}
__device__ __forceinline__ void ndf_funi_raw(double v, int &kmin, int &emax) {
  const unsigned long long b = (unsigned long long)__double_as_longlong(v) & 0x7fffffffffffffffull;
  const int e = (int)(b >> 52), k = e + __ffsll((long long)((b & 0xfffffffffffffull) | 0x10000000000000ull));
  kmin = min(kmin, b ? k : 1 << 20);
  emax = max(emax, e);
}
template <typename V> __device__ __forceinline__ void ndf_funi_raw_of(V v, int &kmin, int &emax) {
  ndf_funi_raw((double)v, kmin, emax);
}
template <> __device__ __forceinline__ void ndf_funi_raw_of<float>(float v, int &kmin, int &emax) {
  ndf_funi_raw(v, kmin, emax);
}
// Samples are scanned unless TI is an integer type of at most 32 bits.
#define SCAN (sizeof(TI) == 8 || (TI)0.5 != (TI)0)
// The exponents every line of a call shares: cval's in constant mode, and a
// bound over every integer sample when the samples are not scanned.
__device__ __forceinline__ void ndf_funi_shared_exps(const ndf_funi_params &p, int &qc, int &mc) {
  qc = 1 << 20;
  mc = -(1 << 20);
  if (MODE == NDF_CONSTANT) ndf_funi_exps(p.cval, qc, mc);
  if (!SCAN) {
    qc = min(qc, 0);
    mc = max(mc, 32);
  }
}
// Whether a line of raw keys kmin, emax, with cval's exponents qc, mc (or
// the bound over unscanned integers) and L = ceil(log2(K + 1)), has an exact
// running sum.
__device__ __forceinline__ bool ndf_funi_ok(int kmin, int emax, int qc, int mc, int L) {
  if (!SCAN) return mc - qc <= 52 - L && mc <= 1022 - L;
  const int q = min(kmin - KB, qc), M = max(emax - EB, mc);
  return emax != EINF && M - q <= 52 - L && M <= 1022 - L;
}
// The tile of lines from l0 (ndf_line_bases) with every line's keys reset,
// then the block's barrier; returns ncols.
__device__ __forceinline__ int ndf_funi_tile(const ndf_funi_params &p, ndf_i64 l0, int C, int t, ndf_i64 *ibase,
                                             ndf_i64 *obase, int *kmin, int *emax) {
  const int ncols = ndf_line_cols(p, l0, C);
  ndf_line_bases(p, l0, t, ncols, ibase, obase, [&](int c) {
    kmin[c] = 1 << 20;
    emax[c] = 0;
  });
  __syncthreads();
  return ncols;
}
// A thread's keys tk, te of line c folded into the line's (SCAN).
__device__ __forceinline__ void ndf_funi_fold(int *kmin, int *emax, int c, int tk, int te) {
  if (SCAN) {
    atomicMin(kmin + c, tk);
    atomicMax(emax + c, te);
  }
}
#endif

#if NDF_KERNEL(ndf_filter_uniform_exact)
#define NB 8 // staging loads in flight per thread
extern "C" __global__ void __launch_bounds__(256) ndf_filter_uniform_exact(const ndf_funi_params p) {
  extern __shared__ double ndf_funi_smem[];
  const int T = blockDim.x, t = threadIdx.x, C = p.C, lc = __ffs(C) - 1, n = (int)p.n, K = (int)p.K, pre = (int)p.pre;
  const int P = n | 1;                              // pitch of a staged line (odd: lines on other banks)
  ndf_i64 *ibase = (ndf_i64 *)ndf_funi_smem, *obase = ibase + C;
  int *kmin = (int *)(obase + C), *emax = kmin + C; // per line (SCAN)
  TI *sin = (TI *)(emax + C);
  TO *sout = (TO *)(ndf_funi_smem + 3 * C + ((ndf_i64)C * P * sizeof(TI) + 7) / 8); // LAST 1
  const double Kd = (double)p.K;
  const int L = 64 - __clzll(p.K); // ceil(log2(K + 1))
  int qc, mc;
  ndf_funi_shared_exps(p, qc, mc);
  // Segments: G outputs, nseg a line, C * nseg about T.
  const int G = max(1, (int)(((ndf_i64)n * C + T - 1) / T)), nseg = (n + G - 1) / G;
#if LAST
  // Thread t's first value, t = ct n + xt, and the step T = dc n + dx.
  const int ct = t / n, xt = t - ct * n, dc = T / n, dx = T - dc * n;
#endif
  const ndf_i64 ntiles = (p.nlines + C - 1) / C;
  for (ndf_i64 lt = blockIdx.x; lt < ntiles; lt += gridDim.x) {
    const ndf_i64 l0 = lt * C;
    const int ncols = (int)(p.nlines - l0 < C ? p.nlines - l0 : C);
    if (t < ncols) {
      ndf_i64 ib, ob;
      ndf_line_offsets(p, l0 + t, ib, ob);
      ibase[t] = ib;
      obase[t] = ob;
      kmin[t] = 1 << 20;
      emax[t] = 0;
    }
    __syncthreads();
    // 1. Stage the lines, NB loads in flight per thread before their stores.
    //    LAST 0: thread t always takes line t % C and scans its values here.
    int tk = 1 << 20, te = 0;
#if LAST
    const int nv = ncols * n;
#else
    const int nv = C * n;
#endif
#if LAST
    // Value i = c n + x, stepped by T without dividing: (c, x) += (dc, dx).
#define STEP(c, x)                                                                                                   \
  do {                                                                                                               \
    c += dc;                                                                                                         \
    x += dx;                                                                                                         \
    if (x >= n) {                                                                                                    \
      x -= n;                                                                                                        \
      c++;                                                                                                           \
    }                                                                                                                \
  } while (0)
    for (int i0 = t, ci = ct, xi = xt; i0 < nv; i0 += NB * T) {
      TI v[NB];
      int c = ci, x = xi;
#pragma unroll
      for (int u = 0; u < NB; u++) {
        if (i0 + u * T < nv) v[u] = __ldg(p.in + ibase[c] + (ndf_i64)x * p.istr);
        STEP(c, x);
      }
      c = ci;
      x = xi;
#pragma unroll
      for (int u = 0; u < NB; u++) {
        if (i0 + u * T < nv) sin[c * P + x] = v[u];
        STEP(c, x);
      }
      ci = c;
      xi = x;
    }
#else
    for (int i0 = t; i0 < nv; i0 += NB * T) {
      TI v[NB];
#pragma unroll
      for (int u = 0; u < NB; u++) {
        const int i = i0 + u * T, c = i & (C - 1), x = i >> lc;
        if (i < nv && c < ncols) v[u] = __ldg(p.in + ibase[c] + (ndf_i64)x * p.istr);
      }
#pragma unroll
      for (int u = 0; u < NB; u++) {
        const int i = i0 + u * T, c = i & (C - 1), x = i >> lc;
        if (i < nv && c < ncols) {
          sin[c * P + x] = v[u];
          if (SCAN) ndf_funi_raw_of<TI>(v[u], tk, te);
        }
      }
    }
#endif
#if LAST
    if (SCAN) {
      __syncthreads();
      // The check's scan, thread t over line t % C.
      const int c = t & (C - 1);
      if (c < ncols)
        for (int x = t >> lc; x < n; x += T >> lc) ndf_funi_raw_of<TI>(sin[c * P + x], tk, te);
    }
#endif
    if (SCAN && (t & (C - 1)) < ncols) {
      atomicMin(kmin + (t & (C - 1)), tk);
      atomicMax(emax + (t & (C - 1)), te);
    }
    __syncthreads();
    // 2. The outputs: segment seg of line c (consecutive threads on
    //    consecutive lines); a line that fails the check as one segment.
    for (int u = t; u < C * nseg; u += T) {
      const int c = u & (C - 1), seg = u >> lc;
      if (c >= ncols) continue;
      int x0 = seg * G, cnt = min(G, n - x0);
      if (!ndf_funi_ok(kmin[c], emax[c], qc, mc, L)) {
        if (seg) continue;
        cnt = n;
      }
      const TI *line = sin + c * P;
#if LAST
      TO *const o = sout + c * P;
#define PUT(x, v) o[x] = ndf_filter_cvt<CVT, TO>(v)
#else
      TO *const o = p.out + obase[c];
#define PUT(x, v) o[(ndf_i64)(x) * p.ostr] = ndf_filter_cvt<CVT, TO>(v)
#endif
      double tmp = 0.0;
      const int a0 = x0 - pre; // the first coordinate read
      if (a0 >= 0 && a0 + cnt + K - 2 < n) {
        // Inside the line: w[s] holds coordinate a0 + s.
        const TI *w = line + a0;
        for (int k = 0; k < K; k++) tmp = __dadd_rn(tmp, (double)w[k]);
        PUT(x0, __ddiv_rn(tmp, Kd));
#pragma unroll 4
        for (int s = 1; s < cnt; s++) {
          tmp = __dadd_rn(tmp, __dsub_rn((double)w[s - 1 + K], (double)w[s - 1]));
          PUT(x0 + s, __ddiv_rn(tmp, Kd));
        }
      } else {
#define VAL(i) (ndf_map((i), n, MODE) < 0 ? p.cval : (double)line[ndf_map((i), n, MODE)])
        for (int k = 0; k < K; k++) tmp = __dadd_rn(tmp, VAL(a0 + k));
        PUT(x0, __ddiv_rn(tmp, Kd));
        for (int s = 1; s < cnt; s++) {
          tmp = __dadd_rn(tmp, __dsub_rn(VAL(a0 + s - 1 + K), VAL(a0 + s - 1)));
          PUT(x0 + s, __ddiv_rn(tmp, Kd));
        }
#undef VAL
      }
#undef PUT
    }
    __syncthreads();
#if LAST
    // 3. Store the outputs line by line.
    for (int i = t, c = ct, x = xt; i < ncols * n; i += T) {
      p.out[obase[c] + (ndf_i64)x * p.ostr] = sout[c * P + x];
      STEP(c, x);
    }
    __syncthreads();
#undef STEP
#endif
  }
}
#undef NB
#endif

#if NDF_KERNEL(ndf_filter_uniform_stream)
// Outputs x0 .. x0 + cnt - 1 of the line at in (stride istr) to o (stride
// ostr), a running sum from a direct sum of the first window; with KEY the
// raw keys of every sample read as an entering value (or in the first
// window) fold into kmin, emax.
template <bool KEY>
__device__ __forceinline__ void ndf_funi_walk(const ndf_funi_params &p, const TI *in, TO *o, int x0, int cnt,
                                              int &kmin, int &emax) {
  const int n = (int)p.n, K = (int)p.K, a0 = x0 - (int)p.pre; // a0: the first coordinate read
  const ndf_i64 is = p.istr, os = p.ostr;
  const double Kd = (double)p.K;
  double tmp = 0.0;
  if (a0 >= 0 && a0 + cnt + K - 2 < n) { // inside the line
    for (int k = 0; k < K; k++) {
      const TI v = __ldg(in + (ndf_i64)(a0 + k) * is);
      if (KEY) ndf_funi_raw_of<TI>(v, kmin, emax);
      tmp = __dadd_rn(tmp, (double)v);
    }
    o[(ndf_i64)x0 * os] = ndf_filter_cvt<CVT, TO>(__ddiv_rn(tmp, Kd));
    for (int s0 = 1; s0 < cnt; s0 += U) {
      TI en[U], le[U];
#pragma unroll
      for (int q = 0; q < U; q++)
        if (s0 + q < cnt) {
          en[q] = __ldg(in + (ndf_i64)(a0 + s0 + q - 1 + K) * is);
          le[q] = __ldg(in + (ndf_i64)(a0 + s0 + q - 1) * is);
        }
#pragma unroll
      for (int q = 0; q < U; q++)
        if (s0 + q < cnt) {
          if (KEY) ndf_funi_raw_of<TI>(en[q], kmin, emax);
          tmp = __dadd_rn(tmp, __dsub_rn((double)en[q], (double)le[q]));
          o[(ndf_i64)(x0 + s0 + q) * os] = ndf_filter_cvt<CVT, TO>(__ddiv_rn(tmp, Kd));
        }
    }
    return;
  }
  // Near an end: coordinates through the boundary mode.
  for (int k = 0; k < K; k++) {
    const ndf_i64 m = ndf_map(a0 + k, n, MODE);
    double v = p.cval;
    if (m >= 0) {
      const TI t = __ldg(in + m * is);
      if (KEY) ndf_funi_raw_of<TI>(t, kmin, emax);
      v = (double)t;
    }
    tmp = __dadd_rn(tmp, v);
  }
  o[(ndf_i64)x0 * os] = ndf_filter_cvt<CVT, TO>(__ddiv_rn(tmp, Kd));
  for (int s = 1; s < cnt; s++) {
    const ndf_i64 me = ndf_map(a0 + s - 1 + K, n, MODE), ml = ndf_map(a0 + s - 1, n, MODE);
    double en = p.cval, le = p.cval;
    if (me >= 0) {
      const TI t = __ldg(in + me * is);
      if (KEY) ndf_funi_raw_of<TI>(t, kmin, emax);
      en = (double)t;
    }
    if (ml >= 0) le = (double)__ldg(in + ml * is);
    tmp = __dadd_rn(tmp, __dsub_rn(en, le));
    o[(ndf_i64)(x0 + s) * os] = ndf_filter_cvt<CVT, TO>(__ddiv_rn(tmp, Kd));
  }
}

// ndf_filter_uniform_stream: the exact kernel's segments read from global
// memory, no staging.  Block of T threads, C lines (C = p.C, a power of 2,
// C * nseg <= T): thread t walks segment t / C of line t % C, consecutive
// threads on consecutive lines (coalesced along an axis other than the
// last), optimistically, storing its outputs and folding the keys of the
// samples it reads; after the block's barrier a line that fails the check is
// walked again whole by one thread, which overwrites its outputs.
extern "C" __global__ void __launch_bounds__(256) ndf_filter_uniform_stream(const ndf_funi_params p) {
  __shared__ ndf_i64 ibase[256], obase[256];
  __shared__ int kmin[256], emax[256];
  const int T = blockDim.x, t = threadIdx.x, C = p.C, lc = __ffs(C) - 1, n = (int)p.n;
  const int L = 64 - __clzll(p.K);
  int qc, mc;
  ndf_funi_shared_exps(p, qc, mc);
  const int G = max(1, (int)(((ndf_i64)n * C + T - 1) / T)), nseg = (n + G - 1) / G;
  const int c = t & (C - 1), seg = t >> lc;
  const ndf_i64 ntiles = (p.nlines + C - 1) / C;
  for (ndf_i64 lt = blockIdx.x; lt < ntiles; lt += gridDim.x) {
    const int ncols = ndf_funi_tile(p, lt * C, C, t, ibase, obase, kmin, emax);
    int tk = 1 << 20, te = 0;
    if (c < ncols && seg < nseg) {
      const int x0 = seg * G;
      ndf_funi_walk<true>(p, p.in + ibase[c], p.out + obase[c], x0, min(G, n - x0), tk, te);
      ndf_funi_fold(kmin, emax, c, tk, te);
    }
    __syncthreads();
    if (c < ncols && seg == 0 && !ndf_funi_ok(kmin[c], emax[c], qc, mc, L))
      ndf_funi_walk<false>(p, p.in + ibase[c], p.out + obase[c], 0, n, tk, te);
    __syncthreads();
  }
}
#endif

#undef SCAN
#undef FL
#undef KB
#undef EB
#undef EINF
