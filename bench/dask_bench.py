#!/usr/bin/env python3
"""ndforge on Dask arrays against the single-array call and against dask-image, same volume, same chunks.

    python3 bench/dask_bench.py [--size 1024] [--chunk 256] [--ops edt,label,opening,ecc,zoom]
                                [--scheduler threads|processes|synchronous] [--device cpu|cuda]
                                [--case-timeout 120] [--repeat N] [--profile N]

The volume is uint8 noise (a seeded NumPy generator); label and EDT take its binary mask ``v > 200`` and
``v > 20``, grey opening a 3^3 cube, ECC 64 thresholds, zoom a factor 0.5 at order 1.  Each case runs in
a fresh process; before the timed call it runs the same call once on a volume of 1.5 chunks per axis
(kernels compiled, caches warm).  The time is the op plus the compute into one array (NumPy, or CuPy with
--device cuda, synchronized), the input already in memory (on the GPU with --device cuda) and, for the
Dask cases, already a dask array (da.from_array; a CuPy volume under a unique name, as dask would otherwise
name it by pickling it).  Cases:

  single      ndforge.ndimage / ndforge.topology on the whole array
  ndforge     ndforge.dask on the chunked array
  dask-image  dask_image.ndmeasure.label, ndfilters.minimum/maximum_filter (grey opening),
              ndinterp.affine_transform (zoom; its own geometry, not compared); no EDT, no ECC (n/a)
  dask-image on NumPy chunks
              with --device cuda, label only: dask-image's label does not take CuPy chunks (CuPy refuses
              its implicit conversion to NumPy: reported as n/a), so it also runs on the NumPy copy of the
              volume with the same chunks (input and result on the host; no GPU columns)

--repeat N times the call N times in the case's process (the first is the table's seconds; the best of N gets
its own column): the later calls find every worker thread's library context, kernels and memory pool made.
--profile N prints, after the table, the N functions of the first timed call with the most time of their own,
from cProfile: the calling thread (the graph's construction, the scheduling, and with --scheduler synchronous
the tasks) and, with the threads scheduler, the worker threads together (their idle waits for tasks
included); on CUDA a function's time includes its waits for the device.

Prints a Markdown table: op, case, seconds, overhead vs single, host peak RSS (GiB, the process's
high-water mark, input included), with --device cuda the GPU memory high-water mark above the
input (GiB: device memory in use, cudaMemGetInfo sampled every 2 ms during the call, which counts
CuPy's pool and the library's own allocations) and CuPy's pool high-water (GiB), and whether the
result equals the single call's (a fingerprint computed on the device; labels: the same component
sizes, as dask-image numbers them otherwise -- test_dask checks ndforge's numbers).
"""

import argparse
import cProfile
import io
import pstats
import hashlib
import json
import os
import resource
import subprocess
import sys
import threading
import time

import numpy as np


def volume(shape, device, seed=0):
    v = np.frombuffer(np.random.default_rng(seed).bytes(int(np.prod(shape))), np.uint8).reshape(shape)
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


def fingerprint(r, op):
    """A digest of an array computed where it lives: slabs of its bytes as uint32 words, weighted sums."""
    xp = np
    if not isinstance(r, np.ndarray):
        import cupy as xp
    if op == "label":  # the partition: sorted component sizes
        sizes = xp.sort(xp.bincount(r.ravel())[1:])
        h = sizes.get() if xp is not np else sizes
        return hashlib.sha1(np.ascontiguousarray(h).tobytes()).hexdigest()
    flat = xp.ascontiguousarray(r).reshape(-1).view(xp.uint8)
    pad = (-flat.size) % 4
    if pad:
        flat = xp.concatenate([flat, xp.zeros(pad, xp.uint8)])
    w = flat.view(xp.uint32)
    step = 1 << 24
    acc = []
    for s in range(0, w.size, step):
        part = w[s:s + step].astype(xp.uint64)
        k = xp.arange(s, s + part.size, dtype=xp.uint64) % xp.uint64(65521) + xp.uint64(1)
        acc.append(int((part * k).sum()))
        acc.append(int(part.sum()))
    return hashlib.sha1(json.dumps([r.shape, str(r.dtype), acc]).encode()).hexdigest()


class GpuSampler:
    """The device memory in use (cudaMemGetInfo) and CuPy's pool total, sampled every 2 ms on a thread."""

    def __init__(self):
        import cupy
        self.cupy = cupy
        self.base = self.used()
        self.peak = self.base
        self.pool_peak = cupy.get_default_memory_pool().total_bytes()
        self.stop = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True, name="gpu-sampler")

    def used(self):
        free, total = self.cupy.cuda.runtime.memGetInfo()
        return total - free

    def run(self):
        pool = self.cupy.get_default_memory_pool()
        while not self.stop.is_set():
            self.peak = max(self.peak, self.used())
            self.pool_peak = max(self.pool_peak, pool.total_bytes())
            time.sleep(0.002)

    def __enter__(self):
        self.t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.t.join()
        self.peak = max(self.peak, self.used())


