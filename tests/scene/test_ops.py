"""Scene operations for importers, checked against hand-computed values."""
from __future__ import annotations

import math

import numpy as np
import pytest

from potsherd.scene import (Animation, Channel, Mesh, Node, Primitive, Scene, Skin,
                            quat_from_axis_angle)
from potsherd.scene.ops import (frame_times, sample_channel, sample_node_trs, skin_matrices,
                                split_by_dominant_joint, triangle_sets, weld_primitive,
                                world_matrices)

Q90Z = (0.0, 0.0, math.sqrt(0.5), math.sqrt(0.5))


def chain_scene() -> Scene:
    s = Scene()
    a = s.add_node(name="a", translation=(1, 0, 0), rotation=Q90Z)
    b = s.add_node(name="b", parent=a, translation=(2, 0, 0), scale=(2, 2, 2))
    m = np.eye(4)
    m[:3, 3] = (0, 0, 5)
    s.add_node(name="c", parent=b, matrix=m)
    return s


def test_world_matrices_exact():
    w = world_matrices(chain_scene())
    # b: a's 90 degree turn about Z maps its (2, 0, 0) to (0, 2, 0), plus a's (1, 0, 0)
    assert np.allclose(w[1][:3, 3], [1, 2, 0], atol=1e-12)
    assert np.allclose(w[1][:3, :3] @ [1, 0, 0], [0, 2, 0], atol=1e-12)
    # c: (0, 0, 5) scaled by 2 -> (0, 0, 10) from b's origin
    assert np.allclose(w[2][:3, 3], [1, 2, 10], atol=1e-12)


def test_world_matrices_deep_chain_no_recursion():
    s = Scene()
    parent = None
    for _ in range(5000):
        parent = s.add_node(parent=parent, translation=(0, 1, 0))
    assert world_matrices(s)[-1][1, 3] == 5000


def test_frame_times():
    assert frame_times(1.0, 4).tolist() == [0, 0.25, 0.5, 0.75, 1.0]
    assert frame_times(0.9, 4).tolist() == [0, 0.25, 0.5, 0.75, 1.0]   # covers the end
    assert frame_times(0.0, 30).tolist() == [0.0]
    with pytest.raises(ValueError):
        frame_times(1, 0)


def test_sample_step_linear_slerp():
    times = np.array([0.0, 1.0, 2.0])
    tr = Channel(0, "translation", times, np.array([[0, 0, 0], [2, 0, 0], [2, 4, 0.0]]))
    assert sample_channel(tr, [-1, 0.5, 1.5, 9]).tolist() == [[0, 0, 0], [1, 0, 0], [2, 2, 0],
                                                              [2, 4, 0]]
    step = Channel(0, "translation", times, tr.values, "STEP")
    assert sample_channel(step, [0.99, 1.0, 2.0, 3.0])[:, 0].tolist() == [0, 2, 2, 2]
    q0, q1 = (0, 0, 0, 1.0), quat_from_axis_angle((0, 0, 1), math.pi / 2)
    rot = Channel(0, "rotation", times[:2], np.array([q0, q1]))
    half = sample_channel(rot, [0.5])[0]
    assert np.allclose(half, quat_from_axis_angle((0, 0, 1), math.pi / 4), atol=1e-12)
    # the short way round even when the keys are on opposite hemispheres
    rot2 = Channel(0, "rotation", times[:2], np.array([q0, -np.asarray(q1)]))
    assert np.allclose(np.abs(sample_channel(rot2, [0.5])[0]), np.abs(half), atol=1e-12)


def test_sample_cubicspline_hermite():
    # keys (t=0, v=0, out-tangent 1), (t=2, v=1, in-tangent 0): p(s) with span 2
    vals = np.array([[9.0], [0.0], [1.0],  [0.0], [1.0], [9.0]])
    ch = Channel(0, "translation", np.array([0.0, 2.0]), np.repeat(vals, 3, axis=1),
                 "CUBICSPLINE")
    s = 0.25                                        # t = 0.5
    want = (s**3 - 2 * s**2 + s) * 2 * 1 + (-2 * s**3 + 3 * s**2) * 1
    got = sample_channel(ch, [0.0, 0.5, 2.0])[:, 0]
    assert got[0] == 0 and got[2] == 1 and abs(got[1] - want) < 1e-12


