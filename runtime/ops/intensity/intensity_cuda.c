/*
 * intensity_cuda.c -- the CUDA backend of the intensity ops
 * (templates/intensity.cu).  Every kernel a call needs is resolved before
 * anything runs, so a compile failure writes nothing; results are computed
 * in stream-ordered scratch and stored last.
 *
 * Percentiles select the two order statistics around each q exactly by a
 * radix select over the values' order keys, one digit per pass (bytes: 1, 2,
 * 4 and 8 passes for 8- to 64-bit data; for 32- and 64-bit data with few
 * quantiles 11-bit digits: 3 and 6 passes): pass 0 histograms every value's
 * top digit once per image, and each later pass histograms the next digit of
 * the values that share a target's prefix.  Nothing is read back:
 * the ranks are known on the host (every image has m values).
 *
 * Only two paths read back: a histogram (and a float equalize_hist) whose
 * range is detected from the data checks that range is finite, and an
 * integer equalize_hist reads each image's range to size its table.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "intensity/intensity.h"
#include "jit.h"
#include "kernel_params.generated.h"

#define CHUNK 4096         /* NDF_ITY_CHUNK */
#define SMEM_BINS 8192     /* NDF_ITY_SMEM_BINS */
#define TARGETS 16         /* NDF_ITY_TARGETS */
#define RADIX_BINS 2048    /* the widest radix digit's bins (11 bits) */
#define RADIX_SMEM 8192    /* shared counters of one radix launch (32 KiB) */
#define HIST_LIMIT ((int64_t)1 << 30) /* bytes of radix histograms a call may hold */

/* The kernels of one call, requested together (kadd, then kget): those in neither the memory nor
 * the disk cache compile concurrently (ndf__jit_get_many), where one after another a first call
 * waited for the sum of their NVRTC times. */
#define KSET_MAX 6
typedef struct kset {
  ndf__kernel_req req[KSET_MAX];
  CUfunction *fn[KSET_MAX];
  int n, over; /* over: a kadd past KSET_MAX (kget fails) */
} kset;

static void kadd(kset *k, const char *kernel, ndf_dtype t, ndf_dtype out, ndf_dtype w, int op, CUfunction *f) {
  if (k->n == KSET_MAX) {
    k->over = 1;
    return;
  }
  ndf__req_intensity(&k->req[k->n], kernel, t, out, w, op);
  k->fn[k->n++] = f;
}

static ndf_status kget(ndf_ctx *ctx, const char *name, kset *k) {
  if (k->over) {
    for (int i = 0; i < k->n; i++) ndf__req_free(&k->req[i]);
    k->n = k->over = 0;
    return ndf__error(ctx, NDF_EINTERNAL, "%s: more than %d kernels in one request set", name, KSET_MAX);
  }
  const ndf__kernel_req *rp[KSET_MAX];
  CUfunction fns[KSET_MAX];
  for (int i = 0; i < k->n; i++) rp[i] = &k->req[i];
  ndf_status s = ndf__jit_get_many(ctx, name, rp, k->n, fns);
  for (int i = 0; i < k->n; i++) {
    if (s == NDF_OK) *k->fn[i] = fns[i];
    ndf__req_free(&k->req[i]);
  }
  k->n = 0;
  return s;
}

static ndf_status cuerr(ndf_ctx *ctx, const char *name, CUresult r) {
  return r == CUDA_SUCCESS ? NDF_OK : ndf__cuda_error(ctx, name, r);
}

static ndf_status zero(ndf_ctx *ctx, const char *name, CUdeviceptr p, size_t bytes) {
  return cuerr(ctx, name, ndf__cu(NULL)->cuMemsetD8Async(p, 0, bytes, ctx->stream));
}

