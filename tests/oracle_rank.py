#!/usr/bin/env python3
"""scipy.ndimage oracle for tests/test_rank.c.

Draws random cases of the rank filters (median_filter, rank_filter,
percentile_filter), runs scipy on them and writes, per case, the input, the
footprint when the case has one, and the expected output as .npy files, plus
one manifest line of space-separated key=value pairs that test_rank.c parses:

  id=7 op=percentile dtype=int16 shape=2,5,9 batch=1 mode=grid-wrap cval=-3.0
  size=3 origin=0,-1 footprint=c7_fp.npy percentile=-37.5 taps=6 rank_used=3
  ref=scipy input=c7_in.npy expected=c7_out.npy

(one line in the file).  op is median, rank (key rank=R, the integer passed)
or percentile (key percentile=P, a float written with repr, so it reads back
exactly).  size and origin hold one value (same for every spatial axis) or one
per spatial axis; a missing size / origin / footprint key means the argument
is not given (scipy's None / 0).  When both size and footprint are given the
footprint wins (scipy warns and ignores size).  batch leading axes are
independent images: the expected output is the reference applied to each
image.  cval is written with repr (inf and -inf included); for integer dtypes
it lies inside the dtype's range (ndforge rejects the others), non-integers
included (they truncate: order statistics commute with a non-decreasing
conversion, so converting cval first gives scipy's result).  taps (the number
of true footprint entries) and rank_used (the rank scipy selects) are
informational.

expected=FILE: ndforge must return NDF_OK and exactly this output (same dtype).
expect=error arg=NAME (no expected file): scipy raises for this case (an
origin outside the footprint, a rank outside [-n, n), a percentile outside
[-100, 100]); ndforge must return NDF_EINVAL naming NAME (origin, rank or
percentile) and leave the output untouched.

The reference (ref= key):
  ref=scipy    scipy's own median_filter / rank_filter / percentile_filter.
               For every such case the oracle also computes the definition
               (ndi.generic_filter selecting element `rank` of np.sort of the
               window, same footprint, mode, cval, origin) and exits with an
               error when the two differ (an oracle bug).
  ref=generic  the definition above, used for every 1-D case: scipy >= 1.14
               sends 1-D inputs through a fast path (_rank_filter_1d) that
               treats the footprint as full (footprint.size taps) and has its
               own boundary code; ndforge follows the documented N-D
               semantics, and generic_filter (no fast path, same offsets code
               as the N-D rank filter) gives the same expectation on scipy
               1.10 and 1.18.  Where scipy's own 1-D call differs from it the
               case gets scipy1d=differs (informational; counted on stderr).

Values: every dtype, with many ties (narrow ranges), the ends of integer
ranges, +-inf for floats; never NaN (scipy leaves it undefined: test_rank.c
tests ndforge's NaN policies itself) and never -0.0 (ties of -0.0 and 0.0 make
the sign bit of scipy's result arbitrary).

Usage: oracle_rank.py --seed S --out DIR [--cases N]
"""
import os
import sys
import warnings

import numpy as np

import oracle_common
import scipy
import scipy.ndimage as ndi

OPS = ["median", "rank", "percentile"]
DTYPES = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "float64", "int64", "uint64"]
MODES = ["reflect", "constant", "nearest", "mirror", "wrap",
         "grid-mirror", "grid-constant", "grid-wrap"]
# Cost bound per case: elements x taps.
WORK_BUDGET = 30_000
# Share of cases that scipy rejects (expect=error).
ERROR_RATE = 0.06


def is_int(dtype):
    return np.dtype(dtype).kind in "iu"


