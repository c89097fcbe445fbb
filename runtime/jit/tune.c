/*
 * tune.c -- tunables on a context, the tuning table and the tuner
 * (docs/adr/0019-tunables-and-autotuning.md).
 *
 * The table is a text file in the cache directory, one per device:
 *
 *   ndforge-tuning 1
 *   device <name>
 *   cc <major>.<minor>
 *   driver <cuDriverGetVersion>
 *   nvrtc <major>.<minor>
 *   ndforge <version>
 *   entry <tunable> <dtype> <nsp> <ceil log2 elements> <window> <value>
 *   ...
 *   end <entries> <FNV-1a 64 of every byte before this line, hex>
 *
 * The file's name hashes the device name and compute capability; the other
 * fields of the identity are compared on load: a table written under another
 * driver, NVRTC or ndforge is stale.  A stale or corrupt table is ignored
 * (never an error) with a note in the kernel log.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "tune.h"

/* ---- the table ------------------------------------------------------------------------ */
typedef struct tune_entry {
  uint64_t h; /* 0: empty slot */
  int id, value;
  ndf__tune_work w; /* n as its class (ceil log2) */
} tune_entry;

struct ndf__tune_table {
  tune_entry *slots;
  int cap, count;
};

/* ceil(log2(n)), 0 for n <= 1. */
static int64_t n_class(int64_t n) { return n <= 1 ? 0 : 64 - __builtin_clzll((unsigned long long)(n - 1)); }

/* A few multiplies (the look-up runs at every choice of every call): the
 * fields packed, then splitmix64's finalizer; never 0 (the empty slot). */
static uint64_t entry_hash(int id, ndf_dtype dt, int nsp, int64_t nc, int64_t k) {
  uint64_t h = ((uint64_t)id << 48) ^ ((uint64_t)dt << 40) ^ ((uint64_t)nsp << 32) ^ ((uint64_t)nc << 24) ^
               (uint64_t)k * 0x9e3779b97f4a7c15ull;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  h ^= h >> 31;
  return h ? h : 1;
}

ndf__tune_table *ndf__tune_table_new(void) { return calloc(1, sizeof(ndf__tune_table)); }

void ndf__tune_table_free(ndf__tune_table *t) {
  if (!t) return;
  free(t->slots);
  free(t);
}

int ndf__tune_table_count(const ndf__tune_table *t) { return t ? t->count : 0; }

static tune_entry *find_slot(const ndf__tune_table *t, int id, ndf_dtype dt, int nsp, int64_t nc, int64_t k,
                             uint64_t h) {
  if (!t->cap) return NULL;
  for (int i = (int)(h & (uint64_t)(t->cap - 1));; i = (i + 1) & (t->cap - 1)) {
    tune_entry *e = &t->slots[i];
    if (!e->h || (e->h == h && e->id == id && e->w.dtype == dt && e->w.nsp == nsp && e->w.n == nc && e->w.k == k))
      return e;
  }
}

static int grow(ndf__tune_table *t) {
  int cap = t->cap ? 2 * t->cap : 64;
  tune_entry *old = t->slots, *s = calloc((size_t)cap, sizeof *s);
  if (!s) return -1;
  int ocap = t->cap;
  t->slots = s, t->cap = cap;
  for (int i = 0; i < ocap; i++)
    if (old[i].h && old[i].value >= 0) {
      tune_entry *e = find_slot(t, old[i].id, old[i].w.dtype, old[i].w.nsp, old[i].w.n, old[i].w.k, old[i].h);
      *e = old[i];
    }
  free(old);
  return 0;
}

/* Removed entries keep their slot with value -1 (the probe sequence stays intact). */
static int put_class(ndf__tune_table *t, int id, ndf_dtype dt, int nsp, int64_t nc, int64_t k, int value) {
  if ((t->count + 1) * 2 > t->cap && grow(t) != 0) return -1;
  const uint64_t h = entry_hash(id, dt, nsp, nc, k);
  tune_entry *e = find_slot(t, id, dt, nsp, nc, k, h);
  if (!e->h) {
    if (value < 0) return 0;
    e->h = h, e->id = id, e->w.dtype = dt, e->w.nsp = nsp, e->w.n = nc, e->w.k = k, e->value = -1;
  }
  if (e->value < 0 && value >= 0) t->count++;
  if (e->value >= 0 && value < 0) t->count--;
  e->value = value;
  return 0;
}

int ndf__tune_table_put(ndf__tune_table *t, int id, const ndf__tune_work *w, int value) {
  return put_class(t, id, w->dtype, w->nsp, n_class(w->n), w->k, value);
}

int ndf__tune_table_get(const ndf__tune_table *t, int id, const ndf__tune_work *w) {
  if (!t || !t->count) return -1;
  const int64_t nc = n_class(w->n);
  const tune_entry *e = find_slot(t, id, w->dtype, w->nsp, nc, w->k, entry_hash(id, w->dtype, w->nsp, nc, w->k));
  return e && e->h ? e->value : -1;
}