def test_sample_node_trs_holds_rest_values():
    s = chain_scene()
    anim = Animation(channels=[Channel(1, "translation", np.array([0.0, 1.0]),
                                       np.array([[0, 0, 0], [4, 0, 0.0]]))])
    t, r, sc = sample_node_trs(s, anim, 1, [0.5])
    assert t.tolist() == [[2, 0, 0]] and r.tolist() == [[0, 0, 0, 1]] and sc.tolist() == [[2, 2, 2]]
    t, r, sc = sample_node_trs(s, anim, 2, [0.0, 1.0])      # matrix node, not animated
    assert t.tolist() == [[0, 0, 5]] * 2


def quad(z=0.0):
    pos = np.array([[0, 0, z], [1, 0, z], [1, 1, z], [0, 1, z]], np.float32)
    return Primitive(positions=pos, indices=np.array([0, 1, 2, 0, 2, 3], np.uint32),
                     normals=np.tile([0, 0, 1.0], (4, 1)))


def test_triangle_sets_world_transform_and_mirror():
    s = Scene()
    mesh = s.add_mesh(Mesh(primitives=[quad(), Primitive(positions=np.zeros((2, 3)), mode=1)]))
    s.add_node(mesh=mesh, translation=(0, 0, 3), scale=(2, 1, 1))
    s.add_node(mesh=mesh, scale=(-1, 1, 1))
    sets = triangle_sets(s)
    assert len(sets) == 2 and s.warnings == ["2 point/line primitive(s) skipped (triangles only)"]
    a, b = sets
    assert a.positions.tolist() == [[0, 0, 3], [2, 0, 3], [2, 1, 3], [0, 1, 3]]
    assert a.indices.tolist() == [0, 1, 2, 0, 2, 3] and np.allclose(a.normals, [0, 0, 1])
    assert b.positions[1].tolist() == [-1, 0, 0]
    assert b.indices.tolist() == [2, 1, 0, 3, 2, 0]                # winding reversed
    # the mirrored face's geometric normal agrees with its (transformed) normal
    p = b.positions[b.indices[:3]]
    assert np.dot(np.cross(p[1] - p[0], p[2] - p[0]), b.normals[0]) > 0


def test_triangle_sets_skinned_bind_pose():
    s = Scene()
    j0 = s.add_node(name="j0", translation=(0, 0, 0))
    j1 = s.add_node(name="j1", parent=j0, translation=(0, 1, 0), rotation=Q90Z)
    ibm = np.stack([np.eye(4), np.linalg.inv(world_matrices(s)[1])])
    sk = s.add_skin(Skin(joints=[j0, j1], inverse_bind_matrices=ibm))
    p = quad()
    p.joints = np.array([[0, 0], [0, 0], [1, 0], [1, 0]], np.uint8)
    p.weights = np.array([[1, 0], [1, 0], [1, 0], [1, 0]], np.float32)
    mesh = s.add_mesh(Mesh(primitives=[p]))
    s.add_node(mesh=mesh, skin=sk, translation=(100, 0, 0))    # ignored for skinned meshes
    (ts,) = triangle_sets(s)
    assert np.allclose(ts.positions, p.positions, atol=1e-12) and ts.skin == sk
    # bend j1 by another 90 degrees: its vertices rotate about (0, 1, 0)
    s.nodes[j1].rotation = (0.0, 0.0, 1.0, 0.0)
    (ts,) = triangle_sets(s)
    assert np.allclose(ts.positions[2], [0, 2, 0], atol=1e-12)   # (1,1,0) turned 90 about (0,1,0)
    assert np.allclose(ts.positions[0], [0, 0, 0], atol=1e-12)   # joint 0 vertices stay
    assert np.allclose(skin_matrices(s, sk)[0], np.eye(4))


