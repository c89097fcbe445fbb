"""ndforge.ndimage's spline filters and geometric transforms against scipy.ndimage (skipped where the
library has none), on the array kinds of NDFORGE_TEST_ARRAYS (arrays.py)."""

import numpy as np
import pytest
import scipy.ndimage as sn

import ndforge.ndimage
from ndforge import _capi
from arrays import (OnArrays, fixture, close_to_scipy as close, scipy_affine_transform, scipy_prefilter_as_1_18,
                    scipy_rotate)

pytestmark = pytest.mark.skipif("ndf_map_coordinates" not in _capi.functions,
                                reason="this libndforge has no interpolation")
nd = OnArrays(ndforge.ndimage, array_args=("input", "coordinates"))
array_kind = fixture(nd)

MODES = ["constant", "grid-constant", "nearest", "reflect", "mirror", "wrap", "grid-wrap"]


def data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.normal(size=shape).astype(dtype)
    return rng.integers(0, 100, size=shape).astype(dtype)


def reference(name):
    """scipy.ndimage's function name, with ndforge's documented arithmetic where the installed scipy's differs:
    rotate's and affine_transform's coordinates (arrays.scipy_rotate, scipy_affine_transform) and the reflect /
    nearest prefilter of scipy 1.18 (arrays.scipy_prefilter_as_1_18); docs/adr/0033."""
    fn = dict(rotate=scipy_rotate, affine_transform=scipy_affine_transform)

    def call(*args, **kw):
        with scipy_prefilter_as_1_18():
            return fn.get(name, getattr(sn, name))(*args, **kw)
    return call


def coords(shape, n, seed=1):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.5, np.array(shape, float)[:, None] + 0.5, size=(len(shape), n))


@pytest.mark.parametrize("order", [0, 1, 2, 3, 5])
@pytest.mark.parametrize("mode", MODES)
def test_map_coordinates(order, mode):
    x = data((11, 13), np.float64)
    c = coords(x.shape, 40)
    close(nd.map_coordinates(x, c, order=order, mode=mode, cval=0.5),
          reference("map_coordinates")(x, c, order=order, mode=mode, cval=0.5))


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32, np.float64])
def test_transforms(dtype):
    x = data((12, 10), dtype)
    close(nd.shift(x, (1.5, -2.25)), sn.shift(x, (1.5, -2.25)))
    close(nd.zoom(x, (1.7, 0.6), mode="nearest"), sn.zoom(x, (1.7, 0.6), mode="nearest"))
    close(nd.zoom(x, 1.5, mode="grid-constant", grid_mode=True), sn.zoom(x, 1.5, mode="grid-constant", grid_mode=True))
    close(nd.rotate(x, 30), sn.rotate(x, 30))
    close(nd.rotate(x, -75, reshape=False, order=1, mode="reflect"),
          sn.rotate(x, -75, reshape=False, order=1, mode="reflect"))
    m = np.array([[0.9, 0.2], [-0.1, 1.1]])
    close(nd.affine_transform(x, m, offset=(0.5, -1)), sn.affine_transform(x, m, offset=(0.5, -1)))
    close(nd.affine_transform(x, [1.2, 0.8], output_shape=(9, 14)),
          sn.affine_transform(x, [1.2, 0.8], output_shape=(9, 14)))
    close(nd.spline_filter(x), sn.spline_filter(x))
    close(nd.spline_filter1d(x, 4, axis=0, mode="wrap"), sn.spline_filter1d(x, 4, axis=0, mode="wrap"))


def _odd_bool(shape, seed):
    """A bool array holding bytes other than 0 and 1 too (as scipy's bool outputs of interpolation do)."""
    rng = np.random.default_rng(seed)
    b = rng.random(shape) > 0.5
    m = rng.random(shape) < 0.2
    b.view(np.uint8)[m] = rng.integers(2, 256, size=int(m.sum()))
    return b


def _same_bytes(got, want, what):
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    np.testing.assert_array_equal(got.view(np.uint8) if got.dtype == np.bool_ else got,
                                  want.view(np.uint8) if want.dtype == np.bool_ else want, err_msg=what)


