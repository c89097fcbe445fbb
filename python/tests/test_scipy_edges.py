"""ndforge.ndimage against scipy.ndimage 1.10 where arrays and arguments are unusual: byte-swapped and 0-d
inputs, the binary ops' output= forms, the exception types of bad axes and modes, outputs that overlap
the input.  The calls run on the array kinds arrays.py names, where the case is not NumPy's own."""

import numpy as np
import pytest
import scipy.ndimage as sn

import ndforge.ndimage
from ndforge import _capi
from arrays import OnArrays, fixture, same_error, scipy_affine_transform, scipy_rotate

nd = OnArrays(ndforge.ndimage, array_args=("input", "mask", "coordinates"))
array_kind = fixture(nd)
HAS_LINEAR = "ndf_correlate1d" in _capi.functions
HAS_INTERP = "ndf_map_coordinates" in _capi.functions

RNG = np.random.default_rng(7)
F = RNG.normal(size=(9, 12))
B = RNG.random((9, 12)) > 0.5
W2 = np.array([[1.0, 2, 0], [0, 1, -1], [3, 0, 1]])

# (name, positional arguments after the input, keywords, binary input)
CALLS = [
    ("grey_erosion", (), dict(size=3), False), ("grey_dilation", (), dict(size=(3, 2), mode="constant"), False),
    ("grey_opening", (), dict(size=3), False), ("morphological_gradient", (), dict(size=3), False),
    ("white_tophat", (), dict(size=3), False), ("median_filter", (), dict(size=3), False),
    ("rank_filter", (2,), dict(size=3), False), ("percentile_filter", (30,), dict(size=3), False),
    ("minimum_filter", (), dict(size=3), False), ("maximum_filter1d", (3,), {}, False),
    ("binary_erosion", (), {}, True), ("binary_dilation", (), dict(iterations=2), True),
    ("binary_fill_holes", (), {}, True), ("binary_hit_or_miss", (), {}, True), ("label", (), {}, True),
    ("distance_transform_edt", (), {}, True), ("distance_transform_cdt", (), {}, True),
]
if HAS_LINEAR:
    CALLS += [("correlate1d", ([1.0, 2, -1],), {}, False), ("correlate", (W2,), dict(mode="wrap"), False),
              ("uniform_filter", (3,), {}, False), ("gaussian_filter", (1.5,), {}, False),
              ("sobel", (), {}, False), ("laplace", (), {}, False), ("gaussian_laplace", (1.2,), {}, False),
              ("generic_gradient_magnitude", (sn.sobel,), {}, False)]
if HAS_INTERP:
    CALLS += [("spline_filter", (), {}, False), ("shift", ((0.5, -1.25),), dict(order=1), False),
              ("zoom", (1.5,), dict(order=1), False), ("rotate", (17,), dict(order=1), False)]
IDS = [c[0] for c in CALLS]


def same(a, b):
    if isinstance(b, tuple):
        assert isinstance(a, tuple) and len(a) == len(b)
        for u, v in zip(a, b):
            same(u, v)
        return
    if not isinstance(b, np.ndarray):
        assert a == b
        return
    assert type(a) is type(b) and a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
    if a.dtype.kind == "f":
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name,args,kw,binary", CALLS, ids=IDS)
@pytest.mark.parametrize("dtype", [">f8", ">i2", ">u4"])
def test_byte_swapped_inputs(name, args, kw, binary, dtype, array_kind):
    # scipy reads the other byte order (label excepted: it refuses it); ndforge reads a native copy,
    # so that every op gives what it gives for the same values in native order
    if array_kind != "numpy":
        pytest.skip("byte order is NumPy's")
    native = (B if binary else F * 20).astype(np.dtype(dtype).newbyteorder("="))
    x = native.astype(dtype)
    ref = getattr(sn, name)(native, *args, **kw)
    same(getattr(nd, name)(x, *args, **kw), ref)
    same(getattr(nd, name)(x, *args, **kw), ref)  # a second call: the prepared-call path
    if not name.startswith("distance") and name != "label":
        out = np.zeros(ref.shape, ">f4")
        ref_out = np.zeros(ref.shape, np.float32)
        getattr(sn, name)(native, *args, output=ref_out, **kw)
        getattr(nd, name)(x, *args, output=out, **kw)
        np.testing.assert_array_equal(out, ref_out)


def test_byte_swapped_in_place_arguments_are_refused():
    sq = np.full((4, 5), np.inf, ">f8")
    with pytest.raises(TypeError, match="native"):
        ndforge.ndimage.distance_edt_pass(sq, 0)


# scipy 1.10 crashes (SIGFPE) on 0-d inputs of binary_fill_holes and of binary_dilation with iterations != 1
ZERO_D = [(n, a, {} if n == "binary_dilation" else k, b) for n, a, k, b in CALLS
          if n not in ("maximum_filter1d", "correlate1d", "sobel", "distance_transform_edt", "distance_transform_cdt",
                       "shift", "zoom", "rotate", "binary_fill_holes")]


