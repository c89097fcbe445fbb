/*
 * testutil.h -- helpers shared by the ndforge test programs.
 *
 * This file uses only the public API of ndforge.  It gives the tests a seeded
 * random generator, host arrays with arbitrary strides (built here, not with
 * the library, so a strided test does not trust the code it tests), poison
 * patterns for "output untouched" checks, a bit-exact comparison that treats
 * any two NaNs as equal, temporary directories, a naive reference of grey
 * erosion / dilation used for the policies scipy does not define (NaN,
 * saturation), and the composite ops built from it with NumPy's arithmetic.
 */
#ifndef NDF_TESTUTIL_H
#define NDF_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "ndforge.h"
#include "ops.generated.h"

/* A CPU-backend context with `threads` CPU threads (0: OpenMP's default) and its disk cache in
 * cache_dir (NULL: the default); NULL when it cannot be made (ndf_last_error says why). */
ndf_ctx *tu_cpu_ctx(int threads, const char *cache_dir);

/* ------------------------------------------------------------------------ */
/* Random numbers (xoshiro256** seeded through splitmix64).                  */

typedef struct tu_rng {
  uint64_t s[4];
} tu_rng;

void tu_rng_seed(tu_rng *r, uint64_t seed);

/* Runs a scipy oracle script: python oracle --seed S --out DIR --cases N.
 * Returns 0 when it exited with status 0. */
int tu_run_oracle(const char *python, const char *oracle, const char *dir, uint64_t seed, long ncases);

/* The start of every scipy-oracle test group: a CPU context (*ctx), the run's
 * seed ($NDF_TEST_SEED or fresh, printed), a fresh temporary dir named after
 * tag, and the oracle run there with $NDF_TEST_CASES (default_cases) cases.
 * Returns 0 on success; says what failed on stderr otherwise. */
int tu_oracle_prepare(ndf_ctx **ctx, uint64_t *seed, char *dir, size_t dirlen, const char *tag, long default_cases,
                      const char *python, const char *oracle);
/* A comma-separated list of integers (doubles) of an oracle's manifest line
 * into out: the count (0 for ""), or -1 when malformed or longer than max. */
int tu_parse_i64s(const char *v, int64_t *out, int max);
int tu_parse_f64s(const char *v, double *out, int max);

/* Reads dir/manifest.txt: parse fills one case of case_size bytes per
 * non-empty line (0 = ok).  *cases is malloc'd; returns 0 on success. */
int tu_read_manifest(const char *dir, size_t case_size, int (*parse)(const char *line, void *c), void **cases,
                     int *ncases);
/* The end of the group: removes dir, or keeps it (keep: a case failed) and says where. */
void tu_oracle_cleanup(const char *dir, int keep, uint64_t seed);
/* The state of a scipy-oracle test group: the context, seed and dir of
 * tu_oracle_prepare, and the manifest's cases (ncases records of the test's
 * case type; keep_dir: set when a case failed, to keep the files). */
typedef struct tu_oracle_group {
  ndf_ctx *ctx;
  uint64_t seed;
  char dir[512];
  int keep_dir;
  int ncases;
  void *cases;
} tu_oracle_group;
/* cmocka group set-up: tu_oracle_prepare (tag, default_cases, python,
 * oracle), then the manifest read with parse into case_size records (at least
 * one), then summary (may be NULL: prints what the cases hold; non-zero fails
 * the set-up).  *state receives the tu_oracle_group. */
int tu_oracle_group_setup(void **state, const char *tag, long default_cases, const char *python, const char *oracle,
                          size_t case_size, int (*parse)(const char *line, void *c),
                          int (*summary)(const tu_oracle_group *g));
/* tu_oracle_group_setup when python imports every module of modules (e.g.
 * "numpy, skimage"); else a note that the reference cases are skipped and a
 * group without cases (dir "", a CPU context, the seed), so that the tests
 * that need no oracle still run. */
int tu_oracle_group_setup_if(void **state, const char *modules, const char *tag, long default_cases,
                             const char *python, const char *oracle, size_t case_size,
                             int (*parse)(const char *line, void *c), int (*summary)(const tu_oracle_group *g));
