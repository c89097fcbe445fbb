/*
 * tune.h -- tunables (the spec's `tunables`, gen/tunables.lua) and the tuning
 * table (tune.c; docs/adr/0019-tunables-and-autotuning.md).
 *
 * A kernel variant is read where the runtime chooses it:
 *
 *   const ndf__tune_work w = {dtype, nsp, elements, window};
 *   if (ndf__tune(ctx, NDF__TUNE_ECC_3D, &w) == NDF__TUNE_ECC_3D__OLD) ...
 *
 * which returns, in this order: the built-in default when the tunable's rule
 * does not hold for w; the value set on the context (ndf_ctx_set_tunable);
 * the tuning table's entry for (tunable, w) on this device; the default.  An
 * enumerated tunable's value is the index of its value (the default 0), a
 * range's the integer.  w may be NULL where the site knows no workload (no
 * rule, no table: the value set, else the default).
 */
#ifndef NDF_TUNE_H
#define NDF_TUNE_H

#include <stdint.h>

#include "ndforge.h"

/* What the table keys a choice by: the call's input dtype, its spatial axes,
 * its elements (the table keeps ceil(log2 n)) and the window or extent the
 * site chooses for (0 where none). */
typedef struct ndf__tune_work {
  ndf_dtype dtype;
  int nsp;
  int64_t n;
  int64_t k;
} ndf__tune_work;

/* One tunable of the spec (generated: tunables.generated.c). */
typedef struct ndf__tunable_def {
  const char *name, *op, *templates, *doc, *rule;
  int nvalues;               /* enumerated: the count of values; 0: an integer range */
  const char *const *values; /* enumerated: the values, the default first */
  int lo, hi, def;           /* the domain (enumerated: 0 .. nvalues - 1) and the default */
  int nsearch;               /* the values `ndforge tune` times (0: never tuned) */
  const int *search;
  int (*applies)(const ndf__tune_work *w);
} ndf__tunable_def;

extern const ndf__tunable_def ndf__tunables[];
extern const int ndf__ntunables;

#include "tunables.generated.h"

int ndf__tune(ndf_ctx *ctx, int id, const ndf__tune_work *w);

/* A call's own tunables (an options struct's `tune`, "name=value,..."): from
 * ndf__tune_call_begin to ndf__tune_call_end, ndf__tune on this thread and
 * context answers them before the context's.  begin returns NDF_EINVAL
 * (naming the op and the item) for a bad item; end is called only after a
 * begin that returned NDF_OK. */
#define NDF__TUNE_CALL_MAX 16
typedef struct ndf__tune_call {
  const ndf_ctx *ctx;
  int n, active;
  int id[NDF__TUNE_CALL_MAX], val[NDF__TUNE_CALL_MAX];
  const struct ndf__tune_call *prev;
} ndf__tune_call;
ndf_status ndf__tune_call_begin(ndf_ctx *ctx, const char *op, const char *tune, ndf__tune_call *c);
void ndf__tune_call_end(ndf__tune_call *c);
/* 1 when a value is set on the context for tunable id (the sites that leave
 * other paths alone when a variant is asked for). */
int ndf__tune_is_set(ndf_ctx *ctx, int id);
/* Frees the context's tunables and table (ndf_ctx_destroy). */
void ndf__tune_release(ndf_ctx *ctx);

/* ---- the table's text form (tune.c; white-box tests) ---------------------------------- */
typedef struct ndf__tune_ident {
  char device[256];
  int cc_major, cc_minor, driver, nvrtc_major, nvrtc_minor;
  char version[32];
} ndf__tune_ident;
typedef struct ndf__tune_table ndf__tune_table;
/* An empty table; NULL when out of memory. */
ndf__tune_table *ndf__tune_table_new(void);
void ndf__tune_table_free(ndf__tune_table *t);
/* Parses text (len bytes) into t: 0 on success; -1 corrupt (a bad header, a
 * line that does not parse, an unknown tunable or value, a checksum or count
 * that does not match), -2 stale (another identity than want).  why gets the
 * reason. */
int ndf__tune_table_parse(ndf__tune_table *t, const char *text, size_t len, const ndf__tune_ident *want, char *why,
                          size_t cap);
/* The text form of t for identity id (malloc'd; NULL when out of memory). */
char *ndf__tune_table_format(const ndf__tune_table *t, const ndf__tune_ident *id);
/* Sets (value >= 0) or removes (value < 0) the entry of (id, w); 0, or -1 when out of memory. */
int ndf__tune_table_put(ndf__tune_table *t, int id, const ndf__tune_work *w, int value);
/* The entry's value, or -1 when there is none. */
int ndf__tune_table_get(const ndf__tune_table *t, int id, const ndf__tune_work *w);
int ndf__tune_table_count(const ndf__tune_table *t);

#endif
