"""The engine packages: one import direction, generated code visible to tools."""
from __future__ import annotations

import ast
import linecache
import pathlib
import traceback

import pytest

import potsherd.core.fastpath as fastpath
import potsherd.core.layout as layout
from potsherd.core.layout import Layout

CORE = pathlib.Path(layout.__file__).resolve().parents[1]


def _imports(path: pathlib.Path, package: str) -> set[str]:
    """Modules of potsherd.core that ``path`` imports (top level or in functions)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            mod = ".".join(base + ([node.module] if node.module else []))
            names = [mod + "." + a.name for a in node.names] if not node.module else [mod]
            out.update(names)
    return out


@pytest.mark.parametrize("pkg", ["layout", "fastpath"])
def test_engine_modules_import_in_one_direction(pkg):
    modules = {p.stem: p for p in (CORE / pkg).glob("*.py")}
    graph = {}
    for name, path in modules.items():
        package = f"potsherd.core.{pkg}"
        graph[f"{package}.{name}"] = _imports(path, package)
    for a, deps in graph.items():
        if a.endswith("__init__"):
            continue
        for b in deps:
            if b in graph and not b.endswith("__init__"):
                assert a not in graph[b], f"{a} and {b} import each other"
    for path in modules.values():
        assert len(path.read_text().splitlines()) < 800, path


def test_old_import_paths_keep_their_names():
    for name in ["JsonCtx", "Layout", "Record", "Storage", "Array", "Table", "Sized", "PRIMS", "GROUPS",
                 "String", "Tail", "Bytes", "Choice", "Param", "Prim", "Group", "Field",
                 "parse_layout_text", "hex_to_bytes", "text_or_hex", "text_or_hex_back",
                 "_np_to_json", "_np_from_json", "_jerr", "_byte_count"]:
        assert hasattr(layout, name), name
    for name in fastpath.__all__:
        assert hasattr(fastpath, name), name


def test_generated_code_is_in_linecache_under_a_stable_name():
    lay = Layout({"probe_rec": [("n", "u8", "always"), ("v", {"kind": "array", "count": "n", "item": "u16"}, "always")]})
    data = bytes([2, 1, 0, 2, 0])
    value, end, _ = lay.decode("probe_rec", data)
    assert end == 5 and value["v"].tolist() == [1, 2]
    fast = fastpath.fast_layout(lay)
    names = fast.gen.filenames
    assert names and names[0].startswith("<potsherd-fast:probe_rec:decode>")
    lines = linecache.getlines(names[0])
    assert lines and lines[0].startswith("def D0_probe_rec(")
    fn = fast.dec["probe_rec"]
    assert fn.__code__.co_filename == names[0]
    # a traceback through generated code shows the generated line
    try:
        fn(b"\x05", 0, 1, None, None)
    except Exception as e:  # noqa: BLE001 - the generated code fails on a None scope
        text = "".join(traceback.format_exception(e))
    assert names[0] in text and "frames = _S.frames" in text
