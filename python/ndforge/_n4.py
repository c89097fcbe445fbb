"""N4 bias-field correction on ndforge (ndf_n4_bias_field_correction).

``n4_bias_field_correction`` takes SimpleITK's ``N4BiasFieldCorrection``
keywords (``convergenceThreshold``, ``maximumNumberOfIterations`` -- one count
per fitting level --, ``biasFieldFullWidthAtHalfMaximum``, ``wienerFilterNoise``,
``numberOfHistogramBins``, ``numberOfControlPoints``, ``splineOrder``,
``useMaskLabel``, ``maskLabel``) with their defaults, plus ndforge's:
``shrinkFactor`` (fit on the image shrunk by it, as the N4 tools' ``-s``; the
field is then evaluated at full resolution), ``spacing``, ``weight`` (ITK's
confidence image), ``return_log_bias_field`` and ``return_info``.

The image is a NumPy array (CPU backend) or a CuPy array / torch CUDA tensor
(its GPU); the mask (uint8 or bool) and the weight are arrays of its shape and
kind.  The result is float32 (float64 for float64 images) unless ``output=``
gives a dtype.  Bad arguments raise ValueError with the library's message.
"""

import ctypes

import numpy as np

from . import _core
from ._core import C, S, K

__all__ = ["n4_bias_field_correction"]


def _call(status, ctx):
    if status:
        msg = (C["ndf_errmsg"](ctx) or b"").decode(errors="replace")
        if status == K["NDF_EINVAL"]:
            raise ValueError(msg)
        _core.raise_status(status, ctx)


def _like(a, x, what, dtypes):
    if a is None:
        return None
    a = _core.as_array(a)
    if _core.kind_of(a) != _core.kind_of(x):
        raise TypeError("ndforge: %s must be an array of the image's kind (%s, %s)"
                        % (what, _core.kind_of(a), _core.kind_of(x)))
    if tuple(a.shape) != tuple(x.shape):
        raise ValueError("%s must have the image's shape %s, not %s" % (what, tuple(x.shape), tuple(a.shape)))
    if _core.dtype_of(a) not in dtypes:
        a = a.astype(dtypes[0]) if _core.kind_of(a) != "torch" else a.to(
            getattr(__import__("torch"), str(np.dtype(dtypes[0]))))
    return a


def n4_bias_field_correction(image, maskImage=None, convergenceThreshold=0.001,
                             maximumNumberOfIterations=(50, 50, 50, 50), biasFieldFullWidthAtHalfMaximum=0.15,
                             wienerFilterNoise=0.01, numberOfHistogramBins=200, numberOfControlPoints=4,
                             splineOrder=3, useMaskLabel=True, maskLabel=1, *, shrinkFactor=1, spacing=None,
                             weight=None, output=None, return_log_bias_field=False, return_info=False):
    """The image divided by its N4 bias field (Tustison et al. 2010; ITK's N4BiasFieldCorrectionImageFilter).

    Returns the corrected image; with return_log_bias_field, (corrected, log_bias_field); with return_info, a
    dict {"iterations": [per level], "convergence": last value} appended to the tuple.  The mask selects the
    voxels the fit uses: == maskLabel with useMaskLabel (SimpleITK's default), else non-zero.
    """
    if "ndf_n4_bias_field_correction" not in C:
        raise NotImplementedError("this libndforge has no ndf_n4_bias_field_correction (%s)"
                                  % _core._capi.library_path)
    x = _core.as_array(image)
    dt = _core.dtype_of(x)
    takes = [np.dtype(d) for d in ("uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "float64")]
    if isinstance(dt, str) or dt not in takes:
        x = x.double() if _core.kind_of(x) == "torch" else x.astype(np.float64)
        dt = np.dtype(np.float64)
    where = _core.placement(x)
    m = _like(maskImage, x, "maskImage", [np.dtype(np.uint8), np.dtype(np.bool_)])
    w = _like(weight, x, "weight", [np.dtype(np.float64), np.dtype(np.float32)])
    default = np.float64 if dt == np.float64 else np.float32
    odt = np.dtype(default if output is None else output)
    out = _core.empty(where, tuple(x.shape), odt)
    lb = _core.empty(where, tuple(x.shape), odt) if return_log_bias_field else None

    o = S["ndf_n4_options"]()
    C["ndf_n4_options_init"](ctypes.byref(o))
    iters = [int(v) for v in np.atleast_1d(maximumNumberOfIterations)]
    if not 1 <= len(iters) <= K["NDF_N4_MAX_LEVELS"]:
        raise ValueError("maximumNumberOfIterations: 1 to %d levels, not %d" % (K["NDF_N4_MAX_LEVELS"], len(iters)))
    o.number_of_fitting_levels = len(iters)
    for i, v in enumerate(iters):
        o.maximum_number_of_iterations[i] = v
    o.convergence_threshold = float(convergenceThreshold)
    o.spline_order = int(splineOrder)
    ncp = [int(v) for v in np.atleast_1d(numberOfControlPoints)]
    if len(ncp) == x.ndim and len(set(ncp)) == 1:
        ncp = ncp[:1]
    if not 1 <= len(ncp) <= K["NDF_MAX_SPATIAL"]:
        raise ValueError("numberOfControlPoints: one value or one per axis")
    o.nnumber_of_control_points = len(ncp)
    for i, v in enumerate(ncp):
        o.number_of_control_points[i] = v
    o.bias_field_full_width_at_half_maximum = float(biasFieldFullWidthAtHalfMaximum)
    o.wiener_filter_noise = float(wienerFilterNoise)
    o.number_of_histogram_bins = int(numberOfHistogramBins)
    o.shrink_factor = int(shrinkFactor)
    if spacing is not None:
        sp = [float(v) for v in np.atleast_1d(spacing)]
        if not 1 <= len(sp) <= K["NDF_MAX_SPATIAL"]:
            raise ValueError("spacing: one value or one per axis")
        o.nspacing = len(sp)
        for i, v in enumerate(sp):
            o.spacing[i] = v
    if m is not None and useMaskLabel:
        if not 1 <= int(maskLabel) <= 255:
            raise ValueError("maskLabel %d is outside 1..255" % int(maskLabel))
        o.mask_label = int(maskLabel)

    r = S["ndf_n4_result"]()
    keep = []
    def ref(a):
        if a is None:
            return None
        d, k = _core.describe(a, where)
        keep.append((d, k))
        return ctypes.byref(d)
    _call(C["ndf_n4_bias_field_correction"](where.ctx, ref(x), ref(m), ref(w), ref(out), ref(lb),
                                            ctypes.byref(o), ctypes.byref(r)), where.ctx)
    res = [out]
    if return_log_bias_field:
        res.append(lb)
    if return_info:
        res.append({"iterations": [int(r.iterations[i]) for i in range(r.number_of_fitting_levels)],
                    "convergence": float(r.convergence)})
    return res[0] if len(res) == 1 else tuple(res)
