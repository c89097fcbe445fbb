/*
 * test_faults.c -- host allocation failures.  Every allocation the runtime
 * makes (malloc, calloc, realloc, strdup: the linker's --wrap sends them
 * here) can be made to fail; for one representative call of every family,
 * the n-th allocation of the call fails, for n = 1, 2, ... up to the number
 * the call makes.  Each failing call must return a status (or absorb the
 * failure and give the right result), leave its outputs as they were
 * (poisoned before the call), and leak nothing (LeakSanitizer, in the
 * sanitizer build); the same call on the same context then succeeds with
 * the result of the first run.  White box: linked with the runtime's
 * static copy, so that its allocations are the ones wrapped.  Also the op
 * families' per-context state (ndf__family_state, ADR 0020): its one
 * allocation failing, no allocation after it, the deferred-check hook, the
 * release with the context, a context at a destroyed one's address.  And
 * the device-memory limit (ndf_ctx_options.device_memory_limit): its
 * accounting, and on CUDA arrays and scratch refused past it.
 *
 * Built a second time as test_gpu_faults (TU_FAULTS_CUDA): the same calls on
 * CUDA arrays, where besides the host allocations the n-th device allocation
 * (cuMemAlloc*, page-locked host memory) and the n-th kernel launch fail, by
 * swapping those entries of the runtime's driver table.  The outputs are
 * poisoned on the device and read back after the call.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "testutil.h"
#ifdef TU_FAULTS_CUDA
#include "internal.h" /* ndf__cu: the driver table whose entries are swapped */
#endif

/* ---- the injectable allocator ------------------------------------------------------------ */

static atomic_long fault_calls; /* allocations counted since the last arm */
static atomic_long fault_at;    /* fail the allocation with this number (1-based); 0: never */
static atomic_int fault_on;     /* counting (and failing) only inside an armed call */
static atomic_long fault_hits;  /* failures injected since the last arm */
/* What fails: host allocations, device allocations, kernel launches. */
enum { F_HOST, F_DEVICE, F_LAUNCH };
static atomic_int fault_kind;
static const char *const kind_name[] = {"host allocations", "device allocations", "kernel launches"};

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);

static int fault_now(int kind) {
  if (!atomic_load(&fault_on) || atomic_load(&fault_kind) != kind) return 0;
  long k = atomic_fetch_add(&fault_calls, 1) + 1;
  if (k != atomic_load(&fault_at)) return 0;
  atomic_fetch_add(&fault_hits, 1);
  return 1;
}
void *__wrap_malloc(size_t n) { return fault_now(F_HOST) ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t m) { return fault_now(F_HOST) ? NULL : __real_calloc(n, m); }
void *__wrap_realloc(void *p, size_t n) { return fault_now(F_HOST) ? NULL : __real_realloc(p, n); }
char *__wrap_strdup(const char *s) { return fault_now(F_HOST) ? NULL : __real_strdup(s); }

#ifdef TU_FAULTS_CUDA
#define CU_OOM 2 /* CUDA_ERROR_OUT_OF_MEMORY */
#define CU_LAUNCH_FAILED 719 /* CUDA_ERROR_LAUNCH_FAILED */
static ndf__cu_api real_cu; /* the driver's entries, before the swap */
static CUresult w_alloc(CUdeviceptr *p, size_t n) { return fault_now(F_DEVICE) ? CU_OOM : real_cu.cuMemAlloc(p, n); }
static CUresult w_alloc_async(CUdeviceptr *p, size_t n, CUstream s) {
  return fault_now(F_DEVICE) ? CU_OOM : real_cu.cuMemAllocAsync(p, n, s);
}
static CUresult w_alloc_pool(CUdeviceptr *p, size_t n, CUmemoryPool m, CUstream s) {
  return fault_now(F_DEVICE) ? CU_OOM : real_cu.cuMemAllocFromPoolAsync(p, n, m, s);
}
static CUresult w_alloc_host(void **p, size_t n) { return fault_now(F_DEVICE) ? CU_OOM : real_cu.cuMemAllocHost(p, n); }
static CUresult w_host_alloc(void **p, size_t n, unsigned f) {
  return fault_now(F_DEVICE) ? CU_OOM : real_cu.cuMemHostAlloc(p, n, f);
}
static CUresult w_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                         unsigned smem, CUstream s, void **args, void **extra) {
  return fault_now(F_LAUNCH) ? CU_LAUNCH_FAILED : real_cu.cuLaunchKernel(f, gx, gy, gz, bx, by, bz, smem, s, args, extra);
}
static CUresult w_launch_coop(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                              unsigned bz, unsigned smem, CUstream s, void **args) {
  return fault_now(F_LAUNCH) ? CU_LAUNCH_FAILED : real_cu.cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, smem, s, args);
}
/* Swaps the driver table's allocation and launch entries for the wrappers above. */
static void swap_driver_entries(void) {
  ndf__cu_api *cu = (ndf__cu_api *)ndf__cu(NULL);
  assert_non_null(cu);
  real_cu = *cu;
  cu->cuMemAlloc = w_alloc;
  cu->cuMemAllocAsync = w_alloc_async;
  cu->cuMemAllocFromPoolAsync = w_alloc_pool;
  cu->cuMemAllocHost = w_alloc_host;
  cu->cuMemHostAlloc = w_host_alloc;
  cu->cuLaunchKernel = w_launch;
  cu->cuLaunchCooperativeKernel = w_launch_coop;
}
#endif

static void arm_kind(long at, int kind) {
  atomic_store(&fault_kind, kind);
  atomic_store(&fault_calls, 0);
  atomic_store(&fault_hits, 0);
  atomic_store(&fault_at, at);
  atomic_store(&fault_on, 1);
}
static void arm(long at) { arm_kind(at, F_HOST); }
static void disarm(void) { atomic_store(&fault_on, 0); }

/* ---- the calls ------------------------------------------------------------------------------ */

#define MAX_OUT 3
typedef struct fcase {
  const char *name;
  ndf_ctx *ctx;
  tu_array in, aux, aux2;        /* the input and what a call reads besides (mask, directions, thresholds) */
  tu_array out[MAX_OUT];         /* outputs, poisoned before every call */
  int nout;
  int64_t counts[8];             /* label's num_features (an output too) */
  ndf_status (*call)(struct fcase *c);
  /* What the call reads and writes: the host arrays above, or on the CUDA
   * run their device copies (in and the outputs always, aux where aux_dev;
   * host_only cases, such as Sinkhorn, take host arrays on every backend). */
  ndf_array *IN, *AUX, *AUX2, *OUT[MAX_OUT];
  int aux_dev, host_only;
#ifdef TU_FAULTS_CUDA
  tu_dev din, daux, dout[MAX_OUT];
#endif
} fcase;

static const int64_t SH3[3] = {5, 6, 7};
static const int64_t SH2[2] = {9, 11};

static void fill(tu_array *t, uint64_t seed, int binary) {
  tu_rng r;
  tu_rng_seed(&r, seed);
  for (int64_t i = 0; i < ndf_array_size(&t->arr); i++)
    tu_set(&t->arr, i, binary ? (double)tu_rng_chance(&r, 0.6) : (double)tu_rng_int(&r, 0, 200));
}

static ndf_status c_grey_erosion(fcase *c) {
  ndf_grey_options o;
  ndf_grey_options_init(&o);
  o.nsize = 1;
  o.size[0] = 3;
  return ndf_grey_erosion(c->ctx, c->IN, c->OUT[0], &o);
}
static ndf_status c_grey_opening(fcase *c) { /* a footprint (tap table), two steps */
  uint8_t fp[9] = {0, 1, 0, 1, 1, 1, 0, 1, 1};
  int64_t fs[2] = {3, 3};
  ndf_array f;
  ndf_array_init(&f, fp, NDF_DEVICE_CPU, NDF_UINT8, 2, fs);
  ndf_grey_options o;
  ndf_grey_options_init(&o);
  o.footprint = &f;
  o.batch_dims = 1;
  return ndf_grey_opening(c->ctx, c->IN, c->OUT[0], &o);
}
static ndf_status c_laplace(fcase *c) {
  ndf_grey_options o;
  ndf_grey_options_init(&o);
  o.nsize = 1;
  o.size[0] = 3;
  o.mode = NDF_MODE_CONSTANT;
  return ndf_morphological_laplace(c->ctx, c->IN, c->OUT[0], &o);
}
static ndf_status c_skull_strip(fcase *c) { /* a bright ball in an 12x13x14 image, a few iterations */
  ndf_skull_strip_options o;
  ndf_skull_strip_options_init(&o);
  o.iterations = 3;
  const double spacing[3] = {2, 2, 2};
  return ndf_skull_strip(c->ctx, c->IN, spacing, c->OUT[0], &o);
}

