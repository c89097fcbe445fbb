"""The package's context options: set_cpu_threads (the CPU backend's threads; results do not depend
on them) and set_device_memory_limit (the library's GPU memory per context; MemoryError past it)."""

import numpy as np
import pytest

import ndforge
import ndforge.ndimage as nd

try:
    import cupy
    HAS_CUPY = cupy.cuda.runtime.getDeviceCount() > 0
except Exception:
    cupy = None
    HAS_CUPY = False


@pytest.fixture(autouse=True)
def _defaults():
    yield
    ndforge.set_cpu_threads(0)
    ndforge.set_device_memory_limit(0)


def _calls(rng):
    f = rng.standard_normal((23, 31, 17)).astype(np.float32)
    u = (rng.random((40, 37)) > 0.6).astype(np.uint8)
    i = rng.integers(-1000, 1000, (19, 24, 11)).astype(np.int16)
    return [
        ("gaussian_filter", lambda: nd.gaussian_filter(f, 1.5)),
        ("gaussian_gradient_magnitude", lambda: nd.gaussian_gradient_magnitude(f, 1.0)),
        ("median_filter", lambda: nd.median_filter(f, size=3)),
        ("grey_opening", lambda: nd.grey_opening(i, size=3)),
        ("label", lambda: nd.label(u)),
        ("distance_transform_edt", lambda: nd.distance_transform_edt(u)),
        ("binary_closing", lambda: nd.binary_closing(u, iterations=2)),
        ("zoom", lambda: nd.zoom(f, 1.5, order=3)),
    ]


def _same(a, b):
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    return a == b


def test_cpu_threads_give_the_same_results():
    rng = np.random.default_rng(7)
    for name, call in _calls(rng):
        got = {}
        for n in (1, 2):
            ndforge.set_cpu_threads(n)
            assert ndforge.get_cpu_threads() == n
            got[n] = call()
        assert _same(got[1], got[2]), name


def test_cpu_threads_as_a_context_manager():
    ndforge.set_cpu_threads(3)
    with ndforge.set_cpu_threads(1):
        assert ndforge.get_cpu_threads() == 1
        nd.gaussian_filter(np.ones((5, 5)), 1.0)
    assert ndforge.get_cpu_threads() == 3


@pytest.mark.parametrize("bad,err", [(-1, ValueError), (1025, ValueError), (1.5, TypeError), ("2", TypeError),
                                     (True, TypeError), (None, TypeError)])
def test_cpu_threads_bad_values(bad, err):
    with pytest.raises(err):
        ndforge.set_cpu_threads(bad)
    assert ndforge.get_cpu_threads() == 0


@pytest.mark.parametrize("bad,err", [(-1, ValueError), (2 ** 64, ValueError), (1e9, TypeError), ("1G", TypeError)])
def test_device_memory_limit_bad_values(bad, err):
    with pytest.raises(err):
        ndforge.set_device_memory_limit(bad)
    assert ndforge.get_device_memory_limit() == 0


def test_device_memory_limit_leaves_the_cpu_alone():
    x = np.random.default_rng(1).standard_normal((20, 21, 22))
    want = nd.gaussian_gradient_magnitude(x, 1.0)
    with ndforge.set_device_memory_limit(1):
        assert ndforge.get_device_memory_limit() == 1
        assert _same(nd.gaussian_gradient_magnitude(x, 1.0), want)
    assert ndforge.get_device_memory_limit() == 0


@pytest.mark.skipif(not HAS_CUPY, reason="no CuPy device")
def test_device_memory_limit_on_the_gpu():
    x = cupy.asarray(np.random.default_rng(2).standard_normal((32, 33, 34)).astype(np.float32))
    want = cupy.asnumpy(nd.gaussian_gradient_magnitude(x, 1.0))
    with ndforge.set_device_memory_limit(4096):  # below the scratch of one term
        with pytest.raises(MemoryError, match="device_memory_limit"):
            nd.gaussian_gradient_magnitude(x, 1.0)
    got = cupy.asnumpy(nd.gaussian_gradient_magnitude(x, 1.0))
    assert got.tobytes() == want.tobytes()
    with ndforge.set_device_memory_limit(64 << 20):
        assert cupy.asnumpy(nd.gaussian_gradient_magnitude(x, 1.0)).tobytes() == want.tobytes()


def test_a_held_context_outlives_an_options_change(monkeypatch):
    """A context something still holds (a staged device copy freed later) is not destroyed when the
    options change and the thread's table drops it; it is destroyed, once, when the last holder goes."""
    from ndforge import _core
    ctx = _core.context()
    handle = int(ctx)
    destroyed = []  # counted from here (an address may be reused after an earlier destroy)
    real = _core.C["ndf_ctx_destroy"]
    monkeypatch.setitem(_core.C, "ndf_ctx_destroy", lambda h: (destroyed.append(int(h)), real(h))[1])
    with ndforge.set_cpu_threads(1):
        assert int(_core.context()) != handle  # a new context under the new options
        assert handle not in destroyed
        _core.check(_core.C["ndf_ctx_synchronize"](ctx), ctx)  # still a live context
        np.testing.assert_array_equal(nd.uniform_filter(np.arange(12.0), 3), nd.uniform_filter(np.arange(12.0), 3))
    assert handle not in destroyed
    del ctx
    assert destroyed.count(handle) == 1
