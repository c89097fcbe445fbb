/*
 * cli_interp.c -- `ndforge run` for the interpolation ops (scipy.ndimage
 * names) and `ndforge run resample` (a NIfTI volume to a voxel spacing):
 *
 *   ndforge run zoom IN OUT --zoom Z[,Z...] [--grid-mode]
 *   ndforge run shift IN OUT --shift S[,S...]
 *   ndforge run rotate IN OUT --angle DEG [--axes A,B] [--no-reshape]
 *   ndforge run affine_transform IN OUT --matrix M.npy [--offset O[,O...]] [--output-shape N[,N...]]
 *   ndforge run map_coordinates IN OUT --coordinates C.npy
 *   ndforge run spline_filter IN OUT      (spline_filter1d: --axis A)
 *   ndforge run resample IN.nii OUT.nii --spacing S[,S...]
 * common: --order N (3) --mode MODE (constant; mirror for the spline filters)
 *         --cval X (0) --no-prefilter --output-dtype DTYPE (the input's; uint8
 *         for bool) --batch-dims N (0) or --batch-axis K --device cpu|cuda|auto (auto)
 *
 * --batch-axis K (negative from the end): the op sees the input with axis K
 * moved first as its one batch axis (a view, no copy), so the per-axis values
 * and rotate's --axes are the other axes' in order; spline_filter1d's --axis
 * counts the input's axes.  The output gets the input's axis order back
 * (map_coordinates': the batch axis first).
 *
 * resample: the spatial axes (the 1 to 3 axes of a NIfTI volume) get the new
 * spacing S (one value for all, or one per axis; pixdim gives the old one).
 * The output has round(n * old / S) samples per axis (Python's round, half to
 * even, at least 1), exactly S apart, centred on the input's field of view:
 * output voxel o samples input voxel coordinate o * S / old + t with
 * t = (n_in - 1) / 2 - (n_out - 1) / 2 * S / old, so the two grids share their
 * centre.  The header follows: pixdim = S; the sform (when set) becomes
 * sform @ [diag(S / old) t; 0 1]; the qform keeps its rotation and gets the
 * world position of output voxel 0 as its offset.  Every output voxel is
 * therefore at the world point the input's affine gives its input
 * coordinate: the volume stays in place.  With --batch-axis 3, a 4-D
 * (x, y, z, t) volume is resampled one time point at a time, pixdim[4] kept;
 * a batch axis among x, y, z keeps its spacing and position.
 * Exit status: 0 ok, 1 failure, 2 bad command line; nothing is written on failure.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nifti1_io.h>

#include "cli.h"
#include "ndfio.h"
#include "ndforge.h"

enum { IX_USAGE = 2, IX_RUN = 1 };
enum { X_ZOOM, X_SHIFT, X_ROTATE, X_AFFINE, X_MAP, X_SPLINE, X_SPLINE1D, X_RESAMPLE, X_COUNT };
static const char *X_NAMES[X_COUNT] = {"zoom", "shift", "rotate", "affine_transform", "map_coordinates",
                                       "spline_filter", "spline_filter1d", "resample"};

static const char *ix_usage =
    "usage: ndforge run OP INPUT OUTPUT [options], OP one of\n"
    "  zoom             --zoom Z[,Z...] [--grid-mode]\n"
    "  shift            --shift S[,S...]\n"
    "  rotate           --angle DEG [--axes A,B (default 1,0)] [--no-reshape]\n"
    "  affine_transform --matrix M.npy [--offset O[,O...]] [--output-shape N[,N...]]\n"
    "  map_coordinates  --coordinates C.npy\n"
    "  spline_filter    (order 2..5)\n"
    "  spline_filter1d  [--axis A (default -1)]\n"
    "  resample         --spacing S[,S...]  a NIfTI volume to that voxel spacing, kept in\n"
    "                   place in world coordinates (header updated)\n"
    "options: --order N (default 3)  --mode MODE (constant, grid-constant, nearest, reflect,\n"
    "  grid-mirror, mirror, wrap, grid-wrap; default constant, mirror for the spline\n"
    "  filters)  --cval X  --no-prefilter  --output-dtype DTYPE (default the input's)\n"
    "  --batch-dims N  --batch-axis K (the axis of independent images, e.g. a 4-D NIfTI's\n"
    "  time axis 3)  --device cpu|cuda|auto (auto: CUDA when there is a device)\n"
    "  --cpu-threads N  the CPU backend's threads (default OpenMP's)\n";

int ndf_cli_interp_is_op(const char *name) {
  for (int i = 0; i < X_COUNT; i++)
    if (strcmp(name, X_NAMES[i]) == 0) return 1;
  return 0;
}

/* Resample's header: pixdim, sform and qform of out for the per-axis ratio r = new / old and
 * offset t (input voxel coordinate of output voxel o: o r + t), over the first nsp axes. */
