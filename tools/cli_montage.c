/*
 * cli_montage.c -- the PNG montage of `ndforge preprocess`: three orthogonal
 * slices of a volume, its mask's outline, an SSIM heat map (cli_montage.h).
 * This file uses only the public API of ndforge and libpng.
 */
#include "cli_montage.h"
#include "cli.h"

#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { GAP = 4 };

static double at(const ndf_array *a, int64_t i, int64_t j, int64_t k) {
  return ndfio_get_f64(a, i * a->strides[0] + j * a->strides[1] + k * a->strides[2]);
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The 1st and 99th percentiles of up to 200000 evenly spaced finite voxels. */
static void grey_range(const ndf_array *img, double *lo, double *hi) {
  const int64_t n = img->shape[0] * img->shape[1] * img->shape[2];
  const int64_t step = n > 200000 ? n / 200000 : 1;
  double *v = malloc(sizeof(double) * (size_t)(n / step + 1));
  int64_t m = 0;
  for (int64_t e = 0; v && e < n; e += step) {
    const int64_t k = e % img->shape[2], j = (e / img->shape[2]) % img->shape[1], i = e / img->shape[2] / img->shape[1];
    const double x = at(img, i, j, k);
    if (isfinite(x)) v[m++] = x;
  }
  *lo = 0;
  *hi = 1;
  if (m > 0) {
    qsort(v, (size_t)m, sizeof *v, cmp_double);
    *lo = v[(int64_t)(0.01 * (double)(m - 1))];
    *hi = v[(int64_t)(0.99 * (double)(m - 1))];
    if (!(*hi > *lo)) {
      *lo = v[0];
      *hi = v[m - 1] > v[0] ? v[m - 1] : v[0] + 1;
    }
  }
  free(v);
}

/* A panel: pixel (r, c) shows voxel vox(r, c); the panel's axes in the volume. */
typedef struct panel {
  int w, h;
  int fixed_axis;   /* the axis held at its centre */
  int col_axis;     /* the axis along columns (increasing to the right) */
  int row_axis;     /* the axis along rows (increasing upwards) */
} panel;

static void voxel_of(const ndf_array *img, const panel *p, int r, int c, int64_t v[3]) {
  v[p->fixed_axis] = img->shape[p->fixed_axis] / 2;
  v[p->col_axis] = c;
  v[p->row_axis] = p->h - 1 - r;
}

static void heat(double s, unsigned char *px) {
  if (!(s > 0)) s = 0;
  if (s > 1) s = 1;
  /* blue -> cyan -> yellow -> red */
  const double r = fmin(1, fmax(0, 2 * s - 0.5 > 0 ? 2 * s - 0.5 : 0));
  const double g = fmin(1, fmax(0, 1.5 - fabs(4 * s - 2)));
  const double b = fmin(1, fmax(0, 1.5 - 2 * s));
  px[0] = (unsigned char)lround(255 * r);
  px[1] = (unsigned char)lround(255 * g);
  px[2] = (unsigned char)lround(255 * b);
}

static int in_mask(const ndf_array *mask, const int64_t v[3]) {
  for (int d = 0; d < 3; d++)
    if (v[d] < 0 || v[d] >= mask->shape[d]) return 0;
  return at(mask, v[0], v[1], v[2]) != 0;
}

int ndf_montage_write(const char *path, const ndf_array *img, const ndf_array *mask, const ndf_array *ssim,
                      char *err, size_t errlen) {
  if (img->ndim != 3 || img->device != NDF_DEVICE_CPU) {
    snprintf(err, errlen, "montage '%s': expected a 3-D host volume", path);
    return -1;
  }
  const int64_t nx = img->shape[0], ny = img->shape[1], nz = img->shape[2];
  if (nx < 1 || ny < 1 || nz < 1 || nx > 65536 || ny > 65536 || nz > 65536) {
    snprintf(err, errlen, "montage '%s': a %lldx%lldx%lld volume cannot be shown", path, (long long)nx,
             (long long)ny, (long long)nz);
    return -1;
  }
  panel pn[4] = {{(int)nx, (int)ny, 2, 0, 1}, {(int)nx, (int)nz, 1, 0, 2}, {(int)ny, (int)nz, 0, 1, 2},
                 {(int)nx, (int)ny, 2, 0, 1}};
  const int np = ssim ? 4 : 3;
  int W = 0, H = 0;
  for (int i = 0; i < np; i++) {
    W += pn[i].w + (i ? GAP : 0);
    if (pn[i].h > H) H = pn[i].h;
  }
  unsigned char *rgb = calloc((size_t)W * (size_t)H * 3, 1);
  png_bytep *rows = malloc(sizeof(png_bytep) * (size_t)H);
  if (!rgb || !rows) {
    free(rgb);
    free(rows);
    snprintf(err, errlen, "montage '%s': out of memory", path);
    return -1;
  }
  double lo, hi;
  grey_range(img, &lo, &hi);
  int x0 = 0;
  for (int i = 0; i < np; i++) {
    const panel *p = &pn[i];
    const int y0 = H - p->h; /* panels sit on the bottom edge */
    for (int r = 0; r < p->h; r++)
      for (int c = 0; c < p->w; c++) {
        int64_t v[3];
        voxel_of(img, p, r, c, v);
        unsigned char *px = rgb + 3 * ((size_t)(y0 + r) * (size_t)W + (size_t)(x0 + c));
        if (i == 3) {
          heat(at(ssim, v[0], v[1], v[2]), px);
          continue;
        }
        double g = (at(img, v[0], v[1], v[2]) - lo) / (hi - lo);
        g = isfinite(g) ? fmin(1, fmax(0, g)) : 0;
        px[0] = px[1] = px[2] = (unsigned char)lround(255 * g);
        if (mask && in_mask(mask, v)) {
          /* the outline: a mask voxel with an in-plane neighbour outside */
          int edge = 0;
          for (int k = 0; k < 4 && !edge; k++) {
            int64_t u[3] = {v[0], v[1], v[2]};
            u[k < 2 ? p->col_axis : p->row_axis] += (k & 1) ? 1 : -1;
            edge = !in_mask(mask, u);
          }
          if (edge) {
            px[0] = 255;
            px[1] = 40;
            px[2] = 40;
          }
        }
      }
    x0 += p->w + GAP;
  }
  for (int r = 0; r < H; r++) rows[r] = rgb + 3 * (size_t)r * (size_t)W;

  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "wb");
  int ok = 0;
  png_structp png = NULL;
  png_infop info = NULL;
  if (f) png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  if (png) info = png_create_info_struct(png);
  if (info && !setjmp(png_jmpbuf(png))) {
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)W, (png_uint_32)H, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    png_write_image(png, rows);
    png_write_end(png, NULL);
    ok = 1;
  }
  if (png) png_destroy_write_struct(&png, info ? &info : NULL);
  if (f && fclose(f) != 0) ok = 0;
  if (ok && rename(tmp, path) != 0) ok = 0;
  if (!ok) {
    if (f) remove(tmp);
    snprintf(err, errlen, "cannot write the montage '%s'", path);
  }
  free(rgb);
  free(rows);
  return ok ? 0 : -1;
}
