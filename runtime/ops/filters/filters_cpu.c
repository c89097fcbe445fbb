/*
 * filters_cpu.c -- the CPU backend of the linear filters: the reference the
 * GPU is tested against, itself tested against scipy.ndimage.
 *
 * A 1-D pass reads each line into a double buffer extended by the boundary
 * mode, computes every output of the line with scipy's arithmetic (the same
 * operations in the same order, no fused multiply-adds: this file is built
 * with -ffp-contract=off), then converts and stores the line.  A line is
 * read whole before it is written, so a pass may run in place.  Blocks of
 * neighbouring lines are spread over OpenMP threads.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "filters/filters.h"

/* Lines filtered as one block (ndf__filters_line_cpu). */
#define NDF__FLINES 8

/* Reads L lines of n elements of dtype t at p (stride in elements along a line, ls from
 * one line to the next) into d + l * dl, element by element across the lines. */
static void read_lines(ndf_dtype t, const char *p, int64_t stride, int64_t ls, int64_t n, int L, double *d,
                       int64_t dl) {
  switch (t) {
#define RL(DT, T)                                                                    \
    case DT: {                                                                       \
      const T *q = (const T *)p;                                                     \
      for (int64_t i = 0; i < n; i++)                                                \
        for (int l = 0; l < L; l++) d[l * dl + i] = (double)q[i * stride + l * ls];  \
      return;                                                                        \
    }
    RL(NDF_UINT8, uint8_t) RL(NDF_INT8, int8_t) RL(NDF_UINT16, uint16_t) RL(NDF_INT16, int16_t)
    RL(NDF_UINT32, uint32_t) RL(NDF_INT32, int32_t) RL(NDF_INT64, int64_t) RL(NDF_UINT64, uint64_t) RL(NDF_FLOAT32, float)
    RL(NDF_FLOAT64, double)
#undef RL
    default: return;
  }
}

static void write_lines(ndf_dtype t, char *p, int64_t stride, int64_t ls, int64_t n, int L, const double *d,
                        int64_t dl) {
  const size_t es = ndf_dtype_size(t);
  if (t == NDF_FLOAT64) {
    double *q = (double *)p;
    for (int64_t i = 0; i < n; i++)
      for (int l = 0; l < L; l++) q[i * stride + l * ls] = d[l * dl + i];
    return;
  }
  if (t == NDF_FLOAT32) {
    float *q = (float *)p;
    for (int64_t i = 0; i < n; i++)
      for (int l = 0; l < L; l++) q[i * stride + l * ls] = (float)d[l * dl + i];
    return;
  }
  for (int64_t i = 0; i < n; i++)
    for (int l = 0; l < L; l++) ndf__store_double(t, p + (i * stride + l * ls) * (int64_t)es, d[l * dl + i]);
}

/* One output line of scipy's NI_Correlate1D / NI_UniformFilter1D from the
 * extended line e (e[0] is the coordinate -(n/2 + origin)). */
