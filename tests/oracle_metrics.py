#!/usr/bin/env python3
"""scikit-image / NumPy oracle for tests/test_metrics.c.

Draws random cases of the image metrics and runs the reference on each image
of a batch; writes the two inputs, the expected per-image values (float64, the
batch shape) and, for SSIM, the expected map, as .npy files, plus one manifest
line per case of space-separated key=value pairs that test_metrics.c parses:

  id=3 metric=ssim a=c3_a.npy b=c3_b.npy batch=1 expected=c3_v.npy
  full=c3_S.npy win=0 gauss=1 sigma=1.5 k1=0.01 k2=0.03 sample=1 dr=0

(one line).  Metrics and their references:
  mse, nrmse (norm=euclidean|min-max|mean), psnr (dr=0: the dtype's default)
      skimage.metrics.mean_squared_error / normalized_root_mse /
      peak_signal_noise_ratio
  ssim        skimage.metrics.structural_similarity(full=True), with win,
              gauss, sigma, k1, k2, sample, dr (0: the default, the first
              image's dtype range as scikit-image 0.19 takes it, also where
              a newer one asks a float image for data_range)
  dice, jaccard  NumPy: 2|A&B| / (|A| + |B|), |A&B| / |A|B|, 1 when both empty
  hausdorff   q=100 without sampling: skimage.metrics.hausdorff_distance;
              otherwise the directed nearest distances of scipy's cKDTree
              (skimage's method) over coordinates times sampling, and per
              direction numpy.percentile(d, q) (method linear), the larger.
error=1 (no expected key) marks a case the reference rejects with
ValueError (PSNR of a float image outside [-1, 1] without data_range).

Exits 77 (the tests' "skipped") when scikit-image is not installed.

Usage: oracle_metrics.py --seed S --out DIR [--cases N]
"""
import os
import sys
import warnings

import numpy as np

import oracle_common

try:
    from scipy.spatial import cKDTree
    from skimage.metrics import (hausdorff_distance, mean_squared_error, normalized_root_mse,
                                 peak_signal_noise_ratio, structural_similarity)
    from skimage.util.dtype import dtype_range
except ImportError:
    sys.exit(77)

# scikit-image 0.19's structural_similarity smooths with skimage.filters.gaussian, which takes
# an image whose last axis has 3 elements for RGB and does not smooth along it; later versions
# (channel_axis=None) smooth every axis, as scipy's gaussian_filter does and as ndforge does.
# The reference uses that behaviour for every shape.
try:
    import scipy.ndimage as _ndi
    import skimage.metrics._structural_similarity as _ssim_mod

    def _gaussian_every_axis(image, sigma, truncate=4.0, mode="nearest", **_):
        return _ndi.gaussian_filter(image, sigma, mode=mode, truncate=truncate)

    _ssim_mod.gaussian = _gaussian_every_axis
except (ImportError, AttributeError):
    pass

