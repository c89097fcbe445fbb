#!/usr/bin/env python3
"""scipy.ndimage oracle for tests/test_grey.c.

Draws random cases of the eight grey ops (grey_erosion, grey_dilation,
grey_opening, grey_closing, morphological_gradient, morphological_laplace,
white_tophat, black_tophat; uniformly), runs scipy on them and writes, per
case, the input, the footprint / structure when the case has one, and scipy's
output as .npy files, plus one manifest line of space-separated key=value
pairs that test_grey.c parses:

  id=7 op=dilation dtype=int16 shape=2,5,1,9 batch=1 kind=structure
  mode=grid-wrap cval=-3.25 size=3 origin=0,-1,1 footprint=c7_fp.npy
  structure=c7_st.npy input=c7_in.npy expected=c7_out.npy

(one line in the file).  op is one of erosion, dilation, opening, closing,
gradient, laplace, white_tophat, black_tophat (the scipy function of the same
name, with grey_ / morphological_ in front where scipy has it).  size and
origin hold one value (same for every spatial axis) or one per spatial axis; a
missing size / origin / footprint / structure key means the argument is not
given.  batch leading axes are independent images: the expected output is
scipy applied to each image.

Values respect ndforge's rule (c): with a structure on an integer dtype every
intermediate input +- structure (and cval +- structure) of every min/max step
stays inside the dtype's range, since that is where scipy is exact: for
opening / closing / the tophats, whose second step filters the first step's
output, the margin is twice the largest structure value.  The final NumPy
arithmetic of the composite ops (gradient, laplace, tophats) may wrap around:
that is scipy's exact result.  NaN never appears here (scipy leaves it
undefined; test_grey.c tests ndforge's NaN policy itself).

Usage: oracle_grey.py --seed S --out DIR [--cases N]
"""
import os
import sys
import warnings

import numpy as np

import oracle_common
import scipy
import scipy.ndimage as ndi

DTYPES = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "float64", "int64", "uint64"]
MODES = ["reflect", "constant", "nearest", "mirror", "wrap",
         "grid-mirror", "grid-constant", "grid-wrap"]
# Largest |structure value| per integer dtype (kept well inside the range).
STRUCT_MAX = {"uint8": 20, "int8": 12, "uint16": 1500, "int16": 1500,
              "uint32": 10 ** 6, "int32": 10 ** 6}
# The ops: manifest name -> scipy function.  Composites run two min/max
# passes; STEPS_IN_SERIES says how many of them feed each other (opening,
# closing and the tophats filter a filtered image: their integer margin for
# non-flat structures doubles).
OPS = {
    "erosion": ndi.grey_erosion,
    "dilation": ndi.grey_dilation,
    "opening": ndi.grey_opening,
    "closing": ndi.grey_closing,
    "gradient": ndi.morphological_gradient,
    "laplace": ndi.morphological_laplace,
    "white_tophat": ndi.white_tophat,
    "black_tophat": ndi.black_tophat,
}
STEPS_IN_SERIES = {"erosion": 1, "dilation": 1, "opening": 2, "closing": 2, "gradient": 1,
                   "laplace": 1, "white_tophat": 2, "black_tophat": 2}
# Cost bound per case: output elements x taps (keeps the whole run fast).
WORK_BUDGET = 250_000


def is_int(dtype):
    return np.dtype(dtype).kind in "iu"


def draw_axis_len(rng):
    r = rng.random()
    if r < 0.15:
        return 1
    if r < 0.30:
        return 2
    return int(rng.integers(3, 13))


def draw_elem_len(rng, n):
    """Element length along an axis of image length n: mostly 1..7, sometimes
    larger than the image (up to about 5n)."""
    r = rng.random()
    if r < 0.12:  # large elements (van Herk/Gil-Werman passes), up to 31
        return int(rng.integers(8, 32))
    r = rng.random()
    if r < 0.04:
        return int(rng.integers(2 * n + 1, 5 * n + 6))
    if r < 0.12:
        return int(n + rng.integers(1, n + 4))
    if r < 0.22:
        return 1
    return int(rng.integers(1, 8))


