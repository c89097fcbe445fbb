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
#include "jit.h"
#include "tune.h"
#include "templates.generated.h"

/* The most requests ndf__jit_get_many and ndf__jit_warm_many take at once. */
#define JIT_MANY 16

/* NVRTC options every kernel is compiled with (part of the disk key). */
static const char *const base_options[] = {"--std=c++17", "-DNDEBUG", "--device-as-default-execution-space"};
#define NBASE_OPTIONS ((int)(sizeof base_options / sizeof base_options[0]))
#define NEXTRA 2     /* options the tunables may add (jit_options) */
#define EXTRA_LEN 64 /* their text, space-separated */
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
  /* A long value that could not be stored leaves the slot unnamed and marks
   * the request: it then fails (NDF_ENOMEM) instead of compiling truncated code. */
  const int lost = len >= (int)sizeof sl->value && !sl->heap;
  sl->name = lost ? "" : name;
  r->oom |= lost;
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
  if (req->oom) return ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory for a slot of template '%s'", op, t->name);
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

/* The source of req's kernel, or NULL with *st the reason (NDF_ENOMEM: out of host memory, also for a
 * slot value the request could not store). */
static char *jit_source(ndf_ctx *ctx, const char *op, const ndf__kernel_req *req, uint64_t *template_hash,
                        ndf_status *st) {
  *st = NDF_EINTERNAL;
  const ndf__template *t = find_template(req->template_name);
  if (!t) {
    ndf__error(ctx, NDF_EINTERNAL, "%s: no kernel template named '%s'", op, req->template_name);
    return NULL;
  }
  const char *values[32];
  if (t->nslots > 32) return NULL;
  if ((*st = resolve_slots(ctx, op, t, req, values)) != NDF_OK) return NULL;
  *st = NDF_EINTERNAL;
  /* The first line selects the kernel: the template's NDF_KERNEL(name) guards
   * leave out its other kernels (NDF__ALL_KERNELS: all of them). */
  const int all = strcmp(req->kernel, NDF__ALL_KERNELS) == 0;
  int known = all;
  for (int i = 0; i < t->nkernels; i++) known |= strcmp(t->kernels[i], req->kernel) == 0;
  if (!known) {
    ndf__error(ctx, NDF_EINTERNAL, "%s: template '%s' has no kernel '%s'", op, t->name, req->kernel);
    return NULL;
  }
  char head[256];
  const int hn = all ? snprintf(head, sizeof head, "#define NDF_ALL_KERNELS 1\n")
                     : snprintf(head, sizeof head, "#define NDF_KERNEL_%s 1\n", req->kernel);
  if (hn < 0 || hn >= (int)sizeof head) {
    ndf__error(ctx, NDF_EINTERNAL, "%s: kernel name '%s' is too long", op, req->kernel);
    return NULL;
  }
  size_t n = 1 + (size_t)hn;
  for (int i = 0; i < t->nfrags; i++)
    n += t->frags[i].text ? strlen(t->frags[i].text) : strlen(values[t->frags[i].slot]);
  char *src = malloc(n), *p = src;
  if (!src) {
    *st = ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", op);
    return NULL;
  }
  memcpy(p, head, (size_t)hn);
  p += hn;
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

char *ndf__jit_source(ndf_ctx *ctx, const char *op, const ndf__kernel_req *req, uint64_t *template_hash) {
  ndf_status st;
  return jit_source(ctx, op, req, template_hash, &st);
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
                      int nv_minor, const char *extra) {
  size_t n = 1024;
  for (int i = 0; i < req->nslots; i++) n += strlen(req->slots[i].name) + strlen(ndf__slot_value(&req->slots[i])) + 2;
  char *k = malloc(n);
  if (!k) return NULL;
  int w = snprintf(k, n, "ndforge %s\ngenerator %s\ntemplate %s %s\nkernel %s\nnvrtc %d.%d\ntarget %s\noptions",
                   NDF_VERSION_STRING, ndf__generator_hash, t->name, t->hash, req->kernel, nv_major, nv_minor, target);
  for (int i = 0; i < NBASE_OPTIONS; i++) w += snprintf(k + w, n - w, " %s", base_options[i]);
  if (extra[0]) w += snprintf(k + w, n - w, " %s", extra);
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

/* Compiles src with NVRTC for target.  *payload = 'C' or 'P' + CUBIN/PTX bytes.
 * Counted in ctx's statistics; a failure's message goes to ectx (NULL: the
 * thread's own, ndf_last_error). */
static ndf_status nvrtc_compile(ndf_ctx *ctx, ndf_ctx *ectx, const char *op, const char *src, const char *key,
                                const char *target, const char *extra, int cubin, void **payload, size_t *len) {
  const char *why = NULL;
  const ndf__nvrtc_api *nv = ndf__nvrtc(&why);
  if (!nv) return ndf__error(ectx, NDF_ENODEV, "%s: %s", op, why);
  double t0 = now_ms();
  nvrtcProgram prog = NULL;
  nvrtcResult r = nv->nvrtcCreateProgram(&prog, src, "ndforge_kernel.cu", 0, NULL, NULL);
  if (r != 0) return ndf__error(ectx, NDF_ECOMPILE, "%s: nvrtcCreateProgram: %s", op, nv->nvrtcGetErrorString(r));
  char archopt[64];
  snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", target);
  const char *opts[NBASE_OPTIONS + 2 + NEXTRA];
  int nopts = 0;
  for (int i = 0; i < NBASE_OPTIONS; i++) opts[nopts++] = base_options[i];
  opts[nopts++] = archopt;
  /* extra: the key's options beyond the base ones, separated by spaces */
  char xbuf[EXTRA_LEN];
  snprintf(xbuf, sizeof xbuf, "%s", extra);
  for (char *q = xbuf, *sv = NULL, *o; nopts < NBASE_OPTIONS + 1 + NEXTRA && (o = strtok_r(q, " ", &sv)); q = NULL)
    opts[nopts++] = o;
  /* -lineinfo exactly when the key says so (one reading of the knob per request) */
  if (strstr(key, " -lineinfo\nslots")) opts[nopts++] = "-lineinfo";
  r = nv->nvrtcCompileProgram(prog, nopts, opts);
  if (r != 0) {
    size_t loglen = 0;
    nv->nvrtcGetProgramLogSize(prog, &loglen);
    char *log = malloc(loglen + 1);
    if (log) {
      log[0] = '\0';
      nv->nvrtcGetProgramLog(prog, log);
      log[loglen] = '\0';
    }
    ndf__error(ectx, NDF_ECOMPILE, "%s: NVRTC failed (%s) with options '%s %s %s %s%s%s'\n%s\nkey:\n%s", op,
               nv->nvrtcGetErrorString(r), opts[0], opts[1], opts[2], archopt, extra[0] ? " " : "", extra,
               log ? log : "(no log)", key);
    free(log);
    nv->nvrtcDestroyProgram(&prog);
    return NDF_ECOMPILE;
  }
  size_t n = 0;
  r = cubin ? nv->nvrtcGetCUBINSize(prog, &n) : nv->nvrtcGetPTXSize(prog, &n);
  char *out = r == 0 ? malloc(n + 1) : NULL;
  if (!out) {
    nv->nvrtcDestroyProgram(&prog);
    return ndf__error(ectx, r ? NDF_ECOMPILE : NDF_ENOMEM, "%s: cannot get the compiled code", op);
  }
  out[0] = cubin ? 'C' : 'P';
  r = cubin ? nv->nvrtcGetCUBIN(prog, out + 1) : nv->nvrtcGetPTX(prog, out + 1);
  nv->nvrtcDestroyProgram(&prog);
  if (r != 0) {
    free(out);
    return ndf__error(ectx, NDF_ECOMPILE, "%s: cannot get the compiled code", op);
  }
  pthread_mutex_lock(&ctx->lock);
  ctx->stats.compiles++;
  ctx->stats.compile_ms += now_ms() - t0;
  pthread_mutex_unlock(&ctx->lock);
  *payload = out;
  *len = n + 1;
  return NDF_OK;
}

/* One request on its way to a payload: the disk lookup fills key, target and,
 * on a hit, payload; a miss leaves payload NULL for compile_payload. */
typedef struct jit_job {
  ndf_ctx *ctx;
  const char *op;
  const ndf__kernel_req *req;
  char *key; /* the disk key (malloc'd) */
  char target[32];
  char extra[EXTRA_LEN]; /* NVRTC options of the key beyond the base ones, space-separated ("" none): jit_options */
  int cubin;
  void *payload; /* 'C' or 'P' + image (malloc'd) */
  size_t len;
  int compiled;    /* NVRTC ran */
  int store_errno; /* why the disk cache could not keep the compiled payload (0: it did, or no cache) */
  ndf_status st;
  int worker; /* compile_payload runs on a thread of its own: its errors go to err, not ctx */
  char *err;
} jit_job;

static void job_free(jit_job *j) {
  free(j->key);
  free(j->payload);
  free(j->err);
  j->key = NULL;
  j->payload = NULL;
  j->err = NULL;
}

/* Whether the tunable id names template t among its templates. */
static int tunable_names(int id, const ndf__template *t) {
  char list[512], name[128]; /* the tunable's templates, space-separated */
  snprintf(list, sizeof list, " %s ", ndf__tunables[id].templates);
  snprintf(name, sizeof name, " %s ", t->name);
  return strstr(list, name) != NULL;
}

/* The NVRTC options the tunables add for template t (set on the context, the
 * call or the tuning table), space-separated into opt ("" none):
 * - jit.fast_compile: "--Ofast-compile=<level>" when it names t and NVRTC has
 *   the option (12.8 on);
 * - jit.lean: "-DNDF_LEAN=1" when on (the default) and it names t: the
 *   template's forms that compile faster (ADR 0025). */
static void jit_options(ndf_ctx *ctx, const ndf__template *t, int nv_major, int nv_minor, char *opt, size_t n) {
  opt[0] = '\0';
  size_t w = 0;
  const int v = ndf__tune(ctx, NDF__TUNE_JIT_FAST_COMPILE, NULL);
  if (v != NDF__TUNE_JIT_FAST_COMPILE__OFF && nv_major * 100 + nv_minor >= 1208 &&
      tunable_names(NDF__TUNE_JIT_FAST_COMPILE, t))
    w += (size_t)snprintf(opt, n, "--Ofast-compile=%s", ndf__tunables[NDF__TUNE_JIT_FAST_COMPILE].values[v]);
  if (ndf__tune(ctx, NDF__TUNE_JIT_LEAN, NULL) == NDF__TUNE_JIT_LEAN__ON && tunable_names(NDF__TUNE_JIT_LEAN, t) &&
      w < n)
    snprintf(opt + w, n - w, "%s-DNDF_LEAN=1", w ? " " : "");
}

/* The disk lookup of j->req for arch (loads NVRTC only when the remembered
 * identity is missing or stale, or on a miss to check the identity the key used). */
static ndf_status lookup_payload(jit_job *j, const char *arch) {
  ndf_ctx *ctx = j->ctx;
  const char *op = j->op;
  const ndf__template *t = find_template(j->req->template_name);
  if (!t) return ndf__error(ctx, NDF_EINTERNAL, "%s: no kernel template named '%s'", op, j->req->template_name);
  if (j->req->oom) return ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory for a slot of template '%s'", op, t->name);
  const char *why = NULL;
  const ndf__nvrtc_api *nv = NULL;
  nvrtc_id id;
  int id_known = id_load(ctx, &id) == 0;
  j->compiled = 0;
  j->payload = NULL;
  for (int pass = 0; pass < 2; pass++) {
    if (!id_known) { /* load NVRTC: the remembered identity is missing or stale */
      if (!(nv = ndf__nvrtc(&why))) return ndf__error(ctx, NDF_ENODEV, "%s: %s", op, why);
      id_from_nvrtc(nv, &id);
      id_store(ctx, &id);
      id_known = 1;
    }
    pick_target(&id, arch, j->target, sizeof j->target, &j->cubin);
    jit_options(ctx, t, id.major, id.minor, j->extra, sizeof j->extra);
    free(j->key);
    if (!(j->key = disk_key(j->req, t, j->target, id.major, id.minor, j->extra)))
      return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", op);
    if (ndf__cache_load(ctx, j->key, &j->payload, &j->len) == NDF_OK) {
      pthread_mutex_lock(&ctx->lock);
      ctx->stats.disk_hits++;
      pthread_mutex_unlock(&ctx->lock);
      return NDF_OK;
    }
    j->payload = NULL;
    if (nv) break;
    /* A miss: NVRTC is needed now; make sure the identity the key used is its own. */
    if (!(nv = ndf__nvrtc(&why))) return ndf__error(ctx, NDF_ENODEV, "%s: %s", op, why);
    nvrtc_id real;
    id_from_nvrtc(nv, &real);
    if (memcmp(&real, &id, sizeof id) == 0) break;
    id_known = 0; /* stale: redo the lookup with the real identity */
  }
  return NDF_OK;
}

/* A miss of lookup_payload: NVRTC, then the disk cache. */
static ndf_status compile_payload(jit_job *j) {
  ndf_ctx *ctx = j->ctx, *ectx = j->worker ? NULL : ctx; /* a worker's errors: its thread's message */
  ndf_status st;
  char *src = jit_source(ectx, j->op, j->req, NULL, &st);
  if (!src) return st;
  const char *dump = getenv("NDF_DUMP_SOURCE");
  if (dump && *dump) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%016llx.cu", dump,
             (unsigned long long)ndf__hash_fnv1a64(j->key, strlen(j->key), NDF__FNV_SEED));
    FILE *f = fopen(path, "w");
    if (f) {
      fprintf(f, "/* key:\n%s*/\n%s", j->key, src);
      fclose(f);
    }
  }
  ndf_status s = nvrtc_compile(ctx, ectx, j->op, src, j->key, j->target, j->extra, j->cubin, &j->payload, &j->len);
  free(src);
  if (s != NDF_OK) return s;
  j->compiled = 1;
  ndf__cache_store_errno = 0;
  ndf__cache_store(ctx, j->key, j->payload, j->len);
  j->store_errno = ndf__cache_store_errno;
  return NDF_OK;
}

