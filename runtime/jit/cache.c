/*
 * cache.c -- the disk cache of compiled kernels.
 *
 * One file per entry, <cache dir>/<fnv64(key) in hex>.ndfk:
 *   "NDFCACHE" | u32 format | u32 key length | u64 payload length |
 *   u64 checksum of key and payload | key text | payload
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
#include <unistd.h>

#include "internal.h"

#define MAGIC "NDFCACHE"
#define FORMAT 1u
#define HEADER 32
#define SUFFIX ".ndfk"

static void entry_path(const ndf_ctx *ctx, const char *key, char *path, size_t n) {
  unsigned long long h = ndf__hash_fnv1a64(key, strlen(key), NDF__FNV_SEED);
  snprintf(path, n, "%s/%016llx" SUFFIX, ctx->cache_dir, h);
}

static uint64_t checksum(const char *key, size_t klen, const void *payload, size_t plen) {
  return ndf__hash_fnv1a64(payload, plen, ndf__hash_fnv1a64(key, klen, NDF__FNV_SEED));
}

static void put32(unsigned char *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i)); }
static void put64(unsigned char *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i)); }
static uint32_t get32(const unsigned char *p) { uint32_t v = 0; for (int i = 3; i >= 0; i--) v = (v << 8) | p[i]; return v; }
static uint64_t get64(const unsigned char *p) { uint64_t v = 0; for (int i = 7; i >= 0; i--) v = (v << 8) | p[i]; return v; }

static int read_all(int fd, void *buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, (char *)buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    got += (size_t)r;
  }
  return 0;
}

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

int ndf__cache_open(const char *path, int *not_regular) {
  /* O_NONBLOCK: opening a FIFO would wait for a writer. */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  *not_regular = 0;
  if (fd < 0) return -1;
  int fl = fcntl(fd, F_GETFL);
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
    *not_regular = 1;
    close(fd);
    return -1;
  }
  return fd;
}

/* Reads and validates an entry file.  Returns 0 and fills key/payload
 * (malloc'd), 1 when the file is not there, -1 when it is invalid (not a
 * regular file included). */
static int read_entry(const char *path, char **key, size_t *klen, void **payload, size_t *plen) {
  int odd;
  int fd = ndf__cache_open(path, &odd);
  if (fd < 0) return odd ? -1 : 1;
  struct stat st;
  unsigned char h[HEADER];
  int rc = -1;
  char *k = NULL;
  void *p = NULL;
  if (fstat(fd, &st) != 0 || st.st_size < HEADER || read_all(fd, h, HEADER) != 0) goto out;
  if (memcmp(h, MAGIC, 8) != 0 || get32(h + 8) != FORMAT) goto out;
  uint64_t kl = get32(h + 12), pl = get64(h + 16), sum = get64(h + 24);
  if (kl == 0 || pl == 0 || (uint64_t)st.st_size != HEADER + kl + pl || pl > (1ull << 31)) goto out;
  k = malloc(kl + 1);
  p = malloc(pl);
  if (!k || !p || read_all(fd, k, kl) != 0 || read_all(fd, p, pl) != 0) goto out;
  k[kl] = '\0';
  if (checksum(k, kl, p, pl) != sum) goto out;
  *key = k;
  *klen = kl;
  *payload = p;
  *plen = pl;
  k = NULL;
  p = NULL;
  rc = 0;
out:
  free(k);
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
  int rc = read_entry(path, &k, &klen, payload, len);
  if (rc == 1) return NDF_EIO;
  if (rc == 0 && klen == strlen(key) && memcmp(k, key, klen) == 0) {
    free(k);
    return NDF_OK;
  }
  /* Corrupt, truncated, or another key under this name: delete, recompile. */
  if (rc == 0) free(*payload);
  free(k);
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
  put64(h + 24, checksum(key, klen, payload, len));
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
    int rc = read_entry(path, &k, &kl, &p, &pl);
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
