"""ndforge on Dask arrays: lazy, chunked, and equal to the single-array result.

Every function takes a ``dask.array.Array`` (NumPy or CuPy chunks; a NumPy
array is wrapped with its own shape as one chunk) and returns a lazy dask
array whose computed value equals the ``ndforge.ndimage`` / ``ndforge.topology``
/ ``ndforge.ot`` result on the whole array, for any chunking
(docs/adr/0022-dask.md).  The methods:

* **Local ops** (grey morphology, rank filters, binary morphology with a finite
  number of iterations, hit-or-miss, and the linear filters where the package
  has them: correlate/convolve, uniform, gaussian and derivative filters): each output block runs the op on its
  block grown by the op's exact reach (footprint / structure extent and
  origin, times the number of erosion/dilation stages and iterations), taken
  from as many neighbouring chunks as it spans, so a halo may be larger than a
  chunk.  At the array's true border the region stops and the op applies its
  own boundary mode there (``reflect``, ``mirror``, ``nearest``, ``constant``,
  ``border_value``), which stays exact for composite ops (opening, tophat,
  closing with iterations) where padding the input would not be; ``wrap``
  modes gather the periodic neighbours from the far side instead.  Every
  output voxel then sees the same inputs in the same order, so results are
  bitwise the single-array ones, except ``uniform_filter`` over several axes
  (running sums: equal to the last bits).
* **label**: per-chunk labels; every face between chunk rows joins the labels
  it connects (through the structure, diagonals across chunk corners
  included); the equivalences of the labels on those faces are merged on the
  host and each component is numbered by its first voxel in raster order,
  which is the single-array numbering.  The per-voxel work stays where the
  chunk lives (CuPy chunks: on the device): each chunk's first voxels, the
  ranking of all components' first voxels (one sort), and a lookup table per
  chunk gathered by its labels; only the faces and the first voxels of the
  face labels come to the host.  ``binary_fill_holes`` and ``binary_propagation`` (and binary
  dilation / erosion with ``iterations < 1``) use the same merged components
  (of the background, or of the mask).
* **Euler characteristic curves** (``ecc``, ``soft_ecc``): each chunk counts the
  cells it owns (the chunk of the cell's lowest voxel for the 'V' construction,
  of its lowest adjacent pixel for 'T'), from its block and one voxel of its
  upper neighbours, by inclusion-exclusion over the block's faces; the curves
  of the chunks add up to the whole array's.
* **Euclidean distance transform** (``distance_transform_edt``): its separable
  passes, one per spatial axis in scipy's order, each on chunks rechunked to
  hold whole lines along that axis only (``ndforge.ndimage.distance_edt_pass``
  carries the squared distances and the features between passes); an image
  without background gets scipy's distances from the virtual feature.
* **Interpolation** (``shift``, ``zoom``, ``affine_transform``, ``rotate``, ``map_coordinates``,
  ``spline_filter``, ``spline_filter1d``): the spline prefilter is one pass per spatial axis on chunks
  holding whole lines along it (as the EDT's passes), in float64 as the single-array call filters; each
  output block then evaluates with ``prefilter=False`` on the region of the coefficients its points reach
  (the transformed corners of the block, or the extent of its coordinates, plus the spline's taps),
  coordinates computed and mapped by the mode on the whole axis and shifted into the region exactly;
  a region that reaches an end of an axis stops there, so the library's own folding of the taps applies
  at the array's true border.  Bit for bit the single-array result for every order, mode and chunking;
  the output's chunks are the input's (``output_chunks`` for zoom / affine_transform / rotate; the
  coordinates' chunks for map_coordinates, whose extents are computed when it is called).
* **Whole-axis ops** (the other distance transforms, ECT, grey reconstruction, and the
  parameter combinations the methods above do not cover): the spatial axes are
  rechunked into one chunk (batch axes keep their chunks), the op runs per
  chunk, and the result is rechunked back to the input's chunks.  Exact, but a
  chunk then holds a whole image.
* **Batches**: with ``batch_dims`` the leading axes are a batch; chunks along
  them run independently (``map_blocks``), ``sinkhorn`` over a chunked
  (pairs, bins) array likewise.
* **Cohorts** (``preprocess_cohort``): ``ndforge preprocess``'s steps per file
  on a ``dask.bag``, one report per file.
* **One worker per GPU** (``gpu_cluster``): dask_cuda's ``LocalCUDACluster``
  where installed, else one worker process per visible GPU; one kernel cache
  directory for all (docs/dask.md).
"""

import contextlib
import functools
import itertools
import operator

import numpy as np

import dask
import dask.array as da
from dask.base import tokenize
from dask.core import flatten
from dask.delayed import Delayed
from dask.highlevelgraph import HighLevelGraph

from . import ndimage as _ndi
from . import topology as _topo
from . import ot as _ot
from . import morphology as _morph

__all__ = [
    "grey_erosion", "grey_dilation", "grey_opening", "grey_closing", "morphological_gradient",
    "morphological_laplace", "white_tophat", "black_tophat", "median_filter", "rank_filter",
    "percentile_filter", "binary_erosion", "binary_dilation", "binary_opening", "binary_closing",
    "binary_hit_or_miss", "binary_propagation", "binary_fill_holes", "label", "distance_transform_edt",
    "distance_transform_cdt", "distance_transform_bf", "ecc", "soft_ecc", "ect", "reconstruction", "sinkhorn",
    "map_batches",
]


# --- arrays ------------------------------------------------------------------------

def _as_dask(x):
    """x as a dask array (an array: one chunk).  Dask names an array by a token of its contents: NumPy's bytes
    are hashed, but a CuPy array would be pickled (copied to the host and back, twice), so a device array gets
    a unique name instead."""
    if isinstance(x, da.Array):
        return x
    return da.from_array(x, chunks=x.shape, name=None if isinstance(x, np.ndarray) else False)


def _host(a):
    """A NumPy copy of a block (CuPy blocks come to the host; NumPy ones are returned as they are)."""
    if isinstance(a, np.ndarray):
        return a
    get = getattr(a, "get", None)
    return get() if get is not None else np.asarray(a)


def _xp(a):
    if isinstance(a, np.ndarray):
        return np
    import cupy
    return cupy


def _meta(x, dtype, ndim=None):
    return da.utils.meta_from_array(x, ndim=x.ndim if ndim is None else ndim, dtype=dtype)


# --- blocks grown by a halo ----------------------------------------------------------

def _axis_plan(chunks, lo, hi, wrap):
    """Per output block of one axis: the input pieces (block j, local start, stop) whose concatenation
    holds the block's region, the positions to take from that concatenation (None: all of it, in order),
    and the block's place in the region.  Clipped at the array's ends unless ``wrap``."""
    n = int(sum(chunks))
    bounds = np.concatenate([[0], np.cumsum(chunks)]).astype(np.int64)
    plans = []
    for j in range(len(chunks)):
        s, e = int(bounds[j]), int(bounds[j + 1])
        if wrap:
            idx = np.arange(s - lo, e + hi) % n
            rstart, rstop = s - lo, e + hi
        else:
            rstart, rstop = max(0, s - lo), min(n, e + hi)
            idx = np.arange(rstart, rstop)
        blk = np.searchsorted(bounds, idx, side="right") - 1
        pieces, offs, off = [], {}, 0
        for b in np.unique(blk):
            loc = idx[blk == b] - bounds[b]
            a0, a1 = int(loc.min()), int(loc.max()) + 1
            pieces.append((int(b), a0, a1))
            offs[int(b)] = off - a0
            off += a1 - a0
        pos = idx - bounds[blk] + np.array([offs[int(b)] for b in blk], np.int64)
        sel = None if (len(pos) == off and np.array_equal(pos, np.arange(off))) else pos
        plans.append(dict(pieces=pieces, sel=sel, start=s, stop=e, rstart=rstart, rstop=rstop,
                          trim=slice(s - rstart, s - rstart + (e - s)), n=n))
    return plans


def _assemble(blocks, axis_plans):
    """The region of one output block from the input blocks it spans (``blocks``: their product order)."""
    shape = [sum(p[2] - p[1] for p in ap["pieces"]) for ap in axis_plans]
    combos = list(itertools.product(*[ap["pieces"] for ap in axis_plans]))
    if len(combos) == 1:
        region = blocks[0][tuple(slice(p[1], p[2]) for p in combos[0])]
    else:
        xp = _xp(blocks[0])
        region = xp.empty(shape, blocks[0].dtype)
        starts = []
        for ap in axis_plans:
            s, acc = {}, 0
            for p in ap["pieces"]:
                s[p[0]] = acc
                acc += p[2] - p[1]
            starts.append(s)
        for blk, combo in zip(blocks, combos):
            dst = tuple(slice(starts[a][p[0]], starts[a][p[0]] + p[2] - p[1]) for a, p in enumerate(combo))
            region[dst] = blk[tuple(slice(p[1], p[2]) for p in combo)]
    for a, ap in enumerate(axis_plans):
        if ap["sel"] is not None:
            xp = _xp(region)
            region = xp.take(region, xp.asarray(ap["sel"]), axis=a)
    return region


def _halo_task(fn, axis_plans, nin, *args):
    regions = [_assemble(args[i], axis_plans) for i in range(nin)]
    return fn(regions, axis_plans, *args[nin:])


def _halo_map(fn, arrays, lo, hi, wrap=False, dtype=None, extras=(), out_chunks=None, new_axes=None,
              name="ndforge"):
    """A dask array whose block i is ``fn(regions, axis_plans, *extras)``: ``regions`` holds, for every
    input array (all chunked as the first), block i grown by ``lo`` / ``hi`` voxels per axis (clipped at
    the array's ends, or periodic with ``wrap``); ``axis_plans`` says where the block lies in the region
    (``trim``) and in the array.  ``extras`` are dask collections passed computed; ``out_chunks`` and
    ``new_axes`` (chunks of axes appended to the output) describe an output that is not the block."""
    x = arrays[0]
    arrays = [x] + [a.rechunk(x.chunks) for a in arrays[1:]]
    plans = [_axis_plan(x.chunks[a], lo[a], hi[a], wrap) for a in range(x.ndim)]
    token = tokenize(fn, [a.name for a in arrays], lo, hi, wrap, [getattr(e, "key", getattr(e, "name", e))
                                                                    for e in extras])
    out = "%s-%s" % (name, token)
    ekeys = []
    for e in extras:
        ekeys.append(e.key if hasattr(e, "key") else (e.name,) + (0,) * e.ndim)
    dsk = {}
    for idx in itertools.product(*[range(len(c)) for c in x.chunks]):
        aps = [plans[a][idx[a]] for a in range(x.ndim)]
        combos = list(itertools.product(*[[p[0] for p in ap["pieces"]] for ap in aps]))
        keyl = [[(arr.name,) + c for c in combos] for arr in arrays]
        task = functools.partial(_halo_task, fn, aps, len(arrays))
        dsk[(out,) + idx + (0,) * len(new_axes or ())] = (task, *keyl, *ekeys)
    deps = list(arrays) + list(extras)
    graph = HighLevelGraph.from_collections(out, dsk, dependencies=deps)
    chunks = out_chunks if out_chunks is not None else x.chunks
    chunks = tuple(chunks) + tuple((c,) for c in (new_axes or ()))
    return da.Array(graph, out, chunks=chunks, meta=_meta(x._meta, dtype or x.dtype, len(chunks)))


def _trim(out, aps):
    return out[tuple(ap["trim"] for ap in aps)]


# --- local ops ---------------------------------------------------------------------------

_WRAP = ("wrap", "grid-wrap")
# erosion/dilation stages of each grey op: its halo is that many times the footprint's reach
_GREY_STAGES = {"grey_erosion": 1, "grey_dilation": 1, "grey_opening": 2, "grey_closing": 2,
                "morphological_gradient": 1, "morphological_laplace": 1, "white_tophat": 2, "black_tophat": 2}
_BINARY_STAGES = {"binary_erosion": 1, "binary_dilation": 1, "binary_opening": 2, "binary_closing": 2}


def _spatial_axes(ndim, batch_dims, axes):
    if axes is None:
        return list(range(batch_dims, ndim))
    if isinstance(axes, int):
        axes = (axes,)
    return [a % ndim for a in axes]


def _reach(shape, origin, nsp):
    """Per spatial axis: how far (either way) the window of an element of this shape and origin reaches."""
    org = [0] * nsp if origin is None else (
        [int(origin)] * nsp if np.ndim(origin) == 0 else [int(o) for o in origin])
    if len(org) == 1:
        org = org * nsp
    r = []
    for k, o in zip(shape, org):
        lo, hi = k // 2 + o, k - 1 - k // 2 - o
        r.append(max(abs(lo), abs(hi)))
    return r


def _extent(nsp, size=None, footprint=None, structure=None):
    if footprint is not None:
        return np.shape(footprint)
    if structure is not None:
        return np.shape(structure)
    if size is None:
        return None
    return tuple(int(size) for _ in range(nsp)) if np.ndim(size) == 0 else tuple(int(s) for s in size)


