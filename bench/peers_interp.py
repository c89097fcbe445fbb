#!/usr/bin/env python3
"""peers_interp.py -- the interpolation workloads of ndf_bench, run by ndforge's peers.

This program does not use ndforge.  It times
  cupyx   cupyx.scipy.ndimage.zoom / affine_transform / map_coordinates (scipy's
          semantics; mode 'constant', prefilter for order 3, as ndf_bench);
  torch   order 1 only: F.interpolate(mode='trilinear', align_corners=True) for
          zoom (the same sampling grid as scipy's zoom with grid_mode=False),
          F.grid_sample(mode='bilinear', align_corners=True, padding 'zeros')
          for the rotation and the points.  Its zero padding blends the edge
          samples with 0 where scipy's 'constant' mode does not, so only
          points at least one sample inside the volume are compared (with
          cupyx, to float32 rounding);
  scipy   scipy.ndimage on one CPU core for the workloads small enough.
Workload keys, inputs (uniform float32 in [-1000, 1000)), the rotation (about
the first axis through the centre) and the points (uniform in the volume,
float32) are ndf_bench's.  Timing (CUDA events behind a spin kernel, rotated
buffers) and the JSON lines are those of peers_grey.py.
"""
import sys
import time

import numpy as np

from peers_grey import (PEAK_BYTES_PER_S, SHORT, CupyGPU, TorchGPU, add_timing, emit, first_call, start,
                        n_buffers, random_input, time_gpu)

# bench/bench.c, default_workloads: op, spline order (size), param (zoom factor, degrees, points).
WORKLOADS = [
    dict(op="zoom", dtype="float32", shape=(181, 217, 181), size=1, batch_dims=0, param=1.0),
    dict(op="zoom", dtype="float32", shape=(181, 217, 181), size=1, batch_dims=0, param=2.0),
    dict(op="zoom", dtype="float32", shape=(181, 217, 181), size=3, batch_dims=0, param=1.0),
    dict(op="zoom", dtype="float32", shape=(181, 217, 181), size=3, batch_dims=0, param=2.0),
    dict(op="affine_rot", dtype="float32", shape=(256, 256, 256), size=1, batch_dims=0, param=15.0),
    dict(op="map_coordinates", dtype="float32", shape=(256, 256, 256), size=1, batch_dims=0, param=1e7),
]
API = {"zoom": "zoom", "affine_rot": "affine_transform", "map_coordinates": "map_coordinates"}


def wl_name(w):
    """The key shared with ndf_bench: zoom_o3_f32_181x217x181_b0_p2."""
    return "%s_o%d_%s_%s_b%d_p%g" % (w["op"], w["size"], SHORT[w["dtype"]], "x".join(map(str, w["shape"])),
                                     w["batch_dims"], w["param"])


def out_shape(w):
    if w["op"] == "zoom":
        return tuple(int(round(n * w["param"])) for n in w["shape"])
    if w["op"] == "map_coordinates":
        return (int(w["param"]),)
    return tuple(w["shape"])


def rotation(w):
    """ndf_bench's matrix and offset: about the first axis, through the centre."""
    a = np.radians(w["param"])
    c, s = np.cos(a), np.sin(a)
    m = np.array([[1, 0, 0], [0, c, s], [0, -s, c]])
    ctr = (np.array(w["shape"]) - 1) / 2
    return m, ctr - m @ ctr


