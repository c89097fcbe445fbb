#!/usr/bin/env python3
"""scikit-image oracle for tests/test_reconstruction.c.

Draws random cases of skimage.morphology.reconstruction(seed, mask, method,
footprint, offset), runs scikit-image on them (per image when the case has
batch axes) and writes, per case, the seed, the mask, the footprint when the
case has one, and scikit-image's result (float64, as it returns it) as .npy
files, plus one manifest line of space-separated key=value pairs that
test_reconstruction.c parses:

  id=7 method=erosion dtype=int16 shape=2,5,9 batch=1 footprint=c7_fp.npy
  offset=0,2 seed=c7_seed.npy mask=c7_mask.npy expected=c7_out.npy

(one line in the file).  A missing footprint key means footprint=None
(ones((3,) * rank)); a missing offset key means offset=None (the centre of an
odd footprint).  error=1 (and no expected key) marks a case whose seed lies on
the wrong side of the mask somewhere, where scikit-image raises ValueError.

Offsets: scikit-image checks `offset.ndim != footprint.ndim`, so an offset
array works for 1-D footprints only.  For more axes the oracle passes the
footprint padded with zeros so that the offset lies at its centre, which
gives the same neighbour offsets (k - offset), all that the result depends on;
1-D cases with an offset run both ways and must agree.

Exits 77 (the tests' "skipped") when scikit-image is not installed.

Usage: oracle_reconstruction.py --seed S --out DIR [--cases N]
"""
import os
import sys

import numpy as np

import oracle_common

try:
    import skimage
    from skimage.morphology import reconstruction
except ImportError:
    sys.exit(77)

DTYPES = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "float64"]
# Cost bound per case: voxels (scikit-image sorts seed and mask together).
VOXEL_BUDGET = 6000


def draw_shape(rng, nsp):
    if nsp == 1:
        return [int(rng.integers(1, 120))]
    if nsp == 2:
        return [int(rng.integers(1, 40)) for _ in range(2)]
    return [int(rng.integers(1, 14)) for _ in range(nsp)]


