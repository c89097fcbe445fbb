/*
 * test_cache.c -- the on-disk kernel cache, through the public API only.
 *
 * NVRTC compiles without a GPU, so this runs on CI: ndf_cache_warm fills a
 * temporary cache directory, a fresh context finds the entries on disk, and
 * damaged entries (a flipped byte, a truncated file, another entry's content
 * under the wrong name) are rejected, counted in disk_rejects and recompiled,
 * never reported as errors.  Two processes warming the same key into one
 * directory at once must both succeed and leave a valid entry.  The test skips
 * only when NVRTC itself cannot be loaded.
 *
 * The program re-executes itself (/proc/self/exe --warm-child DIR) for the
 * concurrent writers, so the children start from a clean process.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ndforge.h"
#include "testutil.h"

#define ARCH "sm_90"

/* The specializations the tests warm. */
typedef struct spec {
  const char *op;
  ndf_dtype dtype;
  int ndim;
  ndf_grey_options opt;
  tu_array fp, st;
} spec;

enum { NSPEC = 4 };

typedef struct cache_state {
  char dir[512];
  spec specs[NSPEC];
  int nvrtc_missing;
  char why[512];
} cache_state;

static void make_specs(spec *s) {
  /* 0: erosion float32 3-D size 3 (the brief's example) */
  s[0].op = "grey_erosion";
  s[0].dtype = NDF_FLOAT32;
  s[0].ndim = 3;
  ndf_grey_options_init(&s[0].opt);
  s[0].opt.nsize = 1;
  s[0].opt.size[0] = 3;
  /* 1: dilation float32 3-D size 3, nearest */
  s[1].op = "grey_dilation";
  s[1].dtype = NDF_FLOAT32;
  s[1].ndim = 3;
  ndf_grey_options_init(&s[1].opt);
  s[1].opt.nsize = 1;
  s[1].opt.size[0] = 3;
  s[1].opt.mode = NDF_MODE_NEAREST;
  /* 2: erosion uint8 2-D, irregular footprint, constant */
  s[2].op = "grey_erosion";
  s[2].dtype = NDF_UINT8;
  s[2].ndim = 2;
  ndf_grey_options_init(&s[2].opt);
  int64_t fsh[2] = {3, 4};
  tu_array_alloc(&s[2].fp, NDF_BOOL, 2, fsh);
  static const uint8_t fpv[12] = {1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 0};
  for (int i = 0; i < 12; i++) tu_set(&s[2].fp.arr, i, fpv[i]);
  s[2].opt.footprint = &s[2].fp.arr;
  s[2].opt.mode = NDF_MODE_CONSTANT;
  /* 3: dilation int16 2-D non-flat structure, mirror */
  s[3].op = "grey_dilation";
  s[3].dtype = NDF_INT16;
  s[3].ndim = 2;
  ndf_grey_options_init(&s[3].opt);
  int64_t ssh[2] = {3, 3};
  tu_array_alloc(&s[3].st, NDF_FLOAT64, 2, ssh);
  for (int i = 0; i < 9; i++) tu_set(&s[3].st.arr, i, (i % 4) * 1.5 - 2);
  s[3].opt.structure = &s[3].st.arr;
  s[3].opt.mode = NDF_MODE_MIRROR;
}

static ndf_ctx *new_ctx(const char *dir) {
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  o.cache_dir = dir;
  ndf_ctx *c = NULL;
  ndf_status r = ndf_ctx_create(&c, &o);
  if (r != NDF_OK) fprintf(stderr, "ndf_ctx_create: %s %s\n", ndf_status_name(r), ndf_last_error());
  assert_int_equal(r, NDF_OK);
  return c;
}

static ndf_status warm(ndf_ctx *c, spec *s, int *n) {
  *n = -1;
  return ndf_cache_warm(c, ARCH, s->op, s->dtype, s->ndim, &s->opt, n);
}

/* Warms s in a fresh context on dir and checks the number compiled:
 * want_zero = 1: nothing compiled (all found on disk); 0: at least one. */
