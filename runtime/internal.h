/*
 * internal.h -- declarations shared by the runtime's modules.  Internal
 * non-static names are ndf__<module>_*; nothing here is public.
 */
#ifndef NDF_INTERNAL_H
#define NDF_INTERNAL_H

#include <stdarg.h>
#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include <pthread.h>

#include "ndforge.h"
#include "cuda_api.h"

#define NDF__ERRMSG_MAX 8192

/* ---- status.c: messages ---------------------------------------------------- */
/* Formats the context's message (or the thread-local one when ctx is NULL) and returns s. */
ndf_status ndf__error(ndf_ctx *ctx, ndf_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Argument errors in one shape: "<op>: bad argument '<arg>' (<why>)". */
ndf_status ndf__argerror(ndf_ctx *ctx, const char *op, const char *arg, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void ndf__clear_error(ndf_ctx *ctx);

/* ---- array.c: overflow-checked sizes -------------------------------------------- */
/* *out = a * b for a, b >= 0; returns 0 (out untouched) when a factor is
 * negative or the product exceeds INT64_MAX. */
static inline int ndf__mul(int64_t a, int64_t b, int64_t *out) {
  int64_t p;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &p)) return 0;
  *out = p;
  return 1;
}
/* The geometry every call requires of an array (not NULL, a known dtype,
 * rank 0..NDF_MAX_NDIM, extents >= 0 whose non-zero ones multiply within
 * int64; when it has elements, its bytes and the bytes its strides span at
 * most NDF_MAX_BYTES), so that every product of its extents, strides and
 * element size is representable; *count (may be NULL) gets its element
 * count.  The message names name, arg and the sizes. */
ndf_status ndf__check_array(ndf_ctx *ctx, const char *name, const char *arg, const ndf_array *a, int64_t *count);
/* The host's physical memory in bytes (INT64_MAX when unknown). */
int64_t ndf__host_memory(void);
/* NDF_OK when bytes (>= 0; a negative value stands for an overflowed sum) of
 * host scratch fit in the host's memory, else NDF_ENOMEM naming name, what
 * and the sizes: work whose memory cannot exist fails before it allocates. */
ndf_status ndf__check_host_memory(ndf_ctx *ctx, const char *name, const char *what, int64_t bytes);
/* "4x5x6" ("()" for rank 0) into buf, for messages. */
const char *ndf__shape_str(int ndim, const int64_t *shape, char *buf, size_t cap);

/* ---- hash.c ------------------------------------------------------------------ */
uint64_t ndf__hash_fnv1a64(const void *data, size_t n, uint64_t seed);
#define NDF__FNV_SEED 0xcbf29ce484222325ULL

/* ---- the context --------------------------------------------------------------- */
typedef struct ndf__module_entry ndf__module_entry;
typedef struct ndf__table_entry ndf__table_entry;
/* One kernel of the in-memory table (jit.c); freed with the context (its key
 * is what the kernel log records). */
struct ndf__module_entry {
  ndf__module_entry *next;
  uint64_t hash;
  char *key; /* template|kernel|slots: the in-memory key */
  CUmodule mod;
  CUfunction fn;
};

