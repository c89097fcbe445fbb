/*
 * array.c -- array descriptors, the overflow-checked size arithmetic every
 * call's validation uses, and the host helpers to allocate and copy arrays
 * for callers without a framework.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

int ndf_size_mul(int64_t a, int64_t b, int64_t *out) { return ndf__mul(a, b, out); }

/* "4x5x6" (or "()" for a scalar) into buf. */
const char *ndf__shape_str(int ndim, const int64_t *shape, char *buf, size_t cap) {
  size_t n = 0;
  buf[0] = '\0';
  if (ndim <= 0) snprintf(buf, cap, "()");
  for (int i = 0; i < ndim && n < cap; i++)
    n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? "x" : "", (long long)shape[i]);
  return buf;
}

/* The rules of ndf__check_array on (dtype, ndim, shape, strides), strides
 * NULL for C order: NULL, or why they are broken (in why).  *count (may be
 * NULL) gets the element count. */
static const char *geometry_error(ndf_dtype dtype, int ndim, const int64_t *shape, const int64_t *strides,
                                  int64_t *count, char *why, size_t cap) {
  char sh[NDF_MAX_NDIM * 21 + 4];
  const int64_t es = (int64_t)ndf_dtype_size(dtype);
  if (!es) { snprintf(why, cap, "unknown dtype %d", (int)dtype); return why; }
  if (ndim < 0 || ndim > NDF_MAX_NDIM) { snprintf(why, cap, "rank %d is not in 0..%d", ndim, NDF_MAX_NDIM); return why; }
  int64_t nonzero = 1; /* the product of the non-zero extents: every sub-product of the shape fits */
  int empty = 0;
  for (int d = 0; d < ndim; d++) {
    if (shape[d] < 0) { snprintf(why, cap, "shape[%d]=%lld is negative", d, (long long)shape[d]); return why; }
    empty |= shape[d] == 0;
    if (shape[d] > 0 && !ndf__mul(nonzero, shape[d], &nonzero)) {
      snprintf(why, cap, "shape %s: the product of its extents exceeds 2^63-1", ndf__shape_str(ndim, shape, sh, sizeof sh));
      return why;
    }
  }
  const int64_t n = empty ? 0 : nonzero;
  int64_t bytes;
  if (n > 0 && (!ndf__mul(n, es, &bytes) || bytes > NDF_MAX_BYTES)) {
    snprintf(why, cap, "shape %s of %s: %lld elements of %lld bytes exceed NDF_MAX_BYTES (2^56 bytes)",
             ndf__shape_str(ndim, shape, sh, sizeof sh), ndf_dtype_name(dtype), (long long)n, (long long)es);
    return why;
  }
  if (n > 0 && strides) { /* the span the strides reach: sum of |stride| (extent - 1), in bytes */
    int64_t span = 0;
    for (int d = 0; d < ndim; d++) {
      int64_t t;
      if (shape[d] <= 1) continue;
      if (strides[d] == INT64_MIN || !ndf__mul(strides[d] < 0 ? -strides[d] : strides[d], shape[d] - 1, &t) ||
          !ndf__mul(t, es, &t) || __builtin_add_overflow(span, t, &span) || span > NDF_MAX_BYTES) {
        snprintf(why, cap, "stride[%d]=%lld with shape[%d]=%lld reaches beyond NDF_MAX_BYTES (2^56 bytes)", d,
                 (long long)strides[d], d, (long long)shape[d]);
        return why;
      }
    }
  }
  if (count) *count = n;
  return NULL;
}

ndf_status ndf__check_array(ndf_ctx *ctx, const char *name, const char *arg, const ndf_array *a, int64_t *count) {
  char why[256];
  if (!a) return ndf__argerror(ctx, name, arg, "NULL");
  if (geometry_error(a->dtype, a->ndim, a->shape, a->strides, count, why, sizeof why))
    return ndf__argerror(ctx, name, arg, "%s", why);
  return NDF_OK;
}

