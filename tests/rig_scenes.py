"""A small rig whose rest pose is not its bind pose (shared by the scene and
Knight Online tests of ``scene.bind_pose``)."""
from __future__ import annotations

import numpy as np

from potsherd.scene import Animation, Channel, Mesh, Primitive, Scene, Skin
from potsherd.scene.xform import quat_from_axis_angle, trs_to_matrix


def rest_off_bind_rig(rest_turn: float = 40.0, bind_shift=(0.0, 0.0, 0.0)) -> Scene:
    """hips > arm > hand; bound with the arm straight, resting with the arm
    turned ``rest_turn`` degrees about z; a vertex shared by hips and arm.
    ``bind_shift`` moves the whole bind pose (an axis or unit change above)."""
    sc = Scene(name="rig")
    hips = sc.add_node(name="hips", translation=[0.0, 1.0, 0.0])
    arm = sc.add_node(name="arm", parent=hips, translation=[0.5, 0.0, 0.0],
                      rotation=quat_from_axis_angle([0, 0, 1], np.radians(rest_turn)))
    hand = sc.add_node(name="hand", parent=arm, translation=[0.4, 0.0, 0.0])
    shift = trs_to_matrix(np.asarray(bind_shift, np.float64))
    bind = [shift @ trs_to_matrix([0, 1, 0]), shift @ trs_to_matrix([0.5, 1, 0]),
            shift @ trs_to_matrix([0.9, 1, 0])]
    skin = sc.add_skin(Skin(joints=[hips, arm, hand],
                            inverse_bind_matrices=np.stack([np.linalg.inv(m) for m in bind])))
    raw = np.array([[0, 1, 0], [0.5, 1.2, 0], [0.9, 1, 0], [0.5, 0.8, 0]], np.float64)
    raw = raw @ shift[:3, :3].T + shift[:3, 3]
    prim = Primitive(positions=raw.astype(np.float32),
                     indices=np.array([0, 1, 2, 0, 2, 3], np.uint32),
                     joints=np.array([[0, 1], [0, 1], [2, 1], [1, 0]], np.uint16),
                     weights=np.array([[1, 0], [0.5, 0.5], [0.7, 0.3], [0.6, 0.4]], np.float32))
    sc.add_node(name="body", mesh=sc.add_mesh(Mesh(name="body", primitives=[prim])), skin=skin)
    q = quat_from_axis_angle([0, 0, 1], np.radians(-30.0))
    sc.add_animation(Animation(name="wave", channels=[
        Channel(node=arm, path="rotation", times=np.array([0.0, 1.0], np.float32),
                values=np.array([[0, 0, 0, 1], q], np.float32))]))
    # "hop" leaves the arm to its rest rotation: that must go on playing turned
    sc.add_animation(Animation(name="hop", channels=[
        Channel(node=hips, path="translation", times=np.array([0.0, 0.5], np.float32),
                values=np.array([[0, 1, 0], [0, 2, 0]], np.float32))]))
    return sc
