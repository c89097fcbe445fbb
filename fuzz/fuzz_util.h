/*
 * fuzz_util.h -- what the fuzz targets share: a private scratch directory,
 * whole-file writes, and sanitizer defaults (stack traces for UBSan).
 * Header-only: each target is one translation unit plus the library.
 */
#ifndef NDF_FUZZ_UTIL_H
#define NDF_FUZZ_UTIL_H
#define _GNU_SOURCE /* mkdtemp, stderr/stdout assignment in fuzz_cli.c */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* UBSan aborts on the first finding (-fno-sanitize-recover); print where. */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void) { return "print_stacktrace=1:halt_on_error=1"; }

/* Stops the target with a message: libFuzzer saves the input as a crash. */
#define FUZZ_CHECK(cond, ...)                                      \
  do {                                                             \
    if (!(cond)) {                                                 \
      fprintf(stderr, "fuzz check failed (%s:%d): ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                                \
      fprintf(stderr, "\n");                                       \
      abort();                                                     \
    }                                                              \
  } while (0)

static char fuzz_dir[4096]; /* the scratch directory, "" before fuzz_make_dir */

/* Removes every file in the scratch directory (it has no subdirectories). */
static inline void fuzz_clean_dir(void) {
  if (!fuzz_dir[0]) return;
  DIR *d = opendir(fuzz_dir);
  if (!d) return;
  struct dirent *de;
  char path[4400];
  while ((de = readdir(d))) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
    snprintf(path, sizeof path, "%s/%s", fuzz_dir, de->d_name);
    unlink(path);
  }
  closedir(d);
}

static inline void fuzz_remove_dir(void) {
  fuzz_clean_dir();
  if (fuzz_dir[0]) rmdir(fuzz_dir);
  fuzz_dir[0] = '\0';
}

/* Creates ndf-fuzz-XXXXXX, removed again at exit, in /dev/shm where it can
 * (a disk file system's create/rename costs far more than a run), else in
 * $TMPDIR or /tmp. */
static inline void fuzz_make_dir(void) {
  const char *t = getenv("TMPDIR");
  if (access("/dev/shm", W_OK | X_OK) == 0) t = "/dev/shm";
  snprintf(fuzz_dir, sizeof fuzz_dir, "%s/ndf-fuzz-XXXXXX", t && *t ? t : "/tmp");
  if (!mkdtemp(fuzz_dir)) {
    perror("ndf fuzz: mkdtemp");
    abort();
  }
  atexit(fuzz_remove_dir);
}

/* dir/name into out. */
static inline void fuzz_path(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", fuzz_dir, name); }

/* Writes n bytes to path (created or truncated); aborts on failure, which is
 * the harness's problem, not the code under test's. */
static inline void fuzz_write_file(const char *path, const void *data, size_t n) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    perror(path);
    abort();
  }
  const char *p = data;
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w <= 0) {
      perror(path);
      abort();
    }
    p += w;
    n -= (size_t)w;
  }
  close(fd);
}

/* Little-endian reads from the fuzz input, zero past its end. */
typedef struct fuzz_in {
  const uint8_t *p;
  size_t n;
} fuzz_in;
static inline uint8_t fuzz_u8(fuzz_in *in) {
  if (in->n == 0) return 0;
  in->n--;
  return *in->p++;
}
static inline uint32_t fuzz_u32(fuzz_in *in) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= (uint32_t)fuzz_u8(in) << (8 * i);
  return v;
}
static inline uint64_t fuzz_u64(fuzz_in *in) {
  uint64_t v = fuzz_u32(in);
  return v | (uint64_t)fuzz_u32(in) << 32;
}
/* FUZZ_CHECKs that a and b hold the same elements, compared in C order (fortran 0) or
 * Fortran order (1): the round trips of the .npy and NIfTI targets. */
#include "ndfio.h"
static inline void fuzz_check_same_elements(const ndf_array *a, const ndf_array *b, int fortran) {
  size_t esz = ndf_dtype_size(a->dtype);
  enum { CHUNK = 256 };
  unsigned char ba[CHUNK * 8], bb[CHUNK * 8];
  ndfio__iter ia, ib;
  ndfio__iter_init(&ia, a, fortran);
  ndfio__iter_init(&ib, b, fortran);
  for (;;) {
    size_t na = ndfio__gather(&ia, ba, CHUNK), nb = ndfio__gather(&ib, bb, CHUNK);
    FUZZ_CHECK(na == nb, "element counts differ after a round trip (%zu, %zu)", na, nb);
    if (na == 0) return;
    FUZZ_CHECK(memcmp(ba, bb, na * esz) == 0, "elements differ after a round trip");
  }
}

#endif
