/*
 * cache.c -- the disk cache of compiled kernels.
 *
 * One file per entry, <cache dir>/<fnv64(key) in hex>.ndfk:
 *   "NDFCACHE" | u32 format | u32 key length | u64 payload length |
 *   u64 checksum of key and payload (ndf__cache_checksum) | key text | payload
 * A lookup is one open, one fstat and one read (preadv: header and key into a
 * small buffer, the payload straight into its own), then the checksum.
 * The full key is stored and compared on load, so a hash collision can never
 * load the wrong kernel.  Entries are written to a temporary file in the same
 * directory and renamed into place, so readers never see a torn entry.  A
 * corrupt, truncated or mismatched entry is deleted and counts as a miss.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal.h"
#include "jit.h"

#define MAGIC "NDFCACHE"
#define FORMAT 2u
#define HEADER 32
#define SUFFIX ".ndfk"

static void entry_path(const ndf_ctx *ctx, const char *key, char *path, size_t n) {
  unsigned long long h = ndf__hash_fnv1a64(key, strlen(key), NDF__FNV_SEED);
  snprintf(path, n, "%s/%016llx" SUFFIX, ctx->cache_dir, h);
}

/* The checksum of n bytes from seed: four lanes, each taking every fourth
 * little-endian 64-bit word as lane = rotl((lane ^ w) * K, 29) (a bijection
 * of the lane for any w, so a changed word always changes its lane; four
 * independent multiplies in flight: several bytes a cycle, where byte-wise
 * FNV-1a takes about one), then the tail bytes and the length.  It guards
 * against truncation and bit rot, not an adversary (ADR 0002). */
static uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static uint64_t sum_bytes(const void *data, size_t n, uint64_t seed) {
  const uint64_t K = 0x9E3779B97F4A7C15ull;
  const unsigned char *p = data;
  uint64_t l[4] = {seed, seed ^ 0x243F6A8885A308D3ull, seed ^ 0x13198A2E03707344ull, seed ^ 0xA4093822299F31D0ull};
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int k = 0; k < 4; k++) {
      uint64_t w;
      memcpy(&w, p + i + 8 * k, 8);
      l[k] = rotl64((l[k] ^ w) * K, 29);
    }
  uint64_t h = (uint64_t)n * K;
  for (int k = 0; k < 4; k++) h = rotl64((h ^ l[k]) * K, 29);
  return ndf__hash_fnv1a64(p + i, n - i, h);
}

uint64_t ndf__cache_checksum(const void *key, size_t klen, const void *payload, size_t plen) {
  return sum_bytes(payload, plen, sum_bytes(key, klen, NDF__FNV_SEED));
}

static void put32(unsigned char *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i)); }
static void put64(unsigned char *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i)); }
static uint32_t get32(const unsigned char *p) { uint32_t v = 0; for (int i = 3; i >= 0; i--) v = (v << 8) | p[i]; return v; }
static uint64_t get64(const unsigned char *p) { uint64_t v = 0; for (int i = 7; i >= 0; i--) v = (v << 8) | p[i]; return v; }

static int write_all(int fd, const void *buf, size_t n) {
  size_t put = 0;
  while (put < n) {
    ssize_t r = write(fd, (const char *)buf + put, n - put);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    put += (size_t)r;
  }
  return 0;
}

/* ndf__cache_open, *st the file's status.  O_NONBLOCK: opening a FIFO would
 * wait for a writer; a regular file ignores the flag, so it stays set. */
static int open_regular(const char *path, int *not_regular, struct stat *st) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  *not_regular = 0;
  if (fd < 0) return -1;
  if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
    *not_regular = 1;
    close(fd);
    return -1;
  }
  return fd;
}

int ndf__cache_open(const char *path, int *not_regular) {
  struct stat st;
  return open_regular(path, not_regular, &st);
}

/* Reads and validates an entry file.  Returns 0 and fills key/payload
 * (malloc'd), 1 when the file is not there, -1 when it is invalid (not a
 * regular file included).  want: the key the caller expects (NULL: any); an
 * entry of another key is invalid.  One read: with want, the header and key
 * land in one buffer and the payload in its own (readv). */
static int read_entry(const char *path, const char *want, char **key, size_t *klen, void **payload, size_t *plen) {
  int odd;
  struct stat st;
  int fd = open_regular(path, &odd, &st);
  if (fd < 0) return odd ? -1 : 1;
  int rc = -1;
  unsigned char *head = NULL;
  void *p = NULL;
  if (st.st_size < HEADER) goto out;
  /* the key's length: the expected one (checked against the header below), else read first */
  uint64_t kl;
  if (want) {
    kl = strlen(want);
  } else {
    unsigned char h0[HEADER];
    if (pread(fd, h0, HEADER, 0) != HEADER) goto out;
    kl = get32(h0 + 12);
  }
  if (kl == 0 || HEADER + kl >= (uint64_t)st.st_size || (uint64_t)st.st_size - HEADER - kl > (1ull << 31)) goto out;
  const uint64_t pl = (uint64_t)st.st_size - HEADER - kl;
  head = malloc(HEADER + kl + 1);
  p = malloc(pl);
  if (!head || !p) goto out;
  struct iovec iov[2] = {{head, HEADER + kl}, {p, pl}};
  size_t got = 0;
  while (got < (size_t)st.st_size) { /* one readv unless interrupted or short */
    ssize_t r = preadv(fd, iov, 2, (off_t)got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) goto out;
    got += (size_t)r;
    for (int i = 0; i < 2 && r > 0; i++) {
      size_t take = (size_t)r < iov[i].iov_len ? (size_t)r : iov[i].iov_len;
      iov[i].iov_base = (char *)iov[i].iov_base + take;
      iov[i].iov_len -= take;
      r -= (ssize_t)take;
    }
  }
  if (memcmp(head, MAGIC, 8) != 0 || get32(head + 8) != FORMAT || get32(head + 12) != kl || get64(head + 16) != pl)
    goto out;
  if (want && memcmp(head + HEADER, want, kl) != 0) goto out;
  if (ndf__cache_checksum(head + HEADER, kl, p, pl) != get64(head + 24)) goto out;
  /* the key moves to the front of its buffer */
  memmove(head, head + HEADER, kl);
  head[kl] = '\0';
  *key = (char *)head;
  *klen = kl;
  *payload = p;
  *plen = pl;
  head = NULL;
  p = NULL;
  rc = 0;
out:
  free(head);
  free(p);
  close(fd);
  return rc;
}