@pytest.mark.parametrize("name,args,kw,binary", ZERO_D, ids=[c[0] for c in ZERO_D])
@pytest.mark.parametrize("value", [2.5, -1.0, 0.0])
def test_zero_d_inputs(name, args, kw, binary, value):
    # scipy: an image of one element and no axes; the footprint (weights) has that one element
    x = np.array(value != 0) if binary else np.array(value)
    if name == "correlate":
        args = (np.array(3.0),)
    try:
        ref = getattr(sn, name)(x, *args, **kw)
    except RuntimeError:  # a sequence of values for no axes, a rank outside the one element
        with pytest.raises(RuntimeError):
            getattr(nd, name)(x, *args, **kw)
        return
    if name == "binary_hit_or_miss":
        ref = np.asarray(ref)  # scipy 1.10 returns a NumPy bool scalar here; ndforge a 0-d array
    same(getattr(nd, name)(x, *args, **kw), ref)
    if not isinstance(ref, tuple) and name != "binary_hit_or_miss":
        out = np.zeros((), ref.dtype)
        r = getattr(nd, name)(x, *args, output=out, **kw)
        assert r is getattr(sn, name)(x, *args, output=np.zeros((), ref.dtype), **kw) or r is out
        same(out, ref)


def test_zero_d_errors_are_scipys():
    x = np.array(1.5)
    for name, args, kw in [("rank_filter", (1,), dict(size=3)), ("minimum_filter1d", (3,), {}),
                           ("grey_erosion", (), dict(footprint=np.ones(3)))] + \
            ([("correlate1d", ([1.0, 2],), {}), ("correlate", (W2,), {}), ("sobel", (), {})] if HAS_LINEAR else []) + \
            ([("spline_filter1d", (), {}), ("rotate", (10,), {}), ("shift", (0.5,), {})] if HAS_INTERP else []):
        with pytest.raises(Exception) as ref:
            getattr(sn, name)(x, *args, **kw)
        with pytest.raises(Exception) as got:
            getattr(nd, name)(x, *args, **kw)
        assert type(got.value) is type(ref.value), (name, got.value, ref.value)


BINARY = ["binary_erosion", "binary_dilation", "binary_opening", "binary_closing", "binary_propagation",
          "binary_fill_holes", "binary_hit_or_miss"]


@pytest.mark.parametrize("name", BINARY)
def test_binary_output_forms(name):
    # scipy's binary ops take an array as output; a dtype there gives bool; binary_fill_holes and
    # binary_hit_or_miss return None when they wrote an output array, the others return it
    for dt in (np.float32, "uint8", np.int64):
        r = getattr(nd, name)(B, output=dt)
        same(r, getattr(sn, name)(B, output=dt))
        assert r.dtype == np.bool_
    for dt in (np.bool_, np.uint8, np.float32):
        out, ref = np.zeros(B.shape, dt), np.zeros(B.shape, dt)
        got, want = getattr(nd, name)(B, output=out), getattr(sn, name)(B, output=ref)
        assert (want is None and got is None) or (want is ref and got is out), (got, want)
        np.testing.assert_array_equal(out, ref)


def _error_cases():
    cases = [("minimum_filter1d", (F, 3), dict(axis=2)), ("maximum_filter1d", (F, 3), dict(axis=-3))]
    # a sequence has one value per axis (scipy's _normalize_sequence: RuntimeError), an origin is an integer
    for name in ("grey_erosion", "grey_opening", "white_tophat", "median_filter", "minimum_filter",
                 "maximum_filter"):
        cases += [(name, (F,), dict(size=(3,))), (name, (F,), dict(size=3, origin=(1,))),
                  (name, (F,), dict(size=3, origin=0.5))]
    cases += [("grey_erosion", (F,), dict(size=3, mode=["reflect"] * 3)),
              ("grey_closing", (F,), dict(size=3, mode=("reflect", "wrap", "nearest"))),
              ("grey_erosion", (F,), dict(structure=np.ones((3, 3)), mode=("reflect", "wrap"))),
              ("white_tophat", (F,), dict(structure=np.ones((3, 3)), mode=("reflect", "wrap"))),
              ("minimum_filter", (F,), dict(size=3, mode=3)), ("maximum_filter", (F,), dict(size=3, mode=None)),
              ("median_filter", (F,), dict(footprint=np.zeros((3, 3)))),
              ("rank_filter", (F, 0), dict(footprint=np.zeros((3, 3)))),
              ("binary_erosion", (B,), dict(origin=(0,))), ("binary_hit_or_miss", (B,), dict(origin1=(0, 0, 0))),
              ("label", (B,), dict(output=np.zeros((2, 2), np.int32)))]
    if HAS_LINEAR:
        cases += [("correlate1d", (F, [1.0, 2]), dict(axis=2)), ("convolve1d", (F, [1.0, 2]), dict(axis=-3)),
                  ("uniform_filter1d", (F, 3), dict(axis=5)), ("gaussian_filter1d", (F, 1.0), dict(axis=2)),
                  ("sobel", (F,), dict(axis=2)), ("prewitt", (F,), dict(axis=-3)),
                  ("correlate1d", (F, [1.0, 2]), dict(mode=("reflect", "wrap"))),
                  ("convolve1d", (F, [1.0, 2]), dict(mode=["nearest"])),
                  ("uniform_filter1d", (F, 3), dict(mode=("reflect", "wrap"))),
                  ("gaussian_filter1d", (F, 1.0), dict(mode=("reflect", "wrap"))),
                  ("correlate", (F, np.ones((0, 3))), {}), ("convolve", (F, np.ones((3, 3))), dict(origin=(1, 0, 0))),
                  ("uniform_filter", (F, (3,)), {}), ("uniform_filter", (F, 3), dict(origin=(1,))),
                  ("gaussian_filter", (F, (1.0,)), {}), ("gaussian_filter", (F, 1.0), dict(order=(0, 1, 0)))]
    if HAS_INTERP:
        cases += [("spline_filter1d", (F,), dict(axis=2)),
                  ("affine_transform", (F, np.array([[1, 0, 0], [0, 1, 0], [0, 0.5, 1]])), {}),
                  ("affine_transform", (F[0], np.array([[1.0, 0], [1, 1]])), {}),
                  ("rotate", (F[0], 10), {})]
    return cases


