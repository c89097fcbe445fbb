// edt_wrows_emu.cpp -- drives host builds of the CUDA edt envelope path
// (tools/emu/edt_wrows_emu.sh; kernels of templates/distance_edt.cu run by
// edt_wrows_emu_k.cpp, one std::thread per CUDA thread, emulated warps):
// ndf_edt_bfirst (axis 0), ndf_edt_lines (middle axes), ndf_edt_wrows (the
// last axis, without exact arithmetic) with the envelope built by the warp
// (wfast 2, ndf_wenvp) or, in some cases, by lane 0 (wfast 0, ndf_wenv), on
// random cases: 2-4 spatial axes, 0-1 batch axes, non-integer and integer
// samplings (0.5, 1, 2 give exact ties), float64 / float32 distances, indices
// with and without distances, masks with ties (lattices), balls, sparse
// points, rows and images without background, full background; random warps
// per block and 1-3 blocks (grid-stride loops).  Distances and indices must
// equal the CPU backend's bit for bit.  Arguments: cases (default 80) and a
// seed; "bench" runs the benchmark's 1024^2 sampling (0.7, 1.3) + indices case.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "edt_wrows_emu.h"
#include "ndforge.h"

extern "C" void emu_pass_bfirst(const emu_args *);
extern "C" void emu_pass_lines(const emu_args *);
extern "C" void emu_pass_wrows_d0(const emu_args *); // double distances, no indices
extern "C" void emu_pass_wrows_d1(const emu_args *); // double distances, indices
extern "C" void emu_pass_wrows_f0(const emu_args *); // float distances
extern "C" void emu_pass_wrows_f1(const emu_args *);
extern "C" void emu_pass_wrows_x1(const emu_args *); // indices only

static uint64_t rs = 0x51ed270b27f3a6c5ull;
static uint64_t rnd() {
  rs ^= rs << 13;
  rs ^= rs >> 7;
  rs ^= rs << 17;
  return rs;
}
static int64_t irand(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)); }
static double urand() { return (double)(rnd() >> 11) / 9007199254740992.0; }