def _unweighted_scene(*, node_translation=(100, 0, 0)) -> tuple:
    """A quad skinned to one joint, its vertex 3 with all-zero weights; the
    mesh node moved (ignored for the weighted vertices, as glTF specifies)."""
    s = Scene()
    j0 = s.add_node(name="j0", translation=(0, 5, 0))
    ibm = np.linalg.inv(world_matrices(s))
    sk = s.add_skin(Skin(joints=[j0], inverse_bind_matrices=ibm))
    p = quad()
    p.joints = np.zeros((4, 4), np.uint8)
    p.weights = np.array([[1, 0, 0, 0]] * 3 + [[0, 0, 0, 0]], np.float32)
    mesh = s.add_mesh(Mesh(primitives=[p]))
    s.add_node(mesh=mesh, skin=sk, translation=node_translation)
    return s, j0, p


def test_all_zero_weights_stay_rigid_on_the_mesh_node():
    """glTF's formula makes an all-zero-weight vertex's matrix the zero matrix
    (singular: the normal's inverse transpose used to raise LinAlgError); the
    vertex stays where the mesh has it instead, on its mesh node."""
    s, j0, p = _unweighted_scene()
    (ts,) = triangle_sets(s)
    assert ts.positions.tolist() == [[0, 0, 0], [1, 0, 0], [1, 1, 0], [100, 1, 0]]
    assert np.allclose(ts.normals, [0, 0, 1])
    assert s.warnings == ["1 skinned vertices have no skin weight (all zero); kept rigid on "
                          "their mesh node, at their bind position"]
    triangle_sets(s)
    assert len(s.warnings) == 1                                 # said once
    # posed: the joint moves its vertices, not the unweighted one
    s.nodes[j0].translation = (0, 5, 2)
    (ts,) = triangle_sets(s)
    assert ts.positions.tolist() == [[0, 0, 2], [1, 0, 2], [1, 1, 2], [100, 1, 0]]
    # the renderer skins the same way (glTF written by hand: potsherd's writer
    # binds weightless vertices to joint 0, as a valid glTF must)
    from potsherd.export import render as rd
    from potsherd.scene.gltf_read import read_gltf
    s, _, p = _unweighted_scene()
    (ts,) = triangle_sets(s)
    path = _write_raw_skinned_gltf(p, s.nodes[j0].translation, (100, 0, 0))
    (t,) = rd.scene_triangles(rd.Gltf(path), None, 0.0)
    assert t["pos"].reshape(-1, 3).tolist() == ts.positions[ts.indices].tolist()
    assert np.isfinite(t["nrm"]).all()
    back = read_gltf(path)
    (tb,) = triangle_sets(back)
    assert tb.positions.tolist() == ts.positions.tolist()