static ndf_cache_stats warm_fresh(const char *dir, spec *s, int want_zero, const char *what) {
  ndf_ctx *c = new_ctx(dir);
  int n;
  ndf_status r = warm(c, s, &n);
  if (r != NDF_OK) printf("%s: ndf_cache_warm %s %s: %s\n", what, s->op, ndf_status_name(r), ndf_errmsg(c));
  assert_int_equal(r, NDF_OK);
  if (want_zero ? n != 0 : n < 1) printf("%s: %s compiled %d kernels\n", what, s->op, n);
  if (want_zero) assert_int_equal(n, 0);
  else assert_true(n >= 1);
  ndf_cache_stats st;
  ndf_ctx_cache_stats(c, &st);
  ndf_ctx_destroy(c);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Listing                                                                   */

typedef struct entry {
  char file[1024];
  size_t bytes;
  char key[2048];
} entry;

typedef struct listing {
  entry e[64];
  int n;
  const char *dir;
} listing;

static int list_cb(const char *file, size_t bytes, const char *key, void *ud) {
  listing *l = ud;
  if (l->n >= 64) return 1;
  entry *e = &l->e[l->n++];
  if (file[0] == '/') snprintf(e->file, sizeof e->file, "%s", file);
  else snprintf(e->file, sizeof e->file, "%s/%s", l->dir, file);
  e->bytes = bytes;
  snprintf(e->key, sizeof e->key, "%s", key ? key : "");
  return 0;
}

static void list_dir(const char *dir, listing *l) {
  memset(l, 0, sizeof *l);
  l->dir = dir;
  ndf_ctx *c = new_ctx(dir);
  ndf_status r = ndf_cache_list(c, list_cb, l);
  if (r != NDF_OK) printf("ndf_cache_list: %s\n", ndf_errmsg(c));
  assert_int_equal(r, NDF_OK);
  ndf_ctx_destroy(c);
}

static int in_listing(const listing *l, const char *file) {
  for (int i = 0; i < l->n; i++)
    if (!strcmp(l->e[i].file, file)) return 1;
  return 0;
}

static char *read_all(const char *path, size_t *len) {
  *len = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  *len = fread(b, 1, (size_t)n, f);
  fclose(f);
  return b;
}

static void write_all(const char *path, const char *b, size_t len) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(b, 1, len, f), len);
  fclose(f);
}

/* ------------------------------------------------------------------------ */
/* Setup                                                                     */

static int group_setup(void **state) {
  cache_state *s = calloc(1, sizeof *s);
  unsetenv("NDF_CACHE_DISABLE");
  if (tu_mkdtemp(s->dir, sizeof s->dir, "ndf-test-cache") != 0) return -1;
  make_specs(s->specs);
  /* Probe NVRTC once: the whole program skips when it cannot be loaded. */
  char probe[600];
  snprintf(probe, sizeof probe, "%s/probe", s->dir);
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  o.cache_dir = probe;
  ndf_ctx *c = NULL;
  if (ndf_ctx_create(&c, &o) != NDF_OK) return -1;
  int n;
  ndf_status r = warm(c, &s->specs[0], &n);
  const char *m = ndf_errmsg(c);
  char low[512];
  size_t i = 0;
  for (; m[i] && i + 1 < sizeof low; i++) low[i] = (char)tolower((unsigned char)m[i]);
  low[i] = 0;
  if ((r == NDF_ENODEV || r == NDF_ENOTSUP) && strstr(low, "nvrtc")) {
    s->nvrtc_missing = 1;
    snprintf(s->why, sizeof s->why, "NVRTC cannot be loaded: %s", m);
    printf("%s\n", s->why);
  }
  ndf_ctx_destroy(c);
  tu_rmtree(probe);
  *state = s;
  return 0;
}

