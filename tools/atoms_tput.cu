// atoms_tput.cu -- the shared-memory histogram adds of ndf_ecc_strip3's march in isolation: how many
// warp-wide adds an SM retires per cycle at strip3's shape (2 blocks of 256 threads per SM, a histogram
// of 257 rows x 32 lane columns per block, lane l adding to column l: 32 distinct banks, warps of one
// block sharing the columns), as
//   red    red.shared.add.s32 (strip3's ATOMS.ADD, no return),
//   rmw    a plain load, add, store (not atomic: wrong under contention; the cost of the memory pipe alone),
//   alu    the bin arithmetic without the memory access (the loop's own cost),
// and red at 4 blocks of 256 (strip2t's occupancy).  16 adds per iteration with independent bins: start
// bins drawn once per lane, moved by a constant each iteration (3 integer instructions per add).
// Session 12's first form drew every bin by xorshift in the loop and measured only that chain (run12c,
// H200: red 5.16, rmw 5.74, alu 5.00 cycles per warp add per SM); this form is not run yet.
// Build and run on the GPU machine:
//   nvcc -O3 -arch=sm_90 -o /tmp/at tools/atoms_tput.cu && /tmp/at
#include <cstdio>
#include <cuda_runtime.h>

template <int MODE, int MINB> __global__ void __launch_bounds__(256, MINB) adds(int iters, int *sink) {
  extern __shared__ int h[];
  for (int i = threadIdx.x; i < 257 * 32; i += 256) h[i] = 0;
  __syncthreads();
  const unsigned lane = threadIdx.x & 31;
  const unsigned base = (unsigned)__cvta_generic_to_shared(h) + 4u * lane;
  // per lane 16 pseudo-random start bins and values in {-1, 1}, drawn once; the loop moves every bin by
  // a constant (3 independent integer instructions per add, no dependent chain)
  unsigned x = 0x9e3779b9u * (threadIdx.x + 1) + blockIdx.x, acc = 0, b0[16];
  int c[16];
#pragma unroll
  for (int j = 0; j < 16; j++) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    b0[j] = x & 255u;
    c[j] = (int)(x >> 9 & 2u) - 1;
  }
  for (int it = 0; it < iters; it++) {
#pragma unroll
    for (int j = 0; j < 16; j++) {
      const unsigned a = base + (((b0[j] + (unsigned)it * 37u) & 255u) << 7);
      if (MODE == 0) asm volatile("red.shared.add.s32 [%0], %1;" ::"r"(a), "r"(c[j]));
      if (MODE == 1) {
        int v;
        asm volatile("ld.shared.s32 %0, [%1];" : "=r"(v) : "r"(a));
        asm volatile("st.shared.s32 [%0], %1;" ::"r"(a), "r"(v + c[j]));
      }
      if (MODE == 2) acc += a * (unsigned)c[j];
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) sink[blockIdx.x] = h[lane] + (int)acc;
}

template <int MODE, int MINB> static void run(const char *name, int sms, double ghz, int *sink) {
  const int grid = sms * MINB, iters = 4096, smem = 257 * 32 * 4;
  auto k = adds<MODE, MINB>;
  cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  int occ = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k, 256, smem);
  k<<<grid, 256, smem>>>(16, sink); // warm
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0), cudaEventCreate(&e1);
  float best = 1e30f;
  for (int r = 0; r < 5; r++) {
    cudaEventRecord(e0);
    k<<<grid, 256, smem>>>(iters, sink);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    if (ms < best) best = ms;
  }
  const double wops = (double)grid * 8 * iters * 16; // warp-wide adds
  const double cyc = best * 1e-3 * ghz * 1e9;
  printf("%-4s %d blocks/SM (occupancy %d): %.3f ms, %.2f cycles per warp add per SM (%.3f warp adds / SM / cycle)%s\n",
         name, MINB, occ, best, cyc * sms / wops, wops / (cyc * sms), cudaGetLastError() ? " ERROR" : "");
}

int main() {
  cudaDeviceProp pr;
  cudaGetDeviceProperties(&pr, 0);
  int khz = 0;
  cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0);
  const double ghz = khz * 1e-6;
  printf("%s, %d SMs, %.2f GHz (the attribute; boost clocks may differ)\n", pr.name, pr.multiProcessorCount, ghz);
  int *sink;
  cudaMalloc(&sink, 4096 * sizeof(int));
  run<0, 2>("red", pr.multiProcessorCount, ghz, sink);
  run<1, 2>("rmw", pr.multiProcessorCount, ghz, sink);
  run<2, 2>("alu", pr.multiProcessorCount, ghz, sink);
  run<0, 4>("red", pr.multiProcessorCount, ghz, sink);
  run<1, 4>("rmw", pr.multiProcessorCount, ghz, sink);
  return 0;
}
