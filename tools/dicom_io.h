/*
 * dicom_io.h -- DICOM series in and out for the ndforge command, through
 * GDCM (tools/dicom_io.cpp, C++ behind a C API).  Built when CMake finds
 * GDCM (NDF_DICOM); ndfio_read and `ndforge convert` use it.  Internal to
 * the project: not installed, not part of libndforge.
 *
 * Reading: the files of one series become one volume, in NIfTI's axis order
 * (x = columns, y = rows, z = slices; Fortran strides, as ndfio_nifti_read
 * gives) with a NIfTI-1 header (img->nifti) whose sform and qform (code 1,
 * scanner) map voxels to RAS+ millimetres, as nibabel's DICOM wrappers and
 * dcm2niix (without its y flip) do:
 *
 *   - slices are ordered by ImagePositionPatient projected on the slice
 *     normal n = r x c (r, c: ImageOrientationPatient's row and column
 *     cosines), ascending;
 *   - in DICOM's LPS world, voxel (i, j, k) lies at
 *       P0 + i * dc * r + j * dr * c + k * (Plast - P0) / (nslices - 1)
 *     (P0, Plast: the first and last slice's position; dr, dc: PixelSpacing's
 *     row and column spacing; one slice: k * SliceThickness * n, or
 *     SpacingBetweenSlices when given); NIfTI's RAS world negates x and y;
 *   - RescaleSlope / RescaleIntercept are applied (CT in Hounsfield units;
 *     a slope of 0 counts as 1).
 *     The dtype: without rescaling (slope 1 and intercept 0, or absent) the
 *     stored type, the smallest of uint8/int8/uint16/int16/uint32/int32 that
 *     holds BitsStored bits of PixelRepresentation's sign; with integral
 *     slopes and intercepts whose results all fit in int16 (over the values
 *     present), int16; otherwise float32 (the value computed in double, then
 *     rounded).
 *
 * Refused, with the file names in the message: no DICOM image among the
 * inputs; several series without a choice (the message lists each
 * SeriesInstanceUID with its number, description and file count); slices of
 * one series that differ in ImageOrientationPatient, PixelSpacing, Rows,
 * Columns, bits or samples per pixel; two slices at one position; a missing
 * slice or an uneven gap (a gap differing from the median gap by more than
 * gap_tolerance times it); colour images; a multi-frame file among other
 * files of its series.  A multi-frame file (NumberOfFrames > 1, e.g.
 * enhanced MR/CT) is a series of its frames: each frame's position,
 * orientation, pixel spacing and rescaling from its per-frame functional
 * groups, else the shared ones, else the file's top level; the same rules
 * then apply.  Files that are not DICOM images (DICOMDIR, other files) in a
 * directory are skipped; subdirectories are not read.
 */
#ifndef NDF_DICOM_IO_H
#define NDF_DICOM_IO_H
#include "ndfio.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ndfio_dicom_opts {
  /* The series to read: a SeriesInstanceUID, or its 1-based index in the
   * listing (ordered by SeriesNumber, then UID); NULL: the only one. */
  const char *series;
  /* Largest difference of a slice gap from the median gap, as a fraction
   * of the median gap; < 0 means the default, 0.01. */
  double gap_tolerance;
} ndfio_dicom_opts;

/* Reads one series from paths[0..npaths) (one directory, or files) into
 * *img (a NIfTI-like image, see above).  o may be NULL (defaults).  On
 * failure returns NDF_EIO / NDF_EINVAL / NDF_ENOMEM, leaves *img empty and
 * writes the reason, one line, to err. */
ndf_status ndfio_dicom_read(const char *const *paths, int npaths, const ndfio_dicom_opts *o, ndfio_image *img,
                            char *err, size_t errlen);

/* Writes the 3-D image img (with a NIfTI header: its sform when
 * sform_code > 0, else its qform, which nifti_clib makes from pixdim when
 * qform_code is 0; without one, the identity) as a DICOM series of MR Image Storage files
 * dir/IM00001.dcm ... (one per z slice), so that ndfio_dicom_read gives the
 * same voxels and affine back (for an affine of negative determinant, z
 * comes back reversed with the affine to match: DICOM readers order slices
 * along r x c).  The in-plane axes must be orthogonal.  uint8, int8,
 * uint16 and int16 are stored as they are, and so are other dtypes whose
 * values are all integers within uint16 or int16, with the header's
 * scl_slope / scl_inter (when not 0, or 1 and 0) as RescaleSlope /
 * RescaleIntercept; other values are quantized: their scaled values stored
 * as int16 with a RescaleSlope / RescaleIntercept of their own (*quantized
 * set to 1, else 0; may be NULL).  dir must not exist or be empty; it is
 * written under a temporary name next to it and renamed at the end, so a
 * failure leaves no partial series.  descrip (NULL: the NIfTI header's
 * descrip) becomes the SeriesDescription. */
ndf_status ndfio_dicom_write(const char *dir, const ndfio_image *img, const char *descrip, int *quantized,
                             char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
