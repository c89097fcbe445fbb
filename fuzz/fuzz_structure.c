/*
 * fuzz_structure.c -- libFuzzer target: the normalization of structuring
 * elements and their arguments (size, footprint, structure, origin, mode,
 * algorithm, batch axes) by the grey, rank and binary ops, iterate_structure
 * and label, through the public API on tiny images (5 per axis), so that
 * what runs after validation stays cheap.
 *
 * The input is read as: op, spatial rank, dtype, mode, algorithm, flags,
 * then per axis an element extent and an origin, then element values, then
 * image values; missing bytes read as 0.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ndforge.h"

typedef struct reader {
  const uint8_t *p;
  size_t n, i;
} reader;

static unsigned byte(reader *r) { return r->i < r->n ? r->p[r->i++] : 0; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static ndf_ctx *ctx;
  if (!ctx) {
    ndf_ctx_options o;
    ndf_ctx_options_init(&o);
    o.backend = NDF_BACKEND_CPU;
    o.cache_disable = 1;
    o.cpu_threads = 1;
    if (ndf_ctx_create(&ctx, &o) != NDF_OK) abort();
  }
  reader r = {data, size, 0};
  const unsigned op = byte(&r) % 12;
  const int nb = byte(&r) % 2;              /* batch axes */
  const int nsp = 1 + (int)(byte(&r) % 3);  /* spatial axes */
  static const ndf_dtype dts[] = {NDF_UINT8, NDF_INT8, NDF_UINT16, NDF_INT16, NDF_UINT32, NDF_INT32, NDF_FLOAT32,
                                  NDF_FLOAT64};
  const ndf_dtype dt = dts[byte(&r) % 8];
  const int mode = (int)(byte(&r) % (NDF_MODE_COUNT + 1)); /* one past the last: refused */
  const int algo = (int)(byte(&r) % (NDF_GREY_ALGORITHM_COUNT + 1));
  const unsigned flags = byte(&r);
  int64_t es[NDF_MAX_SPATIAL], origin[NDF_MAX_SPATIAL], ishape[NDF_MAX_NDIM];
  int64_t ecount = 1;
  for (int d = 0; d < nsp; d++) {
    es[d] = byte(&r) % 7;                    /* 0: an empty (refused) element axis */
    origin[d] = (int64_t)(int8_t)byte(&r) % 5;
    ecount *= es[d];
  }
  uint8_t ebuf[7 * 7 * 7];
  double wbuf[7 * 7 * 7];
  for (int64_t i = 0; i < ecount; i++) {
    unsigned b = byte(&r);
    ebuf[i] = (uint8_t)(b & 1);
    wbuf[i] = (double)(int8_t)b;
  }
  for (int d = 0; d < nb; d++) ishape[d] = 2;
  for (int d = 0; d < nsp; d++) ishape[nb + d] = 5;
  ndf_array in, out, el, w;
  if (ndf_array_alloc(ctx, &in, NDF_DEVICE_CPU, dt, nb + nsp, ishape) != NDF_OK) abort();
  if (ndf_array_alloc(ctx, &out, NDF_DEVICE_CPU, dt, nb + nsp, ishape) != NDF_OK) abort();
  const int64_t n = ndf_array_size(&in);
  const size_t es_bytes = ndf_dtype_size(dt);
  for (int64_t i = 0; i < n; i++) {
    unsigned b = byte(&r);
    memset((char *)in.data + i * (int64_t)es_bytes, (int)b, es_bytes);
  }
  if (ndf_array_init(&el, ebuf, NDF_DEVICE_CPU, NDF_UINT8, nsp, es) != NDF_OK ||
      ndf_array_init(&w, wbuf, NDF_DEVICE_CPU, NDF_FLOAT64, nsp, es) != NDF_OK) {
    ndf_array_free(ctx, &in);
    ndf_array_free(ctx, &out);
    return 0; /* negative extents cannot come from bytes; init refuses nothing here */
  }
  if (op < 4) { /* grey: size, footprint and/or structure */
    ndf_grey_options g;
    ndf_grey_options_init(&g);
    if (flags & 1) {
      g.nsize = (flags & 2) ? 1 : nsp;
      for (int d = 0; d < nsp; d++) g.size[d] = es[d];
    }
    if (flags & 4) g.footprint = &el;
    if (flags & 8) g.structure = &w;
    g.norigin = (flags & 16) ? 1 : nsp;
    memcpy(g.origin, origin, sizeof origin);
    g.mode = (ndf_mode)mode;
    g.cval = (double)(int8_t)(flags ^ 0x5a);
    g.batch_dims = nb;
    g.algorithm = (ndf_grey_algorithm)algo;
    switch (op) {
      case 0: ndf_grey_erosion(ctx, &in, &out, &g); break;
      case 1: ndf_grey_dilation(ctx, &in, &out, &g); break;
      case 2: ndf_white_tophat(ctx, &in, &out, &g); break;
      default: ndf_morphological_laplace(ctx, &in, &out, &g); break;
    }
  } else if (op < 6) { /* rank */
    ndf_rank_options ro;
    ndf_rank_options_init(&ro);
    if (flags & 1) {
      ro.nsize = (flags & 2) ? 1 : nsp;
      for (int d = 0; d < nsp; d++) ro.size[d] = es[d];
    } else {
      ro.footprint = &el;
    }
    ro.norigin = nsp;
    memcpy(ro.origin, origin, sizeof origin);
    ro.mode = (ndf_mode)mode;
    ro.batch_dims = nb;
    ro.nan_policy = (ndf_rank_nan_policy)((flags >> 2) & 1);
    ro.algorithm = (ndf_rank_algorithm)(algo % 5);
    if (op == 4) ndf_median_filter(ctx, &in, &out, &ro);
    else ndf_rank_filter(ctx, &in, &out, (int64_t)(int8_t)(flags ^ 0xa5) % 20, &ro);
  } else if (op < 10) { /* binary */
    ndf_array bout;
    if (ndf_array_alloc(ctx, &bout, NDF_DEVICE_CPU, (flags & 32) ? NDF_BOOL : NDF_UINT8, nb + nsp, ishape) != NDF_OK)
      abort();
    ndf_binary_options bo;
    ndf_binary_options_init(&bo);
    if (flags & 1) bo.structure = &el;
    bo.iterations = (int)(flags >> 5) - 2; /* -2 .. 5: < 1 repeats until nothing changes */
    bo.border_value = (flags >> 1) & 1;
    bo.norigin = (flags & 16) ? 1 : nsp;
    memcpy(bo.origin, origin, sizeof origin);
    bo.batch_dims = nb;
    bo.mask = (flags & 4) ? &in : NULL;
    switch (op) {
      case 6: ndf_binary_erosion(ctx, &in, &bout, &bo); break;
      case 7: ndf_binary_closing(ctx, &in, &bout, &bo); break;
      case 8: ndf_binary_propagation(ctx, &in, &bout, &bo); break;
      default: {
        ndf_hit_or_miss_options ho;
        ndf_hit_or_miss_options_init(&ho);
        ho.structure1 = (flags & 1) ? &el : NULL;
        ho.norigin1 = nsp;
        memcpy(ho.origin1, origin, sizeof origin);
        ho.batch_dims = nb;
        ndf_binary_hit_or_miss(ctx, &in, &bout, &ho);
        break;
      }
    }
    ndf_array_free(ctx, &bout);
  } else if (op == 10) { /* iterate_structure: its shape, then the structure (few iterations: cheap) */
    const int it = (int)(flags % 6);
    int64_t shape[NDF_MAX_SPATIAL], oout[NDF_MAX_SPATIAL];
    if (ndf_iterate_structure_shape(&el, it, shape) == NDF_OK) {
      ndf_array st;
      if (ndf_array_alloc(ctx, &st, NDF_DEVICE_CPU, NDF_BOOL, nsp, shape) == NDF_OK) {
        ndf_iterate_structure(&el, it, &st, (flags & 16) ? 1 : nsp, origin, oout);
        ndf_array_free(ctx, &st);
      }
    }
  } else { /* label with a 3^n structure (symmetric or not) */
    ndf_array lab;
    if (ndf_array_alloc(ctx, &lab, NDF_DEVICE_CPU, NDF_INT32, nb + nsp, ishape) != NDF_OK) abort();
    int64_t counts[2];
    ndf_label(ctx, &in, &lab, (flags & 1) ? &el : NULL, nb, counts);
    ndf_array_free(ctx, &lab);
  }
  ndf_array_free(ctx, &in);
  ndf_array_free(ctx, &out);
  return 0;
}
