#!/usr/bin/env python3
"""peers_grey.py -- the grey workloads of ndf_bench, run by ndforge's peers.

This program does not use ndforge.  It times grey_erosion / grey_dilation /
grey_opening in
  cupyx   cupyx.scipy.ndimage.grey_dilation / grey_erosion (same semantics);
  torch   max_pool{1,2,3}d with kernel k, stride 1, padding k//2, and
          -maxpool(-x) for erosion (~maxpool(~x) for unsigned integers);
          box elements only.  torch pads with -inf, not reflect: for a box
          min/max filter this gives the same result as reflect (and nearest),
          because every reflected sample already lies inside the window; the
          output is checked to prove it;
  scipy   scipy.ndimage on the CPU, for the 256^3 workloads only (one run: it
          is slow), which is also the reference the GPU peers are checked
          against there.  Elsewhere torch is checked against cupyx.
GPU peers are timed with their own CUDA events: 10 warm-up calls, then the
median of --reps (default 100) calls queued behind a short spin kernel, so
that the GPU runs them back to back and the events measure kernels, not
Python's launch time.  Inputs under 100 MB rotate among several buffers so
that repeated calls do not measure the L2 cache.  One JSON object per
(peer, workload) goes to stdout; a peer that cannot be imported gets one JSON
line saying so and the others go on.
"""
import argparse
import datetime
import json
import statistics
import sys
import time

import numpy as np

PEAK_BYTES_PER_S = 4.19e12  # measured HBM3e bandwidth of an H200 (read + write)
ROTATE_BELOW = 100 << 20
ROTATE_TOTAL = 512 << 20
MAX_BUFS = 64
WARMUPS = 10
BATCH = 20
CYCLES_PER_MS = 2.0e6  # a guess at the SM clock; the gate checks itself and grows

# The grey workloads of ndf_bench (bench/bench.c, default_workloads), reflect mode.
WORKLOADS = [
    dict(op="dilation", dtype="float32", shape=(64, 1024, 1024), size=3, footprint="box", batch_dims=0),
    dict(op="dilation", dtype="float32", shape=(64, 1024, 1024), size=3, footprint="box", batch_dims=1),
    dict(op="erosion", dtype="float32", shape=(256, 256, 256), size=3, footprint="box", batch_dims=0),
    dict(op="dilation", dtype="float32", shape=(8, 256, 256), size=3, footprint="box", batch_dims=0),
    dict(op="dilation", dtype="float32", shape=(8, 256, 256), size=3, footprint="box", batch_dims=1),
    dict(op="dilation", dtype="float32", shape=(8, 256, 256, 256), size=3, footprint="box", batch_dims=1),
    dict(op="erosion", dtype="float32", shape=(256, 256, 256), size=3, footprint="cross", batch_dims=0),
    dict(op="erosion", dtype="float32", shape=(256, 256, 256), size=7, footprint="box", batch_dims=0),
    dict(op="erosion", dtype="uint8", shape=(256, 256, 256), size=3, footprint="box", batch_dims=0),
    # large elements (issue 4): opening, and the size sweep of one dilation
    dict(op="opening", dtype="float32", shape=(4, 128, 128, 128), size=5, footprint="box", batch_dims=1),
] + [dict(op="dilation", dtype="float32", shape=(2048, 2048), size=s, footprint="box", batch_dims=0)
     for s in (3, 7, 15, 31, 63)]

NDIMAGE_OPS = {"dilation": "grey_dilation", "erosion": "grey_erosion", "opening": "grey_opening"}

SHORT = {"float32": "f32", "float64": "f64", "uint8": "u8", "int8": "i8", "uint16": "u16",
         "int16": "i16", "uint32": "u32", "int32": "i32", "bool": "bool"}

TORCH_BOUNDARY = ("torch pads with -inf, not reflect; for a box min/max filter that equals "
                  "reflect mode (reflected samples lie inside the window)")


def wl_name(w):
    """The key shared with ndf_bench: dilation_f32_64x1024x1024_s3_b0."""
    fp = "cross" if w["footprint"] == "cross" else "s"
    return "%s_%s_%s_%s%d_b%d" % (w["op"], SHORT[w["dtype"]], "x".join(map(str, w["shape"])),
                                   fp, w["size"], w["batch_dims"])


def wl_bytes(w):
    return int(np.prod(w["shape"])) * np.dtype(w["dtype"]).itemsize


