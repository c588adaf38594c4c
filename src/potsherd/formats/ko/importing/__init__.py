"""Knight Online documents from neutral scenes (glTF import): the inverse of
``scene.py``.

Conventions undone here: glTF (x, y, z) -> N3 (-x, y, z) (the X mirror is its
own inverse), quaternions (x, y, z, w) -> (x, -y, -z, w), triangle winding
reversed back to the engine's clockwise fronts, no V flip.

* ``.n3pmesh``: every triangle primitive of the scene (world space, bind pose),
  welded, with its progressive mesh generated (``pmgen``) and four LOD records;
  ``lod=0`` (or ``no_lod=1``) writes full detail only.
* ``.n3cskins``: the skinned (or any) geometry with four LODs taken from one
  progressive mesh, positions and UVs indexed separately per corner as the
  engine stores them, every glTF influence kept and renormalised.
* ``.n3joint``: the skeleton in depth-first pre-order; one timeline whose frame
  0 is the bind pose (the engine binds skins at frame 0; ``scene.bind_pose``
  moves a rest pose that differs onto it) and whose later frames hold each
  animation in turn, at its stored rate or the common rate its keys sit on.
  ``.n3anim``: one clip per animation over its frame range.
* ``.n3shape`` (a static object): parts from mesh nodes, see :mod:`.shape`.
* ``.n3cpart`` / ``.n3cplug`` / ``.n3chr``: a character is several files; the
  ``.n3chr`` import returns the character and every file it references
  (joint, clips, parts with their skins and textures, plugs with their meshes),
  referenced as ``<folder>\\<file>`` the way the client names them (``chr\\``
  for the skeleton and clips, ``item\\`` for parts, skins, plugs, meshes and
  textures).  Every file is written beside the output; in a client tree the
  ``item`` ones belong in ``Item/`` (potsherd's own export also finds them
  beside the character).  A part or plug has one texture: several glTF
  materials on one become cells of a texture atlas (``atlas``).

``like`` (the original file) keeps what glTF cannot carry: when the imported
geometry, skeleton or clips are the ones the original exports to, the
original's own records are written back unchanged (so an unedited round trip
is byte-exact); otherwise its names, materials, flags and LOD distances are
kept around the new data.  A glb that went through Blender (default settings)
still matches: joints and clips are paired with the original's by name, the
original's joint order, stored names and joint frames are kept (Blender sorts
children by name, drops extras and turns bones towards their children), and a
clip resampled at Blender's 24 fps matches when each of its keys lies on the
original's motion (``rig._same_motion``).
"""
from __future__ import annotations

import copy
import math
import os
from typing import Any

import numpy as np

from ....core.errors import FormatError
from ....core.layout import Ragged
from ....core.values import RawString
from ....document import Document
from ....scene import Scene, compute_normals, weld
from ....scene.bind_pose import rest_at_bind
from ....scene.geometry import first_labels
from ....scene.ops import triangle_sets, world_matrices
from ....scene.xform import decompose_matrix, inverse_affine, mirror_x, trs_to_matrix
from .material import edited_texture, material_record, texture_file
from ..text import text
from ..lodsnap import lod_triangles
from ..pmgen import build_progressive, replay

#: collapse order of imported progressive meshes: the compiled simplifier's
#: (fast_simplification), replayed into the engine's records; ``pmgen``'s own
#: ("python") stays the reference the tests compare it with
PM_ORDER = "compiled"
from ..wire import record_table
from .base import (F32_MAX, ImportError_, MAX_VERTICES, PMESH_LOD_DISTANCES,
                          PMESH_LOD_FRACTIONS, SKIN_LOD_FRACTIONS, _file_stem, _no_lod,
                          _by_name, _original_name, _raw, _safe, _stem, _unique,
                          into_frame)
from .atlas import merge_materials
from .rig import (anim_root, import_anim, import_joint, joint_root, skeleton_order,
                         keep_frames, like_names, restore_clip_data, _copy_doc, _joint_maps,
                         _same_motion)



# ----------------------------------------------------------------------------
# geometry gathering


class Geometry:
    """Triangles in N3 space, one vertex per unique (position, normal, uv, skin)."""

    def __init__(self, positions, normals, uvs, triangles, joints=None, weights=None,
                 material: int | None = None) -> None:
        self.positions = positions      # (V, 3) float32, N3 space
        self.normals = normals          # (V, 3) float32
        self.uvs = uvs                  # (V, 2) float32
        self.triangles = triangles      # (T, 3) int64, N3 (clockwise) winding
        self.joints = joints            # (V, k) int64 skeleton indices, or None
        self.weights = weights          # (V, k) float64
        self.material = material

    @property
    def vertex_count(self) -> int:
        return len(self.positions)


