"""Terrain and missions to glTF: triangle counts from the block size and the
empty squares, heights in metres, interiors placed where the mission says,
missing files listed once, references found only in the mission's tree; the
corpus missions convert validator-clean with their terrain textured."""
from __future__ import annotations

import json
import struct
import time

import numpy as np
import pytest

import potsherd
import srgb_formula
from potsherd.cli import main
from potsherd.export.gltf import document_scene
from potsherd.export.validate import validate_gltf, validator_available
from potsherd.formats.darkstar import mission as M
from potsherd.formats.darkstar import terrain_examples as te
from potsherd.formats.darkstar import world_examples as we
from potsherd.formats.darkstar.mission_scene import euler_quat
from potsherd.formats.darkstar.volumes import build_volume
from potsherd.scene.ops import world_matrices

from corpus_paths import CORPUS_ROOT

TRIBES = CORPUS_ROOT / "tribes" / "base"


def glb_json(path) -> dict:
    data = path.read_bytes()
    n = struct.unpack_from("<I", data, 12)[0]
    return json.loads(data[20:20 + n])


def make_tree(tmp_path, *, with_interiors=True):
    """base/missions/example.{mis,ted,vol} and base/world.vol, as Tribes lays them out."""
    base = tmp_path / "base"
    missions = base / "missions"
    missions.mkdir(parents=True)
    (missions / "example.mis").write_bytes(
        te.MISSION_TEXT.replace(b'tedFileName = "example.ted"', b'tedFileName = "example.dtf"'))
    (missions / "example.ted").write_bytes(build_volume([
        ("example.dtf", te.gfil_bytes(1, dml="example.dml", grid=(2, 1))),
        ("example#0.dtb", te.gblk_bytes(5, n=8))]))
    if with_interiors:
        (missions / "example.vol").write_bytes(build_volume(we.interior_files()))
    (base / "world.vol").write_bytes(build_volume([
        ("example.dml", we.dml_bytes(("wall.bmp", "roof.bmp"))),
        ("wall.bmp", we.bitmap_bytes(16, 16, mips=1)), ("roof.bmp", we.bitmap_bytes(8, 8, mips=1)),
        ("example.day.ppl", we.pl98_bytes())]))
    return missions / "example.mis"


def test_terrain_block_triangles_heights_and_holes(tmp_path):
    ted = make_tree(tmp_path).with_name("example.ted")
    doc = potsherd.read(ted)
    scene = document_scene(doc)
    mesh = scene.meshes[0]
    tris = sum(len(p.indices) // 3 for p in mesh.primitives)
    assert tris == 2 * 8 * 8 - 2                      # one square is empty (flags bit 3)
    # heights in metres at 8 m squares (scale shift 3)
    pos = np.concatenate([p.positions for p in mesh.primitives])
    h = te.example_heights(8)
    xi = np.rint(pos[:, 0] / 8).astype(int)
    yi = np.rint(pos[:, 1] / 8).astype(int)
    assert np.allclose(pos[:, 0], xi * 8) and np.array_equal(pos[:, 2], h[yi, xi])
    # the grid of 2 x 1 cells places the one block twice, 64 m apart
    placed = [n for n in scene.nodes if n.mesh == 0]
    assert sorted(tuple(n.translation) for n in placed) == [(0.0, 0.0, 0.0), (64.0, 0.0, 0.0)]
    # tiles 0 and 1 of the material list are textured, from the world volume
    textured = [scene.materials[p.material].base_color_texture is not None
                for p in mesh.primitives]
    assert textured.count(True) == 2
    assert any("example.day.ppl" in w for w in scene.warnings)
    # light map as vertex colours: the r, g, b nibbles of the texel at each corner (light
    # scale 0: one texel per height point), a display value the renderer multiplies by,
    # so COLOR_0 (linear) is its sRGB decoding
    light = te.example_light(8).astype(np.int64)
    for p in mesh.primitives:
        xi = np.rint(p.positions[:, 0] / 8).astype(int)
        yi = np.rint(p.positions[:, 1] / 8).astype(int)
        c16 = light[yi, xi]
        nibbles = np.stack([(c16 >> 8) & 15, (c16 >> 4) & 15, c16 & 15], axis=1) / 15.0
        assert p.colors.dtype == np.float32
        np.testing.assert_allclose(p.colors, srgb_formula.decode(nibbles), rtol=1e-6, atol=1e-7)
    assert len({tuple(c) for p in mesh.primitives for c in p.colors.tolist()}) > 3


def test_square_diagonals_and_winding_face_up(tmp_path):
    data = te.gblk_bytes(5, n=4, heights=np.zeros((5, 5), "<f4"))
    doc = potsherd._registry.decode(data, path="flat.dtb")
    scene = document_scene(doc)
    for p in scene.meshes[0].primitives:
        t = p.positions[p.indices.reshape(-1, 3)]
        normal = np.cross(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0])
        assert (normal[:, 2] > 0).all()               # counter-clockwise seen from above


