/*
 * test_gpu_rank.c -- median, rank and percentile filters on the GPU against
 * the CPU backend (itself checked against scipy by test_rank), bit for bit
 * (NaN positions equal), on fresh random inputs drawn here: every dtype and
 * mode, both NaN policies, every GPU algorithm (generated networks, the
 * radix select, the sorted tile, the 3x3 sorted-row median) and AUTO, sizes
 * 1-7 and larger windows, random footprints,
 * 1-4 spatial axes, origins, batch axes, ties, +-inf, strided and
 * negative-stride inputs, strided outputs.  Every GPU output is poisoned
 * before the run; the bytes between the elements of a strided output must
 * keep the poison.  Skips when the context has no CUDA device.
 *
 * Seed: NDF_TEST_SEED (printed); number of random cases: NDF_TEST_CASES (below
 * 6, the fixed tests also run only one case in six: see add_fixed).
 * Nearly every case is a kernel of its own, so each test first draws its
 * cases, then compiles their kernels into the disk cache on one thread per
 * core (ndf_cache_warm_rank_shape on CPU-backend contexts: NVRTC needs no
 * GPU), then runs them one by one, their kernels disk hits (run_list).
 * This file uses only the public API of ndforge.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ndforge.h"
#include "testutil.h"

typedef tu_gpu_state gpu_state;

/* Sets tunable name on ctx (value NULL: its default), asserting the API takes it. */
static void tune(ndf_ctx *ctx, const char *name, const char *value) {
  const ndf_status st = ndf_ctx_set_tunable(ctx, name, value);
  if (st != NDF_OK) printf("%s\n", ndf_errmsg(ctx));
  assert_int_equal(st, NDF_OK);
}
static int group_setup(void **state) { return tu_gpu_setup(state, 200); }
#define group_teardown tu_gpu_teardown

#define SKIP_WITHOUT_CUDA(s) TU_SKIP_WITHOUT_CUDA((s)->ctx)

enum { K_MEDIAN, K_RANK, K_PERCENTILE };

typedef struct rcase {
  int kind;
  int64_t rank;
  double pct;
  ndf_dtype dt;
  int nd, batch, nsp;
  int64_t shape[NDF_MAX_NDIM];
  ndf_rank_options o;
  tu_array fp;
  double pnan; /* NaN probability of the input (floats) */
  /* kernel log specs (tu_klog_check) the GPU call must / must not launch; NULL: not checked */
  const char *want, *unwanted;
  char want_buf[64];
  char desc[512];
} rcase;

static ndf_status call(ndf_ctx *ctx, const rcase *c, const ndf_array *in, ndf_array *out, const ndf_rank_options *o) {
  if (c->kind == K_MEDIAN) return ndf_median_filter(ctx, in, out, o);
  if (c->kind == K_RANK) return ndf_rank_filter(ctx, in, out, c->rank, o);
  return ndf_percentile_filter(ctx, in, out, c->pct, o);
}

/* Values with ties (few distinct values, or quarters), +-inf and NaN. */
static void fill_values(tu_array *in, tu_rng *r, double pnan) {
  ndf_dtype dt = in->arr.dtype;
  int64_t n = ndf_array_size(&in->arr);
  double lo, hi;
  tu_int_range(dt, &lo, &hi);
  int narrow = tu_rng_chance(r, 0.3);
  double a = lo, b = hi;
  if (!tu_is_float(dt) && narrow) {
    a = (double)tu_rng_int(r, (int64_t)lo, (int64_t)hi);
    b = fmin(hi, a + 4);
  }
  for (int64_t i = 0; i < n; i++) {
    double v;
    if (tu_is_float(dt)) {
      v = narrow ? (double)tu_rng_int(r, -3, 3) + 0.25 : tu_rng_normal(r) * 100;
      if (pnan > 0 && tu_rng_chance(r, pnan)) v = NAN;
      else if (tu_rng_chance(r, 0.003)) v = tu_rng_chance(r, 0.5) ? INFINITY : -INFINITY;
    } else {
      v = (double)tu_rng_int(r, (int64_t)a, (int64_t)b);
    }
    tu_set(&in->arr, i, v);
  }
  tu_offset64(&in->arr);
}

static void draw_case(rcase *c, tu_rng *r) {
  memset(c, 0, sizeof *c);
  ndf_rank_options_init(&c->o);
  c->kind = (int)tu_rng_int(r, 0, 2);
  c->dt = (ndf_dtype)tu_rng_int(r, NDF_UINT8, NDF_UINT64);
  c->batch = (int)tu_rng_int(r, 0, 2);
  double u = tu_rng_unif(r);
  c->nsp = u < 0.2 ? 1 : u < 0.65 ? 2 : u < 0.95 ? 3 : 4;
  c->nd = c->batch + c->nsp;
  int large = tu_rng_chance(r, 0.12) && c->nsp <= 3;
  int64_t es[NDF_MAX_SPATIAL], ntap = 1;
  for (int i = 0; i < c->nsp; i++) {
    es[i] = large ? tu_rng_int(r, c->nsp == 3 ? 3 : 5, c->nsp == 3 ? 7 : 15)
                  : tu_rng_int(r, 1, c->nsp >= 3 ? 3 : (c->nsp == 2 ? 7 : 9));
    ntap *= es[i];
  }
  for (int tries = 0;; tries++) {
    int64_t n = 1;
    for (int i = 0; i < c->nd; i++) {
      c->shape[i] = i < c->batch ? tu_rng_int(r, 1, 3) : tu_rng_int(r, 1, c->nsp == 1 ? 300 : c->nsp == 2 ? 90 : 24);
      n *= c->shape[i];
    }
    if (n * (ntap > 100 ? 4 : 1) <= 200000 || tries > 50) break;
  }
  int use_fp = tu_rng_chance(r, 0.4);
  if (use_fp) {
    assert_int_equal(tu_array_alloc(&c->fp, NDF_BOOL, c->nsp, es), 0);
    double p = 0.3 + 0.6 * tu_rng_unif(r);
    int64_t on = 0;
    for (int64_t k = 0; k < ntap; k++) {
      int b = tu_rng_chance(r, p);
      on += b;
      tu_set(&c->fp.arr, k, b);
    }
    if (!on) tu_set(&c->fp.arr, tu_rng_int(r, 0, ntap - 1), 1), on = 1;
    ntap = on;
    c->o.footprint = &c->fp.arr;
  } else if (tu_rng_chance(r, 0.3)) {
    c->o.nsize = 1;
    c->o.size[0] = es[0];
    ntap = 1;
    for (int i = 0; i < c->nsp; i++) es[i] = es[0], ntap *= es[0];
  } else {
    c->o.nsize = c->nsp;
    for (int i = 0; i < c->nsp; i++) c->o.size[i] = es[i];
  }
  if (tu_rng_chance(r, 0.6)) {
    c->o.norigin = c->nsp;
    for (int i = 0; i < c->nsp; i++) c->o.origin[i] = tu_rng_int(r, -(es[i] / 2), (es[i] - 1) / 2);
  }
  c->rank = tu_rng_chance(r, 0.3) ? (tu_rng_chance(r, 0.5) ? 0 : -1) : tu_rng_int(r, -ntap, ntap - 1);
  u = tu_rng_unif(r);
  c->pct = u < 0.1 ? 100.0 : u < 0.2 ? 0.0 : u < 0.3 ? -25.0 : (tu_rng_unif(r) * 200 - 100);
  c->o.mode = (ndf_mode)tu_rng_int(r, 0, NDF_MODE_COUNT - 1);
  if (tu_is_float(c->dt)) {
    c->o.cval = tu_rng_chance(r, 0.1) ? NAN : tu_rng_normal(r) * 100;
    c->pnan = tu_rng_chance(r, 0.3) ? tu_rng_unif(r) * 0.2 : 0;
  } else {
    double lo, hi;
    tu_int_range(c->dt, &lo, &hi);
    c->o.cval = (double)tu_rng_int(r, (int64_t)lo, (int64_t)hi);
  }
  c->o.nan_policy = tu_rng_chance(r, 0.5) ? NDF_RANK_NAN_OMIT : NDF_RANK_NAN_PROPAGATE;
  c->o.algorithm = tu_rng_chance(r, 0.3) ? NDF_RANK_ALGO_SELECT : NDF_RANK_ALGO_AUTO;
  /* The sliding histogram wherever it applies (8-bit, box over >= 2 axes), half the time. */
  if ((c->dt == NDF_UINT8 || c->dt == NDF_INT8) && !use_fp && c->nsp >= 2 && tu_rng_chance(r, 0.5))
    c->o.algorithm = NDF_RANK_ALGO_HISTOGRAM;
  /* The sorted tile wherever it applies (data up to 32 bits, a box over the last two axes only), 30% of the time. */
  int tile_ok = !use_fp && c->nsp >= 2 && ndf_dtype_size(c->dt) <= 4;
  for (int i = 0; i < c->nsp - 2; i++) tile_ok = tile_ok && es[i] == 1;
  if (tile_ok && tu_rng_chance(r, 0.3)) c->o.algorithm = NDF_RANK_ALGO_TILE;
  c->o.batch_dims = c->batch;
  /* the kernel of a forced algorithm (AUTO's choice is not checked here) */
  if (c->o.algorithm == NDF_RANK_ALGO_SELECT) c->want = "ndf_rank|ALGO=1";
  else if (c->o.algorithm == NDF_RANK_ALGO_HISTOGRAM) c->want = "ndf_rank_hist";
  else if (c->o.algorithm == NDF_RANK_ALGO_TILE) c->unwanted = "ndf_rank"; /* either form of the tile */
  char sh[96], el[96], org[96] = "0";
  size_t w = 0;
  for (int i = 0; i < c->nd; i++) w += (size_t)snprintf(sh + w, sizeof sh - w, "%s%lld", i ? "x" : "", (long long)c->shape[i]);
  w = 0;
  for (int i = 0; i < c->nsp; i++) w += (size_t)snprintf(el + w, sizeof el - w, "%s%lld", i ? "x" : "", (long long)es[i]);
  w = 0;
  for (int i = 0; i < c->o.norigin; i++)
    w += (size_t)snprintf(org + w, sizeof org - w, "%s%lld", i ? "," : "", (long long)c->o.origin[i]);
  const char *kinds[] = {"median", "rank", "percentile"};
  snprintf(c->desc, sizeof c->desc,
           "%s(rank=%lld pct=%.17g) %s shape=%s batch=%d %s=%s (%lld taps) origin=%s mode=%s cval=%g nan=%s "
           "algo=%d pnan=%.3f",
           kinds[c->kind], (long long)c->rank, c->pct, ndf_dtype_name(c->dt), sh, c->batch,
           use_fp ? "footprint" : "size", el, (long long)ntap, org, ndf_mode_name(c->o.mode), c->o.cval,
           c->o.nan_policy == NDF_RANK_NAN_OMIT ? "omit" : "propagate", (int)c->o.algorithm, c->pnan);
}

