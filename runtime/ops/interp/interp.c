/*
 * interp.c -- interpolation (scipy.ndimage._interpolation): validation,
 * scipy's argument conventions (matrix forms, zoom factors and shapes,
 * rotate's matrix and output plane), and dispatch to the CPU or CUDA backend.
 *
 * scipy.ndimage (1.10) defines, for an output point o:
 *   shift            i = o - shift                      (its zoom_shift path)
 *   zoom             i = o (n_in - 1) / (n_out - 1), or with grid_mode
 *                    (o + 0.5) n_in / n_out - 0.5 (a factor 1 where n_out
 *                    [- 1] is 0); n_out = round(n_in zoom)
 *   affine (n, m)    i = offset + matrix @ o
 *   affine (n,)      i = (o + offset / matrix) matrix   (zoom_shift again)
 *   rotate           affine with [[c, s], [-s, c]] (c, s of the angle in
 *                    degrees) about the centres of both planes
 * then samples the B-spline of the given order, prefiltered in float64
 * unless prefilter is off or the order is below 2.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp/interp.h"

static const char *mode_names[NDF_INTERP_MODE_COUNT] = {"constant", "grid-constant", "nearest", "reflect",
                                                        "mirror", "wrap", "grid-wrap"};

const char *ndf_interp_mode_name(ndf_interp_mode m) {
  return ((unsigned)m < NDF_INTERP_MODE_COUNT) ? mode_names[m] : NULL;
}

ndf_status ndf_interp_mode_from_name(const char *name, ndf_interp_mode *out) {
  if (!name || !out) return ndf__error(NULL, NDF_EINVAL, "ndf_interp_mode_from_name: NULL argument");
  for (int i = 0; i < NDF_INTERP_MODE_COUNT; i++)
    if (strcmp(name, mode_names[i]) == 0) {
      *out = (ndf_interp_mode)i;
      return NDF_OK;
    }
  if (strcmp(name, "grid-mirror") == 0) {
    *out = NDF_INTERP_REFLECT;
    return NDF_OK;
  }
  return ndf__error(NULL, NDF_EINVAL,
                    "ndf_interp_mode_from_name: unknown mode '%s' (expected constant, grid-constant, nearest, "
                    "reflect, grid-mirror, mirror, wrap or grid-wrap)", name);
}

void ndf_interp_options_init(ndf_interp_options *opt) {
  if (!opt) return;
  memset(opt, 0, sizeof *opt);
  opt->order = 3;
  opt->mode = NDF_INTERP_CONSTANT;
  opt->prefilter = 1;
}

/* ---- checks ----------------------------------------------------------------------------------- */

/* Every dtype, for inputs and outputs alike (a bool output is stored as scipy stores it: interp.h). */
static int dtype_ok(ndf_dtype t) { return (unsigned)t < NDF_DTYPE_COUNT; }
#define NDF__INTERP_DTYPES "bool, uint8, int8, uint16, int16, uint32, int32, int64, uint64, float32, float64"

static const char *dname(ndf_dtype t) { return ndf_dtype_name(t) ? ndf_dtype_name(t) : "unknown"; }

static ndf_status check_mode(ndf_ctx *ctx, const char *name, ndf_interp_mode mode) {
  if ((unsigned)mode >= NDF_INTERP_MODE_COUNT)
    return ndf__argerror(ctx, name, "mode", "%d is not an ndf_interp_mode", (int)mode);
  return NDF_OK;
}

static ndf_status check_order(ndf_ctx *ctx, const char *name, int order, int lo) {
  if (order < lo || order > 5) return ndf__argerror(ctx, name, "order", "%d is not in %d..5", order, lo);
  return NDF_OK;
}

/* The input (any rank >= 1 with batch_dims < rank, a supported dtype, a usable device). */
static ndf_status check_input(ndf_ctx *ctx, const char *name, const ndf_array *in, int batch_dims) {
  if (!in) return ndf__argerror(ctx, name, "input", "NULL");
  if (!dtype_ok(in->dtype))
    return ndf__argerror(ctx, name, "input", "dtype %s is not supported (" NDF__INTERP_DTYPES ")", dname(in->dtype));
  ndf_status s = ndf__check_shape(ctx, name, in, batch_dims);
  if (s == NDF_OK) s = ndf__check_device(ctx, name, in);
  return s;
}

/* The output: a supported dtype, rank nb + onsp with the input's batch
 * extents, the input's device, data when it has elements, no overlap. */