static ndf_status c_reconstruction(fcase *c) { /* seed in, mask aux (>= seed), a batch axis, an offset */
  uint8_t fp[6] = {1, 1, 0, 1, 1, 1};
  int64_t fs[2] = {2, 3};
  ndf_array f;
  ndf_array_init(&f, fp, NDF_DEVICE_CPU, NDF_UINT8, 2, fs);
  ndf_reconstruction_options o;
  ndf_reconstruction_options_init(&o);
  o.footprint = &f;
  o.noffset = 2;
  o.offset[0] = 1;
  o.offset[1] = 1;
  o.batch_dims = 1;
  return ndf_reconstruction(c->ctx, c->IN, c->AUX, c->OUT[0], &o);
}
static ndf_status c_reorient(fcase *c) { /* x and z flipped: ndf_affine_transform's order-0 copy */
  const double a[16] = {-1, 0, 0, 5, 0, 2, 0, 0, 0, 0, -3, 1, 0, 0, 0, 1};
  return ndf_reorient_ras(c->ctx, c->IN, a, c->OUT[0]);
}
static ndf_status c_normalize_mri(fcase *c) { /* z-score with the statistics of a mask's voxels */
  ndf_normalize_options o;
  ndf_normalize_options_init(&o);
  return ndf_normalize_modality(c->ctx, c->IN, c->AUX, c->OUT[0], &o);
}
static ndf_status c_n4(fcase *c) { /* a mask, the log field as a second output, two levels, shrink 2 */
  ndf_n4_options o;
  ndf_n4_options_init(&o);
  o.number_of_fitting_levels = 2;
  o.maximum_number_of_iterations[0] = o.maximum_number_of_iterations[1] = 2;
  o.shrink_factor = 2;
  return ndf_n4_bias_field_correction(c->ctx, c->IN, c->AUX, NULL, c->OUT[0], c->OUT[1], &o, NULL);
}
static ndf_status c_median(fcase *c) {
  ndf_rank_options o;
  ndf_rank_options_init(&o);
  o.nsize = 1;
  o.size[0] = 3;
  return ndf_median_filter(c->ctx, c->IN, c->OUT[0], &o);
}
static ndf_status c_percentile(fcase *c) {
  uint8_t fp[9] = {1, 1, 0, 1, 1, 1, 0, 1, 1};
  int64_t fs[2] = {3, 3};
  ndf_array f;
  ndf_array_init(&f, fp, NDF_DEVICE_CPU, NDF_UINT8, 2, fs);
  ndf_rank_options o;
  ndf_rank_options_init(&o);
  o.footprint = &f;
  o.batch_dims = 1;
  return ndf_percentile_filter(c->ctx, c->IN, c->OUT[0], 30.0, &o);
}
static ndf_status c_binary_erosion(fcase *c) {
  ndf_binary_options o;
  ndf_binary_options_init(&o);
  o.iterations = 2;
  o.mask = c->AUX;
  return ndf_binary_erosion(c->ctx, c->IN, c->OUT[0], &o);
}
static ndf_status c_binary_closing(fcase *c) {
  ndf_binary_options o;
  ndf_binary_options_init(&o);
  o.iterations = 0; /* until nothing changes */
  return ndf_binary_closing(c->ctx, c->IN, c->OUT[0], &o);
}
static ndf_status c_propagation(fcase *c) {
  ndf_binary_options o;
  ndf_binary_options_init(&o);
  o.mask = c->AUX;
  return ndf_binary_propagation(c->ctx, c->IN, c->OUT[0], &o);
}
static ndf_status c_fill_holes(fcase *c) {
  ndf_binary_options o;
  ndf_binary_options_init(&o);
  return ndf_binary_fill_holes(c->ctx, c->IN, c->OUT[0], &o);
}
static ndf_status c_hit_or_miss(fcase *c) {
  ndf_hit_or_miss_options o;
  ndf_hit_or_miss_options_init(&o);
  return ndf_binary_hit_or_miss(c->ctx, c->IN, c->OUT[0], &o);
}
static ndf_status c_label(fcase *c) {
  return ndf_label(c->ctx, c->IN, c->OUT[0], NULL, 1, c->counts);
}
/* label into the output's buffer seen in Fortran order (scipy's scan along axis 1 of each image), uint8:
 * the first image's scan opens more labels than uint8 holds (raster order then), the second's not. */
static ndf_status c_label_scan(fcase *c) {
  ndf_array f = *c->OUT[0];
  f.strides[0] = 1;
  f.strides[1] = f.shape[0];
  f.strides[2] = f.shape[0] * f.shape[1];
  return ndf_label(c->ctx, c->IN, &f, NULL, 1, c->counts);
}
#ifndef TU_FAULTS_CUDA
static ndf_status c_iterate(fcase *c) {
  return ndf_iterate_structure(c->IN, 3, c->OUT[0], 0, NULL, NULL);
}
#endif
static ndf_status c_edt(fcase *c) {
  ndf_distance_options o;
  ndf_distance_options_init(&o);
  return ndf_distance_transform_edt(c->ctx, c->IN, c->OUT[0], c->OUT[1], &o);
}
static ndf_status c_cdt(fcase *c) {
  ndf_distance_options o;
  ndf_distance_options_init(&o);
  o.metric = NDF_METRIC_TAXICAB;
  return ndf_distance_transform_cdt(c->ctx, c->IN, c->OUT[0], c->nout > 1 ? c->OUT[1] : NULL, &o);
}
static ndf_status c_bf(fcase *c) {
  ndf_distance_options o;
  ndf_distance_options_init(&o);
  return ndf_distance_transform_bf(c->ctx, c->IN, c->OUT[0], c->OUT[1], &o);
}
static ndf_status c_ecc(fcase *c) {
  ndf_ecc_options o;
  ndf_ecc_options_init(&o);
  o.nthresholds = 16;
  o.batch_dims = 1;
  o.construction = NDF_ECC_T;
  return ndf_euler_characteristic_curve(c->ctx, c->IN, c->OUT[0], &o);
}
static ndf_status c_soft_ecc(fcase *c) {
  ndf_soft_ecc_options o;
  ndf_soft_ecc_options_init(&o);
  o.batch_dims = 1;
  return ndf_soft_ecc_forward(c->ctx, c->IN, c->AUX, c->OUT[0], &o);
}
static ndf_status c_ect(fcase *c) {
  ndf_ect_options o;
  ndf_ect_options_init(&o);
  o.nthresholds = 12;
  o.weighted = 1;
  return ndf_euler_characteristic_transform(c->ctx, c->IN, c->AUX, c->OUT[0], &o);
}
static ndf_status c_soft_ect(fcase *c) {
  ndf_soft_ect_options o;
  ndf_soft_ect_options_init(&o);
  return ndf_soft_ect_forward(c->ctx, c->IN, c->AUX, c->AUX2, c->OUT[0], &o);
}
static ndf_status c_sinkhorn(fcase *c) { /* create (it owns buffers), solve, destroy */
  ndf_sinkhorn_options o;
  ndf_sinkhorn_options_init(&o);
  o.n = 2;
  o.d = 12;
  o.cost_kind = NDF_OT_COST_GRID_LP;
  o.grid_ndim = 2;
  o.grid_shape[0] = 3;
  o.grid_shape[1] = 4;
  o.epsilon = 0.5;
  o.max_iter = 20;
  ndf_sinkhorn *s = NULL;
  ndf_status st = ndf_sinkhorn_create(c->ctx, &s, &o);
  if (st != NDF_OK) return st;
  ndf_sinkhorn_result res = {c->OUT[0], c->OUT[1], c->OUT[2], NULL, NULL, NULL};
  st = ndf_sinkhorn_solve(s, c->IN, c->AUX, &res);
  ndf_sinkhorn_destroy(s);
  return st;
}