def gather(scene: Scene, sets: list, what: str, joint_map: dict | None = None,
           empty_ok: bool = False, limit: bool = True) -> Geometry:
    """Merge triangle sets into one N3 mesh, welded on every attribute; refused when all
    are degenerate (unless ``empty_ok``) or over 65535 vertices (unless not ``limit``)."""
    if not sets:
        raise ImportError_(f"the scene has no triangles to make {what} from")
    pos, nrm, uv, tri, jn, wt = [], [], [], [], [], []
    base = 0
    lost_uv = False
    skinned = joint_map is not None and any(s.joints is not None for s in sets)
    k = max((s.joints.shape[1] for s in sets if s.joints is not None), default=1)
    for s in sets:
        p = np.asarray(s.positions, np.float64)
        idx = np.asarray(s.indices, np.int64).reshape(-1, 3)
        n = s.normals if s.normals is not None else compute_normals(p, idx.reshape(-1))
        u = np.asarray(s.uvs[0], np.float64) if s.uvs else np.zeros((len(p), 2))
        lost_uv |= len(s.uvs) > 1
        pos.append(p)
        nrm.append(np.asarray(n, np.float64))
        uv.append(u)
        tri.append(idx + base)
        if skinned:
            j = np.zeros((len(p), k), np.int64)
            w = np.zeros((len(p), k))
            if s.joints is not None and s.skin is not None:
                sj = np.asarray(s.joints, np.int64)
                mapping = joint_map.get(s.skin)
                if mapping is None:
                    raise ImportError_(f"{what}: a primitive is bound to a skin that is not "
                                       "the character's skeleton")
                j[:, :sj.shape[1]] = mapping[np.clip(sj, 0, len(mapping) - 1)]
                w[:, :sj.shape[1]] = np.asarray(s.weights, np.float64)
            else:  # a rigid primitive inside a skinned import: bound to the root
                w[:, 0] = 1.0
            jn.append(j)
            wt.append(w)
        base += len(p)
    if lost_uv:
        scene.warnings.append(f"{what}: only the first UV set is kept (TEXCOORD_1+ dropped)")
    for name, arrays in (("positions", pos), ("UVs", uv)):
        bad = sum(int((~(np.abs(a) <= F32_MAX)).any(axis=1).sum()) for a in arrays)
        if bad:        # (NaN, inf, or past float32 once taken into a plug's frame)
            raise ImportError_(f"{what}: {bad} vertices have non-finite {name} (or beyond "
                               "float32's range)", path=name)
    pos_a = mirror_x(np.concatenate(pos)).astype(np.float32)
    nrm_a = mirror_x(np.concatenate(nrm)).astype(np.float32)
    uv_a = np.concatenate(uv).astype(np.float32)
    tri_a = np.concatenate(tri)
    tri_a = tri_a[:, [0, 2, 1]]                               # back to clockwise fronts
    degenerate = (tri_a[:, 0] == tri_a[:, 1]) | (tri_a[:, 1] == tri_a[:, 2]) | \
        (tri_a[:, 0] == tri_a[:, 2])
    joints = weights = None
    keys = [pos_a, nrm_a, uv_a]
    if skinned:
        joints, weights = _normalise_weights(np.concatenate(jn), np.concatenate(wt))
        keys += [joints, weights.astype(np.float32)]
    first, remap = weld(*keys)
    tri_a = remap[tri_a]
    # degenerate after welding too, and by position (two corners at one place:
    # nothing to see, and the LOD generator collapses positions whole)
    corners = pos_a[first][tri_a]
    degenerate |= (corners[:, 0] == corners[:, 1]).all(1) | (corners[:, 1] == corners[:, 2]).all(1) | \
        (corners[:, 0] == corners[:, 2]).all(1)
    if degenerate.any():
        scene.warnings.append(f"{what}: {int(degenerate.sum())} degenerate triangles dropped")
        tri_a = tri_a[~degenerate]
        if not len(tri_a) and not empty_ok:
            raise ImportError_(f"{what}: every triangle is degenerate (a corner repeated, or "
                               "two at one place): nothing to write")
        if not len(tri_a):
            scene.warnings[-1] += "; none is left, so it is not written"
    used = np.zeros(len(first), bool)
    used[tri_a.reshape(-1)] = True
    keep = np.flatnonzero(used)
    renumber = np.full(len(first), -1, np.int64)
    renumber[keep] = np.arange(len(keep))
    sel = first[keep]
    geo = Geometry(pos_a[sel], nrm_a[sel], uv_a[sel], renumber[tri_a],
                   None if joints is None else joints[sel],
                   None if weights is None else weights[sel],
                   material=sets[0].material)
    if limit and geo.vertex_count > MAX_VERTICES:
        raise ImportError_(f"{what}: {geo.vertex_count} vertices; the engine's 16-bit indices "
                           f"hold at most {MAX_VERTICES}: decimate the mesh (Blender: Decimate "
                           "modifier) or split it into several meshes")
    return geo


def _normalise_weights(joints: np.ndarray, weights: np.ndarray) -> tuple:
    """Merge repeated joints, drop zero weights (sorted largest first), renormalise.

    A vertex with no weight at all (``triangle_sets`` kept it rigid, at its
    bind position) is bound to the root joint: N3 has no mesh node to hold it
    still, and joint 0 is also what the export makes of a binding without
    influences."""
    n, k = joints.shape
    w = np.where(np.isfinite(weights) & (weights > 0), weights, 0.0)
    total = w.sum(axis=1, keepdims=True)
    w = np.where(total > 0, w / np.where(total > 0, total, 1.0), 0.0)
    unweighted = total[:, 0] <= 0
    w[unweighted, 0] = 1.0
    joints = np.where(unweighted[:, None], 0, joints)
    order = np.argsort(-w, axis=1, kind="stable")
    j = np.take_along_axis(joints, order, 1)
    w = np.take_along_axis(w, order, 1)
    j = np.where(w > 0, j, 0)
    return j, w


def _mesh_sets(scene: Scene, skinned: bool | None = None) -> list:
    if not scene.nodes:
        return []
    sets = triangle_sets(scene)
    if skinned is True:
        return [s for s in sets if s.skin is not None]
    if skinned is False:
        return [s for s in sets if s.skin is None]
    return sets


# ----------------------------------------------------------------------------
# .n3pmesh


