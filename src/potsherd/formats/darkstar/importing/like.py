"""Importing with ``like`` (the original shape): whether an edited scene still matches
the original's export (:mod:`.compare`); when it does not, what of the original
the rebuild keeps: its node frames, names and the parts the edit left alone (rest
transforms, keys, material list, mesh blocks), and the levels, nodes and keys the
export left out."""
from __future__ import annotations

import copy

import numpy as np

from ....core.errors import FormatError
from ....document import Document
from ....scene import Scene
from .compare import (RESAMPLE_STEP, compare, match_parts, material_key, node_track_pairs,
                           reframe, same_geometry, same_object_keys, same_track,
                           same_transform, shape_extent)
from ..model import NodeM, ObjectM, ShapeModel


def models_match(m: ShapeModel, ref: ShapeModel) -> str | None:
    """None when ``m`` says what ``ref`` says (:mod:`.compare`), else what differs."""
    return compare(m, ref).why


def _like_scenes(like: Document) -> list[tuple[dict, Scene]]:
    """The original exported with each option set an export could have used."""
    from ..scene import to_scene
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
    """Object index -> the original mesh block, for objects matched by name
    (:func:`.compare.match_parts`) whose geometry did not change, while the
    material list still starts with the original's (the blocks' faces index it)."""
    out: dict = {}
    if len(model.materials) < len(ref.materials) or any(
            material_key(model, i) != material_key(ref, i) for i in range(len(ref.materials))):
        return out
    meshes = like.root["payload"]["meshes"]
    tol = 1e-5 * shape_extent(ref)
    for i, j in match_parts(model, ref).objects.items():
        o, r = model.objects[i], ref.objects[j]
        mi = _like_mesh_index(like, r)
        if mi is not None and same_geometry(o, model, r, ref, tol):
            out[i] = meshes[mi]
    return out


def adopt_unchanged(model: ShapeModel, full: ShapeModel) -> ShapeModel:
    """``model`` (an edited scene's) for a rebuild, with what it shares with ``full``
    (the original's, every level) taken from the original: the node frames an editor
    turned (:func:`.compare.reframe`), the names the export made unique,
    sequence, material and shape extras an editor drops, the original material list
    (new materials after it), and the rest transforms, keys, durations and geometry
    that did not change, exactly as the original has them."""
    match = match_parts(model, full)
    tol = 1e-5 * shape_extent(full)
    m, _ = reframe(model, full, match, tol, strict=False)
    m.extras = {**full.extras, **model.extras}
    for i, j in match.nodes.items():
        n, r = m.nodes[i], full.nodes[j]
        n.name = r.name
        if same_transform(n.local, r.local, tol):
            n.local = r.local
    # the original list first: the kept mesh blocks index it
    materials = list(full.materials)
    index = {material_key(full, k): k for k in range(len(materials))}
    remap = {}
    for k, mat in enumerate(model.materials):
        key = material_key(model, k)
        if key not in index:
            prev = next((x for x in full.materials if x.name == mat.name), None)
            mat = copy.copy(mat)
            mat.extras = {**(prev.extras if prev is not None else {}), **(mat.extras or {})}
            index[key] = len(materials)
            materials.append(mat)
        remap[k] = index[key]
    m.materials = materials
    objects = []
    for i, o in enumerate(m.objects):
        o = copy.copy(o)
        o.materials = np.array([remap.get(int(x), -1) for x in o.materials], np.int64)
        j = match.objects.get(i)
        if j is not None:
            r = full.objects[j]
            o.name, o.extras = r.name, {**r.extras, **o.extras}
            if same_transform(o.offset, r.offset, tol):
                o.offset = r.offset
            if same_geometry(o, m, r, full, tol):
                o.frames, o.normals, o.uvs, o.materials = r.frames, r.normals, r.uvs, r.materials
        objects.append(o)
    m.objects = objects
    for i, j in match.sequences.items():
        m.sequences[i] = _adopt_sequence(m, i, full, full.sequences[j], match, tol,
                                         "duration" in model.sequences[i].extras)
    return _in_original_order(m, match)


