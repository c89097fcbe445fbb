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

typedef enum { NDFIO_NPY = 1, NDFIO_NIFTI = 2 } ndfio_format;

/* Format from a file name: .npy -> NPY, .nii / .nii.gz -> NIFTI; 0 if unknown. */
ndfio_format ndfio_format_of(const char *path);

/* Reads path into *img.  On failure returns NDF_EIO/NDF_EINVAL/NDF_ENOMEM,
 * leaves *img empty and writes a one-line reason (naming the file) to err. */
ndf_status ndfio_read(const char *path, ndfio_image *img, char *err, size_t errlen);

/* Writes the host array a to path (format from the extension).  For NIfTI,
 * header_from (may be NULL) gives the header to keep; its datatype is set to
 * a's dtype.  Writes a temporary file in the same directory and renames it,
 * so a failed write leaves no (partial) output file. */
ndf_status ndfio_write(const char *path, const ndf_array *a, const ndfio_image *header_from,
                       char *err, size_t errlen);

/* NPY only, in memory-friendly forms used by the tests. */
ndf_status ndfio_npy_read(const char *path, ndfio_image *img, char *err, size_t errlen);
ndf_status ndfio_npy_write(const char *path, const ndf_array *a, char *err, size_t errlen);

void ndfio_image_free(ndfio_image *img);
#endif
