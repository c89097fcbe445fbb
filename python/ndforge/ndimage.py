"""scipy.ndimage's names, signatures, defaults and error types, on ndforge.

The grey and binary morphology, rank filters, label, distance transforms and
structure helpers; minimum/maximum filters (and their 1-D forms) over the
grey ops; the linear filters (_filters.py) and the spline filters and
geometric transforms (_interp.py) where the library has them.

Every function takes NumPy arrays (CPU backend), torch tensors (CPU or CUDA)
and CuPy arrays (CUDA, on the caller's current stream); the result has the
input's type and device.  Extra keyword-only arguments, beyond scipy's:

* ``batch_dims``: leading axes that are independent images (0 = scipy);
* ``axes``: scipy's ``axes`` (the other axes become batch axes, zero-copy);
* ``device``: ``'cpu'``, ``'cuda'`` or ``'cuda:N'`` to run a host array on a
  GPU (copied in and out by the library) or a GPU array on the CPU; default:
  where the input lives;
* ``algorithm``: grey ops ``'auto'|'direct'|'separable'|'vhgw'|'decomposed'``,
  rank filters ``'auto'|'network'|'select'|'histogram'|'tile'``;
* ``nan_policy``: rank filters ``'propagate'|'omit'``; grey ops ``'propagate'``;
* ``tune``: grey ops and rank filters, the call's tunables ``'name=value,...'``
  (kernel variants of the same result; docs/adr/0019, ``ndforge tunables``).

float16 and bfloat16 inputs of the grey ops and rank filters are computed in
float32 and returned in the input's dtype (an extension; one conversion copy
each way); int64 and uint64 inputs run in the library's 64-bit integer
kernels, exact for every value (scipy 1.10 computes min, max and ranks of
them in double).  Distance transforms that the CUDA backend does not do (cdt's
indices, cdt with a metric structure other than taxicab or chessboard) run
on the CPU backend for CUDA arrays, copied there and back.

Arrays as scipy takes them: a byte-swapped NumPy input is read as a native
copy; a 0-d input is an image of one element (its footprint, structure or
weights 0-d; the distance transforms and geometric transforms refuse it);
an output that overlaps the input, is byte-swapped, misaligned or on another
device is written through a temporary of its own dtype (so the values are a
direct write's; scipy's composites in place are not); a read-only output is
a ValueError.  Other dtypes than bool, integers, float16 to float64 (and
complex, for the linear filters and interpolation) are refused as scipy
refuses them.
The binary ops take scipy's output= forms: a dtype gives bool, and
binary_fill_holes and binary_hit_or_miss return None when given an array.
"""

import ctypes
import functools
import inspect
import operator
import re
import sys

import numpy as np

from . import _core
from ._core import C, S, K, check
from ._ops import OPS, ARG_ERRORS

__all__ = sorted(list(OPS) + ["generate_binary_structure", "iterate_structure", "minimum_filter", "maximum_filter",
                              "minimum_filter1d", "maximum_filter1d"])

_MODE_ERR = "boundary mode not supported"


def _raise(status, ctx):
    msg = (_core.C["ndf_errmsg"](ctx) if ctx else _core.C["ndf_last_error"]()) or b""
    msg = msg.decode(errors="replace")
    if status == K["NDF_EINVAL"]:
        m = re.search(r"bad argument '(\w+)'", msg)
        raise ARG_ERRORS.get(m.group(1) if m else "", ValueError)(msg)
    _core.raise_status(status, ctx)


def _call(fn, ctx, *args):
    s = fn(ctx, *args)
    if s:
        _raise(s, ctx)


# --- argument helpers --------------------------------------------------------------

def _is_complex(x):
    try:
        return np.dtype(_core.dtype_of(x)).kind == "c"
    except TypeError:
        return False


def _input(input):
    x = _core.as_array(input)
    dt = _core.dtype_of(x)
    if not isinstance(dt, str):  # torch's half types pass as names
        dt = np.dtype(dt)
        if dt.kind == "c":
            raise TypeError("Complex type not supported")
        if dt.kind in "SUV":  # strings and records: scipy's TypeError
            raise TypeError("array type %s not supported" % dt)
        if dt.kind not in "biuf" or dt.itemsize > 8:  # objects, dates, long double: scipy's refusal, not a
            raise RuntimeError("array type %s not supported" % dt)  # lossy conversion
    return x


def _permute(x, perm):
    if _core.kind_of(x) == "torch":
        return x.permute(*perm)
    return x.transpose(perm)


def _axes_perm(ndim, axes, batch_dims):
    """(perm, batch_dims): the axes not filtered first, then `axes` in their given order."""
    if axes is None:
        return None, batch_dims
    if batch_dims:
        raise ValueError("batch_dims and axes cannot be combined")
    if isinstance(axes, int):
        axes = (axes,)
    axes = [operator.index(a) for a in axes]
    norm = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise _AxisError(a, ndim)  # a ValueError, as scipy 1.11+ raises (normalize_axis_index)
        norm.append(a % ndim)
    if len(set(norm)) != len(norm):
        raise ValueError("axes must be unique")
    rest = [i for i in range(ndim) if i not in norm]
    return rest + norm, len(rest)


_AxisError = getattr(getattr(np, "exceptions", None), "AxisError", None) or np.AxisError


def _ndim(x):
    try:
        return x.ndim
    except AttributeError:
        return len(_core.as_array(x).shape)


def _axis(axis, ndim):
    """axis as an int, checked as NumPy does (AxisError, a ValueError and an IndexError, as scipy raises)."""
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise _AxisError(axis, ndim)
    return axis


def _size_int(v):
    """A size: an integer, or a float truncated (scipy's int(size) in its separable filters)."""
    return int(v) if isinstance(v, (float, np.floating)) else operator.index(v)


def _seq(v, name):
    """(n, values) of an int or a sequence of ints, for size/origin."""
    if v is None:
        return 0, ()
    conv = _size_int if name == "size" else operator.index  # an origin is an integer (TypeError), as in scipy
    if np.ndim(v) == 0:
        return 1, (conv(v),)
    vals = tuple(conv(t) for t in v)
    if len(vals) > K["NDF_MAX_SPATIAL"]:
        raise RuntimeError("sequence argument must have length equal to input rank")
    return len(vals), vals


def _per_axis(v, n):
    """scipy's _normalize_sequence: a sequence argument has one value per filtered axis."""
    if v is not None and not isinstance(v, (int, float, str, np.integer, np.floating)) and np.ndim(v) > 0 \
            and len(v) != n:
        raise RuntimeError("sequence argument must have length equal to input rank")


def _mode(mode):
    if isinstance(mode, (list, tuple)):
        if len(set(mode)) != 1:  # the separable grey ops take them (_grey_modes); scipy's error elsewhere
            raise RuntimeError("A sequence of modes is not supported for non-separable footprints")
        mode = mode[0]
    if not isinstance(mode, str):
        raise RuntimeError(_MODE_ERR)
    m = ctypes.c_int()
    if C["ndf_mode_from_name"](mode.encode(), ctypes.byref(m)):
        raise RuntimeError(_MODE_ERR)
    return m.value


def _host_desc(v, dtype=None):
    if v is None:
        return None, None
    a = _core.to_host_numpy(v)
    if _is_complex(a):
        raise TypeError("Complex type not supported")
    if dtype is not None:
        a = np.ascontiguousarray(a, dtype=dtype)
    elif a.dtype not in _core.DTYPE_CODE:
        a = np.ascontiguousarray(a != 0)
    d, keep = _core.describe(a, _core.HOST)
    return d, (d, keep)


def _parse_device(device):
    if device is None:
        return None
    if not isinstance(device, str):  # torch.device, cupy.cuda.Device
        device = "cuda:%d" % device.id if hasattr(device, "id") else str(device)
    d = device.lower()
    if d == "cpu":
        return (K["NDF_DEVICE_CPU"], 0)
    m = re.fullmatch(r"cuda(?::(\d+))?", d)
    if not m:
        raise ValueError("device must be 'cpu', 'cuda' or 'cuda:N' (got %r)" % (device,))
    return (K["NDF_DEVICE_CUDA"], int(m.group(1) or 0))


def _framework_dtype(x, dtype):
    if _core.kind_of(x) == "torch":
        import torch
        return getattr(torch, np.dtype(dtype).name)
    return np.dtype(dtype)


def _astype(x, dtype):
    return x.to(_framework_dtype(x, dtype)) if _core.kind_of(x) == "torch" else x.astype(dtype)


def _nonzero(x):
    return x != 0


def _same_memory(a, b):
    k = _core.kind_of(a)
    if k != _core.kind_of(b):
        return False
    if k == "numpy":
        return np.may_share_memory(a, b)
    if k == "torch":
        sa, sb = a.untyped_storage(), b.untyped_storage()
        return sa.data_ptr() == sb.data_ptr()
    # CuPy: whether the byte ranges overlap (np.may_share_memory's bounds test; a view of the input,
    # such as input[::-1], is another pointer into the same memory)
    (alo, ahi), (blo, bhi) = _byte_range(a), _byte_range(b)
    return alo < bhi and blo < ahi


def _byte_range(a):
    """[lo, hi) of the bytes a CuPy array's elements occupy."""
    if a.size == 0:
        return (0, 0)
    lo = hi = a.data.ptr
    for n, st in zip(a.shape, a.strides):
        if st < 0:
            lo += st * (n - 1)
        else:
            hi += st * (n - 1)
    return lo, hi + a.itemsize


def _is_dtype_like(output):
    if output is None:
        return False
    if type(output).__module__.split(".")[0] == "torch" and not hasattr(output, "shape"):
        return True  # torch.dtype
    if isinstance(output, type) or isinstance(output, (str, np.dtype)):
        try:
            np.dtype(output)
            return True
        except TypeError:
            return False
    return False


