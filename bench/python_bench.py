#!/usr/bin/env python3
"""python_bench.py -- ndforge.ndimage on torch CUDA tensors against cupyx.scipy.ndimage and plain torch.

The workloads are ndf_bench's ndimage workloads (bench/bench.c, same keys:
dilation_f32_64x1024x1024_s3_b0 ...), run in one process:
  ndforge  ndforge.ndimage.<op>(tensor, ..., batch_dims=b) on a torch CUDA
           tensor (DLPack, the tensor's current stream, the result a tensor);
  cupyx    cupyx.scipy.ndimage.<op> on a CuPy array of the same values
           (batch axes as extent-1 element axes);
  torch    max_pool{1,2,3}d for box grey erosion/dilation/opening (padding
           -inf, which equals reflect for a box min/max) -- other ops have no
           torch equivalent and say so.
Before timing, each peer's result is compared with ndforge's (exact equality;
a mismatch is reported in the JSON line, and that peer is not timed).
Each peer is timed with CUDA events around back-to-back calls from Python
(--reps calls after --warmup calls; what a Python user sees, launch cost
included), reported as the mean ms per call.

Then the per-call overhead: an op on a tiny tensor (grey_dilation size 3 of
8x8 float32), called through ndforge.ndimage and through the raw ctypes C call
with its descriptors built once, CPU time of the calling thread per call (the
kernels are queued, not awaited); the difference is what the Python layer adds
(target: at most 10 us), also with output= (no allocation) and with the tensor
passed through __dlpack__ instead of data_ptr()/stride().

Output: one JSON object per line on stdout, then a Markdown table (--table).
Usage (the GPU machine, from the repository root, with a built library):
  NDFORGE_LIBRARY=build/libndforge.so PYTHONPATH=python python3 bench/python_bench.py [--only KEY] [--reps N]
"""
import argparse
import json
import sys
import time

import numpy as np

SHORT = {"float32": "f32", "float64": "f64", "uint8": "u8", "bool": "bool"}

# (op key, ndforge/scipy function, dtype, shape, size, footprint, batch_dims, extra keywords)
W = []
for shape, b in (((64, 1024, 1024), 0), ((64, 1024, 1024), 1), ((256, 256, 256), 0), ((8, 256, 256), 0),
                 ((8, 256, 256), 1), ((8, 256, 256, 256), 1)):
    W.append(("dilation", "grey_dilation", "float32", shape, 3, "box", b, {}))
W += [("erosion", "grey_erosion", "float32", (256, 256, 256), 3, "box", 0, {}),
      ("erosion", "grey_erosion", "float32", (256, 256, 256), 3, "cross", 0, {}),
      ("erosion", "grey_erosion", "float32", (256, 256, 256), 7, "box", 0, {}),
      ("erosion", "grey_erosion", "uint8", (256, 256, 256), 3, "box", 0, {}),
      ("opening", "grey_opening", "float32", (4, 128, 128, 128), 5, "box", 1, {})]
W += [("dilation", "grey_dilation", "float32", (2048, 2048), s, "box", 0, {}) for s in (3, 7, 15, 31, 63)]
W += [("median", "median_filter", dt, shape, s, "box", b, {}) for dt, shape, s, b in (
    ("float32", (1, 3, 256, 256), 5, 2), ("float32", (8, 3, 256, 256), 3, 2), ("float32", (8, 3, 256, 256), 5, 2),
    ("float32", (128, 128, 128), 3, 0), ("float32", (1024, 1024), 3, 0), ("float32", (1024, 1024), 7, 0),
    ("float32", (1024, 1024), 31, 0), ("uint8", (8, 3, 256, 256), 5, 2), ("uint8", (1024, 1024), 3, 0),
    ("uint8", (1024, 1024), 31, 0))]
W += [("edt", "distance_transform_edt", "uint8", shape, 1, "box", b, {}) for shape, b in (
    ((1024, 1024), 0), ((8, 1024, 1024), 1), ((256, 256, 256), 0), ((512, 512, 512), 0))]
