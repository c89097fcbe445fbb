"""Intensity statistics, windows and normalizations on ndforge (the registry's intensity family).

NumPy's ``histogram``, ``percentile``, ``quantile`` and ``clip`` and scikit-image's
``equalize_hist``, with their signatures and values, per image of a batch;
and the windowing and normalization steps of CT/MRI preprocessing:
``window`` (an intensity window mapped to [out_min, out_max]), ``window_ct``
(CT presets by name, or centre and width), ``normalize_minmax``,
``percentile_window`` (e.g. 0.5 to 99.5) and ``normalize_zscore`` (optionally
with the statistics of a mask's voxels).

Extra keyword of every function: ``batch_dims``, the leading axes that are
independent images (0: the whole array is one image, as NumPy's axis=None).
Per-image results put the batch axes first: ``percentile(x, [5, 95],
batch_dims=1)`` has shape (n, 2) where NumPy's ``np.percentile(x.reshape(n,
-1), [5, 95], axis=1)`` has (2, n).  A single value comes back as a NumPy
scalar (float64; float32 where NumPy 2 keeps a float32 input's dtype) for NumPy inputs and as a 0-d
array of the input's kind otherwise.  Result dtypes follow the installed NumPy (docs/adr/0033).

The windows and normalizations return float32 (float64 for float64 inputs)
unless ``output=`` gives a dtype or an array to fill.  Inputs are NumPy
arrays or tensors of one framework and device; bool, 64-bit integer and
float16 / bfloat16 inputs are read in a copy of a type the library takes
(uint8, float64, float32).  Bad arguments raise ValueError with the library's
message.
"""

import ctypes

import numpy as np

from . import _core
from ._core import C, S, K

__all__ = ["histogram", "percentile", "quantile", "clip", "window", "window_ct", "normalize_minmax",
           "percentile_window", "normalize_zscore", "equalize_hist", "CT_PRESETS"]

# The preset names of window_ct (ndf_ct_window_preset gives their centre and width).
CT_PRESETS = ("brain", "subdural", "stroke", "bone", "lung", "mediastinum", "soft_tissue", "liver")

_TAKES = tuple(np.dtype(d) for d in ("uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "float64",
                                     "int64", "uint64"))


def _has(fn):
    if fn not in C:
        raise NotImplementedError("this libndforge has no %s (%s)" % (fn, _core._capi.library_path))


def _call(status, ctx):
    if status:
        msg = (C["ndf_errmsg"](ctx) or b"").decode(errors="replace")
        if status == K["NDF_EINVAL"]:
            raise ValueError(msg)
        _core.raise_status(status, ctx)


def _readable(x):
    """x, or a copy in a dtype the library takes (bool: uint8, halves: float32)."""
    dt = _core.dtype_of(x)
    torch = _core.kind_of(x) == "torch"
    if isinstance(dt, str) or dt == np.float16:
        return x.float() if torch else x.astype(np.float32)
    if dt == np.bool_:
        if torch:
            import torch as _torch
            return x.to(_torch.uint8)
        return x.astype(np.uint8)
    if dt not in _TAKES:
        return x.double() if torch else x.astype(np.float64)
    return x


def _input(x, batch_dims):
    x = _core.as_array(x)
    nb = int(batch_dims)
    if nb < 0 or nb > x.ndim:
        raise ValueError("batch_dims %d: the input has %d axes" % (nb, x.ndim))
    return _readable(x), nb


def _aux(a, x, what):
    """The mask or weights: an array of x's shape and kind, in a dtype the library takes."""
    if a is None:
        return None
    a = _core.as_array(a)
    if _core.kind_of(a) != _core.kind_of(x):
        raise TypeError("ndforge: %s must be an array of the input's kind (%s, %s)"
                        % (what, _core.kind_of(a), _core.kind_of(x)))
    if tuple(a.shape) != tuple(x.shape):
        raise ValueError("%s must have the input's shape %s, not %s" % (what, tuple(x.shape), tuple(a.shape)))
    return _readable(a)


