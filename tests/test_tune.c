/*
 * test_tune.c -- tunables and the tuning table without a GPU (white box,
 * docs/adr/0019-tunables-and-autotuning.md): the public set/get/list API and
 * its errors, the table's text form (round trip, corruption, staleness), the
 * lookup by workload, and the tuner's refusal without a device.
 */
#define _GNU_SOURCE 1
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "internal.h"
#include "tune.h"

static ndf_ctx *cpu_ctx(void) {
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  o.backend = NDF_BACKEND_CPU;
  o.cache_disable = 1;
  ndf_ctx *c = NULL;
  assert_int_equal(ndf_ctx_create(&c, &o), NDF_OK);
  return c;
}

static void test_list(void **state) {
  (void)state;
  assert_true(ndf_tunable_count() > 40);
  int seen_ecc3d = 0;
  for (int i = 0; i < ndf_tunable_count(); i++) {
    ndf_tunable_info t;
    assert_int_equal(ndf_tunable_get(i, &t), NDF_OK);
    assert_non_null(strchr(t.name, '.'));
    assert_true(t.doc[0] && t.rule[0] && t.templates[0]);
    if (t.nvalues) assert_true(t.nvalues >= 2 && t.def == 0);
    else assert_true(t.lo <= t.def && t.def <= t.hi);
    seen_ecc3d |= strcmp(t.name, "ecc.3d") == 0;
  }
  assert_true(seen_ecc3d);
  ndf_tunable_info t;
  assert_int_equal(ndf_tunable_get(-1, &t), NDF_EINVAL);
  assert_int_equal(ndf_tunable_get(ndf_tunable_count(), &t), NDF_EINVAL);
}

static void test_set_get(void **state) {
  (void)state;
  ndf_ctx *c = cpu_ctx();
  char buf[64];
  assert_int_equal(ndf_ctx_get_tunable(c, "ecc.3d", buf, sizeof buf), NDF_OK);
  assert_string_equal(buf, "default");
  assert_int_equal(ndf_ctx_set_tunable(c, "ecc.3d", "old"), NDF_OK);
  assert_int_equal(ndf_ctx_get_tunable(c, "ecc.3d", buf, sizeof buf), NDF_OK);
  assert_string_equal(buf, "old");
  const ndf__tune_work w3 = {NDF_UINT8, 3, 1 << 24, 256}, w2 = {NDF_UINT8, 2, 1 << 20, 256};
  assert_int_equal(ndf__tune(c, NDF__TUNE_ECC_3D, &w3), NDF__TUNE_ECC_3D__OLD);
  assert_int_equal(ndf__tune(c, NDF__TUNE_ECC_3D, &w2), 0); /* the rule: 3-D only */
  assert_int_equal(ndf_ctx_set_tunable(c, "ecc.3d", NULL), NDF_OK);
  assert_int_equal(ndf__tune(c, NDF__TUNE_ECC_3D, &w3), 0);
  /* ranges */
  assert_int_equal(ndf_ctx_set_tunable(c, "grey.boxd_ry", "4"), NDF_OK);
  const ndf__tune_work wg = {NDF_FLOAT32, 3, 0, 3};
  assert_int_equal(ndf__tune(c, NDF__TUNE_GREY_BOXD_RY, &wg), 4);
  assert_int_equal(ndf_ctx_set_tunable(c, "grey.boxd_ry", "9"), NDF_EINVAL);
  assert_non_null(strstr(ndf_errmsg(c), "1..8"));
  assert_int_equal(ndf_ctx_set_tunable(c, "grey.boxd_ry", "4x"), NDF_EINVAL);
  /* errors name what is wrong */
  assert_int_equal(ndf_ctx_set_tunable(c, "ecc.nosuch", "old"), NDF_EINVAL);
  assert_non_null(strstr(ndf_errmsg(c), "unknown tunable 'ecc.nosuch'"));
  assert_non_null(strstr(ndf_errmsg(c), "ecc.3d"));
  assert_int_equal(ndf_ctx_set_tunable(c, "ecc.3d", "new"), NDF_EINVAL);
  assert_non_null(strstr(ndf_errmsg(c), "one of auto, old"));
  assert_int_equal(ndf_ctx_set_tunables(c, "edt.rows=warp,rank.tile2_pipe=6"), NDF_OK);
  assert_int_equal(ndf_ctx_get_tunable(c, "rank.tile2_pipe", buf, sizeof buf), NDF_OK);
  assert_string_equal(buf, "6");
  assert_int_equal(ndf_ctx_set_tunables(c, "edt.rows"), NDF_EINVAL);
  assert_int_equal(ndf_ctx_set_tunables(c, "edt.rows=warp,,x"), NDF_EINVAL);
  assert_int_equal(ndf_ctx_set_tunable(NULL, "ecc.3d", "old"), NDF_EINVAL);
  ndf_ctx_destroy(c);
}

