/*
 * cli_tune.c -- `ndforge tunables` and `ndforge tune` (ADR 0019).
 *
 *   ndforge tunables            the tunables: name, op, domain (default *),
 *                               tuned or fixed, rule, what each value selects
 *   ndforge tune [OPTIONS]      on the GPU: times every valid combination of
 *                               the tunables each workload's calls consult (or
 *                               a coordinate search), checks each result bit
 *                               for bit against the defaults', and writes the
 *                               device's tuning table to the cache directory
 *   ndforge tune --show         prints the tuning tables of the cache directory
 *   ndforge tune --list         prints the workloads
 *
 * The default workloads are ndf_bench's grey, rank, distance and ECC
 * workloads (bench/bench.c, default_workloads; the box footprints, with the
 * same names); --workload adds one of the same form instead.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ndforge.h"

/* ---- ndforge tunables ------------------------------------------------------------------ */

/* 0 when assign ("NAME=VALUE") names a tunable and a value of its domain, else
 * -1 after saying what is wrong (the CLI's --tune, checked before any context). */
int cli_tune_check(const char *assign) {
  const char *eq = strchr(assign, '=');
  if (!eq || eq == assign || !eq[1]) {
    errorf("bad value for --tune: '%s' (NAME=VALUE; ndforge tunables lists them)", assign);
    return -1;
  }
  for (int i = 0; i < ndf_tunable_count(); i++) {
    ndf_tunable_info t;
    if (ndf_tunable_get(i, &t) != NDF_OK || strlen(t.name) != (size_t)(eq - assign) ||
        strncmp(t.name, assign, (size_t)(eq - assign)) != 0)
      continue;
    const char *v = eq + 1;
    if (strcmp(v, "default") == 0) return 0;
    if (t.nvalues) {
      for (int k = 0; k < t.nvalues; k++)
        if (strcmp(t.values[k], v) == 0) return 0;
    } else {
      char *end = NULL;
      long x = strtol(v, &end, 10);
      if (*end == '\0' && x >= t.lo && x <= t.hi) return 0;
    }
    char dom[512];
    size_t n = 0;
    if (t.nvalues)
      for (int k = 0; k < t.nvalues && n < sizeof dom; k++)
        n += (size_t)snprintf(dom + n, sizeof dom - n, "%s%s", k ? ", " : "", t.values[k]);
    else
      snprintf(dom, sizeof dom, "an integer in %d..%d", t.lo, t.hi);
    errorf("bad value for --tune: '%s' (%s takes %s, or default)", assign, t.name, dom);
    return -1;
  }
  errorf("bad value for --tune: '%s' (unknown tunable '%.*s'; ndforge tunables lists them)", assign,
         (int)(eq - assign), assign);
  return -1;
}

int ndf_cli_tunables(int argc, char **argv) {
  if (argc > 2) {
    if (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0) {
      printf("usage: ndforge tunables\n"
             "Lists the tunables: NAME  OP  DOMAIN (default *)  tuned|fixed  [RULE]  DOC.\n"
             "Set one with `ndforge run OP ... --tune NAME=VALUE` (repeatable).\n");
      return 0;
    }
    errorf("'tunables' takes no arguments (see ndforge tunables --help)");
    return 2;
  }
  for (int i = 0; i < ndf_tunable_count(); i++) {
    ndf_tunable_info t;
    if (ndf_tunable_get(i, &t) != NDF_OK) return 1;
    char dom[512];
    size_t n = 0;
    if (t.nvalues) {
      for (int k = 0; k < t.nvalues && n < sizeof dom; k++)
        n += (size_t)snprintf(dom + n, sizeof dom - n, "%s%s%s", k ? "|" : "", t.values[k], k == 0 ? "*" : "");
    } else {
      snprintf(dom, sizeof dom, "%d..%d (%d*)", t.lo, t.hi, t.def);
    }
    printf("%-20s %-9s %-28s %-5s [%s] %s\n", t.name, t.op, dom, t.tuned ? "tuned" : "fixed", t.rule, t.doc);
  }
  return 0;
}

