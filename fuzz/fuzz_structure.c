/*
 * fuzz_structure.c -- structuring-element normalization through the public
 * API: ndf_generate_binary_structure, ndf_iterate_structure(_shape), and the
 * size / footprint / structure / origin / mode / algorithm handling of grey
 * morphology, the rank filters and binary morphology, each run on a tiny image
 * (CPU backend).
 *
 * The input is decoded into an element (dtype, rank 0..8, extents 0..4,
 * C or reversed strides, values), a tiny image (batch axes + spatial axes,
 * at most 64 elements) and the options; integers come either small or from a
 * table of extremes (INT64_MIN, INT32_MAX, 2^30, ...).  Work is bounded:
 * inputs whose taps x voxels x iterations would be large are skipped.
 *
 * Checked, besides the sanitizers: a failing call returns an error status
 * and leaves its output untouched; generate_binary_structure gives a
 * symmetric element with its centre set.
 */
#include "fuzz_util.h"

#include "ndforge.h"

static ndf_ctx *ctx;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  ndf_ctx_options o;
  ndf_ctx_options_init(&o);
  o.backend = NDF_BACKEND_CPU;
  o.cache_disable = 1;
  o.cpu_threads = 1;
  if (ndf_ctx_create(&ctx, &o) != NDF_OK) {
    fprintf(stderr, "fuzz_structure: %s\n", ndf_last_error());
    abort();
  }
  return 0;
}

enum { POISON = 0xA5, MAX_ELEMS = 256, MAX_VOXELS = 64, WORK_LIMIT = 1 << 14 };

static const int64_t extremes[] = {0, -1, 1, 2, 3, INT64_MIN, INT64_MAX, INT32_MIN, INT32_MAX, -INT32_MAX,
                                   (int64_t)1 << 31, (int64_t)1 << 30, ((int64_t)1 << 30) + 1, (int64_t)1 << 26,
                                   (int64_t)1 << 32, (int64_t)1 << 62, -((int64_t)1 << 62), 46341};
#define NEXTREMES (sizeof extremes / sizeof extremes[0])

/* A small signed value (-32..31), or one of the extremes. */
static int64_t fuzz_int(fuzz_in *in) {
  uint8_t b = fuzz_u8(in);
  if (b & 0x80) return extremes[(b & 0x7f) % NEXTREMES];
  return (int64_t)(b & 0x3f) - 32;
}

static const ndf_dtype dtypes[] = {NDF_BOOL,  NDF_UINT8, NDF_INT8,    NDF_UINT16, NDF_INT16,
                                   NDF_UINT32, NDF_INT32, NDF_FLOAT32, NDF_FLOAT64};
#define NDTYPES (sizeof dtypes / sizeof dtypes[0])

/* An array whose geometry and values come from the input; *buf owns the data. */
static void fuzz_array(fuzz_in *in, ndf_array *a, void **buf, int ndim, int64_t max_elems, int allow_empty) {
  memset(a, 0, sizeof *a);
  ndf_dtype t = dtypes[fuzz_u8(in) % NDTYPES];
  int64_t shape[NDF_MAX_NDIM], n = 1;
  for (int d = 0; d < ndim; d++) {
    shape[d] = fuzz_u8(in) % (allow_empty ? 5 : 4) + (allow_empty ? 0 : 1);
    if (n * (shape[d] ? shape[d] : 1) > max_elems) shape[d] = 1;
    n *= shape[d];
  }
  ndf_array_init(a, NULL, NDF_DEVICE_CPU, t, ndim, shape);
  size_t esz = ndf_dtype_size(t);
  *buf = malloc((size_t)(n > 0 ? n : 1) * esz);
  unsigned char *p = *buf;
  for (int64_t i = 0; i < n * (int64_t)esz; i++) p[i] = fuzz_u8(in);
  if (t == NDF_BOOL)
    for (int64_t i = 0; i < n; i++) p[i] &= 1;
  a->data = *buf;
  if (ndim > 0 && n > 0 && (fuzz_u8(in) & 1)) { /* the same elements seen backwards along axis 0 */
    a->data = p + (shape[0] - 1) * a->strides[0] * (int64_t)esz;
    a->strides[0] = -a->strides[0];
  }
}

