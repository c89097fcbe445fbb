"""Skull stripping of T1 brain MRI by FSL BET's method, and the brain-mask helpers, on ndforge.

``skull_strip(image, spacing, f, g)``: the brain mask of a 3-D volume by BET's deformable surface
(Smith 2002), BET's options under its names (``f`` the fractional intensity threshold, ``g`` its
vertical gradient along the third axis, ``radius`` and ``centre`` the initial sphere's, in mm and in
voxels); NumPy arrays run on the CPU, CuPy arrays and torch CUDA tensors on their GPU, with the same
mask bit for bit.  ``mask_fusion`` votes several masks with weights (T1 0.5 / T2 0.3 / FLAIR 0.2),
``clean_mask`` opens with a ball, keeps the largest component and fills its holes.  Both take NumPy
arrays, torch tensors and CuPy arrays and return a bool array of the input's kind and device; the library
computes them on the CPU only, so NumPy arrays and torch CPU tensors go in zero-copy (bool masks as a
uint8 copy) while CUDA masks are copied to the host and the result copied back to their device (on the
caller's current stream; the copies synchronize with it).  include/ndforge.h documents every rule.
"""

import ctypes

import numpy as np

from . import _core
from ._core import C, S

__all__ = ["skull_strip", "mask_fusion", "clean_mask"]

