"""ndforge.ndimage against scipy.ndimage: values, dtypes, modes, output= forms, errors.

The calls run on NumPy arrays, and on torch or CuPy arrays (CPU or CUDA) where
NDFORGE_TEST_ARRAYS names those kinds (arrays.py)."""

import numpy as np
import pytest
import scipy.ndimage as sn

import ndforge.ndimage
from arrays import OnArrays, fixture, same_error

nd = OnArrays(ndforge.ndimage)
array_kind = fixture(nd)

DTYPES = [np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32, np.float32, np.float64]
MODES = ["reflect", "constant", "nearest", "mirror", "wrap"]
GREY = ["grey_erosion", "grey_dilation", "grey_opening", "grey_closing", "morphological_gradient",
        "morphological_laplace", "white_tophat", "black_tophat"]
BINARY = ["binary_erosion", "binary_dilation", "binary_opening", "binary_closing"]


def data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.normal(size=shape).astype(dt)
    if dt.kind == "b":
        return rng.random(shape) > 0.5
    info = np.iinfo(dt)
    return rng.integers(max(info.min, -100), min(info.max, 100), size=shape, endpoint=True).astype(dt)


def same(a, b):
    assert type(a) is type(b)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    np.testing.assert_array_equal(a, b)


# --- grey morphology -------------------------------------------------------------------

@pytest.mark.parametrize("name", GREY)
@pytest.mark.parametrize("dtype", DTYPES)
def test_grey_dtypes(name, dtype):
    x = data((11, 13), dtype)
    same(getattr(nd, name)(x, size=3), getattr(sn, name)(x, size=3))


@pytest.mark.parametrize("name", GREY)
@pytest.mark.parametrize("mode", MODES + ["grid-mirror", "grid-constant", "grid-wrap", ["nearest"] * 3])
def test_grey_modes(name, mode):
    x = data((9, 10, 7), np.float32)
    kw = dict(size=(3, 2, 4), mode=mode, cval=0.25, origin=(1, 0, -1))
    same(getattr(nd, name)(x, **kw), getattr(sn, name)(x, **kw))


@pytest.mark.parametrize("name", GREY)
def test_grey_footprint_structure(name):
    x = data((12, 12), np.int16)
    fp = np.array([[0, 1, 0], [1, 1, 1], [0, 1, 1]], bool)
    st = np.array([[0, 1, 0], [2, 3, 1], [0, 1, 4]], np.int16)
    same(getattr(nd, name)(x, footprint=fp), getattr(sn, name)(x, footprint=fp))
    same(getattr(nd, name)(x, structure=st, mode="nearest"), getattr(sn, name)(x, structure=st, mode="nearest"))
    # positional order of scipy: input, size, footprint, structure, output, mode, cval, origin
    same(getattr(nd, name)(x, None, fp, None, None, "constant", 3, 1),
         getattr(sn, name)(x, None, fp, None, None, "constant", 3, 1))


@pytest.mark.parametrize("name", ["grey_erosion", "grey_dilation", "grey_opening", "white_tophat"])
def test_grey_output_forms(name):
    x = data((10, 11), np.float32)
    ref = getattr(sn, name)(x, size=3)
    out = np.zeros_like(x)
    r = getattr(nd, name)(x, size=3, output=out)
    assert r is out
    same(out, ref)
    same(getattr(nd, name)(x, size=3, output=np.float64), getattr(sn, name)(x, size=3, output=np.float64))
    out64, ref64 = np.zeros(x.shape, np.float64), np.zeros(x.shape, np.float64)
    getattr(nd, name)(x, size=3, output=out64)
    getattr(sn, name)(x, size=3, output=ref64)
    same(out64, ref64)
    # a strided (transposed) output is written in place
    outT = np.zeros(x.shape[::-1], np.float32).T
    getattr(nd, name)(x, size=3, output=outT)
    same(outT, ref)


@pytest.mark.parametrize("name", ["grey_erosion", "grey_dilation"])
def test_grey_one_mode_per_axis(name):
    x = data((10, 9), np.int16)
    for kw in (dict(size=(3, 2)), dict(size=(2, 4), origin=(-1, 1)), dict(footprint=np.ones((3, 4), bool))):
        m = ["wrap", "constant"]
        same(getattr(nd, name)(x, mode=m, cval=5, **kw), getattr(sn, name)(x, mode=m, cval=5, **kw))