struct ndf_ctx {
  ndf_ctx_options opt;
  char errmsg[NDF__ERRMSG_MAX];
  char cache_dir[4096]; /* "" when the disk cache is off */
  int cache_disabled;
  char cache_problem[512]; /* why the disk cache is off, when it was not asked to be ("" else) */
  /* CUDA state (valid when has_cuda) */
  int has_cuda;
  CUdevice dev;
  CUcontext cu;
  CUstream stream;
  int own_stream;
  CUmemoryPool pool;
  int cc_major, cc_minor;
  int sm_count;
  size_t max_smem_block;
  size_t smem_per_sm; /* shared memory per multiprocessor (bytes; 0 when unknown) */
  char arch[16]; /* "sm_90" */
  /* kernel modules: in-memory table, guarded by lock */
  pthread_mutex_t lock;
  ndf__module_entry *modules;
  ndf__table_entry *tables;
  ndf_cache_stats stats;
  /* ecc_cuda.c: the exact ECC's header in page-locked host memory mapped
   * into the device (allocated on first use under lock, freed with the context) */
  void *ecc_hdr_host;
  CUdeviceptr ecc_hdr_dev;
  /* ecc_cuda.c: the 2-D warp-strip kernel's workspace (tickets, histogram
   * copies, partials; the kernel initializes what it uses), kept between
   * calls (stream-ordered), grown when too small, freed with the context */
  CUdeviceptr ecc_ws;
  size_t ecc_ws_bytes;
  /* deferred data checks (opt.deferred_errors; ecc.c, ecc_cuda.c): the calls since the last
   * report (their ordinals 1, 2, ... as the kernels' seq) and their names by ordinal % 64; the
   * record the kernels write lives in the mapped header block (NDF__DREC_OFF); under lock */
#define NDF__DEFER_NAMES 64
  uint32_t defer_n;
  const char *defer_names[NDF__DEFER_NAMES];
  /* ecc_cuda.c: get_fn's direct-mapped memo of the ECC kernels' functions (the JIT lookup builds
   * and hashes the request's key on every call); under lock */
#define NDF__ECC_FN_MEMO 16
  struct {
    const char *kernel; /* a string literal of ecc_cuda.c (compared by address) */
    int dt, nsp, cons, var; /* var: the SOFT and RNG slots (ecc_request) */
    CUfunction fn;
  } ecc_fn_memo[NDF__ECC_FN_MEMO];
  /* jit.c: the kernel log (ADR 0013): the in-memory keys of the last
   * NDF__KLOG launches (launch i at klog[i % NDF__KLOG]), klog_count launches
   * in all, and a direct-mapped CUfunction -> key cache for the lookup; all
   * under lock.  The keys are the module entries', freed with the context. */
#define NDF__KLOG 256
#define NDF__KLOG_FN 64
  const char *klog[NDF__KLOG];
  uint64_t klog_count;
  struct {
    CUfunction fn;
    const char *key;
  } klog_fn[NDF__KLOG_FN];
};

/* Makes the context's CUDA context current on the calling thread. */
ndf_status ndf__ctx_bind(ndf_ctx *ctx);
/* Reports a CUresult as NDF_ECUDA with the driver's name for it. */
ndf_status ndf__cuda_error(ndf_ctx *ctx, const char *where, CUresult r);
/* Blocks for a grid-stride kernel: `blocks`, capped at per_sm blocks per SM
 * of the context's device (at least 1). */
unsigned ndf__grid(const ndf_ctx *ctx, int64_t blocks, int per_sm);
/* Launches fn on the context's stream with one parameter block (a kernel
 * taking its parameters as one struct); a failure is reported under name. */
ndf_status ndf__launch(ndf_ctx *ctx, const char *name, CUfunction fn, unsigned grid, unsigned bx, unsigned by,
                       unsigned smem, void *params);
/* The kernel log (jit.c, ADR 0013): records a launch of fn (a function from
 * ndf__jit_get) that the driver accepted.  ndf__launch calls it; a launch
 * made directly through the driver API (cooperative launches) must call it
 * after its cuLaunch* succeeded.  ndf__klog_key records a key as is
 * (white-box tests). */
void ndf__klog(ndf_ctx *ctx, CUfunction fn);
void ndf__klog_key(ndf_ctx *ctx, const char *key);

/* ---- pool.c: stream-ordered scratch and cached device tables ---------------------- */
ndf_status ndf__scratch_alloc(ndf_ctx *ctx, size_t bytes, CUdeviceptr *out);
void ndf__scratch_free(ndf_ctx *ctx, CUdeviceptr p);
/* Device copy of a small read-only table, cached by content in the context. */
ndf_status ndf__device_table(ndf_ctx *ctx, const void *data, size_t bytes, CUdeviceptr *out);
void ndf__tables_release(ndf_ctx *ctx);

/* ---- kernel launches: parameter blocks laid out as a template's struct ------------------ */
/* Fields are appended with the C alignment rules, which NVCC shares on x86-64. */
typedef struct ndf__params {
  unsigned char b[4096];
  size_t n;
} ndf__params;

