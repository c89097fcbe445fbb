/*
 * test_kernel_log.c -- the kernel log (ADR 0013) without a GPU (white box):
 * the public queries on a CPU context and after CPU ops (nothing is
 * launched), the ring through ndf__klog_key (numbering, the entries that
 * leave it, out-of-range and NULL queries), the look-up of launched functions
 * in the kernel table (entries made by hand, fake CUfunctions: more than the
 * direct-mapped cache holds) and of a function no entry holds, and
 * testutil's spec matching and text on those entries.  Real launches are
 * checked by the GPU tests' assertions (tu_klog_check), which need a device.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "internal.h"
#include "testutil.h"

static ndf_ctx *cpu_ctx(void) {
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  o.backend = NDF_BACKEND_CPU;
  o.cache_disable = 1;
  ndf_ctx *ctx = NULL;
  assert_int_equal(ndf_ctx_create(&ctx, &o), NDF_OK);
  return ctx;
}

/* A CPU context launches nothing: the log stays empty through CPU ops. */
static void test_cpu_ops_log_nothing(void **state) {
  (void)state;
  ndf_ctx *ctx = cpu_ctx();
  assert_int_equal(ndf_ctx_kernel_count(ctx), 0);
  assert_null(ndf_ctx_kernel_launched(ctx, 0));
  assert_int_equal(ndf_ctx_kernel_count(NULL), 0);
  assert_null(ndf_ctx_kernel_launched(NULL, 0));
  int64_t shape[2] = {17, 23};
  tu_array in, out;
  assert_int_equal(tu_array_alloc(&in, NDF_FLOAT32, 2, shape), 0);
  assert_int_equal(tu_array_alloc(&out, NDF_FLOAT32, 2, shape), 0);
  tu_rng r;
  tu_rng_seed(&r, 7);
  for (int64_t i = 0; i < 17 * 23; i++) tu_set(&in.arr, i, tu_rng_unif(&r));
  ndf_grey_options g;
  ndf_grey_options_init(&g);
  g.nsize = 1;
  g.size[0] = 3;
  assert_int_equal(ndf_grey_erosion(ctx, &in.arr, &out.arr, &g), NDF_OK);
  ndf_rank_options ro;
  ndf_rank_options_init(&ro);
  ro.nsize = 1;
  ro.size[0] = 3;
  assert_int_equal(ndf_median_filter(ctx, &in.arr, &out.arr, &ro), NDF_OK);
  assert_int_equal(ndf_ctx_kernel_count(ctx), 0);
  assert_int_equal(tu_klog_count(ctx, 0, "ndf_grey_taps", NULL), 0);
  char text[256];
  assert_string_equal(tu_klog_text(ctx, 0, text, sizeof text), "(nothing)");
  tu_array_free(&in);
  tu_array_free(&out);
  ndf_ctx_destroy(ctx);
}

/* The ring: launch i is kept while fewer than NDF__KLOG launches followed it. */
static void test_ring(void **state) {
  (void)state;
  ndf_ctx *ctx = cpu_ctx();
  enum { N = NDF__KLOG + 44 };
  static char keys[N][48];
  for (int i = 0; i < N; i++) {
    snprintf(keys[i], sizeof keys[i], "t|k%d|I=%d", i % 5, i);
    ndf__klog_key(ctx, keys[i]);
    assert_int_equal(ndf_ctx_kernel_count(ctx), (uint64_t)i + 1);
    assert_ptr_equal(ndf_ctx_kernel_launched(ctx, (uint64_t)i), keys[i]);
  }
  for (int i = 0; i < N; i++) {
    if (i < N - NDF__KLOG) assert_null(ndf_ctx_kernel_launched(ctx, (uint64_t)i));
    else assert_ptr_equal(ndf_ctx_kernel_launched(ctx, (uint64_t)i), keys[i]);
  }
  assert_null(ndf_ctx_kernel_launched(ctx, N));
  assert_null(ndf_ctx_kernel_launched(ctx, UINT64_MAX));
  /* counts over the kept entries, and what left the log */
  long lost = -1;
  long k0 = 0;
  for (int i = N - NDF__KLOG; i < N; i++) k0 += i % 5 == 0;
  assert_int_equal(tu_klog_count(ctx, 0, "k0", &lost), k0);
  assert_int_equal(lost, N - NDF__KLOG);
  assert_int_equal(tu_klog_count(ctx, N - 10, "k1", &lost), 2);
  assert_int_equal(lost, 0);
  /* k3 ran among the kept entries: found; k3|I=3 left the log: "not run" cannot be told */
  assert_int_equal(tu_klog_check(ctx, 0, "k3", 1, "ring"), 0);
  assert_int_equal(tu_klog_check(ctx, 0, "k3|I=3", 0, "ring (expected to fail)"), 1);
  assert_int_equal(tu_klog_check(ctx, N - 3, "k3|I=3", 0, "ring"), 0);
  /* a function that no module entry holds is logged as "?|?" */
  ndf__klog(ctx, (CUfunction)(uintptr_t)0x1230);
  assert_string_equal(ndf_ctx_kernel_launched(ctx, N), "?|?");
  assert_int_equal(tu_klog_count(ctx, N, "?", NULL), 1);
  ndf_ctx_destroy(ctx);
}

/* The look-up of a launched function in the context's kernel table (jit.c's
 * entries, put there by hand: no module is loaded without a device): every
 * launch logs its own entry's key, also when many functions share a slot of
 * the direct-mapped cache, and a function of no entry logs "?|?". */