static int find_tunable(const char *name) {
  for (int i = 0; name && i < ndf__ntunables; i++)
    if (strcmp(ndf__tunables[i].name, name) == 0) return i;
  return -1;
}

/* The value of tunable id written as text: an enumerated value's index or a
 * decimal integer within the range; -1 when it is neither. */
static int parse_value(int id, const char *v) {
  const ndf__tunable_def *d = &ndf__tunables[id];
  if (!v || !*v) return -1;
  if (d->nvalues) {
    for (int i = 0; i < d->nvalues; i++)
      if (strcmp(d->values[i], v) == 0) return i;
    return -1;
  }
  char *end = NULL;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (errno || *end || x < d->lo || x > d->hi) return -1;
  return (int)x;
}

static void value_text(int id, int value, char *buf, size_t cap) {
  const ndf__tunable_def *d = &ndf__tunables[id];
  if (d->nvalues) snprintf(buf, cap, "%s", value >= 0 && value < d->nvalues ? d->values[value] : "?");
  else snprintf(buf, cap, "%d", value);
}

static void ident_lines(const ndf__tune_ident *id, char *buf, size_t cap) {
  snprintf(buf, cap, "ndforge-tuning 1\ndevice %s\ncc %d.%d\ndriver %d\nnvrtc %d.%d\nndforge %s\n", id->device,
           id->cc_major, id->cc_minor, id->driver, id->nvrtc_major, id->nvrtc_minor, id->version);
}

char *ndf__tune_table_format(const ndf__tune_table *t, const ndf__tune_ident *id) {
  char head[1024];
  ident_lines(id, head, sizeof head);
  size_t cap = strlen(head) + 128 + (size_t)(t ? t->cap : 0) * 160, n = 0;
  char *s = malloc(cap);
  if (!s) return NULL;
  n += (size_t)snprintf(s, cap, "%s", head);
  int count = 0;
  for (int i = 0; t && i < t->cap; i++) {
    const tune_entry *e = &t->slots[i];
    if (!e->h || e->value < 0) continue;
    char v[64];
    value_text(e->id, e->value, v, sizeof v);
    n += (size_t)snprintf(s + n, cap - n, "entry %s %s %d %lld %lld %s\n", ndf__tunables[e->id].name,
                          ndf_dtype_name(e->w.dtype), e->w.nsp, (long long)e->w.n, (long long)e->w.k, v);
    count++;
  }
  snprintf(s + n, cap - n, "end %d %016llx\n", count, (unsigned long long)ndf__hash_fnv1a64(s, n, NDF__FNV_SEED));
  return s;
}

/* The next line of text [*p, end) into buf (without its newline); 0 at the end
 * or for a line too long (the caller then reports the file corrupt). */
static int next_line(const char **p, const char *end, char *buf, size_t cap, int *too_long) {
  if (*p >= end) return 0;
  const char *nl = memchr(*p, '\n', (size_t)(end - *p));
  if (!nl) nl = end;
  size_t n = (size_t)(nl - *p);
  if (n >= cap) {
    *too_long = 1;
    return 0;
  }
  memcpy(buf, *p, n);
  buf[n] = '\0';
  *p = nl < end ? nl + 1 : end;
  return 1;
}

int ndf__tune_table_parse(ndf__tune_table *t, const char *text, size_t len, const ndf__tune_ident *want, char *why,
                          size_t cap) {
  /* the trailer: "end <count> <hex>\n" as the last line, its checksum over everything before it */
  const char *end = text + len;
  if (len < 2 || text[len - 1] != '\n' || memchr(text, '\0', len)) {
    snprintf(why, cap, "corrupt: not a text file ending in a newline");
    return -1;
  }
  const char *last = end - 1;
  while (last > text && last[-1] != '\n') last--;
  int want_count = -1;
  unsigned long long sum = 0;
  if (sscanf(last, "end %d %16llx", &want_count, &sum) != 2 || want_count < 0) {
    snprintf(why, cap, "corrupt: no trailer line (a truncated file)");
    return -1;
  }
  if (ndf__hash_fnv1a64(text, (size_t)(last - text), NDF__FNV_SEED) != (uint64_t)sum) {
    snprintf(why, cap, "corrupt: checksum mismatch");
    return -1;
  }
  char head[1024];
  ident_lines(want, head, sizeof head);
  const size_t hl = strlen(head);
  if (strncmp(text, "ndforge-tuning 1\n", 17) != 0) {
    snprintf(why, cap, "corrupt: not an ndforge tuning table of format 1");
    return -1;
  }
  if ((size_t)(last - text) < hl || memcmp(text, head, hl) != 0) {
    /* name the first field that differs */
    const char *a = text, *b = head;
    while (*a == *b && *b) a++, b++;
    while (b > head && b[-1] != '\n') b--;
    const char *eol = strchr(b, '\n');
    snprintf(why, cap, "stale: made for another %.*s", (int)(eol ? eol - b : 40), b);
    return -2;
  }
  const char *p = text + hl;
  char line[512];
  int too_long = 0, count = 0;
  while (p < last && next_line(&p, last, line, sizeof line, &too_long)) {
    char name[128], dts[32], val[64];
    int nsp;
    long long nc, k;
    if (sscanf(line, "entry %127s %31s %d %lld %lld %63s", name, dts, &nsp, &nc, &k, val) != 6) {
      snprintf(why, cap, "corrupt: a line that does not parse: '%.80s'", line);
      return -1;
    }
    const int id = find_tunable(name);
    ndf_dtype dt;
    if (id < 0 || ndf_dtype_from_name(dts, &dt) != NDF_OK) {
      snprintf(why, cap, "stale: unknown tunable or dtype in '%.80s'", line);
      return -2;
    }
    const int v = parse_value(id, val);
    if (v < 0 || nsp < 0 || nsp > NDF_MAX_NDIM || nc < 0 || nc > 62 || k < 0) {
      snprintf(why, cap, "stale: a value outside the domain in '%.80s'", line);
      return -2;
    }
    if (put_class(t, id, dt, nsp, nc, k, v) != 0) {
      snprintf(why, cap, "out of memory");
      return -1;
    }
    count++;
  }
  if (too_long || count != want_count) {
    snprintf(why, cap, "corrupt: %s", too_long ? "a line too long" : "entry count mismatch");
    return -1;
  }
  why[0] = '\0';
  return 0;
}

