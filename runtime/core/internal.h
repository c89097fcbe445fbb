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
typedef struct ndf__mem_rec ndf__mem_rec;
/* One kernel of the in-memory table (jit.c); freed with the context (its key
 * is what the kernel log records). */
struct ndf__module_entry {
  ndf__module_entry *next;
  uint64_t hash;
  char *key; /* template|kernel|slots: the in-memory key */
  CUmodule mod;
  CUfunction fn;
};

/* An op family's state in a context (ADR 0020): a family that keeps something per context
 * (device workspaces, mapped host memory, memos of its kernels' functions, the bookkeeping of
 * deferred checks) describes it once, as a static const ndf__family, and asks the context for
 * it with ndf__family_state; the core creates it zeroed on first use and releases it with the
 * context, and asks every family with deferred checks for their failures after a stream
 * synchronization.  The core knows no family by name. */
typedef struct ndf__family {
  const char *name; /* for messages */
  size_t size;      /* bytes of the state (created zeroed) */
  /* At ndf_ctx_destroy, after the context's stream finished its work: frees what the state
   * holds (not the state itself, which the core frees).  NULL: nothing to free. */
  void (*release)(ndf_ctx *ctx, void *state);
  /* The deferred-check hook (ndf_ctx_options.deferred_errors): called after the context's
   * stream was synchronized (ndf_ctx_synchronize, device-to-host ndf_array_copy); returns the
   * family's first failed deferred check since its last report as an error status with the
   * message set (and forgets it), else NDF_OK.  Takes the context's lock itself if it needs
   * it.  NULL: the family defers no check. */
  ndf_status (*report)(ndf_ctx *ctx, void *state);
} ndf__family;
/* The most op families that may keep state in one context. */
#define NDF__FAMILY_SLOTS 8

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
  /* the op families' per-context state (ndf__family_state): slot i holds one family's state,
   * slots filled in order; a slot's family is published (release store) after its state and
   * never changes until ndf_ctx_destroy, so lookups read it without the lock */
  struct {
    const struct ndf__family *family;
    void *state;
  } families[NDF__FAMILY_SLOTS];
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
  /* tune.c: the tunables set on the context and the tuning table (allocated
   * on first use, freed with the context) */
  struct ndf__tune_state *tune;
  /* pool.c: with a device-memory limit (opt.device_memory_limit > 0), the bytes of the
   * context's live device arrays and scratch, and each allocation's size by its address
   * (chained buckets); under mem_lock (not lock: some families take scratch holding it) */
#define NDF__MEM_BUCKETS 64
  pthread_mutex_t mem_lock;
  size_t mem_live;
  ndf__mem_rec *mem_recs[NDF__MEM_BUCKETS];
};

/* Makes the context's CUDA context current on the calling thread. */
ndf_status ndf__ctx_bind(ndf_ctx *ctx);
/* The family's state in ctx (ADR 0020), created zeroed on the first call (under the context's
 * lock; later calls take no lock and allocate nothing); NULL when it cannot be created (out of
 * host memory, or more than NDF__FAMILY_SLOTS families), with no message set: the caller
 * reports the failure or works without the state.  f must have static storage. */
void *ndf__family_state(ndf_ctx *ctx, const ndf__family *f);
/* The deferred-check hook: after a stream synchronization, the report of every family with
 * state in ctx, in the order their states were created; the first failure is returned (later
 * families keep theirs for the next report), else NDF_OK. */
ndf_status ndf__deferred_report(ndf_ctx *ctx);
/* Reports a CUresult as NDF_ECUDA with the driver's name for it (CUDA_ERROR_OUT_OF_MEMORY as NDF_ENOMEM). */
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
/* The device-memory limit (ndf_ctx_options.device_memory_limit; no-ops without one).
 * ndf__mem_charge counts bytes about to be allocated, or fails with NDF_ENOMEM (message
 * under `what`) when they would take the live bytes past the limit; after the allocation,
 * ndf__mem_record(p) ties them to its address (NDF_ENOMEM out of host memory: the caller
 * frees p) or ndf__mem_uncharge gives them back when it failed; ndf__mem_forget(p) gives
 * back what p was recorded with (nothing for an address it does not know).
 * ndf__mem_release frees the records (ndf_ctx_destroy). */
ndf_status ndf__mem_charge(ndf_ctx *ctx, const char *what, size_t bytes);
void ndf__mem_uncharge(ndf_ctx *ctx, size_t bytes);
ndf_status ndf__mem_record(ndf_ctx *ctx, CUdeviceptr p, size_t bytes);
void ndf__mem_forget(ndf_ctx *ctx, CUdeviceptr p);
void ndf__mem_release(ndf_ctx *ctx);

