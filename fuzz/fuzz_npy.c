/*
 * fuzz_npy.c -- libFuzzer target: the .npy reader (ndfio_npy_read) on
 * arbitrary bytes.  An accepted file must describe exactly the data it
 * holds (every element is read back here) and must write back (a temporary
 * next to the input, removed).
 */
#include "fuzz_util.h"
#include "ndfio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_file("in.npy", data, size);
  ndfio_image img;
  char err[1024];
  if (ndfio_npy_read(path, &img, err, sizeof err) != NDF_OK) return 0;
  const int64_t n = ndf_array_size(&img.arr);
  if (n < 0) abort();
  const size_t bytes = (size_t)n * ndf_dtype_size(img.arr.dtype);
  volatile unsigned char sum = 0;
  for (size_t i = 0; i < bytes; i++) sum ^= ((const unsigned char *)img.owned)[i];
  char out[512];
  snprintf(out, sizeof out, "%s/out.npy", fuzz_dir());
  if (ndfio_npy_write(out, &img.arr, err, sizeof err) != NDF_OK) {
    fprintf(stderr, "an accepted array does not write back: %s\n", err);
    abort();
  }
  unlink(out);
  ndfio_image_free(&img);
  return 0;
}