def _in_original_order(m: ShapeModel, match) -> ShapeModel:
    """``m`` with its nodes, objects and sequences in the original's order (an editor
    sorts them by name; transitions index sequences), new ones after, parents still
    before children."""
    def key(table: dict, i: int) -> tuple:
        return (0, table[i]) if i in table else (1, i)
    kids: dict = {}
    for i, n in enumerate(m.nodes):
        kids.setdefault(n.parent, []).append(i)
    order: list = []
    stack = sorted(kids.get(-1, []), key=lambda i: key(match.nodes, i), reverse=True)
    while stack:
        i = stack.pop()
        order.append(i)
        stack.extend(sorted(kids.get(i, []), key=lambda c: key(match.nodes, c), reverse=True))
    new = {old: k for k, old in enumerate(order)}
    m.nodes = [NodeM(m.nodes[i].name, new[m.nodes[i].parent] if m.nodes[i].parent >= 0 else -1,
                     m.nodes[i].local, m.nodes[i].scene_node, m.nodes[i].extras) for i in order]
    obj_order = sorted(range(len(m.objects)), key=lambda i: key(match.objects, i))
    new_obj = {old: k for k, old in enumerate(obj_order)}
    objects = []
    for i in obj_order:
        o = m.objects[i]
        o.node = new[o.node]
        objects.append(o)
    m.objects = objects
    seqs = [m.sequences[i] for i in sorted(range(len(m.sequences)), key=lambda i: key(match.sequences, i))]
    for sq in seqs:
        sq.node_keys = {new[k]: v for k, v in sq.node_keys.items() if k in new}
        sq.object_keys = {new_obj[k]: v for k, v in sq.object_keys.items()}
    m.sequences = seqs
    return m


def _adopt_sequence(m: ShapeModel, si: int, full: ShapeModel, b, match, tol: float,
                    timed: bool):
    a = copy.copy(m.sequences[si])
    a.name = b.name
    a.extras = {**b.extras, **a.extras}
    if not timed and b.duration - RESAMPLE_STEP <= a.duration <= b.duration:
        a.duration = b.duration                 # a resampled clip cut at its last whole frame
    a.node_keys, a.object_keys = dict(a.node_keys), dict(a.object_keys)
    for i, j, ka, kb, new, orig in node_track_pairs(a, b, match, m, full):
        if same_track(new, orig, tol, ka is not None):
            a.node_keys.pop(i, None)
            if kb is not None:
                a.node_keys[i] = kb
    for i, j in match.objects.items():
        ka, kb = a.object_keys.get(i), b.object_keys.get(j)
        if (ka is not None or kb is not None) and same_object_keys(ka, kb):
            a.object_keys.pop(i, None)
            if kb is not None:
                a.object_keys[i] = kb
    return a


def keep_unexported(model: ShapeModel, full: ShapeModel, like: Document,
                    exported: ShapeModel | None = None) -> int:
    """Add to ``model`` the nodes (with their objects and keys) of the original's
    full model that the scene does not name: the detail levels and the bounds
    object an export leaves out.  Nodes ``exported`` (the original as exported)
    has are not added back: the scene lost them to an edit (deleted, renamed).
    Returns how many nodes and objects were added."""
    index = {n.name: i for i, n in enumerate(model.nodes)}
    gone = {n.name for n in exported.nodes} - set(index) if exported is not None else set()
    added: dict[int, int] = {}
    for ri, n in enumerate(full.nodes):          # parents first
        if (n.name in index and ri not in added) or n.name in gone:
            continue
        parent = -1
        up = n.parent
        while up >= 0 and up not in added and full.nodes[up].name not in index:
            up = full.nodes[up].parent           # under the nearest ancestor still there
        if up >= 0:
            parent = added.get(up, index.get(full.nodes[up].name, -1))
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