/* cmocka group teardown: tu_oracle_cleanup (none without a dir), then frees the cases, the context and the state. */
int tu_oracle_group_teardown(void **state);
uint64_t tu_rng_u64(tu_rng *r);
/* Uniform integer in [lo, hi] (inclusive). */
int64_t tu_rng_int(tu_rng *r, int64_t lo, int64_t hi);
/* Uniform double in [0, 1). */
double tu_rng_unif(tu_rng *r);
double tu_rng_normal(tu_rng *r);
/* 1 with probability p. */
int tu_rng_chance(tu_rng *r, double p);
/* A random 4x4 affine (row-major) of a volume: kind 0 an axis permutation with flips, 1 a rotation (a
 * random unit quaternion); times a random scale per axis in [0.5, 3), plus a translation of normal
 * components times shift. */
void tu_random_affine(tu_rng *r, double *a, int kind, double shift);

/* The seed of this run: $name when set (decimal), else time-based.  Prints
 * "name=<seed>" so a failing run can be repeated. */
uint64_t tu_seed(const char *name);
/* An integer from the environment, or def when unset / empty. */
long tu_env_long(const char *name, long def);

/* ------------------------------------------------------------------------ */
/* Host arrays.                                                              */

/* A host array that owns its memory: arr.data points somewhere inside
 * [base, base + bytes). */
typedef struct tu_array {
  ndf_array arr;
  void *base;
  size_t bytes;
} tu_array;

/* C-contiguous host array of the given dtype and shape (zero-filled). */
int tu_array_alloc(tu_array *t, ndf_dtype dt, int ndim, const int64_t *shape);
void tu_array_free(tu_array *t);

/* Layout choices for tu_array_relayout. */
enum {
  TU_LAYOUT_C = 0,          /* C-contiguous */
  TU_LAYOUT_FORTRAN = 1,    /* first axis fastest */
  TU_LAYOUT_PADDED = 2,     /* random axis order in memory, gaps between elements and rows */
  TU_LAYOUT_NEGATIVE = 4,   /* with PADDED: one axis (sometimes two) runs backwards */
  TU_LAYOUT_OFFSET = 8      /* data starts 1-3 elements into the buffer (misaligned for vector loads) */
};
/* A copy of src (any strides) in a new host buffer with the requested layout;
 * the buffer is poisoned before the values are written, so the bytes between
 * elements hold the poison pattern. */
int tu_array_relayout(tu_array *dst, const ndf_array *src, int layout, tu_rng *r);
/* A host array shaped like src with the requested layout (no negative
 * strides), every byte of its buffer poisoned. */
int tu_array_like(tu_array *dst, const ndf_array *src, int layout, tu_rng *r);

/* Element access by flat C-order index (any strides); tu_get reads a bool as 0 or 1. */
void *tu_elem_ptr(const ndf_array *a, int64_t flat);
double tu_get(const ndf_array *a, int64_t flat);
/* Stores v converted to a's dtype (C conversion; v must be representable). */
void tu_set(const ndf_array *a, int64_t flat, double v);

/* 1 for NDF_FLOAT32 / NDF_FLOAT64. */
int tu_is_float(ndf_dtype t);
/* Range of an integer dtype. */
void tu_int_range(ndf_dtype t, double *lo, double *hi);
/* Adds 2^60 + 1 (int64) or 2^63 + 1 (uint64) to every element of a 64-bit
 * integer array in integer arithmetic (values drawn in tu_int_range's small
 * range move beyond 2^53, where a path through float64 would round them);
 * other dtypes are left alone. */
void tu_offset64(const ndf_array *a);

/* ------------------------------------------------------------------------ */
/* Poison.                                                                   */

/* Fills bytes with a position-dependent pattern. */
void tu_poison(void *p, size_t bytes);
/* Index of the first byte that differs from the pattern, or -1. */
int64_t tu_poison_check(const void *p, size_t bytes);
/* For a tu_array whose buffer was poisoned: index of the first byte of the
 * buffer outside arr's elements that no longer holds the pattern, or -1. */
int64_t tu_check_gaps(const tu_array *t);

/* ------------------------------------------------------------------------ */
/* Comparison.                                                               */

/* Compares two arrays of the same dtype and shape (any strides) bit for bit,
 * except that two NaNs compare equal whatever their payload.  Returns the
 * number of differing elements; when non-zero, writes a description of the
 * first few differences (flat index, coordinates, expected, got) to msg. */
