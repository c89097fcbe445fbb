/*
 * test_nvrtc.c -- compiles every specialization family of the spec
 * (gen/spec.lua) with NVRTC for sm_90.  NVRTC needs no GPU, so CI runs this.
 * It also checks the template machinery: unfilled and unknown slots are
 * errors naming the slot.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "templates.generated.h"

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

static void test_every_family_compiles(void **state) {
  ndf_ctx *ctx = *state;
  int major = 0, minor = 0;
  if (ndf__nvrtc_version(&major, &minor) != NDF_OK) {
    print_message("NVRTC is not installed here: %s\n", "skipping");
    skip();
  }
  int total = 0;
  for (int t = 0; t < ndf__ntemplates; t++) {
    const ndf__template *tp = &ndf__templates[t];
    assert_true(tp->nfamily > 0); /* every template carries at least one family */
    for (int f = 0; f < tp->nfamily; f++) {
      ndf__kernel_req req;
      ndf__req_init(&req, tp->name, tp->kernels[0]);
      for (int s = 0; s < tp->nslots; s++) ndf__req_set(&req, tp->slot_names[s], "%s", tp->family[f * tp->nslots + s]);
      int compiled = 0;
      ndf_status st = ndf__jit_warm(ctx, "test_nvrtc", &req, "sm_90", &compiled);
      if (st != NDF_OK) print_error("%s family %d: %s\n", tp->name, f, ndf_errmsg(ctx));
      assert_int_equal(st, NDF_OK);
      assert_int_equal(compiled, 1);
      total++;
    }
  }
  ndf_cache_stats stats;
  ndf_ctx_cache_stats(ctx, &stats);
  print_message("compiled %d specializations with NVRTC %d.%d, %.0f ms in all\n", total, major, minor, stats.compile_ms);
  assert_int_equal((int)stats.compiles, total);
}

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
  for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
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
    ndf__kernel_req req;
    ndf_status st = ndf__rank_cuda_request(ctx, "test_nvrtc", w[i].dt, g.nsp + 1, NULL, &g, taps, n, &sel, &req);
    if (st == NDF_OK) {
      int compiled = 0;
      st = ndf__jit_warm(ctx, "test_nvrtc", &req, "sm_90", &compiled);
      ndf__req_free(&req);
    }
    if (st != NDF_OK) print_error("rank window %zu: %s\n", i, ndf_errmsg(ctx));
    assert_int_equal(st, NDF_OK);
    free(taps);
  }
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
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--child-disk-hit") == 0) return child_disk_hit(argv[2]);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unfilled_slot_is_an_error),
      cmocka_unit_test(test_unknown_slot_is_an_error),
      cmocka_unit_test(test_source_points_back_at_templates),
      cmocka_unit_test(test_compile_error_carries_log),
      cmocka_unit_test(test_disk_hit_does_not_load_nvrtc),
      cmocka_unit_test(test_every_family_compiles),
      cmocka_unit_test(test_rank_requests_compile),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
