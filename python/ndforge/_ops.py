"""The op table of the binding: which C entry point and options struct each
Python function calls, and which Python exception a bad argument raises.

The table is data: one row per op, read by ndimage.py, ot.py and topology.py.
It is written here until the library's op registry (gen/ops.lua) emits a
machine-readable table; ``load_registry`` then replaces these rows by the
registry's (``NDFORGE_OPS_JSON`` or ``ops.json`` beside this file), and the
ctypes signatures already come from the header (_capi.py).

Row fields:
  c        C entry point (ndf_*), looked up in the parsed header
  family   options struct family: grey, rank, binary, hit_or_miss, label, distance
  struct   options struct type name; its defaults come from ``<struct>_init``
  output   the output dtype rule: 'input' (same as the input), 'bool',
           'int32', 'distance' (per op and metric), 'label'
  axes     1 when scipy's function takes ``axes=`` (done as batch axes)
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
    "metric": ValueError,
}


REGISTRY = None  # the registry's rows by name, when one was found


def _registry_paths():
    from . import _capi
    lib = os.path.dirname(os.path.abspath(_capi.library_path))
    return [os.environ.get("NDFORGE_OPS_JSON"), os.path.join(os.path.dirname(__file__), "ops.json"),
            os.path.join(lib, "generated", "ops.json"), os.path.join(os.path.dirname(lib), "share", "ndforge",
                                                                      "ops.json")]


def load_registry(path=None):
    """Reads the op registry's ops.json (gen/ops.lua through gen/opsgen.lua: {"format": "ndforge-ops",
    "ops": [{"name", "family", "entry", ...}]}) when there is one: its entry points replace the rows'
    ``c``, and REGISTRY keeps every row (tests check that each ndimage op of it has a Python function)."""
    global REGISTRY
    for p in [path] if path else _registry_paths():
        if p and os.path.isfile(p):
            with open(p, encoding="utf-8") as f:
                data = json.load(f)
            rows = data.get("ops", [])
            if isinstance(rows, dict):
                rows = [dict(r, name=n) for n, r in rows.items()]
            REGISTRY = {r["name"]: r for r in rows}
            for r in rows:
                if r["name"] in OPS and r.get("entry"):
                    OPS[r["name"]]["c"] = r["entry"]
            return True
    return False


load_registry()