static ndf_status c_gradient_magnitude(fcase *c) { /* three terms of three Gaussian passes, summed through scratch */
  ndf_gaussian_params g;
  ndf_gaussian_params_init(&g);
  g.sigma[0] = 1.0;
  ndf_filter_options o;
  ndf_filter_options_init(&o);
  o.mode = NDF_MODE_NEAREST;
  return ndf_gaussian_gradient_magnitude(c->ctx, c->IN, c->OUT[0], &g, &o);
}
static ndf_status c_correlate(fcase *c) { /* a host weights array, a zero tap left out */
  const double w[9] = {0.5, -1, 0, 2, 0.25, 1, 0, 3, -0.5};
  const int64_t ws[2] = {3, 3};
  ndf_array wa;
  ndf_array_init(&wa, (void *)w, NDF_DEVICE_CPU, NDF_FLOAT64, 2, ws);
  ndf_filter_options o;
  ndf_filter_options_init(&o);
  o.batch_dims = 1;
  o.mode = NDF_MODE_CONSTANT;
  o.cval = 3;
  return ndf_correlate(c->ctx, c->IN, c->OUT[0], &wa, &o);
}
static ndf_status c_percentile_q(fcase *c) {
  const double q[3] = {5, 50, 99.5};
  return ndf_percentile(c->ctx, c->IN, q, 3, c->OUT[0], 1);
}
static ndf_status c_histogram(fcase *c) { /* range from the data, weights, density, the edges */
  ndf_histogram_options o;
  ndf_histogram_options_init(&o);
  o.bins = 8;
  o.weights = c->AUX;
  o.density = 1;
  o.batch_dims = 1;
  return ndf_histogram(c->ctx, c->IN, c->OUT[0], c->OUT[1], &o);
}
static ndf_status c_zoom(fcase *c) { /* order 3 with the prefilter over grid-constant's padding, the tap tables */
  const double z[2] = {1.5, 0.8};
  ndf_interp_options o;
  ndf_interp_options_init(&o);
  o.mode = NDF_INTERP_GRID_CONSTANT;
  o.cval = 7;
  o.batch_dims = 1;
  return ndf_zoom(c->ctx, c->IN, c->OUT[0], 2, z, 1, &o);
}
static ndf_status c_rotate(fcase *c) { /* order 2 with the prefilter, per-point taps */
  ndf_interp_options o;
  ndf_interp_options_init(&o);
  o.order = 2;
  o.batch_dims = 1;
  return ndf_rotate(c->ctx, c->IN, c->OUT[0], 30.0, 1, 0, 0, &o);
}
static ndf_status c_percentile_window(fcase *c) { /* each image's 0.5th and 99.5th percentiles to [-1, 1] */
  ndf_window_options o;
  ndf_window_options_init(&o);
  o.out_min = -1;
  o.batch_dims = 1;
  return ndf_percentile_window(c->ctx, c->IN, c->OUT[0], 0.5, 99.5, &o);
}
static ndf_status c_minmax(fcase *c) {
  ndf_window_options o;
  ndf_window_options_init(&o);
  o.batch_dims = 1;
  return ndf_normalize_minmax(c->ctx, c->IN, c->OUT[0], &o);
}
static ndf_status c_zscore(fcase *c) { /* the statistics of a mask's voxels */
  return ndf_normalize_zscore(c->ctx, c->IN, c->AUX, c->OUT[0], 1);
}
static ndf_status c_equalize(fcase *c) { /* integer input: one bin per value, a mask */
  return ndf_equalize_hist(c->ctx, c->IN, c->AUX, c->OUT[0], 256, 1);
}
static ndf_status c_ssim(fcase *c) { /* Gaussian weights, the mean and the full map */
  ndf_ssim_options o;
  ndf_ssim_options_init(&o);
  o.win_size = 5;
  o.gaussian_weights = 1;
  o.sigma = 1.0;
  o.data_range = 255;
  o.batch_dims = 1;
  return ndf_structural_similarity(c->ctx, c->IN, c->AUX, c->OUT[0], c->OUT[1], &o);
}
static ndf_status c_hausdorff(fcase *c) { /* HD95 with anisotropic sampling */
  ndf_metrics_options o;
  ndf_metrics_options_init(&o);
  o.batch_dims = 1;
  o.percentile = 95;
  o.nsampling = 2;
  o.sampling[0] = 1.0;
  o.sampling[1] = 2.5;
  return ndf_hausdorff_distance(c->ctx, c->IN, c->AUX, c->OUT[0], &o);
}

/* ---- the sweep ------------------------------------------------------------------------------ */

static void poison_outputs(fcase *c) {
  for (int i = 0; i < c->nout; i++) tu_poison(c->out[i].base, c->out[i].bytes);
  tu_poison(c->counts, sizeof c->counts);
}

/* 1 when every output still holds its poison. */
static int outputs_untouched(const fcase *c) {
  for (int i = 0; i < c->nout; i++)
    if (tu_poison_check(c->out[i].base, c->out[i].bytes) >= 0) return 0;
  return tu_poison_check(c->counts, sizeof c->counts) < 0;
}

/* Copies the outputs (and counts) into a malloc'd snapshot. */
static void *snapshot(const fcase *c) {
  size_t total = sizeof c->counts;
  for (int i = 0; i < c->nout; i++) total += c->out[i].bytes;
  char *s = malloc(total), *p = s;
  assert_non_null(s);
  for (int i = 0; i < c->nout; i++) {
    memcpy(p, c->out[i].base, c->out[i].bytes);
    p += c->out[i].bytes;
  }
  memcpy(p, c->counts, sizeof c->counts);
  return s;
}

static int same_as(const fcase *c, const void *snap) {
  const char *p = snap;
  for (int i = 0; i < c->nout; i++) {
    if (memcmp(p, c->out[i].base, c->out[i].bytes) != 0) return 0;
    p += c->out[i].bytes;
  }
  return memcmp(p, c->counts, sizeof c->counts) == 0;
}

static long total_faults;

/* Points the call at its arrays: the host ones, or (CUDA run) device copies. */
static void bind(fcase *c) {
  c->IN = &c->in.arr;
  c->AUX = &c->aux.arr;
  c->AUX2 = &c->aux2.arr;
  for (int i = 0; i < c->nout; i++) c->OUT[i] = &c->out[i].arr;
#ifdef TU_FAULTS_CUDA
  if (c->host_only) return;
  tu_dev_upload(c->ctx, &c->din, &c->in);
  c->IN = &c->din.arr;
  if (c->aux_dev) {
    tu_dev_upload(c->ctx, &c->daux, &c->aux);
    c->AUX = &c->daux.arr;
  }
  for (int i = 0; i < c->nout; i++) {
    tu_dev_upload(c->ctx, &c->dout[i], &c->out[i]);
    c->OUT[i] = &c->dout[i].arr;
  }
#endif
}

static void unbind(fcase *c) {
#ifdef TU_FAULTS_CUDA
  if (c->host_only) return;
  tu_dev_free(c->ctx, &c->din);
  if (c->aux_dev) tu_dev_free(c->ctx, &c->daux);
  for (int i = 0; i < c->nout; i++) tu_dev_free(c->ctx, &c->dout[i]);
#else
  (void)c;
#endif
}

/* One call with fault number `at` armed (0: none) on outputs holding poison;
 * on the CUDA run the poison is uploaded first and the outputs read back after. */
static char call_msg[1024]; /* the call's message, taken before anything else runs on the context */

