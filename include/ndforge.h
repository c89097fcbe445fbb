/*
 * ndforge.h -- the only public header of ndforge.
 *
 * ndforge runs n-dimensional image kernels with scipy.ndimage semantics on
 * NVIDIA GPUs (kernels compiled at run time by NVRTC and cached on disk) and
 * on the CPU (a reference backend with the same semantics).
 *
 * Conventions, for every call in this header:
 *   - Public names are ndf_* / NDF_*; everything else is internal.
 *   - Calls that can fail return an ndf_status.  On failure nothing is written
 *     to any output array and ndf_errmsg(ctx) says which argument broke which
 *     rule, e.g. "ndf_grey_erosion: bad argument 'origin' (origin[1]=3 is
 *     outside the footprint of size 3)".
 *   - Arrays are described by non-owning ndf_array descriptors (DLPack
 *     meaning).  The backend of an op is the device of its arrays: CPU arrays
 *     run on the CPU backend, CUDA arrays on the context's GPU and stream.
 *   - GPU ops are stream-ordered and asynchronous: they return before the
 *     kernel finishes.  Call ndf_ctx_synchronize() (or synchronize the stream
 *     you supplied) before reading results on the host.
 */
#ifndef NDFORGE_H
#define NDFORGE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(NDF_BUILDING_LIBRARY) && defined(__GNUC__)
#define NDF_API __attribute__((visibility("default")))
#else
#define NDF_API
#endif

#define NDF_VERSION_MAJOR 0
#define NDF_VERSION_MINOR 1
#define NDF_VERSION_PATCH 0
#define NDF_VERSION_STRING "0.1.0"

/* Most axes of an array descriptor, and most spatial (filtered) axes. */
#define NDF_MAX_NDIM 12
#define NDF_MAX_SPATIAL 8

/* ------------------------------------------------------------------------ */
/* Status codes: one table produces the enum, the names and the messages.   */

#define NDF_STATUS_MAP(X)                                                     \
  X(OK, 0, "success")                                                         \
  X(EINVAL, 1, "invalid argument")                                            \
  X(ENOMEM, 2, "out of memory")                                               \
  X(ENODEV, 3, "no usable CUDA driver or device")                             \
  X(ECUDA, 4, "CUDA driver error")                                            \
  X(ECOMPILE, 5, "run-time kernel compilation failed")                        \
  X(ENOTSUP, 6, "operation not supported for these arguments")                \
  X(EIO, 7, "input/output error")                                             \
  X(EINTERNAL, 8, "internal error")

typedef enum {
#define NDF__STATUS_ENUM(name, code, msg) NDF_##name = code,
  NDF_STATUS_MAP(NDF__STATUS_ENUM)
#undef NDF__STATUS_ENUM
} ndf_status;

/* "NDF_EINVAL" for NDF_EINVAL; "NDF_UNKNOWN" for values outside the table. */
NDF_API const char *ndf_status_name(ndf_status s);
/* "invalid argument" for NDF_EINVAL. */
NDF_API const char *ndf_status_string(ndf_status s);

/* Version of the library as "0.1.0". */
NDF_API const char *ndf_version(void);

/* ------------------------------------------------------------------------ */
/* Arrays                                                                    */

/* Device types use DLPack's numbers (kDLCPU = 1, kDLCUDA = 2). */
typedef enum { NDF_DEVICE_CPU = 1, NDF_DEVICE_CUDA = 2 } ndf_device_type;

typedef enum {
  NDF_BOOL = 0, /* one byte, 0 or 1 (structuring elements, masks) */
  NDF_UINT8,
  NDF_INT8,
  NDF_UINT16,
  NDF_INT16,
  NDF_UINT32,
  NDF_INT32,
  NDF_FLOAT32,
  NDF_FLOAT64,
  NDF_INT64,  /* the 64-bit integers: inputs and outputs wherever scipy takes them; */
  NDF_UINT64, /* exact for min, max and ranks, through double where scipy sums (ADR 0026) */
  NDF_DTYPE_COUNT
} ndf_dtype;

/* "float32", "uint8", ... (NumPy's names); NULL for an unknown dtype. */
NDF_API const char *ndf_dtype_name(ndf_dtype t);
/* Size of one element in bytes; 0 for an unknown dtype. */
NDF_API size_t ndf_dtype_size(ndf_dtype t);
/* Parses a NumPy dtype name ("float32", "u1", "<f4" ...). */
NDF_API ndf_status ndf_dtype_from_name(const char *name, ndf_dtype *out);

/*
 * A non-owning view of an n-dimensional array (DLPack meaning).
 * strides are in elements, not bytes, and may be negative (reversed views).
 * Inputs may also have zero strides (broadcast); an output must not overlap
 * itself or the input.  ndf_array_init fills C-contiguous (row-major) strides.
 */
typedef struct ndf_array {
  void *data;
  ndf_device_type device;
  int device_id;
  ndf_dtype dtype;
  int ndim;
  int64_t shape[NDF_MAX_NDIM];
  int64_t strides[NDF_MAX_NDIM];
} ndf_array;

/*
 * The largest array any call accepts: its elements times the element size,
 * and the bytes its strides span, at most NDF_MAX_BYTES (2^56, beyond any
 * address space), so that no size derived from a valid array overflows.  An
 * empty array (an extent 0) may have larger extents on other axes as long as
 * the product of its non-zero extents fits in int64.  Every call checks its
 * arrays against these rules before anything else (NDF_EINVAL).
 */
#define NDF_MAX_BYTES ((int64_t)1 << 56)
/* Overflow-checked size arithmetic for sizes from untrusted input: *out =
 * a * b and 1, or 0 (out untouched) when a or b is negative or the product
 * exceeds INT64_MAX. */
NDF_API int ndf_size_mul(int64_t a, int64_t b, int64_t *out);
/* Bytes of a C-contiguous array of that dtype and shape into *bytes, or
 * NDF_EINVAL (ndf_last_error names the shape) when an extent is negative or
 * the array breaks the NDF_MAX_BYTES rules. */
NDF_API ndf_status ndf_shape_bytes(ndf_dtype dtype, int ndim, const int64_t *shape, int64_t *bytes);

/* Fills a C-contiguous descriptor over data (device CPU, id 0 unless set);
 * NDF_EINVAL for a shape that breaks the NDF_MAX_BYTES rules. */
NDF_API ndf_status ndf_array_init(ndf_array *a, void *data, ndf_device_type device,
                                  ndf_dtype dtype, int ndim, const int64_t *shape);
/* Number of elements (product of the shape; 1 for ndim 0; 0 for NULL); -1
 * when the rank or an extent is out of range or the product overflows. */
NDF_API int64_t ndf_array_size(const ndf_array *a);
/* 1 if the strides are C-contiguous row-major. */
NDF_API int ndf_array_is_contiguous(const ndf_array *a);

/* ------------------------------------------------------------------------ */
/* Context                                                                   */

typedef struct ndf_ctx ndf_ctx;

typedef enum {
  NDF_BACKEND_AUTO = 0, /* CUDA when a device is usable, else CPU only */
  NDF_BACKEND_CPU = 1,  /* never touch the CUDA driver */
  NDF_BACKEND_CUDA = 2  /* fail with NDF_ENODEV when no device is usable */
} ndf_backend;

/* Most CPU threads a context runs (ndf_ctx_options.cpu_threads). */
#define NDF_MAX_CPU_THREADS 1024

typedef struct ndf_ctx_options {
  ndf_backend backend;
  int device;            /* CUDA device ordinal (default 0) */
  void *stream;          /* a CUstream owned by the caller, or NULL for a stream the context creates */
  const char *cache_dir; /* NULL: $NDF_CACHE_DIR, else $XDG_CACHE_HOME/ndforge, else ~/.cache/ndforge */
  int cache_disable;     /* 1: no disk cache (also $NDF_CACHE_DISABLE=1) */
  /* Threads of the CPU backend (OpenMP): every CPU op runs its work on this many, and its
   * result does not depend on the count.  0 = OpenMP's default (OMP_NUM_THREADS, else one
   * per core), capped at NDF_MAX_CPU_THREADS; negative or above that maximum is NDF_EINVAL. */
  int cpu_threads;
  /* 1: deferred data checks (CUDA; default 0).  A call whose check of the input's values can
   * only be done by its kernel (NaN in an exact ECC's float input; infinite values with
   * [min, max] thresholds) may return NDF_OK without waiting for that check, so that it does
   * not synchronize the stream.  When the check fails the kernel writes nothing (the output
   * keeps its contents) and the next ndf_ctx_synchronize -- or device-to-host ndf_array_copy --
   * returns NDF_EINVAL with the call's message; the first failure since the last of those is
   * the one reported.  0: such calls wait for their check and return its error themselves. */
  int deferred_errors;
  /* Most bytes of device memory the context's arrays and scratch may hold at once (0 = no
   * limit, the default).  Counted: ndf_array_alloc's CUDA arrays until ndf_array_free, and
   * the scratch its ops take (each allocation at its requested size: during a call, and
   * between calls where a family keeps a workspace, as the ECC's).  An allocation that would
   * take the count past the limit fails with NDF_ENOMEM and a message naming the limit, as the
   * device running out does; nothing else changes.  Not counted: the memory pool's reserve
   * beyond the live scratch (ADR 0012), kernel modules, cached structuring-element tables,
   * Sinkhorn's per-context buffer, arrays the caller allocates itself (ADR 0031).  Free an
   * array with the context that allocated it: another context does not give its bytes back. */
  size_t device_memory_limit;
} ndf_ctx_options;

/* Default options: AUTO backend, device 0, own stream, default cache dir. */
NDF_API void ndf_ctx_options_init(ndf_ctx_options *opt);
/* *out is NULL on failure; the message of a failed create is ndf_last_error(). */
NDF_API ndf_status ndf_ctx_create(ndf_ctx **out, const ndf_ctx_options *opt);
/* Waits for the context's pending work, then frees it.  NULL is a no-op. */
NDF_API void ndf_ctx_destroy(ndf_ctx *ctx);
/* Message of the last failed call on ctx ("" after success); owned by ctx, valid until its next call. */
NDF_API const char *ndf_errmsg(const ndf_ctx *ctx);
/* Thread-local message of the last failure outside any context (ndf_ctx_create, ndf_array_* helpers). */
NDF_API const char *ndf_last_error(void);
/* 1 if the context has a usable CUDA device. */
NDF_API int ndf_ctx_has_cuda(const ndf_ctx *ctx);
/* Blocks until all work queued on the context's stream is done; then returns the first failed
 * deferred data check since the last synchronize (ndf_ctx_options.deferred_errors), if any. */
NDF_API ndf_status ndf_ctx_synchronize(ndf_ctx *ctx);
/* The context's CUstream (NULL without CUDA). */
NDF_API void *ndf_ctx_stream(const ndf_ctx *ctx);
/* Disk cache directory of the context ("" when the disk cache is off). */
NDF_API const char *ndf_ctx_cache_dir(const ndf_ctx *ctx);
/* Why the disk cache is off although it was not turned off (cache_disable,
 * NDF_CACHE_DISABLE): the directory cannot be created, is not a directory,
 * or its path is too long (it is never cut short); "" otherwise.  Such a
 * context runs without a disk cache. */
NDF_API const char *ndf_ctx_cache_problem(const ndf_ctx *ctx);

/* What the context knows about its device and compiler, for `ndforge info`. */
typedef struct ndf_ctx_info {
  int has_cuda;
  char device_name[256];
  int cc_major, cc_minor;  /* compute capability */
  int driver_version;      /* cuDriverGetVersion, e.g. 13000 */
  int nvrtc_major, nvrtc_minor; /* 0.0 when NVRTC is not loaded */
  int sm_count;
  size_t total_mem;
} ndf_ctx_info;
NDF_API ndf_status ndf_ctx_get_info(ndf_ctx *ctx, ndf_ctx_info *info);

/* Kernel-cache statistics of a context (for benchmarks and tests). */
typedef struct ndf_cache_stats {
  uint64_t memory_hits;   /* found in the context's in-memory table */
  uint64_t disk_hits;     /* loaded from the disk cache */
  uint64_t compiles;      /* compiled by NVRTC */
  uint64_t disk_rejects;  /* disk entries found corrupt/truncated/mismatched and deleted */
  double compile_ms;      /* total NVRTC time */
} ndf_cache_stats;
NDF_API void ndf_ctx_cache_stats(const ndf_ctx *ctx, ndf_cache_stats *out);

/* The kernel log (for tests, benchmarks and diagnostics): the GPU kernels the
 * context launched, numbered from 0 in launch order since ndf_ctx_create.
 * The count includes every launch; the last 256 are kept.  An entry names the
 * specialization: "template|kernel|SLOT=value|..." (the kernel's template,
 * entry point and slot values; a slot may hold generated code; then
 * "|~jit=F,L" where jit.fast_compile or jit.lean is not its default), owned by
 * the context and valid until ndf_ctx_destroy.  The CPU backend launches nothing. */
NDF_API uint64_t ndf_ctx_kernel_count(const ndf_ctx *ctx);
/* Launch number i, or NULL when i >= ndf_ctx_kernel_count() or it has left the log. */
NDF_API const char *ndf_ctx_kernel_launched(const ndf_ctx *ctx, uint64_t i);

/* ------------------------------------------------------------------------ */
/* Host helpers for callers without a framework                              */

/* Allocates a C-contiguous array on the context's device (CUDA) or host (CPU). */
NDF_API ndf_status ndf_array_alloc(ndf_ctx *ctx, ndf_array *a, ndf_device_type device,
                                   ndf_dtype dtype, int ndim, const int64_t *shape);
/* Frees memory from ndf_array_alloc and clears a->data.  NULL data is a no-op. */
NDF_API void ndf_array_free(ndf_ctx *ctx, ndf_array *a);
/* Copies src into dst (same dtype and shape; any devices, any strides).
 * Host<->device copies are synchronous with respect to the host. */
NDF_API ndf_status ndf_array_copy(ndf_ctx *ctx, ndf_array *dst, const ndf_array *src);

/* ------------------------------------------------------------------------ */
/* Common options                                                            */

/* Boundary modes of scipy.ndimage (the grid-* names are aliases for filters). */
typedef enum {
  NDF_MODE_REFLECT = 0,  /* d c b a | a b c d | d c b a   (= grid-mirror) */
  NDF_MODE_CONSTANT = 1, /* k k k k | a b c d | k k k k   (= grid-constant) */
  NDF_MODE_NEAREST = 2,  /* a a a a | a b c d | d d d d */
  NDF_MODE_MIRROR = 3,   /*   d c b | a b c d | c b a     (n = 1: nearest) */
  NDF_MODE_WRAP = 4,     /* a b c d | a b c d | a b c d   (= grid-wrap) */
  NDF_MODE_COUNT
} ndf_mode;

/* Accepts scipy's names: reflect, constant, nearest, mirror, wrap,
 * grid-mirror, grid-constant, grid-wrap. */
NDF_API ndf_status ndf_mode_from_name(const char *name, ndf_mode *out);
NDF_API const char *ndf_mode_name(ndf_mode m);

/*
 * NaN handling of min/max filters.  scipy leaves it undefined (its result
 * depends on the scan order); ndforge defines it:
 *   NDF_NAN_PROPAGATE (default): an output is NaN when any value under the
 *   structuring element (including cval in constant mode) is NaN.
 */
typedef enum { NDF_NAN_PROPAGATE = 0 } ndf_nan_policy;

/* ------------------------------------------------------------------------ */
/* Grey morphology                                                           */

/*
 * How a grey min/max step is computed (docs/adr/0008-grey-algorithms.md).
 * Every algorithm gives the same result bit for bit (NaN payloads aside);
 * they differ in cost.  Choosing one that is not exact for the element or
 * the mode is an error (NDF_EINVAL), not a silent fallback.
 *   NDF_GREY_AUTO (default): the cheapest exact one.
 *   NDF_GREY_DIRECT: every tap of the element for every voxel, O(taps).
 *   NDF_GREY_SEPARABLE: flat boxes only; one 1-D pass per axis, O(size) each.
 *   NDF_GREY_VHGW: flat boxes only; one van Herk/Gil-Werman 1-D pass per axis,
 *     about 3 comparisons per voxel whatever the size.
 *   NDF_GREY_DECOMPOSED: flat footprints equal to
 *     iterate_structure(generate_binary_structure(n, c), k) (boxes, diamonds,
 *     crosses) with origin 0: k steps of the 3^n element.
 */
