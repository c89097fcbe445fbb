#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define __device__
#define __forceinline__ inline
#define __global__
#define __launch_bounds__(x)
#define __shared__ static
#define __restrict__
struct dim { unsigned x, y, z; };
static dim threadIdx, blockIdx, blockDim, gridDim;
static inline unsigned __ldg(const unsigned *p) { return *p; }
static inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned s) {
  return (unsigned)((((unsigned long long)hi << 32) | lo) >> (s & 31));
}
static inline int __syncthreads_or(int x) { return x; }
static inline void __syncthreads() {}
static inline int __clz(unsigned x) { return x ? __builtin_clz(x) : 32; }
static inline unsigned __ballot_sync(unsigned, int p) { return p; }
#define NDF_SLOT(n) NDF_SLOT_##n
