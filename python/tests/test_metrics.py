"""ndforge.metrics against skimage.metrics (skipped where either is missing), on the array kinds of
NDFORGE_TEST_ARRAYS (arrays.py)."""

import numpy as np
import pytest

import ndforge.metrics
from ndforge import _capi
from arrays import OnArrays, fixture

sk = pytest.importorskip("skimage.metrics")
pytestmark = pytest.mark.skipif("ndf_mean_squared_error" not in _capi.functions,
                                reason="this libndforge has no image metrics")


nm = OnArrays(ndforge.metrics, array_args=("image0", "image1", "image_true", "image_test", "im1", "im2", "mask0",
                                           "mask1"))
array_kind = fixture(nm)


def images(dtype, shape=(23, 19), seed=0):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        a = rng.random(shape).astype(dt)
        return a, np.clip(a + rng.normal(scale=0.1, size=shape), 0, 1).astype(dt)
    a = rng.integers(0, 200, size=shape).astype(dt)
    return a, np.clip(a.astype(np.int64) + rng.integers(-20, 20, size=shape), 0, 200).astype(dt)


def close(got, ref, rtol=1e-12):
    got = np.asarray(got)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=0)


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int64, np.uint64, np.float32, np.float64])
def test_simple_metrics(dtype):
    a, b = images(dtype)
    close(nm.mean_squared_error(a, b), sk.mean_squared_error(a, b))
    for norm in ("euclidean", "min-max", "mean"):
        close(nm.normalized_root_mse(a, b, normalization=norm), sk.normalized_root_mse(a, b, normalization=norm),
              rtol=1e-6 if norm == "mean" and dtype == np.float32 else 1e-12)
    close(nm.peak_signal_noise_ratio(a, b), sk.peak_signal_noise_ratio(a, b))
    close(nm.peak_signal_noise_ratio(a, b, data_range=300), sk.peak_signal_noise_ratio(a, b, data_range=300))


def test_batches():
    a, b = images(np.float64, (4, 12, 13))
    close(nm.mean_squared_error(a, b, batch_dims=1), [sk.mean_squared_error(a[i], b[i]) for i in range(4)])
    close(nm.structural_similarity(a, b, data_range=1, batch_dims=1),
          [sk.structural_similarity(a[i], b[i], data_range=1) for i in range(4)])


@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.float64])
def test_structural_similarity(dtype):
    a, b = images(dtype, (31, 29))
    # the mean SSIM is summed in float64 (scikit-image 0.19 averages a float32 map in float32)
    rtol = 1e-6 if dtype == np.float32 else 1e-12
    # ndforge's default data range of a float image is scikit-image 0.19's, 2 (the dtype range [-1, 1]);
    # scikit-image 0.26 refuses a float image without data_range, so the reference is given it (docs/adr/0033)
    dflt = dict(data_range=2.0) if np.dtype(dtype).kind == "f" else {}
    close(nm.structural_similarity(a, b), sk.structural_similarity(a, b, **dflt), rtol)
    kw = dict(win_size=5, data_range=1.5, K1=0.02, use_sample_covariance=False)
    close(nm.structural_similarity(a, b, **kw), sk.structural_similarity(a, b, **kw), rtol)
    m, s = nm.structural_similarity(a, b, gaussian_weights=True, sigma=1.2, full=True)
    r, t = sk.structural_similarity(a, b, gaussian_weights=True, sigma=1.2, full=True, **dflt)
    close(m, r, rtol)
    assert s.dtype == t.dtype
    np.testing.assert_allclose(s, t, rtol=rtol, atol=1e-12)
    c, d = images(dtype, (17, 16, 3), seed=1)
    close(nm.structural_similarity(c, d, channel_axis=2), sk.structural_similarity(c, d, channel_axis=2, **dflt),
          rtol)


def test_masks():
    rng = np.random.default_rng(3)
    a = rng.random((20, 21)) > 0.7
    b = rng.random((20, 21)) > 0.6
    close(nm.hausdorff_distance(a, b), sk.hausdorff_distance(a, b))
    close(nm.dice_coefficient(a, b), 2 * (a & b).sum() / (a.sum() + b.sum()))
    close(nm.jaccard_index(a, b), (a & b).sum() / (a | b).sum())
    z = np.zeros_like(a)
    assert nm.dice_coefficient(z, z) == 1 and nm.hausdorff_distance(z, z) == 0


def test_errors():
    a, b = images(np.float64)
    with pytest.raises(ValueError):
        nm.mean_squared_error(a, b[:-1])
    with pytest.raises(ValueError):
        nm.normalized_root_mse(a, b, normalization="bogus")
    with pytest.raises(ValueError):
        nm.structural_similarity(a, b, win_size=4)
