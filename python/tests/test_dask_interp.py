"""ndforge.dask's interpolation against the single-array ndforge calls (which test_interp holds equal to scipy),
bit for bit, over random chunkings of input and output: single-voxel chunks, uneven last chunks, orders 0 to 5,
every mode, coordinates far outside the array.  Skipped where dask or the library's interpolation is missing."""

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
import dask  # noqa: E402

import ndforge.ndimage as ndi  # noqa: E402
import ndforge.dask as nd  # noqa: E402
from dask_chunks import chunkings, cupy_device, same  # noqa: E402

pytestmark = pytest.mark.skipif(not hasattr(ndi, "map_coordinates"), reason="this libndforge has no interpolation")


@pytest.fixture(autouse=True)
def _synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


MODES = ["constant", "grid-constant", "nearest", "reflect", "mirror", "wrap", "grid-wrap"]
RNG = np.random.default_rng(11)
IMG = RNG.random((9, 11))
IMG3 = (RNG.random((6, 7, 5)) * 200).astype(np.float32)


def _cases(k):
    """(order, mode, input chunking index) pairs, every order and every mode met."""
    return [(order, MODES[(order + 3 * k + j) % len(MODES)], (order + j + k) % 4) for order in range(6) for j in (0, 4)]


@pytest.mark.parametrize("shift", [(1.3, -2.7), (15.25, -30.6)])
def test_shift(shift):
    chs = chunkings(IMG.shape, 1, (4, 3))
    for order, mode, c in _cases(0 if shift[0] < 5 else 1):
        x = da.from_array(IMG, chunks=chs[c])
        same(nd.shift(x, shift, order=order, mode=mode, cval=0.5), ndi.shift(IMG, shift, order=order, mode=mode,
                                                                             cval=0.5))


@pytest.mark.parametrize("grid_mode", [False, True])
def test_zoom(grid_mode):
    chs = chunkings(IMG.shape, 2, (4, 3))
    for order, mode, c in _cases(2 + grid_mode):
        x = da.from_array(IMG, chunks=chs[c])
        for z, oc in (((1.7, 0.6), (3, 2)), (0.45, None), (1, None), ((1.0, 1.0), (3, 2))):  # by 1: a copy
            same(nd.zoom(x, z, order=order, mode=mode, grid_mode=grid_mode, output_chunks=oc),
                ndi.zoom(IMG, z, order=order, mode=mode, grid_mode=grid_mode))


def test_affine_and_rotate():
    chs = chunkings(IMG.shape, 3, (4, 3))
    m = np.array([[0.9, 0.3], [-0.2, 1.1]])
    for order, mode, c in _cases(4):
        x = da.from_array(IMG, chunks=chs[c])
        same(nd.affine_transform(x, m, (1.5, -2), output_shape=(12, 7), order=order, mode=mode, cval=-1,
                                output_chunks=(5, 3)),
            ndi.affine_transform(IMG, m, (1.5, -2), output_shape=(12, 7), order=order, mode=mode, cval=-1))
        same(nd.rotate(x, 23, order=order, mode=mode, output_chunks=(4, 1)), ndi.rotate(IMG, 23, order=order, mode=mode))
    # a homogeneous matrix, a diagonal (zoom-shift) one, and a map mostly outside the input
    h = np.array([[1.2, 0.1, -3.0], [0.05, 0.8, 2.0], [0, 0, 1]])
    for c in range(4):
        x = da.from_array(IMG, chunks=chs[c])
        same(nd.affine_transform(x, h, order=3, mode="mirror"), ndi.affine_transform(IMG, h, order=3, mode="mirror"))
        same(nd.affine_transform(x, [0.7, 1.3], 0.4, order=2, mode="nearest"),
            ndi.affine_transform(IMG, [0.7, 1.3], 0.4, order=2, mode="nearest"))
        same(nd.affine_transform(x, 3 * m, (-20, 15), order=4, mode="grid-wrap"),
            ndi.affine_transform(IMG, 3 * m, (-20, 15), order=4, mode="grid-wrap"))