typedef enum {
  NDF_GREY_AUTO = 0,
  NDF_GREY_DIRECT = 1,
  NDF_GREY_SEPARABLE = 2,
  NDF_GREY_VHGW = 3,
  NDF_GREY_DECOMPOSED = 4,
  NDF_GREY_ALGORITHM_COUNT
} ndf_grey_algorithm;

/* Accepts auto, direct, separable, vhgw, decomposed. */
NDF_API ndf_status ndf_grey_algorithm_from_name(const char *name, ndf_grey_algorithm *out);
NDF_API const char *ndf_grey_algorithm_name(ndf_grey_algorithm a);

/*
 * Options of ndf_grey_erosion / ndf_grey_dilation, named as in
 * scipy.ndimage.grey_erosion(input, size, footprint, structure, output, mode,
 * cval, origin).  Exactly scipy's rules apply:
 *   - at least one of size, footprint, structure;
 *   - footprint wins over size; structure implies footprint = ones(structure.shape)
 *     when no footprint is given;
 *   - size and origin take one value (all spatial axes) or one per spatial axis;
 *   - footprint and structure are host arrays with one axis per spatial axis
 *     (any dtype; footprint: non-zero = in; structure: values as float64).
 * batch_dims leading axes of the input are independent images: the element
 * spans only the remaining (spatial) axes.  0 = scipy semantics.
 */
typedef struct ndf_grey_options {
  int nsize;                 /* 0: no size; 1: same for every axis; else = spatial ndim */
  int64_t size[NDF_MAX_SPATIAL];
  const ndf_array *footprint;  /* NULL or a CPU array */
  const ndf_array *structure;  /* NULL or a CPU array */
  int norigin;               /* 0: origin 0; 1: same for every axis; else = spatial ndim */
  int64_t origin[NDF_MAX_SPATIAL];
  ndf_mode mode;             /* default NDF_MODE_REFLECT */
  double cval;               /* constant mode value (converted to the input dtype first) */
  int batch_dims;
  ndf_nan_policy nan_policy;
  ndf_grey_algorithm algorithm; /* default NDF_GREY_AUTO */
  const char *tune;          /* NULL, or tunables for this call, "name=value,..." (over the context's; ADR 0019) */
} ndf_grey_options;

/* Zeroes *opt: no size/footprint/structure, origin 0, mode reflect, cval 0. */
NDF_API void ndf_grey_options_init(ndf_grey_options *opt);

/* out must have the input's shape and dtype, live on the same device and not
 * overlap the input.  Inputs: every dtype but bool.  int64 and uint64 are
 * exact for every value (scipy 1.10 computes them in double, so it rounds
 * values beyond 2^53); with a structure they are weighted in double and
 * saturated to the dtype, as the narrower integers. */
NDF_API ndf_status ndf_grey_erosion(ndf_ctx *ctx, const ndf_array *input, ndf_array *output,
                                    const ndf_grey_options *opt);
NDF_API ndf_status ndf_grey_dilation(ndf_ctx *ctx, const ndf_array *input, ndf_array *output,
                                     const ndf_grey_options *opt);

/*
 * Composite grey morphology, as scipy.ndimage composes it (same options as
 * ndf_grey_erosion; the element, mode, cval and origin apply to every step):
 *   ndf_grey_opening            dilation(erosion(input))
 *   ndf_grey_closing            erosion(dilation(input))
 *   ndf_morphological_gradient  dilation(input) - erosion(input)
 *   ndf_morphological_laplace   ((dilation(input) + erosion(input)) - input) - input
 *   ndf_white_tophat            input - opening(input)
 *   ndf_black_tophat            closing(input) - input
 * Arithmetic is NumPy's in the input dtype: integers wrap around, float32
 * rounds after every step.  Intermediates live in scratch memory of the
 * context (stream-ordered on CUDA).
 */
NDF_API ndf_status ndf_grey_opening(ndf_ctx *ctx, const ndf_array *input, ndf_array *output,
                                    const ndf_grey_options *opt);
NDF_API ndf_status ndf_grey_closing(ndf_ctx *ctx, const ndf_array *input, ndf_array *output,
                                    const ndf_grey_options *opt);
NDF_API ndf_status ndf_morphological_gradient(ndf_ctx *ctx, const ndf_array *input, ndf_array *output,
                                              const ndf_grey_options *opt);
NDF_API ndf_status ndf_morphological_laplace(ndf_ctx *ctx, const ndf_array *input, ndf_array *output,
                                             const ndf_grey_options *opt);
NDF_API ndf_status ndf_white_tophat(ndf_ctx *ctx, const ndf_array *input, ndf_array *output,
                                    const ndf_grey_options *opt);
NDF_API ndf_status ndf_black_tophat(ndf_ctx *ctx, const ndf_array *input, ndf_array *output,
                                    const ndf_grey_options *opt);

/* ------------------------------------------------------------------------ */
/* Rank filters                                                              */

/*
 * NaN handling of rank filters (scipy leaves it undefined):
 *   NDF_RANK_NAN_PROPAGATE (default): a window holding NaN gives NaN.
 *   NDF_RANK_NAN_OMIT: NaNs are left out of the window; median and percentile
 *     take their rank on the remaining count (median: m//2, percentile:
 *     int(m*p/100)); an explicit rank r (negative: from the end of the full
 *     window) that the remaining values cannot reach gives NaN, as does a
 *     window of NaNs only.
 * +-inf are ordinary values.  -0.0 and 0.0 compare equal, as in scipy.
 */
typedef enum { NDF_RANK_NAN_PROPAGATE = 0, NDF_RANK_NAN_OMIT = 1 } ndf_rank_nan_policy;

/* How the rank is selected (every choice gives the same result):
 *   NDF_RANK_ALGO_AUTO       the fastest for the backend and window (default);
 *   NDF_RANK_ALGO_NETWORK    a generated selection network (every rank up to 27
 *                            taps, the median up to 49); NDF_EINVAL where none exists;
 *   NDF_RANK_ALGO_SELECT     the general selection: quickselect on the CPU, a
 *                            bitwise radix select on order-preserving keys on CUDA;
 *   NDF_RANK_ALGO_HISTOGRAM  a sliding 256-bin histogram per output column (CUDA;
 *                            quickselect on the CPU): uint8/int8 data and a box
 *                            window (size=) over at least 2 spatial axes with
 *                            fewer than 65536 taps; NDF_EINVAL otherwise;
 *   NDF_RANK_ALGO_TILE       a sorted tile and a sliding bitset of tile ranks
 *                            per output column (CUDA; quickselect on the CPU):
 *                            data up to 32 bits and a box window (size=) over
 *                            the last two spatial axes only (every other extent
 *                            1) of up to 16384 taps; NDF_EINVAL otherwise.
 * AUTO on the CPU runs box windows (size=) of 4 to 4096 taps by sorted slices
 * (each column of the window sorted once, the rank walked from the previous
 * window's) and other windows by SELECT; on CUDA the network where one exists,
 * else the tile where it applies, else the histogram where it applies, else SELECT. */
typedef enum {
  NDF_RANK_ALGO_AUTO = 0,
  NDF_RANK_ALGO_NETWORK = 1,
  NDF_RANK_ALGO_SELECT = 2,
  NDF_RANK_ALGO_HISTOGRAM = 3,
  NDF_RANK_ALGO_TILE = 4
} ndf_rank_algorithm;

/* Options of ndf_median_filter, ndf_rank_filter and ndf_percentile_filter,
 * named as in scipy.ndimage: size (or footprint, which wins), mode (one for
 * all axes), cval (converted to the input dtype first, as for grey
 * morphology; a cval outside an integer dtype's range, such as a negative one
 * for uint64, is NDF_EINVAL where scipy's C cast is undefined: ADR 0003),
 * origin, plus batch_dims and nan_policy. */
typedef struct ndf_rank_options {
  int nsize;
  int64_t size[NDF_MAX_SPATIAL];
  const ndf_array *footprint;
  int norigin;
  int64_t origin[NDF_MAX_SPATIAL];
  ndf_mode mode;
  double cval;
  int batch_dims;
  ndf_rank_nan_policy nan_policy;
  ndf_rank_algorithm algorithm;
  const char *tune; /* NULL, or tunables for this call, "name=value,..." (over the context's; ADR 0019) */
} ndf_rank_options;

/* No size/footprint, origin 0, mode reflect, cval 0, NaN propagates, AUTO algorithm. */
NDF_API void ndf_rank_options_init(ndf_rank_options *opt);

/* scipy.ndimage.median_filter: element n//2 of the sorted window of n taps
 * (the upper median for even n, no averaging). */
NDF_API ndf_status ndf_median_filter(ndf_ctx *ctx, const ndf_array *input, ndf_array *output,
                                     const ndf_rank_options *opt);
/* scipy.ndimage.rank_filter: rank in [-n, n) (negative counts from the end). */
NDF_API ndf_status ndf_rank_filter(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, int64_t rank,
                                   const ndf_rank_options *opt);
/* scipy.ndimage.percentile_filter: p in [-100, 100] (p < 0 means p + 100);
 * rank int(n*p/100), and n-1 for p = 100.  The rank filters take every dtype
 * but bool; int64 and uint64 select among the values themselves, exact
 * beyond 2^53 (the CUDA paths: selection networks and the radix select on
 * 64-bit keys; the histogram and tile forms serve 8- to 32-bit inputs). */
NDF_API ndf_status ndf_percentile_filter(ndf_ctx *ctx, const ndf_array *input, ndf_array *output,
                                         double percentile, const ndf_rank_options *opt);

/* ------------------------------------------------------------------------ */
/* Binary morphology                                                         */

/*
 * Options of the binary ops, named as in scipy.ndimage.binary_erosion(input,
 * structure, iterations, mask, output, border_value, origin, brute_force):
 *   structure     NULL: generate_binary_structure(spatial rank, 1); else a host
 *                 array, one axis per spatial axis, non-zero = in.
 *   iterations    >= 1: that many steps; < 1: repeat until nothing changes
 *                 (NDF_ENOTSUP when the sequence cycles instead, which scipy
 *                 would loop on forever: an off-centre structure can do it).
 *   mask          NULL, or an array shaped like the input on its device:
 *                 where it is zero the output keeps the input.
 *   border_value  0 or 1: the value outside the image, for erosion too.
 *   origin        as for grey morphology (dilation reflects it as scipy).
 *   brute_force   accepted for scipy compatibility; results are identical.
 * Inputs may have any dtype (non-zero = foreground); outputs are NDF_BOOL or
 * NDF_UINT8 holding 0/1.  batch_dims leading axes are independent images.
 */
typedef struct ndf_binary_options {
  const ndf_array *structure;
  int iterations;
  const ndf_array *mask;
  int border_value;
  int norigin;
  int64_t origin[NDF_MAX_SPATIAL];
  int brute_force;
  int batch_dims;
} ndf_binary_options;

/* structure NULL, iterations 1, no mask, border_value 0, origin 0. */
NDF_API void ndf_binary_options_init(ndf_binary_options *opt);

NDF_API ndf_status ndf_binary_erosion(ndf_ctx *ctx, const ndf_array *input, ndf_array *output,
                                      const ndf_binary_options *opt);
NDF_API ndf_status ndf_binary_dilation(ndf_ctx *ctx, const ndf_array *input, ndf_array *output,
                                       const ndf_binary_options *opt);
/* dilation(erosion(x)) / erosion(dilation(x)), every option passed to both steps. */
NDF_API ndf_status ndf_binary_opening(ndf_ctx *ctx, const ndf_array *input, ndf_array *output,
                                      const ndf_binary_options *opt);
NDF_API ndf_status ndf_binary_closing(ndf_ctx *ctx, const ndf_array *input, ndf_array *output,
                                      const ndf_binary_options *opt);
/* binary_dilation with iterations < 1 (iterations is ignored). */
NDF_API ndf_status ndf_binary_propagation(ndf_ctx *ctx, const ndf_array *input, ndf_array *output,
                                          const ndf_binary_options *opt);
/* NOT propagation of zeros into NOT input with border_value 1: structure is the
 * background connectivity.  Only structure, origin and batch_dims are used. */
NDF_API ndf_status ndf_binary_fill_holes(ndf_ctx *ctx, const ndf_array *input, ndf_array *output,
                                         const ndf_binary_options *opt);

/* scipy.ndimage.binary_hit_or_miss(input, structure1, structure2, output, origin1, origin2). */
typedef struct ndf_hit_or_miss_options {
  const ndf_array *structure1;  /* NULL: generate_binary_structure(rank, 1) */
  const ndf_array *structure2;  /* NULL: NOT structure1 */
  int norigin1;
  int64_t origin1[NDF_MAX_SPATIAL];
  int norigin2;                 /* -1: origin2 = origin1 (scipy's origin2=None) */
  int64_t origin2[NDF_MAX_SPATIAL];
  int batch_dims;
} ndf_hit_or_miss_options;
/* origins 0, origin2 = origin1, default structures. */
NDF_API void ndf_hit_or_miss_options_init(ndf_hit_or_miss_options *opt);
NDF_API ndf_status ndf_binary_hit_or_miss(ndf_ctx *ctx, const ndf_array *input, ndf_array *output,
                                          const ndf_hit_or_miss_options *opt);

/* scipy.ndimage.generate_binary_structure(rank, connectivity) into out, a host
 * NDF_BOOL/NDF_UINT8 array of shape (3,)*rank (rank 1..NDF_MAX_SPATIAL);
 * connectivity < 1 counts as 1. */
NDF_API ndf_status ndf_generate_binary_structure(int rank, int connectivity, ndf_array *out);
/* scipy.ndimage.iterate_structure(structure, iterations, origin): out (host,
 * NDF_BOOL/NDF_UINT8) must have shape s + (iterations-1)*(s-1) per axis
 * (ndf_iterate_structure_shape tells it); origin_out (may be NULL, else rank
 * entries) receives iterations * origin from norigin values (0, 1 or rank);
 * for iterations < 2 the structure is copied and the origin passed through
 * (scipy returns no origin there).  Bounded work: the iterated structure
 * holds at most NDF_MAX_STRUCTURE_ELEMENTS elements, and (iterations - 1) x
 * its elements x the true elements of the structure (the dilation steps that
 * build it) is at most NDF_MAX_STRUCTURE_WORK; beyond either, NDF_EINVAL
 * before any allocation. */
#define NDF_MAX_STRUCTURE_ELEMENTS ((int64_t)1 << 24)
#define NDF_MAX_STRUCTURE_WORK ((int64_t)1 << 34)
NDF_API ndf_status ndf_iterate_structure_shape(const ndf_array *structure, int iterations, int64_t *shape);
NDF_API ndf_status ndf_iterate_structure(const ndf_array *structure, int iterations, ndf_array *out,
                                         int norigin, const int64_t *origin, int64_t *origin_out);

/*
 * scipy.ndimage.label(input, structure): output receives 1..n for the
 * connected features of input (non-zero = foreground), numbered in scipy's
 * scan order of each feature's first voxel, 0 for background.  scipy scans
 * lines along the output's axis of smallest positive stride (numpy's
 * PyArray_IterAllButAxis choice; among the spatial axes with batch_dims), the
 * lines in C order of the other axes: raster (C) order for a C-ordered output,
 * lines along axis 0 for a Fortran-ordered one.  When that scan opens more
 * provisional labels than the output dtype holds, scipy labels into a
 * C-ordered int32 array and copies it: raster order then.
 * structure: NULL = generate_binary_structure(rank, 1), else a host array of
 * shape (3,)*rank that is symmetric (as scipy requires).  The output may have
 * any integer or float dtype; when n does not fit it, NDF_EINVAL ("insufficient
 * bit-depth") and nothing is written.  A bool output is scipy's npy_bool: it
 * receives the labels' bytes as a uint8 output would, and where scipy's first
 * pass overflows the byte (then it casts int32 labels to bool), more than one
 * feature is NDF_EINVAL ("insufficient bit-depth").  With batch_dims, every image is
 * labelled on its own from 1; num_features (may be NULL) receives one count
 * per image (product of the batch axes; 1 entry when batch_dims = 0).
 */
NDF_API ndf_status ndf_label(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, const ndf_array *structure,
                             int batch_dims, int64_t *num_features);

/* ------------------------------------------------------------------------ */
/* Distance transforms                                                       */

/* Metrics of the distance transforms (scipy.ndimage's names). */
typedef enum {
  NDF_METRIC_DEFAULT = 0,    /* the op's own default: chessboard for cdt, euclidean for bf */
  NDF_METRIC_EUCLIDEAN = 1,
  NDF_METRIC_TAXICAB = 2,    /* = cityblock = manhattan */
  NDF_METRIC_CHESSBOARD = 3
} ndf_metric;
/* Accepts euclidean, taxicab, cityblock, manhattan, chessboard (any case, as scipy's bf). */
NDF_API ndf_status ndf_metric_from_name(const char *name, ndf_metric *out);
NDF_API const char *ndf_metric_name(ndf_metric m);

