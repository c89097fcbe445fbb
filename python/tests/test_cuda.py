"""CUDA arrays (torch and CuPy) on the GPU backend: same results as the CPU path, zero-copy, on the
caller's current stream.  Skipped without a GPU, except that NDFORGE_REQUIRE_GPU=1 makes a missing
device or framework of a kind named in NDFORGE_TEST_ARRAYS (torch, cupy) a failure (arrays.py)."""

import numpy as np
import pytest
import scipy.ndimage as sn

import ndforge.ndimage as nd
from ndforge import ot, topology
from arrays import REQUIRE_GPU, kinds

try:
    import torch
    HAS_TORCH_CUDA = torch.cuda.is_available()
except ImportError:
    torch = None
    HAS_TORCH_CUDA = False
try:
    import cupy
    HAS_CUPY = cupy.cuda.runtime.getDeviceCount() > 0
except Exception:
    cupy = None
    HAS_CUPY = False



@pytest.mark.skipif(not REQUIRE_GPU, reason="NDFORGE_REQUIRE_GPU is not set")
@pytest.mark.parametrize("kind,present", [("torch", HAS_TORCH_CUDA), ("cupy", HAS_CUPY)])
def test_required_kinds_are_present(kind, present):
    if kind in kinds():
        assert present, "NDFORGE_REQUIRE_GPU=1 and NDFORGE_TEST_ARRAYS names %s, which has no CUDA device here" % kind


needs_torch = pytest.mark.skipif(not HAS_TORCH_CUDA, reason="no torch CUDA device")
needs_cupy = pytest.mark.skipif(not HAS_CUPY, reason="no CuPy device")

CASES = [
    ("grey_erosion", dict(size=3)), ("grey_dilation", dict(size=(3, 5), mode="constant", cval=0.5)),
    ("grey_opening", dict(size=3)), ("grey_closing", dict(size=3, mode="wrap")),
    ("morphological_gradient", dict(size=3)), ("morphological_laplace", dict(size=3)),
    ("white_tophat", dict(size=5)), ("black_tophat", dict(size=5)),
    ("median_filter", dict(size=3)), ("median_filter", dict(size=7, mode="mirror")),
    ("rank_filter", dict(rank=2, size=3)), ("percentile_filter", dict(percentile=30, size=4)),
]
BIN = ["binary_erosion", "binary_dilation", "binary_opening", "binary_closing", "binary_propagation",
       "binary_fill_holes", "binary_hit_or_miss"]


def host(x):
    if torch is not None and isinstance(x, torch.Tensor):
        return x.cpu().numpy()
    return cupy.asnumpy(x)


def frameworks():
    out = []
    if HAS_TORCH_CUDA:
        out.append(("torch", lambda a: torch.from_numpy(np.ascontiguousarray(a)).cuda()))
    if HAS_CUPY:
        out.append(("cupy", lambda a: cupy.asarray(a)))
    return out


FW = frameworks()
needs_gpu = pytest.mark.skipif(not FW, reason="no CUDA array framework with a device")
fw_ids = [f[0] for f in FW] or ["none"]
FW = FW or [("none", None)]


@needs_gpu
@pytest.mark.parametrize("fw", FW, ids=fw_ids)
@pytest.mark.parametrize("name,kw", CASES, ids=["%s-%d" % (c[0], i) for i, c in enumerate(CASES)])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_filters(fw, name, kw, dtype):
    x = (np.random.default_rng(0).random((3, 40, 50)) * 200).astype(dtype)
    g = fw[1](x)
    r = getattr(nd, name)(g, **kw, batch_dims=1)
    assert type(r) is type(g) and r.shape == g.shape
    ref = np.stack([getattr(sn, name)(x[i], **kw) for i in range(3)])
    np.testing.assert_array_equal(host(r), ref)


