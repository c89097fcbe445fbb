#!/usr/bin/env python3
"""peers_filters.py -- the linear-filter workloads of ndf_bench, run by ndforge's peers.

This program does not use ndforge.  It times gaussian_filter (sigma, truncate 4)
and uniform_filter (size) in
  cupyx   cupyx.scipy.ndimage.gaussian_filter / uniform_filter, mode='reflect'
          (batch axes: sigma 0 / size 1 there);
  torch   the same separable kernel as one conv{2,3}d per axis (a 1-D weight
          along that axis, float32 arithmetic) after one reflect pad of the
          radius (gaussian; TF32 off), and avg_pool{2,3}d with stride 1
          (uniform).
          torch's 'reflect' pad is scipy's 'mirror', and avg_pool pads with
          zeros, so only the interior (the radius away from every face) is
          compared, against cupyx, to a float32 tolerance;
  scipy   scipy.ndimage on one CPU core, for the 256^3 workloads only (one
          run), the reference cupyx is checked against (to a tolerance:
          cupyx sums in its own order and precision).
Timing (CUDA events behind a spin kernel, rotated buffers) and the JSON lines
are those of peers_grey.py, whose helpers this script imports.
"""
import sys
import time

import numpy as np

from peers_grey import (PEAK_BYTES_PER_S, SHORT, CupyGPU, TorchGPU, add_timing, emit, first_call, start,
                        n_buffers, random_input, time_gpu)

# The filter workloads of ndf_bench (bench/bench.c, default_workloads), float32, reflect.
WORKLOADS = [
    dict(op="gaussian", dtype="float32", shape=(256, 256, 256), sigma=2.0, batch_dims=0),
    dict(op="gaussian", dtype="float32", shape=(64, 1024, 1024), sigma=2.0, batch_dims=1),
    dict(op="uniform", dtype="float32", shape=(256, 256, 256), size=5, batch_dims=0),
]
TRUNCATE = 4.0
# |peer - reference| allowed, relative to the input's range (inputs lie in [-1000, 1000)).
TOL = 1e-5 * 2000


def wl_name(w):
    """The key shared with ndf_bench: gaussian_f32_256x256x256_sigma2_b0, uniform_f32_256x256x256_s5_b0."""
    shp = "x".join(map(str, w["shape"]))
    if w["op"] == "gaussian":
        return "gaussian_%s_%s_sigma%g_b%d" % (SHORT[w["dtype"]], shp, w["sigma"], w["batch_dims"])
    return "uniform_%s_%s_s%d_b%d" % (SHORT[w["dtype"]], shp, w["size"], w["batch_dims"])


def radius(w):
    return int(TRUNCATE * w["sigma"] + 0.5) if w["op"] == "gaussian" else w["size"] // 2


def ndimage_call(w, ndi, x, out=None):
    bd, sp = w["batch_dims"], len(w["shape"]) - w["batch_dims"]
    if w["op"] == "gaussian":
        return ndi.gaussian_filter(x, sigma=(0,) * bd + (w["sigma"],) * sp, truncate=TRUNCATE, mode="reflect",
                                   output=out)
    return ndi.uniform_filter(x, size=(1,) * bd + (w["size"],) * sp, mode="reflect", output=out)


def call_text(w, lib):
    bd, sp = w["batch_dims"], len(w["shape"]) - w["batch_dims"]
    if w["op"] == "gaussian":
        return "%s.gaussian_filter(x, sigma=%s, truncate=4, mode='reflect', output=out)" % (
            lib, (0,) * bd + (w["sigma"],) * sp)
    return "%s.uniform_filter(x, size=%s, mode='reflect', output=out)" % (lib, (1,) * bd + (w["size"],) * sp)


def record(w, peer, device, date):
    b = 2 * int(np.prod(w["shape"])) * np.dtype(w["dtype"]).itemsize
    rec = {"bench": "peers_filters", "peer": peer, "name": wl_name(w), "op": w["op"] + "_filter",
           "dtype": w["dtype"], "shape": list(w["shape"]), "batch_dims": w["batch_dims"], "mode": "reflect",
           "device": device, "date": date, "bytes": b, "floor_ms": b / PEAK_BYTES_PER_S * 1e3}
    if w["op"] == "gaussian":
        rec.update(sigma=w["sigma"], truncate=TRUNCATE)
    else:
        rec["size"] = w["size"]
    return rec


def close(a, b):
    return bool(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))) <= TOL)


def run_scipy(w, host, base, human):
    import scipy
    import scipy.ndimage as ndi
    t0 = time.perf_counter()
    ref = ndimage_call(w, ndi, host)
    ms = (time.perf_counter() - t0) * 1e3
    emit(dict(base, peer="scipy", device="cpu (scipy.ndimage, one thread)", version=scipy.__version__, cpu_ms=ms,
              runs=1), human)
    return ref


