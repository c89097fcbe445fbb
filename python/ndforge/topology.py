"""Euler characteristic curves and transforms of 2-D / 3-D images.

* ``ecc(input, thresholds=256, construction='V', range=None, batch_dims=0)``:
  the exact curve, int64 of shape ``batch + (T,)``; ``thresholds`` is a count
  (evenly spaced over ``range`` or the input's [min, max]) or an array of values.
* ``soft_ecc(input, thresholds, lam=1.0, construction='V', batch_dims=0)``:
  the sigmoid-smoothed curve, float64 (``ndforge.torch`` has its gradients).
* ``ect(input, directions, thresholds=256, construction='V', weighted=False,
  range=None, spacing=None, normalize=False, batch_dims=0)``: the (weighted)
  Euler characteristic transform, ``batch + (m, T)``, int64 (float64 weighted).
* ``soft_ect(input, directions, thresholds, lam=1.0, ...)``: its smooth form.

``input`` lives where the op runs (NumPy / torch CPU: CPU; CuPy / torch CUDA:
its GPU, on the caller's stream); float16 and bfloat16 inputs are computed in
a float32 copy (gradients come back in the input's dtype); ``thresholds`` and ``directions`` may be
any array (they are read on the host, as float64).  ``return_thresholds=True``
adds the thresholds used (NumPy float64) to the result of ``ecc`` / ``ect``.
"""

import ctypes

import numpy as np

from . import _core
from ._core import C, S, K

__all__ = ["ecc", "soft_ecc", "ect", "soft_ect", "euler_characteristic_curve", "euler_characteristic_transform"]


def _construction(name):
    c = ctypes.c_int()
    if not isinstance(name, str) or C["ndf_ecc_construction_from_name"](name.encode(), ctypes.byref(c)):
        raise ValueError("construction must be 'V' or 'T' (got %r)" % (name,))
    return c.value


def _call(fn, ctx, *args):
    s = fn(ctx, *args)
    if s:
        _core.raise_status(s, ctx)


def _float32(x):
    """float16 / bfloat16 inputs computed in a float32 copy (the library's filtrations take float32)."""
    dt = _core.dtype_of(x)
    if dt in ("float16", "bfloat16") or dt == np.float16:
        return (x.float() if _core.kind_of(x) == "torch" else x.astype(np.float32)), dt
    return x, None


class _Op:
    def __init__(self, input):
        self.x, self.half = _float32(_core.as_array(input))
        self.where = _core.placement(self.x)
        self.ctx = self.where.ctx
        self.keep = []

    def desc(self, a):
        d, k = _core.describe(a, self.where)
        self.keep.append(k)
        return d

    def host(self, a, ndim=None):
        h = np.ascontiguousarray(_core.to_host_numpy(a), dtype=np.float64)
        if ndim is not None and h.ndim != ndim:
            raise ValueError("expected a %d-D array (got shape %s)" % (ndim, h.shape))
        d, k = _core.describe(h, _core.HOST)
        self.keep.append((h, k))
        return d

    def empty(self, shape, dtype):
        return _core.empty(self.where, shape, dtype)


def _thresholds_opts(op, opt, thresholds, range):
    if np.ndim(thresholds) == 0:
        opt.nthresholds = int(thresholds)
        T = opt.nthresholds
    else:
        d = op.host(thresholds, 1)
        op.keep.append(d)
        opt.values = ctypes.pointer(d)
        T = d.shape[0]
    if range is not None:
        opt.has_range = 1
        opt.range_lo, opt.range_hi = (float(v) for v in range)
    return T


