"""scikit-image's image metrics on ndforge (where the library has them), plus Dice and Jaccard.

``mean_squared_error``, ``normalized_root_mse``, ``peak_signal_noise_ratio``,
``structural_similarity`` and ``hausdorff_distance`` with skimage.metrics'
signatures and values (scikit-image 0.19's arithmetic and defaults), and
``dice_coefficient`` / ``jaccard_index`` of the non-zero masks.  Extra
keywords: ``batch_dims`` (one value per image of the leading axes) and, for
``hausdorff_distance``, ``sampling`` and ``percentile`` (95: the HD95).

The inputs are NumPy arrays or tensors of one framework and device.  A value
comes back as NumPy's float64 for NumPy inputs, and as a 0-d float64 tensor
or CuPy array on the inputs' device otherwise (the call does not wait for the
GPU); with ``batch_dims`` an array of the batch's shape.  64-bit integer
inputs are read in a float64 copy and float16 / bfloat16 ones in a float32
copy, as scikit-image converts them.
"""

import ctypes

import numpy as np

from . import _core
from ._core import C, S

__all__ = ["mean_squared_error", "normalized_root_mse", "peak_signal_noise_ratio", "structural_similarity",
           "hausdorff_distance", "dice_coefficient", "jaccard_index"]

_READS = tuple(np.dtype(d) for d in ("bool", "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
                                     "float64", "int64", "uint64"))


def _readable(x):
    dt = _core.dtype_of(x)
    if isinstance(dt, str) or dt == np.float16:
        return x.float() if _core.kind_of(x) == "torch" else x.astype(np.float32)
    if dt not in _READS:
        if _core.kind_of(x) == "torch":
            return x.double()
        return x.astype(np.float64)
    return x


def _pair(a, b):
    a, b = _core.as_array(a), _core.as_array(b)
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError("Input images must have the same dimensions.")
    if _core.kind_of(a) != _core.kind_of(b):
        raise TypeError("ndforge: both images must be arrays of one kind (%s, %s)"
                        % (_core.kind_of(a), _core.kind_of(b)))
    return a, b


def _value(out, where, batch_dims):
    if batch_dims:
        return out
    return np.float64(out[()]) if where.kind == "numpy" else out


def _metric(fn, a, b, opt, batch_dims):
    if fn not in C:
        raise NotImplementedError("this libndforge has no %s (%s)" % (fn, _core._capi.library_path))
    a, b = _pair(a, b)
    where = _core.placement(a)
    ctx = where.ctx
    opt.batch_dims = int(batch_dims)
    a, b = _readable(a), _readable(b)
    out = _core.empty(where, tuple(a.shape[:opt.batch_dims]), np.float64)
    da, ka = _core.describe(a, where)
    db, kb = _core.describe(b, where)
    do, ko = _core.describe(out, where)
    _core.check(C[fn](ctx, ctypes.byref(da), ctypes.byref(db), ctypes.byref(do), ctypes.byref(opt)), ctx)
    return _value(out, where, opt.batch_dims)


def _options():
    opt = S["ndf_metrics_options"]()
    C["ndf_metrics_options_init"](ctypes.byref(opt))
    return opt


def mean_squared_error(image0, image1, *, batch_dims=0):
    """skimage.metrics.mean_squared_error on ndforge (extra keyword: batch_dims)."""
    return _metric("ndf_mean_squared_error", image0, image1, _options(), batch_dims)


def normalized_root_mse(image_true, image_test, *, normalization="euclidean", batch_dims=0):
    """skimage.metrics.normalized_root_mse on ndforge (extra keyword: batch_dims)."""
    opt = _options()
    m = ctypes.c_int()
    if not isinstance(normalization, str) or C["ndf_nrmse_norm_from_name"](normalization.encode(), ctypes.byref(m)):
        raise ValueError("Unsupported norm_type")
    opt.normalization = m.value
    return _metric("ndf_normalized_root_mse", image_true, image_test, opt, batch_dims)


def peak_signal_noise_ratio(image_true, image_test, *, data_range=None, batch_dims=0):
    """skimage.metrics.peak_signal_noise_ratio on ndforge (extra keyword: batch_dims)."""
    opt = _options()
    if data_range is not None:
        opt.data_range = float(data_range)
    return _metric("ndf_peak_signal_noise_ratio", image_true, image_test, opt, batch_dims)