static void pass_line(const ndf__fpass *p, const double *e, int64_t len, double *o) {
  const int64_t n = p->n, size1 = n / 2, size2 = n - size1 - 1;
  if (p->uniform) {
    double tmp = 0.0;
    for (int64_t l = 0; l < n; l++) tmp += e[l];
    o[0] = tmp / (double)n;
    for (int64_t l = 1; l < len; l++) {
      tmp += e[l - 1 + n] - e[l - 1];
      o[l] = tmp / (double)n;
    }
    return;
  }
  const double *fw = p->w + size1;
  const double *il = e + size1;
  int64_t l0 = 0;
  /* Four outputs at a time (four independent sums, each in scipy's order), the rest one by one. */
  if (p->sym > 0) {
    for (; l0 + 4 <= len; l0 += 4, il += 4) {
      double a0 = il[0] * fw[0], a1 = il[1] * fw[0], a2 = il[2] * fw[0], a3 = il[3] * fw[0];
      for (int64_t j = -size1; j < 0; j++) {
        const double w = fw[j];
        a0 += (il[j] + il[-j]) * w;
        a1 += (il[j + 1] + il[1 - j]) * w;
        a2 += (il[j + 2] + il[2 - j]) * w;
        a3 += (il[j + 3] + il[3 - j]) * w;
      }
      o[l0] = a0;
      o[l0 + 1] = a1;
      o[l0 + 2] = a2;
      o[l0 + 3] = a3;
    }
  } else if (p->sym < 0) {
    for (; l0 + 4 <= len; l0 += 4, il += 4) {
      double a0 = il[0] * fw[0], a1 = il[1] * fw[0], a2 = il[2] * fw[0], a3 = il[3] * fw[0];
      for (int64_t j = -size1; j < 0; j++) {
        const double w = fw[j];
        a0 += (il[j] - il[-j]) * w;
        a1 += (il[j + 1] - il[1 - j]) * w;
        a2 += (il[j + 2] - il[2 - j]) * w;
        a3 += (il[j + 3] - il[3 - j]) * w;
      }
      o[l0] = a0;
      o[l0 + 1] = a1;
      o[l0 + 2] = a2;
      o[l0 + 3] = a3;
    }
  } else {
    for (; l0 + 4 <= len; l0 += 4, il += 4) {
      const double w2 = fw[size2];
      double a0 = il[size2] * w2, a1 = il[size2 + 1] * w2, a2 = il[size2 + 2] * w2, a3 = il[size2 + 3] * w2;
      for (int64_t j = -size1; j < size2; j++) {
        const double w = fw[j];
        a0 += il[j] * w;
        a1 += il[j + 1] * w;
        a2 += il[j + 2] * w;
        a3 += il[j + 3] * w;
      }
      o[l0] = a0;
      o[l0 + 1] = a1;
      o[l0 + 2] = a2;
      o[l0 + 3] = a3;
    }
  }
  o += l0;
  len -= l0;
  if (p->sym > 0) {
    for (int64_t l = 0; l < len; l++, il++) {
      double acc = il[0] * fw[0];
      for (int64_t j = -size1; j < 0; j++) acc += (il[j] + il[-j]) * fw[j];
      o[l] = acc;
    }
  } else if (p->sym < 0) {
    for (int64_t l = 0; l < len; l++, il++) {
      double acc = il[0] * fw[0];
      for (int64_t j = -size1; j < 0; j++) acc += (il[j] - il[-j]) * fw[j];
      o[l] = acc;
    }
  } else {
    for (int64_t l = 0; l < len; l++, il++) {
      double acc = il[size2] * fw[size2];
      for (int64_t j = -size1; j < size2; j++) acc += il[j] * fw[j];
      o[l] = acc;
    }
  }
}

ndf_status ndf__filters_line_cpu(ndf_ctx *ctx, const char *name, const ndf_array *src, ndf_array *dst,
                                 const ndf__fpass *p, int np, double cval) {
  const int64_t total = ndf_array_size(src);
  if (total == 0 || np == 0) return NDF_OK;
  /* Lines go in blocks of up to NDF__FLINES neighbours along the other axis nearest in
   * memory: read and written side by side, each filtered on its own.  One set of line
   * buffers, the largest pass's (a block of at most as many lines as the pass has), made
   * before the first pass writes dst: a failed allocation leaves dst as it was. */
  int64_t bytes = 0;
  for (int i = 0; i < np; i++) {
    const int64_t len = src->shape[p[i].axis], elen = len + p[i].n - 1;
    const int64_t fl = total / len < NDF__FLINES ? total / len : NDF__FLINES;
    int64_t b;
    if (!ndf__mul(elen + len, (int64_t)sizeof(double) * fl, &b))
      return ndf__error(ctx, NDF_ENOMEM, "%s: a line of %lld taps does not fit in memory", name, (long long)elen);
    if (b > bytes) bytes = b;
  }
  const int nth = ndf__cpu_threads(ctx);
  void **buf = ndf__thread_buffers(nth, (size_t)bytes);
  if (!buf) return ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory for the line buffers", name);
  const size_t oes = ndf_dtype_size(dst->dtype);
  for (int i = 0; i < np; i++) {
    const ndf_array *from = i == 0 ? src : dst;
    const ndf__fpass *q = &p[i];
    const int ax = q->axis;
    const int64_t len = from->shape[ax], fl = total / len < NDF__FLINES ? total / len : NDF__FLINES;
    const int64_t pre = q->n / 2 + q->origin, elen = len + q->n - 1;
    const size_t ies = ndf_dtype_size(from->dtype);
    const int64_t istr = from->strides[ax], ostr = dst->strides[ax];
    int ia = -1;
    for (int d = 0; d < from->ndim; d++)
      if (d != ax && from->shape[d] > 1 && (ia < 0 || llabs(from->strides[d]) < llabs(from->strides[ia]))) ia = d;
    const int64_t nia = ia < 0 ? 1 : from->shape[ia], nblk = (nia + NDF__FLINES - 1) / NDF__FLINES;
    const int64_t tasks = total / len / nia * nblk;
    const int64_t il = ia < 0 ? 0 : from->strides[ia], ol = ia < 0 ? 0 : dst->strides[ia];
    _Pragma("omp parallel num_threads(nth)") {
      double *e = buf[ndf__thread_id()], *o = e + elen * fl;
      _Pragma("omp for schedule(static)")
      for (int64_t tk = 0; tk < tasks; tk++) {
        const int64_t l0 = tk % nblk * NDF__FLINES;
        const int L = (int)(nia - l0 < NDF__FLINES ? nia - l0 : NDF__FLINES);
        int64_t oi = l0 * il, oo = l0 * ol;
        ndf__line_offsets2(from, dst, ax, ia, tk / nblk, &oi, &oo);
        read_lines(from->dtype, (const char *)from->data + oi * (int64_t)ies, istr, il, len, L, e + pre, elen);
        for (int l = 0; l < L; l++) {
          double *el = e + l * elen;
          for (int64_t b = 0; b < elen; b++) {
            if (b == pre) b = pre + len; /* the line itself */
            if (b >= elen) break;
            const int64_t m = ndf__map_coord(b - pre, len, q->mode);
            el[b] = m < 0 ? cval : el[pre + m];
          }
          pass_line(q, el, len, o + l * len);
        }
        write_lines(dst->dtype, (char *)dst->data + oo * (int64_t)oes, ostr, ol, len, L, o, len);
      }
    }
  }
  ndf__thread_buffers_free(buf, nth);
  return NDF_OK;
}