static ndf_status run_call(fcase *c, int kind, long at) {
  poison_outputs(c);
#ifdef TU_FAULTS_CUDA
  if (!c->host_only)
    for (int i = 0; i < c->nout; i++) {
      int64_t n = (int64_t)c->out[i].bytes;
      ndf_array h;
      ndf_array_init(&h, c->out[i].base, NDF_DEVICE_CPU, NDF_UINT8, 1, &n);
      assert_int_equal(ndf_array_copy(c->ctx, &c->dout[i].raw, &h), NDF_OK);
    }
#endif
  arm_kind(at, kind);
  ndf_status s = c->call(c);
  disarm();
  snprintf(call_msg, sizeof call_msg, "%s", s == NDF_OK ? "" : c->ctx ? ndf_errmsg(c->ctx) : ndf_last_error());
#ifdef TU_FAULTS_CUDA
  if (!c->host_only) {
    ndf_status q = ndf_ctx_synchronize(c->ctx);
    if (q != NDF_OK) printf("%s: ndf_ctx_synchronize after the call: %s\n", c->name, ndf_errmsg(c->ctx));
    assert_int_equal(q, NDF_OK);
    for (int i = 0; i < c->nout; i++) tu_dev_download(c->ctx, &c->dout[i], &c->out[i]);
  }
#endif
  return s;
}

static void sweep_kind(fcase *c, int kind) {
  /* the reference run, counting the faultable events of the call */
  ndf_status s = run_call(c, kind, 0);
  long calls = atomic_load(&fault_calls);
  if (s != NDF_OK) printf("%s: the reference call failed: %s\n", c->name, call_msg);
  assert_int_equal(s, NDF_OK);
  void *ref = snapshot(c);
  int absorbed = 0;
  for (long n = 1; n <= calls; n++) {
    s = run_call(c, kind, n);
    if (atomic_load(&fault_hits) == 0) continue; /* fewer events this time (threads) */
    total_faults++;
    if (s == NDF_OK) { /* absorbed (a fallback): the result must be right */
      absorbed++;
      if (!same_as(c, ref)) printf("%s: %s %ld of %ld failed, NDF_OK, wrong result\n", c->name, kind_name[kind], n, calls);
      assert_true(same_as(c, ref));
    } else if (kind != F_LAUNCH) {
      /* Out of memory, host or device, is NDF_ENOMEM (what ndforge preprocess retries on the CPU). */
      if (s != NDF_ENOMEM)
        printf("%s: %s %ld of %ld failed: %s (%s)\n", c->name, kind_name[kind], n, calls, ndf_status_name(s), call_msg);
      assert_int_equal(s, NDF_ENOMEM);
      /* A failed allocation leaves every output as it was.  A failed launch may
       * come after an earlier step of a composition wrote the output (the
       * output is then unspecified, docs/adr/0015): only the status and the
       * context's next call are checked. */
      if (!outputs_untouched(c))
        printf("%s: %s %ld of %ld failed (%s: %s) and an output was written\n", c->name, kind_name[kind], n, calls,
               ndf_status_name(s), call_msg);
      assert_true(outputs_untouched(c));
    }
    /* the context is still usable */
    s = run_call(c, kind, 0);
    if (s != NDF_OK || !same_as(c, ref))
      printf("%s: after failing %s %ld: %s %s\n", c->name, kind_name[kind], n, ndf_status_name(s), call_msg);
    assert_int_equal(s, NDF_OK);
    assert_true(same_as(c, ref));
  }
  printf("%-22s %4ld %s, each failed once (%d absorbed)\n", c->name, calls, kind_name[kind], absorbed);
  free(ref);
}

static void sweep(fcase *c) {
  bind(c);
  sweep_kind(c, F_HOST);
#ifdef TU_FAULTS_CUDA
  sweep_kind(c, F_DEVICE);
  sweep_kind(c, F_LAUNCH);
#endif
  unbind(c);
}

static void out_alloc(fcase *c, ndf_dtype dt, int ndim, const int64_t *shape) {
  assert_int_equal(tu_array_alloc(&c->out[c->nout++], dt, ndim, shape), 0);
}

static void case_free(fcase *c) {
  tu_array_free(&c->in);
  tu_array_free(&c->aux);
  tu_array_free(&c->aux2);
  for (int i = 0; i < c->nout; i++) tu_array_free(&c->out[i]);
}

/* A case on a 3-D input of the given shape (drawn from seed; binary: 0/1 values), with with_mask a
 * uint8 mask of it as aux (drawn from seed + 4), and one output. */
static void run_masked(ndf_ctx *ctx, const char *name, ndf_status (*call)(fcase *), ndf_dtype in_dt,
                       const int64_t *shape, int binary, int with_mask, uint64_t seed, ndf_dtype out_dt, int out_nd,
                       const int64_t *out_sh) {
  fcase c;
  memset(&c, 0, sizeof c);
  c.name = name;
  c.ctx = ctx;
  c.call = call;
  assert_int_equal(tu_array_alloc(&c.in, in_dt, 3, shape), 0);
  fill(&c.in, seed, binary);
  if (with_mask) {
    assert_int_equal(tu_array_alloc(&c.aux, NDF_UINT8, 3, shape), 0);
    fill(&c.aux, seed + 4, 1);
    c.aux_dev = 1;
  }
  out_alloc(&c, out_dt, out_nd, out_sh);
  sweep(&c);
  case_free(&c);
}

/* A case on a float32 (or binary uint8) 3-D input whose output has the input's shape and out_dt. */
static void run_filter(ndf_ctx *ctx, const char *name, ndf_status (*call)(fcase *), ndf_dtype in_dt, ndf_dtype out_dt,
                       int binary, int with_mask) {
  run_masked(ctx, name, call, in_dt, SH3, binary, with_mask, 7, out_dt, 3, SH3);
}

/* A case on a 3-D input of the given shape (a uint8 mask of it as aux with with_mask) and one output. */
static void run_shaped(ndf_ctx *ctx, const char *name, ndf_status (*call)(fcase *), ndf_dtype in_dt,
                       const int64_t *shape, int with_mask, const ndf_dtype *out_dt, const int *out_nd,
                       const int64_t (*out_sh)[3]) {
  run_masked(ctx, name, call, in_dt, shape, 0, with_mask, 37, out_dt[0], out_nd[0], out_sh[0]);
}

static void test_filters(void **state) {
  ndf_ctx *ctx = *state;
  run_filter(ctx, "grey_erosion", c_grey_erosion, NDF_FLOAT32, NDF_FLOAT32, 0, 0);
  run_filter(ctx, "grey_opening", c_grey_opening, NDF_FLOAT32, NDF_FLOAT32, 0, 0);
  run_filter(ctx, "morphological_laplace", c_laplace, NDF_INT16, NDF_INT16, 0, 0);
  run_filter(ctx, "median_filter", c_median, NDF_FLOAT32, NDF_FLOAT32, 0, 0);
  run_filter(ctx, "percentile_filter", c_percentile, NDF_UINT8, NDF_UINT8, 0, 0);
  run_filter(ctx, "reorient_ras", c_reorient, NDF_FLOAT32, NDF_FLOAT32, 0, 0);
  run_filter(ctx, "normalize_modality", c_normalize_mri, NDF_INT16, NDF_FLOAT32, 0, 1);
  /* reconstruction: in each 6x7 image a corridor that climbs from a marker at the bottom-left
   * and turns back against the raster order, so that the CPU backend needs its FIFO */
  fcase c;
  memset(&c, 0, sizeof c);
  c.name = "reconstruction";
  c.ctx = ctx;
  c.call = c_reconstruction;
  assert_int_equal(tu_array_alloc(&c.in, NDF_INT16, 3, SH3), 0);
  assert_int_equal(tu_array_alloc(&c.aux, NDF_INT16, 3, SH3), 0);
  for (int64_t i = 0; i < ndf_array_size(&c.in.arr); i++) {
    const int64_t y = i / 7 % 6, x = i % 7;
    const int open = y % 2 == 1 || (y % 4 == 0 && x == 0) || (y % 4 == 2 && x == 6);
    tu_set(&c.aux.arr, i, open ? 100 : 0);
    tu_set(&c.in.arr, i, y == 5 && x == 0 ? 100 : 0);
  }
  c.aux_dev = 1;
  out_alloc(&c, NDF_FLOAT64, 3, SH3);
  sweep(&c);
  case_free(&c);
  /* skull stripping: a bright ball (the brain) in a dark image; every allocation of the statistics, the
   * mesh, the passes and the voxelization */
  static const int64_t shb[3] = {12, 13, 14};
  memset(&c, 0, sizeof c);
  c.name = "skull_strip";
  c.ctx = ctx;
  c.call = c_skull_strip;
  assert_int_equal(tu_array_alloc(&c.in, NDF_UINT8, 3, shb), 0);
  for (int64_t i = 0; i < 12 * 13 * 14; i++) {
    const int64_t x = i / 182 - 6, y = i / 14 % 13 - 6, z = i % 14 - 7;
    tu_set(&c.in.arr, i, x * x + y * y + z * z <= 16 ? 100 : 3);
  }
  out_alloc(&c, NDF_UINT8, 3, shb);
  sweep(&c);
  case_free(&c);
  /* N4: values 1..200 inside a random mask, a fit on the shrunk grid and the field at full size */
  memset(&c, 0, sizeof c);
  c.name = "n4_bias_field_correction";
  c.ctx = ctx;
  c.call = c_n4;
  assert_int_equal(tu_array_alloc(&c.in, NDF_FLOAT32, 3, SH3), 0);
  fill(&c.in, 7, 0);
  for (int64_t i = 0; i < ndf_array_size(&c.in.arr); i++) tu_set(&c.in.arr, i, 1.0 + tu_get(&c.in.arr, i));
  assert_int_equal(tu_array_alloc(&c.aux, NDF_UINT8, 3, SH3), 0);
  fill(&c.aux, 11, 1);
  c.aux_dev = 1;
  out_alloc(&c, NDF_FLOAT32, 3, SH3);
  out_alloc(&c, NDF_FLOAT64, 3, SH3);
  sweep(&c);
  case_free(&c);
}

