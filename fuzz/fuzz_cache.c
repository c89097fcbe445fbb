/*
 * fuzz_cache.c -- the kernel cache's entry parser (runtime/jit/cache.c) on
 * arbitrary entry files, through ndf_cache_list and ndf__cache_load.
 *
 * Input: one flags byte, then the entry file.  Flag bit 0 rewrites the key
 * and payload lengths of the header (when the file has one) so that they
 * add up to the file size, bit 1 rewrites the checksum to match: without
 * them almost every mutation would stop at the size or checksum test.  The
 * file is stored under the name of a fixed key (KEY) in a private cache
 * directory, listed, and loaded for KEY.
 *
 * Checked: a load succeeds only for an entry holding exactly KEY, returns
 * the payload the file holds, and otherwise deletes the entry; listing
 * reports one entry, valid or corrupt.
 */
#include "fuzz_util.h"

#include <sys/stat.h>

#include "internal.h"
#include "jit.h"

#define KEY "fuzz|op=grey_erosion|dtype=uint8|ndim=2"
enum { HEADER = 32 };

static ndf_ctx *ctx;
static char entry[4400];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  fuzz_make_dir();
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  o.backend = NDF_BACKEND_CPU;
  o.cache_dir = fuzz_dir;
  o.cpu_threads = 1;
  unsetenv("NDF_CACHE_DISABLE");
  if (ndf_ctx_create(&ctx, &o) != NDF_OK) {
    fprintf(stderr, "fuzz_cache: %s\n", ndf_last_error());
    abort();
  }
  /* The entry file name of KEY: store one entry and look. */
  ndf__cache_store(ctx, KEY, "x", 1);
  DIR *d = opendir(fuzz_dir);
  struct dirent *de;
  while (d && (de = readdir(d)))
    if (strstr(de->d_name, ".ndfk")) fuzz_path(entry, sizeof entry, de->d_name);
  if (d) closedir(d);
  if (!entry[0]) {
    fprintf(stderr, "fuzz_cache: the cache stored no entry in %s\n", fuzz_dir);
    abort();
  }
  return 0;
}

static void put32(unsigned char *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i)); }
static void put64(unsigned char *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i)); }
static uint32_t get32(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

typedef struct listing {
  int entries;
  size_t bytes;
} listing;

static int on_entry(const char *file, size_t bytes, const char *key, void *ud) {
  listing *l = ud;
  FUZZ_CHECK(file && key, "NULL name or key");
  l->entries++;
  l->bytes = bytes;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  uint8_t flags = data[0];
  size_t n = size - 1;
  unsigned char *f = malloc(n ? n : 1);
  memcpy(f, data + 1, n);
  if (n >= HEADER && (flags & 1)) {
    uint64_t rest = n - HEADER;
    uint32_t kl = (uint32_t)(get32(f + 12) % (rest + 1));
    put32(f + 12, kl);
    put64(f + 16, rest - kl);
  }
  if (n >= HEADER && (flags & 2)) {
    uint64_t kl = get32(f + 12);
    if (kl <= n - HEADER) {
      put64(f + 24, ndf__cache_checksum(f + HEADER, (size_t)kl, f + HEADER + kl, n - HEADER - (size_t)kl));
    }
  }
  fuzz_write_file(entry, f, n);

  listing l = {0, 0};
  FUZZ_CHECK(ndf_cache_list(ctx, on_entry, &l) == NDF_OK, "ndf_cache_list: %s", ndf_errmsg(ctx));
  FUZZ_CHECK(l.entries == 1, "%d entries listed", l.entries);
  FUZZ_CHECK(l.bytes == 0 || l.bytes == n, "a %zu-byte entry listed as %zu bytes", n, l.bytes);

  void *payload = NULL;
  size_t len = 0;
  ndf_status s = ndf__cache_load(ctx, KEY, &payload, &len);
  struct stat st;
  int exists = stat(entry, &st) == 0;
  if (s == NDF_OK) {
    size_t klen = strlen(KEY);
    FUZZ_CHECK(n == HEADER + klen + len, "loaded %zu payload bytes from a %zu-byte entry", len, n);
    FUZZ_CHECK(memcmp(f + HEADER, KEY, klen) == 0, "loaded an entry of another key");
    FUZZ_CHECK(memcmp(f + HEADER + klen, payload, len) == 0, "the payload differs from the file");
    FUZZ_CHECK(exists, "a valid entry was deleted");
    free(payload);
  } else {
    FUZZ_CHECK(payload == NULL, "a failed load returned a payload");
    FUZZ_CHECK(!exists, "a rejected entry was kept");
  }
  unlink(entry);
  free(f);
  return 0;
}
