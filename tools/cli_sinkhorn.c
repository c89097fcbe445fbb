/*
 * cli_sinkhorn.c -- `ndforge sinkhorn`: entropic optimal transport between
 * histograms stored in .npy files (issue 6).
 *
 *   ndforge sinkhorn A.npy B.npy OUT.npy --epsilon E --max-iter N [--tol T]
 *           [--check-every K] [--grid 32,32 [--p 1|2 | --euclidean] | --cost C.npy]
 *           [--log-domain] [--device cpu|cuda]
 *
 * A and B are (n, d) (or (d,)) histograms of any real or integer dtype, each
 * row normalized to mass 1 here; OUT receives the n transport costs <P, C>
 * as float64 (shape (n,)).  With --grid the cost is sum_k |x_k - y_k|^p
 * (or the Euclidean distance with --euclidean) in grid-index units.
 * Exit status: 0 ok, 1 failure, 2 bad command line; nothing is written on failure.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ndfio.h"
#include "ndforge.h"


enum { SK_EXIT_USAGE = 2, SK_EXIT_RUN = 1 };


static const char *sk_usage =
    "usage: ndforge sinkhorn A.npy B.npy OUT.npy --epsilon E --max-iter N [--tol T]\n"
    "         [--check-every K] [--grid N0,N1,... [--p 1|2 | --euclidean] | --cost C.npy]\n"
    "         [--log-domain] [--device cpu|cuda]\n\n"
    "Entropic optimal transport (Sinkhorn) between the rows of A and B, (n, d)\n"
    "histograms (any real or integer dtype; each row is normalized to mass 1).\n"
    "OUT receives the n transport costs <P, C> of the entropic plans, float64.\n\n"
    "  --epsilon E       entropic regularization (> 0), in the units of the cost\n"
    "  --max-iter N      iterations at most (>= 1)\n"
    "  --tol T           stop a pair when the L1 error of its marginals <= T (default 0: run N)\n"
    "  --check-every K   iterations between error checks (default 10)\n"
    "  --grid N0,N1,...  the bins are a grid of this shape (d = product); the cost is\n"
    "                    sum_k |x_k - y_k|^p in grid-index units (not normalized)\n"
    "  --p 1|2           exponent of the grid cost (default 2; applied axis by axis)\n"
    "  --euclidean       grid cost sqrt(sum_k (x_k - y_k)^2) instead\n"
    "  --cost C.npy      a dense (d, d) cost matrix instead of --grid\n"
    "  --log-domain      stabilized log-domain iteration (for small epsilon)\n"
    "  --device cpu|cuda backend (default cpu); cuda runs float64 on the context's GPU\n"
    "  --cpu-threads N   the CPU backend's threads (default OpenMP's)\n";


/* Rows of img as float64, normalized to mass 1; *n, *d from the shape. */
static double *load_hists(const char *path, int64_t *n, int64_t *d) {
  char err[1024];
  ndfio_image img;
  memset(&img, 0, sizeof img);
  if (ndfio_npy_read(path, &img, err, sizeof err) != NDF_OK) {
    errorf("%s", err);
    return NULL;
  }
  const ndf_array *a = &img.arr;
  if (a->ndim != 1 && a->ndim != 2) {
    errorf("%s: expected (n, d) or (d,) histograms, got %d axes", path, a->ndim);
    ndfio_image_free(&img);
    return NULL;
  }
  if (a->dtype == NDF_BOOL) {
    errorf("%s: dtype bool is not a histogram dtype", path);
    ndfio_image_free(&img);
    return NULL;
  }
  *n = a->ndim == 2 ? a->shape[0] : 1;
  *d = a->ndim == 2 ? a->shape[1] : a->shape[0];
  const int64_t s0 = a->ndim == 2 ? a->strides[0] : 0, s1 = a->strides[a->ndim - 1];
  if (*n < 1 || *d < 1) {
    errorf("%s: empty histograms", path);
    ndfio_image_free(&img);
    return NULL;
  }
  double *h = malloc((size_t)(*n * *d) * sizeof(double));
  if (!h) {
    errorf("%s: out of memory", path);
    ndfio_image_free(&img);
    return NULL;
  }
  for (int64_t k = 0; k < *n; k++) {
    double m = 0.0;
    for (int64_t i = 0; i < *d; i++) {
      const double v = ndfio_get_f64(a, k * s0 + i * s1);
      if (!isfinite(v) || v < 0) {
        errorf("%s: entry [%lld, %lld] = %g is not finite and >= 0", path, (long long)k, (long long)i, v);
        free(h);
        ndfio_image_free(&img);
        return NULL;
      }
      h[k * *d + i] = v;
      m += v;
    }
    if (!(m > 0)) {
      errorf("%s: row %lld has mass 0", path, (long long)k);
      free(h);
      ndfio_image_free(&img);
      return NULL;
    }
    for (int64_t i = 0; i < *d; i++) h[k * *d + i] /= m;
  }
  ndfio_image_free(&img);
  return h;
}

