/*
 * n4/n4.c -- N4 bias-field correction (ndf_n4_bias_field_correction): the
 * option and array checks, the host pieces both backends use (B-spline axis
 * tables, histogram sharpening, lattice refinement) and the CPU backend.
 *
 * The CPU backend keeps the shrunk image's log intensities, its weights (0
 * outside) and the current log field as float64 arrays.  The B-spline
 * lattice meets the grid axis by axis: a fit contracts the grid to the
 * lattice one axis at a time, an evaluation expands the lattice to the grid
 * one axis at a time, with the per-axis tables of n4.h.  Every sum is taken
 * in voxel order, as the CUDA kernels' gathers take it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "n4/n4.h"

static const char *NAME = "ndf_n4_bias_field_correction";

void ndf_n4_options_init(ndf_n4_options *opt) {
  memset(opt, 0, sizeof *opt);
  opt->number_of_fitting_levels = 4;
  for (int l = 0; l < NDF_N4_MAX_LEVELS; l++) opt->maximum_number_of_iterations[l] = 50;
  opt->convergence_threshold = 0.001;
  opt->spline_order = 3;
  opt->nnumber_of_control_points = 1;
  opt->number_of_control_points[0] = 4;
  opt->bias_field_full_width_at_half_maximum = 0.15;
  opt->wiener_filter_noise = 0.01;
  opt->number_of_histogram_bins = 200;
  opt->shrink_factor = 1;
  opt->nspacing = 0;
  for (int d = 0; d < NDF_MAX_SPATIAL; d++) opt->spacing[d] = 1.0;
  opt->mask_label = 0;
}

/* ---- B-spline tables ------------------------------------------------------------------- */

/* The order + 1 weights of the uniform B-spline of degree order at local
 * coordinate t in [0, 1]: b[j] belongs to the span's j-th control point. */
static void basis(int order, double t, double *b) {
  const double s = 1.0 - t;
  switch (order) {
  case 1: b[0] = s; b[1] = t; return;
  case 2: b[0] = 0.5 * s * s; b[1] = 0.5 * (-2.0 * t * t + 2.0 * t + 1.0); b[2] = 0.5 * t * t; return;
  case 3:
    b[0] = s * s * s / 6.0;
    b[1] = (3.0 * t * t * t - 6.0 * t * t + 4.0) / 6.0;
    b[2] = (-3.0 * t * t * t + 3.0 * t * t + 3.0 * t + 1.0) / 6.0;
    b[3] = t * t * t / 6.0;
    return;
  default: {
    /* The cardinal B-spline N(x) on [0, order + 1] by its truncated powers:
     * N(x) = sum_k (-1)^k C(order + 1, k) (x - k)_+^order / order!, and
     * b[j] = N(t + order - j). */
    double fact = 1.0;
    for (int k = 2; k <= order; k++) fact *= k;
    for (int j = 0; j <= order; j++) {
      const double x = t + order - j;
      double sum = 0.0, c = 1.0; /* c = C(order + 1, k) */
      for (int k = 0; k <= order + 1; k++) {
        if (x > k) sum += (k % 2 ? -c : c) * pow(x - k, order);
        c = c * (order + 1 - k) / (k + 1);
      }
      b[j] = sum / fact;
    }
  }
  }
}

void ndf__n4_axis_free(ndf__n4_axis *ax) {
  free(ax->span);
  free(ax->first);
  free(ax->last);
  free(ax->w);
  free(ax->w2);
  free(ax->w3);
  free(ax->sq);
  memset(ax, 0, sizeof *ax);
}

int ndf__n4_axis_init(ndf__n4_axis *ax, int64_t n, int64_t m, int order) {
  const int P = order + 1;
  const int64_t spans = m - order;
  memset(ax, 0, sizeof *ax);
  ax->n = n;
  ax->m = m;
  ax->span = malloc((size_t)n * sizeof *ax->span);
  ax->first = malloc((size_t)m * sizeof *ax->first);
  ax->last = malloc((size_t)m * sizeof *ax->last);
  ax->w = malloc((size_t)(n * P) * sizeof *ax->w);
  ax->w2 = malloc((size_t)(n * P) * sizeof *ax->w2);
  ax->w3 = malloc((size_t)(n * P) * sizeof *ax->w3);
  ax->sq = malloc((size_t)n * sizeof *ax->sq);
  if (!ax->span || !ax->first || !ax->last || !ax->w || !ax->w2 || !ax->w3 || !ax->sq) {
    ndf__n4_axis_free(ax);
    return -1;
  }
  for (int64_t k = 0; k < m; k++) {
    ax->first[k] = (int32_t)n;
    ax->last[k] = -1;
  }
  for (int64_t i = 0; i < n; i++) {
    /* u = i spans / (n - 1) in [0, spans]; the end point is the limit of the
     * last span (t = 1), where the spline is continuous. */
    const double u = n > 1 ? (double)i * (double)spans / (double)(n - 1) : 0.0;
    int64_t s = (int64_t)floor(u);
    if (s > spans - 1) s = spans - 1;
    const double t = u - (double)s;
    ax->span[i] = (int32_t)s;
    double *b = ax->w + i * P, sq = 0.0;
    basis(order, t, b);
    for (int j = 0; j < P; j++) {
      ax->w2[i * P + j] = b[j] * b[j];
      ax->w3[i * P + j] = b[j] * b[j] * b[j];
      sq += b[j] * b[j];
      const int64_t k = s + j;
      if (ax->first[k] > i) ax->first[k] = (int32_t)i;
      if (ax->last[k] < i) ax->last[k] = (int32_t)i;
    }
    ax->sq[i] = sq;
  }
  return 0;
}