static ndf_status check_output(ndf_ctx *ctx, const char *name, const ndf_array *in, const ndf_array *out, int nb) {
  if (!out) return ndf__argerror(ctx, name, "output", "NULL");
  if (!dtype_ok(out->dtype))
    return ndf__argerror(ctx, name, "output", "dtype %s is not supported (" NDF__INTERP_DTYPES ")", dname(out->dtype));
  if (out->ndim <= nb || out->ndim > NDF_MAX_NDIM || out->ndim - nb > NDF_MAX_SPATIAL)
    return ndf__argerror(ctx, name, "output", "rank %d must exceed batch_dims %d (at most %d spatial axes)", out->ndim,
                         nb, NDF_MAX_SPATIAL);
  for (int d = 0; d < out->ndim; d++)
    if (out->shape[d] < 0) return ndf__argerror(ctx, name, "output", "shape[%d]=%lld is negative", d, (long long)out->shape[d]);
  for (int d = 0; d < nb; d++)
    if (out->shape[d] != in->shape[d])
      return ndf__argerror(ctx, name, "output", "batch axis %d has extent %lld, the input %lld", d,
                           (long long)out->shape[d], (long long)in->shape[d]);
  int64_t n;
  ndf_status s = ndf__check_array(ctx, name, "output", out, &n);
  if (s != NDF_OK) return s;
  if (in->device != out->device || in->device_id != out->device_id)
    return ndf__argerror(ctx, name, "output", "lives on another device than the input");
  if (n == 0) return NDF_OK;
  if (!out->data) return ndf__argerror(ctx, name, "output", "NULL data");
  if (!ndf__layout_is_proper(out)) return ndf__argerror(ctx, name, "output", "its strides make elements overlap");
  if (ndf_array_size(in) > 0 && in->data && ndf__arrays_overlap(in, out))
    return ndf__argerror(ctx, name, "output", "overlaps the input (in-place interpolation is not supported)");
  return NDF_OK;
}

/* The output's spatial shape must be `want`. */
static ndf_status check_out_shape(ndf_ctx *ctx, const char *name, const ndf_array *out, int nb, int n,
                                  const int64_t *want, const char *what) {
  if (out->ndim - nb != n)
    return ndf__argerror(ctx, name, "output", "%d spatial axes, %s has %d", out->ndim - nb, what, n);
  for (int d = 0; d < n; d++)
    if (out->shape[nb + d] != want[d]) {
      char a[256], b[256];
      return ndf__argerror(ctx, name, "output", "spatial shape %s is not %s (%s)",
                           ndf__shape_str(n, out->shape + nb, a, sizeof a), ndf__shape_str(n, want, b, sizeof b), what);
    }
  return NDF_OK;
}

/* Scalar-or-per-axis values (scipy's _normalize_sequence) into v[0..n). */
static ndf_status per_axis(ndf_ctx *ctx, const char *name, const char *arg, int cnt, const double *src, int n, double dflt,
                           double *v) {
  if (cnt == 0) {
    for (int d = 0; d < n; d++) v[d] = dflt;
    return NDF_OK;
  }
  if (!src) return ndf__argerror(ctx, name, arg, "NULL with %d values", cnt);
  if (cnt != 1 && cnt != n)
    return ndf__argerror(ctx, name, arg, "%d values for %d spatial axes (give 1 or %d)", cnt, n, n);
  for (int d = 0; d < n; d++) v[d] = src[cnt == 1 ? 0 : d];
  return NDF_OK;
}

/* ---- the common path of the transforms -------------------------------------------------------- */

static void plan_init(ndf__interp_plan *p, const ndf_interp_options *o, int nb, int nsp, int onsp) {
  memset(p, 0, sizeof *p);
  p->nb = nb;
  p->nsp = nsp;
  p->onsp = onsp;
  p->order = o->order;
  p->mode = o->mode;
  p->cval = o->cval;
  p->filtered = o->prefilter && o->order > 1;
  p->npad = p->filtered && (o->mode == NDF_INTERP_NEAREST || o->mode == NDF_INTERP_GRID_CONSTANT) ? NDF__INTERP_NPAD : 0;
}

/* Options, order and mode; the input's checks; *o gets the options to use. */
static ndf_status begin(ndf_ctx *ctx, const char *name, const ndf_array *in, const ndf_interp_options *opt,
                        ndf_interp_options *o) {
  if (opt) *o = *opt;
  else ndf_interp_options_init(o);
  ndf_status s = check_order(ctx, name, o->order, 0);
  if (s == NDF_OK) s = check_mode(ctx, name, o->mode);
  if (s == NDF_OK) s = check_input(ctx, name, in, o->batch_dims);
  if (s == NDF_OK && in->ndim - o->batch_dims > NDF_MAX_SPATIAL)
    return ndf__argerror(ctx, name, "input", "%d spatial axes (at most %d)", in->ndim - o->batch_dims, NDF_MAX_SPATIAL);
  return s;
}