/* ---- kernel launches: parameter structs ---------------------------------------------- */
/* Each kernel's parameters are a struct declared once, in gen/spec.lua; the
 * generator writes it into the template and, with the same layout (asserted on
 * both sides), into kernel_params.generated.h with a launcher.  A launch site
 * zero-initializes the struct, fills its fields by name and launches it. */
/* A device address the caller holds as a pointer (a CUDA array's data). */
#define NDF__DPTR(p) ((CUdeviceptr)(uintptr_t)(p))
/* The n leading entries of src into an axis field of NDF_MAX_NDIM entries (a
 * zero-initialized struct keeps zeros after them); n 0..NDF_MAX_NDIM. */
static inline void ndf__axes(int64_t *dst, int n, const int64_t *src) {
  if (n > 0 && src) memcpy(dst, src, (size_t)n * sizeof *dst);
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
  const char *template_name; /* a template of the spec (gen/spec.lua), by name */
  const char *kernel;        /* extern "C" entry point */
  int nslots;
  int oom; /* a long slot value could not be stored (host memory): the request fails with NDF_ENOMEM */
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
/* Cache warm (the ndf_cache_warm_* calls): an op's CUDA path run up to its
 * kernel requests, which are compiled for arch into the disk cache instead of
 * loaded; nothing is allocated, uploaded or launched. */
typedef struct ndf__warm {
  const char *arch;
  int compiled; /* kernels compiled (0: all were cached) */
} ndf__warm;
/* The arguments every ndf_cache_warm_* call checks (ctx, arch, dtype, ndim); *compiled = 0. */
ndf_status ndf__warm_check(ndf_ctx *ctx, const char *name, const char *arch, ndf_dtype dtype, int ndim,
                           int *compiled);
/* A stand-in for array number slot of a warmed call: C-contiguous, 64 along
 * each of ndim axes, on the host at an aligned address that no other slot's
 * overlaps; the warm paths read its geometry, never its data. */
void ndf__warm_array(ndf_array *a, int slot, ndf_dtype dtype, int ndim);
/* ndf__jit_get, or with warm ndf__jit_warm for warm->arch (*fn NULL, warm->compiled counted). */
ndf_status ndf__jit_resolve(ndf_ctx *ctx, const char *op, const ndf__kernel_req *req, ndf__warm *warm,
                            CUfunction *fn);
/* Expands the template of req into NVRTC source (malloc'd); NULL + message on error. */
char *ndf__jit_source(ndf_ctx *ctx, const char *op, const ndf__kernel_req *req, uint64_t *template_hash);
void ndf__jit_release(ndf_ctx *ctx);
/* NVRTC version, or ENODEV if NVRTC cannot be loaded. */
ndf_status ndf__nvrtc_version(int *major, int *minor);
/* The NVRTC version the context's kernels are compiled with: the cache
 * directory's remembered identity (nvrtc.id) when it is still valid, else
 * NVRTC's own (loaded); 0.0 without NVRTC. */
void ndf__jit_nvrtc_version(const ndf_ctx *ctx, int *major, int *minor);

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

/* ---- array.c: the array checks the ops share ----------------------------------------------- */
/* The input's rank (1..NDF_MAX_NDIM), extents (>= 0) and batch_dims (0..rank-1). */
ndf_status ndf__check_shape(ndf_ctx *ctx, const char *name, const ndf_array *in, int batch_dims);
/* The input's device: a known type, and on CUDA the context's device (ENODEV without one). */
ndf_status ndf__check_device(ndf_ctx *ctx, const char *name, const ndf_array *in);
/* Input/output checks of a filter whose output dtype is the input's (same shape and device,
 * not overlapping the input). */
ndf_status ndf__check_filter_arrays(ndf_ctx *ctx, const char *name, const ndf_array *in, const ndf_array *out);

/* ctx.c: OpenMP threads the CPU backend uses for ctx. */
int ndf__cpu_threads(const ndf_ctx *ctx);
/* pool.c: the calling thread's index in an OpenMP team (0 without OpenMP). */
int ndf__thread_id(void);
/* One buffer of `bytes` per thread, allocated before a parallel region so
 * that running out of memory happens before anything is written; NULL (and
 * nothing allocated) on failure. */
void **ndf__thread_buffers(int nth, size_t bytes);
void ndf__thread_buffers_free(void **b, int nth);

/* ---- array.c ---------------------------------------------------------------------------- */
/* Copies host array src into host array dst (same dtype and shape, any strides). */
void ndf__host_copy(const ndf_array *dst, const ndf_array *src);
/* 1 if no two elements of a share memory. */
int ndf__layout_is_proper(const ndf_array *a);
/* 1 if the byte ranges two arrays span intersect. */
int ndf__arrays_overlap(const ndf_array *a, const ndf_array *b);

/* ---- host element access ---------------------------------------------------------------- */
/* The offset (in elements, through the strides) of index i in C order over a's n leading axes
 * (n = a->ndim: element i; n = the batch axes: image i's first element). */
static inline int64_t ndf__lead_offset(const ndf_array *a, int n, int64_t i) {
  int64_t off = 0;
  for (int d = n - 1; d >= 0; d--) {
    off += (i % a->shape[d]) * a->strides[d];
    i /= a->shape[d];
  }
  return off;
}
/* The offset of element i of a in C order. */
static inline int64_t ndf__offset_of(const ndf_array *a, int64_t i) { return ndf__lead_offset(a, a->ndim, i); }
/* ndf__lead_offset(a, n, i), with index i's coordinates over those n axes into c[0..n). */
static inline int64_t ndf__lead_coords(const ndf_array *a, int n, int64_t i, int64_t *c) {
  int64_t off = 0;
  for (int d = n - 1; d >= 0; d--) {
    c[d] = i % a->shape[d];
    i /= a->shape[d];
    off += c[d] * a->strides[d];
  }
  return off;
}

/* Line r (C order over a's axes other than skip0 and skip1; -1 skips nothing) of two arrays of
 * a's shape: its element offsets in a and in b (b's strides), added to *oa and *ob.  A line pass
 * walks axis skip0, and skip1 holds a block of neighbouring lines. */
static inline void ndf__line_offsets2(const ndf_array *a, const ndf_array *b, int skip0, int skip1, int64_t r,
                                      int64_t *oa, int64_t *ob) {
  for (int d = a->ndim - 1; d >= 0; d--) {
    if (d == skip0 || d == skip1) continue;
    const int64_t c = r % a->shape[d];
    r /= a->shape[d];
    *oa += c * a->strides[d];
    *ob += c * b->strides[d];
  }
}

/* Element i (an element offset from base) of dtype t as a double (64-bit integers rounded to it). */
static inline double ndf__load_f64(const void *base, ndf_dtype t, int64_t i) {
  switch (t) {
    case NDF_BOOL: case NDF_UINT8: return ((const uint8_t *)base)[i];
    case NDF_INT8: return ((const int8_t *)base)[i];
    case NDF_UINT16: return ((const uint16_t *)base)[i];
    case NDF_INT16: return ((const int16_t *)base)[i];
    case NDF_UINT32: return ((const uint32_t *)base)[i];
    case NDF_INT32: return ((const int32_t *)base)[i];
    case NDF_FLOAT32: return ((const float *)base)[i];
    case NDF_FLOAT64: return ((const double *)base)[i];
    case NDF_INT64: return (double)((const int64_t *)base)[i];
    case NDF_UINT64: return (double)((const uint64_t *)base)[i];
    default: return 0;
  }
}
/* The element at offset off of a host array as a double. */
static inline double ndf__get_f64(const ndf_array *a, int64_t off) { return ndf__load_f64(a->data, a->dtype, off); }
/* 1 if the element at offset off of a host array is nonzero as C's `!= 0` has it (NaN is, -0.0 is not);
 * no nonzero integer becomes 0.0 as a double, so the double's test is the element's. */
static inline int ndf__get_nonzero(const ndf_array *a, int64_t off) { return ndf__get_f64(a, off) != 0; }

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


/* ---- dtype helpers ------------------------------------------------------------------------ */
int ndf__dtype_is_float(ndf_dtype t);
/* Range of an integer dtype. */
void ndf__dtype_range(ndf_dtype t, double *lo, double *hi);
/* The CUDA/C type name of a dtype ("float", "unsigned char", ...). */
const char *ndf__dtype_ctype(ndf_dtype t);
/* Converts v to dtype t the way scipy does (C cast: truncation; float32 rounding). */
double ndf__convert_value(ndf_dtype t, double v);
/* A double converted to uint64 as x86-64's C cast does it (gcc's sequence):
 * below 2^63 through int64 (negative values wrap; below -2^63, and NaN, give
 * 2^63), below 2^64 by the offset 2^63, 0 beyond. */
static inline uint64_t ndf__cvt_u64(double v) {
  if (!(v >= 9223372036854775808.0))
    return v >= -9223372036854775808.0 ? (uint64_t)(int64_t)v : (uint64_t)1 << 63;
  if (v < 18446744073709551616.0) return (uint64_t)(int64_t)(v - 9223372036854775808.0) ^ ((uint64_t)1 << 63);
  return 0;
}

#endif