def _out(where, shape, output, default):
    """The output array: a new one of output's dtype (default `default`) or output itself."""
    if output is None:
        return _core.empty(where, shape, default)
    if isinstance(output, (np.dtype, type, str)) or type(output).__module__ == "torch" and \
            not hasattr(output, "data_ptr"):  # a dtype (NumPy's or torch's)
        dt = str(output).replace("torch.", "") if type(output).__module__.startswith("torch") else output
        return _core.empty(where, shape, np.dtype(dt))
    if tuple(output.shape) != tuple(shape):
        raise ValueError("output must have shape %s, not %s" % (tuple(shape), tuple(output.shape)))
    if _core.kind_of(output) != where.kind:
        raise TypeError("ndforge: output must be an array of the input's kind (%s)" % where.kind)
    if where.kind == "numpy":  # the library writes it where it is (NumPy's checks of out=)
        if not output.flags.writeable:
            raise ValueError("output array is read-only")
        if not output.dtype.isnative or not output.flags.aligned:
            raise ValueError("ndforge: output must be aligned and in the native byte order")
    return output


def _scalar(out, where):
    return out.dtype.type(out[()]) if where.kind == "numpy" and out.ndim == 0 else out


def _quantile_dtype(fn, dt, q):
    """The installed NumPy's result dtype of numpy.percentile / quantile (fn) of an array of dtype dt at q:
    float64, except that NumPy 2 keeps a float32 or float16 input's dtype for a Python int or float q (weak
    promotion).  Asked of NumPy itself, on two values."""
    try:
        dt = np.dtype(dt)
    except TypeError:  # a torch dtype NumPy lacks (bfloat16): read as float32
        dt = np.dtype(np.float32)
    if dt.kind != "f" or dt == np.float64:
        return np.dtype(np.float64)
    rt = np.asarray(getattr(np, fn)(np.zeros(2, dt), q)).dtype
    return rt if rt.kind == "f" else np.dtype(np.float64)


def _as_dtype(out, dt):
    if _core.dtype_of(out) == dt:
        return out
    if _core.kind_of(out) == "torch":
        import torch
        return out.to(getattr(torch, dt.name))
    return out.astype(dt)


def _doubles(v):
    vals = [float(t) for t in np.atleast_1d(_core.to_host_numpy(v)).ravel()]
    return len(vals), (ctypes.c_double * max(len(vals), 1))(*vals)


def histogram(a, bins=10, range=None, weights=None, density=False, *, batch_dims=0):
    """numpy.histogram of each image: (hist, bin_edges); hist int64 (float64 with weights or density),
    shapes batch + (nbins,) and batch + (nbins + 1,).  bins: a count or the edges (an array)."""
    _has("ndf_histogram")
    x, nb = _input(a, batch_dims)
    x = x.reshape(1) if x.ndim == 0 else x  # a 0-d image: its one value (NumPy's)
    where = _core.placement(x)
    w = _aux(weights, x, "weights")
    opt = S["ndf_histogram_options"]()
    C["ndf_histogram_options_init"](ctypes.byref(opt))
    keep = []
    if np.ndim(bins) == 0:
        if isinstance(bins, str):
            raise ValueError("ndforge: histogram bins must be a count or the edges, not %r" % (bins,))
        if int(bins) != bins or int(bins) < 1:
            raise ValueError("`bins` must be positive, when an integer")
        opt.bins = int(bins)
        nbins = int(bins)
    else:
        n, edges = _doubles(bins)
        if n < 2:
            raise ValueError("bins must hold at least 2 edges")
        keep.append(edges)
        opt.edges = edges
        opt.nedges = n
        nbins = n - 1
    if range is not None:
        lo, hi = (float(v) for v in range)
        opt.has_range = 1
        opt.range[0], opt.range[1] = lo, hi
    opt.density = 1 if density else 0
    opt.batch_dims = nb
    batch = tuple(x.shape[:nb])
    hist = _core.empty(where, batch + (nbins,), np.float64 if (w is not None or density) else np.int64)
    edges_out = _core.empty(where, batch + (nbins + 1,), np.float64)
    dx, k1 = _core.describe(x, where)
    dh, k2 = _core.describe(hist, where)
    de, k3 = _core.describe(edges_out, where)
    if w is not None:
        dw, k4 = _core.describe(w, where)
        keep.append((dw, k4))
        opt.weights = ctypes.pointer(dw)
    _call(C["ndf_histogram"](where.ctx, ctypes.byref(dx), ctypes.byref(dh), ctypes.byref(de), ctypes.byref(opt)),
          where.ctx)
    return hist, edges_out


