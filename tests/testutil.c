/*
 * testutil.c -- helpers shared by the ndforge test programs (see testutil.h).
 * This file uses only the public API of ndforge (and tools/ndfio.h's
 * header-only element reader).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "testutil.h"

#include "../tools/ndfio.h" /* header-only: its element reader */

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* Random numbers                                                            */

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

ndf_ctx *tu_cpu_ctx(int threads, const char *cache_dir) {
  ndf_ctx_options opt;
  ndf_ctx_options_init(&opt);
  opt.backend = NDF_BACKEND_CPU;
  opt.cpu_threads = threads;
  opt.cache_dir = cache_dir;
  ndf_ctx *ctx = NULL;
  return ndf_ctx_create(&ctx, &opt) == NDF_OK ? ctx : NULL;
}

void tu_rng_seed(tu_rng *r, uint64_t seed) {
  for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t tu_rng_u64(tu_rng *r) {
  uint64_t *s = r->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

int64_t tu_rng_int(tu_rng *r, int64_t lo, int64_t hi) {
  if (hi <= lo) return lo;
  uint64_t span = (uint64_t)(hi - lo) + 1u;
  if (span == 0) return (int64_t)tu_rng_u64(r); /* the full 64-bit range */
  return lo + (int64_t)(tu_rng_u64(r) % span);
}

double tu_rng_unif(tu_rng *r) { return (double)(tu_rng_u64(r) >> 11) * 0x1.0p-53; }

double tu_rng_normal(tu_rng *r) {
  double u = tu_rng_unif(r), v = tu_rng_unif(r);
  if (u < 1e-300) u = 1e-300;
  return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

int tu_rng_chance(tu_rng *r, double p) { return tu_rng_unif(r) < p; }

void tu_random_affine(tu_rng *r, double *a, int kind, double shift) {
  double m[3][3];
  if (kind == 0) { /* axis permutation with flips */
    int p[3] = {0, 1, 2};
    for (int i = 2; i > 0; i--) {
      int j = (int)tu_rng_int(r, 0, i), t = p[i];
      p[i] = p[j];
      p[j] = t;
    }
    memset(m, 0, sizeof m);
    for (int i = 0; i < 3; i++) m[p[i]][i] = tu_rng_chance(r, 0.5) ? -1 : 1;
  } else {
    double q[4], n = 0;
    for (int i = 0; i < 4; i++) {
      q[i] = tu_rng_normal(r);
      n += q[i] * q[i];
    }
    n = sqrt(n);
    const double a0 = q[0] / n, b = q[1] / n, c = q[2] / n, d = q[3] / n;
    const double R[3][3] = {{a0 * a0 + b * b - c * c - d * d, 2 * (b * c - a0 * d), 2 * (b * d + a0 * c)},
                            {2 * (b * c + a0 * d), a0 * a0 - b * b + c * c - d * d, 2 * (c * d - a0 * b)},
                            {2 * (b * d - a0 * c), 2 * (c * d + a0 * b), a0 * a0 - b * b - c * c + d * d}};
    memcpy(m, R, sizeof m);
  }
  memset(a, 0, 16 * sizeof(double));
  for (int j = 0; j < 3; j++) {
    const double z = 0.5 + 2.5 * tu_rng_unif(r);
    for (int i = 0; i < 3; i++) a[4 * i + j] = m[i][j] * z;
  }
  for (int i = 0; i < 3; i++) a[4 * i + 3] = shift * tu_rng_normal(r);
  a[15] = 1;
}

long tu_env_long(const char *name, long def) {
  const char *v = getenv(name);
  if (!v || !*v) return def;
  return strtol(v, NULL, 10);
}

uint64_t tu_seed(const char *name) {
  const char *v = getenv(name);
  uint64_t seed;
  if (v && *v) {
    seed = strtoull(v, NULL, 10);
  } else {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    seed = ((uint64_t)ts.tv_sec * 1000003u) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 20);
    seed %= 1000000000000ull; /* short enough to retype */
  }
  printf("%s=%llu (set %s to repeat this run)\n", name, (unsigned long long)seed, name);
  fflush(stdout);
  return seed;
}

/* ------------------------------------------------------------------------ */
/* Host arrays                                                               */

int tu_is_float(ndf_dtype t) { return t == NDF_FLOAT32 || t == NDF_FLOAT64; }

void tu_int_range(ndf_dtype t, double *lo, double *hi) {
  switch (t) {
    case NDF_BOOL: *lo = 0; *hi = 1; break;
    case NDF_UINT8: *lo = 0; *hi = 255; break;
    case NDF_INT8: *lo = -128; *hi = 127; break;
    case NDF_UINT16: *lo = 0; *hi = 65535; break;
    case NDF_INT16: *lo = -32768; *hi = 32767; break;
    case NDF_UINT32: *lo = 0; *hi = 4294967295.0; break;
    case NDF_INT32: *lo = -2147483648.0; *hi = 2147483647.0; break;
    /* 64-bit integers are drawn small and moved beyond 2^53 by tu_offset64 */
    case NDF_INT64: *lo = -1000; *hi = 1000; break;
    case NDF_UINT64: *lo = 0; *hi = 2000; break;
    default: *lo = -INFINITY; *hi = INFINITY; break;
  }
}

void tu_offset64(const ndf_array *a) {
  if (a->dtype != NDF_INT64 && a->dtype != NDF_UINT64) return;
  const uint64_t base = a->dtype == NDF_INT64 ? ((uint64_t)1 << 60) + 1 : ((uint64_t)1 << 63) + 1;
  const int64_t n = ndf_array_size(a);
  for (int64_t i = 0; i < n; i++) {
    uint64_t v;
    memcpy(&v, tu_elem_ptr(a, i), 8);
    v += base; /* integer arithmetic: most results have no float64 of their own */
    memcpy(tu_elem_ptr(a, i), &v, 8);
  }
}

static size_t dtype_size(ndf_dtype t) {
  switch (t) {
    case NDF_BOOL: case NDF_UINT8: case NDF_INT8: return 1;
    case NDF_UINT16: case NDF_INT16: return 2;
    case NDF_UINT32: case NDF_INT32: case NDF_FLOAT32: return 4;
    case NDF_FLOAT64: case NDF_INT64: case NDF_UINT64: return 8;
    default: return 0;
  }
}

static int64_t shape_size(int ndim, const int64_t *shape) {
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) n *= shape[i];
  return n;
}

static void fill_desc(ndf_array *a, void *data, ndf_dtype dt, int ndim, const int64_t *shape) {
  memset(a, 0, sizeof *a);
  a->data = data;
  a->device = NDF_DEVICE_CPU;
  a->device_id = 0;
  a->dtype = dt;
  a->ndim = ndim;
  int64_t st = 1;
  for (int i = ndim - 1; i >= 0; i--) {
    a->shape[i] = shape[i];
    a->strides[i] = st;
    st *= shape[i] > 0 ? shape[i] : 1;
  }
}

int tu_array_alloc(tu_array *t, ndf_dtype dt, int ndim, const int64_t *shape) {
  size_t es = dtype_size(dt);
  int64_t n = shape_size(ndim, shape);
  memset(t, 0, sizeof *t);
  if (!es) return -1; /* a dtype this file does not know: never guess its size */
  t->bytes = (size_t)(n > 0 ? n : 1) * es;
  t->base = calloc(1, t->bytes);
  if (!t->base) return -1;
  fill_desc(&t->arr, t->base, dt, ndim, shape);
  return 0;
}

void tu_array_free(tu_array *t) {
  if (!t) return;
  free(t->base);
  memset(t, 0, sizeof *t);
}

static void unflatten(const ndf_array *a, int64_t flat, int64_t *idx) {
  for (int i = a->ndim - 1; i >= 0; i--) {
    int64_t n = a->shape[i];
    idx[i] = n > 0 ? flat % n : 0;
    flat = n > 0 ? flat / n : 0;
  }
}

void *tu_elem_ptr(const ndf_array *a, int64_t flat) {
  int64_t idx[NDF_MAX_NDIM], off = 0;
  unflatten(a, flat, idx);
  for (int i = 0; i < a->ndim; i++) off += idx[i] * a->strides[i];
  return (char *)a->data + off * (int64_t)dtype_size(a->dtype);
}

double tu_get(const ndf_array *a, int64_t flat) {
  const double v = ndfio_load_f64(tu_elem_ptr(a, flat), a->dtype, 0);
  return a->dtype == NDF_BOOL ? v != 0 : v;
}

void tu_set(const ndf_array *a, int64_t flat, double v) {
  void *p = tu_elem_ptr(a, flat);
  switch (a->dtype) {
    case NDF_BOOL: *(uint8_t *)p = v != 0; break;
    case NDF_UINT8: *(uint8_t *)p = (uint8_t)v; break;
    case NDF_INT8: *(int8_t *)p = (int8_t)v; break;
    case NDF_UINT16: *(uint16_t *)p = (uint16_t)v; break;
    case NDF_INT16: *(int16_t *)p = (int16_t)v; break;
    case NDF_UINT32: *(uint32_t *)p = (uint32_t)v; break;
    case NDF_INT32: *(int32_t *)p = (int32_t)v; break;
    case NDF_FLOAT32: *(float *)p = (float)v; break;
    case NDF_FLOAT64: *(double *)p = v; break;
    case NDF_INT64: *(int64_t *)p = (int64_t)v; break;
    case NDF_UINT64: *(uint64_t *)p = v < 0 ? (uint64_t)(int64_t)v : (uint64_t)v; break;
    default: break;
  }
}

static void shuffle(int *v, int n, tu_rng *r) {
  for (int i = n - 1; i > 0; i--) {
    int j = (int)tu_rng_int(r, 0, i);
    int t = v[i];
    v[i] = v[j];
    v[j] = t;
  }
}

/* Builds an empty strided array shaped like src in a new poisoned buffer. */
static int make_layout(tu_array *dst, const ndf_array *src, int layout, tu_rng *r) {
  int nd = src->ndim;
  size_t es = dtype_size(src->dtype);
  int order[NDF_MAX_NDIM]; /* order[0] = outermost axis in memory */
  int64_t step[NDF_MAX_NDIM], strides[NDF_MAX_NDIM];
  for (int i = 0; i < nd; i++) order[i] = i;
  if (layout & TU_LAYOUT_FORTRAN) {
    for (int i = 0; i < nd; i++) order[i] = nd - 1 - i;
  } else if (layout & TU_LAYOUT_PADDED) {
    shuffle(order, nd, r);
  }
  /* Walk axes from innermost to outermost: stride = extent so far, then the
   * extent grows by (shape + pad) * stride. */
  int64_t extent = 1;
  for (int k = nd - 1; k >= 0; k--) {
    int ax = order[k];
    int64_t n = src->shape[ax] > 0 ? src->shape[ax] : 1;
    int64_t gap = 1, pad = 0;
    if (layout & TU_LAYOUT_PADDED) {
      gap = (k == nd - 1 && tu_rng_chance(r, 0.5)) ? tu_rng_int(r, 2, 3) : 1;
      pad = tu_rng_int(r, 0, 2);
    }
    step[ax] = extent * gap;
    strides[ax] = step[ax];
    extent = step[ax] * (n + pad);
  }
  int nneg = 0;
  if ((layout & TU_LAYOUT_NEGATIVE) && nd > 0) {
    nneg = tu_rng_chance(r, 0.3) && nd > 1 ? 2 : 1;
  }
  int64_t front = (layout & TU_LAYOUT_OFFSET) ? tu_rng_int(r, 1, 3) : tu_rng_int(r, 0, (layout & TU_LAYOUT_PADDED) ? 3 : 0);
  memset(dst, 0, sizeof *dst);
  dst->bytes = (size_t)(extent + front + 1) * es;
  dst->base = malloc(dst->bytes);
  if (!dst->base) return -1;
  tu_poison(dst->base, dst->bytes);
  int64_t off = front;
  for (int i = 0; i < nneg; i++) {
    int ax = (int)tu_rng_int(r, 0, nd - 1);
    if (strides[ax] < 0) continue;
    strides[ax] = -strides[ax];
    off += (src->shape[ax] > 0 ? src->shape[ax] - 1 : 0) * step[ax];
  }
  fill_desc(&dst->arr, (char *)dst->base + off * (int64_t)es, src->dtype, nd, src->shape);
  for (int i = 0; i < nd; i++) dst->arr.strides[i] = strides[i];
  dst->arr.device = src->device;
  dst->arr.device_id = src->device_id;
  return 0;
}

int tu_array_relayout(tu_array *dst, const ndf_array *src, int layout, tu_rng *r) {
  if (make_layout(dst, src, layout, r) != 0) return -1;
  size_t es = dtype_size(src->dtype);
  int64_t n = shape_size(src->ndim, src->shape);
  for (int64_t i = 0; i < n; i++) memcpy(tu_elem_ptr(&dst->arr, i), tu_elem_ptr(src, i), es);
  return 0;
}

int tu_array_like(tu_array *dst, const ndf_array *src, int layout, tu_rng *r) {
  return make_layout(dst, src, layout & ~TU_LAYOUT_NEGATIVE, r);
}

/* ------------------------------------------------------------------------ */
/* Poison                                                                    */

static uint8_t poison_byte(size_t i) { return (uint8_t)(0xA5u ^ (uint8_t)(i * 29u + (i >> 8))); }

void tu_poison(void *p, size_t bytes) {
  uint8_t *b = p;
  for (size_t i = 0; i < bytes; i++) b[i] = poison_byte(i);
}

int64_t tu_poison_check(const void *p, size_t bytes) {
  const uint8_t *b = p;
  for (size_t i = 0; i < bytes; i++)
    if (b[i] != poison_byte(i)) return (int64_t)i;
  return -1;
}

int64_t tu_check_gaps(const tu_array *t) {
  size_t es = dtype_size(t->arr.dtype);
  uint8_t *covered = calloc(1, t->bytes ? t->bytes : 1);
  if (!covered) return -2;
  int64_t n = shape_size(t->arr.ndim, t->arr.shape);
  for (int64_t i = 0; i < n; i++) {
    size_t off = (size_t)((char *)tu_elem_ptr(&t->arr, i) - (char *)t->base);
    if (off + es <= t->bytes) memset(covered + off, 1, es);
  }
  const uint8_t *b = t->base;
  int64_t bad = -1;
  for (size_t i = 0; i < t->bytes; i++) {
    if (!covered[i] && b[i] != poison_byte(i)) {
      bad = (int64_t)i;
      break;
    }
  }
  free(covered);
  return bad;
}

/* ------------------------------------------------------------------------ */
/* Comparison                                                                */

static int elem_equal(ndf_dtype t, const void *a, const void *b) {
  if (t == NDF_FLOAT32) {
    float x, y;
    memcpy(&x, a, 4);
    memcpy(&y, b, 4);
    if (isnan(x) && isnan(y)) return 1;
  } else if (t == NDF_FLOAT64) {
    double x, y;
    memcpy(&x, a, 8);
    memcpy(&y, b, 8);
    if (isnan(x) && isnan(y)) return 1;
  }
  return memcmp(a, b, dtype_size(t)) == 0;
}

static void fmt_elem(ndf_dtype t, const void *p, char *buf, size_t len) {
  switch (t) {
    case NDF_BOOL: case NDF_UINT8: snprintf(buf, len, "%u", *(const uint8_t *)p); break;
    case NDF_INT8: snprintf(buf, len, "%d", *(const int8_t *)p); break;
    case NDF_UINT16: snprintf(buf, len, "%u", *(const uint16_t *)p); break;
    case NDF_INT16: snprintf(buf, len, "%d", *(const int16_t *)p); break;
    case NDF_UINT32: snprintf(buf, len, "%u", *(const uint32_t *)p); break;
    case NDF_INT32: snprintf(buf, len, "%d", *(const int32_t *)p); break;
    case NDF_INT64: {
      int64_t v;
      memcpy(&v, p, 8);
      snprintf(buf, len, "%lld", (long long)v);
      break;
    }
    case NDF_UINT64: {
      uint64_t v;
      memcpy(&v, p, 8);
      snprintf(buf, len, "%llu", (unsigned long long)v);
      break;
    }
    case NDF_FLOAT32: {
      float f;
      uint32_t u;
      memcpy(&f, p, 4);
      memcpy(&u, p, 4);
      snprintf(buf, len, "%.9g (0x%08x)", f, u);
      break;
    }
    case NDF_FLOAT64: {
      double d;
      uint64_t u;
      memcpy(&d, p, 8);
      memcpy(&u, p, 8);
      snprintf(buf, len, "%.17g (0x%016llx)", d, (unsigned long long)u);
      break;
    }
    default: snprintf(buf, len, "?"); break;
  }
}

int64_t tu_compare(const ndf_array *expected, const ndf_array *got, char *msg, size_t msglen) {
  if (msg && msglen) msg[0] = 0;
  if (expected->dtype != got->dtype || expected->ndim != got->ndim) {
    if (msg) snprintf(msg, msglen, "dtype/ndim differ (%d/%d vs %d/%d)", expected->dtype,
                      expected->ndim, got->dtype, got->ndim);
    return -1;
  }
  for (int i = 0; i < expected->ndim; i++) {
    if (expected->shape[i] != got->shape[i]) {
      if (msg) snprintf(msg, msglen, "shape differs on axis %d", i);
      return -1;
    }
  }
  int64_t n = shape_size(expected->ndim, expected->shape), bad = 0;
  size_t used = 0;
  for (int64_t i = 0; i < n; i++) {
    const void *e = tu_elem_ptr(expected, i), *g = tu_elem_ptr(got, i);
    if (elem_equal(expected->dtype, e, g)) continue;
    if (bad < 4 && msg && used + 1 < msglen) {
      char es[64], gs[64], coords[160];
      int64_t idx[NDF_MAX_NDIM];
      unflatten(expected, i, idx);
      size_t c = 0;
      coords[0] = 0;
      for (int k = 0; k < expected->ndim && c + 24 < sizeof coords; k++)
        c += (size_t)snprintf(coords + c, sizeof coords - c, "%s%lld", k ? "," : "", (long long)idx[k]);
      fmt_elem(expected->dtype, e, es, sizeof es);
      fmt_elem(expected->dtype, g, gs, sizeof gs);
      int w = snprintf(msg + used, msglen - used, "  [%s] expected %s got %s\n", coords, es, gs);
      if (w > 0) used += (size_t)w < msglen - used ? (size_t)w : msglen - used - 1;
    }
    bad++;
  }
  return bad;
}

const char *tu_shape_str(const ndf_array *a, char *buf, size_t len) {
  size_t c = 0;
  buf[0] = 0;
  for (int i = 0; i < a->ndim && c + 24 < len; i++)
    c += (size_t)snprintf(buf + c, len - c, "%s%lld", i ? "x" : "", (long long)a->shape[i]);
  if (a->ndim == 0) snprintf(buf, len, "()");
  return buf;
}

/* ------------------------------------------------------------------------ */
/* Files                                                                     */

int tu_mkdtemp(char *out, size_t len, const char *prefix) {
  const char *tmp = getenv("TMPDIR");
  if (!tmp || !*tmp) tmp = "/tmp";
  int w = snprintf(out, len, "%s/%s-XXXXXX", tmp, prefix);
  if (w < 0 || (size_t)w >= len) return -1;
  return mkdtemp(out) ? 0 : -1;
}

static int rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path) == 0 ? 0 : 0;
}