/* Runs a checked plan.  An empty output: nothing to do.  An input with an
 * empty spatial axis and a non-empty output (rotate with reshape, an
 * output_shape, points of map_coordinates): every point lies outside the
 * input, which scipy defines in the constant and grid-constant modes alone
 * (cval, and grid-constant's padding of cval interpolated); the backends
 * compute it without reading the input, the prefilter kept where there is
 * padding to filter.  The other modes map points onto samples that do not
 * exist (scipy reads outside its buffer there): an error. */
static ndf_status run(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out, const ndf__interp_plan *p) {
  if (ndf_array_size(out) == 0) return NDF_OK;
  int empty = -1;
  for (int d = p->nsp - 1; d >= 0; d--)
    if (in->shape[p->nb + d] == 0) empty = d;
  if (empty < 0) {
    if (!in->data) return ndf__argerror(ctx, name, "input", "NULL data");
    return in->device == NDF_DEVICE_CPU ? ndf__interp_cpu(ctx, name, in, out, p) : ndf__interp_cuda(ctx, name, in, out, p);
  }
  if (p->mode != NDF_INTERP_CONSTANT && p->mode != NDF_INTERP_GRID_CONSTANT)
    return ndf__argerror(ctx, name, "input",
                         "spatial axis %d is empty and the output is not: mode %s has no samples to read there "
                         "(only constant and grid-constant define points outside an empty input)",
                         empty, ndf_interp_mode_name(p->mode));
  ndf__interp_plan q = *p;
  if (q.npad == 0) q.filtered = 0; /* no coefficient is read: every point is cval */
  if (in->device != NDF_DEVICE_CPU) return ndf__interp_cuda(ctx, name, in, out, &q);
  /* on the host, a view whose every element offset is 0 at a valid address (the data may be NULL) */
  static const double nothing = 0;
  ndf_array e = *in;
  for (int d = 0; d < e.ndim; d++) e.strides[d] = 0;
  if (!e.data) e.data = (void *)&nothing;
  return ndf__interp_cpu(ctx, name, &e, out, &q);
}

#define NDF__BEGIN(name)                                                         \
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name); \
  ndf__clear_error(ctx)

/* ---- spline filters ------------------------------------------------------------------------ */

static ndf_status spline_common(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out, int order, int lo,
                                ndf_interp_mode mode, int batch_dims) {
  ndf_status s = check_order(ctx, name, order, lo);
  if (s == NDF_OK) s = check_mode(ctx, name, mode);
  if (s == NDF_OK) s = check_input(ctx, name, in, batch_dims);
  if (s == NDF_OK) s = check_output(ctx, name, in, out, 0);
  if (s != NDF_OK) return s;
  if (out->ndim != in->ndim) return ndf__argerror(ctx, name, "output", "rank %d differs from the input rank %d", out->ndim, in->ndim);
  for (int d = 0; d < in->ndim; d++)
    if (out->shape[d] != in->shape[d])
      return ndf__argerror(ctx, name, "output", "shape[%d]=%lld differs from the input shape %lld", d,
                           (long long)out->shape[d], (long long)in->shape[d]);
  if (ndf_array_size(in) > 0 && !in->data) return ndf__argerror(ctx, name, "input", "NULL data");
  return NDF_OK;
}

/* NumPy's cast of src into dst (the linear filters' elementwise step, filters/filters.h). */
void ndf__filters_cast_cpu(ndf_ctx *ctx, const ndf_array *src, ndf_array *dst);
ndf_status ndf__filters_cast_cuda(ndf_ctx *ctx, const char *name, const ndf_array *src, ndf_array *dst);

/* A spline filter of order <= 1 is a copy (scipy: output[...] = numpy.array(input)).  Where a 64-bit
 * integer is involved it runs as NumPy's cast, exact beyond 2^53 (the line passes go through double);
 * a bool on either side takes the line pass, which has NumPy's bool casts (interp_cpu.c). */
static int copy_cast(const ndf_array *in, const ndf_array *out, int order) {
  const int wide_in = in->dtype == NDF_INT64 || in->dtype == NDF_UINT64;
  const int wide_out = out->dtype == NDF_INT64 || out->dtype == NDF_UINT64;
  return order <= 1 && in->dtype != NDF_BOOL && out->dtype != NDF_BOOL && (wide_in || wide_out);
}
static ndf_status spline_copy(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *out) {
  if (in->device == NDF_DEVICE_CPU) {
    ndf__filters_cast_cpu(ctx, in, out);
    return NDF_OK;
  }
  return ndf__filters_cast_cuda(ctx, name, in, out);
}

/* A rank-0 array as one element of rank 1 (the copies of orders 0 and 1 take
 * scalars, as scipy's output[...] = numpy.array(input) does). */
static ndf_array rank1(const ndf_array *a) {
  ndf_array v = *a;
  if (a->ndim == 0) {
    v.ndim = 1;
    v.shape[0] = 1;
    v.strides[0] = 1;
  }
  return v;
}

