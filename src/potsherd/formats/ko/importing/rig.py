"""glTF skeletons and animations as .n3joint and .n3anim: joint order, the clip table,
key tracks in N3's mirrored axes, and the original's bytes kept when nothing moved."""
from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np

from ....document import Document
from ....scene import Scene
from ....scene.bind_pose import rest_at_bind
from ....scene.compare import paired_by_name
from ....scene.model import unique_labels
from ....scene.ops import (local_matrix, node_rotation_per_component, rest_trs, sample_node_trs,
                          sample_nodes_trs, world_matrices)
from ....scene.reorient import frames_like, reorient_joints
from ....scene.xform import (decompose_matrix, inverse_affine, mirror_x, mirror_x_quat,
                            quat_continuous, quat_normalize, trs_to_matrix)
from .base import F32_MAX, FRAME_RATE, ImportError_, _original_name, _raw


def skeleton_order(scene: Scene, rank: dict | None = None) -> list[int]:
    """Node indices of the (first) skin's joints in depth-first pre-order, the
    order every N3 joint index refers to.  A skeleton with several roots gets
    them in file order under the first.

    Siblings come in ``rank`` order (node -> key; default: their place in the
    skins' joint lists, then node order).  An export lists the joints in N3
    order, and Blender keeps that list while it sorts every node's children by
    name, so the children alone would renumber the joints an original's skins
    are bound to."""
    if not scene.skins:
        raise ImportError_("the scene has no skin (no skeleton to write)")
    # the skins the shown meshes use (a glTF's other scenes may hold more)
    used = sorted({n.skin for n in scene.nodes if n.skin is not None and n.mesh is not None
                   and 0 <= n.skin < len(scene.skins)})
    listed: dict = {}
    for sk in [scene.skins[i] for i in used] or scene.skins:
        for j in sk.joints:
            listed.setdefault(j, len(listed))
    joints = set(listed)
    parents = scene.parents()
    roots = [j for j in sorted(joints) if parents[j] not in joints]     # node order
    if rank is None:
        rank = listed
    else:
        roots.sort(key=lambda n: (rank.get(n, len(scene.nodes) + n), n))
    out: list[int] = []
    seen: set = set()

    def visit(n: int) -> None:
        stack = [n]
        while stack:
            v = stack.pop()
            if v in seen:
                continue
            seen.add(v)
            out.append(v)
            kids = [c for c in scene.nodes[v].children if c in joints]
            kids.sort(key=lambda c: (rank.get(c, len(scene.nodes) + c), c))
            stack.extend(reversed(kids))

    for r in roots:
        visit(r)
    if len(roots) > 1:
        scene.warnings.append(f"skeleton: {len(roots)} root joints; the N3 skeleton has one, "
                              f"the others hang under {scene.nodes[roots[0]].name!r}")
    return out


def _joint_maps(scene: Scene, order: list[int]) -> dict:
    index = {n: i for i, n in enumerate(order)}
    return {si: np.array([index.get(j, 0) for j in sk.joints], np.int64)
            for si, sk in enumerate(scene.skins)}


def clip_layout(scene: Scene) -> list[dict]:
    """Where each animation goes on the joint timeline: frame 0 is the (bind) rest pose,
    then clip k covers [start, end] played at its fps."""
    out, frame = [], 1.0
    for a in scene.animations:
        fps = a.extras.get("fps") if a.extras else None
        fps = float(fps) if isinstance(fps, (int, float)) and fps > 0 else key_rate(a)
        # the last frame at or past the clip's end, which sampling holds, so a clip
        # between two frames still ends in its last pose (a one-frame pose is 0)
        n = max(int(math.ceil(a.duration * fps - 1e-3)), 0)   # (float32 key times)
        out.append({"start": frame, "end": frame + n, "fps": fps, "frames": n})
        frame += n + 1
    return out


#: frame rates a clip is keyed at, in the order tried (30, the timeline's own, first)
KEY_RATES = (30.0, 24.0, 25.0, 60.0, 48.0, 50.0)


