/*
 * cli.h -- what the subcommands of the ndforge command share (ndforge.c
 * defines these; cli_sinkhorn.c and cli_ect.c use them).  Internal to the
 * command, not part of libndforge.
 */
#ifndef NDF_CLI_H
#define NDF_CLI_H

#include "ndfio.h"
#include "ndforge.h"

/* Prints "ndforge: <message>" as one line on stderr. */
void errorf(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* Parses a finite number / an integer in [lo, hi] given for option --opt;
 * 0, or -1 after saying what is wrong. */
int parse_double_arg(const char *opt, const char *s, double *out);
int parse_long_arg(const char *opt, const char *s, long lo, long hi, long *out);
/* Parses a positive number of bytes given for option --opt: digits (a decimal fraction too),
 * optionally followed by K, M, G or T (powers of 1024; "B" or "iB" may follow); the bytes
 * rounded down.  0, or -1 after saying what is wrong. */
int parse_size_arg(const char *opt, const char *s, size_t *out);
/* Up to max finite numbers separated by commas, given for option --opt, into v: their count, or
 * -1 after saying what is wrong. */
int parse_list_arg(const char *opt, const char *s, double *v, int max);
/* --range LO,HI (finite numbers, LO <= HI) into *lo and *hi: 0, or -1 after saying what is wrong. */
int parse_range_arg(const char *s, double *lo, double *hi);
/* --cpu-threads N, which every command that runs ops takes: cli_cpu_threads_arg parses N
 * (1..NDF_MAX_CPU_THREADS; 0, or -1 after saying what is wrong) and keeps it for
 * cli_ctx_options_init, ndf_ctx_options_init with that cpu_threads (0 when not given). */
int cli_cpu_threads_arg(const char *v);
void cli_ctx_options_init(ndf_ctx_options *o);

/* A C-contiguous host array of that geometry in *a (malloc'ed data): 0, or
 * -1 after saying (when what names it, e.g. "the output") that its size
 * overflows (ndf_shape_bytes) or exceeds the host's memory, or that malloc
 * failed.  The size is checked before anything is allocated. */
int cli_alloc(const char *what, ndf_array *a, ndf_dtype dtype, int ndim, const int64_t *shape);
/* Reads an image file (ndfio_read) into *img: 0, or -1 after printing the reason. */
int read_image(const char *path, ndfio_image *img);
/* --batch-axis K: axis `from` of x moved to `to` (shape and strides permuted, the data untouched;
 * the op then sees axis K first, as one batch axis).  Axes out of range: x unchanged. */
void cli_move_axis(ndf_array *x, int from, int to);

/* The subcommands in their own files. */
int ndf_cli_sinkhorn(int argc, char **argv);
int ndf_cli_ect(int argc, char **argv);
/* `ndforge tunables`, `ndforge tune` (cli_tune.c); cli_tune_check: 0 when
 * "NAME=VALUE" names a tunable and a value of its domain, else -1 after saying
 * what is wrong. */
int ndf_cli_tunables(int argc, char **argv);
int ndf_cli_tune(int argc, char **argv);
int cli_tune_check(const char *assign);
/* `ndforge run OP` for the interpolation ops and resample (cli_interp.c). */
int ndf_cli_interp_is_op(const char *name);
int ndf_cli_interp(int argc, char **argv);
/* `ndforge preprocess` (cli_preprocess.c). */
int ndf_cli_preprocess(int argc, char **argv);
/* `ndforge convert` between DICOM series, NIfTI and .npy (cli_convert.c). */
int ndf_cli_convert(int argc, char **argv);
/* `ndforge run n4` (cli_n4.c). */
int ndf_cli_n4_is_op(const char *name);
int ndf_cli_n4(int argc, char **argv);

#endif