static void domain_text(int id, char *buf, size_t cap);

/* ---- the context's state ------------------------------------------------------------------ */
#define TUNE_REC 64
typedef struct ndf__tune_state {
  int val[NDF__TUNE_COUNT];
  unsigned char set[NDF__TUNE_COUNT];
  int use;   /* 0: ndf_ctx_tuning_use(ctx, 0), or the tuner at work */
  int state; /* ndf_tuning_status.state */
  ndf__tune_table *table;
  uint64_t hits;
  char dir[4096]; /* ndf_ctx_tuning_from's directory ("": the cache directory) */
  char path[4200];
  char note[512]; /* "tune|ignored <path>: <why>": the kernel log's entry */
  /* the tuner's record of the consults of a call (under the context's lock) */
  int recording, nrec;
  struct {
    int id;
    ndf__tune_work w;
  } rec[TUNE_REC];
} ndf__tune_state;

static ndf__tune_state *state(ndf_ctx *ctx) {
  ndf__tune_state *t = __atomic_load_n(&ctx->tune, __ATOMIC_ACQUIRE);
  if (t) return t;
  pthread_mutex_lock(&ctx->lock);
  t = ctx->tune;
  if (!t && (t = calloc(1, sizeof *t))) {
    t->use = 1;
    __atomic_store_n(&ctx->tune, t, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&ctx->lock);
  return t;
}

void ndf__tune_release(ndf_ctx *ctx) {
  if (!ctx->tune) return;
  ndf__tune_table_free(ctx->tune->table);
  free(ctx->tune);
  ctx->tune = NULL;
}

static int ident_of(ndf_ctx *ctx, ndf__tune_ident *id) {
  memset(id, 0, sizeof *id);
  if (!ctx->has_cuda) return -1;
  const ndf__cu_api *cu = ndf__cu(NULL);
  if (cu->cuDeviceGetName(id->device, (int)sizeof id->device, ctx->dev) != CUDA_SUCCESS) return -1;
  for (char *c = id->device; *c; c++)
    if (*c == '\n' || *c == '\r') *c = ' ';
  id->cc_major = ctx->cc_major, id->cc_minor = ctx->cc_minor;
  cu->cuDriverGetVersion(&id->driver);
  ndf__jit_nvrtc_version(ctx, &id->nvrtc_major, &id->nvrtc_minor);
  snprintf(id->version, sizeof id->version, "%s", NDF_VERSION_STRING);
  return 0;
}

static void table_path(ndf_ctx *ctx, const char *dir, const ndf__tune_ident *id, char *buf, size_t cap) {
  buf[0] = '\0';
  if (!dir[0] && (ctx->cache_disabled || !ctx->cache_dir[0])) return;
  char k[400];
  snprintf(k, sizeof k, "%s|%d.%d", id->device, id->cc_major, id->cc_minor);
  snprintf(buf, cap, "%.4070s/tuning-%016llx.txt", dir[0] ? dir : ctx->cache_dir,
           (unsigned long long)ndf__hash_fnv1a64(k, strlen(k), NDF__FNV_SEED));
}

#define TABLE_MAX_BYTES (16 << 20)

/* Reads the table once (under the context's lock). */
static void load_locked(ndf_ctx *ctx, ndf__tune_state *t) {
  if (t->state != 0) return;
  t->state = 1;
  ndf__tune_ident id;
  if (ident_of(ctx, &id) != 0) return;
  table_path(ctx, t->dir, &id, t->path, sizeof t->path);
  if (!t->path[0]) return;
  int odd = 0, fd = ndf__cache_open(t->path, &odd);
  if (fd < 0 && !odd) return; /* no table */
  char why[400] = "not a regular file";
  char *text = NULL;
  ssize_t n = 0;
  int r = -1;
  if (fd >= 0 && (text = malloc(TABLE_MAX_BYTES + 1))) {
    ssize_t k;
    while (n < TABLE_MAX_BYTES && (k = read(fd, text + n, (size_t)(TABLE_MAX_BYTES - n))) > 0) n += k;
    if (n >= TABLE_MAX_BYTES) snprintf(why, sizeof why, "corrupt: larger than %d bytes", TABLE_MAX_BYTES);
    else if ((t->table = ndf__tune_table_new())) r = ndf__tune_table_parse(t->table, text, (size_t)n, &id, why, sizeof why);
  }
  if (fd >= 0) close(fd);
  free(text);
  if (r == 0) {
    __atomic_store_n(&t->state, 2, __ATOMIC_RELEASE); /* after the table: readers outside the lock */
    return;
  }
  ndf__tune_table_free(t->table);
  t->table = NULL;
  __atomic_store_n(&t->state, 3, __ATOMIC_RELEASE);
  snprintf(t->note, sizeof t->note, "tune|ignored %.300s: %s", t->path, why);
  /* the kernel log's note: the entry's text lives with the state, until ndf_ctx_destroy */
  ctx->klog[ctx->klog_count % NDF__KLOG] = t->note;
  ctx->klog_count++;
}

/* The calls with their own tunables running on this thread, innermost first. */
static _Thread_local const ndf__tune_call *tune_calls;

ndf_status ndf__tune_call_begin(ndf_ctx *ctx, const char *op, const char *tune, ndf__tune_call *c) {
  memset(c, 0, sizeof *c);
  c->ctx = ctx;
  if (!tune || !*tune) return NDF_OK;
  for (const char *p = tune; *p;) {
    const char *comma = strchr(p, ','), *e = comma ? comma : p + strlen(p), *eq = memchr(p, '=', (size_t)(e - p));
    char name[128], value[128];
    if (!eq || eq == p || eq + 1 == e || (size_t)(eq - p) >= sizeof name || (size_t)(e - eq - 1) >= sizeof value)
      return ndf__argerror(ctx, op, "tune", "'%.*s' is not NAME=VALUE", (int)(e - p > 200 ? 200 : e - p), p);
    memcpy(name, p, (size_t)(eq - p));
    name[eq - p] = '\0';
    memcpy(value, eq + 1, (size_t)(e - eq - 1));
    value[e - eq - 1] = '\0';
    const int id = find_tunable(name), v = id >= 0 ? parse_value(id, value) : -1;
    if (id < 0) return ndf__argerror(ctx, op, "tune", "unknown tunable '%s' (ndforge tunables lists them)", name);
    if (v < 0) {
      char dom[1024];
      domain_text(id, dom, sizeof dom);
      return ndf__argerror(ctx, op, "tune", "bad value '%s' for %s (%s)", value, name, dom);
    }
    if (c->n == NDF__TUNE_CALL_MAX) return ndf__argerror(ctx, op, "tune", "more than %d items", NDF__TUNE_CALL_MAX);
    c->id[c->n] = id, c->val[c->n] = v, c->n++;
    p = comma ? comma + 1 : e;
  }
  c->prev = tune_calls;
  c->active = 1;
  tune_calls = c;
  return NDF_OK;
}

void ndf__tune_call_end(ndf__tune_call *c) {
  if (c->active) tune_calls = c->prev;
  c->active = 0;
}

int ndf__tune(ndf_ctx *ctx, int id, const ndf__tune_work *w) {
  const ndf__tunable_def *d = &ndf__tunables[id];
  ndf__tune_state *t = state(ctx);
  if (!t) return d->def;
  if (w && !d->applies(w)) return d->def;
  for (const ndf__tune_call *c = tune_calls; c; c = c->prev)
    if (c->ctx == ctx)
      for (int i = 0; i < c->n; i++)
        if (c->id[i] == id) return c->val[i];
  if (t->recording && w) {
    pthread_mutex_lock(&ctx->lock);
    int i;
    for (i = 0; i < t->nrec; i++)
      if (t->rec[i].id == id && !memcmp(&t->rec[i].w, w, sizeof *w)) break;
    if (i == t->nrec && t->nrec < TUNE_REC) {
      t->rec[i].id = id;
      t->rec[i].w = *w;
      t->nrec++;
    }
    pthread_mutex_unlock(&ctx->lock);
  }
  if (t->set[id]) return t->val[id];
  if (!w || !t->use) return d->def;
  int st = __atomic_load_n(&t->state, __ATOMIC_ACQUIRE);
  if (st == 0) {
    pthread_mutex_lock(&ctx->lock);
    load_locked(ctx, t);
    pthread_mutex_unlock(&ctx->lock);
    st = __atomic_load_n(&t->state, __ATOMIC_ACQUIRE);
  }
  if (st != 2) return d->def;
  const int v = ndf__tune_table_get(t->table, id, w);
  if (v < 0) return d->def;
  __atomic_fetch_add(&t->hits, 1, __ATOMIC_RELAXED);
  return v;
}

int ndf__tune_is_set(ndf_ctx *ctx, int id) {
  const ndf__tune_state *t = state(ctx);
  return t && t->set[id];
}

/* ---- the public API -------------------------------------------------------------------------- */
int ndf_tunable_count(void) { return ndf__ntunables; }

ndf_status ndf_tunable_get(int i, ndf_tunable_info *out) {
  if (!out) return ndf__error(NULL, NDF_EINVAL, "ndf_tunable_get: bad argument 'out' (NULL)");
  if (i < 0 || i >= ndf__ntunables)
    return ndf__error(NULL, NDF_EINVAL, "ndf_tunable_get: bad argument 'i' (%d; %d tunables)", i, ndf__ntunables);
  const ndf__tunable_def *d = &ndf__tunables[i];
  out->name = d->name, out->op = d->op, out->templates = d->templates, out->doc = d->doc, out->rule = d->rule;
  out->nvalues = d->nvalues, out->values = d->values, out->lo = d->lo, out->hi = d->hi, out->def = d->def;
  out->tuned = d->nsearch > 0;
  return NDF_OK;
}

static void domain_text(int id, char *buf, size_t cap) {
  const ndf__tunable_def *d = &ndf__tunables[id];
  size_t n = 0;
  buf[0] = '\0';
  if (!d->nvalues) {
    snprintf(buf, cap, "an integer in %d..%d", d->lo, d->hi);
    return;
  }
  for (int i = 0; i < d->nvalues && n < cap; i++)
    n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? ", " : "one of ", d->values[i]);
}

