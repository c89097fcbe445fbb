/*
 * ndfio.h -- reading and writing images for the ndforge command and tests:
 * NumPy .npy (every ndforge dtype, C and Fortran order) and NIfTI-1
 * .nii / .nii.gz (through nifti_clib, keeping the header).
 * This file uses only the public API of ndforge.  Internal to the project:
 * not installed, not part of libndforge.
 */
#ifndef NDFIO_H
#define NDFIO_H
#include "ndforge.h"

/* An image read from disk.  arr describes host memory owned by the image
 * (arr.data points into it).  For NIfTI, arr has NIfTI's axis order
 * (x, y, z, ...) with Fortran strides (x fastest), like nibabel, and
 * nifti holds the header (a nifti_image*, data detached). */
typedef struct ndfio_image {
  ndf_array arr;
  void *owned;  /* the memory arr.data points into; freed by ndfio_image_free */
  void *nifti;  /* nifti_image* for NIfTI inputs, else NULL */
} ndfio_image;

typedef enum { NDFIO_NPY = 1, NDFIO_NIFTI = 2, NDFIO_DICOM = 3 } ndfio_format;

/* Format from a file name: .npy -> NPY, .nii / .nii.gz -> NIFTI, .dcm or an
 * existing directory -> DICOM (a series, tools/dicom_io.h; read only where
 * the build has GDCM); 0 if unknown. */
ndfio_format ndfio_format_of(const char *path);

/* Reads path into *img (a DICOM directory or file: its one series, with
 * ndfio_dicom_read's defaults).  On failure returns NDF_EIO/NDF_EINVAL/NDF_ENOMEM,
 * leaves *img empty and writes a one-line reason (naming the file) to err. */
ndf_status ndfio_read(const char *path, ndfio_image *img, char *err, size_t errlen);

/* Writes the host array a to path (format from the extension; DICOM: a
 * series, see ndfio_dicom_write).  For NIfTI,
 * header_from (may be NULL) gives the header to keep; its datatype is set to
 * a's dtype.  Writes a temporary file in the same directory and renames it,
 * so a failed write leaves no (partial) output file. */
ndf_status ndfio_write(const char *path, const ndf_array *a, const ndfio_image *header_from,
                       char *err, size_t errlen);

/* All or nothing: the outputs of one command, each written to a temporary
 * file next to its path (ndfio_stage_write, any format ndfio_write takes),
 * then renamed into place together by ndfio_stage_commit once every one is
 * written; ndfio_stage_abort (or any failed write, after which the caller
 * aborts) removes the temporaries and leaves every path untouched.  Two
 * outputs naming the same path are refused. */
#define NDFIO_STAGE_MAX 4
typedef struct ndfio_stage {
  int n;
  const char *path[NDFIO_STAGE_MAX];
  char *tmp[NDFIO_STAGE_MAX];
} ndfio_stage;
void ndfio_stage_init(ndfio_stage *st);
ndf_status ndfio_stage_write(ndfio_stage *st, const char *path, const ndf_array *a, const ndfio_image *header_from,
                             char *err, size_t errlen);
ndf_status ndfio_stage_commit(ndfio_stage *st, char *err, size_t errlen);
void ndfio_stage_abort(ndfio_stage *st);

/* NPY only, in memory-friendly forms used by the tests. */
ndf_status ndfio_npy_read(const char *path, ndfio_image *img, char *err, size_t errlen);
ndf_status ndfio_npy_write(const char *path, const ndf_array *a, char *err, size_t errlen);

/* NIfTI only (ndfio_read / ndfio_write dispatch here for .nii and .nii.gz).
 * Unlike nifti_image_read, NaN and Inf in float data are kept (as nibabel
 * does). */
ndf_status ndfio_nifti_read(const char *path, ndfio_image *img, char *err, size_t errlen);
ndf_status ndfio_nifti_write(const char *path, const ndf_array *a, const ndfio_image *header_from,
                             char *err, size_t errlen);

/* The voxel spacing of a NIfTI image (pixdim[1..ndim] of its header, in
 * the axis order of img->arr; a value that is not > 0 counts as 1) into
 * spacing[0..img->arr.ndim).  Returns 1 for a NIfTI image, 0 otherwise
 * (spacing untouched). */
int ndfio_nifti_spacing(const ndfio_image *img, double *spacing);

/* Frees what img owns (data and NIfTI header) and clears it.  NULL is a no-op. */
void ndfio_image_free(ndfio_image *img);

