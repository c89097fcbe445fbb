/*
 * fuzz_cache.c -- libFuzzer target: the kernel cache's entry parser.  The
 * input is written as the entry file of a fixed key, then loaded
 * (ndf__cache_load: a bad entry is a miss and is deleted, never an error)
 * and listed (ndf_cache_list).  White box: the runtime's internal API.
 */
#include "fuzz_util.h"
#include "internal.h"

static const char *KEY = "fuzz|key";

static int count_entry(const char *file, size_t bytes, const char *key, void *ud) {
  (void)file;
  (void)bytes;
  *(size_t *)ud += strlen(key);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static ndf_ctx *ctx;
  if (!ctx) {
    ndf_ctx_options o;
    ndf_ctx_options_init(&o);
    o.backend = NDF_BACKEND_CPU;
    o.cache_dir = fuzz_dir();
    if (ndf_ctx_create(&ctx, &o) != NDF_OK || !ndf_ctx_cache_dir(ctx)[0]) abort();
  }
  char name[64];
  snprintf(name, sizeof name, "%016llx.ndfk",
           (unsigned long long)ndf__hash_fnv1a64(KEY, strlen(KEY), NDF__FNV_SEED));
  fuzz_file(name, data, size);
  size_t keys = 0;
  if (ndf_cache_list(ctx, count_entry, &keys) != NDF_OK) abort();
  void *payload = NULL;
  size_t len = 0;
  if (ndf__cache_load(ctx, KEY, &payload, &len) == NDF_OK) {
    volatile unsigned char sum = 0;
    for (size_t i = 0; i < len; i++) sum ^= ((const unsigned char *)payload)[i];
    free(payload);
  }
  return 0;
}