ERRORS = _error_cases()


@pytest.mark.parametrize("name,args,kw", ERRORS, ids=["%s-%d" % (e[0], i) for i, e in enumerate(ERRORS)])
def test_error_types(name, args, kw):
    same_error(getattr(sn, name), getattr(nd, name), *args, **kw)


COMPOSITES = [("morphological_laplace", (), dict(size=3)), ("white_tophat", (), dict(size=3)),
              ("black_tophat", (), dict(size=(3, 2))), ("grey_closing", (), dict(size=3))]
if HAS_LINEAR:
    COMPOSITES += [("laplace", (), {}), ("gaussian_laplace", (1.2,), {}),
                   ("gaussian_gradient_magnitude", (1.2,), dict(mode="nearest")), ("uniform_filter", (4,), {})]
if HAS_INTERP:
    COMPOSITES += [("shift", ((0.5, -1.25),), dict(order=1)),
                   ("affine_transform", (np.array([[1, 0.1], [0.05, 0.9]]),), dict(order=1))]


@pytest.mark.parametrize("name,args,kw", COMPOSITES, ids=[c[0] for c in COMPOSITES])
def test_outputs_overlapping_the_input(name, args, kw):
    # scipy writes these through its output while it still reads the input (a composite's second step
    # reads what the first wrote): its results in place are not its results; ndforge's are
    ref = getattr(sn, name)(F, *args, **kw)
    x = F.copy()
    getattr(ndforge.ndimage, name)(x, *args, output=x, **kw)
    np.testing.assert_allclose(x, ref, rtol=1e-12, atol=1e-12)
    y = np.concatenate([F, F])
    getattr(ndforge.ndimage, name)(y[:9], *args, output=y[3:12], **kw)
    np.testing.assert_allclose(y[3:12], ref, rtol=1e-12, atol=1e-12)
    z = F[::-1].copy()
    getattr(ndforge.ndimage, name)(z[::-1], *args, output=z, **kw)
    np.testing.assert_allclose(z, ref, rtol=1e-12, atol=1e-12)


IN_PLACE = [("median_filter", (), dict(size=3)), ("grey_dilation", (), dict(size=(3, 2)))]
if HAS_LINEAR:
    IN_PLACE += [("gaussian_filter", (1.5,), {}), ("uniform_filter", (3,), {}), ("sobel", (), {}),
                 ("correlate1d", ([1.0, 2, -1],), {}), ("gaussian_filter1d", (1.0,), dict(order=1))]
if HAS_INTERP:
    IN_PLACE += [("shift", ((0.3, 0.6),), {}), ("spline_filter1d", (), {}), ("zoom", (1,), dict(order=1))]


@pytest.mark.parametrize("name,args,kw", IN_PLACE, ids=[c[0] for c in IN_PLACE])
@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.int16])
def test_in_place_is_a_direct_write(name, args, kw, dtype):
    # output=input: scipy's passes here read lines before they write them (and the splines filter a
    # copy), so its result in place is its result; ndforge's temporary has the output's dtype, so that
    # every pass stores what a direct write stores
    x = (F * 20).astype(dtype)
    ref = np.zeros(x.shape, dtype)
    getattr(sn, name)(x, *args, output=ref, **kw)
    y = x.copy()
    r = getattr(ndforge.ndimage, name)(y, *args, output=y, **kw)
    assert r is y or r is None
    np.testing.assert_array_equal(y, ref)


@pytest.mark.parametrize("name,args,kw", [c[:3] for c in CALLS if c[0] != "label"], ids=[c[0] for c in CALLS
                                                                                         if c[0] != "label"])
def test_read_only_outputs_are_refused(name, args, kw):
    binary = name.startswith(("binary", "distance"))
    x = B if binary else F
    ref = getattr(sn, name)(x, *args, **kw)
    out = np.zeros(ref.shape, ref.dtype)
    out.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        if name.startswith("distance"):
            ndforge.ndimage.distance_transform_edt(x, distances=out)
        else:
            getattr(ndforge.ndimage, name)(x, *args, output=out, **kw)
    assert not out.any()


@pytest.mark.skipif(not HAS_LINEAR, reason="this libndforge has no linear filters")
@pytest.mark.parametrize("name,sigma,kw", [("gaussian_filter", (-1, 1.5), {}), ("gaussian_filter", -2, dict(order=1)),
                                           ("gaussian_filter", (1.5, -1e-3), dict(order=(1, 2))),
                                           ("gaussian_laplace", (-1, 1.5), {}),
                                           ("gaussian_gradient_magnitude", -1, {})])
def test_negative_sigma_leaves_the_axis(name, sigma, kw):
    # scipy filters an axis only where sigma > 1e-15: a negative sigma is sigma 0 there
    same(getattr(nd, name)(F, sigma, **kw), getattr(sn, name)(F, sigma, **kw))


