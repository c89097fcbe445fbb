"""ndforge.intensity against NumPy and skimage.exposure (equalize_hist skipped without scikit-image), on the
array kinds of NDFORGE_TEST_ARRAYS (arrays.py)."""

import numpy as np
import pytest

import ndforge.intensity
from ndforge import _capi
from arrays import OnArrays, fixture

pytestmark = pytest.mark.skipif("ndf_histogram" not in _capi.functions,
                                reason="this libndforge has no intensity ops")

ni = OnArrays(ndforge.intensity, array_args=("a", "image", "mask", "weights"))
array_kind = fixture(ni)

DTYPES = [np.uint8, np.int16, np.int32, np.int64, np.uint64, np.float32, np.float64]


def image(dtype, shape=(17, 23), seed=0):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return (rng.normal(size=shape) * 100).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(max(info.min, -1000), min(info.max, 1000), size=shape, endpoint=True).astype(dt)


def reference_histogram(x, bins=10, **kw):
    """numpy.histogram(x, bins, **kw), or where the installed NumPy's equal-width edges of a float32 image are
    not the library's, the library's documented ones with NumPy's counts at them: np.linspace in float64 over
    the data's range rounded to float32 (NumPy 1); NumPy 2 (NEP 50) runs that linspace in float32 when the range
    comes from the data (docs/adr/0033)."""
    rh, re = np.histogram(x, bins, **kw)
    if x.dtype == np.float32 and np.ndim(bins) == 0 and kw.get("range") is None:
        de = np.linspace(float(x.min()), float(x.max()), bins + 1).astype(np.float32)
        if not np.array_equal(re, de):
            np.testing.assert_allclose(re, de, rtol=1e-6)  # the two differ by float32 rounding only
            rh, re = np.histogram(x, de, **kw)
    return rh, re


@pytest.mark.parametrize("dtype", DTYPES)
def test_histogram(dtype):
    x = image(dtype)
    for kw in (dict(), dict(bins=7), dict(bins=5, range=(-50, 60)), dict(bins=[-100, -3, 0, 2.5, 400])):
        h, e = ni.histogram(x, **kw)
        rh, re = reference_histogram(x, **kw)
        assert h.dtype == np.int64
        np.testing.assert_array_equal(h, rh)
        np.testing.assert_array_equal(e, re)
    w = np.random.default_rng(1).random(x.shape)
    h, e = ni.histogram(x, bins=6, weights=w, density=True)
    rh, re = reference_histogram(x, bins=6, weights=w, density=True)
    np.testing.assert_allclose(h, rh, rtol=1e-12)
    np.testing.assert_array_equal(e, re)


def reference_percentile(fn, x, q):
    """numpy.percentile / quantile in the installed NumPy's result dtype, valued as the library documents:
    NumPy's interpolation in float64 (its value for an array q), rounded once to that dtype.  NumPy 2 keeps a
    float32 input's float32 for a Python scalar q and interpolates in float32 (docs/adr/0033): there the
    library's value is within one float32 step of NumPy's."""
    want = np.asarray(fn(x, q))
    doc = np.asarray(fn(x, np.atleast_1d(q))).reshape(np.shape(q)).astype(want.dtype)
    if want.dtype != np.float64:
        np.testing.assert_array_max_ulp(doc, want, maxulp=1)
    else:
        np.testing.assert_array_equal(doc, want)
    return doc


def test_histogram_batch():
    x = image(np.float64, (3, 10, 11))
    h, e = ni.histogram(x, bins=8, batch_dims=1)
    assert h.shape == (3, 8) and e.shape == (3, 9)
    for i in range(3):
        rh, re = np.histogram(x[i], bins=8)
        np.testing.assert_array_equal(h[i], rh)
        np.testing.assert_array_equal(e[i], re)


