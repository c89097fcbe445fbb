#!/usr/bin/env python3
"""scipy.ndimage oracle for tests/test_binary.c.

Draws random cases of the binary ops (binary_erosion, binary_dilation,
binary_opening, binary_closing, binary_propagation, binary_fill_holes,
binary_hit_or_miss), runs scipy on them and writes, per case, the input, the
structure(s) and mask when the case has them, and scipy's output as .npy
files, plus one manifest line of space-separated key=value pairs that
test_binary.c parses:

  id=7 op=dilation dtype=int16 shape=2,5,9 batch=1 iterations=-1
  border_value=1 brute_force=0 structure=c7_st.npy origin=0,-1 mask=c7_mask.npy
  input=c7_in.npy expected=c7_out.npy

(one line in the file).  op is erosion, dilation, opening, closing,
propagation, fill_holes or hit_or_miss (scipy's binary_<op>).  origin holds
one value (same for every spatial axis) or one per spatial axis; a missing
structure / origin / mask key means the argument is not given (scipy's
None / 0).  hit_or_miss uses structure (structure1), structure2, origin
(origin1) and origin2 (missing: scipy's origin2=None, i.e. origin1).  batch
leading axes are independent images: the expected output is scipy applied to
each image (the mask file has the full input shape).  Keys an op does not use
are not written.

expected=FILE: ndforge must return NDF_OK and exactly this (bool) output.
expect=cycle (no expected file): iterations < 1 and, for at least one image,
the sequence of steps cycles instead of reaching a fixed point; scipy would
loop forever, ndforge must return NDF_ENOTSUP.

Besides the random cases the manifest lists, deterministically:
  op=generate_binary_structure rank=R connectivity=C expected=FILE
    for every rank 1..4 and connectivity -1..rank+1
  op=iterate_structure structure=FILE iterations=N [origin=LIST
    origin_out=LIST] expected=FILE
    (random structures; origin_out is scipy's returned origin)

About scipy (1.10 and others): with iterations != 1 and brute_force=False,
scipy uses a "changed-pixel coordinate list" (binary_erosion2) that gives
wrong results for some off-centre cases with border_value=1 and can even
corrupt the heap (double free / segfault), also through binary_propagation and
binary_fill_holes, which always take that path.  ndforge documents that
brute_force does not change results, so the reference here is the definition:
repeated single passes (scipy's iterations=1 call, one C pass each) until the
count is reached or nothing changes -- scipy's brute_force=True loop, which
this oracle also calls (guarded by a timer) to cross-check every case that
terminates.  The coordinate-list path is never called.

Usage: oracle_binary.py --seed S --out DIR [--cases N]
"""
import os
import signal
import sys

import numpy as np

import oracle_common
import scipy
import scipy.ndimage as ndi

OPS = ["erosion", "dilation", "opening", "closing", "propagation", "fill_holes", "hit_or_miss"]
OP_WEIGHTS = [0.2, 0.2, 0.13, 0.13, 0.12, 0.1, 0.12]
DTYPES = ["bool", "uint8", "int16", "float32"]
# Cost bound per case: elements x structure taps x passes.
WORK_BUDGET = 400_000
# Most passes an iterations < 1 case may take before the oracle gives up on it.
MAX_STEPS = 3000


class Cycle(Exception):
    pass


class GiveUp(Exception):
    pass


class Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise Timeout()


