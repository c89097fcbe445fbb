#include "filters/filters.h"
ndf_status ndf__filters_line_cuda(ndf_ctx *ctx, const char *name, const ndf_array *src, ndf_array *dst,
                                  const ndf__fpass *p, double cval) { (void)src;(void)dst;(void)p;(void)cval; return ndf__error(ctx, NDF_ENOTSUP, "%s: no CUDA backend yet", name); }
ndf_status ndf__filters_taps_cuda(ndf_ctx *ctx, const char *name, const ndf_array *src, ndf_array *dst,
                                  const ndf__ftaps *t, double cval) { (void)src;(void)dst;(void)t;(void)cval; return ndf__error(ctx, NDF_ENOTSUP, "%s: no CUDA backend yet", name); }
ndf_status ndf__filters_cast_cuda(ndf_ctx *ctx, const char *name, const ndf_array *src, ndf_array *dst) { (void)src;(void)dst; return ndf__error(ctx, NDF_ENOTSUP, "%s: no CUDA backend yet", name); }
ndf_status ndf__filters_ew_cuda(ndf_ctx *ctx, const char *name, ndf__few_kind kind, const ndf_array *a,
                                ndf_array *out) { (void)kind;(void)a;(void)out; return ndf__error(ctx, NDF_ENOTSUP, "%s: no CUDA backend yet", name); }
