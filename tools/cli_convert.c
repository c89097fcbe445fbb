/*
 * cli_convert.c -- `ndforge convert`: images between DICOM series, NIfTI-1
 * and .npy files (issue 33).
 *
 *   ndforge convert [--series UID|N] [--gap-tolerance F] INPUT... OUTPUT
 *
 * INPUT is a .nii / .nii.gz / .npy file, a directory of DICOM files, or
 * DICOM files (several inputs: the files of one series).  OUTPUT is a
 * .nii / .nii.gz / .npy file, or any other name: a new (or empty) directory
 * that receives a DICOM series.  A NIfTI output keeps the input's header
 * (NIfTI in) or gets the one the DICOM reader made (sform and qform, code 1);
 * the voxels are copied, never rescaled (tools/dicom_io.h has the DICOM
 * rules).  Exit status: 0 ok, 1 failure, 2 bad command line; on failure no
 * output is created.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "ndfio.h"
#ifdef NDF_HAVE_DICOM
#include "dicom_io.h"
#endif

enum { CV_EXIT_USAGE = 2, CV_EXIT_RUN = 1 };

static const char *cv_usage =
    "usage: ndforge convert [--series UID|N] [--gap-tolerance F] INPUT... OUTPUT\n\n"
    "Converts an image between DICOM series, NIfTI-1 (.nii, .nii.gz) and .npy.\n"
    "INPUT: a .nii/.nii.gz/.npy file, a directory of DICOM files, or DICOM files\n"
    "(several INPUTs: the files of one series).  OUTPUT: a .nii/.nii.gz/.npy file,\n"
    "or a new (or empty) directory for a DICOM series (any other name).\n"
    "A NIfTI output keeps the NIfTI input's header; from DICOM it gets the\n"
    "series' affine (RAS, sform and qform code 1), voxels in (columns, rows,\n"
    "slices) order with the slices sorted along the normal, rescale slope and\n"
    "intercept applied (int16 when integral and in range, else float32).\n\n"
    "  --series UID|N       the series to read when the input holds several\n"
    "                       (a SeriesInstanceUID, or N from the list that the\n"
    "                       error message prints)\n"
    "  --gap-tolerance F    largest difference of a slice gap from the median gap,\n"
    "                       a fraction of it (default 0.01); larger ones are refused\n"
    "                       as missing slices or uneven gaps\n";

/* An output that is not a file of a known extension is a DICOM directory. */
static int is_file_format(const char *path) {
  ndfio_format f = ndfio_format_of(path);
  return f == NDFIO_NPY || f == NDFIO_NIFTI;
}

int ndf_cli_convert(int argc, char **argv) {
  const char *pos[4096];
  int npos = 0;
  const char *series = NULL;
  double gap_tol = -1;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fputs(cv_usage, stdout);
      return 0;
    }
    if (!strcmp(a, "--")) {
      for (i++; i < argc; i++) {
        if (npos == (int)(sizeof pos / sizeof pos[0])) {
          errorf("convert: more than %d inputs", npos - 1);
          return CV_EXIT_USAGE;
        }
        pos[npos++] = argv[i];
      }
      break;
    }
    if (a[0] == '-' && a[1]) {
      if (strcmp(a, "--series") && strcmp(a, "--gap-tolerance")) {
        errorf("convert: unknown option '%s' (options: --series, --gap-tolerance)", a);
        return CV_EXIT_USAGE;
      }
      if (i + 1 >= argc) {
        errorf("convert: %s needs a value", a);
        return CV_EXIT_USAGE;
      }
      const char *v = argv[++i];
      if (!strcmp(a, "--series")) {
        if (!*v) {
          errorf("convert: --series needs a SeriesInstanceUID or a number");
          return CV_EXIT_USAGE;
        }
        series = v;
      } else {
        if (parse_double_arg("gap-tolerance", v, &gap_tol)) return CV_EXIT_USAGE;
        if (gap_tol < 0) {
          errorf("bad value '%s' for --gap-tolerance (expected a number >= 0)", v);
          return CV_EXIT_USAGE;
        }
      }
      continue;
    }
    if (npos == (int)(sizeof pos / sizeof pos[0])) {
      errorf("convert: more than %d inputs", npos - 1);
      return CV_EXIT_USAGE;
    }
    pos[npos++] = a;
  }
  if (npos < 2) {
    errorf("usage: ndforge convert [--series UID|N] [--gap-tolerance F] INPUT... OUTPUT (see ndforge convert "
           "--help)");
    return CV_EXIT_USAGE;
  }
  const char *out = pos[npos - 1];
  const int nin = npos - 1;
  /* One NIfTI or .npy input, or DICOM: a directory or DICOM files. */
  int dicom_in = nin > 1 || !is_file_format(pos[0]);
  int dicom_out = !is_file_format(out);
  if (!dicom_in && (series || gap_tol >= 0)) {
    errorf("convert: --series and --gap-tolerance apply to DICOM inputs, not '%s'", pos[0]);
    return CV_EXIT_USAGE;
  }
  for (int i = 0; nin > 1 && i < nin; i++) {
    struct stat st;
    if (is_file_format(pos[i]) || (stat(pos[i], &st) == 0 && S_ISDIR(st.st_mode))) {
      errorf("convert: several inputs are the files of one DICOM series; '%s' is not a DICOM file", pos[i]);
      return CV_EXIT_USAGE;
    }
  }
#ifndef NDF_HAVE_DICOM
  if (dicom_in || dicom_out) {
    errorf("convert: '%s' is DICOM, and DICOM support was not built into this ndforge (it needs GDCM: "
           "apt-get install libgdcm-dev, then configure and build again)", dicom_in ? pos[0] : out);
    return CV_EXIT_RUN;
  }
#endif
  char err[8192];
  ndfio_image img;
  memset(&img, 0, sizeof img);
  ndf_status s;
  if (dicom_in) {
#ifdef NDF_HAVE_DICOM
    ndfio_dicom_opts o = {series, gap_tol};
    s = ndfio_dicom_read(pos, nin, &o, &img, err, sizeof err);
#else
    s = NDF_EINVAL;
#endif
  } else {
    s = ndfio_read(pos[0], &img, err, sizeof err);
  }
  if (s != NDF_OK) {
    errorf("%s", err);
    return CV_EXIT_RUN;
  }
  int rc = 0;
  if (dicom_out) {
#ifdef NDF_HAVE_DICOM
    int quantized = 0;
    const char *descrip = NULL;
    if (ndfio_dicom_write(out, &img, descrip, &quantized, err, sizeof err) != NDF_OK) {
      errorf("%s", err);
      rc = CV_EXIT_RUN;
    } else if (quantized) {
      errorf("note: '%s' holds values that are not integers of int16 or uint16; they are stored as int16 "
             "with a RescaleSlope and RescaleIntercept (rounded)", out);
    }
#endif
  } else if (ndfio_write(out, &img.arr, &img, err, sizeof err) != NDF_OK) {
    errorf("%s", err);
    rc = CV_EXIT_RUN;
  }
  ndfio_image_free(&img);
  return rc;
}
