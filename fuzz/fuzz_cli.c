/*
 * fuzz_cli.c -- `ndforge run OP ...`: the command line's parsing and
 * validation and the library's checks behind it, on tiny images.
 *
 * The input is the argument list after "ndforge run", one argument per line
 * (at most 32).  Arguments that name a .npy / .nii / .nii.gz file (alone or as
 * the value of --opt=FILE) are files in a private scratch directory that
 * holds a few tiny images (in2.npy, in3.npy, mask.npy, st.npy, st3.npy, fp.npy,
 * lab.npy, in.nii) restored before every run; an input with a '/' anywhere is
 * skipped, so nothing outside that directory is read or written.  The work
 * stays tiny: a --size or --iterations value in int32 range above 16 skips
 * the input (values out of range still reach the parser).
 *
 * Checked: the exit status is 0, 1 or 2; no temporary file is left; a
 * failing command writes no file.  NDF_FUZZ_VERBOSE=1 shows the command's
 * output (it goes to /dev/null otherwise).
 */
#include "fuzz_util.h"

#include <errno.h>
#include <sys/stat.h>

#include "ndfio.h"

int ndforge_main(int argc, char **argv); /* tools/ndforge.c, compiled with -Dmain=ndforge_main */

enum { MAX_ARGS = 32, SIZE_LIMIT = 16 };

typedef struct fixed_file {
  const char *name;
  void *bytes;
  size_t n;
} fixed_file;
static fixed_file fixed[] = {{"in2.npy", 0, 0}, {"in3.npy", 0, 0}, {"mask.npy", 0, 0}, {"st.npy", 0, 0},
                             {"st3.npy", 0, 0}, {"fp.npy", 0, 0},  {"lab.npy", 0, 0},  {"in.nii", 0, 0}};
#define NFIXED (sizeof fixed / sizeof fixed[0])
static FILE *devnull;
static int verbose;

static void *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) abort();
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *b = malloc(len > 0 ? (size_t)len : 1);
  if (!b || fread(b, 1, (size_t)len, f) != (size_t)len) abort();
  fclose(f);
  *n = (size_t)len;
  return b;
}

/* Writes one fixed image with ndfio and keeps its bytes for the restores. */
static void make_fixed(int k, ndf_dtype dtype, int ndim, const int64_t *shape, const uint8_t *values) {
  ndf_array a;
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) n *= shape[d];
  size_t esz = ndf_dtype_size(dtype);
  unsigned char *buf = calloc((size_t)n, esz);
  for (int64_t i = 0; i < n; i++) {
    if (dtype == NDF_FLOAT32) ((float *)buf)[i] = (float)values[i] - 2.5f;
    else buf[i * esz] = values[i];
  }
  if (ndf_array_init(&a, buf, NDF_DEVICE_CPU, dtype, ndim, shape) != NDF_OK) abort();
  char path[4200], err[1024];
  fuzz_path(path, sizeof path, fixed[k].name);
  if (ndfio_write(path, &a, NULL, err, sizeof err) != NDF_OK) {
    fprintf(stderr, "fuzz_cli: %s\n", err);
    abort();
  }
  free(buf);
  fixed[k].bytes = slurp(path, &fixed[k].n);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  setenv("NDF_CACHE_DISABLE", "1", 1);
  setenv("OMP_NUM_THREADS", "1", 1);
  setenv("CUDA_VISIBLE_DEVICES", "", 1); /* the CPU backend, whatever the machine has */
  const char *v = getenv("NDF_FUZZ_VERBOSE");
  verbose = v && *v && strcmp(v, "0") != 0;
  devnull = fopen("/dev/null", "w");
  if (!devnull) abort();
  fuzz_make_dir();
  static const uint8_t vals[] = {0, 1, 1, 0, 5, 3, 0, 1, 7, 1, 0, 0, 1, 1, 4, 0, 2, 1, 0, 1, 1, 0, 3, 1, 0, 1, 0};
  static const uint8_t cross[] = {0, 1, 0, 1, 1, 1, 0, 1, 0};
  static const uint8_t ones[27] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  const int64_t s45[] = {4, 5}, s234[] = {2, 3, 4}, s33[] = {3, 3}, s333[] = {3, 3, 3}, s31[] = {3, 1}, s441[] = {4, 4, 1};
  uint8_t bits[27];
  for (int i = 0; i < 27; i++) bits[i] = vals[i] != 0;
  make_fixed(0, NDF_FLOAT32, 2, s45, vals);
  make_fixed(1, NDF_UINT8, 3, s234, vals);
  make_fixed(2, NDF_BOOL, 2, s45, bits);
  make_fixed(3, NDF_BOOL, 2, s33, cross);
  make_fixed(4, NDF_BOOL, 3, s333, ones);
  make_fixed(5, NDF_UINT8, 2, s31, ones);
  make_fixed(6, NDF_INT32, 2, s45, bits);
  make_fixed(7, NDF_INT16, 3, s441, vals);
  return 0;
}

