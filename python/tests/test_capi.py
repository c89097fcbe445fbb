"""The ctypes view of ndforge.h (parsed at import) against the C compiler's view of the same header."""

import os
import shutil
import subprocess

import pytest

from ndforge import _capi


def test_every_declared_function_is_bound():
    assert _capi.functions, "no function parsed from %s" % _capi.header_path
    for name in ("ndf_grey_erosion", "ndf_label", "ndf_sinkhorn_solve", "ndf_soft_ect_backward", "ndf_ctx_create"):
        assert name in _capi.functions
    assert not _capi.skipped, "declarations of ndforge.h the ctypes reader left out: %s" % _capi.skipped


@pytest.mark.skipif(not shutil.which("cc"), reason="no C compiler")
def test_layouts_and_constants_match_the_compiler(tmp_path):
    layout = _capi.struct_layout()
    lines = ["#include <stdio.h>", "#include <stddef.h>", '#include "ndforge.h"', "int main(void) {"]
    for name, (_, fields) in sorted(layout.items()):
        lines.append('printf("%s %%zu\\n", sizeof(%s));' % (name, name))
        for f in fields:
            lines.append('printf("%s.%s %%zu\\n", offsetof(%s, %s));' % (name, f, name, f))
    for name in sorted(n for members in _capi.enums.values() for n in members):
        lines.append('printf("%s %%lld\\n", (long long)%s);' % (name, name))
    lines += ["return 0;", "}"]
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines))
    exe = tmp_path / "layout"
    subprocess.run(["cc", "-I", os.path.dirname(_capi.header_path), str(src), "-o", str(exe)], check=True)
    got = dict(line.rsplit(" ", 1) for line in subprocess.run([str(exe)], check=True, capture_output=True,
                                                              text=True).stdout.splitlines())
    for name, (size, fields) in layout.items():
        assert int(got[name]) == size, name
        for f, off in fields.items():
            assert int(got["%s.%s" % (name, f)]) == off, (name, f)
    for members in _capi.enums.values():
        for n, v in members.items():
            assert int(got[n]) == v, n


def test_every_op_of_the_registry_has_a_function():
    import importlib
    from ndforge import _ops
    if _ops.REGISTRY is None:
        pytest.skip("no ops.json from the op registry next to the library")
    mods = {m: importlib.import_module("ndforge." + m) for m in set(_ops.MODULE.values())}
    missing = []
    for n, r in _ops.REGISTRY.items():
        where = [mods[_ops.MODULE[r["family"]]]] if r.get("family") in _ops.MODULE else list(mods.values())
        if not any(hasattr(m, n) or hasattr(m, _ops.ALIASES.get(n, n)) for m in where):
            missing.append("%s (%s family, %s)" % (n, r.get("family"), r.get("entry")))
    assert not missing, "registry ops without a Python function (bind them in python/ndforge): %s" % missing
    for n, row in _ops.OPS.items():
        assert row["c"] in _capi.functions, (n, row["c"])


# The registry's option names (gen/ops.lua, the CLI's) in Python: '-' becomes '_', these are spelled
# otherwise (per op or everywhere), and CLI_ONLY has no parameter (Python: output= or distances=;
# histogram returns its edges).
CLI_NAMES = {"indices": "return_indices", ("distance_transform_cdt", "structure"): "metric",
             ("histogram", "edges"): "bins", ("clip", "lo"): "a_min", ("clip", "hi"): "a_max",
             ("skull_strip", "r"): "radius", ("skull_strip", "c"): "centre", ("skull_strip", "sampling"): "spacing"}
CLI_ONLY = {"output-dtype", "edges-out"}


def test_the_registry_options_are_parameters():
    import inspect
    import importlib
    from ndforge import _ops
    if _ops.REGISTRY is None:
        pytest.skip("no ops.json from the op registry next to the library")
    missing = []
    for n, r in _ops.REGISTRY.items():
        mod = importlib.import_module("ndforge." + _ops.MODULE.get(r.get("family"), "ndimage"))
        fn = getattr(mod, _ops.ALIASES.get(n, n), None)
        if fn is None or not r.get("options"):
            continue
        params = inspect.signature(fn).parameters
        for o in r["options"]:
            p = CLI_NAMES.get((n, o), CLI_NAMES.get(o, o.replace("-", "_")))
            if o not in CLI_ONLY and p not in params:
                missing.append("%s: %s" % (n, p))
    assert not missing, "registry options the Python functions do not take: %s" % missing


def test_registry_rows_are_read(tmp_path):
    import json
    from ndforge import _ops
    p = tmp_path / "ops.json"
    saved_ops, saved_reg = {k: dict(v) for k, v in _ops.OPS.items()}, _ops.REGISTRY
    try:
        p.write_text(json.dumps({"format": "ndforge-ops", "version": 1, "families": [], "ops": [
            {"name": "grey_erosion", "family": "grey", "entry": "ndf_grey_erosion", "doc": "erosion"},
            {"name": "grey_thing", "family": "grey", "entry": "ndf_grey_thing", "doc": "a new grey op"},
            {"name": "sinkhorn", "family": "sinkhorn", "entry": "ndf_sinkhorn_solve", "doc": "OT"}]}))
        assert _ops.load_registry(str(p))
        assert set(_ops.REGISTRY) == {"grey_erosion", "grey_thing", "sinkhorn"}
        assert _ops.OPS["grey_erosion"]["doc"] == "erosion"
        assert _ops.OPS["grey_thing"]["c"] == "ndf_grey_thing" and _ops.OPS["grey_thing"]["family"] == "grey"
        p.write_text(json.dumps({"format": "something-else", "ops": []}))
        assert not _ops.load_registry(str(p))
    finally:
        _ops.OPS.clear()
        _ops.OPS.update(saved_ops)
        _ops.REGISTRY = saved_reg
