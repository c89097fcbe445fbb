/*
 * npy.c -- NumPy .npy files (format versions 1.0, 2.0 and 3.0) for the
 * ndforge command and tests, and the helpers both file formats share:
 * messages, strided gathers, temporary output files and the staging that
 * renames a command's outputs into place together.
 * This file uses only the public API of ndforge.
 *
 * A .npy file is a 6-byte magic "\x93NUMPY", a version (major, minor), a
 * little-endian header length (2 bytes in 1.0, 4 bytes in 2.0/3.0), a header
 * that is a Python dict literal such as
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
 * padded with spaces and a newline, and then the raw data.
 */
#define _POSIX_C_SOURCE 200809L
#include "ndfio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_ALIGN 64
/* Chunk of a strided gather before it is written (bytes). */
#define GATHER_CHUNK (1u << 22)

/* ------------------------------------------------------------------------ */
/* Shared helpers                                                            */

void ndfio__err(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || errlen == 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  /* Messages quote bytes from the file (a .npy header's keys and dtype):
   * control characters become '?' so that the message stays one line. */
  for (char *p = err; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
}

static int host_is_little_endian(void) {
  const uint16_t one = 1;
  unsigned char b;
  memcpy(&b, &one, 1);
  return b == 1;
}

/* a * b into *out unless it overflows int64 (a, b >= 0). */
static int mul_ok(int64_t a, int64_t b, int64_t *out) {
  if (a != 0 && b > INT64_MAX / a) return 0;
  *out = a * b;
  return 1;
}


ndf_status ndfio__check_host_array(const char *path, const ndf_array *a, int64_t *nelem,
                                   char *err, size_t errlen) {
  if (!a) {
    ndfio__err(err, errlen, "cannot write '%s': no array given", path);
    return NDF_EINVAL;
  }
  if (a->device != NDF_DEVICE_CPU) {
    ndfio__err(err, errlen, "cannot write '%s': the array is not in host memory", path);
    return NDF_EINVAL;
  }
  size_t esz = ndf_dtype_size(a->dtype);
  if (esz == 0) {
    ndfio__err(err, errlen, "cannot write '%s': unknown dtype %d", path, (int)a->dtype);
    return NDF_EINVAL;
  }
  if (a->ndim < 0 || a->ndim > NDF_MAX_NDIM) {
    ndfio__err(err, errlen, "cannot write '%s': ndim %d is outside [0, %d]", path, a->ndim,
               NDF_MAX_NDIM);
    return NDF_EINVAL;
  }
  /* Every axis must fit even when another is 0, so strides stay in range. */
  int64_t n = 1, nonzero = 1;
  for (int i = 0; i < a->ndim; i++) {
    if (a->shape[i] < 0) {
      ndfio__err(err, errlen, "cannot write '%s': shape[%d]=%lld is negative", path, i,
                 (long long)a->shape[i]);
      return NDF_EINVAL;
    }
    if (a->shape[i] > 0 && !mul_ok(nonzero, a->shape[i], &nonzero)) {
      ndfio__err(err, errlen, "cannot write '%s': the shape overflows", path);
      return NDF_EINVAL;
    }
    n = a->shape[i] == 0 ? 0 : n * a->shape[i];
  }
  int64_t bytes;
  if (!mul_ok(nonzero, (int64_t)esz, &bytes) || (uint64_t)bytes > (uint64_t)SIZE_MAX) {
    ndfio__err(err, errlen, "cannot write '%s': the array is too large", path);
    return NDF_EINVAL;
  }
  if (n > 0 && !a->data) {
    ndfio__err(err, errlen, "cannot write '%s': the array has no data", path);
    return NDF_EINVAL;
  }
  *nelem = n;
  return NDF_OK;
}

void ndfio__iter_init(ndfio__iter *it, const ndf_array *a, int fortran) {
  memset(it, 0, sizeof *it);
  it->a = a;
  it->esz = ndf_dtype_size(a->dtype);
  it->fortran = fortran;
  int64_t n = 1;
  for (int i = 0; i < a->ndim; i++) n *= a->shape[i];
  it->left = n;
}

/* Copies n elements, src_step bytes apart, to consecutive places in dst. */
static void copy_run(char *dst, const char *src, int64_t n, ptrdiff_t src_step, size_t esz) {
  switch (esz) {
  case 1:
    for (int64_t i = 0; i < n; i++) dst[i] = src[i * src_step];
    break;
  case 2:
    for (int64_t i = 0; i < n; i++) memcpy(dst + 2 * i, src + i * src_step, 2);
    break;
  case 4:
    for (int64_t i = 0; i < n; i++) memcpy(dst + 4 * i, src + i * src_step, 4);
    break;
  default:
    for (int64_t i = 0; i < n; i++) memcpy(dst + esz * (size_t)i, src + i * src_step, esz);
    break;
  }
}

size_t ndfio__gather(ndfio__iter *it, void *dst, size_t max_elems) {
  const ndf_array *a = it->a;
  char *out = dst;
  size_t done = 0;
  if (a->ndim == 0) {
    if (it->left > 0 && max_elems > 0) {
      memcpy(out, a->data, it->esz);
      it->left = 0;
      return 1;
    }
    return 0;
  }
  /* The fastest axis is walked in runs; the others count like an odometer. */
  int fast = it->fortran ? 0 : a->ndim - 1;
  while (it->left > 0 && done < max_elems) {
    ptrdiff_t off = 0;
    for (int i = 0; i < a->ndim; i++) off += (ptrdiff_t)(it->idx[i] * a->strides[i]);
    int64_t run = a->shape[fast] - it->idx[fast];
    if ((uint64_t)run > max_elems - done) run = (int64_t)(max_elems - done);
    const char *src = (const char *)a->data + off * (ptrdiff_t)it->esz;
    copy_run(out + done * it->esz, src, run, (ptrdiff_t)(a->strides[fast] * (int64_t)it->esz),
             it->esz);
    done += (size_t)run;
    it->left -= run;
    it->idx[fast] += run;
    if (it->idx[fast] < a->shape[fast]) continue;
    it->idx[fast] = 0;
    for (int k = 1; k < a->ndim; k++) {
      int ax = it->fortran ? k : a->ndim - 1 - k;
      if (++it->idx[ax] < a->shape[ax]) break;
      it->idx[ax] = 0;
    }
  }
  return done;
}

int ndfio__is_dense(const ndf_array *a, int fortran) {
  int64_t expect = 1;
  for (int k = 0; k < a->ndim; k++) {
    int i = fortran ? k : a->ndim - 1 - k;
    if (a->shape[i] == 0) return 1;
    if (a->shape[i] != 1 && a->strides[i] != expect) return 0;
    expect *= a->shape[i];
  }
  return 1;
}

int ndfio__open_regular(const char *path, struct stat *st, char *err, size_t errlen) {
  /* O_NONBLOCK: opening a FIFO for reading would wait for a writer. */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    ndfio__err(err, errlen, "cannot read '%s': %s", path, strerror(errno));
    return -1;
  }
  if (fstat(fd, st) != 0) {
    ndfio__err(err, errlen, "cannot read '%s': %s", path, strerror(errno));
    close(fd);
    return -1;
  }
  if (!S_ISREG(st->st_mode)) {
    ndfio__err(err, errlen, "cannot read '%s': not a regular file", path);
    close(fd);
    return -1;
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
    ndfio__err(err, errlen, "cannot read '%s': %s", path, strerror(errno));
    close(fd);
    return -1;
  }
  return fd;
}

