#!/usr/bin/env python3
"""peers_n4.py -- N4 bias-field correction of ch2 (issue 33's acceptance workload) by SimpleITK, and
optionally by ndforge for the side-by-side number.

The volume: Debian's mricron-data ch2.nii.gz (181x217x181 T1 MRI) times a known smooth bias field
(exp of 0.7 (0.25 c2 + 0.15 c1^2 - 0.1 c0 + 0.1 c0 c2), c_d in [-1, 1] along axis d, centred in the
brain: 40% variation), float32; the mask: ch2bet.nii.gz > 0.  The work, as SimpleITK's N4 example and the
N4 tools' -s do it: the fit on the volume shrunk by --shrink (default 4) with SimpleITK's defaults (4 levels
of 50 iterations, threshold 0.001, 4 control points, cubic, FWHM 0.15, noise 0.01, 200 bins), then the log
field at full resolution and the corrected volume.  SimpleITK runs on --threads threads (default every
core; sitk.ProcessObject.SetGlobalDefaultNumberOfThreads).

  --ndforge cpu|cuda   also time ndforge's n4_bias_field_correction (the Python package; cuda through a
                       CuPy array, or a torch CUDA tensor without CuPy) on the same volume

Each peer runs --repeat times (default 3; the first ndforge CUDA run, which compiles, is reported apart);
one JSON line per peer: the median time, the iterations of each level, and the correlation of the
recovered log field with the true one inside the brain (the acceptance's measure: ndforge's must be at
least SimpleITK's).  Needs numpy, nibabel, SimpleITK (pip install SimpleITK).
"""
import argparse
import datetime
import json
import os
import platform
import time

import numpy as np

CH2 = "/usr/share/mricron/templates/ch2.nii.gz"
CH2BET = "/usr/share/mricron/templates/ch2bet.nii.gz"


def workload():
    import nibabel as nib
    img = np.asarray(nib.load(CH2).dataobj).astype(np.float64)
    mask = (np.asarray(nib.load(CH2BET).dataobj) > 0).astype(np.uint8)
    c = np.meshgrid(*[np.linspace(-1, 1, n) for n in img.shape], indexing="ij")
    logb = 0.7 * (0.25 * c[2] + 0.15 * c[1] ** 2 - 0.1 * c[0] + 0.1 * c[0] * c[2])
    logb -= logb[mask > 0].mean()
    return (img * np.exp(logb)).astype(np.float32), mask, logb


def corr(a, b, mask):
    a = a[mask > 0] - a[mask > 0].mean()
    b = b[mask > 0] - b[mask > 0].mean()
    return float((a * b).sum() / np.sqrt((a * a).sum() * (b * b).sum()))


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "cpu"


def run_sitk(img, mask, shrink, threads):
    import SimpleITK as sitk
    sitk.ProcessObject.SetGlobalDefaultNumberOfThreads(threads)
    t0 = time.perf_counter()
    si = sitk.GetImageFromArray(img)
    sm = sitk.GetImageFromArray(mask)
    n4 = sitk.N4BiasFieldCorrectionImageFilter()
    n4.Execute(sitk.Shrink(si, [shrink] * 3), sitk.Shrink(sm, [shrink] * 3))
    lb = n4.GetLogBiasFieldAsImage(si)
    out = sitk.GetArrayFromImage(si / sitk.Exp(lb))
    ms = (time.perf_counter() - t0) * 1e3
    return ms, sitk.GetArrayFromImage(lb), out, {"last_level_iterations": n4.GetElapsedIterations(),
                                                  "convergence": n4.GetCurrentConvergenceMeasurement()}


def run_ndforge(img, mask, shrink, device):
    from ndforge._n4 import n4_bias_field_correction
    sync = lambda: None
    x, m = img, mask
    if device == "cuda":
        try:
            import cupy as cp
            x, m = cp.asarray(img), cp.asarray(mask)
            sync = cp.cuda.get_current_stream().synchronize
        except ImportError:
            import torch
            x, m = torch.from_numpy(img).cuda(), torch.from_numpy(mask).cuda()
            sync = torch.cuda.synchronize
    t0 = time.perf_counter()
    out, lb, info = n4_bias_field_correction(x, m, shrinkFactor=shrink, return_log_bias_field=True,
                                             return_info=True)
    sync()
    ms = (time.perf_counter() - t0) * 1e3
    to_np = (lambda a: a.get()) if hasattr(lb, "get") else (lambda a: a.cpu().numpy() if hasattr(a, "cpu") else a)
    return ms, to_np(lb), to_np(out), info


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shrink", type=int, default=4)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--ndforge", choices=["cpu", "cuda"])
    a = ap.parse_args()
    img, mask, truth = workload()
    date = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    peers = [("simpleitk", lambda: run_sitk(img, mask, a.shrink, a.threads))]
    if a.ndforge:
        peers.append(("ndforge_" + a.ndforge, lambda: run_ndforge(img, mask, a.shrink, a.ndforge)))
    for name, fn in peers:
        times, first = [], None
        for r in range(a.repeat + (name == "ndforge_cuda")):
            ms, lb, out, info = fn()
            if name == "ndforge_cuda" and r == 0:
                first = ms
                continue
            times.append(ms)
        rec = {"bench": "peers_n4", "peer": name, "name": "n4_ch2_s%d" % a.shrink, "shape": list(img.shape),
               "dtype": "float32", "shrink": a.shrink, "threads": a.threads if name == "simpleitk" else None,
               "device": cpu_name() if name != "ndforge_cuda" else "cuda", "date": date,
               "ms": float(np.median(times)), "runs": len(times), "first_ms": first,
               "correlation": corr(lb.astype(np.float64), truth, mask), "info": info}
        print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
