/*
 * cli_preprocess.c -- `ndforge preprocess`: a sequence of preprocessing steps
 * over many volumes, each written as NIfTI with its header, a PNG montage per
 * volume and one JSON report per run.
 *
 *   ndforge preprocess INPUT... --out DIR [--steps reorient,resample,normalize,...]
 *       [--spacing S[,S,S]] [--order N] [--modality ct|mri] [--preset NAME | --centre C --width W]
 *       [--margin M[,M,M]] [--time-axis A] [--reference REF.nii] [--report FILE] [--no-montage]
 *       [--device cpu|cuda|auto] [--progress auto|bar|lines|none] [--workers N] [--cpu-threads N]
 *       [--gpu-memory-limit SIZE]
 *
 * The steps are the rows of STEPS below: a name, the options it reads, and a
 * function from one 3-D volume (float32 image, optional mask, affine) to the
 * next.  Adding a step is adding one row.  Workers (the main thread and
 * --workers - 1 threads) each run the steps of one volume at a time on a
 * context of their own, taking the inputs in order; reader threads read the
 * next inputs (at most io_threads + 1 ahead of the workers) and writer threads
 * write the finished volumes (at most 2 io_threads waiting), so that the steps
 * wait on neither.  In memory at once: a volume per worker, the read-ahead and
 * the writers' queue.  Every volume's result depends on it alone (not on the
 * worker or the number of threads; on a GPU up to the rounding of device sums
 * that do not fix their order); errors and progress are printed, and the
 * report written, in input order.  A volume that fails is reported and the
 * run goes on; a volume that runs out of GPU memory (NDF_ENOMEM on a CUDA
 * context) is run again on the CPU backend.  Exit status: 0 when every volume
 * was written, 1 when one failed, 2 for a bad command line.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <nifti1_io.h>

#include "cli.h"
#include "cli_montage.h"
#include "ndfio.h"
#include "ndforge.h"

enum { PP_USAGE = 2, PP_FAIL = 1, MAX_STEPS = 16, PP_MAX_WORKERS = 64 };

static const char *pp_usage =
    "usage: ndforge preprocess INPUT... --out DIR [options]\n"
    "  INPUT: NIfTI files (.nii, .nii.gz), directories of them, or anything `ndforge` reads\n"
    "  --steps LIST      comma-separated steps, run in order (default reorient,resample,normalize);\n"
    "                    see the list below\n"
    "  --spacing S[,S,S] resample's voxel spacing in mm (default 1)\n"
    "  --order N         resample's spline order 0..5 (default 1)\n"
    "  --modality M      normalize: ct (HU window to [-1, 1]) or mri (z-score inside the mask; default)\n"
    "  --preset NAME     ct window preset (brain, subdural, stroke, bone, lung, mediastinum, soft_tissue,\n"
    "                    liver); or --centre C --width W (default brain, 40/80)\n"
    "  --margin M[,M,M]  crop's margin in voxels around the mask (default 4)\n"
    "  --shrink-factor S n4: fit the bias field on the volume shrunk by S (default 4)\n"
    "  --f F             skullstrip: BET's fractional intensity threshold (default 0.5)\n"
    "  --time-axis A     the axis of a 4-D input that holds the time points (default the last)\n"
    "  --reference FILE  a volume shaped like the outputs: SSIM per volume, and its map in the montage\n"
    "  --report FILE     the run's JSON report (default DIR/report.json)\n"
    "  --no-montage      no PNG montages\n"
    "  --format F        nii.gz (default) or nii: the outputs' file type\n"
    "  --io-threads N    reader and writer threads, N of each (default up to 4, by the cores)\n"
    "  --workers N       volumes processed at once, each on a context of its own (default on a GPU\n"
    "                    one per 4 cores, 2 to 4; on the CPU one per core, up to 8)\n"
    "  --cpu-threads N   CPU threads of each worker's context (default the cores / the workers)\n"
    "  --gpu-memory-limit SIZE  device memory each worker's context may hold (bytes, or with K, M,\n"
    "                    G or T: 512M, 1.5G; powers of 1024); a volume that needs more runs on the CPU\n"
    "  --device D        cpu, cuda or auto (default auto: CUDA when there is a device)\n"
    "  --progress P      auto (a bar on a terminal, else lines), bar, lines or none\n"
    "outputs: DIR/NAME.nii.gz (or .nii) and DIR/NAME.png per input, NAME its file name without\n"
    "extension, and the run's report\n";

/* ---- the options of a run ------------------------------------------------------------- */

typedef struct pp_opts {
  double spacing[3];
  int order;
  ndf_normalize_options norm;
  int64_t margin[3];
  int time_axis; /* -1: the last */
  ndf_n4_options n4;
  ndf_skull_strip_options bet;
} pp_opts;

/* One 3-D volume between steps: a float32 image (x, y, z) on the context's
 * device, an optional mask shaped like it (non-zero = in), and the affine. */
typedef struct pp_vol {
  ndf_array img, mask;
  double affine[16];
} pp_vol;

/* What a step reports: its parameters and metrics as JSON members ("a": 1, "b": [2, 3]). */
typedef struct pp_note {
  char params[512], metrics[512];
  char error[512]; /* why the step failed, when the library's message does not say it */
} pp_note;

/* A planning call of the library (no context): on failure its message becomes the step's. */
#define PLAN(note, call)                                                     \
  do {                                                                       \
    if ((call) != NDF_OK) {                                                  \
      snprintf((note)->error, sizeof (note)->error, "%s", ndf_last_error()); \
      return NDF_EINVAL;                                                     \
    }                                                                        \
  } while (0)

typedef struct pp_step {
  const char *name;
  const char *doc; /* its options, for --help */
  ndf_status (*run)(ndf_ctx *ctx, const pp_opts *o, pp_vol *v, pp_note *note);
} pp_step;

static ndf_device_type dev_of(ndf_ctx *ctx) { return ndf_ctx_has_cuda(ctx) ? NDF_DEVICE_CUDA : NDF_DEVICE_CPU; }

/* Replaces a with b (freeing a's memory). */
static void vol_replace(ndf_ctx *ctx, ndf_array *a, ndf_array *b) {
  ndf_array_free(ctx, a);
  *a = *b;
  memset(b, 0, sizeof *b);
}

static void appendf(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void appendf(char *buf, size_t cap, const char *fmt, ...) {
  size_t n = strlen(buf);
  if (n >= cap) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + n, cap - n, fmt, ap);
  va_end(ap);
}

/* ---- the steps -------------------------------------------------------------------------- */

static ndf_status step_reorient(ndf_ctx *ctx, const pp_opts *o, pp_vol *v, pp_note *note) {
  (void)o;
  int64_t osh[3];
  int perm[3], flip[3];
  double aff[16];
  PLAN(note, ndf_reorient_ras_plan(v->img.shape, v->affine, osh, perm, flip, aff));
  if (perm[0] == 0 && perm[1] == 1 && perm[2] == 2 && !flip[0] && !flip[1] && !flip[2]) {
    snprintf(note->metrics, sizeof note->metrics, "\"axes\": \"i,j,k\"");
    return NDF_OK; /* already RAS+: nothing moves (nibabel returns the image itself) */
  }
  ndf_array out = {0}, mout = {0};
  ndf_status s = ndf_array_alloc(ctx, &out, dev_of(ctx), NDF_FLOAT32, 3, osh);
  if (s == NDF_OK) s = ndf_reorient_ras(ctx, &v->img, v->affine, &out);
  if (s == NDF_OK && v->mask.data) {
    s = ndf_array_alloc(ctx, &mout, dev_of(ctx), v->mask.dtype, 3, osh);
    if (s == NDF_OK) s = ndf_reorient_ras(ctx, &v->mask, v->affine, &mout);
  }
  if (s != NDF_OK) {
    ndf_array_free(ctx, &out);
    ndf_array_free(ctx, &mout);
    return s;
  }
  vol_replace(ctx, &v->img, &out);
  if (v->mask.data) vol_replace(ctx, &v->mask, &mout);
  memcpy(v->affine, aff, sizeof aff);
  static const char axn[3] = {'i', 'j', 'k'};
  snprintf(note->metrics, sizeof note->metrics, "\"axes\": \"%s%c,%s%c,%s%c\"", flip[0] ? "-" : "", axn[perm[0]],
           flip[1] ? "-" : "", axn[perm[1]], flip[2] ? "-" : "", axn[perm[2]]);
  return NDF_OK;
}

static ndf_status step_resample(ndf_ctx *ctx, const pp_opts *o, pp_vol *v, pp_note *note) {
  double sp[3];
  int64_t osh[3];
  double r[3], t[3], aff[16];
  PLAN(note, ndf_affine_spacing(v->affine, sp));
  PLAN(note, ndf_resample_plan(3, v->img.shape, sp, o->spacing, osh, r, t));
  PLAN(note, ndf_resample_affine(3, v->affine, r, t, aff));
  ndf_interp_options io;
  ndf_interp_options_init(&io);
  io.order = o->order;
  io.mode = NDF_INTERP_NEAREST;
  ndf_array out = {0}, mout = {0};
  ndf_status s = ndf_array_alloc(ctx, &out, dev_of(ctx), NDF_FLOAT32, 3, osh);
  if (s == NDF_OK) s = ndf_resample(ctx, &v->img, &out, sp, o->spacing, &io);
  if (s == NDF_OK && v->mask.data) { /* masks by nearest neighbour */
    io.order = 0;
    s = ndf_array_alloc(ctx, &mout, dev_of(ctx), v->mask.dtype, 3, osh);
    if (s == NDF_OK) s = ndf_resample(ctx, &v->mask, &mout, sp, o->spacing, &io);
  }
  if (s != NDF_OK) {
    ndf_array_free(ctx, &out);
    ndf_array_free(ctx, &mout);
    return s;
  }
  vol_replace(ctx, &v->img, &out);
  if (v->mask.data) vol_replace(ctx, &v->mask, &mout);
  memcpy(v->affine, aff, sizeof aff);
  snprintf(note->params, sizeof note->params, "\"spacing\": [%g, %g, %g], \"order\": %d", o->spacing[0],
           o->spacing[1], o->spacing[2], o->order);
  snprintf(note->metrics, sizeof note->metrics, "\"from_spacing\": [%.6g, %.6g, %.6g]", sp[0], sp[1], sp[2]);
  return NDF_OK;
}

