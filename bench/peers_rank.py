#!/usr/bin/env python3
"""peers_rank.py -- the rank-filter workloads of ndf_bench, run by ndforge's peers.

This program does not use ndforge.  It times median_filter in
  cupyx   cupyx.scipy.ndimage.median_filter (same semantics), mode='reflect';
  torch   Kornia's general path: reflect-pad, unfold the window, torch.median
          over it (2-D windows only).  torch's 'reflect' pad is scipy's
          'mirror', so only the interior is compared, against cupyx;
  scipy   scipy.ndimage.median_filter on one CPU core, for workloads small
          enough to run in seconds; the reference cupyx is checked against.
Timing (CUDA events behind a spin kernel, rotated buffers) and the JSON lines
are those of peers_grey.py, whose helpers this script imports.
"""
import sys
import time

import numpy as np

from peers_grey import (PEAK_BYTES_PER_S, SHORT, CupyGPU, TorchGPU, add_timing, emit, first_call, start,
                        n_buffers, random_input, time_gpu)

# The rank workloads of ndf_bench (bench/bench.c, default_workloads), reflect mode, box windows.
WORKLOADS = [
    dict(op="median", dtype="float32", shape=(1, 3, 256, 256), size=5, batch_dims=2),
    dict(op="median", dtype="float32", shape=(8, 3, 256, 256), size=3, batch_dims=2),
    dict(op="median", dtype="float32", shape=(8, 3, 256, 256), size=5, batch_dims=2),
    dict(op="median", dtype="float32", shape=(128, 128, 128), size=3, batch_dims=0),
    dict(op="median", dtype="float32", shape=(1024, 1024), size=3, batch_dims=0),
    dict(op="median", dtype="float32", shape=(1024, 1024), size=7, batch_dims=0),
    dict(op="median", dtype="float32", shape=(1024, 1024), size=31, batch_dims=0),
    dict(op="median", dtype="uint8", shape=(8, 3, 256, 256), size=5, batch_dims=2),
    dict(op="median", dtype="uint8", shape=(1024, 1024), size=3, batch_dims=0),
    dict(op="median", dtype="uint8", shape=(1024, 1024), size=31, batch_dims=0),
]


def wl_name(w):
    """The key shared with ndf_bench: median_f32_8x3x256x256_s5_b2."""
    return "%s_%s_%s_s%d_b%d" % (w["op"], SHORT[w["dtype"]], "x".join(map(str, w["shape"])), w["size"],
                                 w["batch_dims"])


def size_of(w):
    bd, sp = w["batch_dims"], len(w["shape"]) - w["batch_dims"]
    return (1,) * bd + (w["size"],) * sp


def record(w, peer, device, date):
    b = 2 * int(np.prod(w["shape"])) * np.dtype(w["dtype"]).itemsize
    return {"bench": "peers_rank", "peer": peer, "name": wl_name(w), "op": "median_filter", "dtype": w["dtype"],
            "shape": list(w["shape"]), "size": w["size"], "batch_dims": w["batch_dims"], "mode": "reflect",
            "device": device, "date": date, "bytes": b, "floor_ms": b / PEAK_BYTES_PER_S * 1e3}


def scipy_ok(w):
    return int(np.prod(w["shape"])) <= 2_200_000 and w["size"] <= 5


def run_scipy(w, host, base, human):
    import scipy
    import scipy.ndimage as ndi
    t0 = time.perf_counter()
    ref = ndi.median_filter(host, size=size_of(w), mode="reflect")
    ms = (time.perf_counter() - t0) * 1e3
    emit(dict(base, peer="scipy", device="cpu (scipy.ndimage, one thread)", version=scipy.__version__, cpu_ms=ms,
              runs=1), human)
    return ref


