/*
 * interp_cpu.c -- the CPU backend of the interpolation family: the B-spline
 * prefilter (Unser, Aldroubi and Eden's recursive filter with scipy's
 * boundary initializations) and the spline evaluation of the geometric
 * transforms, in scipy's float64 order of operations, OpenMP over lines and
 * over output points.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp/interp.h"

/* ---- the recursive prefilter ------------------------------------------------------------- */

/* Causal initial value for a mirror-symmetric extension (period 2n - 2). */
static void causal_mirror(double *c, int64_t n, double z) {
  const double zn1 = pow(z, (double)(n - 1));
  double zi = z, c0 = c[0] + zn1 * c[n - 1];
  for (int64_t i = 1; i < n - 1; i++) {
    c0 += zi * (c[i] + zn1 * c[n - 1 - i]);
    zi *= z;
  }
  c[0] = c0 / (1 - zn1 * zn1);
}

static void anticausal_mirror(double *c, int64_t n, double z) {
  c[n - 1] = (z * c[n - 2] + c[n - 1]) * z / (z * z - 1);
}

/* Periodic extension (period n). */
static void causal_wrap(double *c, int64_t n, double z) {
  double zi = z;
  for (int64_t i = 1; i < n; i++) {
    c[0] += zi * c[n - i];
    zi *= z;
  }
  c[0] /= 1 - zi;
}

static void anticausal_wrap(double *c, int64_t n, double z) {
  double zi = z;
  for (int64_t i = 0; i < n - 1; i++) {
    c[n - 1] += zi * c[i];
    zi *= z;
  }
  c[n - 1] *= z / (zi - 1);
}

/* Half-sample symmetric extension (period 2n).  The sum accumulates in c[0]
 * itself, so its last term (i = n - 1) reads the partial sum where the
 * formula has c[0]: scipy's initialization does exactly this, and its
 * results are the reference. */
static void causal_reflect(double *c, int64_t n, double z) {
  const double zn = pow(z, (double)n), c0 = c[0];
  double zi = z;
  c[0] = c[0] + zn * c[n - 1];
  for (int64_t i = 1; i < n; i++) {
    c[0] += zi * (c[i] + zn * c[n - 1 - i]);
    zi *= z;
  }
  c[0] *= z / (1 - zn * zn);
  c[0] += c0;
}

static void anticausal_reflect(double *c, int64_t n, double z) { c[n - 1] *= z / (z - 1); }

void ndf__spline_line(double *c, int64_t n, const double *poles, int npoles, ndf_interp_mode mode) {
  if (n <= 1) return;
  void (*causal)(double *, int64_t, double), (*anticausal)(double *, int64_t, double);
  if (mode == NDF_INTERP_GRID_WRAP) {
    causal = causal_wrap;
    anticausal = anticausal_wrap;
  } else if (mode == NDF_INTERP_NEAREST || mode == NDF_INTERP_REFLECT) {
    causal = causal_reflect;
    anticausal = anticausal_reflect;
  } else {
    causal = causal_mirror;
    anticausal = anticausal_mirror;
  }
  double gain = 1.0;
  for (int k = 0; k < npoles; k++) gain *= (1.0 - poles[k]) * (1.0 - 1.0 / poles[k]);
  for (int64_t i = 0; i < n; i++) c[i] *= gain;
  for (int k = 0; k < npoles; k++) {
    const double z = poles[k];
    causal(c, n, z);
    for (int64_t i = 1; i < n; i++) c[i] += z * c[i - 1];
    anticausal(c, n, z);
    for (int64_t i = n - 2; i >= 0; i--) c[i] = z * (c[i + 1] - c[i]);
  }
}

/* Stores a value of the line buffer as C's cast does; an integer copied into an
 * integer dtype keeps its low bits (NumPy's integer casts wrap around). */
static void store_cast(void *q, ndf_dtype t, double v, int int_copy) {
  if (int_copy && t != NDF_FLOAT32 && t != NDF_FLOAT64 && t != NDF_UINT64) {
    const int64_t x = (int64_t)v;
    switch (t) {
      case NDF_UINT8: case NDF_INT8: *(uint8_t *)q = (uint8_t)x; return;
      case NDF_UINT16: case NDF_INT16: *(uint16_t *)q = (uint16_t)x; return;
      case NDF_UINT32: case NDF_INT32: *(uint32_t *)q = (uint32_t)x; return;
      default: *(int64_t *)q = x; return;
    }
  }
  ndf__interp_store(q, t, v, 0);
}

