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

#include "internal.h"
#include "templates.generated.h"

struct ndf__module_entry {
  ndf__module_entry *next;
  uint64_t hash;
  char *key; /* template|kernel|slots: the in-memory key */
  CUmodule mod;
  CUfunction fn;
};

/* NVRTC options every kernel is compiled with (part of the disk key). */
static const char *const base_options[] = {"--std=c++17", "-DNDEBUG", "--device-as-default-execution-space"};
#define NBASE_OPTIONS ((int)(sizeof base_options / sizeof base_options[0]))

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
  r->slots[i].name = name;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->slots[i].value, sizeof r->slots[i].value, fmt, ap);
  va_end(ap);
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
      if (strcmp(req->slots[i].name, t->slot_names[s]) == 0) values[s] = req->slots[i].value;
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

/* The target NVRTC compiles for: the exact "sm_XY" when NVRTC knows it, else
 * PTX for the newest compute_XY not above the device. */
static void pick_target(const ndf__nvrtc_api *nv, const char *arch, char *target, size_t n, int *cubin) {
  int want = atoi(arch + 3), best = 0, count = 0;
  *cubin = 0;
  if (nv->nvrtcGetNumSupportedArchs(&count) == 0 && count > 0 && count < 256) {
    int archs[256];
    nv->nvrtcGetSupportedArchs(archs);
    for (int i = 0; i < count; i++) {
      if (archs[i] == want) *cubin = 1;
      if (archs[i] <= want && archs[i] > best) best = archs[i];
    }
  }
  if (*cubin) snprintf(target, n, "sm_%d", want);
  else snprintf(target, n, "compute_%d", best ? best : want);
}

/* Full key text of a request: everything that changes the compiled code. */
static char *disk_key(const ndf__kernel_req *req, const ndf__template *t, const char *target, int nv_major,
                      int nv_minor) {
  size_t n = 1024;
  for (int i = 0; i < req->nslots; i++) n += strlen(req->slots[i].name) + strlen(req->slots[i].value) + 2;
  char *k = malloc(n);
  if (!k) return NULL;
  int w = snprintf(k, n, "ndforge %s\ngenerator %s\ntemplate %s %s\nkernel %s\nnvrtc %d.%d\ntarget %s\noptions",
                   NDF_VERSION_STRING, ndf__generator_hash, t->name, t->hash, req->kernel, nv_major, nv_minor, target);
  for (int i = 0; i < NBASE_OPTIONS; i++) w += snprintf(k + w, n - w, " %s", base_options[i]);
  w += snprintf(k + w, n - w, "\nslots");
  /* Slots in the template's (sorted) order so equal requests give equal keys. */
  for (int s = 0; s < t->nslots; s++)
    for (int i = 0; i < req->nslots; i++)
      if (strcmp(req->slots[i].name, t->slot_names[s]) == 0)
        w += snprintf(k + w, n - w, " %s=%s", req->slots[i].name, req->slots[i].value);
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
  const char *opts[NBASE_OPTIONS + 1];
  for (int i = 0; i < NBASE_OPTIONS; i++) opts[i] = base_options[i];
  opts[NBASE_OPTIONS] = archopt;
  r = nv->nvrtcCompileProgram(prog, NBASE_OPTIONS + 1, opts);
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
  const ndf__nvrtc_api *nv = ndf__nvrtc(&why);
  if (!nv) return ndf__error(ctx, NDF_ENODEV, "%s: %s", op, why);
  int major = 0, minor = 0, cubin = 0;
  nv->nvrtcVersion(&major, &minor);
  char target[32];
  pick_target(nv, arch, target, sizeof target, &cubin);
  char *key = disk_key(req, t, target, major, minor);
  if (!key) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", op);
  *compiled = 0;
  if (ndf__cache_load(ctx, key, payload, len) == NDF_OK) {
    pthread_mutex_lock(&ctx->lock);
    ctx->stats.disk_hits++;
    pthread_mutex_unlock(&ctx->lock);
    *key_out = key;
    return NDF_OK;
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
  ndf_status s = get_payload(ctx, op, req, arch, &key, &payload, &len, compiled);
  free(key);
  free(payload);
  return s;
}

/* The in-memory key: template, kernel and slot values in request order. */
static size_t memory_key(const ndf__kernel_req *req, char *buf, size_t n) {
  size_t w = (size_t)snprintf(buf, n, "%s|%s", req->template_name, req->kernel);
  for (int i = 0; i < req->nslots && w < n; i++)
    w += (size_t)snprintf(buf + w, n - w, "|%s=%s", req->slots[i].name, req->slots[i].value);
  return w;
}

ndf_status ndf__jit_get(ndf_ctx *ctx, const char *op, const ndf__kernel_req *req, CUfunction *out) {
  char mkey[2048];
  size_t mlen = memory_key(req, mkey, sizeof mkey);
  if (mlen >= sizeof mkey) return ndf__error(ctx, NDF_EINTERNAL, "%s: kernel key too long", op);
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