static int group_teardown(void **state) {
  cache_state *s = *state;
  if (!s) return 0;
  tu_rmtree(s->dir);
  for (int i = 0; i < NSPEC; i++) {
    tu_array_free(&s->specs[i].fp);
    tu_array_free(&s->specs[i].st);
  }
  free(s);
  return 0;
}

#define SKIP_WITHOUT_NVRTC(s)        \
  do {                               \
    if ((s)->nvrtc_missing) {        \
      printf("skip: %s\n", (s)->why); \
      skip();                        \
    }                                \
  } while (0)

static void subdir(const cache_state *s, const char *name, char *out, size_t len) {
  snprintf(out, len, "%s/%s", s->dir, name);
}

/* ------------------------------------------------------------------------ */
/* Tests                                                                     */

/* Compile, then hit on disk from a fresh context; entries are listed with
 * their key text; the context reports its directory. */
static void test_warm_then_disk_hit(void **state) {
  cache_state *s = *state;
  SKIP_WITHOUT_NVRTC(s);
  char dir[600];
  subdir(s, "basic", dir, sizeof dir);
  ndf_ctx *c = new_ctx(dir);
  assert_non_null(strstr(ndf_ctx_cache_dir(c), "basic"));
  int n;
  ndf_status r = warm(c, &s->specs[0], &n);
  if (r != NDF_OK) printf("ndf_cache_warm: %s %s\n", ndf_status_name(r), ndf_errmsg(c));
  assert_int_equal(r, NDF_OK);
  assert_true(n >= 1);
  ndf_cache_stats st;
  ndf_ctx_cache_stats(c, &st);
  assert_true(st.compiles >= (uint64_t)n);
  assert_true(st.compile_ms > 0.0);
  /* the same context again: nothing to compile */
  int n2;
  assert_int_equal(warm(c, &s->specs[0], &n2), NDF_OK);
  assert_int_equal(n2, 0);
  ndf_ctx_destroy(c);
  /* a fresh context finds it on disk */
  ndf_cache_stats st2 = warm_fresh(dir, &s->specs[0], 1, "disk hit");
  assert_int_equal(st2.compiles, 0);
  assert_int_equal(st2.disk_rejects, 0);
  /* listed, with the key text (which names the target architecture) */
  listing l;
  list_dir(dir, &l);
  assert_true(l.n >= n);
  for (int i = 0; i < l.n; i++) {
    struct stat sb;
    if (stat(l.e[i].file, &sb) != 0) printf("listed file %s does not exist\n", l.e[i].file);
    assert_int_equal(stat(l.e[i].file, &sb), 0);
    assert_int_equal((size_t)sb.st_size, l.e[i].bytes);
    assert_true(strlen(l.e[i].key) > 0);
    if (!strstr(l.e[i].key, ARCH)) printf("key without the arch: %s\n", l.e[i].key);
    assert_non_null(strstr(l.e[i].key, ARCH));
  }
  /* a different arch is a different key */
  c = new_ctx(dir);
  assert_int_equal(ndf_cache_warm(c, "sm_80", s->specs[0].op, s->specs[0].dtype, s->specs[0].ndim,
                                  &s->specs[0].opt, &n2),
                   NDF_OK);
  assert_true(n2 >= 1);
  ndf_ctx_destroy(c);
}

/* ndf_cache_stats: disk_hits counts entries "loaded from the disk cache",
 * by a warm as well as by a launch. */
static void test_warm_counts_disk_hits(void **state) {
  cache_state *s = *state;
  SKIP_WITHOUT_NVRTC(s);
  char dir[600];
  subdir(s, "hits", dir, sizeof dir);
  warm_fresh(dir, &s->specs[1], 0, "first warm");
  ndf_cache_stats st = warm_fresh(dir, &s->specs[1], 1, "disk hit");
  if (st.disk_hits < 1)
    printf("a warm served from disk left disk_hits at %llu (memory_hits %llu, compiles %llu)\n",
           (unsigned long long)st.disk_hits, (unsigned long long)st.memory_hits, (unsigned long long)st.compiles);
  assert_true(st.disk_hits >= 1);
}