void tu_rmtree(const char *path) {
  if (path && *path) nftw(path, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static int count_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw);
static int g_count;
static int count_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)path;
  (void)sb;
  (void)ftw;
  if (flag == FTW_F) g_count++;
  return 0;
}

int tu_count_files(const char *path) {
  g_count = 0;
  struct stat st;
  if (stat(path, &st) != 0) return 0;
  nftw(path, count_cb, 16, FTW_PHYS);
  return g_count;
}

/* ------------------------------------------------------------------------ */
/* Reference                                                                 */

static int64_t pos_mod(int64_t a, int64_t m) {
  int64_t r = a % m;
  return r < 0 ? r + m : r;
}

int64_t tu_map_coord(int64_t c, int64_t n, ndf_mode mode) {
  if (c >= 0 && c < n) return c;
  switch (mode) {
    case NDF_MODE_NEAREST: return c < 0 ? 0 : n - 1;
    case NDF_MODE_WRAP: return pos_mod(c, n);
    case NDF_MODE_REFLECT: {
      int64_t m = pos_mod(c, 2 * n);
      return m < n ? m : 2 * n - 1 - m;
    }
    case NDF_MODE_MIRROR: {
      if (n == 1) return 0;
      int64_t m = pos_mod(c, 2 * n - 2);
      return m < n ? m : 2 * n - 2 - m;
    }
    default: return -1; /* constant: outside */
  }
}

