/*
 * cli_n4.c -- `ndforge run n4` (also `run n4_bias_field_correction`): N4
 * bias-field correction of a volume (ndf_n4_bias_field_correction):
 *
 *   ndforge run n4 IN OUT [--mask M] [--weight W] [--shrink-factor S]
 *       [--iterations N[,N...]] [--convergence-threshold X] [--spline-order N]
 *       [--control-points N[,N...]] [--fwhm X] [--wiener-noise X] [--bins N]
 *       [--mask-label L] [--spacing S[,S...]] [--bias-field FILE]
 *       [--output-dtype float32|float64] [--device cpu|cuda|auto]
 *
 * ITK's parameters under short names: --iterations is
 * maximum_number_of_iterations (one count per fitting level, default
 * 50,50,50,50), --fwhm bias_field_full_width_at_half_maximum (0.15),
 * --wiener-noise wiener_filter_noise (0.01), --bins number_of_histogram_bins
 * (200), --control-points number_of_control_points (4), --shrink-factor the N4
 * tools' -s (1).  The mask (any dtype; integral values 0..255 are kept, other
 * non-zero values become 255) selects the fit's voxels: non-zero, or ==
 * --mask-label L.  --bias-field writes the log bias field.  The spacing of a
 * NIfTI input comes from its header.  The output is float32 (float64 for a
 * float64 input) unless --output-dtype; a NIfTI output keeps the input's header.
 * Exit status: 0 ok, 1 failure, 2 bad command line; nothing is written on failure.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ndfio.h"
#include "ndforge.h"

enum { N4_USAGE = 2, N4_RUN = 1 };

static const char *n4_usage =
    "usage: ndforge run n4 INPUT OUTPUT [options]  (N4 bias-field correction)\n"
    "  --mask FILE               the voxels the fit uses: non-zero (or == --mask-label)\n"
    "  --weight FILE             ITK's confidence image (float; <= 0 is outside)\n"
    "  --shrink-factor S         fit on the image shrunk by S (default 1)\n"
    "  --iterations N[,N...]     iterations per fitting level (default 50,50,50,50)\n"
    "  --convergence-threshold X (default 0.001)\n"
    "  --spline-order N          (default 3)\n"
    "  --control-points N[,N...] control points of level 0 per axis (default 4)\n"
    "  --fwhm X                  bias field FWHM of the histogram sharpening (default 0.15)\n"
    "  --wiener-noise X          (default 0.01)\n"
    "  --bins N                  histogram bins (default 200)\n"
    "  --mask-label L            1..255: inside where the mask equals L\n"
    "  --spacing S[,S...]        voxel spacing (default the NIfTI header's, else 1)\n"
    "  --bias-field FILE         also write the log bias field\n"
    "  --output-dtype DTYPE      float32 or float64\n"
    "  --device cpu|cuda|auto    (auto: CUDA when there is a device)\n"
    "  --cpu-threads N           the CPU backend's threads (default OpenMP's)\n";

int ndf_cli_n4_is_op(const char *name) { return !strcmp(name, "n4") || !strcmp(name, "n4_bias_field_correction"); }

static int parse_ints(const char *opt, const char *s, double *v, int max) {
  const int n = parse_list_arg(opt, s, v, max);
  for (int i = 0; i < n; i++)
    if (v[i] != floor(v[i]) || v[i] < 0 || v[i] > 1e9) {
      errorf("bad value '%s' for --%s (expected non-negative integers)", s, opt);
      return -1;
    }
  return n;
}

/* A C-contiguous uint8 copy of a host mask of any dtype, in *out (malloc'ed data). */
static int mask_u8(const ndf_array *m, ndf_array *out) {
  if (cli_alloc("the mask", out, NDF_UINT8, m->ndim, m->shape) != 0) return -1;
  const int64_t n = ndf_array_size(m);
  uint8_t *o = out->data;
  for (int64_t x = 0; x < n; x++) {
    int64_t r = x, off = 0;
    for (int d = m->ndim - 1; d >= 0; d--) {
      off += (r % m->shape[d]) * m->strides[d];
      r /= m->shape[d];
    }
    const double v = ndfio_get_f64(m, off);
    o[x] = v == floor(v) && v >= 0 && v <= 255 ? (uint8_t)v : v != 0 ? 255 : 0;
  }
  return 0;
}

/* The array on the device (a copy) or a itself. */
static ndf_status place(ndf_ctx *ctx, int cuda, const ndf_array *a, ndf_array *dev, const ndf_array **use) {
  if (!a) {
    *use = NULL;
    return NDF_OK;
  }
  if (!cuda) {
    *use = a;
    return NDF_OK;
  }
  ndf_status s = ndf_array_alloc(ctx, dev, NDF_DEVICE_CUDA, a->dtype, a->ndim, a->shape);
  if (s == NDF_OK) s = ndf_array_copy(ctx, dev, a);
  *use = dev;
  return s;
}

