#!/usr/bin/env python3
"""scipy.ndimage oracle for tests/test_label.c.

Draws random cases of scipy.ndimage.label(input, structure, output), runs
scipy on them (per image when the case has batch axes) and writes, per case,
the input, the structure when the case has one, and scipy's labels with its
default int32 output as .npy files, plus one manifest line of
space-separated key=value pairs that test_label.c parses:

  id=7 dtype=int16 shape=2,5,9 batch=1 structure=c7_st.npy out_dtype=uint8
  out_fits=1 max=3 counts=3,1 input=c7_in.npy expected=c7_out.npy

(one line in the file), then the layouts of the output:

  ostrides=40,1,5 expected_f=c7_outf.npy expected_s=c7_outs.npy expected_si=c7_outsi.npy

scipy numbers features in the scan order of its output's memory layout:
expected_f holds scipy's labels (C order on disk) written into a
Fortran-ordered output of out_dtype, expected_s into an output of out_dtype
with the element strides ostrides, expected_si into int32 with those strides
(expected_f and expected_s are missing when out_fits=0).  dtype is the input's dtype (non-zero = foreground:
negative values and NaN too, -0.0 is background).  A missing structure key
means structure=None (generate_binary_structure(rank, 1)); a structure file
has one axis per spatial axis, shape (3,)*rank, any dtype (non-zero = in),
and is symmetric in its truth values (scipy's requirement).  batch leading
axes are independent images: expected holds scipy's labels of each image
(each numbered from 1) and counts scipy's num_features of each image, in C
order of the batch axes (nothing after counts= when there are no images;
max is the largest count, 0 then).

out_dtype is a second output dtype for the case and out_fits scipy's verdict
on it: 1 when scipy.ndimage.label(image, structure, output=out_dtype) returns
the same labels for every image, 0 when it raises "insufficient bit-depth in
requested output type" for at least one image (ndforge must then return
NDF_EINVAL and write nothing).

Usage: oracle_label.py --seed S --out DIR [--cases N]
"""
import os
import sys

import numpy as np

import oracle_common
import scipy
import scipy.ndimage as ndi

DTYPES = ["bool", "uint8", "int16", "float32"]
OUT_DTYPES = ["int32", "int32", "uint8", "uint8", "int8", "int16", "uint16", "uint32", "float32",
              "float64"]


