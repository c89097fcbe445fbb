/*
 * bench_binary.c -- benchmark of ndforge's binary morphology and label on the
 * GPU: the workloads of issue 3 plus label, on a 256^3 bool image of random
 * blobs (the generator of bench/peers_binary.py: coarse uniform noise every
 * 16 voxels from splitmix64, trilinear, above 0).
 *
 * This file uses only the public API of ndforge, plus CUDA driver calls for
 * events and a host-function gate, loaded with dlopen (as bench_grey.c).
 * For each workload:
 *   check  the first GPU result against the CPU backend, bit for bit;
 *   cold   the first call in a context with an empty cache directory
 *          (compiles included), host clock around call + synchronize;
 *   warm   median CUDA-event time of one call: erosion calls are queued
 *          behind a gate so the events measure the GPU; fill_holes and
 *          label may read a flag or the counts back inside the call, so they
 *          are timed one call at a time (the host's part then counts);
 *   cpu    one run of the CPU backend (OpenMP).
 * One JSON object per workload on stdout; --human adds a line on stderr.
 * Exit: 0 ok, 1 failure or wrong result, 2 usage, 77 no CUDA device.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <dlfcn.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ndforge.h"

#define PEAK_BYTES_PER_S 4.19e12
#define WARMUPS 5
#define GATE_BATCH 20

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

typedef int CUresult;
typedef struct CUevent_st *CUevent;
typedef struct CUstream_st *CUstream;
typedef void (*CUhostFn)(void *user);
static struct {
  void *lib;
  CUresult (*EventCreate)(CUevent *, unsigned);
  CUresult (*EventRecord)(CUevent, CUstream);
  CUresult (*EventSynchronize)(CUevent);
  CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
  CUresult (*LaunchHostFunc)(CUstream, CUhostFn, void *);
} cu;

static int cu_load(void) {
  cu.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!cu.lib) return -1;
  *(void **)&cu.EventCreate = dlsym(cu.lib, "cuEventCreate");
  *(void **)&cu.EventRecord = dlsym(cu.lib, "cuEventRecord");
  *(void **)&cu.EventSynchronize = dlsym(cu.lib, "cuEventSynchronize");
  *(void **)&cu.EventElapsedTime = dlsym(cu.lib, "cuEventElapsedTime");
  *(void **)&cu.LaunchHostFunc = dlsym(cu.lib, "cuLaunchHostFunc");
  return cu.EventCreate && cu.EventRecord && cu.EventSynchronize && cu.EventElapsedTime && cu.LaunchHostFunc ? 0 : -1;
}

static atomic_int g_release;
static void gate_wait(void *p) {
  (void)p;
  double t0 = now_ms();
  struct timespec nap = {0, 20000};
  while (!atomic_load(&g_release) && now_ms() - t0 < 5000) nanosleep(&nap, NULL);
}

/* ---- the input: peers_binary.py:blobs ---------------------------------------- */

static uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

static void blobs(uint8_t *out, int64_t n0, int64_t n1, int64_t n2, uint64_t seed) {
  const int cell = 16;
  int64_t g0 = n0 / cell + 2, g1 = n1 / cell + 2, g2 = n2 / cell + 2;
  double *c = malloc((size_t)(g0 * g1 * g2) * sizeof *c);
  for (int64_t i = 0; i < g0 * g1 * g2; i++) c[i] = (double)(splitmix64(seed + (uint64_t)i) >> 11) * 0x1p-53 * 2.0 - 1.0;
  for (int64_t z = 0; z < n0; z++)
    for (int64_t y = 0; y < n1; y++)
      for (int64_t x = 0; x < n2; x++) {
        const double fz = (double)(z % cell) / cell, fy = (double)(y % cell) / cell, fx = (double)(x % cell) / cell;
        const int64_t z0 = z / cell, y0 = y / cell, x0 = x / cell;
        double v = 0;
        for (int dz = 0; dz < 2; dz++)
          for (int dy = 0; dy < 2; dy++)
            for (int dx = 0; dx < 2; dx++) {
              double w = (dz ? fz : 1 - fz) * (dy ? fy : 1 - fy) * (dx ? fx : 1 - fx);
              v += w * c[((z0 + dz) * g1 + (y0 + dy)) * g2 + (x0 + dx)];
            }
        out[(z * n1 + y) * n2 + x] = v > 0.0;
      }
  free(c);
}