/* Bad arguments of the cache calls are EINVAL with a message. */
static void test_warm_bad_arguments(void **state) {
  cache_state *s = *state;
  SKIP_WITHOUT_NVRTC(s);
  char dir[600];
  subdir(s, "badargs", dir, sizeof dir);
  ndf_ctx *c = new_ctx(dir);
  int n;
  spec *p = &s->specs[0];
  assert_int_equal(ndf_cache_warm(c, NULL, p->op, p->dtype, p->ndim, &p->opt, &n), NDF_EINVAL);
  assert_non_null(strstr(ndf_errmsg(c), "arch"));
  assert_int_equal(ndf_cache_warm(c, "banana", p->op, p->dtype, p->ndim, &p->opt, &n), NDF_EINVAL);
  assert_non_null(strstr(ndf_errmsg(c), "arch"));
  assert_int_equal(ndf_cache_warm(c, ARCH, "grey_nonsense", p->dtype, p->ndim, &p->opt, &n), NDF_EINVAL);
  assert_non_null(strstr(ndf_errmsg(c), "op"));
  assert_int_equal(ndf_cache_warm(c, ARCH, NULL, p->dtype, p->ndim, &p->opt, &n), NDF_EINVAL);
  assert_int_equal(ndf_cache_warm(c, ARCH, p->op, (ndf_dtype)42, p->ndim, &p->opt, &n), NDF_EINVAL);
  assert_int_equal(ndf_cache_warm(c, ARCH, p->op, p->dtype, 0, &p->opt, &n), NDF_EINVAL);
  assert_int_equal(ndf_cache_warm(c, ARCH, p->op, p->dtype, NDF_MAX_SPATIAL + 1, &p->opt, &n), NDF_EINVAL);
  assert_int_equal(ndf_cache_warm(c, ARCH, p->op, p->dtype, p->ndim, NULL, &n), NDF_EINVAL);
  ndf_grey_options o = p->opt;
  o.nsize = 0; /* no element */
  assert_int_equal(ndf_cache_warm(c, ARCH, p->op, p->dtype, p->ndim, &o, &n), NDF_EINVAL);
  assert_int_equal(ndf_cache_warm(NULL, ARCH, p->op, p->dtype, p->ndim, &p->opt, &n), NDF_EINVAL);
  assert_int_equal(ndf_cache_list(NULL, list_cb, NULL), NDF_EINVAL);
  assert_int_equal(ndf_cache_clear(NULL, &n), NDF_EINVAL);
  assert_int_equal(tu_count_files(dir), 0);
  ndf_ctx_destroy(c);
}

/* Finds the entries each spec adds, damages them in three ways, and checks
 * that every damaged entry is rejected, recompiled and then valid. */