static int64_t saturating_mul(int64_t a, int64_t b) {
  if (a <= 0 || b <= 0) return 0;
  return a > INT64_MAX / b ? INT64_MAX : a * b;
}

/* An output like in (dtype t), filled with POISON. */
static void *poisoned_like(const ndf_array *in, ndf_dtype t, ndf_array *out) {
  int64_t n = ndf_array_size(in);
  size_t bytes = (size_t)(n > 0 ? n : 1) * ndf_dtype_size(t);
  void *b = malloc(bytes);
  memset(b, POISON, bytes);
  ndf_array_init(out, b, NDF_DEVICE_CPU, t, in->ndim, in->shape);
  return b;
}

static void check_untouched(ndf_status s, const void *b, const ndf_array *out, const char *what) {
  if (s == NDF_OK) return;
  FUZZ_CHECK(s == NDF_EINVAL || s == NDF_ENOTSUP || s == NDF_ENOMEM, "%s: status %d", what, (int)s);
  const unsigned char *p = b;
  int64_t n = ndf_array_size(out) * (int64_t)ndf_dtype_size(out->dtype);
  for (int64_t i = 0; i < n; i++)
    FUZZ_CHECK(p[i] == POISON, "%s failed (%s) but wrote its output", what, ndf_errmsg(ctx));
}

static void fuzz_generate(fuzz_in *in) {
  int rank = (int)(int8_t)fuzz_u8(in) % 10;
  int conn = (int)fuzz_int(in);
  ndf_dtype t = fuzz_u8(in) & 1 ? NDF_BOOL : NDF_UINT8;
  uint8_t buf[6561 + 1];
  int64_t shape[NDF_MAX_NDIM];
  int ndim = rank >= 1 && rank <= NDF_MAX_SPATIAL ? rank : 1;
  for (int d = 0; d < ndim; d++) shape[d] = 3;
  if (fuzz_u8(in) == 0xff) shape[0] = 2; /* a wrong shape */
  ndf_array out;
  ndf_array_init(&out, buf, NDF_DEVICE_CPU, t, ndim, shape);
  int64_t n = ndf_array_size(&out);
  memset(buf, POISON, sizeof buf);
  ndf_status s = ndf_generate_binary_structure(rank, conn, &out);
  if (s != NDF_OK) {
    for (int64_t i = 0; i < n; i++) FUZZ_CHECK(buf[i] == POISON, "generate_binary_structure wrote on failure");
    return;
  }
  FUZZ_CHECK(buf[n / 2] == 1, "centre of generate_binary_structure(%d, %d) is %u", rank, conn, buf[n / 2]);
  for (int64_t i = 0; i < n; i++) FUZZ_CHECK(buf[i] <= 1 && buf[i] == buf[n - 1 - i], "not a symmetric 0/1 element");
}

static void fuzz_iterate(fuzz_in *in, const ndf_array *st) {
  int64_t it64 = fuzz_int(in);
  int iterations = it64 < INT32_MIN ? INT32_MIN : it64 > INT32_MAX ? INT32_MAX : (int)it64;
  int norigin = fuzz_u8(in) % (st->ndim + 2);
  int64_t origin[NDF_MAX_NDIM + 1], origin_out[NDF_MAX_NDIM];
  for (int d = 0; d < norigin; d++) origin[d] = fuzz_int(in);
  int64_t shape[NDF_MAX_NDIM];
  if (ndf_iterate_structure_shape(st, iterations, shape) != NDF_OK) return;
  int64_t n = 1;
  for (int d = 0; d < st->ndim; d++) n = saturating_mul(n, shape[d]);
  int64_t ni = iterations < 2 ? 0 : iterations - 1;
  if (n > 4096 || saturating_mul(saturating_mul(ni, n), ndf_array_size(st)) > WORK_LIMIT) return;
  ndf_array out;
  uint8_t *buf = malloc((size_t)n);
  memset(buf, POISON, (size_t)n);
  ndf_array_init(&out, buf, NDF_DEVICE_CPU, NDF_UINT8, st->ndim, shape);
  ndf_status s = ndf_iterate_structure(st, iterations, &out, norigin, origin, origin_out);
  if (s != NDF_OK) {
    for (int64_t i = 0; i < n; i++) FUZZ_CHECK(buf[i] == POISON, "iterate_structure wrote on failure");
  } else {
    for (int64_t i = 0; i < n; i++) FUZZ_CHECK(buf[i] <= 1, "iterate_structure wrote %u", buf[i]);
  }
  free(buf);
}

