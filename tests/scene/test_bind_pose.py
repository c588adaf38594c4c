"""The rest pose moved onto the bind pose (scene.bind_pose): every clip plays
the poses it played, every skin deforms as it did, and at rest the skins sit
at their bind pose (taken as a whole to where the top joint rested)."""
from __future__ import annotations

import copy

import numpy as np
import pytest

from potsherd.scene import Scene, Skin
from potsherd.scene.bind_pose import rest_at_bind
from potsherd.scene.ops import sample_node_trs, skin_blend, skin_matrices, world_matrices
from potsherd.scene.xform import quat_from_axis_angle, trs_to_matrix
from rig_scenes import rest_off_bind_rig as _rig


def _posed(sc: Scene, animation, t: float) -> tuple:
    """(world matrices of every node, skinned vertices) at time ``t``."""
    local = np.stack([trs_to_matrix(*[v[0] for v in sample_node_trs(sc, animation, n, [t])])
                      for n in range(len(sc.nodes))])
    world = world_matrices(sc, local)
    body = next(i for i, n in enumerate(sc.nodes) if n.skin is not None)
    p = sc.meshes[sc.nodes[body].mesh].primitives[0]
    blend, _ = skin_blend(p.joints, p.weights, skin_matrices(sc, 0, world), world[body])
    pos = np.einsum("vij,vj->vi", blend[:, :3, :3], p.positions.astype(np.float64)) + blend[:, :3, 3]
    return world, pos


@pytest.mark.parametrize("shift", [(0.0, 0.0, 0.0), (3.0, -2.0, 0.5)])
def test_every_clip_plays_the_same_poses_and_the_skin_rests_at_its_bind_pose(shift):
    before = _rig(bind_shift=shift)
    after = copy.deepcopy(before)
    changed = rest_at_bind(after)
    assert [after.nodes[n].name for n in changed] == ["arm"]
    for a_old, a_new in zip(before.animations, after.animations):
        for t in (0.0, 0.25, 0.5, 0.8, 1.0):
            w0, p0 = _posed(before, a_old, t)
            w1, p1 = _posed(after, a_new, t)
            assert np.allclose(w0, w1, atol=1e-6) and np.allclose(p0, p1, atol=1e-6)
    # at rest the skin matrices are one transform: the bind pose, lifted to the hips' rest
    mats = skin_matrices(after, 0)
    assert np.allclose(mats, mats[0], atol=1e-6)
    assert np.allclose(mats[0], trs_to_matrix(-np.asarray(shift)), atol=1e-6)
    # negative control: before, rest and bind differ at the arm (so vertices it shares drift)
    assert not np.allclose(skin_matrices(before, 0)[1], skin_matrices(before, 0)[0], atol=1e-3)
    # "hop" now holds the arm's old rest rotation in a one-key channel
    hop = after.animations[1]
    arm = changed[0]
    held = [c for c in hop.channels if c.node == arm and c.path == "rotation"]
    assert len(held) == 1 and np.allclose(held[0].values[0], before.nodes[arm].rotation)


def test_nothing_changes_when_rest_is_bind_or_nothing_animates():
    same = _rig(rest_turn=0.0)
    kept = copy.deepcopy(same)
    assert rest_at_bind(same) == [] and len(same.animations[1].channels) == 1
    assert np.allclose(same.nodes[1].rotation, kept.nodes[1].rotation)
    still = _rig()
    still.animations = []
    assert rest_at_bind(still) == []          # (the rest pose is all a still scene shows)
    # a whole bind pose shifted against the rest (an axis or unit change) is no change
    shifted = _rig(rest_turn=0.0, bind_shift=(1.0, 2.0, 3.0))
    assert rest_at_bind(shifted) == []


def test_a_bind_pose_that_shears_under_its_parent_leaves_the_scene_as_it_was():
    sc = _rig()
    ibm = np.array(sc.skins[0].inverse_bind_matrices)
    turn = trs_to_matrix(None, quat_from_axis_angle([0, 0, 1], np.radians(30.0)))
    # the arm bound stretched along y, the hand bound turned in it: a shear under the arm
    ibm[1] = np.linalg.inv(trs_to_matrix([0.5, 1, 0], None, [1.0, 3.0, 1.0]))
    ibm[2] = np.linalg.inv(trs_to_matrix([0.9, 1, 0]) @ turn)
    sc.skins[0].inverse_bind_matrices = ibm
    kept = copy.deepcopy(sc)
    assert rest_at_bind(sc) == []
    assert any("shears" in w for w in sc.warnings)
    assert [len(a.channels) for a in sc.animations] == [1, 1]
    assert all(np.allclose(a.rotation if a.rotation is not None else 0,
                           b.rotation if b.rotation is not None else 0)
               for a, b in zip(sc.nodes, kept.nodes))


def test_a_second_skin_binding_a_joint_elsewhere_is_named():
    sc = _rig()
    other = np.array(sc.skins[0].inverse_bind_matrices)
    other[1] = np.linalg.inv(trs_to_matrix([0.5, 1.5, 0]))
    sc.add_skin(Skin(joints=list(sc.skins[0].joints), inverse_bind_matrices=other))
    assert rest_at_bind(sc) == [1]
    assert any("another pose than an earlier skin" in w for w in sc.warnings)
