/*
 * bet_masks.c -- the brain-mask helpers: weighted voting of several masks
 * (ndf_mask_fusion) and the clean-up composition (ndf_mask_clean).  The
 * clean-up uses only the public API: binary opening, label, fill holes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The checks of a mask output against its input: bool/uint8, same shape, host, no overlap. */
static ndf_status check_mask_out(ndf_ctx *ctx, const char *name, const ndf_array *in, const ndf_array *out) {
  ndf_status s = ndf__check_array(ctx, name, "output", out, NULL);
  if (s != NDF_OK) return s;
  if (out->dtype != NDF_BOOL && out->dtype != NDF_UINT8)
    return ndf__argerror(ctx, name, "output", "dtype %s (bool or uint8)", ndf_dtype_name(out->dtype));
  if (out->ndim != in->ndim || memcmp(out->shape, in->shape, sizeof(int64_t) * (size_t)in->ndim) != 0)
    return ndf__argerror(ctx, name, "output", "its shape differs from the input's");
  if (out->device != NDF_DEVICE_CPU) return ndf__argerror(ctx, name, "output", "not a host array");
  if (!ndf__layout_is_proper(out)) return ndf__argerror(ctx, name, "output", "elements overlap");
  if (ndf__arrays_overlap(in, out)) return ndf__argerror(ctx, name, "output", "overlaps an input");
  return NDF_OK;
}

ndf_status ndf_mask_fusion(ndf_ctx *ctx, const ndf_array *const *masks, int n, const double *weights,
                           double threshold, ndf_array *output) {
  static const char *name = "ndf_mask_fusion";
  ndf_status s;
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  if (!masks) return ndf__argerror(ctx, name, "masks", "NULL");
  if (n < 1) return ndf__argerror(ctx, name, "n", "%d (at least one mask)", n);
  if (!(threshold >= 0 && threshold < 1)) return ndf__argerror(ctx, name, "threshold", "%g is outside [0, 1)", threshold);
  double total = 0;
  for (int i = 0; i < n; i++) {
    char arg[32];
    snprintf(arg, sizeof arg, "masks[%d]", i);
    if ((s = ndf__check_array(ctx, name, arg, masks[i], NULL)) != NDF_OK) return s;
    if (masks[i]->device != NDF_DEVICE_CPU) return ndf__argerror(ctx, name, arg, "not a host array");
    if (masks[i]->ndim != masks[0]->ndim ||
        memcmp(masks[i]->shape, masks[0]->shape, sizeof(int64_t) * (size_t)masks[0]->ndim) != 0)
      return ndf__argerror(ctx, name, arg, "its shape differs from masks[0]'s");
    if ((s = check_mask_out(ctx, name, masks[i], output)) != NDF_OK) return s;
    const double w = weights ? weights[i] : 1.0;
    if (!(w >= 0) || !isfinite(w)) return ndf__argerror(ctx, name, "weights", "weights[%d]=%g (>= 0 and finite)", i, w);
    total += w;
  }
  if (!(total > 0)) return ndf__argerror(ctx, name, "weights", "their sum is 0");
  ndf__clear_error(ctx);
  const double need = threshold * total;
  const int64_t count = ndf_array_size(masks[0]);
  for (int64_t k = 0; k < count; k++) {
    double vote = 0;
    for (int i = 0; i < n; i++)
      if (ndf__get_nonzero(masks[i], ndf__offset_of(masks[i], k))) vote += weights ? weights[i] : 1.0;
    ((uint8_t *)output->data)[ndf__offset_of(output, k)] = vote > need;
  }
  return NDF_OK;
}

void ndf_mask_clean_options_init(ndf_mask_clean_options *opt) {
  if (!opt) return;
  opt->opening_radius = 1;
  opt->largest_component = 1;
  opt->fill_holes = 1;
  opt->connectivity = 1;
}

