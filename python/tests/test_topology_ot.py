"""ndforge.topology and ndforge.ot on NumPy inputs."""

import numpy as np
import pytest

from ndforge import ot, topology


def test_ecc_matches_its_soft_form_and_thresholds():
    rng = np.random.default_rng(0)
    x = rng.random((12, 14))
    curve, t = topology.ecc(x, 16, return_thresholds=True)
    assert curve.dtype == np.int64 and curve.shape == (16,)
    assert t[0] == x.min() and t[-1] == x.max()
    # thresholds half-way between values: the soft curve with a steep sigmoid is the exact one
    v = np.sort(x.ravel())
    mid = (v[:-1] + v[1:]) / 2
    tt = mid[:: len(mid) // 10]
    soft = topology.soft_ecc(x, tt, lam=1e7)
    np.testing.assert_allclose(soft, topology.ecc(x, tt), atol=1e-6)


def test_ecc_batch_and_construction():
    rng = np.random.default_rng(1)
    x = rng.random((3, 6, 7, 5)).astype(np.float32)
    for c in ("V", "T"):
        b = topology.ecc(x, 8, construction=c, range=(0, 1), batch_dims=1)
        assert b.shape == (3, 8)
        for i in range(3):
            np.testing.assert_array_equal(b[i], topology.ecc(x[i], 8, construction=c, range=(0, 1)))
    with pytest.raises(ValueError):
        topology.ecc(x, 8, construction="X")


def test_ect_is_the_ecc_of_heights():
    rng = np.random.default_rng(2)
    shape = (9, 8)
    b = (rng.random(shape) > 0.4).astype(np.uint8)
    dirs = np.array([[1.0, 0.0], [0.6, 0.8]])
    t = np.linspace(-6, 6, 13)
    e = topology.ect(b, dirs, t)
    assert e.shape == (2, 13) and e.dtype == np.int64
    i, j = np.indices(shape)
    x = np.stack([i - (shape[0] - 1) / 2, j - (shape[1] - 1) / 2])
    for k, u in enumerate(dirs):
        h = u[0] * x[0] + u[1] * x[1]
        f = np.where(b != 0, h, np.inf)
        np.testing.assert_array_equal(e[k], topology.ecc(f, t))
    w = topology.ect(b.astype(np.float64), dirs, t, weighted=True)
    np.testing.assert_array_equal(w, e.astype(np.float64))
    s = topology.soft_ect(b.astype(np.float64), dirs, t + 0.25, lam=1e7)
    np.testing.assert_allclose(s, topology.ect(b, dirs, t + 0.25), atol=1e-6)


def _sinkhorn_ref(a, b, C, eps, iters):
    K = np.exp(-C / eps)
    v = np.ones_like(b)
    for _ in range(iters):
        u = a / (K @ v)
        v = b / (K.T @ u)
    P = u[:, None] * K * v[None, :]
    return (P * C).sum(), P


@pytest.mark.parametrize("log_domain", [False, True])
def test_sinkhorn_dense_and_grid(log_domain):
    rng = np.random.default_rng(3)
    a = rng.random((2, 12)) + 0.1
    b = rng.random((2, 12)) + 0.1
    a /= a.sum(1, keepdims=True)
    b /= b.sum(1, keepdims=True)
    C = ot.grid_cost((3, 4))
    cost, plan, f, g = ot.sinkhorn(a, b, C, epsilon=0.5, max_iter=300, log_domain=log_domain, return_plan=True,
                                   return_potentials=True)
    assert cost.shape == (2,) and plan.shape == (2, 12, 12) and f.shape == (2, 12)
    for k in range(2):
        rc, rp = _sinkhorn_ref(a[k], b[k], C, 0.5, 300)
        np.testing.assert_allclose(cost[k], rc, rtol=1e-9)
        np.testing.assert_allclose(plan[k], rp, rtol=1e-7, atol=1e-15)
    grid = ot.sinkhorn(a, b, grid=(3, 4), epsilon=0.5, max_iter=300, log_domain=log_domain)
    np.testing.assert_allclose(grid, cost, rtol=1e-9)
    obj = ot.sinkhorn(a, b, C, epsilon=0.5, max_iter=300, return_objective=True)
    np.testing.assert_allclose(obj, (a * f).sum(1) + (b * g).sum(1), rtol=1e-9)
    single = ot.sinkhorn(a[0], b[0], C, epsilon=0.5, max_iter=300)
    assert np.ndim(single) == 0
    eu = ot.sinkhorn(a, b, "euclidean", grid=(3, 4), epsilon=0.5, max_iter=300)
    np.testing.assert_allclose(eu, ot.sinkhorn(a, b, ot.grid_cost((3, 4), euclidean=True), epsilon=0.5,
                                               max_iter=300), rtol=1e-9)


def test_sinkhorn_errors():
    with pytest.raises(ValueError):
        ot.sinkhorn(np.ones(4) / 4, np.ones(4) / 4)
    with pytest.raises(ValueError):
        ot.sinkhorn(np.ones(4) / 4, np.ones(4) / 2, ot.grid_cost(4))