def key_rate(animation: Any) -> float:
    """The frame rate a clip without a stored one is written at: the first of
    :data:`KEY_RATES` whose frames hold every key time of the clip (Blender
    samples its clips at the scene's 24 frames/s, and a 24 frame/s key between
    two 30 frame/s frames would be lost), else 30."""
    times = np.unique(np.concatenate([np.asarray(c.times, np.float64).ravel()
                                      for c in animation.channels] or [np.zeros(0)]))
    if not len(times):
        return FRAME_RATE
    for rate in KEY_RATES:
        f = times * rate
        if np.abs(f - np.round(f)).max() <= 1e-3:           # (float32 key times)
            return rate
    return FRAME_RATE


def n3_parents(scene: Scene, order: list[int]) -> dict:
    """{joint node: the node its N3 joint hangs under (None for the root)}: its
    glTF parent when that is a joint, else the first root (a second root hangs
    under the first, as ``skeleton_order`` warns)."""
    index = set(order)
    parents = scene.parents()
    return {n: parents[n] if parents[n] in index else (None if n == order[0] else order[0])
            for n in order}


def _rebased(scene: Scene, order: list[int]) -> list[int]:
    """Joints whose N3 parent is not their glTF parent: the root under a node
    that is not a joint (an FBX converter's "Armature", the skinned mesh node
    three.js puts bones under), and extra roots.  Their N3 transforms are the
    glTF ones relative to their N3 parent."""
    parents = scene.parents()
    n3p = n3_parents(scene, order)
    return [n for n in order if n3p[n] != parents[n]]


def _rebase_is_identity(scene: Scene, order: list[int]) -> bool:
    """Every rebased joint's N3 transform is its glTF local one: the nodes above
    the skeleton (Blender's armature object) neither move nor transform it."""
    rebased = _rebased(scene, order)
    if not rebased:
        return True
    world = world_matrices(scene)
    n3p = n3_parents(scene, order)
    moving = {c.node for a in scene.animations for c in a.channels}
    for n in rebased:
        above = set(_ancestors(scene, n)[1:]) - set(_ancestors(scene, n3p[n]))
        rel = world[n] if n3p[n] is None else np.linalg.inv(world[n3p[n]]) @ world[n]
        if above & moving or not np.allclose(rel, local_matrix(scene.nodes[n]), atol=1e-6):
            return False
    return True


def _ancestors(scene: Scene, node: int | None) -> list[int]:
    """``node`` and its ancestors, node first (empty for None)."""
    parents = scene.parents()
    out: list[int] = []
    while node is not None:
        out.append(node)
        node = parents[node]
    return out


def _timelines(scene: Scene, nodes: list, layout: list, total: int) -> dict:
    """{node: (T, R, S)} of ``nodes`` on the joint timeline (``max(total, 1)``
    frames): frame 0 and the gaps hold the rest pose, each clip its sampled
    keys, each clip's channels of all the nodes sampled together (one array
    operation per clip and kind of channel, not a few per joint)."""
    n = max(total, 1)
    out = {node: [np.tile(r, (n, 1)) for r in rest_trs(scene.nodes[node])] for node in nodes}
    frames = np.arange(n, dtype=np.float64)
    for a, lay in zip(scene.animations, layout):
        span = slice(int(lay["start"]), int(lay["end"]) + 1)
        got = sample_nodes_trs(scene, a, nodes, (frames[span] - lay["start"]) / lay["fps"])
        for node, trs in got.items():
            for track, values in zip(out[node], trs):
                track[span] = values
    return {node: tuple(v) for node, v in out.items()}


def _world_track(scene: Scene, node: int | None, timelines: dict,
                 cache: dict) -> np.ndarray:
    """(F, 4, 4) glTF world matrix of ``node`` over the timeline (identity for None)."""
    if node is None:
        return np.eye(4)[None]
    chain = _ancestors(scene, node)                  # node first; filled root first
    for k in range(len(chain) - 1, -1, -1):
        n = chain[k]
        if n not in cache:
            local = trs_to_matrix(*timelines[n])
            cache[n] = local if k == len(chain) - 1 else cache[chain[k + 1]] @ local
    return cache[node]


