"""Knight Online to_scene: the conventions of note section 10 on small fixtures
(exact values), and a real character from the corpus when it is present."""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

import potsherd
from potsherd import Document
from potsherd.formats.ko.scene import KeyTrack, skin_arrays
from potsherd.scene import Scene, trs_to_matrix
from corpus_paths import CORPUS_ROOT
from ko_bytes import f32, i32, s

CORPUS = CORPUS_ROOT / "ko"


def u16(*v):
    return struct.pack(f"<{len(v)}H", *v)


def key(kind, rate, values):
    if not values:
        return i32(0)
    return i32(len(values)) + struct.pack("<I", kind) + f32(rate) + f32(*[x for v in values for x in v])


def test_pmesh_scene_mirrors_x_flips_winding_and_replays_collapses():
    verts = [(0, 0, 1), (1, 0, 2), (0, 1, 3), (1, 1, 4)]
    vb = b"".join(f32(*p, 0, 0, -1, 0.25, 0.75) for p in verts)
    data = (s(b"m") + i32(1, 2, 4, 6, 3, 3) + vb + u16(0, 1, 2, 0, 2, 2)
            + i32(3, 2, 1, 0, 2) + b"\x01\x00\x00\x00" + i32(4, 5) + i32(0))
    doc = potsherd.read(data, format="n3pmesh")
    sc = doc.codec.to_scene(doc)
    prim = sc.meshes[0].primitives[0]
    # the X mirror: N3 (x, y, z) -> glTF (-x, y, z); the front (+Z) stays +Z
    assert prim.positions.tolist() == [[0, 0, 1], [-1, 0, 2], [0, 1, 3], [-1, 1, 4]]
    assert np.signbit(prim.positions[:, 0]).all()  # -0.0: the mirror was applied
    assert prim.normals.tolist() == [[0, 0, -1]] * 4
    assert prim.uvs[0].tolist() == [[0.25, 0.75]] * 4  # no V flip
    # full detail after the collapse: (0 1 2) (0 3 3); winding reversed per triangle
    assert prim.indices.tolist() == [0, 2, 1, 0, 3, 3]


def joint_file() -> bytes:
    sin = cos = 0.5 ** 0.5
    root_keys = (key(0, 15.0, [(0, 0, 0), (2, 0, 4), (4, 0, 8)])  # frames 0, 2, 4
                 + key(1, 30.0, [(0, sin, 0, cos)])                 # 90 deg about Y
                 + key(0, 30.0, [])
                 + key(1, 30.0, [(sin, 0, 0, cos)]))                # orient: 90 deg about X
    child_keys = key(0, 30, []) + key(1, 30, []) + key(0, 30, []) + key(1, 30, [])
    child = s(b"hand") + f32(0, 1, 2) + f32(0, 0, 0, 1) + f32(1, 1, 1) + child_keys + i32(0)
    return s(b"hips") + f32(9, 9, 9) + f32(0, 0, 0, 1) + f32(1, 1, 1) + root_keys + i32(1) + child


def test_joint_scene_frame0_pose_and_orient_composition():
    doc = potsherd.read(joint_file(), format="n3joint")
    assert doc.params == {"jointKeys": 4}
    sc = doc.codec.to_scene(doc)
    hips, hand = sc.nodes[0], sc.nodes[1]
    assert sc.roots == [0] and hips.children == [1]
    assert hips.translation == [0.0, 0.0, -0.0]  # the position key wins over the static value
    # q_orient (x) q_rot = (0.5, 0.5, 0.5, 0.5); mirrored: (x, -y, -z, w)
    assert np.allclose(hips.rotation, [0.5, -0.5, -0.5, 0.5])
    assert hand.translation == [-0.0, 1.0, 2.0] and hand.rotation == [0.0, -0.0, -0.0, 1.0]
    anim = sc.animations[0]
    assert anim.name == "timeline"
    ch = {c.path: c for c in anim.channels}
    assert set(ch) == {"translation", "rotation"} and ch["translation"].node == 0
    assert ch["translation"].times.tolist() == pytest.approx([0, 2 / 30, 4 / 30])
    assert ch["translation"].values.tolist() == [[0, 0, 0], [-2, 0, 4], [-4, 0, 8]]