def n_buffers(w):
    b = wl_bytes(w)
    if b >= ROTATE_BELOW:
        return 1
    return max(2, min(MAX_BUFS, -(-ROTATE_TOTAL // (2 * b))))


def cross(sp, size):
    """The centre and every point that leaves it along one axis only."""
    idx = np.indices((size,) * sp)
    return (idx != size // 2).sum(axis=0) <= 1


def ndimage_kwargs(w, xp_asarray):
    """size= or footprint= for scipy / cupyx; batch axes get extent 1."""
    bd, sp = w["batch_dims"], len(w["shape"]) - w["batch_dims"]
    if w["footprint"] == "cross":
        return dict(footprint=xp_asarray(cross(sp, w["size"]).reshape((1,) * bd + (w["size"],) * sp)))
    return dict(size=(1,) * bd + (w["size"],) * sp)


def random_input(rng, w):
    shape, dt = w["shape"], np.dtype(w["dtype"])
    if dt.kind == "f":
        return (rng.random(shape, dtype=np.float32) * 2000 - 1000).astype(dt, copy=False)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)


def record(w, peer, device, date):
    b = 2 * wl_bytes(w)
    return {"bench": "peers_grey", "peer": peer, "name": wl_name(w), "op": NDIMAGE_OPS[w["op"]],
            "dtype": w["dtype"], "shape": list(w["shape"]), "size": w["size"],
            "footprint": w["footprint"], "batch_dims": w["batch_dims"], "mode": "reflect",
            "device": device, "date": date, "bytes": b, "floor_ms": b / PEAK_BYTES_PER_S * 1e3}


def emit(rec, human=False):
    print(json.dumps(rec), flush=True)
    if human:
        if "error" in rec or "skipped" in rec:
            why = rec.get("error", rec.get("skipped"))
            print("%-8s %-40s %s" % (rec["peer"], rec.get("name", ""), why), file=sys.stderr, flush=True)
            return
        t = rec.get("warm_ms", rec.get("cpu_ms"))
        print("%-8s %-40s %10.4f ms  %s" % (rec["peer"], rec["name"], t, rec.get("check", "")),
              file=sys.stderr, flush=True)


def add_timing(rec, warm_ms, first_ms, gated):
    rec["warm_ms"] = warm_ms
    rec["first_ms"] = first_ms
    rec["gbps"] = rec["bytes"] / (warm_ms * 1e-3) / 1e9 if warm_ms > 0 else None
    rec["warm_timing"] = "events, calls queued behind a spin kernel" if gated else "events, ungated"


def time_gpu(calls, gpu, reps):
    """Median event time of one call.  calls: one closure per rotated buffer."""
    for i in range(WARMUPS):
        calls[i % len(calls)]()
    gpu.sync()
    times, sleep_ms, gated = [], 2.0, gpu.can_sleep
    while len(times) < reps:
        nb = min(BATCH, reps - len(times))
        evs = [(gpu.event(), gpu.event()) for _ in range(nb)]
        gate = gpu.event()
        if gated:
            gpu.sleep(int(sleep_ms * CYCLES_PER_MS))
            gate.record()
        for j, (a, b) in enumerate(evs):
            a.record()
            calls[(len(times) + j) % len(calls)]()
            b.record()
        covered = gated and not gpu.done(gate)  # still spinning when the last call was queued
        gpu.sync()
        if gated and not covered and sleep_ms < 2000:
            sleep_ms *= 4
            continue
        times += [gpu.elapsed(a, b) for a, b in evs]
    return statistics.median(times), gated


def first_call(fn, gpu):
    """Host time of the first call (cupy compiles its kernels then), with sync."""
    gpu.sync()
    t0 = time.perf_counter()
    out = fn()
    gpu.sync()
    return out, (time.perf_counter() - t0) * 1e3


# --- peers -------------------------------------------------------------------

class CupyGPU:
    def __init__(self, cp):
        self.cp = cp
        self.can_sleep = True
        self._spin = cp.RawKernel(r'''
extern "C" __global__ void peers_spin(long long cycles) {
  long long t0 = clock64();
  while (clock64() - t0 < cycles) { }
}''', "peers_spin")

    def event(self):
        return self.cp.cuda.Event()

    def done(self, ev):
        return ev.done

    def elapsed(self, a, b):
        return self.cp.cuda.get_elapsed_time(a, b)

    def sync(self):
        self.cp.cuda.get_current_stream().synchronize()

    def sleep(self, cycles):
        self._spin((1,), (1,), (np.int64(cycles),))


class TorchGPU:
    def __init__(self, torch):
        self.torch = torch
        self.can_sleep = hasattr(torch.cuda, "_sleep")

    def event(self):
        return self.torch.cuda.Event(enable_timing=True)

    def done(self, ev):
        return ev.query()

    def elapsed(self, a, b):
        return a.elapsed_time(b)

    def sync(self):
        self.torch.cuda.synchronize()

    def sleep(self, cycles):
        self.torch.cuda._sleep(cycles)


def run_scipy(w, host, base, human):
    import scipy
    import scipy.ndimage as ndi
    f = getattr(ndi, NDIMAGE_OPS[w["op"]])
    kw = ndimage_kwargs(w, np.asarray)
    t0 = time.perf_counter()
    ref = f(host, mode="reflect", **kw)
    ms = (time.perf_counter() - t0) * 1e3
    rec = dict(base, peer="scipy", device="cpu (scipy.ndimage, one thread)", version=scipy.__version__,
               cpu_ms=ms, runs=1)
    emit(rec, human)
    return ref


def run_cupyx(w, hosts, ref, base, reps, human, cp):
    import cupyx.scipy.ndimage as cndi
    f = getattr(cndi, NDIMAGE_OPS[w["op"]])
    kw = ndimage_kwargs(w, cp.asarray)
    xs = [cp.asarray(h) for h in hosts]
    outs = [cp.empty_like(x) for x in xs]
    calls = [(lambda x=x, o=o: f(x, output=o, mode="reflect", **kw)) for x, o in zip(xs, outs)]
    gpu = CupyGPU(cp)
    _, first_ms = first_call(calls[0], gpu)
    result0 = outs[0].copy()
    rec = dict(base, peer="cupyx", version=cp.__version__, call="cupyx.scipy.ndimage.%s(x, %s, mode='reflect', output=out)"
               % (NDIMAGE_OPS[w["op"]], "footprint=cross" if "footprint" in kw else "size=%s" % (kw["size"],)))
    if ref is not None:
        rec["check"] = "equal to scipy" if np.array_equal(cp.asnumpy(result0), ref) else "MISMATCH vs scipy"
    else:
        rec["check"] = "unchecked (no scipy reference at this size)"
    warm, gated = time_gpu(calls, gpu, reps)
    add_timing(rec, warm, first_ms, gated)
    rec["nbuf"], rec["reps"] = len(xs), reps
    emit(rec, human)
    del xs, outs, calls
    return result0


def torch_call(w, torch, x):
    """A closure computing the workload with max_pool, or (None, reason)."""
    import torch.nn.functional as F
    if w["footprint"] != "box":
        return None, "non-box footprint: max_pool has box windows only"
    bd, shape, k = w["batch_dims"], tuple(w["shape"]), w["size"]
    sp = len(shape) - bd
    if sp not in (1, 2, 3):
        return None, "%d spatial axes: max_pool has 1 to 3" % sp
    pool = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[sp]
    xv = x.reshape((int(np.prod(shape[:bd], dtype=np.int64)), 1) + shape[bd:])
    p = k // 2
    if w["op"] == "dilation":
        return (lambda: pool(xv, k, 1, p).reshape(shape)), "max_pool%dd(x)" % sp
    if w["op"] == "opening" and x.dtype.is_floating_point:  # dilation(erosion(x)): each step is exact
        return (lambda: pool(pool(xv.neg(), k, 1, p).neg_(), k, 1, p).reshape(shape)), \
            "max_pool%dd(-max_pool%dd(-x))" % (sp, sp)
    if w["op"] == "opening":
        return None, "opening of %s: not written" % w["dtype"]
    if x.dtype.is_floating_point:
        return (lambda: pool(xv.neg(), k, 1, p).neg_().reshape(shape)), "-max_pool%dd(-x)" % sp
    if x.dtype == torch.uint8:
        return (lambda: pool(xv.bitwise_not(), k, 1, p).bitwise_not_().reshape(shape)), "~max_pool%dd(~x)" % sp
    return None, "erosion of %s: no exact negation" % w["dtype"]


def run_torch(w, hosts, ref, cupyx_result, base, reps, human, torch, cp):
    rec = dict(base, peer="torch", version=torch.__version__, boundary=TORCH_BOUNDARY)
    xs = [torch.from_numpy(h).cuda() for h in hosts]
    calls, variant = [], None
    for x in xs:
        fn, variant = torch_call(w, torch, x)
        if fn is None:
            emit(dict(rec, skipped=variant), human)
            return
        calls.append(fn)
    rec["call"] = "%s, kernel %d, stride 1, padding %d" % (variant, w["size"], w["size"] // 2)
    gpu = TorchGPU(torch)
    try:
        out0, first_ms = first_call(calls[0], gpu)
    except (RuntimeError, NotImplementedError) as e:
        emit(dict(rec, skipped="not supported: %s" % str(e).splitlines()[0]), human)
        return
    if ref is not None:
        rec["check"] = "equal to scipy" if np.array_equal(out0.cpu().numpy(), ref) else "MISMATCH vs scipy"
    elif cupyx_result is not None:
        same = bool(torch.equal(out0, torch.from_dlpack(cupyx_result)))
        rec["check"] = "equal to cupyx" if same else "MISMATCH vs cupyx"
    else:
        rec["check"] = "unchecked"
    del out0
    warm, gated = time_gpu(calls, gpu, reps)
    add_timing(rec, warm, first_ms, gated)
    rec["nbuf"], rec["reps"] = len(xs), reps
    emit(rec, human)


def import_peer(name):
    """The module, or an error string."""
    try:
        if name == "cupyx":
            import cupy
            import cupyx.scipy.ndimage  # noqa: F401
            cupy.cuda.runtime.getDeviceCount()
            return cupy
        if name == "torch":
            import torch
            if not torch.cuda.is_available():
                return "torch %s: no CUDA device" % torch.__version__
            return torch
        if name == "scipy":
            import scipy.ndimage  # noqa: F401
            return True
    except Exception as e:  # any failure to import or to reach the GPU
        return "import failed: %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    return "unknown peer"


def start(doc, bench, reps, peers):
    """The command line every peers_*.py takes (--only, --reps, --peers,
    --no-scipy, --seed, --human), the date, the peers that import (one JSON
    error line for each that does not) and the device's name.
    Returns (args, date, mods, device)."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--only", help="workloads whose name contains this (names as in ndf_bench --list)")
    ap.add_argument("--reps", type=int, default=reps)
    ap.add_argument("--peers", default=peers)
    ap.add_argument("--no-scipy", action="store_true", help="skip scipy (and the checks it gives)")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--human", action="store_true", help="one summary line per record on stderr")
    args = ap.parse_args()
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    wanted = [p.strip() for p in args.peers.split(",") if p.strip()]
    if args.no_scipy and "scipy" in wanted:
        wanted.remove("scipy")
    mods = {}
    for p in wanted:
        m = import_peer(p)
        if isinstance(m, str):
            emit({"bench": bench, "peer": p, "date": date, "error": m}, args.human)
        else:
            mods[p] = m
    cp, torch = mods.get("cupyx"), mods.get("torch")
    device = "none"
    if torch is not None:
        device = torch.cuda.get_device_name(0)
    elif cp is not None:
        name = cp.cuda.runtime.getDeviceProperties(0)["name"]
        device = name.decode() if isinstance(name, bytes) else str(name)
    return args, date, mods, device


def main():
    args, date, mods, device = start(__doc__, "peers_grey", 100, "cupyx,torch,scipy")
    cp, torch = mods.get("cupyx"), mods.get("torch")

    rng = np.random.default_rng(args.seed)
    failures = 0
    for w in WORKLOADS:
        if args.only and args.only not in wl_name(w):
            continue
        base = record(w, None, device, date)
        hosts = [random_input(rng, w) for _ in range(n_buffers(w))]
        ref = None
        if "scipy" in mods and tuple(w["shape"]) == (256, 256, 256):
            try:
                ref = run_scipy(w, hosts[0], base, args.human)
            except Exception as e:
                failures += 1
                emit(dict(base, peer="scipy", error="%s: %s" % (type(e).__name__, e)), args.human)
        cres = None
        if cp is not None:
            try:
                cres = run_cupyx(w, hosts, ref, base, args.reps, args.human, cp)
            except Exception as e:
                failures += 1
                emit(dict(base, peer="cupyx", error="%s: %s" % (type(e).__name__, e)), args.human)
        if torch is not None:
            try:
                run_torch(w, hosts, ref, cres, base, args.reps, args.human, torch, cp)
            except Exception as e:
                failures += 1
                emit(dict(base, peer="torch", error="%s: %s" % (type(e).__name__, e)), args.human)
            torch.cuda.empty_cache()
        del cres, hosts, ref
        if cp is not None:
            cp.get_default_memory_pool().free_all_blocks()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