static void test_damaged_entries_are_recompiled(void **state) {
  cache_state *s = *state;
  SKIP_WITHOUT_NVRTC(s);
  char dir[600];
  subdir(s, "damage", dir, sizeof dir);
  listing before, after;
  int first[NSPEC], count[NSPEC];
  entry all[64];
  int nall = 0;
  list_dir(dir, &before);
  for (int k = 0; k < NSPEC; k++) {
    warm_fresh(dir, &s->specs[k], 0, "first warm");
    list_dir(dir, &after);
    first[k] = nall;
    count[k] = 0;
    for (int i = 0; i < after.n; i++) {
      if (in_listing(&before, after.e[i].file)) continue;
      all[nall++] = after.e[i];
      count[k]++;
    }
    assert_true(count[k] >= 1);
    before = after;
  }
  /* spec 0: a byte flipped in the middle of each of its files */
  for (int i = first[0]; i < first[0] + count[0]; i++) {
    size_t len;
    char *b = read_all(all[i].file, &len);
    assert_non_null(b);
    b[len / 2] ^= 0x5A;
    write_all(all[i].file, b, len);
    free(b);
  }
  /* spec 1: truncated to half */
  for (int i = first[1]; i < first[1] + count[1]; i++) assert_int_equal(truncate(all[i].file, (off_t)(all[i].bytes / 2)), 0);
  /* spec 2: the content of spec 3's first file under spec 2's names */
  size_t len3;
  char *b3 = read_all(all[first[3]].file, &len3);
  assert_non_null(b3);
  for (int i = first[2]; i < first[2] + count[2]; i++) write_all(all[i].file, b3, len3);
  free(b3);

  uint64_t rejects = 0;
  for (int k = 0; k < 3; k++) {
    ndf_cache_stats st = warm_fresh(dir, &s->specs[k], 0, "warm after damage");
    if (st.disk_rejects < 1) printf("spec %d: damaged entry not counted in disk_rejects\n", k);
    assert_true(st.disk_rejects >= 1);
    rejects += st.disk_rejects;
  }
  assert_true(rejects >= 3);
  /* spec 3 was not damaged */
  ndf_cache_stats st3 = warm_fresh(dir, &s->specs[3], 1, "undamaged entry");
  assert_int_equal(st3.disk_rejects, 0);
  /* everything valid again */
  for (int k = 0; k < NSPEC; k++) {
    ndf_cache_stats st = warm_fresh(dir, &s->specs[k], 1, "after recompiling");
    assert_int_equal(st.disk_rejects, 0);
  }
  /* an empty file and a file of garbage under an entry's name */
  write_all(all[first[0]].file, "", 0);
  warm_fresh(dir, &s->specs[0], 0, "empty entry");
  char junk[4096];
  for (size_t i = 0; i < sizeof junk; i++) junk[i] = (char)(i * 131 + 7);
  write_all(all[first[1]].file, junk, sizeof junk);
  ndf_cache_stats stj = warm_fresh(dir, &s->specs[1], 0, "garbage entry");
  assert_true(stj.disk_rejects >= 1);
  warm_fresh(dir, &s->specs[1], 1, "after garbage");
}

/* An entry written by another library version: the key text stored in the
 * file names the version (ndforge.h: the key holds the library version and
 * the file stores the full key), so an edited version must not load.  The
 * file layout is internal: where the version text is not found, say so. */
static void test_other_version_is_rejected(void **state) {
  cache_state *s = *state;
  SKIP_WITHOUT_NVRTC(s);
  char dir[600];
  subdir(s, "version", dir, sizeof dir);
  warm_fresh(dir, &s->specs[2], 0, "first warm");
  listing l;
  list_dir(dir, &l);
  assert_true(l.n >= 1);
  char want[64], other[64];
  snprintf(want, sizeof want, "ndforge %s", ndf_version());
  snprintf(other, sizeof other, "ndforge %s", ndf_version());
  for (char *p = other + 8; *p; p++)
    if (*p >= '0' && *p <= '9') *p = *p == '9' ? '0' : (char)(*p + 1); /* same length, other version */
  int edited = 0;
  for (int i = 0; i < l.n; i++) {
    size_t len;
    char *b = read_all(l.e[i].file, &len);
    assert_non_null(b);
    size_t wl = strlen(want);
    for (size_t j = 0; j + wl <= len; j++) {
      if (memcmp(b + j, want, wl) == 0) {
        memcpy(b + j, other, wl);
        edited++;
        break;
      }
    }
    write_all(l.e[i].file, b, len);
    free(b);
  }
  if (!edited) {
    printf("no entry holds the text \"%s\"; cannot simulate a version change\n", want);
    return;
  }
  ndf_cache_stats st = warm_fresh(dir, &s->specs[2], 0, "warm after a version change");
  assert_true(st.disk_rejects >= 1);
  warm_fresh(dir, &s->specs[2], 1, "after recompiling");
}