W += [("cdt_taxicab", "distance_transform_cdt", "uint8", (1024, 1024), 1, "box", 0, dict(metric="taxicab")),
      ("cdt_chessboard", "distance_transform_cdt", "uint8", (1024, 1024), 1, "box", 0, dict(metric="chessboard")),
      ("cdt_taxicab", "distance_transform_cdt", "uint8", (256, 256, 256), 1, "box", 0, dict(metric="taxicab")),
      ("cdt_chessboard", "distance_transform_cdt", "uint8", (256, 256, 256), 1, "box", 0,
       dict(metric="chessboard"))]
W += [("binary_erosion", "binary_erosion", "bool", (256, 256, 256), 3, "cross", 0, dict(iterations=1)),
      ("binary_erosion", "binary_erosion", "bool", (256, 256, 256), 3, "cross", 0, dict(iterations=10)),
      ("binary_fill_holes", "binary_fill_holes", "bool", (256, 256, 256), 3, "cross", 0, {}),
      ("label", "label", "bool", (256, 256, 256), 3, "cross", 0, {})]


def key(w):
    op, _, dt, shape, size, fp, b, kw = w
    if "iterations" in kw:
        op += "_it%d" % kw["iterations"]
    s = "%s_%s_%s" % (op, SHORT[dt], "x".join(map(str, shape)))
    if op in ("edt", "cdt_taxicab", "cdt_chessboard"):
        return s + "_b%d" % b
    return s + "_%s%d_b%d" % ("cross" if fp == "cross" else "s", size, b)


