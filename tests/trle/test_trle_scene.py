"""TR4 moveables to the neutral scene: hierarchy, UV corners, winding, shades,
animations at 30 fps; corpus exports pass the Khronos validator when present."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import potsherd
import srgb_formula
from potsherd.core.errors import FormatError
from potsherd.export.gltf import write_glb

from trle_fixtures import tiny_trwad_bytes
from corpus_paths import CORPUS_ROOT

CORPUS = CORPUS_ROOT / "tr4wad"
H = math.sqrt(0.5)


def _scene(**options):
    """The tiny moveable in the rigid form (``skin=0``) unless asked otherwise."""
    doc = potsherd.read(tiny_trwad_bytes())
    return doc.codec.to_scene(doc, **{"skin": False, **options})


def test_hierarchy_axes_and_units():
    s = _scene()
    assert [n.name for n in s.nodes] == ["tr4", "MUMMY", "MUMMY_0", "MUMMY_1"]
    assert s.roots == [0]
    top = s.nodes[0]
    assert top.rotation == (0.0, 0.0, 1.0, 0.0)  # 180 degrees about Z: Y down -> Y up, +Z kept
    assert top.scale == (1 / 512, 1 / 512, 1 / 512)
    assert s.nodes[2].children == [3]
    assert s.nodes[3].translation == (10.0, -20.0, 30.0)  # the link offset
    assert _scene(unit_scale=1 / 1024).nodes[0].scale == (1 / 1024,) * 3


def test_front_faces_plus_z_upright_and_not_mirrored():
    """TR moves an item with heading 0 along +Z (x += speed*sin, z += speed*cos),
    so +Z is the front, -Y is up and +X the model's right; glTF wants the front
    toward +Z with +Y up, which puts the model's right at -X."""
    from potsherd.scene import quat_to_matrix, trs_to_matrix
    s = _scene()
    r = quat_to_matrix(s.nodes[0].rotation)
    np.testing.assert_allclose(r, np.diag([-1.0, -1.0, 1.0]), atol=1e-15)
    assert np.linalg.det(r) == pytest.approx(1.0)  # a rotation, no mirror
    # MUMMY_1 hangs 30 units in front of, 20 above and 10 right of mesh 0 (link offset
    # (10, -20, 30)); its mesh's vertex (0, 64, 0) lies 64 units below that point
    assert s.nodes[3].translation == (10.0, -20.0, 30.0)
    mesh = s.meshes[s.nodes[3].mesh].primitives[0].positions
    assert mesh.tolist() == [[0, 64, 0], [0, 0, 0], [64, 0, 0]]
    world = np.eye(4)
    for i in (0, 1, 2, 3):  # tr4 -> MUMMY -> MUMMY_0 -> MUMMY_1, rest pose
        n = s.nodes[i]
        world = world @ trs_to_matrix(n.translation, n.rotation, n.scale)
    got = mesh @ world[:3, :3].T + world[:3, 3]
    # in front -> +Z, above -> +Y, the model's right -> -X (1/512 m per unit)
    np.testing.assert_allclose(got * 512, [[-10, -44, 30], [-10, 20, 30], [-74, 20, 30]],
                               rtol=0, atol=1e-12)


def test_uv_corners_winding_and_materials():
    s = _scene()
    quad, tri = s.meshes[0].primitives   # one primitive per attribute byte: 1, then 22
    # texture 1 (1x3) packed at (0, 0), texture 0 (2x2) at (1, 0) of a 256x3 atlas (only the
    # used rows of the page are kept)
    assert s.images[0].data[16:24] == (256).to_bytes(4, "big") + (3).to_bytes(4, "big")
    assert quad.material == 1 and tri.material == 2  # quad additive; tri shine (22 = 2 | 5 << 2)
    assert s.materials[2].name == "textured_attr22"
    assert s.materials[2].extras == {"tr4_attributes": 22} and s.materials[2].alpha_mode == "MASK"
    assert s.materials[1].alpha_mode == "BLEND" and s.materials[1].extras == {"additive": True}
    assert s.materials[0].alpha_mode == "MASK"
    # mirrored triangle with corner bits 2: v0, v1, v2 = nw, sw, ne; written v0, v2, v1
    assert tri.positions.tolist() == [[0, 0, 0], [256, -256, 0], [256, 0, 0]]
    assert (tri.uvs[0] * [256, 3]).round(5).tolist() == [[0, 0], [1, 0], [0, 3]]
    # quad corners nw, ne, se, sw; triangles (0, 2, 1), (0, 3, 2)
    assert quad.positions.tolist() == [[0, 0, 0], [256, -256, 0], [256, 0, 0], [0, -256, 0]]
    assert (quad.uvs[0] * [256, 3]).round(5).tolist() == [[1, 0], [3, 2], [3, 0], [1, 2]]
    assert quad.indices.tolist() == [0, 1, 2, 0, 3, 1]
    np.testing.assert_allclose(quad.normals, [[0, 0, 1]] * 4)


def test_shades_become_vertex_colours():
    prim = _scene().meshes[1].primitives[0]
    # shade 4096 is display brightness 0.49994, linear 0.21398 (the game multiplies in display space)
    np.testing.assert_allclose(prim.colors[:, 0], [0.0, 1.0, 0.2139846], rtol=1e-6)
    np.testing.assert_allclose(prim.colors[:, 0], srgb_formula.decode([0.0, 1.0, 4095 / 8191]),
                               rtol=1e-6)