/* A head mask without a skull-stripping step: voxels above t2 + 0.1 (t98 - t2), the 2nd and
 * 98th percentiles (the brain/background threshold of BET, Smith 2002). */
static ndf_status step_foreground(ndf_ctx *ctx, const pp_opts *o, pp_vol *v, pp_note *note) {
  (void)o;
  const double q[2] = {2, 98};
  double pq[2];
  const int64_t two = 2;
  ndf_array pa = {0}, ph, m = {0};
  ndf_status s = ndf_array_alloc(ctx, &pa, dev_of(ctx), NDF_FLOAT64, 1, &two);
  if (s == NDF_OK) s = ndf_percentile(ctx, &v->img, q, 2, &pa, 0);
  ndf_array_init(&ph, pq, NDF_DEVICE_CPU, NDF_FLOAT64, 1, &two);
  if (s == NDF_OK) s = ndf_array_copy(ctx, &ph, &pa);
  ndf_array_free(ctx, &pa);
  if (s != NDF_OK) return s;
  const double thr = pq[0] + 0.1 * (pq[1] - pq[0]);
  /* x <= thr -> 0, x >= the next double -> 1: a 0/1 float32 mask */
  ndf_window_options wo;
  ndf_window_options_init(&wo);
  s = ndf_array_alloc(ctx, &m, dev_of(ctx), NDF_FLOAT32, 3, v->img.shape);
  if (s == NDF_OK) s = ndf_window(ctx, &v->img, &m, thr, nextafter(thr, INFINITY), &wo);
  if (s != NDF_OK) {
    ndf_array_free(ctx, &m);
    return s;
  }
  ndf_array_free(ctx, &v->mask);
  v->mask = m;
  snprintf(note->params, sizeof note->params, "\"rule\": \"t2 + 0.1 (t98 - t2)\"");
  snprintf(note->metrics, sizeof note->metrics, "\"threshold\": %.9g", thr);
  return NDF_OK;
}

static ndf_status step_normalize(ndf_ctx *ctx, const pp_opts *o, pp_vol *v, pp_note *note) {
  ndf_array out = {0};
  ndf_status s = ndf_array_alloc(ctx, &out, dev_of(ctx), NDF_FLOAT32, 3, v->img.shape);
  const int masked = o->norm.modality == NDF_MODALITY_MRI && v->mask.data;
  if (s == NDF_OK) s = ndf_normalize_modality(ctx, &v->img, masked ? &v->mask : NULL, &out, &o->norm);
  if (s != NDF_OK) {
    ndf_array_free(ctx, &out);
    return s;
  }
  vol_replace(ctx, &v->img, &out);
  if (o->norm.modality == NDF_MODALITY_CT) {
    double c = o->norm.centre, w = o->norm.width;
    if (o->norm.preset) ndf_ct_window_preset(o->norm.preset, &c, &w);
    snprintf(note->params, sizeof note->params, "\"modality\": \"ct\", \"centre\": %g, \"width\": %g, "
             "\"range\": [-1, 1]%s%s%s", c, w, o->norm.preset ? ", \"preset\": \"" : "",
             o->norm.preset ? o->norm.preset : "", o->norm.preset ? "\"" : "");
  } else {
    snprintf(note->params, sizeof note->params, "\"modality\": \"mri\", \"statistics\": \"%s\"",
             masked ? "inside the mask" : "every voxel (no mask)");
  }
  return NDF_OK;
}

static ndf_status step_crop(ndf_ctx *ctx, const pp_opts *o, pp_vol *v, pp_note *note) {
  if (!v->mask.data) {
    snprintf(note->error, sizeof note->error, "no mask to crop to (run foreground or skullstrip before crop)");
    return NDF_EINVAL;
  }
  int64_t lo[3], hi[3], n, st[3], osh[3];
  double aff[16];
  ndf_status s = ndf_mask_bbox(ctx, &v->mask, lo, hi, &n);
  if (s != NDF_OK) return s;
  if (n == 0) {
    snprintf(note->error, sizeof note->error, "the mask is empty: nothing to crop to");
    return NDF_EINVAL;
  }
  PLAN(note, ndf_crop_plan(3, v->img.shape, lo, hi, 3, o->margin, st, osh, v->affine, aff));
  ndf_array out = {0}, mout = {0};
  s = ndf_array_alloc(ctx, &out, dev_of(ctx), NDF_FLOAT32, 3, osh);
  if (s == NDF_OK) s = ndf_crop(ctx, &v->img, st, &out);
  if (s == NDF_OK) s = ndf_array_alloc(ctx, &mout, dev_of(ctx), v->mask.dtype, 3, osh);
  if (s == NDF_OK) s = ndf_crop(ctx, &v->mask, st, &mout);
  if (s != NDF_OK) {
    ndf_array_free(ctx, &out);
    ndf_array_free(ctx, &mout);
    return s;
  }
  vol_replace(ctx, &v->img, &out);
  vol_replace(ctx, &v->mask, &mout);
  memcpy(v->affine, aff, sizeof aff);
  snprintf(note->params, sizeof note->params, "\"margin\": [%lld, %lld, %lld]", (long long)o->margin[0],
           (long long)o->margin[1], (long long)o->margin[2]);
  snprintf(note->metrics, sizeof note->metrics, "\"start\": [%lld, %lld, %lld], \"shape\": [%lld, %lld, %lld], "
           "\"mask_voxels\": %lld", (long long)st[0], (long long)st[1], (long long)st[2], (long long)osh[0],
           (long long)osh[1], (long long)osh[2], (long long)n);
  return NDF_OK;
}

/* N4 bias-field correction (ITK's defaults, the fit on the volume shrunk by --shrink-factor) inside
 * the mask when there is one; the image becomes I / b. */
static ndf_status step_n4(ndf_ctx *ctx, const pp_opts *o, pp_vol *v, pp_note *note) {
  ndf_array out = {0};
  ndf_status s = ndf_array_alloc(ctx, &out, dev_of(ctx), NDF_FLOAT32, 3, v->img.shape);
  /* a uint8 mask (skullstrip's) is N4's mask; a 0/1 float mask (foreground's) its weight image,
   * which leaves the voxels of weight 0 out and weighs the others 1: the same fit */
  const int has = v->mask.data != NULL, as_mask = has && (v->mask.dtype == NDF_UINT8 || v->mask.dtype == NDF_BOOL);
  ndf_n4_options n4 = o->n4;
  double sp[3];
  if (ndf_affine_spacing(v->affine, sp) == NDF_OK) {
    n4.nspacing = 3;
    memcpy(n4.spacing, sp, sizeof sp);
  }
  ndf_n4_result res;
  memset(&res, 0, sizeof res);
  if (s == NDF_OK)
    s = ndf_n4_bias_field_correction(ctx, &v->img, as_mask ? &v->mask : NULL, has && !as_mask ? &v->mask : NULL, &out,
                                     NULL, &n4, &res);
  if (s != NDF_OK) {
    ndf_array_free(ctx, &out);
    return s;
  }
  vol_replace(ctx, &v->img, &out);
  snprintf(note->params, sizeof note->params, "\"shrink_factor\": %d, \"levels\": %d, \"masked\": %s",
           n4.shrink_factor, n4.number_of_fitting_levels, has ? "true" : "false");
  snprintf(note->metrics, sizeof note->metrics, "\"convergence\": %.6g", res.convergence);
  return NDF_OK;
}

/* Skull stripping by BET's method (ndf_skull_strip, BET's defaults but --f): the mask becomes the
 * brain's. */
static ndf_status step_skullstrip(ndf_ctx *ctx, const pp_opts *o, pp_vol *v, pp_note *note) {
  double sp[3];
  PLAN(note, ndf_affine_spacing(v->affine, sp));
  ndf_array m = {0};
  ndf_status s = ndf_array_alloc(ctx, &m, dev_of(ctx), NDF_UINT8, 3, v->img.shape);
  if (s == NDF_OK) s = ndf_skull_strip(ctx, &v->img, sp, &m, &o->bet);
  if (s != NDF_OK) {
    ndf_array_free(ctx, &m);
    return s;
  }
  ndf_array_free(ctx, &v->mask);
  v->mask = m;
  int64_t lo[3], hi[3], n = 0;
  if (ndf_mask_bbox(ctx, &v->mask, lo, hi, &n) != NDF_OK) n = -1;
  snprintf(note->params, sizeof note->params, "\"f\": %g, \"g\": %g", o->bet.fractional_intensity_threshold,
           o->bet.vertical_gradient);
  snprintf(note->metrics, sizeof note->metrics, "\"brain_voxels\": %lld", (long long)n);
  return NDF_OK;
}

/* The steps, in no particular order (--steps gives the order). */
static const pp_step STEPS[] = {
    {"reorient", "to RAS+ (nibabel's as_closest_canonical)", step_reorient},
    {"resample", "to --spacing, spline --order", step_resample},
    {"foreground", "a head mask: above t2 + 0.1 (t98 - t2) (BET's threshold)", step_foreground},
    {"normalize", "--modality ct (--preset or --centre/--width, to [-1, 1]) or mri (z-score in the mask)",
     step_normalize},
    {"crop", "to the mask's bounding box grown by --margin", step_crop},
    {"n4", "N4 bias-field correction (ITK's defaults, fit on the volume shrunk by --shrink-factor; inside the mask)",
     step_n4},
    {"skullstrip", "the brain mask by BET's method (--f, BET's defaults otherwise)", step_skullstrip},
};
enum { NSTEPS = sizeof STEPS / sizeof STEPS[0] };

