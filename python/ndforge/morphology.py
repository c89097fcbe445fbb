"""scikit-image's morphology functions that the library has: ``reconstruction``.

``reconstruction(seed, mask, method='dilation', footprint=None, offset=None)``
as skimage.morphology.reconstruction (result float32 for a float32 or
float16 mask, else float64: scikit-image 0.26's dtype, where 0.19 gave
float64 always -- the values are the same, docs/adr/0033; extra keywords
``batch_dims``, ``output`` -- an array or a dtype: float64 or the seed's own
dtype, the same values).  seed and mask are NumPy arrays or
tensors of one framework and device; CUDA arrays run on their GPU (the call
waits for the stream: the library reads a convergence flag back).
"""

import ctypes

import numpy as np

from . import _core
from ._core import C, S, K

__all__ = ["reconstruction"]


def _call(status, ctx):
    if status:
        msg = (C["ndf_errmsg"](ctx) or b"").decode(errors="replace")
        if status == K["NDF_EINVAL"]:
            raise ValueError(msg)
        _core.raise_status(status, ctx)


def _float64(a):
    if _core.kind_of(a) == "torch":
        import torch
        return a.to(torch.float64)
    return a.astype(np.float64)


def reconstruction(seed, mask, method="dilation", footprint=None, offset=None, *, batch_dims=0, output=None):
    """Grey reconstruction of seed under mask (dilation) or over it (erosion), as skimage."""
    if "ndf_reconstruction" not in C:
        raise NotImplementedError("this libndforge has no ndf_reconstruction (%s)" % _core._capi.library_path)
    s = _core.as_array(seed)
    m = _core.as_array(mask)
    if tuple(s.shape) != tuple(m.shape):
        raise ValueError("seed and mask must have the same shape")
    where = _core.placement(s)
    ctx = where.ctx
    # skimage's dtype: float32 for a float32 (or float16) mask, else float64.  The result only selects
    # values of the seed and the mask, so computing in float64 and rounding once gives the same values.
    mdt = str(_core.dtype_of(m))  # torch's half types come as names
    single = mdt in ("float32", "float16")
    if mdt != str(_core.dtype_of(s)) or mdt == "float16":
        s, m = _float64(s), _float64(m)
    narrow = single and output is None and _core.dtype_of(s) != np.float32
    opt = S["ndf_reconstruction_options"]()
    C["ndf_reconstruction_options_init"](ctypes.byref(opt))
    mcode = ctypes.c_int()
    if not isinstance(method, str) or C["ndf_reconstruct_method_from_name"](method.encode(), ctypes.byref(mcode)):
        raise ValueError("Reconstruction method can be one of 'erosion' or 'dilation'. Got '%s'." % (method,))
    opt.method = mcode.value
    keep = []
    if footprint is not None:
        fp = np.ascontiguousarray(_core.to_host_numpy(footprint) != 0)
        d, k = _core.describe(fp, _core.HOST)
        keep.append((d, k))
        opt.footprint = ctypes.pointer(d)
    if offset is not None:
        vals = [int(v) for v in np.atleast_1d(offset)]
        opt.noffset = len(vals)
        opt.offset[:len(vals)] = vals
    opt.batch_dims = int(batch_dims)
    if output is None:
        out = _core.empty(where, tuple(s.shape), np.float32 if single and not narrow else np.float64)
    elif isinstance(output, (np.dtype, type, str)) or type(output).__module__ == "torch" and \
            not hasattr(output, "data_ptr"):  # a dtype (NumPy's or torch's)
        dt = str(output).replace("torch.", "") if type(output).__module__.startswith("torch") else output
        out = _core.empty(where, tuple(s.shape), np.dtype(dt))
    else:
        out = output
        if tuple(out.shape) != tuple(s.shape):
            raise ValueError("output must have the seed's shape %s, not %s" % (tuple(s.shape), tuple(out.shape)))
        if isinstance(out, np.ndarray) and not out.flags.writeable:  # the library writes it where it is
            raise ValueError("output array is read-only")
    ds, k1 = _core.describe(s, where)
    dm, k2 = _core.describe(m, where)
    do, k3 = _core.describe(out, where)
    _call(C["ndf_reconstruction"](ctx, ctypes.byref(ds), ctypes.byref(dm), ctypes.byref(do), ctypes.byref(opt)),
          ctx)
    if narrow:
        if _core.kind_of(out) == "torch":
            import torch
            return out.to(torch.float32)
        return out.astype(np.float32)
    return out
