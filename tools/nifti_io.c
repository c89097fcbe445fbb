/*
 * nifti_io.c -- NIfTI-1 images (.nii, .nii.gz) through nifti_clib, and the
 * format dispatch of ndfio_read / ndfio_write.
 * This file uses only the public API of ndforge.
 *
 * Arrays keep NIfTI's axis order (x, y, z, t, ...) with Fortran strides (x
 * fastest), as nibabel's get_fdata() does, so `size`, `origin` and
 * footprints given on the command line mean the same axes as in Python.
 *
 * nifti_clib reads the header; the data is read here, because
 * nifti_image_load replaces NaN and Inf in float images with 0, and writes
 * go through nifti_image_write_hdr_img2 (header, file left open) plus our
 * own data writes, because nifti_image_write reports no errors.
 *
 * Where the build has libdeflate (NDF_HAVE_LIBDEFLATE), .nii.gz data is
 * inflated and deflated by it in one piece, a few times faster than zlib's
 * streams: a file is read whole and inflated member by member into its
 * known size (any surprise -- truncation, a bad trailer, more data than the
 * header says -- goes to the zlib reader, which names it), and a file is
 * written as one gzip member of the header, nifti_clib's bytes, and the data.
 */
#define _POSIX_C_SOURCE 200809L
#include "ndfio.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nifti1_io.h>
#include <zlib.h>
#ifdef NDF_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

#ifdef NDF_HAVE_DICOM
#include "dicom_io.h"
#endif


static const struct {
  int code;
  ndf_dtype dtype;
} dtype_map[] = {
    {DT_UINT8, NDF_UINT8},   {DT_INT8, NDF_INT8},   {DT_UINT16, NDF_UINT16},
    {DT_INT16, NDF_INT16},   {DT_UINT32, NDF_UINT32}, {DT_INT32, NDF_INT32},
    {DT_FLOAT32, NDF_FLOAT32}, {DT_FLOAT64, NDF_FLOAT64}, {DT_INT64, NDF_INT64},
    {DT_UINT64, NDF_UINT64},
};
#define NIFTI_SUPPORTED "UINT8, INT8, UINT16, INT16, UINT32, INT32, INT64, UINT64, FLOAT32, FLOAT64"

/* nifti_clib prints its own diagnostics at debug level 1; ndfio reports one
 * line itself. */
static void quiet(void) { nifti_set_debug_level(0); }


