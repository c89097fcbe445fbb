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


# --- the analytic backward passes against central differences (NumPy, float64; ndforge.torch's
# gradcheck checks the same passes through autograd where torch is installed) ----------------------

def _numeric_vjp(f, x, g, h=1e-6):
    """<g, df/dx_i> for every entry of x by central differences."""
    out = np.empty(x.shape)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += h
        xm[i] -= h
        out[i] = (g * (f(xp) - f(xm))).sum() / (2 * h)
    return out


@pytest.mark.parametrize("construction", ["V", "T"])
def test_soft_ecc_backward_is_the_gradient(construction):
    rng = np.random.default_rng(4)
    x = rng.random((5, 6))
    t = np.linspace(0.1, 0.9, 7)
    g = rng.normal(size=7)
    gi, gt = topology.soft_ecc_backward(x, t, g, lam=4.0, construction=construction)
    np.testing.assert_allclose(gi, _numeric_vjp(lambda v: topology.soft_ecc(v, t, 4.0, construction), x, g),
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(gt, _numeric_vjp(lambda s: topology.soft_ecc(x, s, 4.0, construction), t, g),
                               rtol=1e-5, atol=1e-7)


def test_soft_ect_backward_is_the_gradient():
    rng = np.random.default_rng(5)
    x = rng.random((5, 6))
    d = np.array([[1.0, 0.2], [0.3, -0.9], [-0.5, 0.5]])
    t = np.linspace(-1, 1, 6)
    g = rng.normal(size=(3, 6))
    kw = dict(lam=3.0, weighted=True, normalize=True)
    gi, gd, gt = topology.soft_ect_backward(x, d, t, g, **kw)
    tol = dict(rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(gi, _numeric_vjp(lambda v: topology.soft_ect(v, d, t, **kw), x, g), **tol)
    np.testing.assert_allclose(gd, _numeric_vjp(lambda u: topology.soft_ect(x, u, t, **kw), d, g), **tol)
    np.testing.assert_allclose(gt, _numeric_vjp(lambda s: topology.soft_ect(x, d, s, **kw), t, g), **tol)


def test_sinkhorn_potentials_are_the_gradient_of_the_objective():
    rng = np.random.default_rng(6)
    a = rng.random(6) + 0.2
    b = rng.random(6) + 0.2
    a, b = a / a.sum(), b / b.sum()
    kw = dict(grid=(2, 3), epsilon=0.5, max_iter=3000, tol=1e-14, log_domain=True, return_objective=True)
    _, f, g = ot.sinkhorn(a, b, return_potentials=True, **dict(kw, return_objective=False))
    h = 1e-6
    for pot, which in ((f, 0), (g, 1)):
        for i, j in ((0, 5), (1, 3), (4, 2)):  # moves of mass that keep the histograms' totals
            e = np.zeros(6)
            e[i], e[j] = h, -h
            pair_p = (a + e, b) if which == 0 else (a, b + e)
            pair_m = (a - e, b) if which == 0 else (a, b - e)
            num = (ot.sinkhorn(*pair_p, **kw) - ot.sinkhorn(*pair_m, **kw)) / (2 * h)
            np.testing.assert_allclose(num, pot[i] - pot[j], rtol=1e-5, atol=1e-8)