def test_grey_strided_inputs():
    x = data((14, 15, 6), np.float64)
    for v in (x[::2, 1::3], x.transpose(2, 0, 1), x[::-1, :, 2]):
        same(nd.grey_dilation(v, size=3), sn.grey_dilation(v, size=3))


def test_grey_axes_and_batch_dims():
    x = data((3, 10, 12), np.float32)
    ref = np.stack([sn.grey_erosion(x[i], size=3) for i in range(3)])
    same(nd.grey_erosion(x, size=3, batch_dims=1), ref)
    same(nd.grey_erosion(x, size=3, axes=(1, 2)), ref)
    ref2 = np.stack([sn.grey_erosion(x[:, :, j], size=(2, 3)) for j in range(12)], axis=2)
    same(nd.grey_erosion(x, size=(2, 3), axes=(0, 1)), ref2)


@pytest.mark.parametrize("algorithm", ["auto", "direct", "separable", "vhgw"])
def test_grey_algorithms(algorithm):
    x = data((16, 17), np.float32)
    same(nd.grey_dilation(x, size=5, algorithm=algorithm), sn.grey_dilation(x, size=5))


@pytest.mark.parametrize("name", ["grey_erosion", "grey_dilation", "grey_opening", "grey_closing", "white_tophat",
                                  "black_tophat", "median_filter"])
def test_bool_inputs(name):
    x = data((10, 9), np.bool_)
    same(getattr(nd, name)(x, size=3), getattr(sn, name)(x, size=3))
    same(getattr(nd, name)(x, size=2, mode="constant", cval=1), getattr(sn, name)(x, size=2, mode="constant", cval=1))


def test_grey_half_precision():
    x = data((9, 9), np.float16)
    r = nd.grey_erosion(x, size=3)
    assert r.dtype == np.float16
    np.testing.assert_array_equal(r, sn.grey_erosion(x.astype(np.float32), size=3).astype(np.float16))


# --- minimum and maximum filters ----------------------------------------------------------

@pytest.mark.parametrize("name", ["minimum_filter", "maximum_filter"])
@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.float32])
def test_min_max_filters(name, dtype):
    x = data((11, 12), dtype)
    fp = np.array([[1, 1, 0, 0], [0, 1, 1, 1]], bool)
    for kw in (dict(size=3), dict(size=(2, 4), origin=(0, -1)), dict(footprint=fp), dict(footprint=fp, origin=(0, 1)),
               dict(size=(3, 2), mode=["wrap", "constant"], cval=7), dict(size=4, mode="mirror", origin=1),
               dict(footprint=np.ones((2, 3)), mode=["nearest", "wrap"], origin=(-1, 1))):
        same(getattr(nd, name)(x, **kw), getattr(sn, name)(x, **kw))
    same(getattr(nd, name)(x, 3, output=np.float64), getattr(sn, name)(x, 3, output=np.float64))
    out, ref = np.zeros(x.shape, np.int16), np.zeros(x.shape, np.int16)
    getattr(nd, name)(x, (3, 2), mode=["nearest", "reflect"], output=out)
    getattr(sn, name)(x, (3, 2), mode=["nearest", "reflect"], output=ref)
    same(out, ref)


@pytest.mark.parametrize("name", ["minimum_filter1d", "maximum_filter1d"])
@pytest.mark.parametrize("size,origin", [(3, 0), (4, -2), (4, 1), (1, 0), (5, 2)])
def test_min_max_filters_1d(name, size, origin):
    x = data((7, 9, 8), np.float32)
    for axis in (0, 1, -1):
        same(getattr(nd, name)(x, size, axis, origin=origin, mode="constant", cval=-1),
             getattr(sn, name)(x, size, axis, origin=origin, mode="constant", cval=-1))


# --- rank filters -----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", MODES)
def test_median(dtype, mode):
    x = data((10, 12), dtype)
    same(nd.median_filter(x, size=3, mode=mode, cval=1), sn.median_filter(x, size=3, mode=mode, cval=1))


@pytest.mark.parametrize("rank", [0, 3, -1, -5])
def test_rank(rank):
    x = data((8, 9, 10), np.float32)
    same(nd.rank_filter(x, rank, size=(2, 3, 2)), sn.rank_filter(x, rank, size=(2, 3, 2)))
    fp = np.ones((3, 3), bool)
    fp[0, 0] = False
    y = x[0]
    same(nd.rank_filter(y, rank, footprint=fp, origin=(1, -1)), sn.rank_filter(y, rank, footprint=fp,
                                                                              origin=(1, -1)))