def origin_range(s):
    return -(s // 2), (s - 1) // 2


def draw_values(rng, dtype, shape, margin):
    """Random input values; for integers a random part of [lo+margin, hi-margin]."""
    dt = np.dtype(dtype)
    if dtype in oracle_common.WIDE:
        return oracle_common.draw_wide(rng, dtype, shape)
    if dt.kind == "f":
        v = rng.standard_normal(shape) * 100.0
        v[v == 0] = 1.0
        if rng.random() < 0.1 and v.size > 0:  # a few infinities
            k = max(1, v.size // 20)
            idx = rng.integers(0, v.size, k)
            v.flat[idx] = rng.choice([np.inf, -np.inf], k)
        return v.astype(dt)
    info = np.iinfo(dt)
    lo, hi = int(info.min) + margin, int(info.max) - margin
    r = rng.random()
    if r < 0.2:  # narrow range: many ties, extremes of the data repeat
        a = int(rng.integers(lo, hi + 1))
        b = min(hi, a + int(rng.integers(0, 8)))
        return rng.integers(a, b + 1, size=shape, dtype=np.int64).astype(dt)
    if r < 0.6 or hi - lo < 1000:  # the whole allowed range
        return rng.integers(lo, hi + 1, size=shape, dtype=np.int64).astype(dt)
    # a random large sub-range
    w = (hi - lo) * rng.uniform(0.3, 1.0)
    a = int(rng.uniform(lo, hi - w))
    return rng.integers(a, int(a + w) + 1, size=shape, dtype=np.int64).astype(dt)


def draw_cval(rng, dtype, data, margin):
    dt = np.dtype(dtype)
    if dtype in oracle_common.WIDE:  # an integer a double holds; below or among the data's values
        return float(int(data.flat[0]) // 4096 * 4096) if data.size and rng.random() < 0.5 else \
            float(rng.integers(0, 1000))
    if dt.kind == "f":
        r = rng.random()
        if r < 0.08:
            return float(rng.choice([np.inf, -np.inf]))
        c = float(rng.standard_normal() * 100.0)
        return c if c != 0.0 else 0.5
    info = np.iinfo(dt)
    lo, hi = int(info.min) + margin, int(info.max) - margin
    r = rng.random()
    if r < 0.15:
        return 0.0 if lo <= 0 <= hi else float(lo)
    if r < 0.3:
        return float(rng.choice([lo, hi]))
    if data.size and r < 0.7:  # inside the data's range, sometimes non-integer
        a, b = int(data.min()), int(data.max())
        c = float(rng.integers(a, b + 1))
        if rng.random() < 0.4:
            c += float(rng.choice([0.25, 0.5, 0.75]))
            if c > hi:
                c -= 1.0
        return c
    return float(rng.integers(lo, hi + 1))


def draw_structure(rng, dtype, eshape):
    if rng.random() < 0.1:
        return np.zeros(eshape, np.float64)  # flat, but through the structure path
    if is_int(dtype):
        m = STRUCT_MAX[dtype]
        m = int(rng.integers(0, m + 1)) if rng.random() < 0.5 else m
        q = rng.integers(-4 * m, 4 * m + 1, size=eshape)
        st = q.astype(np.float64) / 4.0
        if rng.random() < 0.4:
            st = np.trunc(st)
        return st
    if rng.random() < 0.5:
        return rng.integers(-200, 201, size=eshape).astype(np.float64) / 4.0
    return rng.standard_normal(eshape) * 10.0


def draw_footprint(rng, eshape):
    if rng.random() < 0.12:
        fp = np.ones(eshape, bool)
    else:
        p = rng.uniform(0.25, 0.9)
        fp = rng.random(eshape) < p
        if not fp.any():
            fp.flat[int(rng.integers(0, fp.size))] = True
    return fp


def store_footprint(rng, fp):
    """The footprint as written to disk: any dtype, non-zero = in."""
    r = rng.random()
    if r < 0.6:
        return fp
    if r < 0.75:
        return (fp * rng.integers(1, 256, fp.shape)).astype(np.uint8)
    if r < 0.9:
        v = rng.choice([-3.5, 0.25, 1.0, 7.0], fp.shape)
        return np.where(fp, v, 0.0).astype(np.float64)
    return np.where(fp, rng.integers(-5, 6, fp.shape) | 1, 0).astype(np.int16)


def store_structure(rng, st):
    r = rng.random()
    if r < 0.8 or not np.all(st == np.round(st * 4) / 4):
        return st
    if r < 0.9:
        return st.astype(np.float32)  # multiples of 1/4 convert exactly
    if np.all(st == np.trunc(st)) and np.abs(st).max(initial=0) < 30000:
        return st.astype(np.int16)
    return st


def draw_origins(rng, eshape, box):
    """Returns (origin as written to the manifest or None, scipy's origin)."""
    nsp = len(eshape)
    r = rng.random()
    if r < 0.25:
        return None, 0
    if r < 0.45:
        # one value for every axis: valid for all axes that check it
        checked = [s for s in eshape if s > 1 or not box]
        lo = max([origin_range(s)[0] for s in checked], default=-2)
        hi = min([origin_range(s)[1] for s in checked], default=2)
        o = int(rng.integers(lo, hi + 1))
        return [o], o
    orig = []
    for s in eshape:
        if box and s == 1 and rng.random() < 0.5:
            orig.append(int(rng.integers(-3, 4)))  # ignored by scipy (rule d)
        else:
            lo, hi = origin_range(s)
            orig.append(int(rng.integers(lo, hi + 1)))
    return orig, list(orig)


# The composites of exact 64-bit steps, in NumPy's wrapping arithmetic of the dtype.
WIDE_COMPOSITE = {
    "gradient": lambda x, e, d, o, c: d - e, "laplace": lambda x, e, d, o, c: d + e - x - x,
    "white_tophat": lambda x, e, d, o, c: x - o, "black_tophat": lambda x, e, d, o, c: c - x,
}


def run_scipy(op, img, kw):
    if img.dtype.name not in oracle_common.WIDE:
        return OPS[op](img, **kw)
    kw = dict(kw)
    cval = kw.pop("cval")
    if op not in WIDE_COMPOSITE:
        return oracle_common.by_ranks(OPS[op], img, cval, **kw)
    steps = [oracle_common.by_ranks(f, img, cval, **kw)
             for f in (ndi.grey_erosion, ndi.grey_dilation, ndi.grey_opening, ndi.grey_closing)]
    with np.errstate(over="ignore"):
        return WIDE_COMPOSITE[op](img, *steps)


def draw_case(rng):
    dtype = str(rng.choice(DTYPES))
    op = str(rng.choice(list(OPS)))
    mode = str(rng.choice(MODES))
    nsp = int(rng.integers(1, 5))
    nbatch = int(rng.choice([0, 0, 1, 2]))
    bshape = [int(rng.integers(1, 4)) for _ in range(nbatch)]
    spatial = [draw_axis_len(rng) for _ in range(nsp)]
    if nsp <= 2 and rng.random() < 0.12:  # now and then a longer image
        spatial = [int(rng.integers(13, 400 if nsp == 1 else 70)) for _ in range(nsp)]
    eshape = [draw_elem_len(rng, n) for n in spatial]
    kind = str(rng.choice(["size", "footprint", "structure", "structure+footprint", "iterated"],
                          p=[0.3, 0.27, 0.18, 0.13, 0.12]))
    iterated = None
    if kind == "iterated":  # iterate_structure(generate_binary_structure(nsp, c), k): diamonds, crosses, boxes
        k = int(rng.integers(1, {1: 16, 2: 16, 3: 4, 4: 2}[nsp]))
        iterated = ndi.iterate_structure(ndi.generate_binary_structure(nsp, int(rng.integers(1, nsp + 1))), k)
        eshape = list(iterated.shape)
        if any(n > 1 and e > 4 * n for e, n in zip(eshape, spatial)):
            return None
        kind = "footprint"

    # scipy's N-D (non-box) path maps reflect wrongly for taps 4n or more
    # before the image (NI_InitFilterOffsets); an element of length e reaches
    # at most e-1 before, so keep e <= 4n.
    eshape = [e if (n == 1 or e <= 4 * n) else 4 * n for e, n in zip(eshape, spatial)]
    scalar_size = kind == "size" and rng.random() < 0.35
    if scalar_size:
        eshape = [int(rng.choice(eshape))] * nsp
        if any(n > 1 and e > 4 * n for e, n in zip(eshape, spatial)):
            return None

    nelem = int(np.prod(bshape + spatial))
    taps = int(np.prod(eshape)) if kind != "size" else int(sum(eshape))
    if nelem * max(taps, 1) > WORK_BUDGET:
        return None
    if dtype in oracle_common.WIDE and kind.startswith("structure"):
        return None  # the weighted 64-bit ops compute in double: scipy's own rounding differs there

    case = {"op": op, "dtype": dtype, "mode": mode, "batch": nbatch, "kind": kind}
    kw = {"mode": mode}
    fp = st = None
    size_field = None
    box = False
    if kind == "size":
        box = True
        if scalar_size:
            size_field = [eshape[0]]
            kw["size"] = eshape[0]
        else:
            size_field = list(eshape)
            kw["size"] = tuple(eshape)
    else:
        if kind in ("footprint", "structure+footprint"):
            fp = draw_footprint(rng, eshape) if iterated is None else iterated
            if kind == "footprint" and fp.all():
                box = True
        if kind.startswith("structure"):
            st = draw_structure(rng, dtype, eshape)
        if rng.random() < 0.2:  # size is ignored when footprint/structure is given
            size_field = [int(rng.integers(1, 6))]
            kw["size"] = size_field[0]

    margin = 0
    if st is not None and is_int(dtype):
        margin = STEPS_IN_SERIES[op] * int(np.ceil(np.abs(st).max(initial=0))) + 1
    data = draw_values(rng, dtype, bshape + spatial, margin)
    cval = draw_cval(rng, dtype, data, margin)
    kw["cval"] = cval
    if iterated is None or rng.random() < 0.4:
        origin_field, origin = draw_origins(rng, eshape, box)
    else:  # origin 0: the element is decomposed
        origin_field, origin = None, 0
    if origin_field is not None:
        kw["origin"] = origin if len(origin_field) > 1 else origin_field[0]

    fp_disk = st_disk = None
    if fp is not None:
        fp_disk = store_footprint(rng, fp)
        kw["footprint"] = fp_disk
    if st is not None:
        st_disk = store_structure(rng, st)
        kw["structure"] = st_disk

    out = np.empty_like(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            for b in np.ndindex(*bshape):
                out[b] = run_scipy(op, data[b], kw)
        except (ValueError, RuntimeError):
            return None  # a combination scipy rejects: draw another case

    case.update(shape=list(data.shape), size=size_field, origin=origin_field, cval=cval)
    if rng.random() < 0.15 and data.ndim > 1:
        data = np.asfortranarray(data)  # exercises Fortran-order .npy reading
    return case, data, fp_disk, st_disk, out


def main():
    args, rng = oracle_common.start(__doc__, 1000)
    lines = []
    tries = 0
    while len(lines) < args.cases:
        tries += 1
        if tries > 50 * args.cases + 1000:
            sys.exit("oracle_grey.py: could not draw enough cases")
        got = draw_case(rng)
        if got is None:
            continue
        case, data, fp, st, out = got
        i = len(lines)
        f_in, f_out = f"c{i}_in.npy", f"c{i}_out.npy"
        np.save(os.path.join(args.out, f_in), data)
        np.save(os.path.join(args.out, f_out), out)
        fields = [f"id={i}", f"op={case['op']}", f"dtype={case['dtype']}",
                  f"shape={oracle_common.fmt_list(case['shape'])}", f"batch={case['batch']}",
                  f"kind={case['kind']}", f"mode={case['mode']}", f"cval={case['cval']!r}"]
        if case["size"] is not None:
            fields.append(f"size={oracle_common.fmt_list(case['size'])}")
        if case["origin"] is not None:
            fields.append(f"origin={oracle_common.fmt_list(case['origin'])}")
        if fp is not None:
            np.save(os.path.join(args.out, f"c{i}_fp.npy"), fp)
            fields.append(f"footprint=c{i}_fp.npy")
        if st is not None:
            np.save(os.path.join(args.out, f"c{i}_st.npy"), st)
            fields.append(f"structure=c{i}_st.npy")
        fields += [f"input={f_in}", f"expected={f_out}"]
        lines.append(" ".join(fields))
    with open(os.path.join(args.out, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    per_op = {op: 0 for op in OPS}
    for line in lines:
        per_op[line.split(" op=", 1)[1].split(" ", 1)[0]] += 1
    print(f"oracle_grey.py: {len(lines)} cases, seed {args.seed}, scipy {scipy.__version__}, "
          f"numpy {np.__version__}; per op: " + ", ".join(f"{k} {v}" for k, v in per_op.items()),
          file=sys.stderr)


if __name__ == "__main__":
    main()
