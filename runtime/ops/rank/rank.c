/*
 * rank.c -- median, rank and percentile filters with scipy.ndimage's
 * semantics (_filters.py:_rank_filter): the window is the footprint's true
 * taps at the minimum filter's offsets (no reflection), out-of-image taps
 * follow the mode (cval converted to the dtype first), and the output is the
 * element of the given rank of the sorted window.  NaN follows the context's
 * documented policy (ndforge.h), where scipy is undefined.
 *
 * The CPU backend -- the oracle of the CUDA backend (rank_cuda.c) -- runs
 * box windows by sorted slices and a merge-select network where that is
 * cheaper, and otherwise gathers each window and selects the rank.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rank/rank.h"
#include "tune.h"
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
  X(uint32_t, u32, 0) X(int32_t, i32, 0) X(int64_t, i64, 0) X(uint64_t, u64, 0) \
  X(float, f32, 1) X(double, f64, 1)

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

/*
 * Box windows on the CPU: sorted slices and a walk between neighbouring
 * windows.
 *
 * A box window at x is the union of K slices: the M = n / K values at one
 * column x + lo .. x + lo + K - 1 (every offset on the other axes).  Each
 * slice is sorted once, by a sorting network run on a block of columns at a
 * time (branch-free min/max, so it vectorizes), and serves the K windows
 * that hold it.  The rank is then found from the previous window's answer v:
 * per slice the count of values below v and of values up to v (a binary
 * search for the slice that enters, the leaving one dropped), then steps to
 * the next smaller or larger value among the slices until
 * #(< v) <= k < #(<= v).  Neighbouring windows share all but two slices, so
 * the answer moves by a few values: a few steps of K compares instead of a
 * selection over n values with branches that mispredict on image data.
 * Windows holding NaN take the per-voxel path.
 */
typedef struct rank_ce {
  int32_t a, b; /* a gets the minimum, b the maximum */
} rank_ce;

/* Batcher's merge exchange (Knuth 5.2.2, algorithm M): a sorting network
 * for any n; *out (malloc'd) holds its compare-exchanges.  -1 when out of memory. */
static int64_t sort_network(int64_t n, rank_ce **out) {
  int64_t cnt = 0, cap = 0;
  rank_ce *v = NULL;
  int t = 0;
  while (((int64_t)1 << t) < n) t++;
  for (int64_t p = n < 2 ? 0 : (int64_t)1 << (t - 1); p > 0; p >>= 1) {
    int64_t q = (int64_t)1 << (t - 1), r = 0, d = p;
    while (d > 0) {
      for (int64_t i = 0; i < n - d; i++) {
        if ((i & p) != r) continue;
        if (cnt == cap) {
          cap = cap ? 2 * cap : 64;
          rank_ce *nv = realloc(v, (size_t)cap * sizeof *nv);
          if (!nv) {
            free(v);
            return -1;
          }
          v = nv;
        }
        v[cnt].a = (int32_t)i;
        v[cnt].b = (int32_t)(i + d);
        cnt++;
      }
      d = q - p;
      q >>= 1;
      r = p;
    }
  }
  *out = v;
  return cnt;
}

/* Output columns per block of the box path. */
#define RANK_BLOCK 64

/* Whether the box path beats quickselect, in cycles per output as measured
 * on x86-64 (SSE2): about 1.6 per compare-exchange of a slice's sorting
 * network (one slice sorted per column), 20 per slice for each window's
 * walk (none when K = 1: the slice is the window), 60 for the rest, against
 * about 28 per tap for gathering and quickselect.  So from about 10 taps
 * along the last axis alone (M = 1), and up to a few hundred taps in one
 * column (K = 1, where the network grows as M log^2 M). */
#define RANK_BOX_MAX 4096
static int rank_box_pays(int64_t n, int64_t K, int64_t nsort) {
  const int64_t walk = K > 1 ? 20 * K : 0;
  return n >= 4 && n <= RANK_BOX_MAX && 16 * nsort + 10 * walk + 600 <= 280 * n;
}

/* One call's constants for the CPU kernels. */
typedef struct rank_job {
  const ndf_array *in;
  ndf_array *out;
  const ndf__grey_geom *g;
  const int32_t *taps;
  int64_t *loff;
  int64_t n;
  int32_t rlo[NDF_MAX_SPATIAL], rhi[NDF_MAX_SPATIAL];
  rank_kind kind;
  int64_t rank, kfull;
  double p;
  ndf_rank_nan_policy policy;
  int use_net;
  const ndf__selnet *netfull;
  int box;               /* box windows by sorted slices */
  int64_t M, K;          /* box: slice size, slices per window */
  const rank_ce *sort;   /* box: the slices' sorting network */
  int64_t nsort;
  int64_t *colmap;       /* box: input column of each extended column, -1 for cval */
  int64_t *moff;         /* box: the M slices' offsets on the spatial axes but the last */
} rank_job;

