#!/usr/bin/env python3
"""peers_metrics.py -- the SSIM workloads of ndf_bench, run by ndforge's peers.

This program does not use ndforge.  It times structural_similarity (the full
map and the mean of two float32 volumes, data_range 2000, scikit-image's
defaults otherwise: win_size 7 uniform, or the Gaussian window of sigma 1.5,
truncate 3.5) in
  cucim   cucim.skimage.metrics.structural_similarity(full=True), when CuPy
          and cuCIM can be imported;
  cupyx   scikit-image's formulation on the GPU: five
          cupyx.scipy.ndimage.uniform_filter / gaussian_filter calls (x, y,
          x*x, y*y, x*y, reflect) and the elementwise map, as CuPy arrays;
  torch   the same formulation with separable conv3d passes (one per axis,
          the five volumes as one batch) after F.pad(mode='reflect'), which is
          scipy's 'mirror', not its 'reflect': the map differs within the
          window's radius of the border, the mean over the cropped interior
          (crop = radius) does not;
  skimage skimage.metrics.structural_similarity on the CPU, once, the
          reference the GPU peers' means are checked against (relative 1e-5).
The inputs are float32 uniform in [-1000, 1000) (ndf_bench's distribution,
not its values).  Timing (CUDA events behind a spin kernel) and the JSON lines
are those of peers_grey.py, whose helpers this script imports; "bytes" counts
two inputs read and the map written, as ndf_bench does.
"""
import sys
import time

import numpy as np

from peers_grey import PEAK_BYTES_PER_S, CupyGPU, TorchGPU, add_timing, emit, first_call, start, time_gpu

# The SSIM workloads of ndf_bench (bench/bench.c, default_workloads).
WORKLOADS = [
    dict(shape=(256, 256, 256), gaussian=False),
    dict(shape=(256, 256, 256), gaussian=True),
]
DATA_RANGE = 2000.0
K1, K2, SIGMA, TRUNCATE = 0.01, 0.03, 1.5, 3.5


def win(w):
    return 2 * int(TRUNCATE * SIGMA + 0.5) + 1 if w["gaussian"] else 7


def wl_name(w):
    """The key shared with ndf_bench: ssim_f32_256x256x256_s7_b0, ssim_gauss_f32_256x256x256_s11_b0."""
    return "%s_f32_%s_s%d_b0" % ("ssim_gauss" if w["gaussian"] else "ssim", "x".join(map(str, w["shape"])), win(w))


def record(w, peer, device, date):
    b = 3 * int(np.prod(w["shape"])) * 4
    return {"bench": "peers_metrics", "peer": peer, "name": wl_name(w),
            "op": "structural_similarity_gaussian" if w["gaussian"] else "structural_similarity",
            "dtype": "float32", "shape": list(w["shape"]), "size": win(w), "batch_dims": 0,
            "data_range": DATA_RANGE, "device": device, "date": date, "bytes": b,
            "floor_ms": b / PEAK_BYTES_PER_S * 1e3}


def check(rec, mean, ref):
    if ref is None:
        rec["check"] = "unchecked (no scikit-image reference)"
    else:
        ok = abs(mean - ref) <= 1e-5 * max(1.0, abs(ref))
        rec["check"] = "mean within 1e-5 of scikit-image" if ok else "MISMATCH vs scikit-image (%r vs %r)" % (mean, ref)


def run_skimage(w, x, y, base, human):
    try:
        import skimage
        from skimage.metrics import structural_similarity
    except ImportError as e:
        emit(dict(base, peer="skimage", error="import failed: %s" % e), human)
        return None
    t0 = time.perf_counter()
    m = structural_similarity(x, y, data_range=DATA_RANGE, gaussian_weights=w["gaussian"], full=True)[0]
    ms = (time.perf_counter() - t0) * 1e3
    emit(dict(base, peer="skimage", device="cpu (scikit-image)", version=skimage.__version__, cpu_ms=ms, runs=1,
              mssim=float(m)), human)
    return float(m)


def ssim_formula(xp, ux, uy, uxx, uyy, uxy, npix, crop):
    cov = npix / (npix - 1.0)
    c1, c2 = (K1 * DATA_RANGE) ** 2, (K2 * DATA_RANGE) ** 2
    vx = cov * (uxx - ux * ux)
    vy = cov * (uyy - uy * uy)
    vxy = cov * (uxy - ux * uy)
    s = ((2 * ux * uy + c1) * (2 * vxy + c2)) / ((ux * ux + uy * uy + c1) * (vx + vy + c2))
    sl = tuple(slice(crop, n - crop) for n in s.shape)
    return s, s[sl].mean(dtype=xp.float64)