/* Compile-or-load the payload of j->req for arch; j->compiled says whether NVRTC ran. */
static ndf_status get_payload(jit_job *j, const char *arch) {
  ndf_status s = lookup_payload(j, arch);
  if (s == NDF_OK && !j->payload) s = compile_payload(j);
  if (s != NDF_OK) job_free(j);
  return s;
}

ndf_status ndf__jit_warm(ndf_ctx *ctx, const char *op, const ndf__kernel_req *req, const char *arch,
                         int *compiled) {
  return ndf__jit_warm_many(ctx, op, &req, 1, arch, compiled);
}

ndf_status ndf__jit_image(ndf_ctx *ctx, const char *op, const ndf__kernel_req *req, const char *arch, void **image,
                          size_t *len) {
  jit_job j = {.ctx = ctx, .op = op, .req = req};
  ndf_status s = get_payload(&j, arch);
  if (s != NDF_OK) return s;
  *image = j.payload;
  *len = j.len;
  j.payload = NULL;
  job_free(&j);
  return NDF_OK;
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

ndf_status ndf__jit_resolve_many(ndf_ctx *ctx, const char *op, const ndf__kernel_req *const *reqs, int n,
                                 ndf__warm *warm, CUfunction *fns) {
  if (!warm) return ndf__jit_get_many(ctx, op, reqs, n, fns);
  int c[JIT_MANY] = {0};
  ndf_status s = ndf__jit_warm_many(ctx, op, reqs, n, warm->arch, c);
  for (int i = 0; i < n && i < JIT_MANY; i++) {
    warm->compiled += c[i];
    if (fns) fns[i] = NULL;
  }
  return s;
}

ndf_status ndf__warm_check(ndf_ctx *ctx, const char *name, const char *arch, ndf_dtype dtype, int ndim,
                           int *compiled) {
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  ndf__clear_error(ctx);
  if (compiled) *compiled = 0;
  if (!arch || strncmp(arch, "sm_", 3) != 0 || atoi(arch + 3) < 50)
    return ndf__argerror(ctx, name, "arch", "'%s' is not an architecture like sm_90", arch ? arch : "(null)");
  if (!ndf_dtype_size(dtype))
    return ndf__argerror(ctx, name, "dtype", "unsupported dtype %d", (int)dtype);
  if (ndim < 1 || ndim > NDF_MAX_NDIM) return ndf__argerror(ctx, name, "ndim", "%d is not in 1..%d", ndim, NDF_MAX_NDIM);
  return NDF_OK;
}

void ndf__warm_array(ndf_array *a, int slot, ndf_dtype dtype, int ndim) {
  int64_t shape[NDF_MAX_NDIM];
  for (int d = 0; d < ndim; d++) shape[d] = 64;
  ndf_array_init(a, (void *)(uintptr_t)(((uintptr_t)slot + 1) << 52), NDF_DEVICE_CPU, dtype, ndim, shape);
}

/* The in-memory key: template, kernel and slot values in request order, and
 * "|~jit=<fast_compile>,<lean>" where those tunables differ from their
 * defaults (their options change the compiled code: a context that changes
 * them gets the other form, not the module it holds); into buf when it fits,
 * else malloc'd (*heap set; NULL when out of memory). */
static char *memory_key(ndf_ctx *ctx, const ndf__kernel_req *req, char *buf, size_t n, size_t *len, char **heap) {
  const int fc = ndf__tune(ctx, NDF__TUNE_JIT_FAST_COMPILE, NULL), ln = ndf__tune(ctx, NDF__TUNE_JIT_LEAN, NULL);
  const int jit = fc != NDF__TUNE_JIT_FAST_COMPILE__OFF || ln != NDF__TUNE_JIT_LEAN__ON;
  size_t need = strlen(req->template_name) + strlen(req->kernel) + 2 + (jit ? 32 : 0);
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
  if (jit && w < n) w += (size_t)snprintf(buf + w, n - w, "|~jit=%d,%d", fc, ln);
  *len = w;
  return buf;
}

/* The in-memory table's function for mkey (hash h), or NULL. */
static CUfunction memory_find(ndf_ctx *ctx, const char *mkey, uint64_t h) {
  CUfunction fn = NULL;
  pthread_mutex_lock(&ctx->lock);
  for (ndf__module_entry *e = ctx->modules; e; e = e->next) {
    if (e->hash == h && strcmp(e->key, mkey) == 0) {
      ctx->stats.memory_hits++;
      fn = e->fn;
      break;
    }
  }
  pthread_mutex_unlock(&ctx->lock);
  return fn;
}

/* Loads j's payload as a module and enters it in the in-memory table under mkey;
 * consumes the payload.  *retry: a cached image was corrupt or the driver
 * rejected it (removed from the disk cache; look it up again). */
static ndf_status install(jit_job *j, const char *mkey, uint64_t h, CUfunction *out, int *retry) {
  ndf_ctx *ctx = j->ctx;
  const ndf__cu_api *cu = ndf__cu(NULL);
  CUmodule mod = NULL;
  CUfunction fn = NULL;
  *retry = 0;
  /* Byte 0 says CUBIN ('C') or PTX ('P'); PTX from NVRTC carries its NUL terminator. */
  const char *image = j->payload;
  if (j->len < 2 || (image[0] == 'P' && image[j->len - 1] != '\0')) {
    ndf__cache_remove(ctx, j->key);
    job_free(j);
    *retry = 1;
    return NDF_OK;
  }
  CUresult r = cu->cuModuleLoadData(&mod, image + 1);
  if (r == CUDA_SUCCESS) r = cu->cuModuleGetFunction(&fn, mod, j->req->kernel);
  if (r != CUDA_SUCCESS) {
    if (mod) cu->cuModuleUnload(mod);
    if (!j->compiled) {
      /* A cached image the driver rejects is as good as corrupt: drop it and compile. */
      ndf__cache_remove(ctx, j->key);
      job_free(j);
      *retry = 1;
      return NDF_OK;
    }
    job_free(j);
    return ndf__cuda_error(ctx, j->op, r);
  }
  job_free(j);
  ndf__module_entry *e = calloc(1, sizeof *e);
  if (!e || !(e->key = strdup(mkey))) {
    free(e);
    cu->cuModuleUnload(mod);
    return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", j->op);
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

/* Memory, then disk or NVRTC, then the module load (twice at most: once
 * more after a rejected cached image). */
static ndf_status jit_get(ndf_ctx *ctx, const char *op, const ndf__kernel_req *req, const char *mkey, uint64_t h,
                          CUfunction *out) {
  if ((*out = memory_find(ctx, mkey, h)) != NULL) return NDF_OK;
  for (int attempt = 0; attempt < 2; attempt++) {
    jit_job j = {.ctx = ctx, .op = op, .req = req};
    ndf_status s = get_payload(&j, ctx->arch);
    if (s != NDF_OK) return s;
    int retry = 0;
    s = install(&j, mkey, h, out, &retry);
    if (s != NDF_OK || !retry) return s;
  }
  return ndf__error(ctx, NDF_ECUDA, "%s: cannot load kernel '%s'", op, req->kernel);
}

ndf_status ndf__jit_get(ndf_ctx *ctx, const char *op, const ndf__kernel_req *req, CUfunction *out) {
  char buf[2048], *heap = NULL;
  size_t mlen = 0;
  const char *mkey = memory_key(ctx, req, buf, sizeof buf, &mlen, &heap);
  if (!mkey) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", op);
  ndf_status s = jit_get(ctx, op, req, mkey, ndf__hash_fnv1a64(mkey, mlen, NDF__FNV_SEED), out);
  free(heap);
  return s;
}

static void *compile_thread(void *arg) {
  jit_job *j = arg;
  j->st = compile_payload(j);
  if (j->st != NDF_OK) j->err = strdup(ndf_last_error());
  return NULL;
}

/* Compiles the jobs that the disk lookup missed (a key, no payload) at once:
 * the first on this thread, each other on its own (at most JIT_MANY).  The
 * first failure's status. */
static ndf_status compile_all(jit_job *jobs, int n) {
  pthread_t th[JIT_MANY];
  int started[JIT_MANY] = {0}, first = 1;
  for (int i = 0; i < n; i++) {
    if (!jobs[i].key || jobs[i].payload) continue;
    if (first) {
      first = 0;
      continue;
    }
    jobs[i].worker = 1;
    started[i] = pthread_create(&th[i], NULL, compile_thread, &jobs[i]) == 0;
    jobs[i].worker = started[i];
  }
  for (int i = 0; i < n; i++)
    if (jobs[i].key && !jobs[i].payload && !started[i]) jobs[i].st = compile_payload(&jobs[i]);
  for (int i = 0; i < n; i++)
    if (started[i]) pthread_join(th[i], NULL);
  /* the first failure in the list's order, its message in the context */
  for (int i = 0; i < n; i++)
    if (jobs[i].key && jobs[i].st != NDF_OK)
      return jobs[i].err ? ndf__error(jobs[i].ctx, jobs[i].st, "%s", jobs[i].err) : jobs[i].st;
  return NDF_OK;
}

ndf_status ndf__jit_warm_many(ndf_ctx *ctx, const char *op, const ndf__kernel_req *const *reqs, int n,
                              const char *arch, int *compiled) {
  if (n < 1 || n > JIT_MANY)
    return ndf__error(ctx, NDF_EINTERNAL, "%s: %d kernel requests at once (1 to %d)", op, n, JIT_MANY);
  jit_job jobs[JIT_MANY];
  memset(jobs, 0, sizeof jobs);
  ndf_status s = NDF_OK;
  for (int i = 0; i < n && s == NDF_OK; i++) {
    jobs[i] = (jit_job){.ctx = ctx, .op = op, .req = reqs[i]};
    s = lookup_payload(&jobs[i], arch);
    /* a miss that an earlier request of the list compiles: nothing to do (as
     * ndf__jit_warm after it would find the entry) */
    for (int k = 0; k < i && s == NDF_OK && !jobs[i].payload; k++)
      if (jobs[k].key && !jobs[k].payload && strcmp(jobs[k].key, jobs[i].key) == 0) {
        job_free(&jobs[i]);
        break;
      }
  }
  if (s == NDF_OK) s = compile_all(jobs, n);
  for (int i = 0; i < n; i++) compiled[i] = jobs[i].compiled;
  for (int i = 0; i < n && s == NDF_OK; i++) {
    /* warming is for the disk cache: a kernel it could not keep is an error */
    if (jobs[i].store_errno)
      s = ndf__error(ctx, NDF_EIO, "%s: cannot store the compiled kernel in '%s' (%s)", op, ctx->cache_dir,
                     strerror(jobs[i].store_errno));
  }
  for (int i = 0; i < n; i++) job_free(&jobs[i]);
  return s;
}

ndf_status ndf__jit_get_many(ndf_ctx *ctx, const char *op, const ndf__kernel_req *const *reqs, int n,
                             CUfunction *out) {
  enum { MAXN = JIT_MANY };
  if (n < 1 || n > MAXN) return ndf__error(ctx, NDF_EINTERNAL, "%s: %d kernel requests at once (1 to %d)", op, n, MAXN);
  jit_job jobs[MAXN];
  char kbuf[MAXN][512], *heap[MAXN];
  const char *mkeys[MAXN];
  uint64_t hashes[MAXN];
  CUfunction fns[MAXN];
  ndf_status s = NDF_OK;
  memset(jobs, 0, sizeof jobs);
  memset(heap, 0, sizeof heap);
  for (int i = 0; i < n; i++) {
    size_t mlen = 0;
    mkeys[i] = memory_key(ctx, reqs[i], kbuf[i], sizeof kbuf[i], &mlen, &heap[i]);
    if (!mkeys[i]) {
      s = ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", op);
      goto out;
    }
    hashes[i] = ndf__hash_fnv1a64(mkeys[i], mlen, NDF__FNV_SEED);
    jobs[i] = (jit_job){.ctx = ctx, .op = op, .req = reqs[i]};
    if ((fns[i] = memory_find(ctx, mkeys[i], hashes[i])) != NULL) continue;
    /* the same request twice in the list: the first one's result serves both */
    int dup = 0;
    for (int k = 0; k < i && !dup; k++) dup = hashes[k] == hashes[i] && strcmp(mkeys[k], mkeys[i]) == 0;
    if (dup) continue;
    if ((s = lookup_payload(&jobs[i], ctx->arch)) != NDF_OK) goto out;
  }
  if ((s = compile_all(jobs, n)) != NDF_OK) goto out;
  /* The module loads, in order, on this thread (the context's). */
  for (int i = 0; i < n && s == NDF_OK; i++) {
    if (!jobs[i].key) continue;
    int retry = 0;
    s = install(&jobs[i], mkeys[i], hashes[i], &fns[i], &retry);
    if (s == NDF_OK && retry) s = jit_get(ctx, op, reqs[i], mkeys[i], hashes[i], &fns[i]);
  }
  for (int i = 0; i < n && s == NDF_OK; i++) {
    if (jobs[i].key || fns[i]) continue;
    s = jit_get(ctx, op, reqs[i], mkeys[i], hashes[i], &fns[i]); /* a duplicate: now in memory */
  }
  if (s == NDF_OK && out) memcpy(out, fns, (size_t)n * sizeof *out);
out:
  for (int i = 0; i < n; i++) {
    job_free(&jobs[i]);
    free(heap[i]);
  }
  return s;
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
