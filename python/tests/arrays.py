"""The array kinds a test module's ndforge calls run on, so that one suite checks NumPy, torch and CuPy.

``NDFORGE_TEST_ARRAYS`` lists the kinds (comma-separated; default ``numpy``):

* ``numpy``: the calls as written;
* ``torch-cpu``: NumPy arguments go in as torch CPU tensors;
* ``torch``: as torch CUDA tensors; ``cupy``: as CuPy arrays.

``on_arrays(module)`` wraps a module (``ndforge.ndimage``): each of its
functions converts the array arguments named in ARRAY_ARGS (the input, the
mask, the seed, or the names given) to the current kind, passes NumPy output arrays as arrays of
that kind and copies them back afterwards (the NumPy array is what the call
returns, as scipy's would be), and converts the results back to NumPy.  A
test module makes it current with the fixture ``array_kind``.  A kind whose
framework or device is missing skips, or fails under ``NDFORGE_REQUIRE_GPU=1``
(the GPU machine's run, where a skip would hide a missing device).
"""

import contextlib
import functools
import inspect
import os

import numpy as np
import pytest

ARRAY_ARGS = ("input", "mask", "seed")
OUTPUT_ARGS = ("output", "distances", "indices")
REQUIRE_GPU = os.environ.get("NDFORGE_REQUIRE_GPU") == "1"


def kinds():
    env = os.environ.get("NDFORGE_TEST_ARRAYS", "numpy")
    return [k.strip() for k in env.split(",") if k.strip()]


def unavailable(reason):
    if REQUIRE_GPU:
        pytest.fail("NDFORGE_REQUIRE_GPU=1: " + reason)
    pytest.skip(reason)


class _Kind:
    def __init__(self, name):
        self.name = name
        self.torch = self.cupy = None
        if name in ("torch", "torch-cpu"):
            try:
                import torch
            except ImportError:
                unavailable("no torch")
            if name == "torch" and not torch.cuda.is_available():
                unavailable("no torch CUDA device")
            self.torch = torch
            self.device = "cuda" if name == "torch" else "cpu"
        elif name == "cupy":
            try:
                import cupy
                if cupy.cuda.runtime.getDeviceCount() < 1:
                    raise RuntimeError
            except Exception:
                unavailable("no CuPy device")
            self.cupy = cupy
        elif name != "numpy":
            raise ValueError("NDFORGE_TEST_ARRAYS: unknown kind %r (numpy, torch-cpu, torch, cupy)" % name)

    def to(self, a):
        if not isinstance(a, np.ndarray) or self.name == "numpy":
            return a
        if self.torch is not None:
            if any(st < 0 for st in a.strides):  # torch has no negative strides
                a = a.copy()
            return self.torch.from_numpy(a).to(self.device)  # strides kept (a view stays a view on the CPU)
        return self.cupy.asarray(a)

    def back(self, r):
        if isinstance(r, tuple):
            return tuple(self.back(v) for v in r)
        if self.torch is not None and isinstance(r, self.torch.Tensor):
            return r.cpu().numpy()
        if self.cupy is not None and isinstance(r, self.cupy.ndarray):
            return self.cupy.asnumpy(r)
        return r


class OnArrays:
    """A module whose functions run on the current array kind (see the module's doc)."""

    def __init__(self, module, array_args=ARRAY_ARGS):
        self._module = module
        self._kind = _Kind("numpy")
        self._array_args = array_args
        self.__all__ = module.__all__

    def use(self, name):
        self._kind = _Kind(name)

    def __getattr__(self, name):
        fn = getattr(self._module, name)
        if not callable(fn) or self._kind.name == "numpy":
            return fn
        sig = inspect.signature(fn)
        kind, array_args = self._kind, self._array_args

        @functools.wraps(fn)
        def call(*args, **kw):
            try:
                bound = sig.bind(*args, **kw)
            except TypeError:
                return fn(*args, **kw)
            given = {}
            for k, v in bound.arguments.items():
                if k in array_args:
                    bound.arguments[k] = kind.to(v)
                elif k in OUTPUT_ARGS and isinstance(v, np.ndarray):
                    given[k] = v
                    bound.arguments[k] = kind.to(v)
            r = fn(*bound.args, **bound.kwargs)
            for k, host in given.items():
                np.copyto(host, kind.back(bound.arguments[k]))
            outs = {id(bound.arguments[k]): host for k, host in given.items()}

            def back(v):
                if isinstance(v, tuple):
                    return tuple(back(x) for x in v)
                return outs.get(id(v), kind.back(v)) if v is not None else v
            return back(r)
        return call


def fixture(target):
    """An autouse fixture, parametrized over kinds(), that makes each kind current for target (an OnArrays)."""
    @pytest.fixture(autouse=True, params=kinds())
    def array_kind(request):
        target.use(request.param)
        yield request.param
        target.use("numpy")
    return array_kind


