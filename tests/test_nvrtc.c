/*
 * test_nvrtc.c -- compiles the specializations of the spec (gen/spec.lua)
 * with NVRTC for sm_90.  NVRTC needs no GPU, so CI runs this.
 *
 * By default a seeded sample ($NDF_TEST_SEED, printed) of about
 * $NDF_TEST_CASES rows (default 32) of the family tables, shared among the
 * templates by their number of rows, at least one each.  Within a template the
 * rows are picked greedily, each adding the most slot values not yet compiled
 * for that template (ties broken in the seed's random order), so a sample
 * compiles as many distinct values of every slot as its size allows, in
 * combinations that change with the seed.  "test_nvrtc --exhaustive" (the
 * ctest entry test_nvrtc_exhaustive, label "exhaustive") compiles every row.
 * The compiles run on worker threads, one context each.
 *
 * The family rows compile every kernel of their template (NDF__ALL_KERNELS);
 * the runtime compiles one kernel per module, so each kernel of a template
 * with several also compiles alone, and its image must hold it and none of
 * the others (the NDF_KERNEL(name) guards).  Per template the output gives
 * the NVRTC time, wall and CPU (the CPU time is the cost on a busy machine).
 *
 * The rank filter's requests for real windows compile too (every run).
 * It also checks the template machinery: unfilled and unknown slots and
 * unknown kernels are errors naming them; ndf__jit_warm_many and the
 * jit.fast_compile and jit.lean tunables.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "jit.h"
#include "kernel_params.generated.h"
#include "rank/rank.h"
#include "templates.generated.h"
#include "testutil.h"

static int g_exhaustive; /* --exhaustive: every row of every family table */

static int setup(void **state) {
  ndf_ctx_options opt;
  ndf_ctx_options_init(&opt);
  opt.backend = NDF_BACKEND_CPU;
  opt.cache_disable = 1; /* always compile: this test is about NVRTC */
  ndf_ctx *ctx = NULL;
  if (ndf_ctx_create(&ctx, &opt) != NDF_OK) return -1;
  *state = ctx;
  return 0;
}

static int teardown(void **state) {
  ndf_ctx_destroy(*state);
  return 0;
}

/* ---- Compiling many requests on worker threads ---- */

/* One compile: a request (owned; released by nv_compile_all) and its result. */
typedef struct nv_job {
  ndf__kernel_req req;
  int t, f; /* template and family row it came from; t = -1 for others */
  int alone;  /* a kernel alone (not NDF__ALL_KERNELS): its image must hold it and none of the others */
  ndf_status st;
  int compiled;
  double ms, cpu_ms; /* wall and this thread's CPU time of the compile (NVRTC runs on the calling thread) */
  char *err; /* the context's message when st != NDF_OK (malloc'd) */
} nv_job;

typedef struct nv_pool {
  nv_job *jobs;
  int njobs;
  int next; /* the next job to take (under lock) */
  pthread_mutex_t lock;
} nv_pool;

typedef struct nv_worker {
  nv_pool *pool;
  ndf_ctx *ctx;
  uint64_t compiles; /* NVRTC runs of ctx */
} nv_worker;

/* Which kernels of t a CUBIN holds (it names its entry points, NUL-terminated,
 * in its string tables): 1 with kernel, 2 with any other, 3 both. */
static int image_kernels(const void *img, size_t len, const ndf__template *t, const char *kernel) {
  int r = 0;
  for (int k = 0; k < t->nkernels; k++)
    if (memmem(img, len, t->kernels[k], strlen(t->kernels[k]) + 1)) r |= strcmp(t->kernels[k], kernel) == 0 ? 1 : 2;
  return r;
}

/* j->req's kernel alone, on the template's family rows from j->f on until one
 * has it (some kernels exist for some slot values only): no image may hold
 * another kernel of the template. */
