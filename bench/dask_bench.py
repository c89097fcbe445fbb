#!/usr/bin/env python3
"""ndforge on Dask arrays against the single-array call and against dask-image, same volume, same chunks.

    python3 bench/dask_bench.py [--size 1024] [--chunk 256] [--ops edt,label,opening,ecc]
                                [--scheduler threads|processes|synchronous] [--device cpu|cuda]

The volume is uint8 noise (a seeded NumPy generator); label and EDT take its binary mask ``v > 200`` and
``v > 20``, grey opening a 3^3 cube, ECC 64 thresholds.  Each case runs in a fresh process (its memory
high-water mark is that process's peak RSS, input included); the time is the op plus the compute into
one NumPy array (CuPy with --device cuda), the input already in memory.  Cases:

  single   ndforge.ndimage / ndforge.topology on the whole array
  ndforge  ndforge.dask on the chunked array
  dask-image  dask_image.ndmeasure.label, ndfilters.minimum/maximum_filter (grey opening);
           dask-image has no EDT and no ECC (n/a)

Prints a Markdown table: op, case, seconds, overhead vs single, peak RSS (GiB), equal to single
(labels: the same component sizes, as dask-image numbers them otherwise; test_dask checks the numbers).
"""

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np


def volume(n, device):
    v = np.random.default_rng(0).integers(0, 256, (n, n, n), dtype=np.uint8)
    if device == "cuda":
        import cupy
        return cupy.asarray(v)
    return v


def inputs(op, v):
    if op == "label":
        return v > 200
    if op == "edt":
        return v > 20
    return v


def run_case(op, case, n, chunk, scheduler, device):
    import dask
    import dask.array as da
    dask.config.set(scheduler=scheduler)
    if case == "dask-image":
        import dask_image.ndfilters as dif
        import dask_image.ndmeasure as dim
    v = inputs(op, volume(n, device))
    if case != "single":
        x = da.from_array(v, chunks=chunk, asarray=False).persist()
    import ndforge.ndimage as ndi
    import ndforge.topology as topo
    import ndforge.dask as nd
    t0 = time.perf_counter()
    if case == "single":
        r = {"edt": lambda: ndi.distance_transform_edt(v), "label": lambda: ndi.label(v)[0],
             "opening": lambda: ndi.grey_opening(v, size=3), "ecc": lambda: topo.ecc(v, 64)}[op]()
    elif case == "ndforge":
        r = {"edt": lambda: nd.distance_transform_edt(x), "label": lambda: nd.label(x)[0],
             "opening": lambda: nd.grey_opening(x, size=3), "ecc": lambda: nd.ecc(x, 64)}[op]().compute()
    else:
        if op == "label":
            r = dim.label(x)[0].compute()
        elif op == "opening":
            r = dif.maximum_filter(dif.minimum_filter(x, size=3), size=3).compute()
        else:
            return None
    if device == "cuda":
        import cupy
        cupy.cuda.Device().synchronize()
    t = time.perf_counter() - t0
    h = np.ascontiguousarray(r.get() if hasattr(r, "get") else np.asarray(r))
    digest = hashlib.sha1(h.tobytes()).hexdigest()
    if op == "label":  # dask-image numbers the components otherwise: compare the partitions by their sizes
        digest = hashlib.sha1(np.sort(np.bincount(h.ravel().astype(np.int64))[1:]).tobytes()).hexdigest()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20
    return dict(seconds=t, rss_gib=rss, digest=digest)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--chunk", type=int, default=256)
    ap.add_argument("--ops", default="edt,label,opening,ecc")
    ap.add_argument("--scheduler", default="threads")
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--case", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.case:
        op, case = a.case.split(":")
        print(json.dumps(run_case(op, case, a.size, a.chunk, a.scheduler, a.device)))
        return
    print("volume %d^3 uint8, chunks %d^3, scheduler %s, device %s, %d CPUs" % (
        a.size, a.chunk, a.scheduler, a.device, os.cpu_count()))
    print("| op | case | s | x single | peak RSS GiB | equal to single |")
    print("|---|---|---|---|---|---|")
    for op in a.ops.split(","):
        base = None
        for case in ("single", "ndforge", "dask-image"):
            cmd = [sys.executable, __file__, "--size", str(a.size), "--chunk", str(a.chunk), "--scheduler",
                   a.scheduler, "--device", a.device, "--case", "%s:%s" % (op, case)]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode:
                print("| %s | %s | failed: %s | | | |" % (op, case, p.stderr.strip().splitlines()[-1:]))
                continue
            r = json.loads(p.stdout.strip().splitlines()[-1])
            if r is None:
                print("| %s | %s | n/a | | | |" % (op, case))
                continue
            if case == "single":
                base = r
            same = "" if base is None or case == "single" else ("yes" if r["digest"] == base["digest"] else "no")
            ratio = "" if base is None else "%.2f" % (r["seconds"] / base["seconds"])
            print("| %s | %s | %.3f | %s | %.2f | %s |" % (op, case, r["seconds"], ratio, r["rss_gib"], same),
                  flush=True)


if __name__ == "__main__":
    main()