def test_animations_at_30_fps():
    s = _scene()
    a0, a1 = s.animations
    tr, rot0, rot1 = a0.channels
    assert (tr.node, tr.path) == (2, "translation")
    np.testing.assert_allclose(tr.times, [0, 2 / 30])
    assert tr.values.tolist() == [[0, -100, 0], [0, -110, 5]]
    np.testing.assert_allclose(rot0.values[0], [H, 0, 0, H], atol=1e-6)  # 90 degrees about X
    np.testing.assert_allclose(rot1.values[:, 1], [H, 1.0], atol=1e-6)  # Y only: 90, 180
    assert a0.extras["next_anim"] == 1 and a1.extras["next_anim"] == 0
    assert a0.extras["commands"][0] == {"type": "play_sound", "frame": 1, "id": 12, "condition": 1}
    assert a0.extras["state_changes"][0]["dispatches"][0] == {"low": 0, "high": 1, "next_anim": 1,
                                                              "next_frame": 0}
    assert a1.extras["next_frame"] == 0 and len(a1.channels[0].times) == 1


def test_tiny_glb_is_valid(tmp_path):
    out = tmp_path / "tiny.glb"
    assert write_glb(_scene(), out) > 0
    from potsherd.export.validate import validate_gltf, validator_available
    if validator_available():
        assert validate_gltf(out)["errors"] == 0


def test_opaque_trwad_has_no_scene():
    doc = potsherd.read(b"\xaa\0\0\0\x02\0\0\0", format="trwad")
    with pytest.raises(FormatError):
        doc.codec.to_scene(doc)


@pytest.mark.skipif(not CORPUS.is_dir(), reason="shared tr4wad corpus not present")
def test_corpus_winding_agrees_with_stored_normals(tmp_path):
    doc = potsherd.read(str(CORPUS / "tut1" / "tut1.WAD"))
    s = doc.codec.to_scene(doc, moveable="BADDY_1")
    assert [n.name for n in s.nodes[:3]] == ["tr4", "BADDY_1", "BADDY_1_0"]
    agree = disagree = 0
    for m in s.meshes:
        for p in m.primitives:
            t = p.indices.reshape(-1, 3)
            q = p.positions.astype(np.float64)
            face = np.cross(q[t[:, 1]] - q[t[:, 0]], q[t[:, 2]] - q[t[:, 0]])
            d = (face * p.normals[t].sum(1)).sum(1)
            agree += int((d > 0).sum())
            disagree += int((d < 0).sum())
    assert agree > 20 * disagree
    assert len(s.animations) == 71
    poyu = potsherd.read(str(CORPUS / "poyu" / "TR4 color.wad"))
    s2 = poyu.codec.to_scene(poyu)
    assert [s2.nodes[i].name for i in s2.nodes[0].children] == ["LARA_SKIN", "LARA_SKIN_JOINTS",
                                                                "LARA_SCREAM", "HAIR"]
    assert s2.nodes[s2.nodes[0].children[1]].translation == (2048.0, 0.0, 0.0)
    out = tmp_path / "poyu.glb"
    write_glb(s2, out)
    from potsherd.export.validate import validate_gltf, validator_available
    if validator_available():
        assert validate_gltf(out)["errors"] == 0


@pytest.mark.skipif(not CORPUS.is_dir(), reason="shared tr4wad corpus not present")
@pytest.mark.parametrize("oid", [41, 47])
def test_posed_scene_matches_the_stored_keyframe_boxes(oid):
    """Rotation signs and the qY*qX*qZ order, checked against the engine's own
    per-keyframe bounding boxes (a wrong sign or order misses by ~150 units)."""
    from potsherd.formats.trle import model
    from potsherd.formats.trle.moveables import extract
    from potsherd.scene import quat_to_matrix
    doc = potsherd.read(str(CORPUS / "tut1" / "tut1.WAD"))
    s = doc.codec.to_scene(doc, moveable=oid, skin=False)
    t = extract(doc.root, oid)
    mesh_nodes = list(range(2, len(s.nodes)))
    parents = s.parents()
    points = {i: np.concatenate([p.positions for p in s.meshes[s.nodes[i].mesh].primitives])
              for i in mesh_nodes if s.nodes[i].mesh is not None}
    errors = []
    base, total = t["moveable"]["keyframe_offset"], 2 * len(t["keyframe_words"])
    anims = t["animations"]
    for k, (anim, a) in enumerate(zip(s.animations, anims)):
        start = a["keyframe_offset"] - base
        end = anims[k + 1]["keyframe_offset"] - base if k + 1 < len(anims) else total
        count = model.keyframe_count(start, a["frame_size"], end)
        if count == 0:  # kept as one key of the rest pose, not dropped
            assert anim.extras["keyframe_count"] == 0 and len(anim.channels) == 1
            assert anim.channels[0].times.tolist() == [0.0]
            continue
        boxes = model.decode_keyframes(t["keyframe_words"][start // 2:], a["frame_size"], count,
                                       len(mesh_nodes))["bbox"]
        rot = {c.node: c.values for c in anim.channels if c.path == "rotation"}
        root_t = next(c.values for c in anim.channels if c.path == "translation")
        for f in range(0, count, 3):
            world: dict = {}
            for i in mesh_nodes:
                m = np.eye(4)
                m[:3, :3] = quat_to_matrix(rot[i][f])[:3, :3]
                m[:3, 3] = root_t[f] if i == 2 else s.nodes[i].translation
                world[i] = m if parents[i] == 1 else world[parents[i]] @ m
            pts = np.concatenate([p @ world[i][:3, :3].T + world[i][:3, 3]
                                  for i, p in points.items()])
            mine = np.stack([pts.min(0), pts.max(0)], 1).reshape(-1)
            errors.append(np.abs(mine - boxes[f]).max())
    assert len(errors) > 50
    assert np.median(errors) < 8 and np.percentile(errors, 90) < 16