/* The extension ndfio keeps on temporary names: ".nii.gz", else the last
 * ".xyz" of the base name, else "". */
static const char *tmp_ext(const char *base) {
  size_t n = strlen(base);
  if (n > 7 && strcmp(base + n - 7, ".nii.gz") == 0) return base + n - 7;
  const char *dot = strrchr(base, '.');
  return dot && dot != base ? dot : base + n;
}

ndf_status ndfio__tmp_create(const char *path, char **tmp, int *fd, char *err, size_t errlen) {
  static atomic_uint counter;
  *tmp = NULL;
  if (fd) *fd = -1;
  const char *slash = strrchr(path, '/');
  size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;
  const char *base = path + dirlen;
  if (*base == '\0') {
    ndfio__err(err, errlen, "cannot write '%s': not a file name", path);
    return NDF_EINVAL;
  }
  const char *ext = tmp_ext(base);
  size_t stemlen = (size_t)(ext - base);
  size_t cap = strlen(path) + 64;
  char *name = malloc(cap);
  if (!name) {
    ndfio__err(err, errlen, "cannot write '%s': out of memory", path);
    return NDF_ENOMEM;
  }
  /* The temporary name must stay within the directory's name limit: a legal
   * output name leaves no room for the suffix, so the stem is shortened. */
  long name_max = 255;
  if (dirlen) {
    memcpy(name, path, dirlen);
    name[dirlen] = '\0';
  } else {
    strcpy(name, ".");
  }
  long nm = pathconf(name, _PC_NAME_MAX);
  if (nm > 0 && nm < name_max) name_max = nm;
  for (int attempt = 0; attempt < 100; attempt++) {
    unsigned n = atomic_fetch_add(&counter, 1u);
    char suffix[64];
    int slen = snprintf(suffix, sizeof suffix, ".ndftmp-%ld-%u", (long)getpid(), n);
    long room = name_max - 1 - slen - (long)strlen(ext);
    if (room < 0) {
      free(name);
      ndfio__err(err, errlen, "cannot write '%s': its extension leaves no room for a temporary name", path);
      return NDF_EINVAL;
    }
    snprintf(name, cap, "%.*s.%.*s%s%s", (int)dirlen, path, (int)((long)stemlen < room ? (long)stemlen : room), base,
             suffix, ext);
    int f = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (f >= 0) {
      if (fd) *fd = f;
      else if (close(f) != 0) {
        int e = errno;
        unlink(name);
        free(name);
        ndfio__err(err, errlen, "cannot write '%s': %s", path, strerror(e));
        return NDF_EIO;
      }
      *tmp = name;
      return NDF_OK;
    }
    if (errno != EEXIST) {
      int e = errno;
      free(name);
      ndfio__err(err, errlen, "cannot write '%s': %s", path, strerror(e));
      return NDF_EIO;
    }
  }
  free(name);
  ndfio__err(err, errlen, "cannot write '%s': no free temporary file name", path);
  return NDF_EIO;
}