def run_cupyx(w, hosts, ref, base, reps, human, cp):
    import cupyx.scipy.ndimage as cndi
    xs = [cp.asarray(h) for h in hosts]
    outs = [cp.empty_like(x) for x in xs]
    sz = size_of(w)
    calls = [(lambda x=x, o=o: cndi.median_filter(x, size=sz, output=o, mode="reflect")) for x, o in zip(xs, outs)]
    gpu = CupyGPU(cp)
    _, first_ms = first_call(calls[0], gpu)
    result0 = outs[0].copy()
    rec = dict(base, peer="cupyx", version=cp.__version__,
               call="cupyx.scipy.ndimage.median_filter(x, size=%s, mode='reflect', output=out)" % (sz,))
    if ref is not None:
        rec["check"] = "equal to scipy" if np.array_equal(cp.asnumpy(result0), ref) else "MISMATCH vs scipy"
    else:
        rec["check"] = "unchecked (no scipy reference at this size)"
    warm, gated = time_gpu(calls, gpu, reps)
    add_timing(rec, warm, first_ms, gated)
    rec["nbuf"], rec["reps"] = len(xs), reps
    emit(rec, human)
    return result0


def run_torch(w, hosts, cupyx_result, base, reps, human, torch):
    import torch.nn.functional as F
    rec = dict(base, peer="torch", version=torch.__version__,
               boundary="torch reflect-pad is scipy's mirror: interior compared only")
    shape, bd, k = tuple(w["shape"]), w["batch_dims"], w["size"]
    if len(shape) - bd != 2:
        emit(dict(rec, skipped="unfold + median is a 2-D path"), human)
        return
    if w["dtype"] != "float32":
        emit(dict(rec, skipped="median over unfold: float path only"), human)
        return
    p = k // 2
    nimg = int(np.prod(shape[:bd], dtype=np.int64))
    h, wd = shape[bd:]

    def make(x):
        xv = x.reshape(nimg, 1, h, wd)
        return lambda: torch.median(F.unfold(F.pad(xv, (p, p, p, p), mode="reflect"), k), dim=1).values.reshape(shape)

    xs = [torch.from_numpy(hh).cuda() for hh in hosts]
    calls = [make(x) for x in xs]
    rec["call"] = "median(unfold(pad(x, %d, 'reflect'), %d), dim=1)" % (p, k)
    gpu = TorchGPU(torch)
    try:
        out0, first_ms = first_call(calls[0], gpu)
    except (RuntimeError, NotImplementedError) as e:
        emit(dict(rec, skipped="not supported: %s" % str(e).splitlines()[0]), human)
        return
    if cupyx_result is not None:
        a = out0.cpu().numpy()[..., p:h - p, p:wd - p]
        b = cupyx_result.get()[..., p:h - p, p:wd - p]
        rec["check"] = "interior equal to cupyx" if np.array_equal(a, b) else "interior MISMATCH vs cupyx"
    del out0
    warm, gated = time_gpu(calls, gpu, reps)
    add_timing(rec, warm, first_ms, gated)
    rec["nbuf"], rec["reps"] = len(xs), reps
    emit(rec, human)


def main():
    args, date, mods, device = start(__doc__, "peers_rank", 100, "cupyx,torch,scipy")
    rng = np.random.default_rng(args.seed)
    for w in WORKLOADS:
        if args.only and args.only not in wl_name(w):
            continue
        hosts = [random_input(rng, w) for _ in range(n_buffers(w))]
        base = record(w, None, device, date)
        ref = run_scipy(w, hosts[0], base, args.human) if "scipy" in mods and scipy_ok(w) else None
        cres = None
        if "cupyx" in mods:
            try:
                cres = run_cupyx(w, hosts, ref, base, args.reps, args.human, mods["cupyx"])
            except Exception as e:  # report and go on with the other peers
                emit(dict(base, peer="cupyx", error="%s: %s" % (type(e).__name__, e)), args.human)
        if "torch" in mods:
            try:
                run_torch(w, hosts, cres, base, args.reps, args.human, mods["torch"])
            except Exception as e:
                emit(dict(base, peer="torch", error="%s: %s" % (type(e).__name__, e)), args.human)
        del hosts
    return 0


if __name__ == "__main__":
    sys.exit(main())
