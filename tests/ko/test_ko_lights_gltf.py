"""N3 lights, cameras and scenes to glTF (KHR_lights_punctual, glTF cameras).

Fixtures are built by the tests from the engine's layouts; the written files
are read back as JSON and, when the Khronos validator is installed, validated.
"""
from __future__ import annotations

import json
import math
import struct

import numpy as np
import pytest

import potsherd
import srgb_formula
from potsherd.export.gltf import write_gltf
from potsherd.scene import Camera, Light, Scene
from ko_bytes import f32, i32, s


def transform(name=b"t", pos=(0, 0, 0), scale=(1, 1, 1)):
    return s(name) + f32(*pos) + f32(0, 0, 0, 1) + f32(*scale) + i32(0, 0, 0)


def light_bytes(kind=2, pos=(1, 2, 3), direction=(0, 0, 1), theta=0.5, phi=1.0, rng=50.0):
    return (transform(b"lamp", pos) + i32(kind) + f32(1, .5, .25, 1) + f32(0, 0, 0, 0)
            + f32(.7, .35, .17, 1) + f32(*pos) + f32(*direction)
            + f32(rng, 1, .5, .01, 0, theta, phi) + i32(1, 3))


def camera_bytes(eye=(0, 0, -5), at=(0, 0, 0), up=(0, 1, 0), fov=0.9, aspect=1.5):
    return (transform(b"cam", eye, up) + f32(*at) + f32(*eye, *at, *up)
            + f32(fov, aspect, .5, 300) + i32(0, 0, 640, 480) + f32(0, 1) + f32(*[0] * 48)
            + f32(*[0] * 24) + i32(0) + struct.pack("<I", 0xFFFFFFFF))


def rotate(q, v):
    x, y, z, w = q
    qv = np.array([x, y, z])
    v = np.asarray(v, float)
    return v + 2 * np.cross(qv, np.cross(qv, v) + w * v)


def gltf_of(doc, tmp_path, name="out.gltf", **options):
    sc = doc.codec.to_scene(doc, **options)
    path = tmp_path / name
    write_gltf(sc, path)
    return sc, json.loads(path.read_text()), path


def validate(path):
    from potsherd.export.validate import validate_gltf, validator_available
    if not validator_available():
        return
    report = validate_gltf(path)
    assert report["errors"] == 0 and report["warnings"] == 0, report


def test_spot_light(tmp_path):
    doc = potsherd.read(light_bytes(), format="n3light")
    sc, g, path = gltf_of(doc, tmp_path)
    (lt,) = g["extensions"]["KHR_lights_punctual"]["lights"]
    assert lt["type"] == "spot" and lt["range"] == 50.0
    assert lt["spot"]["outerConeAngle"] == pytest.approx(0.5)
    assert lt["spot"]["innerConeAngle"] == pytest.approx(0.25)
    # the D3D diffuse (1, .5, .25) is a display value; the light's colour is linear
    assert lt["color"] == pytest.approx(srgb_formula.decode([1, .5, .25]).tolist())
    assert lt["color"][1] == pytest.approx(0.2140, abs=1e-4) and lt["extras"]["number"] == 3
    node = g["nodes"][0]
    assert node["extensions"]["KHR_lights_punctual"]["light"] == 0
    assert node["translation"] == pytest.approx([-1, 2, 3])        # mirror X
    # the light looks along its node's -Z: the D3D direction (0, 0, 1)
    assert rotate(node["rotation"], [0, 0, -1]) == pytest.approx([0, 0, 1], abs=1e-6)
    assert "KHR_lights_punctual" in g["extensionsUsed"]
    validate(path)


def test_directional_light_has_no_position_or_range(tmp_path):
    doc = potsherd.read(light_bytes(kind=3, direction=(1, -1, 0)), format="n3light")
    _, g, path = gltf_of(doc, tmp_path)
    (lt,) = g["extensions"]["KHR_lights_punctual"]["lights"]
    assert lt["type"] == "directional" and "range" not in lt
    node = g["nodes"][0]
    assert "translation" not in node
    d = rotate(node["rotation"], [0, 0, -1])
    assert d == pytest.approx(np.array([-1, -1, 0]) / math.sqrt(2), abs=1e-6)
    validate(path)