/* ---- histogram sharpening -------------------------------------------------------------- */

/* In-place radix-2 FFT of n (a power of two) complex values; sign -1 forward,
 * +1 inverse (unscaled). */
static void fft(double *re, double *im, int n, int sign) {
  for (int i = 1, j = 0; i < n; i++) {
    int bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      double t = re[i]; re[i] = re[j]; re[j] = t;
      t = im[i]; im[i] = im[j]; im[j] = t;
    }
  }
  for (int len = 2; len <= n; len <<= 1) {
    const double ang = sign * 2.0 * M_PI / len;
    for (int i = 0; i < n; i += len)
      for (int k = 0; k < len / 2; k++) {
        const double c = cos(ang * k), s = sin(ang * k);
        const int a = i + k, b = i + k + len / 2;
        const double xr = re[b] * c - im[b] * s, xi = re[b] * s + im[b] * c;
        re[b] = re[a] - xr;
        im[b] = im[a] - xi;
        re[a] += xr;
        im[a] += xi;
      }
  }
}

int ndf__n4_sharpen(const ndf__n4_plan *p, const double *hist, double lo, double slope, double *e) {
  const int nb = p->nbins;
  int expo = 0;
  while ((1 << expo) < nb) expo++;
  const int np = 1 << (expo + 1); /* ITK's padding: the next power of two, doubled */
  const int off = (np - nb) / 2;
  double *buf = calloc((size_t)np * 8, sizeof *buf);
  if (!buf) return -1;
  double *vr = buf, *vi = vr + np, *fr = vi + np, *fi = fr + np, *ur = fi + np, *ui = ur + np, *nr = ui + np,
         *ni = nr + np;
  for (int i = 0; i < nb; i++) vr[off + i] = hist[i];
  fft(vr, vi, np, -1);
  /* The Gaussian of the FWHM in bins, centred on index 0 (periodic), unit area. */
  const double fw = p->fwhm / slope;
  const double ef = 4.0 * log(2.0) / (fw * fw), sf = 2.0 * sqrt(log(2.0) / M_PI) / fw;
  fr[0] = sf;
  for (int i = 1; i <= np / 2; i++) fr[i] = fr[np - i] = sf * exp(-ef * (double)i * (double)i);
  fft(fr, fi, np, -1);
  /* Wiener deconvolution: U = V conj(F) / (|F|^2 + noise), clipped at 0. */
  for (int i = 0; i < np; i++) {
    const double d = fr[i] * fr[i] + fi[i] * fi[i] + p->noise;
    const double gr = fr[i] / d, gi = -fi[i] / d;
    ur[i] = vr[i] * gr - vi[i] * gi;
    ui[i] = vr[i] * gi + vi[i] * gr;
  }
  fft(ur, ui, np, 1);
  for (int i = 0; i < np; i++) {
    ur[i] = ur[i] / np > 0.0 ? ur[i] / np : 0.0;
    ui[i] = 0.0;
    nr[i] = (lo + (double)(i - off) * slope) * ur[i]; /* u times the bin's value */
    ni[i] = 0.0;
  }
  /* E[u | v] = (F * (u U)) / (F * U) per bin. */
  fft(ur, ui, np, -1);
  fft(nr, ni, np, -1);
  for (int i = 0; i < np; i++) {
    double a = ur[i] * fr[i] - ui[i] * fi[i], b = ur[i] * fi[i] + ui[i] * fr[i];
    ur[i] = a;
    ui[i] = b;
    a = nr[i] * fr[i] - ni[i] * fi[i];
    b = nr[i] * fi[i] + ni[i] * fr[i];
    nr[i] = a;
    ni[i] = b;
  }
  fft(ur, ui, np, 1);
  fft(nr, ni, np, 1);
  for (int i = 0; i < nb; i++) {
    const double den = ur[off + i];
    e[i] = den != 0.0 ? nr[off + i] / den : 0.0;
  }
  free(buf);
  return 0;
}

/* ---- lattice refinement ---------------------------------------------------------------- */

/* One axis of a row-major array (a, m, b) to (a, 2 (m - order) + order, b):
 * out point q = sum of C(order + 1, j) / 2^order in[k] over 2k + j - order = q. */
