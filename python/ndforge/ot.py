"""Entropic optimal transport: the library's batched Sinkhorn solver.

``sinkhorn(a, b, cost=None, grid=None, p=2, epsilon=0.05, max_iter=100, tol=0.0,
log_domain=False, return_plan=False, return_potentials=False)``

* ``a``, ``b``: histograms of equal mass, shape ``(d,)`` or a batch ``(n, d)``;
  NumPy arrays, torch tensors or CuPy arrays.  CUDA arrays run the solver on
  their GPU (the solver copies its inputs and results through the host);
* ``cost``: a dense ``(d, d)`` cost matrix, or ``None`` with ``grid=shape``
  (the histograms are raster-ordered grids, ``d = prod(shape)``) for the cost
  ``scale * sum_k |x_k - y_k|^p`` (p = 1 or 2), or ``cost='euclidean'`` with
  ``grid`` for ``scale * |x - y|``; the grid costs never form a d x d matrix.

Returns the transport cost ``<P, C>`` of the entropic plan (one value per
pair), then ``plan`` (``(d, d)`` or ``(n, d, d)``) when ``return_plan``, then
the dual potentials ``f, g`` when ``return_potentials``; results have the
type of ``a`` (and its device).  ``return_objective=True`` returns the
entropic objective ``OT_eps = <a, f> + <b, g>`` in place of ``<P, C>`` (the
value whose gradient the potentials are; ``ndforge.torch.sinkhorn`` is its
autograd form).
"""

import ctypes

import numpy as np

from . import _core
from ._core import C, S, K, check

__all__ = ["sinkhorn", "grid_cost"]


def _host64(x):
    return np.ascontiguousarray(_core.to_host_numpy(x), dtype=np.float64)


def _result_like(like, h):
    k = _core.kind_of(like)
    if k == "torch":
        import torch
        return torch.from_numpy(h).to(like.device)
    if k == "cupy":
        import cupy
        with cupy.cuda.Device(like.device.id):
            return cupy.asarray(h)
    return h


