/*
 * grey_compose.c -- the composite grey ops, composed as scipy.ndimage
 * composes them (_morphology.py), from the min/max steps and one elementwise
 * epilogue in NumPy's arithmetic of the input dtype:
 *
 *   opening   = dilation(erosion(x))          closing  = erosion(dilation(x))
 *   gradient  = dilation(x) - erosion(x)      laplace  = ((dil + ero) - x) - x
 *   white_tophat = x - opening(x)             black_tophat = closing(x) - x
 *
 * Every step is validated before the first one runs (an origin must suit both
 * the erosion and the reflected dilation, as scipy checks both), so a bad
 * argument writes nothing.  Intermediates live in scratch: stream-ordered on
 * CUDA, heap on the CPU.
 */
#include <stdlib.h>
#include <string.h>

#include "grey/grey.h"
#include "kernel_params.generated.h"
#include "tune.h"

/* ---- the elementwise epilogue -------------------------------------------------------- */

/* NumPy arithmetic per dtype: X(type, unsigned type of the same width). */
#define NDF_EW_TYPES(X)                                                                   \
  X(NDF_UINT8, uint8_t, uint8_t) X(NDF_INT8, int8_t, uint8_t) X(NDF_UINT16, uint16_t, uint16_t) \
  X(NDF_INT16, int16_t, uint16_t) X(NDF_UINT32, uint32_t, uint32_t) X(NDF_INT32, int32_t, uint32_t) \
  X(NDF_INT64, int64_t, uint64_t) X(NDF_UINT64, uint64_t, uint64_t) X(NDF_FLOAT32, float, float) X(NDF_FLOAT64, double, double)

static const char *unsigned_ctype(ndf_dtype t) {
  switch (t) {
    case NDF_UINT8: case NDF_INT8: return "unsigned char";
    case NDF_UINT16: case NDF_INT16: return "unsigned short";
    case NDF_UINT32: case NDF_INT32: return "unsigned int";
    case NDF_UINT64: case NDF_INT64: return "unsigned long long";
    default: return ndf__dtype_ctype(t);
  }
}

void ndf__combine_request(ndf__kernel_req *r, int kind, ndf_dtype dtype) {
  ndf__req_elementwise(r, dtype, unsigned_ctype(dtype), kind);
}

static void combine_cpu(ndf_ctx *ctx, ndf__combine_kind kind, const ndf_array *a, const ndf_array *b,
                        const ndf_array *c, ndf_array *out) {
  const int64_t n = ndf_array_size(out);
  const int threads = ndf__cpu_threads(ctx);
  /* Contiguous operands (the usual case: the temporary always is) index flat. */
  const int flat = ndf_array_is_contiguous(a) && ndf_array_is_contiguous(b) && ndf_array_is_contiguous(out) &&
                   (!c || ndf_array_is_contiguous(c));
  switch (out->dtype) {
#define CASE(DT, T, U)                                                                           \
    case DT: {                                                                                   \
      const T *pa = a->data, *pb = b->data, *pc = c ? c->data : NULL;                          \
      T *po = out->data;                                                                         \
      _Pragma("omp parallel for schedule(static) if (n > 65536) num_threads(threads)") \
      for (int64_t i = 0; i < n; i++) {                                                          \
        const int64_t ia = flat ? i : ndf__offset_of(a, i);                                      \
        const int64_t ib = flat ? i : ndf__offset_of(b, i);                                      \
        const int64_t io = flat ? i : ndf__offset_of(out, i);                                    \
        U t;                                                                                     \
        if (kind == NDF__COMBINE_SUB) {                                                          \
          t = (U)((U)pa[ia] - (U)pb[ib]);                                                        \
        } else {                                                                                 \
          const U vc = (U)pc[flat ? i : ndf__offset_of(c, i)];                                   \
          t = (U)((U)pa[ia] + (U)pb[ib]);                                                        \
          t = (U)(t - vc);                                                                       \
          t = (U)(t - vc);                                                                       \
        }                                                                                        \
        po[io] = (T)t;                                                                           \
      }                                                                                          \
      break;                                                                                     \
    }
    NDF_EW_TYPES(CASE)
#undef CASE
    default: break;
  }
}

static ndf_status combine_cuda(ndf_ctx *ctx, const char *name, ndf__combine_kind kind, const ndf_array *a,
                               const ndf_array *b, const ndf_array *c, ndf_array *out) {
  ndf__kernel_req req;
  ndf__combine_request(&req, kind, out->dtype);
  CUfunction fn;
  ndf_status s = ndf__jit_get(ctx, name, &req, &fn);
  if (s != NDF_OK) return s;
  ndf__ew_params p = {0};
  p.a = NDF__DPTR(a->data);
  p.b = NDF__DPTR(b->data);
  p.c = NDF__DPTR(c ? c->data : a->data);
  p.out = NDF__DPTR(out->data);
  p.ndim = out->ndim;
  p.n = ndf_array_size(out);
  for (int d = 0; d < out->ndim; d++) {
    p.shape[d] = out->shape[d];
    p.sa[d] = a->strides[d];
    p.sb[d] = b->strides[d];
    p.sc[d] = c ? c->strides[d] : a->strides[d];
    p.so[d] = out->strides[d];
  }
  return ndf__ew_launch(ctx, name, fn, ndf__grid(ctx, (p.n + 255) / 256, 32), 256, 1, 0, &p);
}