static inline void ndf__params_put(ndf__params *p, const void *v, size_t size, size_t align) {
  p->n = (p->n + align - 1) & ~(align - 1);
  if (p->n + size <= sizeof p->b) memcpy(p->b + p->n, v, size);
  p->n += size;
}
#define NDF__PUT(p, v) ndf__params_put((p), &(v), sizeof(v), _Alignof(__typeof__(v)))
/* NDF_MAX_NDIM int64 fields: v[0 .. n-1], then zeros (all zeros when v is NULL). */
static inline void ndf__params_put_padded(ndf__params *p, int64_t n, const int64_t *v) {
  for (int d = 0; d < NDF_MAX_NDIM; d++) {
    int64_t x = v && d < n ? v[d] : 0;
    NDF__PUT(p, x);
  }
}
/* The outer-axes fields templates share: n (int), then the shapes and both
 * strides of the n outer axes, each padded to NDF_MAX_NDIM entries. */
static inline void ndf__params_put_outer(ndf__params *p, int n, const int64_t *shape, const int64_t *istr,
                                         const int64_t *ostr) {
  NDF__PUT(p, n);
  ndf__params_put_padded(p, n, shape);
  ndf__params_put_padded(p, n, istr);
  ndf__params_put_padded(p, n, ostr);
}

/* ---- jit.c: specialization, compile, in-memory table --------------------------------- */
/* One slot value of a template. */
typedef struct ndf__slot {
  const char *name;
  char value[256];
  char *heap; /* the value when it does not fit in `value` (generated code); see ndf__req_free */
} ndf__slot;

/* A request for one kernel: a template, its slot values and a kernel name. */
typedef struct ndf__kernel_req {
  const char *template_name; /* e.g. "grey_taps" */
  const char *kernel;        /* extern "C" entry point */
  int nslots;
  ndf__slot slots[24];
} ndf__kernel_req;

void ndf__req_init(ndf__kernel_req *r, const char *template_name, const char *kernel);
void ndf__req_set(ndf__kernel_req *r, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A slot's value: short values live in the request, long ones (generated
 * straight-line code) on the heap; a request that may hold long values is
 * released with ndf__req_free.  A long value that cannot be stored (out of
 * memory) leaves its slot unfilled, and the request is then rejected. */
const char *ndf__slot_value(const ndf__slot *s);
void ndf__req_free(ndf__kernel_req *r);

/* Returns the CUfunction for req on the context's device: memory -> disk -> NVRTC. */
ndf_status ndf__jit_get(ndf_ctx *ctx, const char *op, const ndf__kernel_req *req, CUfunction *out);
/* Compiles req for arch (e.g. "sm_90") into the disk cache without a device.
 * *compiled = 1 if NVRTC ran, 0 if the entry was found valid. */
ndf_status ndf__jit_warm(ndf_ctx *ctx, const char *op, const ndf__kernel_req *req,
                         const char *arch, int *compiled);
/* Expands the template of req into NVRTC source (malloc'd); NULL + message on error. */
char *ndf__jit_source(ndf_ctx *ctx, const char *op, const ndf__kernel_req *req, uint64_t *template_hash);
void ndf__jit_release(ndf_ctx *ctx);
/* NVRTC version, or ENODEV if NVRTC cannot be loaded. */
ndf_status ndf__nvrtc_version(int *major, int *minor);

/* ---- cache.c: the disk cache ---------------------------------------------------------- */
/* Loads the payload stored under key; NDF_OK with *payload malloc'd, or NDF_EIO on a miss.
 * A corrupt/truncated/mismatched entry is deleted (stats.disk_rejects++) and reported as a miss. */
ndf_status ndf__cache_load(ndf_ctx *ctx, const char *key, void **payload, size_t *len);
/* Stores payload under key (temp file + rename).  Failures leave the cache as
 * it was (it is best effort) and set the calling thread's
 * ndf__cache_store_errno, which cache warm clears before a kernel and
 * reports after it. */
void ndf__cache_store(ndf_ctx *ctx, const char *key, const void *payload, size_t len);
extern _Thread_local int ndf__cache_store_errno;
/* Opens a cache file for reading without waiting on a FIFO: a descriptor,
 * or -1 with *not_regular set when the path is there but not a regular file. */
int ndf__cache_open(const char *path, int *not_regular);
/* Removes the entry for key if present. */
void ndf__cache_remove(ndf_ctx *ctx, const char *key);

/* ---- grey: normalized geometry --------------------------------------------------------- */
typedef enum { NDF__MIN = 0, NDF__MAX = 1 } ndf__minmax;