@pytest.mark.parametrize("p", [0, 20, 50.5, 100, -30])
def test_percentile(p):
    x = data((11, 9), np.int16)
    same(nd.percentile_filter(x, p, size=4), sn.percentile_filter(x, p, size=4))


def test_rank_output_forms_and_axes():
    x = data((4, 9, 8), np.uint8)
    out = np.empty_like(x)
    assert nd.median_filter(x, size=3, output=out) is out
    same(out, sn.median_filter(x, size=3))
    same(nd.median_filter(x, size=3, output=np.float32), sn.median_filter(x, size=3, output=np.float32))
    ref = np.stack([sn.median_filter(x[i], size=3) for i in range(4)])
    same(nd.median_filter(x, size=3, axes=(-2, -1)), ref)
    same(nd.median_filter(x, size=3, batch_dims=1), ref)


def test_rank_nan_policy():
    x = data((7, 7), np.float64)
    x[3, 3] = np.nan
    r = nd.median_filter(x, size=3)
    assert np.isnan(r[2:5, 2:5]).all()
    r = nd.median_filter(x, size=3, nan_policy="omit")
    assert not np.isnan(r).any()


# --- binary morphology ------------------------------------------------------------------

@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("iterations", [1, 2, 0])
def test_binary(name, iterations):
    x = data((13, 12), np.bool_)
    st = sn.generate_binary_structure(2, 2)
    same(getattr(nd, name)(x, iterations=iterations), getattr(sn, name)(x, iterations=iterations))
    same(getattr(nd, name)(x, st, iterations), getattr(sn, name)(x, st, iterations))


@pytest.mark.parametrize("name", ["binary_erosion", "binary_dilation"])
@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.float32, np.int64])
def test_binary_options(name, dtype):
    x = data((12, 11), dtype)
    mask = data((12, 11), np.bool_, seed=3)
    kw = dict(mask=mask, border_value=1, origin=(1, 0), brute_force=True)
    same(getattr(nd, name)(x, **kw), getattr(sn, name)(x, **kw))
    out = np.zeros(x.shape, np.uint8)
    getattr(nd, name)(x, output=out)
    np.testing.assert_array_equal(out, getattr(sn, name)(x))


def test_binary_propagation_fill_holes_hit_or_miss():
    x = data((15, 14), np.bool_, seed=1)
    m = data((15, 14), np.bool_, seed=2)
    same(nd.binary_propagation(x, mask=m), sn.binary_propagation(x, mask=m))
    same(nd.binary_fill_holes(x), sn.binary_fill_holes(x))
    st = sn.generate_binary_structure(2, 2)
    same(nd.binary_fill_holes(x, structure=st), sn.binary_fill_holes(x, structure=st))
    s1 = np.array([[0, 1, 0], [1, 1, 1], [0, 1, 0]], bool)
    s2 = np.array([[1, 0, 1], [0, 0, 0], [1, 0, 1]], bool)
    same(nd.binary_hit_or_miss(x), sn.binary_hit_or_miss(x))
    same(nd.binary_hit_or_miss(x, s1, s2, origin1=(0, 1)), sn.binary_hit_or_miss(x, s1, s2, origin1=(0, 1)))
    same(nd.binary_hit_or_miss(x, s1, s2, origin1=1, origin2=-1),
         sn.binary_hit_or_miss(x, s1, s2, origin1=1, origin2=-1))


def test_binary_axes():
    x = data((3, 10, 9), np.bool_)
    ref = np.stack([sn.binary_dilation(x[i]) for i in range(3)])
    same(nd.binary_dilation(x, axes=(1, 2)), ref)
    same(nd.binary_dilation(x, batch_dims=1), ref)


def test_structures():
    for rank in (1, 2, 3, 4):
        for c in (0, 1, 2, rank):
            same(nd.generate_binary_structure(rank, c), sn.generate_binary_structure(rank, c))
    s = sn.generate_binary_structure(2, 1)
    same(nd.iterate_structure(s, 3), sn.iterate_structure(s, 3))
    a, o = nd.iterate_structure(s, 2, origin=(1, -1))
    b, p = sn.iterate_structure(s, 2, origin=(1, -1))
    same(a, b)
    assert list(o) == list(p)