static void test_binary(void **state) {
  ndf_ctx *ctx = *state;
  run_filter(ctx, "binary_erosion", c_binary_erosion, NDF_UINT8, NDF_BOOL, 1, 1);
  run_filter(ctx, "binary_closing", c_binary_closing, NDF_UINT8, NDF_UINT8, 1, 0);
  run_filter(ctx, "binary_propagation", c_propagation, NDF_UINT8, NDF_BOOL, 1, 1);
  run_filter(ctx, "binary_fill_holes", c_fill_holes, NDF_UINT8, NDF_BOOL, 1, 0);
  run_filter(ctx, "binary_hit_or_miss", c_hit_or_miss, NDF_UINT8, NDF_BOOL, 1, 0);
  run_filter(ctx, "label", c_label, NDF_UINT8, NDF_INT32, 1, 0);
  {
    static const int64_t shl[3] = {2, 600, 6};
    fcase c;
    memset(&c, 0, sizeof c);
    c.name = "label (scan order)";
    c.ctx = ctx;
    c.call = c_label_scan;
    assert_int_equal(tu_array_alloc(&c.in, NDF_UINT8, 3, shl), 0);
    for (int64_t i = 0; i < 3600; i++) { /* teeth joined by column 2; sparse dots */
      const int64_t y = i / 6, x = i % 6;
      tu_set(&c.in.arr, i, (y % 2 == 0 && x < 3) || x == 2);
      tu_set(&c.in.arr, 3600 + i, i % 37 == 0);
    }
    out_alloc(&c, NDF_UINT8, 3, shl);
    sweep(&c);
    case_free(&c);
  }
#ifndef TU_FAULTS_CUDA
  /* iterate_structure: no context (it makes its own) */
  fcase c;
  memset(&c, 0, sizeof c);
  c.name = "iterate_structure";
  c.call = c_iterate;
  int64_t s3[2] = {3, 3}, s7[2] = {7, 7};
  assert_int_equal(tu_array_alloc(&c.in, NDF_UINT8, 2, s3), 0);
  const double cross[9] = {0, 1, 0, 1, 1, 1, 0, 1, 0};
  for (int i = 0; i < 9; i++) tu_set(&c.in.arr, i, cross[i]);
  out_alloc(&c, NDF_BOOL, 2, s7);
  sweep(&c);
  case_free(&c);
#endif
}

static void test_distance(void **state) {
  ndf_ctx *ctx = *state;
  const struct { const char *name; ndf_status (*call)(fcase *); ndf_dtype dt; } d[] = {
      {"distance_transform_edt", c_edt, NDF_FLOAT64},
      {"distance_transform_cdt", c_cdt, NDF_INT32},
      {"distance_transform_bf", c_bf, NDF_FLOAT64},
  };
  const int64_t ish[4] = {3, 5, 6, 7};
  for (size_t k = 0; k < sizeof d / sizeof d[0]; k++) {
    fcase c;
    memset(&c, 0, sizeof c);
    c.name = d[k].name;
    c.ctx = ctx;
    c.call = d[k].call;
    assert_int_equal(tu_array_alloc(&c.in, NDF_UINT8, 3, SH3), 0);
    fill(&c.in, 13, 1);
    out_alloc(&c, d[k].dt, 3, SH3);
#ifdef TU_FAULTS_CUDA
    if (d[k].call != c_cdt) /* cdt's indices are a CPU-backend feature (NDF_ENOTSUP on CUDA arrays) */
#endif
      out_alloc(&c, NDF_INT32, 4, ish);
    sweep(&c);
    case_free(&c);
  }
}

static void test_curves(void **state) {
  ndf_ctx *ctx = *state;
  const int64_t osh[2] = {5, 16};
  fcase c;
  memset(&c, 0, sizeof c);
  c.name = "ecc";
  c.ctx = ctx;
  c.call = c_ecc;
  assert_int_equal(tu_array_alloc(&c.in, NDF_FLOAT32, 3, SH3), 0);
  fill(&c.in, 17, 0);
  out_alloc(&c, NDF_INT64, 2, osh);
  sweep(&c);
  /* soft ECC: the thresholds are an input */
  c.name = "soft_ecc_forward";
  c.call = c_soft_ecc;
  const int64_t tsh[1] = {16};
  assert_int_equal(tu_array_alloc(&c.aux, NDF_FLOAT64, 1, tsh), 0);
  for (int k = 0; k < 16; k++) tu_set(&c.aux.arr, k, 12.5 * k);
  tu_array_free(&c.out[0]);
  c.nout = 0;
  out_alloc(&c, NDF_FLOAT64, 2, osh);
  sweep(&c);
  case_free(&c);
  /* ECT and soft ECT on a 2-D image: 3 directions */
  memset(&c, 0, sizeof c);
  c.name = "ect (weighted)";
  c.ctx = ctx;
  c.call = c_ect;
  assert_int_equal(tu_array_alloc(&c.in, NDF_FLOAT64, 2, SH2), 0);
  fill(&c.in, 19, 0);
  const int64_t dsh[2] = {3, 2}, esh[2] = {3, 12}, t12[1] = {12};
  assert_int_equal(tu_array_alloc(&c.aux, NDF_FLOAT64, 2, dsh), 0);
  const double dirs[6] = {1, 0, 0, 1, 0.6, 0.8};
  for (int i = 0; i < 6; i++) tu_set(&c.aux.arr, i, dirs[i]);
  assert_int_equal(tu_array_alloc(&c.aux2, NDF_FLOAT64, 1, t12), 0);
  for (int k = 0; k < 12; k++) tu_set(&c.aux2.arr, k, -6.0 + k);
  out_alloc(&c, NDF_FLOAT64, 2, esh);
  sweep(&c);
  c.name = "soft_ect_forward";
  c.call = c_soft_ect;
  sweep(&c);
  case_free(&c);
}

/* A case on a 3-D input in_dt with an aux (read beside it, on its device) and outputs given by dtype and shape. */
static void run_pair(ndf_ctx *ctx, const char *name, ndf_status (*call)(fcase *), ndf_dtype in_dt, int binary,
                     ndf_dtype aux_dt, int nout, const ndf_dtype *out_dt, const int *out_nd,
                     const int64_t (*out_sh)[3]) {
  fcase c;
  memset(&c, 0, sizeof c);
  c.name = name;
  c.ctx = ctx;
  c.call = call;
  assert_int_equal(tu_array_alloc(&c.in, in_dt, 3, SH3), 0);
  fill(&c.in, 23, binary);
  assert_int_equal(tu_array_alloc(&c.aux, aux_dt, 3, SH3), 0);
  fill(&c.aux, 29, binary || aux_dt == NDF_UINT8);
  c.aux_dev = 1;
  for (int i = 0; i < nout; i++) out_alloc(&c, out_dt[i], out_nd[i], out_sh[i]);
  sweep(&c);
  case_free(&c);
}