def _np_dtype(output):
    if type(output).__module__.split(".")[0] == "torch":
        return np.dtype(str(output).replace("torch.", ""))
    return np.dtype(output)


# --- 0-d inputs ------------------------------------------------------------------

def _zero_d(fn):
    """fn that also takes a 0-d input, as scipy does: an image of one element and no axes, filtered by a
    footprint (structure, weights) of that one element.  The library has no rank-0 arrays: the call runs
    on a 1-element 1-D view (a 0-d footprint, structure, weights, mask and output as 1-element views, size
    1, origins 0; the multi-axis linear filters with axes=(), which copies, as scipy's loop over no axes
    does) and gives 0-d results."""
    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def f(input, *args, **kw):
        if _ndim(input) or kw.get("batch_dims") or kw.get("axes") is not None:
            return fn(input, *args, **kw)
        return _on_one_element(fn, sig, input, args, kw)
    return f


# the multi-axis linear filters, which copy a 0-d input (no axes to filter)
_COPY0 = ("uniform_filter", "gaussian_filter", "laplace", "gaussian_laplace", "gaussian_gradient_magnitude")


def _one(x):
    return x.reshape(1) if np.ndim(x) == 0 else x


def _on_one_element(fn, sig, input, args, kw):
    b = sig.bind(input, *args, **kw)
    a = b.arguments
    a["input"] = _one(_input(input))
    for k in ("size", "origin", "origin1", "origin2", "sigma", "mode"):  # scipy: one value per axis, of none
        v = a.get(k)
        if v is not None and not isinstance(v, str) and np.ndim(v) > 0 and len(v) != 0:
            raise RuntimeError("sequence argument must have length equal to input rank")
    for k in ("footprint", "structure", "structure1", "structure2", "weights"):
        if a.get(k) is not None:
            if np.ndim(a[k]) != 0:  # scipy's error for its rank, from the function itself
                return fn(input, *args, **kw)
            a[k] = _one(_core.to_host_numpy(a[k]))
        elif k in ("structure", "structure1") and k in sig.parameters and fn.__name__.startswith("binary"):
            a[k] = np.ones(1, np.bool_)  # generate_binary_structure(0, 1): the one element
    if a.get("mask") is not None:
        a["mask"] = _one(_core.as_array(a["mask"]))
    if a.get("size") is not None:
        a["size"] = 1
    for k in ("origin", "origin1", "origin2"):
        if a.get(k) is not None:
            a[k] = 0
    if fn.__name__ in _COPY0:
        a["axes"] = ()
    out = a.get("output")
    given = _is_output_array(out) and np.ndim(out) == 0
    if given:
        a["output"] = out.reshape(1)
    r = fn(*b.args, **b.kwargs)

    def back(v):
        if isinstance(v, tuple):
            return tuple(back(t) for t in v)
        if given and v is a["output"]:
            return out
        return v.reshape(()) if hasattr(v, "reshape") and tuple(v.shape) == (1,) else v
    return back(r)


# --- complex inputs and weights: two real calls ----------------------------------------

def _complex_parts(weights=None):
    """A linear filter or interpolation that also takes complex inputs (and, with weights, complex weights),
    as scipy does: the real and imaginary parts are filtered as real arrays into the views of a complex
    output (cval's parts with them); complex weights give the four products, correlation with the
    weights conjugated.  weights: None, 'correlate' or 'convolve'."""
    def deco(fn):
        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def f(input, *args, **kw):
            w = None
            if weights is not None:
                w = args[0] if args else kw.get("weights")
            if _complex_array(input) or (w is not None and _complex_array(w)):
                return _by_parts(fn, sig, weights, input, args, kw)
            return fn(input, *args, **kw)
        return f
    return deco


def _complex_array(a):
    dt = getattr(a, "dtype", None)
    if isinstance(dt, np.dtype):
        return dt.kind == "c"
    if _core.kind_of(a) == "torch":
        return a.is_complex()
    return np.iscomplexobj(a)


def _by_parts(fn, sig, weights, input, args, kw):
    b = sig.bind(input, *args, **kw)
    b.apply_defaults()  # spline_filter's output=np.float64 among them: promoted, as scipy does
    x = _core.as_array(input)
    xc = _complex_array(x)
    if xc and _core.kind_of(x) == "torch":
        x = x.resolve_conj()  # torch's lazy conjugate: the library reads the memory, so the values must be there
    w = wc = None
    if weights is not None:
        w = np.asarray(_core.to_host_numpy(b.arguments["weights"]))
        wc = w.dtype.kind == "c"
        if wc and weights == "correlate":
            w = w.conj()
    cval = b.arguments.get("cval", 0.0)
    if not xc and np.iscomplexobj(cval):
        raise TypeError("must be real number, not complex")  # scipy's: a complex cval needs a complex input
    cr, ci = float(np.real(cval)), float(np.imag(cval))
    output = b.arguments.get("output")
    xdt = np.dtype(_core.dtype_of(x))
    out = None
    if output is None or _is_dtype_like(output):
        odt = np.promote_types(xdt, np.complex64) if output is None else _np_dtype(output)
        if odt.kind != "c":
            import warnings
            warnings.warn("promoting specified output dtype to complex", stacklevel=3)
            odt = np.promote_types(odt, np.complex64)
    else:
        if np.dtype(_core.dtype_of(output)).kind != "c":
            raise RuntimeError("output must have complex dtype")
        out = output
        odt = np.dtype(_core.dtype_of(out))
    fdt = np.finfo(odt).dtype

    def run(part, wpart, cv, dest):
        a = inspect.BoundArguments(sig, b.arguments.copy())
        a.arguments["input"] = part
        a.arguments["output"] = dest
        if "cval" in sig.parameters:
            a.arguments["cval"] = cv
        if weights is not None:
            a.arguments["weights"] = wpart
        return fn(*a.args, **a.kwargs)
    xr, xi = (x.real, x.imag) if xc else (x, None)
    wr, wi = (np.ascontiguousarray(w.real), np.ascontiguousarray(w.imag)) if wc else (w, None)
    if out is None:
        re = run(xr, wr, cr, fdt)
        out = _core.empty(_core.placement(x), tuple(re.shape), odt)
        _core.copy_into(out.real, re)
    else:
        run(xr, wr, cr, out.real)
    if xc and wc:
        ov = out.real
        ov -= run(xi, wi, ci, None)
        run(xr, wi, cr, out.imag)
        ov = out.imag
        ov += run(xi, wr, ci, None)
    elif xc:
        run(xi, wr, ci, out.imag)
    else:
        run(xr, wi, cr, out.imag)
    return out


# --- the call ------------------------------------------------------------------

class _Staged:
    """A host array copied to a GPU by the library (device= for host inputs)."""

    def __init__(self, ctx, host_desc, copy_in):
        self.ctx = ctx
        self.d = S["ndf_array"]()
        shape = (ctypes.c_int64 * max(host_desc.ndim, 1))(*host_desc.shape[:host_desc.ndim])
        check(C["ndf_array_alloc"](ctx, ctypes.byref(self.d), K["NDF_DEVICE_CUDA"], host_desc.dtype,
                                   host_desc.ndim, shape), ctx)
        if copy_in:
            check(C["ndf_array_copy"](ctx, ctypes.byref(self.d), ctypes.byref(host_desc)), ctx)

    def back(self, host_desc):
        check(C["ndf_array_copy"](self.ctx, ctypes.byref(host_desc), ctypes.byref(self.d)), self.ctx)

    def __del__(self):
        try:
            C["ndf_array_free"](self.ctx, ctypes.byref(self.d))
        except Exception:
            pass


class _Call:
    """One op call: the input (permuted for axes), where it runs, its outputs."""

    def __init__(self, input, batch_dims=0, axes=None, device=None):
        self.x0 = x = _input(input)
        self.shape0 = tuple(x.shape)
        self.perm, self.batch_dims = _axes_perm(len(self.shape0), axes, batch_dims or 0)
        self.where = _core.placement(x)
        dev = _parse_device(device)
        self.remote = None  # a host input run on a GPU, or a GPU input run on the CPU
        if dev is not None and (dev[0], dev[1] if dev[0] == K["NDF_DEVICE_CUDA"] else 0) != (
                self.where.device, self.where.device_id):
            self.remote = dev
        self.keep = []
        self.staged = []
        self.x = x
        self.ctx = None

    def run_ctx(self):
        if self.remote is None:
            return self.where.ctx
        if self.remote[0] == K["NDF_DEVICE_CPU"]:
            return _core.context()
        if self.where.device != K["NDF_DEVICE_CPU"]:
            raise ValueError("ndforge: a GPU array runs on its own device (device=%r)" % (self.remote,))
        return _core.context(K["NDF_DEVICE_CUDA"], self.remote[1], None)

    def view(self, a):
        return a if self.perm is None else _permute(a, self.perm)

    def desc_in(self, a):
        """Descriptor of an input-like array (the input, a mask), on the device the op runs."""
        a = self.view(a)
        if self.remote is not None and self.remote[0] == K["NDF_DEVICE_CPU"]:
            a = _core.to_host_numpy(a)
            d, keep = _core.describe(a, _core.HOST)
        else:
            d, keep = _core.describe(a, self.where)
        self.keep.append(keep)
        if self.remote is not None and self.remote[0] == K["NDF_DEVICE_CUDA"]:
            st = _Staged(self.ctx, d, True)
            self.staged.append(st)
            return st.d
        return d

    def new_output(self, dtype, shape=None):
        shape = self.shape0 if shape is None else shape
        return _core.empty(self.where, shape, dtype)

    def desc_out(self, a, permuted=True):
        """Descriptor the library writes, and a function that finishes the write-back."""
        v = self.view(a) if permuted else a
        if self.remote is not None and self.remote[0] == K["NDF_DEVICE_CPU"]:
            h = np.empty(tuple(v.shape), np.dtype(_core.dtype_of(v)))
            d, keep = _core.describe(h, _core.HOST)
            self.keep.append(keep)

            def done():
                _core.copy_into(v, _from_numpy_like(v, h))
            return d, done
        if _core.kind_of(v) == "numpy" and not v.flags.writeable:  # scipy's check (the library would write it)
            raise ValueError("output array is read-only.")
        if self.remote is None and _core.kind_of(v) != "numpy" and not _describable(v, self.x0):
            raise ValueError("ndforge: an output array on another device than the input's")
        d, keep = _core.describe(v, self.where)
        if _core.kind_of(v) == "numpy" and keep is not v:  # a view NumPy cannot describe in elements
            raise ValueError("ndforge: output strides are not a multiple of the element size")
        self.keep.append(keep)
        if self.remote is not None:
            st = _Staged(self.ctx, d, False)
            self.staged.append(st)
            return st.d, lambda: st.back(d)
        return d, None


