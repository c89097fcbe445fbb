/*
 * rank.c -- median, rank and percentile filters with scipy.ndimage's
 * semantics (_filters.py:_rank_filter): the window is the footprint's true
 * taps at the minimum filter's offsets (no reflection), out-of-image taps
 * follow the mode (cval converted to the dtype first), and the output is the
 * element of the given rank of the sorted window.  NaN follows the context's
 * documented policy (ndforge.h), where scipy is undefined.
 *
 * The CPU backend gathers the window and selects the rank; it is the oracle
 * of the CUDA backend (rank_cuda.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "selnets.generated.h"

void ndf_rank_options_init(ndf_rank_options *opt) {
  if (!opt) return;
  memset(opt, 0, sizeof *opt);
  opt->mode = NDF_MODE_REFLECT;
  opt->nan_policy = NDF_RANK_NAN_PROPAGATE;
}

typedef enum { R_MEDIAN, R_RANK, R_PERCENTILE } rank_kind;

/* The generated selection network for rank k of n values, or NULL. */
const ndf__selnet *ndf__selnet_find(int64_t n, int64_t k) {
  int lo = 0, hi = ndf__nselnets - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    const ndf__selnet *e = &ndf__selnets[mid];
    if (e->n == n && e->k == k) return e;
    if (e->n < n || (e->n == n && e->k < k)) lo = mid + 1;
    else hi = mid - 1;
  }
  return NULL;
}

/* The rank to select for a window of m values (m = n without NaN omission). */
int64_t ndf__rank_for(int kind, int64_t rank, double p, int64_t m) {
  if (kind == R_MEDIAN) return m / 2;
  if (kind == R_PERCENTILE) return p == 100.0 ? m - 1 : (int64_t)((double)m * p / 100.0);
  return rank;
}

/* Selects the k-th smallest of v[0..m) in place (Hoare's quickselect with a
 * median-of-three pivot); v must hold no NaN. */
#define DEFINE_SELECT(T, SUF)                                                 \
  static T select_##SUF(T *v, int64_t m, int64_t k) {                         \
    int64_t lo = 0, hi = m - 1;                                               \
    while (hi > lo) {                                                         \
      int64_t mid = lo + (hi - lo) / 2;                                       \
      T a = v[lo], b = v[mid], c = v[hi];                                     \
      T piv = (a < b) ? ((b < c) ? b : (a < c ? c : a)) : ((a < c) ? a : (b < c ? c : b)); \
      int64_t i = lo, j = hi;                                                 \
      while (i <= j) {                                                        \
        while (v[i] < piv) i++;                                               \
        while (piv < v[j]) j--;                                               \
        if (i <= j) {                                                         \
          T t = v[i]; v[i] = v[j]; v[j] = t;                                  \
          i++; j--;                                                           \
        }                                                                     \
      }                                                                       \
      if (k <= j) hi = j;                                                     \
      else if (k >= i) lo = i;                                                \
      else return v[k];                                                       \
    }                                                                         \
    return v[k];                                                              \
  }

#define NDF_RANK_TYPES(X) \
  X(uint8_t, u8, 0) X(int8_t, i8, 0) X(uint16_t, u16, 0) X(int16_t, i16, 0) \
  X(uint32_t, u32, 0) X(int32_t, i32, 0) X(float, f32, 1) X(double, f64, 1)

#define DEFINE_NET(T, SUF)                                                    \
  static T run_net_##SUF(T *v, const ndf__selnet *net) {                      \
    const uint8_t *st = ndf__selnet_steps + net->offset;                      \
    for (int s = 0; s < net->nsteps; s++, st += 3) {                          \
      const T a = v[st[0]], b = v[st[1]];                                     \
      const T lo = b < a ? b : a, hi = b < a ? a : b;                         \
      if (st[2] != 2) v[st[0]] = lo;                                          \
      if (st[2] != 1) v[st[1]] = hi;                                          \
    }                                                                         \
    return v[net->out];                                                       \
  }