static ndf_status read_back(ndf_ctx *ctx, const char *name, void *h, CUdeviceptr d, size_t bytes) {
  const ndf__cu_api *cu = ndf__cu(NULL);
  CUresult r = cu->cuMemcpyDtoHAsync(h, d, bytes, ctx->stream);
  if (r == CUDA_SUCCESS) r = cu->cuStreamSynchronize(ctx->stream);
  return cuerr(ctx, name, r);
}

/* Scratch parts, each 256-byte aligned, carved from one allocation. */
typedef struct parts {
  size_t off;
  CUdeviceptr base;
} parts;
static size_t part(parts *pp, size_t bytes) {
  const size_t o = pp->off;
  pp->off += (bytes + 255) & ~(size_t)255;
  return o;
}

/* The geometry of a scanning launch over in (and w, out when given). */
static void scan_init(ndf__ity_scan_params *p, const ndf_array *in, const ndf_array *w, const ndf_array *out,
                      const ndf__ity_geom *g) {
  memset(p, 0, sizeof *p);
  p->x = NDF__DPTR(in->data);
  p->ndim = in->ndim;
  p->nb = g->nb;
  p->nimg = g->nimg;
  p->m = g->m;
  p->cpi = (g->m + CHUNK - 1) / CHUNK;
  p->contig = ndf_array_is_contiguous(in) && (!w || ndf_array_is_contiguous(w)) && (!out || ndf_array_is_contiguous(out));
  ndf__axes(p->shape, in->ndim, in->shape);
  ndf__axes(p->xstr, in->ndim, in->strides);
  if (w) {
    p->w = NDF__DPTR(w->data);
    ndf__axes(p->wstr, in->ndim, w->strides);
  }
  if (out) {
    p->out = NDF__DPTR(out->data);
    ndf__axes(p->ostr, in->ndim, out->strides);
  }
}

static unsigned scan_grid(ndf_ctx *ctx, const ndf__ity_geom *g) {
  return ndf__grid(ctx, g->nimg * ((g->m + CHUNK - 1) / CHUNK), 8);
}
static unsigned small_grid(int64_t n) { return (unsigned)((n + 255) / 256 > 0 ? (n + 255) / 256 : 1); }

/* Stores nimg x len results (src: float64 res, or u64 counts when count) into out (batch layout). */
static ndf_status store(ndf_ctx *ctx, const char *name, CUfunction f, ndf_array *out, CUdeviceptr src, int count,
                        int64_t nimg, int64_t len, int64_t sstride) {
  ndf__ity_small_params p;
  memset(&p, 0, sizeof p);
  p.n = nimg * len;
  p.len = len;
  p.sstride = sstride;
  if (count) p.hist = src;
  else p.res = src;
  p.dst = NDF__DPTR(out->data);
  p.ondim = out->ndim;
  ndf__axes(p.oshape, out->ndim, out->shape);
  ndf__axes(p.ostr, out->ndim, out->strides);
  if (p.n == 0) return NDF_OK;
  return ndf__ity_small_launch(ctx, name, f, small_grid(p.n), 256, 1, 0, &p);
}

/* ---- radix select ------------------------------------------------------------------------------- */

typedef struct qsel {
  CUfunction radix, select, lerp;
} qsel;

static void qsel_add(kset *ks, ndf_dtype t, qsel *k) {
  kadd(ks, "ndf_ity_radix", t, NDF_FLOAT64, NDF_UINT8, 0, &k->radix);
  kadd(ks, "ndf_ity_select", t, NDF_FLOAT64, NDF_UINT8, 0, &k->select);
  kadd(ks, "ndf_ity_lerp", t, NDF_FLOAT64, NDF_UINT8, 0, &k->lerp);
}

/* NumPy's linear method at q for m values: the ranks of the two values and gamma (intensity.c). */
static void ranks_of(int64_t m, double q, uint64_t *ip, uint64_t *in, double *gam) {
  const double h = (double)(m - 1) * q;
  double prev = floor(h);
  if (h >= (double)(m - 1)) {
    *ip = *in = (uint64_t)(m - 1);
    prev = -1;
  } else {
    *ip = (uint64_t)prev;
    *in = *ip + 1;
  }
  *gam = h - prev;
}