/*
 * Options of the three distance transforms, named as in scipy.ndimage:
 *   sampling          edt and bf (euclidean only, as in scipy; ignored by bf's
 *                     other metrics): spacing per spatial axis; nsampling 0 =
 *                     unit spacing, 1 = one value for every axis, else one per
 *                     spatial axis.  Values must be finite and > 0.
 *   metric            cdt: TAXICAB or CHESSBOARD (DEFAULT = chessboard);
 *                     bf: EUCLIDEAN, TAXICAB or CHESSBOARD (DEFAULT = euclidean).
 *   metric_structure  cdt only: a host array of shape (3,)*spatial rank (any
 *                     dtype, non-zero = in) used instead of metric, as scipy's
 *                     distance_transform_cdt(metric=array).
 *   batch_dims        leading axes that are independent images (0 = scipy).
 */
typedef struct ndf_distance_options {
  int nsampling;
  double sampling[NDF_MAX_SPATIAL];
  ndf_metric metric;
  const ndf_array *metric_structure;
  int batch_dims;
} ndf_distance_options;

/* Unit sampling, the op's default metric, no structure, batch_dims 0. */
NDF_API void ndf_distance_options_init(ndf_distance_options *opt);

/*
 * The three transforms share their arrays:
 *   input      any dtype, any strides; non-zero (NaN too) is foreground, zero is
 *              the background whose distance is measured.
 *   distances  NULL (not wanted) or an array shaped like the input on its
 *              device: float64 or float32 for edt (float32 = scipy's float64
 *              result rounded), int32 for cdt, float64 (euclidean) or uint32
 *              (taxicab, chessboard) for bf -- scipy's dtypes.
 *   indices    NULL (not wanted) or int32 of shape batch + (spatial rank,) +
 *              spatial shape: per image, scipy's (ndim,) + input.shape feature
 *              transform (coordinates of the nearest background voxel).
 * At least one of distances and indices must be given.  Images of 2^31
 * voxels or more are NDF_ENOTSUP (scipy's indices are int32 too).
 *
 * distance_transform_edt: exact Euclidean distance, computed as scipy does
 * (Maurer's separable Voronoi passes over axes 0..n-1 in double, then
 * sqrt(sum_i ((f_i - x_i) * sampling_i)^2)), so distances and indices are
 * bit-identical to scipy's.  Ties: the nearest background voxel whose
 * coordinates are smallest comparing the last axis first.  An image without
 * background gives index (-1, 0, ..., 0) and distance
 * sqrt(((x_0 + 1) s_0)^2 + (x_1 s_1)^2 + ...), as scipy.
 *
 * distance_transform_cdt: scipy's two raster passes (forward, then backward)
 * with the first half of the metric's 3^n structure, updating only on strict
 * improvement; voxels no background reaches get -1 and their own index.
 *
 * distance_transform_bf: the brute-force oracle over the boundary background
 * (background voxels with a foreground neighbour, full connectivity); ties go
 * to the highest raster index.  An image without background voxels next to
 * the foreground gives sqrt(DBL_MAX) (euclidean) or UINT32_MAX and index 0.
 *
 * Backends: CPU for all three; CUDA arrays (stream-ordered, like every GPU
 * op) for edt and bf, distances and indices bit-identical to the CPU's, and
 * for cdt distances with the taxicab or chessboard metric (by name, or the
 * structure generate_binary_structure(rank, 1) / (rank, rank)), equal to the
 * CPU's, spatial axes shorter than 2^29.  cdt indices and other cdt metric
 * structures on CUDA arrays: NDF_ENOTSUP in this version (they run on the
 * CPU backend).
 */
NDF_API ndf_status ndf_distance_transform_edt(ndf_ctx *ctx, const ndf_array *input, ndf_array *distances,
                                              ndf_array *indices, const ndf_distance_options *opt);
NDF_API ndf_status ndf_distance_transform_cdt(ndf_ctx *ctx, const ndf_array *input, ndf_array *distances,
                                              ndf_array *indices, const ndf_distance_options *opt);
NDF_API ndf_status ndf_distance_transform_bf(ndf_ctx *ctx, const ndf_array *input, ndf_array *distances,
                                             ndf_array *indices, const ndf_distance_options *opt);

/*
 * ndf_distance_edt_pass: one of distance_transform_edt's passes, on a state the
 * caller keeps -- the building block that transforms a volume in pieces
 * (ndforge.dask runs the passes of spatial axes 0, 1, ..., n-1 in turn, each
 * on chunks that hold whole lines along its axis).
 *   sqdist    float64, in place: per voxel the squared distance over the axes
 *             passed so far to its feature, +inf where it has none yet.
 *             Before the first pass: 0 on the background, +inf elsewhere.
 *   features  NULL, or int64 shaped like sqdist on its device, in place: an
 *             id of each voxel's feature (any value >= 0; ndforge.dask uses
 *             the background voxel's flat index), read and written where
 *             sqdist is finite; elsewhere neither read nor written.
 *   axis      the axis of the lines (any axis of the arrays; the others only
 *             enumerate lines, so batch axes need nothing).
 *   sampling  the spacing along axis (finite, > 0).
 * A pass solves, on every line along axis, out(i) = min over finite x of
 * sqdist(x) + ((x - i) * sampling)^2 with scipy's arithmetic and ties (the
 * lower envelope of distance_transform_edt), so after the passes of every
 * spatial axis in order, sqrt(sqdist) and the features are
 * distance_transform_edt's distances and nearest background voxels bit for
 * bit, whatever pieces the passes ran on.  A line without a finite value is
 * left as it is (an image without background: scipy's distances then come
 * from the virtual feature (-1, 0, ..., 0), which this op does not make).
 * sqdist values must be >= 0 or +inf: the CPU backend refuses others
 * (NDF_EINVAL, nothing written); on CUDA arrays they are not checked and
 * give an unspecified result.  Any strides; CPU and CUDA arrays.
 */
NDF_API ndf_status ndf_distance_edt_pass(ndf_ctx *ctx, ndf_array *sqdist, ndf_array *features, int axis,
                                         double sampling);

/* ------------------------------------------------------------------------ */
/* Entropic optimal transport (batched Sinkhorn)                              */

/*
 * The problem.  For histograms a, b >= 0 of dimension d with equal mass
 * (sum a = sum b = m) and a cost C (d x d):
 *
 *   OT_eps(a, b) = min over P >= 0 with P 1 = a, P^T 1 = b of
 *                  <P, C> + eps * sum_ij P_ij log P_ij          (0 log 0 = 0)
 *
 * The optimal plan is P_ij = exp((f_i + g_j - C_ij) / eps) for dual
 * potentials f, g, and then OT_eps = <a, f> + <b, g> exactly (substitute P
 * into the objective).  Sinkhorn's iteration, one iteration = both updates:
 *
 *   f_i = eps log a_i - eps LSE_j((g_j - C_ij) / eps)    (row marginals exact)
 *   g_j = eps log b_j - eps LSE_i((f_i - C_ij) / eps)    (column marginals exact)
 *
 * starting from g = 0; the scaling form runs the same iteration on
 * u = exp(f/eps), v = exp(g/eps) (u = a / K v, v = b / K^T u, K = exp(-C/eps)).
 * A zero bin a_i = 0 gives f_i = -inf (P's row i is zero), likewise g; this
 * is not an error and produces no NaN.
 *
 * Outputs, per histogram pair, all evaluated at the final iterate (f, g after
 * the last iteration, P = exp((f + g - C)/eps); they are the quantities
 * below exactly at convergence):
 *   transport_cost  <P, C> of the entropic plan (what TorchMorph returns;
 *                   NOT the quantity whose gradient f, g are).
 *   objective       OT_eps = <a, f> + <b, g> (terms with a_i = 0 or b_j = 0
 *                   count as 0).
 *   f, g            the dual potentials.  They are the gradient of OT_eps
 *                   (not of <P, C>) with respect to a and b, by the envelope
 *                   theorem: for a feasible perturbation (sum da = sum db)
 *                     dOT_eps = <da, f> + <db, g> + eps (sum da + sum db) / 2
 *                   to first order; on the simplex (sum da = sum db = 0, the
 *                   usual case: normalized histograms) that is exactly
 *                   <da, f> + <db, g>.  (The last term comes from the mass:
 *                   OT_eps(t a, t b) = t OT_eps(a, b) + eps m t log t.)
 *                   (f, g) and (f + c, g - c) give the same plan, and the
 *                   constant c does not change the derivative (it adds
 *                   c (sum da - sum db) = 0); the outputs fix it by
 *                   <a, f> = <b, g> (= OT_eps / 2).  Entries at zero bins are
 *                   -inf (one-sided derivatives there are not given).
 *   iterations      iterations run (int32).
 *   error           sum_i |(P 1)_i - a_i|, the L1 error of the row marginals
 *                   after the last iteration (the column marginals are exact).
 * Each histogram pair is solved independently: its results do not depend on
 * the other pairs of the batch.  A pair stops at the first check (every
 * check_every iterations) whose error is <= tol; tol = 0 runs max_iter.
 */
typedef struct ndf_sinkhorn ndf_sinkhorn;

typedef enum {
  NDF_OT_COST_DENSE = 0,        /* a d x d float64 matrix (opt.cost), copied at create */
  NDF_OT_COST_GRID_LP = 1,      /* grid: C = scale * sum_k |x_k - y_k|^p, p = 1 or 2;
                                   exp(-C/eps) applied axis by axis, never d x d */
  NDF_OT_COST_GRID_EUCLIDEAN = 2 /* grid: C = scale * sqrt(sum_k (x_k - y_k)^2), computed
                                   from the index offsets (a table of d values), never d x d */
} ndf_ot_cost;

typedef struct ndf_sinkhorn_options {
  int64_t n;               /* histogram pairs per solve (>= 1) */
  int64_t d;               /* bins per histogram (grid costs: the product of grid_shape) */
  ndf_ot_cost cost_kind;
  const ndf_array *cost;   /* DENSE: (d, d) float32/float64 CPU array, finite, >= 0 not required */
  int grid_ndim;           /* grid costs: 1 .. NDF_MAX_SPATIAL */
  int64_t grid_shape[NDF_MAX_SPATIAL]; /* C order: bin index = raster index of the grid */
  int p;                   /* GRID_LP: 1 or 2 (default 2) */
  double grid_scale;       /* grid costs: multiplies the cost in grid-index units (default 1) */
  double epsilon;          /* > 0 */
  int max_iter;            /* >= 1 (default 100) */
  double tol;              /* >= 0; 0 = always max_iter (default 0) */
  int check_every;         /* >= 1: iterations between error checks (default 10) */
  int log_domain;          /* 1: log-domain (stabilized) iteration; 0: scaling form */
  ndf_device_type device;  /* backend: NDF_DEVICE_CPU, or NDF_DEVICE_CUDA (the context's device) */
  ndf_dtype dtype;         /* arithmetic: NDF_FLOAT64 (default; the CPU backend's only one) or,
                              on CUDA, NDF_FLOAT32 */
} ndf_sinkhorn_options;

/* Defaults: dense cost, p = 2, grid_scale 1, epsilon 0.05, max_iter 100, tol 0,
 * check_every 10, scaling form, CPU, float64.  n, d and the cost must be set.
 * On CUDA the inputs and outputs stay host arrays (the solver copies a, b in
 * and the results out); results are per pair those of the CPU backend's
 * definition, to rounding (docs/adr/0010-sinkhorn.md). */
NDF_API void ndf_sinkhorn_options_init(ndf_sinkhorn_options *opt);
/* Creates a solver (owns its cost data and buffers; the options' cost array is
 * copied).  *out is NULL on failure. */
NDF_API ndf_status ndf_sinkhorn_create(ndf_ctx *ctx, ndf_sinkhorn **out, const ndf_sinkhorn_options *opt);
/* Frees the solver and everything it owns.  NULL is a no-op.  A solver is
 * used by one thread at a time (solve keeps its potentials for plan). */
NDF_API void ndf_sinkhorn_destroy(ndf_sinkhorn *s);

/* Outputs of a solve: each pointer may be NULL (not wanted).  Arrays are CPU
 * arrays of any strides: transport_cost, objective, error (n,) float64,
 * iterations (n,) int32, f and g (n, d) float64. */
typedef struct ndf_sinkhorn_result {
  ndf_array *transport_cost;
  ndf_array *objective;
  ndf_array *f;
  ndf_array *g;
  ndf_array *iterations;
  ndf_array *error;
} ndf_sinkhorn_result;

/*
 * Solves the n pairs (a[k], b[k]); a and b are (n, d) float32 or float64 CPU
 * arrays, entries finite and >= 0, each row with mass > 0, and
 * |sum a[k] - sum b[k]| <= 1e-5 max(sum a[k], sum b[k]) (the library does not
 * normalize).  The scaling form fails with NDF_EINVAL when exp(-C/eps)
 * underflows so far that a scaling becomes 0/0 or infinite (use log_domain).
 * On failure no output is written.  The solver keeps the potentials of its
 * last successful solve for ndf_sinkhorn_plan.
 */
NDF_API ndf_status ndf_sinkhorn_solve(ndf_sinkhorn *s, const ndf_array *a, const ndf_array *b,
                                      const ndf_sinkhorn_result *res);
/* The plan P_ij = exp((f_i + g_j - C_ij) / eps) of pair `index` of the last
 * solve into plan, a (d, d) float64 CPU array.  One pair at a time: the
 * solver never holds an n x d x d buffer. */
NDF_API ndf_status ndf_sinkhorn_plan(ndf_sinkhorn *s, int64_t index, ndf_array *plan);
/* The dense cost of a grid cost kind (GRID_LP with p, or GRID_EUCLIDEAN) times
 * scale, into out, a (d, d) float64 CPU array, d = prod(shape). */
NDF_API ndf_status ndf_sinkhorn_grid_cost(ndf_ot_cost kind, int ndim, const int64_t *shape, int p,
                                          double scale, ndf_array *out);

/* ------------------------------------------------------------------------ */
/* Euler characteristic curves (docs/adr/0009-euler-characteristic-curves.md) */

/*
 * The cubical complex of an image f on a 2-D or 3-D grid, filtered by sublevel
 * sets {f <= t}:
 *   NDF_ECC_V  V-construction: voxels are vertices; a cell (edge, square,
 *              cube between neighbouring voxels) enters at the max of its
 *              vertices.  {f <= t} is then read with 4-/6-connectivity.
 *   NDF_ECC_T  T-construction: voxels are top cells (unit squares/cubes); a
 *              face enters at the min of the top cells holding it.  {f <= t}
 *              is then read with 8-/26-connectivity.
 */
typedef enum { NDF_ECC_V = 0, NDF_ECC_T = 1 } ndf_ecc_construction;
/* Most thresholds (nthresholds, or the length of values) of the curves and
 * transforms below; more is NDF_EINVAL.  On the CPU backend, a call whose
 * thresholds' working memory (their sort and a histogram per thread) exceeds
 * the host's physical memory fails with NDF_ENOMEM before allocating it. */
#define NDF_MAX_THRESHOLDS ((int64_t)1 << 30)
/* Accepts V, T (any case); names "V" and "T". */
NDF_API ndf_status ndf_ecc_construction_from_name(const char *name, ndf_ecc_construction *out);
NDF_API const char *ndf_ecc_construction_name(ndf_ecc_construction c);

/*
 * Options of ndf_euler_characteristic_curve:
 *   construction   NDF_ECC_V (default) or NDF_ECC_T.
 *   values         NULL, or a host 1-D float64/float32 array of T thresholds,
 *                  any order, ties and +-inf allowed, no NaN.
 *   nthresholds    when values is NULL: T >= 2 evenly spaced thresholds
 *                  t_k = lo + (hi - lo) * k / (T - 1), k = 0..T-1, evaluated
 *                  in double in that order, except t_{T-1} = hi exactly;
 *   has_range      0: [lo, hi] = [min, max] of the whole input (every image of
 *                  the batch shares the thresholds; the input must then be
 *                  finite); 1: [range_lo, range_hi] (finite, lo <= hi).
 *   batch_dims     leading axes that are independent images; 2 or 3 spatial
 *                  axes must remain.
 */
typedef struct ndf_ecc_options {
  ndf_ecc_construction construction;
  const ndf_array *values;
  int64_t nthresholds;
  int has_range;
  double range_lo, range_hi;
  int batch_dims;
} ndf_ecc_options;

