/*
 * ndforge.c -- the `ndforge` command: run a scipy.ndimage op on an image
 * file, make binary structuring elements, show the library and its devices,
 * manage the kernel cache, and a demo with timings.  This file uses only
 * the public API of ndforge and the file readers of tools/ndfio.h.
 *
 * Errors are one line on stderr starting with "ndforge: ", exit status 2
 * for a bad command line and 1 for a failure while running; no output file
 * is written (or left behind) on any error.
 */
#define _XOPEN_SOURCE 700 /* mkdtemp, nftw, clock_gettime */
#include "cli.h"
#include "ndfio.h"
#include "ndforge.h"
#include "ops.generated.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { EXIT_USAGE = 2, EXIT_RUN = 1 };

#define ERRLEN 2048

/* Prints "ndforge: <message>" as one line: newlines in library messages
 * (compiler logs) become spaces. */
void errorf(const char *fmt, ...) {
  char buf[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  size_t n = strlen(buf);
  for (size_t i = 0; i < n; i++)
    if (buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t') buf[i] = ' ';
  while (n > 0 && buf[n - 1] == ' ') buf[--n] = '\0';
  fprintf(stderr, "ndforge: %s\n", buf);
}

/* ------------------------------------------------------------------------ */
/* Command-line options                                                      */

/* The options, one bit each (a set of them: optset). */
typedef uint64_t optset;
#define O_SIZE ((optset)1 << 0)
#define O_FOOTPRINT ((optset)1 << 1)
#define O_STRUCTURE ((optset)1 << 2)
#define O_ORIGIN ((optset)1 << 3)
#define O_MODE ((optset)1 << 4)
#define O_CVAL ((optset)1 << 5)
#define O_BATCH_DIMS ((optset)1 << 6)
#define O_DEVICE ((optset)1 << 7)
#define O_ARCH ((optset)1 << 8)
#define O_DTYPE ((optset)1 << 9)
#define O_NDIM ((optset)1 << 10)
#define O_OUT ((optset)1 << 11)
#define O_ITERATIONS ((optset)1 << 12)
#define O_MASK ((optset)1 << 13)
#define O_BORDER_VALUE ((optset)1 << 14)
#define O_BRUTE_FORCE ((optset)1 << 15)
#define O_STRUCTURE1 ((optset)1 << 16)
#define O_STRUCTURE2 ((optset)1 << 17)
#define O_ORIGIN1 ((optset)1 << 18)
#define O_ORIGIN2 ((optset)1 << 19)
#define O_OUTPUT_DTYPE ((optset)1 << 20)
#define O_RANK ((optset)1 << 21)
#define O_PERCENTILE ((optset)1 << 22)
#define O_NAN_POLICY ((optset)1 << 23)
#define O_ALGORITHM ((optset)1 << 24) /* grey and rank ops, each with its own names */
#define O_SAMPLING ((optset)1 << 25)
#define O_METRIC ((optset)1 << 26)
#define O_INDICES ((optset)1 << 27)
#define O_TUNE ((optset)1 << 28) /* --tune NAME=VALUE, repeatable: a tunable (ndforge tunables) */
#define O_CONSTRUCTION ((optset)1 << 29) /* cache warm of the Euler characteristic transforms */
#define O_WEIGHTED ((optset)1 << 30)
#define O_METHOD ((optset)1 << 31) /* reconstruction */
#define O_OFFSET ((optset)1 << 32)
#define O_SIGMA ((optset)1 << 33) /* linear filters */
#define O_ORDER ((optset)1 << 34)
#define O_TRUNCATE ((optset)1 << 35)
#define O_RADIUS ((optset)1 << 36)
#define O_AXES ((optset)1 << 37)
#define O_AXIS ((optset)1 << 38)
#define O_WEIGHTS ((optset)1 << 39) /* correlate, convolve: the kernel; histogram: the weights */
#define O_BINS ((optset)1 << 40)      /* intensity ops */
#define O_EDGES ((optset)1 << 41)
#define O_RANGE ((optset)1 << 42)
#define O_DENSITY ((optset)1 << 43)
#define O_EDGES_OUT ((optset)1 << 44)
#define O_Q ((optset)1 << 45)
#define O_LO ((optset)1 << 46)
#define O_HI ((optset)1 << 47)
#define O_CENTRE ((optset)1 << 48)
#define O_WIDTH ((optset)1 << 49)
#define O_PRESET ((optset)1 << 50)
#define O_OUT_MIN ((optset)1 << 51)
#define O_OUT_MAX ((optset)1 << 52)
#define O_NBINS ((optset)1 << 53)
#define O_F ((optset)1 << 54) /* skull_strip: BET's one-letter options -f, -g, -r, -c */
#define O_G ((optset)1 << 55)
#define O_R ((optset)1 << 56)
#define O_C ((optset)1 << 57)
#define O_BATCH_AXIS ((optset)1 << 58) /* run: the axis of independent images (time points), moved first */
#define O_CPU_THREADS ((optset)1 << 59) /* every command's contexts: ndf_ctx_options.cpu_threads */
/* The options each op takes (scipy's parameters) come from the op registry
 * (gen/ops.lua): ops.generated.h names them by these flags, O_ + the option's
 * name in capitals. */

typedef enum { DEV_AUTO, DEV_CPU, DEV_CUDA } dev_choice;

/* The options that name a file (an element or a mask), loaded before an op runs. */
enum { F_FOOTPRINT, F_STRUCTURE, F_MASK, F_STRUCTURE1, F_STRUCTURE2, F_WEIGHTS, NFILES };

typedef struct args {
  optset given; /* O_* flags seen */
  int nsize;
  int64_t size[NDF_MAX_SPATIAL];
  const char *file[NFILES]; /* paths, NULL when not given */
  int norigin, norigin1, norigin2;
  int64_t origin[NDF_MAX_SPATIAL], origin1[NDF_MAX_SPATIAL], origin2[NDF_MAX_SPATIAL];
  ndf_mode mode;
  double cval;
  int batch_dims;
  int batch_axis; /* --batch-axis K (negative from the end); normalized once the input is read */
  int iterations, border_value, brute_force;
  int64_t rank;      /* --rank of rank_filter */
  double percentile; /* --percentile of percentile_filter */
  ndf_rank_nan_policy nan_policy;
  int nsampling;                       /* --sampling of the distance transforms */
  double sampling[NDF_MAX_SPATIAL];
  ndf_metric metric;                   /* --metric of cdt / bf */
  const char *indices;                 /* --indices FILE */
  ndf_ecc_construction construction;   /* --construction V|T */
  int weighted;                        /* --weighted */
  ndf_reconstruct_method method;       /* --method of reconstruction */
  int noffset;                         /* --offset of reconstruction */
  int64_t offset[NDF_MAX_SPATIAL];
  /* --algorithm: the name, and its meaning for each family (ok: a name of it) */
  const char *algorithm_name;
  ndf_grey_algorithm algorithm;
  int grey_algo_ok;
  ndf_rank_algorithm rank_algo;
  int rank_algo_ok;
  dev_choice device;
  const char *arch;
  ndf_dtype dtype;
  ndf_dtype output_dtype; /* --output-dtype of label */
  int ndim;
  const char *out;
  char tune[2048]; /* the --tune assignments, comma-separated (ndf_ctx_set_tunables) */
  /* linear filters: --sigma, --order, --radius, --axes / --axis (one list), --truncate */
  int nsigma, norder, nradius, naxes;
  double sigma[NDF_MAX_SPATIAL];
  int64_t order[NDF_MAX_SPATIAL], radius[NDF_MAX_SPATIAL], axes[NDF_MAX_SPATIAL];
  double truncate;
  /* intensity ops: --bins / --edges / --range / --density / --edges-out of histogram, --q, --lo / --hi,
   * --preset (its centre and width) / --centre / --width, --out-min / --out-max, --nbins */
  long bins, nbins;
  int nedges, nq, density;
  double edges[4096], q[256], range[2], lo, hi, centre, width, preset_centre, preset_width, out_min, out_max;
  const char *edges_out;
  /* skull_strip: -f, -g, -r, -c (BET's) */
  double bet_f, bet_g, bet_r, bet_c[3];
  int nbet_c;
  int npos;
  const char *pos[16];
} args;

/* Parses "3" or "3,3,-1" into out; each value in [lo, hi]. */
static int parse_int_list(const char *opt, const char *s, int64_t lo, int64_t hi, int64_t *out,
                          int *n) {
  *n = 0;
  const char *p = s;
  for (;;) {
    char *end;
    if (*p != '-' && *p != '+' && (*p < '0' || *p > '9')) goto bad;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    if (end == p || (*end != ',' && *end != '\0')) goto bad;
    if (errno == ERANGE || v < lo || v > hi) {
      errorf("bad value '%s' for --%s (each value must be in [%lld, %lld])", s, opt,
             (long long)lo, (long long)hi);
      return -1;
    }
    if (*n == NDF_MAX_SPATIAL) {
      errorf("bad value '%s' for --%s (at most %d values)", s, opt, NDF_MAX_SPATIAL);
      return -1;
    }
    out[(*n)++] = v;
    if (*end == '\0') return 0;
    p = end + 1;
  }
bad:
  errorf("bad value '%s' for --%s (expected an integer or a comma-separated list such as 3,3,3)",
         s, opt);
  return -1;
}

/* Parses an integer in [lo, hi]; what names it in the message ("--ndim", "RANK"). */
static int parse_int_arg(const char *what, const char *s, int lo, int hi, int *out) {
  int numeric = *s == '-' || *s == '+' || (*s >= '0' && *s <= '9');
  char *end = NULL;
  errno = 0;
  long v = numeric ? strtol(s, &end, 10) : 0;
  if (!numeric || end == s || *end != '\0' || errno == ERANGE || v < lo || v > hi) {
    errorf("bad value '%s' for %s (expected an integer in [%d, %d])", s, what, lo, hi);
    return -1;
  }
  *out = (int)v;
  return 0;
}

static int parse_int(const char *opt, const char *s, int lo, int hi, int *out) {
  char what[64];
  snprintf(what, sizeof what, "--%s", opt);
  return parse_int_arg(what, s, lo, hi, out);
}

static int opt_size(args *a, const char *v) {
  return parse_int_list("size", v, 1, INT32_MAX, a->size, &a->nsize);
}
static int opt_origin(args *a, const char *v) {
  return parse_int_list("origin", v, -INT32_MAX, INT32_MAX, a->origin, &a->norigin);
}
static int opt_origin1(args *a, const char *v) {
  return parse_int_list("origin1", v, -INT32_MAX, INT32_MAX, a->origin1, &a->norigin1);
}
static int opt_origin2(args *a, const char *v) {
  return parse_int_list("origin2", v, -INT32_MAX, INT32_MAX, a->origin2, &a->norigin2);
}
static int opt_footprint(args *a, const char *v) {
  a->file[F_FOOTPRINT] = v;
  return 0;
}
static int opt_structure(args *a, const char *v) {
  a->file[F_STRUCTURE] = v;
  return 0;
}
static int opt_structure1(args *a, const char *v) {
  a->file[F_STRUCTURE1] = v;
  return 0;
}
static int opt_structure2(args *a, const char *v) {
  a->file[F_STRUCTURE2] = v;
  return 0;
}
static int opt_mask(args *a, const char *v) {
  a->file[F_MASK] = v;
  return 0;
}
static int opt_iterations(args *a, const char *v) {
  return parse_int("iterations", v, INT32_MIN, INT32_MAX, &a->iterations);
}
static int opt_border(args *a, const char *v) {
  return parse_int("border-value", v, 0, 1, &a->border_value);
}
/* "true"/"false" (any case) or 1/0; -1 for anything else. */
static int bool_word(const char *v) {
  if (strcasecmp(v, "true") == 0 || strcmp(v, "1") == 0) return 1;
  if (strcasecmp(v, "false") == 0 || strcmp(v, "0") == 0) return 0;
  return -1;
}
static int opt_brute(args *a, const char *v) {
  int b = bool_word(v);
  if (b < 0) {
    errorf("bad value '%s' for --brute-force (expected true or false)", v);
    return -1;
  }
  a->brute_force = b;
  return 0;
}
static int opt_mode(args *a, const char *v) {
  if (ndf_mode_from_name(v, &a->mode) == NDF_OK) return 0;
  errorf("bad value '%s' for --mode (expected reflect, constant, nearest, mirror, wrap, "
         "grid-mirror, grid-constant or grid-wrap)",
         v);
  return -1;
}
static int opt_cval(args *a, const char *v) {
  char *end;
  errno = 0;
  double d = strtod(v, &end);
  int lead_ok = *v != '\0' && *v != ' ' && *v != '\t' && *v != '\n';
  if (!lead_ok || end == v || *end != '\0' || (errno == ERANGE && isinf(d))) {
    errorf("bad value '%s' for --cval (expected a number)", v);
    return -1;
  }
  a->cval = d;
  return 0;
}
/* --rank: any integer; the library checks it against the window's taps. */
static int opt_rank(args *a, const char *v) {
  int64_t r[NDF_MAX_SPATIAL];
  int n;
  if (parse_int_list("rank", v, INT64_MIN, INT64_MAX, r, &n) != 0) return -1;
  if (n != 1) {
    errorf("bad value '%s' for --rank (expected one integer)", v);
    return -1;
  }
  a->rank = r[0];
  return 0;
}
/* --percentile: any finite number; the library checks it is in -100..100. */
static int opt_percentile(args *a, const char *v) {
  char *end;
  errno = 0;
  double d = strtod(v, &end);
  int lead_ok = *v != '\0' && *v != ' ' && *v != '\t' && *v != '\n';
  if (!lead_ok || end == v || *end != '\0' || !isfinite(d)) {
    errorf("bad value '%s' for --percentile (expected a number)", v);
    return -1;
  }
  a->percentile = d;
  return 0;
}
static int opt_nan_policy(args *a, const char *v) {
  if (strcmp(v, "propagate") == 0) a->nan_policy = NDF_RANK_NAN_PROPAGATE;
  else if (strcmp(v, "omit") == 0) a->nan_policy = NDF_RANK_NAN_OMIT;
  else {
    errorf("bad value '%s' for --nan-policy (expected propagate or omit)", v);
    return -1;
  }
  return 0;
}
/* A list of finite numbers ("2" or "1.5,2,2"), at most NDF_MAX_SPATIAL. */
static int parse_double_list(const char *opt, const char *v, double *out, int *n) {
  const char *p = v;
  *n = 0;
  for (;;) {
    char *end;
    errno = 0;
    double d = strtod(p, &end);
    if (end == p || (*end != ',' && *end != '\0') || !isfinite(d) || *n == NDF_MAX_SPATIAL) {
      errorf("bad value '%s' for --%s (expected a number or a comma-separated list such as 1.5,2,2, "
             "at most %d)", v, opt, NDF_MAX_SPATIAL);
      return -1;
    }
    out[(*n)++] = d;
    if (*end == '\0') return 0;
    p = end + 1;
  }
}
/* The linear filters' options; the library checks signs and ranges (sigma < 0, order < 0, ...). */
static int opt_sigma(args *a, const char *v) { return parse_double_list("sigma", v, a->sigma, &a->nsigma); }
static int opt_order(args *a, const char *v) {
  return parse_int_list("order", v, INT32_MIN, INT32_MAX, a->order, &a->norder);
}
static int opt_truncate(args *a, const char *v) {
  int n;
  double t[NDF_MAX_SPATIAL];
  if (parse_double_list("truncate", v, t, &n) != 0) return -1;
  if (n != 1) {
    errorf("bad value '%s' for --truncate (expected one number)", v);
    return -1;
  }
  a->truncate = t[0];
  return 0;
}
static int opt_radius(args *a, const char *v) {
  return parse_int_list("radius", v, INT64_MIN, INT64_MAX, a->radius, &a->nradius);
}
/* --axes of the N-D filters; --axis (one value) of the 1-D filters, sobel and prewitt. */
static int opt_axes(args *a, const char *v) {
  return parse_int_list("axes", v, -NDF_MAX_NDIM, NDF_MAX_NDIM - 1, a->axes, &a->naxes);
}
static int opt_axis(args *a, const char *v) {
  if (parse_int_list("axis", v, -NDF_MAX_NDIM, NDF_MAX_NDIM - 1, a->axes, &a->naxes) != 0) return -1;
  if (a->naxes == 1) return 0;
  errorf("bad value '%s' for --axis (expected one axis)", v);
  return -1;
}
static int opt_weights(args *a, const char *v) {
  a->file[F_WEIGHTS] = v;
  return 0;
}
/* Parses "a,b,c" into at most max doubles; the count, or -1 after saying why. */
static int parse_doubles(const char *opt, const char *s, double *out, int max) {
  int n = 0;
  char buf[65536];
  if (strlen(s) >= sizeof buf) {
    errorf("--%s: the list is too long", opt);
    return -1;
  }
  snprintf(buf, sizeof buf, "%s", s);
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (n == max) {
      errorf("--%s: at most %d values", opt, max);
      return -1;
    }
    if (parse_double_arg(opt, t, &out[n++]) != 0) return -1;
  }
  if (n == 0) errorf("--%s: no values", opt);
  return n ? n : -1;
}
/* The intensity ops' options; the library checks their ranges (q in 0..100, lo <= hi, ...). */
static int opt_bins(args *a, const char *v) { return parse_long_arg("bins", v, 1, 1L << 30, &a->bins); }
static int opt_nbins(args *a, const char *v) { return parse_long_arg("nbins", v, 1, 1L << 24, &a->nbins); }
static int opt_edges(args *a, const char *v) {
  return (a->nedges = parse_doubles("edges", v, a->edges, 4096)) < 0 ? -1 : 0;
}
static int opt_range(args *a, const char *v) {
  if (parse_doubles("range", v, a->range, 2) == 2) return 0;
  errorf("bad value '%s' for --range (expected LO,HI)", v);
  return -1;
}
static int opt_density(args *a, const char *v) {
  a->density = bool_word(v);
  if (a->density >= 0) return 0;
  errorf("bad value '%s' for --density (expected true or false)", v);
  return -1;
}
static int opt_edges_out(args *a, const char *v) {
  a->edges_out = v;
  return 0;
}
static int opt_q(args *a, const char *v) { return (a->nq = parse_doubles("q", v, a->q, 256)) < 0 ? -1 : 0; }
static int opt_lo(args *a, const char *v) { return parse_double_arg("lo", v, &a->lo); }
static int opt_hi(args *a, const char *v) { return parse_double_arg("hi", v, &a->hi); }
static int opt_centre(args *a, const char *v) { return parse_double_arg("centre", v, &a->centre); }
static int opt_width(args *a, const char *v) { return parse_double_arg("width", v, &a->width); }
static int opt_preset(args *a, const char *v) {
  if (ndf_ct_window_preset(v, &a->preset_centre, &a->preset_width) == NDF_OK) return 0;
  errorf("bad value '%s' for --preset (expected brain, subdural, stroke, bone, lung, mediastinum, soft_tissue "
         "or liver)", v);
  return -1;
}
static int opt_out_min(args *a, const char *v) { return parse_double_arg("out-min", v, &a->out_min); }
static int opt_out_max(args *a, const char *v) { return parse_double_arg("out-max", v, &a->out_max); }
/* --sampling: one positive number or one per spatial axis. */
static int opt_sampling(args *a, const char *v) {
  const char *p = v;
  a->nsampling = 0;
  for (;;) {
    char *end;
    errno = 0;
    double d = strtod(p, &end);
    if (end == p || (*end != ',' && *end != '\0') || !isfinite(d) || !(d > 0) ||
        a->nsampling == NDF_MAX_SPATIAL) {
      errorf("bad value '%s' for --sampling (expected positive numbers such as 0.7,1.3,1.3, "
             "at most %d)", v, NDF_MAX_SPATIAL);
      return -1;
    }
    a->sampling[a->nsampling++] = d;
    if (*end == '\0') return 0;
    p = end + 1;
  }
}
static int opt_metric(args *a, const char *v) {
  if (ndf_metric_from_name(v, &a->metric) == NDF_OK) return 0;
  errorf("bad value '%s' for --metric (expected euclidean, taxicab, cityblock, manhattan or "
         "chessboard)", v);
  return -1;
}
static int opt_indices(args *a, const char *v) {
  a->indices = v;
  return 0;
}
/* --algorithm: the grey ops' names (auto, direct, separable, vhgw, decomposed)
 * and the rank filters' (auto, network, select, histogram, tile); check_algorithm
 * says which the op takes. */
static int opt_algorithm(args *a, const char *v) {
  a->algorithm_name = v;
  a->grey_algo_ok = ndf_grey_algorithm_from_name(v, &a->algorithm) == NDF_OK;
  a->rank_algo_ok = 1;
  if (strcmp(v, "auto") == 0) a->rank_algo = NDF_RANK_ALGO_AUTO;
  else if (strcmp(v, "network") == 0) a->rank_algo = NDF_RANK_ALGO_NETWORK;
  else if (strcmp(v, "select") == 0) a->rank_algo = NDF_RANK_ALGO_SELECT;
  else if (strcmp(v, "histogram") == 0) a->rank_algo = NDF_RANK_ALGO_HISTOGRAM;
  else if (strcmp(v, "tile") == 0) a->rank_algo = NDF_RANK_ALGO_TILE;
  else a->rank_algo_ok = 0;
  if (a->grey_algo_ok || a->rank_algo_ok) return 0;
  errorf("bad value '%s' for --algorithm (expected auto, direct, separable, vhgw or decomposed for the "
         "grey ops; auto, network, select, histogram or tile for the rank filters)", v);
  return -1;
}
static int opt_construction(args *a, const char *v) {
  if (ndf_ecc_construction_from_name(v, &a->construction) == NDF_OK) return 0;
  errorf("bad value '%s' for --construction (expected V or T)", v);
  return -1;
}
static int opt_weighted(args *a, const char *v) {
  int b = bool_word(v);
  if (b < 0) {
    errorf("bad value '%s' for --weighted (expected true or false)", v);
    return -1;
  }
  a->weighted = b;
  return 0;
}
static int opt_method(args *a, const char *v) {
  if (ndf_reconstruct_method_from_name(v, &a->method) == NDF_OK) return 0;
  errorf("bad value '%s' for --method (expected dilation or erosion)", v);
  return -1;
}
static int opt_offset(args *a, const char *v) {
  return parse_int_list("offset", v, 0, INT32_MAX, a->offset, &a->noffset);
}
static int opt_batch(args *a, const char *v) {
  return parse_int("batch-dims", v, 0, NDF_MAX_NDIM - 1, &a->batch_dims);
}
static int opt_batch_axis(args *a, const char *v) {
  return parse_int("batch-axis", v, -NDF_MAX_NDIM, NDF_MAX_NDIM - 1, &a->batch_axis);
}
static int opt_device(args *a, const char *v) {
  if (strcmp(v, "auto") == 0) a->device = DEV_AUTO;
  else if (strcmp(v, "cpu") == 0) a->device = DEV_CPU;
  else if (strcmp(v, "cuda") == 0) a->device = DEV_CUDA;
  else {
    errorf("bad value '%s' for --device (expected cpu, cuda or auto)", v);
    return -1;
  }
  return 0;
}
/* --cpu-threads N: the CPU backend's threads of the contexts the command makes
 * (cli_ctx_options_init); 0 (not given): OpenMP's default. */
static int cli_cpu_threads;

int cli_cpu_threads_arg(const char *v) {
  long n;
  if (parse_long_arg("cpu-threads", v, 1, NDF_MAX_CPU_THREADS, &n)) return -1;
  cli_cpu_threads = (int)n;
  return 0;
}

void cli_ctx_options_init(ndf_ctx_options *o) {
  ndf_ctx_options_init(o);
  o->cpu_threads = cli_cpu_threads;
}

static int opt_cpu_threads(args *a, const char *v) {
  (void)a;
  return cli_cpu_threads_arg(v);
}
static int opt_arch(args *a, const char *v) {
  if (strncmp(v, "sm_", 3) != 0 && strncmp(v, "compute_", 8) != 0) {
    errorf("bad value '%s' for --arch (expected e.g. sm_90)", v);
    return -1;
  }
  a->arch = v;
  return 0;
}
static int opt_dtype(args *a, const char *v) {
  if (ndf_dtype_from_name(v, &a->dtype) == NDF_OK) return 0;
  errorf("bad value '%s' for --dtype (expected bool, uint8, int8, uint16, int16, uint32, int32, "
         "int64, uint64, float32 or float64)",
         v);
  return -1;
}
/* The output's dtype: any of the library's; an op whose library call refuses it (label
   into bool with more than one feature, for one) reports the library's error. */
static int opt_output_dtype(args *a, const char *v) {
  ndf_dtype t;
  if (ndf_dtype_from_name(v, &t) == NDF_OK) {
    a->output_dtype = t;
    return 0;
  }
  errorf("bad value '%s' for --output-dtype (expected bool, uint8, int8, uint16, int16, uint32, int32, "
         "int64, uint64, float32 or float64)",
         v);
  return -1;
}
static int opt_ndim(args *a, const char *v) {
  return parse_int("ndim", v, 1, NDF_MAX_SPATIAL, &a->ndim);
}
static int opt_tune(args *a, const char *v) {
  const size_t n = strlen(a->tune);
  if (cli_tune_check(v) != 0) return -1;
  if (n + strlen(v) + 2 > sizeof a->tune) {
    errorf("too many --tune options");
    return -1;
  }
  snprintf(a->tune + n, sizeof a->tune - n, "%s%s", n ? "," : "", v);
  return 0;
}
/* A number for one of BET's one-letter options, in [lo, hi]. */
static int parse_bet_number(const char *opt, const char *v, double lo, double hi, double *out) {
  char *end;
  errno = 0;
  double d = strtod(v, &end);
  if (*v == '\0' || end == v || *end != '\0' || !isfinite(d) || d < lo || d > hi) {
    errorf("bad value '%s' for -%s (expected a number in [%g, %g])", v, opt, lo, hi);
    return -1;
  }
  *out = d;
  return 0;
}
static int opt_bet_f(args *a, const char *v) { return parse_bet_number("f", v, 0, 1, &a->bet_f); }
static int opt_bet_g(args *a, const char *v) { return parse_bet_number("g", v, -1, 1, &a->bet_g); }
static int opt_bet_r(args *a, const char *v) { return parse_bet_number("r", v, 0, 1e6, &a->bet_r); }
static int opt_bet_c(args *a, const char *v) {
  const char *p = v;
  for (a->nbet_c = 0; a->nbet_c < 3; a->nbet_c++) {
    char *end;
    errno = 0;
    const double d = strtod(p, &end);
    const char want = a->nbet_c < 2 ? ',' : '\0';
    if (end == p || *end != want || !isfinite(d)) {
      errorf("bad value '%s' for -c (expected the centre in voxels: X,Y,Z)", v);
      return -1;
    }
    a->bet_c[a->nbet_c] = d;
    p = end + 1;
  }
  return 0;
}
static int opt_out(args *a, const char *v) {
  a->out = v;
  return 0;
}

static const struct opt_def {
  const char *name;
  optset flag;
  int (*parse)(args *, const char *);
  const char *arg;  /* what the value looks like, for messages */
  int is_bool;      /* "--name" alone means true; a value must be a bool_word */
} opt_defs[] = {
    {"size", O_SIZE, opt_size, "N[,N...]", 0},
    {"footprint", O_FOOTPRINT, opt_footprint, "FILE", 0},
    {"structure", O_STRUCTURE, opt_structure, "FILE", 0},
    {"structure1", O_STRUCTURE1, opt_structure1, "FILE", 0},
    {"structure2", O_STRUCTURE2, opt_structure2, "FILE", 0},
    {"iterations", O_ITERATIONS, opt_iterations, "N", 0},
    {"mask", O_MASK, opt_mask, "FILE", 0},
    {"border-value", O_BORDER_VALUE, opt_border, "0|1", 0},
    {"origin", O_ORIGIN, opt_origin, "N[,N...]", 0},
    {"origin1", O_ORIGIN1, opt_origin1, "N[,N...]", 0},
    {"origin2", O_ORIGIN2, opt_origin2, "N[,N...]", 0},
    {"mode", O_MODE, opt_mode, "MODE", 0},
    {"cval", O_CVAL, opt_cval, "X", 0},
    {"rank", O_RANK, opt_rank, "N", 0},
    {"percentile", O_PERCENTILE, opt_percentile, "P", 0},
    {"nan-policy", O_NAN_POLICY, opt_nan_policy, "propagate|omit", 0},
    {"algorithm", O_ALGORITHM, opt_algorithm, "A", 0},
    {"brute-force", O_BRUTE_FORCE, opt_brute, "[true|false]", 1},
    {"output-dtype", O_OUTPUT_DTYPE, opt_output_dtype, "DTYPE", 0},
    {"sampling", O_SAMPLING, opt_sampling, "X[,X...]", 0},
    {"metric", O_METRIC, opt_metric, "METRIC", 0},
    {"indices", O_INDICES, opt_indices, "FILE", 0},
    {"construction", O_CONSTRUCTION, opt_construction, "V|T", 0},
    {"weighted", O_WEIGHTED, opt_weighted, "[true|false]", 1},
    {"method", O_METHOD, opt_method, "dilation|erosion", 0},
    {"offset", O_OFFSET, opt_offset, "N[,N...]", 0},
    {"batch-dims", O_BATCH_DIMS, opt_batch, "N", 0},
    {"batch-axis", O_BATCH_AXIS, opt_batch_axis, "K", 0},
    {"device", O_DEVICE, opt_device, "cpu|cuda|auto", 0},
    {"cpu-threads", O_CPU_THREADS, opt_cpu_threads, "N", 0},
    {"arch", O_ARCH, opt_arch, "sm_XY", 0},
    {"dtype", O_DTYPE, opt_dtype, "DTYPE", 0},
    {"ndim", O_NDIM, opt_ndim, "N", 0},
    {"out", O_OUT, opt_out, "DIR", 0},
    {"tune", O_TUNE, opt_tune, "NAME=VALUE", 0},
    {"sigma", O_SIGMA, opt_sigma, "X[,X...]", 0},
    {"order", O_ORDER, opt_order, "N[,N...]", 0},
    {"truncate", O_TRUNCATE, opt_truncate, "X", 0},
    {"radius", O_RADIUS, opt_radius, "N[,N...]", 0},
    {"axes", O_AXES, opt_axes, "N[,N...]", 0},
    {"axis", O_AXIS, opt_axis, "N", 0},
    {"weights", O_WEIGHTS, opt_weights, "FILE", 0},
    {"bins", O_BINS, opt_bins, "N", 0},
    {"edges", O_EDGES, opt_edges, "E0,E1[,...]", 0},
    {"range", O_RANGE, opt_range, "LO,HI", 0},
    {"density", O_DENSITY, opt_density, "[true|false]", 1},
    {"edges-out", O_EDGES_OUT, opt_edges_out, "FILE", 0},
    {"q", O_Q, opt_q, "Q[,Q...]", 0},
    {"lo", O_LO, opt_lo, "X", 0},
    {"hi", O_HI, opt_hi, "X", 0},
    {"preset", O_PRESET, opt_preset, "NAME", 0},
    {"centre", O_CENTRE, opt_centre, "C", 0},
    {"center", O_CENTRE, opt_centre, "C", 0},
    {"width", O_WIDTH, opt_width, "W", 0},
    {"out-min", O_OUT_MIN, opt_out_min, "X", 0},
    {"out-max", O_OUT_MAX, opt_out_max, "X", 0},
    {"nbins", O_NBINS, opt_nbins, "N", 0},
    /* BET's names, given with one dash: -f 0.5 */
    {"f", O_F, opt_bet_f, "F", 0},
    {"g", O_G, opt_bet_g, "G", 0},
    {"r", O_R, opt_bet_r, "MM", 0},
    {"c", O_C, opt_bet_c, "X,Y,Z", 0},
};
#define NOPT_DEFS (sizeof opt_defs / sizeof opt_defs[0])

/* The dashes an option is written with: BET's one-letter options (-f, -g, -r, -c) take one. */
static const char *dash(const char *name) { return name[0] && !name[1] && strchr("fgrc", name[0]) ? "-" : "--"; }

/* "--structure FILE, --iterations N, ..." for the options in mask, in table order. */
static const char *format_opts(optset mask, char *buf, size_t cap) {
  size_t n = 0;
  buf[0] = '\0';
  for (size_t k = 0; k < NOPT_DEFS && n < cap; k++)
    if (opt_defs[k].flag & mask)
      n += (size_t)snprintf(buf + n, cap - n, "%s%s%s %s", n ? ", " : "", dash(opt_defs[k].name),
                            opt_defs[k].name, opt_defs[k].arg);
  return buf;
}

/* 1 when s is a negative number ("-1"), which is a positional argument. */
static int is_negative_number(const char *s) { return s[0] == '-' && s[1] >= '0' && s[1] <= '9'; }

/* Parses argv[first..argc) into *a: options in accepted (as "--name value"
 * or "--name=value") anywhere, the rest positional ("--" ends options).
 * Returns 0 or EXIT_USAGE after printing why. */
static int parse_args(int argc, char **argv, int first, optset accepted, const char *cmd,
                      args *a) {
  memset(a, 0, sizeof *a);
  a->mode = NDF_MODE_REFLECT;
  a->dtype = NDF_DTYPE_COUNT;
  a->output_dtype = NDF_INT32;
  a->ndim = 3;
  a->truncate = 4.0;
  a->bins = 10;
  a->nbins = 256;
  a->out_max = 1.0;
  a->device = DEV_AUTO;
  int only_pos = 0;
  for (int i = first; i < argc; i++) {
    const char *s = argv[i];
    if (only_pos || s[0] != '-' || s[1] == '\0' || is_negative_number(s)) {
      if (a->npos == (int)(sizeof a->pos / sizeof a->pos[0])) {
        errorf("too many arguments for '%s'", cmd);
        return EXIT_USAGE;
      }
      a->pos[a->npos++] = s;
      continue;
    }
    if (strcmp(s, "--") == 0) {
      only_pos = 1;
      continue;
    }
    const char *name = s[1] == '-' ? s + 2 : s + 1;
    const char *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    const struct opt_def *d = NULL;
    for (size_t k = 0; k < NOPT_DEFS; k++)
      if ((s[1] == '-') == (dash(opt_defs[k].name)[1] == '-') && strlen(opt_defs[k].name) == len &&
          strncmp(opt_defs[k].name, name, len) == 0)
        d = &opt_defs[k];
    if (!d) {
      int shown = eq ? (int)(eq - s) : (int)strlen(s);
      errorf("unknown option '%.*s' for '%s' (see ndforge --help)", shown, s, cmd);
      return EXIT_USAGE;
    }
    if (!(d->flag & accepted)) {
      char list[1024];
      if (accepted) errorf("option %s%s does not apply to '%s' (it takes %s)", dash(d->name), d->name, cmd,
                           format_opts(accepted, list, sizeof list));
      else errorf("option %s%s does not apply to '%s' (it takes no options)", dash(d->name), d->name, cmd);
      return EXIT_USAGE;
    }
    if ((a->given & d->flag) && d->flag != O_TUNE) {
      errorf("option %s%s given twice", dash(d->name), d->name);
      return EXIT_USAGE;
    }
    const char *val = eq ? eq + 1 : NULL;
    if (!val && d->is_bool) {
      /* A flag: takes the next argument only when it is true/false/1/0. */
      val = i + 1 < argc && bool_word(argv[i + 1]) >= 0 ? argv[++i] : "true";
    }
    if (!val) {
      if (i + 1 >= argc) {
        errorf("option %s%s needs a value", dash(d->name), d->name);
        return EXIT_USAGE;
      }
      val = argv[++i];
    }
    if (d->parse(a, val) != 0) return EXIT_USAGE;
    a->given |= d->flag;
  }
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Ops: one table entry per scipy.ndimage function                           */

typedef ndf_status (*grey_fn)(ndf_ctx *, const ndf_array *, ndf_array *,
                              const ndf_grey_options *);
typedef ndf_status (*binary_fn)(ndf_ctx *, const ndf_array *, ndf_array *,
                                const ndf_binary_options *);

/* The arguments of an op after its files are loaded. */
typedef struct op_params {
  const args *a;
  const ndf_array *file[NFILES]; /* the F_* option files, NULL when not given */
  int64_t *num_features;         /* label: one count per image, or NULL */
  ndf_array *indices;            /* the second output (host), or NULL: the distance transforms' --indices,
                                    histogram's --edges-out */
  int nsampling;                 /* distance transforms: --sampling, or a NIfTI input's spacing */
  double sampling[NDF_MAX_SPATIAL];
} op_params;

enum {
  OPF_BINARY = 1u << 0,   /* output bool (uint8 in NIfTI files), whatever the input dtype */
  OPF_CPU_ONLY = 1u << 1, /* the library has no CUDA kernels for it: --device auto means cpu */
  OPF_LABEL = 1u << 2,    /* output int32 (or --output-dtype) in every format; prints num_features */
  OPF_RANK = 1u << 3,     /* a rank filter (median, rank, percentile): the input's dtype */
  OPF_DISTANCE = 1u << 4, /* a distance transform: scipy's distance dtype, --indices */
  OPF_RECON = 1u << 5,    /* reconstruction: INPUT is the seed, --mask the mask; float64 or --output-dtype */
  OPF_FILTER = 1u << 6,   /* a linear filter: the input's dtype, or --output-dtype */
  OPF_INTENSITY = 1u << 7, /* an intensity op: histogram and the percentiles have outputs of their own shape */
  OPF_BET = 1u << 8,       /* skull_strip: a bool mask (uint8 in NIfTI files); the spacing from --sampling or pixdim */
};

typedef struct op_def {
  const char *name;
  optset opts; /* O_* options it takes besides --device */
  unsigned flags; /* OPF_* */
  ndf_status (*call)(const struct op_def *, ndf_ctx *, const ndf_array *, ndf_array *,
                     const op_params *);
  grey_fn grey;     /* grey-morphology family */
  binary_fn binary; /* binary-morphology family (ndf_binary_options) */
  const char *summary;
  optset required; /* O_* options it cannot run without (--rank of rank_filter) */
} op_def;

/* --algorithm names one of the op's own algorithms (the grey ops and the rank
 * filters have different ones); 0, or -1 after saying why. */
static int check_algorithm(const op_def *op, const args *a) {
  if (!(a->given & O_ALGORITHM)) return 0;
  if (op->grey && !a->grey_algo_ok) {
    errorf("bad value '%s' for --algorithm of '%s' (expected auto, direct, separable, vhgw or decomposed)",
           a->algorithm_name, op->name);
    return -1;
  }
  if ((op->flags & OPF_RANK) && !a->rank_algo_ok) {
    errorf("bad value '%s' for --algorithm of '%s' (expected auto, network, select, histogram or tile)",
           a->algorithm_name, op->name);
    return -1;
  }
  return 0;
}

static void grey_options_from(const op_params *p, ndf_grey_options *g) {
  const args *a = p->a;
  ndf_grey_options_init(g);
  g->nsize = a->nsize;
  memcpy(g->size, a->size, sizeof g->size);
  g->footprint = p->file[F_FOOTPRINT];
  g->structure = p->file[F_STRUCTURE];
  g->norigin = a->norigin;
  memcpy(g->origin, a->origin, sizeof g->origin);
  g->mode = a->mode;
  g->cval = a->cval;
  g->batch_dims = a->batch_dims;
  g->algorithm = a->algorithm;
}

static ndf_status call_grey(const op_def *op, ndf_ctx *ctx, const ndf_array *in, ndf_array *out,
                            const op_params *p) {
  ndf_grey_options g;
  grey_options_from(p, &g);
  return op->grey(ctx, in, out, &g);
}

/* Options not given keep ndf_binary_options_init's values (scipy's defaults). */
static void binary_options_from(const op_params *p, ndf_binary_options *o) {
  const args *a = p->a;
  ndf_binary_options b;
  ndf_binary_options_init(&b);
  b.structure = p->file[F_STRUCTURE];
  b.mask = p->file[F_MASK];
  if (a->given & O_ITERATIONS) b.iterations = a->iterations;
  if (a->given & O_BORDER_VALUE) b.border_value = a->border_value;
  if (a->given & O_BRUTE_FORCE) b.brute_force = a->brute_force;
  b.norigin = a->norigin;
  memcpy(b.origin, a->origin, sizeof b.origin);
  b.batch_dims = a->batch_dims;
  *o = b;
}

static ndf_status call_binary(const op_def *op, ndf_ctx *ctx, const ndf_array *in, ndf_array *out,
                              const op_params *p) {
  ndf_binary_options b;
  binary_options_from(p, &b);
  return op->binary(ctx, in, out, &b);
}

static void hit_or_miss_options_from(const op_params *p, ndf_hit_or_miss_options *o) {
  const args *a = p->a;
  ndf_hit_or_miss_options h;
  ndf_hit_or_miss_options_init(&h);
  h.structure1 = p->file[F_STRUCTURE1];
  h.structure2 = p->file[F_STRUCTURE2];
  h.norigin1 = a->norigin1;
  memcpy(h.origin1, a->origin1, sizeof h.origin1);
  if (a->given & O_ORIGIN2) { /* else origin2 = origin1, as scipy's origin2=None */
    h.norigin2 = a->norigin2;
    memcpy(h.origin2, a->origin2, sizeof h.origin2);
  }
  h.batch_dims = a->batch_dims;
  *o = h;
}

static ndf_status call_hit_or_miss(const op_def *op, ndf_ctx *ctx, const ndf_array *in,
                                   ndf_array *out, const op_params *p) {
  (void)op;
  ndf_hit_or_miss_options h;
  hit_or_miss_options_from(p, &h);
  return ndf_binary_hit_or_miss(ctx, in, out, &h);
}

static ndf_status call_label(const op_def *op, ndf_ctx *ctx, const ndf_array *in, ndf_array *out,
                             const op_params *p) {
  (void)op;
  return ndf_label(ctx, in, out, p->file[F_STRUCTURE], p->a->batch_dims, p->num_features);
}

/* Options not given keep ndf_rank_options_init's values (scipy's defaults). */
static void rank_options_from(const op_params *p, ndf_rank_options *r) {
  const args *a = p->a;
  ndf_rank_options_init(r);
  r->nsize = a->nsize;
  memcpy(r->size, a->size, sizeof r->size);
  r->footprint = p->file[F_FOOTPRINT];
  r->norigin = a->norigin;
  memcpy(r->origin, a->origin, sizeof r->origin);
  r->mode = a->mode;
  r->cval = a->cval;
  r->batch_dims = a->batch_dims;
  r->nan_policy = a->nan_policy;
  r->algorithm = a->rank_algo;
}

static ndf_status call_median(const op_def *op, ndf_ctx *ctx, const ndf_array *in,
                              ndf_array *out, const op_params *p) {
  (void)op;
  ndf_rank_options r;
  rank_options_from(p, &r);
  return ndf_median_filter(ctx, in, out, &r);
}

static ndf_status call_rank(const op_def *op, ndf_ctx *ctx, const ndf_array *in, ndf_array *out,
                            const op_params *p) {
  (void)op;
  ndf_rank_options r;
  rank_options_from(p, &r);
  return ndf_rank_filter(ctx, in, out, p->a->rank, &r);
}

static ndf_status call_percentile(const op_def *op, ndf_ctx *ctx, const ndf_array *in,
                                  ndf_array *out, const op_params *p) {
  (void)op;
  ndf_rank_options r;
  rank_options_from(p, &r);
  return ndf_percentile_filter(ctx, in, out, p->a->percentile, &r);
}

typedef ndf_status (*distance_fn)(ndf_ctx *, const ndf_array *, ndf_array *, ndf_array *,
                                  const ndf_distance_options *);

static ndf_status call_distance(distance_fn fn, ndf_ctx *ctx, const ndf_array *in, ndf_array *out,
                                const op_params *p) {
  const args *a = p->a;
  ndf_distance_options o;
  ndf_distance_options_init(&o);
  o.nsampling = p->nsampling;
  memcpy(o.sampling, p->sampling, sizeof o.sampling);
  o.metric = a->metric;
  o.metric_structure = p->file[F_STRUCTURE];
  o.batch_dims = a->batch_dims;
  return fn(ctx, in, out, p->indices, &o);
}
static ndf_status call_edt(const op_def *op, ndf_ctx *ctx, const ndf_array *in, ndf_array *out,
                           const op_params *p) {
  (void)op;
  return call_distance(ndf_distance_transform_edt, ctx, in, out, p);
}
static ndf_status call_cdt(const op_def *op, ndf_ctx *ctx, const ndf_array *in, ndf_array *out,
                           const op_params *p) {
  (void)op;
  return call_distance(ndf_distance_transform_cdt, ctx, in, out, p);
}
static ndf_status call_bf(const op_def *op, ndf_ctx *ctx, const ndf_array *in, ndf_array *out,
                          const op_params *p) {
  (void)op;
  return call_distance(ndf_distance_transform_bf, ctx, in, out, p);
}

/* The linear filters (scipy.ndimage), by the op's name: options not given keep scipy's defaults. */
static ndf_status call_filter(const op_def *op, ndf_ctx *ctx, const ndf_array *in, ndf_array *out,
                              const op_params *p) {
  const args *a = p->a;
  const char *n = op->name;
  const int axis = a->naxes ? (int)a->axes[0] : -1;
  ndf_filter_options f;
  ndf_filter_options_init(&f);
  f.mode = a->mode;
  f.cval = a->cval;
  f.batch_dims = a->batch_dims;
  f.norigin = a->norigin;
  memcpy(f.origin, a->origin, sizeof f.origin);
  if (a->given & O_AXES) {
    f.naxes = a->naxes;
    for (int i = 0; i < a->naxes; i++) f.axes[i] = (int)a->axes[i];
  }
  ndf_gaussian_params g;
  ndf_gaussian_params_init(&g);
  g.nsigma = a->nsigma;
  memcpy(g.sigma, a->sigma, sizeof g.sigma);
  g.norder = a->norder;
  for (int i = 0; i < a->norder; i++)
    g.order[i] = a->order[i] < INT_MIN ? INT_MIN : a->order[i] > INT_MAX ? INT_MAX : (int)a->order[i];
  g.truncate = a->truncate;
  g.nradius = a->nradius;
  memcpy(g.radius, a->radius, sizeof g.radius);
  if (!strcmp(n, "gaussian_filter")) return ndf_gaussian_filter(ctx, in, out, &g, &f);
  if (!strcmp(n, "gaussian_filter1d"))
    return ndf_gaussian_filter1d(ctx, in, out, a->sigma[0], axis, g.norder ? g.order[0] : 0, a->truncate,
                                 a->nradius ? a->radius[0] : -1, &f);
  if (!strcmp(n, "gaussian_laplace")) return ndf_gaussian_laplace(ctx, in, out, &g, &f);
  if (!strcmp(n, "gaussian_gradient_magnitude")) return ndf_gaussian_gradient_magnitude(ctx, in, out, &g, &f);
  if (!strcmp(n, "uniform_filter")) {
    static const int64_t three = 3;
    return ndf_uniform_filter(ctx, in, out, a->nsize ? a->nsize : 1, a->nsize ? a->size : &three, &f);
  }
  if (!strcmp(n, "uniform_filter1d")) return ndf_uniform_filter1d(ctx, in, out, a->nsize ? a->size[0] : 3, axis, &f);
  if (!strcmp(n, "sobel")) return ndf_sobel(ctx, in, out, axis, &f);
  if (!strcmp(n, "prewitt")) return ndf_prewitt(ctx, in, out, axis, &f);
  if (!strcmp(n, "laplace")) return ndf_laplace(ctx, in, out, &f);
  if (!strcmp(n, "correlate")) return ndf_correlate(ctx, in, out, p->file[F_WEIGHTS], &f);
  if (!strcmp(n, "convolve")) return ndf_convolve(ctx, in, out, p->file[F_WEIGHTS], &f);
  /* correlate1d, convolve1d: the --weights array (one axis) read as float64 */
  const ndf_array *wa = p->file[F_WEIGHTS];
  if (wa->ndim != 1) {
    errorf("--weights: the 1-D filters take a 1-D array (this one has %d axes)", wa->ndim);
    return NDF_EINVAL;
  }
  int64_t len = wa->shape[0];
  double *w = malloc((size_t)(len > 0 ? len : 1) * sizeof(double));
  if (!w) return NDF_ENOMEM;
  ndf_array d;
  ndf_status s = ndf_array_init(&d, w, NDF_DEVICE_CPU, NDF_FLOAT64, 1, &len);
  if (s == NDF_OK) s = ndf_array_copy(ctx, &d, wa);
  if (s == NDF_OK)
    s = !strcmp(n, "correlate1d") ? ndf_correlate1d(ctx, in, out, w, len, axis, &f)
                                  : ndf_convolve1d(ctx, in, out, w, len, axis, &f);
  free(w);
  return s;
}

/* One row of the op table per op of the registry's NDF_OPS_CLI, by its adapter:
 * the call_* function above that turns the options into the op's call. */
static void reconstruction_options_from(const op_params *p, ndf_reconstruction_options *o) {
  ndf_reconstruction_options_init(o);
  o->method = p->a->method;
  o->footprint = p->file[F_FOOTPRINT];
  o->noffset = p->a->noffset;
  for (int d = 0; d < p->a->noffset; d++) o->offset[d] = p->a->offset[d];
  o->batch_dims = p->a->batch_dims;
}

/* INPUT is the seed; --mask (required) the mask. */
static ndf_status call_reconstruction(const op_def *op, ndf_ctx *ctx, const ndf_array *in, ndf_array *out,
                                      const op_params *p) {
  (void)op;
  ndf_reconstruction_options o;
  reconstruction_options_from(p, &o);
  return ndf_reconstruction(ctx, in, p->file[F_MASK], out, &o);
}

/* The intensity ops (NumPy / scikit-image), by the op's name; --mask and --weights are
 * on the input's device (run_op), the bin edges are p->indices. */
static ndf_status call_intensity(const op_def *op, ndf_ctx *ctx, const ndf_array *in, ndf_array *out,
                                 const op_params *p) {
  const args *a = p->a;
  const char *n = op->name;
  ndf_window_options wo;
  ndf_window_options_init(&wo);
  wo.out_min = a->out_min;
  wo.out_max = a->out_max;
  wo.batch_dims = a->batch_dims;
  if (!strcmp(n, "histogram")) {
    ndf_histogram_options ho;
    ndf_histogram_options_init(&ho);
    ho.bins = a->bins;
    ho.edges = a->nedges ? a->edges : NULL;
    ho.nedges = a->nedges;
    ho.has_range = (a->given & O_RANGE) != 0;
    ho.range[0] = a->range[0];
    ho.range[1] = a->range[1];
    ho.weights = p->file[F_WEIGHTS];
    ho.density = a->density;
    ho.batch_dims = a->batch_dims;
    return ndf_histogram(ctx, in, out, p->indices, &ho);
  }
  if (!strcmp(n, "percentile")) return ndf_percentile(ctx, in, a->q, a->nq, out, a->batch_dims);
  if (!strcmp(n, "quantile")) return ndf_quantile(ctx, in, a->q, a->nq, out, a->batch_dims);
  if (!strcmp(n, "clip")) return ndf_clip(ctx, in, out, a->lo, a->hi);
  if (!strcmp(n, "window")) return ndf_window(ctx, in, out, a->lo, a->hi, &wo);
  if (!strcmp(n, "window_ct")) { /* --centre and --width override the preset's */
    const double c = a->given & O_CENTRE ? a->centre : a->preset_centre;
    const double w = a->given & O_WIDTH ? a->width : a->preset_width;
    return ndf_window_ct(ctx, in, out, c, w, &wo);
  }
  if (!strcmp(n, "normalize_minmax")) return ndf_normalize_minmax(ctx, in, out, &wo);
  if (!strcmp(n, "percentile_window")) return ndf_percentile_window(ctx, in, out, a->lo, a->hi, &wo);
  if (!strcmp(n, "normalize_zscore")) return ndf_normalize_zscore(ctx, in, p->file[F_MASK], out, a->batch_dims);
  if (!strcmp(n, "equalize_hist"))
    return ndf_equalize_hist(ctx, in, p->file[F_MASK], out, (int)a->nbins, a->batch_dims);
  errorf("'%s' has no call in this CLI", n);
  return NDF_ENOTSUP;
}

#define CLI_OP_grey(name, fn, opts, req, doc) {name, opts, 0, call_grey, fn, NULL, doc, req}
#define CLI_OP_median(name, fn, opts, req, doc) {name, opts, OPF_RANK, call_median, NULL, NULL, doc, req}
#define CLI_OP_rank(name, fn, opts, req, doc) {name, opts, OPF_RANK, call_rank, NULL, NULL, doc, req}
#define CLI_OP_percentile(name, fn, opts, req, doc) {name, opts, OPF_RANK, call_percentile, NULL, NULL, doc, req}
#define CLI_OP_binary(name, fn, opts, req, doc) {name, opts, OPF_BINARY, call_binary, NULL, fn, doc, req}
#define CLI_OP_hit_or_miss(name, fn, opts, req, doc) {name, opts, OPF_BINARY, call_hit_or_miss, NULL, NULL, doc, req}
#define CLI_OP_label(name, fn, opts, req, doc) {name, opts, OPF_LABEL, call_label, NULL, NULL, doc, req}
/* bf: CUDA too (the brute force, bit for bit the CPU's); cdt: CUDA for
 * distances with taxicab / chessboard, --device auto picks the CPU for --indices or --structure. */
#define CLI_OP_edt(name, fn, opts, req, doc) {name, opts, OPF_DISTANCE, call_edt, NULL, NULL, doc, req}
#define CLI_OP_cdt(name, fn, opts, req, doc) {name, opts, OPF_DISTANCE, call_cdt, NULL, NULL, doc, req}
#define CLI_OP_bf(name, fn, opts, req, doc) {name, opts, OPF_DISTANCE, call_bf, NULL, NULL, doc, req}
#define CLI_OP_reconstruction(name, fn, opts, req, doc) {name, opts, OPF_RECON, call_reconstruction, NULL, NULL, doc, req}
#define CLI_OP_filter(name, fn, opts, req, doc) {name, opts, OPF_FILTER, call_filter, NULL, NULL, doc, req}
#define CLI_OP_intensity(name, fn, opts, req, doc) {name, opts, OPF_INTENSITY, call_intensity, NULL, NULL, doc, req}
/* skull_strip: BET's options; the spacing from --sampling or the NIfTI pixdim (setup_distance). */
static ndf_status call_bet(const op_def *op, ndf_ctx *ctx, const ndf_array *in, ndf_array *out, const op_params *p) {
  (void)op;
  const args *a = p->a;
  ndf_skull_strip_options o;
  ndf_skull_strip_options_init(&o);
  if (a->given & O_F) o.fractional_intensity_threshold = a->bet_f;
  if (a->given & O_G) o.vertical_gradient = a->bet_g;
  if (a->given & O_R) o.radius = a->bet_r;
  if (a->given & O_C) {
    o.has_centre = 1;
    memcpy(o.centre, a->bet_c, sizeof o.centre);
  }
  if (a->given & O_ITERATIONS) o.iterations = a->iterations;
  double spacing[3] = {1, 1, 1};
  if (p->nsampling == 1) spacing[0] = spacing[1] = spacing[2] = p->sampling[0];
  else if (p->nsampling == 3) memcpy(spacing, p->sampling, sizeof spacing);
  else if (p->nsampling != 0) {
    errorf("--sampling: %d values for a 3-D image (one, or one per axis)", p->nsampling);
    return NDF_EINVAL;
  }
  return ndf_skull_strip(ctx, in, spacing, out, &o);
}
#define CLI_OP_bet(name, fn, opts, req, doc) {name, opts, OPF_BET, call_bet, NULL, NULL, doc, req}
#define CLI_OP(adapter, name, fn, opts, req, doc) CLI_OP_##adapter(name, fn, opts, req, doc),

static const op_def ops[] = {NDF_OPS_CLI(CLI_OP)};
#define NOPS (sizeof ops / sizeof ops[0])

static const op_def *find_op(const char *name) {
  for (size_t i = 0; i < NOPS; i++)
    if (strcmp(ops[i].name, name) == 0) return &ops[i];
  return NULL;
}

/* 1 for any op of the registry (those of `run` and of the other commands). */
static int is_op(const char *name) {
#define OP_NAME(name, family, fn, composite, doc) name,
  static const char *const all[] = {NDF_OPS(OP_NAME)};
#undef OP_NAME
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    if (strcmp(all[i], name) == 0) return 1;
  return 0;
}

static void unknown_op(const char *name) {
  char known[1024] = "";
  for (size_t i = 0; i < NOPS; i++) {
    strncat(known, i ? ", " : "", sizeof known - strlen(known) - 1);
    strncat(known, ops[i].name, sizeof known - strlen(known) - 1);
  }
  errorf("unknown op '%s' (known: %s)", name, known);
}

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Bytes of an array from cli_alloc (its size was checked there). */
static size_t array_bytes(const ndf_array *a) {
  return (size_t)ndf_array_size(a) * ndf_dtype_size(a->dtype);
}

/* "181x217x181 uint8" */
static const char *describe(const ndf_array *a, char *buf, size_t cap) {
  size_t n = 0;
  buf[0] = '\0';
  for (int i = 0; i < a->ndim && n < cap; i++)
    n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? "x" : "", (long long)a->shape[i]);
  if (a->ndim == 0 && n < cap) n += (size_t)snprintf(buf + n, cap - n, "scalar");
  if (n < cap) snprintf(buf + n, cap - n, " %s", ndf_dtype_name(a->dtype));
  return buf;
}

/* The host's physical memory in bytes (0 when unknown). */
static uint64_t host_memory(void) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
}