/* One case on both backends; 0 when the outputs are equal. */
static int run_case(gpu_state *s, rcase *c, tu_rng *r, int in_layout, int out_layout) {
  ndf_ctx *ctx = s->ctx;
  tu_array in, cpu_out, hin, hout;
  assert_int_equal(tu_array_alloc(&in, c->dt, c->nd, c->shape), 0);
  fill_values(&in, r, c->pnan);
  assert_int_equal(tu_array_like(&cpu_out, &in.arr, TU_LAYOUT_C, r), 0);
  ndf_rank_options co = c->o;
  co.algorithm = NDF_RANK_ALGO_AUTO; /* quickselect, checked against scipy by test_rank */
  ndf_status rc = call(ctx, c, &in.arr, &cpu_out.arr, &co);
  if (rc != NDF_OK) {
    printf("CPU backend rejected: %s: %s\n  %s\n", ndf_status_name(rc), ndf_errmsg(ctx), c->desc);
    tu_array_free(&in);
    tu_array_free(&cpu_out);
    return -1;
  }
  assert_int_equal(tu_array_relayout(&hin, &in.arr, in_layout, r), 0);
  assert_int_equal(tu_array_like(&hout, &in.arr, out_layout, r), 0); /* poisoned */
  tu_dev din, dout;
  tu_dev_upload(ctx, &din, &hin);
  tu_dev_upload(ctx, &dout, &hout);
  const uint64_t mark = tu_klog_mark(ctx);
  ndf_status rg = call(ctx, c, &din.arr, &dout.arr, &c->o);
  ndf_status rs = ndf_ctx_synchronize(ctx);
  int result = 0;
  const int sized = ndf_array_size(&in.arr) > 0;
  if (rg != NDF_OK || rs != NDF_OK) {
    printf("GPU run failed: %s / sync %s: %s\n  %s\n", ndf_status_name(rg), ndf_status_name(rs), ndf_errmsg(ctx),
           c->desc);
    result = -1;
  } else {
    tu_dev_download(ctx, &dout, &hout);
    char msg[2048];
    int64_t bad = tu_compare(&cpu_out.arr, &hout.arr, msg, sizeof msg);
    if (bad != 0) {
      printf("GPU != CPU in %lld elements (input layout %d, output layout %d):\n  %s\n%s", (long long)bad, in_layout,
             out_layout, c->desc, msg);
      result = -1;
    } else if (tu_check_gaps(&hout) >= 0) {
      printf("GPU wrote outside the output's elements:\n  %s\n", c->desc);
      result = -1;
    } else if (sized && ((c->want && tu_klog_check(ctx, mark, c->want, 1, c->desc)) ||
                         (c->unwanted && tu_klog_check(ctx, mark, c->unwanted, 0, c->desc)))) {
      result = -1;
    }
  }
  tu_dev_free(ctx, &din);
  tu_dev_free(ctx, &dout);
  tu_array_free(&in);
  tu_array_free(&cpu_out);
  tu_array_free(&hin);
  tu_array_free(&hout);
  return result;
}

/* ---- Case lists: drawn first, their kernels compiled concurrently, then run ---- */

/* The tunables a case runs under (NULL: the default), set on the context around it. */
static const char *const case_tunables[] = {"rank.tile2_pipe", "rank.tile2_unroll", "rank.tile", "rank.med3"};
enum { NTUN = sizeof case_tunables / sizeof case_tunables[0] };

typedef struct lcase {
  rcase c;
  int in_layout, out_layout;
  char tun[NTUN][32]; /* "" : the default */
} lcase;

typedef struct clist {
  lcase *v;
  int n, cap;
} clist;

/* Appends *c (its footprint and want_buf pointers moved to the copy) with the
 * tunables now set on s->ctx; the list owns c->fp from here on. */