def _local(fn, x, axes, reach, wrap=False, dtype=None, others=(), name="ndforge"):
    """fn(region, *other regions) on every block grown by ``reach`` along ``axes``, trimmed back."""
    x = _as_dask(x)
    lo = [0] * x.ndim
    for a, r in zip(axes, reach):
        lo[a] = int(r)

    def run(regions, aps):
        return _trim(fn(*regions), aps)

    return _halo_map(run, [x] + [_as_dask(o) for o in others], lo, lo, wrap, dtype, name=name)


def _whole(fn, x, batch_dims=0, dtype=None, name="ndforge-whole"):
    """fn on chunks that hold whole images (spatial axes in one chunk), rechunked back to x's chunks."""
    x = _as_dask(x)
    y = x.rechunk({a: -1 for a in range(batch_dims, x.ndim)})
    r = y.map_blocks(fn, dtype=dtype or x.dtype, token=name, meta=_meta(x._meta, dtype or x.dtype))
    return r.rechunk(x.chunks)


def _out_dtype(x, output):
    if output is None:
        return None
    if isinstance(output, (np.dtype, type, str)):
        return np.dtype(output)
    raise TypeError("ndforge.dask: output= takes a dtype (dask arrays are not filled in place)")


def _binary_output(x, output):
    """The binary ops' output=: a dtype is checked and, as in scipy (and ndforge.ndimage), the result is
    bool whatever it names."""
    _out_dtype(x, output)
    return None


def _make_grey(name):
    f1 = getattr(_ndi, name)

    def f(input, size=None, footprint=None, structure=None, output=None, mode="reflect", cval=0.0, origin=0,
          *, axes=None, batch_dims=0, algorithm=None, nan_policy=None):
        x = _as_dask(input)
        out = _out_dtype(x, output)
        kw = dict(size=size, footprint=footprint, structure=structure, output=out, mode=mode, cval=cval,
                  origin=origin, axes=axes, batch_dims=batch_dims, algorithm=algorithm, nan_policy=nan_policy)
        call = functools.partial(f1, **kw)
        dtype = f1(np.zeros((1,) * x.ndim, x.dtype), **kw).dtype
        sp = _spatial_axes(x.ndim, batch_dims, axes)
        ext = _extent(len(sp), size, footprint, structure)
        stages = _GREY_STAGES.get(name)
        if ext is None or stages is None:  # the library raises the error, or an op of unknown reach
            return _whole(call, x, batch_dims if axes is None else 0, dtype)
        m = mode[0] if isinstance(mode, (list, tuple)) else mode
        reach = [stages * r for r in _reach(ext, origin, len(sp))]
        return _local(call, x, sp, reach, wrap=m in _WRAP, dtype=dtype, name="ndforge-" + name)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = "ndforge.ndimage.%s on a dask array (exact halo; see the module's doc)." % name
    return f


grey_erosion = _make_grey("grey_erosion")
grey_dilation = _make_grey("grey_dilation")
grey_opening = _make_grey("grey_opening")
grey_closing = _make_grey("grey_closing")
morphological_gradient = _make_grey("morphological_gradient")
morphological_laplace = _make_grey("morphological_laplace")
white_tophat = _make_grey("white_tophat")
black_tophat = _make_grey("black_tophat")


def _rank(name, extra, input, size, footprint, output, mode, cval, origin, axes, batch_dims, algorithm,
          nan_policy):
    f1 = getattr(_ndi, name)
    x = _as_dask(input)
    kw = dict(size=size, footprint=footprint, output=_out_dtype(x, output), mode=mode, cval=cval, origin=origin,
              axes=axes, batch_dims=batch_dims, algorithm=algorithm, nan_policy=nan_policy)
    call = functools.partial(f1, **extra, **kw)
    dtype = call(np.zeros((1,) * x.ndim, x.dtype)).dtype
    sp = _spatial_axes(x.ndim, batch_dims, axes)
    ext = _extent(len(sp), size, footprint)
    if ext is None:
        return _whole(call, x, batch_dims if axes is None else 0, dtype)
    m = mode[0] if isinstance(mode, (list, tuple)) else mode
    return _local(call, x, sp, _reach(ext, origin, len(sp)), wrap=m in _WRAP, dtype=dtype, name="ndforge-" + name)


def median_filter(input, size=None, footprint=None, output=None, mode="reflect", cval=0.0, origin=0, *,
                  axes=None, batch_dims=0, algorithm=None, nan_policy=None):
    """ndforge.ndimage.median_filter on a dask array."""
    return _rank("median_filter", {}, input, size, footprint, output, mode, cval, origin, axes, batch_dims,
                 algorithm, nan_policy)


def rank_filter(input, rank, size=None, footprint=None, output=None, mode="reflect", cval=0.0, origin=0, *,
                axes=None, batch_dims=0, algorithm=None, nan_policy=None):
    """ndforge.ndimage.rank_filter on a dask array."""
    return _rank("rank_filter", dict(rank=rank), input, size, footprint, output, mode, cval, origin, axes, batch_dims,
                 algorithm, nan_policy)


def percentile_filter(input, percentile, size=None, footprint=None, output=None, mode="reflect", cval=0.0,
                      origin=0, *, axes=None, batch_dims=0, algorithm=None, nan_policy=None):
    """ndforge.ndimage.percentile_filter on a dask array."""
    return _rank("percentile_filter", dict(percentile=percentile), input, size, footprint, output, mode, cval,
                 origin, axes, batch_dims, algorithm, nan_policy)


def _default_structure(nsp, structure):
    return _ndi.generate_binary_structure(nsp, 1) if structure is None else np.asarray(_host(structure)) != 0


def _symmetric(st):
    return np.array_equal(st, st[(slice(None, None, -1),) * st.ndim])


def _zero_origin(origin):
    return np.all(np.asarray(origin) == 0)


def _binary(name, input, structure, iterations, mask, output, border_value, origin, brute_force, axes,
            batch_dims):
    f1 = getattr(_ndi, name)
    x = _as_dask(input)
    sp = _spatial_axes(x.ndim, batch_dims, axes)
    st = _default_structure(len(sp), structure)
    it = operator.index(iterations)
    output = _binary_output(x, output)
    kw = dict(structure=st, iterations=it, output=output, border_value=border_value,
              origin=origin, brute_force=brute_force, axes=axes, batch_dims=batch_dims)
    if it < 1:
        if (name in ("binary_erosion", "binary_dilation") and axes is None and _symmetric(st)
                and _zero_origin(origin)):
            return _fixpoint(name, x, st, mask, border_value, batch_dims, output)
        m = None if mask is None else _as_dask(mask)
        return _whole_masked(functools.partial(f1, **kw), x, m, batch_dims if axes is None else 0)
    reach = [it * _BINARY_STAGES[name] * r for r in _reach(st.shape, origin, len(sp))]
    dtype = np.dtype(bool) if output is None else np.dtype(output)
    if mask is None:
        return _local(functools.partial(f1, **kw), x, sp, reach, dtype=dtype, name="ndforge-" + name)
    return _local(lambda r, m: f1(r, mask=m, **kw), x, sp, reach, dtype=dtype, others=[mask],
                  name="ndforge-" + name)


def _whole_masked(fn, x, mask, batch_dims):
    if mask is None:
        return _whole(fn, x, batch_dims, np.dtype(bool))
    y = x.rechunk({a: -1 for a in range(batch_dims, x.ndim)})
    r = da.map_blocks(lambda a, m: fn(a, mask=m), y, mask.rechunk(y.chunks), dtype=bool,
                      meta=_meta(x._meta, bool))
    return r.rechunk(x.chunks)


def binary_erosion(input, structure=None, iterations=1, mask=None, output=None, border_value=0, origin=0,
                   brute_force=False, *, axes=None, batch_dims=0):
    """ndforge.ndimage.binary_erosion on a dask array (iterations < 1: to the fixpoint, through labels)."""
    return _binary("binary_erosion", input, structure, iterations, mask, output, border_value, origin,
                   brute_force, axes, batch_dims)


def binary_dilation(input, structure=None, iterations=1, mask=None, output=None, border_value=0, origin=0,
                    brute_force=False, *, axes=None, batch_dims=0):
    """ndforge.ndimage.binary_dilation on a dask array (iterations < 1: to the fixpoint, through labels)."""
    return _binary("binary_dilation", input, structure, iterations, mask, output, border_value, origin,
                   brute_force, axes, batch_dims)


def binary_opening(input, structure=None, iterations=1, output=None, origin=0, mask=None, border_value=0,
                   brute_force=False, *, axes=None, batch_dims=0):
    """ndforge.ndimage.binary_opening on a dask array."""
    return _binary("binary_opening", input, structure, iterations, mask, output, border_value, origin,
                   brute_force, axes, batch_dims)


def binary_closing(input, structure=None, iterations=1, output=None, origin=0, mask=None, border_value=0,
                   brute_force=False, *, axes=None, batch_dims=0):
    """ndforge.ndimage.binary_closing on a dask array."""
    return _binary("binary_closing", input, structure, iterations, mask, output, border_value, origin,
                   brute_force, axes, batch_dims)


def binary_hit_or_miss(input, structure1=None, structure2=None, output=None, origin1=0, origin2=None, *,
                       axes=None, batch_dims=0):
    """ndforge.ndimage.binary_hit_or_miss on a dask array."""
    x = _as_dask(input)
    sp = _spatial_axes(x.ndim, batch_dims, axes)
    s1 = _default_structure(len(sp), structure1)
    s2 = ~s1 if structure2 is None else np.asarray(_host(structure2)) != 0
    reach = np.maximum(_reach(s1.shape, origin1, len(sp)),
                       _reach(s2.shape, origin1 if origin2 is None else origin2, len(sp)))
    call = functools.partial(_ndi.binary_hit_or_miss, structure1=s1, structure2=s2,
                             output=_binary_output(x, output), origin1=origin1, origin2=origin2, axes=axes,
                             batch_dims=batch_dims)
    return _local(call, x, sp, reach, dtype=np.dtype(bool), name="ndforge-binary_hit_or_miss")


# --- label and the ops made of its components ----------------------------------------

def _block_starts(chunks):
    return [np.concatenate([[0], np.cumsum(c)[:-1]]).astype(np.int64) for c in chunks]


def _first_flats(lab, start, shape, sort=None):
    """Global raster index of the first voxel of each label 1..n of a block (labels numbered in raster order,
    as ndforge.ndimage.label numbers them), computed where the block lives.  NumPy: the running maximum
    rises by one at each first voxel; CuPy (or ``sort``): the smallest flat index per label, by one sort of
    (label, index) keys."""
    xp = _xp(lab)
    flat = lab.ravel()
    size = int(flat.size)
    if sort is None:
        sort = xp is not np
    if size == 0:
        firsts = xp.zeros(0, np.int64)
    elif not sort:
        run = np.maximum.accumulate(flat)
        firsts = np.flatnonzero(np.diff(run, prepend=0) > 0).astype(np.int64)
    else:
        nz = xp.flatnonzero(flat).astype(np.int64)
        key = xp.sort(flat[nz].astype(np.int64) * size + nz)
        lv = key // size
        new = xp.ones(key.shape, bool)
        new[1:] = lv[1:] != lv[:-1]
        firsts = key[new] % size
    # local flat index -> global flat index
    g = xp.zeros(firsts.shape, np.int64)
    rem = firsts
    stride = 1
    for a in range(lab.ndim - 1, -1, -1):
        c = rem % lab.shape[a]
        rem = rem // lab.shape[a]
        g += (c + int(start[a])) * stride
        stride *= int(shape[a])
    return g


def _faces(lab):
    """The chunk's faces on the host, (first, last) per axis.  A device block sends them in one copy (one
    wait for the stream instead of one per face)."""
    sl = [lab[(slice(None),) * a + (slice(i, i + 1),)] for a in range(lab.ndim) for i in (0, lab.shape[a] - 1)]
    xp = _xp(lab)
    if xp is np:
        flat = [np.ascontiguousarray(f) for f in sl]
    else:
        buf = _host(xp.concatenate([f.ravel() for f in sl]))
        ends = np.cumsum([0] + [f.size for f in sl])
        flat = [buf[ends[k]:ends[k + 1]].reshape(f.shape) for k, f in enumerate(sl)]
    return [(flat[2 * a], flat[2 * a + 1]) for a in range(lab.ndim)]


def _block_info(start, shape, lab):
    """What the merge needs of one chunk's labels: their count, their first voxels (where the block lives)
    and the chunk's faces (on the host)."""
    faces = _faces(lab)
    first = _first_flats(lab, start, shape)
    return dict(n=int(first.shape[0]), first=first, faces=faces)


def _union_find(nnodes, u, v):
    """Root (smallest member) of every node's component under the edges (u, v)."""
    parent = np.arange(nnodes, dtype=np.int64)
    if len(u) == 0:
        return parent
    while True:
        pu, pv = parent[u], parent[v]
        m = np.minimum(pu, pv)
        before = parent.copy()
        np.minimum.at(parent, pu, m)
        np.minimum.at(parent, pv, m)
        while True:
            nxt = parent[parent]
            if np.array_equal(nxt, parent):
                break
            parent = nxt
        if np.array_equal(parent, before):
            return parent