/* Element offset of line `line` of a along axis (every other axis in raster order). */
static int64_t line_offset(const ndf_array *a, int axis, int64_t line) {
  int64_t off = 0;
  for (int d = a->ndim - 1; d >= 0; d--) {
    if (d == axis) continue;
    off += (line % a->shape[d]) * a->strides[d];
    line /= a->shape[d];
  }
  return off;
}

ndf_status ndf__spline_filter_cpu(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out, int order,
                                  int naxes, const int *axes, ndf_interp_mode mode) {
  const int64_t total = ndf_array_size(in);
  if (total == 0) return NDF_OK;
  double poles[2];
  const int np = ndf__spline_poles(order, poles);
  const int nth = ndf__cpu_threads(ctx);
  int64_t maxn = 1;
  for (int k = 0; k < naxes; k++)
    if (in->shape[axes[k]] > maxn) maxn = in->shape[axes[k]];
  void **buf = ndf__thread_buffers(nth, (size_t)maxn * sizeof(double));
  if (!buf) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory for %d line buffers of %lld samples", name, nth,
                              (long long)maxn);
  const size_t isz = ndf_dtype_size(in->dtype), osz = ndf_dtype_size(out->dtype);
  const int int_source = !ndf__dtype_is_float(in->dtype);
  for (int k = 0; k < naxes; k++) {
    /* Pass 0 reads the input; later passes read the output in its dtype. */
    const ndf_array *src = k == 0 ? in : out;
    const size_t ssz = k == 0 ? isz : osz;
    const int axis = axes[k];
    const int64_t n = in->shape[axis], lines = total / n;
    const int filter = order >= 2;
    const int int_copy = !filter && (k == 0 ? int_source : !ndf__dtype_is_float(out->dtype));
#pragma omp parallel for schedule(static) num_threads(nth)
    for (int64_t line = 0; line < lines; line++) {
      double *c = buf[ndf__thread_id()];
      const char *sp = (const char *)src->data + line_offset(src, axis, line) * (int64_t)ssz;
      char *op = (char *)out->data + line_offset(out, axis, line) * (int64_t)osz;
      for (int64_t i = 0; i < n; i++) c[i] = ndf__interp_load(sp, src->dtype, i * src->strides[axis]);
      if (filter) ndf__spline_line(c, n, poles, np, mode);
      for (int64_t i = 0; i < n; i++) store_cast(op + i * out->strides[axis] * (int64_t)osz, out->dtype, c[i], int_copy);
    }
  }
  ndf__thread_buffers_free(buf, nth);
  return NDF_OK;
}

/* ---- the geometric transforms -------------------------------------------------------------- */

/* Where the spline coefficients of one image are read. */
typedef struct source {
  const char *data; /* image start */
  ndf_dtype dtype;
  int64_t shape[NDF_MAX_SPATIAL];
  int64_t stride[NDF_MAX_SPATIAL]; /* elements */
} source;

/* The interpolated value at input coordinate c (nsp values), scipy's
 * NI_GeometricTransform for one point. */
