"""Small scenes built in Python for the glTF writer tests (no files from outside)."""
from __future__ import annotations

import io

import numpy as np
from PIL import Image as PILImage

from potsherd.scene import (Animation, Channel, Image, Material, Mesh, MorphTarget, Node,
                            Primitive, Scene, Skin, TextureRef, quat_from_axis_angle,
                            trs_to_matrix)

# unit cube corners, 24 vertices (4 per face) so normals/UVs are per face
_FACES = [  # normal, u axis, v axis
    ((1, 0, 0), (0, 0, -1), (0, -1, 0)), ((-1, 0, 0), (0, 0, 1), (0, -1, 0)),
    ((0, 1, 0), (1, 0, 0), (0, 0, 1)), ((0, -1, 0), (1, 0, 0), (0, 0, -1)),
    ((0, 0, 1), (1, 0, 0), (0, -1, 0)), ((0, 0, -1), (-1, 0, 0), (0, -1, 0)),
]


def cube(size: float = 1.0, center=(0.0, 0.0, 0.0)) -> tuple:
    """(positions (24,3), normals (24,3), uvs (24,2), indices (36,)) CCW outward."""
    pos, nrm, uv, idx = [], [], [], []
    h = size / 2
    for f, (n, u, v) in enumerate(_FACES):
        n, u, v = (np.array(x, float) for x in (n, u, v))
        for su, sv, tu, tv in ((-1, -1, 0, 0), (1, -1, 1, 0), (1, 1, 1, 1), (-1, 1, 0, 1)):
            pos.append(np.array(center) + h * (n + su * u + sv * v))
            nrm.append(n)
            uv.append((tu, tv))
        b = 4 * f
        # (u, v, n) is right-handed with v pointing "down" in texture space; pick
        # the winding whose geometric normal matches n
        tri = [b, b + 1, b + 2, b, b + 2, b + 3]
        p = np.array(pos[b:b + 3])
        if np.dot(np.cross(p[1] - p[0], p[2] - p[0]), n) < 0:
            tri = [b, b + 2, b + 1, b, b + 3, b + 2]
        idx += tri
    return (np.array(pos, np.float32), np.array(nrm, np.float32), np.array(uv, np.float32),
            np.array(idx, np.uint32))