ndf_status ndf_spline_filter1d(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, int order, int axis,
                               ndf_interp_mode mode) {
  static const char *name = "ndf_spline_filter1d";
  NDF__BEGIN(name);
  if (order == 0 || order == 1) { /* scipy copies before it reads axis or mode: neither is checked */
    if (input && output && input->ndim == 0 && output->ndim == 0) {
      const ndf_array in1 = rank1(input);
      ndf_array out1 = rank1(output);
      return ndf_spline_filter1d(ctx, &in1, &out1, order, 0, NDF_INTERP_MIRROR);
    }
    axis = input && input->ndim > 0 ? input->ndim - 1 : 0;
    mode = NDF_INTERP_MIRROR;
  }
  ndf_status s = spline_common(ctx, name, input, output, order, 0, mode, 0);
  if (s != NDF_OK) return s;
  if (axis < -input->ndim || axis >= input->ndim)
    return ndf__argerror(ctx, name, "axis", "%d is out of range for rank %d", axis, input->ndim);
  if (axis < 0) axis += input->ndim;
  if (ndf_array_size(input) == 0) return NDF_OK;
  if (copy_cast(input, output, order)) return spline_copy(ctx, name, input, output);
  return input->device == NDF_DEVICE_CPU ? ndf__spline_filter_cpu(ctx, name, input, output, order, 1, &axis, mode)
                                         : ndf__spline_filter_cuda(ctx, name, input, output, order, 1, &axis, mode);
}

ndf_status ndf_spline_filter(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, int order, ndf_interp_mode mode,
                             int batch_dims) {
  static const char *name = "ndf_spline_filter";
  NDF__BEGIN(name);
  ndf_status s = spline_common(ctx, name, input, output, order, 2, mode, batch_dims);
  if (s != NDF_OK) return s;
  if (ndf_array_size(input) == 0) return NDF_OK;
  int axes[NDF_MAX_NDIM], n = 0;
  for (int d = batch_dims; d < input->ndim; d++) axes[n++] = d;
  if (n > 0 && copy_cast(input, output, order)) return spline_copy(ctx, name, input, output);
  return input->device == NDF_DEVICE_CPU ? ndf__spline_filter_cpu(ctx, name, input, output, order, n, axes, mode)
                                         : ndf__spline_filter_cuda(ctx, name, input, output, order, n, axes, mode);
}

/* ---- the transforms ---------------------------------------------------------------------------- */

ndf_status ndf_map_coordinates(ndf_ctx *ctx, const ndf_array *input, const ndf_array *coordinates, ndf_array *output,
                               const ndf_interp_options *opt) {
  static const char *name = "ndf_map_coordinates";
  NDF__BEGIN(name);
  ndf_interp_options o;
  ndf_status s = begin(ctx, name, input, opt, &o);
  if (s == NDF_OK) s = check_output(ctx, name, input, output, o.batch_dims);
  if (s != NDF_OK) return s;
  const int nb = o.batch_dims, nsp = input->ndim - nb, onsp = output->ndim - nb;
  if (!coordinates) return ndf__argerror(ctx, name, "coordinates", "NULL");
  if (!dtype_ok(coordinates->dtype))
    return ndf__argerror(ctx, name, "coordinates", "dtype %s is not supported", dname(coordinates->dtype));
  if (coordinates->ndim != 1 + onsp)
    return ndf__argerror(ctx, name, "coordinates", "rank %d is not 1 + the %d spatial axes of the output",
                         coordinates->ndim, onsp);
  if (coordinates->shape[0] != nsp)
    return ndf__argerror(ctx, name, "coordinates", "shape[0]=%lld is not the input's spatial rank %d",
                         (long long)coordinates->shape[0], nsp);
  s = check_out_shape(ctx, name, output, nb, onsp, coordinates->shape + 1, "coordinates.shape[1:]");
  if (s == NDF_OK) s = ndf__check_array(ctx, name, "coordinates", coordinates, NULL);
  if (s != NDF_OK) return s;
  if (coordinates->device != input->device || coordinates->device_id != input->device_id)
    return ndf__argerror(ctx, name, "coordinates", "lives on another device than the input");
  if (ndf_array_size(output) > 0 && !coordinates->data) return ndf__argerror(ctx, name, "coordinates", "NULL data");
  if (ndf_array_size(output) > 0 && ndf__arrays_overlap(coordinates, output))
    return ndf__argerror(ctx, name, "output", "overlaps the coordinates");
  ndf__interp_plan p;
  plan_init(&p, &o, nb, nsp, onsp);
  p.kind = NDF__XF_COORDS;
  p.coords = coordinates;
  return run(ctx, name, input, output, &p);
}