/* Each image's quantiles q[0..nq-1] into res (nimg x nq doubles, device). */
static ndf_status qsel_run(ndf_ctx *ctx, const char *name, const qsel *k, const ndf_array *in, const ndf__ity_geom *g,
                           const double *q, int nq, CUdeviceptr res) {
  const int ntpi = 2 * nq, keybits = 8 * (int)ndf_dtype_size(in->dtype);
  int64_t targets, hbytes;
  if (!ndf__mul(g->nimg, ntpi, &targets) || !ndf__mul(targets, 256 * 8, &hbytes) || hbytes > HIST_LIMIT)
    return ndf__error(ctx, NDF_ENOTSUP,
                      "%s: %lld images x %d quantiles need more than 1 GiB of selection histograms on the GPU; "
                      "split the batch", name, (long long)g->nimg, nq);
  /* The digits, top first: bytes, or for 32- and 64-bit keys 11-bit digits (3 and 6 passes) when
   * their histograms fit the limit and they read the data fewer times (a later pass reads it
   * once per launch of at most RADIX_SMEM / bins targets). */
  static const int W32[3] = {11, 11, 10}, W64[6] = {11, 11, 11, 11, 10, 10};
  int bits[8], npass = 0, rb = 256;
  for (; npass < keybits / 8; npass++) bits[npass] = 8;
  if (keybits >= 32 && hbytes <= HIST_LIMIT / 8) {
    const int *w = keybits == 32 ? W32 : W64, nw = keybits == 32 ? 3 : 6;
    int64_t reads_b = 1 + (int64_t)(npass - 1) * ((ntpi + TARGETS - 1) / TARGETS), reads_w = 1;
    for (int p = 1; p < nw; p++) {
      const int tmax = RADIX_SMEM >> w[p] < TARGETS ? RADIX_SMEM >> w[p] : TARGETS;
      reads_w += (ntpi + tmax - 1) / tmax;
    }
    if (reads_w < reads_b) {
      npass = nw;
      memcpy(bits, w, (size_t)nw * sizeof *bits);
      rb = RADIX_BINS;
      hbytes *= RADIX_BINS / 256;
    }
  }
  /* tables: rk0 (ntpi u64) | gam (nq f64) */
  const size_t tbytes = (size_t)ntpi * 8 + (size_t)nq * 8;
  unsigned char *h = malloc(tbytes);
  if (!h) return ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
  for (int i = 0; i < nq; i++) {
    uint64_t a, b;
    double gm;
    ranks_of(g->m, q[i], &a, &b, &gm);
    memcpy(h + (size_t)(2 * i) * 8, &a, 8);
    memcpy(h + (size_t)(2 * i + 1) * 8, &b, 8);
    memcpy(h + (size_t)ntpi * 8 + (size_t)i * 8, &gm, 8);
  }
  CUdeviceptr tab = 0;
  ndf_status s = ndf__device_table(ctx, h, tbytes, &tab);
  free(h);
  if (s != NDF_OK) return s;
  parts pp = {0, 0};
  const size_t o_st = part(&pp, (size_t)g->nimg * 64), o_h0 = part(&pp, (size_t)g->nimg * rb * 8),
               o_h = part(&pp, (size_t)hbytes), o_pf = part(&pp, (size_t)targets * 8),
               o_rk = part(&pp, (size_t)targets * 8);
  if ((s = ndf__scratch_alloc(ctx, pp.off, &pp.base)) != NDF_OK) return s;
  const CUdeviceptr st = pp.base + o_st, hist0 = pp.base + o_h0, hist = pp.base + o_h, prefix = pp.base + o_pf,
                    rank = pp.base + o_rk;
  ndf__ity_scan_params sp;
  scan_init(&sp, in, NULL, NULL, g);
  sp.st = st;
  sp.hist = hist;
  sp.hist0 = hist0;
  sp.prefix = prefix;
  sp.ntpi = ntpi;
  sp.tstride = rb;
  ndf__ity_small_params pp2;
  memset(&pp2, 0, sizeof pp2);
  pp2.n = targets;
  pp2.ntpi = ntpi;
  pp2.hist0 = hist0;
  pp2.hist = hist;
  pp2.prefix = prefix;
  pp2.rank = rank;
  pp2.rk0 = tab;
  pp2.tstride = rb;
  const unsigned grid = scan_grid(ctx, g);
  /* st, hist0 and hist are adjacent: one clear; each select of a later pass clears the bins it read. */
  s = zero(ctx, name, st, o_h + (size_t)hbytes - o_st);
  for (int pass = 0, shift = keybits; pass < npass && s == NDF_OK; pass++) {
    const int nbins = 1 << bits[pass], tmax = TARGETS < RADIX_SMEM / nbins ? TARGETS : RADIX_SMEM / nbins;
    shift -= bits[pass];
    sp.pass = pp2.pass = pass;
    sp.shift = pp2.shift = shift;
    sp.nbins = pp2.nbins = nbins;
    if (pass == 0) {
      s = ndf__ity_scan_launch(ctx, name, k->radix, grid, 256, 1, (unsigned)nbins * 4, &sp);
    } else {
      for (int t0 = 0; t0 < ntpi && s == NDF_OK; t0 += tmax) {
        sp.t0 = t0;
        sp.t1 = t0 + tmax < ntpi ? t0 + tmax : ntpi;
        s = ndf__ity_scan_launch(ctx, name, k->radix, grid, 256, 1, (unsigned)(sp.t1 - t0) * nbins * 4, &sp);
      }
    }
    if (s == NDF_OK) s = ndf__ity_small_launch(ctx, name, k->select, small_grid(targets * 32), 256, 1, 0, &pp2);
  }
  if (s == NDF_OK) {
    pp2.n = g->nimg * nq;
    pp2.nq = nq;
    pp2.gam = tab + (CUdeviceptr)ntpi * 8;
    pp2.st = st;
    pp2.res = res;
    s = ndf__ity_small_launch(ctx, name, k->lerp, small_grid(pp2.n), 256, 1, 0, &pp2);
  }
  ndf__scratch_free(ctx, pp.base);
  return s;
}