/* Leaves exactly the fixed files in the scratch directory. */
static void restore_dir(void) {
  fuzz_clean_dir();
  char path[4200];
  for (size_t k = 0; k < NFIXED; k++) {
    fuzz_path(path, sizeof path, fixed[k].name);
    fuzz_write_file(path, fixed[k].bytes, fixed[k].n);
  }
}

static int is_fixed(const char *name) {
  for (size_t k = 0; k < NFIXED; k++)
    if (strcmp(name, fixed[k].name) == 0) return 1;
  return 0;
}

/* 1 when v is a list of integers one of which is in int32 range but above
 * SIZE_LIMIT in magnitude (too much work for a fuzz run). */
static int too_big(const char *v) {
  const char *p = v;
  for (;;) {
    char *end;
    errno = 0;
    long long x = strtoll(p, &end, 10);
    if (end == p) return 0;
    if (errno != ERANGE && x >= INT32_MIN && x <= INT32_MAX && (x > SIZE_LIMIT || x < -SIZE_LIMIT)) return 1;
    if (*end != ',') return 0;
    p = end + 1;
  }
}

static int is_work_opt(const char *s) { return strcmp(s, "--size") == 0 || strcmp(s, "--iterations") == 0; }

/* 1 when name is the file name of one of the command's arguments (outputs
 * it may have written). */
static int named_in(const char *name, char **files, int nfiles) {
  size_t dl = strlen(fuzz_dir);
  for (int i = 0; i < nfiles; i++)
    if (strncmp(files[i], fuzz_dir, dl) == 0 && files[i][dl] == '/' && strcmp(files[i] + dl + 1, name) == 0)
      return 1;
  return 0;
}

/* Checks that the scratch directory holds only the fixed files plus, when
 * the command succeeded, files its arguments name: a temporary file left
 * behind, or any file written by a failing command, stops the fuzzer. */
static void check_dir(int rc, char **argv, int argc, char **files, int nfiles) {
  DIR *d = opendir(fuzz_dir);
  if (!d) abort();
  struct dirent *de;
  while ((de = readdir(d))) {
    const char *name = de->d_name;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || is_fixed(name)) continue;
    if (rc == 0 && named_in(name, files, nfiles)) continue;
    fprintf(stderr, "command:");
    for (int i = 0; i < argc; i++) fprintf(stderr, " '%s'", argv[i]);
    fprintf(stderr, "\n");
    FUZZ_CHECK(0, "exit status %d and the file '%s' is there", rc, name);
  }
  closedir(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 2048) return -1;
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  if (memchr(data, '/', size) || memchr(data, '\0', size)) {
    free(text);
    return -1;
  }
  /* Split into lines; a trailing newline ends the last argument. */
  char *tok[MAX_ARGS];
  int ntok = 0;
  char *p = text;
  while (*p && ntok < MAX_ARGS) {
    tok[ntok++] = p;
    char *nl = strchr(p, '\n');
    if (!nl) break;
    *nl = '\0';
    p = nl + 1;
  }
  if (*p && ntok == MAX_ARGS) {
    free(text);
    return -1;
  }
  char *argv[MAX_ARGS + 3];
  char *owned[MAX_ARGS], *files[MAX_ARGS]; /* rewritten arguments, and the file name in each */
  int argc = 0, nowned = 0, skip = 0;
  argv[argc++] = "ndforge";
  argv[argc++] = "run";
  for (int i = 0; i < ntok && !skip; i++) {
    char *s = tok[i];
    /* Bound the work: --size N / --iterations N and their --opt=N forms. */
    if (is_work_opt(s) && i + 1 < ntok && too_big(tok[i + 1])) skip = 1;
    char *eq = strncmp(s, "--", 2) == 0 ? strchr(s, '=') : NULL;
    if (eq) {
      *eq = '\0';
      if (is_work_opt(s) && too_big(eq + 1)) skip = 1;
      *eq = '=';
    }
    /* File names go to the scratch directory. */
    const char *val = eq ? eq + 1 : s;
    if (ndfio_format_of(val)) {
      size_t cap = strlen(fuzz_dir) + strlen(s) + 2;
      char *r = malloc(cap);
      if (eq) snprintf(r, cap, "%.*s%s/%s", (int)(eq + 1 - s), s, fuzz_dir, val);
      else snprintf(r, cap, "%s/%s", fuzz_dir, s);
      files[nowned] = eq ? r + (eq + 1 - s) : r;
      owned[nowned++] = r;
      s = r;
    }
    argv[argc++] = s;
  }
  argv[argc] = NULL;
  int rc = 0;
  if (!skip) {
    restore_dir();
    FILE *out = stdout, *err = stderr;
    if (!verbose) stdout = stderr = devnull;
    rc = ndforge_main(argc, argv);
    fflush(devnull);
    stdout = out;
    stderr = err;
    FUZZ_CHECK(rc == 0 || rc == 1 || rc == 2, "exit status %d", rc);
    check_dir(rc, argv, argc, files, nowned);
  }
  for (int i = 0; i < nowned; i++) free(owned[i]);
  free(text);
  return skip ? -1 : 0;
}
