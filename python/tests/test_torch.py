"""torch CPU tensors through ndforge.ndimage / topology / ot, and ndforge.torch's gradients (float64 gradcheck)."""

import numpy as np
import pytest
import scipy.ndimage as sn

torch = pytest.importorskip("torch")

import ndforge.ndimage as nd  # noqa: E402
from ndforge import ot, topology  # noqa: E402
import ndforge.torch as nt  # noqa: E402


def t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


@pytest.mark.parametrize("name", ["grey_erosion", "grey_dilation", "morphological_gradient", "white_tophat",
                                  "median_filter"])
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int32, np.float32, np.float64])
def test_ndimage_on_cpu_tensors(name, dtype):
    x = (np.random.default_rng(0).random((10, 12)) * 100).astype(dtype)
    r = getattr(nd, name)(t(x), size=3)
    assert isinstance(r, torch.Tensor) and r.device.type == "cpu"
    np.testing.assert_array_equal(r.numpy(), getattr(sn, name)(x, size=3))


def test_strided_tensors_and_outputs():
    x = torch.rand(2, 3, 16, 16, dtype=torch.float32).to(memory_format=torch.channels_last)
    ref = sn.grey_dilation(x.numpy(), size=(1, 1, 3, 3))
    np.testing.assert_array_equal(nd.grey_dilation(x, size=3, batch_dims=2).numpy(), ref)
    out = torch.empty(2, 3, 16, 16)
    assert nd.grey_dilation(x, size=3, batch_dims=2, output=out) is out
    np.testing.assert_array_equal(out.numpy(), ref)
    y = x.transpose(2, 3)
    np.testing.assert_array_equal(nd.grey_erosion(y, size=(1, 1, 2, 3)).numpy(),
                                  sn.grey_erosion(y.numpy(), size=(1, 1, 2, 3)))


def test_binary_label_distance_on_tensors():
    x = torch.rand(15, 14) > 0.5
    np.testing.assert_array_equal(nd.binary_erosion(x).numpy(), sn.binary_erosion(x.numpy()))
    lab, n = nd.label(x)
    ref, m = sn.label(x.numpy())
    assert n == m and lab.dtype == torch.int32
    np.testing.assert_array_equal(lab.numpy(), ref)
    d, i = nd.distance_transform_edt(x, return_indices=True)
    e, j = sn.distance_transform_edt(x.numpy(), return_indices=True)
    np.testing.assert_array_equal(d.numpy(), e)
    np.testing.assert_array_equal(i.numpy(), j)


def test_dlpack_round_trip():
    h = np.random.default_rng(0).random((8, 9))
    x = torch.from_dlpack(h)  # NumPy -> torch without a copy
    assert x.data_ptr() == h.ctypes.data
    r = nd.grey_opening(x, size=3)
    assert isinstance(r, torch.Tensor)
    np.testing.assert_array_equal(np.from_dlpack(r), sn.grey_opening(h, size=3))


def test_bfloat16_and_float16():
    x = torch.rand(9, 9)
    for dt in (torch.float16, torch.bfloat16):
        r = nd.grey_erosion(x.to(dt), size=3)
        assert r.dtype == dt
        np.testing.assert_array_equal(r.float().numpy(), sn.grey_erosion(x.to(dt).float().numpy(), size=3))


def test_topology_and_ot_return_tensors():
    x = torch.rand(10, 10, dtype=torch.float64)
    c = topology.ecc(x, 8)
    assert isinstance(c, torch.Tensor) and c.dtype == torch.int64
    np.testing.assert_array_equal(c.numpy(), topology.ecc(x.numpy(), 8))
    a = torch.rand(2, 6, dtype=torch.float64)
    a = a / a.sum(1, keepdim=True)
    r = ot.sinkhorn(a, a.flip(1), grid=(2, 3), epsilon=0.3)
    assert isinstance(r, torch.Tensor) and r.shape == (2,)


def test_gradcheck_soft_ecc():
    x = torch.rand(2, 6, 7, dtype=torch.float64, requires_grad=True)
    th = torch.linspace(0.05, 0.95, 9, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: nt.soft_ecc(a, b, lam=4.0, batch_dims=1), (x, th))
    x3 = torch.rand(4, 5, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: nt.soft_ecc(a, b, lam=3.0, construction="T"), (x3, th))


def test_gradcheck_soft_ect():
    x = torch.rand(6, 7, dtype=torch.float64, requires_grad=True)
    d = torch.tensor([[1.0, 0.2], [0.3, -0.9], [-0.5, 0.5]], dtype=torch.float64, requires_grad=True)
    th = torch.linspace(-1, 1, 7, dtype=torch.float64, requires_grad=True)

    def f(a, u, s):
        return nt.soft_ect(a, u, s, lam=3.0, weighted=True, normalize=True)
    assert torch.autograd.gradcheck(f, (x, d, th))
    b = (torch.rand(6, 7) > 0.5).to(torch.float64)

    def g(u, s):
        return nt.soft_ect(b, u, s, lam=2.0, normalize=True)
    assert torch.autograd.gradcheck(g, (d, th))