def _from_numpy_like(like, h):
    k = _core.kind_of(like)
    if k == "torch":
        import torch
        return torch.from_numpy(h).to(like.device)
    if k == "cupy":
        import cupy
        with cupy.cuda.Device(like.device.id):  # like's device, not the current one
            return cupy.asarray(h)
    return h


def _resolve_output(call, output, lib_dtype, accepts):
    """(array the library writes, value returned, post step) for scipy's output= forms.

    lib_dtype: the dtype the library writes by default; accepts(dtype): whether
    the library can write that dtype itself (else it writes lib_dtype, then cast).  An output the library
    cannot write in place (byte-swapped, overlapping the input, misaligned) is written as a temporary of
    its dtype where the library takes that dtype, so that the values are those of a direct write."""
    if output is None:
        out = call.new_output(lib_dtype)
        return out, out, None
    if _is_dtype_like(output):
        dt = _np_dtype(output)
        if accepts(dt):
            out = call.new_output(dt)
            return out, out, None
        tmp = call.new_output(_native(dt) if accepts(_native(dt)) else lib_dtype)
        return tmp, None, lambda: _astype(tmp, dt)
    if tuple(output.shape) != call.shape0:
        raise RuntimeError("output shape not correct")
    if _core.kind_of(output) != _core.kind_of(call.x0):
        raise TypeError("ndforge: output must be an array of the input's kind (%s)" % _core.kind_of(call.x0))
    dt = np.dtype(_core.dtype_of(output)) if _core.dtype_of(output) not in ("float16", "bfloat16") else None
    if dt is not None and accepts(dt) and not _same_memory(output, call.x0) and _describable(output, call.x0):
        return output, output, None
    tmp = call.new_output(_native(dt) if dt is not None and accepts(_native(dt)) else lib_dtype)

    def post():
        _core.copy_into(output, tmp)
        return output
    return tmp, output, post


def _native(dt):
    """dt in the native byte order (torch's half-type names stay)."""
    return dt if isinstance(dt, str) or dt.isnative else dt.newbyteorder("=")


def _describable(a, like=None):
    """Whether the library can write a where it is: a NumPy array writeable and aligned; a torch or CuPy
    array on the device of `like` (the input; another device's output is written through a temporary)."""
    k = _core.kind_of(a)
    if k == "numpy":
        f = a.flags
        return f.writeable and f.aligned
    if like is not None and k == _core.kind_of(like):
        return a.device == like.device if k == "torch" else a.device.id == like.device.id
    return True


def _view(x, dtype_name):
    """x reinterpreted as another dtype of the same size (no copy)."""
    if _core.kind_of(x) == "torch":
        import torch
        return x.view(getattr(torch, dtype_name))
    return x.view(dtype_name)


def _half_input(call, allow):
    """Inputs the library's filters do not take, computed in a dtype they do: float16/bfloat16 in a float32
    copy, bool as its bytes (uint8, a view: min, max and ranks of 0/1 are exact).  Returns the input's
    dtype name for the result's conversion back, or None."""
    dt = _core.dtype_of(call.x0)
    name = dt if isinstance(dt, str) else dt.name
    if not allow:
        return None
    if name in ("float16", "bfloat16"):
        call.x0 = _astype(call.x0, np.float32) if name == "float16" else call.x0.float()
        return name
    if name == "bool":
        call.x0 = _view(call.x0, "uint8")
        return name
    return None


def _to_half(x, name):
    if name is None:
        return x
    if name == "bool":
        return _view(x, "bool")
    if _core.kind_of(x) == "torch":
        import torch
        return x.to(getattr(torch, name))
    return x.astype(name)


# --- grey morphology and rank filters --------------------------------------------------

_GREY_ALGOS = None


def _enum_from_name(fn, value, what):
    m = ctypes.c_int()
    if fn(value.encode(), ctypes.byref(m)):
        raise ValueError("%s must be one of the library's names (got %r)" % (what, value))
    return m.value


_RANK_ALGO = {"auto": "NDF_RANK_ALGO_AUTO", "network": "NDF_RANK_ALGO_NETWORK", "select": "NDF_RANK_ALGO_SELECT",
              "histogram": "NDF_RANK_ALGO_HISTOGRAM", "tile": "NDF_RANK_ALGO_TILE"}
_RANK_NAN = {"propagate": "NDF_RANK_NAN_PROPAGATE", "omit": "NDF_RANK_NAN_OMIT"}


def _tune(opt, tune):
    """The call's tunables, "name=value,..." (ADR 0019; `ndforge tunables` lists them), where the options
    struct has them; the library checks the names and values at the call."""
    if tune is None:
        return
    if not isinstance(tune, str):
        raise TypeError("tune must be a string 'name=value,...' (got %r)" % (tune,))
    if not any(f == "tune" for f, _ in type(opt)._fields_):
        raise NotImplementedError("this libndforge takes no per-call tunables")
    opt.tune = tune.encode()


def _spatial_rank(call):
    return len(call.shape0) - call.batch_dims


def _footprint_opts(opt, call, size, footprint, origin, mode, cval):
    n = _spatial_rank(call)
    if footprint is not None:
        fp = _core.to_host_numpy(footprint)
        if fp.ndim != n:
            raise RuntimeError("footprint array has incorrect shape.")
        if not fp.astype(bool).any():
            if opt.__class__.__name__ == "ndf_rank_options":  # scipy 1.10's rank filters: no rank fits
                raise RuntimeError("rank not within filter footprint size")
            raise ValueError("All-zero footprint is not supported.")
        d, keep = _host_desc(fp, np.bool_)
        call.keep.append(keep)
        opt.footprint = ctypes.pointer(d)
    if size is not None:
        opt.nsize, vals = _seq(size, "size")
        if footprint is None:
            _per_axis(size, n)
        opt.size[:len(vals)] = vals
    opt.norigin, vals = _seq(origin, "origin")
    _per_axis(origin, n)
    opt.origin[:len(vals)] = vals
    if not isinstance(mode, str) and opt.__class__.__name__ == "ndf_rank_options":
        raise RuntimeError(_MODE_ERR)  # scipy's rank filters take one mode, not one per axis
    _per_axis(mode, n)
    opt.mode = _mode(mode)
    opt.cval = float(cval)
    opt.batch_dims = call.batch_dims


def _widen_to_output(call, output, half):
    """An output dtype that holds every input value exactly (float32 -> float64, uint8 -> int16 ...): the
    op runs in that dtype, as scipy's composites do their arithmetic in the output's dtype."""
    if half is not None or output is None:
        return
    dt = _np_dtype(output) if _is_dtype_like(output) else _core.dtype_of(output)
    if isinstance(dt, str):
        return
    xdt = np.dtype(_core.dtype_of(call.x0))
    if dt != xdt and dt in _core.input_dtypes() and np.can_cast(xdt, dt, "safe"):
        call.x0 = _astype(call.x0, dt)


# Prepared calls: the options struct of a call whose arguments are all plain values (no footprint,
# structure, output, axes or device), keyed by those values and the input's type, dtype and rank; a
# repeated call then only describes its arrays and calls the C function.
_PLANS = {}
_PLAN_KINDS = ("numpy", "torch", "cupy")


def _plan_key(name, input, args, *rest):
    for r in rest:
        if r is not None:
            return None
    try:
        key = (name, type(input), input.dtype, input.ndim, args)
        hash(key)
    except AttributeError:  # not an array (a list, a DLPack producer): no plan
        return None
    except TypeError:  # a list among the arguments
        key = (name, type(input), input.dtype, input.ndim,
               tuple(tuple(a) if isinstance(a, list) else a for a in args))
        try:
            hash(key)
        except TypeError:
            return None
    if _core.kind_of(input) not in _PLAN_KINDS or (isinstance(input, np.ndarray) and not input.dtype.isnative):
        return None  # byte-swapped NumPy arrays go through as_array's native copy
    return key


def _run_plan(plan, x, output=None):
    """A prepared call; None when output= is not an array the library can write directly."""
    fn, opt, extra = plan
    where = _core.placement(x)
    ctx = where.ctx
    if output is None:
        out = _core.empty_like(x, where)
    else:
        if (type(output) is not type(x) or output.dtype != x.dtype or output.shape != x.shape
                or not _describable(output, x) or _same_memory(output, x)):
            return None
        out = output
    din, keep_in = _core.describe(x, where)
    dout, keep_out = _core.describe(out, where)
    s = fn(ctx, ctypes.byref(din), ctypes.byref(dout), *extra, ctypes.byref(opt))
    if s:
        _raise(s, ctx)
    return out