/* ---- inputs and the reader thread ----------------------------------------------------------- */

typedef struct pp_item {
  const char *path;
  ndfio_image img;
  ndf_status status;
  char err[1024];
  double read_s, read_at[2]; /* its time, and when it started and ended (the monotonic clock) */
  int done;
  /* what the reader makes of it: the nt 3-D volumes as float32 (the file's data then freed, its
   * header kept), the time axis (-1 for a 3-D input) and the affine */
  int nt, taxis;
  ndf_array *vols;
  double affine[16];
} pp_item;

static void prepare_item(pp_item *it, int time_axis);

/* The readers: io threads take the next unread input while fewer than ahead inputs wait for a
 * worker; the workers take them in order. */
typedef struct pp_reader {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pp_item *items;
  int n, next_read, next_take, ahead, time_axis, stop;
} pp_reader;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *reader_main(void *arg) {
  pp_reader *r = arg;
  for (;;) {
    pthread_mutex_lock(&r->mu);
    while (!r->stop && r->next_read < r->n && r->next_read - r->next_take >= r->ahead)
      pthread_cond_wait(&r->cv, &r->mu);
    if (r->stop || r->next_read >= r->n) {
      pthread_mutex_unlock(&r->mu);
      return NULL;
    }
    pp_item *it = &r->items[r->next_read++];
    pthread_mutex_unlock(&r->mu);
    it->read_at[0] = now_s();
    it->status = ndfio_read(it->path, &it->img, it->err, sizeof it->err);
    if (it->status == NDF_OK) prepare_item(it, r->time_axis);
    it->read_at[1] = now_s();
    it->read_s = it->read_at[1] - it->read_at[0];
    pthread_mutex_lock(&r->mu);
    it->done = 1;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
  }
}

/* Takes the next input in order and waits until it is read: its index, or -1 when every input
 * is taken. */
static int reader_next(pp_reader *r) {
  pthread_mutex_lock(&r->mu);
  const int i = r->next_take < r->n ? r->next_take++ : -1;
  pthread_cond_broadcast(&r->cv);
  while (i >= 0 && !r->items[i].done) pthread_cond_wait(&r->cv, &r->mu);
  pthread_mutex_unlock(&r->mu);
  return i;
}

static int has_suffix(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && strcmp(s + a - b, suf) == 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

typedef struct strlist {
  char **v;
  int n, cap;
} strlist;

static int strlist_add(strlist *l, const char *s) {
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 16;
    char **v = realloc(l->v, sizeof *v * (size_t)cap);
    if (!v) return -1;
    l->v = v;
    l->cap = cap;
  }
  if (!(l->v[l->n] = strdup(s))) return -1;
  l->n++;
  return 0;
}

/* A directory's NIfTI files, sorted; a directory with none is itself an input (a DICOM series
 * when the reader takes directories). */
static int expand_input(strlist *l, const char *path) {
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return strlist_add(l, path);
  DIR *d = opendir(path);
  if (!d) return strlist_add(l, path);
  strlist found = {0};
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.' || !(has_suffix(e->d_name, ".nii") || has_suffix(e->d_name, ".nii.gz"))) continue;
    char buf[4096];
    snprintf(buf, sizeof buf, "%s/%s", path, e->d_name);
    if (strlist_add(&found, buf)) break;
  }
  closedir(d);
  int rc = 0;
  if (found.n == 0) {
    rc = strlist_add(l, path);
  } else {
    qsort(found.v, (size_t)found.n, sizeof *found.v, cmp_str);
    for (int i = 0; i < found.n && !rc; i++) rc = strlist_add(l, found.v[i]);
  }
  for (int i = 0; i < found.n; i++) free(found.v[i]);
  free(found.v);
  return rc;
}

/* The output stem of an input: its file name without .nii / .nii.gz / .npy (a directory: its name). */
static void stem_of(const char *path, char *out, size_t cap) {
  size_t n = strlen(path);
  while (n > 1 && path[n - 1] == '/') n--;
  size_t b = n;
  while (b > 0 && path[b - 1] != '/') b--;
  size_t len = n - b;
  static const char *exts[] = {".nii.gz", ".nii", ".npy"};
  for (int i = 0; i < 3; i++) {
    size_t el = strlen(exts[i]);
    if (len > el && strncmp(path + b + len - el, exts[i], el) == 0) {
      len -= el;
      break;
    }
  }
  snprintf(out, cap, "%.*s", (int)len, path + b);
}

/* ---- NIfTI geometry --------------------------------------------------------------------- */

/* nibabel's get_best_affine: the sform, else the qform, else the Analyze default. */
static void affine_of(const ndfio_image *img, double a[16]) {
  const nifti_image *nim = img->nifti;
  memset(a, 0, sizeof(double) * 16);
  a[15] = 1;
  if (nim && (nim->sform_code > 0 || nim->qform_code > 0)) {
    const mat44 *m = nim->sform_code > 0 ? &nim->sto_xyz : &nim->qto_xyz;
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 4; j++) a[4 * i + j] = m->m[i][j];
    return;
  }
  double sp[NDF_MAX_NDIM] = {1, 1, 1};
  if (nim) ndfio_nifti_spacing(img, sp);
  for (int d = 0; d < 3; d++) {
    const double n = img->arr.ndim > d ? (double)img->arr.shape[d] : 1;
    const double z = d < img->arr.ndim ? sp[d] : 1;
    a[5 * d] = d == 0 ? -z : z;
    a[4 * d + 3] = -(n - 1) / 2 * a[5 * d];
  }
}

/* A header for an output: the input's (or a new one), with sform and qform set to the affine. */
static nifti_image *header_for(const ndfio_image *in, const double a[16], const int64_t *shape, int ndim) {
  nifti_image *nim;
  if (in->nifti) {
    nim = nifti_copy_nim_info(in->nifti);
  } else {
    int dims[8] = {ndim, 1, 1, 1, 1, 1, 1, 1};
    for (int i = 0; i < ndim; i++) dims[i + 1] = (int)shape[i];
    nim = nifti_make_new_nim(dims, DT_FLOAT32, 0);
  }
  if (!nim) return NULL;
  const nifti_image *src = in->nifti;
  const int sc = src && src->sform_code > 0 ? src->sform_code : src && src->qform_code > 0 ? src->qform_code
                                                                                             : NIFTI_XFORM_SCANNER_ANAT;
  const int qc = src && src->qform_code > 0 ? src->qform_code : sc;
  mat44 m;
  memset(&m, 0, sizeof m);
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) m.m[i][j] = (float)a[4 * i + j];
  nim->sform_code = sc;
  nim->sto_xyz = m;
  nim->sto_ijk = nifti_mat44_inverse(m);
  nim->qform_code = qc;
  float dx, dy, dz, qfac;
  nifti_mat44_to_quatern(m, &nim->quatern_b, &nim->quatern_c, &nim->quatern_d, &nim->qoffset_x, &nim->qoffset_y,
                         &nim->qoffset_z, &dx, &dy, &dz, &qfac);
  nim->qfac = qfac;
  nim->pixdim[0] = qfac;
  nim->pixdim[1] = nim->dx = dx;
  nim->pixdim[2] = nim->dy = dy;
  nim->pixdim[3] = nim->dz = dz;
  nim->qto_xyz = nifti_quatern_to_mat44(nim->quatern_b, nim->quatern_c, nim->quatern_d, nim->qoffset_x,
                                        nim->qoffset_y, nim->qoffset_z, dx, dy, dz, qfac);
  nim->qto_ijk = nifti_mat44_inverse(nim->qto_xyz);
  nim->scl_slope = 0;
  nim->scl_inter = 0;
  nim->cal_min = nim->cal_max = 0;
  return nim;
}

/* dst[x] = src[x] * slope + inter (as float32) over a 3-D shape, src of type T; both sides any
 * strides (elements).  The two axes fastest in memory on either side are walked in tiles of
 * PP_TILE x PP_TILE, so that a transpose (NIfTI's x-fastest order to C order and back) reads and
 * writes whole cache lines. */
enum { PP_TILE = 16 };
#define PP_COPY3(T)                                                                                            \
  do {                                                                                                         \
    const T *sp = src;                                                                                         \
    for (int64_t k = 0; k < sh[c]; k++)                                                                        \
      for (int64_t y0 = 0; y0 < sh[b]; y0 += PP_TILE)                                                          \
        for (int64_t x0 = 0; x0 < sh[a]; x0 += PP_TILE) {                                                      \
          const int64_t y1 = y0 + PP_TILE < sh[b] ? y0 + PP_TILE : sh[b];                                      \
          const int64_t x1 = x0 + PP_TILE < sh[a] ? x0 + PP_TILE : sh[a];                                      \
          for (int64_t y = y0; y < y1; y++) {                                                                  \
            const T *s = sp + k * ss[c] + y * ss[b];                                                           \
            float *d = dst + k * ds[c] + y * ds[b];                                                            \
            for (int64_t x = x0; x < x1; x++) d[x * ds[a]] = (float)((double)s[x * ss[a]] * slope + inter);    \
          }                                                                                                    \
        }                                                                                                      \
  } while (0)

static int fastest_axis(const int64_t st[3], int not) {
  int best = -1;
  for (int d = 0; d < 3; d++)
    if (d != not && (best < 0 || llabs(st[d]) < llabs(st[best]))) best = d;
  return best;
}

