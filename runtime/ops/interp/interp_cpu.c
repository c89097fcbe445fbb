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
/* The filter runs on blocks of up to NDF__SPLINE_LINES lines at once: sample
 * i of line l at c[i * L + l], every line through the same operations in the
 * same order as alone (so each line's result is the one-line filter's), the
 * lines side by side in the innermost loops. */
#define NDF__SPLINE_LINES 8

/* Causal initial value for a mirror-symmetric extension (period 2n - 2). */
static void causal_mirror(double *c, int64_t n, int L, double z) {
  const double zn1 = pow(z, (double)(n - 1));
  double zi = z, c0[NDF__SPLINE_LINES];
  for (int l = 0; l < L; l++) c0[l] = c[l] + zn1 * c[(n - 1) * L + l];
  for (int64_t i = 1; i < n - 1; i++) {
    for (int l = 0; l < L; l++) c0[l] += zi * (c[i * L + l] + zn1 * c[(n - 1 - i) * L + l]);
    zi *= z;
  }
  for (int l = 0; l < L; l++) c[l] = c0[l] / (1 - zn1 * zn1);
}

static void anticausal_mirror(double *c, int64_t n, int L, double z) {
  for (int l = 0; l < L; l++) c[(n - 1) * L + l] = (z * c[(n - 2) * L + l] + c[(n - 1) * L + l]) * z / (z * z - 1);
}

/* Periodic extension (period n). */
static void causal_wrap(double *c, int64_t n, int L, double z) {
  double zi = z;
  for (int64_t i = 1; i < n; i++) {
    for (int l = 0; l < L; l++) c[l] += zi * c[(n - i) * L + l];
    zi *= z;
  }
  for (int l = 0; l < L; l++) c[l] /= 1 - zi;
}

static void anticausal_wrap(double *c, int64_t n, int L, double z) {
  double zi = z;
  for (int64_t i = 0; i < n - 1; i++) {
    for (int l = 0; l < L; l++) c[(n - 1) * L + l] += zi * c[i * L + l];
    zi *= z;
  }
  const double f = z / (zi - 1);
  for (int l = 0; l < L; l++) c[(n - 1) * L + l] *= f;
}

/* Half-sample symmetric extension (period 2n): the sum over the samples as
 * they are (c[0] included at its last term), times z, over 1 - z^2n, added
 * to c[0] -- scipy 1.18's initialization in its order of operations.  Before
 * 1.18 scipy accumulated the sum in c[0] itself, so that the last term read
 * the partial sum where the formula has c[0]: an error of order z^(2n),
 * visible on short lines (docs/adr/0033). */
static void causal_reflect(double *c, int64_t n, int L, double z) {
  const double zn = pow(z, (double)n);
  double zi = z, acc[NDF__SPLINE_LINES];
  for (int l = 0; l < L; l++) acc[l] = c[l] + zn * c[(n - 1) * L + l];
  for (int64_t i = 1; i < n; i++) {
    for (int l = 0; l < L; l++) acc[l] += zi * (c[i * L + l] + zn * c[(n - 1 - i) * L + l]);
    zi *= z;
  }
  const double d = 1 - zn * zn;
  for (int l = 0; l < L; l++) c[l] += acc[l] * z / d;
}

static void anticausal_reflect(double *c, int64_t n, int L, double z) {
  const double f = z / (z - 1);
  for (int l = 0; l < L; l++) c[(n - 1) * L + l] *= f;
}

/* The prefilter of L lines of n samples (1 <= L <= NDF__SPLINE_LINES). */
static void spline_lines(double *c, int64_t n, int L, const double *poles, int npoles, ndf_interp_mode mode) {
  if (n <= 1) return;
  void (*causal)(double *, int64_t, int, double), (*anticausal)(double *, int64_t, int, double);
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
  for (int64_t i = 0; i < n * L; i++) c[i] *= gain;
  for (int k = 0; k < npoles; k++) {
    const double z = poles[k];
    causal(c, n, L, z);
    for (int64_t i = 1; i < n; i++)
      for (int l = 0; l < L; l++) c[i * L + l] += z * c[(i - 1) * L + l];
    anticausal(c, n, L, z);
    for (int64_t i = n - 2; i >= 0; i--)
      for (int l = 0; l < L; l++) c[i * L + l] = z * (c[(i + 1) * L + l] - c[i * L + l]);
  }
}