ndf_status ndf_ctx_set_tunable(ndf_ctx *ctx, const char *name, const char *value) {
  static const char *fn = "ndf_ctx_set_tunable";
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", fn);
  const int id = find_tunable(name);
  if (id < 0) {
    char list[4096];
    size_t n = 0;
    list[0] = '\0';
    for (int i = 0; i < ndf__ntunables && n < sizeof list; i++)
      n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", ndf__tunables[i].name);
    return ndf__error(ctx, NDF_EINVAL, "%s: unknown tunable '%.100s' (the tunables: %s)", fn, name ? name : "(null)",
                      list);
  }
  ndf__tune_state *t = state(ctx);
  if (!t) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", fn);
  if (!value || strcmp(value, "default") == 0) {
    t->set[id] = 0;
    ndf__clear_error(ctx);
    return NDF_OK;
  }
  const int v = parse_value(id, value);
  if (v < 0) {
    char dom[1024];
    domain_text(id, dom, sizeof dom);
    return ndf__error(ctx, NDF_EINVAL, "%s: bad value '%.100s' for tunable %s (%s, or default)", fn, value, name,
                      dom);
  }
  t->val[id] = v;
  t->set[id] = 1;
  ndf__clear_error(ctx);
  return NDF_OK;
}

ndf_status ndf_ctx_get_tunable(ndf_ctx *ctx, const char *name, char *buf, size_t cap) {
  static const char *fn = "ndf_ctx_get_tunable";
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", fn);
  if (!buf || cap == 0) return ndf__argerror(ctx, fn, "buf", "NULL or no room");
  const int id = find_tunable(name);
  if (id < 0) return ndf__error(ctx, NDF_EINVAL, "%s: unknown tunable '%.100s'", fn, name ? name : "(null)");
  const ndf__tune_state *t = state(ctx);
  if (t && t->set[id]) value_text(id, t->val[id], buf, cap);
  else snprintf(buf, cap, "default");
  ndf__clear_error(ctx);
  return NDF_OK;
}

