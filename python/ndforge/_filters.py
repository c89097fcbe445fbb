"""scipy.ndimage's linear filters on ndforge (part of ``ndforge.ndimage``, where the library has them).

correlate1d, convolve1d, correlate, convolve, uniform_filter1d,
uniform_filter, gaussian_filter1d, gaussian_filter, sobel, prewitt, laplace,
gaussian_laplace and gaussian_gradient_magnitude, with scipy's signatures;
generic_laplace and generic_gradient_magnitude in Python around the caller's
derivative.  The library computes as scipy does (in double, scipy's summation
order and conversion to the output dtype), so results are scipy's.  Extra
keywords: ``batch_dims``, ``device`` and ``axes`` (where scipy has no ``axes``,
the multi-axis filters take it as scipy's newer versions do).

``axes`` is scipy's (1.15 and later for the Laplace and gradient-magnitude
filters): the listed axes, in their order, are filtered, with one sigma,
mode, radius (and size or origin) per listed axis or one for all; the other
axes are untouched, and an empty ``axes`` copies the input (converted) to the
output.  gaussian_laplace and gaussian_gradient_magnitude sum one term per
listed axis, in the order of ``axes``: gaussian_filter with order 2 (1,
squared) on that axis, order 0 on the other listed axes, that axis's mode on
all of them, the passes of each term in increasing axis order (scipy's term
is one gaussian_filter call).  That is what scipy documents; its code (1.15
to 1.17) departs from it in two places that ndforge does not copy:
gaussian_gradient_magnitude hands its sigma to the unlisted axes as well
(smoothing along them, and taking a sigma sequence per input axis), and
gaussian_laplace with ``axes`` listing every axis in another order reads a
sigma sequence per input axis.  Elsewhere the results are scipy's
(docs/adr/0030).

bool is scipy 1.10's: an input is read as its bytes, and a bool output
(the default for a bool input) holds C's cast of each value to unsigned char,
intermediate passes included (gaussian_filter of a 0/1 image is mostly
False; a correlate sum of 2 is stored as the byte 2).  laplace,
gaussian_laplace and gaussian_gradient_magnitude, whose terms scipy adds with
NumPy's bool arithmetic, compute a bool output in float64 and convert it
(not scipy's result).  Inputs the library does not read (float16, bfloat16)
go in as a float32 copy holding the same values; an output dtype the library
does not write (float16, bfloat16) is written in float64 and converted.

Complex inputs and weights are scipy's: the real and imaginary parts are
filtered as real arrays into the views of a complex output (complex64 for
complex64 and float32 inputs, else complex128; a real output dtype is
promoted with scipy's warning, a real output array refused), correlation
with the weights conjugated; gaussian_gradient_magnitude of a complex input
squares in complex arithmetic, as scipy's.
"""

import ctypes
import operator

import numpy as np

from . import _core
from ._core import C, S, K
from . import ndimage as _nd

__all__ = ["correlate1d", "convolve1d", "correlate", "convolve", "uniform_filter1d", "uniform_filter",
           "gaussian_filter1d", "gaussian_filter", "sobel", "prewitt", "laplace", "gaussian_laplace",
           "gaussian_gradient_magnitude", "generic_laplace", "generic_gradient_magnitude"]

_WRITES = tuple(np.dtype(d) for d in ("uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
                                      "float64", "int64", "uint64"))
_READS = _WRITES + (np.dtype(np.bool_),)


def _writes(dt):
    return not isinstance(dt, str) and np.dtype(dt) in _READS


def _writes_numeric(dt):
    return not isinstance(dt, str) and np.dtype(dt) in _WRITES


_RANK_ERR = "sequence argument must have length equal to input rank"
_SCALARS = (int, float, str, np.integer, np.floating)


def _check_len(v, n):
    """scipy's _normalize_sequence: a sequence argument has one value per filtered axis."""
    if v is not None and not isinstance(v, _SCALARS) and np.ndim(v) > 0 and len(v) != n:
        raise RuntimeError(_RANK_ERR)