int main(int argc, char **argv) {
  const bool bench = argc > 1 && !strcmp(argv[1], "bench");
  const int cases = bench ? 1 : argc > 1 ? atoi(argv[1]) : 80;
  if (argc > 2) rs ^= strtoull(argv[2], nullptr, 10) * 0x9e3779b97f4a7c15ull; // a seed
  ndf_ctx_options co;
  ndf_ctx_options_init(&co);
  co.backend = NDF_BACKEND_CPU;
  ndf_ctx *ctx = nullptr;
  if (ndf_ctx_create(&ctx, &co) != NDF_OK) return 2;
  static const double sv[] = {0.7, 1.3, 0.5, 2.0, 1.0, 1.1, 0.35, 3.14159, 0.1, 3.0};
  int bad = 0, n_par = 0, n_old = 0;
  for (int cs = 0; cs < cases && bad < 5; cs++) {
    const int nsp = bench ? 2 : urand() < 0.6 ? 2 : (int)irand(3, 4), nb = bench ? 0 : (int)irand(0, 1),
              nd = nsp + nb;
    // outputs: 0 double, 1 double + indices, 2 float, 3 float + indices, 4 indices only
    const int outs = bench ? 1 : (int)irand(0, 4);
    const int has_idx = outs == 1 || outs == 3 || outs == 4, has_dist = outs != 4, flt = outs == 2 || outs == 3;
    int64_t sh[NDF_MAX_NDIM] = {0};
    for (int d = 0; d < nd; d++) {
      if (bench) sh[d] = 1024;
      else if (d < nb) sh[d] = irand(1, 3);
      else if (d == nd - 1) sh[d] = urand() < 0.1 ? irand(1, 3) : urand() < 0.08 ? irand(1900, 2100) : irand(4, nsp == 2 ? 300 : 70);
      else sh[d] = urand() < 0.1 ? irand(1, 2) : irand(1, nsp == 2 ? 60 : nsp == 3 ? 16 : 7);
    }
    int64_t N = 1, npix = 1;
    for (int d = 0; d < nd; d++) N *= sh[d];
    for (int d = nb; d < nd; d++) npix *= sh[d];
    double samp[NDF_MAX_NDIM] = {0};
    const int tie = urand() < 0.3; // samplings of 0.5 / 1 / 2 only: exact ties
    for (int d = 0; d < nsp; d++) samp[d] = bench ? (d ? 1.3 : 0.7) : tie ? sv[irand(2, 4)] : sv[irand(0, 9)];
    const int kind = bench ? 7 : (int)irand(0, 7);
    std::vector<uint8_t> m((size_t)N);
    const double pr = urand();
    for (int64_t i = 0; i < N; i++) {
      switch (kind) {
        case 0: m[i] = urand() >= pr * 0.3; break;
        case 1: m[i] = (i % 3) != 0 && (i % 5) != 0; break; // lattice: ties
        case 3: case 4: m[i] = 1; break;                     // few points / no background
        case 5: m[i] = 0; break;                             // all background
        case 6: m[i] = i % sh[nd - 1] != 0 || urand() < 0.5; break; // background only at last coordinate 0
        case 7: m[i] = urand() >= 1.0 / 256; break;          // the benchmark's density
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
    if (kind == 0 && urand() < 0.5) { // some rows without background
      for (int64_t r0 = 0; r0 < N; r0 += sh[nd - 1])
        if (urand() < 0.3)
          for (int64_t x = 0; x < sh[nd - 1]; x++) m[(size_t)(r0 + x)] = 1;
    }
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
    std::vector<float> cf((size_t)N), gf((size_t)N, -7.0f);
    std::vector<int32_t> ci((size_t)(N * nsp)), gi((size_t)(N * nsp), -77);
    ndf_array in, da, ia;
    ndf_array_init(&in, m.data(), NDF_DEVICE_CPU, NDF_UINT8, nd, sh);
    ndf_array_init(&da, flt ? (void *)cf.data() : (void *)cd.data(), NDF_DEVICE_CPU, flt ? NDF_FLOAT32 : NDF_FLOAT64, nd, sh);
    ndf_array_init(&ia, ci.data(), NDF_DEVICE_CPU, NDF_INT32, nd + 1, ish);
    if (ndf_distance_transform_edt(ctx, &in, has_dist ? &da : nullptr, has_idx ? &ia : nullptr, &o) != NDF_OK) {
      printf("CPU: %s\n", ndf_errmsg(ctx));
      return 2;
    }
    int64_t istr[NDF_MAX_NDIM] = {0}, dstr[NDF_MAX_NDIM] = {0}, xstr[NDF_MAX_NDIM] = {0};
    int64_t st = 1;
    for (int d = nd - 1; d >= 0; d--) {
      istr[d] = dstr[d] = st;
      st *= sh[d];
    }
    int64_t xs[NDF_MAX_NDIM + 1];
    st = 1;
    for (int d = nd; d >= 0; d--) {
      xs[d] = st;
      st *= ish[d];
    }
    for (int a = 0; a < nd; a++) xstr[a] = xs[a < nb ? a : a + 1];
    const int64_t xk = xs[nb];
    std::vector<double> W[2] = {std::vector<double>((size_t)N, -3.0), std::vector<double>((size_t)N, -3.0)};
    std::vector<int> F[2] = {std::vector<int>((size_t)N, -99), std::vector<int>((size_t)N, -99)};
    std::vector<unsigned char> stack((size_t)N * 16 + 16);
    char cfg[256];
    int cn = 0;
    for (int d = 0; d < nsp; d++) {
      const int axis = nb + d, first = d == 0, last = d == nsp - 1;
      int64_t inner = 1;
      for (int a = axis + 1; a < nd; a++) inner *= sh[a];
      const int64_t n = sh[axis], nlines = N / n;
      const int src = (d + 1) % 2, dst = d % 2;
      emu_args a;
      memset(&a, 0, sizeof a);
      a.in = m.data();
      a.sfeat = F[src].data();
      a.sw = W[src].data();
      a.dfeat = F[dst].data();
      a.dw = W[dst].data();
      a.stack = stack.data();
      a.dist = flt ? (void *)gf.data() : (void *)gd.data();
      a.idx = has_idx ? gi.data() : nullptr;
      a.nlines = nlines;
      a.n = n;
      a.inner = inner;
      a.s = samp[d];
      a.nd = nd;
      a.nb = nb;
      a.axis = axis;
      a.npix = npix;
      a.shape = sh;
      a.istr = istr;
      a.dstr = dstr;
      a.xstr = xstr;
      a.xk = xk;
      a.samp = samp;
      a.grid = bench ? 1 : (unsigned)irand(1, 3);
      if (first) { // ndf_edt_bfirst: lw lines x nseg segments of at most 32 voxels
        int64_t lw = bench ? 32 : irand(1, 32), minseg = (n + 31) / 32;
        while (lw > 1 && 512 / lw < minseg) lw--;
        const int64_t nseg = bench ? minseg : irand(minseg, std::min<int64_t>(512 / lw, std::max<int64_t>(minseg, n)));
        a.bx = (unsigned)lw;
        a.by = (unsigned)nseg;
        a.grid = bench ? 8 : a.grid;
        a.wbytes = 0;
        cn += snprintf(cfg + cn, sizeof cfg - cn, " bfirst %lldx%lld/%u", (long long)lw, (long long)nseg, a.grid);
        emu_pass_bfirst(&a);
        int64_t fd = 0; // against the first pass written out: the nearer background, the previous on a tie
        for (int64_t L = 0; L < nlines; L++) {
          const int64_t o = L / inner, j = L - o * inner, w0 = o * n * inner + j;
          for (int64_t x = 0; x < n; x++) {
            int64_t pv = -1, nx = -1;
            for (int64_t y = x; y >= 0 && pv < 0; y--) if (!m[(size_t)(w0 + y * inner)]) pv = y;
            for (int64_t y = x; y < n && nx < 0; y++) if (!m[(size_t)(w0 + y * inner)]) nx = y;
            const int64_t v = pv < 0 ? nx : nx < 0 ? pv : (x - pv <= nx - x ? pv : nx);
            const double t = (double)(v - x) * samp[0];
            const double w = v < 0 ? 0.0 : 0.0 + t * t;
            const int f = v < 0 ? -1 : (int)(w0 % npix + v * inner);
            fd += F[dst][(size_t)(w0 + x * inner)] != f || W[dst][(size_t)(w0 + x * inner)] != w;
          }
        }
        if (fd) printf("case %d: the first pass differs at %lld voxels\n", cs, (long long)fd);
      } else if (!last) {
        a.bx = (unsigned)(32 * irand(1, 4));
        a.by = 1;
        cn += snprintf(cfg + cn, sizeof cfg - cn, " lines %u/%u", a.bx, a.grid);
        emu_pass_lines(&a);
      } else { // ndf_edt_wrows without exact arithmetic, as edt_wrows_plan sets it up
        const int64_t c = (n + 31) / 32, stride = c + (c % 2 == 0), pbytes = (32 * stride * 25 + 15) & ~(int64_t)15;
        const int par = pbytes <= 48 * 1024 && (bench || urand() < 0.85);
        if (par) {
          a.wfast = 2;
          a.wseg = c;
          a.wstride = stride;
          a.wbytes = pbytes;
          n_par++;
        } else {
          a.wfast = 0;
          a.wseg = a.wstride = n;
          a.wbytes = (n * 20 + 15) & ~(int64_t)15;
          n_old++;
        }
        a.wexact = 0;
        a.wtree = 1;
        const int64_t maxw = std::min<int64_t>(4, 48 * 1024 / a.wbytes);
        a.bx = 32;
        a.by = (unsigned)(bench ? 1 : irand(1, std::max<int64_t>(1, maxw)));
        cn += snprintf(cfg + cn, sizeof cfg - cn, " wrows %s %ux%u", par ? "warp" : "lane0", a.by, a.grid);
        (outs == 0 ? emu_pass_wrows_d0 : outs == 1 ? emu_pass_wrows_d1 : outs == 2 ? emu_pass_wrows_f0
         : outs == 3 ? emu_pass_wrows_f1 : emu_pass_wrows_x1)(&a);
      }
    }
    int64_t diff = 0, first = -1, idiff = 0;
    if (has_dist)
      for (int64_t i = 0; i < N; i++) {
        const bool ne = flt ? memcmp(&gf[i], &cf[i], 4) != 0 : memcmp(&gd[i], &cd[i], 8) != 0;
        if (ne) diff++, first = first < 0 ? i : first;
      }
    if (has_idx)
      for (int64_t i = 0; i < N * nsp; i++) idiff += gi[i] != ci[i];
    if (diff || idiff || bench) {
      printf("case %d: nsp %d nb %d kind %d outs %d shape", cs, nsp, nb, kind, outs);
      for (int d = 0; d < nd; d++) printf(" %lld", (long long)sh[d]);
      printf(" sampling");
      for (int d = 0; d < nsp; d++) printf(" %g", samp[d]);
      printf(" cfg%s: %lld distances, %lld indices differ", cfg, (long long)diff, (long long)idiff);
      if (first >= 0) printf(" (first %lld: %.17g vs %.17g)", (long long)first, flt ? gf[first] : gd[first], flt ? cf[first] : cd[first]);
      printf("\n");
      bad += diff || idiff;
    }
  }
  ndf_ctx_destroy(ctx);
  printf("%s: %d cases (%d warp envelopes, %d lane-0 envelopes)\n", bad ? "FAILED" : "ok", cases, n_par, n_old);
  return bad ? 1 : 0;
}