int64_t ndf__host_memory(void) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  int64_t m;
  return pages > 0 && page > 0 && ndf__mul(pages, page, &m) ? m : INT64_MAX;
}

ndf_status ndf__check_host_memory(ndf_ctx *ctx, const char *name, const char *what, int64_t bytes) {
  int64_t mem = ndf__host_memory();
  if (bytes >= 0 && bytes <= mem) return NDF_OK;
  if (bytes < 0)
    return ndf__error(ctx, NDF_ENOMEM, "%s: %s would need more than 2^63 bytes of host memory", name, what);
  return ndf__error(ctx, NDF_ENOMEM, "%s: %s would need %lld bytes of host memory; the host has %lld", name, what,
                    (long long)bytes, (long long)mem);
}

ndf_status ndf_shape_bytes(ndf_dtype dtype, int ndim, const int64_t *shape, int64_t *bytes) {
  char why[256];
  int64_t n = 0;
  if (!bytes || (ndim > 0 && !shape))
    return ndf__error(NULL, NDF_EINVAL, "ndf_shape_bytes: bad argument '%s' (NULL)", bytes ? "shape" : "bytes");
  if (geometry_error(dtype, ndim, shape, NULL, &n, why, sizeof why))
    return ndf__error(NULL, NDF_EINVAL, "ndf_shape_bytes: bad argument 'shape' (%s)", why);
  *bytes = n * (int64_t)ndf_dtype_size(dtype);
  return NDF_OK;
}

ndf_status ndf_array_init(ndf_array *a, void *data, ndf_device_type device, ndf_dtype dtype,
                          int ndim, const int64_t *shape) {
  char why[256];
  if (!a) return ndf__error(NULL, NDF_EINVAL, "ndf_array_init: bad argument 'a' (NULL)");
  if (ndim < 0 || ndim > NDF_MAX_NDIM)
    return ndf__error(NULL, NDF_EINVAL, "ndf_array_init: bad argument 'ndim' (%d not in 0..%d)", ndim,
                      NDF_MAX_NDIM);
  if (ndim > 0 && !shape) return ndf__error(NULL, NDF_EINVAL, "ndf_array_init: bad argument 'shape' (NULL)");
  if (!ndf_dtype_size(dtype)) return ndf__error(NULL, NDF_EINVAL, "ndf_array_init: bad argument 'dtype' (%d)", (int)dtype);
  if (geometry_error(dtype, ndim, shape, NULL, NULL, why, sizeof why))
    return ndf__error(NULL, NDF_EINVAL, "ndf_array_init: bad argument 'shape' (%s)", why);
  memset(a, 0, sizeof *a);
  a->data = data;
  a->device = device;
  a->dtype = dtype;
  a->ndim = ndim;
  int64_t st = 1; /* the product of the non-zero extents fits (geometry_error) */
  for (int i = ndim - 1; i >= 0; i--) {
    a->shape[i] = shape[i];
    a->strides[i] = st;
    st *= shape[i] > 0 ? shape[i] : 1;
  }
  return NDF_OK;
}

int64_t ndf_array_size(const ndf_array *a) {
  if (!a) return 0;
  if (a->ndim < 0 || a->ndim > NDF_MAX_NDIM) return -1;
  int64_t n = 1;
  for (int i = 0; i < a->ndim; i++)
    if (a->shape[i] < 0) return -1;
  for (int i = 0; i < a->ndim; i++)
    if (a->shape[i] == 0) return 0;
  for (int i = 0; i < a->ndim; i++)
    if (!ndf__mul(n, a->shape[i], &n)) return -1;
  return n;
}

int ndf_array_is_contiguous(const ndf_array *a) {
  if (!a) return 0;
  if (ndf_array_size(a) < 0) return 0;
  int64_t st = 1;
  for (int i = a->ndim - 1; i >= 0; i--) {
    if (a->shape[i] != 1 && a->strides[i] != st) return 0;
    if (!ndf__mul(st, a->shape[i], &st)) return 0;
  }
  return 1;
}

