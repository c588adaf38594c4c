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
    # TR1 draws a texel times (8192 - lighting) / 4096 (4096: the texture as stored), in
    # display space; COLOR_0 is that multiplier, up to 1, as linear light
    g = v["lighting"].astype(np.float64)
    expected = np.unique(srgb_formula.decode(np.minimum((8192 - g) / 4096, 1)))
    got = np.unique(np.concatenate([p.colors[:, 0] for m in scene.meshes
                                    for p in m.primitives]).astype(np.float64))
    assert len(got) > 1
    assert np.abs(got[:, None] - expected[None]).min(axis=1).max() < 1e-6
    # negative control: the old reading (1 - lighting / 8191, half as bright) is not it
    old = np.unique(1 - g / 8191)
    assert np.abs(got[:, None] - old[None]).min(axis=1).max() > 1e-3


def _verts(field: str, values) -> np.ndarray:
    v = np.zeros(len(values), dtype=[(field, "<u4" if field == "colour" else "<u2")])
    v[field] = values
    return v


def test_room_light_is_each_engines_multiplier_on_the_texel():
    from potsherd.formats.trle.levelscene import room_light
    # TR1: (8192 - g) / 4096, clipped at 1; below 4096 the engine draws brighter
    m, brighter = room_light(1, _verts("lighting", [0, 4096, 6144, 8191]))
    assert m[:, 0].tolist() == [1.0, 1.0, 0.5, 1 / 4096] and brighter == 1
    # TR2: its second value (the vertex's "colour" field), ((8191 - g) >> 4) / 255, saturating
    m, brighter = room_light(2, _verts("colour", [0, 4111, 6143, 8191]))
    assert m[:, 0].tolist() == [1.0, 1.0, 128 / 255, 0.0] and brighter == 0
    # TR3: RGB 555, (v << 3) / 256, no doubling
    m, brighter = room_light(3, _verts("colour", [(31 << 10) | (16 << 5) | 4]))
    assert m.tolist() == [[248 / 256, 128 / 256, 32 / 256]] and brighter == 0
    # TR4: c = v << 3, 2c / 255 up to 1 (128 neutral); the excess is a specular highlight
    m, brighter = room_light(4, _verts("colour", [(31 << 10) | (16 << 5) | 4, (8 << 10) | (8 << 5) | 8]))
    assert m.tolist() == [[1.0, 1.0, 64 / 255], [128 / 255] * 3] and brighter == 1
    # TR5: ARGB bytes, the same doubling
    m, brighter = room_light(5, _verts("colour", [0xFF80FF20, 0x00404040]))
    assert m.tolist() == [[1.0, 1.0, 64 / 255], [128 / 255] * 3] and brighter == 1


def test_brighter_than_texture_rooms_are_named_in_a_warning():
    doc = potsherd.read(str(CORPUS / "tr1_TEST1.PHD"))
    scene = doc.codec.to_scene(doc, objects=False)
    lights = np.concatenate([r["data"]["vertices"]["lighting"] for r in doc.root["rooms"]])
    want = int((lights < 4096).sum())
    assert want > 0
    assert [w for w in scene.warnings if "lit brighter" in w] == [
        f"{want} room vertices are lit brighter than their texture: the engine multiplies the "
        "texture by up to 2, which glTF's COLOR_0 (a multiplier up to 1) cannot hold; they show "
        "the texture at full brightness"]


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


def test_mesh_shades_are_each_engines_multiplier_on_the_texel():
    from potsherd.formats.trle.levelscene import mesh_light
    shades = [0, 4096, 6144, 8159, 8191]
    m, brighter = mesh_light(1, shades)                  # TR1: 4096 neutral, up to 2
    assert m.tolist() == [1.0, 1.0, 0.5, 33 / 4096, 1 / 4096] and brighter == 1
    m, brighter = mesh_light(2, shades)                  # TR2: saturating at 1
    assert m.tolist() == [1.0, 1.0, 127 / 255, 2 / 255, 0.0] and brighter == 0
    m, brighter = mesh_light(3, shades)                  # TR3: /256, the darkest 31 as full
    assert m.tolist() == [255 / 256, 127 / 256, 63 / 256, 1 / 256, 255 / 256] and brighter == 0
    m, brighter = mesh_light(4, shades)                  # TR4: (255 - s/32) halved, doubled
    assert m.tolist() == [254 / 255, 126 / 255, 62 / 255, 0.0, 0.0] and brighter == 0


def test_shaded_object_meshes_carry_their_light():
    """Object meshes without normals are lit by their shades; they drew at full
    brightness (no COLOR_0) before."""
    doc = potsherd.read(str(CORPUS / "tr1_TEST1.PHD"))
    scene = doc.codec.to_scene(doc, rooms=False)
    shaded = [m for m in doc.root["meshes"] if int(m["normal_count"]) < 0]
    assert shaded
    by_pointer = {m.extras.get("tr_mesh_pointer"): m for m in scene.meshes}
    coloured = [m for m in scene.meshes if any(p.colors is not None for p in m.primitives)]
    assert coloured and all(m.extras.get("tr_mesh_pointer") is not None for m in coloured)
    for mesh in coloured:
        c = np.concatenate([p.colors for p in mesh.primitives]).astype(np.float64)
        assert np.allclose(c[:, 0], c[:, 1]) and np.allclose(c[:, 0], c[:, 2])   # grey
    # every colour is one of the shaded meshes' shades read the TR1 way
    shades = np.concatenate([np.asarray(m["shades"]) for m in shaded]).astype(np.float64)
    want = np.unique(srgb_formula.decode(np.minimum((8192 - shades) / 4096, 1)))
    got = np.unique(np.concatenate([p.colors[:, 0] for m in coloured for p in m.primitives]))
    assert np.abs(got[:, None] - want[None]).min(axis=1).max() < 1e-6
    assert len(by_pointer) > len(coloured)            # meshes with normals stay uncoloured
