/*
 * test_uniform_exact.c -- the argument behind the uniform filter's exact and
 * stream kernels (templates/filter_uniform.cu, docs/adr/0029): when every
 * value of a line is a multiple of 2^q below 2^M in magnitude with
 * M - q + 1 + L <= 53 and M + L <= 1022, L = ceil(log2(K + 1)), scipy's
 * running sum (the first window summed from 0.0, then the entering value
 * minus the leaving one added) is exact at every step, so a walk started
 * anywhere from a direct sum of its first window, and a direct sum of every
 * window, give the same outputs bit for bit.  Checked on random lines at the
 * edge of the condition (subnormal q, M near the overflow bound, signed
 * zeros), and, so that the check is no tautology, lines a few bits beyond it
 * and lines with Inf or NaN must differ somewhere.  Plain C, no GPU.
 * Seed: NDF_TEST_SEED (printed).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "testutil.h"

#define MAXE 400 /* extended line: outputs + K - 1 */

/* scipy's NI_UniformFilter1D over the extended line e: n outputs of K taps. */
static void walk(const double *e, int n, int K, double *o) {
  double tmp = 0.0;
  for (int k = 0; k < K; k++) tmp += e[k];
  o[0] = tmp / K;
  for (int l = 1; l < n; l++) {
    tmp += e[l - 1 + K] - e[l - 1];
    o[l] = tmp / K;
  }
}

/* The kernels' segments: walks restarted at random outputs. */
static void segments(const double *e, int n, int K, tu_rng *r, double *o) {
  for (int x0 = 0; x0 < n;) {
    const int cnt = (int)tu_rng_int(r, 1, n - x0);
    walk(e + x0, cnt, K, o + x0);
    x0 += cnt;
  }
}

/* Every window summed on its own from 0.0. */
static void direct(const double *e, int n, int K, double *o) {
  for (int l = 0; l < n; l++) {
    double s = 0.0;
    for (int k = 0; k < K; k++) s += e[l + k];
    o[l] = s / K;
  }
}

/* The condition, from each value's exponents (q: of its lowest set bit; M:
 * the least with |v| < 2^M). */
static int exact_line(const double *e, int len, int K) {
  int q = INT32_MAX, M = INT32_MIN;
  for (int i = 0; i < len; i++) {
    if (!isfinite(e[i])) return 0;
    if (e[i] == 0) continue;
    int ex;
    double m = frexp(fabs(e[i]), &ex); /* |v| = m 2^ex, m in [0.5, 1): M = ex */
    int lo = ex;
    while (m != floor(m)) { /* shift until the significand is an integer */
      m *= 2;
      lo--;
    }
    while (fmod(m, 2.0) == 0) {
      m /= 2;
      lo++;
    }
    if (lo < q) q = lo;
    if (ex > M) M = ex;
  }
  if (M == INT32_MIN) return 1;
  int L = 0;
  while ((1ll << L) < (long long)K + 1) L++;
  return M - q + 1 + L <= 53 && M + L <= 1022;
}

/* A line of len values k 2^q, |k| < 2^bits (about a tenth zeros, of both signs). */
static void draw(double *e, int len, int q, int bits, tu_rng *r) {
  for (int i = 0; i < len; i++) {
    const uint64_t k = tu_rng_u64(r) >> (64 - bits);
    const double s = tu_rng_chance(r, 0.5) ? -1.0 : 1.0;
    e[i] = tu_rng_chance(r, 0.1) ? s * 0.0 : s * ldexp((double)k, q);
  }
}

static int same(const double *a, const double *b, int n) { return memcmp(a, b, (size_t)n * sizeof *a) == 0; }

static uint64_t g_seed;

static void test_exact_lines_agree(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_seed(&r, g_seed);
  double e[MAXE], o1[MAXE], o2[MAXE], o3[MAXE];
  for (int it = 0; it < 20000; it++) {
    const int K = (int)(tu_rng_chance(&r, 0.8) ? tu_rng_int(&r, 1, 12) : tu_rng_int(&r, 13, 100));
    const int n = (int)tu_rng_int(&r, 1, MAXE - K + 1), len = n + K - 1;
    int L = 0;
    while ((1 << L) < K + 1) L++;
    const int bits = 52 - L - (int)tu_rng_int(&r, 0, 3); /* M - q <= 52 - L */
    static const int qs[] = {-1074, -1060, -149, -24, 0, 7};
    int q = tu_rng_chance(&r, 0.8) ? qs[tu_rng_int(&r, 0, 5)] : (int)tu_rng_int(&r, -1074, 1022 - L - bits);
    if (tu_rng_chance(&r, 0.05)) q = 1022 - L - bits; /* M at the overflow bound */
    draw(e, len, q, bits, &r);
    assert_true(exact_line(e, len, K));
    walk(e, n, K, o1);
    segments(e, n, K, &r, o2);
    direct(e, n, K, o3);
    if (!same(o1, o2, n) || !same(o1, o3, n))
      fail_msg("line %d: n %d K %d q %d bits %d: the walks differ", it, n, K, q, bits);
  }
}

/* A few bits beyond the condition, or an Inf or NaN in the line: the
 * restarted walks and direct sums differ from the walk on some lines. */
static void test_beyond_differs(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_seed(&r, g_seed + 1);
  double e[MAXE], o1[MAXE], o2[MAXE];
  int wide = 0, nonfinite = 0;
  for (int it = 0; it < 2000; it++) {
    const int K = (int)tu_rng_int(&r, 2, 12), n = 200, len = n + K - 1;
    draw(e, len, -60, 62, &r);
    assert_false(exact_line(e, len, K));
    walk(e, n, K, o1);
    direct(e, n, K, o2);
    wide += !same(o1, o2, n);
    draw(e, len, -24, 24, &r);
    e[tu_rng_int(&r, 0, K - 1)] = tu_rng_chance(&r, 0.5) ? INFINITY : NAN;
    assert_false(exact_line(e, len, K));
    walk(e, n, K, o1);
    direct(e, n, K, o2);
    nonfinite += !same(o1, o2, n);
  }
  assert_true(wide > 100);
  assert_int_equal(nonfinite, 2000);
}

int main(void) {
  g_seed = tu_seed("NDF_TEST_SEED");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_exact_lines_agree),
      cmocka_unit_test(test_beyond_differs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