def _lod_records(geo: Geometry, p, like: dict | None) -> list:
    n = geo.vertex_count
    if like is not None and len(like.get("lods", ())):
        dists = [float(l["distance"]) for l in like["lods"]]
        fr = [int(l["vertexCount"]) / max(int(like["vertexCount"]), 1) for l in like["lods"]]
    else:
        # in float64: the float32 vertices of a huge model square past float32's range
        radius = float(np.linalg.norm(np.ptp(geo.positions.astype(np.float64), axis=0))) / 2 or 1.0
        dists = [min(radius * d, F32_MAX) for d in PMESH_LOD_DISTANCES]
        fr = list(PMESH_LOD_FRACTIONS)
    return record_table("lod", [{"distance": float(np.float32(d)), "vertexCount": int(round(f * n))}
                                for d, f in zip(dists, fr)])


def pmesh_root(geo: Geometry, name: str, *, progressive: bool,
               like: dict | None = None) -> dict:
    """The n3pmesh record of ``geo`` (vertices x, y, z, nx, ny, nz, u, v)."""
    verts = np.concatenate([geo.positions, geo.normals, geo.uvs], axis=1).astype(np.float32)
    tris = geo.triangles
    if progressive and len(tris):
        p = build_progressive(geo.positions, tris, attributes=geo.uvs, order=PM_ORDER)
        verts = verts[p.order]
        indices, collapses, changes = p.indices, p.collapses, p.index_changes
        min_v, min_i = p.min_vertices, p.min_indices
        lods = _lod_records(geo, p, like)
    else:
        indices = tris.reshape(-1)
        collapses, changes = record_table("collapse"), np.zeros(0, np.int32)
        min_v, min_i = len(verts), len(indices)
        lods = record_table("lod")
    root = {"name": _raw(name), "collapseCount": len(collapses), "changeCount": len(changes),
            "vertexCount": len(verts), "indexCount": len(indices), "minVertexCount": min_v,
            "minIndexCount": min_i, "vertices": verts.reshape(-1),
            "indices": np.asarray(indices, np.uint16),
            "collapses": collapses, "indexChanges": np.asarray(changes, np.int32),
            "lodCount": len(lods), "lods": lods}
    _lods_keep_triangles(root)
    return root


def _lods_keep_triangles(root: dict) -> None:
    """Raise a LOD stop (all but the last, which means 'gone') that would draw no
    triangle to the fewest vertices that still draw one: where a simplifier's order
    empties a small mesh early, a fraction of its vertices can land past the last
    triangle, and the engine would then show nothing at a middle distance."""
    from ..scene import pmesh_counts_at_vertex_count
    lods, n = root["lods"], int(root["vertexCount"])
    for k in range(len(lods) - 1):
        v = int(lods[k]["vertexCount"])
        if v >= n or pmesh_counts_at_vertex_count(root, [v])[1][0] >= 3:
            continue
        # triangles grow with vertices: the first count that draws one
        everyone = np.arange(v, n + 1)
        draws = np.flatnonzero(pmesh_counts_at_vertex_count(root, everyone)[1] >= 3)
        lods[k]["vertexCount"] = int(everyone[draws[0]]) if len(draws) else n


def _same_pmesh_geometry(geo: Geometry, like: dict) -> bool:
    """The imported triangles are the ones the original exports to (full detail,
    positions and UVs to float32 precision)."""
    from ..info import replay_pmesh
    verts = np.asarray(like["vertices"], np.float32).reshape(-1, 8)
    nv, ni, idx = replay_pmesh(like)
    tris = idx[:ni].reshape(-1, 3)
    if len(tris) != len(geo.triangles) or ni <= 0:
        return False
    a = np.concatenate([verts[tris.reshape(-1), :3], verts[tris.reshape(-1), 6:8]], 1)
    b = np.concatenate([geo.positions[geo.triangles.reshape(-1)],
                        geo.uvs[geo.triangles.reshape(-1)]], 1)
    return bool(np.allclose(a, b, atol=1e-5, rtol=1e-6))


def import_pmesh(scene: Scene, *, like: Document | None = None, out_name: str = "",
                 **options: Any) -> Document:
    geo = gather(scene, _mesh_sets(scene), "n3pmesh")
    _warn_static(scene, "n3pmesh")
    return _pmesh_doc(scene, geo, like, options, _file_stem(out_name, scene.name or "mesh"))


def _warn_static(scene: Scene, what: str, holds: str = "a static mesh",
                 skins_written: bool = True) -> None:
    """Name what a format without clips cannot hold (``skins_written``: whether
    the skinned meshes are written, in their bind pose, or left out whole)."""
    if scene.animations:
        scene.warnings.append(f"{what}: {len(scene.animations)} animation(s) dropped ({holds}; "
                              "import to .n3chr for skinned animation)")
    if any(p.targets for m in scene.meshes for p in m.primitives):
        scene.warnings.append(f"{what}: morph targets dropped (the format has none)")
    if scene.skins and skins_written:
        scene.warnings.append(f"{what}: skin dropped; the mesh is written in its bind pose")


def _pmesh_doc(scene: Scene, geo: Geometry, like: Document | None, options: dict,
               fallback: str) -> Document:
    if like is not None and like.format == "n3pmesh" and _same_pmesh_geometry(geo, like.root):
        return Document("n3pmesh", copy.deepcopy(like.root), dict(like.params),
                        bytes(like.trailing), [], dict(like.meta))
    lroot = like.root if like is not None and like.format == "n3pmesh" else None
    name = options.get("name") or (text(lroot["name"]) if lroot else fallback)
    root = pmesh_root(geo, name, progressive=not _no_lod(options), like=lroot)
    if lroot is not None:
        scene.warnings.append("n3pmesh: geometry edited; progressive mesh regenerated "
                              "(name and LOD distances kept from the original)")
    return Document("n3pmesh", root, {}, b"", [], {})


# ----------------------------------------------------------------------------
# .n3cskins