DTYPES = ["bool", "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "float64"]
VOXEL_BUDGET = 9000


def draw_shape(rng, nsp, lo):
    side = {1: 200, 2: 40, 3: 16}[nsp]
    return [int(rng.integers(lo, side + 1)) for _ in range(nsp)]


def draw_image(rng, dtype, shape, unit=False, narrow=True):
    """Values over the dtype's range (floats in [-1, 1] or [0, 1] when unit,
    else wider), a smooth part and noise."""
    dt = np.dtype(dtype)
    g = rng.standard_normal(shape)
    if dt.kind == "b":
        return g > rng.uniform(-1, 1)
    if dt.kind == "f":
        if unit:
            v = rng.random(shape) if rng.random() < 0.7 else rng.uniform(-1, 1, shape)
        else:
            v = g * float(rng.choice([1.0, 50.0, 1e4]))
        return v.astype(dt)
    info = np.iinfo(dt)
    lo, hi = int(info.min), int(info.max)
    if narrow and rng.random() < 0.5:  # a narrow part of the range
        w = min(300, (hi - lo) // 4)
        a = int(rng.integers(lo, hi - w))
        lo, hi = a, a + w
    v = lo + np.floor(rng.random(shape) * (hi - lo + 0.999))
    return np.clip(v, lo, hi).astype(np.int64).astype(dt)


def perturb(rng, a, dtype):
    """A second image near a (so that the metrics are not trivial), in dtype."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        flip = rng.random(a.shape) < 0.15
        return (a.astype(bool) ^ flip)
    af = a.astype(np.float64)
    if dt.kind == "f":
        scale = float(np.std(af)) if af.size else 1.0
        return (af + rng.standard_normal(a.shape) * 0.2 * (scale or 1.0)).astype(dt)
    info = np.iinfo(dt)
    v = af + np.round(rng.standard_normal(a.shape) * 20)
    return np.clip(v, info.min, info.max).astype(dt)


def per_image(fn, a, b, nbatch):
    bshape = a.shape[:nbatch]
    out = np.empty(bshape, dtype=np.float64)
    for idx in np.ndindex(*bshape):
        out[idx] = fn(a[idx], b[idx])
    return out


def directed(a, b, sampling):
    pa = np.transpose(np.nonzero(a)) * sampling
    pb = np.transpose(np.nonzero(b)) * sampling
    return cKDTree(pb).query(pa, k=1)[0]


def hausdorff(a, b, q, sampling):
    if q == 100 and sampling is None:
        return float(hausdorff_distance(a, b))
    na, nb = np.count_nonzero(a), np.count_nonzero(b)
    if na == 0:
        return 0.0 if nb == 0 else np.inf
    if nb == 0:
        return np.inf
    s = np.ones(a.ndim) if sampling is None else np.asarray(sampling, dtype=np.float64)
    return float(max(np.percentile(directed(a, b, s), q), np.percentile(directed(b, a, s), q)))


def main():
    args, rng = oracle_common.start(__doc__, 300)
    lines = []
    for cid in range(args.cases):
        metric = str(rng.choice(["mse", "nrmse", "psnr", "ssim", "ssim", "ssim", "dice", "jaccard", "hausdorff",
                                 "hausdorff"]))
        nsp = int(rng.choice([1, 2, 2, 3, 3])) if metric != "ssim" else int(rng.choice([2, 2, 3]))
        nbatch = int(rng.choice([0, 0, 1, 2]))
        kv = {"id": cid, "metric": metric}
        opt = {}
        if metric == "ssim":
            gauss = int(rng.random() < 0.4)
            sigma = float(rng.choice([1.5, 1.5, 0.8, 1.0]))
            win = 0
            if rng.random() < 0.4:
                win = int(rng.choice([3, 5, 7, 9]))
            eff = win if win else (2 * int(3.5 * sigma + 0.5) + 1 if gauss else 7)
            shape = draw_shape(rng, nsp, eff)
            k1, k2 = (0.01, 0.03) if rng.random() < 0.7 else (float(rng.uniform(0, 0.1)), float(rng.uniform(0, 0.1)))
            sample = int(rng.random() < 0.8)
            opt = dict(win=win, gauss=gauss, sigma=sigma, k1=k1, k2=k2, sample=sample)
        else:
            shape = draw_shape(rng, nsp, 1)
        bshape = [int(rng.integers(1, 4)) for _ in range(nbatch)]
        while int(np.prod(bshape + shape)) > VOXEL_BUDGET and max(shape) > 2:
            shape = [max(1 if metric != "ssim" else eff, s - 2) for s in shape]
            if metric == "ssim" and all(s == eff for s in shape):
                break
        full_shape = tuple(bshape + shape)
        masks = metric in ("dice", "jaccard", "hausdorff")
        if masks:
            dta = str(rng.choice(DTYPES))
            dtb = str(rng.choice(DTYPES))
            if rng.random() < 0.6:
                a = oracle_common.blobs(rng, full_shape, nbatch, (0.5, 2.0), (0.3, 0.9))
            else:
                a = rng.random(full_shape) < rng.uniform(0, 0.3)
            b = perturb(rng, a, "bool")
            if rng.random() < 0.15:  # empty masks in some images
                a = np.zeros(full_shape, bool) if rng.random() < 0.5 else a
                b = np.zeros(full_shape, bool) if rng.random() < 0.5 else b
            a = a.astype(dta)
            b = b.astype(dtb)
        else:
            dta = str(rng.choice(DTYPES[1:]))
            dtb = dta if rng.random() < 0.7 else str(rng.choice(DTYPES[1:]))
            unit = metric == "psnr" and rng.random() < 0.6
            # Gaussian SSIM of a narrow range far from 0 cancels catastrophically
            # (uxx - ux ux), which would magnify the last-place differences of the
            # Gaussian weights (see test_metrics.c) beyond any tolerance.
            a = draw_image(rng, dta, full_shape, unit, narrow=not (metric == "ssim" and opt["gauss"]))
            b = perturb(rng, a, dtb)
            if rng.random() < 0.05:
                b = a.astype(dtb)  # identical images: psnr +inf
        err = 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with np.errstate(all="ignore"):
                if metric == "mse":
                    fn = mean_squared_error
                elif metric == "nrmse":
                    norm = str(rng.choice(["euclidean", "min-max", "mean"]))
                    opt = dict(norm=norm)
                    fn = lambda x, y: normalized_root_mse(x, y, normalization=norm)
                elif metric == "psnr":
                    dr = 0.0 if rng.random() < 0.7 else float(rng.choice([1.0, 255.0, 3.5]))
                    opt = dict(dr=dr)
                    fn = lambda x, y: peak_signal_noise_ratio(x, y, data_range=dr or None)
                elif metric == "ssim":
                    dr = 0.0 if rng.random() < 0.6 else float(rng.choice([1.0, 2.0, 255.0]))
                    opt["dr"] = dr
                    maps = np.empty(full_shape, dtype=np.float32 if dta == "float32" else np.float64)

                    def fn(x, y, idx=None):
                        kw = dict(win_size=opt["win"] or None, gaussian_weights=bool(opt["gauss"]),
                                  sigma=opt["sigma"], K1=opt["k1"], K2=opt["k2"],
                                  use_sample_covariance=bool(opt["sample"]), full=True)
                        if dr:
                            kw["data_range"] = dr
                        try:
                            return structural_similarity(x, y, **kw)
                        except ValueError as e:
                            # scikit-image >= 0.20 asks a float image for data_range; ndforge keeps
                            # 0.19's default, the first image's dtype range (ADR 0033)
                            if dr or "data_range" not in str(e):
                                raise
                            lo, hi = dtype_range[x.dtype.type]
                            return structural_similarity(x, y, data_range=hi - lo, **kw)
                elif metric in ("dice", "jaccard"):
                    def fn(x, y, m=metric):
                        A, B = x != 0, y != 0
                        i, na, nb = np.count_nonzero(A & B), np.count_nonzero(A), np.count_nonzero(B)
                        if na + nb == 0:
                            return 1.0
                        return 2.0 * i / (na + nb) if m == "dice" else i / (na + nb - i)
                else:
                    q = 100.0 if rng.random() < 0.6 else float(rng.choice([95.0, 50.0, 99.0, 12.5]))
                    sampling = None
                    if rng.random() < 0.4:
                        sampling = [float(rng.choice([0.5, 1.0, 1.5, 2.25])) for _ in range(nsp)]
                    opt = dict(q=q)
                    if sampling is not None:
                        opt["sampling"] = ",".join(repr(s) for s in sampling)
                    fn = lambda x, y: hausdorff(x, y, q, sampling)
                try:
                    if metric == "ssim":
                        vals = np.empty(tuple(bshape), dtype=np.float64)
                        for idx in np.ndindex(*bshape):
                            m, s = fn(a[idx], b[idx])
                            vals[idx] = m
                            maps[idx] = s
                    else:
                        vals = per_image(fn, a, b, nbatch)
                except ValueError:
                    err = 1
        kv.update(dict(a=f"c{cid}_a.npy", b=f"c{cid}_b.npy", batch=nbatch))
        kv.update(opt)
        np.save(os.path.join(args.out, f"c{cid}_a.npy"), a)
        np.save(os.path.join(args.out, f"c{cid}_b.npy"), b)
        if err:
            kv["error"] = 1
        else:
            kv["expected"] = f"c{cid}_v.npy"
            np.save(os.path.join(args.out, kv["expected"]), np.asarray(vals, dtype=np.float64))
            if metric == "ssim":
                kv["full"] = f"c{cid}_S.npy"
                np.save(os.path.join(args.out, kv["full"]), maps)
        lines.append(" ".join(f"{k}={v}" for k, v in kv.items()))
    with open(os.path.join(args.out, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