ndfio_format ndfio_format_of(const char *path) {
  size_t n = path ? strlen(path) : 0;
  if (n > 4 && strcmp(path + n - 4, ".npy") == 0) return NDFIO_NPY;
  if (n > 4 && strcmp(path + n - 4, ".nii") == 0) return NDFIO_NIFTI;
  if (n > 7 && strcmp(path + n - 7, ".nii.gz") == 0) return NDFIO_NIFTI;
  if (n > 4 && strcmp(path + n - 4, ".dcm") == 0) return NDFIO_DICOM;
  struct stat st;
  if (n > 0 && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return NDFIO_DICOM;
  return (ndfio_format)0;
}

void ndfio_image_free(ndfio_image *img) {
  if (!img) return;
  free(img->owned);
  if (img->nifti) nifti_image_free((nifti_image *)img->nifti);
  memset(img, 0, sizeof *img);
}

int ndfio_nifti_spacing(const ndfio_image *img, double *spacing) {
  if (!img || !img->nifti) return 0;
  const nifti_image *nim = img->nifti;
  for (int i = 0; i < img->arr.ndim && i < 7; i++) {
    double v = nim->pixdim[i + 1];
    spacing[i] = v > 0 && v < 1e300 ? v : 1.0;
  }
  return 1;
}

#ifndef NDF_HAVE_DICOM
static ndf_status no_dicom(const char *path, char *err, size_t errlen) {
  ndfio__err(err, errlen, "'%s' is DICOM, and DICOM support was not built into this ndforge (it needs GDCM: "
             "apt-get install libgdcm-dev, then configure and build again)", path);
  return NDF_EINVAL;
}
#endif

ndf_status ndfio_read(const char *path, ndfio_image *img, char *err, size_t errlen) {
  switch (ndfio_format_of(path)) {
  case NDFIO_NPY: return ndfio_npy_read(path, img, err, errlen);
  case NDFIO_NIFTI: return ndfio_nifti_read(path, img, err, errlen);
  case NDFIO_DICOM:
#ifdef NDF_HAVE_DICOM
    return ndfio_dicom_read(&path, 1, NULL, img, err, errlen);
#else
    if (img) memset(img, 0, sizeof *img);
    return no_dicom(path, err, errlen);
#endif
  }
  if (img) memset(img, 0, sizeof *img);
  ndfio__err(err, errlen, "cannot read '%s': unknown file type (expected .npy, .nii or .nii.gz)",
             path ? path : "(null)");
  return NDF_EINVAL;
}

ndf_status ndfio_write(const char *path, const ndf_array *a, const ndfio_image *header_from,
                       char *err, size_t errlen) {
  switch (ndfio_format_of(path)) {
  case NDFIO_NPY: return ndfio_npy_write(path, a, err, errlen);
  case NDFIO_NIFTI: return ndfio_nifti_write(path, a, header_from, err, errlen);
  case NDFIO_DICOM: {
#ifdef NDF_HAVE_DICOM
    ndfio_image im;
    memset(&im, 0, sizeof im);
    if (a) im.arr = *a;
    im.nifti = header_from ? header_from->nifti : NULL;
    return ndfio_dicom_write(path, &im, NULL, NULL, err, errlen);
#else
    return no_dicom(path, err, errlen);
#endif
  }
  }
  ndfio__err(err, errlen, "cannot write '%s': unknown file type (expected .npy, .nii or .nii.gz)",
             path ? path : "(null)");
  return NDF_EINVAL;
}

/* ------------------------------------------------------------------------ */
/* Reading                                                                   */

/* Largest step of the buffer a compressed image's data grows in: the
 * declared size is allocated only as the data turns out to be there. */
#define GZ_GROW (1u << 24)

/* A gzip stream read with zlib's inflate, which reports the end of a member
 * only after its trailer (CRC-32 and length) checked out: a stream that
 * ends before that is truncated (gzread returns a quiet end of file there). */
typedef struct gzr {
  int fd;
  z_stream zs;
  unsigned char in[1 << 16];
  int member_done; /* the last member ended with a valid trailer */
  int eof;         /* the file has no more bytes */
  const char *why; /* the error, NULL while none */
} gzr;

static const char *gzr_open(gzr *z, int fd) {
  memset(&z->zs, 0, sizeof z->zs);
  z->fd = fd;
  z->member_done = z->eof = 0;
  z->why = NULL;
  if (inflateInit2(&z->zs, 16 + MAX_WBITS) != Z_OK) z->why = "cannot start zlib";
  return z->why;
}

static void gzr_close(gzr *z) {
  inflateEnd(&z->zs);
  close(z->fd);
}

/* Up to n bytes into dst; fewer only at the end of the stream or on an
 * error (z->why set: truncated, or corrupt). */
static size_t gzr_read(gzr *z, void *dst, size_t n) {
  z->zs.next_out = dst;
  z->zs.avail_out = (uInt)(n < (1u << 30) ? n : (1u << 30));
  const uInt want = z->zs.avail_out;
  while (!z->why && z->zs.avail_out > 0) {
    if (z->zs.avail_in == 0 && !z->eof) {
      ssize_t r;
      do r = read(z->fd, z->in, sizeof z->in);
      while (r < 0 && errno == EINTR);
      if (r < 0) { z->why = "read error"; break; }
      if (r == 0) z->eof = 1;
      z->zs.next_in = z->in;
      z->zs.avail_in = (uInt)r;
    }
    if (z->zs.avail_in == 0 && z->eof) {
      if (!z->member_done) z->why = "truncated compressed data (no gzip trailer)";
      break;
    }
    if (z->member_done) { /* another member follows (concatenated gzip) */
      inflateReset(&z->zs);
      z->member_done = 0;
    }
    int r = inflate(&z->zs, Z_NO_FLUSH);
    if (r == Z_STREAM_END) z->member_done = 1;
    else if (r == Z_BUF_ERROR && z->zs.avail_in == 0) continue; /* needs more input */
    else if (r != Z_OK) z->why = z->zs.msg ? z->zs.msg : "corrupt compressed data";
  }
  return want - z->zs.avail_out;
}

#ifdef NDF_HAVE_LIBDEFLATE
/* The whole compressed file of fd (csize bytes) inflated by libdeflate into
 * a new buffer, when its members hold exactly off + nbytes bytes: *owned
 * (malloc'ed) and *data, the data at byte off, 16-byte aligned.  Returns 0
 * otherwise (or when out of memory); the zlib reader then reads the file. */
static int inflate_whole(int fd, size_t csize, int64_t off, size_t nbytes, char **owned, char **data) {
  const size_t total = (size_t)off + nbytes, pad = (16 - (size_t)off % 16) % 16;
  /* deflate expands at most about 1032 to 1: a header that claims more than the file can hold
   * is not believed here (no allocation of its size) */
  if (csize < 18 || total < nbytes || total / 1032 > csize || total > SIZE_MAX - pad) return 0;
  unsigned char *in = malloc(csize);
  char *out = malloc(pad + total ? pad + total : 1);
  struct libdeflate_decompressor *d = in && out ? libdeflate_alloc_decompressor() : NULL;
  int ok = d != NULL;
  size_t got = 0;
  while (ok && got < csize) {
    ssize_t r = pread(fd, in + got, csize - got, (off_t)got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) ok = 0;
    else got += (size_t)r;
  }
  size_t ip = 0, op = 0;
  while (ok && ip < csize) { /* member after member (concatenated gzip) */
    size_t used = 0, made = 0;
    if (libdeflate_gzip_decompress_ex(d, in + ip, csize - ip, out + pad + op, total - op, &used, &made) !=
        LIBDEFLATE_SUCCESS)
      ok = 0;
    ip += used;
    op += made;
  }
  libdeflate_free_decompressor(d);
  free(in);
  if (!ok || op != total) {
    free(out);
    return 0;
  }
  *owned = out;
  *data = out + pad + off;
  return 1;
}
#endif

/* Reads nbytes of image data at byte off of nim's data file into *data,
 * in *owned (malloc'ed), swapping bytes when the file's byte order is not
 * the host's.
 * An uncompressed file's size was checked by the caller; a compressed one
 * is read with a buffer that grows with the data actually present, then to
 * its end, so that a truncated stream or a bad trailer (CRC, length) is an
 * error (zlib checks them only there). */
static ndf_status read_data(const char *path, nifti_image *nim, int64_t off, size_t nbytes, void **owned,
                            void **data, char *err, size_t errlen) {
  *owned = *data = NULL;
  struct stat st;
  int fd = nim->iname ? ndfio__open_regular(nim->iname, &st, err, errlen) : -1;
  if (fd < 0) {
    if (!nim->iname) ndfio__err(err, errlen, "cannot read '%s': cannot open its data", path);
    return NDF_EIO;
  }
  ndf_status s = NDF_OK;
  char *buf = NULL, *at = NULL;
#ifdef NDF_HAVE_LIBDEFLATE
  if (nifti_is_gzfile(nim->iname) && inflate_whole(fd, (size_t)st.st_size, off, nbytes, &buf, &at)) {
    close(fd);
  } else
#endif
  if (!nifti_is_gzfile(nim->iname)) {
    if (!(buf = malloc(nbytes ? nbytes : 1))) {
      close(fd);
      ndfio__err(err, errlen, "cannot read '%s': out of memory for %zu bytes", path, nbytes);
      return NDF_ENOMEM;
    }
    size_t got = 0;
    while (got < nbytes) {
      ssize_t r = pread(fd, buf + got, nbytes - got, (off_t)off + (off_t)got);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      got += (size_t)r;
    }
    close(fd);
    at = buf;
    if (got != nbytes) {
      ndfio__err(err, errlen, "cannot read '%s': truncated data (expected %zu bytes)", path, nbytes);
      s = NDF_EINVAL;
    }
  } else {
    gzr z;
    char skip[1 << 14];
    const char *why = gzr_open(&z, fd);
    int64_t left = off; /* the header and extensions before the data */
    while (!why && left > 0) {
      size_t want = left < (int64_t)sizeof skip ? (size_t)left : sizeof skip, r = gzr_read(&z, skip, want);
      if (r < want) why = z.why ? z.why : "truncated before its data";
      left -= (int64_t)r;
    }
    size_t cap = 0, got = 0;
    while (!why && got < nbytes) {
      if (got == cap) {
        size_t ncap = cap ? cap * 2 : GZ_GROW;
        if (ncap > nbytes || ncap < cap) ncap = nbytes;
        char *nb = realloc(buf, ncap);
        if (!nb) {
          free(buf);
          gzr_close(&z);
          ndfio__err(err, errlen, "cannot read '%s': out of memory for %zu bytes", path, ncap);
          return NDF_ENOMEM;
        }
        buf = nb;
        cap = ncap;
      }
      size_t r = gzr_read(&z, buf + got, cap - got);
      got += r;
      if (r == 0) why = z.why ? z.why : "truncated data";
    }
    while (!why && gzr_read(&z, skip, sizeof skip) > 0) { /* to the end: every member's trailer is checked */
    }
    if (!why) why = z.why;
    gzr_close(&z);
    at = buf;
    if (why) {
      ndfio__err(err, errlen, "cannot read '%s': %s (expected %zu bytes of data)", path, why, nbytes);
      s = NDF_EINVAL;
    }
  }
  if (s != NDF_OK) {
    free(buf);
    return s;
  }
  if (nim->swapsize > 1 && nim->byteorder != nifti_short_order())
    nifti_swap_Nbytes(nbytes / (size_t)nim->swapsize, nim->swapsize, at);
  *owned = buf;
  *data = at;
  return NDF_OK;
}

/* The ndforge dtype of a NIfTI datatype code, or a message naming both. */
static ndf_status dtype_of(const char *path, int code, ndf_dtype *out, char *err, size_t errlen) {
  for (size_t i = 0; i < sizeof dtype_map / sizeof dtype_map[0]; i++) {
    if (dtype_map[i].code == code) {
      *out = dtype_map[i].dtype;
      return NDF_OK;
    }
  }
  const char *name = nifti_datatype_to_string(code);
  ndfio__err(err, errlen,
             "cannot read '%s': NIfTI datatype %s (%d) is not supported (supported: %s)", path,
             name ? name : "?", code, NIFTI_SUPPORTED);
  return NDF_EINVAL;
}

static int16_t swap16(int16_t v) {
  uint16_t u = (uint16_t)v;
  return (int16_t)(uint16_t)((u >> 8) | (u << 8));
}

static float swapf(float v) {
  uint32_t u;
  memcpy(&u, &v, 4);
  u = (u >> 24) | ((u >> 8) & 0xff00u) | ((u << 8) & 0xff0000u) | (u << 24);
  memcpy(&v, &u, 4);
  return v;
}

/* Checks the fixed header fields that nifti_image_read would complain about
 * on stderr whatever the debug level (sizeof_hdr, dim, datatype), so the
 * caller gets one message instead, and those it would quietly repair: the
 * magic of a single file ("n+1") and vox_offset, the data's offset (a whole
 * number from 352 on; nifti_clib reads a smaller, negative or NaN one as
 * 352, which shifts the image), into *off. */
static ndf_status check_header(const char *path, int64_t *off, char *err, size_t errlen) {
  nifti_1_header h;
  znzFile fp = znzopen(path, "rb", nifti_is_gzfile(path));
  if (znz_isnull(fp)) {
    ndfio__err(err, errlen, "cannot read '%s': cannot open it", path);
    return NDF_EIO;
  }
  size_t got = znzread(&h, 1, sizeof h, fp);
  znzclose(fp);
  const char *why = NULL;
  int swap = h.sizeof_hdr != 348;
  int16_t dim0 = swap ? swap16(h.dim[0]) : h.dim[0];
  int16_t dtype = swap ? swap16(h.datatype) : h.datatype;
  if (got != sizeof h) why = nifti_is_gzfile(path) ? "too short for a header, or corrupt compressed data"
                                                   : "too short for a header";
  else if (swap && h.sizeof_hdr != 0x5c010000) why = "sizeof_hdr is not 348";
  else if (dim0 < 1 || dim0 > 7) why = "dim[0] is not in 1..7";
  for (int i = 1; !why && i <= dim0; i++)
    if ((swap ? swap16(h.dim[i]) : h.dim[i]) < 1) why = "a dimension is not positive";
  if (!why && memcmp(h.magic, "n+1", 4) != 0) why = "its magic is not \"n+1\", a single-file NIfTI-1";
  if (why) {
    ndfio__err(err, errlen, "cannot read '%s': not a valid NIfTI-1 file (%s)", path, why);
    return NDF_EINVAL;
  }
  const float vo = swap ? swapf(h.vox_offset) : h.vox_offset;
  if (!(vo >= 352.0f && vo <= 2147483520.0f) || vo != floorf(vo)) {
    ndfio__err(err, errlen, "cannot read '%s': not a valid NIfTI-1 file (vox_offset %g: the data must start at a "
               "whole byte offset of at least 352)", path, (double)vo);
    return NDF_EINVAL;
  }
  *off = (int64_t)vo;
  ndf_dtype t;
  return dtype_of(path, dtype, &t, err, errlen);
}

ndf_status ndfio_nifti_read(const char *path, ndfio_image *img, char *err, size_t errlen) {
  if (!img || !path) {
    ndfio__err(err, errlen, "ndfio_nifti_read: no path or image given");
    return NDF_EINVAL;
  }
  memset(img, 0, sizeof *img);
  /* nifti_image_read would also try other extensions; check the name given,
   * and that it is a regular file (a FIFO would block the reads below). */
  struct stat fst;
  int probe = ndfio__open_regular(path, &fst, err, errlen);
  if (probe < 0) return NDF_EIO;
  close(probe);
  quiet();
  int64_t off = 0;
  ndf_status s = check_header(path, &off, err, errlen);
  if (s != NDF_OK) return s;
  nifti_image *nim = nifti_image_read(path, 0);
  if (!nim) {
    ndfio__err(err, errlen, "cannot read '%s': not a valid NIfTI-1 file", path);
    return NDF_EINVAL;
  }
  void *data = NULL, *owned = NULL;
  ndf_dtype dtype;
  if ((s = dtype_of(path, nim->datatype, &dtype, err, errlen)) != NDF_OK) goto fail;
  s = NDF_EINVAL;
  int ndim = nim->dim[0];
  if (ndim < 1 || ndim > 7 || nim->nbyper != (int)ndf_dtype_size(dtype)) {
    ndfio__err(err, errlen, "cannot read '%s': bad NIfTI header (dim[0]=%d)", path, ndim);
    goto fail;
  }
  ndf_array *a = &img->arr;
  a->device = NDF_DEVICE_CPU;
  a->device_id = 0;
  a->dtype = dtype;
  a->ndim = ndim;
  size_t esz = ndf_dtype_size(dtype), n = 1;
  for (int i = 0; i < ndim; i++) {
    if (nim->dim[i + 1] < 1) {
      ndfio__err(err, errlen, "cannot read '%s': bad NIfTI header (dim[%d]=%d)", path, i + 1,
                 nim->dim[i + 1]);
      goto fail;
    }
    a->shape[i] = nim->dim[i + 1];
    a->strides[i] = (int64_t)n; /* x fastest */
    if (n > (size_t)INT64_MAX / esz / (size_t)nim->dim[i + 1]) {
      ndfio__err(err, errlen, "cannot read '%s': image too large", path);
      goto fail;
    }
    n *= (size_t)nim->dim[i + 1];
  }
  size_t nbytes = n * esz;
  /* An uncompressed file's size shows truncation before a large allocation
   * (a compressed one is read with a bound, read_data). */
  struct stat st;
  if (!nifti_is_gzfile(nim->iname) && stat(nim->iname, &st) == 0 &&
      (uint64_t)st.st_size < (uint64_t)off + nbytes) {
    ndfio__err(err, errlen, "cannot read '%s': truncated data (expected %zu bytes from byte %lld, the file has "
               "%lld)", path, nbytes, (long long)off, (long long)st.st_size);
    goto fail;
  }
  if ((s = read_data(path, nim, off, nbytes, &owned, &data, err, errlen)) != NDF_OK) goto fail;
  a->data = data;
  img->owned = owned;
  img->nifti = nim;
  return NDF_OK;
fail:
  free(owned);
  nifti_image_free(nim);
  memset(img, 0, sizeof *img);
  return s;
}

/* ------------------------------------------------------------------------ */
/* Writing                                                                   */

static int put_znz(const void *buf, size_t bytes, void *ud) { return znzwrite(buf, 1, bytes, ud) == bytes; }

/* Writes a's elements in Fortran order (x fastest) to fp. */
static int write_fortran(znzFile fp, const ndf_array *a, int64_t nelem) {
  return ndfio__write_elems(a, nelem, 1, put_znz, fp);
}

/* Sets the datatype and dimensions of nim to a's (header fields only). */
static ndf_status shape_header(nifti_image *nim, const ndf_array *a) {
  int code = DT_UINT8; /* NDF_BOOL is stored as 0/1 bytes */
  for (size_t i = 0; i < sizeof dtype_map / sizeof dtype_map[0]; i++)
    if (dtype_map[i].dtype == a->dtype) code = dtype_map[i].code;
  nim->datatype = code;
  nifti_datatype_sizes(code, &nim->nbyper, &nim->swapsize);
  nim->dim[0] = a->ndim;
  for (int i = 1; i < 8; i++) {
    nim->dim[i] = i <= a->ndim ? (int)a->shape[i - 1] : 1;
    if (i <= a->ndim && !(nim->pixdim[i] > 0)) nim->pixdim[i] = 1.0f;
  }
  nim->nifti_type = NIFTI_FTYPE_NIFTI1_1;
  nim->byteorder = nifti_short_order();
  if (nifti_update_dims_from_array(nim) != 0) return NDF_EINVAL;
  /* nifti_update_dims_from_array drops trailing unit axes (4x4x1 -> 4x4);
   * the array's rank is kept, as nibabel keeps it. */
  nim->ndim = nim->dim[0] = a->ndim;
  return NDF_OK;
}

#ifdef NDF_HAVE_LIBDEFLATE
/* Writes nim's file (single-file NIfTI-1: the header and extensions as
 * nifti_image_write_hdr_img2 writes them, zeros up to the data's offset,
 * then a's nelem elements in Fortran order) to tmp as one gzip member made
 * by libdeflate at level 1.  Returns 1, or 0 with errno set (ENOMEM when
 * out of memory). */
static int deflate_whole(const char *tmp, nifti_image *nim, const ndf_array *a, int64_t nelem) {
  nifti_set_iname_offset(nim); /* the data's offset: 352 + the extensions, a multiple of 16 */
  struct nifti_1_header h = nifti_convert_nim2nhdr(nim);
  if (!valid_nifti_extensions(nim)) nim->num_ext = 0; /* nifti_clib writes no invalid extension */
  const size_t off = (size_t)nim->iname_offset, nbytes = (size_t)nelem * ndf_dtype_size(a->dtype);
  int ok = 0;
  unsigned char *buf = NULL, *cbuf = NULL;
  struct libdeflate_compressor *c = NULL;
  errno = ENOMEM;
  if (off < sizeof h + 4 || nbytes > SIZE_MAX - off || !(buf = calloc(1, off + nbytes))) goto done;
  memcpy(buf, &h, sizeof h);
  size_t p = sizeof h;
  buf[p] = nim->num_ext > 0; /* the extender: 1, 0, 0, 0 when extensions follow */
  p += 4;
  for (int i = 0; i < nim->num_ext; i++) {
    const nifti1_extension *e = &nim->ext_list[i];
    if (p + (size_t)e->esize > off) {
      errno = EINVAL;
      goto done;
    }
    memcpy(buf + p, &e->esize, 4);
    memcpy(buf + p + 4, &e->ecode, 4);
    memcpy(buf + p + 8, e->edata, (size_t)e->esize - 8);
    p += (size_t)e->esize;
  }
  ndfio__iter it;
  ndfio__iter_init(&it, a, 1);
  for (size_t done = 0, esz = ndf_dtype_size(a->dtype); done < nbytes;) {
    const size_t k = ndfio__gather(&it, buf + off + done, (nbytes - done) / esz);
    if (k == 0) break;
    done += k * esz;
  }
  if (!(c = libdeflate_alloc_compressor(1))) goto done;
  const size_t cap = libdeflate_gzip_compress_bound(c, off + nbytes);
  if (!(cbuf = malloc(cap))) goto done;
  const size_t n = libdeflate_gzip_compress(c, buf, off + nbytes, cbuf, cap);
  free(buf);
  buf = NULL;
  errno = EIO;
  if (n == 0) goto done;
  int fd = open(tmp, O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) goto done;
  size_t w = 0;
  while (w < n) {
    ssize_t r = write(fd, cbuf + w, n - w);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    w += (size_t)r;
  }
  const int e = errno;
  ok = close(fd) == 0 && w == n;
  if (!ok && w < n) errno = e ? e : EIO;
done:
  libdeflate_free_compressor(c);
  free(buf);
  free(cbuf);
  return ok;
}
#endif

ndf_status ndfio_nifti_write(const char *path, const ndf_array *a, const ndfio_image *header_from,
                             char *err, size_t errlen) {
  char *tmp;
  ndf_status s = ndfio__nifti_write_tmp(path, a, header_from, &tmp, err, errlen);
  return s == NDF_OK ? ndfio__tmp_finish(tmp, path, 1, err, errlen) : s;
}

ndf_status ndfio__nifti_write_tmp(const char *path, const ndf_array *a, const ndfio_image *header_from,
                                  char **tmpout, char *err, size_t errlen) {
  int64_t nelem;
  *tmpout = NULL;
  if (!path) {
    ndfio__err(err, errlen, "ndfio_nifti_write: no path given");
    return NDF_EINVAL;
  }
  ndf_status s = ndfio__check_host_array(path, a, &nelem, err, errlen);
  if (s != NDF_OK) return s;
  if (a->ndim < 1 || a->ndim > 7) {
    ndfio__err(err, errlen, "cannot write '%s': NIfTI-1 holds 1 to 7 dimensions, not %d", path,
               a->ndim);
    return NDF_EINVAL;
  }
  for (int i = 0; i < a->ndim; i++) {
    if (a->shape[i] < 1 || a->shape[i] > 32767) {
      ndfio__err(err, errlen, "cannot write '%s': NIfTI-1 dimensions are 1..32767, not %lld",
                 path, (long long)a->shape[i]);
      return NDF_EINVAL;
    }
  }
  quiet();
  const nifti_image *src = header_from ? (const nifti_image *)header_from->nifti : NULL;
  nifti_image *nim;
  if (src) {
    nim = nifti_copy_nim_info(src);
  } else {
    int dims[8] = {a->ndim, 1, 1, 1, 1, 1, 1, 1};
    for (int i = 0; i < a->ndim; i++) dims[i + 1] = (int)a->shape[i];
    nim = nifti_make_new_nim(dims, DT_UINT8, 0);
  }
  if (!nim) {
    ndfio__err(err, errlen, "cannot write '%s': out of memory", path);
    return NDF_ENOMEM;
  }
  char *tmp = NULL;
  znzFile fp = NULL;
  if (shape_header(nim, a) != NDF_OK || !nifti_nim_is_valid(nim, 0)) {
    s = NDF_EINVAL;
    ndfio__err(err, errlen, "cannot write '%s': cannot make a valid NIfTI-1 header", path);
    goto done;
  }
  if (src && nim->datatype != src->datatype) {
    /* Another datatype (a binary mask, labels): the values are no longer the
     * input's intensities, so its intensity scaling no longer applies. */
    nim->scl_slope = 0.0f;
    nim->scl_inter = 0.0f;
    nim->cal_min = nim->cal_max = 0.0f;
  }
  if ((s = ndfio__tmp_create(path, &tmp, NULL, err, errlen)) != NDF_OK) goto done;
  free(nim->fname);
  free(nim->iname);
  nim->fname = nifti_strdup(tmp);
  nim->iname = nifti_strdup(tmp);
  if (!nim->fname || !nim->iname) {
    s = NDF_ENOMEM;
    ndfio__err(err, errlen, "cannot write '%s': out of memory", path);
    goto done;
  }
#ifdef NDF_HAVE_LIBDEFLATE
  if (nifti_is_gzfile(nim->fname)) {
    if (!deflate_whole(tmp, nim, a, nelem)) {
      const int e = errno;
      s = e == ENOMEM ? NDF_ENOMEM : NDF_EIO;
      ndfio__err(err, errlen, "cannot write '%s': %s", path, e ? strerror(e) : "write error");
      goto done;
    }
    s = NDF_OK;
    *tmpout = tmp;
    tmp = NULL;
    goto done;
  }
#endif
  /* Header and extensions, then the file is left open at the data offset. */
  /* gzip level 1 for .nii.gz: several times faster than zlib's default level, files a little larger */
  fp = nifti_image_write_hdr_img2(nim, 2, nifti_is_gzfile(nim->fname) ? "wb1" : "wb", NULL, NULL);
  s = NDF_EIO;
  if (znz_isnull(fp)) {
    ndfio__err(err, errlen, "cannot write '%s': cannot write the NIfTI header", path);
    goto done;
  }
  errno = 0;
  int ok = write_fortran(fp, a, nelem);
  int e = errno;
  if (znzclose(fp) != 0) ok = 0;
  if (!ok) {
    ndfio__err(err, errlen, "cannot write '%s': %s", path, e ? strerror(e) : "write error");
    goto done;
  }
  s = NDF_OK;
  *tmpout = tmp;
  tmp = NULL;
done:
  ndfio__tmp_finish(tmp, path, 0, NULL, 0);
  nifti_image_free(nim);
  return s;
}
