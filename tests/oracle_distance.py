#!/usr/bin/env python3
"""scipy.ndimage oracle for tests/test_distance.c.

Draws random cases of scipy.ndimage.distance_transform_edt, _cdt and _bf,
runs scipy on them (per image when the case has batch axes) and writes, per
case, the input, the metric structure when the case has one, and scipy's
distances and indices as .npy files, plus one manifest line of
space-separated key=value pairs that test_distance.c parses:

  id=7 op=edt dtype=uint8 shape=2,5,9 batch=1 metric=default sampling=0.7,1.3
  structure=c7_st.npy input=c7_in.npy dist=c7_d.npy idx=c7_i.npy

(one line in the file).  op is edt, cdt or bf.  metric is default (scipy's
default of the op), taxicab, cityblock, manhattan, chessboard, euclidean, or
structure (cdt with metric=array: the structure file, shape (3,)*rank, any
dtype, non-zero = in).  sampling is absent for None, else one value per
spatial axis or a single value.  dtype is the input's dtype (non-zero =
foreground, NaN too; -0.0 is background).  batch leading axes are
independent images: dist holds scipy's distances of each image and idx
holds, per image, scipy's indices of shape (rank,) + image shape, so idx has
shape batch + (rank,) + spatial.

Masks: smoothed-noise blobs (large connected regions, long distances),
uniform noise, sparse background (lines with no background), full and empty
images, single background points in large images (cdt distances in the
hundreds, long diagonal paths), and ties (symmetric patterns).

Usage: oracle_distance.py --seed S --out DIR [--cases N]
"""
import os
import warnings

import numpy as np

import oracle_common
import scipy.ndimage as ndi

DTYPES = ["bool", "uint8", "int16", "float32", "float64"]