@pytest.mark.parametrize("dtype", DTYPES)
def test_percentile_quantile(dtype):
    x = image(dtype)
    for q in (50, 0.5, [0, 1, 25, 99.5, 100], np.float64(99.5)):
        got = ni.percentile(x, q)
        want = reference_percentile(np.percentile, x, q)
        assert np.asarray(got).dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), want)
        assert np.asarray(got).shape == np.shape(np.percentile(x, q))
    for q in ([0.1, 0.9], 0.3):
        got = ni.quantile(x, q)
        assert np.asarray(got).dtype == np.asarray(np.quantile(x, q)).dtype
        np.testing.assert_array_equal(got, reference_percentile(np.quantile, x, q))
    b = image(dtype, (4, 9, 5))
    got = ni.percentile(b, [5, 95], batch_dims=1)
    assert got.shape == (4, 2)
    np.testing.assert_array_equal(got, np.percentile(b.reshape(4, -1), [5, 95], axis=1).T)


@pytest.mark.parametrize("dtype", DTYPES)
def test_clip_and_windows(dtype):
    x = image(dtype)
    lo = 5 if np.dtype(dtype).kind == "u" else -20  # bounds in the dtype's range (the library's rule)
    c = ni.clip(x, lo, 30)
    assert c.dtype == x.dtype
    np.testing.assert_array_equal(c, np.clip(x, lo, 30))
    f = np.float64 if dtype == np.float64 else np.float32
    xd = x.astype(np.float64)

    def win(lo, hi, a=0.0, b=1.0):
        return ((np.clip(xd, lo, hi) - lo) / (hi - lo) * (b - a) + a).astype(f)

    w = ni.window(x, -20, 30)
    assert w.dtype == f
    np.testing.assert_array_equal(w, win(-20, 30))
    np.testing.assert_array_equal(ni.window(x, -20, 30, -1, 1, output=np.float64),
                                  (np.clip(xd, -20, 30) + 20) / 50 * 2 - 1)
    np.testing.assert_array_equal(ni.normalize_minmax(x), win(xd.min(), xd.max()))
    lo, hi = np.percentile(x, [0.5, 99.5])
    np.testing.assert_array_equal(ni.percentile_window(x, 0.5, 99.5), win(lo, hi))
    np.testing.assert_array_equal(ni.window_ct(x, "brain"), win(0, 80))
    np.testing.assert_array_equal(ni.window_ct(x, centre=-600, width=1500), win(-1350, 150))


def test_window_batch():
    x = image(np.float64, (3, 8, 9))
    got = ni.normalize_minmax(x, batch_dims=1)
    for i in range(3):
        np.testing.assert_array_equal(got[i], (x[i] - x[i].min()) / (x[i].max() - x[i].min()))


@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.float64])
def test_normalize_zscore(dtype):
    x = image(dtype, (19, 21))
    xd = x.astype(np.float64)
    got = ni.normalize_zscore(x, output=np.float64)
    np.testing.assert_allclose(got, (xd - xd.mean()) / xd.std(), rtol=1e-9, atol=1e-12)
    m = np.random.default_rng(2).random(x.shape) > 0.5
    got = ni.normalize_zscore(x, mask=m, output=np.float64)
    np.testing.assert_allclose(got, (xd - xd[m].mean()) / xd[m].std(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32, np.float64])
def test_equalize_hist(dtype):
    exposure = pytest.importorskip("skimage.exposure")
    x = image(dtype, (25, 31))
    if np.dtype(dtype).kind == "f":
        x = np.abs(x) / np.abs(x).max()
    ref = exposure.equalize_hist(x)
    got = ni.equalize_hist(x)
    assert got.dtype == ref.dtype
    np.testing.assert_allclose(got, ref, rtol=1e-6 if dtype == np.float32 else 1e-12)
    m = np.random.default_rng(4).random(x.shape) > 0.3
    np.testing.assert_allclose(ni.equalize_hist(x, nbins=64, mask=m), exposure.equalize_hist(x, nbins=64, mask=m),
                               rtol=1e-6 if dtype == np.float32 else 1e-12)


def test_other_dtypes():
    x = np.arange(-30, 30, dtype=np.int64).reshape(6, 10)
    np.testing.assert_array_equal(ni.percentile(x, [10, 90]), np.percentile(x, [10, 90]))
    b = x > 0
    h, e = ni.histogram(b, bins=2)
    np.testing.assert_array_equal(h, np.histogram(b.astype(np.uint8), bins=2)[0])