static void refine_axis(const double *in, double *out, int64_t A, int64_t m, int64_t B, int order) {
  const int64_t m2 = 2 * (m - order) + order;
  double w[8];
  double c = 1.0;
  for (int j = 0; j <= order + 1; j++) {
    w[j] = c / (double)(1 << order);
    c = c * (order + 1 - j) / (j + 1);
  }
  for (int64_t a = 0; a < A; a++)
    for (int64_t q = 0; q < m2; q++) {
      double *o = out + (a * m2 + q) * B;
      for (int64_t b = 0; b < B; b++) o[b] = 0.0;
      for (int64_t k = 0; k < m; k++) {
        const int64_t j = q + order - 2 * k;
        if (j < 0 || j > order + 1) continue;
        const double *x = in + (a * m + k) * B;
        for (int64_t b = 0; b < B; b++) o[b] += w[j] * x[b];
      }
    }
}

void ndf__n4_refine(const double *in, double *out, int ndim, const int64_t *m, int order, double *tmp) {
  int64_t cur[NDF_MAX_SPATIAL];
  for (int d = 0; d < ndim; d++) cur[d] = m[d];
  const double *src = in;
  for (int d = 0; d < ndim; d++) {
    int64_t A = 1, B = 1;
    for (int e = 0; e < d; e++) A *= cur[e];
    for (int e = d + 1; e < ndim; e++) B *= cur[e];
    /* alternate tmp / out so that the last axis lands in out */
    double *dst = ((ndim - 1 - d) % 2 == 0) ? out : tmp;
    refine_axis(src, dst, A, cur[d], B, order);
    cur[d] = 2 * (cur[d] - order) + order;
    src = dst;
  }
}

/* ---- checks ---------------------------------------------------------------------------- */

static int numeric_input(ndf_dtype t) { return t >= NDF_UINT8 && t <= NDF_FLOAT64; }
static int float_dtype(ndf_dtype t) { return t == NDF_FLOAT32 || t == NDF_FLOAT64; }

static ndf_status check_like(ndf_ctx *ctx, const char *arg, const ndf_array *a, const ndf_array *in) {
  ndf_status s = ndf__check_array(ctx, NAME, arg, a, NULL);
  if (s != NDF_OK) return s;
  if (a->device != in->device || a->device_id != in->device_id)
    return ndf__argerror(ctx, NAME, arg, "lives on another device than the input");
  if (a->ndim != in->ndim || memcmp(a->shape, in->shape, (size_t)in->ndim * sizeof *in->shape) != 0) {
    char b1[160], b2[160];
    return ndf__argerror(ctx, NAME, arg, "shape %s does not match the input's %s",
                         ndf__shape_str(a->ndim, a->shape, b1, sizeof b1),
                         ndf__shape_str(in->ndim, in->shape, b2, sizeof b2));
  }
  return NDF_OK;
}

