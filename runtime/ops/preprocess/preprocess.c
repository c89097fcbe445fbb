/*
 * preprocess/preprocess.c -- the geometric and intensity steps of medical
 * volume preprocessing: reorientation to RAS+, resampling to a spacing,
 * cropping to a mask's bounding box and per-modality normalization.  Each
 * step is planned on the host (shapes and affines, pure arithmetic) and
 * runs through the public ops (ndf_affine_transform, the intensity ops), so
 * it has the CPU and CUDA backends of those ops and no kernel of its own.
 * The only data read back is ndf_mask_bbox's mask on CUDA.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int affine_ok(const double *a) {
  for (int i = 0; i < 16; i++)
    if (!isfinite(a[i])) return 0;
  return a[12] == 0 && a[13] == 0 && a[14] == 0 && a[15] == 1;
}

/* out = a @ b for row-major 4x4 matrices (out may alias neither). */
static void mat4_mul(const double *a, const double *b, double *out) {
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) {
      double s = 0;
      for (int k = 0; k < 4; k++) s += a[4 * i + k] * b[4 * k + j];
      out[4 * i + j] = s;
    }
}

ndf_status ndf_affine_spacing(const double *affine, double *spacing) {
  if (!affine || !spacing) return ndf__argerror(NULL, "ndf_affine_spacing", "affine", "NULL pointer");
  if (!affine_ok(affine))
    return ndf__argerror(NULL, "ndf_affine_spacing", "affine", "non-finite, or its bottom row is not 0 0 0 1");
  for (int j = 0; j < 3; j++) {
    const double z = sqrt(affine[j] * affine[j] + affine[4 + j] * affine[4 + j] + affine[8 + j] * affine[8 + j]);
    spacing[j] = z > 0 ? z : 1;
  }
  return NDF_OK;
}

/* ---- reorientation ----------------------------------------------------------------- */

static double det3(const double m[3][3]) {
  return m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
         m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
}

/* The orthogonal factor of the polar decomposition of a non-singular m (the
 * matrix U V^T of its SVD, nibabel's R), by Newton's iteration
 * X <- (X + X^-T) / 2, which converges quadratically from X = m.  0 when m
 * is singular. */
static int polar_orthogonal(const double m[3][3], double r[3][3]) {
  double x[3][3];
  memcpy(x, m, sizeof x);
  double d0 = det3(x), norm = 0;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) norm = fmax(norm, fabs(x[i][j]));
  if (!(fabs(d0) > 1e-12 * norm * norm * norm)) return 0;
  for (int it = 0; it < 100; it++) {
    const double d = det3(x);
    if (!(fabs(d) > 0)) return 0;
    /* inverse transpose = cofactor matrix / det */
    double c[3][3];
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++) {
        const int i1 = (i + 1) % 3, i2 = (i + 2) % 3, j1 = (j + 1) % 3, j2 = (j + 2) % 3;
        c[i][j] = (x[i1][j1] * x[i2][j2] - x[i1][j2] * x[i2][j1]) / d;
      }
    double delta = 0;
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++) {
        const double v = 0.5 * (x[i][j] + c[i][j]);
        delta = fmax(delta, fabs(v - x[i][j]));
        x[i][j] = v;
      }
    if (delta < 1e-15) break;
  }
  memcpy(r, x, sizeof x);
  return 1;
}