def _grey(name, input, size, footprint, structure, output, mode, cval, origin, axes, batch_dims, device,
          algorithm, nan_policy, tune=None):
    key = _plan_key(name, input, (size, mode, cval, origin, batch_dims, algorithm, nan_policy, tune), footprint,
                    structure, axes, device)
    if key is not None:
        plan = _PLANS.get(key)
        if plan is not None:
            r = _run_plan(plan, input, output)
            if r is not None:
                return r
    if (name in ("grey_erosion", "grey_dilation") and isinstance(mode, (list, tuple)) and len(set(mode)) > 1
            and structure is None and nan_policy in (None, "propagate")):
        return _grey_modes(name == "grey_erosion", input, size, footprint, output, mode, cval, origin, axes,
                           batch_dims, device, algorithm, tune)
    dt = _store_dtype(input, output, mode, cval) if name in ("grey_erosion", "grey_dilation") else None
    if dt is not None:
        return _grey_stored(name, input, size, footprint, structure, output, mode, cval, origin,
                            dict(axes=axes, batch_dims=batch_dims, device=device, algorithm=algorithm,
                                 nan_policy=nan_policy, tune=tune), dt)
    if name in _COMPOSED and nan_policy in (None, "propagate") and (
            (isinstance(mode, (list, tuple)) and len(set(mode)) > 1) or _other_dtype(input, output)):
        return _grey_composed(name, input, output, dict(size=size, footprint=footprint, structure=structure,
                                                        mode=mode, cval=cval, origin=origin, axes=axes,
                                                        batch_dims=batch_dims, device=device, algorithm=algorithm,
                                                        tune=tune))
    row = OPS[name]
    call = _Call(input, batch_dims, axes, device)
    if name in ("morphological_gradient", "morphological_laplace") and _core.dtype_of(call.x0) == np.bool_:
        raise TypeError("boolean subtraction is not supported (scipy composes %s with np.subtract)" % name)
    half = _half_input(call, True)
    if size is None and footprint is None and structure is None:
        raise ValueError("size, footprint, or structure must be specified")
    _widen_to_output(call, output, half)
    opt = S[row["struct"]]()
    C[row["struct"] + "_init"](ctypes.byref(opt))
    _footprint_opts(opt, call, size, footprint, origin, mode, cval)
    if structure is not None:
        st = _core.to_host_numpy(structure)
        if st.ndim != _spatial_rank(call):
            raise RuntimeError("structure array has incorrect shape")
        d, keep = _host_desc(st, np.float64)
        call.keep.append(keep)
        opt.structure = ctypes.pointer(d)
    if algorithm is not None:
        opt.algorithm = _enum_from_name(C["ndf_grey_algorithm_from_name"], algorithm, "algorithm")
    if nan_policy not in (None, "propagate"):
        raise ValueError("nan_policy of the grey ops: 'propagate' (got %r)" % (nan_policy,))
    _tune(opt, tune)
    widened = call.x0 is not call.x
    r = _run_unary(call, row, opt, output, (), half)
    if key is not None and half is None and not widened:
        _PLANS[key] = (C[row["c"]], opt, ())
    return r


_COMPOSED = ("grey_opening", "grey_closing", "morphological_gradient", "morphological_laplace", "white_tophat",
             "black_tophat")

# The dtypes scipy's filters store their results into (its C code's output types).
_STORE_DTYPES = tuple(np.dtype(t) for t in (np.bool_, np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32,
                                            np.uint64, np.int64, np.float32, np.float64))


def _dtypes(input, output):
    """(output's dtype, input's dtype), both native, where a NumPy or CuPy output (an array of the input's
    kind, or a dtype) has one of scipy's store dtypes other than the input's, which is one too; else None."""
    if output is None or _core.kind_of(input) not in ("numpy", "cupy"):
        return None
    if _is_dtype_like(output):
        dt = _np_dtype(output)
    elif _core.kind_of(output) == _core.kind_of(input):
        dt = np.dtype(output.dtype)
    else:
        return None
    dt, xdt = _native(dt), _native(np.dtype(getattr(input, "dtype", None) or _core.as_array(input).dtype))
    return (dt, xdt) if dt != xdt and dt in _STORE_DTYPES and xdt in _STORE_DTYPES else None


def _stores(input, output):
    """The output's dtype where scipy stores a result of the input's dtype into another (its C cast, unlike
    NumPy's: a bool output holds the cast's byte, a narrower one wraps), on NumPy and CuPy arrays; None
    where the output is the input's dtype or holds every input value (an exact widening), and for
    the other array kinds and dtypes."""
    d = _dtypes(input, output)
    return None if d is None or d[0] != np.bool_ and np.can_cast(d[1], d[0], "safe") else d[0]


def _other_dtype(input, output):
    """Whether a NumPy or CuPy output (an array, or a dtype) has another dtype than the input: scipy then
    writes a composite's last step into it and computes what follows in NumPy's arithmetic (_grey_composed)."""
    return _dtypes(input, output) is not None


def _scipy_store(v, dt):
    """v (NumPy or CuPy, a real dtype) as scipy's filters store their results into dtype dt: each value
    read as a double (a bool as its byte), then C's cast as x86-64 does it -- the narrow integers and bool
    through int32, uint32 and int64 through int64, truncating, NaN and values out of range giving the most
    negative value; round to nearest into float32.  So a bool holds the cast's byte (0.5 stores 0, 2.0
    stores 2, -1.0 stores 255) and 300.7 into uint8 is 44."""
    xp = np if _core.kind_of(v) == "numpy" else __import__("cupy")
    f = (v.view(np.uint8) if v.dtype == np.bool_ else v).astype(np.float64)
    dt = np.dtype(dt)
    if dt.kind == "f":
        return f.astype(dt)

    def cvt(lo, hi, it):  # cvttsd2si: truncation within (lo, hi), else the most negative value of it
        ok = (f > lo) & (f < hi)
        return xp.where(ok, xp.trunc(xp.where(ok, f, 0.0)), float(np.iinfo(it).min)).astype(it)
    if dt == np.uint64:  # as the compiler converts: from 2^63 on, v - 2^63 with the top bit set
        top = f >= 2.0 ** 63
        g = xp.where(top, f - 2.0 ** 63, f)
        ok = (g >= -2.0 ** 63) & (g < 2.0 ** 63)
        i = xp.where(ok, xp.trunc(xp.where(ok, g, 0.0)), -2.0 ** 63).astype(np.int64).view(np.uint64)
        i = xp.where(top, i ^ np.uint64(1 << 63), i)
        return xp.where(f >= 2.0 ** 64, np.uint64(0), i)
    if dt in (np.uint32, np.int64):
        return cvt(-2.0 ** 63 - 1025, 2.0 ** 63, np.int64).astype(dt)
    t = cvt(-2147483649.0, 2147483648.0, np.int32)
    return t.astype(np.uint8).view(np.bool_) if dt == np.bool_ else t.astype(dt)


def _cval_fits(xdt, mode, cval):
    """Whether the library's cval (converted to the image's dtype) is scipy's: not in constant mode, a float64
    image, or a cval the float32 or integer (bool) dtype holds exactly.  scipy compares the values read as doubles with
    cval itself."""
    modes = [mode] if isinstance(mode, str) else list(mode)
    if "constant" not in modes:
        return True
    if xdt == np.float32:  # a cval float32 holds (its 1-D passes compare -0.1 itself, not float32's -0.1)
        c = float(cval)
        with np.errstate(over="ignore"):
            return c != c or float(np.float32(c)) == c
    if xdt.kind not in "biu":
        return True
    lo, hi = (0, 1) if xdt == np.bool_ else (np.iinfo(xdt).min, np.iinfo(xdt).max)
    c = float(cval)
    return c == int(c) and lo <= c <= hi


def _double_cval(x, mode, cval):
    """x, or x as float64 where the library's cval would not be scipy's (_cval_fits): the result is stored
    into an output of another dtype, which keeps what cval itself gives."""
    return x if _cval_fits(np.dtype(_core.dtype_of(x)), mode, cval) else x.astype(np.float64)


def _c_cval(x, cval):
    """cval as scipy's non-separable minimum, maximum and rank filters read it: C's cast to the image's
    integer dtype ((_type)cval: 1.5 is 1, -2 into uint8 is 254; a bool image's byte), which the library
    then takes as it is."""
    xdt = np.dtype(_core.dtype_of(x))
    if xdt.kind not in "biu":
        return cval
    return float(_scipy_store(np.array([float(cval)]), np.uint8 if xdt == np.bool_ else xdt)[0])


def _store_dtype(input, output, mode, cval):
    """The dtype a grey or rank op stores its result into as scipy does (_scipy_store): the output's, where
    it narrows the input's (_stores), or where it is another dtype and scipy's cval is not the library's."""
    d = _dtypes(input, output)
    if d is None:
        return None
    narrows = d[0] == np.bool_ or not np.can_cast(d[1], d[0], "safe")
    return d[0] if narrows or not _cval_fits(d[1], mode, cval) else None


def _put(output, r):
    """r (of the output's dtype) as the call's result: written into an output array (a bool one byte for
    byte, keeping what C's cast stored), else returned."""
    if output is None or _is_dtype_like(output):
        return r
    if r.dtype == np.bool_:
        _core.copy_into(output.view(np.uint8), r.view(np.uint8))
    else:
        _core.copy_into(output, r)
    return output