ndf_status ndfio__tmp_finish(char *tmp, const char *path, int ok, char *err, size_t errlen) {
  ndf_status s = NDF_OK;
  if (!tmp) return ok ? NDF_EINTERNAL : NDF_OK;
  if (ok) {
    if (rename(tmp, path) != 0) {
      ndfio__err(err, errlen, "cannot write '%s': %s", path, strerror(errno));
      s = NDF_EIO;
      ok = 0;
    }
  }
  if (!ok) unlink(tmp);
  free(tmp);
  return s;
}

/* ------------------------------------------------------------------------ */
/* Reading                                                                   */

/* The NumPy name of a dtype ndforge does not support, for messages. */
static const char *foreign_dtype_name(char kind, unsigned size) {
  static const struct { char kind; unsigned size; const char *name; } names[] = {
      {'f', 2, "float16"},
      {'f', 16, "float128"}, {'c', 8, "complex64"},   {'c', 16, "complex128"},
      {'c', 32, "complex256"}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (names[i].kind == kind && names[i].size == size) return names[i].name;
  return NULL;
}

#define SUPPORTED_DTYPES "bool, uint8, int8, uint16, int16, uint32, int32, int64, uint64, float32, float64"

/* Maps a descr such as "<f4" to an ndforge dtype. */
static ndf_status parse_descr(const char *path, const char *descr, ndf_dtype *out, char *err,
                              size_t errlen) {
  char order = descr[0];
  char kind = order ? descr[1] : '\0';
  const char *digits = kind ? descr + 2 : "";
  unsigned size = 0;
  int ok = (order == '<' || order == '>' || order == '|' || order == '=') && kind != '\0' &&
           *digits != '\0' && strlen(digits) <= 3;
  for (const char *p = digits; ok && *p; p++) {
    if (*p < '0' || *p > '9') ok = 0;
    else size = size * 10 + (unsigned)(*p - '0');
  }
  static const struct { char kind; unsigned size; ndf_dtype t; } map[] = {
      {'b', 1, NDF_BOOL},   {'u', 1, NDF_UINT8},   {'i', 1, NDF_INT8},
      {'u', 2, NDF_UINT16}, {'i', 2, NDF_INT16},   {'u', 4, NDF_UINT32},
      {'i', 4, NDF_INT32},  {'i', 8, NDF_INT64},   {'u', 8, NDF_UINT64},
      {'f', 4, NDF_FLOAT32}, {'f', 8, NDF_FLOAT64}};
  for (size_t i = 0; ok && i < sizeof map / sizeof map[0]; i++) {
    if (map[i].kind != kind || map[i].size != size) continue;
    if (size > 1 && order == '>') {
      ndfio__err(err, errlen, "cannot read '%s': big-endian dtype '%s' is not supported", path,
                 descr);
      return NDF_EINVAL;
    }
    *out = map[i].t;
    return NDF_OK;
  }
  const char *name = ok ? foreign_dtype_name(kind, size) : NULL;
  ndfio__err(err, errlen, "cannot read '%s': dtype '%s'%s%s%s is not supported (supported: %s)",
             path, descr, name ? " (" : "", name ? name : "", name ? ")" : "", SUPPORTED_DTYPES);
  return NDF_EINVAL;
}

/* A cursor over the header text. */
typedef struct {
  const char *p, *end;
} hcur;

static void skip_ws(hcur *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
    c->p++;
}

static int eat(hcur *c, char ch) {
  skip_ws(c);
  if (c->p < c->end && *c->p == ch) {
    c->p++;
    return 1;
  }
  return 0;
}

/* A quoted string without escapes, into out (cap bytes). */
static int parse_str(hcur *c, char *out, size_t cap) {
  skip_ws(c);
  if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return 0;
  char q = *c->p++;
  size_t n = 0;
  while (c->p < c->end && *c->p != q) {
    if (*c->p == '\\' || *c->p == '\0' || n + 1 >= cap) return 0;
    out[n++] = *c->p++;
  }
  if (c->p >= c->end) return 0;
  c->p++;
  out[n] = '\0';
  return 1;
}

static int parse_word(hcur *c, const char *w) {
  skip_ws(c);
  size_t n = strlen(w);
  if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n) != 0) return 0;
  c->p += n;
  return 1;
}

