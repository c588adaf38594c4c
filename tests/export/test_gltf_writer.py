"""glTF writer: exact structure of exported scenes, and the Khronos validator on each."""
from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from export_scenes import checker_png, morph_scene, skinned_cube_scene, textured_quad_scene
from potsherd.core.errors import EncodeError
from potsherd.export.gltf import glb_bytes, scene_to_gltf, write_glb, write_gltf
from potsherd.export.render import Gltf
from potsherd.export.validate import validate_many, validator_available
from potsherd.scene import (Animation, Channel, Mesh, Node, Primitive, Scene, Skin,
                            quat_from_axis_angle)

needs_validator = pytest.mark.skipif(not validator_available(),
                                     reason="node or the gltf-validator npm package is missing")


def _validate_clean(*paths) -> list:
    reports = validate_many(paths)
    for r in reports:
        bad = [m for m in r["messages"] if m["severity"] in ("error", "warning")]
        assert (r["errors"], r["warnings"]) == (0, 0), (r["file"], bad)
    return reports


# ---- skinned, animated cube ---------------------------------------------------

def test_skinned_cube_structure(tmp_path):
    path = tmp_path / "skin.glb"
    write_glb(skinned_cube_scene(), path)
    g = Gltf(str(path))
    j = g.json
    prim = j["meshes"][0]["primitives"][0]
    pos = j["accessors"][prim["attributes"]["POSITION"]]
    assert pos["count"] == 48
    assert pos["min"] == [-0.5, 0.0, -0.5] and pos["max"] == [0.5, 2.0, 0.5]
    assert pos["componentType"] == 5126 and pos["type"] == "VEC3"
    idx = j["accessors"][prim["indices"]]
    assert (idx["count"], idx["componentType"]) == (72, 5123)
    assert j["bufferViews"][idx["bufferView"]]["target"] == 34963
    assert j["bufferViews"][pos["bufferView"]]["target"] == 34962
    assert all(v["byteOffset"] % 4 == 0 for v in j["bufferViews"])
    # skin: 2 joints, IBMs are inverse bind poses (column-major, translation last)
    skin = j["skins"][0]
    assert len(skin["joints"]) == 2 and skin["skeleton"] == skin["joints"][0]
    ibm = g.accessor(skin["inverseBindMatrices"])
    assert ibm.shape == (2, 16)
    assert ibm[1].tolist() == [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, -1, 0, 1]
    joints = g.accessor(prim["attributes"]["JOINTS_0"])
    weights = g.accessor(prim["attributes"]["WEIGHTS_0"])
    assert j["accessors"][prim["attributes"]["JOINTS_0"]]["componentType"] == 5121
    assert np.all(weights.sum(axis=1) == np.float32(1.0))
    # y == 1 corners: 4 on the touching face + 2 on each of 4 sides, per box
    assert int((weights[:, 1] > 0).sum()) == 24
    assert joints[:24, 0].tolist() == [0] * 24 and joints[47, 0] == 1
    # animation: 3 channels, 2 s long, rotation keys unit length
    anim = j["animations"][0]
    assert anim["name"] == "bend" and anim["extras"] == {"fps": 30}
    assert len(anim["channels"]) == 3
    paths = sorted(c["target"]["path"] for c in anim["channels"])
    assert paths == ["rotation", "scale", "translation"]
    inputs = [j["accessors"][s["input"]] for s in anim["samplers"]]
    assert max(a["max"][0] for a in inputs) == 2.0 and min(a["min"][0] for a in inputs) == 0.0
    assert [s["interpolation"] for s in anim["samplers"]] == ["LINEAR", "LINEAR", "STEP"]
    # translation and scale have the same key times: one shared input accessor
    assert anim["samplers"][1]["input"] == anim["samplers"][2]["input"]
    assert anim["samplers"][0]["input"] != anim["samplers"][1]["input"]
    rot = g.accessor(anim["samplers"][0]["output"])
    assert rot.shape == (5, 4)
    assert np.allclose(rot[-1], [0, 0, np.sqrt(0.5), np.sqrt(0.5)], atol=1e-7)
    # the skinned mesh node is a root and has no transform
    body = [n for n in j["nodes"] if n.get("name") == "body"][0]
    assert body["skin"] == 0 and "translation" not in body
    assert j["nodes"].index(body) in j["scenes"][0]["nodes"]