static void add_case(gpu_state *s, clist *L, const rcase *c, int in_layout, int out_layout) {
  if (L->n == L->cap) {
    L->cap = L->cap ? 2 * L->cap : 64;
    L->v = realloc(L->v, (size_t)L->cap * sizeof *L->v);
    assert_non_null(L->v);
  }
  lcase *e = &L->v[L->n++];
  memcpy(&e->c, c, sizeof *c);
  if (c->o.footprint == &c->fp.arr) e->c.o.footprint = &e->c.fp.arr;
  if (c->want == c->want_buf) e->c.want = e->c.want_buf;
  e->in_layout = in_layout, e->out_layout = out_layout;
  for (int t = 0; t < NTUN; t++) {
    char v[32];
    assert_int_equal(ndf_ctx_get_tunable(s->ctx, case_tunables[t], v, sizeof v), NDF_OK);
    snprintf(e->tun[t], sizeof e->tun[t], "%s", strcmp(v, "default") ? v : "");
  }
}

/* A case of the fixed tests: all of them from NDF_TEST_CASES = 6 on; below
 * (the sanitizer's quick runs) one in six, the seed choosing which. */
static void add_fixed(gpu_state *s, clist *L, long *k, const rcase *c, int in_layout, int out_layout) {
  const long i = (*k)++;
  if (s->ncases < 6 && (i + (long)(s->seed % 6)) % 6 != 0) return;
  add_case(s, L, c, in_layout, out_layout);
}

static void set_tunables(ndf_ctx *ctx, const lcase *e) {
  for (int t = 0; t < NTUN; t++) tune(ctx, case_tunables[t], e->tun[t][0] ? e->tun[t] : NULL);
}

static const char *op_name(int kind) {
  return kind == K_MEDIAN ? "median_filter" : kind == K_RANK ? "rank_filter" : "percentile_filter";
}

typedef struct warm_pool {
  const clist *L;
  int *order; /* the cases by falling taps: the long compiles (the sorted tile's) first */
  char arch[16];
  int next, compiled, failed;
  pthread_mutex_t lock;
} warm_pool;

/* A case's taps (a box's product; a footprint counts as small). */
static int64_t case_taps(const lcase *e) {
  int64_t t = 1;
  for (int d = 0; d < e->c.nsp && e->c.o.nsize; d++) t *= e->c.o.size[e->c.o.nsize == 1 ? 0 : d];
  return t;
}
static const clist *g_sort_list;
static int by_taps(const void *a, const void *b) {
  const int64_t ta = case_taps(&g_sort_list->v[*(const int *)a]), tb = case_taps(&g_sort_list->v[*(const int *)b]);
  return ta < tb ? 1 : ta > tb ? -1 : *(const int *)a - *(const int *)b;
}

/* One thread of precompile: a CPU-backend context of its own (the disk cache
 * the test's context uses), the list's cases in turn.  No assertions here (a
 * thread of its own): a failure only leaves the kernel to the case's run. */
static void *warm_worker(void *arg) {
  warm_pool *w = arg;
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  o.backend = NDF_BACKEND_CPU;
  ndf_ctx *ctx = NULL;
  if (ndf_ctx_create(&ctx, &o) != NDF_OK) return NULL;
  for (;;) {
    pthread_mutex_lock(&w->lock);
    const int i = w->next++;
    pthread_mutex_unlock(&w->lock);
    if (i >= w->L->n) break;
    const lcase *e = &w->L->v[w->order[i]];
    int ok = 1;
    for (int t = 0; t < NTUN; t++)
      ok &= ndf_ctx_set_tunable(ctx, case_tunables[t], e->tun[t][0] ? e->tun[t] : NULL) == NDF_OK;
    int compiled = 0;
    ok &= ndf_cache_warm_rank_shape(ctx, w->arch, op_name(e->c.kind), e->c.dt, e->c.nd, e->c.shape, e->c.rank,
                                    e->c.pct, &e->c.o, &compiled) == NDF_OK;
    pthread_mutex_lock(&w->lock);
    w->compiled += compiled;
    w->failed += !ok;
    pthread_mutex_unlock(&w->lock);
  }
  ndf_ctx_destroy(ctx);
  return NULL;
}

/* The kernels of L's cases into the disk cache, one thread per core (at most
 * 32): the runs then load them.  Nothing to gain without a disk cache. */
static void prewarm(gpu_state *s, const clist *L) {
  const char *dis = getenv("NDF_CACHE_DISABLE");
  ndf_ctx_info info;
  if (!L->n || (dis && *dis && strcmp(dis, "0")) || ndf_ctx_get_info(s->ctx, &info) != NDF_OK) return;
  warm_pool w;
  memset(&w, 0, sizeof w);
  w.L = L;
  w.order = malloc((size_t)L->n * sizeof *w.order);
  assert_non_null(w.order);
  for (int i = 0; i < L->n; i++) w.order[i] = i;
  g_sort_list = L;
  qsort(w.order, (size_t)L->n, sizeof *w.order, by_taps);
  snprintf(w.arch, sizeof w.arch, "sm_%d%d", info.cc_major, info.cc_minor);
  pthread_mutex_init(&w.lock, NULL);
  long nt = sysconf(_SC_NPROCESSORS_ONLN);
  nt = nt < 1 ? 1 : nt > 32 ? 32 : nt;
  if (nt > L->n) nt = L->n;
  pthread_t th[32];
  const double t0 = tu_now_ms();
  int started = 0;
  for (long i = 0; i < nt; i++) started += pthread_create(&th[started], NULL, warm_worker, &w) == 0;
  if (!started) warm_worker(&w);
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
  pthread_mutex_destroy(&w.lock);
  free(w.order);
  printf("precompiled %d cases on %d threads: %d kernels compiled, %d not warmed, %.0f ms\n", L->n,
         started ? started : 1, w.compiled, w.failed, tu_now_ms() - t0);
}

/* Prewarms, then runs L's cases in order under their tunables; frees L.
 * Returns the number that failed. */
static int run_list(gpu_state *s, clist *L, tu_rng *r, const char *what) {
  prewarm(s, L);
  int failed = 0;
  for (int i = 0; i < L->n; i++) {
    lcase *e = &L->v[i];
    set_tunables(s->ctx, e);
    if (run_case(s, &e->c, r, e->in_layout, e->out_layout) != 0) {
      if (what) printf("  (%s %d)\n", what, i);
      failed++;
    }
    tu_array_free(&e->c.fp);
  }
  set_tunables(s->ctx, &(lcase){0});
  free(L->v);
  memset(L, 0, sizeof *L);
  return failed;
}

static void test_gpu_rank_random_cases(void **state) {
  gpu_state *s = *state;
  SKIP_WITHOUT_CUDA(s);
  tu_rng r;
  tu_rng_seed(&r, s->seed);
  clist L = {0};
  for (long i = 0; i < s->ncases; i++) {
    rcase c;
    draw_case(&c, &r);
    int in_layout = TU_LAYOUT_C, out_layout = TU_LAYOUT_C;
    double u = tu_rng_unif(&r);
    if (u < 0.25) in_layout = TU_LAYOUT_PADDED | (tu_rng_chance(&r, 0.5) ? TU_LAYOUT_NEGATIVE : 0);
    else if (u < 0.35) in_layout = TU_LAYOUT_FORTRAN;
    else if (u < 0.5) in_layout = TU_LAYOUT_C | TU_LAYOUT_OFFSET;
    if (tu_rng_chance(&r, 0.2)) out_layout = tu_rng_chance(&r, 0.5) ? TU_LAYOUT_PADDED : TU_LAYOUT_FORTRAN;
    add_case(s, &L, &c, in_layout, out_layout);
  }
  const int failed = run_list(s, &L, &r, "random case");
  printf("%ld random cases, %d failed\n", s->ncases, failed);
  assert_int_equal(failed, 0);
}