/* ---- ndforge tune: the workloads ------------------------------------------------------- */

typedef enum { W_EROSION, W_DILATION, W_OPENING, W_MEDIAN, W_EDT, W_CDT_TAXI, W_CDT_CHESS, W_ECC, W_NKINDS } wkind;
static const char *const kind_key[W_NKINDS] = {"erosion", "dilation",    "opening",        "median",
                                               "edt",     "cdt_taxicab", "cdt_chessboard", "ecc"};

typedef struct tune_wl {
  wkind kind;
  ndf_dtype dtype;
  int ndim;
  int64_t shape[NDF_MAX_NDIM];
  int size;  /* grey and rank: the box extent; ECC: the thresholds */
  int batch; /* batch_dims */
  int param; /* edt: 1 = sampling (0.7, 1.3, ...) and indices; ECC: bit 0 T-construction, bit 1 range [-1000, 1000] */
} tune_wl;

/* ndf_bench's default workloads of these families (the box footprints). */
static const tune_wl default_wls[] = {
    {W_DILATION, NDF_FLOAT32, 3, {64, 1024, 1024}, 3, 0, 0},
    {W_DILATION, NDF_FLOAT32, 3, {64, 1024, 1024}, 3, 1, 0},
    {W_EROSION, NDF_FLOAT32, 3, {256, 256, 256}, 3, 0, 0},
    {W_DILATION, NDF_FLOAT32, 3, {8, 256, 256}, 3, 0, 0},
    {W_DILATION, NDF_FLOAT32, 3, {8, 256, 256}, 3, 1, 0},
    {W_DILATION, NDF_FLOAT32, 4, {8, 256, 256, 256}, 3, 1, 0},
    {W_EROSION, NDF_FLOAT32, 3, {256, 256, 256}, 7, 0, 0},
    {W_EROSION, NDF_UINT8, 3, {256, 256, 256}, 3, 0, 0},
    {W_OPENING, NDF_FLOAT32, 4, {4, 128, 128, 128}, 5, 1, 0},
    {W_DILATION, NDF_FLOAT32, 2, {2048, 2048}, 3, 0, 0},
    {W_DILATION, NDF_FLOAT32, 2, {2048, 2048}, 7, 0, 0},
    {W_DILATION, NDF_FLOAT32, 2, {2048, 2048}, 15, 0, 0},
    {W_DILATION, NDF_FLOAT32, 2, {2048, 2048}, 31, 0, 0},
    {W_DILATION, NDF_FLOAT32, 2, {2048, 2048}, 63, 0, 0},
    {W_MEDIAN, NDF_FLOAT32, 4, {1, 3, 256, 256}, 5, 2, 0},
    {W_MEDIAN, NDF_FLOAT32, 4, {8, 3, 256, 256}, 3, 2, 0},
    {W_MEDIAN, NDF_FLOAT32, 4, {8, 3, 256, 256}, 5, 2, 0},
    {W_MEDIAN, NDF_FLOAT32, 3, {128, 128, 128}, 3, 0, 0},
    {W_MEDIAN, NDF_FLOAT32, 2, {1024, 1024}, 3, 0, 0},
    {W_MEDIAN, NDF_FLOAT32, 2, {1024, 1024}, 7, 0, 0},
    {W_MEDIAN, NDF_FLOAT32, 2, {1024, 1024}, 31, 0, 0},
    {W_MEDIAN, NDF_UINT8, 4, {8, 3, 256, 256}, 5, 2, 0},
    {W_MEDIAN, NDF_UINT8, 2, {1024, 1024}, 3, 0, 0},
    {W_MEDIAN, NDF_UINT8, 2, {1024, 1024}, 31, 0, 0},
    {W_EDT, NDF_UINT8, 2, {1024, 1024}, 1, 0, 0},
    {W_EDT, NDF_UINT8, 3, {8, 1024, 1024}, 1, 1, 0},
    {W_EDT, NDF_UINT8, 3, {256, 256, 256}, 1, 0, 0},
    {W_EDT, NDF_UINT8, 3, {512, 512, 512}, 1, 0, 0},
    {W_EDT, NDF_UINT8, 2, {1024, 1024}, 1, 0, 1},
    {W_CDT_TAXI, NDF_UINT8, 2, {1024, 1024}, 1, 0, 0},
    {W_CDT_CHESS, NDF_UINT8, 2, {1024, 1024}, 1, 0, 0},
    {W_CDT_TAXI, NDF_UINT8, 3, {256, 256, 256}, 1, 0, 0},
    {W_CDT_CHESS, NDF_UINT8, 3, {256, 256, 256}, 1, 0, 0},
    {W_ECC, NDF_FLOAT32, 2, {1024, 1024}, 256, 0, 0},
    {W_ECC, NDF_FLOAT32, 2, {8192, 8192}, 256, 0, 0},
    {W_ECC, NDF_FLOAT32, 3, {128, 128, 128}, 256, 0, 0},
    {W_ECC, NDF_FLOAT32, 3, {256, 256, 256}, 256, 0, 0},
    {W_ECC, NDF_FLOAT32, 3, {512, 512, 512}, 256, 0, 0},
    {W_ECC, NDF_FLOAT32, 3, {64, 256, 256}, 256, 1, 0},
    {W_ECC, NDF_FLOAT32, 3, {256, 256, 256}, 256, 0, 1},
    {W_ECC, NDF_UINT8, 3, {256, 256, 256}, 256, 0, 0},
    {W_ECC, NDF_UINT16, 3, {256, 256, 256}, 256, 0, 0},
    {W_ECC, NDF_UINT8, 3, {512, 512, 512}, 256, 0, 0},
    {W_ECC, NDF_UINT8, 2, {1024, 1024}, 256, 0, 0},
    {W_ECC, NDF_UINT16, 2, {8192, 8192}, 256, 0, 0},
    {W_ECC, NDF_FLOAT32, 3, {128, 128, 128}, 256, 0, 2},
    {W_ECC, NDF_FLOAT32, 3, {256, 256, 256}, 256, 0, 2},
    {W_ECC, NDF_FLOAT32, 3, {512, 512, 512}, 256, 0, 2},
    {W_ECC, NDF_FLOAT32, 3, {256, 256, 256}, 256, 0, 3},
    {W_ECC, NDF_FLOAT32, 2, {1024, 1024}, 256, 0, 2},
    {W_ECC, NDF_FLOAT32, 2, {8192, 8192}, 256, 0, 2},
    {W_ECC, NDF_FLOAT32, 3, {64, 256, 256}, 256, 1, 2},
};
#define N_DEFAULT_WLS ((int)(sizeof default_wls / sizeof default_wls[0]))

