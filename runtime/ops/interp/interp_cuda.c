/*
 * interp_cuda.c -- the CUDA backend of the interpolation family.
 */
#include "interp/interp.h"

ndf_status ndf__spline_filter_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out, int order,
                                   int naxes, const int *axes, ndf_interp_mode mode) {
  (void)in; (void)out; (void)order; (void)naxes; (void)axes; (void)mode;
  return ndf__error(ctx, NDF_ENOTSUP, "%s: no CUDA backend yet", name);
}

ndf_status ndf__interp_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out,
                            const ndf__interp_plan *p) {
  (void)in; (void)out; (void)p;
  return ndf__error(ctx, NDF_ENOTSUP, "%s: no CUDA backend yet", name);
}
