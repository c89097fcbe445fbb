// edt_search_emu.cpp -- drives the host builds of the CUDA edt search kernels
// (edt_search_emu_k.cpp; tools/emu/edt_search_emu.sh) over random cases: 2-4
// spatial axes, 0-1 batch axes, integer sampling, masks with ties, blobs,
// lines and images without background, inputs with a reversed axis, random
// block shapes (lines per block, segments, rows, threads) and 1-3 blocks
// (grid-stride loops); distances and indices against the CPU backend.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ndforge.h"

#define EMU_DECL(name)                                                                                             \
  extern "C" void emu_pass_##name(const void *in, const int *sfeat, const void *sw, int *dfeat, void *dw,         \
                                  void *dist, int *idx, int64_t nlines, int64_t n, int64_t inner, double s, int nd, \
                                  int nb, int axis, int64_t npix, const int64_t *shape, const int64_t *istr,      \
                                  const int64_t *dstr, const int64_t *xstr, int64_t xk, const double *samp,       \
                                  int64_t slw, int scap, unsigned grid, unsigned bx, unsigned by);
EMU_DECL(sfirst0)
EMU_DECL(sfirst1)
EMU_DECL(smid0)
EMU_DECL(smid1)
EMU_DECL(srows0)
EMU_DECL(srows1)
EMU_DECL(sdmid)
EMU_DECL(sdmidt)
EMU_DECL(sdrows)
EMU_DECL(bfirst)
EMU_DECL(ofirst)

static uint64_t rs = 0x9e3779b97f4a7c15ull;
static uint64_t rnd() {
  rs ^= rs << 13;
  rs ^= rs >> 7;
  rs ^= rs << 17;
  return rs;
}
static int64_t irand(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)); }
static double urand() { return (double)(rnd() >> 11) / 9007199254740992.0; }

