"""oracle_intensity.py -- NumPy / scikit-image references for the intensity ops
(tests/test_intensity.c).

Draws random cases -- every dtype, ranks 1-4 with 0..rank-1 batch axes, values
with ties, -0.0, inf and NaN where the op defines them, empty images -- runs
the reference on each image of the batch and writes .npy files and one
manifest line per case:

  id=N op=OP dtype=D shape=a,b,.. batch=B input=F expected=F [expected2=F]
      [error=1] op-specific keys (bins, range, edges, weights, density, q, lo,
      hi, a, b, mask, nbins, odtype)

Ops and references:
  hist       np.histogram (counts; float64 with weights / density; edges too);
             a float32 image's edges over the data's range as NumPy 1 and
             ndforge compute them (histogram below)
  percentile np.percentile, quantile np.quantile (method 'linear'); integer
             images are passed as float64 so that NumPy 1.x's b - a cannot wrap
             around in the integer type (ndforge's documented exact difference)
  clip       np.clip in float64
  window     the documented formula (np.clip(x, lo, hi) - lo) / (hi - lo) *
             (b - a) + a in float64, rounded to the output dtype; minmax and
             pwindow take lo, hi from x.min(), x.max() / np.percentile
  zscore     (x - mean) / std with mean, std from the masked voxels (NumPy's
             mean and std, ddof 0; std 0 -> 1)
  equalize   skimage.exposure.equalize_hist(image, nbins, mask), its float
             image's histogram the documented one; an integer
             image whose mask selects nothing, which scikit-image rejects, is
             NaN by ndforge's definition
Exits 77 when NumPy or scikit-image is missing.
"""
import sys
import types

try:
    import numpy as np
    import skimage.exposure as ske
    import skimage.exposure.exposure as ske_module
except ImportError:
    sys.exit(77)

import oracle_common

DTYPES = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "float64"]
OPS = ["hist", "percentile", "quantile", "clip", "window", "minmax", "pwindow", "zscore", "equalize"]


