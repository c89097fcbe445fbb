/*
 * test_cdt_separable.c -- the separable algorithm of the CUDA cdt
 * (templates/distance_cdt.cu), written here as plain C that follows the
 * kernels step for step, against the CPU backend (scipy's two-pass chamfer,
 * itself checked against scipy by test_distance) and against a brute-force
 * L1 / L-inf distance to the nearest background voxel, on random inputs:
 * ndim 1-4, 0-2 batch axes, sparse / dense background, single points (long
 * distances), images without background (-1 everywhere), strided inputs,
 * metric taxicab and chessboard (by name and as structures, including ones
 * whose second half differs: scipy reads only the first half).
 *
 * It establishes, on the CPU, the identity the CUDA path relies on:
 * scipy's chamfer with generate_binary_structure(rank, 1) / (rank, rank)
 * equals the exact L1 / L-inf distance (ADR 0007), bit for bit, int32.
 * Seed: NDF_TEST_SEED (printed); cases: NDF_TEST_CASES (default 300).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ndforge.h"
#include "testutil.h"

#define INF (1 << 30)

static int imin(int a, int b) { return a < b ? a : b; }

/* ndf_cdt_rows: along a row of n (stride 1): prefix-min of D(y) - y, then
 * suffix-min of D(y) + y, in chunks of 32 as the warp does. */
static void ref_rows(const uint8_t *fg, int *out, int64_t n) { /* the staged variant */
  int carry = INF;
  for (int64_t b = 0; b < n; b += 32) {
    int v[32];
    for (int l = 0; l < 32; l++) v[l] = b + l < n ? (fg[b + l] ? INF : 0) - (int)(b + l) : INF;
    for (int l = 1; l < 32; l++) v[l] = imin(v[l], v[l - 1]);
    for (int l = 0; l < 32; l++) v[l] = imin(v[l], carry);
    carry = v[31];
    for (int l = 0; l < 32 && b + l < n; l++) out[b + l] = v[l] + (int)(b + l);
  }
  carry = 0x7fffffff;
  for (int64_t b = ((n + 31) / 32 - 1) * 32; b >= 0; b -= 32) {
    int v[32];
    /* D from f, as the staged kernel does (f(x) = 0 exactly where D(x) = 0) */
    for (int l = 0; l < 32; l++) v[l] = b + l < n ? (out[b + l] == 0 ? 0 : INF) + (int)(b + l) : 0x7fffffff;
    for (int l = 30; l >= 0; l--) v[l] = imin(v[l], v[l + 1]);
    for (int l = 0; l < 32; l++) v[l] = imin(v[l], carry);
    carry = v[0];
    for (int l = 0; l < 32 && b + l < n; l++) out[b + l] = imin(out[b + l], v[l] - (int)(b + l));
  }
}

/* ndf_cdt_lines on one line (stride st): taxicab recurrences or the chessboard deques. */
static void ref_line(const int *src, int *dst, int64_t n, int64_t st, int chess, int *qy, int *qd) {
  if (!chess) {
    int f = INF;
    for (int64_t x = 0; x < n; x++) dst[x * st] = f = imin(f + 1, src[x * st]);
    int g = INF;
    for (int64_t x = n - 1; x >= 0; x--) dst[x * st] = g = imin(g + 1, dst[x * st]);
    return;
  }
  for (int dir = 0; dir < 2; dir++) {
    int64_t h = 0, t = 0, yexp = -1;
    for (int64_t i = 0; i < n; i++) {
      const int64_t x = dir ? n - 1 - i : i;
      const int dx = src[x * st];
      while (t > h && qd[t - 1] >= dx) t--;
      qy[t] = (int)x;
      qd[t] = dx;
      t++;
      while (dir ? (int64_t)qy[h] - qd[h] > x : (int64_t)qy[h] + qd[h] < x) yexp = qy[h++];
      int v = qd[h];
      if (yexp >= 0) v = imin(v, (int)(dir ? yexp - x : x - yexp));
      dst[x * st] = dir ? imin(v, dst[x * st]) : v;
    }
  }
}