def _skin_welds(geo: Geometry) -> tuple[np.ndarray, np.ndarray]:
    """Each vertex's group of equal skin vertices (position, normal, joints,
    weights) and of equal UVs, welded once for all four LODs: a level's welds
    are these groups over its vertices, ranked by first appearance
    (``first_labels``), as welding its rows again would give."""
    vkeys = [geo.positions, geo.normals]
    if geo.joints is not None:
        vkeys += [geo.joints, geo.weights.astype(np.float32)]
    return weld(*vkeys)[1], weld(geo.uvs)[1]


def _skin_lod(geo: Geometry, tris: np.ndarray, name: str, welds: tuple) -> dict:
    """One n3cskin record over the vertices ``tris`` uses: positions (with normals
    and bindings) and UVs indexed separately per face corner."""
    used = np.bincount(tris.reshape(-1), minlength=len(geo.positions)) > 0
    vert_sel = np.flatnonzero(used)                        # (ascending, as np.unique)
    corners = (np.cumsum(used) - 1)[tris.reshape(-1)]      # each corner's place in it
    pgroup, ugroup = welds                                 # (_skin_welds)
    pfirst, premap = first_labels(pgroup[vert_sel])
    ufirst, uremap = first_labels(ugroup[vert_sel])
    pos_src = vert_sel[pfirst]
    rec: dict = {"skinBindings": 1, "name": _raw(name), "faceCount": len(tris),
                 "vertexCount": len(pfirst) if len(tris) else 0,
                 "uvCount": len(ufirst) if len(tris) else 0}
    if not len(tris):
        rec["vertexCount"] = rec["uvCount"] = 0
        return rec
    rec["positionNormals"] = np.concatenate([geo.positions[pos_src], geo.normals[pos_src]],
                                            1).astype(np.float32).reshape(-1)
    rec["vertexIndices"] = premap[corners].astype(np.uint16)
    rec["uvs"] = geo.uvs[vert_sel[ufirst]].astype(np.float32).reshape(-1)
    rec["uvIndices"] = uremap[corners].astype(np.uint16)
    rec["bindings"] = _bindings(geo, pos_src)
    return rec


def _bindings(geo: Geometry, verts: np.ndarray) -> Ragged:
    """The skin bindings of ``verts`` as one ragged table (arrays, not a record
    per vertex): each vertex's joints of non-zero weight, in their order, and
    their weights when there are several (joint 0 alone without a skin)."""
    table = _BINDING_TABLE()
    n = len(verts)
    rows = np.zeros(n, table.plan.dtype)
    rows["origin"] = np.asarray(geo.positions, np.float32)[verts]
    if geo.joints is None:
        rows["count"] = 1
        return Ragged(rows, {"joints": np.zeros(n, np.int32),
                             "weights": np.zeros(0, np.float32)}, table)
    w = np.asarray(geo.weights)[verts]
    live = w > 0
    count = live.sum(axis=1)
    rows["count"] = count
    joints = np.asarray(geo.joints)[verts][live].astype(np.int32)   # row-major: vertex order
    weights = w[live & (count > 1)[:, None]].astype(np.float32)
    return Ragged(rows, {"joints": joints, "weights": weights}, table)


def _BINDING_TABLE():
    """The layout's ragged table of n3cskin bindings."""
    from ..wire import LAYOUT
    return next(f.storage for f in LAYOUT.records["n3cskin"].fields if f.name == "bindings")


def skins_root(geo: Geometry, name: str, *, progressive: bool,
               lod_names: list | None = None) -> dict:
    """Four LODs: the full mesh, then nested levels with fewer of its vertices
    (``SKIN_LOD_FRACTIONS``), snapshots of the compiled simplifier's collapse
    order (:mod:`..lodsnap`), or without it of a progressive mesh's replay.
    A level left without triangles (a tiny part) repeats the one above: the
    engine draws nothing for an empty skin, so the part would vanish."""
    names = lod_names or [name] * 4
    lods = []
    if progressive and len(geo.triangles):
        targets = [None] + [max(int(round(f * geo.vertex_count)), 3)
                            for f in SKIN_LOD_FRACTIONS[1:]]
        levels = lod_triangles(geo.positions, geo.triangles, targets, geo.uvs, geo.normals)
        if levels is None:
            p = build_progressive(geo.positions, geo.triangles, attributes=geo.uvs,
                                  order=PM_ORDER)
            levels = []
            for t in targets:
                nv, ni, idx = replay(p, t)
                levels.append(p.order[idx[:ni]].reshape(-1, 3))
        for k in range(1, len(levels)):
            if not len(levels[k]):
                levels[k] = levels[k - 1]
        welds = _skin_welds(geo)
        lods = [_skin_lod(geo, tris, names[k], welds) for k, tris in enumerate(levels)]
    else:
        welds = _skin_welds(geo)
        for k in range(4):
            lods.append(_skin_lod(geo, geo.triangles, names[k], welds))
    return {"name": _raw(name), "lods": lods}


def _same_skin_geometry(geo: Geometry, lod: dict) -> bool:
    """LOD 0 of the original has the imported corners (origin, UV, weights)."""
    if int(lod.get("faceCount", 0)) <= 0 or "bindings" not in lod:
        return False
    vi = np.asarray(lod["vertexIndices"], np.int64)
    if len(vi) != geo.triangles.size:
        return False
    b = lod["bindings"]
    origin = np.asarray(b["origin"], np.float32) if isinstance(b, Ragged) else \
        np.array([x["origin"] for x in b], np.float32)
    uv = np.asarray(lod["uvs"], np.float32).reshape(-1, 2) if int(lod["uvCount"]) > 0 else None
    corners = geo.triangles.reshape(-1)
    if not np.allclose(origin[vi], geo.positions[corners], atol=1e-5, rtol=1e-6):
        return False
    if uv is not None:
        ui = np.asarray(lod["uvIndices"], np.int64)
        if not np.allclose(uv[ui], geo.uvs[corners], atol=1e-6):
            return False
    return True