class _Linear:
    """One linear-filter call: the input as the library reads it, the output as scipy makes it."""

    def __init__(self, input, output, axes, batch_dims, device, bool_output=True):
        self.writes = _writes if bool_output else _writes_numeric
        self.call = call = _nd._Call(input, batch_dims, None, device)
        call.ctx = call.run_ctx()
        dt = _core.dtype_of(call.x0)
        self.in_dtype = dt
        if isinstance(dt, str) or dt == np.float16:  # float16 / bfloat16: exact in float32
            call.x0 = call.x0.float() if _core.kind_of(call.x0) == "torch" else call.x0.astype(np.float32)
        elif dt not in _READS:
            call.x0 = _nd._astype(call.x0, np.float64)
        self.out, self.ret, self.post = self._output(output)
        self.opt = S["ndf_filter_options"]()
        C["ndf_filter_options_init"](ctypes.byref(self.opt))
        self.opt.batch_dims = call.batch_dims
        self.nfilt = len(call.shape0) - call.batch_dims
        self.noaxes = False  # axes=(): nothing is filtered, the input is copied (scipy)
        if axes is not None:
            ax = (axes,) if np.ndim(axes) == 0 else tuple(axes)
            if len(ax) > K["NDF_MAX_SPATIAL"]:
                raise ValueError("axes: at most %d" % K["NDF_MAX_SPATIAL"])
            self.opt.naxes = len(ax)  # 0 is the C API's "every spatial axis": see copy()
            self.opt.axes[:len(ax)] = [operator.index(a) for a in ax]
            self.nfilt = len(ax)
            self.noaxes = not ax

    def _output(self, output):
        call = self.call
        dt = self.in_dtype
        if output is None:
            if self.writes(dt):
                out = call.new_output(dt)
                return out, out, None
            name = dt if isinstance(dt, str) else np.dtype(dt).name
            tmp = call.new_output(np.float64)
            return tmp, None, lambda: _nd._to_half(tmp, name) if name in ("float16", "bfloat16") else \
                _nd._astype(tmp, name)
        return _nd._resolve_output(call, output, np.dtype(np.float64), self.writes)

    def modes(self, mode, cval, origin=None, one=False):
        """one: a 1-D filter, whose mode is one name (scipy: RuntimeError for a sequence)."""
        opt = self.opt
        if isinstance(mode, str):
            opt.mode = _nd._mode(mode)
        elif one:
            raise RuntimeError("boundary mode not supported")
        else:
            ms = [_nd._mode(m) for m in mode]
            if len(ms) > K["NDF_MAX_SPATIAL"] or len(ms) != self.nfilt:
                raise RuntimeError(_RANK_ERR)
            opt.nmodes = len(ms)
            opt.modes[:len(ms)] = ms
        opt.cval = float(cval)
        if origin is not None:
            if not one:
                _check_len(origin, self.nfilt)
            opt.norigin, vals = _nd._seq(origin, "origin")
            opt.origin[:len(vals)] = vals

    def copy(self):
        """scipy's output[...] = input, the result when axes=() filters nothing: the library's
        uniform_filter of size 1 on every axis, which copies (converts) the input to the output."""
        odt = _core.dtype_of(self.out)
        if not isinstance(odt, str) and np.dtype(odt) == np.bool_ and self.in_dtype != np.bool_:
            _core.copy_into(self.out, self.call.x0)  # NumPy's cast to bool (not 0), not the filters' C cast
            return self.ret
        opt = self.opt
        opt.naxes, opt.nmodes, opt.norigin, opt.mode = 0, 0, 0, _nd._mode("reflect")
        return self.run(C["ndf_uniform_filter"], 1, (ctypes.c_int64 * 1)(1), ctypes.byref(opt))

    def run(self, fn, *extra):
        call = self.call
        din = call.desc_in(call.x0)
        dout, done = call.desc_out(self.out)
        _nd._call(fn, call.ctx, ctypes.byref(din), ctypes.byref(dout), *extra)
        if done:
            done()
        if self.post is not None:
            r = self.post()
            return r if r is not None else self.ret
        return self.ret