static const char *dt_short(ndf_dtype t) {
  switch (t) {
    case NDF_UINT8: return "u8";
    case NDF_INT8: return "i8";
    case NDF_UINT16: return "u16";
    case NDF_INT16: return "i16";
    case NDF_UINT32: return "u32";
    case NDF_INT32: return "i32";
    case NDF_FLOAT32: return "f32";
    case NDF_FLOAT64: return "f64";
    default: return "?";
  }
}

/* ndf_bench's names (bench/bench.c, wl_name): "dilation_f32_64x1024x1024_s3_b0",
 * "edt_u8_1024x1024_b0_samp_idx", "ecc_range_float32_256x256x256_T256". */
static void wl_name(const tune_wl *w, char *buf, size_t cap) {
  char shp[160];
  size_t n = 0;
  shp[0] = '\0';
  for (int i = 0; i < w->ndim && n < sizeof shp; i++)
    n += (size_t)snprintf(shp + n, sizeof shp - n, "%s%lld", i ? "x" : "", (long long)w->shape[i]);
  if (w->kind == W_ECC) {
    char b[16] = "";
    if (w->batch) snprintf(b, sizeof b, "_b%d", w->batch);
    snprintf(buf, cap, "ecc%s%s_%s_%s%s_T%d", w->param & 1 ? "_tcons" : "", w->param & 2 ? "_range" : "",
             ndf_dtype_name(w->dtype), shp, b, w->size);
  } else if (w->kind >= W_EDT) {
    snprintf(buf, cap, "%s_%s_%s_b%d%s", kind_key[w->kind], dt_short(w->dtype), shp, w->batch,
             w->param ? "_samp_idx" : "");
  } else {
    snprintf(buf, cap, "%s_%s_%s_s%d_b%d", kind_key[w->kind], dt_short(w->dtype), shp, w->size, w->batch);
  }
}

