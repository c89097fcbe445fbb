/*
 * test_rank.c -- the CPU backend of the rank filters (ndf_median_filter,
 * ndf_rank_filter, ndf_percentile_filter) against scipy.ndimage itself, plus
 * ndforge's NaN policies (PROPAGATE, OMIT; scipy leaves NaN undefined) against
 * a naive reference written here, hand-written cases of scipy's less obvious
 * rules, and the contract (every rejected input: status, a message naming the
 * op and the argument, an untouched output).
 *
 * The scipy part runs tests/oracle_rank.py with a fresh seed per run
 * (printed; NDF_TEST_SEED repeats a run, NDF_TEST_CASES sets the number of
 * random cases), reads the cases it wrote and requires ndforge's output to
 * equal the expected one bit for bit, with the input (and footprint) as
 * written, in Fortran order and embedded in a larger buffer with permuted /
 * padded / negative strides, and with strided outputs (whose gaps must keep
 * their poison).  Cases that scipy rejects must return NDF_EINVAL naming the
 * argument, output untouched.  For 1-D inputs the oracle's reference is the
 * documented N-D definition (generic_filter), not scipy >= 1.14's 1-D fast
 * path, which ignores false footprint entries.  The naive reference of this
 * file (ref_rank) is checked against every oracle case before it is used for
 * the NaN policies.  The oracle's directory is kept when a case fails, and its
 * path printed.
 *
 * This file uses only the public API of ndforge (and tools/ndfio.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ndfio.h"
#include "ndforge.h"
#include "testutil.h"

#ifndef NDF_TEST_PYTHON
#error "NDF_TEST_PYTHON (a python3 with numpy and scipy) must be defined by the build"
#endif
#ifndef NDF_TEST_ORACLE
#error "NDF_TEST_ORACLE (path of tests/oracle_rank.py) must be defined by the build"
#endif

/* ------------------------------------------------------------------------ */
/* The ops                                                                   */

enum { R_MEDIAN = 0, R_RANK, R_PERCENTILE, R_NOPS };

static const char *const op_short[R_NOPS] = {"median", "rank", "percentile"};
static const char *const op_api[R_NOPS] = {"ndf_median_filter", "ndf_rank_filter", "ndf_percentile_filter"};

#define OPS_ALL 0x7u

static int op_from_name(const char *s) {
  for (int k = 0; k < R_NOPS; k++)
    if (!strcmp(s, op_short[k])) return k;
  return -1;
}

static ndf_status call_op(ndf_ctx *ctx, int op, const ndf_array *in, ndf_array *out, int64_t rank, double pct,
                          const ndf_rank_options *o) {
  switch (op) {
    case R_MEDIAN: return ndf_median_filter(ctx, in, out, o);
    case R_RANK: return ndf_rank_filter(ctx, in, out, rank, o);
    case R_PERCENTILE: return ndf_percentile_filter(ctx, in, out, pct, o);
    default: return NDF_EINTERNAL;
  }
}

/* ------------------------------------------------------------------------ */
/* Naive reference                                                           */

/* The element after scipy's size / footprint priority: shape, mask (C order,
 * NULL = all in), one origin per spatial axis. */
typedef struct rk_elem {
  int nsp;
  int64_t shape[NDF_MAX_SPATIAL];
  const uint8_t *fp;
  int64_t origin[NDF_MAX_SPATIAL];
} rk_elem;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y ? 1 : 0;
}
static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y ? 1 : 0;
}
static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y ? 1 : 0;
}

/* The rank scipy selects among m values (m = n, the number of taps, without
 * NaN): median m // 2; percentile p (p < 0: p + 100) m - 1 for 100, else
 * int(m * p / 100) in double arithmetic; an explicit rank r (r < 0: r + n with
 * the full n).  -1 when no value can be selected. */
static int64_t select_rank(int op, int64_t rank, double pct, int64_t n, int64_t m) {
  int64_t r;
  if (op == R_MEDIAN) {
    r = m / 2;
  } else if (op == R_PERCENTILE) {
    double p = pct < 0.0 ? pct + 100.0 : pct;
    r = p == 100.0 ? m - 1 : (int64_t)((double)m * p / 100.0);
  } else {
    r = rank < 0 ? rank + n : rank;
  }
  return r >= 0 && r < m ? r : -1;
}

/* The definition: out[x] = element r of the sorted window, the window being
 * the footprint's taps at x + k - (s/2 + o) per axis, mapped by the mode (cval
 * converted to the input dtype first), every batch image on its own.  NaN
 * (float dtypes): omit = 0: NaN when the window holds one; omit = 1: the NaNs
 * are left out and the rank taken on the rest (NaN when none is left or an
 * explicit rank cannot be reached).  out must be a host array shaped like in
 * (any strides). */
static void ref_rank(int op, int64_t rank, double pct, const ndf_array *in, const ndf_array *out, const rk_elem *el,
                     ndf_mode mode, double cval, int batch_dims, int omit) {
  int nsp = el->nsp;
  int64_t ntap = 1, n = 0;
  for (int i = 0; i < nsp; i++) ntap *= el->shape[i];
  for (int64_t k = 0; k < ntap; k++) n += el->fp ? el->fp[k] != 0 : 1;
  double cv = cval;
  if (in->dtype == NDF_FLOAT32) cv = (double)(float)cval;
  else if (!tu_is_float(in->dtype)) cv = trunc(cval);
  const int64_t *sh = in->shape + batch_dims;
  int64_t nimg = 1, nbatch = 1;
  for (int i = 0; i < nsp; i++) nimg *= sh[i];
  for (int i = 0; i < batch_dims; i++) nbatch *= in->shape[i];
  double *win = malloc(sizeof(double) * (size_t)(n ? n : 1));
  /* 64-bit integers are sorted as themselves (a double would round them) */
  const int wide = in->dtype == NDF_INT64 || in->dtype == NDF_UINT64;
  uint64_t *wwin = malloc(sizeof(uint64_t) * (size_t)(n ? n : 1));
  const uint64_t wcv = in->dtype == NDF_UINT64 && cv >= 0 ? (uint64_t)cv : (uint64_t)(int64_t)cv;
  for (int64_t b = 0; b < nbatch; b++) {
    for (int64_t x = 0; x < nimg; x++) {
      int64_t xc[NDF_MAX_SPATIAL];
      int64_t t = x;
      for (int i = nsp - 1; i >= 0; i--) {
        xc[i] = t % sh[i];
        t /= sh[i];
      }
      int64_t m = 0;
      int nan = 0;
      for (int64_t k = 0; k < ntap; k++) {
        if (el->fp && !el->fp[k]) continue;
        int64_t kc[NDF_MAX_SPATIAL];
        int64_t kk = k;
        for (int i = nsp - 1; i >= 0; i--) {
          kc[i] = kk % el->shape[i];
          kk /= el->shape[i];
        }
        int outside = 0;
        int64_t src = 0;
        for (int i = 0; i < nsp; i++) {
          int64_t c = xc[i] + kc[i] - (el->shape[i] / 2 + el->origin[i]);
          int64_t mc = tu_map_coord(c, sh[i], mode);
          if (mc < 0) {
            outside = 1;
            break;
          }
          src = src * sh[i] + mc;
        }
        if (wide) {
          if (outside) wwin[m++] = wcv;
          else memcpy(&wwin[m++], tu_elem_ptr(in, b * nimg + src), 8);
          continue;
        }
        double v = outside ? cv : tu_get(in, b * nimg + src);
        if (isnan(v)) {
          nan = 1;
          continue;
        }
        win[m++] = v;
      }
      if (wide) { /* m = n: no NaN */
        int64_t r = select_rank(op, rank, pct, n, m);
        qsort(wwin, (size_t)m, sizeof *wwin, in->dtype == NDF_INT64 ? cmp_i64 : cmp_u64);
        if (r >= 0) memcpy(tu_elem_ptr(out, b * nimg + x), &wwin[r], 8);
        continue;
      }
      double res;
      if (nan && !omit) {
        res = NAN;
      } else {
        int64_t r = select_rank(op, rank, pct, n, m);
        if (r < 0) {
          res = NAN;
        } else {
          qsort(win, (size_t)m, sizeof *win, cmp_double);
          res = win[r];
        }
      }
      tu_set(out, b * nimg + x, res);
    }
  }
  free(wwin);
  free(win);
}

/* ------------------------------------------------------------------------ */
/* Cases written by the oracle                                               */

typedef struct rank_case {
  char line[1024]; /* the manifest line, for messages */
  int id;
  int op; /* R_* */
  char dtype[16];
  int ndim;
  int64_t shape[NDF_MAX_NDIM];
  int batch;
  char mode[32];
  double cval;
  int nsize;
  int64_t size[NDF_MAX_SPATIAL];
  int norigin;
  int64_t origin[NDF_MAX_SPATIAL];
  int64_t rank;
  double percentile;
  int expect_error;
  char arg[32];
  char footprint[64], input[64], expected[64];
} rank_case;

typedef tu_oracle_group rank_state; /* cases: rank_case records */
static rank_case *cases_of(const rank_state *s) { return s->cases; }