static void alone_compile(ndf_ctx *ctx, nv_job *j) {
  const ndf__template *tp = &ndf__templates[j->t];
  char msg[256] = "";
  j->st = NDF_EINTERNAL;
  for (int f = j->f; f < tp->nfamily && !msg[0]; f++) {
    for (int s = 0; s < tp->nslots; s++) ndf__req_set(&j->req, tp->slot_names[s], "%s", tp->family[f * tp->nslots + s]);
    void *img = NULL;
    size_t len = 0;
    ndf_status st = ndf__jit_image(ctx, "test_nvrtc", &j->req, "sm_90", &img, &len);
    if (st != NDF_OK) {
      j->st = st;
      j->err = strdup(ndf_errmsg(ctx));
      return;
    }
    const int has = image_kernels(img, len, tp, j->req.kernel);
    free(img);
    if (has & 2) snprintf(msg, sizeof msg, "family row %d: the image of '%s' holds other kernels", f, j->req.kernel);
    else if (has & 1) {
      j->f = f;
      j->st = NDF_OK;
      j->compiled = 1;
      return;
    }
  }
  if (!msg[0]) snprintf(msg, sizeof msg, "no family row compiles '%s' (its NDF_KERNEL guard)", j->req.kernel);
  j->err = strdup(msg);
}

/* The calling thread's CPU time: a compile's cost without the other processes
 * of a busy machine (wall time counts their share of the cores too). */
static double thread_cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void *nv_work(void *arg) {
  nv_worker *w = arg;
  nv_pool *p = w->pool;
  for (;;) {
    pthread_mutex_lock(&p->lock);
    int i = p->next < p->njobs ? p->next++ : -1;
    pthread_mutex_unlock(&p->lock);
    if (i < 0) break;
    nv_job *j = &p->jobs[i];
    double t0 = tu_now_ms(), c0 = thread_cpu_ms();
    if (j->alone) {
      alone_compile(w->ctx, j);
    } else {
      j->st = ndf__jit_warm(w->ctx, "test_nvrtc", &j->req, "sm_90", &j->compiled);
    }
    j->ms = tu_now_ms() - t0;
    j->cpu_ms = thread_cpu_ms() - c0;
    if (j->st != NDF_OK && !j->err) j->err = strdup(ndf_errmsg(w->ctx));
  }
  ndf_cache_stats stats;
  ndf_ctx_cache_stats(w->ctx, &stats);
  w->compiles = stats.compiles;
  return NULL;
}

/* Compiles every job for sm_90 on one thread per online CPU (1 to 8), each
 * with its own CPU context without disk cache (so NVRTC always runs; the
 * runtime and NVRTC are thread-safe, one request per thread at a time).
 * Returns the number of NVRTC runs; *threads and *wall_ms say how it went.
 * Releases every job's request. */
static uint64_t nv_compile_all(nv_job *jobs, int njobs, int *threads, double *wall_ms) {
  nv_pool pool = {.jobs = jobs, .njobs = njobs};
  pthread_mutex_init(&pool.lock, NULL);
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  int nth = ncpu < 1 ? 1 : ncpu > 8 ? 8 : (int)ncpu;
  nv_worker w[8];
  pthread_t th[8];
  for (int i = 0; i < nth; i++) {
    ndf_ctx_options opt;
    ndf_ctx_options_init(&opt);
    opt.backend = NDF_BACKEND_CPU;
    opt.cache_disable = 1; /* always compile: this test is about NVRTC */
    w[i] = (nv_worker){.pool = &pool};
    assert_int_equal(ndf_ctx_create(&w[i].ctx, &opt), NDF_OK);
  }
  double t0 = tu_now_ms();
  for (int i = 0; i < nth; i++) assert_int_equal(pthread_create(&th[i], NULL, nv_work, &w[i]), 0);
  uint64_t compiles = 0;
  for (int i = 0; i < nth; i++) {
    assert_int_equal(pthread_join(th[i], NULL), 0);
    compiles += w[i].compiles;
    ndf_ctx_destroy(w[i].ctx);
  }
  *wall_ms = tu_now_ms() - t0;
  *threads = nth;
  pthread_mutex_destroy(&pool.lock);
  for (int i = 0; i < njobs; i++) ndf__req_free(&jobs[i].req);
  return compiles;
}

/* Prints every failed job (named by what(job)); returns their number and
 * frees the messages. */
static int nv_failures(nv_job *jobs, int njobs, void (*what)(const nv_job *, char *, size_t)) {
  int failed = 0;
  for (int i = 0; i < njobs; i++) {
    nv_job *j = &jobs[i];
    if (j->st != NDF_OK || j->compiled != 1) {
      char name[128];
      what(j, name, sizeof name);
      print_error("%s: %s\n", name, j->st != NDF_OK ? (j->err ? j->err : ndf_status_name(j->st)) : "NVRTC did not run");
      failed++;
    }
    free(j->err);
    j->err = NULL;
  }
  return failed;
}