/* ---- N-D taps (scipy's NI_Correlate) ------------------------------------------------ */

/* One output point of a taps row (ndf__filters_taps_cpu): x along the last axis, the row's
 * other indices in c, its offsets ib (batch), is (spatial) and ob (output), row_inside
 * whether every tap lies inside along the axes before the last. */
static void taps_point(const ndf__ftaps *t, const ndf_array *src, ndf_array *dst, int nb, int64_t *c, int64_t x,
                       int64_t ib, int64_t is, int64_t ob, int row_inside, const int64_t *loff, double cval) {
  const int nd = src->ndim, nsp = t->nsp, last = nd - 1, lsp = last >= nb;
  const size_t ies = ndf_dtype_size(src->dtype), oes = ndf_dtype_size(dst->dtype);
  const char *ip = src->data;
  char *op = dst->data;
  const int64_t nlast = src->shape[last];
  c[last] = x;
  if (lsp) is += x * src->strides[last];
  else ib += x * src->strides[last];
  const int inside = row_inside && (!lsp || (x + t->rlo[last - nb] >= 0 && x + t->rhi[last - nb] < nlast));
  double acc = 0.0;
  if (inside) {
    const char *base = ip + (ib + is) * (int64_t)ies;
    if (src->dtype == NDF_FLOAT32) {
      for (int64_t k = 0; k < t->ntaps; k++) acc += t->w[k] * (double)((const float *)base)[loff[k]];
    } else if (src->dtype == NDF_FLOAT64) {
      for (int64_t k = 0; k < t->ntaps; k++) acc += t->w[k] * ((const double *)base)[loff[k]];
    } else {
      for (int64_t k = 0; k < t->ntaps; k++) acc += t->w[k] * ndf__load_f64(base, src->dtype, loff[k]);
    }
  } else {
    for (int64_t k = 0; k < t->ntaps; k++) {
      int64_t off = ib;
      int out = 0;
      for (int d = 0; d < nsp && !out; d++) {
        const int64_t m = ndf__map_coord(c[nb + d] + t->off[k * nsp + d], src->shape[nb + d], t->mode);
        if (m < 0) out = 1;
        else off += m * src->strides[nb + d];
      }
      const double v = out ? cval : ndf__load_f64(ip, src->dtype, off);
      acc += t->w[k] * v;
    }
  }
  char *o = op + (ob + x * dst->strides[last]) * (int64_t)oes;
  if (dst->dtype == NDF_UINT64) *(uint64_t *)o = ndf__cvt_u64_signed(acc);
  else ndf__store_double(dst->dtype, o, acc);
}