def _write_raw_skinned_gltf(p, joint_translation, node_translation) -> str:
    import base64
    import json
    import os
    import tempfile
    ibm = np.eye(4, dtype=np.float32)
    ibm[:3, 3] = -np.asarray(joint_translation, np.float32)
    blobs = [np.asarray(p.positions, np.float32).tobytes(),
             np.asarray(p.normals, np.float32).tobytes(),
             np.asarray(p.joints, np.uint8).tobytes(), np.asarray(p.weights, np.float32).tobytes(),
             np.asarray(p.indices, np.uint16).tobytes() + b"\0\0",
             ibm.T.reshape(-1).tobytes()]
    views, offset = [], 0
    for b in blobs:
        views.append({"buffer": 0, "byteOffset": offset, "byteLength": len(b)})
        offset += len(b)
    acc = [("VEC3", 5126, 4), ("VEC3", 5126, 4), ("VEC4", 5121, 4), ("VEC4", 5126, 4),
           ("SCALAR", 5123, len(p.indices)), ("MAT4", 5126, 1)]
    accessors = [{"bufferView": i, "type": t, "componentType": c, "count": n}
                 for i, (t, c, n) in enumerate(acc)]
    accessors[0].update(min=[0, 0, 0], max=[1, 1, 0])
    doc = {"asset": {"version": "2.0"}, "scene": 0, "scenes": [{"nodes": [0, 1]}],
           "nodes": [{"name": "j0", "translation": list(map(float, joint_translation))},
                     {"mesh": 0, "skin": 0, "translation": list(map(float, node_translation))}],
           "skins": [{"joints": [0], "inverseBindMatrices": 5}],
           "meshes": [{"primitives": [{"attributes": {"POSITION": 0, "NORMAL": 1, "JOINTS_0": 2,
                                                      "WEIGHTS_0": 3}, "indices": 4}]}],
           "accessors": accessors, "bufferViews": views,
           "buffers": [{"byteLength": offset, "uri": "data:application/octet-stream;base64,"
                        + base64.b64encode(b"".join(blobs)).decode()}]}
    path = os.path.join(tempfile.mkdtemp(), "zero.gltf")
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def test_all_zero_weights_negative_control():
    """The formula as written (zero matrix) puts the vertex at the origin and
    cannot transform its normal: what the old code did."""
    s, j0, p = _unweighted_scene()
    blend = np.einsum("vk,vkij->vij", np.asarray(p.weights, float),
                      skin_matrices(s, 0)[np.asarray(p.joints, np.int64)])
    assert blend[3].tolist() == np.zeros((4, 4)).tolist()
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.inv(blend[:, :3, :3])
    (ts,) = triangle_sets(s)
    assert ts.positions[3].tolist() != [0, 0, 0]


def test_triangle_sets_apply_default_morph_weights():
    """A shape key left at 0.5 in Blender is exported as a default weight of 0.5:
    the rest shape a viewer draws (and a format without morphs must keep) is
    base + 0.5 * delta.  The node's weights override the mesh's; all-zero
    weights leave the base (the control)."""
    from potsherd.scene import MorphTarget
    s = Scene()
    p = quad()
    p.normals = np.tile([0.0, 0.0, 1.0], (4, 1))
    up = np.zeros((4, 3))
    up[2:, 1] = 2.0
    tilt = np.zeros((4, 3))
    tilt[:, 0] = 0.5
    p.targets = [MorphTarget("up", positions=up, normals=np.tile([0.0, 0.2, 0.0], (4, 1))),
                 MorphTarget("tilt", positions=tilt)]
    mesh = s.add_mesh(Mesh(primitives=[p], weights=[0.5, 0.0]))
    s.add_node(mesh=mesh)
    s.add_node(mesh=mesh, extras={"morphWeights": [0.0, 1.0]})
    s.add_node(mesh=mesh, extras={"morphWeights": [0.0, 0.0]})
    a, b, c = triangle_sets(s)
    assert a.positions.tolist() == [[0, 0, 0], [1, 0, 0], [1, 2, 0], [0, 2, 0]]
    assert np.allclose(a.normals, np.tile([0, 0.1, 1], (4, 1)) / np.hypot(0.1, 1))
    assert b.positions.tolist() == [[0.5, 0, 0], [1.5, 0, 0], [1.5, 1, 0], [0.5, 1, 0]]
    assert c.positions.tolist() == p.positions.tolist()
    assert p.positions[2].tolist() == [1, 1, 0]                # the primitive itself unchanged


def test_split_by_dominant_joint():
    pos = np.arange(18, dtype=np.float32).reshape(6, 3)
    p = Primitive(positions=pos, indices=np.array([0, 1, 2, 2, 3, 4, 3, 4, 5], np.uint32),
                  joints=np.array([[0, 1], [0, 1], [1, 0], [1, 2], [2, 1], [2, 0]], np.uint8),
                  weights=np.array([[.6, .4], [.5, .5], [.9, .1], [.7, .3], [.8, .2], [1, 0]],
                                   np.float32))
    parts = split_by_dominant_joint(p)
    # dominant: v0 0, v1 0 (tie -> lower joint), v2 1, v3 1, v4 2, v5 2
    assert sorted(parts) == [0, 1, 2]
    assert parts[0].positions.tolist() == pos[[0, 1, 2]].tolist()
    assert parts[0].indices.tolist() == [0, 1, 2]
    assert parts[1].positions.tolist() == pos[[2, 3, 4]].tolist()     # v2, v3 own it
    assert parts[2].indices.tolist() == [0, 1, 2] and parts[2].joints.tolist() == [[1, 2], [2, 1],
                                                                                  [2, 0]]