def _grey_stored(name, input, size, footprint, structure, output, mode, cval, origin, kw, dt):
    """grey_erosion / grey_dilation into an output of another dtype, as scipy's _min_or_max_filter writes it:
    a box element (size, or an all-ones footprint, and no structure) runs one 1-D pass per axis longer than
    1, each stored in the output's dtype (_scipy_store) and read back from it by the next; any other
    element one pass, stored.  A box of no axis longer than 1 is NumPy's cast (scipy's
    output[...] = input[...])."""
    x = _input(input)
    fn = grey_erosion if name == "grey_erosion" else grey_dilation
    fp = None if footprint is None else np.asarray(_core.to_host_numpy(footprint)).astype(bool)
    axes, nb = kw["axes"], kw["batch_dims"] or 0
    n = (1 if np.ndim(axes) == 0 else len(axes)) if axes is not None else x.ndim - nb
    # a footprint of another rank goes to the one-pass call, which refuses it as scipy does
    if structure is not None or (fp is not None and (fp.ndim != n or not fp.all())) or (fp is None and size is None):
        r = fn(x, size, footprint, structure, None, mode, _c_cval(x, cval), origin, **kw)
        return _put(output, _scipy_store(r, dt))
    x = _double_cval(x, mode, cval)  # the 1-D passes compare with the double cval
    sizes = list(fp.shape) if fp is not None else _normalize(size, n, _size_int)
    _per_axis(origin, n)
    origins = _normalize(origin, n)
    if not isinstance(mode, str):
        _per_axis(mode, n)
    modes = [mode] * n if isinstance(mode, str) else list(mode)
    r = None
    for i in range(n):
        if sizes[i] > 1:
            one, org = [1] * n, [0] * n
            one[i], org[i] = sizes[i], origins[i]
            src = x if r is None else (r.view(np.uint8) if dt == np.bool_ else r).astype(np.float64)
            r = _scipy_store(fn(src, one, None, None, None, modes[i], cval, org, **kw), dt)
    return _put(output, _input(input).astype(dt) if r is None else r)


def _grey_composed(name, input, output, kw):
    """A grey composite as scipy writes it (_morphology.py), over grey_erosion and grey_dilation: for one mode
    per axis, and for outputs of another dtype than the input's.  The erosion or dilation scipy writes into
    the output is stored in its dtype as scipy stores it (per pass, _grey_stored), and the arithmetic after
    it is NumPy's (CuPy's) with scipy's casting, so that where scipy's same_kind casting refuses (a float
    result into a bool or integer output) the same error comes, and a bool image's gradient into an int16
    output is NumPy's bool - int16.
    An output overlapping the input is written through a temporary of its dtype (scipy's steps would read
    what they wrote)."""
    x = _input(input)

    def ero(a, out=None):
        return grey_erosion(a, output=out, **kw)

    def dil(a, out=None):
        return grey_dilation(a, output=out, **kw)
    if name == "grey_opening":
        return dil(ero(x), output)
    if name == "grey_closing":
        return ero(dil(x), output)
    given = output is not None and not _is_dtype_like(output)
    out = output
    if given and _same_memory(output, x):
        out = _core.empty(_core.placement(x), x.shape, _core.dtype_of(output))
    if _core.kind_of(x) == "torch":
        import torch
        sub, add, xor = torch.sub, torch.add, torch.bitwise_xor
    else:
        xp = np if _core.kind_of(x) == "numpy" else __import__("cupy")
        sub, add, xor = xp.subtract, xp.add, xp.bitwise_xor
    if name in ("morphological_gradient", "morphological_laplace"):
        tmp = dil(x)
        e = ero(x, out if given else None)
        if name == "morphological_gradient":
            r = sub(tmp, e, out=e) if given else tmp - e
        else:
            add(tmp, e, out=e)
            sub(e, x, out=e)
            r = sub(e, x, out=e)
    else:
        tmp = dil(ero(x), out) if name == "white_tophat" else ero(dil(x), out)
        if _core.dtype_of(x) == np.bool_ and _core.dtype_of(tmp) == np.bool_:
            r = xor(x, tmp, out=tmp)
        else:
            r = sub(x, tmp, out=tmp) if name == "white_tophat" else sub(tmp, x, out=tmp)
    if given and out is not output:
        _core.copy_into(output, out)
        return output
    return r


def _run_unary(call, row, opt, output, extra, half=None, lib_dtype=None, accepts=None):
    call.ctx = call.run_ctx()
    xdt = np.dtype(_core.dtype_of(call.x0))
    if half is None and xdt not in _core.input_dtypes():
        raise TypeError("ndforge: %s inputs are not supported by %s (library dtypes: %s)"
                        % (xdt, row["c"], ", ".join(str(d) for d in _core.input_dtypes() if d.kind != "b")))
    lib_dtype = xdt if lib_dtype is None else lib_dtype
    if accepts is None:
        def accepts(dt):
            return dt == lib_dtype
    if half is not None and output is None:
        out, ret = call.new_output(lib_dtype), None
        post = (lambda: _to_half(out, half))
    else:
        out, ret, post = _resolve_output(call, output, lib_dtype, accepts)
    din = call.desc_in(call.x0)
    dout, done = call.desc_out(out)
    _call(C[row["c"]], call.ctx, ctypes.byref(din), ctypes.byref(dout), *extra, ctypes.byref(opt))
    if done:
        done()
    if post is not None:
        r = post()
        return r if r is not None else ret
    return ret


def _make_grey(name):
    def f(input, size=None, footprint=None, structure=None, output=None, mode="reflect", cval=0.0, origin=0,
          *, axes=None, batch_dims=0, device=None, algorithm=None, nan_policy=None, tune=None):
        if name in ("morphological_gradient", "morphological_laplace") and _is_dtype_like(output):
            output = None  # scipy's (and cupyx's) take an output array only: a dtype is ignored
        return _grey(name, input, size, footprint, structure, output, mode, cval, origin, axes, batch_dims,
                     device, algorithm, nan_policy, tune)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = ("scipy.ndimage.%s(input, size=None, footprint=None, structure=None, output=None, "
                 "mode='reflect', cval=0.0, origin=0, *, axes=None) on ndforge; extra keywords: "
                 "batch_dims, device, algorithm, nan_policy, tune." % name)
    return _zero_d(f)


grey_erosion = _make_grey("grey_erosion")
grey_dilation = _make_grey("grey_dilation")
grey_opening = _make_grey("grey_opening")
grey_closing = _make_grey("grey_closing")
morphological_gradient = _make_grey("morphological_gradient")
morphological_laplace = _make_grey("morphological_laplace")
white_tophat = _make_grey("white_tophat")
black_tophat = _make_grey("black_tophat")

# --- minimum and maximum filters: scipy's names for flat grey erosion and dilation ------------------

def _normalize(v, n, conv=operator.index):
    if np.ndim(v) == 0:
        return [conv(v)] * n
    _per_axis(v, n)
    return [conv(t) for t in v]


def _min_max(erode, input, size, footprint, output, mode, cval, origin, axes, batch_dims, device, algorithm,
             tune):
    """scipy's _min_or_max_filter: grey_erosion as it is; the maximum filter is grey_dilation of the flipped
    footprint with the origin scipy's grey_dilation would flip back.  One mode per axis (box windows only)
    runs one pass per axis, each writing the output's dtype, as scipy's separable path does."""
    if size is None and footprint is None:
        raise RuntimeError("no footprint provided")
    x = _input(input)
    n = (1 if np.ndim(axes) == 0 else len(axes)) if axes is not None else x.ndim - (batch_dims or 0)
    if footprint is not None:
        fp = np.asarray(_core.to_host_numpy(footprint)).astype(bool)
        if fp.ndim != n:
            raise RuntimeError("footprint array has incorrect shape.")
        sizes = list(fp.shape)
        if fp.all():  # a box: scipy's separable path, as size=
            fp = None
    else:
        fp = None
        sizes = _normalize(size, n, _size_int)
    origins = _normalize(origin, n)
    kw = dict(axes=axes, batch_dims=batch_dims, device=device, algorithm=algorithm, tune=tune)
    if not isinstance(mode, (str, list, tuple)):
        raise RuntimeError(_MODE_ERR)
    if not isinstance(mode, str):
        modes = list(mode)
        if len(modes) != n:
            raise RuntimeError("sequence argument must have length equal to input rank")
        if len(set(modes)) == 1:
            mode = modes[0]
        elif fp is not None:
            raise RuntimeError("A sequence of modes is not supported for non-separable footprints")
        elif _store_dtype(x, output, modes, cval) is not None:  # each pass stored in the output's dtype
            return _grey_stored("grey_erosion" if erode else "grey_dilation", x, sizes, None, None, output, modes,
                                cval, origins if erode else [-o - (0 if s & 1 else 1) for o, s in zip(origins, sizes)],
                                dict(axes=axes, batch_dims=batch_dims, device=device, algorithm=algorithm,
                                     nan_policy=None, tune=tune), _store_dtype(x, output, modes, cval))
        else:
            r, out = x, output
            for i in range(n):
                one = [1] * n
                one[i] = sizes[i]
                org = [0] * n
                org[i] = origins[i]
                r = _min_max(erode, r, one, None, out, modes[i], cval, org, axes, batch_dims, device, algorithm,
                             tune)
                out = out if out is not None and not _is_dtype_like(out) else None
            return r
    if erode:
        return grey_erosion(x, None if fp is not None else sizes, fp, None, output, mode, cval, origins, **kw)
    flipped = [-o - (0 if s & 1 else 1) for o, s in zip(origins, sizes)]
    if fp is not None:
        fp = fp[(slice(None, None, -1),) * fp.ndim]
    return grey_dilation(x, None if fp is not None else sizes, fp, None, output, mode, cval, flipped, **kw)


def _grey_modes(erode, input, size, footprint, output, mode, cval, origin, axes, batch_dims, device, algorithm,
                tune):
    """grey_erosion / grey_dilation with one mode per axis: the minimum / maximum filter (scipy's grey_dilation
    flips the footprint and the origin before its maximum filter)."""
    if erode:
        return _min_max(True, input, size, footprint, output, mode, cval, origin, axes, batch_dims, device,
                        algorithm, tune)
    if size is None and footprint is None:
        raise ValueError("size, footprint, or structure must be specified")
    x = _input(input)
    n = (1 if np.ndim(axes) == 0 else len(axes)) if axes is not None else x.ndim - (batch_dims or 0)
    fp = None if footprint is None else np.asarray(_core.to_host_numpy(footprint)).astype(bool)
    sizes = list(fp.shape) if fp is not None else _normalize(size, n, _size_int)
    flipped = [-o - (0 if s & 1 else 1) for o, s in zip(_normalize(origin, n), sizes)]
    if fp is not None:
        fp = fp[(slice(None, None, -1),) * fp.ndim]
    return _min_max(False, x, size, fp, output, mode, cval, flipped, axes, batch_dims, device, algorithm, tune)


