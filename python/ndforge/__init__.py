"""ndforge for Python: scipy.ndimage's functions, optimal transport and Euler
characteristic curves/transforms on NumPy arrays (CPU), torch tensors and CuPy
arrays (CUDA, zero-copy through DLPack, on the caller's current stream).

Submodules: ``ndforge.ndimage``, ``ndforge.morphology`` (scikit-image's
``reconstruction``), ``ndforge.ot``, ``ndforge.topology`` and,
with PyTorch installed, ``ndforge.torch`` (autograd functions and layers).
The shared library is found as _capi.py describes (``NDFORGE_LIBRARY``).
"""

from . import _capi

__version__ = _capi.functions["ndf_version"]().decode()
library_path = _capi.library_path


def __getattr__(name):
    if name in ("ndimage", "morphology", "ot", "topology", "torch"):
        import importlib
        return importlib.import_module("." + name, __name__)
    raise AttributeError("module 'ndforge' has no attribute %r" % name)
