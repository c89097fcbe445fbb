"""ndforge.ndimage's linear filters against scipy.ndimage (skipped where the library has none), on the
array kinds of NDFORGE_TEST_ARRAYS (arrays.py)."""

import inspect
import os
import sys

import numpy as np
import pytest
import scipy.ndimage as sn

import ndforge.ndimage
from ndforge import _capi
from arrays import OnArrays, fixture

# The references for axes= that any scipy runs (compositions of scipy calls) are the C tests' oracle's,
# imported from the source tree: gauss_terms (the Gaussian derivative filters over axes as ndforge
# defines them) and generic_terms (scipy's generic_laplace / generic_gradient_magnitude loop).
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tests"))
from oracle_filters import gauss_terms, generic_terms, laplace_d2 as d2_ref  # noqa: E402

pytestmark = pytest.mark.skipif("ndf_correlate1d" not in _capi.functions,
                                reason="this libndforge has no linear filters")
nd = OnArrays(ndforge.ndimage)
array_kind = fixture(nd)

DTYPES = [np.uint8, np.int16, np.int32, np.float32, np.float64]
# scipy >= 1.15 takes axes= in the Laplace and gradient-magnitude filters (Debian's 1.10 does not)
SCIPY_AXES = "axes" in inspect.signature(sn.gaussian_laplace).parameters
MODES = ["reflect", "constant", "nearest", "mirror", "wrap"]


def data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.normal(size=shape).astype(dt)
    if dt.kind == "b":
        return rng.random(shape) > 0.5
    return rng.integers(0, 100, size=shape).astype(dt)


def same(a, b, gaussian=False):
    """Equal; the Gaussian kernels within a few units in the last place (ndforge.h: the C library's exp
    against NumPy's, which differ on CPUs with AVX-512), so integer outputs within 1."""
    assert type(a) is type(b) and a.dtype == b.dtype, (type(a), a.dtype, b.dtype)
    if not gaussian:
        np.testing.assert_array_equal(a, b)
    elif a.dtype.kind == "f":
        np.testing.assert_allclose(a, b, rtol=1e-5 if a.dtype.itemsize < 8 else 1e-12, atol=1e-12)
    else:
        assert np.abs(a.astype(np.float64) - b.astype(np.float64)).max(initial=0) <= 1


CASES = [
    ("correlate1d", ([1.0, -2.0, 0.5],), dict(axis=0, origin=1)),
    ("convolve1d", ([0.25, 0.5, 0.25, 1.0],), dict(axis=-1)),
    ("correlate", (np.array([[0, 1, 0], [1, -4, 2]], float),), {}),
    ("convolve", (np.array([[1, 2], [3, 4]], float),), dict(origin=(0, -1))),
    ("uniform_filter1d", (4,), dict(axis=1, origin=-1)),
    ("uniform_filter", (), dict(size=(3, 5))),
    ("gaussian_filter1d", (1.5,), dict(axis=0, order=1)),
    ("gaussian_filter", (1.0,), dict(order=(0, 2), truncate=3.0)),
    ("sobel", (), dict(axis=0)),
    ("prewitt", (), {}),
    ("laplace", (), {}),
    ("gaussian_laplace", (1.2,), {}),
    ("gaussian_gradient_magnitude", (0.8,), {}),
]


