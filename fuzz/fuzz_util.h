/*
 * fuzz_util.h -- what the libFuzzer targets share: a private scratch
 * directory (made on first use, removed at exit) and a file in it holding
 * the input, for readers that take a path.
 */
#ifndef NDF_FUZZ_UTIL_H
#define NDF_FUZZ_UTIL_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char fuzz_dir_path[256];

static void fuzz_dir_remove(void) {
  DIR *d = opendir(fuzz_dir_path);
  if (!d) return;
  struct dirent *e;
  char p[512];
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
      snprintf(p, sizeof p, "%s/%s", fuzz_dir_path, e->d_name);
      unlink(p);
    }
  closedir(d);
  rmdir(fuzz_dir_path);
}

/* The scratch directory of this process. */
static const char *fuzz_dir(void) {
  if (!fuzz_dir_path[0]) {
    const char *t = getenv("TMPDIR");
    snprintf(fuzz_dir_path, sizeof fuzz_dir_path, "%s/ndf-fuzz-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(fuzz_dir_path)) {
      perror("mkdtemp");
      abort();
    }
    atexit(fuzz_dir_remove);
  }
  return fuzz_dir_path;
}

/* Writes n bytes to the file name in the scratch directory; returns its path
 * (a static buffer, valid until the next call). */
static const char *fuzz_file(const char *name, const void *data, size_t n) {
  static char path[512];
  snprintf(path, sizeof path, "%s/%s", fuzz_dir(), name);
  FILE *f = fopen(path, "wb");
  if (!f || (n && fwrite(data, 1, n, f) != n) || fclose(f) != 0) {
    perror(path);
    abort();
  }
  return path;
}

#endif