ndf_status ndf_array_alloc(ndf_ctx *ctx, ndf_array *a, ndf_device_type device, ndf_dtype dtype,
                           int ndim, const int64_t *shape) {
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "ndf_array_alloc: bad argument 'ctx' (NULL)");
  ndf__clear_error(ctx);
  ndf_status s = ndf_array_init(a, NULL, device, dtype, ndim, shape);
  /* ndf_array_init's message under this call's name */
  if (s != NDF_OK) return ndf__error(ctx, s, "ndf_array_alloc%s", ndf_last_error() + strlen("ndf_array_init"));
  size_t bytes = (size_t)ndf_array_size(a) * ndf_dtype_size(dtype); /* at most NDF_MAX_BYTES (ndf_array_init) */
  if (bytes == 0) bytes = 1;
  if (device == NDF_DEVICE_CPU) {
    a->data = malloc(bytes);
    if (!a->data) return ndf__error(ctx, NDF_ENOMEM, "ndf_array_alloc: out of host memory (%zu bytes)", bytes);
    return NDF_OK;
  }
  if (device != NDF_DEVICE_CUDA)
    return ndf__error(ctx, NDF_EINVAL, "ndf_array_alloc: bad argument 'device' (%d)", (int)device);
  if ((s = ndf__ctx_bind(ctx)) != NDF_OK) return s;
  if ((s = ndf__mem_charge(ctx, "ndf_array_alloc", bytes)) != NDF_OK) return s;
  CUdeviceptr p = 0;
  CUresult r = ndf__cu(NULL)->cuMemAlloc(&p, bytes);
  if (r != CUDA_SUCCESS) {
    ndf__mem_uncharge(ctx, bytes);
    return ndf__cuda_error(ctx, "ndf_array_alloc: cuMemAlloc", r);
  }
  if ((s = ndf__mem_record(ctx, p, bytes)) != NDF_OK) {
    ndf__cu(NULL)->cuMemFree(p);
    return s;
  }
  a->data = (void *)(uintptr_t)p;
  a->device_id = ctx->opt.device;
  return NDF_OK;
}

void ndf_array_free(ndf_ctx *ctx, ndf_array *a) {
  if (!a || !a->data) return;
  if (a->device == NDF_DEVICE_CPU) {
    free(a->data);
  } else if (ctx && ctx->has_cuda && ndf__ctx_bind(ctx) == NDF_OK) {
    ndf__cu(NULL)->cuStreamSynchronize(ctx->stream);
    ndf__mem_forget(ctx, (CUdeviceptr)(uintptr_t)a->data);
    ndf__cu(NULL)->cuMemFree((CUdeviceptr)(uintptr_t)a->data);
  }
  a->data = NULL;
}

/* Copies an n-d strided block element by element (host memory). */
static void strided_copy(char *dst, const int64_t *dst_st, const char *src, const int64_t *src_st,
                         const int64_t *shape, int ndim, size_t es) {
  if (ndim == 0) { memcpy(dst, src, es); return; }
  if (ndim == 1) {
    for (int64_t i = 0; i < shape[0]; i++)
      memcpy(dst + i * dst_st[0] * (int64_t)es, src + i * src_st[0] * (int64_t)es, es);
    return;
  }
  for (int64_t i = 0; i < shape[0]; i++)
    strided_copy(dst + i * dst_st[0] * (int64_t)es, dst_st + 1, src + i * src_st[0] * (int64_t)es,
                 src_st + 1, shape + 1, ndim - 1, es);
}

void ndf__host_copy(const ndf_array *dst, const ndf_array *src) {
  size_t es = ndf_dtype_size(src->dtype);
  if (ndf_array_is_contiguous(dst) && ndf_array_is_contiguous(src))
    memcpy(dst->data, src->data, (size_t)ndf_array_size(src) * es);
  else
    strided_copy(dst->data, dst->strides, src->data, src->strides, src->shape, src->ndim, es);
}

