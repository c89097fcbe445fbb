"""ndforge._bet (skull stripping, mask fusion and clean-up): the compositions against NumPy / scipy
compositions, skull stripping on a synthetic head and on ch2 (Debian's mricron-data) against FSL BET's
ch2bet, and bad options refused."""

import os

import numpy as np
import pytest

from ndforge import _capi

pytestmark = pytest.mark.skipif("ndf_skull_strip" not in _capi.functions, reason="this libndforge has no skull_strip")

from ndforge import _bet  # noqa: E402

ndi = pytest.importorskip("scipy.ndimage")

CH2 = "/usr/share/mricron/templates/ch2.nii.gz"
CH2BET = "/usr/share/mricron/templates/ch2bet.nii.gz"


def head(n=64, h=2.0, seed=0):
    rng = np.random.default_rng(seed)
    c = (np.arange(n) - (n - 1) / 2) * h
    x, y, z = np.meshgrid(c, c, c, indexing="ij")
    rad = np.array([0.30, 0.36, 0.27]) * n * h
    q = np.sqrt((x / rad[0]) ** 2 + (y / rad[1]) ** 2 + (z / rad[2]) ** 2)
    out = (q - 1) * rad[2]
    img = np.where(q <= 1, 100 + 5 * rng.standard_normal(q.shape),
                   np.where(out <= 4, 20, np.where(out <= 8, 5, np.where(out <= 12, 90, 0))))
    return np.clip(np.round(img), 0, 255).astype(np.uint8), q <= 1


def dice(a, b):
    return 2 * np.sum(a & b) / (np.sum(a) + np.sum(b))


def test_skull_strip_phantom():
    img, brain = head()
    m = _bet.skull_strip(img, spacing=2.0)
    assert m.dtype == np.bool_ and m.shape == img.shape
    assert dice(m, brain) >= 0.95
    # the same values in float32 and Fortran order: the same mask
    assert np.array_equal(_bet.skull_strip(np.asfortranarray(img.astype(np.float32)), spacing=(2, 2, 2)), m)
    # and in uint64 (read through double, as every other dtype)
    assert np.array_equal(_bet.skull_strip(img.astype(np.uint64), spacing=2.0), m)


def test_skull_strip_options():
    img, _ = head(40, 3.0)
    big = _bet.skull_strip(img, 3.0, f=0.2, iterations=300).sum()
    small = _bet.skull_strip(img, 3.0, f=0.8, iterations=300).sum()
    assert small <= big
    with pytest.raises(ValueError):
        _bet.skull_strip(img, 3.0, f=1.5)
    with pytest.raises(ValueError):
        _bet.skull_strip(img, 3.0, g=-2)
    with pytest.raises(ValueError):
        _bet.skull_strip(img[0], 3.0)


@pytest.mark.skipif(not (os.path.exists(CH2) and os.path.exists(CH2BET)), reason="Debian's mricron-data")
def test_skull_strip_ch2():
    nib = pytest.importorskip("nibabel")
    a, b = nib.load(CH2), nib.load(CH2BET)
    m = _bet.skull_strip(np.asarray(a.dataobj), spacing=a.header.get_zooms()[:3])
    d = dice(m, np.asarray(b.dataobj) > 0)
    print("ch2: Dice %.4f against ch2bet" % d)
    assert d >= 0.93


def test_mask_fusion_against_numpy():
    rng = np.random.default_rng(3)
    for _ in range(10):
        n = int(rng.integers(1, 5))
        shape = tuple(rng.integers(1, 9, size=3))
        masks = [rng.random(shape) < 0.5 for _ in range(n)]
        w = rng.integers(0, 5, size=n) / 4
        if w.sum() == 0:
            w[0] = 1
        th = rng.integers(0, 4) / 4
        vote = sum(wi * m for wi, m in zip(w, masks))
        want = vote > th * w.sum()
        assert np.array_equal(_bet.mask_fusion(masks, w, th), want)
    t1, t2, fl = np.array([1, 1, 1, 0], bool), np.array([0, 1, 0, 1], bool), np.array([0, 0, 1, 1], bool)
    assert _bet.mask_fusion([t1, t2, fl], (0.5, 0.3, 0.2)).tolist() == [False, True, True, False]
    with pytest.raises(ValueError):
        _bet.mask_fusion([t1, t2], (1, -1))


def scipy_clean(m, r, largest, fill, conn):
    if r > 0:
        g = np.indices((2 * r + 1,) * m.ndim) - r
        ball = (g ** 2).sum(0) <= r * r
        m = ndi.binary_opening(m, ball)
    if largest:
        lab, n = ndi.label(m, ndi.generate_binary_structure(m.ndim, conn))
        if n > 1:
            sizes = np.bincount(lab.ravel())
            sizes[0] = 0
            m = lab == np.argmax(sizes)
    if fill:
        m = ndi.binary_fill_holes(m)
    return m


def test_clean_mask_against_scipy():
    rng = np.random.default_rng(5)
    for k in range(8):
        shape = tuple(rng.integers(8, 24, size=int(rng.integers(2, 4))))
        m = ndi.gaussian_filter(rng.random(shape), 1.5) > 0.5
        r, conn = int(rng.integers(0, 3)), int(rng.integers(1, len(shape) + 1))
        largest, fill = bool(rng.integers(0, 2)), bool(rng.integers(0, 2))
        got = _bet.clean_mask(m, opening_radius=r, largest_component=largest, fill_holes=fill, connectivity=conn)
        assert np.array_equal(got, scipy_clean(m, r, largest, fill, conn)), (shape, r, conn, largest, fill)