/* ---- The spec's family tables ---- */

/* Row f of template t's family table as a request. */
static void family_job(nv_job *j, int t, int f) {
  const ndf__template *tp = &ndf__templates[t];
  memset(j, 0, sizeof *j);
  j->t = t;
  j->f = f;
  ndf__req_init(&j->req, tp->name, NDF__ALL_KERNELS);
  for (int s = 0; s < tp->nslots; s++) ndf__req_set(&j->req, tp->slot_names[s], "%s", tp->family[f * tp->nslots + s]);
}

static void family_what(const nv_job *j, char *buf, size_t n) {
  snprintf(buf, n, "%s family %d", ndf__templates[j->t].name, j->f);
}

/* Appends to jobs k rows of template t: greedily the row adding the most
 * (slot, value) pairs not yet covered, ties to the earlier row of a random
 * permutation (rows adding nothing last, in that order). */
static int sample_rows(int t, int k, tu_rng *rng, nv_job *jobs) {
  const ndf__template *tp = &ndf__templates[t];
  const int nf = tp->nfamily, ns = tp->nslots;
  int *order = malloc((size_t)nf * sizeof *order);
  char *covered = calloc((size_t)nf * ns, 1); /* covered[f*ns+s]: row f's value of slot s is covered */
  char *taken = calloc((size_t)nf, 1);
  assert_true(order && covered && taken);
  for (int i = 0; i < nf; i++) order[i] = i;
  for (int i = nf - 1; i > 0; i--) {
    int r = (int)tu_rng_int(rng, 0, i), x = order[i];
    order[i] = order[r];
    order[r] = x;
  }
  int n = 0;
  while (n < k) {
    int best = -1, best_gain = -1;
    for (int i = 0; i < nf; i++) {
      int f = order[i], gain = 0;
      if (taken[f]) continue;
      for (int s = 0; s < ns; s++) gain += !covered[f * ns + s];
      if (gain > best_gain) best = f, best_gain = gain;
    }
    if (best < 0) break;
    taken[best] = 1;
    family_job(&jobs[n++], t, best);
    for (int s = 0; s < ns; s++) /* every row with the same value of slot s is now covered there */
      for (int f = 0; f < nf; f++)
        if (strcmp(tp->family[f * ns + s], tp->family[best * ns + s]) == 0) covered[f * ns + s] = 1;
  }
  free(order);
  free(covered);
  free(taken);
  return n;
}

static void test_specializations_compile(void **state) {
  (void)state;
  int major = 0, minor = 0;
  if (ndf__nvrtc_version(&major, &minor) != NDF_OK) {
    print_message("NVRTC is not installed here: %s\n", "skipping");
    skip();
  }
  int rows = 0;
  for (int t = 0; t < ndf__ntemplates; t++) {
    assert_true(ndf__templates[t].nfamily > 0); /* every template carries at least one family */
    rows += ndf__templates[t].nfamily;
  }
  nv_job *jobs = calloc((size_t)rows, sizeof *jobs);
  assert_non_null(jobs);
  int njobs = 0;
  if (g_exhaustive) {
    for (int t = 0; t < ndf__ntemplates; t++)
      for (int f = 0; f < ndf__templates[t].nfamily; f++) family_job(&jobs[njobs++], t, f);
  } else {
    tu_rng rng;
    tu_rng_seed(&rng, tu_seed("NDF_TEST_SEED"));
    const long want = tu_env_long("NDF_TEST_CASES", 32);
    for (int t = 0; t < ndf__ntemplates; t++) {
      const int nf = ndf__templates[t].nfamily;
      long k = (long)((double)want * nf / rows + 0.5);
      k = k < 1 ? 1 : k > nf ? nf : k;
      njobs += sample_rows(t, (int)k, &rng, jobs + njobs);
    }
  }
  int threads = 0;
  double wall = 0;
  uint64_t compiles = nv_compile_all(jobs, njobs, &threads, &wall);

  /* Per template: rows compiled, NVRTC time (wall; CPU, and the most CPU of one row). */
  double sum_ms = 0;
  for (int t = 0, j = 0; t < ndf__ntemplates; t++) {
    int n = 0;
    double ms = 0, cpu = 0, most = 0;
    for (; j < njobs && jobs[j].t == t; j++) {
      n++, ms += jobs[j].ms, cpu += jobs[j].cpu_ms;
      most = jobs[j].cpu_ms > most ? jobs[j].cpu_ms : most;
    }
    sum_ms += ms;
    print_message("  %-18s %3d of %3d rows, %6.0f ms, %6.0f ms CPU (at most %5.0f a row)\n", ndf__templates[t].name, n,
                  ndf__templates[t].nfamily, ms, cpu, most);
  }
  print_message("%s: %d of %d specializations with NVRTC %d.%d on %d threads, %.0f ms of compiles, %.0f ms wall\n",
                g_exhaustive ? "exhaustive" : "sample", njobs, rows, major, minor, threads, sum_ms, wall);
  int failed = nv_failures(jobs, njobs, family_what);
  free(jobs);
  assert_int_equal(failed, 0);
  assert_int_equal((int)compiles, njobs);
}

