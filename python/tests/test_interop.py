"""Arrays reaching the library: NumPy views, DLPack capsules, other __dlpack__ producers, the device= path."""

import os

import numpy as np
import pytest
import scipy.ndimage as sn

import ndforge
import ndforge.ndimage as nd
from ndforge import _core


def fields(d):
    return (d.data, d.device, d.dtype, d.ndim, tuple(d.shape[:d.ndim]), tuple(d.strides[:d.ndim]))


@pytest.mark.parametrize("view", ["plain", "transposed", "reversed", "sliced"])
def test_dlpack_capsule_reads_like_the_array_interface(view):
    x = np.arange(4 * 5 * 6, dtype=np.float32).reshape(4, 5, 6)
    v = {"plain": x, "transposed": x.transpose(2, 0, 1), "reversed": x[::-1, :, ::2], "sliced": x[1:, 2:4]}[view]
    a, _ = _core.describe(v, _core.HOST)
    b, _ = _core.describe(v, _core.Placement(_core.NDF_CPU, 0, None, "dlpack"))
    assert fields(a) == fields(b)


class Producer:
    """An array of no known framework that only speaks DLPack."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, stream=None):
        return self.a.__dlpack__()

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def test_other_dlpack_producers_run_on_the_cpu():
    x = np.random.default_rng(0).random((9, 8)).astype(np.float32)
    r = nd.grey_erosion(Producer(x), size=3)
    assert isinstance(r, np.ndarray)
    np.testing.assert_array_equal(r, sn.grey_erosion(x, size=3))


def test_lists_are_arrays():
    x = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    np.testing.assert_array_equal(nd.grey_dilation(x, size=2), sn.grey_dilation(np.asarray(x), size=2))


def test_in_place_output_is_computed_before_it_is_written():
    x = np.random.default_rng(1).random((10, 10))
    ref = sn.grey_dilation(x, size=3)
    nd.grey_dilation(x, size=3, output=x)
    np.testing.assert_array_equal(x, ref)


def test_device_cpu_is_accepted_for_host_arrays():
    x = np.random.default_rng(2).random((7, 9)).astype(np.float32)
    np.testing.assert_array_equal(nd.median_filter(x, size=3, device="cpu"), sn.median_filter(x, size=3))


def test_version_and_library():
    assert ndforge.__version__.count(".") == 2
    assert ndforge.library_path.endswith(".so")
    if os.environ.get("NDFORGE_EXPECT_INSTALLED"):  # tools/test.sh: the installed wheel, not the source tree
        assert "site-packages" in ndforge.__file__ and "site-packages" in ndforge.library_path


def test_threads_get_their_own_context():
    import threading
    x = np.random.default_rng(3).random((30, 30))
    ref = sn.grey_erosion(x, size=5)
    errs = []

    def work():
        try:
            for _ in range(20):
                np.testing.assert_array_equal(nd.grey_erosion(x, size=5), ref)
        except Exception as e:  # reported below
            errs.append(e)
    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errs


def test_prepared_calls_repeat_exactly():
    # the second call of the same arguments takes the prepared path (ndimage._PLANS)
    x = np.random.default_rng(4).random((12, 11)).astype(np.float32)
    ref = sn.grey_closing(x, size=(3, 2), mode="wrap")
    for _ in range(3):
        np.testing.assert_array_equal(nd.grey_closing(x, size=(3, 2), mode="wrap"), ref)
    out = np.empty_like(x)
    assert nd.grey_closing(x, size=(3, 2), mode="wrap", output=out) is out
    np.testing.assert_array_equal(out, ref)
    out64 = np.empty(x.shape)
    nd.grey_closing(x, size=(3, 2), mode="wrap", output=out64)
    np.testing.assert_array_equal(out64, sn.grey_closing(x, size=(3, 2), mode="wrap", output=np.float64))
    nd.grey_closing(x, size=(3, 2), mode="wrap", output=x)  # in place: through a temporary
    np.testing.assert_array_equal(x, ref)
    with pytest.raises(RuntimeError):
        nd.rank_filter(x, 50, size=3)
    nd.rank_filter(x, 5, size=3)
    with pytest.raises(RuntimeError):
        nd.rank_filter(x, 50, size=3)


def test_tunables_per_call():
    if "ndf_tunable_count" not in ndforge._capi.functions:
        pytest.skip("this libndforge has no tunables")
    names = {t["name"]: t for t in ndforge.tunables()}
    assert names and all(t["default"] is not None for t in names.values())
    x = np.random.default_rng(5).random((16, 15)).astype(np.float32)
    rank = [n for n, t in names.items() if t["op"] == "rank" and "values" in t]
    if rank:
        t = names[rank[0]]
        np.testing.assert_array_equal(nd.median_filter(x, size=3, tune="%s=%s" % (t["name"], t["values"][-1])),
                                      sn.median_filter(x, size=3))
    with pytest.raises(ValueError, match="tunable"):
        nd.grey_erosion(x, size=3, tune="no.such_tunable=1")
    with pytest.raises(TypeError):
        nd.median_filter(x, size=3, tune=3)
