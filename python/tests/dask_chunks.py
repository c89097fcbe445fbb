"""Chunkings and the bit-for-bit comparison that the ndforge.dask tests share."""

import numpy as np


def chunkings(shape, seed, his=(4, 2)):
    """Whole, single-voxel, and random uneven chunks of shape of at most h per chunk for each h in his."""
    rng = np.random.default_rng(seed)
    out = [tuple(shape), (1,) * len(shape)]
    for hi in his:
        ch = []
        for n in shape:
            c, left = [], n
            while left:
                k = int(min(left, rng.integers(1, hi + 1)))
                c.append(k)
                left -= k
            ch.append(tuple(c))
        out.append(tuple(ch))
    return out


def same(r, e):
    """r (a dask array, computed here, or an array) equals e: the dtype, NaN where NaN, every other value bit
    for bit."""
    r = r.compute() if hasattr(r, "compute") else r
    assert r.dtype == np.asarray(e).dtype
    np.testing.assert_array_equal(r, e)


def cupy_device():
    """CuPy where it has a device, else None."""
    try:
        import cupy
        return cupy if cupy.cuda.runtime.getDeviceCount() > 0 else None
    except Exception:
        return None