#define DEFINE_RANK(T, SUF, IS_FLOAT)                                                                   \
  DEFINE_SELECT(T, SUF)                                                                                 \
  DEFINE_NET(T, SUF)                                                                                    \
  static int rank_cpu_##SUF(const ndf_ctx *ctx, const ndf_array *in, ndf_array *out, const ndf__grey_geom *g, \
                            const int32_t *taps, int64_t n, rank_kind kind, int64_t rank, double p,     \
                            ndf_rank_nan_policy policy, int use_net) {                                  \
    const int ndim = in->ndim, nsp = g->nsp, nb = ndim - nsp, L = ndim - 1;                             \
    const T *src = in->data;                                                                            \
    T *dst = out->data;                                                                                 \
    const T cv = (T)g->cval;                                                                            \
    int64_t *loff = malloc((size_t)n * sizeof *loff);                                                   \
    if (!loff) return -1;                                                                               \
    int32_t rlo[NDF_MAX_SPATIAL], rhi[NDF_MAX_SPATIAL]; \
    ndf__tap_table(taps, n, nsp, in->strides + nb, loff, rlo, rhi); \
    const int64_t nx = in->shape[L];                                                                    \
    int64_t nrows = 1;                                                                                  \
    for (int d = 0; d < L; d++) nrows *= in->shape[d];                                                  \
    const int64_t kfull = ndf__rank_for(kind, rank, p, n);                                                   \
    const ndf__selnet *netfull = use_net ? ndf__selnet_find(n, kfull) : NULL;                           \
    const int nth = ndf__cpu_threads(ctx);                                                              \
    void **bufs = ndf__thread_buffers(nth, (size_t)n * sizeof(T));                                      \
    if (!bufs) { free(loff); return -1; }                                                               \
    _Pragma("omp parallel num_threads(nth)")                                                            \
    {                                                                                                   \
      T *win = bufs[ndf__thread_id()];                                                                  \
      _Pragma("omp for schedule(dynamic, 8)")                                                           \
      for (int64_t row = 0; row < nrows; row++) {                                                       \
        int64_t c[NDF_MAX_NDIM], ib, ob, ispat; \
        const int inside = ndf__row_decode(row, in, out, nb, rlo, rhi, c, &ib, &ispat, &ob); \
        const T *img = src + ib;                                                                        \
        for (int64_t x = 0; x < nx; x++) {                                                              \
          const int fast = inside && x + rlo[nsp - 1] >= 0 && x + rhi[nsp - 1] < nx;                    \
          const T *base = img + ispat + x * in->strides[L];                                             \
          int64_t m = 0;                                                                                \
          int nan = 0;                                                                                  \
          for (int64_t k = 0; k < n; k++) {                                                             \
            T v;                                                                                        \
            if (fast) {                                                                                 \
              v = base[loff[k]];                                                                        \
            } else {                                                                                    \
              int64_t off;                                                                \
              v = ndf__tap_border_offset(taps + k * nsp, c, x, in, nb, g->mode, &off) ? img[off] : cv; \
            }                                                                                           \
            if (IS_FLOAT && v != v) { nan = 1; continue; }                                              \
            win[m++] = v;                                                                               \
          }                                                                                             \
          T res;                                                                                        \
          if (IS_FLOAT && nan && policy == NDF_RANK_NAN_PROPAGATE) {                                    \
            res = (T)(IS_FLOAT ? NAN : 0);                                                              \
          } else {                                                                                      \
            int64_t k = m == n ? kfull : (kind == R_RANK ? rank : ndf__rank_for(kind, rank, p, m));          \
            const ndf__selnet *net = m == n ? netfull : (use_net && k < m ? ndf__selnet_find(m, k) : NULL);  \
            res = (m == 0 || k >= m) ? (T)(IS_FLOAT ? NAN : 0)                                          \
                  : net ? run_net_##SUF(win, net) : select_##SUF(win, m, k);                            \
          }                                                                                             \
          dst[ob + x * out->strides[L]] = res;                                                          \
        }                                                                                               \
      }                                                                                                 \
    }                                                                                                   \
    ndf__thread_buffers_free(bufs, nth);                                                                \
    free(loff);                                                                                         \
    return 0;                                                                                           \
  }