static int parse_case(const char *line, rank_case *c) {
  memset(c, 0, sizeof *c);
  c->op = -1;
  snprintf(c->line, sizeof c->line, "%s", line);
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", line);
  char *save = NULL;
  for (char *tok = strtok_r(buf, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
    char *eq = strchr(tok, '=');
    if (!eq) return -1;
    *eq = 0;
    const char *k = tok, *v = eq + 1;
    if (!strcmp(k, "id")) c->id = atoi(v);
    else if (!strcmp(k, "op")) {
      c->op = op_from_name(v);
      if (c->op < 0) {
        fprintf(stderr, "unknown op '%s' in the manifest\n", v);
        return -1;
      }
    }
    else if (!strcmp(k, "dtype")) snprintf(c->dtype, sizeof c->dtype, "%s", v);
    else if (!strcmp(k, "shape")) c->ndim = tu_parse_i64s(v, c->shape, NDF_MAX_NDIM);
    else if (!strcmp(k, "batch")) c->batch = atoi(v);
    else if (!strcmp(k, "mode")) snprintf(c->mode, sizeof c->mode, "%s", v);
    else if (!strcmp(k, "cval")) c->cval = strtod(v, NULL);
    else if (!strcmp(k, "size")) c->nsize = tu_parse_i64s(v, c->size, NDF_MAX_SPATIAL);
    else if (!strcmp(k, "origin")) c->norigin = tu_parse_i64s(v, c->origin, NDF_MAX_SPATIAL);
    else if (!strcmp(k, "rank")) c->rank = strtoll(v, NULL, 10);
    else if (!strcmp(k, "percentile")) c->percentile = strtod(v, NULL);
    else if (!strcmp(k, "expect")) c->expect_error = !strcmp(v, "error");
    else if (!strcmp(k, "arg")) snprintf(c->arg, sizeof c->arg, "%s", v);
    else if (!strcmp(k, "footprint")) snprintf(c->footprint, sizeof c->footprint, "%s", v);
    else if (!strcmp(k, "input")) snprintf(c->input, sizeof c->input, "%s", v);
    else if (!strcmp(k, "expected")) snprintf(c->expected, sizeof c->expected, "%s", v);
    /* taps, rank_used, ref, scipy1d and unknown keys are informational */
  }
  if (c->op < 0 || !c->input[0] || c->ndim <= 0 || !c->mode[0]) return -1;
  if (c->expect_error) return c->arg[0] ? 0 : -1;
  return c->expected[0] ? 0 : -1;
}

static int parse_line(const char *line, void *c) { return parse_case(line, c); }

static int summary(const rank_state *s) {
  int per[R_NOPS] = {0}, errors = 0;
  for (int i = 0; i < s->ncases; i++) {
    per[cases_of(s)[i].op]++;
    errors += cases_of(s)[i].expect_error;
  }
  printf("%d scipy cases (%d rejected by scipy):", s->ncases, errors);
  for (int k = 0; k < R_NOPS; k++) printf(" %s %d%s", op_short[k], per[k], k + 1 < R_NOPS ? "," : "\n");
  return 0;
}

static int group_setup(void **state) {
  return tu_oracle_group_setup(state, "ndf-test-rank", 1500, NDF_TEST_PYTHON, NDF_TEST_ORACLE, sizeof(rank_case), parse_line, summary);
}
#define group_teardown tu_oracle_group_teardown

/* ------------------------------------------------------------------------ */
/* Running one oracle case                                                   */

enum { IN_ASIS, IN_STRIDED, IN_FORTRAN };
enum { OUT_C, OUT_STRIDED, OUT_FORTRAN };

typedef struct variant {
  int in, out;
  const char *name;
} variant;

static const variant VARIANTS[] = {
    {IN_ASIS, OUT_C, "input as read, C output"},
    {IN_STRIDED, OUT_C, "strided input/footprint, C output"},
    {IN_FORTRAN, OUT_FORTRAN, "Fortran input/footprint, Fortran output"},
    {IN_ASIS, OUT_STRIDED, "input as read, strided output"},
    {IN_STRIDED, OUT_STRIDED, "strided input/footprint, strided output"},
};

static size_t arr_bytes(const ndf_array *a) { return (size_t)ndf_array_size(a) * ndf_dtype_size(a->dtype); }

static int read_npy(const rank_state *s, const char *name, ndfio_image *img) {
  char path[700], err[512];
  snprintf(path, sizeof path, "%s/%s", s->dir, name);
  ndf_status st = ndfio_npy_read(path, img, err, sizeof err);
  if (st != NDF_OK) {
    fprintf(stderr, "ndfio_npy_read(%s): %s: %s\n", path, ndf_status_name(st), err);
    return -1;
  }
  return 0;
}

/* The array as the variant passes it: as read, or a relaid copy in t. */
static int lay(const ndf_array *src, tu_array *t, int inv, tu_rng *rng, const ndf_array **use) {
  if (inv == IN_ASIS) {
    *use = src;
    return 0;
  }
  int layout = inv == IN_FORTRAN ? TU_LAYOUT_FORTRAN
                                 : TU_LAYOUT_PADDED | (tu_rng_chance(rng, 0.5) ? TU_LAYOUT_NEGATIVE : 0);
  if (tu_array_relayout(t, src, layout, rng)) return -1;
  *use = &t->arr;
  return 0;
}

static int out_layout(int outv) {
  return outv == OUT_STRIDED ? TU_LAYOUT_PADDED : outv == OUT_FORTRAN ? TU_LAYOUT_FORTRAN : TU_LAYOUT_C;
}

/* The element of a case, for ref_rank: fpbuf receives the footprint mask. */
static void case_elem(const rank_case *c, const ndf_array *fp, uint8_t *fpbuf, rk_elem *el) {
  memset(el, 0, sizeof *el);
  el->nsp = c->ndim - c->batch;
  for (int d = 0; d < el->nsp; d++) {
    el->shape[d] = fp ? fp->shape[d] : c->size[c->nsize == 1 ? 0 : d];
    el->origin[d] = c->norigin ? c->origin[c->norigin == 1 ? 0 : d] : 0;
  }
  if (fp) {
    int64_t n = ndf_array_size(fp);
    for (int64_t i = 0; i < n; i++) fpbuf[i] = tu_get(fp, i) != 0;
    el->fp = fpbuf;
  }
}

/* Returns 0 when the case passes; prints what went wrong otherwise.  With
 * check_ref, the naive reference must agree with the oracle too (a test bug
 * otherwise). */
static int run_case(rank_state *s, const rank_case *c, const variant *v, tu_rng *rng, int verbose, int check_ref) {
  char msg[2048] = "";
  int rc = -1;
  ndfio_image in = {0}, exp = {0}, fp = {0};
  tu_array in_l = {0}, fp_l = {0}, out = {0}, ref = {0};
  void *insave = NULL;
  ndf_rank_options o;
  ndf_rank_options_init(&o);
  if (read_npy(s, c->input, &in)) goto done;
  if (c->expected[0] && read_npy(s, c->expected, &exp)) goto done;
  if (c->footprint[0] && read_npy(s, c->footprint, &fp)) goto done;
  ndf_dtype want;
  if (ndf_dtype_from_name(c->dtype, &want) != NDF_OK || want != in.arr.dtype) {
    snprintf(msg, sizeof msg, "dtype of the input file is not %s", c->dtype);
    goto done;
  }
  const ndf_array *input, *foot = NULL;
  if (lay(&in.arr, &in_l, v->in, rng, &input)) goto done;
  if (c->footprint[0] && lay(&fp.arr, &fp_l, v->in, rng, &foot)) goto done;
  if (tu_array_like(&out, &in.arr, out_layout(v->out), rng)) goto done;
  size_t inbytes = input == &in.arr ? arr_bytes(&in.arr) : in_l.bytes;
  const void *inbase = input == &in.arr ? in.arr.data : in_l.base;
  insave = malloc(inbytes ? inbytes : 1);
  memcpy(insave, inbase, inbytes);

  o.nsize = c->nsize;
  for (int i = 0; i < c->nsize; i++) o.size[i] = c->size[i];
  o.footprint = foot;
  o.norigin = c->norigin;
  for (int i = 0; i < c->norigin; i++) o.origin[i] = c->origin[i];
  o.cval = c->cval;
  o.batch_dims = c->batch;
  /* no NaN in the oracle's data: either policy gives scipy's result */
  o.nan_policy = tu_rng_chance(rng, 0.3) ? NDF_RANK_NAN_OMIT : NDF_RANK_NAN_PROPAGATE;
  if (ndf_mode_from_name(c->mode, &o.mode) != NDF_OK) {
    snprintf(msg, sizeof msg, "ndf_mode_from_name(\"%s\") failed", c->mode);
    goto done;
  }

  ndf_status r = call_op(s->ctx, c->op, input, &out.arr, c->rank, c->percentile, &o);
  const char *m = ndf_errmsg(s->ctx);
  if (c->expect_error) {
    if (r != NDF_EINVAL || !strstr(m, c->arg) || !strstr(m, op_api[c->op])) {
      snprintf(msg, sizeof msg, "scipy rejects this case (%s): want NDF_EINVAL and a message naming %s and '%s'; got %s \"%s\"",
               c->arg, op_api[c->op], c->arg, ndf_status_name(r), m);
      goto done;
    }
    int64_t p = tu_poison_check(out.base, out.bytes);
    if (p >= 0) {
      snprintf(msg, sizeof msg, "NDF_EINVAL but the output buffer was written (byte %lld)", (long long)p);
      goto done;
    }
  } else {
    if (r != NDF_OK) {
      snprintf(msg, sizeof msg, "returned %s: %s", ndf_status_name(r), m);
      goto done;
    }
    char detail[1024];
    int64_t bad = tu_compare(&exp.arr, &out.arr, detail, sizeof detail);
    if (bad) {
      snprintf(msg, sizeof msg, "%lld of %lld elements differ from the oracle:\n%s", (long long)bad,
               (long long)ndf_array_size(&exp.arr), detail);
      goto done;
    }
    int64_t gap = tu_check_gaps(&out);
    if (gap >= 0) {
      snprintf(msg, sizeof msg, "wrote outside the output's elements (buffer byte %lld)", (long long)gap);
      goto done;
    }
    if (check_ref) {
      uint8_t *fpbuf = c->footprint[0] ? malloc((size_t)ndf_array_size(&fp.arr)) : NULL;
      rk_elem el;
      case_elem(c, c->footprint[0] ? &fp.arr : NULL, fpbuf, &el);
      if (tu_array_alloc(&ref, in.arr.dtype, in.arr.ndim, in.arr.shape)) {
        free(fpbuf);
        goto done;
      }
      ref_rank(c->op, c->rank, c->percentile, &in.arr, &ref.arr, &el, o.mode, c->cval, c->batch, 0);
      free(fpbuf);
      bad = tu_compare(&exp.arr, &ref.arr, detail, sizeof detail);
      if (bad) {
        snprintf(msg, sizeof msg, "TEST BUG: the naive reference of test_rank.c differs from the oracle in %lld elements:\n%s",
                 (long long)bad, detail);
        goto done;
      }
    }
  }
  if (memcmp(insave, inbase, inbytes) != 0) {
    snprintf(msg, sizeof msg, "the input buffer was modified");
    goto done;
  }
  rc = 0;
done:
  if (rc != 0 && verbose)
    printf("FAIL case %d (%s, nan_policy %d): %s\n  %s\n", c->id, v->name, (int)o.nan_policy, c->line, msg);
  free(insave);
  ndfio_image_free(&in);
  ndfio_image_free(&exp);
  ndfio_image_free(&fp);
  tu_array_free(&in_l);
  tu_array_free(&fp_l);
  tu_array_free(&out);
  tu_array_free(&ref);
  return rc;
}

static void run_all(void **state, int vi) {
  rank_state *s = *state;
  const variant *v = &VARIANTS[vi];
  tu_rng rng;
  tu_rng_seed(&rng, s->seed * 41u + (uint64_t)vi);
  int failed = 0, failed_op[R_NOPS] = {0};
  for (int i = 0; i < s->ncases; i++) {
    if (run_case(s, &cases_of(s)[i], v, &rng, failed < 12, vi == 0) != 0) {
      failed++;
      failed_op[cases_of(s)[i].op]++;
    }
  }
  if (failed) {
    s->keep_dir = 1;
    printf("%d of %d scipy cases failed (%s); seed %llu, cases in %s\n  failures per op:", failed, s->ncases,
           v->name, (unsigned long long)s->seed, s->dir);
    for (int k = 0; k < R_NOPS; k++) printf(" %s %d", op_short[k], failed_op[k]);
    printf("\n");
  }
  assert_int_equal(failed, 0);
}

static void test_scipy_cases(void **state) { run_all(state, 0); }
static void test_scipy_cases_strided_input(void **state) { run_all(state, 1); }
static void test_scipy_cases_fortran(void **state) { run_all(state, 2); }
static void test_scipy_cases_strided_output(void **state) { run_all(state, 3); }
static void test_scipy_cases_strided_both(void **state) { run_all(state, 4); }

/* ------------------------------------------------------------------------ */
/* Hand-written cases                                                        */

static ndf_ctx *ctx_of(void **state) { return ((rank_state *)*state)->ctx; }
static uint64_t seed_of(void **state) { return ((rank_state *)*state)->seed; }

static void arr_nd(tu_array *t, ndf_dtype dt, int ndim, const int64_t *shape, const double *v) {
  assert_int_equal(tu_array_alloc(t, dt, ndim, shape), 0);
  int64_t n = ndf_array_size(&t->arr);
  for (int64_t i = 0; i < n; i++) tu_set(&t->arr, i, v ? v[i] : 0);
}

static void arr1d(tu_array *t, ndf_dtype dt, int n, const double *v) {
  int64_t sh[1] = {n};
  arr_nd(t, dt, 1, sh, v);
}

/* A poisoned output shaped like in. */
static void out_like(tu_array *t, const ndf_array *in) {
  assert_int_equal(tu_array_alloc(t, in->dtype, in->ndim, in->shape), 0);
  tu_poison(t->base, t->bytes);
}

/* got must hold want exactly (NaN matches NaN; 0 matches -0). */
static int check_values(const tu_array *got, const double *want, const char *what) {
  int64_t n = ndf_array_size(&got->arr);
  int bad = 0;
  for (int64_t i = 0; i < n; i++) {
    double g = tu_get(&got->arr, i);
    int ok = isnan(want[i]) ? isnan(g) : g == want[i];
    if (!ok) {
      if (bad < 8) printf("%s: element %lld expected %.17g got %.17g\n", what, (long long)i, want[i], g);
      bad++;
    }
  }
  return bad;
}

/* Calls op on a 1-D array of values and checks the result. */
static void expect_1d(ndf_ctx *ctx, int op, ndf_dtype dt, int n, const double *x, const ndf_rank_options *o,
                      int64_t rank, double pct, const double *want, const char *what) {
  tu_array in, out;
  arr1d(&in, dt, n, x);
  out_like(&out, &in.arr);
  ndf_status r = call_op(ctx, op, &in.arr, &out.arr, rank, pct, o);
  if (r != NDF_OK) printf("%s (%s, %s): %s %s\n", what, op_api[op], ndf_dtype_name(dt), ndf_status_name(r), ndf_errmsg(ctx));
  assert_int_equal(r, NDF_OK);
  char full[256];
  snprintf(full, sizeof full, "%s (%s, %s)", what, op_api[op], ndf_dtype_name(dt));
  assert_int_equal(check_values(&out, want, full), 0);
  tu_array_free(&in);
  tu_array_free(&out);
}

static void opts_size(ndf_rank_options *o, int64_t s) {
  ndf_rank_options_init(o);
  o->nsize = 1;
  o->size[0] = s;
}

/* Known values (scipy 1.10): the upper median of an even window, origins of
 * even sizes, every mode, median == rank n//2 == percentile 50. */
static void test_known_values(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  static const double x[6] = {1, 2, 3, 4, 5, 6};
  static const double m4[6] = {2, 2, 3, 4, 5, 6}, m4o_2[6] = {3, 4, 5, 6, 6, 6}, m4o1[6] = {2, 2, 2, 3, 4, 5};
  const ndf_dtype dts[] = {NDF_UINT8, NDF_INT8, NDF_UINT16, NDF_INT16, NDF_UINT32, NDF_INT32, NDF_FLOAT32, NDF_FLOAT64};
  for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
    ndf_rank_options o;
    opts_size(&o, 4);
    expect_1d(ctx, R_MEDIAN, dts[k], 6, x, &o, 0, 0, m4, "median size 4 (upper median)");
    expect_1d(ctx, R_RANK, dts[k], 6, x, &o, 2, 0, m4, "rank 2 of 4");
    expect_1d(ctx, R_RANK, dts[k], 6, x, &o, -2, 0, m4, "rank -2 of 4");
    expect_1d(ctx, R_PERCENTILE, dts[k], 6, x, &o, 0, 50, m4, "percentile 50 of 4");
    expect_1d(ctx, R_PERCENTILE, dts[k], 6, x, &o, 0, -50, m4, "percentile -50 of 4");
    o.norigin = 1;
    o.origin[0] = -2;
    expect_1d(ctx, R_MEDIAN, dts[k], 6, x, &o, 0, 0, m4o_2, "median size 4 origin -2");
    o.origin[0] = 1;
    expect_1d(ctx, R_MEDIAN, dts[k], 6, x, &o, 0, 0, m4o1, "median size 4 origin 1");
  }
  /* every mode, size 5 on 4 values (the window is longer than the image) */
  static const double w[4] = {7, 3, 9, 1};
  static const struct {
    ndf_mode mode;
    double med[4], r1[4];
  } modes[] = {
      {NDF_MODE_REFLECT, {7, 7, 3, 3}, {3, 3, 1, 1}},  {NDF_MODE_CONSTANT, {4, 4, 4, 4}, {4, 3, 3, 3}},
      {NDF_MODE_NEAREST, {7, 7, 3, 1}, {7, 3, 1, 1}},  {NDF_MODE_MIRROR, {7, 3, 7, 3}, {3, 3, 3, 3}},
      {NDF_MODE_WRAP, {7, 3, 7, 3}, {3, 1, 3, 3}},
  };
  for (size_t k = 0; k < sizeof modes / sizeof modes[0]; k++) {
    for (int dt = NDF_UINT8; dt <= NDF_FLOAT64; dt++) {
      ndf_rank_options o;
      opts_size(&o, 5);
      o.mode = modes[k].mode;
      o.cval = 4;
      char what[96];
      snprintf(what, sizeof what, "size 5 on 4 values, mode %s, cval 4", ndf_mode_name(modes[k].mode));
      expect_1d(ctx, R_MEDIAN, (ndf_dtype)dt, 4, w, &o, 0, 0, modes[k].med, what);
      expect_1d(ctx, R_RANK, (ndf_dtype)dt, 4, w, &o, 1, 0, modes[k].r1, what);
      expect_1d(ctx, R_RANK, (ndf_dtype)dt, 4, w, &o, -4, 0, modes[k].r1, what);
    }
  }
  /* 2-D percentiles (scipy's test_rank06 and friends, plus negative / 99.9) */
  static const double z[15] = {3, 2, 5, 1, 4, 5, 8, 3, 7, 1, 5, 6, 9, 3, 5};
  static const double p17[15] = {2, 2, 1, 1, 1, 3, 3, 2, 1, 1, 5, 5, 3, 3, 1};
  static const double pm17[15] = {3, 5, 5, 5, 4, 5, 5, 7, 5, 4, 6, 8, 8, 7, 5};
  static const double p100[15] = {3, 5, 5, 5, 4, 8, 8, 8, 7, 7, 8, 9, 9, 9, 7};
  static const double pm100[15] = {2, 2, 1, 1, 1, 2, 2, 1, 1, 1, 5, 3, 3, 1, 1};
  const struct {
    double p;
    const double *want;
  } pc[] = {{17, p17}, {-17, pm17}, {100, p100}, {-100, pm100}, {99.9, p100}, {0, pm100}};
  for (size_t k = 0; k < sizeof pc / sizeof pc[0]; k++) {
    for (int dt = NDF_UINT8; dt <= NDF_FLOAT64; dt++) {
      tu_array in, out;
      const int64_t sh[2] = {3, 5};
      arr_nd(&in, (ndf_dtype)dt, 2, sh, z);
      out_like(&out, &in.arr);
      ndf_rank_options o;
      ndf_rank_options_init(&o);
      o.nsize = 2;
      o.size[0] = 2;
      o.size[1] = 3;
      ndf_status r = ndf_percentile_filter(ctx, &in.arr, &out.arr, pc[k].p, &o);
      if (r != NDF_OK) printf("percentile %g size (2,3): %s\n", pc[k].p, ndf_errmsg(ctx));
      assert_int_equal(r, NDF_OK);
      char what[96];
      snprintf(what, sizeof what, "percentile %g, size (2,3), %s", pc[k].p, ndf_dtype_name((ndf_dtype)dt));
      assert_int_equal(check_values(&out, pc[k].want, what), 0);
      tu_array_free(&in);
      tu_array_free(&out);
    }
  }
}