@pytest.mark.parametrize("order", range(6))
def test_bool_outputs_as_scipy(order):
    """scipy 1.10 stores an interpolated value into a bool output with C's cast to unsigned char (0.9 is
    False, 37.2 the byte 37, -1.5 the byte 255): a bool input's default output and output=bool of any input,
    in every mode, with and without the prefilter; a bool input read as its bytes."""
    rng = np.random.default_rng(order)
    b = rng.random((9, 11)) > 0.5
    ob = _odd_bool((9, 11), order)
    x = rng.integers(-500, 500, (9, 11)).astype(np.int16)
    f = rng.normal(size=(9, 11)) * 3
    c = rng.random((2, 30)) * 12 - 1.5
    m = [[0.9, 0.2], [-0.1, 1.1]]
    for mode in MODES:
        for prefilter in (True, False):
            kw = dict(order=order, mode=mode, cval=0.7, prefilter=prefilter)
            calls = [("zoom", (b, 1.7), {}), ("zoom", (x, 1.7), dict(output=np.bool_)),
                     ("zoom", (f, (0.6, 1.3)), dict(output=np.bool_, grid_mode=True)),
                     ("shift", (b, (0.3, -1.4)), {}), ("shift", (f, 0.5), dict(output=bool)),
                     ("rotate", (b, 23), {}), ("rotate", (ob, -40), dict(reshape=False, output=np.uint8)),
                     ("affine_transform", (b, m), {}), ("affine_transform", (ob, m), dict(output=bool)),
                     ("affine_transform", (f, [1.2, 0.8]), dict(output=bool, output_shape=(7, 12))),
                     ("map_coordinates", (x, c), dict(output=np.bool_)), ("map_coordinates", (b, c), {}),
                     ("map_coordinates", (ob, c), dict(output=np.float64))]
            for name, args, extra in calls:
                k = dict(kw, **extra)
                _same_bytes(getattr(nd, name)(*args, **k), reference(name)(*args, **k),
                            "%s %s prefilter %s %s" % (name, mode, prefilter, extra))
    out, ref = np.zeros((15, 18), bool), np.zeros((15, 18), bool)
    nd.zoom(x, (15 / 9, 18 / 11), order=order, output=out)
    sn.zoom(x, (15 / 9, 18 / 11), order=order, output=ref)
    _same_bytes(out, ref, "zoom into a bool array")


# Does the installed scipy copy a zoom by exactly 1 with the prefilter (>= 1.16: 2.75 into int16 truncates to 2;
# scipy 1.10 interpolates, rounding to 3)?
SCIPY_ZOOM_1_COPIES = int(sn.zoom(np.array([2.75, 3.0]), 1, order=1, output=np.int16)[0]) == 2


@pytest.mark.parametrize("order", range(6))
def test_zoom_by_one_copies(array_kind, order):
    """A zoom by exactly 1 on every axis with the prefilter is the input as NumPy converts it into the output,
    in every order and mode (scipy >= 1.16, its issue 20999; scipy 1.10 interpolates, adding the spline's
    round-off and rounding into integers): docs/adr/0033.  Without the prefilter the input is spline
    coefficients, interpolated as scipy does."""
    rng = np.random.default_rng(order)
    f = rng.normal(size=(2, 9, 11)) * 300
    if array_kind in ("numpy", "torch-cpu"):
        f[0, 1, 2] = np.nan  # NaN into an integer: the x86-64 conversion, as NumPy's
    ins = [f, f[1].astype(np.float32), rng.integers(-2 ** 40, 2 ** 40, (9, 11)), rng.random((9, 11)) > 0.5,
           rng.integers(0, 256, (4, 5, 6)).astype(np.uint8)]
    for x in ins:
        for odt in (None, np.float32, np.int16, np.uint8, np.bool_, np.int64):
            want = np.zeros(x.shape, odt or x.dtype)
            with np.errstate(invalid="ignore"):
                want[...] = x
            for z, mode in ((1, "constant"), (1.0, "reflect"), ((1.0,) * x.ndim, "grid-wrap")):
                kw = dict(order=order, mode=mode, cval=-3.5, output=odt)
                got = nd.zoom(x, z, **kw)
                _same_bytes(got, want, "zoom of %s by %r into %s" % (x.dtype, z, odt))
                if SCIPY_ZOOM_1_COPIES:
                    _same_bytes(got, sn.zoom(x, z, **kw), "scipy's zoom of %s into %s" % (x.dtype, odt))
    _same_bytes(nd.zoom(f, 1, order=order, batch_dims=1), f, "batched")
    g = f[1]
    close(nd.zoom(g, 1, order=order, prefilter=False), reference("zoom")(g, 1, order=order, prefilter=False))
    close(nd.zoom(g, (1, 1.0001), order=order), reference("zoom")(g, (1, 1.0001), order=order))