/* V-construction, no values, 256 thresholds over [min, max], batch_dims 0. */
NDF_API void ndf_ecc_options_init(ndf_ecc_options *opt);

/*
 * Exact Euler characteristic curve: output[b..., k] = chi(t_k), the number of
 * cells of even dimension minus those of odd dimension whose filtration value
 * is <= t_k.  input: float32, float64, uint8 or uint16, any strides, no NaN
 * (NDF_EINVAL).  output: int64 of shape (batch..., T), any strides, not
 * overlapping the input.  An image with no voxels gives 0 everywhere.
 * Backends: CPU and CUDA (input and output on the context's device; values
 * stay a host array), with identical results.  On CUDA a float input (or
 * [min, max] thresholds) costs one small device-to-host readback (the NaN
 * check and the range), so the call waits for the stream there -- unless the
 * context defers data checks (ndf_ctx_options.deferred_errors): then the
 * 2-D / 3-D warp-strip kernels' calls (float32, [min, max] thresholds,
 * T <= 510 in 2-D, T <= 320 in 3-D; float32 over a range too, T <= 320)
 * return at once and a NaN / infinite input is reported by the next
 * ndf_ctx_synchronize.  A known range (has_range) spares the GPU the pass
 * over the input that [min, max] needs before any threshold is known.
 */
NDF_API ndf_status ndf_euler_characteristic_curve(ndf_ctx *ctx, const ndf_array *input, ndf_array *output,
                                                  const ndf_ecc_options *opt);
/* The T thresholds that call would use, into thresholds[0..n) (n must be T);
 * reads the input only for its min and max when there are no values and no
 * range.  The input checks are those of the curve (output excepted). */
NDF_API ndf_status ndf_ecc_thresholds(ndf_ctx *ctx, const ndf_array *input, const ndf_ecc_options *opt,
                                      double *thresholds, int64_t n);


/*
 * Soft (differentiable) Euler characteristic curve, as arXiv 2510.20271:
 *   chi_lambda(t) = sum over cells of (-1)^dim sigmoid(lambda (t - f(cell)))
 *                 = sum over voxels v of c(v) sigmoid(lambda (t - f(v))),
 * c(v) the alternating count of the cells v owns (as in the exact curve), so
 * it tends to the exact curve as lambda grows wherever no value equals a
 * threshold (a value on a threshold counts 1/2).  The backward treats c as
 * piecewise constant (its gradient where no two values tie):
 *   dL/df(v) = -lambda c(v) sum_k g_k s_k (1 - s_k),
 *   dL/dt_k  =  lambda sum_v c(v) g_k s_k (1 - s_k)   (summed over the batch),
 * with s_k = sigmoid(lambda (t_k - f(v))) and g = dL/dchi.
 * input: float32/float64, 2 or 3 spatial axes, no NaN; thresholds: a host
 * float64 1-D array of T finite values; output and grad_output: float64
 * (batch..., T); grad_input (may be NULL): the input's dtype and shape;
 * grad_thresholds (may be NULL): float64 (T,).  O(N T).  Backends: CPU and
 * CUDA: output, grad_output, grad_input and grad_thresholds on the input's
 * device, thresholds a host array in both cases.  CUDA sums in another order
 * (and float32 inputs take float32 sigmoids), so results agree to rounding.
 */
typedef struct ndf_soft_ecc_options {
  ndf_ecc_construction construction;
  double lambda; /* > 0, default 1 */
  int batch_dims;
} ndf_soft_ecc_options;
NDF_API void ndf_soft_ecc_options_init(ndf_soft_ecc_options *opt);
NDF_API ndf_status ndf_soft_ecc_forward(ndf_ctx *ctx, const ndf_array *input, const ndf_array *thresholds,
                                        ndf_array *output, const ndf_soft_ecc_options *opt);
NDF_API ndf_status ndf_soft_ecc_backward(ndf_ctx *ctx, const ndf_array *input, const ndf_array *thresholds,
                                         const ndf_array *grad_output, ndf_array *grad_input,
                                         ndf_array *grad_thresholds, const ndf_soft_ecc_options *opt);

/* ------------------------------------------------------------------------ */
/* Euler characteristic transform (docs/adr/0011-euler-characteristic-transform.md) */

/*
 * Heights: voxel v at index i (spatial axes d = 0..nsp-1 in array order) has
 * the coordinate x_d = (i_d - (n_d - 1) / 2) * spacing_d, divided by the
 * half-diagonal sqrt(sum_d ((n_d - 1) / 2 * spacing_d)^2) when normalize is
 * set (the grid then fits the unit ball); its height along direction u is
 * h_u(v) = sum_d x_d u_d (double, added in axis order).  Directions are used
 * as given (not normalised): any finite vector, unit ones are typical.
 *
 * The shape is the support S = {v : input(v) != 0}.  Its cubical complex
 * (construction V: the cells whose vertices all lie in S; T: the faces of
 * the top cells in S) is filtered by the heights as an ECC filtration of
 * f_u = h_u on S (+inf elsewhere): V, a cell enters at the max height of its
 * vertices; T, at the min height of the top cells of S holding it.
 *   binary (weighted = 0):  ECT(u, t) = sum over cells of (-1)^dim [h(cell) <= t],
 *                           int64 output; exactly the ECC of f_u.
 *   weighted (weighted = 1): WECT(u, t) = sum over cells of (-1)^dim w(cell)
 *                           [h(cell) <= t], float64 output, with the weights
 *                           w(cell) = V: min of input over its vertices;
 *                           T: max of input over the top cells of S holding it.
 *                           A 0/1 image gives its binary ECT.
 */
typedef struct ndf_ect_options {
  ndf_ecc_construction construction; /* NDF_ECC_V (default) or NDF_ECC_T */
  int weighted;                      /* 0: binary ECT (int64), 1: weighted ECT (float64) */
  /* thresholds as in ndf_ecc_options: values, or nthresholds evenly spaced
   * over [range_lo, range_hi] (has_range) or by default over [-R, R], R the
   * largest |h_u(v)| over every voxel of the grid and every direction (one
   * shared axis, independent of the image) */
  const ndf_array *values;
  int64_t nthresholds;
  int has_range;
  double range_lo, range_hi;
  double spacing[3]; /* per spatial axis, > 0; 0 means 1 */
  int normalize;     /* 1: divide coordinates by the half-diagonal */
  int batch_dims;
} ndf_ect_options;
/* V, binary, 256 thresholds over [-R, R], spacing 1, no normalize, batch_dims 0. */
NDF_API void ndf_ect_options_init(ndf_ect_options *opt);

/*
 * output[b..., j, k] = ECT(u_j, t_k) (or the WECT) of image b.  input:
 * uint8, uint16, float32 or float64, 2 or 3 spatial axes, any strides, no
 * NaN (weighted: finite).  directions: host float64 (m, nsp), m >= 1, finite.
 * output: (batch..., m, T), int64 (binary) or float64 (weighted), any
 * strides.  Every direction of every image in one call (CPU: OpenMP over
 * (image, direction) pairs; CUDA: one launch).  Backends: CPU and CUDA
 * (input and output on the context's device, directions a host array):
 * binary equal to the CPU bit for bit, weighted to rounding (float64 sums
 * in another order).
 */
NDF_API ndf_status ndf_euler_characteristic_transform(ndf_ctx *ctx, const ndf_array *input,
                                                      const ndf_array *directions, ndf_array *output,
                                                      const ndf_ect_options *opt);
/* The T thresholds that call would use, into thresholds[0..n) (n must be T). */
NDF_API ndf_status ndf_ect_thresholds(ndf_ctx *ctx, const ndf_array *input, const ndf_array *directions,
                                      const ndf_ect_options *opt, double *thresholds, int64_t n);

/*
 * Soft ECT: the indicator [h <= t] becomes sigmoid(lambda (t - h)):
 *   chi_lambda(u, t) = sum over cells of (-1)^dim w(cell) sigmoid(lambda (t - h_u(cell)))
 * (w = 1 on the complex when weighted = 0).  Every cell's height is the
 * height of its owner voxel, so this is sum over v in S of cw(v) s(v) with
 * cw(v) the signed weight of the cells v owns.  The backward holds the
 * ownership (and which voxel gives each cell its weight) fixed, exact away
 * from ties of heights and of weights, with g = dL/dchi:
 *   dL/dt_k      = lambda sum_{b,j,v} g cw(v) s (1 - s)
 *   dL/du_j      = -lambda sum_{b,v,k} g cw(v) s (1 - s) x_v
 *   dL/dinput(a) = sum over cells whose weight comes from voxel a of
 *                  (-1)^dim sum_{j,k} g sigmoid(lambda (t_k - h(cell)))
 *                  (weighted only; the binary shape has gradient 0).
 * thresholds: host float64 (T,), finite.  output / grad_output: float64
 * (batch..., m, T).  grad_input (may be NULL): float32/float64 of the input's
 * shape; grad_directions (may be NULL): float64 (m, nsp); grad_thresholds
 * (may be NULL): float64 (T,); gradients are summed over the batch where
 * shared.  O(N m T).  Backends: CPU and CUDA (input, output / grad_output
 * and grad_input on the context's device; directions, thresholds,
 * grad_directions and grad_thresholds host arrays; backward synchronizes to
 * return the latter two): to rounding (sums in another order; with
 * NDF_SOFT_ECT_FAST=1 the CUDA sigmoid runs in float, ~1e-6 relative).
 */
typedef struct ndf_soft_ect_options {
  ndf_ecc_construction construction;
  int weighted;
  double lambda; /* > 0, default 1 */
  double spacing[3];
  int normalize;
  int batch_dims;
} ndf_soft_ect_options;
NDF_API void ndf_soft_ect_options_init(ndf_soft_ect_options *opt);
NDF_API ndf_status ndf_soft_ect_forward(ndf_ctx *ctx, const ndf_array *input, const ndf_array *directions,
                                        const ndf_array *thresholds, ndf_array *output,
                                        const ndf_soft_ect_options *opt);
NDF_API ndf_status ndf_soft_ect_backward(ndf_ctx *ctx, const ndf_array *input, const ndf_array *directions,
                                         const ndf_array *thresholds, const ndf_array *grad_output,
                                         ndf_array *grad_input, ndf_array *grad_directions,
                                         ndf_array *grad_thresholds, const ndf_soft_ect_options *opt);

/* ------------------------------------------------------------------------ */
/* Kernel cache                                                              */

/*
 * Compiles, without any GPU, the kernels that op (a grey op: "grey_erosion",
 * "grey_dilation" or a composite; docs/ops.md lists them) would need for the
 * given input dtype / spatial ndim and options, for a target architecture such
 * as "sm_90", into the context's disk cache.  An entry found corrupt is replaced.
 * *compiled receives the number of kernels compiled (0 = all were cached).
 * A compiled kernel that cannot be stored (a read-only directory) is NDF_EIO.
 */
NDF_API ndf_status ndf_cache_warm(ndf_ctx *ctx, const char *arch, const char *op,
                                  ndf_dtype dtype, int ndim, const ndf_grey_options *opt,
                                  int *compiled);
/* The same for a rank filter: op is "median_filter", "rank_filter" (rank
 * used) or "percentile_filter" (percentile used); the kernel is the one
 * calls on arrays of at least 64 along the last three axes take. */
NDF_API ndf_status ndf_cache_warm_rank(ndf_ctx *ctx, const char *arch, const char *op, ndf_dtype dtype, int ndim,
                                       int64_t rank, double percentile, const ndf_rank_options *opt,
                                       int *compiled);
/* The same for a call on an array of the given shape (ndim extents): the
 * kernel such a call takes exactly, where it depends on the extents (the
 * sorted tile's rows per block follow the rows of the image). */
NDF_API ndf_status ndf_cache_warm_rank_shape(ndf_ctx *ctx, const char *arch, const char *op, ndf_dtype dtype,
                                             int ndim, const int64_t *shape, int64_t rank, double percentile,
                                             const ndf_rank_options *opt, int *compiled);

/* The same for the binary ops ("binary_erosion", "binary_dilation",
 * "binary_opening", "binary_closing", "binary_propagation" or
 * "binary_fill_holes"), binary_hit_or_miss and label: the kernels their CUDA
 * path requests for a C-contiguous input of dtype with ndim axes of 64 (a
 * mask of opt->mask's dtype; label: output_dtype labels); the data of the
 * option arrays (structures) is read, that of opt->mask is not. */
NDF_API ndf_status ndf_cache_warm_binary(ndf_ctx *ctx, const char *arch, const char *op, ndf_dtype dtype, int ndim,
                                         const ndf_binary_options *opt, int *compiled);
NDF_API ndf_status ndf_cache_warm_hit_or_miss(ndf_ctx *ctx, const char *arch, ndf_dtype dtype, int ndim,
                                              const ndf_hit_or_miss_options *opt, int *compiled);
NDF_API ndf_status ndf_cache_warm_label(ndf_ctx *ctx, const char *arch, ndf_dtype dtype, int ndim,
                                        ndf_dtype output_dtype, const ndf_array *structure, int batch_dims,
                                        int *compiled);

/* The same for a distance transform (op "distance_transform_edt", "_cdt" or
 * "_bf") of an input of dtype with ndim axes of 64, distances of
 * distances_dtype (scipy's for the op and metric; float32 for edt's option)
 * and, when with_indices is set, the feature transform. */
NDF_API ndf_status ndf_cache_warm_distance(ndf_ctx *ctx, const char *arch, const char *op, ndf_dtype dtype, int ndim,
                                           const ndf_distance_options *opt, ndf_dtype distances_dtype,
                                           int with_indices, int *compiled);

/* The same for the Euler characteristic transform (op
 * "euler_characteristic_transform", or "soft_ect" for the soft one's forward
 * and backward kernels): opt's construction, weighted and batch_dims. */
NDF_API ndf_status ndf_cache_warm_ect(ndf_ctx *ctx, const char *arch, const char *op, ndf_dtype dtype, int ndim,
                                      const ndf_ect_options *opt, int *compiled);

/* Calls fn for each entry of the context's disk cache with its file name,
 * size and key text.  Stops early when fn returns non-zero. */
typedef int (*ndf_cache_entry_fn)(const char *file, size_t bytes, const char *key, void *ud);
NDF_API ndf_status ndf_cache_list(ndf_ctx *ctx, ndf_cache_entry_fn fn, void *ud);
/* Deletes every entry of the context's disk cache; *removed gets the count. */
NDF_API ndf_status ndf_cache_clear(ndf_ctx *ctx, int *removed);

/* ------------------------------------------------------------------------ */
/* Grey morphological reconstruction                                         */

/* The two methods of skimage.morphology.reconstruction. */
typedef enum { NDF_RECONSTRUCT_DILATION = 0, NDF_RECONSTRUCT_EROSION = 1 } ndf_reconstruct_method;
/* Accepts dilation, erosion. */
NDF_API ndf_status ndf_reconstruct_method_from_name(const char *name, ndf_reconstruct_method *out);
NDF_API const char *ndf_reconstruct_method_name(ndf_reconstruct_method m);

/*
 * Options of ndf_reconstruction, named as in skimage.morphology.reconstruction(
 * seed, mask, method, footprint, offset):
 *   method      dilation (default) or erosion.
 *   footprint   NULL: ones((3,) * spatial rank); else a host array with one
 *               axis per spatial axis, any dtype, non-zero = in (all zero is
 *               allowed: the result is then the seed).
 *   offset      the footprint's centre: noffset 0 = the geometric centre (every
 *               extent of the footprint must be odd); 1 = one value for every
 *               axis; else one per spatial axis, each in 0..extent-1.
 *   batch_dims  leading axes that are independent images (0 = skimage).
 */
typedef struct ndf_reconstruction_options {
  ndf_reconstruct_method method;
  const ndf_array *footprint;
  int noffset;
  int64_t offset[NDF_MAX_SPATIAL];
  int batch_dims;
} ndf_reconstruction_options;

/* Dilation, the default footprint, the centre as offset, batch_dims 0. */
NDF_API void ndf_reconstruction_options_init(ndf_reconstruction_options *opt);