/* A Python tuple of non-negative integers: "()", "(5,)", "(3, 4)". */
static int parse_shape(hcur *c, int64_t *shape, int *ndim, int *too_many) {
  *ndim = 0;
  *too_many = 0;
  if (!eat(c, '(')) return 0;
  int trailing_comma = 0;
  for (;;) {
    if (eat(c, ')')) break;
    skip_ws(c);
    if (c->p >= c->end || *c->p < '0' || *c->p > '9') return 0;
    int64_t v = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
      int d = *c->p++ - '0';
      if (v > (INT64_MAX - d) / 10) return 0;
      v = v * 10 + d;
    }
    if (c->p < c->end && *c->p == 'L') c->p++; /* written by Python 2 */
    if (*ndim == NDF_MAX_NDIM) {
      *too_many = 1;
      return 0;
    }
    shape[(*ndim)++] = v;
    trailing_comma = eat(c, ',');
    if (!trailing_comma) {
      if (!eat(c, ')')) return 0;
      break;
    }
  }
  /* "(5)" is the integer 5 in Python, not a tuple. */
  return !(*ndim == 1 && !trailing_comma);
}

typedef struct {
  char descr[64];
  int fortran;
  int ndim;
  int64_t shape[NDF_MAX_NDIM];
} npy_header;

