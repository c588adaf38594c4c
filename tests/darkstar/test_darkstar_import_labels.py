"""Corner labels of the shape importer's objects (``ObjectM.labels``): corners
of one label are alike (frames, normal, uv), and the mesh blocks welded from
the labels' first corners are those welded from every corner."""
from __future__ import annotations

import copy

import numpy as np

from potsherd.formats.darkstar.importing.meshes import mesh_blocks
from potsherd.formats.darkstar.model import shape_model
from potsherd.scene import Scene

from import44 import character     # benchmarks/ (pytest pythonpath)


def _tube(mirror: int | None = None) -> Scene:
    """The benchmark's character, small: a tube on a 4-joint chain, each ring
    blended between two joints (triangles spanning joints), UVs with a seam, a
    clip; ``mirror``: that joint's bind matrix mirrors x."""
    return character(joints=4, rings_per_joint=3, segments=7, uvs=True, mirror=mirror)


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