def import_skins(scene: Scene, *, like: Document | None = None, out_name: str = "",
                 **options: Any) -> Document:
    joint_map = None
    if scene.skins:
        rest_at_bind(scene)                  # (the engine binds at the skeleton's frame 0)
        order = skeleton_order(scene)
        joint_map = _joint_maps(scene, order)
    sets = _mesh_sets(scene)
    geo = gather(scene, sets, "n3cskins", joint_map)
    _warn_static(scene, "n3cskins", "skins in their bind pose")
    return _skins_doc(scene, geo, like, options, _file_stem(out_name, scene.name or "skin"))


def _skins_doc(scene: Scene, geo: Geometry, like: Document | None, options: dict,
               fallback: str) -> Document:
    lroot = like.root if like is not None and like.format == "n3cskins" else None
    if lroot is not None and _same_skin_geometry(geo, lroot["lods"][0]):
        return Document("n3cskins", copy.deepcopy(lroot), dict(like.params),
                        bytes(like.trailing), [], dict(like.meta))
    name = options.get("name") or (text(lroot["name"]) if lroot else fallback)
    names = [text(l["name"]) for l in lroot["lods"]] if lroot else None
    if lroot is not None:
        scene.warnings.append("n3cskins: geometry edited; LODs regenerated (names kept)")
    return Document("n3cskins", skins_root(geo, name, progressive=not _no_lod(options),
                                           lod_names=names), {"skinBindings": 1}, b"", [], {})


# ----------------------------------------------------------------------------
# parts, plugs, characters


def _ref(folder: str, file: str) -> RawString:
    return _raw(f"{folder}\\{file}" if folder else file)


def import_part(scene: Scene, *, like: Document | None = None, out_name: str = "",
                **options: Any) -> list:
    stem = _file_stem(out_name, scene.name or "part")
    if scene.skins:
        rest_at_bind(scene)
    joint_map = _joint_maps(scene, skeleton_order(scene)) if scene.skins else None
    sets = merge_materials(scene, _mesh_sets(scene), "n3cpart")
    geo = gather(scene, sets, "n3cpart", joint_map)
    _warn_static(scene, "n3cpart", "skins in their bind pose")
    folder = str(options.get("folder", "item"))
    like_skins = _like_ref(like, "n3cpart", "geometry", "n3cskins")
    return _part_files(scene, geo, stem, folder, like, like_skins, options)


def _like_ref(like: Document | None, fmt: str, field: str, target: str) -> Document | None:
    """The document the original ``like`` references in ``field`` (found from
    beside the original, as the export found it), or None."""
    if like is None or not like.format.startswith(fmt):
        return None
    from ..resolver import Resolver
    doc = Resolver(like.source, None, limits=like.limits).load(like.root[field], Scene(), target)
    return doc if doc is not None and doc.format == target else None


def _part_files(scene: Scene, geo: Geometry, stem: str, folder: str,
                like: Document | None, like_skins: Document | None, options: dict) -> list:
    lroot = like.root if like is not None and like.format == "n3cpart" else None
    skins = _skins_doc(scene, geo, like_skins, options, stem)
    files: list = []
    tex_ref = lroot["texture"] if lroot is not None else _raw("")
    if options.get("textures", True) and lroot is None:
        tex = texture_file(scene, geo.material, stem, options)
        if tex is not None:
            files.append(tex)
            tex_ref = _ref(folder, tex[0])
    elif options.get("textures", True):
        files.extend(filter(None, [edited_texture(scene, geo.material, like, tex_ref, options)]))
    root = {"name": lroot["name"] if lroot is not None else _raw(options.get("name") or stem),
            "reserved": int(lroot["reserved"]) if lroot is not None else 0,
            "material": material_record(scene, geo.material,
                                        lroot["material"] if lroot is not None else None),
            "texture": tex_ref,
            "geometry": lroot["geometry"] if lroot is not None else _ref(folder, f"{stem}.n3cskins")}
    part = Document("n3cpart", root, dict(like.params) if lroot is not None else {},
                    bytes(like.trailing) if lroot is not None else b"", [],
                    dict(like.meta) if lroot is not None else {})
    skins_name = os.path.basename(text(root["geometry"]).replace("\\", "/")) or f"{stem}.n3cskins"
    return [(f"{stem}.n3cpart", part), (skins_name, skins), *files]


def _plug_matrix_n3(local: np.ndarray) -> np.ndarray:
    """glTF local matrix (column vectors) -> the N3 row-vector matrix."""
    from ....scene.xform import mirror_x_matrix
    return mirror_x_matrix(local).T


def import_plug(scene: Scene, *, like: Document | None = None, out_name: str = "",
                **options: Any) -> list:
    stem = _file_stem(out_name, scene.name or "plug")
    every = _mesh_sets(scene)
    sets = [s for s in every if s.skin is None]
    skinned = [s for s in every if s.skin is not None]
    world = world_matrices(scene)
    skins_written = not sets
    if sets:
        _warn_skinned_left_out(scene, skinned)
        # the plug's transform is its mesh node's (the first one); geometry in that frame
        node = sets[0].node
        frame, local = world[node], world[node]
        # the export's node extras name the joint; Blender drops extras unless asked
        # to keep them, and then the original's joint (--like) stands
        joint = (scene.nodes[node].extras or {}).get("joint")
        joint = int(joint) if isinstance(joint, (int, float)) and math.isfinite(joint) else -1
    else:
        sets = skinned
        if not sets:
            raise ImportError_("the scene has no mesh to make a plug from")
        # a weapon exported with its armature: rigid on its strongest joint, which the engine's
        # plug follows (at rest, in that joint's frame less its scale: an FBX rig's 0.01)
        node, joint = _strongest_joint(scene, sets)
        frame, local = trs_to_matrix(*decompose_matrix(world[node])[:2]), np.eye(4)
        scene.warnings.append(f"n3cplug: the mesh is skinned; taken in its rest pose on its "
                              f"strongest joint {scene.nodes[node].name!r} (joint {joint})")
    sets = merge_materials(scene, sets, "n3cplug")
    _warn_static(scene, "n3cplug", "a plug follows its joint", skins_written)
    frame, local = _unmirrored(scene, frame, local, stem)
    local = into_frame(scene, sets, frame, local, "n3cplug")
    geo = gather(scene, sets, "n3cplug")
    like_mesh = _like_ref(like, "n3cplug", "geometry", "n3pmesh")
    return _plug_files(scene, geo, stem, str(options.get("folder", "item")), like, like_mesh,
                       local, joint, options)


