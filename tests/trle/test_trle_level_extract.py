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


def test_tr4_shades_draw_the_light_they_are_given():
    from potsherd.formats.trle.levellight import mesh_light, tr4_shades
    assert tr4_shades([1.0, 0.5, 0.0, 1.5, -1.0]).tolist() == [0, 4064, 8160, 0, 8160]
    # through TR4's own rule (255 - (s >> 5), halved by the neutral tint, doubled) the light
    # comes back to within the doubling's even step
    light = np.linspace(0, 1, 256)
    back, _ = mesh_light(4, tr4_shades(light))
    assert np.abs(back - light).max() <= 1.5 / 255


@pytest.mark.skipif(not (LEVELS / "tr1_TEST1.PHD").is_file(), reason="trlevels corpus not present")
def test_tr1_shades_become_the_tr4_shades_that_draw_the_same_light():
    """TR1 draws a shade as (8192 - s) / 4096 of the texel (4096: as stored), TR4 as
    (255 - s / 32) / 255: copied as they were, TR1 meshes came out at half brightness."""
    doc = potsherd.read(str(LEVELS / "tr1_TEST1.PHD"))
    root, warnings = wad_root(doc)
    levels = [m for m in doc.root["meshes"] if int(m["normal_count"]) < 0]
    wads = [m for m in root["meshes"] if int(m["normal_count"]) < 0]
    assert levels and len(levels) == len(wads)
    for lv, wd in zip(levels, wads):
        s1 = np.asarray(lv["shades"], np.int64)
        light = np.minimum((8192 - s1) / 4096, 1)
        want = (255 - np.rint(light * 255).astype(np.int64)) * 32
        assert np.asarray(wd["shades"]).tolist() == want.tolist()
        assert not np.array_equal(np.asarray(wd["shades"]), s1) or (s1 == 0).all()
    brighter = sum(int((np.asarray(m["shades"]) < 4096).sum()) for m in levels)
    assert brighter > 0
    assert f"{brighter} mesh shades are brighter than their texture (TR1 multiplies by up to 2), " \
           "brighter than a TR4 shade can draw; they take full brightness" in warnings
