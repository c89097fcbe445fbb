#!/usr/bin/env python3
"""peers_sinkhorn.py -- the Sinkhorn workloads of ndf_bench, run by ndforge's peers.

This program does not use ndforge.  It times, on the GPU in float32 (TF32 off),
a naive torch loop of the same iterations as ndf_bench's workloads (n pairs
of random positive histograms of mass 1 on a 32x32 grid, squared-Euclidean
cost normalized to max 1, max_iter iterations, no early exit), returning the
transport costs <P, C> like ndf_sinkhorn_solve:
  torch            dense: K = exp(-C/eps) (d x d) and one batched matmul per
                   half-iteration (cuBLAS); log domain: logsumexp over an
                   (n, d, d) tensor per half-iteration;
  torch_separable  the grid cost factorized per axis: K_1 V K_2^T by two
                   small matmuls per half-iteration (log domain: logsumexp
                   per axis), never d x d.
Every peer's transport costs are checked against a float64 torch run of the
dense loop (relative 1e-3).  Timing is peers_grey.py's (CUDA events, calls
queued behind a spin kernel).  Keys as ndf_bench's: sinkhorn_f32_16x32x32_it100_eps0.05,
sinkhorn_log_..., sinkhorn_dense_... (the dense workload has no separable peer
by definition: it times the same dense loop).
"""
import sys

import numpy as np

from peers_grey import TorchGPU, add_timing, emit, first_call, start, time_gpu

# The sinkhorn workloads of ndf_bench (bench/bench.c, default_workloads).
WORKLOADS = [
    dict(op="sinkhorn", n=16, grid=(32, 32), iters=100, eps=0.05),
    dict(op="sinkhorn", n=16, grid=(32, 32), iters=1000, eps=0.05),
    dict(op="sinkhorn_log", n=16, grid=(32, 32), iters=100, eps=0.01),
    dict(op="sinkhorn", n=128, grid=(32, 32), iters=100, eps=0.05),
    dict(op="sinkhorn_dense", n=16, grid=(32, 32), iters=100, eps=0.05),
]
RTOL = 1e-3


def wl_name(w):
    return "%s_f32_%dx%s_it%d_eps%g" % (w["op"], w["n"], "x".join(map(str, w["grid"])), w["iters"], w["eps"])


def record(w, device, date):
    d = int(np.prod(w["grid"]))
    return {"bench": "peers_sinkhorn", "name": wl_name(w), "op": w["op"], "dtype": "float32",
            "shape": [w["n"], *w["grid"]], "iterations": w["iters"], "epsilon": w["eps"],
            "log_domain": int(w["op"] == "sinkhorn_log"), "device": device, "date": date,
            "bytes": 2 * w["n"] * d * 4}


def axis_costs(grid):
    """Per-axis squared-distance matrices, scaled so that the summed cost has max 1."""
    scale = 1.0 / sum((g - 1) ** 2 for g in grid)
    return [((np.arange(g)[:, None] - np.arange(g)[None, :]) ** 2) * scale for g in grid]


def dense_cost(grid):
    idx = np.indices(grid).reshape(len(grid), -1).T.astype(np.float64)
    scale = 1.0 / sum((g - 1) ** 2 for g in grid)
    return ((idx[:, None, :] - idx[None, :, :]) ** 2).sum(-1) * scale


def dense_solver(torch, w, C, dtype):
    """Closure (a, b) -> transport costs, the dense naive loop."""
    eps, iters, log = w["eps"], w["iters"], w["op"] == "sinkhorn_log"
    C = torch.as_tensor(C, device="cuda", dtype=dtype)
    K, L = torch.exp(-C / eps), -C / eps

    def run(a, b):
        if log:
            la, lb = torch.log(a), torch.log(b)
            g = torch.zeros_like(b)
            for _ in range(iters):
                f = la - torch.logsumexp(g[:, None, :] + L[None], dim=2)
                g = lb - torch.logsumexp(f[:, :, None] + L[None], dim=1)
            P = torch.exp(f[:, :, None] + g[:, None, :] + L[None])
        else:
            v = torch.ones_like(b)
            for _ in range(iters):
                u = a / (v @ K.T)
                v = b / (u @ K)
            P = u[:, :, None] * K[None] * v[:, None, :]
        return (P * C[None]).sum((1, 2))
    return run