/* "KIND:DTYPE:SHAPE:SIZE[:BATCH[:PARAM]]", e.g. "ecc:float32:256x256x256:256:0:2". */
static int parse_workload(const char *s, tune_wl *w) {
  char buf[256], *save = NULL;
  if (strlen(s) >= sizeof buf) return -1;
  memcpy(buf, s, strlen(s) + 1);
  memset(w, 0, sizeof *w);
  char *f[6];
  int nf = 0;
  for (char *t = strtok_r(buf, ":", &save); t && nf < 6; t = strtok_r(NULL, ":", &save)) f[nf++] = t;
  if (nf < 4) return -1;
  int k;
  for (k = 0; k < W_NKINDS && strcmp(kind_key[k], f[0]) != 0; k++) {}
  if (k == W_NKINDS) return -1;
  w->kind = (wkind)k;
  if (ndf_dtype_from_name(f[1], &w->dtype) != NDF_OK) return -1;
  char *p = f[2];
  while (*p) {
    char *end = NULL;
    long long v = strtoll(p, &end, 10);
    if (end == p || v < 1 || v > (1LL << 31) || w->ndim == NDF_MAX_NDIM) return -1;
    w->shape[w->ndim++] = v;
    p = end;
    if (*p == 'x') p++;
    else if (*p) return -1;
  }
  char *end = NULL;
  long v = strtol(f[3], &end, 10);
  if (*end || v < 1 || v > 1 << 20) return -1;
  w->size = (int)v;
  if (nf > 4 && ((v = strtol(f[4], &end, 10)) < 0 || *end || v >= w->ndim)) return -1;
  if (nf > 4) w->batch = (int)v;
  if (nf > 5 && ((v = strtol(f[5], &end, 10)) < 0 || *end || v > 3)) return -1;
  if (nf > 5) w->param = (int)v;
  return w->ndim >= 1 ? 0 : -1;
}

static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* ndf_bench's fill_random: floats uniform in [-1000, 1000), integers over all their bit patterns. */
static void fill_random(void *buf, ndf_dtype t, int64_t n, uint64_t seed) {
  uint64_t s = seed;
  if (t == NDF_FLOAT32) {
    float *f = buf;
    for (int64_t i = 0; i < n; i++) f[i] = (float)((double)(splitmix64(&s) >> 40) * (2000.0 / 16777216.0) - 1000.0);
  } else if (t == NDF_FLOAT64) {
    double *d = buf;
    for (int64_t i = 0; i < n; i++) d[i] = (double)(splitmix64(&s) >> 11) * (2000.0 / 9007199254740992.0) - 1000.0;
  } else {
    size_t bytes = (size_t)n * ndf_dtype_size(t), i = 0;
    uint8_t *b = buf;
    for (; i + 8 <= bytes; i += 8) {
      uint64_t r = splitmix64(&s);
      memcpy(b + i, &r, 8);
    }
    for (uint64_t r = splitmix64(&s); i < bytes; i++, r >>= 8) b[i] = (uint8_t)r;
  }
}

