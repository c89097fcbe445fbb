/*
 * jit.c -- run-time specialization: a kernel request (template + slot
 * values) becomes NVRTC source, then a CUBIN (or PTX when NVRTC does not
 * know the device), looked up in this order: the context's in-memory table,
 * the disk cache, NVRTC.  First writer wins in the in-memory table; a thread
 * that loses the race unloads its module.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "templates.generated.h"

/* NVRTC options every kernel is compiled with (part of the disk key). */
static const char *const base_options[] = {"--std=c++17", "-DNDEBUG", "--device-as-default-execution-space"};
#define NBASE_OPTIONS ((int)(sizeof base_options / sizeof base_options[0]))
/* NDF_NVRTC_LINEINFO=1 adds -lineinfo to the disk key, and the compile follows
 * the key: compute-sanitizer and Nsight then name lines of the generated source
 * (NDF_DUMP_SOURCE).  Read when a kernel is first requested in a context (the
 * in-memory cache does not look at it): set it before the process starts. */
static int want_lineinfo(void) {
  const char *e = getenv("NDF_NVRTC_LINEINFO");
  return e && strcmp(e, "1") == 0;
}

void ndf__req_init(ndf__kernel_req *r, const char *template_name, const char *kernel) {
  memset(r, 0, sizeof *r);
  r->template_name = template_name;
  r->kernel = kernel;
}

void ndf__req_set(ndf__kernel_req *r, const char *name, const char *fmt, ...) {
  int i;
  for (i = 0; i < r->nslots; i++)
    if (strcmp(r->slots[i].name, name) == 0) break;
  if (i == r->nslots) {
    if (r->nslots == (int)(sizeof r->slots / sizeof r->slots[0])) return; /* caught as unfilled */
    r->nslots++;
  }
  ndf__slot *sl = &r->slots[i];
  free(sl->heap);
  sl->heap = NULL;
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int len = vsnprintf(sl->value, sizeof sl->value, fmt, ap);
  va_end(ap);
  if (len >= (int)sizeof sl->value && (sl->heap = malloc((size_t)len + 1)) != NULL)
    vsnprintf(sl->heap, (size_t)len + 1, fmt, ap2);
  va_end(ap2);
  /* A long value that could not be stored leaves the slot unnamed: the
   * request then fails as unfilled instead of compiling truncated code. */
  sl->name = (len >= (int)sizeof sl->value && !sl->heap) ? "" : name;
}

const char *ndf__slot_value(const ndf__slot *s) { return s->heap ? s->heap : s->value; }

void ndf__req_free(ndf__kernel_req *r) {
  for (int i = 0; i < r->nslots; i++) {
    free(r->slots[i].heap);
    r->slots[i].heap = NULL;
  }
}

static const ndf__template *find_template(const char *name) {
  for (int i = 0; i < ndf__ntemplates; i++)
    if (strcmp(ndf__templates[i].name, name) == 0) return &ndf__templates[i];
  return NULL;
}

/* Resolves every slot of t from req; on error names the unfilled or unknown slot. */
static ndf_status resolve_slots(ndf_ctx *ctx, const char *op, const ndf__template *t,
                                const ndf__kernel_req *req, const char **values) {
  for (int s = 0; s < t->nslots; s++) {
    values[s] = NULL;
    for (int i = 0; i < req->nslots; i++)
      if (strcmp(req->slots[i].name, t->slot_names[s]) == 0) values[s] = ndf__slot_value(&req->slots[i]);
    if (!values[s])
      return ndf__error(ctx, NDF_EINTERNAL, "%s: slot '%s' of template '%s' (%s) is not filled", op,
                        t->slot_names[s], t->name, t->file);
  }
  for (int i = 0; i < req->nslots; i++) {
    int known = 0;
    for (int s = 0; s < t->nslots; s++) known |= strcmp(req->slots[i].name, t->slot_names[s]) == 0;
    if (!known)
      return ndf__error(ctx, NDF_EINTERNAL, "%s: template '%s' has no slot '%s'", op, t->name, req->slots[i].name);
  }
  return NDF_OK;
}