void ndf__spline_line(double *c, int64_t n, const double *poles, int npoles, ndf_interp_mode mode) {
  spline_lines(c, n, 1, poles, npoles, mode);
}

/* Stores a value of the line buffer by rule (NDF__STORE_C or NDF__STORE_WRAP; NDF__STORE_NZ has made it 0 or 1). */
static void store_cast(void *q, ndf_dtype t, double v, int rule) {
  if (rule == NDF__STORE_WRAP && t != NDF_FLOAT32 && t != NDF_FLOAT64 && t != NDF_UINT64) {
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

ndf_status ndf__spline_filter_cpu(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out, int order,
                                  int naxes, const int *axes, ndf_interp_mode mode) {
  const int64_t total = ndf_array_size(in);
  if (total == 0) return NDF_OK;
  double poles[2];
  const int np = ndf__spline_poles(order, poles);
  const int nth = ndf__cpu_threads(ctx);
  /* A block holds at most as many lines as the pass has. */
  int64_t maxn = 1, maxb = 1;
  for (int k = 0; k < naxes; k++) {
    const int64_t n = in->shape[axes[k]], nl = total / n, b = n * (nl < NDF__SPLINE_LINES ? nl : NDF__SPLINE_LINES);
    if (n > maxn) maxn = n;
    if (b > maxb) maxb = b;
  }
  void **buf = ndf__thread_buffers(nth, (size_t)maxb * sizeof(double));
  if (!buf) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory for %d line buffers of %lld samples", name, nth,
                              (long long)maxn);
  for (int k = 0; k < naxes; k++) {
    /* Pass 0 reads the input; later passes read the output in its dtype (a bool as its byte). */
    const ndf_array *src = k == 0 ? in : out;
    const int axis = axes[k];
    const int64_t n = in->shape[axis];
    const int filter = order >= 2;
    const int rule = ndf__spline_store_rule(filter, src->dtype, out->dtype);
    /* The lines of a block are neighbours along the other axis nearest in memory (ia). */
    int ia = -1;
    for (int d = 0; d < in->ndim; d++)
      if (d != axis && in->shape[d] > 1 && (ia < 0 || llabs(src->strides[d]) < llabs(src->strides[ia]))) ia = d;
    const int64_t nia = ia < 0 ? 1 : in->shape[ia], nblk = (nia + NDF__SPLINE_LINES - 1) / NDF__SPLINE_LINES;
    const int64_t outer = total / n / nia, tasks = outer * nblk;
    const int64_t sa = src->strides[axis], oa = out->strides[axis];
    const int64_t sl = ia < 0 ? 0 : src->strides[ia], ol = ia < 0 ? 0 : out->strides[ia];
#pragma omp parallel for schedule(static) num_threads(nth)
    for (int64_t t = 0; t < tasks; t++) {
      double *c = buf[ndf__thread_id()];
      const int64_t blk = t % nblk, l0 = blk * NDF__SPLINE_LINES;
      const int L = (int)(nia - l0 < NDF__SPLINE_LINES ? nia - l0 : NDF__SPLINE_LINES);
      /* The block's first line: index t / nblk over the axes other than axis and ia, raster order. */
      int64_t so = l0 * sl, oo = l0 * ol;
      ndf__line_offsets2(src, out, axis, ia, t / nblk, &so, &oo);
      if (src->dtype == NDF_FLOAT64) {
        const double *s = (const double *)src->data + so;
        for (int64_t i = 0; i < n; i++)
          for (int l = 0; l < L; l++) c[i * L + l] = s[i * sa + l * sl];
      } else if (src->dtype == NDF_FLOAT32) {
        const float *s = (const float *)src->data + so;
        for (int64_t i = 0; i < n; i++)
          for (int l = 0; l < L; l++) c[i * L + l] = s[i * sa + l * sl];
      } else {
        for (int64_t i = 0; i < n; i++)
          for (int l = 0; l < L; l++) c[i * L + l] = ndf__load_f64(src->data, src->dtype, so + i * sa + l * sl);
      }
      if (filter) spline_lines(c, n, L, poles, np, mode);
      if (rule == NDF__STORE_NZ)
        for (int64_t i = 0; i < n * L; i++) c[i] = c[i] != 0;
      if (out->dtype == NDF_FLOAT64) {
        double *q = (double *)out->data + oo;
        for (int64_t i = 0; i < n; i++)
          for (int l = 0; l < L; l++) q[i * oa + l * ol] = c[i * L + l];
      } else if (out->dtype == NDF_FLOAT32) {
        float *q = (float *)out->data + oo;
        for (int64_t i = 0; i < n; i++)
          for (int l = 0; l < L; l++) q[i * oa + l * ol] = (float)c[i * L + l];
      } else {
        const size_t osz = ndf_dtype_size(out->dtype);
        for (int64_t i = 0; i < n; i++)
          for (int l = 0; l < L; l++)
            store_cast((char *)out->data + (oo + i * oa + l * ol) * (int64_t)osz, out->dtype, c[i * L + l], rule);
      }
    }
  }
  ndf__thread_buffers_free(buf, nth);
  return NDF_OK;
}

/* ---- the geometric transforms -------------------------------------------------------------- */

/* The taps of one axis for one input coordinate (scipy's NI_GeometricTransform
 * along one axis): element offsets (the stride included), B-spline weights
 * and, in the grid-constant mode, which taps fall outside the image. */
typedef struct taps {
  int special; /* the point's value is the special one (NaN or cval: see special_value), whatever the other axes */
  int any_out; /* grid-constant: a tap outside the image, which reads cval */
  int64_t off[6];
  double w[6];
  unsigned char out[6];
} taps;

/* The value of a point whose coordinate is not usable on some axis: NaN in
 * the modes that do not map coordinates (nearest, grid-constant), else cval. */
static double special_value(const ndf__interp_plan *p) {
  return (p->mode == NDF_INTERP_GRID_CONSTANT || p->mode == NDF_INTERP_NEAREST) ? NAN : p->cval;
}

/* The taps of input coordinate c (before padding) on an axis of n samples
 * (padded) and the given stride; returns t->special. */
static inline int axis_taps(const ndf__interp_plan *p, int64_t n, int64_t stride, double c, taps *t) {
  const int order = p->order, nt = order + 1;
  const ndf_interp_mode mode = p->mode;
  const int gc = mode == NDF_INTERP_GRID_CONSTANT, unmapped = gc || mode == NDF_INTERP_NEAREST;
  double cc = c + p->npad;
  t->special = 0;
  t->any_out = 0;
  if (!(fabs(cc) < NDF__INTERP_HUGE)) return t->special = 1;
  if (!unmapped) {
    cc = ndf__interp_map(cc, n, mode);
    if (!(cc > -1.0)) return t->special = 1;
  }
  const int64_t start = (int64_t)floor((order & 1) ? cc : cc + 0.5) - order / 2;
  if (start >= 0 && start + order < n) { /* every tap inside: no mode to apply */
    for (int l = 0; l < nt; l++) {
      t->off[l] = (start + l) * stride;
      t->out[l] = 0;
    }
  } else {
    const ndf_interp_mode smode = ndf__spline_mode(mode);
    for (int l = 0; l < nt; l++) {
      const int64_t idx = start + l;
      if (gc) {
        t->out[l] = idx < 0 || idx >= n;
        t->any_out |= t->out[l];
        t->off[l] = t->out[l] ? 0 : idx * stride;
      } else {
        const int64_t m = (idx >= 0 && idx < n) ? idx : (int64_t)ndf__interp_map((double)idx, n, smode);
        t->out[l] = 0;
        t->off[l] = m * stride;
      }
    }
  }
  if (order > 0) ndf__spline_weights(cc, order, t->w);
  return 0;
}

/* The interpolated value from the taps of every axis: the sum over the taps
 * in raster order (last axis fastest) of each value times its weights axis
 * by axis (scipy's order of operations); any dtype, any rank, taps outside
 * reading cval. */
static double sum_generic(const char *base, ndf_dtype dt, const taps *const *t, int nsp, int nt, double cval) {
  int any_out = 0;
  for (int d = 0; d < nsp; d++) any_out |= t[d]->any_out;
  int l[NDF_MAX_SPATIAL] = {0};
  double s = 0.0;
  for (;;) {
    double v;
    int is_cval = 0;
    if (any_out)
      for (int d = 0; d < nsp; d++) is_cval |= t[d]->out[l[d]];
    if (is_cval) {
      v = cval;
    } else {
      int64_t o = 0;
      for (int d = 0; d < nsp; d++) o += t[d]->off[l[d]];
      v = ndf__load_f64(base, dt, o);
    }
    if (nt > 1)
      for (int d = 0; d < nsp; d++) v *= t[d]->w[l[d]];
    s += v;
    int d = nsp - 1;
    while (d >= 0 && ++l[d] == nt) l[d--] = 0;
    if (d < 0) break;
  }
  return s;
}

/* Loads of the specialized sums: 0 float64, 1 float32, 2 any dtype. */
static inline __attribute__((always_inline)) double load_as(const char *base, ndf_dtype dt, int64_t i, const int ld) {
  if (ld == 0) return ((const double *)base)[i];
  if (ld == 1) return (double)((const float *)base)[i];
  return ndf__load_f64(base, dt, i);
}

/* sum_generic for 1 to 3 axes and no tap outside, the loops unrolled for a fixed rank and order. */
static inline __attribute__((always_inline)) double sum_fixed(const char *base, ndf_dtype dt, const taps *const *t,
                                                              const int nsp, const int nt, const int ld) {
  double s = 0.0;
  if (nsp == 1) {
    for (int a = 0; a < nt; a++) {
      double v = load_as(base, dt, t[0]->off[a], ld);
      if (nt > 1) v *= t[0]->w[a];
      s += v;
    }
  } else if (nsp == 2) {
    for (int a = 0; a < nt; a++)
      for (int b = 0; b < nt; b++) {
        double v = load_as(base, dt, t[0]->off[a] + t[1]->off[b], ld);
        if (nt > 1) {
          v *= t[0]->w[a];
          v *= t[1]->w[b];
        }
        s += v;
      }
  } else {
    for (int a = 0; a < nt; a++)
      for (int b = 0; b < nt; b++) {
        const int64_t o = t[0]->off[a] + t[1]->off[b];
        for (int c = 0; c < nt; c++) {
          double v = load_as(base, dt, o + t[2]->off[c], ld);
          if (nt > 1) {
            v *= t[0]->w[a];
            v *= t[1]->w[b];
            v *= t[2]->w[c];
          }
          s += v;
        }
      }
  }
  return s;
}

typedef double (*sum_fn)(const char *base, ndf_dtype dt, const taps *const *t);
#define NDF__SUM(N, O, L) \
  static double sum_##N##_##O##_##L(const char *b, ndf_dtype dt, const taps *const *t) { return sum_fixed(b, dt, t, N, O + 1, L); }
#define NDF__SUM_ORDERS(N, L) NDF__SUM(N, 0, L) NDF__SUM(N, 1, L) NDF__SUM(N, 2, L) NDF__SUM(N, 3, L) NDF__SUM(N, 4, L) NDF__SUM(N, 5, L)
#define NDF__SUM_RANKS(L) NDF__SUM_ORDERS(1, L) NDF__SUM_ORDERS(2, L) NDF__SUM_ORDERS(3, L)
NDF__SUM_RANKS(0)
NDF__SUM_RANKS(1)
NDF__SUM_RANKS(2)
#define NDF__SUM_ROW(N, L) {sum_##N##_0_##L, sum_##N##_1_##L, sum_##N##_2_##L, sum_##N##_3_##L, sum_##N##_4_##L, sum_##N##_5_##L}
#define NDF__SUM_LD(L) {NDF__SUM_ROW(1, L), NDF__SUM_ROW(2, L), NDF__SUM_ROW(3, L)}
static const sum_fn sum_table[3][3][6] = {NDF__SUM_LD(0), NDF__SUM_LD(1), NDF__SUM_LD(2)};

/* The specialized sum for rank nsp, order and source dtype, NULL where sum_generic serves. */
static sum_fn pick_sum(int nsp, int order, ndf_dtype dt) {
  if (nsp < 1 || nsp > 3) return NULL;
  return sum_table[dt == NDF_FLOAT64 ? 0 : dt == NDF_FLOAT32 ? 1 : 2][nsp - 1][order];
}

/* Batches in the innermost loop: the values of one output point for n
 * images whose sources lie bs elements apart, into acc[0..n).  Each image's
 * value is computed as sum_generic computes it (no tap outside). */
static inline __attribute__((always_inline)) void sum_batch_fixed(const char *base, ndf_dtype dt, int64_t bs,
                                                                  const taps *const *t, const int nsp, int nt,
                                                                  int64_t n, double *acc, const int ld) {
  for (int64_t j = 0; j < n; j++) acc[j] = 0.0;
  int l[NDF_MAX_SPATIAL] = {0};
  for (;;) {
    int64_t o = 0;
    double w[NDF_MAX_SPATIAL];
    for (int d = 0; d < nsp; d++) {
      o += t[d]->off[l[d]];
      w[d] = nt > 1 ? t[d]->w[l[d]] : 1.0; /* order 0 has no weights */
    }
    const char *src = base + o * (ld == 0 ? 8 : ld == 1 ? 4 : (int64_t)ndf_dtype_size(dt));
    if (nt == 1) {
      for (int64_t j = 0; j < n; j++) acc[j] += load_as(src, dt, j * bs, ld);
    } else if (nsp == 2) {
      const double w0 = w[0], w1 = w[1];
      for (int64_t j = 0; j < n; j++) {
        double v = load_as(src, dt, j * bs, ld);
        v *= w0;
        v *= w1;
        acc[j] += v;
      }
    } else if (nsp == 3) {
      const double w0 = w[0], w1 = w[1], w2 = w[2];
      for (int64_t j = 0; j < n; j++) {
        double v = load_as(src, dt, j * bs, ld);
        v *= w0;
        v *= w1;
        v *= w2;
        acc[j] += v;
      }
    } else {
      for (int64_t j = 0; j < n; j++) {
        double v = load_as(src, dt, j * bs, ld);
        for (int d = 0; d < nsp; d++) v *= w[d];
        acc[j] += v;
      }
    }
    int d = nsp - 1;
    while (d >= 0 && ++l[d] == nt) l[d--] = 0;
    if (d < 0) break;
  }
}

static void sum_batch(const char *base, ndf_dtype dt, int64_t bs, const taps *const *t, int nsp, int nt, int64_t n,
                      double *acc) {
  if (dt == NDF_FLOAT64) sum_batch_fixed(base, dt, bs, t, nsp, nt, n, acc, 0);
  else if (dt == NDF_FLOAT32) sum_batch_fixed(base, dt, bs, t, nsp, nt, n, acc, 1);
  else sum_batch_fixed(base, dt, bs, t, nsp, nt, n, acc, 2);
}

/* The input coordinate of output point o (onsp values) for AFFINE: the
 * products summed left to right, then the offset added (scipy's order). */
static void affine_coord(const ndf__interp_plan *p, const int64_t *o, double *c) {
  for (int h = 0; h < p->nsp; h++) {
    const double *m = p->matrix + h * p->onsp;
    double t = (double)o[0] * m[0];
    for (int l = 1; l < p->onsp; l++) t += (double)o[l] * m[l];
    c[h] = t + p->offset[h];
  }
}

/* The input coordinates of output point o (its last index k): from the coordinate array
 * (map_coordinates; coff: the point's offset in it without the last index) or the affine map. */
static inline void point_coord(const ndf__interp_plan *p, const ndf_array *cr, int64_t coff, int64_t k,
                               const int64_t *o, double *c) {
  if (!cr) {
    affine_coord(p, o, c);
    return;
  }
  const int64_t ck = coff + k * cr->strides[p->onsp];
  for (int d = 0; d < p->nsp; d++) c[d] = ndf__load_f64((const char *)cr->data, cr->dtype, ck + d * cr->strides[0]);
}

/* The input coordinate of output index k along axis d for ZOOMSHIFT: c = k
 * (+ shift); zoom: c *= zoom, or (c + 0.5) zoom - 0.5 with grid_mode. */
static double zoomshift_coord(const ndf__interp_plan *p, int d, int64_t k) {
  double cc = (double)k;
  if (p->has_shift) cc += p->shift[d];
  if (p->has_zoom) cc = p->grid_mode ? (cc + 0.5) * p->zoom[d] - 0.5 : cc * p->zoom[d];
  return cc;
}

/* Pads every image of in by npad samples per spatial side (edge values for
 * nearest, cval in the input's dtype for grid-constant) into the float64
 * buffer buf and spline filters its spatial axes.  The buffer holds image b's
 * padded sample s (C order over pshape) at b pvol + s, or with blast (the
 * batch innermost) at s nbatch + b.  bsrc[b]: image b's element offset in in. */
static ndf_status prefilter(ndf_ctx *ctx, const char *name, const ndf_array *in, const ndf__interp_plan *p, double *buf,
                            const int64_t *pshape, int64_t nbatch, int64_t pvol, int blast, const int64_t *bsrc) {
  const int nb = p->nb, nsp = p->nsp, npad = p->npad, nth = ndf__cpu_threads(ctx);
  const int64_t nl = pshape[nsp - 1], nrow = pvol / nl, rows = nbatch * nrow;
  const int64_t nlast = in->shape[nb + nsp - 1], slast = in->strides[nb + nsp - 1];
  const double pad = ndf__interp_pad_value(in->dtype, p->cval);
  const int gc = p->mode == NDF_INTERP_GRID_CONSTANT;
#pragma omp parallel for schedule(static) num_threads(nth)
  for (int64_t r = 0; r < rows; r++) {
    const int64_t b = r / nrow, rs = r % nrow;
    int64_t q = rs, off = bsrc[b];
    int outside = 0;
    for (int d = nsp - 2; d >= 0; d--) {
      int64_t x = q % pshape[d] - npad;
      q /= pshape[d];
      const int64_t n = in->shape[nb + d];
      if (x < 0 || x >= n) {
        outside = 1;
        x = x < 0 ? 0 : n - 1;
      }
      off += x * in->strides[nb + d];
    }
    double *dst = blast ? buf + rs * nl * nbatch + b : buf + b * pvol + rs * nl;
    const int64_t ds = blast ? nbatch : 1;
    for (int64_t i = 0; i < nl; i++) {
      int64_t x = i - npad;
      const int out = outside || x < 0 || x >= nlast;
      x = x < 0 ? 0 : x >= nlast ? nlast - 1 : x;
      dst[i * ds] = (out && gc) ? pad : ndf__load_f64(in->data, in->dtype, off + x * slast);
    }
  }
  /* One pass per spatial axis over the buffer. */
  ndf_array a;
  int64_t ashape[NDF_MAX_NDIM];
  ashape[0] = nbatch;
  for (int d = 0; d < nsp; d++) ashape[1 + d] = pshape[d];
  ndf_status s = ndf_array_init(&a, buf, NDF_DEVICE_CPU, NDF_FLOAT64, 1 + nsp, ashape);
  if (s != NDF_OK) return ndf__error(ctx, s, "%s: %s", name, ndf_last_error());
  if (blast) {
    int64_t st = nbatch;
    for (int d = nsp - 1; d >= 0; d--) {
      a.strides[1 + d] = st;
      st *= pshape[d];
    }
    a.strides[0] = 1;
  }
  int axes[NDF_MAX_SPATIAL];
  for (int d = 0; d < nsp; d++) axes[d] = 1 + d;
  return ndf__spline_filter_cpu(ctx, name, &a, &a, p->order, nsp, axes, p->mode);
}

/* Element offsets of every batch index of an array whose nb leading axes are the batch. */
static void batch_offsets(const ndf_array *a, int nb, int64_t nbatch, int64_t *off) {
  for (int64_t b = 0; b < nbatch; b++) off[b] = ndf__lead_offset(a, nb, b);
}

/* Points whose taps are computed (and their memory requested) ahead of their sums. */
#define NDF__GROUP 16

/* Requests the cache lines of a point's taps: the first tap of each row along the last axis
 * (at most 16 rows; the rest follow the hardware's own prefetching). */
static inline void prefetch_rows(const char *src, size_t ssz, const taps *t, int nsp, int nt) {
  if (nsp == 1) {
    __builtin_prefetch(src + t[0].off[0] * (int64_t)ssz);
  } else if (nsp == 2) {
    for (int a = 0; a < nt; a++) __builtin_prefetch(src + (t[0].off[a] + t[1].off[0]) * (int64_t)ssz);
  } else if (nsp == 3 && nt * nt <= 16) {
    for (int a = 0; a < nt; a++)
      for (int c = 0; c < nt; c++) __builtin_prefetch(src + (t[0].off[a] + t[1].off[c] + t[2].off[0]) * (int64_t)ssz);
  } else {
    int64_t o = 0;
    for (int d = 0; d < nsp; d++) o += t[d].off[0];
    __builtin_prefetch(src + o * (int64_t)ssz);
  }
}

/* Batches of at most this many images share one output point's taps in the innermost loop. */
#define NDF__BATCH_CHUNK 256

ndf_status ndf__interp_cpu(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out,
                           const ndf__interp_plan *p) {
  const int nb = p->nb, nsp = p->nsp, onsp = p->onsp, order = p->order, nt = order + 1;
  int64_t nbatch = 1, ovol = 1, pshape[NDF_MAX_SPATIAL], pvol = 1;
  for (int d = 0; d < nb; d++) nbatch *= in->shape[d];
  for (int d = 0; d < onsp; d++) ovol *= out->shape[nb + d];
  if (nbatch == 0 || ovol == 0) return NDF_OK;
  /* The batch in the innermost loop where one batch axis lies closer in memory
   * than every spatial axis (rotate's planes of a volume): each output point's
   * coordinate and weights are computed once for all images, and their samples
   * are read in memory order. */
  int blast = nb == 1 && nbatch > 1;
  for (int d = 0; blast && d < nsp; d++)
    blast = llabs(in->strides[0]) < llabs(in->strides[nb + d]) || in->shape[nb + d] == 1;
  int64_t *bsrc = malloc((size_t)nbatch * 2 * sizeof *bsrc);
  if (!bsrc) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory for %lld batch offsets", name, (long long)nbatch);
  int64_t *bout = bsrc + nbatch;
  batch_offsets(in, nb, nbatch, bsrc);
  batch_offsets(out, nb, nbatch, bout);
  /* The source: the input, or its float64 spline coefficients. */
  const char *sdata = in->data;
  ndf_dtype sdt = in->dtype;
  int64_t sshape[NDF_MAX_SPATIAL], sstride[NDF_MAX_SPATIAL], sbs = blast ? in->strides[0] : 0;
  double *buf = NULL;
  if (p->filtered) {
    for (int d = 0; d < nsp; d++) {
      pshape[d] = in->shape[nb + d] + 2 * p->npad;
      if (!ndf__mul(pvol, pshape[d], &pvol)) pvol = -1;
    }
    int64_t bytes = -1;
    if (pvol < 0 || !ndf__mul(pvol, nbatch, &bytes) || !ndf__mul(bytes, 8, &bytes)) bytes = -1;
    ndf_status s = ndf__check_host_memory(ctx, name, "the spline coefficients", bytes);
    if (s == NDF_OK && !(buf = malloc((size_t)bytes)))
      s = ndf__error(ctx, NDF_ENOMEM, "%s: out of memory for %lld bytes of spline coefficients", name, (long long)bytes);
    if (s == NDF_OK) s = prefilter(ctx, name, in, p, buf, pshape, nbatch, pvol, blast, bsrc);
    if (s != NDF_OK) {
      free(buf);
      free(bsrc);
      return s;
    }
    sdata = (const char *)buf;
    sdt = NDF_FLOAT64;
    int64_t st = blast ? nbatch : 1;
    for (int d = nsp - 1; d >= 0; d--) {
      sshape[d] = pshape[d];
      sstride[d] = st;
      st *= pshape[d];
    }
    for (int64_t b = 0; b < nbatch; b++) bsrc[b] = blast ? b : b * pvol;
    sbs = blast ? 1 : 0;
  } else {
    for (int d = 0; d < nsp; d++) {
      sshape[d] = in->shape[nb + d];
      sstride[d] = in->strides[nb + d];
    }
  }
  const size_t ssz = ndf_dtype_size(sdt), osz = ndf_dtype_size(out->dtype);
  const double special = special_value(p), cval = p->cval;
  /* ZOOMSHIFT: the taps of every output index of every axis, once. */
  taps *tab = NULL;
  int64_t tstart[NDF_MAX_SPATIAL];
  if (p->kind == NDF__XF_ZOOMSHIFT) {
    int64_t cnt = 0;
    for (int d = 0; d < nsp; d++) {
      tstart[d] = cnt;
      cnt += out->shape[nb + d];
    }
    if (!(tab = malloc((size_t)cnt * sizeof *tab))) {
      free(buf);
      free(bsrc);
      return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory for %lld tap tables", name, (long long)cnt);
    }
    for (int d = 0; d < nsp; d++)
      for (int64_t k = 0; k < out->shape[nb + d]; k++)
        axis_taps(p, sshape[d], sstride[d], zoomshift_coord(p, d, k), &tab[tstart[d] + k]);
  }
  const sum_fn fast = pick_sum(nsp, order, sdt);
  const ndf_array *cr = p->coords;
  const int64_t nlast = out->shape[nb + onsp - 1], nrow = ovol / nlast, rows = blast ? nrow : nbatch * nrow;
  const int nth = ndf__cpu_threads(ctx);
#pragma omp parallel for schedule(static) num_threads(nth)
  for (int64_t r = 0; r < rows; r++) {
    /* The row: image b (batch outside) and the output point's leading indices. */
    const int64_t b = blast ? 0 : r / nrow;
    int64_t o[NDF_MAX_SPATIAL], q = blast ? r : r % nrow, ooff = 0, coff = 0;
    for (int d = onsp - 2; d >= 0; d--) {
      o[d] = q % out->shape[nb + d];
      q /= out->shape[nb + d];
      ooff += o[d] * out->strides[nb + d];
      if (cr) coff += o[d] * cr->strides[1 + d];
    }
    taps local[NDF_MAX_SPATIAL];
    const taps *tp[NDF_MAX_SPATIAL];
    double acc[NDF__BATCH_CHUNK];
    if (!tab && !blast) {
      /* Coordinates a group of points ahead: each point's taps are computed and their rows'
       * cache lines requested before the sums read them (random coordinates miss the cache). */
      const char *src = sdata + bsrc[b] * (int64_t)ssz;
      taps grp[NDF__GROUP][NDF_MAX_SPATIAL];
      int gsp[NDF__GROUP];
      for (int64_t k0 = 0; k0 < nlast; k0 += NDF__GROUP) {
        const int g = (int)(nlast - k0 < NDF__GROUP ? nlast - k0 : NDF__GROUP);
        for (int j = 0; j < g; j++) {
          const int64_t k = k0 + j;
          double c[NDF_MAX_SPATIAL];
          o[onsp - 1] = k;
          point_coord(p, cr, coff, k, o, c);
          gsp[j] = 0;
          for (int d = 0; d < nsp && !gsp[j]; d++) gsp[j] = axis_taps(p, sshape[d], sstride[d], c[d], &grp[j][d]);
          if (!gsp[j]) prefetch_rows(src, ssz, grp[j], nsp, nt);
        }
        for (int j = 0; j < g; j++) {
          const taps *gp[NDF_MAX_SPATIAL];
          int any_out = 0;
          for (int d = 0; d < nsp; d++) {
            gp[d] = &grp[j][d];
            any_out |= !gsp[j] && grp[j][d].any_out;
          }
          const double v = gsp[j] ? special : (fast && !any_out) ? fast(src, sdt, gp) : sum_generic(src, sdt, gp, nsp, nt, cval);
          ndf__interp_store((char *)out->data + (bout[b] + ooff + (k0 + j) * out->strides[nb + onsp - 1]) * (int64_t)osz,
                            out->dtype, v, 1);
        }
      }
      continue;
    }
    for (int64_t k = 0; k < nlast; k++) {
      o[onsp - 1] = k;
      int sp = 0, any_out = 0;
      if (tab) {
        for (int d = 0; d < nsp; d++) tp[d] = &tab[tstart[d] + o[d]];
      } else {
        double c[NDF_MAX_SPATIAL];
        point_coord(p, cr, coff, k, o, c);
        for (int d = 0; d < nsp; d++) {
          tp[d] = &local[d];
          if (axis_taps(p, sshape[d], sstride[d], c[d], &local[d])) break;
        }
      }
      for (int d = 0; d < nsp && !sp; d++) {
        sp = tp[d]->special;
        any_out |= tp[d]->any_out;
      }
      const int64_t po = ooff + k * out->strides[nb + onsp - 1];
      if (!blast) {
        const char *src = sdata + bsrc[b] * (int64_t)ssz;
        const double v = sp ? special : (fast && !any_out) ? fast(src, sdt, tp) : sum_generic(src, sdt, tp, nsp, nt, cval);
        ndf__interp_store((char *)out->data + (bout[b] + po) * (int64_t)osz, out->dtype, v, 1);
        continue;
      }
      for (int64_t b0 = 0; b0 < nbatch; b0 += NDF__BATCH_CHUNK) {
        const int64_t n = nbatch - b0 < NDF__BATCH_CHUNK ? nbatch - b0 : NDF__BATCH_CHUNK;
        if (sp) {
          for (int64_t j = 0; j < n; j++) acc[j] = special;
        } else if (any_out) {
          for (int64_t j = 0; j < n; j++) acc[j] = sum_generic(sdata + bsrc[b0 + j] * (int64_t)ssz, sdt, tp, nsp, nt, cval);
        } else {
          sum_batch(sdata + bsrc[b0] * (int64_t)ssz, sdt, sbs, tp, nsp, nt, n, acc);
        }
        for (int64_t j = 0; j < n; j++)
          ndf__interp_store((char *)out->data + (bout[b0 + j] + po) * (int64_t)osz, out->dtype, acc[j], 1);
      }
    }
  }
  free(tab);
  free(buf);
  free(bsrc);
  return NDF_OK;
}