/*
 * Grey reconstruction of seed under mask, as skimage.morphology.reconstruction:
 * with N the footprint's offsets from its centre (the centre itself left out),
 * reconstruction by dilation is the limit of
 *     r <- min(mask, max(r, max_{n in N} r[x - n]))     from r = seed,
 * that is, every value spreads from x to x + n while the mask allows; neighbours
 * outside the image are ignored.  Reconstruction by erosion is the dual (min and
 * max exchanged).  The result is unique: each output value is a value of the
 * seed or of the mask.
 *   seed, mask  the same dtype (uint8, int8, uint16, int16, uint32, int32,
 *               int64, uint64, float32, float64), shape and device; any strides.  seed <= mask
 *               everywhere for dilation, seed >= mask for erosion, and no NaN:
 *               else NDF_EINVAL and nothing written (skimage: ValueError).
 *   output      shaped like the seed on its device, not overlapping seed or
 *               mask; dtype float64 (skimage's result dtype) or the seed's own
 *               dtype (the same values: every output value is an input value).
 * A zero's sign in the output follows the order -0.0 < +0.0 (skimage leaves it
 * unspecified); both backends give the same bits.  Empty arrays are NDF_OK.
 * CPU: Vincent's hybrid algorithm (raster scans, then a FIFO); CUDA:
 * stream-ordered geodesic steps until one changes nothing, which reads a flag
 * back to the host (the call synchronizes the stream), as does the check of
 * the inputs before any step.
 */
NDF_API ndf_status ndf_reconstruction(ndf_ctx *ctx, const ndf_array *seed, const ndf_array *mask,
                                      ndf_array *output, const ndf_reconstruction_options *opt);

/* Cache warm (see ndf_cache_warm) for ndf_reconstruction: the kernels of a
 * seed and mask of dtype with ndim axes, an output of output_dtype (float64
 * or dtype) and opt (its method, footprint and batch_dims matter). */
NDF_API ndf_status ndf_cache_warm_reconstruction(ndf_ctx *ctx, const char *arch, ndf_dtype dtype, int ndim,
                                                 ndf_dtype output_dtype, const ndf_reconstruction_options *opt,
                                                 int *compiled);

/* ------------------------------------------------------------------------ */
/* Tunables and the tuning table (docs/adr/0019-tunables-and-autotuning.md)  */

/*
 * A tunable picks among kernel variants that compute the same result (or,
 * where its doc says so, a result of other rounding): "ecc.3d", "rank.tile2_pipe",
 * "edt.rows", ...  Its domain is a list of named values (the first the
 * default) or an integer range; its rule says for which calls it applies.
 * A call uses, in this order: the value set on its context, the tuning
 * table's entry for the call's dtype, rank, size class and window on this
 * device (`ndforge tune`), the built-in default.  `ndforge tunables` lists
 * them.
 */
typedef struct ndf_tunable_info {
  const char *name;          /* "<op>.<knob>" */
  const char *op;            /* the op family that consults it */
  const char *templates;     /* the templates whose kernels it picks among (space-separated) */
  const char *doc;
  const char *rule;          /* when it applies: a condition on the call (C syntax over w->dtype, w->nsp, w->n, w->k) */
  int nvalues;               /* enumerated: the count of values; 0: an integer range lo..hi */
  const char *const *values; /* enumerated: the values, values[0] the default */
  int lo, hi, def;           /* range: the domain and the default */
  int tuned;                 /* 1: `ndforge tune` times it */
} ndf_tunable_info;
NDF_API int ndf_tunable_count(void);
/* Tunable i (0 .. count - 1) into *out; NDF_EINVAL out of range. */
NDF_API ndf_status ndf_tunable_get(int i, ndf_tunable_info *out);
/* Sets tunable name on the context: value is one of its values, or a decimal
 * integer within its range; NULL or "default" clears it (the table, else the
 * built-in default).  NDF_EINVAL names an unknown tunable or a value outside
 * the domain (and lists the domain). */
NDF_API ndf_status ndf_ctx_set_tunable(ndf_ctx *ctx, const char *name, const char *value);
/* The value set on the context ("default" when none) into buf. */
NDF_API ndf_status ndf_ctx_get_tunable(ndf_ctx *ctx, const char *name, char *buf, size_t cap);
/* "name=value" assignments separated by commas (the CLI's --tune), each as ndf_ctx_set_tunable. */
NDF_API ndf_status ndf_ctx_set_tunables(ndf_ctx *ctx, const char *assignments);

/* The tuning table of the context's device, a file in the cache directory
 * keyed by device name, compute capability, driver, NVRTC and ndforge
 * versions.  A context reads it once, at its first call that consults a
 * tunable; a table of another identity (stale) or one that does not parse
 * (corrupt) is ignored and a note "tune|..." goes to the kernel log. */
typedef struct ndf_tuning_status {
  char path[4200];   /* "" without a cache directory or a device */
  int state;         /* 0 not read yet, 1 none, 2 in use, 3 ignored (stale or corrupt), 4 turned off */
  int entries;       /* entries in use (loaded and tuned since) */
  uint64_t hits;     /* choices the table made for this context's calls */
  char note[512];    /* why it was ignored */
} ndf_tuning_status;
NDF_API ndf_status ndf_ctx_tuning_status(ndf_ctx *ctx, ndf_tuning_status *out);
/* 0: calls ignore the table (benchmarks: the built-in defaults); 1 (default): they use it. */
NDF_API ndf_status ndf_ctx_tuning_use(ndf_ctx *ctx, int on);
/* Reads (and saves) the table in directory dir instead of the cache directory
 * (a benchmark whose contexts have fresh cache directories); NULL: the cache
 * directory again.  The table is read again at the next call that consults it. */
NDF_API ndf_status ndf_ctx_tuning_from(ndf_ctx *ctx, const char *dir);

/* One workload of the tuner: fn runs the op once on the context (its output
 * in the arrays of outputs, CUDA or host memory), returning its status. */
typedef ndf_status (*ndf_tune_fn)(ndf_ctx *ctx, void *user);
typedef struct ndf_tune_options {
  const ndf_array *outputs[4]; /* compared bit for bit with the default's */
  int noutputs;
  int repeats;        /* calls per timing (default 10); the median of 5 timings counts */
  int max_candidates; /* every combination up to this many (default 64), else one coordinate pass */
  double margin;      /* a choice must take at most (1 - margin) of the default's time (default 0.03) */
} ndf_tune_options;
typedef struct ndf_tune_result {
  double default_ms, best_ms; /* per call */
  int candidates, rejected;   /* combinations timed; rejected: failed or another result */
  char choice[1024];          /* the table's new choice "name=value,..." ("" : the defaults) */
} ndf_tune_result;
/* Times every combination of the tunables that the workload's calls consult
 * (or searches them), checks each result equal to the defaults', and keeps
 * the fastest in the context's table when it beats the defaults by the
 * margin.  CUDA contexts only (NDF_ENODEV otherwise). */
NDF_API ndf_status ndf_tune_workload(ndf_ctx *ctx, ndf_tune_fn fn, void *user, const ndf_tune_options *opt,
                                     ndf_tune_result *res);
/* (While ndf_tune_workload or ndf_ctx_tuning_from runs, no other thread may
 * call an op on the same context.) */
/* Writes the context's table to its file (temporary file and rename). */
NDF_API ndf_status ndf_ctx_tuning_save(ndf_ctx *ctx);

/* ------------------------------------------------------------------------ */
/* Intensity: histograms, percentiles, windowing, normalization             */
/*
 * NumPy / scikit-image semantics, per image of a batch: the batch_dims
 * leading axes of the input are independent images (0: the whole array is
 * one image, as NumPy with axis=None).  Inputs: uint8, int8, uint16, int16,
 * uint32, int32, int64, uint64, float32, float64 (bool: NDF_EINVAL), any strides, on the CPU
 * or the context's GPU; every output on the input's device, any strides
 * without overlap.  Arguments are checked before any work: a rejected call
 * returns NDF_EINVAL and writes nothing.  Where a result depends on a data
 * check (a histogram's range detected from non-finite data), the CUDA call
 * reads the check back and so synchronizes the stream; the others are
 * stream-ordered.
 */

/*
 * Options of ndf_histogram, named as numpy.histogram(a, bins, range, weights,
 * density):
 *   bins        equal-width bins (numpy bins=int, default 10), >= 1; ignored
 *               when edges is set.
 *   edges       NULL, or nedges >= 2 bin edges on the host (numpy bins=array):
 *               non-decreasing (equal neighbours make an empty bin), no NaN.
 *   has_range   1: range[0] <= range[1], both finite (numpy range=); 0: each
 *               image's min and max (non-finite ones are NDF_EINVAL, as
 *               NumPy's ValueError); equal ends become [v - 0.5, v + 0.5].
 *               Ignored with edges, as NumPy ignores it.
 *   weights     NULL or an array shaped like the input (any dtype above),
 *               on its device.
 *   density     1: each image's counts / bin width / the image's total.
 *   batch_dims  leading axes that are independent images.
 */
typedef struct ndf_histogram_options {
  int64_t bins;
  const double *edges;
  int64_t nedges;
  int has_range;
  double range[2];
  const ndf_array *weights;
  int density;
  int batch_dims;
} ndf_histogram_options;

/* 10 bins over each image's range, no weights, counts, batch_dims 0. */
NDF_API void ndf_histogram_options_init(ndf_histogram_options *opt);

/*
 * numpy.histogram of each image.  Bin i holds edges[i] <= x < edges[i+1],
 * the last bin also x == its right edge; values outside [edges[0],
 * edges[last]] and NaN are not counted.  Equal bins take NumPy's edges bit
 * for bit: np.linspace in float64 from the range, rounded to float32 for a
 * float32 input (NumPy's bin type), every comparison made in that type.
 *   hist       shape (batch..., nbins); int64 for plain counts (exact on
 *              both backends), or float64 (required with weights or
 *              density; NumPy's dtype there is the weights' or float64).
 *              Weighted sums are summed in float64 in an order of the
 *              backend's own: equal to NumPy to rounding.
 *   bin_edges  NULL, or float64 of shape (batch..., nbins + 1).
 * Empty images count nothing (density: NaN, 0/0, as NumPy).
 */
NDF_API ndf_status ndf_histogram(ndf_ctx *ctx, const ndf_array *input, ndf_array *hist, ndf_array *bin_edges,
                                 const ndf_histogram_options *opt);

/*
 * numpy.percentile / numpy.quantile of each image, method 'linear' (NumPy's
 * default): with the image's n values sorted v[0] <= ... <= v[n-1] and
 * h = (n - 1) q, the result is lerp(v[floor h], v[floor h + 1], h - floor h)
 * in NumPy's formula (a + (b - a) t, or b - (b - a)(1 - t) when t >= 0.5; for
 * float32 b - a is rounded to float32 as NumPy does).  q: nq >= 1 values on
 * the host, in [0, 100] (percentile) or [0, 1] (quantile).  The two order
 * statistics are selected exactly on both backends (the GPU runs a radix
 * select over the values' bit patterns), so the results are bit-identical.
 *   output  float64 (NumPy's result type for every input dtype), shape
 *           (batch..., nq), or (batch...) when nq is 1.
 * An image holding NaN gives NaN for every q (NumPy); -0.0 orders below
 * +0.0.  Integer order statistics are converted to float64 and b - a is taken
 * there: exact up to 2^53 (int64 / uint64 values beyond are rounded first), where
 * NumPy 1.x wraps the difference around in the input's integer type.  An empty
 * image is NDF_EINVAL.
 */
NDF_API ndf_status ndf_percentile(ndf_ctx *ctx, const ndf_array *input, const double *q, int nq, ndf_array *output,
                                  int batch_dims);
NDF_API ndf_status ndf_quantile(ndf_ctx *ctx, const ndf_array *input, const double *q, int nq, ndf_array *output,
                                int batch_dims);

/*
 * numpy.clip(input, lo, hi) into output: lo <= hi (else NDF_EINVAL), NaN
 * stays NaN.  output shaped like the input, float32, float64 or the input's
 * dtype (values converted as C converts; with an integer output, lo and hi
 * should be integers).  A 64-bit integer image into its own dtype is compared
 * and stored as integers, every value exact; the bounds, doubles, are exact
 * up to 2^53, and one at the dtype's maximum as a double (2^63, 2^64) stands
 * for the largest value.
 */
NDF_API ndf_status ndf_clip(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, double lo, double hi);

/* The target range of a window or normalization and the batch layout. */
typedef struct ndf_window_options {
  double out_min, out_max; /* default 0, 1; [-1, 1] for a symmetric range; out_min > out_max is allowed (inverted) */
  int batch_dims;
} ndf_window_options;
/* [0, 1], batch_dims 0. */
NDF_API void ndf_window_options_init(ndf_window_options *opt);

/*
 * Intensity window [lo, hi] mapped to [out_min, out_max], in float64 in this
 * order (NumPy: (np.clip(x, lo, hi) - lo) / (hi - lo) * (out_max - out_min)
 * + out_min), then rounded once to the output's dtype; lo == hi maps every
 * value but NaN to out_min.  lo > hi or non-finite bounds: NDF_EINVAL.  NaN stays NaN.
 * output shaped like the input, float32 or float64.  Both backends give the
 * same bits.
 */
NDF_API ndf_status ndf_window(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, double lo, double hi,
                             const ndf_window_options *opt);

/*
 * CT window presets by name, in Hounsfield units, as radiology writes them
 * (level = centre, width; the window is [centre - width/2, centre + width/2]):
 *   brain        40 / 80        subdural     75 / 215
 *   stroke       32 / 8         bone        400 / 1800
 *   lung       -600 / 1500      mediastinum  50 / 350
 *   soft_tissue  50 / 400       liver        30 / 150
 * (Radiopaedia's "Windowing (CT)" values; subdural takes the middle of its
 * ranges, L 50-100, W 130-300).  Unknown names: NDF_EINVAL.
 */
NDF_API ndf_status ndf_ct_window_preset(const char *name, double *centre, double *width);
/* ndf_window over [centre - width/2, centre + width/2]; width >= 0. */
NDF_API ndf_status ndf_window_ct(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, double centre,
                                 double width, const ndf_window_options *opt);

/*
 * Min-max normalization: ndf_window with lo, hi = each image's min and max
 * (an image holding NaN gives NaN everywhere, as NumPy's min/max; a constant
 * image maps to out_min).  Both backends give the same bits.
 */
NDF_API ndf_status ndf_normalize_minmax(ndf_ctx *ctx, const ndf_array *input, ndf_array *output,
                                        const ndf_window_options *opt);

/*
 * Percentile windowing: ndf_window with lo, hi = each image's percentiles
 * p_lo and p_hi (ndf_percentile; 0 <= p_lo <= p_hi <= 100), e.g. 0.5, 99.5.
 * Both backends give the same bits.
 */
NDF_API ndf_status ndf_percentile_window(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, double p_lo,
                                         double p_hi, const ndf_window_options *opt);

/*
 * z-score normalization: out = (x - mean) / std per image, with mean and std
 * (population, ddof 0) from the voxels where mask is non-zero (mask NULL:
 * all voxels), applied to every voxel of the image.  mask: NULL or shaped
 * like the input, any dtype above, on its device.  std == 0 divides by 1;
 * an image with no voxel in the mask gives NaN; NaN in the statistics'
 * voxels gives NaN.  Statistics are float64 sums (two passes) whose order
 * is the backend's: equal to NumPy's mean/std to rounding (the tests allow
 * 1e-9 relative).  output float32 or float64, shaped like the input.
 */
NDF_API ndf_status ndf_normalize_zscore(ndf_ctx *ctx, const ndf_array *input, const ndf_array *mask,
                                        ndf_array *output, int batch_dims);

/*
 * skimage.exposure.equalize_hist(image, nbins, mask) per image: the image's
 * (masked) values' cumulative distribution interpolated at every voxel
 * (np.interp).  Float inputs: nbins >= 1 equal bins over the (masked) values'
 * range as numpy.histogram (non-finite values among them: NDF_EINVAL), bin
 * centres in the input's float type, the cdf rounded to it.  Integer inputs:
 * each integer its own bin (nbins ignored, as skimage); on CUDA the (masked)
 * range max - min + 1 must be at most 2^24 (else NDF_ENOTSUP) and the call
 * synchronizes to size it.  mask: NULL or like the input (non-zero = used).
 * An image whose mask selects nothing gives NaN.  output float64 (skimage's
 * type for integers and float64) or float32 (skimage's for float32),
 * shaped like the input.  Both backends give the same bits.
 */
NDF_API ndf_status ndf_equalize_hist(ndf_ctx *ctx, const ndf_array *input, const ndf_array *mask,
                                     ndf_array *output, int nbins, int batch_dims);

/* ------------------------------------------------------------------------ */
/* Linear filters (scipy.ndimage)                                            */