typedef struct ndf__grey_geom {
  ndf__minmax op;
  int nsp;          /* spatial axes */
  int batch_dims;
  ndf_mode mode;
  double cval;      /* already converted to the input dtype */
  int is_box;       /* flat box: separable */
  int64_t box[NDF_MAX_SPATIAL]; /* box extent per spatial axis (1 = axis untouched) */
  int64_t lo[NDF_MAX_SPATIAL];  /* offset of the box's first tap per axis */
  /* general element (is_box == 0): taps in scipy's raster order */
  int64_t ntaps;
  int32_t *taps;    /* ntaps * nsp offsets relative to the output voxel */
  int has_weights;
  double *w_first;  /* weight of every tap in double (used exactly for tap 0) */
  double *w_cast;   /* weight converted to the input dtype (used for taps >= 1) */
  int32_t rad_lo[NDF_MAX_SPATIAL], rad_hi[NDF_MAX_SPATIAL]; /* min/max tap offset per axis */
  /* The algorithm (docs/adr/0008): for a box NDF_GREY_AUTO, _SEPARABLE or
   * _VHGW says how its line passes run; NDF_GREY_DIRECT marks a tap table
   * (is_box == 0); NDF_GREY_DECOMPOSED runs nsteps times the element *step. */
  ndf_grey_algorithm algo;
  int64_t nsteps;
  struct ndf__grey_geom *step;
} ndf__grey_geom;

/* AUTO runs a box line pass with van Herk/Gil-Werman from this extent on
 * (below it, the O(K) pass is as cheap); one tuning value per backend. */
#define NDF__VHGW_MIN_CPU 8
#define NDF__VHGW_MIN_CUDA 8

void ndf__grey_geom_free(ndf__grey_geom *g);
/* The geometry's tap offsets in raster order (a box's enumerated), ntaps x nsp, as a malloc'd
 * copy the caller owns; NULL when out of memory. */
int32_t *ndf__grey_geom_taps_copy(const ndf__grey_geom *g);
/* Validates the call and normalizes scipy's arguments.  name is "ndf_grey_erosion"/... */
ndf_status ndf__grey_prepare(ndf_ctx *ctx, const char *name, ndf__minmax op, ndf_dtype dtype,
                             int ndim, const int64_t *shape, const ndf_grey_options *opt,
                             ndf__grey_geom *g);

/* The input's rank (1..NDF_MAX_NDIM), extents (>= 0) and batch_dims (0..rank-1). */
ndf_status ndf__check_shape(ndf_ctx *ctx, const char *name, const ndf_array *in, int batch_dims);
/* The input's device: a known type, and on CUDA the context's device (ENODEV without one). */
ndf_status ndf__check_device(ndf_ctx *ctx, const char *name, const ndf_array *in);
/* Input/output checks of a filter whose output dtype is the input's (grey.c). */
ndf_status ndf__check_filter_arrays(ndf_ctx *ctx, const char *name, const ndf_array *in, const ndf_array *out);
/* Argument checks shared by every grey op (messages carry name). */
ndf_status ndf__grey_check(ndf_ctx *ctx, const char *name, const ndf_array *in, const ndf_array *out,
                           const ndf_grey_options *opt);
/* Runs one prepared min/max step on the backend of the arrays. */
ndf_status ndf__grey_run(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out,
                         const ndf__grey_geom *g);

/* ---- grey_compose.c: elementwise epilogues in NumPy arithmetic of the dtype ---------------- */
typedef enum {
  NDF__COMBINE_SUB = 0,     /* out = a - b */
  NDF__COMBINE_LAPLACE = 1  /* out = ((a + b) - c) - c */
} ndf__combine_kind;
/* out may alias a or b; all arrays share dtype, shape and device. */
ndf_status ndf__combine(ndf_ctx *ctx, const char *name, ndf__combine_kind kind, const ndf_array *a,
                        const ndf_array *b, const ndf_array *c, ndf_array *out);
void ndf__combine_request(ndf__kernel_req *r, int kind, ndf_dtype dtype);