ndf_status ndf_array_copy(ndf_ctx *ctx, ndf_array *dst, const ndf_array *src) {
  static const char *op = "ndf_array_copy";
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", op);
  ndf__clear_error(ctx);
  if (!dst || !src) return ndf__argerror(ctx, op, !dst ? "dst" : "src", "NULL");
  if (dst->dtype != src->dtype) return ndf__argerror(ctx, op, "dst", "dtype %s differs from src dtype %s", ndf_dtype_name(dst->dtype) ? ndf_dtype_name(dst->dtype) : "?", ndf_dtype_name(src->dtype) ? ndf_dtype_name(src->dtype) : "?");
  if (!ndf_dtype_size(src->dtype)) return ndf__argerror(ctx, op, "src", "unknown dtype %d", (int)src->dtype);
  if (dst->ndim != src->ndim || dst->ndim < 0 || dst->ndim > NDF_MAX_NDIM) return ndf__argerror(ctx, op, "dst", "ndim %d differs from src ndim %d", dst->ndim, src->ndim);
  for (int i = 0; i < src->ndim; i++)
    if (dst->shape[i] != src->shape[i]) return ndf__argerror(ctx, op, "dst", "shape[%d]=%lld differs from src shape %lld", i, (long long)dst->shape[i], (long long)src->shape[i]);
  int64_t n;
  ndf_status s = ndf__check_array(ctx, op, "src", src, &n);
  if (s == NDF_OK) s = ndf__check_array(ctx, op, "dst", dst, NULL);
  if (s != NDF_OK || n == 0) return s;
  if (!dst->data || !src->data) return ndf__argerror(ctx, op, !dst->data ? "dst" : "src", "NULL data");
  if (!ndf__layout_is_proper(dst)) return ndf__argerror(ctx, op, "dst", "its strides make elements overlap");
  if (dst->device == src->device && ndf__arrays_overlap(dst, src))
    return ndf__argerror(ctx, op, "dst", "overlaps src");
  size_t bytes = (size_t)n * ndf_dtype_size(src->dtype);
  if (dst->device == NDF_DEVICE_CPU && src->device == NDF_DEVICE_CPU) {
    ndf__host_copy(dst, src);
    return NDF_OK;
  }
  if ((dst->device != NDF_DEVICE_CPU && dst->device != NDF_DEVICE_CUDA) ||
      (src->device != NDF_DEVICE_CPU && src->device != NDF_DEVICE_CUDA))
    return ndf__argerror(ctx, op, "device", "unknown device type");
  s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  const ndf__cu_api *cu = ndf__cu(NULL);
  if ((dst->device == NDF_DEVICE_CUDA && !ndf_array_is_contiguous(dst)) ||
      (src->device == NDF_DEVICE_CUDA && !ndf_array_is_contiguous(src)))
    return ndf__error(ctx, NDF_ENOTSUP, "%s: strided CUDA arrays are not supported by this helper (make the device side contiguous)", op);
  CUresult r;
  if (dst->device == NDF_DEVICE_CUDA && src->device == NDF_DEVICE_CUDA) {
    r = cu->cuMemcpyDtoDAsync((CUdeviceptr)(uintptr_t)dst->data, (CUdeviceptr)(uintptr_t)src->data, bytes, ctx->stream);
    if (r != CUDA_SUCCESS) return ndf__cuda_error(ctx, op, r);
    return NDF_OK;
  }
  /* Host side: stage through a contiguous buffer when the host array is strided. */
  const ndf_array *host = dst->device == NDF_DEVICE_CPU ? dst : src;
  void *stage = host->data;
  ndf_array tmp = *host;
  if (!ndf_array_is_contiguous(host)) {
    stage = malloc(bytes);
    if (!stage) return ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", op);
    ndf_array_init(&tmp, stage, NDF_DEVICE_CPU, host->dtype, host->ndim, host->shape);
    if (host == src) ndf__host_copy(&tmp, src);
  }
  if (dst->device == NDF_DEVICE_CUDA)
    r = cu->cuMemcpyHtoDAsync((CUdeviceptr)(uintptr_t)dst->data, stage, bytes, ctx->stream);
  else
    r = cu->cuMemcpyDtoHAsync(stage, (CUdeviceptr)(uintptr_t)src->data, bytes, ctx->stream);
  if (r == CUDA_SUCCESS) r = cu->cuStreamSynchronize(ctx->stream);
  if (r == CUDA_SUCCESS && stage != host->data && host == dst) ndf__host_copy(dst, &tmp);
  if (stage != host->data) free(stage);
  if (r != CUDA_SUCCESS) return ndf__cuda_error(ctx, op, r);
  /* device to host: the copy waited for the stream, so a failed deferred check (an output of
   * that call copied here is unchanged) is reported now */
  return dst->device == NDF_DEVICE_CPU ? ndf__deferred_report(ctx) : NDF_OK;
}