static void test_lookup(void **state) {
  (void)state;
  ndf_ctx *ctx = cpu_ctx();
  enum { NE = 3 * NDF__KLOG_FN + 5 };
  static char keys[NE][48];
  for (int i = 0; i < NE; i++) {
    ndf__module_entry *e = calloc(1, sizeof *e);
    assert_non_null(e);
    snprintf(keys[i], sizeof keys[i], "tpl|ndf_fake%d|I=%d", i % 7, i);
    e->key = strdup(keys[i]);
    assert_non_null(e->key);
    e->fn = (CUfunction)(uintptr_t)(0x10000 + 0x40 * (uintptr_t)i); /* fake, never called */
    e->next = ctx->modules;
    ctx->modules = e; /* freed by ndf_ctx_destroy (no module to unload: no CUDA) */
  }
  tu_rng r;
  tu_rng_seed(&r, 11);
  for (int n = 0; n < 2000; n++) {
    const int i = (int)tu_rng_int(&r, 0, NE - 1);
    const uint64_t at = ndf_ctx_kernel_count(ctx);
    ndf__klog(ctx, (CUfunction)(uintptr_t)(0x10000 + 0x40 * (uintptr_t)i));
    const char *got = ndf_ctx_kernel_launched(ctx, at);
    assert_non_null(got);
    assert_string_equal(got, keys[i]);
  }
  const uint64_t at = ndf_ctx_kernel_count(ctx);
  ndf__klog(ctx, (CUfunction)(uintptr_t)0x8);
  ndf__klog(ctx, NULL);
  assert_string_equal(ndf_ctx_kernel_launched(ctx, at), "?|?");
  assert_string_equal(ndf_ctx_kernel_launched(ctx, at + 1), "?|?");
  assert_int_equal(tu_klog_count(ctx, at - 100, "ndf_fake3", NULL) + tu_klog_count(ctx, at - 100, "?", NULL) +
                       tu_klog_count(ctx, at - 100, "ndf_fake0", NULL) + tu_klog_count(ctx, at - 100, "ndf_fake1", NULL) +
                       tu_klog_count(ctx, at - 100, "ndf_fake2", NULL) + tu_klog_count(ctx, at - 100, "ndf_fake4", NULL) +
                       tu_klog_count(ctx, at - 100, "ndf_fake5", NULL) + tu_klog_count(ctx, at - 100, "ndf_fake6", NULL),
                   102);
  ndf_ctx_destroy(ctx);
}

/* Spec matching: the entry point exactly, each SLOT=value exactly; the text. */
static void test_specs(void **state) {
  (void)state;
  ndf_ctx *ctx = cpu_ctx();
  static const char *const keys[] = {
      "rank_tile2|ndf_rank_tile2|T=float|PIPE=3|UNROLL=1|NET=MN(1,2)|MX(3,4)",
      "rank_tile2|ndf_rank_tile2|T=float|PIPE=31|UNROLL=1",
      "rank|ndf_rank|T=uint8_t|ALGO=0",
      "rank|ndf_rank|T=uint8_t|ALGO=0",
      "rank|ndf_rank|T=uint8_t|ALGO=0",
      "ecc|ndf_ecc_pack|T=float",
  };
  const uint64_t mark = tu_klog_mark(ctx);
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) ndf__klog_key(ctx, keys[i]);
  assert_int_equal(tu_klog_count(ctx, mark, "ndf_rank_tile2", NULL), 2);
  assert_int_equal(tu_klog_count(ctx, mark, "ndf_rank_tile2|PIPE=3", NULL), 1);
  assert_int_equal(tu_klog_count(ctx, mark, "ndf_rank_tile2|PIPE=31|T=float", NULL), 1);
  assert_int_equal(tu_klog_count(ctx, mark, "ndf_rank_tile2|PIPE=", NULL), 0);
  assert_int_equal(tu_klog_count(ctx, mark, "ndf_rank_tile", NULL), 0);
  assert_int_equal(tu_klog_count(ctx, mark, "rank_tile2", NULL), 0); /* a template name is not an entry point */
  assert_int_equal(tu_klog_count(ctx, mark, "ndf_rank|ALGO=0", NULL), 3);
  assert_int_equal(tu_klog_count(ctx, mark, "ndf_rank|ALGO=1", NULL), 0);
  assert_int_equal(tu_klog_count(ctx, mark + 5, "ndf_ecc_pack", NULL), 1);
  assert_int_equal(tu_klog_count(ctx, mark, "ndf_ecc_rows||ndf_ecc_pack", NULL), 1);
  assert_int_equal(tu_klog_count(ctx, mark, "ndf_rank|ALGO=1||ndf_rank_tile2|PIPE=3||ndf_ecc_pack", NULL), 2);
  assert_int_equal(tu_klog_count(ctx, mark, "ndf_rank|ALGO=1||ndf_rank_tile2|PIPE=4", NULL), 0);
  assert_int_equal(tu_klog_check(ctx, mark, "ndf_ecc_pack", 1, "specs"), 0);
  assert_int_equal(tu_klog_check(ctx, mark, "ndf_ecc_rows", 0, "specs"), 0);
  assert_int_equal(tu_klog_check(ctx, mark, "ndf_ecc_rows", 1, "specs (expected to fail)"), 1);
  setenv("NDF_TEST_KLOG", "warn", 1);
  assert_int_equal(tu_klog_check(ctx, mark, "ndf_ecc_rows", 1, "specs (expected to warn)"), 0);
  unsetenv("NDF_TEST_KLOG");
  char text[512];
  assert_string_equal(tu_klog_text(ctx, mark + 1, text, sizeof text),
                      "ndf_rank_tile2|T=float|PIPE=31|UNROLL=1, ndf_rank|T=uint8_t|ALGO=0 x3, ndf_ecc_pack|T=float");
  ndf_ctx_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cpu_ops_log_nothing),
      cmocka_unit_test(test_ring),
      cmocka_unit_test(test_lookup),
      cmocka_unit_test(test_specs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