def _warn_skinned_left_out(scene: Scene, skinned: list) -> None:
    """A plug is the scene's rigid meshes when it has any (a weapon exported beside
    the body that holds it); name the skinned meshes that are therefore not written."""
    if not skinned:
        return
    names = list(dict.fromkeys(scene.nodes[s.node].name or f"node {s.node}" for s in skinned))
    tris = sum(s.triangle_count for s in skinned)
    scene.warnings.append(f"n3cplug: skinned mesh(es) {names} not written ({tris} triangles): "
                          "a plug is made of the rigid meshes; import to .n3cpart or .n3chr "
                          "for the skinned ones")


def _unmirrored(scene: Scene, frame: np.ndarray, local: np.ndarray, name: str) -> tuple:
    """(frame, local) of a plug whose transform mirrors (negative determinant,
    e.g. scale (-1, 1, 1)) with the mirror moved into its mesh.

    glTF draws a mirrored node's triangles with their winding reversed; the
    engine culls by screen-space winding and reverses nothing, so a mirroring
    plug matrix would show the weapon inside-out.  Mirroring the plug's own X axis in both
    matrices leaves ``frame · inverse(frame)`` unchanged (the world-space
    weapon is the same) while the plug matrix keeps a positive determinant;
    the mesh, taken into the new frame, is mirrored and rewound instead."""
    if np.linalg.det(local[:3, :3]) >= 0:
        return frame, local
    flip = np.diag([-1.0, 1.0, 1.0, 1.0])
    scene.warnings.append(f"{name}: the plug's transform mirrors; the mirror is baked into its "
                          "mesh (the engine would draw a mirroring plug inside-out)")
    return frame @ flip, local @ flip


def _strongest_joint(scene: Scene, sets: list) -> tuple[int, int]:
    """(node, N3 joint index) of the joint carrying the most skin weight over
    ``sets``: the bone a rigid weapon mesh is bound to."""
    total: dict = {}
    for s in sets:
        joints = scene.skins[s.skin].joints
        j = np.asarray(s.joints, np.int64).reshape(-1)
        w = np.asarray(s.weights, np.float64).reshape(-1)
        ok = (j >= 0) & (j < len(joints))
        w = np.where(np.isfinite(w) & (w > 0), w, 0.0)
        sums = np.bincount(j[ok], weights=w[ok], minlength=len(joints))
        for k in np.flatnonzero(sums):
            node = int(joints[k])
            total[node] = total.get(node, 0.0) + float(sums[k])
    if not total:        # (no usable weight at all: the skin's first joint)
        total = {int(scene.skins[sets[0].skin].joints[0]): 0.0}
    node = max(total, key=lambda n: (total[n], -n))
    order = skeleton_order(scene)
    return node, order.index(node) if node in order else 0


def _plug_files(scene: Scene, geo: Geometry, stem: str, folder: str, like: Document | None,
                like_mesh: Document | None, local: np.ndarray, joint: int,
                options: dict) -> list:
    lroot = like.root if like is not None and like.format.startswith("n3cplug") else None
    mesh = _pmesh_doc(scene, geo, like_mesh, options, stem)
    files: list = []
    if lroot is not None:
        root = copy.deepcopy(lroot)
        m = _plug_matrix_n3(local)
        scale = np.asarray(lroot["scale"], np.float64)
        old = np.asarray(lroot["rotation"], np.float64).reshape(4, 4)
        rebuilt = np.diag([*scale, 1.0]) @ old
        rebuilt[3, :3] = np.asarray(lroot["position"], np.float64) * scale
        rebuilt[3, 3] = 1.0
        if not np.allclose(rebuilt, m, atol=1e-5):
            root["position"] = [float(x) for x in m[3, :3]]
            rot = m.copy()
            rot[3, :3] = 0.0
            root["rotation"] = np.asarray(rot.reshape(-1), np.float32)
            root["scale"] = [1.0, 1.0, 1.0]
            scene.warnings.append(f"{stem}: plug moved; its transform is written unscaled")
        root["joint"] = int(joint) if joint >= 0 else int(lroot["joint"])
        root["material"] = material_record(scene, geo.material, lroot["material"])
        if options.get("textures", True):
            files.extend(filter(None, [edited_texture(scene, geo.material, like,
                                                      lroot["texture"], options)]))
    else:
        tex_ref = _raw("")
        if options.get("textures", True):
            tex = texture_file(scene, geo.material, stem, options)
            if tex is not None:
                files.append(tex)
                tex_ref = _ref(folder, tex[0])
        m = _plug_matrix_n3(local)
        rot = m.copy()
        rot[3, :3] = 0.0
        root = {"plugTrailer": 1, "name": _raw(options.get("name") or stem), "type": 0,
                "joint": max(int(joint), 0), "position": [float(x) for x in m[3, :3]],
                "rotation": np.asarray(rot.reshape(-1), np.float32), "scale": [1.0, 1.0, 1.0],
                "material": material_record(scene, geo.material), "geometry":
                _ref(folder, f"{stem}.n3pmesh"), "texture": tex_ref, "traceStep": 0,
                "useVMesh": 0}
    mesh_name = os.path.basename(text(root["geometry"]).replace("\\", "/")) or f"{stem}.n3pmesh"
    plug = Document("n3cplug", root, dict(like.params) if lroot is not None else {"plugTrailer": 1},
                    bytes(like.trailing) if lroot is not None else b"", [],
                    dict(like.meta) if lroot is not None else {})
    return [(f"{stem}.n3cplug", plug), (mesh_name, mesh), *files]