typedef struct wl_call {
  const tune_wl *w;
  ndf_array in, out, idx;
  int has_idx;
  ndf_grey_options g;
  ndf_rank_options r;
  ndf_distance_options d;
  ndf_ecc_options e;
} wl_call;

static ndf_status call_wl(ndf_ctx *ctx, void *user) {
  wl_call *c = user;
  switch (c->w->kind) {
    case W_EROSION: return ndf_grey_erosion(ctx, &c->in, &c->out, &c->g);
    case W_DILATION: return ndf_grey_dilation(ctx, &c->in, &c->out, &c->g);
    case W_OPENING: return ndf_grey_opening(ctx, &c->in, &c->out, &c->g);
    case W_MEDIAN: return ndf_median_filter(ctx, &c->in, &c->out, &c->r);
    case W_EDT: return ndf_distance_transform_edt(ctx, &c->in, &c->out, c->has_idx ? &c->idx : NULL, &c->d);
    case W_CDT_TAXI:
    case W_CDT_CHESS: return ndf_distance_transform_cdt(ctx, &c->in, &c->out, NULL, &c->d);
    case W_ECC: return ndf_euler_characteristic_curve(ctx, &c->in, &c->out, &c->e);
    default: return NDF_EINVAL;
  }
}

/* Sets up the arrays and options of w on ctx's device: 0, or -1 after a message. */
static int wl_setup(ndf_ctx *ctx, const tune_wl *w, wl_call *c) {
  memset(c, 0, sizeof *c);
  c->w = w;
  const int sp = w->ndim - w->batch;
  ndf_array host;
  if (cli_alloc("the input", &host, w->dtype, w->ndim, w->shape) != 0) return -1;
  fill_random(host.data, w->dtype, ndf_array_size(&host), 0x5eed + (uint64_t)w->kind);
  ndf_status s = ndf_array_alloc(ctx, &c->in, NDF_DEVICE_CUDA, w->dtype, w->ndim, w->shape);
  if (s == NDF_OK) s = ndf_array_copy(ctx, &c->in, &host);
  free(host.data);
  int64_t osh[NDF_MAX_NDIM];
  int ond = w->ndim;
  ndf_dtype odt = w->dtype;
  memcpy(osh, w->shape, sizeof osh);
  if (w->kind == W_EDT) odt = NDF_FLOAT64;
  if (w->kind == W_CDT_TAXI || w->kind == W_CDT_CHESS) odt = NDF_INT32;
  if (w->kind == W_ECC) {
    odt = NDF_INT64;
    ond = w->batch + 1;
    osh[w->batch] = w->size;
  }
  if (s == NDF_OK) s = ndf_array_alloc(ctx, &c->out, NDF_DEVICE_CUDA, odt, ond, osh);
  ndf_grey_options_init(&c->g);
  ndf_rank_options_init(&c->r);
  ndf_distance_options_init(&c->d);
  ndf_ecc_options_init(&c->e);
  c->g.batch_dims = c->r.batch_dims = c->d.batch_dims = c->e.batch_dims = w->batch;
  c->g.mode = c->r.mode = NDF_MODE_REFLECT;
  c->g.nsize = c->r.nsize = 1;
  c->g.size[0] = c->r.size[0] = w->size;
  if (w->kind == W_CDT_TAXI || w->kind == W_CDT_CHESS)
    c->d.metric = w->kind == W_CDT_TAXI ? NDF_METRIC_TAXICAB : NDF_METRIC_CHESSBOARD;
  if (w->kind == W_EDT && w->param) {
    c->d.nsampling = sp;
    for (int i = 0; i < sp; i++) c->d.sampling[i] = i % 2 ? 1.3 : 0.7;
    int64_t ish[NDF_MAX_NDIM + 1];
    for (int i = 0; i < w->batch; i++) ish[i] = w->shape[i];
    ish[w->batch] = sp;
    for (int i = w->batch; i < w->ndim; i++) ish[i + 1] = w->shape[i];
    if (s == NDF_OK) s = ndf_array_alloc(ctx, &c->idx, NDF_DEVICE_CUDA, NDF_INT32, w->ndim + 1, ish);
    c->has_idx = s == NDF_OK;
  }
  if (w->kind == W_ECC) {
    c->e.nthresholds = w->size;
    c->e.construction = w->param & 1 ? NDF_ECC_T : NDF_ECC_V;
    if (w->param & 2) c->e.has_range = 1, c->e.range_lo = -1000.0, c->e.range_hi = 1000.0;
  }
  if (s != NDF_OK) {
    errorf("tune: setting up the workload: %s", ndf_errmsg(ctx));
    return -1;
  }
  return 0;
}