static void test_linear(void **state) {
  ndf_ctx *ctx = *state;
  run_filter(ctx, "gaussian_gradient_mag", c_gradient_magnitude, NDF_FLOAT32, NDF_FLOAT32, 0, 0);
  run_filter(ctx, "correlate", c_correlate, NDF_UINT8, NDF_INT16, 0, 0);
  static const int64_t zs[1][3] = {{5, 9, 6}}, rs[1][3] = {{5, 6, 7}};
  const ndf_dtype f32[1] = {NDF_FLOAT32};
  const int n3[1] = {3};
  run_shaped(ctx, "zoom", c_zoom, NDF_INT16, SH3, 0, f32, n3, zs);
  run_shaped(ctx, "rotate", c_rotate, NDF_FLOAT32, SH3, 0, f32, n3, rs);
}

static void test_intensity(void **state) {
  ndf_ctx *ctx = *state;
  fcase c;
  memset(&c, 0, sizeof c);
  c.name = "percentile";
  c.ctx = ctx;
  c.call = c_percentile_q;
  assert_int_equal(tu_array_alloc(&c.in, NDF_FLOAT32, 3, SH3), 0);
  fill(&c.in, 31, 0);
  const int64_t qsh[2] = {5, 3};
  out_alloc(&c, NDF_FLOAT64, 2, qsh);
  sweep(&c);
  case_free(&c);
  const ndf_dtype hdt[2] = {NDF_FLOAT64, NDF_FLOAT64};
  const int hnd[2] = {2, 2};
  const int64_t hsh[2][3] = {{5, 8}, {5, 9}};
  run_pair(ctx, "histogram", c_histogram, NDF_INT16, 0, NDF_FLOAT32, 2, hdt, hnd, hsh);
  const ndf_dtype edt[1] = {NDF_FLOAT64};
  const int end[1] = {3};
  const int64_t esh[1][3] = {{5, 6, 7}};
  run_pair(ctx, "equalize_hist", c_equalize, NDF_INT16, 0, NDF_UINT8, 1, edt, end, esh);
  run_pair(ctx, "equalize_hist int32", c_equalize, NDF_INT32, 0, NDF_UINT8, 1, edt, end, esh); /* a wide dtype: its range read first */
  run_pair(ctx, "equalize_hist float32", c_equalize, NDF_FLOAT32, 0, NDF_UINT8, 1, edt, end, esh);
  /* Images of 600 values: the percentiles' radix selection (its digit counts and key copies; the
   * 42-value images above are sorted in place), the windows' statistics and their buffers. */
  static const int64_t big[1][3] = {{3, 24, 25}}, qs[1][3] = {{3, 3, 0}};
  const ndf_dtype f64[1] = {NDF_FLOAT64}, f32[1] = {NDF_FLOAT32};
  const int n2[1] = {2}, n3[1] = {3};
  run_shaped(ctx, "percentile radix", c_percentile_q, NDF_FLOAT32, big[0], 0, f64, n2, qs);
  run_shaped(ctx, "percentile_window", c_percentile_window, NDF_INT16, big[0], 0, f32, n3, big);
  run_shaped(ctx, "normalize_minmax", c_minmax, NDF_FLOAT64, big[0], 0, f32, n3, big);
  run_shaped(ctx, "normalize_zscore", c_zscore, NDF_UINT16, big[0], 1, f64, n3, big);
}

static void test_metrics(void **state) {
  ndf_ctx *ctx = *state;
  const ndf_dtype sdt[2] = {NDF_FLOAT64, NDF_FLOAT32};
  const int snd[2] = {1, 3};
  const int64_t ssh[2][3] = {{5}, {5, 6, 7}};
  run_pair(ctx, "structural_similarity", c_ssim, NDF_FLOAT32, 0, NDF_UINT8, 2, sdt, snd, ssh);
  const ndf_dtype hdt[1] = {NDF_FLOAT64};
  const int hnd[1] = {1};
  const int64_t hsh[1][3] = {{5}};
  run_pair(ctx, "hausdorff_distance", c_hausdorff, NDF_UINT8, 1, NDF_UINT8, 1, hdt, hnd, hsh);
}

static void test_sinkhorn(void **state) {
  ndf_ctx *ctx = *state;
  fcase c;
  memset(&c, 0, sizeof c);
  c.name = "sinkhorn";
  c.ctx = ctx;
  c.host_only = 1; /* a solver's histograms and results are host arrays on every backend */
  c.call = c_sinkhorn;
  const int64_t hsh[2] = {2, 12}, nsh[1] = {2};
  assert_int_equal(tu_array_alloc(&c.in, NDF_FLOAT64, 2, hsh), 0);
  assert_int_equal(tu_array_alloc(&c.aux, NDF_FLOAT64, 2, hsh), 0);
  for (int i = 0; i < 24; i++) {
    tu_set(&c.in.arr, i, 1.0 / 12);
    tu_set(&c.aux.arr, i, (i % 12 + 1) / 78.0);
  }
  out_alloc(&c, NDF_FLOAT64, 1, nsh);
  out_alloc(&c, NDF_FLOAT64, 1, nsh);
  out_alloc(&c, NDF_FLOAT64, 2, hsh);
  sweep(&c);
  case_free(&c);
}

/* A context that cannot be made returns ENOMEM and no context. */
static void test_context(void **state) {
  (void)state;
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  o.backend = NDF_BACKEND_CPU;
  o.cache_disable = 1;
  for (long n = 1; n <= 4; n++) {
    ndf_ctx *ctx = (ndf_ctx *)&o;
    arm(n);
    ndf_status s = ndf_ctx_create(&ctx, &o);
    disarm();
    if (atomic_load(&fault_hits) == 0) {
      assert_int_equal(s, NDF_OK);
      ndf_ctx_destroy(ctx);
      break;
    }
    total_faults++;
    assert_int_equal(s, NDF_ENOMEM);
    assert_null(ctx);
  }
}

/* ---- the op families' per-context state (ADR 0020) ----------------------------------------------- */

/* Two families: their releases and reports counted; a report returns the status set in *_fail
 * once (with a message naming the family), then NDF_OK. */
static int a_releases, b_releases, a_reports, b_reports;
static ndf_status a_fail, b_fail;
static void a_release(ndf_ctx *ctx, void *st) { (void)ctx, (void)st, a_releases++; }
static void b_release(ndf_ctx *ctx, void *st) { (void)ctx, (void)st, b_releases++; }
static ndf_status a_report(ndf_ctx *ctx, void *st) {
  (void)st;
  a_reports++;
  const ndf_status s = a_fail;
  a_fail = NDF_OK;
  return s == NDF_OK ? NDF_OK : ndf__error(ctx, s, "family a: a deferred check failed");
}
static ndf_status b_report(ndf_ctx *ctx, void *st) {
  (void)st;
  b_reports++;
  const ndf_status s = b_fail;
  b_fail = NDF_OK;
  return s == NDF_OK ? NDF_OK : ndf__error(ctx, s, "family b: a deferred check failed");
}
static const ndf__family fam_a = {"a", 300, a_release, a_report};
static const ndf__family fam_b = {"b", 40, b_release, b_report};
static ndf__family fam_plain[NDF__FAMILY_SLOTS + 1]; /* no callbacks (set up in the test) */

static ndf_ctx *cpu_context(void) {
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  o.backend = NDF_BACKEND_CPU;
  o.cache_disable = 1;
  ndf_ctx *ctx = NULL;
  assert_int_equal(ndf_ctx_create(&ctx, &o), NDF_OK);
  return ctx;
}

static int all_zero(const void *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (((const unsigned char *)p)[i]) return 0;
  return 1;
}

typedef struct race_arg {
  ndf_ctx *ctx;
  void *got;
} race_arg;
static void *race(void *p) {
  race_arg *a = p;
  a->got = ndf__family_state(a->ctx, &fam_b);
  return NULL;
}