/* Reads element (i, j) of a host matrix as a double. */
static double mat_at(const ndf_array *m, int64_t i, int64_t j) {
  int64_t off = i * m->strides[0] + (m->ndim == 2 ? j * m->strides[1] : 0);
  return ndf__load_f64(m->data, m->dtype, off);
}

ndf_status ndf_affine_transform(ndf_ctx *ctx, const ndf_array *input, const ndf_array *matrix, int noffset,
                                const double *offset, ndf_array *output, const ndf_interp_options *opt) {
  static const char *name = "ndf_affine_transform";
  NDF__BEGIN(name);
  ndf_interp_options o;
  ndf_status s = begin(ctx, name, input, opt, &o);
  if (s == NDF_OK) s = check_output(ctx, name, input, output, o.batch_dims);
  if (s != NDF_OK) return s;
  const int nb = o.batch_dims, n = input->ndim - nb, m = output->ndim - nb;
  if (!matrix) return ndf__argerror(ctx, name, "matrix", "NULL");
  if (matrix->device != NDF_DEVICE_CPU) return ndf__argerror(ctx, name, "matrix", "must be a CPU (host) array");
  if (!dtype_ok(matrix->dtype)) return ndf__argerror(ctx, name, "matrix", "dtype %s is not supported", dname(matrix->dtype));
  if (matrix->ndim != 1 && matrix->ndim != 2)
    return ndf__argerror(ctx, name, "matrix", "rank %d is not 1 or 2", matrix->ndim);
  if ((s = ndf__check_array(ctx, name, "matrix", matrix, NULL)) != NDF_OK) return s;
  if (matrix->shape[0] < 1 || (matrix->ndim == 2 && matrix->shape[1] < 1))
    return ndf__argerror(ctx, name, "matrix", "is empty");
  if (!matrix->data) return ndf__argerror(ctx, name, "matrix", "NULL data");
  ndf__interp_plan p;
  plan_init(&p, &o, nb, n, m);
  int64_t rows = matrix->shape[0], cols = matrix->ndim == 2 ? matrix->shape[1] : 1;
  int homogeneous = matrix->ndim == 2 && cols == n + 1 && (rows == n || rows == n + 1);
  if (homogeneous && rows == n + 1)
    for (int j = 0; j <= n; j++)
      if (mat_at(matrix, n, j) != (j == n ? 1.0 : 0.0))
        return ndf__argerror(ctx, name, "matrix", "the bottom row of a homogeneous (%d, %d) matrix must be (0, ..., 0, 1)",
                             n + 1, n + 1);
  if (homogeneous) {
    rows = n;
    cols = n;
  }
  if (rows != n)
    return ndf__argerror(ctx, name, "matrix", "has %lld rows, the input %d spatial axes", (long long)matrix->shape[0], n);
  if (matrix->ndim == 2 && cols != m)
    return ndf__argerror(ctx, name, "matrix", "has %lld columns, the output %d spatial axes", (long long)cols, m);
  if (homogeneous) {
    for (int h = 0; h < n; h++) p.offset[h] = mat_at(matrix, h, n);
  } else if ((s = per_axis(ctx, name, "offset", noffset, offset, n, 0.0, p.offset)) != NDF_OK) {
    return s;
  }
  if (matrix->ndim == 1) {
    if (m != n) return ndf__argerror(ctx, name, "output", "%d spatial axes; a (n,) matrix keeps the input's %d", m, n);
    p.kind = NDF__XF_ZOOMSHIFT;
    p.has_zoom = p.has_shift = 1;
    for (int h = 0; h < n; h++) {
      p.zoom[h] = mat_at(matrix, h, 0);
      p.shift[h] = p.offset[h] / p.zoom[h];
    }
  } else {
    p.kind = NDF__XF_AFFINE;
    for (int h = 0; h < n; h++)
      for (int l = 0; l < m; l++) p.matrix[h * m + l] = mat_at(matrix, h, l);
  }
  return run(ctx, name, input, output, &p);
}

ndf_status ndf_shift(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, int nshift, const double *shift,
                     const ndf_interp_options *opt) {
  static const char *name = "ndf_shift";
  NDF__BEGIN(name);
  ndf_interp_options o;
  ndf_status s = begin(ctx, name, input, opt, &o);
  if (s == NDF_OK) s = check_output(ctx, name, input, output, o.batch_dims);
  if (s != NDF_OK) return s;
  const int nb = o.batch_dims, n = input->ndim - nb;
  ndf__interp_plan p;
  plan_init(&p, &o, nb, n, n);
  if (nshift == 0) return ndf__argerror(ctx, name, "shift", "no values (give 1 or %d)", n);
  if ((s = per_axis(ctx, name, "shift", nshift, shift, n, 0.0, p.shift)) != NDF_OK) return s;
  if ((s = check_out_shape(ctx, name, output, nb, n, input->shape + nb, "the input's")) != NDF_OK) return s;
  p.kind = NDF__XF_ZOOMSHIFT;
  p.has_shift = 1;
  for (int d = 0; d < n; d++) p.shift[d] = -p.shift[d];
  return run(ctx, name, input, output, &p);
}