int64_t tu_compare(const ndf_array *expected, const ndf_array *got, char *msg, size_t msglen);

/* Formats a shape as "2x3x5". */
const char *tu_shape_str(const ndf_array *a, char *buf, size_t len);

/* ------------------------------------------------------------------------ */
/* Files and processes.                                                      */

/* Creates a fresh directory under $TMPDIR (or /tmp); returns 0 on success. */
int tu_mkdtemp(char *out, size_t len, const char *prefix);
/* Removes a directory tree (only what tests created). */
void tu_rmtree(const char *path);
/* Number of regular files below path (recursively). */
int tu_count_files(const char *path);

/* ------------------------------------------------------------------------ */
/* Naive reference of grey erosion / dilation.                               */

/*
 * Exactly the definition of scipy.ndimage (dilation reflects the element and
 * maps origin o to -o - 1 on even axes, -o on odd ones; out[x] =
 * min_k in[x + k - (s/2 + o)] - S[k], resp. max ... + S[k]), computed in
 * double, then ndforge's defined policies: NaN when any value under the
 * element (cval included) is NaN, and for integer dtypes the exact result
 * clamped to the dtype's range and truncated.  It is exact wherever every
 * structure value is an integer.  The element is given after scipy's
 * size / footprint / structure priority: shape eshape[nsp], mask fp (C order,
 * NULL = all in), weights st (C order doubles, NULL = flat).  origin has one
 * value per spatial axis.  out must be a host array shaped like in.
 */
typedef struct tu_elem {
  int nsp;
  int64_t shape[NDF_MAX_SPATIAL];
  const uint8_t *fp;
  const double *st;
  int64_t origin[NDF_MAX_SPATIAL];
} tu_elem;

void tu_ref_grey(int dilation, const ndf_array *in, const ndf_array *out, const tu_elem *el,
                 ndf_mode mode, double cval, int batch_dims);

/* Maps coordinate c onto [0, n) for a non-constant mode (scipy's extension). */
int64_t tu_map_coord(int64_t c, int64_t n, ndf_mode mode);

/* ------------------------------------------------------------------------ */
/* The grey ops of the public API, from the op registry (gen/ops.lua):       */
/* TU_OP_<short name> in the registry's order (erosion, dilation, composites). */

#define TU_OP_ENUM(id, name, short_name, fn, composite) TU_OP_##id,
typedef enum { NDF_OPS_GREY(TU_OP_ENUM) TU_OP_COUNT } tu_op;
#undef TU_OP_ENUM

/* scipy.ndimage's name ("grey_opening", "morphological_laplace", ...). */
const char *tu_op_name(int op);
/* The ndforge function's name ("ndf_grey_opening", ...). */
const char *tu_op_api_name(int op);
/* Parses a scipy name or the short name of the oracle's manifest ("erosion",
 * "dilation", "opening", "closing", "gradient", "laplace", "white_tophat",
 * "black_tophat"); -1 when unknown. */
int tu_op_from_name(const char *name);
/* Calls the ndforge function of op. */
ndf_status tu_op_call(ndf_ctx *ctx, int op, const ndf_array *in, ndf_array *out, const ndf_grey_options *opt);
/* 1 for the composite ops (those the registry marks composite). */
int tu_op_is_composite(int op);

/*
 * NumPy's elementwise arithmetic in the dtype of the arrays (all of one dtype
 * and shape, any strides): integers wrap around, float32 rounds after every
 * step.  out may be a or b (element by element, no other overlap).
 *   tu_np_sub:      out = a - b
 *   tu_np_laplace:  out = ((a + b) - c) - c
 */
void tu_np_sub(const ndf_array *a, const ndf_array *b, const ndf_array *out);
void tu_np_laplace(const ndf_array *a, const ndf_array *b, const ndf_array *c, const ndf_array *out);

/* Reference of any op: tu_ref_grey for the min/max steps (ndforge's NaN and
 * saturation policies, each step stored in the input dtype), composed as
 * scipy composes them, with NumPy's arithmetic (tu_np_*).  out must be a
 * host array shaped like in (any strides, not overlapping in). */
void tu_ref_op(int op, const ndf_array *in, const ndf_array *out, const tu_elem *el, ndf_mode mode,
               double cval, int batch_dims);

/* ------------------------------------------------------------------------ */
/* Device copies of host arrays (GPU tests).                                 */