static void resample_header(nifti_image *nim, int nsp, const double *r, const double *t, const double *spacing) {
  /* the world position of output voxel 0 through the qform */
  double q0[3];
  for (int i = 0; i < 3; i++)
    q0[i] = (double)nim->qto_xyz.m[i][0] * t[0] + (double)nim->qto_xyz.m[i][1] * (nsp > 1 ? t[1] : 0) +
            (double)nim->qto_xyz.m[i][2] * (nsp > 2 ? t[2] : 0) + (double)nim->qto_xyz.m[i][3];
  if (nim->sform_code > 0) {
    double a[16], b[16];
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 4; j++) a[4 * i + j] = nim->sto_xyz.m[i][j];
    if (ndf_resample_affine(nsp, a, r, t, b) == NDF_OK) {
      for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) nim->sto_xyz.m[i][j] = (float)b[4 * i + j];
      nim->sto_ijk = nifti_mat44_inverse(nim->sto_xyz);
    }
  }
  for (int d = 0; d < nsp; d++) nim->pixdim[d + 1] = (float)spacing[d];
  nim->dx = nim->pixdim[1];
  nim->dy = nim->pixdim[2];
  nim->dz = nim->pixdim[3];
  if (nim->qform_code > 0) {
    nim->qoffset_x = (float)q0[0];
    nim->qoffset_y = (float)q0[1];
    nim->qoffset_z = (float)q0[2];
    nim->qto_xyz = nifti_quatern_to_mat44(nim->quatern_b, nim->quatern_c, nim->quatern_d, nim->qoffset_x,
                                          nim->qoffset_y, nim->qoffset_z, nim->dx, nim->dy, nim->dz, nim->qfac);
    nim->qto_ijk = nifti_mat44_inverse(nim->qto_xyz);
  }
}