ndf_status ndf__ity_quantile_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, const double *q, int nq,
                                  ndf_array *out, const ndf__ity_geom *g) {
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  qsel k;
  CUfunction f_store;
  kset ks = {.n = 0};
  qsel_add(&ks, in->dtype, &k);
  kadd(&ks, "ndf_ity_store", NDF_FLOAT64, NDF_FLOAT64, NDF_UINT8, 0, &f_store);
  if ((s = kget(ctx, name, &ks)) != NDF_OK) return s;
  CUdeviceptr res = 0;
  if ((s = ndf__scratch_alloc(ctx, (size_t)(g->nimg * nq) * 8, &res)) != NDF_OK) return s;
  s = qsel_run(ctx, name, &k, in, g, q, nq, res);
  if (s == NDF_OK) s = store(ctx, name, f_store, out, res, 0, g->nimg, nq, nq);
  ndf__scratch_free(ctx, res);
  return s;
}

/* ---- statistics and the elementwise pass ------------------------------------------------------------ */

ndf_status ndf__ity_apply_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, const ndf_array *mask,
                               ndf_array *out, const ndf__ity_geom *g, int op, int stat, double c0, double c1,
                               double a, double b) {
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  const ndf_dtype t = in->dtype, wt = mask ? mask->dtype : NDF_UINT8;
  CUfunction f_apply, f_stats = NULL, f_finish = NULL;
  qsel k;
  kset ks = {.n = 0};
  kadd(&ks, "ndf_ity_apply", t, out->dtype, NDF_UINT8, op, &f_apply);
  if (stat == NDF__ITY_STAT_PERCENTILE) {
    qsel_add(&ks, t, &k);
  } else if (stat >= 0) {
    kadd(&ks, "ndf_ity_stats", t, NDF_FLOAT64, wt, 0, &f_stats);
    kadd(&ks, "ndf_ity_finish", t, NDF_FLOAT64, NDF_UINT8, 0, &f_finish);
  }
  if ((s = kget(ctx, name, &ks)) != NDF_OK) return s;
  parts pp = {0, 0};
  /* The moments' float64 sums: one per chunk and pass (ndf_ity_stats), added up in a fixed order
   * (ndf_ity_stats, ndf_ity_finish), so that a call gives the same bits on every run. */
  const int moments = stat == NDF__ITY_STAT_MOMENTS;
  const int64_t cpi = (g->m + CHUNK - 1) / CHUNK, items = g->nimg * cpi;
  const size_t o_prm = part(&pp, (size_t)g->nimg * 16), o_st = part(&pp, (size_t)g->nimg * 64),
               o_part = moments ? part(&pp, (size_t)items * 16) : 0;
  if (stat >= 0 && (s = ndf__scratch_alloc(ctx, pp.off, &pp.base)) != NDF_OK) return s;
  const CUdeviceptr prm = pp.base + o_prm, st = pp.base + o_st;
  const unsigned grid = scan_grid(ctx, g);
  if (stat == NDF__ITY_STAT_PERCENTILE) {
    const double qs[2] = {c0, c1};
    s = qsel_run(ctx, name, &k, in, g, qs, 2, prm);
  } else if (stat >= 0) {
    ndf__ity_scan_params sp;
    scan_init(&sp, in, mask, NULL, g);
    sp.st = st;
    sp.part = moments ? pp.base + o_part : 0;
    sp.wmode = mask ? 2 : 0;
    s = zero(ctx, name, st, (size_t)g->nimg * 64);
    if (s == NDF_OK) s = ndf__ity_scan_launch(ctx, name, f_stats, grid, 256, 1, 0, &sp);
    if (s == NDF_OK && stat == NDF__ITY_STAT_MOMENTS) {
      sp.pass = 1;
      s = ndf__ity_scan_launch(ctx, name, f_stats, grid, 256, 1, 0, &sp);
    }
    ndf__ity_small_params fp;
    memset(&fp, 0, sizeof fp);
    fp.n = g->nimg;
    fp.st = st;
    fp.res = prm;
    fp.mode = moments;
    fp.part = sp.part;
    fp.cpi = cpi;
    if (s == NDF_OK)
      s = ndf__ity_small_launch(ctx, name, f_finish, moments ? ndf__grid(ctx, g->nimg, 8) : small_grid(g->nimg), 256,
                                1, 0, &fp);
  }
  if (s == NDF_OK) {
    ndf__ity_scan_params ap;
    scan_init(&ap, in, NULL, out, g);
    ap.prm = stat >= 0 ? prm : 0;
    ap.c0 = c0;
    ap.c1 = c1;
    ap.a = a;
    ap.b = b;
    s = ndf__ity_scan_launch(ctx, name, f_apply, grid, 256, 1, 0, &ap);
  }
  if (pp.base) ndf__scratch_free(ctx, pp.base);
  return s;
}

