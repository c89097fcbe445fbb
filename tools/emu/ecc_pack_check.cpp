// ecc_pack_check.cpp -- host check of the packed bin formulation of ndf_ecc_pack
// (templates/ndf_ecc_pack.cuh, templates/ecc.cu) against the CPU backend: the
// bins as the kernel takes them (float thresholds rounded down, first guess in
// float, corrections), the packed words with the outside marker, the x - 1 /
// x + 1 words by the kernel's byte permutation, ndf_ecc_pack_sum, one
// histogram per image, prefix sums.  Random 2-D/3-D shapes (odd, 1-long
// axes), batches, V and T, ties, constant images, thresholds as values /
// over [min, max] / over a range, T in 1..510.  It does not run the kernel's
// tiling, barriers or atomics (the GPU test does).  Build and run:
// tools/emu/ecc_pack_check.sh BUILD_DIR [cases].
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
extern "C" {
#include "ndforge.h"
}
#define NDF_ECC_CEILF std::ceil
#include "../../templates/ndf_ecc_pack.cuh"

static uint64_t sd = 12345;
static uint64_t rnd() { return sd = sd * 6364136223846793005ULL + 1442695040888963407ULL, sd >> 11; }
static double urand() { return (double)rnd() * 0x1p-53; }
static int64_t irand(int64_t a, int64_t b) { return a + (int64_t)(rnd() % (uint64_t)(b - a + 1)); }

static unsigned byte_perm(unsigned x, unsigned y, unsigned s) {
  const uint64_t v = (uint64_t)x | ((uint64_t)y << 32);
  unsigned r = 0;
  for (int i = 0; i < 4; i++) r |= (unsigned)((v >> (8 * ((s >> (4 * i)) & 7))) & 0xff) << (8 * i);
  return r;
}
static float rd_float(double t) {
  float f = (float)t;
  if ((double)f > t) f = std::nextafter(f, -INFINITY);
  return f;
}
static unsigned bin_of(float f, const float *tv, int T, int uni, float lo, float inv) {
  return ndf_ecc_bin<float>(f, tv, T, uni, lo, inv);
}

template <int NSP, int CONS>
static void pack_curve(const float *img, int64_t nz, int64_t ny, int64_t nx, const float *tv, int T, int uni,
                       float lo, float inv, std::vector<long long> &hist) {
  const int64_t nw = (nx + 1) / 2;
  // words with a halo of one word / row / plane of the outside marker
  const int64_t WZ = nz + 2, WY = ny + 2, WX = nw + 2;
  const unsigned out = NDF_ECC_POUT | (NDF_ECC_POUT << 16) | (CONS == 1 ? NDF_ECC_PG : 0u);
  std::vector<unsigned> w((size_t)(WZ * WY * WX), out);
  for (int64_t z = 0; z < nz; z++)
    for (int64_t y = 0; y < ny; y++)
      for (int64_t xw = 0; xw < nw; xw++) {
        unsigned word = CONS == 1 ? NDF_ECC_PG : 0u;
        for (int h = 0; h < 2; h++) {
          const int64_t x = 2 * xw + h;
          const unsigned b = x < nx ? bin_of(img[(z * ny + y) * nx + x], tv, T, uni, lo, inv) : NDF_ECC_POUT;
          word |= b << (16 * h);
        }
        w[(size_t)(((z + 1) * WY + y + 1) * WX + xw + 1)] = word;
      }
  auto plane = [&](int64_t z, int64_t y, int64_t xw, unsigned (&R)[3][3]) {
    for (int ry = 0; ry < 3; ry++) {
      if (NSP == 2 && ry != 1) {
        R[ry][0] = R[ry][1] = R[ry][2] = 0;
        continue;
      }
      const int64_t yy = NSP == 3 ? y + ry : 1; // halo index
      const unsigned *row = &w[(size_t)((z * WY + yy) * WX)];
      const unsigned L = row[xw], W = row[xw + 1], Rw = row[xw + 2];
      R[ry][0] = byte_perm(L, W, 0x5432);
      R[ry][1] = W;
      R[ry][2] = byte_perm(W, Rw, 0x5432);
    }
  };
  for (int64_t z = 0; z < nz; z++)
    for (int64_t y = 0; y < ny; y++)
      for (int64_t xw = 0; xw < nw; xw++) {
        unsigned A[3][3], B[3][3], C[3][3];
        plane(z, y, xw, A);
        plane(z + 1, y, xw, B);
        plane(z + 2, y, xw, C);
        const unsigned d = ndf_ecc_pack_sum<NSP, CONS>(A, B, C);
        for (int h = 0; h < 2; h++) {
          const unsigned b = (B[1][1] >> (16 * h)) & 0x1ffu;
          const int c = ndf_ecc_pack_c<NSP, CONS>(d, h);
          if (c != 0 && b < (unsigned)T) hist[b] += c;
        }
      }
}