def test_glo_lights_under_one_node(tmp_path):
    one = light_bytes(kind=1)
    doc = potsherd.read(i32(1, 2) + one + one, format="glo")
    _, g, path = gltf_of(doc, tmp_path)
    assert len(g["extensions"]["KHR_lights_punctual"]["lights"]) == 2
    assert g["nodes"][0]["children"] == [1, 2]
    validate(path)


def test_camera(tmp_path):
    doc = potsherd.read(camera_bytes(eye=(3, 1, -5), at=(3, 1, 0)), format="n3camera")
    sc, g, path = gltf_of(doc, tmp_path)
    (cam,) = g["cameras"]
    assert cam["perspective"] == pytest.approx({"yfov": 0.9, "aspectRatio": 1.5, "znear": 0.5,
                                                "zfar": 300.0})
    node = g["nodes"][0]
    assert node["camera"] == 0 and node["translation"] == pytest.approx([-3, 1, -5])
    assert rotate(node["rotation"], [0, 0, -1]) == pytest.approx([0, 0, 1], abs=1e-6)
    assert rotate(node["rotation"], [0, 1, 0]) == pytest.approx([0, 1, 0], abs=1e-6)
    assert not sc.warnings
    validate(path)


def test_camera_with_unknown_lens_warns(tmp_path):
    data = camera_bytes(fov=-1.5)
    doc = potsherd.read(data, format="n3camera")
    sc, g, _ = gltf_of(doc, tmp_path)
    assert g["cameras"][0]["perspective"]["yfov"] == pytest.approx(math.radians(55))
    assert any("lens" in w for w in sc.warnings)


def test_scene_places_what_it_finds_and_names_the_rest(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "cam.n3camera").write_bytes(camera_bytes())
    (tmp_path / "data" / "lamp.n3light").write_bytes(light_bytes(kind=1))
    scene = (i32(0) + f32(0, 0, 100) + i32(1) + s(b"data\\cam.n3camera") + i32(1)
             + s(b"data\\lamp.n3light") + i32(1) + s(b"object\\gone.n3shape") + i32(0))
    path = tmp_path / "data" / "x.n3scene"
    path.write_bytes(scene)
    doc = potsherd.read(path)
    sc, g, out = gltf_of(doc, tmp_path, source_path=str(path))
    assert len(g["cameras"]) == 1
    assert len(g["extensions"]["KHR_lights_punctual"]["lights"]) == 1
    assert g["nodes"][0]["extras"]["frames"] == [0.0, 100.0]
    missing = [w for w in sc.warnings if "missing" in w]
    assert len(missing) == 1 and "gone.n3shape" in missing[0]
    validate(out)


def test_writer_refuses_a_dangling_camera(tmp_path):
    sc = Scene()
    sc.add_node(name="c", camera=0)
    with pytest.raises(potsherd.FormatError, match="camera 0 does not exist"):
        write_gltf(sc, tmp_path / "x.gltf")
    sc.add_camera(Camera(yfov=float("nan"), znear=-1))
    sc.add_light(Light(type="spot", outer_cone=9.0, inner_cone=9.0))
    sc.add_node(name="l", light=0)
    write_gltf(sc, tmp_path / "x.gltf")
    g = json.loads((tmp_path / "x.gltf").read_text())
    assert g["cameras"][0]["perspective"]["yfov"] == pytest.approx(math.radians(60))
    spot = g["extensions"]["KHR_lights_punctual"]["lights"][0]["spot"]
    assert spot["outerConeAngle"] == pytest.approx(math.pi / 2)
    assert spot["innerConeAngle"] < spot["outerConeAngle"]
    validate(tmp_path / "x.gltf")


@pytest.mark.parametrize("indexed", [True, False])
def test_collision_mesh(tmp_path, indexed):
    verts = f32(0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1)
    body = s(b"wall") + i32(6) + verts
    body += (i32(6) + struct.pack("<6H", 0, 1, 2, 3, 4, 5)) if indexed else i32(0)
    doc = potsherd.read(body, format="n3vmesh")
    assert doc.info()["triangles"] == 2 and doc.info()["indexed"] is indexed
    sc, g, path = gltf_of(doc, tmp_path)
    (prim,) = sc.meshes[0].primitives
    # mirrored X and reversed winding (the KO export convention)
    assert prim.positions[1].tolist() == [-1, 0, 0]
    assert prim.indices.tolist()[:3] == [0, 2, 1]
    assert g["materials"][0]["extras"]["hidden"] is True
    validate(path)
    bad = s(b"w") + i32(3) + f32(0, 0, 0, 1, 0, 0, 0, 1, 0) + i32(3) + struct.pack("<3H", 0, 1, 9)
    sc = potsherd.read(bad, format="n3vmesh").codec.to_scene(potsherd.read(bad, format="n3vmesh"))
    assert not sc.meshes and "1 triangles name missing vertices" in sc.warnings[0]