def test_key_lookup_floor_of_frame_times_rate_and_lerp():
    k = {"count": 3, "keyType": 0, "samplingRate": 15.0,
         "values": np.array([[0, 0, 0], [2, 0, 4], [4, 0, 8]], np.float32)}
    t = KeyTrack(k, 3)
    assert t.frames().tolist() == [0, 2, 4]
    assert t.sample(np.array([1.0, 2.0, 3.0, 9.0])).tolist() == [[1, 0, 2], [2, 0, 4], [3, 0, 6],
                                                                [4, 0, 8]]  # clamps at the end


def test_clip_times_are_frame_offsets_over_fps():
    from potsherd.formats.ko.scene import flatten_joints, joint_animation
    doc = potsherd.read(joint_file(), format="n3joint")
    joints = flatten_joints(doc.root)
    anim = joint_animation("walk", joints, [0, 1], 1.0, 3.0, 2.0)
    tr = [c for c in anim.channels if c.path == "translation"][0]
    assert tr.times.tolist() == [0.0, 0.5, 1.0]          # frames 1, 2, 3 at 2 frames/s
    assert tr.values.tolist() == [[-1, 0, 2], [-2, 0, 4], [-3, 0, 6]]


def test_skin_unwelds_position_uv_pairs_and_uses_binding_origin():
    sc = Scene()
    sk = {"name": b"x", "faceCount": 2, "vertexCount": 3, "uvCount": 2,
          "positionNormals": np.array([0, 0, 0, 0, 1, 0] * 3, np.float32),
          "vertexIndices": np.array([0, 1, 2, 0, 2, 1], np.uint16),
          "uvs": np.array([0, 0, 1, 1], np.float32),
          "uvIndices": np.array([0, 0, 0, 1, 1, 1], np.uint16),
          "bindings": [{"origin": [1.0, 2.0, 3.0], "count": 1, "joints": np.array([2])},
                       {"origin": [4.0, 5.0, 6.0], "count": 2, "joints": np.array([0, 1]),
                        "weights": np.array([0.25, 0.75])},
                       {"origin": [7.0, 8.0, 9.0], "count": 0}]}
    a = skin_arrays(sk, sc)
    # corners (0,0) (1,0) (2,0) (0,1) (2,1) (1,1): six unique pairs
    assert a["positions"].tolist() == [[-1, 2, 3], [-4, 5, 6], [-7, 8, 9], [-1, 2, 3], [-7, 8, 9],
                                       [-4, 5, 6]]
    assert a["uvs"][0].tolist() == [[0, 0], [0, 0], [0, 0], [1, 1], [1, 1], [1, 1]]
    assert a["indices"].tolist() == [0, 2, 1, 3, 5, 4]
    assert a["joints"][:3].tolist() == [[2, 0], [0, 1], [0, 0]]
    assert a["weights"][:3].tolist() == [[1, 0], [0.25, 0.75], [1, 0]]


def test_opaque_shape_has_no_scene():
    data = s(b"repent") + f32(0) * 10 + i32(0) * 3 + s(b"") * 2 + i32(1 << 30) + bytes(64)
    doc = potsherd.read(data, format="n3shape")
    assert doc.params == {"opaque": 1}
    with pytest.raises(NotImplementedError):
        doc.codec.to_scene(doc)


def test_real_character_scene():
    path = CORPUS / "data" / "Chr" / "mob_kenta.n3chr"
    if not path.is_file():
        pytest.skip("KO corpus not present")
    doc = potsherd.read(path)
    sc = doc.codec.to_scene(doc, source_path=str(path))
    assert len(sc.skins) == 1
    skin = sc.skins[0]
    skinned = [n for n in sc.nodes if n.skin == 0]
    assert [n.name for n in skinned] == ["upper", "lower"]  # the parts' own names
    assert all(sc.nodes.index(n) in sc.roots for n in skinned)  # skinned meshes stay roots
    # inverse bind matrices invert the frame-0 world matrices
    parents = sc.parents()
    world = {}
    for j in skin.joints:
        n = sc.nodes[j]
        local = trs_to_matrix(np.asarray(n.translation), np.asarray(n.rotation), np.asarray(n.scale))
        world[j] = local if parents[j] not in world else world[parents[j]] @ local
    for j, ibm in zip(skin.joints, skin.inverse_bind_matrices):
        assert np.allclose(world[j] @ ibm, np.eye(4), atol=1e-6)
    # the plug hangs under its pre-order joint (15) and carries the weapon mesh
    plug = [n for n in sc.nodes if n.extras.get("joint") == 15][0]
    assert sc.nodes.index(plug) in sc.nodes[skin.joints[15]].children and plug.mesh is not None
    clips = potsherd.read(CORPUS / "data" / "Chr" / "mob_kenta.n3anim").root["clips"]
    assert len(sc.animations) == len(clips)
    assert max(int(p.joints.max()) for m in sc.meshes for p in m.primitives
               if p.joints is not None) < len(skin.joints)
    assert len(sc.images) >= 2 and not [w for w in sc.warnings if "not found" in w]