/* Python's round() of a double to an integer: half to even. */
static double round_half_even(double x) {
  double r = nearbyint(x); /* the default rounding mode rounds halves to even */
  return r;
}

static ndf_status zoom_shape(ndf_ctx *ctx, const char *name, int n, const int64_t *shape, int nzoom, const double *zoom,
                             double *z, int64_t *out) {
  ndf_status s = per_axis(ctx, name, "zoom", nzoom, zoom, n, 1.0, z);
  if (s != NDF_OK) return s;
  if (nzoom == 0) return ndf__argerror(ctx, name, "zoom", "no values (give 1 or %d)", n);
  for (int d = 0; d < n; d++) {
    /* scipy takes any factor whose round(n z) is a valid extent: 0 (or a
     * factor small enough) gives an empty axis, and so does an empty input */
    if (!(z[d] >= 0) || !isfinite(z[d]))
      return ndf__argerror(ctx, name, "zoom", "zoom[%d]=%g is not a finite factor >= 0", d, z[d]);
    const double e = round_half_even((double)shape[d] * z[d]);
    if (!(e < 9.0e15)) return ndf__argerror(ctx, name, "zoom", "axis %d zooms to %g samples", d, e);
    out[d] = (int64_t)e;
  }
  return NDF_OK;
}

ndf_status ndf_zoom_shape(int ndim, const int64_t *shape, int batch_dims, int nzoom, const double *zoom,
                          int64_t *out_shape) {
  static const char *name = "ndf_zoom_shape";
  if (!shape || !out_shape) return ndf__error(NULL, NDF_EINVAL, "%s: NULL argument", name);
  if (ndim < 1 || ndim > NDF_MAX_NDIM || batch_dims < 0 || batch_dims >= ndim || ndim - batch_dims > NDF_MAX_SPATIAL)
    return ndf__error(NULL, NDF_EINVAL, "%s: bad argument '%s' (rank %d with batch_dims %d: at least one and at most %d "
                      "spatial axes)", name, ndim < 1 || ndim > NDF_MAX_NDIM ? "ndim" : "batch_dims", ndim, batch_dims,
                      NDF_MAX_SPATIAL);
  double z[NDF_MAX_SPATIAL];
  int64_t o[NDF_MAX_SPATIAL];
  ndf_status s = zoom_shape(NULL, name, ndim - batch_dims, shape + batch_dims, nzoom, zoom, z, o);
  if (s != NDF_OK) return s;
  for (int d = 0; d < ndim; d++) out_shape[d] = d < batch_dims ? shape[d] : o[d - batch_dims];
  return NDF_OK;
}

ndf_status ndf_zoom(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, int nzoom, const double *zoom,
                    int grid_mode, const ndf_interp_options *opt) {
  static const char *name = "ndf_zoom";
  NDF__BEGIN(name);
  ndf_interp_options o;
  ndf_status s = begin(ctx, name, input, opt, &o);
  if (s == NDF_OK) s = check_output(ctx, name, input, output, o.batch_dims);
  if (s != NDF_OK) return s;
  const int nb = o.batch_dims, n = input->ndim - nb;
  double z[NDF_MAX_SPATIAL];
  int64_t want[NDF_MAX_SPATIAL];
  if ((s = zoom_shape(ctx, name, n, input->shape + nb, nzoom, zoom, z, want)) != NDF_OK) return s;
  if ((s = check_out_shape(ctx, name, output, nb, n, want, "round(input shape * zoom)")) != NDF_OK) return s;
  /* A zoom by exactly 1 on every axis with the prefilter is the input as NumPy converts it into the
   * output (scipy >= 1.16, its issue 20999: the spline's round-off is not added to an identity), for
   * every order: the copy of a spline filter of order 0.  Without the prefilter the input is read as
   * spline coefficients and interpolated. */
  int unit = o.prefilter;
  for (int d = 0; d < n; d++) unit = unit && z[d] == 1.0;
  if (unit) {
    if (ndf_array_size(input) == 0) return NDF_OK;
    if (copy_cast(input, output, 0)) return spline_copy(ctx, name, input, output);
    int axes[NDF_MAX_NDIM];
    for (int d = 0; d < n; d++) axes[d] = nb + d;
    return input->device == NDF_DEVICE_CPU
               ? ndf__spline_filter_cpu(ctx, name, input, output, 0, n, axes, NDF_INTERP_MIRROR)
               : ndf__spline_filter_cuda(ctx, name, input, output, 0, n, axes, NDF_INTERP_MIRROR);
  }
  ndf__interp_plan p;
  plan_init(&p, &o, nb, n, n);
  p.kind = NDF__XF_ZOOMSHIFT;
  p.has_zoom = 1;
  p.grid_mode = grid_mode != 0;
  for (int d = 0; d < n; d++) {
    int64_t num = input->shape[nb + d], div = want[d];
    if (!p.grid_mode) {
      num -= 1;
      div -= 1;
    }
    p.zoom[d] = div != 0 ? (double)num / (double)div : 1.0;
  }
  return run(ctx, name, input, output, &p);
}