ndf_status ndf__combine(ndf_ctx *ctx, const char *name, ndf__combine_kind kind, const ndf_array *a,
                        const ndf_array *b, const ndf_array *c, ndf_array *out) {
  if (ndf_array_size(out) == 0) return NDF_OK;
  if (out->device == NDF_DEVICE_CPU) {
    combine_cpu(ctx, kind, a, b, c, out);
    return NDF_OK;
  }
  return combine_cuda(ctx, name, kind, a, b, c, out);
}

/* ---- the compositions ---------------------------------------------------------------------- */

/* The composite ops are the registry's (gen/ops.lua, composite = true), by their
 * ndf__grey_op: each one a case of compose() and its public function below. */

/* The epilogue of op (an ndf__combine_kind), or -1 for none. */
static int combine_of(ndf__grey_op op) {
  return op == NDF__GREY_LAPLACE ? NDF__COMBINE_LAPLACE
         : op == NDF__GREY_GRADIENT || op == NDF__GREY_WHITE_TOPHAT || op == NDF__GREY_BLACK_TOPHAT ? NDF__COMBINE_SUB
                                                                                                    : -1;
}

/* A contiguous scratch array shaped like like, on its device. */
static ndf_status scratch_like(ndf_ctx *ctx, const ndf_array *like, ndf_array *t) {
  ndf_array_init(t, NULL, like->device, like->dtype, like->ndim, like->shape);
  t->device_id = like->device_id;
  size_t bytes = (size_t)ndf_array_size(like) * ndf_dtype_size(like->dtype);
  if (like->device == NDF_DEVICE_CPU) {
    t->data = malloc(bytes ? bytes : 1);
    return t->data ? NDF_OK : ndf__error(ctx, NDF_ENOMEM, "ndforge: out of host memory for a temporary");
  }
  CUdeviceptr p = 0;
  ndf_status s = ndf__scratch_alloc(ctx, bytes, &p);
  t->data = (void *)(uintptr_t)p;
  return s;
}

static void scratch_free(ndf_ctx *ctx, ndf_array *t) {
  if (!t->data) return;
  if (t->device == NDF_DEVICE_CPU) free(t->data);
  else ndf__scratch_free(ctx, (CUdeviceptr)(uintptr_t)t->data);
  t->data = NULL;
}

static ndf_status compose_call(ndf_ctx *ctx, const char *name, ndf__grey_op op, const ndf_array *in, ndf_array *out,
                               const ndf_grey_options *opt) {
  ndf_status s = ndf__grey_check(ctx, name, in, out, opt);
  if (s != NDF_OK) return s;
  ndf__grey_geom ero, dil;
  if ((s = ndf__grey_prepare(ctx, name, NDF__MIN, in->dtype, in->ndim, in->shape, opt, &ero)) != NDF_OK) return s;
  if ((s = ndf__grey_prepare(ctx, name, NDF__MAX, in->dtype, in->ndim, in->shape, opt, &dil)) != NDF_OK) {
    ndf__grey_geom_free(&ero);
    return s;
  }
  /* The epilogue's kernel is resolved before any step runs, so that a compile
   * or load failure cannot leave a half-computed output behind. */
  if (in->device == NDF_DEVICE_CUDA && ndf_array_size(in) > 0 && combine_of(op) >= 0) {
    ndf__kernel_req req;
    CUfunction fn;
    ndf__combine_request(&req, combine_of(op), in->dtype);
    if ((s = ndf__ctx_bind(ctx)) == NDF_OK) s = ndf__jit_get(ctx, name, &req, &fn);
    if (s != NDF_OK) {
      ndf__grey_geom_free(&ero);
      ndf__grey_geom_free(&dil);
      return s;
    }
  }
  ndf_array tmp;
  memset(&tmp, 0, sizeof tmp);
  if (ndf_array_size(in) > 0 && (in->device != NDF_DEVICE_CUDA || (s = ndf__ctx_bind(ctx)) == NDF_OK))
    s = scratch_like(ctx, in, &tmp);
  if (s == NDF_OK && ndf_array_size(in) > 0) {
    switch (op) {
      case NDF__GREY_OPENING: /* dilation(erosion(x)) */
      case NDF__GREY_WHITE_TOPHAT:
        s = ndf__grey_run(ctx, name, in, &tmp, &ero);
        if (s == NDF_OK) s = ndf__grey_run(ctx, name, &tmp, out, &dil);
        if (s == NDF_OK && op == NDF__GREY_WHITE_TOPHAT) s = ndf__combine(ctx, name, NDF__COMBINE_SUB, in, out, NULL, out);
        break;
      case NDF__GREY_CLOSING: /* erosion(dilation(x)) */
      case NDF__GREY_BLACK_TOPHAT:
        s = ndf__grey_run(ctx, name, in, &tmp, &dil);
        if (s == NDF_OK) s = ndf__grey_run(ctx, name, &tmp, out, &ero);
        if (s == NDF_OK && op == NDF__GREY_BLACK_TOPHAT) s = ndf__combine(ctx, name, NDF__COMBINE_SUB, out, in, NULL, out);
        break;
      case NDF__GREY_GRADIENT: /* dilation(x) - erosion(x) */
      case NDF__GREY_LAPLACE:  /* ((dilation(x) + erosion(x)) - x) - x */
        s = ndf__grey_run(ctx, name, in, &tmp, &dil);
        if (s == NDF_OK) s = ndf__grey_run(ctx, name, in, out, &ero);
        if (s == NDF_OK)
          s = op == NDF__GREY_GRADIENT ? ndf__combine(ctx, name, NDF__COMBINE_SUB, &tmp, out, NULL, out)
                             : ndf__combine(ctx, name, NDF__COMBINE_LAPLACE, &tmp, out, in, out);
        break;
      default: /* not a composite: the registry and this switch disagree */
        s = ndf__error(ctx, NDF_EINVAL, "%s: no composition for grey op %d", name, (int)op);
        break;
    }
  }
  scratch_free(ctx, &tmp);
  ndf__grey_geom_free(&ero);
  ndf__grey_geom_free(&dil);
  return s;
}