def guarded(fn, *a, **kw):
    """Calls a scipy function with a 20 s timer (scipy's brute-force loop is
    Python code, so the timer interrupts it between passes)."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, 20.0)
    try:
        return fn(*a, **kw)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


# ---------------------------------------------------------------------------
# Drawing inputs, structures, masks, origins


def draw_spatial(rng, nsp):
    hi = {1: 48, 2: 18, 3: 9, 4: 6}[nsp]
    shape = []
    for _ in range(nsp):
        r = rng.random()
        if r < 0.08:
            shape.append(1)
        elif r < 0.16:
            shape.append(2)
        else:
            shape.append(int(rng.integers(3, hi + 1)))
    return shape


def blobs(rng, shape, nbatch):
    return oracle_common.blobs(rng, shape, nbatch, (0.6, 2.5), (0.25, 0.8))


def draw_foreground(rng, shape, nbatch):
    r = rng.random()
    if r < 0.6:
        return blobs(rng, shape, nbatch)
    if r < 0.82:
        return rng.random(shape) < rng.uniform(0.2, 0.8)
    if r < 0.94:  # sparse: a few pixels (seeds)
        return rng.random(shape) < rng.uniform(0.0, 0.08)
    return np.full(shape, bool(rng.integers(0, 2)))


def encode(rng, fg, dtype):
    """The foreground as an array of dtype: non-zero values of several kinds
    for the foreground, zeros (and -0.0) for the background."""
    if dtype == "bool":
        return fg.copy()
    if dtype == "uint8":
        v = rng.choice(np.array([1, 2, 255, 128], np.uint8), fg.shape)
        return np.where(fg, v, 0).astype(np.uint8)
    if dtype == "int16":
        v = rng.choice(np.array([1, -1, 2, -300, 256], np.int16), fg.shape)
        return np.where(fg, v, 0).astype(np.int16)
    vals = [1.0, -1.0, 0.25, 2.0, -1e30, 1e-30]
    if rng.random() < 0.2:
        vals.append(1e-40)  # subnormal in float32: still non-zero
    v = rng.choice(np.array(vals, np.float32), fg.shape)
    bg = np.where(rng.random(fg.shape) < 0.3, np.float32(-0.0), np.float32(0.0))
    return np.where(fg, v, bg).astype(np.float32)


def origin_range(s):
    return -(s // 2), (s - 1) // 2


def draw_structure(rng, nsp, allow_empty):
    """Returns (structure as written to disk or None for the default, the bool
    structure scipy uses)."""
    r = rng.random()
    if r < 0.22:
        return None, ndi.generate_binary_structure(nsp, 1)
    if r < 0.45:
        c = int(rng.integers(0, nsp + 2))
        st = ndi.generate_binary_structure(nsp, c)
    else:
        eshape = [int(rng.integers(1, 5)) for _ in range(nsp)]
        if rng.random() < 0.1:
            eshape = [int(rng.integers(1, 3)) for _ in range(nsp)]
        if allow_empty and rng.random() < 0.07:
            st = np.zeros(eshape, bool)
        else:
            st = rng.random(eshape) < rng.uniform(0.2, 0.9)
            if not st.any() and not allow_empty:
                st.flat[int(rng.integers(0, st.size))] = True
    return store_bool(rng, st), st


def store_bool(rng, b):
    """A bool array as written to disk: any dtype, non-zero = in."""
    r = rng.random()
    if r < 0.55:
        return b.copy()
    if r < 0.7:
        return np.where(b, rng.choice(np.array([1, 2, 255], np.uint8), b.shape), 0).astype(np.uint8)
    if r < 0.85:
        return np.where(b, rng.choice(np.array([1, -1, 7], np.int16), b.shape), 0).astype(np.int16)
    z = np.where(rng.random(b.shape) < 0.3, np.float32(-0.0), np.float32(0.0))
    return np.where(b, rng.choice(np.array([0.5, 1.0, -2.0], np.float32), b.shape), z).astype(np.float32)


def draw_origin(rng, eshape):
    """Returns (origin as written to the manifest or None, scipy's origin as a
    list per axis)."""
    nsp = len(eshape)
    r = rng.random()
    if r < 0.4:
        return None, [0] * nsp
    if r < 0.6:
        lo = max(origin_range(s)[0] for s in eshape)
        hi = min(origin_range(s)[1] for s in eshape)
        o = int(rng.integers(lo, hi + 1))
        return [o], [o] * nsp
    o = [int(rng.integers(origin_range(s)[0], origin_range(s)[1] + 1)) for s in eshape]
    return o, list(o)


def draw_mask(rng, shape, nbatch):
    r = rng.random()
    if r < 0.5:
        m = rng.random(shape) < rng.uniform(0.3, 1.0)
    elif r < 0.85:
        m = blobs(rng, shape, nbatch) | (rng.random(shape) < 0.1)
    else:
        m = rng.random(shape) < 0.95
    # Masks hold values whose truth survives scipy's int8 conversion.
    return store_bool(rng, m), m


def origin_ok(o, eshape):
    return all(origin_range(s)[0] <= v <= origin_range(s)[1] for v, s in zip(o, eshape))


# ---------------------------------------------------------------------------
# The reference: repeated single scipy passes


def one_pass(kind, x, st, mask, bv, origin):
    f = ndi.binary_erosion if kind == "erosion" else ndi.binary_dilation
    return f(x, st, 1, mask, None, bv, list(origin))


def iterate(kind, x, st, mask, bv, origin, iterations):
    """scipy's brute-force loop for one image; raises Cycle when iterations < 1
    and the sequence returns to an earlier state that is not a fixed point."""
    cur = np.asarray(x) != 0
    if iterations >= 1:
        for _ in range(iterations):
            cur = one_pass(kind, cur, st, mask, bv, origin)
        return cur
    seen = {cur.tobytes()}
    for _ in range(MAX_STEPS):
        nxt = one_pass(kind, cur, st, mask, bv, origin)
        if np.array_equal(nxt, cur):
            return nxt
        key = nxt.tobytes()
        if key in seen:
            raise Cycle()
        seen.add(key)
        cur = nxt
    raise GiveUp()


def reference(op, img, p):
    st, mask, bv, origin, it = p["st"], p["mask"], p["bv"], p["origin"], p["iterations"]
    if op == "erosion":
        return iterate("erosion", img, st, mask, bv, origin, it)
    if op == "dilation":
        return iterate("dilation", img, st, mask, bv, origin, it)
    if op == "opening":
        t = iterate("erosion", img, st, mask, bv, origin, it)
        return iterate("dilation", t, st, mask, bv, origin, it)
    if op == "closing":
        t = iterate("dilation", img, st, mask, bv, origin, it)
        return iterate("erosion", t, st, mask, bv, origin, it)
    if op == "propagation":
        return iterate("dilation", img, st, mask, bv, origin, -1)
    if op == "fill_holes":
        m = np.logical_not(img)
        return np.logical_not(iterate("dilation", np.zeros(m.shape, bool), st, m, 1, origin, -1))
    if op == "hit_or_miss":
        return ndi.binary_hit_or_miss(img, p["st_disk"], p["st2_disk"], None, p["origin"],
                                      p["origin2_arg"])
    raise ValueError(op)


def scipy_call(op, img, p):
    """scipy's own public call (brute_force=True wherever iterations != 1)."""
    st, mask, bv, origin, it = p["st_disk"], p["mask"], p["bv"], p["origin_arg"], p["iterations"]
    bf = it != 1
    if op == "erosion":
        return ndi.binary_erosion(img, st, it, mask, None, bv, origin, bf)
    if op == "dilation":
        return ndi.binary_dilation(img, st, it, mask, None, bv, origin, bf)
    if op == "opening":
        return ndi.binary_opening(img, st, it, None, origin, mask, bv, bf)
    if op == "closing":
        return ndi.binary_closing(img, st, it, None, origin, mask, bv, bf)
    if op == "propagation":  # binary_propagation == binary_dilation(iterations=-1)
        return ndi.binary_dilation(img, st, -1, mask, None, bv, origin, True)
    if op == "fill_holes":  # binary_fill_holes, spelled out with brute_force=True
        m = np.logical_not(img)
        out = ndi.binary_dilation(np.zeros(m.shape, bool), st, -1, m, None, 1, origin, True)
        return np.logical_not(out)
    return None