def origin_range(s):
    """scipy's check: s // 2 + origin in [0, s)."""
    return -(s // 2), (s - 1) // 2


def draw_spatial(rng, nsp):
    hi = {1: 60, 2: 14, 3: 8}[nsp]
    shape = []
    for _ in range(nsp):
        r = rng.random()
        if r < 0.1:
            shape.append(1)
        elif r < 0.2:
            shape.append(2)
        else:
            shape.append(int(rng.integers(3, hi + 1)))
    return shape


def no_negative_zero(v):
    return np.where(v == 0, np.zeros((), v.dtype), v).astype(v.dtype)


def draw_values(rng, dtype, shape):
    dt = np.dtype(dtype)
    if dtype in oracle_common.WIDE:
        return oracle_common.draw_wide(rng, dtype, shape)
    if dt.kind == "f":
        r = rng.random()
        if r < 0.35:  # small integers: many ties
            v = rng.integers(-3, 4, shape).astype(np.float64)
        elif r < 0.55:  # halves
            v = rng.integers(-6, 7, shape).astype(np.float64) / 2.0
        elif r < 0.65:  # the ends of the dtype
            big = float(np.finfo(dt).max)
            tiny = float(np.finfo(dt).tiny)
            v = rng.choice([-big, big, tiny, -tiny, 1.0, -1.0, 0.0], shape)
        else:
            v = rng.standard_normal(shape) * 100.0
        if rng.random() < 0.35 and v.size:  # infinities
            k = max(1, int(v.size * rng.uniform(0.02, 0.3)))
            idx = rng.integers(0, v.size, k)
            v.flat[idx] = rng.choice([np.inf, -np.inf], k)
        return no_negative_zero(v.astype(dt))
    info = np.iinfo(dt)
    lo, hi = int(info.min), int(info.max)
    r = rng.random()
    if r < 0.45:  # narrow range (many ties), anywhere in the dtype
        w = int(rng.integers(0, 6))
        where = rng.random()
        if where < 0.2:
            a = lo
        elif where < 0.4:
            a = hi - w
        elif where < 0.7 and lo <= 0:
            a = int(rng.integers(max(lo, -3), 1))
        else:
            a = int(rng.integers(lo, hi - w + 1))
        return rng.integers(a, a + w + 1, size=shape, dtype=np.int64).astype(dt)
    if r < 0.75:  # the whole range
        return rng.integers(lo, hi + 1, size=shape, dtype=np.int64).astype(dt)
    # the ends and a few small values
    pool = np.array([lo, lo + 1, hi - 1, hi, 0, 1, 2], np.int64)
    return rng.choice(pool, shape).astype(dt)


def draw_cval(rng, dtype, data):
    dt = np.dtype(dtype)
    if dtype in oracle_common.WIDE:  # an integer a double holds; among the data's values or below
        return float(int(data.flat[0]) // 4096 * 4096) if data.size and rng.random() < 0.5 else \
            float(rng.integers(0, 1000))
    if dt.kind == "f":
        r = rng.random()
        if r < 0.1:
            return float(rng.choice([np.inf, -np.inf]))
        if r < 0.45:
            c = float(rng.integers(-6, 7)) / 2.0
        elif r < 0.55:
            c = 0.1  # not a float32 value: converted first
        else:
            c = float(rng.standard_normal() * 100.0)
        return c if c != 0.0 else 0.0  # never -0.0
    info = np.iinfo(dt)
    lo, hi = int(info.min), int(info.max)
    r = rng.random()
    if r < 0.15:
        return 0.0
    if r < 0.3:
        return float(rng.choice([lo, hi]))
    if r < 0.75 and data.size:  # inside the data's range: ties with the data
        a, b = int(data.min()), int(data.max())
        c = int(rng.integers(max(lo, a - 1), min(hi, b + 1) + 1))
        if rng.random() < 0.35:  # a non-integer that truncates to c
            frac = float(rng.choice([0.25, 0.5, 0.75]))
            if c > 0 and c < hi:
                return float(c) + frac
            if c < 0 and c > lo:
                return float(c) - frac
        return float(c)
    return float(rng.integers(lo, hi + 1))


def draw_footprint(rng, eshape):
    if rng.random() < 0.15:
        fp = np.ones(eshape, bool)
    else:
        fp = rng.random(eshape) < rng.uniform(0.2, 0.9)
        if not fp.any():
            fp.flat[int(rng.integers(0, fp.size))] = True
    return fp


def store_footprint(rng, fp):
    """The footprint as written to disk: any dtype, non-zero = in."""
    r = rng.random()
    if r < 0.55:
        return fp.copy()
    if r < 0.7:
        return (fp * rng.integers(1, 256, fp.shape)).astype(np.uint8)
    if r < 0.85:
        v = rng.choice([-3.5, 0.25, 1.0, 7.0], fp.shape)
        z = np.where(rng.random(fp.shape) < 0.3, -0.0, 0.0)
        return np.where(fp, v, z).astype(np.float64)
    return np.where(fp, rng.integers(-5, 6, fp.shape) | 1, 0).astype(np.int16)


def draw_origin(rng, eshape):
    """Returns (origin as written to the manifest or None, scipy's origin list)."""
    nsp = len(eshape)
    r = rng.random()
    if r < 0.3:
        return None, [0] * nsp
    if r < 0.5:
        lo = max(origin_range(s)[0] for s in eshape)
        hi = min(origin_range(s)[1] for s in eshape)
        o = int(rng.integers(lo, hi + 1))
        return [o], [o] * nsp
    o = [int(rng.integers(origin_range(s)[0], origin_range(s)[1] + 1)) for s in eshape]
    return o, list(o)


def bad_origin(rng, eshape):
    """An origin list with one axis outside the footprint."""
    nsp = len(eshape)
    o = [int(rng.integers(origin_range(s)[0], origin_range(s)[1] + 1)) for s in eshape]
    d = int(rng.integers(0, nsp))
    lo, hi = origin_range(eshape[d])
    o[d] = hi + int(rng.integers(1, 3)) if rng.random() < 0.5 else lo - int(rng.integers(1, 3))
    return o


def draw_percentile(rng, n):
    r = rng.random()
    if r < 0.08:
        return 0.0
    if r < 0.16:
        return 100.0
    if r < 0.22:
        return -100.0
    if r < 0.3:
        return 50.0
    if r < 0.5:  # 100 k / n, and its negative twin: where int() truncation bites
        k = int(rng.integers(0, n + 1))
        p = 100.0 * k / n
        return -p if rng.random() < 0.4 and p > 0 else p
    if r < 0.62:
        return float(rng.choice([12.5, 37.5, 0.1, 99.9, -0.1, -99.9, 33.3, -66.7, 1e-9, -1e-9,
                                 99.99999999999999, -50.0, 25.0, 75.0]))
    return float(rng.uniform(-100.0, 100.0))


def rank_of(op, n, rank=None, percentile=None):
    """scipy's _rank_filter arithmetic; None when scipy rejects the value."""
    if op == "median":
        return n // 2
    if op == "percentile":
        p = percentile
        if p < 0.0:
            p += 100.0
        if p < 0 or p > 100:
            return None
        r = n - 1 if p == 100.0 else int(float(n) * p / 100.0)
    else:
        r = rank
    if r < 0:
        r += n
    if r < 0 or r >= n:
        return None
    return r


def generic_ref(img, fp, r, mode, cval, origin):
    def pick(v):
        return np.sort(v)[r]
    return ndi.generic_filter(img, pick, footprint=fp, mode=mode, cval=cval, origin=origin)


def scipy_call(op, img, kw, rank, percentile):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if op == "median":
            return ndi.median_filter(img, **kw)
        if op == "rank":
            return ndi.rank_filter(img, rank, **kw)
        return ndi.percentile_filter(img, percentile, **kw)


def draw_case(rng, stats):
    op = str(rng.choice(OPS))
    dtype = str(rng.choice(DTYPES))
    mode = str(rng.choice(MODES))
    nsp = int(rng.choice([1, 1, 2, 2, 2, 3, 3]))
    nbatch = int(rng.choice([0, 0, 0, 1, 2]))
    bshape = [int(rng.integers(1, 4)) for _ in range(nbatch)]
    spatial = draw_spatial(rng, nsp)
    shape = bshape + spatial

    # The element: size (one value or one per axis) or a footprint; sizes 1..5.
    use_fp = rng.random() < 0.55
    size_field = None
    fp_disk = None
    if use_fp:
        eshape = [int(rng.integers(1, 6)) for _ in range(nsp)]
        fp = draw_footprint(rng, eshape)
        fp_disk = store_footprint(rng, fp)
        if rng.random() < 0.15:  # ignored: the footprint wins
            size_field = [int(rng.integers(1, 6))]
    else:
        if rng.random() < 0.4:
            s = int(rng.integers(1, 6))
            eshape = [s] * nsp
            size_field = [s]
        else:
            eshape = [int(rng.integers(1, 6)) for _ in range(nsp)]
            size_field = list(eshape)
        fp = np.ones(eshape, bool)
    n = int(fp.sum())
    if int(np.prod(shape)) * n > WORK_BUDGET:
        return None

    err_arg = None
    origin_field, origin = draw_origin(rng, eshape)
    if rng.random() < ERROR_RATE:
        origin = bad_origin(rng, eshape)
        origin_field = origin if (nsp > 1 or rng.random() < 0.5) else [origin[0]]
        err_arg = "origin"

    rank = percentile = None
    if op == "rank":
        r = rng.random()
        if err_arg is None and r < ERROR_RATE * 1.5:
            rank = int(rng.choice([n, -n - 1, n + 3, -n - 7]))
            err_arg = "rank"
        elif r < 0.2:
            rank = 0
        elif r < 0.35:
            rank = n - 1
        elif r < 0.45:
            rank = -1
        elif r < 0.52:
            rank = -n
        else:
            rank = int(rng.integers(-n, n))
    elif op == "percentile":
        if err_arg is None and rng.random() < ERROR_RATE * 1.5:
            percentile = float(rng.choice([100.5, -100.5, 1000.0, -100.0 - 1e-9, 100.0 + 1e-9, 250.0]))
            err_arg = "percentile"
        else:
            percentile = draw_percentile(rng, n)

    data = draw_values(rng, dtype, shape)
    cval = draw_cval(rng, dtype, data)

    kw = {"mode": mode, "cval": cval}
    if size_field is not None:
        kw["size"] = size_field[0] if len(size_field) == 1 else tuple(size_field)
    if fp_disk is not None:
        kw["footprint"] = fp_disk
    if origin_field is not None:
        kw["origin"] = origin_field[0] if len(origin_field) == 1 else list(origin_field)

    case = {"op": op, "dtype": dtype, "mode": mode, "shape": shape, "batch": nbatch, "cval": cval,
            "size": size_field, "origin": origin_field, "rank": rank, "percentile": percentile,
            "taps": n, "err": err_arg, "ref": None, "scipy1d": None}

    if err_arg is not None:
        img = data[tuple([0] * nbatch)]
        try:
            scipy_call(op, img, kw, rank, percentile)
        except (ValueError, RuntimeError):
            stats["errors"] += 1
            return case, data, fp_disk, None
        sys.exit(f"oracle_rank.py: scipy accepted a case drawn to be invalid ({err_arg}): {case}; an oracle bug")

    r_used = rank_of(op, n, rank, percentile)
    if r_used is None:
        sys.exit(f"oracle_rank.py: rank arithmetic rejects a valid case {case}; an oracle bug")
    case["rank_used"] = r_used

    out = np.empty_like(data)
    ref_kind = "generic" if nsp == 1 else "scipy"
    differs1d = False
    for b in np.ndindex(*bshape):
        img = data[b]
        if dtype in oracle_common.WIDE:  # exact: both references on the values' ranks
            kwr = {k: v for k, v in kw.items() if k != "cval"}
            g = oracle_common.by_ranks(lambda x, cval: generic_ref(x, fp, r_used, mode, cval, origin), img, cval)
            try:
                s = oracle_common.by_ranks(lambda x, **k: scipy_call(op, x, dict(kwr, **k), rank, percentile),
                                           img, cval)
            except IndexError:
                # not a rank of the image: scipy 1.17-1.18's 1-D fast path in mirror mode on a line of
                # one sample with a window of 3 or 4 reads outside the line (memory, varying by run)
                if ref_kind == "scipy":
                    raise
                s = None
        else:
            g = generic_ref(img, fp, r_used, mode, cval, origin)
            s = scipy_call(op, img, kw, rank, percentile)
        if s is not None and s.dtype != img.dtype:
            sys.exit(f"oracle_rank.py: scipy returned {s.dtype} for a {img.dtype} input")
        if ref_kind == "scipy":
            if not np.array_equal(s, g):
                sys.exit(f"oracle_rank.py: scipy's {op}_filter differs from the generic_filter definition "
                         f"(image {b}) in an N-D case {case}; an oracle bug")
            out[b] = s
        else:
            if s is None or not np.array_equal(s, g):
                differs1d = True
            out[b] = g
    case["ref"] = ref_kind
    if ref_kind == "generic":
        stats["generic"] += 1
        if differs1d:
            case["scipy1d"] = "differs"
            stats["scipy1d_differs"] += 1
    if rng.random() < 0.15 and data.ndim > 1:
        data = np.asfortranarray(data)  # exercises Fortran-order .npy reading
    return case, data, fp_disk, out


def main():
    args, rng = oracle_common.start(__doc__, 500)
    stats = {"errors": 0, "generic": 0, "scipy1d_differs": 0}
    lines = []

    def save(name, a):
        np.save(os.path.join(args.out, name), a)
        return name

    tries = 0
    while len(lines) < args.cases:
        tries += 1
        if tries > 50 * args.cases + 1000:
            sys.exit("oracle_rank.py: could not draw enough cases")
        got = draw_case(rng, stats)
        if got is None:
            continue
        case, data, fp_disk, out = got
        i = len(lines)
        fields = [f"id={i}", f"op={case['op']}", f"dtype={case['dtype']}",
                  f"shape={oracle_common.fmt_list(case['shape'])}", f"batch={case['batch']}",
                  f"mode={case['mode']}", f"cval={case['cval']!r}"]
        if case["size"] is not None:
            fields.append(f"size={oracle_common.fmt_list(case['size'])}")
        if case["origin"] is not None:
            fields.append(f"origin={oracle_common.fmt_list(case['origin'])}")
        if fp_disk is not None:
            fields.append("footprint=" + save(f"c{i}_fp.npy", fp_disk))
        if case["rank"] is not None:
            fields.append(f"rank={case['rank']}")
        if case["percentile"] is not None:
            fields.append(f"percentile={case['percentile']!r}")
        fields.append(f"taps={case['taps']}")
        fields.append("input=" + save(f"c{i}_in.npy", data))
        if case["err"] is not None:
            fields += ["expect=error", f"arg={case['err']}"]
        else:
            fields += [f"rank_used={case['rank_used']}", f"ref={case['ref']}"]
            if case["scipy1d"]:
                fields.append(f"scipy1d={case['scipy1d']}")
            fields.append("expected=" + save(f"c{i}_out.npy", out))
        lines.append(" ".join(fields))

    with open(os.path.join(args.out, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    per_op = {op: 0 for op in OPS}
    for line in lines:
        per_op[line.split(" op=", 1)[1].split(" ", 1)[0]] += 1
    print(f"oracle_rank.py: {len(lines)} cases ({stats['errors']} rejected by scipy, "
          f"{stats['generic']} 1-D cases by the generic_filter definition, of which "
          f"{stats['scipy1d_differs']} differ from scipy's own 1-D call), seed {args.seed}, "
          f"scipy {scipy.__version__}, numpy {np.__version__}; per op: "
          + ", ".join(f"{k} {v}" for k, v in per_op.items()), file=sys.stderr)


if __name__ == "__main__":
    main()
