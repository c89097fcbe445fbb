"""scipy.ndimage's spline filters and geometric transforms on ndforge (part of ``ndforge.ndimage``, where
the library has them).

spline_filter1d, spline_filter, map_coordinates, affine_transform, shift,
zoom and rotate with scipy's signatures; the library computes as scipy 1.10
does (float64, scipy's order of operations, its rounding and clamping to
integer outputs).  Extra keywords: ``batch_dims`` and ``device``.  Inputs the
library does not read (float16, bfloat16) go in as a float32 copy holding the
same values; an output dtype it does not write is written in float64 and
converted.  A bool output is the library's own, as scipy 1.10 stores it (C's
cast to unsigned char: 0.9 is False, bytes other than 0 and 1 as scipy writes
them; spline_filter's passes stored as bool in between, as scipy's).
``coordinates`` of map_coordinates that are not on the input's device are
copied there.  Complex inputs are scipy's: the real and imaginary parts
interpolated as real arrays (with cval's parts) into the views of a complex
output.
"""

import ctypes
import inspect
import operator

import numpy as np

from . import _core
from ._core import C
from . import ndimage as _nd

__all__ = ["spline_filter1d", "spline_filter", "map_coordinates", "affine_transform", "shift", "zoom", "rotate"]

_WRITES = tuple(np.dtype(d) for d in ("bool", "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
                                      "float64", "int64", "uint64"))
_READS = _WRITES


def _writes(dt):
    return not isinstance(dt, str) and np.dtype(dt) in _WRITES


def _interp_mode(mode):
    m = ctypes.c_int()
    if not isinstance(mode, str) or C["ndf_interp_mode_from_name"](mode.encode(), ctypes.byref(m)):
        raise RuntimeError("boundary mode not supported")
    return m.value


def _order(order):
    order = operator.index(order)
    if order < 0 or order > 5:
        raise RuntimeError("spline order not supported")
    return order


class _Interp:
    """One call: the input as the library reads it, an output of a given shape as scipy makes it."""

    def __init__(self, input, batch_dims, device):
        self.call = call = _nd._Call(input, batch_dims, None, device)
        if _nd._is_complex(call.x0):
            raise TypeError("Complex type not supported")
        call.ctx = call.run_ctx()
        dt = _core.dtype_of(call.x0)
        self.in_dtype = dt
        if isinstance(dt, str) or dt == np.float16:
            call.x0 = call.x0.float() if _core.kind_of(call.x0) == "torch" else call.x0.astype(np.float32)
        elif dt not in _READS:
            call.x0 = _nd._astype(call.x0, np.float64)
        self.nsp = len(call.shape0) - call.batch_dims
        if self.nsp < 1:
            raise RuntimeError("input and output rank must be > 0")

    def output(self, output, shape, default=None):
        """(array the library writes, value returned, post step) for an output of `shape`."""
        call = self.call
        dt = self.in_dtype if default is None else np.dtype(default)
        if output is None or _nd._is_dtype_like(output):
            want = dt if output is None else _nd._np_dtype(output)
            if _writes(want):
                out = call.new_output(want, shape)
                return out, out, None
            if _writes(_nd._native(want)):  # byte-swapped: the native values, swapped
                tmp = call.new_output(_nd._native(want), shape)
                return tmp, None, lambda: _nd._astype(tmp, want)
            name = want if isinstance(want, str) else np.dtype(want).name
            tmp = call.new_output(np.float64, shape)
            return tmp, None, lambda: _nd._to_half(tmp, name) if name in ("float16", "bfloat16") else \
                _nd._astype(tmp, name)
        if tuple(output.shape) != tuple(shape):
            raise RuntimeError("output shape not correct")
        odt = _core.dtype_of(output)
        if _writes(odt) and not _nd._same_memory(output, call.x0) and _nd._describable(output, call.x0):
            return output, output, None
        # a temporary of the output's dtype where the library writes it (an output overlapping the input,
        # byte-swapped), else float64, converted as scipy converts
        tmp = call.new_output(_nd._native(odt) if _writes(_nd._native(odt)) else np.float64, shape)

        def post():
            _core.copy_into(output, tmp)
            return output
        return tmp, output, post

    def options(self, order, mode, cval, prefilter):
        opt = _core.S["ndf_interp_options"]()
        C["ndf_interp_options_init"](ctypes.byref(opt))
        opt.order = _order(order)
        opt.mode = _interp_mode(mode)
        opt.cval = float(cval)
        opt.prefilter = 1 if prefilter else 0
        opt.batch_dims = self.call.batch_dims
        return opt

    def run(self, fn, out_spec, *args):
        """fn(ctx, input, <args with OUT where the output goes>); out_spec from output()."""
        call = self.call
        out, ret, post = out_spec
        din = call.desc_in(call.x0)
        dout, done = call.desc_out(out, permuted=False)
        full = [ctypes.byref(dout) if a is _OUT else a for a in args]
        _nd._call(fn, call.ctx, ctypes.byref(din), *full)
        if done:
            done()
        if post is not None:
            r = post()
            return r if r is not None else ret
        return ret