int cli_alloc(const char *what, ndf_array *a, ndf_dtype dtype, int ndim, const int64_t *shape) {
  char desc[NDF_MAX_NDIM * 21 + 32];
  ndf_array d;
  memset(a, 0, sizeof *a);
  memset(&d, 0, sizeof d);
  d.dtype = dtype;
  d.ndim = ndim >= 0 && ndim <= NDF_MAX_NDIM ? ndim : 0;
  for (int i = 0; i < d.ndim; i++) d.shape[i] = shape[i];
  /* The size is checked before anything is allocated: an overflowing shape
   * and one larger than the host's memory fail here, with their sizes. */
  int64_t bytes;
  if (ndf_shape_bytes(dtype, ndim, shape, &bytes) != NDF_OK) {
    if (what) errorf("cannot allocate %s (%s): %s", what, describe(&d, desc, sizeof desc), ndf_last_error());
    return -1;
  }
  uint64_t mem = host_memory();
  if (mem && (uint64_t)bytes > mem) {
    if (what)
      errorf("cannot allocate %s (%s): %lld bytes, more than the %llu bytes of memory this host has", what,
             describe(&d, desc, sizeof desc), (long long)bytes, (unsigned long long)mem);
    return -1;
  }
  if (ndf_array_init(a, NULL, NDF_DEVICE_CPU, dtype, ndim, shape) != NDF_OK ||
      !(a->data = malloc(bytes ? (size_t)bytes : 1))) {
    if (what) errorf("cannot allocate %s (%s): out of memory", what, describe(&d, desc, sizeof desc));
    memset(a, 0, sizeof *a);
    return -1;
  }
  return 0;
}

