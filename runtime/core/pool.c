/*
 * pool.c -- memory the runtime needs for itself: stream-ordered device
 * scratch (from the context's memory pool on its stream), small read-only
 * device tables (structuring elements) cached by content for the context's
 * life, the CPU backend's per-thread host buffers, and the accounting of the
 * context's device-memory limit (ADR 0031).
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

struct ndf__mem_rec {
  ndf__mem_rec *next;
  CUdeviceptr p;
  size_t bytes;
};

static size_t mem_bucket(CUdeviceptr p) { return (size_t)((p >> 8) * 0x9E3779B97F4A7C15ull >> 58) % NDF__MEM_BUCKETS; }

ndf_status ndf__mem_charge(ndf_ctx *ctx, const char *what, size_t bytes) {
  const size_t limit = ctx->opt.device_memory_limit;
  if (!limit) return NDF_OK;
  pthread_mutex_lock(&ctx->mem_lock);
  const size_t live = ctx->mem_live;
  const int fits = bytes <= limit && live <= limit - bytes;
  if (fits) ctx->mem_live = live + bytes;
  pthread_mutex_unlock(&ctx->mem_lock);
  if (fits) return NDF_OK;
  return ndf__error(ctx, NDF_ENOMEM,
                    "%s: %zu bytes of device memory would pass the context's limit "
                    "(device_memory_limit %zu bytes, %zu in use)", what, bytes, limit, live);
}

void ndf__mem_uncharge(ndf_ctx *ctx, size_t bytes) {
  if (!ctx->opt.device_memory_limit) return;
  pthread_mutex_lock(&ctx->mem_lock);
  ctx->mem_live -= bytes < ctx->mem_live ? bytes : ctx->mem_live;
  pthread_mutex_unlock(&ctx->mem_lock);
}

ndf_status ndf__mem_record(ndf_ctx *ctx, CUdeviceptr p, size_t bytes) {
  if (!ctx->opt.device_memory_limit) return NDF_OK;
  ndf__mem_rec *r = malloc(sizeof *r);
  if (!r) {
    ndf__mem_uncharge(ctx, bytes);
    return ndf__error(ctx, NDF_ENOMEM, "ndforge: out of host memory for the device-memory accounting");
  }
  r->p = p;
  r->bytes = bytes;
  pthread_mutex_lock(&ctx->mem_lock);
  r->next = ctx->mem_recs[mem_bucket(p)];
  ctx->mem_recs[mem_bucket(p)] = r;
  pthread_mutex_unlock(&ctx->mem_lock);
  return NDF_OK;
}

void ndf__mem_forget(ndf_ctx *ctx, CUdeviceptr p) {
  if (!ctx->opt.device_memory_limit) return;
  ndf__mem_rec *found = NULL;
  pthread_mutex_lock(&ctx->mem_lock);
  for (ndf__mem_rec **q = &ctx->mem_recs[mem_bucket(p)]; *q; q = &(*q)->next)
    if ((*q)->p == p) {
      found = *q;
      *q = found->next;
      ctx->mem_live -= found->bytes < ctx->mem_live ? found->bytes : ctx->mem_live;
      break;
    }
  pthread_mutex_unlock(&ctx->mem_lock);
  free(found);
}

void ndf__mem_release(ndf_ctx *ctx) {
  for (int b = 0; b < NDF__MEM_BUCKETS; b++)
    for (ndf__mem_rec *r = ctx->mem_recs[b], *next; r; r = next) {
      next = r->next;
      free(r);
    }
  memset(ctx->mem_recs, 0, sizeof ctx->mem_recs);
  ctx->mem_live = 0;
}

ndf_status ndf__scratch_alloc(ndf_ctx *ctx, size_t bytes, CUdeviceptr *out) {
  const ndf__cu_api *cu = ndf__cu(NULL);
  const size_t n = bytes ? bytes : 1;
  ndf_status s = ndf__mem_charge(ctx, "scratch allocation", n);
  if (s != NDF_OK) return s;
  CUresult r = ctx->pool ? cu->cuMemAllocFromPoolAsync(out, n, ctx->pool, ctx->stream)
                         : cu->cuMemAllocAsync(out, n, ctx->stream);
  if (r != CUDA_SUCCESS) {
    ndf__mem_uncharge(ctx, n);
    return ndf__cuda_error(ctx, "scratch allocation", r);
  }
  if ((s = ndf__mem_record(ctx, *out, n)) != NDF_OK) {
    cu->cuMemFreeAsync(*out, ctx->stream);
    *out = 0;
  }
  return s;
}

void ndf__scratch_free(ndf_ctx *ctx, CUdeviceptr p) {
  if (!p) return;
  ndf__mem_forget(ctx, p);
  ndf__cu(NULL)->cuMemFreeAsync(p, ctx->stream);
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
