/* emu_grey_rt_stubs.c -- runtime-level host check of the register line
 * passes (tests/emu/emu_grey_rt.sh): the real runtime/grey_cuda.c (from
 * libndforge_internal.a) dispatches a box erosion/dilation; these stubs
 * replace the device calls it makes (bind, JIT lookup, scratch, launch) and
 * hand each launch's parameter bytes, grid and block to the emulated kernels
 * (emu_grey_rt.cc), on host memory.  Linked first with
 * --allow-multiple-definition, so they win over the library's.  The result
 * is compared bit for bit (memcmp) with the CPU backend on the same input.
 * Usage: emu_rt seed ncases; exit 1 on any mismatch or unexpected launch. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

int emu_run_kernel(int kind, unsigned grid, unsigned bx, unsigned by, unsigned smem, const void *params);
size_t emu_elem_size(void);

static int g_bad_launch, g_launches[3];

ndf_status ndf__ctx_bind(ndf_ctx *ctx) { (void)ctx; return NDF_OK; }
ndf_status ndf__scratch_alloc(ndf_ctx *ctx, size_t bytes, CUdeviceptr *out) {
  (void)ctx;
  void *p = malloc(bytes ? bytes : 1);
  memset(p, 0x77, bytes);
  *out = (CUdeviceptr)(uintptr_t)p;
  return p ? NDF_OK : NDF_ENOMEM;
}
void ndf__scratch_free(ndf_ctx *ctx, CUdeviceptr p) { (void)ctx; free((void *)(uintptr_t)p); }

static const char *slot(const ndf__kernel_req *r, const char *name) {
  for (int i = 0; i < r->nslots; i++)
    if (strcmp(r->slots[i].name, name) == 0) return ndf__slot_value(&r->slots[i]);
  return "";
}
ndf_status ndf__jit_get(ndf_ctx *ctx, const char *op, const ndf__kernel_req *req, CUfunction *out) {
  (void)ctx;
  (void)op;
  int kind = strcmp(req->kernel, "ndf_grey_linew") == 0 ? 1 : strcmp(req->kernel, "ndf_grey_linev") == 0 ? 2 : 0;
  char want[64];
  snprintf(want, sizeof want, "%d", NDF_SLOT_OP);
  if (!kind || strcmp(slot(req, "OP"), want) != 0) goto bad;
  snprintf(want, sizeof want, "%d", NDF_SLOT_MODE);
  if (strcmp(slot(req, "MODE"), want) != 0) goto bad;
  if (strcmp(slot(req, "T"), EMU_TNAME) != 0) goto bad;
  snprintf(want, sizeof want, "%d", NDF_SLOT_K);
  if (kind == 1 && strcmp(slot(req, "K"), want) != 0) goto bad;
  *out = (CUfunction)(uintptr_t)kind;
  return NDF_OK;
bad:
  printf("unexpected kernel request %s (T=%s OP=%s MODE=%s K=%s)\n", req->kernel, slot(req, "T"), slot(req, "OP"),
         slot(req, "MODE"), slot(req, "K"));
  g_bad_launch++;
  return NDF_ECUDA;
}
ndf_status ndf__launch(ndf_ctx *ctx, const char *name, CUfunction fn, unsigned grid, unsigned bx, unsigned by,
                       unsigned smem, void *params) {
  (void)ctx;
  (void)name;
  int kind = (int)(uintptr_t)fn;
  if (emu_run_kernel(kind, grid, bx, by, smem, params) != 0) {
    printf("bad launch: kernel %d grid %u block %u x %u smem %u\n", kind, grid, bx, by, smem);
    g_bad_launch++;
    return NDF_ECUDA;
  }
  g_launches[kind]++;
  return NDF_OK;
}

static uint64_t rs;
static uint64_t rnd(void) { rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17; return rs; }
static long ri(long lo, long hi) { return lo + (long)(rnd() % (uint64_t)(hi - lo + 1)); }

int main(int argc, char **argv) {
  rs = 0x9E3779B97F4A7C15ull ^ (uint64_t)atoll(argc > 1 ? argv[1] : "1");
  const long ncases = argc > 2 ? atol(argv[2]) : 6;
  ndf_ctx_options co;
  ndf_ctx_options_init(&co);
  co.backend = NDF_BACKEND_CPU;
  co.cpu_threads = 1;
  ndf_ctx *ctx;
  if (ndf_ctx_create(&ctx, &co) != NDF_OK) return 2;
  const ndf_dtype dt = strcmp(EMU_TNAME, "float") == 0 ? NDF_FLOAT32 : strcmp(EMU_TNAME, "double") == 0 ? NDF_FLOAT64
                       : strcmp(EMU_TNAME, "short") == 0 ? NDF_INT16 : NDF_UINT8;
  const size_t es = emu_elem_size();
  long bad = 0;
  for (long c = 0; c < ncases; c++) {
    /* 1-3 spatial axes, + 0-1 batch axis; the last spatial axis has extent K (grey_linew), the others
     * K or a random extent >= 8 (grey_linev), or 1 */
    const int nsp = (int)ri(1, 3), nb = (int)ri(0, 1), nd = nb + nsp;
    int64_t sh[8], size[8];
    for (int d = 0; d < nd; d++) sh[d] = d < nb ? ri(1, 3) : ri(0, 4) == 0 ? ri(1, 5) : d == nd - 1 ? ri(1, 400) : ri(1, 90);
    for (int d = 0; d < nsp; d++) size[d] = d == nsp - 1 ? NDF_SLOT_K : ri(0, 3) == 0 ? 1 : ri(0, 1) ? NDF_SLOT_K : ri(8, 70);
    int64_t n = 1;
    for (int d = 0; d < nd; d++) n *= sh[d];
    ndf_grey_options o;
    ndf_grey_options_init(&o);
    o.nsize = nsp;
    for (int d = 0; d < nsp; d++) o.size[d] = size[d];
    o.norigin = nsp;
    for (int d = 0; d < nsp; d++) {
      int64_t lo = -(size[d] / 2), hi = (size[d] - 1) / 2;
      if (NDF_SLOT_OP == 1) { int64_t ev = size[d] % 2 == 0; lo = -((size[d] - 1) / 2) - ev; hi = size[d] / 2 - ev; }
      o.origin[d] = ri(0, 2) ? ri(lo, hi) : 0;
    }
    o.mode = (ndf_mode)NDF_SLOT_MODE;
    o.batch_dims = nb;
    o.cval = ri(0, 3) == 0 && dt >= NDF_FLOAT32 ? NAN : (double)ri(-2, 2);
    if (dt == NDF_UINT8 && o.cval < 0) o.cval = 3;
    unsigned char *in = malloc((size_t)n * es), *ref = malloc((size_t)n * es), *out = malloc((size_t)n * es);
    for (int64_t i = 0; i < n; i++) {
      double v = ri(0, 99) < 97 ? (ri(0, 1) ? -0.0 : 0.0) : (double)ri(-1, 1);
      if (dt >= NDF_FLOAT32 && ri(0, 199) == 0) v = NAN;
      if (dt == NDF_FLOAT32) { float f = (float)v; memcpy(in + i * es, &f, es); }
      else if (dt == NDF_FLOAT64) memcpy(in + i * es, &v, es);
      else if (dt == NDF_INT16) { short s = (short)ri(-3, 3); memcpy(in + i * es, &s, es); }
      else { unsigned char u = (unsigned char)ri(0, 3); memcpy(in + i * es, &u, es); }
    }
    memset(out, 0x33, (size_t)n * es);
    ndf_array ain, aref, aout;
    ndf_array_init(&ain, in, NDF_DEVICE_CPU, dt, nd, sh);
    ndf_array_init(&aref, ref, NDF_DEVICE_CPU, dt, nd, sh);
    ndf_array_init(&aout, out, NDF_DEVICE_CPU, dt, nd, sh);
    ndf_status s = NDF_SLOT_OP ? ndf_grey_dilation(ctx, &ain, &aref, &o) : ndf_grey_erosion(ctx, &ain, &aref, &o);
    if (s != NDF_OK) { printf("CPU: %s\n", ndf_errmsg(ctx)); return 2; }
    ndf__grey_geom g;
    s = ndf__grey_prepare(ctx, "emu", (ndf__minmax)NDF_SLOT_OP, dt, nd, sh, &o, &g);
    if (s == NDF_OK) s = ndf__grey_cuda(ctx, "emu", &ain, &aout, &g);
    ndf__grey_geom_free(&g);
    int64_t nbad = 0, first = -1;
    if (s == NDF_OK)
      for (int64_t i = 0; i < n; i++)
        if (memcmp(out + i * es, ref + i * es, es) != 0 && nbad++ == 0) first = i;
    if (s != NDF_OK || nbad || g_bad_launch) {
      bad++;
      printf("case %ld: status %d (%s), %lld of %lld differ (first %lld), shape", c, (int)s, s ? ndf_errmsg(ctx) : "",
             (long long)nbad, (long long)n, (long long)first);
      for (int d = 0; d < nd; d++) printf(" %lld", (long long)sh[d]);
      printf(" size");
      for (int d = 0; d < nsp; d++) printf(" %lld", (long long)size[d]);
      printf(" batch %d\n", nb);
      g_bad_launch = 0;
    }
    free(in);
    free(ref);
    free(out);
  }
  printf("T=%s OP=%d MODE=%d K=%d: %ld runtime cases (%d linew, %d linev launches), %ld bad\n", EMU_TNAME, NDF_SLOT_OP,
         NDF_SLOT_MODE, NDF_SLOT_K, ncases, g_launches[1], g_launches[2], bad);
  ndf_ctx_destroy(ctx);
  return bad != 0;
}
