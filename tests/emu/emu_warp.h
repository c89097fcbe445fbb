/* emu_warp.h -- warp shuffles and a launch that lets threads finish at
 * different times, on top of tests/emu/cuda_host_shim.h (include after it),
 * for the register line passes' host emulation (emu_grey_line*.cc). */
#pragma once
#include <string.h>

static long long emu_dyn_smem[1 << 14]; /* 128 KiB: grey_linev's extern __shared__ */
static unsigned long long emu_shv[EMU_MAXT];
static void emu_round(void) {
  emu_state[emu_cur] = 1;
  swapcontext(&emu_fib[emu_cur], &emu_sched);
}
template <typename V> static V __shfl_sync(unsigned mask, V v, int src) {
  (void)mask;
  const int me = emu_cur;
  unsigned long long b = 0;
  memcpy(&b, &v, sizeof v);
  emu_shv[me] = b;
  emu_round();
  b = emu_shv[(me & ~31) + (src & 31)];
  emu_round();
  memcpy(&v, &b, sizeof v);
  return v;
}
static float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
static unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
static double __longlong_as_double(long long u) { double f; memcpy(&f, &u, 8); return f; }
static long long __double_as_longlong(double f) { long long u; memcpy(&u, &f, 8); return u; }

/* Runs body() as grid x bx threads; unlike emu_launch, threads may finish
 * while others still wait at a shuffle (warps of a block run different
 * numbers of tasks; a warp's lanes always move together). */
static void emu_launch_loose(unsigned grid, unsigned bx, void (*body)(void)) {
  emu_nt = (int)bx;
  if (emu_nt > EMU_MAXT) abort();
  if (!emu_stacks) emu_stacks = (char *)malloc((size_t)EMU_MAXT * EMU_STACK);
  emu_body = body;
  gridDim = {grid, 1, 1};
  blockDim = {bx, 1, 1};
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
      int ndone = 0;
      for (int i = 0; i < emu_nt; i++) {
        if (emu_state[i] == 2) { ndone++; continue; }
        emu_cur = i;
        threadIdx = {(unsigned)i, 0, 0};
        emu_state[i] = 0;
        swapcontext(&emu_sched, &emu_fib[i]);
        if (emu_state[i] == 2) ndone++;
      }
      if (ndone == emu_nt) break;
    }
  }
}