def _rebased_tracks(scene: Scene, node: int, n3_parent: int | None, timelines: dict,
                    cache: dict) -> tuple:
    """(T, R, S) over the timeline of a rebased joint: its glTF world matrix
    relative to its N3 parent's, so the non-joint ancestors' transforms (and
    their animation) are baked in and every N3 world matrix is the glTF one."""
    to_parent, flat = inverse_affine(_world_track(scene, n3_parent, timelines, cache))
    if flat.any():
        scene.warnings.append(f"skeleton: {scene.nodes[n3_parent].name!r} scales to nothing "
                              f"along an axis (scale 0) at {int(flat.sum())} frame(s); "
                              f"{scene.nodes[node].name!r}, which hangs under it in N3, is "
                              "flattened there")
    rel = to_parent @ _world_track(scene, node, timelines, cache)
    t, r, s_ = decompose_matrix(rel)
    if not np.allclose(trs_to_matrix(t, r, s_), rel,
                       atol=1e-6 * max(1.0, float(np.abs(rel).max()))):
        scene.warnings.append(f"skeleton: {scene.nodes[node].name!r} under its parent nodes "
                              "shears (non-uniform scale under a rotation); approximated by TRS")
    return t, quat_continuous(quat_normalize(r)), s_


def joint_root(scene: Scene, order: list[int], name: str | None = None,
               names: dict | None = None) -> tuple[dict, int]:
    """The n3joint tree (pre-order ``order``) and the timeline's frame count.

    A joint whose glTF parent is not its N3 parent (``_rebased``: the root
    under an "Armature" or mesh node, extra roots) gets its transform relative
    to the N3 parent, ancestors' animation included, so the N3 skeleton poses
    as the glTF one does at every frame."""
    layout = clip_layout(scene)
    total = int(layout[-1]["end"]) + 1 if layout else 0
    index = {n: i for i, n in enumerate(order)}
    n3p = n3_parents(scene, order)
    rebased = set(_rebased(scene, order))
    animated = {(c.node, c.path) for a in scene.animations for c in a.channels}
    moving = {node for node, path in animated if path in ("translation", "rotation", "scale")}
    # every joint's and ancestor's timeline (a rebased joint's chain and its N3
    # parent's are among them), and the world tracks made from them
    wanted = {a for node in order for a in _ancestors(scene, node)}
    timelines = _timelines(scene, sorted(wanted), layout, total)
    cache: dict = {}
    records = []
    for node in order:
        nd = scene.nodes[node]
        if node in rebased:
            tr, ro, sc = _rebased_tracks(scene, node, n3p[node], timelines, cache)
            chain = set(_ancestors(scene, node)) | set(_ancestors(scene, n3p[node]))
            baked = bool(chain & moving)
            if baked or not np.allclose(trs_to_matrix(tr[0], ro[0], sc[0]),
                                        local_matrix(nd), atol=1e-7):
                _note_baked(scene, node, n3p[node])
        else:
            tr, ro, sc = timelines[node]
            baked = False
        if not (np.abs(tr) <= F32_MAX).all() or not (np.abs(sc) <= F32_MAX).all():
            raise ImportError_(f"skeleton: joint {nd.name!r} is placed or scaled past float32's "
                               "range (3.4e38) relative to its N3 parent")
        t0, r0, s0 = tr[:1], ro[:1], sc[:1]
        keys = [{"count": 0, "values": np.zeros((0, 0), np.float32)} for _ in range(4)]
        if total:
            # a key track where glTF animates the joint, or where baked ancestors move it
            same_sign = ro * np.where(np.einsum("ij,j->i", ro, ro[0]) < 0, -1.0, 1.0)[:, None]
            if (node, "translation") in animated or baked and _varies(tr):
                keys[0] = _key(0, mirror_x(tr))
            if (node, "rotation") in animated or baked and _varies(same_sign):
                keys[1] = _key(1, quat_continuous(mirror_x_quat(quat_normalize(ro))))
            if (node, "scale") in animated or baked and _varies(sc):
                keys[2] = _key(0, sc)
        stored = (names or {}).get(node) or _original_name(nd)
        records.append({"name": _raw(stored or f"joint{len(records)}"),
                        "position": [float(x) for x in mirror_x(t0[0])],
                        "rotation": [float(x) for x in mirror_x_quat(quat_normalize(r0[0]))],
                        "scale": [float(x) for x in s0[0]], "keys": keys,
                        "childCount": 0, "children": [], "_parent": n3p[node]})
    root = None
    for node, rec in zip(order, records):
        parent = rec.pop("_parent")
        if parent in index:
            p = records[index[parent]]
            p["children"].append(rec)
            p["childCount"] += 1
        else:
            root = rec
    if name:
        root["name"] = _raw(name)
    return root, total