static ndf_status parse_header(const char *path, const char *text, size_t len, npy_header *h,
                               char *err, size_t errlen) {
  hcur c = {text, text + len};
  int have_descr = 0, have_fortran = 0, have_shape = 0;
  const char *why = "not a Python dict";
  if (!eat(&c, '{')) goto bad;
  for (;;) {
    if (eat(&c, '}')) break;
    char key[32];
    why = "bad key";
    if (!parse_str(&c, key, sizeof key) || !eat(&c, ':')) goto bad;
    if (strcmp(key, "descr") == 0 && !have_descr) {
      skip_ws(&c);
      if (c.p < c.end && (*c.p == '[' || *c.p == '{')) {
        ndfio__err(err, errlen, "cannot read '%s': structured dtypes are not supported", path);
        return NDF_EINVAL;
      }
      why = "bad 'descr'";
      if (!parse_str(&c, h->descr, sizeof h->descr)) goto bad;
      have_descr = 1;
    } else if (strcmp(key, "fortran_order") == 0 && !have_fortran) {
      if (parse_word(&c, "True")) h->fortran = 1;
      else if (parse_word(&c, "False")) h->fortran = 0;
      else {
        why = "bad 'fortran_order'";
        goto bad;
      }
      have_fortran = 1;
    } else if (strcmp(key, "shape") == 0 && !have_shape) {
      int too_many;
      if (!parse_shape(&c, h->shape, &h->ndim, &too_many)) {
        if (too_many) {
          ndfio__err(err, errlen, "cannot read '%s': more than %d dimensions", path,
                     NDF_MAX_NDIM);
          return NDF_EINVAL;
        }
        why = "bad 'shape'";
        goto bad;
      }
      have_shape = 1;
    } else {
      ndfio__err(err, errlen, "cannot read '%s': bad .npy header (unexpected or repeated key '%s')",
                 path, key);
      return NDF_EINVAL;
    }
    if (!eat(&c, ',')) {
      why = "expected ',' or '}'";
      if (!eat(&c, '}')) goto bad;
      break;
    }
  }
  skip_ws(&c);
  why = "text after the dict";
  if (c.p != c.end) goto bad;
  why = "missing 'descr', 'fortran_order' or 'shape'";
  if (!have_descr || !have_fortran || !have_shape) goto bad;
  return NDF_OK;
bad:
  ndfio__err(err, errlen, "cannot read '%s': bad .npy header (%s)", path, why);
  return NDF_EINVAL;
}