#define DEFINE_RANK(T, SUF, IS_FLOAT)                                                                    \
  DEFINE_SELECT(T, SUF)                                                                                  \
  DEFINE_NET(T, SUF)                                                                                     \
  /* The rank of the window of voxel (c, x), gathered tap by tap into win. */                            \
  static T voxel_##SUF(const rank_job *j, int inside, const T *img, int64_t ispat, const int64_t *c,     \
                       int64_t x, T *win) {                                                              \
    const ndf_array *in = j->in;                                                                         \
    const int nsp = j->g->nsp, nb = in->ndim - nsp, L = in->ndim - 1;                                    \
    const int64_t n = j->n, nx = in->shape[L];                                                           \
    const T cv = (T)j->g->cval;                                                                          \
    const int fast = inside && x + j->rlo[nsp - 1] >= 0 && x + j->rhi[nsp - 1] < nx;                     \
    const T *base = img + ispat + x * in->strides[L];                                                    \
    int64_t m = 0;                                                                                       \
    int nan = 0;                                                                                         \
    for (int64_t k = 0; k < n; k++) {                                                                    \
      T v;                                                                                               \
      if (fast) {                                                                                        \
        v = base[j->loff[k]];                                                                            \
      } else {                                                                                           \
        int64_t off;                                                                                     \
        v = ndf__tap_border_offset(j->taps + k * nsp, c, x, in, nb, j->g->mode, &off) ? img[off] : cv;   \
      }                                                                                                  \
      if (IS_FLOAT && v != v) { nan = 1; continue; }                                                     \
      win[m++] = v;                                                                                      \
    }                                                                                                    \
    if (IS_FLOAT && nan && j->policy == NDF_RANK_NAN_PROPAGATE) return (T)(IS_FLOAT ? NAN : 0);          \
    const int64_t k = m == n ? j->kfull : (j->kind == R_RANK ? j->rank : ndf__rank_for(j->kind, j->rank, j->p, m)); \
    const ndf__selnet *net = m == n ? j->netfull : (j->use_net && k < m ? ndf__selnet_find(m, k) : NULL); \
    return (m == 0 || k >= m) ? (T)(IS_FLOAT ? NAN : 0) : net ? run_net_##SUF(win, net) : select_##SUF(win, m, k); \
  }                                                                                                      \
  static void row_taps_##SUF(const rank_job *j, int64_t row, T *win) {                                   \
    const int nb = j->in->ndim - j->g->nsp, L = j->in->ndim - 1;                                         \
    int64_t c[NDF_MAX_NDIM], ib, ob, ispat;                                                              \
    const int inside = ndf__row_decode(row, j->in, j->out, nb, j->rlo, j->rhi, c, &ib, &ispat, &ob);     \
    const T *img = (const T *)j->in->data + ib;                                                          \
    T *dst = (T *)j->out->data + ob;                                                                     \
    for (int64_t x = 0; x < j->in->shape[L]; x++)                                                        \
      dst[x * j->out->strides[L]] = voxel_##SUF(j, inside, img, ispat, c, x, win);                       \
  }                                                                                                      \
  static inline void ce_both_##SUF(T *restrict a, T *restrict b, int64_t w) {                            \
    for (int64_t x = 0; x < w; x++) {                                                                    \
      const T p = a[x], q = b[x], lo = q < p ? q : p, hi = q < p ? p : q; /* (kept apart: vectorizes) */ \
      a[x] = lo;                                                                                         \
      b[x] = hi;                                                                                         \
    }                                                                                                    \
  }                                                                                                      \
  /* Values of slice e (sorted: wire m holds its m-th smallest) relative to v. */                        \
  /* Branch-free binary searches (the step count depends on the length only). */                         \
  static inline int32_t below_##SUF(const T *s, int64_t stride, int64_t M, T v) { /* first not < v */    \
    int64_t base = 0, len = M;                                                                           \
    while (len > 1) {                                                                                    \
      const int64_t half = len / 2;                                                                      \
      base = s[(base + half) * stride] < v ? base + half : base;                                         \
      len -= half;                                                                                       \
    }                                                                                                    \
    return (int32_t)(base + (s[base * stride] < v));                                                     \
  }                                                                                                      \
  static inline int32_t upto_##SUF(const T *s, int64_t stride, int64_t M, T v, int64_t from) { /* first > v */ \
    int64_t base = from, len = M - from;                                                                 \
    if (len == 0) return (int32_t)from;                                                                  \
    while (len > 1) {                                                                                    \
      const int64_t half = len / 2;                                                                      \
      base = !(v < s[(base + half) * stride]) ? base + half : base;                                      \
      len -= half;                                                                                       \
    }                                                                                                    \
    return (int32_t)(base + !(v < s[base * stride]));                                                    \
  }                                                                                                      \
  /* One row of a box window by sorted slices. */                                                        \
  static void row_box_##SUF(const rank_job *j, int64_t row, void *buf) {                                 \
    const ndf_array *in = j->in;                                                                         \
    const ndf__grey_geom *g = j->g;                                                                      \
    const int nsp = g->nsp, nb = in->ndim - nsp, L = in->ndim - 1;                                       \
    const int64_t nx = in->shape[L], sx = in->strides[L], osx = j->out->strides[L];                      \
    const int64_t M = j->M, K = j->K, Eb = RANK_BLOCK + K - 1, lo = g->lo[nsp - 1], k = j->kfull;        \
    int64_t *roff = buf;                                                                                 \
    int32_t *A = (int32_t *)(roff + M), *B = A + Eb; /* per slice: #(< v), #(<= v) */                    \
    T *sl = (T *)(B + Eb), *win = sl + M * Eb; /* 2 Eb int32: sl stays 8-byte aligned */                 \
    uint8_t *nanc = (uint8_t *)(win + j->n);                                                             \
    int64_t c[NDF_MAX_NDIM], ib, ob, ispat;                                                              \
    const int inside = ndf__row_decode(row, in, j->out, nb, j->rlo, j->rhi, c, &ib, &ispat, &ob);        \
    const T *img = (const T *)in->data + ib;                                                             \
    T *dst = (T *)j->out->data + ob;                                                                     \
    const T cv = (T)g->cval;                                                                             \
    for (int64_t m = 0; m < M; m++) { /* the slices' rows, through the mode; INT64_MIN: cval */          \
      int64_t off = 0;                                                                                   \
      for (int d = 0; d < nsp - 1 && off != INT64_MIN; d++) {                                            \
        const int64_t y = ndf__map_coord(c[nb + d] + j->moff[m * (nsp - 1) + d], in->shape[nb + d], g->mode); \
        off = y < 0 ? INT64_MIN : off + y * in->strides[nb + d];                                         \
      }                                                                                                  \
      roff[m] = off;                                                                                     \
    }                                                                                                    \
    T v = cv;                                                                                            \
    int have_v = 0;                                                                                      \
    for (int64_t x0 = 0; x0 < nx; x0 += RANK_BLOCK) {                                                    \
      const int64_t w = nx - x0 < RANK_BLOCK ? nx - x0 : RANK_BLOCK, E = w + K - 1;                      \
      const int64_t *cm = j->colmap + x0;                                                                \
      const int direct = sx == 1 && x0 + lo >= 0 && x0 + lo + E <= nx;                                   \
      if (IS_FLOAT) memset(nanc, 0, (size_t)E);                                                          \
      for (int64_t m = 0; m < M; m++) {                                                                  \
        T *s = sl + m * Eb;                                                                              \
        const T *b = img + (roff[m] == INT64_MIN ? 0 : roff[m]);                                         \
        if (roff[m] == INT64_MIN) for (int64_t e = 0; e < E; e++) s[e] = cv;                             \
        else if (direct) memcpy(s, b + x0 + lo, (size_t)E * sizeof(T));                                  \
        else for (int64_t e = 0; e < E; e++) s[e] = cm[e] >= 0 ? b[cm[e] * sx] : cv;                     \
        if (IS_FLOAT) for (int64_t e = 0; e < E; e++) nanc[e] |= s[e] != s[e];                           \
      }                                                                                                  \
      for (int64_t i = 0; i < j->nsort; i++)                                                             \
        ce_both_##SUF(sl + j->sort[i].a * Eb, sl + j->sort[i].b * Eb, E);                                \
      int valid = 0;                                                                                     \
      int64_t lt = 0, le = 0;                                                                            \
      for (int64_t x = 0; x < w; x++) {                                                                  \
        if (IS_FLOAT) {                                                                                  \
          int nan = 0;                                                                                   \
          for (int64_t e = x; e < x + K; e++) nan |= nanc[e];                                            \
          if (nan) {                                                                                     \
            dst[(x0 + x) * osx] = j->policy == NDF_RANK_NAN_PROPAGATE                                    \
                                      ? (T)(IS_FLOAT ? NAN : 0)                                          \
                                      : voxel_##SUF(j, inside, img, ispat, c, x0 + x, win);              \
            valid = 0;                                                                                   \
            continue;                                                                                    \
          }                                                                                              \
        }                                                                                                \
        if (K == 1) { /* the window is one sorted slice */                                               \
          dst[(x0 + x) * osx] = sl[k * Eb + x];                                                          \
          continue;                                                                                      \
        }                                                                                                \
        if (!have_v) {                                                                                   \
          v = sl[(k / K) * Eb + x];                                                                      \
          have_v = 1;                                                                                    \
        }                                                                                                \
        if (!valid) {                                                                                    \
          lt = le = 0;                                                                                   \
          for (int64_t e = x; e < x + K; e++) {                                                          \
            A[e] = below_##SUF(sl + e, Eb, M, v);                                                        \
            B[e] = upto_##SUF(sl + e, Eb, M, v, A[e]);                                                   \
            lt += A[e];                                                                                  \
            le += B[e];                                                                                  \
          }                                                                                              \
          valid = 1;                                                                                     \
        } else { /* slice x - 1 leaves, slice x + K - 1 enters */                                        \
          const int64_t e = x + K - 1;                                                                   \
          lt -= A[x - 1];                                                                                \
          le -= B[x - 1];                                                                                \
          A[e] = below_##SUF(sl + e, Eb, M, v);                                                          \
          B[e] = upto_##SUF(sl + e, Eb, M, v, A[e]);                                                     \
          lt += A[e];                                                                                    \
          le += B[e];                                                                                    \
        }                                                                                                \
        while (k < lt) { /* v: the largest value below v */                                              \
          T nv = v;                                                                                      \
          int found = 0;                                                                                 \
          for (int64_t e = x; e < x + K; e++)                                                            \
            if (A[e] > 0 && (!found || nv < sl[(A[e] - 1) * Eb + e])) {                                  \
              nv = sl[(A[e] - 1) * Eb + e];                                                              \
              found = 1;                                                                                 \
            }                                                                                            \
          lt = le = 0;                                                                                   \
          for (int64_t e = x; e < x + K; e++) {                                                          \
            B[e] = A[e];                                                                                 \
            while (A[e] > 0 && !(sl[(A[e] - 1) * Eb + e] < nv)) A[e]--;                                  \
            lt += A[e];                                                                                  \
            le += B[e];                                                                                  \
          }                                                                                              \
          v = nv;                                                                                        \
        }                                                                                                \
        while (k >= le) { /* v: the smallest value above v */                                            \
          T nv = v;                                                                                      \
          int found = 0;                                                                                 \
          for (int64_t e = x; e < x + K; e++)                                                            \
            if (B[e] < M && (!found || sl[B[e] * Eb + e] < nv)) {                                        \
              nv = sl[B[e] * Eb + e];                                                                    \
              found = 1;                                                                                 \
            }                                                                                            \
          lt = le = 0;                                                                                   \
          for (int64_t e = x; e < x + K; e++) {                                                          \
            A[e] = B[e];                                                                                 \
            while (B[e] < M && !(nv < sl[B[e] * Eb + e])) B[e]++;                                        \
            lt += A[e];                                                                                  \
            le += B[e];                                                                                  \
          }                                                                                              \
          v = nv;                                                                                        \
        }                                                                                                \
        dst[(x0 + x) * osx] = v;                                                                         \
      }                                                                                                  \
    }                                                                                                    \
  }                                                                                                      \
  static int rank_cpu_##SUF(const ndf_ctx *ctx, const rank_job *j) {                                     \
    const int L = j->in->ndim - 1;                                                                       \
    int64_t nrows = 1;                                                                                   \
    for (int d = 0; d < L; d++) nrows *= j->in->shape[d];                                                \
    size_t bytes = (size_t)j->n * sizeof(T);                                                             \
    if (j->box) {                                                                                        \
      const int64_t Eb = RANK_BLOCK + j->K - 1;                                                          \
      bytes = (size_t)j->M * sizeof(int64_t) + (size_t)(2 * Eb) * sizeof(int32_t) +                  \
              (size_t)(j->M * Eb + j->n) * sizeof(T) + (size_t)Eb;                                       \
    }                                                                                                    \
    const int nth = ndf__cpu_threads(ctx);                                                               \
    void **bufs = ndf__thread_buffers(nth, bytes);                                                       \
    if (!bufs) return -1;                                                                                \
    _Pragma("omp parallel num_threads(nth)")                                                             \
    {                                                                                                    \
      void *buf = bufs[ndf__thread_id()];                                                                \
      _Pragma("omp for schedule(dynamic, 8)")                                                            \
      for (int64_t row = 0; row < nrows; row++) {                                                        \
        if (j->box) row_box_##SUF(j, row, buf);                                                          \
        else row_taps_##SUF(j, row, buf);                                                                \
      }                                                                                                  \
    }                                                                                                    \
    ndf__thread_buffers_free(bufs, nth);                                                                 \
    return 0;                                                                                            \
  }