def _varies(values: np.ndarray) -> bool:
    return bool(np.ptp(values, axis=0).max() > 1e-7)


def _note_baked(scene: Scene, node: int, n3_parent: int | None) -> None:
    """Say (once per joint) whose motion the N3 joint now carries."""
    names = [scene.nodes[a].name or f"node{a}" for a in _ancestors(scene, node)[1:]
             if a not in _ancestors(scene, n3_parent)]
    if names:
        msg = (f"skeleton: the transforms of {', '.join(map(repr, names))} (not joints) are baked "
               f"into joint {scene.nodes[node].name!r}")
        if msg not in scene.warnings:
            scene.warnings.append(msg)


class _NoAnimation:
    channels: list = []


_EMPTY = _NoAnimation()


def _key(kind: int, values: np.ndarray) -> dict:
    return {"count": len(values), "keyType": kind, "samplingRate": FRAME_RATE,
            "values": np.asarray(values, np.float32)}


def anim_root(scene: Scene, names: dict | None = None) -> dict:
    """The n3anim clip table; ``names``: {animation index: stored name}."""
    clips = []
    for i, (a, lay) in enumerate(zip(scene.animations, clip_layout(scene))):
        ex = a.extras or {}

        def pair(key: str) -> list:
            v = ex.get(key)
            return [float(x) if isinstance(x, (int, float)) else 0.0 for x in v][:2] \
                if isinstance(v, list) and len(v) == 2 else [0.0, 0.0]
        blend = ex.get("blendTime")
        clips.append({"recordId": 0, "start": lay["start"], "end": lay["end"], "fps": lay["fps"],
                      "metadata": np.array([*pair("traceFrames"), *pair("soundFrames"),
                                            float(blend) if isinstance(blend, (int, float))
                                            else 0.25], np.float32),
                      "flags": int(ex.get("blendFlags", 0) or 0),
                      "strikeValues": np.array(pair("strikeFrames"), np.float32),
                      "name": _raw((names or {}).get(i) or _original_name(a)
                                   or f"clip{len(clips)}")})
    return {"count": len(clips), "clips": clips}


def like_names(scene: Scene, like_scene: Scene, kind: str = "nodes") -> dict:
    """{index in the scene's ``kind`` list: the stored name of the original's item
    of the same glTF name}.  An export names repeated joints and clips
    ``end_site.1``, ``run.1``... and keeps the stored name in extras, which
    Blender drops unless told to keep them."""
    by_name: dict = {}
    for n in getattr(like_scene, kind):
        by_name.setdefault(n.name, _original_name(n))
    return {i: by_name[n.name] for i, n in enumerate(getattr(scene, kind)) if n.name in by_name}


def keep_frames(scene: Scene, like_scene: Scene, order: list[int]) -> None:
    """Give the joints the original's frames where only their orientation turned
    (Blender's bones), so plugs and the original's other files keep fitting."""
    turns = frames_like(scene, like_scene, order)
    if turns and reorient_joints(scene, turns):
        scene.warnings.append(f"skeleton: {len(turns)} joint frames turned against the original "
                              "(Blender's bone orientation) turned back; poses unchanged")