static uint32_t le32(const unsigned char *b) {
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

ndf_status ndfio_npy_read(const char *path, ndfio_image *img, char *err, size_t errlen) {
  if (!img || !path) {
    ndfio__err(err, errlen, "ndfio_npy_read: no path or image given");
    return NDF_EINVAL;
  }
  memset(img, 0, sizeof *img);
  ndf_status s = NDF_EIO;
  char *text = NULL;
  void *data = NULL;
  struct stat st;
  int fd = ndfio__open_regular(path, &st, err, errlen);
  if (fd < 0) return NDF_EIO;
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    ndfio__err(err, errlen, "cannot read '%s': %s", path, strerror(errno));
    close(fd);
    return NDF_EIO;
  }
  uint64_t fsize = (uint64_t)st.st_size;
  unsigned char pre[12];
  s = NDF_EINVAL;
  if (fsize < 10 || fread(pre, 1, 10, f) != 10 || memcmp(pre, NPY_MAGIC, NPY_MAGIC_LEN) != 0) {
    ndfio__err(err, errlen, "cannot read '%s': not a .npy file (bad magic)", path);
    goto done;
  }
  unsigned major = pre[6], minor = pre[7];
  uint64_t hlen, start;
  if (major == 1 && minor == 0) {
    hlen = (uint64_t)pre[8] | (uint64_t)pre[9] << 8;
    start = 10 + hlen;
  } else if ((major == 2 || major == 3) && minor == 0) {
    if (fsize < 12 || fread(pre + 10, 1, 2, f) != 2) {
      ndfio__err(err, errlen, "cannot read '%s': truncated .npy header", path);
      goto done;
    }
    hlen = le32(pre + 8);
    start = 12 + hlen;
  } else {
    ndfio__err(err, errlen, "cannot read '%s': unsupported .npy format version %u.%u", path,
               major, minor);
    goto done;
  }
  if (start > fsize) {
    ndfio__err(err, errlen, "cannot read '%s': truncated .npy header", path);
    goto done;
  }
  text = malloc((size_t)hlen + 1);
  if (!text) {
    s = NDF_ENOMEM;
    ndfio__err(err, errlen, "cannot read '%s': out of memory", path);
    goto done;
  }
  if (fread(text, 1, (size_t)hlen, f) != (size_t)hlen) {
    s = NDF_EIO;
    ndfio__err(err, errlen, "cannot read '%s': read error in the header", path);
    goto done;
  }
  text[hlen] = '\0';
  npy_header h;
  memset(&h, 0, sizeof h);
  if ((s = parse_header(path, text, (size_t)hlen, &h, err, errlen)) != NDF_OK) goto done;
  ndf_dtype dtype;
  if ((s = parse_descr(path, h.descr, &dtype, err, errlen)) != NDF_OK) goto done;
  if (!host_is_little_endian() && ndf_dtype_size(dtype) > 1) {
    s = NDF_ENOTSUP;
    ndfio__err(err, errlen, "cannot read '%s': multi-byte data on a big-endian host", path);
    goto done;
  }

  ndf_array *a = &img->arr;
  a->device = NDF_DEVICE_CPU;
  a->device_id = 0;
  a->dtype = dtype;
  a->ndim = h.ndim;
  int64_t n = 1, nonzero = 1, stride = 1;
  for (int i = 0; i < h.ndim; i++) {
    a->shape[i] = h.shape[i];
    if (h.shape[i] > 0 && !mul_ok(nonzero, h.shape[i], &nonzero)) {
      s = NDF_EINVAL;
      ndfio__err(err, errlen, "cannot read '%s': the shape overflows", path);
      goto done;
    }
    n = h.shape[i] == 0 ? 0 : n * h.shape[i];
  }
  size_t esz = ndf_dtype_size(dtype);
  int64_t nbytes, maxbytes;
  if (!mul_ok(nonzero, (int64_t)esz, &maxbytes) || (uint64_t)maxbytes > (uint64_t)SIZE_MAX) {
    s = NDF_EINVAL;
    ndfio__err(err, errlen, "cannot read '%s': the shape overflows", path);
    goto done;
  }
  nbytes = n * (int64_t)esz;
  /* Strides in elements: C order (last axis fastest) or Fortran order. */
  for (int k = 0; k < h.ndim; k++) {
    int i = h.fortran ? k : h.ndim - 1 - k;
    a->strides[i] = stride;
    stride *= h.shape[i] > 0 ? h.shape[i] : 1;
  }
  if (fsize - start < (uint64_t)nbytes) {
    s = NDF_EINVAL;
    ndfio__err(err, errlen, "cannot read '%s': truncated data (%llu of %llu bytes)", path,
               (unsigned long long)(fsize - start), (unsigned long long)nbytes);
    goto done;
  }
  if (fsize - start > (uint64_t)nbytes) {
    s = NDF_EINVAL;
    ndfio__err(err, errlen, "cannot read '%s': %llu unexpected bytes after the data", path,
               (unsigned long long)(fsize - start - (uint64_t)nbytes));
    goto done;
  }
  data = malloc(nbytes > 0 ? (size_t)nbytes : 1);
  if (!data) {
    s = NDF_ENOMEM;
    ndfio__err(err, errlen, "cannot read '%s': out of memory for %lld bytes", path,
               (long long)nbytes);
    goto done;
  }
  if (fread(data, 1, (size_t)nbytes, f) != (size_t)nbytes) {
    s = NDF_EIO;
    ndfio__err(err, errlen, "cannot read '%s': read error in the data", path);
    goto done;
  }
  if (dtype == NDF_BOOL) {
    const unsigned char *b = data;
    for (int64_t i = 0; i < nbytes; i++) {
      if (b[i] > 1) {
        s = NDF_EINVAL;
        ndfio__err(err, errlen, "cannot read '%s': bool data holds the byte %u", path, b[i]);
        goto done;
      }
    }
  }
  a->data = data;
  img->owned = data;
  data = NULL;
  s = NDF_OK;
done:
  if (s != NDF_OK) memset(img, 0, sizeof *img);
  free(data);
  free(text);
  fclose(f);
  return s;
}

/* ------------------------------------------------------------------------ */
/* Writing                                                                   */

