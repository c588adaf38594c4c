"""Knight Online zones (.gtd + .opd) as one glTF scene.

The always-on tier builds a tiny zone with potsherd's own encoders (a 9 x 9
height map, two tile textures, a river, a pond, three placed objects) and checks
exact values; the corpus tier converts the real zones when the shared corpus is
present and skips cleanly when it is not."""
from __future__ import annotations

import io
import json
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import potsherd
import srgb_formula
from potsherd.export import gltf
from potsherd.scene import trs_to_matrix
from corpus_paths import CORPUS_ROOT
from ko_bytes import f32, i32, s, u32

CORPUS = CORPUS_ROOT / "ko"
ZONES = CORPUS / "data" / "Zones"

A8R8G8B8 = 21


def name260(b: bytes) -> bytes:
    return b + b"\0" * (260 - len(b))


def material(flags: int = 0) -> bytes:
    return f32(1, 1, 1, 1, 0.5, 0.5, 0.5, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0) + u32(4, 2, 0, flags, 5, 6)


def ntf(name: bytes, bgra: tuple) -> bytes:
    """A 4 x 4 A8R8G8B8 NTF record without mips (no fallback, no thumbnail)."""
    return s(name) + b"NTF\x03" + struct.pack("<iiIi", 4, 4, A8R8G8B8, 0) + bytes(bgra) * 16


def word(tex1: int, dir1: int = 0, tex2: int = 1023, dir2: int = 0, full: int = 1) -> int:
    return full | dir1 << 1 | dir2 << 6 | tex1 << 11 | tex2 << 21


MAP = 9


def height(x, z):
    return 0.5 * x + z


def tile_word(x: int, z: int) -> int:
    if (x, z) == (7, 7):
        return word(2)                 # tile 2: its .gtt is missing
    if (x, z) == (6, 6):
        return word(0, full=0)         # not full: the colour map
    if (x, z) == (0, 1):
        return word(0, dir1=1)         # turned
    if (x, z) == (1, 0):
        return word(0, tex2=1)         # an overlay tile on top
    return word(0 if x < 4 else 1)


def gtd_bytes(lightmaps: bytes = i32(0)) -> bytes:
    pts = b"".join(f32(height(x, z)) + u32(tile_word(x, z)) for x in range(MAP) for z in range(MAP))
    patches = f32(0, 10)                                  # ((9 - 1) / 8)^2 = 1
    tiles = i32(3, 2) + name260(b"dtex\\tiles.gtt") + name260(b"dtex\\gone.gtt") \
        + struct.pack("<6h", 0, 1, 0, 0, 1, 0)            # tile0 = tiles[1], tile1 = tiles[0]
    river_v = b"".join(f32(4 * k, 3, 4 * row, 0, 1, 0) + u32(0x80FF0000) + f32(k, row, k, row)
                       for row in range(2) for k in range(4))
    river = i32(1) + i32(8) + river_v + i32(18) + s(b"water.dxt")
    pond_v = b"".join(f32(10 * c, 2, 10 * r, 0, 1, 0) + u32(0x99FFFFFF) + f32(c, r, c, r)
                      for r in range(2) for c in range(3))
    pond = i32(1) + i32(6, 3) + s(b"pond.dxt") + pond_v + f32(0.5) + i32(4)
    return (i32(2) + s(b"tiny") + i32(MAP) + pts + patches + bytes(MAP * MAP) + name260(b"tiny")
            + tiles + lightmaps + river + pond)


def gtt_bytes() -> bytes:
    return ntf(b"red", (0, 0, 255, 255)) + ntf(b"green", (0, 255, 0, 255))


def pmesh_bytes() -> bytes:
    """One triangle (0,0,0) (1,0,0) (0,0,1), no collapses."""
    verts = b"".join(f32(*p, 0, 1, 0, *uv) for p, uv in
                     (((0, 0, 0), (0, 0)), ((1, 0, 0), (1, 0)), ((0, 0, 1), (0, 1))))
    return s(b"tri") + i32(0, 0, 3, 3, 3, 3) + verts + struct.pack("<3H", 0, 1, 2) + i32(0)


def transform(name: bytes, pos, rot, scale) -> bytes:
    return s(name) + f32(*pos) + f32(*rot) + f32(*scale) + i32(0) * 3 + s(b"") + s(b"")


