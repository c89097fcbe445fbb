/*
 * fuzz_nifti.c -- libFuzzer target: the NIfTI-1 reader (ndfio_nifti_read).
 * The first byte picks the file: 0, a .nii of the remaining bytes; 1, a
 * .nii.gz of them gzip-compressed here (the header and data checks behind
 * the compression); 2, a .nii.gz of the raw bytes (the gzip reader itself).
 */
#include <zlib.h>

#include "fuzz_util.h"
#include "ndfio.h"

/* The bytes as one gzip member, or NULL. */
static unsigned char *gzip_bytes(const uint8_t *data, size_t size, size_t *out) {
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  if (deflateInit2(&zs, 1, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) return NULL;
  uLong cap = deflateBound(&zs, (uLong)size);
  unsigned char *buf = malloc(cap ? cap : 1);
  zs.next_in = (unsigned char *)data;
  zs.avail_in = (uInt)size;
  zs.next_out = buf;
  zs.avail_out = (uInt)cap;
  int r = buf ? deflate(&zs, Z_FINISH) : Z_MEM_ERROR;
  *out = zs.total_out;
  deflateEnd(&zs);
  if (r != Z_STREAM_END) {
    free(buf);
    return NULL;
  }
  return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > (1u << 20)) return 0;
  const int mode = data[0] % 3;
  const char *path;
  if (mode == 1) {
    size_t n;
    unsigned char *gz = gzip_bytes(data + 1, size - 1, &n);
    if (!gz) return 0;
    path = fuzz_file("in.nii.gz", gz, n);
    free(gz);
  } else {
    path = fuzz_file(mode == 0 ? "in.nii" : "in.nii.gz", data + 1, size - 1);
  }
  ndfio_image img;
  char err[1024];
  if (ndfio_nifti_read(path, &img, err, sizeof err) != NDF_OK) return 0;
  const int64_t n = ndf_array_size(&img.arr);
  if (n < 0) abort();
  const size_t bytes = (size_t)n * ndf_dtype_size(img.arr.dtype);
  volatile unsigned char sum = 0;
  for (size_t i = 0; i < bytes; i++) sum ^= ((const unsigned char *)img.owned)[i];
  double spacing[NDF_MAX_NDIM];
  ndfio_nifti_spacing(&img, spacing);
  ndfio_image_free(&img);
  return 0;
}