def _merge(grid, structure, infos):
    """The components of the labels that touch faces between chunks.  Provisional ids: chunk label + chunk
    offset (infos in C order over the chunk grid).  Each face between two rows of chunks is taken whole, so
    that links across chunk corners (diagonals of the structure) are found too.  Only the labels on those
    faces enter the union-find (``nodes``, sorted; ``root``: index of the root node of each); every other
    label is a component of its own."""
    infos = np.array(infos + [None], dtype=object)[:-1].reshape(grid)
    counts = np.array([i["n"] for i in infos.ravel()], np.int64).reshape(grid)
    offsets = (np.cumsum(counts.ravel()) - counts.ravel()).reshape(grid)
    ndim = len(grid)
    us, vs = [], []
    for a in range(ndim):
        shifts = [d for d in itertools.product((-1, 0, 1), repeat=ndim)
                  if d[a] == 1 and structure[tuple(k + 1 for k in d)]]
        sub = tuple(1 if b == a else grid[b] for b in range(ndim))

        def face(j, side):
            parts = np.empty(sub, dtype=object)
            for idx in itertools.product(*[range(s) for s in sub]):
                full = idx[:a] + (j,) + idx[a + 1:]
                f = infos[full]["faces"][a][side].astype(np.int64)
                parts[idx] = np.where(f > 0, f + offsets[full], 0)
            return np.block(parts.tolist()) if ndim > 1 else parts[0]
        for j in range(grid[a] - 1):
            L, R = face(j, 1), face(j + 1, 0)
            n = L.shape
            for d in shifts:
                ls = tuple(slice(None) if b == a else slice(max(0, -d[b]), n[b] - max(0, d[b])) for b in range(ndim))
                rs = tuple(slice(None) if b == a else slice(max(0, d[b]), n[b] - max(0, -d[b])) for b in range(ndim))
                lv, rv = L[ls].ravel(), R[rs].ravel()
                keep = (lv > 0) & (rv > 0)
                us.append(lv[keep])
                vs.append(rv[keep])
    u = np.concatenate(us) if us else np.zeros(0, np.int64)
    v = np.concatenate(vs) if vs else np.zeros(0, np.int64)
    nodes, inv = np.unique(np.concatenate([u, v]), return_inverse=True)
    root = _union_find(len(nodes), inv[:len(u)], inv[len(u):])
    return dict(offsets=offsets, infos=infos, nodes=nodes, root=root)


def _per_chunk(m, ids):
    """(chunk's flat index, chunk labels, positions in ids) for the provisional ids ``ids`` (sorted or not)."""
    flat_off = m["offsets"].ravel()
    # the last chunk whose offset is below the id (chunks without labels share their offset with the next)
    ch = np.searchsorted(flat_off, ids, side="left") - 1
    out = []
    for c in np.unique(ch):
        pos = np.flatnonzero(ch == c)
        out.append((int(c), ids[pos] - flat_off[c], pos))
    return out


def _gather(arr, idx):
    """arr[idx] on the host (arr where a block lives, idx a small host index array)."""
    if len(idx) == 0:
        return np.zeros(0, arr.dtype)
    return _host(arr[_xp(arr).asarray(idx)])


def _scatter(arr, idx, values):
    """arr[idx] = values, idx and values small host arrays, arr where a block lives."""
    if len(idx):
        xp = _xp(arr)
        arr[xp.asarray(idx)] = xp.asarray(values)


def _numbering(m, extras):
    """Per chunk, label -> final label: components numbered by their first voxel in raster order.  Each
    label that no face merges is a component of its own; of a merged component only the member with the
    smallest first voxel (its head) is ranked, the others take its number."""
    infos, nodes, root = m["infos"].ravel(), m["nodes"], m["root"]
    firsts = [i["first"] for i in infos]
    xp = _xp(firsts[0]) if firsts else np
    nfirst = np.zeros(len(nodes), np.int64)
    for c, loc, pos in _per_chunk(m, nodes):
        nfirst[pos] = _gather(firsts[c], loc - 1)
    ckey = np.full(len(nodes), np.iinfo(np.int64).max, np.int64)
    np.minimum.at(ckey, root, nfirst)
    head = nfirst == ckey[root]
    hnode = np.empty(len(nodes), np.int64)  # the head node of every node's component
    hnode[root[head]] = np.flatnonzero(head)
    hnode = hnode[root]
    dropped = np.flatnonzero(~head)
    keeps, kept = [], []
    drop_by_chunk = {c: (loc, pos) for c, loc, pos in _per_chunk(m, nodes[dropped])}
    for c, f in enumerate(firsts):
        keep = xp.ones(f.shape[0], bool)
        if c in drop_by_chunk:
            _scatter(keep, drop_by_chunk[c][0] - 1, False)
        keeps.append(keep)
        kept.append(f[keep])
    keys = xp.concatenate(kept) if kept else xp.zeros(0, np.int64)
    total = int(keys.shape[0])
    dt = np.int32 if total < 2 ** 31 - 1 else np.int64
    rank = xp.empty(total, dt)
    rank[xp.argsort(keys)] = xp.arange(1, total + 1, dtype=dt)
    luts, at = [], 0
    for c, f in enumerate(firsts):
        lut = xp.zeros(f.shape[0] + 1, dt)
        k = int(kept[c].shape[0])
        if k == f.shape[0]:
            lut[1:] = rank[at:at + k]
        else:
            lut[xp.flatnonzero(keeps[c]) + 1] = rank[at:at + k]
        at += k
        luts.append(lut)
    # the merged labels that are not heads take their head's number
    hn = np.zeros(len(nodes), np.int64)
    for c, loc, pos in _per_chunk(m, nodes[np.flatnonzero(head)]):
        hn[np.flatnonzero(head)[pos]] = _gather(luts[c], loc)
    for c, (loc, pos) in drop_by_chunk.items():
        _scatter(luts[c], loc, hn[hnode[dropped[pos]]])
    return luts, total


def _border_holes(m, extras):
    """Per chunk, label -> True where its component does not touch the array's border (a hole)."""
    infos, offsets, nodes, root = m["infos"], m["offsets"], m["nodes"], m["root"]
    grid = infos.shape
    border = []
    for idx in itertools.product(*[range(g) for g in grid]):
        for a in range(len(grid)):
            for side, at in ((0, 0), (1, grid[a] - 1)):
                if idx[a] == at:
                    f = infos[idx]["faces"][a][side]
                    border.append(np.unique(f[f > 0]).astype(np.int64) + offsets[idx])
    border = np.unique(np.concatenate(border)) if border else np.zeros(0, np.int64)
    touch = np.zeros(len(nodes), bool)
    pos = np.searchsorted(nodes, border)
    ok = pos < len(nodes)
    ok[ok] = nodes[pos[ok]] == border[ok]
    touch[root[pos[ok]]] = True
    out = np.union1d(border, nodes[touch[root]])
    luts = []
    flat = infos.ravel()
    for i in flat:
        xp = _xp(i["first"])
        lut = xp.ones(i["n"] + 1, bool)
        lut[0] = False
        luts.append(lut)
    for c, loc, _ in _per_chunk(m, out):
        _scatter(luts[c], loc, False)
    return luts, None


def _reached(m, extras):
    """Per chunk, label -> True where its component holds a voxel of the per-chunk sets in extras."""
    nodes, root = m["nodes"], m["root"]
    luts = []
    for i, a in zip(m["infos"].ravel(), extras):
        xp = _xp(i["first"])
        lut = xp.zeros(i["n"] + 1, bool)
        if a.shape[0]:
            lut[a] = True
        luts.append(lut)
    flag = np.zeros(len(nodes), bool)
    per = _per_chunk(m, nodes)
    for c, loc, pos in per:
        flag[pos] = _gather(luts[c], loc)
    comp = np.zeros(len(nodes), bool)
    comp[root[flag]] = True
    for c, loc, pos in per:
        _scatter(luts[c], loc, comp[root[pos]])
    return luts, None


def _unique_labels(lab, active):
    """The labels (> 0) of a chunk's voxels in ``active``, where the block lives."""
    xp = _xp(lab)
    u = xp.unique(lab[active != 0])
    return u[u > 0]


def _lookup(final, lab, lut, *blocks):
    return final(lut[lab], *blocks)


def _components(x, structure, post, final, dtype, others=(), extra=None, extra_arrays=(), name="ndforge-label"):
    """One graph: per-chunk labels of x != 0 under structure; per-chunk infos; their merge; ``post(merge,
    extras)`` -> (per chunk a lookup table label -> value, where the chunk lives; scalar); per chunk
    ``final(lut[labels], *other blocks)``.  ``extra(labels, *extra_arrays blocks)`` gives each chunk's entry
    of ``extras``.  Returns (array, the scalar as a 0-d dask array)."""
    x = _as_dask(x)
    st = structure
    labs = x.map_blocks(lambda b: _ndi.label(b, st)[0], dtype=np.int32, meta=_meta(x._meta, np.int32),
                        name="ndforge-chunk-labels-" + tokenize(x.name, st))
    others = [_as_dask(o).rechunk(x.chunks) for o in others]
    extra_arrays = [_as_dask(o).rechunk(x.chunks) for o in extra_arrays]
    token = tokenize(name, labs.name, post, final, dtype, [o.name for o in others + extra_arrays], extra)
    out, info, merge, postk, extk, lutk = ("%s-%s-%s" % (name, w, token)
                                           for w in ("out", "info", "merge", "post", "extra", "lut"))
    starts = _block_starts(x.chunks)
    grid = x.numblocks
    dsk = {}
    idxs = list(itertools.product(*[range(g) for g in grid]))
    for idx in idxs:
        start = tuple(int(starts[a][idx[a]]) for a in range(x.ndim))
        dsk[(info,) + idx] = (functools.partial(_block_info, start, x.shape), (labs.name,) + idx)
        if extra is not None:
            dsk[(extk,) + idx] = (extra, (labs.name,) + idx, *[(e.name,) + idx for e in extra_arrays])
    dsk[(merge,)] = (functools.partial(_merge, grid, st), [(info,) + idx for idx in idxs])
    dsk[(postk,)] = (post, (merge,), [(extk,) + idx for idx in idxs] if extra is not None else [])
    for k, idx in enumerate(idxs):
        dsk[(lutk,) + idx] = (_lut_of, (postk,), k)
        dsk[(out,) + idx] = (functools.partial(_lookup, final), (labs.name,) + idx, (lutk,) + idx,
                             *[(o.name,) + idx for o in others])
    scalar = "%s-n-%s" % (name, token)
    dsk[(scalar,)] = (operator.itemgetter(1), (postk,))
    graph = HighLevelGraph.from_collections(out, dsk, dependencies=[labs] + others + extra_arrays)
    arr = da.Array(graph, out, chunks=x.chunks, meta=_meta(x._meta, dtype))
    graph_n = HighLevelGraph.from_collections(scalar, dsk, dependencies=[labs] + others + extra_arrays)
    num = da.Array(graph_n, scalar, chunks=(), meta=np.empty((), np.int64))
    return arr, num


def _lut_of(post, k):
    return post[0][k]


def _as_dtype(dtype):
    return lambda v: v.astype(dtype, copy=False)


def label(input, structure=None, output=None):
    """ndforge.ndimage.label on a dask array: (labels, num_features), num_features a 0-d dask array.
    The labels are the single-array labels (numbered in raster order of each component's first voxel)."""
    x = _as_dask(input)
    st = _default_structure(x.ndim, structure)
    dtype = np.dtype(np.int32) if output is None else np.dtype(output)
    return _components(x, st, _numbering, _as_dtype(dtype), dtype)


def _fill(hole, blk):
    return (blk != 0) | hole


def binary_fill_holes(input, structure=None, output=None, origin=0):
    """ndforge.ndimage.binary_fill_holes on a dask array: the components of the background (under
    ``structure``) that do not touch the array's border are filled."""
    x = _as_dask(input)
    st = _default_structure(x.ndim, structure)
    output = _binary_output(x, output)
    dtype = np.dtype(bool)
    if not _zero_origin(origin) or not _symmetric(st):
        return _whole(functools.partial(_ndi.binary_fill_holes, structure=st, output=output, origin=origin), x,
                      0, dtype)
    r, _ = _components(x == 0, st, _border_holes, _fill, np.dtype(bool), others=[x], name="ndforge-fill")
    return r if output is None else r.astype(dtype)


def _propagate(seed, mask, st, border_value, dtype):
    """scipy's binary_propagation: seed, plus the components of mask (under st) that a seed voxel in the
    mask, or a seed voxel outside it next to them (or the border, with border_value), reaches."""
    seed = _as_dask(seed) != 0
    mask = (da.ones(seed.shape, dtype=bool, chunks=seed.chunks) if mask is None
            else _as_dask(mask).rechunk(seed.chunks) != 0)
    reach = _reach(st.shape, 0, seed.ndim)
    near = _local(functools.partial(_ndi.binary_dilation, structure=st, border_value=border_value), seed & ~mask,
                  list(range(seed.ndim)), reach, dtype=np.dtype(bool))
    active = (seed | near) & mask
    r, _ = _components(mask, st, _reached, _fill, np.dtype(bool), others=[seed], extra=_unique_labels,
                       extra_arrays=[active], name="ndforge-propagate")
    return r if dtype == np.dtype(bool) else r.astype(dtype)


