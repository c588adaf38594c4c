"""Properties70 rows indexed by name without building their values: the
``Properties`` mapping of a scene object reads like the dict of lists it
replaced (same names, order, values, template merging), builds a row only
when that property is read, and names come from the binary bytes directly
(little- and big-endian)."""
from __future__ import annotations

import pytest

from potsherd import registry
from potsherd.formats.fbx.model import FbxNode
from potsherd.formats.fbx.objects import Properties, _p70

from corpus_paths import CORPUS_ROOT
from test_fbx_scene import QUAD


def _eager(node: FbxNode) -> dict:
    """Property name -> values as every row built at once gives them."""
    out: dict = {}
    for block, row, skip in ((b"Properties70", b"P", 4), (b"Properties60", b"Property", 3)):
        p70 = node.find(block)
        for p in (p70.children or []) if p70 is not None else []:
            if p.name == row and p.props and p.props[0][0] == "S":
                out[p.props[0][1].decode("utf-8", "replace")] = [v for _, v in p.props[skip:]]
    return out


def _binary_quad():
    ascii_doc = registry.decode(QUAD.encode(), format="fbx-ascii")
    return registry.decode(registry.get_codec("fbx-ascii").convert(ascii_doc, "binary"),
                           format="fbx")


def _objects(root: FbxNode) -> list:
    return [o for o in root.find(b"Objects").children if o.find(b"Properties70") is not None]


def _check_file(doc) -> int:
    rows_checked = 0
    for obj in _objects(doc.root):
        lazy = _p70(obj)
        p70 = obj.find(b"Properties70")
        pending = [p for p in p70.children if p.pending_props() is not None]
        assert pending, "a freshly decoded binary file keeps its rows unbuilt"
        assert all(p.pending_props() is not None for p in pending)  # indexing built nothing
        first = next(iter(lazy))
        lazy[first]
        assert sum(p.pending_props() is None for p in pending) == 1  # one row read, one built
        eager = _eager(obj)
        assert list(lazy) == list(eager) and len(lazy) == len(eager)
        assert {k: lazy[k] for k in lazy} == eager
        assert all((k in lazy) and lazy.get(k) == v for k, v in eager.items())
        assert "no such property" not in lazy and lazy.get("no such property", 7) == 7
        rows_checked += len(eager)
    return rows_checked


def test_rows_are_built_when_read_and_read_like_the_eager_dict():
    assert _check_file(_binary_quad()) >= 5


@pytest.mark.parametrize("name", ["ufbx__maya_cube_big_endian_7500_binary.fbx",
                                  "ufbx__maya_kenney_character_7700_binary.fbx"])
def test_corpus_rows_match_the_eager_dict(name):
    path = CORPUS_ROOT / "fbx" / name
    if not path.is_file():
        pytest.skip(f"{name} not in the FBX corpus")
    doc = registry.decode(path.read_bytes(), path=str(path))
    assert _check_file(doc) > 10


def test_templates_merge_like_dict_unpacking():
    base = Properties({"A": [1], "B": [2], "C": [3]})
    base.update(Properties({"A": [10], "E": [5]}))  # a second PropertyTemplate of the type
    assert list(base) == ["A", "B", "C", "E"] and base["A"] == [10]
    own = Properties({"B": [20], "D": [40]})
    merged = base.under(own)
    as_dict = {**{"A": [10], "B": [2], "C": [3], "E": [5]}, **{"B": [20], "D": [40]}}
    assert list(merged) == list(as_dict) and len(merged) == len(as_dict)
    assert {k: merged[k] for k in merged} == as_dict
    assert "E" in merged and merged.get("E") == [5] and merged.get("Z") is None
    assert "Z" not in merged
    with pytest.raises(KeyError):
        merged["Z"]
    # the template is shared, not copied: its rows are read through
    assert merged["A"] is base["A"]
    again = base.under(merged)  # an object already over a template keeps its values
    assert {k: again[k] for k in again} == as_dict
    with pytest.raises(ValueError):
        merged.update(base)


def test_first_string_reads_built_and_pending_lists():
    built = FbxNode(b"P", [("S", b"Lcl Rotation"), ("S", b"")])
    assert built.first_string() == b"Lcl Rotation"
    assert FbxNode(b"P", [("D", 1.0)]).first_string() is None
    assert FbxNode(b"P", []).first_string() is None
    doc = _binary_quad()
    rows = [p for o in _objects(doc.root) for p in o.find(b"Properties70").children]
    names = [p.first_string() for p in rows]
    assert all(p.pending_props() is not None for p in rows)
    assert names == [p.props[0][1] for p in rows]
