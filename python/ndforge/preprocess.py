"""Preprocessing of medical volumes on ndforge: the steps of ``ndforge preprocess``.

Volumes follow NIfTI's and nibabel's convention: an array whose three spatial
axes are the voxel axes i, j, k (``nibabel.load(f).get_fdata()``), plus a 4x4
affine mapping voxel (i, j, k, 1) to world RAS+ millimetres.  Every geometric
step returns ``(array, affine)`` with the output's affine, so a voxel keeps
its world point:

- ``reorient_ras(x, affine)``: nibabel's ``as_closest_canonical`` (axes
  permuted and flipped so the affine is as near a positive diagonal as that
  can make it; voxels copied exactly);
- ``resample(x, affine, spacing, order=1)``: to a voxel spacing in mm, both
  grids sharing their centre (``ndforge run resample``'s geometry);
- ``bbox(mask)`` and ``crop(x, affine, mask, margin=4)``: the mask's
  bounding box grown by ``margin`` voxels, clipped to the volume;
- ``normalize(x, modality, mask=None, preset=None, centre=40, width=80)``:
  CT: the HU window to [-1, 1]; MRI: z-score with the mask's statistics.

Arrays are NumPy arrays or torch tensors / CuPy arrays (on their GPU through
the library's CUDA backend, zero-copy on the caller's current stream), and
each result has the input's kind and device.  ``mask_fusion`` and
``clean_mask`` run on the CPU backend only: CUDA masks are copied to the host
and their result back to the device (their module, _bet.py, says how).
Extra leading axes are a batch of volumes that share one affine.  Affines
are NumPy float64 (4, 4).  Bad arguments raise ValueError with the library's
message.
"""

import ctypes

import numpy as np

from . import _core
from ._core import C, S, K

__all__ = ["affine_spacing", "reorient_ras", "reorient_ras_plan", "resample", "resample_plan", "bbox", "crop",
           "normalize", "n4_bias_field_correction", "skull_strip", "mask_fusion", "clean_mask"]

