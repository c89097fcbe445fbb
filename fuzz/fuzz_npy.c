/*
 * fuzz_npy.c -- the .npy reader (tools/npy.c) on arbitrary file contents.
 *
 * The input is the whole file.  A read either fails with a one-line message
 * that names the file and leaves the image empty, or gives an array whose
 * data came from the file; that array is written back with ndfio_npy_write,
 * read again, and must come back with the same dtype, shape and elements.
 */
#include "fuzz_util.h"

#include "ndfio.h"

static char in_path[4200], out_path[4200];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  fuzz_make_dir();
  fuzz_path(in_path, sizeof in_path, "in.npy");
  fuzz_path(out_path, sizeof out_path, "out.npy");
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_write_file(in_path, data, size);
  ndfio_image img;
  char err[1024] = "";
  ndf_status s = ndfio_read(in_path, &img, err, sizeof err);
  if (s != NDF_OK) {
    FUZZ_CHECK(s == NDF_EINVAL || s == NDF_EIO || s == NDF_ENOMEM || s == NDF_ENOTSUP, "status %d", (int)s);
    FUZZ_CHECK(img.arr.data == NULL && img.owned == NULL && img.nifti == NULL, "failed read left an image");
    FUZZ_CHECK(strstr(err, in_path) != NULL, "message does not name the file: %s", err);
    FUZZ_CHECK(strchr(err, '\n') == NULL, "message is not one line: %s", err);
    return 0;
  }
  const ndf_array *a = &img.arr;
  size_t esz = ndf_dtype_size(a->dtype);
  FUZZ_CHECK(esz > 0 && a->device == NDF_DEVICE_CPU, "dtype %d device %d", (int)a->dtype, (int)a->device);
  FUZZ_CHECK(a->ndim >= 0 && a->ndim <= NDF_MAX_NDIM, "ndim %d", a->ndim);
  int64_t n = 1;
  for (int d = 0; d < a->ndim; d++) {
    FUZZ_CHECK(a->shape[d] >= 0, "shape[%d]=%lld", d, (long long)a->shape[d]);
    n = a->shape[d] > INT64_MAX / n ? INT64_MAX : n * (a->shape[d] ? a->shape[d] : 1); /* saturating */
  }
  for (int d = 0; d < a->ndim; d++)
    if (a->shape[d] == 0) n = 0;
  FUZZ_CHECK(n == 0 || (uint64_t)n <= size / esz, "%lld elements from a %zu-byte file", (long long)n, size);
  FUZZ_CHECK(n == 0 || a->data != NULL, "no data for %lld elements", (long long)n);
  char werr[1024] = "";
  s = ndfio_npy_write(out_path, a, werr, sizeof werr);
  FUZZ_CHECK(s == NDF_OK, "an array read cannot be written back: %s", werr);
  ndfio_image back;
  s = ndfio_read(out_path, &back, werr, sizeof werr);
  FUZZ_CHECK(s == NDF_OK, "a written array cannot be read back: %s", werr);
  FUZZ_CHECK(back.arr.dtype == a->dtype && back.arr.ndim == a->ndim, "dtype/ndim changed in a round trip");
  for (int d = 0; d < a->ndim; d++)
    FUZZ_CHECK(back.arr.shape[d] == a->shape[d], "shape[%d] changed in a round trip", d);
  fuzz_check_same_elements(a, &back.arr, 0);
  if (a->dtype == NDF_BOOL) {
    ndfio__iter it;
    unsigned char buf[256];
    size_t got;
    ndfio__iter_init(&it, a, 0);
    while ((got = ndfio__gather(&it, buf, sizeof buf)) > 0)
      for (size_t i = 0; i < got; i++) FUZZ_CHECK(buf[i] <= 1, "bool element holds %u", buf[i]);
  }
  ndfio_image_free(&back);
  ndfio_image_free(&img);
  return 0;
}
