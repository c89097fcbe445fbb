"""oracle_common.py -- what the scipy oracle scripts (tests/oracle_*.py) share:
their command line, list formatting for the manifests, and random blob masks.
The oracles run from tests/ (tu_run_oracle), so `import oracle_common` finds
this file next to them."""
import argparse
import os

import numpy as np
import scipy.ndimage as ndi


def start(doc, default_cases):
    """Parses --seed, --out, --cases (default default_cases); makes --out.
    Returns (args, rng)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0] if doc else None)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--cases", type=int, default=default_cases)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    return args, np.random.default_rng(args.seed)


def fmt_list(v):
    """Integers as the manifests write them: "3,-1,0"."""
    return ",".join(str(int(x)) for x in v)


def blobs(rng, shape, nbatch, sigma, quantile, below=False):
    """Thresholded smoothed noise (connected blobs with holes and bays): normal
    noise smoothed over the spatial axes by a Gaussian of width drawn from
    sigma = (lo, hi), cut at a quantile drawn from quantile = (lo, hi); True
    above the cut, or below it with below=True."""
    g = rng.standard_normal(shape)
    sig = float(rng.uniform(*sigma))
    g = ndi.gaussian_filter(g, [0.0] * nbatch + [sig] * (len(shape) - nbatch), mode="wrap")
    q = float(rng.uniform(*quantile))
    thr = np.quantile(g, q) if g.size else 0.0
    return g < thr if below else g > thr


# ---- 64-bit integers -----------------------------------------------------------------
# scipy 1.10 computes min, max and ranks of int64 / uint64 in double, so it rounds values
# beyond 2^53; ndforge is exact there.  The oracles draw such values and take the exact
# result of an order-statistic filter from scipy run on the values' ranks, mapped back
# (a strictly increasing map commutes with min, max and selection).

WIDE = ("int64", "uint64")


def draw_wide(rng, dtype, shape):
    """Values near 2^60 (int64; now and then negative) or 2^63 (uint64), with ties, and
    the dtype's extremes now and then: most of them have no float64 of their own."""
    dt = np.dtype(dtype)
    base = (1 << 63) + 1 if dt == np.uint64 else (1 << 60) + 1
    if dt == np.int64 and rng.random() < 0.3:
        base = -base
    span = int(rng.choice([4, 40, 4000]))
    small = rng.integers(-span, span + 1, size=shape)
    v = np.array([base + int(s) for s in np.ravel(small)], dtype=dt).reshape(shape)
    if v.size and rng.random() < 0.3:
        info = np.iinfo(dt)
        v.flat[int(rng.integers(0, v.size))] = info.max
        v.flat[int(rng.integers(0, v.size))] = info.min
    return v


def by_ranks(fn, img, cval, **kw):
    """fn(img, mode=..., cval=cval, **kw) exactly for an order-statistic fn: scipy on the
    ranks of img's values (and of cval, converted to img's dtype), mapped back."""
    cv = np.array(int(cval)).astype(img.dtype)
    vals = np.unique(np.append(np.ravel(img), cv))
    r = np.searchsorted(vals, img).astype(np.int64)
    return vals[fn(r, cval=float(np.searchsorted(vals, cv)), **kw)]