_TAKES = tuple(np.dtype(d) for d in ("uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "float64"))


def _call(status, ctx=None):
    if status:
        msg = ((C["ndf_errmsg"](ctx) if ctx is not None else C["ndf_last_error"]()) or b"").decode(errors="replace")
        if status == K["NDF_EINVAL"]:
            raise ValueError(msg)
        _core.raise_status(status, ctx)


def _aff(affine):
    a = np.ascontiguousarray(np.asarray(affine, dtype=np.float64))
    if a.shape != (4, 4):
        raise ValueError("affine must be 4x4, not %s" % (a.shape,))
    return a, a.ctypes.data_as(ctypes.POINTER(ctypes.c_double))


def _i64(v):
    return (ctypes.c_int64 * len(v))(*[int(t) for t in v])


def _f64(v):
    return (ctypes.c_double * len(v))(*[float(t) for t in v])


def _readable(x):
    x = _core.as_array(x)
    dt = _core.dtype_of(x)
    if dt in _TAKES:
        return x
    if _core.kind_of(x) == "torch":
        import torch
        return x.to(torch.uint8) if dt == np.bool_ else x.float()
    return x.astype(np.uint8 if dt == np.bool_ else np.float32)


def affine_spacing(affine):
    """The voxel spacing the affine implies (its column lengths; nibabel's zooms)."""
    a, pa = _aff(affine)
    out = (ctypes.c_double * 3)()
    _call(C["ndf_affine_spacing"](pa, out))
    return np.array(out[:], dtype=np.float64)


def reorient_ras_plan(shape, affine):
    """(out_shape, perm, flip, out_affine) of the RAS+ reorientation of a volume of that spatial shape."""
    a, pa = _aff(affine)
    osh, perm, flip, oa = (ctypes.c_int64 * 3)(), (ctypes.c_int * 3)(), (ctypes.c_int * 3)(), np.zeros((4, 4))
    _call(C["ndf_reorient_ras_plan"](_i64(shape[-3:]), pa, osh, perm, flip,
                                     oa.ctypes.data_as(ctypes.POINTER(ctypes.c_double))))
    return tuple(osh[:]), tuple(perm[:]), tuple(bool(f) for f in flip[:]), oa


def reorient_ras(x, affine):
    """nibabel's as_closest_canonical on an array: (reoriented array, its affine)."""
    x = _readable(x)
    if x.ndim < 3:
        raise ValueError("reorient_ras takes a volume with 3 spatial axes, not %d axes" % x.ndim)
    osh, _, _, oa = reorient_ras_plan(tuple(x.shape[-3:]), affine)
    where = _core.placement(x)
    out = _core.empty(where, tuple(x.shape[:-3]) + osh, _core.dtype_of(x))
    a, pa = _aff(affine)
    dx, k1 = _core.describe(x, where)
    do, k2 = _core.describe(out, where)
    _call(C["ndf_reorient_ras"](where.ctx, ctypes.byref(dx), pa, ctypes.byref(do)), where.ctx)
    return out, oa


def resample_plan(shape, spacing, new_spacing):
    """(out_shape, scale, offset): output voxel o samples input coordinate o * scale + offset."""
    n = len(shape)
    osh, r, t = (ctypes.c_int64 * n)(), (ctypes.c_double * n)(), (ctypes.c_double * n)()
    _call(C["ndf_resample_plan"](n, _i64(shape), _f64(spacing), _f64(new_spacing), osh, r, t))
    return tuple(osh[:]), np.array(r[:]), np.array(t[:])


def resample(x, affine, spacing, order=1, mode="nearest", cval=0.0, *, output=None):
    """x (last 3 axes spatial) resampled to `spacing` mm (one value or three), kept in place in world
    coordinates: (resampled array, its affine).  float32 output unless output= gives a dtype."""
    x = _readable(x)
    if x.ndim < 3:
        raise ValueError("resample takes a volume with 3 spatial axes, not %d axes" % x.ndim)
    old = affine_spacing(affine)
    new = np.broadcast_to(np.asarray(spacing, dtype=np.float64), (3,))
    osh, r, t = resample_plan(tuple(x.shape[-3:]), old, new)
    a, pa = _aff(affine)
    oa = np.zeros((4, 4))
    _call(C["ndf_resample_affine"](3, pa, _f64(r), _f64(t), oa.ctypes.data_as(ctypes.POINTER(ctypes.c_double))))
    where = _core.placement(x)
    out = _core.empty(where, tuple(x.shape[:-3]) + osh, np.dtype(output or np.float32))
    opt = S["ndf_interp_options"]()
    C["ndf_interp_options_init"](ctypes.byref(opt))
    opt.order = int(order)
    m = ctypes.c_int()
    _call(C["ndf_interp_mode_from_name"](mode.encode(), ctypes.byref(m)))
    opt.mode = m.value
    opt.cval = float(cval)
    opt.batch_dims = x.ndim - 3
    dx, k1 = _core.describe(x, where)
    do, k2 = _core.describe(out, where)
    _call(C["ndf_resample"](where.ctx, ctypes.byref(dx), ctypes.byref(do), _f64(old), _f64(new), ctypes.byref(opt)),
          where.ctx)
    return out, oa


def bbox(mask):
    """(lo, hi, count): the non-zero voxels' bounding box [lo, hi) per axis and their number."""
    m = _readable(mask)
    where = _core.placement(m)
    lo, hi, n = (ctypes.c_int64 * m.ndim)(), (ctypes.c_int64 * m.ndim)(), ctypes.c_int64()
    dm, k = _core.describe(m, where)
    _call(C["ndf_mask_bbox"](where.ctx, ctypes.byref(dm), lo, hi, ctypes.byref(n)), where.ctx)
    return tuple(lo[:]), tuple(hi[:]), n.value


def crop(x, affine, mask, margin=4):
    """x cropped to the bounding box of mask's last 3 axes (shaped like x's) grown by margin voxels
    (one value or three): (cropped array, its affine).  An empty mask raises ValueError."""
    x = _readable(x)
    if x.ndim < 3:
        raise ValueError("crop takes a volume with 3 spatial axes, not %d axes" % x.ndim)
    lo, hi, n = bbox(mask)
    lo, hi = lo[-3:], hi[-3:]
    if n == 0:
        raise ValueError("crop: the mask is empty")
    mg = np.broadcast_to(np.asarray(margin, dtype=np.int64), (3,))
    st, osh = (ctypes.c_int64 * 3)(), (ctypes.c_int64 * 3)()
    a, pa = _aff(affine)
    oa = np.zeros((4, 4))
    _call(C["ndf_crop_plan"](3, _i64(x.shape[-3:]), _i64(lo), _i64(hi), 3, _i64(mg), st, osh, pa,
                             oa.ctypes.data_as(ctypes.POINTER(ctypes.c_double))))
    where = _core.placement(x)
    out = _core.empty(where, tuple(x.shape[:-3]) + tuple(osh[:]), _core.dtype_of(x))
    dx, k1 = _core.describe(x, where)
    do, k2 = _core.describe(out, where)
    _call(C["ndf_crop"](where.ctx, ctypes.byref(dx), st, ctypes.byref(do)), where.ctx)
    return out, oa


def normalize(x, modality="mri", mask=None, preset=None, centre=40.0, width=80.0, *, batch_dims=0, output=None):
    """CT (modality 'ct'): the HU window [centre - width/2, centre + width/2] (or a preset's) mapped to
    [-1, 1]; MRI ('mri'): (x - mean) / std with the statistics of mask's non-zero voxels (all without).
    float32 unless output= gives float64."""
    x = _readable(x)
    where = _core.placement(x)
    opt = S["ndf_normalize_options"]()
    C["ndf_normalize_options_init"](ctypes.byref(opt))
    mo = ctypes.c_int()
    _call(C["ndf_modality_from_name"](str(modality).encode(), ctypes.byref(mo)))
    opt.modality = mo.value
    keep = []
    if preset is not None:
        keep.append(str(preset).encode())
        opt.preset = keep[-1]
    opt.centre, opt.width, opt.batch_dims = float(centre), float(width), int(batch_dims)
    out = _core.empty(where, tuple(x.shape), np.dtype(output or np.float32))
    dx, k1 = _core.describe(x, where)
    do, k2 = _core.describe(out, where)
    pm = None
    if mask is not None:
        m = _readable(mask)
        pm_where = _core.placement(m)
        if (pm_where.kind, pm_where.device, pm_where.device_id) != (where.kind, where.device, where.device_id):
            raise TypeError("ndforge: normalize: mask must be an array of the input's kind and device")
        if tuple(m.shape) != tuple(x.shape):
            raise ValueError("mask must have the input's shape %s, not %s" % (tuple(x.shape), tuple(m.shape)))
        dm, k3 = _core.describe(m, where)
        keep.append((dm, k3))
        pm = ctypes.pointer(dm)
    _call(C["ndf_normalize_modality"](where.ctx, ctypes.byref(dx), pm, ctypes.byref(do), ctypes.byref(opt)),
          where.ctx)
    return out


# N4 bias-field correction and skull stripping (their modules; the same steps as `ndforge preprocess`)
from ._n4 import n4_bias_field_correction  # noqa: E402
from ._bet import skull_strip, mask_fusion, clean_mask  # noqa: E402