@pytest.mark.parametrize("order", range(6))
@pytest.mark.parametrize("mode", ["mirror", "reflect", "nearest", "wrap", "grid-wrap", "constant"])
def test_bool_spline_filters_as_scipy(order, mode):
    """spline_filter1d / spline_filter with bool inputs and outputs, as scipy 1.10: a bool read as its
    byte, stored with C's cast (spline_filter's passes into a bool output each stored as bool); a filter
    of order <= 1 copies with NumPy's casts (v != 0 into a bool; a bool's bytes as 0 or 1 into another
    dtype, as they are into a bool)."""
    rng = np.random.default_rng(10 + order)
    f = rng.normal(size=(7, 9, 5)) * 40
    f.flat[3] = np.nan
    x = rng.integers(-300, 300, (7, 9, 5)).astype(np.int32)
    ob = _odd_bool((7, 9, 5), order)
    for a in (f, x, ob, ob.view(np.uint8) > 0):
        for out in (bool, np.uint8, np.float64, np.int64):
            for axis in (0, -1):
                _same_bytes(nd.spline_filter1d(a, order, axis, out, mode),
                            reference("spline_filter1d")(a, order, axis, out, mode),
                            "spline_filter1d %s->%s axis %d" % (a.dtype, np.dtype(out), axis))
            if order >= 2:
                _same_bytes(nd.spline_filter(a, order, out, mode), reference("spline_filter")(a, order, out, mode),
                            "spline_filter %s->%s" % (a.dtype, np.dtype(out)))
    if order >= 2:  # in place, into the input's own memory
        got, want = ob.copy(), ob.copy()
        nd.spline_filter(got, order, got, mode)
        reference("spline_filter")(want, order, want, mode)
        _same_bytes(got, want, "spline_filter in place")


def _nan_data(shape, dtype, seed):
    x = data(shape, dtype, seed)
    x.flat[np.random.default_rng(seed).choice(x.size, 2, replace=False)] = np.nan
    return x


@pytest.mark.parametrize("order", range(6))
@pytest.mark.parametrize("mode", ["constant", "nearest", "reflect", "mirror", "wrap", "grid-constant"])
def test_nan_input_as_scipy(order, mode):
    """ndforge.h: NaN in a float input reaches every output whose spline support holds it (through the
    prefilter's lines for order >= 2), NaN into an integer output as scipy on x86-64 -- scipy's values."""
    x = _nan_data((11, 9), np.float64, order)
    c = coords(x.shape, 60, seed=order)
    m = np.array([[0.9, 0.2], [-0.1, 1.1]])
    calls = [("map_coordinates", (x, c), {}), ("zoom", (x, 1.6), {}), ("shift", (x, (0.4, -1.3)), {}),
             ("affine_transform", (x, m), dict(offset=(0.5, -1))), ("rotate", (x, 35), dict(reshape=False))]
    for name, args, kw in calls:
        for out in (None, np.float32, np.int32, np.int16, np.uint8):
            k = dict(kw, order=order, mode=mode, cval=0.5)
            if out is not None:
                k["output"] = out
            got, want = getattr(nd, name)(*args, **k), reference(name)(*args, **k)
            if got.dtype.kind == "f":
                np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg="%s %s" % (name, out))
                assert np.isnan(want).any() or name != "zoom", name  # upsampling samples every voxel
            close(got, want)
    f = _nan_data((11, 9), np.float32, order + 10)
    close(nd.spline_filter(f, order=max(order, 2), mode=mode if mode != "grid-constant" else "mirror"),
          reference("spline_filter")(f, order=max(order, 2), mode=mode if mode != "grid-constant" else "mirror"))


