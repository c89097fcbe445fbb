#!/usr/bin/env python3
"""scipy.ndimage oracle for tests/test_interp.c.

Draws random cases of the interpolation functions (spline_filter1d,
spline_filter, map_coordinates, affine_transform in its four matrix forms,
shift, zoom, rotate), runs scipy on them and writes, per case, the input, the
coordinates or matrix when the case has one, and scipy's output as .npy
files, plus one manifest line of space-separated key=value pairs that
test_interp.c parses:

  id=7 op=affine dtype=int16 odtype=float64 shape=2,5,9 batch=1 order=3
  mode=grid-wrap cval=-3.25 prefilter=1 matrix=c7_m.npy offset=0.5,-1.25
  input=c7_in.npy expected=c7_out.npy

op is one of spline1d (axis=), spline (batch= axes after the batch ones),
map (coords=), affine (matrix=, offset= one or per-axis values, absent for
none), shift (shift=), zoom (zoom=, grid=), rotate (angle=, axes=a,b,
reshape=).  unrounded= (integer and bool outputs but spline's) names scipy's
float64 output of the same call.  A bool input sometimes holds bytes other
than 0 and 1, and a bool output is compared byte for byte: scipy reads and
writes a bool as its byte (npy_bool, C's casts), NumPy's casts where a spline
filter of order <= 1 copies.  Bool arrays are saved as their bytes (uint8);
dtype= and odtype= say bool.  odtype is the output's dtype.  Floats are written with repr (they round-trip exactly).  batch
leading axes are independent images: the expected output is scipy applied to
each image (map_coordinates shares the coordinates).  The output shape is the
expected file's.

Usage: oracle_interp.py --seed S --out DIR [--cases N]
"""
import os
import warnings

import numpy as np

import oracle_common
import scipy_documented
import scipy.ndimage as ndi