/* Created once, zeroed, on the first call (its allocation failing: NULL, no message, and the
 * next call creates it); later calls allocate nothing and return the same state; the
 * deferred-check hook (ndf_ctx_synchronize) asks each family in the order their states were
 * made and returns the first failure, the other family's on the next synchronize; a host
 * copy calls no hook; the context's destroy releases each state once.  A context made at a
 * destroyed one's address starts without state; threads creating a state at once get one;
 * more families than slots: NULL. */
static void test_family_state(void **state) {
  (void)state;
  ndf_ctx *ctx = cpu_context();
  arm(1);
  void *p = ndf__family_state(ctx, &fam_a);
  disarm();
  assert_int_equal(atomic_load(&fault_hits), 1);
  total_faults++;
  assert_null(p);
  assert_string_equal(ndf_errmsg(ctx), "");
  arm(0);
  p = ndf__family_state(ctx, &fam_a);
  disarm();
  assert_non_null(p);
  assert_int_equal(atomic_load(&fault_calls), 1);
  assert_true(all_zero(p, fam_a.size));
  arm(0);
  assert_ptr_equal(ndf__family_state(ctx, &fam_a), p);
  disarm();
  assert_int_equal(atomic_load(&fault_calls), 0); /* nothing allocated once it is there */
  memset(p, 0x5a, fam_a.size);

  assert_int_equal(ndf_ctx_synchronize(ctx), NDF_OK);
  assert_int_equal(a_reports, 1);
  void *q = ndf__family_state(ctx, &fam_b);
  assert_non_null(q);
  assert_ptr_not_equal(p, q);
  a_fail = NDF_EINVAL;
  b_fail = NDF_EIO;
  assert_int_equal(ndf_ctx_synchronize(ctx), NDF_EINVAL);
  assert_string_equal(ndf_errmsg(ctx), "family a: a deferred check failed");
  assert_int_equal(b_reports, 0); /* b keeps its failure for the next report */
  assert_int_equal(ndf_ctx_synchronize(ctx), NDF_EIO);
  assert_string_equal(ndf_errmsg(ctx), "family b: a deferred check failed");
  assert_int_equal(ndf_ctx_synchronize(ctx), NDF_OK);
  assert_int_equal(a_reports, 4);
  assert_int_equal(b_reports, 2);
  tu_array src, dst;
  const int64_t sh[1] = {4};
  assert_int_equal(tu_array_alloc(&src, NDF_UINT8, 1, sh), 0);
  assert_int_equal(tu_array_alloc(&dst, NDF_UINT8, 1, sh), 0);
  a_fail = NDF_EINVAL;
  assert_int_equal(ndf_array_copy(ctx, &dst.arr, &src.arr), NDF_OK); /* host to host: no stream to wait for */
  a_fail = NDF_OK;
  tu_array_free(&src);
  tu_array_free(&dst);
  const uintptr_t at = (uintptr_t)ctx;
  ndf_ctx_destroy(ctx);
  assert_int_equal(a_releases, 1);
  assert_int_equal(b_releases, 1);

  /* a context at the address of the destroyed one (the allocator's usual choice) has no state yet */
  ctx = cpu_context();
  printf("family state: the next context %s the destroyed one's address\n",
         (uintptr_t)ctx == at ? "took" : "did not take");
  p = ndf__family_state(ctx, &fam_a);
  assert_non_null(p);
  assert_true(all_zero(p, fam_a.size));
  ndf_ctx_destroy(ctx);
  assert_int_equal(a_releases, 2);

  /* threads asking at once: one state */
  ctx = cpu_context();
  race_arg ra[4];
  pthread_t th[4];
  for (int i = 0; i < 4; i++) {
    ra[i].ctx = ctx;
    assert_int_equal(pthread_create(&th[i], NULL, race, &ra[i]), 0);
  }
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < 4; i++) assert_ptr_equal(ra[i].got, ra[0].got);
  assert_non_null(ra[0].got);
  assert_ptr_equal(ndf__family_state(ctx, &fam_b), ra[0].got);
  /* every slot taken: the next family gets none */
  for (int i = 0; i < NDF__FAMILY_SLOTS; i++) {
    fam_plain[i].name = "plain";
    fam_plain[i].size = (size_t)i * 8;
  }
  fam_plain[NDF__FAMILY_SLOTS] = fam_plain[0];
  for (int i = 0; i < NDF__FAMILY_SLOTS - 1; i++) assert_non_null(ndf__family_state(ctx, &fam_plain[i]));
  assert_null(ndf__family_state(ctx, &fam_plain[NDF__FAMILY_SLOTS]));
  assert_int_equal(ndf_ctx_synchronize(ctx), NDF_OK);
  ndf_ctx_destroy(ctx);
  assert_int_equal(b_releases, 2);
}

/* The device-memory limit (ndf_ctx_options.device_memory_limit, ADR 0031).  On every build:
 * its accounting (white box, on made-up addresses), its message, a failed record's host
 * allocation giving the bytes back, and a CPU context's host arrays not counted.  On CUDA:
 * ndf_array_alloc refused past the limit with NDF_ENOMEM and accepted again after a free; an
 * op whose scratch would pass the limit fails with NDF_ENOMEM, writes nothing and gives its
 * scratch back; with room it gives the unlimited context's result. */