/* ---- histogram ------------------------------------------------------------------------------------------ */

ndf_status ndf__ity_histogram_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, ndf_array *hist,
                                   ndf_array *bin_edges, const ndf_histogram_options *opt, const ndf__ity_geom *g,
                                   int64_t nbins) {
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  const ndf_dtype t = in->dtype, wt = opt->weights ? opt->weights->dtype : NDF_UINT8;
  const int weighted = opt->weights != NULL, auto_range = !opt->edges && !opt->has_range;
  const int counts_out = hist->dtype == NDF_INT64, local = !weighted && nbins <= SMEM_BINS;
  CUfunction f_stats = NULL, f_edges = NULL, f_hist, f_density = NULL, f_store = NULL, f_count = NULL;
  kset ks = {.n = 0};
  if (auto_range) kadd(&ks, "ndf_ity_stats", t, NDF_FLOAT64, NDF_UINT8, 0, &f_stats);
  if (!opt->edges) kadd(&ks, "ndf_ity_edges", t, NDF_FLOAT64, NDF_UINT8, 0, &f_edges);
  kadd(&ks, "ndf_ity_hist", t, NDF_FLOAT64, wt, 0, &f_hist);
  if (!counts_out) kadd(&ks, "ndf_ity_density", t, NDF_FLOAT64, NDF_UINT8, 0, &f_density);
  if (!counts_out || bin_edges) kadd(&ks, "ndf_ity_store", NDF_FLOAT64, NDF_FLOAT64, NDF_UINT8, 0, &f_store);
  if (counts_out) kadd(&ks, "ndf_ity_store_count", NDF_FLOAT64, NDF_FLOAT64, NDF_UINT8, 0, &f_count);
  if ((s = kget(ctx, name, &ks)) != NDF_OK) return s;

  const int64_t ne = nbins + 1, tstride = opt->edges ? 0 : ne;
  CUdeviceptr etab = 0;
  if (opt->edges && (s = ndf__device_table(ctx, opt->edges, (size_t)ne * 8, &etab)) != NDF_OK) return s;
  parts pp = {0, 0};
  const size_t o_status = part(&pp, 16), o_st = part(&pp, (size_t)g->nimg * 64),
               o_e = part(&pp, opt->edges ? 8 : (size_t)(g->nimg * ne) * 8),
               o_h = part(&pp, (size_t)(g->nimg * nbins) * 8), o_res = part(&pp, (size_t)(g->nimg * nbins) * 8);
  if ((s = ndf__scratch_alloc(ctx, pp.off, &pp.base)) != NDF_OK) return s;
  const CUdeviceptr status = pp.base + o_status, st = pp.base + o_st, res = pp.base + o_res, h = pp.base + o_h;
  const CUdeviceptr edges = opt->edges ? etab : pp.base + o_e;
  const unsigned grid = scan_grid(ctx, g);
  s = zero(ctx, name, pp.base, o_e); /* status and statistics */
  if (s == NDF_OK) s = zero(ctx, name, h, (size_t)(g->nimg * nbins) * 8);
  if (s == NDF_OK && auto_range) {
    ndf__ity_scan_params sp;
    scan_init(&sp, in, NULL, NULL, g);
    sp.st = st;
    s = ndf__ity_scan_launch(ctx, name, f_stats, grid, 256, 1, 0, &sp);
  }
  if (s == NDF_OK && !opt->edges) {
    ndf__ity_small_params ep;
    memset(&ep, 0, sizeof ep);
    ep.n = g->nimg * ne;
    ep.nbins = nbins;
    ep.has_range = !auto_range;
    ep.c0 = opt->range[0];
    ep.c1 = opt->range[1];
    ep.st = st;
    ep.edges = edges;
    ep.status = status;
    s = ndf__ity_small_launch(ctx, name, f_edges, small_grid(ep.n), 256, 1, 0, &ep);
    if (s == NDF_OK && auto_range) {
      int32_t flag = 0;
      s = read_back(ctx, name, &flag, status, 4);
      if (s == NDF_OK && flag)
        s = ndf__argerror(ctx, name, "input",
                          "an image's detected range is not finite (NaN or inf; NumPy's ValueError); give a range");
    }
  }
  if (s == NDF_OK) {
    ndf__ity_scan_params hp;
    scan_init(&hp, in, opt->weights, NULL, g);
    hp.wmode = weighted ? 1 : 0;
    hp.tab = edges;
    hp.tstride = tstride;
    hp.nbins = nbins;
    hp.hist = h;
    hp.hsum = h;
    hp.local = local;
    s = ndf__ity_scan_launch(ctx, name, f_hist, grid, 256, 1, local ? (unsigned)nbins * 4 : 0, &hp);
  }
  if (s == NDF_OK && !counts_out) {
    ndf__ity_small_params dp;
    memset(&dp, 0, sizeof dp);
    dp.n = g->nimg;
    dp.nbins = nbins;
    dp.tstride = tstride;
    dp.weighted = weighted;
    dp.density = opt->density;
    dp.f32 = t == NDF_FLOAT32 && !opt->edges;
    dp.hist = h;
    dp.hsum = h;
    dp.edges = edges;
    dp.res = res;
    s = ndf__ity_small_launch(ctx, name, f_density, ndf__grid(ctx, g->nimg, 8), 256, 1, 0, &dp);
    if (s == NDF_OK) s = store(ctx, name, f_store, hist, res, 0, g->nimg, nbins, nbins);
  } else if (s == NDF_OK) {
    s = store(ctx, name, f_count, hist, h, 1, g->nimg, nbins, nbins);
  }
  if (s == NDF_OK && bin_edges) s = store(ctx, name, f_store, bin_edges, edges, 0, g->nimg, ne, tstride);
  ndf__scratch_free(ctx, pp.base);
  return s;
}

