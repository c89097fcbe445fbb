/* ecc_plan.h -- the task planner of the ECC warp-strip kernels (ndf_ecc_strip2, ndf_ecc_strip2t,
 * ndf_ecc_strip3), used by runtime/ops/ecc/ecc_cuda.c; plain C with no runtime dependency, so host code
 * (and C++) can include it. */
#ifndef NDF_ECC_PLAN_H
#define NDF_ECC_PLAN_H
#include <stdint.h>

/* The tasks of the 2-D warp-strip kernels (ndf_ecc_strip2, ndf_ecc_strip2t; ndf_ecc_strip3 takes
 * strip_units_make below): cols task columns per image (strips), each cut
 * along an axis of len into chunks of mc (a multiple of al) -- 8 tasks per block, blocks of one
 * image each, at most cap blocks; mc at least minmc and about one task per resident warp, the
 * chunks' ends below 2^31 (the kernels' 32-bit places).  Sets mc, tpi, bpi, nblocks and ncopy (the
 * copies of each image's histogram: about 16 blocks' atomics per address).  0: no plan.  fine: the
 * chunk count steps down by nch / 64 + 1 (by one below 64 chunks) instead of nch / 8 + 1 until the
 * grid fits, so the plan comes closer to cap (8192^2 strip2t: 512 blocks instead of 456); fine is the
 * default, ecc.plan=coarse takes the coarse steps. */
typedef struct strip_chunks {
  int64_t mc, tpi, bpi, nblocks;
  int ncopy;
} strip_chunks;
static inline int strip_chunks_make(int64_t cols, int64_t len, int64_t al, int64_t minmc, int64_t nimg, int64_t cap,
                                    int fine, strip_chunks *ch) {
  if (nimg > cap || cols > cap * 8) return 0;
  if (minmc < 1) minmc = 1;
  const int64_t warps = cap * 8, work = nimg * cols;
  int64_t mc = (work * len + warps - 1) / warps;
  if (mc < minmc) mc = minmc;
  if (mc > len) mc = len;
  for (int64_t nch = (len + mc - 1) / mc;; nch -= fine ? nch / 64 + 1 : nch / 8 + 1) { /* fewer chunks until it fits */
    ch->mc = ((len + nch - 1) / nch + al - 1) / al * al;        /* equal chunks */
    ch->tpi = cols * ((len + ch->mc - 1) / ch->mc);
    ch->bpi = (ch->tpi + 7) / 8;
    ch->nblocks = nimg * ch->bpi;
    if (ch->nblocks <= cap) break;
    if (nch == 1) return 0;
  }
  if ((len + ch->mc - 1) / ch->mc * ch->mc > 0x7fffffff) return 0;
  const int64_t nc = ch->bpi / 16;
  ch->ncopy = (int)(nc < 1 ? 1 : nc > 8 ? 8 : nc);
  return 1;
}

/* The equal-share plan of ndf_ecc_strip3: an image's units (cols tiles x len planes, tile-major) split
 * among tpi = 8 * bpi warps, warp w marching units * w / tpi .. units * (w + 1) / tpi - 1 (tile by tile:
 * a warp's share may end in one tile and go on in the next), blocks of one image each, at most cap
 * blocks: as many as cap allows while a share keeps at least minq units.  So every SM gets the same
 * work whatever the tile count (strip_chunks_make's equal chunks of whole tiles would leave SMs idle: 256^3
 * would take 234 of 263 blocks, 512^3 204).  Sets tpi, bpi, nblocks, ncopy (as strip_chunks_make) and mc (the
 * largest share).  0: no plan.  With block columns (ndf_ecc3_params.bcol, ntx % 8 == 0) the kernel splits
 * the same units by block instead (groups of 8 tiles across, each warp one tile of its block's share):
 * the same units per warp, so the same bpi. */
static inline int strip_units_make(int64_t cols, int64_t len, int64_t minq, int64_t nimg, int64_t cap, strip_chunks *ch) {
  if (cols <= 0 || len <= 0 || nimg <= 0 || nimg > cap || cols > 0x7fffffff / len) return 0;
  if (minq < 1) minq = 1;
  const int64_t units = cols * len;
  int64_t bpi = cap / nimg, nw = units / minq;
  if (nw < 1) nw = 1;
  if (nw < bpi * 8) bpi = (nw + 7) / 8;
  ch->tpi = bpi * 8;
  ch->mc = (units + ch->tpi - 1) / ch->tpi;
  ch->bpi = bpi;
  ch->nblocks = nimg * bpi;
  const int64_t nc = bpi / 16;
  ch->ncopy = (int)(nc < 1 ? 1 : nc > 8 ? 8 : nc);
  return 1;
}

#endif
