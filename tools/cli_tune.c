/*
 * cli_tune.c -- `ndforge tunables`: lists the tunables (ADR 0019), one per
 * line: name, op, domain (the default first, marked *), whether `tune`
 * times it, and what it selects.  `ndforge run OP ... --tune NAME=VALUE`
 * sets one for the call.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "ndforge.h"

int ndf_cli_tunables(int argc, char **argv) {
  if (argc > 2) {
    if (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0) {
      printf("usage: ndforge tunables\n"
             "Lists the tunables: NAME  OP  DOMAIN (default *)  tuned|fixed  RULE  DOC.\n"
             "Set one with `ndforge run OP ... --tune NAME=VALUE` (repeatable).\n");
      return 0;
    }
    fprintf(stderr, "ndforge: error: 'tunables' takes no arguments (see ndforge tunables --help)\n");
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