@needs_validator
def test_skinned_cube_validates(tmp_path):
    write_glb(skinned_cube_scene(), tmp_path / "skin.glb")
    write_gltf(skinned_cube_scene(), tmp_path / "skin.gltf")
    _validate_clean(tmp_path / "skin.glb", tmp_path / "skin.gltf")


# ---- morph targets --------------------------------------------------------------

def test_morph_targets(tmp_path):
    gl, binary = scene_to_gltf(morph_scene())
    mesh = gl["meshes"][0]
    assert mesh["weights"] == [0.0, 0.0]
    assert mesh["extras"] == {"targetNames": ["up", "squeeze"]}
    targets = mesh["primitives"][0]["targets"]
    assert len(targets) == 2
    t0 = gl["accessors"][targets[0]["POSITION"]]
    assert (t0["min"], t0["max"]) == ([0.0, 0.0, 0.0], [0.0, 1.0, 0.0])
    t1 = gl["accessors"][targets[1]["POSITION"]]
    assert (t1["min"], t1["max"]) == ([-0.5, 0.0, 0.0], [0.0, 0.0, 0.0])
    s = gl["animations"][0]["samplers"][0]
    assert s["interpolation"] == "STEP"
    out = gl["accessors"][s["output"]]
    assert (out["count"], out["type"]) == (6, "SCALAR")     # 3 keys x 2 targets
    assert gl["animations"][0]["channels"][0]["target"]["path"] == "weights"
    path = tmp_path / "morph.glb"
    path.write_bytes(glb_bytes(gl, binary))
    if validator_available():
        _validate_clean(path)


# ---- textured quad -----------------------------------------------------------------

def test_textured_quad_glb(tmp_path):
    path = tmp_path / "quad.glb"
    write_glb(textured_quad_scene(), path)
    data = path.read_bytes()
    magic, version, length = struct.unpack_from("<III", data)
    assert (magic, version, length) == (0x46546C67, 2, len(data))
    jlen, jtype = struct.unpack_from("<II", data, 12)
    assert jtype == 0x4E4F534A and jlen % 4 == 0
    blen, btype = struct.unpack_from("<II", data, 20 + jlen)
    assert btype == 0x004E4942 and blen % 4 == 0 and 28 + jlen + blen == len(data)
    g = Gltf(str(path))
    j = g.json
    img = j["images"][0]
    assert img["mimeType"] == "image/png" and img["name"] == "checker"
    assert g.view_bytes(img["bufferView"]) == checker_png()
    assert j["textures"] == [{"source": 0, "sampler": 0}]
    assert j["samplers"] == [{"wrapS": 10497, "wrapT": 10497}]
    mat = j["materials"][0]
    assert mat["alphaMode"] == "BLEND" and mat["doubleSided"] is True
    assert mat["pbrMetallicRoughness"] == {"metallicFactor": 0.0, "roughnessFactor": 1.0,
                                           "baseColorTexture": {"index": 0}}
    assert mat["extras"] == {"additive": False}
    prim = j["meshes"][0]["primitives"][0]
    col = j["accessors"][prim["attributes"]["COLOR_0"]]
    assert (col["componentType"], col["normalized"], col["type"]) == (5121, True, "VEC4")
    assert g.accessor(prim["attributes"]["TEXCOORD_0"]).tolist() == \
        [[0, 1], [1, 1], [1, 0], [0, 0]]
    assert j["nodes"][0]["extras"] == {"note": "top-left cell is blue"}


