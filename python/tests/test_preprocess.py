"""ndforge.preprocess: reorientation against nibabel's as_closest_canonical (skipped without nibabel),
resampling and crops by their geometry (world points kept), normalization by its formulas."""

import numpy as np
import pytest

from ndforge import _capi

pytestmark = pytest.mark.skipif("ndf_reorient_ras" not in _capi.functions,
                                reason="this libndforge has no preprocessing steps")

import ndforge.preprocess as pp  # noqa: E402


def _rotation(rng):
    q = rng.normal(size=4)
    a, b, c, d = q / np.linalg.norm(q)
    return np.array([[a * a + b * b - c * c - d * d, 2 * (b * c - a * d), 2 * (b * d + a * c)],
                     [2 * (b * c + a * d), a * a - b * b + c * c - d * d, 2 * (c * d - a * b)],
                     [2 * (b * d - a * c), 2 * (c * d + a * b), a * a - b * b - c * c + d * d]])


def _affine(rng, kind):
    lin = np.eye(3)[rng.permutation(3)] * rng.choice([-1, 1], size=3) if kind == 0 else _rotation(rng)
    a = np.eye(4)
    a[:3, :3] = lin @ np.diag(rng.uniform(0.5, 3, size=3))
    a[:3, 3] = rng.normal(size=3) * 50
    return a


def _nib54():
    try:
        import nibabel
        return tuple(int(v) for v in nibabel.__version__.split(".")[:2]) >= (5, 4)
    except Exception:
        return False


_NIB54 = _nib54()


def _ornt54(a):
    """nibabel 5.4's io_orientation for a non-singular affine: the nearest orthogonal matrix, then the
    input axes from the strongest (largest squared entry, stable on ties), each taking the world axis of
    its largest entry that is still free."""
    rs = a[:3, :3] / np.sqrt((a[:3, :3] ** 2).sum(0))
    u, _, vt = np.linalg.svd(rs)
    r = u @ vt
    ornt = np.zeros((3, 2))
    for i in np.argsort(np.min(-(r ** 2), axis=0), kind="stable"):
        o = int(np.argmax(np.abs(r[:, i])))
        ornt[i] = (o, -1 if r[o, i] < 0 else 1)
        r[o, :] = 0
    return ornt


def test_reorient_matches_nibabel():
    nib = pytest.importorskip("nibabel")
    rng = np.random.default_rng(0)
    for it in range(60):
        shape = tuple(int(n) for n in rng.integers(1, 8, size=3))
        x = rng.normal(size=shape).astype(np.float32)
        a = _affine(rng, it % 2)
        y, ya = pp.reorient_ras(x, a)
        if it % 2 == 0 or _NIB54:
            c = nib.as_closest_canonical(nib.Nifti1Image(x, a))
            np.testing.assert_array_equal(y, np.asanyarray(c.dataobj))
            np.testing.assert_allclose(ya, c.affine, atol=1e-9)
        else:  # oblique: nibabel before 5.4 took the axes in index order; ndforge follows 5.4
            ornt = _ornt54(a)
            c = nib.Nifti1Image(x, a).as_reoriented(ornt)
            np.testing.assert_array_equal(y, np.asanyarray(c.dataobj))
            np.testing.assert_allclose(ya, c.affine, atol=1e-9)


def test_reorient_batch_and_dtypes():
    rng = np.random.default_rng(1)
    a = np.diag([-1.0, 2, -3, 1])
    for dt in (np.uint8, np.int16, np.float64):
        x = rng.integers(0, 100, size=(2, 4, 5, 6)).astype(dt)
        y, ya = pp.reorient_ras(x, a)
        np.testing.assert_array_equal(y, x[:, ::-1, :, ::-1])
        assert y.dtype == dt
        np.testing.assert_allclose(ya, [[1, 0, 0, -3], [0, 2, 0, 0], [0, 0, 3, -15], [0, 0, 0, 1]])


def test_resample_keeps_world_points():
    rng = np.random.default_rng(2)
    a = _affine(rng, 1)
    sp = pp.affine_spacing(a)
    g = np.meshgrid(*[np.arange(n, dtype=np.float64) for n in (9, 11, 7)], indexing='ij')
    ramp = 3 * g[0] - 2 * g[1] + 0.5 * g[2] + 7
    y, ya = pp.resample(ramp, a, (1.3, 0.8, 2.0), order=1, output=np.float64)
    osh, r, t = pp.resample_plan(ramp.shape, sp, (1.3, 0.8, 2.0))
    assert y.shape == osh
    np.testing.assert_allclose(pp.affine_spacing(ya), (1.3, 0.8, 2.0))
    o = np.stack(np.meshgrid(*[np.arange(n) for n in osh], indexing='ij'), -1).reshape(-1, 3)
    ci = o * r + t
    np.testing.assert_allclose((ya @ np.c_[o, np.ones(len(o))].T)[:3], (a @ np.c_[ci, np.ones(len(o))].T)[:3],
                               atol=1e-9)
    inside = np.all((ci >= 0) & (ci <= np.array(ramp.shape) - 1), axis=1)
    want = 3 * ci[:, 0] - 2 * ci[:, 1] + 0.5 * ci[:, 2] + 7
    np.testing.assert_allclose(y.reshape(-1)[inside], want[inside], atol=1e-9)