# --- label ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.float64, np.int64])
def test_label(dtype):
    x = data((20, 17), dtype)
    same_l, n = nd.label(x)
    ref, m = sn.label(x)
    same(same_l, ref)
    assert n == m and isinstance(n, int)
    st = sn.generate_binary_structure(2, 2)
    a, n = nd.label(x, st)
    b, m = sn.label(x, st)
    same(a, b)
    assert n == m


def test_label_output_forms():
    x = data((9, 10, 8), np.bool_)
    ref, m = sn.label(x)
    a, n = nd.label(x, output=np.uint16)
    same(a, sn.label(x, output=np.uint16)[0])
    out = np.zeros(x.shape, np.int32)
    assert nd.label(x, output=out) == m
    same(out, ref)
    out = np.zeros(x.shape, np.float32)
    assert nd.label(x, output=out) == sn.label(x, output=np.zeros(x.shape, np.float32))
    labels, counts = nd.label(x, batch_dims=1)
    assert counts.shape == (9,)
    for i in range(9):
        r, k = sn.label(x[i])
        same(labels[i], r)
        assert counts[i] == k


# --- distance transforms --------------------------------------------------------------------

def test_edt():
    x = data((14, 13), np.uint8) > 20
    for sampling in (None, 2.0, (1.5, 0.5)):
        d, i = nd.distance_transform_edt(x, sampling, return_indices=True)
        e, j = sn.distance_transform_edt(x, sampling, return_indices=True)
        same(d, e)
        same(i, j)
    same(nd.distance_transform_edt(x, return_distances=False, return_indices=True),
         sn.distance_transform_edt(x, return_distances=False, return_indices=True))
    dist = np.zeros(x.shape)
    ind = np.zeros((2,) + x.shape, np.int32)
    assert nd.distance_transform_edt(x, return_indices=True, distances=dist, indices=ind) is None
    same(dist, sn.distance_transform_edt(x))
    same(ind, sn.distance_transform_edt(x, return_distances=False, return_indices=True))


@pytest.mark.parametrize("metric", ["chessboard", "taxicab", "cityblock", "manhattan"])
def test_cdt(metric):
    x = data((12, 15), np.int32) > 0
    d, i = nd.distance_transform_cdt(x, metric, return_indices=True)
    e, j = sn.distance_transform_cdt(x, metric, return_indices=True)
    same(d, e)
    same(i, j)
    st = sn.generate_binary_structure(2, 1)
    same(nd.distance_transform_cdt(x, st), sn.distance_transform_cdt(x, st))


@pytest.mark.parametrize("metric", ["euclidean", "taxicab", "chessboard"])
def test_bf(metric):
    x = data((9, 11), np.float32) > 0
    d, i = nd.distance_transform_bf(x, metric, return_indices=True)
    e, j = sn.distance_transform_bf(x, metric, return_indices=True)
    same(d, e)
    same(i, j)
    if metric == "euclidean":
        same(nd.distance_transform_bf(x, metric, sampling=(2, 1)), sn.distance_transform_bf(x, metric,
                                                                                           sampling=(2, 1)))


def test_distance_batch():
    x = data((3, 8, 9), np.uint8) > 10
    d = nd.distance_transform_edt(x, batch_dims=1)
    same(d, np.stack([sn.distance_transform_edt(x[k]) for k in range(3)]))


# --- errors: the exception type scipy raises for the same mistake ----------------------------