/* ---- rank filters (rank.c, rank_cuda.c) --------------------------------------------------- */
/* What to select: kind 0 median, 1 rank (already in [0, n)), 2 percentile (in [0, 100]). */
typedef struct ndf__rank_sel {
  int kind;
  int64_t rank;
  double percentile;
  ndf_rank_nan_policy nan_policy;
  ndf_rank_algorithm algorithm;
} ndf__rank_sel;
/* The rank selected among m values (m = n unless NaNs are omitted). */
int64_t ndf__rank_for(int kind, int64_t rank, double p, int64_t m);
/* 1 when the sliding-histogram kernel applies: 8-bit dtype, a box window
 * spanning at least 2 spatial axes, fewer than 65536 taps. */
int ndf__rank_hist_applies(ndf_dtype dtype, const ndf__grey_geom *g, int64_t n);
/* 1 where the sorted-tile kernel (templates/rank_tile.cu) applies. */
int ndf__rank_tile_applies(ndf_dtype dtype, const ndf__grey_geom *g, int64_t n);
/* Kernel request of the CUDA rank filter for (dtype, window, selection); release with ndf__req_free. */
ndf_status ndf__rank_cuda_request(ndf_ctx *ctx, const char *name, ndf_dtype dtype, int ndim, const int64_t *shape,
                                  const ndf__grey_geom *g, const int32_t *taps, int64_t n, const ndf__rank_sel *sel,
                                  ndf__kernel_req *req);
ndf_status ndf__rank_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out,
                          const ndf__grey_geom *g, const int32_t *taps, int64_t n, const ndf__rank_sel *sel);

/* OpenMP threads the CPU backend uses for ctx. */
int ndf__cpu_threads(const ndf_ctx *ctx);
/* The calling thread's index in an OpenMP team (0 without OpenMP). */
int ndf__thread_id(void);
/* One buffer of `bytes` per thread, allocated before a parallel region so
 * that running out of memory happens before anything is written; NULL (and
 * nothing allocated) on failure. */
void **ndf__thread_buffers(int nth, size_t bytes);
void ndf__thread_buffers_free(void **b, int nth);
ndf_status ndf__grey_cpu(ndf_ctx *ctx, const ndf_array *in, ndf_array *out, const ndf__grey_geom *g);
ndf_status ndf__grey_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out,
                          const ndf__grey_geom *g);
/* Kernel requests the CUDA path would make for (dtype, geometry); for cache warm. */
int ndf__grey_cuda_requests(const ndf__grey_geom *g, ndf_dtype dtype, int ndim,
                            ndf__kernel_req *reqs, int max);

/* ---- distance_cuda.c ---------------------------------------------------------------------- */
/* distance_transform_edt on CUDA arrays (validated by distance.c); dist and
 * idx may be NULL; sampling has one value per spatial axis. */
ndf_status ndf__edt_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *dist, ndf_array *idx,
                         int batch_dims, const double *sampling);
/* distance_transform_cdt distances on CUDA arrays: taxicab (chess = 0) or
 * chessboard (1); every spatial axis shorter than 2^29 (checked by distance.c). */
ndf_status ndf__cdt_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *dist, int batch_dims,
                         int chess);
/* distance_transform_bf on CUDA arrays (distance_bf_cuda.c): metric an ndf_metric (resolved),
 * sampling one value per spatial axis (multiplied in when has_sampling); dist and idx may be NULL. */
ndf_status ndf__bf_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *dist, ndf_array *idx, int nb,
                        int metric, int has_sampling, const double *sampling);
/* ---- ecc.c / ecc_cuda.c: Euler characteristic curves ------------------------------------- */
/* A validated call: batch and spatial axes, images, voxels per image, thresholds. */
typedef struct ndf__ecc_call {
  const char *name;
  int nb, nsp;
  int64_t nimg, npix;
  int64_t sshape[3];
  int64_t T;
} ndf__ecc_call;
/* Min and max of a CUDA input and the C-order index of its first NaN (-1: none); size > 0. */
ndf_status ndf__ecc_cuda_scan(ndf_ctx *ctx, const char *name, const ndf_array *in, double *mn, double *mx,
                              int64_t *nan_at);
/* The exact curve of a CUDA input at the T thresholds t (caller's order; uniform: evenly spaced). */
ndf_status ndf__ecc_cuda(ndf_ctx *ctx, const ndf__ecc_call *c, const ndf_array *in, ndf_array *out,
                         int construction, const double *t, int uniform);
