// Host check of the ECC warp-strip kernels' certified first guesses (templates/ecc.cu: ndf_ecc2_setup's D,
// strip2's g = fmaf(f, ga, gb) and the telescoped binner's s = sat(f ga2 + gb2), r = fma_ru(s, K, C)): for
// random ranges [a, b] (near and far from 0, narrow and wide) and T = 2..510, values next to every threshold
// (a few ulps either side) and uniform ones; counts the certified guesses whose bin is not the exact one (the
// least k with f <= tv[k]).  Scale the certificate's D by argv[1] (default 1: the kernels' D; a negative
// control at 1/4 finds wrong bins).  argv[4] = 1: a given range (ndf_ecc3_params.rng, session 18): a and b
// doubles (not floats), gb from (float)a, the middle term of D 6 instead of 5, values also outside [a, b]
// (within a few 1 / ga of either end, -inf, +inf; the exact bin then 0 or T).
// Build: g++ -O2 -frounding-math tools/emu/ecc_cert_check.cpp
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

static uint32_t f2bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
// op() evaluated under the rounding mode (FE_UPWARD, FE_DOWNWARD): the kernels' _ru / _rd intrinsics
template <class F> static float rounded(int mode, F op) {
  std::fesetround(mode);
  volatile float r = op();
  std::fesetround(FE_TONEAREST);
  return r;
}

int main(int argc, char **argv) {
  const double scale = argc > 1 ? atof(argv[1]) : 1.0;
  const int ranges = argc > 2 ? atoi(argv[2]) : 3000;
  std::mt19937_64 rng(argc > 3 ? strtoull(argv[3], 0, 10) : 1);
  const bool given = argc > 4 && atoi(argv[4]) == 1;
  std::uniform_real_distribution<double> U(0, 1);
  long long nval = 0, ncert2 = 0, ncert3 = 0, bad2 = 0, bad3 = 0, nskip = 0;
  for (int it = 0; it < ranges; it++) {
    const int T = it % 4 == 0 ? 2 + (int)(U(rng) * 509) : std::vector<int>{256, 320, 510, 64, 37}[it % 5];
    const double c = (U(rng) < 0.5 ? -1 : 1) * std::pow(10.0, U(rng) * 10 - 3) * (U(rng) < 0.2 ? 0 : 1);
    const double wd = std::pow(10.0, U(rng) * 9 - 3);
    double a, b;
    if (given) { // doubles anywhere (lo < hi)
      a = c - wd * U(rng), b = a + wd;
      if (!(b > a)) b = std::nextafter(a, INFINITY);
    } else {
      const float fa = (float)(c - wd * U(rng)), b0 = (float)(fa + wd);
      a = fa, b = b0 > fa ? b0 : std::nextafterf(fa, INFINITY);
    }
    // ndf_ecc2_setup
    const double span = b - a, den = (double)(T - 1);
    std::vector<float> tv(T + 1);
    int m = T - 1;
    std::vector<double> tk(T - 1);
    for (int k = 0; k < T - 1; k++) tk[k] = a + (span * (double)k) / den;
    for (int k = 0; k < T - 1; k++)
      if (tk[k] > b) m--;
    if (m != T - 1) { nskip++; continue; } // uncertified: the table for every voxel
    for (int k = 0; k < T - 1; k++) tv[k] = rounded(FE_DOWNWARD, [&] { return (float)tk[k]; });
    tv[T - 1] = rounded(FE_DOWNWARD, [&] { return (float)b; });
    tv[T] = INFINITY;
    const float w = (float)span;
    const float ga = (float)(T - 1) / w, gb = -(float)a * ga;
    const double aab = std::fabs(a) + std::fabs(b); // the kernels' D (ndf_ecc2_setup)
    const double D = scale * ((double)T * 0x1p-22 + aab * (double)ga * (given ? 0x1.8p-22 : 0x1.4p-22) + 0x1p-21);
    if (!(D < 0.25 && ga > 0)) { nskip++; continue; }
    const float dl = rounded(FE_UPWARD, [&] { return (float)D; });
    const float dh = rounded(FE_DOWNWARD, [&] { return 1.0f - dl; });
    const float K = (float)T + 0.5f, ga2 = ga / K, gb2 = (gb + 1.0f) / K;
    auto check = [&](float f) {
      if (!given && !(f >= a && f <= b)) return;
      nval++;
      int ex = 0;
      while (ex < T && !(f <= tv[ex])) ex++;
      if (!given) { // strip2: g = fmaf(f, ga, gb) ([min, max] only)
        const float g = std::fmaf(f, ga, gb), d = std::ceil(g) - g;
        if (d >= dl && d <= dh) {
          ncert2++;
          const int k = std::min((int)std::ceil(g), T);
          if (k != ex) bad2++;
        }
      }
      { // the binner
        float s = std::fmaf(f, ga2, gb2);
        s = s != s ? 0.0f : std::fmin(std::fmax(s, 0.0f), 1.0f);
        const float r = rounded(FE_UPWARD, [&] { return std::fmaf(s, K, 12582911.0f); });
        const int k = (int)(f2bits(r) - 0x4b400000u);
        const float d = std::fmaf(-s, K, r - 12582911.0f);
        if (d >= dl && d <= dh) {
          ncert3++;
          if (k != ex) bad3++;
        }
      }
    };
    for (int k = 0; k < T; k++)
      for (int j = -4; j <= 4; j++) {
        float f = tv[k];
        for (int q = 0; q < (j < 0 ? -j : j); q++) f = std::nextafterf(f, j < 0 ? -INFINITY : INFINITY);
        check(f);
      }
    for (int q = 0; q < 4 * T; q++) check((float)(a + span * U(rng)));
    if (given) { // outside [a, b]: within a few 1 / ga of either end, and the infinities
      for (int q = 0; q < 2 * T; q++) {
        check((float)(a - 4.0 * U(rng) / (double)ga));
        check((float)(b + 4.0 * U(rng) / (double)ga));
      }
      check(-INFINITY), check(INFINITY);
    }
  }
  std::printf("D x %g: %lld values, certified %lld (strip2) / %lld (binner), wrong %lld / %lld; %lld ranges skipped\n",
              scale, nval, ncert2, ncert3, bad2, bad3, nskip);
  return (bad2 || bad3) ? 1 : 0;
}
