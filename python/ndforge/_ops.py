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
  options  options struct type name; its defaults come from ``<options>_init``
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
    OPS[_n] = dict(c="ndf_" + _n, family="grey", options="ndf_grey_options", output="input", axes=1)
for _n in _RANK:
    OPS[_n] = dict(c="ndf_" + _n, family="rank", options="ndf_rank_options", output="input", axes=1)
for _n in _BINARY:
    OPS[_n] = dict(c="ndf_" + _n, family="binary", options="ndf_binary_options", output="bool", axes=1)
OPS["binary_hit_or_miss"] = dict(c="ndf_binary_hit_or_miss", family="hit_or_miss",
                                 options="ndf_hit_or_miss_options", output="bool", axes=1)
OPS["label"] = dict(c="ndf_label", family="label", options=None, output="label", axes=0)
for _n in _DIST:
    OPS[_n] = dict(c="ndf_" + _n, family="distance", options="ndf_distance_options", output="distance", axes=0)

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


def load_registry(path=None):
    """Replaces the rows above by those of a registry JSON file ({"ops": {name: row}}), if there is one."""
    path = path or os.environ.get("NDFORGE_OPS_JSON") or os.path.join(os.path.dirname(__file__), "ops.json")
    if not os.path.isfile(path):
        return False
    with open(path, encoding="utf-8") as f:
        rows = json.load(f).get("ops", {})
    for name, row in rows.items():
        OPS.setdefault(name, {}).update(row)
    return True


load_registry()