/* The call with the options' own tunables (opt->tune) in force. */
static ndf_status compose(ndf_ctx *ctx, const char *name, ndf__grey_op op, const ndf_array *in, ndf_array *out,
                          const ndf_grey_options *opt) {
  ndf__tune_call tc;
  ndf_status s = ndf__tune_call_begin(ctx, name, ctx && opt ? opt->tune : NULL, &tc);
  if (s != NDF_OK) return s;
  s = compose_call(ctx, name, op, in, out, opt);
  ndf__tune_call_end(&tc);
  return s;
}

ndf_status ndf_grey_opening(ndf_ctx *ctx, const ndf_array *in, ndf_array *out, const ndf_grey_options *opt) {
  return compose(ctx, "ndf_grey_opening", NDF__GREY_OPENING, in, out, opt);
}
ndf_status ndf_grey_closing(ndf_ctx *ctx, const ndf_array *in, ndf_array *out, const ndf_grey_options *opt) {
  return compose(ctx, "ndf_grey_closing", NDF__GREY_CLOSING, in, out, opt);
}
ndf_status ndf_morphological_gradient(ndf_ctx *ctx, const ndf_array *in, ndf_array *out, const ndf_grey_options *opt) {
  return compose(ctx, "ndf_morphological_gradient", NDF__GREY_GRADIENT, in, out, opt);
}
ndf_status ndf_morphological_laplace(ndf_ctx *ctx, const ndf_array *in, ndf_array *out, const ndf_grey_options *opt) {
  return compose(ctx, "ndf_morphological_laplace", NDF__GREY_LAPLACE, in, out, opt);
}
ndf_status ndf_white_tophat(ndf_ctx *ctx, const ndf_array *in, ndf_array *out, const ndf_grey_options *opt) {
  return compose(ctx, "ndf_white_tophat", NDF__GREY_WHITE_TOPHAT, in, out, opt);
}
ndf_status ndf_black_tophat(ndf_ctx *ctx, const ndf_array *in, ndf_array *out, const ndf_grey_options *opt) {
  return compose(ctx, "ndf_black_tophat", NDF__GREY_BLACK_TOPHAT, in, out, opt);
}

/* Every composite runs one erosion and one dilation with the same element,
 * then its epilogue (the order of the steps does not change their kernels). */
ndf_status ndf__grey_compose_warm(ndf_ctx *ctx, const char *name, ndf__grey_op op, ndf_dtype dtype, int ndim,
                                  const int64_t *shape, const ndf_grey_options *opt, ndf__warm *warm) {
  ndf_status s = NDF_OK;
  for (int step = 0; step < 2 && s == NDF_OK; step++) {
    ndf__grey_geom g;
    if ((s = ndf__grey_prepare(ctx, name, step ? NDF__MAX : NDF__MIN, dtype, ndim, shape, opt, &g)) != NDF_OK) return s;
    s = ndf__grey_warm_step(ctx, name, &g, dtype, ndim, step == 1 ? combine_of(op) : -1, warm);
    ndf__grey_geom_free(&g);
  }
  return s;
}