static ndf_status check_options(ndf_ctx *ctx, const ndf_array *in, const ndf_n4_options *o, ndf__n4_plan *p) {
  const int nd = in->ndim;
  memset(p, 0, sizeof *p);
  p->ndim = nd;
  if (o->number_of_fitting_levels < 1 || o->number_of_fitting_levels > NDF_N4_MAX_LEVELS)
    return ndf__argerror(ctx, NAME, "number_of_fitting_levels", "%d is outside 1..%d", o->number_of_fitting_levels,
                         NDF_N4_MAX_LEVELS);
  p->levels = o->number_of_fitting_levels;
  for (int l = 0; l < p->levels; l++) {
    if (o->maximum_number_of_iterations[l] < 0)
      return ndf__argerror(ctx, NAME, "maximum_number_of_iterations", "level %d has %d (must be >= 0)", l,
                           o->maximum_number_of_iterations[l]);
    p->iters[l] = o->maximum_number_of_iterations[l];
  }
  if (!(o->convergence_threshold >= 0.0) || !isfinite(o->convergence_threshold))
    return ndf__argerror(ctx, NAME, "convergence_threshold", "%g must be finite and >= 0", o->convergence_threshold);
  if (o->spline_order < 1 || o->spline_order > 5)
    return ndf__argerror(ctx, NAME, "spline_order", "%d is outside 1..5", o->spline_order);
  p->order = o->spline_order;
  const int nc = o->nnumber_of_control_points;
  if (nc != 1 && nc != nd)
    return ndf__argerror(ctx, NAME, "number_of_control_points", "%d values for %d axes (give 1 or %d)", nc, nd, nd);
  for (int d = 0; d < nd; d++) {
    const int64_t c = o->number_of_control_points[nc == 1 ? 0 : d];
    if (c <= p->order || c > 4096)
      return ndf__argerror(ctx, NAME, "number_of_control_points",
                           "%lld on axis %d must exceed spline_order %d (and be at most 4096)", (long long)c, d,
                           p->order);
    p->ncp[d] = c;
    if (ndf__n4_level_points(p, d, p->levels - 1) > (int64_t)1 << 20)
      return ndf__argerror(ctx, NAME, "number_of_fitting_levels",
                           "%d levels of %lld control points make a lattice of more than 2^20 points on axis %d",
                           p->levels, (long long)c, d);
  }
  if (!(o->bias_field_full_width_at_half_maximum > 0.0) || !isfinite(o->bias_field_full_width_at_half_maximum))
    return ndf__argerror(ctx, NAME, "bias_field_full_width_at_half_maximum", "%g must be finite and > 0",
                         o->bias_field_full_width_at_half_maximum);
  if (!(o->wiener_filter_noise >= 0.0) || !isfinite(o->wiener_filter_noise))
    return ndf__argerror(ctx, NAME, "wiener_filter_noise", "%g must be finite and >= 0", o->wiener_filter_noise);
  if (o->number_of_histogram_bins < 2 || o->number_of_histogram_bins > 65536)
    return ndf__argerror(ctx, NAME, "number_of_histogram_bins", "%d is outside 2..65536", o->number_of_histogram_bins);
  if (o->shrink_factor < 1)
    return ndf__argerror(ctx, NAME, "shrink_factor", "%d must be >= 1", o->shrink_factor);
  if (o->nspacing != 0 && o->nspacing != 1 && o->nspacing != nd)
    return ndf__argerror(ctx, NAME, "spacing", "%d values for %d axes (give 0, 1 or %d)", o->nspacing, nd, nd);
  for (int d = 0; d < (o->nspacing == 1 ? 1 : o->nspacing); d++)
    if (!(o->spacing[d] > 0.0) || !isfinite(o->spacing[d]))
      return ndf__argerror(ctx, NAME, "spacing", "spacing[%d]=%g must be finite and > 0", d, o->spacing[d]);
  if (o->mask_label < 0 || o->mask_label > 255)
    return ndf__argerror(ctx, NAME, "mask_label", "%d is outside 0..255", o->mask_label);
  p->threshold = o->convergence_threshold;
  p->fwhm = o->bias_field_full_width_at_half_maximum;
  p->noise = o->wiener_filter_noise;
  p->nbins = o->number_of_histogram_bins;
  p->shrink = o->shrink_factor;
  p->mask_label = o->mask_label;
  p->n = p->sn = 1;
  for (int d = 0; d < nd; d++) {
    const int64_t n = in->shape[d], f = p->shrink;
    const int64_t ns = n / f > 0 ? n / f : 1;
    p->shape[d] = n;
    p->sshape[d] = ns;
    /* ITK's ShrinkImageFilter: the two grids share their centre, and output
     * voxel j reads input voxel j f + round((n - 1) / 2 - (ns - 1) f / 2). */
    int64_t off = (int64_t)floor(0.5 * (double)(n - 1) - 0.5 * (double)((ns - 1) * f) + 0.5);
    if (off < 0) off = 0;
    if (off + (ns - 1) * f > n - 1) off = n - 1 - (ns - 1) * f;
    p->soff[d] = off;
    p->n *= n;
    p->sn *= ns;
  }
  return NDF_OK;
}

static ndf_status check_call(ndf_ctx *ctx, const ndf_array *in, const ndf_array *mask, const ndf_array *weight,
                             const ndf_array *out, const ndf_array *logb, const ndf_n4_options *opt,
                             ndf__n4_plan *p) {
  ndf_status s;
  int64_t count;
  if (!opt) return ndf__argerror(ctx, NAME, "opt", "is NULL (use ndf_n4_options_init)");
  if ((s = ndf__check_array(ctx, NAME, "input", in, &count)) != NDF_OK) return s;
  if (!numeric_input(in->dtype))
    return ndf__argerror(ctx, NAME, "input", "dtype %s is not a numeric dtype (uint8..float64)",
                         ndf_dtype_name(in->dtype) ? ndf_dtype_name(in->dtype) : "?");
  if (in->ndim < 1 || in->ndim > NDF_MAX_SPATIAL)
    return ndf__argerror(ctx, NAME, "input", "rank %d is outside 1..%d", in->ndim, NDF_MAX_SPATIAL);
  if (count == 0) return ndf__argerror(ctx, NAME, "input", "is empty");
  if ((s = ndf__check_device(ctx, NAME, in)) != NDF_OK) return s;
  if (mask) {
    if ((s = check_like(ctx, "mask", mask, in)) != NDF_OK) return s;
    if (mask->dtype != NDF_UINT8 && mask->dtype != NDF_BOOL)
      return ndf__argerror(ctx, NAME, "mask", "dtype %s is not uint8 (or bool)", ndf_dtype_name(mask->dtype));
  }
  if (weight) {
    if ((s = check_like(ctx, "weight", weight, in)) != NDF_OK) return s;
    if (!float_dtype(weight->dtype))
      return ndf__argerror(ctx, NAME, "weight", "dtype %s is not float32 or float64", ndf_dtype_name(weight->dtype));
  }
  const ndf_array *outs[2] = {out, logb};
  const char *names[2] = {"output", "log_bias_field"};
  for (int k = 0; k < 2; k++) {
    const ndf_array *o = outs[k];
    if (!o) {
      if (k == 0) return ndf__argerror(ctx, NAME, "output", "is NULL");
      continue;
    }
    if ((s = check_like(ctx, names[k], o, in)) != NDF_OK) return s;
    if (!float_dtype(o->dtype))
      return ndf__argerror(ctx, NAME, names[k], "dtype %s is not float32 or float64", ndf_dtype_name(o->dtype));
    if (!ndf__layout_is_proper(o))
      return ndf__argerror(ctx, NAME, names[k], "has elements that share memory");
    const ndf_array *ins[3] = {in, mask, weight};
    for (int j = 0; j < 3; j++)
      if (ins[j] && ndf__arrays_overlap(o, ins[j]))
        return ndf__argerror(ctx, NAME, names[k], "overlaps an input");
  }
  if (logb && ndf__arrays_overlap(out, logb))
    return ndf__argerror(ctx, NAME, "log_bias_field", "overlaps the output");
  return check_options(ctx, in, opt, p);
}