/* New path (default; NDF_ECC_PATH=old selects the old one): no readback
 * before the curve.  t NULL: T thresholds over [min, max] taken on the device.
 * The NaN check runs on the device; a float input's call ends with one
 * readback: *nan_at (-1: none) and *not_finite ([min, max] infinite), the
 * output untouched then.  Input size > 0. */
int ndf__ecc_new_path(void);
/* NDF_ECC2_PROF: CLOCK_MONOTONIC nanoseconds at the public ECC call's entry (ecc.c) */
extern __thread uint64_t ndf__ecc_t_entry;
/* The record of a failed deferred check (templates/ndf_ecc_fused.cuh: ndf_ecc_drec), at
 * NDF__DREC_OFF in the context's mapped header block: the first failing kernel (in stream order)
 * since the last report writes the NaN key (~ the least C-order NaN index; 0: none), the
 * not-finite flag, then its ordinal (0: no failure). */
typedef struct ndf__drec {
  uint64_t nan_key;
  int32_t bad;
  uint32_t ord;
} ndf__drec;
#define NDF__DREC_OFF 192
/* After a stream sync (ndf_ctx_synchronize, ndf_array_copy): the failed deferred check, if any,
 * as NDF_EINVAL with its call's message (the record cleared, the ordinals restarted), else NDF_OK. */
ndf_status ndf__deferred_report(ndf_ctx *ctx);
ndf_status ndf__ecc_cuda2(ndf_ctx *ctx, const ndf__ecc_call *c, const ndf_array *in, ndf_array *out,
                          int construction, const double *t, int uniform, int64_t *nan_at, int *not_finite);
/* Soft curve on CUDA: mode 0 forward into arr; mode 1 backward from arr (grad_output) into gin/gthr (may be NULL).
 * nan_at non-NULL (new path): NaN checked on the device, *nan_at >= 0 then and nothing written. */
ndf_status ndf__soft_ecc_cuda(ndf_ctx *ctx, const ndf__ecc_call *c, const ndf_array *in, const double *t,
                              ndf_array *arr, ndf_array *gin, ndf_array *gthr, int construction, double lambda,
                              int mode, int64_t *nan_at);
/* ---- ect.c / ect_cuda.c: Euler characteristic transform (exact and weighted) on CUDA ---- */
typedef struct ndf__ect_cuda_call {
  const char *name;
  int nb, nsp, cons, weighted;
  int64_t nimg, npix, m, T;
  int64_t sshape[3];
} ndf__ect_cuda_call;
/* coord: the spatial axes' coordinates concatenated (sum of sshape); dirs: m x nsp contiguous;
 * t: the T thresholds (caller's order; uniform: evenly spaced); out (batch..., m, T) on the device. */
ndf_status ndf__ect_cuda(ndf_ctx *ctx, const ndf__ect_cuda_call *c, const ndf_array *in, ndf_array *out,
                         const double *coord, const double *dirs, const double *t, int uniform);
/* Soft ECT on CUDA (ect_soft.cu): mode 0 forward into arr (device); mode 1 backward from arr (grad_output,
 * device) into gin (device, may be NULL) and the host buffers gdir (m x nsp) / gthr (T) (may be NULL).
 * t: the T thresholds (caller's order). */
ndf_status ndf__soft_ect_cuda(ndf_ctx *ctx, const ndf__ect_cuda_call *c, const ndf_array *in, const double *coord,
                              const double *dirs, const double *t, double lambda, int mode, ndf_array *arr,
                              ndf_array *gin, double *gdir, double *gthr);

/* ---- binary.c / binary_cuda.c: binary morphology ------------------------------------------ */
typedef enum {
  NDF__B_EROSION, NDF__B_DILATION, NDF__B_OPENING, NDF__B_CLOSING, NDF__B_PROPAGATION, NDF__B_FILL_HOLES
} ndf__binary_kind;
/* A prepared binary step: the grey geometry of the structure, or "empty"
 * (an all-False structure: erosion gives 1, dilation 0). */
typedef struct ndf__bin_step {
  int empty;
  ndf__grey_geom g;
} ndf__bin_step;
/* The CUDA backend on bit-packed words: a validated op of kind (mask NULL for
 * fill_holes), its prepared steps, border_value and iterations. */
