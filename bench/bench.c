/*
 * bench.c -- the benchmark of ndforge's ops (program ndf_bench).
 *
 * Every op family plugs in through the `ops` table below: its name (the
 * --op value and the first part of a workload's key), how its options are
 * set up from a workload, the call, and the output dtype.  To add an op:
 * add a row to `ops` (and to its family's set-up / call when the family is
 * new), then workloads to default_workloads, and the same workloads, with
 * the same keys (wl_name), to a bench/peers_<family>.py for the peers.
 *
 * This file uses only the public API of ndforge, plus a few CUDA driver calls
 * (events, a host function, the current context) that it loads itself with
 * dlopen, so that it builds and starts on machines without CUDA.
 *
 * For each workload it checks first, then times (DESIGN.md, "Benchmarks"):
 *   check  the first GPU result, bit for bit, against the CPU backend on the
 *          same random input (the output is poisoned before the call);
 *          Sinkhorn cannot be bit for bit (float32 on the GPU, float64 on the
 *          CPU): its transport costs are checked to a relative 1e-3, and its
 *          timings differ too (see run_sinkhorn);
 *   cold   first call in a new context whose cache directory is new and
 *          empty (NVRTC compile + module load + run), host clock around
 *          call + ndf_ctx_synchronize;
 *   disk   the same first call in a fresh process of this program, over the
 *          cache that the cold call filled (load from disk, no compile);
 *   warm   median CUDA-event time of one call in steady state;
 *   host   median host time of one call's enqueue (the call alone, no sync).
 * One JSON object per workload goes to stdout; --human adds a one-line
 * summary per workload on stderr.  The GPU contexts use the device's tuning
 * table of the default cache directory (`ndforge tune`, ADR 0019), and the
 * field "tuning" says how many choices it made ("table: N choices", "none");
 * --no-tuning times the built-in defaults ("off"): a run with and one without
 * compare the two.  --tune sets tunables on every context (field "tune").
 *
 * Exit status: 0 all done, 1 a failure or a wrong result, 2 bad usage,
 * 77 no usable CUDA device and nothing else asked (ctest's "skipped").
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <zlib.h>
#include <dlfcn.h>
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../tools/ndfio.h" /* header-only: its element reader */
#include "ndforge.h"
#include "ops.generated.h"

/* --algorithm NAME: the grey or rank algorithm of every workload (NULL: auto);
 * --tune NAME=VALUE,...: tunables set on every context (ndf_ctx_set_tunables; e.g.
 * jit.fast_compile=mid to time its compiles and its kernels). */
static const char *g_algorithm;
static const char *g_tune;

#define EXIT_SKIP 77
#define EXIT_USAGE 2

#define MB ((size_t)1 << 20)
/* Inputs under this size may sit in L2 (50 MB on H100/H200): rotate buffers. */
#define ROTATE_BELOW (100 * MB)
/* Rotated buffers (inputs + outputs) add up to at least this much. */
#define ROTATE_TOTAL (512 * MB)
#define MAX_BUFS 64
/* Measured HBM3e bandwidth of an H200 (read + write), for the floor. */
#define PEAK_BYTES_PER_S 4.19e12
#define WARMUPS 10
/* Calls queued behind one gate; small enough never to fill the launch queue. */
#define GATE_BATCH 20
#define GATE_TIMEOUT_MS 5000.0
#define CPU_RUNS 5

/* ------------------------------------------------------------------------ */
/* Workloads                                                                 */

typedef enum { FP_BOX = 0, FP_CROSS = 1 } fp_kind;
typedef enum { FAM_GREY, FAM_RANK, FAM_DISTANCE, FAM_BINARY, FAM_LABEL, FAM_SINKHORN, FAM_ECC, FAM_SOFT_ECC, FAM_ECT, FAM_SOFT_ECT, FAM_INTENSITY, FAM_FILTERS, FAM_SSIM, FAM_INTERP, FAM_BET, FAM_N4 } op_family;

/* The workload kinds, from the op registry (gen/ops.lua): --op name, key (the
 * first part of a workload's name) and family (how its inputs are set up). */
typedef struct op_desc {
  const char *name, *key;
  op_family family;
} op_desc;
#define BENCH_OP_ENUM(id, arg, key, setup) OP_##id,
/* SSIM's two kinds: ssim a uniform window of size, ssim_gauss sigma 1.5 (size 11). */
enum { NDF_OPS_BENCH(BENCH_OP_ENUM) OP_COUNT };
#define BENCH_OP_ROW(id, arg, key, setup) [OP_##id] = {arg, key, FAM_##setup},
static const op_desc ops[OP_COUNT] = {NDF_OPS_BENCH(BENCH_OP_ROW)};

typedef struct workload {
  int op;     /* OP_* */
  ndf_dtype dtype;
  int ndim;
  int64_t shape[NDF_MAX_NDIM];
  int size;   /* extent of the element along every spatial axis */
  fp_kind fp; /* box: size = ...; cross: footprint with one axis off-centre at most */
  int batch_dims;
  ndf_mode mode;
  double param; /* euler_characteristic_curve: size = T thresholds over [min, max], param bit 0 = T-construction,
                   bit 1 = over the range [-1000, 1000] instead;
                   rank_filter: the rank; percentile_filter: the percentile; binary_erosion: iterations;
                   distance_transform_edt: 1 = sampling (0.7, 1.3, ...) and indices too; sinkhorn: epsilon */
} workload;