@_zero_d
def minimum_filter(input, size=None, footprint=None, output=None, mode="reflect", cval=0.0, origin=0, *,
                   axes=None, batch_dims=0, device=None, algorithm=None, tune=None):
    """scipy.ndimage.minimum_filter on ndforge (extra keywords: batch_dims, device, algorithm, tune)."""
    return _min_max(True, input, size, footprint, output, mode, cval, origin, axes, batch_dims, device, algorithm,
                    tune)


@_zero_d
def maximum_filter(input, size=None, footprint=None, output=None, mode="reflect", cval=0.0, origin=0, *,
                   axes=None, batch_dims=0, device=None, algorithm=None, tune=None):
    """scipy.ndimage.maximum_filter on ndforge (extra keywords: batch_dims, device, algorithm, tune)."""
    return _min_max(False, input, size, footprint, output, mode, cval, origin, axes, batch_dims, device,
                    algorithm, tune)


def _min_max1d(erode, input, size, axis, output, mode, cval, origin, batch_dims, device):
    x = _input(input)
    size = operator.index(size)
    if size < 1:
        raise RuntimeError("incorrect filter size")
    origin = operator.index(origin)
    if size // 2 + origin < 0 or size // 2 + origin >= size:
        raise ValueError("invalid origin")
    axis = _axis(axis, x.ndim)
    if size == 1 and _stores(x, output) is not None:  # scipy's 1-D filter stores the values it reads
        return _put(output, _scipy_store(x, _stores(x, output)))
    return _min_max(erode, x, size, None, output, mode, cval, origin, (operator.index(axis) % x.ndim,),
                    batch_dims, device, None, None) if not batch_dims else \
        _min_max(erode, x, [size if i == axis % x.ndim else 1 for i in range(batch_dims, x.ndim)], None, output,
                 mode, cval, [origin if i == axis % x.ndim else 0 for i in range(batch_dims, x.ndim)], None,
                 batch_dims, device, None, None)


def minimum_filter1d(input, size, axis=-1, output=None, mode="reflect", cval=0.0, origin=0, *, batch_dims=0,
                     device=None):
    """scipy.ndimage.minimum_filter1d on ndforge (extra keywords: batch_dims, device)."""
    return _min_max1d(True, input, size, axis, output, mode, cval, origin, batch_dims, device)


def maximum_filter1d(input, size, axis=-1, output=None, mode="reflect", cval=0.0, origin=0, *, batch_dims=0,
                     device=None):
    """scipy.ndimage.maximum_filter1d on ndforge (extra keywords: batch_dims, device)."""
    return _min_max1d(False, input, size, axis, output, mode, cval, origin, batch_dims, device)


# Ops of the registry's grey family without a function above (_ops.load_registry gave them rows): the grey
# ops' signature and options struct, the registry's description.
for _name, _row in OPS.items():
    if _row["family"] == "grey" and _name not in globals():
        globals()[_name] = _make_grey(_name)
        globals()[_name].__doc__ = "%s (ndforge op %s; the grey ops' signature)." % (_row.get("doc") or _name,
                                                                                    _row["c"])


def _rank(name, input, extra, size, footprint, output, mode, cval, origin, axes, batch_dims, device,
          algorithm, nan_policy, tune=None):
    key = _plan_key(name, input, (extra[0].value if extra else None, size, mode, cval, origin, batch_dims,
                                  algorithm, nan_policy, tune), footprint, axes, device)
    if key is not None:
        plan = _PLANS.get(key)
        if plan is not None:
            r = _run_plan(plan, input, output)
            if r is not None:
                return r
    dt = _store_dtype(input, output, mode, cval) if isinstance(mode, str) else None
    if dt is not None and (size is not None or footprint is not None):
        return _rank_stored(name, input, extra, size, footprint, output, mode, cval, origin,
                            dict(axes=axes, batch_dims=batch_dims, device=device, algorithm=algorithm,
                                 nan_policy=nan_policy, tune=tune), dt)
    row = OPS[name]
    call = _Call(input, batch_dims, axes, device)
    half = _half_input(call, True)
    if size is None and footprint is None:
        raise RuntimeError("no footprint provided")
    opt = S[row["struct"]]()
    C[row["struct"] + "_init"](ctypes.byref(opt))
    _footprint_opts(opt, call, size, footprint, origin, mode, cval)
    if algorithm is not None:
        if algorithm not in _RANK_ALGO:
            raise ValueError("algorithm must be one of %s (got %r)" % (", ".join(_RANK_ALGO), algorithm))
        opt.algorithm = K[_RANK_ALGO[algorithm]]
    if nan_policy is not None:
        if nan_policy not in _RANK_NAN:
            raise ValueError("nan_policy must be 'propagate' or 'omit' (got %r)" % (nan_policy,))
        opt.nan_policy = K[_RANK_NAN[nan_policy]]
    _tune(opt, tune)
    widened = call.x0 is not call.x
    r = _run_unary(call, row, opt, output, extra, half)
    if key is not None and half is None and not widened:
        _PLANS[key] = (C[row["c"]], opt, extra)
    return r


def _rank_stored(name, input, extra, size, footprint, output, mode, cval, origin, kw, dt):
    """A rank filter into an output of another dtype, as scipy's _rank_filter writes it: the ranks 0 and
    n - 1 are its minimum and maximum filters (a box: one pass per axis, each stored, _grey_stored), any
    other rank one pass, stored in the output's dtype (_scipy_store)."""
    x = _input(input)
    axes, nb = kw["axes"], kw["batch_dims"] or 0
    n = (1 if np.ndim(axes) == 0 else len(axes)) if axes is not None else x.ndim - nb
    try:
        fp = np.ones(_normalize(size, n, _size_int), bool) if footprint is None else \
            np.asarray(_core.to_host_numpy(footprint)).astype(bool)
        count = int(fp.sum())
        v = extra[0].value if extra else None
        if name == "median_filter":
            rank = count // 2
        elif name == "rank_filter":
            rank = v + count if v < 0 else v
        else:
            p = v + 100.0 if v < 0 else v
            rank = count - 1 if p == 100.0 else int(float(count) * p / 100.0)
    except (TypeError, ValueError, RuntimeError):
        fp, rank, count = None, -1, 0  # the library's checks raise scipy's errors below
    plain = kw["algorithm"] is None and kw["nan_policy"] in (None, "propagate") and kw["tune"] is None
    if plain and count and rank in (0, count - 1) and fp.ndim == n:
        return _min_max(rank == 0, x, None, fp, output, mode, cval, origin, axes, kw["batch_dims"], kw["device"],
                        None, None)
    args = (size, footprint, None, mode, _c_cval(x, cval), origin)
    r = median_filter(x, *args, **kw) if name == "median_filter" else \
        rank_filter(x, extra[0].value, *args, **kw) if name == "rank_filter" else \
        percentile_filter(x, extra[0].value, *args, **kw)
    return _put(output, _scipy_store(r, dt))


@_zero_d
def median_filter(input, size=None, footprint=None, output=None, mode="reflect", cval=0.0, origin=0, *,
                  axes=None, batch_dims=0, device=None, algorithm=None, nan_policy=None, tune=None):
    """scipy.ndimage.median_filter on ndforge (extra keywords: batch_dims, device, algorithm, nan_policy, tune)."""
    return _rank("median_filter", input, (), size, footprint, output, mode, cval, origin, axes, batch_dims,
                 device, algorithm, nan_policy, tune)


@_zero_d
def rank_filter(input, rank, size=None, footprint=None, output=None, mode="reflect", cval=0.0, origin=0, *,
                axes=None, batch_dims=0, device=None, algorithm=None, nan_policy=None, tune=None):
    """scipy.ndimage.rank_filter on ndforge (extra keywords: batch_dims, device, algorithm, nan_policy, tune)."""
    rank = operator.index(rank)
    return _rank("rank_filter", input, (ctypes.c_int64(rank),), size, footprint, output, mode, cval, origin,
                 axes, batch_dims, device, algorithm, nan_policy, tune)


@_zero_d
def percentile_filter(input, percentile, size=None, footprint=None, output=None, mode="reflect", cval=0.0,
                      origin=0, *, axes=None, batch_dims=0, device=None, algorithm=None, nan_policy=None, tune=None):
    """scipy.ndimage.percentile_filter on ndforge (extra keywords: batch_dims, device, algorithm, nan_policy,
    tune)."""
    return _rank("percentile_filter", input, (ctypes.c_double(float(percentile)),), size, footprint, output,
                 mode, cval, origin, axes, batch_dims, device, algorithm, nan_policy, tune)


# --- binary morphology ---------------------------------------------------------------

def _binary_input(call):
    """Non-zero is foreground: dtypes the library does not take become bool (one comparison)."""
    dt = np.dtype(_core.dtype_of(call.x0)) if _core.dtype_of(call.x0) not in ("float16", "bfloat16") else None
    if dt is None or dt not in _core.input_dtypes():
        call.x0 = _nonzero(call.x0)


def _bool_accepts(dt):
    return dt in (np.dtype(np.bool_), np.dtype(np.uint8))


def _structure(call, structure, attr, opt, name="structure"):
    if structure is None:
        return
    st = _core.to_host_numpy(structure)
    if st.ndim != _spatial_rank(call):
        raise RuntimeError("structure and input must have same dimensionality")
    d, keep = _host_desc(st, np.bool_)
    call.keep.append(keep)
    setattr(opt, attr, ctypes.pointer(d))