def separable_solver(torch, w, dtype):
    """Closure (a, b) -> transport costs with per-axis kernels (2-D grid)."""
    eps, iters, log, grid = w["eps"], w["iters"], w["op"] == "sinkhorn_log", w["grid"]
    cs = [torch.as_tensor(c, device="cuda", dtype=dtype) for c in axis_costs(grid)]
    Ks, Ls = [torch.exp(-c / eps) for c in cs], [-c / eps for c in cs]
    n = w["n"]

    def apply(x, mats):  # x (n, g0, g1); mats[k] acts on axis k (symmetric)
        y = torch.matmul(mats[0], x)            # axis 0
        return torch.matmul(y, mats[1].T)       # axis 1

    def lse_apply(x, mats):
        y = torch.logsumexp(x[:, None, :, :] + mats[0][None, :, :, None], dim=2)
        return torch.logsumexp(y[:, :, None, :] + mats[1][None, None, :, :], dim=3)

    def run(a, b):
        A, B = a.reshape(n, *grid), b.reshape(n, *grid)
        if log:
            la, lb = torch.log(A), torch.log(B)
            g = torch.zeros_like(B)
            for _ in range(iters):
                f = la - lse_apply(g, Ls)
                g = lb - lse_apply(f, Ls)
            tc = 0
            for k in range(2):
                W = [Ls[j] + (torch.log(cs[j]) if j == k else 0) for j in range(2)]
                tc = tc + torch.exp(f + lse_apply(g, W)).sum((1, 2))
            return tc
        v = torch.ones_like(B)
        for _ in range(iters):
            u = A / apply(v, Ks)
            v = B / apply(u, Ks)
        tc = 0
        for k in range(2):
            W = [Ks[j] * cs[j] if j == k else Ks[j] for j in range(2)]
            tc = tc + (u * apply(v, W)).sum((1, 2))
        return tc
    return run


def main():
    args, date, mods, device = start(__doc__, "peers_sinkhorn", 20, "torch")
    torch = mods.get("torch")
    if torch is None:
        return 1
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    gpu = TorchGPU(torch)
    rng = np.random.default_rng(args.seed)
    failures = 0
    for w in WORKLOADS:
        if args.only and args.only not in wl_name(w):
            continue
        base = record(w, device, date)
        d = int(np.prod(w["grid"]))
        h = rng.uniform(0.05, 1.05, (2, w["n"], d))
        h /= h.sum(-1, keepdims=True)
        C = dense_cost(w["grid"])
        a64, b64 = (torch.as_tensor(x, device="cuda", dtype=torch.float64) for x in h)
        ref = dense_solver(torch, w, C, torch.float64)(a64, b64).cpu().numpy()
        a32, b32 = a64.float(), b64.float()
        peers = [("torch", dense_solver(torch, w, C, torch.float32))]
        if w["op"] != "sinkhorn_dense":
            peers.append(("torch_separable", separable_solver(torch, w, torch.float32)))
        for name, solve in peers:
            try:
                with torch.no_grad():
                    out, first_ms = first_call(lambda: solve(a32, b32), gpu)
                    got = out.double().cpu().numpy()
                    ok = bool(np.allclose(got, ref, rtol=RTOL, atol=0))
                    warm, gated = time_gpu([lambda: solve(a32, b32)], gpu, args.reps)
                rec = dict(base, peer=name, version=torch.__version__,
                           check="ok (float64 dense loop, rtol %g)" % RTOL if ok else
                           "MISMATCH: max rel %.3g" % float(np.max(np.abs(got - ref) / np.abs(ref))))
                add_timing(rec, warm, first_ms, gated)
                failures += not ok
                emit(rec, args.human)
            except Exception as e:
                failures += 1
                emit(dict(base, peer=name, error="%s: %s" % (type(e).__name__, e)), args.human)
        torch.cuda.empty_cache()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