static const char *npy_descr(ndf_dtype t) {
  switch (t) {
  case NDF_BOOL: return "|b1";
  case NDF_UINT8: return "|u1";
  case NDF_INT8: return "|i1";
  case NDF_UINT16: return "<u2";
  case NDF_INT16: return "<i2";
  case NDF_UINT32: return "<u4";
  case NDF_INT32: return "<i4";
  case NDF_FLOAT32: return "<f4";
  case NDF_FLOAT64: return "<f8";
  case NDF_INT64: return "<i8";
  case NDF_UINT64: return "<u8";
  default: return NULL;
  }
}

/* Builds the preamble and header of a C-order array into buf; returns the
 * total length (a multiple of NPY_ALIGN) or 0 when buf is too small. */
static size_t npy_build_header(const ndf_array *a, char *buf, size_t cap) {
  char dict[512];
  int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                   npy_descr(a->dtype));
  for (int i = 0; i < a->ndim; i++)
    n += snprintf(dict + n, sizeof dict - (size_t)n, "%s%lld", i ? ", " : "",
                  (long long)a->shape[i]);
  n += snprintf(dict + n, sizeof dict - (size_t)n, "%s), }", a->ndim == 1 ? "," : "");
  if (n <= 0 || (size_t)n >= sizeof dict) return 0;
  /* Version 1.0 has a 2-byte length; 2.0 a 4-byte one.  The header ends in
   * '\n' and is padded with spaces so that the data starts aligned. */
  size_t pre = 10, dlen = (size_t)n + 1;
  size_t total = (pre + dlen + NPY_ALIGN - 1) / NPY_ALIGN * NPY_ALIGN;
  if (total - pre > 0xffff) {
    pre = 12;
    total = (pre + dlen + NPY_ALIGN - 1) / NPY_ALIGN * NPY_ALIGN;
  }
  if (total > cap) return 0;
  size_t hlen = total - pre;
  memcpy(buf, NPY_MAGIC, NPY_MAGIC_LEN);
  buf[6] = pre == 10 ? 1 : 2;
  buf[7] = 0;
  for (size_t i = 0; i < pre - 8; i++) buf[8 + i] = (char)((hlen >> (8 * i)) & 0xff);
  memcpy(buf + pre, dict, (size_t)n);
  memset(buf + pre + n, ' ', total - pre - (size_t)n - 1);
  buf[total - 1] = '\n';
  return total;
}

int ndfio__write_elems(const ndf_array *a, int64_t nelem, int fortran,
                       int (*put)(const void *buf, size_t bytes, void *ud), void *ud) {
  size_t esz = ndf_dtype_size(a->dtype);
  if (nelem == 0) return 1;
  if (ndfio__is_dense(a, fortran)) return put(a->data, (size_t)nelem * esz, ud);
  size_t chunk = GATHER_CHUNK / esz;
  if ((uint64_t)chunk > (uint64_t)nelem) chunk = (size_t)nelem;
  void *buf = malloc(chunk * esz);
  if (!buf) return 0;
  ndfio__iter it;
  ndfio__iter_init(&it, a, fortran);
  size_t got;
  int ok = 1;
  while (ok && (got = ndfio__gather(&it, buf, chunk)) > 0) ok = put(buf, got * esz, ud);
  free(buf);
  return ok;
}

static int put_file(const void *buf, size_t bytes, void *ud) { return fwrite(buf, 1, bytes, ud) == bytes; }

ndf_status ndfio__npy_write_tmp(const char *path, const ndf_array *a, char **tmpout, char *err, size_t errlen) {
  int64_t nelem;
  *tmpout = NULL;
  if (!path) {
    ndfio__err(err, errlen, "ndfio_npy_write: no path given");
    return NDF_EINVAL;
  }
  ndf_status s = ndfio__check_host_array(path, a, &nelem, err, errlen);
  if (s != NDF_OK) return s;
  char head[1024];
  size_t hlen = npy_build_header(a, head, sizeof head);
  if (hlen == 0) {
    ndfio__err(err, errlen, "cannot write '%s': header too long", path);
    return NDF_EINTERNAL;
  }
  char *tmp;
  int fd;
  if ((s = ndfio__tmp_create(path, &tmp, &fd, err, errlen)) != NDF_OK) return s;
  FILE *f = fdopen(fd, "wb");
  if (!f) {
    int e = errno;
    close(fd);
    ndfio__tmp_finish(tmp, path, 0, NULL, 0);
    ndfio__err(err, errlen, "cannot write '%s': %s", path, strerror(e));
    return NDF_EIO;
  }
  errno = 0;
  int ok = fwrite(head, 1, hlen, f) == hlen && ndfio__write_elems(a, nelem, 0, put_file, f) && fflush(f) == 0;
  int e = errno;
  if (fclose(f) != 0 && ok) {
    ok = 0;
    e = errno;
  }
  if (!ok) {
    ndfio__tmp_finish(tmp, path, 0, NULL, 0);
    ndfio__err(err, errlen, "cannot write '%s': %s", path, e ? strerror(e) : "write error");
    return e == ENOMEM ? NDF_ENOMEM : NDF_EIO;
  }
  *tmpout = tmp;
  return NDF_OK;
}