def import_chr(scene: Scene, *, like: Document | None = None, out_name: str = "",
               **options: Any) -> list:
    """The character and every file it references (see the module docstring)."""
    stem = _file_stem(out_name, scene.name or "character")
    folder = str(options.get("folder", "chr"))
    originals = _like_set(like)
    rigged = bool(scene.skins)
    if not rigged and not originals:
        raise ImportError_("the scene has no skin: a character needs a skeleton (export the "
                           "armature with the mesh)")
    order = skeleton_order(scene) if rigged else []
    ljoint, lanim = originals.get("joint"), originals.get("anim")
    like_scene = None
    if rigged and ljoint is not None:
        try:
            like_scene = like.codec.to_scene(like, source_path=like.source)
        except FormatError:
            like_scene = None
        if like_scene is not None:
            keep_frames(scene, like_scene, order)
            restore_clip_data(scene, {a.name: a.extras for a in like_scene.animations
                                      if a.extras})
    if rigged:
        rest_at_bind(scene)   # frame 0, where the engine binds the skins, is the bind pose
    joint_map = _joint_maps(scene, order) if rigged else None
    index = {n: i for i, n in enumerate(order)}
    files: list = []

    # skeleton and clips: the original's when the motion is unchanged
    anim_doc = None
    if rigged:
        motion_kept = False
        joint_names = clip_names = None
        if like_scene is not None:
            joint_names = like_names(scene, like_scene)
            clip_names = like_names(scene, like_scene, "animations")
            motion_kept = (lanim is not None or not scene.animations) and _same_motion(
                scene, like_scene, order, skeleton_order(like_scene))
        if motion_kept:
            joint_doc = _copy_doc(ljoint)
            anim_doc = _copy_doc(lanim) if lanim is not None else None
        else:
            if ljoint is not None:
                scene.warnings.append("n3joint/n3anim: skeleton or clips edited; rewritten on "
                                      "a new timeline")
            joint_doc = Document("n3joint", joint_root(scene, order, options.get("name"),
                                                       joint_names)[0],
                                 {"jointKeys": 4}, b"", [], {})
            anim_doc = Document("n3anim", anim_root(scene, clip_names), {}, b"", [], {}) \
                if scene.animations else None
        files.append((_file_of(like, "joint", f"{stem}.n3joint"), joint_doc))
        if anim_doc is not None:
            files.append((_file_of(like, "animationControl", f"{stem}.n3anim"), anim_doc))

    # parts: one per skinned (or, without a skeleton, bind-pose) mesh node
    all_sets = _mesh_sets(scene)
    parts_like = [x for x in originals.get("parts", []) if x[0] is not None]
    # without a skeleton, the parts are the meshes the export marked (or, when the
    # extras are gone, as after Blender, every mesh of a character that has parts)
    part_nodes = [i for i, n in enumerate(scene.nodes) if n.mesh is not None
                  and (n.skin is not None or not rigged and (n.extras.get("lods") is not None
                                                             or bool(parts_like)))]
    part_refs: list = []
    stems: set = {stem.lower()}                   # file stems written so far
    # a part has one material and texture: a mesh with several becomes several parts
    groups: list = []
    for node in part_nodes:
        node_sets = [s for s in all_sets if s.node == node]
        mats = list(dict.fromkeys(s.material for s in node_sets))
        for m in mats:
            base = _original_name(scene.nodes[node]) or f"part{len(groups)}"
            name = base if len(mats) == 1 else f"{base}_{_material_name(scene, m, mats.index(m))}"
            groups.append((name, [s for s in node_sets if s.material == m]))
    parts_like = _by_name([g[0] for g in groups], parts_like)
    for k, (pname, node_sets) in enumerate(groups):
        geo = gather(scene, node_sets, f"part {pname}", joint_map, empty_ok=True)
        if not len(geo.triangles):           # (gather warned: not written)
            continue
        lpart, lskins = parts_like[k]
        pstem = _stem(text(lpart.root["geometry"]).replace("\\", "/")) if lpart is not None \
            else _unique(f"{stem}_{_safe(pname)}", stems)
        pfiles = _part_files(scene, geo, pstem, "item", lpart, lskins,
                             {**options, "name": pname})
        if lpart is not None:
            pfiles[0] = (os.path.basename(lpart.source or pfiles[0][0]), pfiles[0][1])
        files.extend(pfiles)
        part_refs.append(_ref("item", pfiles[0][0]))

    # plugs: rigid mesh nodes under a joint (or beside the armature)
    plugs_like = [x for x in originals.get("plugs", []) if x[0] is not None]
    world, parents, plug_refs = world_matrices(scene), scene.parents(), []
    rigid = [i for i, n in enumerate(scene.nodes) if n.mesh is not None and n.skin is None
             and i not in part_nodes and any(s.node == i for s in all_sets)]  # (not lines only)
    plugs_like = _by_name([_original_name(scene.nodes[i]) for i in rigid], plugs_like)
    for k, node in enumerate(rigid):
        j = parents[node]
        while j is not None and j not in index:
            j = parents[j]
        if j is None and not order:
            scene.warnings.append(f"mesh {scene.nodes[node].name!r} has no joint; not written")
            continue
        if j is None:    # a mesh beside the armature: the root joint carries it
            j = order[0]
            scene.warnings.append(f"mesh {scene.nodes[node].name!r} is neither skinned nor under "
                                  f"a joint: written as a plug on the root joint "
                                  f"{scene.nodes[j].name!r}, which it follows in the game")
        node_sets = [s for s in all_sets if s.node == node]
        pname = _original_name(scene.nodes[node]) or f"plug{k}"
        frame, local = _unmirrored(scene, world[node], inverse_affine(world[j])[0] @ world[node],
                                   pname)
        local = into_frame(scene, node_sets, frame, local, f"plug {pname}")  # its own frame
        geo = gather(scene, node_sets, f"plug {pname}", empty_ok=True)
        if not len(geo.triangles):
            continue
        lplug, lmesh = plugs_like[k]
        pfiles = _plug_files(scene, geo, _unique(f"{stem}_{_safe(pname)}", stems), "item", lplug,
                             lmesh, local, index[j], {**options, "name": pname})
        if lplug is not None:
            pfiles[0] = (os.path.basename(lplug.source or pfiles[0][0]), pfiles[0][1])
        files.extend(pfiles)
        plug_refs.append(_ref("item", pfiles[0][0]))

    if not part_refs and not plug_refs:
        raise ImportError_("the scene has no skinned mesh or plug to make a character from")
    chr_doc = _chr_doc(scene, like, originals, stem, folder, files, part_refs, plug_refs,
                       anim_doc is not None, options)
    out = [(f"{stem}.n3chr", chr_doc)]
    seen = {out[0][0].lower()}
    for name, doc in files:
        if name.lower() not in seen:
            seen.add(name.lower())
            out.append((name, doc))
    return out


