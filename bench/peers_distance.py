#!/usr/bin/env python3
"""peers_distance.py -- the distance-transform workloads of ndf_bench, run by ndforge's peers.

This program does not use ndforge.  It times distance_transform_edt in
  cupyx   cupyx.scipy.ndimage.distance_transform_edt (PBA+), float64
          distances into a preallocated output (and int32 indices for the
          _samp_idx workload); its distances are checked against scipy's
          (its indices may differ from scipy's at ties, as its docs say);
  scipy   scipy.ndimage.distance_transform_edt on one CPU core, once, for
          workloads that run in seconds; the reference cupyx is checked against.
The input is ndf_bench's: uint8 random bytes (background = the zeros, 1 in
256).  Timing (CUDA events behind a spin kernel, rotated buffers) and the
JSON lines are those of peers_grey.py, whose helpers this script imports.
The cdt workloads (cdt_taxicab_..., cdt_chessboard_...: int32 distances) run
on scipy only: cupyx has no distance_transform_cdt; nor has it distance_transform_bf
(bf_u8_256x256_b0, euclidean float64 distances).
TorchMorph is not packaged; it is not timed here.
"""
import sys
import time

import numpy as np

from peers_grey import PEAK_BYTES_PER_S, CupyGPU, add_timing, emit, first_call, start, time_gpu

# The edt workloads of ndf_bench (bench/bench.c, default_workloads).
WORKLOADS = [
    dict(shape=(1024, 1024), batch_dims=0, samp_idx=False),
    dict(shape=(8, 1024, 1024), batch_dims=1, samp_idx=False),
    dict(shape=(256, 256, 256), batch_dims=0, samp_idx=False),
    dict(shape=(512, 512, 512), batch_dims=0, samp_idx=False),
    dict(shape=(1024, 1024), batch_dims=0, samp_idx=True),
    # distance_transform_cdt (scipy only), the same keys as ndf_bench's
    dict(shape=(1024, 1024), batch_dims=0, samp_idx=False, metric="taxicab"),
    dict(shape=(1024, 1024), batch_dims=0, samp_idx=False, metric="chessboard"),
    dict(shape=(256, 256, 256), batch_dims=0, samp_idx=False, metric="taxicab"),
    dict(shape=(256, 256, 256), batch_dims=0, samp_idx=False, metric="chessboard"),
    # distance_transform_bf (scipy only; cupyx has none): euclidean, float64 distances
    dict(shape=(256, 256), batch_dims=0, samp_idx=False, bf=True),
]
ROTATE_TOTAL = 512 << 20


def wl_name(w):
    """The key shared with ndf_bench: edt_u8_1024x1024_b0, edt_u8_1024x1024_b0_samp_idx, cdt_taxicab_u8_1024x1024_b0."""
    if w.get("bf"):
        return "bf_u8_%s_b%d%s" % ("x".join(map(str, w["shape"])), w["batch_dims"], "_samp_idx" if w["samp_idx"] else "")
    if w.get("metric"):
        return "cdt_%s_u8_%s_b%d" % (w["metric"], "x".join(map(str, w["shape"])), w["batch_dims"])
    return "edt_u8_%s_b%d%s" % ("x".join(map(str, w["shape"])), w["batch_dims"], "_samp_idx" if w["samp_idx"] else "")


def sampling(w):
    sp = len(w["shape"]) - w["batch_dims"]
    return tuple(1.3 if i % 2 else 0.7 for i in range(sp)) if w["samp_idx"] else None