@needs_gpu
@pytest.mark.parametrize("fw", FW, ids=fw_ids)
@pytest.mark.parametrize("name", BIN)
def test_binary(fw, name):
    x = np.random.default_rng(1).random((33, 47)) > 0.4
    r = getattr(nd, name)(fw[1](x))
    np.testing.assert_array_equal(host(r), getattr(sn, name)(x))


@needs_gpu
@pytest.mark.parametrize("fw", FW, ids=fw_ids)
def test_label_and_distances(fw):
    x = np.random.default_rng(2).random((40, 37)) > 0.5
    g = fw[1](x)
    lab, n = nd.label(g)
    ref, m = sn.label(x)
    assert n == m
    np.testing.assert_array_equal(host(lab), ref)
    for name, kw in (("distance_transform_edt", {}), ("distance_transform_bf", {}),
                     ("distance_transform_cdt", dict(metric="taxicab"))):
        d = getattr(nd, name)(g, **kw)
        np.testing.assert_array_equal(host(d), getattr(sn, name)(x, **kw))
    d, i = nd.distance_transform_edt(g, return_indices=True)
    e, j = sn.distance_transform_edt(x, return_indices=True)
    np.testing.assert_array_equal(host(i), j)
    # cdt's indices are a CPU-backend feature: the call runs there, the results come back to the device
    d, i = nd.distance_transform_cdt(g, "taxicab", return_indices=True)
    e, j = sn.distance_transform_cdt(x, "taxicab", return_indices=True)
    assert type(d) is type(g) and type(i) is type(g)
    np.testing.assert_array_equal(host(d), e)
    np.testing.assert_array_equal(host(i), j)


@needs_gpu
@pytest.mark.parametrize("fw", FW, ids=fw_ids)
def test_strided_views_and_outputs(fw):
    x = np.random.default_rng(3).random((30, 20, 6)).astype(np.float32)
    g = fw[1](x)
    v = g.permute(2, 0, 1) if fw[0] == "torch" else g.transpose(2, 0, 1)
    r = nd.grey_dilation(v, size=3, batch_dims=1)
    np.testing.assert_array_equal(host(r), sn.grey_dilation(x.transpose(2, 0, 1), size=(1, 3, 3)))
    out = fw[1](np.zeros((6, 30, 20), np.float32))
    assert nd.grey_dilation(v, size=3, batch_dims=1, output=out) is out
    np.testing.assert_array_equal(host(out), host(r))


@needs_gpu
@pytest.mark.parametrize("fw", FW, ids=fw_ids)
def test_outputs_overlapping_the_input(fw):
    # an output that is another view of the input's memory (a shifted slice; with CuPy, a reversed view)
    # is written through a temporary, as output=input is
    x = np.random.default_rng(4).random((34, 20)).astype(np.float32)
    for name, args, kw in (("grey_dilation", (), dict(size=3)), ("median_filter", (), dict(size=3)),
                           ("white_tophat", (), dict(size=(3, 2))), ("binary_dilation", (), {}),
                           ("uniform_filter", (3,), {}), ("shift", ((0.5, 1.0),), dict(order=1))):
        src = x > 0.5 if name.startswith("binary") else x
        ref = getattr(sn, name)(src[:30], *args, **kw)
        g = fw[1](src)
        getattr(nd, name)(g[:30], *args, output=g[4:34], **kw)
        np.testing.assert_allclose(host(g[4:34]), ref, rtol=1e-6, atol=1e-6)
        if fw[0] == "cupy":
            g = fw[1](src[:30].copy())
            getattr(nd, name)(g[::-1], *args, output=g, **kw)
            np.testing.assert_allclose(host(g), getattr(sn, name)(src[:30][::-1], *args, **kw), rtol=1e-6,
                                       atol=1e-6)


