/*
 * cli_montage.h -- the PNG montage of `ndforge preprocess` (cli_montage.c,
 * libpng).  Internal to the command, not part of libndforge.
 */
#ifndef NDF_CLI_MONTAGE_H
#define NDF_CLI_MONTAGE_H

#include <stddef.h>

#include "ndforge.h"

/*
 * Writes an RGB PNG of a 3-D volume img (float32, host, (x, y, z) in RAS+
 * order as `preprocess` leaves it, any strides): its axial (z), coronal (y)
 * and sagittal (x) slices through the centre side by side, grey from the
 * volume's 1st to 99th percentile, the outline of mask (NULL, or host,
 * shaped like img, non-zero = in) in red, and, when ssim is given (a float32
 * map shaped like img), a fourth panel: its axial slice as a heat map (0
 * blue .. 1 red).  Superior and anterior are up.  0, or -1 with the reason
 * in err.  The file is written under a temporary name and renamed.
 */
int ndf_montage_write(const char *path, const ndf_array *img, const ndf_array *mask, const ndf_array *ssim,
                      char *err, size_t errlen);

#endif