def restore_clip_data(scene: Scene, originals: dict) -> int:
    """Fill each animation's missing extras from the original clip of the same
    name (``originals``: {stored name: extras}).  Blender drops animation extras,
    and with them the frame rate, strike, sound and trace frames of a clip.
    Returns how many animations got data back."""
    count = 0
    for a in scene.animations:
        ref = originals.get(a.name) or originals.get(_original_name(a))
        if ref is None:
            continue
        missing = {k: v for k, v in ref.items() if k != "frames" and k not in (a.extras or {})}
        if missing:
            a.extras = {**(a.extras or {}), **missing}
            count += 1
    return count


def like_rank(scene: Scene, like_scene: Scene, like_order: list[int]) -> dict:
    """{scene node: its joint's index in the original}, matched by glTF name."""
    place: dict = {}
    for i, n in enumerate(like_order):
        place.setdefault(like_scene.nodes[n].name, i)
    return {i: place[n.name] for i, n in enumerate(scene.nodes) if n.name in place}


#: a joint's key lies on the original's motion within this angle (degrees) ...
ROTATION_TOLERANCE_DEG = 0.1
#: ... and this fraction of the skeleton's extent
TRANSLATION_TOLERANCE = 1e-4


def _key_times(animation: Any, node: int) -> np.ndarray | None:
    ts = [np.asarray(ch.times, np.float64) for ch in animation.channels
          if ch.node == node and ch.path in ("translation", "rotation", "scale") and len(ch.times)]
    return np.unique(np.concatenate(ts)) if ts else None


def _rotations_close(r: np.ndarray, *refs: np.ndarray | None) -> bool:
    cos = math.cos(math.radians(ROTATION_TOLERANCE_DEG) / 2)
    ok = np.zeros(len(r), bool)
    for ref in refs:
        if ref is not None:
            ok |= np.abs(np.einsum("ij,ij->i", quat_normalize(r), quat_normalize(ref))) >= cos
    return bool(ok.all())


def _same_motion(scene: Scene, like_scene: Scene, order: list[int],
                 like_order: list[int]) -> bool:
    """Rest pose and every clip of the imported skeleton say what the original's
    export says: the same joints (by name, in the same order), and every key of
    every clip on the original's motion at its time.

    Keys are compared where the import has them, so a clip resampled at another
    rate (Blender samples every frame at 24 fps, interpolating rotations per
    component) is the same motion; a clip may end up to one of its own key
    intervals early (Blender ends on a whole frame)."""
    if len(order) != len(like_order):
        return False
    pairs = paired_by_name(scene.animations, like_scene.animations)
    if pairs is None:
        return False
    if not (_rebase_is_identity(scene, order) and _rebase_is_identity(like_scene, like_order)):
        # (the local tracks compared below are not the N3 ones: never the original's)
        return False
    names = like_names(scene, like_scene)
    for a, b in zip(order, like_order):
        if names.get(a, _original_name(scene.nodes[a])) != _original_name(like_scene.nodes[b]):
            return False
    extent = max([1e-6] + [float(np.abs(n.translation).max()) for n in like_scene.nodes
                           if n.translation is not None])
    tol = TRANSLATION_TOLERANCE * extent
    for anim_a, anim_b in pairs:
        times_a = np.unique(np.concatenate([np.asarray(c.times, np.float64)
                                            for c in anim_a.channels] or [np.zeros(1)]))
        step = float(np.diff(times_a).max()) if len(times_a) > 1 else 0.0
        if not -1e-4 <= anim_b.duration - anim_a.duration <= step + 1e-4:
            return False
    for n_a, n_b in zip(order, like_order):
        for anim_a, anim_b in [(_EMPTY, _EMPTY), *pairs]:
            times = None if anim_a is _EMPTY else _key_times(anim_a, n_a)
            if times is None:
                d = 0.0 if anim_a is _EMPTY else anim_a.duration
                times = np.linspace(0.0, d, 5)
            ta, ra, sa = sample_node_trs(scene, anim_a, n_a, times)
            tb, rb, sb = sample_node_trs(like_scene, anim_b, n_b, times)
            nl = None if anim_b is _EMPTY else node_rotation_per_component(anim_b, n_b, times)
            if not (np.allclose(ta, tb, rtol=0, atol=tol) and np.allclose(sa, sb, atol=1e-4)
                    and _rotations_close(ra, rb, nl)):
                return False
    return True