def points(w):
    """ndf_bench's coordinates: splitmix64 from 0xc00d5, axis by axis, uniform over [0, n-1], float32."""
    n, sp = int(w["param"]), len(w["shape"])
    st = 0xc00d5
    out = np.empty((sp, n), np.float32)
    # splitmix64 vectorized: state k = seed + (k+1) * golden; then the mix
    gold = np.uint64(0x9E3779B97F4A7C15)
    k = np.arange(1, sp * n + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = np.uint64(st) + k * gold
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    u = (z >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    for d in range(sp):
        out[d] = (u[d * n:(d + 1) * n] * (w["shape"][d] - 1)).astype(np.float32)
    return out


def record(w, peer, device, date):
    b = (int(np.prod(w["shape"])) + int(np.prod(out_shape(w)))) * np.dtype(w["dtype"]).itemsize
    if w["op"] == "map_coordinates":
        b += 4 * len(w["shape"]) * int(w["param"])
    return {"bench": "peers_interp", "peer": peer, "name": wl_name(w), "op": API[w["op"]], "dtype": w["dtype"],
            "shape": list(w["shape"]), "size": w["size"], "order": w["size"], "param": w["param"],
            "batch_dims": w["batch_dims"], "mode": "constant", "device": device, "date": date, "bytes": b,
            "floor_ms": b / PEAK_BYTES_PER_S * 1e3}


def scipy_ok(w):
    return int(np.prod(out_shape(w))) <= 20_000_000


def ndimage_call(w, nd, x, out, extra):
    if w["op"] == "zoom":
        return lambda: nd.zoom(x, w["param"], order=w["size"], output=out)
    if w["op"] == "affine_rot":
        m, off = extra
        return lambda: nd.affine_transform(x, m, offset=off, order=w["size"], output=out)
    return lambda: nd.map_coordinates(x, extra, order=w["size"], output=out)


def run_scipy(w, host, extra, base, human):
    import scipy
    import scipy.ndimage as ndi
    out = np.empty(out_shape(w), np.float32)
    t0 = time.perf_counter()
    ndimage_call(w, ndi, host, out, extra)()
    ms = (time.perf_counter() - t0) * 1e3
    emit(dict(base, peer="scipy", device="cpu (scipy.ndimage, one thread)", version=scipy.__version__, cpu_ms=ms,
              runs=1), human)
    return out


def run_cupyx(w, hosts, extra, ref, base, reps, human, cp):
    import cupyx.scipy.ndimage as cndi
    xs = [cp.asarray(h) for h in hosts]
    outs = [cp.empty(out_shape(w), cp.float32) for _ in xs]
    ex = extra if w["op"] == "affine_rot" else (cp.asarray(extra) if extra is not None else None)
    if w["op"] == "affine_rot":
        ex = (cp.asarray(extra[0]), tuple(extra[1]))
    calls = [ndimage_call(w, cndi, x, o, ex) for x, o in zip(xs, outs)]
    gpu = CupyGPU(cp)
    _, first_ms = first_call(calls[0], gpu)
    result0 = outs[0].copy()
    rec = dict(base, peer="cupyx", version=cp.__version__, call="cupyx.scipy.ndimage.%s(order=%d)" % (API[w["op"]], w["size"]))
    if ref is not None:
        d = float(np.abs(cp.asnumpy(result0).astype(np.float64) - ref).max())
        rec["check"] = "max |cupyx - scipy| = %g" % d
    else:
        rec["check"] = "unchecked (no scipy reference at this size)"
    warm, gated = time_gpu(calls, gpu, reps)
    add_timing(rec, warm, first_ms, gated)
    rec["nbuf"], rec["reps"] = len(xs), reps
    emit(rec, human)
    return result0


def run_torch(w, hosts, extra, cupyx_result, base, reps, human, torch):
    import torch.nn.functional as F
    rec = dict(base, peer="torch", version=torch.__version__)
    if w["size"] != 1:
        emit(dict(rec, skipped="torch interpolates linearly or cubically by its own kernels, not scipy's B-splines"),
             human)
        return
    shape = tuple(w["shape"])
    xs = [torch.from_numpy(h).cuda().reshape((1, 1) + shape) for h in hosts]
    if w["op"] == "zoom":
        osz = out_shape(w)
        calls = [(lambda x=x: F.interpolate(x, size=osz, mode="trilinear", align_corners=True)) for x in xs]
        rec["call"] = "F.interpolate(x, size=%s, mode='trilinear', align_corners=True)" % (osz,)
    else:
        # grid_sample takes (x, y, z) = (last axis, ..., first axis) in [-1, 1] (align_corners: the corner samples)
        if w["op"] == "affine_rot":
            m, off = extra
            idx = np.indices(shape, dtype=np.float32).reshape(3, -1)
            pts = (m @ idx + off[:, None]).astype(np.float32)
            gshape = (1,) + shape + (3,)
        else:
            pts = extra
            gshape = (1, 1, 1, pts.shape[1], 3)
        g = np.stack([2 * pts[d] / (shape[d] - 1) - 1 for d in (2, 1, 0)], axis=-1).astype(np.float32)
        grid = torch.from_numpy(g.reshape(gshape)).cuda()
        calls = [(lambda x=x: F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=True))
                 for x in xs]
        rec["call"] = "F.grid_sample(x, grid, mode='bilinear', padding_mode='zeros', align_corners=True)"
        rec["boundary"] = "zero padding: compared one sample inside the volume only"
    gpu = TorchGPU(torch)
    out0, first_ms = first_call(calls[0], gpu)
    if cupyx_result is not None:
        a = out0.detach().cpu().numpy().reshape(-1).astype(np.float64)
        b = cupyx_result.get().reshape(-1).astype(np.float64)
        if w["op"] == "zoom":
            keep = np.ones_like(a, bool)
        else:
            keep = np.all([(pts[d] >= 1) & (pts[d] <= shape[d] - 2) for d in range(3)], axis=0)
        rec["check"] = "max |torch - cupyx| = %g (%d points)" % (float(np.abs(a[keep] - b[keep]).max()), int(keep.sum()))
    del out0
    warm, gated = time_gpu(calls, gpu, reps)
    add_timing(rec, warm, first_ms, gated)
    rec["nbuf"], rec["reps"] = len(xs), reps
    emit(rec, human)


def main():
    args, date, mods, device = start(__doc__, "peers_interp", 100, "cupyx,torch,scipy")
    rng = np.random.default_rng(args.seed)
    for w in WORKLOADS:
        if args.only and args.only not in wl_name(w):
            continue
        hosts = [random_input(rng, w) for _ in range(n_buffers(w))]
        extra = rotation(w) if w["op"] == "affine_rot" else points(w) if w["op"] == "map_coordinates" else None
        base = record(w, None, device, date)
        ref = run_scipy(w, hosts[0], extra, base, args.human) if "scipy" in mods and scipy_ok(w) else None
        cres = None
        if "cupyx" in mods:
            try:
                cres = run_cupyx(w, hosts, extra, ref, base, args.reps, args.human, mods["cupyx"])
            except Exception as e:  # report and go on with the other peers
                emit(dict(base, peer="cupyx", error="%s: %s" % (type(e).__name__, e)), args.human)
        if "torch" in mods:
            try:
                run_torch(w, hosts, extra, cres, base, args.reps, args.human, mods["torch"])
            except Exception as e:
                emit(dict(base, peer="torch", error="%s: %s" % (type(e).__name__, e)), args.human)
        del hosts
    return 0


if __name__ == "__main__":
    sys.exit(main())