/* Removes a test's cache directory. */
static void rm_dir(const char *dir) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

/* ndf__jit_warm_many: a call's kernels (the three of distance_transform_bf,
 * one of them twice) compile at once into the disk cache; a fresh context then
 * finds every one on disk.  A compile error on a worker thread reaches the
 * context. */
static void test_warm_many(void **state) {
  (void)state;
  if (!ndf__nvrtc(NULL)) skip();
  char dir[] = "/tmp/ndf-test-nvrtc-XXXXXX";
  assert_non_null(mkdtemp(dir));
  static const char *const kn[4] = {"ndf_bf_mark", "ndf_bf_list", "ndf_bf_dist", "ndf_bf_list"};
  ndf__kernel_req req[4];
  const ndf__kernel_req *rp[4];
  for (int k = 0; k < 4; k++) {
    assert_int_equal(ndf__req_distance_bf(&req[k], kn[k], k == 0 ? NDF_FLOAT32 : NDF_UINT8, 2, k == 2 ? 1 : 0), 1);
    rp[k] = &req[k];
  }
  for (int pass = 0; pass < 2; pass++) {
    ndf_ctx_options opt;
    ndf_ctx_options_init(&opt);
    opt.backend = NDF_BACKEND_CPU;
    opt.cache_dir = dir;
    ndf_ctx *ctx = NULL;
    assert_int_equal(ndf_ctx_create(&ctx, &opt), NDF_OK);
    int compiled[4] = {-1, -1, -1, -1};
    const double t0 = tu_now_ms();
    ndf_status st = ndf__jit_warm_many(ctx, "test", rp, 4, "sm_90", compiled);
    const double ms = tu_now_ms() - t0;
    if (st != NDF_OK) print_error("%s\n", ndf_errmsg(ctx));
    assert_int_equal(st, NDF_OK);
    ndf_cache_stats cs;
    ndf_ctx_cache_stats(ctx, &cs);
    print_message("  warm_many pass %d: %.1f ms wall, %llu compiles, %llu disk hits\n", pass, ms,
                  (unsigned long long)cs.compiles, (unsigned long long)cs.disk_hits);
    /* the duplicate (3) is either compiled alongside its twin or found on disk after it */
    for (int k = 0; k < 3; k++) assert_int_equal(compiled[k], pass == 0);
    assert_int_equal(compiled[3] == 0 || pass == 0, 1);
    if (pass == 1) {
      assert_int_equal((int)cs.compiles, 0);
      assert_int_equal((int)cs.disk_hits, 4);
    }
    ndf_ctx_destroy(ctx);
  }
  /* a failure on a worker thread: its status and NVRTC's log in the context */
  ndf_ctx_options opt;
  ndf_ctx_options_init(&opt);
  opt.backend = NDF_BACKEND_CPU;
  opt.cache_disable = 1;
  ndf_ctx *ctx = NULL;
  assert_int_equal(ndf_ctx_create(&ctx, &opt), NDF_OK);
  ndf__req_set(&req[2], "TIN", "no_such_type");
  int compiled[4];
  assert_int_equal(ndf__jit_warm_many(ctx, "test", rp, 3, "sm_90", compiled), NDF_ECOMPILE);
  assert_non_null(strstr(ndf_errmsg(ctx), "no_such_type"));
  ndf_ctx_destroy(ctx);
  rm_dir(dir);
}