ndf_status ndf_reorient_ras_plan(const int64_t *shape, const double *affine, int64_t *out_shape, int *perm,
                                 int *flip, double *out_affine) {
  const char *op = "ndf_reorient_ras_plan";
  if (!shape || !affine) return ndf__argerror(NULL, op, shape ? "affine" : "shape", "NULL pointer");
  if (!affine_ok(affine)) return ndf__argerror(NULL, op, "affine", "non-finite, or its bottom row is not 0 0 0 1");
  for (int d = 0; d < 3; d++)
    if (shape[d] < 0) return ndf__argerror(NULL, op, "shape", "shape[%d]=%lld is negative", d, (long long)shape[d]);
  double rs[3][3], r[3][3];
  for (int j = 0; j < 3; j++) {
    double z = 0;
    for (int i = 0; i < 3; i++) z += affine[4 * i + j] * affine[4 * i + j];
    z = sqrt(z);
    if (z == 0) z = 1;
    for (int i = 0; i < 3; i++) rs[i][j] = affine[4 * i + j] / z;
  }
  if (!polar_orthogonal(rs, r))
    return ndf__argerror(NULL, op, "affine", "its 3x3 part is singular: the voxel axes do not span world space");
  /* nibabel's greedy choice (5.4 and later): the input axes from the one with the largest squared
   * entry to the one with the smallest (stable on ties), each takes the world axis of its largest
   * entry that no earlier axis took */
  int order[3] = {0, 1, 2}, in_to_out[3], in_flip[3];
  double key[3];
  for (int in = 0; in < 3; in++) {
    key[in] = 0;
    for (int o = 0; o < 3; o++) key[in] = r[o][in] * r[o][in] > key[in] ? r[o][in] * r[o][in] : key[in];
  }
  for (int i = 1; i < 3; i++) /* insertion sort: stable */
    for (int j = i; j > 0 && key[order[j]] > key[order[j - 1]]; j--) {
      const int t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  for (int k = 0; k < 3; k++) {
    const int in = order[k];
    int best = 0;
    for (int o = 1; o < 3; o++)
      if (fabs(r[o][in]) > fabs(r[best][in])) best = o;
    if (r[best][in] == 0) return ndf__argerror(NULL, op, "affine", "voxel axis %d has no world direction", in);
    in_to_out[in] = best;
    in_flip[in] = r[best][in] < 0;
    for (int j = 0; j < 3; j++) r[best][j] = 0;
  }
  int p[3], f[3];
  for (int in = 0; in < 3; in++) {
    p[in_to_out[in]] = in;
    f[in_to_out[in]] = in_flip[in];
  }
  /* M: output voxel -> input voxel; input axis p[a] = flip ? n - 1 - o_a : o_a */
  double m[16] = {0};
  m[15] = 1;
  for (int a = 0; a < 3; a++) {
    m[4 * p[a] + a] = f[a] ? -1 : 1;
    m[4 * p[a] + 3] = f[a] ? (double)(shape[p[a]] - 1) : 0;
  }
  if (out_shape)
    for (int a = 0; a < 3; a++) out_shape[a] = shape[p[a]];
  if (perm) memcpy(perm, p, sizeof p);
  if (flip) memcpy(flip, f, sizeof f);
  if (out_affine) {
    double t[16];
    mat4_mul(affine, m, t);
    memcpy(out_affine, t, sizeof t);
  }
  return NDF_OK;
}

/* Copies input coordinate d = sum_a m[d][a] o_a + m[d][3] (an integer map: a permutation with flips
 * and an offset, over the trailing nsp axes) into output voxel o.  Host arrays: a strided copy of the
 * input seen through the map; CUDA: ndf_affine_transform with the map, order 0 (exact copies too). */
static ndf_status move_voxels(ndf_ctx *ctx, const char *op, const ndf_array *in, ndf_array *out, int nsp,
                              const double *m4) {
  if (in->dtype == NDF_BOOL || in->dtype == NDF_INT64 || in->dtype != out->dtype)
    return ndf__argerror(ctx, op, "output", "%s input and %s output (the input's dtype, not bool or int64)",
                         ndf_dtype_name(in->dtype) ? ndf_dtype_name(in->dtype) : "unknown",
                         ndf_dtype_name(out->dtype) ? ndf_dtype_name(out->dtype) : "unknown");
  const int nb = in->ndim - nsp;
  if (in->device == NDF_DEVICE_CPU && out->device == NDF_DEVICE_CPU) {
    /* On the host the map is a view of the input (strides permuted, negated, offset): one strided copy. */
    ndf_array view = *in;
    int64_t off = 0;
    for (int a = 0; a < nsp; a++) {
      view.shape[nb + a] = out->shape[nb + a];
      view.strides[nb + a] = 0;
      for (int d = 0; d < nsp; d++) view.strides[nb + a] += (int64_t)m4[4 * d + a] * in->strides[nb + d];
    }
    for (int d = 0; d < nsp; d++) off += (int64_t)m4[4 * d + 3] * in->strides[nb + d];
    if (ndf_array_size(out) > 0) view.data = (char *)in->data + off * (int64_t)ndf_dtype_size(in->dtype);
    return ndf_array_copy(ctx, out, &view);
  }
  double mat[3 * 4];
  for (int i = 0; i < nsp; i++) {
    for (int j = 0; j < nsp; j++) mat[(nsp + 1) * i + j] = m4[4 * i + j];
    mat[(nsp + 1) * i + nsp] = m4[4 * i + 3];
  }
  const int64_t msh[2] = {nsp, nsp + 1};
  ndf_array marr;
  ndf_array_init(&marr, mat, NDF_DEVICE_CPU, NDF_FLOAT64, 2, msh);
  ndf_interp_options o;
  ndf_interp_options_init(&o);
  o.order = 0;
  o.mode = NDF_INTERP_NEAREST;
  o.prefilter = 0;
  o.batch_dims = nb;
  return ndf_affine_transform(ctx, in, &marr, 0, NULL, out, &o);
}

static ndf_status check_volume(ndf_ctx *ctx, const char *op, const ndf_array *in, const ndf_array *out, int nsp) {
  ndf_status s = ndf__check_array(ctx, op, "input", in, NULL);
  if (s == NDF_OK) s = ndf__check_array(ctx, op, "output", out, NULL);
  if (s != NDF_OK) return s;
  if (in->ndim < nsp)
    return ndf__argerror(ctx, op, "input", "rank %d, expected at least %d spatial axes", in->ndim, nsp);
  if (out->ndim != in->ndim) return ndf__argerror(ctx, op, "output", "rank %d, expected %d", out->ndim, in->ndim);
  for (int d = 0; d < in->ndim - nsp; d++)
    if (out->shape[d] != in->shape[d])
      return ndf__argerror(ctx, op, "output", "batch axis %d has extent %lld, expected %lld", d,
                           (long long)out->shape[d], (long long)in->shape[d]);
  return NDF_OK;
}

ndf_status ndf_reorient_ras(ndf_ctx *ctx, const ndf_array *input, const double *affine, ndf_array *output) {
  const char *op = "ndf_reorient_ras";
  if (!ctx) return ndf__argerror(NULL, op, "ctx", "NULL context");
  if (!input || !output || !affine) return ndf__argerror(ctx, op, !affine ? "affine" : "input", "NULL pointer");
  ndf_status s = check_volume(ctx, op, input, output, 3);
  if (s != NDF_OK) return s;
  const int nb = input->ndim - 3;
  int64_t osh[3];
  int perm[3], flip[3];
  if (ndf_reorient_ras_plan(&input->shape[nb], affine, osh, perm, flip, NULL) != NDF_OK)
    return ndf__error(ctx, NDF_EINVAL, "%s", ndf_last_error());
  for (int a = 0; a < 3; a++)
    if (output->shape[nb + a] != osh[a])
      return ndf__argerror(ctx, op, "output", "spatial axis %d has extent %lld, the reoriented one %lld", a,
                           (long long)output->shape[nb + a], (long long)osh[a]);
  double m[16] = {0};
  for (int a = 0; a < 3; a++) {
    m[4 * perm[a] + a] = flip[a] ? -1 : 1;
    m[4 * perm[a] + 3] = flip[a] ? (double)(input->shape[nb + perm[a]] - 1) : 0;
  }
  return move_voxels(ctx, op, input, output, 3, m);
}

/* ---- resampling ----------------------------------------------------------------------- */

ndf_status ndf_resample_plan(int nsp, const int64_t *shape, const double *spacing, const double *new_spacing,
                             int64_t *out_shape, double *scale, double *offset) {
  const char *op = "ndf_resample_plan";
  if (nsp < 1 || nsp > 3) return ndf__argerror(NULL, op, "nsp", "%d spatial axes, expected 1 to 3", nsp);
  if (!shape || !spacing || !new_spacing) return ndf__argerror(NULL, op, "spacing", "NULL pointer");
  int64_t osh[3];
  double r[3], t[3];
  for (int d = 0; d < nsp; d++) {
    if (shape[d] < 1) return ndf__argerror(NULL, op, "shape", "shape[%d]=%lld, expected >= 1", d, (long long)shape[d]);
    if (!(spacing[d] > 0) || !isfinite(spacing[d]))
      return ndf__argerror(NULL, op, "spacing", "spacing[%d]=%g is not a positive spacing", d, spacing[d]);
    if (!(new_spacing[d] > 0) || !isfinite(new_spacing[d]))
      return ndf__argerror(NULL, op, "new_spacing", "new_spacing[%d]=%g is not a positive spacing", d, new_spacing[d]);
    const double z = spacing[d] / new_spacing[d];
    if (nearbyint((double)shape[d] * z) < 1) { /* fewer than half a sample: one, at the centre */
      osh[d] = 1;
    } else {
      ndf_status s = ndf_zoom_shape(1, &shape[d], 0, 1, &z, &osh[d]); /* round(n z), half to even */
      if (s != NDF_OK) return s;
    }
    r[d] = new_spacing[d] / spacing[d];
    t[d] = (double)(shape[d] - 1) / 2 - (double)(osh[d] - 1) / 2 * r[d];
  }
  for (int d = 0; d < nsp; d++) {
    if (out_shape) out_shape[d] = osh[d];
    if (scale) scale[d] = r[d];
    if (offset) offset[d] = t[d];
  }
  return NDF_OK;
}

ndf_status ndf_resample_affine(int nsp, const double *affine, const double *scale, const double *offset,
                               double *out_affine) {
  const char *op = "ndf_resample_affine";
  if (nsp < 1 || nsp > 3) return ndf__argerror(NULL, op, "nsp", "%d spatial axes, expected 1 to 3", nsp);
  if (!affine || !scale || !offset || !out_affine) return ndf__argerror(NULL, op, "affine", "NULL pointer");
  if (!affine_ok(affine)) return ndf__argerror(NULL, op, "affine", "non-finite, or its bottom row is not 0 0 0 1");
  double m[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, t[16];
  for (int d = 0; d < nsp; d++) {
    m[5 * d] = scale[d];
    m[4 * d + 3] = offset[d];
  }
  mat4_mul(affine, m, t);
  memcpy(out_affine, t, sizeof t);
  return NDF_OK;
}

ndf_status ndf_resample(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, const double *spacing,
                        const double *new_spacing, const ndf_interp_options *opt) {
  const char *op = "ndf_resample";
  if (!ctx) return ndf__argerror(NULL, op, "ctx", "NULL context");
  if (!input || !output || !spacing || !new_spacing)
    return ndf__argerror(ctx, op, !input ? "input" : !output ? "output" : "spacing", "NULL pointer");
  ndf_interp_options o;
  if (opt) o = *opt;
  else ndf_interp_options_init(&o);
  ndf_status s = ndf__check_array(ctx, op, "input", input, NULL);
  if (s != NDF_OK) return s;
  const int nsp = input->ndim - o.batch_dims;
  if (o.batch_dims < 0 || nsp < 1 || nsp > 3)
    return ndf__argerror(ctx, op, "input", "rank %d with batch_dims %d: expected 1 to 3 spatial axes", input->ndim,
                         o.batch_dims);
  if ((s = check_volume(ctx, op, input, output, nsp)) != NDF_OK) return s;
  int64_t osh[3];
  double r[3], t[3];
  if (ndf_resample_plan(nsp, &input->shape[o.batch_dims], spacing, new_spacing, osh, r, t) != NDF_OK)
    return ndf__error(ctx, NDF_EINVAL, "%s", ndf_last_error());
  for (int d = 0; d < nsp; d++)
    if (output->shape[o.batch_dims + d] != osh[d])
      return ndf__argerror(ctx, op, "output", "spatial axis %d has extent %lld, the resampled one %lld", d,
                           (long long)output->shape[o.batch_dims + d], (long long)osh[d]);
  /* the diagonal form: input coordinate (o + t / r) r = o r + t */
  const int64_t msh[1] = {nsp};
  ndf_array m;
  ndf_array_init(&m, r, NDF_DEVICE_CPU, NDF_FLOAT64, 1, msh);
  return ndf_affine_transform(ctx, input, &m, nsp, t, output, &o);
}

/* ---- bounding box and crop ------------------------------------------------------------- */

/* The box of a host array (any strides). */
static void bbox_host(const ndf_array *a, int64_t *lo, int64_t *hi, int64_t *count) {
  const int nd = a->ndim;
  int64_t n = 0, idx[NDF_MAX_NDIM] = {0}, total = 1;
  for (int d = 0; d < nd; d++) {
    lo[d] = a->shape[d];
    hi[d] = 0;
    total *= a->shape[d];
  }
  for (int64_t e = 0; e < total; e++) {
    int64_t off = 0;
    for (int d = 0; d < nd; d++) off += idx[d] * a->strides[d];
    if (ndf__get_nonzero(a, off)) { /* NaN counts, as numpy's nonzero */
      n++;
      for (int d = 0; d < nd; d++) {
        if (idx[d] < lo[d]) lo[d] = idx[d];
        if (idx[d] + 1 > hi[d]) hi[d] = idx[d] + 1;
      }
    }
    for (int d = nd - 1; d >= 0; d--) {
      if (++idx[d] < a->shape[d]) break;
      idx[d] = 0;
    }
  }
  if (n == 0)
    for (int d = 0; d < nd; d++) lo[d] = hi[d] = 0;
  *count = n;
}

ndf_status ndf_mask_bbox(ndf_ctx *ctx, const ndf_array *mask, int64_t *lo, int64_t *hi, int64_t *count) {
  const char *op = "ndf_mask_bbox";
  if (!ctx) return ndf__argerror(NULL, op, "ctx", "NULL context");
  if (!mask || !lo || !hi) return ndf__argerror(ctx, op, !mask ? "mask" : "lo", "NULL pointer");
  int64_t nelem;
  ndf_status s = ndf__check_array(ctx, op, "mask", mask, &nelem);
  if (s == NDF_OK) s = ndf__check_device(ctx, op, mask);
  if (s != NDF_OK) return s;
  if (mask->ndim < 1) return ndf__argerror(ctx, op, "mask", "rank 0, expected at least one axis");
  int64_t l[NDF_MAX_NDIM], h[NDF_MAX_NDIM], n;
  if (mask->device == NDF_DEVICE_CUDA) {
    ndf_array host;
    if ((s = ndf__check_host_memory(ctx, op, "the mask's host copy",
                                    nelem * (int64_t)ndf_dtype_size(mask->dtype))) != NDF_OK)
      return s;
    if ((s = ndf_array_alloc(ctx, &host, NDF_DEVICE_CPU, mask->dtype, mask->ndim, mask->shape)) != NDF_OK) return s;
    s = ndf_array_copy(ctx, &host, mask);
    if (s == NDF_OK) bbox_host(&host, l, h, &n);
    ndf_array_free(ctx, &host);
    if (s != NDF_OK) return s;
  } else {
    bbox_host(mask, l, h, &n);
  }
  memcpy(lo, l, sizeof(int64_t) * (size_t)mask->ndim);
  memcpy(hi, h, sizeof(int64_t) * (size_t)mask->ndim);
  if (count) *count = n;
  return NDF_OK;
}

ndf_status ndf_crop_plan(int ndim, const int64_t *shape, const int64_t *lo, const int64_t *hi, int nmargin,
                         const int64_t *margin, int64_t *start, int64_t *out_shape, const double *affine,
                         double *out_affine) {
  const char *op = "ndf_crop_plan";
  if (ndim < 1 || ndim > 3) return ndf__argerror(NULL, op, "ndim", "%d axes, expected 1 to 3", ndim);
  if (!shape || !lo || !hi || !start || !out_shape) return ndf__argerror(NULL, op, "shape", "NULL pointer");
  if (nmargin != 0 && nmargin != 1 && nmargin != ndim)
    return ndf__argerror(NULL, op, "margin", "%d values for %d axes (give 0, 1 or %d)", nmargin, ndim, ndim);
  if (nmargin && !margin) return ndf__argerror(NULL, op, "margin", "NULL pointer");
  if (out_affine && (!affine || !affine_ok(affine)))
    return ndf__argerror(NULL, op, "affine", "NULL, non-finite, or its bottom row is not 0 0 0 1");
  int64_t st[3], sh[3];
  for (int d = 0; d < ndim; d++) {
    const int64_t mg = nmargin == 0 ? 0 : margin[nmargin == 1 ? 0 : d];
    if (mg < 0) return ndf__argerror(NULL, op, "margin", "margin[%d]=%lld is negative", d, (long long)mg);
    if (!(lo[d] >= 0 && lo[d] < hi[d] && hi[d] <= shape[d]))
      return ndf__argerror(NULL, op, "lo", "the box [%lld, %lld) on axis %d is empty or outside 0..%lld",
                           (long long)lo[d], (long long)hi[d], d, (long long)shape[d]);
    const int64_t a = lo[d] > mg ? lo[d] - mg : 0;
    const int64_t b = shape[d] - hi[d] > mg ? hi[d] + mg : shape[d];
    st[d] = a;
    sh[d] = b - a;
  }
  memcpy(start, st, sizeof(int64_t) * (size_t)ndim);
  memcpy(out_shape, sh, sizeof(int64_t) * (size_t)ndim);
  if (out_affine) {
    double m[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, t[16];
    for (int d = 0; d < ndim; d++) m[4 * d + 3] = (double)st[d];
    mat4_mul(affine, m, t);
    memcpy(out_affine, t, sizeof t);
  }
  return NDF_OK;
}

ndf_status ndf_crop(ndf_ctx *ctx, const ndf_array *input, const int64_t *start, ndf_array *output) {
  const char *op = "ndf_crop";
  if (!ctx) return ndf__argerror(NULL, op, "ctx", "NULL context");
  if (!input || !output || !start) return ndf__argerror(ctx, op, !start ? "start" : "input", "NULL pointer");
  ndf_status s = ndf__check_array(ctx, op, "input", input, NULL);
  if (s != NDF_OK) return s;
  const int nsp = input->ndim < 3 ? input->ndim : 3;
  if (nsp < 1) return ndf__argerror(ctx, op, "input", "rank 0, expected 1 to 3 spatial axes");
  if ((s = check_volume(ctx, op, input, output, nsp)) != NDF_OK) return s;
  const int nb = input->ndim - nsp;
  double m[16] = {0};
  for (int d = 0; d < nsp; d++) {
    if (start[d] < 0 || output->shape[nb + d] < 1 || start[d] > input->shape[nb + d] - output->shape[nb + d])
      return ndf__argerror(ctx, op, "start", "start[%d]=%lld with extent %lld leaves the input's %lld", d,
                           (long long)start[d], (long long)output->shape[nb + d], (long long)input->shape[nb + d]);
    m[5 * d] = 1;
    m[4 * d + 3] = (double)start[d];
  }
  return move_voxels(ctx, op, input, output, nsp, m);
}

/* ---- normalization --------------------------------------------------------------------- */

static const char *const MODALITY_NAMES[] = {"ct", "mri"};

ndf_status ndf_modality_from_name(const char *name, ndf_modality *out) {
  for (int i = 0; i < 2; i++)
    if (name && out && strcmp(name, MODALITY_NAMES[i]) == 0) {
      *out = (ndf_modality)i;
      return NDF_OK;
    }
  return ndf__argerror(NULL, "ndf_modality_from_name", "name", "'%s' is not a modality (ct, mri)",
                       name ? name : "(null)");
}

const char *ndf_modality_name(ndf_modality m) {
  return (unsigned)m < 2 ? MODALITY_NAMES[m] : NULL;
}

void ndf_normalize_options_init(ndf_normalize_options *opt) {
  if (!opt) return;
  memset(opt, 0, sizeof *opt);
  opt->modality = NDF_MODALITY_MRI;
  opt->centre = 40;
  opt->width = 80;
}

ndf_status ndf_normalize_modality(ndf_ctx *ctx, const ndf_array *input, const ndf_array *mask, ndf_array *output,
                                  const ndf_normalize_options *opt) {
  const char *op = "ndf_normalize_modality";
  if (!ctx) return ndf__argerror(NULL, op, "ctx", "NULL context");
  ndf_normalize_options o;
  if (opt) o = *opt;
  else ndf_normalize_options_init(&o);
  if (o.modality == NDF_MODALITY_CT) {
    double c = o.centre, w = o.width;
    if (o.preset && ndf_ct_window_preset(o.preset, &c, &w) != NDF_OK)
      return ndf__argerror(ctx, op, "preset", "'%s' is not a CT window preset", o.preset);
    ndf_window_options wo;
    ndf_window_options_init(&wo);
    wo.out_min = -1;
    wo.out_max = 1;
    wo.batch_dims = o.batch_dims;
    return ndf_window_ct(ctx, input, output, c, w, &wo);
  }
  if (o.modality == NDF_MODALITY_MRI) return ndf_normalize_zscore(ctx, input, mask, output, o.batch_dims);
  return ndf__argerror(ctx, op, "modality", "%d is not a modality", (int)o.modality);
}