DTYPES = ["bool", "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "float64", "int64", "uint64"]
ODTYPES = ["bool", "uint8", "int8", "uint16", "int16", "uint32", "int32", "int64", "uint64", "float32", "float64"]
MODES = ["constant", "grid-constant", "nearest", "reflect", "grid-mirror", "mirror", "wrap", "grid-wrap"]
OPS = ["spline1d", "spline", "map", "affine", "shift", "zoom", "rotate"]
WORK_BUDGET = 60_000  # output points x taps per case


if not scipy_documented.prefilter_is_exact():
    # scipy before 1.18 initializes the reflect / grid-mirror / nearest prefilter with its causal sum accumulated
    # in c[0] itself (fixed by scipy PR 24615); the library follows 1.18 (docs/adr/0033), and so do the
    # expected outputs here
    ndi._interpolation.spline_filter1d = ndi.spline_filter1d = \
        scipy_documented.spline_filter1d_as_1_18(ndi._interpolation.spline_filter1d)

# Interpolation into uint64 beyond 2^64: the library saturates (scipy's clamp, as Debian's build runs it;
# newer wheels store 0 there, the conversion of the clamped 2^64 being undefined in C).
UINT64_SATURATES = int(ndi.shift(np.array([3e19, 3e19]), 0.0, order=1, output=np.uint64)[0]) == 2 ** 64 - 1


def affine(a, m, offset=0.0, output_shape=None, output=None, **kw):
    """ndi.affine_transform with the library's coordinates where scipy's build differs (scipy_documented)."""
    return scipy_documented.affine_transform(a, m, offset, output_shape, output, **kw)


def rotate(a, angle, axes, reshape, output, **kw):
    """ndi.rotate with the library's geometry and coordinates where scipy's build differs (scipy_documented)."""
    return scipy_documented.rotate(a, angle, axes, reshape, output, **kw)


def flist(v):
    return ",".join(repr(float(x)) for x in v)


def draw_len(rng):
    r = rng.random()
    if r < 0.03:  # an empty axis
        return 0
    if r < 0.08:
        return 1
    if r < 0.16:
        return 2
    return int(rng.integers(3, 11))


def draw_values(rng, dtype, shape):
    dt = np.dtype(dtype)
    if dt == np.bool_:
        b = rng.random(shape) < 0.5
        if rng.random() < 0.3:  # bytes other than 0 and 1 (scipy's own bool outputs hold them): read as they are
            m = rng.random(shape) < 0.2
            b.view(np.uint8)[m] = rng.integers(2, 256, size=int(m.sum()))
        return b
    if dtype in oracle_common.WIDE and rng.random() < 0.5:  # beyond 2^53: read into double as scipy reads them
        return oracle_common.draw_wide(rng, dtype, shape)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = max(info.min, -10 ** 6), min(info.max, 10 ** 6)
        if rng.random() < 0.5:  # sometimes the whole range (saturation of the output)
            return rng.integers(lo, hi, size=shape, endpoint=True).astype(dt)
        return rng.integers(max(lo, -50), min(hi, 50), size=shape, endpoint=True).astype(dt)
    return (rng.normal(size=shape) * 100).astype(dt)


def as_bytes(a):
    """A bool array as its bytes (uint8; the manifest's dtype / odtype say bool): .npy readers that take a
    bool as 0 or 1 refuse scipy's other bytes."""
    return a.view(np.uint8) if a.dtype == np.bool_ else a


def pick_odtype(rng, dtype):
    if rng.random() < 0.1:  # scipy's bool output rule (C's cast) is ndforge's own path
        return "bool"
    if dtype == "bool" or rng.random() < 0.35:
        return str(rng.choice(ODTYPES))
    return dtype


def per_image(fn, x, out, nb):
    """fn(image, out_image) over every image of the nb batch axes."""
    if nb == 0:
        fn(x, out)
        return
    for idx in np.ndindex(*x.shape[:nb]):
        fn(x[idx], out[idx])


def main():
    args, rng = oracle_common.start(__doc__, 400)
    lines = []
    warnings.simplefilter("ignore")
    cid = 0
    while cid < args.cases:
        op = OPS[cid % len(OPS)] if cid < 2 * len(OPS) else str(rng.choice(OPS))
        dtype = str(rng.choice(DTYPES))
        odtype = pick_odtype(rng, dtype)
        nsp = int(rng.choice([1, 2, 2, 3, 3, 4])) if op != "rotate" else int(rng.choice([2, 2, 3]))
        nb = int(rng.choice([0, 0, 0, 1, 2]))
        bshape = [int(rng.integers(1, 3)) for _ in range(nb)]
        sshape = [draw_len(rng) for _ in range(nsp)]
        order = int(rng.integers(0, 6))
        mode = str(rng.choice(MODES))
        if op in ("map", "affine", "rotate") and min(sshape) == 0:
            # points outside an empty input: scipy defines them in these modes alone (cval, or grid-constant's
            # padding interpolated); in the others it reads outside its buffer
            mode = str(rng.choice(["constant", "grid-constant"]))
        cval = float(rng.choice([0.0, float(np.round(rng.normal() * 50, 2)), 1.5]))
        prefilter = int(rng.random() < 0.75)
        x = draw_values(rng, dtype, bshape + sshape)
        rec = {"id": cid, "op": op, "dtype": dtype, "shape": oracle_common.fmt_list(x.shape), "batch": nb,
               "order": order, "mode": mode, "cval": repr(cval), "prefilter": prefilter}
        kw = dict(order=order, mode=mode, cval=cval, prefilter=prefilter)
        if op == "spline1d":
            nb = 0
            rec["batch"] = 0
            axis = int(rng.integers(-x.ndim, x.ndim))
            rec["axis"] = axis
            def compute(odt):
                return ndi.spline_filter1d(x, order=order, axis=axis, output=np.dtype(odt), mode=mode)
        elif op == "spline":
            order = int(rng.integers(2, 6))
            rec["order"] = order
            def compute(odt):
                o = np.zeros(x.shape, odt)
                per_image(lambda a, q: ndi.spline_filter(a, order=order, output=q, mode=mode), x, o, nb)
                return o
        elif op == "map":
            orank = int(rng.integers(1, 4))
            oshape = [int(rng.integers(0 if rng.random() < 0.05 else 1, 7)) for _ in range(orank)]
            c = np.stack([rng.uniform(-3, n + 2, size=oshape) for n in sshape])
            r = rng.random()
            if r < 0.2:
                c = np.round(c)
            elif r < 0.35:
                c = np.round(c * 2) / 2
            if rng.random() < 0.2:
                c = c.astype(np.float32)
            def compute(odt):
                o = np.zeros(bshape + oshape, odt)
                per_image(lambda a, q: ndi.map_coordinates(a, c, output=q, **kw), x, o, nb)
                return o
            np.save(os.path.join(args.out, "c%d_co.npy" % cid), c)
            rec["coords"] = "c%d_co.npy" % cid
        elif op == "affine":
            form = str(rng.choice(["nm", "diag", "hom", "homs"]))
            onsp = nsp
            if form == "nm" and rng.random() < 0.2:
                onsp = int(rng.integers(1, 4))
                if onsp == nsp + 1:  # an (n, n + 1) matrix is the homogeneous form, whatever the output's rank
                    onsp = nsp
            oshape = [max(1, n + int(rng.integers(-2, 3))) for n in sshape[:onsp]] + \
                [int(rng.integers(1, 6)) for _ in range(onsp - min(onsp, nsp))]
            lin = rng.normal(size=(nsp, onsp)) * 0.6
            if onsp == nsp:
                lin += np.eye(nsp)
            off = rng.normal(size=nsp) * 2
            if rng.random() < 0.25:
                lin = np.round(lin * 4) / 4
                off = np.round(off * 2) / 2
            offset_arg = None
            if form == "nm":
                m = lin
                r = rng.random()
                offset_arg = None if r < 0.2 else (float(off[0]) if r < 0.4 else off)
            elif form == "diag":
                m = np.where(np.abs(np.diag(lin)) < 0.2, 0.5, np.diag(lin))
                offset_arg = off
            elif form == "hom":
                m = np.eye(nsp + 1)
                m[:nsp, :nsp] = lin
                m[:nsp, nsp] = off
            else:
                m = np.concatenate([lin, off[:, None]], axis=1)
            kwo = {} if offset_arg is None else {"offset": offset_arg}

            def compute(odt):
                o = np.zeros(bshape + oshape, odt)
                per_image(lambda a, q: affine(a, m, output_shape=q.shape, output=q, **kwo, **kw), x, o, nb)
                return o
            np.save(os.path.join(args.out, "c%d_m.npy" % cid), np.asarray(m, np.float64))
            rec["matrix"] = "c%d_m.npy" % cid
            if offset_arg is not None and form in ("nm", "diag"):
                rec["offset"] = flist(np.atleast_1d(offset_arg))
        elif op == "shift":
            sh = rng.normal(size=nsp) * 3
            if rng.random() < 0.3:
                sh = np.round(sh * 2) / 2
            sh_arg = float(sh[0]) if rng.random() < 0.25 else sh
            def compute(odt):
                o = np.zeros(x.shape, odt)
                per_image(lambda a, q: ndi.shift(a, sh_arg, output=q, **kw), x, o, nb)
                return o
            rec["shift"] = flist(np.atleast_1d(sh_arg))
        elif op == "zoom":
            z = rng.uniform(0.3, 2.6, size=nsp)
            if rng.random() < 0.3:
                z = np.round(z * 4) / 4
            if rng.random() < 0.1:  # small enough for an empty axis where the input is short
                z[int(rng.integers(0, nsp))] = float(rng.choice([0.0, rng.uniform(0, 0.2)]))
            if rng.random() < 0.08:  # by exactly 1: a copy with the prefilter
                z[:] = 1.0
            z_arg = float(z[0]) if rng.random() < 0.25 else z
            grid = int(rng.random() < 0.4)
            zz = np.broadcast_to(z_arg, (nsp,))
            oshape = [int(round(n * f)) for n, f in zip(sshape, zz)]
            def compute(odt):
                o = np.zeros(bshape + oshape, odt)
                if prefilter and (zz == 1).all():
                    # by exactly 1 with the prefilter: the input as NumPy converts it (scipy >= 1.16,
                    # its issue 20999; scipy 1.10 interpolates; docs/adr/0033)
                    o[...] = x
                    return o
                per_image(lambda a, q: ndi.zoom(a, z_arg, output=q, grid_mode=bool(grid), **kw), x, o, nb)
                return o
            rec["zoom"] = flist(np.atleast_1d(z_arg))
            rec["grid"] = grid
        else:  # rotate
            r = rng.random()
            angle = float(rng.choice([90.0, -90.0, 180.0, 270.0, 45.0])) if r < 0.3 else float(rng.uniform(-400, 400))
            ax = [int(a) for a in rng.choice(nsp, size=2, replace=False)]
            ax = [a - nsp if rng.random() < 0.3 else a for a in ax]
            reshape = int(rng.random() < 0.6)
            first = rotate(x[(0,) * nb], angle, ax, bool(reshape), np.dtype(odtype), **kw)
            def compute(odt):
                o = np.zeros(bshape + list(first.shape), odt)
                per_image(lambda a, q: rotate(a, angle, ax, bool(reshape), q, **kw), x, o, nb)
                return o
            rec["angle"] = repr(angle)
            rec["axes"] = "%d,%d" % tuple(ax)
            rec["reshape"] = reshape
        try:
            out = compute(odtype)
        except ValueError:  # scipy's numpy.pad of an empty axis in the nearest mode (ndforge: the empty output)
            continue
        if out.size * (order + 1) ** nsp > WORK_BUDGET:
            continue
        if out.dtype == np.uint64 and op not in ("spline1d", "spline") and not UINT64_SATURATES:
            out[compute("float64") + 0.5 > 2.0 ** 64] = np.iinfo(np.uint64).max
        np.save(os.path.join(args.out, "c%d_in.npy" % cid), as_bytes(x))
        np.save(os.path.join(args.out, "c%d_out.npy" % cid), as_bytes(out))
        rec["odtype"] = str(out.dtype)
        if out.dtype.kind in "iub" and op != "spline":
            # the unrounded values, for the tests' tolerance at rounding (a bool: truncation) boundaries
            np.save(os.path.join(args.out, "c%d_f.npy" % cid), compute("float64"))
            rec["unrounded"] = "c%d_f.npy" % cid
        rec["input"] = "c%d_in.npy" % cid
        rec["expected"] = "c%d_out.npy" % cid
        lines.append(" ".join("%s=%s" % kv for kv in rec.items()))
        cid += 1
    with open(os.path.join(args.out, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