def test_bbox_and_crop():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(12, 10, 8)).astype(np.float32)
    m = np.zeros(x.shape, bool)
    m[3:7, 2:9, 5] = True
    assert pp.bbox(m) == ((3, 2, 5), (7, 9, 6), 28)
    assert pp.bbox(np.zeros((3, 4), np.uint8)) == ((0, 0), (0, 0), 0)
    a = _affine(rng, 1)
    y, ya = pp.crop(x, a, m, margin=(1, 0, 4))
    np.testing.assert_array_equal(y, x[2:8, 2:9, 1:8])
    np.testing.assert_allclose(ya, a @ np.array([[1, 0, 0, 2], [0, 1, 0, 2], [0, 0, 1, 1], [0, 0, 0, 1.0]]))
    with pytest.raises(ValueError, match="empty"):
        pp.crop(x, a, np.zeros(x.shape, np.uint8))


def test_normalize():
    rng = np.random.default_rng(4)
    hu = rng.integers(-1200, 2000, size=(6, 7, 8)).astype(np.int16)
    y = pp.normalize(hu, "ct", preset="bone")
    lo, hi = 400 - 900, 400 + 900
    np.testing.assert_allclose(y, (np.clip(hu, lo, hi) - lo) / (hi - lo) * 2 - 1, atol=1e-6)
    y = pp.normalize(hu, "ct", centre=0, width=200, output=np.float64)
    np.testing.assert_allclose(y, np.clip(hu, -100, 100) / 100.0, atol=1e-12)
    m = rng.random(hu.shape) < 0.3
    y = pp.normalize(hu, "mri", mask=m, output=np.float64)
    assert abs(y[m].mean()) < 1e-9 and abs(y[m].std() - 1) < 1e-9
    with pytest.raises(ValueError):
        pp.normalize(hu, "pet")


def test_errors():
    x = np.zeros((3, 4, 5), np.float32)
    bad = np.eye(4)
    bad[3, 0] = 1
    with pytest.raises(ValueError, match="bottom row"):
        pp.reorient_ras(x, bad)
    with pytest.raises(ValueError, match="singular"):
        pp.reorient_ras(x, np.diag([1.0, 1, 0, 1]) + np.eye(4, k=-1) * [[0], [0], [1], [0]])
    with pytest.raises(ValueError, match="positive"):
        pp.resample(x, np.eye(4), (1, 0, 1))


# --- array kinds: every function returns the input's kind (torch CPU here; CUDA in test_cuda.py) --------

needs_masks = pytest.mark.skipif("ndf_mask_fusion" not in _capi.functions, reason="this libndforge has no mask helpers")


@needs_masks
def test_mask_helpers_return_the_input_kind():
    rng = np.random.default_rng(8)
    masks = [rng.random((9, 8, 7)) < p for p in (0.3, 0.5, 0.7)]
    want = pp.mask_fusion(masks, (0.5, 0.3, 0.2))
    assert isinstance(want, np.ndarray) and want.dtype == np.bool_
    # non-zero votes, whatever the dtype: a float16 0.5 is in (not truncated to 0)
    h = [m.astype(np.float16) * 0.5 for m in masks]
    np.testing.assert_array_equal(pp.mask_fusion(h, (0.5, 0.3, 0.2)), want)
    cleaned = pp.clean_mask(want, opening_radius=1)
    assert isinstance(cleaned, np.ndarray) and cleaned.dtype == np.bool_
    torch = pytest.importorskip("torch")
    t = [torch.from_numpy(m) for m in masks]
    got = pp.mask_fusion(t, (0.5, 0.3, 0.2))
    assert isinstance(got, torch.Tensor) and got.dtype == torch.bool and got.device.type == "cpu"
    np.testing.assert_array_equal(got.numpy(), want)
    got = pp.clean_mask(torch.from_numpy(want), opening_radius=1)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.bool
    np.testing.assert_array_equal(got.numpy(), cleaned)
    with pytest.raises(TypeError):  # one kind for all the masks
        pp.mask_fusion([t[0], masks[1]])


def test_normalize_mask_of_another_kind_is_refused():
    torch = pytest.importorskip("torch")
    x = torch.zeros((4, 5, 6))
    with pytest.raises(TypeError):
        pp.normalize(x, "mri", mask=np.ones((4, 5, 6), bool))


def test_torch_cpu_tensors_keep_their_kind():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(9)
    x = rng.normal(size=(10, 9, 8)).astype(np.float32)
    a = _affine(rng, 0)
    m = np.zeros(x.shape, bool)
    m[2:6, 3:7, 1:5] = True
    for f, args in ((pp.reorient_ras, (a,)), (pp.resample, (a, 1.5)), (pp.crop, (a, m))):
        ref = f(x, *args)
        got = f(torch.from_numpy(x), *[torch.from_numpy(v) if v is m else v for v in args])
        assert isinstance(got[0], torch.Tensor)
        np.testing.assert_array_equal(got[0].numpy(), ref[0])
        np.testing.assert_array_equal(got[1], ref[1])
    got = pp.normalize(torch.from_numpy(x), "mri", mask=torch.from_numpy(m))
    assert isinstance(got, torch.Tensor)
    np.testing.assert_array_equal(got.numpy(), pp.normalize(x, "mri", mask=m))