def test_small_axes_and_output_rank():
    """Axes shorter than a tap's reach, a 1-D input, an output of another rank than the input's."""
    rng = np.random.default_rng(12)
    u16 = rng.integers(0, 60000, (8, 9)).astype(np.uint16)
    m = [[0.5, 0.2, 0.1, 0.4], [0.3, -0.7, 0.9, -0.2]]
    for k, mode in enumerate(MODES):
        order = k % 6
        for shape in ((1, 7), (3, 4)):
            a = rng.random(shape)
            same(nd.shift(da.from_array(a, chunks=1), (0.4, -1.6), order=order, mode=mode),
                ndi.shift(a, (0.4, -1.6), order=order, mode=mode))
        a1 = rng.random(13)
        same(nd.zoom(da.from_array(a1, chunks=3), 2.3, order=order, mode=mode, output_chunks=4),
            ndi.zoom(a1, 2.3, order=order, mode=mode))
        same(nd.affine_transform(da.from_array(u16, chunks=(3, 4)), m, (1, 2), output_shape=(4, 5, 3, 2), order=order,
                                mode=mode, output_chunks=(2, 2, 2, 1)),
            ndi.affine_transform(u16, m, (1, 2), output_shape=(4, 5, 3, 2), order=order, mode=mode))


def test_3d_dtypes_batch():
    chs = chunkings(IMG3.shape, 4, (4, 3))
    for c, (order, mode) in enumerate([(3, "reflect"), (1, "constant"), (5, "grid-constant"), (0, "nearest")]):
        x = da.from_array(IMG3, chunks=chs[c])
        same(nd.zoom(x, (0.8, 1.3, 0.7), order=order, mode=mode, output_chunks=2),
            ndi.zoom(IMG3, (0.8, 1.3, 0.7), order=order, mode=mode))
        same(nd.shift(x, (0.5, -1.25, 2), output=np.uint8, order=order, mode=mode, cval=7),
            ndi.shift(IMG3, (0.5, -1.25, 2), output=np.uint8, order=order, mode=mode, cval=7))
        same(nd.rotate(x, -37, axes=(2, 0), order=order, mode=mode, output_chunks=(2, 3, 4)),
            ndi.rotate(IMG3, -37, axes=(2, 0), order=order, mode=mode))
        same(nd.rotate(x, 61, reshape=False, order=order, mode=mode, batch_dims=1),
            ndi.rotate(IMG3, 61, reshape=False, order=order, mode=mode, batch_dims=1))
        same(nd.shift(x.astype(np.float16), 0.3, output=np.float16, order=order, mode=mode),
            ndi.shift(IMG3.astype(np.float16), 0.3, output=np.float16, order=order, mode=mode))
    u = (IMG3 * 1.2).astype(np.uint8)
    same(nd.zoom(da.from_array(u, chunks=chs[2]), 1.5, order=3, mode="grid-constant", cval=300),
        ndi.zoom(u, 1.5, order=3, mode="grid-constant", cval=300))


def test_map_coordinates():
    rng = np.random.default_rng(5)
    co = rng.uniform(-14, 24, (2, 6, 5))
    co[0, 1, 2] = np.nan
    co[1, 3, 3] = 1e17
    co[0, 4, 4] = -0.25
    co[1, 0, 0] = 10.75
    co[0, 2, 2] = 8.5
    chs = chunkings(IMG.shape, 6, (4, 3))
    for order, mode, c in _cases(5):
        x = da.from_array(IMG, chunks=chs[c])
        e = ndi.map_coordinates(IMG, co, order=order, mode=mode, cval=3.0)
        same(nd.map_coordinates(x, co, order=order, mode=mode, cval=3.0), e)
        same(nd.map_coordinates(x, da.from_array(co, chunks=(2, 2, 3)), order=order, mode=mode, cval=3.0), e)
    near = rng.uniform(0, 8, (2, 3, 4)).astype(np.float32)  # coordinates inside: regions smaller than the input
    b = np.stack([IMG, IMG[::-1]])
    for c in range(4):
        x = da.from_array(b, chunks=(1,) + chs[c])
        same(nd.map_coordinates(x, da.from_array(near, chunks=(2, 1, 2)), order=3, mode="mirror", batch_dims=1),
            ndi.map_coordinates(b, near, order=3, mode="mirror", batch_dims=1))


def test_spline_filters():
    for c, ch in enumerate(chunkings(IMG3.shape, 7, (4, 3))):
        x = da.from_array(IMG3, chunks=ch)
        mode = MODES[(2 * c + 1) % len(MODES)]
        same(nd.spline_filter(x, order=c + 2, mode=mode), ndi.spline_filter(IMG3, order=c + 2, mode=mode))
        same(nd.spline_filter1d(x, order=c + 2, axis=1, mode=mode), ndi.spline_filter1d(IMG3, order=c + 2, axis=1,
                                                                                       mode=mode))
        same(nd.spline_filter(x, 3, output=np.int16, mode=mode, batch_dims=1),
            ndi.spline_filter(IMG3, 3, output=np.int16, mode=mode, batch_dims=1))
        same(nd.spline_filter(x, 4, output=np.float16), ndi.spline_filter(IMG3, 4, output=np.float16))