def test_float_sizes_of_the_separable_filters():
    # scipy's minimum/maximum filters (and grey_erosion/grey_dilation through them) take int(size)
    for name in ("minimum_filter", "maximum_filter", "grey_erosion"):  # (grey_dilation: scipy fails on it)
        same(getattr(nd, name)(F, size=3.5), getattr(sn, name)(F, size=3.5))
    if HAS_LINEAR:
        same(nd.uniform_filter(F, 3.0), sn.uniform_filter(F, 3.0))


def test_structure_helpers():
    st = np.array([[0, 2, 0], [1, 1, 1], [0, 1, 0]])
    for it in (-1, 0, 1, 2, 3):
        for kw in ({}, dict(origin=(1, -1)), dict(origin=1)):
            got, want = nd.iterate_structure(st, it, **kw), sn.iterate_structure(st, it, **kw)
            if isinstance(want, tuple):
                same(got[0], want[0])
                assert list(got[1]) == list(want[1])
            else:
                same(got, want)  # iterations < 2: scipy's copy of the structure, in its dtype, no origin
    for rank in range(0, 5):
        for conn in range(-1, 6):
            same(nd.generate_binary_structure(rank, conn), sn.generate_binary_structure(rank, conn))


@pytest.mark.parametrize("dtype", [object, "datetime64[s]", np.longdouble, "U1", [("a", "f4")]])
def test_unsupported_dtypes_are_refused_as_scipy_refuses_them(dtype):
    x = np.ones((4, 5)).astype(dtype) if dtype != "U1" else np.full((4, 5), "a")
    calls = [("grey_erosion", (), dict(size=3)), ("median_filter", (), dict(size=3)), ("binary_erosion", (), {})]
    if HAS_LINEAR:
        calls += [("uniform_filter", (), {}), ("correlate", (np.ones((2, 2)),), {})]
    if HAS_INTERP:
        calls.append(("shift", (0.5,), {}))
    for name, args, kw in calls:
        with pytest.raises(Exception) as ref:
            getattr(sn, name)(x, *args, **kw)
        with pytest.raises(Exception) as got:
            getattr(ndforge.ndimage, name)(x, *args, **kw)
        assert type(got.value) is type(ref.value) or (name == "binary_erosion" and isinstance(got.value, TypeError)), \
            (name, got.value, ref.value)
    if np.dtype(dtype).kind in "OMf":  # scipy's distance transforms read the truth values of anything
        same(ndforge.ndimage.distance_transform_edt(x), sn.distance_transform_edt(x))


RNGC = np.random.default_rng(11)
XC = RNGC.normal(size=(7, 9)) + 1j * RNGC.normal(size=(7, 9))
WC1 = RNGC.normal(size=3) + 1j * RNGC.normal(size=3)
WC2 = RNGC.normal(size=(2, 3)) + 1j * RNGC.normal(size=(2, 3))
COMPLEX = []
if HAS_LINEAR:
    COMPLEX += [("correlate1d", (WC1,), {}), ("convolve1d", (WC1,), dict(origin=-1, axis=0)),
                ("correlate", (WC2,), dict(mode="wrap")), ("convolve", (WC2,), {}),
                ("correlate1d", ([1.0, 2, -1],), dict(mode="constant", cval=1 + 2j)),
                ("correlate", (np.ones((2, 2)),), {}), ("uniform_filter", (3,), {}),
                ("uniform_filter1d", (4,), dict(axis=0)), ("gaussian_filter", (1.2,), dict(order=(1, 0))),
                ("gaussian_filter1d", (1.0,), {}), ("sobel", (), {}), ("prewitt", (), dict(axis=0)),
                ("laplace", (), {}), ("gaussian_laplace", (1.0,), {}), ("gaussian_gradient_magnitude", (1.0,), {})]
if HAS_INTERP:
    COMPLEX += [("spline_filter", (), {}), ("spline_filter1d", (), dict(order=2)),
                ("shift", ((0.5, 1.2),), dict(cval=1 - 1j)), ("zoom", (1.5,), dict(order=1)), ("rotate", (20,), {}),
                ("map_coordinates", (np.array([[0.5, 2], [1, 3.3]]),), {}),
                ("affine_transform", (np.array([[1, 0.1], [0, 0.9]]),), dict(order=1))]


@pytest.mark.parametrize("name,args,kw", COMPLEX, ids=["%s-%d" % (c[0], i) for i, c in enumerate(COMPLEX)])
@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_complex_inputs(name, args, kw, dtype, array_kind):
    # scipy 1.10's complex support: the parts filtered as real arrays into the complex output's views
    import warnings
    x = XC.astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # spline_filter's float64 default output promoted to complex
        ref = getattr(sn, name)(x, *args, **kw)
        got = getattr(nd, name)(x, *args, **kw)
    assert got.dtype == ref.dtype and got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=1e-12 if dtype == np.complex128 else 1e-5, atol=1e-12)
    out = np.zeros(ref.shape, np.complex128)
    ref_out = np.zeros(ref.shape, np.complex128)
    getattr(sn, name)(x, *args, output=ref_out, **kw)
    assert getattr(nd, name)(x, *args, output=out, **kw) is out
    np.testing.assert_allclose(out, ref_out, rtol=1e-12 if dtype == np.complex128 else 1e-5, atol=1e-12)