/* sin and cos of an angle in degrees as scipy.special.sindg / cosdg compute
 * them (scipy's rotate uses those): reduction to an octant, then Cephes'
 * polynomials for sin and cos on [-45, 45] degrees.  Exact at multiples of
 * 90 degrees; elsewhere they may differ from sin(x * pi / 180) in the last
 * bit, which moves the rotated grid by as much and so decides ties. */
static const double dg_sin[6] = {1.58962301572218447952E-10, -2.50507477628503540135E-8, 2.75573136213856773549E-6,
                                 -1.98412698295895384658E-4, 8.33333333332211858862E-3, -1.66666666666666307295E-1};
static const double dg_cos[7] = {1.13678171382044553091E-11, -2.08758833757683644217E-9, 2.75573155429816611547E-7,
                                 -2.48015872936186303776E-5, 1.38888888888806666760E-3, -4.16666666666666348141E-2,
                                 4.99999999999999999798E-1};

static double dg_poly(double x, const double *c, int n) {
  double a = c[0];
  for (int i = 1; i <= n; i++) a = a * x + c[i];
  return a;
}

/* The octant of |x| degrees: j in 0..3 after the sign flip *flip, and the
 * remainder z in radians. */
static int dg_reduce(double x, double *z, int *flip) {
  double y = floor(x / 45.0);
  int j = (int)(y - ldexp(floor(ldexp(y, -4)), 4));
  if (j & 1) {
    j += 1;
    y += 1.0;
  }
  j &= 7;
  *flip = 0;
  if (j > 3) {
    *flip = 1;
    j -= 4;
  }
  *z = (x - y * 45.0) * 1.74532925199432957692E-2;
  return j;
}

static void sincos_deg(double a, double *sn, double *cs) {
  const double x = fabs(a);
  if (x > 1.0e14) { /* scipy returns 0 for both (total loss of precision) */
    *sn = *cs = 0.0;
    return;
  }
  double z;
  int flip;
  const int j = dg_reduce(x, &z, &flip);
  const double zz = z * z;
  const double ps = z + z * (zz * dg_poly(zz, dg_sin, 5)), pc = 1.0 - zz * dg_poly(zz, dg_cos, 6);
  double s = (j == 1 || j == 2) ? pc : ps, c = (j == 1 || j == 2) ? ps : pc;
  if (flip ^ (a < 0)) s = -s;
  if (flip ^ (j > 1)) c = -c;
  *sn = s;
  *cs = c;
}

/* Rotate's geometry: plane axes a0 < a1 among the spatial axes, the matrix, offset and output plane. */
static ndf_status rotate_geometry(ndf_ctx *ctx, const char *name, int nsp, const int64_t *sshape, double angle,
                                  int axis0, int axis1, int reshape, int *a0, int *a1, double mat[4], double off[2],
                                  int64_t oplane[2]) {
  if (nsp < 2) return ndf__argerror(ctx, name, "input", "%d spatial axes; rotate needs at least 2", nsp);
  int x0 = axis0 < 0 ? axis0 + nsp : axis0, x1 = axis1 < 0 ? axis1 + nsp : axis1;
  if (x0 < 0 || x0 >= nsp || x1 < 0 || x1 >= nsp)
    return ndf__argerror(ctx, name, "axes", "(%d, %d) is not a plane of %d spatial axes", axis0, axis1, nsp);
  if (x0 == x1) return ndf__argerror(ctx, name, "axes", "(%d, %d) names one axis twice", axis0, axis1);
  if (!isfinite(angle)) return ndf__argerror(ctx, name, "angle", "%g is not finite", angle);
  if (x0 > x1) {
    int t = x0;
    x0 = x1;
    x1 = t;
  }
  double s, c;
  sincos_deg(angle, &s, &c);
  const double iy = (double)sshape[x0], ix = (double)sshape[x1];
  if (reshape) {
    /* The rotated corners (0,0), (0,ix), (iy,0), (iy,ix): extent + 0.5, truncated. */
    const double r0[4] = {0.0, s * ix, c * iy, c * iy + s * ix};
    const double r1[4] = {0.0, c * ix, -s * iy, -s * iy + c * ix};
    double lo0 = r0[0], hi0 = r0[0], lo1 = r1[0], hi1 = r1[0];
    for (int k = 1; k < 4; k++) {
      lo0 = fmin(lo0, r0[k]);
      hi0 = fmax(hi0, r0[k]);
      lo1 = fmin(lo1, r1[k]);
      hi1 = fmax(hi1, r1[k]);
    }
    oplane[0] = (int64_t)(hi0 - lo0 + 0.5);
    oplane[1] = (int64_t)(hi1 - lo1 + 0.5);
  } else {
    oplane[0] = sshape[x0];
    oplane[1] = sshape[x1];
  }
  const double h0 = (double)(oplane[0] - 1) / 2, h1 = (double)(oplane[1] - 1) / 2;
  off[0] = (iy - 1) / 2 - (c * h0 + s * h1);
  off[1] = (ix - 1) / 2 - (-s * h0 + c * h1);
  mat[0] = c;
  mat[1] = s;
  mat[2] = -s;
  mat[3] = c;
  *a0 = x0;
  *a1 = x1;
  return NDF_OK;
}