def _binary(name, input, structure, iterations, mask, output, border_value, origin, brute_force, axes,
            batch_dims, device):
    row = OPS[name]
    call = _Call(input, batch_dims, axes, device)
    _binary_input(call)
    call.ctx = call.run_ctx()
    opt = S[row["struct"]]()
    C[row["struct"] + "_init"](ctypes.byref(opt))
    _structure(call, structure, "structure", opt)
    if iterations is not None:
        opt.iterations = operator.index(iterations)
    opt.border_value = 1 if border_value else 0
    opt.norigin, vals = _seq(origin, "origin")
    _per_axis(origin, _spatial_rank(call))
    opt.origin[:len(vals)] = vals
    opt.brute_force = 1 if brute_force else 0
    opt.batch_dims = call.batch_dims
    if mask is not None:
        m = _core.as_array(mask)
        if tuple(m.shape) != call.shape0:
            raise RuntimeError("mask and input must have equal sizes")
        dt = _core.dtype_of(m)
        if isinstance(dt, str) or dt not in _core.input_dtypes():
            m = _nonzero(m)
        dm = call.desc_in(m)
        call.keep.append(dm)
        opt.mask = ctypes.pointer(dm)
    ret = _binary_run(call, row, opt, output)
    return None if name == "binary_fill_holes" and _is_output_array(output) else ret


def _is_output_array(output):
    return output is not None and not _is_dtype_like(output)


def _binary_run(call, row, opt, output):
    """The binary op into output: an array (written, returned), else a new bool array -- scipy's binary ops
    take only an array as output; a dtype there gives bool, as scipy's do."""
    out, ret, post = _resolve_output(call, output if _is_output_array(output) else None, np.dtype(np.bool_),
                                     _bool_accepts)
    din = call.desc_in(call.x0)
    dout, done = call.desc_out(out)
    _call(C[row["c"]], call.ctx, ctypes.byref(din), ctypes.byref(dout), ctypes.byref(opt))
    if done:
        done()
    if post is not None:
        r = post()
        return r if r is not None else ret
    return ret


@_zero_d
def binary_erosion(input, structure=None, iterations=1, mask=None, output=None, border_value=0, origin=0,
                   brute_force=False, *, axes=None, batch_dims=0, device=None):
    """scipy.ndimage.binary_erosion on ndforge (extra keywords: batch_dims, device)."""
    return _binary("binary_erosion", input, structure, iterations, mask, output, border_value, origin,
                   brute_force, axes, batch_dims, device)


@_zero_d
def binary_dilation(input, structure=None, iterations=1, mask=None, output=None, border_value=0, origin=0,
                    brute_force=False, *, axes=None, batch_dims=0, device=None):
    """scipy.ndimage.binary_dilation on ndforge (extra keywords: batch_dims, device)."""
    return _binary("binary_dilation", input, structure, iterations, mask, output, border_value, origin,
                   brute_force, axes, batch_dims, device)


@_zero_d
def binary_opening(input, structure=None, iterations=1, output=None, origin=0, mask=None, border_value=0,
                   brute_force=False, *, axes=None, batch_dims=0, device=None):
    """scipy.ndimage.binary_opening on ndforge (extra keywords: batch_dims, device)."""
    return _binary("binary_opening", input, structure, iterations, mask, output, border_value, origin,
                   brute_force, axes, batch_dims, device)


@_zero_d
def binary_closing(input, structure=None, iterations=1, output=None, origin=0, mask=None, border_value=0,
                   brute_force=False, *, axes=None, batch_dims=0, device=None):
    """scipy.ndimage.binary_closing on ndforge (extra keywords: batch_dims, device)."""
    return _binary("binary_closing", input, structure, iterations, mask, output, border_value, origin,
                   brute_force, axes, batch_dims, device)


@_zero_d
def binary_propagation(input, structure=None, mask=None, output=None, border_value=0, origin=0, *, axes=None,
                       batch_dims=0, device=None):
    """scipy.ndimage.binary_propagation on ndforge (extra keywords: batch_dims, device)."""
    return _binary("binary_propagation", input, structure, None, mask, output, border_value, origin, False,
                   axes, batch_dims, device)


@_zero_d
def binary_fill_holes(input, structure=None, output=None, origin=0, *, axes=None, batch_dims=0, device=None):
    """scipy.ndimage.binary_fill_holes on ndforge (extra keywords: batch_dims, device)."""
    return _binary("binary_fill_holes", input, structure, None, None, output, 0, origin, False, axes,
                   batch_dims, device)


@_zero_d
def binary_hit_or_miss(input, structure1=None, structure2=None, output=None, origin1=0, origin2=None, *,
                       axes=None, batch_dims=0, device=None):
    """scipy.ndimage.binary_hit_or_miss on ndforge (extra keywords: batch_dims, device)."""
    row = OPS["binary_hit_or_miss"]
    call = _Call(input, batch_dims, axes, device)
    _binary_input(call)
    call.ctx = call.run_ctx()
    opt = S[row["struct"]]()
    C[row["struct"] + "_init"](ctypes.byref(opt))
    _structure(call, structure1, "structure1", opt)
    _structure(call, structure2, "structure2", opt)
    n = _spatial_rank(call)
    opt.norigin1, vals = _seq(origin1, "origin1")
    opt.origin1[:len(vals)] = vals
    if origin2 is None:
        opt.norigin2 = -1
    else:
        opt.norigin2, vals = _seq(origin2, "origin2")
        opt.origin2[:len(vals)] = vals
    _per_axis(origin1, n)
    _per_axis(origin2, n)
    opt.batch_dims = call.batch_dims
    ret = _binary_run(call, row, opt, output)
    return None if _is_output_array(output) else ret  # scipy returns nothing when output is an array


def generate_binary_structure(rank, connectivity):
    """scipy.ndimage.generate_binary_structure (a NumPy bool array)."""
    rank = operator.index(rank)
    connectivity = operator.index(connectivity)
    if rank < 1:
        return np.array(True)
    out = np.empty((3,) * rank, np.bool_)
    d, _ = _core.describe(out, _core.HOST)
    check(C["ndf_generate_binary_structure"](rank, connectivity, ctypes.byref(d)))
    return out


def iterate_structure(structure, iterations, origin=None):
    """scipy.ndimage.iterate_structure (NumPy bool; (structure, origin) when origin is given; for iterations
    < 2, as scipy, a copy of the structure as given, without the origin)."""
    iterations = operator.index(iterations)
    if iterations < 2:  # scipy: a copy of the structure as it is (its dtype; no origin returned)
        return np.array(_core.to_host_numpy(structure))
    st = np.asarray(_core.to_host_numpy(structure)).astype(bool)
    n = st.ndim
    ds, _ = _core.describe(np.ascontiguousarray(st), _core.HOST)
    shape = (ctypes.c_int64 * max(n, 1))()
    check(C["ndf_iterate_structure_shape"](ctypes.byref(ds), iterations, shape))
    out = np.empty(tuple(shape[:n]), np.bool_)
    dout, _ = _core.describe(out, _core.HOST)
    if origin is None:
        check(C["ndf_iterate_structure"](ctypes.byref(ds), iterations, ctypes.byref(dout), 0, None, None))
        return out
    norigin, vals = _seq(origin, "origin")
    org = (ctypes.c_int64 * max(n, 1))(*vals)
    org_out = (ctypes.c_int64 * max(n, 1))()
    check(C["ndf_iterate_structure"](ctypes.byref(ds), iterations, ctypes.byref(dout), norigin, org, org_out))
    return out, [int(v) for v in org_out[:n]]


# --- label ----------------------------------------------------------------------------

def _label_accepts(dt):
    return dt in _core.DTYPE_CODE and dt.kind in "biuf"  # bool: scipy's npy_bool holds the labels' bytes


def _label_scan_like(output, dtype, batch_dims):
    """An empty array that label numbers in the order it numbers output: scipy's label scans lines along
    the axis numpy's PyArray_IterAllButAxis picks for its output (the first axis of the smallest positive
    stride, searched from the first non-zero stride on), the lines in C order of the other axes, so the
    temporary has that axis innermost and the others in C order (the batch axes outermost)."""
    st = output.strides[batch_dims:]
    minst = next((x for x in st if x != 0), 0)
    axis = 0
    for d in range(1, len(st)):
        if 0 < st[d] < minst:
            axis, minst = d, st[d]
    axis += batch_dims
    perm = [d for d in range(output.ndim) if d != axis] + [axis]
    return np.empty([output.shape[d] for d in perm], dtype).transpose(np.argsort(perm))


@_zero_d
def label(input, structure=None, output=None, *, batch_dims=0, device=None):
    """scipy.ndimage.label: (labels, num_features), or num_features when output is an array.

    With batch_dims, num_features is an int64 array of the batch's shape (one count per image)."""
    row = OPS["label"]
    call = _Call(input, batch_dims, None, device)
    _binary_input(call)
    call.ctx = call.run_ctx()
    n = _spatial_rank(call)
    ds = None
    if structure is not None:
        st = _core.to_host_numpy(structure)
        if st.ndim != n:
            raise RuntimeError("structure and input must have equal rank")
        if any(s != 3 for s in st.shape):
            raise ValueError("structure dimensions must be equal to 3")
        ds, keep = _host_desc(st, np.bool_)
        call.keep.append(keep)
    given = output is not None and not _is_dtype_like(output)
    if given and tuple(output.shape) != call.shape0:
        raise ValueError("output shape not correct")  # scipy's label: ValueError (the filters: RuntimeError)
    odt = _np_dtype(output) if _is_dtype_like(output) else output.dtype if given and \
        _core.kind_of(output) == "numpy" else None
    if odt is not None and not _label_accepts(_native(odt)):
        raise TypeError("No matching signature found (scipy's label writes bool, integer, float32 and float64 "
                        "outputs, not %s)" % odt)
    if odt is not None and not odt.isnative:  # scipy's label refuses a byte-swapped output (both forms)
        raise ValueError("Big-endian buffer not supported on little-endian compiler" if sys.byteorder == "little"
                         else "Little-endian buffer not supported on big-endian compiler")
    out, ret, post = _resolve_output(call, output, np.dtype(np.int32), _label_accepts)
    if given and out is not output and _core.kind_of(output) == "numpy":
        out = _label_scan_like(output, np.dtype(_core.dtype_of(out)), call.batch_dims)  # numbered as output is

        def post():
            _core.copy_into(output, out)
            return output
    din = call.desc_in(call.x0)
    dout, done = call.desc_out(out)
    nb = int(np.prod(call.shape0[:call.batch_dims])) if call.batch_dims else 1
    counts = (ctypes.c_int64 * max(nb, 1))()
    _call(C[row["c"]], call.ctx, ctypes.byref(din), ctypes.byref(dout),
          ctypes.byref(ds) if ds is not None else None, call.batch_dims, counts)
    if done:
        done()
    if post is not None:
        r = post()
        ret = r if r is not None else ret
    num = int(counts[0]) if not call.batch_dims else \
        np.array(counts[:nb], np.int64).reshape(call.shape0[:call.batch_dims])
    return num if given else (ret, num)


