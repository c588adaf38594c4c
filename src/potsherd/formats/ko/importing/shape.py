"""glTF into a Knight Online ``.n3shape`` (a static object of the zones: a
transform and parts, each an ``.n3pmesh`` with a material and textures), the
inverse of ``scene.add_shape``.

The shape's transform is the scene's one root when that root draws nothing
itself (the export's shape node), else the identity.  Each mesh node and
material under it is one part: its pivot is the node's place in the shape's
frame, its geometry the node's triangles in that frame less the pivot (a
node's own rotation and scale are baked in), its mesh an ``.n3pmesh`` and its
texture an NTF ``.dxt`` beside the output, referenced as ``<folder>\\<file>``
(``object`` by default, where the client keeps them).

With ``like`` (the original shape), parts are paired with the original's by
name (the export names each part's node after its mesh reference): an
unchanged part keeps its record, mesh file and textures; an edited mesh is
regenerated under the original's name; a changed colour becomes the diffuse
and a repainted texture is written under the original's name.  A shape whose
parts, pivots and transform are all the original's gives back its bytes.
"""
from __future__ import annotations

import copy
import os
from types import SimpleNamespace
from typing import Any

import numpy as np

from ....core.errors import FormatError
from ....document import Document
from ....scene import Scene
from ....scene.ops import world_matrices
from ....scene.xform import (decompose_matrix, inverse_affine, mirror_x, mirror_x_quat,
                            quat_normalize)
from .base import (MAX_VERTICES, ImportError_, _by_name, _file_stem, _original_name,
                          _raw, _safe, _unique)
from .material import edited_texture, material_record, texture_file
from . import _mesh_sets, _pmesh_doc, gather
from ..scene import _transform_trs
from ..text import text


def _shape_root(scene: Scene) -> int | None:
    """The node whose transform is the shape's: the one root, drawing nothing."""
    if len(scene.roots) == 1 and scene.nodes[scene.roots[0]].mesh is None:
        return scene.roots[0]
    return None


def _transform_record(frame: np.ndarray, name: str, like: dict | None) -> dict:
    """The shape's transform record (N3 axes) from its frame (the root's world matrix)."""
    t, r, s = decompose_matrix(frame)
    out = copy.deepcopy(like) if like is not None else {
        "name": _raw(name), "keys": [{"count": 0, "values": np.zeros((0, 0), np.float32)}
                                     for _ in range(3)],
        "collisionMesh": _raw(""), "climbMesh": _raw("")}
    new = {"position": [float(x) for x in mirror_x(t)],
           "rotation": [float(x) for x in mirror_x_quat(quat_normalize(r))],
           "scale": [float(x) for x in s]}
    if like is not None:
        # what the original's transform exports to (the engine skips w == 0 rotations)
        shown = _transform_trs(like)
        same = (np.allclose(shown["translation"], t, atol=1e-5)
                and abs(abs(float(np.dot(shown["rotation"], quat_normalize(r)))) - 1) < 1e-9
                and np.allclose(shown["scale"], s, atol=1e-5))
        if same:
            return out
    out.update(new)
    return out