def test_errors():
    x = image(np.float64)
    with pytest.raises(ValueError):
        ni.clip(x, 5, -5)
    with pytest.raises(ValueError):
        ni.window(x, 5, -5)
    with pytest.raises(ValueError):
        ni.percentile(x, 150)
    with pytest.raises(ValueError):
        ni.window_ct(x, "bogus")
    with pytest.raises(ValueError):
        ni.histogram(x, bins=0)
    with pytest.raises(ValueError):
        ni.normalize_zscore(x, mask=np.ones((3, 3), bool))


def test_zero_d_byte_swapped_and_read_only(array_kind):
    # a 0-d array is one value (NumPy's); a byte-swapped NumPy input is read as its values; an output array
    # is written where it is, so a read-only or byte-swapped NumPy one is refused rather than skipped
    y = np.array(1.5)
    for got, want in ((ni.histogram(y, 7), np.histogram(y, 7)), (ni.percentile(y, [5, 50]), np.percentile(y, [5, 50])),
                      (ni.quantile(y, 0.3), np.quantile(y, 0.3)), (ni.clip(y, -0.5, 0.5), np.clip(y, -0.5, 0.5))):
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            assert np.shape(g) == np.shape(w)
            np.testing.assert_array_equal(g, w)
    if array_kind != "numpy":
        return
    x = image(np.float64)
    np.testing.assert_array_equal(ni.percentile(x.astype(">f8"), [5, 95]), np.percentile(x, [5, 95]))
    np.testing.assert_array_equal(ni.histogram(x.astype(">f8"), 9)[0], np.histogram(x, 9)[0])
    np.testing.assert_array_equal(ni.clip(x.astype(">i4"), -50, 50), ni.clip(x.astype(np.int32), -50, 50))
    ro = np.zeros(x.shape)
    ro.setflags(write=False)
    for f in (lambda o: ni.clip(x, -1, 1, output=o), lambda o: ni.window(x, -1, 1, output=o),
              lambda o: ni.normalize_zscore(x, output=o)):
        with pytest.raises(ValueError, match="read-only"):
            f(ro)
        with pytest.raises(ValueError, match="byte order"):
            f(np.zeros(x.shape, ">f8"))
    assert not ro.any()


def test_clip_result_dtype_as_numpy():
    """clip's default output dtype is NumPy's result type of the input and the bounds."""
    import ndforge.intensity as it
    for dt in (np.uint8, np.int16, np.int32, np.float32, np.float64):
        a = (np.arange(24).reshape(4, 6) - 5).astype(dt)
        for lo, hi in ((0.5, 2.5), (1, 3), (-1, 300), (np.float32(0.5), np.float32(2))):
            want = np.clip(a, lo, hi)
            got = it.clip(a, lo, hi)
            assert got.dtype == want.dtype, (dt, lo, hi)
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_clip_of_64_bit_integers_is_exact(dtype):
    """A 64-bit integer image clipped into its own dtype keeps every value exact, also beyond 2^53 (bounds
    are exact up to 2^53; one at the dtype's largest value leaves the top open)."""
    info = np.iinfo(dtype)
    big = [info.max, info.max - 1, 2 ** 62 + 1, 2 ** 62 - 1, 2 ** 53 + 1, 7, 3, 2, 0]
    if dtype == np.int64:
        big += [-2 ** 53 - 1, -2 ** 62 - 1, info.min + 1, info.min]
    x = np.array(big * 3, dtype=dtype).reshape(3, -1)
    for lo, hi in ((3, 2 ** 52), (0, 2 ** 53), (2, 7)):
        np.testing.assert_array_equal(ni.clip(x, lo, hi, output=dtype), np.clip(x, dtype(lo), dtype(hi)))
    np.testing.assert_array_equal(ni.clip(x, 3, int(info.max), output=dtype), np.clip(x, dtype(3), info.max))