def _chr_doc(scene: Scene, like: Document | None, originals: dict, stem: str, folder: str,
             files: list, part_refs: list, plug_refs: list, has_anim: bool,
             options: dict) -> Document:
    """The .n3chr: the original's when its resolvable parts and plugs are the
    ones imported (references it could not resolve are kept as they were)."""
    if like is not None and like.format == "n3chr":
        lr = like.root
        resolved_parts = [i for i, x in enumerate(originals["parts"]) if x[0] is not None]
        resolved_plugs = [i for i, x in enumerate(originals["plugs"]) if x[0] is not None]
        if len(resolved_parts) == len(part_refs) and len(resolved_plugs) == len(plug_refs):
            return _copy_doc(like)
        scene.warnings.append("n3chr: parts or plugs added or removed; references rewritten")
        root = copy.deepcopy(lr)
        root["parts"], root["partCount"] = part_refs, len(part_refs)
        root["plugs"], root["plugCount"] = plug_refs, len(plug_refs)
        return Document("n3chr", root, dict(like.params), b"", [], dict(like.meta))
    joint_file = next((n for n, d in files if d.format == "n3joint"), f"{stem}.n3joint")
    anim_file = next((n for n, d in files if d.format == "n3anim"), f"{stem}.n3anim")
    t = {"name": _raw(options.get("name") or stem), "position": [0.0, 0.0, 0.0],
         "rotation": [0.0, 0.0, 0.0, 1.0], "scale": [1.0, 1.0, 1.0],
         "keys": [{"count": 0, "values": np.zeros((0, 0), np.float32)} for _ in range(3)],
         "collisionMesh": _raw(""), "climbMesh": _raw("")}
    root = {"transform": t, "joint": _ref(folder, joint_file), "partCount": len(part_refs),
            "parts": part_refs, "plugCount": len(plug_refs), "plugs": plug_refs,
            "animationControl": _ref(folder, anim_file) if has_anim else _raw(""),
            "jointPartStarts": np.array([-1, -1], np.int32),
            "jointPartEnds": np.array([-1, -1], np.int32), "fxPlug": _raw("")}
    return Document("n3chr", root, {}, b"", [], {})


def _material_name(scene: Scene, index: int | None, position: int) -> str:
    if index is not None and 0 <= index < len(scene.materials) and scene.materials[index].name:
        return _safe(scene.materials[index].name)
    return f"m{position}"


def _file_of(like: Document | None, field: str, default: str) -> str:
    if like is None or like.format != "n3chr":
        return default
    ref = text(like.root[field]).replace("\\", "/")
    return os.path.basename(ref) or default


def _like_set(like: Document | None) -> dict:
    """The original character's referenced documents (from beside its file)."""
    if like is None or like.format != "n3chr":
        return {}
    from ..resolver import Resolver
    res = Resolver(like.source, None, limits=like.limits)
    sink = Scene()

    def load(ref: Any, fmt: str):
        doc = res.load(ref, sink, fmt)
        return doc if doc is not None and doc.format.startswith(fmt) else None
    out: dict = {"joint": load(like.root["joint"], "n3joint"),
                 "anim": load(like.root["animationControl"], "n3anim"), "parts": [], "plugs": []}
    for ref in like.root["parts"]:
        p = load(ref, "n3cpart")
        out["parts"].append((p, load(p.root["geometry"], "n3cskins") if p is not None else None))
    for ref in like.root["plugs"]:
        p = load(ref, "n3cplug")
        out["plugs"].append((p, load(p.root["geometry"], "n3pmesh") if p is not None else None))
    return out


IMPORTERS = {"n3pmesh": import_pmesh, "n3cskins": import_skins, "n3cpart": import_part,
             "n3cplug": import_plug, "n3joint": import_joint, "n3anim": import_anim,
             "n3chr": import_chr}