/* A CPU-backend context whose disk cache is dir. */
static ndf_ctx *disk_ctx(const char *dir) {
  ndf_ctx *ctx = tu_cpu_ctx(0, dir);
  assert_non_null(ctx);
  return ctx;
}

typedef struct key_count {
  const char *needle;
  int n;
} key_count;

static int key_has(const char *file, size_t bytes, const char *key, void *ud) {
  (void)file, (void)bytes;
  key_count *k = ud;
  k->n += strstr(key, k->needle) != NULL;
  return 0;
}

/* The disk-cache entries whose key holds needle. */
static int keys_with(ndf_ctx *ctx, const char *needle) {
  key_count k = {needle, 0};
  assert_int_equal(ndf_cache_list(ctx, key_has, &k), NDF_OK);
  return k.n;
}

/* req warmed with a compile tunable at values[0], [1], [0]: the first two compile (an entry each, the
 * second's key holding needle), the third finds its entry on disk. */
static void warm_under_tunable(ndf_ctx *ctx, const ndf__kernel_req *req, const char *tunable,
                               const char *const values[2], const char *needle) {
  static const int want[3] = {1, 1, 0};
  for (int i = 0; i < 3; i++) {
    assert_int_equal(ndf_ctx_set_tunable(ctx, tunable, values[i % 2]), NDF_OK);
    int compiled = -1;
    ndf_status st = ndf__jit_warm(ctx, "test", req, "sm_90", &compiled);
    if (st != NDF_OK) print_error("%s\n", ndf_errmsg(ctx));
    assert_int_equal(st, NDF_OK);
    assert_int_equal(compiled, want[i]);
  }
  assert_int_equal(keys_with(ctx, needle), 1);
}

/* jit.fast_compile: an NVRTC option of its templates' compiles and part of
 * their disk keys (off and min are two entries). */
static void test_fast_compile_tunable(void **state) {
  (void)state;
  if (!ndf__nvrtc(NULL)) skip();
  char dir[] = "/tmp/ndf-test-nvrtc-XXXXXX";
  assert_non_null(mkdtemp(dir));
  ndf_ctx *ctx = disk_ctx(dir);
  ndf__kernel_req req;
  assert_int_equal(ndf__req_distance_cdt(&req, "ndf_cdt_rows", NDF_UINT8, 0, 0), 1);
  static const char *const v[2] = {"off", "min"};
  warm_under_tunable(ctx, &req, "jit.fast_compile", v, " --Ofast-compile=min");
  ndf__req_free(&req);
  ndf_ctx_destroy(ctx);
  rm_dir(dir);
}

/* jit.lean (on by default): -DNDF_LEAN=1 in the compiles and disk keys of its
 * templates (ADR 0025); off compiles the forms before them, an entry of its
 * own.  The family rows compile the lean forms (the default); this compiles
 * ndf_ecc_strip2t both ways. */
static void test_lean_tunable(void **state) {
  (void)state;
  if (!ndf__nvrtc(NULL)) skip();
  char dir[] = "/tmp/ndf-test-nvrtc-XXXXXX";
  assert_non_null(mkdtemp(dir));
  ndf_ctx *ctx = disk_ctx(dir);
  ndf__kernel_req req;
  assert_int_equal(ndf__req_ecc(&req, "ndf_ecc_strip2t", NDF_FLOAT32, "float", 2, 0, 0, 0), 1);
  static const char *const v[2] = {"off", "on"};
  warm_under_tunable(ctx, &req, "jit.lean", v, " -DNDF_LEAN=1");
  /* a template it does not name: no option */
  assert_int_equal(ndf_ctx_set_tunable(ctx, "jit.lean", "on"), NDF_OK);
  ndf__kernel_req r2;
  assert_int_equal(ndf__req_distance_cdt(&r2, "ndf_cdt_rows", NDF_UINT8, 0, 0), 1);
  int compiled = -1;
  assert_int_equal(ndf__jit_warm(ctx, "test", &r2, "sm_90", &compiled), NDF_OK);
  assert_int_equal(keys_with(ctx, " -DNDF_LEAN=1"), 1);
  ndf__req_free(&req);
  ndf__req_free(&r2);
  ndf_ctx_destroy(ctx);
  rm_dir(dir);
}

static void alone_what(const nv_job *j, char *buf, size_t n) {
  snprintf(buf, n, "%s kernel %s alone", ndf__templates[j->t].name, j->req.kernel);
}