/* A raw device buffer holding every byte of a host tu_array (gaps included),
 * and a CUDA descriptor with the host array's strides over it. */
typedef struct tu_dev {
  ndf_array raw; /* 1-D uint8 device array */
  ndf_array arr; /* the view */
} tu_dev;
/* The state of a GPU test group: a context on the default backend, the
 * run's seed ($NDF_TEST_SEED, printed) and its case count ($NDF_TEST_CASES). */
typedef struct tu_gpu_state {
  ndf_ctx *ctx;
  uint64_t seed;
  long ncases;
} tu_gpu_state;
/* cmocka group set-up (prints the device) and teardown (prints the kernel
 * cache's counters, frees the state). */
int tu_gpu_setup(void **state, long default_cases);
int tu_gpu_teardown(void **state);
/* Monotonic clock, milliseconds. */
double tu_now_ms(void);
/* In a cmocka test: skips, saying why, when ctx has no usable CUDA device. */
#define TU_SKIP_WITHOUT_CUDA(ctx)                                \
  do {                                                           \
    if (!ndf_ctx_has_cuda(ctx)) {                                \
      printf("skip: the context has no usable CUDA device\n");   \
      skip();                                                    \
    }                                                            \
  } while (0)
/* For a GPU test's main: 1 when a context finds a usable CUDA device, else
 * 0 after printing why (the test then exits 77, ctest's "skipped"). */
int tu_have_cuda(void);
/* Upload / download the whole buffer; cmocka assertions on failure. */
void tu_dev_upload(ndf_ctx *ctx, tu_dev *d, const tu_array *t);
void tu_dev_download(ndf_ctx *ctx, const tu_dev *d, tu_array *t);
void tu_dev_free(ndf_ctx *ctx, tu_dev *d);
/* A GPU call's output against the CPU's: downloads d into got, compares it
 * with expected bit for bit and checks the gaps of got's layout stayed
 * poisoned.  0 when equal, else 1 after printing "DESC: ..." naming WHAT
 * (e.g. "distances"). */
int tu_dev_check(ndf_ctx *ctx, const char *desc, const char *what, const tu_dev *d, tu_array *got,
                 const ndf_array *expected);

/* ------------------------------------------------------------------------ */
/* The kernel log (ndf_ctx_kernel_count / ndf_ctx_kernel_launched, ADR 0013):
 * which kernels a GPU call launched.  A spec names one specialization:
 * "kernel" (the entry point, e.g. "ndf_ecc_rows") optionally followed by
 * "|SLOT=value" pieces that must all hold (e.g. "ndf_rank_tile2|PIPE=3");
 * alternatives separated by "||" match when any one does
 * ("ndf_ecc_pack||ndf_ecc_rows").
 * Take a mark (tu_klog_mark) before the call, check after it. */
uint64_t tu_klog_mark(const ndf_ctx *ctx);
/* Launches matching spec since mark (among the entries still in the log);
 * *lost (may be NULL) is set to the number of launches since mark that left
 * the log before they could be seen. */
long tu_klog_count(const ndf_ctx *ctx, uint64_t mark, const char *spec, long *lost);
/* The launches since mark as text: each entry point with its short slot
 * values, repeats folded ("ndf_bin_step|OP=1 x12"); buf is returned. */
const char *tu_klog_text(const ndf_ctx *ctx, uint64_t mark, char *buf, size_t len);
/* 0 when spec launched since mark (want_ran 1) or did not (want_ran 0); else
 * 1 after printing "DESC: expected ... to run / not to run; launched: ..." (a
 * kernel that must not run but may have left the log counts as a failure).
 * $NDF_TEST_KLOG=warn: printed, but 0 (the GPU tests then check the outputs
 * only, as before the kernel log). */
int tu_klog_check(const ndf_ctx *ctx, uint64_t mark, const char *spec, int want_ran, const char *desc);

/* ndf_distance_edt_pass over every axis of w (float64) and f (int64 or
 * NULL) in order, each pass run on random pieces along another axis (views
 * of a few lines; host or device arrays alike), sampling[a] per axis.
 * Returns the first status that is not NDF_OK. */
ndf_status tu_edt_pass_pieces(ndf_ctx *ctx, const ndf_array *w, const ndf_array *f, const double *sampling,
                              tu_rng *r);

#endif
