"""A decoded ``TS::Shape`` as a neutral scene (docs/formats/darkstar.md, "To glTF").

* Nodes keep the shape's tree; a node's rest pose is its default transform.
  The engine applies quaternions to row vectors, so the glTF rotation is the
  conjugate of the normalised stored quaternion (docs/formats/darkstar.md, still to be checked
  visually).  The data is Z-up with the front toward +Y (the engine moves a
  player along row 1 of its transform, right along row 0): everything hangs
  under one root node turned 180 degrees about (0, 1, 1), ``(x, y, z) ->
  (-x, z, y)``, so up becomes glTF's +Y and the front glTF's +Z.  A proper
  rotation: nothing is mirrored and the winding rule is unchanged.
* Each object becomes a child node of its node, carrying the object's offset
  (v8: a translation; v7 and older: the TMat3F, decomposed to TRS) and its mesh.
* Meshes split vertices on unique (vertex, texture vertex) pairs, one primitive
  per material; every triangle is reversed once (docs/formats/darkstar.md).  Extra mesh frames
  are morph targets (position deltas from frame 0).
* ``detail`` picks one level of detail (an index into ``details``, 0 = the
  first, usually the finest); nodes under the other details' root nodes are
  left out.  ``detail=-1`` keeps every level.  The ``bounds`` object is a
  utility box and is only exported with ``bounds=True``.
* Sequences become animations: node sub-sequences give rotation/translation
  (/scale before v8) keys at ``position * duration`` seconds; object
  sub-sequences select mesh frames (one-hot morph weights, STEP) and, where
  their keys are flagged "affects visibility", show or hide the object (STEP
  scale to zero).  Cyclic flags, frame triggers and transitions go to extras.
* ``skin`` (default: on for shapes with several nodes and node animation)
  turns the rigid tree into a skeleton with skinned meshes (:mod:`.skinning`)
  so Blender shows one armature with one action per sequence.  Node, mesh and
  animation names are made unique (originals in ``extras.name``).
* Materials take their RGB colour for RGB materials and keep the map file name
  in extras (textures need the game's palette, which a shape does not carry).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...core.errors import FormatError, ValueFormatError
from ...scene import (Z_UP_Y_FORWARD_TO_GLTF, Animation, Channel, Material, Mesh, MorphTarget,
                      Primitive, Scene, decompose_matrix, flip_winding, mat4_from_gltf,
                      quat_conjugate, quat_continuous, quat_normalize, weld)
from ...scene.bake_colors import srgb_to_linear
from .pers import class_payload
from . import geometry
from .geometry import name_text
from .skinning import skin_rigid_scene

#: v2 keyframes keep flags in the top bits of keyValue
V2_KEY_INDEX_MASK = 0x3FFFFFFF


def _names(p: dict) -> list[str]:
    return [name_text(bytes(n)) for n in p["names"]["name"]]


class _ShapeView:
    """Index-checked access to a shape payload while building the scene."""

    def __init__(self, block: dict) -> None:
        if bytes(block.get("className", b"")) != b"TS::Shape" or not isinstance(block.get("payload"), dict):
            raise FormatError("only a decoded TS::Shape exports to a scene "
                              f"(found {bytes(block.get('className', b''))!r} "
                              f"v{block.get('version')})")
        self.p = block["payload"]
        self.version = int(block["version"])
        self.names = _names(self.p)

    def name(self, i: int, fallback: str) -> str:
        return self.names[i] if 0 <= i < len(self.names) else fallback


def _parents(nodes: np.ndarray, warnings: list) -> np.ndarray:
    """Parent per node, -1 for roots; out-of-range parents and cycles become roots."""
    n = len(nodes)
    parent = nodes["fParent"].astype(np.int64)
    bad = (parent < -1) | (parent >= n) | (parent == np.arange(n))
    if bad.any():
        warnings.append(f"{int(bad.sum())} nodes with an invalid parent made roots")
    parent = np.where(bad, -1, parent)
    # break cycles: walk up from each node (memoised: linear overall)
    reach = np.zeros(n, bool)
    for i in range(n):                       # n nodes (tens to hundreds), not bulk data
        seen = set()
        j = i
        while j >= 0 and j not in seen and not reach[j]:
            seen.add(j)
            j = parent[j]
        if j >= 0 and not reach[j]:          # a cycle: cut it at node j
            parent[j] = -1
            warnings.append(f"node {j} is in a parent cycle; made a root")
        for k in seen:
            reach[k] = True
    return parent


def _node_order(parent: np.ndarray) -> list[int]:
    """Nodes with every parent before its children (stable by index)."""
    children: dict[int, list[int]] = {}
    for i, par in enumerate(parent.tolist()):
        children.setdefault(par, []).append(i)
    order: list[int] = []
    stack = list(reversed(children.get(-1, [])))
    while stack:
        i = stack.pop()
        order.append(i)
        stack.extend(reversed(children.get(i, [])))
    return order


def _included(view: _ShapeView, parent: np.ndarray, order: list[int], detail: int | None) -> np.ndarray:
    n = len(parent)
    inc = np.ones(n, bool)
    det = view.p["details"]["fRootNodeIndex"].astype(np.int64)
    if detail is None or detail < 0 or len(det) == 0:
        return inc
    if detail >= len(det):
        raise ValueFormatError(f"detail {detail} does not exist: the shape has {len(det)} details")
    cut = {int(r) for r in det if 0 <= r < n} - {int(det[detail])}
    for i in order:                          # parents first
        inc[i] = i not in cut and (parent[i] < 0 or inc[parent[i]])
    return inc


def _rest_pose(view: _ShapeView, warnings: list) -> dict[str, np.ndarray]:
    """Transforms as glTF TRS; non-finite values (garbage floats) become
    identity parts, with a warning."""
    with np.errstate(all="ignore"):
        t = geometry.transforms(view.p, view.version)
        bad = 0
        for key, ident in (("rotation", (0.0, 0.0, 0.0, 1.0)), ("translation", (0.0, 0.0, 0.0)),
                           ("scale", (1.0, 1.0, 1.0))):
            rows = ~np.isfinite(t[key]).all(axis=1)
            if rows.any():
                bad += int(rows.sum())
                t[key][rows] = ident
        t["rotation"] = quat_conjugate(quat_normalize(t["rotation"])).astype(np.float32)
    if bad:
        warnings.append(f"{bad} non-finite transform parts replaced by identity")
    return t


def _materials(view: _ShapeView, scene: Scene) -> list[int]:
    block = view.p.get("materials")
    mp = class_payload(block, b"TS::MaterialList")
    if mp is None:
        if isinstance(block, dict):
            scene.warnings.append(f"material list ({bytes(block.get('className', b''))!r} "
                                  f"v{block.get('version')}) is not a decoded TS::MaterialList; "
                                  "no materials")
        return []
    table = mp["materials"][: max(int(mp["fnMaterials"]), 0)]
    out = []
    for i in range(len(table)):
        r = table[i]
        flags = int(r["fFlags"])
        mtype = flags & 0xF
        # the bytes are drawn as they are (display values, as a bitmap's texels);
        # glTF's factor is linear light
        rgb = srgb_to_linear(np.array([int(r["fRed"]), int(r["fGreen"]), int(r["fBlue"])]) / 255.0)
        color = (*(float(c) for c in rgb), 1.0) if mtype == 2 else (1.0, 1.0, 1.0, 1.0)
        alpha_mode = "BLEND" if flags & 0x2000 else "MASK" if flags & 0x1000 else "OPAQUE"
        mapname = name_text(bytes(r["fName"]))
        out.append(scene.add_material(Material(
            name=mapname or f"material {i}", base_color=color, alpha_mode=alpha_mode,
            extras={"dts_material": i, "map": mapname, "flags": flags, "type": mtype,
                    "rgb": [int(r["fRed"]), int(r["fGreen"]), int(r["fBlue"])]})))
    return out


def _mesh(view: _ShapeView, scene: Scene, mi: int, name: str, materials: list[int]) -> tuple[int | None, int]:
    """Scene mesh index (None when nothing to draw) and its frame count."""
    meshes = view.p["meshes"]
    if not 0 <= mi < len(meshes):
        scene.warnings.append(f"object {name!r} refers to mesh {mi} of {len(meshes)}")
        return None, 0
    block = meshes[mi]
    if bytes(block["className"]) != b"TS::CelAnimMesh" or not isinstance(block["payload"], dict):
        scene.warnings.append(f"mesh {mi} ({bytes(block['className'])!r} v{block['version']}) "
                              "has no geometry decoder; skipped")
        return None, 0
    try:
        pos = geometry.frame_positions(block)
        faces = geometry.face_indices(block)
        normals = geometry.frame_normals(block)
    except FormatError as e:
        scene.warnings.append(f"mesh {mi} skipped: {e}")
        return None, 0
    n_frames = pos.shape[0]
    if not (np.isfinite(pos).all() and np.isfinite(normals).all()):
        scene.warnings.append(f"mesh {mi} has non-finite positions (garbage scale/origin); skipped")
        return None, 0
    if n_frames == 0 or len(faces["local"]) == 0:
        return None, n_frames
    uv = geometry.texture_coords(block)
    if not np.isfinite(uv).all():
        scene.warnings.append(f"mesh {mi} has non-finite texture coordinates; set to 0")
        uv = np.where(np.isfinite(uv), uv, np.float32(0))
    local, tex, mat = faces["local"], faces["texture"], faces["material"]
    prims = []
    for m in np.unique(mat).tolist():
        sel = mat == m
        cv = local[sel].reshape(-1)
        ct = tex[sel].reshape(-1)
        first, remap = weld(cv, ct)
        vv, tt = cv[first], ct[first]
        base = pos[0][vv]
        prim = Primitive(positions=base, normals=normals[0][vv], uvs=[uv[tt]],
                         indices=flip_winding(remap).astype(np.uint32),
                         material=materials[m] if 0 <= m < len(materials) else None,
                         extras={"dts_material": int(m)})
        prim.targets = [MorphTarget(name=f"frame {f}", positions=pos[f][vv] - base)
                        for f in range(1, n_frames)]
        prims.append(prim)
    mesh = Mesh(name=name, primitives=prims, extras={"dts_mesh": mi, "frames": n_frames})
    if n_frames > 1:
        mesh.weights = [0.0] * (n_frames - 1)
        mesh.target_names = [f"frame {f}" for f in range(1, n_frames)]
    return scene.add_mesh(mesh), n_frames


def _object_trs(view: _ShapeView, i: int) -> dict:
    ob = view.p["objects"]
    if view.version >= 8:
        t = [float(ob["fObjectOffsetX"][i]), float(ob["fObjectOffsetY"][i]), float(ob["fObjectOffsetZ"][i])]
        return {"translation": t} if all(map(math.isfinite, t)) else {}
    m = [float(ob[k][i]) for k in ("fDep0X", "fDep0Y", "fDep0Z", "fDep1X", "fDep1Y", "fDep1Z",
                                   "fDep2X", "fDep2Y", "fDep2Z")]
    p = [float(ob[k][i]) for k in ("fObjectOffsetX", "fObjectOffsetY", "fObjectOffsetZ")]
    # docs/formats/darkstar.md: the 9 floats fill glTF elements 0-2, 4-6, 8-10 and p 12-14
    mat = mat4_from_gltf(m[0:3] + [0.0] + m[3:6] + [0.0] + m[6:9] + [0.0] + p + [1.0])
    if not np.isfinite(mat).all():
        return {}
    with np.errstate(all="ignore"):
        t, r, s = decompose_matrix(mat)
    if not (np.isfinite(t).all() and np.isfinite(r).all() and np.isfinite(s).all()):
        return {}
    return {"translation": t.tolist(), "rotation": r.tolist(), "scale": s.tolist()}


def _key_range(view: _ShapeView, ss: int) -> np.ndarray | None:
    subs, kf = view.p["subSequences"], view.p["keyframes"]
    first, n = int(subs["fFirstKeyframe"][ss]), int(subs["fnKeyframes"][ss])
    if n <= 0 or first < 0 or first + n > len(kf):
        return None
    return np.arange(first, first + n)


def _sub_range(view: _ShapeView, first: int, n: int) -> range:
    subs = view.p["subSequences"]
    if n <= 0 or first < 0:
        return range(0)
    return range(first, min(first + n, len(subs)))


def _timeline(positions: np.ndarray, duration: float, values: np.ndarray) -> tuple:
    """Key times in seconds, sorted; of keys sharing a time the last is kept
    (shapes often repeat the key at position 0)."""
    times = positions.astype(np.float64) * duration
    finite = np.isfinite(times)
    times, values = times[finite], values[finite]
    order = np.argsort(times, kind="stable")
    times, values = times[order], values[order]
    keep = np.append(times[1:] != times[:-1], True)
    return times[keep], values[keep]


def _visibility_channel(view: _ShapeView, scene: Scene, scene_node: int, keys: np.ndarray,
                        duration: float) -> Channel | None:
    """Object keys flagged "affects visibility" (docs/formats/darkstar.md) as a STEP scale track:
    the node's own scale while visible, zero while hidden.  Shape v2 keys have
    no such flag."""
    kf = view.p["keyframes"]
    if "fMatIndex" not in kf.dtype.names:
        return None
    bits = 16 if view.version >= 8 else 32
    flags = kf["fMatIndex"][keys].astype(np.int64)
    if not (flags & (1 << (bits - 2))).any():
        return None
    visible = (flags & (1 << (bits - 1))) != 0
    times, visible = _timeline(kf["fPosition"][keys], duration, visible)
    if not len(times):
        return None
    base = np.asarray(scene.nodes[scene_node].scale or (1.0, 1.0, 1.0), np.float32)
    values = np.where(visible[:, None], base[None, :], np.float32(0)).astype(np.float32)
    return Channel(scene_node, "scale", times, values, "STEP")


def _animations(view: _ShapeView, scene: Scene, node_map: dict[int, int], rest: dict,
                object_nodes: list[tuple[int, int, int, int, int]]) -> None:
    p = view.p
    seqs, subs, kf = p["sequences"], p["subSequences"], p["keyframes"]
    nodes = p["nodes"]
    n_tf = len(p["transforms"])
    key_index = kf["fKeyValue"].astype(np.int64)
    if view.version == 2:
        key_index = key_index & V2_KEY_INDEX_MASK
    for s in range(len(seqs)):
        duration = float(seqs["fDuration"][s])
        if not np.isfinite(duration):
            duration = 0.0
        anim = Animation(name=view.name(int(seqs["fName"][s]), f"sequence {s}"),
                         extras={"cyclic": bool(seqs["fCyclic"][s]), "duration": duration,
                                 "priority": int(seqs["fPriority"][s])})
        if "fNumFrameTriggers" in seqs.dtype.names and "frameTriggers" in p:
            ft = p["frameTriggers"]
            a, n = int(seqs["fFirstFrameTrigger"][s]), int(seqs["fNumFrameTriggers"][s])
            if n > 0 and 0 <= a and a + n <= len(ft):
                anim.extras["frame_triggers"] = [
                    {"position": float(ft["fPosition"][k]), "value": int(ft["fValue"][k])}
                    for k in range(a, a + n)]
        for i, scene_node in node_map.items():
            for ss in _sub_range(view, int(nodes["fFirstSubSequence"][i]), int(nodes["fnSubSequences"][i])):
                if int(subs["fSequenceIndex"][ss]) != s:
                    continue
                keys = _key_range(view, ss)
                if keys is None:
                    continue
                idx = key_index[keys]
                ok = (idx >= 0) & (idx < n_tf)
                if not ok.all():
                    scene.warnings.append(f"sequence {s}: keys of node {i} point past the "
                                          f"{n_tf} transforms; dropped")
                    keys, idx = keys[ok], idx[ok]
                if not len(keys):
                    continue
                times, idx = _timeline(kf["fPosition"][keys], duration, idx)
                anim.channels.append(Channel(scene_node, "rotation", times,
                                             quat_continuous(rest["rotation"][idx]).astype(np.float32)))
                anim.channels.append(Channel(scene_node, "translation", times, rest["translation"][idx]))
                if view.version < 8:
                    anim.channels.append(Channel(scene_node, "scale", times, rest["scale"][idx]))
        for scene_node, first, n, n_frames, _oi in object_nodes:
            for ss in _sub_range(view, first, n):
                if int(subs["fSequenceIndex"][ss]) != s:
                    continue
                keys = _key_range(view, ss)
                if keys is None:
                    continue
                vis = _visibility_channel(view, scene, scene_node, keys, duration)
                if vis is not None:
                    anim.channels.append(vis)
                if n_frames < 2:
                    continue
                frame = key_index[keys]
                frame = np.where((frame >= 0) & (frame < n_frames), frame, 0)
                times, frame = _timeline(kf["fPosition"][keys], duration, frame)
                weights = np.zeros((len(frame), n_frames - 1), np.float32)
                hit = frame > 0
                weights[np.nonzero(hit)[0], frame[hit] - 1] = 1.0
                anim.channels.append(Channel(scene_node, "weights", times, weights, "STEP"))
        if not anim.channels and node_map:
            # a sequence that moves nothing exported here still names a clip of the
            # game: hold the first node's rest pose so it stays one animation
            first = next(iter(node_map.values()))
            anim.channels.append(Channel(first, "rotation", np.array([0.0, max(duration, 0.0)]),
                                         np.tile(np.asarray(scene.nodes[first].rotation or (0, 0, 0, 1),
                                                            np.float32), (2, 1)), "STEP"))
            anim.extras["empty"] = True
        if anim.channels:
            scene.add_animation(anim)


def to_scene(doc: Any, *, detail: int | None = 0, bounds: bool = False, skin: bool | None = None,
             **options: Any) -> Scene:
    """The shape in ``doc`` as a :class:`potsherd.scene.Scene` (see the module docstring).

    ``skin``: True binds the geometry to a skeleton of the nodes
    (:mod:`.skinning`), False keeps meshes on the nodes, None (default) skins
    shapes with more than one node and node animation."""
    view = _ShapeView(doc.root)
    p = view.p
    scene = Scene(name=(doc.source or "shape").replace("\\", "/").rsplit("/", 1)[-1])
    nodes = p["nodes"]
    parent = _parents(nodes, scene.warnings)
    order = _node_order(parent)
    include = _included(view, parent, order, detail)
    rest = _rest_pose(view, scene.warnings)
    n_tf = len(p["transforms"])
    materials = _materials(view, scene)
    from .textures import texture_materials  # material .bmp files -> textures (palette lookup)
    texture_materials(scene, materials, options.get("source_path") or doc.source,
                      palette=options.get("palette") or "", data_root=options.get("data_root"),
                      limits=doc.limits, volumes=options.get("volumes") or ())

    node_map: dict[int, int] = {}
    for i in order:
        if not include[i]:
            continue
        t = int(nodes["fDefaultTransform"][i])
        trs: dict[str, Any] = {}
        if 0 <= t < n_tf:
            trs = {"translation": rest["translation"][t].tolist(), "rotation": rest["rotation"][t].tolist()}
            if view.version < 8:
                trs["scale"] = rest["scale"][t].tolist()
        else:
            scene.warnings.append(f"node {i} has default transform {t} of {n_tf}; identity used")
        node_map[i] = scene.add_node(name=view.name(int(nodes["fName"][i]), f"node {i}"),
                                     parent=node_map.get(int(parent[i])), extras={"dts_node": i}, **trs)

    ob = p["objects"]
    mesh_cache: dict[int, tuple[int | None, int]] = {}
    object_nodes = []
    for i in range(len(ob)):
        ni = int(ob["fNodeIndex"][i])
        if ni not in node_map:
            continue
        name = view.name(int(ob["fName"][i]), f"object {i}")
        if name == "bounds" and not bounds:
            continue
        mi = int(ob["fMeshIndex"][i])
        if mi not in mesh_cache:
            mesh_cache[mi] = _mesh(view, scene, mi, name, materials)
        mesh, n_frames = mesh_cache[mi]
        extras = {"dts_object": i, "default_invisible": bool(int(ob["fFlags"][i]) & 1)}
        idx = scene.add_node(name=name, parent=node_map[ni], mesh=mesh, extras=extras,
                             **_object_trs(view, i))
        object_nodes.append((idx, int(ob["fFirstSubSequence"][i]), int(ob["fnSubSequences"][i]),
                             n_frames, i))

    _animations(view, scene, node_map, rest, object_nodes)
    det = p["details"]
    scene.extras = {
        "dts_version": view.version,
        "detail": detail,
        "details": [{"root": view.name(int(nodes["fName"][r]), str(r)) if 0 <= r < len(nodes) else int(r),
                     "size": float(sz)}
                    for r, sz in zip(det["fRootNodeIndex"].tolist(), det["fSize"].tolist())],
        "transitions": len(p["transitions"]) if "transitions" in p else 0,
    }
    wrap = scene.wrap(name="z-up", rotation=Z_UP_Y_FORWARD_TO_GLTF)   # front +Y -> +Z, up +Z -> +Y
    if skin is None:
        skin = len(node_map) > 1 and any(ch.path in ("rotation", "translation")
                                         for a in scene.animations if not a.extras.get("empty")
                                         for ch in a.channels)
    scene.extras["skin"] = bool(skin)
    if skin:
        skin_rigid_scene(scene, wrap)
    return scene.unique_names("nodes", "meshes", "animations")
