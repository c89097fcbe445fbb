"""ndforge for Python: scipy.ndimage's functions, optimal transport and Euler
characteristic curves/transforms on NumPy arrays (CPU), torch tensors and CuPy
arrays (CUDA, zero-copy through DLPack, on the caller's current stream).

Submodules: ``ndforge.ndimage``, ``ndforge.morphology`` (scikit-image's
``reconstruction``), ``ndforge.metrics`` (scikit-image's image metrics, where
the library has them), ``ndforge.intensity`` (NumPy's histogram, percentile,
quantile, clip and scikit-image's equalize_hist; intensity windows and
normalizations), ``ndforge.preprocess`` (medical volumes: reorientation to
RAS+, resampling to a spacing, cropping to a mask, per-modality
normalization), ``ndforge.ot``, ``ndforge.topology`` and,
with PyTorch installed, ``ndforge.torch`` (autograd functions and layers), with
Dask installed, ``ndforge.dask`` (the functions on dask arrays, exact for any
chunking).
The shared library is found as _capi.py describes (``NDFORGE_LIBRARY``).
``tunables()`` lists the kernel variants a call's ``tune=`` may pick.
``set_cpu_threads(n)`` sets the CPU backend's threads and
``set_device_memory_limit(nbytes)`` caps the library's GPU memory per context,
for the calls that follow (both also context managers; ``get_...`` read them).
"""

from . import _capi

__version__ = _capi.functions["ndf_version"]().decode()
library_path = _capi.library_path


def tunables():
    """The library's tunables (docs/adr/0019): [{'name', 'op', 'doc', 'values' or 'range', 'default'}]."""
    import ctypes
    fn = _capi.functions
    if "ndf_tunable_count" not in fn:
        return []
    out, info = [], _capi.structs["ndf_tunable_info"]()
    for i in range(fn["ndf_tunable_count"]()):
        if fn["ndf_tunable_get"](i, ctypes.byref(info)):
            continue
        t = {"name": info.name.decode(), "op": info.op.decode(), "doc": (info.doc or b"").decode()}
        if info.nvalues:
            t["values"] = [info.values[k].decode() for k in range(info.nvalues)]
            t["default"] = t["values"][0]
        else:
            t["range"], t["default"] = (info.lo, info.hi), getattr(info, "def")
        out.append(t)
    return out


def __getattr__(name):
    if name in ("set_cpu_threads", "get_cpu_threads", "set_device_memory_limit", "get_device_memory_limit"):
        from . import _core
        return getattr(_core, name)
    if name in ("ndimage", "morphology", "metrics", "intensity", "preprocess", "ot", "topology", "torch", "dask"):
        import importlib
        return importlib.import_module("." + name, __name__)
    raise AttributeError("module 'ndforge' has no attribute %r" % name)