def wrap(case, v, chunk):
    """The input of a case: v, or for the dask cases v as a dask array of chunks of chunk (not timed).  A
    device array gets a unique name: dask would name it by a token of its contents, which for a CuPy array
    means pickling it (a copy to the host and back, twice)."""
    import dask.array as da
    if case == "single":
        return v
    if case == "dask-image-numpy":
        return da.from_array(v, chunks=chunk)
    return da.from_array(v, chunks=chunk, asarray=False, name=None if isinstance(v, np.ndarray) else False)


def call(op, case, v, chunk):
    """The op of one case on its input v (``wrap``); the result computed."""
    import ndforge.ndimage as ndi
    import ndforge.topology as topo
    import ndforge.dask as nd
    if case == "single":
        return {"edt": lambda: ndi.distance_transform_edt(v), "label": lambda: ndi.label(v)[0],
                "opening": lambda: ndi.grey_opening(v, size=3), "ecc": lambda: topo.ecc(v, 64),
                "zoom": lambda: ndi.zoom(v, 0.5, order=1)}[op]()
    x = v
    if case == "ndforge":
        return {"edt": lambda: nd.distance_transform_edt(x), "label": lambda: nd.label(x)[0],
                "opening": lambda: nd.grey_opening(x, size=3), "ecc": lambda: nd.ecc(x, 64),
                "zoom": lambda: nd.zoom(x, 0.5, order=1)}[op]().compute()
    import dask_image.ndfilters as dif
    import dask_image.ndmeasure as dim
    if op == "label":
        return dim.label(x)[0].compute()
    if op == "opening":
        return dif.maximum_filter(dif.minimum_filter(x, size=3), size=3).compute()
    if op == "zoom":
        import dask_image.ndinterp as dii
        out = tuple(int(round(s * 0.5)) for s in v.shape)
        return dii.affine_transform(x, np.diag([2.0] * v.ndim), output_shape=out, order=1,
                                    output_chunks=chunk).compute()
    return None


class ThreadProfiles:
    """cProfile in every thread that makes a call while ``on`` (threads started after this object too)."""

    def __init__(self):
        self.on = False
        self.profiles = []
        self.local = threading.local()
        self.lock = threading.Lock()
        threading.setprofile(self.hook)

    def hook(self, frame, event, arg):
        if not self.on or getattr(self.local, "p", None) is not None:
            return
        if threading.current_thread().name == "gpu-sampler":
            self.local.p = False  # the memory sampler's thread is not profiled
            return
        p = self.local.p = cProfile.Profile()
        with self.lock:
            self.profiles.append(p)
        p.enable()  # replaces this hook in this thread

    def stats(self, stream):
        """The profiles so far, merged (without stopping the threads' profilers)."""
        class Snap:
            def __init__(self, p):
                p.snapshot_stats()
                self.stats = p.stats

            def create_stats(self):
                pass
        with self.lock:
            snaps = [Snap(p) for p in self.profiles]
        return pstats.Stats(*snaps, stream=stream) if snaps else None