def placed(name: bytes, pos, rot, scale, mesh: bytes, tex: bytes) -> bytes:
    part = f32(0, 0, 0) + s(mesh) + material() + i32(1) + f32(0) + s(tex)
    return u32(1051) + transform(name, pos, rot, scale) + i32(1) + part + i32(0, 0, 0, 0, 0)


SIN = COS = 0.5 ** 0.5


def opd_bytes() -> bytes:
    objects = [placed(b"box", (10, 1, 20), (0, 0, 0, 1), (1, 1, 1), b"object\\tri.n3pmesh",
                      b"object\\tri.dxt"),
               placed(b"box", (5, 0, 5), (0, SIN, 0, COS), (2, 2, 2), b"object\\tri.n3pmesh",
                      b"object\\tri.dxt"),
               placed(b"lost", (1, 1, 1), (0, 0, 0, 1), (1, 1, 1), b"object\\gone.n3pmesh", b"")]
    cells = i32(0) * 4                                      # 32 m / 16 m: 2 x 2 absent cells
    return f32(32, 32) + i32(1) + f32(0, 0, 0, 1, 0, 0, 0, 0, 1) + cells + i32(3) + b"".join(objects)


@pytest.fixture()
def zone(tmp_path: Path) -> Path:
    """data/Zones/tiny.gtd + tiny.opd, data/DTex/tiles.gtt, data/Object/tri.*; each file
    read back by its codec and written again byte-identically (the encoders' output)."""
    files = {"Zones/tiny.gtd": gtd_bytes(), "Zones/tiny.opd": opd_bytes(),
             "DTex/tiles.gtt": gtt_bytes(), "Object/tri.n3pmesh": pmesh_bytes(),
             "Object/tri.dxt": ntf(b"tri", (255, 0, 0, 255))}
    for rel, data in files.items():
        doc = potsherd.read(data, format=Path(rel).suffix[1:])
        out = potsherd.write(doc)
        assert out == data, rel
        p = tmp_path / "data" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(out)
    return tmp_path / "data" / "Zones" / "tiny.gtd"


def missing(what: str, ref: str) -> str:
    """The resolver's warning for a referenced file that is not there."""
    return f"{what} {ref!r} not found"


def pixel(scene, ref) -> tuple:
    """The top-left pixel of a texture reference's image."""
    return Image.open(io.BytesIO(scene.images[ref.image].data)).getpixel((0, 0))


def zone_scene(path: Path, **options):
    doc = potsherd.read(path)
    return gltf.document_scene(doc, options)


def by_name(scene, name):
    return [i for i, n in enumerate(scene.nodes) if n.name == name]


def world(scene, index: int) -> np.ndarray:
    parents = scene.parents()
    m = np.eye(4)
    while index is not None:
        n = scene.nodes[index]
        m = trs_to_matrix(n.translation, n.rotation, n.scale) @ m
        index = parents[index]
    return m


def terrain_prims(scene):
    t = scene.nodes[by_name(scene, "terrain")[0]]
    return scene.meshes[t.mesh].primitives


# ----------------------------------------------------------------------------
# terrain