def test_shape_transform_keys_become_one_animation():
    part = (f32(0, 0, 1) + s(b"missing.n3pmesh") + f32(*([1.0] * 17)) + struct.pack("<6I", 0, 0, 0, 0, 5, 6)
            + i32(0) + f32(0))
    data = (s(b"spin") + f32(1, 2, 3) + f32(0, 0, 0, 1) + f32(1, 1, 1)
            + key(0, 30.0, [(0, 0, 0), (0, 3, 0)]) + i32(0) + i32(0) + s(b"") + s(b"")
            + i32(1) + part + i32(0))
    doc = potsherd.read(data, format="n3shape")
    sc = doc.codec.to_scene(doc)
    root = sc.nodes[0]
    assert root.translation == [-1.0, 2.0, 3.0] and sc.nodes[1].translation == [-0.0, 0.0, 1.0]
    (anim,) = sc.animations
    (ch,) = anim.channels
    assert ch.node == 0 and ch.path == "translation"
    assert ch.times.tolist() == pytest.approx([0.0, 1 / 30]) and ch.values.tolist() == [[0, 0, 0], [0, 3, 0]]
    assert any("missing.n3pmesh" in w for w in sc.warnings)


def test_converted_real_meshes_wind_counter_clockwise_around_their_normals():
    """After the X mirror and the winding swap, the geometric face normal of
    (almost) every triangle points the way the stored vertex normals do."""
    files = sorted((CORPUS / "data").rglob("*.n3pmesh")) if CORPUS.is_dir() else []
    if not files:
        pytest.skip("KO corpus not present")
    for p in files:
        doc = potsherd.read(p)
        sc = doc.codec.to_scene(doc)
        if not sc.meshes:
            continue
        prim = sc.meshes[0].primitives[0]
        pos, nrm = prim.positions.astype(float), prim.normals.astype(float)
        tri = prim.indices.reshape(-1, 3)
        face = np.cross(pos[tri[:, 1]] - pos[tri[:, 0]], pos[tri[:, 2]] - pos[tri[:, 0]])
        area = np.linalg.norm(face, axis=1) > 1e-9
        agree = ((face * nrm[tri].sum(axis=1)).sum(axis=1) > 0)[area]
        assert agree.mean() >= 0.99, (p.name, agree.mean())


def test_skins_bound_to_a_skeleton_option_with_clips():
    part = CORPUS / "data" / "Item" / "mob_kenta_lower.n3cpart"
    if not part.is_file():
        pytest.skip("KO corpus not present")
    doc = potsherd.read(part)
    plain = doc.codec.to_scene(doc, source_path=str(part))
    assert len(plain.nodes) == 1 and not plain.skins and plain.meshes[0].primitives[0].joints is None
    rigged = doc.codec.to_scene(doc, source_path=str(part), skeleton="chr\\mob_kenta.n3joint",
                                animation=str(CORPUS / "data" / "Chr" / "mob_kenta.n3anim"))
    assert len(rigged.skins) == 1 and rigged.nodes[-1].skin == 0
    assert len(rigged.skins[0].joints) == len(rigged.nodes) - 1
    assert len(rigged.animations) == len(potsherd.read(CORPUS / "data/Chr/mob_kenta.n3anim").root["clips"])
    prim = rigged.meshes[0].primitives[0]
    assert prim.joints.shape[1] == 4 and np.allclose(prim.weights.sum(axis=1), 1.0, atol=1e-6)
    # the same vertices as the unskinned export (both are the bind pose)
    assert np.array_equal(prim.positions, plain.meshes[0].primitives[0].positions)