def import_shape(scene: Scene, *, like: Document | None = None, out_name: str = "",
                 **options: Any) -> list:
    stem = _file_stem(out_name, scene.name or "shape")
    folder = str(options.get("folder", "object"))
    lroot = like.root if like is not None and like.format == "n3shape" else None
    root = _shape_root(scene)
    world = world_matrices(scene)
    frame = world[root] if root is not None else np.eye(4)
    inv = inverse_affine(frame)[0]             # (a root scaled to 0 flattens its parts)
    sets = _mesh_sets(scene)
    if not sets:
        raise ImportError_("the scene has no mesh to make a shape of")
    if scene.animations:
        scene.warnings.append("n3shape: the glTF's animations are not written (a shape's "
                              "transform keys come from --like only)")
    if scene.skins:
        scene.warnings.append("n3shape: skin dropped; the meshes are written in their bind pose "
                              "(import to .n3chr for a skinned character)")
    groups: list = []                        # (name, node, sets of one material)
    for node in dict.fromkeys(s.node for s in sets):
        node_sets = [s for s in sets if s.node == node]
        mats = list(dict.fromkeys(s.material for s in node_sets))
        for m in mats:
            base = _original_name(scene.nodes[node]) or f"part{len(groups)}"
            name = base if len(mats) == 1 else f"{base}_{m}"
            groups.append((name, node, [s for s in node_sets if s.material == m]))
    originals = _like_parts(like) if lroot is not None else []
    holders = _by_name([g[0] for g in groups], originals) if originals else \
        [(None, None)] * len(groups)
    paired = [(h.part if h is not None else None, m) for h, m in holders]
    place = [h.index if h is not None else len(originals) + k for k, (h, _) in enumerate(holders)]
    files: list = []
    parts: list = []                      # (place: the original's part order first, record)
    stems: set = {stem.lower()}
    by_image: dict = {}                   # image -> the texture its first part wrote
    for (name, node, node_sets), (lpart, lmesh), at in zip(groups, paired, place):
        pivot = (inv @ world[node])[:3, 3]
        for s in node_sets:                     # the node's triangles in the part's frame
            s.transform(inv)
            s.positions = s.positions - pivot
        geo = gather(scene, node_sets, f"part {name}", empty_ok=True, limit=False)
        if not len(geo.triangles):
            continue
        pieces = split_geometry(geo, MAX_VERTICES)
        if len(pieces) > 1:
            scene.warnings.append(f"part {name}: {geo.vertex_count} vertices, over the "
                                  f"engine's {MAX_VERTICES}: split into {len(pieces)} parts")
        # the pieces of one part share its texture, and so do the parts of one
        # image (one .dxt, not a copy per material: a thousand materials naming
        # one big image would each encode it)
        image = _base_image(scene, geo.material)
        textures = by_image.get(image) if lpart is None else None
        for k, geo in enumerate(pieces):
            rec, mesh_name, mesh, extra, textures = _part(
                scene, geo, name if len(pieces) == 1 else f"{name}_{k + 1}", pivot,
                lpart if k == 0 else None, lmesh, like, stem, stems, folder, options, textures)
            files.extend(extra)
            files.append((mesh_name, mesh))
            parts.append((at + k / len(pieces), rec))
        if lpart is None and image is not None:
            by_image.setdefault(image, textures)
    parts = [rec for _, rec in sorted(parts, key=lambda x: x[0])]
    if not parts:
        raise ImportError_("every triangle of the scene is degenerate: no shape to write")
    if lroot is not None:
        out = copy.deepcopy(lroot)
        if len(parts) != len(lroot["parts"]):
            scene.warnings.append("n3shape: parts added or removed against the original")
    else:
        out = {"belong": 0, "eventID": 0, "eventType": 0, "npcID": 0, "npcStatus": 0}
    name = options.get("name") or (scene.nodes[root].name if root is not None else stem)
    out["transform"] = _transform_record(frame, name,
                                         lroot["transform"] if lroot is not None else None)
    out["partCount"], out["parts"] = len(parts), parts
    order = ["transform", "partCount", "parts", "belong", "eventID", "eventType", "npcID",
             "npcStatus"]
    out = {k: out[k] for k in order if k in out}
    shape = Document("n3shape", out, dict(like.params) if lroot is not None else {},
                     bytes(like.trailing) if lroot is not None else b"", [],
                     dict(like.meta) if lroot is not None else {})
    return [(f"{stem}.n3shape", shape), *files]


def _base_image(scene: Scene, material: int | None) -> int | None:
    """The image a material's base colour texture names (what its .dxt is made
    of), or None."""
    if material is None or not 0 <= material < len(scene.materials):
        return None
    ref = scene.materials[material].base_color_texture
    return ref.image if ref is not None else None