def _solve(a, b, cost, grid, p, epsilon, max_iter, tol, log_domain, check_every, scale, want_plan, dtype):
    a0 = _core.as_array(a)
    where = _core.placement(a0)
    ha, hb = _host64(a0), _host64(_core.as_array(b))
    single = ha.ndim == 1
    ha2, hb2 = np.atleast_2d(ha), np.atleast_2d(hb)
    if ha2.ndim != 2 or ha2.shape != hb2.shape:
        raise ValueError("a and b must have one shape, (d,) or (n, d) (got %s and %s)" % (ha.shape, hb.shape))
    n, d = ha2.shape
    opt = S["ndf_sinkhorn_options"]()
    C["ndf_sinkhorn_options_init"](ctypes.byref(opt))
    opt.n, opt.d = n, d
    keep = []
    if isinstance(cost, str) or cost is None:
        if grid is None:
            raise ValueError("a cost matrix, or grid=shape for a grid cost, is required")
        shape = tuple(int(s) for s in np.atleast_1d(grid))
        if len(shape) > K["NDF_MAX_SPATIAL"]:
            raise ValueError("grid has %d axes; at most %d" % (len(shape), K["NDF_MAX_SPATIAL"]))
        if cost is None:
            opt.cost_kind = K["NDF_OT_COST_GRID_LP"]
        elif cost == "euclidean":
            opt.cost_kind = K["NDF_OT_COST_GRID_EUCLIDEAN"]
        else:
            raise ValueError("cost must be an array, None (grid Lp cost) or 'euclidean' (got %r)" % (cost,))
        opt.grid_ndim = len(shape)
        opt.grid_shape[:len(shape)] = shape
    else:
        hc = _host64(cost)
        dc, k = _core.describe(hc, _core.HOST)
        keep.append((dc, k))
        opt.cost_kind = K["NDF_OT_COST_DENSE"]
        opt.cost = ctypes.pointer(dc)
    opt.p = int(p)
    opt.grid_scale = float(scale)
    opt.epsilon = float(epsilon)
    opt.max_iter = int(max_iter)
    opt.tol = float(tol)
    opt.check_every = int(check_every)
    opt.log_domain = 1 if log_domain else 0
    if where.device == K["NDF_DEVICE_CUDA"]:
        opt.device = K["NDF_DEVICE_CUDA"]
        ctx = _core.context(K["NDF_DEVICE_CUDA"], where.device_id, None)
        opt.dtype = _core.DTYPE_CODE[np.dtype(dtype or np.float64)]
    else:
        ctx = _core.context()
        if dtype not in (None, np.float64, "float64"):
            raise ValueError("the CPU solver computes in float64")
    solver = ctypes.c_void_p()
    check(C["ndf_sinkhorn_create"](ctx, ctypes.byref(solver), ctypes.byref(opt)), ctx)
    try:
        outs = dict(transport_cost=np.empty(n), objective=np.empty(n), f=np.empty((n, d)), g=np.empty((n, d)),
                    iterations=np.empty(n, np.int32), error=np.empty(n))
        descs = {k: _core.describe(v, _core.HOST)[0] for k, v in outs.items()}
        res = S["ndf_sinkhorn_result"]()
        for k, v in descs.items():
            setattr(res, k, ctypes.pointer(v))
        da, _ = _core.describe(ha2, _core.HOST)
        db, _ = _core.describe(hb2, _core.HOST)
        check(C["ndf_sinkhorn_solve"](solver, ctypes.byref(da), ctypes.byref(db), ctypes.byref(res)), ctx)
        plans = None
        if want_plan:
            plans = np.empty((n, d, d))
            for i in range(n):
                dp, _ = _core.describe(plans[i], _core.HOST)
                check(C["ndf_sinkhorn_plan"](solver, i, ctypes.byref(dp)), ctx)
    finally:
        C["ndf_sinkhorn_destroy"](solver)
    if single:
        outs = {k: v[0] for k, v in outs.items()}
        plans = plans[0] if plans is not None else None
    return a0, outs, plans


def sinkhorn(a, b, cost=None, grid=None, p=2, epsilon=0.05, max_iter=100, tol=0.0, log_domain=False,
             return_plan=False, return_potentials=False, *, return_objective=False, scale=1.0, check_every=10,
             dtype=None):
    """Entropic OT between histograms a and b (see the module's documentation)."""
    a0, outs, plans = _solve(a, b, cost, grid, p, epsilon, max_iter, tol, log_domain, check_every, scale,
                             return_plan, dtype)
    value = outs["objective"] if return_objective else outs["transport_cost"]
    value = _result_like(a0, np.asarray(value))
    r = [value]
    if return_plan:
        r.append(_result_like(a0, plans))
    if return_potentials:
        r += [_result_like(a0, outs["f"]), _result_like(a0, outs["g"])]
    return r[0] if len(r) == 1 else tuple(r)


def solve(a, b, cost=None, grid=None, p=2, epsilon=0.05, max_iter=100, tol=0.0, log_domain=False, *,
          scale=1.0, check_every=10, dtype=None):
    """Every output of a solve as a dict of NumPy arrays: transport_cost, objective, f, g, iterations, error."""
    return _solve(a, b, cost, grid, p, epsilon, max_iter, tol, log_domain, check_every, scale, False, dtype)[1]


def grid_cost(shape, p=2, scale=1.0, euclidean=False):
    """The dense (d, d) cost of a grid cost (for checks; the solver never forms it)."""
    shape = tuple(int(s) for s in np.atleast_1d(shape))
    d = int(np.prod(shape))
    out = np.empty((d, d))
    do, _ = _core.describe(out, _core.HOST)
    kind = K["NDF_OT_COST_GRID_EUCLIDEAN"] if euclidean else K["NDF_OT_COST_GRID_LP"]
    sh = (ctypes.c_int64 * len(shape))(*shape)
    check(C["ndf_sinkhorn_grid_cost"](kind, len(shape), sh, int(p), float(scale), ctypes.byref(do)))
    return out
