"""Whole levels to glTF: one node per room, static and item; shared object
meshes; vertex light as COLOR_0; one image per texture page; the Khronos
validator on every corpus level."""
from __future__ import annotations

import json

import numpy as np
import pytest

import potsherd
import srgb_formula
from potsherd.export.gltf import write_glb
from potsherd.export.render import Gltf
from potsherd.export.validate import validate_many, validator_available
from potsherd.formats.trle.levels import level_data
from corpus_paths import CORPUS_ROOT

CORPUS = CORPUS_ROOT / "trlevels"
if not CORPUS.is_dir():
    pytest.skip("shared trlevels corpus not present", allow_module_level=True)

LEVELS = sorted(p for p in CORPUS.glob("*") if p.suffix.lower() in {".phd", ".tr2", ".tr4", ".trc"})


def _room_statics(d):
    total = 0
    for r in d["rooms"]:
        info = r["body"] if "body" in r else r
        total += len(info["statics"])
    return total


@pytest.mark.parametrize("path", LEVELS, ids=lambda p: p.name)
def test_level_scene_counts_and_structure(path, tmp_path):
    doc = potsherd.read(str(path))
    d = level_data(doc.root)
    out = tmp_path / "level.glb"
    scene = doc.codec.to_scene(doc)
    write_glb(scene, out)
    j = Gltf(str(out)).json
    names = [n.get("name", "") for n in j["nodes"]]
    rooms = [n for n in names if n.startswith("room ")]
    statics = [n for n in names if n.startswith("static ")]
    items = [n for n in names if n.startswith("item ") and " mesh " not in n]
    assert len(rooms) == len(d["rooms"])
    assert len(statics) == _room_statics(d)
    assert len(items) == len(d["items"])
    # every room with faces has vertex colours and page-textured materials
    for n in j["nodes"]:
        if n.get("name", "").startswith("room ") and "mesh" in n:
            for prim in j["meshes"][n["mesh"]]["primitives"]:
                assert "COLOR_0" in prim["attributes"] and "TEXCOORD_0" in prim["attributes"]
    # object meshes are shared: no more glTF meshes than rooms + distinct pointers
    pointers = {m.get("extras", {}).get("tr_mesh_pointer") for m in j["meshes"]} - {None}
    assert len(j["meshes"]) <= len(rooms) + len(pointers)
    assert j["nodes"][j["scenes"][0]["nodes"][0]]["extras"]["tr_engine"] == doc.codec.engine


def test_room_triangles_follow_the_quads_and_triangles():
    doc = potsherd.read(str(CORPUS / "tr1_TEST1.PHD"))
    scene = doc.codec.to_scene(doc, room=0, objects=False)
    data = doc.root["rooms"][0]["data"]
    tris = sum(len(p.positions) // 3 for m in scene.meshes for p in m.primitives)
    assert tris == 2 * len(data["rectangles"]) + len(data["triangles"])
    room = [n for n in scene.nodes if n.name == "room 0"][0]
    assert room.translation == (float(doc.root["rooms"][0]["x"]), 0.0,
                                float(doc.root["rooms"][0]["z"]))


def test_room_vertex_light_is_the_engine_intensity():
    doc = potsherd.read(str(CORPUS / "tr1_TEST1.PHD"))
    scene = doc.codec.to_scene(doc, room=0, objects=False)
    v = doc.root["rooms"][0]["data"]["vertices"]
    # a display brightness (the game multiplies it with the texel), as linear light
    expected = np.unique(srgb_formula.decode(1 - v["lighting"].astype(np.float64) / 8191))
    got = np.unique(np.concatenate([p.colors[:, 0] for m in scene.meshes
                                    for p in m.primitives]).astype(np.float64))
    assert len(got) > 1
    assert np.abs(got[:, None] - expected[None]).min(axis=1).max() < 1e-6
    # negative control: the brightness itself is not what COLOR_0 holds
    linear = np.unique(1 - v["lighting"].astype(np.float64) / 8191)
    assert np.abs(got[:, None] - linear[None]).min(axis=1).max() > 1e-3


@pytest.mark.skipif(not validator_available(), reason="gltf-validator not installed")
def test_every_corpus_level_validates(tmp_path):
    paths = []
    for p in LEVELS:
        doc = potsherd.read(str(p))
        out = tmp_path / (p.name + ".glb")
        write_glb(doc.codec.to_scene(doc), out)
        paths.append(out)
    for r in validate_many(paths):
        bad = [m for m in r["messages"] if m["severity"] in ("error", "warning")]
        assert (r["errors"], r["warnings"]) == (0, 0), (r["file"], bad[:5])


@pytest.mark.parametrize("name", ["tr1_TEST1.PHD", "tr4_TEST1.TR4"])
def test_animated_items_carry_every_animation_of_their_moveable(name, tmp_path):
    from potsherd.formats.trle.levelwad import wad_root
    from potsherd.formats.trle.model import animation_ranges
    doc = potsherd.read(str(CORPUS / name))
    d = level_data(doc.root)
    root, _ = wad_root(doc)
    ranges = dict(zip((int(m["object_id"]) for m in root["moveables"]), animation_ranges(root)))
    expected = sum(ranges[int(t)][1] - ranges[int(t)][0] for t in d["items"]["type_id"]
                   if int(t) in ranges)
    scene = doc.codec.to_scene(doc, rooms=False, animated=True)
    assert len(scene.animations) == expected > 0
    assert len(scene.skins) >= 1
    assert sum(1 for n in scene.nodes if n.name.startswith("item ")) == len(d["items"])
    if validator_available():
        out = tmp_path / "a.glb"
        write_glb(scene, out)
        r = validate_many([out])[0]
        assert (r["errors"], r["warnings"]) == (0, 0)