def test_terrain_full_detail_triangles_positions_and_diagonals(zone):
    sc = zone_scene(zone)
    prims = terrain_prims(sc)
    assert sum(len(p.indices) // 3 for p in prims) == 2 * (MAP - 1) ** 2 == 128
    mats = [sc.materials[p.material].name for p in prims]
    assert mats == ["colour map", "tile0", "tile0+1", "tile1", "tile2"]
    t0 = prims[1]
    tri = t0.positions[t0.indices].reshape(-1, 3, 3).tolist()
    # tile (0, 0) first: corners LB LT RT RB = samples (0,0) (0,1) (1,1) (1,0), X mirrored;
    # even x + z: the engine's fan (LB LT RT)(LB RT RB), winding reversed for the mirror
    lb, lt, rt, rb = [0, 0, 0], [0, 1, 4], [-4, 1.5, 4], [-4, 0.5, 0]
    assert tri[0] == [lb, rt, lt] and tri[1] == [lb, rb, rt]
    # tile (0, 1) is odd: fan (LT RT RB)(LT RB LB), reversed
    lb, lt, rt, rb = [0, 1, 4], [0, 2, 8], [-4, 2.5, 8], [-4, 1.5, 4]
    assert tri[2] == [lt, rb, rt] and tri[3] == [lt, lb, rb]
    # neighbours with the same texture and direction share corners: the 45 samples
    # under tile 0's tiles, plus 4 for the one turned tile
    assert len(t0.positions) == 49
    # every terrain triangle faces up (+Y) after the mirror
    for p in prims:
        tri = p.positions[p.indices.reshape(-1, 3)]
        n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
        assert (n[:, 1] > 0).all()


def test_terrain_normals_from_the_height_field(zone):
    t0 = terrain_prims(zone_scene(zone))[1]
    expect = np.array([0.125, 1.0, -0.25]) / np.linalg.norm([0.125, 1.0, -0.25])
    assert np.allclose(t0.normals, expect, atol=1e-6)   # h = x/2 + z: one slope everywhere


def test_tile_uvs_follow_the_direction_table(zone):
    t0 = terrain_prims(zone_scene(zone))[1]
    uv = t0.uvs[0][t0.indices].reshape(-1, 3, 2).tolist()
    # direction 0: LB (0,1) LT (0,0) RT (1,0) RB (1,1); triangle (LB RT LT)
    assert uv[0] == [[0, 1], [1, 0], [0, 0]]
    # tile (0, 1) has direction 1, a quarter turn: LB (1,1) LT (0,1) RT (0,0) RB (1,0),
    # shifted by whole units with the tile's grid position (u - 1 here); triangle (LT RB RT)
    assert uv[2] == [[-1, 1], [0, 0], [-1, 0]]
    m = zone_scene(zone).materials[t0.material]
    assert (m.base_color_texture.wrap_s, m.base_color_texture.wrap_t) == (10497, 10497)  # repeat


def test_tile_materials_use_the_gtt_records_and_warn_for_missing_sources(zone):
    sc = zone_scene(zone)
    prims = terrain_prims(sc)
    colours = {}
    for p in (prims[1], prims[3]):
        m = sc.materials[p.material]
        colours[m.name] = pixel(sc, m.base_color_texture)
        assert m.extras["tileSource"] == "dtex\\tiles.gtt"
    assert colours == {"tile0": (0, 255, 0), "tile1": (255, 0, 0)}  # records 1 and 0 (BGRA)
    untextured = sc.materials[prims[4].material]
    assert untextured.base_color_texture is None
    assert untextured.extras["tileSource"] == "dtex\\gone.gtt"
    assert missing("tile texture", "dtex\\gone.gtt") in sc.warnings
    # 64 tiles: x < 4 tile 0 ((1,0) with tile 1 on top), x >= 4 tile 1, but (6,6) shows
    # the colour map and (7,7) tile 2
    assert [len(p.indices) // 6 for p in prims] == [1, 31, 1, 30, 1]
    zone_extras = sc.nodes[by_name(sc, "terrain")[0]].extras
    assert zone_extras["texturedTiles"] == 62 and zone_extras["colourMapTiles"] == 1
    assert zone_extras["overlaidTiles"] == 1


def test_overlay_tile_is_the_emissive_layer_on_the_second_uv_set(zone):
    sc = zone_scene(zone)
    pair = terrain_prims(sc)[2]
    m = sc.materials[pair.material]
    assert pixel(sc, m.base_color_texture) == (0, 255, 0)          # tile 0
    assert pixel(sc, m.emissive_texture) == (255, 0, 0)            # tile 1 added on top
    assert m.emissive_texture.texcoord == 1 and m.emissive == (1.0, 1.0, 1.0)
    assert m.extras["overlay"] == {"tile": 1, "tileSource": "dtex\\tiles.gtt", "tileIndex": 0}
    # tile (1, 0), odd: first triangle (LT RB RT); its overlay has direction 0, shifted by u + 1
    assert pair.positions[pair.indices[:3]].tolist() == [[-4, 1.5, 4], [-8, 1, 0], [-8, 2, 4]]
    assert len(pair.uvs) == 2
    assert pair.uvs[1][pair.indices[:3]].tolist() == [[1, 0], [2, 1], [2, 0]]
    assert len(terrain_prims(sc)[1].uvs) == 1                       # no overlay, no second set


def test_lod_takes_every_other_sample(zone):
    sc = zone_scene(zone, lod=1)
    prims = terrain_prims(sc)
    assert sum(len(p.indices) // 3 for p in prims) == 2 * 4 ** 2
    # coarse tile (0, 0) spans samples 0..2; coarse tile (3, 3) starts at sample (6, 6)
    t0 = prims[1]
    assert t0.positions[t0.indices[:6]].tolist() == [[0, 0, 0], [-8, 3, 8], [0, 2, 8],
                                                     [0, 0, 0], [-8, 1, 0], [-8, 3, 8]]
    assert prims[0].positions[prims[0].indices[0]].tolist() == [-24, 9, 24]
    assert len(prims[0].indices) == 6


# ----------------------------------------------------------------------------
# water


def test_river_rows_and_pond_grid(zone):
    sc = zone_scene(zone)
    river = sc.meshes[sc.nodes[by_name(sc, "river0")[0]].mesh].primitives[0]
    # the engine's pattern 4 0 1, 4 1 5, 5 1 2, ... each triangle reversed
    assert river.indices.tolist() == [4, 1, 0, 4, 5, 1, 5, 2, 1, 5, 6, 2, 6, 3, 2, 6, 7, 3]
    assert river.positions[5].tolist() == [-4, 3, 4]
    np.testing.assert_allclose(river.colors[0], [1, 0, 0, 128 / 255], rtol=1e-6)  # ARGB 0x80FF0000
    assert river.uvs[1][5].tolist() == [1, 1]
    pond_node = sc.nodes[by_name(sc, "pond0")[0]]
    pond = sc.meshes[pond_node.mesh].primitives[0]
    assert pond.indices.tolist() == [0, 3, 1, 3, 4, 1, 1, 4, 2, 4, 5, 2]
    assert pond_node.extras["waveVariance"] == 0.5 and pond_node.extras["columns"] == 3
    mat = sc.materials[river.material]
    assert mat.alpha_mode == "BLEND" and mat.base_color_texture is None
    assert missing("texture", "misc\\river\\water.dxt") in sc.warnings


# ----------------------------------------------------------------------------
# objects


def test_objects_are_nodes_instancing_shared_meshes(zone):
    sc = zone_scene(zone)
    group = by_name(sc, "objects")[0]
    objs = sc.nodes[group].children
    assert [sc.nodes[o].name for o in objs] == ["box", "box", "lost"]
    parts = [sc.nodes[sc.nodes[o].children[0]] for o in objs]
    assert parts[0].mesh is not None and parts[0].mesh == parts[1].mesh   # one mesh, two uses
    assert parts[2].mesh is None
    assert len(sc.meshes) == 1 + 2 + 1           # terrain, river, pond, the shared triangle
    assert missing("mesh", "object\\gone.n3pmesh") in sc.warnings
    stats = sc.nodes[sc.roots[0]].extras["zone"]["objects"]
    assert stats == {"objects": 3, "prototypes": 2, "parts": 3, "partsWithMesh": 2,
                     "objectsWithMesh": 2}
    tri = sc.meshes[parts[0].mesh].primitives[0]
    assert sc.images[sc.materials[tri.material].base_color_texture.image].data is not None


def test_objects_sit_on_the_terrain_axes(zone):
    """An N3 point P maps to (-Px, Py, Pz) for the terrain and for objects alike."""
    sc = zone_scene(zone)
    group = by_name(sc, "objects")[0]
    first, second, _ = sc.nodes[group].children
    tri = sc.meshes[sc.nodes[sc.nodes[first].children[0]].mesh].primitives[0].positions

    def placed(obj):
        m = world(sc, sc.nodes[obj].children[0])
        return (np.c_[tri, np.ones(3)] @ m.T)[:, :3]

    # object 1 at N3 (10, 1, 20): its vertices (0,0,0) (1,0,0) (0,0,1)
    assert np.allclose(placed(first), [[-10, 1, 20], [-11, 1, 20], [-10, 1, 21]], atol=1e-6)
    # object 2 at (5, 0, 5), scale 2, turned 90 degrees about Y (N3: +Z becomes +X)
    assert np.allclose(placed(second), [[-5, 0, 5], [-5, 0, 3], [-7, 0, 5]], atol=1e-6)


def test_objects_off_and_opd_option(zone, tmp_path):
    sc = zone_scene(zone, objects="0")
    assert by_name(sc, "objects") == [] and "objects" not in sc.nodes[sc.roots[0]].extras["zone"]
    moved = tmp_path / "elsewhere.opd"
    shutil.move(zone.with_suffix(".opd"), moved)
    sc = zone_scene(zone)
    assert by_name(sc, "objects") == []
    assert any("no .opd beside the .gtd" in w for w in sc.warnings)
    sc = zone_scene(zone, opd=str(moved))
    assert len(sc.nodes[by_name(sc, "objects")[0]].children) == 3


def test_collision_mesh_is_optional_and_invisible(zone):
    assert by_name(zone_scene(zone), "collision") == []
    sc = zone_scene(zone, collision=True)
    node = sc.nodes[by_name(sc, "collision")[0]]
    prim = sc.meshes[node.mesh].primitives[0]
    assert prim.positions.tolist() == [[0, 0, 0], [-1, 0, 0], [0, 0, 1]]
    assert prim.indices.tolist() == [0, 2, 1]
    mat = sc.materials[prim.material]
    assert mat.base_color[3] == 0.0 and mat.alpha_mode == "BLEND" and node.extras["hidden"]


def test_unknown_opd_layout_is_a_warning(zone):
    zone.with_suffix(".opd").write_bytes(f32(32, 32) + i32(1 << 30) + bytes(64))
    sc = zone_scene(zone)
    assert by_name(sc, "objects") == []
    assert any(w.startswith("objects: tiny.opd") for w in sc.warnings)


def test_lightmaps_are_warned(zone):
    data = gtd_bytes(i32(1) + struct.pack("<2h", 3, 4) + ntf(b"lm", (9, 9, 9, 255)))
    assert potsherd.write(potsherd.read(data, format="gtd")) == data
    zone.write_bytes(data)
    sc = zone_scene(zone)
    assert "terrain: 1 lightmaps not exported" in sc.warnings
    zone.write_bytes(gtd_bytes())
    assert not any("lightmap" in w for w in zone_scene(zone).warnings)


def test_non_finite_heights_and_collision_points_are_drawn_at_zero(zone, tmp_path):
    gtd = bytearray(gtd_bytes())
    gtd[16:20] = f32(float("nan"))           # height of sample (0, 0), after version, name, mapSize
    zone.write_bytes(bytes(gtd))
    opd = bytearray(opd_bytes())
    opd[12:16] = f32(float("inf"))           # x of the first collision corner
    zone.with_suffix(".opd").write_bytes(bytes(opd))
    sc = zone_scene(zone, collision=True)
    assert "terrain: 1 non-finite heights drawn at 0" in sc.warnings
    assert "collision: 1 non-finite points drawn at 0" in sc.warnings
    assert terrain_prims(sc)[1].positions[terrain_prims(sc)[1].indices[0]].tolist() == [0, 0, 0]
    out = tmp_path / "odd.glb"
    gltf.write_glb(sc, out)
    if shutil.which("node"):
        from potsherd.export.validate import validate_gltf, validator_available
        if validator_available():
            assert validate_gltf(out)["errors"] == 0


def test_gtd_declares_its_export_options():
    codec = potsherd.read(gtd_bytes(), format="gtd").codec
    assert [o.name for o in codec.export_options] == ["opd", "objects", "collision", "lightmap", "lights",
                                                   "colormap", "grass"]


def test_convert_cli_writes_one_glb(zone, tmp_path):
    from potsherd.cli import main
    out = tmp_path / "tiny.glb"
    assert main(["convert", str(zone), str(out), "--option", "collision=1"]) == 0
    data = out.read_bytes()
    n = struct.unpack_from("<I", data, 12)[0]
    g = json.loads(data[20:20 + n])
    names = [(nd.get("extras") or {}).get("originalName", nd.get("name")) for nd in g["nodes"]]
    assert names.count("box") == 2 and "collision" in names and "terrain" in names
    assert len({nd.get("name") for nd in g["nodes"]}) == len(g["nodes"])   # unique in the glTF
    box_parts = [g["nodes"][g["nodes"][i]["children"][0]] for i, nm in enumerate(names) if nm == "box"]
    assert box_parts[0]["mesh"] == box_parts[1]["mesh"]
    pair = [m for m in g["materials"] if m.get("name") == "tile0+1"][0]
    assert pair["emissiveFactor"] == [1.0, 1.0, 1.0]
    assert pair["emissiveTexture"]["texCoord"] == 1
    assert g["textures"][pair["emissiveTexture"]["index"]]["sampler"] == \
        g["textures"][pair["pbrMetallicRoughness"]["baseColorTexture"]["index"]]["sampler"]


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node for the glTF validator")
def test_tiny_zone_passes_the_validator(zone, tmp_path):
    from potsherd.export.validate import validate_gltf, validator_available
    if not validator_available():
        pytest.skip("tools/gltf-validator not installed")
    out = tmp_path / "tiny.glb"
    gltf.export_document(potsherd.read(zone), out, options={"collision": True})
    report = validate_gltf(out)
    assert report["errors"] == 0 and report["warnings"] == 0, report["messages"][:5]


# ----------------------------------------------------------------------------
# corpus tier


def need(path: Path) -> Path:
    if not path.is_file():
        pytest.skip(f"{path} not in the shared corpus")
    return path


def test_corpus_moradon_with_its_opd():
    sc = zone_scene(need(ZONES / "moradon.gtd"))
    assert sum(len(p.indices) // 3 for p in terrain_prims(sc)) == 2 * 128 ** 2
    z = sc.nodes[sc.roots[0]].extras["zone"]
    assert z["objects"] == {"objects": 2760, "prototypes": 116, "parts": 4111,
                            "partsWithMesh": 8, "objectsWithMesh": 8}
    assert z["water"] == 6
    assert len(sc.nodes[by_name(sc, "objects")[0]].children) == 2760
    walls = {sc.nodes[i].mesh for i in by_name(sc, "object\\obj_mora_wall03_wal.n3pmesh")}
    assert len(walls) == 1 and None not in walls        # 8 walls, one mesh
    assert missing("mesh", "object\\obj_el_transgate01_fire00.n3pmesh") in sc.warnings


@pytest.mark.parametrize("name, map_size, colour_map", [("elmo2004", 513, 0), ("dungeon_a", 257, 65536)])
def test_corpus_terrain_full_detail(name, map_size, colour_map):
    sc = zone_scene(need(ZONES / f"{name}.gtd"), objects=False)
    assert sum(len(p.indices) // 3 for p in terrain_prims(sc)) == 2 * (map_size - 1) ** 2
    assert sc.nodes[by_name(sc, "terrain")[0]].extras["colourMapTiles"] == colour_map


def test_corpus_moradon_1068_tiles_textured_from_the_corpus_gtt():
    gtd = need(CORPUS / "variants" / "d61b278c5e" / "data" / "Zones" / "moradon_1068.gtd")
    need(CORPUS / "data" / "DTex" / "map_co_stone04_2.gtt")
    sc = zone_scene(gtd, data_root=str(CORPUS / "data"))
    extras = sc.nodes[by_name(sc, "terrain")[0]].extras
    assert extras["texturedTiles"] == 21 and len(sc.images) == 4


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node for the glTF validator")
def test_corpus_moradon_glb_passes_the_validator(tmp_path):
    from potsherd.export.validate import validate_gltf, validator_available
    if not validator_available():
        pytest.skip("tools/gltf-validator not installed")
    out = tmp_path / "moradon.glb"
    gltf.export_document(potsherd.read(need(ZONES / "moradon.gtd")), out,
                         options={"collision": True})
    report = validate_gltf(out)
    assert report["errors"] == 0 and report["warnings"] == 0, report["messages"][:5]


def test_water_diffuse_is_display_light_as_linear_colour():
    """D3D modulates the texture with the diffuse word in display space, so
    COLOR_0 (linear) is its RGB sRGB-decoded; alpha is coverage, kept."""
    from potsherd.formats.ko.zone import _argb_colors
    got = _argb_colors(np.array([0x40808080, 0xFF203040], np.uint32))
    assert got.dtype == np.float32
    want = [[*srgb_formula.decode([128 / 255] * 3), 64 / 255],
            [*srgb_formula.decode([0x20 / 255, 0x30 / 255, 0x40 / 255]), 1.0]]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert abs(float(got[0, 0]) - 128 / 255) > 0.2            # not the byte over 255
