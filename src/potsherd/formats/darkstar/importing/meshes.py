"""The shape's mesh blocks (import, encoding step): one ``TS::CelAnimMesh`` v3
per object.

Vertices are welded on (positions of every frame, normal index), texture
vertices on uv; per frame ``origin = min`` and ``scale = (max - min) / 255``
and each byte the *rounded* step (the original exporter truncated: rounding
halves the error); the normal byte is the nearest of the engine's 256 normals
(lowest index on a tie); faces are wound back (the export reversed every
triangle).

:func:`mesh_blocks` encodes many objects at once: the objects with the same
frame count are welded, quantised and checked as one array (the object's index
a part of each weld key, its own minimum and maximum per frame by segment), so
a shape of many small meshes costs a few array passes, not a few per mesh; each
block is what encoding its object alone gives.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ....core.layout import Table
from ....scene.geometry import first_labels, vector_lengths, weld
from ..geometry import nearest_normals
from ..model import ObjectM
from ..pers import LAYOUT


def _tables(cls: str, version: int) -> dict[str, np.dtype]:
    """The record dtype of each table field of a (class, version) payload."""
    return {f.name: f.storage.table_dtype for f in LAYOUT.record(f"{cls} v{version}").fields
            if isinstance(f.storage, Table)}


def _block(cls: str, version: int, payload: dict) -> dict:
    name = cls.encode()
    return {"tag": b"PERS", "size": 0, "className": name, "namePad": b"\0" * (len(name) & 1),
            "version": version, "payload": payload, "slack": b"", "pad": b""}


def _table(dtype: np.dtype, rows: int, **cols: Any) -> np.ndarray:
    t = np.zeros(rows, dtype)
    for k, v in cols.items():
        t[k] = v
    return t


def quantise(frames: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bytes (F, V, 3) u8, scale (F, 3) f32, origin (F, 3) f32) per frame."""
    lo = frames.min(axis=1).astype(np.float32)
    hi = frames.max(axis=1).astype(np.float32)
    return _quantised(frames, lo, hi, None)


