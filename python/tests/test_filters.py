"""ndforge.ndimage's linear filters against scipy.ndimage (skipped where the library has none), on the
array kinds of NDFORGE_TEST_ARRAYS (arrays.py)."""

import numpy as np
import pytest
import scipy.ndimage as sn

import ndforge.ndimage
from ndforge import _capi
from arrays import OnArrays, fixture

pytestmark = pytest.mark.skipif("ndf_correlate1d" not in _capi.functions,
                                reason="this libndforge has no linear filters")
nd = OnArrays(ndforge.ndimage)
array_kind = fixture(nd)

DTYPES = [np.uint8, np.int16, np.int32, np.float32, np.float64]
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
