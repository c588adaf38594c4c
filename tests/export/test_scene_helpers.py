"""Scene helpers the families rely on: exact values."""
from __future__ import annotations

import numpy as np
import pytest

from potsherd.scene import (Scene, Y_DOWN_Z_FORWARD_TO_GLTF, Z_UP_TO_Y_UP, Z_UP_Y_FORWARD_TO_GLTF, compute_normals, decompose_matrix,
                            fan_triangulate, flip_winding, limit_influences, mat4_from_gltf,
                            mat4_to_gltf, matrix_to_quat, mirror_z, mirror_z_matrix,
                            mirror_z_quat, quat_continuous, quat_from_euler, quat_multiply,
                            quat_slerp, quat_to_matrix, rigid_influences, transform_points,
                            trs_to_matrix, weld, z_up_to_y_up)


def test_quaternion_basics():
    qx = quat_from_euler([90, 0, 0], degrees=True)
    assert qx == pytest.approx([np.sqrt(0.5), 0, 0, np.sqrt(0.5)])
    # "XYZ": X applied first; X90 takes +Y to +Z, then Y90 takes +Z to +X
    q = quat_from_euler([90, 90, 0], "XYZ", degrees=True)
    assert quat_to_matrix(q) @ [0, 1, 0] == pytest.approx([1, 0, 0], abs=1e-12)
    # "ZYX" applies Z first: Z (0 here), Y90 then X90: +Y -> +Y -> +Z
    q = quat_from_euler([90, 90, 0], "ZYX", degrees=True)
    assert quat_to_matrix(q) @ [0, 1, 0] == pytest.approx([0, 0, 1], abs=1e-12)
    qy = quat_from_euler([0, 90, 0], degrees=True)
    # a ⊗ b applies b first
    assert quat_multiply(qy, qx) == pytest.approx(quat_from_euler([90, 90, 0], "XYZ",
                                                                  degrees=True))
    assert quat_slerp([0, 0, 0, 1], qx, 0.5) == pytest.approx(
        quat_from_euler([45, 0, 0], degrees=True))
    keys = np.array([[0, 0, 0, 1.0], [0, 0, 0, -1.0], [0, 0, 0.1, -1.0]])
    assert quat_continuous(keys)[:, 3].tolist() == [1, 1, 1]


def test_matrix_round_trips():
    rng = np.random.default_rng(7)
    q = rng.normal(size=(50, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    q[q[:, 3] < 0] *= -1
    assert np.abs(matrix_to_quat(quat_to_matrix(q)) - q).max() < 1e-12
    m = trs_to_matrix([1, 2, 3], q[0], [2, 3, 4])
    t, r, s = decompose_matrix(m)
    assert t.tolist() == [1, 2, 3] and s == pytest.approx([2, 3, 4])
    assert r == pytest.approx(q[0])
    flat = np.arange(16.0)
    assert mat4_from_gltf(flat)[:3, 3].tolist() == [12, 13, 14]
    assert mat4_to_gltf(mat4_from_gltf(flat)).tolist() == flat.tolist()
    assert transform_points(trs_to_matrix([0, 0, 5]), [[1, 1, 1]]).tolist() == [[1, 1, 6]]


def test_axis_conversions():
    assert mirror_z([[1, 2, 3]]).tolist() == [[1, 2, -3]]
    q = quat_from_euler([10, 20, 30], degrees=True)
    # mirroring a rotation: S R S equals the rotation of the mirrored quaternion
    S = np.diag([1.0, 1, -1, 1])
    assert mirror_z_matrix(trs_to_matrix(rotation=q)) == pytest.approx(
        trs_to_matrix(rotation=mirror_z_quat(q)))
    assert mirror_z_matrix(np.eye(4)).tolist() == (S @ S).tolist()
    assert z_up_to_y_up(np.array([[1.0, 2.0, 3.0]])).tolist() == [[1, 3, -2]]
    assert quat_to_matrix(Z_UP_TO_Y_UP) @ [1, 2, 3] == pytest.approx([1, 3, -2])
    assert quat_to_matrix(Z_UP_Y_FORWARD_TO_GLTF) @ [1, 2, 3] == pytest.approx([-1, 3, 2])
    assert quat_to_matrix(Y_DOWN_Z_FORWARD_TO_GLTF) @ [1, 2, 3] == pytest.approx([-1, -2, 3])


def test_geometry_helpers():
    assert flip_winding([0, 1, 2, 3, 4, 5]).tolist() == [0, 2, 1, 3, 5, 4]
    assert fan_triangulate([4, 2, 3]).tolist() == [0, 1, 2, 0, 2, 3, 6, 7, 8]
    assert fan_triangulate([3], corners=[9, 8, 7]).tolist() == [9, 8, 7]
    first, remap = weld(np.array([0, 1, 2, 0, 1]), np.array([[0.5, 0], [1, 0], [1, 1],
                                                             [0.5, 0], [2, 2]]))
    assert first.tolist() == [0, 1, 2, 4] and remap.tolist() == [0, 1, 2, 0, 3]
    n = compute_normals(np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [5, 5, 5]]), [0, 1, 2])
    assert n.tolist() == [[0, 0, 1], [0, 0, 1], [0, 0, 1], [0, 1, 0]]
    j, w, cut = limit_influences(np.array([[1, 2, 3, 4, 5], [7, 0, 0, 0, 0]]),
                                 np.array([[0.1, 0.5, 0.2, 0.1, 0.1], [0, 0, 0, 0, 0]]))
    assert j.tolist() == [[2, 3, 1, 4], [0, 0, 0, 0]] and cut == 1
    assert w[0] == pytest.approx([0.5 / 0.9, 0.2 / 0.9, 0.1 / 0.9, 0.1 / 0.9])
    assert w[1].tolist() == [1, 0, 0, 0]
    j, w = rigid_influences([3, 1])
    assert j.tolist() == [[3, 0, 0, 0], [1, 0, 0, 0]] and w[:, 0].tolist() == [1, 1]


def test_scene_builders():
    s = Scene()
    a = s.add_node(name="a")
    b = s.add_node(name="b", parent=a)
    root = s.wrap(rotation=Z_UP_TO_Y_UP)
    assert s.roots == [root] and s.nodes[root].children == [a]
    assert s.parents() == [root, a, None]
    assert s.nodes[b].name == "b"
