"""scipy.ndimage as ndforge documents it where the installed scipy's build or version differs
(docs/adr/0033), for the C tests' oracle (oracle_interp.py) and the Python suite (python/tests/arrays.py):

* reflect / grid-mirror / nearest prefilter: scipy 1.18's (PR 24615), whose causal initial value sums the
  samples as they are; before 1.18 scipy accumulated that sum in c[0] itself.  spline_filter1d_as_1_18(old)
  wraps scipy's spline_filter1d so that those modes run 1.18's arithmetic and reach the output dtype through
  scipy's own line store (correlate1d with the weight 1: an exact product, the same C casts).
* affine_transform and rotate: each input coordinate from separately rounded products and sums.  Where
  scipy's build fuses multiply-adds (its 1.17 and 1.18 wheels; rotate's geometry from NumPy 2's OpenBLAS
  matmul), the reference is scipy's map_coordinates at the coordinates computed so.
"""
import functools

import numpy as np
import scipy.ndimage as ndi

# The prefilter's poles (scipy's values, as the library's ndf__spline_poles).
POLES = {2: [-0.171572875253809902396622551580603843], 3: [-0.267949192431122706472553658494127633],
         4: [-0.361341225900220177092212841325675255, -0.013725429297339121360331226939128204],
         5: [-0.430575347099973791851434783493520110, -0.043096288203264653822712376822550182]}


def reflect_prefilter(c, order):
    """The reflect / nearest prefilter of the lines c[:, l] (float64, in place) in scipy 1.18's order of
    operations: the gain, then per pole the causal initial value from the samples as they are, the causal
    recursion, the anticausal initial value and recursion."""
    n = c.shape[0]
    gain = 1.0
    for z in POLES[order]:
        gain *= (1.0 - z) * (1.0 - 1.0 / z)
    c *= gain
    for z in POLES[order]:
        zn, zi = z ** n, z
        acc = c[0] + zn * c[n - 1]
        for i in range(1, n):
            acc = acc + zi * (c[i] + zn * c[n - 1 - i])
            zi *= z
        c[0] = c[0] + acc * z / (1 - zn * zn)
        for i in range(1, n):
            c[i] = c[i] + z * c[i - 1]
        c[n - 1] = c[n - 1] * (z / (z - 1))
        for i in range(n - 2, -1, -1):
            c[i] = z * (c[i + 1] - c[i])
    return c


@functools.lru_cache(maxsize=None)
def prefilter_is_exact():
    """Whether the installed scipy's reflect / nearest prefilter inverts the B-spline sampling (scipy 1.18 and
    later); before, an error of order z^(2n) on a line of n samples."""
    x = np.array([1.0, -2.0])
    return bool(np.allclose(ndi.map_coordinates(x, [[0.0, 1.0]], order=5, mode="reflect"), x, rtol=1e-12,
                            atol=1e-12))


def spline_filter1d_as_1_18(old):
    """scipy's spline_filter1d (old), with the reflect / grid-mirror / nearest modes of order >= 2 as 1.18."""
    def spline_filter1d(input, order=3, axis=-1, output=np.float64, mode="mirror"):
        x = np.asarray(input)
        if order < 2 or mode not in ("reflect", "grid-mirror", "nearest") or x.ndim == 0 or x.shape[axis] <= 1:
            return old(input, order, axis, output, mode)
        lines = np.moveaxis(x.view(np.uint8) if x.dtype == np.bool_ else x, axis, 0)  # a bool read as its byte
        c = reflect_prefilter(lines.astype(np.float64).reshape(x.shape[axis], -1), order)
        return ndi.correlate1d(np.moveaxis(c.reshape(lines.shape), 0, axis), [1.0], axis, output=output,
                               mode="nearest")
    return spline_filter1d