def run_case(op, case, n, chunk, scheduler, device, repeat=1, profile=0):
    import dask
    workers = ThreadProfiles() if profile and scheduler == "threads" else None
    dask.config.set(scheduler=scheduler)
    if case == "dask-image-numpy":  # the NumPy copy of the volume: on the host throughout
        device = "cpu"
    if case == "dask-image" and op in ("edt", "ecc"):
        return None
    sync = lambda: None  # noqa: E731
    if device == "cuda":
        import cupy
        sync = cupy.cuda.Device().synchronize
    warm = inputs(op, volume((min(n, chunk + chunk // 2),) * 3, device, seed=1))
    call(op, case, wrap(case, warm, chunk), chunk)
    sync()
    del warm
    v = wrap(case, inputs(op, volume((n, n, n), device)), chunk)
    sync()
    sampler = GpuSampler() if device == "cuda" else None
    if sampler is not None:
        sampler.__enter__()
    prof = cProfile.Profile() if profile else None
    if prof is not None:
        if workers is not None:
            workers.on = True
        prof.enable()
    t0 = time.perf_counter()
    r = call(op, case, v, chunk)
    sync()
    t = time.perf_counter() - t0
    if prof is not None:
        prof.disable()
        if workers is not None:
            workers.on = False
            text = io.StringIO()
            st = workers.stats(text)
            if st is not None:
                st.sort_stats("tottime").print_stats(profile)
            worker_text = text.getvalue()
    if sampler is not None:
        sampler.__exit__()
    out = dict(seconds=t, rss_gib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20,
               digest=None if op == "zoom" and case == "dask-image" else fingerprint(r, op))
    best = t
    del r
    for _ in range(repeat - 1):
        t0 = time.perf_counter()
        call(op, case, v, chunk)
        sync()
        best = min(best, time.perf_counter() - t0)
    out["best"] = best
    if prof is not None:
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(profile)
        out["profile"] = "calling thread:\n" + text.getvalue().strip("\n")
        if workers is not None:
            out["profile"] += "\n\nworker threads:\n" + worker_text.strip("\n")
    if sampler is not None:
        out["gpu_gib"] = (sampler.peak - sampler.base) / 2 ** 30
        out["pool_gib"] = sampler.pool_peak / 2 ** 30
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--chunk", type=int, default=256)
    ap.add_argument("--ops", default="edt,label,opening,ecc")
    ap.add_argument("--cases", default="single,ndforge,dask-image")
    ap.add_argument("--scheduler", default="threads")
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--case-timeout", type=float, default=120.0, help="seconds a case may take (then: timeout)")
    ap.add_argument("--repeat", type=int, default=1, help="timed calls per case (the best of them: a column)")
    ap.add_argument("--profile", type=int, default=0, help="print the N functions of most own time per case")
    ap.add_argument("--case", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.case:
        op, case = a.case.split(":")
        print(json.dumps(run_case(op, case, a.size, a.chunk, a.scheduler, a.device, a.repeat, a.profile)))
        return
    gpu = a.device == "cuda"
    print("volume %d^3 uint8, chunks %d^3, scheduler %s, device %s, %d CPUs" % (
        a.size, a.chunk, a.scheduler, a.device, os.cpu_count()))
    rep = a.repeat > 1
    print("| op | case | s |%s x single | host peak RSS GiB |%s equal to single |" % (
        " s, best of %d |" % a.repeat if rep else "", " GPU peak above input GiB | CuPy pool peak GiB |" if gpu else ""))
    print("|---|---|---|%s---|---|%s---|" % ("---|" if rep else "", "---|---|" if gpu else ""))
    empty = (" | |" if gpu else "") + (" |" if rep else "")
    profiles = []
    for op in a.ops.split(","):
        base = None
        cases = a.cases.split(",")
        if gpu and op == "label" and "dask-image" in cases:
            cases.insert(cases.index("dask-image") + 1, "dask-image-numpy")
        for case in cases:
            cmd = [sys.executable, __file__, "--size", str(a.size), "--chunk", str(a.chunk), "--scheduler",
                   a.scheduler, "--device", a.device, "--repeat", str(a.repeat), "--profile", str(a.profile),
                   "--case", "%s:%s" % (op, case)]
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.case_timeout)
            except subprocess.TimeoutExpired:
                print("| %s | %s | timeout (> %g s) | | |%s |" % (op, case, a.case_timeout, empty), flush=True)
                continue
            if p.returncode and case == "dask-image" and "Implicit conversion to a NumPy array" in p.stderr:
                print("| %s | %s | n/a (dask-image %s needs NumPy chunks) | | |%s |" % (op, case, op, empty),
                      flush=True)
                continue
            if p.returncode:
                print("| %s | %s | failed: %s | | |%s |" % (op, case, p.stderr.strip().splitlines()[-1:], empty),
                      flush=True)
                continue
            r = json.loads(p.stdout.strip().splitlines()[-1])
            if r is None:
                print("| %s | %s | n/a | | |%s |" % (op, case, empty), flush=True)
                continue
            if case == "single":
                base = r
            same = "" if base is None or case == "single" or r["digest"] is None else (
                "yes" if r["digest"] == base["digest"] else "no")
            ratio = "" if base is None else "%.2f" % (r["seconds"] / base["seconds"])
            g = (" %.2f | %.2f |" % (r["gpu_gib"], r["pool_gib"]) if "gpu_gib" in r else " - | - |") if gpu else ""
            name = "dask-image, NumPy chunks (host)" if case == "dask-image-numpy" else case
            best = " %.3f |" % r["best"] if rep else ""
            print("| %s | %s | %.3f |%s %s | %.2f |%s %s |" % (op, name, r["seconds"], best, ratio, r["rss_gib"], g,
                                                              same), flush=True)
            if r.get("profile"):
                profiles.append("%s, %s:\n%s" % (op, name, r["profile"].strip("\n")))
    for text in profiles:
        print("\n" + text, flush=True)


if __name__ == "__main__":
    main()