def test_empty():
    """An input with an empty axis, or an output without elements: the single call's result (points outside an
    empty input: cval, grid-constant's padding interpolated), or its error in the other modes."""
    e = np.zeros((0, 5), np.float32)
    x = da.from_array(e, chunks=3)
    for order, mode in [(1, "constant"), (3, "grid-constant"), (0, "grid-constant")]:
        kw = dict(order=order, mode=mode, cval=2.5)
        same(nd.rotate(x, 30, **kw), ndi.rotate(e, 30, **kw))
        same(nd.affine_transform(x, np.eye(2) * 1.2, 0.5, output_shape=(3, 4), **kw),
             ndi.affine_transform(e, np.eye(2) * 1.2, 0.5, output_shape=(3, 4), **kw))
        same(nd.affine_transform(x, [1.2, 0.8], 0.5, output_shape=(3, 4), **kw),  # a diagonal (1-D) matrix
             ndi.affine_transform(e, [1.2, 0.8], 0.5, output_shape=(3, 4), **kw))
        pts = np.array([[0.0, -1.5, 3], [2.0, 4.5, -7]])
        same(nd.map_coordinates(x, pts, **kw), ndi.map_coordinates(e, pts, **kw))
        same(nd.zoom(x, 2, **kw), ndi.zoom(e, 2, **kw))
        same(nd.shift(x, 1.5, **kw), ndi.shift(e, 1.5, **kw))
    same(nd.zoom(da.from_array(IMG, chunks=4), (1, 0.04)), ndi.zoom(IMG, (1, 0.04)))  # round(0.44) = 0
    same(nd.zoom(da.from_array(np.zeros((3, 0, 4)), chunks=2), 2, batch_dims=1),
         ndi.zoom(np.zeros((3, 0, 4)), 2, batch_dims=1))
    same(nd.spline_filter(x), ndi.spline_filter(e))
    with pytest.raises(ValueError, match="empty"):
        nd.rotate(x, 30, mode="nearest").compute()


def test_region_is_bounded():
    """An output chunk reads a region of the input near its own, not the whole axis."""
    img = RNG.random((64, 64))
    x = da.from_array(img, chunks=16)
    r = nd.shift(x, (2.5, -3.25), order=3, mode="reflect")
    keys = [k for k in dict(r.__dask_graph__()) if isinstance(k, tuple) and k[0] == r.name]
    assert len(keys) == 16
    same(r, ndi.shift(img, (2.5, -3.25), order=3, mode="reflect"))
    # order 1 has no prefilter, whose last pass holds whole lines: the evaluation's own region is what counts
    r = nd.shift(x, (2.5, -3.25), order=1, mode="reflect")
    same(r, ndi.shift(img, (2.5, -3.25), order=1, mode="reflect"))
    g = dict(r.__dask_graph__())
    t = g[(r.name, 1, 1)]
    deps = t.dependencies if hasattr(t, "dependencies") else [k for k in t[1]]
    assert len(deps) <= 9


@pytest.mark.skipif(cupy_device() is None, reason="no CuPy device")
def test_cupy_chunks():
    cp = cupy_device()
    co = np.random.default_rng(8).uniform(-3, 12, (2, 5, 4))
    for k, ch in enumerate(chunkings(IMG.shape, 9, (4, 3))):
        x = da.from_array(cp.asarray(IMG), chunks=ch, asarray=False)
        for order in (1, 3, 5):
            mode = MODES[(k + order) % len(MODES)]
            for r, e in ((nd.zoom(x, (1.4, 0.7), order=order, mode=mode), ndi.zoom(IMG, (1.4, 0.7), order=order,
                                                                                   mode=mode)),
                         (nd.rotate(x, 31, order=order, mode=mode), ndi.rotate(IMG, 31, order=order, mode=mode)),
                         (nd.map_coordinates(x, co, order=order, mode=mode),
                          ndi.map_coordinates(IMG, co, order=order, mode=mode))):
                r = r.compute()
                assert isinstance(r, cp.ndarray)
                np.testing.assert_array_equal(cp.asnumpy(r), e)