_OUT = object()


def _shape_from(fn, x_shape, *args):
    n = len(x_shape)
    shape = (ctypes.c_int64 * max(n, 1))(*x_shape)
    out = (ctypes.c_int64 * max(n, 1))()
    _core.check(fn(n, shape, *args, out))
    return tuple(out[:n])


def _spline_copy(input, order, output, device):
    """spline_filter1d of order 0 or 1: scipy's output[...] = numpy.array(input)."""
    op = _Interp(input, 0, device)
    spec = op.output(output, op.call.shape0)
    return op.run(C["ndf_spline_filter1d"], spec, _OUT, int(order), 0, _interp_mode("mirror"))


@_nd._complex_parts()
def spline_filter1d(input, order=3, axis=-1, output=np.float64, mode="mirror", *, device=None):
    """scipy.ndimage.spline_filter1d on ndforge (extra keyword: device).  Orders 0 and 1 copy the input
    (scipy: output[...] = numpy.array(input)) without reading axis or mode, a 0-d input too."""
    if order < 0 or order > 5:
        raise RuntimeError("spline order not supported")
    if order in (0, 1):
        if _nd._ndim(input) == 0:
            return _nd._on_one_element(_spline_copy, inspect.signature(_spline_copy), input,
                                       (order, output, device), {})
        return _spline_copy(input, order, output, device)
    _nd._axis(axis, _nd._ndim(input))
    op = _Interp(input, 0, device)
    order = _order(order)
    spec = op.output(output, op.call.shape0)
    return op.run(C["ndf_spline_filter1d"], spec, _OUT, order, int(axis), _interp_mode(mode))


@_nd._complex_parts()
@_nd._zero_d
def spline_filter(input, order=3, output=np.float64, mode="mirror", *, batch_dims=0, device=None):
    """scipy.ndimage.spline_filter on ndforge (extra keywords: batch_dims, device)."""
    if operator.index(order) < 2 or order > 5:
        raise RuntimeError("spline order not supported")
    op = _Interp(input, batch_dims, device)
    spec = op.output(output, op.call.shape0)
    return op.run(C["ndf_spline_filter"], spec, _OUT, int(order), _interp_mode(mode), op.call.batch_dims)


@_nd._complex_parts()
def map_coordinates(input, coordinates, output=None, order=3, mode="constant", cval=0.0, prefilter=True, *,
                    batch_dims=0, device=None):
    """scipy.ndimage.map_coordinates on ndforge (extra keywords: batch_dims, device)."""
    op = _Interp(input, batch_dims, device)
    opt = op.options(order, mode, cval, prefilter)
    call = op.call
    c = _core.as_array(coordinates)
    if _nd._is_complex(c):
        raise TypeError("Complex type not supported")
    if c.ndim < 1 or c.shape[0] != op.nsp:
        raise RuntimeError("invalid shape for coordinate array")
    if _core.kind_of(c) != _core.kind_of(call.x0) or \
            (_core.placement(c).device, _core.placement(c).device_id) != (call.where.device, call.where.device_id):
        c = _nd._from_numpy_like(call.x0, np.ascontiguousarray(_core.to_host_numpy(c)))
    cdt = _core.dtype_of(c)
    if isinstance(cdt, str) or cdt not in _READS or cdt == np.bool_:
        c = _nd._astype(c, np.float64)
    dc = call.desc_in(c)
    spec = op.output(output, call.shape0[:call.batch_dims] + tuple(c.shape[1:]))
    return op.run(C["ndf_map_coordinates"], spec, ctypes.byref(dc), _OUT, ctypes.byref(opt))


def _offsets(v, n, err="sequence argument must have length equal to input rank"):
    """(count, double[count]) of a scalar or one value per spatial axis."""
    vals = [float(t) for t in np.atleast_1d(np.asarray(_core.to_host_numpy(v), dtype=np.float64))]
    if len(vals) not in (1, n):
        raise RuntimeError(err)
    return len(vals), (ctypes.c_double * len(vals))(*vals)