def test_textured_quad_gltf_external(tmp_path):
    path = tmp_path / "quad.gltf"
    write_gltf(textured_quad_scene(), path)
    j = json.loads(path.read_text())
    assert j["buffers"][0]["uri"] == "quad.bin"
    assert j["images"][0] == {"name": "checker", "uri": "quad_checker.png"}
    assert (tmp_path / "quad_checker.png").read_bytes() == checker_png()
    assert (tmp_path / "quad.bin").stat().st_size == j["buffers"][0]["byteLength"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["quad.bin", "quad.gltf",
                                                          "quad_checker.png"]
    if validator_available():
        _validate_clean(path, tmp_path / "quad.gltf")


@needs_validator
def test_textured_quad_validates(tmp_path):
    write_glb(textured_quad_scene(), tmp_path / "quad.glb")
    _validate_clean(tmp_path / "quad.glb")


# ---- the writer repairs what would be invalid, and says so --------------------------

def _messy_scene() -> Scene:
    s = Scene()
    n = 6
    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 2, 0], [1, 2, 0]], np.float32)
    nrm = np.tile([0.0, 0.0, 2.0], (n, 1))
    nrm[5] = 0                                   # zero normal
    joints = np.tile(np.arange(6), (n, 1))        # 6 influences per vertex
    weights = np.tile([3.0, 1, 1, 1, 1, 1], (n, 1))
    joints[0, 1] = 0                             # duplicate joint 0 on vertex 0
    mesh = s.add_mesh(Mesh(primitives=[
        Primitive(positions=pos, normals=nrm, indices=np.array([0, 1, 2, 2, 1, 3, 2, 3, 4, 4, 3, 5]),
                  joints=joints, weights=weights),
        Primitive(positions=np.zeros((0, 3)))]))            # empty: dropped
    root = s.add_node(name="root")
    bones = [s.add_node(name=f"b{i}", parent=root, translation=(0, i * 0.2, 0)) for i in range(6)]
    sk = s.add_skin(Skin(joints=bones, inverse_bind_matrices=np.tile(np.eye(4), (6, 1, 1))))
    s.add_node(name="mesh", mesh=mesh, skin=sk)
    q = quat_from_axis_angle([[0, 1, 0]] * 4, [0, 0.1, 0.2, 0.3]) * 3.0  # not unit
    s.add_animation(Animation(name="a", channels=[
        Channel(bones[1], "rotation", np.array([0.0, 0.5, 0.5, 1.0]), q),   # repeated time
        Channel(bones[2], "translation", np.array([0.0]), np.array([[0, np.nan, 0]])),
    ]))
    s.add_animation(Animation(name="empty"))
    return s


def test_writer_repairs(tmp_path):
    scene = _messy_scene()
    gl, binary = scene_to_gltf(scene)
    prims = gl["meshes"][0]["primitives"]
    assert len(prims) == 1
    at = prims[0]["attributes"]
    assert sorted(at) == ["JOINTS_0", "JOINTS_1", "NORMAL", "POSITION", "WEIGHTS_0",
                          "WEIGHTS_1"]
    path = tmp_path / "messy.glb"
    path.write_bytes(glb_bytes(gl, binary))
    g = Gltf(str(path))
    w = np.concatenate([g.accessor(at["WEIGHTS_0"]), g.accessor(at["WEIGHTS_1"])], axis=1)
    jn = np.concatenate([g.accessor(at["JOINTS_0"]), g.accessor(at["JOINTS_1"])], axis=1)
    assert np.all(np.abs(w.astype(np.float64).sum(axis=1) - 1) < 1e-6)
    assert w[1].tolist() == pytest.approx([3 / 8, 1 / 8, 1 / 8, 1 / 8, 1 / 8, 1 / 8, 0, 0])
    assert w[0, 1] == 0 and jn[0, 1] == 0 and w[0, 0] == pytest.approx(4 / 8)
    nrm = g.accessor(at["NORMAL"])
    assert nrm[0].tolist() == [0, 0, 1] and nrm[5].tolist() == [0, 1, 0]
    anims = gl["animations"]
    assert [a["name"] for a in anims] == ["a"]
    times = g.accessor(anims[0]["samplers"][0]["input"])[:, 0]
    assert times.tolist() == [0.0, 0.5, 1.0]
    rot = g.accessor(anims[0]["samplers"][0]["output"])
    assert np.allclose(np.linalg.norm(rot, axis=1), 1, atol=1e-6)
    assert rot[1] == pytest.approx(quat_from_axis_angle([0, 1, 0], 0.2), abs=1e-7)  # last kept
    assert g.accessor(anims[0]["samplers"][1]["output"]).tolist() == [[0, 0, 0]]
    warn = "\n".join(scene.warnings)
    for part in ("empty primitive dropped", "zero-length normals", "repeated or unordered",
                 "non-finite"):
        assert part in warn
    assert gl["asset"]["extras"]["warnings"] == scene.warnings
    if validator_available():
        _validate_clean(path)