/* The default workloads: float32 and reflect unless said. */
static const workload default_workloads[] = {
    {OP_DILATION, NDF_FLOAT32, 3, {64, 1024, 1024}, 3, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    {OP_DILATION, NDF_FLOAT32, 3, {64, 1024, 1024}, 3, FP_BOX, 1, NDF_MODE_REFLECT, 0},
    {OP_EROSION, NDF_FLOAT32, 3, {256, 256, 256}, 3, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    {OP_DILATION, NDF_FLOAT32, 3, {8, 256, 256}, 3, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    {OP_DILATION, NDF_FLOAT32, 3, {8, 256, 256}, 3, FP_BOX, 1, NDF_MODE_REFLECT, 0},
    {OP_DILATION, NDF_FLOAT32, 4, {8, 256, 256, 256}, 3, FP_BOX, 1, NDF_MODE_REFLECT, 0},
    {OP_EROSION, NDF_FLOAT32, 3, {256, 256, 256}, 3, FP_CROSS, 0, NDF_MODE_REFLECT, 0},
    {OP_EROSION, NDF_FLOAT32, 3, {256, 256, 256}, 7, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    {OP_EROSION, NDF_UINT8, 3, {256, 256, 256}, 3, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    /* large elements (issue 4): opening, and the size sweep of one dilation */
    {OP_OPENING, NDF_FLOAT32, 4, {4, 128, 128, 128}, 5, FP_BOX, 1, NDF_MODE_REFLECT, 0},
    {OP_DILATION, NDF_FLOAT32, 2, {2048, 2048}, 3, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    {OP_DILATION, NDF_FLOAT32, 2, {2048, 2048}, 7, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    {OP_DILATION, NDF_FLOAT32, 2, {2048, 2048}, 15, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    {OP_DILATION, NDF_FLOAT32, 2, {2048, 2048}, 31, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    {OP_DILATION, NDF_FLOAT32, 2, {2048, 2048}, 63, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    /* rank filters (issue 7) */
    {OP_MEDIAN, NDF_FLOAT32, 4, {1, 3, 256, 256}, 5, FP_BOX, 2, NDF_MODE_REFLECT, 0},
    {OP_MEDIAN, NDF_FLOAT32, 4, {8, 3, 256, 256}, 3, FP_BOX, 2, NDF_MODE_REFLECT, 0},
    {OP_MEDIAN, NDF_FLOAT32, 4, {8, 3, 256, 256}, 5, FP_BOX, 2, NDF_MODE_REFLECT, 0},
    {OP_MEDIAN, NDF_FLOAT32, 3, {128, 128, 128}, 3, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    {OP_MEDIAN, NDF_FLOAT32, 2, {1024, 1024}, 3, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    {OP_MEDIAN, NDF_FLOAT32, 2, {1024, 1024}, 7, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    {OP_MEDIAN, NDF_FLOAT32, 2, {1024, 1024}, 31, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    {OP_MEDIAN, NDF_UINT8, 4, {8, 3, 256, 256}, 5, FP_BOX, 2, NDF_MODE_REFLECT, 0},
    {OP_MEDIAN, NDF_UINT8, 2, {1024, 1024}, 3, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    {OP_MEDIAN, NDF_UINT8, 2, {1024, 1024}, 31, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    /* distance transforms (issue 5): uint8 input of random bytes (background
     * = the zeros, 1 in 256), float64 distances; size and mode unused */
    {OP_EDT, NDF_UINT8, 2, {1024, 1024}, 1, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    {OP_EDT, NDF_UINT8, 3, {8, 1024, 1024}, 1, FP_BOX, 1, NDF_MODE_REFLECT, 0},
    {OP_EDT, NDF_UINT8, 3, {256, 256, 256}, 1, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    {OP_EDT, NDF_UINT8, 3, {512, 512, 512}, 1, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    {OP_EDT, NDF_UINT8, 2, {1024, 1024}, 1, FP_BOX, 0, NDF_MODE_REFLECT, 1},
    /* cdt (issue 5): distances (int32), "cdt_taxicab_u8_1024x1024_b0", "cdt_chessboard_..." */
    {OP_CDT_TAXI, NDF_UINT8, 2, {1024, 1024}, 1, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    {OP_CDT_CHESS, NDF_UINT8, 2, {1024, 1024}, 1, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    {OP_CDT_TAXI, NDF_UINT8, 3, {256, 256, 256}, 1, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    {OP_CDT_CHESS, NDF_UINT8, 3, {256, 256, 256}, 1, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    /* binary morphology and label (issue 3): bool inputs of random blobs, the 6-connected cross */
    {OP_BIN_EROSION, NDF_BOOL, 3, {256, 256, 256}, 3, FP_CROSS, 0, NDF_MODE_REFLECT, 1},
    {OP_BIN_EROSION, NDF_BOOL, 3, {256, 256, 256}, 3, FP_CROSS, 0, NDF_MODE_REFLECT, 10},
    {OP_FILL_HOLES, NDF_BOOL, 3, {256, 256, 256}, 3, FP_CROSS, 0, NDF_MODE_REFLECT, 0},
    {OP_LABEL, NDF_BOOL, 3, {256, 256, 256}, 3, FP_CROSS, 0, NDF_MODE_REFLECT, 0},
    /* entropic OT (issue 6): shape = (n pairs, grid...), size = iterations, param = epsilon; the
     * squared-Euclidean grid cost normalized to max 1 (dense: the same cost as a d x d matrix) */
    {OP_SINKHORN, NDF_FLOAT32, 3, {16, 32, 32}, 100, FP_BOX, 1, NDF_MODE_REFLECT, 0.05},
    {OP_SINKHORN, NDF_FLOAT32, 3, {16, 32, 32}, 1000, FP_BOX, 1, NDF_MODE_REFLECT, 0.05},
    {OP_SINKHORN_LOG, NDF_FLOAT32, 3, {16, 32, 32}, 100, FP_BOX, 1, NDF_MODE_REFLECT, 0.01},
    {OP_SINKHORN, NDF_FLOAT32, 3, {128, 32, 32}, 100, FP_BOX, 1, NDF_MODE_REFLECT, 0.05},
    {OP_SINKHORN_DENSE, NDF_FLOAT32, 3, {16, 32, 32}, 100, FP_BOX, 1, NDF_MODE_REFLECT, 0.05},
    /* Euler characteristic curves (issue 8): float32 in [-1000, 1000), T = 256 over [min, max], V-construction */
    {OP_ECC, NDF_FLOAT32, 2, {1024, 1024}, 256, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    {OP_ECC, NDF_FLOAT32, 2, {8192, 8192}, 256, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    {OP_ECC, NDF_FLOAT32, 3, {128, 128, 128}, 256, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    {OP_ECC, NDF_FLOAT32, 3, {256, 256, 256}, 256, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    {OP_ECC, NDF_FLOAT32, 3, {512, 512, 512}, 256, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    {OP_ECC, NDF_FLOAT32, 3, {64, 256, 256}, 256, FP_BOX, 1, NDF_MODE_REFLECT, 0},
    {OP_ECC, NDF_FLOAT32, 3, {256, 256, 256}, 256, FP_BOX, 0, NDF_MODE_REFLECT, 1},
    {OP_ECC, NDF_UINT8, 3, {256, 256, 256}, 256, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    {OP_ECC, NDF_UINT16, 3, {256, 256, 256}, 256, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    {OP_ECC, NDF_UINT8, 3, {512, 512, 512}, 256, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    {OP_ECC, NDF_UINT8, 2, {1024, 1024}, 256, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    {OP_ECC, NDF_UINT16, 2, {8192, 8192}, 256, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    /* thresholds over a given range (param bit 1: [-1000, 1000], fill_random's): no pass for [min, max] */
    {OP_ECC, NDF_FLOAT32, 3, {128, 128, 128}, 256, FP_BOX, 0, NDF_MODE_REFLECT, 2},
    {OP_ECC, NDF_FLOAT32, 3, {256, 256, 256}, 256, FP_BOX, 0, NDF_MODE_REFLECT, 2},
    {OP_ECC, NDF_FLOAT32, 3, {512, 512, 512}, 256, FP_BOX, 0, NDF_MODE_REFLECT, 2},
    {OP_ECC, NDF_FLOAT32, 3, {256, 256, 256}, 256, FP_BOX, 0, NDF_MODE_REFLECT, 3},
    {OP_ECC, NDF_FLOAT32, 2, {1024, 1024}, 256, FP_BOX, 0, NDF_MODE_REFLECT, 2},
    {OP_ECC, NDF_FLOAT32, 2, {8192, 8192}, 256, FP_BOX, 0, NDF_MODE_REFLECT, 2},
    {OP_ECC, NDF_FLOAT32, 3, {64, 256, 256}, 256, FP_BOX, 1, NDF_MODE_REFLECT, 2},
    /* soft ECC: forward + backward, T = size thresholds evenly spaced over the input's [-1000, 1000) */
    {OP_SOFT_ECC, NDF_FLOAT32, 3, {64, 256, 256}, 64, FP_BOX, 1, NDF_MODE_REFLECT, 0},
    /* Euler characteristic transform (issue 8): uint8 blobs, binary, V, T = size over [-R, R], param = m
     * directions evenly spread (2-D: angles 2 pi j / m; 3-D: a Fibonacci sphere) */
    {OP_ECT, NDF_UINT8, 2, {256, 256}, 64, FP_BOX, 0, NDF_MODE_REFLECT, 64},
    /* soft ECT (issue 8): uint8 blobs, binary, V, normalized coordinates, T = size thresholds over [-1, 1],
     * lambda = T - 1, param = m directions as for the ECT; forward + backward (every gradient) */
    {OP_SOFT_ECT, NDF_UINT8, 2, {256, 256}, 64, FP_BOX, 0, NDF_MODE_REFLECT, 64},
    {OP_SOFT_ECT, NDF_UINT8, 3, {128, 128, 128}, 64, FP_BOX, 0, NDF_MODE_REFLECT, 64},
    /* distance_transform_bf (issue 5): the brute-force oracle, euclidean, uint8 random bytes as for edt */
    {OP_BF, NDF_UINT8, 2, {256, 256}, 1, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    {OP_ECT, NDF_UINT8, 3, {128, 128, 128}, 64, FP_BOX, 0, NDF_MODE_REFLECT, 64},
    /* intensity (issue 32): percentile windowing 0.5 .. 99.5 of fill_random's float32 into [0, 1], float32 out */
    {OP_PWINDOW, NDF_FLOAT32, 3, {256, 256, 256}, 0, FP_BOX, 0, NDF_MODE_REFLECT, 0.5},
    /* linear filters (issue 32): float32 in [-1000, 1000), reflect; gaussian: truncate 4, param = sigma */
    {OP_GAUSSIAN, NDF_FLOAT32, 3, {256, 256, 256}, 0, FP_BOX, 0, NDF_MODE_REFLECT, 2},
    {OP_GAUSSIAN, NDF_FLOAT32, 3, {64, 1024, 1024}, 0, FP_BOX, 1, NDF_MODE_REFLECT, 2},
    {OP_UNIFORM, NDF_FLOAT32, 3, {256, 256, 256}, 5, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    /* SSIM (issue 32): the full map (float32) and the mean of two random float32 volumes (the second
     * from a fixed seed, see ssim_side), data_range 2000, skimage's defaults otherwise */
    {OP_SSIM, NDF_FLOAT32, 3, {256, 256, 256}, 7, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    {OP_SSIM_GAUSS, NDF_FLOAT32, 3, {256, 256, 256}, 11, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    /* interpolation (issue 32): the 1 mm MNI grid 181x217x181 resampled to 1 mm (zoom 1) and 0.5 mm (zoom 2)
     * by orders 1 and 3; a 256^3 volume rotated by 15 degrees (order 1); 10^7 points of a 256^3 volume */
    {OP_ZOOM, NDF_FLOAT32, 3, {181, 217, 181}, 1, FP_BOX, 0, NDF_MODE_REFLECT, 1.0},
    {OP_ZOOM, NDF_FLOAT32, 3, {181, 217, 181}, 1, FP_BOX, 0, NDF_MODE_REFLECT, 2.0},
    {OP_ZOOM, NDF_FLOAT32, 3, {181, 217, 181}, 3, FP_BOX, 0, NDF_MODE_REFLECT, 1.0},
    {OP_ZOOM, NDF_FLOAT32, 3, {181, 217, 181}, 3, FP_BOX, 0, NDF_MODE_REFLECT, 2.0},
    {OP_AFFINE_ROT, NDF_FLOAT32, 3, {256, 256, 256}, 1, FP_BOX, 0, NDF_MODE_REFLECT, 15.0},
    {OP_MAP_COORDS, NDF_FLOAT32, 3, {256, 256, 256}, 1, FP_BOX, 0, NDF_MODE_REFLECT, 1e7},
    /* skull stripping (issue 33): FSL BET's method on the real T1 MRI ch2.nii.gz of Debian's mricron-data
     * (uint8, 181x217x181 at 1 mm), BET's defaults; the input must be that shape and dtype */
    {OP_SKULL_STRIP, NDF_UINT8, 3, {181, 217, 181}, 0, FP_BOX, 0, NDF_MODE_REFLECT, 0},
    /* N4 bias-field correction (issue 33): a ch2-sized volume (two tissue classes with noise times a smooth
     * bias, see fill_n4), the fit on the volume shrunk by param = 4, SimpleITK's defaults otherwise
     * (4 levels of 50 iterations); bench/peers_n4.py times SimpleITK on ch2 itself */
    {OP_N4, NDF_FLOAT32, 3, {181, 217, 181}, 0, FP_BOX, 0, NDF_MODE_REFLECT, 4},
};
#define N_DEFAULT (sizeof default_workloads / sizeof default_workloads[0])

static const char *op_name(int op) { return ops[op].name; }

/* The output dtype of an op for an input dtype. */
static ndf_dtype out_dtype(const workload *w)
{
  switch (ops[w->op].family) {
  case FAM_DISTANCE: return w->op == OP_CDT_TAXI || w->op == OP_CDT_CHESS ? NDF_INT32 : NDF_FLOAT64;
  case FAM_BINARY: return NDF_BOOL;
  case FAM_BET: return NDF_UINT8;
  case FAM_LABEL: return NDF_INT32;
  case FAM_ECC: return NDF_INT64;
  case FAM_SOFT_ECC: return NDF_FLOAT64;
  case FAM_ECT: return NDF_INT64;
  case FAM_SOFT_ECT: return NDF_FLOAT64;
  default: return w->dtype;
  }
}

/* NumPy's short type codes, for names and the human line: "f32", "u8". */
static const char *dtype_short(ndf_dtype t)
{
  switch (t) {
  case NDF_BOOL: return "bool";
  case NDF_UINT8: return "u8";
  case NDF_INT8: return "i8";
  case NDF_UINT16: return "u16";
  case NDF_INT16: return "i16";
  case NDF_UINT32: return "u32";
  case NDF_INT32: return "i32";
  case NDF_FLOAT32: return "f32";
  case NDF_FLOAT64: return "f64";
  default: return "?";
  }
}

static int64_t wl_count(const workload *w)
{
  int64_t n = 1;
  for (int i = 0; i < w->ndim; i++) n *= w->shape[i];
  return n;
}

/* The output's shape: the input's, except for the curves (batch..., T). */
static int wl_out_shape(const workload *w, int64_t *shape)
{
  if (w->op == OP_MAP_COORDS) { /* (batch..., points) */
    for (int i = 0; i < w->batch_dims; i++) shape[i] = w->shape[i];
    shape[w->batch_dims] = (int64_t)w->param;
    return w->batch_dims + 1;
  }
  if (w->op == OP_ZOOM) {
    const double z = w->param;
    if (ndf_zoom_shape(w->ndim, w->shape, w->batch_dims, 1, &z, shape) == NDF_OK) return w->ndim;
  }
  if (ops[w->op].family == FAM_ECT || ops[w->op].family == FAM_SOFT_ECT) { /* (batch..., m, T) */
    for (int i = 0; i < w->batch_dims; i++) shape[i] = w->shape[i];
    shape[w->batch_dims] = (int64_t)w->param;
    shape[w->batch_dims + 1] = w->size;
    return w->batch_dims + 2;
  }
  if (ops[w->op].family != FAM_ECC && ops[w->op].family != FAM_SOFT_ECC) {
    memcpy(shape, w->shape, sizeof w->shape);
    return w->ndim;
  }
  for (int i = 0; i < w->batch_dims; i++) shape[i] = w->shape[i];
  shape[w->batch_dims] = w->size;
  return w->batch_dims + 1;
}

static int64_t wl_out_count(const workload *w)
{
  int64_t sh[NDF_MAX_NDIM], n = 1;
  int nd = wl_out_shape(w, sh);
  for (int i = 0; i < nd; i++) n *= sh[i];
  return n;
}

static size_t wl_bytes(const workload *w) { return (size_t)wl_count(w) * ndf_dtype_size(w->dtype); }
static size_t wl_out_bytes(const workload *w) { return (size_t)wl_out_count(w) * ndf_dtype_size(out_dtype(w)); }

/* Bytes a call must move at least: input and output, and map_coordinates' float32 coordinates. */
static double wl_traffic(const workload *w)
{
  double b = (double)wl_bytes(w) * (ops[w->op].family == FAM_SSIM ? 2 : 1) + (double)wl_out_bytes(w);
  if (ops[w->op].family == FAM_INTENSITY) b += (double)wl_bytes(w); /* the percentiles read the input first */
  if (w->op == OP_MAP_COORDS) b += 4.0 * (double)(w->ndim - w->batch_dims) * w->param;
  return b;
}

static void shape_str(const workload *w, char sep, char *buf, size_t len)
{
  size_t k = 0;
  buf[0] = '\0';
  for (int i = 0; i < w->ndim && k < len; i++)
    k += (size_t)snprintf(buf + k, len - k, "%s%lld", i ? (char[]){sep, 0} : "", (long long)w->shape[i]);
}

/* The key that joins ndf_bench and bench/peers_*.py lines:
 * "dilation_f32_64x1024x1024_s3_b0", "erosion_f32_256x256x256_cross3_b0",
 * "median_f32_8x3x256x256_s5_b2", "rank10_u8_..." (the parameter follows the
 * key of rank and percentile). */
static void wl_name(const workload *w, char *buf, size_t len)
{
  char shp[160], op[64];
  shape_str(w, 'x', shp, sizeof shp);
  if (w->op == OP_RANK || w->op == OP_PERCENTILE) snprintf(op, sizeof op, "%s%g", ops[w->op].key, w->param);
  else if (w->op == OP_BIN_EROSION) snprintf(op, sizeof op, "%s_it%g", ops[w->op].key, w->param);
  else snprintf(op, sizeof op, "%s", ops[w->op].key);
  if (ops[w->op].family == FAM_SINKHORN) { /* "sinkhorn_f32_16x32x32_it100_eps0.05", "sinkhorn_log_...", "sinkhorn_dense_..." */
    snprintf(buf, len, "%s_%s_%s_it%d_eps%g", op, dtype_short(w->dtype), shp, w->size, w->param);
    return;
  }
  if (ops[w->op].family == FAM_SOFT_ECC) { /* "soft_ecc_float32_64x256x256_T64" (forward + backward) */
    snprintf(buf, len, "%s_%s_%s_T%d", op, ndf_dtype_name(w->dtype), shp, w->size);
    return;
  }
  if (ops[w->op].family == FAM_ECC) { /* "ecc_float32_1024x1024_T256", "ecc_float32_64x256x256_b1_T256" */
    char b[16] = "";
    if (w->batch_dims) snprintf(b, sizeof b, "_b%d", w->batch_dims);
    const int pm = (int)w->param;
    snprintf(buf, len, "%s%s%s_%s_%s%s_T%d", op, pm & 1 ? "_tcons" : "", pm & 2 ? "_range" : "", ndf_dtype_name(w->dtype), shp,
             b, w->size);
    return;
  }
  if (ops[w->op].family == FAM_ECT || ops[w->op].family == FAM_SOFT_ECT) { /* "ect_uint8_256x256_m64_T64" */
    char b[16] = "";
    if (w->batch_dims) snprintf(b, sizeof b, "_b%d", w->batch_dims);
    snprintf(buf, len, "%s_%s_%s%s_m%d_T%d", op, ndf_dtype_name(w->dtype), shp, b, (int)w->param, w->size);
    return;
  }
  if (ops[w->op].family == FAM_INTERP) { /* "zoom_o3_f32_181x217x181_b0_p2", "map_coordinates_o1_..._p1e+07" */
    snprintf(buf, len, "%s_o%d_%s_%s_b%d_p%g", op, w->size, dtype_short(w->dtype), shp, w->batch_dims, w->param);
    return;
  }
  if (ops[w->op].family == FAM_N4) { /* "n4_s4_f32_181x217x181" */
    snprintf(buf, len, "%s_s%g_%s_%s", op, w->param, dtype_short(w->dtype), shp);
    return;
  }
  if (ops[w->op].family == FAM_INTENSITY) { /* "pwindow0.5_f32_256x256x256_b0" */
    snprintf(buf, len, "%s%g_%s_%s_b%d", op, w->param, dtype_short(w->dtype), shp, w->batch_dims);
    return;
  }
  if (w->op == OP_GAUSSIAN) { /* "gaussian_f32_256x256x256_sigma2_b0" */
    snprintf(buf, len, "%s_%s_%s_sigma%g_b%d%s%s", op, dtype_short(w->dtype), shp, w->param, w->batch_dims,
             w->mode == NDF_MODE_REFLECT ? "" : "_", w->mode == NDF_MODE_REFLECT ? "" : ndf_mode_name(w->mode));
    return;
  }
  if (ops[w->op].family == FAM_DISTANCE) { /* "edt_u8_1024x1024_b0", "..._samp_idx" */
    snprintf(buf, len, "%s_%s_%s_b%d%s", op, dtype_short(w->dtype), shp, w->batch_dims, w->param ? "_samp_idx" : "");
    return;
  }
  snprintf(buf, len, "%s_%s_%s_%s%d_b%d%s%s", op,
           dtype_short(w->dtype), shp, w->fp == FP_CROSS ? "cross" : "s", w->size, w->batch_dims,
           w->mode == NDF_MODE_REFLECT ? "" : "_", w->mode == NDF_MODE_REFLECT ? "" : ndf_mode_name(w->mode));
}

/* Options of one workload, for its family.  The footprint (cross only) lives in fpbuf. */
typedef struct op_setup {
  ndf_grey_options opt;
  ndf_rank_options ropt;
  ndf_distance_options dopt;
  ndf_binary_options bopt; /* binary ops and label: the footprint is the structure */
  ndf_ecc_options eopt;
  ndf_soft_ecc_options sopt; /* soft ECC: thresholds in sthr (host, float64) */
  ndf_array sthr;
  double *sbuf;
  ndf_ect_options topt; /* ECT: the directions live in dirbuf */
  ndf_array dirs;
  double *dirbuf;
  ndf_soft_ect_options xopt; /* soft ECT: thresholds in sthr, directions in dirs */
  ndf_array fp;
  uint8_t *fpbuf;
  ndf_interp_options iopt; /* interpolation; the rotation's matrix and offset */
  double rot[9], rot_off[3];
  ndf_array rotm;
  ndf_filter_options fopt; /* linear filters */
  ndf_gaussian_params gauss;
  ndf_ssim_options mopt; /* SSIM: the second image and the mean live in ssim_side */
} op_setup;

static int setup_options(const workload *w, op_setup *g)
{
  int sp = w->ndim - w->batch_dims;
  memset(g, 0, sizeof *g);
  ndf_grey_options_init(&g->opt);
  ndf_rank_options_init(&g->ropt);
  ndf_distance_options_init(&g->dopt);
  g->dopt.batch_dims = w->batch_dims;
  if (ops[w->op].family == FAM_INTERP) {
    ndf_interp_options_init(&g->iopt);
    g->iopt.order = w->size;
    g->iopt.batch_dims = w->batch_dims;
    if (w->op == OP_AFFINE_ROT) { /* about the first spatial axis, through the volume's centre */
      const double a = w->param * 3.14159265358979323846 / 180, c = cos(a), sn = sin(a);
      const double m[9] = {1, 0, 0, 0, c, sn, 0, -sn, c};
      memcpy(g->rot, m, sizeof m);
      double ctr[3];
      for (int i = 0; i < 3; i++) ctr[i] = (double)(w->shape[w->batch_dims + i] - 1) / 2;
      for (int i = 0; i < 3; i++) g->rot_off[i] = ctr[i] - (m[3 * i] * ctr[0] + m[3 * i + 1] * ctr[1] + m[3 * i + 2] * ctr[2]);
      const int64_t ms[2] = {3, 3};
      if (sp != 3 || ndf_array_init(&g->rotm, g->rot, NDF_DEVICE_CPU, NDF_FLOAT64, 2, ms) != NDF_OK) return -1;
    }
    return 0;
  }
  if (ops[w->op].family == FAM_SSIM) {
    ndf_ssim_options_init(&g->mopt);
    g->mopt.data_range = 2000; /* fill_random's range */
    g->mopt.gaussian_weights = w->op == OP_SSIM_GAUSS;
    g->mopt.batch_dims = w->batch_dims;
    return 0;
  }
  if (ops[w->op].family == FAM_SOFT_ECC) {
    /* thresholds evenly spaced over fill_random's [-1000, 1000); lambda: a
     * sigmoid about two threshold spacings wide */
    int64_t T = w->size;
    ndf_soft_ecc_options_init(&g->sopt);
    g->sopt.batch_dims = w->batch_dims;
    g->sopt.construction = w->param ? NDF_ECC_T : NDF_ECC_V;
    g->sopt.lambda = T > 1 ? 2.0 * (double)(T - 1) / 2000.0 : 1.0;
    if (!(g->sbuf = malloc((size_t)(T > 0 ? T : 1) * sizeof *g->sbuf))) return -1;
    for (int64_t k = 0; k < T; k++) g->sbuf[k] = T > 1 ? -1000.0 + 2000.0 * (double)k / (double)(T - 1) : 0.0;
    return ndf_array_init(&g->sthr, g->sbuf, NDF_DEVICE_CPU, NDF_FLOAT64, 1, &T) == NDF_OK ? 0 : -1;
  }
  if (ops[w->op].family == FAM_ECC) {
    ndf_ecc_options_init(&g->eopt);
    g->eopt.nthresholds = w->size;
    g->eopt.batch_dims = w->batch_dims;
    g->eopt.construction = (int)w->param & 1 ? NDF_ECC_T : NDF_ECC_V;
    if ((int)w->param & 2) { /* the range the data is known to lie in (fill_random's) */
      g->eopt.has_range = 1;
      g->eopt.range_lo = -1000.0;
      g->eopt.range_hi = 1000.0;
    }
    return 0;
  }
  if (ops[w->op].family == FAM_ECT || ops[w->op].family == FAM_SOFT_ECT) {
    const int m = (int)w->param;
    if (ops[w->op].family == FAM_SOFT_ECT) {
      int64_t T = w->size;
      ndf_soft_ect_options_init(&g->xopt);
      g->xopt.batch_dims = w->batch_dims;
      g->xopt.normalize = 1;
      g->xopt.lambda = T > 1 ? (double)(T - 1) : 1.0;
      if (!(g->sbuf = malloc((size_t)(T > 0 ? T : 1) * sizeof *g->sbuf))) return -1;
      for (int64_t k = 0; k < T; k++) g->sbuf[k] = T > 1 ? -1.0 + 2.0 * (double)k / (double)(T - 1) : 0.0;
      if (ndf_array_init(&g->sthr, g->sbuf, NDF_DEVICE_CPU, NDF_FLOAT64, 1, &T) != NDF_OK) return -1;
    }
    int64_t dsh[2] = {m, sp};
    ndf_ect_options_init(&g->topt);
    g->topt.nthresholds = w->size;
    g->topt.batch_dims = w->batch_dims;
    g->dirbuf = malloc((size_t)(m > 0 ? m : 1) * (size_t)sp * sizeof(double));
    if (!g->dirbuf) return -1;
    const double pi = 3.14159265358979323846;
    for (int j = 0; j < m; j++) {
      if (sp == 2) {
        g->dirbuf[2 * j] = cos(2 * pi * j / m);
        g->dirbuf[2 * j + 1] = sin(2 * pi * j / m);
      } else {
        const double z = 1 - (2.0 * j + 1) / m, r = sqrt(1 - z * z), a = j * pi * (3 - sqrt(5.0));
        g->dirbuf[3 * j] = z;
        g->dirbuf[3 * j + 1] = r * cos(a);
        g->dirbuf[3 * j + 2] = r * sin(a);
      }
    }
    if (ndf_array_init(&g->dirs, g->dirbuf, NDF_DEVICE_CPU, NDF_FLOAT64, 2, dsh) != NDF_OK) return -1;
    return 0;
  }
  if (ops[w->op].family == FAM_INTENSITY || ops[w->op].family == FAM_N4) return 0; /* run_op builds its options */
  if (ops[w->op].family == FAM_FILTERS) {
    ndf_filter_options_init(&g->fopt);
    g->fopt.mode = w->mode;
    g->fopt.batch_dims = w->batch_dims;
    ndf_gaussian_params_init(&g->gauss);
    g->gauss.nsigma = 1;
    g->gauss.sigma[0] = w->param;
    return 0;
  }
  if (ops[w->op].family == FAM_DISTANCE) {
    if (w->op == OP_CDT_TAXI || w->op == OP_CDT_CHESS)
      g->dopt.metric = w->op == OP_CDT_TAXI ? NDF_METRIC_TAXICAB : NDF_METRIC_CHESSBOARD;
    if (w->op == OP_BF) g->dopt.metric = NDF_METRIC_EUCLIDEAN;
    if (w->param) { /* anisotropic: 0.7, 1.3, 0.7, ... */
      g->dopt.nsampling = sp;
      for (int i = 0; i < sp; i++) g->dopt.sampling[i] = i % 2 ? 1.3 : 0.7;
    }
    return 0;
  }
  g->opt.mode = g->ropt.mode = w->mode;
  g->opt.batch_dims = g->ropt.batch_dims = w->batch_dims;
  /* --algorithm: the rank algorithm (network, select, histogram, tile) of the rank workloads, the grey
   * algorithm (direct, separable, vhgw, decomposed) of the others, for comparing them. */
  static const char *rank_algos[] = {"auto", "network", "select", "histogram", "tile"};
  for (int i = 1; g_algorithm && i < 5; i++)
    if (!strcmp(g_algorithm, rank_algos[i])) g->ropt.algorithm = (ndf_rank_algorithm)i;
  if (g_algorithm && g->ropt.algorithm == NDF_RANK_ALGO_AUTO && strcmp(g_algorithm, "auto") != 0 &&
      ndf_grey_algorithm_from_name(g_algorithm, &g->opt.algorithm) != NDF_OK) {
    fprintf(stderr, "ndf_bench: --algorithm: %s\n", ndf_last_error());
    return -1;
  }
  if (w->fp == FP_BOX) {
    g->opt.nsize = g->ropt.nsize = 1;
    g->opt.size[0] = g->ropt.size[0] = w->size;
    return 0;
  }
  /* A cross: the centre and every point that leaves it along one axis only
   * (scipy's generate_binary_structure(sp, 1) for size 3). */
  int64_t fshape[NDF_MAX_SPATIAL], n = 1;
  for (int i = 0; i < sp; i++) fshape[i] = w->size, n *= w->size;
  g->fpbuf = malloc((size_t)n);
  if (!g->fpbuf) return -1;
  int c = w->size / 2;
  for (int64_t k = 0; k < n; k++) {
    int64_t r = k;
    int off = 0;
    for (int i = sp - 1; i >= 0; i--) {
      off += (r % w->size) != c;
      r /= w->size;
    }
    g->fpbuf[k] = off <= 1;
  }
  if (ndf_array_init(&g->fp, g->fpbuf, NDF_DEVICE_CPU, NDF_BOOL, sp, fshape) != NDF_OK) {
    fprintf(stderr, "ndf_bench: footprint: %s\n", ndf_last_error());
    return -1;
  }
  g->opt.footprint = g->ropt.footprint = &g->fp;
  ndf_binary_options_init(&g->bopt);
  g->bopt.structure = &g->fp;
  g->bopt.iterations = w->op == OP_BIN_EROSION ? (int)w->param : 1;
  g->bopt.batch_dims = w->batch_dims;
  return 0;
}

static void free_options(op_setup *g)
{
  free(g->fpbuf);
  g->fpbuf = NULL;
  free(g->dirbuf);
  g->dirbuf = NULL;
  free(g->sbuf);
  g->sbuf = NULL;
}

/* The soft ECC workloads' backward arrays (grad_output, filled with a fixed
 * pattern; grad_input; grad_thresholds): one set per context and device,
 * made on first use and kept until the program exits, so that no allocation
 * is timed.  Only the forward output is compared with the CPU's (to a
 * tolerance: float32 sigmoids on the GPU); tests/test_gpu_ecc.c checks the
 * gradients. */
typedef struct soft_bufs {
  ndf_ctx *ctx;
  ndf_device_type dev;
  ndf_array go, gi, gt;
} soft_bufs;

static soft_bufs *soft_arrays(ndf_ctx *c, const workload *w, const ndf_array *in)
{
  static soft_bufs cache[16];
  static int n;
  int64_t osh[NDF_MAX_NDIM], T = w->size;
  const int ond = wl_out_shape(w, osh);
  for (int i = 0; i < n; i++)
    if (cache[i].ctx == c && cache[i].dev == in->device && cache[i].gt.shape[0] == T &&
        cache[i].gi.ndim == in->ndim && !memcmp(cache[i].gi.shape, in->shape, sizeof in->shape[0] * (size_t)in->ndim) &&
        cache[i].gi.dtype == in->dtype)
      return &cache[i];
  if (n == 16) return NULL;
  soft_bufs *b = &cache[n];
  int64_t no = 1;
  for (int i = 0; i < ond; i++) no *= osh[i];
  double *h = malloc((size_t)no * sizeof *h);
  if (!h) return NULL;
  for (int64_t i = 0; i < no; i++) h[i] = (double)(i % 7) - 3.0;
  ndf_array hg;
  if (ndf_array_alloc(c, &b->go, in->device, NDF_FLOAT64, ond, osh) != NDF_OK ||
      ndf_array_alloc(c, &b->gi, in->device, in->dtype, in->ndim, in->shape) != NDF_OK ||
      ndf_array_alloc(c, &b->gt, in->device, NDF_FLOAT64, 1, &T) != NDF_OK ||
      ndf_array_init(&hg, h, NDF_DEVICE_CPU, NDF_FLOAT64, ond, osh) != NDF_OK || ndf_array_copy(c, &b->go, &hg) != NDF_OK ||
      ndf_ctx_synchronize(c) != NDF_OK) {
    free(h);
    return NULL;
  }
  free(h);
  b->ctx = c;
  b->dev = in->device;
  n++;
  return b;
}

/* The soft ECT workloads' backward arrays: grad_output (a fixed pattern) and
 * grad_input (float32) on the input's device, grad_directions and
 * grad_thresholds on the host (the backward synchronizes to return them, so
 * its warm timing runs one call at a time after the gate times out).  One
 * set per context and device, kept until the program exits.  Only the
 * forward output is compared; tests/test_gpu_ect.c checks the gradients. */
typedef struct soft_ect_bufs {
  ndf_ctx *ctx;
  ndf_device_type dev;
  int64_t key[NDF_MAX_NDIM + 2];
  ndf_array go, gi, gd, gt;
  double *hd, *ht;
} soft_ect_bufs;

static soft_ect_bufs *soft_ect_arrays(ndf_ctx *c, const workload *w, const ndf_array *in)
{
  static soft_ect_bufs cache[16];
  static int n;
  int64_t osh[NDF_MAX_NDIM], key[NDF_MAX_NDIM + 2] = {0};
  const int ond = wl_out_shape(w, osh), sp = w->ndim - w->batch_dims;
  for (int i = 0; i < ond; i++) key[i] = osh[i];
  key[NDF_MAX_NDIM] = wl_count(w);
  key[NDF_MAX_NDIM + 1] = sp;
  for (int i = 0; i < n; i++)
    if (cache[i].ctx == c && cache[i].dev == in->device && !memcmp(cache[i].key, key, sizeof key)) return &cache[i];
  if (n == 16) return NULL;
  soft_ect_bufs *b = &cache[n];
  int64_t no = 1, T = w->size, dsh[2] = {(int64_t)w->param, sp};
  for (int i = 0; i < ond; i++) no *= osh[i];
  double *h = malloc((size_t)no * sizeof *h);
  b->hd = malloc((size_t)(dsh[0] * sp) * sizeof *b->hd);
  b->ht = malloc((size_t)T * sizeof *b->ht);
  if (!h || !b->hd || !b->ht) {
    free(h);
    return NULL;
  }
  for (int64_t i = 0; i < no; i++) h[i] = (double)(i % 7) - 3.0;
  ndf_array hg;
  if (ndf_array_alloc(c, &b->go, in->device, NDF_FLOAT64, ond, osh) != NDF_OK ||
      ndf_array_alloc(c, &b->gi, in->device, NDF_FLOAT32, in->ndim, in->shape) != NDF_OK ||
      ndf_array_init(&b->gd, b->hd, NDF_DEVICE_CPU, NDF_FLOAT64, 2, dsh) != NDF_OK ||
      ndf_array_init(&b->gt, b->ht, NDF_DEVICE_CPU, NDF_FLOAT64, 1, &T) != NDF_OK ||
      ndf_array_init(&hg, h, NDF_DEVICE_CPU, NDF_FLOAT64, ond, osh) != NDF_OK || ndf_array_copy(c, &b->go, &hg) != NDF_OK ||
      ndf_ctx_synchronize(c) != NDF_OK) {
    free(h);
    return NULL;
  }
  free(h);
  b->ctx = c;
  b->dev = in->device;
  memcpy(b->key, key, sizeof key);
  n++;
  return b;
}

/* The indices output of the edt workloads that want it: one buffer per
 * context (a host buffer for the CPU backend), made on first use and kept
 * until the program exits, so that no allocation is timed.  Indices are
 * computed and timed but not compared (tests/test_gpu_distance.c does). */
static ndf_array *edt_indices(ndf_ctx *c, const workload *w, const ndf_array *in)
{
  /* One indices buffer per (context, device, shape), kept for the whole run:
   * (batch..., ndim, spatial...) int32, the layout the API asks for. */
  static struct { ndf_ctx *ctx; ndf_device_type dev; ndf_array a; } cache[16];
  static int n;
  int64_t sh[NDF_MAX_NDIM + 1];
  for (int i = 0; i < w->batch_dims; i++) sh[i] = w->shape[i];
  sh[w->batch_dims] = w->ndim - w->batch_dims;
  for (int i = w->batch_dims; i < w->ndim; i++) sh[i + 1] = w->shape[i];
  for (int i = 0; i < n; i++) {
    if (cache[i].ctx != c || cache[i].dev != in->device || cache[i].a.ndim != w->ndim + 1) continue;
    if (!memcmp(cache[i].a.shape, sh, (size_t)(w->ndim + 1) * sizeof sh[0])) return &cache[i].a;
  }
  if (n == 16) return NULL;
  ndf_array *a = &cache[n].a;
  if (ndf_array_alloc(c, a, in->device, NDF_INT32, w->ndim + 1, sh) != NDF_OK) return NULL;
  cache[n].ctx = c;
  cache[n].dev = in->device;
  return &cache[n++].a;
}

static uint64_t splitmix64(uint64_t *s);

/* map_coordinates' coordinates: (spatial rank, points) float32, uniform over the volume, one array per
 * (context, device), made on first use and kept, so that no allocation or upload is timed. */
static ndf_array *map_coords(ndf_ctx *c, const workload *w, const ndf_array *in)
{
  static struct { ndf_ctx *ctx; ndf_device_type dev; ndf_array a; } cache[16];
  static int n;
  const int sp = w->ndim - w->batch_dims;
  const int64_t sh[2] = {sp, (int64_t)w->param};
  for (int i = 0; i < n; i++)
    if (cache[i].ctx == c && cache[i].dev == in->device && cache[i].a.shape[1] == sh[1] && cache[i].a.shape[0] == sp)
      return &cache[i].a;
  if (n == 16) return NULL;
  float *h = malloc((size_t)(sh[0] * sh[1]) * sizeof *h);
  if (!h) return NULL;
  uint64_t st = 0xc00d5ull;
  for (int d = 0; d < sp; d++)
    for (int64_t k = 0; k < sh[1]; k++)
      h[d * sh[1] + k] = (float)((double)(splitmix64(&st) >> 11) * 0x1.0p-53 * (double)(w->shape[w->batch_dims + d] - 1));
  ndf_array ha, *a = &cache[n].a;
  ndf_status s = ndf_array_init(&ha, h, NDF_DEVICE_CPU, NDF_FLOAT32, 2, sh);
  if (s == NDF_OK) s = ndf_array_alloc(c, a, in->device, NDF_FLOAT32, 2, sh);
  if (s == NDF_OK) s = ndf_array_copy(c, a, &ha);
  free(h);
  if (s != NDF_OK) return NULL;
  cache[n].ctx = c;
  cache[n].dev = in->device;
  return &cache[n++].a;
}

/* The SSIM workloads' second image (fill_random of a fixed seed, so that the CPU
 * and the GPU compare the same pair) and mean (float64, the batch shape): one set
 * per context and device, made on first use and kept until the program exits,
 * so that no allocation or upload is timed.  The map is the workload's output. */
static void fill_random(void *buf, ndf_dtype t, int64_t n, uint64_t seed);
typedef struct ssim_bufs {
  ndf_array y, mean;
} ssim_bufs;
static ssim_bufs *ssim_side(ndf_ctx *c, const workload *w, const ndf_array *in)
{
  static struct { ndf_ctx *ctx; ndf_device_type dev; int64_t n; ssim_bufs b; } cache[16];
  static int n;
  const int64_t cnt = wl_count(w);
  for (int i = 0; i < n; i++)
    if (cache[i].ctx == c && cache[i].dev == in->device && cache[i].n == cnt && cache[i].b.y.dtype == w->dtype)
      return &cache[i].b;
  if (n == 16) return NULL;
  ssim_bufs *b = &cache[n].b;
  void *host = malloc((size_t)cnt * ndf_dtype_size(w->dtype));
  if (!host) return NULL;
  fill_random(host, w->dtype, cnt, 0x55aa55aa12345ull);
  ndf_array h;
  ndf_status s = ndf_array_init(&h, host, NDF_DEVICE_CPU, w->dtype, w->ndim, w->shape);
  if (s == NDF_OK) s = ndf_array_alloc(c, &b->y, in->device, w->dtype, w->ndim, w->shape);
  if (s == NDF_OK) s = ndf_array_copy(c, &b->y, &h);
  if (s == NDF_OK) s = ndf_array_alloc(c, &b->mean, in->device, NDF_FLOAT64, w->batch_dims, w->shape);
  if (s == NDF_OK && in->device == NDF_DEVICE_CUDA) s = ndf_ctx_synchronize(c);
  free(host);
  if (s != NDF_OK) return NULL;
  cache[n].ctx = c;
  cache[n].dev = in->device;
  cache[n].n = cnt;
  return &cache[n++].b;
}

/* Makes the side buffers a workload keeps per context (map_coordinates' coordinates, SSIM's second
 * image, EDT's indices), so that a timed first call (cold, disk) does not include their making. */
static ndf_status prepare_side(ndf_ctx *c, const workload *w, const ndf_array *in)
{
  if (w->op == OP_MAP_COORDS) return map_coords(c, w, in) ? NDF_OK : NDF_ENOMEM;
  if (ops[w->op].family == FAM_SSIM) return ssim_side(c, w, in) ? NDF_OK : NDF_ENOMEM;
  if ((w->op == OP_EDT || w->op == OP_BF) && w->param) return edt_indices(c, w, in) ? NDF_OK : NDF_ENOMEM;
  return NDF_OK;
}

static ndf_status run_op(ndf_ctx *c, const workload *w, const ndf_array *in, ndf_array *out, const op_setup *g)
{
  if (w->op == OP_ZOOM) {
    const double z = w->param;
    return ndf_zoom(c, in, out, 1, &z, 0, &g->iopt);
  }
  if (w->op == OP_AFFINE_ROT) return ndf_affine_transform(c, in, &g->rotm, 3, g->rot_off, out, &g->iopt);
  if (w->op == OP_MAP_COORDS) {
    ndf_array *co = map_coords(c, w, in);
    return co ? ndf_map_coordinates(c, in, co, out, &g->iopt) : NDF_ENOMEM;
  }
  if (ops[w->op].family == FAM_BET) {
    ndf_skull_strip_options o;
    ndf_skull_strip_options_init(&o);
    return ndf_skull_strip(c, in, NULL, out, &o);
  }
  if (ops[w->op].family == FAM_SSIM) {
    ssim_bufs *b = ssim_side(c, w, in);
    if (!b) return NDF_ENOMEM;
    return ndf_structural_similarity(c, in, &b->y, &b->mean, out, &g->mopt);
  }
  if (w->op == OP_EDT) {
    ndf_array *idx = NULL;
    if (w->param && !(idx = edt_indices(c, w, in))) return NDF_ENOMEM;
    return ndf_distance_transform_edt(c, in, out, idx, &g->dopt);
  }
  if (w->op == OP_CDT_TAXI || w->op == OP_CDT_CHESS) return ndf_distance_transform_cdt(c, in, out, NULL, &g->dopt);
  if (w->op == OP_BF) {
    ndf_array *idx = NULL;
    if (w->param && !(idx = edt_indices(c, w, in))) return NDF_ENOMEM;
    return ndf_distance_transform_bf(c, in, out, idx, &g->dopt);
  }
  switch (w->op) {
  case OP_EROSION: return ndf_grey_erosion(c, in, out, &g->opt);
  case OP_DILATION: return ndf_grey_dilation(c, in, out, &g->opt);
  case OP_OPENING: return ndf_grey_opening(c, in, out, &g->opt);
  case OP_MEDIAN: return ndf_median_filter(c, in, out, &g->ropt);
  case OP_RANK: return ndf_rank_filter(c, in, out, (int64_t)w->param, &g->ropt);
  case OP_PERCENTILE: return ndf_percentile_filter(c, in, out, w->param, &g->ropt);
  case OP_BIN_EROSION: return ndf_binary_erosion(c, in, out, &g->bopt);
  case OP_FILL_HOLES: return ndf_binary_fill_holes(c, in, out, &g->bopt);
  case OP_LABEL: return ndf_label(c, in, out, g->bopt.structure, w->batch_dims, NULL);
  case OP_ECC: return ndf_euler_characteristic_curve(c, in, out, &g->eopt);
  case OP_GAUSSIAN: return ndf_gaussian_filter(c, in, out, &g->gauss, &g->fopt);
  case OP_UNIFORM: {
    const int64_t size = w->size;
    return ndf_uniform_filter(c, in, out, 1, &size, &g->fopt);
  }
  case OP_SOFT_ECC: {
    soft_bufs *b = soft_arrays(c, w, in);
    if (!b) return NDF_ENOMEM;
    ndf_status s = ndf_soft_ecc_forward(c, in, &g->sthr, out, &g->sopt);
    if (s == NDF_OK) s = ndf_soft_ecc_backward(c, in, &g->sthr, &b->go, &b->gi, &b->gt, &g->sopt);
    return s;
  }
  case OP_ECT: return ndf_euler_characteristic_transform(c, in, &g->dirs, out, &g->topt);
  case OP_N4: {
    ndf_n4_options no;
    ndf_n4_options_init(&no);
    no.shrink_factor = (int)w->param;
    return ndf_n4_bias_field_correction(c, in, NULL, NULL, out, NULL, &no, NULL);
  }
  case OP_PWINDOW: {
    ndf_window_options wo;
    ndf_window_options_init(&wo);
    wo.batch_dims = w->batch_dims;
    return ndf_percentile_window(c, in, out, w->param, 100 - w->param, &wo);
  }
  case OP_SOFT_ECT: {
    soft_ect_bufs *b = soft_ect_arrays(c, w, in);
    if (!b) return NDF_ENOMEM;
    ndf_status s = ndf_soft_ect_forward(c, in, &g->dirs, &g->sthr, out, &g->xopt);
    if (s == NDF_OK) s = ndf_soft_ect_backward(c, in, &g->dirs, &g->sthr, &b->go, &b->gi, &b->gd, &b->gt, &g->xopt);
    return s;
  }
  default: return NDF_EINVAL;
  }
}

/* ------------------------------------------------------------------------ */
/* Small helpers                                                             */

static double now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n)
{
  if (n <= 0) return NAN;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static uint64_t splitmix64(uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Random values, never an all-zero array: floats uniform in [-1000, 1000)
 * with 24 (53) random bits, integers uniform over all their bit patterns. */
static void fill_random(void *buf, ndf_dtype t, int64_t n, uint64_t seed)
{
  uint64_t s = seed;
  if (t == NDF_FLOAT32) {
    float *f = buf;
    for (int64_t i = 0; i < n; i++) f[i] = (float)((double)(splitmix64(&s) >> 40) * (2000.0 / 16777216.0) - 1000.0);
  } else if (t == NDF_FLOAT64) {
    double *d = buf;
    for (int64_t i = 0; i < n; i++) d[i] = (double)(splitmix64(&s) >> 11) * (2000.0 / 9007199254740992.0) - 1000.0;
  } else if (t == NDF_BOOL) {
    uint8_t *b = buf;
    for (int64_t i = 0; i < n; i++) b[i] = (uint8_t)(splitmix64(&s) & 1);
  } else {
    size_t bytes = (size_t)n * ndf_dtype_size(t), i = 0;
    uint8_t *b = buf;
    for (; i + 8 <= bytes; i += 8) {
      uint64_t r = splitmix64(&s);
      memcpy(b + i, &r, 8);
    }
    for (uint64_t r = splitmix64(&s); i < bytes; i++, r >>= 8) b[i] = (uint8_t)r;
  }
}

/* Random blobs for the binary ops and label (bench/peers_binary.py:blobs builds
 * the same image): uniform noise in [-1, 1) on a grid every 16 voxels of the
 * last three axes (splitmix64 of seed + index), trilinear, above 0. */
static void fill_blobs(uint8_t *out, const workload *w, uint64_t seed)
{
  const int cell = 16;
  int64_t n[3], g[3], outer = 1;
  for (int i = 0; i < 3; i++) n[i] = w->ndim - 3 + i >= 0 ? w->shape[w->ndim - 3 + i] : 1;
  for (int i = 0; i < w->ndim - 3; i++) outer *= w->shape[i];
  for (int i = 0; i < 3; i++) g[i] = n[i] / cell + 2;
  double *c = malloc((size_t)(g[0] * g[1] * g[2]) * sizeof *c);
  if (!c) return;
  for (int64_t i = 0; i < g[0] * g[1] * g[2]; i++) {
    uint64_t st = seed + (uint64_t)i;
    c[i] = (double)(splitmix64(&st) >> 11) * 0x1p-53 * 2.0 - 1.0;
  }
  for (int64_t o = 0; o < outer; o++)
    for (int64_t z = 0; z < n[0]; z++)
      for (int64_t y = 0; y < n[1]; y++)
        for (int64_t x = 0; x < n[2]; x++) {
          const double fz = (double)(z % cell) / cell, fy = (double)(y % cell) / cell, fx = (double)(x % cell) / cell;
          const int64_t z0 = z / cell, y0 = y / cell, x0 = x / cell;
          double v = 0;
          for (int dz = 0; dz < 2; dz++)
            for (int dy = 0; dy < 2; dy++)
              for (int dx = 0; dx < 2; dx++) {
                double wt = (dz ? fz : 1 - fz) * (dy ? fy : 1 - fy) * (dx ? fx : 1 - fx);
                v += wt * c[((z0 + dz) * g[1] + (y0 + dy)) * g[2] + (x0 + dx)];
              }
          out[((o * n[0] + z) * n[1] + y) * n[2] + x] = v > 0.0;
        }
  free(c);
}

/* The skull-stripping input: the voxels of ch2.nii.gz (uint8, NIfTI's x, y, z axes, x fastest on disk)
 * into the C-order buffer of shape (x, y, z); 0 when the file is there, else -1 (after saying so). */
#define BET_CH2 "/usr/share/mricron/templates/ch2.nii.gz"
static int fill_ch2(void *buf, const workload *w)
{
  const int64_t nx = w->shape[0], ny = w->shape[1], nz = w->shape[2], n = nx * ny * nz;
  if (w->ndim != 3 || w->dtype != NDF_UINT8 || nx != 181 || ny != 217 || nz != 181) {
    fprintf(stderr, "ndf_bench: skull_strip runs on %s: uint8, 181x217x181\n", BET_CH2);
    return -1;
  }
  gzFile f = gzopen(BET_CH2, "rb");
  unsigned char hdr[352];
  uint8_t *v = malloc((size_t)n);
  int ok = f && v && gzread(f, hdr, sizeof hdr) == (int)sizeof hdr;
  float off = 0;
  if (ok) memcpy(&off, hdr + 108, 4); /* vox_offset */
  ok = ok && off >= 352 && gzseek(f, (z_off_t)off, SEEK_SET) == (z_off_t)off && gzread(f, v, (unsigned)n) == (int)n;
  if (f) gzclose(f);
  if (ok)
    for (int64_t x = 0; x < nx; x++)
      for (int64_t y = 0; y < ny; y++)
        for (int64_t z = 0; z < nz; z++) ((uint8_t *)buf)[(x * ny + y) * nz + z] = v[(z * ny + y) * nx + x];
  else fprintf(stderr, "ndf_bench: cannot read %s (Debian's mricron-data)\n", BET_CH2);
  free(v);
  return ok ? 0 : -1;
}

/* N4's input (float32): two tissue classes (60 and 150, 10% noise) inside an ellipsoid, 0 outside (left
 * out by N4), times exp of a smooth field of 40% variation. */
static void fill_n4(float *buf, const workload *w, uint64_t seed)
{
  const int64_t *sh = w->shape;
  uint64_t st = seed | 1;
  for (int64_t i = 0; i < wl_count(w); i++) {
    double c[3], rr = 0.0;
    int64_t q = i;
    for (int d = 2; d >= 0; d--) {
      c[d] = -1.0 + 2.0 * (double)(q % sh[d]) / (double)(sh[d] - 1);
      q /= sh[d];
      rr += c[d] * c[d];
    }
    st ^= st << 13, st ^= st >> 7, st ^= st << 17;
    const double u1 = (double)(st >> 11) * 0x1.0p-53;
    st ^= st << 13, st ^= st >> 7, st ^= st << 17;
    const double u2 = (double)(st >> 11) * 0x1.0p-53;
    const double tissue = u1 < 0.5 ? 60.0 : 150.0, noise = 0.1 * tissue * (2.0 * u2 - 1.0);
    const double logb = 0.7 * (0.25 * c[2] + 0.15 * c[1] * c[1] - 0.1 * c[0] + 0.1 * c[0] * c[2]);
    buf[i] = rr < 0.9 ? (float)((tissue + noise) * exp(logb)) : 0.0f;
  }
}

/* The input of a workload: blobs for the binary ops and label, ch2 for skull_strip, N4's volume, else fill_random. */
static void fill_input(void *buf, const workload *w, uint64_t seed)
{
  int fam = ops[w->op].family;
  if (fam == FAM_BET) {
    if (fill_ch2(buf, w) != 0) memset(buf, 0, (size_t)wl_count(w)); /* an empty mask, then */
  } else if (fam == FAM_N4) {
    fill_n4(buf, w, seed);
  } else if ((fam == FAM_BINARY || fam == FAM_LABEL || fam == FAM_ECT || fam == FAM_SOFT_ECT) && ndf_dtype_size(w->dtype) == 1) {
    fill_blobs(buf, w, seed);
  } else {
    fill_random(buf, w->dtype, wl_count(w), seed);
  }
}

/* Comparison of two whole arrays, bit-exact (soft ECC: to a tolerance).  Returns 0 when equal, else
 * writes the first difference (with its coordinates) and the count. */
static int compare_exact(const workload *w, const void *got, const void *want, char *msg, size_t len)
{
  size_t es = ndf_dtype_size(out_dtype(w));
  int64_t n = wl_out_count(w), osh[NDF_MAX_NDIM];
  const int ond = wl_out_shape(w, osh);
  /* soft ECC: float32 sigmoids on the GPU, summed in another order: to the
   * tolerance of tests/test_gpu_ecc.c (2e-5 x 7 per voxel of an image) */
  const int softect = ops[w->op].family == FAM_SOFT_ECT;
  const int soft = ops[w->op].family == FAM_SOFT_ECC || softect;
  /* soft ECT: double sigmoids (--tune soft_ect.fast=on: float), |cw| <= 27 per voxel of an image */
  const int fast = g_tune && strstr(g_tune, "soft_ect.fast=on") != NULL;
  const double npi = (double)wl_count(w) / (double)(n / (w->size * (softect ? (int64_t)w->param : 1)));
  const double tol = softect ? (fast ? 2e-6 : 1e-12) * (1 + 27 * npi)
                     : soft  ? 2e-5 * 7 * (double)wl_count(w) / (double)(n / w->size) + 1e-12
                             : 0;
  if (ops[w->op].family == FAM_N4) { /* float64 sums in another order, then float32: tests/test_gpu_n4.c's 2e-6 */
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < n; i++) {
      const double a = ((const float *)got)[i], b = ((const float *)want)[i];
      if (!(fabs(a - b) <= 2e-6 * fabs(b))) bad++, first = first < 0 ? i : first;
    }
    if (bad == 0) return 0;
    snprintf(msg, len, "%lld of %lld elements differ by more than 2e-6 relative; first at %lld: GPU %.9g, CPU %.9g",
             (long long)bad, (long long)n, (long long)first, ((const float *)got)[first], ((const float *)want)[first]);
    return 1;
  }
  if (!soft && memcmp(got, want, (size_t)n * es) == 0) return 0;
  int64_t first = -1, bad = 0;
  for (int64_t i = 0; i < n; i++) {
    if (soft ? !(fabs(((const double *)got)[i] - ((const double *)want)[i]) <= tol)
             : memcmp((const char *)got + i * es, (const char *)want + i * es, es) != 0) {
      if (first < 0) first = i;
      bad++;
    }
  }
  if (bad == 0) return 0;
  char coord[200];
  size_t k = 0;
  int64_t r = first;
  int64_t idx[NDF_MAX_NDIM];
  for (int i = ond - 1; i >= 0; i--) idx[i] = r % osh[i], r /= osh[i];
  coord[0] = '\0';
  for (int i = 0; i < ond && k < sizeof coord; i++)
    k += (size_t)snprintf(coord + k, sizeof coord - k, "%s%lld", i ? "," : "", (long long)idx[i]);
  snprintf(msg, len, "%lld of %lld elements differ; first at [%s]: GPU %.9g, CPU %.9g", (long long)bad,
           (long long)n, coord, ndfio_load_f64(got, out_dtype(w), first), ndfio_load_f64(want, out_dtype(w), first));
  return 1;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
  (void)sb, (void)flag, (void)ftw;
  return remove(path);
}

/* Removes a directory made by mkdtemp, with what the cache put in it. */
static void remove_tree(const char *dir)
{
  if (dir[0] && nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
    fprintf(stderr, "ndf_bench: warning: could not remove %s: %s\n", dir, strerror(errno));
}

static int make_cache_dir(char *buf, size_t len)
{
  const char *tmp = getenv("TMPDIR");
  snprintf(buf, len, "%s/ndf-bench-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
  if (mkdtemp(buf)) return 0;
  fprintf(stderr, "ndf_bench: mkdtemp(%s): %s\n", buf, strerror(errno));
  buf[0] = '\0';
  return -1;
}

static void iso_now(char *buf, size_t len)
{
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* ------------------------------------------------------------------------ */
/* The CUDA driver calls this program makes itself                           */

typedef int CUresult;
typedef struct CUctx_st *CUcontext;
typedef struct CUevent_st *CUevent;
typedef struct CUstream_st *CUstream;
typedef void (*CUhostFn)(void *user);

static struct {
  void *lib;
  CUresult (*EventCreate)(CUevent *, unsigned);
  CUresult (*EventRecord)(CUevent, CUstream);
  CUresult (*EventSynchronize)(CUevent);
  CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
  CUresult (*EventDestroy)(CUevent);
  CUresult (*CtxGetCurrent)(CUcontext *);
  CUresult (*LaunchHostFunc)(CUstream, CUhostFn, void *);
  CUresult (*GetErrorName)(CUresult, const char **);
} cu;

static void *cu_sym(const char *a, const char *b)
{
  void *p = dlsym(cu.lib, a);
  if (!p && b) p = dlsym(cu.lib, b);
  if (!p) fprintf(stderr, "ndf_bench: libcuda.so.1 has no %s\n", a);
  return p;
}

/* dlsym returns an object pointer; POSIX guarantees it converts to a function pointer. */
#define CU_LOAD(field, a, b) (*(void **)&cu.field = cu_sym(a, b), cu.field != NULL)

static int cu_load(void)
{
  if (cu.lib) return 0;
  cu.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!cu.lib) {
    fprintf(stderr, "ndf_bench: dlopen(libcuda.so.1): %s\n", dlerror());
    return -1;
  }
  int ok = CU_LOAD(EventCreate, "cuEventCreate", NULL);
  ok &= CU_LOAD(EventRecord, "cuEventRecord", NULL);
  ok &= CU_LOAD(EventSynchronize, "cuEventSynchronize", NULL);
  ok &= CU_LOAD(EventElapsedTime, "cuEventElapsedTime", NULL);
  ok &= CU_LOAD(EventDestroy, "cuEventDestroy_v2", "cuEventDestroy");
  ok &= CU_LOAD(CtxGetCurrent, "cuCtxGetCurrent", NULL);
  ok &= CU_LOAD(LaunchHostFunc, "cuLaunchHostFunc", NULL);
  *(void **)&cu.GetErrorName = dlsym(cu.lib, "cuGetErrorName"); /* optional */
  return ok ? 0 : -1;
}

static int cu_check(CUresult r, const char *call)
{
  if (r == 0) return 0;
  const char *name = NULL;
  if (cu.GetErrorName) cu.GetErrorName(r, &name);
  fprintf(stderr, "ndf_bench: %s failed: %s (%d)\n", call, name ? name : "CUDA error", r);
  return -1;
}
#define CU(call) cu_check((call), #call)

/*
 * A gate holds the stream back (a host function that waits for release)
 * while a batch of calls is queued behind it, so that the GPU then runs them
 * back to back and the events measure kernels, not the host's enqueue time
 * (which is longer than the kernels of small workloads).  If a call waited
 * for its own stream the gate would deadlock it; the gate gives up after
 * GATE_TIMEOUT_MS and says so, and the caller then times calls one by one.
 */
typedef struct gate {
  atomic_int release;
  atomic_int timed_out;
} gate;

static void gate_wait(void *p)
{
  gate *g = p;
  double t0 = now_ms();
  struct timespec nap = {0, 20000};
  while (!atomic_load(&g->release)) {
    if (now_ms() - t0 > GATE_TIMEOUT_MS) {
      atomic_store(&g->timed_out, 1);
      return;
    }
    nanosleep(&nap, NULL);
  }
}

/* ------------------------------------------------------------------------ */
/* Options of the program                                                    */

/* --deferred-errors: the contexts defer data checks (ndf_ctx_options.deferred_errors) */
static int g_deferred;
/* The tuning table (ADR 0019): 1 (default) the GPU contexts read the table of
 * g_tuning_dir (the default cache directory: theirs are fresh), 0 (--no-tuning)
 * they ignore it and run the built-in defaults. */
static int g_tuning = 1;
static char g_tuning_dir[4096];

typedef struct bench_args {
  const char *only;
  int reps;
  int cpu;
  int check;
  double check_max_mb; /* < 0: check every input */
  int human;
  int list;
  uint64_t seed;
  int custom; /* a workload given with --op/--dtype/--shape/... */
  workload wl;
  const char *child_disk; /* hidden: cache dir of a --child-disk run */
} bench_args;

static void usage(FILE *f)
{
  fputs("usage: ndf_bench [--only SUBSTR] [--reps N] [--cpu] [--no-check] [--check-max-mb MB]\n"
        "                  [--human] [--list] [--seed N] [--no-tuning]\n"
        "                  [--algorithm NAME] [--tune NAME=VALUE,...]\n"
        "                  [--op OP --dtype float32 --shape 64x1024x1024 --size 3\n"
        "                   --footprint box|cross --batch-dims N --mode reflect --param P]\n"
        "Times ndforge's ops on the GPU after checking them against the CPU backend; one\n"
        "JSON line per workload on stdout.  OP: grey_erosion, grey_dilation, median_filter,\n"
        "rank_filter (--param: the rank), percentile_filter (--param: the percentile),\n"
        "grey_opening, sinkhorn / sinkhorn_log / sinkhorn_dense (--shape PAIRSxGRID, --size: iterations,\n"
        "--param: epsilon), euler_characteristic_curve (--size: T thresholds over [min, max];\n"
        "--param 1: T-construction), euler_characteristic_transform (binary; --size: T thresholds\n"
        "over [-R, R]; --param: m directions), percentile_window (--param: the lower percentile P;\n"
        "the window is [P, 100 - P]), gaussian_filter (--param: sigma), uniform_filter (--size: the\n"
        "window), n4_bias_field_correction (--param: the shrink factor).\n"
        "  --algorithm NAME  the rank filters' algorithm (network, select, histogram, tile) or the\n"
        "                    grey ops' (direct, separable, vhgw, decomposed); default auto\n"
        "  --tune NAME=VALUE[,NAME=VALUE...]  tunables set on every context (`ndforge tunables`\n"
        "                    lists them: grey.box, grey.line, rank.*, edt.*, ecc.*, ...)\n"
        "  --only SUBSTR     run the default workloads whose name contains SUBSTR (see --list)\n"
        "  --reps N          timed runs for the warm median (default 100)\n"
        "  --cpu             also time the CPU backend (median of 5, cpu_ms); without a GPU,\n"
        "                    time only the CPU backend\n"
        "  --no-check        do not compare with the CPU backend\n"
        "  --check-max-mb MB compare only inputs up to MB megabytes\n"
        "  --human           one summary line per workload on stderr\n"
        "  --deferred-errors contexts with deferred data checks (a float ECC call does not wait for\n"
        "                    its NaN check, so its warm timing queues calls behind a gate)\n"
        "  --no-tuning       the built-in defaults: ignore the device's tuning table (ndforge tune)\n"
        "  --tune N=V[,...]  set tunables on every context (e.g. jit.fast_compile=mid)\n"
        "  --op ...          one workload given by flags instead of the default list\n"
        "exit status: 0 ok, 1 failure or wrong result, 2 usage, 77 no CUDA device (skipped)\n",
        f);
}

static int parse_shape(const char *s, workload *w)
{
  int n = 0;
  while (*s) {
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || v <= 0 || n == NDF_MAX_NDIM) return -1;
    w->shape[n++] = v;
    s = end;
    if (*s == 'x' || *s == ',') s++;
    else if (*s) return -1;
  }
  w->ndim = n;
  return n > 0 ? 0 : -1;
}

static int parse_int(const char *s, long long lo, long long hi, long long *out)
{
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

/* Returns 0, or EXIT_USAGE after a message. */
/* The op named v (its name or its key), or -1. */
static int find_op(const char *v)
{
  for (int i = 0; i < OP_COUNT; i++)
    if (!strcmp(v, ops[i].name) || !strcmp(v, ops[i].key)) return i;
  return -1;
}

static int parse_double(const char *s, double *out)
{
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end) return -1;
  *out = v;
  return 0;
}

static int parse_args(int argc, char **argv, bench_args *a)
{
  memset(a, 0, sizeof *a);
  a->reps = 100;
  a->check = 1;
  a->check_max_mb = -1;
  a->seed = 0x5eed2026ull;
  a->wl = default_workloads[0];
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    long long n;
    int takes = 1;
    if (!strcmp(o, "--cpu")) a->cpu = 1, takes = 0;
    else if (!strcmp(o, "--deferred-errors")) g_deferred = 1, takes = 0;
    else if (!strcmp(o, "--no-tuning")) g_tuning = 0, takes = 0;
    else if (!strcmp(o, "--no-check")) a->check = 0, takes = 0;
    else if (!strcmp(o, "--human")) a->human = 1, takes = 0;
    else if (!strcmp(o, "--list")) a->list = 1, takes = 0;
    else if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
      usage(stdout);
      exit(0);
    } else if (!v || strncmp(o, "--", 2) != 0) {
      fprintf(stderr, "ndf_bench: %s: unknown option or missing value\n", o);
      usage(stderr);
      return EXIT_USAGE;
    } else if (!strcmp(o, "--only")) a->only = v;
    else if (!strcmp(o, "--reps") && !parse_int(v, 1, 1000000, &n)) a->reps = (int)n;
    else if (!strcmp(o, "--seed") && !parse_int(v, 0, INT64_MAX, &n)) a->seed = (uint64_t)n;
    else if (!strcmp(o, "--check-max-mb") && !parse_int(v, 0, INT64_MAX / 2, &n)) a->check_max_mb = (double)n;
    else if (!strcmp(o, "--child-disk")) a->child_disk = v;
    else if (!strcmp(o, "--tuning-dir")) snprintf(g_tuning_dir, sizeof g_tuning_dir, "%s", v);
    else if (!strcmp(o, "--algorithm")) g_algorithm = v;
    else if (!strcmp(o, "--tune")) g_tune = v;
    else if (!strcmp(o, "--op") && (a->wl.op = find_op(v)) >= 0) a->custom = 1;
    else if (!strcmp(o, "--param") && parse_double(v, &a->wl.param) == 0) a->custom = 1;
    else if (!strcmp(o, "--dtype") && ndf_dtype_from_name(v, &a->wl.dtype) == NDF_OK) a->custom = 1;
    else if (!strcmp(o, "--shape") && !parse_shape(v, &a->wl)) a->custom = 1;
    else if (!strcmp(o, "--size") && !parse_int(v, 0, 1 << 20, &n)) a->wl.size = (int)n, a->custom = 1;
    else if (!strcmp(o, "--batch-dims") && !parse_int(v, 0, NDF_MAX_NDIM, &n))
      a->wl.batch_dims = (int)n, a->custom = 1;
    else if (!strcmp(o, "--mode") && ndf_mode_from_name(v, &a->wl.mode) == NDF_OK) a->custom = 1;
    else if (!strcmp(o, "--footprint") && (!strcmp(v, "box") || !strcmp(v, "cross")))
      a->wl.fp = v[0] == 'c' ? FP_CROSS : FP_BOX, a->custom = 1;
    else {
      fprintf(stderr, "ndf_bench: bad option or value: %s %s\n", o, v);
      usage(stderr);
      return EXIT_USAGE;
    }
    i += takes;
  }
  if (a->custom) {
    int sp = a->wl.ndim - a->wl.batch_dims;
    if (sp < 1 || sp > NDF_MAX_SPATIAL) {
      fprintf(stderr, "ndf_bench: --batch-dims %d leaves %d spatial axes of a %d-d shape\n", a->wl.batch_dims,
              sp, a->wl.ndim);
      return EXIT_USAGE;
    }
  }
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Contexts and errors                                                       */

static int ndf_fail(const ndf_ctx *c, const char *what, ndf_status s)
{
  fprintf(stderr, "ndf_bench: %s: %s: %s\n", what, ndf_status_name(s), c ? ndf_errmsg(c) : ndf_last_error());
  return -1;
}

static ndf_status make_ctx(ndf_ctx **c, ndf_backend backend, const char *cache_dir)
{
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  o.backend = backend;
  o.deferred_errors = g_deferred;
  o.cache_dir = cache_dir;
  ndf_status s = ndf_ctx_create(c, &o);
  if (s == NDF_OK && backend != NDF_BACKEND_CPU) {
    if (!g_tuning) s = ndf_ctx_tuning_use(*c, 0);
    else if (g_tuning_dir[0]) s = ndf_ctx_tuning_from(*c, g_tuning_dir);
  }
  if (s == NDF_OK && g_tune && (s = ndf_ctx_set_tunables(*c, g_tune)) != NDF_OK)
    fprintf(stderr, "ndf_bench: --tune %s: %s\n", g_tune, ndf_errmsg(*c));
  return s;
}

/* ------------------------------------------------------------------------ */
/* disk: a fresh process over a filled cache                                 */

typedef struct disk_result {
  double ms;
  unsigned long long disk_hits, compiles, rejects;
} disk_result;

static int wl_to_argv(const workload *w, char store[][160], char **argv, int k)
{
  char shp[160];
  shape_str(w, 'x', shp, sizeof shp);
  snprintf(store[0], 160, "%s", op_name(w->op));
  snprintf(store[1], 160, "%s", ndf_dtype_name(w->dtype));
  snprintf(store[2], 160, "%s", shp);
  snprintf(store[3], 160, "%d", w->size);
  snprintf(store[4], 160, "%s", w->fp == FP_CROSS ? "cross" : "box");
  snprintf(store[5], 160, "%d", w->batch_dims);
  snprintf(store[6], 160, "%s", ndf_mode_name(w->mode));
  snprintf(store[7], 160, "%.17g", w->param);
  static const char *const flags[] = {"--op", "--dtype", "--shape", "--size", "--footprint", "--batch-dims", "--mode",
                                      "--param"};
  for (int i = 0; i < 8; i++) {
    argv[k++] = (char *)flags[i];
    argv[k++] = store[i];
  }
  return k;
}

/* Runs `ndf_bench --child-disk DIR <workload>` and reads its one line. */
static int measure_disk(const workload *wl, const char *cache_dir, uint64_t seed, disk_result *r)
{
  char store[9][160], *argv[32];
  int k = 0;
  argv[k++] = "ndf_bench";
  argv[k++] = "--child-disk";
  argv[k++] = (char *)cache_dir;
  k = wl_to_argv(wl, store, argv, k);
  snprintf(store[8], 160, "%llu", (unsigned long long)seed);
  argv[k++] = "--seed";
  argv[k++] = store[8];
  if (g_deferred) argv[k++] = "--deferred-errors";
  if (!g_tuning) argv[k++] = "--no-tuning";
  else if (g_tuning_dir[0]) argv[k++] = "--tuning-dir", argv[k++] = g_tuning_dir;
  if (g_algorithm) argv[k++] = "--algorithm", argv[k++] = (char *)g_algorithm;
  if (g_tune) argv[k++] = "--tune", argv[k++] = (char *)g_tune;
  argv[k] = NULL;

  int fds[2];
  if (pipe(fds) != 0) {
    fprintf(stderr, "ndf_bench: pipe: %s\n", strerror(errno));
    return -1;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&fa, fds[1]);
  pid_t pid;
  int err = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (err != 0) {
    close(fds[0]);
    fprintf(stderr, "ndf_bench: posix_spawn(/proc/self/exe): %s\n", strerror(err));
    return -1;
  }
  char line[512];
  size_t got = 0;
  for (;;) {
    ssize_t n = read(fds[0], line + got, sizeof line - 1 - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += (size_t)n;
    if (got == sizeof line - 1) break;
  }
  line[got] = '\0';
  close(fds[0]);
  int status = 0;
  pid_t w;
  while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {}
  if (w < 0) {
    fprintf(stderr, "ndf_bench: waitpid: %s\n", strerror(errno));
    return -1;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "ndf_bench: the --child-disk process failed (%s %d)\n",
            WIFEXITED(status) ? "exit status" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    return -1;
  }
  if (sscanf(line, "disk_ms=%lf disk_hits=%llu compiles=%llu rejects=%llu", &r->ms, &r->disk_hits, &r->compiles,
             &r->rejects) != 4) {
    fprintf(stderr, "ndf_bench: unexpected output of the --child-disk process: '%s'\n", line);
    return -1;
  }
  return 0;
}

/* The --child-disk side: context, arrays and input first, then the one timed call. */
static int child_disk(const bench_args *a)
{
  const workload *w = &a->wl;
  ndf_ctx *ctx = NULL;
  ndf_array in = {0}, out = {0}, hin;
  int64_t osh[NDF_MAX_NDIM];
  op_setup g = {0};
  void *host = NULL;
  int rc = 1;
  ndf_status s = make_ctx(&ctx, NDF_BACKEND_CUDA, a->child_disk);
  if (s != NDF_OK) {
    ndf_fail(NULL, "ndf_ctx_create", s);
    return s == NDF_ENODEV ? EXIT_SKIP : 1;
  }
  if (setup_options(w, &g) != 0) goto done;
  if ((host = malloc(wl_bytes(w))) == NULL) goto done;
  fill_input(host, w, a->seed ^ 0xd15cull);
  if ((s = ndf_array_init(&hin, host, NDF_DEVICE_CPU, w->dtype, w->ndim, w->shape)) != NDF_OK) {
    ndf_fail(NULL, "ndf_array_init", s);
    goto done;
  }
  if ((s = ndf_array_alloc(ctx, &in, NDF_DEVICE_CUDA, w->dtype, w->ndim, w->shape)) != NDF_OK ||
      (s = ndf_array_alloc(ctx, &out, NDF_DEVICE_CUDA, out_dtype(w), wl_out_shape(w, osh), osh)) != NDF_OK ||
      (s = ndf_array_copy(ctx, &in, &hin)) != NDF_OK || (s = prepare_side(ctx, w, &in)) != NDF_OK ||
      (s = ndf_ctx_synchronize(ctx)) != NDF_OK) {
    ndf_fail(ctx, "set-up", s);
    goto done;
  }
  double t0 = now_ms();
  s = run_op(ctx, w, &in, &out, &g);
  if (s == NDF_OK) s = ndf_ctx_synchronize(ctx);
  double t1 = now_ms();
  if (s != NDF_OK) {
    ndf_fail(ctx, op_name(w->op), s);
    goto done;
  }
  ndf_cache_stats st;
  ndf_ctx_cache_stats(ctx, &st);
  printf("disk_ms=%.6f disk_hits=%llu compiles=%llu rejects=%llu\n", t1 - t0, (unsigned long long)st.disk_hits,
         (unsigned long long)st.compiles, (unsigned long long)st.disk_rejects);
  fflush(stdout);
  rc = 0;
done:
  ndf_array_free(ctx, &in);
  ndf_array_free(ctx, &out);
  ndf_ctx_destroy(ctx);
  free_options(&g);
  free(host);
  return rc;
}

/* ------------------------------------------------------------------------ */
/* One workload                                                              */

/* What one workload measured; NAN = not measured. */
typedef struct result {
  double cold_ms, disk_ms, warm_ms, host_us, cpu_ms;
  unsigned long long compiles, disk_hits, disk_compiles;
  double compile_ms;
  int reps, nbuf, gated;
  const char *check; /* "ok", "skipped", "disabled", "n/a" */
  char error[512];
  char kernels[512]; /* the cold call's launches (kernel log): entry points in order, repeats as *N */
  char tuning[128];  /* the tuning table: "off", "none", "ignored: ...", or "table: N choices" */
} result;

typedef struct run_state {
  const bench_args *a;
  const workload *w;
  op_setup g;
  ndf_ctx *ctx;
  ndf_ctx *cpu;
  char cache_dir[512];
  int nbuf;
  ndf_array din[MAX_BUFS], dout[MAX_BUFS];
  ndf_array hin, hout, href;
  void *host_in, *host_out, *host_ref;
  CUstream stream;
  CUevent ev[2 * GATE_BATCH];
  int nev;
  gate gate;
} run_state;

static int rotation_count(size_t in_bytes)
{
  if (in_bytes >= ROTATE_BELOW) return 1;
  size_t n = (ROTATE_TOTAL + 2 * in_bytes - 1) / (2 * in_bytes);
  return n < 2 ? 2 : n > MAX_BUFS ? MAX_BUFS : (int)n;
}

static void release_state(run_state *st)
{
  if (st->ctx) {
    atomic_store(&st->gate.release, 1);
    ndf_ctx_synchronize(st->ctx);
    for (int i = 0; i < st->nev; i++) cu.EventDestroy(st->ev[i]);
    for (int i = 0; i < st->nbuf; i++) {
      ndf_array_free(st->ctx, &st->din[i]);
      ndf_array_free(st->ctx, &st->dout[i]);
    }
    ndf_ctx_destroy(st->ctx);
  }
  if (st->cache_dir[0]) remove_tree(st->cache_dir);
  free(st->host_in);
  free(st->host_out);
  free(st->host_ref);
  free_options(&st->g);
}

static int host_arrays(run_state *st)
{
  const workload *w = st->w;
  size_t bytes = wl_bytes(w), obytes = wl_out_bytes(w);
  int64_t osh[NDF_MAX_NDIM];
  st->host_in = malloc(bytes);
  st->host_out = malloc(obytes);
  st->host_ref = malloc(obytes);
  if (!st->host_in || !st->host_out || !st->host_ref) {
    fprintf(stderr, "ndf_bench: out of host memory (%zu + 2 x %zu bytes)\n", bytes, obytes);
    return -1;
  }
  ndf_status s;
  if ((s = ndf_array_init(&st->hin, st->host_in, NDF_DEVICE_CPU, w->dtype, w->ndim, w->shape)) != NDF_OK ||
      (s = ndf_array_init(&st->hout, st->host_out, NDF_DEVICE_CPU, out_dtype(w), wl_out_shape(w, osh), osh)) != NDF_OK ||
      (s = ndf_array_init(&st->href, st->host_ref, NDF_DEVICE_CPU, out_dtype(w), wl_out_shape(w, osh), osh)) != NDF_OK)
    return ndf_fail(NULL, "ndf_array_init", s);
  return 0;
}

/* CPU backend: one run for the reference, then CPU_RUNS timed runs with --cpu. */
static int cpu_runs(run_state *st, int want_ref, result *r)
{
  ndf_status s;
  if (want_ref && (s = run_op(st->cpu, st->w, &st->hin, &st->href, &st->g)) != NDF_OK)
    return ndf_fail(st->cpu, "CPU backend", s);
  if (!st->a->cpu) return 0;
  double t[CPU_RUNS];
  for (int i = 0; i < CPU_RUNS; i++) {
    double t0 = now_ms();
    if ((s = run_op(st->cpu, st->w, &st->hin, &st->href, &st->g)) != NDF_OK)
      return ndf_fail(st->cpu, "CPU backend", s);
    t[i] = now_ms() - t0;
  }
  r->cpu_ms = median(t, CPU_RUNS);
  return 0;
}

static int gpu_setup(run_state *st)
{
  const workload *w = st->w;
  ndf_status s;
  int64_t osh[NDF_MAX_NDIM];
  if (make_cache_dir(st->cache_dir, sizeof st->cache_dir) != 0) return -1;
  if ((s = make_ctx(&st->ctx, NDF_BACKEND_CUDA, st->cache_dir)) != NDF_OK) return ndf_fail(NULL, "ndf_ctx_create", s);
  st->nbuf = rotation_count(wl_bytes(w));
  for (int i = 0; i < st->nbuf; i++) {
    if ((s = ndf_array_alloc(st->ctx, &st->din[i], NDF_DEVICE_CUDA, w->dtype, w->ndim, w->shape)) != NDF_OK ||
        (s = ndf_array_alloc(st->ctx, &st->dout[i], NDF_DEVICE_CUDA, out_dtype(w), wl_out_shape(w, osh), osh)) != NDF_OK) {
      st->nbuf = i + 1; /* free what was allocated */
      return ndf_fail(st->ctx, "ndf_array_alloc", s);
    }
  }
  CUcontext cur = NULL;
  if (CU(cu.CtxGetCurrent(&cur)) != 0) return -1;
  if (!cur) {
    fprintf(stderr, "ndf_bench: no CUDA context is current after ndf_ctx_create; cannot record events\n");
    return -1;
  }
  st->stream = (CUstream)ndf_ctx_stream(st->ctx);
  for (; st->nev < 2 * GATE_BATCH; st->nev++)
    if (CU(cu.EventCreate(&st->ev[st->nev], 0)) != 0) return -1;
  return 0;
}

/* Poisons out[0] (all bits set: NaN for floats) and uploads the checked input to in[0]. */
static int upload_first(run_state *st)
{
  ndf_status s;
  memset(st->host_out, 0xff, wl_out_bytes(st->w));
  if ((s = ndf_array_copy(st->ctx, &st->dout[0], &st->hout)) != NDF_OK ||
      (s = ndf_array_copy(st->ctx, &st->din[0], &st->hin)) != NDF_OK ||
      (s = ndf_ctx_synchronize(st->ctx)) != NDF_OK)
    return ndf_fail(st->ctx, "upload", s);
  return 0;
}

/* cold: the first call of the context, host clock around call + synchronize. */
/* The kernels launched on c since mark (the context's kernel log, docs/adr/0013-kernel-log.md):
 * their entry points in launch order, a run of one repeated as "name*N", "?" for launches that
 * left the log. */
static void kernels_since(const ndf_ctx *c, uint64_t mark, char *buf, size_t len)
{
  const uint64_t end = ndf_ctx_kernel_count(c);
  size_t w = 0;
  char prev[128] = "";
  long rep = 0;
  buf[0] = '\0';
  for (uint64_t i = mark; i <= end && w < len; i++) {
    char cur[128] = "?";
    const char *k = i < end ? ndf_ctx_kernel_launched(c, i) : NULL;
    if (k) {
      const char *a = strchr(k, '|');
      a = a ? a + 1 : k;
      const char *b = strchr(a, '|');
      snprintf(cur, sizeof cur, "%.*s", (int)(b ? (size_t)(b - a) : strlen(a)), a);
    }
    if (i < end && rep && strcmp(cur, prev) == 0) {
      rep++;
      continue;
    }
    if (rep) w += (size_t)snprintf(buf + w, len - w, "%s%s", w ? " " : "", prev);
    if (rep > 1 && w < len) w += (size_t)snprintf(buf + w, len - w, "*%ld", rep);
    if (i == end) break;
    snprintf(prev, sizeof prev, "%s", cur);
    rep = 1;
  }
}

static int time_cold(run_state *st, result *r)
{
  ndf_status s = prepare_side(st->ctx, st->w, &st->din[0]);
  if (s == NDF_OK) s = ndf_ctx_synchronize(st->ctx);
  if (s != NDF_OK) return ndf_fail(st->ctx, "set-up", s);
  const uint64_t mark = ndf_ctx_kernel_count(st->ctx);
  double t0 = now_ms();
  s = run_op(st->ctx, st->w, &st->din[0], &st->dout[0], &st->g);
  if (s == NDF_OK) s = ndf_ctx_synchronize(st->ctx);
  double t1 = now_ms();
  if (s != NDF_OK) return ndf_fail(st->ctx, op_name(st->w->op), s);
  kernels_since(st->ctx, mark, r->kernels, sizeof r->kernels);
  r->cold_ms = t1 - t0;
  ndf_cache_stats cs;
  ndf_ctx_cache_stats(st->ctx, &cs);
  r->compiles = cs.compiles;
  r->compile_ms = cs.compile_ms;
  return 0;
}

/* Fresh random inputs for the other rotated buffers (host_in is free by now). */
static int upload_rotation(run_state *st)
{
  ndf_status s;
  for (int i = 1; i < st->nbuf; i++) {
    fill_input(st->host_in, st->w, st->a->seed + 1000003ull * (uint64_t)i);
    if ((s = ndf_array_copy(st->ctx, &st->din[i], &st->hin)) != NDF_OK) return ndf_fail(st->ctx, "upload", s);
  }
  return 0;
}

static int call_k(run_state *st, int k)
{
  ndf_status s = run_op(st->ctx, st->w, &st->din[k % st->nbuf], &st->dout[k % st->nbuf], &st->g);
  return s == NDF_OK ? 0 : ndf_fail(st->ctx, op_name(st->w->op), s);
}

/* host: median time of the call alone, on an idle stream (synchronized between calls). */
static int time_host(run_state *st, result *r)
{
  int n = st->a->reps < 200 ? 200 : st->a->reps;
  double *t = malloc((size_t)n * sizeof *t);
  if (!t) return -1;
  for (int i = 0; i < n; i++) {
    double t0 = now_ms();
    int bad = call_k(st, i);
    t[i] = (now_ms() - t0) * 1e3;
    ndf_status s = ndf_ctx_synchronize(st->ctx);
    if (bad || s != NDF_OK) {
      if (!bad) ndf_fail(st->ctx, "ndf_ctx_synchronize", s);
      free(t);
      return -1;
    }
  }
  r->host_us = median(t, n);
  free(t);
  return 0;
}

/* Queues nb calls, each between two events, behind a gate when gated. */
static int timed_batch(run_state *st, int first, int nb, int gated, double *out)
{
  atomic_store(&st->gate.release, 0);
  atomic_store(&st->gate.timed_out, 0);
  if (gated && CU(cu.LaunchHostFunc(st->stream, gate_wait, &st->gate)) != 0) return -1;
  int bad = 0;
  for (int i = 0; i < nb && !bad; i++) {
    bad = CU(cu.EventRecord(st->ev[2 * i], st->stream)) || call_k(st, first + i) ||
          CU(cu.EventRecord(st->ev[2 * i + 1], st->stream));
    if (!bad && !gated) bad = CU(cu.EventSynchronize(st->ev[2 * i + 1]));
  }
  atomic_store(&st->gate.release, 1);
  ndf_status s = ndf_ctx_synchronize(st->ctx);
  if (bad) return -1;
  if (s != NDF_OK) return ndf_fail(st->ctx, "ndf_ctx_synchronize", s);
  if (gated && atomic_load(&st->gate.timed_out)) return 1;
  for (int i = 0; i < nb; i++) {
    float ms;
    if (CU(cu.EventElapsedTime(&ms, st->ev[2 * i], st->ev[2 * i + 1])) != 0) return -1;
    out[first + i] = ms;
  }
  return 0;
}

/* warm: WARMUPS calls, then the median of reps event-timed calls. */
static int time_warm(run_state *st, result *r)
{
  int reps = st->a->reps, gated = 1;
  for (int i = 0; i < WARMUPS; i++)
    if (call_k(st, i) != 0) return -1;
  double *t = malloc((size_t)reps * sizeof *t);
  if (!t) return -1;
  for (int done = 0; done < reps;) {
    int nb = reps - done < GATE_BATCH ? reps - done : GATE_BATCH;
    int rc = timed_batch(st, done, nb, gated, t);
    if (rc < 0) {
      free(t);
      return -1;
    }
    if (rc > 0) {
      fprintf(stderr, "ndf_bench: warning: a call waited for its own stream; timing calls one at a time "
                      "(small workloads then include launch latency)\n");
      gated = 0;
      continue;
    }
    done += nb;
  }
  r->warm_ms = median(t, reps);
  r->reps = reps;
  r->gated = gated;
  free(t);
  return 0;
}

static int check_result(run_state *st, result *r)
{
  ndf_status s;
  if ((s = ndf_array_copy(st->ctx, &st->hout, &st->dout[0])) != NDF_OK) return ndf_fail(st->ctx, "download", s);
  char msg[400];
  if (compare_exact(st->w, st->host_out, st->host_ref, msg, sizeof msg) != 0) {
    char name[256];
    wl_name(st->w, name, sizeof name);
    fprintf(stderr, "ndf_bench: WRONG RESULT for %s: %s\n", name, msg);
    snprintf(r->error, sizeof r->error, "wrong result: %s", msg);
    r->check = "mismatch";
    return -1;
  }
  r->check = "ok";
  return 0;
}

/*
 * Sinkhorn (FAM_SINKHORN): n = shape[0] histogram pairs on the grid
 * shape[1..]; the solve takes and returns host arrays, so a call is
 * synchronous (upload, one kernel, download).  Timings: cold = solver
 * creation (kernel compile) + first solve in a fresh context and cache;
 * warm = median CUDA-event time of one solve (events around the call, one
 * call at a time: the call synchronizes, so no gate); host = median wall
 * time of one solve.  No disk time.  The check cannot be bit for bit: the
 * GPU runs float32 (the targets) and the CPU backend float64, so the
 * transport costs must agree to a relative 1e-3.
 */
#define SK_CHECK_RTOL 1e-3

static ndf_status sk_make(ndf_ctx *c, const workload *w, ndf_device_type dev, ndf_dtype dt, const ndf_array *cost,
                          ndf_sinkhorn **out)
{
  ndf_sinkhorn_options o;
  ndf_sinkhorn_options_init(&o);
  int64_t d = wl_count(w) / w->shape[0];
  double maxc = 0.0;
  for (int i = 1; i < w->ndim; i++) maxc += (double)(w->shape[i] - 1) * (double)(w->shape[i] - 1);
  o.n = w->shape[0];
  o.d = d;
  o.epsilon = w->param;
  o.max_iter = w->size;
  o.log_domain = (w->op == OP_SINKHORN_LOG);
  o.device = dev;
  o.dtype = dt;
  if ((w->op == OP_SINKHORN_DENSE)) {
    o.cost_kind = NDF_OT_COST_DENSE;
    o.cost = cost;
  } else {
    o.cost_kind = NDF_OT_COST_GRID_LP;
    o.p = 2;
    o.grid_scale = maxc > 0 ? 1.0 / maxc : 1.0;
    o.grid_ndim = w->ndim - 1;
    for (int i = 1; i < w->ndim; i++) o.grid_shape[i - 1] = w->shape[i];
  }
  return ndf_sinkhorn_create(c, out, &o);
}

static int run_sinkhorn(const bench_args *a, const workload *w, ndf_ctx *cpu, int have_gpu, result *r)
{
  const int64_t n = w->shape[0], d = wl_count(w) / n;
  double maxc = 0.0;
  for (int i = 1; i < w->ndim; i++) maxc += (double)(w->shape[i] - 1) * (double)(w->shape[i] - 1);
  double *A = malloc((size_t)(n * d) * sizeof(double)), *B = malloc((size_t)(n * d) * sizeof(double));
  double *C = (w->op == OP_SINKHORN_DENSE) ? malloc((size_t)(d * d) * sizeof(double)) : NULL;
  double *tg = malloc((size_t)n * sizeof(double)), *tcpu = malloc((size_t)n * sizeof(double));
  ndf_ctx *g = NULL;
  ndf_sinkhorn *sg = NULL, *sc = NULL;
  char cache_dir[512] = "";
  int rc = -1;
  const char *stage = "set-up";
  ndf_status s;
  if (!A || !B || !tg || !tcpu || ((w->op == OP_SINKHORN_DENSE) && !C)) goto done;
  uint64_t seed = a->seed;
  for (int h = 0; h < 2; h++) { /* positive histograms of mass 1 */
    double *H = h ? B : A;
    for (int64_t k = 0; k < n; k++) {
      double m = 0.0;
      for (int64_t i = 0; i < d; i++) m += H[k * d + i] = 0.05 + (double)(splitmix64(&seed) >> 11) * 0x1p-53;
      for (int64_t i = 0; i < d; i++) H[k * d + i] /= m;
    }
  }
  int64_t dd[2] = {d, d}, nd[2] = {n, d};
  ndf_array Ca, Aa, Ba, Tg, Tc;
  int64_t gshape[NDF_MAX_SPATIAL];
  for (int i = 1; i < w->ndim; i++) gshape[i - 1] = w->shape[i];
  if ((w->op == OP_SINKHORN_DENSE) && (ndf_array_init(&Ca, C, NDF_DEVICE_CPU, NDF_FLOAT64, 2, dd) != NDF_OK ||
                   ndf_sinkhorn_grid_cost(NDF_OT_COST_GRID_LP, w->ndim - 1, gshape, 2, maxc > 0 ? 1.0 / maxc : 1.0,
                                          &Ca) != NDF_OK))
    goto done;
  ndf_array_init(&Aa, A, NDF_DEVICE_CPU, NDF_FLOAT64, 2, nd);
  ndf_array_init(&Ba, B, NDF_DEVICE_CPU, NDF_FLOAT64, 2, nd);
  ndf_array_init(&Tg, tg, NDF_DEVICE_CPU, NDF_FLOAT64, 1, &n);
  ndf_array_init(&Tc, tcpu, NDF_DEVICE_CPU, NDF_FLOAT64, 1, &n);
  ndf_sinkhorn_result rg = {&Tg, NULL, NULL, NULL, NULL, NULL}, rcpu = {&Tc, NULL, NULL, NULL, NULL, NULL};
  if (!have_gpu || a->cpu) {
    stage = "CPU backend";
    if ((s = sk_make(cpu, w, NDF_DEVICE_CPU, NDF_FLOAT64, &Ca, &sc)) != NDF_OK) {
      ndf_fail(cpu, "ndf_sinkhorn_create (CPU)", s);
      goto done;
    }
    double t[CPU_RUNS];
    for (int i = 0; i < CPU_RUNS; i++) {
      double t0 = now_ms();
      if ((s = ndf_sinkhorn_solve(sc, &Aa, &Ba, &rcpu)) != NDF_OK) {
        ndf_fail(cpu, "ndf_sinkhorn_solve (CPU)", s);
        goto done;
      }
      t[i] = now_ms() - t0;
    }
    r->cpu_ms = median(t, CPU_RUNS);
  }
  if (!have_gpu) {
    rc = 0;
    goto done;
  }
  stage = "cold call";
  if (make_cache_dir(cache_dir, sizeof cache_dir) != 0) goto done;
  if ((s = make_ctx(&g, NDF_BACKEND_CUDA, cache_dir)) != NDF_OK) {
    ndf_fail(NULL, "ndf_ctx_create", s);
    goto done;
  }
  double t0 = now_ms();
  s = sk_make(g, w, NDF_DEVICE_CUDA, w->dtype, &Ca, &sg);
  if (s == NDF_OK) s = ndf_sinkhorn_solve(sg, &Aa, &Ba, &rg);
  if (s != NDF_OK) {
    ndf_fail(g, "sinkhorn (CUDA)", s);
    goto done;
  }
  r->cold_ms = now_ms() - t0;
  ndf_cache_stats cs;
  ndf_ctx_cache_stats(g, &cs);
  r->compiles = cs.compiles;
  r->compile_ms = cs.compile_ms;
  if (a->check) {
    stage = "check";
    if (!sc && (s = sk_make(cpu, w, NDF_DEVICE_CPU, NDF_FLOAT64, &Ca, &sc)) != NDF_OK) {
      ndf_fail(cpu, "ndf_sinkhorn_create (CPU)", s);
      goto done;
    }
    if (!isfinite(r->cpu_ms) && (s = ndf_sinkhorn_solve(sc, &Aa, &Ba, &rcpu)) != NDF_OK) {
      ndf_fail(cpu, "ndf_sinkhorn_solve (CPU)", s);
      goto done;
    }
    for (int64_t k = 0; k < n; k++)
      if (!(fabs(tg[k] - tcpu[k]) <= SK_CHECK_RTOL * fabs(tcpu[k]))) {
        snprintf(r->error, sizeof r->error, "wrong result: pair %lld: transport cost GPU %.9g, CPU %.9g (rtol %g)",
                 (long long)k, tg[k], tcpu[k], SK_CHECK_RTOL);
        fprintf(stderr, "ndf_bench: %s\n", r->error);
        r->check = "mismatch";
        rc = -2;
        goto done;
      }
    r->check = "ok (float32 vs float64 CPU: transport costs to rtol 1e-3)";
  }
  stage = "warm";
  CUstream st = (CUstream)ndf_ctx_stream(g);
  CUevent ev[2];
  if (CU(cu.EventCreate(&ev[0], 0)) || CU(cu.EventCreate(&ev[1], 0))) goto done;
  int reps = a->reps;
  double *t = malloc((size_t)(reps + WARMUPS) * 2 * sizeof(double));
  if (!t) goto done;
  for (int i = 0; i < reps + WARMUPS; i++) {
    double h0 = now_ms();
    int bad = CU(cu.EventRecord(ev[0], st));
    if (!bad && (s = ndf_sinkhorn_solve(sg, &Aa, &Ba, &rg)) != NDF_OK) bad = ndf_fail(g, "ndf_sinkhorn_solve", s);
    bad = bad || CU(cu.EventRecord(ev[1], st)) || CU(cu.EventSynchronize(ev[1]));
    double h1 = now_ms();
    float ms = 0;
    if (bad || CU(cu.EventElapsedTime(&ms, ev[0], ev[1]))) {
      free(t);
      goto done;
    }
    if (i >= WARMUPS) {
      t[i - WARMUPS] = ms;
      t[reps + i - WARMUPS] = (h1 - h0) * 1e3;
    }
  }
  cu.EventDestroy(ev[0]);
  cu.EventDestroy(ev[1]);
  r->warm_ms = median(t, reps);
  r->host_us = median(t + reps, reps);
  r->reps = reps;
  r->gated = 0;
  free(t);
  rc = 0;
done:
  if (rc == -1 && !r->error[0]) snprintf(r->error, sizeof r->error, "failed in %s (see stderr)", stage);
  ndf_sinkhorn_destroy(sg);
  ndf_sinkhorn_destroy(sc);
  ndf_ctx_destroy(g);
  if (cache_dir[0]) remove_tree(cache_dir);
  free(A);
  free(B);
  free(C);
  free(tg);
  free(tcpu);
  return rc;
}

/* Returns 0 ok, -1 failure (r->error says what), -2 wrong result (abort). */
static int run_workload(const bench_args *a, const workload *w, ndf_ctx *cpu, int have_gpu, result *r)
{
  if (ops[w->op].family == FAM_SINKHORN) {
    r->check = !have_gpu ? "n/a" : !a->check ? "disabled" : "pending";
    return run_sinkhorn(a, w, cpu, have_gpu, r);
  }
  run_state st;
  memset(&st, 0, sizeof st);
  st.a = a, st.w = w, st.cpu = cpu;
  int check = have_gpu && a->check && (a->check_max_mb < 0 || (double)wl_bytes(w) <= a->check_max_mb * MB);
  r->check = !have_gpu ? "n/a" : !a->check ? "disabled" : check ? "pending" : "skipped";
  int rc = -1;
  const char *stage = "set-up";
  if (setup_options(w, &st.g) != 0 || host_arrays(&st) != 0) goto done;
  fill_input(st.host_in, w, a->seed);
  stage = "CPU backend";
  if (!have_gpu) {
    rc = cpu_runs(&st, 0, r);
    goto done;
  }
  stage = "GPU set-up";
  if (gpu_setup(&st) != 0 || upload_first(&st) != 0) goto done;
  r->nbuf = st.nbuf;
  stage = "cold call";
  if (time_cold(&st, r) != 0) goto done;
  stage = "CPU backend";
  if ((check || a->cpu) && cpu_runs(&st, check, r) != 0) goto done;
  stage = "check";
  if (check && check_result(&st, r) != 0) {
    rc = -2;
    goto done;
  }
  stage = "disk";
  disk_result d;
  if (!ndf_ctx_cache_dir(st.ctx)[0]) {
    fprintf(stderr, "ndf_bench: warning: the disk cache is off (NDF_CACHE_DISABLE?); no disk time\n");
  } else if (measure_disk(w, st.cache_dir, a->seed, &d) == 0) {
    r->disk_ms = d.ms;
    r->disk_hits = d.disk_hits;
    r->disk_compiles = d.compiles;
    if (d.compiles)
      fprintf(stderr, "ndf_bench: warning: the fresh process compiled %llu kernel(s) instead of loading them\n",
              d.compiles);
  } else {
    goto done;
  }
  stage = "warm";
  if (upload_rotation(&st) != 0 || time_warm(&st, r) != 0) goto done;
  ndf_tuning_status ts;
  if (ndf_ctx_tuning_status(st.ctx, &ts) == NDF_OK)
    snprintf(r->tuning, sizeof r->tuning, "%s%llu%s", ts.state == 4 ? "off" : ts.state == 2 ? "table: " : ts.state == 3 ? "ignored" : "none",
             (unsigned long long)ts.hits, ts.state == 2 ? " choices" : "");
  stage = "host overhead";
  if (time_host(&st, r) != 0) goto done;
  rc = 0;
done:
  if (rc == -1 && !r->error[0]) snprintf(r->error, sizeof r->error, "failed in %s (see stderr)", stage);
  release_state(&st);
  return rc;
}

/* ------------------------------------------------------------------------ */
/* Output                                                                    */

typedef struct sbuf {
  char b[4096];
  size_t n;
} sbuf;

static void put(sbuf *s, const char *fmt, ...)
{
  if (s->n >= sizeof s->b) return;
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(s->b + s->n, sizeof s->b - s->n, fmt, ap);
  va_end(ap);
  if (k > 0) s->n += (size_t)k;
}

static void put_num(sbuf *s, const char *key, double v, const char *fmt)
{
  put(s, ",\"%s\":", key);
  if (isfinite(v)) put(s, fmt, v);
  else put(s, "null");
}

static void put_str(sbuf *s, const char *key, const char *v)
{
  put(s, ",\"%s\":\"", key);
  for (; *v; v++) {
    if (*v == '"' || *v == '\\') put(s, "\\%c", *v);
    else if ((unsigned char)*v < 0x20) put(s, "\\u%04x", *v);
    else put(s, "%c", *v);
  }
  put(s, "\"");
}

static void print_json(const workload *w, const result *r, const char *device, const char *date)
{
  sbuf s = {.n = 0};
  char name[256];
  wl_name(w, name, sizeof name);
  double bytes = wl_traffic(w);
  put(&s, "{\"bench\":\"ndf_bench\"");
  put_str(&s, "name", name);
  put_str(&s, "op", op_name(w->op));
  put_str(&s, "dtype", ndf_dtype_name(w->dtype));
  put(&s, ",\"shape\":[");
  for (int i = 0; i < w->ndim; i++) put(&s, "%s%lld", i ? "," : "", (long long)w->shape[i]);
  put(&s, "],\"size\":%d", w->size);
  if (w->op == OP_RANK || w->op == OP_PERCENTILE || w->op == OP_BIN_EROSION) put(&s, ",\"param\":%.17g", w->param);
  if (w->op == OP_GAUSSIAN) put(&s, ",\"sigma\":%.17g,\"truncate\":4", w->param);
  if (ops[w->op].family == FAM_SINKHORN) /* shape = (pairs, grid...), size = iterations */
    put(&s, ",\"epsilon\":%.17g,\"iterations\":%d,\"log_domain\":%d,\"cost\":\"%s\"", w->param, w->size,
        (w->op == OP_SINKHORN_LOG), (w->op == OP_SINKHORN_DENSE) ? "dense" : "grid sqeuclidean, max 1");
  put_str(&s, "footprint", w->fp == FP_CROSS ? "cross" : "box");
  put(&s, ",\"batch_dims\":%d", w->batch_dims);
  if (g_deferred) put(&s, ",\"deferred_errors\":1");
  put_str(&s, "mode", ndf_mode_name(w->mode));
  put_str(&s, "device", device);
  put_str(&s, "date", date);
  put_str(&s, "version", ndf_version());
  put_num(&s, "cold_ms", r->cold_ms, "%.6g");
  put_num(&s, "disk_ms", r->disk_ms, "%.6g");
  put_num(&s, "warm_ms", r->warm_ms, "%.6g");
  put_num(&s, "host_us", r->host_us, "%.3f");
  put(&s, ",\"bytes\":%.0f", bytes);
  put_num(&s, "gbps", bytes / (r->warm_ms * 1e-3) / 1e9, "%.1f");
  put_num(&s, "floor_ms", bytes / PEAK_BYTES_PER_S * 1e3, "%.6g");
  put_num(&s, "cpu_ms", r->cpu_ms, "%.3f");
  put(&s, ",\"compiles\":%llu", r->compiles);
  put_num(&s, "compile_ms", r->compile_ms, "%.3f");
  put(&s, ",\"disk_hits\":%llu,\"disk_compiles\":%llu", r->disk_hits, r->disk_compiles);
  put(&s, ",\"reps\":%d,\"nbuf\":%d", r->reps, r->nbuf);
  if (isfinite(r->warm_ms))
    put_str(&s, "warm_timing", r->gated ? "events, calls queued behind a gate" : "events, one call at a time");
  put_str(&s, "check", r->check);
  if (r->kernels[0]) put_str(&s, "kernels", r->kernels);
  if (r->tuning[0]) put_str(&s, "tuning", r->tuning);
  if (g_tune) put_str(&s, "tune", g_tune);
  if (r->error[0]) put_str(&s, "error", r->error);
  put(&s, "}\n");
  fputs(s.b, stdout);
  fflush(stdout);
}

/* Milliseconds for the human line: "93", "0.4", "0.213". */
static const char *fmt_ms(char *buf, size_t len, double ms)
{
  snprintf(buf, len, ms >= 100 ? "%.0f" : "%.3g", ms);
  return buf;
}

static void print_human(const workload *w, const result *r)
{
  char t[32];
  char shp[160];
  shape_str(w, 'x', shp, sizeof shp);
  double bytes = wl_traffic(w);
  fprintf(stderr, "%s %s %s %s=%d", op_name(w->op), dtype_short(w->dtype), shp,
          w->fp == FP_CROSS ? "cross" : "size", w->size);
  if (w->batch_dims) fprintf(stderr, " batch_dims=%d", w->batch_dims);
  if (w->mode != NDF_MODE_REFLECT) fprintf(stderr, " mode=%s", ndf_mode_name(w->mode));
  if (isfinite(r->cold_ms)) fprintf(stderr, " cold=%sms", fmt_ms(t, sizeof t, r->cold_ms));
  if (isfinite(r->disk_ms)) fprintf(stderr, " disk=%sms", fmt_ms(t, sizeof t, r->disk_ms));
  if (isfinite(r->warm_ms)) {
    double tbs = bytes / (r->warm_ms * 1e-3) / 1e12;
    fprintf(stderr, " warm=%sms %.*fTB/s", fmt_ms(t, sizeof t, r->warm_ms), tbs >= 1 ? 1 : 2, tbs);
    fprintf(stderr, " (floor %sms)", fmt_ms(t, sizeof t, bytes / PEAK_BYTES_PER_S * 1e3));
  }
  if (isfinite(r->host_us)) fprintf(stderr, " host=%.1fus", r->host_us);
  if (isfinite(r->cpu_ms)) fprintf(stderr, " cpu=%sms", fmt_ms(t, sizeof t, r->cpu_ms));
  fprintf(stderr, " check=%s%s%s\n", r->check, r->error[0] ? " ERROR: " : "", r->error);
}

/* ------------------------------------------------------------------------ */

static int selected(const bench_args *a, const workload *w)
{
  char name[256];
  wl_name(w, name, sizeof name);
  return !a->only || strstr(name, a->only) != NULL;
}

int main(int argc, char **argv)
{
  bench_args a;
  int rc = parse_args(argc, argv, &a);
  if (rc != 0) return rc;
  if (a.child_disk) return child_disk(&a);

  const workload *list = a.custom ? &a.wl : default_workloads;
  size_t nlist = a.custom ? 1 : N_DEFAULT;
  if (a.list) {
    for (size_t i = 0; i < nlist; i++) {
      char name[256];
      wl_name(&list[i], name, sizeof name);
      if (selected(&a, &list[i])) printf("%s\n", name);
    }
    return 0;
  }
  size_t nsel = 0;
  for (size_t i = 0; i < nlist; i++) nsel += selected(&a, &list[i]);
  if (nsel == 0) {
    fprintf(stderr, "ndf_bench: no workload matches --only '%s' (see --list)\n", a.only);
    return EXIT_USAGE;
  }

  /* A probe context keeps the primary context alive across workloads and names the device. */
  ndf_ctx *probe = NULL, *cpu = NULL;
  char device[256] = "cpu";
  ndf_status s = make_ctx(&probe, NDF_BACKEND_CUDA, NULL);
  int have_gpu = s == NDF_OK;
  if (!have_gpu) {
    if (s != NDF_ENODEV) return ndf_fail(NULL, "ndf_ctx_create (CUDA)", s), 1;
    if (!a.cpu) {
      fprintf(stderr, "ndf_bench: skipped: no usable CUDA device (%s); --cpu times the CPU backend alone\n",
              ndf_last_error());
      return EXIT_SKIP;
    }
    fprintf(stderr, "ndf_bench: no usable CUDA device (%s); timing the CPU backend only\n", ndf_last_error());
  } else {
    ndf_ctx_info info;
    if ((s = ndf_ctx_get_info(probe, &info)) != NDF_OK) {
      ndf_fail(probe, "ndf_ctx_get_info", s);
      ndf_ctx_destroy(probe);
      return 1;
    }
    snprintf(device, sizeof device, "%s", info.device_name);
    /* the tuning table of the default cache directory (the timed contexts' own are fresh) */
    if (g_tuning && !g_tuning_dir[0]) snprintf(g_tuning_dir, sizeof g_tuning_dir, "%s", ndf_ctx_cache_dir(probe));
    if (cu_load() != 0) {
      ndf_ctx_destroy(probe);
      return 1;
    }
  }
  if ((s = make_ctx(&cpu, NDF_BACKEND_CPU, NULL)) != NDF_OK) {
    ndf_fail(NULL, "ndf_ctx_create (CPU)", s);
    ndf_ctx_destroy(probe);
    return 1;
  }

  char date[32];
  iso_now(date, sizeof date);
  rc = 0;
  for (size_t i = 0; i < nlist; i++) {
    if (!selected(&a, &list[i])) continue;
    result r = {.cold_ms = NAN, .disk_ms = NAN, .warm_ms = NAN, .host_us = NAN, .cpu_ms = NAN,
                .compile_ms = NAN, .check = "n/a"};
    int w = run_workload(&a, &list[i], cpu, have_gpu, &r);
    print_json(&list[i], &r, device, date);
    if (a.human) print_human(&list[i], &r);
    if (w == -2) {
      rc = 1;
      break; /* a wrong result ends the run: no number of a wrong kernel is worth printing */
    }
    if (w != 0) rc = 1;
  }
  ndf_ctx_destroy(cpu);
  ndf_ctx_destroy(probe);
  return rc;
}