def _copy_doc(doc: Document) -> Document:
    return Document(doc.format, copy.deepcopy(doc.root), dict(doc.params), bytes(doc.trailing),
                    [], dict(doc.meta))


def import_joint(scene: Scene, *, like: Document | None = None, out_name: str = "",
                 **options: Any) -> Document:
    rank = names = None
    if like is not None and like.format == "n3joint":
        like_scene = like.codec.to_scene(like)
        like_order = list(range(len(like_scene.nodes)))      # (N3 order)
        # the original's joints keep their numbers (the skins bound to them) and names
        rank, names = like_rank(scene, like_scene, like_order), like_names(scene, like_scene)
        order = skeleton_order(scene, rank) if scene.skins else _all_joint_nodes(scene, rank)
        keep_frames(scene, like_scene, order)
        rest_at_bind(scene)
        # to_scene's one "timeline" animation spans the whole key range
        if _same_motion(scene, like_scene, order, like_order):
            return _copy_doc(like)
    else:
        rest_at_bind(scene)   # frame 0, where the engine binds skins, is the bind pose
        order = skeleton_order(scene) if scene.skins else _all_joint_nodes(scene)
    root, _ = joint_root(scene, order, options.get("name"), names)
    return Document("n3joint", root, {"jointKeys": 4}, b"", [], {})


def _all_joint_nodes(scene: Scene, rank: dict | None = None) -> list[int]:
    """Without a skin, the skeleton is the first root's whole tree (pre-order;
    siblings in ``rank`` order when given, as in ``skeleton_order``)."""
    if not scene.roots:
        raise ImportError_("the scene has no nodes (no skeleton to write)")
    roots = list(scene.roots)
    if rank:
        roots.sort(key=lambda n: (rank.get(n, len(scene.nodes) + n), n))
    out, stack = [], [roots[0]]
    while stack:
        v = stack.pop()
        out.append(v)
        kids = list(scene.nodes[v].children)
        if rank:
            kids.sort(key=lambda c: (rank.get(c, len(scene.nodes) + c), c))
        stack.extend(reversed(kids))
    return out


def import_anim(scene: Scene, *, like: Document | None = None, out_name: str = "",
                **options: Any) -> Document:
    if not scene.animations:
        raise ImportError_("the scene has no animations (nothing to write to .n3anim)")
    if like is not None and like.format == "n3anim":
        from ..scene import clip_extras
        from ..text import text
        clips = like.root["clips"]
        names = unique_labels([text(c["name"]) for c in clips])     # as the export names them
        restore_clip_data(scene, {n: clip_extras(c) for n, c in zip(names, clips)})
    root = anim_root(scene)
    if like is not None and like.format == "n3anim" and _same_clips(root, like.root):
        return Document("n3anim", copy.deepcopy(like.root), dict(like.params),
                        bytes(like.trailing), [], dict(like.meta))
    return Document("n3anim", root, {}, b"", [], {})


def _same_clips(new: dict, old: dict) -> bool:
    if new["count"] != len(old["clips"]):
        return False
    for a, b in zip(new["clips"], old["clips"]):
        da = (a["end"] - a["start"]) / a["fps"]
        db = (float(b["end"]) - float(b["start"])) / float(b["fps"]) if b["fps"] else -1
        if abs(da - db) > 1e-4 or bytes(a["name"]).rstrip(b"\0") != bytes(b["name"]).rstrip(b"\0"):
            return False
    return True
