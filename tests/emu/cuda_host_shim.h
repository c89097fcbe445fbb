/* cuda_host_shim.h -- runs a CUDA kernel template on the host for checking its
 * order of operations (tests/emu/emu_grey_box.sh): every thread of a block is
 * a ucontext fiber, __syncthreads() switches to the next fiber, blocks run one
 * after the other, __shared__ is static.  Include after the system headers. */
#pragma once
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

struct emu_dim3 { unsigned x, y, z; };
static emu_dim3 threadIdx, blockIdx, blockDim, gridDim;

#define EMU_MAXT 1024
#define EMU_STACK (256 * 1024)
static ucontext_t emu_sched, emu_fib[EMU_MAXT];
static int emu_state[EMU_MAXT]; /* 0 running, 1 at a barrier, 2 done */
static int emu_cur, emu_nt;
static char *emu_stacks;
static void (*emu_body)(void);

static void __syncthreads(void) {
  emu_state[emu_cur] = 1;
  swapcontext(&emu_fib[emu_cur], &emu_sched);
}
static void emu_fiber(void) {
  emu_body();
  emu_state[emu_cur] = 2;
  swapcontext(&emu_fib[emu_cur], &emu_sched);
}
/* Runs body() as grid x (bx, by) threads. */
static void emu_launch(unsigned grid, unsigned bx, unsigned by, void (*body)(void)) {
  emu_nt = (int)(bx * by);
  if (emu_nt > EMU_MAXT) abort();
  if (!emu_stacks) emu_stacks = (char *)malloc((size_t)EMU_MAXT * EMU_STACK);
  emu_body = body;
  gridDim = {grid, 1, 1};
  blockDim = {bx, by, 1};
  for (unsigned b = 0; b < grid; b++) {
    blockIdx = {b, 0, 0};
    for (int i = 0; i < emu_nt; i++) {
      getcontext(&emu_fib[i]);
      emu_fib[i].uc_stack.ss_sp = emu_stacks + (size_t)i * EMU_STACK;
      emu_fib[i].uc_stack.ss_size = EMU_STACK;
      emu_fib[i].uc_link = NULL;
      makecontext(&emu_fib[i], emu_fiber, 0);
      emu_state[i] = 0;
    }
    for (;;) {
      int ndone = 0, nbar = 0;
      for (int i = 0; i < emu_nt; i++) {
        if (emu_state[i] == 2) { ndone++; continue; }
        emu_cur = i;
        threadIdx = {(unsigned)(i % (int)bx), (unsigned)(i / (int)bx), 0};
        emu_state[i] = 0;
        swapcontext(&emu_sched, &emu_fib[i]);
        if (emu_state[i] == 2) ndone++; else nbar++;
      }
      if (ndone == emu_nt) break;
      if (ndone && nbar) { fprintf(stderr, "emu: __syncthreads reached by only part of the block\n"); abort(); }
    }
  }
}

#define __global__
#define __device__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ static
#define __ldg(p) (*(p))
#define __cvta_generic_to_shared(p) 0
#define NDF_EMU_ASM(...) ((void)0)
static inline long long min(long long a, long long b) { return a < b ? a : b; }
#define NDF_SLOT(x) NDF_SLOT_##x
