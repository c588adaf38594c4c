"""Knight Online documents as neutral scenes (glTF export); docs/formats/knight-online.md.

Conventions applied here (the scene model wants glTF's): N3 is left-handed,
Y up, row vectors, and a model's forward is its local +Z (the client moves a
character along (0, 0, 1) times its rotation).  glTF's front is +Z too, so the
handedness change mirrors X: positions and normals become (-x, y, z),
quaternions (x, -y, -z, w), matrices S·M·S with S = diag(-1, 1, 1), and every
triangle's winding is reversed.  No V flip (both are top-left).

Names: glTF tools refuse duplicate node and animation names (characters carry
``end_site`` eight times), so repeated names get a ``.N`` suffix and the file's
own name is kept in ``extras.originalName``.

* ``.n3pmesh``: the full-detail mesh, reached by replaying every collapse
  (section 10.5); the LOD table goes to ``extras``.
* ``.n3shape``: the transform node, one child per part (translated by the
  pivot) with the part's progressive mesh and texture.
* ``.n3joint``: the skeleton (pre-order) at frame 0 plus one "timeline"
  animation over every key.
* ``.n3cskins`` / ``.n3cpart``: LOD 0 (option ``lod``) in its bind pose (``binding.origin``),
  or skinned to the ``skeleton`` option (.n3joint) with the clips of ``animation`` (.n3anim).
* ``.n3cplug``: the referenced plug mesh under its transform; the inline mesh of
  ``useVMesh`` plugs is an effect card (``fx_...``), exported with ``fx_meshes=1``.
* ``.n3chr``: skeleton, one skinned mesh per part (LOD 0, unwelded corners,
  top-4 weights), plugs under their joints, one animation per ``.n3anim`` clip.

Referenced files (``chr\\x.n3joint``, backslashes, any case) are looked up in
the ``data_root`` option, else in each folder above the source file.
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from ...core.errors import FormatError, ValueFormatError
from ...core.layout import Ragged
from ...scene import (Animation, Channel, Mesh, Primitive, Scene, Skin, flip_winding,
                      limit_influences, quat_multiply, quat_normalize, quat_slerp, weld)
from ...scene.xform import inverse_affine, mirror_x, mirror_x_matrix, mirror_x_quat
from .info import replay_pmesh
from .resolver import CLIENT_LAYOUT, Resolver  # noqa: F401  (zone.py and the tests take them from here)
from .scene_materials import Materials, _finite
from .text import text
from .wire import record_columns

FRAME_RATE = 30.0  # one n3joint timeline "frame" per 1/30 s
MAX_INFLUENCES = 4


class UnresolvedReferencesError(FormatError):
    """A file that is only references (an .n3chr) whose referenced files were
    not found: there is nothing to export until ``--data-root`` points at the
    client's data folder.  ``missing_references`` lets batch tools tell this
    apart from a damaged file."""

    missing_references = True


# ----------------------------------------------------------------------------
# reference resolution


# ----------------------------------------------------------------------------
# meshes


def pmesh_counts_at_vertex_count(m: dict, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The vertex and index counts :func:`pmesh_at_vertex_count` reaches for each of
    ``targets``, without touching the index buffer: the same stopping rule on the
    prefix sums of the records (for callers that search many targets)."""
    lose_i, lose_v, keep_going = (np.asarray(c, np.int64) for c in record_columns(
        m["collapses"], "collapse", "indicesToLose", "verticesToLose", "shouldCollapse"))
    nv0, ni0 = int(m["minVertexCount"]), int(m["minIndexCount"])
    count = len(lose_v)
    after = nv0 + np.cumsum(lose_v)
    before = after - lose_v
    done_i = ni0 + np.concatenate([[0], np.cumsum(lose_i)])       # indices after k splits
    done_v = np.concatenate([[nv0], after])
    t = np.asarray(targets, np.int64).reshape(-1)
    if (lose_v < 0).any():          # (a hostile file's counts: the loop's own answer)
        got = [pmesh_at_vertex_count(m, int(x))[:2] for x in t]
        return (np.array([g[0] for g in got], np.int64), np.array([g[1] for g in got], np.int64))
    # k, the splits of the first loop: records up to the first whose vertex count
    # before is the target's or whose count after passes it (both grow with k)
    fail_after = np.searchsorted(after, t, side="right")          # first k with after > t
    fail_before = np.searchsorted(before, t, side="left")         # first k with before >= t
    k = np.minimum(fail_after, fail_before) if count else np.zeros(len(t), np.int64)
    # then the flagged ones that follow: up to the next unflagged record
    unflagged = np.append(np.flatnonzero(keep_going == 0), count)
    k = unflagged[np.searchsorted(unflagged, k)]
    return done_v[k], done_i[k]


