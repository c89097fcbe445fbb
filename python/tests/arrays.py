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
import sys

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


# scipy as ndforge documents it where the installed build or version differs (docs/adr/0033), shared with the
# C tests' oracle: tests/scipy_documented.py (the suite runs from the source tree's python/tests)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tests"))
import scipy_documented  # noqa: E402

scipy_affine_transform = scipy_documented.affine_transform
scipy_rotate = scipy_documented.rotate


@contextlib.contextmanager
def scipy_prefilter_as_1_18():
    """Within the block, scipy.ndimage's reflect / grid-mirror / nearest prefilter (spline_filter1d, and so
    spline_filter and the transforms' prefilter) as scipy 1.18 computes it, which ndforge follows, where the
    installed scipy's is older (scipy_documented.spline_filter1d_as_1_18)."""
    import scipy.ndimage as sn
    from scipy.ndimage import _interpolation
    if scipy_documented.prefilter_is_exact():
        yield
        return
    old = _interpolation.spline_filter1d
    _interpolation.spline_filter1d = sn.spline_filter1d = scipy_documented.spline_filter1d_as_1_18(old)
    try:
        yield
    finally:
        _interpolation.spline_filter1d = sn.spline_filter1d = old