/* A 1-D footprint with false entries: the documented N-D semantics (only the
 * true taps; scipy 1.10, and scipy >= 1.14 through generic_filter), not the
 * 1-D fast path of scipy >= 1.14, which uses footprint.size taps. */
static void test_1d_footprint_with_holes(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  static const double y[7] = {5, 1, 4, 2, 3, 0, 6};
  static const double f1011[4] = {1, 0, 1, 1};
  static const double r0[7] = {1, 1, 2, 1, 0, 0, 3}, r1[7] = {1, 4, 4, 2, 3, 2, 6}, r2[7] = {5, 5, 5, 3, 4, 6, 6};
  const double *want[3] = {r0, r1, r2};
  for (int dt = NDF_UINT8; dt <= NDF_FLOAT64; dt++) {
    tu_array fp;
    arr1d(&fp, dt & 1 ? NDF_BOOL : NDF_FLOAT32, 4, f1011);
    ndf_rank_options o;
    ndf_rank_options_init(&o);
    o.footprint = &fp.arr;
    for (int r = 0; r < 3; r++) {
      expect_1d(ctx, R_RANK, (ndf_dtype)dt, 7, y, &o, r, 0, want[r], "footprint [1,0,1,1]");
      expect_1d(ctx, R_RANK, (ndf_dtype)dt, 7, y, &o, r - 3, 0, want[r], "footprint [1,0,1,1], negative rank");
    }
    expect_1d(ctx, R_MEDIAN, (ndf_dtype)dt, 7, y, &o, 0, 0, r1, "footprint [1,0,1,1] median (3 taps)");
    expect_1d(ctx, R_PERCENTILE, (ndf_dtype)dt, 7, y, &o, 0, 100, r2, "footprint [1,0,1,1] percentile 100");
    expect_1d(ctx, R_PERCENTILE, (ndf_dtype)dt, 7, y, &o, 0, 66.7, r2, "footprint [1,0,1,1] percentile 66.7");
    expect_1d(ctx, R_PERCENTILE, (ndf_dtype)dt, 7, y, &o, 0, 66.6, r1, "footprint [1,0,1,1] percentile 66.6");
    /* size is ignored when a footprint is given */
    o.nsize = 1;
    o.size[0] = 5;
    expect_1d(ctx, R_MEDIAN, (ndf_dtype)dt, 7, y, &o, 0, 0, r1, "footprint [1,0,1,1] with size 5 (ignored)");
    tu_array_free(&fp);
  }
}

/* The percentile's rank is int(n * p / 100) in double arithmetic, p + 100
 * first for p < 0, n - 1 for exactly 100: checked for every n of a 1-D box
 * 1..12 and many p against the naive reference. */
static void test_percentile_arithmetic(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  static const double ps[] = {0, 100, -100, 50, -50, 0.1, -0.1, 99.9, -99.9, 1e-9, -1e-9, 12.5, 37.5,
                              33.333333333333336, 66.66666666666667, -66.66666666666667, -33.333333333333336,
                              99.99999999999999, -0.0, 14.285714285714286, 28.571428571428573, 57.14285714285714,
                              -42.857142857142854, 9.090909090909092, 27.27272727272727, 58.333333333333336};
  const size_t nfixed = sizeof ps / sizeof ps[0];
  double x[16];
  for (int i = 0; i < 16; i++) x[i] = (double)((i * 7) % 16);
  for (int n = 1; n <= 12; n++) {
    /* the fixed list, then 100 k / n and -100 k / n for k = 0..n */
    for (size_t k = 0; k < nfixed + 2 * (size_t)(n + 1); k++) {
      size_t j = k - nfixed;
      double p = k < nfixed ? ps[k] : j <= (size_t)n ? 100.0 * (double)j / n : -100.0 * (double)(j - n - 1) / n;
      tu_array in, out, ref;
      arr1d(&in, NDF_FLOAT64, 16, x);
      out_like(&out, &in.arr);
      arr1d(&ref, NDF_FLOAT64, 16, NULL);
      ndf_rank_options o;
      opts_size(&o, n);
      o.mode = NDF_MODE_WRAP;
      ndf_status r = ndf_percentile_filter(ctx, &in.arr, &out.arr, p, &o);
      if (r != NDF_OK) printf("percentile %.17g size %d: %s\n", p, n, ndf_errmsg(ctx));
      assert_int_equal(r, NDF_OK);
      rk_elem el = {1, {n}, NULL, {0}};
      ref_rank(R_PERCENTILE, 0, p, &in.arr, &ref.arr, &el, o.mode, 0, 0, 0);
      char msg[1024];
      int64_t bad = tu_compare(&ref.arr, &out.arr, msg, sizeof msg);
      if (bad)
        printf("percentile %.17g, size %d (rank %lld): %lld differ\n%s", p, n,
               (long long)select_rank(R_PERCENTILE, 0, p, n, n), (long long)bad, msg);
      assert_int_equal(bad, 0);
      tu_array_free(&in);
      tu_array_free(&out);
      tu_array_free(&ref);
    }
  }
}