/*
 * The linear filters compute as scipy.ndimage does, in double: every 1-D
 * pass reads a line into double (extended by the boundary mode; constant
 * mode extends with cval as a double, not converted to the input dtype),
 * sums in scipy's order, and converts the sum to the output dtype;
 * multi-axis filters run one pass per axis and keep the intermediate in the
 * output dtype, as scipy does.  The conversion to an integer output is
 * scipy's C cast as x86-64 runs it: truncation toward zero to an int32
 * (int8, uint8, int16, uint16, int32 outputs) or an int64 (uint32, int64
 * outputs), whose low bits are kept (wrap-around); a value outside that
 * intermediate's range, and NaN, become its most negative value (so 0 for 8-
 * and 16-bit outputs, INT32_MIN for int32).  uint64 outputs: below 2^63 as
 * int64 (negative values wrap), below 2^64 exactly, 0 beyond and for NaN.  float32 outputs round to nearest.
 *
 * Inputs: uint8, int8, uint16, int16, uint32, int32, int64, uint64 (read
 * into double, as scipy), float32, float64, any strides.  Outputs: the
 * input's shape and device, any of those dtypes (scipy's output=dtype), not overlapping the input.
 * bool as scipy 1.10 takes it: an input read as its bytes, an output stored
 * as a uint8 one (C's cast to unsigned char: 0.5 -> 0, 2.0 -> 2, -1.0 -> 255;
 * bytes other than 0 and 1 are what scipy writes too); ndf_laplace,
 * ndf_gaussian_laplace and ndf_gaussian_gradient_magnitude refuse a bool
 * output (scipy sums their terms with NumPy's bool arithmetic).  Backends: CPU
 * and CUDA.  NaN and inf propagate as IEEE arithmetic does (ndf_correlate
 * leaves out taps whose |weight| <= DBL_EPSILON, as scipy, so NaN under such
 * a tap does not reach the output).  An empty input is a no-op.
 *
 * Options shared by the filters:
 *   axes         the filtered axes of the N-D filters (naxes entries,
 *                indices of the input's axes, negative from the end, each
 *                at least batch_dims, no repeats; passes run in this order,
 *                as scipy's axes=); naxes 0 = every spatial axis in order.
 *                The 1-D filters take their axis as an argument instead.
 *   mode, modes  nmodes 0: mode for every filtered axis; 1: modes[0] for
 *                every axis; else one per filtered axis, as scipy's sequence
 *                of modes (sobel / prewitt: one per spatial axis; correlate,
 *                convolve and the 1-D filters take one mode).  grid-mirror,
 *                grid-constant and grid-wrap are reflect, constant and wrap
 *                (ndf_mode_from_name).
 *   cval         the value outside the input in constant mode.
 *   origin       norigin 0: 0; 1: the same for every filtered axis; else one
 *                per filtered axis (the 1-D filters: 0 or 1 values).  Used by
 *                correlate*, convolve* and uniform_filter*; the Gaussian and
 *                derivative filters have none (as scipy) and ignore it.
 *   batch_dims   leading axes that are independent images (0 = scipy).
 * Per-axis lists (sizes, sigmas, orders, radii) follow the same rule: one
 * value for every filtered axis, or one per filtered axis.
 */
typedef struct ndf_filter_options {
  ndf_mode mode;
  int nmodes;
  ndf_mode modes[NDF_MAX_SPATIAL];
  double cval;
  int norigin;
  int64_t origin[NDF_MAX_SPATIAL];
  int naxes;
  int axes[NDF_MAX_SPATIAL];
  int batch_dims;
} ndf_filter_options;

/* Mode reflect, cval 0, origin 0, every spatial axis, batch_dims 0. */
NDF_API void ndf_filter_options_init(ndf_filter_options *opt);

/*
 * scipy.ndimage.correlate1d / convolve1d along axis (negative from the end,
 * not a batch axis): n >= 1 weights (host memory); origin (opt->origin[0])
 * in [-(n/2), (n-1)/2] for correlate1d; convolve1d reverses the weights and
 * maps the origin as scipy (-origin, minus 1 for even n) first.  A kernel
 * whose weights are symmetric (or antisymmetric) within DBL_EPSILON sums
 * pairs of taps, outermost first, as scipy does.
 */
NDF_API ndf_status ndf_correlate1d(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, const double *weights,
                                   int64_t n, int axis, const ndf_filter_options *opt);
NDF_API ndf_status ndf_convolve1d(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, const double *weights,
                                  int64_t n, int axis, const ndf_filter_options *opt);

/*
 * scipy.ndimage.correlate / convolve: weights is a host array (any dtype but
 * int64; read as float64) with one axis per filtered axis (axis i of the
 * weights goes with the i-th filtered axis), every extent >= 1.  Taps with
 * |weight| > DBL_EPSILON are summed in the raster order of the weights laid
 * out along the input's axes, from 0.0, as scipy.  convolve flips the
 * weights and maps the origins as scipy.  One mode for every axis (nmodes
 * must be 0).
 */
NDF_API ndf_status ndf_correlate(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, const ndf_array *weights,
                                 const ndf_filter_options *opt);
NDF_API ndf_status ndf_convolve(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, const ndf_array *weights,
                                const ndf_filter_options *opt);

/*
 * scipy.ndimage.uniform_filter1d / uniform_filter: the running mean of size
 * taps (sum of the window, then added and dropped taps, divided by size at
 * every output, as scipy), origin with size/2 + origin in [0, size).
 * uniform_filter1d: size >= 1.  uniform_filter: nsize 1 or one per filtered
 * axis, each >= 0; axes of size 0 or 1 are not filtered (scipy), and an
 * input no axis filters is copied (converted) to the output.
 */
NDF_API ndf_status ndf_uniform_filter1d(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, int64_t size,
                                        int axis, const ndf_filter_options *opt);
NDF_API ndf_status ndf_uniform_filter(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, int nsize,
                                      const int64_t *size, const ndf_filter_options *opt);

/*
 * Gaussian parameters, as scipy.ndimage.gaussian_filter(sigma, order,
 * truncate, radius):
 *   sigma     nsigma 1 or one per filtered axis; finite, >= 0 (negative is
 *             NDF_EINVAL); gaussian_filter leaves out axes of sigma <= 1e-15
 *             (scipy), and copies the input when no axis remains.
 *   order     norder 0 (all 0), 1, or one per filtered axis: 0 smooths, k > 0
 *             is the k-th derivative of the Gaussian (0 <= k <= 8).
 *   truncate  radius = (int64)(truncate * sigma + 0.5) when no radius is
 *             given (default 4; finite).
 *   radius    nradius 0 (from truncate), 1, or one per filtered axis, >= 0
 *             (<= NDF_MAX_GAUSSIAN_RADIUS).
 * The kernel is scipy's _gaussian_kernel1d: exp(-x^2 / (2 sigma^2)) over
 * x = -r..r, divided by its sum (NumPy's pairwise summation), times the
 * derivative polynomial, then reversed for the correlation.  It is computed
 * with the C library's exp; NumPy's exp on CPUs with AVX-512 differs from it
 * by up to one unit in the last place, so results there may differ from
 * scipy's by a few units in the last place (exact elsewhere).
 */
#define NDF_MAX_GAUSSIAN_RADIUS ((int64_t)1 << 24)
typedef struct ndf_gaussian_params {
  int nsigma;
  double sigma[NDF_MAX_SPATIAL];
  int norder;
  int order[NDF_MAX_SPATIAL];
  double truncate;
  int nradius;
  int64_t radius[NDF_MAX_SPATIAL];
} ndf_gaussian_params;

/* sigma 1 for every axis, order 0, truncate 4, radius from truncate. */
NDF_API void ndf_gaussian_params_init(ndf_gaussian_params *g);

/* scipy.ndimage.gaussian_filter1d along axis: sigma > 0 (scipy divides by
 * sigma^2), order >= 0, radius < 0 = from truncate.  The mode is opt->mode. */
NDF_API ndf_status ndf_gaussian_filter1d(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, double sigma,
                                         int axis, int order, double truncate, int64_t radius,
                                         const ndf_filter_options *opt);
/* scipy.ndimage.gaussian_filter: one gaussian_filter1d pass per filtered
 * axis (in axes order), each reading the previous pass's output. */
NDF_API ndf_status ndf_gaussian_filter(ndf_ctx *ctx, const ndf_array *input, ndf_array *output,
                                       const ndf_gaussian_params *g, const ndf_filter_options *opt);

/*
 * Derivative filters, composed as scipy composes them (arithmetic of the
 * sums in the output dtype, NumPy's: integers wrap around, float32 rounds
 * at every step):
 *   ndf_sobel / ndf_prewitt   correlate1d [-1, 0, 1] along axis, then [1, 2, 1]
 *                             (prewitt [1, 1, 1]) along every other spatial
 *                             axis in increasing order, in place on the output;
 *                             modes per spatial axis (opt->axes unused).
 *   ndf_laplace               sum over the filtered axes of correlate1d
 *                             [1, -2, 1] along that axis.
 *   ndf_gaussian_laplace      sum over the filtered axes of gaussian_filter
 *                             with order 2 on that axis and 0 on the others
 *                             (g->order must be 0).
 *   ndf_gaussian_gradient_magnitude
 *                             sqrt of the sum of squares of gaussian_filter
 *                             with order 1 on each filtered axis; the square
 *                             root as NumPy's np.sqrt(out, out,
 *                             casting='unsafe'): float outputs in their
 *                             precision, integer outputs floor(sqrt(v)), and a
 *                             negative (wrapped) sum gives the NaN conversion.
 * With two or more terms the sum is built in scratch memory of the context
 * (the output's dtype) and copied to the output at the end, so a failed call
 * leaves the output untouched.
 * The filtered axes are every spatial axis, or opt->axes (scipy's axes):
 * the terms are summed in the order of opt->axes, sigma, radius and modes go
 * one per listed axis (or one for all), and the unlisted axes are neither
 * differentiated nor smoothed.  Each Gaussian term runs its passes in
 * increasing axis order, as scipy's gaussian_filter call inside the term
 * does.  This is scipy's documented meaning of axes; ndforge does not copy
 * where scipy's code (1.15 to 1.17) departs from it: its
 * gaussian_gradient_magnitude also smooths the unlisted axes with sigma, and
 * its gaussian_laplace reads sigma per input axis when axes lists every
 * axis in another order.
 */
NDF_API ndf_status ndf_sobel(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, int axis,
                             const ndf_filter_options *opt);
NDF_API ndf_status ndf_prewitt(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, int axis,
                               const ndf_filter_options *opt);
NDF_API ndf_status ndf_laplace(ndf_ctx *ctx, const ndf_array *input, ndf_array *output,
                               const ndf_filter_options *opt);
NDF_API ndf_status ndf_gaussian_laplace(ndf_ctx *ctx, const ndf_array *input, ndf_array *output,
                                        const ndf_gaussian_params *g, const ndf_filter_options *opt);
NDF_API ndf_status ndf_gaussian_gradient_magnitude(ndf_ctx *ctx, const ndf_array *input, ndf_array *output,
                                                   const ndf_gaussian_params *g, const ndf_filter_options *opt);

/* ------------------------------------------------------------------------ */
/* Image metrics (skimage.metrics)                                           */

/*
 * The metrics compare two arrays of the same shape and give one float64
 * value per image: `result` is a float64 array of rank batch_dims shaped
 * like the inputs' batch axes (rank 0, one value, for batch_dims 0), any
 * strides, on the inputs' device.  The two inputs may have different dtypes
 * (bool, uint8 ... int32, int64, uint64, float32, float64) and any strides (zero strides
 * too).  Every image must hold at least one element (NDF_EINVAL otherwise;
 * scikit-image's mean of nothing is NaN with a warning).  On CUDA arrays the
 * call is stream-ordered: it returns before the values are written.
 *
 * Arithmetic, as scikit-image 0.19 does it: the elementwise work runs in
 * float32 when both inputs are float32 and in float64 otherwise (SSIM: the
 * float type of im1 alone); sums are float64.  The values equal scikit-image's
 * up to the order of those float64 sums (NumPy sums pairwise): within a
 * relative 1e-12 of its value in the tests, and between the CPU and the GPU,
 * whose sums run in another order.
 *
 *   ndf_mean_squared_error   mean((a - b)^2)  (skimage.metrics.mean_squared_error)
 *   ndf_normalized_root_mse  sqrt(mse) / denominator of image_true = a:
 *                            euclidean sqrt(mean(a * a)), min-max max(a) - min(a)
 *                            (in the float type), mean mean(a) (in float64;
 *                            scikit-image takes a float32 image's mean in
 *                            float32, so that one agrees to float32 rounding)
 *   ndf_peak_signal_noise_ratio  10 log10(data_range^2 / mse); data_range 0 =
 *                            scikit-image's default from a's dtype, per image:
 *                            dtype range [lo, hi] ([-1, 1] for floats, [0, 1]
 *                            for bool); values outside it are NDF_EINVAL
 *                            ("specify the data_range"); data_range = hi when
 *                            min(a) >= 0, else hi - lo.  mse 0 gives +inf.
 *   ndf_dice_coefficient     2 |A & B| / (|A| + |B|) of the masks A = (a != 0),
 *                            B = (b != 0) (NaN is non-zero); 1 when both are empty.
 *   ndf_jaccard_index        |A & B| / |A | B|; 1 when both are empty.
 *   ndf_hausdorff_distance   skimage.metrics.hausdorff_distance over the non-zero
 *                            points: max(max_{p in A} d(p, B), max_{q in B} d(q, A)),
 *                            Euclidean, with coordinates scaled by `sampling`;
 *                            0 when A and B are empty, +inf when one is.  With
 *                            percentile q < 100 each directed term is NumPy's
 *                            percentile (method 'linear') of the distances
 *                            instead of their maximum (q = 95: the HD95 of
 *                            MONAI's compute_hausdorff_distance(percentile=95)).
 *                            The distances d(p, B) are read from the Euclidean
 *                            distance transform of B's complement (the one of
 *                            ndf_distance_transform_edt), so they are exact;
 *                            the percentile's two ranks are selected exactly
 *                            (a radix select on CUDA), so both backends agree
 *                            bit for bit.
 * NaN in the inputs propagates into mse, nrmse and psnr as NumPy's does (min
 * and max too); a NaN data_range default is hi - lo, as scikit-image's.
 */
typedef enum { NDF_NRMSE_EUCLIDEAN = 0, NDF_NRMSE_MIN_MAX = 1, NDF_NRMSE_MEAN = 2 } ndf_nrmse_norm;
/* Accepts euclidean, min-max, mean (any case, as scikit-image). */
NDF_API ndf_status ndf_nrmse_norm_from_name(const char *name, ndf_nrmse_norm *out);
NDF_API const char *ndf_nrmse_norm_name(ndf_nrmse_norm n);

typedef struct ndf_metrics_options {
  int batch_dims;
  double data_range;            /* psnr: > 0, or 0 for the default from the dtype */
  ndf_nrmse_norm normalization; /* nrmse: default NDF_NRMSE_EUCLIDEAN */
  double percentile;            /* hausdorff: in (0, 100]; default 100 (the Hausdorff distance) */
  int nsampling;                /* hausdorff: 0 = unit spacing, 1 = same for every spatial axis, else one per axis */
  double sampling[NDF_MAX_SPATIAL];
} ndf_metrics_options;
/* batch_dims 0, data_range 0 (from the dtype), euclidean, percentile 100, unit sampling. */
NDF_API void ndf_metrics_options_init(ndf_metrics_options *opt);

NDF_API ndf_status ndf_mean_squared_error(ndf_ctx *ctx, const ndf_array *image0, const ndf_array *image1,
                                          ndf_array *result, const ndf_metrics_options *opt);
NDF_API ndf_status ndf_normalized_root_mse(ndf_ctx *ctx, const ndf_array *image_true, const ndf_array *image_test,
                                           ndf_array *result, const ndf_metrics_options *opt);
NDF_API ndf_status ndf_peak_signal_noise_ratio(ndf_ctx *ctx, const ndf_array *image_true,
                                               const ndf_array *image_test, ndf_array *result,
                                               const ndf_metrics_options *opt);
NDF_API ndf_status ndf_dice_coefficient(ndf_ctx *ctx, const ndf_array *mask0, const ndf_array *mask1,
                                        ndf_array *result, const ndf_metrics_options *opt);
NDF_API ndf_status ndf_jaccard_index(ndf_ctx *ctx, const ndf_array *mask0, const ndf_array *mask1,
                                     ndf_array *result, const ndf_metrics_options *opt);
NDF_API ndf_status ndf_hausdorff_distance(ndf_ctx *ctx, const ndf_array *image0, const ndf_array *image1,
                                          ndf_array *result, const ndf_metrics_options *opt);