def make_input(w, rng):
    _, _, dt, shape, *_ = w
    if dt == "bool":  # blobs: a smoothed random field, thresholded
        from scipy import ndimage as sn
        small = rng.random(tuple(max(2, s // 8) for s in shape))
        return sn.zoom(small, [s / t for s, t in zip(shape, small.shape)], order=1)[tuple(slice(0, s) for s in
                                                                                    shape)] > 0.5
    if dt == "uint8":
        return rng.integers(0, 256, size=shape, dtype=np.uint8)
    return (rng.random(shape, dtype=np.float32) * 2000 - 1000).astype(dt)


def kwargs(w, lib):
    """Keywords of the call for ndforge (lib='ndforge') or for a scipy-like peer (batch axes as extent 1)."""
    op, fn, dt, shape, size, fp, b, kw = w
    kw = dict(kw)
    nsp = len(shape) - b
    if fn.startswith("grey") or fn == "median_filter":
        if fp == "cross":
            from scipy import ndimage as sn
            st = sn.generate_binary_structure(nsp, 1)
            kw["footprint"] = st if lib == "ndforge" else st.reshape((1,) * b + st.shape)
        else:
            kw["size"] = size if lib == "ndforge" else (1,) * b + (size,) * nsp
    elif fn.startswith("binary") or fn == "label":
        from scipy import ndimage as sn
        kw["structure"] = sn.generate_binary_structure(nsp, 1)
    if lib == "ndforge" and b:
        kw["batch_dims"] = b
    return kw


def first(r):
    return r[0] if isinstance(r, tuple) else r


def time_torch(fn, warmup, reps, torch):
    for _ in range(warmup if reps > 3 else 1):
        fn()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    s.record()
    for _ in range(reps):
        fn()
    e.record()
    e.synchronize()
    return s.elapsed_time(e) / reps


def time_cupy(fn, warmup, reps, cupy):
    for _ in range(warmup if reps > 3 else 1):
        fn()
    s, e = cupy.cuda.Event(), cupy.cuda.Event()
    cupy.cuda.Device().synchronize()
    s.record()
    for _ in range(reps):
        fn()
    e.record()
    e.synchronize()
    return cupy.cuda.get_elapsed_time(s, e) / reps


def reps_for(one_ms, reps, budget_ms):
    return max(1, min(reps, int(budget_ms / max(one_ms, 1e-3))))


def torch_peer(w, torch):
    """A plain-torch equivalent of the workload, or None."""
    op, fn, dt, shape, size, fp, b, kw = w
    nsp = len(shape) - b
    if fp != "box" or fn not in ("grey_dilation", "grey_erosion", "grey_opening") or nsp > 3 or dt == "bool":
        return None
    pool = {1: torch.nn.functional.max_pool1d, 2: torch.nn.functional.max_pool2d,
            3: torch.nn.functional.max_pool3d}[nsp]
    if size % 2 == 0:
        return None

    def mx(x):
        y = x.reshape((-1, 1) + x.shape[b:])
        return pool(y, size, 1, size // 2).reshape(x.shape)

    def mn(x):
        if x.dtype == torch.uint8:
            return 255 - mx(255 - x)
        return -mx(-x)
    if fn == "grey_dilation":
        return mx
    if fn == "grey_erosion":
        return mn
    return lambda x: mx(mn(x))


def overhead(torch, nd, reps):
    """CPU microseconds per call (thread time of the calling thread, so that other processes do not count):
    ndforge.ndimage against the raw C call, tiny tensor, kernels queued and not awaited."""
    import ctypes
    from ndforge import _core
    x = torch.rand(8, 8, device="cuda")
    out = torch.empty_like(x)
    nd.grey_dilation(x, size=3)
    where = _core.placement(x)
    ctx = where.ctx
    din, k1 = _core.describe(x, where)
    dout, k2 = _core.describe(out, where)
    opt = _core.S["ndf_grey_options"]()
    _core.C["ndf_grey_options_init"](ctypes.byref(opt))
    opt.nsize, opt.size[0] = 1, 3
    fn = _core.C["ndf_grey_dilation"]
    args = (ctx, ctypes.byref(din), ctypes.byref(dout), ctypes.byref(opt))

    def dlpack(call):
        def f():
            _core.TORCH_DLPACK = True
            try:
                return call()
            finally:
                _core.TORCH_DLPACK = False
        return f
    res = {}
    for name, call in (("c_call_us", lambda: fn(*args)), ("ndforge_us", lambda: nd.grey_dilation(x, size=3)),
                       ("ndforge_output_us", lambda: nd.grey_dilation(x, size=3, output=out)),
                       ("ndforge_dlpack_us", dlpack(lambda: nd.grey_dilation(x, size=3))),
                       ("torch_empty_like_us", lambda: torch.empty_like(x))):
        for _ in range(50):
            call()
        torch.cuda.synchronize()
        best = float("inf")
        for _ in range(5):  # best of 5 rounds
            t0 = time.thread_time()
            for _ in range(reps):
                call()
            t1 = time.thread_time()
            torch.cuda.synchronize()
            best = min(best, (t1 - t0) / reps * 1e6)
        res[name] = round(best, 2)
    res["python_overhead_us"] = round(res["ndforge_us"] - res["c_call_us"], 2)
    res["python_overhead_output_us"] = round(res["ndforge_output_us"] - res["c_call_us"], 2)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="", help="run the workloads whose key contains this")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--budget-ms", type=float, default=1500.0, help="timed calls per peer and workload at most this")
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--table", action="store_true", help="a Markdown table after the JSON lines")
    ap.add_argument("--overhead-reps", type=int, default=2000)
    a = ap.parse_args()

    import torch
    import ndforge
    import ndforge.ndimage as nd
    try:
        import cupy
        import cupyx.scipy.ndimage as cnd
    except ImportError as e:
        cupy = cnd = None
        print(json.dumps({"peer": "cupyx", "error": "not importable: %s" % e}))
    dev = torch.cuda.get_device_name()
    info = {"device": dev, "ndforge": ndforge.__version__, "torch": torch.__version__,
            "cupy": getattr(cupy, "__version__", None)}
    print(json.dumps(dict(info, what="python_bench")))
    rows = []
    rng = np.random.default_rng(0)
    for w in W:
        k = key(w)
        if a.only not in k:
            continue
        fn = w[1]
        h = make_input(w, rng)
        x = torch.from_numpy(h).cuda()
        kw_n = kwargs(w, "ndforge")
        row = {"workload": k, "op": fn, "bytes": int(h.nbytes)}
        try:
            ref = first(getattr(nd, fn)(x, **kw_n))
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            getattr(nd, fn)(x, **kw_n)
            torch.cuda.synchronize()
            one = (time.perf_counter() - t0) * 1e3
            row["ndforge_ms"] = round(time_torch(lambda: getattr(nd, fn)(x, **kw_n), a.warmup,
                                                 reps_for(one, a.reps, a.budget_ms), torch), 4)
        except Exception as e:  # reported, the other peers still run
            row["ndforge_error"] = "%s: %s" % (type(e).__name__, e)
            ref = None
        if cnd is not None:
            c = cupy.asarray(h)
            kw_c = kwargs(w, "cupyx")
            try:
                f = getattr(cnd, fn)
                r = first(f(c, **kw_c))
                if ref is not None and not a.no_check and not np.array_equal(cupy.asnumpy(r), ref.cpu().numpy()):
                    row["cupyx_mismatch"] = True
                cupy.cuda.Device().synchronize()
                t0 = time.perf_counter()
                f(c, **kw_c)
                cupy.cuda.Device().synchronize()
                one = (time.perf_counter() - t0) * 1e3
                row["cupyx_ms"] = round(time_cupy(lambda: f(c, **kw_c), a.warmup, reps_for(one, a.reps,
                                                                                          a.budget_ms), cupy), 4)
            except Exception as e:
                row["cupyx_error"] = "%s: %s" % (type(e).__name__, e)
            del c
        tp = torch_peer(w, torch)
        if tp is not None:
            try:
                r = tp(x)
                if ref is not None and not a.no_check and not torch.equal(r, ref):
                    row["torch_mismatch"] = True
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                tp(x)
                torch.cuda.synchronize()
                one = (time.perf_counter() - t0) * 1e3
                row["torch_ms"] = round(time_torch(lambda: tp(x), a.warmup, reps_for(one, a.reps, a.budget_ms),
                                                   torch), 4)
            except Exception as e:
                row["torch_error"] = "%s: %s" % (type(e).__name__, e)
        else:
            row["torch"] = "no equivalent"
        del x, ref
        torch.cuda.empty_cache()
        print(json.dumps(row), flush=True)
        rows.append(row)
    ov = dict(overhead(torch, nd, a.overhead_reps), what="per_call_overhead", workload="grey_dilation_f32_8x8_s3")
    print(json.dumps(ov), flush=True)
    if a.table:
        print("\n%s; ndforge %s, torch %s, CuPy %s; mean ms per call (CUDA events around back-to-back calls from "
              "Python)\n" % (dev, info["ndforge"], info["torch"], info["cupy"]))
        print("| workload | ndforge | cupyx | torch | cupyx / ndforge |")
        print("| --- | ---: | ---: | ---: | ---: |")
        for r in rows:
            def cell(p):
                if "%s_ms" % p in r:
                    return "%.3f%s" % (r["%s_ms" % p], " (differs)" if r.get("%s_mismatch" % p) else "")
                return "error" if "%s_error" % p in r else "--"
            ratio = "%.1fx" % (r["cupyx_ms"] / r["ndforge_ms"]) if "cupyx_ms" in r and "ndforge_ms" in r else "--"
            print("| %s | %s | %s | %s | %s |" % (r["workload"], cell("ndforge"), cell("cupyx"), cell("torch"),
                                                   ratio))
        print("\nPer-call overhead (CPU us per call, %s): C call %.2f, ndforge.ndimage %.2f (of which torch.empty_like "
              "%.2f), with output= %.2f, through DLPack %.2f; the Python layer adds %.2f us (%.2f with output=)."
              % (ov["workload"], ov["c_call_us"], ov["ndforge_us"], ov["torch_empty_like_us"],
                 ov["ndforge_output_us"], ov["ndforge_dlpack_us"], ov["python_overhead_us"],
                 ov["python_overhead_output_us"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