/* A C-contiguous host array of the given geometry, malloc'ed (cli_alloc without a message). */
static ndf_status host_alloc(ndf_array *a, ndf_dtype dtype, int ndim, const int64_t *shape) {
  return cli_alloc(NULL, a, dtype, ndim, shape) == 0 ? NDF_OK : NDF_ENOMEM;
}

static void host_free(ndf_array *a) {
  free(a->data);
  a->data = NULL;
}

static ndf_status make_ctx(ndf_ctx **ctx, ndf_backend backend, const char *cache_dir) {
  ndf_ctx_options o;
  cli_ctx_options_init(&o);
  o.backend = backend;
  o.cache_dir = cache_dir;
  ndf_status s = ndf_ctx_create(ctx, &o);
  if (s != NDF_OK) errorf("cannot create a context: %s", ndf_last_error());
  return s;
}

static ndf_backend backend_of(dev_choice d) {
  return d == DEV_CPU ? NDF_BACKEND_CPU : d == DEV_CUDA ? NDF_BACKEND_CUDA : NDF_BACKEND_AUTO;
}

/* Runs op on the host array in, on the CPU or the context's GPU, into out
 * (allocated here: host, C order, out_dtype, shaped like in or, with ondim >= 0,
 * of rank ondim and shape oshape).  On the GPU the input, the mask and (for the
 * intensity ops) the weights go to the device, and the second output
 * (p->indices) comes back.  On failure out is empty and the reason has been
 * printed. */