def test_mission_places_interiors_shapes_and_markers(tmp_path):
    mis = make_tree(tmp_path)
    doc = potsherd.read(mis)
    scene = document_scene(doc)
    counts = scene.extras["counts"]
    assert counts["interiors"] == 1 and counts["interiorsWithGeometry"] == 1
    assert counts["shapes"] == 1 and counts["shapesWithGeometry"] == 0
    assert counts["markers"] == 1
    world = world_matrices(scene)
    by_name = {n.name: i for i, n in enumerate(scene.nodes)}
    tower = by_name["tower"]
    # Darkstar Z-up position (10, 20, 30) under the wrap to glTF's Y-up: (-10, 30, 20)
    assert np.allclose(world[tower][:3, 3], (-10, 30, 20), atol=1e-5)
    assert [scene.nodes[c].mesh is not None for c in scene.nodes[tower].children] == [True]
    drop = by_name["DropPoint1"]
    assert scene.nodes[drop].mesh is None and scene.nodes[drop].extras["class"] == "Marker"
    # the missing datablock is listed once
    assert sum("Generator" in w for w in scene.warnings) == 1
    # terrain placed at the SimTerrain position
    ter = by_name["terrain"]
    assert tuple(scene.nodes[ter].translation) == (-3072.0, -3072.0, 0.0)


def test_mission_finds_shapes_through_the_scripts_datablocks(tmp_path):
    from dts_fixtures import shape_bytes
    mis = make_tree(tmp_path)
    scripts = (b"// datablocks\r\nStaticShapeData Generator\r\n{\r\n   description = \"G\";\r\n"
               b"   sequenceSound[0] = { \"activate\", SoundX };\r\n"
               b"   shapeFile = \"gen\";\r\n};\r\n"
               b"ItemData Other { shapeFile = \"other\"; };\r\n")
    (tmp_path / "base" / "scripts.vol").write_bytes(build_volume([("staticshape.cs", scripts)]))
    (tmp_path / "base" / "entities.vol").write_bytes(build_volume([("gen.dts", shape_bytes(8))]))
    scene = document_scene(potsherd.read(mis))
    counts = scene.extras["counts"]
    assert counts["shapes"] == 1 and counts["shapesWithGeometry"] == 1
    gen = [i for i, n in enumerate(scene.nodes) if n.name == "gen"][0]
    assert scene.nodes[gen].extras["shapeFile"] == "gen.dts"
    kids = scene.nodes[gen].children
    assert kids and all(scene.nodes[k].mesh is not None for k in kids)
    world = world_matrices(scene)
    assert np.allclose(world[gen][:3, 3], (-1, 3, 2), atol=1e-5)    # (1, 2, 3) Z-up
    assert not any("Generator" in w for w in scene.warnings)
    out = tmp_path / "m.glb"
    assert main(["convert", str(mis), str(out)]) == 0
    gl = glb_json(out)
    assert len(gl["meshes"]) >= 3          # terrain block, the interior, the shape's meshes
    if validator_available():
        r = validate_gltf(out)
        assert r["errors"] == 0 and r["warnings"] == 0, r["messages"][:5]


def test_mission_without_its_parts_still_exports_and_says_what_is_missing(tmp_path):
    mis = make_tree(tmp_path, with_interiors=False)
    scene = document_scene(potsherd.read(mis))
    assert scene.extras["counts"]["interiorsWithGeometry"] == 0
    assert scene.extras["missing"]["interior"] == ["cube.dis"]
    assert any(n.name == "tower" for n in scene.nodes)  # still placed, as an empty node


def test_references_outside_the_tree_are_not_read(tmp_path):
    mis = make_tree(tmp_path)
    # the world volume moved beside the game folder: not the mission's tree
    (tmp_path / "base" / "world.vol").rename(tmp_path / "world.vol")
    scene = document_scene(potsherd.read(mis))
    assert "material list 'example.dml' not found" in " ".join(scene.warnings)
    assert scene.extras["terrain"].get("textured", 0) == 0
    # named with --data-root it is found
    scene = document_scene(potsherd.read(mis), {"data_root": str(tmp_path)})
    assert scene.extras["terrain"]["textured"] == 2


