/* n4/n4_cuda.c -- the CUDA dispatch of N4 (placeholder while the kernels are written). */
#include "n4/n4.h"
ndf_status ndf__n4_cuda(ndf_ctx *ctx, const char *name, const ndf_array *input, const ndf_array *mask,
                        const ndf_array *weight, ndf_array *output, ndf_array *logb, const ndf__n4_plan *p,
                        ndf_n4_result *res) {
  (void)input; (void)mask; (void)weight; (void)output; (void)logb; (void)p; (void)res;
  return ndf__error(ctx, NDF_ENOTSUP, "%s: CUDA path not built", name);
}