def pmesh_at_vertex_count(m: dict, target: int) -> tuple[int, int, np.ndarray]:
    """The engine's ``SetLODByNumVertices`` from the stored lowest detail: split
    collapses in file order while the next one does not overshoot ``target``,
    then keep splitting while the next collapse is flagged ``shouldCollapse``
    (a group that must not be cut).  Returns (vertex count, index count, indices)."""
    idx = np.array(m["indices"], dtype=np.int64)
    changes = np.asarray(m["indexChanges"], dtype=np.int64)
    lose_i, lose_v, offset, change, keep_going = record_columns(
        m["collapses"], "collapse", "indicesToLose", "verticesToLose", "indexChangesOffset",
        "indicesToChange", "shouldCollapse")
    count = len(lose_v)
    nv, ni = int(m["minVertexCount"]), int(m["minIndexCount"])
    k = 0

    def split(k: int) -> None:
        nonlocal nv, ni
        ni += lose_i[k]
        nv += lose_v[k]
        lo = max(offset[k], 0)
        sel = changes[lo:lo + max(change[k], 0)]
        idx[sel[(sel >= 0) & (sel < len(idx))]] = nv - 1

    while k < count and target > nv:
        if lose_v[k] + nv > target:
            break  # the engine's anti-flicker guard
        split(k)
        k += 1
    while k < count and keep_going[k]:
        split(k)
        k += 1
    return nv, ni, idx


def pmesh_lod_vertices(m: dict, lod: int | None) -> int | None:
    """Vertex count of LOD record ``lod`` (None: full detail).  Record 0 is the
    nearest; an index outside the table is an error naming the valid range."""
    if lod is None:
        return None
    lods = m["lods"]
    if len(lods) == 0:
        if lod == 0:
            return None
        raise ValueFormatError(f"lod {lod} is out of range: {text(m['name']) or 'the mesh'} "
                               "has no LOD records (valid: 0)", path="lods")
    if not 0 <= lod < len(lods):
        raise ValueFormatError(f"lod {lod} is out of range: valid LODs are 0..{len(lods) - 1}",
                               path="lods")
    return int(lods[lod]["vertexCount"])