@pytest.mark.parametrize("name,args,kw", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("dtype", DTYPES)
def test_filters(name, args, kw, dtype):
    x = data((13, 17), dtype)
    same(getattr(nd, name)(x, *args, **kw), getattr(sn, name)(x, *args, **kw), "gaussian" in name)


@pytest.mark.parametrize("name,args,kw", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("mode", MODES)
def test_modes(name, args, kw, mode):
    x = data((9, 8, 7), np.float64)
    if name in ("correlate", "convolve"):
        args = (args[0][..., None] * np.array([1.0, 0.5]),)
        kw = dict(kw, origin=0)
    if name == "uniform_filter":
        kw = dict(size=(3, 5, 2))
    if name == "gaussian_filter":
        kw = dict(order=(0, 2, 1), truncate=3.0)
    same(getattr(nd, name)(x, *args, mode=mode, cval=1.5, **kw),
         getattr(sn, name)(x, *args, mode=mode, cval=1.5, **kw), "gaussian" in name)


def test_output_forms_and_inputs_the_library_reads_as_double():
    x = data((12, 11), np.uint8)
    same(nd.uniform_filter(x, 3, output=np.float32), sn.uniform_filter(x, 3, output=np.float32))
    out = np.zeros(x.shape, np.int16)
    assert nd.gaussian_filter(x, 1.0, output=out) is out
    same(out, sn.gaussian_filter(x, 1.0, output=np.int16), True)
    for dt in (np.int64, np.uint64, np.bool_):
        y = data((12, 11), dt)
        same(nd.correlate1d(y, [1, 1, 1]), sn.correlate1d(y, [1, 1, 1]))
    h = data((12, 11), np.float16)  # an extension (scipy refuses float16): double sums, rounded once
    same(nd.correlate1d(h, [0.3, 1, 0.3]), sn.correlate1d(h.astype(np.float64), [0.3, 1, 0.3]).astype(np.float16))
    same(nd.sobel(x, output=np.bool_), sn.sobel(x, output=np.bool_))
    t = data((14, 9), np.float32).T
    same(nd.laplace(t), sn.laplace(t))


CHAINS = [c for c in CASES if c[0] not in ("laplace", "gaussian_laplace", "gaussian_gradient_magnitude")]


def same_bytes(a, b, gaussian=False):
    """Equal dtype and bytes (a bool output may hold bytes other than 0 and 1, as scipy's does); the
    Gaussian filters' bytes within 1 (see same)."""
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    u, v = a.view(np.uint8).astype(int), b.view(np.uint8).astype(int)
    assert np.abs(u - v).max(initial=0) <= (1 if gaussian else 0), (u, v)


@pytest.mark.parametrize("name,args,kw", CHAINS, ids=[c[0] for c in CHAINS])
def test_bool_as_scipy(name, args, kw):
    """scipy 1.10: a bool input gives a bool output holding C's cast of each value to unsigned char, the
    intermediate passes too; a bool output of another input the same; a bool input read as 0 and 1."""
    b = data((13, 17), np.bool_, seed=3)
    g = "gaussian" in name
    got, want = getattr(nd, name)(b, *args, **kw), getattr(sn, name)(b, *args, **kw)
    same_bytes(got, want, g)
    if name in ("correlate", "sobel", "prewitt", "uniform_filter1d"):  # sums beyond 1 and below 0
        assert want.view(np.uint8).max() > 1 or name == "uniform_filter1d"
    x = data((13, 17), np.int16, seed=4)
    same_bytes(getattr(nd, name)(x, *args, output=np.bool_, **kw), getattr(sn, name)(x, *args, output=np.bool_, **kw), g)
    same(getattr(nd, name)(b, *args, output=np.float64, **kw), getattr(sn, name)(b, *args, output=np.float64, **kw), g)


@pytest.mark.parametrize("name,args,kw", [c for c in CASES if c not in CHAINS])
def test_bool_input_of_the_sums_of_terms(name, args, kw):
    """laplace and the Gaussian derivative filters read a bool input as 0 and 1 (a bool output is listed
    in the module's notes: scipy adds the terms with NumPy's bool arithmetic)."""
    b = data((13, 17), np.bool_, seed=5)
    same(getattr(nd, name)(b, *args, output=np.float64, **kw), getattr(sn, name)(b, *args, output=np.float64, **kw),
         "gaussian" in name)
    same(getattr(nd, name)(b, *args, output=np.int16, **kw), getattr(sn, name)(b, *args, output=np.int16, **kw),
         "gaussian" in name)


def test_sequences_of_modes_radius_and_batch():
    x = data((10, 12), np.float64)
    same(nd.gaussian_filter(x, (1.0, 2.0), mode=["wrap", "nearest"]),
         sn.gaussian_filter(x, (1.0, 2.0), mode=["wrap", "nearest"]), True)
    same(nd.gaussian_filter1d(x, 2.0, radius=3), sn.gaussian_filter1d(x, 2.0, radius=3), True)
    same(nd.sobel(x, mode=["constant", "mirror"]), sn.sobel(x, mode=["constant", "mirror"]))
    b = data((3, 10, 12), np.float32)
    same(nd.uniform_filter(b, 3, batch_dims=1), np.stack([sn.uniform_filter(b[i], 3) for i in range(3)]))


ERRORS = [
    ("correlate1d", ([],), {}),
    ("correlate1d", ([1, 2, 3],), dict(origin=2)),
    ("correlate", (np.ones((3, 3, 3)),), {}),
    ("correlate", (np.ones((3, 3)),), dict(mode=["reflect", "wrap"])),
    ("uniform_filter1d", (0,), {}),
    ("gaussian_filter1d", (1.0,), dict(order=-1)),
    ("gaussian_filter1d", (1.0,), dict(radius=-2)),
    ("gaussian_filter", (1.0,), dict(mode="bogus")),
]


@pytest.mark.parametrize("name,args,kw", ERRORS, ids=["%s-%d" % (e[0], i) for i, e in enumerate(ERRORS)])
def test_error_types(name, args, kw):
    x = data((6, 7), np.float32)
    with pytest.raises(Exception) as ref:
        getattr(sn, name)(x, *args, **kw)
    with pytest.raises(Exception) as got:
        getattr(nd, name)(x, *args, **kw)
    assert type(got.value) is type(ref.value), (got.value, ref.value)


# --- axes= of the Laplace and gradient-magnitude filters ------------------------------------------------

AXES_CASES = [
    dict(axes=(0,), sigma=1.3),
    dict(axes=(2, 0), sigma=(0.8, 1.6), mode=("wrap", "nearest")),
    dict(axes=(-1, 1), sigma=1.1, mode="constant", cval=2.5, truncate=3.0),
    dict(axes=(1, 2, 0), sigma=(1.0, 0.7, 1.4), mode=("mirror", "reflect", "constant"), cval=-1.0),
    dict(axes=(0, 1, 2), sigma=0.9, radius=(2, 3, 1)),
    dict(axes=1, sigma=2.0, radius=4),
]


@pytest.mark.parametrize("name,order", [("gaussian_laplace", 2), ("gaussian_gradient_magnitude", 1)])
@pytest.mark.parametrize("case", AXES_CASES, ids=[str(i) for i in range(len(AXES_CASES))])
@pytest.mark.parametrize("dtype", [np.int16, np.float32, np.float64])
def test_gaussian_derivatives_over_axes(name, order, case, dtype):
    x = data((9, 11, 8), dtype, seed=4)
    kw = dict(case)
    axes = kw.pop("axes")
    sigma = kw.pop("sigma")
    mode, cval = kw.pop("mode", "reflect"), kw.pop("cval", 0.0)
    truncate, radius = kw.get("truncate", 4.0), kw.get("radius")
    got = getattr(nd, name)(x, sigma, None, mode, cval, axes=axes, **kw)
    ax = [a % x.ndim for a in ((axes,) if np.ndim(axes) == 0 else axes)]
    same(got, gauss_terms(x, sigma, ax, order, x.dtype, mode, cval, truncate, radius), True)
    # scipy's own, where it takes axes and its code does what its documentation says (ndforge/_filters.py):
    # gaussian_gradient_magnitude only where axes lists every axis, and a sigma per axis only in increasing
    # axis order where axes lists every axis (scipy 1.15-1.17 then reads it per input axis)
    per_input_axis = len(ax) == x.ndim and np.ndim(sigma) > 0 and ax != sorted(ax)
    if SCIPY_AXES and (order == 2 or len(ax) == x.ndim) and not per_input_axis and np.ndim(radius) == 0:
        same(got, getattr(sn, name)(x, sigma, None, mode, cval, axes=axes, **kw), True)


def test_gaussian_derivatives_axes_untouched_and_batched():
    x = data((4, 12, 10), np.float64, seed=5)
    # one listed axis: the unlisted axes are not smoothed, so each line along axis 1 is filtered alone
    r = nd.gaussian_gradient_magnitude(x, 1.5, axes=(1,))
    same(r, np.abs(sn.gaussian_filter1d(x, 1.5, axis=1, order=1)), True)
    r = nd.gaussian_laplace(x, 1.5, axes=(1,), mode="nearest")
    same(r, sn.gaussian_filter1d(x, 1.5, axis=1, order=2, mode="nearest"), True)
    # axes with batch_dims: the listed axes are spatial axes, every image alone
    r = nd.gaussian_laplace(x, (1.0, 2.0), axes=(-1, 1), batch_dims=1)
    same(r, np.stack([gauss_terms(x[i], (1.0, 2.0), [1, 0], 2, np.float64, "reflect", 0.0, 4.0, None)
                      for i in range(4)]), True)
    # output dtypes: the terms are added (and squared) in the output's dtype
    r = nd.gaussian_laplace(x * 50, 1.0, np.float32, axes=(2, 0))
    same(r, gauss_terms(x * 50, 1.0, [2, 0], 2, np.float32, "reflect", 0.0, 4.0, None), True)


@pytest.mark.parametrize("name", ["gaussian_filter", "uniform_filter", "laplace", "gaussian_laplace",
                                  "gaussian_gradient_magnitude"])
def test_no_axes_copies_the_input(name):
    x = data((7, 9), np.float64) * 10 + 50
    args = () if name in ("laplace", "uniform_filter") else (1.0,)
    same(getattr(nd, name)(x, *args, axes=()), x)
    same(getattr(nd, name)(x, *args, output=np.uint8, axes=()), x.astype(np.uint8))
    z = x - 50  # output[...] = input: NumPy's cast to bool (not 0), 0.3 is True
    np.testing.assert_array_equal(getattr(nd, name)(z, *args, output=np.bool_, axes=()).view(np.uint8),
                                  (z != 0).view(np.uint8))
    b = z > 0
    np.testing.assert_array_equal(getattr(nd, name)(b, *args, axes=()), b)
    same(nd.correlate(x, np.array(2.0), axes=()), 2 * x)


AXES_ERRORS = [
    ("gaussian_laplace", dict(axes=(0, 0))),  # ValueError: axes must be unique
    ("gaussian_laplace", dict(axes=(2,))),  # ValueError: out of range
    ("gaussian_laplace", dict(axes=(0,), mode=["reflect", "wrap"])),  # RuntimeError: one mode per axis
    ("gaussian_gradient_magnitude", dict(axes=(-3,))),
    ("gaussian_gradient_magnitude", dict(axes=(1, -1))),
]


@pytest.mark.skipif(not SCIPY_AXES, reason="scipy takes no axes= here")
@pytest.mark.parametrize("name,kw", AXES_ERRORS, ids=[str(i) for i in range(len(AXES_ERRORS))])
def test_axes_error_types(name, kw):
    x = data((6, 7), np.float32)
    with pytest.raises(Exception) as ref:
        getattr(sn, name)(x, 1.0, **kw)
    with pytest.raises(Exception) as got:
        getattr(nd, name)(x, 1.0, **kw)
    assert type(got.value) is type(ref.value), (got.value, ref.value)


def test_axes_error_types_without_scipy():
    x = data((6, 7), np.float32)
    for kw, err in ((dict(axes=(0, 0)), ValueError), (dict(axes=(2,)), ValueError),
                    (dict(axes=(0,), mode=["reflect", "wrap"]), RuntimeError)):
        for name in ("gaussian_laplace", "gaussian_gradient_magnitude"):
            with pytest.raises(err):
                getattr(nd, name)(x, 1.0, **kw)
    with pytest.raises(RuntimeError):  # sigma: one value or one per listed axis
        nd.gaussian_laplace(x, (1.0, 2.0), axes=(0,))


# --- generic_laplace / generic_gradient_magnitude ------------------------------------------------------

def d2(input, axis, output, mode, cval):
    """scipy's laplace derivative, written with ndforge.ndimage so that it runs on any array kind."""
    return ndforge.ndimage.correlate1d(input, [1, -2, 1], axis, output, mode, cval, 0)


def d1(input, axis, output, mode, cval, sigma, **kw):
    return ndforge.ndimage.gaussian_filter1d(input, sigma, axis, 1, output, mode, cval, **kw)


def d1_ref(input, axis, output, mode, cval, sigma, **kw):
    return sn.gaussian_filter1d(input, sigma, axis, 1, output, mode, cval, **kw)


@pytest.mark.parametrize("axes", [None, (1,), (2, 0), (-1, 0, 1)])
@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.float32])
def test_generic_laplace_and_gradient_magnitude(axes, dtype):
    x = data((8, 9, 7), dtype, seed=6)
    ax = [0, 1, 2] if axes is None else [a % 3 for a in axes]
    modes = ["reflect", "wrap", "nearest"][:len(ax)]
    mode = "mirror" if axes is None else modes
    ref_modes = [mode] * 3 if axes is None else modes
    got = nd.generic_laplace(x, d2, None, mode, 1.5, axes=axes)
    same(got, generic_terms(x, d2_ref, ax, None, ref_modes, 1.5, (), {}, False))
    got = nd.generic_gradient_magnitude(x, d1, np.float64, mode, 0.5, extra_arguments=(1.2,),
                                        extra_keywords=dict(truncate=3.0), axes=axes)
    same(got, generic_terms(x, d1_ref, ax, np.float64, ref_modes, 0.5, (1.2,), dict(truncate=3.0), True), True)
    got = nd.generic_gradient_magnitude(x, d1, None, mode, 0.5, extra_arguments=(1.2,), axes=axes)
    same(got, generic_terms(x, d1_ref, ax, None, ref_modes, 0.5, (1.2,), {}, True), True)
    if axes is None or SCIPY_AXES:  # scipy's own
        kw = {} if axes is None else dict(axes=axes)
        same(nd.generic_laplace(x, d2, None, mode, 1.5, **kw), sn.generic_laplace(x, d2_ref, None, mode, 1.5, **kw))


def test_generic_output_forms_and_errors():
    x = data((6, 5), np.float64, seed=7)
    out = np.zeros(x.shape, np.float32)
    nd.generic_laplace(x, d2, out)
    np.testing.assert_array_equal(out, sn.generic_laplace(x, d2_ref, np.zeros(x.shape, np.float32)))
    same(nd.generic_laplace(x, d2, axes=()), x)
    with pytest.raises(RuntimeError):
        nd.generic_laplace(x, d2, np.zeros((5, 6)))
    with pytest.raises(RuntimeError):
        nd.generic_laplace(x, d2, mode=["reflect"], axes=(0, 1))
    with pytest.raises(ValueError):
        nd.generic_gradient_magnitude(x, d2, axes=(1, 1))
    with pytest.raises(ValueError):
        nd.generic_gradient_magnitude(x, d2, axes=(2,))
    assert nd.generic_laplace(x, d2, output=out) is out