int ndf_cli_sinkhorn(int argc, char **argv) {
  const char *pos[3];
  int npos = 0;
  double eps = NAN, tol = 0.0;
  long max_iter = -1, check_every = 10, p = 2;
  int have_p = 0, euclid = 0, logd = 0, ngrid = 0;
  int64_t grid[NDF_MAX_SPATIAL], gbins = 1;
  const char *cost_path = NULL, *device = "cpu";
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(sk_usage, stdout);
      return 0;
    }
    if (strncmp(a, "--", 2) != 0 || strcmp(a, "--") == 0) {
      if (strcmp(a, "--") == 0) continue;
      if (npos == 3) {
        errorf("sinkhorn: unexpected argument '%s' (see ndforge sinkhorn --help)", a);
        return SK_EXIT_USAGE;
      }
      pos[npos++] = a;
      continue;
    }
    if (strcmp(a, "--log-domain") == 0) {
      logd = 1;
      continue;
    }
    if (strcmp(a, "--euclidean") == 0) {
      euclid = 1;
      continue;
    }
    if (i + 1 >= argc) {
      errorf("%s: missing value", a);
      return SK_EXIT_USAGE;
    }
    const char *v = argv[++i];
    if (strcmp(a, "--epsilon") == 0) {
      if (parse_double_arg(a + 2, v, &eps)) return SK_EXIT_USAGE;
      if (!(eps > 0)) {
        errorf("--epsilon: %s is not > 0", v);
        return SK_EXIT_USAGE;
      }
    } else if (strcmp(a, "--tol") == 0) {
      if (parse_double_arg(a + 2, v, &tol)) return SK_EXIT_USAGE;
      if (tol < 0) {
        errorf("--tol: %s is not >= 0", v);
        return SK_EXIT_USAGE;
      }
    } else if (strcmp(a, "--max-iter") == 0) {
      if (parse_long_arg(a + 2, v, 1, 1000000000L, &max_iter)) return SK_EXIT_USAGE;
    } else if (strcmp(a, "--check-every") == 0) {
      if (parse_long_arg(a + 2, v, 1, 1000000000L, &check_every)) return SK_EXIT_USAGE;
    } else if (strcmp(a, "--p") == 0) {
      if (parse_long_arg(a + 2, v, 1, 2, &p)) return SK_EXIT_USAGE;
      have_p = 1;
    } else if (strcmp(a, "--grid") == 0) {
      ngrid = 0;
      gbins = 1;
      const char *s = v;
      for (;;) {
        char *end;
        errno = 0;
        long x = strtol(s, &end, 10);
        if (errno || end == s || x < 1 || x > (1L << 20) || ngrid == NDF_MAX_SPATIAL || (*end && *end != ',')) {
          errorf("--grid: '%s' is not a list of 1 to %d positive sizes like 32,32", v, NDF_MAX_SPATIAL);
          return SK_EXIT_USAGE;
        }
        grid[ngrid++] = x;
        /* the bins (the product) must be countable */
        if (!ndf_size_mul(gbins, x, &gbins)) {
          errorf("--grid: '%s' has more bins than 2^63-1", v);
          return SK_EXIT_USAGE;
        }
        if (!*end) break;
        s = end + 1;
      }
    } else if (strcmp(a, "--cost") == 0) {
      cost_path = v;
    } else if (strcmp(a, "--device") == 0) {
      if (strcmp(v, "cpu") != 0 && strcmp(v, "cuda") != 0) {
        errorf("--device: '%s' is not cpu or cuda", v);
        return SK_EXIT_USAGE;
      }
      device = v;
    } else if (strcmp(a, "--cpu-threads") == 0) {
      if (cli_cpu_threads_arg(v)) return SK_EXIT_USAGE;
    } else {
      errorf("sinkhorn: unknown option '%s' (see ndforge sinkhorn --help)", a);
      return SK_EXIT_USAGE;
    }
  }
  if (npos != 3) {
    errorf("sinkhorn: expected A.npy B.npy OUT.npy (see ndforge sinkhorn --help)");
    return SK_EXIT_USAGE;
  }
  if (!ndfio_format_of(pos[2])) {
    errorf("sinkhorn: cannot tell the format of the output '%s' (use .npy, .nii or .nii.gz)", pos[2]);
    return SK_EXIT_USAGE;
  }
  if (isnan(eps) || max_iter < 0) {
    errorf("sinkhorn: --epsilon and --max-iter are required");
    return SK_EXIT_USAGE;
  }
  if ((ngrid > 0) == (cost_path != NULL)) {
    errorf("sinkhorn: give exactly one of --grid and --cost");
    return SK_EXIT_USAGE;
  }
  if ((have_p || euclid) && !ngrid) {
    errorf("sinkhorn: --p and --euclidean go with --grid");
    return SK_EXIT_USAGE;
  }
  if (have_p && euclid) {
    errorf("sinkhorn: --p and --euclidean exclude each other");
    return SK_EXIT_USAGE;
  }

  int rc = SK_EXIT_RUN;
  int64_t n = 0, d = 0, nb = 0, db = 0;
  double *A = NULL, *B = NULL, *out = NULL;
  ndfio_image cimg;
  memset(&cimg, 0, sizeof cimg);
  ndf_ctx *ctx = NULL;
  ndf_sinkhorn *s = NULL;
  char err[1024];
  if (!(A = load_hists(pos[0], &n, &d)) || !(B = load_hists(pos[1], &nb, &db))) goto done;
  if (nb != n || db != d) {
    errorf("%s has %lld histograms of %lld bins but %s has %lld of %lld", pos[1], (long long)nb, (long long)db,
           pos[0], (long long)n, (long long)d);
    goto done;
  }
  ndf_sinkhorn_options o;
  ndf_sinkhorn_options_init(&o);
  o.n = n;
  o.d = d;
  o.epsilon = eps;
  o.max_iter = (int)max_iter;
  o.tol = tol;
  o.check_every = (int)check_every;
  o.log_domain = logd;
  o.device = strcmp(device, "cuda") == 0 ? NDF_DEVICE_CUDA : NDF_DEVICE_CPU;
  if (ngrid) {
    int64_t gd = gbins; /* the product of grid[], checked when parsed */
    for (int k = 0; k < ngrid; k++) o.grid_shape[k] = grid[k];
    if (gd != d) {
      errorf("--grid: the grid has %lld bins but the histograms have %lld", (long long)gd, (long long)d);
      goto done;
    }
    o.cost_kind = euclid ? NDF_OT_COST_GRID_EUCLIDEAN : NDF_OT_COST_GRID_LP;
    o.grid_ndim = ngrid;
    o.p = (int)p;
  } else {
    if (ndfio_npy_read(cost_path, &cimg, err, sizeof err) != NDF_OK) {
      errorf("%s", err);
      goto done;
    }
    if (cimg.arr.ndim != 2 || cimg.arr.shape[0] != d || cimg.arr.shape[1] != d) {
      errorf("%s: expected a (%lld, %lld) cost matrix", cost_path, (long long)d, (long long)d);
      goto done;
    }
    if (cimg.arr.dtype != NDF_FLOAT64 && cimg.arr.dtype != NDF_FLOAT32) {
      errorf("%s: the cost must be float32 or float64", cost_path);
      goto done;
    }
    o.cost_kind = NDF_OT_COST_DENSE;
    o.cost = &cimg.arr;
  }
  ndf_ctx_options co;
  cli_ctx_options_init(&co);
  co.backend = o.device == NDF_DEVICE_CUDA ? NDF_BACKEND_CUDA : NDF_BACKEND_CPU;
  if (ndf_ctx_create(&ctx, &co) != NDF_OK) {
    errorf("%s", ndf_last_error());
    goto done;
  }
  if (ndf_sinkhorn_create(ctx, &s, &o) != NDF_OK) {
    errorf("%s", ndf_errmsg(ctx));
    goto done;
  }
  out = malloc((size_t)n * sizeof(double));
  if (!out) {
    errorf("out of memory");
    goto done;
  }
  ndf_array Aa, Ba, Oa;
  int64_t sh[2] = {n, d};
  ndf_array_init(&Aa, A, NDF_DEVICE_CPU, NDF_FLOAT64, 2, sh);
  ndf_array_init(&Ba, B, NDF_DEVICE_CPU, NDF_FLOAT64, 2, sh);
  ndf_array_init(&Oa, out, NDF_DEVICE_CPU, NDF_FLOAT64, 1, &n);
  ndf_sinkhorn_result res = {&Oa, NULL, NULL, NULL, NULL, NULL};
  if (ndf_sinkhorn_solve(s, &Aa, &Ba, &res) != NDF_OK) {
    errorf("%s", ndf_errmsg(ctx));
    goto done;
  }
  if (ndfio_write(pos[2], &Oa, NULL, err, sizeof err) != NDF_OK) {
    errorf("%s", err);
    goto done;
  }
  rc = 0;
done:
  ndf_sinkhorn_destroy(s);
  ndf_ctx_destroy(ctx);
  ndfio_image_free(&cimg);
  free(A);
  free(B);
  free(out);
  return rc;
}