def binary_propagation(input, structure=None, mask=None, output=None, border_value=0, origin=0):
    """ndforge.ndimage.binary_propagation on a dask array (through the components of the mask)."""
    x = _as_dask(input)
    st = _default_structure(x.ndim, structure)
    output = _binary_output(x, output)
    dtype = np.dtype(bool)
    if not _zero_origin(origin) or not _symmetric(st):
        m = None if mask is None else _as_dask(mask)
        return _whole_masked(functools.partial(_ndi.binary_propagation, structure=st, output=output,
                                               border_value=border_value, origin=origin), x, m, 0)
    return _propagate(x, mask, st, border_value, dtype)


def _fixpoint(name, x, st, mask, border_value, batch_dims, output):
    if batch_dims:
        m = None if mask is None else _as_dask(mask)
        f1 = getattr(_ndi, name)
        return _whole_masked(functools.partial(f1, structure=st, iterations=-1, output=output,
                                               border_value=border_value, batch_dims=batch_dims), x, m, batch_dims)
    dtype = np.dtype(bool) if output is None else np.dtype(output)
    if name == "binary_dilation":
        return _propagate(x, mask, st, border_value, dtype)
    # erosion to the fixpoint is the complement of the propagation of the complement
    return ~_propagate(_as_dask(x) == 0, mask, st, 0 if border_value else 1, np.dtype(bool))


# --- distance transforms and other whole-image ops ----------------------------------------

def _distance(f1, input, kw, batch_dims, return_distances, return_indices):
    x = _as_dask(input)
    nsp = x.ndim - batch_dims
    y = x.rechunk({a: -1 for a in range(batch_dims, x.ndim)})
    probe = f1(np.ones((2,) * x.ndim, x.dtype), return_distances=return_distances,
               return_indices=return_indices, batch_dims=batch_dims, **kw)
    probe = probe if isinstance(probe, tuple) else (probe,)
    outs = []
    for k, p in enumerate(probe):
        is_ind = return_indices and k == len(probe) - 1

        def run(b, k=k):
            r = f1(b, return_distances=return_distances, return_indices=return_indices, batch_dims=batch_dims, **kw)
            return r[k] if isinstance(r, tuple) else r
        if is_ind:
            chunks = y.chunks[:batch_dims] + ((nsp,),) + y.chunks[batch_dims:]
            r = y.map_blocks(run, dtype=p.dtype, chunks=chunks, new_axis=batch_dims,
                             meta=_meta(x._meta, p.dtype, x.ndim + 1))
            r = r.rechunk(x.chunks[:batch_dims] + ((nsp,),) + x.chunks[batch_dims:])
        else:
            r = y.map_blocks(run, dtype=p.dtype, meta=_meta(x._meta, p.dtype)).rechunk(x.chunks)
        outs.append(r)
    return tuple(outs) if len(outs) > 1 else outs[0]


def _edt_start(b, block_info=None, batch_dims=0, shape=(), features=False):
    """The passes' state of a block: (squared distance: 0 on the background, +inf elsewhere; with features
    the background voxel's flat index in its image, -1 elsewhere) stacked on a new first axis, the
    features' int64 bits stored as float64."""
    xp = _xp(b)
    bg = b == 0
    w = xp.where(bg, 0.0, xp.inf)
    if not features:
        return w[None]
    loc = block_info[0]["array-location"]
    flat = xp.zeros(b.shape, np.int64)
    stride = 1
    for a in range(b.ndim - 1, batch_dims - 1, -1):
        c = xp.arange(loc[a][0], loc[a][1], dtype=np.int64) * stride
        flat = flat + c.reshape((-1,) + (1,) * (b.ndim - 1 - a))
        stride *= shape[a]
    f = xp.where(bg, flat, -1)
    return xp.stack([w, f.view(np.float64)])


def _edt_pass_block(st, axis=0, sampling=1.0):
    st = st.copy()
    feats = st[1].view(np.int64) if st.shape[0] == 2 else None
    _ndi.distance_edt_pass(st[0], axis, sampling, features=feats)
    return st


def _edt_empty_image(b, block_info=None, batch_dims=0, sampling=()):
    """scipy's squared distances of an image without background (feature (-1, 0, ..., 0)), in its order."""
    xp = _xp(b)
    loc = block_info[0]["array-location"]
    acc = None
    for d in range(b.ndim - batch_dims):
        a = batch_dims + d
        c = xp.arange(loc[a][0], loc[a][1], dtype=np.float64)
        t = ((-1.0 if d == 0 else 0.0) - c) * sampling[d]
        t = (t * t).reshape((-1,) + (1,) * (b.ndim - 1 - a))
        acc = t if acc is None else acc + t
    return xp.broadcast_to(acc, b.shape).astype(np.float64)


def _edt_indices(f, batch_dims=0, shape=()):
    """The coordinates of the features (flat indices in their image; -1: none, as (-1, 0, ..., 0))."""
    xp = _xp(f)
    nsp = len(shape) - batch_dims
    idx = xp.stack(xp.unravel_index(xp.maximum(f, 0), tuple(shape[batch_dims:])), axis=batch_dims)
    none = xp.asarray([-1] + [0] * (nsp - 1)).reshape((1,) * batch_dims + (nsp,) + (1,) * nsp)
    return xp.where(xp.expand_dims(f < 0, batch_dims), none, idx).astype(np.int32)


def distance_transform_edt(input, sampling=None, return_distances=True, return_indices=False, *, batch_dims=0):
    """ndforge.ndimage.distance_transform_edt on a dask array, by its separable passes: the pass of each
    spatial axis in turn (0, 1, ...) runs on chunks that hold whole lines along that axis only
    (ndforge.ndimage.distance_edt_pass), so no chunk ever holds a whole image; bit for bit the
    single-array result."""
    x = _as_dask(input)
    # the single-array call checks the arguments (scipy's errors) on a small probe
    _ndi.distance_transform_edt(np.ones((2,) * x.ndim, x.dtype), sampling=sampling,
                                return_distances=return_distances, return_indices=return_indices,
                                batch_dims=batch_dims)
    nsp = x.ndim - batch_dims
    samp = [1.0] * nsp if sampling is None else [float(v) for v in np.atleast_1d(np.asarray(sampling, np.float64))]
    if len(samp) == 1:
        samp = samp * nsp
    nst = 2 if return_indices else 1
    st = x.map_blocks(_edt_start, batch_dims=batch_dims, shape=x.shape, features=return_indices,
                      new_axis=0, chunks=((nst,),) + x.chunks, dtype=np.float64,
                      meta=_meta(x._meta, np.float64, x.ndim + 1))
    st0 = st
    for d in range(nsp):
        a = 1 + batch_dims + d
        st = _lines(st, a, st0.chunks).map_blocks(_edt_pass_block, axis=a - 1, sampling=samp[d], dtype=np.float64)
    st = st.rechunk(((nst,),) + x.chunks)
    spatial = tuple(range(batch_dims, x.ndim))
    has_bg = (x == 0).any(axis=spatial, keepdims=True)
    outs = []
    if return_distances:
        empty = x.map_blocks(_edt_empty_image, batch_dims=batch_dims, sampling=samp, dtype=np.float64,
                             meta=_meta(x._meta, np.float64))
        w = st[0]
        outs.append(da.sqrt(da.where(has_bg, w, empty)))
    if return_indices:
        f = st[1].map_blocks(lambda b: b.view(np.int64), dtype=np.int64)
        f = da.where(has_bg, f, -1)
        outs.append(f.map_blocks(_edt_indices, batch_dims=batch_dims, shape=x.shape, dtype=np.int32,
                                 new_axis=batch_dims, chunks=x.chunks[:batch_dims] + ((nsp,),) + x.chunks[batch_dims:],
                                 meta=_meta(x._meta, np.int32, x.ndim + 1)))
    return tuple(outs) if len(outs) > 1 else outs[0]


def distance_transform_cdt(input, metric="chessboard", return_distances=True, return_indices=False, *,
                           batch_dims=0):
    """ndforge.ndimage.distance_transform_cdt on a dask array (each image computed whole)."""
    return _distance(_ndi.distance_transform_cdt, input, dict(metric=metric), batch_dims, return_distances,
                     return_indices)


def distance_transform_bf(input, metric="euclidean", sampling=None, return_distances=True, return_indices=False,
                          *, batch_dims=0):
    """ndforge.ndimage.distance_transform_bf on a dask array (each image computed whole)."""
    return _distance(_ndi.distance_transform_bf, input, dict(metric=metric, sampling=sampling), batch_dims,
                     return_distances, return_indices)


def reconstruction(seed, mask, method="dilation", footprint=None, offset=None, *, batch_dims=0):
    """ndforge.morphology.reconstruction on dask arrays (each image computed whole)."""
    s = _as_dask(seed)
    m = _as_dask(mask)
    y = s.rechunk({a: -1 for a in range(batch_dims, s.ndim)})
    probe = _morph.reconstruction(np.zeros((1,) * s.ndim, s.dtype), np.zeros((1,) * s.ndim, m.dtype), method,
                                  batch_dims=batch_dims)
    r = da.map_blocks(lambda a, b: _morph.reconstruction(a, b, method, footprint, offset, batch_dims=batch_dims),
                      y, m.rechunk(y.chunks), dtype=probe.dtype, meta=_meta(s._meta, probe.dtype))
    return r.rechunk(s.chunks)


# --- Euler characteristic curves ----------------------------------------------------------

def _thresholds(x, thresholds, range):
    """The thresholds of the whole array as explicit values (a count is spread over its [min, max])."""
    if np.ndim(thresholds) != 0:
        return np.asarray(_host(thresholds), np.float64)
    if range is not None:
        lo, hi = range
        probe = np.zeros((1, 2), x.dtype)
        return _topo.ecc(probe, int(thresholds), range=range, return_thresholds=True)[1]

    # one task per chunk for its (min, max), one for the thresholds: every chunk is read once, and the
    # graph holds keys only (a closure over x, tokenized, would pickle x's graph, the input included)
    token = tokenize(x.name, int(thresholds))
    rng, key = "ndforge-ecc-range-" + token, "ndforge-ecc-thresholds-" + token
    dsk = {(rng,) + idx: (_block_range, (x.name,) + idx) for idx in np.ndindex(*x.numblocks)}
    dsk[key] = (_thresholds_of, list(dsk), x.dtype, int(thresholds))
    return Delayed(key, HighLevelGraph.from_collections(key, dsk, dependencies=[x]))


def _block_range(b):
    """A block's (min, max) where it lives (None: an empty block)."""
    if b.size == 0:
        return None
    xp = _xp(b)
    return xp.stack([b.min(), b.max()])


def _thresholds_of(ranges, dtype, count):
    """The count thresholds over the array's [min, max] (from its blocks' ranges, in one copy to the host),
    as the single call spreads them."""
    ranges = [r for r in ranges if r is not None]
    if not ranges:
        raise ValueError("zero-size array to reduction operation minimum which has no identity")
    both = _host(_xp(ranges[0]).stack(ranges))
    probe = np.array([[both[:, 0].min(), both[:, 1].max()]], dtype)
    return _topo.ecc(probe, count, return_thresholds=True)[1]


def _curve_sum(parts):
    """The sum of the chunks' curves, on the host (one copy from a device)."""
    return _host(_xp(parts[0]).stack([p.reshape(-1) for p in parts]).sum(axis=0))


def _sum_parts(parts, T, dtype, name):
    """The (T,) sum of the per-chunk curves ``parts``: one task."""
    key = "%s-%s" % (name, tokenize(parts.name))
    dsk = {(key, 0): (_curve_sum, list(flatten(parts.__dask_keys__())))}
    return da.Array(HighLevelGraph.from_collections(key, dsk, dependencies=[parts]), key, chunks=((T,),),
                    meta=np.empty((0,), dtype))


def _owned_sum(curve, construction):
    """Per block: the curve of the cells the block owns, from the block and one voxel of its upper neighbours."""
    def run(regions, aps, th):
        E = regions[0]
        nd = E.ndim
        if construction == "V":  # cells belong to the chunk of their lowest vertex: drop the upper halo's cells
            cut = [a for a in range(nd) if aps[a]["rstop"] > aps[a]["stop"]]
            pick = lambda a: E.shape[a] - 1
        else:  # cells belong to the chunk of their lowest pixel: drop the cells of the lower face
            cut = [a for a in range(nd) if aps[a]["start"] > 0]
            pick = lambda a: 0
        # the terms of one size whose shapes agree once their cut axes (extent 1) come first are one
        # batched call (the complex of a permuted box is the same complex); the sum stays where the block
        # lives until the end
        xp = _xp(E)
        total = None
        for k in range(len(cut) + 1):
            groups = {}
            for A in itertools.combinations(cut, k):
                sub = E[tuple(slice(pick(a), pick(a) + 1) if a in A else slice(None) for a in range(nd))]
                sub = xp.moveaxis(sub, list(A), list(range(k)))
                groups.setdefault(sub.shape, []).append(sub)
            for subs in groups.values():
                c = curve(subs[0], th, 0) if len(subs) == 1 else curve(xp.stack(subs), th, 1).sum(axis=0)
                total = c if total is None else (total + c if k % 2 == 0 else total - c)
        return total.reshape((1,) * nd + (-1,))  # where the block lives: the sum brings them over at once
    return run