def _quantised(frames: np.ndarray, lo: np.ndarray, hi: np.ndarray,
               counts: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`quantise` given each frame's (or, with ``counts``, each segment of
    ``counts`` vertices') float32 minimum ``lo`` and maximum ``hi``."""
    scale = ((hi - lo) / np.float32(255)).astype(np.float32)
    safe = np.where(scale > 0, scale, 1).astype(np.float64)
    if counts is None:
        lo_v, safe_v, scale_v = lo[:, None, :], safe[:, None, :], scale[:, None, :]
    else:                            # each segment's values on each of its vertices
        lo_v, safe_v, scale_v = (np.repeat(x, counts, axis=1) for x in (lo, safe, scale))
    q = np.rint((frames - lo_v.astype(np.float64)) / safe_v)
    q = np.where(scale_v > 0, q, 0)
    return np.clip(q, 0, 255).astype(np.uint8), scale, lo


def _mapped(values: np.ndarray, mapping: dict, default: int = 0) -> np.ndarray:
    """``mapping.get(v, default)`` for each of the integers ``values``, as int64."""
    v = np.asarray(values, np.int64).reshape(-1)
    if not mapping or not len(v):
        return np.full(len(v), default, np.int64)
    keys = np.fromiter(mapping.keys(), np.int64, len(mapping))
    vals = np.fromiter(mapping.values(), np.int64, len(mapping))
    order = np.argsort(keys, kind="stable")
    keys, vals = keys[order], vals[order]
    at = np.minimum(np.searchsorted(keys, v), len(keys) - 1)
    return np.where(keys[at] == v, vals[at], default)


def _cross_areas(p: np.ndarray, tris: np.ndarray) -> np.ndarray:
    """Twice each triangle's area (``scene.geometry.flattened_triangles``' measure)."""
    c = np.take(p, tris, axis=0)
    return vector_lengths(np.cross(c[:, 1] - c[:, 0], c[:, 2] - c[:, 0]))


def _flat_after(q: np.ndarray, tris: np.ndarray) -> np.ndarray:
    """Whether each triangle of the byte vertices ``q`` (V, 3) has no area: its
    cross product is zero, exactly, in integers (what ``_cross_areas(q) == 0``
    finds in floats, whose squares of such small integers are exact too)."""
    c = np.take(q.astype(np.int32), tris, axis=0)
    e1, e2 = c[:, 1] - c[:, 0], c[:, 2] - c[:, 0]
    return ((e1[:, 1] * e2[:, 2] == e1[:, 2] * e2[:, 1]) & (e1[:, 2] * e2[:, 0] == e1[:, 0] * e2[:, 2])
            & (e1[:, 0] * e2[:, 1] == e1[:, 1] * e2[:, 0]))


def mesh_block(obj: ObjectM, material_map: dict, warnings: list) -> dict:
    """A ``TS::CelAnimMesh`` v3 for one object (see the module docstring)."""
    return mesh_blocks([obj], material_map, warnings)[0]


def mesh_blocks(objects: list, material_map: dict, warnings: list) -> list[dict]:
    """The mesh block of each of ``objects``, in order (see the module docstring)."""
    blocks: list = [None] * len(objects)
    lost: dict[int, int] = {}
    groups: dict[int, list] = {}
    for k, o in enumerate(objects):
        if o.frames.shape[1]:
            groups.setdefault(o.frames.shape[0], []).append(k)
        else:
            blocks[k] = _empty_block(o)
    if groups:
        order = [objects[k] for g in groups.values() for k in g]
        reps, label = _corner_reps(order)
        # each object's first corners, as its own corner numbers (the arrays are read
        # there, object by object: no copy of every corner of every object)
        starts = np.cumsum([0] + [o.frames.shape[1] for o in order])
        cut = np.searchsorted(reps, starts).tolist()
        own = [reps[a:b] - c for a, b, c in zip(cut, cut[1:], starts.tolist())]
        # the engine's normal of every distinct corner, in one search
        idx = nearest_normals(np.concatenate([np.take(o.normals.reshape(-1, 3), r, axis=0)
                                              for o, r in zip(order, own)]))
        at = 0
        for nf, members in groups.items():
            cs = np.cumsum([0] + [objects[k].frames.shape[1] for k in members])
            r0, r1 = cut[at], cut[at + len(members)]
            _encode_group([objects[k] for k in members], members, nf, cs,
                          (reps[r0:r1] - starts[at], own[at:at + len(members)],
                           label[starts[at]:starts[at] + cs[-1]] - r0, idx[r0:r1]),
                          material_map, blocks, lost)
            at += len(members)
    for k, o in enumerate(objects):
        if lost.get(k):
            warnings.append(f"mesh {o.name!r}: {lost[k]} of {o.frames.shape[1] // 3} triangles "
                            "flatten to lines in the format's 8-bit vertices (255 steps across "
                            "the mesh per axis); split the mesh into smaller ones for finer steps")
    return blocks


def _corner_reps(objs: list) -> tuple[np.ndarray, np.ndarray]:
    """``(reps, label)`` over the objects' corners one after another: the first
    corner of each set of corners known to be alike (``ObjectM.labels``: a vertex's
    corners; every corner its own where an object has none), ascending, and each
    corner's set.  Welding the first corners and handing each corner its set's
    vertex gives what welding every corner does, at a fraction of the rows."""
    keys, at = [], 0
    for o in objs:
        lab, c = o.labels, o.frames.shape[1]
        if lab is None or len(lab) != c:
            lab = np.arange(c)
        keys.append(np.asarray(lab, np.int64) + at)
        at += int(lab.max()) + 1 if c else 0
    return first_labels(np.concatenate(keys))


def _encode_group(objs: list, members: list, nf: int, cs: np.ndarray, alike: tuple,
                  material_map: dict, blocks: list, lost: dict) -> None:
    """The blocks of objects with ``nf`` frames each and corners ``cs[k]:cs[k + 1]``
    of the concatenation; ``alike`` is ``(reps, own, label, normal)``, the first
    corners of the sets of alike corners (:func:`_corner_reps`), the same as each
    object's own corner numbers, each corner's set, and each set's engine normal."""
    n = len(objs)
    reps, own, label, rep_normal = alike
    counts_c = np.diff(cs)
    oid = np.repeat(np.arange(n, dtype=np.uint32), counts_c)
    rep_frames = np.concatenate([np.take(o.frames, r, axis=1) for o, r in zip(objs, own)], axis=1)
    key = np.concatenate([oid[reps][:, None],
                          rep_frames.transpose(1, 0, 2).reshape(len(reps), -1).astype(np.float32)
                          .view(np.uint32),
                          rep_normal[:, None].astype(np.uint32)], axis=1)
    # welding the sets' first corners (in corner order) and composing: the same
    # first appearances and vertex of every corner as welding every corner
    vfirst, vremap = weld(key)
    vframes = np.take(rep_frames, vfirst, axis=1)
    vfirst, vremap = reps[vfirst], np.take(vremap, label)
    uv = np.concatenate([np.take(o.uvs, r, axis=0) for o, r in zip(objs, own)]).astype(np.float32)
    tfirst, tremap = weld(oid[reps], uv)
    uv_t = np.take(uv, tfirst, axis=0)
    tfirst, tremap = reps[tfirst], np.take(tremap, label)
    normal_idx = np.take(rep_normal, label)
    # each object's vertices (and texture vertices) are a run: the first appearances
    # of its corners' keys, which are the object's own
    vs = np.searchsorted(vfirst, cs)
    ts = np.searchsorted(tfirst, cs)
    counts_v = np.diff(vs)
    lo = np.minimum.reduceat(vframes, vs[:-1], axis=1).astype(np.float32)   # (F, n, 3)
    hi = np.maximum.reduceat(vframes, vs[:-1], axis=1).astype(np.float32)
    q, scale, origin = _quantised(vframes, lo, hi, counts_v)
    # triangles that flatten: an area before, none after (scene.geometry.flattened_triangles)
    # (the areas before only of the triangles with none after, usually none)
    tris = vremap.reshape(-1, 3)
    none_after = np.flatnonzero(_flat_after(q[0], tris))
    if len(none_after):
        b = vframes[0]
        corners = np.take(b, vremap, axis=0)
        extent = (np.maximum.reduceat(corners, cs[:-1], axis=0)
                  - np.minimum.reduceat(corners, cs[:-1], axis=0)).max(axis=1)
        tri_obj = oid[::3].astype(np.int64)[none_after]
        had = _cross_areas(b, tris[none_after]) > (1e-9 * extent * extent)[tri_obj]
        for k, c in enumerate(np.bincount(tri_obj[had], minlength=n).tolist()):
            if c:
                lost[members[k]] = c
    # in float64: the corners of a huge model square past float32's range
    decoded = q * np.repeat(scale, counts_v, axis=1).astype(np.float64) \
        + np.repeat(origin, counts_v, axis=1)
    radius = np.maximum.reduceat(vector_lengths(decoded), vs[:-1], axis=1).max(axis=0)
    mats = _mapped(np.concatenate([o.materials for o in objs]), material_map)
    # every object's tables made as one table of the group (each object's rows a run of
    # it) and handed out as slices: a few array passes, not a dozen calls per object
    t = _tables("TS::CelAnimMesh", 3)
    kv = np.repeat(np.arange(n), counts_v)                       # each vertex's object
    local = np.arange(len(vfirst)) - vs[kv]
    # vertex v of object k in frame f: row vs[k] * nf + f * nv[k] + local[v]
    row = ((vs[kv] * nf + local)[None, :] + np.arange(nf)[:, None] * counts_v[kv][None, :]).reshape(-1)
    verts_all = np.zeros(nf * len(vfirst), t["verts"])
    for c, name in enumerate(("x", "y", "z")):
        verts_all[name][row] = q[:, :, c].reshape(-1)
    verts_all["normal"][row] = np.tile(np.take(normal_idx, vfirst), nf)
    tv_all = _table(t["textureVerts"], len(tfirst), x=uv_t[:, 0], y=uv_t[:, 1])
    kc = np.repeat(np.arange(n), counts_c)                       # each corner's object
    tri_v = (vremap - vs[kc]).reshape(-1, 3)[:, [0, 2, 1]]       # back to the stored winding
    tri_t = (tremap - ts[kc]).reshape(-1, 3)[:, [0, 2, 1]]
    faces_all = _table(t["faces"], len(tri_v), vi1=tri_v[:, 0], ti1=tri_t[:, 0], vi2=tri_v[:, 1],
                       ti2=tri_t[:, 1], vi3=tri_v[:, 2], ti3=tri_t[:, 2], material=mats)
    sc, og = (x.transpose(1, 0, 2).reshape(-1, 3) for x in (scale, origin))   # object-major
    fr_all = _table(t["frames"], n * nf, firstVert=np.tile(np.arange(nf), n) * np.repeat(counts_v, nf),
                    scaleX=sc[:, 0], scaleY=sc[:, 1], scaleZ=sc[:, 2],
                    originX=og[:, 0], originY=og[:, 1], originZ=og[:, 2])
    bounds = zip(cs.tolist(), vs.tolist(), ts.tolist(), radius.tolist(),
                 cs[1:].tolist(), vs[1:].tolist(), ts[1:].tolist())
    for k, (c0, v0, t0, r, c1, v1, t1) in enumerate(bounds):
        nv = v1 - v0
        verts, tv = verts_all[v0 * nf:v1 * nf], tv_all[t0:t1]
        faces, fr = faces_all[c0 // 3:c1 // 3], fr_all[k * nf:(k + 1) * nf]
        payload = {"numVerts": len(verts), "mVertsPerFrame": nv, "numTexVerts": len(tv),
                   "numFaces": len(faces), "numFrames": nf, "mTextureVertsPerFrame": len(tv),
                   "radius": r, "verts": verts, "textureVerts": tv,
                   "faces": faces, "frames": fr}
        blocks[members[k]] = _block("TS::CelAnimMesh", 3, payload)


def _empty_block(obj: ObjectM) -> dict:
    """The block of an object without corners."""
    nf = obj.frames.shape[0]
    t = _tables("TS::CelAnimMesh", 3)
    fr = _table(t["frames"], nf, firstVert=0)
    payload = {"numVerts": 0, "mVertsPerFrame": 0, "numTexVerts": 0, "numFaces": 0,
               "numFrames": nf, "mTextureVertsPerFrame": 0, "radius": 0.0,
               "verts": _table(t["verts"], 0), "textureVerts": _table(t["textureVerts"], 0),
               "faces": _table(t["faces"], 0), "frames": fr}
    return _block("TS::CelAnimMesh", 3, payload)


def bounds_mesh(lo: np.ndarray, hi: np.ndarray) -> dict:
    """The utility ``bounds`` mesh stock shapes carry: two vertices, the box corners."""
    corners = np.stack([lo, hi]).astype(np.float64)[None]
    q, scale, origin = quantise(corners)
    t = _tables("TS::CelAnimMesh", 3)
    payload = {"numVerts": 2, "mVertsPerFrame": 2, "numTexVerts": 0, "numFaces": 0, "numFrames": 1,
               "mTextureVertsPerFrame": 0,
               "radius": float(max(np.linalg.norm(lo), np.linalg.norm(hi))),
               "verts": _table(t["verts"], 2, x=q[0, :, 0], y=q[0, :, 1], z=q[0, :, 2], normal=0),
               "textureVerts": _table(t["textureVerts"], 0), "faces": _table(t["faces"], 0),
               "frames": _table(t["frames"], 1, firstVert=0, scaleX=scale[0, 0], scaleY=scale[0, 1],
                                scaleZ=scale[0, 2], originX=origin[0, 0], originY=origin[0, 1],
                                originZ=origin[0, 2])}
    return _block("TS::CelAnimMesh", 3, payload)