def test_euler_angles_follow_the_engine_formula():
    q = euler_quat((0.0, 0.0, np.pi / 2))              # z only: +90 degrees about +Z
    assert np.allclose(q, (0, 0, np.sqrt(0.5), np.sqrt(0.5)))
    assert euler_quat((0.0, -0.0, 0.0)) is None


MISSIONS = sorted(p for p in (TRIBES / "missions").iterdir()
                  if p.suffix.lower() == ".mis") if TRIBES.is_dir() else []


@pytest.mark.corpus
@pytest.mark.slow
@pytest.mark.parametrize("mis", MISSIONS, ids=lambda p: p.name)
def test_corpus_missions_convert(mis, tmp_path):
    out = tmp_path / "m.glb"
    t = time.perf_counter()
    assert main(["convert", str(mis), str(out)]) == 0
    elapsed = time.perf_counter() - t
    gl = glb_json(out)
    doc = potsherd.read(mis)
    n_interiors = sum(o.cls == "InteriorShape" for o in M.objects(doc.root))
    nodes = [n for n in gl["nodes"] if n.get("extras", {}).get("class") == "InteriorShape"]
    assert len(nodes) == n_interiors
    extras = gl["scenes"][0].get("extras") or gl["asset"].get("extras", {})
    terrain = extras["terrain"]
    block = terrain["blocks"]["0"]
    assert block["triangles"] == 2 * 256 * 256 - 2 * block["empty"]
    textured = terrain.get("textured", 0)
    if "Raindance" in mis.name:   # the lush world is not in the sample
        assert textured == 0
    else:
        assert textured > 50 and gl.get("images")
    if validator_available():
        r = validate_gltf(out)
        assert r["errors"] == 0 and r["warnings"] == 0 and r["infos"] == 0, r["messages"][:5]
    assert elapsed < 60       # ~5-10 s on an idle machine; loose for a loaded CI


@pytest.mark.corpus
@pytest.mark.skipif(not MISSIONS, reason="tribes corpus absent")
def test_tile_orientation_makes_neighbouring_tiles_meet():
    """The flags' rotate/flip reading is checked against the art itself: the
    mars transition tiles only line up edge to edge when oriented the way the
    engine does; ignoring the flags (negative control) leaves visible seams."""
    import io
    from PIL import Image
    from potsherd.core.limits import DEFAULT_LIMITS
    from potsherd.formats.darkstar.terrain_scene import _corner_uv, material_list
    from potsherd.formats.darkstar.textures import material_texture
    d = potsherd.read(f"{TRIBES}/missions/CrissCross.ted::CrissCross#0.dtb")
    flags, index = d.root["materials"]["flags"], d.root["materials"]["index"]
    spec, names = material_list("mars.dml", [str(TRIBES)], DEFAULT_LIMITS, [])
    pal = f"{TRIBES}/marsWorld.vol::mars.day.ppl"
    rng = np.random.default_rng(1)
    ys, xs = rng.integers(0, 255, 400), rng.integers(0, 255, 400)
    tiles = {}
    for i in set(index[ys, xs].tolist()) | set(index[ys, xs + 1].tolist()) | \
            set(index[ys + 1, xs].tolist()):
        png = material_texture(names[i], spec, palette=pal)[0]
        tiles[i] = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(np.float32)

    def edge(y, x, a, b, fl):      # texels along the edge from corner a to corner b
        uv = _corner_uv(np.array([fl], np.uint8))[0]
        img = tiles[int(index[y, x])]
        s = img.shape[0]
        t = (np.arange(s) + 0.5)[:, None] / s
        p = uv[a] * (1 - t) + uv[b] * t
        cols = np.clip((p[:, 0] * s).astype(int), 0, s - 1)
        rows = np.clip((p[:, 1] * s).astype(int), 0, s - 1)
        return img[rows, cols]

    def seams(use_flags: bool) -> float:
        err = []
        for y, x in zip(ys, xs):
            f = (lambda yy, xx: int(flags[yy, xx]) if use_flags else 0)
            # corners 0=x0y0 1=x1y0 2=x0y1 3=x1y1
            err.append(np.abs(edge(y, x, 1, 3, f(y, x)) - edge(y, x + 1, 0, 2, f(y, x + 1))).mean())
            err.append(np.abs(edge(y, x, 2, 3, f(y, x)) - edge(y + 1, x, 0, 1, f(y + 1, x))).mean())
        return float(np.mean(err))

    good, control = seams(True), seams(False)
    assert good < 1.0 and 5 * good < control, (good, control)