static double eval_point(const ndf__interp_plan *p, const source *s, const double *c) {
  const int nsp = p->nsp, order = p->order, nt = order + 1;
  const ndf_interp_mode mode = p->mode, smode = ndf__spline_mode(mode);
  const int gc = mode == NDF_INTERP_GRID_CONSTANT, unmapped = gc || mode == NDF_INTERP_NEAREST;
  int64_t off[NDF_MAX_SPATIAL][6];
  unsigned char out[NDF_MAX_SPATIAL][6];
  double w[NDF_MAX_SPATIAL][6];
  int any_out = 0;
  for (int d = 0; d < nsp; d++) {
    const int64_t n = s->shape[d];
    double cc = c[d] + p->npad;
    if (!(fabs(cc) < NDF__INTERP_HUGE)) return unmapped ? NAN : p->cval;
    if (!unmapped) {
      cc = ndf__interp_map(cc, n, mode);
      if (!(cc > -1.0)) return p->cval;
    }
    const int64_t start = (int64_t)floor((order & 1) ? cc : cc + 0.5) - order / 2;
    for (int l = 0; l < nt; l++) {
      const int64_t idx = start + l;
      if (gc) {
        out[d][l] = idx < 0 || idx >= n;
        any_out |= out[d][l];
        off[d][l] = out[d][l] ? 0 : idx * s->stride[d];
      } else {
        const int64_t m = (idx >= 0 && idx < n) ? idx : (int64_t)ndf__interp_map((double)idx, n, smode);
        off[d][l] = m * s->stride[d];
      }
    }
    if (order > 0) ndf__spline_weights(cc, order, w[d]);
  }
  /* Sum over the taps in raster order (last axis fastest), each value times
   * its weights axis by axis. */
  int l[NDF_MAX_SPATIAL] = {0};
  double t = 0.0;
  for (;;) {
    double v;
    int is_cval = 0;
    if (any_out)
      for (int d = 0; d < nsp; d++) is_cval |= out[d][l[d]];
    if (is_cval) {
      v = p->cval;
    } else {
      int64_t o = 0;
      for (int d = 0; d < nsp; d++) o += off[d][l[d]];
      v = ndf__interp_load(s->data, s->dtype, o);
    }
    if (order > 0)
      for (int d = 0; d < nsp; d++) v *= w[d][l[d]];
    t += v;
    int d = nsp - 1;
    while (d >= 0 && ++l[d] == nt) l[d--] = 0;
    if (d < 0) break;
  }
  return t;
}

/* The input coordinate of output point o (onsp values) for ZOOMSHIFT and AFFINE. */
static void transform(const ndf__interp_plan *p, const int64_t *o, double *c) {
  if (p->kind == NDF__XF_ZOOMSHIFT) {
    for (int d = 0; d < p->nsp; d++) {
      double cc = (double)o[d];
      if (p->has_shift) cc += p->shift[d];
      if (p->has_zoom) cc = p->grid_mode ? (cc + 0.5) * p->zoom[d] - 0.5 : cc * p->zoom[d];
      c[d] = cc;
    }
    return;
  }
  /* scipy's order: the products summed left to right, then the offset added */
  for (int h = 0; h < p->nsp; h++) {
    const double *m = p->matrix + h * p->onsp;
    double t = (double)o[0] * m[0];
    for (int l = 1; l < p->onsp; l++) t += (double)o[l] * m[l];
    c[h] = t + p->offset[h];
  }
}

/* Pads every image of in by npad samples per spatial side (edge values for
 * nearest, cval in the input's dtype for grid-constant) into the float64 buffer buf (batch,
 * padded spatial..., C order) and spline filters its spatial axes. */
static ndf_status prefilter(ndf_ctx *ctx, const char *name, const ndf_array *in, const ndf__interp_plan *p, double *buf,
                            const int64_t *pshape, int64_t nbatch, int64_t pvol) {
  const int nb = p->nb, nsp = p->nsp, npad = p->npad, nth = ndf__cpu_threads(ctx);
  const int64_t total = nbatch * pvol;
  const double pad = ndf__interp_pad_value(in->dtype, p->cval);
#pragma omp parallel for schedule(static) num_threads(nth)
  for (int64_t i = 0; i < total; i++) {
    int64_t r = i, off = 0;
    int outside = 0;
    for (int d = nsp - 1; d >= 0; d--) {
      int64_t x = r % pshape[d] - npad;
      r /= pshape[d];
      const int64_t n = in->shape[nb + d];
      if (x < 0 || x >= n) {
        outside = 1;
        x = x < 0 ? 0 : n - 1;
      }
      off += x * in->strides[nb + d];
    }
    for (int d = nb - 1; d >= 0; d--) {
      off += (r % in->shape[d]) * in->strides[d];
      r /= in->shape[d];
    }
    buf[i] = (outside && p->mode == NDF_INTERP_GRID_CONSTANT)
                 ? pad
                 : ndf__interp_load(in->data, in->dtype, off);
  }
  /* One pass per spatial axis over the contiguous buffer. */
  ndf_array b;
  int64_t bshape[NDF_MAX_NDIM];
  bshape[0] = nbatch;
  for (int d = 0; d < nsp; d++) bshape[1 + d] = pshape[d];
  ndf_status s = ndf_array_init(&b, buf, NDF_DEVICE_CPU, NDF_FLOAT64, 1 + nsp, bshape);
  if (s != NDF_OK) return ndf__error(ctx, s, "%s: %s", name, ndf_last_error());
  int axes[NDF_MAX_SPATIAL];
  for (int d = 0; d < nsp; d++) axes[d] = 1 + d;
  return ndf__spline_filter_cpu(ctx, name, &b, &b, p->order, nsp, axes, p->mode);
}