ndf_status ndf_ctx_set_tunables(ndf_ctx *ctx, const char *assignments) {
  static const char *fn = "ndf_ctx_set_tunables";
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", fn);
  if (!assignments) return ndf__argerror(ctx, fn, "assignments", "NULL");
  const char *p = assignments;
  while (*p) {
    const char *comma = strchr(p, ','), *e = comma ? comma : p + strlen(p);
    char item[256];
    if ((size_t)(e - p) >= sizeof item) return ndf__argerror(ctx, fn, "assignments", "an item longer than 255 bytes");
    memcpy(item, p, (size_t)(e - p));
    item[e - p] = '\0';
    char *eq = strchr(item, '=');
    if (!eq || eq == item || !eq[1])
      return ndf__argerror(ctx, fn, "assignments", "'%s' is not NAME=VALUE", item);
    *eq = '\0';
    ndf_status s = ndf_ctx_set_tunable(ctx, item, eq + 1);
    if (s != NDF_OK) return s;
    p = comma ? comma + 1 : e;
  }
  return NDF_OK;
}

ndf_status ndf_ctx_tuning_status(ndf_ctx *ctx, ndf_tuning_status *out) {
  static const char *fn = "ndf_ctx_tuning_status";
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", fn);
  if (!out) return ndf__argerror(ctx, fn, "out", "NULL");
  memset(out, 0, sizeof *out);
  ndf__tune_state *t = state(ctx);
  if (!t) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", fn);
  pthread_mutex_lock(&ctx->lock);
  load_locked(ctx, t);
  snprintf(out->path, sizeof out->path, "%s", t->path);
  out->state = t->use ? t->state : 4;
  out->entries = ndf__tune_table_count(t->table);
  out->hits = __atomic_load_n(&t->hits, __ATOMIC_RELAXED);
  snprintf(out->note, sizeof out->note, "%s", t->state == 3 ? t->note + 5 : "");
  pthread_mutex_unlock(&ctx->lock);
  ndf__clear_error(ctx);
  return NDF_OK;
}