@pytest.mark.skipif(not HAS_LINEAR, reason="this libndforge has no linear filters")
def test_complex_weights_and_their_errors():
    x = XC.real.copy()
    for name in ("correlate1d", "convolve1d"):
        same(getattr(nd, name)(x, WC1), getattr(sn, name)(x, WC1))
        same(getattr(nd, name)(x.astype(np.float32), WC1), getattr(sn, name)(x.astype(np.float32), WC1))
    same(nd.correlate(x, WC2), sn.correlate(x, WC2))
    with pytest.raises(RuntimeError, match="complex"):
        ndforge.ndimage.correlate1d(XC, [1.0, 2], output=np.zeros(XC.shape))
    with pytest.raises(TypeError):
        ndforge.ndimage.correlate1d(x, [1.0, 2], cval=1j)
    with pytest.warns(UserWarning, match="complex"):
        assert ndforge.ndimage.correlate1d(XC, [1.0, 2], output=np.float64).dtype == np.complex128


@pytest.mark.skipif(not HAS_INTERP, reason="this libndforge has no interpolation")
@pytest.mark.parametrize("name,args,kw", [("zoom", (1.5,), dict(order=1)), ("shift", ((0.5, -1.25),), {}),
                                          ("rotate", (17,), {}), ("spline_filter", (), {}),
                                          ("spline_filter1d", (), dict(order=1)),
                                          ("affine_transform", (np.eye(2) * 0.9,), {})])
@pytest.mark.parametrize("dtype", [">f8", ">i4", ">u2", "<f2"])
def test_interpolation_output_dtypes_the_library_does_not_write(name, args, kw, dtype, array_kind):
    # output=<dtype>: a byte-swapped one is scipy's values in that order; float16 (scipy refuses it but
    # for the copy of spline_filter1d) the float64 values converted.  rotate's and affine_transform's references
    # have ndforge's coordinates (arrays.py); the CPU gives scipy's bits.  NumPy arrays only: byte-swapped
    # dtypes are NumPy's
    if array_kind != "numpy":
        pytest.skip("byte-swapped outputs are NumPy arrays' (the CPU backend)")
    x = F * 20
    r = getattr(ndforge.ndimage, name)(x, *args, output=np.dtype(dtype), **kw)
    assert r.dtype == np.dtype(dtype)
    fn = dict(rotate=scipy_rotate, affine_transform=scipy_affine_transform).get(name, getattr(sn, name))
    if dtype == "<f2":
        ref = fn(x, *args, **kw).astype(np.float16)
    else:
        ref = fn(x, *args, output=np.dtype(dtype), **kw)
    np.testing.assert_array_equal(r, ref)


def test_gradient_and_laplace_ignore_an_output_dtype():
    """scipy's morphological_gradient / morphological_laplace take an output array only: a dtype gives the
    input's dtype (the result of scipy's own arithmetic)."""
    x = np.random.default_rng(3).normal(size=(7, 9)) * 50
    for name in ("morphological_gradient", "morphological_laplace"):
        for dt in (np.float32, np.int16, "uint8"):
            want = getattr(sn, name)(x, size=3, output=dt)
            got = getattr(nd, name)(x, size=3, output=dt)
            assert got.dtype == want.dtype == x.dtype, name
            np.testing.assert_array_equal(got, want)


# --- label numbers features in the scan order of its output's layout ------------------------------------

def _label_layout(shape, dtype, perm, flip):
    out = np.zeros([shape[i] for i in perm], dtype).transpose(np.argsort(perm))
    return out if flip is None else np.flip(out, flip)


def test_label_numbers_features_in_the_scan_order_of_the_output():
    """scipy scans lines along the output's axis of smallest positive stride (Fortran order: axis 0; a
    reversed axis is never that axis), the lines in C order of the other axes."""
    rng = np.random.default_rng(11)
    for _ in range(150):
        ndim = int(rng.integers(1, 5))
        shape = tuple(int(x) for x in rng.integers(1, 8, ndim))
        a = rng.random(shape) < 0.45
        s = rng.random([3] * ndim) < 0.5
        st = s | s[(slice(None, None, -1),) * ndim]
        dtype = str(rng.choice(["int32", "uint8", "int16", "float64", "bool"]))
        perm = rng.permutation(ndim)
        flip = int(rng.integers(0, ndim)) if rng.random() < 0.3 else None
        want, got = _label_layout(shape, dtype, perm, flip), _label_layout(shape, dtype, perm, flip)
        try:
            n = sn.label(a, st, output=want)
        except RuntimeError:  # insufficient bit-depth
            with pytest.raises(RuntimeError):
                ndforge.ndimage.label(a, st, output=got)
            continue
        assert ndforge.ndimage.label(a, st, output=got) == n
        np.testing.assert_array_equal(got.view(np.uint8) if dtype == "bool" else got,
                                      want.view(np.uint8) if dtype == "bool" else want)


def test_label_into_bool_and_unsupported_outputs():
    """A bool output is scipy's npy_bool holding the labels' bytes; where scipy's first pass overflows the
    byte (it then casts int32 labels to bool), more than one feature is "insufficient bit-depth".  Outputs
    scipy's label has no signature for (float16, complex) are a TypeError."""
    teeth = np.zeros((600, 6), np.uint8)
    teeth[::2, :3] = 1
    teeth[:, 2] = 1
    dot = teeth.copy()
    dot[1, 5] = 1
    small = np.array([[1, 0, 1, 0, 1], [0, 0, 0, 0, 0], [1, 1, 0, 1, 0]])
    for x in (small, teeth, dot):
        for out in (np.bool_, "C", "F"):
            def run(m):
                o = np.zeros(x.shape, bool, order=out) if isinstance(out, str) else out
                try:
                    r = m.label(x, output=o)
                except RuntimeError as e:
                    return "bit-depth" in str(e)
                lab, n = r if isinstance(r, tuple) else (o, r)
                return lab.dtype, lab.view(np.uint8).tobytes(), n
            assert run(ndforge.ndimage) == run(sn), (x.shape, out)
    for dt in (np.float16, np.complex64):
        same_error(sn.label, ndforge.ndimage.label, small, output=dt)
        same_error(sn.label, ndforge.ndimage.label, small, output=np.zeros(small.shape, dt))