void tu_ref_grey(int dilation, const ndf_array *in, const ndf_array *out, const tu_elem *el,
                 ndf_mode mode, double cval, int batch_dims) {
  int nsp = el->nsp;
  int64_t ntap = 1;
  for (int i = 0; i < nsp; i++) ntap *= el->shape[i];
  /* scipy's dilation: reflected element, origin -o (and -1 more on even axes). */
  int64_t org[NDF_MAX_SPATIAL];
  for (int i = 0; i < nsp; i++)
    org[i] = dilation ? -el->origin[i] - (el->shape[i] % 2 == 0 ? 1 : 0) : el->origin[i];
  double lo, hi;
  tu_int_range(in->dtype, &lo, &hi);
  double cv = cval;
  if (!tu_is_float(in->dtype)) cv = trunc(cval);
  else if (in->dtype == NDF_FLOAT32) cv = (float)cval;

  int64_t nb = 1, nimg = 1;
  for (int i = 0; i < batch_dims; i++) nb *= in->shape[i];
  for (int i = 0; i < nsp; i++) nimg *= in->shape[batch_dims + i];
  const int64_t *sh = in->shape + batch_dims;

  for (int64_t b = 0; b < nb; b++) {
    for (int64_t x = 0; x < nimg; x++) {
      int64_t xi[NDF_MAX_SPATIAL];
      int64_t t = x;
      for (int i = nsp - 1; i >= 0; i--) {
        xi[i] = t % sh[i];
        t /= sh[i];
      }
      double acc = dilation ? -INFINITY : INFINITY;
      int nan = 0;
      for (int64_t k = 0; k < ntap; k++) {
        /* tap k of the element scipy's filter sees (reflected for dilation) */
        int64_t ks = dilation ? ntap - 1 - k : k;
        if (el->fp && !el->fp[ks]) continue;
        int64_t ki[NDF_MAX_SPATIAL];
        int64_t tk = k;
        for (int i = nsp - 1; i >= 0; i--) {
          ki[i] = tk % el->shape[i];
          tk /= el->shape[i];
        }
        int outside = 0;
        int64_t src = 0;
        for (int i = 0; i < nsp; i++) {
          int64_t c = xi[i] + ki[i] - (el->shape[i] / 2 + org[i]);
          int64_t m = tu_map_coord(c, sh[i], mode);
          if (m < 0) {
            outside = 1;
            break;
          }
          src = src * sh[i] + m;
        }
        double v = outside ? cv : tu_get(in, b * nimg + src);
        double s = el->st ? el->st[ks] : 0.0;
        double tv = dilation ? v + s : v - s;
        if (isnan(tv)) nan = 1;
        else if (dilation ? tv > acc : tv < acc) acc = tv;
      }
      double res;
      if (nan) res = NAN;
      else if (tu_is_float(in->dtype)) res = acc;
      else res = trunc(acc < lo ? lo : acc > hi ? hi : acc);
      tu_set(out, b * nimg + x, res);
    }
  }
}