def run_cupyx(w, hosts, ref, base, reps, human, cp):
    import cupyx.scipy.ndimage as cndi
    xs = [cp.asarray(h) for h in hosts]
    outs = [cp.empty_like(x) for x in xs]
    calls = [(lambda x=x, o=o: ndimage_call(w, cndi, x, o)) for x, o in zip(xs, outs)]
    gpu = CupyGPU(cp)
    _, first_ms = first_call(calls[0], gpu)
    result0 = outs[0].copy()
    rec = dict(base, peer="cupyx", version=cp.__version__, call=call_text(w, "cupyx.scipy.ndimage"))
    if ref is not None:
        got = cp.asnumpy(result0)
        rec["check"] = ("equal to scipy" if np.array_equal(got, ref) else
                        "within %g of scipy" % TOL if close(got, ref) else "MISMATCH vs scipy")
    else:
        rec["check"] = "unchecked (no scipy reference at this size)"
    warm, gated = time_gpu(calls, gpu, reps)
    add_timing(rec, warm, first_ms, gated)
    rec["nbuf"], rec["reps"] = len(xs), reps
    emit(rec, human)
    return result0


def gaussian_weights(sigma, r):
    """scipy's _gaussian_kernel1d for order 0 (symmetric, so correlation = convolution)."""
    x = np.arange(-r, r + 1, dtype=np.float64)
    phi = np.exp(-0.5 / (sigma * sigma) * x * x)
    return (phi / phi.sum()).astype(np.float32)


def run_torch(w, hosts, cupyx_result, base, reps, human, torch):
    import torch.nn.functional as F
    rec = dict(base, peer="torch", version=torch.__version__,
               boundary="torch's reflect pad is scipy's mirror (avg_pool: zeros): interior compared only")
    shape, bd = tuple(w["shape"]), w["batch_dims"]
    sp = len(shape) - bd
    if sp not in (2, 3):
        emit(dict(rec, skipped="%d spatial axes: conv2d / conv3d paths only" % sp), human)
        return
    nimg = int(np.prod(shape[:bd], dtype=np.int64))
    r = radius(w)
    conv = F.conv2d if sp == 2 else F.conv3d
    if w["op"] == "gaussian":
        k1 = torch.from_numpy(gaussian_weights(w["sigma"], r)).cuda()
        ws = []
        for a in range(sp):
            ksh = [1, 1] + [1] * sp
            ksh[2 + a] = 2 * r + 1
            ws.append(k1.reshape(ksh))

        def make(x):
            xv = x.reshape((nimg, 1) + shape[bd:])

            def f():
                y = F.pad(xv, (r, r) * sp, mode="reflect")
                for wk in ws:
                    y = conv(y, wk)
                return y.reshape(shape)
            return f
        rec["call"] = "conv%dd per axis (1-D weights of %d taps) after pad(x, %d, 'reflect')" % (sp, 2 * r + 1, r)
    else:
        pool = F.avg_pool2d if sp == 2 else F.avg_pool3d
        k = w["size"]

        def make(x):
            xv = x.reshape((nimg, 1) + shape[bd:])
            return lambda: pool(xv, k, 1, k // 2, count_include_pad=True).reshape(shape)
        rec["call"] = "avg_pool%dd(x, %d, stride 1, padding %d)" % (sp, k, k // 2)
    torch.backends.cudnn.allow_tf32 = False  # float32 convolutions, not TF32
    xs = [torch.from_numpy(h).cuda() for h in hosts]
    calls = [make(x) for x in xs]
    gpu = TorchGPU(torch)
    try:
        out0, first_ms = first_call(calls[0], gpu)
    except (RuntimeError, NotImplementedError) as e:
        emit(dict(rec, skipped="not supported: %s" % str(e).splitlines()[0]), human)
        return
    if cupyx_result is not None:
        inner = (Ellipsis,) + tuple(slice(r, n - r) for n in shape[bd:])
        a = out0.cpu().numpy()[inner]
        b = cupyx_result.get()[inner]
        rec["check"] = ("interior within %g of cupyx" % TOL if close(a, b) else "interior MISMATCH vs cupyx")
    del out0
    warm, gated = time_gpu(calls, gpu, reps)
    add_timing(rec, warm, first_ms, gated)
    rec["nbuf"], rec["reps"] = len(xs), reps
    emit(rec, human)


def main():
    args, date, mods, device = start(__doc__, "peers_filters", 100, "cupyx,torch,scipy")
    rng = np.random.default_rng(args.seed)
    failures = 0
    for w in WORKLOADS:
        if args.only and args.only not in wl_name(w):
            continue
        hosts = [random_input(rng, w) for _ in range(n_buffers(w))]
        base = record(w, None, device, date)
        ref = None
        if "scipy" in mods and tuple(w["shape"]) == (256, 256, 256):
            try:
                ref = run_scipy(w, hosts[0], base, args.human)
            except Exception as e:
                failures += 1
                emit(dict(base, peer="scipy", error="%s: %s" % (type(e).__name__, e)), args.human)
        cres = None
        if "cupyx" in mods:
            try:
                cres = run_cupyx(w, hosts, ref, base, args.reps, args.human, mods["cupyx"])
            except Exception as e:  # report and go on with the other peers
                failures += 1
                emit(dict(base, peer="cupyx", error="%s: %s" % (type(e).__name__, e)), args.human)
        if "torch" in mods:
            try:
                run_torch(w, hosts, cres, base, args.reps, args.human, mods["torch"])
            except Exception as e:
                failures += 1
                emit(dict(base, peer="torch", error="%s: %s" % (type(e).__name__, e)), args.human)
            mods["torch"].cuda.empty_cache()
        del cres, hosts, ref
        if "cupyx" in mods:
            mods["cupyx"].get_default_memory_pool().free_all_blocks()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
