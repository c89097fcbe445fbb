/*
 * rank/rank.h -- rank filters (median, rank, percentile): selection, the CUDA requests, the generated selection networks.
 */
#ifndef NDF_OPS_RANK_H
#define NDF_OPS_RANK_H

#include "internal.h"
#include "grey/grey.h"

/* ---- rank filters (rank.c, rank_cuda.c) --------------------------------------------------- */
/* What to select: kind 0 median, 1 rank (already in [0, n)), 2 percentile (in [0, 100]). */
typedef struct ndf__rank_sel {
  int kind;
  int64_t rank;
  double percentile;
  ndf_rank_nan_policy nan_policy;
  ndf_rank_algorithm algorithm;
} ndf__rank_sel;
/* The rank selected among m values (m = n unless NaNs are omitted). */
int64_t ndf__rank_for(int kind, int64_t rank, double p, int64_t m);
/* 1 when the sliding-histogram kernel applies: 8-bit dtype, a box window
 * spanning at least 2 spatial axes, fewer than 65536 taps. */
int ndf__rank_hist_applies(ndf_dtype dtype, const ndf__grey_geom *g, int64_t n);
/* 1 where the sorted-tile kernel (templates/rank_tile.cu) applies. */
int ndf__rank_tile_applies(ndf_dtype dtype, const ndf__grey_geom *g, int64_t n);
/* Kernel request of the CUDA rank filter for (dtype, window, selection); release with ndf__req_free. */
ndf_status ndf__rank_cuda_request(ndf_ctx *ctx, const char *name, ndf_dtype dtype, int ndim, const int64_t *shape,
                                  const ndf__grey_geom *g, const int32_t *taps, int64_t n, const ndf__rank_sel *sel,
                                  ndf__kernel_req *req);
ndf_status ndf__rank_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out,
                          const ndf__grey_geom *g, const int32_t *taps, int64_t n, const ndf__rank_sel *sel);


/* ---- rank.c ---------------------------------------------------------------------------- */
struct ndf__selnet;
/* The generated selection network for rank k of n values, or NULL. */
const struct ndf__selnet *ndf__selnet_find(int64_t n, int64_t k);

#endif