def ecc(input, thresholds=256, construction="V", range=None, batch_dims=0, *, return_thresholds=False):
    """Exact Euler characteristic curve (int64, batch + (T,))."""
    op = _Op(input)
    opt = S["ndf_ecc_options"]()
    C["ndf_ecc_options_init"](ctypes.byref(opt))
    opt.construction = _construction(construction)
    opt.batch_dims = int(batch_dims)
    T = _thresholds_opts(op, opt, thresholds, range)
    out = op.empty(tuple(op.x.shape[:opt.batch_dims]) + (T,), np.int64)
    din, dout = op.desc(op.x), op.desc(out)
    _call(C["ndf_euler_characteristic_curve"], op.ctx, ctypes.byref(din), ctypes.byref(dout), ctypes.byref(opt))
    if not return_thresholds:
        return out
    t = np.empty(T)
    _call(C["ndf_ecc_thresholds"], op.ctx, ctypes.byref(din), ctypes.byref(opt),
          t.ctypes.data_as(ctypes.POINTER(ctypes.c_double)), T)
    return out, t


def _soft_ecc_opts(construction, lam, batch_dims):
    opt = S["ndf_soft_ecc_options"]()
    C["ndf_soft_ecc_options_init"](ctypes.byref(opt))
    opt.construction = _construction(construction)
    opt.__setattr__("lambda", float(lam))
    opt.batch_dims = int(batch_dims)
    return opt


def soft_ecc(input, thresholds, lam=1.0, construction="V", batch_dims=0):
    """Soft Euler characteristic curve sum_v c(v) sigmoid(lam (t - f(v))) (float64, batch + (T,))."""
    op = _Op(input)
    opt = _soft_ecc_opts(construction, lam, batch_dims)
    dt = op.host(thresholds, 1)
    T = dt.shape[0]
    out = op.empty(tuple(op.x.shape[:opt.batch_dims]) + (T,), np.float64)
    din, dout = op.desc(op.x), op.desc(out)
    _call(C["ndf_soft_ecc_forward"], op.ctx, ctypes.byref(din), ctypes.byref(dt), ctypes.byref(dout),
          ctypes.byref(opt))
    return out


def soft_ecc_backward(input, thresholds, grad_output, lam=1.0, construction="V", batch_dims=0,
                      need_input=True, need_thresholds=True):
    """(grad_input or None, grad_thresholds (NumPy) or None) of soft_ecc."""
    op = _Op(input)
    opt = _soft_ecc_opts(construction, lam, batch_dims)
    dt = op.host(thresholds, 1)
    T = dt.shape[0]
    din, dgo = op.desc(op.x), op.desc(grad_output)
    gi = op.empty(tuple(op.x.shape), _core.dtype_of(op.x)) if need_input else None
    gt = op.empty((T,), np.float64) if need_thresholds else None  # on the input's device (ndforge.h)
    dgi = op.desc(gi) if gi is not None else None
    dgt = op.desc(gt) if gt is not None else None
    _call(C["ndf_soft_ecc_backward"], op.ctx, ctypes.byref(din), ctypes.byref(dt), ctypes.byref(dgo),
          ctypes.byref(dgi) if dgi is not None else None, ctypes.byref(dgt) if dgt is not None else None,
          ctypes.byref(opt))
    return _in_dtype(gi, op.half), (_core.to_host_numpy(gt) if gt is not None else None)


def _in_dtype(g, half):
    """A gradient computed for the float32 copy of a float16 / bfloat16 input, in the input's dtype."""
    if g is None or half is None:
        return g
    if _core.kind_of(g) == "torch":
        import torch
        return g.to(getattr(torch, str(half)))
    return g.astype(half)


def _geometry(opt, spacing, normalize, batch_dims):
    if spacing is not None:
        sp = [float(s) for s in np.atleast_1d(spacing)]
        if len(sp) > 3:
            raise ValueError("spacing: one value per spatial axis (2 or 3)")
        opt.spacing[:len(sp)] = sp
    opt.normalize = 1 if normalize else 0
    opt.batch_dims = int(batch_dims)