NDF_RANK_TYPES(DEFINE_RANK)

/* A validated rank-filter call: its geometry, window taps, and what it selects. */
typedef struct rank_call {
  ndf__grey_geom g;
  int32_t *taps;    /* n * nsp offsets (g.taps, or boxtaps for a box) */
  int32_t *boxtaps; /* owned */
  int64_t n;
  ndf__rank_sel sel;
} rank_call;

static void rank_call_free(rank_call *c) {
  free(c->boxtaps);
  ndf__grey_geom_free(&c->g);
}

/* Checks the options against (dtype, ndim, shape) and builds the window; on
 * success c must be released with rank_call_free. */
static ndf_status rank_setup(ndf_ctx *ctx, const char *name, rank_kind kind, ndf_dtype dtype, int ndim,
                             const int64_t *shape, int64_t rank, double percentile, const ndf_rank_options *opt,
                             rank_call *c) {
  memset(c, 0, sizeof *c);
  if (!opt) return ndf__argerror(ctx, name, "options", "NULL");
  if (opt->nan_policy != NDF_RANK_NAN_PROPAGATE && opt->nan_policy != NDF_RANK_NAN_OMIT)
    return ndf__argerror(ctx, name, "nan_policy", "unknown policy %d", (int)opt->nan_policy);
  if (opt->algorithm < NDF_RANK_ALGO_AUTO || opt->algorithm > NDF_RANK_ALGO_TILE)
    return ndf__argerror(ctx, name, "algorithm", "unknown algorithm %d", (int)opt->algorithm);
  if (kind == R_PERCENTILE) {
    double p = percentile < 0.0 ? percentile + 100.0 : percentile;
    if (!(p >= 0.0 && p <= 100.0))
      return ndf__argerror(ctx, name, "percentile", "%g is not in -100..100", percentile);
    percentile = p;
  }
  /* The window: the minimum filter's offsets of the footprint (or box). */
  if (opt->nsize == 0 && !opt->footprint)
    return ndf__argerror(ctx, name, "size", "one of size or footprint must be given");
  ndf_grey_options go;
  ndf_grey_options_init(&go);
  go.nsize = opt->nsize;
  memcpy(go.size, opt->size, sizeof go.size);
  go.footprint = opt->footprint;
  go.norigin = opt->norigin;
  memcpy(go.origin, opt->origin, sizeof go.origin);
  go.mode = opt->mode;
  go.cval = opt->cval;
  go.batch_dims = opt->batch_dims;
  ndf_status s;
  if ((s = ndf__grey_prepare(ctx, name, NDF__MIN, dtype, ndim, shape, &go, &c->g)) != NDF_OK) return s;
  const ndf__grey_geom *g = &c->g;
  const int nsp = g->nsp;
  c->taps = g->taps;
  c->n = g->ntaps;
  if (g->is_box) {
    /* scipy checks the origin of every axis for rank filters, size-1 axes included. */
    for (int d = 0; d < nsp; d++) {
      int64_t o = opt->norigin ? opt->origin[opt->norigin == 1 ? 0 : d] : 0, sz = g->box[d];
      if (sz / 2 + o < 0 || sz / 2 + o >= sz) {
        rank_call_free(c);
        return ndf__argerror(ctx, name, "origin", "origin[%d]=%lld is outside the window of size %lld", d,
                             (long long)o, (long long)sz);
      }
    }
    c->boxtaps = malloc((size_t)(c->n > 0 ? c->n : 1) * nsp * sizeof *c->boxtaps);
    if (!c->boxtaps) {
      rank_call_free(c);
      return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
    }
    for (int64_t k = 0; k < c->n; k++) {
      int64_t r = k;
      for (int d = nsp - 1; d >= 0; d--) {
        c->boxtaps[k * nsp + d] = (int32_t)(g->lo[d] + r % g->box[d]);
        r /= g->box[d];
      }
    }
    c->taps = c->boxtaps;
  }
  const int64_t n = c->n;
  int64_t r = rank;
  if (kind == R_RANK) {
    if (r < 0) r += n;
    if (r < 0 || r >= n) {
      rank_call_free(c);
      return ndf__argerror(ctx, name, "rank", "%lld is not within the %lld taps of the window", (long long)rank,
                           (long long)n);
    }
  }
  const int64_t kfull = ndf__rank_for(kind, r, percentile, n);
  if (opt->algorithm == NDF_RANK_ALGO_NETWORK && !ndf__selnet_find(n, kfull)) {
    rank_call_free(c);
    return ndf__argerror(ctx, name, "algorithm",
                         "no selection network for rank %lld of %lld taps (networks exist for every rank up to 27 "
                         "taps and the median up to 49)", (long long)kfull, (long long)n);
  }
  if (opt->algorithm == NDF_RANK_ALGO_HISTOGRAM && !ndf__rank_hist_applies(dtype, &c->g, n)) {
    rank_call_free(c);
    return ndf__argerror(ctx, name, "algorithm",
                         "the sliding histogram needs uint8/int8 data and a box window (size=) over at least 2 "
                         "spatial axes with fewer than 65536 taps");
  }
  if (opt->algorithm == NDF_RANK_ALGO_TILE && !ndf__rank_tile_applies(dtype, &c->g, n)) {
    rank_call_free(c);
    return ndf__argerror(ctx, name, "algorithm",
                         "the sorted tile needs data of at most 32 bits and a box window (size=) over the last two "
                         "spatial axes only (every other extent 1) of at most 16384 taps");
  }
  ndf__rank_sel sel = {kind, r, percentile, opt->nan_policy, opt->algorithm};
  c->sel = sel;
  return NDF_OK;
}