@pytest.mark.skipif(not (HAS_TORCH_CUDA and torch.cuda.device_count() > 1), reason="needs two torch CUDA devices")
def test_output_on_another_device():
    # an output array on another GPU than the input is written through a temporary on the input's
    x = np.random.default_rng(5).random((20, 30)).astype(np.float32)
    g = torch.from_numpy(x).to("cuda:0")
    out = torch.zeros(20, 30, device="cuda:1")
    assert nd.grey_dilation(g, size=3, output=out) is out
    np.testing.assert_array_equal(out.cpu().numpy(), sn.grey_dilation(x, size=3))
    out = torch.zeros(20, 30, device="cuda:1")
    nd.shift(g, (0.5, 1), order=1, output=out)
    np.testing.assert_allclose(out.cpu().numpy(), sn.shift(x, (0.5, 1), order=1), rtol=1e-6, atol=1e-6)


@needs_torch
def test_torch_side_stream_is_used():
    x = torch.rand(4, 64, 64, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        y = x * 2  # queued on s: ndforge's kernels must follow it on s
        r = nd.grey_erosion(y, size=5, batch_dims=1)
        z = r + 1  # a consumer queued on s after ndforge's kernels
    s.synchronize()
    ref = sn.grey_erosion((x * 2).cpu().numpy(), size=(1, 5, 5))
    np.testing.assert_array_equal(r.cpu().numpy(), ref)
    np.testing.assert_array_equal(z.cpu().numpy(), ref + np.float32(1))


@needs_cupy
def test_cupy_side_stream_is_used():
    x = cupy.random.random((4, 64, 64)).astype(cupy.float32)
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        y = x * 2
        r = nd.median_filter(y, size=3, batch_dims=1)
    s.synchronize()
    np.testing.assert_array_equal(cupy.asnumpy(r), sn.median_filter(cupy.asnumpy(x * 2), size=(1, 3, 3)))


@needs_torch
def test_host_array_on_the_gpu_with_device():
    x = np.random.default_rng(4).random((50, 60)).astype(np.float32)
    r = nd.grey_erosion(x, size=3, device="cuda")
    assert isinstance(r, np.ndarray)
    np.testing.assert_array_equal(r, sn.grey_erosion(x, size=3))


@needs_torch
def test_topology_ot_and_gradients_on_cuda():
    import ndforge.torch as nt
    x = torch.rand(2, 16, 16, dtype=torch.float64, device="cuda")
    c = topology.ecc(x, 12, batch_dims=1)
    assert c.device.type == "cuda"
    np.testing.assert_array_equal(c.cpu().numpy(), topology.ecc(x.cpu().numpy(), 12, batch_dims=1))
    xs = x[0, :6, :7].clone().requires_grad_()
    th = torch.linspace(0.1, 0.9, 5, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: nt.soft_ecc(a, b, lam=3.0), (xs, th), rtol=1e-4)
    a = torch.rand(3, 16, dtype=torch.float64, device="cuda")
    a = a / a.sum(1, keepdim=True)
    r = ot.sinkhorn(a, a.flip(1), grid=(4, 4), epsilon=0.2, max_iter=200)
    np.testing.assert_allclose(r.cpu().numpy(), ot.sinkhorn(a.cpu().numpy(), a.flip(1).cpu().numpy(), grid=(4, 4),
                                                            epsilon=0.2, max_iter=200), rtol=1e-9)


@needs_torch
def test_torch_tensors_through_dlpack(monkeypatch):
    from ndforge import _core
    monkeypatch.setattr(_core, "TORCH_DLPACK", True)
    x = torch.rand(3, 30, 40, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        r = nd.grey_dilation(x[:, ::2, 1:], size=3, batch_dims=1)
        m = nd.median_filter(x.transpose(1, 2), size=3, batch_dims=1)
    s.synchronize()
    h = x.cpu().numpy()
    np.testing.assert_array_equal(r.cpu().numpy(), sn.grey_dilation(h[:, ::2, 1:], size=(1, 3, 3)))
    np.testing.assert_array_equal(m.cpu().numpy(), sn.median_filter(h.transpose(0, 2, 1), size=(1, 3, 3)))


@needs_torch
def test_half_and_bool_tensors_on_cuda():
    x = torch.rand(20, 30, device="cuda")
    for dt in (torch.float16, torch.bfloat16):
        r = nd.grey_erosion(x.to(dt), size=3)
        assert r.dtype == dt and r.device.type == "cuda"
        np.testing.assert_array_equal(r.float().cpu().numpy(), sn.grey_erosion(x.to(dt).float().cpu().numpy(),
                                                                               size=3))
    b = x > 0.5
    np.testing.assert_array_equal(nd.grey_dilation(b, size=3).cpu().numpy(), sn.grey_dilation(b.cpu().numpy(),
                                                                                             size=3))


@needs_torch
def test_metrics_stay_on_the_device():
    from ndforge import _capi, metrics
    if "ndf_mean_squared_error" not in _capi.functions:
        pytest.skip("this libndforge has no image metrics")
    a = torch.rand(3, 32, 32, device="cuda")
    b = torch.rand(3, 32, 32, device="cuda")
    m = metrics.mean_squared_error(a, b)
    assert isinstance(m, torch.Tensor) and m.device.type == "cuda" and m.dim() == 0
    np.testing.assert_allclose(m.item(), metrics.mean_squared_error(a.cpu().numpy(), b.cpu().numpy()), rtol=1e-12)
    d = metrics.dice_coefficient(a > 0.5, b > 0.5, batch_dims=1)
    assert d.shape == (3,) and d.device.type == "cuda"


def same_place(r, g):
    """r is an array of g's framework on g's device."""
    assert type(r) is type(g)
    if torch is not None and isinstance(g, torch.Tensor):
        assert r.device == g.device
    else:
        assert r.device.id == g.device.id


@needs_gpu
@pytest.mark.parametrize("fw", FW, ids=fw_ids)
def test_preprocess_on_cuda(fw):
    from ndforge import _capi, preprocess as pp
    if "ndf_reorient_ras" not in _capi.functions:
        pytest.skip("this libndforge has no preprocessing steps")
    rng = np.random.default_rng(11)
    x = rng.normal(size=(12, 10, 9)).astype(np.float32)
    g = fw[1](x)
    a = np.diag([-1.5, 1.0, 2.0, 1.0])
    a[:3, 3] = (20, -10, 5)
    m = np.zeros(x.shape, bool)
    m[2:8, 3:9, 1:6] = True
    gm = fw[1](m)
    for f, args, gargs in ((pp.reorient_ras, (a,), (a,)), (pp.resample, (a, 1.25), (a, 1.25)),
                           (pp.crop, (a, m), (a, gm))):
        ref, ra = f(x, *args)
        r, rb = f(g, *gargs)
        same_place(r, g)
        np.testing.assert_allclose(host(r), ref, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(rb, ra)
    r = pp.normalize(g, "mri", mask=gm)
    same_place(r, g)
    np.testing.assert_allclose(host(r), pp.normalize(x, "mri", mask=m), rtol=1e-5, atol=1e-5)
    if "ndf_mask_fusion" not in _capi.functions:
        return
    # the CPU-only mask helpers: host copies in, the result back on the masks' device
    masks = [rng.random(x.shape) < p for p in (0.3, 0.5, 0.7)]
    gms = [fw[1](v) for v in masks]
    r = pp.mask_fusion(gms, (0.5, 0.3, 0.2))
    same_place(r, gms[0])
    want = pp.mask_fusion(masks, (0.5, 0.3, 0.2))
    np.testing.assert_array_equal(host(r), want)
    r = pp.clean_mask(fw[1](want), opening_radius=1)
    same_place(r, gms[0])
    np.testing.assert_array_equal(host(r), pp.clean_mask(want, opening_radius=1))
    with pytest.raises(TypeError):  # a host mask among CUDA masks
        pp.mask_fusion([gms[0], masks[1]])