char *ndf__jit_source(ndf_ctx *ctx, const char *op, const ndf__kernel_req *req, uint64_t *template_hash) {
  const ndf__template *t = find_template(req->template_name);
  if (!t) {
    ndf__error(ctx, NDF_EINTERNAL, "%s: no kernel template named '%s'", op, req->template_name);
    return NULL;
  }
  const char *values[32];
  if (t->nslots > 32 || resolve_slots(ctx, op, t, req, values) != NDF_OK) return NULL;
  size_t n = 1;
  for (int i = 0; i < t->nfrags; i++)
    n += t->frags[i].text ? strlen(t->frags[i].text) : strlen(values[t->frags[i].slot]);
  char *src = malloc(n), *p = src;
  if (!src) {
    ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", op);
    return NULL;
  }
  for (int i = 0; i < t->nfrags; i++) {
    const char *s = t->frags[i].text ? t->frags[i].text : values[t->frags[i].slot];
    size_t k = strlen(s);
    memcpy(p, s, k);
    p += k;
  }
  *p = '\0';
  if (template_hash) *template_hash = ndf__hash_fnv1a64(t->hash, strlen(t->hash), NDF__FNV_SEED);
  return src;
}

ndf_status ndf__nvrtc_version(int *major, int *minor) {
  const ndf__nvrtc_api *nv = ndf__nvrtc(NULL);
  *major = *minor = 0;
  if (!nv) return NDF_ENODEV;
  nv->nvrtcVersion(major, minor);
  return NDF_OK;
}

/* What the disk key needs to know of NVRTC: its version and architectures. */
typedef struct nvrtc_id {
  int major, minor, narchs;
  int archs[64];
} nvrtc_id;

static int id_from_nvrtc(const ndf__nvrtc_api *nv, nvrtc_id *id) {
  memset(id, 0, sizeof *id);
  nv->nvrtcVersion(&id->major, &id->minor);
  int count = 0;
  if (nv->nvrtcGetNumSupportedArchs(&count) == 0 && count > 0 && count <= 64) {
    nv->nvrtcGetSupportedArchs(id->archs);
    id->narchs = count;
  }
  return 0;
}

/*
 * Loading NVRTC costs 5-20 ms, so its identity is remembered in the cache
 * directory (file "nvrtc.id"): the library file it came from (path, size,
 * mtime, inode), what chose that file ($NDF_NVRTC_PATH, $LD_LIBRARY_PATH,
 * /etc/ld.so.cache), and the version and architectures.  A process whose
 * kernels are all on disk then never loads NVRTC.  When NVRTC is loaded for a
 * compile, its real identity is checked against the remembered one.
 */
static void id_context(char *buf, size_t n) {
  const char *a = getenv("NDF_NVRTC_PATH"), *b = getenv("LD_LIBRARY_PATH");
  struct stat st;
  long long lm = 0, ls = 0;
  if (stat("/etc/ld.so.cache", &st) == 0) { lm = (long long)st.st_mtime; ls = (long long)st.st_size; }
  snprintf(buf, n, "env %s|%s\nldcache %lld %lld\n", a ? a : "", b ? b : "", lm, ls);
}

static int id_file_stat(const char *path, char *buf, size_t n) {
  struct stat st;
  if (!path || stat(path, &st) != 0) return -1;
  snprintf(buf, n, "lib %s %lld %lld %lld %llu\n", path, (long long)st.st_size, (long long)st.st_mtim.tv_sec,
           (long long)st.st_mtim.tv_nsec, (unsigned long long)st.st_ino);
  return 0;
}