def test_label_fortran_outputs_in_place_and_overflowing_scans():
    # teeth down axis 0 joined by column 2, and three dots: the Fortran scan opens 300 provisional labels,
    # more than uint8 holds, so scipy labels a C-ordered int32 array there and copies it (raster order)
    a = np.zeros((600, 6), np.uint8)
    a[::2, :3] = 1
    a[:, 2] = 1
    a[1, 5] = a[5, 4] = a[3, 5] = 1
    for dtype in ("int32", "uint16", "uint8"):
        want, got = np.zeros(a.shape, dtype, order="F"), np.zeros(a.shape, dtype, order="F")
        assert ndforge.ndimage.label(a, output=got) == sn.label(a, output=want) == 4
        np.testing.assert_array_equal(got, want)
    # in place, where the library writes a temporary: numbered as the output is
    for view in (lambda x: x, lambda x: x[::-1], lambda x: x.T):
        x = np.asfortranarray(RNG.random((7, 9)) < 0.5).astype(np.int32)
        y = x.copy(order="K")
        assert ndforge.ndimage.label(view(y), output=view(y)) == sn.label(view(x), output=view(x))
        np.testing.assert_array_equal(y, x)


# --- spline_filter1d of order 0 or 1 is scipy's output[...] = numpy.array(input) --------------------------

@pytest.mark.skipif(not HAS_INTERP, reason="interpolation not built")
@pytest.mark.parametrize("order", [0, 1, True, 1.0])
@pytest.mark.filterwarnings("ignore:promoting specified output dtype to complex")
def test_spline_filter1d_copies_without_reading_axis_or_mode(order):
    """scipy copies before it normalizes axis or mode: any axis (out of range, a float, None) and any mode
    name pass, and a 0-d input is copied."""
    x = F * 3
    for kw in (dict(axis=5), dict(axis=-3), dict(axis=1.5), dict(axis=None), dict(mode="bogus"),
               dict(axis=7, mode="bogus", output=np.uint8), dict(output=np.int16)):
        same(ndforge.ndimage.spline_filter1d(x, order, **kw), sn.spline_filter1d(x, order, **kw))
    for v, kw in ((np.array(2.5), {}), (np.array(-2.5), dict(output=np.int32, axis=3)),
                  (np.array(3 + 1j), dict(mode="bogus")), (np.zeros((0, 3)), dict(axis=4))):
        ref, got = sn.spline_filter1d(v, order, **kw), ndforge.ndimage.spline_filter1d(v, order, **kw)
        assert got.shape == ref.shape and got.dtype == ref.dtype
        same(got, ref)
    out, ref = np.zeros((), np.float32), np.zeros((), np.float32)
    assert ndforge.ndimage.spline_filter1d(np.array(7.25), order, output=out, axis=2) is out
    sn.spline_filter1d(np.array(7.25), order, output=ref, axis=2)
    same(out, ref)
    y = x.copy()  # in place
    ndforge.ndimage.spline_filter1d(y, order, output=y, axis=9)
    same(y, x)


@pytest.mark.skipif(not HAS_INTERP, reason="interpolation not built")
def test_spline_filter1d_from_order_2_checks_axis_mode_and_rank():
    for args, kw in (((F, 2), dict(axis=2)), ((F, 3), dict(mode="bogus")), ((np.array(2.5), 2), {}),
                     ((F, 6), {}), ((F, -1), dict(axis=9))):
        with pytest.raises(Exception) as ref:
            sn.spline_filter1d(*args, **kw)
        with pytest.raises(Exception) as got:
            ndforge.ndimage.spline_filter1d(*args, **kw)
        assert type(got.value) is type(ref.value), (args[1:], kw, got.value, ref.value)


# --- outputs of another dtype than the input's: scipy stores each pass with C's cast --------------------

def _result(fn, x, args, kw, out, form):
    """fn's result into output `out` (a dtype, or a zeroed array when form is "array") as raw bytes (a bool
    output may hold any byte: C's cast stores 2.0 as 2), or the kind of its exception (NumPy's
    UFuncTypeError and CuPy's casting error are TypeErrors)."""
    try:
        if form == "dtype":
            r = fn(x, *args, output=np.dtype(out), **kw)
        else:
            o = np.zeros(x.shape, out)
            r = fn(x, *args, output=o, **kw)
            assert r is o or r is None
            r = o
        return r.dtype.str, r.view(np.uint8).tobytes() if r.dtype == np.bool_ else r.tobytes()
    except Exception as e:
        return next(k for k in (TypeError, ValueError, RuntimeError, Exception) if isinstance(e, k))


