/*
 * ctx.c -- the context: options, CUDA device and stream, cache directory,
 * the op families' per-context state and the deferred-check hook (ADR 0020).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"

#ifdef _OPENMP
#include <omp.h>
#endif
#include "tune.h"

void ndf_ctx_options_init(ndf_ctx_options *opt) {
  if (!opt) return;
  memset(opt, 0, sizeof *opt);
  opt->backend = NDF_BACKEND_AUTO;
}

int ndf__cpu_threads(const ndf_ctx *ctx) {
#ifdef _OPENMP
  int n = ctx->opt.cpu_threads > 0 ? ctx->opt.cpu_threads : omp_get_max_threads();
#else
  int n = ctx->opt.cpu_threads > 0 ? ctx->opt.cpu_threads : 1;
#endif
  return n < NDF_MAX_CPU_THREADS ? n : NDF_MAX_CPU_THREADS;
}

ndf_status ndf__cuda_error(ndf_ctx *ctx, const char *where, CUresult r) {
  const ndf__cu_api *cu = ndf__cu(NULL);
  const char *name = "?", *str = "?";
  if (cu) {
    cu->cuGetErrorName(r, &name);
    cu->cuGetErrorString(r, &str);
  }
  /* Out of device (or page-locked host) memory is NDF_ENOMEM, as a host allocation failing is: the
   * caller can retry with less, or on the CPU (ndforge preprocess does); the context stays usable. */
  return ndf__error(ctx, r == CUDA_ERROR_OUT_OF_MEMORY ? NDF_ENOMEM : NDF_ECUDA, "%s: CUDA error %d %s (%s)", where,
                    r, name ? name : "?", str ? str : "?");
}

unsigned ndf__grid(const ndf_ctx *ctx, int64_t blocks, int per_sm) {
  int64_t cap = (int64_t)(ctx->sm_count > 0 ? ctx->sm_count : 132) * per_sm;
  if (blocks > cap) blocks = cap;
  return (unsigned)(blocks < 1 ? 1 : blocks);
}

ndf_status ndf__launch(ndf_ctx *ctx, const char *name, CUfunction fn, unsigned grid, unsigned bx, unsigned by,
                       unsigned smem, void *params) {
  void *args[] = {params};
  CUresult r = ndf__cu(NULL)->cuLaunchKernel(fn, grid, 1, 1, bx, by, 1, smem, ctx->stream, args, NULL);
  if (r != CUDA_SUCCESS) return ndf__cuda_error(ctx, name, r);
  ndf__klog(ctx, fn);
  return NDF_OK;
}

ndf_status ndf__ctx_bind(ndf_ctx *ctx) {
  if (!ctx->has_cuda) return ndf__error(ctx, NDF_ENODEV, "ndforge: the context has no CUDA device");
  CUcontext cur = NULL;
  const ndf__cu_api *cu = ndf__cu(NULL);
  if (cu->cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == ctx->cu) return NDF_OK;
  CUresult r = cu->cuCtxSetCurrent(ctx->cu);
  return r == CUDA_SUCCESS ? NDF_OK : ndf__cuda_error(ctx, "cuCtxSetCurrent", r);
}

/* The longest cache directory path: an entry's temporary name
 * ("/<16 hex>.ndfk.tmp.XXXXXX") must still fit in PATH_MAX (4096). */
#define CACHE_DIR_MAX 4055

/* mkdir -p; returns 0 when path exists as a directory afterwards, else
 * -1 with errno saying why (ENOTDIR: it, or a parent, is not a directory). */
static int mkdirs(const char *path) {
  char buf[4096];
  size_t n = strlen(path);
  if (n == 0 || n >= sizeof buf) {
    errno = ENAMETOOLONG;
    return -1;
  }
  memcpy(buf, path, n + 1);
  for (size_t i = 1; i < n; i++) {
    if (buf[i] == '/') {
      buf[i] = '\0';
      mkdir(buf, 0755);
      buf[i] = '/';
    }
  }
  int e = mkdir(buf, 0755) != 0 ? errno : 0;
  struct stat st;
  if (stat(buf, &st) == 0) {
    if (S_ISDIR(st.st_mode)) return 0;
    e = ENOTDIR;
  } else if (!e || e == EEXIST) {
    e = errno;
  }
  errno = e;
  return -1;
}