X2 = np.arange(30, dtype=np.float32).reshape(5, 6)
B2 = X2 > 10
ERRORS = [
    ("grey_erosion", (X2,), {}),                                   # no size / footprint / structure
    ("grey_erosion", (X2,), dict(size=3, mode="bogus")),
    ("grey_erosion", (X2,), dict(size=3, origin=5)),
    ("grey_dilation", (X2,), dict(size=(3, 3, 3))),
    ("grey_erosion", (X2,), dict(footprint=np.ones((3, 3, 3)))),
    ("grey_erosion", (X2.astype(np.complex64),), dict(size=3)),
    ("morphological_gradient", (B2,), dict(size=3)),
    ("morphological_laplace", (B2,), dict(size=3)),
    ("median_filter", (X2,), {}),
    ("minimum_filter", (X2,), {}),
    ("maximum_filter", (X2,), dict(size=3, mode=["reflect"] * 3)),
    ("maximum_filter", (X2,), dict(footprint=np.eye(3), mode=["reflect", "wrap"])),
    ("minimum_filter1d", (X2, 0), {}),
    ("maximum_filter1d", (X2, 3), dict(origin=2)),
    ("median_filter", (X2,), dict(size=3, mode="grid-bogus")),
    ("median_filter", (X2,), dict(size=3, mode=["reflect", "reflect"])),
    ("rank_filter", (X2, 20), dict(size=3)),
    ("percentile_filter", (X2, 150), dict(size=3)),
    ("median_filter", (X2,), dict(size=3, origin=(2, 0))),
    ("binary_erosion", (B2,), dict(structure=np.ones((3, 3, 3)))),
    ("binary_dilation", (B2.astype(np.complex128),), {}),
    ("label", (B2,), dict(structure=np.ones((3, 3, 3)))),
    ("label", (B2,), dict(structure=np.ones((3, 2)))),
    ("label", (np.ones((20, 20)) * (np.indices((20, 20)).sum(0) % 2),), dict(output=np.int8)),
    ("distance_transform_edt", (B2,), dict(return_distances=False)),
    ("distance_transform_edt", (B2,), dict(return_distances=False, distances=np.zeros(B2.shape))),
    ("distance_transform_edt", (B2,), dict(distances=np.zeros((2, 2)))),
    ("distance_transform_bf", (B2,), dict(metric="bogus")),
]


@pytest.mark.parametrize("name,args,kw", ERRORS, ids=["%s-%d" % (e[0], i) for i, e in enumerate(ERRORS)])
def test_error_types(name, args, kw):
    same_error(getattr(sn, name), getattr(nd, name), *args, **kw)


def test_cdt_bad_metric():
    # scipy raises ValueError here (some scipy versions crash on it instead, so it is not run there)
    with pytest.raises(ValueError):
        nd.distance_transform_cdt(B2, metric="bogus")