/* Every dtype x policy: a 5x5 median (network) and a 7x7 rank 10 (AUTO:
 * the sorted tile for data up to 32 bits, else the radix select; with NaN
 * omission the radix select forced), on 2x37x45 with batch_dims 1; two modes
 * per (dtype, variant), rotating so that every dtype meets every mode and
 * every variant every mode (64 kernels rather than 160: each is an NVRTC
 * compile; the sorted tile's, several seconds each, in 12 of them). */
static void test_gpu_rank_every_dtype_and_mode(void **state) {
  gpu_state *s = *state;
  SKIP_WITHOUT_CUDA(s);
  tu_rng r;
  tu_rng_seed(&r, s->seed + 1);
  clist L = {0};
  long k = 0;
  for (int dt = NDF_UINT8; dt <= NDF_UINT64; dt++)
    for (int m = 0; m < NDF_MODE_COUNT; m++)
      for (int v = 0; v < 4; v++) {
        const int m0 = (dt + 3 * v) % NDF_MODE_COUNT;
        if (m != m0 && m != (m0 + 2) % NDF_MODE_COUNT) continue;
        rcase c;
        memset(&c, 0, sizeof c);
        ndf_rank_options_init(&c.o);
        c.dt = (ndf_dtype)dt;
        c.nd = 3, c.batch = 1, c.nsp = 2;
        c.shape[0] = 2, c.shape[1] = 37, c.shape[2] = 45;
        c.kind = v < 2 ? K_MEDIAN : K_RANK;
        c.rank = 10;
        c.o.nsize = 1;
        c.o.size[0] = v < 2 ? 5 : 7;
        c.o.mode = (ndf_mode)m;
        c.o.cval = tu_is_float(c.dt) ? -1.5 : 3;
        c.o.batch_dims = 1;
        c.o.nan_policy = v % 2 ? NDF_RANK_NAN_OMIT : NDF_RANK_NAN_PROPAGATE;
        c.pnan = tu_is_float(c.dt) ? 0.05 : 0;
        /* the 7x7 rank 10 has no network: AUTO takes the sorted tile for data up to 32 bits */
        if (v == 3) c.o.algorithm = NDF_RANK_ALGO_SELECT;
        c.want = v < 2 ? "ndf_rank|ALGO=0" : v == 3 || ndf_dtype_size(c.dt) > 4 ? "ndf_rank|ALGO=1" : "ndf_rank_tile2";
        snprintf(c.desc, sizeof c.desc, "%s %s mode=%s policy=%d", v < 2 ? "median 5x5" : "rank 10 of 7x7",
                 ndf_dtype_name(c.dt), ndf_mode_name(c.o.mode), (int)c.o.nan_policy);
        add_fixed(s, &L, &k, &c, TU_LAYOUT_C, TU_LAYOUT_C);
      }
  assert_int_equal(run_list(s, &L, &r, NULL), 0);
}

/* The sliding histogram: uint8/int8, every mode and kind, 2-D and 3-D boxes
 * (even and odd extents, origins), batch axes, strips longer and shorter
 * than the image; AUTO on the 2-D rank case in mode 0. */
static void test_gpu_rank_histogram(void **state) {
  gpu_state *s = *state;
  SKIP_WITHOUT_CUDA(s);
  tu_rng r;
  tu_rng_seed(&r, s->seed + 5);
  clist L = {0};
  long k = 0;
  for (int dt = NDF_UINT8; dt <= NDF_INT8; dt++)
    for (int m = 0; m < NDF_MODE_COUNT; m++)
      for (int v = 0; v < 3; v++) {
        rcase c;
        memset(&c, 0, sizeof c);
        ndf_rank_options_init(&c.o);
        c.dt = (ndf_dtype)dt;
        c.kind = v;
        c.rank = 40;
        c.pct = 83.5;
        c.o.mode = (ndf_mode)m;
        c.o.cval = 77;
        /* AUTO (which prefers the sorted tile where it applies) in one mode, else the histogram */
        const int autoc = v == 1 && m == 0;
        c.o.algorithm = autoc ? NDF_RANK_ALGO_AUTO : NDF_RANK_ALGO_HISTOGRAM;
        if (v < 2) { /* 2-D, 2 batch axes, 9x12 window with an origin */
          c.nd = 4, c.batch = 2, c.nsp = 2;
          c.shape[0] = 2, c.shape[1] = 3, c.shape[2] = 75, c.shape[3] = 70;
          c.o.nsize = 2, c.o.size[0] = 9, c.o.size[1] = 12;
          c.o.norigin = 2, c.o.origin[0] = -2, c.o.origin[1] = 3;
        } else { /* 3-D 3x5x7 */
          c.nd = 3, c.batch = 0, c.nsp = 3;
          c.shape[0] = 9, c.shape[1] = 40, c.shape[2] = 66;
          c.o.nsize = 3, c.o.size[0] = 3, c.o.size[1] = 5, c.o.size[2] = 7;
        }
        c.o.batch_dims = c.batch;
        if (!autoc) c.want = "ndf_rank_hist";
        snprintf(c.desc, sizeof c.desc, "histogram %s mode=%s kind=%d", ndf_dtype_name(c.dt), ndf_mode_name(c.o.mode),
                 v);
        add_fixed(s, &L, &k, &c, v == 1 ? TU_LAYOUT_PADDED : TU_LAYOUT_C, TU_LAYOUT_C);
      }
  assert_int_equal(run_list(s, &L, &r, NULL), 0);
}

/* The sorted tile (NDF_RANK_ALGO_TILE, and AUTO for windows without a
 * network): every dtype up to 32 bits, mode and kind, both NaN policies,
 * even, odd and non-square boxes (1 x 9 to 45 x 45) with origins, batch axes,
 * a 3-D array with a 1 x h x w window, images smaller than a tile and taller
 * than several, strided inputs and outputs.  Its second form
 * (templates/rank_tile2.cu) takes every window here but the 45 x 45 one (the
 * first form's), two of them with its rolled sort (rank.tile2_unroll=0);
 * pass 2 runs three shapes again with rank.tile=first, the first form
 * everywhere. */
