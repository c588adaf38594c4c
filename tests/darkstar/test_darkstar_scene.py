"""Shape -> neutral scene: hierarchy, rest poses, objects, meshes, morph
targets, animations, materials, detail selection; every real shape exports to
a glTF the Khronos validator accepts (when the validator is installed)."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import potsherd
from potsherd.core.errors import FormatError
from potsherd.export.gltf import write_glb
from potsherd.formats.darkstar.scene import to_scene
from potsherd.scene import trs_to_matrix

from dts_fixtures import envelope, matlist_bytes, shape_doc
import srgb_formula as srgb
from corpus_paths import CORPUS_ROOT

H = math.sqrt(0.5)
CORPUS = CORPUS_ROOT / "dts"


def _doc(root: dict) -> potsherd.Document:
    data = potsherd.write(potsherd.from_json(envelope(root)))
    return potsherd.read(data, format="dts")


def _animated_v8() -> dict:
    root = shape_doc(8)
    p = root["payload"]
    p["subSequences"] = {"fSequenceIndex": [0, 0], "fnKeyframes": [2, 2], "fFirstKeyframe": [0, 0]}
    p["objects"]["fnSubSequences"] = [1]
    p["objects"]["fFirstSubSequence"] = [1]
    return root


def test_v8_hierarchy_rest_pose_and_object():
    s = to_scene(_doc(_animated_v8()), skin=False)
    # names are unique: the object named like its node gets a suffix, the original in extras
    assert [n.name for n in s.nodes] == ["bounds", "root", "root.1", "z-up"]
    assert s.roots == [3] and s.nodes[3].children == [0]
    # 180 degrees about (0, 1, 1): Z-up, +Y-forward data to glTF's Y-up, +Z-forward
    assert s.nodes[3].rotation == (0.0, H, H, 0.0)
    assert s.nodes[0].children == [1] and s.nodes[1].children == [2]
    bounds, node, obj = s.nodes[0], s.nodes[1], s.nodes[2]
    assert bounds.rotation == pytest.approx([0, 0, 0, 1]) and bounds.translation == [0, 0, 0]
    # stored Quat16 (0, 0, 23170, 23170): glTF gets the conjugate (note 8.2)
    assert node.rotation == pytest.approx([0, 0, -H, H], abs=1e-6)
    assert node.translation == [1.0, 2.0, 3.0] and node.scale is None
    assert obj.translation == [1.0, 2.0, 3.0] and obj.mesh == 0
    assert obj.extras == {"dts_object": 0, "default_invisible": False, "originalName": "root"}
    assert s.extras["dts_version"] == 8 and s.extras["details"] == [{"root": "bounds", "size": 64.0}]


def _world(s, index: int) -> np.ndarray:
    """World matrix of node ``index`` (parents' T*R*S composed down to it)."""
    parents = s.parents()
    m = np.eye(4)
    while index is not None:
        n = s.nodes[index]
        m = trs_to_matrix(n.translation, n.rotation, n.scale) @ m
        index = parents[index]
    return m


def test_front_faces_plus_z_upright_and_not_mirrored():
    """The engine moves a player along row 1 of its transform (+Y, forward) and
    strafes along row 0 (+X, its right); up is +Z.  In glTF the front must
    look toward +Z with +Y up, so the asset's right side is -X."""
    root = shape_doc(8)
    p = root["payload"]
    t = p["transforms"]
    t.update(fRotateZ=[0, 0], fRotateW=[32767, 32767], fTranslateX=[0.0, 0.0],
             fTranslateY=[0.0, 0.0], fTranslateZ=[0.0, 0.0])
    p["objects"].update(fObjectOffsetX=[0.0], fObjectOffsetY=[0.0], fObjectOffsetZ=[0.0])
    mesh = p["meshes"][0]["payload"]
    mesh["frames"].update(scaleX=[1.0, 1.0], scaleY=[1.0, 2.0], originX=[0.0, 0.0],
                          originZ=[0.0, 0.0])
    # frame 0: v0 = (0, 2, 0) straight ahead, v1 = (5, 0, 3) to the right and up
    mesh["verts"].update(x=[0, 5, 10, 20], y=[2, 0, 3, 4], z=[0, 3, 7, 8])
    s = to_scene(_doc(root), skin=False)
    obj = next(i for i, n in enumerate(s.nodes) if n.mesh is not None)
    world = _world(s, obj)
    assert np.linalg.det(world[:3, :3]) == pytest.approx(1.0)       # a rotation, no mirror
    (prim,) = s.meshes[s.nodes[obj].mesh].primitives
    assert prim.positions.tolist() == [[0.0, 2.0, 0.0], [5.0, 0.0, 3.0], [5.0, 0.0, 3.0]]
    got = prim.positions @ world[:3, :3].T + world[:3, 3]
    # forward vertex ends at +Z; up becomes +Y; the model's right (+X) becomes -X
    np.testing.assert_allclose(got, [[0.0, 0.0, 2.0], [-5.0, 3.0, 0.0], [-5.0, 3.0, 0.0]],
                               rtol=0, atol=1e-12)


def test_v8_mesh_primitive_and_morph_target():
    s = to_scene(_doc(_animated_v8()), skin=False)
    mesh = s.meshes[0]
    assert mesh.weights == [0.0] and mesh.target_names == ["frame 1"]
    (prim,) = mesh.primitives
    # face (v0 t2, v1 t1, v1 t0): three (vertex, uv) pairs, winding reversed once
    assert prim.positions.tolist() == [[-1.0, 0.25, 7.0], [126.5, 0.5, 8.0], [126.5, 0.5, 8.0]]
    assert prim.uvs[0].tolist() == [[0.5, 1.0], [1.0, 0.75], [0.0, 0.25]]
    assert prim.indices.tolist() == [0, 2, 1]
    assert prim.targets[0].positions.tolist() == [[11.0, 6.75, 0.0], [-106.5, 8.5, 0.0],
                                                  [-106.5, 8.5, 0.0]]
    assert prim.normals.shape == (3, 3)
    # face material 1 of the v4 list: an RGB material (0x202) of bytes (255, 128, 64),
    # display values as a bitmap's texels: glTF's factor is them in linear light
    mat = s.materials[prim.material]
    assert mat.name == "x.bmp" and mat.base_color == pytest.approx(
        (1.0, *srgb.decode([128 / 255, 64 / 255]), 1.0), rel=1e-12)
    assert mat.base_color[1] == pytest.approx(0.2158605, abs=1e-7)   # (not 128 / 255 = 0.502)
    assert s.materials[0].base_color == (1.0, 1.0, 1.0, 1.0)
    assert s.materials[0].extras["map"] == "WOOD1.bmp"


def test_v8_animation_channels():
    s = to_scene(_doc(_animated_v8()), skin=False)
    (anim,) = s.animations
    assert anim.name == "run"
    assert anim.extras == {"cyclic": True, "duration": 1.5, "priority": 0,
                           "frame_triggers": [{"position": -0.5, "value": 2}]}
    rot, tr, w = anim.channels
    assert (rot.node, rot.path, tr.path) == (1, "rotation", "translation")
    assert rot.times.tolist() == [0.0, 1.5]
    assert np.allclose(rot.values, [[0, 0, 0, 1], [0, 0, -H, H]], atol=1e-6)
    assert tr.values.tolist() == [[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]]
    assert (w.node, w.path, w.interpolation) == (2, "weights", "STEP")
    assert w.values.tolist() == [[0.0], [1.0]]


def test_v7_object_matrix_and_scale_keys():
    s = to_scene(_doc(shape_doc(7)), skin=False)
    node, obj = s.nodes[1], s.nodes[2]
    assert node.scale == [2.0, 2.0, 2.0]
    assert obj.translation == [1.0, 2.0, 3.0]
    assert obj.rotation == pytest.approx([0, 0, 0, 1]) and obj.scale == pytest.approx([1, 1, 1])
    assert obj.extras["default_invisible"] is True
    paths = [c.path for c in s.animations[0].channels]
    assert paths == ["rotation", "translation", "scale"]


def test_v2_float_quaternions_and_v1_mesh():
    s = to_scene(_doc(shape_doc(2)), skin=False)
    q = np.array([0.0, 0.0, -0.5, 0.75]) / math.hypot(0.5, 0.75)
    assert s.nodes[1].rotation == pytest.approx(q.tolist(), abs=1e-6)
    assert len(s.meshes[0].primitives[0].targets) == 1


def _two_details() -> dict:
    root = shape_doc(8)
    p = root["payload"]
    p["nodes"] = {"fName": [0, 1, 2], "fParent": [-1, 0, 0], "fnSubSequences": [0, 1, 0],
                  "fFirstSubSequence": [0, 0, 0], "fDefaultTransform": [0, 1, 1]}
    p["details"] = {"fRootNodeIndex": [1, 2], "fSize": [64.0, 8.0]}
    p["objects"] = {k: v * 2 for k, v in p["objects"].items()}
    p["objects"]["fName"] = [1, 0]
    p["objects"]["fNodeIndex"] = [1, 2]
    return root


def test_detail_selection_and_bounds_object():
    doc = _doc(_two_details())
    s0 = to_scene(doc, skin=False)
    assert [n.name for n in s0.nodes] == ["bounds", "root", "root.1", "z-up"]
    s1 = to_scene(doc, detail=1, skin=False)
    assert [n.name for n in s1.nodes] == ["bounds", "run", "z-up"]     # object "bounds" skipped
    s1b = to_scene(doc, detail=1, bounds=True, skin=False)
    assert [n.name for n in s1b.nodes] == ["bounds", "run", "bounds.1", "z-up"]
    sall = to_scene(doc, detail=-1, skin=False)
    assert [n.name for n in sall.nodes] == ["bounds", "root", "run", "root.1", "z-up"]
    with pytest.raises(FormatError, match="detail 2 does not exist"):
        to_scene(doc, detail=2, skin=False)


def test_parent_cycle_does_not_hang():
    root = _two_details()
    root["payload"]["nodes"]["fParent"] = [-1, 2, 1]
    s = to_scene(_doc(root), detail=-1, skin=False)
    assert any("cycle" in w for w in s.warnings)
    assert len(s.nodes) == 5


def test_only_shapes_export():
    with pytest.raises(FormatError, match="only a decoded TS::Shape"):
        to_scene(potsherd.read(matlist_bytes(4), format="dts"))
    assert getattr(potsherd.read(matlist_bytes(4), format="dml").codec, "to_scene", None) is None


@pytest.mark.skipif(not CORPUS.is_dir(), reason="shared Darkstar corpus not present")
def test_every_corpus_shape_exports_valid_gltf(tmp_path):
    from potsherd.export.validate import validate_many, validator_available
    outs = []
    for p in sorted(CORPUS.rglob("*")):
        if p.suffix.lower() != ".dts" or "non_pers" in p.parts:
            continue
        doc = potsherd.read(p)
        s = doc.codec.to_scene(doc)
        assert s.warnings == [], p
        assert any(n.mesh is not None for n in s.nodes), p
        out = tmp_path / f"{len(outs)}.glb"
        write_glb(s, out)
        outs.append(out)
    assert len(outs) == 28
    if not validator_available():
        pytest.skip("Khronos glTF validator not installed")
    reports = validate_many(outs)
    assert [(r["errors"], r["warnings"]) for r in reports] == [(0, 0)] * len(outs)


@pytest.mark.parametrize("v,shown,hidden", [(8, 0xC000, 0x4000), (7, 0xC0000000, 0x40000000)])
def test_visibility_keys_become_step_scale(v: int, shown: int, hidden: int):
    root = shape_doc(v)
    p = root["payload"]
    p["subSequences"] = {"fSequenceIndex": [0, 0], "fnKeyframes": [2, 2], "fFirstKeyframe": [0, 0]}
    p["objects"]["fnSubSequences"] = [1]
    p["objects"]["fFirstSubSequence"] = [1]
    p["keyframes"]["fMatIndex"] = [shown, hidden]
    (anim,) = to_scene(_doc(root), skin=False).animations
    vis = [c for c in anim.channels if c.path == "scale" and c.interpolation == "STEP"]
    assert len(vis) == 1 and vis[0].node == 2
    assert vis[0].times.tolist() == [0.0, 1.5]
    assert vis[0].values.tolist() == [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]
    assert [c.path for c in anim.channels][-1] == "weights"