static ndf_status run_op(ndf_ctx *ctx, ndf_device_type dev, const op_def *op,
                         const ndf_array *in, const op_params *p, ndf_dtype out_dtype,
                         int ondim, const int64_t *oshape, ndf_array *out) {
  ndf_status s = NDF_OK;
  if (ondim < 0) {
    ondim = in->ndim;
    oshape = in->shape;
  }
  if (cli_alloc("the output", out, out_dtype, ondim, oshape) != 0) return NDF_ENOMEM;
  if (dev == NDF_DEVICE_CPU) {
    s = op->call(op, ctx, in, out, p);
    if (s != NDF_OK && ndf_errmsg(ctx)[0]) errorf("%s", ndf_errmsg(ctx)); /* call_filter may have said why */
  } else {
    ndf_array din, dout, dfile[2], didx;
    memset(&din, 0, sizeof din);
    memset(&dout, 0, sizeof dout);
    memset(dfile, 0, sizeof dfile);
    memset(&didx, 0, sizeof didx);
    op_params dp = *p;
    /* the files the call reads on the device: --mask, and histogram's --weights (the filters' are host arrays) */
    const int on_device[2] = {F_MASK, op->flags & OPF_INTENSITY ? F_WEIGHTS : -1};
    s = ndf_array_alloc(ctx, &din, NDF_DEVICE_CUDA, in->dtype, in->ndim, in->shape);
    if (s == NDF_OK) s = ndf_array_alloc(ctx, &dout, NDF_DEVICE_CUDA, out_dtype, ondim, oshape);
    if (s == NDF_OK) s = ndf_array_copy(ctx, &din, in);
    for (int k = 0; k < 2 && s == NDF_OK; k++) {
      const ndf_array *f = on_device[k] >= 0 ? p->file[on_device[k]] : NULL;
      if (!f) continue;
      s = ndf_array_alloc(ctx, &dfile[k], NDF_DEVICE_CUDA, f->dtype, f->ndim, f->shape);
      if (s == NDF_OK) s = ndf_array_copy(ctx, &dfile[k], f);
      dp.file[on_device[k]] = &dfile[k];
    }
    if (s == NDF_OK && p->indices) { /* the feature transform, or histogram's bin edges */
      s = ndf_array_alloc(ctx, &didx, NDF_DEVICE_CUDA, p->indices->dtype, p->indices->ndim, p->indices->shape);
      dp.indices = &didx;
    }
    if (s == NDF_OK) s = op->call(op, ctx, &din, &dout, &dp);
    if (s == NDF_OK) s = ndf_array_copy(ctx, out, &dout);
    if (s == NDF_OK && p->indices) s = ndf_array_copy(ctx, p->indices, &didx);
    if (s == NDF_OK) s = ndf_ctx_synchronize(ctx);
    if (s != NDF_OK && ndf_errmsg(ctx)[0]) errorf("%s", ndf_errmsg(ctx));
    ndf_array_free(ctx, &din);
    ndf_array_free(ctx, &dout);
    ndf_array_free(ctx, &dfile[0]);
    ndf_array_free(ctx, &dfile[1]);
    ndf_array_free(ctx, &didx);
  }
  if (s != NDF_OK) host_free(out);
  return s;
}

/* Opens a context for --device and tells which device the arrays go to. */
static ndf_status open_device(dev_choice d, ndf_ctx **ctx, ndf_device_type *dev) {
  *ctx = NULL;
  ndf_status s = make_ctx(ctx, backend_of(d), NULL);
  if (s != NDF_OK) return s;
  *dev = ndf_ctx_has_cuda(*ctx) ? NDF_DEVICE_CUDA : NDF_DEVICE_CPU;
  return NDF_OK;
}

int read_image(const char *path, ndfio_image *img) {
  char err[ERRLEN];
  if (ndfio_read(path, img, err, sizeof err) == NDF_OK) return 0;
  errorf("%s", err);
  return -1;
}

/* Loads the option files (--footprint, --structure, --mask ...) into
 * img[F_*] (zeroed when absent) and points p at them.  On failure the
 * reason has been printed; free img with free_elements either way. */
static int load_elements(const args *a, ndfio_image img[NFILES], op_params *p) {
  memset(img, 0, sizeof(ndfio_image) * NFILES);
  memset(p, 0, sizeof *p);
  p->a = a;
  for (int f = 0; f < NFILES; f++) {
    if (!a->file[f]) continue;
    if (read_image(a->file[f], &img[f]) != 0) return -1;
    p->file[f] = &img[f].arr;
  }
  return 0;
}

static void free_elements(ndfio_image img[NFILES]) {
  for (int f = 0; f < NFILES; f++) ndfio_image_free(&img[f]);
}

/* The dtype of op's output file: binary results are bool in .npy files
 * (NumPy's |b1) and uint8 in NIfTI files, which have no bool; the other ops
 * keep the input's dtype. */
static ndf_dtype binary_file_dtype(const char *outpath) {
  return ndfio_format_of(outpath) == NDFIO_NIFTI ? NDF_UINT8 : NDF_BOOL;
}
static ndf_dtype output_dtype(const op_def *op, const args *a, const char *outpath,
                              ndf_dtype in_dtype) {
  if (op->flags & OPF_LABEL) return a->output_dtype; /* int32 unless --output-dtype */
  if (op->flags & OPF_DISTANCE) { /* scipy's dtypes; edt: float32 with --output-dtype */
    if (op->call == call_cdt) return NDF_INT32;
    if (op->call == call_bf)
      return a->metric == NDF_METRIC_TAXICAB || a->metric == NDF_METRIC_CHESSBOARD ? NDF_UINT32
                                                                                   : NDF_FLOAT64;
    return a->given & O_OUTPUT_DTYPE ? a->output_dtype : NDF_FLOAT64;
  }
  if (op->flags & OPF_BET) return binary_file_dtype(outpath);
  if (op->flags & OPF_RECON) /* skimage's float64, or --output-dtype (the seed's) */
    return a->given & O_OUTPUT_DTYPE ? a->output_dtype : NDF_FLOAT64;
  if (op->flags & OPF_FILTER) return a->given & O_OUTPUT_DTYPE ? a->output_dtype : in_dtype; /* scipy's output= */
  if (op->flags & OPF_INTENSITY) {
    if (!strcmp(op->name, "histogram")) return a->file[F_WEIGHTS] || a->density ? NDF_FLOAT64 : NDF_INT64;
    if (!strcmp(op->name, "percentile") || !strcmp(op->name, "quantile")) return NDF_FLOAT64;
    if (a->given & O_OUTPUT_DTYPE) return a->output_dtype;
    if (!strcmp(op->name, "clip")) return in_dtype;
    if (!strcmp(op->name, "equalize_hist")) return in_dtype == NDF_FLOAT32 ? NDF_FLOAT32 : NDF_FLOAT64; /* skimage's */
    return NDF_FLOAT32; /* the windows and normalizations */
  }
  return op->flags & OPF_BINARY ? binary_file_dtype(outpath) : in_dtype;
}

static int check_file_type(const char *path, const char *what) {
  if (ndfio_format_of(path)) return 0;
  errorf("cannot tell the format of %s '%s' (use .npy, .nii or .nii.gz)", what, path);
  return -1;
}

/* ------------------------------------------------------------------------ */
/* ndforge run                                                               */

static void run_help(void) {
  printf("usage: ndforge run OP [options] INPUT OUTPUT\n\n"
         "INPUT and OUTPUT are .npy, .nii or .nii.gz files (NIfTI axes are x, y, z, ...).\n\n"
         "grey ops (the output has the input's dtype):\n");
  for (size_t i = 0; i < NOPS; i++)
    if (!(ops[i].flags & (OPF_BINARY | OPF_LABEL | OPF_RANK | OPF_DISTANCE | OPF_RECON | OPF_FILTER | OPF_INTENSITY |
                          OPF_BET)))
      printf("  %-23s %s\n", ops[i].name, ops[i].summary);
  printf("rank filters (the output has the input's dtype):\n");
  for (size_t i = 0; i < NOPS; i++)
    if (ops[i].flags & OPF_RANK) printf("  %-23s %s\n", ops[i].name, ops[i].summary);
  printf("binary ops (non-zero input is true; the output is bool, uint8 in NIfTI files):\n");
  for (size_t i = 0; i < NOPS; i++)
    if (ops[i].flags & OPF_BINARY) printf("  %-23s %s\n", ops[i].name, ops[i].summary);
  printf("labelling (non-zero input is foreground; the output is int32 in every format\n"
         "unless --output-dtype; prints \"num_features: N\", one count per image with\n"
         "--batch-dims):\n");
  for (size_t i = 0; i < NOPS; i++)
    if (ops[i].flags & OPF_LABEL) printf("  %-23s %s\n", ops[i].name, ops[i].summary);
  printf("distance transforms (zero input is the background; OUTPUT gets the distances in\n"
         "scipy's dtype, --indices FILE the nearest background coordinates, int32 of shape\n"
         "(rank,) + shape per image; cdt runs on CUDA for taxicab/chessboard distances\n"
         "without --indices, on the CPU otherwise):\n");
  for (size_t i = 0; i < NOPS; i++)
    if (ops[i].flags & OPF_DISTANCE) printf("  %-23s %s\n", ops[i].name, ops[i].summary);
  printf("grey reconstruction (INPUT is the seed, --mask FILE the mask, of the same dtype\n"
         "and shape; the output is float64 unless --output-dtype gives the seed's dtype):\n");
  for (size_t i = 0; i < NOPS; i++)
    if (ops[i].flags & OPF_RECON) printf("  %-23s %s\n", ops[i].name, ops[i].summary);
  printf("intensity ops (NumPy / scikit-image; `ndforge run OP --help` lists their options):\n");
  for (size_t i = 0; i < NOPS; i++)
    if (ops[i].flags & OPF_INTENSITY) printf("  %-23s %s\n", ops[i].name, ops[i].summary);
  printf("linear filters (scipy.ndimage; computed in float64, the output in the input's\n"
         "dtype or --output-dtype, integers truncated as scipy):\n");
  for (size_t i = 0; i < NOPS; i++)
    if (ops[i].flags & OPF_FILTER) printf("  %-27s %s\n", ops[i].name, ops[i].summary);
  printf("skull stripping (a 3-D T1 MRI in; the brain mask out, bool, uint8 in NIfTI files):\n");
  for (size_t i = 0; i < NOPS; i++)
    if (ops[i].flags & OPF_BET) printf("  %-23s %s\n", ops[i].name, ops[i].summary);
  printf("N4 bias-field correction (ITK's N4; `ndforge run n4 --help` lists its options):\n"
         "  %-27s %s\n", "n4", "the input divided by its smooth multiplicative bias field");
  printf("interpolation (scipy.ndimage; `ndforge run zoom --help` lists their options):\n"
         "  zoom, shift, rotate, affine_transform, map_coordinates, spline_filter,\n"
         "  spline_filter1d, resample (a NIfTI volume to a voxel spacing)\n");
  printf("\nThe composite ops (opening to black_tophat) use the element, mode, cval and\n"
         "origin in every step; their arithmetic is NumPy's in the input dtype\n"
         "(integers wrap around, as in scipy).\n"
         "\noptions (scipy.ndimage names; `ndforge run OP --help` lists those of OP):\n"
         "  --size N[,N...]       grey, rank: flat box element size (one value or one\n"
         "                        per axis)\n"
         "  --footprint FILE      grey, rank: element shape, non-zero entries are in\n"
         "  --structure FILE      grey: non-flat element (values added/subtracted);\n"
         "                        binary: the element, non-zero entries are in\n"
         "                        (default generate_binary_structure(rank, 1));\n"
         "                        label: the connectivity, 3 per axis, symmetric\n"
         "  --origin N[,N...]     shift of the element centre\n"
         "  --mode MODE           grey, rank: reflect (default), constant, nearest,\n"
         "                        mirror, wrap, grid-mirror, grid-constant, grid-wrap\n"
         "  --cval X              grey, rank: value outside the image in constant mode\n"
         "                        (default 0)\n"
         "  --rank N              rank_filter (required): index in the sorted window of\n"
         "                        n values, -n..n-1 (negative counts from the end)\n"
         "  --percentile P        percentile_filter (required): -100..100 (P < 0 means\n"
         "                        P + 100)\n"
         "  --nan-policy propagate|omit  rank: propagate (default): a window holding NaN\n"
         "                        gives NaN; omit: NaNs are left out of the window\n"
         "  --algorithm A         grey: auto (default), direct, separable, vhgw or\n"
         "                        decomposed (same result; refused where not exact)\n"
         "  --algorithm auto|network|select|histogram|tile  rank: how the rank is selected\n"
         "                        (same results): a generated selection network (up to 27\n"
         "                        taps, medians up to 49), general selection, a sliding\n"
         "                        histogram (8-bit, boxes over 2 or more axes), or a sorted\n"
         "                        tile (boxes over the last 2 axes, up to 32 bits); refused\n"
         "                        where it does not apply; auto picks the fastest\n"
         "  --iterations N        binary: steps (default 1); N < 1 repeats until nothing\n"
         "                        changes\n"
         "  --mask FILE           binary: change only where FILE is non-zero\n"
         "  --border-value 0|1    binary: value outside the image (default 0)\n"
         "  --brute-force [true|false]  binary: accepted as scipy's; same results\n"
         "  --structure1 FILE     hit_or_miss: element that must fit the foreground\n"
         "  --structure2 FILE     hit_or_miss: element that must fit the background\n"
         "                        (default: NOT structure1)\n"
         "  --origin1 N[,N...]    hit_or_miss: shift of structure1 (default 0)\n"
         "  --origin2 N[,N...]    hit_or_miss: shift of structure2 (default: origin1)\n"
         "  --output-dtype DTYPE  label: dtype of the labels (default int32; uint8, int8,\n"
         "                        uint16, int16, uint32, float32, float64; bool holds one\n"
         "                        feature, scipy's npy_bool)\n"
         "  --sampling X[,X...]   edt, bf: voxel spacing (one value or one per spatial\n"
         "                        axis; default 1, or the NIfTI header's pixdim)\n"
         "  --metric METRIC       cdt: chessboard (default), taxicab/cityblock/manhattan;\n"
         "                        bf: euclidean (default), taxicab, chessboard\n"
         "                        (cdt --structure FILE: a 3x...x3 metric instead)\n"
         "  --indices FILE        distance transforms: also write the feature transform\n"
         "  --output-dtype DTYPE  edt: float64 (default) or float32 distances\n"
         "  --mask FILE           reconstruction (required): the mask (seed <= mask for\n"
         "                        dilation, seed >= mask for erosion)\n"
         "  --method dilation|erosion  reconstruction: dilation (default) or erosion\n"
         "  --footprint FILE      reconstruction: the neighbourhood, non-zero entries are\n"
         "                        in (default 3 along each spatial axis)\n"
         "  --offset N[,N...]     reconstruction: the footprint's centre (one value or\n"
         "                        one per spatial axis; default its middle)\n"
         "  --output-dtype DTYPE  reconstruction: float64 (default) or the seed's dtype\n"
         "  --sigma X[,X...]      Gaussian filters (required): standard deviation, one\n"
         "                        value or one per filtered axis, >= 0\n"
         "  --order N[,N...]      Gaussian filters: 0 smooths, k > 0 the k-th derivative\n"
         "  --truncate X          Gaussian filters: radius = int(truncate * sigma + 0.5)\n"
         "                        (default 4)\n"
         "  --radius N[,N...]     Gaussian filters: the kernel's radius instead\n"
         "  --axes N[,N...]       linear filters: the filtered axes (default: every\n"
         "                        spatial axis)\n"
         "  --axis N              1-D filters, sobel, prewitt: the axis (default -1)\n"
         "  --weights FILE        correlate, convolve (required): the kernel, one axis per\n"
         "                        filtered axis (1-D filters: one axis)\n"
         "  --output-dtype DTYPE  linear filters: the output's dtype (default the input's)\n"
         "  --bins N              histogram: equal-width bins (default 10) over --range\n"
         "                        LO,HI (default each image's min and max)\n"
         "  --edges E0,E1,...     histogram: the bin edges instead (NumPy's bins=array)\n"
         "  --weights FILE        histogram: a weight per voxel (counts become float64)\n"
         "  --density [true|false]  histogram: counts / bin width / the image's total\n"
         "  --edges-out FILE      histogram: also write the bin edges (float64)\n"
         "  --q Q[,Q...]          percentile (0..100), quantile (0..1), required\n"
         "  --lo X, --hi X        clip, window: the bounds; percentile_window: the two\n"
         "                        percentiles (e.g. 0.5 and 99.5)\n"
         "  --preset NAME         window_ct: brain, subdural, stroke, bone, lung,\n"
         "                        mediastinum, soft_tissue or liver (Hounsfield units)\n"
         "  --centre C, --width W window_ct: the window by its level and width (--center)\n"
         "  --out-min X, --out-max X  windows and normalizations: the target range\n"
         "                        (default 0, 1)\n"
         "  --mask FILE           normalize_zscore, equalize_hist: the voxels the\n"
         "                        statistics come from (non-zero = used)\n"
         "  --nbins N             equalize_hist: bins of float images (default 256)\n"
         "  --output-dtype DTYPE  intensity ops: float32 (default) or float64\n"
         "  --batch-dims N        leading axes that are independent images (default 0)\n"
         "  --batch-axis K        the axis (negative from the end) that holds independent\n"
         "                        images, e.g. 3 for the time points of a 4-D NIfTI: it is\n"
         "                        moved first (a view, no copy) and the op runs with\n"
         "                        --batch-dims 1; --axes and --axis still count the\n"
         "                        input's axes; the output keeps the input's axis order\n"
         "                        (outputs of another shape have it first)\n"
         "  -f F                  skull_strip: BET's fractional intensity threshold, 0..1\n"
         "                        (default 0.5; larger gives a smaller brain)\n"
         "  -g G                  skull_strip: BET's vertical gradient of -f along the\n"
         "                        third axis, -1..1 (default 0; positive: larger brain at\n"
         "                        the bottom, smaller at the top)\n"
         "  -r MM                 skull_strip: the initial brain radius in mm (default\n"
         "                        estimated)\n"
         "  -c X,Y,Z              skull_strip: the initial centre in voxels (default the\n"
         "                        intensity-weighted centre of gravity)\n"
         "  --sampling X[,X...]   skull_strip: mm per voxel (default the NIfTI pixdim)\n"
         "  --iterations N        skull_strip: surface updates per pass (default 1000)\n"
         "  --device cpu|cuda|auto  where to run (default auto: CUDA when there is a\n"
         "                        device, except cdt with --indices or --structure)\n"
         "  --cpu-threads N       the CPU backend's threads (default OpenMP's: OMP_NUM_THREADS,\n"
         "                        else one per core); the result does not depend on it\n"
         "  --tune NAME=VALUE     a kernel variant for this call (repeatable; ndforge\n"
         "                        tunables lists them)\n");
}