def checker_png(n: int = 8, px: int = 8) -> bytes:
    a = (np.indices((n * px, n * px)) // px).sum(axis=0) % 2
    rgb = np.zeros((n * px, n * px, 3), np.uint8)
    rgb[a == 0] = (230, 60, 40)
    rgb[a == 1] = (250, 240, 200)
    rgb[: px, : px] = (20, 20, 200)          # top-left cell blue: shows the UV origin
    buf = io.BytesIO()
    PILImage.fromarray(rgb).save(buf, format="PNG")
    return buf.getvalue()


def skinned_cube_scene() -> Scene:
    """A 2-joint skinned box (1 x 2 x 1, lower half on joint 0, upper on joint 1),
    the upper joint bending 90 degrees about Z over 2 s, the root rising 0.5 m."""
    s = Scene(name="skinned")
    pos, nrm, uv, idx = cube(1.0, (0, 0.5, 0))
    pos2, nrm2, uv2, idx2 = cube(1.0, (0, 1.5, 0))
    positions = np.concatenate([pos, pos2])
    normals = np.concatenate([nrm, nrm2])
    indices = np.concatenate([idx, idx2 + 24])
    joints = np.zeros((48, 4), np.uint16)
    weights = np.zeros((48, 4), np.float32)
    joints[24:, 0] = 1
    weights[:, 0] = 1.0
    # blend the touching faces 50/50 (exercises multi-influence weights)
    seam = np.isclose(positions[:, 1], 1.0)
    joints[seam, 1] = np.where(joints[seam, 0] == 1, 0, 1)
    weights[seam, :2] = 0.5
    mat = s.add_material(Material(name="orange", base_color=(1.0, 0.5, 0.1, 1.0)))
    mesh = s.add_mesh(Mesh(name="body", primitives=[Primitive(
        positions=positions, normals=normals, indices=indices, joints=joints, weights=weights,
        material=mat)]))
    arm = s.add_node(name="armature")
    j0 = s.add_node(name="hip", parent=arm)
    j1 = s.add_node(name="chest", parent=j0, translation=(0.0, 1.0, 0.0))
    ibm = np.stack([np.linalg.inv(trs_to_matrix((0, 0, 0))),
                    np.linalg.inv(trs_to_matrix((0, 1, 0)))])
    sk = s.add_skin(Skin(joints=[j0, j1], inverse_bind_matrices=ibm, skeleton=j0, name="rig"))
    s.add_node(name="body", mesh=mesh, skin=sk)
    t = np.linspace(0.0, 2.0, 5)
    rot = quat_from_axis_angle(np.tile([0.0, 0.0, 1.0], (5, 1)), np.linspace(0, np.pi / 2, 5))
    s.add_animation(Animation(name="bend", channels=[
        Channel(j1, "rotation", t, rot),
        Channel(j0, "translation", np.array([0.0, 1.0]), np.array([[0, 0, 0], [0, 0.5, 0]])),
        Channel(j0, "scale", np.array([0.0, 1.0]), np.ones((2, 3)), "STEP"),
    ], extras={"fps": 30}))
    return s


def rigid_spanning_scene(span: bool = True) -> Scene:
    """:func:`skinned_cube_scene` with every vertex on one joint; with ``span``
    the upper box's bottom corners are on the lower joint, so its 8 side
    triangles have corners on both joints (without: none has)."""
    s = skinned_cube_scene()
    p = s.meshes[0].primitives[0]
    p.weights = np.zeros_like(p.weights)
    p.weights[:, 0] = 1.0
    if span:
        p.joints[(np.arange(len(p.positions)) >= 24) & np.isclose(p.positions[:, 1], 1.0), 0] = 0
    return s


def morph_scene() -> Scene:
    """A quad with 2 morph targets and a STEP weights animation (one-hot frames)."""
    s = Scene(name="morph")
    pos = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], np.float32)
    t1 = np.zeros((4, 3), np.float32)
    t1[2:, 1] = 1.0                     # stretch up
    t2 = np.zeros((4, 3), np.float32)
    t2[1:3, 0] = -0.5                   # squeeze right side
    mesh = s.add_mesh(Mesh(name="quad", primitives=[Primitive(
        positions=pos, normals=np.tile([0, 0, 1], (4, 1)), indices=np.array([0, 1, 2, 0, 2, 3]),
        targets=[MorphTarget("up", positions=t1), MorphTarget("squeeze", positions=t2)])],
        weights=[0.0, 0.0], target_names=["up", "squeeze"]))
    n = s.add_node(name="quad", mesh=mesh)
    s.add_animation(Animation(name="frames", channels=[Channel(
        n, "weights", np.array([0.0, 0.5, 1.0]),
        np.array([[0, 0], [1, 0], [0, 1]], np.float32), "STEP")]))
    return s


def textured_quad_scene(external_uri: str | None = None) -> Scene:
    """A 2 x 2 textured double-sided quad facing +Z with vertex colours and a
    blend material; the texture's top-left (blue) cell lands at UV (0, 0)."""
    s = Scene(name="textured")
    img = s.add_image(Image(name="checker", data=checker_png()))
    mat = s.add_material(Material(name="checker", base_color_texture=TextureRef(img),
                                  double_sided=True, alpha_mode="BLEND",
                                  extras={"additive": False}))
    pos = np.array([[-1, -1, 0], [1, -1, 0], [1, 1, 0], [-1, 1, 0]], np.float32)
    uv = np.array([[0, 1], [1, 1], [1, 0], [0, 0]], np.float32)
    col = np.array([[255, 255, 255, 255]] * 4, np.uint8)
    mesh = s.add_mesh(Mesh(name="quad", primitives=[Primitive(
        positions=pos, normals=np.tile([0.0, 0.0, 1.0], (4, 1)), uvs=[uv], colors=col,
        indices=np.array([0, 1, 2, 0, 2, 3], np.uint8), material=mat)]))
    s.add_node(Node(name="quad", mesh=mesh, extras={"note": "top-left cell is blue"}))
    return s