/* ---- workloads -------------------------------------------------------------------- */

typedef struct workload {
  const char *name;
  int op; /* 0 erosion, 1 fill_holes, 2 label */
  int iterations;
} workload;

static const workload WORKLOADS[] = {
    {"binary_erosion_bool_256x256x256_cross_it1", 0, 1},
    {"binary_erosion_bool_256x256x256_cross_it10", 0, 10},
    {"binary_fill_holes_bool_256x256x256_blobs", 1, -1},
    {"label_bool_256x256x256_cross", 2, 0},
};

static ndf_status call(ndf_ctx *ctx, const workload *w, const ndf_array *in, ndf_array *out) {
  ndf_binary_options o;
  ndf_binary_options_init(&o);
  o.iterations = w->iterations;
  if (w->op == 0) return ndf_binary_erosion(ctx, in, out, &o);
  if (w->op == 1) return ndf_binary_fill_holes(ctx, in, out, &o);
  int64_t nf;
  return ndf_label(ctx, in, out, NULL, 0, &nf);
}

static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  int human = 0, reps = 50;
  const char *only = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--human")) human = 1;
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    else {
      fprintf(stderr, "usage: bench_binary [--human] [--reps N] [--only SUBSTRING]\n");
      return 2;
    }
  }
  if (reps < 1) reps = 1;
  char cachedir[] = "/tmp/ndf-bench-binary-XXXXXX";
  if (!mkdtemp(cachedir)) return 1;
  ndf_ctx_options co;
  ndf_ctx_options_init(&co);
  co.cache_dir = cachedir;
  ndf_ctx *ctx = NULL;
  if (ndf_ctx_create(&ctx, &co) != NDF_OK || !ndf_ctx_has_cuda(ctx) || cu_load() != 0) {
    fprintf(stderr, "bench_binary: no usable CUDA device\n");
    ndf_ctx_destroy(ctx);
    rmdir(cachedir);
    return 77;
  }
  ndf_ctx_info info;
  ndf_ctx_get_info(ctx, &info);
  CUstream stream = (CUstream)ndf_ctx_stream(ctx);
  const int64_t shape[3] = {256, 256, 256}, n = 256 * 256 * 256;
  uint8_t *h_in = malloc((size_t)n), *h_out = malloc((size_t)n * 4), *h_ref = malloc((size_t)n * 4);
  blobs(h_in, 256, 256, 256, 2026);
  ndf_array hin, din, dout;
  ndf_array_init(&hin, h_in, NDF_DEVICE_CPU, NDF_BOOL, 3, shape);
  if (ndf_array_alloc(ctx, &din, NDF_DEVICE_CUDA, NDF_BOOL, 3, shape) != NDF_OK ||
      ndf_array_alloc(ctx, &dout, NDF_DEVICE_CUDA, NDF_INT32, 3, shape) != NDF_OK ||
      ndf_array_copy(ctx, &din, &hin) != NDF_OK) {
    fprintf(stderr, "bench_binary: %s\n", ndf_errmsg(ctx));
    return 1;
  }
  char date[32];
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
  int failures = 0;
  CUevent ev[2 * GATE_BATCH];
  for (int i = 0; i < 2 * GATE_BATCH; i++) cu.EventCreate(&ev[i], 0);
  for (size_t k = 0; k < sizeof WORKLOADS / sizeof WORKLOADS[0]; k++) {
    const workload *w = &WORKLOADS[k];
    if (only && !strstr(w->name, only)) continue;
    const ndf_dtype odt = w->op == 2 ? NDF_INT32 : NDF_BOOL;
    const size_t osz = w->op == 2 ? 4 : 1;
    ndf_array out = dout, hout, href;
    out.dtype = odt;
    for (int d = 0; d < 3; d++) out.strides[d] = dout.strides[d];
    ndf_array_init(&hout, h_out, NDF_DEVICE_CPU, odt, 3, shape);
    ndf_array_init(&href, h_ref, NDF_DEVICE_CPU, odt, 3, shape);
    /* cpu, then cold + check */
    double t0 = now_ms();
    ndf_status s = call(ctx, w, &hin, &href);
    double cpu_ms = now_ms() - t0;
    t0 = now_ms();
    if (s == NDF_OK) s = call(ctx, w, &din, &out);
    if (s == NDF_OK) s = ndf_ctx_synchronize(ctx);
    double cold_ms = now_ms() - t0;
    if (s == NDF_OK) s = ndf_array_copy(ctx, &hout, &out);
    if (s != NDF_OK) {
      printf("{\"bench\": \"bench_binary\", \"name\": \"%s\", \"error\": \"%s\"}\n", w->name, ndf_errmsg(ctx));
      failures++;
      continue;
    }
    const int ok = memcmp(h_out, h_ref, (size_t)n * osz) == 0;
    failures += !ok;
    /* warm */
    const int gated = w->op == 0;
    for (int i = 0; i < WARMUPS; i++) call(ctx, w, &din, &out);
    ndf_ctx_synchronize(ctx);
    double *tm_ = malloc((size_t)reps * sizeof *tm_);
    for (int done = 0; done < reps;) {
      int nb = reps - done < GATE_BATCH ? reps - done : GATE_BATCH;
      atomic_store(&g_release, 0);
      if (gated) cu.LaunchHostFunc(stream, gate_wait, NULL);
      for (int i = 0; i < nb; i++) {
        cu.EventRecord(ev[2 * i], stream);
        call(ctx, w, &din, &out);
        cu.EventRecord(ev[2 * i + 1], stream);
        if (!gated) cu.EventSynchronize(ev[2 * i + 1]);
      }
      atomic_store(&g_release, 1);
      ndf_ctx_synchronize(ctx);
      for (int i = 0; i < nb; i++) {
        float ms = 0;
        cu.EventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]);
        tm_[done + i] = ms;
      }
      done += nb;
    }
    qsort(tm_, (size_t)reps, sizeof *tm_, cmpd);
    const double warm = tm_[reps / 2];
    free(tm_);
    const double bytes = (double)n * (1 + (double)osz);
    printf("{\"bench\": \"bench_binary\", \"name\": \"%s\", \"peer\": \"ndforge\", \"device\": \"%s\", \"date\": \"%s\", "
           "\"warm_ms\": %.5f, \"cold_ms\": %.3f, \"cpu_ms\": %.3f, \"reps\": %d, \"warm_timing\": \"%s\", "
           "\"bytes\": %.0f, \"floor_ms\": %.5f, \"gbps\": %.1f, \"check\": \"%s\"}\n",
           w->name, info.device_name, date, warm, cold_ms, cpu_ms, reps,
           gated ? "events, calls queued behind a gate" : "events, one call at a time", bytes,
           bytes / PEAK_BYTES_PER_S * 1e3, bytes / (warm * 1e-3) / 1e9, ok ? "equal to the CPU backend" : "MISMATCH");
    fflush(stdout);
    if (human)
      fprintf(stderr, "%-46s warm %8.4f ms  cold %8.1f ms  cpu %8.1f ms  %s\n", w->name, warm, cold_ms, cpu_ms,
              ok ? "ok" : "MISMATCH");
  }
  ndf_array_free(ctx, &din);
  ndf_array_free(ctx, &dout);
  ndf_cache_clear(ctx, NULL);
  ndf_ctx_destroy(ctx);
  rmdir(cachedir);
  free(h_in);
  free(h_out);
  free(h_ref);
  return failures ? 1 : 0;
}