/* ---- the CPU backend ------------------------------------------------------------------- */

static void store(const ndf_array *a, int64_t off, double v) {
  if (a->dtype == NDF_FLOAT32) ((float *)a->data)[off] = (float)v;
  else ((double *)a->data)[off] = v;
}

/* The element offset of row-major index lin of shape sh in array a (strides in elements). */
static int64_t offset_of(const ndf_array *a, int ndim, const int64_t *idx) {
  int64_t o = 0;
  for (int d = 0; d < ndim; d++) o += idx[d] * a->strides[d];
  return o;
}

/* Passes over fewer grid voxels than this run on one thread: an iteration on a
 * shrunk grid is many small passes, where a parallel region costs more than it
 * saves.  Every output element is summed in the same order either way. */
#define NDF__N4_PARALLEL ((int64_t)1 << 20)

/* Grid (A, n, B) to lattice (A, m, B): out[a, k, b] = sum_i w[i][k - span i] in[a, i, b],
 * i ascending. */
static void contract(const double *in, double *out, int64_t A, int64_t B, const ndf__n4_axis *ax,
                     const double *w, int P, int nth) {
  const int64_t n = ax->n, m = ax->m;
  (void)nth;
#pragma omp parallel for collapse(2) schedule(static) num_threads(nth) if (A * n * B >= NDF__N4_PARALLEL)
  for (int64_t a = 0; a < A; a++)
    for (int64_t k = 0; k < m; k++) {
      double *o = out + (a * m + k) * B;
      for (int64_t b = 0; b < B; b++) o[b] = 0.0;
      for (int64_t i = ax->first[k]; i <= ax->last[k]; i++) {
        const double wi = w[i * P + (k - ax->span[i])];
        const double *x = in + (a * n + i) * B;
        for (int64_t b = 0; b < B; b++) o[b] += wi * x[b];
      }
    }
}

/* Lattice (A, m, B) to grid (A, n, B): out[a, i, b] = sum_j w[i][j] in[a, span i + j, b]. */
static void expand(const double *in, double *out, int64_t A, int64_t B, const ndf__n4_axis *ax, int P, int nth) {
  const int64_t n = ax->n, m = ax->m;
  (void)nth;
#pragma omp parallel for collapse(2) schedule(static) num_threads(nth) if (A * n * B >= NDF__N4_PARALLEL)
  for (int64_t a = 0; a < A; a++)
    for (int64_t i = 0; i < n; i++) {
      double *o = out + (a * n + i) * B;
      for (int64_t b = 0; b < B; b++) o[b] = 0.0;
      for (int j = 0; j < P; j++) {
        const double wj = ax->w[i * P + j];
        const double *x = in + (a * m + ax->span[i] + j) * B;
        for (int64_t b = 0; b < B; b++) o[b] += wj * x[b];
      }
    }
}

/* The whole grid contracted to the lattice, axis 0 first (power 2 or 3 of
 * the weights); t0, t1 hold the intermediate shapes. */
static void fit_pass(const double *grid, double *lat, const ndf__n4_axis *ax, int nd, int P, int power,
                     double *t0, double *t1, int nth) {
  int64_t cur[NDF_MAX_SPATIAL];
  for (int d = 0; d < nd; d++) cur[d] = ax[d].n;
  const double *src = grid;
  for (int d = 0; d < nd; d++) {
    int64_t A = 1, B = 1;
    for (int e = 0; e < d; e++) A *= cur[e];
    for (int e = d + 1; e < nd; e++) B *= cur[e];
    double *dst = d == nd - 1 ? lat : (d % 2 ? t1 : t0);
    contract(src, dst, A, B, &ax[d], power == 3 ? ax[d].w3 : ax[d].w2, P, nth);
    cur[d] = ax[d].m;
    src = dst;
  }
}

/* The lattice expanded to the whole grid, last axis first. */
static void eval_pass(const double *lat, double *grid, const ndf__n4_axis *ax, int nd, int P, double *t0, double *t1,
                      int nth) {
  int64_t cur[NDF_MAX_SPATIAL];
  for (int d = 0; d < nd; d++) cur[d] = ax[d].m;
  const double *src = lat;
  for (int d = nd - 1; d >= 0; d--) {
    int64_t A = 1, B = 1;
    for (int e = 0; e < d; e++) A *= cur[e];
    for (int e = d + 1; e < nd; e++) B *= cur[e];
    double *dst = d == 0 ? grid : (d % 2 ? t1 : t0);
    expand(src, dst, A, B, &ax[d], P, nth);
    cur[d] = ax[d].n;
    src = dst;
  }
}

