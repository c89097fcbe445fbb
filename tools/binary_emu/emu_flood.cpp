// emu_flood.cpp -- host emulation of templates/binary_flood.cu: every CUDA
// thread of a block is a std::thread (block barrier for __syncthreads, warp
// barrier for shuffles); blocks run one after the other in a random order
// per launch.  Compared with a plain fixed-point iteration over voxels
// (cross or full box, border 0/1, mask or not, seeds in and out of the mask,
// rank 2 or 3 with images folded as the host does).  Usage: emu SEED
// (build with -DNDF_SLOT_CONN=6|26 -DNDF_SLOT_K=1|2 -std=c++20 -pthread).
#include <atomic>
#include <barrier>
#include <thread>
#include <vector>
#include <algorithm>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define __device__
#define __forceinline__ inline
#define __global__
#define __launch_bounds__(x)
#define __shared__ static
#define NDF_SLOT(n) NDF_SLOT_##n
struct dim { unsigned x, y, z; };
static thread_local dim threadIdx, blockIdx;
static dim blockDim, gridDim;
static std::barrier<> *g_block;
static std::vector<std::barrier<> *> g_warp;
static unsigned g_x[32][32];
static std::atomic<int> g_or;
static inline unsigned __ldg(const unsigned *p) { return *p; }
static inline unsigned __brev(unsigned x) { unsigned r = 0; for (int i = 0; i < 32; i++) if (x >> i & 1) r |= 1u << (31 - i); return r; }
static inline void __threadfence() {}
static inline void __syncthreads() { g_block->arrive_and_wait(); }
static inline int __syncthreads_or(int v) {
  if (v) g_or.fetch_or(1);
  g_block->arrive_and_wait();
  int r = g_or.load();
  g_block->arrive_and_wait();
  if (threadIdx.x == 0) g_or.store(0);
  g_block->arrive_and_wait();
  return r;
}
static inline unsigned shfl(unsigned v, int d) {
  const int w = threadIdx.x >> 5, l = threadIdx.x & 31;
  g_x[w][l] = v;
  g_warp[w]->arrive_and_wait();
  const int s = l + d;
  const unsigned r = (s >= 0 && s < 32) ? g_x[w][s] : v;
  g_warp[w]->arrive_and_wait();
  return r;
}
static inline unsigned __shfl_up_sync(unsigned, unsigned v, int s) { return shfl(v, -s); }
static inline unsigned __shfl_down_sync(unsigned, unsigned v, int s) { return shfl(v, s); }
#include "flood.inc"

static long long R(long long n) { return rand() % n; }