ndf_status ndf_ctx_tuning_use(ndf_ctx *ctx, int on) {
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "ndf_ctx_tuning_use: bad argument 'ctx' (NULL)");
  ndf__tune_state *t = state(ctx);
  if (!t) return ndf__error(ctx, NDF_ENOMEM, "ndf_ctx_tuning_use: out of memory");
  t->use = on != 0;
  return NDF_OK;
}

ndf_status ndf_ctx_tuning_from(ndf_ctx *ctx, const char *dir) {
  static const char *fn = "ndf_ctx_tuning_from";
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", fn);
  if (dir && strlen(dir) >= 4000) return ndf__argerror(ctx, fn, "dir", "longer than 4000 bytes");
  ndf__tune_state *t = state(ctx);
  if (!t) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", fn);
  pthread_mutex_lock(&ctx->lock);
  snprintf(t->dir, sizeof t->dir, "%s", dir ? dir : "");
  ndf__tune_table_free(t->table);
  t->table = NULL;
  t->path[0] = '\0';
  __atomic_store_n(&t->state, 0, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&ctx->lock);
  return NDF_OK;
}

ndf_status ndf_ctx_tuning_save(ndf_ctx *ctx) {
  static const char *fn = "ndf_ctx_tuning_save";
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", fn);
  if (!ctx->has_cuda) return ndf__error(ctx, NDF_ENODEV, "%s: the context has no CUDA device", fn);
  ndf__tune_state *t = state(ctx);
  if (!t) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", fn);
  ndf__tune_ident id;
  if (ident_of(ctx, &id) != 0) return ndf__error(ctx, NDF_ECUDA, "%s: cannot name the device", fn);
  pthread_mutex_lock(&ctx->lock);
  load_locked(ctx, t);
  if (!t->path[0]) {
    pthread_mutex_unlock(&ctx->lock);
    return ndf__error(ctx, NDF_EIO, "%s: no cache directory (%s)", fn,
                      ctx->cache_problem[0] ? ctx->cache_problem : "the disk cache is off");
  }
  char *text = ndf__tune_table_format(t->table, &id);
  char path[4200], tmp[4300];
  snprintf(path, sizeof path, "%s", t->path);
  pthread_mutex_unlock(&ctx->lock);
  if (!text) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", fn);
  snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path);
  int fd = mkstemp(tmp), ok = fd >= 0;
  const size_t len = strlen(text);
  for (size_t off = 0; ok && off < len;) {
    ssize_t k = write(fd, text + off, len - off);
    if (k <= 0) ok = 0;
    else off += (size_t)k;
  }
  const int e = errno;
  if (fd >= 0) ok = fsync(fd) == 0 && ok, ok = close(fd) == 0 && ok;
  free(text);
  if (!ok || rename(tmp, path) != 0) {
    if (fd >= 0) unlink(tmp);
    return ndf__error(ctx, NDF_EIO, "%s: cannot write '%s': %s", fn, path, strerror(ok ? errno : e));
  }
  return NDF_OK;
}

/* ---- the tuner ---------------------------------------------------------------------------------- */
static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct tuner {
  ndf_ctx *ctx;
  ndf__tune_state *t;
  ndf_tune_fn fn;
  void *user;
  const ndf_tune_options *opt;
  void *ref[4], *got[4];
  size_t bytes[4];
} tuner;

static ndf_status sync_stream(ndf_ctx *ctx) {
  CUresult r = ndf__cu(NULL)->cuStreamSynchronize(ctx->stream);
  return r == CUDA_SUCCESS ? NDF_OK : ndf__cuda_error(ctx, "ndf_tune_workload", r);
}

/* The outputs into bufs (host copies). */
static ndf_status fetch_outputs(tuner *u, void **bufs) {
  for (int i = 0; i < u->opt->noutputs; i++) {
    ndf_array h;
    const ndf_array *o = u->opt->outputs[i];
    ndf_status s = ndf_array_init(&h, bufs[i], NDF_DEVICE_CPU, o->dtype, o->ndim, o->shape);
    if (s == NDF_OK) s = ndf_array_copy(u->ctx, &h, o);
    if (s != NDF_OK) return s;
  }
  return NDF_OK;
}