def draw_spatial(rng, nsp, large):
    if large:
        hi = {1: 3000, 2: 400, 3: 48, 4: 14}[nsp]
        return [int(rng.integers(hi // 2, hi + 1)) for _ in range(nsp)]
    hi = {1: 80, 2: 24, 3: 11, 4: 6}[nsp]
    shape = []
    for _ in range(nsp):
        r = rng.random()
        if r < 0.08:
            shape.append(1)
        elif r < 0.15:
            shape.append(2)
        else:
            shape.append(int(rng.integers(3, hi + 1)))
    return shape


def blobs(rng, shape, nbatch):
    # foreground is most of the image: background in islands
    return oracle_common.blobs(rng, shape, nbatch, (0.5, 3.0), (0.3, 0.97), below=True)


def points(rng, shape, nbatch):
    """A few background points in a foreground image."""
    fg = np.ones(shape, bool)
    if fg.size == 0:
        return fg
    k = int(rng.integers(1, 4))
    flat = fg.reshape(-1)
    for _ in range(k):
        flat[int(rng.integers(0, flat.size))] = False
    if rng.random() < 0.5:  # a corner: the longest paths
        fg[(0,) * len(shape)] = False
    return fg


def symmetric(rng, shape, nbatch):
    """Background on a lattice: many equidistant candidates (ties)."""
    fg = np.ones(shape, bool)
    sl = tuple(slice(int(rng.integers(0, 2)), None, int(rng.integers(2, 5))) for _ in shape)
    fg[sl] = False
    return fg


def draw_foreground(rng, shape, nbatch, large):
    if large and rng.random() < 0.5:
        return points(rng, shape, nbatch)
    r = rng.random()
    if r < 0.4:
        return blobs(rng, shape, nbatch)
    if r < 0.55:
        return rng.random(shape) < rng.uniform(0.3, 0.995)
    if r < 0.7:
        return points(rng, shape, nbatch)
    if r < 0.85:
        return symmetric(rng, shape, nbatch)
    if r < 0.92:
        return np.ones(shape, bool)
    return rng.random(shape) < 0.02


def encode(rng, fg, dtype):
    if dtype == "bool":
        return fg.copy()
    if dtype == "uint8":
        return np.where(fg, rng.choice(np.array([1, 2, 255], np.uint8), fg.shape), 0).astype(np.uint8)
    if dtype == "int16":
        return np.where(fg, rng.choice(np.array([1, -1, -300], np.int16), fg.shape), 0).astype(np.int16)
    vals = [1.0, -1.0, 0.25, 1e-30]
    if rng.random() < 0.3:
        vals.append(np.nan)
    v = rng.choice(np.array(vals, dtype), fg.shape)
    bg = np.where(rng.random(fg.shape) < 0.3, -0.0, 0.0).astype(dtype)
    return np.where(fg, v, bg).astype(dtype)


def draw_sampling(rng, nsp):
    r = rng.random()
    if r < 0.45:
        return None
    if r < 0.55:
        return [float(rng.choice([0.5, 2.0, 1.7]))]
    return [float(rng.choice([0.7, 1.3, 1.0, 2.0, 0.35, np.pi, 1.1])) for _ in range(nsp)]


def scipy_sampling(sampling):
    """A single value is passed as a scalar (scipy wants a scalar or one per axis)."""
    if sampling is None or len(sampling) > 1:
        return sampling
    return sampling[0]


def run_images(fn, data, bshape, nsp):
    """fn(image) -> (dist, idx); stacks them over the batch axes."""
    dists, idxs = [], []
    for b in np.ndindex(*bshape):
        d, i = fn(data[b])
        dists.append(d)
        idxs.append(i)
    spatial = data.shape[len(bshape):]
    ddt = dists[0].dtype if dists else np.float64
    dist = np.array(dists, ddt).reshape(tuple(bshape) + tuple(spatial))
    idx = np.array(idxs, np.int32).reshape(tuple(bshape) + (nsp,) + tuple(spatial))
    return dist, idx


def draw_case(rng, cid, out):
    op = str(rng.choice(["edt", "edt", "edt", "cdt", "cdt", "bf"]))
    dtype = str(rng.choice(DTYPES))
    nsp = int(rng.choice([1, 2, 2, 3, 3, 4]))
    nbatch = int(rng.choice([0, 0, 0, 1, 2]))
    bshape = [int(rng.integers(1, 4)) for _ in range(nbatch)]
    large = op != "bf" and rng.random() < 0.08
    spatial = draw_spatial(rng, nsp, large)
    if large:
        bshape = bshape[:1]
        nbatch = len(bshape)
    if op == "bf":  # brute force: keep it small
        while int(np.prod(spatial)) > 1500:
            spatial[int(np.argmax(spatial))] //= 2
    shape = bshape + spatial
    fg = draw_foreground(rng, shape, nbatch, large)
    data = encode(rng, fg, dtype)
    meta = dict(id=cid, op=op, dtype=dtype, shape=",".join(map(str, shape)), batch=nbatch)
    st = None
    sampling = None
    if op == "edt":
        metric = "default"
        sampling = draw_sampling(rng, nsp)
        fn = lambda im: ndi.distance_transform_edt(im, sampling=scipy_sampling(sampling), return_indices=True)
    elif op == "cdt":
        r = rng.random()
        if r < 0.3:
            metric = "structure"
            st = rng.random((3,) * nsp) < rng.uniform(0.2, 0.9)
            if rng.random() < 0.5:
                st = st | st[(slice(None, None, -1),) * nsp]
            arg = st
        else:
            metric = str(rng.choice(["default", "taxicab", "cityblock", "manhattan", "chessboard"]))
            arg = "chessboard" if metric == "default" else metric
        fn = lambda im: ndi.distance_transform_cdt(im, metric=arg, return_indices=True)
    else:
        metric = str(rng.choice(["default", "euclidean", "taxicab", "chessboard", "cityblock"]))
        sampling = draw_sampling(rng, nsp)
        arg = "euclidean" if metric == "default" else metric
        fn = lambda im: ndi.distance_transform_bf(im, metric=arg, sampling=scipy_sampling(sampling),
                                                  return_indices=True)
    dist, idx = run_images(fn, data, bshape, nsp)
    want = {"edt": np.float64, "cdt": np.int32,
            "bf": np.float64 if metric in ("default", "euclidean") else np.uint32}[op]
    if dist.size and dist.dtype != want:
        raise SystemExit(f"oracle_distance.py: scipy returned {dist.dtype} distances for {op}, expected {want}")
    meta["metric"] = metric
    if sampling is not None:
        meta["sampling"] = ",".join(repr(v) for v in sampling)
    if st is not None:
        meta["structure"] = f"c{cid}_st.npy"
        np.save(os.path.join(out, meta["structure"]), st)
    meta["input"] = f"c{cid}_in.npy"
    meta["dist"] = f"c{cid}_d.npy"
    meta["idx"] = f"c{cid}_i.npy"
    np.save(os.path.join(out, meta["input"]), data)
    np.save(os.path.join(out, meta["dist"]), dist.astype(want))
    np.save(os.path.join(out, meta["idx"]), idx)
    return " ".join(f"{k}={v}" for k, v in meta.items())


def main():
    a, rng = oracle_common.start(__doc__, 300)
    # scipy's cdt compares an array metric with strings (a FutureWarning in numpy)
    warnings.simplefilter("ignore", FutureWarning)
    lines = [draw_case(rng, i, a.out) for i in range(a.cases)]
    with open(os.path.join(a.out, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