@functools.lru_cache(maxsize=None)
def affine_is_unfused():
    """Whether the installed scipy's affine_transform (a full matrix) takes each input coordinate as ndforge
    documents it: the products summed left to right, then the offset, each operation rounded (scipy 1.10; the
    scipy 1.17 and 1.18 wheels differ in the last bit of some coordinates, as fused multiply-adds would)."""
    x = np.random.default_rng(0).normal(size=(9, 11))
    m, off = np.array([[0.81, -0.57], [0.57, 0.81]]), np.array([2.3, -1.7])
    i, j = np.indices((9, 11)).astype(np.float64)
    c = [(i * m[k, 0] + j * m[k, 1]) + off[k] for k in range(2)]
    return bool(np.array_equal(ndi.affine_transform(x, m, off, order=1, mode="grid-constant", cval=-2.6),
                               ndi.map_coordinates(x, c, order=1, mode="grid-constant", cval=-2.6)))


def affine_transform(input, matrix, offset=0.0, output_shape=None, output=None, order=3, mode="constant",
                     cval=0.0, prefilter=True):
    """scipy.ndimage.affine_transform with ndforge's coordinates where the installed scipy's differ."""
    m = np.asarray(matrix, np.float64)
    if affine_is_unfused() or m.ndim == 1:
        return ndi.affine_transform(input, matrix, offset, output_shape, output, order, mode, cval, prefilter)
    x = np.asarray(input)
    n = x.ndim
    if m.shape[1] == n + 1:  # homogeneous, (n + 1, n + 1) or (n, n + 1): the offset is its last column
        m, offset = m[:n, :n], m[:n, n]
    if output_shape is None:
        output_shape = output.shape if isinstance(output, np.ndarray) else x.shape
    offset = np.broadcast_to(np.asarray(offset, np.float64), (n,))
    o = np.indices(output_shape).astype(np.float64)
    coords = []
    for h in range(n):
        t = o[0] * m[h, 0]
        for k in range(1, m.shape[1]):
            t = t + o[k] * m[h, k]
        coords.append(t + offset[h])
    return ndi.map_coordinates(x, np.array(coords).reshape((n,) + tuple(output_shape)), output, order, mode, cval,
                               prefilter)


def rotate(input, angle, axes=(1, 0), reshape=True, output=None, order=3, mode="constant", cval=0.0,
           prefilter=True):
    """scipy.ndimage.rotate with ndforge's geometry (the output plane's extent and the offset) and coordinates,
    each product and sum rounded on its own: scipy's own where its matmul and affine_transform give those
    bits, else affine_transform (above) of each plane."""
    from scipy import special
    x = np.asarray(input)
    a0, a1 = sorted(int(a) % x.ndim for a in axes)
    c, s = float(special.cosdg(angle)), float(special.sindg(angle))
    iy, ix = x.shape[a0], x.shape[a1]
    rot = np.array([[c, s], [-s, c]])
    if reshape:
        b0, b1 = [0.0, s * ix, c * iy, c * iy + s * ix], [0.0, c * ix, -s * iy, -s * iy + c * ix]
        plane = (int(max(b0) - min(b0) + 0.5), int(max(b1) - min(b1) + 0.5))
        fused = (np.ptp(rot @ [[0, 0, iy, iy], [0, ix, 0, ix]], axis=1) + 0.5).astype(int)
    else:
        plane = fused = (iy, ix)
    h0, h1 = (plane[0] - 1) / 2, (plane[1] - 1) / 2
    offset = np.array([(iy - 1) / 2 - (c * h0 + s * h1), (ix - 1) / 2 - (-s * h0 + c * h1)])
    if affine_is_unfused() and tuple(fused) == plane and np.array_equal(
            (np.array([iy, ix]) - 1) / 2 - rot @ ((np.array(plane) - 1) / 2), offset):
        return ndi.rotate(input, angle, axes, reshape, output, order, mode, cval, prefilter)
    shape = list(x.shape)
    shape[a0], shape[a1] = plane
    out = output if isinstance(output, np.ndarray) else np.zeros(shape, x.dtype if output is None else output)
    others = [k for k in range(x.ndim) if k not in (a0, a1)]
    for idx in np.ndindex(*[x.shape[k] for k in others]):
        sl = [slice(None)] * x.ndim
        for k, v in zip(others, idx):
            sl[k] = v
        affine_transform(x[tuple(sl)], rot, offset, plane, out[tuple(sl)], order, mode, cval, prefilter)
    return out
