#!/usr/bin/env python3
"""peers_ecc.py -- the Euler characteristic curve workloads of ndf_bench, run by a peer.

This program does not use ndforge.  It times a straightforward vectorized
torch implementation of the exact Euler characteristic curve on the GPU (the
issue's "vectorized torch" peer), with the owner rule of ndforge's ADR 0009:
every cell of the cubical complex belongs to the voxel that decides its
filtration value, ties broken by (value, linear index); a voxel's
contribution c(v) is the signed count of the cells around it that it owns,
found from its 3^d - 1 "wins against" comparisons (the input padded with NaN),
then a per-image histogram over the threshold bins (torch.searchsorted,
scatter_add) and a cumulative sum.  T = 256 thresholds over [min, max] of
the whole input, as ndf_bench.  The same function on NumPy (CPU) checks the
torch result on inputs up to 17 M voxels ("check").
The input is ndf_bench's kind: float32 uniform in [-1000, 1000) (uint8:
random bytes).  Timing (CUDA events behind a spin kernel, rotated buffers)
and the JSON lines are those of peers_grey.py, whose helpers this script imports.
"""
import itertools
import sys

import numpy as np

from peers_grey import PEAK_BYTES_PER_S, TorchGPU, add_timing, emit, first_call, start, time_gpu

# The ecc workloads of ndf_bench (bench/bench.c, default_workloads).
WORKLOADS = [
    dict(dtype="float32", shape=(1024, 1024), batch_dims=0, T=256, cons="V"),
    dict(dtype="float32", shape=(8192, 8192), batch_dims=0, T=256, cons="V"),
    dict(dtype="float32", shape=(128, 128, 128), batch_dims=0, T=256, cons="V"),
    dict(dtype="float32", shape=(256, 256, 256), batch_dims=0, T=256, cons="V"),
    dict(dtype="float32", shape=(512, 512, 512), batch_dims=0, T=256, cons="V"),
    dict(dtype="float32", shape=(64, 256, 256), batch_dims=1, T=256, cons="V"),
    dict(dtype="float32", shape=(256, 256, 256), batch_dims=0, T=256, cons="T"),
    dict(dtype="uint8", shape=(256, 256, 256), batch_dims=0, T=256, cons="V"),
]
ROTATE_TOTAL = 512 << 20


def wl_name(w):
    """The key shared with ndf_bench: ecc_float32_1024x1024_T256, ecc_float32_64x256x256_b1_T256."""
    return "ecc%s_%s_%s%s_T%d" % ("_tcons" if w["cons"] == "T" else "", w["dtype"], "x".join(map(str, w["shape"])),
                                   "_b%d" % w["batch_dims"] if w["batch_dims"] else "", w["T"])


def wl_bytes(w):
    nimg = int(np.prod(w["shape"][:w["batch_dims"]])) if w["batch_dims"] else 1
    return int(np.prod(w["shape"])) * np.dtype(w["dtype"]).itemsize + nimg * w["T"] * 8