static void copy3(float *dst, const int64_t ds[3], const void *src, ndf_dtype t, const int64_t ss[3],
                  const int64_t sh[3], double slope, double inter) {
  const int a = fastest_axis(ss, -1), bd = fastest_axis(ds, -1);
  const int b = bd != a ? bd : fastest_axis(ds, a), c = 3 - a - b;
  switch (t) {
    case NDF_BOOL:
    case NDF_UINT8: PP_COPY3(uint8_t); break;
    case NDF_INT8: PP_COPY3(int8_t); break;
    case NDF_UINT16: PP_COPY3(uint16_t); break;
    case NDF_INT16: PP_COPY3(int16_t); break;
    case NDF_UINT32: PP_COPY3(uint32_t); break;
    case NDF_INT32: PP_COPY3(int32_t); break;
    case NDF_FLOAT32: PP_COPY3(float); break;
    case NDF_FLOAT64: PP_COPY3(double); break;
    case NDF_INT64: PP_COPY3(int64_t); break;
    case NDF_UINT64: PP_COPY3(uint64_t); break;
    default: break;
  }
}

/* Volume t of src (the 3 spatial axes; taxis the time axis of a 4-D array, else -1) as a
 * C-contiguous float32 host array, NIfTI's scaling (scl_slope, scl_inter) applied. */
static int extract_volume(const ndfio_image *src, int taxis, int64_t t, ndf_array *dst) {
  const ndf_array *a = &src->arr;
  int64_t sh[3] = {1, 1, 1}, str[3] = {0, 0, 0}, base = 0;
  int k = 0;
  for (int d = 0; d < a->ndim; d++) {
    if (d == taxis) {
      base += t * a->strides[d];
    } else if (k < 3) {
      sh[k] = a->shape[d];
      str[k++] = a->strides[d];
    }
  }
  if (cli_alloc(NULL, dst, NDF_FLOAT32, 3, sh) != 0) return -1;
  double slope = 1, inter = 0;
  const nifti_image *nim = src->nifti;
  if (nim && nim->scl_slope != 0 && isfinite(nim->scl_slope) && isfinite(nim->scl_inter)) {
    slope = nim->scl_slope;
    inter = nim->scl_inter;
  }
  copy3(dst->data, dst->strides, (const char *)a->data + base * (int64_t)ndf_dtype_size(a->dtype), a->dtype, str, sh,
        slope, inter);
  return 0;
}

/* The reader's half of a volume: its 3-D volumes in float32, its time axis and affine. */
static void prepare_item(pp_item *it, int time_axis) {
  const ndf_array *a = &it->img.arr;
  it->nt = 1;
  it->taxis = -1;
  if (a->ndim < 1 || a->ndim > 4) {
    it->status = NDF_EINVAL;
    snprintf(it->err, sizeof it->err, "%s: %d axes (expected a 3-D volume, or 4-D with a time axis)", it->path,
             a->ndim);
    return;
  }
  if (a->ndim == 4) {
    it->taxis = time_axis < 0 ? 3 : time_axis;
    it->nt = (int)a->shape[it->taxis];
  }
  affine_of(&it->img, it->affine);
  it->vols = calloc((size_t)it->nt, sizeof *it->vols);
  for (int t = 0; it->vols && t < it->nt; t++)
    if (extract_volume(&it->img, it->taxis, t, &it->vols[t]) != 0) {
      for (int u = 0; u < t; u++) free(it->vols[u].data);
      free(it->vols);
      it->vols = NULL;
    }
  if (!it->vols) {
    it->status = NDF_ENOMEM;
    snprintf(it->err, sizeof it->err, "%s: out of memory for its float32 copy", it->path);
  }
  free(it->img.owned); /* the header stays for the output's */
  it->img.owned = NULL;
  it->img.arr.data = NULL;
}

static void item_free(pp_item *it) {
  for (int t = 0; it->vols && t < it->nt; t++) free(it->vols[t].data);
  free(it->vols);
  it->vols = NULL;
  ndfio_image_free(&it->img);
}

/* ---- one volume --------------------------------------------------------------------------- */

typedef struct pp_steprec {
  const char *name;
  ndf_status status;
  double start, wall_s; /* start: the monotonic clock */
  pp_note note;
  char error[512];
} pp_steprec;

/* The result of one 3-D volume on the host: image, mask (data NULL without), affine. */
typedef struct pp_result {
  ndf_array img, mask;
  double affine[16];
  pp_steprec rec[MAX_STEPS];
  int nrec;
} pp_result;

static void result_free(pp_result *r) {
  free(r->img.data);
  free(r->mask.data);
  memset(r, 0, sizeof *r);
}

/* Copies a device array to a fresh host one (a plain copy on the CPU backend). */
static ndf_status to_host(ndf_ctx *ctx, const ndf_array *a, ndf_array *h) {
  memset(h, 0, sizeof *h);
  if (cli_alloc(NULL, h, a->dtype, a->ndim, a->shape) != 0) return NDF_ENOMEM;
  ndf_status s = ndf_array_copy(ctx, h, a);
  if (s == NDF_OK) s = ndf_ctx_synchronize(ctx);
  if (s != NDF_OK) {
    free(h->data);
    h->data = NULL;
  }
  return s;
}

/* Runs the steps over one host volume on ctx.  NDF_OK with res filled, or the failing status
 * (res->rec says which step and why). */
static ndf_status run_steps(ndf_ctx *ctx, const int *steps, int nsteps, const pp_opts *o, const ndf_array *host,
                            const double affine[16], pp_result *res) {
  pp_vol v;
  memset(&v, 0, sizeof v);
  memcpy(v.affine, affine, sizeof v.affine);
  ndf_status s = ndf_array_alloc(ctx, &v.img, dev_of(ctx), NDF_FLOAT32, 3, host->shape);
  if (s == NDF_OK) s = ndf_array_copy(ctx, &v.img, host);
  res->nrec = 0;
  for (int i = 0; i < nsteps && s == NDF_OK; i++) {
    pp_steprec *rec = &res->rec[res->nrec++];
    memset(rec, 0, sizeof *rec);
    rec->name = STEPS[steps[i]].name;
    rec->start = now_s();
    s = STEPS[steps[i]].run(ctx, o, &v, &rec->note);
    if (s == NDF_OK) s = ndf_ctx_synchronize(ctx);
    rec->wall_s = now_s() - rec->start;
    rec->status = s;
    if (s != NDF_OK) {
      const char *m = ndf_errmsg(ctx);
      snprintf(rec->error, sizeof rec->error, "%s",
               rec->note.error[0] ? rec->note.error : m && *m ? m : ndf_status_string(s));
    }
  }
  if (s == NDF_OK) s = to_host(ctx, &v.img, &res->img);
  if (s == NDF_OK && v.mask.data) s = to_host(ctx, &v.mask, &res->mask);
  memcpy(res->affine, v.affine, sizeof v.affine);
  ndf_array_free(ctx, &v.img);
  ndf_array_free(ctx, &v.mask);
  if (s != NDF_OK) {
    free(res->img.data);
    free(res->mask.data);
    res->img.data = res->mask.data = NULL;
  }
  return s;
}

/* ---- JSON ------------------------------------------------------------------------------------- */

static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c == '\n') fputs("\\n", f);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

static void json_num(FILE *f, double x) {
  if (isfinite(x)) fprintf(f, "%.9g", x);
  else fputs("null", f);
}

/* ---- the command -------------------------------------------------------------------------------- */

static int parse_list3(const char *opt, const char *s, double *v) {
  int n = 0;
  for (;;) {
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (end == s || errno || !isfinite(x) || n == 3 || (*end && *end != ',')) {
      errorf("bad value for --%s (expected 1 or 3 numbers separated by commas)", opt);
      return -1;
    }
    v[n++] = x;
    if (!*end) break;
    s = end + 1;
  }
  if (n == 2) {
    errorf("bad value for --%s (expected 1 or 3 numbers separated by commas)", opt);
    return -1;
  }
  if (n == 1) v[1] = v[2] = v[0];
  return 0;
}

static int parse_steps(const char *s, int *steps, int *n) {
  *n = 0;
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", s);
  for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
    int k = -1;
    for (int i = 0; i < NSTEPS; i++)
      if (!strcmp(tok, STEPS[i].name)) k = i;
    if (k < 0) {
      char names[512] = "";
      for (int i = 0; i < NSTEPS; i++) appendf(names, sizeof names, "%s%s", i ? ", " : "", STEPS[i].name);
      errorf("unknown step '%s' in --steps (steps: %s)", tok, names);
      return -1;
    }
    if (*n == MAX_STEPS) {
      errorf("--steps: more than %d steps", MAX_STEPS);
      return -1;
    }
    steps[(*n)++] = k;
  }
  if (*n == 0) {
    errorf("--steps: no step given");
    return -1;
  }
  return 0;
}

static void print_usage(void) {
  fputs(pp_usage, stdout);
  fputs("steps:\n", stdout);
  for (int i = 0; i < NSTEPS; i++) printf("  %-11s %s\n", STEPS[i].name, STEPS[i].doc);
}

static void progress(int mode, int done, int total, const char *name, int failed) {
  if (mode == 0) return;
  if (mode == 2) {
    fprintf(stderr, "preprocess: %d/%d %s%s\n", done, total, name, failed ? " FAILED" : "");
    return;
  }
  const int w = 30, k = total ? done * w / total : w;
  fprintf(stderr, "\r[");
  for (int i = 0; i < w; i++) fputc(i < k ? '#' : ' ', stderr);
  fprintf(stderr, "] %d/%d %-40.40s", done, total, name);
  if (done == total) fputc('\n', stderr);
  fflush(stderr);
}

/* ---- one volume: process, write, report ------------------------------------------------------------ */