ndf_status ndf_rotate_shape(int ndim, const int64_t *shape, int batch_dims, double angle, int axis0, int axis1,
                            int reshape, int64_t *out_shape) {
  static const char *name = "ndf_rotate_shape";
  if (!shape || !out_shape) return ndf__error(NULL, NDF_EINVAL, "%s: NULL argument", name);
  if (ndim < 1 || ndim > NDF_MAX_NDIM || batch_dims < 0 || batch_dims >= ndim)
    return ndf__error(NULL, NDF_EINVAL, "%s: bad argument '%s' (rank %d with batch_dims %d: at least one spatial axis)",
                      name, ndim < 1 || ndim > NDF_MAX_NDIM ? "ndim" : "batch_dims", ndim, batch_dims);
  int a0, a1;
  double mat[4], off[2];
  int64_t op[2];
  ndf_status s = rotate_geometry(NULL, name, ndim - batch_dims, shape + batch_dims, angle, axis0, axis1, reshape, &a0,
                                 &a1, mat, off, op);
  if (s != NDF_OK) return s;
  for (int d = 0; d < ndim; d++) out_shape[d] = shape[d];
  out_shape[batch_dims + a0] = op[0];
  out_shape[batch_dims + a1] = op[1];
  return NDF_OK;
}

ndf_status ndf_rotate(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, double angle, int axis0, int axis1,
                      int reshape, const ndf_interp_options *opt) {
  static const char *name = "ndf_rotate";
  NDF__BEGIN(name);
  ndf_interp_options o;
  ndf_status s = begin(ctx, name, input, opt, &o);
  if (s == NDF_OK) s = check_output(ctx, name, input, output, o.batch_dims);
  if (s != NDF_OK) return s;
  const int nb = o.batch_dims, n = input->ndim - nb;
  int a0, a1;
  double mat[4], off[2];
  int64_t op[2];
  if ((s = rotate_geometry(ctx, name, n, input->shape + nb, angle, axis0, axis1, reshape, &a0, &a1, mat, off, op)) != NDF_OK)
    return s;
  int64_t want[NDF_MAX_SPATIAL];
  for (int d = 0; d < n; d++) want[d] = input->shape[nb + d];
  want[a0] = op[0];
  want[a1] = op[1];
  if ((s = check_out_shape(ctx, name, output, nb, n, want, "rotate's output shape")) != NDF_OK) return s;
  /* Views with the axes off the plane moved in front as batch axes: scipy
   * rotates every plane on its own. */
  ndf_array vi = *input, vo = *output;
  int k = 0;
  for (int d = 0; d < input->ndim; d++) {
    if (d == nb + a0 || d == nb + a1) continue;
    vi.shape[k] = input->shape[d];
    vi.strides[k] = input->strides[d];
    vo.shape[k] = output->shape[d];
    vo.strides[k] = output->strides[d];
    k++;
  }
  const int ax[2] = {nb + a0, nb + a1};
  for (int j = 0; j < 2; j++, k++) {
    vi.shape[k] = input->shape[ax[j]];
    vi.strides[k] = input->strides[ax[j]];
    vo.shape[k] = output->shape[ax[j]];
    vo.strides[k] = output->strides[ax[j]];
  }
  o.batch_dims = input->ndim - 2;
  ndf__interp_plan p;
  plan_init(&p, &o, input->ndim - 2, 2, 2);
  p.kind = NDF__XF_AFFINE;
  memcpy(p.matrix, mat, sizeof mat);
  memcpy(p.offset, off, sizeof off);
  return run(ctx, name, &vi, &vo, &p);
}
