#!/usr/bin/env python3
"""scipy.ndimage oracle for tests/test_filters.c.

Draws random cases of the linear filters (correlate1d, convolve1d, correlate,
convolve, uniform_filter1d, uniform_filter, gaussian_filter1d,
gaussian_filter, sobel, prewitt, laplace, gaussian_laplace,
gaussian_gradient_magnitude), runs scipy on them and writes, per case, the
input, the weights when the op takes weights, and scipy's output as .npy
files, plus one manifest line of space-separated key=value pairs:

  id=7 op=gaussian_filter dtype=uint8 odtype=float32 shape=2,5,9 batch=1
  modes=reflect,wrap cval=-1.5 origin=0,1 axes=2,1 sigma=0.7,1.3 order=0,2
  truncate=4.0 radius=3,2 axis=-1 size=3,1 input=c7_in.npy weights=c7_w.npy
  expected=c7_out.npy expected_np=c7_np.npy

(one line).  A missing key means the argument is not given.  batch leading
axes are independent images: the expected output is scipy applied to each
image.  axes (scipy >= 1.11's argument) is emulated with the scipy functions
this scipy has, exactly as scipy composes it: the 1-D passes (or derivative
terms) in the order of axes, each reading the previous pass's output; within
each term of gaussian_laplace / gaussian_gradient_magnitude the passes go in
increasing axis order (scipy's term is gaussian_filter with one sigma per
input axis and no axes), and the unlisted axes are not smoothed (scipy's
documented meaning; its gaussian_gradient_magnitude code smooths them too).

The Gaussian kernels: scipy builds them with numpy.exp, which on CPUs with
AVX-512 is NumPy's own vector exp and differs from the C library's exp by up
to one unit in the last place, and a derivative kernel's polynomial with
ndarray.dot, which NumPy 2's OpenBLAS computes with fused multiply-adds.  Both
are properties of the NumPy build; ndforge uses the C library's exp and sums
each product rounded on its own, in index order (ADR 0033).  So for the
Gaussian ops `expected` is scipy's output with the kernel built that way (exp
from Python's math.exp, dot in Python floats), which ndforge must match bit for
bit, and `expected_np` is plain scipy's, which it must match to a tolerance.

Usage: oracle_filters.py --seed S --out DIR [--cases N]
"""
import math
import os
import types
import warnings

import numpy as np

import oracle_common
import scipy.ndimage as ndi
from scipy.ndimage import _filters

IN_DTYPES = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "float64", "int64", "uint64"]
OUT_DTYPES = IN_DTYPES
MODES = ["reflect", "constant", "nearest", "mirror", "wrap", "grid-mirror", "grid-constant", "grid-wrap"]
OPS = ["correlate1d", "convolve1d", "correlate", "convolve", "uniform_filter1d", "uniform_filter",
       "gaussian_filter1d", "gaussian_filter", "sobel", "prewitt", "laplace", "gaussian_laplace",
       "gaussian_gradient_magnitude"]
GAUSS = {"gaussian_filter1d", "gaussian_filter", "gaussian_laplace", "gaussian_gradient_magnitude"}
INT_RANGE = {"uint8": (0, 255), "int8": (-128, 127), "uint16": (0, 3000), "int16": (-3000, 3000),
             "uint32": (0, 10 ** 6), "int32": (-10 ** 6, 10 ** 6), "int64": (-10 ** 9, 10 ** 9),
             "uint64": (0, 10 ** 9)}


class _RoundedDot(np.ndarray):
    """An array whose dot is a matrix-vector product summed in index order, every product and
    sum rounded on its own (no fused multiply-add, whatever BLAS NumPy has)."""

    def dot(self, b):
        a = np.asarray(self, dtype=np.float64)
        b = np.asarray(b, dtype=np.float64)
        out = []
        for row in a.reshape(-1, a.shape[-1]):
            s = 0.0
            for u, v in zip(row.tolist(), b.tolist()):
                s = s + u * v
            out.append(s)
        return np.array(out).reshape(a.shape[:-1]).view(_RoundedDot)


class _LibmExp(types.ModuleType):
    """numpy, except exp: the C library's, element by element; and the arrays scipy's
    _gaussian_kernel1d builds (arange, zeros, diag) are _RoundedDot arrays."""

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def exp(a):
        a = np.asarray(a, dtype=np.float64)
        return np.array([math.exp(v) for v in a.ravel()]).reshape(a.shape).view(_RoundedDot)

    @staticmethod
    def arange(*args, **kwargs):
        return np.arange(*args, **kwargs).view(_RoundedDot)

    @staticmethod
    def zeros(*args, **kwargs):
        return np.zeros(*args, **kwargs).view(_RoundedDot)

    @staticmethod
    def diag(*args, **kwargs):
        return np.diag(*args, **kwargs).view(_RoundedDot)