int ndf_cli_n4(int argc, char **argv) {
  /* argv: ndforge run OP ... */
  const char *pos[2];
  int npos = 0;
  const char *mask_path = NULL, *weight_path = NULL, *bias_path = NULL, *odt_name = NULL, *device = "auto";
  ndf_n4_options o;
  ndf_n4_options_init(&o);
  int have_spacing = 0;
  for (int i = 3; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fputs(n4_usage, stdout);
      return 0;
    }
    if (strncmp(a, "--", 2) != 0 || a[2] == '\0') {
      if (npos == 2) {
        errorf("run n4: too many file names ('%s')", a);
        return N4_USAGE;
      }
      pos[npos++] = a;
      continue;
    }
    const char *name = a + 2;
    if (i + 1 >= argc) {
      errorf("run n4: --%s needs a value", name);
      return N4_USAGE;
    }
    const char *v = argv[++i];
    double vals[NDF_N4_MAX_LEVELS > NDF_MAX_SPATIAL ? NDF_N4_MAX_LEVELS : NDF_MAX_SPATIAL];
    long l;
    int n;
    if (!strcmp(name, "mask")) mask_path = v;
    else if (!strcmp(name, "weight")) weight_path = v;
    else if (!strcmp(name, "bias-field")) bias_path = v;
    else if (!strcmp(name, "output-dtype")) odt_name = v;
    else if (!strcmp(name, "device")) {
      if (strcmp(v, "cpu") && strcmp(v, "cuda") && strcmp(v, "auto")) {
        errorf("bad value '%s' for --device (expected cpu, cuda or auto)", v);
        return N4_USAGE;
      }
      device = v;
    } else if (!strcmp(name, "cpu-threads")) {
      if (cli_cpu_threads_arg(v)) return N4_USAGE;
    } else if (!strcmp(name, "shrink-factor")) {
      if (parse_long_arg(name, v, 1, 1 << 20, &l)) return N4_USAGE;
      o.shrink_factor = (int)l;
    } else if (!strcmp(name, "iterations")) {
      if ((n = parse_ints(name, v, vals, NDF_N4_MAX_LEVELS)) < 0) return N4_USAGE;
      o.number_of_fitting_levels = n;
      for (int k = 0; k < n; k++) o.maximum_number_of_iterations[k] = (int)vals[k];
    } else if (!strcmp(name, "convergence-threshold")) {
      if (parse_double_arg(name, v, &o.convergence_threshold)) return N4_USAGE;
    } else if (!strcmp(name, "spline-order")) {
      if (parse_long_arg(name, v, 0, 100, &l)) return N4_USAGE;
      o.spline_order = (int)l;
    } else if (!strcmp(name, "control-points")) {
      if ((n = parse_ints(name, v, vals, NDF_MAX_SPATIAL)) < 0) return N4_USAGE;
      o.nnumber_of_control_points = n;
      for (int k = 0; k < n; k++) o.number_of_control_points[k] = (int64_t)vals[k];
    } else if (!strcmp(name, "fwhm")) {
      if (parse_double_arg(name, v, &o.bias_field_full_width_at_half_maximum)) return N4_USAGE;
    } else if (!strcmp(name, "wiener-noise")) {
      if (parse_double_arg(name, v, &o.wiener_filter_noise)) return N4_USAGE;
    } else if (!strcmp(name, "bins")) {
      if (parse_long_arg(name, v, 0, 1 << 30, &l)) return N4_USAGE;
      o.number_of_histogram_bins = (int)l;
    } else if (!strcmp(name, "mask-label")) {
      if (parse_long_arg(name, v, 1, 255, &l)) return N4_USAGE;
      o.mask_label = (int)l;
    } else if (!strcmp(name, "spacing")) {
      if ((n = parse_list_arg(name, v, o.spacing, NDF_MAX_SPATIAL)) < 0) return N4_USAGE;
      o.nspacing = n;
      have_spacing = 1;
    } else {
      errorf("run n4: unknown option --%s (see ndforge run n4 --help)", name);
      return N4_USAGE;
    }
  }
  if (npos != 2) {
    errorf("'run n4' needs INPUT and OUTPUT, got %d file name%s", npos, npos == 1 ? "" : "s");
    return N4_USAGE;
  }

  int rc = N4_RUN;
  ndfio_image in = {0}, mk = {0}, wt = {0};
  ndf_array out = {0}, lb = {0}, m8 = {0}, din = {0}, dm = {0}, dw = {0}, dout = {0}, dlb = {0};
  void *obuf = NULL, *lbuf = NULL, *mbuf = NULL;
  ndf_ctx *ctx = NULL;
  ndfio_stage st;
  ndfio_stage_init(&st);
  if (read_image(pos[0], &in) != 0) goto done;
  if (mask_path && read_image(mask_path, &mk) != 0) goto done;
  if (weight_path && read_image(weight_path, &wt) != 0) goto done;
  if (mask_path) {
    if (mask_u8(&mk.arr, &m8) != 0) goto done;
    mbuf = m8.data;
  }
  ndf_dtype odt = in.arr.dtype == NDF_FLOAT64 ? NDF_FLOAT64 : NDF_FLOAT32;
  if (odt_name && (ndf_dtype_from_name(odt_name, &odt) != NDF_OK || (odt != NDF_FLOAT32 && odt != NDF_FLOAT64))) {
    errorf("bad value '%s' for --output-dtype (expected float32 or float64)", odt_name);
    rc = N4_USAGE;
    goto done;
  }
  if (!have_spacing && in.nifti) {
    double sp[NDF_MAX_NDIM];
    if (ndfio_nifti_spacing(&in, sp) && in.arr.ndim <= NDF_MAX_SPATIAL) {
      o.nspacing = in.arr.ndim;
      for (int d = 0; d < in.arr.ndim; d++) o.spacing[d] = sp[d] > 0 && isfinite(sp[d]) ? sp[d] : 1.0;
    }
  }
  const int nd = in.arr.ndim;
  if (cli_alloc("the output", &out, odt, nd, in.arr.shape) != 0) goto done;
  obuf = out.data;
  if (bias_path) {
    if (cli_alloc("the bias field", &lb, odt, nd, in.arr.shape) != 0) goto done;
    lbuf = lb.data;
  }
  ndf_ctx_options cop;
  cli_ctx_options_init(&cop);
  cop.backend = !strcmp(device, "cpu") ? NDF_BACKEND_CPU : !strcmp(device, "cuda") ? NDF_BACKEND_CUDA : cop.backend;
  if (ndf_ctx_create(&ctx, &cop) != NDF_OK) {
    errorf("cannot create a context: %s", ndf_last_error());
    goto done;
  }
  const int cuda = ndf_ctx_has_cuda(ctx);
  const ndf_array *pin, *pm, *pw;
  ndf_array *pout = &out, *plb = bias_path ? &lb : NULL;
  ndf_status s = place(ctx, cuda, &in.arr, &din, &pin);
  if (s == NDF_OK) s = place(ctx, cuda, mask_path ? &m8 : NULL, &dm, &pm);
  if (s == NDF_OK) s = place(ctx, cuda, weight_path ? &wt.arr : NULL, &dw, &pw);
  if (s == NDF_OK && cuda) {
    s = ndf_array_alloc(ctx, &dout, NDF_DEVICE_CUDA, odt, nd, in.arr.shape);
    pout = &dout;
    if (s == NDF_OK && bias_path) {
      s = ndf_array_alloc(ctx, &dlb, NDF_DEVICE_CUDA, odt, nd, in.arr.shape);
      plb = &dlb;
    }
  }
  if (s == NDF_OK) s = ndf_n4_bias_field_correction(ctx, pin, pm, pw, pout, plb, &o, NULL);
  if (s == NDF_OK && cuda) s = ndf_array_copy(ctx, &out, &dout);
  if (s == NDF_OK && cuda && bias_path) s = ndf_array_copy(ctx, &lb, &dlb);
  if (s == NDF_OK) s = ndf_ctx_synchronize(ctx);
  if (s != NDF_OK) {
    errorf("%s", ndf_errmsg(ctx));
    goto done;
  }
  char err[1024];
  const ndfio_image *hdr = in.nifti ? &in : NULL;
  if (ndfio_stage_write(&st, pos[1], &out, ndfio_format_of(pos[1]) == NDFIO_NIFTI ? hdr : NULL, err, sizeof err) !=
          NDF_OK ||
      (bias_path &&
       ndfio_stage_write(&st, bias_path, &lb, ndfio_format_of(bias_path) == NDFIO_NIFTI ? hdr : NULL, err,
                         sizeof err) != NDF_OK) ||
      ndfio_stage_commit(&st, err, sizeof err) != NDF_OK) {
    ndfio_stage_abort(&st);
    errorf("%s", err);
    goto done;
  }
  rc = 0;
done:
  if (ctx) {
    ndf_array_free(ctx, &din);
    ndf_array_free(ctx, &dm);
    ndf_array_free(ctx, &dw);
    ndf_array_free(ctx, &dout);
    ndf_array_free(ctx, &dlb);
  }
  ndf_ctx_destroy(ctx);
  ndfio_image_free(&in);
  ndfio_image_free(&mk);
  ndfio_image_free(&wt);
  free(obuf);
  free(lbuf);
  free(mbuf);
  return rc;
}
