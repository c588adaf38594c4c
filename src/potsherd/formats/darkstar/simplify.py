"""Coarser detail levels for a shape that arrives with one (vertex clustering).

Darkstar draws a shape through one of its details, picked by the shape's
projected size; a glTF from Blender has one level.  :func:`add_levels` copies
the level's node subtree once per extra size and gives every copied object a
clustered version of its mesh: corners are snapped to the mean of their cell
in a grid over the shape's box (``cells = 48 * size / first size`` per side,
at least 6), and triangles whose corners fall into fewer than three cells are
dropped (a part left with none is not drawn at that size).  Frames cluster
on frame 0's cells, so mesh animation survives.
Vectorised (``np.unique`` on cell keys); no quality metric beyond that.
"""
from __future__ import annotations

import numpy as np

from .model import NodeM, ObjectM


def cluster(obj: ObjectM, world: np.ndarray, lo: np.ndarray, cell: float) -> ObjectM:
    """``obj`` with corners snapped to cell means (cells of frame 0 in shape space)."""
    frames = obj.frames
    if not frames.size:
        return obj
    p0 = frames[0] @ world[:3, :3].T + world[:3, 3]
    key = np.floor((p0 - lo) / cell).astype(np.int64)
    _, inverse = np.unique(key, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    n = int(inverse.max()) + 1
    counts = np.bincount(inverse, minlength=n).astype(np.float64)
    snapped = np.empty_like(frames)
    for f in range(frames.shape[0]):
        for c in range(3):
            snapped[f, :, c] = (np.bincount(inverse, frames[f, :, c], n) / counts)[inverse]
    tri = inverse.reshape(-1, 3)
    keep = (tri[:, 0] != tri[:, 1]) & (tri[:, 1] != tri[:, 2]) & (tri[:, 0] != tri[:, 2])
    corners = np.repeat(keep, 3)
    return ObjectM(obj.name, obj.node, obj.offset, snapped[:, corners], obj.normals[corners],
                   obj.uvs[corners], obj.materials[keep], obj.scene_node, dict(obj.extras))


def add_levels(nodes: list, objects: list, root: int, sizes: list, worlds: list,
               lo: np.ndarray, hi: np.ndarray) -> tuple[dict, dict, list]:
    """Append one copy of ``root``'s subtree per size in ``sizes[1:]``.

    Returns (new node -> source node, new object -> source object, detail
    roots of the added levels); ``nodes`` and ``objects`` are extended in place."""
    extent = float((hi - lo).max()) or 1.0
    node_src: dict = {}
    obj_src: dict = {}
    roots = []
    subtree = [root]
    for i in range(len(nodes)):
        if i != root and nodes[i].parent in subtree:
            subtree.append(i)          # nodes come parents first
    n_objects = len(objects)
    for size in sizes[1:]:
        cells = max(6, int(round(48 * float(size) / float(sizes[0] or 1))))
        cell = extent / cells
        copy_of: dict = {}
        for i in subtree:
            n = nodes[i]
            parent = n.parent if i == root else copy_of[n.parent]
            copy_of[i] = len(nodes)
            node_src[len(nodes)] = i
            nodes.append(NodeM(f"{n.name} {size:g}"[:23], parent, n.local, n.scene_node, dict(n.extras)))
        if copy_of:
            roots.append(copy_of[root])
        for oi in range(n_objects):
            o = objects[oi]
            if o.node not in copy_of or o.name == "bounds":
                continue
            simple = cluster(o, worlds[o.node] @ o.offset, lo, cell)
            if not simple.frames.shape[1]:
                continue                 # the whole part collapsed at this size
            simple.node = copy_of[o.node]
            simple.name = f"{o.name} {size:g}"[:23]
            obj_src[len(objects)] = oi
            objects.append(simple)
    return node_src, obj_src, roots