static const ndf__tune_ident ID = {"NVIDIA H200", 9, 0, 13000, 13, 0, "0.1.0"};

static void test_table_round_trip(void **state) {
  (void)state;
  ndf__tune_table *t = ndf__tune_table_new();
  const ndf__tune_work a = {NDF_FLOAT32, 3, 256 * 256 * 256, 256}, b = {NDF_UINT8, 2, 1024 * 1024, 9};
  assert_int_equal(ndf__tune_table_put(t, NDF__TUNE_ECC_W3, &a, NDF__TUNE_ECC_W3__8), 0);
  assert_int_equal(ndf__tune_table_put(t, NDF__TUNE_RANK_TILE2_PIPE, &b, NDF__TUNE_RANK_TILE2_PIPE__6), 0);
  assert_int_equal(ndf__tune_table_put(t, NDF__TUNE_ECC_MINMC, &a, 8), 0);
  for (int i = 0; i < 200; i++) { /* growth */
    const ndf__tune_work w = {NDF_FLOAT32, 3, 1, i};
    assert_int_equal(ndf__tune_table_put(t, NDF__TUNE_GREY_LINEV_L, &w, 64 + i), 0);
  }
  for (int i = 0; i < 100; i++) { /* removals keep the others reachable */
    const ndf__tune_work w = {NDF_FLOAT32, 3, 1, i};
    assert_int_equal(ndf__tune_table_put(t, NDF__TUNE_GREY_LINEV_L, &w, -1), 0);
  }
  assert_int_equal(ndf__tune_table_count(t), 103);
  /* the same size class (ceil log2 of the elements) finds the entry */
  const ndf__tune_work a2 = {NDF_FLOAT32, 3, 200 * 200 * 300, 256};
  assert_int_equal(ndf__tune_table_get(t, NDF__TUNE_ECC_W3, &a2), NDF__TUNE_ECC_W3__8);
  const ndf__tune_work a3 = {NDF_FLOAT32, 3, 512 * 512 * 512, 256};
  assert_int_equal(ndf__tune_table_get(t, NDF__TUNE_ECC_W3, &a3), -1);
  char *text = ndf__tune_table_format(t, &ID);
  assert_non_null(text);
  assert_non_null(strstr(text, "entry ecc.w3 float32 3 24 256 8\n"));
  assert_non_null(strstr(text, "entry rank.tile2_pipe uint8 2 20 9 6\n"));
  ndf__tune_table *u = ndf__tune_table_new();
  char why[400];
  assert_int_equal(ndf__tune_table_parse(u, text, strlen(text), &ID, why, sizeof why), 0);
  assert_int_equal(ndf__tune_table_count(u), 103);
  assert_int_equal(ndf__tune_table_get(u, NDF__TUNE_ECC_MINMC, &a), 8);
  const ndf__tune_work w150 = {NDF_FLOAT32, 3, 1, 150};
  assert_int_equal(ndf__tune_table_get(u, NDF__TUNE_GREY_LINEV_L, &w150), 214);
  const ndf__tune_work w50 = {NDF_FLOAT32, 3, 1, 50};
  assert_int_equal(ndf__tune_table_get(u, NDF__TUNE_GREY_LINEV_L, &w50), -1);
  ndf__tune_table_free(u);
  free(text);
  ndf__tune_table_free(t);
}

/* Parses text (which the test may have damaged) against ID: the result and why. */
static int parse(const char *text, char *why, size_t cap) {
  ndf__tune_table *t = ndf__tune_table_new();
  int r = ndf__tune_table_parse(t, text, strlen(text), &ID, why, cap);
  ndf__tune_table_free(t);
  return r;
}