def _weights1d(weights):
    w = np.asarray(_core.to_host_numpy(weights))
    if w.dtype.kind == "c":
        raise TypeError("Complex type not supported")
    w = np.ascontiguousarray(w, dtype=np.float64)
    if w.ndim != 1 or w.shape[0] < 1:
        raise RuntimeError("no filter weights given")
    return w


def _dptr(a):
    return a.ctypes.data_as(ctypes.POINTER(ctypes.c_double))


def _corr1d(fn, input, weights, axis, output, mode, cval, origin, batch_dims, device):
    w = _weights1d(weights)
    op = _Linear(input, output, None, batch_dims, device)
    axis = _nd._axis(axis, len(op.call.shape0))
    op.modes(mode, cval, origin, one=True)
    return op.run(C[fn], _dptr(w), ctypes.c_int64(w.shape[0]), axis, ctypes.byref(op.opt))


@_nd._complex_parts('correlate')
def correlate1d(input, weights, axis=-1, output=None, mode="reflect", cval=0.0, origin=0, *, batch_dims=0,
                device=None):
    """scipy.ndimage.correlate1d on ndforge (extra keywords: batch_dims, device)."""
    return _corr1d("ndf_correlate1d", input, weights, axis, output, mode, cval, origin, batch_dims, device)


@_nd._complex_parts('convolve')
def convolve1d(input, weights, axis=-1, output=None, mode="reflect", cval=0.0, origin=0, *, batch_dims=0,
               device=None):
    """scipy.ndimage.convolve1d on ndforge (extra keywords: batch_dims, device)."""
    return _corr1d("ndf_convolve1d", input, weights, axis, output, mode, cval, origin, batch_dims, device)


def _corr(fn, input, weights, output, mode, cval, origin, axes, batch_dims, device):
    w = np.asarray(_core.to_host_numpy(weights))
    if w.dtype.kind == "c":
        raise TypeError("Complex type not supported")
    op = _Linear(input, output, axes, batch_dims, device)
    if w.ndim != op.nfilt or 0 in w.shape:
        raise RuntimeError("filter weights array has incorrect shape.")
    if not isinstance(mode, str):
        raise RuntimeError("A sequence of modes is not supported")
    if op.noaxes:  # a 0-d weight: scipy expands it to extent 1 on every axis
        w = w.reshape((1,) * (len(op.call.shape0) - op.call.batch_dims))
        op.opt.naxes = 0
    op.modes(mode, cval, origin)
    d, keep = _nd._host_desc(w, np.float64)
    op.call.keep.append(keep)
    return op.run(C[fn], ctypes.byref(d), ctypes.byref(op.opt))


@_nd._complex_parts('correlate')
@_nd._zero_d
def correlate(input, weights, output=None, mode="reflect", cval=0.0, origin=0, *, axes=None, batch_dims=0,
              device=None):
    """scipy.ndimage.correlate on ndforge (extra keywords: batch_dims, device)."""
    return _corr("ndf_correlate", input, weights, output, mode, cval, origin, axes, batch_dims, device)


@_nd._complex_parts('convolve')
@_nd._zero_d
def convolve(input, weights, output=None, mode="reflect", cval=0.0, origin=0, *, axes=None, batch_dims=0,
             device=None):
    """scipy.ndimage.convolve on ndforge (extra keywords: batch_dims, device)."""
    return _corr("ndf_convolve", input, weights, output, mode, cval, origin, axes, batch_dims, device)


@_nd._complex_parts()
def uniform_filter1d(input, size, axis=-1, output=None, mode="reflect", cval=0.0, origin=0, *, batch_dims=0,
                     device=None):
    """scipy.ndimage.uniform_filter1d on ndforge (extra keywords: batch_dims, device)."""
    size = operator.index(size)
    if size < 1:
        raise RuntimeError("incorrect filter size")
    op = _Linear(input, output, None, batch_dims, device)
    axis = _nd._axis(axis, len(op.call.shape0))
    op.modes(mode, cval, origin, one=True)
    return op.run(C["ndf_uniform_filter1d"], ctypes.c_int64(size), axis, ctypes.byref(op.opt))