def test_weld_primitive():
    pos = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 0, 0], [1, 1, 0], [0, 1, 0]], np.float32)
    uv = np.array([[0, 0], [1, 0], [1, 1], [0, 0], [1, 1], [0, 1]], np.float32)
    p = Primitive(positions=pos, uvs=[uv])
    w = weld_primitive(p)
    assert w.positions.tolist() == pos[[0, 1, 2, 5]].tolist()
    assert w.indices.tolist() == [0, 1, 2, 0, 2, 3]
    # a differing UV keeps the duplicate (negative control)
    uv2 = uv.copy()
    uv2[3] = (0.5, 0)
    assert len(weld_primitive(Primitive(positions=pos, uvs=[uv2])).positions) == 5


def test_faces_apart_gives_repeated_faces_their_own_vertices(tmp_path):
    """A double-sided pair sharing vertices, an exact repeat and a face with a
    repeated vertex: Blender keeps one face per vertex set, so each repeat gets
    its own copies; the first face and every drawn corner are unchanged."""
    from potsherd.export.gltf import write_glb
    from potsherd.scene.gltf_read import read_gltf
    from potsherd.scene.ops import faces_apart
    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]], np.float32)
    uv = pos[:, :2] * 0.5
    w = np.array([[1, 0], [0.5, 0.5], [0, 1], [1, 0]], np.float32)
    j = np.array([[0, 1]] * 4, np.uint16)
    idx = np.array([0, 1, 2, 0, 2, 1, 1, 3, 2, 0, 1, 2, 0, 0, 1], np.uint32)
    p = Primitive(positions=pos, uvs=[uv], joints=j, weights=w, indices=idx)
    q = faces_apart(p)
    assert len(q.positions) == 4 + 9
    t = q.indices.reshape(-1, 3)
    assert t[:1].tolist() == [[0, 1, 2]] and t[2].tolist() == [1, 3, 2]   # firsts unchanged
    assert t[1].tolist() == [4, 5, 6] and t[3].tolist() == [7, 8, 9] and t[4].tolist() == [10, 11, 12]
    for a, b in ((p.positions, q.positions), (uv, q.uvs[0]), (w, q.weights), (j, q.joints)):
        assert np.array_equal(np.asarray(a)[idx], np.asarray(b)[q.indices])   # same corners
    # every face now has a vertex set of its own
    assert len(np.unique(np.sort(t, axis=1), axis=0)) == len(t)
    # negative control: a mesh without repeats is returned as it is
    plain = Primitive(positions=pos, indices=np.array([0, 1, 2, 1, 3, 2], np.uint32))
    assert faces_apart(plain) is plain
    # the glTF writer applies it
    s = Scene()
    s.add_node(name="m", mesh=s.add_mesh(Mesh(name="m", primitives=[
        Primitive(positions=pos, indices=idx)])))
    write_glb(s, tmp_path / "m.glb")
    back = read_gltf(tmp_path / "m.glb").meshes[0].primitives[0]
    assert len(back.positions) == 13
    assert np.array_equal(back.positions[back.indices], pos[idx])