static ndf_status rank_filter(ndf_ctx *ctx, const char *name, rank_kind kind, const ndf_array *in, ndf_array *out,
                              int64_t rank, double percentile, const ndf_rank_options *opt) {
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  ndf__clear_error(ctx);
  ndf_status s = ndf__check_filter_arrays(ctx, name, in, out);
  if (s != NDF_OK) return s;
  rank_call c;
  if ((s = rank_setup(ctx, name, kind, in->dtype, in->ndim, in->shape, rank, percentile, opt, &c)) != NDF_OK)
    return s;
  const ndf__rank_sel *sel = &c.sel;
  if (in->device == NDF_DEVICE_CUDA) {
    s = ndf__rank_cuda(ctx, name, in, out, &c.g, c.taps, c.n, sel);
  } else if (ndf_array_size(in) > 0) {
    /* Quickselect by default: on the CPU an interpreted network is slower
     * (5x5 median on 8x3x256^2: about 40% more time).  The
     * generated networks are meant for the GPU's straight-line kernels;
     * NDF_RANK_ALGO_NETWORK (or $NDF_RANK_NETWORK=1) runs them here, to test
     * them against the sort path. */
    const char *want = getenv("NDF_RANK_NETWORK");
    const int use_net = opt->algorithm == NDF_RANK_ALGO_NETWORK || (want && *want && strcmp(want, "0") != 0);
    const rank_kind k = (rank_kind)sel->kind;
    const int64_t r = sel->rank, n = c.n;
    const double pc = sel->percentile;
    const ndf_rank_nan_policy pol = sel->nan_policy;
    int rc = 0;
    switch (in->dtype) {
      case NDF_UINT8: rc = rank_cpu_u8(ctx, in, out, &c.g, c.taps, n, k, r, pc, pol, use_net); break;
      case NDF_INT8: rc = rank_cpu_i8(ctx, in, out, &c.g, c.taps, n, k, r, pc, pol, use_net); break;
      case NDF_UINT16: rc = rank_cpu_u16(ctx, in, out, &c.g, c.taps, n, k, r, pc, pol, use_net); break;
      case NDF_INT16: rc = rank_cpu_i16(ctx, in, out, &c.g, c.taps, n, k, r, pc, pol, use_net); break;
      case NDF_UINT32: rc = rank_cpu_u32(ctx, in, out, &c.g, c.taps, n, k, r, pc, pol, use_net); break;
      case NDF_INT32: rc = rank_cpu_i32(ctx, in, out, &c.g, c.taps, n, k, r, pc, pol, use_net); break;
      case NDF_FLOAT32: rc = rank_cpu_f32(ctx, in, out, &c.g, c.taps, n, k, r, pc, pol, use_net); break;
      case NDF_FLOAT64: rc = rank_cpu_f64(ctx, in, out, &c.g, c.taps, n, k, r, pc, pol, use_net); break;
      default: rc = -1; break;
    }
    if (rc != 0) s = ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory for the window", name);
  }
  rank_call_free(&c);
  return s;
}