static int id_load(const ndf_ctx *ctx, nvrtc_id *id) {
  if (ctx->cache_disabled || !ctx->cache_dir[0]) return -1;
  char path[4200], text[8192];
  snprintf(path, sizeof path, "%s/nvrtc.id", ctx->cache_dir);
  int odd, fd = ndf__cache_open(path, &odd);
  FILE *f = fd < 0 ? NULL : fdopen(fd, "r");
  if (!f) {
    if (fd >= 0) close(fd);
    return -1;
  }
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  char want[4500], lib[4500], libpath[4097];
  id_context(want, sizeof want);
  const char *p = strstr(text, "\nenv ");
  if (strncmp(text, "ndforge-nvrtc-id 1\n", 19) != 0 || !p || strncmp(p + 1, want, strlen(want)) != 0) return -1;
  p = strstr(text, "\nlib ");
  if (!p || sscanf(p + 5, "%4096s", libpath) != 1 || id_file_stat(libpath, lib, sizeof lib) != 0 ||
      strncmp(p + 1, lib, strlen(lib)) != 0)
    return -1;
  memset(id, 0, sizeof *id);
  p = strstr(text, "\nversion ");
  if (!p || sscanf(p + 9, "%d %d", &id->major, &id->minor) != 2) return -1;
  p = strstr(text, "\narchs");
  if (!p) return -1;
  p += 7;
  int a, used;
  while (id->narchs < 64 && sscanf(p, "%d%n", &a, &used) == 1) {
    id->archs[id->narchs++] = a;
    p += used;
  }
  return id->major > 0 ? 0 : -1;
}

static void id_store(const ndf_ctx *ctx, const nvrtc_id *id) {
  if (ctx->cache_disabled || !ctx->cache_dir[0]) return;
  char path[4200], tmp[4300], ctxt[4500], lib[4500];
  id_context(ctxt, sizeof ctxt);
  if (id_file_stat(ndf__nvrtc_path(), lib, sizeof lib) != 0) return;
  snprintf(path, sizeof path, "%s/nvrtc.id", ctx->cache_dir);
  snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path);
  int fd = mkstemp(tmp);
  if (fd < 0) return;
  FILE *f = fdopen(fd, "w");
  if (!f) {
    close(fd);
    unlink(tmp);
    return;
  }
  fprintf(f, "ndforge-nvrtc-id 1\n%s%sversion %d %d\narchs", ctxt, lib, id->major, id->minor);
  for (int i = 0; i < id->narchs; i++) fprintf(f, " %d", id->archs[i]);
  fprintf(f, "\n");
  int ok = fflush(f) == 0 && fsync(fd) == 0;
  ok = fclose(f) == 0 && ok;
  if (!ok || rename(tmp, path) != 0) unlink(tmp);
}

void ndf__jit_nvrtc_version(const ndf_ctx *ctx, int *major, int *minor) {
  nvrtc_id id;
  if (id_load(ctx, &id) == 0) {
    *major = id.major, *minor = id.minor;
    return;
  }
  ndf__nvrtc_version(major, minor);
}

/* The target NVRTC compiles for: the exact "sm_XY" when NVRTC knows it, else
 * PTX for the newest compute_XY not above the device. */
static void pick_target(const nvrtc_id *id, const char *arch, char *target, size_t n, int *cubin) {
  int want = atoi(arch + 3), best = 0;
  *cubin = 0;
  for (int i = 0; i < id->narchs; i++) {
    if (id->archs[i] == want) *cubin = 1;
    if (id->archs[i] <= want && id->archs[i] > best) best = id->archs[i];
  }
  if (*cubin) snprintf(target, n, "sm_%d", want);
  else snprintf(target, n, "compute_%d", best ? best : want);
}