def wide(shape, dtype, seed=0):
    """64-bit integers around 2^60 (int64) or 2^63 (uint64) with both ends of the range: values that float64
    does not hold, so that a path through double would fail."""
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    base = 1 << 60 if dtype == np.int64 else 1 << 63
    x = np.array([base + int(v) for v in rng.integers(-40, 40, size=int(np.prod(shape)))], dtype).reshape(shape)
    x.flat[0], x.flat[-1], x.flat[len(x.flat) // 2] = info.min, info.max, info.max - 1
    return x


def by_ranks(fn, x, cval=None, **kw):
    """scipy's fn on the ranks of x's values, mapped back: the exact result of an order-statistic filter
    (scipy 1.10 computes min, max and ranks of 64-bit integers in double).  cval joins the values."""
    vals = np.unique(np.append(x, x.dtype.type(cval)) if cval is not None else x)
    r = np.searchsorted(vals, x).astype(np.int64)
    if cval is not None:
        kw = dict(kw, mode="constant", cval=int(np.searchsorted(vals, x.dtype.type(cval))))
    return vals[fn(r, **kw)]


_EXACT_COMPOSITE = {
    "grey_opening": lambda e, d, x: d(e(x)), "grey_closing": lambda e, d, x: e(d(x)),
    "morphological_gradient": lambda e, d, x: d(x) - e(x),
    "morphological_laplace": lambda e, d, x: d(x) + e(x) - x - x,
    "white_tophat": lambda e, d, x: x - d(e(x)), "black_tophat": lambda e, d, x: e(d(x)) - x,
}


@pytest.mark.parametrize("name", GREY + ["median_filter", "minimum_filter", "maximum_filter", "rank_filter",
                                         "percentile_filter"])
@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_64_bit_integers(name, dtype, array_kind):
    # exact on every backend: the composites in NumPy's wrapping integer arithmetic of the exact steps
    x = wide((9, 11), dtype)
    extra = {"rank_filter": dict(rank=-2), "percentile_filter": dict(percentile=30)}.get(name, {})

    def ref(size, cval=None):
        if name in _EXACT_COMPOSITE:
            e = lambda y: by_ranks(sn.grey_erosion, y, cval, size=size)
            d = lambda y: by_ranks(sn.grey_dilation, y, cval, size=size)
            with np.errstate(over="ignore"):
                return _EXACT_COMPOSITE[name](e, d, x)
        return by_ranks(getattr(sn, name), x, cval, size=size, **extra)
    same(getattr(nd, name)(x, size=3, **extra), ref(3))
    if name not in _EXACT_COMPOSITE:
        same(getattr(nd, name)(x, size=(2, 3), mode="constant", cval=3, **extra), ref((2, 3), cval=3))
    out = np.zeros(x.shape, dtype)
    getattr(nd, name)(x, size=3, output=out, **extra)
    same(out, ref(3))


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_64_bit_integers_through_double(dtype, array_kind):
    # the linear filters and interpolation compute in double as scipy does, and convert back as it does
    # (truncation, uint64 through int64 below 2^63); label writes int64 labels when asked
    x = wide((8, 9), dtype)
    for w in ([1, 0, 0], [2, -1, 0], [0.5, 0.25, 0.25]):
        same(nd.correlate1d(x, w), sn.correlate1d(x, w))
    same(nd.uniform_filter(x, 3, mode="nearest"), sn.uniform_filter(x, 3, mode="nearest"))
    w2 = np.array([[-2.0, 1, 3], [0, 0, -1]])  # negative sums: scipy's N-D conversion of them to uint64
    same(nd.correlate(x, w2, mode="wrap"), sn.correlate(x, w2, mode="wrap"))
    same(nd.spline_filter1d(x, order=1), sn.spline_filter1d(x, order=1))
    # into uint64, a value beyond 2^64 saturates to 2^64 - 1 (scipy's clamp as Debian 12's build runs it; the
    # conversion of the clamped 2^64 is undefined in C and scipy's newer wheels store 0: docs/adr/0033)
    f = x.astype(np.float64) * 3
    want = sn.shift(f, 0.25, order=1, output=dtype)
    if dtype == np.uint64:
        want[sn.shift(f, 0.25, order=1) + 0.5 > 2.0 ** 64] = np.iinfo(np.uint64).max
    same(nd.shift(f, 0.25, order=1, output=dtype), want)
    same(nd.shift(x, (0.5, 1), order=1), sn.shift(x, (0.5, 1), order=1))
    same(nd.zoom(x, 1.5, order=0), sn.zoom(x, 1.5, order=0))
    same(nd.correlate1d(data((8, 9), np.int16), [3, -1], output=dtype),
         sn.correlate1d(data((8, 9), np.int16), [3, -1], output=dtype))
    b = (x % dtype(3)).astype(dtype)
    same(nd.binary_erosion(b), sn.binary_erosion(b))
    same(nd.distance_transform_edt(b), sn.distance_transform_edt(b))
    for got, ref in ((nd.label(b, output=np.int64), sn.label(b, output=np.int64)), (nd.label(b), sn.label(b))):
        same(got[0], ref[0])
        assert got[1] == ref[1]


def test_unsupported_dtype_is_a_type_error():
    with pytest.raises(TypeError, match="Complex"):
        nd.grey_erosion(np.ones((3, 4), np.complex64), size=2)


def test_library_message_reaches_python():
    with pytest.raises(ValueError, match="origin"):
        nd.grey_erosion(X2, size=3, origin=5)


# --- signatures: scipy's parameters, order and defaults -----------------------------------------

# ndforge's own functions beside scipy's names (no scipy counterpart)
NDFORGE_ONLY = {"distance_edt_pass"}


@pytest.mark.parametrize("name", [n for n in nd.__all__ if n not in NDFORGE_ONLY])
def test_signature_is_scipys(name):
    import inspect
    ours = inspect.signature(getattr(nd, name)).parameters
    theirs = inspect.signature(getattr(sn, name)).parameters
    for i, (p, q) in enumerate(zip(theirs.values(), list(ours.values()))):
        if p.kind is p.VAR_KEYWORD:  # scipy's **kwargs after its last parameter: ours may add keywords first
            continue
        if q.kind is q.KEYWORD_ONLY and p.kind is not p.KEYWORD_ONLY:
            pytest.fail("%s: scipy's positional parameter %s is missing" % (name, p.name))
        if p.kind is not p.KEYWORD_ONLY:
            assert q.name == p.name, (name, i, q.name, p.name)
    for p in theirs.values():
        assert p.name in ours, (name, p.name)
        q = ours[p.name]
        if p.default is not p.empty:
            assert q.default == p.default or (q.default is None and p.default is None), (name, p.name)