/*
 * skimage.metrics.structural_similarity(im1, im2, win_size, data_range,
 * gaussian_weights, full=True, K1, K2, sigma, use_sample_covariance), per
 * image of a batch:
 *   win_size               odd, >= 1 and at most every spatial extent; 0 =
 *                          scikit-image's default: 7, or with gaussian_weights
 *                          2 (int)(3.5 sigma + 0.5) + 1.  It sizes the uniform
 *                          window, the covariance normalization and the crop.
 *   gaussian_weights       0: uniform_filter(size=win_size); 1:
 *                          gaussian_filter(sigma, truncate=3.5).  Mode reflect.
 *                          Every spatial axis is smoothed (scikit-image 0.19
 *                          takes a last axis of 3 elements for RGB and leaves
 *                          it unsmoothed; later versions do not).
 *   sigma, K1, K2          >= 0 (defaults 1.5, 0.01, 0.03).
 *   use_sample_covariance  1 (default): covariances times NP / (NP - 1), NP =
 *                          win_size^rank (win_size 1 is then NDF_EINVAL:
 *                          scikit-image divides by zero); 0: population.
 *   data_range             > 0, or 0 for scikit-image 0.19's default from
 *                          im1's dtype: hi - lo of its range (255 for uint8,
 *                          2 for floats, 1 for bool).  (Later scikit-image
 *                          versions reject float images without data_range.)
 * In the float type F of im1 (float32 for float32, else float64), with
 * X, Y the inputs converted to F and f the filter (output F, scipy's):
 *   ux = f(X), uy = f(Y), uxx = f(X*X), uyy = f(Y*Y), uxy = f(X*Y),
 *   vx = c (uxx - ux ux), vy = c (uyy - uy uy), vxy = c (uxy - ux uy),
 *   S = ((2 ux uy + C1)(2 vxy + C2)) / ((ux^2 + uy^2 + C1)(vx + vy + C2)),
 * C1 = (K1 R)^2, C2 = (K2 R)^2, every operation rounded in F in this order
 * (so S is scikit-image's bit for bit where the filters are scipy's).
 *   full    NULL or the SSIM map S: shaped like im1, float32 or float64 (S
 *           converted), on the inputs' device.
 *   mssim   NULL or float64 of rank batch_dims (as the metrics above): the
 *           mean of S over each image cropped by (win_size - 1) / 2 on every
 *           spatial side, summed in float64.
 * At least one of full and mssim.  Inputs: any of the metrics' dtypes.
 * Backends: CPU and CUDA, the same bits for S, the mean to its summation
 * order.  CUDA runs the five filters fused, one pass per spatial axis carrying
 * the five quantities (tunable ssim.path=fused, the default), or composed
 * from ndf_uniform_filter / ndf_gaussian_filter calls on scratch memory
 * (ssim.path=composed).
 */
typedef struct ndf_ssim_options {
  int win_size;
  int gaussian_weights;
  double sigma;
  double K1, K2;
  int use_sample_covariance;
  double data_range;
  int batch_dims;
} ndf_ssim_options;
/* scikit-image's defaults: win_size 0 (7), uniform, sigma 1.5, K1 0.01, K2 0.03,
 * sample covariance, data_range 0 (from the dtype), batch_dims 0. */
NDF_API void ndf_ssim_options_init(ndf_ssim_options *opt);
NDF_API ndf_status ndf_structural_similarity(ndf_ctx *ctx, const ndf_array *im1, const ndf_array *im2,
                                             ndf_array *mssim, ndf_array *full, const ndf_ssim_options *opt);

/* ------------------------------------------------------------------------ */
/* Interpolation (scipy.ndimage): spline filters and geometric transforms    */

/*
 * Boundary modes of the interpolation functions.  Unlike the filters, scipy
 * tells 'constant' from 'grid-constant' and 'wrap' from 'grid-wrap' here
 * (grid-mirror is reflect).  With n samples a b c d:
 *   constant       cval outside [0, n-1], no interpolation beyond the edges;
 *                  inside, the spline's taps beyond an edge mirror (as scipy)
 *   grid-constant  samples beyond the edges are cval, and interpolated
 *   nearest        a a a a | a b c d | d d d d
 *   reflect        d c b a | a b c d | d c b a   (= grid-mirror)
 *   mirror           d c b | a b c d | c b a
 *   wrap           scipy's 'wrap': period n - 1 for coordinates (the last
 *                  sample is the first one again); taps beyond an edge mirror
 *   grid-wrap      a b c d | a b c d | a b c d   (period n)
 */
typedef enum {
  NDF_INTERP_CONSTANT = 0,
  NDF_INTERP_GRID_CONSTANT = 1,
  NDF_INTERP_NEAREST = 2,
  NDF_INTERP_REFLECT = 3,
  NDF_INTERP_MIRROR = 4,
  NDF_INTERP_WRAP = 5,
  NDF_INTERP_GRID_WRAP = 6,
  NDF_INTERP_MODE_COUNT
} ndf_interp_mode;

/* Accepts scipy's names: constant, grid-constant, nearest, reflect,
 * grid-mirror, mirror, wrap, grid-wrap. */
NDF_API ndf_status ndf_interp_mode_from_name(const char *name, ndf_interp_mode *out);
NDF_API const char *ndf_interp_mode_name(ndf_interp_mode m);

/*
 * Options of the geometric transforms, named as in scipy.ndimage:
 *   order      spline order 0..5 (default 3)
 *   mode       boundary mode (default NDF_INTERP_CONSTANT)
 *   cval       value beyond the edges in the constant modes (default 0)
 *   prefilter  1 (default): for order >= 2 the input is first spline
 *              filtered in float64 (as scipy: the nearest and grid-constant
 *              modes pad it by 12 samples per side before filtering); 0: the
 *              input values are the spline coefficients
 *   batch_dims leading axes of input and output that are independent images
 *              (0 = scipy semantics); the transform spans the other axes.
 * Semantics are scipy's (1.10), including its quirks, but for the prefilter's
 * initialization in the reflect, grid-mirror and nearest modes, which is
 * scipy 1.18's (1.10 reads a partial sum at the last term of its causal sum:
 * docs/adr/0033): 'constant' and 'wrap' prefilter with mirror boundaries; a coordinate just outside [0, n-1] in
 * 'constant' mode is cval.  Arithmetic is float64 with scipy's order of
 * operations, so results are scipy's bit for bit (where the C library's
 * pow() rounds as scipy's build's does); the GPU performs the same
 * operations, each rounded as on the CPU, and gives the CPU's bits.  Integer outputs are rounded half away from zero and clamped to
 * the dtype's range (scipy's rule); NaN converts to 0 (unsigned, int8,
 * int16) or the dtype's minimum (int32, int64), as scipy on x86-64.  NaN in
 * a float input reaches every output whose spline support holds it (with a
 * prefilter: whose support meets a line through it); a NaN or infinite
 * coordinate, or one of magnitude 2^52 or more, gives cval, except in the
 * nearest and grid-constant modes, where it gives NaN (float outputs); scipy
 * converts such coordinates to integers with undefined results, so there it
 * is ndforge's own rule.  Empty arrays (as scipy): an output without
 * elements (no coordinates, an output shape, batch axis or zoomed axis of
 * extent 0) is a no-op, and an input with an empty spatial axis gives the
 * output of the usual shape (zoom, shift and the spline filters: empty too;
 * scipy 1.10's zoom and shift raise in the nearest mode with a prefilter, from
 * their numpy.pad of the empty axis).
 * Where such an input has a non-empty output (rotate with reshape, an
 * output_shape, points of map_coordinates) every point lies outside it: in
 * the constant and grid-constant modes the output is what scipy computes
 * there (cval; grid-constant's prefilter runs over its cval padding), in the
 * other modes NDF_EINVAL (scipy reads outside its buffer there).
 * Dtypes: input bool, uint8, int8, uint16, int16, uint32, int32, int64,
 * uint64 (read into double, as scipy; a bool as its byte), float32 or
 * float64; output any of these.  A bool output is scipy's npy_bool: each
 * value stored with C's cast, not rounded or clamped (on x86-64 the value
 * truncated to int32, its low byte: 0.49, 0.9, -0.3 and NaN give 0 (false),
 * 1.7 gives 1, -1.5 the byte 255, 300.5 the byte 44 -- true bytes other than
 * 1, as scipy writes them).  Input and output must
 * not overlap.  Backends: CPU and CUDA (the arrays on the context's device).
 */
typedef struct ndf_interp_options {
  int order;
  ndf_interp_mode mode;
  double cval;
  int prefilter;
  int batch_dims;
} ndf_interp_options;
/* order 3, mode constant, cval 0, prefilter 1, batch_dims 0. */
NDF_API void ndf_interp_options_init(ndf_interp_options *opt);

/*
 * scipy.ndimage.spline_filter1d(input, order, axis, output, mode): the B-spline
 * coefficients of order 0..5 along one axis (negative counts from the end).
 * Orders 0 and 1 copy, as scipy does, before axis and mode are read: any axis
 * and mode are accepted then, and a rank-0 input (into a rank-0 output) is
 * copied too.  mode (scipy's default is mirror) selects the
 * filter's boundary initialization (reflect, grid-mirror, nearest: scipy
 * 1.18's).  output: the input's shape, any output
 * dtype of the transforms (float64 is scipy's default), converted with C's
 * cast as scipy does (truncation; out of range and NaN as on x86-64; a bool
 * output as the transforms store it).  The copies of orders 0 and 1 convert
 * as NumPy does (scipy: output[...] = numpy.array(input)): a value into a
 * bool is v != 0 (NaN is true), a bool into another dtype 0 or 1 whatever
 * its byte, a bool into a bool its byte.
 */
NDF_API ndf_status ndf_spline_filter1d(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, int order,
                                       int axis, ndf_interp_mode mode);
/* scipy.ndimage.spline_filter: spline_filter1d along every axis after the
 * batch_dims leading ones, in axis order, each pass reading the previous
 * pass's output (so an integer or float32 output rounds after every pass, as
 * scipy's does; a bool output holds each pass's bytes, read back as their
 * values).  order 2..5. */
NDF_API ndf_status ndf_spline_filter(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, int order,
                                     ndf_interp_mode mode, int batch_dims);

/*
 * scipy.ndimage.map_coordinates: output[b..., j...] = input[b...] sampled at
 * (coordinates[0, j...], ..., coordinates[n-1, j...]).  coordinates: float32
 * or float64 (or an integer dtype), shape (n, out...), n the spatial rank of
 * the input, on the input's device, shared by every image of a batch.
 * output: (batch..., out...).
 */
NDF_API ndf_status ndf_map_coordinates(ndf_ctx *ctx, const ndf_array *input, const ndf_array *coordinates,
                                       ndf_array *output, const ndf_interp_options *opt);

/*
 * scipy.ndimage.affine_transform: the output point o maps to the input point
 * matrix @ o + offset.  matrix: a host float64 array (any strides) in one of
 * scipy's forms, n the input's spatial rank and m the output's:
 *   (n, m)          a linear map (m may differ from n);
 *   (n,)            a diagonal: scipy's zoom/shift path, i = (o + offset/matrix) * matrix;
 *   (n + 1, n + 1)  homogeneous: bottom row must be (0, ..., 0, 1); offset
 *                   is taken from the last column (the offset argument is ignored);
 *   (n, n + 1)      the same without the bottom row.
 * offset: noffset = 0 (zero), 1 (every axis) or n values.  The output's shape
 * after its batch axes is scipy's output_shape.
 */
NDF_API ndf_status ndf_affine_transform(ndf_ctx *ctx, const ndf_array *input, const ndf_array *matrix,
                                        int noffset, const double *offset, ndf_array *output,
                                        const ndf_interp_options *opt);

/* scipy.ndimage.shift: output[o] = input[o - shift]; nshift = 1 (every
 * spatial axis) or the spatial rank.  output: the input's shape. */
NDF_API ndf_status ndf_shift(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, int nshift,
                             const double *shift, const ndf_interp_options *opt);

/*
 * scipy.ndimage.zoom: nzoom = 1 or one factor per spatial axis (>= 0).  The
 * output's spatial shape must be ndf_zoom_shape's: round(n * zoom), Python's
 * round (half to even); an axis of extent 0 there (an empty input axis, a
 * factor 0 or one small enough) gives an empty output, as scipy.  grid_mode 0: the corner samples align, input coordinate
 * o (n_in - 1) / (n_out - 1); 1: the pixel edges align, (o + 0.5) n_in / n_out - 0.5.
 * A zoom by exactly 1 on every axis with the prefilter returns the input as NumPy converts it
 * into the output (scipy >= 1.16), in any order and mode: ndf_spline_filter1d's copy.
 */
NDF_API ndf_status ndf_zoom(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, int nzoom,
                            const double *zoom, int grid_mode, const ndf_interp_options *opt);
/* The output shape (all axes, batch ones copied) ndf_zoom takes for input shape[0..ndim). */
NDF_API ndf_status ndf_zoom_shape(int ndim, const int64_t *shape, int batch_dims, int nzoom, const double *zoom,
                                  int64_t *out_shape);

/*
 * scipy.ndimage.rotate: rotates the plane of spatial axes (axis0, axis1)
 * (negative counts from the end; indices among the axes after batch_dims) by
 * angle degrees about its centre; every other axis is independent (scipy
 * rotates each plane).  reshape 1: the output plane is large enough for the
 * whole rotated input (ndf_rotate_shape); 0: the input's.  The spatial rank
 * must be at least 2.
 */
NDF_API ndf_status ndf_rotate(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, double angle, int axis0,
                              int axis1, int reshape, const ndf_interp_options *opt);
/* The output shape (all axes) ndf_rotate takes. */
NDF_API ndf_status ndf_rotate_shape(int ndim, const int64_t *shape, int batch_dims, double angle, int axis0,
                                    int axis1, int reshape, int64_t *out_shape);

/* ------------------------------------------------------------------------ */
/* Preprocessing of medical volumes: orientation, spacing, crop, normalization */
/*
 * Volumes in NIfTI's (and nibabel's) convention: an array whose three
 * spatial axes are the voxel axes i, j, k (ndforge's NIfTI reader gives that
 * order), and an affine: a row-major double[16] mapping the homogeneous voxel
 * coordinate (i, j, k, 1) to world RAS+ millimetres (x, y, z, 1); its bottom
 * row is 0 0 0 1.  Every geometric step returns the affine of its output, so
 * each output voxel stays at the world point it came from.  The steps move
 * data with ndf_affine_transform (order 0 for reorientation and crops, whose
 * input coordinates are integers, so values are copied exactly), on the CPU
 * or the context's GPU, stream-ordered like it.
 */

/* The voxel spacing the affine implies: the lengths of its first three
 * columns (a zero length counts as 1, as nibabel's zooms).  NDF_EINVAL for a
 * non-finite affine or one whose bottom row is not 0 0 0 1. */
NDF_API ndf_status ndf_affine_spacing(const double *affine, double *spacing);

/*
 * Reorientation to RAS+ (nibabel's io_orientation and as_closest_canonical):
 * the affine's 3x3 part, its columns scaled to unit length, is replaced by
 * its nearest orthogonal matrix R (polar decomposition); then for each input
 * axis, taken from the one whose column of R has the largest entry to the
 * one with the smallest (nibabel 5.4 and later; earlier versions took them
 * in index order, which differs for some oblique affines), the world axis
 * where its column is largest in magnitude becomes its output axis (that
 * world axis is then taken), flipped when the entry is negative.  Output axis a holds input axis perm[a], read
 * backwards when flip[a]; the new affine is affine @ M with M the output
 * voxel -> input voxel map, so out_affine's 3x3 part is as close to a
 * positive diagonal as an axis permutation with flips can make it.
 * ndf_reorient_ras_plan gives out_shape, perm, flip and out_affine (any may
 * be NULL) for a volume of shape[0..3); a singular or non-finite 3x3 part is
 * NDF_EINVAL.  ndf_reorient_ras writes the data: input rank 3 (or more, the
 * leading ndim - 3 axes a batch kept in place), any dtype the interpolation
 * takes but bool, any strides; output the planned shape, the input's dtype.
 */
NDF_API ndf_status ndf_reorient_ras_plan(const int64_t *shape, const double *affine, int64_t *out_shape,
                                         int *perm, int *flip, double *out_affine);
NDF_API ndf_status ndf_reorient_ras(ndf_ctx *ctx, const ndf_array *input, const double *affine,
                                    ndf_array *output);