def draw_spatial(rng, nsp, large):
    if large:
        hi = {1: 1200, 2: 90, 3: 24, 4: 10}[nsp]
        return [int(rng.integers(hi // 2, hi + 1)) for _ in range(nsp)]
    hi = {1: 60, 2: 20, 3: 10, 4: 6}[nsp]
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
    return oracle_common.blobs(rng, shape, nbatch, (0.5, 2.5), (0.2, 0.8))


def comb(rng, shape, nbatch):
    """Teeth along the last axis joined late in raster order (a U, an E, a
    spiral of provisional labels that must merge), with some noise."""
    fg = np.zeros(shape, bool)
    if len(shape) - nbatch < 2 or fg.size == 0:
        return rng.random(shape) < 0.5
    sl = [slice(None)] * len(shape)
    step = int(rng.integers(2, 4))
    sl[-1] = slice(int(rng.integers(0, 2)), None, step)
    fg[tuple(sl)] = True                       # teeth: columns of the last axis
    sl = [slice(None)] * len(shape)
    sl[-2] = -1 if rng.random() < 0.7 else 0   # the bar that joins them
    fg[tuple(sl)] = True
    if rng.random() < 0.5:
        fg ^= rng.random(shape) < 0.05
    return fg


def draw_foreground(rng, shape, nbatch):
    r = rng.random()
    if r < 0.45:
        return blobs(rng, shape, nbatch)
    if r < 0.7:
        return rng.random(shape) < rng.uniform(0.2, 0.8)
    if r < 0.8:
        return comb(rng, shape, nbatch)
    if r < 0.9:  # sparse: isolated voxels
        return rng.random(shape) < rng.uniform(0.0, 0.1)
    return np.full(shape, bool(rng.integers(0, 2)))


def encode(rng, fg, dtype):
    """The foreground as an array of dtype: non-zero values of several kinds
    (negative, NaN, subnormal) for the foreground, zeros (and -0.0) for the
    background."""
    if dtype == "bool":
        return fg.copy()
    if dtype == "uint8":
        v = rng.choice(np.array([1, 2, 255, 128], np.uint8), fg.shape)
        return np.where(fg, v, 0).astype(np.uint8)
    if dtype == "int16":
        v = rng.choice(np.array([1, -1, 2, -300, 256, -32768], np.int16), fg.shape)
        return np.where(fg, v, 0).astype(np.int16)
    vals = [1.0, -1.0, 0.25, 2.0, -1e30, 1e-30]
    if rng.random() < 0.3:
        vals.append(np.nan)
    if rng.random() < 0.2:
        vals.append(1e-40)  # subnormal in float32: still non-zero
    if rng.random() < 0.2:
        vals.append(-np.inf)
    v = rng.choice(np.array(vals, np.float32), fg.shape)
    bg = np.where(rng.random(fg.shape) < 0.3, np.float32(-0.0), np.float32(0.0))
    return np.where(fg, v, bg).astype(np.float32)


def reverse(st):
    return st[(slice(None, None, -1),) * st.ndim]


def draw_structure(rng, nsp):
    """Returns (structure as written to disk or None for the default, the bool
    structure scipy uses)."""
    r = rng.random()
    if r < 0.2:
        return None, ndi.generate_binary_structure(nsp, 1)
    if r < 0.55:
        c = int(rng.integers(-1, nsp + 2))
        st = ndi.generate_binary_structure(nsp, c)
    elif r < 0.97:
        st = rng.random([3] * nsp) < rng.uniform(0.1, 0.8)
        st = st | reverse(st)
        if rng.random() < 0.5:
            st[(1,) * nsp] = bool(rng.integers(0, 2))  # the centre does not matter
    else:
        st = np.zeros([3] * nsp, bool)                 # every voxel is its own feature
    assert np.array_equal(st, reverse(st))
    return store_bool(rng, st), st


def store_bool(rng, b):
    """A bool array as written to disk: any dtype, non-zero = in (the values
    of mirrored elements may differ; only their truth is symmetric)."""
    r = rng.random()
    if r < 0.5:
        return b.copy()
    if r < 0.65:
        return np.where(b, rng.choice(np.array([1, 2, 255], np.uint8), b.shape), 0).astype(np.uint8)
    if r < 0.8:
        return np.where(b, rng.choice(np.array([1, -1, 7], np.int16), b.shape), 0).astype(np.int16)
    z = np.where(rng.random(b.shape) < 0.3, np.float32(-0.0), np.float32(0.0))
    return np.where(b, rng.choice(np.array([0.5, 1.0, -2.0, np.nan], np.float32), b.shape),
                    z).astype(np.float32)


def label_images(data, st_disk, bshape, out_dtype=None):
    """scipy.ndimage.label of each image; (labels, counts) or raises."""
    dt = np.int32 if out_dtype is None else np.dtype(out_dtype)
    out = np.zeros(data.shape, dt)
    counts = []
    for b in np.ndindex(*bshape):
        if out_dtype is None:
            lab, n = ndi.label(data[b], st_disk)
        else:
            lab, n = ndi.label(data[b], st_disk, output=dt)
        if lab.dtype != dt:
            sys.exit(f"oracle_label.py: scipy returned {lab.dtype} labels, expected {dt}")
        out[b] = lab
        counts.append(int(n))
    return out, counts


def draw_strides(rng, shape):
    """Element strides of a padded output (axes in random memory order, 0-2
    elements of padding per axis, a gap of 2-3 elements on the innermost axis
    now and then), as test_label.c lays out its strided outputs; returns
    (strides, buffer elements)."""
    order = list(rng.permutation(len(shape)))  # order[0]: outermost in memory
    strides = [0] * len(shape)
    extent = 1
    for k in range(len(shape) - 1, -1, -1):
        ax = order[k]
        gap = int(rng.integers(2, 4)) if k == len(shape) - 1 and rng.random() < 0.5 else 1
        strides[ax] = extent * gap
        extent = strides[ax] * (max(shape[ax], 1) + int(rng.integers(0, 3)))
    return strides, extent


def label_into(data, st_disk, bshape, dt, make):
    """scipy.ndimage.label of each image into the views out[b] of out = make(dt)
    (scipy numbers features in the scan order of its output's layout); returns
    the labels in C order, or None when scipy raises insufficient bit-depth."""
    out = make(dt)
    try:
        for b in np.ndindex(*bshape):
            ndi.label(data[b], st_disk, output=out[b])
    except RuntimeError as e:
        if "insufficient bit-depth" not in str(e):
            raise
        return None
    return np.ascontiguousarray(out)


def same_partition(a, b):
    """Whether labels b are labels a renumbered (one to one, 0 kept)."""
    pairs = np.unique(np.stack([a.ravel().astype(np.int64), b.ravel().astype(np.int64)]), axis=1)
    return (len(np.unique(pairs[0])) == pairs.shape[1] and len(np.unique(pairs[1])) == pairs.shape[1]
            and all((x == 0) == (y == 0) for x, y in pairs.T))


def layouts(rng, data, st_disk, bshape, odt, fits, out):
    """scipy's labels into a Fortran-ordered output of odt, and into one strided
    output (strides drawn here) of odt and of int32."""
    shape = data.shape
    strides, extent = draw_strides(rng, shape)

    def strided(dt):
        buf = np.zeros(extent + 1, dt)
        return np.lib.stride_tricks.as_strided(buf, shape, [x * buf.itemsize for x in strides])
    res = {"ostrides": strides,
           "exp_f": label_into(data, st_disk, bshape, odt, lambda dt: np.zeros(shape, dt, order="F")),
           "exp_s": label_into(data, st_disk, bshape, odt, strided),
           "exp_si": label_into(data, st_disk, bshape, np.int32, strided)}
    for k in ("exp_f", "exp_s"):
        if (res[k] is not None) != bool(fits):
            sys.exit(f"oracle_label.py: scipy's bit-depth verdict depends on the output's layout ({k})")
    for k in ("exp_f", "exp_s", "exp_si"):
        if res[k] is not None and not all(same_partition(out[b], res[k][b]) for b in np.ndindex(*bshape)):
            sys.exit(f"oracle_label.py: scipy's {k} labels are not a renumbering of its C-order labels")
    return res


def draw_case(rng, stats):
    dtype = str(rng.choice(DTYPES))
    nsp = int(rng.choice([1, 2, 2, 3, 3, 4]))
    nbatch = int(rng.choice([0, 0, 0, 1, 2]))
    bshape = [int(rng.integers(1, 4)) for _ in range(nbatch)]
    large = rng.random() < 0.06
    spatial = draw_spatial(rng, nsp, large)
    if large:
        bshape = bshape[:1]
        nbatch = len(bshape)
    if rng.random() < 0.03:  # an axis of length 0 (scipy: no features)
        axes = bshape + spatial
        axes[int(rng.integers(0, len(axes)))] = 0
        bshape, spatial = axes[:nbatch], axes[nbatch:]
    shape = bshape + spatial
    fg = draw_foreground(rng, shape, nbatch)
    data = encode(rng, fg, dtype)
    st_disk, st = draw_structure(rng, nsp)

    out, counts = label_images(data, st_disk, bshape)
    # independent checks of the oracle itself: labels 1..n in raster order
    for i, b in enumerate(np.ndindex(*bshape)):
        lab = out[b].ravel()
        first = lab[lab > 0]
        if first.size:
            _, idx = np.unique(first, return_index=True)
            order = first[np.sort(idx)]
            if not np.array_equal(order, np.arange(1, counts[i] + 1)):
                sys.exit("oracle_label.py: scipy's labels are not numbered in raster order")
        if ((data[b] != 0) != (out[b] != 0)).any():
            sys.exit("oracle_label.py: scipy's foreground differs from input != 0")

    odt = str(rng.choice(OUT_DTYPES))
    if max(counts, default=0) > 127 and rng.random() < 0.5:
        odt = str(rng.choice(["uint8", "int8"]))  # more cases of "insufficient bit-depth"
    try:
        o2, c2 = label_images(data, st_disk, bshape, odt)
        fits = 1
        if c2 != counts or not np.array_equal(o2.astype(np.float64), out.astype(np.float64)):
            sys.exit(f"oracle_label.py: scipy's {odt} labels differ from its int32 labels")
    except RuntimeError as e:
        if "insufficient bit-depth" not in str(e):
            raise
        fits = 0
        stats["bitdepth"] += 1
    if fits and max(counts, default=0) > np.iinfo(np.int8).max and odt == "int8":
        sys.exit("oracle_label.py: scipy accepted an int8 output for more than 127 features")

    stats["large"] += large
    stats["batched"] += nbatch > 0
    stats["features"] = max(stats["features"], max(counts, default=0))
    if rng.random() < 0.15 and data.ndim > 1:
        data = np.asfortranarray(data)  # exercises Fortran-order .npy reading
    case = {"dtype": dtype, "shape": shape, "batch": nbatch, "st_disk": st_disk, "out_dtype": odt,
            "fits": fits, "counts": counts}
    case.update(layouts(rng, data, st_disk, bshape, odt, fits, out))
    return case, data, out


def main():
    args, rng = oracle_common.start(__doc__, 600)
    stats = {"bitdepth": 0, "large": 0, "batched": 0, "features": 0}
    lines = []

    def save(name, a):
        np.save(os.path.join(args.out, name), a)
        return name

    for i in range(args.cases):
        case, data, out = draw_case(rng, stats)
        fields = [f"id={i}", f"dtype={case['dtype']}", f"shape={oracle_common.fmt_list(case['shape'])}",
                  f"batch={case['batch']}"]
        if case["st_disk"] is not None:
            fields.append("structure=" + save(f"c{i}_st.npy", case["st_disk"]))
        fields += [f"out_dtype={case['out_dtype']}", f"out_fits={case['fits']}",
                   f"max={max(case['counts'], default=0)}", "counts=" + oracle_common.fmt_list(case["counts"]),
                   "input=" + save(f"c{i}_in.npy", data), "expected=" + save(f"c{i}_out.npy", out),
                   "ostrides=" + oracle_common.fmt_list(case["ostrides"]),
                   "expected_si=" + save(f"c{i}_outsi.npy", case["exp_si"])]
        for k, f in (("exp_f", "f"), ("exp_s", "s")):
            if case[k] is not None:
                fields.append(f"expected_{f}=" + save(f"c{i}_out{f}.npy", case[k]))
        lines.append(" ".join(fields))

    with open(os.path.join(args.out, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"oracle_label.py: {args.cases} cases ({stats['batched']} batched, {stats['large']} large, "
          f"{stats['bitdepth']} with an output dtype too small, at most {stats['features']} features "
          f"in one image), seed {args.seed}, scipy {scipy.__version__}, numpy {np.__version__}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