/* Each kernel of a template with several, alone (the first family row that has it): the
 * runtime compiles one kernel per module, so each NDF_KERNEL(name) guard must
 * keep exactly its kernel. */
static void test_kernels_compile_alone(void **state) {
  (void)state;
  if (!ndf__nvrtc(NULL)) skip();
  int n = 0;
  for (int t = 0; t < ndf__ntemplates; t++) n += ndf__templates[t].nkernels > 1 ? ndf__templates[t].nkernels : 0;
  nv_job *jobs = calloc((size_t)n + 1, sizeof *jobs);
  assert_non_null(jobs);
  int njobs = 0;
  for (int t = 0; t < ndf__ntemplates; t++) {
    const ndf__template *tp = &ndf__templates[t];
    if (tp->nkernels < 2) continue;
    for (int k = 0; k < tp->nkernels; k++) {
      nv_job *j = &jobs[njobs++];
      family_job(j, t, 0);
      j->req.kernel = tp->kernels[k];
      j->alone = 1;
    }
  }
  int threads = 0;
  double wall = 0;
  nv_compile_all(jobs, njobs, &threads, &wall);
  for (int i = 0; i < njobs; i++)
    print_message("  %-16s %-18s %6.0f ms, %6.0f ms CPU\n", ndf__templates[jobs[i].t].name, jobs[i].req.kernel, jobs[i].ms,
                  jobs[i].cpu_ms);
  print_message("kernels alone: %d on %d threads, %.0f ms wall\n", njobs, threads, wall);
  int failed = nv_failures(jobs, njobs, alone_what);
  free(jobs);
  assert_int_equal(failed, 0);
}

static void rank_what(const nv_job *j, char *buf, size_t n) { snprintf(buf, n, "rank window %d", j->f); }

/* The rank filter's requests for real windows (generated networks in a
 * long slot, radix select, 3-D planes, every dtype) compile. */
static void test_rank_requests_compile(void **state) {
  ndf_ctx *ctx = *state;
  int major = 0, minor = 0;
  if (ndf__nvrtc_version(&major, &minor) != NDF_OK) skip();
  struct {
    int nsp, k[3], kind;
    ndf_dtype dt;
    ndf_rank_nan_policy pol;
    ndf_rank_algorithm algo;
  } w[] = {
      {2, {3, 3, 0}, 0, NDF_FLOAT32, NDF_RANK_NAN_PROPAGATE, NDF_RANK_ALGO_AUTO},
      {2, {5, 5, 0}, 0, NDF_FLOAT32, NDF_RANK_NAN_OMIT, NDF_RANK_ALGO_AUTO},
      {2, {7, 7, 0}, 0, NDF_UINT8, NDF_RANK_NAN_PROPAGATE, NDF_RANK_ALGO_AUTO},
      {3, {3, 3, 3}, 2, NDF_FLOAT64, NDF_RANK_NAN_OMIT, NDF_RANK_ALGO_AUTO},
      {3, {3, 3, 3}, 1, NDF_INT16, NDF_RANK_NAN_PROPAGATE, NDF_RANK_ALGO_SELECT},
      {1, {9, 0, 0}, 1, NDF_INT32, NDF_RANK_NAN_PROPAGATE, NDF_RANK_ALGO_AUTO},
      {2, {31, 31, 0}, 0, NDF_FLOAT32, NDF_RANK_NAN_PROPAGATE, NDF_RANK_ALGO_AUTO},
      {2, {31, 31, 0}, 0, NDF_UINT8, NDF_RANK_NAN_PROPAGATE, NDF_RANK_ALGO_AUTO}, /* sliding histogram */
      {3, {3, 5, 7}, 2, NDF_INT8, NDF_RANK_NAN_PROPAGATE, NDF_RANK_ALGO_HISTOGRAM},
  };
  enum { NW = sizeof w / sizeof w[0] };
  nv_job jobs[NW];
  memset(jobs, 0, sizeof jobs);
  for (int i = 0; i < NW; i++) {
    ndf__grey_geom g;
    memset(&g, 0, sizeof g);
    g.nsp = w[i].nsp;
    g.mode = NDF_MODE_REFLECT;
    g.is_box = 1;
    for (int d = 0; d < g.nsp; d++) g.box[d] = w[i].k[d], g.lo[d] = -(w[i].k[d] / 2);
    int64_t n = 1;
    for (int d = 0; d < g.nsp; d++) n *= w[i].k[d];
    int32_t *taps = malloc((size_t)n * g.nsp * sizeof *taps);
    assert_non_null(taps);
    for (int64_t t = 0; t < n; t++) {
      int64_t r = t;
      for (int d = g.nsp - 1; d >= 0; d--) {
        taps[t * g.nsp + d] = (int32_t)(r % w[i].k[d] - w[i].k[d] / 2);
        r /= w[i].k[d];
      }
    }
    ndf__rank_sel sel = {w[i].kind, n / 3, 37.5, w[i].pol, w[i].algo};
    jobs[i].t = -1;
    jobs[i].f = i;
    ndf_status st = ndf__rank_cuda_request(ctx, "test_nvrtc", w[i].dt, g.nsp + 1, NULL, &g, taps, n, &sel, &jobs[i].req);
    if (st != NDF_OK) print_error("rank window %d: %s\n", i, ndf_errmsg(ctx));
    assert_int_equal(st, NDF_OK);
    free(taps);
  }
  int threads = 0;
  double wall = 0;
  nv_compile_all(jobs, NW, &threads, &wall);
  for (int i = 0; i < NW; i++)
    print_message("  rank window %d (%d-D, %s): %.0f ms, %.0f ms CPU\n", i, w[i].nsp, ndf_dtype_name(w[i].dt), jobs[i].ms,
                  jobs[i].cpu_ms);
  print_message("rank windows: %d on %d threads, %.0f ms wall\n", NW, threads, wall);
  assert_int_equal(nv_failures(jobs, NW, rank_what), 0);
}