@_nd._complex_parts()
def affine_transform(input, matrix, offset=0.0, output_shape=None, output=None, order=3, mode="constant",
                     cval=0.0, prefilter=True, *, batch_dims=0, device=None):
    """scipy.ndimage.affine_transform on ndforge (extra keywords: batch_dims, device)."""
    op = _Interp(input, batch_dims, device)
    opt = op.options(order, mode, cval, prefilter)
    call = op.call
    m = np.asarray(_core.to_host_numpy(matrix), dtype=np.float64)
    if m.ndim not in (1, 2) or m.shape[0] < 1:
        raise RuntimeError("no proper affine matrix provided")
    if m.ndim == 2 and m.shape[0] == op.nsp + 1 and not np.all(m[op.nsp] == [0] * op.nsp + [1]):
        raise ValueError("Expected homogeneous transformation matrix with shape %s for image shape %s, but "
                         "bottom row was not equal to %s" % (m.shape, call.shape0[call.batch_dims:],
                                                             [0] * op.nsp + [1]))
    if output_shape is None:
        output_shape = output.shape[call.batch_dims:] if output is not None and not _nd._is_dtype_like(output) \
            else call.shape0[call.batch_dims:]
    output_shape = tuple(int(s) for s in output_shape)
    noff, off = _offsets(offset, op.nsp, "no proper offset provided")
    dm, keep = _core.describe(np.ascontiguousarray(m), _core.HOST)
    call.keep.append((m, keep))
    spec = op.output(output, call.shape0[:call.batch_dims] + output_shape)
    return op.run(C["ndf_affine_transform"], spec, ctypes.byref(dm), noff, off, _OUT, ctypes.byref(opt))


@_nd._complex_parts()
def shift(input, shift, output=None, order=3, mode="constant", cval=0.0, prefilter=True, *, batch_dims=0,
          device=None):
    """scipy.ndimage.shift on ndforge (extra keywords: batch_dims, device)."""
    op = _Interp(input, batch_dims, device)
    opt = op.options(order, mode, cval, prefilter)
    n, vals = _offsets(shift, op.nsp)
    spec = op.output(output, op.call.shape0)
    return op.run(C["ndf_shift"], spec, _OUT, n, vals, ctypes.byref(opt))


@_nd._complex_parts()
def zoom(input, zoom, output=None, order=3, mode="constant", cval=0.0, prefilter=True, *, grid_mode=False,
         batch_dims=0, device=None):
    """scipy.ndimage.zoom on ndforge (extra keywords: batch_dims, device)."""
    op = _Interp(input, batch_dims, device)
    opt = op.options(order, mode, cval, prefilter)
    call = op.call
    n, vals = _offsets(zoom, op.nsp)
    shape = _shape_from(C["ndf_zoom_shape"], call.shape0, call.batch_dims, n, vals)
    spec = op.output(output, shape)
    return op.run(C["ndf_zoom"], spec, _OUT, n, vals, 1 if grid_mode else 0, ctypes.byref(opt))


@_nd._complex_parts()
def rotate(input, angle, axes=(1, 0), reshape=True, output=None, order=3, mode="constant", cval=0.0,
           prefilter=True, *, batch_dims=0, device=None):
    """scipy.ndimage.rotate on ndforge (extra keywords: batch_dims, device; axes count among the axes after
    the batch axes)."""
    if _nd._ndim(input) - (batch_dims or 0) < 2:
        raise ValueError("input array should be at least 2D")
    op = _Interp(input, batch_dims, device)
    if op.nsp < 2:
        raise ValueError("input array should be at least 2D")
    axes = list(axes)
    if len(axes) != 2:
        raise ValueError("axes should contain exactly two values")
    if not all(float(a).is_integer() for a in axes):
        raise ValueError("axes should contain only integer values")
    a0, a1 = (int(a) for a in axes)
    if not (-op.nsp <= a0 < op.nsp and -op.nsp <= a1 < op.nsp) or a0 % op.nsp == a1 % op.nsp:
        raise ValueError("invalid rotation plane specified")
    opt = op.options(order, mode, cval, prefilter)
    call = op.call
    shape = _shape_from(C["ndf_rotate_shape"], call.shape0, call.batch_dims, float(angle), a0, a1,
                        1 if reshape else 0)
    spec = op.output(output, shape)
    return op.run(C["ndf_rotate"], spec, _OUT, float(angle), a0, a1, 1 if reshape else 0, ctypes.byref(opt))