def draw_mask(rng, dtype, shape, nbatch):
    """Smoothed noise (plateaus, valleys) or plain noise, in dtype's range;
    narrow ranges for many ties."""
    dt = np.dtype(dtype)
    if len(shape) and np.prod(shape) > 0 and rng.random() < 0.6:
        g = oracle_common.blobs(rng, shape, nbatch, (0.5, 3.0), (0.5, 0.5)).astype(np.float64)
        g = g + rng.standard_normal(shape) * rng.choice([0.0, 0.1, 1.0])
    else:
        g = rng.standard_normal(shape)
    if dt.kind == "f":
        v = g * 50.0
        if rng.random() < 0.3:
            v = np.round(v)  # ties
        if v.size and rng.random() < 0.1:
            k = max(1, v.size // 30)
            v.flat[rng.integers(0, v.size, k)] = rng.choice([np.inf, -np.inf, 0.0, -0.0], k)
        return v.astype(dt)
    info = np.iinfo(dt)
    lo, hi = int(info.min), int(info.max)
    if rng.random() < 0.3:  # a narrow range somewhere
        a = int(rng.integers(lo, hi - 10 + 1))
        lo, hi = a, a + int(rng.integers(1, 10))
    g = (g - g.min()) / (np.ptp(g) if g.size and np.ptp(g) > 0 else 1.0) if g.size else g
    v = lo + np.floor(g * (hi - lo + 0.999))
    return np.clip(v, lo, hi).astype(np.int64).astype(dt)


def draw_seed(rng, mask, method):
    """A seed on the right side of the mask: the mask moved by h (h-dome),
    markers at the mask's value and the extreme elsewhere, or noise clamped."""
    dt = mask.dtype
    m = mask.astype(np.float64)
    sign = -1.0 if method == "dilation" else 1.0
    if dt.kind == "f":
        lo, hi = -np.inf, np.inf
        fin = m[np.isfinite(m)]
        ext = (fin.min() if sign < 0 else fin.max()) if fin.size else 0.0
    else:
        info = np.iinfo(dt)
        lo, hi = float(info.min), float(info.max)
        ext = m.min() if sign < 0 else m.max()
    if m.size == 0:
        return mask.copy()
    r = rng.random()
    if r < 0.35:
        h = float(rng.choice([1, 3, 10, 40]))
        s = m + sign * h
    elif r < 0.7:
        p = rng.uniform(0.01, 0.3)
        s = np.where(rng.random(m.shape) < p, m, ext)
    else:
        s = m + sign * np.abs(rng.standard_normal(m.shape)) * rng.choice([2.0, 20.0, 200.0])
    if dt.kind != "f":
        s = np.round(s)
    s = np.clip(s, lo, hi)
    s = np.minimum(s, m) if sign < 0 else np.maximum(s, m)
    s = s.astype(dt)
    if rng.random() < 0.2:  # the seed equals the mask in places
        eq = rng.random(m.shape) < 0.3
        s[eq] = mask[eq]
    return s


def draw_footprint(rng, nsp):
    """(footprint or None, offset or None)."""
    r = rng.random()
    if r < 0.3:
        return None, None
    maxe = {1: 7, 2: 5, 3: 3}.get(nsp, 3)
    eshape = [int(rng.integers(1, maxe + 1)) for _ in range(nsp)]
    with_offset = rng.random() < 0.4 or any(e % 2 == 0 for e in eshape)
    kind = rng.random()
    if kind < 0.1:
        fp = np.zeros(eshape, bool)  # nothing but the (crossed out) centre: the result is the seed
    elif kind < 0.3:
        fp = np.ones(eshape, bool)
    else:
        fp = rng.random(eshape) < rng.uniform(0.3, 0.9)
    stored = fp
    t = rng.random()
    if t < 0.2:
        stored = (fp * rng.integers(1, 256, fp.shape)).astype(np.uint8)
    elif t < 0.35:
        stored = np.where(fp, rng.choice([-2.5, 1.0, 3.0], fp.shape), 0.0)
    offset = None
    if with_offset:
        offset = [int(rng.integers(0, e)) for e in eshape]
    return stored, offset


def centred(fp, offset):
    """fp padded with zeros so that offset is its centre (same neighbour offsets)."""
    pads = []
    for e, o in zip(fp.shape, offset):
        r = max(o, e - 1 - o)
        pads.append((r - o, r - (e - 1 - o)))
    return np.pad(np.asarray(fp) != 0, pads)


def run_skimage(seed, mask, method, fp, offset):
    if offset is None:
        return reconstruction(seed, mask, method=method, footprint=fp)
    got = reconstruction(seed, mask, method=method, footprint=centred(fp, offset))
    if fp.ndim == 1:
        direct = reconstruction(seed, mask, method=method, footprint=np.asarray(fp), offset=np.array(offset))
        if not np.array_equal(direct, got):
            sys.exit("oracle_reconstruction.py: offset and centred footprint disagree (a wrong assumption here)")
    return got


def draw_case(rng):
    dtype = str(rng.choice(DTYPES))
    method = str(rng.choice(["dilation", "erosion"]))
    nsp = int(rng.choice([1, 2, 2, 3, 3, 4]))
    nbatch = int(rng.choice([0, 0, 0, 1, 2]))
    bshape = [int(rng.integers(1, 4)) for _ in range(nbatch)]
    spatial = draw_shape(rng, nsp)
    if nsp == 4:
        spatial = [int(rng.integers(1, 6)) for _ in range(4)]
    shape = bshape + spatial
    if int(np.prod(shape)) > VOXEL_BUDGET:
        return None
    mask = draw_mask(rng, dtype, shape, nbatch)
    seed = draw_seed(rng, mask, method)
    fp, offset = draw_footprint(rng, nsp)
    error = False
    if seed.size and rng.random() < 0.05:  # one voxel on the wrong side of the mask
        i = int(rng.integers(0, seed.size))
        dt = np.dtype(dtype)
        m = mask.flat[i]
        if dt.kind == "f":
            if np.isfinite(m):
                seed.flat[i] = m + (1.0 if method == "dilation" else -1.0) * max(1.0, abs(float(m)))
                error = True
        else:
            info = np.iinfo(dt)
            if method == "dilation" and m < info.max:
                seed.flat[i] = m + 1
                error = True
            if method == "erosion" and m > info.min:
                seed.flat[i] = m - 1
                error = True
    case = {"dtype": dtype, "method": method, "shape": shape, "batch": nbatch, "offset": offset}
    if error:
        try:
            for b in np.ndindex(*bshape):
                run_skimage(seed[b], mask[b], method, fp, offset)
        except ValueError:
            return case, seed, mask, fp, None
        sys.exit("oracle_reconstruction.py: scikit-image accepted a seed on the wrong side of the mask")
    out = np.empty(shape, np.float64)
    for b in np.ndindex(*bshape):
        if seed[b].size == 0:
            continue  # scikit-image cannot reduce an empty seed (np.min); ndforge returns at once
        out[b] = run_skimage(seed[b], mask[b], method, fp, offset)
    return case, seed, mask, fp, out


def main():
    args, rng = oracle_common.start(__doc__, 400)
    lines = []
    tries = 0
    while len(lines) < args.cases:
        tries += 1
        if tries > 50 * args.cases + 1000:
            sys.exit("oracle_reconstruction.py: could not draw enough cases")
        got = draw_case(rng)
        if got is None:
            continue
        case, seed, mask, fp, out = got
        i = len(lines)
        if rng.random() < 0.15 and seed.ndim > 1:
            seed = np.asfortranarray(seed)  # exercises Fortran-order .npy reading
        fields = [f"id={i}", f"method={case['method']}", f"dtype={case['dtype']}",
                  f"shape={oracle_common.fmt_list(case['shape'])}", f"batch={case['batch']}"]
        if fp is not None:
            np.save(os.path.join(args.out, f"c{i}_fp.npy"), fp)
            fields.append(f"footprint=c{i}_fp.npy")
        if case["offset"] is not None:
            fields.append(f"offset={oracle_common.fmt_list(case['offset'])}")
        np.save(os.path.join(args.out, f"c{i}_seed.npy"), seed)
        np.save(os.path.join(args.out, f"c{i}_mask.npy"), mask)
        fields += [f"seed=c{i}_seed.npy", f"mask=c{i}_mask.npy"]
        if out is None:
            fields.append("error=1")
        else:
            np.save(os.path.join(args.out, f"c{i}_out.npy"), out)
            fields.append(f"expected=c{i}_out.npy")
        lines.append(" ".join(fields))
    with open(os.path.join(args.out, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    nerr = sum(" error=1" in line for line in lines)
    print(f"oracle_reconstruction.py: {len(lines)} cases ({nerr} rejected by scikit-image), seed {args.seed}, "
          f"scikit-image {skimage.__version__}, numpy {np.__version__}", file=sys.stderr)


if __name__ == "__main__":
    main()