static void test_table_corrupt_and_stale(void **state) {
  (void)state;
  ndf__tune_table *t = ndf__tune_table_new();
  const ndf__tune_work a = {NDF_FLOAT32, 3, 1 << 24, 256};
  assert_int_equal(ndf__tune_table_put(t, NDF__TUNE_ECC_STG, &a, NDF__TUNE_ECC_STG__ON), 0);
  char *text = ndf__tune_table_format(t, &ID), why[400];
  const size_t n = strlen(text);
  assert_int_equal(parse(text, why, sizeof why), 0);
  /* truncated anywhere */
  for (size_t k = 0; k < n; k += 7) {
    char *c = strndup(text, k);
    assert_int_equal(parse(c, why, sizeof why), -1);
    free(c);
  }
  /* one byte changed anywhere: corrupt or (a changed identity with the checksum fixed) never accepted */
  for (size_t k = 0; k + 1 < n; k++) {
    char *c = strdup(text);
    c[k] ^= 0x01;
    assert_true(parse(c, why, sizeof why) < 0);
    free(c);
  }
  assert_int_equal(parse("", why, sizeof why), -1);
  assert_int_equal(parse("garbage\n", why, sizeof why), -1);
  /* another identity: stale, naming the field */
  ndf__tune_ident other = ID;
  other.driver = 12080;
  char *t2 = ndf__tune_table_format(t, &other);
  assert_int_equal(parse(t2, why, sizeof why), -2);
  assert_non_null(strstr(why, "driver 13000"));
  free(t2);
  snprintf(other.version, sizeof other.version, "0.2.0");
  other.driver = ID.driver;
  t2 = ndf__tune_table_format(t, &other);
  assert_int_equal(parse(t2, why, sizeof why), -2);
  assert_non_null(strstr(why, "ndforge 0.1.0"));
  free(t2);
  /* an unknown tunable or value (a spec that changed): stale */
  char head[600];
  snprintf(head, sizeof head, "ndforge-tuning 1\ndevice %s\ncc 9.0\ndriver 13000\nnvrtc 13.0\nndforge 0.1.0\n"
           "entry ecc.nosuch float32 3 24 256 on\n", ID.device);
  char full[800];
  snprintf(full, sizeof full, "%send 1 %016llx\n", head,
           (unsigned long long)ndf__hash_fnv1a64(head, strlen(head), NDF__FNV_SEED));
  assert_int_equal(parse(full, why, sizeof why), -2);
  snprintf(head, sizeof head, "ndforge-tuning 1\ndevice %s\ncc 9.0\ndriver 13000\nnvrtc 13.0\nndforge 0.1.0\n"
           "entry ecc.stg float32 3 24 256 sometimes\n", ID.device);
  snprintf(full, sizeof full, "%send 1 %016llx\n", head,
           (unsigned long long)ndf__hash_fnv1a64(head, strlen(head), NDF__FNV_SEED));
  assert_int_equal(parse(full, why, sizeof why), -2);
  /* a count that does not match */
  snprintf(head, sizeof head, "ndforge-tuning 1\ndevice %s\ncc 9.0\ndriver 13000\nnvrtc 13.0\nndforge 0.1.0\n",
           ID.device);
  snprintf(full, sizeof full, "%send 1 %016llx\n", head,
           (unsigned long long)ndf__hash_fnv1a64(head, strlen(head), NDF__FNV_SEED));
  assert_int_equal(parse(full, why, sizeof why), -1);
  assert_non_null(strstr(why, "count"));
  free(text);
  ndf__tune_table_free(t);
}

/* An options struct's own tunables: checked at the call, in force during it only. */
static void test_per_call(void **state) {
  (void)state;
  ndf_ctx *c = cpu_ctx();
  static float x[64], y[64];
  const int64_t shape[2] = {8, 8};
  ndf_array in, out;
  assert_int_equal(ndf_array_init(&in, x, NDF_DEVICE_CPU, NDF_FLOAT32, 2, shape), NDF_OK);
  assert_int_equal(ndf_array_init(&out, y, NDF_DEVICE_CPU, NDF_FLOAT32, 2, shape), NDF_OK);
  ndf_grey_options g;
  ndf_grey_options_init(&g);
  g.nsize = 1;
  g.size[0] = 3;
  g.tune = "grey.box=classic,grey.boxd_ry=2";
  assert_int_equal(ndf_grey_erosion(c, &in, &out, &g), NDF_OK);
  assert_int_equal(ndf_grey_opening(c, &in, &out, &g), NDF_OK);
  g.tune = "grey.box=nope";
  assert_int_equal(ndf_grey_dilation(c, &in, &out, &g), NDF_EINVAL);
  assert_non_null(strstr(ndf_errmsg(c), "ndf_grey_dilation: bad argument 'tune'"));
  g.tune = "grey.nosuch=1";
  assert_int_equal(ndf_white_tophat(c, &in, &out, &g), NDF_EINVAL);
  assert_non_null(strstr(ndf_errmsg(c), "unknown tunable 'grey.nosuch'"));
  ndf_rank_options r;
  ndf_rank_options_init(&r);
  r.nsize = 1;
  r.size[0] = 3;
  r.tune = "rank.cpu_network=on";
  assert_int_equal(ndf_median_filter(c, &in, &out, &r), NDF_OK);
  r.tune = "rank.cpu_network";
  assert_int_equal(ndf_median_filter(c, &in, &out, &r), NDF_EINVAL);
  /* the call's value wins over the context's, and only while the call runs */
  assert_int_equal(ndf_ctx_set_tunable(c, "ecc.3d", "old"), NDF_OK);
  const ndf__tune_work w3 = {NDF_UINT8, 3, 1 << 24, 256};
  ndf__tune_call tc;
  assert_int_equal(ndf__tune_call_begin(c, "test", "ecc.3d=auto,ecc.w3=8", &tc), NDF_OK);
  assert_int_equal(ndf__tune(c, NDF__TUNE_ECC_3D, &w3), NDF__TUNE_ECC_3D__AUTO);
  assert_int_equal(ndf__tune(c, NDF__TUNE_ECC_W3, &w3), NDF__TUNE_ECC_W3__8);
  ndf_ctx *other = cpu_ctx(); /* another context on the thread: not this call's */
  assert_int_equal(ndf__tune(other, NDF__TUNE_ECC_W3, &w3), 0);
  ndf__tune_call_end(&tc);
  assert_int_equal(ndf__tune(c, NDF__TUNE_ECC_3D, &w3), NDF__TUNE_ECC_3D__OLD);
  assert_int_equal(ndf__tune(c, NDF__TUNE_ECC_W3, &w3), 0);
  ndf_ctx_destroy(other);
  ndf_ctx_destroy(c);
}