ndf_status ndf__filters_taps_cpu(ndf_ctx *ctx, const char *name, const ndf_array *src, ndf_array *dst,
                                 const ndf__ftaps *t, double cval) {
  const int nd = src->ndim, nsp = t->nsp, nb = nd - nsp;
  const int64_t total = ndf_array_size(src);
  if (total == 0) return NDF_OK;
  int64_t *loff = malloc((size_t)(t->ntaps ? t->ntaps : 1) * sizeof *loff);
  if (!loff) return ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory for the tap table", name);
  for (int64_t k = 0; k < t->ntaps; k++) {
    loff[k] = 0;
    for (int d = 0; d < nsp; d++) loff[k] += (int64_t)t->off[k * nsp + d] * src->strides[nb + d];
  }
  const int nth = ndf__cpu_threads(ctx);
  const size_t ies = ndf_dtype_size(src->dtype), oes = ndf_dtype_size(dst->dtype);
  const char *ip = src->data;
  char *op = dst->data;
  /* Rows along the last axis: the other axes' indices decoded once a row. */
  const int last = nd - 1, lsp = last >= nb;
  const int64_t nlast = src->shape[last], rows = total / nlast;
  const int64_t lrlo = lsp ? t->rlo[last - nb] : 0, lrhi = lsp ? t->rhi[last - nb] : 0;
  const int fast = lsp && (src->dtype == NDF_FLOAT32 || src->dtype == NDF_FLOAT64);
  _Pragma("omp parallel for schedule(static) num_threads(nth)")
  for (int64_t row = 0; row < rows; row++) {
    int64_t c[NDF_MAX_NDIM], r = row, ib = 0, is = 0, ob = 0;
    int row_inside = 1;
    for (int d = last - 1; d >= 0; d--) {
      c[d] = r % src->shape[d];
      r /= src->shape[d];
      ob += c[d] * dst->strides[d];
      if (d >= nb) {
        is += c[d] * src->strides[d];
        row_inside &= c[d] + t->rlo[d - nb] >= 0 && c[d] + t->rhi[d - nb] < src->shape[d];
      } else {
        ib += c[d] * src->strides[d];
      }
    }
    /* Interior points four at a time where the source is float: four independent sums, each
     * in its own tap order. */
    int64_t x = 0;
    if (row_inside && fast) {
      /* [x0, x1): every tap inside along the last axis; x1 within the row where a zero weight
       * dropped the last taps (lrhi < 0) */
      const int64_t x0 = -lrlo > 0 ? -lrlo : 0, x1 = lrhi < 0 ? nlast : nlast - lrhi;
      const int64_t ls = src->strides[last], ld = dst->strides[last];
      for (x = 0; x < x0 && x < nlast; x++) taps_point(t, src, dst, nb, c, x, ib, is, ob, row_inside, loff, cval);
      for (; x + 4 <= x1; x += 4) {
        const char *base = ip + (ib + is + x * ls) * (int64_t)ies;
        double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
        if (src->dtype == NDF_FLOAT32) {
          const float *q = (const float *)base;
          for (int64_t k = 0; k < t->ntaps; k++) {
            const float *v = q + loff[k];
            const double w = t->w[k];
            a0 += w * (double)v[0];
            a1 += w * (double)v[ls];
            a2 += w * (double)v[2 * ls];
            a3 += w * (double)v[3 * ls];
          }
        } else {
          const double *q = (const double *)base;
          for (int64_t k = 0; k < t->ntaps; k++) {
            const double *v = q + loff[k];
            const double w = t->w[k];
            a0 += w * v[0];
            a1 += w * v[ls];
            a2 += w * v[2 * ls];
            a3 += w * v[3 * ls];
          }
        }
        const double a[4] = {a0, a1, a2, a3};
        for (int j = 0; j < 4; j++) {
          char *o = op + (ob + (x + j) * ld) * (int64_t)oes;
          if (dst->dtype == NDF_UINT64) *(uint64_t *)o = ndf__cvt_u64_signed(a[j]);
          else ndf__store_double(dst->dtype, o, a[j]);
        }
      }
    }
    for (; x < nlast; x++) taps_point(t, src, dst, nb, c, x, ib, is, ob, row_inside, loff, cval);
  }
  free(loff);
  return NDF_OK;
}