/* ------------------------------------------------------------------------ */
/* The eight ops                                                             */

#define TU_OP_ROW(id, name, short_name, fn, composite) {name, short_name, #fn, fn, composite},
static const struct {
  const char *scipy, *short_name, *api;
  ndf_status (*call)(ndf_ctx *, const ndf_array *, ndf_array *, const ndf_grey_options *);
  int composite;
} tu_ops[TU_OP_COUNT] = {NDF_OPS_GREY(TU_OP_ROW)};
#undef TU_OP_ROW

const char *tu_op_name(int op) { return op >= 0 && op < TU_OP_COUNT ? tu_ops[op].scipy : "?"; }
const char *tu_op_api_name(int op) { return op >= 0 && op < TU_OP_COUNT ? tu_ops[op].api : "?"; }
int tu_op_is_composite(int op) { return op >= 0 && op < TU_OP_COUNT && tu_ops[op].composite; }

int tu_op_from_name(const char *name) {
  if (!name) return -1;
  for (int i = 0; i < TU_OP_COUNT; i++)
    if (!strcmp(name, tu_ops[i].scipy) || !strcmp(name, tu_ops[i].short_name)) return i;
  return -1;
}

ndf_status tu_op_call(ndf_ctx *ctx, int op, const ndf_array *in, ndf_array *out, const ndf_grey_options *opt) {
  return op >= 0 && op < TU_OP_COUNT ? tu_ops[op].call(ctx, in, out, opt) : NDF_EINVAL;
}