/* Taps x voxels of a window given by size (nsize values) or by an element. */
static int64_t window_work(const ndf_array *x, int nsp, int nsize, const int64_t *size, const ndf_array *el) {
  int64_t taps = 1;
  for (int d = 0; d < nsp; d++) {
    int64_t e = el ? (d < el->ndim ? el->shape[d] : 1) : nsize ? size[nsize == 1 ? 0 : (d < nsize ? d : 0)] : 1;
    taps = saturating_mul(taps, e > 0 ? e : 1);
  }
  if (taps > (int64_t)1 << 26) return 0; /* refused before any work */
  return saturating_mul(taps, ndf_array_size(x) > 0 ? ndf_array_size(x) : 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_in in = {data, size};
  uint8_t which = fuzz_u8(&in);
  fuzz_generate(&in);

  /* The element: rank 0..8 (0 is invalid), extents 0..4. */
  int srank = fuzz_u8(&in) % (NDF_MAX_SPATIAL + 1);
  ndf_array st;
  void *stbuf;
  fuzz_array(&in, &st, &stbuf, srank, MAX_ELEMS, 1);
  if (which & 1) fuzz_iterate(&in, &st);

  /* The image: batch axes, then as many spatial axes as the element (or not). */
  int batch = fuzz_u8(&in) % 3;
  int nsp = fuzz_u8(&in) & 0x10 ? fuzz_u8(&in) % (NDF_MAX_SPATIAL + 2) : srank;
  int ndim = batch + nsp;
  if (ndim < 1 || ndim > NDF_MAX_NDIM) ndim = 1;
  ndf_array x;
  void *xbuf;
  fuzz_array(&in, &x, &xbuf, ndim, MAX_VOXELS, 0);
  int batch_dims = fuzz_u8(&in) & 0x20 ? (int)fuzz_int(&in) : batch;

  int nsize = fuzz_u8(&in) % (NDF_MAX_SPATIAL + 2);
  int64_t sizes[NDF_MAX_SPATIAL];
  for (int d = 0; d < nsize && d < NDF_MAX_SPATIAL; d++) sizes[d] = fuzz_int(&in);
  if (nsize > NDF_MAX_SPATIAL) nsize = NDF_MAX_SPATIAL;
  int norigin = fuzz_u8(&in) % (NDF_MAX_SPATIAL + 1);
  int64_t origin[NDF_MAX_SPATIAL];
  for (int d = 0; d < norigin; d++) origin[d] = fuzz_int(&in);
  ndf_mode mode = (ndf_mode)(fuzz_u8(&in) % (NDF_MODE_COUNT + 1));
  double cval = (double)fuzz_int(&in);
  if (fuzz_u8(&in) == 0xff) { /* any double, NaN and infinities included */
    uint64_t bits = fuzz_u64(&in);
    memcpy(&cval, &bits, sizeof cval);
  }
  uint8_t use = fuzz_u8(&in); /* bit 0: footprint, bit 1: structure */
  const ndf_array *el = use & 3 ? &st : NULL;
  int nsp_x = ndim - (batch_dims >= 0 && batch_dims < ndim ? batch_dims : 0);
  int64_t work = window_work(&x, nsp_x, el ? 0 : nsize, sizes, el);
  /* Binary ops without an element use generate_binary_structure(nsp, 1): 3^nsp. */
  int64_t three[NDF_MAX_SPATIAL] = {3};
  int64_t bwork = el ? work : window_work(&x, nsp_x, 1, three, NULL);
  int iterations = (int)fuzz_int(&in);
  ndf_array out;
  void *obuf;
  ndf_status s;

  if ((which & 2) && work <= WORK_LIMIT) {
    ndf_grey_options g;
    ndf_grey_options_init(&g);
    g.nsize = nsize;
    memcpy(g.size, sizes, sizeof sizes);
    g.footprint = use & 1 ? &st : NULL;
    g.structure = use & 2 ? &st : NULL;
    g.norigin = norigin;
    memcpy(g.origin, origin, sizeof origin);
    g.mode = mode;
    g.cval = cval;
    g.batch_dims = batch_dims;
    g.algorithm = (ndf_grey_algorithm)(fuzz_u8(&in) % (NDF_GREY_ALGORITHM_COUNT + 1));
    obuf = poisoned_like(&x, x.dtype, &out);
    s = (which & 4 ? ndf_grey_dilation : ndf_grey_erosion)(ctx, &x, &out, &g);
    check_untouched(s, obuf, &out, "grey");
    free(obuf);
  }
  if ((which & 8) && work <= WORK_LIMIT) {
    ndf_rank_options r;
    ndf_rank_options_init(&r);
    r.nsize = nsize;
    memcpy(r.size, sizes, sizeof sizes);
    r.footprint = el;
    r.norigin = norigin;
    memcpy(r.origin, origin, sizeof origin);
    r.mode = mode;
    r.cval = cval;
    r.batch_dims = batch_dims;
    r.nan_policy = (ndf_rank_nan_policy)(fuzz_u8(&in) % 3);
    r.algorithm = (ndf_rank_algorithm)(fuzz_u8(&in) % 6);
    obuf = poisoned_like(&x, x.dtype, &out);
    s = ndf_rank_filter(ctx, &x, &out, fuzz_int(&in), &r);
    check_untouched(s, obuf, &out, "rank_filter");
    free(obuf);
  }
  if ((which & 0x10) && bwork <= WORK_LIMIT && iterations <= 16 &&
      saturating_mul(bwork, iterations > 0 ? iterations : 1) <= WORK_LIMIT) {
    ndf_binary_options b;
    ndf_binary_options_init(&b);
    b.structure = el;
    b.iterations = iterations;
    b.border_value = (int)fuzz_int(&in);
    b.norigin = norigin;
    memcpy(b.origin, origin, sizeof origin);
    b.batch_dims = batch_dims;
    obuf = poisoned_like(&x, NDF_BOOL, &out);
    s = (which & 0x20 ? ndf_binary_dilation : ndf_binary_erosion)(ctx, &x, &out, &b);
    check_untouched(s, obuf, &out, "binary");
    free(obuf);
  }
  if ((which & 0x40) && bwork <= WORK_LIMIT) {
    ndf_hit_or_miss_options h;
    ndf_hit_or_miss_options_init(&h);
    h.structure1 = el;
    h.norigin1 = norigin;
    memcpy(h.origin1, origin, sizeof origin);
    h.norigin2 = (int)(fuzz_u8(&in) % (NDF_MAX_SPATIAL + 2)) - 1;
    for (int d = 0; d < h.norigin2; d++) h.origin2[d] = fuzz_int(&in);
    h.batch_dims = batch_dims;
    obuf = poisoned_like(&x, NDF_BOOL, &out);
    s = ndf_binary_hit_or_miss(ctx, &x, &out, &h);
    check_untouched(s, obuf, &out, "hit_or_miss");
    free(obuf);
  }
  free(xbuf);
  free(stbuf);
  return 0;
}