/* NaN by hand: PROPAGATE (default) and OMIT, every op, float32 and float64. */
static void test_nan_by_hand(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  const double N = NAN;
  static const double x[10] = {4, NAN, 3, 1, 2, NAN, NAN, NAN, 7, 6};
  /* size 3, mode nearest; windows: [4,4,N] [4,N,3] [N,3,1] [3,1,2] [1,2,N]
   * [2,N,N] [N,N,N] [N,N,7] [N,7,6] [7,6,6] */
  const double p_med[10] = {N, N, N, 2, N, N, N, N, N, 6};
  const double p_r0[10] = {N, N, N, 1, N, N, N, N, N, 6};
  const double p_rm1[10] = {N, N, N, 3, N, N, N, N, N, 7};
  const double o_med[10] = {4, 4, 3, 2, 2, 2, N, 7, 7, 6};
  const double o_r0[10] = {4, 3, 1, 1, 1, 2, N, 7, 6, 6};
  const double o_r1[10] = {4, 4, 3, 2, 2, N, N, N, 7, 6};
  const double o_rm1[10] = {N, N, N, 3, N, N, N, N, N, 7}; /* -1 -> 2 of the full 3 */
  const double o_rm3[10] = {4, 3, 1, 1, 1, 2, N, 7, 6, 6}; /* -3 -> 0 */
  const double o_p100[10] = {4, 4, 3, 3, 2, 2, N, 7, 7, 7};
  const double o_p50[10] = {4, 4, 3, 2, 2, 2, N, 7, 7, 6};
  for (int dt = NDF_FLOAT32; dt <= NDF_FLOAT64; dt++) {
    for (int pol = 0; pol < 2; pol++) {
      ndf_rank_options o;
      opts_size(&o, 3);
      o.mode = NDF_MODE_NEAREST;
      if (pol) o.nan_policy = NDF_RANK_NAN_OMIT;
      const char *w = pol ? "NaN omit" : "NaN propagate";
      expect_1d(ctx, R_MEDIAN, (ndf_dtype)dt, 10, x, &o, 0, 0, pol ? o_med : p_med, w);
      expect_1d(ctx, R_RANK, (ndf_dtype)dt, 10, x, &o, 0, 0, pol ? o_r0 : p_r0, w);
      expect_1d(ctx, R_RANK, (ndf_dtype)dt, 10, x, &o, -1, 0, pol ? o_rm1 : p_rm1, w);
      expect_1d(ctx, R_PERCENTILE, (ndf_dtype)dt, 10, x, &o, 0, 100, pol ? o_p100 : p_rm1, w);
      expect_1d(ctx, R_PERCENTILE, (ndf_dtype)dt, 10, x, &o, 0, 0, pol ? o_r0 : p_r0, w);
      expect_1d(ctx, R_PERCENTILE, (ndf_dtype)dt, 10, x, &o, 0, -100, pol ? o_r0 : p_r0, w);
      expect_1d(ctx, R_PERCENTILE, (ndf_dtype)dt, 10, x, &o, 0, 50, pol ? o_p50 : p_med, w);
      if (pol) {
        expect_1d(ctx, R_RANK, (ndf_dtype)dt, 10, x, &o, 1, 0, o_r1, w);
        expect_1d(ctx, R_RANK, (ndf_dtype)dt, 10, x, &o, -3, 0, o_rm3, w);
      }
      /* cval NaN in constant mode is a NaN of the window */
      static const double y[4] = {1, 2, 3, 4};
      const double pc[4] = {N, 2, 3, N}, oc[4] = {2, 2, 3, 4};
      o.mode = NDF_MODE_CONSTANT;
      o.cval = NAN;
      expect_1d(ctx, R_MEDIAN, (ndf_dtype)dt, 4, y, &o, 0, 0, pol ? oc : pc, "constant mode, cval NaN");
      /* infinities are values; NaN beside them */
      static const double z[3] = {INFINITY, NAN, -INFINITY};
      const double pz[3] = {N, N, N}, oz[3] = {INFINITY, INFINITY, -INFINITY};
      o.mode = NDF_MODE_REFLECT;
      o.cval = 0;
      expect_1d(ctx, R_MEDIAN, (ndf_dtype)dt, 3, z, &o, 0, 0, pol ? oz : pz, "+-inf and NaN, reflect");
      /* all NaN: NaN whatever the policy */
      static const double allnan[5] = {NAN, NAN, NAN, NAN, NAN};
      const double an[5] = {N, N, N, N, N};
      expect_1d(ctx, R_MEDIAN, (ndf_dtype)dt, 5, allnan, &o, 0, 0, an, "all NaN");
      expect_1d(ctx, R_RANK, (ndf_dtype)dt, 5, allnan, &o, 0, 0, an, "all NaN");
      expect_1d(ctx, R_PERCENTILE, (ndf_dtype)dt, 5, allnan, &o, 0, 100, an, "all NaN");
    }
  }
  /* integer dtypes hold no NaN: the policy changes nothing */
  static const double iv[8] = {9, 0, 100, 7, 7, 1, 127, 3};
  for (int dt = NDF_UINT8; dt <= NDF_INT32; dt++) {
    tu_array in, a, b;
    arr1d(&in, (ndf_dtype)dt, 8, iv);
    out_like(&a, &in.arr);
    out_like(&b, &in.arr);
    for (int op = 0; op < R_NOPS; op++) {
      ndf_rank_options o;
      opts_size(&o, 4);
      o.mode = NDF_MODE_CONSTANT;
      o.cval = 5;
      assert_int_equal(call_op(ctx, op, &in.arr, &a.arr, 1, 30, &o), NDF_OK);
      o.nan_policy = NDF_RANK_NAN_OMIT;
      assert_int_equal(call_op(ctx, op, &in.arr, &b.arr, 1, 30, &o), NDF_OK);
      char msg[512];
      int64_t bad = tu_compare(&a.arr, &b.arr, msg, sizeof msg);
      if (bad) printf("%s %s: OMIT differs from PROPAGATE on integers:\n%s", op_api[op], ndf_dtype_name((ndf_dtype)dt), msg);
      assert_int_equal(bad, 0);
    }
    tu_array_free(&in);
    tu_array_free(&a);
    tu_array_free(&b);
  }
}

/* A random element for the reference tests: size box or footprint (with its
 * mask kept for ref_rank), valid random origins. */
typedef struct rand_elem {
  tu_array fp;
  int has_fp;
  uint8_t mask[4096];
  rk_elem el;
  ndf_rank_options o;
  int64_t n;
} rand_elem;

static void draw_elem(rand_elem *e, tu_rng *r, int nsp, int64_t maxlen) {
  memset(e, 0, sizeof *e);
  ndf_rank_options_init(&e->o);
  e->el.nsp = nsp;
  int64_t es[NDF_MAX_SPATIAL], count = 1;
  int same = tu_rng_chance(r, 0.3);
  for (int d = 0; d < nsp; d++) {
    es[d] = same && d ? es[0] : tu_rng_int(r, 1, maxlen);
    count *= es[d];
  }
  assert_true(count <= 4096);
  for (int d = 0; d < nsp; d++) e->el.shape[d] = es[d];
  if (tu_rng_chance(r, 0.5)) {
    e->has_fp = 1;
    const ndf_dtype fdt[] = {NDF_BOOL, NDF_UINT8, NDF_FLOAT64, NDF_INT16};
    assert_int_equal(tu_array_alloc(&e->fp, fdt[tu_rng_int(r, 0, 3)], nsp, es), 0);
    double p = 0.2 + 0.7 * tu_rng_unif(r);
    int any = 0;
    for (int64_t i = 0; i < count; i++) {
      e->mask[i] = tu_rng_chance(r, p);
      any |= e->mask[i];
    }
    if (!any) e->mask[tu_rng_int(r, 0, count - 1)] = 1;
    for (int64_t i = 0; i < count; i++) tu_set(&e->fp.arr, i, e->mask[i] ? (double)tu_rng_int(r, 1, 3) : 0);
    e->el.fp = e->mask;
    e->o.footprint = &e->fp.arr;
  } else {
    e->o.nsize = same || nsp == 1 ? 1 : nsp;
    for (int d = 0; d < e->o.nsize; d++) e->o.size[d] = es[d];
  }
  e->n = 0;
  for (int64_t i = 0; i < count; i++) e->n += e->el.fp ? e->el.fp[i] : 1;
  e->o.norigin = nsp;
  for (int d = 0; d < nsp; d++) {
    e->el.origin[d] = tu_rng_int(r, -(es[d] / 2), (es[d] - 1) / 2);
    e->o.origin[d] = e->el.origin[d];
  }
}

static void free_elem(rand_elem *e) {
  if (e->has_fp) tu_array_free(&e->fp);
}

static double draw_float_value(tu_rng *r, double nan_p, int style) {
  if (tu_rng_chance(r, nan_p)) return NAN;
  if (tu_rng_chance(r, 0.08)) return tu_rng_chance(r, 0.5) ? INFINITY : -INFINITY;
  if (style == 0) return (double)tu_rng_int(r, -3, 3) + 0.0; /* ties; +0.0 keeps -0 away */
  double v = tu_rng_normal(r) * 100.0;
  return v == 0 ? 1.0 : v;
}

static void draw_op_args(tu_rng *r, int64_t n, int *op, int64_t *rank, double *pct) {
  *op = (int)tu_rng_int(r, 0, R_NOPS - 1);
  *rank = tu_rng_int(r, -n, n - 1);
  if (tu_rng_chance(r, 0.2)) *rank = tu_rng_chance(r, 0.5) ? 0 : n - 1;
  double ps[] = {0, 100, -100, 50, -50, 12.5, 99.9, -0.1};
  *pct = tu_rng_chance(r, 0.4) ? ps[tu_rng_int(r, 0, 7)] : (tu_rng_unif(r) * 200.0 - 100.0);
}

/* NaN policies at random vs the naive reference: float32 / float64, NaN
 * densities 0..1 (all-NaN windows included), +-inf, NaN cval, every op, mode
 * and policy, batches, strided inputs and outputs. */
static void test_nan_random(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  tu_rng rng;
  tu_rng_seed(&rng, seed_of(state) + 71);
  int failed = 0;
  const double dens[] = {0, 0.03, 0.15, 0.4, 0.8, 1.0};
  for (int iter = 0; iter < 600; iter++) {
    ndf_dtype dt = tu_rng_chance(&rng, 0.5) ? NDF_FLOAT32 : NDF_FLOAT64;
    int nsp = (int)tu_rng_int(&rng, 1, 3);
    int batch = (int)tu_rng_int(&rng, 0, 1);
    int64_t shape[NDF_MAX_NDIM];
    int nd = nsp + batch;
    for (int d = 0; d < nd; d++) shape[d] = d < batch ? tu_rng_int(&rng, 1, 3) : tu_rng_int(&rng, 1, nsp == 1 ? 30 : nsp == 2 ? 10 : 6);
    rand_elem e;
    draw_elem(&e, &rng, nsp, nsp == 3 ? 3 : 5);
    double nan_p = dens[tu_rng_int(&rng, 0, 5)];
    int style = (int)tu_rng_int(&rng, 0, 1);
    tu_array in, want, out, inl;
    arr_nd(&in, dt, nd, shape, NULL);
    int64_t total = ndf_array_size(&in.arr);
    for (int64_t i = 0; i < total; i++) tu_set(&in.arr, i, draw_float_value(&rng, nan_p, style));
    e.o.mode = (ndf_mode)tu_rng_int(&rng, 0, NDF_MODE_COUNT - 1);
    e.o.cval = tu_rng_chance(&rng, 0.3) ? NAN : draw_float_value(&rng, 0, style);
    e.o.batch_dims = batch;
    e.o.nan_policy = tu_rng_chance(&rng, 0.5) ? NDF_RANK_NAN_OMIT : NDF_RANK_NAN_PROPAGATE;
    int op;
    int64_t rank;
    double pct;
    draw_op_args(&rng, e.n, &op, &rank, &pct);
    arr_nd(&want, dt, nd, shape, NULL);
    ref_rank(op, rank, pct, &in.arr, &want.arr, &e.el, e.o.mode, e.o.cval, batch, e.o.nan_policy == NDF_RANK_NAN_OMIT);
    int strided = tu_rng_chance(&rng, 0.5);
    const ndf_array *input = &in.arr;
    if (strided) {
      assert_int_equal(tu_array_relayout(&inl, &in.arr, TU_LAYOUT_PADDED | TU_LAYOUT_NEGATIVE, &rng), 0);
      input = &inl.arr;
    }
    assert_int_equal(tu_array_like(&out, &in.arr, tu_rng_chance(&rng, 0.5) ? TU_LAYOUT_PADDED : TU_LAYOUT_C, &rng), 0);
    ndf_status r = call_op(ctx, op, input, &out.arr, rank, pct, &e.o);
    char msg[1024] = "";
    int64_t bad = r == NDF_OK ? tu_compare(&want.arr, &out.arr, msg, sizeof msg) : -1;
    int64_t gap = r == NDF_OK ? tu_check_gaps(&out) : -1;
    if (bad != 0 || gap >= 0) {
      if (failed < 8) {
        char shs[64];
        printf("NaN case %d (seed %llu): %s(rank %lld, percentile %.17g) %s %s batch=%d mode=%s cval=%g policy=%s "
               "nan density %g, %s, n=%lld: %s%s\n%s",
               iter, (unsigned long long)seed_of(state), op_api[op], (long long)rank, pct, ndf_dtype_name(dt),
               tu_shape_str(&in.arr, shs, sizeof shs), batch, ndf_mode_name(e.o.mode), e.o.cval,
               e.o.nan_policy ? "omit" : "propagate", nan_p, e.has_fp ? "footprint" : "size", (long long)e.n,
               r == NDF_OK ? "differs" : ndf_errmsg(ctx), gap >= 0 ? " (wrote into the output's gaps)" : "", msg);
      }
      failed++;
    }
    if (strided) tu_array_free(&inl);
    tu_array_free(&in);
    tu_array_free(&want);
    tu_array_free(&out);
    free_elem(&e);
  }
  if (failed) printf("%d of 600 NaN cases failed\n", failed);
  assert_int_equal(failed, 0);
}

static void fill_int(tu_array *t, ndf_dtype dt, tu_rng *r) {
  double lo, hi;
  tu_int_range(dt, &lo, &hi);
  int64_t n = ndf_array_size(&t->arr);
  int style = (int)tu_rng_int(r, 0, 2);
  int64_t a = (int64_t)lo + tu_rng_int(r, 0, 5);
  for (int64_t i = 0; i < n; i++) {
    double v;
    if (style == 0) v = (double)tu_rng_int(r, (int64_t)lo, (int64_t)hi);
    else if (style == 1) v = (double)(a + tu_rng_int(r, 0, 4));
    else v = tu_rng_chance(r, 0.5) ? (tu_rng_chance(r, 0.5) ? lo : hi) : (double)tu_rng_int(r, 0, 3);
    tu_set(&t->arr, i, v);
  }
}