/* A volume's way through the run: processed by a worker, written by a writer, reported at the end. */
typedef struct pp_job {
  const char *path;
  char stem[1024], outpath[4096], pngpath[4096];
  int ok, worker, finished;
  char err[1024], warn[512];
  const char *device;
  int retried, nt, taxis;
  pp_result *res;     /* nt results; their arrays are freed once written, their step records kept */
  ndf_array out;      /* the output, 3-D or 4-D float32 */
  nifti_image *hdr;   /* its header */
  ndf_array ssim_map; /* --reference: the SSIM map of time point 0 */
  double mssim, read_s, process_s, write_s, t0, wall_s;
  double read_at[2], process_at[2], write_at[2]; /* when each phase started and ended (the monotonic clock) */
  int64_t shape[3];
  double affine[16];
} pp_job;

enum { PP_QUEUE = 64 };
/* The writers' queue: volume indices in order[queued % PP_QUEUE], taken in order.  Volumes finish
 * in any order; their errors and progress are printed in input order (next_report: the first
 * volume not yet printed). */
typedef struct pp_run {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pp_job *jobs;
  int order[PP_QUEUE], queued, taken, closing, finished, next_report, montage, prog, total;
} pp_run;

/* The worker's CPU context for retries after NDF_ENOMEM on the GPU, made with cpu_opts when first
 * needed: *cpu_ctx, or NULL when it cannot be made. */
static ndf_ctx *cpu_fallback(ndf_ctx **cpu_ctx, const ndf_ctx_options *cpu_opts) {
  if (!*cpu_ctx && ndf_ctx_create(cpu_ctx, cpu_opts) != NDF_OK) *cpu_ctx = NULL;
  return *cpu_ctx;
}

/* The SSIM of time point 0's result against the reference on ctx's backend: jb->ssim_map (host,
 * allocated here) and jb->mssim.  The device copies are freed on every path. */
static ndf_status volume_ssim(ndf_ctx *ctx, pp_job *jb, const ndf_array *refvol, const ndf_ssim_options *so)
{
  ndf_array ms, d1 = {0}, d2 = {0}, dm = {0}, dms = {0};
  ndf_array_init(&ms, &jb->mssim, NDF_DEVICE_CPU, NDF_FLOAT64, 0, NULL);
  const ndf_device_type dv = dev_of(ctx);
  ndf_status s = jb->ssim_map.data || cli_alloc(NULL, &jb->ssim_map, NDF_FLOAT32, 3, jb->shape) == 0 ? NDF_OK : NDF_ENOMEM;
  if (s == NDF_OK) s = ndf_array_alloc(ctx, &d1, dv, NDF_FLOAT32, 3, jb->shape);
  if (s == NDF_OK) s = ndf_array_alloc(ctx, &d2, dv, NDF_FLOAT32, 3, jb->shape);
  if (s == NDF_OK) s = ndf_array_alloc(ctx, &dm, dv, NDF_FLOAT32, 3, jb->shape);
  if (s == NDF_OK) s = ndf_array_alloc(ctx, &dms, dv, NDF_FLOAT64, 0, NULL);
  if (s == NDF_OK) s = ndf_array_copy(ctx, &d1, &jb->res[0].img);
  if (s == NDF_OK) s = ndf_array_copy(ctx, &d2, refvol);
  if (s == NDF_OK) s = ndf_structural_similarity(ctx, &d1, &d2, &dms, &dm, so);
  if (s == NDF_OK) s = ndf_array_copy(ctx, &jb->ssim_map, &dm);
  if (s == NDF_OK) s = ndf_array_copy(ctx, &ms, &dms);
  if (s == NDF_OK) s = ndf_ctx_synchronize(ctx);
  ndf_array_free(ctx, &d1);
  ndf_array_free(ctx, &d2);
  ndf_array_free(ctx, &dm);
  ndf_array_free(ctx, &dms);
  return s;
}

/* Runs the steps over every time point of it (retrying on the CPU after NDF_ENOMEM on the GPU, on
 * *cpu_ctx, made with cpu_opts when first needed) and assembles the output with its header: jb->ok,
 * or jb->err says why not. */
static void process_volume(ndf_ctx *ctx, ndf_ctx **cpu_ctx, const ndf_ctx_options *cpu_opts, const int *steps,
                           int nsteps, const pp_opts *o, const pp_item *it, const ndf_array *refvol,
                           const char *outdir, const char *ext, const char *devname, pp_job *jb) {
  stem_of(it->path, jb->stem, sizeof jb->stem);
  snprintf(jb->outpath, sizeof jb->outpath, "%s/%s%s", outdir, jb->stem, ext);
  snprintf(jb->pngpath, sizeof jb->pngpath, "%s/%s.png", outdir, jb->stem);
  jb->device = devname;
  jb->nt = it->status == NDF_OK ? it->nt : 1;
  jb->taxis = it->status == NDF_OK ? it->taxis : -1;
  jb->mssim = NAN;
  jb->ok = it->status == NDF_OK;
  const double tp = now_s();
  if (!jb->ok) snprintf(jb->err, sizeof jb->err, "%s", it->err);
  if (jb->ok && !(jb->res = calloc((size_t)jb->nt, sizeof *jb->res))) {
    jb->ok = 0;
    snprintf(jb->err, sizeof jb->err, "out of memory");
  }
  for (int t = 0; jb->ok && t < jb->nt; t++) {
    ndf_ctx *use = jb->retried ? *cpu_ctx : ctx;
    ndf_status s = run_steps(use, steps, nsteps, o, &it->vols[t], it->affine, &jb->res[t]);
    if (s == NDF_ENOMEM && ndf_ctx_has_cuda(use)) { /* out of GPU memory: the whole volume again on the CPU */
      if (cpu_fallback(cpu_ctx, cpu_opts)) {
        jb->retried = 1;
        jb->device = "cpu";
        for (int u = 0; u < t; u++) result_free(&jb->res[u]);
        t = -1;
        continue;
      }
    }
    if (s != NDF_OK) {
      jb->ok = 0;
      const pp_steprec *r = jb->res[t].nrec ? &jb->res[t].rec[jb->res[t].nrec - 1] : NULL;
      if (r) snprintf(jb->err, sizeof jb->err, "step %s: %s", r->name, r->error);
      else snprintf(jb->err, sizeof jb->err, "%s", ndf_status_string(s));
    } else if (t > 0 && memcmp(jb->res[t].img.shape, jb->res[0].img.shape, sizeof(int64_t) * 3) != 0) {
      jb->ok = 0;
      snprintf(jb->err, sizeof jb->err, "time point %d has another output shape than time point 0 (crop)", t);
    }
  }
  if (jb->ok) {
    /* the output: 3-D, or 4-D with the time axis where it was */
    const int ond = jb->taxis >= 0 ? 4 : 3;
    int64_t osh[4];
    memcpy(jb->shape, jb->res[0].img.shape, sizeof jb->shape);
    memcpy(jb->affine, jb->res[0].affine, sizeof jb->affine);
    for (int d = 0, k = 0; d < ond; d++) osh[d] = d == jb->taxis ? jb->nt : jb->shape[k++];
    if (cli_alloc(NULL, &jb->out, NDF_FLOAT32, ond, osh) != 0) {
      jb->ok = 0;
      snprintf(jb->err, sizeof jb->err, "out of memory for the output");
    }
    /* in NIfTI's order (x fastest), so that the writer takes it as it is */
    for (int d = 0; d < ond; d++) jb->out.strides[d] = d ? jb->out.strides[d - 1] * osh[d - 1] : 1;
    int64_t ds[3];
    for (int d = 0, k = 0; d < ond; d++)
      if (d != jb->taxis) ds[k++] = jb->out.strides[d];
    for (int t = 0; jb->ok && t < jb->nt; t++) {
      const ndf_array *r = &jb->res[t].img;
      float *dst = (float *)jb->out.data + (jb->taxis >= 0 ? t * jb->out.strides[jb->taxis] : 0);
      copy3(dst, ds, r->data, NDF_FLOAT32, r->strides, jb->shape, 1, 0);
    }
    if (jb->ok && !(jb->hdr = header_for(&it->img, jb->affine, osh, ond))) {
      jb->ok = 0;
      snprintf(jb->err, sizeof jb->err, "out of memory for the NIfTI header");
    }
  }
  if (jb->ok && refvol) {
    if (jb->retried) ctx = *cpu_ctx; /* the volume ran on the CPU: so does its SSIM */
    if (memcmp(refvol->shape, jb->shape, sizeof jb->shape) != 0) {
      snprintf(jb->warn, sizeof jb->warn, "--reference: shape %lldx%lldx%lld, the output's %lldx%lldx%lld: no SSIM",
               (long long)refvol->shape[0], (long long)refvol->shape[1], (long long)refvol->shape[2],
               (long long)jb->shape[0], (long long)jb->shape[1], (long long)jb->shape[2]);
    } else {
      /* SSIM against the reference on the run's backend, its data range the reference's */
      ndf_ssim_options so;
      ndf_ssim_options_init(&so);
      float lo = INFINITY, hi = -INFINITY;
      const float *rv = refvol->data;
      for (int64_t e = 0; e < ndf_array_size(refvol); e++) {
        if (rv[e] < lo) lo = rv[e];
        if (rv[e] > hi) hi = rv[e];
      }
      so.data_range = hi > lo ? (double)hi - lo : 1;
      ndf_status s = volume_ssim(ctx, jb, refvol, &so);
      if (s == NDF_ENOMEM && ndf_ctx_has_cuda(ctx) && cpu_fallback(cpu_ctx, cpu_opts)) {
        ctx = *cpu_ctx; /* out of GPU memory: the SSIM on the CPU, as a volume's steps */
        s = volume_ssim(ctx, jb, refvol, &so);
      }
      if (s != NDF_OK) {
        snprintf(jb->warn, sizeof jb->warn, "--reference: SSIM failed: %s", ndf_errmsg(ctx));
        free(jb->ssim_map.data);
        memset(&jb->ssim_map, 0, sizeof jb->ssim_map);
        jb->mssim = NAN;
      }
    }
  }
  jb->process_s = now_s() - tp;
}