/* ------------------------------------------------------------------------ */
/* NumPy arithmetic                                                          */

/* v modulo 2^bits of t, as t's value (two's complement for signed types). */
static double wrap_int(ndf_dtype t, int64_t v) {
  int bits = (int)dtype_size(t) * 8;
  uint64_t mask = (bits >= 64) ? ~0ull : ((1ull << bits) - 1u);
  uint64_t u = (uint64_t)v & mask;
  int is_signed = t == NDF_INT8 || t == NDF_INT16 || t == NDF_INT32;
  if (is_signed && u >= (1ull << (bits - 1))) return (double)((int64_t)u - (int64_t)(mask + 1u));
  return (double)u;
}

/* kind 0: a - b; kind 1: ((a + b) - c) - c. */
static void np_arith(int kind, const ndf_array *a, const ndf_array *b, const ndf_array *c, const ndf_array *out) {
  int64_t n = shape_size(out->ndim, out->shape);
  ndf_dtype t = out->dtype;
  for (int64_t i = 0; i < n; i++) {
    double va = tu_get(a, i), vb = tu_get(b, i), vc = kind ? tu_get(c, i) : 0;
    double r;
    if (t == NDF_FLOAT32) {
      volatile float fa = (float)va, fb = (float)vb, fc = (float)vc, f;
      if (kind == 0) {
        f = fa - fb;
      } else {
        f = fa + fb;
        f = f - fc;
        f = f - fc;
      }
      r = f;
    } else if (t == NDF_FLOAT64) {
      volatile double d;
      if (kind == 0) {
        d = va - vb;
      } else {
        d = va + vb;
        d = d - vc;
        d = d - vc;
      }
      r = d;
    } else {
      /* integers: the ring Z/2^bits, so wrapping once at the end is exact */
      int64_t ia = (int64_t)va, ib = (int64_t)vb, ic = (int64_t)vc;
      r = wrap_int(t, kind == 0 ? ia - ib : ia + ib - ic - ic);
    }
    tu_set(out, i, r);
  }
}

void tu_np_sub(const ndf_array *a, const ndf_array *b, const ndf_array *out) { np_arith(0, a, b, NULL, out); }

void tu_np_laplace(const ndf_array *a, const ndf_array *b, const ndf_array *c, const ndf_array *out) {
  np_arith(1, a, b, c, out);
}

void tu_ref_op(int op, const ndf_array *in, const ndf_array *out, const tu_elem *el, ndf_mode mode,
               double cval, int batch_dims) {
  if (op == TU_OP_EROSION || op == TU_OP_DILATION) {
    tu_ref_grey(op == TU_OP_DILATION, in, out, el, mode, cval, batch_dims);
    return;
  }
  tu_array t1, t2;
  if (tu_array_alloc(&t1, in->dtype, in->ndim, in->shape) != 0 ||
      tu_array_alloc(&t2, in->dtype, in->ndim, in->shape) != 0) {
    fprintf(stderr, "tu_ref_op: out of memory\n");
    abort();
  }
  switch (op) {
    case TU_OP_OPENING: /* dilation(erosion(x)) */
      tu_ref_grey(0, in, &t1.arr, el, mode, cval, batch_dims);
      tu_ref_grey(1, &t1.arr, out, el, mode, cval, batch_dims);
      break;
    case TU_OP_CLOSING: /* erosion(dilation(x)) */
      tu_ref_grey(1, in, &t1.arr, el, mode, cval, batch_dims);
      tu_ref_grey(0, &t1.arr, out, el, mode, cval, batch_dims);
      break;
    case TU_OP_GRADIENT: /* dilation(x) - erosion(x) */
    case TU_OP_LAPLACE:  /* ((dilation(x) + erosion(x)) - x) - x */
      tu_ref_grey(1, in, &t1.arr, el, mode, cval, batch_dims);
      tu_ref_grey(0, in, &t2.arr, el, mode, cval, batch_dims);
      if (op == TU_OP_GRADIENT) tu_np_sub(&t1.arr, &t2.arr, out);
      else tu_np_laplace(&t1.arr, &t2.arr, in, out);
      break;
    case TU_OP_WHITE_TOPHAT: /* x - opening(x) */
      tu_ref_grey(0, in, &t1.arr, el, mode, cval, batch_dims);
      tu_ref_grey(1, &t1.arr, &t2.arr, el, mode, cval, batch_dims);
      tu_np_sub(in, &t2.arr, out);
      break;
    case TU_OP_BLACK_TOPHAT: /* closing(x) - x */
      tu_ref_grey(1, in, &t1.arr, el, mode, cval, batch_dims);
      tu_ref_grey(0, &t1.arr, &t2.arr, el, mode, cval, batch_dims);
      tu_np_sub(&t2.arr, in, out);
      break;
    default:
      fprintf(stderr, "tu_ref_op: unknown op %d\n", op);
      abort();
  }
  tu_array_free(&t1);
  tu_array_free(&t2);
}