static void pick_cache_dir(ndf_ctx *ctx) {
  const char *dis = getenv("NDF_CACHE_DISABLE");
  if (ctx->opt.cache_disable || (dis && *dis && strcmp(dis, "0") != 0)) {
    ctx->cache_disabled = 1;
    return;
  }
  const char *d = ctx->opt.cache_dir, *env, *from = "ndf_ctx_options.cache_dir", *tail = "";
  if (!d || !*d) {
    if ((env = getenv("NDF_CACHE_DIR")) && *env) {
      d = env, from = "NDF_CACHE_DIR";
    } else if ((env = getenv("XDG_CACHE_HOME")) && *env) {
      d = env, from = "XDG_CACHE_HOME", tail = "/ndforge";
    } else if ((env = getenv("HOME")) && *env) {
      d = env, from = "HOME", tail = "/.cache/ndforge";
    } else {
      ctx->cache_disabled = 1;
      snprintf(ctx->cache_problem, sizeof ctx->cache_problem,
               "no cache directory: none of NDF_CACHE_DIR, XDG_CACHE_HOME and HOME is set");
      return;
    }
  }
  /* An unusable cache directory slows the first calls; it is not an error,
   * but the context says why (ndf_ctx_cache_problem).  A path too long is
   * not cut short: that would be another directory. */
  int e = 0;
  if (strlen(d) + strlen(tail) > CACHE_DIR_MAX) e = ENAMETOOLONG;
  else snprintf(ctx->cache_dir, sizeof ctx->cache_dir, "%s%s", d, tail);
  if (!e && mkdirs(ctx->cache_dir) != 0) e = errno;
  if (!e) return;
  if (e == ENAMETOOLONG)
    snprintf(ctx->cache_problem, sizeof ctx->cache_problem,
             "the cache directory from %s is %zu bytes long, more than the %d a cache directory may have", from,
             strlen(d) + strlen(tail), CACHE_DIR_MAX);
  else
    snprintf(ctx->cache_problem, sizeof ctx->cache_problem, "the cache directory '%.*s' (from %s) is unusable: %s",
             256, ctx->cache_dir, from, e == ENOTDIR ? "it, or a directory above it, is not a directory" : strerror(e));
  ctx->cache_dir[0] = '\0';
  ctx->cache_disabled = 1;
}

const char *ndf_ctx_cache_problem(const ndf_ctx *ctx) { return ctx ? ctx->cache_problem : ""; }

/* The context's own stream-ordered memory pool for scratch (pool.c), which
 * keeps what it has reserved until the context is destroyed: the default
 * pool gives memory back at every synchronisation, and mapping it again on
 * the next call costs tens to thousands of microseconds of host time per op
 * (docs/adr/0012-scratch-memory-pool.md).  Without one (a driver that
 * refuses), scratch comes from the device's default pool. */
static void create_pool(ndf_ctx *ctx) {
  const ndf__cu_api *cu = ndf__cu(NULL);
  ndf__cu_mempool_props props;
  memset(&props, 0, sizeof props);
  props.alloc_type = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = (int)ctx->dev;
  CUmemoryPool pool = NULL;
  if (cu->cuMemPoolCreate(&pool, &props) != CUDA_SUCCESS) return;
  unsigned long long keep = ~0ULL;
  if (cu->cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep) != CUDA_SUCCESS) {
    cu->cuMemPoolDestroy(pool);
    return;
  }
  ctx->pool = pool;
  /* The driver sets stream-ordered allocation up on its first use in a
   * process (milliseconds): one allocation here makes that part of creating
   * the context, with the device's other set-up, instead of a cost of the
   * first op that takes scratch (ADR 0012). */
  CUdeviceptr p = 0;
  if (cu->cuMemAllocFromPoolAsync(&p, 1, pool, ctx->stream) == CUDA_SUCCESS) {
    cu->cuMemFreeAsync(p, ctx->stream);
    if (ctx->own_stream) cu->cuStreamSynchronize(ctx->stream);
  }
}