def pmesh_primitive(m: dict, scene: Scene, material: int | None = None,
                    lod: int | None = None) -> Primitive | None:
    """The triangle list of a progressive mesh (mirrored): full detail, or the
    detail the engine shows for LOD record ``lod``."""
    verts = np.asarray(m["vertices"], np.float32).reshape(-1, 8)
    target = pmesh_lod_vertices(m, lod)
    if target is None:
        nv, ni, idx = replay_pmesh(m)
    else:
        nv, ni, idx = pmesh_at_vertex_count(m, target)
        verts = verts[:max(min(nv, len(verts)), 0)]
    idx = idx[: max(min(ni, len(idx)), 0) // 3 * 3]
    if len(verts) == 0 or len(idx) == 0:
        return None
    tri = idx.reshape(-1, 3)
    good = np.all((tri >= 0) & (tri < len(verts)), axis=1)
    if not good.all():
        scene.warnings.append(f"{text(m['name'])}: {int((~good).sum())} triangles with "
                              "out-of-range indices dropped")
        tri = tri[good]
    return Primitive(positions=mirror_x(verts[:, :3]).astype(np.float32),
                     normals=mirror_x(verts[:, 3:6]).astype(np.float32),
                     uvs=[verts[:, 6:8].copy()],
                     indices=flip_winding(tri.reshape(-1)).astype(np.uint32),
                     material=material)


def pmesh_extras(m: dict) -> dict:
    return {"lods": [{"distance": _finite([l["distance"]])[0], "vertexCount": int(l["vertexCount"])}
                     for l in m["lods"]],
            "minVertexCount": int(m["minVertexCount"]), "minIndexCount": int(m["minIndexCount"])}


def _influences(b: Ragged) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(origins, joints, weights) of a skin's bindings, one row per vertex and
    as many columns as the most influences: one influence is weight 1 (the
    file stores no weight for it), none is joint 0 with weight 1
    (docs/formats/knight-online.md)."""
    origin = np.asarray(b["origin"], np.float32)
    counts = np.maximum(b["count"].astype(np.int64), 0)
    n = len(counts)
    k = max(int(counts.max()), 1)
    joints = np.zeros((n, k), np.int64)
    weights = np.zeros((n, k), np.float64)
    rows = np.repeat(np.arange(n), counts)
    cols = np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)
    joints[rows, cols] = b["joints"]
    many = counts > 1
    wrows = np.repeat(np.arange(n)[many], counts[many])
    wcols = np.arange(len(wrows)) - np.repeat(np.cumsum(counts[many]) - counts[many], counts[many])
    weights[wrows, wcols] = b["weights"]
    weights[~many, 0] = 1.0
    return origin, joints, weights


def skin_arrays(sk: dict, scene: Scene) -> dict | None:
    """LOD geometry unwelded per (position index, UV index) corner (docs/formats/knight-online.md)."""
    f, v = int(sk["faceCount"]), int(sk["vertexCount"])
    if f <= 0 or v <= 0 or "positionNormals" not in sk:
        return None
    pn = np.asarray(sk["positionNormals"], np.float32).reshape(-1, 6)
    vi = np.asarray(sk["vertexIndices"], np.int64)
    if vi.size == 0 or vi.max() >= len(pn):
        scene.warnings.append(f"{text(sk['name'])}: vertex index out of range; LOD skipped")
        return None
    has_uv = "uvs" in sk and int(sk["uvCount"]) > 0
    if has_uv:
        uv = np.asarray(sk["uvs"], np.float32).reshape(-1, 2)
        ui = np.asarray(sk["uvIndices"], np.int64)
        if ui.max() >= len(uv):
            scene.warnings.append(f"{text(sk['name'])}: UV index out of range; UVs dropped")
            has_uv = False
    first, remap = weld(vi, ui) if has_uv else weld(vi)
    pos_idx = vi[first]
    origin = pn[:, :3]
    bindings = sk.get("bindings")
    joints = weights = None
    if isinstance(bindings, Ragged) and len(bindings):
        origin, joints, weights = _influences(bindings)
        bindings = None
    if bindings:
        origin = np.array([b["origin"] for b in bindings], np.float32)
        counts = np.array([max(int(b["count"]), 0) for b in bindings])
        k = max(int(counts.max()), 1)
        joints = np.zeros((len(bindings), k), np.int64)
        weights = np.zeros((len(bindings), k), np.float64)
        for n, b in enumerate(bindings):
            c = counts[n]
            if c == 0:
                weights[n, 0] = 1.0  # no influence: bound to joint 0 (docs/formats/knight-online.md)
            elif c == 1:
                joints[n, 0] = int(b["joints"][0])
                weights[n, 0] = 1.0
            else:
                joints[n, :c] = b["joints"]
                weights[n, :c] = b["weights"]
    out = {"positions": mirror_x(origin[pos_idx]).astype(np.float32),
           "normals": mirror_x(pn[pos_idx, 3:6]).astype(np.float32),
           "indices": flip_winding(remap).astype(np.uint32),
           "uvs": [uv[ui[first]]] if has_uv else []}
    if joints is not None:
        out["joints"], out["weights"] = joints[pos_idx], weights[pos_idx]
    return out


# ----------------------------------------------------------------------------
# keys, joints and animation (docs/formats/knight-online.md)


class KeyTrack:
    """One N3 key channel sampled on the 30 fps timeline."""

    def __init__(self, key: dict, width: int) -> None:
        vals = np.asarray(key.get("values", ()), np.float64)
        self.ok = (int(key["count"]) > 0 and vals.ndim == 2 and vals.shape[1] == width
                   and len(vals) > 0 and np.isfinite(key.get("samplingRate", 0))
                   and float(key.get("samplingRate", 0)) > 0)
        self.values = vals if self.ok else None
        self.rate = float(key["samplingRate"]) if self.ok else 30.0
        self.quat = width == 4

    def frames(self) -> np.ndarray:
        return np.arange(len(self.values)) * FRAME_RATE / self.rate

    def sample(self, frames: np.ndarray) -> np.ndarray:
        t = np.asarray(frames, np.float64) * self.rate / FRAME_RATE
        n = len(self.values)
        i0 = np.clip(np.floor(t).astype(np.int64), 0, n - 1)
        i1 = np.minimum(i0 + 1, n - 1)
        a = np.clip(t - np.floor(t), 0.0, 1.0)
        a = np.where(t < 0, 0.0, a)
        v0, v1 = self.values[i0], self.values[i1]
        if self.quat:
            return quat_slerp(v0, v1, a)
        return v0 + (v1 - v0) * a[:, None]


class Joint:
    def __init__(self, rec: dict, parent: int | None) -> None:
        keys = rec["keys"]
        self.name = text(rec["name"])
        self.parent = parent
        self.static_pos = np.asarray(rec["position"], np.float64)
        self.static_rot = np.asarray(rec["rotation"], np.float64)
        self.static_scale = np.asarray(rec["scale"], np.float64)
        self.pos = KeyTrack(keys[0], 3)
        self.rot = KeyTrack(keys[1], 4)
        self.scale = KeyTrack(keys[2], 3)
        self.orient = KeyTrack(keys[3], 4) if len(keys) > 3 else None
        if self.orient is not None and not self.orient.ok:
            self.orient = None

    def translation(self, frames: np.ndarray) -> np.ndarray:
        v = self.pos.sample(frames) if self.pos.ok else np.tile(self.static_pos, (len(frames), 1))
        return mirror_x(v)

    def rotation(self, frames: np.ndarray) -> np.ndarray:
        q = self.rot.sample(frames) if self.rot.ok else np.tile(self.static_rot, (len(frames), 1))
        if self.orient is not None:  # D3DX "q_rot then q_orient" = q_orient (x) q_rot
            q = quat_multiply(self.orient.sample(frames), q)
        return mirror_x_quat(quat_normalize(q))

    def scaling(self, frames: np.ndarray) -> np.ndarray:
        if self.scale.ok:
            return self.scale.sample(frames)
        return np.tile(self.static_scale, (len(frames), 1))

    def rotation_frames(self) -> list[np.ndarray]:
        out = [self.rot.frames()] if self.rot.ok else []
        if self.orient is not None:
            out.append(self.orient.frames())
        return out


def flatten_joints(root: dict) -> list[Joint]:
    """Joints in depth-first pre-order (the order every index refers to)."""
    out: list[Joint] = []
    stack: list[tuple[dict, int | None]] = [(root, None)]
    while stack:
        rec, parent = stack.pop()
        out.append(Joint(rec, parent))
        me = len(out) - 1
        for child in reversed(rec["children"]):
            stack.append((child, me))
    return out


def add_skeleton(scene: Scene, joints: list[Joint], parent: int | None = None) -> list[int]:
    """Joint nodes at frame 0; returns their node indices (pre-order)."""
    zero = np.zeros(1)
    nodes: list[int] = []
    warned = False
    for j in joints:
        s = j.scaling(zero)[0]
        r = j.rotation(zero)[0]
        if not warned and not np.allclose(s, s[0]) and not np.allclose(np.abs(r[3]), 1.0):
            scene.warnings.append("non-uniform joint scale after rotation is approximated by TRS")
            warned = True
        nodes.append(scene.add_node(
            name=j.name or f"joint{len(nodes)}", translation=j.translation(zero)[0].tolist(),
            rotation=r.tolist(), scale=s.tolist(),
            parent=nodes[j.parent] if j.parent is not None else parent))
    return nodes


def world_matrices(scene: Scene, nodes: list[int], joints: list[Joint]) -> np.ndarray:
    from ...scene import trs_to_matrix
    out = np.zeros((len(nodes), 4, 4))
    for i, (n, j) in enumerate(zip(nodes, joints)):
        node = scene.nodes[n]
        local = trs_to_matrix(np.asarray(node.translation), np.asarray(node.rotation),
                              np.asarray(node.scale))
        out[i] = local if j.parent is None else out[j.parent] @ local
    return out


def _clip_frames(tracks: list[np.ndarray], start: float, end: float) -> np.ndarray:
    inner = [f[(f > start) & (f < end)] for f in tracks]
    frames = np.unique(np.concatenate([[start, end], *inner])) if end > start else np.array([start])
    return frames


def joint_animation(name: str, joints: list[Joint], nodes: list[int], start: float, end: float,
                    fps: float, extras: dict | None = None) -> Animation | None:
    """One glTF animation for the frame range [start, end] played at ``fps``."""
    if not (np.isfinite(start) and np.isfinite(end) and np.isfinite(fps)) or fps <= 0:
        fps = FRAME_RATE if not (np.isfinite(fps) and fps > 0) else fps
        if not (np.isfinite(start) and np.isfinite(end)):
            return None
    anim = Animation(name=name, extras=dict(extras or {}))
    for j, node in zip(joints, nodes):
        channels = [("translation", [j.pos.frames()] if j.pos.ok else [], j.translation),
                    ("rotation", j.rotation_frames(), j.rotation),
                    ("scale", [j.scale.frames()] if j.scale.ok else [], j.scaling)]
        for path, tracks, fn in channels:
            if not tracks:
                continue
            frames = _clip_frames(tracks, start, end)
            values = fn(frames)
            anim.channels.append(Channel(node=node, path=path,
                                         times=((frames - start) / fps).astype(np.float32),
                                         values=values.astype(np.float32)))
    return anim if anim.channels else None


def timeline_end(joints: list[Joint]) -> float:
    ends = [float(t.frames()[-1]) for j in joints
            for t in (j.pos, j.rot, j.scale, j.orient) if t is not None and t.ok]
    return max(ends, default=0.0)


def clip_extras(c: Any) -> dict:
    """An .n3anim clip record's data as its glTF animation's extras (what a
    glTF animation cannot say: frame rate, trace, sound and strike frames, blending)."""
    start, end, fps = float(c["start"]), float(c["end"]), float(c["fps"])
    meta = _finite(c["metadata"])
    return {"frames": [start, end] if np.isfinite(start) and np.isfinite(end) else None,
            "fps": fps if np.isfinite(fps) else None,
            "traceFrames": meta[0:2], "soundFrames": meta[2:4], "blendTime": meta[4],
            "blendFlags": int(c["flags"]), "strikeFrames": _finite(c["strikeValues"])}


def add_clips(scene: Scene, anim_doc: Any, joints: list[Joint], nodes: list[int]) -> None:
    for n, c in enumerate(anim_doc.root["clips"]):
        start, end, fps = float(c["start"]), float(c["end"]), float(c["fps"])
        extras = clip_extras(c)
        a = joint_animation(text(c["name"]) or f"clip{n}", joints, nodes, start, end, fps, extras)
        if a is not None:
            scene.add_animation(a)


# ----------------------------------------------------------------------------
# per-format scenes


def _scene(doc: Any, options: dict) -> tuple[Scene, Resolver, Materials]:
    src = options.get("source_path") or doc.source
    scene = Scene(name=os.path.basename(src) if src else doc.format)
    resolver = Resolver(src, options.get("data_root"), limits=doc.limits,
                        given=(options.get("skeleton"), options.get("animation")))
    return scene, resolver, Materials(scene, resolver)


def _check_not_opaque(doc: Any) -> None:
    if doc.params.get("opaque"):
        raise NotImplementedError("the file's layout is unknown (kept opaque)")


def scene_pmesh(doc: Any, **options: Any) -> Scene:
    _check_not_opaque(doc)
    scene, _, mats = _scene(doc, options)
    m = doc.root
    lod = options.get("lod")
    prim = pmesh_primitive(m, scene, mats.get(None, b"", text(m["name"]) or "mesh"),
                           lod=None if lod is None else int(lod))
    node = scene.add_node(name=text(m["name"]) or "mesh", extras=pmesh_extras(m))
    if prim is not None:
        scene.nodes[node].mesh = scene.add_mesh(Mesh(name=text(m["name"]), primitives=[prim]))
    return scene


def _transform_trs(t: dict) -> dict:
    q = np.asarray(t["rotation"], np.float64)
    rot = [0.0, 0.0, 0.0, 1.0] if q[3] == 0 or not np.isfinite(q).all() else \
        mirror_x_quat(quat_normalize(q)).tolist()  # the engine skips w == 0 rotations
    return {"translation": mirror_x(np.asarray(t["position"], np.float64)).tolist(),
            "rotation": rot, "scale": [float(x) for x in t["scale"]]}


def add_shape(scene: Scene, resolver: Resolver, mats: Materials, r: dict,
              parent: int | None = None) -> int:
    t = r["transform"]
    root = scene.add_node(name=text(t["name"]) or "shape", parent=parent, **_transform_trs(t),
                          extras={"keys": [int(k["count"]) for k in t["keys"]]})
    tracks = [Joint(t, None)]
    if any(k.ok for k in (tracks[0].pos, tracks[0].rot, tracks[0].scale)):
        # docs/formats/knight-online.md: a shape's transform keys play as one animation over their range
        end = timeline_end(tracks)
        a = joint_animation(f"{text(t['name']) or 'shape'} keys", tracks, [root], 0.0, end,
                            FRAME_RATE, {"frames": [0.0, end]})
        if a is not None:
            scene.add_animation(a)
    for n, part in enumerate(r["parts"]):
        textures = [text(x) for x in part["textures"]]
        mat = mats.get(part["material"], part["textures"][0] if part["textures"] else b"",
                       f"part{n}", stage_from_file=True)
        node = scene.add_node(name=text(part["mesh"]) or f"part{n}", parent=root,
                              translation=mirror_x(np.asarray(part["pivot"], np.float64)).tolist(),
                              extras={"textures": textures,
                                      "textureFps": _finite([part["textureFps"]])[0]})
        mdoc = resolver.load(part["mesh"], scene, "mesh")
        if mdoc is None or mdoc.format != "n3pmesh" or mdoc.params.get("opaque"):
            continue
        prim = pmesh_primitive(mdoc.root, scene, mat)
        if prim is not None:
            scene.nodes[node].mesh = scene.add_mesh(Mesh(name=text(part["mesh"]), primitives=[prim]))
    return root


def scene_shape(doc: Any, **options: Any) -> Scene:
    _check_not_opaque(doc)
    scene, resolver, mats = _scene(doc, options)
    add_shape(scene, resolver, mats, doc.root)
    return scene


def scene_joint(doc: Any, **options: Any) -> Scene:
    scene, _, _ = _scene(doc, options)
    joints = flatten_joints(doc.root)
    nodes = add_skeleton(scene, joints)
    end = timeline_end(joints)
    a = joint_animation("timeline", joints, nodes, 0.0, end, FRAME_RATE,
                        {"frames": [0.0, end]})
    if a is not None:
        scene.add_animation(a)
    return scene


def _skin_mesh(scene: Scene, sk: dict, material: int, name: str, skinned: bool,
               joint_count: int) -> tuple[int | None, int]:
    arrays = skin_arrays(sk, scene)
    if arrays is None:
        return None, 0
    prim = Primitive(positions=arrays["positions"], normals=arrays["normals"], uvs=arrays["uvs"],
                     indices=arrays["indices"], material=material)
    truncated = 0
    if skinned and "joints" in arrays:
        j, w = arrays["joints"], arrays["weights"]
        bad = (j < 0) | (j >= joint_count)
        if bad.any():
            scene.warnings.append(f"{name}: {int(bad.sum())} influences name missing joints; "
                                  "bound to joint 0")
            j = np.where(bad, 0, j)
        prim.joints, prim.weights, truncated = limit_influences(j, w, MAX_INFLUENCES)
        if truncated:
            prim.extras["truncatedInfluences"] = truncated
            scene.warnings.append(f"{name}: {truncated} vertices had more than {MAX_INFLUENCES} "
                                  "influences; kept the largest, renormalised")
    return scene.add_mesh(Mesh(name=name, primitives=[prim])), truncated


SKIN_LODS = 4


def _lod(options: dict) -> int:
    """The skin LOD to export: option ``lod`` (0 = most detailed, the default);
    anything outside 0..3 is an error, not a silent clamp."""
    value = options.get("lod")
    if value is None:
        return 0
    try:
        lod = int(value)
    except (TypeError, ValueError):
        raise ValueFormatError(f"lod {value!r} is not a number (valid LODs are 0..3)") from None
    if not 0 <= lod < SKIN_LODS:
        raise ValueFormatError(f"lod {lod} is out of range: valid LODs are 0..{SKIN_LODS - 1}",
                               path="lods")
    return lod


def _lod_extras(skins: dict) -> list:
    return [{"faces": int(s["faceCount"]), "vertices": int(s["vertexCount"])} for s in skins["lods"]]


def _skinned_node(scene: Scene, resolver: Resolver, skins: dict, mat: int, name: str,
                  options: dict) -> None:
    """A skin LOD as a mesh: in its bind pose, or bound to the skeleton of the
    ``skeleton`` option (an .n3joint path or client reference) and animated by
    the clips of the ``animation`` option (.n3anim)."""
    joints, nodes, skin = ([], [], None)
    if options.get("skeleton"):
        joints, nodes, skin = add_rig(scene, resolver, options["skeleton"])
    lod = skins["lods"][_lod(options)] if "lods" in skins else skins
    mesh, _ = _skin_mesh(scene, lod, mat, name, skin is not None, len(nodes))
    scene.add_node(name=name, mesh=mesh, skin=skin if mesh is not None else None,
                   extras={"lods": _lod_extras(skins)} if "lods" in skins else {})
    if joints and options.get("animation"):
        adoc = resolver.load(options["animation"], scene, "animation")
        if adoc is not None and adoc.format == "n3anim":
            add_clips(scene, adoc, joints, nodes)


def scene_skins(doc: Any, **options: Any) -> Scene:
    scene, resolver, mats = _scene(doc, options)
    r = doc.root
    _skinned_node(scene, resolver, r, mats.get(None, b"", "skin"), text(r["name"]) or "skin",
                  options)
    return scene


def scene_part(doc: Any, **options: Any) -> Scene:
    scene, resolver, mats = _scene(doc, options)
    r = doc.root
    mat = mats.get(r["material"], r["texture"], text(r["name"]) or "part")
    skins = resolver.load(r["geometry"], scene, "skins")
    if skins is not None and skins.format == "n3cskins":
        _skinned_node(scene, resolver, skins.root, mat, text(r["name"]) or "part", options)
    else:
        scene.add_node(name=text(r["name"]) or "part")
    return scene


def _plug_matrix(r: dict) -> np.ndarray:
    """Row-vector Scale(scale) · rotation, translation position ⊙ scale (docs/formats/knight-online.md)."""
    rot = np.asarray(r["rotation"], np.float64).reshape(4, 4)
    scale = np.asarray(r["scale"], np.float64)
    m = np.diag([*scale, 1.0]) @ rot
    m[3, :3] = np.asarray(r["position"], np.float64) * scale
    m[3, 3] = 1.0
    return mirror_x_matrix(m.T)


def add_plug(scene: Scene, resolver: Resolver, mats: Materials, r: dict,
             parent: int | None, fx_meshes: bool = False) -> int:
    mat = mats.get(r["material"], r["texture"], text(r["name"]) or "plug")
    m = _plug_matrix(r)
    node = scene.add_node(name=text(r["name"]) or "plug", parent=parent,
                          matrix=m if np.isfinite(m).all() else None,
                          extras={"joint": int(r["joint"]), "type": int(r["type"])})
    mdoc = resolver.load(r["geometry"], scene, "mesh")
    if mdoc is not None and mdoc.format == "n3pmesh" and not mdoc.params.get("opaque"):
        prim = pmesh_primitive(mdoc.root, scene, mat)
        if prim is not None:
            scene.nodes[node].mesh = scene.add_mesh(Mesh(name=text(mdoc.root["name"]),
                                                         primitives=[prim]))
    if r.get("useVMesh") and "vmesh" in r:
        # The inline mesh is the plug's effect mesh (real ones are named fx_..., a
        # flat glow card around the weapon), not the weapon itself, which is the
        # referenced .n3pmesh.  Exported only on request (option fx_meshes).
        vm = r["vmesh"]
        scene.nodes[node].extras["fxMesh"] = text(vm["name"])
        if fx_meshes:
            prim = pmesh_primitive(vm, scene, mat)
            if prim is not None:
                scene.add_node(name=text(vm["name"]) or "fx", parent=node,
                               mesh=scene.add_mesh(Mesh(name=text(vm["name"]), primitives=[prim])))
    return node


def scene_plug(doc: Any, **options: Any) -> Scene:
    scene, resolver, mats = _scene(doc, options)
    add_plug(scene, resolver, mats, doc.root, None, bool(options.get("fx_meshes")))
    return scene


def add_rig(scene: Scene, resolver: Resolver, ref: Any) -> tuple[list, list, int | None]:
    """The skeleton a reference names, at frame 0, and its skin (bind pose =
    the frame-0 world matrices; docs/formats/knight-online.md): (joints, node indices, skin index)."""
    jdoc = resolver.load(ref, scene, "skeleton")
    if jdoc is None or jdoc.format != "n3joint":
        return [], [], None
    joints = flatten_joints(jdoc.root)
    nodes = add_skeleton(scene, joints)
    world = world_matrices(scene, nodes, joints)
    skin = scene.add_skin(Skin(joints=list(nodes), inverse_bind_matrices=inverse_affine(world)[0],
                               skeleton=nodes[0], name=text(jdoc.root["name"])))
    return joints, nodes, skin


def _load_noting(resolver: Resolver, scene: Scene, ref: Any, what: str, missing: list):
    """``resolver.load`` whose "not found" warning goes into ``missing`` instead
    (scene_chr reports every missing file in one warning)."""
    before = len(scene.warnings)
    doc = resolver.load(ref, scene, what)
    if doc is None and text(ref):
        added = scene.warnings[before:]
        del scene.warnings[before:]
        scene.warnings.extend(w for w in added if not w.endswith("not found"))
        missing.append(f"{what} {text(ref)!r}")
    return doc


def scene_chr(doc: Any, **options: Any) -> Scene:
    """The character: skeleton, parts, plugs and clips, each as far as its files
    are found; the missing ones are named in one warning.  Only when nothing at
    all resolves is the export refused, naming what was searched where."""
    scene, resolver, mats = _scene(doc, options)
    r = doc.root
    name = text(r["transform"]["name"]) or "the character"
    # the character itself: a node carrying its references
    scene.add_node(name=text(r["transform"]["name"]) or "character", **_transform_trs(r["transform"]),
                   extras={"joint": text(r["joint"]), "parts": [text(x) for x in r["parts"]],
                           "plugs": [text(x) for x in r["plugs"]],
                           "animation": text(r["animationControl"]),
                           "jointPartStarts": [int(x) for x in r["jointPartStarts"]],
                           "jointPartEnds": [int(x) for x in r["jointPartEnds"]]})
    missing: list[str] = []
    before = len(scene.warnings)
    joints, nodes, skin = add_rig(scene, resolver, r["joint"])
    if not joints and text(r["joint"]) and any(w.endswith("not found")
                                               for w in scene.warnings[before:]):
        scene.warnings[before:] = [w for w in scene.warnings[before:] if not w.endswith("not found")]
        missing.append(f"skeleton {text(r['joint'])!r}")
    parts_found = 0
    for ref in r["parts"]:
        pdoc = _load_noting(resolver, scene, ref, "part", missing)
        if pdoc is None or pdoc.format != "n3cpart":
            continue
        p = pdoc.root
        mat = mats.get(p["material"], p["texture"], text(p["name"]) or "part")
        sdoc = _load_noting(resolver, scene, p["geometry"], "skins", missing)
        if sdoc is None or sdoc.format != "n3cskins":
            continue
        mesh, _ = _skin_mesh(scene, sdoc.root["lods"][_lod(options)], mat, text(p["name"]) or text(ref),
                             skin is not None, len(nodes))
        if mesh is not None:
            parts_found += 1
            scene.add_node(name=text(p["name"]) or text(ref), mesh=mesh, skin=skin,
                           extras={"lods": _lod_extras(sdoc.root)})
    plugs_found = 0
    for ref in r["plugs"]:
        pdoc = _load_noting(resolver, scene, ref, "plug", missing)
        if pdoc is None or not pdoc.format.startswith("n3cplug"):
            continue
        plugs_found += 1
        j = int(pdoc.root["joint"])
        parent = nodes[j] if 0 <= j < len(nodes) else None
        add_plug(scene, resolver, mats, pdoc.root, parent, bool(options.get("fx_meshes")))
    adoc = _load_noting(resolver, scene, r["animationControl"], "animation", missing)
    clips = 0
    if adoc is not None and adoc.format == "n3anim" and joints:
        n_before = len(scene.animations)
        add_clips(scene, adoc, joints, nodes)
        clips = len(scene.animations) - n_before
    if not scene.meshes and not joints and not plugs_found:
        roots = [str(x) for x in getattr(resolver, "roots", [])]
        raise UnresolvedReferencesError(
            f"{name}: none of the files it references was found ({'; '.join(missing) or 'no references'}); "
            f"searched case-insensitively under {', '.join(roots) or 'no folder (no source path)'}; "
            "pass --data-root with the client's data folder (the one holding Chr/ and Item/)",
            path="parts")
    if missing:
        found = [f"skeleton of {len(joints)} joints" if joints else "no skeleton",
                 f"{clips} clips", f"{parts_found} of {len(r['parts'])} parts",
                 f"{plugs_found} of {len(r['plugs'])} plugs"]
        scene.warnings.append(f"{name}: {len(missing)} referenced files missing, exported "
                              f"without them ({'; '.join(missing)}); exported {', '.join(found)}")
    return scene


def _named(fn):
    def scene_fn(doc: Any, **options: Any) -> Scene:
        return fn(doc, **options).unique_names("nodes", "animations")
    scene_fn.__name__ = fn.__name__
    scene_fn.__doc__ = fn.__doc__
    return scene_fn


_SCENES = {"n3pmesh": scene_pmesh, "n3shape": scene_shape, "n3joint": scene_joint,
          "n3cskins": scene_skins, "n3skin": scene_skins, "n3cpart": scene_part,
          "n3cplug": scene_plug, "n3cplug_cloak": scene_plug, "n3chr": scene_chr}
SCENES = {name: _named(fn) for name, fn in _SCENES.items()}
