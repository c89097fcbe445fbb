"""PyTorch autograd functions and layers on the library's analytic backward passes.

* ``soft_ecc(input, thresholds, lam=1.0, construction='V', batch_dims=0)``:
  differentiable in ``input`` and ``thresholds``;
* ``soft_ect(input, directions, thresholds, lam=1.0, construction='V',
  weighted=False, spacing=None, normalize=False, batch_dims=0)``:
  differentiable in ``input`` (weighted only; the binary shape has gradient
  0), ``directions`` and ``thresholds``;
* ``sinkhorn(a, b, cost=None, grid=None, p=2, epsilon=0.05, max_iter=100,
  tol=0.0, log_domain=False, scale=1.0)``: the entropic transport cost
  ``OT_eps(a, b) = <a, f> + <b, g>`` per histogram pair, differentiable in
  ``a`` and ``b`` through the dual potentials ``f, g`` (exact at convergence;
  the potentials' constant is fixed by the library, so the gradient is the
  one along perturbations that keep the masses equal -- normalize the
  histograms in the graph to differentiate freely).  Entries of zero bins
  (potential -inf) get gradient 0.
* ``ECCLayer`` and ``ECTLayer``: ``nn.Module`` layers (soft curves over a fixed
  or learnable threshold grid; the ECT with learnable directions).

Inputs live on the CPU or a CUDA device (the caller's current stream);
outputs are float64 on the input's device.  The backward passes are the
library's analytic ones, not themselves differentiable: a second derivative
(``create_graph=True`` through them) raises.
"""

import numpy as np
import torch
from torch.autograd.function import once_differentiable

from . import ot as _ot
from . import topology as _tp

__all__ = ["soft_ecc", "soft_ect", "sinkhorn", "ECCLayer", "ECTLayer", "SoftECCFunction", "SoftECTFunction",
           "SinkhornFunction"]


def _host_tensor(a, like):
    return torch.from_numpy(np.ascontiguousarray(a)).to(device=like.device, dtype=like.dtype)


def _as_tensor(v, like, dtype=torch.float64):
    if isinstance(v, torch.Tensor):
        return v
    return torch.as_tensor(np.asarray(v, dtype=np.float64), dtype=dtype)


class SoftECCFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, thresholds, lam, construction, batch_dims):
        ctx.save_for_backward(input, thresholds)
        ctx.args = (lam, construction, batch_dims)
        return _tp.soft_ecc(input.detach(), thresholds.detach(), lam, construction, batch_dims)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        input, thresholds = ctx.saved_tensors
        lam, construction, batch_dims = ctx.args
        ni, nt = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        if not (ni or nt):
            return None, None, None, None, None
        gi, gt = _tp.soft_ecc_backward(input.detach(), thresholds.detach(), grad.to(torch.float64).contiguous(), lam,
                                       construction, batch_dims, need_input=ni, need_thresholds=nt)
        return gi, (_host_tensor(gt, thresholds) if nt else None), None, None, None


def soft_ecc(input, thresholds, lam=1.0, construction="V", batch_dims=0):
    """Soft Euler characteristic curve (float64, batch + (T,)), differentiable in input and thresholds."""
    return SoftECCFunction.apply(input, _as_tensor(thresholds, input), float(lam), construction, int(batch_dims))


class SoftECTFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, directions, thresholds, lam, construction, weighted, spacing, normalize, batch_dims):
        ctx.save_for_backward(input, directions, thresholds)
        ctx.args = (lam, construction, weighted, spacing, normalize, batch_dims)
        return _tp.soft_ect(input.detach(), directions.detach(), thresholds.detach(), lam, construction, weighted,
                            spacing, normalize, batch_dims)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        input, directions, thresholds = ctx.saved_tensors
        lam, construction, weighted, spacing, normalize, batch_dims = ctx.args
        ni, nd, nt = ctx.needs_input_grad[:3]
        if not (ni or nd or nt):
            return (None,) * 9
        gi, gd, gt = _tp.soft_ect_backward(input.detach(), directions.detach(), thresholds.detach(),
                                           grad.to(torch.float64).contiguous(), lam, construction, weighted, spacing,
                                           normalize, batch_dims, need_input=ni, need_directions=nd,
                                           need_thresholds=nt)
        return (gi, _host_tensor(gd, directions) if nd else None, _host_tensor(gt, thresholds) if nt else None,
                None, None, None, None, None, None)


def soft_ect(input, directions, thresholds, lam=1.0, construction="V", weighted=False, spacing=None,
             normalize=False, batch_dims=0):
    """Soft Euler characteristic transform (float64, batch + (m, T)), differentiable in input (weighted),
    directions and thresholds."""
    sp = tuple(float(s) for s in np.atleast_1d(spacing)) if spacing is not None else None
    return SoftECTFunction.apply(input, _as_tensor(directions, input), _as_tensor(thresholds, input), float(lam),
                                 construction, bool(weighted), sp, bool(normalize), int(batch_dims))


class SinkhornFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b, cost, grid, p, epsilon, max_iter, tol, log_domain, scale):
        c = cost.detach() if isinstance(cost, torch.Tensor) else cost
        r = _ot.solve(a.detach(), b.detach(), c, grid, p, epsilon, max_iter, tol, log_domain, scale=scale)
        f = np.where(np.isfinite(r["f"]), r["f"], 0.0)
        g = np.where(np.isfinite(r["g"]), r["g"], 0.0)
        ctx.save_for_backward(_host_tensor(f, a), _host_tensor(g, b))
        return _host_tensor(np.asarray(r["objective"]), a)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        f, g = ctx.saved_tensors
        if ctx.needs_input_grad[2]:
            raise RuntimeError("ndforge.torch.sinkhorn: the derivative for 'cost' is not implemented")
        ga = grad.unsqueeze(-1) * f if ctx.needs_input_grad[0] else None
        gb = grad.unsqueeze(-1) * g if ctx.needs_input_grad[1] else None
        return (ga, gb) + (None,) * 8


def sinkhorn(a, b, cost=None, grid=None, p=2, epsilon=0.05, max_iter=100, tol=0.0, log_domain=False, scale=1.0):
    """Entropic OT value OT_eps(a, b) per pair ((n,) or a scalar), differentiable in a and b (not in cost:
    a backward pass that needs cost's gradient raises, as torch's functions without one do)."""
    # a histogram given as an array follows the other's device (a tensor's)
    dev = a.device if isinstance(a, torch.Tensor) else b.device if isinstance(b, torch.Tensor) else None
    a = a if isinstance(a, torch.Tensor) else torch.as_tensor(np.asarray(a, dtype=np.float64), device=dev)
    b = b if isinstance(b, torch.Tensor) else torch.as_tensor(np.asarray(b, dtype=np.float64), device=dev)
    return SinkhornFunction.apply(a, b, cost, grid, p, epsilon, max_iter, tol, log_domain, scale)


class ECCLayer(torch.nn.Module):
    """Soft Euler characteristic curves of a batch of 2-D or 3-D images: (batch..., T).

    thresholds: a count T (evenly spaced over `range`) or a tensor of values;
    learnable_thresholds makes them a parameter.  lam is the sigmoid's sharpness."""

    def __init__(self, thresholds=32, range=(0.0, 1.0), lam=10.0, ndim=2, construction="V",
                 learnable_thresholds=False):
        super().__init__()
        if isinstance(thresholds, int):
            t = torch.linspace(float(range[0]), float(range[1]), thresholds, dtype=torch.float64)
        else:
            t = torch.as_tensor(thresholds, dtype=torch.float64).clone()
        if learnable_thresholds:
            self.thresholds = torch.nn.Parameter(t)
        else:
            self.register_buffer("thresholds", t)
        self.lam, self.ndim, self.construction = float(lam), int(ndim), construction

    def forward(self, x):
        return soft_ecc(x, self.thresholds, self.lam, self.construction, x.dim() - self.ndim)


class ECTLayer(torch.nn.Module):
    """Soft Euler characteristic transform with learnable directions: (batch..., m, T).

    The grid is normalized into the unit ball, so thresholds span [-1, 1];
    directions are kept unit (normalized in the forward pass)."""

    def __init__(self, num_directions=16, thresholds=32, lam=10.0, ndim=2, construction="V", weighted=False,
                 learnable_directions=True, learnable_thresholds=False):
        super().__init__()
        d = torch.randn(num_directions, ndim, dtype=torch.float64)
        d = d / d.norm(dim=1, keepdim=True)
        if learnable_directions:
            self.directions = torch.nn.Parameter(d)
        else:
            self.register_buffer("directions", d)
        if isinstance(thresholds, int):
            t = torch.linspace(-1.0, 1.0, thresholds, dtype=torch.float64)
        else:
            t = torch.as_tensor(thresholds, dtype=torch.float64).clone()
        if learnable_thresholds:
            self.thresholds = torch.nn.Parameter(t)
        else:
            self.register_buffer("thresholds", t)
        self.lam, self.ndim, self.construction, self.weighted = float(lam), int(ndim), construction, bool(weighted)

    def forward(self, x):
        u = self.directions / self.directions.norm(dim=1, keepdim=True)
        return soft_ect(x, u, self.thresholds, self.lam, self.construction, self.weighted, None, True,
                        x.dim() - self.ndim)