/* Element i (an element offset from data, any sign) of dtype t in host
 * memory as a double: a bool as its byte, 64-bit integers rounded to the
 * nearest double; NaN for a dtype ndforge does not have.  Header-only, so
 * that the command, the benchmarks and the tests read elements one way
 * without linking ndfio. */
static inline double ndfio_load_f64(const void *data, ndf_dtype t, int64_t i) {
  switch (t) {
    case NDF_BOOL: case NDF_UINT8: return ((const uint8_t *)data)[i];
    case NDF_INT8: return ((const int8_t *)data)[i];
    case NDF_UINT16: return ((const uint16_t *)data)[i];
    case NDF_INT16: return ((const int16_t *)data)[i];
    case NDF_UINT32: return ((const uint32_t *)data)[i];
    case NDF_INT32: return ((const int32_t *)data)[i];
    case NDF_INT64: return (double)((const int64_t *)data)[i];
    case NDF_UINT64: return (double)((const uint64_t *)data)[i];
    case NDF_FLOAT32: return ((const float *)data)[i];
    case NDF_FLOAT64: return ((const double *)data)[i];
    default: return __builtin_nan("");
  }
}
/* The element at offset off (in elements) of a host array, as ndfio_load_f64 reads it. */
static inline double ndfio_get_f64(const ndf_array *a, int64_t off) { return ndfio_load_f64(a->data, a->dtype, off); }

/* ------------------------------------------------------------------------ */
/* Internal to tools/: helpers npy.c and nifti_io.c share.                    */

/* snprintf into err (when err and errlen are non-zero). */
void ndfio__err(char *err, size_t errlen, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Checks that a can be written: host memory, an ndforge dtype, ndim in
 * [0, NDF_MAX_NDIM], shape >= 0 with a product that fits in int64 and
 * size_t bytes, data non-NULL unless empty.  *nelem gets the product. */
ndf_status ndfio__check_host_array(const char *path, const ndf_array *a, int64_t *nelem,
                                   char *err, size_t errlen);

/* 1 if a's elements are dense in C order (fortran == 0) or Fortran order,
 * so that its data can be written as one block. */
int ndfio__is_dense(const ndf_array *a, int fortran);

/* Walks the elements of a host array (any strides) in C order (last axis
 * fastest) or Fortran order (first axis fastest), copying them out in
 * chunks: ndfio__gather returns how many elements it wrote to dst (at most
 * max_elems; 0 when done). */
typedef struct ndfio__iter {
  const ndf_array *a;
  size_t esz;
  int fortran;
  int64_t idx[NDF_MAX_NDIM];
  int64_t left;  /* elements not yet gathered */
} ndfio__iter;
void ndfio__iter_init(ndfio__iter *it, const ndf_array *a, int fortran);
size_t ndfio__gather(ndfio__iter *it, void *dst, size_t max_elems);

/* Writes a's nelem elements in C (fortran = 0) or Fortran order through put,
 * in chunks; returns 1 when every put returned 1. */
int ndfio__write_elems(const ndf_array *a, int64_t nelem, int fortran,
                       int (*put)(const void *buf, size_t bytes, void *ud), void *ud);

/* Opens path for reading without waiting (a FIFO is refused, not waited
 * on): a descriptor to a regular file (blocking again) with its stat in *st,
 * or -1 with the reason in err. */
struct stat;
int ndfio__open_regular(const char *path, struct stat *st, char *err, size_t errlen);

/* The writers' first half: a's file written to a temporary name next to
 * path (*tmp, malloc'ed), not yet renamed (see ndfio__tmp_finish). */
ndf_status ndfio__npy_write_tmp(const char *path, const ndf_array *a, char **tmp, char *err, size_t errlen);
ndf_status ndfio__nifti_write_tmp(const char *path, const ndf_array *a, const ndfio_image *header_from, char **tmp,
                                  char *err, size_t errlen);

/* Creates a new, empty temporary file next to path whose name keeps path's
 * extension (".npy", ".nii.gz" ...), e.g. "dir/.out.ndftmp-123-0.nii.gz",
 * within the directory's name limit (a long stem is shortened).
 * *tmp (malloc'ed) gets its name and *fd an open descriptor (or pass fd NULL
 * to have it closed).  On failure *tmp is NULL and err names path. */
ndf_status ndfio__tmp_create(const char *path, char **tmp, int *fd, char *err, size_t errlen);
/* Renames tmp onto path (ok != 0) or removes it (ok == 0), then frees tmp.
 * Returns NDF_EIO when the rename fails (tmp is removed then too). */
ndf_status ndfio__tmp_finish(char *tmp, const char *path, int ok, char *err, size_t errlen);
#endif
