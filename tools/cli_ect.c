/*
 * cli_ect.c -- `ndforge ect`: Euler characteristic transform of a binary or
 * grayscale 2-D/3-D image along the directions of a .npy file (issue 8,
 * docs/adr/0011-euler-characteristic-transform.md).
 *
 *   ndforge ect INPUT DIRECTIONS.npy OUT.npy [--thresholds T | --values V.npy]
 *           [--range LO,HI] [--construction V|T] [--weighted] [--spacing S0,S1[,S2]]
 *           [--normalize] [--batch-dims N] [--device cpu|cuda|auto] [--thresholds-out TH.npy]
 *
 * Exit status: 0 ok, 1 failure, 2 bad command line; nothing is written on failure.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ndfio.h"
#include "ndforge.h"


enum { ECT_EXIT_USAGE = 2, ECT_EXIT_RUN = 1 };


static const char *ect_usage =
    "usage: ndforge ect INPUT DIRECTIONS.npy OUT.npy [--thresholds T | --values V.npy]\n"
    "         [--range LO,HI] [--construction V|T] [--weighted] [--spacing S0,S1[,S2]]\n"
    "         [--normalize] [--batch-dims N] [--device cpu|cuda|auto] [--thresholds-out TH.npy]\n\n"
    "Euler characteristic transform of a 2-D or 3-D image (float32, float64, uint8 or\n"
    "uint16; no NaN) whose non-zero voxels are the shape, along m directions\n"
    "(DIRECTIONS.npy: (m, ndim) or (ndim,), float32/float64, used as given).  Voxel i\n"
    "sits at x = (i - (n-1)/2) * spacing per axis; its height along u is <x, u>; the\n"
    "cubical complex of the shape is filtered by height (V: a cell enters at the max\n"
    "of its vertices; T: a face at the min of the shape's top cells holding it).\n"
    "OUT.npy is (batch..., m, T): int64 cell counts chi(u, t_k), or with --weighted\n"
    "float64 sums of (-1)^dim w(cell) (V: w = min of the image over the cell's\n"
    "vertices; T: max over the shape's top cells holding it).\n\n"
    "  --construction V|T   V (default) or T\n"
    "  --weighted           weighted ECT of a grayscale image (finite values)\n"
    "  --thresholds T       T >= 2 thresholds lo + (hi-lo)*k/(T-1) (default 256); [lo, hi]\n"
    "                       = [-R, R], R the largest |<x, u>| over the grid and directions\n"
    "  --range LO,HI        [lo, hi] instead of [-R, R]\n"
    "  --values V.npy       the thresholds themselves (1-D float32/float64, any order)\n"
    "  --spacing S0,S1[,S2] voxel size per spatial axis (default 1)\n"
    "  --normalize          scale coordinates so the grid fits the unit ball\n"
    "  --batch-dims N       leading axes that are independent images (default 0)\n"
    "  --device cpu|cuda|auto  auto (default) = cpu; cuda: the CUDA backend (exact and weighted)\n"
    "  --cpu-threads N      the CPU backend's threads (default OpenMP's)\n"
    "  --thresholds-out TH.npy  write the T thresholds used (float64)\n";



/* The directions as a C-contiguous float64 (m, nd) array in *buf. */
static int load_directions(const char *path, double **buf, int64_t *m, int64_t *nd) {
  char err[1024];
  ndfio_image img;
  memset(&img, 0, sizeof img);
  if (ndfio_npy_read(path, &img, err, sizeof err) != NDF_OK) {
    errorf("%s", err);
    return -1;
  }
  const ndf_array *a = &img.arr;
  if ((a->dtype != NDF_FLOAT32 && a->dtype != NDF_FLOAT64) || a->ndim < 1 || a->ndim > 2) {
    errorf("%s: directions are a float32/float64 array of shape (m, ndim) or (ndim,), got %s with %d axes", path,
            ndf_dtype_name(a->dtype) ? ndf_dtype_name(a->dtype) : "?", a->ndim);
    ndfio_image_free(&img);
    return -1;
  }
  *m = a->ndim == 2 ? a->shape[0] : 1;
  *nd = a->shape[a->ndim - 1];
  int64_t s0 = a->ndim == 2 ? a->strides[0] : 0, s1 = a->strides[a->ndim - 1];
  *buf = malloc((size_t)(*m * *nd > 0 ? *m * *nd : 1) * sizeof **buf);
  if (!*buf) {
    errorf("out of memory");
    ndfio_image_free(&img);
    return -1;
  }
  for (int64_t j = 0; j < *m; j++)
    for (int64_t d = 0; d < *nd; d++) {
      int64_t off = j * s0 + d * s1;
      (*buf)[j * *nd + d] = a->dtype == NDF_FLOAT32 ? (double)((const float *)a->data)[off] : ((const double *)a->data)[off];
    }
  ndfio_image_free(&img);
  return 0;
}