LIBM = _LibmExp("numpy_libm_exp")
# the name scipy's _filters module imports numpy as (scipy 1.10: numpy; newer: np)
NP_NAME = "numpy" if getattr(_filters, "numpy", None) is np else "np"


def draw_shape(rng):
    nsp = int(rng.choice([1, 2, 2, 3, 3, 4]))
    batch = int(rng.choice([0, 0, 0, 1, 2])) if nsp <= 3 else 0
    shape = []
    for _ in range(batch):
        shape.append(int(rng.integers(1, 4)))
    for _ in range(nsp):
        r = rng.random()
        shape.append(1 if r < 0.1 else 2 if r < 0.2 else int(rng.integers(3, 14 if nsp <= 2 else 8)))
    return shape, batch


def draw_input(rng, dtype, shape):
    if dtype in oracle_common.WIDE and rng.random() < 0.5:  # beyond 2^53: read into double as scipy reads them
        return oracle_common.draw_wide(rng, dtype, shape)
    if dtype in INT_RANGE:
        lo, hi = INT_RANGE[dtype]
        if rng.random() < 0.3:  # few levels: sums land on integers, where truncation matters
            return rng.integers(lo, lo + 5, size=shape).astype(dtype)
        return rng.integers(lo, hi + 1, size=shape).astype(dtype)
    if rng.random() < 0.3:
        return rng.integers(-4, 5, size=shape).astype(dtype)
    return (rng.standard_normal(shape) * 10 ** rng.uniform(-2, 3)).astype(dtype)


def draw_weights1d(rng):
    n = int(rng.integers(1, 8)) if rng.random() < 0.85 else int(rng.integers(8, 20))
    kind = rng.random()
    if kind < 0.3:
        w = rng.integers(-3, 4, size=n).astype(np.float64)
    else:
        w = rng.standard_normal(n)
    if n % 2 == 1 and rng.random() < 0.4:  # exactly symmetric or antisymmetric
        c = n // 2
        sign = 1.0 if rng.random() < 0.5 else -1.0
        for k in range(1, c + 1):
            w[c + k] = sign * w[c - k]
        if sign < 0:
            w[c] = w[c] if rng.random() < 0.5 else 0.0
    if rng.random() < 0.15:
        w[int(rng.integers(0, n))] = 1e-17  # below DBL_EPSILON: left out by correlate
    return w