/* Larger windows (up to 9 per axis, 2-D up to 81 taps; 1-D up to 41) and
 * larger images than the oracle draws, every dtype, against the naive
 * reference: whatever algorithm ndforge picks for large windows or long
 * rows (histograms, sliding windows, threads) must give the definition. */
static void test_large_windows(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  tu_rng rng;
  tu_rng_seed(&rng, seed_of(state) + 83);
  int failed = 0;
  for (int iter = 0; iter < 60; iter++) {
    ndf_dtype dt = (ndf_dtype)tu_rng_int(&rng, NDF_UINT8, NDF_FLOAT64);
    int nsp = (int)tu_rng_int(&rng, 1, 2);
    int64_t shape[2];
    for (int d = 0; d < nsp; d++) shape[d] = nsp == 1 ? tu_rng_int(&rng, 1, 3000) : tu_rng_int(&rng, 1, 90);
    rand_elem e;
    draw_elem(&e, &rng, nsp, nsp == 1 ? 41 : 9);
    tu_array in, want, out;
    arr_nd(&in, dt, nsp, shape, NULL);
    if (tu_is_float(dt)) {
      int64_t total = ndf_array_size(&in.arr);
      int style = (int)tu_rng_int(&rng, 0, 1);
      for (int64_t i = 0; i < total; i++) tu_set(&in.arr, i, draw_float_value(&rng, 0, style));
    } else {
      fill_int(&in, dt, &rng);
    }
    e.o.mode = (ndf_mode)tu_rng_int(&rng, 0, NDF_MODE_COUNT - 1);
    double lo, hi;
    tu_int_range(dt, &lo, &hi);
    e.o.cval = tu_is_float(dt) ? draw_float_value(&rng, 0, 0) : (tu_rng_chance(&rng, 0.5) ? lo : hi);
    int op;
    int64_t rank;
    double pct;
    draw_op_args(&rng, e.n, &op, &rank, &pct);
    arr_nd(&want, dt, nsp, shape, NULL);
    ref_rank(op, rank, pct, &in.arr, &want.arr, &e.el, e.o.mode, e.o.cval, 0, 0);
    assert_int_equal(tu_array_like(&out, &in.arr, TU_LAYOUT_C, &rng), 0);
    ndf_status r = call_op(ctx, op, &in.arr, &out.arr, rank, pct, &e.o);
    char msg[1024] = "";
    int64_t bad = r == NDF_OK ? tu_compare(&want.arr, &out.arr, msg, sizeof msg) : -1;
    if (bad != 0) {
      if (failed < 8) {
        char shs[64];
        printf("large case %d (seed %llu): %s(rank %lld, percentile %.17g) %s %s mode=%s cval=%g %s n=%lld: %s\n%s", iter,
               (unsigned long long)seed_of(state), op_api[op], (long long)rank, pct, ndf_dtype_name(dt),
               tu_shape_str(&in.arr, shs, sizeof shs), ndf_mode_name(e.o.mode), e.o.cval,
               e.has_fp ? "footprint" : "size", (long long)e.n, r == NDF_OK ? "differs" : ndf_errmsg(ctx), msg);
      }
      failed++;
    }
    tu_array_free(&in);
    tu_array_free(&want);
    tu_array_free(&out);
    free_elem(&e);
  }
  if (failed) printf("%d of 60 large-window cases failed\n", failed);
  assert_int_equal(failed, 0);
}

/* rank 0 is scipy's minimum_filter, which is grey_erosion for a flat
 * footprint: ndf_rank_filter(0) must equal ndf_grey_erosion (same footprint,
 * origin, mode, cval), also for percentile 0 / -100. */
static void test_rank0_is_grey_erosion(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  tu_rng rng;
  tu_rng_seed(&rng, seed_of(state) + 97);
  for (int iter = 0; iter < 80; iter++) {
    ndf_dtype dt = (ndf_dtype)tu_rng_int(&rng, NDF_UINT8, NDF_FLOAT64);
    int nsp = (int)tu_rng_int(&rng, 1, 3);
    int64_t shape[3];
    for (int d = 0; d < nsp; d++) shape[d] = tu_rng_int(&rng, 1, nsp == 1 ? 40 : 9);
    rand_elem e;
    draw_elem(&e, &rng, nsp, 4);
    tu_array in, a, b;
    arr_nd(&in, dt, nsp, shape, NULL);
    if (tu_is_float(dt)) {
      for (int64_t i = 0; i < ndf_array_size(&in.arr); i++) tu_set(&in.arr, i, draw_float_value(&rng, 0, 1));
    } else {
      fill_int(&in, dt, &rng);
    }
    e.o.mode = (ndf_mode)tu_rng_int(&rng, 0, NDF_MODE_COUNT - 1);
    e.o.cval = tu_is_float(dt) ? 2.5 : 1;
    ndf_grey_options g;
    ndf_grey_options_init(&g);
    g.nsize = e.o.nsize;
    for (int d = 0; d < e.o.nsize; d++) g.size[d] = e.o.size[d];
    g.footprint = e.o.footprint;
    g.norigin = e.o.norigin;
    for (int d = 0; d < e.o.norigin; d++) g.origin[d] = e.o.origin[d];
    g.mode = e.o.mode;
    g.cval = e.o.cval;
    out_like(&a, &in.arr);
    out_like(&b, &in.arr);
    assert_int_equal(ndf_grey_erosion(ctx, &in.arr, &a.arr, &g), NDF_OK);
    for (int k = 0; k < 3; k++) {
      ndf_status r = k == 0 ? ndf_rank_filter(ctx, &in.arr, &b.arr, 0, &e.o)
                   : k == 1 ? ndf_percentile_filter(ctx, &in.arr, &b.arr, 0, &e.o)
                            : ndf_percentile_filter(ctx, &in.arr, &b.arr, -100, &e.o);
      if (r != NDF_OK) printf("rank 0 case %d: %s\n", iter, ndf_errmsg(ctx));
      assert_int_equal(r, NDF_OK);
      char msg[1024];
      int64_t bad = tu_compare(&a.arr, &b.arr, msg, sizeof msg);
      if (bad) printf("case %d (seed %llu): %s differs from ndf_grey_erosion (%s, mode %s):\n%s", iter,
                      (unsigned long long)seed_of(state), k == 0 ? "rank 0" : k == 1 ? "percentile 0" : "percentile -100",
                      ndf_dtype_name(dt), ndf_mode_name(e.o.mode), msg);
      assert_int_equal(bad, 0);
    }
    tu_array_free(&in);
    tu_array_free(&a);
    tu_array_free(&b);
    free_elem(&e);
  }
}

/* -0.0 and 0.0 compare equal: the result is a zero (either sign); a size-1
 * window is the identity, for every op and rank that it allows. */
static void test_signed_zero_and_identity(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  static const double z[6] = {-0.0, 0.0, -0.0, 0.0, 1, -1};
  for (int dt = NDF_FLOAT32; dt <= NDF_FLOAT64; dt++) {
    tu_array in, out;
    arr1d(&in, (ndf_dtype)dt, 6, z);
    out_like(&out, &in.arr);
    ndf_rank_options o;
    opts_size(&o, 3);
    o.mode = NDF_MODE_NEAREST;
    assert_int_equal(ndf_median_filter(ctx, &in.arr, &out.arr, &o), NDF_OK);
    for (int i = 0; i < 5; i++) assert_true(tu_get(&out.arr, i) == 0.0);
    tu_array_free(&in);
    tu_array_free(&out);
  }
  static const double v[7] = {3, 100, 0, 17, 127, 1, 99};
  for (int dt = NDF_UINT8; dt <= NDF_FLOAT64; dt++) {
    for (int op = 0; op < R_NOPS; op++) {
      for (int mode = 0; mode < NDF_MODE_COUNT; mode++) {
        ndf_rank_options o;
        opts_size(&o, 1);
        o.mode = (ndf_mode)mode;
        o.cval = 1000 * (dt >= NDF_FLOAT32);
        expect_1d(ctx, op, (ndf_dtype)dt, 7, v, &o, op == R_RANK ? -1 : 0, 37.0, v, "size 1 is the identity");
      }
    }
  }
}

/* Policy: cval is converted to the input dtype (truncation for integers);
 * non-finite or out-of-range values are rejected for integer dtypes. */
static void test_cval_policy(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  static const double v[] = {40, 50, 60, 70, 80, 90};
  for (int dt = NDF_UINT8; dt <= NDF_INT32; dt++) {
    double lo, hi;
    tu_int_range((ndf_dtype)dt, &lo, &hi);
    tu_array in, out, ref;
    arr1d(&in, (ndf_dtype)dt, 6, v);
    arr1d(&out, (ndf_dtype)dt, 6, v);
    arr1d(&ref, (ndf_dtype)dt, 6, v);
    const double bad[] = {NAN, INFINITY, -INFINITY, hi + 1, lo - 1, hi * 2 + 10, lo - 1e12, 1e300};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
      for (int mode = 0; mode < 2; mode++) { /* constant, and its grid-constant alias */
        for (int op = 0; op < R_NOPS; op++) {
          ndf_rank_options o;
          opts_size(&o, 3);
          assert_int_equal(ndf_mode_from_name(mode ? "grid-constant" : "constant", &o.mode), NDF_OK);
          o.cval = bad[k];
          tu_poison(out.base, out.bytes);
          ndf_status r = call_op(ctx, op, &in.arr, &out.arr, 1, 50, &o);
          const char *m = ndf_errmsg(ctx);
          if (r != NDF_EINVAL || !strstr(m, "cval") || !strstr(m, op_api[op]))
            printf("%s %s cval=%g accepted or badly reported: %s \"%s\"\n", op_api[op], ndf_dtype_name((ndf_dtype)dt),
                   bad[k], ndf_status_name(r), m);
          assert_int_equal(r, NDF_EINVAL);
          assert_non_null(strstr(m, "cval"));
          assert_non_null(strstr(m, op_api[op]));
          assert_int_equal(tu_poison_check(out.base, out.bytes), -1);
        }
      }
    }
    /* Accepted: the ends of the range, and non-integers (truncated). */
    const double good[] = {lo, hi, lo + 0.5, hi - 0.5, 45.7, -0.9, 85.2};
    for (size_t k = 0; k < sizeof good / sizeof good[0]; k++) {
      if (good[k] < lo || good[k] > hi) continue;
      for (int op = 0; op < R_NOPS; op++) {
        for (int64_t rk = 0; rk < 3; rk++) {
          ndf_rank_options o;
          opts_size(&o, 3);
          o.mode = NDF_MODE_CONSTANT;
          o.cval = good[k];
          ndf_status r = call_op(ctx, op, &in.arr, &out.arr, rk, (double)rk * 50.0, &o);
          if (r != NDF_OK)
            printf("%s %s cval=%.17g rejected: %s\n", op_api[op], ndf_dtype_name((ndf_dtype)dt), good[k], ndf_errmsg(ctx));
          assert_int_equal(r, NDF_OK);
          /* against the exact values: border = element rk of sort(cval, neighbours) */
          double c = trunc(good[k]);
          double w0[3] = {c, v[0], v[1]}, w5[3] = {v[4], v[5], c};
          qsort(w0, 3, sizeof(double), cmp_double);
          qsort(w5, 3, sizeof(double), cmp_double);
          int64_t sel = op == R_MEDIAN ? 1 : rk;
          if (tu_get(&out.arr, 0) != w0[sel] || tu_get(&out.arr, 5) != w5[sel])
            printf("%s %s cval=%.17g rank %lld: borders %g %g, want %g %g\n", op_api[op], ndf_dtype_name((ndf_dtype)dt),
                   good[k], (long long)sel, tu_get(&out.arr, 0), tu_get(&out.arr, 5), w0[sel], w5[sel]);
          assert_true(tu_get(&out.arr, 0) == w0[sel]);
          assert_true(tu_get(&out.arr, 5) == w5[sel]);
        }
      }
    }
    tu_array_free(&in);
    tu_array_free(&out);
    tu_array_free(&ref);
  }
  /* Floats: any cval, converted to the dtype (0.1 becomes 0.1f for float32). */
  static const double fv[] = {0.5, -0.25, 0.75};
  tu_array in, out;
  arr1d(&in, NDF_FLOAT32, 3, fv);
  arr1d(&out, NDF_FLOAT32, 3, fv);
  ndf_rank_options o;
  opts_size(&o, 3);
  o.mode = NDF_MODE_CONSTANT;
  o.cval = 0.1;
  assert_int_equal(ndf_median_filter(ctx, &in.arr, &out.arr, &o), NDF_OK);
  assert_true(*(float *)tu_elem_ptr(&out.arr, 0) == 0.1f); /* sort(0.1, 0.5, -0.25) */
  assert_true(*(float *)tu_elem_ptr(&out.arr, 2) == 0.1f); /* sort(-0.25, 0.75, 0.1) */
  o.cval = 1e300; /* float32: converts to +inf */
  assert_int_equal(ndf_rank_filter(ctx, &in.arr, &out.arr, -1, &o), NDF_OK);
  assert_true(isinf(tu_get(&out.arr, 0)) && tu_get(&out.arr, 0) > 0);
  o.cval = -INFINITY;
  assert_int_equal(ndf_rank_filter(ctx, &in.arr, &out.arr, 0, &o), NDF_OK);
  assert_true(isinf(tu_get(&out.arr, 0)) && tu_get(&out.arr, 0) < 0);
  assert_true(tu_get(&out.arr, 1) == -0.25);
  tu_array_free(&in);
  tu_array_free(&out);
}