def values(rng, dt, shape, special):
    """Random values of dtype dt: narrow integer ranges now and then (ties),
    floats of random scale with ties, and (special) -0.0 and inf."""
    n = int(np.prod(shape))
    if np.dtype(dt).kind in "iu":
        info = np.iinfo(dt)
        if rng.random() < 0.5:
            lo = int(rng.integers(max(info.min, -50), 10))
            hi = lo + int(rng.integers(0, 40))
        else:
            lo, hi = int(info.min), int(info.max)
        return rng.integers(max(lo, info.min), min(hi, info.max), size=shape, endpoint=True).astype(dt)
    x = rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 4)
    if rng.random() < 0.3:
        x = np.round(x)
    if special and n:
        k = rng.integers(0, n, size=max(1, n // 20))
        x[k] = rng.choice([-0.0, 0.0, np.inf, -np.inf], size=k.size)
    return x.astype(dt).reshape(shape)


def add_nan(rng, x):
    if x.size and x.dtype.kind == "f":
        flat = x.reshape(-1)
        flat[rng.integers(0, flat.size, size=max(1, flat.size // 30))] = np.nan


def histogram(a, bins=10, range=None, **kw):
    """np.histogram valued as ndforge documents it (ADR 0033): the equal-width edges of a float32
    image whose range comes from the data are np.linspace in float64 over that range rounded to
    float32, as NumPy 1 computes them; NumPy 2 (NEP 50) runs that linspace in float32.  Where the
    installed NumPy's edges differ from those, the result is NumPy's histogram with the data's
    range passed as float64 numbers, which has those edges and NumPy's counts at them."""
    h, e = np.histogram(a, bins=bins, range=range, **kw)
    a = np.asarray(a)
    if a.dtype == np.float32 and np.ndim(bins) == 0 and range is None and a.size:
        dh, de = np.histogram(a, bins=bins, range=(float(a.min()), float(a.max())), **kw)
        if not np.array_equal(de, e):
            h, e = dh, de
    return h, e


class _DocHistogram(types.ModuleType):
    """numpy, except histogram: the documented one above (for scikit-image's equalize_hist, which
    bins a float image with np.histogram over the data's range)."""

    def __getattr__(self, name):
        return getattr(np, name)

    histogram = staticmethod(histogram)


def equalize_hist(v, nbins, mask):
    ske_module.np = _DocHistogram("numpy_doc_histogram")
    try:
        return ske.equalize_hist(v, nbins=nbins, mask=mask)
    finally:
        ske_module.np = np


def images(x, batch):
    """The images of a batch, flattened, with their batch index."""
    bshape = x.shape[:batch]
    flat = x.reshape((int(np.prod(bshape)),) + x.shape[batch:])
    return bshape, [flat[i].reshape(-1) for i in range(flat.shape[0])]


def window(x, lo, hi, a, b):
    x = x.astype(np.float64)
    if hi == lo:
        return np.where(np.isnan(x), np.nan, a)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (np.clip(x, lo, hi) - lo) / (hi - lo) * (b - a) + a


def as_ref(v):
    """Integer images as float64 for np.percentile (see the module's doc)."""
    return v.astype(np.float64) if v.dtype.kind in "iu" else v


def fmt(v):
    return repr(float(v))


def main():
    args, rng = oracle_common.start(__doc__, 300)
    out = args.out
    lines = []
    for cid in range(args.cases):
        op = OPS[cid % len(OPS)]
        dt = DTYPES[int(rng.integers(0, len(DTYPES)))]
        ndim = int(rng.integers(1, 5))
        shape = tuple(int(rng.integers(0 if rng.random() < 0.03 else 1, 9 if ndim > 2 else 40)) for _ in range(ndim))
        batch = int(rng.integers(0, ndim))
        kv = {"id": cid, "op": op, "dtype": dt, "shape": oracle_common.fmt_list(shape), "batch": batch}
        special = op in ("hist", "percentile", "quantile", "clip", "window") and rng.random() < 0.3
        x = values(rng, dt, shape, special)
        if op in ("percentile", "quantile", "clip", "window", "minmax", "pwindow", "zscore") and rng.random() < 0.15:
            add_nan(rng, x)
        bshape, imgs = images(x, batch)
        error = 0
        exp2 = None
        res = []
        ofloat = np.float64
        if op == "hist":
            kind = rng.integers(0, 3)  # 0 auto range, 1 range, 2 edges
            bins = int(rng.integers(1, 30))
            rngv = None
            edges = None
            if kind == 1:
                a = float(rng.standard_normal() * 30)
                rngv = (a, a + float(rng.choice([0.0, rng.uniform(0, 100)])))
                kv["range"] = fmt(rngv[0]) + "," + fmt(rngv[1])
            elif kind == 2:
                edges = np.sort(np.round(rng.standard_normal(bins + 1) * 40, int(rng.integers(0, 3))))
                np.save(f"{out}/c{cid}_edges.npy", edges)
                kv["edges"] = f"c{cid}_edges.npy"
            kv["bins"] = bins
            w = None
            if rng.random() < 0.3:
                w = values(rng, DTYPES[int(rng.integers(0, 8))], shape, False)
                if w.dtype.kind == "f":
                    w = np.where(np.isfinite(w), w, 1).astype(w.dtype)
                np.save(f"{out}/c{cid}_w.npy", w)
                kv["weights"] = f"c{cid}_w.npy"
            density = int(rng.random() < 0.25)
            kv["density"] = density
            _, wimgs = images(w, batch) if w is not None else (None, [None] * len(imgs))
            exp2 = []
            for v, wv in zip(imgs, wimgs):
                try:
                    with np.errstate(invalid="ignore", divide="ignore"):
                        h, e = histogram(v, bins=edges if edges is not None else bins, range=rngv,
                                            weights=None if wv is None else wv.astype(np.float64),
                                            density=bool(density))
                except ValueError:
                    error = 1
                    break
                res.append(h.astype(np.float64))  # counts too: exact, and the C test reads float64
                exp2.append(e.astype(np.float64))
            nb = bins if edges is None else len(edges) - 1
            if not error:
                res = np.array(res).reshape(bshape + (nb,))
                exp2 = np.array(exp2).reshape(bshape + (nb + 1,))
        elif op in ("percentile", "quantile"):
            nq = int(rng.integers(1, 5))
            q = rng.uniform(0, 100, nq)
            q[rng.random(nq) < 0.2] = 0.0
            q[rng.random(nq) < 0.2] = 100.0
            if op == "quantile":
                q = q / 100
            kv["q"] = ",".join(fmt(v) for v in q)
            if any(v.size == 0 for v in imgs) and imgs:
                error = 1
            else:
                for v in imgs:
                    with np.errstate(invalid="ignore"):
                        f = np.percentile if op == "percentile" else np.quantile
                        res.append(np.asarray(f(as_ref(v), q), dtype=np.float64))
                res = np.array(res).reshape(bshape + (nq,))
        elif op == "clip":
            lo = float(np.round(rng.standard_normal() * 20))
            hi = lo + float(np.round(rng.uniform(0, 40)))
            info_ok = np.dtype(dt).kind == "f" or (np.iinfo(dt).min <= lo and hi <= np.iinfo(dt).max)
            ofloat = rng.choice([np.float32, np.float64] + ([np.dtype(dt).type] if info_ok else []))
            kv.update(lo=fmt(lo), hi=fmt(hi))
            res = np.clip(x.astype(np.float64), lo, hi).astype(ofloat)
        elif op in ("window", "minmax", "pwindow"):
            a, b = [(0.0, 1.0), (-1.0, 1.0), (float(rng.uniform(-5, 5)), float(rng.uniform(-5, 5)))][int(rng.integers(0, 3))]
            kv.update(a=fmt(a), b=fmt(b))
            ofloat = rng.choice([np.float32, np.float64])
            outs = []
            if op == "window":
                c = float(rng.standard_normal() * 50)
                wdt = float(rng.choice([0.0, rng.uniform(0, 300)]))
                lo, hi = c - wdt / 2, c + wdt / 2
                kv.update(lo=fmt(lo), hi=fmt(hi))
            if op == "pwindow":
                p = np.sort(rng.uniform(0, 100, 2))
                if rng.random() < 0.3:
                    p = np.array([0.5, 99.5])
                kv.update(lo=fmt(p[0]), hi=fmt(p[1]))
            for v in imgs:
                if v.size == 0:
                    outs.append(v.astype(np.float64))
                    continue
                if op == "minmax":
                    lo, hi = np.min(as_ref(v)).astype(np.float64), np.max(as_ref(v)).astype(np.float64)
                elif op == "pwindow":
                    lo, hi = np.percentile(as_ref(v), p)
                outs.append(window(v, lo, hi, a, b))
            res = np.array(outs).reshape(x.shape).astype(ofloat)
        elif op == "zscore":
            ofloat = rng.choice([np.float32, np.float64])
            mask = None
            if rng.random() < 0.6:
                mask = rng.random(shape) < rng.uniform(0.1, 1.0)
                np.save(f"{out}/c{cid}_mask.npy", mask.astype(rng.choice(["bool", "uint8", "float32"])))
                kv["mask"] = f"c{cid}_mask.npy"
            _, mimgs = images(mask, batch) if mask is not None else (None, [None] * len(imgs))
            outs = []
            for v, mv in zip(imgs, mimgs):
                sel = v.astype(np.float64) if mv is None else v.astype(np.float64)[mv]
                with np.errstate(invalid="ignore", divide="ignore"):
                    mean = sel.mean() if sel.size else np.nan
                    std = np.sqrt(np.mean((sel - mean) ** 2)) if sel.size else np.nan
                if std == 0:
                    std = 1.0
                outs.append((v.astype(np.float64) - mean) / std)
            res = np.array(outs).reshape(x.shape).astype(ofloat)
        else:  # equalize
            nbins = int(rng.choice([256, int(rng.integers(1, 50))]))
            kv["nbins"] = nbins
            if np.dtype(dt).kind in "iu" and np.dtype(dt).itemsize == 4:
                x = (x // 65536).astype(dt)  # scikit-image makes one bin per integer of the range
                bshape, imgs = images(x, batch)
            mask = None
            if rng.random() < 0.4:
                mask = rng.random(shape) < rng.uniform(0.0, 1.0)
                np.save(f"{out}/c{cid}_mask.npy", mask)
                kv["mask"] = f"c{cid}_mask.npy"
            _, mimgs = images(mask, batch) if mask is not None else (None, [None] * len(imgs))
            ofloat = np.float32 if dt == "float32" else np.float64
            outs = []
            for v, mv in zip(imgs, mimgs):
                if v.size == 0:
                    outs.append(v.astype(ofloat))
                    continue
                if mv is not None and not mv.any() and v.dtype.kind in "iu":
                    outs.append(np.full(v.shape, np.nan, ofloat))
                    continue
                try:
                    with np.errstate(invalid="ignore", divide="ignore"):
                        outs.append(equalize_hist(v, nbins, mv))
                except ValueError:
                    error = 1
                    break
            if not error:
                res = np.array(outs).reshape(x.shape).astype(ofloat)
        kv["odtype"] = np.dtype(ofloat).name
        np.save(f"{out}/c{cid}_in.npy", x)
        kv["input"] = f"c{cid}_in.npy"
        if error:
            kv["error"] = 1
        else:
            np.save(f"{out}/c{cid}_exp.npy", np.ascontiguousarray(res))
            kv["expected"] = f"c{cid}_exp.npy"
            if exp2 is not None:
                np.save(f"{out}/c{cid}_exp2.npy", np.ascontiguousarray(exp2))
                kv["expected2"] = f"c{cid}_exp2.npy"
        lines.append(" ".join(f"{k}={v}" for k, v in kv.items()))
    with open(f"{out}/manifest.txt", "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
