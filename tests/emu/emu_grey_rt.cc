/* emu_grey_rt.cc -- the kernel side of tests/emu/emu_grey_rt.sh: runs the
 * launches that runtime/grey_cuda.c makes (its parameter bytes, grid, block
 * and dynamic shared memory, captured by the stubs of emu_grey_rt_stubs.c)
 * on the host-emulated grey_linew / grey_linev templates. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cuda_host_shim.h"
#include "emu_warp.h"
#include EMU_LINEW_FILE
#include EMU_LINEV_FILE

static ndf_linew_params g_pw;
static ndf_linev_params g_pv;
static void body_w(void) { ndf_grey_linew(g_pw); }
static void body_v(void) { ndf_grey_linev(g_pv); }

/* kind 1: grey_linew, 2: grey_linev.  Returns 0, or -1 for a launch the real
 * device would refuse or that the kernel does not expect. */
extern "C" int emu_run_kernel(int kind, unsigned grid, unsigned bx, unsigned by, unsigned smem, const void *params) {
  if (by != 1 || grid < 1 || bx < 32 || bx % 32 || bx > 1024) return -1;
  if (kind == 1) {
    if (bx != 32 * WPB || smem != 0) return -1;
    memcpy(&g_pw, params, sizeof g_pw);
    emu_launch_loose(grid, bx, body_w);
    return 0;
  }
  if (kind == 2) {
    memcpy(&g_pv, params, sizeof g_pv);
    /* 48 KiB without opting in; K values per thread */
    if (smem > 49152 || smem > sizeof emu_dyn_smem || (size_t)g_pv.K * bx * sizeof(NDF_SLOT_T) > smem) return -1;
    memset(emu_dyn_smem, 0x5a, sizeof emu_dyn_smem);
    emu_launch_loose(grid, bx, body_v);
    return 0;
  }
  return -1;
}
extern "C" size_t emu_elem_size(void) { return sizeof(NDF_SLOT_T); }