def run_cucim(w, x, y, ref, base, reps, human, cp):
    try:
        from cucim.skimage.metrics import structural_similarity
        import cucim
    except Exception as e:  # not installed, or no usable CUDA for it
        emit(dict(base, peer="cucim", error="import failed: %s: %s" % (type(e).__name__, e)), human)
        return
    dx, dy = cp.asarray(x), cp.asarray(y)
    rec = dict(base, peer="cucim", version=getattr(cucim, "__version__", "?"),
               call="cucim.skimage.metrics.structural_similarity(x, y, data_range=%g, gaussian_weights=%s, full=True)"
               % (DATA_RANGE, w["gaussian"]))

    def call():
        return structural_similarity(dx, dy, data_range=DATA_RANGE, gaussian_weights=w["gaussian"], full=True)

    gpu = CupyGPU(cp)
    out, first_ms = first_call(call, gpu)
    check(rec, float(out[0]), ref)
    del out
    warm, gated = time_gpu([call], gpu, reps)
    add_timing(rec, warm, first_ms, gated)
    rec["reps"] = reps
    emit(rec, human)


def run_cupyx(w, x, y, ref, base, reps, human, cp):
    import cupyx.scipy.ndimage as cndi
    dx, dy = cp.asarray(x), cp.asarray(y)
    ws = win(w)
    if w["gaussian"]:
        filt = lambda a: cndi.gaussian_filter(a, SIGMA, mode="reflect", truncate=TRUNCATE)  # noqa: E731
    else:
        filt = lambda a: cndi.uniform_filter(a, ws, mode="reflect")  # noqa: E731

    def call():
        return ssim_formula(cp, filt(dx), filt(dy), filt(dx * dx), filt(dy * dy), filt(dx * dy), ws ** 3, (ws - 1) // 2)

    rec = dict(base, peer="cupyx", version=cp.__version__,
               call="scikit-image's formulation with cupyx.scipy.ndimage.%s (5 filters + elementwise)"
               % ("gaussian_filter" if w["gaussian"] else "uniform_filter"))
    gpu = CupyGPU(cp)
    out, first_ms = first_call(call, gpu)
    check(rec, float(out[1]), ref)
    del out
    warm, gated = time_gpu([call], gpu, reps)
    add_timing(rec, warm, first_ms, gated)
    rec["reps"] = reps
    emit(rec, human)


def run_torch(w, x, y, ref, base, reps, human, torch):
    import torch.nn.functional as F
    dx, dy = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
    ws, r = win(w), win(w) // 2
    if w["gaussian"]:
        k = np.exp(-0.5 * (np.arange(-r, r + 1) / SIGMA) ** 2)
        k = k / k.sum()
    else:
        k = np.full(ws, 1.0 / ws)
    k = torch.tensor(k, dtype=torch.float32, device="cuda")
    weights = [k.view(1, 1, ws, 1, 1), k.view(1, 1, 1, ws, 1), k.view(1, 1, 1, 1, ws)]

    def call():
        v = torch.stack([dx, dy, dx * dx, dy * dy, dx * dy])[:, None]  # (5, 1, D, H, W)
        v = F.pad(v, (r, r, r, r, r, r), mode="reflect")
        for wt in weights:
            v = F.conv3d(v, wt)
        return ssim_formula(torch, v[0, 0], v[1, 0], v[2, 0], v[3, 0], v[4, 0], ws ** 3, r)

    rec = dict(base, peer="torch", version=torch.__version__,
               call="5 volumes, F.pad(reflect = scipy's mirror), 3 separable conv3d, elementwise map",
               boundary="mirror (the map differs near the border; the cropped mean does not)")
    gpu = TorchGPU(torch)
    try:
        out, first_ms = first_call(call, gpu)
    except (RuntimeError, NotImplementedError) as e:
        emit(dict(rec, skipped="not supported: %s" % str(e).splitlines()[0]), human)
        return
    check(rec, float(out[1]), ref)
    del out
    warm, gated = time_gpu([call], gpu, reps)
    add_timing(rec, warm, first_ms, gated)
    rec["reps"] = reps
    emit(rec, human)


def main():
    args, date, mods, device = start(__doc__, "peers_metrics", 30, "cupyx,torch,scipy")
    rng = np.random.default_rng(args.seed)
    for w in WORKLOADS:
        if args.only and args.only not in wl_name(w):
            continue
        x = rng.uniform(-1000, 1000, size=w["shape"]).astype(np.float32)
        y = rng.uniform(-1000, 1000, size=w["shape"]).astype(np.float32)
        base = record(w, None, device, date)
        ref = run_skimage(w, x, y, base, args.human) if "scipy" in mods else None
        cp, torch = mods.get("cupyx"), mods.get("torch")
        for peer, fn in (("cucim", lambda: run_cucim(w, x, y, ref, base, args.reps, args.human, cp)),
                         ("cupyx", lambda: run_cupyx(w, x, y, ref, base, args.reps, args.human, cp)),
                         ("torch", lambda: run_torch(w, x, y, ref, base, args.reps, args.human, torch))):
            if peer not in mods and not (peer == "cucim" and cp is not None):  # cuCIM needs CuPy
                continue
            try:
                fn()
            except Exception as e:  # report and go on
                emit(dict(base, peer=peer, error="%s: %s" % (type(e).__name__, e)), args.human)
    return 0


if __name__ == "__main__":
    sys.exit(main())