def same_error(ref, got, *args, **kw):
    """ref(*args, **kw) and got(*args, **kw) both raise, an exception of the same type."""
    with pytest.raises(Exception) as r:
        ref(*args, **kw)
    with pytest.raises(Exception) as g:
        got(*args, **kw)
    assert type(g.value) is type(r.value), (g.value, r.value)


def close_to_scipy(a, b):
    """scipy's interpolation values to about 1e-13 relative (ndforge.h, the GPU's rule); integer outputs within
    one rounding step."""
    assert type(a) is type(b) and a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
    if a.dtype.kind == "f":
        np.testing.assert_allclose(a, b, rtol=1e-11 if a.dtype.itemsize == 8 else 1e-5, atol=1e-11)
    else:
        assert np.abs(a.astype(np.float64) - b.astype(np.float64)).max(initial=0) <= 1


def _scipy_affine_is_unfused():
    """Whether the installed scipy's affine_transform (a full matrix) takes each input coordinate as ndforge
    documents it: the products summed left to right, then the offset, each operation rounded (scipy 1.10; the
    scipy 1.17 and 1.18 wheels differ in the last bit of some coordinates, as fused multiply-adds would)."""
    import scipy.ndimage as sn
    x = np.random.default_rng(0).normal(size=(9, 11))
    m, off = np.array([[0.81, -0.57], [0.57, 0.81]]), np.array([2.3, -1.7])
    i, j = np.indices((9, 11)).astype(np.float64)
    c = [(i * m[k, 0] + j * m[k, 1]) + off[k] for k in range(2)]
    return np.array_equal(sn.affine_transform(x, m, off, order=1, mode="grid-constant", cval=-2.6),
                          sn.map_coordinates(x, c, order=1, mode="grid-constant", cval=-2.6))


_AFFINE_UNFUSED = []


def scipy_affine_transform(input, matrix, offset=0.0, output_shape=None, output=None, order=3, mode="constant",
                           cval=0.0, prefilter=True):
    """scipy.ndimage.affine_transform, with each input coordinate computed as ndforge documents it (the products
    summed left to right, then the offset, each operation rounded): where the installed scipy's differs (its
    1.17 and 1.18 wheels), scipy's map_coordinates at the coordinates computed so (docs/adr/0033)."""
    import scipy.ndimage as sn
    if not _AFFINE_UNFUSED:
        _AFFINE_UNFUSED.append(_scipy_affine_is_unfused())
    m = np.asarray(matrix, np.float64)
    if _AFFINE_UNFUSED[0] or m.ndim == 1:
        return sn.affine_transform(input, matrix, offset, output_shape, output, order, mode, cval, prefilter)
    x = np.asarray(input)
    n = x.ndim
    if m.shape[1] == n + 1:  # homogeneous, (n + 1, n + 1) or (n, n + 1): the offset is its last column
        m, offset = m[:n, :n], m[:n, n]
    if output_shape is None:
        output_shape = output.shape if isinstance(output, np.ndarray) else x.shape
    offset = np.broadcast_to(np.asarray(offset, np.float64), (n,))
    o = np.indices(output_shape).astype(np.float64)
    coords = []
    for h in range(n):
        t = o[0] * m[h, 0]
        for k in range(1, m.shape[1]):
            t = t + o[k] * m[h, k]
        coords.append(t + offset[h])
    return sn.map_coordinates(x, np.array(coords).reshape((n,) + tuple(output_shape)), output, order, mode, cval,
                              prefilter)


def scipy_rotate(input, angle, axes=(1, 0), reshape=True, output=None, order=3, mode="constant", cval=0.0,
                 prefilter=True):
    """scipy.ndimage.rotate with its arithmetic as ndforge documents it: the geometry (the output plane's extent
    and the offset) and each point's input coordinate from separately rounded products and sums.  scipy takes the
    geometry from NumPy's matmul, which NumPy 2's OpenBLAS builds compute with fused multiply-adds, and its
    newer wheels' affine_transform differs in the same way; where either changes a bit, the reference is
    scipy_affine_transform of each plane with ndforge's geometry (docs/adr/0033)."""
    import scipy.ndimage as sn
    from scipy import special
    if not _AFFINE_UNFUSED:
        _AFFINE_UNFUSED.append(_scipy_affine_is_unfused())
    x = np.asarray(input)
    a0, a1 = sorted(int(a) % x.ndim for a in axes)
    c, s = float(special.cosdg(angle)), float(special.sindg(angle))
    iy, ix = x.shape[a0], x.shape[a1]
    rot = np.array([[c, s], [-s, c]])
    if reshape:
        b0, b1 = [0.0, s * ix, c * iy, c * iy + s * ix], [0.0, c * ix, -s * iy, -s * iy + c * ix]
        plane = (int(max(b0) - min(b0) + 0.5), int(max(b1) - min(b1) + 0.5))
        fused = (np.ptp(rot @ [[0, 0, iy, iy], [0, ix, 0, ix]], axis=1) + 0.5).astype(int)
    else:
        plane = fused = (iy, ix)
    h0, h1 = (plane[0] - 1) / 2, (plane[1] - 1) / 2
    offset = np.array([(iy - 1) / 2 - (c * h0 + s * h1), (ix - 1) / 2 - (-s * h0 + c * h1)])
    if _AFFINE_UNFUSED[0] and tuple(fused) == plane and np.array_equal(
            (np.array([iy, ix]) - 1) / 2 - rot @ ((np.array(plane) - 1) / 2), offset):
        return sn.rotate(input, angle, axes, reshape, output, order, mode, cval, prefilter)
    shape = list(x.shape)
    shape[a0], shape[a1] = plane
    out = output if isinstance(output, np.ndarray) else np.zeros(shape, x.dtype if output is None else output)
    others = [k for k in range(x.ndim) if k not in (a0, a1)]
    for idx in np.ndindex(*[x.shape[k] for k in others]):
        sl = [slice(None)] * x.ndim
        for k, v in zip(others, idx):
            sl[k] = v
        scipy_affine_transform(x[tuple(sl)], rot, offset, plane, out[tuple(sl)], order, mode, cval, prefilter)
    return out