/* One candidate (the tunables as set on the state): 1 when it ran and matched
 * the reference (*ms: the median per-call time), 0 when rejected, -1 on a
 * failure of the device (the status in *err). */
static int try_candidate(tuner *u, int reference, double *ms, ndf_status *err) {
  ndf_ctx *ctx = u->ctx;
  ndf_status s = u->fn(ctx, u->user);
  if (s == NDF_OK) s = sync_stream(ctx);
  if (s != NDF_OK) {
    if (s == NDF_ECUDA) {
      *err = s;
      return -1; /* the context may be unusable */
    }
    return 0; /* the variant does not take this call (a compile failure, a plan that does not fit) */
  }
  if ((s = fetch_outputs(u, reference ? u->ref : u->got)) != NDF_OK) {
    *err = s;
    return -1;
  }
  if (!reference)
    for (int i = 0; i < u->opt->noutputs; i++)
      if (memcmp(u->ref[i], u->got[i], u->bytes[i]) != 0) return 0;
  const int reps = u->opt->repeats > 0 ? u->opt->repeats : 10;
  double tm[5];
  for (int b = 0; b < 5; b++) {
    const double t0 = now_ms();
    for (int r = 0; r < reps && s == NDF_OK; r++) s = u->fn(ctx, u->user);
    if (s == NDF_OK) s = sync_stream(ctx);
    if (s != NDF_OK) {
      *err = s;
      return -1;
    }
    tm[b] = (now_ms() - t0) / reps;
  }
  qsort(tm, 5, sizeof tm[0], cmp_double);
  *ms = tm[2];
  return 1;
}