/* Full key text of a request: everything that changes the compiled code. */
static char *disk_key(const ndf__kernel_req *req, const ndf__template *t, const char *target, int nv_major,
                      int nv_minor) {
  size_t n = 1024;
  for (int i = 0; i < req->nslots; i++) n += strlen(req->slots[i].name) + strlen(ndf__slot_value(&req->slots[i])) + 2;
  char *k = malloc(n);
  if (!k) return NULL;
  int w = snprintf(k, n, "ndforge %s\ngenerator %s\ntemplate %s %s\nkernel %s\nnvrtc %d.%d\ntarget %s\noptions",
                   NDF_VERSION_STRING, ndf__generator_hash, t->name, t->hash, req->kernel, nv_major, nv_minor, target);
  for (int i = 0; i < NBASE_OPTIONS; i++) w += snprintf(k + w, n - w, " %s", base_options[i]);
  if (want_lineinfo()) w += snprintf(k + w, n - w, " -lineinfo");
  w += snprintf(k + w, n - w, "\nslots");
  /* Slots in the template's (sorted) order so equal requests give equal keys. */
  for (int s = 0; s < t->nslots; s++)
    for (int i = 0; i < req->nslots; i++)
      if (strcmp(req->slots[i].name, t->slot_names[s]) == 0)
        w += snprintf(k + w, n - w, " %s=%s", req->slots[i].name, ndf__slot_value(&req->slots[i]));
  snprintf(k + w, n - w, "\n");
  return k;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Compiles src with NVRTC for target.  *payload = 'C' or 'P' + CUBIN/PTX bytes. */
static ndf_status nvrtc_compile(ndf_ctx *ctx, const char *op, const char *src, const char *key,
                                const char *target, int cubin, void **payload, size_t *len) {
  const char *why = NULL;
  const ndf__nvrtc_api *nv = ndf__nvrtc(&why);
  if (!nv) return ndf__error(ctx, NDF_ENODEV, "%s: %s", op, why);
  double t0 = now_ms();
  nvrtcProgram prog = NULL;
  nvrtcResult r = nv->nvrtcCreateProgram(&prog, src, "ndforge_kernel.cu", 0, NULL, NULL);
  if (r != 0) return ndf__error(ctx, NDF_ECOMPILE, "%s: nvrtcCreateProgram: %s", op, nv->nvrtcGetErrorString(r));
  char archopt[64];
  snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", target);
  const char *opts[NBASE_OPTIONS + 2];
  for (int i = 0; i < NBASE_OPTIONS; i++) opts[i] = base_options[i];
  opts[NBASE_OPTIONS] = archopt;
  opts[NBASE_OPTIONS + 1] = "-lineinfo";
  /* -lineinfo exactly when the key says so (one reading of the knob per request) */
  r = nv->nvrtcCompileProgram(prog, NBASE_OPTIONS + 1 + (strstr(key, " -lineinfo\nslots") != NULL), opts);
  if (r != 0) {
    size_t loglen = 0;
    nv->nvrtcGetProgramLogSize(prog, &loglen);
    char *log = malloc(loglen + 1);
    if (log) {
      log[0] = '\0';
      nv->nvrtcGetProgramLog(prog, log);
      log[loglen] = '\0';
    }
    ndf__error(ctx, NDF_ECOMPILE, "%s: NVRTC failed (%s) with options '%s %s %s %s'\n%s\nkey:\n%s", op,
               nv->nvrtcGetErrorString(r), opts[0], opts[1], opts[2], archopt, log ? log : "(no log)", key);
    free(log);
    nv->nvrtcDestroyProgram(&prog);
    return NDF_ECOMPILE;
  }
  size_t n = 0;
  r = cubin ? nv->nvrtcGetCUBINSize(prog, &n) : nv->nvrtcGetPTXSize(prog, &n);
  char *out = r == 0 ? malloc(n + 1) : NULL;
  if (!out) {
    nv->nvrtcDestroyProgram(&prog);
    return ndf__error(ctx, r ? NDF_ECOMPILE : NDF_ENOMEM, "%s: cannot get the compiled code", op);
  }
  out[0] = cubin ? 'C' : 'P';
  r = cubin ? nv->nvrtcGetCUBIN(prog, out + 1) : nv->nvrtcGetPTX(prog, out + 1);
  nv->nvrtcDestroyProgram(&prog);
  if (r != 0) {
    free(out);
    return ndf__error(ctx, NDF_ECOMPILE, "%s: cannot get the compiled code", op);
  }
  pthread_mutex_lock(&ctx->lock);
  ctx->stats.compiles++;
  ctx->stats.compile_ms += now_ms() - t0;
  pthread_mutex_unlock(&ctx->lock);
  *payload = out;
  *len = n + 1;
  return NDF_OK;
}

/* Compile-or-load the payload of req for arch; *compiled says whether NVRTC ran. */
static ndf_status get_payload(ndf_ctx *ctx, const char *op, const ndf__kernel_req *req, const char *arch,
                              char **key_out, void **payload, size_t *len, int *compiled) {
  const ndf__template *t = find_template(req->template_name);
  if (!t) return ndf__error(ctx, NDF_EINTERNAL, "%s: no kernel template named '%s'", op, req->template_name);
  const char *why = NULL;
  const ndf__nvrtc_api *nv = NULL;
  nvrtc_id id;
  int id_known = id_load(ctx, &id) == 0;
  *compiled = 0;
  char target[32], *key = NULL;
  int cubin = 0;
  for (int pass = 0; pass < 2; pass++) {
    if (!id_known) { /* load NVRTC: the remembered identity is missing or stale */
      if (!(nv = ndf__nvrtc(&why))) return ndf__error(ctx, NDF_ENODEV, "%s: %s", op, why);
      id_from_nvrtc(nv, &id);
      id_store(ctx, &id);
      id_known = 1;
    }
    pick_target(&id, arch, target, sizeof target, &cubin);
    free(key);
    if (!(key = disk_key(req, t, target, id.major, id.minor))) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", op);
    if (ndf__cache_load(ctx, key, payload, len) == NDF_OK) {
      pthread_mutex_lock(&ctx->lock);
      ctx->stats.disk_hits++;
      pthread_mutex_unlock(&ctx->lock);
      *key_out = key;
      return NDF_OK;
    }
    if (nv) break;
    /* A miss: NVRTC is needed now; make sure the identity the key used is its own. */
    if (!(nv = ndf__nvrtc(&why))) {
      free(key);
      return ndf__error(ctx, NDF_ENODEV, "%s: %s", op, why);
    }
    nvrtc_id real;
    id_from_nvrtc(nv, &real);
    if (memcmp(&real, &id, sizeof id) == 0) break;
    id_known = 0; /* stale: redo the lookup with the real identity */
  }
  char *src = ndf__jit_source(ctx, op, req, NULL);
  if (!src) {
    free(key);
    return NDF_EINTERNAL;
  }
  const char *dump = getenv("NDF_DUMP_SOURCE");
  if (dump && *dump) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%016llx.cu", dump,
             (unsigned long long)ndf__hash_fnv1a64(key, strlen(key), NDF__FNV_SEED));
    FILE *f = fopen(path, "w");
    if (f) {
      fprintf(f, "/* key:\n%s*/\n%s", key, src);
      fclose(f);
    }
  }
  ndf_status s = nvrtc_compile(ctx, op, src, key, target, cubin, payload, len);
  free(src);
  if (s != NDF_OK) {
    free(key);
    return s;
  }
  *compiled = 1;
  ndf__cache_store(ctx, key, *payload, *len);
  *key_out = key;
  return NDF_OK;
}

