"""Fuzz harness for the FBX family (binary 3000-7700 in both byte orders, ASCII).

Seeds written by the project's own encoder: small binary files in several
versions (32- and 64-bit record headers, big-endian) carrying every property
type, raw and zlib arrays, nested and null-record nodes; and small ASCII
files.  Real files (``../shared/corpus/fbx``) are shrunk by
:func:`shrink_document` (children cut, arrays shortened) into fast seeds.

    python fuzz/run.py --family fbx --seconds 60
    python fuzz/fuzz_fbx.py --seconds 60          # the same
"""
from __future__ import annotations

import sys
from pathlib import Path

FAMILY = "fbx"


def _props() -> list:
    return [["Y", -2], ["C", 1], ["I", -7], ["L", 1 << 40], ["F", 1.5], ["D", -0.25],
            ["S", "Model::cube"], ["R", {"base64": "AAEC/w=="}]]


def _arrays(enc: int) -> list:
    arr = lambda n, vals: {"count": len(vals), "encoding": enc, **({"zlib_level": 1} if enc else {}),
                           "values": vals}
    return [["f", arr(3, [0.5, 1.0, -2.0])], ["d", arr(4, [1.0, 2.0, 3.0, 4.0] * 8)],
            ["i", arr(3, [0, 1, 2, -1] * 9)], ["l", arr(2, [5, -5])], ["b", arr(2, [0, 1, 1])],
            ["c", arr(2, [65, 66])]]


def _binary(version: int, *, endian: int = 0, footer: str = "sdk") -> dict:
    nodes = [
        {"name": "FBXHeaderExtension", "props": [], "children": [
            {"name": "FBXVersion", "props": [["I", version]], "children": None},
            {"name": "Creator", "props": [["S", "potsherd fuzz seed"]], "children": None}]},
        {"name": "Objects", "props": [], "children": [
            {"name": "Geometry", "props": _props(), "children": [
                {"name": "Vertices", "props": _arrays(0)[:1], "children": None},
                {"name": "Raw", "props": _arrays(0), "children": None},
                {"name": "Packed", "props": _arrays(1), "children": None},
                {"name": "Empty", "props": [], "children": []}]}]},
        {"name": "Connections", "props": [], "children": [
            {"name": "C", "props": [["S", "OO"], ["L", 1], ["L", 0]], "children": None}]},
    ]
    params = {"version": version, "endian_byte": endian}
    if version >= 7000:
        params["footer"] = footer
    return {"potsherd": 1, "format": "fbx", "form": "readable", "params": params, "meta": {},
            "trailing": "", "root": {"nodes": nodes}}


def _ascii(version: int) -> dict:
    nodes = [
        {"name": "FBXHeaderExtension", "props": [], "children": [
            {"name": "FBXVersion", "props": [["n", str(version)]], "children": None}]},
        {"name": "Objects", "props": [], "children": [
            {"name": "Model", "props": [["s", "Model::cube"], ["s", "Mesh"]], "children": [
                {"name": "Vertices", "props": [["*", {"count": "*6", "text": None,
                                                      "values": [0.0, 1.5, -2.0, 3.0, 4.0, 5.0]}]],
                 "children": None},
                {"name": "Flags", "props": [["w", "Y"], ["n", "-1"], ["n", "0.25"]], "children": None},
                {"name": "Props", "props": [], "children": []}]}]},
    ]
    return {"potsherd": 1, "format": "fbx-ascii", "form": "readable",
            "params": {"version": version, "newline": "\n", "indent": "\t"}, "meta": {},
            "trailing": "", "root": {"nodes": nodes}}


def scene_document(verts=(0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0),
                   translation=("D", 1.0), up_axis=("I", 1)) -> dict:
    """A binary 7400 file with one triangle mesh on one model, connected to the
    root: the smallest input that goes all the way through ``to_scene``."""
    def arr(code, vals):
        return [code, {"count": len(vals), "encoding": 0, "values": list(vals)}]
    p70 = lambda *props: {"name": "P", "props": [list(x) for x in props], "children": None}
    nodes = [
        {"name": "GlobalSettings", "props": [], "children": [
            {"name": "Properties70", "props": [], "children": [
                p70(("S", "UpAxis"), ("S", "int"), ("S", "Integer"), ("S", ""), up_axis)]}]},
        {"name": "Objects", "props": [], "children": [
            {"name": "Geometry", "props": [["L", 10], ["S", "tri\u0000\u0001Geometry"], ["S", "Mesh"]],
             "children": [{"name": "Vertices", "props": [arr("d", verts)], "children": None},
                          {"name": "PolygonVertexIndex", "props": [arr("i", [0, 1, -3])],
                           "children": None}]},
            {"name": "Model", "props": [["L", 20], ["S", "tri\u0000\u0001Model"], ["S", "Mesh"]],
             "children": [{"name": "Properties70", "props": [], "children": [
                 p70(("S", "Lcl Translation"), ("S", "Lcl Translation"), ("S", ""), ("S", "A"),
                     translation, ("D", 0.0), ("D", 0.0))]}]}]},
        {"name": "Connections", "props": [], "children": [
            {"name": "C", "props": [["S", "OO"], ["L", 10], ["L", 20]], "children": None},
            {"name": "C", "props": [["S", "OO"], ["L", 20], ["L", 0]], "children": None}]},
    ]
    return {"potsherd": 1, "format": "fbx", "form": "readable", "params": {"version": 7400},
            "meta": {}, "trailing": "", "root": {"nodes": nodes}}


def seed_documents() -> dict:
    return {
        "binary-7400": lambda: _binary(7400),
        "binary-7400-scene": scene_document,
        "binary-7500-64bit": lambda: _binary(7500),
        "binary-7700-blender": lambda: _binary(7700, footer="blender"),
        "binary-6100": lambda: _binary(6100),
        "binary-7400-big-endian": lambda: _binary(7400, endian=1),
        "ascii-7400": lambda: _ascii(7400),
        "ascii-6100": lambda: _ascii(6100),
    }


def shrink_document(doc, keep: int = 3, max_array: int = 8):
    """A small file derived from a decoded FBX document by the project's encoder:
    each node below the top level keeps ``keep`` children, arrays ``max_array``
    values."""
    from potsherd.core.errors import FormatError
    root = doc.root
    if not hasattr(root, "children"):
        return None
    stack = [root]
    while stack:
        node = stack.pop()
        for i, (code, v) in enumerate(list(node.props)):
            if hasattr(v, "values") and isinstance(getattr(v, "count", None), int) \
                    and v.count > max_array:
                try:
                    v.values = v.values[:max_array]
                except (FormatError, AttributeError, TypeError, ValueError):
                    return None
        if node.children:
            if node is not root:  # top-level sections all stay (there are few)
                del node.children[keep:]
            if node.fmt is not None and not hasattr(node.fmt, "__len__"):
                return None
            stack.extend(node.children)
    import fuzzlib
    return fuzzlib.stable_encoding(doc)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import run
    sys.exit(run.main(["--family", FAMILY, *sys.argv[1:]]))