def n_buffers(w):
    b = int(np.prod(w["shape"])) * 9
    return 1 if b >= (100 << 20) else max(1, min(64, ROTATE_TOTAL // b))


def record(w, peer, device, date):
    # 1 byte in, 8 bytes out (edt) or 4 (cdt, int32): ndf_bench's count
    b = int(np.prod(w["shape"])) * (5 if w.get("metric") else 9)
    return {"bench": "peers_distance", "peer": peer, "name": wl_name(w),
            "op": "distance_transform_bf" if w.get("bf") else
                  "distance_transform_cdt" if w.get("metric") else "distance_transform_edt",
            "dtype": "uint8", "shape": list(w["shape"]), "batch_dims": w["batch_dims"],
            "sampling": sampling(w), "indices": w["samp_idx"], "device": device, "date": date, "bytes": b,
            "floor_ms": b / PEAK_BYTES_PER_S * 1e3}


def scipy_ok(w):
    return int(np.prod(w["shape"])) <= 17_000_000


def images(w, x):
    """The images of a batched array (scipy and cupyx have no batch axes)."""
    bd = w["batch_dims"]
    return [x[i] for i in np.ndindex(*x.shape[:bd])] if bd else [x]


def run_scipy(w, host, base, human):
    import scipy
    import scipy.ndimage as ndi
    t0 = time.perf_counter()
    if w.get("bf"):
        ref = [ndi.distance_transform_bf(im, sampling=sampling(w), return_indices=w["samp_idx"]) for im in images(w, host)]
        ms = (time.perf_counter() - t0) * 1e3
        emit(dict(base, peer="scipy", device="cpu (scipy.ndimage, one thread)", version=scipy.__version__,
                  cpu_ms=ms, runs=1), human)
        return ref
    if w.get("metric"):
        ref = [ndi.distance_transform_cdt(im, metric=w["metric"]) for im in images(w, host)]
        ms = (time.perf_counter() - t0) * 1e3
        emit(dict(base, peer="scipy", device="cpu (scipy.ndimage, one thread)", version=scipy.__version__,
                  cpu_ms=ms, runs=1), human)
        return ref
    ref = [ndi.distance_transform_edt(im, sampling=sampling(w), return_indices=w["samp_idx"]) for im in images(w, host)]
    if w["samp_idx"]:
        ref = [r[0] for r in ref]
    ms = (time.perf_counter() - t0) * 1e3
    emit(dict(base, peer="scipy", device="cpu (scipy.ndimage, one thread)", version=scipy.__version__, cpu_ms=ms,
              runs=1), human)
    return ref


def run_cupyx(w, hosts, ref, base, reps, human, cp):
    import cupyx.scipy.ndimage as cndi
    xs = [cp.asarray(h) for h in hosts]
    outs = [cp.empty(x.shape, cp.float64) for x in xs]
    sp = len(w["shape"]) - w["batch_dims"]
    idxs = [cp.empty((sp,) + tuple(w["shape"][w["batch_dims"]:]), cp.int32) for _ in xs] if w["samp_idx"] else None
    samp = sampling(w)

    def call(k):
        x, o = xs[k], outs[k]
        ims, outs_k = images(w, x), images(w, o)
        for j, (im, oo) in enumerate(zip(ims, outs_k)):
            if idxs is None:
                cndi.distance_transform_edt(im, sampling=samp, distances=oo)
            else:  # one image: indices into the preallocated array
                cndi.distance_transform_edt(im, sampling=samp, return_indices=True, distances=oo,
                                            indices=idxs[k])

    calls = [(lambda k=k: call(k)) for k in range(len(xs))]
    gpu = CupyGPU(cp)
    _, first_ms = first_call(calls[0], gpu)
    result0 = cp.asnumpy(outs[0])
    rec = dict(base, peer="cupyx", version=cp.__version__,
               call="cupyx.scipy.ndimage.distance_transform_edt(x, sampling=%s, distances=out%s)%s"
               % (samp, ", return_indices=True, indices=idx" if idxs is not None else "",
                  " per image" if w["batch_dims"] else ""))
    if ref is not None:
        got = images(w, result0)
        ok = all(np.array_equal(a, b) for a, b in zip(got, ref))
        close = all(np.allclose(a, b, rtol=1e-12, atol=0) for a, b in zip(got, ref))
        rec["check"] = ("distances equal to scipy" if ok else
                        "distances within 1e-12 of scipy" if close else "MISMATCH vs scipy")
    else:
        rec["check"] = "unchecked (no scipy reference at this size)"
    warm, gated = time_gpu(calls, gpu, reps)
    add_timing(rec, warm, first_ms, gated)
    rec["nbuf"], rec["reps"] = len(xs), reps
    emit(rec, human)


def main():
    args, date, mods, device = start(__doc__, "peers_distance", 50, "cupyx,scipy")
    rng = np.random.default_rng(args.seed)
    for w in WORKLOADS:
        if args.only and args.only not in wl_name(w):
            continue
        hosts = [rng.integers(0, 256, size=w["shape"], dtype=np.uint8) for _ in range(n_buffers(w))]
        base = record(w, None, device, date)
        ref = run_scipy(w, hosts[0], base, args.human) if "scipy" in mods and scipy_ok(w) else None
        if "cupyx" in mods and not w.get("metric") and not w.get("bf"):
            try:
                run_cupyx(w, hosts, ref, base, args.reps, args.human, mods["cupyx"])
            except Exception as e:  # report and go on
                emit(dict(base, peer="cupyx", error="%s: %s" % (type(e).__name__, e)), args.human)
        del hosts
    return 0


if __name__ == "__main__":
    sys.exit(main())