def ecc(input, thresholds=256, construction="V", range=None, batch_dims=0, *, return_thresholds=False):
    """ndforge.topology.ecc on a dask array: per-chunk curves of owned cells, summed (exact, int64)."""
    x = _as_dask(input)
    if batch_dims:
        th = _thresholds(x, thresholds, range) if np.ndim(thresholds) else None
        fn = functools.partial(_topo.ecc, thresholds=thresholds, construction=construction, range=range,
                               batch_dims=batch_dims)
        return _batched_curve(x, fn, batch_dims, int(thresholds) if th is None else len(th), np.int64)
    th = _thresholds(x, thresholds, range)
    T = int(thresholds) if np.ndim(thresholds) == 0 else len(th)
    extras = [th] if isinstance(th, Delayed) else []
    curve = lambda sub, t, b: _topo.ecc(sub, t, construction, batch_dims=b)
    run = _owned_sum(curve, construction)
    if not extras:
        run = functools.partial(lambda r, a, th0: _owned_sum(curve, construction)(r, a, th0), th0=th)
    parts = _halo_map(run, [x], [0] * x.ndim, [1] * x.ndim, dtype=np.int64, extras=extras,
                      out_chunks=tuple((1,) * len(c) for c in x.chunks), new_axes=(T,), name="ndforge-ecc")
    r = _sum_parts(parts, T, np.int64, "ndforge-ecc-sum")
    if return_thresholds:
        return r, (da.from_delayed(th, (T,), np.float64) if extras else th)
    return r


def soft_ecc(input, thresholds, lam=1.0, construction="V", batch_dims=0):
    """ndforge.topology.soft_ecc on a dask array (sum over chunks of owned cells; equal up to rounding)."""
    x = _as_dask(input)
    th = np.asarray(_host(thresholds), np.float64)
    if batch_dims:
        fn = functools.partial(_topo.soft_ecc, thresholds=th, lam=lam, construction=construction,
                               batch_dims=batch_dims)
        return _batched_curve(x, fn, batch_dims, len(th), np.float64)
    curve = lambda sub, t, b: _topo.soft_ecc(sub, t, lam, construction, batch_dims=b)
    run = functools.partial(lambda r, a, th0: _owned_sum(curve, construction)(r, a, th0), th0=th)
    parts = _halo_map(run, [x], [0] * x.ndim, [1] * x.ndim, dtype=np.float64,
                      out_chunks=tuple((1,) * len(c) for c in x.chunks), new_axes=(len(th),),
                      name="ndforge-soft_ecc")
    return _sum_parts(parts, len(th), np.float64, "ndforge-soft_ecc-sum")


def _batched_curve(x, fn, batch_dims, T, dtype, extra_shape=()):
    y = x.rechunk({a: -1 for a in range(batch_dims, x.ndim)})
    chunks = y.chunks[:batch_dims] + tuple((s,) for s in extra_shape) + ((T,),)
    drop = list(range(batch_dims, x.ndim))
    new = list(range(batch_dims, batch_dims + len(extra_shape) + 1))
    return y.map_blocks(fn, dtype=dtype, chunks=chunks, drop_axis=drop, new_axis=new,
                        meta=_meta(x._meta, dtype, len(chunks)))


def ect(input, directions, thresholds=256, construction="V", weighted=False, range=None, spacing=None,
        normalize=False, batch_dims=0):
    """ndforge.topology.ect on a dask array (each image computed whole: heights use whole-image coordinates)."""
    x = _as_dask(input)
    dirs = np.asarray(_host(directions), np.float64)
    if np.ndim(thresholds) != 0:
        T = len(thresholds)
    else:
        T = int(thresholds)
    fn = functools.partial(_topo.ect, directions=dirs, thresholds=thresholds, construction=construction,
                           weighted=weighted, range=range, spacing=spacing, normalize=normalize,
                           batch_dims=batch_dims)
    dtype = np.float64 if weighted else np.int64
    return _batched_curve(x, fn, batch_dims, T, dtype, extra_shape=(dirs.shape[0],))


# --- batches -----------------------------------------------------------------------------

def map_batches(fn, x, batch_dims=1, dtype=None, **kwargs):
    """``fn(chunk, batch_dims=batch_dims, **kwargs)`` per chunk of a batch: the leading ``batch_dims`` axes
    keep their chunks, the image axes are made whole.  ``fn``'s result must have the chunk's shape."""
    x = _as_dask(x)
    return _whole(functools.partial(fn, batch_dims=batch_dims, **kwargs), x, batch_dims, dtype)


def sinkhorn(a, b, cost=None, grid=None, p=2, epsilon=0.05, max_iter=100, tol=0.0, log_domain=False, *,
             scale=1.0, check_every=10):
    """ndforge.ot.sinkhorn's transport cost of many pairs: ``a`` and ``b`` are (pairs, bins) dask arrays chunked
    along the pairs; each chunk of pairs is one batched solve.  Returns the (pairs,) costs."""
    a = _as_dask(a)
    b = _as_dask(b)
    a = a.rechunk({1: -1})
    b = b.rechunk(a.chunks)
    fn = functools.partial(_ot.sinkhorn, cost=cost, grid=grid, p=p, epsilon=epsilon, max_iter=max_iter, tol=tol,
                           log_domain=log_domain, scale=scale, check_every=check_every)
    return da.map_blocks(lambda x, y: np.asarray(fn(x, y)).reshape(-1), a, b, drop_axis=1, dtype=np.float64,
                         meta=np.empty((0,), np.float64))


# --- linear filters (where the package has them) --------------------------------------------

def _per_axis(v, n, cast=int):
    v = np.atleast_1d(np.asarray(v))
    return [cast(t) for t in (list(v) * n if len(v) == 1 else list(v))]


def _gauss_radius(sigma, truncate, radius, n):
    if radius is not None:
        return _per_axis(radius, n)
    return [int(truncate * s + 0.5) for s in _per_axis(sigma, n, float)]


def _linear_reach(name, ndim, batch_dims, a, kw):
    """{axis: reach} of a linear filter with the arguments of its ndforge.ndimage function."""
    axes = _spatial_axes(ndim, batch_dims, kw.get("axes"))
    n = len(axes)
    if name in ("correlate", "convolve"):
        return dict(zip(axes, _reach(np.shape(a[0]), kw.get("origin", 0), n)))
    if name in ("correlate1d", "convolve1d"):
        return {kw.get("axis", -1) % ndim: _reach((len(np.atleast_1d(a[0])),), kw.get("origin", 0), 1)[0]}
    if name == "uniform_filter1d":
        return {kw.get("axis", -1) % ndim: _reach((int(a[0]),), kw.get("origin", 0), 1)[0]}
    if name == "uniform_filter":
        size = a[0] if a else kw.get("size", 3)
        return dict(zip(axes, _reach(_per_axis(size, n), kw.get("origin", 0), n)))
    if name == "gaussian_filter1d":
        return {kw.get("axis", -1) % ndim: _gauss_radius(a[0], kw.get("truncate", 4.0), kw.get("radius"), 1)[0]}
    if name in ("gaussian_filter", "gaussian_laplace", "gaussian_gradient_magnitude"):
        return dict(zip(axes, _gauss_radius(a[0], kw.get("truncate", 4.0), kw.get("radius"), n)))
    if name in ("sobel", "prewitt", "laplace"):
        return {ax: 1 for ax in axes}
    return None


def _make_linear(name):
    f1 = getattr(_ndi, name)

    def f(input, *args, **kw):
        x = _as_dask(input)
        if "output" in kw:
            kw["output"] = _out_dtype(x, kw["output"])
        def call(region):
            return f1(region, *args, **kw)
        reach = _linear_reach(name, x.ndim, kw.get("batch_dims", 0), args, kw)
        probe = tuple(2 * reach.get(a, 0) + 1 for a in range(x.ndim))  # the element fits: the output's dtype
        dtype = call(np.zeros(probe, x.dtype)).dtype
        mode = kw.get("mode", "reflect")
        return _local(call, x, list(reach), list(reach.values()), wrap=mode in _WRAP, dtype=dtype,
                      name="ndforge-" + name)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = ("ndforge.ndimage.%s on a dask array (exact halo; arguments after the input as ndforge.ndimage's,"
                 " the ones after the first positional by keyword)." % name)
    return f


_LINEAR = ("correlate1d", "convolve1d", "correlate", "convolve", "uniform_filter1d", "uniform_filter",
           "gaussian_filter1d", "gaussian_filter", "sobel", "prewitt", "laplace", "gaussian_laplace",
           "gaussian_gradient_magnitude")
for _name in _LINEAR:
    if hasattr(_ndi, _name):
        globals()[_name] = _make_linear(_name)
        __all__.append(_name)


# --- interpolation ----------------------------------------------------------------------------
#
# The single-array call computes, per output point, an input coordinate per axis (the transform's
# double arithmetic), maps a coordinate outside the axis back by the mode (or returns cval), and sums
# the order + 1 taps per axis of the source (the input, or its float64 spline coefficients, padded by
# 12 samples per side in the nearest and grid-constant modes), taps beyond an end folded by the mode.
# Chunked: the coefficients come from line passes (each spatial axis made whole in turn); each output
# block then evaluates with prefilter=False on the region of the source its points reach.  Its
# coordinates are computed as the library computes them and mapped by the mode on the whole axis, then
# shifted into the region's frame; the shift is by an integer no larger than the coordinate, so it is
# exact and the taps' weights (from the coordinate's fraction) are unchanged.  A region that reaches an
# end of an axis starts or stops exactly there, so the library folds the taps there as on the whole
# array; grid-wrap folds across the axis, so its region carries the far end's three samples after it.

_HUGE = 4503599627370496.0  # coordinates at least this large are treated as non-finite (2^52)
_MAPPED = ("constant", "mirror", "reflect", "wrap", "grid-wrap")  # modes that map a coordinate back
_NPAD = 12


def _interp_mode_name(mode):
    if not isinstance(mode, str):
        raise RuntimeError("boundary mode not supported")
    return "reflect" if mode == "grid-mirror" else mode


def _map_coord(x, n, mode, xp):
    """The library's mapping of coordinates outside [0, n-1] back into the axis (-1: constant outside), in
    its double arithmetic; x finite and below 2^52 in magnitude."""
    lo, hi = x < 0, x > n - 1
    if mode == "constant":
        return xp.where(lo | hi, -1.0, x)
    if n <= 1:
        return xp.where(lo | hi, 0.0, x)
    if mode == "mirror":
        p = 2 * n - 2
        a = x + p * xp.trunc(-x / p)
        a = xp.where(a <= 1 - n, a + p, -a)
        b = x - p * xp.trunc(x / p)
        b = xp.where(b >= n, p - b, b)
    elif mode == "reflect":
        p = 2 * n
        a = xp.where(x < -p, x + p * xp.trunc(-x / p), x)
        a = xp.where(a < -n, a + p, xp.where(a > -1e-15, 1e-15, -a) - 1)
        b = x - p * xp.trunc(x / p)
        b = xp.where(b >= n, (p - b) - 1, b)
    elif mode == "wrap":
        a = x + (n - 1) * (xp.trunc(-x / (n - 1)) + 1)
        b = x - (n - 1) * xp.trunc(x / (n - 1))
    else:  # grid-wrap
        a = x + n * (xp.trunc((-1 - x) / n) + 1)
        b = x - n * xp.trunc(x / n)
    return xp.where(lo, a, xp.where(hi, b, x))


def _mapped_range(cc, n, mode):
    """(min, max) of the mapped coordinates that reach the source (None: none does), host arrays."""
    with np.errstate(all="ignore"):
        ok = np.abs(cc) < _HUGE
        if mode in _MAPPED:
            m = _map_coord(np.where(ok, cc, 0.0), n, mode, np)
            ok &= m > -1.0
            cc = m
    if not ok.any():
        return None
    return float(cc[ok].min()), float(cc[ok].max())