/*
 * Resampling to a voxel spacing, the volume kept in place: along each of the
 * nsp spatial axes (1..3), with old spacing s and new spacing S (> 0), the
 * output has n_out = round(n * s / S) samples (Python's round, half to even,
 * at least 1), S apart, centred on the input's field of view: output voxel o
 * samples input coordinate o r + t with r = S / s and
 * t = (n - 1) / 2 - (n_out - 1) / 2 r, so both grids share their centre.
 * ndf_resample_plan gives out_shape, r (scale) and t (offset);
 * ndf_resample_affine the output's affine, affine @ [diag(r) t; 0 1] (axes
 * beyond nsp unchanged).  ndf_resample runs ndf_affine_transform with that
 * diagonal map and the interpolation options (order, mode, cval, prefilter;
 * opt->batch_dims leading axes are a batch, the nsp axes after them spatial).
 * output: the planned shape (batch axes kept), any output dtype of the
 * transforms.  `ndforge run resample` and `ndforge preprocess` use these.
 */
NDF_API ndf_status ndf_resample_plan(int nsp, const int64_t *shape, const double *spacing,
                                     const double *new_spacing, int64_t *out_shape, double *scale, double *offset);
NDF_API ndf_status ndf_resample_affine(int nsp, const double *affine, const double *scale, const double *offset,
                                       double *out_affine);
NDF_API ndf_status ndf_resample(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, const double *spacing,
                                const double *new_spacing, const ndf_interp_options *opt);

/*
 * The bounding box of a mask's non-zero voxels: lo[d] the first index, hi[d]
 * one past the last, on each of its ndim axes; *count (may be NULL) the
 * number of non-zero voxels.  An empty mask gives count 0 and lo = hi = 0.
 * mask: any dtype, any strides, on the CPU or the context's GPU (the CUDA
 * path reads the mask back to the host, so it synchronizes).
 */
NDF_API ndf_status ndf_mask_bbox(ndf_ctx *ctx, const ndf_array *mask, int64_t *lo, int64_t *hi, int64_t *count);
/*
 * A crop of the box [lo, hi) grown by margin voxels on each side (nmargin 1:
 * every axis, or one per axis; >= 0) and clipped to the volume: start and
 * out_shape over ndim (1..3) axes; out_affine (may be NULL, then affine too)
 * is affine with its translation moved to voxel start, so a cropped voxel
 * keeps its world point.  An empty box (lo[d] >= hi[d]) is NDF_EINVAL.
 * ndf_crop copies input[start + o] into output[o] for output's shape (input
 * rank ndim, or more with leading batch axes kept; dtype as the
 * interpolation; the output the input's dtype and within the input).
 */
NDF_API ndf_status ndf_crop_plan(int ndim, const int64_t *shape, const int64_t *lo, const int64_t *hi, int nmargin,
                                 const int64_t *margin, int64_t *start, int64_t *out_shape, const double *affine,
                                 double *out_affine);
NDF_API ndf_status ndf_crop(ndf_ctx *ctx, const ndf_array *input, const int64_t *start, ndf_array *output);

/* Modalities of ndf_normalize_modality. */
typedef enum { NDF_MODALITY_CT = 0, NDF_MODALITY_MRI = 1 } ndf_modality;
/* "ct", "mri". */
NDF_API ndf_status ndf_modality_from_name(const char *name, ndf_modality *out);
NDF_API const char *ndf_modality_name(ndf_modality m);

/*
 * Options of ndf_normalize_modality:
 *   modality  CT: the HU window [centre - width / 2, centre + width / 2]
 *             mapped to [-1, 1] (ndf_window_ct; values outside clipped);
 *             MRI: z-score, (x - mean) / std with the statistics from the
 *             mask's non-zero voxels (all voxels without a mask;
 *             ndf_normalize_zscore).
 *   preset    CT: NULL, or a name of ndf_ct_window_preset (then centre and
 *             width are ignored).
 *   centre, width  CT: the window when preset is NULL (default 40 / 80, the
 *             brain window).
 *   batch_dims leading axes that are independent volumes.
 */
typedef struct ndf_normalize_options {
  ndf_modality modality;
  const char *preset;
  double centre, width;
  int batch_dims;
} ndf_normalize_options;
/* MRI, no preset, centre 40, width 80, batch_dims 0. */
NDF_API void ndf_normalize_options_init(ndf_normalize_options *opt);
/* mask: NULL or shaped like the input (MRI; ignored for CT).  output float32
 * or float64, shaped like the input; the intensity ops' dtypes and devices. */
NDF_API ndf_status ndf_normalize_modality(ndf_ctx *ctx, const ndf_array *input, const ndf_array *mask,
                                          ndf_array *output, const ndf_normalize_options *opt);
/* Skull stripping (FSL BET's surface model) and brain-mask helpers          */

/*
 * Options of ndf_skull_strip, named after FSL BET's (bet2) command line:
 *   fractional_intensity_threshold  -f, in [0, 1]: larger values give a
 *                     smaller brain outline (0.5)
 *   vertical_gradient -g, in [-1, 1]: the threshold varies along axis 2 as
 *                     f + g (z - z_cog) / radius (clamped to [0, 1]); positive
 *                     values give a larger outline at low axis-2 coordinates
 *                     (the bottom of a RAS volume) and a smaller one at the top (0)
 *   radius            -r, the initial brain radius in mm; 0 estimates it (0)
 *   has_centre, centre  -c, the initial centre in voxel coordinates (axis
 *                     order of the array); has_centre 0 estimates it (0)
 *   iterations        surface updates per pass (1000, BET's)
 */
typedef struct ndf_skull_strip_options {
  double fractional_intensity_threshold;
  double vertical_gradient;
  double radius;
  int has_centre;
  double centre[3];
  int iterations;
} ndf_skull_strip_options;
/* f 0.5, g 0, radius and centre estimated, 1000 iterations. */
NDF_API void ndf_skull_strip_options_init(ndf_skull_strip_options *opt);

/*
 * Brain extraction by Smith's method (S. M. Smith, "Fast robust automated
 * brain extraction", Human Brain Mapping 17:143-155, 2002; FSL's bet2):
 *   1. t2, t98: FSL's robust range (the 2nd and 98th percentiles from a
 *      histogram of 1000 bins over [min, max], narrowed while they span less
 *      than a tenth of it); t = t2 + 0.1 (t98 - t2).
 *   2. the centre: the mean position (mm) of the voxels with v - t2 > t - t2,
 *      weighted by min(v - t2, t98 - t2); the radius: that of a sphere whose
 *      volume is that of the voxels above t; tm: the lower median of the
 *      values in (t2, t98) strictly inside that sphere.
 *   3. a sphere of half that radius about the centre, tessellated as an
 *      icosahedron subdivided four times (2562 vertices, 5120 triangles), is
 *      deformed by `iterations` simultaneous updates of every vertex: half the
 *      tangential part of the offset to its neighbours' mean, BET's sigmoid of
 *      the local curvature (rmin 3.33 mm, rmax 10 mm) times the normal part,
 *      and 0.05 l f3 along the normal, where f3 = 2 (Imin - tl) / (Imax - t2)
 *      compares the image along the inward normal (as FSL's bet2 does, not
 *      the paper's 20 / 10 mm: Imin over the nearest voxels at 1 mm, 7 mm and
 *      2..6 mm in, Imax at 1 and 2 mm; no intensity term where the 1 mm or
 *      the 7 mm sample leaves the image) with tl = (Imax - t2) f' + t2,
 *      f' = f^0.275 (bet2's main parameter; plus the vertical gradient term),
 *      and l the surface's mean distance between neighbours, updated at
 *      iterations 0, 50 and every 100th.
 *   4. while bet2's self-intersection measure of the surface (over the pairs
 *      of vertices closer than l, the sum of (d / l - d0 / l0)^2, d0 and l0
 *      on the initial sphere) exceeds 4000, the surface is deformed again
 *      from the sphere with the curvature term of concave vertices
 *      multiplied by 10^(pass + 1) (falling to 1 over the last quarter of
 *      the iterations), up to pass 10.
 *   5. output: 1 for the voxels whose centres lie inside the surface, else 0
 *      (parity of the crossings along axis 2).
 * input: 3-D, any numeric dtype except int64, finite values; spacing: 3 values
 * >= 0.001 (mm per voxel along each axis; NULL: 1 mm).  output: bool or uint8, the
 * input's shape and device.  A CUDA input runs on the device (the statistics
 * of steps 1-2 as device histograms and ordered sums, a pass of step 3 in one
 * launch, the mask filled from the crossings the host computes); both
 * backends give the same mask bit for bit.  Synchronizes the stream.
 */
NDF_API ndf_status ndf_skull_strip(ndf_ctx *ctx, const ndf_array *input, const double *spacing, ndf_array *output,
                                   const ndf_skull_strip_options *opt);

/*
 * Weighted voting of n masks (non-zero = inside) of one shape: output[x] = 1
 * when sum_i weights[i] [masks[i][x] != 0] > threshold * sum_i weights[i],
 * the sums taken in double in the order of the masks.  A vote exactly at the
 * threshold is out (a tie between two equal masks keeps only their
 * intersection).  weights NULL: all 1; each weight >= 0 and finite, their sum
 * > 0; threshold in [0, 1) (0.5 by default in the bindings).  Masks: any
 * dtype; output: bool or uint8 of their shape.  Host arrays only.
 */
NDF_API ndf_status ndf_mask_fusion(ndf_ctx *ctx, const ndf_array *const *masks, int n, const double *weights,
                                   double threshold, ndf_array *output);

/*
 * Clean-up of a binary mask, in this order:
 *   1. binary opening with a ball of radius opening_radius voxels (the
 *      voxels k with sum(k^2) <= r^2 in a (2r+1)^rank box; 0 skips it);
 *   2. largest_component: only the largest connected component (connectivity
 *      as generate_binary_structure(rank, connectivity)); ties go to the
 *      component with the smallest label (first in C order);
 *   3. fill_holes: ndf_binary_fill_holes with the default structure.
 * scipy: binary_opening(m, ball), label(.., generate_binary_structure(rank,
 * connectivity)) and the largest count, binary_fill_holes.  input: any dtype
 * (non-zero = inside); output: bool or uint8 of its shape.  Host arrays only.
 */
typedef struct ndf_mask_clean_options {
  int opening_radius;    /* 1 */
  int largest_component; /* 1 */
  int fill_holes;        /* 1 */
  int connectivity;      /* 1 (faces), up to the rank */
} ndf_mask_clean_options;
NDF_API void ndf_mask_clean_options_init(ndf_mask_clean_options *opt);
NDF_API ndf_status ndf_mask_clean(ndf_ctx *ctx, const ndf_array *input, ndf_array *output,
                                  const ndf_mask_clean_options *opt);

/* Cache warm of ndf_skull_strip for an input of that dtype (3-D) into arch's disk cache. */
NDF_API ndf_status ndf_cache_warm_skull_strip(ndf_ctx *ctx, const char *arch, ndf_dtype dtype, int *compiled);
/* ---- N4 bias-field correction ------------------------------------------------------------ */

/*
 * N4 (Tustison et al. 2010, the algorithm of ITK's N4BiasFieldCorrectionImageFilter, with its
 * parameter names): the multiplicative, smooth bias field b of an image I is estimated as a
 * B-spline in the log domain, and the output is I / b.  The fit runs on the image shrunk by
 * shrink_factor (every shrink_factor-th voxel along each axis, the shrunk grid centred on the
 * input's as ITK's ShrinkImageFilter places it); then the fitted control lattice is evaluated
 * at every input voxel.
 *
 * Fitting levels l = 0..L-1 (L = number_of_fitting_levels), each with a control lattice of
 * (number_of_control_points[d] - spline_order) * 2^l + spline_order points per axis d, a
 * uniform B-spline of degree spline_order whose domain spans each grid's extent: voxel i of an
 * axis of n voxels sits at parametric coordinate i (ncp - order) / (n - 1), so the lattice
 * covers the same physical box at every resolution (spacing only scales that box).  Each
 * iteration of a level:
 *   1. r = log I - log b on the voxels inside (the mask, weight > 0, I > 0);
 *   2. the histogram of r (number_of_histogram_bins bins from min r to max r, linear
 *      splatting) is sharpened by Wiener deconvolution of a Gaussian of FWHM
 *      bias_field_full_width_at_half_maximum (in log units; noise wiener_filter_noise), and the
 *      expected true value E[u | r] of each bin maps r to sharpened s (linear between bins);
 *   3. r - s is fitted by a B-spline of the level's lattice with the scattered-data method of
 *      Lee, Wolberg and Shin (ITK's BSplineScatteredDataPointSetToImageFilter, one level):
 *      each voxel x proposes phi_k = z B_k(x) / sum_j B_j(x)^2 for the control points k over
 *      it, and each k takes the average of its proposals weighted by w(x) B_k(x)^2 (w the
 *      weight image, 1 without one); the result is added to the lattice of log b;
 *   4. convergence = the coefficient of variation (standard deviation, n - 1, over mean) of
 *      exp(old log b - new log b) over the voxels inside (ITK's CalculateConvergenceMeasurement);
 *      the level stops when it is at most convergence_threshold or after
 *      maximum_number_of_iterations[l] iterations.
 * Between levels the lattice is refined exactly to twice as many spans (the field is kept).
 *
 * input: uint8, int8, uint16, int16, uint32, int32, float32 or float64 (read as float64), rank 1..NDF_MAX_SPATIAL,
 * every axis spatial (no batch axes), on the host or the context's CUDA device.
 * mask: NULL (every voxel inside) or uint8 (or bool) of the input's shape and device: inside where
 * mask != 0 (mask_label 0, the default) or where mask == mask_label (1..255, ITK's MaskLabel;
 * SimpleITK passes MaskLabel 1, the same for a 0/1 mask).  weight: NULL or float32/float64 of
 * the input's shape and device, ITK's confidence image: voxels with weight <= 0 (or not
 * finite) are outside, the others weigh w in the fit.  Voxels with I <= 0 or not finite are
 * outside too (log I is undefined there; ITK would use them with a value of their own).
 * output: float32 or float64, the input's shape and device, I / exp(log b) at every voxel (also
 * outside the mask).  log_bias_field: NULL or float32/float64 of the input's shape and device,
 * log b at every voxel.  Neither may overlap an input; nothing is written on failure.
 * NDF_EINVAL for options outside their ranges (below) or when no voxel of the shrunk image is
 * inside.  result (NULL or): the iterations each level ran and the last convergence value.
 * Both backends run the same algorithm in float64; the GPU's histogram and convergence sums are
 * ordered differently, so the results agree to rounding (the GPU test allows 1e-6 on log b).  The
 * CUDA path synchronizes three times per iteration (the histogram deconvolution runs on the host).
 */
#define NDF_N4_MAX_LEVELS 12
typedef struct ndf_n4_options {
  int number_of_fitting_levels;                          /* 1..NDF_N4_MAX_LEVELS; 4 */
  int maximum_number_of_iterations[NDF_N4_MAX_LEVELS];   /* per level, >= 0; 50 each */
  double convergence_threshold;                          /* >= 0; 0.001 */
  int spline_order;                                      /* 1..5; 3 */
  int nnumber_of_control_points;                         /* 1: one value for every axis, or one per axis */
  int64_t number_of_control_points[NDF_MAX_SPATIAL];     /* > spline_order, at most 4096; 4 */
  double bias_field_full_width_at_half_maximum;          /* > 0; 0.15 */
  double wiener_filter_noise;                            /* >= 0; 0.01 */
  int number_of_histogram_bins;                          /* 2..65536; 200 */
  int shrink_factor;                                     /* >= 1; 1 (the N4 tools' -s) */
  int nspacing;                                          /* 0 (all 1), 1, or one per axis */
  double spacing[NDF_MAX_SPATIAL];                       /* > 0, finite */
  int mask_label;                                        /* 0..255; 0 = non-zero is inside */
} ndf_n4_options;

/* What a call did: the iterations of each level and the last convergence value. */
typedef struct ndf_n4_result {
  int number_of_fitting_levels;
  int iterations[NDF_N4_MAX_LEVELS];
  double convergence;
} ndf_n4_result;

/* SimpleITK's defaults: 4 levels of 50 iterations, 0.001, cubic, 4 control points, FWHM 0.15,
 * noise 0.01, 200 bins, shrink 1, spacing 1, mask_label 0. */
NDF_API void ndf_n4_options_init(ndf_n4_options *opt);

NDF_API ndf_status ndf_n4_bias_field_correction(ndf_ctx *ctx, const ndf_array *input, const ndf_array *mask,
                                                const ndf_array *weight, ndf_array *output,
                                                ndf_array *log_bias_field, const ndf_n4_options *opt,
                                                ndf_n4_result *result);

#ifdef __cplusplus
}
#endif
#endif /* NDFORGE_H */