/* Writes a processed volume: its NIfTI file and (unless --no-montage) its PNG montage. */
static void write_volume(pp_run *run, pp_job *jb) {
  const double tw = jb->write_at[0] = now_s();
  ndfio_image himg = {.nifti = jb->hdr};
  if (ndfio_write(jb->outpath, &jb->out, &himg, jb->err, sizeof jb->err) != NDF_OK) jb->ok = 0;
  if (jb->ok && run->montage &&
      ndf_montage_write(jb->pngpath, &jb->res[0].img, jb->res[0].mask.data ? &jb->res[0].mask : NULL,
                        jb->ssim_map.data ? &jb->ssim_map : NULL, jb->err, sizeof jb->err) != 0)
    jb->ok = 0;
  jb->write_at[1] = now_s();
  jb->write_s = jb->write_at[1] - tw;
}

/* The big buffers of a volume, once written (the step records stay for the report). */
static void job_release(pp_job *jb) {
  for (int t = 0; jb->res && t < jb->nt; t++) {
    free(jb->res[t].img.data);
    free(jb->res[t].mask.data);
    jb->res[t].img.data = jb->res[t].mask.data = NULL;
  }
  free(jb->out.data);
  free(jb->ssim_map.data);
  jb->out.data = jb->ssim_map.data = NULL;
  if (jb->hdr) nifti_image_free(jb->hdr);
  jb->hdr = NULL;
}

static void job_free(pp_job *jb) {
  job_release(jb);
  free(jb->res);
  jb->res = NULL;
}

/* A volume is done: its buffers go; under the run's lock, the progress moves over every volume
 * done from the first one not yet printed on, in input order. */
static void finish_volume(pp_run *run, pp_job *jb) {
  job_release(jb);
  jb->wall_s = now_s() - jb->t0 + jb->read_s;
  pthread_mutex_lock(&run->mu);
  jb->finished = 1;
  while (run->next_report < run->total && run->jobs[run->next_report].finished) {
    const pp_job *j = &run->jobs[run->next_report++];
    run->finished++;
    if (!j->ok && run->prog == 1 && run->finished > 1) fputc('\n', stderr); /* below the bar */
    if (!j->ok) errorf("%s: %s", j->path, j->err);
    if (j->warn[0]) { /* also in the report */
      if (j->ok && run->prog == 1 && run->finished > 1) fputc('\n', stderr);
      errorf("%s: warning: %s", j->path, j->warn);
    }
    progress(run->prog, run->finished, run->total, j->stem, !j->ok);
  }
  pthread_mutex_unlock(&run->mu);
}

static void *writer_main(void *arg) {
  pp_run *run = arg;
  for (;;) {
    pthread_mutex_lock(&run->mu);
    while (run->taken == run->queued && !run->closing) pthread_cond_wait(&run->cv, &run->mu);
    if (run->taken == run->queued) {
      pthread_mutex_unlock(&run->mu);
      return NULL;
    }
    pp_job *jb = &run->jobs[run->order[run->taken % PP_QUEUE]];
    run->taken++;
    pthread_cond_broadcast(&run->cv);
    pthread_mutex_unlock(&run->mu);
    write_volume(run, jb);
    finish_volume(run, jb);
  }
}

/* [start, end] of a phase, in seconds since t0; null for a phase that did not happen. */
static void json_span(FILE *f, const double at[2], double t0) {
  if (at[1] <= 0) {
    fputs("null", f);
    return;
  }
  fprintf(f, "[%.4f, %.4f]", at[0] - t0, at[1] - t0);
}

/* A volume's entry in the report (its times in seconds since t0, the run's start). */
static void report_volume(FILE *rep, const pp_job *jb, int vi, int montage, int reference, double t0) {
  fprintf(rep, "%s    {\"input\": ", vi ? ",\n" : "");
  json_str(rep, jb->path);
  fprintf(rep, ", \"status\": \"%s\"", jb->ok ? "ok" : "failed");
  if (!jb->ok) {
    fprintf(rep, ", \"error\": ");
    json_str(rep, jb->err);
  }
  if (jb->warn[0]) {
    fprintf(rep, ", \"warning\": ");
    json_str(rep, jb->warn);
  }
  fprintf(rep, ", \"device\": \"%s\", \"retried_on_cpu\": %s", jb->device ? jb->device : "none",
          jb->retried ? "true" : "false");
  if (jb->ok) {
    fprintf(rep, ", \"output\": ");
    json_str(rep, jb->outpath);
    if (montage) {
      fprintf(rep, ", \"montage\": ");
      json_str(rep, jb->pngpath);
    }
    fprintf(rep, ", \"shape\": [%lld, %lld, %lld], \"time_points\": %d", (long long)jb->shape[0],
            (long long)jb->shape[1], (long long)jb->shape[2], jb->nt);
    fprintf(rep, ", \"affine\": [");
    for (int i = 0; i < 16; i++) {
      fprintf(rep, "%s", i ? ", " : "");
      json_num(rep, jb->affine[i]);
    }
    fprintf(rep, "]");
    if (reference) {
      fprintf(rep, ", \"ssim\": ");
      json_num(rep, jb->mssim);
    }
  }
  fprintf(rep, ", \"read_s\": ");
  json_num(rep, jb->read_s);
  fprintf(rep, ", \"process_s\": ");
  json_num(rep, jb->process_s);
  fprintf(rep, ", \"write_s\": ");
  json_num(rep, jb->write_s);
  fprintf(rep, ", \"wall_s\": ");
  json_num(rep, jb->wall_s);
  fprintf(rep, ",\n     \"worker\": %d, \"read_at\": ", jb->worker);
  json_span(rep, jb->read_at, t0);
  fprintf(rep, ", \"process_at\": ");
  json_span(rep, jb->process_at, t0);
  fprintf(rep, ", \"write_at\": ");
  json_span(rep, jb->write_at, t0);
  fprintf(rep, ",\n     \"steps\": [");
  if (jb->res) {
    /* the steps of time point 0, or of the one that failed */
    int show = 0;
    for (int t = 0; t < jb->nt; t++)
      if (jb->res[t].nrec && jb->res[t].rec[jb->res[t].nrec - 1].status != NDF_OK) show = t;
    const pp_result *r = &jb->res[show];
    for (int k = 0; k < r->nrec; k++) {
      const pp_steprec *sr = &r->rec[k];
      fprintf(rep, "%s\n       {\"name\": \"%s\", \"status\": \"%s\", \"wall_s\": ", k ? "," : "", sr->name,
              sr->status == NDF_OK ? "ok" : "failed");
      json_num(rep, sr->wall_s);
      fprintf(rep, ", \"start_s\": %.4f", sr->start - t0);
      fprintf(rep, ", \"device\": \"%s\", \"params\": {%s}, \"metrics\": {%s}", jb->device, sr->note.params,
              sr->note.metrics);
      if (sr->status != NDF_OK) {
        fprintf(rep, ", \"error\": ");
        json_str(rep, sr->error);
      }
      fprintf(rep, "}");
    }
  }
  fprintf(rep, "]}");
}

/* ---- the workers ------------------------------------------------------------------------------- */

/* What the workers share. */
typedef struct pp_work {
  pp_reader *rd;
  pp_run *run;
  const int *steps;
  int nsteps, nw; /* nw: writer threads (0: the workers write) */
  const pp_opts *o;
  const ndf_array *refvol;
  const char *outdir, *ext, *devname;
  ndf_ctx_options cpu_opts; /* for the CPU contexts of the retries after NDF_ENOMEM */
} pp_work;

/* A worker runs the steps of one volume at a time on its own context (its own stream), so that
 * one volume's host work (BET's statistics, N4's fitting, the plans) overlaps another's device
 * work.  A context is used by one thread only. */
typedef struct pp_worker {
  pp_work *w;
  int id, volumes;
  ndf_ctx *ctx, *cpu_ctx;
  double busy_s, wait_input_s, wait_writers_s;
  pthread_t th;
} pp_worker;

static void *worker_main(void *arg) {
  pp_worker *wk = arg;
  pp_work *w = wk->w;
  pp_run *run = w->run;
  for (;;) {
    double t = now_s();
    const int vi = reader_next(w->rd);
    wk->wait_input_s += now_s() - t;
    if (vi < 0) return NULL;
    pp_item *it = &w->rd->items[vi];
    pp_job *jb = &run->jobs[vi];
    jb->path = it->path;
    jb->read_s = it->read_s;
    memcpy(jb->read_at, it->read_at, sizeof jb->read_at);
    jb->worker = wk->id;
    jb->t0 = jb->process_at[0] = now_s();
    process_volume(wk->ctx, &wk->cpu_ctx, &w->cpu_opts, w->steps, w->nsteps, w->o, it, w->refvol, w->outdir,
                   w->ext, w->devname, jb);
    item_free(it);
    jb->process_at[1] = now_s();
    wk->busy_s += jb->process_at[1] - jb->process_at[0];
    wk->volumes++;
    if (jb->ok && w->nw > 0) {
      /* a writer writes it; at most 2 * writers volumes wait in memory */
      t = now_s();
      pthread_mutex_lock(&run->mu);
      while (run->queued - run->taken >= 2 * w->nw) pthread_cond_wait(&run->cv, &run->mu);
      run->order[run->queued % PP_QUEUE] = vi;
      run->queued++;
      pthread_cond_broadcast(&run->cv);
      pthread_mutex_unlock(&run->mu);
      wk->wait_writers_s += now_s() - t;
    } else {
      if (jb->ok) write_volume(run, jb);
      finish_volume(run, jb);
    }
  }
}

/* ---- the run's timing ------------------------------------------------------------------------------- */