ndf_status ndf__binary_cuda(ndf_ctx *ctx, const char *name, ndf__binary_kind kind, const ndf_array *in,
                            ndf_array *out, const ndf_array *mask, const ndf__bin_step *ero,
                            const ndf__bin_step *dil, int border, int iterations, int batch_dims);
/* scipy's label on CUDA arrays: taps = the structure's backward half; cap = largest label of out's dtype. */
ndf_status ndf__label_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out, const int32_t *taps,
                           int64_t ntaps, int nsp, int batch_dims, int64_t cap, int64_t *num_features);
ndf_status ndf__hit_or_miss_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out,
                                 const ndf__bin_step *hit, const ndf__bin_step *miss, int batch_dims);

/* ---- sinkhorn_cuda.c: the CUDA backend of ndf_sinkhorn (docs/adr/0010) ------------------ */
typedef struct ndf__sk_cuda ndf__sk_cuda;
/* Host data of the cost, as sinkhorn.c builds it (float64): dense C, M (the
 * kernel, K or L) and MT (its transpose; may equal M); grid euclidean T, TM
 * (tables by offset).  Grid L^p needs none (the 1-D kernels are rebuilt). */
typedef struct ndf__sk_host_cost {
  const double *C, *M, *MT, *T, *TM;
  int c_symmetric;
} ndf__sk_host_cost;
/* Compiles the kernel and allocates every device buffer (owned). */
ndf_status ndf__sk_cuda_create(ndf_ctx *ctx, const ndf_sinkhorn_options *opt, const ndf__sk_host_cost *hc,
                               ndf__sk_cuda **out);
void ndf__sk_cuda_destroy(ndf__sk_cuda *g);
/* Solves the n pairs of A, B ((n, d) float64, validated): alpha, beta
 * receive the scaled potentials f/eps, g/eps (log form, -inf at zero bins;
 * alpha NULL: left on the device, see ndf__sk_cuda_potentials), fail[k] the
 * breakdown iteration of the scaling form (0: none). */
ndf_status ndf__sk_cuda_solve(ndf__sk_cuda *g, const double *A, const double *B, double *alpha, double *beta,
                              int32_t *iters, double *err, double *tc, int *fail);
/* The scaled potentials of the last solve, downloaded ((n, d) float64 each). */
ndf_status ndf__sk_cuda_potentials(ndf__sk_cuda *g, double *alpha, double *beta);

/* ---- rank.c ---------------------------------------------------------------------------- */
struct ndf__selnet;
/* The generated selection network for rank k of n values, or NULL. */
const struct ndf__selnet *ndf__selnet_find(int64_t n, int64_t k);

/* ---- array.c ---------------------------------------------------------------------------- */
/* Copies host array src into host array dst (same dtype and shape, any strides). */
void ndf__host_copy(const ndf_array *dst, const ndf_array *src);
/* 1 if no two elements of a share memory (grey.c). */
int ndf__layout_is_proper(const ndf_array *a);
/* 1 if the byte ranges two arrays span intersect (grey.c). */
int ndf__arrays_overlap(const ndf_array *a, const ndf_array *b);

/* ---- CPU boundary modes ----------------------------------------------------------------- */
/* Maps coordinate i into [0, n) for mode, or -1 for constant mode outside
 * (the same periodic extension as templates/ndf_common.cuh). */
static inline int64_t ndf__map_coord(int64_t i, int64_t n, ndf_mode mode) {
  if (i >= 0 && i < n) return i;
  if (mode == NDF_MODE_CONSTANT) return -1;
  if (mode == NDF_MODE_NEAREST || n == 1) return i < 0 ? 0 : n - 1;
  if (mode == NDF_MODE_WRAP) {
    int64_t r = i % n;
    return r < 0 ? r + n : r;
  }
  if (mode == NDF_MODE_REFLECT) {
    int64_t p = 2 * n, r = i % p;
    if (r < 0) r += p;
    return r < n ? r : p - 1 - r;
  }
  int64_t p = 2 * n - 2, r = i % p; /* mirror */
  if (r < 0) r += p;
  return r < n ? r : p - r;
}


/* ---- CPU tap tables (grey_cpu.c, rank.c) ---------------------------------------------- */
/* Linear input offsets of the taps (sstr: strides of the spatial axes) and
 * the least and greatest offset per spatial axis. */