/* ---- the array checks the ops share --------------------------------------------------------- */

/* Byte extent [lo, hi) a non-empty array touches; the whole address space
 * when it cannot be computed (a span ndf__check_array refuses). */
static void extent(const ndf_array *a, intptr_t *lo, intptr_t *hi) {
  intptr_t base = (intptr_t)a->data, l = base, h = base;
  intptr_t es = (intptr_t)ndf_dtype_size(a->dtype);
  int bad = 0;
  for (int d = 0; d < a->ndim; d++) {
    intptr_t span;
    bad |= __builtin_mul_overflow(a->shape[d] - 1, a->strides[d], &span) || __builtin_mul_overflow(span, es, &span) ||
           (span < 0 ? __builtin_add_overflow(l, span, &l) : __builtin_add_overflow(h, span, &h));
  }
  *lo = bad ? INTPTR_MIN : l;
  *hi = bad || __builtin_add_overflow(h, es, &h) ? INTPTR_MAX : h;
}

int ndf__arrays_overlap(const ndf_array *a, const ndf_array *b) {
  intptr_t al, ah, bl, bh;
  if (ndf_array_size(a) <= 0 || ndf_array_size(b) <= 0) return 0;
  extent(a, &al, &ah);
  extent(b, &bl, &bh);
  return al < bh && bl < ah;
}

/* 1 if no two elements of a share memory (a proper, non-overlapping layout). */
int ndf__layout_is_proper(const ndf_array *a) {
  int idx[NDF_MAX_NDIM], n = 0;
  for (int d = 0; d < a->ndim; d++) if (a->shape[d] > 1) idx[n++] = d;
  for (int i = 0; i < n; i++)
    if (a->strides[idx[i]] == INT64_MIN) return 0;
  for (int i = 1; i < n; i++) /* sort by |stride| */
    for (int j = i; j > 0 && llabs(a->strides[idx[j]]) < llabs(a->strides[idx[j - 1]]); j--) {
      int t = idx[j]; idx[j] = idx[j - 1]; idx[j - 1] = t;
    }
  int64_t need = 1;
  for (int i = 0; i < n; i++) {
    int64_t st = a->strides[idx[i]];
    if (llabs(st) < need || !ndf__mul(llabs(st), a->shape[idx[i]], &need)) return 0;
  }
  return 1;
}

ndf_status ndf__check_shape(ndf_ctx *ctx, const char *name, const ndf_array *in, int batch_dims) {
  if (in->ndim < 1 || in->ndim > NDF_MAX_NDIM)
    return ndf__argerror(ctx, name, "input", "rank %d is not in 1..%d", in->ndim, NDF_MAX_NDIM);
  for (int d = 0; d < in->ndim; d++)
    if (in->shape[d] < 0) return ndf__argerror(ctx, name, "input", "shape[%d]=%lld is negative", d, (long long)in->shape[d]);
  ndf_status s = ndf__check_array(ctx, name, "input", in, NULL);
  if (s != NDF_OK) return s;
  if (batch_dims < 0 || batch_dims >= in->ndim)
    return ndf__argerror(ctx, name, "batch_dims", "%d must be in 0..%d for an input of rank %d", batch_dims,
                         in->ndim - 1, in->ndim);
  return NDF_OK;
}