def _quantiles(fn, a, q, batch_dims):
    _has(fn)
    x, nb = _input(a, batch_dims)
    x = x.reshape(1) if x.ndim == 0 else x  # a 0-d image: its one value (NumPy's)
    where = _core.placement(x)
    qh = q if type(q) in (int, float) else _core.to_host_numpy(q)
    rdt = _quantile_dtype(fn[4:], _core.dtype_of(_core.as_array(a)), qh)
    scalar_q = np.ndim(qh) == 0
    n, qs = _doubles(q)
    if n == 0:
        raise ValueError("q must hold at least one value")
    batch = tuple(x.shape[:nb])
    qshape = np.shape(_core.to_host_numpy(q))
    out = _core.empty(where, batch if n == 1 else batch + (n,), np.float64)
    dx, k1 = _core.describe(x, where)
    do, k2 = _core.describe(out, where)
    _call(C[fn](where.ctx, ctypes.byref(dx), qs, n, ctypes.byref(do), nb), where.ctx)
    if not scalar_q:
        out = out.reshape(batch + tuple(qshape))
    return _scalar(_as_dtype(out, rdt), where)


def percentile(a, q, *, batch_dims=0):
    """numpy.percentile(a, q) of each image (method 'linear'): shape batch + shape of q, in the installed
    NumPy's result dtype (float64; NumPy 2: a float32 input's float32 for a Python scalar q, the library's
    float64 value rounded once, where NumPy 2 interpolates in float32: the two may differ in the last bit)."""
    return _quantiles("ndf_percentile", a, q, batch_dims)


def quantile(a, q, *, batch_dims=0):
    """numpy.quantile(a, q) of each image (method 'linear'), dtype and shape as percentile()."""
    return _quantiles("ndf_quantile", a, q, batch_dims)


def clip(a, a_min, a_max, *, output=None):
    """numpy.clip(a, a_min, a_max) (both bounds given, a_min <= a_max); the installed NumPy's result dtype
    (of the input and the bounds: float bounds make an integer input float64; Python int bounds beyond an
    integer input's range widen it under NumPy 1 -- to float64, or to object beyond 64 bits -- and are
    dropped under NumPy 2) unless output=; torch tensors keep theirs.  The library compares an int64 or
    uint64 image in its own dtype exactly, its bounds as float64 (exact up to 2^53): an integer bound at or
    beyond the end of the dtype's range is taken at that end, and one that drops both ends copies the
    input."""
    _has("ndf_clip")
    x0 = _core.as_array(a)
    x = _readable(x0)
    where = _core.placement(x)
    dt = _core.dtype_of(x0)
    cast = None
    lo, hi = a_min, a_max
    res = np.result_type(dt, a_min, a_max) if isinstance(dt, np.dtype) else None
    identity = False
    if isinstance(dt, np.dtype) and dt.kind in "iu" and res in (dt, np.dtype(object)):
        # NumPy 2 (NEP 50) keeps an integer input's dtype for Python int bounds and drops a bound beyond the
        # dtype's range (uint8 clipped to -1, 300 stays uint8, unchanged); NumPy 1 widens the dtype instead,
        # to object beyond 64 bits (int64 clipped to 0, 2**64: the values as Python ints)
        info = np.iinfo(dt)
        identity = type(lo) is int and type(hi) is int and lo <= info.min and hi >= info.max
        if type(lo) is int:
            lo = min(max(lo, info.min), info.max)
        if type(hi) is int:
            hi = min(max(hi, info.min), info.max)
    if output is None and _core.kind_of(x0) in ("numpy", "cupy"):
        if res == np.dtype(object):
            cast = res
        elif res.kind in "iu" and res != dt:  # a wider integer (uint8 clipped to -1, 300): exact through float64
            dt, cast = np.dtype(np.float64), res
        elif res in _TAKES:
            dt = res
    out = _out(where, tuple(x.shape), output, dt if dt in _TAKES else _core.dtype_of(x))
    if identity and output is None:  # both bounds dropped: the input as it is
        _core.copy_into(out, x)
        return out if cast is None else out.astype(cast)
    zero_d = x.ndim == 0  # NumPy's clip of a 0-d array: through a 1-element view (the library has no rank 0)
    dx, k1 = _core.describe(x.reshape(1) if zero_d else x, where)
    do, k2 = _core.describe(out.reshape(1) if zero_d else out, where)
    _call(C["ndf_clip"](where.ctx, ctypes.byref(dx), ctypes.byref(do), float(lo), float(hi)), where.ctx)
    return out if cast is None else out.astype(cast)


def _float_default(x):
    return np.float64 if _core.dtype_of(x) == np.float64 else np.float32