def test_gradcheck_sinkhorn():
    a = (torch.rand(2, 6, dtype=torch.float64) + 0.2).requires_grad_()
    b = (torch.rand(2, 6, dtype=torch.float64) + 0.2).requires_grad_()

    def f(a, b):  # normalized in the graph: the gradient along the simplex is the potentials'
        return nt.sinkhorn(a / a.sum(1, keepdim=True), b / b.sum(1, keepdim=True), grid=(2, 3), epsilon=0.5,
                           max_iter=2000, tol=1e-14, log_domain=True)
    assert torch.autograd.gradcheck(f, (a, b), atol=1e-6)


def test_layers():
    torch.manual_seed(0)
    layer = nt.ECCLayer(thresholds=16, range=(0, 1), lam=20.0, learnable_thresholds=True)
    x = torch.rand(3, 12, 12, dtype=torch.float64, requires_grad=True)
    y = layer(x)
    assert y.shape == (3, 16)
    y.sum().backward()
    assert x.grad.shape == x.shape and layer.thresholds.grad.shape == (16,)
    ect = nt.ECTLayer(num_directions=5, thresholds=8, lam=10.0, weighted=True)
    z = ect(x.detach().requires_grad_())
    assert z.shape == (3, 5, 8)
    z.square().mean().backward()
    assert ect.directions.grad is not None and torch.isfinite(ect.directions.grad).all()


def test_half_inputs_of_the_topology_ops():
    x = torch.rand(7, 8)
    th = torch.linspace(0.1, 0.9, 6, dtype=torch.float64)
    for dt in (torch.float16, torch.bfloat16):
        h = x.to(dt).requires_grad_()
        y = nt.soft_ecc(h, th, lam=5.0)
        assert y.dtype == torch.float64
        torch.testing.assert_close(y, nt.soft_ecc(x.to(dt).float(), th, lam=5.0))
        y.sum().backward()
        assert h.grad.dtype == dt and h.grad.shape == h.shape
        np.testing.assert_array_equal(topology.ecc(h.detach(), th), topology.ecc(h.detach().float(), th))


def test_backward_is_once_differentiable():
    # the analytic backward passes are not differentiable: create_graph through them raises on use
    x = torch.rand(5, 6, dtype=torch.float64, requires_grad=True)
    th = torch.linspace(0.1, 0.9, 5, dtype=torch.float64)
    g, = torch.autograd.grad(nt.soft_ecc(x, th, lam=3.0).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError):
        g.sum().backward()


def test_sinkhorn_arguments():
    a = torch.tensor([0.2, 0.3, 0.5], dtype=torch.float64, requires_grad=True)
    b = np.array([0.4, 0.4, 0.2])  # a NumPy histogram beside a tensor
    c = torch.tensor(ot.grid_cost((3,)), requires_grad=True)
    v = nt.sinkhorn(a, b, cost=c, epsilon=0.5, max_iter=500)
    np.testing.assert_allclose(v.item(), ot.sinkhorn(a.detach().numpy(), b, cost=c.detach().numpy(), epsilon=0.5,
                                                     max_iter=500, return_objective=True))
    with pytest.raises(RuntimeError, match="cost"):  # no gradient in cost: torch's error, not a silent None
        v.backward()
    v = nt.sinkhorn(a, b, cost=c.detach(), epsilon=0.5, max_iter=500)
    v.backward()
    assert a.grad is not None and a.grad.shape == (3,)


def test_zero_d_and_byte_order_free_tensors():
    x = torch.tensor(2.5)
    r = nd.grey_erosion(x, size=3)
    assert isinstance(r, torch.Tensor) and r.shape == () and r.item() == 2.5
    out = torch.zeros(())
    assert nd.uniform_filter(x, 3, output=out) is out and out.item() == 2.5
    b = torch.rand(6, 7) > 0.5
    assert nd.binary_erosion(b, output=torch.float32).dtype == torch.bool  # scipy's output= dtype: bool
    out = torch.zeros(6, 7, dtype=torch.uint8)
    assert nd.binary_fill_holes(b, output=out) is None
    np.testing.assert_array_equal(out.numpy(), sn.binary_fill_holes(b.numpy()))


def test_complex_tensors():
    x = torch.randn(6, 7, dtype=torch.complex128)
    for v in (x, x.conj()):  # a lazy conjugate too
        r = nd.gaussian_filter(v, 1.2)
        assert isinstance(r, torch.Tensor) and r.dtype == torch.complex128
        np.testing.assert_allclose(r.numpy(), sn.gaussian_filter(v.resolve_conj().numpy(), 1.2), rtol=1e-12, atol=1e-12)
    g = nd.gaussian_gradient_magnitude(x, 1.0)
    np.testing.assert_allclose(g.numpy(), sn.gaussian_gradient_magnitude(x.numpy(), 1.0), rtol=1e-12, atol=1e-12)
    s = nd.shift(x.to(torch.complex64), (0.5, 1.0), cval=1 + 2j)
    assert s.dtype == torch.complex64
    np.testing.assert_allclose(s.numpy(), sn.shift(x.to(torch.complex64).numpy(), (0.5, 1.0), cval=1 + 2j), rtol=1e-5,
                               atol=1e-6)