# ---------------------------------------------------------------------------


def draw_case(rng, stats):
    op = str(rng.choice(OPS, p=OP_WEIGHTS))
    dtype = str(rng.choice(DTYPES))
    nsp = int(rng.choice([1, 2, 2, 3, 3, 4]))
    nbatch = int(rng.choice([0, 0, 0, 1, 2]))
    bshape = [int(rng.integers(1, 4)) for _ in range(nbatch)]
    spatial = draw_spatial(rng, nsp)
    large = op in ("propagation", "fill_holes", "erosion", "dilation") and nsp in (2, 3) \
        and rng.random() < 0.08
    if large:  # now and then a larger image: long propagation paths
        spatial = [int(rng.integers(30, 121) if nsp == 2 else rng.integers(12, 26)) for _ in range(nsp)]
        bshape = bshape[:1]
        nbatch = len(bshape)
    shape = bshape + spatial
    fg = draw_foreground(rng, shape, nbatch)
    if op == "fill_holes" and rng.random() < 0.5:
        fg = ~fg  # blobs of background inside foreground: holes
    data = encode(rng, fg, dtype)

    p = {"iterations": 1, "bv": 0, "mask": None, "mask_disk": None, "brute_force": 0,
         "st2_disk": None, "origin2_field": None, "origin2_arg": None}
    allow_empty = op in ("erosion", "dilation") or rng.random() < 0.3
    st_disk, st = draw_structure(rng, nsp, allow_empty)
    p["st_disk"], p["st"] = st_disk, st
    origin_field, origin = draw_origin(rng, list(st.shape))
    p["origin_field"], p["origin"] = origin_field, origin
    p["origin_arg"] = origin if origin_field is None or len(origin_field) > 1 else origin_field[0]
    if origin_field is None:
        p["origin_arg"] = 0

    if op in ("erosion", "dilation", "opening", "closing"):
        p["iterations"] = int(rng.choice([1, 1, 2, 5, -1, -1, 0]))
        p["brute_force"] = int(rng.integers(0, 2))
    if op in ("erosion", "dilation", "opening", "closing", "propagation"):
        p["bv"] = int(rng.integers(0, 2))
        if rng.random() < 0.5:
            p["mask_disk"], p["mask"] = draw_mask(rng, shape, nbatch)
    if op == "hit_or_miss":
        r = rng.random()
        if r < 0.4:
            st2 = np.logical_not(st)  # scipy's default
        elif r < 0.7:
            st2_disk, st2 = draw_structure(rng, nsp, True)
            if st2_disk is None:
                st2_disk = st2.copy()
            p["st2_disk"] = st2_disk
        else:  # structure2 of structure1's shape, disjoint from it (the usual use)
            st2 = (rng.random(st.shape) < 0.5) & ~st
            p["st2_disk"] = store_bool(rng, st2)
        r = rng.random()
        if r < 0.5 and origin_ok(origin, st2.shape):
            p["origin2_field"], p["origin2_arg"] = None, None
            o2 = origin
        else:
            f2, o2 = draw_origin(rng, list(st2.shape))
            if f2 is None:
                f2 = [0]
                o2 = [0] * nsp
            p["origin2_field"] = f2
            p["origin2_arg"] = o2 if len(f2) > 1 else f2[0]
        if not origin_ok(o2, st2.shape):
            return None
        p["origin"] = p["origin_arg"]

    off_centre = False
    if (op in ("propagation", "fill_holes") or p["iterations"] < 1) and not st.all() \
            and rng.random() < 0.45:
        # origin on a False element of the structure (the centre is False
        # after the origin, for erosion and for dilation alike): the sequence
        # of passes is no longer monotone and may cycle
        off_centre = True
        r = rng.random()
        if r < 0.45:
            # two opposite shifts (+d and -d, centre False): alternates
            # between two sets unless the border, the mask or the image
            # extent stop it first
            st = np.zeros([3] * nsp, bool)
            d = np.zeros(nsp, int)
            while not d.any():
                d = rng.integers(-1, 2, nsp)
            st[tuple(1 + d)] = True
            st[tuple(1 - d)] = True
            p["st"], p["st_disk"] = st, store_bool(rng, st)
            if op != "fill_holes" and rng.random() < 0.8:
                # one pixel per image (one hole for the erosion first ops):
                # it spreads over one parity class only
                fg = np.zeros(shape, bool)
                for b in np.ndindex(*bshape):
                    fg[b + tuple(int(rng.integers(0, n)) for n in spatial)] = True
                if op in ("erosion", "opening"):
                    fg = ~fg
                data = encode(rng, fg, dtype)
                if rng.random() < 0.5:
                    p["mask"] = p["mask_disk"] = None
        elif st.size >= 3 and st.sum() > 2 and r < 0.75:
            # a sparse structure (a few shifts) cycles more often
            keep = rng.choice(np.flatnonzero(st), int(rng.integers(1, 3)), replace=False)
            st = np.zeros(st.shape, bool)
            st.flat[keep] = True
            p["st"], p["st_disk"] = st, store_bool(rng, st)
        if r < 0.45:
            o = [0] * nsp  # the centre of the pair structure is False
        else:
            k = np.unravel_index(int(rng.choice(np.flatnonzero(~st))), st.shape)
            o = [int(kk) - s // 2 for kk, s in zip(k, st.shape)]
        p["origin_field"], p["origin"], p["origin_arg"] = o, o, o

    passes = abs(p["iterations"]) if p["iterations"] >= 1 else 30
    if op in ("opening", "closing"):
        passes *= 2
    if op in ("propagation", "fill_holes"):
        passes = 30
    if fg.size * max(st.size, 1) * passes > WORK_BUDGET * (12 if large else 1):
        return None

    out = np.zeros(shape, bool)
    cycle = False
    try:
        for b in np.ndindex(*bshape):
            mb = dict(p)
            if p["mask_disk"] is not None:
                mb["mask"] = p["mask_disk"][b]  # as written: any dtype, non-zero = in
            img = data[b]
            try:
                out[b] = reference(op, img, mb)
            except Cycle:
                cycle = True
                continue
            chk = guarded(scipy_call, op, img, mb)
            if chk is not None and not np.array_equal(chk, out[b]):
                sys.exit(f"oracle_binary.py: repeated passes differ from scipy's brute-force call "
                         f"({op}, image {b}); an oracle bug")
    except (GiveUp, Timeout):
        stats["gave_up"] += 1
        return None
    except (ValueError, RuntimeError) as e:
        stats["rejected"] += 1
        return None
    if cycle:
        stats["cycles"] += 1
    elif off_centre:
        stats["off_centre"] += 1

    case = {"op": op, "dtype": dtype, "shape": shape, "batch": nbatch, "cycle": cycle, **p}
    if rng.random() < 0.15 and data.ndim > 1:
        data = np.asfortranarray(data)  # exercises Fortran-order .npy reading
    return case, data, out


def main():
    args, rng = oracle_common.start(__doc__, 600)
    stats = {"gave_up": 0, "rejected": 0, "cycles": 0, "off_centre": 0}
    lines = []

    def save(name, a):
        np.save(os.path.join(args.out, name), a)
        return name

    tries = 0
    while len(lines) < args.cases:
        tries += 1
        if tries > 50 * args.cases + 1000:
            sys.exit("oracle_binary.py: could not draw enough cases")
        got = draw_case(rng, stats)
        if got is None:
            continue
        case, data, out = got
        i = len(lines)
        op = case["op"]
        fields = [f"id={i}", f"op={op}", f"dtype={case['dtype']}", f"shape={oracle_common.fmt_list(case['shape'])}",
                  f"batch={case['batch']}"]
        if op in ("erosion", "dilation", "opening", "closing"):
            fields += [f"iterations={case['iterations']}", f"brute_force={case['brute_force']}"]
        if op in ("erosion", "dilation", "opening", "closing", "propagation"):
            fields.append(f"border_value={case['bv']}")
        if case["st_disk"] is not None:
            fields.append("structure=" + save(f"c{i}_st.npy", case["st_disk"]))
        if case["origin_field"] is not None:
            fields.append(f"origin={oracle_common.fmt_list(case['origin_field'])}")
        if case["mask_disk"] is not None:
            fields.append("mask=" + save(f"c{i}_mask.npy", case["mask_disk"]))
        if op == "hit_or_miss":
            if case["st2_disk"] is not None:
                fields.append("structure2=" + save(f"c{i}_st2.npy", case["st2_disk"]))
            if case["origin2_field"] is not None:
                fields.append(f"origin2={oracle_common.fmt_list(case['origin2_field'])}")
        fields.append("input=" + save(f"c{i}_in.npy", data))
        if case["cycle"]:
            fields.append("expect=cycle")
        else:
            fields.append("expected=" + save(f"c{i}_out.npy", out))
        lines.append(" ".join(fields))

    # generate_binary_structure: every rank 1..4 and connectivity -1..rank+1
    k = len(lines)
    for rank in range(1, 5):
        for conn in range(-1, rank + 2):
            e = ndi.generate_binary_structure(rank, conn)
            lines.append(f"id={k} op=generate_binary_structure rank={rank} connectivity={conn} "
                         "expected=" + save(f"g{k}_out.npy", e))
            k += 1

    # iterate_structure: random and generated structures, iterations 1..4
    for j in range(48):
        nsp = int(rng.integers(1, 5))
        if j % 3 == 0:
            st = ndi.generate_binary_structure(nsp, int(rng.integers(1, nsp + 1)))
        else:
            st = rng.random([int(rng.integers(1, 5)) for _ in range(nsp)]) < rng.uniform(0.2, 0.9)
        st_disk = store_bool(rng, st)
        it = int(rng.integers(1, 5)) if nsp < 4 else int(rng.integers(1, 3))
        fields = [f"id={k}", "op=iterate_structure", "structure=" + save(f"i{k}_st.npy", st_disk),
                  f"iterations={it}"]
        r = rng.random()
        if r < 0.35 or it < 2:  # scipy returns no origin for iterations < 2
            e = ndi.iterate_structure(st_disk, it)
        else:
            if r < 0.6:
                ofield = [int(rng.integers(-2, 3))]
                oarg = ofield[0]
            else:
                ofield = [int(rng.integers(-2, 3)) for _ in range(nsp)]
                oarg = ofield
            e, o_out = ndi.iterate_structure(st_disk, it, oarg)
            fields += [f"origin={oracle_common.fmt_list(ofield)}", f"origin_out={oracle_common.fmt_list(o_out)}"]
        fields.append("expected=" + save(f"i{k}_out.npy", np.asarray(e) != 0))
        lines.append(" ".join(fields))
        k += 1

    with open(os.path.join(args.out, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    per_op = {op: 0 for op in OPS}
    for line in lines[: args.cases]:
        per_op[line.split(" op=", 1)[1].split(" ", 1)[0]] += 1
    print(f"oracle_binary.py: {args.cases} random cases ({stats['cycles']} cycle, "
          f"{stats['off_centre']} reach a fixed point with the centre False), "
          f"{len(lines) - args.cases} structure cases, seed {args.seed}, scipy {scipy.__version__}, "
          f"numpy {np.__version__}; per op: " + ", ".join(f"{k2} {v}" for k2, v in per_op.items())
          + f"; skipped draws: {stats['gave_up']} too long, {stats['rejected']} rejected by scipy",
          file=sys.stderr)


if __name__ == "__main__":
    main()