static void test_gpu_rank_tile(void **state) {
  gpu_state *s = *state;
  SKIP_WITHOUT_CUDA(s);
  tu_rng r;
  tu_rng_seed(&r, s->seed + 6);
  struct {
    int nd, batch;
    int64_t shape[4], size[3];
  } w[] = {
      {3, 1, {2, 75, 70}, {31, 31}},     {2, 0, {140, 37}, {4, 6}},      {3, 1, {3, 9, 100}, {3, 17}},
      {2, 0, {200, 33}, {9, 1}},         {2, 0, {50, 129}, {1, 9}},      {3, 0, {3, 40, 45}, {1, 5, 5}},
      {4, 2, {2, 2, 20, 30}, {6, 7}},    {2, 0, {5, 6}, {3, 4}},         {2, 0, {300, 64}, {2, 2}},
      {2, 0, {60, 50}, {45, 45}},
  };
  /* Every case is a kernel of its own (NVRTC: about 1 s for the first
   * form, 3-4 s for the second): one variant per shape
   * (v = i % 3), the dtypes rotating over the shapes (all seven), the modes
   * and kinds too (all of them); float32 also runs shapes 1-3 (pass 1: one
   * per variant: NaN omission with 20% NaN, NaN propagation, a NaN cval in
   * constant mode); the first form (pass 2) three shapes, the rolled sort
   * two: 12 kernels of the second form and 4 of the first (all of them from
   * NDF_TEST_CASES = 6 on, one in six below, as every fixed test). */
  static const ndf_dtype dts[] = {NDF_UINT8, NDF_INT8, NDF_UINT16, NDF_INT16, NDF_UINT32, NDF_INT32, NDF_FLOAT32};
  const int ndt = (int)(sizeof dts / sizeof dts[0]);
  clist L = {0};
  long k = 0;
  for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
    for (int v = (int)(i % 3); v == (int)(i % 3); v++)
      for (int pass = 0; pass < 3; pass++) {
        const ndf_dtype rot = dts[(3 * (int)i + v) % ndt];
        if (pass == 1 && (i < 1 || i > 3)) continue; /* float32 under each variant */
        if (pass == 2 && i % 4 != 0) continue;
        if (pass == 2) tune(s->ctx, "rank.tile", "first");
        const int rolled = pass == 0 && i % 4 == 2; /* the second form's rolled sort */
        if (rolled) tune(s->ctx, "rank.tile2_unroll", "0");
        rcase c;
        memset(&c, 0, sizeof c);
        ndf_rank_options_init(&c.o);
        c.dt = pass ? NDF_FLOAT32 : rot;
        c.nd = w[i].nd, c.batch = w[i].batch, c.nsp = w[i].nd - w[i].batch;
        memcpy(c.shape, w[i].shape, sizeof c.shape);
        c.kind = (int)((i + (size_t)v) % 3);
        int64_t ntap = 1;
        c.o.nsize = c.nsp;
        for (int d = 0; d < c.nsp; d++) c.o.size[d] = w[i].size[d], ntap *= w[i].size[d];
        c.rank = tu_rng_int(&r, -ntap, ntap - 1);
        c.pct = v == 0 ? 100.0 : tu_rng_unif(&r) * 200 - 100;
        if (tu_rng_chance(&r, 0.5)) {
          c.o.norigin = c.nsp;
          for (int d = 0; d < c.nsp; d++)
            c.o.origin[d] = tu_rng_int(&r, -(w[i].size[d] / 2), (w[i].size[d] - 1) / 2);
        }
        c.o.mode = (ndf_mode)((i + (size_t)v * 2) % NDF_MODE_COUNT);
        c.o.cval = tu_is_float(c.dt) ? (v == 2 ? NAN : -1.5) : 3;
        c.o.batch_dims = c.batch;
        c.o.nan_policy = v == 1 ? NDF_RANK_NAN_OMIT : NDF_RANK_NAN_PROPAGATE;
        c.o.algorithm = v == 2 ? NDF_RANK_ALGO_AUTO : NDF_RANK_ALGO_TILE;
        c.pnan = tu_is_float(c.dt) ? (v == 1 ? 0.2 : 0.01) : 0;
        if (c.o.algorithm == NDF_RANK_ALGO_TILE) { /* the first form: pass 2 and the 45 x 45 window */
          const int first = pass == 2 || w[i].size[0] == 45;
          c.want = first ? "ndf_rank_tile" : rolled ? "ndf_rank_tile2|SORTU=0" : "ndf_rank_tile2";
          c.unwanted = first ? "ndf_rank_tile2" : "ndf_rank_tile";
        }
        snprintf(c.desc, sizeof c.desc, "tile %s case %zu variant %d pass %d%s mode=%s kind=%d rank=%lld pct=%g",
                 ndf_dtype_name(c.dt), i, v, pass, rolled ? " (rolled sort)" : "", ndf_mode_name(c.o.mode), c.kind,
                 (long long)c.rank, c.pct);
        int il = v == 1 ? (TU_LAYOUT_PADDED | TU_LAYOUT_NEGATIVE) : i % 4 == 3 ? TU_LAYOUT_FORTRAN : TU_LAYOUT_C;
        add_fixed(s, &L, &k, &c, il, v == 2 ? TU_LAYOUT_PADDED : TU_LAYOUT_C);
        tune(s->ctx, "rank.tile", NULL);
        tune(s->ctx, "rank.tile2_unroll", NULL);
      }
  assert_int_equal(run_list(s, &L, &r, NULL), 0);
}

/* The second sorted-tile form's variants (slot PIPE; ADR 0005:
 * rank.tile2_pipe=0 the first order, 1 shared loads ahead of the
 * atomics, 2 also a first window shared by a column's threads, 3 is 1 with
 * cheaper flips, probes, walks, loads and sort, 4 is 3 with a first
 * window shared within a warp; 5 and 6 are 3 with first windows
 * shared by groups of 8 and 4 columns (6: the default), 7 is 5 with a faster select in a
 * word, 8 is 6 with 32 rank searches at a time; "5u"/"3u" with the sort's stages in a switch, rank.tile2_unroll=3;
 * 10, pivots over the ranks' positions instead of bitsets, the default where it applies): windows
 * from 9 to 45 per axis, odd and even, wider than 32 columns (the codes load
 * in chunks), median, rank and percentile, both NaN policies, 8/16/32-bit
 * integers and float32, images smaller than the window, batch axes, origins;
 * the 31 x 31 median of the benchmark in all forms, a
 * NaN-omitting 17 x 17 in forms 2 and 3; the other cases in the default form
 * (10 where it applies, else 6), six on arrays large enough for many tiles inside the array (loads
 * without boundary mapping), six in form 4.  From NDF_TEST_CASES = 6 on
 * every case runs (about 45 kernels of 3-4 s of NVRTC each); below, seven
 * (the default's and forms 5, 6, 7, 8, "5u" and "3u"'s first cases). */