/* Batch images are independent: each equals the filter of that image alone. */
static void test_batch_images_independent(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  tu_rng rng;
  tu_rng_seed(&rng, seed_of(state) + 101);
  for (int iter = 0; iter < 30; iter++) {
    ndf_dtype dt = (ndf_dtype)tu_rng_int(&rng, NDF_UINT8, NDF_FLOAT64);
    int nb = (int)tu_rng_int(&rng, 1, 2), nsp = (int)tu_rng_int(&rng, 1, 2);
    int64_t shape[4];
    for (int d = 0; d < nb + nsp; d++) shape[d] = tu_rng_int(&rng, 1, d < nb ? 3 : 7);
    rand_elem e;
    draw_elem(&e, &rng, nsp, 4);
    e.o.batch_dims = nb;
    e.o.mode = (ndf_mode)tu_rng_int(&rng, 0, NDF_MODE_COUNT - 1);
    tu_array in, out;
    arr_nd(&in, dt, nb + nsp, shape, NULL);
    if (tu_is_float(dt))
      for (int64_t i = 0; i < ndf_array_size(&in.arr); i++) tu_set(&in.arr, i, draw_float_value(&rng, 0, 0));
    else
      fill_int(&in, dt, &rng);
    out_like(&out, &in.arr);
    int op;
    int64_t rank;
    double pct;
    draw_op_args(&rng, e.n, &op, &rank, &pct);
    assert_int_equal(call_op(ctx, op, &in.arr, &out.arr, rank, pct, &e.o), NDF_OK);
    int64_t nimg = 1, nbatch = 1;
    for (int d = 0; d < nb; d++) nbatch *= shape[d];
    for (int d = nb; d < nb + nsp; d++) nimg *= shape[d];
    ndf_rank_options one = e.o;
    one.batch_dims = 0;
    size_t es = ndf_dtype_size(dt);
    for (int64_t b = 0; b < nbatch; b++) {
      ndf_array vi, vo;
      assert_int_equal(ndf_array_init(&vi, (char *)in.arr.data + b * nimg * (int64_t)es, NDF_DEVICE_CPU, dt, nsp, shape + nb), NDF_OK);
      tu_array o1;
      out_like(&o1, &vi);
      assert_int_equal(call_op(ctx, op, &vi, &o1.arr, rank, pct, &one), NDF_OK);
      assert_int_equal(ndf_array_init(&vo, (char *)out.arr.data + b * nimg * (int64_t)es, NDF_DEVICE_CPU, dt, nsp, shape + nb), NDF_OK);
      char msg[1024];
      int64_t bad = tu_compare(&o1.arr, &vo, msg, sizeof msg);
      if (bad) printf("batch case %d image %lld (%s): differs from the image alone:\n%s", iter, (long long)b, op_api[op], msg);
      assert_int_equal(bad, 0);
      tu_array_free(&o1);
    }
    tu_array_free(&in);
    tu_array_free(&out);
    free_elem(&e);
  }
}

/* Zero-stride (broadcast) inputs give the result of the materialized input. */
static void test_zero_stride_input(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  tu_rng rng;
  tu_rng_seed(&rng, seed_of(state) + 99);
  for (int trial = 0; trial < 20; trial++) {
    int64_t n = tu_rng_int(&rng, 1, 12), rows = tu_rng_int(&rng, 1, 6);
    ndf_dtype dt = (ndf_dtype)tu_rng_int(&rng, NDF_UINT8, NDF_FLOAT64);
    tu_array row, full, o1, o2;
    int64_t sh1[1] = {n}, sh2[2] = {rows, n};
    arr_nd(&row, dt, 1, sh1, NULL);
    for (int64_t i = 0; i < n; i++) tu_set(&row.arr, i, (double)tu_rng_int(&rng, 0, 9));
    arr_nd(&full, dt, 2, sh2, NULL);
    for (int64_t i = 0; i < rows * n; i++) tu_set(&full.arr, i, tu_get(&row.arr, i % n));
    ndf_array bc = row.arr;
    bc.ndim = 2;
    bc.shape[0] = rows;
    bc.shape[1] = n;
    bc.strides[0] = 0;
    bc.strides[1] = 1;
    for (int op = 0; op < R_NOPS; op++) {
      out_like(&o1, &full.arr);
      out_like(&o2, &full.arr);
      ndf_rank_options o;
      ndf_rank_options_init(&o);
      o.nsize = 2;
      o.size[0] = tu_rng_int(&rng, 1, 4);
      o.size[1] = tu_rng_int(&rng, 1, 4);
      o.mode = (ndf_mode)tu_rng_int(&rng, 0, NDF_MODE_COUNT - 1);
      o.cval = 3;
      ndf_status r1 = call_op(ctx, op, &full.arr, &o1.arr, -1, 40, &o);
      ndf_status r2 = call_op(ctx, op, &bc, &o2.arr, -1, 40, &o);
      if (r1 != NDF_OK || r2 != NDF_OK)
        printf("%s zero-stride: %s / %s: %s\n", op_api[op], ndf_status_name(r1), ndf_status_name(r2), ndf_errmsg(ctx));
      assert_int_equal(r1, NDF_OK);
      assert_int_equal(r2, NDF_OK);
      char msg[1024];
      int64_t bad = tu_compare(&o1.arr, &o2.arr, msg, sizeof msg);
      if (bad) printf("%s: broadcast input (%lldx%lld) differs from its copy:\n%s", op_api[op], (long long)rows, (long long)n, msg);
      assert_int_equal(bad, 0);
      tu_array_free(&o1);
      tu_array_free(&o2);
    }
    tu_array_free(&row);
    tu_array_free(&full);
  }
}

/* An input with an axis of length 0 (scipy returns an empty result): OK,
 * nothing written. */
static void test_empty_input(void **state) {
  ndf_ctx *ctx = ctx_of(state);
  const int64_t shapes[3][3] = {{0, 5, 4}, {3, 0, 4}, {3, 5, 0}};
  for (int k = 0; k < 3; k++) {
    for (int batch = 0; batch < 2; batch++) {
      float inbuf[4] = {1, 1, 1, 1}, outbuf[64];
      ndf_array in, out;
      assert_int_equal(ndf_array_init(&in, inbuf, NDF_DEVICE_CPU, NDF_FLOAT32, 3, shapes[k]), NDF_OK);
      assert_int_equal(ndf_array_init(&out, outbuf, NDF_DEVICE_CPU, NDF_FLOAT32, 3, shapes[k]), NDF_OK);
      for (int op = 0; op < R_NOPS; op++) {
        tu_poison(outbuf, sizeof outbuf);
        ndf_rank_options o;
        opts_size(&o, 3);
        o.batch_dims = batch;
        ndf_status r = call_op(ctx, op, &in, &out, 2, 50, &o);
        if (r != NDF_OK)
          printf("%s on a %lldx%lldx%lld input: %s\n", op_api[op], (long long)shapes[k][0], (long long)shapes[k][1],
                 (long long)shapes[k][2], ndf_errmsg(ctx));
        assert_int_equal(r, NDF_OK);
        assert_int_equal(tu_poison_check(outbuf, sizeof outbuf), -1);
      }
    }
  }
}

/* Defaults of the option initializer, as the header documents them. */
static void test_options_init(void **state) {
  (void)state;
  ndf_rank_options o;
  memset(&o, 0x5A, sizeof o);
  ndf_rank_options_init(&o);
  assert_int_equal(o.nsize, 0);
  assert_null(o.footprint);
  assert_int_equal(o.norigin, 0);
  assert_int_equal(o.mode, NDF_MODE_REFLECT);
  assert_true(o.cval == 0.0);
  assert_int_equal(o.batch_dims, 0);
  assert_int_equal(o.nan_policy, NDF_RANK_NAN_PROPAGATE);
}

/* ------------------------------------------------------------------------ */
/* Contract                                                                  */

/* A 4x5x6 uint8 input, size 3, and a poisoned output buffer large enough for
 * every output descriptor built below. */
typedef struct fixture {
  ndf_ctx *ctx;
  tu_array in;
  void *outbuf;
  size_t outbytes;
  ndf_array out;
  ndf_rank_options o;
  int64_t rank;
  double pct;
} fixture;

static const int64_t SHAPE[3] = {4, 5, 6};

static void fx_init(fixture *f, void **state) {
  memset(f, 0, sizeof *f);
  f->ctx = ctx_of(state);
  assert_int_equal(tu_array_alloc(&f->in, NDF_UINT8, 3, SHAPE), 0);
  for (int64_t i = 0; i < 120; i++) tu_set(&f->in.arr, i, (double)((i * 37) % 101));
  f->outbytes = 4096;
  f->outbuf = malloc(f->outbytes);
  assert_non_null(f->outbuf);
  tu_poison(f->outbuf, f->outbytes);
  assert_int_equal(ndf_array_init(&f->out, f->outbuf, NDF_DEVICE_CPU, NDF_UINT8, 3, SHAPE), NDF_OK);
  opts_size(&f->o, 3);
  f->rank = 5;
  f->pct = 50;
}

static void fx_free(fixture *f) {
  tu_array_free(&f->in);
  free(f->outbuf);
}

/* want < 0: any status but NDF_OK.  args: '|'-separated words, one of which
 * the message must contain (NULL: no message check). */
static void reject_one(fixture *f, int op, const ndf_array *in, ndf_array *out, const ndf_rank_options *o, int want,
                       const char *args, const char *what) {
  const char *api = op_api[op];
  tu_poison(f->outbuf, f->outbytes);
  void *insave = malloc(f->in.bytes);
  memcpy(insave, f->in.base, f->in.bytes);
  ndf_status r = call_op(f->ctx, op, in, out, f->rank, f->pct, o);
  const char *m = ndf_errmsg(f->ctx);
  if (!m) m = "(null)";
  int named = args == NULL;
  if (args) {
    char words[256];
    snprintf(words, sizeof words, "%s", args);
    char *save = NULL;
    for (char *w = strtok_r(words, "|", &save); w; w = strtok_r(NULL, "|", &save))
      if (strstr(m, w)) named = 1;
  }
  int status_ok = want < 0 ? r != NDF_OK : (int)r == want;
  int ok = status_ok && named && (args == NULL || strstr(m, api) != NULL);
  if (!ok)
    printf("%s (%s): got %s \"%s\"; want %s and a message naming %s and one of '%s'\n", what, api,
           ndf_status_name(r), m, want < 0 ? "a failure" : ndf_status_name((ndf_status)want), api, args ? args : "-");
  assert_true(status_ok);
  assert_true(named);
  if (args) assert_non_null(strstr(m, api));
  int64_t p = tu_poison_check(f->outbuf, f->outbytes);
  if (p >= 0) printf("%s (%s): output buffer written at byte %lld\n", what, api, (long long)p);
  assert_int_equal(p, -1);
  assert_memory_equal(insave, f->in.base, f->in.bytes);
  free(insave);
}