@pytest.mark.parametrize("order", [0, 1, 3, 5])
def test_nan_and_huge_coordinates(order):
    """ndforge.h's own rule (scipy converts such coordinates to integers with undefined results): a NaN or
    infinite coordinate, or one of magnitude 2^52 or more, gives cval, except in the nearest and
    grid-constant modes, where it gives NaN (float outputs; integer outputs take NaN's conversion)."""
    x = data((5, 6), np.float64)
    bad = [np.nan, np.inf, -np.inf, 2.0 ** 52, -2.0 ** 60]
    c = np.array([bad + [1.5, np.nan], [1.0] * len(bad) + [np.nan, 2.0]])
    for mode in MODES + ["mirror", "grid-mirror"]:
        got = nd.map_coordinates(x, c, order=order, mode=mode, cval=-7.5)
        nan_modes = mode in ("nearest", "grid-constant")
        np.testing.assert_array_equal(got, np.full(c.shape[1], np.nan if nan_modes else -7.5), err_msg=mode)
        i32 = nd.map_coordinates(x, c, order=order, mode=mode, cval=-7.5, output=np.int32)
        np.testing.assert_array_equal(i32, np.full(c.shape[1], -2 ** 31 if nan_modes else -8), err_msg=mode)
        u8 = nd.map_coordinates(x, c, order=order, mode=mode, cval=-7.5, output=np.uint8)
        np.testing.assert_array_equal(u8, np.zeros(c.shape[1], np.uint8), err_msg=mode)
    # a NaN shift moves every point to a NaN coordinate
    np.testing.assert_array_equal(nd.shift(x, np.nan, order=order, cval=2.0), np.full(x.shape, 2.0))
    assert np.isnan(nd.shift(x, (np.nan, 0), order=order, mode="nearest")).all()


