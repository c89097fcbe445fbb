#include "binary_cuda.c" /* runtime/, on the include path */
#include <stdio.h>
int main(int argc, char **argv) {
  int nsp = atoi(argv[1]), op = atoi(argv[2]), nra = nsp - 1, R = nra + 2;
  long long shape[8]; int border, withmask, n;
  FILE *f = fopen("case.txt", "r");
  for (int d = 0; d < nsp; d++) if (fscanf(f, "%lld", &shape[d]) != 1) return 2;
  if (fscanf(f, "%d %d %d", &border, &withmask, &n) != 3) return 2;
  static int32_t taps[4096 * 8], tab[4096 * 12];
  for (int k = 0; k < n * nsp; k++) if (fscanf(f, "%d", &taps[k]) != 1) return 2;
  int64_t ntr = 0;
  for (int k = 0; k < n; k++) { int same = k > 0; for (int d = 0; d < nra && same; d++) same = taps[k*nsp+d] == taps[(k-1)*nsp+d]; ntr += !same; }
  int32_t *dx = tab + ntr * R; int64_t r = -1;
  for (int k = 0; k < n; k++) {
    const int32_t *t = taps + k * nsp; int same = k > 0;
    for (int d = 0; d < nra && same; d++) same = t[d] == taps[(k - 1) * nsp + d];
    if (!same) { r++; for (int d = 0; d < nra; d++) tab[r * R + d] = t[d]; tab[r * R + nra] = k; tab[r * R + nra + 1] = 0; }
    tab[r * R + nra + 1]++; dx[k] = t[nra];
  }
  gbuf g = {0};
  fstep_code(&g, tab, ntr, nra, op);
  fputs(g.s, stdout);
  return 0;
}