static void wl_free(ndf_ctx *ctx, wl_call *c) {
  ndf_array_free(ctx, &c->in);
  ndf_array_free(ctx, &c->out);
  if (c->has_idx) ndf_array_free(ctx, &c->idx);
}

/* ---- ndforge tune: the command ----------------------------------------------------------- */

static void tune_help(void) {
  printf("usage: ndforge tune [--only SUBSTR] [--workload KIND:DTYPE:SHAPE:SIZE[:BATCH[:PARAM]]]\n"
         "                    [--repeats N] [--max-candidates N] [--margin X]\n"
         "       ndforge tune --show | --list\n"
         "Times, on the GPU, every valid combination of the tunables each workload's calls\n"
         "consult (a coordinate search beyond --max-candidates, default 64), checks each result\n"
         "bit for bit against the defaults', and writes the fastest choice that beats the defaults\n"
         "by the margin (default 0.03) to this device's tuning table in the cache directory.\n"
         "Contexts read the table at their first call (ADR 0019); ndf_bench --no-tuning times\n"
         "without it.  Default workloads: ndf_bench's grey, rank, distance and ECC workloads\n"
         "(--list prints them).  KIND: erosion, dilation, opening, median (SIZE: the box),\n"
         "edt (PARAM 1: sampling and indices), cdt_taxicab, cdt_chessboard, ecc (SIZE: the\n"
         "thresholds; PARAM bit 0: T-construction, bit 1: the range [-1000, 1000]).\n"
         "--show prints the tables of the cache directory (no GPU needed).\n");
}

static int show_tables(void) {
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  ndf_ctx *ctx = NULL;
  if (ndf_ctx_create(&ctx, &o) != NDF_OK) {
    errorf("tune --show: %s", ndf_last_error());
    return 1;
  }
  const char *dir = ndf_ctx_cache_dir(ctx);
  int found = 0;
  if (ndf_ctx_has_cuda(ctx)) {
    ndf_tuning_status st;
    if (ndf_ctx_tuning_status(ctx, &st) == NDF_OK) {
      static const char *const what[] = {"not read", "none", "in use", "ignored", "turned off"};
      printf("# this device's table: %s (%s%s%s)\n", st.path[0] ? st.path : "-", what[st.state],
             st.note[0] ? ": " : "", st.note);
    }
  }
  DIR *d = dir[0] ? opendir(dir) : NULL;
  struct dirent *de;
  while (d && (de = readdir(d))) {
    const size_t n = strlen(de->d_name);
    if (strncmp(de->d_name, "tuning-", 7) != 0 || n < 11 || strcmp(de->d_name + n - 4, ".txt") != 0) continue;
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    printf("# %s\n", path);
    char line[1024];
    while (fgets(line, sizeof line, f)) fputs(line, stdout);
    fclose(f);
    found++;
  }
  if (d) closedir(d);
  if (!found) printf("# no tuning table in '%s'\n", dir[0] ? dir : "(no cache directory)");
  ndf_ctx_destroy(ctx);
  return 0;
}