/* ---- equalize_hist ------------------------------------------------------------------------------------- */

ndf_status ndf__ity_equalize_cuda(ndf_ctx *ctx, const char *name, const ndf_array *in, const ndf_array *mask,
                                  ndf_array *out, const ndf__ity_geom *g, int nbins) {
  ndf_status s = ndf__ctx_bind(ctx);
  if (s != NDF_OK) return s;
  const ndf_dtype t = in->dtype, wt = mask ? mask->dtype : NDF_UINT8;
  const int isf = ndf__dtype_is_float(t);
  CUfunction f_stats, f_edges = NULL, f_hist, f_cdf, f_apply;
  kset ks = {.n = 0};
  kadd(&ks, "ndf_ity_stats", t, NDF_FLOAT64, wt, 0, &f_stats);
  if (isf) kadd(&ks, "ndf_ity_edges", t, NDF_FLOAT64, NDF_UINT8, 0, &f_edges);
  kadd(&ks, "ndf_ity_hist", t, NDF_FLOAT64, wt, 0, &f_hist);
  kadd(&ks, "ndf_ity_cdf", t, NDF_FLOAT64, NDF_UINT8, 0, &f_cdf);
  kadd(&ks, "ndf_ity_apply", t, out->dtype, NDF_UINT8, isf ? 3 : 4, &f_apply);
  if ((s = kget(ctx, name, &ks)) != NDF_OK) return s;

  CUdeviceptr st = 0;
  if ((s = ndf__scratch_alloc(ctx, (size_t)g->nimg * 64 + 256, &st)) != NDF_OK) return s;
  const CUdeviceptr status = st + (CUdeviceptr)g->nimg * 64;
  const unsigned grid = scan_grid(ctx, g);
  ndf__ity_scan_params sp;
  scan_init(&sp, in, mask, NULL, g);
  sp.st = st;
  sp.wmode = mask ? 2 : 0;
  s = zero(ctx, name, st, (size_t)g->nimg * 64 + 16);
  if (s == NDF_OK) s = ndf__ity_scan_launch(ctx, name, f_stats, grid, 256, 1, 0, &sp);

  /* the bins: nbins equal bins (float), or one per integer of the widest image range */
  int64_t nb = nbins;
  if (s == NDF_OK && !isf) {
    uint64_t *hs = malloc((size_t)g->nimg * 64);
    if (!hs) s = ndf__error(ctx, NDF_ENOMEM, "%s: out of memory", name);
    if (s == NDF_OK) s = read_back(ctx, name, hs, st, (size_t)g->nimg * 64);
    nb = 1;
    for (int64_t b = 0; s == NDF_OK && b < g->nimg; b++) {
      if (!hs[b * 8 + 3]) continue;
      /* integer keys are the values offset by a constant, so the range is the keys' */
      const int64_t r = (int64_t)(hs[b * 8 + 1] - ~hs[b * 8]) + 1;
      if (r > nb) nb = r;
    }
    free(hs);
    if (s == NDF_OK && nb > ((int64_t)1 << 24))
      s = ndf__error(ctx, NDF_ENOTSUP,
                     "%s: an image's integer range holds %lld values; the GPU takes at most 2^24 (one bin per integer)",
                     name, (long long)nb);
  }
  parts pp = {0, 0};
  const size_t o_e = part(&pp, isf ? (size_t)(g->nimg * (nb + 1)) * 8 : 8), o_h = part(&pp, (size_t)(g->nimg * nb) * 8),
               o_xp = part(&pp, (size_t)(g->nimg * nb) * 8), o_fp = part(&pp, (size_t)(g->nimg * nb) * 8);
  if (s == NDF_OK) s = ndf__scratch_alloc(ctx, pp.off, &pp.base);
  const CUdeviceptr edges = pp.base + o_e, h = pp.base + o_h, xp = pp.base + o_xp, fpt = pp.base + o_fp;
  if (s == NDF_OK) s = zero(ctx, name, h, (size_t)(g->nimg * nb) * 8);
  if (s == NDF_OK && isf) {
    ndf__ity_small_params ep;
    memset(&ep, 0, sizeof ep);
    ep.n = g->nimg * (nb + 1);
    ep.nbins = nb;
    ep.st = st;
    ep.edges = edges;
    ep.status = status;
    s = ndf__ity_small_launch(ctx, name, f_edges, small_grid(ep.n), 256, 1, 0, &ep);
    int32_t flag = 0;
    if (s == NDF_OK) s = read_back(ctx, name, &flag, status, 4);
    if (s == NDF_OK && flag)
      s = ndf__argerror(ctx, name, "input", "an image's (masked) values are not all finite (NaN or inf; "
                                            "scikit-image's ValueError)");
  }
  if (s == NDF_OK) {
    ndf__ity_scan_params hp;
    scan_init(&hp, in, mask, NULL, g);
    hp.wmode = mask ? 2 : 0;
    hp.st = st;
    hp.mode = isf ? 0 : 1;
    hp.tab = edges;
    hp.tstride = nb + 1;
    hp.nbins = nb;
    hp.hist = h;
    hp.local = nb <= SMEM_BINS;
    s = ndf__ity_scan_launch(ctx, name, f_hist, grid, 256, 1, hp.local ? (unsigned)nb * 4 : 0, &hp);
  }
  if (s == NDF_OK) {
    ndf__ity_small_params cp;
    memset(&cp, 0, sizeof cp);
    cp.n = g->nimg;
    cp.nbins = nb;
    cp.tstride = nb;
    cp.mode = isf ? 0 : 1;
    cp.f32 = t == NDF_FLOAT32;
    cp.hist = h;
    cp.edges = edges;
    cp.xp = xp;
    cp.fp = fpt;
    s = ndf__ity_small_launch(ctx, name, f_cdf, small_grid(g->nimg), 256, 1, 0, &cp);
  }
  if (s == NDF_OK) {
    ndf__ity_scan_params ap;
    scan_init(&ap, in, NULL, out, g);
    ap.st = st;
    ap.tab = xp;
    ap.tab2 = fpt;
    ap.tstride = nb;
    ap.nbins = nb;
    s = ndf__ity_scan_launch(ctx, name, f_apply, grid, 256, 1, 0, &ap);
  }
  if (pp.base) ndf__scratch_free(ctx, pp.base);
  ndf__scratch_free(ctx, st);
  return s;
}