def _region(rng, n, mode, margin=0.0):
    """The region of an axis of n samples that coordinates in rng = (min, max) need: dict(s=first sample,
    spans=[(start, stop), ...] in the order the region holds them).  At least 5 samples (the library's
    fold at an end needs them), the whole axis where it would reach both ends."""
    if rng is None:
        a, b = 0, min(n, 5)
    else:
        lo = min(max(rng[0] - margin, -10.0), n + 10.0)
        hi = min(max(rng[1] + margin, -10.0), n + 10.0)
        a = min(max(int(np.floor(lo)) - 4, 0), n)
        b = min(max(int(np.floor(hi)) + 6, a), n)
        if b - a < 5:
            b = min(n, a + 5)
            a = max(0, b - 5)
    whole = dict(s=0, spans=[(0, n)], whole=True)
    if n <= 5 or (a == 0 and b == n):
        return whole
    spans = [(a, b)]
    if mode == "grid-wrap":  # the taps beyond one end read the other end's first three samples
        if a == 0:
            if b > n - 3:
                return whole
            spans.append((n - 3, n))
        else:
            if a < 3:
                return whole
            spans.append((0, 3))
    return dict(s=a, spans=spans, whole=False)


def _region_coords(cc, reg, n, mode, xp):
    """Coordinates along one axis in the region's frame: the library, evaluating on the region, maps them
    to the whole axis's mapped coordinates shifted by the region's start (NaN: the point returns cval, or
    NaN in the unmapped modes, at once)."""
    if reg["whole"]:
        return cc
    s = float(reg["s"])
    with np.errstate(all="ignore"):
        bad = ~(xp.abs(cc) < _HUGE)
        if mode in _MAPPED:
            m = _map_coord(xp.where(bad, 0.0, cc), n, mode, xp)
            bad = bad | ~(m > -1.0)
            y = m - s
            if mode == "reflect":  # in (-1, 0) only at the axis's start (s = 0): the library maps -m-1 back to m
                y = xp.where(m < 0, -m - 1.0, y)
        else:
            y = cc - s
    return xp.where(bad, xp.nan, y)


def _pieces(bounds, spans):
    """(block, local start, local stop) covering the global spans in order, for chunk bounds ``bounds``."""
    out = []
    for a, b in spans:
        j = int(np.searchsorted(bounds, a, side="right")) - 1
        while a < b:
            e = min(b, int(bounds[j + 1]))
            out.append((j, a - int(bounds[j]), e - int(bounds[j])))
            a, j = e, j + 1
    return out


def _paste(blocks, pieces):
    """The region made of the blocks (their product order over the per-axis pieces)."""
    combos = list(itertools.product(*pieces))
    if len(combos) == 1:
        return blocks[0][tuple(slice(p[1], p[2]) for p in combos[0])]
    xp = _xp(blocks[0])
    starts = [np.concatenate([[0], np.cumsum([p[2] - p[1] for p in ps])]) for ps in pieces]
    region = xp.empty(tuple(int(s[-1]) for s in starts), blocks[0].dtype)
    for blk, idx in zip(blocks, itertools.product(*[range(len(ps)) for ps in pieces])):
        p = [pieces[a][k] for a, k in enumerate(idx)]
        dst = tuple(slice(int(starts[a][k]), int(starts[a][k]) + q[2] - q[1]) for a, (k, q) in enumerate(zip(idx, p)))
        region[dst] = blk[tuple(slice(q[1], q[2]) for q in p)]
    return region


def _sep_coord(geom, d, o):
    """Axis d's coordinates of the output indices o (float64) for a zoom / shift transform."""
    c = o
    if geom["shift"] is not None:
        c = c + geom["shift"][d]
    if geom["zoom"] is not None:
        z = geom["zoom"][d]
        c = (c + 0.5) * z - 0.5 if geom["grid_mode"] else c * z
    return c


def _transform_coords(geom, ranges, xp):
    """The input coordinates (one array per input spatial axis, broadcastable to the block) of the output
    points in ``ranges`` (per output spatial axis: start, stop), in the library's double arithmetic."""
    nd = len(ranges)
    o = [xp.arange(a, b, dtype=np.float64).reshape((-1,) + (1,) * (nd - 1 - k)) for k, (a, b) in enumerate(ranges)]
    if geom["kind"] == "sep":
        return [_sep_coord(geom, d, o[d]) for d in range(nd)]
    m, off = geom["matrix"], geom["offset"]
    out = []
    for h in range(m.shape[0]):
        t = o[0] * float(m[h, 0])
        for k in range(1, nd):
            t = t + o[k] * float(m[h, k])
        out.append(t + float(off[h]))
    return out


_SLAB = 1 << 21  # output points per library call of a block (bounds the coordinates' memory)