int ndf_cli_ect(int argc, char **argv) {
  const char *pos[3] = {NULL, NULL, NULL}, *values_path = NULL, *th_out = NULL, *device = "auto";
  int npos = 0, have_T = 0, nspacing = 0;
  ndf_ect_options opt;
  ndf_ect_options_init(&opt);
  for (int i = 2; i < argc; i++) {
    const char *arg = argv[i];
    if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
      fputs(ect_usage, stdout);
      return 0;
    }
    if (arg[0] != '-' || arg[1] == '\0') {
      if (npos == 3) {
        errorf("'ect' needs INPUT, DIRECTIONS.npy and OUT.npy, got a fourth file name '%s'", arg);
        return ECT_EXIT_USAGE;
      }
      pos[npos++] = arg;
      continue;
    }
    if (strncmp(arg, "--", 2) != 0) {
      errorf("unknown option '%s' for 'ect' (see ndforge ect --help)", arg);
      return ECT_EXIT_USAGE;
    }
    char key[64];
    const char *name = arg + 2, *eq = strchr(name, '='), *val = NULL;
    size_t klen = eq ? (size_t)(eq - name) : strlen(name);
    if (klen >= sizeof key) klen = sizeof key - 1;
    memcpy(key, name, klen);
    key[klen] = '\0';
    if (!strcmp(key, "weighted") || !strcmp(key, "normalize")) {
      if (eq) {
        errorf("option '--%s' takes no value", key);
        return ECT_EXIT_USAGE;
      }
      if (key[0] == 'w') opt.weighted = 1;
      else opt.normalize = 1;
      continue;
    }
    static const char *known[] = {"thresholds", "values", "range", "construction", "batch-dims", "device",
                                  "thresholds-out", "spacing", "cpu-threads"};
    int k = -1;
    for (int j = 0; j < (int)(sizeof known / sizeof known[0]); j++)
      if (!strcmp(key, known[j])) k = j;
    if (k < 0) {
      errorf("unknown option '--%s' for 'ect' (see ndforge ect --help)", key);
      return ECT_EXIT_USAGE;
    }
    if (eq) val = eq + 1;
    else if (i + 1 < argc) val = argv[++i];
    else {
      errorf("option '--%s' needs a value", key);
      return ECT_EXIT_USAGE;
    }
    long lv;
    switch (k) {
      case 0:
        if (parse_long_arg("thresholds", val, 2, 1L << 30, &lv)) return ECT_EXIT_USAGE;
        opt.nthresholds = lv;
        have_T = 1;
        break;
      case 1: values_path = val; break;
      case 2:
        if (parse_range_arg(val, &opt.range_lo, &opt.range_hi)) return ECT_EXIT_USAGE;
        opt.has_range = 1;
        break;
      case 3:
        if (ndf_ecc_construction_from_name(val, &opt.construction) != NDF_OK) {
          errorf("bad value '%s' for --construction (expected V or T)", val);
          return ECT_EXIT_USAGE;
        }
        break;
      case 4:
        if (parse_long_arg("batch-dims", val, 0, NDF_MAX_NDIM - 1, &lv)) return ECT_EXIT_USAGE;
        opt.batch_dims = (int)lv;
        break;
      case 5:
        if (strcmp(val, "cpu") && strcmp(val, "cuda") && strcmp(val, "auto")) {
          errorf("bad value '%s' for --device (expected cpu, cuda or auto)", val);
          return ECT_EXIT_USAGE;
        }
        device = val;
        break;
      case 6: th_out = val; break;
      case 7: {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", val);
        nspacing = 0;
        /* every comma-separated field is a number: "," and "1,,2" are refused */
        for (char *tok = buf, *next; tok; tok = next) {
          if ((next = strchr(tok, ','))) *next++ = '\0';
          if (nspacing == 3) {
            errorf("bad value '%s' for --spacing (at most 3 numbers)", val);
            return ECT_EXIT_USAGE;
          }
          if (parse_double_arg("spacing", tok, &opt.spacing[nspacing])) return ECT_EXIT_USAGE;
          if (!(opt.spacing[nspacing] > 0)) {
            errorf("bad value '%s' for --spacing (each must be > 0)", val);
            return ECT_EXIT_USAGE;
          }
          nspacing++;
        }
        break;
      }
      case 8:
        if (cli_cpu_threads_arg(val)) return ECT_EXIT_USAGE;
        break;
    }
  }
  if (npos != 3) {
    errorf("'ect' needs INPUT, DIRECTIONS.npy and OUT.npy, got %d file name%s (see ndforge ect --help)", npos,
            npos == 1 ? "" : "s");
    return ECT_EXIT_USAGE;
  }
  if (values_path && (have_T || opt.has_range)) {
    errorf("--values gives the thresholds: it goes without --thresholds and --range");
    return ECT_EXIT_USAGE;
  }
  if (ndfio_format_of(pos[1]) != NDFIO_NPY || ndfio_format_of(pos[2]) != NDFIO_NPY ||
      (values_path && ndfio_format_of(values_path) != NDFIO_NPY) || (th_out && ndfio_format_of(th_out) != NDFIO_NPY)) {
    errorf("'ect' reads directions and thresholds and writes transforms as .npy files (DIRECTIONS.npy, OUT.npy, "
            "V.npy, TH.npy)");
    return ECT_EXIT_USAGE;
  }

  int rc = ECT_EXIT_RUN;
  char err[1024];
  ndfio_image in, vals;
  memset(&in, 0, sizeof in);
  memset(&vals, 0, sizeof vals);
  double *dirbuf = NULL, *thbuf = NULL;
  void *obuf = NULL;
  ndf_array dirs, out, th, din, dout;
  memset(&din, 0, sizeof din);
  memset(&dout, 0, sizeof dout);
  ndf_ctx *ctx = NULL;
  int64_t m, nd;
  if (read_image(pos[0], &in) != 0) goto done;
  if (load_directions(pos[1], &dirbuf, &m, &nd) != 0) goto done;
  int64_t dsh[2] = {m, nd};
  ndf_array_init(&dirs, dirbuf, NDF_DEVICE_CPU, NDF_FLOAT64, 2, dsh);
  if (nspacing && nspacing != in.arr.ndim - opt.batch_dims) {
    errorf("--spacing gives %d numbers for %d spatial axes", nspacing, in.arr.ndim - opt.batch_dims);
    rc = ECT_EXIT_USAGE;
    goto done;
  }
  if (values_path) {
    if (ndfio_npy_read(values_path, &vals, err, sizeof err) != NDF_OK) {
      errorf("%s", err);
      goto done;
    }
    opt.values = &vals.arr;
  }
  ndf_ctx_options co;
  cli_ctx_options_init(&co);
  co.backend = strcmp(device, "cuda") ? NDF_BACKEND_CPU : NDF_BACKEND_CUDA;
  if (ndf_ctx_create(&ctx, &co) != NDF_OK) {
    errorf("cannot create a %s context: %s", co.backend == NDF_BACKEND_CUDA ? "CUDA" : "CPU", ndf_last_error());
    goto done;
  }
  int64_t T = values_path ? (vals.arr.ndim == 1 ? vals.arr.shape[0] : 0) : opt.nthresholds;
  int64_t osh[NDF_MAX_NDIM + 2];
  int ond = opt.batch_dims + 2;
  if (opt.batch_dims >= in.arr.ndim) ond = 2; /* the library rejects --batch-dims */
  for (int d = 0; d < ond - 2; d++) osh[d] = in.arr.shape[d];
  osh[ond - 2] = m;
  osh[ond - 1] = T;
  if (cli_alloc("the output", &out, opt.weighted ? NDF_FLOAT64 : NDF_INT64, ond, osh) != 0) goto done;
  obuf = out.data;
  ndf_status s;
  if (co.backend == NDF_BACKEND_CUDA) {
    s = ndf_array_alloc(ctx, &din, NDF_DEVICE_CUDA, in.arr.dtype, in.arr.ndim, in.arr.shape);
    if (s == NDF_OK) s = ndf_array_alloc(ctx, &dout, NDF_DEVICE_CUDA, out.dtype, ond, osh);
    if (s == NDF_OK) s = ndf_array_copy(ctx, &din, &in.arr);
    if (s == NDF_OK) s = ndf_euler_characteristic_transform(ctx, &din, &dirs, &dout, &opt);
    if (s == NDF_OK) s = ndf_array_copy(ctx, &out, &dout);
    if (s == NDF_OK) s = ndf_ctx_synchronize(ctx);
  } else {
    s = ndf_euler_characteristic_transform(ctx, &in.arr, &dirs, &out, &opt);
  }
  if (s != NDF_OK) {
    errorf("%s", ndf_errmsg(ctx));
    goto done;
  }
  if (th_out) {
    if (cli_alloc("the thresholds", &th, NDF_FLOAT64, 1, &T) != 0) goto done;
    thbuf = th.data;
    if (ndf_ect_thresholds(ctx, &in.arr, &dirs, &opt, thbuf, T) != NDF_OK) {
      errorf("%s", ndf_errmsg(ctx));
      goto done;
    }
  }
  ndfio_stage stage; /* the transforms and the thresholds, or neither */
  ndfio_stage_init(&stage);
  if (ndfio_stage_write(&stage, pos[2], &out, NULL, err, sizeof err) != NDF_OK ||
      (th_out && ndfio_stage_write(&stage, th_out, &th, NULL, err, sizeof err) != NDF_OK) ||
      ndfio_stage_commit(&stage, err, sizeof err) != NDF_OK) {
    ndfio_stage_abort(&stage);
    errorf("%s", err);
    goto done;
  }
  rc = 0;
done:
  if (ctx) {
    ndf_array_free(ctx, &din);
    ndf_array_free(ctx, &dout);
  }
  ndf_ctx_destroy(ctx);
  ndfio_image_free(&in);
  ndfio_image_free(&vals);
  free(dirbuf);
  free(thbuf);
  free(obuf);
  return rc;
}
