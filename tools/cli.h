/*
 * cli.h -- what the subcommands of the ndforge command share (ndforge.c
 * defines these; cli_sinkhorn.c and cli_ect.c use them).  Internal to the
 * command, not part of libndforge.
 */
#ifndef NDF_CLI_H
#define NDF_CLI_H

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

/* The subcommands in their own files. */
int ndf_cli_sinkhorn(int argc, char **argv);
int ndf_cli_ect(int argc, char **argv);

#endif