int main(int argc, char **argv) {
  const int seed = atoi(argv[1]);
  srand(seed);
  const int nsp = 2 + (int)R(2), conn = NDF_SLOT_CONN, KW = NDF_SLOT_K;
  const long long xs[] = {1, 5, 31, 32, 33, 64, 70, 100}, ys[] = {1, 3, 31, 32, 33, 40, 65}, zs[] = {1, 2, 5, 9, 33};
  long long nx = xs[R(8)], ny = ys[R(7)], nz = zs[R(5)], nb = 1 + R(2);
  if (nsp == 2) nz = 1;
  if (nx * ny * nz * nb > 60000) nz = 2;
  const int border = (int)R(2), withmask = R(4) != 0, tz0 = (int)(1 + R(6));
  const long long nw = (nx + 31) / 32, nrows = nb * nz * ny, nvox = nrows * nx;
  // blobs: a coarse random field, thresholded; seeds sparse.
  std::vector<unsigned char> m(nvox), x(nvox), ref(nvox);
  const int dens = 3 + (int)R(5), spiral = R(3) == 0;
  for (long long i = 0; i < nvox; i++) {
    long long xx = i % nx, r = i / nx, yy = r % ny, zz = (r / ny) % nz;
    unsigned h = (unsigned)((xx / 3) * 73856093u ^ (yy / 3) * 19349663u ^ (zz / 2) * 83492791u ^ seed * 2654435761u);
    h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
    m[i] = withmask ? ((h % 10) < (unsigned)dens) : 1;
    if (spiral) m[i] = (yy % 4 != 3) || ((yy / 4) % 2 ? xx == 0 : xx == nx - 1); // a serpentine corridor
    if ((withmask || spiral) && R(17) == 0) m[i] ^= 1;
    x[i] = R(150) == 0;
  }
  // reference: iterate R <- x | (dilate(R) & m) to the fixed point
  for (long long i = 0; i < nvox; i++) ref[i] = x[i];
  for (bool ch = true; ch;) {
    ch = false;
    for (long long i = 0; i < nvox; i++) {
      if (ref[i] || !m[i]) continue;
      long long xx = i % nx, r = i / nx, yy = r % ny, zz = (r / ny) % nz, bb = r / ny / nz;
      bool lit = false;
      for (int dz = (nsp == 3 ? -1 : 0); dz <= (nsp == 3 ? 1 : 0) && !lit; dz++)
        for (int dy = -1; dy <= 1 && !lit; dy++)
          for (int dx = -1; dx <= 1 && !lit; dx++) {
            int l1 = abs(dz) + abs(dy) + abs(dx);
            if (l1 == 0 || (conn == 6 && l1 > 1)) continue;
            long long X = xx + dx, Y = yy + dy, Z = zz + dz;
            if (X < 0 || X >= nx || Y < 0 || Y >= ny || Z < 0 || Z >= nz) { lit = border; continue; }
            lit = ref[((bb * nz + Z) * ny + Y) * nx + X];
          }
      if (lit) { ref[i] = 1; ch = true; }
    }
  }
  std::vector<unsigned> rw(nrows * nw), mw(nrows * nw);
  for (long long r = 0; r < nrows; r++)
    for (long long i = 0; i < nx; i++) {
      if (x[r * nx + i]) rw[r * nw + i / 32] |= 1u << (i % 32);
      if (m[r * nx + i]) mw[r * nw + i / 32] |= 1u << (i % 32);
    }
  int status[64] = {0};
  ndf_flood_params p;
  memset(&p, 0, sizeof p);
  p.r = rw.data();
  p.mask = withmask || spiral ? mw.data() : nullptr;
  if (!p.mask) for (long long i = 0; i < nvox; i++) m[i] = 1;
  p.status = status;
  p.ny = ny;
  p.nz = nsp == 3 ? nz : nrows / ny;
  p.nimg = nrows / (p.ny * p.nz);
  p.ysp = 1;
  p.zsp = nsp == 3;
  p.tz = p.nz < tz0 ? (int)p.nz : tz0;
  p.nw = nw;
  p.ntx = (nw + KW - 1) / KW;
  p.nty = (ny + 31) / 32;
  p.ntz = (p.nz + p.tz - 1) / p.tz;
  p.border = border ? 0xffffffffu : 0u;
  p.tail = nx % 32 ? (1u << (nx % 32)) - 1 : 0xffffffffu;
  const long long tiles = p.nimg * p.ntz * p.nty * p.ntx;
  const int nth = 32 * p.tz;
  blockDim.x = nth;
  gridDim.x = (unsigned)tiles;
  g_block = new std::barrier<>(nth);
  for (int w = 0; w < p.tz; w++) g_warp.push_back(new std::barrier<>(32));
  std::vector<long long> order(tiles);
  for (long long i = 0; i < tiles; i++) order[i] = i;
  int launches = 0;
  std::atomic<bool> done(false);
  auto body = [&](int tid) {
    threadIdx.x = tid;
    for (int t = 1; !done.load(); t++) {
      if (tid == 0) {
        for (long long i = tiles - 1; i > 0; i--) std::swap(order[i], order[R(i + 1)]);
        launches = t;
      }
      g_block->arrive_and_wait();
      ndf_flood_params q = p;
      q.t = t;
      for (long long i = 0; i < tiles; i++) {
        blockIdx.x = (unsigned)order[i];
        ndf_bin_flood(q);
        g_block->arrive_and_wait();
      }
      if (tid == 0 && (status[6] || t > 100000)) done.store(true);
      g_block->arrive_and_wait();
    }
  };
  std::vector<std::thread> th;
  for (int i = 0; i < nth; i++) th.emplace_back(body, i);
  for (auto &t : th) t.join();
  long long bad = 0;
  for (long long r = 0; r < nrows; r++)
    for (long long i = 0; i < nx; i++) bad += ((rw[r * nw + i / 32] >> (i % 32)) & 1u) != ref[r * nx + i];
  for (long long r = 0; r < nrows; r++)
    if (nx % 32 && (rw[r * nw + nw - 1] >> (nx % 32))) bad++;
  printf("seed %d conn %d K %d nsp %d shape %lldx%lldx%lldx%lld tz %d border %d mask %d spiral %d: %d launches, %lld bad\n",
         seed, conn, KW, nsp, nb, nz, ny, nx, p.tz, border, withmask, spiral, launches, bad);
  return bad != 0;
}