STORE_OUTS = ["bool", "uint8", "int8", "int16", "uint32", "int64", "uint64", "float32"]
STORE_CALLS = [("minimum_filter", (), dict(size=(3, 2))), ("maximum_filter", (), dict(footprint=np.ones((2, 3)))),
               ("grey_erosion", (), dict(footprint=[[1, 0, 1], [1, 1, 0]])), ("grey_dilation", (), dict(size=3)),
               ("maximum_filter", (), dict(size=3, mode=["constant", "wrap"], cval=-7.5)),
               ("minimum_filter1d", (1,), {}), ("maximum_filter1d", (3,), dict(axis=0)),
               ("median_filter", (), dict(size=3)), ("rank_filter", (-1,), dict(size=(2, 3))),
               ("percentile_filter", (0,), dict(footprint=np.ones((3, 3)))), ("rank_filter", (2,), dict(size=3)),
               ("grey_opening", (), dict(size=3)), ("grey_closing", (), dict(size=(2, 3), mode="constant")),
               ("white_tophat", (), dict(size=3)), ("black_tophat", (), dict(footprint=[[1, 0], [1, 1]])),
               ("morphological_gradient", (), dict(size=3)), ("morphological_laplace", (), dict(size=(3, 2)))]


@pytest.mark.parametrize("name,args,kw", STORE_CALLS, ids=[c[0] for c in STORE_CALLS])
def test_outputs_of_another_dtype_are_stored_as_scipy_stores_them(name, args, kw, array_kind):
    """scipy 1.10 stores a result of the input's dtype into another with C's cast (a bool holds the
    cast's byte: 0.5 -> 0, 2.0 -> 2, -26.4 -> 230; 300.7 into uint8 is 44); its separable minimum and
    maximum filters (also the ranks 0 and n - 1 of a box) store every 1-D pass so and read it back; its
    composites compute after the last stored step in NumPy's arithmetic, whose same_kind casting refuses
    a float result into a bool or integer output."""
    if array_kind.startswith("torch"):
        pytest.skip("scipy's stores are reproduced on NumPy and CuPy arrays; torch casts as torch does")
    rng = np.random.default_rng(5)
    inputs = [F * 200, (F * 200).astype(np.float32), (F * 5000).astype(np.int32), (F * 40 + 128).astype(np.uint8),
              (F * 1e10).astype(np.int64), F > 0]
    for x in inputs:
        for out in [o for o in STORE_OUTS if np.dtype(o) != x.dtype]:
            for form in ("dtype", "array"):
                kw2 = dict(kw, cval=float(rng.choice([0.0, 1.5, 3.0]))) if x.dtype.kind in "biu" and \
                    kw.get("mode") == "constant" else kw
                with np.errstate(all="ignore"):
                    ref = _result(getattr(sn, name), x, args, kw2, out, form)
                got = _result(getattr(nd, name), x, args, kw2, out, form)
                assert got == ref, (name, x.dtype, out, form, kw2)


def test_integer_images_meet_scipys_double_cval(array_kind):
    """A constant-mode cval that the integer image's dtype cannot hold (1.5, -2 and 300 for uint8): scipy's
    1-D minimum and maximum passes compare the values as doubles with cval itself, which an output of
    another dtype keeps; its other filters read C's cast of cval to the image's dtype ((_type)cval, -2 is
    254).  (A step whose result stays in the image's dtype, such as the erosion of an opening, refuses a
    cval out of that dtype's range: ADR 0003.)"""
    if array_kind.startswith("torch"):
        pytest.skip("scipy's stores are reproduced on NumPy and CuPy arrays; torch casts as torch does")
    x = (F * 40 + 128).astype(np.uint8)
    for name, args, kw, cvals in [("minimum_filter", (), dict(size=3), (1.5, -2.0, 300.0)),
                                  ("maximum_filter", (), dict(footprint=np.eye(3)), (1.5, -2.0, 300.0)),
                                  ("rank_filter", (-1,), dict(size=(2, 3)), (1.5, -2.0, 300.0)),
                                  ("median_filter", (), dict(footprint=np.eye(3)), (1.5, -2.0, 300.0)),
                                  ("grey_dilation", (), dict(size=(3, 1)), (1.5, -2.0, 300.0)),
                                  ("grey_opening", (), dict(size=3), (1.5,))]:
        for cval in cvals:
            for out in ("float32", "float64", "int16", "bool"):
                ref = _result(getattr(sn, name), x, args, dict(kw, mode="constant", cval=cval), out, "array")
                got = _result(getattr(nd, name), x, args, dict(kw, mode="constant", cval=cval), out, "array")
                assert got == ref, (name, cval, out)


def test_grey_footprint_of_another_rank_into_another_dtype(array_kind):
    # the stored-pass path (an all-ones footprint into a narrower output) refuses a footprint whose rank is not
    # the image's as the same-dtype call does (scipy: RuntimeError; its grey_dilation of a rank-1 footprint
    # fails earlier, with an IndexError from its own origin arithmetic)
    x = np.random.default_rng(3).random((6, 7)) * 300
    for fp in (np.ones(3), np.ones((3, 3, 3))):
        for fn in ("grey_erosion", "grey_dilation"):
            same_error(lambda: getattr(nd, fn)(x, footprint=fp),
                       lambda: getattr(nd, fn)(x, footprint=fp, output=np.uint8))
            if fn == "grey_erosion" or fp.ndim == 3:
                same_error(lambda: getattr(sn, fn)(x, footprint=fp, output=np.uint8),
                           lambda: getattr(nd, fn)(x, footprint=fp, output=np.uint8))