NDF_RANK_TYPES(DEFINE_RANK)

/* The CPU backend: the box path where it pays (AUTO), else per-voxel selection. */
static ndf_status rank_cpu(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out, const rank_call *rc,
                           int use_net) {
  const ndf__rank_sel *sel = &rc->sel;
  const ndf__grey_geom *g = &rc->g;
  const int nsp = g->nsp, nb = in->ndim - nsp, L = in->ndim - 1;
  rank_job j;
  memset(&j, 0, sizeof j);
  j.in = in;
  j.out = out;
  j.g = g;
  j.taps = rc->taps;
  j.n = rc->n;
  j.kind = (rank_kind)sel->kind;
  j.rank = sel->rank;
  j.p = sel->percentile;
  j.policy = sel->nan_policy;
  j.use_net = use_net;
  j.kfull = ndf__rank_for(j.kind, j.rank, j.p, j.n);
  j.netfull = use_net ? ndf__selnet_find(j.n, j.kfull) : NULL;
  j.loff = malloc((size_t)j.n * sizeof *j.loff);
  if (!j.loff) return ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory for the window", name);
  ndf__tap_table(j.taps, j.n, nsp, in->strides + nb, j.loff, j.rlo, j.rhi);
  rank_ce *sort = NULL;
  if (g->is_box && sel->algorithm == NDF_RANK_ALGO_AUTO && !use_net && j.n >= 4 && j.n <= RANK_BOX_MAX) {
    const int64_t K = g->box[nsp - 1], M = j.n / K, nx = in->shape[L];
    j.nsort = sort_network(M, &sort);
    if (j.nsort >= 0 && rank_box_pays(j.n, K, j.nsort)) {
      j.colmap = malloc((size_t)(nx + K - 1) * sizeof *j.colmap);
      j.moff = malloc((size_t)(M * (nsp - 1) + 1) * sizeof *j.moff);
    }
    if (j.colmap && j.moff) {
      for (int64_t e = 0; e < nx + K - 1; e++) j.colmap[e] = ndf__map_coord(e + g->lo[nsp - 1], nx, g->mode);
      for (int64_t m = 0; m < M; m++) {
        int64_t r = m;
        for (int d = nsp - 2; d >= 0; d--) {
          j.moff[m * (nsp - 1) + d] = g->lo[d] + r % g->box[d];
          r /= g->box[d];
        }
      }
      j.box = 1;
      j.M = M;
      j.K = K;
      j.sort = sort;
    }
  }
  int rc2;
  switch (in->dtype) {
    case NDF_UINT8: rc2 = rank_cpu_u8(ctx, &j); break;
    case NDF_INT8: rc2 = rank_cpu_i8(ctx, &j); break;
    case NDF_UINT16: rc2 = rank_cpu_u16(ctx, &j); break;
    case NDF_INT16: rc2 = rank_cpu_i16(ctx, &j); break;
    case NDF_UINT32: rc2 = rank_cpu_u32(ctx, &j); break;
    case NDF_INT32: rc2 = rank_cpu_i32(ctx, &j); break;
    case NDF_INT64: rc2 = rank_cpu_i64(ctx, &j); break;
    case NDF_UINT64: rc2 = rank_cpu_u64(ctx, &j); break;
    case NDF_FLOAT32: rc2 = rank_cpu_f32(ctx, &j); break;
    case NDF_FLOAT64: rc2 = rank_cpu_f64(ctx, &j); break;
    default: rc2 = -1; break;
  }
  free(sort);
  free(j.colmap);
  free(j.moff);
  free(j.loff);
  return rc2 == 0 ? NDF_OK : ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory for the window", name);
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

static ndf_status rank_call_run(ndf_ctx *ctx, const char *name, rank_kind kind, const ndf_array *in, ndf_array *out,
                                int64_t rank, double percentile, const ndf_rank_options *opt);
/* The call with the options' own tunables (opt->tune) in force. */
static ndf_status rank_filter(ndf_ctx *ctx, const char *name, rank_kind kind, const ndf_array *in, ndf_array *out,
                              int64_t rank, double percentile, const ndf_rank_options *opt) {
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  ndf__clear_error(ctx);
  ndf__tune_call tc;
  ndf_status s = ndf__tune_call_begin(ctx, name, opt ? opt->tune : NULL, &tc);
  if (s != NDF_OK) return s;
  s = rank_call_run(ctx, name, kind, in, out, rank, percentile, opt);
  ndf__tune_call_end(&tc);
  return s;
}
static ndf_status rank_call_run(ndf_ctx *ctx, const char *name, rank_kind kind, const ndf_array *in, ndf_array *out,
                                int64_t rank, double percentile, const ndf_rank_options *opt) {
  ndf_status s = ndf__check_filter_arrays(ctx, name, in, out);
  if (s != NDF_OK) return s;
  rank_call c;
  if ((s = rank_setup(ctx, name, kind, in->dtype, in->ndim, in->shape, rank, percentile, opt, &c)) != NDF_OK)
    return s;
  const ndf__rank_sel *sel = &c.sel;
  if (in->device == NDF_DEVICE_CUDA) {
    s = ndf__rank_cuda(ctx, name, in, out, &c.g, c.taps, c.n, sel);
  } else if (ndf_array_size(in) > 0) {
    /* AUTO: box windows by sorted slices where that pays, else quickselect
     * per voxel.  The generated selection networks are meant for the GPU's
     * straight-line kernels (interpreted per voxel they are slower than
     * quickselect); NDF_RANK_ALGO_NETWORK (or the tunable rank.cpu_network)
     * runs them here, to test them against the sort path. */
    const int use_net = opt->algorithm == NDF_RANK_ALGO_NETWORK ||
                        ndf__tune(ctx, NDF__TUNE_RANK_CPU_NETWORK, NULL) == NDF__TUNE_RANK_CPU_NETWORK__ON;
    s = rank_cpu(ctx, name, in, out, &c, use_net);
  }
  rank_call_free(&c);
  return s;
}

/* ndf_cache_warm_rank (shape NULL: 64 along every axis) and ndf_cache_warm_rank_shape. */
static ndf_status warm_rank(ndf_ctx *ctx, const char *name, const char *arch, const char *op, ndf_dtype dtype,
                            int ndim, const int64_t *shape_in, int64_t rank, double percentile,
                            const ndf_rank_options *opt, int *compiled) {
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
  if (dtype == NDF_BOOL || !ndf_dtype_size(dtype)) return ndf__argerror(ctx, name, "dtype", "unsupported dtype %d", (int)dtype);
  if (ndim < 1 || ndim > NDF_MAX_NDIM) return ndf__argerror(ctx, name, "ndim", "%d is not in 1..%d", ndim, NDF_MAX_NDIM);
  /* Extents large enough for the kernel's full blocking, as in ndf_cache_warm (or the caller's). */
  int64_t shape[NDF_MAX_NDIM];
  for (int d = 0; d < ndim; d++) {
    shape[d] = shape_in ? shape_in[d] : 64;
    if (shape[d] < 0) return ndf__argerror(ctx, name, "shape", "extent %lld of axis %d", (long long)shape[d], d);
  }
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

ndf_status ndf_cache_warm_rank(ndf_ctx *ctx, const char *arch, const char *op, ndf_dtype dtype, int ndim,
                               int64_t rank, double percentile, const ndf_rank_options *opt, int *compiled) {
  return warm_rank(ctx, "ndf_cache_warm_rank", arch, op, dtype, ndim, NULL, rank, percentile, opt, compiled);
}

ndf_status ndf_cache_warm_rank_shape(ndf_ctx *ctx, const char *arch, const char *op, ndf_dtype dtype, int ndim,
                                     const int64_t *shape, int64_t rank, double percentile,
                                     const ndf_rank_options *opt, int *compiled) {
  if (!shape) return ndf__error(ctx, NDF_EINVAL, "ndf_cache_warm_rank_shape: bad argument 'shape' (NULL)");
  return warm_rank(ctx, "ndf_cache_warm_rank_shape", arch, op, dtype, ndim, shape, rank, percentile, opt, compiled);
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