@_nd._complex_parts()
@_nd._zero_d
def uniform_filter(input, size=3, output=None, mode="reflect", cval=0.0, origin=0, *, axes=None, batch_dims=0,
                   device=None):
    """scipy.ndimage.uniform_filter on ndforge (extra keywords: batch_dims, device)."""
    op = _Linear(input, output, axes, batch_dims, device)
    _check_len(size, op.nfilt)
    n, vals = _nd._seq(int(size) if isinstance(size, _SCALARS) or np.ndim(size) == 0 else [int(s) for s in size],
                       "size")  # scipy's int(size)
    if op.noaxes:
        return op.copy()
    op.modes(mode, cval, origin)
    sizes = (ctypes.c_int64 * max(n, 1))(*vals)
    return op.run(C["ndf_uniform_filter"], n, sizes, ctypes.byref(op.opt))


def _gauss(sigma, order, truncate, radius):
    g = S["ndf_gaussian_params"]()
    C["ndf_gaussian_params_init"](ctypes.byref(g))
    # scipy filters an axis only where sigma > 1e-15: a negative sigma leaves its axis as sigma 0 does
    sig = [0.0 if s < 0 else float(s) for s in np.atleast_1d(np.asarray(sigma, dtype=np.float64))]
    if len(sig) > K["NDF_MAX_SPATIAL"]:
        raise RuntimeError("sequence argument must have length equal to input rank")
    g.nsigma = len(sig)
    g.sigma[:len(sig)] = sig
    orders = [operator.index(o) for o in np.atleast_1d(order)]
    if any(o < 0 for o in orders):
        raise ValueError("order must be non-negative")
    g.norder = len(orders)
    g.order[:len(orders)] = orders
    g.truncate = float(truncate)
    if radius is not None:
        rad = list(np.atleast_1d(radius))
        if any(not isinstance(r, (int, np.integer)) or r < 0 for r in rad):
            raise ValueError("Radius must be a nonnegative integer.")
        g.nradius = len(rad)
        g.radius[:len(rad)] = [int(r) for r in rad]
    return g


@_nd._complex_parts()
def gaussian_filter1d(input, sigma, axis=-1, order=0, output=None, mode="reflect", cval=0.0, truncate=4.0, *,
                      radius=None, batch_dims=0, device=None):
    """scipy.ndimage.gaussian_filter1d on ndforge (extra keywords: batch_dims, device)."""
    order = operator.index(order)
    if order < 0:
        raise ValueError("order must be non-negative")
    if radius is not None and (not isinstance(radius, (int, np.integer)) or radius < 0):
        raise ValueError("Radius must be a nonnegative integer.")
    op = _Linear(input, output, None, batch_dims, device)
    axis = _nd._axis(axis, len(op.call.shape0))
    op.modes(mode, cval, one=True)
    return op.run(C["ndf_gaussian_filter1d"], float(sigma), axis, order, float(truncate),
                  ctypes.c_int64(-1 if radius is None else int(radius)), ctypes.byref(op.opt))


@_nd._complex_parts()
@_nd._zero_d
def gaussian_filter(input, sigma, order=0, output=None, mode="reflect", cval=0.0, truncate=4.0, *, radius=None,
                    axes=None, batch_dims=0, device=None):
    """scipy.ndimage.gaussian_filter on ndforge (extra keywords: batch_dims, device)."""
    g = _gauss(sigma, order, truncate, radius)
    op = _Linear(input, output, axes, batch_dims, device)
    for v in (sigma, order, radius):
        _check_len(v, op.nfilt)
    if op.noaxes:
        return op.copy()
    op.modes(mode, cval)
    return op.run(C["ndf_gaussian_filter"], ctypes.byref(g), ctypes.byref(op.opt))


def _derivative(fn, input, axis, output, mode, cval, batch_dims, device):
    op = _Linear(input, output, None, batch_dims, device)
    axis = _nd._axis(axis, len(op.call.shape0))
    op.modes(mode, cval)
    return op.run(C[fn], axis, ctypes.byref(op.opt))


