"""ndforge.morphology.reconstruction against skimage.morphology.reconstruction (skipped where either is missing),
on the array kinds of NDFORGE_TEST_ARRAYS (arrays.py)."""

import numpy as np
import pytest

from ndforge import _capi
import ndforge.morphology
from arrays import OnArrays, fixture

nm = OnArrays(ndforge.morphology)
array_kind = fixture(nm)

sk = pytest.importorskip("skimage.morphology")
# scikit-image 0.19 (Debian 12's) reconstructs in float64 whatever the dtypes, 0.26 keeps a float32 mask's (a probe)
_SKIMAGE_RECONSTRUCTION_FLOAT64 = sk.reconstruction(np.zeros((2, 2), np.float32),
                                                    np.ones((2, 2), np.float32)).dtype == np.float64
pytestmark = pytest.mark.skipif("ndf_reconstruction" not in _capi.functions,
                                reason="this libndforge has no ndf_reconstruction")


@pytest.mark.parametrize("method", ["dilation", "erosion"])
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32, np.float64])
def test_reconstruction(method, dtype):
    rng = np.random.default_rng(0)
    mask = (rng.random((17, 19)) * 100).astype(dtype)
    if method == "dilation":
        seed = mask.copy()
        seed[1:-1, 1:-1] = mask.min()
    else:
        seed = mask.copy()
        seed[1:-1, 1:-1] = mask.max()
    r = nm.reconstruction(seed, mask, method)
    ref = sk.reconstruction(seed, mask, method)
    # ndforge's dtype is scikit-image 0.26's (float32 for a float32 mask); 0.19 gives float64 (docs/adr/0033)
    assert r.dtype == (np.float32 if dtype == np.float32 else np.float64)
    if ref.dtype != r.dtype:
        assert ref.dtype == np.float64 and _SKIMAGE_RECONSTRUCTION_FLOAT64
    np.testing.assert_array_equal(r, ref)
    fp = np.array([[0, 1, 0], [1, 1, 1], [0, 1, 0]], bool)
    np.testing.assert_array_equal(nm.reconstruction(seed, mask, method, footprint=fp),
                                  sk.reconstruction(seed, mask, method, footprint=fp))
    same = nm.reconstruction(seed, mask, method, output=seed.dtype)
    assert same.dtype == seed.dtype
    np.testing.assert_array_equal(same, ref.astype(seed.dtype))


def test_reconstruction_errors():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    with pytest.raises(ValueError):
        nm.reconstruction(x + 1, x)  # seed above the mask
    with pytest.raises(ValueError):
        nm.reconstruction(x, x, method="opening")


def test_output_arrays_are_written_or_refused():
    seed = np.zeros((6, 7))
    seed[2, 3] = 1.0
    mask = np.ones((6, 7))
    out = np.zeros((6, 7))
    assert nm.reconstruction(seed, mask, output=out) is out
    np.testing.assert_array_equal(out, sk.reconstruction(seed, mask))
    ro = np.zeros((6, 7))
    ro.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        ndforge.morphology.reconstruction(seed, mask, output=ro)
    with pytest.raises(ValueError, match="shape"):
        ndforge.morphology.reconstruction(seed, mask, output=np.zeros((6, 6)))