static void reject(fixture *f, unsigned ops, const ndf_array *in, ndf_array *out, int want, const char *args,
                   const char *what) {
  for (int op = 0; op < R_NOPS; op++)
    if (ops & (1u << op)) reject_one(f, op, in, out, &f->o, want, args, what);
}

static void accept_all(fixture *f, unsigned ops, const char *what) {
  for (int op = 0; op < R_NOPS; op++) {
    if (!(ops & (1u << op))) continue;
    ndf_status r = call_op(f->ctx, op, &f->in.arr, &f->out, f->rank, f->pct, &f->o);
    if (r != NDF_OK) printf("%s (%s): rejected: %s\n", what, op_api[op], ndf_errmsg(f->ctx));
    assert_int_equal(r, NDF_OK);
    assert_string_equal(ndf_errmsg(f->ctx), "");
  }
}

static void test_contract_null_arguments(void **state) {
  fixture f;
  fx_init(&f, state);
  accept_all(&f, OPS_ALL, "the fixture");
  reject(&f, OPS_ALL, NULL, &f.out, NDF_EINVAL, "input", "NULL input");
  reject(&f, OPS_ALL, &f.in.arr, NULL, NDF_EINVAL, "output", "NULL output");
  for (int op = 0; op < R_NOPS; op++)
    reject_one(&f, op, &f.in.arr, &f.out, NULL, NDF_EINVAL, "opt|options", "NULL options");
  /* NULL context: the message is the thread-local one. */
  for (int op = 0; op < R_NOPS; op++) {
    tu_poison(f.outbuf, f.outbytes);
    ndf_status r = call_op(NULL, op, &f.in.arr, &f.out, f.rank, f.pct, &f.o);
    const char *m = ndf_last_error();
    if (r != NDF_EINVAL || !m || !strstr(m, "ctx") || !strstr(m, op_api[op]))
      printf("NULL ctx (%s): %s \"%s\"\n", op_api[op], ndf_status_name(r), m ? m : "(null)");
    assert_int_equal(r, NDF_EINVAL);
    assert_non_null(m);
    assert_non_null(strstr(m, "ctx"));
    assert_non_null(strstr(m, op_api[op]));
    assert_int_equal(tu_poison_check(f.outbuf, f.outbytes), -1);
  }
  ndf_array in2 = f.in.arr;
  in2.data = NULL;
  reject(&f, OPS_ALL, &in2, &f.out, NDF_EINVAL, "input", "input data NULL");
  ndf_array out2 = f.out;
  out2.data = NULL;
  reject(&f, OPS_ALL, &f.in.arr, &out2, NDF_EINVAL, "output", "output data NULL");
  fx_free(&f);
}

static void test_contract_size_and_footprint(void **state) {
  fixture f;
  fx_init(&f, state);
  /* neither size nor footprint (scipy: 'no footprint or filter size provided') */
  ndf_rank_options_init(&f.o);
  reject(&f, OPS_ALL, &f.in.arr, &f.out, NDF_EINVAL, "size|footprint", "no size and no footprint");
  const int badn[] = {2, 4, -1, NDF_MAX_SPATIAL + 1};
  for (size_t k = 0; k < sizeof badn / sizeof badn[0]; k++) {
    opts_size(&f.o, 3);
    f.o.nsize = badn[k];
    for (int d = 0; d < NDF_MAX_SPATIAL; d++) f.o.size[d] = 3;
    char what[64];
    snprintf(what, sizeof what, "nsize %d for 3 spatial axes", badn[k]);
    reject(&f, OPS_ALL, &f.in.arr, &f.out, NDF_EINVAL, "size", what);
  }
  const int64_t bads[] = {0, -1, -3};
  for (size_t k = 0; k < sizeof bads / sizeof bads[0]; k++) {
    opts_size(&f.o, bads[k]);
    char what[64];
    snprintf(what, sizeof what, "size %lld", (long long)bads[k]);
    reject(&f, OPS_ALL, &f.in.arr, &f.out, NDF_EINVAL, "size", what);
    f.o.nsize = 3;
    f.o.size[0] = 3;
    f.o.size[1] = bads[k];
    f.o.size[2] = 3;
    snprintf(what, sizeof what, "size (3, %lld, 3)", (long long)bads[k]);
    reject(&f, OPS_ALL, &f.in.arr, &f.out, NDF_EINVAL, "size", what);
  }
  opts_size(&f.o, 3);
  tu_array fp2, fp4, fp0, fpz, fpok;
  const int64_t s33[2] = {3, 3}, s4[4] = {3, 3, 3, 3}, s0[3] = {3, 0, 3}, s3[3] = {3, 3, 3};
  arr_nd(&fp2, NDF_BOOL, 2, s33, NULL);
  tu_set(&fp2.arr, 4, 1);
  arr_nd(&fp4, NDF_BOOL, 4, s4, NULL);
  tu_set(&fp4.arr, 40, 1);
  assert_int_equal(tu_array_alloc(&fp0, NDF_BOOL, 3, s0), 0);
  arr_nd(&fpz, NDF_FLOAT32, 3, s3, NULL); /* all zero */
  arr_nd(&fpok, NDF_BOOL, 3, s3, NULL);
  for (int i = 0; i < 27; i += 2) tu_set(&fpok.arr, i, 1); /* 14 taps */
  f.o.footprint = &fp2.arr;
  reject(&f, OPS_ALL, &f.in.arr, &f.out, NDF_EINVAL, "footprint", "2-D footprint, 3-D input");
  f.o.footprint = &fp4.arr;
  reject(&f, OPS_ALL, &f.in.arr, &f.out, NDF_EINVAL, "footprint", "4-D footprint, 3-D input");
  f.o.footprint = &fp0.arr;
  reject(&f, OPS_ALL, &f.in.arr, &f.out, NDF_EINVAL, "footprint", "footprint with an axis of length 0");
  f.o.footprint = &fpz.arr;
  reject(&f, OPS_ALL, &f.in.arr, &f.out, NDF_EINVAL, "footprint|rank", "all-zero footprint (no taps)");
  ndf_array nd = fpok.arr;
  nd.data = NULL;
  f.o.footprint = &nd;
  reject(&f, OPS_ALL, &f.in.arr, &f.out, NDF_EINVAL, "footprint", "footprint data NULL");
  ndf_array dev = fpok.arr;
  dev.device = NDF_DEVICE_CUDA;
  f.o.footprint = &dev;
  reject(&f, OPS_ALL, &f.in.arr, &f.out, -1, "footprint", "CUDA footprint");
  ndf_array bd = fpok.arr;
  bd.dtype = (ndf_dtype)42;
  f.o.footprint = &bd;
  reject(&f, OPS_ALL, &f.in.arr, &f.out, NDF_EINVAL, "footprint", "footprint dtype 42");
  /* the 14-tap footprint works (rank 5 < 14; the size 3 beside it is ignored) */
  f.o.footprint = &fpok.arr;
  accept_all(&f, OPS_ALL, "3x3x3 footprint of 14 taps");
  /* a 2-D footprint is right after one batch axis, the 3-D one is not */
  f.o.batch_dims = 1;
  f.o.footprint = &fp2.arr;
  f.rank = 0;
  accept_all(&f, OPS_ALL, "2-D footprint after one batch axis");
  f.o.footprint = &fpok.arr;
  reject(&f, OPS_ALL, &f.in.arr, &f.out, NDF_EINVAL, "footprint", "3-D footprint after one batch axis");
  tu_array_free(&fp2);
  tu_array_free(&fp4);
  tu_array_free(&fp0);
  tu_array_free(&fpz);
  tu_array_free(&fpok);
  fx_free(&f);
}

static void test_contract_rank_and_percentile(void **state) {
  fixture f;
  fx_init(&f, state);
  /* size 3 on 3 axes: n = 27, rank in [-27, 27) */
  const int64_t badr[] = {27, -28, 28, 1000, INT64_MAX, INT64_MIN, INT64_MIN + 1, (int64_t)1 << 40};
  for (size_t k = 0; k < sizeof badr / sizeof badr[0]; k++) {
    f.rank = badr[k];
    char what[64];
    snprintf(what, sizeof what, "rank %lld of 27 taps", (long long)badr[k]);
    reject(&f, 1u << R_RANK, &f.in.arr, &f.out, NDF_EINVAL, "rank", what);
  }
  const int64_t goodr[] = {0, 26, -1, -27, 13};
  for (size_t k = 0; k < sizeof goodr / sizeof goodr[0]; k++) {
    f.rank = goodr[k];
    accept_all(&f, 1u << R_RANK, "a rank in [-27, 27)");
  }
  /* size (1, 1, 2): n = 2 */
  f.o.nsize = 3;
  f.o.size[0] = 1;
  f.o.size[1] = 1;
  f.o.size[2] = 2;
  f.rank = 2;
  reject(&f, 1u << R_RANK, &f.in.arr, &f.out, NDF_EINVAL, "rank", "rank 2 of 2 taps");
  f.rank = -3;
  reject(&f, 1u << R_RANK, &f.in.arr, &f.out, NDF_EINVAL, "rank", "rank -3 of 2 taps");
  f.rank = -2;
  accept_all(&f, OPS_ALL, "rank -2 of 2 taps");
  opts_size(&f.o, 3);
  f.rank = 5;
  const double badp[] = {100.5, -100.5, 100.0000001, -100.0000001, 1e300, -1e300, NAN, INFINITY, -INFINITY, 200};
  for (size_t k = 0; k < sizeof badp / sizeof badp[0]; k++) {
    f.pct = badp[k];
    char what[64];
    snprintf(what, sizeof what, "percentile %g", badp[k]);
    reject(&f, 1u << R_PERCENTILE, &f.in.arr, &f.out, NDF_EINVAL, "percentile", what);
  }
  const double goodp[] = {0, 100, -100, -0.0, 50, -50, 1e-300, 99.99999999999999};
  for (size_t k = 0; k < sizeof goodp / sizeof goodp[0]; k++) {
    f.pct = goodp[k];
    accept_all(&f, 1u << R_PERCENTILE, "a percentile in [-100, 100]");
  }
  fx_free(&f);
}

static void test_contract_origin(void **state) {
  fixture f;
  fx_init(&f, state);
  /* size 3: origin in [-1, 1] */
  f.o.norigin = 1;
  f.o.origin[0] = 2;
  reject(&f, OPS_ALL, &f.in.arr, &f.out, NDF_EINVAL, "origin", "origin 2 for size 3");
  f.o.origin[0] = -2;
  reject(&f, OPS_ALL, &f.in.arr, &f.out, NDF_EINVAL, "origin", "origin -2 for size 3");
  f.o.norigin = 3;
  f.o.origin[0] = 0;
  f.o.origin[1] = 0;
  f.o.origin[2] = -2;
  reject(&f, OPS_ALL, &f.in.arr, &f.out, NDF_EINVAL, "origin", "origin[2] = -2 for size 3");
  /* even size 4: origin in [-2, 1] */
  opts_size(&f.o, 4);
  f.o.norigin = 1;
  const int64_t ok4[] = {-2, -1, 0, 1}, bad4[] = {2, -3, 100, -100};
  for (int k = 0; k < 4; k++) {
    f.o.origin[0] = ok4[k];
    accept_all(&f, OPS_ALL, "origin in [-2, 1] for size 4");
    f.o.origin[0] = bad4[k];
    char what[64];
    snprintf(what, sizeof what, "origin %lld for size 4", (long long)bad4[k]);
    reject(&f, OPS_ALL, &f.in.arr, &f.out, NDF_EINVAL, "origin", what);
  }
  /* a size-1 axis only takes origin 0 (scipy's rank filters check every
   * axis: 'invalid origin'), box or footprint */
  opts_size(&f.o, 3);
  f.o.nsize = 3;
  f.o.size[0] = 1;
  f.o.size[1] = 3;
  f.o.size[2] = 3;
  f.o.norigin = 3;
  f.o.origin[0] = 1;
  f.o.origin[1] = 0;
  f.o.origin[2] = 0;
  reject(&f, OPS_ALL, &f.in.arr, &f.out, NDF_EINVAL, "origin", "origin 1 on a size-1 axis");
  f.o.origin[0] = -1;
  reject(&f, OPS_ALL, &f.in.arr, &f.out, NDF_EINVAL, "origin", "origin -1 on a size-1 axis");
  tu_array fp;
  const int64_t s133[3] = {1, 3, 3};
  arr_nd(&fp, NDF_UINT8, 3, s133, NULL);
  tu_set(&fp.arr, 0, 1);
  tu_set(&fp.arr, 4, 1);
  tu_set(&fp.arr, 8, 1);
  f.o.footprint = &fp.arr;
  f.rank = 1;
  reject(&f, OPS_ALL, &f.in.arr, &f.out, NDF_EINVAL, "origin", "origin -1 on a size-1 footprint axis");
  f.o.origin[0] = 0;
  accept_all(&f, OPS_ALL, "origin 0 on a size-1 footprint axis");
  f.o.footprint = NULL;
  tu_array_free(&fp);
  /* a count of origins that is neither 1 nor the spatial rank */
  const int badn[] = {2, 4, -1, NDF_MAX_SPATIAL + 1};
  for (size_t k = 0; k < sizeof badn / sizeof badn[0]; k++) {
    opts_size(&f.o, 3);
    f.o.norigin = badn[k];
    char what[64];
    snprintf(what, sizeof what, "norigin %d for 3 spatial axes", badn[k]);
    reject(&f, OPS_ALL, &f.in.arr, &f.out, NDF_EINVAL, "origin", what);
  }
  fx_free(&f);
}