ndf_status ndf_cache_warm_rank(ndf_ctx *ctx, const char *arch, const char *op, ndf_dtype dtype, int ndim,
                               int64_t rank, double percentile, const ndf_rank_options *opt, int *compiled) {
  static const char *name = "ndf_cache_warm_rank";
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  ndf__clear_error(ctx);
  if (compiled) *compiled = 0;
  if (!arch || strncmp(arch, "sm_", 3) != 0 || atoi(arch + 3) < 50)
    return ndf__argerror(ctx, name, "arch", "'%s' is not an architecture like sm_90", arch ? arch : "(null)");
  rank_kind kind;
  if (op && !strcmp(op, "median_filter")) kind = R_MEDIAN;
  else if (op && !strcmp(op, "rank_filter")) kind = R_RANK;
  else if (op && !strcmp(op, "percentile_filter")) kind = R_PERCENTILE;
  else return ndf__argerror(ctx, name, "op", "unknown op '%s' (median_filter, rank_filter, percentile_filter)",
                            op ? op : "(null)");
  if (dtype == NDF_BOOL || !ndf_dtype_size(dtype) || dtype == NDF_INT64) return ndf__argerror(ctx, name, "dtype", "unsupported dtype %d", (int)dtype);
  if (ndim < 1 || ndim > NDF_MAX_NDIM) return ndf__argerror(ctx, name, "ndim", "%d is not in 1..%d", ndim, NDF_MAX_NDIM);
  /* Extents large enough for the kernel's full blocking, as in ndf_cache_warm. */
  int64_t shape[NDF_MAX_NDIM];
  for (int d = 0; d < ndim; d++) shape[d] = 64;
  rank_call c;
  ndf_status s = rank_setup(ctx, name, kind, dtype, ndim, shape, rank, percentile, opt, &c);
  if (s != NDF_OK) return s;
  ndf__kernel_req req;
  if ((s = ndf__rank_cuda_request(ctx, name, dtype, ndim, shape, &c.g, c.taps, c.n, &c.sel, &req)) == NDF_OK) {
    int c1 = 0;
    s = ndf__jit_warm(ctx, name, &req, arch, &c1);
    if (compiled) *compiled = c1;
    ndf__req_free(&req);
  }
  rank_call_free(&c);
  return s;
}

ndf_status ndf_median_filter(ndf_ctx *ctx, const ndf_array *in, ndf_array *out, const ndf_rank_options *opt) {
  return rank_filter(ctx, "ndf_median_filter", R_MEDIAN, in, out, 0, 0.0, opt);
}

ndf_status ndf_rank_filter(ndf_ctx *ctx, const ndf_array *in, ndf_array *out, int64_t rank,
                           const ndf_rank_options *opt) {
  return rank_filter(ctx, "ndf_rank_filter", R_RANK, in, out, rank, 0.0, opt);
}

ndf_status ndf_percentile_filter(ndf_ctx *ctx, const ndf_array *in, ndf_array *out, double percentile,
                                 const ndf_rank_options *opt) {
  return rank_filter(ctx, "ndf_percentile_filter", R_PERCENTILE, in, out, 0, percentile, opt);
}