/* Child mode: warm spec 0 into argv dir after a start signal on stdin. */
static int warm_child(const char *dir) {
  char go;
  if (read(0, &go, 1) != 1) return 3;
  spec sp[NSPEC];
  memset(sp, 0, sizeof sp);
  make_specs(sp);
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  o.cache_dir = dir;
  ndf_ctx *c = NULL;
  if (ndf_ctx_create(&c, &o) != NDF_OK) return 4;
  int rc = 0;
  for (int k = 0; k < NSPEC && rc == 0; k++) {
    int n;
    ndf_status r = ndf_cache_warm(c, ARCH, sp[k].op, sp[k].dtype, sp[k].ndim, &sp[k].opt, &n);
    if (r != NDF_OK) {
      fprintf(stderr, "child %d: %s %s\n", (int)getpid(), ndf_status_name(r), ndf_errmsg(c));
      rc = 5;
    }
  }
  ndf_ctx_destroy(c);
  for (int k = 0; k < NSPEC; k++) {
    tu_array_free(&sp[k].fp);
    tu_array_free(&sp[k].st);
  }
  return rc;
}

/* Two processes warm the same keys into one empty directory at the same time. */
static void test_concurrent_writers(void **state) {
  cache_state *s = *state;
  SKIP_WITHOUT_NVRTC(s);
  for (int round = 0; round < 2; round++) {
    char dir[600];
    snprintf(dir, sizeof dir, "%s/concurrent%d", s->dir, round);
    enum { NCHILD = 3 };
    pid_t pid[NCHILD];
    int pipes[NCHILD][2];
    for (int i = 0; i < NCHILD; i++) {
      assert_int_equal(pipe(pipes[i]), 0);
      fflush(stdout);
      pid[i] = fork();
      assert_true(pid[i] >= 0);
      if (pid[i] == 0) {
        dup2(pipes[i][0], 0);
        close(pipes[i][0]);
        close(pipes[i][1]);
        execl("/proc/self/exe", "test_cache", "--warm-child", dir, (char *)NULL);
        _exit(99);
      }
      close(pipes[i][0]);
    }
    for (int i = 0; i < NCHILD; i++) { /* start them together */
      assert_int_equal(write(pipes[i][1], "g", 1), 1);
      close(pipes[i][1]);
    }
    for (int i = 0; i < NCHILD; i++) {
      int st = 0;
      assert_int_equal(waitpid(pid[i], &st, 0), pid[i]);
      if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) printf("concurrent writer %d: status 0x%x\n", i, st);
      assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    for (int k = 0; k < NSPEC; k++) {
      ndf_cache_stats st = warm_fresh(dir, &s->specs[k], 1, "after concurrent writers");
      assert_int_equal(st.disk_rejects, 0);
    }
    /* no temporary files left behind: every file is a listed entry, but for
     * nvrtc.id, where the cache remembers which NVRTC it was built with */
    listing l;
    list_dir(dir, &l);
    char idpath[700];
    snprintf(idpath, sizeof idpath, "%s/nvrtc.id", dir);
    int files = tu_count_files(dir) - (access(idpath, F_OK) == 0);
    if (files != l.n) printf("%d files in %s but %d entries listed\n", files, dir, l.n);
    assert_int_equal(files, l.n);
  }
}

/* NDF_CACHE_DISABLE=1 (and cache_disable = 1) write nothing. */
static void test_cache_disable(void **state) {
  cache_state *s = *state;
  SKIP_WITHOUT_NVRTC(s);
  char dir[600];
  subdir(s, "disabled", dir, sizeof dir);
  setenv("NDF_CACHE_DISABLE", "1", 1);
  ndf_ctx *c = new_ctx(dir);
  assert_string_equal(ndf_ctx_cache_dir(c), "");
  int n;
  ndf_status r = warm(c, &s->specs[0], &n);
  if (r != NDF_OK) printf("warm with NDF_CACHE_DISABLE=1: %s\n", ndf_errmsg(c));
  assert_int_equal(r, NDF_OK);
  assert_true(n >= 1);
  ndf_ctx_destroy(c);
  assert_int_equal(tu_count_files(dir), 0);
  unsetenv("NDF_CACHE_DISABLE");
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  o.cache_dir = dir;
  o.cache_disable = 1;
  c = NULL;
  assert_int_equal(ndf_ctx_create(&c, &o), NDF_OK);
  assert_string_equal(ndf_ctx_cache_dir(c), "");
  assert_int_equal(warm(c, &s->specs[1], &n), NDF_OK);
  assert_true(n >= 1);
  ndf_ctx_destroy(c);
  assert_int_equal(tu_count_files(dir), 0);
}