static int cmp_span(const void *a, const void *b) {
  const double x = ((const double *)a)[0], y = ((const double *)b)[0];
  return (x > y) - (x < y);
}

/* The time covered by n spans [s, e] (v[2i], v[2i + 1]; sorted here): the length of their union. */
static double span_union(double *v, int n) {
  qsort(v, (size_t)n, 2 * sizeof *v, cmp_span);
  double tot = 0, s = 0, e = -INFINITY;
  for (int i = 0; i < n; i++) {
    if (v[2 * i] > e) {
      if (e > s) tot += e - s;
      s = v[2 * i];
      e = v[2 * i + 1];
    } else if (v[2 * i + 1] > e) {
      e = v[2 * i + 1];
    }
  }
  if (n && e > s) tot += e - s;
  return tot;
}

/* One phase over the volumes: the sum of its times, the time any volume was in it (span), their
 * ratio (how many at once on average) and when the last one ended (since t0). */
static void report_phase(FILE *rep, const char *name, const pp_job *jobs, int n, size_t at_off, double t0,
                         double *spans) {
  double sum = 0, last = 0;
  int k = 0;
  for (int i = 0; i < n; i++) {
    const double *at = (const double *)((const char *)&jobs[i] + at_off);
    if (at[1] <= 0) continue;
    spans[2 * k] = at[0];
    spans[2 * k + 1] = at[1];
    k++;
    sum += at[1] - at[0];
    if (at[1] - t0 > last) last = at[1] - t0;
  }
  const double span = span_union(spans, k);
  fprintf(rep, "    \"%s\": {\"sum_s\": %.4f, \"span_s\": %.4f, \"concurrency\": %.3f, \"last_end_s\": %.4f},\n", name,
          sum, span, span > 0 ? sum / span : 0.0, last);
}

/* The report's "timing": where the run's wall time went. */
static void report_timing(FILE *rep, const pp_job *jobs, int n, const pp_worker *wks, int nwk, int nsteps,
                          const int *steps, double t0, double ready) {
  double *spans = malloc(sizeof(double) * 2 * (size_t)(n ? n : 1));
  fprintf(rep, "  \"timing\": {\n    \"startup_s\": %.4f,\n", ready - t0);
  if (spans) {
    report_phase(rep, "read", jobs, n, offsetof(pp_job, read_at), t0, spans);
    report_phase(rep, "process", jobs, n, offsetof(pp_job, process_at), t0, spans);
    report_phase(rep, "write", jobs, n, offsetof(pp_job, write_at), t0, spans);
  }
  free(spans);
  fprintf(rep, "    \"steps_sum_s\": {");
  for (int i = 0; i < nsteps; i++) {
    double sum = 0;
    for (int v = 0; v < n; v++)
      for (int t = 0; jobs[v].res && t < jobs[v].nt; t++)
        for (int k = 0; k < jobs[v].res[t].nrec; k++)
          if (jobs[v].res[t].rec[k].name == STEPS[steps[i]].name) sum += jobs[v].res[t].rec[k].wall_s;
    int dup = 0; /* a step listed twice is summed once */
    for (int j = 0; j < i; j++) dup |= steps[j] == steps[i];
    if (!dup) fprintf(rep, "%s\"%s\": %.4f", i ? ", " : "", STEPS[steps[i]].name, sum);
  }
  fprintf(rep, "},\n    \"workers\": [");
  for (int k = 0; k < nwk; k++)
    fprintf(rep, "%s\n      {\"worker\": %d, \"volumes\": %d, \"busy_s\": %.4f, \"wait_input_s\": %.4f, "
            "\"wait_writers_s\": %.4f}", k ? "," : "", k, wks[k].volumes, wks[k].busy_s, wks[k].wait_input_s,
            wks[k].wait_writers_s);
  fprintf(rep, "]\n  },\n");
}

