"""Importing with ``like`` (the original shape): whether an edited scene still matches
the original's export (:mod:`.like_compare`), which mesh blocks can be reused
unchanged, and the levels, nodes and keys the export left out, kept."""
from __future__ import annotations


from ...core.errors import FormatError
from ...document import Document
from ...scene import Scene
from .like_compare import compare, match_parts, material_key, same_geometry, shape_extent
from .model import NodeM, ObjectM, ShapeModel


def models_match(m: ShapeModel, ref: ShapeModel) -> str | None:
    """None when ``m`` says what ``ref`` says (:mod:`.like_compare`), else what differs."""
    return compare(m, ref).why


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
    """Object index -> the original mesh block, for objects matched by name
    (:func:`.like_compare.match_parts`) whose geometry did not change, while the
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