def test_writer_rejects_inconsistent_scenes():
    s = Scene()
    m = s.add_mesh(Mesh(primitives=[Primitive(positions=np.zeros((3, 3)),
                                              indices=np.array([0, 1, 3]))]))
    s.add_node(mesh=m)
    with pytest.raises(EncodeError) as e:
        scene_to_gltf(s)
    assert e.value.path == "meshes[0].primitives[0].indices"
    assert "index 3 outside 3 vertices" in str(e.value)

    s = Scene()
    a = s.add_node(name="a")
    b = s.add_node(name="b")
    c = s.add_node(name="c", parent=a)
    s.nodes[b].children.append(c)
    with pytest.raises(EncodeError, match="node 2 has two parents"):
        scene_to_gltf(s)

    s = Scene()
    m = s.add_mesh(Mesh(primitives=[Primitive(positions=np.zeros((3, 3)), joints=np.full((3, 4), 2),
                                              weights=np.ones((3, 4)))]))
    j = s.add_node(name="j")
    s.add_node(mesh=m, skin=s.add_skin(Skin(joints=[j])))
    with pytest.raises(EncodeError, match="outside the skin's 1 joints"):
        scene_to_gltf(s)


def test_node_matrix_and_nonfinite_extras():
    s = Scene(extras={"bad": float("nan"), "arr": np.arange(3), "raw": b"\x01\xff"})
    m = np.eye(4)
    m[:3, 3] = (1, 2, 3)
    m[0, 0] = 2.0
    s.add_node(Node(name="m", matrix=m))
    s.add_node(Node(name="ident", matrix=np.eye(4)))
    gl, _ = scene_to_gltf(s)
    assert gl["nodes"][0]["matrix"] == [2, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 1, 2, 3, 1]
    assert "matrix" not in gl["nodes"][1]
    assert gl["scenes"][0]["extras"] == {"bad": "nan", "arr": [0, 1, 2], "raw": "01ff"}
    json.dumps(gl, allow_nan=False)


def test_values_past_float32_are_reported_by_accessor_not_by_numpy():
    """A position of 1e39 overflows float32: the writer names the accessor and
    writes 0 there, with no numpy RuntimeWarning (an error here) on the way."""
    import warnings
    from potsherd.scene import Mesh, Primitive, Scene
    from potsherd.export.gltf import scene_to_gltf
    s = Scene()
    s.add_node(name="x", mesh=s.add_mesh(Mesh(name="x", primitives=[Primitive(
        positions=np.array([[0, 0, 0], [1e39, 0, 0], [0, 1, 0]]),
        indices=np.array([0, 1, 2], np.uint32))])))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gl, _ = scene_to_gltf(s)
    assert gl["accessors"][0]["max"] == [0.0, 1.0, 0.0]
    assert s.warnings == ["meshes[0].primitives[0].POSITION: 1 non-finite values replaced by 0"]


@pytest.mark.parametrize("start", [-2.5, 0.0, 0.25])
def test_a_clip_starting_before_zero_is_shifted_whole(tmp_path, start):
    """glTF key times start at 0; a clip whose keys start before it (Maya scenes
    may, ufbx's maya_long_keyframes do) is shifted as a whole, channels keeping
    their relative timing, with a warning naming the shift; a clip starting at
    or after 0 is written as it is, without one (the controls)."""
    s = Scene(name="clip")
    a, b = s.add_node(name="a"), s.add_node(name="b")
    times_a = np.array([0.0, 1.0, 2.0], np.float32) + np.float32(start)
    times_b = np.array([1.0, 3.0], np.float32) + np.float32(start)
    s.add_animation(Animation(name="take", channels=[
        Channel(a, "translation", times_a, np.arange(9, dtype=np.float32).reshape(3, 3)),
        Channel(b, "scale", times_b, np.ones((2, 3), np.float32))]))
    path = tmp_path / "clip.glb"
    write_glb(s, path)
    g = Gltf(path)
    samplers = g.json["animations"][0]["samplers"]
    got = [g.accessor(x["input"])[:, 0].tolist() for x in samplers]
    shift = max(0.0, -start)
    assert got == [(times_a + shift).tolist(), (times_b + shift).tolist()]
    said = [w for w in s.warnings if "start at 0" in w]
    assert said == ([f"animations[0]: key times start at {start:g} s; the clip is shifted by "
                     f"{shift:g} s to start at 0"] if start < 0 else [])
    if validator_available():
        _validate_clean(path)