static void test_gpu_rank_tile2_pipe(void **state) {
  gpu_state *s = *state;
  SKIP_WITHOUT_CUDA(s);
  tu_rng r;
  tu_rng_seed(&r, s->seed + 9);
  struct {
    ndf_dtype dt;
    int nd, batch, kind;
    const char *pipe; /* rank.tile2_pipe, NULL: the default (10 where it applies, else 6) */
    int64_t shape[3], size[2];
    double pnan;
    ndf_rank_nan_policy nan;
  } w[] = {
      {NDF_FLOAT32, 2, 0, K_MEDIAN, "0", {150, 300}, {31, 31}, 0.0, NDF_RANK_NAN_PROPAGATE},
      {NDF_FLOAT32, 2, 0, K_MEDIAN, "2", {150, 300}, {31, 31}, 0.0, NDF_RANK_NAN_PROPAGATE},
      {NDF_FLOAT32, 2, 0, K_MEDIAN, NULL, {150, 300}, {31, 31}, 0.0, NDF_RANK_NAN_PROPAGATE},
      {NDF_FLOAT32, 2, 0, K_RANK, NULL, {70, 90}, {20, 20}, 0.01, NDF_RANK_NAN_PROPAGATE},
      {NDF_FLOAT32, 2, 0, K_PERCENTILE, NULL, {81, 77}, {17, 17}, 0.2, NDF_RANK_NAN_OMIT},
      {NDF_FLOAT32, 2, 0, K_PERCENTILE, "2", {81, 77}, {17, 17}, 0.2, NDF_RANK_NAN_OMIT},
      {NDF_FLOAT32, 2, 0, K_PERCENTILE, NULL, {60, 100}, {31, 33}, 0.05, NDF_RANK_NAN_OMIT},
      {NDF_FLOAT32, 2, 0, K_RANK, NULL, {90, 40}, {9, 40}, 0.01, NDF_RANK_NAN_PROPAGATE},
      {NDF_FLOAT32, 2, 0, K_MEDIAN, NULL, {7, 5}, {31, 31}, 0.0, NDF_RANK_NAN_PROPAGATE},
      {NDF_UINT8, 2, 0, K_RANK, NULL, {64, 70}, {9, 9}, 0.0, NDF_RANK_NAN_PROPAGATE},
      {NDF_UINT16, 2, 0, K_PERCENTILE, NULL, {100, 45}, {10, 12}, 0.0, NDF_RANK_NAN_PROPAGATE},
      {NDF_INT16, 3, 1, K_MEDIAN, NULL, {3, 50, 70}, {15, 16}, 0.0, NDF_RANK_NAN_PROPAGATE},
      {NDF_INT32, 2, 0, K_RANK, NULL, {20, 3}, {40, 9}, 0.0, NDF_RANK_NAN_PROPAGATE},
      {NDF_UINT8, 3, 1, K_MEDIAN, NULL, {2, 40, 45}, {45, 20}, 0.0, NDF_RANK_NAN_PROPAGATE},
      {NDF_FLOAT32, 3, 1, K_PERCENTILE, NULL, {2, 33, 65}, {24, 31}, 0.3, NDF_RANK_NAN_OMIT},
      {NDF_FLOAT64, 2, 0, K_MEDIAN, NULL, {40, 45}, {15, 15}, 0.01, NDF_RANK_NAN_PROPAGATE}, /* not the tile: AUTO */
      /* PIPE 1, and the default, many tiles inside the array */
      {NDF_FLOAT32, 2, 0, K_MEDIAN, "1", {150, 300}, {31, 31}, 0.0, NDF_RANK_NAN_PROPAGATE},
      {NDF_FLOAT32, 2, 0, K_MEDIAN, NULL, {300, 260}, {31, 31}, 0.02, NDF_RANK_NAN_OMIT},
      {NDF_FLOAT32, 2, 0, K_RANK, NULL, {200, 210}, {25, 30}, 0.001, NDF_RANK_NAN_PROPAGATE},
      {NDF_UINT8, 2, 0, K_MEDIAN, NULL, {200, 300}, {31, 31}, 0.0, NDF_RANK_NAN_PROPAGATE},
      {NDF_FLOAT32, 3, 1, K_PERCENTILE, NULL, {2, 120, 150}, {31, 31}, 0.001, NDF_RANK_NAN_PROPAGATE},
      {NDF_INT32, 2, 0, K_MEDIAN, NULL, {170, 140}, {21, 27}, 0.0, NDF_RANK_NAN_PROPAGATE},
      /* PIPE 4: the first window shared by a column's two threads within a warp */
      {NDF_FLOAT32, 2, 0, K_MEDIAN, "4", {150, 300}, {31, 31}, 0.0, NDF_RANK_NAN_PROPAGATE},
      {NDF_FLOAT32, 2, 0, K_PERCENTILE, "4", {81, 77}, {17, 17}, 0.2, NDF_RANK_NAN_OMIT},
      {NDF_FLOAT32, 2, 0, K_RANK, "4", {300, 260}, {31, 30}, 0.02, NDF_RANK_NAN_PROPAGATE},
      {NDF_UINT8, 3, 1, K_MEDIAN, "4", {2, 100, 90}, {31, 31}, 0.0, NDF_RANK_NAN_PROPAGATE},
      {NDF_FLOAT32, 2, 0, K_MEDIAN, "4", {7, 5}, {31, 31}, 0.0, NDF_RANK_NAN_PROPAGATE},
      {NDF_INT16, 2, 0, K_RANK, "4", {90, 70}, {9, 40}, 0.0, NDF_RANK_NAN_PROPAGATE},
      /* "3r": PIPE 3 with rank.tile2_unroll=2 (the sort's last stages as a loop) */
      {NDF_FLOAT32, 2, 0, K_MEDIAN, "3r", {150, 300}, {31, 31}, 0.01, NDF_RANK_NAN_OMIT},
      /* PIPE 5 (6) first windows shared by groups of 8 (4) columns; columns past the array's last */
      {NDF_FLOAT32, 2, 0, K_MEDIAN, "5", {150, 300}, {31, 31}, 0.0, NDF_RANK_NAN_PROPAGATE},
      {NDF_FLOAT32, 2, 0, K_MEDIAN, "5", {300, 270}, {31, 31}, 0.02, NDF_RANK_NAN_OMIT},
      {NDF_FLOAT32, 2, 0, K_RANK, "5", {200, 210}, {25, 30}, 0.001, NDF_RANK_NAN_PROPAGATE},
      {NDF_UINT8, 2, 0, K_MEDIAN, "5", {200, 301}, {31, 31}, 0.0, NDF_RANK_NAN_PROPAGATE},
      {NDF_FLOAT32, 3, 1, K_PERCENTILE, "5", {2, 120, 150}, {31, 33}, 0.01, NDF_RANK_NAN_OMIT},
      {NDF_INT16, 2, 0, K_RANK, "5", {90, 70}, {9, 40}, 0.0, NDF_RANK_NAN_PROPAGATE},
      {NDF_FLOAT32, 2, 0, K_MEDIAN, "5", {7, 5}, {31, 31}, 0.0, NDF_RANK_NAN_PROPAGATE},
      {NDF_FLOAT32, 2, 0, K_PERCENTILE, "5", {81, 77}, {17, 17}, 0.2, NDF_RANK_NAN_OMIT},
      {NDF_FLOAT32, 2, 0, K_MEDIAN, "6", {150, 300}, {31, 31}, 0.01, NDF_RANK_NAN_PROPAGATE},
      {NDF_INT32, 2, 0, K_MEDIAN, "6", {170, 140}, {21, 27}, 0.0, NDF_RANK_NAN_PROPAGATE},
      /* PIPE 7: 5 with the faster select in a word; "5u": PIPE 5 with rank.tile2_unroll=3 */
      {NDF_FLOAT32, 2, 0, K_MEDIAN, "7", {150, 300}, {31, 31}, 0.0, NDF_RANK_NAN_PROPAGATE},
      {NDF_FLOAT32, 2, 0, K_PERCENTILE, "7", {300, 270}, {31, 31}, 0.02, NDF_RANK_NAN_OMIT},
      {NDF_UINT8, 2, 0, K_RANK, "7", {200, 301}, {31, 31}, 0.0, NDF_RANK_NAN_PROPAGATE},
      {NDF_FLOAT32, 2, 0, K_MEDIAN, "5u", {150, 300}, {31, 31}, 0.01, NDF_RANK_NAN_PROPAGATE},
      {NDF_FLOAT32, 2, 0, K_MEDIAN, "3u", {150, 300}, {31, 31}, 0.0, NDF_RANK_NAN_PROPAGATE},
      /* PIPE 8: 6 with 32 rank searches at a time */
      {NDF_FLOAT32, 2, 0, K_MEDIAN, "8", {300, 270}, {31, 31}, 0.02, NDF_RANK_NAN_OMIT},
      {NDF_UINT16, 2, 0, K_PERCENTILE, "8", {100, 45}, {10, 12}, 0.0, NDF_RANK_NAN_PROPAGATE},
      {NDF_FLOAT32, 2, 0, K_RANK, "8", {200, 210}, {25, 30}, 0.001, NDF_RANK_NAN_PROPAGATE},
      /* PIPE 3 */
      {NDF_FLOAT32, 2, 0, K_MEDIAN, "3", {300, 270}, {31, 31}, 0.02, NDF_RANK_NAN_OMIT},
      /* PIPE 10 (pivots over posOf, no bitsets; 32-bit data in tiles of at most 64 x 64) */
      {NDF_FLOAT32, 2, 0, K_MEDIAN, "10", {150, 300}, {31, 31}, 0.0, NDF_RANK_NAN_PROPAGATE},
      {NDF_FLOAT32, 2, 0, K_MEDIAN, "10", {300, 270}, {31, 31}, 0.02, NDF_RANK_NAN_OMIT},
      {NDF_FLOAT32, 2, 0, K_RANK, "10", {200, 210}, {25, 30}, 0.001, NDF_RANK_NAN_PROPAGATE},
      {NDF_FLOAT32, 3, 1, K_PERCENTILE, "10", {2, 120, 150}, {31, 33}, 0.01, NDF_RANK_NAN_OMIT},
      {NDF_INT32, 2, 0, K_RANK, "10", {170, 140}, {31, 31}, 0.0, NDF_RANK_NAN_PROPAGATE},
      {NDF_FLOAT32, 2, 0, K_MEDIAN, "10", {7, 5}, {31, 31}, 0.0, NDF_RANK_NAN_PROPAGATE},
      {NDF_FLOAT32, 3, 1, K_PERCENTILE, "10", {2, 33, 65}, {24, 31}, 0.3, NDF_RANK_NAN_OMIT},
      {NDF_UINT8, 2, 0, K_RANK, "3", {200, 301}, {31, 31}, 0.0, NDF_RANK_NAN_PROPAGATE},
  };
  /* Below NDF_TEST_CASES = 6 (the sanitizers' runs: every case is a cold
   * NVRTC compile, slow under memcheck) only the first case of the default
   * and of forms 5, 6, 7, 8, "5u" and "3u". */
  const char *seen[16];
  int nseen = 0;
  clist L = {0};
  /* $NDF_TEST_TILE2_ONLY=P: only the cases of form P (sanitizer runs of one form). */
  const char *only = getenv("NDF_TEST_TILE2_ONLY");
  for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
    if (only && !(w[i].pipe && !strcmp(w[i].pipe, only))) continue;
    if (s->ncases < 6 && !only) {
      const char *pk = w[i].pipe ? w[i].pipe : "";
      if (!(pk[0] == 0 || pk[0] >= '5' || pk[1] == 'u' || !strcmp(pk, "10"))) continue;
      int dup = 0;
      for (int q = 0; q < nseen; q++) dup |= !strcmp(seen[q], pk);
      if (dup || nseen == 16) continue;
      seen[nseen++] = pk;
    }
    if (w[i].pipe) {
      const char pv[3] = {w[i].pipe[0], w[i].pipe[1] >= '0' && w[i].pipe[1] <= '9' ? w[i].pipe[1] : 0, 0};
      tune(s->ctx, "rank.tile2_pipe", pv);
      if (w[i].pipe[1] == 'r') tune(s->ctx, "rank.tile2_unroll", "2");
      if (w[i].pipe[1] == 'u') tune(s->ctx, "rank.tile2_unroll", "3");
    }
    rcase c;
    memset(&c, 0, sizeof c);
    ndf_rank_options_init(&c.o);
    c.dt = w[i].dt;
    c.nd = w[i].nd, c.batch = w[i].batch, c.nsp = w[i].nd - w[i].batch;
    memcpy(c.shape, w[i].shape, sizeof c.shape);
    c.kind = w[i].kind;
    int64_t ntap = 1;
    c.o.nsize = 2;
    for (int d = 0; d < 2; d++) c.o.size[d] = w[i].size[d], ntap *= w[i].size[d];
    c.rank = tu_rng_int(&r, -ntap, ntap - 1);
    c.pct = tu_rng_unif(&r) * 200 - 100;
    if (i > 2 && tu_rng_chance(&r, 0.5)) {
      c.o.norigin = 2;
      for (int d = 0; d < 2; d++) c.o.origin[d] = tu_rng_int(&r, -(w[i].size[d] / 2), (w[i].size[d] - 1) / 2);
    }
    c.o.mode = i < 3 ? NDF_MODE_REFLECT : (ndf_mode)(i % NDF_MODE_COUNT);
    c.o.cval = tu_is_float(c.dt) ? (i % 4 == 1 ? NAN : -1.5) : 3;
    c.o.batch_dims = c.batch;
    c.o.nan_policy = w[i].nan;
    c.o.algorithm = c.dt == NDF_FLOAT64 ? NDF_RANK_ALGO_AUTO : NDF_RANK_ALGO_TILE;
    c.pnan = tu_is_float(c.dt) ? w[i].pnan : 0;
    if (c.dt == NDF_FLOAT64) {
      c.unwanted = "ndf_rank_tile2";
    } else {
      /* the form the case sets (rank.tile2_pipe, rank.tile2_unroll -> slots PIPE, SORTU);
       * unset: the default, whichever it is */
      char ep[16], eu[16];
      assert_int_equal(ndf_ctx_get_tunable(s->ctx, "rank.tile2_pipe", ep, sizeof ep), NDF_OK);
      assert_int_equal(ndf_ctx_get_tunable(s->ctx, "rank.tile2_unroll", eu, sizeof eu), NDF_OK);
      int n = snprintf(c.want_buf, sizeof c.want_buf, "ndf_rank_tile2");
      if (strcmp(ep, "default") != 0) n += snprintf(c.want_buf + n, sizeof c.want_buf - (size_t)n, "|PIPE=%s", ep);
      if (strcmp(eu, "default") != 0) snprintf(c.want_buf + n, sizeof c.want_buf - (size_t)n, "|SORTU=%s", eu);
      c.want = c.want_buf;
    }
    snprintf(c.desc, sizeof c.desc, "tile2 pipe %s case %zu %lldx%lld kind=%d rank=%lld pct=%g mode=%s nan=%s%s%s",
             ndf_dtype_name(c.dt), i, (long long)w[i].size[0], (long long)w[i].size[1], c.kind, (long long)c.rank,
             c.pct, ndf_mode_name(c.o.mode), c.o.nan_policy == NDF_RANK_NAN_OMIT ? "omit" : "propagate",
             w[i].pipe ? " rank.tile2_pipe=" : "", w[i].pipe ? w[i].pipe : "");
    add_case(s, &L, &c, i % 3 == 2 ? (TU_LAYOUT_PADDED | TU_LAYOUT_NEGATIVE) : TU_LAYOUT_C,
             i % 5 == 4 ? TU_LAYOUT_PADDED : TU_LAYOUT_C);
    tune(s->ctx, "rank.tile2_pipe", NULL);
    tune(s->ctx, "rank.tile2_unroll", NULL);
  }
  assert_int_equal(run_list(s, &L, &r, NULL), 0);
}