ndf_status ndfio_npy_write(const char *path, const ndf_array *a, char *err, size_t errlen) {
  char *tmp;
  ndf_status s = ndfio__npy_write_tmp(path, a, &tmp, err, errlen);
  return s == NDF_OK ? ndfio__tmp_finish(tmp, path, 1, err, errlen) : s;
}

/* ------------------------------------------------------------------------ */
/* All-or-nothing outputs                                                    */

void ndfio_stage_init(ndfio_stage *st) { memset(st, 0, sizeof *st); }

ndf_status ndfio_stage_write(ndfio_stage *st, const char *path, const ndf_array *a, const ndfio_image *header_from,
                             char *err, size_t errlen) {
  if (!path) {
    ndfio__err(err, errlen, "ndfio_stage_write: no path given");
    return NDF_EINVAL;
  }
  if (st->n == NDFIO_STAGE_MAX) {
    ndfio__err(err, errlen, "cannot write '%s': more than %d outputs", path, NDFIO_STAGE_MAX);
    return NDF_EINTERNAL;
  }
  for (int i = 0; i < st->n; i++)
    if (strcmp(st->path[i], path) == 0) {
      ndfio__err(err, errlen, "cannot write '%s': two outputs name the same file", path);
      return NDF_EINVAL;
    }
  char *tmp = NULL;
  ndf_status s;
  switch (ndfio_format_of(path)) {
  case NDFIO_NPY: s = ndfio__npy_write_tmp(path, a, &tmp, err, errlen); break;
  case NDFIO_NIFTI: s = ndfio__nifti_write_tmp(path, a, header_from, &tmp, err, errlen); break;
  case NDFIO_DICOM:
    ndfio__err(err, errlen, "cannot write '%s': DICOM series are written by ndforge convert (write .nii.gz here)",
               path);
    s = NDF_EINVAL;
    break;
  default:
    ndfio__err(err, errlen, "cannot write '%s': unknown file type (expected .npy, .nii or .nii.gz)", path);
    s = NDF_EINVAL;
  }
  if (s != NDF_OK) return s;
  st->path[st->n] = path;
  st->tmp[st->n++] = tmp;
  return NDF_OK;
}

ndf_status ndfio_stage_commit(ndfio_stage *st, char *err, size_t errlen) {
  /* A directory in the way would fail its rename after others succeeded:
   * look before renaming anything. */
  for (int i = 0; i < st->n; i++) {
    struct stat sb;
    if (stat(st->path[i], &sb) == 0 && S_ISDIR(sb.st_mode)) {
      ndfio__err(err, errlen, "cannot write '%s': it is a directory", st->path[i]);
      ndfio_stage_abort(st);
      return NDF_EIO;
    }
  }
  ndf_status s = NDF_OK;
  for (int i = 0; i < st->n; i++) {
    if (s == NDF_OK) s = ndfio__tmp_finish(st->tmp[i], st->path[i], 1, err, errlen);
    else ndfio__tmp_finish(st->tmp[i], st->path[i], 0, NULL, 0);
    st->tmp[i] = NULL;
  }
  st->n = 0;
  return s;
}

void ndfio_stage_abort(ndfio_stage *st) {
  for (int i = 0; i < st->n; i++) ndfio__tmp_finish(st->tmp[i], st->path[i], 0, NULL, 0);
  st->n = 0;
}