int tu_run_oracle(const char *python, const char *oracle, const char *dir, uint64_t seed, long ncases) {
  char seed_s[32], n_s[32];
  snprintf(seed_s, sizeof seed_s, "%llu", (unsigned long long)seed);
  snprintf(n_s, sizeof n_s, "%ld", ncases);
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    execl(python, python, oracle, "--seed", seed_s, "--out", dir, "--cases", n_s, (char *)NULL);
    perror("execl oracle");
    _exit(127);
  }
  int st = 0;
  if (waitpid(pid, &st, 0) < 0) return -1;
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

int tu_oracle_prepare(ndf_ctx **ctx, uint64_t *seed, char *dir, size_t dirlen, const char *tag, long default_cases,
                      const char *python, const char *oracle) {
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  o.backend = NDF_BACKEND_CPU;
  o.cache_disable = 1;
  if (ndf_ctx_create(ctx, &o) != NDF_OK) {
    fprintf(stderr, "ndf_ctx_create failed: %s\n", ndf_last_error());
    return -1;
  }
  *seed = tu_seed("NDF_TEST_SEED");
  long n = tu_env_long("NDF_TEST_CASES", default_cases);
  if (tu_mkdtemp(dir, dirlen, tag) != 0) return -1;
  if (tu_run_oracle(python, oracle, dir, *seed, n) != 0) {
    fprintf(stderr, "oracle failed: %s %s --seed %llu --out %s\n", python, oracle, (unsigned long long)*seed, dir);
    return -1;
  }
  return 0;
}

int tu_read_manifest(const char *dir, size_t case_size, int (*parse)(const char *line, void *c), void **cases,
                     int *ncases) {
  char path[4200];
  snprintf(path, sizeof path, "%s/manifest.txt", dir);
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  int cap = 64, n = 0;
  char *buf = malloc(case_size * (size_t)cap), line[4096];
  while (buf && fgets(line, sizeof line, f)) {
    if (line[0] == '\n' || line[0] == 0) continue;
    if (n == cap) {
      char *more = realloc(buf, case_size * (size_t)(cap *= 2));
      if (!more) { free(buf); buf = NULL; break; }
      buf = more;
    }
    line[strcspn(line, "\n")] = 0;
    memset(buf + case_size * (size_t)n, 0, case_size);
    if (parse(line, buf + case_size * (size_t)n) != 0) {
      fprintf(stderr, "bad manifest line: %s\n", line);
      free(buf);
      fclose(f);
      return -1;
    }
    n++;
  }
  fclose(f);
  if (!buf) return -1;
  *cases = buf;
  *ncases = n;
  return 0;
}

void tu_oracle_cleanup(const char *dir, int keep, uint64_t seed) {
  if (keep) printf("kept the oracle's cases in %s (seed %llu)\n", dir, (unsigned long long)seed);
  else tu_rmtree(dir);
}

/* ------------------------------------------------------------------------ */
/* Device copies of host arrays.                                             */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

/* NDF_TEST_FILTER=<cmocka pattern, * and ? wildcards>: every test program that links
 * testutil runs only the tests whose names match (e.g. to put one GPU test under
 * compute-sanitizer racecheck). Set before main, so no test's main has to ask. */
__attribute__((constructor)) static void tu_test_filter(void) {
  const char *f = getenv("NDF_TEST_FILTER");
  if (f && *f) cmocka_set_test_filter(f);
}


static ndf_array tu_raw_host(const tu_array *t) {
  ndf_array a;
  int64_t n = (int64_t)t->bytes;
  ndf_array_init(&a, t->base, NDF_DEVICE_CPU, NDF_UINT8, 1, &n);
  return a;
}

int tu_have_cuda(void) {
  ndf_ctx *probe = NULL;
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  int ok = ndf_ctx_create(&probe, &o) == NDF_OK && ndf_ctx_has_cuda(probe);
  if (!ok) printf("skip: no usable CUDA device\n");
  ndf_ctx_destroy(probe);
  return ok;
}

void tu_dev_upload(ndf_ctx *ctx, tu_dev *d, const tu_array *t) {
  int64_t n = (int64_t)t->bytes;
  ndf_status r = ndf_array_alloc(ctx, &d->raw, NDF_DEVICE_CUDA, NDF_UINT8, 1, &n);
  if (r != NDF_OK) printf("ndf_array_alloc(CUDA, %lld bytes): %s\n", (long long)n, ndf_errmsg(ctx));
  assert_int_equal(r, NDF_OK);
  ndf_array h = tu_raw_host(t);
  assert_int_equal(ndf_array_copy(ctx, &d->raw, &h), NDF_OK);
  d->arr = t->arr;
  d->arr.device = NDF_DEVICE_CUDA;
  d->arr.device_id = d->raw.device_id;
  d->arr.data = (char *)d->raw.data + ((char *)t->arr.data - (char *)t->base);
}

