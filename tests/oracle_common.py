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