def _turned_rig():
    """A two-joint animated chain, a rigid mesh under the second joint and a
    skinned mesh bound at rest."""
    s = Scene()
    a = s.add_node(name="a", translation=(0, 1, 0), rotation=Q90Z)
    b = s.add_node(name="b", parent=a, translation=(0, 2, 0), scale=(2, 2, 2))
    s.add_node(name="sword", parent=b, translation=(0.5, 0, 0),
               mesh=s.add_mesh(Mesh(name="sword", primitives=[Primitive(
                   positions=np.eye(3, dtype=np.float32), indices=np.array([0, 1, 2], np.uint32))])))
    w = world_matrices(s)
    sk = s.add_skin(Skin(joints=[a, b], inverse_bind_matrices=np.linalg.inv(w[[a, b]])))
    s.add_node(name="body", skin=sk, mesh=s.add_mesh(Mesh(name="body", primitives=[Primitive(
        positions=np.eye(3, dtype=np.float32), indices=np.array([0, 1, 2], np.uint32),
        joints=np.array([[0, 1]] * 3, np.uint16), weights=np.full((3, 2), 0.5, np.float32))])))
    an = Animation(name="swing")
    t = np.array([0.0, 0.5, 1.0], np.float32)
    an.channels.append(Channel(a, "rotation", t, quat_from_axis_angle((1, 0, 0), t[:, None] * 1.5)
                               .reshape(-1, 4)))
    an.channels.append(Channel(b, "translation", t, np.array([[0, 2, 0], [0, 3, 0], [1, 2, 0]],
                                                               np.float32)))
    an.channels.append(Channel(b, "rotation", t, quat_from_axis_angle((0, 1, 0), t[:, None])
                               .reshape(-1, 4)))
    s.add_animation(an)
    return s


def _poses(s, times=(0.0, 0.3, 0.75, 1.0)):
    """World matrices of every node and the skinning matrices, at ``times``."""
    out = []
    for tm in times:
        local = np.stack([np.eye(4)] * len(s.nodes))
        for i in range(len(s.nodes)):
            from potsherd.scene.xform import trs_to_matrix
            tr, ro, sc = sample_node_trs(s, s.animations[0], i, [tm])
            local[i] = trs_to_matrix(tr[0], ro[0], sc[0])
        w = world_matrices(s, local)
        out.append((w[[2]], w[s.skins[0].joints] @ s.skins[0].inverse_bind_matrices))
    return out


def test_reorient_joints_keeps_every_pose_and_undoes_blender_turns():
    import copy
    from potsherd.scene.reorient import frames_like, reorient_joints
    orig = _turned_rig()
    turns = {0: quat_to_matrix_(quat_from_axis_angle((1, 1, 0), 2.1)),
             1: quat_to_matrix_(quat_from_axis_angle((0, 0, 1), -0.7))}
    blender = copy.deepcopy(orig)
    # what Blender does: every joint frame turned by a constant rotation
    assert reorient_joints(blender, {n: r.T for n, r in turns.items()})
    assert not np.allclose(blender.nodes[1].rotation, [0, 0, 0, 1], atol=1e-3)   # (b: unturned)
    for (wa, ka), (wb, kb) in zip(_poses(orig), _poses(blender)):
        assert np.allclose(wa, wb, atol=1e-9) and np.allclose(ka, kb, atol=1e-9)
    found = frames_like(blender, orig, [0, 1])
    assert sorted(found) == [0, 1]
    assert np.allclose(found[0], turns[0], atol=1e-9)      # W_blender = W · R
    assert reorient_joints(blender, found)
    for i in (0, 1):
        assert np.allclose(blender.nodes[i].translation, orig.nodes[i].translation, atol=1e-9)
        r0 = orig.nodes[i].rotation if orig.nodes[i].rotation is not None else [0, 0, 0, 1]
        assert abs(abs(np.dot(blender.nodes[i].rotation, r0)) - 1) < 1e-12
    for ca, cb in zip(orig.animations[0].channels, blender.animations[0].channels):
        assert np.allclose(np.abs(np.asarray(ca.values) - np.asarray(cb.values)).max(), 0,
                           atol=1e-6)
    assert frames_like(blender, orig, [0, 1]) == {}          # nothing left to turn


def test_reorient_joints_refuses_non_uniform_scale():
    import copy
    from potsherd.scene.reorient import reorient_joints
    s = _turned_rig()
    s.nodes[1].scale = (1, 2, 1)
    before = copy.deepcopy(s)
    assert not reorient_joints(s, {1: quat_to_matrix_(quat_from_axis_angle((0, 0, 1), 0.5))})
    assert np.array_equal(s.nodes[1].rotation, before.nodes[1].rotation)
    assert not reorient_joints(s, {})


