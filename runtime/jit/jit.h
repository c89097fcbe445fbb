/*
 * jit.h -- the JIT's entries beyond internal.h's ndf__jit_get: several
 * kernels of one call resolved at once, and a compiled image for tests.
 */
#ifndef NDF_JIT_H
#define NDF_JIT_H
#include "internal.h"

/* A request's kernel name that compiles every kernel of its template into one
 * module (test_nvrtc's family rows); a real request names one kernel, and its
 * module holds that kernel alone (the templates' NDF_KERNEL(name) guards). */
#define NDF__ALL_KERNELS "*"

/* ndf__jit_get for the n requests of one call (1 to 16): the in-memory table,
 * then the disk cache, and the requests on neither compile concurrently (one
 * thread each); the modules then load on the calling thread.  out[i] (out may
 * be NULL: the functions are then only made ready for ndf__jit_get) is
 * reqs[i]'s function.  Stops at the first error. */
ndf_status ndf__jit_get_many(ndf_ctx *ctx, const char *op, const ndf__kernel_req *const *reqs, int n,
                             CUfunction *out);
/* ndf__jit_warm for the n requests (1 to 16) of one call or command: the disk
 * cache's misses compile concurrently (one thread each) and are stored there;
 * compiled[i] says whether NVRTC ran for reqs[i] (a repeated request: for its
 * first occurrence only).  No device needed. */
ndf_status ndf__jit_warm_many(ndf_ctx *ctx, const char *op, const ndf__kernel_req *const *reqs, int n,
                              const char *arch, int *compiled);
/* ndf__jit_get_many, or with warm ndf__jit_warm_many for warm->arch (fns[i]
 * NULL, warm->compiled counted): ndf__jit_resolve for the kernels of a call. */
ndf_status ndf__jit_resolve_many(ndf_ctx *ctx, const char *op, const ndf__kernel_req *const *reqs, int n,
                                 ndf__warm *warm, CUfunction *fns);
/* The payload that ndf__jit_get would load for arch: byte 0 'C' (CUBIN) or
 * 'P' (PTX), then the image (malloc'd, *len bytes in all); from the disk
 * cache or NVRTC (stored in the cache). */
ndf_status ndf__jit_image(ndf_ctx *ctx, const char *op, const ndf__kernel_req *req, const char *arch, void **image,
                          size_t *len);
/* The checksum of a disk cache entry (format 2) over its key and payload
 * (cache.c; the fuzzer's fix-ups). */
uint64_t ndf__cache_checksum(const void *key, size_t klen, const void *payload, size_t plen);
#endif