static ndf_status init_cuda(ndf_ctx *ctx) {
  const char *why = NULL;
  const ndf__cu_api *cu = ndf__cu(&why);
  if (!cu) return ndf__error(ctx, NDF_ENODEV, "ndf_ctx_create: %s", why);
  CUresult r = cu->cuInit(0);
  if (r != CUDA_SUCCESS) return ndf__cuda_error(ctx, "ndf_ctx_create: cuInit", r);
  int n = 0;
  r = cu->cuDeviceGetCount(&n);
  if (r != CUDA_SUCCESS) return ndf__cuda_error(ctx, "ndf_ctx_create: cuDeviceGetCount", r);
  if (ctx->opt.device < 0 || ctx->opt.device >= n)
    return ndf__error(ctx, NDF_ENODEV, "ndf_ctx_create: bad argument 'device' (%d; %d CUDA devices)",
                      ctx->opt.device, n);
  if ((r = cu->cuDeviceGet(&ctx->dev, ctx->opt.device)) != CUDA_SUCCESS)
    return ndf__cuda_error(ctx, "ndf_ctx_create: cuDeviceGet", r);
  if ((r = cu->cuDevicePrimaryCtxRetain(&ctx->cu, ctx->dev)) != CUDA_SUCCESS)
    return ndf__cuda_error(ctx, "ndf_ctx_create: cuDevicePrimaryCtxRetain", r);
  ctx->has_cuda = 1;
  if ((r = cu->cuCtxSetCurrent(ctx->cu)) != CUDA_SUCCESS)
    return ndf__cuda_error(ctx, "ndf_ctx_create: cuCtxSetCurrent", r);
  cu->cuDeviceGetAttribute(&ctx->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, ctx->dev);
  cu->cuDeviceGetAttribute(&ctx->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, ctx->dev);
  cu->cuDeviceGetAttribute(&ctx->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, ctx->dev);
  int smem = 0;
  cu->cuDeviceGetAttribute(&smem, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, ctx->dev);
  ctx->max_smem_block = (size_t)smem;
  smem = 0;
  cu->cuDeviceGetAttribute(&smem, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, ctx->dev);
  ctx->smem_per_sm = smem > 0 ? (size_t)smem : 0;
  snprintf(ctx->arch, sizeof ctx->arch, "sm_%d%d", ctx->cc_major, ctx->cc_minor);
  if (ctx->opt.stream) {
    ctx->stream = (CUstream)ctx->opt.stream;
  } else {
    if ((r = cu->cuStreamCreate(&ctx->stream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS)
      return ndf__cuda_error(ctx, "ndf_ctx_create: cuStreamCreate", r);
    ctx->own_stream = 1;
  }
  create_pool(ctx);
  return NDF_OK;
}

ndf_status ndf_ctx_create(ndf_ctx **out, const ndf_ctx_options *opt) {
  if (!out) return ndf__error(NULL, NDF_EINVAL, "ndf_ctx_create: bad argument 'out' (NULL)");
  *out = NULL;
  ndf_ctx *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return ndf__error(NULL, NDF_ENOMEM, "ndf_ctx_create: out of memory");
  if (opt) ctx->opt = *opt; else ndf_ctx_options_init(&ctx->opt);
  if ((unsigned)ctx->opt.backend > NDF_BACKEND_CUDA) {
    free(ctx);
    return ndf__error(NULL, NDF_EINVAL, "ndf_ctx_create: bad argument 'backend' (%d)", (int)opt->backend);
  }
  if (ctx->opt.cpu_threads < 0 || ctx->opt.cpu_threads > NDF_MAX_CPU_THREADS) {
    int n = ctx->opt.cpu_threads;
    free(ctx);
    return ndf__error(NULL, NDF_EINVAL, "ndf_ctx_create: bad argument 'cpu_threads' (%d is not in 0..%d, "
                      "NDF_MAX_CPU_THREADS)", n, NDF_MAX_CPU_THREADS);
  }
  pthread_mutex_init(&ctx->lock, NULL);
  pthread_mutex_init(&ctx->mem_lock, NULL);
  pick_cache_dir(ctx);
  ctx->opt.cache_dir = NULL; /* copied into ctx->cache_dir: the caller's string need not outlive the call */
  if (ctx->opt.backend != NDF_BACKEND_CPU) {
    ndf_status s = init_cuda(ctx);
    if (s != NDF_OK) {
      if (ctx->opt.backend == NDF_BACKEND_CUDA) {
        ndf__error(NULL, s, "%s", ctx->errmsg);
        ndf_ctx_destroy(ctx);
        return s;
      }
      /* AUTO: fall back to the CPU backend, quietly. */
      if (ctx->has_cuda) ndf__cu(NULL)->cuDevicePrimaryCtxRelease(ctx->dev);
      ctx->has_cuda = 0;
      ctx->stream = NULL;
      ctx->own_stream = 0;
    }
  }
  ctx->errmsg[0] = '\0';
  *out = ctx;
  return NDF_OK;
}

/* ---- the op families' state (ADR 0020) ------------------------------------------------ */

void *ndf__family_state(ndf_ctx *ctx, const ndf__family *f) {
  /* the slots fill in order and a filled slot never changes: a reader that sees a family sees
   * its state (published before it) */
  for (int i = 0; i < NDF__FAMILY_SLOTS; i++) {
    const ndf__family *g = __atomic_load_n(&ctx->families[i].family, __ATOMIC_ACQUIRE);
    if (g == f) return ctx->families[i].state;
    if (!g) break;
  }
  void *state = NULL;
  pthread_mutex_lock(&ctx->lock);
  int i = 0;
  for (; i < NDF__FAMILY_SLOTS && ctx->families[i].family; i++)
    if (ctx->families[i].family == f) break;
  if (i < NDF__FAMILY_SLOTS && ctx->families[i].family == f) {
    state = ctx->families[i].state; /* created by another thread meanwhile */
  } else if (i < NDF__FAMILY_SLOTS && (state = calloc(1, f->size ? f->size : 1))) {
    ctx->families[i].state = state;
    __atomic_store_n(&ctx->families[i].family, f, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&ctx->lock);
  return state;
}

ndf_status ndf__deferred_report(ndf_ctx *ctx) {
  if (!ctx) return NDF_OK;
  for (int i = 0; i < NDF__FAMILY_SLOTS; i++) {
    const ndf__family *f = __atomic_load_n(&ctx->families[i].family, __ATOMIC_ACQUIRE);
    if (!f) break;
    if (!f->report) continue;
    ndf_status s = f->report(ctx, ctx->families[i].state);
    if (s != NDF_OK) return s;
  }
  return NDF_OK;
}

/* Releases and frees every family's state (the context's stream has finished); 1 if there was any. */
static int families_release(ndf_ctx *ctx) {
  int any = 0;
  for (int i = 0; i < NDF__FAMILY_SLOTS && ctx->families[i].family; i++) {
    if (ctx->families[i].family->release) ctx->families[i].family->release(ctx, ctx->families[i].state);
    free(ctx->families[i].state);
    ctx->families[i].family = NULL;
    ctx->families[i].state = NULL;
    any = 1;
  }
  return any;
}

void ndf_ctx_destroy(ndf_ctx *ctx) {
  if (!ctx) return;
  if (ctx->has_cuda) {
    const ndf__cu_api *cu = ndf__cu(NULL);
    cu->cuCtxSetCurrent(ctx->cu);
    if (ctx->stream) cu->cuStreamSynchronize(ctx->stream);
    /* the families' state: host memory the kernels wrote is idle now; what a release frees on
     * the stream is freed before the modules and the pool go */
    if (families_release(ctx) && ctx->stream) cu->cuStreamSynchronize(ctx->stream);
    ndf__tables_release(ctx);
    ndf__jit_release(ctx);
    if (ctx->pool) cu->cuMemPoolDestroy(ctx->pool); /* after the sync: every scratch is freed */
    if (ctx->own_stream) cu->cuStreamDestroy(ctx->stream);
    cu->cuDevicePrimaryCtxRelease(ctx->dev);
  } else {
    families_release(ctx);
    ndf__jit_release(ctx);
  }
  ndf__tune_release(ctx);
  ndf__mem_release(ctx);
  pthread_mutex_destroy(&ctx->mem_lock);
  pthread_mutex_destroy(&ctx->lock);
  free(ctx);
}

int ndf_ctx_has_cuda(const ndf_ctx *ctx) { return ctx && ctx->has_cuda; }

void *ndf_ctx_stream(const ndf_ctx *ctx) { return ctx && ctx->has_cuda ? (void *)ctx->stream : NULL; }

const char *ndf_ctx_cache_dir(const ndf_ctx *ctx) { return ctx ? ctx->cache_dir : ""; }

ndf_status ndf_ctx_synchronize(ndf_ctx *ctx) {
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "ndf_ctx_synchronize: bad argument 'ctx' (NULL)");
  ndf__clear_error(ctx);
  if (!ctx->has_cuda) return ndf__deferred_report(ctx); /* the CPU backend's work is done when its call returns */
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  CUresult r = ndf__cu(NULL)->cuStreamSynchronize(ctx->stream);
  return r == CUDA_SUCCESS ? ndf__deferred_report(ctx) : ndf__cuda_error(ctx, "ndf_ctx_synchronize", r);
}

ndf_status ndf_ctx_get_info(ndf_ctx *ctx, ndf_ctx_info *info) {
  if (!ctx || !info) return ndf__error(ctx, NDF_EINVAL, "ndf_ctx_get_info: bad argument (NULL)");
  memset(info, 0, sizeof *info);
  ndf__nvrtc_version(&info->nvrtc_major, &info->nvrtc_minor);
  const ndf__cu_api *cu = ndf__cu(NULL);
  if (cu) cu->cuDriverGetVersion(&info->driver_version);
  if (!ctx->has_cuda) return NDF_OK;
  info->has_cuda = 1;
  cu->cuDeviceGetName(info->device_name, (int)sizeof info->device_name, ctx->dev);
  info->cc_major = ctx->cc_major;
  info->cc_minor = ctx->cc_minor;
  info->sm_count = ctx->sm_count;
  cu->cuDeviceTotalMem(&info->total_mem, ctx->dev);
  return NDF_OK;
}

void ndf_ctx_cache_stats(const ndf_ctx *ctx, ndf_cache_stats *out) {
  if (!out) return;
  if (!ctx) { memset(out, 0, sizeof *out); return; }
  pthread_mutex_lock((pthread_mutex_t *)&ctx->lock);
  *out = ctx->stats;
  pthread_mutex_unlock((pthread_mutex_t *)&ctx->lock);
}