static void test_unfilled_slot_is_an_error(void **state) {
  ndf_ctx *ctx = *state;
  ndf__kernel_req req;
  ndf__req_init(&req, "grey_taps", "ndf_grey_taps");
  ndf__req_set(&req, "T", "float");
  char *src = ndf__jit_source(ctx, "test", &req, NULL);
  assert_null(src);
  assert_non_null(strstr(ndf_errmsg(ctx), "is not filled"));
}

static void test_unknown_slot_is_an_error(void **state) {
  ndf_ctx *ctx = *state;
  const ndf__template *tp = &ndf__templates[0];
  ndf__kernel_req req;
  ndf__req_init(&req, tp->name, tp->kernels[0]);
  for (int s = 0; s < tp->nslots; s++) ndf__req_set(&req, tp->slot_names[s], "%s", tp->family[s]);
  ndf__req_set(&req, "NO_SUCH_SLOT", "1");
  char *src = ndf__jit_source(ctx, "test", &req, NULL);
  assert_null(src);
  assert_non_null(strstr(ndf_errmsg(ctx), "NO_SUCH_SLOT"));
}

static void test_unknown_kernel_is_an_error(void **state) {
  ndf_ctx *ctx = *state;
  const ndf__template *tp = &ndf__templates[0];
  ndf__kernel_req req;
  ndf__req_init(&req, tp->name, "ndf_no_such_kernel");
  for (int s = 0; s < tp->nslots; s++) ndf__req_set(&req, tp->slot_names[s], "%s", tp->family[s]);
  char *src = ndf__jit_source(ctx, "test", &req, NULL);
  assert_null(src);
  assert_non_null(strstr(ndf_errmsg(ctx), "ndf_no_such_kernel"));
}

static void test_source_points_back_at_templates(void **state) {
  ndf_ctx *ctx = *state;
  const ndf__template *tp = &ndf__templates[0];
  ndf__kernel_req req;
  ndf__req_init(&req, tp->name, tp->kernels[0]);
  for (int s = 0; s < tp->nslots; s++) ndf__req_set(&req, tp->slot_names[s], "%s", tp->family[s]);
  char *src = ndf__jit_source(ctx, "test", &req, NULL);
  assert_non_null(src);
  assert_non_null(strstr(src, "#line 1 \"templates/"));
  assert_null(strstr(src, "NDF_SLOT("));
  free(src);
}