def _window_options(out_min, out_max, nb):
    opt = S["ndf_window_options"]()
    C["ndf_window_options_init"](ctypes.byref(opt))
    opt.out_min, opt.out_max, opt.batch_dims = float(out_min), float(out_max), nb
    return opt


def _windowed(fn, image, args, out_min, out_max, batch_dims, output):
    _has(fn)
    x, nb = _input(image, batch_dims)
    where = _core.placement(x)
    out = _out(where, tuple(x.shape), output, _float_default(x))
    opt = _window_options(out_min, out_max, nb)
    dx, k1 = _core.describe(x, where)
    do, k2 = _core.describe(out, where)
    _call(C[fn](where.ctx, ctypes.byref(dx), ctypes.byref(do), *args, ctypes.byref(opt)), where.ctx)
    return out


def window(image, lo, hi, out_min=0.0, out_max=1.0, *, batch_dims=0, output=None):
    """(clip(x, lo, hi) - lo) / (hi - lo) * (out_max - out_min) + out_min; lo == hi maps to out_min."""
    return _windowed("ndf_window", image, (float(lo), float(hi)), out_min, out_max, batch_dims, output)


def window_ct(image, preset=None, *, centre=None, width=None, out_min=0.0, out_max=1.0, batch_dims=0,
              output=None):
    """A CT window in Hounsfield units: a preset by name (CT_PRESETS) or centre and width, then window()."""
    if preset is not None:
        c, w = ctypes.c_double(), ctypes.c_double()
        if not isinstance(preset, str) or C["ndf_ct_window_preset"](preset.encode(), ctypes.byref(c),
                                                                    ctypes.byref(w)):
            raise ValueError("unknown CT window preset %r (one of %s)" % (preset, ", ".join(CT_PRESETS)))
        centre = c.value if centre is None else centre
        width = w.value if width is None else width
    if centre is None or width is None:
        raise ValueError("window_ct needs a preset or centre and width")
    return _windowed("ndf_window_ct", image, (float(centre), float(width)), out_min, out_max, batch_dims, output)


def normalize_minmax(image, out_min=0.0, out_max=1.0, *, batch_dims=0, output=None):
    """Each image's [min, max] mapped to [out_min, out_max] (a constant image to out_min)."""
    return _windowed("ndf_normalize_minmax", image, (), out_min, out_max, batch_dims, output)


def percentile_window(image, lo=0.5, hi=99.5, out_min=0.0, out_max=1.0, *, batch_dims=0, output=None):
    """window() between each image's percentiles lo and hi (numpy.percentile, 0 <= lo <= hi <= 100)."""
    return _windowed("ndf_percentile_window", image, (float(lo), float(hi)), out_min, out_max, batch_dims, output)


def normalize_zscore(image, mask=None, *, batch_dims=0, output=None):
    """(x - mean) / std per image (population std; std 0 divides by 1), the statistics from the voxels where
    mask is non-zero (default all)."""
    _has("ndf_normalize_zscore")
    x, nb = _input(image, batch_dims)
    where = _core.placement(x)
    m = _aux(mask, x, "mask")
    out = _out(where, tuple(x.shape), output, _float_default(x))
    dx, k1 = _core.describe(x, where)
    do, k2 = _core.describe(out, where)
    pm = None
    if m is not None:
        dm, k3 = _core.describe(m, where)
        pm = ctypes.byref(dm)
    _call(C["ndf_normalize_zscore"](where.ctx, ctypes.byref(dx), pm, ctypes.byref(do), nb), where.ctx)
    return out


def equalize_hist(image, nbins=256, mask=None, *, batch_dims=0, output=None):
    """skimage.exposure.equalize_hist(image, nbins, mask) per image; float32 for float32 images, else float64
    (scikit-image's), unless output=."""
    _has("ndf_equalize_hist")
    x, nb = _input(image, batch_dims)
    where = _core.placement(x)
    m = _aux(mask, x, "mask")
    out = _out(where, tuple(x.shape), output, np.float32 if _core.dtype_of(x) == np.float32 else np.float64)
    dx, k1 = _core.describe(x, where)
    do, k2 = _core.describe(out, where)
    pm = None
    if m is not None:
        dm, k3 = _core.describe(m, where)
        pm = ctypes.byref(dm)
    _call(C["ndf_equalize_hist"](where.ctx, ctypes.byref(dx), pm, ctypes.byref(do), int(nbins), nb), where.ctx)
    return out