def dice_coefficient(mask0, mask1, *, batch_dims=0):
    """2 |A & B| / (|A| + |B|) of the non-zero masks (1 when both are empty)."""
    return _metric("ndf_dice_coefficient", mask0, mask1, _options(), batch_dims)


def jaccard_index(mask0, mask1, *, batch_dims=0):
    """|A & B| / |A | B| of the non-zero masks (1 when both are empty)."""
    return _metric("ndf_jaccard_index", mask0, mask1, _options(), batch_dims)


def hausdorff_distance(image0, image1, *, sampling=None, percentile=100, batch_dims=0):
    """skimage.metrics.hausdorff_distance on ndforge: the non-zero points' Hausdorff distance (extra keywords:
    sampling, the spacing per axis; percentile, e.g. 95 for the HD95; batch_dims)."""
    opt = _options()
    opt.percentile = float(percentile)
    if sampling is not None:
        vals = [float(s) for s in np.atleast_1d(np.asarray(sampling, dtype=np.float64))]
        opt.nsampling = len(vals)
        opt.sampling[:len(vals)] = vals
    return _metric("ndf_hausdorff_distance", image0, image1, opt, batch_dims)


def structural_similarity(im1, im2, *, win_size=None, gradient=False, data_range=None, channel_axis=None,
                          multichannel=False, gaussian_weights=False, full=False, batch_dims=0, **kwargs):
    """skimage.metrics.structural_similarity on ndforge (scikit-image 0.19's defaults: a float image's data
    range defaults to 2, its dtype range [-1, 1], where scikit-image 0.26 requires data_range; docs/adr/0033);
    kwargs K1, K2, sigma, use_sample_covariance as skimage; extra keyword batch_dims.  gradient=True is not
    supported."""
    if "ndf_structural_similarity" not in C:
        raise NotImplementedError("this libndforge has no ndf_structural_similarity")
    if gradient:
        raise NotImplementedError("ndforge: structural_similarity(gradient=True) is not supported")
    unknown = set(kwargs) - {"K1", "K2", "sigma", "use_sample_covariance"}
    if unknown:
        raise TypeError("structural_similarity() got unexpected keyword arguments %s" % sorted(unknown))
    a, b = _pair(im1, im2)
    if multichannel and channel_axis is None:
        channel_axis = -1
    nb = int(batch_dims)
    perm = None
    if channel_axis is not None:  # the channels become one more batch axis, averaged afterwards
        c = channel_axis % a.ndim
        if c < nb:
            raise ValueError("channel_axis must not be a batch axis")
        perm = list(range(nb)) + [c] + [i for i in range(nb, a.ndim) if i != c]
        a, b = _core_permute(a, perm), _core_permute(b, perm)
        nb += 1
    opt = S["ndf_ssim_options"]()
    C["ndf_ssim_options_init"](ctypes.byref(opt))
    if win_size is not None:
        opt.win_size = int(win_size)
    opt.gaussian_weights = 1 if gaussian_weights else 0
    for k in ("K1", "K2", "sigma"):
        if k in kwargs:
            setattr(opt, k, float(kwargs[k]))
    if "use_sample_covariance" in kwargs:
        opt.use_sample_covariance = 1 if kwargs["use_sample_covariance"] else 0
    if data_range is not None:
        opt.data_range = float(data_range)
    opt.batch_dims = nb
    where = _core.placement(a)
    ctx = where.ctx
    fdt = np.float32 if _core.dtype_of(a) == np.float32 else np.float64
    a, b = _readable(a), _readable(b)
    mssim = _core.empty(where, tuple(a.shape[:nb]), np.float64)
    smap = _core.empty(where, tuple(a.shape), fdt) if full else None
    da, ka = _core.describe(a, where)
    db, kb = _core.describe(b, where)
    dm, km = _core.describe(mssim, where)
    ds, kf = _core.describe(smap, where) if full else (None, None)
    _core.check(C["ndf_structural_similarity"](ctx, ctypes.byref(da), ctypes.byref(db), ctypes.byref(dm),
                                               ctypes.byref(ds) if full else None, ctypes.byref(opt)), ctx)
    if perm is not None:
        mssim = mssim.mean(-1) if where.kind != "torch" else mssim.mean(dim=-1)
        if full:
            inv = [perm.index(i) for i in range(len(perm))]
            smap = _core_permute(smap, inv)
        nb -= 1
    value = _value(mssim, where, nb)
    return (value, smap) if full else value


def _core_permute(x, perm):
    return x.permute(*perm) if _core.kind_of(x) == "torch" else x.transpose(perm)