/* The largest intermediate of a pass between grid shape g and lattice shape m (either direction). */
static int64_t pass_scratch(int nd, const int64_t *g, const int64_t *m) {
  int64_t best = 1;
  for (int d = 0; d <= nd; d++) { /* axes < d at the lattice, the rest at the grid */
    int64_t v = 1;
    for (int e = 0; e < nd; e++) v *= e < d ? m[e] : g[e];
    if (v > best) best = v;
  }
  return best;
}

/* The axis tables of grid n against lattice m, and scratch for the passes; -1 when out of memory. */
static int unit_setup(int ndim, const int64_t *n, const int64_t *m, int order, ndf__n4_axis *ax, double **t0,
                      double **t1) {
  memset(ax, 0, sizeof(*ax) * (size_t)ndim);
  const int64_t scr = pass_scratch(ndim, n, m);
  *t0 = malloc((size_t)scr * sizeof(double));
  *t1 = malloc((size_t)scr * sizeof(double));
  int bad = !*t0 || !*t1;
  for (int d = 0; d < ndim && !bad; d++) bad = ndf__n4_axis_init(&ax[d], n[d], m[d], order) != 0;
  if (bad) {
    for (int d = 0; d < ndim; d++) ndf__n4_axis_free(&ax[d]);
    free(*t0);
    free(*t1);
    return -1;
  }
  return 0;
}

int ndf__n4_fit_grid(int ndim, const int64_t *n, const int64_t *m, int order, const double *z, const double *c,
                     double *lat) {
  ndf__n4_axis ax[NDF_MAX_SPATIAL];
  double *t0, *t1;
  int64_t nn = 1, nl = 1;
  for (int d = 0; d < ndim; d++) {
    nn *= n[d];
    nl *= m[d];
  }
  double *a = malloc((size_t)nn * sizeof(double)), *omega = malloc((size_t)nl * sizeof(double));
  if (!a || !omega || unit_setup(ndim, n, m, order, ax, &t0, &t1) != 0) {
    free(a);
    free(omega);
    return -1;
  }
  for (int64_t x = 0; x < nn; x++) {
    double sq = 1.0;
    int64_t q = x;
    for (int d = ndim - 1; d >= 0; d--) {
      sq *= ax[d].sq[q % n[d]];
      q /= n[d];
    }
    a[x] = c[x] > 0.0 ? c[x] * z[x] / sq : 0.0;
  }
  fit_pass(c, omega, ax, ndim, order + 1, 2, t0, t1, 1);
  fit_pass(a, lat, ax, ndim, order + 1, 3, t0, t1, 1);
  for (int64_t k = 0; k < nl; k++) lat[k] = omega[k] > 0.0 ? lat[k] / omega[k] : 0.0;
  for (int d = 0; d < ndim; d++) ndf__n4_axis_free(&ax[d]);
  free(t0);
  free(t1);
  free(a);
  free(omega);
  return 0;
}

int ndf__n4_eval_grid(int ndim, const int64_t *n, const int64_t *m, int order, const double *lat, double *grid) {
  ndf__n4_axis ax[NDF_MAX_SPATIAL];
  double *t0, *t1;
  if (unit_setup(ndim, n, m, order, ax, &t0, &t1) != 0) return -1;
  eval_pass(lat, grid, ax, ndim, order + 1, t0, t1, 1);
  for (int d = 0; d < ndim; d++) ndf__n4_axis_free(&ax[d]);
  free(t0);
  free(t1);
  return 0;
}

typedef struct cpu_state {
  double *v, *c, *field, *nfield, *a, *lat, *nlat, *delta, *omega, *t0, *t1, *hist, *e;
} cpu_state;

static void cpu_state_free(cpu_state *s) {
  free(s->v);
  free(s->c);
  free(s->field);
  free(s->nfield);
  free(s->a);
  free(s->lat);
  free(s->nlat);
  free(s->delta);
  free(s->omega);
  free(s->t0);
  free(s->t1);
  free(s->hist);
  free(s->e);
}