/* The 3x3 median by sorted rows (the default for 3x3 boxes: ALGO 3, the tile
 * load unrolled), with rank.med3=rows ALGO 2 (the generic tile load) and
 * with rank.med3=network the generated network: every dtype, mode and NaN policy,
 * heavy ties, 2-D, batched 3x3 and a 1x3x3 window of a 3-D array. */
static void test_gpu_rank_median3(void **state) {
  gpu_state *s = *state;
  SKIP_WITHOUT_CUDA(s);
  tu_rng r;
  tu_rng_seed(&r, s->seed + 7);
  /* Every case is a kernel of its own: every dtype runs every variant, the
   * mode rotating so that each variant meets every mode (24 kernels); the
   * network (rank.med3=network, also covered by the random cases) and ALGO 2
   * (rows, the sorted rows without the unrolled tile load) run three each: 30,
   * not the 240 of the full product. */
  clist L = {0};
  long k = 0;
  for (int net = 0; net < 3; net++) {
    if (net) tune(s->ctx, "rank.med3", net == 1 ? "network" : "rows");
    for (int dt = NDF_UINT8; dt <= NDF_FLOAT64; dt++)
      for (int v = 0; v < 3; v++) {
        const int m = (dt + v) % NDF_MODE_COUNT;
        if (net == 1 && dt != (v == 0 ? NDF_FLOAT32 : v == 1 ? NDF_FLOAT64 : NDF_UINT16)) continue;
        if (net == 2 && dt != (v == 0 ? NDF_FLOAT32 : v == 1 ? NDF_FLOAT32 : NDF_INT8)) continue;
        rcase c;
        memset(&c, 0, sizeof c);
        ndf_rank_options_init(&c.o);
        c.dt = (ndf_dtype)dt;
        c.kind = v == 2 ? K_RANK : K_MEDIAN;
        c.rank = 4; /* the median of 9 */
        if (v == 1) { /* 3-D, window 1x3x3 */
          c.nd = 3, c.batch = 0, c.nsp = 3;
          c.shape[0] = 4, c.shape[1] = 70, c.shape[2] = 45;
          c.o.nsize = 3, c.o.size[0] = 1, c.o.size[1] = 3, c.o.size[2] = 3;
        } else {
          c.nd = 4, c.batch = 2, c.nsp = 2;
          c.shape[0] = 2, c.shape[1] = 3, c.shape[2] = 67, c.shape[3] = 40;
          c.o.nsize = 1, c.o.size[0] = 3;
          c.o.norigin = 2, c.o.origin[0] = v == 2 ? -1 : 0, c.o.origin[1] = v == 2 ? 1 : 0;
        }
        c.o.mode = (ndf_mode)m;
        c.o.cval = tu_is_float(c.dt) ? 0.25 : 3;
        c.o.batch_dims = c.batch;
        c.o.nan_policy = v == 1 ? NDF_RANK_NAN_OMIT : NDF_RANK_NAN_PROPAGATE;
        c.pnan = tu_is_float(c.dt) ? 0.03 : 0;
        c.want = net == 0 ? "ndf_rank|ALGO=3" : net == 1 ? "ndf_rank|ALGO=0" : "ndf_rank|ALGO=2";
        snprintf(c.desc, sizeof c.desc, "3x3 median %s mode=%s variant %d rank.med3=%s", ndf_dtype_name(c.dt),
                 ndf_mode_name(c.o.mode), v, net == 0 ? "default" : net == 1 ? "network" : "rows");
        add_fixed(s, &L, &k, &c, v == 2 ? TU_LAYOUT_PADDED : TU_LAYOUT_C, TU_LAYOUT_C);
      }
  }
  tune(s->ctx, "rank.med3", NULL);
  assert_int_equal(run_list(s, &L, &r, NULL), 0);
}