def ect(input, directions, thresholds=256, construction="V", weighted=False, range=None, spacing=None,
        normalize=False, batch_dims=0, *, return_thresholds=False):
    """Euler characteristic transform (int64; weighted: float64), batch + (m, T)."""
    op = _Op(input)
    opt = S["ndf_ect_options"]()
    C["ndf_ect_options_init"](ctypes.byref(opt))
    opt.construction = _construction(construction)
    opt.weighted = 1 if weighted else 0
    _geometry(opt, spacing, normalize, batch_dims)
    T = _thresholds_opts(op, opt, thresholds, range)
    dd = op.host(directions, 2)
    m = dd.shape[0]
    out = op.empty(tuple(op.x.shape[:opt.batch_dims]) + (m, T), np.float64 if weighted else np.int64)
    din, dout = op.desc(op.x), op.desc(out)
    _call(C["ndf_euler_characteristic_transform"], op.ctx, ctypes.byref(din), ctypes.byref(dd),
          ctypes.byref(dout), ctypes.byref(opt))
    if not return_thresholds:
        return out
    t = np.empty(T)
    _call(C["ndf_ect_thresholds"], op.ctx, ctypes.byref(din), ctypes.byref(dd), ctypes.byref(opt),
          t.ctypes.data_as(ctypes.POINTER(ctypes.c_double)), T)
    return out, t


def _soft_ect_opts(construction, weighted, lam, spacing, normalize, batch_dims):
    opt = S["ndf_soft_ect_options"]()
    C["ndf_soft_ect_options_init"](ctypes.byref(opt))
    opt.construction = _construction(construction)
    opt.weighted = 1 if weighted else 0
    opt.__setattr__("lambda", float(lam))
    _geometry(opt, spacing, normalize, batch_dims)
    return opt


def soft_ect(input, directions, thresholds, lam=1.0, construction="V", weighted=False, spacing=None,
             normalize=False, batch_dims=0):
    """Soft Euler characteristic transform (float64, batch + (m, T))."""
    op = _Op(input)
    opt = _soft_ect_opts(construction, weighted, lam, spacing, normalize, batch_dims)
    dd, dt = op.host(directions, 2), op.host(thresholds, 1)
    out = op.empty(tuple(op.x.shape[:opt.batch_dims]) + (dd.shape[0], dt.shape[0]), np.float64)
    din, dout = op.desc(op.x), op.desc(out)
    _call(C["ndf_soft_ect_forward"], op.ctx, ctypes.byref(din), ctypes.byref(dd), ctypes.byref(dt),
          ctypes.byref(dout), ctypes.byref(opt))
    return out


def soft_ect_backward(input, directions, thresholds, grad_output, lam=1.0, construction="V", weighted=False,
                      spacing=None, normalize=False, batch_dims=0, need_input=True, need_directions=True,
                      need_thresholds=True):
    """(grad_input or None, grad_directions (NumPy) or None, grad_thresholds (NumPy) or None) of soft_ect."""
    op = _Op(input)
    opt = _soft_ect_opts(construction, weighted, lam, spacing, normalize, batch_dims)
    dd, dt = op.host(directions, 2), op.host(thresholds, 1)
    din, dgo = op.desc(op.x), op.desc(grad_output)
    gi = op.empty(tuple(op.x.shape), _core.dtype_of(op.x)) if need_input else None
    gd = np.empty((dd.shape[0], dd.shape[1])) if need_directions else None
    gt = np.empty(dt.shape[0]) if need_thresholds else None
    dgi = op.desc(gi) if gi is not None else None
    dgd = _core.describe(gd, _core.HOST)[0] if gd is not None else None
    dgt = _core.describe(gt, _core.HOST)[0] if gt is not None else None

    def ref(d):
        return ctypes.byref(d) if d is not None else None
    _call(C["ndf_soft_ect_backward"], op.ctx, ctypes.byref(din), ctypes.byref(dd), ctypes.byref(dt),
          ctypes.byref(dgo), ref(dgi), ref(dgd), ref(dgt), ctypes.byref(opt))
    return _in_dtype(gi, op.half), gd, gt


# the op registry's names (gen/ops.lua) of the two exact transforms
euler_characteristic_curve = ecc
euler_characteristic_transform = ect
