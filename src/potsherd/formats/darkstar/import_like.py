"""Importing with ``like`` (the original shape): whether an edited scene still matches
the original's export, which mesh blocks can be reused unchanged, and the levels,
nodes and keys the export left out, kept."""
from __future__ import annotations

import numpy as np

from ...core.errors import FormatError
from ...document import Document
from ...scene import Scene
from .model import NodeM, ObjectM, ShapeModel


def _same(a: np.ndarray, b: np.ndarray, tol: float) -> bool:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return a.shape == b.shape and (a.size == 0 or bool(np.abs(a - b).max() <= tol))


def _same_rot(a: np.ndarray, b: np.ndarray, tol: float) -> bool:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape:
        return False
    if a.size == 0:
        return True
    dot = np.abs((a * b).sum(axis=-1))
    return bool((1 - dot).max() <= tol)


def models_match(m: ShapeModel, ref: ShapeModel) -> str | None:
    """None when ``m`` says what ``ref`` says (within float noise), else what differs."""
    extent = 1.0
    for o in ref.objects:
        if o.frames.size:
            extent = max(extent, float(np.abs(o.frames).max()))
    tol = 1e-5 * extent
    if [(n.name, n.parent) for n in m.nodes] != [(n.name, n.parent) for n in ref.nodes]:
        return "node tree"
    for a, b in zip(m.nodes, ref.nodes):
        if not _same(a.local, b.local, tol):
            return f"node {a.name!r} rest transform"
    if [(o.name, o.node, o.frames.shape) for o in m.objects] != [(o.name, o.node, o.frames.shape)
                                                                 for o in ref.objects]:
        return "objects"
    for a, b in zip(m.objects, ref.objects):
        if not (_same(a.offset, b.offset, tol) and _same(a.frames, b.frames, tol)
                and _same(a.uvs, b.uvs, 1e-6) and np.array_equal(a.materials, b.materials)):
            return f"object {a.name!r}"
    if [(s.name, round(s.duration, 6)) for s in m.sequences] != [(s.name, round(s.duration, 6))
                                                                  for s in ref.sequences]:
        return "sequences"
    for a, b in zip(m.sequences, ref.sequences):
        if a.node_keys.keys() != b.node_keys.keys() or a.object_keys.keys() != b.object_keys.keys():
            return f"sequence {a.name!r} tracks"
        for k, (t1, q1, p1, s1) in a.node_keys.items():
            t2, q2, p2, s2 = b.node_keys[k]
            if not (_same(t1, t2, 1e-6) and _same_rot(q1, q2, 1e-9) and _same(p1, p2, tol)
                    and _same(s1, s2, 1e-5)):
                return f"sequence {a.name!r} node {k}"
        for k, ka in a.object_keys.items():
            kb = b.object_keys[k]
            for x, y in zip(ka, kb):
                if (x is None) != (y is None) or (x is not None and not _same(x, y, 1e-6)):
                    return f"sequence {a.name!r} object {k}"
    if len(m.materials) != len(ref.materials):
        return "materials"
    for a, b in zip(m.materials, ref.materials):
        if (a.name, a.alpha_mode) != (b.name, b.alpha_mode) or not _same(a.base_color, b.base_color, 1e-6):
            return f"material {a.name!r}"
    return None


def _like_scenes(like: Document) -> list[tuple[dict, Scene]]:
    """The original exported with each option set an export could have used."""
    from .scene import to_scene
    n_det = len(like.root["payload"]["details"]) if isinstance(like.root.get("payload"), dict) else 0
    out = []
    for detail in [0, -1] + list(range(1, n_det)):
        for bounds in (False, True):
            opts = {"detail": detail, "bounds": bounds, "skin": False}
            try:
                out.append((opts, to_scene(like, **opts)))
            except FormatError:
                continue
    return out


def _like_mesh_index(like: Document, obj: ObjectM) -> int | None:
    ob = like.root["payload"]["objects"]
    oi = obj.extras.get("dts_object")
    if not isinstance(oi, int) or not 0 <= oi < len(ob):
        return None
    mi = int(ob["fMeshIndex"][oi])
    return mi if 0 <= mi < len(like.root["payload"]["meshes"]) else None


def _reusable_meshes(model: ShapeModel, ref: ShapeModel, like: Document) -> dict:
    """Object index -> the original mesh block, for objects whose geometry did not change
    (while the material list still lines up, as the blocks' faces index it)."""
    out: dict = {}
    if [m.name for m in model.materials] != [m.name for m in ref.materials]:
        return out
    meshes = like.root["payload"]["meshes"]
    by_name = {o.name: o for o in ref.objects}
    for i, o in enumerate(model.objects):
        r = by_name.get(o.name)
        mi = _like_mesh_index(like, r) if r is not None else None
        if mi is None:
            continue
        extent = max(1.0, float(np.abs(r.frames).max()) if r.frames.size else 1.0)
        if (r.frames.shape == o.frames.shape and _same(r.frames, o.frames, 1e-5 * extent)
                and _same(r.uvs, o.uvs, 1e-6) and np.array_equal(r.materials, o.materials)):
            out[i] = meshes[mi]
    return out


def keep_unexported(model: ShapeModel, full: ShapeModel, like: Document) -> int:
    """Add to ``model`` the nodes (with their objects and keys) of the original's
    full model that the scene does not name: the detail levels and the bounds
    object an export leaves out.  Returns how many nodes and objects were added."""
    index = {n.name: i for i, n in enumerate(model.nodes)}
    added: dict[int, int] = {}
    for ri, n in enumerate(full.nodes):          # parents first
        if n.name in index and ri not in added:
            continue
        parent = -1
        if n.parent >= 0:
            pname = full.nodes[n.parent].name
            parent = added.get(n.parent, index.get(pname, -1))
        added[ri] = len(model.nodes)
        model.nodes.append(NodeM(n.name, parent, n.local, -1, dict(n.extras)))
    names = {o.name for o in model.objects}
    added_obj: dict[int, int] = {}
    for ri, o in enumerate(full.objects):
        if o.node in added or (o.name not in names and o.name == "bounds"):
            node = added.get(o.node, index.get(full.nodes[o.node].name))
            if node is None:
                continue
            added_obj[ri] = len(model.objects)
            model.objects.append(ObjectM(o.name, node, o.offset, o.frames, o.normals, o.uvs,
                                         o.materials, -1, dict(o.extras)))
    by_name = {s.name: s for s in full.sequences}
    for seq in model.sequences:
        ref = by_name.get(seq.name)
        if ref is None:
            continue
        for k, v in ref.node_keys.items():
            if k in added:
                seq.node_keys[added[k]] = v
        for k, v in ref.object_keys.items():
            if k in added_obj:
                seq.object_keys[added_obj[k]] = v
    return len(added) + len(added_obj)