_READS = tuple(np.dtype(d) for d in ("uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "float64"))


def _need(fn):
    if fn not in C:
        raise NotImplementedError("this libndforge has no %s (%s)" % (fn, _core._capi.library_path))


def _three(name, v):
    vals = [float(x) for x in np.atleast_1d(np.asarray(v, dtype=np.float64))]
    if len(vals) == 1:
        vals *= 3
    if len(vals) != 3:
        raise ValueError("ndforge: %s takes one value or three (got %d)" % (name, len(vals)))
    return vals


def skull_strip(image, spacing=None, f=0.5, g=0.0, *, radius=None, centre=None, iterations=1000):
    """The brain mask (bool, the image's shape and device) of a 3-D T1 MRI by FSL BET's method.

    spacing: mm per voxel, one value or one per axis (default 1); f: BET's -f in [0, 1]; g: BET's -g in
    [-1, 1] (along the third axis: NIfTI's z); radius: BET's -r in mm (default estimated); centre:
    BET's -c in voxels (default estimated); iterations: surface updates per pass (1000, BET's).
    """
    _need("ndf_skull_strip")
    image = _core.as_array(image)
    if image.ndim != 3:
        raise ValueError("ndforge: skull_strip takes a 3-D image (got %d axes)" % image.ndim)
    dt = _core.dtype_of(image)
    if isinstance(dt, str) or dt == np.float16:
        image = image.float() if _core.kind_of(image) == "torch" else image.astype(np.float32)
    elif dt not in _READS:  # bool, 64-bit integers: a float64 copy
        image = image.double() if _core.kind_of(image) == "torch" else image.astype(np.float64)
    where = _core.placement(image)
    ctx = where.ctx
    opt = S["ndf_skull_strip_options"]()
    C["ndf_skull_strip_options_init"](ctypes.byref(opt))
    opt.fractional_intensity_threshold = float(f)
    opt.vertical_gradient = float(g)
    if radius is not None:
        opt.radius = float(radius)
    if centre is not None:
        opt.has_centre = 1
        opt.centre[:] = _three("centre", centre)
    opt.iterations = int(iterations)
    sp = None
    if spacing is not None:
        sp = (ctypes.c_double * 3)(*_three("spacing", spacing))
    out = _core.empty(where, tuple(image.shape), np.bool_)
    di, ki = _core.describe(image, where)
    do, ko = _core.describe(out, where)
    _core.check(C["ndf_skull_strip"](ctx, ctypes.byref(di), sp, ctypes.byref(do), ctypes.byref(opt)), ctx)
    return out


class _OnHost:
    """Host views of masks for the CPU-only mask calls, and their result brought back where they live."""

    def __init__(self, first, name):
        self.first = _core.as_array(first)
        self.where = _core.placement(self.first)  # of the caller's arrays
        self.cuda = self.where.device != _core.HOST.device
        self.name = name

    def host(self, m, what):
        """m (a mask of the first's kind and device) as a host array the library reads."""
        m = _core.as_array(m)
        p = _core.placement(m)
        if p.kind != self.where.kind or (p.device, p.device_id) != (self.where.device, self.where.device_id):
            raise TypeError("ndforge: %s: %s must be an array of the first mask's kind and device" % (self.name, what))
        if self.cuda:
            m = _core.to_host_numpy(m)  # the documented copy: the library has no CUDA mask_fusion / mask_clean
        dt = _core.dtype_of(m)
        if isinstance(dt, str) or dt not in _READS:  # bool, float16, 64-bit: uint8 (fusion and cleaning test != 0)
            m = (m != 0).to(__import__("torch").uint8) if _core.kind_of(m) == "torch" else (m != 0).astype(np.uint8)
        return m

    def placement(self):
        return _core.HOST if self.cuda else self.where

    def output(self, shape):
        return _core.empty(self.placement(), shape, np.bool_)

    def back(self, out):
        """out (written on the host) as an array of the first mask's kind on its device."""
        if not self.cuda:
            return out
        if self.where.kind == "torch":
            import torch
            return torch.from_numpy(out).to("cuda:%d" % self.where.device_id)
        import cupy
        with cupy.cuda.Device(self.where.device_id):
            return cupy.asarray(out)


def mask_fusion(masks, weights=None, threshold=0.5):
    """Weighted voting of masks of one shape: True where sum(w_i [m_i != 0]) > threshold * sum(w_i).

    A vote exactly at the threshold is out.  weights: one >= 0 per mask (default all 1), e.g.
    (0.5, 0.3, 0.2) for T1, T2 and FLAIR.  The masks are NumPy arrays, torch tensors or CuPy arrays, all of
    one kind and device; the result is a bool array of that kind and device (CUDA masks: computed on the
    CPU from host copies, see the module's notes).
    """
    _need("ndf_mask_fusion")
    masks = list(masks)
    if not masks:
        raise ValueError("ndforge: mask_fusion needs at least one mask")
    on = _OnHost(masks[0], "mask_fusion")
    arrs = [on.host(m, "masks[%d]" % i) for i, m in enumerate(masks)]
    shape = tuple(arrs[0].shape)
    for a in arrs:
        if tuple(a.shape) != shape:
            raise ValueError("ndforge: the masks' shapes differ (%s, %s)" % (shape, tuple(a.shape)))
    where = on.placement()
    ctx = where.ctx
    descs = [_core.describe(a, where) for a in arrs]
    ptrs = (ctypes.POINTER(S["ndf_array"]) * len(arrs))(*[ctypes.pointer(d) for d, _ in descs])
    w = None
    if weights is not None:
        wl = [float(x) for x in np.atleast_1d(np.asarray(_core.to_host_numpy(weights), dtype=np.float64))]
        if len(wl) != len(arrs):
            raise ValueError("ndforge: %d weights for %d masks" % (len(wl), len(arrs)))
        w = (ctypes.c_double * len(wl))(*wl)
    out = on.output(shape)
    do, ko = _core.describe(out, where)
    _core.check(C["ndf_mask_fusion"](ctx, ptrs, len(arrs), w, float(threshold), ctypes.byref(do)), ctx)
    return on.back(out)


def clean_mask(mask, opening_radius=1, largest_component=True, fill_holes=True, connectivity=1):
    """A mask cleaned up: binary opening with a ball of opening_radius voxels (0: none), the largest
    connected component (connectivity as generate_binary_structure's), its holes filled.  The mask is a
    NumPy array, torch tensor or CuPy array; the result is a bool array of its kind and device (a CUDA mask:
    computed on the CPU from a host copy, see the module's notes)."""
    _need("ndf_mask_clean")
    on = _OnHost(mask, "clean_mask")
    a = on.host(mask, "mask")
    where = on.placement()
    ctx = where.ctx
    opt = S["ndf_mask_clean_options"]()
    C["ndf_mask_clean_options_init"](ctypes.byref(opt))
    opt.opening_radius = int(opening_radius)
    opt.largest_component = 1 if largest_component else 0
    opt.fill_holes = 1 if fill_holes else 0
    opt.connectivity = int(connectivity)
    out = on.output(tuple(a.shape))
    di, ki = _core.describe(a, where)
    do, ko = _core.describe(out, where)
    _core.check(C["ndf_mask_clean"](ctx, ctypes.byref(di), ctypes.byref(do), ctypes.byref(opt)), ctx)
    return on.back(out)