int ndf_cli_tune(int argc, char **argv) {
  const char *only = NULL;
  tune_wl custom;
  int have_custom = 0, list = 0, show = 0;
  long repeats = 0, maxc = 0;
  double margin = 0;
  for (int i = 2; i < argc; i++) {
    const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
      tune_help();
      return 0;
    }
    if (!strcmp(s, "--list")) list = 1;
    else if (!strcmp(s, "--show")) show = 1;
    else if (!strcmp(s, "--only") && v) only = v, i++;
    else if (!strcmp(s, "--workload") && v) {
      if (parse_workload(v, &custom) != 0) {
        errorf("bad value for --workload: '%s' (KIND:DTYPE:SHAPE:SIZE[:BATCH[:PARAM]], see ndforge tune --help)", v);
        return 2;
      }
      have_custom = 1, i++;
    } else if (!strcmp(s, "--repeats") && v) {
      if (parse_long_arg("--repeats", v, 1, 10000, &repeats) != 0) return 2;
      i++;
    } else if (!strcmp(s, "--max-candidates") && v) {
      if (parse_long_arg("--max-candidates", v, 1, 1000000, &maxc) != 0) return 2;
      i++;
    } else if (!strcmp(s, "--margin") && v) {
      if (parse_double_arg("--margin", v, &margin) != 0) return 2;
      if (!(margin >= 0 && margin < 1)) {
        errorf("bad value for --margin: '%s' (0 <= X < 1)", v);
        return 2;
      }
      i++;
    } else {
      errorf("unknown or incomplete option '%s' for 'tune' (see ndforge tune --help)", s);
      return 2;
    }
  }
  if (show) return show_tables();
  const tune_wl *wls = have_custom ? &custom : default_wls;
  const int nwl = have_custom ? 1 : N_DEFAULT_WLS;
  char name[256];
  int nsel = 0;
  for (int i = 0; i < nwl; i++) {
    wl_name(&wls[i], name, sizeof name);
    if (only && !strstr(name, only)) continue;
    nsel++;
    if (list) printf("%s\n", name);
  }
  if (list) return 0;
  if (!nsel) {
    errorf("tune: no workload matches --only '%s' (see ndforge tune --list)", only);
    return 2;
  }
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  o.backend = NDF_BACKEND_CUDA;
  ndf_ctx *ctx = NULL;
  if (ndf_ctx_create(&ctx, &o) != NDF_OK) {
    errorf("tune needs a CUDA device: %s", ndf_last_error());
    return 1;
  }
  int rc = 0;
  for (int i = 0; i < nwl && rc == 0; i++) {
    wl_name(&wls[i], name, sizeof name);
    if (only && !strstr(name, only)) continue;
    wl_call c;
    if (wl_setup(ctx, &wls[i], &c) != 0) {
      wl_free(ctx, &c);
      rc = 1;
      break;
    }
    ndf_tune_options to;
    memset(&to, 0, sizeof to);
    to.outputs[0] = &c.out;
    to.noutputs = 1;
    if (c.has_idx) to.outputs[to.noutputs++] = &c.idx;
    to.repeats = (int)repeats;
    to.max_candidates = (int)maxc;
    to.margin = margin;
    ndf_tune_result r;
    ndf_status s = ndf_tune_workload(ctx, call_wl, &c, &to, &r);
    if (s != NDF_OK) {
      errorf("tune: %s: %s", name, ndf_errmsg(ctx));
      rc = 1;
    } else {
      printf("%-40s default %9.4f ms  tuned %9.4f ms  (%d candidates, %d rejected)  %s\n", name, r.default_ms,
             r.best_ms, r.candidates, r.rejected, r.choice[0] ? r.choice : "defaults");
      fflush(stdout);
    }
    wl_free(ctx, &c);
  }
  if (ndf_ctx_tuning_save(ctx) != NDF_OK) {
    errorf("tune: %s", ndf_errmsg(ctx));
    rc = 1;
  } else {
    ndf_tuning_status st;
    if (ndf_ctx_tuning_status(ctx, &st) == NDF_OK) printf("# tuning table: %s (%d entries)\n", st.path, st.entries);
  }
  ndf_ctx_destroy(ctx);
  return rc;
}