def test_clip_of_64_bit_integers_with_bounds_beyond_their_range():
    """numpy.clip of an int64 or uint64 image with a Python int bound at or beyond the dtype's range (2**63,
    -1 for uint64, 2**64): the installed NumPy's result -- NumPy 2 drops the bound and keeps the dtype,
    NumPy 1 widens to float64 (a bound one past the range) or to object (beyond 64 bits).  The library's
    float64 bounds stop below 2^63 and 2^64; the values here are exact in float64."""
    import ndforge.intensity as it
    for dt in (np.int64, np.uint64):
        a = np.array([[0, 5, 2 ** 40], [2 ** 52, 7, 2 ** 53]], dtype=dt)
        if dt == np.int64:
            a[0, 1] = -(2 ** 50)
        for lo, hi in ((0, 2 ** 63), (-1, 10), (0, 2 ** 64), (-2 ** 63 - 1, 3), (-2 ** 64, 2 ** 64), (-1, 2 ** 64),
                       (0, 2 ** 63 - 1), (int(np.iinfo(dt).min), int(np.iinfo(dt).max)), (6, 2 ** 64 - 1)):
            with np.errstate(all="ignore"):
                want = np.clip(a, lo, hi)
            got = it.clip(a, lo, hi)
            assert got.dtype == want.dtype, (dt, lo, hi, got.dtype, want.dtype)
            assert got.tolist() == want.tolist(), (dt, lo, hi)


def test_label_into_a_byte_swapped_output_is_scipys_value_error():
    """scipy's label refuses an output of the other byte order (an array or a dtype) with a ValueError
    ("Big-endian buffer not supported on little-endian compiler"); ndforge says the same, where before it
    labelled through a temporary."""
    x = B.astype(np.uint8)
    other = ">" if np.dtype(np.int32).byteorder in "=<" and np.little_endian else "<"
    for out in (np.zeros(x.shape, other + "i4"), np.dtype(other + "u2"), other + "f8"):
        with pytest.raises(ValueError) as r:
            sn.label(x, output=out)
        with pytest.raises(ValueError) as g:
            ndforge.ndimage.label(x, output=out)
        assert str(g.value) == str(r.value)
    n = ndforge.ndimage.label(x, output=np.zeros(x.shape, "=i4"))
    assert n == sn.label(x)[1]


@pytest.mark.parametrize("name,args", [("median_filter", ()), ("rank_filter", (-2,)), ("rank_filter", (0,)),
                                       ("percentile_filter", (70,)), ("percentile_filter", (10,))])
def test_rank_filters_into_uint64_with_a_negative_cval(name, args):
    """A negative constant-mode cval and a uint64 output: scipy reads cval cast to the image's dtype (uint8:
    -2 is 254; int16 and float images keep -2) and stores the selected value with C's cast, which wraps a
    negative value in the int64 range modulo 2^64.  Below -2^63 the cast is undefined C (scipy's rank path
    and its 1-D minimum pass disagree; ADR 0003): ndforge stores 2^63 there, not compared.  A uint64 image
    itself refuses a negative cval (ADR 0003)."""
    fp = dict(footprint=[[1, 0, 1], [1, 1, 0]]) if name == "median_filter" else dict(size=3)
    for dt in (np.uint8, np.int16, np.int32, np.float32, np.float64):
        x = (np.arange(1, 31).reshape(5, 6) * 3 % 17).astype(dt)
        for cval in (-2.0, -2.5, -3e9, -1e15):
            for kw in (fp, dict(size=(1, 3))):
                want = getattr(sn, name)(x, *args, **kw, mode="constant", cval=cval, output=np.uint64)
                got = getattr(ndforge.ndimage, name)(x, *args, **kw, mode="constant", cval=cval, output=np.uint64)
                assert got.dtype == want.dtype and got.tolist() == want.tolist(), (name, dt, cval, kw)
    x = np.arange(1, 13, dtype=np.float64).reshape(3, 4)
    got = getattr(ndforge.ndimage, name)(x, *args, size=3, mode="constant", cval=-1e20, output=np.uint64)
    want = getattr(ndforge.ndimage, name)(x, *args, size=3, mode="constant", cval=-1e20)
    assert got.tolist() == np.where(want < -2.0 ** 63, 2 ** 63, want).astype(np.uint64).tolist()
    with pytest.raises(ValueError):
        getattr(ndforge.ndimage, name)(x.astype(np.uint64), *args, size=3, mode="constant", cval=-2.0)


def test_float32_images_meet_scipys_double_cval_in_the_separable_passes():
    """A float32 image, a constant-mode cval float32 cannot hold (-0.1, -1e15) and an output of another
    dtype: scipy's 1-D minimum and maximum passes (a box's minimum_filter, and the ranks 0 and n - 1 of its
    rank filters) compare with the double cval, which the output keeps; its other paths read
    (float)cval."""
    x = (F * 10).astype(np.float32)
    for name, args, kw in [("minimum_filter", (), dict(size=3)), ("rank_filter", (0,), dict(size=3)),
                           ("rank_filter", (-1,), dict(size=(2, 3))), ("percentile_filter", (100,), dict(size=3)),
                           ("median_filter", (), dict(size=3)), ("minimum_filter", (), dict(footprint=np.eye(3)))]:
        for cval in (-0.1, -1e15, 1e15):
            for out in (np.float64, np.int64, np.uint64):
                with np.errstate(all="ignore"):
                    want = getattr(sn, name)(x, *args, **kw, mode="constant", cval=cval, output=out)
                got = getattr(ndforge.ndimage, name)(x, *args, **kw, mode="constant", cval=cval, output=out)
                assert got.dtype == want.dtype and got.tolist() == want.tolist(), (name, args, kw, cval, out)