@_nd._complex_parts()
def sobel(input, axis=-1, output=None, mode="reflect", cval=0.0, *, batch_dims=0, device=None):
    """scipy.ndimage.sobel on ndforge (extra keywords: batch_dims, device)."""
    return _derivative("ndf_sobel", input, axis, output, mode, cval, batch_dims, device)


@_nd._complex_parts()
def prewitt(input, axis=-1, output=None, mode="reflect", cval=0.0, *, batch_dims=0, device=None):
    """scipy.ndimage.prewitt on ndforge (extra keywords: batch_dims, device)."""
    return _derivative("ndf_prewitt", input, axis, output, mode, cval, batch_dims, device)


@_nd._complex_parts()
@_nd._zero_d
def laplace(input, output=None, mode="reflect", cval=0.0, *, axes=None, batch_dims=0, device=None):
    """scipy.ndimage.laplace on ndforge (extra keywords: batch_dims, device)."""
    op = _Linear(input, output, axes, batch_dims, device, bool_output=False)
    if op.noaxes:
        return op.copy()
    op.modes(mode, cval)
    return op.run(C["ndf_laplace"], ctypes.byref(op.opt))


def _gaussian_composite(fn, input, sigma, output, mode, cval, axes, truncate, radius, batch_dims, device, kwargs):
    for k in kwargs:  # scipy hands the rest to gaussian_filter, whose other keywords these filters set
        raise TypeError("%s() got an unexpected keyword argument '%s'" % (fn[4:], k))
    g = _gauss(sigma, 0, truncate, radius)
    op = _Linear(input, output, axes, batch_dims, device, bool_output=False)
    for v in (sigma, radius):
        _check_len(v, op.nfilt)
    if op.noaxes:
        return op.copy()
    op.modes(mode, cval)
    return op.run(C[fn], ctypes.byref(g), ctypes.byref(op.opt))


@_nd._complex_parts()
@_nd._zero_d
def gaussian_laplace(input, sigma, output=None, mode="reflect", cval=0.0, *, axes=None, truncate=4.0, radius=None,
                     batch_dims=0, device=None, **kwargs):
    """scipy.ndimage.gaussian_laplace on ndforge: the sum over the filtered axes (all, or axes in their
    order) of gaussian_filter with order 2 on that axis; sigma, mode and radius one value or one per
    filtered axis; truncate and radius are gaussian_filter's (scipy's **kwargs).  Extra keywords:
    batch_dims, device."""
    return _gaussian_composite("ndf_gaussian_laplace", input, sigma, output, mode, cval, axes, truncate, radius,
                               batch_dims, device, kwargs)


@_nd._zero_d
def gaussian_gradient_magnitude(input, sigma, output=None, mode="reflect", cval=0.0, *, axes=None, truncate=4.0,
                                radius=None, batch_dims=0, device=None, **kwargs):
    """scipy.ndimage.gaussian_gradient_magnitude on ndforge: sqrt of the sum over the filtered axes (all,
    or axes in their order) of the squared gaussian_filter with order 1 on that axis; the axes not listed
    are not smoothed (scipy's documented meaning; see the module's notes).  truncate and radius are
    gaussian_filter's (scipy's **kwargs).  Extra keywords: batch_dims, device.  A complex input is scipy's
    generic_gradient_magnitude in complex arithmetic (the squares are complex), over gaussian_filter."""
    if _nd._complex_array(input) and axes is None and not batch_dims and device is None and not kwargs:
        def derivative(x, axis, out, m, cv):
            order = [0] * len(x.shape)
            order[axis] = 1
            return gaussian_filter(x, sigma, order, out, m, cv, truncate=truncate, radius=radius)
        return generic_gradient_magnitude(input, derivative, output, mode, cval)
    return _gaussian_composite("ndf_gaussian_gradient_magnitude", input, sigma, output, mode, cval, axes, truncate,
                               radius, batch_dims, device, kwargs)


# --- generic_laplace / generic_gradient_magnitude: scipy's loops around the caller's derivative ---------