ndf_status ndf__jit_warm(ndf_ctx *ctx, const char *op, const ndf__kernel_req *req, const char *arch,
                         int *compiled) {
  char *key = NULL;
  void *payload = NULL;
  size_t len = 0;
  ndf__cache_store_errno = 0;
  ndf_status s = get_payload(ctx, op, req, arch, &key, &payload, &len, compiled);
  free(key);
  free(payload);
  /* warming is for the disk cache: a kernel it could not keep is an error */
  if (s == NDF_OK && *compiled && ndf__cache_store_errno)
    return ndf__error(ctx, NDF_EIO, "%s: cannot store the compiled kernel in '%s' (%s)", op, ctx->cache_dir,
                      strerror(ndf__cache_store_errno));
  return s;
}

ndf_status ndf__jit_resolve(ndf_ctx *ctx, const char *op, const ndf__kernel_req *req, ndf__warm *warm,
                            CUfunction *fn) {
  if (!warm) return ndf__jit_get(ctx, op, req, fn);
  int c = 0;
  ndf_status s = ndf__jit_warm(ctx, op, req, warm->arch, &c);
  warm->compiled += c;
  *fn = NULL;
  return s;
}

ndf_status ndf__warm_check(ndf_ctx *ctx, const char *name, const char *arch, ndf_dtype dtype, int ndim,
                           int *compiled) {
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  ndf__clear_error(ctx);
  if (compiled) *compiled = 0;
  if (!arch || strncmp(arch, "sm_", 3) != 0 || atoi(arch + 3) < 50)
    return ndf__argerror(ctx, name, "arch", "'%s' is not an architecture like sm_90", arch ? arch : "(null)");
  if (!ndf_dtype_size(dtype) || dtype == NDF_INT64)
    return ndf__argerror(ctx, name, "dtype", "unsupported dtype %d", (int)dtype);
  if (ndim < 1 || ndim > NDF_MAX_NDIM) return ndf__argerror(ctx, name, "ndim", "%d is not in 1..%d", ndim, NDF_MAX_NDIM);
  return NDF_OK;
}