def valid_origin(rng, n, convolve):
    """A random origin scipy accepts for n taps: a correlation's lies in
    [-(n // 2), (n - 1) // 2]; a convolution's o maps to -o (odd n) or
    -o - 1 (even n), which must lie there."""
    o = int(rng.integers(-(n // 2), (n - 1) // 2 + 1))
    return -o - (1 - n % 2) if convolve else o


def per_axis(rng, nax, draw):
    """One value for every axis, or one per axis."""
    if nax > 1 and rng.random() < 0.5:
        return [draw() for _ in range(nax)]
    return [draw()]


def full(v, nax):
    """v (one value, or a sequence of one or nax values) as a list of nax values."""
    v = list(v) if np.ndim(v) else [v]
    return v * nax if len(v) == 1 else v


def fmt_f(v):
    return ",".join(repr(float(x)) for x in v)


def run_batched(f, x, batch, odtype):
    out = np.empty(x.shape, dtype=odtype)
    for idx in np.ndindex(*x.shape[:batch]):
        out[idx] = f(x[idx])
    return out


def g1d(x, out, sigma, axis, order, mode, cval, truncate, radius):
    return ndi.gaussian_filter1d(x, sigma, axis, order, out, mode, cval, truncate, radius=radius)


def gauss_seq(x, odtype, axes, sigmas, orders, modes, cval, truncate, radii):
    """scipy's gaussian_filter over axes in the given order."""
    out = np.empty(x.shape, dtype=odtype)
    src = x
    done = False
    for ax, s, o, m, r in zip(axes, sigmas, orders, modes, radii):
        if s > 1e-15:
            g1d(src, out, s, ax, o, m, cval, truncate, r)
            src = out
            done = True
    if not done:
        out[...] = x
    return out


def gauss_terms(x, sigma, axes, order, output, modes, cval, truncate, radius=None):
    """gaussian_laplace (order 2) / gaussian_gradient_magnitude (order 1) over axes as ndforge
    defines them (ADR 0030), composed from the gaussian_filter1d calls of any scipy: sigma, modes
    and radius one value or one per listed axis; term i is gaussian_filter with order on axes[i],
    the other listed axes smoothed and the unlisted ones left alone, its passes in increasing axis
    order (scipy's gaussian_filter loop), every pass in modes[i]; the terms are added in the order
    of axes in the output's dtype (order 1: squared first, then np.sqrt with casting='unsafe'), as
    scipy does.  python/tests/test_filters.py checks ndforge.ndimage against it too."""
    n = len(axes)
    sig, md, rad = full(sigma, n), full(modes, n), full(radius, n)
    by_axis = sorted(range(n), key=lambda j: axes[j])
    out = None
    for i in range(n):
        orders = [0] * n
        orders[i] = order
        t = gauss_seq(x, output, [axes[j] for j in by_axis], [sig[j] for j in by_axis],
                      [orders[j] for j in by_axis], [md[i]] * n, cval, truncate, [rad[j] for j in by_axis])
        if order == 1:
            np.multiply(t, t, t)
        if out is None:
            out = t
        else:
            out += t
    if order == 1:
        np.sqrt(out, out, casting="unsafe")
    return out


def laplace_d2(input, axis, output, mode, cval):
    """scipy's laplace derivative (the function laplace hands generic_laplace)."""
    return ndi.correlate1d(input, [1, -2, 1], axis, output, mode, cval, 0)


def generic_terms(x, deriv, axes, output, modes, cval, extra=(), kw=None, magnitude=False):
    """scipy's generic_laplace (magnitude False) / generic_gradient_magnitude loop over axes, as any
    scipy runs it: deriv(x, axis, output, mode, cval, *extra, **kw) per axis, modes one or one per
    axis, the first term written into a zeroed output (output's dtype, or x's), the others added to
    it in the order of axes (magnitude: squared first, then np.sqrt with casting='unsafe').
    python/tests/test_filters.py checks ndforge.ndimage against it too."""
    kw = kw or {}
    modes = full(modes, len(axes))
    out = np.zeros(x.shape, x.dtype if output is None else output)
    deriv(x, axes[0], out, modes[0], cval, *extra, **kw)
    if magnitude:
        np.multiply(out, out, out)
    for a, m in zip(axes[1:], modes[1:]):
        t = deriv(x, a, out.dtype, m, cval, *extra, **kw)
        if magnitude:
            np.multiply(t, t, t)
        out += t
    if magnitude:
        np.sqrt(out, out, casting="unsafe")
    return out


def make_case(rng, cid, outdir):
    op = OPS[int(rng.integers(0, len(OPS)))]
    dtype = IN_DTYPES[int(rng.integers(0, len(IN_DTYPES)))]
    odtype = dtype if rng.random() < 0.6 else OUT_DTYPES[int(rng.integers(0, len(OUT_DTYPES)))]
    if op == "gaussian_gradient_magnitude" and odtype in ("int8", "uint8"):
        odtype = "float64"  # NumPy's float16 square root loop: exercised by test_filters.c by hand
    shape, batch = draw_shape(rng)
    nsp = len(shape) - batch
    x = draw_input(rng, dtype, shape)
    cval = float(rng.choice([0.0, 0.0, -1.5, 3.25, 100.0]))
    kv = {"op": op, "dtype": dtype, "odtype": odtype, "shape": oracle_common.fmt_list(shape), "batch": batch,
          "cval": repr(cval)}
    spatial = list(range(batch, len(shape)))
    # the filtered axes: all spatial axes (no key), or an explicit list (scipy's axes=)
    axes = spatial
    use_axes = op in ("correlate", "convolve", "uniform_filter", "gaussian_filter", "laplace",
                      "gaussian_laplace", "gaussian_gradient_magnitude") and rng.random() < 0.35
    if use_axes:
        k = int(rng.integers(1, nsp + 1))
        axes = [int(a) for a in rng.permutation(spatial)[:k]]
        kv["axes"] = ",".join(str(a - len(shape) if rng.random() < 0.3 else a) for a in axes)
    nax = len(axes)
    one_axis = op in ("correlate1d", "convolve1d", "uniform_filter1d", "gaussian_filter1d", "sobel", "prewitt")
    axis = int(rng.choice(spatial))
    if one_axis:
        kv["axis"] = str(axis - len(shape) if rng.random() < 0.3 else axis)
    # modes: one, or one per filtered axis (sobel / prewitt: per spatial axis)
    nm = nsp if op in ("sobel", "prewitt") else nax
    if one_axis and op not in ("sobel", "prewitt") or op in ("correlate", "convolve"):
        modes = [MODES[int(rng.integers(0, len(MODES)))]]
    else:
        modes = per_axis(rng, nm, lambda: MODES[int(rng.integers(0, len(MODES)))])
    kv["modes"] = ",".join(modes)
    modes_full = full(modes, nm)
    sl = lambda a: a - batch  # noqa: E731  axis index within one image
    files = {}
    gauss = op in GAUSS

    def compute():
        if op in ("correlate1d", "convolve1d"):
            f = getattr(ndi, op)
            return run_batched(lambda im: f(im, w, sl(axis), output=odtype, mode=modes[0], cval=cval, origin=org),
                               x, batch, odtype)
        if op in ("correlate", "convolve"):
            return run_batched(lambda im: getattr(ndi, op)(im, wfull, output=odtype, mode=modes[0], cval=cval,
                                                           origin=orgfull), x, batch, odtype)
        if op == "uniform_filter1d":
            return run_batched(lambda im: ndi.uniform_filter1d(im, size[0], sl(axis), output=odtype, mode=modes[0],
                                                               cval=cval, origin=org), x, batch, odtype)
        if op == "uniform_filter":
            def uf(im):
                if not use_axes:
                    return ndi.uniform_filter(im, size if len(size) > 1 else size[0], output=odtype,
                                              mode=modes if len(modes) > 1 else modes[0], cval=cval,
                                              origin=orgs if len(orgs) > 1 else orgs[0])
                out = np.empty(im.shape, dtype=odtype)
                src, done = im, False
                for a, s, m, o in zip(axes, full(size, nax), modes_full, full(orgs, nax)):
                    if s > 1:
                        ndi.uniform_filter1d(src, s, sl(a), out, m, cval, o)
                        src, done = out, True
                if not done:
                    out[...] = im
                return out
            return run_batched(uf, x, batch, odtype)
        if op == "gaussian_filter1d":
            return run_batched(lambda im: ndi.gaussian_filter1d(im, sigma[0], sl(axis), order[0], odtype, modes[0],
                                                                cval, truncate, radius=radius[0] if radius else None),
                               x, batch, odtype)
        rr = full(radius, nax) if radius else [None] * nax
        if op == "gaussian_filter":
            def gf(im):
                if not use_axes:
                    return ndi.gaussian_filter(im, sigma if len(sigma) > 1 else sigma[0],
                                               order if len(order) > 1 else order[0], odtype,
                                               modes if len(modes) > 1 else modes[0], cval, truncate,
                                               radius=(rr if len(radius) > 1 else radius[0]) if radius else None)
                return gauss_seq(im, odtype, [sl(a) for a in axes], full(sigma, nax), full(order, nax), modes_full,
                                 cval, truncate, rr)
            return run_batched(gf, x, batch, odtype)
        if op in ("sobel", "prewitt"):
            return run_batched(lambda im: getattr(ndi, op)(im, sl(axis), odtype, modes if len(modes) > 1 else modes[0],
                                                          cval), x, batch, odtype)
        if op == "laplace":
            def lp(im):
                if not use_axes:
                    return ndi.laplace(im, odtype, modes if len(modes) > 1 else modes[0], cval)
                return generic_terms(im, laplace_d2, [sl(a) for a in axes], odtype, modes_full, cval)
            return run_batched(lp, x, batch, odtype)
        # gaussian_laplace / gaussian_gradient_magnitude
        dorder = 2 if op == "gaussian_laplace" else 1

        def gd(im):
            if not use_axes:
                kw = {"radius": rr if len(radius) > 1 else radius[0]} if radius else {}
                return getattr(ndi, op)(im, sigma if len(sigma) > 1 else sigma[0], odtype,
                                        modes if len(modes) > 1 else modes[0], cval, truncate=truncate, **kw)
            return gauss_terms(im, sigma, [sl(a) for a in axes], dorder, odtype, modes_full, cval, truncate, rr)
        return run_batched(gd, x, batch, odtype)

    w = wfull = None
    org = 0
    orgs = orgfull = [0]
    size = sigma = order = radius = None
    truncate = 4.0
    if op in ("correlate1d", "convolve1d"):
        w = draw_weights1d(rng)
        n = len(w)
        org = valid_origin(rng, n, op == "convolve1d")
        kv["origin"] = str(org)
        files["weights"] = w
    elif op in ("correlate", "convolve"):
        wshape = [int(rng.integers(1, 5)) for _ in range(nax)]
        w = rng.integers(-3, 4, size=wshape).astype(np.float64) if rng.random() < 0.4 else rng.standard_normal(wshape)
        if rng.random() < 0.2:
            w.flat[int(rng.integers(0, w.size))] = 1e-17
        orgs = []
        orgs = [valid_origin(rng, k, op == "convolve") for k in wshape]
        if rng.random() < 0.5 and len(set(orgs)) == 1:
            orgs = orgs[:1]
        kv["origin"] = oracle_common.fmt_list(orgs)
        files["weights"] = w
        # the weights laid out along the input's spatial axes (unfiltered axes: extent 1, origin 0)
        order_ax = sorted(range(nax), key=lambda i: axes[i])
        wt = np.transpose(w, order_ax)
        of = full(orgs, nax)
        wshape_full, orgfull = [], []
        for a in spatial:
            if a in axes:
                i = axes.index(a)
                wshape_full.append(w.shape[i])
                orgfull.append(of[i])
            else:
                wshape_full.append(1)
                orgfull.append(0)
        wfull = wt.reshape(wshape_full)
    elif op in ("uniform_filter1d", "uniform_filter"):
        def dsize():
            return int(rng.integers(1, 7)) if rng.random() < 0.9 else int(rng.integers(7, 16))
        size = [dsize()] if op == "uniform_filter1d" else per_axis(rng, nax, dsize)
        kv["size"] = oracle_common.fmt_list(size)
        orgs = [int(rng.integers(-(s // 2), s - s // 2)) for s in size]
        if op == "uniform_filter1d":
            org = orgs[0]
        kv["origin"] = oracle_common.fmt_list(orgs)
    elif gauss:
        def dsig():
            r = rng.random()
            return 0.0 if r < 0.07 else float(rng.uniform(0.2, 0.8)) if r < 0.4 else float(rng.uniform(0.8, 3.0))
        if op == "gaussian_filter1d":  # sometimes a kernel of more than 128 taps (NumPy's pairwise sum recurses)
            sigma = [float(rng.uniform(16.0, 40.0)) if rng.random() < 0.15 else float(rng.uniform(0.2, 3.0))]
        else:
            sigma = per_axis(rng, nax, dsig)
        kv["sigma"] = fmt_f(sigma)
        if op in ("gaussian_filter1d", "gaussian_filter"):
            order = per_axis(rng, 1 if op == "gaussian_filter1d" else nax, lambda: int(rng.integers(0, 4)))
            kv["order"] = oracle_common.fmt_list(order)
        if rng.random() < 0.3:
            truncate = float(rng.choice([1.0, 2.5, 3.0, 6.0]))
        kv["truncate"] = repr(truncate)
        radius = []
        if rng.random() < 0.25:
            radius = [int(rng.integers(0, 6))] if op == "gaussian_filter1d" else per_axis(
                rng, nax, lambda: int(rng.integers(0, 6)))
            kv["radius"] = oracle_common.fmt_list(radius)

    setattr(_filters, NP_NAME, LIBM)
    try:
        expected = compute()
    finally:
        setattr(_filters, NP_NAME, np)
    prefix = "c%d" % cid
    np.save(os.path.join(outdir, prefix + "_in.npy"), x)
    np.save(os.path.join(outdir, prefix + "_out.npy"), expected)
    kv["input"] = prefix + "_in.npy"
    kv["expected"] = prefix + "_out.npy"
    if gauss:
        np.save(os.path.join(outdir, prefix + "_np.npy"), compute())
        kv["expected_np"] = prefix + "_np.npy"
    if "weights" in files:
        np.save(os.path.join(outdir, prefix + "_w.npy"), files["weights"])
        kv["weights"] = prefix + "_w.npy"
    return "id=%d " % cid + " ".join("%s=%s" % (k, v) for k, v in kv.items())


def main():
    args, rng = oracle_common.start(__doc__, 600)
    warnings.simplefilter("ignore")
    lines = [make_case(rng, i, args.out) for i in range(args.cases)]
    with open(os.path.join(args.out, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
