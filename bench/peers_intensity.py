#!/usr/bin/env python3
"""peers_intensity.py -- the intensity workloads of ndf_bench, run by ndforge's peers.

This program does not use ndforge.  It times percentile windowing (each
volume clipped to its 0.5th and 99.5th percentiles, NumPy's 'linear' method,
then scaled to [0, 1]) in
  cupyx   lo, hi = cupy.percentile(x, [P, 100 - P]); (cupy.clip(x, lo, hi) - lo) / (hi - lo)
          in float32 (cupy.percentile sorts a copy of the volume);
  torch   the two order statistics around each percentile by torch.kthvalue (an
          exact selection, no sort), NumPy's interpolation between them, then
          ((x.clamp(lo, hi) - lo) / (hi - lo)) in float32; torch.quantile has
          a size limit, so it is tried and reported separately (torch_quantile);
  scipy   the NumPy reference on the CPU (np.percentile, then the window in
          float64), which the GPU peers are checked against to float32 rounding.
Timing (CUDA events behind a spin kernel, rotated buffers) and the JSON lines
are those of peers_grey.py, whose helpers this script imports.  The record's
bytes are the floor's: the volume read twice (the percentiles must be known
before any value is written) and written once.
"""
import sys
import time

import numpy as np

from peers_grey import (PEAK_BYTES_PER_S, SHORT, CupyGPU, TorchGPU, add_timing, emit, first_call, start,
                        n_buffers, random_input, time_gpu)

# The intensity workloads of ndf_bench (bench/bench.c, default_workloads).
WORKLOADS = [
    dict(op="pwindow", dtype="float32", shape=(256, 256, 256), p=0.5, batch_dims=0, size=0, footprint="box"),
]


def wl_name(w):
    """The key shared with ndf_bench: pwindow0.5_f32_256x256x256_b0."""
    return "%s%g_%s_%s_b%d" % (w["op"], w["p"], SHORT[w["dtype"]], "x".join(map(str, w["shape"])), w["batch_dims"])


def record(w, peer, device, date):
    b = 3 * int(np.prod(w["shape"])) * np.dtype(w["dtype"]).itemsize
    return {"bench": "peers_intensity", "peer": peer, "name": wl_name(w), "op": "percentile_window",
            "dtype": w["dtype"], "shape": list(w["shape"]), "percentiles": [w["p"], 100 - w["p"]],
            "batch_dims": w["batch_dims"], "device": device, "date": date, "bytes": b,
            "floor_ms": b / PEAK_BYTES_PER_S * 1e3}


def reference(w, host):
    lo, hi = np.percentile(host, [w["p"], 100 - w["p"]])
    x = host.astype(np.float64)
    return ((np.clip(x, lo, hi) - lo) / (hi - lo)).astype(np.float32)


def check(got, ref):
    d = float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64))))
    return ("close to NumPy (max |diff| %.3g)" % d) if d <= 1e-5 else ("MISMATCH vs NumPy (max |diff| %.3g)" % d)


def run_scipy(w, host, base, human):
    t0 = time.perf_counter()
    ref = reference(w, host)
    ms = (time.perf_counter() - t0) * 1e3
    emit(dict(base, peer="numpy", device="cpu (NumPy)", version=np.__version__, cpu_ms=ms, runs=1), human)
    return ref


def run_cupyx(w, hosts, ref, base, reps, human, cp):
    q = cp.asarray([w["p"], 100 - w["p"]])
    xs = [cp.asarray(h) for h in hosts]

    def make(x):
        def f():
            lo, hi = cp.percentile(x, q).astype(cp.float32)
            return (cp.clip(x, lo, hi) - lo) / (hi - lo)
        return f

    calls = [make(x) for x in xs]
    gpu = CupyGPU(cp)
    out0, first_ms = first_call(calls[0], gpu)
    rec = dict(base, peer="cupyx", version=cp.__version__,
               call="lo, hi = cupy.percentile(x, [P, 100-P]); (cupy.clip(x, lo, hi) - lo) / (hi - lo)")
    if ref is not None:
        rec["check"] = check(cp.asnumpy(out0), ref)
    del out0
    warm, gated = time_gpu(calls, gpu, reps)
    add_timing(rec, warm, first_ms, gated)
    rec["nbuf"], rec["reps"] = len(xs), reps
    emit(rec, human)


def torch_bounds_kth(torch, xf, ps):
    """NumPy's linear percentiles of the flat tensor xf by exact selection (torch.kthvalue)."""
    n = xf.numel()
    vals = []
    for p in ps:
        h = (n - 1) * (p / 100.0)
        i = int(np.floor(h))
        a = torch.kthvalue(xf, i + 1).values
        b = torch.kthvalue(xf, min(i + 2, n)).values if i + 1 < n else a
        vals.append(a + (b - a) * (h - i))
    return vals


def run_torch(w, hosts, ref, base, reps, human, torch, quantile=False):
    peer = "torch_quantile" if quantile else "torch"
    ps = [w["p"], 100 - w["p"]]
    xs = [torch.from_numpy(h).cuda() for h in hosts]

    def make(x):
        xf = x.reshape(-1)
        if quantile:
            qs = torch.tensor([p / 100 for p in ps], device=x.device, dtype=x.dtype)

            def f():
                lo, hi = torch.quantile(xf, qs)
                return (x.clamp(lo, hi) - lo) / (hi - lo)
        else:
            def f():
                lo, hi = torch_bounds_kth(torch, xf, ps)
                return (x.clamp(lo, hi) - lo) / (hi - lo)
        return f

    calls = [make(x) for x in xs]
    gpu = TorchGPU(torch)
    rec = dict(base, peer=peer, version=torch.__version__,
               call="torch.quantile(x, q)" if quantile else "torch.kthvalue around each percentile, NumPy's lerp")
    try:
        out0, first_ms = first_call(calls[0], gpu)
    except RuntimeError as e:
        emit(dict(rec, skipped="not supported: %s" % str(e).splitlines()[0]), human)
        return
    if ref is not None:
        rec["check"] = check(out0.cpu().numpy(), ref)
    del out0
    warm, gated = time_gpu(calls, gpu, reps)
    add_timing(rec, warm, first_ms, gated)
    rec["nbuf"], rec["reps"] = len(xs), reps
    emit(rec, human)


def main():
    args, date, mods, device = start(__doc__, "peers_intensity", 100, "cupyx,torch,scipy")
    rng = np.random.default_rng(args.seed)
    for w in WORKLOADS:
        if args.only and args.only not in wl_name(w):
            continue
        hosts = [random_input(rng, w) for _ in range(n_buffers(w))]
        base = record(w, None, device, date)
        ref = run_scipy(w, hosts[0], base, args.human) if "scipy" in mods else None
        if "cupyx" in mods:
            try:
                run_cupyx(w, hosts, ref, base, args.reps, args.human, mods["cupyx"])
            except Exception as e:  # report and go on with the other peers
                emit(dict(base, peer="cupyx", error="%s: %s" % (type(e).__name__, e)), args.human)
        if "torch" in mods:
            for quantile in (False, True):
                try:
                    run_torch(w, hosts, ref, base, args.reps, args.human, mods["torch"], quantile)
                except Exception as e:
                    emit(dict(base, peer="torch_quantile" if quantile else "torch",
                              error="%s: %s" % (type(e).__name__, e)), args.human)
        del hosts
    return 0


if __name__ == "__main__":
    sys.exit(main())