void ndf__warm_array(ndf_array *a, int slot, ndf_dtype dtype, int ndim) {
  int64_t shape[NDF_MAX_NDIM];
  for (int d = 0; d < ndim; d++) shape[d] = 64;
  ndf_array_init(a, (void *)(uintptr_t)(((uintptr_t)slot + 1) << 52), NDF_DEVICE_CPU, dtype, ndim, shape);
}

/* The in-memory key: template, kernel and slot values in request order;
 * into buf when it fits, else malloc'd (*heap set; NULL when out of memory). */
static char *memory_key(const ndf__kernel_req *req, char *buf, size_t n, size_t *len, char **heap) {
  size_t need = strlen(req->template_name) + strlen(req->kernel) + 2;
  for (int i = 0; i < req->nslots; i++)
    need += strlen(req->slots[i].name) + strlen(ndf__slot_value(&req->slots[i])) + 2;
  *heap = NULL;
  if (need >= n) {
    if (!(*heap = malloc(need + 1))) return NULL;
    buf = *heap;
    n = need + 1;
  }
  size_t w = (size_t)snprintf(buf, n, "%s|%s", req->template_name, req->kernel);
  for (int i = 0; i < req->nslots && w < n; i++)
    w += (size_t)snprintf(buf + w, n - w, "|%s=%s", req->slots[i].name, ndf__slot_value(&req->slots[i]));
  *len = w;
  return buf;
}

static ndf_status jit_get(ndf_ctx *ctx, const char *op, const ndf__kernel_req *req, const char *mkey, size_t mlen,
                          CUfunction *out);

ndf_status ndf__jit_get(ndf_ctx *ctx, const char *op, const ndf__kernel_req *req, CUfunction *out) {
  char buf[2048], *heap = NULL;
  size_t mlen = 0;
  const char *mkey = memory_key(req, buf, sizeof buf, &mlen, &heap);
  if (!mkey) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", op);
  ndf_status s = jit_get(ctx, op, req, mkey, mlen, out);
  free(heap);
  return s;
}

static ndf_status jit_get(ndf_ctx *ctx, const char *op, const ndf__kernel_req *req, const char *mkey, size_t mlen,
                          CUfunction *out) {
  uint64_t h = ndf__hash_fnv1a64(mkey, mlen, NDF__FNV_SEED);
  pthread_mutex_lock(&ctx->lock);
  for (ndf__module_entry *e = ctx->modules; e; e = e->next) {
    if (e->hash == h && strcmp(e->key, mkey) == 0) {
      ctx->stats.memory_hits++;
      *out = e->fn;
      pthread_mutex_unlock(&ctx->lock);
      return NDF_OK;
    }
  }
  pthread_mutex_unlock(&ctx->lock);

  const ndf__cu_api *cu = ndf__cu(NULL);
  CUmodule mod = NULL;
  CUfunction fn = NULL;
  for (int attempt = 0; attempt < 2 && !mod; attempt++) {
    char *key = NULL;
    void *payload = NULL;
    size_t len = 0;
    int compiled = 0;
    ndf_status s = get_payload(ctx, op, req, ctx->arch, &key, &payload, &len, &compiled);
    if (s != NDF_OK) return s;
    /* Byte 0 says CUBIN ('C') or PTX ('P'); PTX from NVRTC carries its NUL terminator. */
    const char *image = payload;
    if (len < 2 || (image[0] == 'P' && image[len - 1] != '\0')) {
      ndf__cache_remove(ctx, key);
      free(key);
      free(payload);
      continue;
    }
    CUresult r = cu->cuModuleLoadData(&mod, image + 1);
    if (r == CUDA_SUCCESS) r = cu->cuModuleGetFunction(&fn, mod, req->kernel);
    if (r != CUDA_SUCCESS) {
      if (mod) cu->cuModuleUnload(mod);
      mod = NULL;
      if (!compiled) {
        /* A cached image the driver rejects is as good as corrupt: drop it and compile. */
        ndf__cache_remove(ctx, key);
        free(key);
        free(payload);
        continue;
      }
      free(key);
      free(payload);
      return ndf__cuda_error(ctx, op, r);
    }
    free(key);
    free(payload);
  }
  if (!mod) return ndf__error(ctx, NDF_ECUDA, "%s: cannot load kernel '%s'", op, req->kernel);

  ndf__module_entry *e = calloc(1, sizeof *e);
  if (!e || !(e->key = strdup(mkey))) {
    free(e);
    cu->cuModuleUnload(mod);
    return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", op);
  }
  e->hash = h;
  e->mod = mod;
  e->fn = fn;
  pthread_mutex_lock(&ctx->lock);
  for (ndf__module_entry *o = ctx->modules; o; o = o->next) {
    if (o->hash == h && strcmp(o->key, mkey) == 0) { /* another thread won the race */
      *out = o->fn;
      pthread_mutex_unlock(&ctx->lock);
      cu->cuModuleUnload(mod);
      free(e->key);
      free(e);
      return NDF_OK;
    }
  }
  e->next = ctx->modules;
  ctx->modules = e;
  *out = fn;
  pthread_mutex_unlock(&ctx->lock);
  return NDF_OK;
}