/* The look-up a kernel choice costs with a table of a thousand entries in use: printed, and
 * bounded loosely (sanitizer builds run it too; an optimized build takes well under 1 us). */
static void test_lookup_cost(void **state) {
  (void)state;
  ndf__tune_table *t = ndf__tune_table_new();
  for (int i = 0; i < 1000; i++) {
    const ndf__tune_work w = {NDF_FLOAT32, 3, (int64_t)1 << (i % 30), i};
    assert_int_equal(ndf__tune_table_put(t, NDF__TUNE_ECC_MC3, &w, 1 + i % 7), 0);
  }
  const ndf__tune_work probe = {NDF_FLOAT32, 3, (int64_t)1 << 24, 504};
  assert_int_equal(ndf__tune_table_get(t, NDF__TUNE_ECC_MC3, &probe), 1 + 504 % 7);
  struct timespec a, b;
  volatile int sink = 0;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < 200000; i++) {
    const ndf__tune_work w = {NDF_FLOAT32, 3, (int64_t)1 << (i % 30), i % 1200};
    sink += ndf__tune_table_get(t, NDF__TUNE_ECC_MC3, &w);
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  const double ns = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / 200000;
  printf("tuning table look-up: %.1f ns\n", ns);
  assert_true(ns < 20000);
  (void)sink;
  ndf__tune_table_free(t);
}

static ndf_status never(ndf_ctx *ctx, void *user) {
  (void)ctx;
  (void)user;
  return NDF_OK;
}

static void test_tuner_needs_a_device(void **state) {
  (void)state;
  ndf_ctx *c = cpu_ctx();
  ndf_array out;
  static float x[4];
  const int64_t shape[1] = {4};
  assert_int_equal(ndf_array_init(&out, x, NDF_DEVICE_CPU, NDF_FLOAT32, 1, shape), NDF_OK);
  ndf_tune_options o;
  memset(&o, 0, sizeof o);
  o.outputs[0] = &out;
  o.noutputs = 1;
  ndf_tune_result r;
  assert_int_equal(ndf_tune_workload(c, never, NULL, &o, &r), NDF_ENODEV);
  assert_int_equal(ndf_ctx_tuning_save(c), NDF_ENODEV);
  ndf_tuning_status st;
  assert_int_equal(ndf_ctx_tuning_status(c, &st), NDF_OK);
  assert_int_equal(st.state, 1); /* none: no device to name */
  assert_int_equal(ndf_ctx_tuning_use(c, 0), NDF_OK);
  assert_int_equal(ndf_ctx_tuning_status(c, &st), NDF_OK);
  assert_int_equal(st.state, 4);
  ndf_ctx_destroy(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_list),
      cmocka_unit_test(test_set_get),
      cmocka_unit_test(test_table_round_trip),
      cmocka_unit_test(test_table_corrupt_and_stale),
      cmocka_unit_test(test_per_call),
      cmocka_unit_test(test_lookup_cost),
      cmocka_unit_test(test_tuner_needs_a_device),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
