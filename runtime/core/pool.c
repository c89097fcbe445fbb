/*
 * pool.c -- memory the runtime needs for itself: stream-ordered device
 * scratch (from the context's memory pool on its stream), small read-only
 * device tables (structuring elements) cached by content for the context's
 * life, and the CPU backend's per-thread host buffers.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define NDF__MAX_TABLES 256

struct ndf__table_entry {
  ndf__table_entry *next;
  uint64_t hash;
  size_t bytes;
  void *host; /* copy of the content, compared on lookup */
  CUdeviceptr dev;
};

ndf_status ndf__scratch_alloc(ndf_ctx *ctx, size_t bytes, CUdeviceptr *out) {
  const ndf__cu_api *cu = ndf__cu(NULL);
  CUresult r = ctx->pool ? cu->cuMemAllocFromPoolAsync(out, bytes ? bytes : 1, ctx->pool, ctx->stream)
                         : cu->cuMemAllocAsync(out, bytes ? bytes : 1, ctx->stream);
  return r == CUDA_SUCCESS ? NDF_OK : ndf__cuda_error(ctx, "scratch allocation", r);
}

void ndf__scratch_free(ndf_ctx *ctx, CUdeviceptr p) {
  if (p) ndf__cu(NULL)->cuMemFreeAsync(p, ctx->stream);
}

ndf_status ndf__device_table(ndf_ctx *ctx, const void *data, size_t bytes, CUdeviceptr *out) {
  uint64_t h = ndf__hash_fnv1a64(data, bytes, NDF__FNV_SEED);
  pthread_mutex_lock(&ctx->lock);
  int count = 0;
  for (ndf__table_entry *e = ctx->tables; e; e = e->next, count++) {
    if (e->hash == h && e->bytes == bytes && memcmp(e->host, data, bytes) == 0) {
      *out = e->dev;
      pthread_mutex_unlock(&ctx->lock);
      return NDF_OK;
    }
  }
  pthread_mutex_unlock(&ctx->lock);
  if (count >= NDF__MAX_TABLES) {
    /* Many distinct elements: drop the cache (after the stream drains) rather than grow without bound. */
    ndf__cu(NULL)->cuStreamSynchronize(ctx->stream);
    ndf__tables_release(ctx);
  }
  ndf__table_entry *e = calloc(1, sizeof *e);
  if (!e || !(e->host = malloc(bytes ? bytes : 1))) {
    free(e);
    return ndf__error(ctx, NDF_ENOMEM, "ndforge: out of host memory for a structuring-element table");
  }
  memcpy(e->host, data, bytes);
  e->hash = h;
  e->bytes = bytes;
  const ndf__cu_api *cu = ndf__cu(NULL);
  CUresult r = cu->cuMemAlloc(&e->dev, bytes ? bytes : 1);
  /* On the context's stream: the kernels that read the table are queued there,
   * and that stream does not wait for the legacy stream (CU_STREAM_NON_BLOCKING),
   * where a plain cuMemcpyHtoD from pageable memory may still be in its DMA when
   * it returns -- a kernel could then read the memory's previous contents (a
   * table freed earlier).
   * Pageable source: staged before the call returns. */
  if (r == CUDA_SUCCESS) r = cu->cuMemcpyHtoDAsync(e->dev, e->host, bytes, ctx->stream);
  if (r != CUDA_SUCCESS) {
    if (e->dev) cu->cuMemFree(e->dev);
    free(e->host);
    free(e);
    return ndf__cuda_error(ctx, "structuring-element table upload", r);
  }
  pthread_mutex_lock(&ctx->lock);
  e->next = ctx->tables;
  ctx->tables = e;
  pthread_mutex_unlock(&ctx->lock);
  *out = e->dev;
  return NDF_OK;
}

void ndf__tables_release(ndf_ctx *ctx) {
  pthread_mutex_lock(&ctx->lock);
  ndf__table_entry *e = ctx->tables;
  ctx->tables = NULL;
  pthread_mutex_unlock(&ctx->lock);
  while (e) {
    ndf__table_entry *next = e->next;
    if (ctx->has_cuda) ndf__cu(NULL)->cuMemFree(e->dev);
    free(e->host);
    free(e);
    e = next;
  }
}

/* ---- host: one buffer per OpenMP thread ------------------------------------------------------ */

int ndf__thread_id(void) {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

void ndf__thread_buffers_free(void **b, int nth) {
  if (!b) return;
  for (int i = 0; i < nth; i++) free(b[i]);
  free(b);
}

void **ndf__thread_buffers(int nth, size_t bytes) {
  int64_t total;
  if (bytes > (size_t)INT64_MAX || !ndf__mul(nth > 0 ? nth : 1, (int64_t)bytes, &total) || total > ndf__host_memory())
    return NULL; /* more than the host has: fail now rather than when the pages are touched */
  void **b = calloc((size_t)(nth > 0 ? nth : 1), sizeof *b);
  if (!b) return NULL;
  for (int i = 0; i < nth; i++)
    if (!(b[i] = malloc(bytes ? bytes : 1))) {
      ndf__thread_buffers_free(b, nth);
      return NULL;
    }
  return b;
}