ndf_status ndf__check_device(ndf_ctx *ctx, const char *name, const ndf_array *in) {
  if (in->device != NDF_DEVICE_CPU && in->device != NDF_DEVICE_CUDA)
    return ndf__argerror(ctx, name, "input", "unknown device type %d", (int)in->device);
  if (in->device == NDF_DEVICE_CUDA && !ctx->has_cuda)
    return ndf__error(ctx, NDF_ENODEV, "%s: the arrays are on a CUDA device but the context has none", name);
  if (in->device == NDF_DEVICE_CUDA && in->device_id != ctx->opt.device)
    return ndf__argerror(ctx, name, "input", "on CUDA device %d, the context uses device %d", in->device_id, ctx->opt.device);
  return NDF_OK;
}

ndf_status ndf__check_filter_arrays(ndf_ctx *ctx, const char *name, const ndf_array *in, const ndf_array *out) {
  if (!in) return ndf__argerror(ctx, name, "input", "NULL");
  if (!out) return ndf__argerror(ctx, name, "output", "NULL");
  if (in->dtype == NDF_BOOL || !ndf_dtype_size(in->dtype))
    return ndf__argerror(ctx, name, "input", "dtype %s is not supported (uint8, int8, uint16, int16, uint32, int32, int64, uint64, float32, float64)",
                         ndf_dtype_name(in->dtype) ? ndf_dtype_name(in->dtype) : "unknown");
  if (out->dtype != in->dtype)
    return ndf__argerror(ctx, name, "output", "dtype %s differs from the input dtype %s",
                         ndf_dtype_name(out->dtype) ? ndf_dtype_name(out->dtype) : "unknown", ndf_dtype_name(in->dtype));
  if (in->ndim < 1 || in->ndim > NDF_MAX_NDIM)
    return ndf__argerror(ctx, name, "input", "rank %d is not in 1..%d", in->ndim, NDF_MAX_NDIM);
  if (out->ndim != in->ndim)
    return ndf__argerror(ctx, name, "output", "rank %d differs from the input rank %d", out->ndim, in->ndim);
  for (int d = 0; d < in->ndim; d++) {
    if (in->shape[d] < 0) return ndf__argerror(ctx, name, "input", "shape[%d]=%lld is negative", d, (long long)in->shape[d]);
    if (out->shape[d] != in->shape[d])
      return ndf__argerror(ctx, name, "output", "shape[%d]=%lld differs from the input shape %lld", d,
                           (long long)out->shape[d], (long long)in->shape[d]);
  }
  ndf_status s = ndf__check_array(ctx, name, "input", in, NULL);
  if (s == NDF_OK) s = ndf__check_array(ctx, name, "output", out, NULL);
  if (s != NDF_OK) return s;
  if (in->device != out->device || in->device_id != out->device_id)
    return ndf__argerror(ctx, name, "output", "lives on another device than the input");
  if ((s = ndf__check_device(ctx, name, in)) != NDF_OK) return s;
  if (ndf_array_size(in) == 0) return NDF_OK;
  if (!in->data) return ndf__argerror(ctx, name, "input", "NULL data");
  if (!out->data) return ndf__argerror(ctx, name, "output", "NULL data");
  if (!ndf__layout_is_proper(out)) return ndf__argerror(ctx, name, "output", "its strides make elements overlap");
  if (ndf__arrays_overlap(in, out))
    return ndf__argerror(ctx, name, "output", "overlaps the input (in-place filtering is not supported)");
  return NDF_OK;
}