def quat_to_matrix_(q):
    from potsherd.scene.xform import quat_to_matrix
    return quat_to_matrix(np.asarray(q).reshape(4))


def test_first_labels_are_np_unique_in_first_appearance_order():
    """A table of the keys gives each distinct key's first position (ascending)
    and each key's rank among them, as np.unique's first indices ranked."""
    from potsherd.scene.geometry import first_labels
    key = np.random.default_rng(5).integers(0, 60, 500)
    reps, label = first_labels(key)
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    assert np.array_equal(reps, np.sort(first))
    rank = np.argsort(np.argsort(first))          # each distinct key's place by first appearance
    assert np.array_equal(label, rank[inverse.reshape(-1)])
    assert np.array_equal(key[reps][label], key) and len(reps) < len(key)
    none, nothing = first_labels(np.zeros(0, np.int64))
    assert none.shape == (0,) and nothing.shape == (0,)


def test_lexicographic_labels_are_np_unique_rows():
    """One lexsort gives np.unique(axis=0)'s distinct rows and inverse, -0.0
    equal to 0.0 (the control: the rows do repeat, so labels are shared)."""
    from potsherd.scene.geometry import lexicographic_labels
    rows = np.random.default_rng(4).integers(-2, 3, (400, 3)).astype(float)
    rows[::7] *= -0.0
    distinct, label = lexicographic_labels(rows)
    expect, inverse = np.unique(rows, axis=0, return_inverse=True)
    assert np.array_equal(distinct, expect)
    assert np.array_equal(label, inverse.reshape(-1))
    assert len(distinct) < len(rows)
    empty, none = lexicographic_labels(np.zeros((0, 3)))
    assert empty.shape == (0, 3) and none.shape == (0,)


def test_det3_is_the_determinant_and_its_sign_reverses_mirrored_skins():
    from potsherd.scene.ops import det3
    m = np.random.default_rng(4).normal(size=(500, 3, 3))
    assert np.allclose(det3(m), np.linalg.det(m), rtol=1e-12, atol=1e-12)
    mirror = m * np.array([-1.0, 1.0, 1.0])[:, None]            # one row negated
    assert np.array_equal(np.sign(det3(mirror)), -np.sign(det3(m)))
    assert det3(np.eye(3)) == 1.0 and det3(np.zeros((3, 3))) == 0.0


def test_channels_sampled_together_are_each_sampled_alone():
    """``sample_channels`` groups channels of equal keys and kind into one
    array operation: every channel gets its own values back, in its place,
    whatever the mix (paths, interpolations, shared and other keys)."""
    from potsherd.scene.ops import sample_channels
    rng = np.random.default_rng(7)
    keys = np.array([0.0, 0.5, 1.25, 2.0])
    chans = []
    for i in range(24):
        path = ("translation", "rotation", "scale")[i % 3]
        interp = ("LINEAR", "STEP", "CUBICSPLINE")[(i // 3) % 3]
        t = keys if i % 5 else np.array([0.0, 1.0 + i / 10])
        width = 4 if path == "rotation" else 3
        vals = rng.normal(size=(len(t) * (3 if interp == "CUBICSPLINE" else 1), width))
        chans.append(Channel(i, path, t, vals, interp))
    chans.append(Channel(99, "rotation", np.array([0.5]), np.array([[0, 0, 2.0, 0]]), "LINEAR"))
    times = np.linspace(-0.5, 2.5, 31)
    together = sample_channels(chans, times)
    for ch, got in zip(chans, together):
        alone = sample_channels([ch], times)[0]
        assert got.shape == alone.shape and np.array_equal(got, alone)
    assert np.array_equal(together[-1], np.tile([0, 0, 1.0, 0], (31, 1)))   # one key, normalised
    # control: the groups are really shared (more channels than groups)
    assert not np.array_equal(together[0], together[3])