/* `ndforge run OP --help`: what OP is and the options it takes. */
static void op_help(const op_def *op) {
  printf("usage: ndforge run %s [options] INPUT OUTPUT\n\n%s: %s.\n", op->name, op->name,
         op->summary);
  printf("Output: %s.\nOptions:\n",
         op->flags & OPF_DISTANCE
             ? "the distances in scipy's dtype (edt float64, or float32 with --output-dtype;\n"
               "cdt int32; bf float64 or uint32);\n"
               "--indices FILE writes the feature transform (int32)"
         : op->flags & OPF_LABEL
             ? "labels 1..N, 0 for the background, int32 (or --output-dtype) in every format;\n"
               "prints \"num_features: N\" (one count per image with --batch-dims)"
         : op->flags & OPF_RECON ? "float64, or the seed's dtype with --output-dtype"
         : op->flags & OPF_BET ? "the brain mask, bool (uint8 in NIfTI files)"
         : op->flags & OPF_FILTER ? "the input's dtype, or --output-dtype (computed in float64)"
         : op->flags & OPF_INTENSITY
             ? "histogram: the counts, int64 (float64 with --weights or --density), shape\n"
               "batch + (nbins,), --edges-out FILE the bin edges (float64); percentile, quantile:\n"
               "float64 of shape batch + (nq,); clip: the input's dtype; equalize_hist:\n"
               "scikit-image's (float32 for float32, else float64); the others float32; all\n"
               "but histogram and the percentiles take --output-dtype"
         : op->flags & OPF_BINARY ? "bool (uint8 in NIfTI files)"
                                  : "the input's dtype");
  const optset shown = op->opts | O_DEVICE | O_CPU_THREADS | O_TUNE | (op->opts & O_BATCH_DIMS ? O_BATCH_AXIS : 0);
  for (size_t k = 0; k < NOPT_DEFS; k++)
    if (opt_defs[k].flag & shown)
      printf("  %s%s %s\n", dash(opt_defs[k].name), opt_defs[k].name, opt_defs[k].arg);
  if (op->required) {
    char list[256];
    printf("Required: %s.\n", format_opts(op->required, list, sizeof list));
  }
  if (op->flags & OPF_CPU_ONLY)
    printf("Runs on the CPU in this version (--device auto picks the CPU).\n");
  printf("See ndforge run --help for what the options mean.\n");
}

static int is_help(const char *s) { return strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0; }
/* --help or -h among argv[first..) before a "--". */
static int asks_help(int argc, char **argv, int first) {
  for (int i = first; i < argc && strcmp(argv[i], "--") != 0; i++)
    if (is_help(argv[i])) return 1;
  return 0;
}

void cli_move_axis(ndf_array *x, int from, int to) {
  if (from < 0 || to < 0 || from >= x->ndim || to >= x->ndim || x->ndim > NDF_MAX_NDIM) return;
  const int64_t n = x->shape[from], st = x->strides[from];
  for (int d = from; d < to; d++) {
    x->shape[d] = x->shape[d + 1];
    x->strides[d] = x->strides[d + 1];
  }
  for (int d = from; d > to; d--) {
    x->shape[d] = x->shape[d - 1];
    x->strides[d] = x->strides[d - 1];
  }
  x->shape[to] = n;
  x->strides[to] = st;
}

/* The input's axis that axis j of the array the op sees comes from. */
static int source_axis(const args *a, int j) {
  if (!(a->given & O_BATCH_AXIS)) return j;
  return j == 0 ? a->batch_axis : j <= a->batch_axis ? j - 1 : j;
}

/* The sampling and indices of a distance transform: --sampling, else a
 * NIfTI input's voxel spacing on the spatial axes (those after --batch-dims);
 * --indices gets a host int32 array of shape batch + (rank,) + spatial. */
static int setup_distance(const args *a, const ndfio_image *in, op_params *p, ndf_array *indices) {
  const ndf_array *x = &in->arr;
  double spacing[NDF_MAX_NDIM];
  p->nsampling = a->nsampling;
  memcpy(p->sampling, a->sampling, sizeof p->sampling);
  if (!(a->given & O_SAMPLING) && a->batch_dims >= 0 && a->batch_dims < x->ndim &&
      x->ndim - a->batch_dims <= NDF_MAX_SPATIAL && ndfio_nifti_spacing(in, spacing)) {
    p->nsampling = x->ndim - a->batch_dims;
    for (int d = 0; d < p->nsampling; d++) p->sampling[d] = spacing[source_axis(a, a->batch_dims + d)];
  }
  if (!a->indices) return 0;
  if (a->batch_dims < 0 || a->batch_dims >= x->ndim || x->ndim + 1 > NDF_MAX_NDIM) {
    errorf("--indices: an input of rank %d with --batch-dims %d has no feature transform", x->ndim,
           a->batch_dims);
    return -1;
  }
  int64_t shape[NDF_MAX_NDIM];
  for (int d = 0; d < a->batch_dims; d++) shape[d] = x->shape[d];
  shape[a->batch_dims] = x->ndim - a->batch_dims;
  for (int d = a->batch_dims; d < x->ndim; d++) shape[d + 1] = x->shape[d];
  if (cli_alloc("the indices", indices, NDF_INT32, x->ndim + 1, shape) != 0) return -1;
  p->indices = indices;
  return 0;
}

/* The output shape of histogram (batch + (nbins,)) and the percentiles (batch + (nq,));
 * ondim -1 (the input's) for the other intensity ops.  --edges-out gets a host
 * float64 array of shape batch + (nbins + 1,). */
static int setup_intensity(const op_def *op, const args *a, const ndf_array *x, op_params *p, int *ondim,
                           int64_t *oshape, ndf_array *edges) {
  const int hist = !strcmp(op->name, "histogram");
  *ondim = -1;
  if (!hist && strcmp(op->name, "percentile") && strcmp(op->name, "quantile")) return 0;
  const int nb = a->batch_dims;
  if (nb >= x->ndim) {
    errorf("--batch-dims %d: the input has %d axes", nb, x->ndim);
    return -1;
  }
  memcpy(oshape, x->shape, sizeof x->shape);
  *ondim = nb + 1;
  oshape[nb] = hist ? (a->nedges ? a->nedges - 1 : a->bins) : a->nq;
  if (!hist || !a->edges_out) return 0;
  int64_t eshape[NDF_MAX_NDIM];
  memcpy(eshape, oshape, sizeof eshape);
  eshape[nb] += 1;
  if (cli_alloc("the bin edges", edges, NDF_FLOAT64, nb + 1, eshape) != 0) return -1;
  p->indices = edges;
  return 0;
}

static int cmd_run(int argc, char **argv) {
  if (argc >= 3 && is_help(argv[2])) {
    run_help();
    return 0;
  }
  if (argc < 3 || argv[2][0] == '-') {
    errorf("usage: ndforge run OP [options] INPUT OUTPUT (see ndforge run --help)");
    return EXIT_USAGE;
  }
  if (ndf_cli_interp_is_op(argv[2])) return ndf_cli_interp(argc, argv); /* interpolation (cli_interp.c) */
  if (ndf_cli_n4_is_op(argv[2])) return ndf_cli_n4(argc, argv); /* N4 bias-field correction (cli_n4.c) */
  const op_def *op = find_op(argv[2]);
  if (!op) {
    unknown_op(argv[2]);
    return EXIT_USAGE;
  }
  for (int i = 3; i < argc && strcmp(argv[i], "--") != 0; i++) {
    if (is_help(argv[i])) {
      op_help(op);
      return 0;
    }
  }
  args a;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "run %s", op->name);
  const optset batch_axis = op->opts & O_BATCH_DIMS ? O_BATCH_AXIS : 0;
  int rc = parse_args(argc, argv, 3, op->opts | O_DEVICE | O_CPU_THREADS | O_TUNE | batch_axis, cmd, &a);
  if (rc) return rc;
  if ((a.given & O_BATCH_AXIS) && (a.given & O_BATCH_DIMS)) {
    errorf("'%s': --batch-axis and --batch-dims cannot be combined", cmd);
    return EXIT_USAGE;
  }
  if (a.npos != 2) {
    errorf("'%s' needs INPUT and OUTPUT, got %d file name%s", cmd, a.npos, a.npos == 1 ? "" : "s");
    return EXIT_USAGE;
  }
  if (check_algorithm(op, &a)) return EXIT_USAGE;
  optset missing = op->required & ~a.given;
  if (missing) {
    char list[256];
    errorf("'%s' needs %s", cmd, format_opts(missing, list, sizeof list));
    return EXIT_USAGE;
  }
  if (!strcmp(op->name, "window_ct") && !(a.given & O_PRESET) && (~a.given & (O_CENTRE | O_WIDTH))) {
    errorf("'%s' needs --preset NAME or --centre C --width W", cmd);
    return EXIT_USAGE;
  }
  /* the second output: the distance transforms' --indices, histogram's --edges-out */
  const char *second = op->flags & OPF_INTENSITY ? a.edges_out : a.indices;
  const char *inpath = a.pos[0], *outpath = a.pos[1];
  if (check_file_type(inpath, "input") || check_file_type(outpath, "output")) return EXIT_USAGE;
  if (second && check_file_type(second, op->flags & OPF_INTENSITY ? "bin edges" : "indices")) return EXIT_USAGE;
  /* --device auto: CUDA when there is a device and the op has CUDA kernels. */
  dev_choice device = a.device;
  if (device == DEV_AUTO && (op->flags & OPF_CPU_ONLY)) device = DEV_CPU;
  /* cdt on CUDA computes taxicab / chessboard distances only */
  if (device == DEV_AUTO && op->call == call_cdt && (a.indices || (a.given & O_STRUCTURE))) device = DEV_CPU;

  rc = EXIT_RUN;
  ndfio_image in, files[NFILES];
  ndf_array out, indices;
  ndf_ctx *ctx = NULL;
  ndf_device_type dev;
  op_params p;
  memset(&in, 0, sizeof in);
  memset(&out, 0, sizeof out);
  memset(&indices, 0, sizeof indices);
  int64_t *counts = NULL, nimg = 1;
  int ondim = -1; /* the output's rank and shape where they are not the input's (setup_intensity) */
  int64_t oshape[NDF_MAX_NDIM];
  if (load_elements(&a, files, &p) != 0) goto done;
  if (read_image(inpath, &in) != 0) goto done;
  if (a.given & O_BATCH_AXIS) {
    if (a.batch_axis < -in.arr.ndim || a.batch_axis >= in.arr.ndim) {
      errorf("--batch-axis %d: the input has %d axes", a.batch_axis, in.arr.ndim);
      goto done;
    }
    if (a.batch_axis < 0) a.batch_axis += in.arr.ndim;
    cli_move_axis(&in.arr, a.batch_axis, 0);
    a.batch_dims = 1;
    /* the files shaped like the input move with it: --mask, histogram's --weights
     * (one of another rank is left for the library to refuse) */
    const int like_input[2] = {F_MASK, op->flags & OPF_INTENSITY ? F_WEIGHTS : -1};
    for (int k = 0; k < 2; k++)
      if (like_input[k] >= 0 && files[like_input[k]].arr.ndim == in.arr.ndim && p.file[like_input[k]])
        cli_move_axis(&files[like_input[k]].arr, a.batch_axis, 0);
    /* --axes / --axis count the input's axes: renumbered for the moved view
     * (one out of range is left for the library to refuse) */
    for (int i = 0; (a.given & (O_AXES | O_AXIS)) && i < a.naxes; i++) {
      int64_t ax = a.axes[i] < 0 ? a.axes[i] + in.arr.ndim : a.axes[i];
      if (ax == a.batch_axis) {
        errorf("--%s: axis %lld is the --batch-axis", a.given & O_AXES ? "axes" : "axis", (long long)a.axes[i]);
        goto done;
      }
      if (ax >= 0 && ax < in.arr.ndim) a.axes[i] = ax < a.batch_axis ? ax + 1 : ax;
    }
  }
  if (op->flags & OPF_LABEL) {
    /* One count per image: the product of the batch axes (the library
     * checks --batch-dims; 1 entry when it is out of range). */
    for (int d = 0; d < a.batch_dims && a.batch_dims < in.arr.ndim; d++) {
      if (in.arr.shape[d] > 0 && nimg > INT64_MAX / 8 / in.arr.shape[d]) {
        errorf("out of memory for num_features");
        goto done;
      }
      nimg *= in.arr.shape[d];
    }
    if ((uint64_t)nimg > (uint64_t)SIZE_MAX / sizeof *counts ||
        !(counts = calloc(nimg > 0 ? (size_t)nimg : 1, sizeof *counts))) {
      errorf("out of memory for num_features");
      goto done;
    }
    p.num_features = counts;
  }
  if ((op->flags & (OPF_DISTANCE | OPF_BET)) && setup_distance(&a, &in, &p, &indices) != 0) goto done;
  if ((op->flags & OPF_INTENSITY) && setup_intensity(op, &a, &in.arr, &p, &ondim, oshape, &indices) != 0)
    goto done;
  if (open_device(device, &ctx, &dev) != NDF_OK) goto done;
  if (a.tune[0] && ndf_ctx_set_tunables(ctx, a.tune) != NDF_OK) {
    errorf("--tune: %s", ndf_errmsg(ctx));
    goto done;
  }
  if (run_op(ctx, dev, op, &in.arr, &p, output_dtype(op, &a, outpath, in.arr.dtype), ondim, oshape, &out) !=
      NDF_OK)
    goto done;
  if ((a.given & O_BATCH_AXIS) && ondim < 0) cli_move_axis(&out, 0, a.batch_axis); /* the input's axis order */
  char err[ERRLEN];
  ndfio_stage stage; /* both outputs or neither */
  ndfio_stage_init(&stage);
  if (ndfio_stage_write(&stage, outpath, &out, &in, err, sizeof err) != NDF_OK ||
      (p.indices && ndfio_stage_write(&stage, second, p.indices, NULL, err, sizeof err) != NDF_OK) ||
      ndfio_stage_commit(&stage, err, sizeof err) != NDF_OK) {
    ndfio_stage_abort(&stage);
    errorf("%s", err);
    goto done;
  }
  if (counts) { /* "num_features: 3", or "num_features: 3 0 5" per image */
    printf("num_features:");
    for (int64_t i = 0; i < nimg; i++) printf(" %lld", (long long)counts[i]);
    printf("\n");
  }
  rc = 0;
done:
  free(counts);
  host_free(&out);
  host_free(&indices);
  ndf_ctx_destroy(ctx);
  ndfio_image_free(&in);
  free_elements(files);
  return rc;
}

/* ------------------------------------------------------------------------ */
/* ndforge structure                                                         */

#define STRUCTURE_USAGE                                                                  \
  "usage: ndforge structure generate RANK CONNECTIVITY OUT | "                           \
  "ndforge structure iterate IN ITERATIONS OUT [--origin N[,N...]]"

/* scipy.ndimage.generate_binary_structure(RANK, CONNECTIVITY) into OUT. */
static int structure_generate(const args *a) {
  int rank, conn;
  const char *outpath = a->pos[2];
  if (parse_int_arg("RANK", a->pos[0], 1, NDF_MAX_SPATIAL, &rank) ||
      parse_int_arg("CONNECTIVITY", a->pos[1], INT32_MIN, INT32_MAX, &conn) ||
      check_file_type(outpath, "output"))
    return EXIT_USAGE;
  int64_t shape[NDF_MAX_SPATIAL];
  for (int d = 0; d < rank; d++) shape[d] = 3;
  ndf_array out;
  int rc = EXIT_RUN;
  char err[ERRLEN];
  if (cli_alloc("the structure", &out, binary_file_dtype(outpath), rank, shape) != 0) {
    /* cli_alloc said why */
  } else if (ndf_generate_binary_structure(rank, conn, &out) != NDF_OK) {
    errorf("%s", ndf_last_error());
  } else if (ndfio_write(outpath, &out, NULL, err, sizeof err) != NDF_OK) {
    errorf("%s", err);
  } else {
    rc = 0;
  }
  host_free(&out);
  return rc;
}

/* scipy.ndimage.iterate_structure(IN, ITERATIONS[, origin]) into OUT; prints
 * the scaled origin ("2,-2") when --origin is given. */
static int structure_iterate(const args *a) {
  int iterations;
  const char *inpath = a->pos[0], *outpath = a->pos[2];
  if (parse_int_arg("ITERATIONS", a->pos[1], INT32_MIN, INT32_MAX, &iterations) ||
      check_file_type(inpath, "input") || check_file_type(outpath, "output"))
    return EXIT_USAGE;
  ndfio_image in;
  ndf_array out;
  memset(&out, 0, sizeof out);
  int rc = EXIT_RUN;
  char err[ERRLEN];
  int64_t shape[NDF_MAX_NDIM], origin[NDF_MAX_SPATIAL];
  if (read_image(inpath, &in) != 0) return EXIT_RUN;
  /* The origin must be one an op accepts with IN (the scaled one then fits the
   * iterated structure): -(s/2) .. (s-1)/2 per axis, as `run` checks it. */
  const int check_origin = (a->given & O_ORIGIN) && (a->norigin == 1 || a->norigin == in.arr.ndim);
  for (int d = 0; check_origin && d < in.arr.ndim; d++) {
    int64_t o = a->origin[a->norigin == 1 ? 0 : d], sz = in.arr.shape[d];
    if (o < -(sz / 2) || o > (sz - 1) / 2) {
      errorf("'structure iterate': origin[%d]=%lld is outside the structure of size %lld (valid %lld..%lld)", d,
             (long long)o, (long long)sz, (long long)-(sz / 2), (long long)(sz - 1) / 2);
      goto done;
    }
  }
  if (ndf_iterate_structure_shape(&in.arr, iterations, shape) != NDF_OK) {
    errorf("%s", ndf_last_error());
    goto done;
  }
  /* The library bounds the result (NDF_MAX_STRUCTURE_ELEMENTS). */
  if (cli_alloc("the iterated structure", &out, binary_file_dtype(outpath), in.arr.ndim, shape) != 0) goto done;
  if (ndf_iterate_structure(&in.arr, iterations, &out, a->norigin, a->origin, origin) != NDF_OK) {
    errorf("%s", ndf_last_error());
    goto done;
  }
  if (ndfio_write(outpath, &out, &in, err, sizeof err) != NDF_OK) {
    errorf("%s", err);
    goto done;
  }
  if (a->given & O_ORIGIN) {
    for (int d = 0; d < in.arr.ndim; d++) printf("%s%lld", d ? "," : "", (long long)origin[d]);
    printf("\n");
  }
  rc = 0;
done:
  host_free(&out);
  ndfio_image_free(&in);
  return rc;
}

static int cmd_structure(int argc, char **argv) {
  if (argc < 3) {
    errorf(STRUCTURE_USAGE);
    return EXIT_USAGE;
  }
  const char *sub = argv[2];
  if (asks_help(argc, argv, 2)) {
    printf("usage: ndforge structure generate RANK CONNECTIVITY OUT\n"
           "       ndforge structure iterate IN ITERATIONS OUT [--origin N[,N...]]\n\n"
           "generate: scipy.ndimage.generate_binary_structure(RANK, CONNECTIVITY), RANK 1..%d\n"
           "iterate:  scipy.ndimage.iterate_structure(IN, ITERATIONS[, origin]); with\n"
           "          --origin, prints the scaled origin (e.g. 2,0) on stdout\n"
           "OUT is bool in .npy files, uint8 in NIfTI files.\n",
           NDF_MAX_SPATIAL);
    return 0;
  }
  int gen = strcmp(sub, "generate") == 0;
  if (!gen && strcmp(sub, "iterate") != 0) {
    errorf("unknown structure command '%s' (expected generate or iterate)", sub);
    return EXIT_USAGE;
  }
  args a;
  char cmd[32];
  snprintf(cmd, sizeof cmd, "structure %s", sub);
  int rc = parse_args(argc, argv, 3, gen ? 0 : O_ORIGIN, cmd, &a);
  if (rc) return rc;
  if (a.npos != 3) {
    errorf("'%s' needs %s, got %d argument%s", cmd,
           gen ? "RANK CONNECTIVITY OUT" : "IN ITERATIONS OUT", a.npos, a.npos == 1 ? "" : "s");
    return EXIT_USAGE;
  }
  return gen ? structure_generate(&a) : structure_iterate(&a);
}