@pytest.mark.filterwarnings("ignore:The behavior of affine_transform")
def test_empty_inputs_and_outputs(array_kind):
    """Empty arrays as scipy: an empty output is scipy's (shape and dtype); zoom of an empty input or to
    an axis of extent 0 gives the empty zoomed shape; points outside an empty input are scipy's values
    in the constant and grid-constant modes (cval; grid-constant's prefilter over its cval padding) and
    ValueError in the modes that would read samples the input does not have."""
    e = np.zeros((0, 5))
    for name, args, kw in [("shift", (e, 1.0), {}), ("affine_transform", (e, np.eye(2)), {}),
                           ("spline_filter", (e,), {}), ("spline_filter1d", (e,), dict(axis=0)),
                           ("map_coordinates", (np.ones((4, 5)), np.zeros((2, 0))), {}),
                           ("affine_transform", (np.ones((3, 4)), np.eye(2)), dict(output_shape=(0, 4))),
                           ("zoom", (np.ones((2, 0, 3)), 1.5), {}), ("zoom", (e.astype(np.uint8), 2), {}),
                           ("zoom", (e, 0.5), dict(grid_mode=True, mode="grid-constant")),
                           ("zoom", (np.ones(3), 0.1), {}),  # round(0.3) = 0
                           ("zoom", (np.ones((3, 4)), (1, 0.1)), {}), ("zoom", (np.ones((3, 4)), 0), {}),
                           ("rotate", (e, 90), {}), ("rotate", (e, 30), dict(reshape=False))]:
        got, want = getattr(nd, name)(*args, **kw), getattr(sn, name)(*args, **kw)
        assert got.shape == want.shape and got.dtype == want.dtype, name
    got = nd.shift(np.ones((0, 4, 5)), 0.5, batch_dims=1)
    assert got.shape == (0, 4, 5) and got.dtype == np.float64
    rng = np.random.default_rng(5)
    for x in (e, np.zeros((3, 0), np.uint8), np.zeros((2, 0, 4), np.float32)):
        k = x.ndim
        pts = rng.uniform(-20, 20, (k, 9))
        for mode in ("constant", "grid-constant"):
            for order in range(6):
                for prefilter in (True, False):
                    kw = dict(order=order, mode=mode, cval=-2.6, prefilter=prefilter)
                    for odt in (None, np.float64, np.int16):
                        calls = [("map_coordinates", (x, pts), dict(output=odt)),
                                 ("affine_transform", (x, np.eye(k) * 1.3), dict(offset=-2.2, output_shape=(5,) * k,
                                                                                  output=odt)),
                                 ("affine_transform", (x, np.ones(k) * 0.7), dict(offset=1.1, output_shape=(4,) * k,
                                                                                  output=odt))]
                        if k >= 2:
                            calls.append(("rotate", (x, 37), dict(output=odt)))
                        for name, args, kw2 in calls:
                            got = getattr(nd, name)(*args, **kw, **kw2)
                            want = reference(name)(*args, **kw, **kw2)
                            assert got.dtype == want.dtype, name
                            if array_kind == "numpy":  # the CPU: scipy's bits
                                np.testing.assert_array_equal(got, want, err_msg="%s %r" % (name, kw))
                            else:  # a GPU: scipy's values to ~1e-13 (ndforge.h)
                                close(got, want)
    for mode in ("nearest", "reflect", "mirror", "wrap", "grid-wrap"):
        with pytest.raises(ValueError, match="empty"):
            nd.rotate(e, 30, mode=mode)
        with pytest.raises(ValueError, match="empty"):
            nd.map_coordinates(e, np.zeros((2, 3)), mode=mode)
    for x, z in ((np.ones(3), 0.1), (np.ones((4, 5), np.uint8), (1, 0.08)), (np.zeros((0, 3)), 2)):  # round(0.3) = 0
        close(nd.zoom(x, z), sn.zoom(x, z))
        out = np.zeros(sn.zoom(x, z).shape, np.float32)
        assert nd.zoom(x, z, output=out) is out
        assert nd.zoom(x, z, output=np.int16).dtype == np.int16
    with pytest.raises(ValueError, match="zoom"):
        nd.zoom(np.ones(3), -1)


def test_output_forms_and_3d():
    x = data((7, 8, 6), np.float32)
    close(nd.rotate(x, 20, axes=(2, 0)), sn.rotate(x, 20, axes=(2, 0)))
    close(nd.shift(x, 0.5, output=np.float64), sn.shift(x, 0.5, output=np.float64))
    out = np.zeros(x.shape, np.int32)
    assert nd.shift(x * 50, 0.5, output=out) is out
    close(out, sn.shift(x * 50, 0.5, output=np.int32))
    close(nd.spline_filter1d(x, order=1), sn.spline_filter1d(x, order=1))


ERRORS = [
    ("map_coordinates", (np.zeros((3, 5)),), dict(order=7)),
    ("map_coordinates", (np.zeros((3, 5)),), dict(mode="bogus")),
    ("map_coordinates", (np.zeros((1, 5)),), {}),
    ("shift", ((1, 2, 3),), {}),
    ("rotate", (30,), dict(axes=(0, 5))),
    ("spline_filter", (), dict(order=1)),
    ("affine_transform", (np.ones((3, 3, 3)),), {}),
]


@pytest.mark.parametrize("name,args,kw", ERRORS, ids=["%s-%d" % (e[0], i) for i, e in enumerate(ERRORS)])
def test_error_types(name, args, kw):
    x = data((6, 7), np.float64)
    with pytest.raises(Exception) as ref:
        getattr(sn, name)(x, *args, **kw)
    with pytest.raises(Exception) as got:
        getattr(nd, name)(x, *args, **kw)
    assert type(got.value) is type(ref.value), (got.value, ref.value)