ndf_status ndf_mask_clean(ndf_ctx *ctx, const ndf_array *input, ndf_array *output, const ndf_mask_clean_options *opt) {
  static const char *name = "ndf_mask_clean";
  ndf_status s;
  if (!ctx) return ndf__error(NULL, NDF_EINVAL, "%s: bad argument 'ctx' (NULL)", name);
  if ((s = ndf__check_array(ctx, name, "input", input, NULL)) != NDF_OK) return s;
  if (!opt) return ndf__argerror(ctx, name, "opt", "NULL");
  if (input->device != NDF_DEVICE_CPU) return ndf__argerror(ctx, name, "input", "not a host array");
  if (input->ndim < 1 || input->ndim > NDF_MAX_SPATIAL)
    return ndf__argerror(ctx, name, "input", "rank %d (1..%d)", input->ndim, NDF_MAX_SPATIAL);
  if ((s = check_mask_out(ctx, name, input, output)) != NDF_OK) return s;
  const int rank = input->ndim;
  if (opt->opening_radius < 0 || opt->opening_radius > 64)
    return ndf__argerror(ctx, name, "opening_radius", "%d is outside [0, 64]", opt->opening_radius);
  if (opt->connectivity < 1 || opt->connectivity > rank)
    return ndf__argerror(ctx, name, "connectivity", "%d is outside [1, %d]", opt->connectivity, rank);
  int64_t ball_n = 1, ball_shape[NDF_MAX_SPATIAL];
  const int r = opt->opening_radius;
  for (int d = 0; d < rank; d++) {
    ball_shape[d] = 2 * r + 1;
    if (!ndf__mul(ball_n, 2 * r + 1, &ball_n) || ball_n > NDF_MAX_STRUCTURE_ELEMENTS)
      return ndf__argerror(ctx, name, "opening_radius", "a ball of radius %d in %d dimensions is too large", r, rank);
  }
  const int64_t n = ndf_array_size(input);
  if ((s = ndf__check_host_memory(ctx, name, "the scratch masks", 6 * n + ball_n)) != NDF_OK) return s;
  ndf__clear_error(ctx);

  uint8_t *a = malloc((size_t)(n > 0 ? n : 1)), *b = malloc((size_t)(n > 0 ? n : 1)), *ball = malloc((size_t)ball_n);
  int32_t *lab = malloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
  int64_t *sizes = NULL;
  if (!a || !b || !ball || !lab) {
    s = ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
    goto done;
  }
  for (int64_t k = 0; k < n; k++) a[k] = (uint8_t)ndf__get_nonzero(input, ndf__offset_of(input, k));
  ndf_array A, B, L;
  ndf_array_init(&A, a, NDF_DEVICE_CPU, NDF_BOOL, rank, input->shape);
  ndf_array_init(&B, b, NDF_DEVICE_CPU, NDF_BOOL, rank, input->shape);
  ndf_array_init(&L, lab, NDF_DEVICE_CPU, NDF_INT32, rank, input->shape);
  /* 1. opening with the ball */
  if (r > 0) {
    ndf_array S;
    ndf_array_init(&S, ball, NDF_DEVICE_CPU, NDF_BOOL, rank, ball_shape);
    for (int64_t k = 0; k < ball_n; k++) {
      int64_t q = k, r2 = 0;
      for (int d = rank - 1; d >= 0; d--) {
        const int64_t c = q % (2 * r + 1) - r;
        q /= 2 * r + 1;
        r2 += c * c;
      }
      ball[k] = r2 <= (int64_t)r * r;
    }
    ndf_binary_options bo;
    ndf_binary_options_init(&bo);
    bo.structure = &S;
    if ((s = ndf_binary_opening(ctx, &A, &B, &bo)) != NDF_OK) goto done;
    memcpy(a, b, (size_t)n);
  }
  /* 2. the largest component (the first in label order among equals) */
  if (opt->largest_component) {
    uint8_t st[6561]; /* 3^8 */
    int64_t st_shape[NDF_MAX_SPATIAL], nf = 0;
    for (int d = 0; d < rank; d++) st_shape[d] = 3;
    ndf_array S;
    ndf_array_init(&S, st, NDF_DEVICE_CPU, NDF_BOOL, rank, st_shape);
    if ((s = ndf_generate_binary_structure(rank, opt->connectivity, &S)) != NDF_OK) goto done;
    if ((s = ndf_label(ctx, &A, &L, &S, 0, &nf)) != NDF_OK) goto done;
    if (nf > 1) {
      if (!(sizes = calloc((size_t)nf + 1, sizeof(int64_t)))) {
        s = ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
        goto done;
      }
      for (int64_t k = 0; k < n; k++) sizes[lab[k]]++;
      int64_t best = 1;
      for (int64_t l = 2; l <= nf; l++)
        if (sizes[l] > sizes[best]) best = l;
      for (int64_t k = 0; k < n; k++) a[k] = lab[k] == best;
    }
  }
  /* 3. the holes filled */
  if (opt->fill_holes) {
    ndf_binary_options bo;
    ndf_binary_options_init(&bo);
    if ((s = ndf_binary_fill_holes(ctx, &A, &B, &bo)) != NDF_OK) goto done;
    memcpy(a, b, (size_t)n);
  }
  for (int64_t k = 0; k < n; k++) ((uint8_t *)output->data)[ndf__offset_of(output, k)] = a[k];
done:
  free(a), free(b), free(ball), free(lab), free(sizes);
  return s;
}