/* ------------------------------------------------------------------------ */
/* ndforge info                                                              */

static void print_device(int ordinal, const ndf_ctx_info *info) {
  printf("device %d:    %s, compute capability %d.%d, %d SMs, %.1f GiB\n", ordinal,
         info->device_name, info->cc_major, info->cc_minor, info->sm_count,
         (double)info->total_mem / (1024.0 * 1024.0 * 1024.0));
}

static int cmd_info(int argc, char **argv) {
  if (asks_help(argc, argv, 2)) {
    printf("usage: ndforge info\n\nPrints the library's version and build, NVRTC, the CUDA driver, the devices\n"
           "and the kernel cache directory.  No options.\n");
    return 0;
  }
  args a;
  int rc = parse_args(argc, argv, 2, 0, "info", &a);
  if (rc) return rc;
  if (a.npos) {
    errorf("'info' takes no arguments");
    return EXIT_USAGE;
  }
  ndf_ctx *ctx = NULL;
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  char why[512] = "";
  if (ndf_ctx_create(&ctx, &o) != NDF_OK) {
    snprintf(why, sizeof why, " (%s)", ndf_last_error());
    if (make_ctx(&ctx, NDF_BACKEND_CPU, NULL) != NDF_OK) return EXIT_RUN;
  }
  ndf_ctx_info info;
  memset(&info, 0, sizeof info);
  if (ndf_ctx_get_info(ctx, &info) != NDF_OK) {
    errorf("%s", ndf_errmsg(ctx));
    ndf_ctx_destroy(ctx);
    return EXIT_RUN;
  }
  printf("ndforge %s (library %s)\n", NDF_VERSION_STRING, ndf_version());
  if (info.nvrtc_major > 0) printf("NVRTC:       %d.%d\n", info.nvrtc_major, info.nvrtc_minor);
  else printf("NVRTC:       not loaded\n");
  if (info.driver_version > 0)
    printf("CUDA driver: %d.%d\n", info.driver_version / 1000, (info.driver_version % 1000) / 10);
  else printf("CUDA driver: none\n");
  if (info.has_cuda) {
    print_device(0, &info);
    /* The API has no device count: open each next ordinal until one fails. */
    for (int d = 1; d < 64; d++) {
      ndf_ctx *c2 = NULL;
      ndf_ctx_options o2;
      ndf_ctx_options_init(&o2);
      o2.backend = NDF_BACKEND_CUDA;
      o2.device = d;
      o2.cache_disable = 1;
      if (ndf_ctx_create(&c2, &o2) != NDF_OK) break;
      ndf_ctx_info i2;
      memset(&i2, 0, sizeof i2);
      if (ndf_ctx_get_info(c2, &i2) == NDF_OK && i2.has_cuda) print_device(d, &i2);
      ndf_ctx_destroy(c2);
    }
  } else {
    printf("devices:     no CUDA device%s\n", why);
  }
  const char *dir = ndf_ctx_cache_dir(ctx);
  printf("cache:       %s\n", dir && *dir ? dir : "(disk cache off)");
  ndf_ctx_destroy(ctx);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* ndforge cache                                                             */

typedef struct list_state {
  size_t entries, bytes;
} list_state;

/* The value of the key line "<field> value", or NULL. */
static const char *key_field(const char *key, const char *field, int *len) {
  size_t n = strlen(field);
  for (const char *line = key; line && *line;) {
    const char *nl = strchr(line, '\n');
    if (strncmp(line, field, n) == 0 && line[n] == ' ') {
      *len = nl ? (int)(nl - line - (ptrdiff_t)n - 1) : (int)strlen(line + n + 1);
      return line + n + 1;
    }
    line = nl ? nl + 1 : NULL;
  }
  return NULL;
}

/* One line per entry: the kernel, target and slots of its key when the key
 * has them, else the key's first line. */
static int list_entry(const char *file, size_t bytes, const char *key, void *ud) {
  list_state *ls = ud;
  const char *k = key ? key : "";
  int lk = 0, lt = 0, lsl = 0;
  const char *kernel = key_field(k, "kernel", &lk), *target = key_field(k, "target", &lt),
             *slots = key_field(k, "slots", &lsl);
  if (kernel && target) {
    printf("%10zu  %s  %.*s %.*s %.*s\n", bytes, file, lk, kernel, lt, target, slots ? lsl : 0,
           slots ? slots : "");
  } else {
    const char *nl = strchr(k, '\n');
    printf("%10zu  %s  %.*s\n", bytes, file, nl ? (int)(nl - k) : (int)strlen(k), k);
  }
  ls->entries++;
  ls->bytes += bytes;
  return 0;
}

/* ---- cache warm: one function per family the registry gives one (gen/ops.lua's
 * warm); each calls the family's ndf_cache_warm_* with the op's options. */
typedef ndf_status (*warm_fn)(ndf_ctx *ctx, const char *arch, const char *op, const op_params *p,
                              int *compiled);

static ndf_status warm_grey(ndf_ctx *ctx, const char *arch, const char *op, const op_params *p,
                            int *compiled) {
  ndf_grey_options g;
  grey_options_from(p, &g);
  return ndf_cache_warm(ctx, arch, op, p->a->dtype, p->a->ndim, &g, compiled);
}

static ndf_status warm_rank(ndf_ctx *ctx, const char *arch, const char *op, const op_params *p,
                            int *compiled) {
  ndf_rank_options r;
  rank_options_from(p, &r);
  return ndf_cache_warm_rank(ctx, arch, op, p->a->dtype, p->a->ndim, p->a->rank, p->a->percentile, &r,
                             compiled);
}

static ndf_status warm_binary(ndf_ctx *ctx, const char *arch, const char *op, const op_params *p,
                              int *compiled) {
  ndf_binary_options b;
  binary_options_from(p, &b);
  return ndf_cache_warm_binary(ctx, arch, op, p->a->dtype, p->a->ndim, &b, compiled);
}

static ndf_status warm_hit_or_miss(ndf_ctx *ctx, const char *arch, const char *op, const op_params *p,
                                   int *compiled) {
  (void)op;
  ndf_hit_or_miss_options h;
  hit_or_miss_options_from(p, &h);
  return ndf_cache_warm_hit_or_miss(ctx, arch, p->a->dtype, p->a->ndim, &h, compiled);
}

static ndf_status warm_label(ndf_ctx *ctx, const char *arch, const char *op, const op_params *p, int *compiled) {
  (void)op;
  return ndf_cache_warm_label(ctx, arch, p->a->dtype, p->a->ndim, p->a->output_dtype, p->file[F_STRUCTURE],
                              p->a->batch_dims, compiled);
}

/* The distances' dtype is the one `run` would write (output_dtype); --indices
 * (a file name) asks for the feature transform's kernels too. */
static ndf_dtype output_dtype(const op_def *op, const args *a, const char *outpath, ndf_dtype in_dtype);
static ndf_status warm_distance(ndf_ctx *ctx, const char *arch, const char *op, const op_params *p,
                                int *compiled) {
  const args *a = p->a;
  ndf_distance_options o;
  ndf_distance_options_init(&o);
  o.nsampling = a->nsampling;
  memcpy(o.sampling, a->sampling, sizeof o.sampling);
  o.metric = a->metric;
  o.metric_structure = p->file[F_STRUCTURE];
  o.batch_dims = a->batch_dims;
  return ndf_cache_warm_distance(ctx, arch, op, a->dtype, a->ndim, &o, output_dtype(find_op(op), a, "x.npy", a->dtype),
                                 a->indices != NULL, compiled);
}

static ndf_status warm_ect(ndf_ctx *ctx, const char *arch, const char *op, const op_params *p, int *compiled) {
  ndf_ect_options o;
  ndf_ect_options_init(&o);
  o.construction = p->a->construction;
  o.weighted = p->a->weighted;
  o.batch_dims = p->a->batch_dims;
  return ndf_cache_warm_ect(ctx, arch, op, p->a->dtype, p->a->ndim, &o, compiled);
}

static ndf_status warm_skull_strip(ndf_ctx *ctx, const char *arch, const char *op, const op_params *p,
                                   int *compiled) {
  (void)op;
  return ndf_cache_warm_skull_strip(ctx, arch, p->a->dtype, compiled);
}

static ndf_status warm_reconstruction(ndf_ctx *ctx, const char *arch, const char *op, const op_params *p,
                                      int *compiled) {
  ndf_reconstruction_options o;
  reconstruction_options_from(p, &o);
  return ndf_cache_warm_reconstruction(ctx, arch, p->a->dtype, p->a->ndim,
                                       output_dtype(find_op(op), p->a, "x.npy", p->a->dtype), &o, compiled);
}

#define WARM_OP(name, warm, opts, req) {name, warm_##warm, opts, req},
static const struct warm_def {
  const char *name;
  warm_fn fn;
  optset opts;       /* O_* options it takes besides --arch, --dtype and --ndim */
  optset required;   /* those of opts it cannot warm without (--rank of rank_filter) */
} warm_ops[] = {NDF_OPS_WARM(WARM_OP)};
#define NWARM (sizeof warm_ops / sizeof warm_ops[0])

/* Why the registry's other ops cannot be warmed (gen/ops.lua's nowarm). */
#define NOWARM_OP(name, reason) {name, reason},
static const struct nowarm_def {
  const char *name, *reason;
} nowarm_ops[] = {NDF_OPS_NOWARM(NOWARM_OP)};
#undef NOWARM_OP

static const struct warm_def *find_warm(const char *name) {
  for (size_t i = 0; i < NWARM; i++)
    if (strcmp(warm_ops[i].name, name) == 0) return &warm_ops[i];
  return NULL;
}

static int cache_warm(ndf_ctx *ctx, const args *a);

static int cmd_cache(int argc, char **argv) {
  if (asks_help(argc, argv, 2)) {
    printf("usage: ndforge cache list\n"
           "       ndforge cache clear\n"
           "       ndforge cache warm [--arch sm_XY] OP... --dtype DTYPE [--ndim N] [op options]\n\n"
           "list: the kernels in the cache directory; clear: removes them; warm: compiles the\n"
           "kernels that OP (each of them) runs on inputs of --dtype and --ndim (default 3)\n"
           "with the op options given (those of `ndforge run OP --help` that choose kernels:\n"
           "--size, --footprint, --structure, --mode, --batch-dims, --output-dtype, ...), for\n"
           "the GPU of this machine or --arch; no GPU needed.  The directory: NDF_CACHE_DIR (default\n"
           "$XDG_CACHE_HOME/ndforge, then ~/.cache/ndforge).\n");
    return 0;
  }
  if (argc < 3) {
    errorf("usage: ndforge cache list|clear|warm ... (see ndforge --help)");
    return EXIT_USAGE;
  }
  const char *sub = argv[2];
  int warm = strcmp(sub, "warm") == 0;
  if (!warm && strcmp(sub, "list") != 0 && strcmp(sub, "clear") != 0) {
    errorf("unknown cache command '%s' (expected list, clear or warm)", sub);
    return EXIT_USAGE;
  }
  args a;
  char cmd[32];
  snprintf(cmd, sizeof cmd, "cache %s", sub);
  const optset warm_common = O_ARCH | O_DTYPE | O_NDIM;
  int rc = parse_args(argc, argv, 3, warm ? (NDF_OPS_WARM_OPTIONS | warm_common) : 0, cmd,
                      &a);
  if (rc) return rc;
  if (!warm && a.npos) {
    errorf("'%s' takes no arguments", cmd);
    return EXIT_USAGE;
  }
  if (warm) {
    if (a.npos == 0) {
      errorf("usage: ndforge cache warm [--arch sm_XY] OP... --dtype DTYPE [--ndim N] [op options]");
      return EXIT_USAGE;
    }
    for (int i = 0; i < a.npos; i++) {
      const struct warm_def *w = find_warm(a.pos[i]);
      const op_def *op = find_op(a.pos[i]); /* NULL for the ops of other commands (ect) */
      if (!w && !op && !is_op(a.pos[i])) {
        unknown_op(a.pos[i]);
        return EXIT_USAGE;
      }
      if (op && (op->flags & OPF_CPU_ONLY)) {
        errorf("'%s' has no GPU kernels to warm (it runs on the CPU in this version)", op->name);
        return EXIT_USAGE;
      }
      if (!w) { /* the registry gives it no warm function, and the reason */
        const char *why = "its kernels compile on first use";
        for (size_t k = 0; k < sizeof nowarm_ops / sizeof nowarm_ops[0]; k++)
          if (strcmp(nowarm_ops[k].name, a.pos[i]) == 0) why = nowarm_ops[k].reason;
        errorf("'%s' cannot be warmed in this version: %s", a.pos[i], why);
        return EXIT_USAGE;
      }
      optset extra = a.given & ~(w->opts | warm_common);
      for (size_t k = 0; extra && k < sizeof opt_defs / sizeof opt_defs[0]; k++)
        if (opt_defs[k].flag & extra) {
          errorf("'%s' does not take --%s", w->name, opt_defs[k].name);
          return EXIT_USAGE;
        }
      if (op && check_algorithm(op, &a)) return EXIT_USAGE;
      if (w->required & ~a.given) {
        char list[256];
        errorf("'cache warm %s' needs %s", w->name, format_opts(w->required & ~a.given, list, sizeof list));
        return EXIT_USAGE;
      }
    }
    if (!(a.given & O_DTYPE)) {
      errorf("'cache warm' needs --dtype (e.g. --dtype float32)");
      return EXIT_USAGE;
    }
  }
  ndf_ctx *ctx = NULL;
  if (make_ctx(&ctx, NDF_BACKEND_AUTO, NULL) != NDF_OK) return EXIT_RUN;
  const char *dir = ndf_ctx_cache_dir(ctx);
  rc = EXIT_RUN;
  if (!dir || !*dir) {
    const char *why = ndf_ctx_cache_problem(ctx);
    if (why && *why) errorf("the disk cache is off: %s", why);
    else errorf("the disk cache is off (NDF_CACHE_DISABLE is set)");
  } else if (warm) {
    rc = cache_warm(ctx, &a);
  } else if (strcmp(sub, "list") == 0) {
    list_state ls = {0, 0};
    if (ndf_cache_list(ctx, list_entry, &ls) != NDF_OK) {
      errorf("%s", ndf_errmsg(ctx));
    } else {
      printf("%zu entr%s, %zu bytes in %s\n", ls.entries, ls.entries == 1 ? "y" : "ies", ls.bytes,
             dir);
      rc = 0;
    }
  } else {
    int removed = 0;
    if (ndf_cache_clear(ctx, &removed) != NDF_OK) {
      errorf("%s", ndf_errmsg(ctx));
    } else {
      printf("removed %d entr%s from %s\n", removed, removed == 1 ? "y" : "ies", dir);
      rc = 0;
    }
  }
  ndf_ctx_destroy(ctx);
  return rc;
}

static int cache_warm(ndf_ctx *ctx, const args *a) {
  char arch[32];
  if (a->arch) {
    snprintf(arch, sizeof arch, "%s", a->arch);
  } else {
    ndf_ctx_info info;
    memset(&info, 0, sizeof info);
    if (!ndf_ctx_has_cuda(ctx) || ndf_ctx_get_info(ctx, &info) != NDF_OK || !info.has_cuda) {
      errorf("'cache warm' needs --arch (e.g. --arch sm_90) when there is no CUDA device");
      return EXIT_USAGE;
    }
    snprintf(arch, sizeof arch, "sm_%d%d", info.cc_major, info.cc_minor);
  }
  ndfio_image files[NFILES];
  op_params p;
  int rc = EXIT_RUN;
  if (load_elements(a, files, &p) == 0) {
    rc = 0;
    for (int i = 0; i < a->npos && rc == 0; i++) {
      const struct warm_def *w = find_warm(a->pos[i]); /* checked by cmd_cache */
      int compiled = 0;
      if (w->fn(ctx, arch, w->name, &p, &compiled) != NDF_OK) {
        errorf("%s", ndf_errmsg(ctx));
        rc = EXIT_RUN;
        break;
      }
      printf("%s %s %d-D %s: compiled %d kernel%s%s\n", w->name, ndf_dtype_name(a->dtype),
             a->ndim, arch, compiled, compiled == 1 ? "" : "s",
             compiled == 0 ? " (all cached)" : "");
    }
    if (rc == 0) printf("cache: %s\n", ndf_ctx_cache_dir(ctx));
  }
  free_elements(files);
  return rc;
}

/* ------------------------------------------------------------------------ */
/* ndforge demo                                                              */

#define CH2_PATH "/usr/share/mricron/templates/ch2.nii.gz"
#define GPU_REPS 50
#define CPU_REPS 10

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

/* A 181x217x181 float32 head-like phantom: nested ellipsoids plus noise,
 * the same on every run. */
static ndf_status make_phantom(ndfio_image *img) {
  memset(img, 0, sizeof *img);
  const int64_t shape[3] = {181, 217, 181};
  ndf_status s = host_alloc(&img->arr, NDF_FLOAT32, 3, shape);
  if (s != NDF_OK) return s;
  img->owned = img->arr.data;
  float *v = img->arr.data;
  static const struct { double cx, cy, cz, rx, ry, rz, val; } ell[] = {
      {90, 108, 90, 80, 100, 78, 100}, {90, 108, 90, 70, 90, 68, -40},
      {70, 100, 95, 18, 30, 20, 60},   {110, 100, 95, 18, 30, 20, 60},
      {90, 150, 70, 10, 12, 10, 90},   {90, 60, 110, 6, 6, 6, 120}};
  uint32_t rng = 2463534242u;
  for (int64_t x = 0; x < shape[0]; x++)
    for (int64_t y = 0; y < shape[1]; y++)
      for (int64_t z = 0; z < shape[2]; z++) {
        double val = 0;
        for (size_t e = 0; e < sizeof ell / sizeof ell[0]; e++) {
          double dx = (x - ell[e].cx) / ell[e].rx, dy = (y - ell[e].cy) / ell[e].ry,
                 dz = (z - ell[e].cz) / ell[e].rz;
          if (dx * dx + dy * dy + dz * dz <= 1) val += ell[e].val;
        }
        rng ^= rng << 13;
        rng ^= rng >> 17;
        rng ^= rng << 5;
        v[(x * shape[1] + y) * shape[2] + z] = (float)(val + (rng % 2001) / 200.0 - 5.0);
      }
  return NDF_OK;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

static int mkdir_p(const char *dir) {
  char buf[4096];
  if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf) {
    errno = ENAMETOOLONG;
    return -1;
  }
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
  struct stat st;
  if (stat(buf, &st) != 0) return -1;
  if (!S_ISDIR(st.st_mode)) {
    errno = ENOTDIR;
    return -1;
  }
  return 0;
}

/* One timed call on device arrays: op, then wait for the GPU. */
static ndf_status timed_call(ndf_ctx *ctx, const op_def *op, const ndf_array *in, ndf_array *out,
                             const op_params *p, double *ms) {
  double t0 = now_ms();
  ndf_status s = op->call(op, ctx, in, out, p);
  if (s == NDF_OK) s = ndf_ctx_synchronize(ctx);
  *ms = now_ms() - t0;
  if (s != NDF_OK) errorf("%s: %s", op->name, ndf_errmsg(ctx));
  return s;
}

typedef struct demo_op {
  const op_def *op;
  double first_ms, disk_ms, steady_ms;
  ndf_array result; /* host copy of the result */
} demo_op;

/* Times the ops in a context on cache_dir: the first call of each (cold
 * or disk hit), then, when reps > 0, the median of reps further calls.
 * Results are downloaded into d[i].result when keep is set. */
static ndf_status time_ops(ndf_backend backend, const char *cache_dir, const ndf_array *in,
                           const op_params *p, demo_op *d, int nd, int disk, int reps,
                           int keep, ndf_cache_stats *stats) {
  ndf_ctx *ctx = NULL;
  ndf_status s = make_ctx(&ctx, backend, cache_dir);
  if (s != NDF_OK) return s;
  ndf_device_type dev = ndf_ctx_has_cuda(ctx) ? NDF_DEVICE_CUDA : NDF_DEVICE_CPU;
  ndf_array din, dout;
  memset(&din, 0, sizeof din);
  memset(&dout, 0, sizeof dout);
  double *t = reps > 0 ? malloc(sizeof *t * (size_t)reps) : NULL;
  if (reps > 0 && !t) {
    s = NDF_ENOMEM;
    errorf("out of memory");
    goto done;
  }
  if (dev == NDF_DEVICE_CUDA) {
    s = ndf_array_alloc(ctx, &din, NDF_DEVICE_CUDA, in->dtype, in->ndim, in->shape);
    if (s == NDF_OK) s = ndf_array_alloc(ctx, &dout, NDF_DEVICE_CUDA, in->dtype, in->ndim, in->shape);
    if (s == NDF_OK) s = ndf_array_copy(ctx, &din, in);
    if (s == NDF_OK) s = ndf_ctx_synchronize(ctx);
  } else {
    din = *in;
    s = host_alloc(&dout, in->dtype, in->ndim, in->shape);
  }
  if (s != NDF_OK) {
    errorf("%s", dev == NDF_DEVICE_CUDA ? ndf_errmsg(ctx) : "out of memory for the output");
    goto done;
  }
  for (int i = 0; i < nd && s == NDF_OK; i++) {
    double first;
    if ((s = timed_call(ctx, d[i].op, &din, &dout, p, &first)) != NDF_OK) break;
    if (disk) d[i].disk_ms = first;
    else d[i].first_ms = first;
    for (int r = 0; r < reps && s == NDF_OK; r++) s = timed_call(ctx, d[i].op, &din, &dout, p, &t[r]);
    if (s != NDF_OK) break;
    if (reps > 0) {
      qsort(t, (size_t)reps, sizeof *t, cmp_double);
      d[i].steady_ms = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
    }
    if (keep) {
      if ((s = host_alloc(&d[i].result, in->dtype, in->ndim, in->shape)) != NDF_OK) {
        errorf("out of memory");
        break;
      }
      s = ndf_array_copy(ctx, &d[i].result, &dout);
      if (s == NDF_OK) s = ndf_ctx_synchronize(ctx);
      if (s != NDF_OK) errorf("%s", ndf_errmsg(ctx));
    }
  }
  if (stats) ndf_ctx_cache_stats(ctx, stats);
done:
  free(t);
  if (dev == NDF_DEVICE_CUDA) {
    ndf_array_free(ctx, &din);
    ndf_array_free(ctx, &dout);
  } else {
    host_free(&dout);
  }
  ndf_ctx_destroy(ctx);
  return s;
}

static int cmd_demo(int argc, char **argv) {
  if (asks_help(argc, argv, 2)) {
    printf("usage: ndforge demo [--out DIR] [--device cpu|cuda|auto] [--cpu-threads N]\n\n"
           "Erodes and dilates an MRI volume,\n  %s (Debian's mricron-data),\n"
           "or a phantom without it, with grey_erosion and grey_dilation, size 3, mode reflect;\n"
           "prints the timings (on a GPU: the cold compile, the disk cache and the steady state,\n"
           "and the result compared with the CPU backend's) and writes both results to DIR.\n\n"
           "  --out DIR              where the results go (default ndforge-demo)\n"
           "  --device cpu|cuda|auto auto (default): CUDA when there is a device\n"
           "  --cpu-threads N        the CPU backend's threads (default OpenMP's)\n",
           CH2_PATH);
    return 0;
  }
  args a;
  int rc = parse_args(argc, argv, 2, O_OUT | O_DEVICE | O_CPU_THREADS, "demo", &a);
  if (rc) return rc;
  if (a.npos) {
    errorf("'demo' takes no file names (use --out DIR)");
    return EXIT_USAGE;
  }
  const char *outdir = a.out ? a.out : "ndforge-demo";
  rc = EXIT_RUN;
  ndfio_image img;
  char desc[128], tmpl[] = "/tmp/ndforge-demo-cache-XXXXXX";
  char *cache = NULL;
  int nifti = 0;
  demo_op d[2] = {{find_op("grey_dilation"), 0, 0, 0, {0}}, {find_op("grey_erosion"), 0, 0, 0, {0}}};
  ndf_array cpu_res[2];
  memset(cpu_res, 0, sizeof cpu_res);
  memset(&img, 0, sizeof img);

  /* Which device: ask a context, as `run` does. */
  ndf_ctx *probe = NULL;
  ndf_device_type dev;
  if (open_device(a.device, &probe, &dev) != NDF_OK) return EXIT_RUN;
  ndf_ctx_info info;
  memset(&info, 0, sizeof info);
  if (dev == NDF_DEVICE_CUDA && ndf_ctx_get_info(probe, &info) != NDF_OK) {
    errorf("%s", ndf_errmsg(probe));
    ndf_ctx_destroy(probe);
    return EXIT_RUN;
  }
  ndf_ctx_destroy(probe);

  if (access(CH2_PATH, R_OK) == 0) {
    if (read_image(CH2_PATH, &img) != 0) goto done;
    nifti = 1;
    printf("input:   %s (%s)\n", CH2_PATH, describe(&img.arr, desc, sizeof desc));
  } else {
    if (make_phantom(&img) != NDF_OK) {
      errorf("out of memory for the phantom");
      goto done;
    }
    printf("input:   phantom, %s ellipsoids with noise (%s not found)\n",
           describe(&img.arr, desc, sizeof desc), CH2_PATH);
  }
  args ga;
  memset(&ga, 0, sizeof ga);
  ga.nsize = 1;
  ga.size[0] = 3;
  ga.mode = NDF_MODE_REFLECT;
  op_params p;
  memset(&p, 0, sizeof p);
  p.a = &ga;

  if (dev == NDF_DEVICE_CUDA) {
    printf("device:  %s (sm_%d%d)\n", info.device_name, info.cc_major, info.cc_minor);
    printf("ops:     grey_dilation, grey_erosion with size 3, mode reflect\n\n");
    cache = mkdtemp(tmpl);
    if (!cache) {
      errorf("cannot make a temporary cache directory: %s", strerror(errno));
      goto done;
    }
    ndf_cache_stats cold, warm;
    memset(&cold, 0, sizeof cold);
    memset(&warm, 0, sizeof warm);
    if (time_ops(NDF_BACKEND_CUDA, cache, &img.arr, &p, d, 2, 0, 0, 1, &cold) != NDF_OK) goto done;
    if (time_ops(NDF_BACKEND_CUDA, cache, &img.arr, &p, d, 2, 1, GPU_REPS, 0, &warm) != NDF_OK)
      goto done;
    /* The CPU backend is the reference. */
    ndf_ctx *cpu = NULL;
    if (make_ctx(&cpu, NDF_BACKEND_CPU, NULL) != NDF_OK) goto done;
    int same = 1;
    for (int i = 0; i < 2; i++) {
      if (run_op(cpu, NDF_DEVICE_CPU, d[i].op, &img.arr, &p, img.arr.dtype, -1, NULL, &cpu_res[i]) !=
          NDF_OK) {
        ndf_ctx_destroy(cpu);
        goto done;
      }
      same &= memcmp(cpu_res[i].data, d[i].result.data, array_bytes(&cpu_res[i])) == 0;
    }
    ndf_ctx_destroy(cpu);
    printf("%-15s %14s %12s %12s\n", "", "cold compile", "disk cache", "steady");
    for (int i = 0; i < 2; i++)
      printf("%-15s %11.1f ms %9.2f ms %9.3f ms\n", d[i].op->name, d[i].first_ms, d[i].disk_ms,
             d[i].steady_ms);
    printf("(first call in a new cache, first call in a new context on that cache, median of %d)\n",
           GPU_REPS);
    printf("kernels: %llu compiled cold, %llu loaded from disk, %llu compiled on the second run\n",
           (unsigned long long)cold.compiles, (unsigned long long)warm.disk_hits,
           (unsigned long long)warm.compiles);
    printf("GPU == CPU: %s (results compared byte for byte)\n", same ? "yes" : "NO");
    if (!same) {
      errorf("the GPU result differs from the CPU result");
      goto done;
    }
  } else {
    printf("device:  CPU backend (%s)\n", a.device == DEV_CPU ? "--device cpu" : "no CUDA device");
    printf("ops:     grey_dilation, grey_erosion with size 3, mode reflect\n\n");
    if (time_ops(NDF_BACKEND_CPU, NULL, &img.arr, &p, d, 2, 0, CPU_REPS, 1, NULL) != NDF_OK)
      goto done;
    printf("%-15s %12s %12s\n", "", "first call", "steady");
    for (int i = 0; i < 2; i++)
      printf("%-15s %9.1f ms %9.1f ms\n", d[i].op->name, d[i].first_ms, d[i].steady_ms);
    printf("(steady: median of %d calls)\n", CPU_REPS);
  }

  if (mkdir_p(outdir) != 0) {
    errorf("cannot create '%s': %s", outdir, strerror(errno));
    goto done;
  }
  const char *stem = nifti ? "ch2" : "phantom", *ext = nifti ? ".nii.gz" : ".npy";
  char path[2][4096], err[ERRLEN];
  ndfio_stage stage; /* both results or neither */
  ndfio_stage_init(&stage);
  ndf_status ws = NDF_OK;
  for (int i = 0; i < 2 && ws == NDF_OK; i++) {
    snprintf(path[i], sizeof path[i], "%s/%s_%s%s", outdir, stem, i ? "eroded" : "dilated", ext);
    ws = ndfio_stage_write(&stage, path[i], &d[i].result, &img, err, sizeof err);
  }
  if (ws != NDF_OK || ndfio_stage_commit(&stage, err, sizeof err) != NDF_OK) {
    ndfio_stage_abort(&stage);
    errorf("%s", err);
    goto done;
  }
  printf("wrote:   %s %s\n", path[0], path[1]);
  rc = 0;
done:
  if (cache && nftw(cache, rm_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
    fprintf(stderr, "ndforge: warning: could not remove '%s'\n", cache);
  for (int i = 0; i < 2; i++) {
    host_free(&d[i].result);
    host_free(&cpu_res[i]);
  }
  ndfio_image_free(&img);
  return rc;
}

/* ------------------------------------------------------------------------ */
/* main                                                                      */

/* ------------------------------------------------------------------------ */
/* ndforge ecc                                                               */

#define ECC_USAGE                                                                         \
  "usage: ndforge ecc INPUT OUT.npy [--thresholds T | --values V.npy] [--range LO,HI]\n" \
  "       [--construction V|T] [--batch-dims N] [--device cpu|cuda|auto]\n"              \
  "       [--thresholds-out TH.npy]"

static void ecc_help(void) {
  printf("%s\n\n"
         "Euler characteristic curve of the sublevel-set filtration {f <= t} of a 2-D or\n"
         "3-D image (float32, float64, uint8 or uint16; no NaN) as a cubical complex.\n"
         "OUT.npy is int64 of shape (batch..., T): chi(t_k), the cells of even minus odd\n"
         "dimension whose filtration value is <= t_k.\n\n"
         "  --construction V|T   V (default): voxels are vertices, a cell enters at the max\n"
         "                       of its vertices ({f <= t} 4-/6-connected); T: voxels are\n"
         "                       top cells, a face enters at the min of its top cells\n"
         "                       (8-/26-connected)\n"
         "  --thresholds T       T >= 2 thresholds lo + (hi-lo)*k/(T-1), k = 0..T-1\n"
         "                       (default 256); [lo, hi] = [min, max] of the whole input\n"
         "  --range LO,HI        [lo, hi] instead of [min, max]\n"
         "  --values V.npy       the thresholds themselves (1-D float32/float64, any order)\n"
         "  --batch-dims N       leading axes that are independent images (default 0)\n"
         "  --device cpu|cuda|auto  auto (default): cuda when there is a GPU, else cpu\n"
         "  --cpu-threads N      the CPU backend's threads (default OpenMP's)\n"
         "  --thresholds-out TH.npy  write the T thresholds used (float64)\n",
         ECC_USAGE);
}

int parse_long_arg(const char *opt, const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (end == s || *end || errno || v < lo || v > hi) {
    errorf("bad value '%s' for --%s (expected an integer in [%ld, %ld])", s, opt, lo, hi);
    return -1;
  }
  *out = v;
  return 0;
}

int parse_size_arg(const char *opt, const char *s, size_t *out) {
  char *end;
  errno = 0;
  double v = s[0] >= '0' && s[0] <= '9' && !strpbrk(s, "xX") ? strtod(s, &end) : -1; /* no hex */
  double unit = 1;
  if (v >= 0 && !errno) {
    static const char units[] = "KMGT";
    /* end[0] & ~0x20 is 0 for a space too, which strchr would find as the terminator */
    const char *u = end[0] & ~0x20 ? strchr(units, end[0] & ~0x20) : NULL;
    if (u) {
      for (const char *k = units; k <= u; k++) unit *= 1024;
      end++;
      if (*end == 'i') end++;
      if ((*end & ~0x20) == 'B') end++;
    } else if ((*end & ~0x20) == 'B') {
      end++;
    }
  }
  const double bytes = v * unit;
  if (!(v >= 0) || errno || *end || !(bytes >= 1) || bytes >= 18446744073709551616.0 || bytes > (double)SIZE_MAX) {
    errorf("bad value '%s' for --%s (expected a positive size: bytes, or a number with K, M, G or T, e.g. 512M)",
           s, opt);
    return -1;
  }
  *out = (size_t)bytes;
  return 0;
}

int parse_double_arg(const char *opt, const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end || errno || !isfinite(v)) {
    errorf("bad value '%s' for --%s (expected a finite number)", s, opt);
    return -1;
  }
  *out = v;
  return 0;
}

int parse_list_arg(const char *opt, const char *s, double *v, int max) {
  int n = 0;
  for (;;) {
    char *end;
    errno = 0;
    const double x = strtod(s, &end);
    if (end == s || errno || !isfinite(x) || n == max || (*end && *end != ',')) {
      errorf("bad value '%s' for --%s (expected up to %d numbers separated by commas)", s, opt, max);
      return -1;
    }
    v[n++] = x;
    if (!*end) return n;
    s = end + 1;
  }
}

int parse_range_arg(const char *s, double *lo, double *hi) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", s);
  char *comma = strchr(buf, ',');
  if (!comma) {
    errorf("bad value '%s' for --range (expected LO,HI)", s);
    return -1;
  }
  *comma = '\0';
  if (parse_double_arg("range", buf, lo) || parse_double_arg("range", comma + 1, hi)) return -1;
  if (!(*lo <= *hi)) {
    errorf("bad value '%s' for --range (LO must be <= HI)", s);
    return -1;
  }
  return 0;
}

static int cmd_ecc(int argc, char **argv) {
  const char *pos[2] = {NULL, NULL}, *values_path = NULL, *th_out = NULL;
  int npos = 0, batch_dims = 0, have_T = 0;
  dev_choice device = DEV_AUTO;
  ndf_ecc_options opt;
  ndf_ecc_options_init(&opt);
  for (int i = 2; i < argc; i++) {
    const char *arg = argv[i];
    if (is_help(arg)) {
      ecc_help();
      return 0;
    }
    if (arg[0] != '-' || arg[1] == '\0') {
      if (npos == 2) {
        errorf("'ecc' needs INPUT and OUT.npy, got a third file name '%s'", arg);
        return EXIT_USAGE;
      }
      pos[npos++] = arg;
      continue;
    }
    const char *name = arg + 2, *val = NULL;
    char key[64];
    if (strncmp(arg, "--", 2) != 0) {
      errorf("unknown option '%s' for 'ecc' (see ndforge ecc --help)", arg);
      return EXIT_USAGE;
    }
    const char *eq = strchr(name, '=');
    size_t klen = eq ? (size_t)(eq - name) : strlen(name);
    if (klen >= sizeof key) klen = sizeof key - 1;
    memcpy(key, name, klen);
    key[klen] = '\0';
    static const char *known[] = {"thresholds", "values", "range", "construction", "batch-dims", "device",
                                  "thresholds-out", "cpu-threads"};
    int k = -1;
    for (int j = 0; j < (int)(sizeof known / sizeof known[0]); j++)
      if (!strcmp(key, known[j])) k = j;
    if (k < 0) {
      errorf("unknown option '--%s' for 'ecc' (see ndforge ecc --help)", key);
      return EXIT_USAGE;
    }
    if (eq) val = eq + 1;
    else if (i + 1 < argc) val = argv[++i];
    else {
      errorf("option '--%s' needs a value", key);
      return EXIT_USAGE;
    }
    switch (k) {
      case 0: {
        int T;
        if (parse_int("thresholds", val, 2, 1 << 30, &T)) return EXIT_USAGE;
        opt.nthresholds = T;
        have_T = 1;
        break;
      }
      case 1: values_path = val; break;
      case 2:
        if (parse_range_arg(val, &opt.range_lo, &opt.range_hi)) return EXIT_USAGE;
        opt.has_range = 1;
        break;
      case 3:
        if (ndf_ecc_construction_from_name(val, &opt.construction) != NDF_OK) {
          errorf("bad value '%s' for --construction (expected V or T)", val);
          return EXIT_USAGE;
        }
        break;
      case 4:
        if (parse_int("batch-dims", val, 0, NDF_MAX_NDIM - 1, &batch_dims)) return EXIT_USAGE;
        break;
      case 5: {
        args tmp;
        memset(&tmp, 0, sizeof tmp);
        if (opt_device(&tmp, val)) return EXIT_USAGE;
        device = tmp.device;
        break;
      }
      case 6: th_out = val; break;
      case 7:
        if (cli_cpu_threads_arg(val)) return EXIT_USAGE;
        break;
    }
  }
  if (npos != 2) {
    errorf("'ecc' needs INPUT and OUT.npy, got %d file name%s (%s)", npos, npos == 1 ? "" : "s", ECC_USAGE);
    return EXIT_USAGE;
  }
  if (values_path && (have_T || opt.has_range)) {
    errorf("--values gives the thresholds: it goes without --thresholds and --range");
    return EXIT_USAGE;
  }
  if (check_file_type(pos[0], "input")) return EXIT_USAGE;
  if (ndfio_format_of(pos[1]) != NDFIO_NPY || (values_path && ndfio_format_of(values_path) != NDFIO_NPY) ||
      (th_out && ndfio_format_of(th_out) != NDFIO_NPY)) {
    errorf("'ecc' writes and reads thresholds and curves as .npy files (OUT.npy, V.npy, TH.npy)");
    return EXIT_USAGE;
  }
  opt.batch_dims = batch_dims;

  int rc = EXIT_RUN;
  ndfio_image in, vals;
  memset(&in, 0, sizeof in);
  memset(&vals, 0, sizeof vals);
  ndf_array out, th, din, dout;
  memset(&out, 0, sizeof out);
  memset(&th, 0, sizeof th);
  memset(&din, 0, sizeof din);
  memset(&dout, 0, sizeof dout);
  ndf_ctx *ctx = NULL;
  char err[ERRLEN];
  if (read_image(pos[0], &in) != 0) goto done;
  if (values_path) {
    if (read_image(values_path, &vals) != 0) goto done;
    opt.values = &vals.arr;
  }
  /* auto: CUDA when the context has a device */
  if (make_ctx(&ctx, backend_of(device), NULL) != NDF_OK) goto done;
  if (device == DEV_AUTO) device = ndf_ctx_has_cuda(ctx) ? DEV_CUDA : DEV_CPU;
  int64_t T = values_path ? (vals.arr.ndim == 1 ? vals.arr.shape[0] : 0) : opt.nthresholds;
  int64_t oshape[NDF_MAX_NDIM];
  int ond = batch_dims + 1;
  if (batch_dims >= in.arr.ndim) ond = 1; /* the library rejects --batch-dims */
  for (int d = 0; d < ond - 1; d++) oshape[d] = in.arr.shape[d];
  oshape[ond - 1] = T;
  if (cli_alloc("the output", &out, NDF_INT64, ond, oshape) != 0) goto done;
  ndf_status s;
  if (device == DEV_CUDA) {
    s = ndf_array_alloc(ctx, &din, NDF_DEVICE_CUDA, in.arr.dtype, in.arr.ndim, in.arr.shape);
    if (s == NDF_OK) s = ndf_array_alloc(ctx, &dout, NDF_DEVICE_CUDA, NDF_INT64, ond, oshape);
    if (s == NDF_OK) s = ndf_array_copy(ctx, &din, &in.arr);
    if (s == NDF_OK) s = ndf_euler_characteristic_curve(ctx, &din, &dout, &opt);
    if (s == NDF_OK) s = ndf_array_copy(ctx, &out, &dout);
    if (s == NDF_OK) s = ndf_ctx_synchronize(ctx);
  } else {
    s = ndf_euler_characteristic_curve(ctx, &in.arr, &out, &opt);
  }
  if (s != NDF_OK) {
    errorf("%s", ndf_errmsg(ctx));
    goto done;
  }
  if (th_out) {
    if (cli_alloc("the thresholds", &th, NDF_FLOAT64, 1, &T) != 0) goto done;
    if (ndf_ecc_thresholds(ctx, &in.arr, &opt, th.data, T) != NDF_OK) {
      errorf("%s", ndf_errmsg(ctx));
      goto done;
    }
  }
  ndfio_stage stage; /* the curves and the thresholds, or neither */
  ndfio_stage_init(&stage);
  if (ndfio_stage_write(&stage, pos[1], &out, NULL, err, sizeof err) != NDF_OK ||
      (th_out && ndfio_stage_write(&stage, th_out, &th, NULL, err, sizeof err) != NDF_OK) ||
      ndfio_stage_commit(&stage, err, sizeof err) != NDF_OK) {
    ndfio_stage_abort(&stage);
    errorf("%s", err);
    goto done;
  }
  rc = 0;
done:
  if (ctx) {
    ndf_array_free(ctx, &din);
    ndf_array_free(ctx, &dout);
  }
  host_free(&out);
  host_free(&th);
  ndf_ctx_destroy(ctx);
  ndfio_image_free(&in);
  ndfio_image_free(&vals);
  return rc;
}

/* ------------------------------------------------------------------------ */
/* ndforge metrics                                                           */

static const char *metrics_usage =
    "usage: ndforge metrics METRIC IMAGE0 IMAGE1 [options]\n\n"
    "Compares two images of one shape (.npy, .nii, .nii.gz; any dtypes) and prints\n"
    "the value, or with --batch-dims one value per image, one per line in C order\n"
    "(\"%.17g\"; inf and nan as C prints them).  METRIC (skimage.metrics):\n"
    "  mse        mean_squared_error\n"
    "  nrmse      normalized_root_mse (IMAGE0 is image_true)\n"
    "  psnr       peak_signal_noise_ratio (IMAGE0 is image_true)\n"
    "  ssim       structural_similarity (the mean; --full FILE writes the map)\n"
    "  dice       2|A&B| / (|A| + |B|) of the non-zero masks (1 when both are empty)\n"
    "  jaccard    |A&B| / |A|B| (1 when both are empty)\n"
    "  hausdorff  hausdorff_distance of the non-zero points\n\n"
    "options:\n"
    "  --batch-dims N        leading axes that are independent images\n"
    "  --data-range R        psnr, ssim (default: from the dtype, as scikit-image)\n"
    "  --normalization N     nrmse: euclidean (default), min-max, mean\n"
    "  --percentile Q        hausdorff: in (0, 100] (default 100; 95 = HD95)\n"
    "  --sampling S[,S...]   hausdorff: voxel spacing (one value or one per axis;\n"
    "                        default the NIfTI pixdim of IMAGE0, else 1)\n"
    "  --win-size N          ssim: odd window (default 7, or from sigma)\n"
    "  --gaussian-weights    ssim: Gaussian window (sigma 1.5, truncate 3.5)\n"
    "  --sigma S, --K1 K, --K2 K   ssim constants (defaults 1.5, 0.01, 0.03)\n"
    "  --population-covariance     ssim: divide by N, not N - 1\n"
    "  --full FILE           ssim: write the SSIM map (float32 for float32 IMAGE0)\n"
    "  --device cpu|cuda|auto  where to run (default auto)\n"
    "  --cpu-threads N       the CPU backend's threads (default OpenMP's: OMP_NUM_THREADS, else the cores)\n";

/* The metrics of the registry (family metrics): METRIC is an op's short name (its test name). */
#define METRIC_ROW(id, name, short_name, entry, composite) {short_name, name},
static const struct metric_row {
  const char *short_name, *name;
} metric_rows[] = {NDF_OPS_METRICS(METRIC_ROW)};
#undef METRIC_ROW
#define NMETRICS (sizeof metric_rows / sizeof metric_rows[0])

static int cmd_metrics(int argc, char **argv) {
  const char *pos[3], *full_path = NULL, *metric = NULL;
  int npos = 0, have_sampling = 0;
  dev_choice dev = DEV_AUTO;
  ndf_metrics_options mo;
  ndf_metrics_options_init(&mo);
  ndf_ssim_options so;
  ndf_ssim_options_init(&so);
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(metrics_usage, stdout);
      return 0;
    }
    if (strncmp(a, "--", 2) != 0) {
      if (npos == 3) {
        errorf("metrics: unexpected argument '%s' (see ndforge metrics --help)", a);
        return EXIT_USAGE;
      }
      pos[npos++] = a;
      continue;
    }
    if (strcmp(a, "--gaussian-weights") == 0) {
      so.gaussian_weights = 1;
      continue;
    }
    if (strcmp(a, "--population-covariance") == 0) {
      so.use_sample_covariance = 0;
      continue;
    }
    if (i + 1 >= argc) {
      errorf("%s: missing value", a);
      return EXIT_USAGE;
    }
    const char *v = argv[++i];
    long l;
    double d;
    if (strcmp(a, "--batch-dims") == 0) {
      if (parse_long_arg(a + 2, v, 0, NDF_MAX_NDIM - 1, &l)) return EXIT_USAGE;
      mo.batch_dims = so.batch_dims = (int)l;
    } else if (strcmp(a, "--data-range") == 0) {
      if (parse_double_arg(a + 2, v, &d)) return EXIT_USAGE;
      if (!(d > 0)) {
        errorf("--data-range: %s is not > 0", v);
        return EXIT_USAGE;
      }
      mo.data_range = so.data_range = d;
    } else if (strcmp(a, "--normalization") == 0) {
      if (ndf_nrmse_norm_from_name(v, &mo.normalization) != NDF_OK) {
        errorf("--normalization: '%s' is not euclidean, min-max or mean", v);
        return EXIT_USAGE;
      }
    } else if (strcmp(a, "--percentile") == 0) {
      if (parse_double_arg(a + 2, v, &mo.percentile)) return EXIT_USAGE;
    } else if (strcmp(a, "--sampling") == 0) {
      mo.nsampling = 0;
      for (const char *s = v;;) {
        char *end;
        const double x = strtod(s, &end);
        if (end == s || mo.nsampling == NDF_MAX_SPATIAL || (*end && *end != ',')) {
          errorf("--sampling: '%s' is not a list of 1 to %d numbers", v, NDF_MAX_SPATIAL);
          return EXIT_USAGE;
        }
        mo.sampling[mo.nsampling++] = x;
        if (!*end) break;
        s = end + 1;
      }
      have_sampling = 1;
    } else if (strcmp(a, "--win-size") == 0) {
      if (parse_long_arg(a + 2, v, 1, 1L << 30, &l)) return EXIT_USAGE;
      so.win_size = (int)l;
    } else if (strcmp(a, "--sigma") == 0) {
      if (parse_double_arg(a + 2, v, &so.sigma)) return EXIT_USAGE;
    } else if (strcmp(a, "--K1") == 0) {
      if (parse_double_arg(a + 2, v, &so.K1)) return EXIT_USAGE;
    } else if (strcmp(a, "--K2") == 0) {
      if (parse_double_arg(a + 2, v, &so.K2)) return EXIT_USAGE;
    } else if (strcmp(a, "--full") == 0) {
      full_path = v;
    } else if (strcmp(a, "--cpu-threads") == 0) {
      if (cli_cpu_threads_arg(v)) return EXIT_USAGE;
    } else if (strcmp(a, "--device") == 0) {
      dev = strcmp(v, "cpu") == 0 ? DEV_CPU : strcmp(v, "cuda") == 0 ? DEV_CUDA : strcmp(v, "auto") == 0 ? DEV_AUTO : -1;
      if ((int)dev < 0) {
        errorf("bad value '%s' for --device (expected cpu, cuda or auto)", v);
        return EXIT_USAGE;
      }
    } else {
      errorf("metrics: unknown option '%s' (see ndforge metrics --help)", a);
      return EXIT_USAGE;
    }
  }
  if (npos != 3) {
    errorf("metrics: expected METRIC IMAGE0 IMAGE1 (see ndforge metrics --help)");
    return EXIT_USAGE;
  }
  for (size_t k = 0; k < NMETRICS; k++)
    if (strcmp(pos[0], metric_rows[k].short_name) == 0) metric = metric_rows[k].name;
  if (!metric) {
    char known[256] = "";
    for (size_t k = 0; k < NMETRICS; k++) {
      strncat(known, k ? ", " : "", sizeof known - strlen(known) - 1);
      strncat(known, metric_rows[k].short_name, sizeof known - strlen(known) - 1);
    }
    errorf("metrics: unknown metric '%s' (%s)", pos[0], known);
    return EXIT_USAGE;
  }
  const int is_ssim = !strcmp(metric, "structural_similarity");
  if (full_path && !is_ssim) {
    errorf("--full: only ssim has a map");
    return EXIT_USAGE;
  }
  if (full_path && check_file_type(full_path, "the map") != 0) return EXIT_USAGE;
  ndfio_image im[2];
  memset(im, 0, sizeof im);
  if (read_image(pos[1], &im[0]) != 0 || read_image(pos[2], &im[1]) != 0) {
    ndfio_image_free(&im[0]);
    ndfio_image_free(&im[1]);
    return EXIT_RUN;
  }
  if (!strcmp(metric, "hausdorff_distance") && !have_sampling) { /* a NIfTI image's voxel spacing */
    double sp[NDF_MAX_NDIM];
    const int nb = mo.batch_dims, nd = im[0].arr.ndim;
    if (nb < nd && nd - nb <= NDF_MAX_SPATIAL && ndfio_nifti_spacing(&im[0], sp)) {
      mo.nsampling = nd - nb;
      for (int k = 0; k < mo.nsampling; k++) mo.sampling[k] = sp[nb + k];
    }
  }
  ndf_ctx *ctx = NULL;
  ndf_device_type where = NDF_DEVICE_CPU;
  int rc = EXIT_RUN;
  ndf_array res, full, dres, dfull, din[2];
  memset(&res, 0, sizeof res);
  memset(&full, 0, sizeof full);
  memset(&dres, 0, sizeof dres);
  memset(&dfull, 0, sizeof dfull);
  memset(din, 0, sizeof din);
  const ndf_array *a0 = &im[0].arr;
  const int nb = mo.batch_dims < a0->ndim ? mo.batch_dims : 0;
  if (open_device(dev, &ctx, &where) != NDF_OK) goto done;
  if (cli_alloc("the result", &res, NDF_FLOAT64, nb, a0->shape) != 0) goto done;
  if (full_path && cli_alloc("the map", &full, a0->dtype == NDF_FLOAT32 ? NDF_FLOAT32 : NDF_FLOAT64, a0->ndim,
                             a0->shape) != 0)
    goto done;
  ndf_status s = NDF_OK;
  const ndf_array *x = &im[0].arr, *y = &im[1].arr;
  ndf_array *r = &res, *f = full_path ? &full : NULL;
  if (where == NDF_DEVICE_CUDA) {
    for (int k = 0; k < 2 && s == NDF_OK; k++) {
      s = ndf_array_alloc(ctx, &din[k], NDF_DEVICE_CUDA, im[k].arr.dtype, im[k].arr.ndim, im[k].arr.shape);
      if (s == NDF_OK) s = ndf_array_copy(ctx, &din[k], &im[k].arr);
    }
    if (s == NDF_OK) s = ndf_array_alloc(ctx, &dres, NDF_DEVICE_CUDA, NDF_FLOAT64, nb, a0->shape);
    if (s == NDF_OK && f) s = ndf_array_alloc(ctx, &dfull, NDF_DEVICE_CUDA, full.dtype, full.ndim, full.shape);
    x = &din[0];
    y = &din[1];
    r = &dres;
    f = f ? &dfull : NULL;
  }
  if (s == NDF_OK) {
    if (is_ssim) s = ndf_structural_similarity(ctx, x, y, r, f, &so);
    else if (!strcmp(metric, "mean_squared_error")) s = ndf_mean_squared_error(ctx, x, y, r, &mo);
    else if (!strcmp(metric, "normalized_root_mse")) s = ndf_normalized_root_mse(ctx, x, y, r, &mo);
    else if (!strcmp(metric, "peak_signal_noise_ratio")) s = ndf_peak_signal_noise_ratio(ctx, x, y, r, &mo);
    else if (!strcmp(metric, "dice_coefficient")) s = ndf_dice_coefficient(ctx, x, y, r, &mo);
    else if (!strcmp(metric, "jaccard_index")) s = ndf_jaccard_index(ctx, x, y, r, &mo);
    else if (!strcmp(metric, "hausdorff_distance")) s = ndf_hausdorff_distance(ctx, x, y, r, &mo);
    else s = NDF_ENOTSUP; /* a metric of the registry without a call here */
  }
  if (s == NDF_OK && where == NDF_DEVICE_CUDA) {
    s = ndf_array_copy(ctx, &res, &dres);
    if (s == NDF_OK && full_path) s = ndf_array_copy(ctx, &full, &dfull);
    if (s == NDF_OK) s = ndf_ctx_synchronize(ctx);
  }
  if (s != NDF_OK) {
    errorf("%s", ndf_errmsg(ctx));
    goto done;
  }
  if (full_path) {
    char err[ERRLEN];
    if (ndfio_write(full_path, &full, &im[0], err, sizeof err) != NDF_OK) {
      errorf("%s", err);
      goto done;
    }
  }
  for (int64_t i = 0; i < ndf_array_size(&res); i++) printf("%.17g\n", ((const double *)res.data)[i]);
  rc = 0;
