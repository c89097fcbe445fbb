/*
 * status.c -- status names and messages (one table, in ndforge.h), the
 * per-context and thread-local error messages, and the small dtype and
 * boundary-mode tables.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

const char *ndf_status_name(ndf_status s) {
  switch (s) {
#define NAME(name, code, msg) case NDF_##name: return "NDF_" #name;
    NDF_STATUS_MAP(NAME)
#undef NAME
  }
  return "NDF_UNKNOWN";
}

const char *ndf_status_string(ndf_status s) {
  switch (s) {
#define MSG(name, code, msg) case NDF_##name: return msg;
    NDF_STATUS_MAP(MSG)
#undef MSG
  }
  return "unknown status";
}

const char *ndf_version(void) { return NDF_VERSION_STRING; }

static _Thread_local char tls_errmsg[NDF__ERRMSG_MAX];

const char *ndf_last_error(void) { return tls_errmsg; }

const char *ndf_errmsg(const ndf_ctx *ctx) { return ctx ? ctx->errmsg : tls_errmsg; }

void ndf__clear_error(ndf_ctx *ctx) {
  if (ctx) ctx->errmsg[0] = '\0';
}

static void vset(ndf_ctx *ctx, const char *fmt, va_list ap) {
  char *buf = ctx ? ctx->errmsg : tls_errmsg;
  vsnprintf(buf, NDF__ERRMSG_MAX, fmt, ap);
}

ndf_status ndf__error(ndf_ctx *ctx, ndf_status s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vset(ctx, fmt, ap);
  va_end(ap);
  return s;
}

ndf_status ndf__argerror(ndf_ctx *ctx, const char *op, const char *arg, const char *fmt, ...) {
  char why[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  return ndf__error(ctx, NDF_EINVAL, "%s: bad argument '%s' (%s)", op, arg, why);
}

/* ---- dtypes ---------------------------------------------------------------------- */

static const struct {
  const char *name, *ctype;
  size_t size;
  const char *alias[4];
} dtypes[NDF_DTYPE_COUNT] = {
    [NDF_BOOL] = {"bool", "unsigned char", 1, {"b1", "|b1", "?", NULL}},
    [NDF_UINT8] = {"uint8", "unsigned char", 1, {"u1", "|u1", "<u1", NULL}},
    [NDF_INT8] = {"int8", "signed char", 1, {"i1", "|i1", "<i1", NULL}},
    [NDF_UINT16] = {"uint16", "unsigned short", 2, {"u2", "<u2", NULL}},
    [NDF_INT16] = {"int16", "short", 2, {"i2", "<i2", NULL}},
    [NDF_UINT32] = {"uint32", "unsigned int", 4, {"u4", "<u4", NULL}},
    [NDF_INT32] = {"int32", "int", 4, {"i4", "<i4", NULL}},
    [NDF_FLOAT32] = {"float32", "float", 4, {"f4", "<f4", "float", NULL}},
    [NDF_FLOAT64] = {"float64", "double", 8, {"f8", "<f8", "double", NULL}},
    [NDF_INT64] = {"int64", "long long", 8, {"i8", "<i8", NULL}},
    [NDF_UINT64] = {"uint64", "unsigned long long", 8, {"u8", "<u8", NULL}},
};

const char *ndf_dtype_name(ndf_dtype t) {
  return ((unsigned)t < NDF_DTYPE_COUNT) ? dtypes[t].name : NULL;
}

size_t ndf_dtype_size(ndf_dtype t) { return ((unsigned)t < NDF_DTYPE_COUNT) ? dtypes[t].size : 0; }

const char *ndf__dtype_ctype(ndf_dtype t) {
  return ((unsigned)t < NDF_DTYPE_COUNT) ? dtypes[t].ctype : "void";
}

ndf_status ndf_dtype_from_name(const char *name, ndf_dtype *out) {
  if (!name || !out) return ndf__error(NULL, NDF_EINVAL, "ndf_dtype_from_name: NULL argument");
  for (int t = 0; t < NDF_DTYPE_COUNT; t++) {
    if (strcmp(name, dtypes[t].name) == 0) { *out = (ndf_dtype)t; return NDF_OK; }
    for (int a = 0; a < 4 && dtypes[t].alias[a]; a++)
      if (strcmp(name, dtypes[t].alias[a]) == 0) { *out = (ndf_dtype)t; return NDF_OK; }
  }
  return ndf__error(NULL, NDF_EINVAL, "ndf_dtype_from_name: unknown dtype '%s'", name);
}

int ndf__dtype_is_float(ndf_dtype t) { return t == NDF_FLOAT32 || t == NDF_FLOAT64; }

void ndf__dtype_range(ndf_dtype t, double *lo, double *hi) {
  switch (t) {
    case NDF_BOOL: *lo = 0; *hi = 1; break;
    case NDF_UINT8: *lo = 0; *hi = 255; break;
    case NDF_INT8: *lo = -128; *hi = 127; break;
    case NDF_UINT16: *lo = 0; *hi = 65535; break;
    case NDF_INT16: *lo = -32768; *hi = 32767; break;
    case NDF_UINT32: *lo = 0; *hi = 4294967295.0; break;
    case NDF_INT32: *lo = -2147483648.0; *hi = 2147483647.0; break;
    /* the 64-bit ranges as doubles, ends rounded inwards: every double in them converts exactly */
    case NDF_INT64: *lo = -9223372036854775808.0; *hi = 9223372036854774784.0; break;
    case NDF_UINT64: *lo = 0; *hi = 18446744073709549568.0; break;
    default: *lo = -INFINITY; *hi = INFINITY; break;
  }
}

double ndf__convert_value(ndf_dtype t, double v) {
  if (t == NDF_FLOAT64) return v;
  if (t == NDF_FLOAT32) return (double)(float)v;
  double lo, hi;
  ndf__dtype_range(t, &lo, &hi);
  v = trunc(v);
  return v < lo ? lo : v > hi ? hi : v;
}

/* ---- boundary modes ----------------------------------------------------------------- */

static const char *mode_names[NDF_MODE_COUNT] = {"reflect", "constant", "nearest", "mirror", "wrap"};

const char *ndf_mode_name(ndf_mode m) {
  return ((unsigned)m < NDF_MODE_COUNT) ? mode_names[m] : NULL;
}

ndf_status ndf_mode_from_name(const char *name, ndf_mode *out) {
  static const struct { const char *name; ndf_mode mode; } names[] = {
      {"reflect", NDF_MODE_REFLECT},     {"grid-mirror", NDF_MODE_REFLECT},
      {"constant", NDF_MODE_CONSTANT},   {"grid-constant", NDF_MODE_CONSTANT},
      {"nearest", NDF_MODE_NEAREST},     {"mirror", NDF_MODE_MIRROR},
      {"wrap", NDF_MODE_WRAP},           {"grid-wrap", NDF_MODE_WRAP},
  };
  if (!name || !out) return ndf__error(NULL, NDF_EINVAL, "ndf_mode_from_name: NULL argument");
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(name, names[i].name) == 0) { *out = names[i].mode; return NDF_OK; }
  return ndf__error(NULL, NDF_EINVAL,
                    "ndf_mode_from_name: unknown mode '%s' (expected reflect, constant, nearest, "
                    "mirror, wrap, grid-mirror, grid-constant or grid-wrap)", name);
}