def ntf_a4(name=b"lm", w=2, h=2, alpha=15):
    """An A4R4G4B4 NTF record, every texel black with the given alpha."""
    px = struct.pack("<H", alpha << 12) * (w * h)
    return s(name) + b"NTF\x03" + i32(w, h, 26, 0) + px


def test_lightmap_overlay_places_tiles_like_the_engine():
    """A 2 x 2 patch grid over a 4-tile terrain (2 tiles a patch): patch (1, 0)
    holds tile (1, 0) inside it, i.e. terrain tile (3, 0)."""
    from potsherd.formats.ko.zone_lightmap import LIFT, lightmap_mesh
    head = 4 + 4 * 4
    patch = i32(1) + i32(1, 0) + ntf_a4(w=4, h=4)
    data = i32(0) + i32(0, head, 0, 0) + patch
    tlt = potsherd.read(data, format="tlt")
    assert tlt.params == {"patchCount": 2, "patchBlocks": 1}
    heights = np.arange(25, dtype=np.float32).reshape(5, 5)
    sc = Scene()
    mesh = lightmap_mesh(tlt, heights, 4.0, sc)
    (prim,) = sc.meshes[mesh].primitives
    # corners (x, z) (x, z+1) (x+1, z+1) (x+1, z) of tile (3, 0), X mirrored
    want = [[-12, heights[3, 0] + LIFT, 0], [-12, heights[3, 1] + LIFT, 4],
            [-16, heights[4, 1] + LIFT, 4], [-16, heights[4, 0] + LIFT, 0]]
    np.testing.assert_allclose(prim.positions, np.array(want, np.float32), rtol=0, atol=1e-5)
    # the engine's one-texel inset of a 4-texel map, in a one-tile atlas
    np.testing.assert_allclose(prim.uvs[0], [[.25, .75], [.25, .25], [.75, .25], [.75, .75]])
    mat = sc.materials[prim.material]
    assert mat.alpha_mode == "BLEND" and mat.unlit
    # a grid that does not divide the terrain is a warning, not a guess
    sc2 = Scene()
    assert lightmap_mesh(tlt, np.zeros((4, 4), np.float32), 4.0, sc2) is None
    assert "do not divide" in sc2.warnings[0]


@pytest.mark.corpus
def test_moradon_with_its_light_map(tmp_path):
    from corpus_paths import CORPUS_ROOT
    gtd = CORPUS_ROOT / "ko/variants/56a4d7f0e8/data/Zones/moradon_1298.gtd"
    tlt = CORPUS_ROOT / "ko/data/Zones/moradon.tlt"
    if not (gtd.is_file() and tlt.is_file()):
        pytest.skip("KO corpus not present")
    doc = potsherd.read(gtd)
    sc = doc.codec.to_scene(doc, source_path=str(gtd), lightmap=str(tlt), objects=False)
    node = next(n for n in sc.nodes if n.name == "lightmap")
    lm = potsherd.read(tlt)
    total = sum(int(p["tileCount"]) for p in lm.root["patches"])
    assert node.extras["tiles"] == total > 0
    none = doc.codec.to_scene(doc, source_path=str(gtd), lightmap="0", objects=False)
    assert not any(n.name == "lightmap" for n in none.nodes)
    # the zone's .glo lights, placed as KHR_lights_punctual lights
    glo = CORPUS_ROOT / "ko/data/Zones/moradon.glo"
    lit = doc.codec.to_scene(doc, source_path=str(gtd), lightmap="0", lights=str(glo),
                             objects=False)
    assert len(lit.lights) == 3 and lit.nodes[0].extras["zone"]["lights"] == 3
    assert not none.lights
    out = tmp_path / "moradon.glb"
    from potsherd.export.gltf import write_glb
    write_glb(sc, out)
    validate(out)