def n_buffers(w):
    b = wl_bytes(w)
    return 1 if b >= (100 << 20) else max(1, min(64, ROTATE_TOTAL // b))


def record(w, peer, device, date):
    b = wl_bytes(w)
    return {"bench": "peers_ecc", "peer": peer, "name": wl_name(w), "op": "euler_characteristic_curve",
            "dtype": w["dtype"], "shape": list(w["shape"]), "batch_dims": w["batch_dims"], "size": w["T"],
            "construction": w["cons"], "device": device, "date": date, "bytes": b,
            "floor_ms": b / PEAK_BYTES_PER_S * 1e3}


def random_input(rng, w):
    if w["dtype"] == "uint8":
        return rng.integers(0, 256, size=w["shape"], dtype=np.uint8)
    return (rng.random(w["shape"], dtype=np.float32) * 2000 - 1000).astype(w["dtype"])


def cells(d):
    """(offsets of the deciding neighbours, number of axes) of the 3^d cells around a voxel."""
    out = []
    for o in itertools.product((-1, 0, 1), repeat=d):
        axes = [i for i in range(d) if o[i]]
        nbs = []
        for r in range(1, len(axes) + 1):
            for sub in itertools.combinations(axes, r):
                nbs.append(tuple(o[i] if i in sub else 0 for i in range(d)))
        out.append((nbs, len(axes)))
    return out


class NumpyOps:
    """The array operations the curve needs, on NumPy (the CPU check)."""
    def __init__(self):
        self.xp = np

    def pad_nan(self, x, d):
        return np.pad(x, [(0, 0)] + [(1, 1)] * d, constant_values=np.nan)

    def thresholds(self, x, T):
        lo, hi = float(x.min()), float(x.max())
        t = lo + (hi - lo) * np.arange(T, dtype=np.float64) / (T - 1)
        t[-1] = hi
        return t

    def hist(self, nimg, T, img, bins, c):
        h = np.zeros(nimg * (T + 1), np.int64)
        np.add.at(h, img * (T + 1) + bins, c)
        return h.reshape(nimg, T + 1)

    def bins(self, ts, f):
        return np.searchsorted(ts, f, side="left")


class TorchOps:
    def __init__(self, torch):
        self.torch = torch

    def pad_nan(self, x, d):
        return self.torch.nn.functional.pad(x, (1, 1) * d, value=float("nan"))

    def thresholds(self, x, T):
        torch = self.torch
        ex = torch.aminmax(x)
        lo, hi = ex.min.double(), ex.max.double()
        t = lo + (hi - lo) * torch.arange(T, dtype=torch.float64, device=x.device) / (T - 1)
        t[-1] = hi
        return t

    def hist(self, nimg, T, img, bins, c):
        h = self.torch.zeros(nimg * (T + 1), dtype=self.torch.int64, device=c.device)
        h.scatter_add_(0, img * (T + 1) + bins, c)
        return h.reshape(nimg, T + 1)

    def bins(self, ts, f):
        return self.torch.searchsorted(ts, f, right=False)


def ecc(ops, x, nb, T, cons):
    """The curves (batch..., T) of x: values as float32/float64, comparisons in that type."""
    shape = tuple(x.shape)
    d = len(shape) - nb
    nimg = int(np.prod(shape[:nb])) if nb else 1
    x = x.reshape((nimg,) + shape[nb:])
    if str(x.dtype).endswith("uint8"):
        x = x.float() if ops.__class__ is TorchOps else x.astype(np.float32)
    ts = ops.thresholds(x, T)
    xp = ops.pad_nan(x, d)
    core = tuple(slice(1, 1 + n) for n in shape[nb:])
    f = x
    wins = {}
    for o in itertools.product((-1, 0, 1), repeat=d):
        if not any(o):
            continue
        nb_view = xp[(slice(None),) + tuple(slice(1 + oi, 1 + oi + n) for oi, n in zip(o, shape[nb:]))]
        neg = o < (0,) * d  # the neighbour comes first in C order
        if cons == "V":
            wins[o] = (f >= nb_view) if neg else (f > nb_view)
        else:
            wins[o] = ~(nb_view <= f) if neg else ~(nb_view < f)
    del xp, core
    c = None
    for nbs, k in cells(d):
        sign = (-1) ** k if cons == "V" else (-1) ** (d - k)
        own = None
        for o in nbs:
            own = wins[o] if own is None else own & wins[o]
        term = sign * (own.to(dtype=ops.torch.int64) if ops.__class__ is TorchOps else own.astype(np.int64)) \
            if own is not None else sign
        c = term if c is None else c + term
    img = (ops.torch.arange(nimg, device=x.device) if ops.__class__ is TorchOps else np.arange(nimg))
    img = img.reshape((nimg,) + (1,) * d).expand(f.shape) if ops.__class__ is TorchOps else \
        np.broadcast_to(img.reshape((nimg,) + (1,) * d), f.shape)
    fd = f.double() if ops.__class__ is TorchOps else f.astype(np.float64)
    bins = ops.bins(ts, fd.reshape(-1))
    h = ops.hist(nimg, T, img.reshape(-1), bins.reshape(-1), c.reshape(-1))
    chi = h[:, :T].cumsum(1)
    return chi.reshape(shape[:nb] + (T,))


def run_torch(w, hosts, base, reps, human, torch):
    rec = dict(base, peer="torch", version=torch.__version__,
               call="vectorized torch: 3^d-1 comparisons, owned-cell sum, searchsorted + scatter_add, cumsum")
    ops = TorchOps(torch)
    xs = [torch.from_numpy(h).cuda() for h in hosts]
    calls = [(lambda x=x: ecc(ops, x, w["batch_dims"], w["T"], w["cons"])) for x in xs]
    gpu = TorchGPU(torch)
    try:
        out0, first_ms = first_call(calls[0], gpu)
    except (RuntimeError, MemoryError) as e:
        emit(dict(rec, error="%s: %s" % (type(e).__name__, str(e).splitlines()[0])), human)
        return
    if int(np.prod(w["shape"])) <= 17_000_000:
        ref = ecc(NumpyOps(), hosts[0], w["batch_dims"], w["T"], w["cons"])
        rec["check"] = "equal to the NumPy twin" if np.array_equal(out0.cpu().numpy(), ref) else \
            "MISMATCH vs the NumPy twin"
    else:
        rec["check"] = "unchecked (over 17 M voxels)"
    del out0
    torch.cuda.empty_cache()
    warm, gated = time_gpu(calls, gpu, reps)
    add_timing(rec, warm, first_ms, gated)
    rec["nbuf"], rec["reps"] = len(xs), reps
    emit(rec, human)


def main():
    args, date, mods, device = start(__doc__, "peers_ecc", 20, "torch")
    rng = np.random.default_rng(args.seed)
    for w in WORKLOADS:
        if args.only and args.only not in wl_name(w):
            continue
        hosts = [random_input(rng, w) for _ in range(n_buffers(w))]
        base = record(w, None, device, date)
        if "torch" in mods:
            try:
                run_torch(w, hosts, base, args.reps, args.human, mods["torch"])
            except Exception as e:  # report and go on
                emit(dict(base, peer="torch", error="%s: %s" % (type(e).__name__, e)), args.human)
        del hosts
    return 0


if __name__ == "__main__":
    sys.exit(main())