done:
  if (ctx) {
    ndf_array_free(ctx, &din[0]);
    ndf_array_free(ctx, &din[1]);
    ndf_array_free(ctx, &dres);
    ndf_array_free(ctx, &dfull);
  }
  host_free(&res);
  host_free(&full);
  ndfio_image_free(&im[0]);
  ndfio_image_free(&im[1]);
  ndf_ctx_destroy(ctx);
  return rc;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: ndforge COMMAND ...\n\n"
          "  ndforge run OP [options] INPUT OUTPUT   run a scipy.ndimage op on a file\n"
          "                                         (ndforge run --help lists ops and options)\n"
          "  ndforge info                            library, NVRTC, driver, devices, cache\n"
          "  ndforge cache list                      list the kernel cache\n"
          "  ndforge cache clear                     empty the kernel cache\n"
          "  ndforge cache warm [--arch sm_XY] OP... --dtype DTYPE [--ndim N] [op options]\n"
          "                                         compile the kernels of ops ahead of time\n"
          "                                         (no GPU needed)\n"
          "  ndforge structure generate RANK CONNECTIVITY OUT\n"
          "                                         scipy's generate_binary_structure\n"
          "  ndforge structure iterate IN ITERATIONS OUT [--origin N[,N...]]\n"
          "                                         scipy's iterate_structure (prints the\n"
          "                                         scaled origin when --origin is given)\n"
          "  ndforge ecc INPUT OUT.npy [--thresholds T | --values V.npy] [--range LO,HI]\n"
          "      [--construction V|T] [--batch-dims N] ...  Euler characteristic curve\n"
          "                                         (ndforge ecc --help)\n"
          "  ndforge ect INPUT DIRECTIONS.npy OUT.npy [--thresholds T | --values V.npy]\n"
          "      [--weighted] [--construction V|T] ...   Euler characteristic transform\n"
          "                                         (ndforge ect --help)\n"
          "  ndforge demo [--out DIR] [--device cpu|cuda|auto] [--cpu-threads N]\n"
          "                                         erode and dilate an MRI volume (a phantom\n"
          "                                         without mricron-data), with timings\n"
          "  ndforge sinkhorn A.npy B.npy OUT.npy --epsilon E --max-iter N [options]\n"
          "                                         entropic OT costs between histograms\n"
          "                                         (ndforge sinkhorn --help)\n"
          "  ndforge metrics METRIC IMAGE0 IMAGE1 [options]  image metrics (mse, nrmse,\n"
          "                                         psnr, ssim, dice, jaccard, hausdorff)\n"
          "                                         (ndforge metrics --help)\n"
          "  ndforge preprocess INPUT... --out DIR [--steps reorient,resample,normalize,crop ...]\n"
          "                                         preprocess MRI/CT volumes into NIfTI, PNG\n"
          "                                         montages and a JSON report\n"
          "                                         (ndforge preprocess --help)\n"
          "  ndforge convert [--series UID|N] INPUT... OUTPUT  DICOM series, NIfTI, .npy\n"
          "                                         (ndforge convert --help)\n"
          "  ndforge tunables                        the kernel variants (run ... --tune N=V)\n"
          "  ndforge tune [--only S] | --show        time the variants on the GPU into this\n"
          "                                         device's tuning table (ndforge tune --help)\n"
          "  ndforge --help | --version\n\n");
  /* The ops, wrapped at 79 columns. */
  const char *lead = "Ops (scipy.ndimage names):";
  size_t col = strlen(lead);
  fputs(lead, f);
  for (size_t i = 0; i < NOPS; i++) {
    size_t len = strlen(ops[i].name) + 1; /* with its ',' or '.' */
    if (col + 1 + len > 79) {
      fputs("\n ", f);
      col = 1;
    }
    fprintf(f, " %s%c", ops[i].name, i + 1 < NOPS ? ',' : '.');
    col += 1 + len;
  }
  fprintf(f, "\nInterpolation: zoom, shift, rotate, affine_transform, map_coordinates, spline_filter,\n"
             " spline_filter1d, resample (NIfTI to a voxel spacing) (ndforge run zoom --help).");
  fprintf(f, "\nFiles: .npy, .nii, .nii.gz.  Exit status: 0 ok, 1 failure, 2 bad command line.\n"
             "Environment: NDF_CACHE_DIR (default $XDG_CACHE_HOME/ndforge, then\n"
             "~/.cache/ndforge), NDF_CACHE_DISABLE=1, NDF_DUMP_SOURCE=DIR.\n");
}


