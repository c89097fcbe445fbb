// edt_search_check.cpp -- host emulation of the CUDA edt search path
// (templates/distance_edt.cu, ndf_edt_s*; see edt_search_check.sh) against
// the CPU backend: passes over axes 0 .. n-1 of the working layout
// [outer][n][inner]; pass 0 as ndf_edt_sfirst (the nearer of the previous
// and the next background, the previous on a tie), later passes as
// ndf_edt_smid / ndf_edt_srows (each line staged with a stride, the
// kernels' ndf_ssearch per position; a line without a site: W none, feature
// -1; in the last pass scipy's no-background distance).  Integer sampling
// with W below 2^32, as the host requires for this path.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "ndforge.h"

#define __device__
#define __forceinline__ inline
typedef long long ndf_i64;
#include SEARCH_INC

static uint64_t rs = 88172645463325252ull;
static uint64_t rnd() {
  rs ^= rs << 13;
  rs ^= rs >> 7;
  rs ^= rs << 17;
  return rs;
}
static int64_t irand(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)); }
static double urand() { return (double)(rnd() >> 11) / 9007199254740992.0; }

int main(int argc, char **argv) {
  const int cases = argc > 1 ? atoi(argv[1]) : 300;
  ndf_ctx_options co;
  ndf_ctx_options_init(&co);
  co.device = NDF_DEVICE_CPU;
  ndf_ctx *ctx = nullptr;
  if (ndf_ctx_create(&ctx, &co) != NDF_OK) {
    printf("ctx: %s\n", ndf_last_error());
    return 2;
  }
  int bad = 0;
  long fallback_bad = 0; // positions where the envelope fallback disagrees with the search
  for (int cs = 0; cs < cases && bad < 5; cs++) {
    const int nsp = (int)irand(2, 4), nb = (int)irand(0, 1), nd = nsp + nb;
    int64_t sh[NDF_MAX_NDIM];
    static const int64_t hi[5] = {0, 0, 90, 30, 12};
    for (int d = 0; d < nd; d++) sh[d] = d < nb ? irand(1, 3) : urand() < 0.1 ? irand(1, 2) : irand(1, hi[nsp]);
    int64_t N = 1, npix = 1;
    for (int d = 0; d < nd; d++) N *= sh[d];
    for (int d = nb; d < nd; d++) npix *= sh[d];
    ndf_distance_options o;
    ndf_distance_options_init(&o);
    o.batch_dims = nb;
    o.nsampling = nsp;
    for (int d = 0; d < nsp; d++) o.sampling[d] = urand() < 0.6 ? 1.0 : (double)irand(2, 3);
    // masks: 0 random density, 1 lattice (ties), 2 blobs (balls of foreground), 3 few points,
    // 4 no background, 5 all background, 6 background only at last coordinate 0 (empty lines)
    const int kind = (int)irand(0, 6);
    std::vector<uint8_t> m((size_t)N);
    const double p = urand();
    const int64_t last = sh[nd - 1];
    for (int64_t i = 0; i < N; i++) {
      switch (kind) {
        case 0: m[i] = urand() >= p * 0.3; break;
        case 1: m[i] = (i % 3) != 0 && (i % 5) != 0; break;
        case 3: case 4: m[i] = 1; break;
        case 5: m[i] = 0; break;
        case 6: m[i] = i % last != 0 || urand() < 0.5; break;
        default: m[i] = 0; break;
      }
    }
    if (kind == 2) { // balls of foreground in background
      const int nballs = (int)irand(1, 4);
      for (int bl = 0; bl < nballs; bl++) {
        double c[NDF_MAX_NDIM], rad = 1 + urand() * 12;
        for (int d = 0; d < nd; d++) c[d] = urand() * (double)sh[d];
        for (int64_t i = 0; i < N; i++) {
          int64_t r = i;
          double s2 = 0;
          for (int d = nd - 1; d >= 0; d--) {
            const double x = (double)(r % sh[d]);
            r /= sh[d];
            if (d >= nb) s2 += (x - c[d]) * (x - c[d]);
          }
          if (s2 <= rad * rad) m[i] = 1;
        }
      }
    }
    if (kind == 3)
      for (int k = 0; k < 2; k++) m[(size_t)irand(0, N - 1)] = 0;

    // CPU backend
    std::vector<double> cd((size_t)N);
    int64_t ish[NDF_MAX_NDIM + 1];
    for (int d = 0; d < nb; d++) ish[d] = sh[d];
    ish[nb] = nsp;
    for (int d = nb; d < nd; d++) ish[d + 1] = sh[d];
    std::vector<int32_t> ci((size_t)(N * nsp));
    ndf_array in, da, ia;
    ndf_array_init(&in, m.data(), NDF_DEVICE_CPU, NDF_UINT8, nd, sh);
    ndf_array_init(&da, cd.data(), NDF_DEVICE_CPU, NDF_FLOAT64, nd, sh);
    ndf_array_init(&ia, ci.data(), NDF_DEVICE_CPU, NDF_INT32, nd + 1, ish);
    if (ndf_distance_transform_edt(ctx, &in, &da, &ia, &o) != NDF_OK) {
      printf("CPU: %s\n", ndf_errmsg(ctx));
      return 2;
    }

    // emulation
    std::vector<unsigned> W((size_t)N), W2((size_t)N);
    std::vector<int> F((size_t)N), F2((size_t)N);
    std::vector<double> gd((size_t)N);
    std::vector<int32_t> gi((size_t)(N * nsp));
    for (int d = 0; d < nsp; d++) {
      const int axis = nb + d;
      int64_t inner = 1;
      for (int a = axis + 1; a < nd; a++) inner *= sh[a];
      const int64_t n = sh[axis], nlines = N / n;
      const unsigned si = (unsigned)o.sampling[d], s2 = si * si;
      std::vector<unsigned> line((size_t)n);
      for (int64_t L = 0; L < nlines; L++) {
        const int64_t oo = L / inner, j = L - oo * inner, w0 = oo * n * inner + j;
        if (d == 0) {
          for (int64_t x = 0; x < n; x++) {
            int prev = -1, next = -1;
            for (int64_t y = x; y >= 0 && prev < 0; y--)
              if (!m[w0 + y * inner]) prev = (int)y;
            for (int64_t y = x; y < n && next < 0; y++)
              if (!m[w0 + y * inner]) next = (int)y;
            const int q = next, xi = (int)x;
            const int v = prev < 0 ? q : q < 0 ? prev : (xi - prev <= q - xi ? prev : q);
            const unsigned t = v < 0 ? 0u : (unsigned)(xi > v ? xi - v : v - xi) * si;
            W2[w0 + x * inner] = v < 0 ? NDF_WNONE : t * t;
            F2[w0 + x * inner] = v < 0 ? -1 : (int)((w0 + (int64_t)v * inner) % npix);
          }
          continue;
        }
        const int stride = (int)irand(1, 3); // the staged line's stride (smid: lw words; srows: 1)
        std::vector<unsigned> st((size_t)(n * stride), 12345u);
        bool any = false;
        for (int64_t x = 0; x < n; x++) {
          st[x * stride] = W[w0 + x * inner];
          any |= W[w0 + x * inner] != NDF_WNONE;
        }
        // the fallback: the line's exact envelope and a binary search per position, which must
        // give the search's answer at every position
        std::vector<unsigned short> stk((size_t)n);
        const int G = any ? ndf_senv(st.data(), stride, (int)n, stk.data(), (ndf_i64)si) : 0;
        for (int64_t x = 0; x < n; x++) {
          unsigned best = NDF_WNONE;
          int pos = -1;
          if (any) {
            ndf_ssearch(st.data(), stride, (int)n, (int)x, s2, 1 << 30, best, pos);
            unsigned b2;
            const int p2 = ndf_squery(st.data(), stride, stk.data(), G, (int)x, s2, b2);
            if (b2 != best || p2 != pos) fallback_bad++;
          }
          const int f = pos >= 0 ? F[w0 + pos * inner] : -1;
          if (d < nsp - 1) {
            W2[w0 + x * inner] = best;
            F2[w0 + x * inner] = f;
          } else {
            const int64_t wi = w0 + x * inner;
            double d2;
            if (!any) { // scipy's virtual feature (-1, 0, ...)
              int64_t r = wi % npix, co2[NDF_MAX_NDIM];
              for (int k = nsp - 1; k >= 0; k--) {
                co2[k] = r % sh[nb + k];
                r /= sh[nb + k];
              }
              d2 = 0;
              for (int k = 0; k < nsp; k++) {
                const double t = (double)((k == 0 ? -1 : 0) - co2[k]) * o.sampling[k];
                d2 = k == 0 ? t * t : d2 + t * t;
              }
            } else {
              d2 = (double)best;
            }
            gd[wi] = std::sqrt(d2);
            // indices: batch, coordinate axis, spatial (C order)
            const int64_t b = wi / npix, r0 = wi % npix;
            int64_t r = f < 0 ? 0 : f;
            int32_t cc[NDF_MAX_NDIM];
            for (int k = nsp - 1; k >= 0; k--) {
              cc[k] = (int32_t)(r % sh[nb + k]);
              r /= sh[nb + k];
            }
            if (f < 0)
              for (int k = 0; k < nsp; k++) cc[k] = k == 0 ? -1 : 0;
            for (int k = 0; k < nsp; k++) gi[(b * nsp + k) * npix + r0] = cc[k];
          }
        }
      }
      W.swap(W2);
      F.swap(F2);
    }
    int64_t diff = 0, first = -1;
    for (int64_t i = 0; i < N; i++)
      if (gd[i] != cd[i]) diff++, first = first < 0 ? i : first;
    int64_t idiff = 0;
    for (int64_t i = 0; i < N * nsp; i++) idiff += gi[i] != ci[i];
    if (diff || idiff) {
      printf("case %d: nsp %d nb %d kind %d shape", cs, nsp, nb, kind);
      for (int d = 0; d < nd; d++) printf(" %lld", (long long)sh[d]);
      printf(" sampling");
      for (int d = 0; d < nsp; d++) printf(" %g", o.sampling[d]);
      printf(": %lld distances, %lld indices differ", (long long)diff, (long long)idiff);
      if (first >= 0) printf(" (first %lld: %.17g vs %.17g)", (long long)first, gd[first], cd[first]);
      printf("\n");
      bad++;
    }
  }
  ndf_ctx_destroy(ctx);
  if (fallback_bad) printf("envelope fallback: %ld positions differ from the search\n", fallback_bad);
  printf("%s: %d cases\n", bad || fallback_bad ? "FAILED" : "ok", cases);
  return bad || fallback_bad ? 1 : 0;
}