void tu_dev_download(ndf_ctx *ctx, const tu_dev *d, tu_array *t) {
  ndf_array h = tu_raw_host(t);
  ndf_status r = ndf_array_copy(ctx, &h, &d->raw);
  if (r != NDF_OK) printf("ndf_array_copy(device -> host): %s\n", ndf_errmsg(ctx));
  assert_int_equal(r, NDF_OK);
}

void tu_dev_free(ndf_ctx *ctx, tu_dev *d) { ndf_array_free(ctx, &d->raw); }

int tu_dev_check(ndf_ctx *ctx, const char *desc, const char *what, const tu_dev *d, tu_array *got,
                 const ndf_array *expected) {
  char msg[1024];
  tu_dev_download(ctx, d, got);
  const int64_t bad = tu_compare(expected, &got->arr, msg, sizeof msg);
  if (bad) {
    printf("%s: %lld %s differ:\n%s\n", desc, (long long)bad, what, msg);
    return 1;
  }
  if (tu_check_gaps(got) >= 0) {
    printf("%s: %s written outside the elements\n", desc, what);
    return 1;
  }
  return 0;
}

int tu_gpu_setup(void **state, long default_cases) {
  tu_gpu_state *s = calloc(1, sizeof *s);
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  if (!s || ndf_ctx_create(&s->ctx, &o) != NDF_OK) {
    fprintf(stderr, "ndf_ctx_create: %s\n", ndf_last_error());
    free(s);
    return -1;
  }
  s->seed = tu_seed("NDF_TEST_SEED");
  s->ncases = tu_env_long("NDF_TEST_CASES", default_cases);
  ndf_ctx_info info;
  if (ndf_ctx_has_cuda(s->ctx) && ndf_ctx_get_info(s->ctx, &info) == NDF_OK)
    printf("device: %s (sm_%d%d), driver %d, NVRTC %d.%d\n", info.device_name, info.cc_major, info.cc_minor,
           info.driver_version, info.nvrtc_major, info.nvrtc_minor);
  *state = s;
  return 0;
}

int tu_gpu_teardown(void **state) {
  tu_gpu_state *s = *state;
  if (s) {
    ndf_cache_stats st;
    ndf_ctx_cache_stats(s->ctx, &st);
    printf("kernel cache: %llu memory hits, %llu disk hits, %llu compiles (%.0f ms), %llu disk rejects\n",
           (unsigned long long)st.memory_hits, (unsigned long long)st.disk_hits, (unsigned long long)st.compiles,
           st.compile_ms, (unsigned long long)st.disk_rejects);
    ndf_ctx_destroy(s->ctx);
    free(s);
  }
  return 0;
}

static ndf_array tu_piece(const ndf_array *a, int axis, int64_t start, int64_t len) {
  ndf_array v = *a;
  v.data = (char *)a->data + start * a->strides[axis] * (int64_t)ndf_dtype_size(a->dtype);
  v.shape[axis] = len;
  return v;
}

ndf_status tu_edt_pass_pieces(ndf_ctx *ctx, const ndf_array *w, const ndf_array *f, const double *sampling,
                              tu_rng *r) {
  for (int a = 0; a < w->ndim; a++) {
    const int b = (a + 1) % w->ndim;
    int64_t start = 0;
    while (start < w->shape[b] || (start == 0 && w->shape[b] == 0)) {
      int64_t len = b == a ? w->shape[b] : tu_rng_int(r, 1, 1 + w->shape[b] / 2);
      if (len > w->shape[b] - start) len = w->shape[b] - start;
      ndf_array wv = b == a ? *w : tu_piece(w, b, start, len), fv;
      if (f) fv = b == a ? *f : tu_piece(f, b, start, len);
      ndf_status s = ndf_distance_edt_pass(ctx, &wv, f ? &fv : NULL, a, sampling[a]);
      if (s != NDF_OK) return s;
      start += len;
      if (len == 0) break;
    }
  }
  return NDF_OK;
}

double tu_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int tu_oracle_group_setup(void **state, const char *tag, long default_cases, const char *python, const char *oracle,
                          size_t case_size, int (*parse)(const char *line, void *c),
                          int (*summary)(const tu_oracle_group *g)) {
  tu_oracle_group *g = calloc(1, sizeof *g);
  if (!g) return -1;
  if (tu_oracle_prepare(&g->ctx, &g->seed, g->dir, sizeof g->dir, tag, default_cases, python, oracle) != 0) return -1;
  if (tu_read_manifest(g->dir, case_size, parse, &g->cases, &g->ncases) != 0 || g->ncases == 0) return -1;
  if (summary && summary(g) != 0) return -1;
  *state = g;
  return 0;
}

int tu_oracle_group_setup_if(void **state, const char *modules, const char *tag, long default_cases,
                             const char *python, const char *oracle, size_t case_size,
                             int (*parse)(const char *line, void *c), int (*summary)(const tu_oracle_group *g)) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "'%s' -c 'import %s' 2>/dev/null", python, modules);
  if (system(cmd) == 0)
    return tu_oracle_group_setup(state, tag, default_cases, python, oracle, case_size, parse, summary);
  printf("NOTE: %s cannot import %s: the reference cases are skipped\n", python, modules);
  tu_oracle_group *g = calloc(1, sizeof *g);
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  o.backend = NDF_BACKEND_CPU;
  o.cache_disable = 1;
  if (!g || ndf_ctx_create(&g->ctx, &o) != NDF_OK) {
    free(g);
    return -1;
  }
  g->seed = tu_seed("NDF_TEST_SEED");
  *state = g;
  return 0;
}