static void test_memory_limit(void **state) {
  (void)state;
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  o.backend = NDF_BACKEND_CPU;
  o.cache_disable = 1;
  o.device_memory_limit = 1000;
  ndf_ctx *ctx;
  assert_int_equal(ndf_ctx_create(&ctx, &o), NDF_OK);
  assert_int_equal(ndf__mem_charge(ctx, "probe", 600), NDF_OK);
  assert_int_equal(ndf__mem_record(ctx, 0x10000, 600), NDF_OK);
  assert_int_equal(ndf__mem_charge(ctx, "probe", 401), NDF_ENOMEM);
  assert_non_null(strstr(ndf_errmsg(ctx), "probe: 401 bytes of device memory would pass the context's limit"));
  assert_non_null(strstr(ndf_errmsg(ctx), "device_memory_limit 1000 bytes, 600 in use"));
  assert_int_equal(ndf__mem_charge(ctx, "probe", (size_t)-1), NDF_ENOMEM); /* no wrap-around */
  assert_int_equal(ndf__mem_charge(ctx, "probe", 400), NDF_OK);
  arm(1); /* the record's host allocation fails: the bytes go back */
  assert_int_equal(ndf__mem_record(ctx, 0x20000, 400), NDF_ENOMEM);
  disarm();
  assert_int_equal(ctx->mem_live, 600);
  ndf__mem_forget(ctx, 0x30000); /* unknown: nothing */
  assert_int_equal(ctx->mem_live, 600);
  ndf__mem_forget(ctx, 0x10000);
  assert_int_equal(ctx->mem_live, 0);
  assert_int_equal(ndf__mem_charge(ctx, "probe", 1000), NDF_OK);
  ndf__mem_uncharge(ctx, 1000);
  /* many live records across the buckets, freed in another order */
  for (int i = 0; i < 200; i++) {
    assert_int_equal(ndf__mem_charge(ctx, "probe", 5), NDF_OK);
    assert_int_equal(ndf__mem_record(ctx, (CUdeviceptr)(0x100000 + 512 * i), 5), NDF_OK);
  }
  assert_int_equal(ctx->mem_live, 1000);
  for (int i = 199; i >= 0; i -= 2) ndf__mem_forget(ctx, (CUdeviceptr)(0x100000 + 512 * i));
  assert_int_equal(ctx->mem_live, 500);
  /* host arrays are not device memory */
  ndf_array h;
  const int64_t big[1] = {4096};
  assert_int_equal(ndf_array_alloc(ctx, &h, NDF_DEVICE_CPU, NDF_FLOAT64, 1, big), NDF_OK);
  ndf_array_free(ctx, &h);
  assert_int_equal(ctx->mem_live, 500);
  ndf_ctx_destroy(ctx); /* frees the 100 records left (LeakSanitizer) */
#ifdef TU_FAULTS_CUDA
  o.backend = NDF_BACKEND_CUDA;
  o.device_memory_limit = 1 << 20;
  assert_int_equal(ndf_ctx_create(&ctx, &o), NDF_OK);
  ndf_array a, b, c;
  const int64_t n600k[1] = {600 << 10}, n2m[1] = {2 << 20};
  assert_int_equal(ndf_array_alloc(ctx, &a, NDF_DEVICE_CUDA, NDF_UINT8, 1, n2m), NDF_ENOMEM);
  assert_non_null(strstr(ndf_errmsg(ctx), "device_memory_limit 1048576 bytes"));
  assert_int_equal(ndf_array_alloc(ctx, &a, NDF_DEVICE_CUDA, NDF_UINT8, 1, n600k), NDF_OK);
  assert_int_equal(ndf_array_alloc(ctx, &b, NDF_DEVICE_CUDA, NDF_UINT8, 1, n600k), NDF_ENOMEM);
  ndf_array_free(ctx, &a);
  assert_int_equal(ctx->mem_live, 0);
  assert_int_equal(ndf_array_alloc(ctx, &b, NDF_DEVICE_CUDA, NDF_UINT8, 1, n600k), NDF_OK);
  ndf_array_free(ctx, &b);
  ndf_ctx_destroy(ctx);
  /* an op's scratch: gaussian_gradient_magnitude sums three terms through scratch */
  const int64_t sh[3] = {24, 20, 16};
  const size_t vbytes = 24 * 20 * 16 * sizeof(float);
  o.device_memory_limit = 2 * vbytes + 64;
  assert_int_equal(ndf_ctx_create(&ctx, &o), NDF_OK);
  tu_array hin, hout, want;
  assert_int_equal(tu_array_alloc(&hin, NDF_FLOAT32, 3, sh), 0);
  assert_int_equal(tu_array_alloc(&hout, NDF_FLOAT32, 3, sh), 0);
  assert_int_equal(tu_array_alloc(&want, NDF_FLOAT32, 3, sh), 0);
  for (int64_t e = 0; e < 24 * 20 * 16; e++) ((float *)hin.arr.data)[e] = (float)((e * 7919) % 1013) / 101.0f;
  assert_int_equal(ndf_array_alloc(ctx, &a, NDF_DEVICE_CUDA, NDF_FLOAT32, 3, sh), NDF_OK);
  assert_int_equal(ndf_array_alloc(ctx, &b, NDF_DEVICE_CUDA, NDF_FLOAT32, 3, sh), NDF_OK);
  assert_int_equal(ndf_array_copy(ctx, &a, &hin.arr), NDF_OK);
  memset(hout.arr.data, 0x7f, vbytes);
  assert_int_equal(ndf_array_copy(ctx, &b, &hout.arr), NDF_OK);
  fcase fc = {.ctx = ctx, .IN = &a, .OUT = {&b}};
  assert_int_equal(c_gradient_magnitude(&fc), NDF_ENOMEM);
  assert_non_null(strstr(ndf_errmsg(ctx), "device_memory_limit"));
  assert_int_equal(ndf_ctx_synchronize(ctx), NDF_OK);
  assert_int_equal(ctx->mem_live, 2 * vbytes);
  assert_int_equal(ndf_array_copy(ctx, &want.arr, &b), NDF_OK);
  assert_memory_equal(want.arr.data, hout.arr.data, vbytes); /* nothing written */
  ctx->opt.device_memory_limit = 8 * vbytes; /* room for the scratch */
  assert_int_equal(c_gradient_magnitude(&fc), NDF_OK);
  assert_int_equal(ndf_array_copy(ctx, &hout.arr, &b), NDF_OK);
  assert_int_equal(ctx->mem_live, 2 * vbytes);
  /* the same call on a context without a limit */
  ndf_ctx *free_ctx = *state ? (ndf_ctx *)*state : NULL;
  assert_non_null(free_ctx);
  assert_int_equal(ndf_array_alloc(free_ctx, &c, NDF_DEVICE_CUDA, NDF_FLOAT32, 3, sh), NDF_OK);
  ndf_array_free(ctx, &b);
  assert_int_equal(ndf_array_alloc(free_ctx, &b, NDF_DEVICE_CUDA, NDF_FLOAT32, 3, sh), NDF_OK);
  assert_int_equal(ndf_array_copy(free_ctx, &c, &hin.arr), NDF_OK);
  fcase fu = {.ctx = free_ctx, .IN = &c, .OUT = {&b}};
  assert_int_equal(c_gradient_magnitude(&fu), NDF_OK);
  assert_int_equal(ndf_array_copy(free_ctx, &want.arr, &b), NDF_OK);
  assert_memory_equal(want.arr.data, hout.arr.data, vbytes);
  ndf_array_free(free_ctx, &b);
  ndf_array_free(free_ctx, &c);
  ndf_array_free(ctx, &a);
  assert_int_equal(ctx->mem_live, 0);
  ndf_ctx_destroy(ctx);
  tu_array_free(&hin);
  tu_array_free(&hout);
  tu_array_free(&want);
  /* an op that grows a per-context workspace holding the context's lock (ECC's 2-D strips): the
   * accounting takes a lock of its own; the limited context's curves are the unlimited one's */
  o.device_memory_limit = 256 << 20;
  assert_int_equal(ndf_ctx_create(&ctx, &o), NDF_OK);
  const int64_t osh[2] = {5, 16};
  tu_array ein, eout[2];
  assert_int_equal(tu_array_alloc(&ein, NDF_FLOAT32, 3, SH3), 0);
  fill(&ein, 17, 0);
  ndf_ctx *ectx[2] = {ctx, free_ctx};
  for (int k = 0; k < 2; k++) {
    ndf_array di, dout;
    assert_int_equal(tu_array_alloc(&eout[k], NDF_INT64, 2, osh), 0);
    assert_int_equal(ndf_array_alloc(ectx[k], &di, NDF_DEVICE_CUDA, NDF_FLOAT32, 3, SH3), NDF_OK);
    assert_int_equal(ndf_array_alloc(ectx[k], &dout, NDF_DEVICE_CUDA, NDF_INT64, 2, osh), NDF_OK);
    assert_int_equal(ndf_array_copy(ectx[k], &di, &ein.arr), NDF_OK);
    fcase ec = {.ctx = ectx[k], .IN = &di, .OUT = {&dout}};
    assert_int_equal(c_ecc(&ec), NDF_OK);
    assert_int_equal(ndf_array_copy(ectx[k], &eout[k].arr, &dout), NDF_OK);
    ndf_array_free(ectx[k], &di);
    ndf_array_free(ectx[k], &dout);
  }
  assert_memory_equal(eout[0].arr.data, eout[1].arr.data, 5 * 16 * sizeof(int64_t));
  ndf_ctx_destroy(ctx);
  tu_array_free(&ein);
  tu_array_free(&eout[0]);
  tu_array_free(&eout[1]);
#endif
}

static void test_summary(void **state) {
  (void)state;
  printf("%ld injected allocation failures\n", total_faults);
  assert_true(total_faults > 0);
}

static int group_setup(void **state) {
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
#ifdef TU_FAULTS_CUDA
  o.backend = NDF_BACKEND_CUDA;
#else
  o.backend = NDF_BACKEND_CPU;
#endif
  o.cache_disable = 1;
  o.cpu_threads = 2;
  ndf_ctx *ctx = NULL;
  if (ndf_ctx_create(&ctx, &o) != NDF_OK) return -1;
#ifdef TU_FAULTS_CUDA
  swap_driver_entries();
#endif
  *state = ctx;
  return 0;
}

static int group_teardown(void **state) {
  ndf_ctx_destroy(*state);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_context),   cmocka_unit_test(test_filters), cmocka_unit_test(test_binary),
      cmocka_unit_test(test_distance),  cmocka_unit_test(test_curves),  cmocka_unit_test(test_sinkhorn),
      cmocka_unit_test(test_linear),    cmocka_unit_test(test_intensity), cmocka_unit_test(test_metrics),
      cmocka_unit_test(test_family_state), cmocka_unit_test(test_memory_limit),
      cmocka_unit_test(test_summary),
  };
#ifdef TU_FAULTS_CUDA
  if (!tu_have_cuda()) return 77;
#endif
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