# --- distance transforms -----------------------------------------------------------------

def _dist_args(return_distances, return_indices, distances, indices):
    msgs = []
    if not return_distances and not return_indices:
        msgs.append("at least one of return_distances/return_indices must be True")
    if distances is not None and not return_distances:
        msgs.append("return_distances must be True if distances is supplied")
    if indices is not None and not return_indices:
        msgs.append("return_indices must be True if indices is supplied")
    if msgs:
        raise RuntimeError(", ".join(msgs))


def _metric(metric):
    m = ctypes.c_int()
    if not isinstance(metric, str) or C["ndf_metric_from_name"](metric.encode(), ctypes.byref(m)):
        return None
    return m.value


def _distance(name, input, sampling, metric, return_distances, return_indices, distances, indices, batch_dims,
              device, dist_dtype):
    """A distance transform where the input lives; what the CUDA backend does not do (cdt's indices, cdt
    with a metric structure other than taxicab or chessboard) runs on the CPU backend, the arrays copied
    there and back (a synchronization)."""
    x = _core.as_array(input)
    if isinstance(x, np.ndarray) and (x.dtype.kind not in "biuf" or x.dtype.itemsize > 8):
        input = np.where(x, 1, 0).astype(np.int8)  # scipy's reading of any input: its truth values
    args = (name, input, sampling, metric, return_distances, return_indices, distances, indices, batch_dims)
    try:
        return _distance_on(*args, device, dist_dtype)
    except _core.UnsupportedError:
        if device is not None or _core.placement(_core.as_array(input)).device != K["NDF_DEVICE_CUDA"]:
            raise
    return _distance_on(*args, "cpu", dist_dtype)


def _distance_on(name, input, sampling, metric, return_distances, return_indices, distances, indices, batch_dims,
                 device, dist_dtype):
    row = OPS[name]
    _dist_args(return_distances, return_indices, distances, indices)
    call = _Call(input, batch_dims, None, device)
    _binary_input(call)
    call.ctx = call.run_ctx()
    opt = S[row["struct"]]()
    C[row["struct"] + "_init"](ctypes.byref(opt))
    nsp = _spatial_rank(call)
    if sampling is not None:
        vals = [float(s) for s in np.atleast_1d(np.asarray(sampling, dtype=np.float64))]
        if len(vals) not in (1, nsp) or len(vals) > K["NDF_MAX_SPATIAL"]:
            raise RuntimeError("sequence argument must have length equal to input rank")
        opt.nsampling = len(vals)
        opt.sampling[:len(vals)] = vals
    keep_ms = None
    if metric is not None:
        if isinstance(metric, str):
            m = _metric(metric)
            if m is None:
                raise (ValueError("invalid metric provided") if name == "distance_transform_cdt"
                       else RuntimeError("distance metric not supported"))
            if name == "distance_transform_cdt" and m == K["NDF_METRIC_EUCLIDEAN"]:
                raise ValueError("invalid metric provided")
            opt.metric = m
        elif name == "distance_transform_cdt":
            ms = _core.to_host_numpy(metric)
            if ms.ndim != nsp or any(s != 3 for s in ms.shape):
                raise RuntimeError("metric structure must have shape (3,)*rank")
            d, keep_ms = _host_desc(ms, np.bool_)
            call.keep.append(keep_ms)
            opt.metric_structure = ctypes.pointer(d)
        else:
            raise RuntimeError("distance metric not supported")
    opt.batch_dims = call.batch_dims
    ddt = np.dtype(dist_dtype(opt.metric))
    ret = []
    dd = di = None
    posts = []
    if return_distances:
        if distances is None:
            dist = call.new_output(ddt)
            ret.append(dist)
        else:
            dist = distances
            if tuple(dist.shape) != call.shape0:
                raise RuntimeError("distances array has wrong shape")
        dd, done = call.desc_out(dist, permuted=False)
        if done:
            posts.append(done)
    if return_indices:
        ishape = call.shape0[:call.batch_dims] + (nsp,) + call.shape0[call.batch_dims:]
        if indices is None:
            ind = call.new_output(np.int32, ishape)
            ret.append(ind)
        else:
            ind = indices
            if tuple(ind.shape) != ishape:
                raise RuntimeError("indices array has wrong shape")
            if np.dtype(_core.dtype_of(ind)) != np.dtype(np.int32):
                raise RuntimeError("indices array must be int32")
        di, done = call.desc_out(ind, permuted=False)
        if done:
            posts.append(done)
    din = call.desc_in(call.x0)
    _call(C[row["c"]], call.ctx, ctypes.byref(din), ctypes.byref(dd) if dd is not None else None,
          ctypes.byref(di) if di is not None else None, ctypes.byref(opt))
    for p in posts:
        p()
    if len(ret) == 2:
        return tuple(ret)
    if len(ret) == 1:
        return ret[0]
    return None


def distance_transform_edt(input, sampling=None, return_distances=True, return_indices=False, distances=None,
                           indices=None, *, batch_dims=0, device=None):
    """scipy.ndimage.distance_transform_edt on ndforge (extra keywords: batch_dims, device)."""
    return _distance("distance_transform_edt", input, sampling, None, return_distances, return_indices,
                     distances, indices, batch_dims, device, lambda m: np.float64)


def distance_transform_cdt(input, metric="chessboard", return_distances=True, return_indices=False,
                           distances=None, indices=None, *, batch_dims=0, device=None):
    """scipy.ndimage.distance_transform_cdt on ndforge (extra keywords: batch_dims, device)."""
    return _distance("distance_transform_cdt", input, None, metric, return_distances, return_indices,
                     distances, indices, batch_dims, device, lambda m: np.int32)


def distance_transform_bf(input, metric="euclidean", sampling=None, return_distances=True, return_indices=False,
                          distances=None, indices=None, *, batch_dims=0, device=None):
    """scipy.ndimage.distance_transform_bf on ndforge (extra keywords: batch_dims, device)."""
    def dt(m):
        return np.float64 if m in (K["NDF_METRIC_EUCLIDEAN"], K["NDF_METRIC_DEFAULT"]) else np.uint32
    return _distance("distance_transform_bf", input, sampling, metric, return_distances, return_indices,
                     distances, indices, batch_dims, device, dt)


def distance_edt_pass(sqdist, axis, sampling=1.0, features=None):
    """One pass of distance_transform_edt along ``axis``, in place (ndforge's ndf_distance_edt_pass).

    ``sqdist`` (float64; NumPy, torch or CuPy) holds per voxel the squared distance over the axes passed
    so far, +inf where there is no feature yet (before the first pass: 0 on the background, +inf
    elsewhere); ``features`` (int64, same shape and device, optional) the features' ids.  After the
    passes of every spatial axis in order, ``sqrt(sqdist)`` is distance_transform_edt's result bit for
    bit, whatever pieces each pass ran on (ndforge.dask's separable transform).  Returns ``sqdist``."""
    sq = _core.as_array(sqdist)
    where = _core.placement(sq)
    if np.dtype(_core.dtype_of(sq)) != np.float64 or sq is not sqdist and isinstance(sqdist, np.ndarray):
        raise TypeError("distance_edt_pass: sqdist must be a float64 array (native byte order: it is written)")
    nd = len(sq.shape)
    ax = operator.index(axis)
    if not -nd <= ax < nd:
        raise ValueError("distance_edt_pass: axis %d is out of range for a %d-d array" % (ax, nd))
    ax %= nd
    d, keep = _core.describe(sq, where)
    fd = None
    if features is not None:
        fe = _core.as_array(features)
        if np.dtype(_core.dtype_of(fe)) != np.int64 or fe is not features and isinstance(features, np.ndarray):
            raise TypeError("distance_edt_pass: features must be an int64 array (native byte order: it is written)")
        fd, keep2 = _core.describe(fe, where)
    ctx = where.ctx
    _call(C["ndf_distance_edt_pass"], ctx, ctypes.byref(d), ctypes.byref(fd) if fd is not None else None, ax,
          float(sampling))
    return sqdist


__all__ = sorted(set(__all__) | {"distance_edt_pass"})


# --- linear filters (_filters.py), where this libndforge has them ----------------------------

if "ndf_correlate1d" in C:
    from ._filters import *  # noqa: F401,F403
    from . import _filters
    __all__ = sorted(set(__all__) | set(_filters.__all__))

# --- spline filters and geometric transforms (_interp.py), where this libndforge has them -------------

if "ndf_map_coordinates" in C:
    from ._interp import *  # noqa: F401,F403
    from . import _interp
    __all__ = sorted(set(__all__) | set(_interp.__all__))