int tu_oracle_group_teardown(void **state) {
  tu_oracle_group *g = *state;
  if (!g) return 0;
  if (g->dir[0]) tu_oracle_cleanup(g->dir, g->keep_dir, g->seed);
  free(g->cases);
  ndf_ctx_destroy(g->ctx);
  free(g);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* The kernel log                                                            */

uint64_t tu_klog_mark(const ndf_ctx *ctx) { return ndf_ctx_kernel_count(ctx); }

/* The entry-point field of a log entry "template|kernel|SLOT=v|...": *len chars at the return. */
static const char *klog_kernel(const char *key, size_t *len) {
  const char *k = strchr(key, '|');
  k = k ? k + 1 : key;
  const char *e = strchr(k, '|');
  *len = e ? (size_t)(e - k) : strlen(k);
  return k;
}

/* 1 when key's slot piece "|SLOT=value" (piece = "SLOT=value", n chars) is present exactly. */
static int klog_has_piece(const char *key, const char *piece, size_t n) {
  for (const char *p = strchr(key, '|'); p; p = strchr(p + 1, '|'))
    if (strncmp(p + 1, piece, n) == 0 && (p[1 + n] == '|' || p[1 + n] == '\0')) return 1;
  return 0;
}

static int klog_match1(const char *key, const char *spec) {
  size_t kl;
  const char *k = klog_kernel(key, &kl);
  const char *bar = strchr(spec, '|');
  size_t sl = bar ? (size_t)(bar - spec) : strlen(spec);
  if (sl != kl || strncmp(k, spec, kl) != 0) return 0;
  while (bar) {
    const char *piece = bar + 1;
    bar = strchr(piece, '|');
    size_t n = bar ? (size_t)(bar - piece) : strlen(piece);
    if (n && !klog_has_piece(key, piece, n)) return 0;
  }
  return 1;
}

/* spec: alternatives "a||b||..." (each "kernel|SLOT=value|..."): any one matching. */
static int klog_match(const char *key, const char *spec) {
  char alt[512];
  for (const char *a = spec;;) {
    const char *e = strstr(a, "||");
    const size_t n = e ? (size_t)(e - a) : strlen(a);
    if (n < sizeof alt) {
      memcpy(alt, a, n);
      alt[n] = '\0';
      if (klog_match1(key, alt)) return 1;
    }
    if (!e) return 0;
    a = e + 2;
  }
}

long tu_klog_count(const ndf_ctx *ctx, uint64_t mark, const char *spec, long *lost) {
  const uint64_t end = ndf_ctx_kernel_count(ctx);
  long n = 0, gone = 0;
  for (uint64_t i = mark; i < end; i++) {
    const char *key = ndf_ctx_kernel_launched(ctx, i);
    if (!key) gone++;
    else n += klog_match(key, spec);
  }
  if (lost) *lost = gone;
  return n;
}

/* One entry as text: the entry point and the slots whose values are short. */
static void klog_entry_text(const char *key, char *buf, size_t len) {
  size_t kl, w;
  const char *k = klog_kernel(key, &kl);
  w = (size_t)snprintf(buf, len, "%.*s", (int)kl, k);
  for (const char *p = strchr(k, '|'); p && w < len; p = strchr(p + 1, '|')) {
    const char *e = strchr(p + 1, '|');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n <= 24 && memchr(p + 1, '\n', n - 1) == NULL) w += (size_t)snprintf(buf + w, len - w, "%.*s", (int)n, p);
  }
}

const char *tu_klog_text(const ndf_ctx *ctx, uint64_t mark, char *buf, size_t len) {
  const uint64_t end = ndf_ctx_kernel_count(ctx);
  size_t w = 0;
  char prev[512] = "", cur[512];
  long rep = 0, gone = 0;
  if (len) buf[0] = '\0';
  uint64_t i = mark;
  while (i < end && !ndf_ctx_kernel_launched(ctx, i)) i++, gone++; /* the oldest leave the log first */
  if (gone && len) w += (size_t)snprintf(buf, len, "(%ld launches left the log)", gone);
  for (; i <= end && w < len; i++) {
    const char *key = i < end ? ndf_ctx_kernel_launched(ctx, i) : NULL;
    if (i < end && !key) continue;
    if (key) klog_entry_text(key, cur, sizeof cur);
    if (key && rep && strcmp(cur, prev) == 0) {
      rep++;
      continue;
    }
    if (rep) w += (size_t)snprintf(buf + w, len - w, "%s%s", w ? ", " : "", prev);
    if (rep > 1 && w < len) w += (size_t)snprintf(buf + w, len - w, " x%ld", rep);
    if (!key) break;
    snprintf(prev, sizeof prev, "%s", cur);
    rep = 1;
  }
  if (mark == end && len) snprintf(buf, len, "(nothing)");
  return buf;
}

int tu_klog_check(const ndf_ctx *ctx, uint64_t mark, const char *spec, int want_ran, const char *desc) {
  long lost = 0;
  const long n = tu_klog_count(ctx, mark, spec, &lost);
  if (want_ran ? n > 0 : n == 0 && lost == 0) return 0;
  char text[2048];
  const char *mode = getenv("NDF_TEST_KLOG");
  const int warn = mode && strcmp(mode, "warn") == 0;
  printf("%s%s: expected %s %s; launched: %s\n", warn ? "kernel log (warning only, NDF_TEST_KLOG=warn): " : "",
         desc, spec, want_ran ? "to run" : lost ? "not to run (some launches left the log)" : "not to run",
         tu_klog_text(ctx, mark, text, sizeof text));
  return !warn;
}

int tu_parse_i64s(const char *v, int64_t *out, int max) {
  int n = 0;
  if (!*v) return 0;
  for (;;) {
    char *end;
    if (n == max) return -1;
    out[n++] = strtoll(v, &end, 10);
    if (end == v) return -1;
    if (*end == 0) return n;
    if (*end != ',') return -1;
    v = end + 1;
  }
}

int tu_parse_f64s(const char *v, double *out, int max) {
  int n = 0;
  if (!*v) return 0;
  for (;;) {
    char *end;
    if (n == max) return -1;
    out[n++] = strtod(v, &end);
    if (end == v) return -1;
    if (*end == 0) return n;
    if (*end != ',') return -1;
    v = end + 1;
  }
}