static inline void ndf__tap_table(const int32_t *taps, int64_t n, int nsp, const int64_t *sstr, int64_t *loff,
                                  int32_t *rlo, int32_t *rhi) {
  for (int d = 0; d < nsp; d++) { rlo[d] = INT32_MAX; rhi[d] = INT32_MIN; }
  for (int64_t k = 0; k < n; k++) {
    loff[k] = 0;
    for (int d = 0; d < nsp; d++) {
      int32_t t = taps[k * nsp + d];
      loff[k] += (int64_t)t * sstr[d];
      if (t < rlo[d]) rlo[d] = t;
      if (t > rhi[d]) rhi[d] = t;
    }
  }
}

/* Decodes a row (an index over every axis but the last) of a filter from in
 * to out: coordinates into c, the input's batch offset *ib and spatial
 * offset *ispat, the output's offset *ob.  Returns 1 when the taps stay
 * inside the image on every spatial axis but the last. */
static inline int ndf__row_decode(int64_t row, const ndf_array *in, const ndf_array *out, int nb, const int32_t *rlo,
                                  const int32_t *rhi, int64_t *c, int64_t *ib, int64_t *ispat, int64_t *ob) {
  int inside = 1;
  *ib = *ispat = *ob = 0;
  for (int d = in->ndim - 2; d >= 0; d--) {
    c[d] = row % in->shape[d];
    row /= in->shape[d];
    *ob += c[d] * out->strides[d];
    if (d >= nb) {
      *ispat += c[d] * in->strides[d];
      inside &= c[d] + rlo[d - nb] >= 0 && c[d] + rhi[d - nb] < in->shape[d];
    } else {
      *ib += c[d] * in->strides[d];
    }
  }
  return inside;
}

/* Offset from the image start of the tap `tap` of the voxel at row
 * coordinates c and last coordinate x, through the boundary mode, into *off;
 * returns 0 when the tap reads cval instead.  (Offsets can be negative:
 * strides may be.) */
static inline int ndf__tap_border_offset(const int32_t *tap, const int64_t *c, int64_t x, const ndf_array *in, int nb,
                                         ndf_mode mode, int64_t *off) {
  const int nsp = in->ndim - nb;
  *off = 0;
  for (int d = 0; d < nsp; d++) {
    int64_t m = ndf__map_coord((d == nsp - 1 ? x : c[nb + d]) + tap[d], in->shape[nb + d], mode);
    if (m < 0) return 0;
    *off += m * in->strides[nb + d];
  }
  return 1;
}

/* ---- dtype helpers ------------------------------------------------------------------------ */
int ndf__dtype_is_float(ndf_dtype t);
/* Range of an integer dtype. */
void ndf__dtype_range(ndf_dtype t, double *lo, double *hi);
/* The CUDA/C type name of a dtype ("float", "unsigned char", ...). */
const char *ndf__dtype_ctype(ndf_dtype t);
/* Converts v to dtype t the way scipy does (C cast: truncation; float32 rounding). */
double ndf__convert_value(ndf_dtype t, double v);


/* ---- Euler characteristic curves, shared with the ECT (ecc.c, ect.c) ---- */
/* c(v), the alternating count of the cells the voxel at x of the centre line
 * owns: buf holds 3^(nsp-1) neighbour lines of W = n + 2 doubles padded with
 * NaN (line index = ternary code of the row offsets, centre line in the
 * middle); construction NDF_ECC_V or NDF_ECC_T; ties by (value, index). */
int ndf__ecc_contrib(const double *buf, int64_t W, int64_t x, int nsp, int construction);
/* Element off of a host uint8/uint16/float32/float64 array, as double. */
double ndf__ecc_value_at(const ndf_array *a, int64_t off);
/* Offset (elements) of the start of image img over the nb batch axes. */
int64_t ndf__ecc_image_offset(const ndf_array *a, int nb, int64_t img);
/* n elements from off with stride st into dst[0..n), as double. */
void ndf__ecc_read_line(const ndf_array *a, int64_t off, int64_t st, int64_t n, double *dst);
/* The thresholds options (values, or nthresholds [+ range]); *T their count. */
ndf_status ndf__ecc_check_thresholds(ndf_ctx *ctx, const char *name, const ndf_array *values, int64_t nthresholds,
                                     int has_range, double range_lo, double range_hi, int64_t *T);

#endif