ndf_status ndf_tune_workload(ndf_ctx *ctx, ndf_tune_fn fn, void *user, const ndf_tune_options *opt,
                             ndf_tune_result *res) {
  static const char *name = "ndf_tune_workload";
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  if (!fn) return ndf__argerror(ctx, name, "fn", "NULL");
  if (!opt || opt->noutputs < 1 || opt->noutputs > 4) return ndf__argerror(ctx, name, "opt", "1 to 4 outputs");
  if (!res) return ndf__argerror(ctx, name, "res", "NULL");
  if (!ctx->has_cuda) return ndf__error(ctx, NDF_ENODEV, "%s: tuning needs a CUDA device", name);
  memset(res, 0, sizeof *res);
  ndf__tune_state *t = state(ctx);
  if (!t) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
  pthread_mutex_lock(&ctx->lock);
  load_locked(ctx, t);
  pthread_mutex_unlock(&ctx->lock);
  tuner u = {ctx, t, fn, user, opt, {0}, {0}, {0}};
  ndf_status s = NDF_OK;
  for (int i = 0; i < opt->noutputs; i++) {
    const int64_t n = ndf_array_size(opt->outputs[i]);
    if (!opt->outputs[i] || n < 0) return ndf__argerror(ctx, name, "opt", "output %d is not an array", i);
    u.bytes[i] = (size_t)n * ndf_dtype_size(opt->outputs[i]->dtype);
    u.ref[i] = malloc(u.bytes[i] ? u.bytes[i] : 1);
    u.got[i] = malloc(u.bytes[i] ? u.bytes[i] : 1);
    if (!u.ref[i] || !u.got[i]) s = ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
  }
  int saved_val[NDF__TUNE_COUNT];
  unsigned char saved_set[NDF__TUNE_COUNT];
  memcpy(saved_val, t->val, sizeof saved_val);
  memcpy(saved_set, t->set, sizeof saved_set);
  const int saved_use = t->use;
  memset(t->set, 0, sizeof t->set);
  t->use = 0;

  /* the defaults: the reference output, the consults, the time to beat */
  int dims[NDF__TUNE_COUNT], ndims = 0;
  double best = 0;
  if (s == NDF_OK) {
    pthread_mutex_lock(&ctx->lock);
    t->nrec = 0;
    t->recording = 1;
    pthread_mutex_unlock(&ctx->lock);
    ndf_status err = NDF_OK;
    const int r = try_candidate(&u, 1, &best, &err);
    t->recording = 0;
    if (r != 1) s = err != NDF_OK ? err : ndf__error(ctx, NDF_EINVAL, "%s: the workload fails with the defaults: %s",
                                                     name, ndf_errmsg(ctx));
    res->default_ms = res->best_ms = best;
    for (int i = 0; s == NDF_OK && i < t->nrec; i++) {
      const int id = t->rec[i].id;
      int seen = 0;
      for (int j = 0; j < ndims; j++) seen |= dims[j] == id;
      if (!seen && ndf__tunables[id].nsearch > 0) dims[ndims++] = id;
    }
  }
  /* the candidates: every combination, or one coordinate pass from the defaults */
  int cur[NDF__TUNE_COUNT], bestv[NDF__TUNE_COUNT];
  for (int j = 0; j < ndims; j++) cur[j] = bestv[j] = ndf__tunables[dims[j]].def;
  double space = 1;
  for (int j = 0; j < ndims; j++) space *= ndf__tunables[dims[j]].nsearch;
  const int maxc = opt->max_candidates > 0 ? opt->max_candidates : 64;
  const int exhaustive = space <= maxc;
  int idx[NDF__TUNE_COUNT];
  memset(idx, 0, sizeof idx);
  int dim = 0, k = 0;
  while (s == NDF_OK && ndims > 0) {
    /* the next candidate into cur */
    if (exhaustive) {
      for (int j = 0; j < ndims; j++) cur[j] = ndf__tunables[dims[j]].search[idx[j]];
    } else {
      if (dim >= ndims) break;
      memcpy(cur, bestv, sizeof cur);
      cur[dim] = ndf__tunables[dims[dim]].search[k];
    }
    int is_default = 1;
    for (int j = 0; j < ndims; j++) is_default &= cur[j] == ndf__tunables[dims[j]].def;
    if (!is_default) {
      for (int j = 0; j < ndims; j++) t->val[dims[j]] = cur[j], t->set[dims[j]] = 1;
      double ms = 0;
      ndf_status err = NDF_OK;
      const int r = try_candidate(&u, 0, &ms, &err);
      res->candidates++;
      if (r < 0) s = err;
      else if (r == 0) {
        res->rejected++;
        ndf__clear_error(ctx);
      } else if (ms < res->best_ms) {
        res->best_ms = ms;
        memcpy(bestv, cur, sizeof bestv);
      }
    }
    /* advance */
    if (exhaustive) {
      int j = 0;
      while (j < ndims && ++idx[j] == ndf__tunables[dims[j]].nsearch) idx[j++] = 0;
      if (j == ndims) break;
    } else if (++k == ndf__tunables[dims[dim]].nsearch) {
      k = 0, dim++;
    }
  }
  /* the choice against the defaults once more, timed one after the other (clocks and caches as alike as
   * they get): a choice is kept only where it still beats them */
  int changed = 0;
  for (int j = 0; j < ndims; j++) changed |= bestv[j] != ndf__tunables[dims[j]].def;
  if (s == NDF_OK && changed) {
    double d2 = 0, b2 = 0;
    ndf_status err = NDF_OK;
    memset(t->set, 0, sizeof t->set);
    int r = try_candidate(&u, 0, &d2, &err);
    for (int j = 0; r == 1 && j < ndims; j++) t->val[dims[j]] = bestv[j], t->set[dims[j]] = 1;
    /* the choice's own consults too: its path may ask a tunable for another workload (the table's
     * entries then cover every (tunable, workload) the timed calls read) */
    t->recording = 1;
    if (r == 1) r = try_candidate(&u, 0, &b2, &err);
    t->recording = 0;
    if (r < 0) s = err;
    else if (r == 0) res->best_ms = res->default_ms; /* cannot happen: both matched before */
    else res->default_ms = d2, res->best_ms = b2;
  }
  memcpy(t->val, saved_val, sizeof saved_val);
  memcpy(t->set, saved_set, sizeof saved_set);
  t->use = saved_use;
  /* the table: the choice where it beats the defaults by the margin, else no entry for these calls */
  const double margin = opt->margin > 0 ? opt->margin : 0.03;
  const int better = s == NDF_OK && changed && res->best_ms <= res->default_ms * (1 - margin);
  if (s == NDF_OK && !better) res->best_ms = res->default_ms;
  pthread_mutex_lock(&ctx->lock);
  if (s == NDF_OK && !t->table && !(t->table = ndf__tune_table_new()))
    s = ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
  size_t n = 0;
  for (int j = 0; s == NDF_OK && j < ndims; j++) {
    const int id = dims[j], v = better && bestv[j] != ndf__tunables[id].def ? bestv[j] : -1;
    if (v >= 0) {
      char vt[64];
      value_text(id, v, vt, sizeof vt);
      n += (size_t)snprintf(res->choice + n, n < sizeof res->choice ? sizeof res->choice - n : 0, "%s%s=%s",
                            n ? "," : "", ndf__tunables[id].name, vt);
    }
    for (int i = 0; i < t->nrec; i++)
      if (t->rec[i].id == id && ndf__tunables[id].applies(&t->rec[i].w) &&
          ndf__tune_table_put(t->table, id, &t->rec[i].w, v) != 0)
        s = ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
  }
  if (s == NDF_OK && t->state != 2) __atomic_store_n(&t->state, 2, __ATOMIC_RELEASE); /* a fresh table replaces an ignored one */
  pthread_mutex_unlock(&ctx->lock);
  for (int i = 0; i < 4; i++) free(u.ref[i]), free(u.got[i]);
  return s;
}