int main(int argc, char **argv) {
  const int cases = argc > 1 ? atoi(argv[1]) : 400;
  ndf_ctx *ctx;
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  o.backend = NDF_BACKEND_CPU;
  if (ndf_ctx_create(&ctx, &o) != NDF_OK) return 2;
  int bad = 0;
  { /* NaN takes bin T (never counted, flagged) through both bin searches */
    const float tv1[5] = {-INFINITY, 0.0f, 1.0f, 2.0f, 3.0f}; /* tv[-1] is read by the guess */
    for (int uni = 0; uni < 2; uni++)
      if (bin_of(NAN, tv1 + 1, 4, uni, 0.0f, 1.0f) != 4u) {
        std::printf("NaN: bin %u, want 4 (uni %d)\n", bin_of(NAN, tv1 + 1, 4, uni, 0.0f, 1.0f), uni);
        bad++;
      }
  }
  static const int64_t Ts[] = {1, 2, 3, 7, 64, 255, 256, 300, 509, 510};
  for (int cs = 0; cs < cases; cs++) {
    const int nsp = (int)irand(2, 3), cons = (int)irand(0, 1), tkind = (int)irand(0, 2), vkind = (int)irand(0, 2);
    const int nb = (int)irand(0, 1);
    int64_t T = Ts[irand(0, 9)];
    if (tkind != 0 && T < 2) T = 2;
    int64_t sh[NDF_MAX_NDIM];
    int nd = 0;
    if (nb) sh[nd++] = irand(1, 3);
    for (int d = 0; d < nsp; d++) sh[nd++] = urand() < 0.15 ? irand(1, 2) : irand(1, nsp == 2 ? 70 : 19);
    int64_t n = 1;
    for (int d = 0; d < nd; d++) n *= sh[d];
    std::vector<float> img((size_t)n);
    const int64_t top = irand(1, 6);
    const double kc = std::round(urand() * 10);
    for (auto &v : img) v = vkind == 0 ? (float)irand(0, top) : vkind == 1 ? (float)(urand() * 200 - 100) : (float)kc;
    std::vector<double> vals((size_t)T);
    for (auto &v : vals) v = vkind == 1 ? urand() * 220 - 110 : (double)irand(-1, (int)top + 1) + (urand() < 0.3 ? 0.5 : 0);
    if (T > 2 && tkind == 0) vals[0] = INFINITY, vals[1] = -INFINITY;
    ndf_array in, cur, va;
    ndf_array_init(&in, img.data(), NDF_DEVICE_CPU, NDF_FLOAT32, nd, sh);
    int64_t osh[2] = {nb ? sh[0] : T, T};
    std::vector<long long> ref((size_t)(nb ? sh[0] * T : T));
    ndf_array_init(&cur, ref.data(), NDF_DEVICE_CPU, NDF_INT64, nb ? 2 : 1, nb ? osh : &T);
    ndf_array_init(&va, vals.data(), NDF_DEVICE_CPU, NDF_FLOAT64, 1, &T);
    ndf_ecc_options eo;
    ndf_ecc_options_init(&eo);
    eo.construction = cons ? NDF_ECC_T : NDF_ECC_V;
    eo.batch_dims = nb;
    eo.nthresholds = T;
    if (tkind == 0) eo.values = &va;
    if (tkind == 2) {
      eo.has_range = 1;
      eo.range_lo = vkind == 1 ? -50 : 0;
      eo.range_hi = vkind == 1 ? 60 : (double)top - 0.5;
      if (urand() < 0.15) eo.range_lo = -1e300, eo.range_hi = urand() < 0.5 ? 1e300 : 1e-30; // past float: slow bins
    }
    if (ndf_euler_characteristic_curve(ctx, &in, &cur, &eo) != NDF_OK) {
      printf("CPU: %s\n", ndf_errmsg(ctx));
      return 2;
    }
    // the thresholds as the CUDA path takes them: sorted by (t, k); spaced: the binner
    std::vector<double> th((size_t)T);
    if (ndf_ecc_thresholds(ctx, &in, &eo, th.data(), T) != NDF_OK) {
      printf("thresholds: %s\n", ndf_errmsg(ctx));
      return 2;
    }
    std::vector<std::pair<double, int64_t>> srt((size_t)T);
    for (int64_t k = 0; k < T; k++) srt[(size_t)k] = {th[(size_t)k], k};
    std::sort(srt.begin(), srt.end());
    // padded as in the kernel: -inf, the thresholds rounded down to float, +inf
    std::vector<float> tvp((size_t)T + 2);
    tvp[0] = -INFINITY;
    tvp[(size_t)T + 1] = INFINITY;
    for (int64_t k = 0; k < T; k++) tvp[(size_t)k + 1] = rd_float(srt[(size_t)k].first);
    const float *tv = tvp.data() + 1;
    const double t0 = srt[0].first, tl = srt[(size_t)T - 1].first;
    const int uni = tkind != 0 && tl > t0;
    const float lo = uni ? (float)t0 : 0.0f, inv = uni ? (float)((double)(T - 1) / (tl - t0)) : 0.0f;
    const int64_t nimg = nb ? sh[0] : 1;
    const int64_t nz = nsp == 3 ? sh[nb] : sh[nb], ny = nsp == 3 ? sh[nb + 1] : 1, nx = sh[nd - 1];
    for (int64_t im = 0; im < nimg; im++) {
      std::vector<long long> hist((size_t)T, 0);
      const float *p = img.data() + im * nz * ny * nx;
      if (nsp == 2 && cons == 0) pack_curve<2, 0>(p, nz, ny, nx, tv, (int)T, uni, lo, inv, hist);
      if (nsp == 2 && cons == 1) pack_curve<2, 1>(p, nz, ny, nx, tv, (int)T, uni, lo, inv, hist);
      if (nsp == 3 && cons == 0) pack_curve<3, 0>(p, nz, ny, nx, tv, (int)T, uni, lo, inv, hist);
      if (nsp == 3 && cons == 1) pack_curve<3, 1>(p, nz, ny, nx, tv, (int)T, uni, lo, inv, hist);
      long long acc = 0;
      int ok = 1;
      for (int64_t k = 0; k < T; k++) {
        acc += hist[(size_t)k];
        if (ref[(size_t)(im * T + srt[(size_t)k].second)] != acc) ok = 0;
      }
      if (!ok) {
        bad++;
        printf("MISMATCH case %d: nsp %d cons %d tkind %d vkind %d T %lld shape", cs, nsp, cons, tkind, vkind,
               (long long)T);
        for (int d = 0; d < nd; d++) printf(" %lld", (long long)sh[d]);
        printf(" image %lld\n", (long long)im);
      }
    }
  }
  printf("%d cases, %d mismatches\n", cases, bad);
  ndf_ctx_destroy(ctx);
  return bad != 0;
}