/* ---- casts and the compositions' elementwise steps ---------------------------------- */

static int is_int(ndf_dtype t) { return t != NDF_FLOAT32 && t != NDF_FLOAT64; }

static int64_t load_int(ndf_dtype t, const void *p) {
  switch (t) {
    case NDF_UINT8: return *(const uint8_t *)p;
    case NDF_INT8: return *(const int8_t *)p;
    case NDF_UINT16: return *(const uint16_t *)p;
    case NDF_INT16: return *(const int16_t *)p;
    case NDF_UINT32: return *(const uint32_t *)p;
    case NDF_INT32: return *(const int32_t *)p;
    default: return *(const int64_t *)p;
  }
}

/* Stores the low bits of v (NumPy's integer wrap-around). */
static void store_wrap(ndf_dtype t, void *p, uint64_t v) {
  switch (t) {
    case NDF_UINT8: case NDF_INT8: *(uint8_t *)p = (uint8_t)v; break;
    case NDF_UINT16: case NDF_INT16: *(uint16_t *)p = (uint16_t)v; break;
    case NDF_UINT32: case NDF_INT32: *(uint32_t *)p = (uint32_t)v; break;
    default: *(uint64_t *)p = v; break;
  }
}


void ndf__filters_cast_cpu(ndf_ctx *ctx, const ndf_array *src, ndf_array *dst) {
  const int64_t n = ndf_array_size(src);
  const int nth = ndf__cpu_threads(ctx);
  const size_t ies = ndf_dtype_size(src->dtype), oes = ndf_dtype_size(dst->dtype);
  const int ints = is_int(src->dtype) && is_int(dst->dtype);
  _Pragma("omp parallel for schedule(static) if (n > 65536) num_threads(nth)")
  for (int64_t i = 0; i < n; i++) {
    const char *s = (const char *)src->data + ndf__offset_of(src, i) * (int64_t)ies;
    char *d = (char *)dst->data + ndf__offset_of(dst, i) * (int64_t)oes;
    if (ints) store_wrap(dst->dtype, d, (uint64_t)load_int(src->dtype, s));
    else ndf__store_double(dst->dtype, d, ndf__load_f64(s, src->dtype, 0));
  }
}

/* np.sqrt(v, casting='unsafe') of an integer v: floor(sqrt(v)) (NumPy's float16,
 * float32 or float64 loop rounds no square root up to the next integer in those
 * ranges), and the conversion of NaN for negative v. */
static void sqrt_int(ndf_dtype t, void *p) {
  const int64_t v = load_int(t, p);
  if (t == NDF_UINT64) {
    ndf__store_double(t, p, sqrt((double)(uint64_t)v));
    return;
  }
  if (v < 0) ndf__store_double(t, p, NAN);
  else store_wrap(t, p, (uint64_t)(int64_t)sqrt((double)v));
}

void ndf__filters_ew_cpu(ndf_ctx *ctx, ndf__few_kind kind, const ndf_array *a, ndf_array *out) {
  const int64_t n = ndf_array_size(out);
  const int nth = ndf__cpu_threads(ctx);
  const ndf_dtype t = out->dtype;
  const size_t es = ndf_dtype_size(t);
  _Pragma("omp parallel for schedule(static) if (n > 65536) num_threads(nth)")
  for (int64_t i = 0; i < n; i++) {
    char *po = (char *)out->data + ndf__offset_of(out, i) * (int64_t)es;
    const char *pa = a ? (const char *)a->data + ndf__offset_of(a, i) * (int64_t)es : NULL;
    if (t == NDF_FLOAT32) {
      float *o = (float *)po;
      if (kind == NDF__FEW_ADD) *o = *o + *(const float *)pa;
      else if (kind == NDF__FEW_SQUARE) *o = *o * *o;
      else *o = sqrtf(*o);
    } else if (t == NDF_FLOAT64) {
      double *o = (double *)po;
      if (kind == NDF__FEW_ADD) *o = *o + *(const double *)pa;
      else if (kind == NDF__FEW_SQUARE) *o = *o * *o;
      else *o = sqrt(*o);
    } else if (kind == NDF__FEW_SQRT) {
      sqrt_int(t, po);
    } else {
      const uint64_t x = (uint64_t)load_int(t, po);
      store_wrap(t, po, kind == NDF__FEW_ADD ? x + (uint64_t)load_int(t, pa) : x * x);
    }
  }
}