def _interp_block(spec, geom, ranges, regs, pieces, blocks, coords=None):
    """One output block: its region of the source, its coordinates in the region's frame, the library's
    map_coordinates with prefilter=False, slab by slab along the first output spatial axis."""
    region = _paste(blocks, pieces)
    xp = _xp(region)
    nb, npad, mode, nsrc = spec["nb"], spec["npad"], spec["mode"], spec["nsrc"]
    sp = ranges[nb:]
    shape = tuple(b - a for a, b in ranges)
    out = xp.empty(shape, spec["dtype"])
    if out.size == 0:
        return out
    per = int(np.prod([b - a for a, b in sp[1:]], dtype=np.int64))
    step = max(1, _SLAB // max(per, 1))
    for r0 in range(sp[0][0], sp[0][1], step):
        r1 = min(sp[0][1], r0 + step)
        sub = [(r0, r1)] + list(sp[1:])
        if coords is None:
            cs = _transform_coords(geom, sub, xp)
        else:
            blk = xp.asarray(coords[(slice(None), slice(r0 - sp[0][0], r1 - sp[0][0]))])
            cs = [blk[h].astype(np.float64) for h in range(blk.shape[0])]
        ys = []
        for h, c in enumerate(cs):
            cc = c + float(npad) if npad else c
            ys.append(_region_coords(cc, regs[h], nsrc[h], mode, xp))
        sshape = tuple(b - a for a, b in sub)
        y = xp.stack([xp.broadcast_to(v, sshape) for v in ys])
        r = _ndi.map_coordinates(region, y, output=spec["dtype"], order=spec["order"], mode=mode, cval=spec["cval"],
                                 prefilter=False, batch_dims=nb)
        out[(slice(None),) * nb + (slice(r0 - sp[0][0], r1 - sp[0][0]),)] = r
    return out


def _pad_value(dtype, cval):
    """cval as the library pads with it in the grid-constant mode: in the input's dtype (C's casts)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.bool_(cval != 0)
    if dtype.kind == "f":
        return dtype.type(cval)
    v = int(cval) if -9223372036854775808.0 < cval < 9223372036854775808.0 else -(1 << 63)
    return np.array(v, np.int64).astype(dtype)[()]


def _source_dtype(dt):
    """The dtype the library reads an input of dtype dt as (float16 through float32; unread ones as float64)."""
    from . import _interp
    dt = np.dtype(dt)
    if dt == np.float16:
        return np.dtype(np.float32)
    return dt if dt in _interp._READS else np.dtype(np.float64)


def _lines(x, axis, chunks):
    """x rechunked to hold whole lines along axis, the other axes chunked as ``chunks``."""
    return x.rechunk(tuple(-1 if b == axis else chunks[b] for b in range(x.ndim)))


def _spline_passes(x, order, mode, axes, dtype):
    """spline_filter1d along each axis in turn, each pass on chunks holding whole lines along its axis."""
    chunks = x.chunks
    for a in axes:
        f = functools.partial(_ndi.spline_filter1d, order=order, axis=a, output=dtype, mode=mode)
        x = _lines(x, a, chunks).map_blocks(f, dtype=dtype, meta=_meta(x._meta, dtype))
    return x


def _coefficients(x, order, mode, cval, nb):
    """The spline coefficients the single-array call interpolates (float64; padded by 12 samples per
    spatial side in the nearest and grid-constant modes), as a dask array."""
    if mode in ("nearest", "grid-constant"):
        value = _pad_value(x.dtype, cval)
        for a in range(nb, x.ndim):  # edge samples or cval, by slices and concatenation (NumPy or CuPy blocks)
            ends = [x[(slice(None),) * a + (slice(0, 1),)], x[(slice(None),) * a + (slice(x.shape[a] - 1, None),)]]
            if mode == "grid-constant":
                ends = [e.map_blocks(lambda b: _xp(b).full_like(b, value)) for e in ends]
            x = da.concatenate([ends[0]] * _NPAD + [x] + [ends[1]] * _NPAD, axis=a)
    return _spline_passes(x, order, mode, range(nb, x.ndim), np.dtype(np.float64))


def _out_chunks(x, nb, out_sp, output_chunks):
    if output_chunks is None:
        if tuple(out_sp) == tuple(x.shape[nb:]):
            return x.chunks
        output_chunks = tuple(max(c) if c else 1 for c in x.chunks[nb:])
    ch = da.core.normalize_chunks(output_chunks, tuple(out_sp), dtype=x.dtype)
    return x.chunks[:nb] + tuple(ch)


def _geometric_empty(x, geom, out_sp, order, mode, cval, prefilter, dtype, nb, output_chunks, coords):
    """_geometric where the input or the output has no elements: there are no samples to read.  An empty
    output; or points outside an empty input, which the single-array call on that (empty) input computes
    (cval, grid-constant's padding interpolated) or refuses (the modes that map them onto samples)."""
    from . import _interp
    shape = tuple(x.shape[:nb]) + tuple(int(s) for s in out_sp)
    src = x.compute()
    if 0 in shape:
        r = _xp(src).empty(shape, dtype=dtype)
    elif geom["kind"] == "coords":
        r = _interp.map_coordinates(src, coords.compute(), output=dtype, order=order, mode=mode, cval=cval,
                                    prefilter=prefilter, batch_dims=nb)
    else:  # affine_transform, a diagonal one too (kind 'sep'; zoom and shift keep an empty axis empty)
        m, off = (geom["matrix"], geom["offset"]) if geom["kind"] == "affine" else geom["diagonal"]
        r = _interp.affine_transform(src, m, off, output_shape=tuple(out_sp), output=dtype, order=order, mode=mode,
                                     cval=cval, prefilter=prefilter, batch_dims=nb)
    if coords is not None and 0 not in shape:
        chunks = x.chunks[:nb] + coords.chunks[1:]
    elif output_chunks is not None and 0 not in shape:
        if isinstance(output_chunks, tuple):  # a chunk size taken from an empty axis: the whole axis
            output_chunks = tuple(-1 if isinstance(c, (int, np.integer)) and c == 0 else c for c in output_chunks)
        chunks = x.chunks[:nb] + tuple(da.core.normalize_chunks(output_chunks, tuple(out_sp), dtype=x.dtype))
    else:
        chunks = x.chunks[:nb] + tuple((int(s),) for s in out_sp)
    return da.from_array(r, chunks=chunks, asarray=False)


def _geometric(x, geom, out_sp, order, mode, cval, prefilter, dtype, nb, output_chunks, coords=None,
            name="ndforge-interp"):
    """The chunked transform: geom gives the coordinates (kind 'sep': per axis zoom and shift; 'affine':
    matrix and offset; 'coords': the coordinates array ``coords``, chunked as the output)."""
    if 0 in x.shape or 0 in tuple(out_sp):
        return _geometric_empty(x, geom, out_sp, order, mode, cval, prefilter, dtype, nb, output_chunks, coords)
    mode = _interp_mode_name(mode)
    src = x.astype(_source_dtype(x.dtype)) if _source_dtype(x.dtype) != x.dtype else x
    filtered = bool(prefilter) and order > 1
    npad = _NPAD if filtered and mode in ("nearest", "grid-constant") else 0
    src = _coefficients(src, order, mode, cval, nb) if filtered else src
    nsp = x.ndim - nb
    nsrc = [int(s) for s in src.shape[nb:]]
    if coords is not None:
        chunks = x.chunks[:nb] + coords.chunks[1:]
    else:
        chunks = _out_chunks(x, nb, out_sp, output_chunks)
    starts = [np.concatenate([[0], np.cumsum(c)]).astype(np.int64) for c in chunks]
    sbounds = [np.concatenate([[0], np.cumsum(c)]).astype(np.int64) for c in src.chunks]
    spec = dict(nb=nb, npad=npad, mode=mode, nsrc=nsrc, order=int(order), cval=float(cval), dtype=np.dtype(dtype))
    bounds = None
    if coords is not None:  # the extent of every block of coordinates, computed now
        def ext(b):
            b = _host(b).astype(np.float64).reshape(b.shape[0], -1)
            with np.errstate(all="ignore"):
                ok = np.abs(b) < _HUGE
                lo = np.where(ok, b, np.inf).min(axis=1) if b.shape[1] else np.full(b.shape[0], np.inf)
                hi = np.where(ok, b, -np.inf).max(axis=1) if b.shape[1] else np.full(b.shape[0], -np.inf)
            return np.stack([lo, hi]).reshape((2, b.shape[0]) + (1,) * (coords.ndim - 1))
        ex = coords.map_blocks(ext, chunks=((2,), (nsp,)) + tuple((1,) * len(c) for c in coords.chunks[1:]),
                               new_axis=0, dtype=np.float64, meta=np.empty((0,) * (coords.ndim + 1)))
        bounds = np.asarray(ex.compute())
    sep_regs = {}

    def regions(idx):
        sp_idx = idx[nb:]
        ranges = [(int(starts[nb + k][sp_idx[k]]), int(starts[nb + k][sp_idx[k] + 1])) for k in range(len(sp_idx))]
        if geom["kind"] == "sep":
            regs = []
            for d in range(nsp):
                key = (d, sp_idx[d])
                if key not in sep_regs:
                    c = _sep_coord(geom, d, np.arange(*ranges[d], dtype=np.float64))
                    c = c + float(npad) if npad else c
                    sep_regs[key] = _region(_mapped_range(c, nsrc[d], mode), nsrc[d], mode)
                regs.append(sep_regs[key])
            return regs
        if geom["kind"] == "affine":
            corners = np.array(list(itertools.product(*[(a, max(a, b - 1)) for a, b in ranges])), np.float64)
            cs = [(corners * geom["matrix"][h]).sum(axis=1) + geom["offset"][h] + npad for h in range(nsp)]
            lohi = [(float(c.min()), float(c.max())) for c in cs]
        else:
            sl = (slice(None), slice(None)) + tuple(sp_idx)
            lo, hi = bounds[sl].reshape(2, nsp)
            lohi = [None if lo[h] > hi[h] else (float(lo[h]) + npad, float(hi[h]) + npad) for h in range(nsp)]
        regs = []
        for h in range(nsp):
            n = nsrc[h]
            r = lohi[h]
            if r is not None and mode in _MAPPED:
                if mode == "constant":  # coordinates outside the axis give cval: only those inside need samples
                    r = None if r[1] < 0 or r[0] > n - 1 else (max(r[0], 0.0), min(r[1], n - 1.0))
                elif r[0] < 1e-3 or r[1] > n - 1 - 1e-3:  # folded somewhere: the whole axis
                    regs.append(dict(s=0, spans=[(0, n)], whole=True))
                    continue
            regs.append(_region(r, n, mode, margin=1e-3))
        return regs

    token = tokenize(name, src.name, geom["kind"], {k: v for k, v in geom.items() if k != "kind"}, spec, chunks,
                     None if coords is None else coords.name)
    out = "%s-%s" % (name, token)
    dsk = {}
    for idx in itertools.product(*[range(len(c)) for c in chunks]):
        ranges = [(int(starts[a][idx[a]]), int(starts[a][idx[a] + 1])) for a in range(len(chunks))]
        regs = regions(idx)
        spans = [[ranges[a]] for a in range(nb)] + [r["spans"] for r in regs]
        pieces = [_pieces(sbounds[a], spans[a]) for a in range(x.ndim)]
        keys = [(src.name,) + tuple(p[0] for p in combo) for combo in itertools.product(*pieces)]
        task = functools.partial(_interp_block, spec, geom, ranges, regs, pieces)
        if coords is None:
            dsk[(out,) + idx] = (task, keys)
        else:
            dsk[(out,) + idx] = (task, keys, (coords.name, 0) + idx[nb:])
    deps = [src] + ([] if coords is None else [coords])
    graph = HighLevelGraph.from_collections(out, dsk, dependencies=deps)
    return da.Array(graph, out, chunks=chunks, meta=_meta(x._meta, dtype, len(chunks)))


def _probe_dtype(x, nb, output, order, mode, cval):
    """The single-array call's checks of dtype, output, order and mode, and its output dtype."""
    from . import _interp
    nsp = x.ndim - nb
    probe = np.zeros((1,) * x.ndim, x.dtype)
    r = _interp.map_coordinates(probe, np.zeros((nsp, 1)), output=_out_dtype(x, output), order=order, mode=mode,
                                cval=cval, prefilter=False, batch_dims=nb)
    return r.dtype


def spline_filter1d(input, order=3, axis=-1, output=np.float64, mode="mirror"):
    """ndforge.ndimage.spline_filter1d on a dask array: the lines along ``axis`` are made whole in a chunk."""
    x = _as_dask(input)
    dtype = _ndi.spline_filter1d(np.zeros((2,) * x.ndim, x.dtype), order, axis, _out_dtype(x, output), mode).dtype
    return _spline_passes(x, order, mode, [axis % x.ndim], dtype).rechunk(x.chunks)


def spline_filter(input, order=3, output=np.float64, mode="mirror", *, batch_dims=0):
    """ndforge.ndimage.spline_filter on a dask array: one pass per spatial axis, each on chunks holding whole
    lines along it (bit for bit the single-array passes)."""
    from . import _interp
    x = _as_dask(input)
    want = _ndi.spline_filter(np.zeros((2,) * x.ndim, x.dtype), order, _out_dtype(x, output), mode,
                              batch_dims=batch_dims).dtype
    work = want if _interp._writes(want) else np.dtype(np.float64)  # written in float64, converted at the end
    r = _spline_passes(x, order, mode, range(batch_dims, x.ndim), work)
    if work != want:
        r = r.astype(want)
    return r.rechunk(x.chunks)


def _sep_geom(zoom=None, shift=None, grid_mode=False):
    return dict(kind="sep", zoom=None if zoom is None else tuple(float(v) for v in zoom),
                shift=None if shift is None else tuple(float(v) for v in shift), grid_mode=bool(grid_mode))


def _per_axis_values(v, n):
    vals = [float(t) for t in np.atleast_1d(np.asarray(_host(v), dtype=np.float64))]
    if len(vals) not in (1, n):
        raise RuntimeError("sequence argument must have length equal to input rank")
    return vals * n if len(vals) == 1 else vals


def shift(input, shift, output=None, order=3, mode="constant", cval=0.0, prefilter=True, *, batch_dims=0):
    """ndforge.ndimage.shift on a dask array (exact for any chunking; output chunks are the input's)."""
    x = _as_dask(input)
    dtype = _probe_dtype(x, batch_dims, output, order, mode, cval)
    nsp = x.ndim - batch_dims
    sh = [-v for v in _per_axis_values(shift, nsp)]
    return _geometric(x, _sep_geom(shift=sh), x.shape[batch_dims:], order, mode, cval, prefilter, dtype, batch_dims,
                   None, name="ndforge-shift")


def zoom(input, zoom, output=None, order=3, mode="constant", cval=0.0, prefilter=True, *, grid_mode=False,
         batch_dims=0, output_chunks=None):
    """ndforge.ndimage.zoom on a dask array (exact for any chunking).  ``output_chunks``: the output's chunks
    along the spatial axes (default: the input's chunk size)."""
    from . import _interp
    from ._core import C
    x = _as_dask(input)
    dtype = _probe_dtype(x, batch_dims, output, order, mode, cval)
    nsp = x.ndim - batch_dims
    z = np.atleast_1d(np.asarray(_host(zoom), dtype=np.float64))
    n, vals = _interp._offsets(z, nsp)
    shape = _interp._shape_from(C["ndf_zoom_shape"], x.shape, batch_dims, n, vals)
    out_sp = shape[batch_dims:]
    if prefilter and all(v == 1.0 for v in vals):  # by exactly 1: ndf_zoom's copy of each block
        y = x.map_blocks(lambda b: _interp.zoom(b, 1, output=dtype, order=order, mode=mode, cval=cval,
                                                batch_dims=batch_dims), dtype=dtype)
        return y.rechunk(_out_chunks(x, batch_dims, out_sp, output_chunks))
    factors = []
    for d in range(nsp):
        num, div = x.shape[batch_dims + d], out_sp[d]
        if not grid_mode:
            num, div = num - 1, div - 1
        factors.append(float(num) / float(div) if div != 0 else 1.0)
    return _geometric(x, _sep_geom(zoom=factors, grid_mode=grid_mode), out_sp, order, mode, cval, prefilter, dtype,
                   batch_dims, output_chunks, name="ndforge-zoom")


def affine_transform(input, matrix, offset=0.0, output_shape=None, output=None, order=3, mode="constant",
                     cval=0.0, prefilter=True, *, batch_dims=0, output_chunks=None):
    """ndforge.ndimage.affine_transform on a dask array (exact for any chunking: each output block reads the
    region its transformed corners reach).  ``output_chunks`` as for zoom."""
    x = _as_dask(input)
    nb = batch_dims
    nsp = x.ndim - nb
    m = np.asarray(_host(matrix), dtype=np.float64)
    if output_shape is None:
        output_shape = x.shape[nb:]
    output_shape = tuple(int(s) for s in output_shape)
    # the single-array call checks the matrix, offset and output shape on a small probe
    probe = np.zeros((1,) * x.ndim, x.dtype)
    dtype = _ndi.affine_transform(probe, m, offset, output_shape=(1,) * len(output_shape),
                                  output=_out_dtype(x, output), order=order, mode=mode, cval=cval, prefilter=False,
                                  batch_dims=nb).dtype
    if m.ndim == 1:
        zm = list(m) * nsp if len(m) == 1 else list(m)
        off = _per_axis_values(offset, nsp)
        geom = _sep_geom(zoom=zm, shift=[off[h] / zm[h] for h in range(nsp)])
        geom["diagonal"] = (tuple(zm), tuple(off))  # the call as given, for an empty input (_geometric_empty)
    else:
        if m.shape[1] == nsp + 1 and m.shape[0] in (nsp, nsp + 1):
            off, m = list(m[:nsp, nsp]), m[:nsp, :nsp]
        else:
            off = _per_axis_values(offset, nsp)
        geom = dict(kind="affine", matrix=np.ascontiguousarray(m), offset=np.asarray(off, np.float64))
    return _geometric(x, geom, output_shape, order, mode, cval, prefilter, dtype, nb, output_chunks,
                   name="ndforge-affine_transform")


_DG_SIN = (1.58962301572218447952E-10, -2.50507477628503540135E-8, 2.75573136213856773549E-6,
           -1.98412698295895384658E-4, 8.33333333332211858862E-3, -1.66666666666666307295E-1)
_DG_COS = (1.13678171382044553091E-11, -2.08758833757683644217E-9, 2.75573155429816611547E-7,
           -2.48015872936186303776E-5, 1.38888888888806666760E-3, -4.16666666666666348141E-2,
           4.99999999999999999798E-1)


def _sincos_deg(a):
    """sin and cos of a in degrees as the library computes them for rotate (Cephes' sindg / cosdg)."""
    import math
    x = abs(a)
    if x > 1.0e14:
        return 0.0, 0.0
    y = math.floor(x / 45.0)
    j = int(y - math.ldexp(math.floor(math.ldexp(y, -4)), 4))
    if j & 1:
        j += 1
        y += 1.0
    j &= 7
    flip = j > 3
    if flip:
        j -= 4
    z = (x - y * 45.0) * 1.74532925199432957692E-2
    zz = z * z

    def poly(v, c):
        t = c[0]
        for k in c[1:]:
            t = t * v + k
        return t
    ps = z + z * (zz * poly(zz, _DG_SIN))
    pc = 1.0 - zz * poly(zz, _DG_COS)
    s, c = (pc, ps) if j in (1, 2) else (ps, pc)
    if flip != (a < 0):
        s = -s
    if flip != (j > 1):
        c = -c
    return s, c


def rotate(input, angle, axes=(1, 0), reshape=True, output=None, order=3, mode="constant", cval=0.0,
           prefilter=True, *, batch_dims=0, output_chunks=None):
    """ndforge.ndimage.rotate on a dask array (exact for any chunking; the axes off the plane are batch
    axes, each chunk of them rotated on its own).  ``output_chunks`` as for zoom."""
    from . import _interp
    from ._core import C
    x = _as_dask(input)
    nb = batch_dims
    # the single-array call checks the arguments on a small probe
    dtype = _ndi.rotate(np.zeros((2,) * x.ndim, x.dtype), angle, axes, reshape, _out_dtype(x, output), order, mode,
                        cval, prefilter=False, batch_dims=nb).dtype
    nsp = x.ndim - nb
    a0, a1 = sorted(int(a) % nsp for a in axes)
    shape = _interp._shape_from(C["ndf_rotate_shape"], x.shape, nb, float(angle), a0, a1, 1 if reshape else 0)
    s, c = _sincos_deg(float(angle))
    iy, ix = float(x.shape[nb + a0]), float(x.shape[nb + a1])
    h0, h1 = float(shape[nb + a0] - 1) / 2, float(shape[nb + a1] - 1) / 2
    off = np.array([(iy - 1) / 2 - (c * h0 + s * h1), (ix - 1) / 2 - (-s * h0 + c * h1)])
    geom = dict(kind="affine", matrix=np.array([[c, s], [-s, c]]), offset=off)
    plane = [nb + a0, nb + a1]
    xt = da.moveaxis(x, plane, [-2, -1])
    oc = None
    if output_chunks is not None:
        full = da.core.normalize_chunks(output_chunks, tuple(shape[nb:]), dtype=x.dtype)
        oc = (full[a0], full[a1])
    out_plane = (shape[nb + a0], shape[nb + a1])
    if oc is None and out_plane != (x.shape[nb + a0], x.shape[nb + a1]):
        oc = (max(x.chunks[nb + a0]), max(x.chunks[nb + a1]))
    elif oc is None:
        oc = (x.chunks[nb + a0], x.chunks[nb + a1])
    r = _geometric(xt, geom, out_plane, order, mode, cval, prefilter, dtype, x.ndim - 2, oc, name="ndforge-rotate")
    return da.moveaxis(r, [-2, -1], plane)


def map_coordinates(input, coordinates, output=None, order=3, mode="constant", cval=0.0, prefilter=True, *,
                    batch_dims=0):
    """ndforge.ndimage.map_coordinates on a dask array; ``coordinates`` (NumPy, CuPy or dask) give the
    output's chunks (axis 0 whole).  The extent of every chunk of coordinates is computed when this is
    called (it decides which region of the input each output chunk reads)."""
    x = _as_dask(input)
    nb = batch_dims
    nsp = x.ndim - nb
    c = _as_dask(coordinates)
    if c.ndim < 1 or c.shape[0] != nsp:
        raise RuntimeError("invalid shape for coordinate array")
    if np.issubdtype(c.dtype, np.complexfloating):
        raise TypeError("Complex type not supported")
    c = c.rechunk({0: -1})
    dtype = _probe_dtype(x, nb, output, order, mode, cval)
    return _geometric(x, dict(kind="coords"), c.shape[1:], order, mode, cval, prefilter, dtype, nb, None, coords=c,
                   name="ndforge-map_coordinates")


for _name in ("spline_filter1d", "spline_filter", "map_coordinates", "affine_transform", "shift", "zoom", "rotate"):
    if hasattr(_ndi, _name):
        __all__.append(_name)


# --- cohorts: `ndforge preprocess`'s steps per file ------------------------------------------------

_PP_STEPS = ("reorient", "resample", "foreground", "normalize", "crop", "n4", "skullstrip")


def _read_volume(path):
    """(float32 voxels, affine) of a file nibabel reads (NIfTI: scl_slope / scl_inter applied, the sform,
    else the qform, else nibabel's default affine); an ``.npy`` file with nibabel's default affine."""
    import nibabel as nib
    p = str(path)
    if p.endswith(".npy"):
        a = np.load(p)
        a = np.asarray(a, np.float32)  # nibabel refuses int64 and bool images
        return a, nib.Nifti1Image(a, None).header.get_best_affine()
    img = nib.load(p)
    return np.asarray(img.get_fdata(dtype=np.float32)), np.asarray(img.affine, np.float64).copy()


def _write_volume(path, x, affine):
    import nibabel as nib
    nib.save(nib.Nifti1Image(np.asarray(_host(x), np.float32), affine), str(path))


def _volume_name(path):
    base = str(path).replace("\\", "/").rstrip("/").split("/")[-1]
    for ext in (".nii.gz", ".nii", ".npy"):
        if base.endswith(ext):
            return base[:-len(ext)]
    return base


def _pp_step(step, x, mask, aff, o):
    """One step of ``ndforge preprocess`` through ndforge.preprocess: (image, mask, affine, notes)."""
    from . import preprocess as pp
    from . import intensity
    if step == "reorient":
        y, a = pp.reorient_ras(x, aff)
        return y, (None if mask is None else pp.reorient_ras(mask, aff)[0]), a, {}
    if step == "resample":
        y, a = pp.resample(x, aff, o["spacing"], order=o["order"])
        m = None if mask is None else pp.resample(mask, aff, o["spacing"], order=0, output=mask.dtype)[0]
        return y, m, a, {"spacing": list(np.broadcast_to(np.asarray(o["spacing"], float), (3,)))}
    if step == "foreground":  # BET's brain/background threshold: t2 + 0.1 (t98 - t2), a 0/1 float32 mask
        q = np.asarray(_host(intensity.percentile(x, [2, 98])), np.float64)
        thr = float(q[0] + 0.1 * (q[1] - q[0]))
        return x, (x.astype(np.float64) > thr).astype(np.float32), aff, {"threshold": thr}
    if step == "normalize":
        masked = str(o["modality"]).lower() == "mri" and mask is not None
        y = pp.normalize(x, o["modality"], mask if masked else None, o["preset"], o["centre"], o["width"])
        return y, mask, aff, {"masked": masked}
    if step == "crop":
        if mask is None:
            raise ValueError("no mask to crop to (run foreground or skullstrip before crop)")
        y, a = pp.crop(x, aff, mask, o["margin"])
        return y, pp.crop(mask, aff, mask, o["margin"])[0], a, {}
    if step == "n4":
        sp = pp.affine_spacing(aff)
        if mask is None:
            y = pp.n4_bias_field_correction(x, shrinkFactor=o["shrink_factor"], spacing=sp)
        elif mask.dtype in (np.uint8, np.bool_):
            y = pp.n4_bias_field_correction(x, mask, shrinkFactor=o["shrink_factor"], spacing=sp)
        else:  # a 0/1 float mask is N4's weight image (foreground's)
            y = pp.n4_bias_field_correction(x, weight=mask, shrinkFactor=o["shrink_factor"], spacing=sp)
        return y.astype(np.float32), mask, aff, {}
    if step == "skullstrip":
        m = pp.skull_strip(x, pp.affine_spacing(aff), o["f"])
        return x, m.astype(np.uint8), aff, {"brain_voxels": int(_host(m).sum())}
    raise ValueError("unknown step %r (the steps: %s)" % (step, ", ".join(_PP_STEPS)))


def _preprocess_one(item, steps, opts, out, reader, device, return_arrays):
    """One volume of a cohort: read, the steps in order, written to ``out`` (NAME.nii.gz); its report."""
    import time
    t0 = time.perf_counter()
    rep = dict(input=str(item), status="ok", steps=[])
    try:
        x, aff = (reader or _read_volume)(item)
        x = np.asarray(x, np.float32) if not hasattr(x, "__cuda_array_interface__") else x.astype(np.float32)
        if device == "cuda":
            import cupy
            x = cupy.asarray(x)
        rep["read_s"] = time.perf_counter() - t0
        mask = None
        t1 = time.perf_counter()
        for step in steps:
            ts = time.perf_counter()
            try:
                x, mask, aff, notes = _pp_step(step, x, mask, aff, opts)
            except Exception as e:
                rep["steps"].append(dict(step=step, status="error", error="%s: %s" % (type(e).__name__, e)))
                raise
            if device == "cuda":
                import cupy
                cupy.cuda.Device().synchronize()
            rep["steps"].append(dict(step=step, status="ok", seconds=time.perf_counter() - ts, **notes))
        rep["process_s"] = time.perf_counter() - t1
        rep["shape"] = [int(s) for s in x.shape]
        rep["affine"] = np.asarray(aff).tolist()
        if out is not None:
            import os
            t2 = time.perf_counter()
            os.makedirs(str(out), exist_ok=True)
            path = os.path.join(str(out), _volume_name(item) + ".nii.gz")
            _write_volume(path, x, aff)
            rep["output"] = path
            rep["write_s"] = time.perf_counter() - t2
        if return_arrays:
            rep["image"], rep["mask"] = x, mask
    except Exception as e:
        rep["status"] = "error"
        rep["error"] = "%s: %s" % (type(e).__name__, e)
    rep["seconds"] = time.perf_counter() - t0
    return rep


def _expand_inputs(inputs):
    """Files and directories (a directory: its NIfTI files in name order), as ``ndforge preprocess`` takes them."""
    import os
    out = []
    for p in inputs:
        if isinstance(p, (str, os.PathLike)) and os.path.isdir(p):
            names = sorted(n for n in os.listdir(p) if n.endswith((".nii", ".nii.gz")))
            out.extend(os.path.join(p, n) for n in names)
        else:
            out.append(p)
    return out


def preprocess_cohort(inputs, steps="reorient,resample,normalize", *, out=None, spacing=1.0, order=1,
                      modality="mri", preset=None, centre=40.0, width=80.0, margin=4, shrink_factor=4, f=0.5,
                      device="cpu", reader=None, return_arrays=False, npartitions=None):
    """``ndforge preprocess`` over a cohort on Dask: a ``dask.bag`` with one report dict per volume.

    ``inputs``: files and directories (a directory's NIfTI files in name order), or a dask bag of items
    ``reader(item) -> (voxels, affine)`` reads (default: nibabel for NIfTI, ``.npy`` with nibabel's default
    affine).  Each volume runs the steps (``reorient``, ``resample``, ``foreground``, ``normalize``, ``crop``,
    ``n4``, ``skullstrip``; options as the command's) through ``ndforge.preprocess`` on one worker, float32
    from the read on, on the worker's GPU with ``device='cuda'`` (CuPy).  With ``out`` the result is written to
    ``out/NAME.nii.gz``.  A volume that fails is reported (``status``, ``error``, the failing step) and the
    others go on.  Report keys: input, status, error, steps (step, status, seconds, notes), read_s,
    process_s, write_s, seconds, shape, affine, output; with ``return_arrays``, image and mask.
    ``bag.compute()`` gives the reports in input order."""
    import dask.bag as db
    steps = [s.strip() for s in steps.split(",")] if isinstance(steps, str) else list(steps)
    for s in steps:
        if s not in _PP_STEPS:
            raise ValueError("unknown step %r (the steps: %s)" % (s, ", ".join(_PP_STEPS)))
    opts = dict(spacing=spacing, order=int(order), modality=modality, preset=preset, centre=float(centre),
                width=float(width), margin=margin, shrink_factor=int(shrink_factor), f=float(f))
    if isinstance(inputs, db.Bag):
        bag = inputs
    else:
        items = _expand_inputs(inputs)
        bag = db.from_sequence(items, npartitions=npartitions or max(1, len(items)))
    return bag.map(_preprocess_one, steps=steps, opts=opts, out=out, reader=reader, device=device,
                   return_arrays=return_arrays)


# --- one worker per GPU --------------------------------------------------------------------------

def _visible_gpus():
    """The GPU ids this process may use: CUDA_VISIBLE_DEVICES when set, else the devices CuPy counts."""
    import os
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [d.strip() for d in env.split(",") if d.strip() and d.strip() != "-1"]
    try:
        import cupy
        return [str(i) for i in range(cupy.cuda.runtime.getDeviceCount())]
    except Exception:
        return []


@contextlib.contextmanager
def _environ(env):
    """os.environ with env's variables set, restored on exit."""
    import os
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def gpu_cluster(n_workers=None, *, threads_per_worker=1, cache_dir=None, cpu_fallback=False, **kwargs):
    """A local Dask cluster with one worker process per visible GPU, sharing one kernel cache directory
    (``cache_dir``, else this process's ``NDF_CACHE_DIR``, else the library's default directory, which every
    process of the machine shares already).

    With dask_cuda installed: its ``LocalCUDACluster`` (``CUDA_VISIBLE_DEVICES`` rotated per worker, one GPU
    each; the workers' environment through ``env``); otherwise a
    ``distributed.SpecCluster`` of worker processes (nannies), each started with ``CUDA_VISIBLE_DEVICES`` set
    to its own GPU and ``NDF_CACHE_DIR`` to the shared directory.  No GPU: ``RuntimeError``, unless
    ``cpu_fallback`` (then a LocalCluster of ``n_workers`` CPU worker processes, default 1).  ``kwargs`` go
    to the cluster.  Use it with ``distributed.Client(cluster)``; CuPy chunks on the workers run on their
    GPU."""
    import os
    import distributed
    cache = cache_dir or os.environ.get("NDF_CACHE_DIR")
    env = dict(kwargs.pop("env", None) or {})
    if cache:
        os.makedirs(cache, exist_ok=True)
        env["NDF_CACHE_DIR"] = cache
    gpus = _visible_gpus()
    if n_workers is not None:
        gpus = gpus[:int(n_workers)]
    if not gpus:
        if not cpu_fallback:
            raise RuntimeError("ndforge.dask.gpu_cluster: no GPU visible (CUDA_VISIBLE_DEVICES=%r); "
                               "cpu_fallback=True gives CPU workers" % os.environ.get("CUDA_VISIBLE_DEVICES"))
        kwargs.setdefault("dashboard_address", None)
        return distributed.LocalCluster(n_workers=n_workers or 1, threads_per_worker=threads_per_worker,
                                        processes=True, env=env, **kwargs)
    try:
        from dask_cuda import LocalCUDACluster
    except ImportError:
        LocalCUDACluster = None
    if LocalCUDACluster is not None:
        # dask_cuda sets each worker's env to its own CUDA_VISIBLE_DEVICES; a nanny adds the
        # distributed.nanny.environ config, where this process's own variables take precedence, so both
        # are set while the cluster starts its nannies (and restored after)
        with dask.config.set({"distributed.nanny.environ": env}), _environ(env):
            return LocalCUDACluster(CUDA_VISIBLE_DEVICES=",".join(gpus), threads_per_worker=threads_per_worker,
                                    **kwargs)
    workers = {"gpu-%s" % g: dict(cls=distributed.Nanny, options=dict(nthreads=threads_per_worker,
                                                                     env=dict(env, CUDA_VISIBLE_DEVICES=g)))
               for g in gpus}
    scheduler = dict(cls=distributed.Scheduler, options=dict(dashboard_address=kwargs.pop("dashboard_address", None)))
    return distributed.SpecCluster(scheduler=scheduler, workers=workers, **kwargs)


__all__ += ["preprocess_cohort", "gpu_cluster"]