def _check_axes(axes, ndim):
    """scipy's _check_axes: the axes normalized (negative from the end), each once."""
    if axes is None:
        return tuple(range(ndim))
    ax = (operator.index(axes),) if np.ndim(axes) == 0 else tuple(operator.index(a) for a in axes)
    for a in ax:
        if not -ndim <= a < ndim:
            raise ValueError("specified axis: %d is out of range" % a)
    ax = tuple(a % ndim for a in ax)
    if len(set(ax)) != len(ax):
        raise ValueError("axes must be unique")
    return ax


def _generic_output(x, output):
    """scipy's _get_output for an array of any kind: a new zeroed array (None, a dtype) or output."""
    where = _core.placement(x)
    if output is None or _nd._is_dtype_like(output):
        dt = _core.dtype_of(x) if output is None else _nd._np_dtype(output)
        if isinstance(dt, str):  # torch's float16 / bfloat16
            import torch
            return torch.zeros(tuple(x.shape), dtype=getattr(torch, dt), device=x.device)
        out = _core.empty(where, tuple(x.shape), dt)
        out[...] = 0
        return out
    if tuple(output.shape) != tuple(x.shape):
        raise RuntimeError("output shape not correct")
    if _core.kind_of(output) != _core.kind_of(x):
        raise TypeError("ndforge: output must be an array of the input's kind (%s)" % _core.kind_of(x))
    return output


def _sqrt_unsafe(out):
    """np.sqrt(out, out, casting='unsafe'): in place for floats; integers get the double root converted."""
    k = _core.kind_of(out)
    if k == "numpy":
        np.sqrt(out, out, casting="unsafe")
    elif k == "torch":
        if out.is_floating_point() or out.is_complex():
            out.sqrt_()
        else:
            out.copy_(out.double().sqrt())
    else:
        import cupy
        if out.dtype.kind in "fc":
            cupy.sqrt(out, out=out)
        else:
            out[...] = cupy.sqrt(out.astype(np.float64))


def _generic(input, derivative, output, mode, cval, extra_arguments, extra_keywords, axes, magnitude):
    x = _core.as_array(input) if _nd._complex_array(input) else _nd._input(input)  # complex: the caller's
    out = _generic_output(x, output)
    kw = {} if extra_keywords is None else extra_keywords
    axes = _check_axes(axes, len(x.shape))
    if not axes:
        _core.copy_into(out, x)
        return out
    modes = [mode] * len(axes) if isinstance(mode, str) else list(mode)
    if len(modes) != len(axes):
        raise RuntimeError(_RANK_ERR)
    derivative(x, axes[0], out, modes[0], cval, *extra_arguments, **kw)
    if magnitude:
        out *= out
    for ax, m in zip(axes[1:], modes[1:]):
        tmp = derivative(x, ax, out.dtype, m, cval, *extra_arguments, **kw)
        if magnitude:
            tmp *= tmp
        out += tmp
    if magnitude:
        _sqrt_unsafe(out)
    return out


def generic_laplace(input, derivative2, output=None, mode="reflect", cval=0.0, extra_arguments=(),
                    extra_keywords=None, *, axes=None):
    """scipy.ndimage.generic_laplace on any array kind: derivative2(input, axis, output, mode, cval,
    *extra_arguments, **extra_keywords) writes the first listed axis's term into output and returns the
    others (given output's dtype), which are added in the order of axes, in output's dtype.  The
    derivative gets the caller's array (NumPy, CuPy, torch) and may call ndforge.ndimage on it."""
    return _generic(input, derivative2, output, mode, cval, extra_arguments, extra_keywords, axes, False)


def generic_gradient_magnitude(input, derivative, output=None, mode="reflect", cval=0.0, extra_arguments=(),
                               extra_keywords=None, *, axes=None):
    """scipy.ndimage.generic_gradient_magnitude on any array kind: the derivative's terms (called as in
    generic_laplace) squared in place and added in output's dtype, then the square root as np.sqrt with
    casting='unsafe' (for torch and CuPy integer outputs: the double root converted)."""
    return _generic(input, derivative, output, mode, cval, extra_arguments, extra_keywords, axes, True)