# The spline prefilter's poles (scipy's values, as the library's ndf__spline_poles).
SPLINE_POLES = {2: [-0.171572875253809902396622551580603843], 3: [-0.267949192431122706472553658494127633],
                4: [-0.361341225900220177092212841325675255, -0.013725429297339121360331226939128204],
                5: [-0.430575347099973791851434783493520110, -0.043096288203264653822712376822550182]}


def _reflect_prefilter(c, order):
    """The reflect / nearest prefilter of the lines c[:, l] (float64, in place) in scipy 1.18's order of
    operations: the gain, then per pole the causal initial value from the samples as they are, the causal
    recursion, the anticausal initial value and recursion."""
    n = c.shape[0]
    gain = 1.0
    for z in SPLINE_POLES[order]:
        gain *= (1.0 - z) * (1.0 - 1.0 / z)
    c *= gain
    for z in SPLINE_POLES[order]:
        zn, zi = z ** n, z
        acc = c[0] + zn * c[n - 1]
        for i in range(1, n):
            acc = acc + zi * (c[i] + zn * c[n - 1 - i])
            zi *= z
        c[0] = c[0] + acc * z / (1 - zn * zn)
        for i in range(1, n):
            c[i] = c[i] + z * c[i - 1]
        c[n - 1] = c[n - 1] * (z / (z - 1))
        for i in range(n - 2, -1, -1):
            c[i] = z * (c[i + 1] - c[i])
    return c


def _scipy_reflect_prefilter_is_exact():
    """Whether the installed scipy's reflect / nearest prefilter inverts the B-spline sampling (scipy 1.18 and
    later).  Before 1.18 scipy accumulated the causal initial sum in c[0] itself, so that its last term read the
    partial sum (scipy PR 24615): an error of order z^(2n) on a line of n samples."""
    import scipy.ndimage as sn
    x = np.array([1.0, -2.0])
    return np.allclose(sn.map_coordinates(x, [[0.0, 1.0]], order=5, mode="reflect"), x, rtol=1e-12, atol=1e-12)


_PREFILTER_EXACT = []


@contextlib.contextmanager
def scipy_prefilter_as_1_18():
    """Within the block, scipy.ndimage's reflect / grid-mirror / nearest prefilter (spline_filter1d, and so
    spline_filter and the transforms' prefilter) as scipy 1.18 computes it, which ndforge follows, where the
    installed scipy's is older (docs/adr/0033): 1.18's arithmetic (_reflect_prefilter), stored through scipy's
    own line store (correlate1d with the weight 1: an exact product, the same C casts as spline_filter1d's)."""
    import scipy.ndimage as sn
    from scipy.ndimage import _interpolation
    if not _PREFILTER_EXACT:
        _PREFILTER_EXACT.append(_scipy_reflect_prefilter_is_exact())
    if _PREFILTER_EXACT[0]:
        yield
        return
    old = _interpolation.spline_filter1d

    def spline_filter1d(input, order=3, axis=-1, output=np.float64, mode="mirror"):
        x = np.asarray(input)
        if order < 2 or mode not in ("reflect", "grid-mirror", "nearest") or x.ndim == 0 or x.shape[axis] <= 1:
            return old(input, order, axis, output, mode)
        lines = np.moveaxis(x.view(np.uint8) if x.dtype == np.bool_ else x, axis, 0)  # a bool read as its byte
        c = _reflect_prefilter(lines.astype(np.float64).reshape(x.shape[axis], -1), order)
        return sn.correlate1d(np.moveaxis(c.reshape(lines.shape), 0, axis), [1.0], axis, output=output,
                              mode="nearest")

    _interpolation.spline_filter1d = sn.spline_filter1d = spline_filter1d
    try:
        yield
    finally:
        _interpolation.spline_filter1d = sn.spline_filter1d = old
