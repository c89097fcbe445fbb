#!/usr/bin/env python3
"""peers_binary.py -- the binary workloads of ndf_bench (bench/bench.c), run by ndforge's peers.

This program does not use ndforge.  It times, on a 256^3 bool image of random
blobs (blobs() below; bench.c:fill_blobs builds the same image):
  cupyx   cupyx.scipy.ndimage.binary_erosion (6-connected, 1 and 10
          iterations; CuPy only iterates with brute_force=True, used and said
          so when the default raises), binary_fill_holes, label;
  scipy   scipy.ndimage on the CPU, one run per workload (it is slow), which
          is also the reference cupyx is checked against.
GPU timing is peers_grey.py's: CUDA events, 10 warm-up calls, the median of
--reps calls queued behind a short spin kernel; fill_holes and label
synchronize inside (CuPy's label returns the count), so they are timed one
call at a time.  One JSON object per (peer,
workload) goes to stdout; a peer that cannot be imported gets one JSON line
saying so.
"""
import sys
import time

import numpy as np

from peers_grey import PEAK_BYTES_PER_S, CupyGPU, add_timing, emit, first_call, start, time_gpu

SHAPE = (256, 256, 256)
# The keys of ndf_bench's binary workloads (bench/bench.c, default_workloads).
WORKLOADS = [
    dict(name="binary_erosion_it1_bool_256x256x256_cross3_b0", op="erosion", iterations=1),
    dict(name="binary_erosion_it10_bool_256x256x256_cross3_b0", op="erosion", iterations=10),
    dict(name="binary_fill_holes_bool_256x256x256_cross3_b0", op="fill_holes"),
    dict(name="label_bool_256x256x256_cross3_b0", op="label"),
]
MASK64 = (1 << 64) - 1


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    z = x
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def blobs(shape, seed, cell=16, level=0.0):
    """Random blobs: uniform noise in [-1, 1) on a coarse grid of `cell`
    voxels, interpolated trilinearly, above `level`.  Coarse value i (C order
    over the grid of shape s // cell + 2) is splitmix64(seed + i)."""
    g = tuple(s // cell + 2 for s in shape)
    n = int(np.prod(g))
    coarse = np.array([(splitmix64(seed + i) >> 11) * 2.0 ** -53 * 2.0 - 1.0 for i in range(n)]).reshape(g)
    idx = [np.arange(s) // cell for s in shape]
    frac = [(np.arange(s) % cell) / cell for s in shape]
    z0, y0, x0 = np.ix_(*idx)
    fz, fy, fx = np.ix_(*frac)
    v = np.zeros(shape)
    for dz in (0, 1):
        for dy in (0, 1):
            for dx in (0, 1):
                w = (fz if dz else 1 - fz) * (fy if dy else 1 - fy) * (fx if dx else 1 - fx)
                v += w * coarse[z0 + dz, y0 + dy, x0 + dx]
    return v > level


def record(w, device, date):
    n = int(np.prod(SHAPE))
    # Bytes the op must move at least: bool in and out (label: int32 out).
    b = n + (4 * n if w["op"] == "label" else n)
    return {"bench": "peers_binary", "name": w["name"], "op": w["op"], "shape": list(SHAPE),
            "iterations": w.get("iterations"), "device": device, "date": date, "bytes": b,
            "floor_ms": b / PEAK_BYTES_PER_S * 1e3}


def scipy_call(w, ndi, x):
    if w["op"] == "erosion":
        return lambda: ndi.binary_erosion(x, iterations=w["iterations"])
    if w["op"] == "fill_holes":
        return lambda: ndi.binary_fill_holes(x)
    return lambda: ndi.label(x)


def run_scipy(w, host, base, human):
    import scipy
    import scipy.ndimage as ndi
    t0 = time.perf_counter()
    ref = scipy_call(w, ndi, host)()
    ms = (time.perf_counter() - t0) * 1e3
    emit(dict(base, peer="scipy", device="cpu (scipy.ndimage, one thread)", version=scipy.__version__, cpu_ms=ms,
              runs=1), human)
    return ref


def run_cupyx(w, host, ref, base, reps, human, cp):
    import cupyx.scipy.ndimage as cndi
    x = cp.asarray(host)
    gpu = CupyGPU(cp)
    gpu.can_sleep = w["op"] == "erosion"  # the others synchronize inside: no gate
    rec = dict(base, peer="cupyx", version=cp.__version__)
    if w["op"] == "erosion":
        out = cp.empty_like(x)
        bf = False
        call = lambda: cndi.binary_erosion(x, iterations=w["iterations"], output=out, brute_force=bf)
        try:
            _, first_ms = first_call(call, gpu)
        except NotImplementedError:
            bf = True
            _, first_ms = first_call(call, gpu)
            rec["note"] = "brute_force=True (CuPy raises NotImplementedError for iterations > 1 without it)"
        rec["call"] = "cupyx.scipy.ndimage.binary_erosion(x, iterations=%d, output=out, brute_force=%s)" % (
            w["iterations"], bf)
        got = out.get()
    elif w["op"] == "fill_holes":
        call = lambda: cndi.binary_fill_holes(x)
        res, first_ms = first_call(call, gpu)
        rec["call"] = "cupyx.scipy.ndimage.binary_fill_holes(x)"
        got = res.get()
    else:
        call = lambda: cndi.label(x)
        res, first_ms = first_call(call, gpu)
        rec["call"] = "cupyx.scipy.ndimage.label(x) (returns the count: one sync per call)"
        got = (res[0].get(), int(res[1]))
    if ref is None:
        rec["check"] = "unchecked"
    elif w["op"] == "label":
        rec["check"] = "equal to scipy" if got[1] == ref[1] and np.array_equal(got[0], ref[0]) else "MISMATCH vs scipy"
    else:
        rec["check"] = "equal to scipy" if np.array_equal(got, ref) else "MISMATCH vs scipy"
    warm, gated = time_gpu([call], gpu, reps)
    add_timing(rec, warm, first_ms, gated)
    rec["reps"] = reps
    emit(rec, human)


def main():
    args, date, mods, device = start(__doc__, "peers_binary", 50, "cupyx,scipy")
    cp = mods.get("cupyx")
    host = blobs(SHAPE, args.seed)
    failures = 0
    for w in WORKLOADS:
        if args.only and args.only not in w["name"]:
            continue
        base = record(w, device, date)
        ref = None
        if "scipy" in mods:
            try:
                ref = run_scipy(w, host, base, args.human)
            except Exception as e:
                failures += 1
                emit(dict(base, peer="scipy", error="%s: %s" % (type(e).__name__, e)), args.human)
        if cp is not None:
            try:
                run_cupyx(w, host, ref, base, args.reps, args.human, cp)
            except Exception as e:
                failures += 1
                emit(dict(base, peer="cupyx", error="%s: %s" % (type(e).__name__, e)), args.human)
            cp.get_default_memory_pool().free_all_blocks()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
