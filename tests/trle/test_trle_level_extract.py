"""Objects out of levels: every engine's Lara and two other moveables cut out
as .trwad, pasted into the corpus tut1.WAD, exported with the same triangles
and animations as straight from the level; the CLI path; the texture-corner
mapping of the level-to-wad conversion."""
from __future__ import annotations

import numpy as np
import pytest

import potsherd
from potsherd.document import Document
from potsherd.formats.trle.levelwad import _Textures, wad_root
from potsherd.formats.trle.moveables import extract, insert
from potsherd.formats.trle.scene import _QUAD, to_scene
from corpus_paths import CORPUS_ROOT

LEVELS = CORPUS_ROOT / "trlevels"
TUT1 = CORPUS_ROOT / "tr4wad" / "tut1" / "tut1.WAD"
if not LEVELS.is_dir() or not TUT1.is_file():
    pytest.skip("trlevels or tr4wad corpus not present", allow_module_level=True)

NAMES = ["tr1_TEST1.PHD", "tr2_TEST1.TR2", "tr3_TEST1.TR2", "tr4_TEST1.TR4", "tr5_TEST1.TRC",
         "lake-enc.tr4"]


def _tris(scene) -> int:
    total = 0
    for m in scene.meshes:
        for p in m.primitives:
            total += (len(p.indices) if p.indices is not None else len(p.positions)) // 3
    return total


def _picks(root: dict) -> list[int]:
    """Lara and the next two moveables with meshes and animations."""
    movs = [m for m in root["moveables"] if int(m["mesh_count"]) > 0 and int(m["anim_index"]) >= 0]
    ids = [int(m["object_id"]) for m in movs]
    return [0] + [i for i in ids if i != 0][:2]


@pytest.mark.parametrize("name", NAMES)
def test_moveables_extract_insert_and_export_alike(name):
    doc = potsherd.read(str(LEVELS / name))
    root, _ = wad_root(doc)
    tut1 = potsherd.read(str(TUT1))
    picks = _picks(root)
    assert len(picks) == 3
    for oid in picks:
        t = extract(root, oid)
        data = Document("trwad", t, {"mesh_pad": 0}).encode()
        back = potsherd.read(data, "trwad")
        assert back.encode() == data and back.warnings == []
        direct = to_scene(Document("trwad", t, {"mesh_pad": 0}))
        pasted = insert(tut1.root, back.root)
        via_wad = to_scene(Document("tr4wad", pasted, {"mesh_pad": 1}), moveable=str(oid))
        assert _tris(direct) == _tris(via_wad) > 0
        assert len(direct.animations) == len(via_wad.animations) == t["animation_count"]


def test_extract_cli_reads_levels(tmp_path, capsys):
    from potsherd.cli import main
    out = tmp_path / "lara.trwad"
    assert main(["trle", "extract", str(LEVELS / "tr4_TEST1.TR4"), "--moveable", "0",
                 "-o", str(out)]) == 0
    t = potsherd.read(str(out)).root
    assert t["moveable"]["object_id"] == 0 and t["mesh_count"] == 15
    assert t["animation_count"] == 445


def test_texture_corner_orders_become_wad_words():
    # a quad texture over pixels (10..20, 30..40) given in the four orders a
    # wad can reach by rotating the polygon, and a mirrored one
    def corners(order):
        pts = {0: (10, 30), 1: (20, 30), 2: (20, 40), 3: (10, 40)}
        return [v << 8 for c in order for v in pts[c]]
    rows = [corners([0, 1, 2, 3]), corners([1, 2, 3, 0]), corners([1, 0, 3, 2]), corners([2, 0, 1, 3])]
    ot = np.zeros(len(rows), [("attribute", "<u2"), ("tile", "<u2"), ("corners", "<u2", (8,))])
    ot["corners"] = rows
    tex = _Textures({"object_textures": ot}, 3)
    assert (tex.table["x"][0], tex.table["y"][0], tex.table["w"][0], tex.table["h"][0]) == (10, 30, 10, 10)
    assert tex.word(9, 0, 4) == (0, 0)
    assert tex.word(9, 1, 4) == (1, 3)            # rotate the polygon by 3 places
    assert tex.word(9, 2, 4) == (0x10000 - 2, 0)  # mirrored
    assert np.array_equal(np.roll(tex.ids[1], -3), _QUAD[0])
    assert tex.unrepresentable == 0
    tex.word(9, 3, 4)                             # a crossed order: no wad form
    assert tex.unrepresentable == 1