static void test_contract_mode_policy_batch(void **state) {
  fixture f;
  fx_init(&f, state);
  const int badm[] = {NDF_MODE_COUNT, -1, 99};
  for (size_t k = 0; k < sizeof badm / sizeof badm[0]; k++) {
    f.o.mode = (ndf_mode)badm[k];
    char what[64];
    snprintf(what, sizeof what, "mode %d", badm[k]);
    reject(&f, OPS_ALL, &f.in.arr, &f.out, NDF_EINVAL, "mode", what);
  }
  opts_size(&f.o, 3);
  const int badp[] = {2, -1, 99};
  for (size_t k = 0; k < sizeof badp / sizeof badp[0]; k++) {
    f.o.nan_policy = (ndf_rank_nan_policy)badp[k];
    char what[64];
    snprintf(what, sizeof what, "nan_policy %d", badp[k]);
    reject(&f, OPS_ALL, &f.in.arr, &f.out, NDF_EINVAL, "nan_policy", what);
  }
  opts_size(&f.o, 3);
  const int badb[] = {-1, 3, 4, 100};
  for (size_t k = 0; k < sizeof badb / sizeof badb[0]; k++) {
    f.o.batch_dims = badb[k];
    char what[64];
    snprintf(what, sizeof what, "batch_dims %d of a 3-D input", badb[k]);
    reject(&f, OPS_ALL, &f.in.arr, &f.out, NDF_EINVAL, "batch_dims", what);
  }
  f.o.batch_dims = 2;
  f.rank = 1;
  accept_all(&f, OPS_ALL, "batch_dims 2 of 3");
  fx_free(&f);
}

static void test_contract_output(void **state) {
  fixture f;
  fx_init(&f, state);
  const ndf_dtype bad[] = {NDF_BOOL, NDF_INT8, NDF_INT16, NDF_UINT16, NDF_INT32, NDF_FLOAT32, NDF_FLOAT64, (ndf_dtype)42};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    ndf_array out = f.out;
    out.dtype = bad[k];
    char what[64];
    snprintf(what, sizeof what, "output dtype %d for a uint8 input", (int)bad[k]);
    reject(&f, OPS_ALL, &f.in.arr, &out, NDF_EINVAL, "output|dtype", what);
  }
  ndf_array out = f.out;
  out.shape[1] = 4;
  out.strides[0] = 24;
  reject(&f, OPS_ALL, &f.in.arr, &out, NDF_EINVAL, "output|shape", "shape mismatch");
  out = f.out;
  out.ndim = 2;
  out.shape[0] = 20;
  out.shape[1] = 6;
  out.strides[0] = 6;
  out.strides[1] = 1;
  reject(&f, OPS_ALL, &f.in.arr, &out, NDF_EINVAL, "output|shape|ndim|rank", "ndim mismatch");
  /* the output over the input itself */
  ndf_array same = f.in.arr;
  for (int op = 0; op < R_NOPS; op++) {
    void *save = malloc(f.in.bytes);
    memcpy(save, f.in.base, f.in.bytes);
    ndf_status r = call_op(f.ctx, op, &f.in.arr, &same, f.rank, f.pct, &f.o);
    const char *m = ndf_errmsg(f.ctx);
    if (r != NDF_EINVAL || !(strstr(m, "output") || strstr(m, "overlap")) || !strstr(m, op_api[op]))
      printf("in-place call (%s): %s \"%s\"\n", op_api[op], ndf_status_name(r), m);
    assert_int_equal(r, NDF_EINVAL);
    assert_true(strstr(m, "output") || strstr(m, "overlap"));
    assert_non_null(strstr(m, op_api[op]));
    assert_memory_equal(save, f.in.base, f.in.bytes);
    free(save);
  }
  /* an output that overlaps itself (zero stride, or strides that interleave) */
  out = f.out;
  out.strides[0] = 0;
  reject(&f, OPS_ALL, &f.in.arr, &out, NDF_EINVAL, "output|stride|overlap", "output stride 0");
  out = f.out;
  out.strides[0] = 7;
  reject(&f, OPS_ALL, &f.in.arr, &out, NDF_EINVAL, "output|stride|overlap", "self-overlapping output strides");
  /* partial overlap: an output that starts in the middle of the input */
  {
    tu_array both;
    int64_t sh1[1] = {240};
    assert_int_equal(tu_array_alloc(&both, NDF_UINT8, 1, sh1), 0);
    ndf_array a, b;
    assert_int_equal(ndf_array_init(&a, both.base, NDF_DEVICE_CPU, NDF_UINT8, 3, SHAPE), NDF_OK);
    assert_int_equal(ndf_array_init(&b, (uint8_t *)both.base + 60, NDF_DEVICE_CPU, NDF_UINT8, 3, SHAPE), NDF_OK);
    for (int op = 0; op < R_NOPS; op++) {
      for (int i = 0; i < 240; i++) ((uint8_t *)both.base)[i] = (uint8_t)(i * 7);
      ndf_status r = call_op(f.ctx, op, &a, &b, f.rank, f.pct, &f.o);
      const char *m = ndf_errmsg(f.ctx);
      if (r != NDF_EINVAL || !(strstr(m, "output") || strstr(m, "overlap")))
        printf("partial overlap of output and input (%s): %s \"%s\"\n", op_api[op], ndf_status_name(r), m);
      assert_int_equal(r, NDF_EINVAL);
      assert_true(strstr(m, "output") || strstr(m, "overlap"));
      for (int i = 0; i < 240; i++) assert_int_equal(((uint8_t *)both.base)[i], (uint8_t)(i * 7));
    }
    tu_array_free(&both);
  }
  /* bad input dtype */
  ndf_array in = f.in.arr;
  in.dtype = (ndf_dtype)42;
  out = f.out;
  out.dtype = (ndf_dtype)42;
  reject(&f, OPS_ALL, &in, &out, NDF_EINVAL, "input|dtype", "input dtype 42");
  fx_free(&f);
}

/* Negative output strides (a reversed NumPy view) are valid: the result lands
 * reversed, exactly where the view says, and nothing else is written. */
static void test_negative_output_stride(void **state) {
  fixture f;
  fx_init(&f, state);
  for (int op = 0; op < R_NOPS; op++) {
    uint8_t ref[120];
    ndf_array r;
    assert_int_equal(ndf_array_init(&r, ref, NDF_DEVICE_CPU, NDF_UINT8, 3, SHAPE), NDF_OK);
    assert_int_equal(call_op(f.ctx, op, &f.in.arr, &r, f.rank, f.pct, &f.o), NDF_OK);
    ndf_array out = f.out;
    out.strides[2] = -1;
    out.data = (uint8_t *)f.outbuf + 5;
    tu_poison(f.outbuf, f.outbytes);
    ndf_status st = call_op(f.ctx, op, &f.in.arr, &out, f.rank, f.pct, &f.o);
    if (st != NDF_OK) printf("%s with a negative output stride: %s\n", op_api[op], ndf_errmsg(f.ctx));
    assert_int_equal(st, NDF_OK);
    const uint8_t *o = f.outbuf;
    int bad = 0;
    for (int z = 0; z < 4; z++)
      for (int y = 0; y < 5; y++)
        for (int x = 0; x < 6; x++) bad += o[z * 30 + y * 6 + (5 - x)] != ref[z * 30 + y * 6 + x];
    if (bad) printf("%s: %d elements misplaced with a negative output stride\n", op_api[op], bad);
    assert_int_equal(bad, 0);
    uint8_t *pat = malloc(f.outbytes);
    tu_poison(pat, f.outbytes);
    int past = memcmp(o + 120, pat + 120, f.outbytes - 120) != 0;
    free(pat);
    if (past) printf("%s: wrote past the reversed view\n", op_api[op]);
    assert_false(past);
  }
  fx_free(&f);
}

/* CUDA arrays: not supported by the rank filters in this version (or no GPU
 * here): any failure, output untouched. */
static void test_contract_cuda_arrays(void **state) {
  fixture f;
  fx_init(&f, state);
  ndf_array in = f.in.arr, out = f.out;
  in.device = NDF_DEVICE_CUDA;
  out.device = NDF_DEVICE_CUDA;
  reject(&f, OPS_ALL, &in, &out, -1, NULL, "CUDA input and output");
  reject(&f, OPS_ALL, &in, &f.out, -1, NULL, "CUDA input, host output");
  reject(&f, OPS_ALL, &f.in.arr, &out, -1, NULL, "host input, CUDA output");
  fx_free(&f);
}

/* ------------------------------------------------------------------------ */
/* Selection networks                                                        */

/* runtime/ops/rank/rank.c keeps generated selection networks (for the GPU kernels to
 * come) that the tunable rank.cpu_network=on runs on the CPU instead of quickselect: the
 * same scipy cases, NaN policies and large windows must hold through them.
 * (Without that setting these tests repeat the default path.) */
static int network_setup(void **state) {
  return ndf_ctx_set_tunable(((rank_state *)*state)->ctx, "rank.cpu_network", "on") == NDF_OK ? 0 : -1;
}
static int network_teardown(void **state) {
  return ndf_ctx_set_tunable(((rank_state *)*state)->ctx, "rank.cpu_network", NULL) == NDF_OK ? 0 : -1;
}
static void test_networks_scipy_cases(void **state) { run_all(state, 0); }
static void test_networks_scipy_cases_strided_both(void **state) { run_all(state, 4); }
static void test_networks_nan_random(void **state) { test_nan_random(state); }
static void test_networks_nan_by_hand(void **state) { test_nan_by_hand(state); }
static void test_networks_large_windows(void **state) { test_large_windows(state); }

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_scipy_cases),
      cmocka_unit_test(test_scipy_cases_strided_input),
      cmocka_unit_test(test_scipy_cases_fortran),
      cmocka_unit_test(test_scipy_cases_strided_output),
      cmocka_unit_test(test_scipy_cases_strided_both),
      cmocka_unit_test(test_known_values),
      cmocka_unit_test(test_1d_footprint_with_holes),
      cmocka_unit_test(test_percentile_arithmetic),
      cmocka_unit_test(test_nan_by_hand),
      cmocka_unit_test(test_nan_random),
      cmocka_unit_test(test_large_windows),
      cmocka_unit_test(test_rank0_is_grey_erosion),
      cmocka_unit_test(test_signed_zero_and_identity),
      cmocka_unit_test(test_cval_policy),
      cmocka_unit_test(test_batch_images_independent),
      cmocka_unit_test(test_zero_stride_input),
      cmocka_unit_test(test_empty_input),
      cmocka_unit_test(test_options_init),
      cmocka_unit_test(test_contract_null_arguments),
      cmocka_unit_test(test_contract_size_and_footprint),
      cmocka_unit_test(test_contract_rank_and_percentile),
      cmocka_unit_test(test_contract_origin),
      cmocka_unit_test(test_contract_mode_policy_batch),
      cmocka_unit_test(test_contract_output),
      cmocka_unit_test(test_negative_output_stride),
      cmocka_unit_test(test_contract_cuda_arrays),
      cmocka_unit_test_setup_teardown(test_networks_scipy_cases, network_setup, network_teardown),
      cmocka_unit_test_setup_teardown(test_networks_scipy_cases_strided_both, network_setup, network_teardown),
      cmocka_unit_test_setup_teardown(test_networks_nan_by_hand, network_setup, network_teardown),
      cmocka_unit_test_setup_teardown(test_networks_nan_random, network_setup, network_teardown),
      cmocka_unit_test_setup_teardown(test_networks_large_windows, network_setup, network_teardown),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
