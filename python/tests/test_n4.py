"""ndforge._n4.n4_bias_field_correction: SimpleITK's keywords, results against SimpleITK's N4 on a small
volume (skipped without SimpleITK), outputs and errors."""

import numpy as np
import pytest

from ndforge import _capi

pytestmark = pytest.mark.skipif("ndf_n4_bias_field_correction" not in _capi.functions,
                                reason="this libndforge has no N4")

from ndforge._n4 import n4_bias_field_correction  # noqa: E402


def volume(shape=(30, 34, 28), seed=0):
    rng = np.random.default_rng(seed)
    g = np.meshgrid(*[np.linspace(-1, 1, n) for n in shape], indexing="ij")
    logb = 0.3 * g[0] - 0.2 * g[1] * g[2] + 0.15 * g[2] ** 2
    tissue = np.where(rng.random(shape) < 0.5, 80.0, 160.0) + rng.normal(0, 8, shape)
    mask = (sum(x * x for x in g) < 1.5).astype(np.uint8)
    return (tissue * np.exp(logb)).astype(np.float32), mask, logb


def test_outputs_and_info():
    img, mask, _ = volume()
    out, lb, info = n4_bias_field_correction(img, mask, maximumNumberOfIterations=[20, 20], shrinkFactor=2,
                                             return_log_bias_field=True, return_info=True)
    assert out.dtype == np.float32 and lb.dtype == np.float32 and out.shape == img.shape
    np.testing.assert_allclose(out, img / np.exp(lb.astype(np.float64)), rtol=1e-5)
    assert len(info["iterations"]) == 2 and all(1 <= n <= 20 for n in info["iterations"])
    out64 = n4_bias_field_correction(img.astype(np.float64), mask, maximumNumberOfIterations=[5])
    assert out64.dtype == np.float64


def test_against_simpleitk():
    sitk = pytest.importorskip("SimpleITK")
    img, mask, _ = volume()
    n4 = sitk.N4BiasFieldCorrectionImageFilter()
    n4.SetMaximumNumberOfIterations([30, 30, 30])
    si = sitk.GetImageFromArray(img)
    n4.Execute(si, sitk.GetImageFromArray(mask))
    ref = sitk.GetArrayFromImage(n4.GetLogBiasFieldAsImage(si))
    _, lb = n4_bias_field_correction(img, mask, maximumNumberOfIterations=[30, 30, 30], return_log_bias_field=True)
    d = (lb - ref)[mask > 0]
    assert np.abs(d - d.mean()).max() < 1e-3


def test_errors():
    img, mask, _ = volume((8, 9, 10))
    with pytest.raises(ValueError, match="number_of_histogram_bins"):
        n4_bias_field_correction(img, mask, numberOfHistogramBins=1)
    with pytest.raises(ValueError, match="spline_order"):
        n4_bias_field_correction(img, mask, splineOrder=0)
    with pytest.raises(ValueError, match="no voxel"):
        n4_bias_field_correction(img, np.zeros_like(mask))
    with pytest.raises(ValueError):
        n4_bias_field_correction(img, mask[:-1])