/* ndf_cdt_seg on one line: nseg segments, each running the recurrences alone,
 * carries from the others' end values, then the recurrences again. */
static void ref_line_seg(const int *src, int *dst, int64_t n, int64_t st, int nseg) {
  int ef[1024], eb[1024];
  const int64_t seg = (n + nseg - 1) / nseg;
  for (int t = 0; t < nseg; t++) {
    const int64_t x0 = t * seg < n ? t * seg : n, x1 = x0 + seg < n ? x0 + seg : n;
    ef[t] = eb[t] = INF;
    for (int64_t x = x0; x < x1; x++) ef[t] = imin(ef[t] + 1, src[x * st]);
    for (int64_t x = x1 - 1; x >= x0; x--) eb[t] = imin(eb[t] + 1, src[x * st]);
  }
  for (int t = 0; t < nseg; t++) {
    const int64_t x0 = t * seg < n ? t * seg : n, x1 = x0 + seg < n ? x0 + seg : n;
    int cf = INF, cb = INF;
    for (int k = 0; k < t; k++) {
      const int64_t xe = (k + 1) * seg < n ? (k + 1) * seg : n;
      cf = imin(cf, ef[k] + (int)(x0 - xe));
    }
    for (int k = t + 1; k < nseg; k++) {
      const int64_t xs = k * seg < n ? k * seg : n;
      cb = imin(cb, eb[k] + (int)(xs - x1));
    }
    cf = imin(cf, INF);
    cb = imin(cb, INF);
    int f = cf;
    for (int64_t x = x0; x < x1; x++) dst[x * st] = f = imin(f + 1, src[x * st]);
    int g = cb;
    for (int64_t x = x1 - 1; x >= x0; x--) dst[x * st] = g = imin(g + 1, dst[x * st]);
  }
}

/* ndf_cdt_ctile on one line: the outward search, O(distance) per voxel. */
static void ref_line_search(const int *src, int *dst, int64_t n, int64_t st) {
  int any = 0;
  for (int64_t x = 0; x < n; x++) any |= src[x * st] < INF;
  for (int64_t x = 0; x < n; x++) {
    int best = src[x * st];
    if (any)
      for (int64_t r = 1; r < best && (x - r >= 0 || x + r < n); r++) {
        if (x - r >= 0) best = imin(best, src[(x - r) * st] > r ? src[(x - r) * st] : (int)r);
        if (x + r < n) best = imin(best, src[(x + r) * st] > r ? src[(x + r) * st] : (int)r);
      }
    dst[x * st] = best;
  }
}

static int g_nseg; /* > 0: later passes as ndf_cdt_seg with this many segments (taxicab) / ndf_cdt_ctile (chessboard) */

/* The whole separable transform of one image (C order, shape sh). */
static void ref_cdt(const uint8_t *fg, int32_t *out, const int64_t *sh, int nsp, int chess) {
  int64_t N = 1;
  for (int d = 0; d < nsp; d++) N *= sh[d];
  int *a = malloc((size_t)N * sizeof *a), *b = malloc((size_t)N * sizeof *b);
  int64_t maxn = 1;
  for (int d = 0; d < nsp; d++) maxn = sh[d] > maxn ? sh[d] : maxn;
  int *qy = malloc((size_t)maxn * sizeof *qy), *qd = malloc((size_t)maxn * sizeof *qd);
  const int64_t nx = sh[nsp - 1];
  for (int64_t r = 0; r < N / nx; r++) ref_rows(fg + r * nx, a + r * nx, nx);
  for (int d = 0; d + 1 < nsp; d++) {
    int64_t inner = 1;
    for (int e = d + 1; e < nsp; e++) inner *= sh[e];
    const int64_t n = sh[d], outer = N / (n * inner);
    for (int64_t o = 0; o < outer; o++)
      for (int64_t j = 0; j < inner; j++) {
        if (chess && g_nseg > 0)
          ref_line_search(a + o * n * inner + j, b + o * n * inner + j, n, inner);
        else if (!chess && g_nseg > 0)
          ref_line_seg(a + o * n * inner + j, b + o * n * inner + j, n, inner, g_nseg);
        else
          ref_line(a + o * n * inner + j, b + o * n * inner + j, n, inner, chess, qy, qd);
      }
    int *t = a;
    a = b;
    b = t;
  }
  for (int64_t i = 0; i < N; i++) out[i] = a[i] >= INF ? -1 : a[i];
  free(a);
  free(b);
  free(qy);
  free(qd);
}

