/* The certificate of the ECC kernels' first-guess binners (templates/ecc.cu:
 * ndf_ecc2_setup's D, the 2-D strip's g = fmaf(f, ga, gb) and the telescoped
 * binner's s = sat(f ga2 + gb2), r = fma_ru(s, K, C)), replayed on the host in
 * the kernels' float arithmetic: for random ranges [a, b] (near and far from 0,
 * narrow and wide) and T = 2..510, values a few ulps either side of every
 * threshold and uniform ones, no certified guess may name another bin than the
 * exact one (the least k with f <= t_k).  ADR 0009 ("The binner by FFMA.SAT")
 * derives D; anyone changing ga, gb, s, r or d in the template changes this
 * replay with it.  A negative control scales D by 1/4 and must find wrong bins,
 * so the replay stays sensitive.  Plain C, no GPU. */
#include <fenv.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { uint64_t s; } rng64;
static uint64_t rng_next(rng64 *r) { /* splitmix64 */
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static double U(rng64 *r) { return (double)(rng_next(r) >> 11) * 0x1p-53; }
static uint32_t f2bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

/* Conversions and fused multiply-adds under a directed rounding mode: the
 * kernels' __double2float_rd, __fmaf_ru and friends. */
static float d2f_mode(int mode, double x) {
  fesetround(mode);
  volatile float r = (float)x;
  fesetround(FE_TONEAREST);
  return r;
}
static float fma_mode(int mode, float a, float b, float c) {
  fesetround(mode);
  volatile float r = fmaf(a, b, c);
  fesetround(FE_TONEAREST);
  return r;
}
static float sub_mode(int mode, float a, float b) {
  fesetround(mode);
  volatile float r = a - b;
  fesetround(FE_TONEAREST);
  return r;
}

typedef struct {
  long long nval, ncert2, ncert3, bad2, bad3, nskip;
} counts;

typedef struct {
  int T, given;
  double a, b;
  float ga, gb, dl, dh, K, ga2, gb2;
  const float *tv;
} range_ctx;

static void check(const range_ctx *c, counts *n, float f) {
  if (!c->given && !(f >= c->a && f <= c->b)) return;
  n->nval++;
  int ex = 0;
  while (ex < c->T && !(f <= c->tv[ex])) ex++;
  if (!c->given) { /* the 2-D strip: [min, max] only */
    const float g = fmaf(f, c->ga, c->gb), d = ceilf(g) - g;
    if (d >= c->dl && d <= c->dh) {
      n->ncert2++;
      int k = (int)ceilf(g);
      if (k > c->T) k = c->T;
      if (k != ex) n->bad2++;
    }
  }
  float s = fmaf(f, c->ga2, c->gb2); /* the telescoped binner */
  s = s != s ? 0.0f : fminf(fmaxf(s, 0.0f), 1.0f);
  const float r = fma_mode(FE_UPWARD, s, c->K, 12582911.0f);
  const int k = (int)(f2bits(r) - 0x4b400000u);
  const float d = fmaf(-s, c->K, r - 12582911.0f);
  if (d >= c->dl && d <= c->dh) {
    n->ncert3++;
    if (k != ex) n->bad3++;
  }
}

/* Runs `ranges` random ranges with D scaled by `scale`; given = 1: a given range
 * (a, b doubles, values outside [a, b] and the infinities too). */
static counts run(double scale, int ranges, uint64_t seed, int given) {
  counts n = {0};
  rng64 rg = {seed};
  static float tv[512];
  static const int common[5] = {256, 320, 510, 64, 37};
  for (int it = 0; it < ranges; it++) {
    const int T = it % 4 == 0 ? 2 + (int)(U(&rg) * 509) : common[it % 5];
    const double c = (U(&rg) < 0.5 ? -1 : 1) * pow(10.0, U(&rg) * 10 - 3) * (U(&rg) < 0.2 ? 0 : 1);
    const double wd = pow(10.0, U(&rg) * 9 - 3);
    double a, b;
    if (given) {
      a = c - wd * U(&rg), b = a + wd;
      if (!(b > a)) b = nextafter(a, INFINITY);
    } else {
      const float fa = (float)(c - wd * U(&rg)), b0 = (float)(fa + wd);
      a = fa, b = b0 > fa ? b0 : nextafterf(fa, INFINITY);
    }
    const double span = b - a, den = (double)(T - 1);
    int above = 0;
    for (int k = 0; k < T - 1; k++) {
      const double tk = a + (span * (double)k) / den;
      if (tk > b) above = 1;
      tv[k] = d2f_mode(FE_DOWNWARD, tk);
    }
    if (above) { n.nskip++; continue; } /* uncertified: the table for every voxel */
    tv[T - 1] = d2f_mode(FE_DOWNWARD, b);
    tv[T] = INFINITY;
    range_ctx rc = {.T = T, .given = given, .a = a, .b = b, .tv = tv};
    const float w = (float)span;
    rc.ga = (float)(T - 1) / w;
    rc.gb = -(float)a * rc.ga;
    const double aab = fabs(a) + fabs(b);
    const double D = scale * ((double)T * 0x1p-22 + aab * (double)rc.ga * (given ? 0x1.8p-22 : 0x1.4p-22) + 0x1p-21);
    if (!(D < 0.25 && rc.ga > 0)) { n.nskip++; continue; }
    rc.dl = d2f_mode(FE_UPWARD, D);
    rc.dh = sub_mode(FE_DOWNWARD, 1.0f, rc.dl);
    rc.K = (float)T + 0.5f;
    rc.ga2 = rc.ga / rc.K;
    rc.gb2 = (rc.gb + 1.0f) / rc.K;
    for (int k = 0; k < T; k++)
      for (int j = -4; j <= 4; j++) {
        float f = tv[k];
        for (int q = 0; q < abs(j); q++) f = nextafterf(f, j < 0 ? -INFINITY : INFINITY);
        check(&rc, &n, f);
      }
    for (int q = 0; q < 4 * T; q++) check(&rc, &n, (float)(a + span * U(&rg)));
    if (given) {
      for (int q = 0; q < 2 * T; q++) {
        check(&rc, &n, (float)(a - 4.0 * U(&rg) / (double)rc.ga));
        check(&rc, &n, (float)(b + 4.0 * U(&rg) / (double)rc.ga));
      }
      check(&rc, &n, -INFINITY);
      check(&rc, &n, INFINITY);
    }
  }
  printf("D x %-4g %s: %lld values, certified %lld (2-D strip) / %lld (binner), wrong %lld / %lld; %lld ranges skipped\n",
         scale, given ? "given range" : "[min, max] ", n.nval, n.ncert2, n.ncert3, n.bad2, n.bad3, n.nskip);
  return n;
}

int main(void) {
  const char *e = getenv("NDF_TEST_SEED");
  const uint64_t seed = e ? strtoull(e, NULL, 10) : 1;
  const int ranges = 400;
  printf("NDF_TEST_SEED=%llu, %d ranges a run\n", (unsigned long long)seed, ranges);
  int fail = 0;
  for (int given = 0; given <= 1; given++) {
    for (int h = 0; h < 2; h++) { /* the kernels' D, and half of it: no wrong certified bin */
      counts n = run(h ? 0.5 : 1.0, ranges, seed + (uint64_t)given, given);
      if (n.bad2 || n.bad3 || n.ncert3 == 0) fail = 1;
    }
    counts ctl = run(0.25, ranges, seed + (uint64_t)given, given); /* negative control */
    if (ctl.bad2 + ctl.bad3 == 0) {
      printf("negative control found no wrong bin at D / 4: the replay is not sensitive\n");
      fail = 1;
    }
  }
  printf(fail ? "FAILED\n" : "ok\n");
  return fail;
}