int ndf_cli_preprocess(int argc, char **argv) {
  pp_opts o;
  memset(&o, 0, sizeof o);
  o.spacing[0] = o.spacing[1] = o.spacing[2] = 1;
  o.order = 1;
  o.margin[0] = o.margin[1] = o.margin[2] = 4;
  o.time_axis = -1;
  ndf_normalize_options_init(&o.norm);
  ndf_n4_options_init(&o.n4);
  o.n4.shrink_factor = 4; /* the N4 tools' usual -s for brain MRI */
  ndf_skull_strip_options_init(&o.bet);
  const double run_t0 = now_s();
  int steps[MAX_STEPS], nsteps = 0, montage = 1, prog = -1, io_threads = 0, nworkers = 0, cpu_threads = 0;
  size_t gpu_limit = 0;
  const char *ext = ".nii.gz";
  const char *outdir = NULL, *report = NULL, *device = "auto", *refpath = NULL, *steps_arg = "reorient,resample,normalize";
  int have_centre = 0, have_width = 0;
  strlist inputs = {0};
  int rc = PP_USAGE;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      print_usage();
      rc = 0;
      goto out_free;
    }
    if (strncmp(a, "--", 2) != 0) {
      if (expand_input(&inputs, a) != 0) {
        errorf("out of memory");
        rc = PP_FAIL;
        goto out_free;
      }
      continue;
    }
    const char *name = a + 2;
    if (!strcmp(name, "no-montage")) {
      montage = 0;
      continue;
    }
    if (i + 1 >= argc) {
      errorf("preprocess: --%s needs a value", name);
      goto out_free;
    }
    const char *v = argv[++i];
    long l;
    if (!strcmp(name, "out")) outdir = v;
    else if (!strcmp(name, "report")) report = v;
    else if (!strcmp(name, "reference")) refpath = v;
    else if (!strcmp(name, "steps")) steps_arg = v;
    else if (!strcmp(name, "spacing")) {
      if (parse_list3(name, v, o.spacing)) goto out_free;
      for (int d = 0; d < 3; d++)
        if (!(o.spacing[d] > 0)) {
          errorf("--spacing: %g is not a positive spacing", o.spacing[d]);
          goto out_free;
        }
    } else if (!strcmp(name, "margin")) {
      double m[3];
      if (parse_list3(name, v, m)) goto out_free;
      for (int d = 0; d < 3; d++) {
        if (m[d] < 0 || m[d] != floor(m[d]) || m[d] > 1e9) {
          errorf("--margin: %g is not a number of voxels", m[d]);
          goto out_free;
        }
        o.margin[d] = (int64_t)m[d];
      }
    } else if (!strcmp(name, "order")) {
      if (parse_long_arg(name, v, 0, 5, &l)) goto out_free;
      o.order = (int)l;
    } else if (!strcmp(name, "shrink-factor")) {
      if (parse_long_arg(name, v, 1, 64, &l)) goto out_free;
      o.n4.shrink_factor = (int)l;
    } else if (!strcmp(name, "f")) {
      char *e;
      o.bet.fractional_intensity_threshold = strtod(v, &e);
      if (*e || !(o.bet.fractional_intensity_threshold > 0 && o.bet.fractional_intensity_threshold < 1)) {
        errorf("--f: %s is not a fractional intensity threshold in (0, 1)", v);
        goto out_free;
      }
    } else if (!strcmp(name, "io-threads")) {
      if (parse_long_arg(name, v, 1, 16, &l)) goto out_free;
      io_threads = (int)l;
    } else if (!strcmp(name, "workers")) {
      if (parse_long_arg(name, v, 1, PP_MAX_WORKERS, &l)) goto out_free;
      nworkers = (int)l;
    } else if (!strcmp(name, "cpu-threads")) {
      if (parse_long_arg(name, v, 1, NDF_MAX_CPU_THREADS, &l)) goto out_free;
      cpu_threads = (int)l;
    } else if (!strcmp(name, "gpu-memory-limit")) {
      if (parse_size_arg(name, v, &gpu_limit)) goto out_free;
    } else if (!strcmp(name, "format")) {
      if (strcmp(v, "nii") && strcmp(v, "nii.gz")) {
        errorf("bad value '%s' for --format (expected nii or nii.gz)", v);
        goto out_free;
      }
      ext = !strcmp(v, "nii") ? ".nii" : ".nii.gz";
    } else if (!strcmp(name, "time-axis")) {
      if (parse_long_arg(name, v, -1, 3, &l)) goto out_free;
      o.time_axis = (int)l;
    } else if (!strcmp(name, "modality")) {
      if (ndf_modality_from_name(v, &o.norm.modality) != NDF_OK) {
        errorf("bad value '%s' for --modality (expected ct or mri)", v);
        goto out_free;
      }
    } else if (!strcmp(name, "preset")) {
      double c, w;
      if (ndf_ct_window_preset(v, &c, &w) != NDF_OK) {
        errorf("bad value '%s' for --preset (brain, subdural, stroke, bone, lung, mediastinum, soft_tissue, liver)", v);
        goto out_free;
      }
      o.norm.preset = v;
    } else if (!strcmp(name, "centre") || !strcmp(name, "center")) {
      if (parse_double_arg(name, v, &o.norm.centre)) goto out_free;
      have_centre = 1;
    } else if (!strcmp(name, "width")) {
      if (parse_double_arg(name, v, &o.norm.width)) goto out_free;
      if (o.norm.width < 0) {
        errorf("--width: %g is negative", o.norm.width);
        goto out_free;
      }
      have_width = 1;
    } else if (!strcmp(name, "device")) {
      if (strcmp(v, "cpu") && strcmp(v, "cuda") && strcmp(v, "auto")) {
        errorf("bad value '%s' for --device (expected cpu, cuda or auto)", v);
        goto out_free;
      }
      device = v;
    } else if (!strcmp(name, "progress")) {
      prog = !strcmp(v, "none") ? 0 : !strcmp(v, "bar") ? 1 : !strcmp(v, "lines") ? 2 : !strcmp(v, "auto") ? -1 : -2;
      if (prog == -2) {
        errorf("bad value '%s' for --progress (expected auto, bar, lines or none)", v);
        goto out_free;
      }
    } else {
      errorf("preprocess: unknown option --%s (see ndforge preprocess --help)", name);
      goto out_free;
    }
  }
  if (parse_steps(steps_arg, steps, &nsteps)) goto out_free;
  if (have_centre != have_width) {
    errorf("--centre and --width go together");
    goto out_free;
  }
  if (have_centre && o.norm.preset) {
    errorf("give --preset or --centre/--width, not both");
    goto out_free;
  }
  if (!outdir) {
    errorf("preprocess needs --out DIR");
    goto out_free;
  }
  if (inputs.n == 0) {
    errorf("preprocess needs at least one INPUT");
    goto out_free;
  }
  if (prog == -1) prog = isatty(2) ? 1 : 2;
  const long ncores = sysconf(_SC_NPROCESSORS_ONLN) > 0 ? sysconf(_SC_NPROCESSORS_ONLN) : 1;
  if (io_threads == 0) /* readers and writers: up to 4 of each, leaving a core to the steps */
    io_threads = ncores > 5 ? 4 : ncores > 2 ? (int)ncores - 1 : 1;
  rc = PP_FAIL;
  if (mkdir(outdir, 0777) != 0 && errno != EEXIST) {
    errorf("cannot create '%s': %s", outdir, strerror(errno));
    goto out_free;
  }
  char report_path[4096];
  snprintf(report_path, sizeof report_path, "%s", report ? report : "");
  if (!report) snprintf(report_path, sizeof report_path, "%s/report.json", outdir);

  /* The readers start at once: the first inputs are read while the contexts are made. */
  pp_item *items = calloc((size_t)inputs.n, sizeof *items);
  pp_job *jobs = calloc((size_t)inputs.n, sizeof *jobs);
  pp_run run = {.jobs = jobs, .montage = montage, .prog = prog, .total = items && jobs ? inputs.n : 0};
  pp_reader rd = {.items = items, .n = items && jobs ? inputs.n : 0, .ahead = io_threads + 1,
                 .time_axis = o.time_axis};
  pthread_mutex_init(&rd.mu, NULL);
  pthread_cond_init(&rd.cv, NULL);
  pthread_mutex_init(&run.mu, NULL);
  pthread_cond_init(&run.cv, NULL);
  for (int i = 0; i < inputs.n && items; i++) items[i].path = inputs.v[i];
  pthread_t rth[16], wth[16];
  int nr = 0, nw = 0, started = 0, nwk = 0;
  for (int i = 0; i < io_threads && rd.n; i++)
    if (pthread_create(&rth[nr], NULL, reader_main, &rd) == 0) nr++;
  pp_worker *wks = NULL;
  ndfio_image ref = {0};
  ndf_array refvol = {0};
  FILE *rep = NULL;
  double ready = 0;
  char devdesc[300];
  const char *devname = "cpu";

  ndf_ctx_options cop;
  ndf_ctx_options_init(&cop);
  cop.backend = !strcmp(device, "cpu") ? NDF_BACKEND_CPU : !strcmp(device, "cuda") ? NDF_BACKEND_CUDA : NDF_BACKEND_AUTO;
  /* The first context tells the device; the workers' contexts follow once their number and
   * threads are known (it is freed after them, so that the CUDA context lives on). */
  ndf_ctx *probe = NULL;
  if (ndf_ctx_create(&probe, &cop) != NDF_OK) {
    errorf("cannot create a context: %s", ndf_last_error());
    goto out_stop;
  }
  const int cuda = ndf_ctx_has_cuda(probe);
  devname = cuda ? "cuda" : "cpu";
  snprintf(devdesc, sizeof devdesc, "%s", devname);
  ndf_ctx_info info;
  if (cuda && ndf_ctx_get_info(probe, &info) == NDF_OK) snprintf(devdesc, sizeof devdesc, "cuda: %s", info.device_name);
  /* Workers: on a GPU a few (one per 4 cores, 2 to 4), so that one volume's host work overlaps
   * another's kernels; on the CPU one per core (up to 8: every worker holds a volume and its
   * steps' memory).  Each worker's context runs its CPU work on cpu_threads threads, the cores
   * shared among the workers. */
  if (nworkers == 0)
    nworkers = cuda ? (ncores >= 16 ? 4 : ncores >= 12 ? 3 : 2) : ncores < 8 ? (int)ncores : 8;
  if (nworkers > inputs.n) nworkers = inputs.n;
  if (cpu_threads == 0) cpu_threads = ncores / nworkers > 1 ? (int)(ncores / nworkers) : 1;
  cop.backend = cuda ? NDF_BACKEND_CUDA : NDF_BACKEND_CPU;
  cop.cpu_threads = cpu_threads;
  cop.device_memory_limit = gpu_limit;
  wks = calloc((size_t)nworkers, sizeof *wks);
  for (; wks && nwk < nworkers; nwk++)
    if (ndf_ctx_create(&wks[nwk].ctx, &cop) != NDF_OK) break;
  ndf_ctx_destroy(probe);
  if (nwk == 0) {
    errorf("cannot create a context: %s", wks ? ndf_last_error() : "out of memory");
    goto out_stop;
  }
  if (refpath) {
    char err[1024];
    if (ndfio_read(refpath, &ref, err, sizeof err) != NDF_OK || extract_volume(&ref, -1, 0, &refvol) != 0) {
      errorf("--reference: %s", err);
      goto out_stop;
    }
  }
  /* The report is written at the end (volumes finish writing out of order); it must be writable. */
  rep = fopen(report_path, "w");
  if (!rep) {
    errorf("cannot write the report '%s': %s", report_path, strerror(errno));
    goto out_stop;
  }
  ready = now_s();

  for (int i = 0; i < io_threads && rd.n; i++)
    if (pthread_create(&wth[nw], NULL, writer_main, &run) == 0) nw++;
  if (rd.n && nr == 0) { /* no thread: read everything first */
    rd.ahead = inputs.n;
    reader_main(&rd);
  }
  pp_work work = {.rd = &rd, .run = &run, .steps = steps, .nsteps = nsteps, .nw = nw, .o = &o,
                  .refvol = refpath ? &refvol : NULL, .outdir = outdir, .ext = ext, .devname = devname};
  ndf_ctx_options_init(&work.cpu_opts);
  work.cpu_opts.backend = NDF_BACKEND_CPU;
  work.cpu_opts.cpu_threads = cpu_threads;
  /* worker 0 is this thread; the others are threads of their own (fewer if one cannot start) */
  started = 1;
  for (int k = 0; k < nwk; k++) {
    wks[k].w = &work;
    wks[k].id = k;
    if (k > 0 && rd.n && started == k && pthread_create(&wks[k].th, NULL, worker_main, &wks[k]) == 0) started++;
  }
  if (rd.n) worker_main(&wks[0]);
  for (int k = 1; k < started; k++) pthread_join(wks[k].th, NULL);
  pthread_mutex_lock(&run.mu);
  run.closing = 1;
  pthread_cond_broadcast(&run.cv);
  pthread_mutex_unlock(&run.mu);
  for (int i = 0; i < nw; i++) pthread_join(wth[i], NULL);
out_stop:
  /* the readers stop (on a failure before the workers started, after the input they are reading) */
  pthread_mutex_lock(&rd.mu);
  rd.stop = 1;
  pthread_cond_broadcast(&rd.cv);
  pthread_mutex_unlock(&rd.mu);
  for (int i = 0; i < nr; i++) pthread_join(rth[i], NULL);
  pthread_mutex_destroy(&rd.mu);
  pthread_cond_destroy(&rd.cv);
  pthread_mutex_destroy(&run.mu);
  pthread_cond_destroy(&run.cv);

  if (rep) {
    int nfailed = 0;
    fprintf(rep, "{\n  \"tool\": \"ndforge preprocess\",\n  \"version\": ");
    json_str(rep, ndf_version());
    fprintf(rep, ",\n  \"device\": ");
    json_str(rep, devdesc);
    fprintf(rep, ",\n  \"io_threads\": %d,\n  \"workers\": %d,\n  \"cpu_threads\": %d,\n  \"steps\": [",
            io_threads, started, cpu_threads);
    for (int i = 0; i < nsteps; i++) {
      fprintf(rep, "%s", i ? ", " : "");
      json_str(rep, STEPS[steps[i]].name);
    }
    fprintf(rep, "],\n");
    report_timing(rep, jobs, rd.n, wks, started, nsteps, steps, run_t0, ready);
    fprintf(rep, "  \"volumes\": [\n");
    for (int vi = 0; vi < rd.n; vi++) {
      nfailed += !jobs[vi].ok;
      report_volume(rep, &jobs[vi], vi, montage, refpath != NULL, run_t0);
    }
    fprintf(rep, "\n  ],\n  \"failed\": %d,\n  \"wall_s\": ", nfailed);
    json_num(rep, now_s() - run_t0);
    fprintf(rep, "\n}\n");
    const int werr = ferror(rep) | (fclose(rep) != 0);
    if (werr) errorf("cannot write the report '%s'", report_path);
    if (!items || !jobs) errorf("out of memory");
    rc = (nfailed || werr || !items || !jobs) ? PP_FAIL : 0;
  }
  for (int i = 0; i < rd.n; i++) {
    item_free(&items[i]); /* the inputs read ahead of a failure */
    job_free(&jobs[i]);
  }
  free(items);
  free(jobs);
  for (int k = 0; k < nwk; k++) {
    ndf_ctx_destroy(wks[k].cpu_ctx);
    ndf_ctx_destroy(wks[k].ctx);
  }
  free(wks);
  ndfio_image_free(&ref);
  free(refvol.data);
out_free:
  for (int i = 0; i < inputs.n; i++) free(inputs.v[i]);
  free(inputs.v);
  return rc;
}