ndf_status ndf__interp_cpu(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out,
                           const ndf__interp_plan *p) {
  const int nb = p->nb, nsp = p->nsp, onsp = p->onsp;
  int64_t nbatch = 1, ovol = 1, pshape[NDF_MAX_SPATIAL], pvol = 1;
  for (int d = 0; d < nb; d++) nbatch *= in->shape[d];
  for (int d = 0; d < onsp; d++) ovol *= out->shape[nb + d];
  if (nbatch == 0 || ovol == 0) return NDF_OK;
  double *buf = NULL;
  if (p->filtered) {
    for (int d = 0; d < nsp; d++) {
      pshape[d] = in->shape[nb + d] + 2 * p->npad;
      if (!ndf__mul(pvol, pshape[d], &pvol)) pvol = -1;
    }
    int64_t bytes = -1;
    if (pvol < 0 || !ndf__mul(pvol, nbatch, &bytes) || !ndf__mul(bytes, 8, &bytes)) bytes = -1;
    ndf_status s = ndf__check_host_memory(ctx, name, "the spline coefficients", bytes);
    if (s != NDF_OK) return s;
    buf = malloc((size_t)bytes);
    if (!buf) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory for %lld bytes of spline coefficients", name,
                                (long long)bytes);
    s = prefilter(ctx, name, in, p, buf, pshape, nbatch, pvol);
    if (s != NDF_OK) {
      free(buf);
      return s;
    }
  }
  const int nth = ndf__cpu_threads(ctx);
  const int64_t total = nbatch * ovol;
  const size_t osz = ndf_dtype_size(out->dtype);
  const ndf_array *cr = p->coords;
#pragma omp parallel for schedule(static) num_threads(nth)
  for (int64_t i = 0; i < total; i++) {
    int64_t o[NDF_MAX_SPATIAL], r = i, ooff = 0, coff = 0, ib = 0;
    for (int d = onsp - 1; d >= 0; d--) {
      o[d] = r % out->shape[nb + d];
      r /= out->shape[nb + d];
      ooff += o[d] * out->strides[nb + d];
      if (cr) coff += o[d] * cr->strides[1 + d];
    }
    const int64_t b = r;
    for (int d = nb - 1; d >= 0; d--) {
      const int64_t x = r % out->shape[d];
      r /= out->shape[d];
      ooff += x * out->strides[d];
      ib += x * in->strides[d];
    }
    source s;
    if (p->filtered) {
      s.data = (const char *)(buf + b * pvol);
      s.dtype = NDF_FLOAT64;
      int64_t st = 1;
      for (int d = nsp - 1; d >= 0; d--) {
        s.shape[d] = pshape[d];
        s.stride[d] = st;
        st *= pshape[d];
      }
    } else {
      s.data = (const char *)in->data + ib * (int64_t)ndf_dtype_size(in->dtype);
      s.dtype = in->dtype;
      for (int d = 0; d < nsp; d++) {
        s.shape[d] = in->shape[nb + d];
        s.stride[d] = in->strides[nb + d];
      }
    }
    double c[NDF_MAX_SPATIAL];
    if (cr) {
      for (int d = 0; d < nsp; d++)
        c[d] = ndf__interp_load((const char *)cr->data, cr->dtype, coff + d * cr->strides[0]);
    } else {
      transform(p, o, c);
    }
    ndf__interp_store((char *)out->data + ooff * (int64_t)osz, out->dtype, eval_point(p, &s, c), 1);
  }
  free(buf);
  return NDF_OK;
}
