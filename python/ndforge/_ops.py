"""The op table of the binding: which C entry point and options struct each
Python function calls, and which Python exception a bad argument raises.

The table is data: one row per op, read by ndimage.py, ot.py and topology.py.
The op registry (gen/ops.lua) emits the library's ops as ops.json (gen/opsgen.lua:
``{"format": "ndforge-ops", "families": [...], "ops": [{"name", "family",
"entry", "doc", "composite", ...}]}``); ``load_registry`` reads it from
``NDFORGE_OPS_JSON``, the package (the wheel carries it), or the build's
``generated/`` folder beside the library.  Its entry points replace the rows'
``c``; an op of the grey family that has no row gets one (ndimage.py makes
its function with the grey ops' signature); REGISTRY keeps every row, and
``MODULE`` says which submodule holds each family's functions (the tests
check that every registry op has one).  The ctypes signatures come from the
header (_capi.py).

Row fields:
  c        C entry point (ndf_*), looked up in the parsed header
  family   options struct family: grey, rank, binary, hit_or_miss, label, distance
  struct   options struct type name; its defaults come from ``<struct>_init``
  output   the output dtype rule: 'input' (same as the input), 'bool',
           'int32', 'distance' (per op and metric), 'label'
  axes     1 when scipy's function takes ``axes=`` (done as batch axes)
  doc      the registry's one-line description, where it has one
"""

import json
import os

_GREY = ("grey_erosion", "grey_dilation", "grey_opening", "grey_closing", "morphological_gradient",
         "morphological_laplace", "white_tophat", "black_tophat")
_RANK = ("median_filter", "rank_filter", "percentile_filter")
_BINARY = ("binary_erosion", "binary_dilation", "binary_opening", "binary_closing", "binary_propagation",
           "binary_fill_holes")
_DIST = ("distance_transform_edt", "distance_transform_cdt", "distance_transform_bf")

OPS = {}
for _n in _GREY:
    OPS[_n] = dict(c="ndf_" + _n, family="grey", struct="ndf_grey_options", output="input", axes=1)
for _n in _RANK:
    OPS[_n] = dict(c="ndf_" + _n, family="rank", struct="ndf_rank_options", output="input", axes=1)
for _n in _BINARY:
    OPS[_n] = dict(c="ndf_" + _n, family="binary", struct="ndf_binary_options", output="bool", axes=1)
OPS["binary_hit_or_miss"] = dict(c="ndf_binary_hit_or_miss", family="hit_or_miss",
                                 struct="ndf_hit_or_miss_options", output="bool", axes=1)
OPS["label"] = dict(c="ndf_label", family="label", struct=None, output="label", axes=0)
for _n in _DIST:
    OPS[_n] = dict(c="ndf_" + _n, family="distance", struct="ndf_distance_options", output="distance", axes=0)

# Python exception per argument that the library names in "bad argument 'x'",
# following what scipy.ndimage raises for the same mistake (default ValueError).
ARG_ERRORS = {
    "size": RuntimeError, "footprint": RuntimeError, "structure": RuntimeError, "structure1": RuntimeError,
    "structure2": RuntimeError, "mode": RuntimeError, "output": RuntimeError, "distances": RuntimeError,
    "indices": RuntimeError, "sampling": RuntimeError, "mask": RuntimeError,
    "rank": RuntimeError, "percentile": RuntimeError,
    "origin": ValueError, "origin1": ValueError, "origin2": ValueError, "iterations": ValueError,
    "metric": ValueError, "order": RuntimeError, "coordinates": RuntimeError, "matrix": RuntimeError,
}


REGISTRY = None  # the registry's rows by name, when one was found

# The submodule that holds the functions of each registry family (ops of other families: any of them).
MODULE = {"grey": "ndimage", "rank": "ndimage", "binary": "ndimage", "label": "ndimage", "distance": "ndimage",
          "ecc": "topology", "ect": "topology", "sinkhorn": "ot", "reconstruction": "morphology",
          "metrics": "metrics", "intensity": "intensity", "preprocess": "preprocess", "bet": "preprocess",
          "n4": "preprocess"}
# Registry names that the Python modules spell otherwise (the short names are the modules' own).
ALIASES = {"euler_characteristic_curve": "ecc", "euler_characteristic_transform": "ect", "mask_bbox": "bbox",
           "normalize_modality": "normalize", "mask_clean": "clean_mask"}


def _registry_paths():
    from . import _capi
    lib = os.path.dirname(os.path.abspath(_capi.library_path))
    return [os.environ.get("NDFORGE_OPS_JSON"), os.path.join(os.path.dirname(__file__), "ops.json"),
            os.path.join(lib, "generated", "ops.json"), os.path.join(os.path.dirname(lib), "share", "ndforge",
                                                                      "ops.json")]


def load_registry(path=None):
    """Reads the op registry's ops.json when there is one (see the module's doc); True when one was read."""
    global REGISTRY
    for p in [path] if path else _registry_paths():
        if p and os.path.isfile(p):
            with open(p, encoding="utf-8") as f:
                data = json.load(f)
            if data.get("format") != "ndforge-ops":
                continue
            rows = data.get("ops", [])
            if isinstance(rows, dict):
                rows = [dict(r, name=n) for n, r in rows.items()]
            REGISTRY = {r["name"]: r for r in rows}
            for r in rows:
                name, entry = r["name"], r.get("entry")
                if name in OPS and entry:
                    OPS[name]["c"] = entry
                    OPS[name]["doc"] = r.get("doc")
                elif r.get("family") == "grey" and entry and name.isidentifier():
                    OPS[name] = dict(c=entry, family="grey", struct="ndf_grey_options", output="input", axes=1,
                                     doc=r.get("doc"))
            return True
    return False


load_registry()