def _part(scene: Scene, geo: Any, name: str, pivot: np.ndarray, lpart: dict | None,
          lmesh: Any, like: Document | None, stem: str, stems: set, folder: str,
          options: dict, textures: list | None) -> tuple:
    """(part record, mesh file name, mesh document, texture files, texture
    references) of one part: the original's record when ``lpart``, else a new
    one, whose texture is written unless ``textures`` are given (a split part's
    later pieces share its first piece's)."""
    n3_pivot = [float(x) for x in mirror_x(pivot)]
    extra: list = []
    if lpart is not None:
        rec = copy.deepcopy(lpart)
        if not np.allclose(np.asarray(rec["pivot"], np.float64), n3_pivot, atol=1e-5):
            rec["pivot"] = n3_pivot
        rec["material"] = material_record(scene, geo.material, lpart["material"],
                                          stage_from_file=True)
        mesh_name = os.path.basename(text(rec["mesh"]).replace("\\", "/"))
        mesh = _pmesh_doc(scene, geo, lmesh, options, os.path.splitext(mesh_name)[0])
        if options.get("textures", True) and rec["textures"]:
            extra.extend(filter(None, [edited_texture(scene, geo.material, like,
                                                      rec["textures"][0], options)]))
        return rec, mesh_name, mesh, extra, list(rec["textures"])
    pstem = _unique(f"{stem}_{_safe(name)}", stems)
    mesh_name = f"{pstem}.n3pmesh"
    mesh = _pmesh_doc(scene, geo, None, options, pstem)
    if textures is None:
        textures = []
        if options.get("textures", True):
            tex = texture_file(scene, geo.material, pstem, options)
            if tex is not None:
                extra.append(tex)
                textures = [_raw(f"{folder}\\{tex[0]}" if folder else tex[0])]
    rec = {"pivot": n3_pivot, "mesh": _raw(f"{folder}\\{mesh_name}" if folder else mesh_name),
           "material": material_record(scene, geo.material), "textureCount": len(textures),
           "textureFps": 10.0, "textures": list(textures)}
    return rec, mesh_name, mesh, extra, textures


def _morton(points: np.ndarray) -> np.ndarray:
    """Z-order codes (10 bits per axis) of ``points``: sorting by them keeps
    neighbours together."""
    lo, hi = points.min(axis=0), points.max(axis=0)
    q = ((points - lo) / np.where(hi > lo, hi - lo, 1.0) * 1023).astype(np.uint64)
    code = np.zeros(len(points), np.uint64)
    for bit in range(10):
        for axis in range(3):
            code |= ((q[:, axis] >> np.uint64(bit)) & np.uint64(1)) << np.uint64(3 * bit + axis)
    return code


def split_geometry(geo: Any, limit: int) -> list:
    """``geo`` as pieces of at most ``limit`` vertices each: its triangles in
    Z-order of their centres (so each piece is a compact patch), cut where the
    next triangle would bring a piece's vertices over the limit."""
    if geo.vertex_count <= limit:
        return [geo]
    order = np.argsort(_morton(geo.positions[geo.triangles].mean(axis=1)), kind="stable")
    tris = geo.triangles[order]
    pieces, start = [], 0
    while start < len(tris):
        window = tris[start:start + 4 * limit].reshape(-1)
        _, first = np.unique(window, return_index=True)
        new = np.zeros(len(window), np.int64)
        new[first] = 1                                   # a corner bringing a new vertex
        count = np.cumsum(new.reshape(-1, 3).sum(axis=1))
        end = int(np.searchsorted(count, limit, side="right"))
        used, local = np.unique(tris[start:start + end], return_inverse=True)
        pieces.append(type(geo)(geo.positions[used], geo.normals[used], geo.uvs[used],
                                local.reshape(-1, 3),
                                None if geo.joints is None else geo.joints[used],
                                None if geo.weights is None else geo.weights[used],
                                material=geo.material))
        start += end
    return pieces


def _like_parts(like: Document) -> list:
    """The original's parts as (holder, its .n3pmesh document or None), for
    ``_by_name``: the holder's ``root["name"]`` is the part's mesh reference,
    the name its export gives the part's node, and ``part`` its record."""
    from ..resolver import Resolver
    res = Resolver(like.source, None, limits=like.limits)
    out = []
    for i, part in enumerate(like.root["parts"]):
        try:
            mesh = res.load(part["mesh"], Scene(), "mesh")
        except FormatError:
            mesh = None
        out.append((SimpleNamespace(root={"name": part["mesh"]}, part=part, index=i),
                    mesh if mesh is not None and mesh.format == "n3pmesh" else None))
    return out