static ndf_status n4_cpu(ndf_ctx *ctx, const ndf_array *in, const ndf_array *mask, const ndf_array *weight,
                         ndf_array *out, ndf_array *logb, const ndf__n4_plan *p, ndf_n4_result *res) {
  const int nd = p->ndim, P = p->order + 1, nth = ndf__cpu_threads(ctx);
  const int64_t sn = p->sn;
  int64_t lmax = 1, mlast[NDF_MAX_SPATIAL];
  for (int d = 0; d < nd; d++) {
    mlast[d] = ndf__n4_level_points(p, d, p->levels - 1);
    lmax *= mlast[d];
  }
  int64_t scr = pass_scratch(nd, p->sshape, mlast);
  const int64_t scr_full = pass_scratch(nd, p->shape, mlast);
  if (scr_full > scr) scr = scr_full;
  const double bytes = 8.0 * ((double)sn * 5 + (double)lmax * 5 + (double)scr * 2 + (double)p->n);
  ndf_status st = ndf__check_host_memory(ctx, NAME, "the work arrays", bytes > 9e18 ? -1 : (int64_t)bytes);
  if (st != NDF_OK) return st;

  cpu_state s = {0};
  ndf__n4_axis ax[NDF_MAX_SPATIAL];
  memset(ax, 0, sizeof ax);
  double *full = NULL;
  s.v = malloc((size_t)sn * sizeof(double));
  s.c = malloc((size_t)sn * sizeof(double));
  s.field = calloc((size_t)sn, sizeof(double));
  s.nfield = malloc((size_t)sn * sizeof(double));
  s.a = malloc((size_t)sn * sizeof(double));
  s.lat = calloc((size_t)lmax, sizeof(double));
  s.nlat = malloc((size_t)lmax * sizeof(double));
  s.delta = malloc((size_t)lmax * sizeof(double));
  s.omega = malloc((size_t)lmax * sizeof(double));
  s.t0 = malloc((size_t)scr * sizeof(double));
  s.t1 = malloc((size_t)scr * sizeof(double));
  s.hist = malloc((size_t)p->nbins * sizeof(double));
  s.e = malloc((size_t)p->nbins * sizeof(double));
  if (!s.v || !s.c || !s.field || !s.nfield || !s.a || !s.lat || !s.nlat || !s.delta || !s.omega || !s.t0 ||
      !s.t1 || !s.hist || !s.e) {
    st = ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", NAME);
    goto done;
  }

  /* The shrunk image: log intensities, and the fit weight (0 outside). */
  int64_t inside = 0;
  for (int64_t x = 0; x < sn; x++) {
    int64_t idx[NDF_MAX_SPATIAL], r = x;
    for (int d = nd - 1; d >= 0; d--) {
      idx[d] = r % p->sshape[d] * p->shrink + p->soff[d];
      r /= p->sshape[d];
    }
    const double I = ndf__get_f64(in, offset_of(in, nd, idx));
    double c = I > 0.0 && isfinite(I) ? 1.0 : 0.0;
    if (c > 0.0 && mask) {
      const double mv = ndf__get_f64(mask, offset_of(mask, nd, idx));
      c = p->mask_label ? (mv == p->mask_label) : (mv != 0.0);
    }
    if (c > 0.0 && weight) {
      const double wv = ndf__get_f64(weight, offset_of(weight, nd, idx));
      c = wv > 0.0 && isfinite(wv) ? wv : 0.0;
    }
    s.c[x] = c;
    s.v[x] = c > 0.0 ? log(I) : 0.0;
    inside += c > 0.0;
  }
  if (inside == 0) {
    st = ndf__argerror(ctx, NAME, "mask", "no voxel of the (shrunk) image is inside (mask, weight > 0, input > 0)");
    goto done;
  }

  double conv = 0.0;
  if (res) memset(res, 0, sizeof *res);
  int64_t m[NDF_MAX_SPATIAL];
  for (int l = 0; l < p->levels; l++) {
    int64_t nl = 1;
    for (int d = 0; d < nd; d++) {
      m[d] = ndf__n4_level_points(p, d, l);
      nl *= m[d];
    }
    if (l > 0) {
      int64_t mp[NDF_MAX_SPATIAL];
      for (int d = 0; d < nd; d++) mp[d] = ndf__n4_level_points(p, d, l - 1);
      ndf__n4_refine(s.lat, s.nlat, nd, mp, p->order, s.t0);
      double *t = s.lat; s.lat = s.nlat; s.nlat = t;
    }
    for (int d = 0; d < nd; d++) {
      ndf__n4_axis_free(&ax[d]);
      if (ndf__n4_axis_init(&ax[d], p->sshape[d], m[d], p->order) != 0) {
        st = ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", NAME);
        goto done;
      }
    }
    /* The denominators of the fit depend only on the weights. */
    fit_pass(s.c, s.omega, ax, nd, P, 2, s.t0, s.t1, nth);
    conv = INFINITY;
    int it = 0;
    while (it < p->iters[l] && conv > p->threshold) {
      it++;
      /* 1. the residual log image and its range */
      double lo = INFINITY, hi = -INFINITY;
      for (int64_t x = 0; x < sn; x++)
        if (s.c[x] > 0.0) {
          const double r = s.v[x] - s.field[x];
          s.a[x] = r;
          if (r < lo) lo = r;
          if (r > hi) hi = r;
        }
      /* 2. its histogram, sharpened */
      const double slope = (hi - lo) / (p->nbins - 1);
      const int flat = !(slope > 0.0);
      if (!flat) {
        for (int b = 0; b < p->nbins; b++) s.hist[b] = 0.0;
        for (int64_t x = 0; x < sn; x++)
          if (s.c[x] > 0.0) {
            const double ci = (s.a[x] - lo) / slope;
            int64_t b = (int64_t)floor(ci);
            if (b > p->nbins - 1) b = p->nbins - 1;
            const double f = ci - (double)b;
            s.hist[b] += 1.0 - f;
            if (b < p->nbins - 1) s.hist[b + 1] += f;
          }
        if (ndf__n4_sharpen(p, s.hist, lo, slope, s.e) != 0) {
          st = ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", NAME);
          goto done;
        }
      }
      /* 3. the fit's numerators: w (r - sharpened r) / sum_k B_k^2 per voxel */
      for (int64_t x = 0; x < sn; x++) {
        if (!(s.c[x] > 0.0) || flat) {
          s.a[x] = 0.0;
          continue;
        }
        const double r = s.a[x], ci = (r - lo) / slope;
        int64_t b = (int64_t)floor(ci);
        double sh;
        if (b >= p->nbins - 1) sh = s.e[p->nbins - 1];
        else sh = s.e[b] + (s.e[b + 1] - s.e[b]) * (ci - (double)b);
        double sq = 1.0;
        int64_t q = x;
        for (int d = nd - 1; d >= 0; d--) {
          sq *= ax[d].sq[q % p->sshape[d]];
          q /= p->sshape[d];
        }
        s.a[x] = s.c[x] * (r - sh) / sq;
      }
      fit_pass(s.a, s.delta, ax, nd, P, 3, s.t0, s.t1, nth);
      for (int64_t k = 0; k < nl; k++)
        if (s.omega[k] > 0.0) s.lat[k] += s.delta[k] / s.omega[k];
      /* 4. the new field and the convergence measure */
      eval_pass(s.lat, s.nfield, ax, nd, P, s.t0, s.t1, nth);
      double n = 0.0, sum = 0.0, sum2 = 0.0;
      for (int64_t x = 0; x < sn; x++)
        if (s.c[x] > 0.0) {
          const double dv = expm1(s.field[x] - s.nfield[x]);
          n += 1.0;
          sum += dv;
          sum2 += dv * dv;
        }
      const double mean = sum / n, var = n > 1.0 ? (sum2 - sum * mean) / (n - 1.0) : 0.0;
      conv = sqrt(var > 0.0 ? var : 0.0) / (1.0 + mean);
      double *t = s.field; s.field = s.nfield; s.nfield = t;
    }
    if (res) res->iterations[l] = it;
  }
  if (res) {
    res->number_of_fitting_levels = p->levels;
    res->convergence = conv;
  }

  /* The field at every input voxel, from the last lattice. */
  const double *F = s.field;
  if (p->shrink > 1) {
    for (int d = 0; d < nd; d++) {
      ndf__n4_axis_free(&ax[d]);
      if (ndf__n4_axis_init(&ax[d], p->shape[d], m[d], p->order) != 0) {
        st = ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", NAME);
        goto done;
      }
    }
    full = malloc((size_t)p->n * sizeof(double));
    if (!full) {
      st = ndf__error(ctx, NDF_ENOMEM, "%s: out of host memory", NAME);
      goto done;
    }
    eval_pass(s.lat, full, ax, nd, P, s.t0, s.t1, nth);
    F = full;
  }
  (void)nth;
#pragma omp parallel for schedule(static) num_threads(nth) if (p->n >= NDF__N4_PARALLEL)
  for (int64_t x = 0; x < p->n; x++) {
    int64_t idx[NDF_MAX_SPATIAL], r = x;
    for (int d = nd - 1; d >= 0; d--) {
      idx[d] = r % p->shape[d];
      r /= p->shape[d];
    }
    const double I = ndf__get_f64(in, offset_of(in, nd, idx));
    store(out, offset_of(out, nd, idx), I / exp(F[x]));
    if (logb) store(logb, offset_of(logb, nd, idx), F[x]);
  }
  st = NDF_OK;
done:
  for (int d = 0; d < nd; d++) ndf__n4_axis_free(&ax[d]);
  free(full);
  cpu_state_free(&s);
  return st;
}

ndf_status ndf_n4_bias_field_correction(ndf_ctx *ctx, const ndf_array *input, const ndf_array *mask,
                                        const ndf_array *weight, ndf_array *output, ndf_array *log_bias_field,
                                        const ndf_n4_options *opt, ndf_n4_result *result) {
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (is NULL)", NAME);
  ndf__clear_error(ctx);
  ndf__n4_plan p;
  ndf_status s = check_call(ctx, input, mask, weight, output, log_bias_field, opt, &p);
  if (s != NDF_OK) return s;
  ndf_n4_result r;
  if (input->device == NDF_DEVICE_CUDA)
    s = ndf__n4_cuda(ctx, NAME, input, mask, weight, output, log_bias_field, &p, &r);
  else
    s = n4_cpu(ctx, input, mask, weight, output, log_bias_field, &p, &r);
  if (s == NDF_OK && result) *result = r;
  return s;
}