/* cache_dir NULL: $NDF_CACHE_DIR, else $XDG_CACHE_HOME/ndforge. */
static void test_cache_dir_from_environment(void **state) {
  cache_state *s = *state;
  char dir[600], xdg[600];
  subdir(s, "from-env", dir, sizeof dir);
  subdir(s, "xdg", xdg, sizeof xdg);
  char *old = getenv("NDF_CACHE_DIR") ? strdup(getenv("NDF_CACHE_DIR")) : NULL;
  char *oldx = getenv("XDG_CACHE_HOME") ? strdup(getenv("XDG_CACHE_HOME")) : NULL;
  setenv("NDF_CACHE_DIR", dir, 1);
  ndf_ctx *c = new_ctx(NULL);
  if (!strstr(ndf_ctx_cache_dir(c), "from-env")) printf("cache dir: %s\n", ndf_ctx_cache_dir(c));
  assert_non_null(strstr(ndf_ctx_cache_dir(c), "from-env"));
  ndf_ctx_destroy(c);
  unsetenv("NDF_CACHE_DIR");
  setenv("XDG_CACHE_HOME", xdg, 1);
  c = new_ctx(NULL);
  if (!strstr(ndf_ctx_cache_dir(c), "xdg/ndforge")) printf("cache dir: %s\n", ndf_ctx_cache_dir(c));
  assert_non_null(strstr(ndf_ctx_cache_dir(c), "xdg/ndforge"));
  ndf_ctx_destroy(c);
  if (old) setenv("NDF_CACHE_DIR", old, 1);
  if (oldx) setenv("XDG_CACHE_HOME", oldx, 1);
  else unsetenv("XDG_CACHE_HOME");
  free(old);
  free(oldx);
}

/* ndf_cache_clear removes every entry and says how many. */
static void test_clear(void **state) {
  cache_state *s = *state;
  SKIP_WITHOUT_NVRTC(s);
  char dir[600];
  subdir(s, "clear", dir, sizeof dir);
  for (int k = 0; k < NSPEC; k++) warm_fresh(dir, &s->specs[k], 0, "fill");
  listing l;
  list_dir(dir, &l);
  assert_true(l.n >= NSPEC);
  ndf_ctx *c = new_ctx(dir);
  int removed = -1;
  assert_int_equal(ndf_cache_clear(c, &removed), NDF_OK);
  assert_int_equal(removed, l.n);
  ndf_ctx_destroy(c);
  list_dir(dir, &l);
  assert_int_equal(l.n, 0);
  assert_int_equal(tu_count_files(dir), 0);
  warm_fresh(dir, &s->specs[0], 0, "after clear");
  /* clearing an empty or missing directory is fine */
  char none[600];
  subdir(s, "never-created", none, sizeof none);
  c = new_ctx(none);
  removed = -1;
  assert_int_equal(ndf_cache_clear(c, &removed), NDF_OK);
  assert_int_equal(removed, 0);
  ndf_ctx_destroy(c);
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "--warm-child")) return warm_child(argv[2]);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_warm_then_disk_hit),
      cmocka_unit_test(test_warm_counts_disk_hits),
      cmocka_unit_test(test_warm_bad_arguments),
      cmocka_unit_test(test_damaged_entries_are_recompiled),
      cmocka_unit_test(test_other_version_is_rejected),
      cmocka_unit_test(test_concurrent_writers),
      cmocka_unit_test(test_cache_disable),
      cmocka_unit_test(test_cache_dir_from_environment),
      cmocka_unit_test(test_clear),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