int ndf_cli_interp(int argc, char **argv) {
  const char *opname = argv[2];
  int op = -1;
  for (int i = 0; i < X_COUNT; i++)
    if (strcmp(opname, X_NAMES[i]) == 0) op = i;
  const char *pos[2] = {NULL, NULL}, *matrix_path = NULL, *coords_path = NULL, *device = "auto", *odt_name = NULL;
  int npos = 0, grid = 0, reshape = 1, nvals = 0, noffset = 0, nshape = 0, have_vals = 0, have_angle = 0;
  int have_mode = 0, have_axis = 0, have_bdims = 0, have_baxis = 0;
  long axis = -1, ax0 = 1, ax1 = 0, baxis = 0;
  double vals[NDF_MAX_SPATIAL], offset[NDF_MAX_SPATIAL], oshape_d[NDF_MAX_SPATIAL], angle = 0;
  ndf_interp_options o;
  ndf_interp_options_init(&o);
  for (int i = 3; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(ix_usage, stdout);
      return 0;
    }
    if (strncmp(a, "--", 2) != 0) {
      if (npos == 2) {
        errorf("run %s: too many file names ('%s')", opname, a);
        return IX_USAGE;
      }
      pos[npos++] = a;
      continue;
    }
    const char *name = a + 2;
    if (!strcmp(name, "grid-mode")) { grid = 1; continue; }
    if (!strcmp(name, "no-reshape")) { reshape = 0; continue; }
    if (!strcmp(name, "no-prefilter")) { o.prefilter = 0; continue; }
    if (i + 1 >= argc) {
      errorf("run %s: --%s needs a value", opname, name);
      return IX_USAGE;
    }
    const char *v = argv[++i];
    long l;
    if (!strcmp(name, "order")) {
      if (parse_long_arg(name, v, 0, 5, &l)) return IX_USAGE;
      o.order = (int)l;
    } else if (!strcmp(name, "mode")) {
      ndf_interp_mode m;
      if (ndf_interp_mode_from_name(v, &m) != NDF_OK) {
        errorf("bad value '%s' for --mode (expected constant, grid-constant, nearest, reflect, grid-mirror, mirror, "
               "wrap or grid-wrap)", v);
        return IX_USAGE;
      }
      o.mode = m;
      have_mode = 1;
    } else if (!strcmp(name, "cval")) {
      if (parse_double_arg(name, v, &o.cval)) return IX_USAGE;
    } else if (!strcmp(name, "batch-dims")) {
      if (parse_long_arg(name, v, 0, NDF_MAX_NDIM, &l)) return IX_USAGE;
      o.batch_dims = (int)l;
      have_bdims = 1;
    } else if (!strcmp(name, "batch-axis")) {
      if (parse_long_arg(name, v, -NDF_MAX_NDIM, NDF_MAX_NDIM - 1, &baxis)) return IX_USAGE;
      have_baxis = 1;
    } else if (!strcmp(name, "device")) {
      if (strcmp(v, "cpu") && strcmp(v, "cuda") && strcmp(v, "auto")) {
        errorf("bad value '%s' for --device (expected cpu, cuda or auto)", v);
        return IX_USAGE;
      }
      device = v;
    } else if (!strcmp(name, "cpu-threads")) {
      if (cli_cpu_threads_arg(v)) return IX_USAGE;
    } else if (!strcmp(name, "output-dtype")) {
      odt_name = v;
    } else if ((!strcmp(name, "zoom") && op == X_ZOOM) || (!strcmp(name, "shift") && op == X_SHIFT) ||
               (!strcmp(name, "spacing") && op == X_RESAMPLE)) {
      if ((nvals = parse_list_arg(name, v, vals, NDF_MAX_SPATIAL)) < 0) return IX_USAGE;
      have_vals = 1;
    } else if (!strcmp(name, "offset") && op == X_AFFINE) {
      if ((noffset = parse_list_arg(name, v, offset, NDF_MAX_SPATIAL)) < 0) return IX_USAGE;
    } else if (!strcmp(name, "output-shape") && op == X_AFFINE) {
      if ((nshape = parse_list_arg(name, v, oshape_d, NDF_MAX_SPATIAL)) < 0) return IX_USAGE;
    } else if (!strcmp(name, "matrix") && op == X_AFFINE) {
      matrix_path = v;
    } else if (!strcmp(name, "coordinates") && op == X_MAP) {
      coords_path = v;
    } else if (!strcmp(name, "angle") && op == X_ROTATE) {
      if (parse_double_arg(name, v, &angle)) return IX_USAGE;
      have_angle = 1;
    } else if (!strcmp(name, "axes") && op == X_ROTATE) {
      double ax[2];
      if (parse_list_arg(name, v, ax, 2) != 2 || ax[0] != floor(ax[0]) || ax[1] != floor(ax[1])) {
        errorf("bad value '%s' for --axes (expected two axes A,B)", v);
        return IX_USAGE;
      }
      ax0 = (long)ax[0];
      ax1 = (long)ax[1];
    } else if (!strcmp(name, "axis") && op == X_SPLINE1D) {
      if (parse_long_arg(name, v, -NDF_MAX_NDIM, NDF_MAX_NDIM - 1, &axis)) return IX_USAGE;
      have_axis = 1;
    } else {
      errorf("run %s: unknown option --%s (see ndforge run %s --help)", opname, name, opname);
      return IX_USAGE;
    }
  }
  if (have_baxis && have_bdims) {
    errorf("'run %s': --batch-axis and --batch-dims cannot be combined", opname);
    return IX_USAGE;
  }
  if (npos != 2) {
    errorf("'run %s' needs INPUT and OUTPUT, got %d file name%s", opname, npos, npos == 1 ? "" : "s");
    return IX_USAGE;
  }
  const char *need = (op == X_ZOOM && !have_vals) ? "--zoom" : (op == X_SHIFT && !have_vals) ? "--shift"
                   : (op == X_RESAMPLE && !have_vals) ? "--spacing" : (op == X_ROTATE && !have_angle) ? "--angle"
                   : (op == X_AFFINE && !matrix_path) ? "--matrix" : (op == X_MAP && !coords_path) ? "--coordinates"
                   : NULL;
  if (need) {
    errorf("'run %s' needs %s", opname, need);
    return IX_USAGE;
  }
  if ((op == X_SPLINE || op == X_SPLINE1D) && !have_mode) o.mode = NDF_INTERP_MIRROR;
  if (op == X_RESAMPLE && (ndfio_format_of(pos[0]) != NDFIO_NIFTI || ndfio_format_of(pos[1]) != NDFIO_NIFTI)) {
    errorf("'run resample' reads and writes NIfTI volumes (.nii, .nii.gz)");
    return IX_USAGE;
  }

  int rc = IX_RUN;
  ndfio_image in = {0}, mat = {0}, co = {0};
  ndf_array out = {0}, din = {0}, dout = {0}, dco = {0};
  void *obuf = NULL;
  ndf_ctx *ctx = NULL;
  nifti_image *hdr = NULL;
  ndfio_image hdr_img = {0};
  if (read_image(pos[0], &in) != 0) goto done;
  if (matrix_path && read_image(matrix_path, &mat) != 0) goto done;
  if (coords_path && read_image(coords_path, &co) != 0) goto done;
  if (have_baxis) {
    const int n = in.arr.ndim;
    if (baxis < -n || baxis >= n) {
      errorf("--batch-axis %ld: the input has %d axes", baxis, n);
      goto done;
    }
    if (baxis < 0) baxis += n;
    cli_move_axis(&in.arr, (int)baxis, 0);
    o.batch_dims = 1;
    if (have_axis) { /* spline_filter1d's --axis counts the input's axes */
      const long ax = axis < 0 ? axis + n : axis;
      if (ax == baxis) {
        errorf("--axis: axis %ld is the --batch-axis", axis);
        goto done;
      }
      if (ax >= 0 && ax < n) axis = ax < baxis ? ax + 1 : ax;
    }
  }
  ndf_dtype odt = in.arr.dtype == NDF_BOOL ? NDF_UINT8 : in.arr.dtype;
  if (odt_name && ndf_dtype_from_name(odt_name, &odt) != NDF_OK) {
    errorf("bad value '%s' for --output-dtype", odt_name);
    rc = IX_USAGE;
    goto done;
  }
  /* the output's shape, and resample's geometry */
  const int nb = o.batch_dims, nd = in.arr.ndim;
  int ond = nd, nsp = 0;
  int64_t osh[NDF_MAX_NDIM];
  double rr[NDF_MAX_SPATIAL], tt[NDF_MAX_SPATIAL], spacing[NDF_MAX_SPATIAL], old_spacing[NDF_MAX_SPATIAL];
  for (int d = 0; d < nd; d++) osh[d] = in.arr.shape[d];
  ndf_status s = NDF_OK;
  if (op == X_ZOOM) {
    s = ndf_zoom_shape(nd, in.arr.shape, nb, nvals, vals, osh);
  } else if (op == X_ROTATE) {
    s = ndf_rotate_shape(nd, in.arr.shape, nb, angle, (int)ax0, (int)ax1, reshape, osh);
  } else if (op == X_AFFINE && nshape) {
    ond = nb + nshape;
    for (int d = 0; d < nshape; d++) {
      if (oshape_d[d] != floor(oshape_d[d]) || oshape_d[d] < 0) {
        errorf("bad value for --output-shape (expected non-negative integers)");
        rc = IX_USAGE;
        goto done;
      }
      osh[nb + d] = (int64_t)oshape_d[d];
    }
  } else if (op == X_MAP) {
    ond = nb + co.arr.ndim - 1;
    for (int d = 1; d < co.arr.ndim && nb + d - 1 < NDF_MAX_NDIM; d++) osh[nb + d - 1] = co.arr.shape[d];
  } else if (op == X_RESAMPLE) {
    /* the spatial axes: the input's other than the batch axis, which must be among x, y, z
     * (a 4-D NIfTI's batch axis is its time axis, 3) */
    double old[NDF_MAX_NDIM];
    nsp = nd - nb;
    const int top = nb && baxis == nd - 1 ? nd - 2 : nd - 1; /* the last spatial axis */
    if ((nb && !have_baxis) || nsp < 1 || top > 2 || !ndfio_nifti_spacing(&in, old)) {
      if (nd == 4 && !nb)
        errorf("'run resample' takes a 1- to 3-D NIfTI volume, not 4 axes (--batch-axis 3: each time point alone)");
      else
        errorf("'run resample' resamples a NIfTI volume's x, y, z axes (1 to 3 of them): %d axes%s", nd,
               nb && !have_baxis ? " with --batch-dims (give --batch-axis K)"
               : nb ? " with the batch axis not the last" : "");
      goto done;
    }
    if (nvals != 1 && nvals != nsp) {
      errorf("--spacing: %d values for %d axes (give 1 or %d)", nvals, nsp, nsp);
      rc = IX_USAGE;
      goto done;
    }
    for (int d = 0; d < nsp; d++) {
      spacing[d] = vals[nvals == 1 ? 0 : d];
      if (!(spacing[d] > 0)) {
        errorf("--spacing: %g is not a positive spacing", spacing[d]);
        rc = IX_USAGE;
        goto done;
      }
      const int src = !nb || d < baxis ? d : d + 1; /* the input's axis of spatial axis d */
      old_spacing[d] = old[src];
    }
    s = ndf_resample_plan(nsp, in.arr.shape + nb, old_spacing, spacing, osh + nb, rr, tt); /* the library's geometry */
  }
  if (s != NDF_OK) {
    errorf("%s", ndf_last_error());
    goto done;
  }
  if (cli_alloc("the output", &out, odt, ond, osh) != 0) goto done;
  obuf = out.data;
  ndf_ctx_options cop;
  cli_ctx_options_init(&cop);
  cop.backend = !strcmp(device, "cpu") ? NDF_BACKEND_CPU : !strcmp(device, "cuda") ? NDF_BACKEND_CUDA : cop.backend;
  if (ndf_ctx_create(&ctx, &cop) != NDF_OK) {
    errorf("cannot create a context: %s", ndf_last_error());
    goto done;
  }
  const int cuda = ndf_ctx_has_cuda(ctx);
  const ndf_array *pin = &in.arr, *pco = coords_path ? &co.arr : NULL;
  ndf_array *pout = &out;
  if (cuda) {
    s = ndf_array_alloc(ctx, &din, NDF_DEVICE_CUDA, in.arr.dtype, nd, in.arr.shape);
    if (s == NDF_OK) s = ndf_array_alloc(ctx, &dout, NDF_DEVICE_CUDA, odt, ond, osh);
    if (s == NDF_OK) s = ndf_array_copy(ctx, &din, &in.arr);
    if (s == NDF_OK && pco) s = ndf_array_alloc(ctx, &dco, NDF_DEVICE_CUDA, co.arr.dtype, co.arr.ndim, co.arr.shape);
    if (s == NDF_OK && pco) s = ndf_array_copy(ctx, &dco, &co.arr);
    if (s != NDF_OK) {
      errorf("%s", ndf_errmsg(ctx));
      goto done;
    }
    pin = &din;
    pout = &dout;
    if (pco) pco = &dco;
  }
  switch (op) {
    case X_ZOOM: s = ndf_zoom(ctx, pin, pout, nvals, vals, grid, &o); break;
    case X_SHIFT: s = ndf_shift(ctx, pin, pout, nvals, vals, &o); break;
    case X_ROTATE: s = ndf_rotate(ctx, pin, pout, angle, (int)ax0, (int)ax1, reshape, &o); break;
    case X_AFFINE: s = ndf_affine_transform(ctx, pin, &mat.arr, noffset, offset, pout, &o); break;
    case X_MAP: s = ndf_map_coordinates(ctx, pin, pco, pout, &o); break;
    case X_SPLINE: s = ndf_spline_filter(ctx, pin, pout, o.order, o.mode, o.batch_dims); break;
    case X_SPLINE1D: s = ndf_spline_filter1d(ctx, pin, pout, o.order, (int)axis, o.mode); break;
    default: s = ndf_resample(ctx, pin, pout, old_spacing, spacing, &o);
  }
  if (s == NDF_OK && cuda) s = ndf_array_copy(ctx, &out, &dout);
  if (s == NDF_OK) s = ndf_ctx_synchronize(ctx);
  if (s != NDF_OK) {
    errorf("%s", ndf_errmsg(ctx));
    goto done;
  }
  if (have_baxis && op != X_MAP && ond == nd) cli_move_axis(&out, 0, (int)baxis); /* the input's axis order */
  const ndfio_image *header = &in;
  if (op == X_RESAMPLE) {
    hdr = nifti_copy_nim_info((const nifti_image *)in.nifti);
    if (!hdr) {
      errorf("out of memory for the NIfTI header");
      goto done;
    }
    /* per NIfTI axis x, y, z (those the volume has): a batch axis among them is kept */
    const int nn = nd < 3 ? nd : 3;
    double hr[3], ht[3], hs[3];
    for (int i = 0; i < nn; i++) {
      const int d = !nb ? i : i < baxis ? i : i - 1; /* its spatial axis, unless i is the batch axis */
      const int batch = nb && i == baxis;
      hr[i] = batch ? 1.0 : rr[d];
      ht[i] = batch ? 0.0 : tt[d];
      hs[i] = batch ? (double)hdr->pixdim[i + 1] : spacing[d];
    }
    resample_header(hdr, nn, hr, ht, hs);
    hdr_img.nifti = hdr;
    header = &hdr_img;
  }
  char err[1024];
  if (ndfio_write(pos[1], &out, ndfio_format_of(pos[1]) == NDFIO_NIFTI ? header : NULL, err, sizeof err) != NDF_OK) {
    errorf("%s", err);
    goto done;
  }
  rc = 0;
done:
  if (ctx) {
    ndf_array_free(ctx, &din);
    ndf_array_free(ctx, &dout);
    ndf_array_free(ctx, &dco);
  }
  ndf_ctx_destroy(ctx);
  if (hdr) nifti_image_free(hdr);
  ndfio_image_free(&in);
  ndfio_image_free(&mat);
  ndfio_image_free(&co);
  free(obuf);
  return rc;
}