/* Exact L1 / L-inf distance to the nearest background voxel (small images). */
static void brute(const uint8_t *fg, int32_t *out, const int64_t *sh, int nsp, int chess) {
  int64_t N = 1;
  for (int d = 0; d < nsp; d++) N *= sh[d];
  for (int64_t p = 0; p < N; p++) {
    int32_t best = -1;
    for (int64_t q = 0; q < N; q++) {
      if (fg[q]) continue;
      int64_t rp = p, rq = q, acc = 0;
      for (int d = nsp - 1; d >= 0; d--) {
        int64_t t = rp % sh[d] - rq % sh[d];
        t = t < 0 ? -t : t;
        acc = chess ? (t > acc ? t : acc) : acc + t;
        rp /= sh[d];
        rq /= sh[d];
      }
      if (best < 0 || acc < best) best = (int32_t)acc;
    }
    out[p] = best;
  }
}

static void test_separable_vs_cpu(void **state) {
  (void)state;
  const uint64_t seed = tu_seed("NDF_TEST_SEED");
  const long ncases = tu_env_long("NDF_TEST_CASES", 300);
  tu_rng r;
  tu_rng_seed(&r, seed);
  ndf_ctx *ctx;
  ndf_ctx_options co;
  ndf_ctx_options_init(&co);
  co.backend = NDF_BACKEND_CPU;
  assert_int_equal(ndf_ctx_create(&ctx, &co), NDF_OK);
  int failed = 0;
  long nbrute = 0;
  for (long k = 0; k < ncases && failed < 5; k++) {
    const int nsp = (int)tu_rng_int(&r, 1, 4);
    int nb = (int)tu_rng_int(&r, 0, 2);
    if (nsp + nb > 5) nb = 5 - nsp;
    const int nd = nsp + nb;
    int64_t shape[NDF_MAX_NDIM];
    static const int64_t hi[5] = {0, 3000, 200, 40, 14};
    for (int d = 0; d < nb; d++) shape[d] = tu_rng_int(&r, 1, 3);
    for (int d = 0; d < nsp; d++)
      shape[nb + d] = tu_rng_chance(&r, 0.1) ? tu_rng_int(&r, 1, 3) : tu_rng_int(&r, 1, hi[nsp]);
    const int chess = (int)tu_rng_int(&r, 0, 1);
    /* the segment count of ndf_cdt_seg: up to 128 (1024 / 8 lines), at times more segments than voxels */
    g_nseg = tu_rng_chance(&r, 0.3) ? 0 : (int)tu_rng_int(&r, 1, tu_rng_chance(&r, 0.5) ? 8 : 128);
    const int as_struct = tu_rng_chance(&r, 0.3);
    const ndf_dtype dt = tu_rng_chance(&r, 0.5) ? NDF_UINT8 : NDF_FLOAT32;
    tu_array h, lin, cd;
    assert_int_equal(tu_array_alloc(&h, dt, nd, shape), 0);
    const int64_t N = ndf_array_size(&h.arr);
    int64_t npix = 1;
    for (int d = nb; d < nd; d++) npix *= shape[d];
    uint8_t *m = malloc((size_t)N);
    const int kind = (int)tu_rng_int(&r, 0, 4);
    const double p = tu_rng_unif(&r);
    for (int64_t i = 0; i < N; i++)
      m[i] = kind == 0 ? !tu_rng_chance(&r, 0.01 * p) : kind == 1 ? !tu_rng_chance(&r, 0.5 * p) : kind == 2 ? 1 : kind == 3 ? 1 : tu_rng_chance(&r, p);
    if (kind == 3) /* one or two background points per image: long distances */
      for (int64_t i = 0; i < N / npix; i++)
        for (int t = 0; t < 2; t++) m[i * npix + tu_rng_int(&r, 0, npix - 1)] = 0;
    for (int64_t i = 0; i < N; i++) tu_set(&h.arr, i, m[i] ? (dt == NDF_FLOAT32 ? -0.5 : 3) : 0);
    assert_int_equal(tu_array_relayout(&lin, &h.arr, tu_rng_chance(&r, 0.4) ? TU_LAYOUT_PADDED | TU_LAYOUT_NEGATIVE : TU_LAYOUT_C, &r), 0);
    assert_int_equal(tu_array_alloc(&cd, NDF_INT32, nd, shape), 0);
    ndf_distance_options o;
    ndf_distance_options_init(&o);
    o.batch_dims = nb;
    tu_array st = {0};
    if (as_struct) { /* generate_binary_structure(nsp, conn), second half scrambled (scipy ignores it) */
      int64_t ssh[NDF_MAX_NDIM];
      for (int d = 0; d < nsp; d++) ssh[d] = 3;
      assert_int_equal(tu_array_alloc(&st, NDF_UINT8, nsp, ssh), 0);
      const int64_t sn = ndf_array_size(&st.arr);
      for (int64_t i = 0; i < sn; i++) {
        int64_t rr = i;
        int dd = 0;
        for (int d = 0; d < nsp; d++) {
          dd += rr % 3 != 1;
          rr /= 3;
        }
        tu_set(&st.arr, i, i > sn / 2 ? tu_rng_int(&r, 0, 1) : dd <= (chess ? nsp : 1));
      }
      o.metric_structure = &st.arr;
    } else {
      o.metric = chess ? NDF_METRIC_CHESSBOARD : NDF_METRIC_TAXICAB;
    }
    assert_int_equal(ndf_distance_transform_cdt(ctx, &lin.arr, &cd.arr, NULL, &o), NDF_OK);
    int32_t *ref = malloc((size_t)npix * sizeof *ref), *bf = malloc((size_t)npix * sizeof *bf);
    const int do_brute = npix <= 3000;
    nbrute += do_brute;
    for (int64_t img = 0; img < N / npix && failed < 5; img++) {
      ref_cdt(m + img * npix, ref, shape + nb, nsp, chess);
      if (do_brute) brute(m + img * npix, bf, shape + nb, nsp, chess);
      for (int64_t i = 0; i < npix; i++) {
        const int32_t cpu = (int32_t)tu_get(&cd.arr, img * npix + i);
        if (cpu != ref[i] || (do_brute && cpu != bf[i])) {
          printf("case %ld (%s nsp %d batch %d kind %d struct %d) image %lld voxel %lld: cpu %d separable %d brute %d; seed %llu\n",
                 k, chess ? "chessboard" : "taxicab", nsp, nb, kind, as_struct, (long long)img, (long long)i, cpu,
                 ref[i], do_brute ? bf[i] : 0, (unsigned long long)seed);
          failed++;
          break;
        }
      }
    }
    free(ref);
    free(bf);
    free(m);
    tu_array_free(&h);
    tu_array_free(&lin);
    tu_array_free(&cd);
    if (as_struct) tu_array_free(&st);
  }
  printf("%ld cases (%ld also against brute force), seed %llu\n", ncases, nbrute, (unsigned long long)seed);
  ndf_ctx_destroy(ctx);
  assert_int_equal(failed, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_separable_vs_cpu)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
