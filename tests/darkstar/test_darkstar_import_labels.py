"""Corner labels of the shape importer's objects (``ObjectM.labels``): corners
of one label are alike (frames, normal, uv), and the mesh blocks welded from
the labels' first corners are those welded from every corner."""
from __future__ import annotations

import copy

import numpy as np

from potsherd.formats.darkstar.importing.meshes import mesh_blocks
from potsherd.formats.darkstar.model import shape_model
from potsherd.scene import Channel, Animation, Material, Mesh, Primitive, Scene, Skin


def _tube(joints: int = 4, rings_per_joint: int = 3, segments: int = 7,
          mirror: int | None = None) -> Scene:
    """A tube on a joint chain, each ring blended between two joints (triangles
    spanning joints), UVs with a seam, a clip; ``mirror``: that joint's bind
    matrix mirrors x."""
    rings = joints * rings_per_joint
    y = np.linspace(0, joints * 0.1, rings + 1)
    ang = np.linspace(0, 2 * np.pi, segments, endpoint=False)
    pos = np.stack([np.tile(0.05 * np.cos(ang), rings + 1), np.repeat(y, segments),
                    np.tile(0.05 * np.sin(ang), rings + 1)], 1)
    nrm = np.stack([np.cos(np.tile(ang, rings + 1)), np.zeros(len(pos)),
                    np.sin(np.tile(ang, rings + 1))], 1)
    uv = np.stack([np.tile(ang / (2 * np.pi), rings + 1), np.repeat(y, segments)], 1)
    a = (np.arange(rings)[:, None] * segments + np.arange(segments)[None]).ravel()
    b = (np.arange(rings)[:, None] * segments + (np.arange(segments)[None] + 1) % segments).ravel()
    tris = np.concatenate([np.stack([a, b + segments, b], 1), np.stack([a, a + segments, b + segments], 1)])
    seg = np.minimum(pos[:, 1] / 0.1, joints - 1e-6)
    j0 = np.floor(seg).astype(int)
    f = seg - j0
    jw = np.zeros((len(pos), 4), np.uint16)
    ww = np.zeros((len(pos), 4), np.float32)
    jw[:, 0], jw[:, 1] = j0, np.minimum(j0 + 1, joints - 1)
    ww[:, 0], ww[:, 1] = 1 - 0.6 * f, 0.6 * f
    s = Scene(name="tube")
    s.add_material(Material(name="m"))
    m = s.add_mesh(Mesh(name="tube", primitives=[Primitive(
        positions=pos.astype(np.float32), normals=nrm.astype(np.float32), uvs=[uv.astype(np.float32)],
        indices=tris.reshape(-1).astype(np.uint32), joints=jw, weights=ww, material=0)]))
    chain, parent = [], None
    for k in range(joints):
        parent = s.add_node(name=f"bone{k}", translation=(0.0, 0.1 if k else 0.0, 0.0), parent=parent)
        chain.append(parent)
    ibm = np.tile(np.eye(4), (joints, 1, 1))
    ibm[:, 1, 3] = -0.1 * np.arange(joints)
    if mirror is not None:
        ibm[mirror, 0, 0] = -1.0
    sk = s.add_skin(Skin(joints=chain, inverse_bind_matrices=ibm))
    s.add_node(name="tube", mesh=m, skin=sk)
    t = np.linspace(0, 1, 5).astype(np.float32)
    s.add_animation(Animation(name="wave", channels=[
        Channel(j, "rotation", t, np.stack([np.zeros(5), np.zeros(5), np.sin(0.1 * t + k),
                                            np.cos(0.1 * t + k)], 1).astype(np.float32))
        for k, j in enumerate(chain)]))
    return s


def _alike(o) -> None:
    lab = o.labels
    assert lab is not None and len(lab) == o.frames.shape[1]
    order = np.argsort(lab, kind="stable")
    same = lab[order][1:] == lab[order][:-1]
    for arr in (o.frames.transpose(1, 0, 2), o.normals, o.uvs):
        rows = arr.reshape(len(lab), -1)[order]
        assert (rows[1:][same] == rows[:-1][same]).all()


def test_labels_are_alike_corners_and_weld_as_every_corner():
    for mirror in (None, 2):
        model = shape_model(_tube(mirror=mirror))
        assert model.objects
        for o in model.objects:
            _alike(o)
            assert len(np.unique(o.labels)) < o.frames.shape[1]       # corners shared
        unlabelled = copy.deepcopy(model.objects)
        for o in unlabelled:
            o.share_labels(None)
            assert o.labels is None
        with_labels = mesh_blocks(model.objects, {0: 0}, [])
        without = mesh_blocks(unlabelled, {0: 0}, [])
        for x, y in zip(with_labels, without):
            for k, v in x["payload"].items():
                np.testing.assert_array_equal(v, y["payload"][k], err_msg=k)


def test_labels_are_dropped_when_an_array_is_replaced():
    (o, *_) = shape_model(_tube()).objects
    assert o.labels is not None
    o.frames = o.frames.copy()
    assert o.labels is None