int main(int argc, char **argv) {
  if (argc < 2) {
    errorf("missing command (see ndforge --help)");
    return EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
    usage(stdout);
    return 0;
  }
  if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
    printf("ndforge %s (library %s)\n", NDF_VERSION_STRING, ndf_version());
    return 0;
  }
  if (strcmp(cmd, "run") == 0) return cmd_run(argc, argv);
  if (strcmp(cmd, "info") == 0) return cmd_info(argc, argv);
  if (strcmp(cmd, "cache") == 0) return cmd_cache(argc, argv);
  if (strcmp(cmd, "structure") == 0) return cmd_structure(argc, argv);
  if (strcmp(cmd, "demo") == 0) return cmd_demo(argc, argv);
  if (strcmp(cmd, "sinkhorn") == 0) return ndf_cli_sinkhorn(argc, argv);
  if (strcmp(cmd, "ecc") == 0) return cmd_ecc(argc, argv);
  if (strcmp(cmd, "ect") == 0) return ndf_cli_ect(argc, argv);
  if (strcmp(cmd, "tunables") == 0) return ndf_cli_tunables(argc, argv);
  if (strcmp(cmd, "tune") == 0) return ndf_cli_tune(argc, argv);
  if (strcmp(cmd, "metrics") == 0) return cmd_metrics(argc, argv);
  if (strcmp(cmd, "preprocess") == 0) return ndf_cli_preprocess(argc, argv);
  if (strcmp(cmd, "convert") == 0) return ndf_cli_convert(argc, argv);
  errorf("unknown command '%s' (see ndforge --help)", cmd);
  return EXIT_USAGE;
}