static void test_compile_error_carries_log(void **state) {
  ndf_ctx *ctx = *state;
  if (!ndf__nvrtc(NULL)) skip();
  const ndf__template *tp = &ndf__templates[0];
  ndf__kernel_req req;
  ndf__req_init(&req, tp->name, tp->kernels[0]);
  for (int s = 0; s < tp->nslots; s++) ndf__req_set(&req, tp->slot_names[s], "%s", tp->family[s]);
  ndf__req_set(&req, "T", "no_such_type");
  int compiled = 0;
  ndf_status st = ndf__jit_warm(ctx, "test", &req, "sm_90", &compiled);
  assert_int_equal(st, NDF_ECOMPILE);
  assert_non_null(strstr(ndf_errmsg(ctx), "no_such_type"));   /* NVRTC's log */
  assert_non_null(strstr(ndf_errmsg(ctx), "--gpu-architecture")); /* the options */
  assert_non_null(strstr(ndf_errmsg(ctx), "slots"));          /* the key */
}

/* The first family of the first template, as a request. */
static void first_request(ndf__kernel_req *req) {
  const ndf__template *tp = &ndf__templates[0];
  ndf__req_init(req, tp->name, tp->kernels[0]);
  for (int s = 0; s < tp->nslots; s++) ndf__req_set(req, tp->slot_names[s], "%s", tp->family[s]);
}

static int nvrtc_is_mapped(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  char line[4096];
  int found = 0;
  while (f && fgets(line, sizeof line, f)) found |= strstr(line, "libnvrtc") != NULL;
  if (f) fclose(f);
  return found;
}

/* Child process: a disk hit must come without loading NVRTC (its dlopen costs
 * 5-20 ms of every fresh process's first call otherwise). */
static int child_disk_hit(const char *dir) {
  ndf_ctx_options opt;
  ndf_ctx_options_init(&opt);
  opt.backend = NDF_BACKEND_CPU;
  opt.cache_dir = dir;
  ndf_ctx *ctx = NULL;
  if (ndf_ctx_create(&ctx, &opt) != NDF_OK) return 3;
  ndf__kernel_req req;
  first_request(&req);
  int compiled = -1;
  ndf_status st = ndf__jit_warm(ctx, "child", &req, "sm_90", &compiled);
  int rc = st != NDF_OK ? 4 : compiled != 0 ? 5 : nvrtc_is_mapped() ? 6 : 0;
  if (rc) fprintf(stderr, "child: status %s, compiled %d, nvrtc mapped %d: %s\n", ndf_status_name(st), compiled,
                  nvrtc_is_mapped(), ndf_errmsg(ctx));
  ndf_ctx_destroy(ctx);
  return rc;
}

static void test_disk_hit_does_not_load_nvrtc(void **state) {
  (void)state;
  if (!ndf__nvrtc(NULL)) skip();
  char dir[] = "/tmp/ndf-test-nvrtc-XXXXXX";
  assert_non_null(mkdtemp(dir));
  ndf_ctx_options opt;
  ndf_ctx_options_init(&opt);
  opt.backend = NDF_BACKEND_CPU;
  opt.cache_dir = dir;
  ndf_ctx *ctx = NULL;
  assert_int_equal(ndf_ctx_create(&ctx, &opt), NDF_OK);
  ndf__kernel_req req;
  first_request(&req);
  int compiled = 0;
  assert_int_equal(ndf__jit_warm(ctx, "test", &req, "sm_90", &compiled), NDF_OK);
  assert_int_equal(compiled, 1);
  ndf_ctx_destroy(ctx);
  char *argv[] = {(char *)"/proc/self/exe", (char *)"--child-disk-hit", dir, NULL};
  pid_t pid;
  extern char **environ;
  assert_int_equal(posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, environ), 0);
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  rm_dir(dir);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--child-disk-hit") == 0) return child_disk_hit(argv[2]);
  g_exhaustive = argc == 2 && strcmp(argv[1], "--exhaustive") == 0;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unfilled_slot_is_an_error),
      cmocka_unit_test(test_unknown_slot_is_an_error),
      cmocka_unit_test(test_unknown_kernel_is_an_error),
      cmocka_unit_test(test_source_points_back_at_templates),
      cmocka_unit_test(test_compile_error_carries_log),
      cmocka_unit_test(test_disk_hit_does_not_load_nvrtc),
      cmocka_unit_test(test_warm_many),
      cmocka_unit_test(test_fast_compile_tunable),
      cmocka_unit_test(test_lean_tunable),
      cmocka_unit_test(test_specializations_compile),
      cmocka_unit_test(test_rank_requests_compile),
      cmocka_unit_test(test_kernels_compile_alone),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
