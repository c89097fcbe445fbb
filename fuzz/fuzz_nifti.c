/*
 * fuzz_nifti.c -- the NIfTI-1 reader (tools/nifti_io.c over nifti_clib) on
 * arbitrary file contents.
 *
 * The input is the whole file: a .nii.gz when it starts with the gzip magic,
 * a .nii otherwise.  A read either fails with a one-line message that names
 * the file and leaves the image empty, or gives an array of 1..7 positive
 * axes with Fortran strides and a usable spacing.  An image that can be
 * written back (as .nii, keeping its header) must read back with the same
 * dtype, shape and elements.
 */
#include "fuzz_util.h"

#include <math.h>

#include "ndfio.h"

static char nii_path[4200], gz_path[4200], out_path[4200];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  fuzz_make_dir();
  fuzz_path(nii_path, sizeof nii_path, "in.nii");
  fuzz_path(gz_path, sizeof gz_path, "in.nii.gz");
  fuzz_path(out_path, sizeof out_path, "out.nii");
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = size >= 2 && data[0] == 0x1f && data[1] == 0x8b ? gz_path : nii_path;
  fuzz_write_file(path, data, size);
  ndfio_image img;
  char err[1024] = "";
  ndf_status s = ndfio_read(path, &img, err, sizeof err);
  unlink(path);
  if (s != NDF_OK) {
    FUZZ_CHECK(s == NDF_EINVAL || s == NDF_EIO || s == NDF_ENOMEM, "status %d", (int)s);
    FUZZ_CHECK(img.arr.data == NULL && img.owned == NULL && img.nifti == NULL, "failed read left an image");
    FUZZ_CHECK(strstr(err, path) != NULL, "message does not name the file: %s", err);
    FUZZ_CHECK(strchr(err, '\n') == NULL, "message is not one line: %s", err);
    return 0;
  }
  const ndf_array *a = &img.arr;
  size_t esz = ndf_dtype_size(a->dtype);
  FUZZ_CHECK(esz > 0 && a->device == NDF_DEVICE_CPU && a->data && img.nifti, "bad image");
  FUZZ_CHECK(a->ndim >= 1 && a->ndim <= 7, "ndim %d", a->ndim);
  int64_t stride = 1;
  for (int d = 0; d < a->ndim; d++) {
    FUZZ_CHECK(a->shape[d] >= 1 && a->shape[d] <= 32767, "shape[%d]=%lld", d, (long long)a->shape[d]);
    FUZZ_CHECK(a->strides[d] == stride, "strides[%d]=%lld, expected %lld", d, (long long)a->strides[d],
               (long long)stride);
    stride *= a->shape[d];
  }
  double spacing[NDF_MAX_NDIM];
  FUZZ_CHECK(ndfio_nifti_spacing(&img, spacing) == 1, "no spacing for a NIfTI image");
  for (int d = 0; d < a->ndim; d++)
    FUZZ_CHECK(spacing[d] > 0 && isfinite(spacing[d]), "spacing[%d]=%g", d, spacing[d]);

  char werr[1024] = "";
  if (ndfio_nifti_write(out_path, a, &img, werr, sizeof werr) == NDF_OK) {
    ndfio_image back;
    s = ndfio_read(out_path, &back, werr, sizeof werr);
    FUZZ_CHECK(s == NDF_OK, "a written image cannot be read back: %s", werr);
    FUZZ_CHECK(back.arr.dtype == a->dtype, "dtype changed in a round trip");
    FUZZ_CHECK(back.arr.ndim == a->ndim, "ndim changed in a round trip (%d -> %d)", a->ndim, back.arr.ndim);
    for (int d = 0; d < a->ndim; d++)
      FUZZ_CHECK(back.arr.shape[d] == a->shape[d], "shape[%d] changed in a round trip", d);
    fuzz_check_same_elements(a, &back.arr, 1);
    ndfio_image_free(&back);
  }
  unlink(out_path);
  ndfio_image_free(&img);
  return 0;
}