/* The benchmark's workloads (float32, reflect), checked once; the 31 x 31
 * median on 80 x 1024 rows instead of 1024 x 1024 (the same kernel: the
 * tile's 34-row strips, a partial last one; the CPU reference of 1024^2
 * costs 1e9 window elements). */
static void test_gpu_rank_benchmark_shapes(void **state) {
  gpu_state *s = *state;
  SKIP_WITHOUT_CUDA(s);
  tu_rng r;
  tu_rng_seed(&r, s->seed + 2);
  struct {
    int nd, batch;
    int64_t shape[4];
    int size;
  } w[] = {
      {4, 2, {1, 3, 256, 256}, 5}, {4, 2, {8, 3, 256, 256}, 3}, {4, 2, {8, 3, 256, 256}, 5},
      {3, 0, {128, 128, 128}, 3},  {2, 0, {80, 1024}, 31},   {2, 0, {1024, 1024}, 3},
      {2, 0, {1024, 1024}, 7},
  };
  clist L = {0};
  long k = 0;
  for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
    rcase c;
    memset(&c, 0, sizeof c);
    ndf_rank_options_init(&c.o);
    c.dt = NDF_FLOAT32;
    c.nd = w[i].nd, c.batch = w[i].batch, c.nsp = w[i].nd - w[i].batch;
    memcpy(c.shape, w[i].shape, sizeof c.shape);
    c.kind = K_MEDIAN;
    c.o.nsize = 1;
    c.o.size[0] = w[i].size;
    c.o.batch_dims = c.batch;
    snprintf(c.desc, sizeof c.desc, "benchmark workload %zu (median size %d)", i, w[i].size);
    add_fixed(s, &L, &k, &c, TU_LAYOUT_C, TU_LAYOUT_C);
  }
  assert_int_equal(run_list(s, &L, &r, NULL), 0);
}

/* Rejections on CUDA arrays leave the device output untouched. */
static void test_gpu_rank_rejections(void **state) {
  gpu_state *s = *state;
  SKIP_WITHOUT_CUDA(s);
  ndf_ctx *ctx = s->ctx;
  int64_t sh[2] = {16, 20};
  tu_array hin, hout, back;
  tu_rng r;
  tu_rng_seed(&r, s->seed + 3);
  assert_int_equal(tu_array_alloc(&hin, NDF_FLOAT32, 2, sh), 0);
  fill_values(&hin, &r, 0);
  assert_int_equal(tu_array_like(&hout, &hin.arr, TU_LAYOUT_C, &r), 0);
  tu_dev din, dout;
  tu_dev_upload(ctx, &din, &hin);
  tu_dev_upload(ctx, &dout, &hout);
  ndf_rank_options o;
  ndf_rank_options_init(&o);
  o.nsize = 1;
  o.size[0] = 7; /* 49 taps: a network for the median only */
  o.algorithm = NDF_RANK_ALGO_NETWORK;
  ndf_status st = ndf_rank_filter(ctx, &din.arr, &dout.arr, 3, &o);
  assert_int_equal(st, NDF_EINVAL);
  assert_non_null(strstr(ndf_errmsg(ctx), "algorithm"));
  o.algorithm = NDF_RANK_ALGO_TILE;
  o.size[0] = 129; /* 129 x 129 taps: more than the sorted tile takes */
  st = ndf_median_filter(ctx, &din.arr, &dout.arr, &o);
  assert_int_equal(st, NDF_EINVAL);
  assert_non_null(strstr(ndf_errmsg(ctx), "algorithm"));
  o.size[0] = 7;
  o.algorithm = NDF_RANK_ALGO_AUTO;
  st = ndf_percentile_filter(ctx, &din.arr, &dout.arr, 101.0, &o);
  assert_int_equal(st, NDF_EINVAL);
  ndf_array same = din.arr;
  st = ndf_median_filter(ctx, &din.arr, &same, &o);
  assert_int_equal(st, NDF_EINVAL);
  assert_int_equal(ndf_ctx_synchronize(ctx), NDF_OK);
  assert_int_equal(tu_array_like(&back, &hin.arr, TU_LAYOUT_C, &r), 0); /* sized like hout */
  tu_dev_download(ctx, &dout, &back);
  assert_int_equal(tu_poison_check(back.base, back.bytes), -1);
  tu_array_free(&back);
  assert_int_equal(tu_array_alloc(&back, NDF_FLOAT32, 2, sh), 0); /* sized like hin */
  tu_dev_download(ctx, &din, &back);
  assert_memory_equal(back.base, hin.base, hin.bytes);
  tu_array_free(&back);
  tu_dev_free(ctx, &din);
  tu_dev_free(ctx, &dout);
  tu_array_free(&hin);
  tu_array_free(&hout);
}

int main(void) {
  if (!tu_have_cuda()) return 77; /* ctest: skipped */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gpu_rank_rejections),
      cmocka_unit_test(test_gpu_rank_every_dtype_and_mode),
      cmocka_unit_test(test_gpu_rank_histogram),
      cmocka_unit_test(test_gpu_rank_tile),
      cmocka_unit_test(test_gpu_rank_tile2_pipe),
      cmocka_unit_test(test_gpu_rank_median3),
      cmocka_unit_test(test_gpu_rank_benchmark_shapes),
      cmocka_unit_test(test_gpu_rank_random_cases),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