int main(int argc, char **argv) {
  const int cases = argc > 1 ? atoi(argv[1]) : 60;
  ndf_ctx_options co;
  ndf_ctx_options_init(&co);
  co.backend = NDF_BACKEND_CPU;
  ndf_ctx *ctx = nullptr;
  if (ndf_ctx_create(&ctx, &co) != NDF_OK) return 2;
  int bad = 0;
  for (int cs = 0; cs < cases && bad < 5; cs++) {
    const int nsp = (int)irand(2, 4), nb = (int)irand(0, 1), nd = nsp + nb, has_idx = (int)irand(0, 1);
    int64_t sh[NDF_MAX_NDIM] = {0};
    static const int64_t hi[5] = {0, 0, 120, 26, 10};
    for (int d = 0; d < nd; d++) sh[d] = d < nb ? irand(1, 3) : urand() < 0.1 ? irand(1, 2) : irand(1, hi[nsp]);
    if (nsp == 3 && urand() < 0.3) { // a long middle axis (past the search cap): 2-4 x 70-200 x 2-5
      sh[nb] = irand(2, 4);
      sh[nb + 1] = irand(70, 200);
      sh[nb + 2] = irand(2, 5);
    }
    int64_t N = 1, npix = 1;
    for (int d = 0; d < nd; d++) N *= sh[d];
    for (int d = nb; d < nd; d++) npix *= sh[d];
    double samp[NDF_MAX_NDIM] = {0};
    for (int d = 0; d < nsp; d++) samp[d] = urand() < 0.6 ? 1.0 : (double)irand(2, 3);
    const int kind = (int)irand(0, 6);
    std::vector<uint8_t> m((size_t)N);
    const double pr = urand();
    for (int64_t i = 0; i < N; i++) {
      switch (kind) {
        case 0: m[i] = urand() >= pr * 0.3; break;
        case 1: m[i] = (i % 3) != 0 && (i % 5) != 0; break; // lattice: ties
        case 3: case 4: m[i] = 1; break;                     // few points / no background
        case 5: m[i] = 0; break;                             // all background
        case 6: m[i] = i % sh[nd - 1] != 0 || urand() < 0.5; break; // background only at last coordinate 0
        default: m[i] = 0; break;
      }
    }
    if (kind == 2) { // balls of foreground
      const int nballs = (int)irand(1, 4);
      for (int bl = 0; bl < nballs; bl++) {
        double c[NDF_MAX_NDIM], rad = 1 + urand() * 10;
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
    // the CPU backend
    ndf_distance_options o;
    ndf_distance_options_init(&o);
    o.batch_dims = nb;
    o.nsampling = nsp;
    for (int d = 0; d < nsp; d++) o.sampling[d] = samp[d];
    int64_t ish[NDF_MAX_NDIM + 1];
    for (int d = 0; d < nb; d++) ish[d] = sh[d];
    ish[nb] = nsp;
    for (int d = nb; d < nd; d++) ish[d + 1] = sh[d];
    std::vector<double> cd((size_t)N), gd((size_t)N, -7.0);
    std::vector<int32_t> ci((size_t)(N * nsp)), gi((size_t)(N * nsp), -77);
    ndf_array in, da, ia;
    ndf_array_init(&in, m.data(), NDF_DEVICE_CPU, NDF_UINT8, nd, sh);
    ndf_array_init(&da, cd.data(), NDF_DEVICE_CPU, NDF_FLOAT64, nd, sh);
    ndf_array_init(&ia, ci.data(), NDF_DEVICE_CPU, NDF_INT32, nd + 1, ish);
    if (ndf_distance_transform_edt(ctx, &in, &da, &ia, &o) != NDF_OK) {
      printf("CPU: %s\n", ndf_errmsg(ctx));
      return 2;
    }
    // the kernels' input: the same mask with one axis reversed in memory (negative stride)
    const int rev = (int)irand(-1, nd - 1);
    std::vector<uint8_t> mr((size_t)N);
    int64_t istr[NDF_MAX_NDIM] = {0}, dstr[NDF_MAX_NDIM] = {0}, xstr[NDF_MAX_NDIM] = {0};
    {
      int64_t st = 1;
      for (int d = nd - 1; d >= 0; d--) {
        istr[d] = dstr[d] = st;
        st *= sh[d];
      }
      int64_t off = 0;
      if (rev >= 0) {
        off = (sh[rev] - 1) * istr[rev];
        istr[rev] = -istr[rev];
      }
      for (int64_t i = 0; i < N; i++) { // element i (C order) at off + sum coord * istr
        int64_t r = i, a = off;
        for (int d = nd - 1; d >= 0; d--) {
          a += (r % sh[d]) * istr[d];
          r /= sh[d];
        }
        mr[(size_t)a] = m[i];
      }
      const uint8_t *base = mr.data() + off;
      // index strides: array axis a -> index axis a (< nb) or a + 1
      int64_t xs[NDF_MAX_NDIM + 1];
      st = 1;
      for (int d = nd; d >= 0; d--) {
        xs[d] = st;
        st *= ish[d];
      }
      for (int a = 0; a < nd; a++) xstr[a] = xs[a < nb ? a : a + 1];
      const int64_t xk = xs[nb];
      std::vector<unsigned> W[2] = {std::vector<unsigned>((size_t)N, 0xdeadbeefu), std::vector<unsigned>((size_t)N, 0xdeadbeefu)};
      std::vector<int> F[2] = {std::vector<int>((size_t)N, -99), std::vector<int>((size_t)N, -99)};
      char cfg[256];
      int cn = 0;
      // the longest search before a line's envelope answers it: small caps exercise the fallback
      const int scap = urand() < 0.5 ? (int)irand(1, 4) : (int)irand(5, 200);
      cn += snprintf(cfg + cn, sizeof cfg - cn, " cap %d", scap);
      for (int d = 0; d < nsp; d++) {
        const int axis = nb + d, first = d == 0, last = d == nsp - 1;
        int64_t inner = 1;
        for (int a = axis + 1; a < nd; a++) inner *= sh[a];
        const int64_t n = sh[axis], nlines = N / n;
        const int src = (d + 1) % 2, dst = d % 2;
        const unsigned grid = (unsigned)irand(1, 3);
        const int64_t bpv = has_idx ? 10 : 6;
        if (first) {
          int64_t lw = irand(1, 32), minseg = (n + 31) / 32;
          while (lw > 1 && 512 / lw < minseg) lw--;
          const int64_t nseg = irand(minseg, std::min<int64_t>(512 / lw, std::max<int64_t>(minseg, n)));
          cn += snprintf(cfg + cn, sizeof cfg - cn, " first %lldx%lld/%u", (long long)lw, (long long)nseg, grid);
          (has_idx ? emu_pass_sfirst1 : emu_pass_sfirst0)(base, nullptr, nullptr, F[dst].data(), W[dst].data(), nullptr,
                                                          nullptr, nlines, n, inner, samp[d], nd, nb, axis, npix, sh,
                                                          istr, dstr, xstr, xk, samp, 0, scap, grid, (unsigned)lw, (unsigned)nseg);
        } else if (!last && !has_idx && urand() < 0.7) { // ndf_edt_sdmid(t): padded staging, distances only
          const int64_t pad = std::min<int64_t>(scap, n - 1) + 3;
          const int tr = urand() < 0.6; // ndf_edt_sdmidt: lines transposed, pitch edt_spitch, answer tile
          auto bytes = [&](int64_t lw) {
            const int64_t q = n + pad, P = q + (((32 / lw - q) % 32) + 32) % 32;
            return tr ? 4 * (P - n + lw * P) + 4 * n * (lw + 1) : lw * (n * 6 + 8 * pad);
          };
          int64_t lw = 8 << irand(0, 2);
          while (lw > 8 && bytes(lw) > 65536) lw /= 2;
          if (bytes(lw) > 65536) { printf("case %d: no room\n", cs); continue; }
          const unsigned bx = (unsigned)(32 * irand(1, 8));
          cn += snprintf(cfg + cn, sizeof cfg - cn, " %s %lld/%ux%u", tr ? "sdmidt" : "sdmid", (long long)lw, bx, grid);
          (tr ? emu_pass_sdmidt : emu_pass_sdmid)(nullptr, F[src].data(), W[src].data(), F[dst].data(),
                                                  W[dst].data(), nullptr, nullptr, nlines,
                         n, inner, samp[d], nd, nb, axis, npix, sh, istr, dstr, xstr, xk, samp, lw, scap, grid, bx, 1);
        } else if (last && !has_idx && urand() < 0.6) { // ndf_edt_sdrows
          const int64_t pad = std::min<int64_t>(scap, n - 1) + 3;
          int64_t R = irand(1, 32);
          while (R > 1 && R * (n * 6 + 4 * pad) + 4 * pad > 65536) R--;
          const unsigned bx = (unsigned)(32 * irand(1, 8));
          cn += snprintf(cfg + cn, sizeof cfg - cn, " sdrows %lld/%ux%u", (long long)R, bx, grid);
          emu_pass_sdrows(nullptr, F[src].data(), W[src].data(), nullptr, nullptr, gd.data(), nullptr, nlines, n, inner,
                          samp[d], nd, nb, axis, npix, sh, istr, dstr, xstr, xk, samp, R, scap, grid, bx, 1);
        } else if (!last) {
          int64_t lw = 8 << irand(0, 2);
          while (lw > 8 && lw * n * bpv > 65536) lw /= 2;
          const unsigned bx = (unsigned)(32 * irand(1, 8));
          cn += snprintf(cfg + cn, sizeof cfg - cn, " mid %lld/%ux%u", (long long)lw, bx, grid);
          (has_idx ? emu_pass_smid1 : emu_pass_smid0)(nullptr, F[src].data(), W[src].data(), F[dst].data(),
                                                      W[dst].data(), nullptr, nullptr, nlines, n, inner, samp[d], nd,
                                                      nb, axis, npix, sh, istr, dstr, xstr, xk, samp, lw, scap, grid, bx, 1);
        } else {
          int64_t R = irand(1, 32);
          while (R > 1 && R * n * bpv > 65536) R--;
          const unsigned bx = (unsigned)(32 * irand(1, 8));
          cn += snprintf(cfg + cn, sizeof cfg - cn, " rows %lld/%ux%u", (long long)R, bx, grid);
          (has_idx ? emu_pass_srows1 : emu_pass_srows0)(nullptr, F[src].data(), W[src].data(), nullptr, nullptr,
                                                        gd.data(), has_idx ? gi.data() : nullptr, nlines, n, inner,
                                                        samp[d], nd, nb, axis, npix, sh, istr, dstr, xstr, xk, samp, R,
                                                        scap, grid, bx, 1);
        }
      }
      { // the envelope kernels' first pass: ndf_edt_bfirst (random block shape) = ndf_edt_first (its own)
        const int axis = nb;
        int64_t inner = 1;
        for (int a = axis + 1; a < nd; a++) inner *= sh[a];
        const int64_t n = sh[axis], nlines = N / n;
        const double s0 = urand() < 0.5 ? samp[0] : (urand() < 0.5 ? 0.7 : 1.3);
        std::vector<double> wb((size_t)N, -5.0), wo((size_t)N, -6.0);
        std::vector<int> fb((size_t)N, -99), fo((size_t)N, -98);
        int64_t lw = irand(1, 32), minseg = (n + 31) / 32;
        while (lw > 1 && 512 / lw < minseg) lw--;
        const int64_t nseg = irand(minseg, std::min<int64_t>(512 / lw, std::max<int64_t>(minseg, n)));
        emu_pass_bfirst(base, nullptr, nullptr, fb.data(), wb.data(), nullptr, nullptr, nlines, n, inner, s0, nd, nb,
                        axis, npix, sh, istr, dstr, xstr, xk, samp, 0, 0, (unsigned)irand(1, 3), (unsigned)lw,
                        (unsigned)nseg);
        const int64_t olw = 8 << irand(0, 2), onseg = std::min<int64_t>((n + 7) / 8, 1024 / olw);
        emu_pass_ofirst(base, nullptr, nullptr, fo.data(), wo.data(), nullptr, nullptr, nlines, n, inner, s0, nd, nb,
                        axis, npix, sh, istr, dstr, xstr, xk, samp, 0, 0, (unsigned)irand(1, 3), (unsigned)olw,
                        (unsigned)std::max<int64_t>(onseg, 1));
        int64_t fd = 0;
        for (int64_t i = 0; i < N; i++) fd += fb[i] != fo[i] || std::memcmp(&wb[i], &wo[i], sizeof(double)) != 0;
        if (fd) {
          printf("case %d: bfirst vs first: %lld voxels differ (s0 %g)\n", cs, (long long)fd, s0);
          bad++;
        }
      }
      int64_t diff = 0, first = -1, idiff = 0;
      for (int64_t i = 0; i < N; i++)
        if (gd[i] != cd[i]) diff++, first = first < 0 ? i : first;
      if (has_idx)
        for (int64_t i = 0; i < N * nsp; i++) idiff += gi[i] != ci[i];
      if (diff || idiff) {
        printf("case %d: nsp %d nb %d kind %d idx %d rev %d shape", cs, nsp, nb, kind, has_idx, rev);
        for (int d = 0; d < nd; d++) printf(" %lld", (long long)sh[d]);
        printf(" sampling");
        for (int d = 0; d < nsp; d++) printf(" %g", samp[d]);
        printf(" cfg%s: %lld distances, %lld indices differ", cfg, (long long)diff, (long long)idiff);
        if (first >= 0) printf(" (first %lld: %.17g vs %.17g)", (long long)first, gd[first], cd[first]);
        printf("\n");
        bad++;
      }
    }
  }
  ndf_ctx_destroy(ctx);
  printf("%s: %d cases\n", bad ? "FAILED" : "ok", cases);
  return bad ? 1 : 0;
}
