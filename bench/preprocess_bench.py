#!/usr/bin/env python3
"""preprocess_bench.py -- the `ndforge preprocess` benchmark: 16 volumes of ch2 in one run.

Makes the inputs (unless --inputs names a directory that has them): ch2 of
Debian's mricron-data (181x217x181, 1 mm) under a random smooth
multiplicative bias field (a 4x4x4 grid of log-gains, normal with sigma
--bias, cubic-spline upsampled) and a random rigid motion (rotation up to
10 degrees about a random axis and a shift up to 5 mm, applied to the data
with trilinear interpolation), every other one stored with its x axis flipped
(an LAS header, so that reorient has work to do), as int16 NIfTI-1 .nii.gz.
Then times one whole `ndforge preprocess` run over the directory (reading,
every step, writing the NIfTI outputs, montages and report) by the wall
clock (--runs times, 2 by default: the first compiles the kernels into the
disk cache, the last is reported), checks that every volume was written, and
prints one JSON line:
  {"bench": "preprocess", "volumes": 16, "steps": ..., "device": ...,
   "wall_s": ..., "per_volume_s": ..., "report_wall_s": ..., "step_s": {...}, "timing": {...}}
with the report's per-step wall times summed over the volumes and its
"timing" (startup; per phase -- read, process, write -- the summed time, the
time any volume was in it, their ratio and when the last one ended; per
worker its volumes, busy time and waits).

  bench/preprocess_bench.py --ndforge build/tools/ndforge [--device cpu|cuda|auto]
      [--steps reorient,resample,foreground,normalize,crop] [--spacing 1.5]
      [--count 16] [--inputs DIR] [--out DIR] [--seed 0] [--no-montage] [--format nii.gz|nii] [--runs 2]
      [--workers N] [--cpu-threads N] [--io-threads N]

Needs numpy, scipy and nibabel (Debian: python3-numpy, python3-scipy,
python3-nibabel) and /usr/share/mricron/templates/ch2.nii.gz (mricron-data).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

CH2 = "/usr/share/mricron/templates/ch2.nii.gz"


def rotation(axis, deg):
    axis = axis / np.linalg.norm(axis)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    t = np.radians(deg)
    return np.eye(3) + np.sin(t) * k + (1 - np.cos(t)) * k @ k


def make_inputs(d, count, seed, bias):
    import nibabel as nib
    import scipy.ndimage as ndi
    src = nib.load(CH2)
    x = np.asanyarray(src.dataobj).astype(np.float32)
    a = src.affine
    rng = np.random.default_rng(seed)
    centre = (np.array(x.shape) - 1) / 2
    for i in range(count):
        grid = rng.normal(scale=bias, size=(4, 4, 4))
        field = np.exp(ndi.zoom(grid, np.array(x.shape) / 4, order=3, mode="nearest"))[:x.shape[0], :x.shape[1],
                                                                                         :x.shape[2]]
        r = rotation(rng.normal(size=3), rng.uniform(-10, 10))
        shift = rng.uniform(-5, 5, size=3)
        # output voxel o samples input voxel r (o - c) + c + shift (1 mm voxels: mm = voxels)
        y = ndi.affine_transform(x * field, r, offset=centre - r @ centre + shift, order=1, mode="constant")
        aff = a.copy()
        if i % 2:
            y = y[::-1]
            aff = a @ np.array([[-1, 0, 0, x.shape[0] - 1], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1.0]])
        nib.save(nib.Nifti1Image(np.clip(np.rint(y), -32768, 32767).astype(np.int16), aff),
                 os.path.join(d, "ch2_%02d.nii.gz" % i))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ndforge", default="build/tools/ndforge")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--steps", default="reorient,resample,foreground,normalize,crop")
    ap.add_argument("--spacing", default="1.5")
    ap.add_argument("--count", type=int, default=16)
    ap.add_argument("--inputs", help="a directory of inputs (made there when it has no .nii.gz)")
    ap.add_argument("--out", help="the output directory (default a temporary one)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bias", type=float, default=0.25, help="sigma of the log bias field's grid values")
    ap.add_argument("--no-montage", action="store_true")
    ap.add_argument("--format", default="nii.gz", help="the outputs' file type: nii.gz or nii")
    ap.add_argument("--runs", type=int, default=2, help="whole runs; the last one is reported (the first is cold)")
    ap.add_argument("--workers", type=int, help="ndforge preprocess --workers (default its own)")
    ap.add_argument("--cpu-threads", type=int, help="ndforge preprocess --cpu-threads (default its own)")
    ap.add_argument("--io-threads", type=int, help="ndforge preprocess --io-threads (default its own)")
    args = ap.parse_args()
    if not os.path.exists(CH2):
        sys.exit("preprocess_bench: %s is missing (apt-get install mricron-data)" % CH2)
    tmp = tempfile.mkdtemp(prefix="ndf_pp_bench_")
    inputs = args.inputs or os.path.join(tmp, "in")
    os.makedirs(inputs, exist_ok=True)
    if not any(f.endswith(".nii.gz") for f in os.listdir(inputs)):
        t0 = time.perf_counter()
        make_inputs(inputs, args.count, args.seed, args.bias)
        print("made %d inputs in %s (%.1f s)" % (args.count, inputs, time.perf_counter() - t0), file=sys.stderr)
    out = args.out or os.path.join(tmp, "out")
    cmd = [args.ndforge, "preprocess", inputs, "--out", out, "--steps", args.steps, "--spacing", args.spacing,
           "--device", args.device, "--format", args.format, "--progress", "none"] + \
        (["--no-montage"] if args.no_montage else [])
    for opt in ("workers", "cpu_threads", "io_threads"):
        if getattr(args, opt) is not None:
            cmd += ["--" + opt.replace("_", "-"), str(getattr(args, opt))]
    walls = []
    for _ in range(args.runs):  # the first run compiles the kernels into the disk cache (cold)
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True)
        walls.append(time.perf_counter() - t0)
        if r.returncode != 0:
            sys.exit("preprocess_bench: %s exited %d: %s" % (" ".join(cmd), r.returncode, r.stderr.strip()))
    wall = walls[-1]
    rep = json.load(open(os.path.join(out, "report.json")))
    n = len(rep["volumes"])
    if rep["failed"] or any(v["status"] != "ok" for v in rep["volumes"]):
        sys.exit("preprocess_bench: a volume failed: %s" % rep)
    step_s = {}
    for v in rep["volumes"]:
        for s in v["steps"]:
            step_s[s["name"]] = step_s.get(s["name"], 0) + s["wall_s"]
    print(json.dumps({"bench": "preprocess", "volumes": n, "steps": args.steps, "spacing": args.spacing,
                      "format": args.format,
                      "device": rep["device"], "wall_s": round(wall, 3), "per_volume_s": round(wall / n, 3),
                      "runs_wall_s": [round(w, 3) for w in walls],
                      "report_wall_s": round(rep["wall_s"], 3),
                      "read_s": round(sum(v["read_s"] for v in rep["volumes"]), 3),
                      "write_s": round(sum(v["write_s"] for v in rep["volumes"]), 3),
                      "step_s": {k: round(v, 3) for k, v in step_s.items()},
                      "workers": rep.get("workers"), "cpu_threads": rep.get("cpu_threads"),
                      "io_threads": rep.get("io_threads"), "timing": rep.get("timing"),
                      "date": time.strftime("%Y-%m-%d")}))


if __name__ == "__main__":
    main()