void ndf__jit_release(ndf_ctx *ctx) {
  ndf__module_entry *e = ctx->modules;
  ctx->modules = NULL;
  while (e) {
    ndf__module_entry *next = e->next;
    if (ctx->has_cuda) ndf__cu(NULL)->cuModuleUnload(e->mod);
    free(e->key);
    free(e);
    e = next;
  }
}

/* ---- the kernel log (ADR 0013) ------------------------------------------------ */
/* Always on: per launch one uncontended lock, a direct-mapped lookup of fn
 * (a list walk on a miss: the context's first launch of fn) and one pointer
 * store into a fixed ring; nothing is allocated. */
static const char *const klog_unknown = "?|?"; /* a function no module entry holds (never expected) */

static void klog_put(ndf_ctx *ctx, const char *key) {
  ctx->klog[ctx->klog_count % NDF__KLOG] = key;
  ctx->klog_count++;
}

void ndf__klog_key(ndf_ctx *ctx, const char *key) {
  pthread_mutex_lock(&ctx->lock);
  klog_put(ctx, key ? key : klog_unknown);
  pthread_mutex_unlock(&ctx->lock);
}

void ndf__klog(ndf_ctx *ctx, CUfunction fn) {
  const unsigned slot = (unsigned)(((uintptr_t)fn >> 4) * 0x9E3779B1u >> 8) % NDF__KLOG_FN;
  pthread_mutex_lock(&ctx->lock);
  const char *key = NULL;
  if (ctx->klog_fn[slot].fn == fn && fn) {
    key = ctx->klog_fn[slot].key;
  } else {
    for (ndf__module_entry *e = ctx->modules; e; e = e->next)
      if (e->fn == fn) {
        key = e->key;
        ctx->klog_fn[slot].fn = fn;
        ctx->klog_fn[slot].key = key;
        break;
      }
  }
  klog_put(ctx, key ? key : klog_unknown);
  pthread_mutex_unlock(&ctx->lock);
}

uint64_t ndf_ctx_kernel_count(const ndf_ctx *ctx) {
  if (!ctx) return 0;
  pthread_mutex_lock((pthread_mutex_t *)&ctx->lock);
  uint64_t n = ctx->klog_count;
  pthread_mutex_unlock((pthread_mutex_t *)&ctx->lock);
  return n;
}

const char *ndf_ctx_kernel_launched(const ndf_ctx *ctx, uint64_t i) {
  if (!ctx) return NULL;
  pthread_mutex_lock((pthread_mutex_t *)&ctx->lock);
  const char *k = i < ctx->klog_count && ctx->klog_count - i <= NDF__KLOG ? ctx->klog[i % NDF__KLOG] : NULL;
  pthread_mutex_unlock((pthread_mutex_t *)&ctx->lock);
  return k;
}