static void count_reject(ndf_ctx *ctx) {
  pthread_mutex_lock(&ctx->lock);
  ctx->stats.disk_rejects++;
  pthread_mutex_unlock(&ctx->lock);
}

ndf_status ndf__cache_load(ndf_ctx *ctx, const char *key, void **payload, size_t *len) {
  if (ctx->cache_disabled || !ctx->cache_dir[0]) return NDF_EIO;
  char path[4200];
  entry_path(ctx, key, path, sizeof path);
  char *k = NULL;
  size_t klen = 0;
  int rc = read_entry(path, key, &k, &klen, payload, len);
  if (rc == 1) return NDF_EIO;
  free(k);
  if (rc == 0) return NDF_OK;
  /* Corrupt, truncated, or another key under this name: delete, recompile. */
  *payload = NULL;
  unlink(path);
  count_reject(ctx);
  return NDF_EIO;
}

void ndf__cache_remove(ndf_ctx *ctx, const char *key) {
  if (ctx->cache_disabled || !ctx->cache_dir[0]) return;
  char path[4200];
  entry_path(ctx, key, path, sizeof path);
  if (unlink(path) == 0) count_reject(ctx);
}

_Thread_local int ndf__cache_store_errno;

void ndf__cache_store(ndf_ctx *ctx, const char *key, const void *payload, size_t len) {
  if (ctx->cache_disabled || !ctx->cache_dir[0]) return;
  char path[4200], tmp[4300];
  entry_path(ctx, key, path, sizeof path);
  snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    ndf__cache_store_errno = errno ? errno : EIO;
    return;
  }
  size_t klen = strlen(key);
  unsigned char h[HEADER];
  memcpy(h, MAGIC, 8);
  put32(h + 8, FORMAT);
  put32(h + 12, (uint32_t)klen);
  put64(h + 16, len);
  put64(h + 24, ndf__cache_checksum(key, klen, payload, len));
  int ok = fchmod(fd, 0644) == 0 && write_all(fd, h, HEADER) == 0 && write_all(fd, key, klen) == 0 &&
           write_all(fd, payload, len) == 0 && fsync(fd) == 0;
  ok = (close(fd) == 0) && ok;
  if (!ok || rename(tmp, path) != 0) {
    ndf__cache_store_errno = errno ? errno : EIO;
    unlink(tmp);
  }
}

static int is_entry(const char *name) {
  size_t n = strlen(name), s = strlen(SUFFIX);
  return n > s && strcmp(name + n - s, SUFFIX) == 0;
}

static int is_temp(const char *name) { return strstr(name, SUFFIX ".tmp.") != NULL; }

ndf_status ndf_cache_list(ndf_ctx *ctx, ndf_cache_entry_fn fn, void *ud) {
  if (!ctx || !fn) return ndf__error(ctx, NDF_EINVAL, "ndf_cache_list: bad argument '%s' (NULL)", ctx ? "fn" : "ctx");
  ndf__clear_error(ctx);
  if (ctx->cache_disabled || !ctx->cache_dir[0]) return NDF_OK;
  DIR *d = opendir(ctx->cache_dir);
  if (!d) return ndf__error(ctx, NDF_EIO, "ndf_cache_list: cannot open '%s' (%s)", ctx->cache_dir, strerror(errno));
  struct dirent *de;
  while ((de = readdir(d))) {
    if (!is_entry(de->d_name)) continue;
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", ctx->cache_dir, de->d_name);
    char *k = NULL;
    void *p = NULL;
    size_t kl = 0, pl = 0;
    int rc = read_entry(path, NULL, &k, &kl, &p, &pl);
    int stop = 0;
    if (rc == 0) stop = fn(de->d_name, HEADER + kl + pl, k, ud);
    else if (rc < 0) stop = fn(de->d_name, 0, "(corrupt entry: replaced on next use)", ud);
    free(k);
    free(p);
    if (stop) break;
  }
  closedir(d);
  return NDF_OK;
}

ndf_status ndf_cache_clear(ndf_ctx *ctx, int *removed) {
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "ndf_cache_clear: bad argument 'ctx' (NULL)");
  ndf__clear_error(ctx);
  if (removed) *removed = 0;
  if (ctx->cache_disabled || !ctx->cache_dir[0]) return NDF_OK;
  DIR *d = opendir(ctx->cache_dir);
  if (!d) return ndf__error(ctx, NDF_EIO, "ndf_cache_clear: cannot open '%s' (%s)", ctx->cache_dir, strerror(errno));
  struct dirent *de;
  while ((de = readdir(d))) {
    int id = strncmp(de->d_name, "nvrtc.id", 8) == 0; /* the remembered NVRTC identity (and its temps) */
    if (!is_entry(de->d_name) && !is_temp(de->d_name) && !id) continue;
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", ctx->cache_dir, de->d_name);
    if (unlink(path) == 0 && removed && is_entry(de->d_name)) (*removed)++;
  }
  closedir(d);
  return NDF_OK;
}
